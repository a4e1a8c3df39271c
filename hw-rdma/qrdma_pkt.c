/*
 * QEMU qrdma: emulated RDMA (RoCEv2) NIC, what each packet opcode carries
 *
 * Copyright (c) 2026 The qrdma developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qrdma_pkt.h"

/* The operations of RC; UC has the SEND and WRITE ones, UD SEND_ONLY(_IMM). */
const uint32_t qrdma_op_table[32] = {
    [QRDMA_OP_SEND_FIRST] = QRDMA_OPF_FIRST | QRDMA_OPF_SEND |
                            QRDMA_OPF_PAYLOAD | QRDMA_OPF_RECV,
    [QRDMA_OP_SEND_MIDDLE] = QRDMA_OPF_SEND | QRDMA_OPF_PAYLOAD,
    [QRDMA_OP_SEND_LAST] = QRDMA_OPF_LAST | QRDMA_OPF_SEND | QRDMA_OPF_PAYLOAD,
    [QRDMA_OP_SEND_LAST_IMM] = QRDMA_OPF_LAST | QRDMA_OPF_SEND |
                               QRDMA_OPF_PAYLOAD | QRDMA_OPF_IMM,
    [QRDMA_OP_SEND_ONLY] = QRDMA_OPF_FIRST | QRDMA_OPF_LAST | QRDMA_OPF_SEND |
                           QRDMA_OPF_PAYLOAD | QRDMA_OPF_RECV,
    [QRDMA_OP_SEND_ONLY_IMM] = QRDMA_OPF_FIRST | QRDMA_OPF_LAST |
                               QRDMA_OPF_SEND | QRDMA_OPF_PAYLOAD |
                               QRDMA_OPF_IMM | QRDMA_OPF_RECV,
    [QRDMA_OP_WRITE_FIRST] = QRDMA_OPF_FIRST | QRDMA_OPF_WRITE |
                             QRDMA_OPF_RETH | QRDMA_OPF_PAYLOAD,
    [QRDMA_OP_WRITE_MIDDLE] = QRDMA_OPF_WRITE | QRDMA_OPF_PAYLOAD,
    [QRDMA_OP_WRITE_LAST] = QRDMA_OPF_LAST | QRDMA_OPF_WRITE |
                            QRDMA_OPF_PAYLOAD,
    [QRDMA_OP_WRITE_LAST_IMM] = QRDMA_OPF_LAST | QRDMA_OPF_WRITE |
                                QRDMA_OPF_PAYLOAD | QRDMA_OPF_IMM |
                                QRDMA_OPF_RECV,
    [QRDMA_OP_WRITE_ONLY] = QRDMA_OPF_FIRST | QRDMA_OPF_LAST | QRDMA_OPF_WRITE |
                            QRDMA_OPF_RETH | QRDMA_OPF_PAYLOAD,
    [QRDMA_OP_WRITE_ONLY_IMM] = QRDMA_OPF_FIRST | QRDMA_OPF_LAST |
                                QRDMA_OPF_WRITE | QRDMA_OPF_RETH |
                                QRDMA_OPF_PAYLOAD | QRDMA_OPF_IMM |
                                QRDMA_OPF_RECV,
    [QRDMA_OP_READ_REQ] = QRDMA_OPF_FIRST | QRDMA_OPF_LAST | QRDMA_OPF_READ |
                          QRDMA_OPF_RETH,
    [QRDMA_OP_READ_RESP_FIRST] = QRDMA_OPF_FIRST | QRDMA_OPF_RESP |
                                 QRDMA_OPF_AETH | QRDMA_OPF_PAYLOAD,
    [QRDMA_OP_READ_RESP_MIDDLE] = QRDMA_OPF_RESP | QRDMA_OPF_PAYLOAD,
    [QRDMA_OP_READ_RESP_LAST] = QRDMA_OPF_LAST | QRDMA_OPF_RESP |
                                QRDMA_OPF_AETH | QRDMA_OPF_PAYLOAD,
    [QRDMA_OP_READ_RESP_ONLY] = QRDMA_OPF_FIRST | QRDMA_OPF_LAST |
                                QRDMA_OPF_RESP | QRDMA_OPF_AETH |
                                QRDMA_OPF_PAYLOAD,
    [QRDMA_OP_ACK] = QRDMA_OPF_FIRST | QRDMA_OPF_LAST | QRDMA_OPF_RESP |
                     QRDMA_OPF_AETH,
    [QRDMA_OP_ATOMIC_ACK] = QRDMA_OPF_FIRST | QRDMA_OPF_LAST | QRDMA_OPF_RESP |
                            QRDMA_OPF_AETH,
    [QRDMA_OP_CMP_SWAP] = QRDMA_OPF_FIRST | QRDMA_OPF_LAST | QRDMA_OPF_ATOMIC,
    [QRDMA_OP_FETCH_ADD] = QRDMA_OPF_FIRST | QRDMA_OPF_LAST | QRDMA_OPF_ATOMIC,
    [QRDMA_OP_SEND_LAST_INV] = QRDMA_OPF_LAST | QRDMA_OPF_SEND |
                               QRDMA_OPF_PAYLOAD | QRDMA_OPF_IETH,
    [QRDMA_OP_SEND_ONLY_INV] = QRDMA_OPF_FIRST | QRDMA_OPF_LAST |
                               QRDMA_OPF_SEND | QRDMA_OPF_PAYLOAD |
                               QRDMA_OPF_IETH | QRDMA_OPF_RECV,
    [QRDMA_OP_FLUSH] = QRDMA_OPF_FIRST | QRDMA_OPF_LAST | QRDMA_OPF_OTHER |
                       QRDMA_OPF_RETH,
    [QRDMA_OP_ATOMIC_WRITE] = QRDMA_OPF_FIRST | QRDMA_OPF_LAST |
                              QRDMA_OPF_OTHER | QRDMA_OPF_RETH,
};

bool qrdma_pkt_keep(QrdmaPkt *dst, QrdmaIter *it, uint8_t *data,
                    QrdmaPkt *pkt)
{
    QrdmaCopy copied = QRDMA_COPY_OK;

    *dst = *pkt;
    qrdma_iter_host(it, data, pkt->paylen);
    if (pkt->paylen) {
        QrdmaIter saved = *pkt->payload;

        copied = qrdma_copy(pkt->payload, it, pkt->paylen);
        *pkt->payload = saved;
        qrdma_iter_seek(it, 0);
    }
    dst->payload = pkt->payload ? it : NULL;
    return copied == QRDMA_COPY_OK;
}
