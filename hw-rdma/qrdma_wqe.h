/*
 * QEMU qrdma: emulated RDMA (RoCEv2) NIC, send work queue entries
 *
 * Copyright (c) 2026 The qrdma developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef HW_RDMA_QRDMA_WQE_H
#define HW_RDMA_QRDMA_WQE_H

#include "qrdma.h"

/* The send WQE at SQ index idx, read and checked once. */
QrdmaWqeCache *qrdma_wqe_get(QrdmaCore *core, QrdmaQp *qp, uint32_t idx);
/* The send WQE at SQ index idx if it is read already, else NULL. */
const QrdmaWqeCache *qrdma_wqe_cached(const QrdmaQp *qp, uint32_t idx);
/* Forget every WQE read: the ring's indices start again. */
void qrdma_wqe_forget(QrdmaQp *qp);
/* And the cache itself, with the QP. */
void qrdma_wqe_cache_free(QrdmaQp *qp);
bool qrdma_wqe_is_read_or_atomic(uint8_t opcode);
/*
 * Whether a WQE of opcode completes with a response of its own, not an
 * ACK, holds a responder resource while it waits for it, and so counts
 * against max_rd_atomic: READ and the atomics, and, as IBA 1.5 has them,
 * FLUSH and ATOMIC_WRITE, whose response is an empty RDMA READ Response
 * Only.
 */
bool qrdma_wqe_takes_response(uint8_t opcode);
/* The PSNs the packets of WQE c take, as the requester numbers them. */
uint32_t qrdma_wqe_psns(const QrdmaQp *qp, const QrdmaWqeCache *c);
void qrdma_wqe_sent(QrdmaQp *qp, const QrdmaWqeCache *c, QrdmaSent *s);
/* The completion opcode of a send WQE's opcode. */
uint8_t qrdma_wc_opcode(uint8_t wr_opcode);

#endif /* HW_RDMA_QRDMA_WQE_H */
