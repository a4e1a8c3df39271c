/*
 * QEMU qrdma: emulated RDMA (RoCEv2) NIC, what each packet opcode carries
 *
 * Copyright (c) 2026 The qrdma developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qrdma_pkt.h"

#define F(x) QRDMA_OPF_##x

/* The operations of RC; UC has the SEND and WRITE ones, UD SEND_ONLY(_IMM). */
const uint32_t qrdma_op_table[32] = {
    [QRDMA_OP_SEND_FIRST] = F(FIRST) | F(SEND) | F(PAYLOAD) | F(RECV),
    [QRDMA_OP_SEND_MIDDLE] = F(SEND) | F(PAYLOAD),
    [QRDMA_OP_SEND_LAST] = F(LAST) | F(SEND) | F(PAYLOAD),
    [QRDMA_OP_SEND_LAST_IMM] = F(LAST) | F(SEND) | F(PAYLOAD) | F(IMM),
    [QRDMA_OP_SEND_ONLY] = F(FIRST) | F(LAST) | F(SEND) | F(PAYLOAD) |
                           F(RECV),
    [QRDMA_OP_SEND_ONLY_IMM] = F(FIRST) | F(LAST) | F(SEND) | F(PAYLOAD) |
                               F(IMM) | F(RECV),
    [QRDMA_OP_WRITE_FIRST] = F(FIRST) | F(WRITE) | F(RETH) | F(PAYLOAD),
    [QRDMA_OP_WRITE_MIDDLE] = F(WRITE) | F(PAYLOAD),
    [QRDMA_OP_WRITE_LAST] = F(LAST) | F(WRITE) | F(PAYLOAD),
    [QRDMA_OP_WRITE_LAST_IMM] = F(LAST) | F(WRITE) | F(PAYLOAD) | F(IMM) |
                                F(RECV),
    [QRDMA_OP_WRITE_ONLY] = F(FIRST) | F(LAST) | F(WRITE) | F(RETH) |
                            F(PAYLOAD),
    [QRDMA_OP_WRITE_ONLY_IMM] = F(FIRST) | F(LAST) | F(WRITE) | F(RETH) |
                                F(PAYLOAD) | F(IMM) | F(RECV),
    [QRDMA_OP_READ_REQ] = F(FIRST) | F(LAST) | F(READ) | F(RETH),
    [QRDMA_OP_READ_RESP_FIRST] = F(FIRST) | F(RESP) | F(AETH) | F(PAYLOAD),
    [QRDMA_OP_READ_RESP_MIDDLE] = F(RESP) | F(PAYLOAD),
    [QRDMA_OP_READ_RESP_LAST] = F(LAST) | F(RESP) | F(AETH) | F(PAYLOAD),
    [QRDMA_OP_READ_RESP_ONLY] = F(FIRST) | F(LAST) | F(RESP) | F(AETH) |
                                F(PAYLOAD),
    [QRDMA_OP_ACK] = F(FIRST) | F(LAST) | F(RESP) | F(AETH),
    [QRDMA_OP_ATOMIC_ACK] = F(FIRST) | F(LAST) | F(RESP) | F(AETH),
    [QRDMA_OP_CMP_SWAP] = F(FIRST) | F(LAST) | F(ATOMIC),
    [QRDMA_OP_FETCH_ADD] = F(FIRST) | F(LAST) | F(ATOMIC),
    [QRDMA_OP_SEND_LAST_INV] = F(LAST) | F(SEND) | F(PAYLOAD) | F(IETH),
    [QRDMA_OP_SEND_ONLY_INV] = F(FIRST) | F(LAST) | F(SEND) | F(PAYLOAD) |
                               F(IETH) | F(RECV),
    [QRDMA_OP_FLUSH] = F(FIRST) | F(LAST) | F(OTHER) | F(RETH),
    [QRDMA_OP_ATOMIC_WRITE] = F(FIRST) | F(LAST) | F(OTHER) | F(RETH),
};
