/*
 * QEMU qrdma: emulated RDMA (RoCEv2) NIC, the transport engines
 *
 * Copyright (c) 2026 The qrdma developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef HW_RDMA_QRDMA_DP_H
#define HW_RDMA_QRDMA_DP_H

#include "qrdma.h"
#include "qrdma_pkt.h"
#include "qrdma_qp.h"
#include "qrdma_wqe.h"
#include "qrdma_ah.h"
#include "qrdma_wire.h"

/*
 * The channel adapter's transport as the InfiniBand specification splits
 * it: the requester (qrdma_req.c) turns send WQEs into request packets,
 * the responder (qrdma_resp.c) carries out requests and answers them, the
 * completer (qrdma_comp.c) turns answers into send completions and runs
 * the retry and RNR timers.  qrdma_dp.c schedules them, takes in packets
 * and follows the QPs' state changes.  They meet only through packets and
 * the QP's state, so a QP can stop between any two packets.
 */

/* qrdma_dp.c: for the command queue and the register file */
void qrdma_dp_realize(QrdmaCore *core);
void qrdma_dp_unrealize(QrdmaCore *core);
void qrdma_dp_reset(QrdmaCore *core);
void qrdma_dp_db_write(QrdmaCore *core, hwaddr addr, uint64_t val,
                       unsigned size);
void qrdma_dp_drain(QrdmaCore *core);
void qrdma_dp_qp_created(QrdmaCore *core, QrdmaQp *qp);
void qrdma_dp_qp_modified(QrdmaCore *core, QrdmaQp *qp, uint8_t from);
void qrdma_dp_qp_destroyed(QrdmaCore *core, QrdmaQp *qp);
/* The VM goes on: run what was queued while it was stopped. */
void qrdma_dp_resume(QrdmaCore *core);
/*
 * A QP a migration brought, its fields checked: what the host keeps of it
 * beside them made anew, its timer set to the deadline (-1: none).
 */
void qrdma_dp_qp_loaded(QrdmaCore *core, QrdmaQp *qp, const QrdmaSent *sent,
                        int64_t deadline);
/* The deadline of qp's timer, -1 if it does not run. */
int64_t qrdma_dp_qp_deadline(const QrdmaQp *qp);

/* qrdma_dp.c: for the engines */
/* The longest message (IBA 9.4.1). */
#define QRDMA_MAX_MSG (1u << 31)
void qrdma_dp_kick(QrdmaCore *core, QrdmaQp *qp);
/*
 * The responder of qp has more to answer than its turn allowed: another
 * turn, when the transport takes more.  _cancel: nothing more is due.
 */
void qrdma_dp_answer_later(QrdmaCore *core, QrdmaQp *qp);
void qrdma_dp_answer_cancel(QrdmaCore *core, QrdmaQp *qp);
static inline uint32_t qrdma_qp_mtu(const QrdmaQp *qp)
{
    return qp->mtu;
}

/*
 * A QP's transport engines, each an entry point that takes the QP's
 * state a step on: the requester (qrdma_req_run), the responder
 * (qrdma_resp_rx, qrdma_resp_run) and the completer (qrdma_comp_rx,
 * qrdma_comp_timer).  One of them runs at a time, and none inside
 * another: the packets they send are queued for their receivers
 * (qrdma_fabric.c), and a packet that comes in while one runs waits on
 * the same queue (qrdma_dp_rx()).  So no engine finds the QP changed
 * under it by another, as rxe's tasks never run inside themselves.
 */
#define QRDMA_ENGINE_REQ    0x1
#define QRDMA_ENGINE_RESP   0x2
#define QRDMA_ENGINE_COMP   0x4

static inline void qrdma_engine_enter(QrdmaQp *qp, uint8_t engine)
{
    assert(!qp->engines);
    qp->engines = engine;
}

static inline void qrdma_engine_leave(QrdmaQp *qp, uint8_t engine)
{
    assert(qp->engines == engine);
    qp->engines = 0;
}

/* Whether the transport is backed up: requesters wait (QrdmaTransportOps). */
static inline bool qrdma_dp_xport_busy(QrdmaCore *core)
{
    return core->xport->busy && core->xport->busy(core);
}

/* qrdma_req.c */
void qrdma_req_run(QrdmaCore *core, QrdmaQp *qp, uint32_t budget,
                   uint64_t *bytes);
void qrdma_req_rewind(QrdmaQp *qp);
/*
 * Go back to psn, the first the responder has not got (a sequence NAK
 * names it; after an ACK timeout, the first not acknowledged): from the
 * middle of a SEND or RDMA WRITE if it falls there, as the specification
 * has a requester resume, so that a loss costs what follows it and not
 * the whole message; a READ or atomic goes again whole.
 */
void qrdma_req_rewind_to(QrdmaQp *qp, uint32_t psn);

/* qrdma_resp.c */
void qrdma_resp_rx(QrdmaCore *core, QrdmaQp *qp, QrdmaPkt *pkt);
/*
 * The responder's turn: the READ it answers, then the requests that
 * waited for it, up to about bytes sent and taken.
 */
void qrdma_resp_run(QrdmaCore *core, QrdmaQp *qp, uint64_t bytes);
/* The QP leaves service or goes away: nothing is answered any more. */
void qrdma_resp_release(QrdmaCore *core, QrdmaQp *qp);
bool qrdma_resp_take_recv(QrdmaCore *core, QrdmaQp *qp,
                          struct qrdma_rq_wqe *wqe);
void qrdma_resp_flush_rq(QrdmaCore *core, QrdmaQp *qp);
void qrdma_resp_farewell(QrdmaCore *core, QrdmaQp *qp, uint8_t state);

/* qrdma_comp.c */
void qrdma_comp_rx(QrdmaCore *core, QrdmaQp *qp, QrdmaPkt *pkt);
/*
 * UC and UD: WQE sq_ci is done when its last packet leaves.  It is taken
 * before the packet leaves, so that a flush its own responder causes
 * meanwhile (a QP sending to itself) does not take it too; its completion,
 * filled in *cqe, is written after, when this returns true (signaled).
 */
bool qrdma_comp_take_unacked(QrdmaCore *core, QrdmaQp *qp,
                             struct qrdma_cqe *cqe);
/* A WQE done at the requester (local, or refused): complete in order. */
void qrdma_comp_local(QrdmaCore *core, QrdmaQp *qp, const QrdmaWqeCache *c,
                      uint8_t status);
void qrdma_comp_arm_retry(QrdmaCore *core, QrdmaQp *qp);
void qrdma_comp_timer(void *opaque);
void qrdma_comp_flush_sq(QrdmaCore *core, QrdmaQp *qp);
void qrdma_comp_reset(QrdmaQp *qp);

#endif /* HW_RDMA_QRDMA_DP_H */
