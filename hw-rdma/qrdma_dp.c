/*
 * QEMU qrdma: emulated RDMA (RoCEv2) NIC, scheduling the transport engines
 *
 * Copyright (c) 2026 The qrdma developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * A send doorbell runs a few WQEs at once; all else, and more than a few,
 * runs in a bottom half.  Packets come in from the transport here and go
 * to the responder or the completer of their QP.  The QPs' state changes
 * (errors, flushes, reset) are followed here too.
 */

#include "qemu/osdep.h"
#include "qemu/main-loop.h"
#include "qemu/units.h"
#include "qrdma.h"
#include "qrdma_dp.h"
#include "qrdma_mcast.h"
#include "qrdma_srq.h"
#include "qrdma_cq.h"
#include "qrdma_mr.h"
#include "qrdma_qp.h"
#include "qrdma_err.h"
#include "qrdma_wire.h"
#include "trace.h"

/* The MTU of the QP's packets, worked out when its attributes change. */
static uint32_t qrdma_qp_mtu_of(const QrdmaQp *qp)
{
    if (qp->type == QRDMA_QPT_RC || qp->type == QRDMA_QPT_UC) {
        /* Checked when set: 1 (256) to 5 (4096). */
        return 128u << MIN(MAX(qp->attr.path_mtu, 1), 5);
    }
    return 4096;
}

/* Packets */

/*
 * Whether a packet for a connected QP comes from its peer: from the GID
 * its path names, to the GID it sends from, on its VLAN.  Anyone on the
 * wire can send to a QPN; as rxe does, only the peer is heard.
 */
static bool qrdma_dp_from_peer(QrdmaCore *core, const QrdmaQp *qp,
                               const QrdmaPkt *pkt)
{
    const struct qrdma_av *av = &qp->attr.av;

    if (!memcmp(pkt->sgid, av->dgid, 16) &&
        !memcmp(pkt->dgid, qrdma_av_sgid(core, av), 16) &&
        (pkt->vlan_id & 0xfff) == (le16_to_cpu(av->vlan_id) & 0xfff)) {
        return true;
    }
    core->counters.pkts_dropped++;
    trace_qrdma_pkt_not_from_peer(qp->qpn, pkt->opcode, pkt->psn,
                                  pkt->vlan_id);
    return false;
}

static void qrdma_dp_rx_qp(QrdmaCore *core, QrdmaQp *qp, QrdmaPkt *pkt)
{
    if ((qp->type == QRDMA_QPT_RC || qp->type == QRDMA_QPT_UC) &&
        !qrdma_dp_from_peer(core, qp, pkt)) {
        return;
    }
    if (qrdma_op_flags(pkt->opcode) & QRDMA_OPF_RESP) {
        qrdma_comp_rx(core, qp, pkt);
    } else {
        qrdma_resp_rx(core, qp, pkt);
    }
}

/*
 * The QPs of this function attached to group m (NULL: none), one per
 * call: the next from member *k, which starts at 0.
 */
static QrdmaQp *qrdma_dp_mcast_next(QrdmaCore *core, const QrdmaMcast *m,
                                    uint32_t *k)
{
    while (m && *k < m->nqp) {
        int q = qrdma_table_lookup(&core->qp_table, m->qpn[(*k)++]);

        if (q >= 0) {
            return &core->qp[q];
        }
    }
    return NULL;
}

/* A UD message to a multicast GID: every QP of this function attached. */
static void qrdma_dp_rx_mcast(QrdmaCore *core, QrdmaPkt *pkt)
{
    const QrdmaMcast *m = qrdma_mcast_group(core, pkt->dgid);
    uint32_t k = 0;
    QrdmaQp *qp;

    while ((qp = qrdma_dp_mcast_next(core, m, &k))) {
        QrdmaIter saved = { };

        /* Each QP reads the payload from its start; there may be none. */
        if (pkt->payload) {
            saved = *pkt->payload;
        }
        qrdma_resp_rx(core, qp, pkt);
        if (pkt->payload) {
            *pkt->payload = saved;
        }
    }
}

/* Whether an engine of a QP attached to the packet's group is running. */
static bool qrdma_dp_mcast_busy(QrdmaCore *core, const QrdmaPkt *pkt)
{
    const QrdmaMcast *m = qrdma_mcast_group(core, pkt->dgid);
    uint32_t k = 0;
    QrdmaQp *qp;

    while ((qp = qrdma_dp_mcast_next(core, m, &k))) {
        if (qp->engines) {
            return true;
        }
    }
    return false;
}

/* What the transport delivers to this function. */
static void qrdma_dp_rx(QrdmaCore *core, QrdmaPkt *pkt)
{
    uint32_t flags = qrdma_op_flags(pkt->opcode);
    bool valid = flags && pkt->npkts && (!pkt->paylen || pkt->payload);
    bool mcast = pkt->dqpn == QRDMA_MULTICAST_QPN;
    QrdmaQp *qp = NULL;

    if (!mcast) {
        int idx = qrdma_table_lookup(&core->qp_table, pkt->dqpn);

        qp = idx >= 0 ? &core->qp[idx] : NULL;
    }
    /*
     * It came in while an engine of its QP was running, which only a
     * packet on the wire can do (through a hub that links this function
     * to another of the same QEMU, which answers at once): it goes on the
     * fabric's queue, to be taken after.
     */
    if (valid && (qp ? qp->engines : mcast && qrdma_dp_mcast_busy(core, pkt))) {
        trace_qrdma_pkt_rx_later(pkt->dqpn, pkt->opcode, pkt->psn);
        qrdma_fabric_requeue(&core->port, pkt);
        return;
    }
    core->counters.pkts_rcvd += pkt->npkts;
    trace_qrdma_pkt_rx(pkt->dqpn, pkt->opcode, pkt->psn, pkt->paylen);
    if (!valid) {
        core->counters.pkts_dropped++;
        return;
    }
    if (mcast) {
        /* A datagram of 0 bytes is one too. */
        if (QRDMA_OP_TRANSPORT(pkt->opcode) == QRDMA_OP_UD) {
            qrdma_dp_rx_mcast(core, pkt);
        } else {
            core->counters.pkts_dropped++;
        }
        return;
    }
    if (!qp) {
        core->counters.pkts_dropped++;
        trace_qrdma_pkt_no_qp(pkt->dqpn, pkt->opcode);
        return;
    }
    qrdma_dp_rx_qp(core, qp, pkt);
}

/* The work list */

/*
 * A turn of a QP goes in rounds: the requester sends until its window,
 * the responder's resources or the loopback's queue are full, then what
 * is on the loopback's queue is taken and answered, and the requester
 * goes on from what the answers freed.  Without them a message to this
 * QEMU would move a window per run of the main loop.  Bounded, so that a
 * turn stays a turn.
 */
#define QRDMA_TURN_ROUNDS 16
#define QRDMA_ROUND_FABRIC_BYTES (4 * MiB)

/*
 * Run up to budget WQEs of qp a round, moving at most bytes; what is left
 * waits for the bottom half.  Returns whether it stopped for the byte
 * budget.
 */

static bool qrdma_process_sq(QrdmaCore *core, QrdmaQp *qp, uint32_t budget,
                             uint64_t bytes)
{
    QrdmaFabric *fabric = core->port.fabric;
    int round;

    if (qp->state == QRDMA_QPS_ERR || qp->state == QRDMA_QPS_SQE) {
        qrdma_comp_flush_sq(core, qp);
        return false;
    }
    for (round = 1; ; round++) {
        qrdma_req_run(core, qp, budget, &bytes);
        if (round == QRDMA_TURN_ROUNDS || !bytes ||
            qp->state != QRDMA_QPS_RTS || qp->req.idx == qp->sq_pi ||
            !(qp->req.waiting || qrdma_dp_xport_busy(core)) ||
            !qrdma_fabric_pending(fabric)) {
            break;
        }
        qrdma_fabric_deliver(fabric, QRDMA_ROUND_FABRIC_BYTES);
        if (qp->req.waiting) {
            /* What it waits for did not come back: the completer calls. */
            break;
        }
    }
    if (qp->req.idx != qp->sq_pi && qp->state == QRDMA_QPS_RTS &&
        !qp->comp.rnr_wait && !qp->queued && !qp->req.waiting) {
        /* More than its turn's worth: come back later, others go first. */
        qp->queued = true;
        QSIMPLEQ_INSERT_TAIL(&core->work, qp, next);
        /*
         * A transport backed up schedules the bottom half as it drains;
         * the ACK timer runs meanwhile, for a peer that never reads.
         */
        if (qrdma_dp_xport_busy(core)) {
            qrdma_comp_arm_retry(core, qp);
        } else {
            qemu_bh_schedule(core->dp_bh);
        }
        return !bytes;
    }
    /*
     * Stopped with requests unanswered: the ACK timer starts.  Not while
     * it is queued to go on, which is soon and arms it then if need be.
     */
    qrdma_comp_arm_retry(core, qp);
    return false;
}

/*
 * What a responder sends in one turn of the bottom half: a READ's answer
 * shares the main loop, and the transport, with everything else.
 */
#define QRDMA_ANSWER_TURN_BYTES (256 * KiB)

void qrdma_dp_answer_later(QrdmaCore *core, QrdmaQp *qp)
{
    if (!qp->resp.answer_queued) {
        qp->resp.answer_queued = true;
        QSIMPLEQ_INSERT_TAIL(&core->answers, qp, resp.answer_next);
    }
    /* A transport backed up schedules the bottom half as it drains. */
    if (!qrdma_dp_xport_busy(core)) {
        qemu_bh_schedule(core->dp_bh);
    }
}

void qrdma_dp_answer_cancel(QrdmaCore *core, QrdmaQp *qp)
{
    if (qp->resp.answer_queued) {
        QSIMPLEQ_REMOVE(&core->answers, qp, QrdmaQp, resp.answer_next);
        qp->resp.answer_queued = false;
    }
}

/* One turn for each responder with answers due; true if any are left. */
static bool qrdma_dp_run_answers(QrdmaCore *core)
{
    uint32_t turns = 0;
    QrdmaQp *qp;

    /*
     * As many turns as QPs are on the list now, counted rather than run
     * up to the last one: a QP may leave the list during a turn.
     */
    QSIMPLEQ_FOREACH(qp, &core->answers, resp.answer_next) {
        turns++;
    }
    while (turns-- && !qrdma_dp_xport_busy(core) &&
           (qp = QSIMPLEQ_FIRST(&core->answers))) {
        QSIMPLEQ_REMOVE_HEAD(&core->answers, resp.answer_next);
        qp->resp.answer_queued = false;
        qrdma_resp_run(core, qp, QRDMA_ANSWER_TURN_BYTES);
    }
    return !QSIMPLEQ_EMPTY(&core->answers);
}

static void qrdma_dp_run(void *opaque)
{
    QrdmaCore *core = opaque;
    uint32_t turns = 0;
    bool answers;
    QrdmaQp *qp;

    if (!core->running) {
        return;
    }
    /* Answers first: peers wait for them, and they hold requests back. */
    answers = qrdma_dp_run_answers(core);
    /*
     * One turn for as many QPs as are queued now; those queued again
     * meanwhile wait for the next run, so the main loop gets its turn in
     * between.  Counted, not run up to the last QP queued now: that one
     * may leave the list during another's turn (to ERR, on an answer the
     * loopback brought), and the run would then go on as long as QPs
     * were queued again.
     */
    QSIMPLEQ_FOREACH(qp, &core->work, next) {
        turns++;
    }
    while (turns-- && !qrdma_dp_xport_busy(core) &&
           (qp = QSIMPLEQ_FIRST(&core->work))) {
        QSIMPLEQ_REMOVE_HEAD(&core->work, next);
        qp->queued = false;
        qrdma_process_sq(core, qp, 1u << qp->sq_log2, UINT64_MAX);
        if (qp->state == QRDMA_QPS_ERR) {
            qrdma_resp_flush_rq(core, qp);
        }
    }
    if ((answers || !QSIMPLEQ_EMPTY(&core->work)) &&
        !qrdma_dp_xport_busy(core)) {
        qemu_bh_schedule(core->dp_bh);
    }
}

/*
 * Work posted before a command runs before it: a driver that rang a
 * doorbell and then sends a command sees the command find that work done.
 */
#define QRDMA_DRAIN_FABRIC_BYTES (1 * MiB)

void qrdma_dp_drain(QrdmaCore *core)
{
    if (!QSIMPLEQ_EMPTY(&core->work)) {
        qrdma_dp_run(core);
    }
    /* And the packets it sent reached their receivers. */
    qrdma_fabric_deliver(core->port.fabric, QRDMA_DRAIN_FABRIC_BYTES);
}

void qrdma_dp_resume(QrdmaCore *core)
{
    if (!QSIMPLEQ_EMPTY(&core->work) || !QSIMPLEQ_EMPTY(&core->answers)) {
        qemu_bh_schedule(core->dp_bh);
    }
    qrdma_fabric_resume(core->port.fabric);
}

void qrdma_dp_kick(QrdmaCore *core, QrdmaQp *qp)
{
    if (!qp->queued) {
        qp->queued = true;
        QSIMPLEQ_INSERT_TAIL(&core->work, qp, next);
    }
    qemu_bh_schedule(core->dp_bh);
}

/*
 * A send doorbell sends a few WQEs at once, in the doorbell write, as a
 * NIC starts on a doorbell without waiting: a bottom half costs a trip
 * through the main loop, which was most of a small message's latency.
 * Only when nothing is queued, so no QP overtakes work queued before it;
 * the rest of a long post list goes to the bottom half, which shares the
 * main loop with the rest of QEMU.  The vCPU that wrote the doorbell
 * waits for all of it, so it is bounded by bytes as well as by WQEs: the
 * requester stops between two packets, and the bottom half goes on.
 */
#define QRDMA_DB_INLINE_WQES 8
#define QRDMA_DB_INLINE_BYTES (64 * KiB)

static void qrdma_qp_sq_doorbell(QrdmaCore *core, QrdmaQp *qp)
{
    if (qp->queued || !QSIMPLEQ_EMPTY(&core->work) ||
        qp->state != QRDMA_QPS_RTS || !core->running) {
        qrdma_dp_kick(core, qp);
        return;
    }
    if (qrdma_process_sq(core, qp, QRDMA_DB_INLINE_WQES,
                         QRDMA_DB_INLINE_BYTES)) {
        core->counters.sq_deferred++;
        trace_qrdma_sq_deferred(qp->qpn, qp->req.idx, qp->req.sent);
    }
    /*
     * What it sent on the loopback is taken now, once the requester is
     * done, and what that answers with after it, within as many bytes
     * again: a message to another function of this QEMU is placed, and
     * its ACK completed, before the doorbell write returns.
     */
    qrdma_fabric_deliver(core->port.fabric, 2 * QRDMA_DB_INLINE_BYTES);
}

/* Doorbells */

/* A producer index at most a ring's worth ahead of the consumer's. */
static bool qrdma_db_index_ok(QrdmaCore *core, uint32_t handle,
                              uint32_t index, uint32_t ci, uint32_t log2)
{
    if (index - ci > (1u << log2)) {
        QRDMA_GUEST_ERR(core, qrdma_err_db_beyond_ring, "doorbell of 0x%" PRIx32
                        ": producer index %" PRIu32 " beyond the ring (ci %"
                        PRIu32 ")", handle, index, ci);
        return false;
    }
    return true;
}

static void qrdma_db_wq(QrdmaCore *core, uint32_t uctx, bool sq,
                        uint32_t handle, uint32_t index)
{
    int idx = qrdma_table_lookup(&core->qp_table, handle);
    uint32_t ci, log2;
    QrdmaQp *qp;

    if (idx < 0 || core->qp[idx].uctx != uctx) {
        QRDMA_GUEST_ERR(core, qrdma_err_db_no_qp, "doorbell of QP 0x%" PRIx32
                        ", none in context 0x%" PRIx32, handle, uctx);
        return;
    }
    qp = &core->qp[idx];
    if (!sq && qp->srq) {
        QRDMA_GUEST_ERR(core, qrdma_err_db_rq_of_srq_qp, "RQ doorbell of QP 0x%"
                        PRIx32 ", which is on an SRQ", handle);
        return;
    }
    ci = sq ? qp->sq_ci : qp->rq_ci;
    log2 = sq ? qp->sq_log2 : qp->rq_log2;
    if (!qrdma_db_index_ok(core, handle, index, ci, log2)) {
        return;
    }
    trace_qrdma_db(sq ? "SQ" : "RQ", handle, index);
    if (sq) {
        qp->sq_pi = index;
        qrdma_qp_sq_doorbell(core, qp);
    } else {
        qp->rq_pi = index;
        if (qp->state == QRDMA_QPS_ERR) {
            /* S35: WRs posted in ERR complete at once, flushed. */
            qrdma_dp_kick(core, qp);
        }
    }
}

static void qrdma_db_srq(QrdmaCore *core, uint32_t uctx, uint32_t handle,
                         uint32_t index)
{
    int idx = qrdma_table_lookup(&core->srq_table, handle);
    QrdmaSrq *srq;

    if (idx < 0 || core->srq[idx].uctx != uctx) {
        QRDMA_GUEST_ERR(core, qrdma_err_db_no_srq, "doorbell of SRQ 0x%" PRIx32
                        ", none in context 0x%" PRIx32, handle, uctx);
        return;
    }
    srq = &core->srq[idx];
    if (!qrdma_db_index_ok(core, handle, index, srq->ci, srq->log2)) {
        return;
    }
    srq->pi = index;
}

static void qrdma_db_cq(QrdmaCore *core, uint32_t uctx, uint32_t handle,
                        uint32_t flags)
{
    int idx = qrdma_table_lookup(&core->cq_table, handle);

    if (idx < 0 || core->cq[idx].uctx != uctx) {
        QRDMA_GUEST_ERR(core, qrdma_err_db_no_cq,
                        "arm doorbell of CQ 0x%" PRIx32 ", none in context 0x%"
                        PRIx32, handle, uctx);
        return;
    }
    if (flags & ~(QRDMA_DB_CQ_ARM_NEXT | QRDMA_DB_CQ_ARM_SOLICITED)) {
        QRDMA_GUEST_ERR(core, qrdma_err_db_arm_flags,
                        "arm doorbell of CQ 0x%" PRIx32 ": unknown flags 0x%"
                        PRIx32, handle, flags);
        return;
    }
    core->cq[idx].armed |= flags;
}

void qrdma_dp_db_write(QrdmaCore *core, hwaddr addr, uint64_t val,
                       unsigned size)
{
    uint32_t page = addr / QRDMA_DB_PAGE_SIZE;
    hwaddr off = addr % QRDMA_DB_PAGE_SIZE;
    uint32_t handle = val, index = val >> 32;
    uint32_t uctx = QRDMA_UCTX_KERNEL;

    if (!(core->dev_status & QRDMA_DEV_STATUS_READY)) {
        QRDMA_GUEST_ERR(core, qrdma_err_db_not_ready,
                        "doorbell 0x%" PRIx64 " at 0x%" HWADDR_PRIx
                        " before the device is ready", val, addr);
        return;
    }
    if (size != 8 || !QEMU_IS_ALIGNED(off, 8) || off > QRDMA_DB_CQ_ARM) {
        QRDMA_GUEST_ERR(core, qrdma_err_db_bad_access,
                        "write 0x%" PRIx64 " at 0x%" HWADDR_PRIx
                        " is not a doorbell", val, addr);
        return;
    }
    if (page) {
        if (page > core->uctx_table.max ||
            !core->uctx_table.busy[page - 1]) {
            QRDMA_GUEST_ERR(core, qrdma_err_db_no_uctx,
                            "doorbell 0x%" PRIx64 " at 0x%" HWADDR_PRIx
                            ": page of no user context", val, addr);
            return;
        }
        uctx = qrdma_table_handle(&core->uctx_table, page - 1);
    }
    switch (off) {
    case QRDMA_DB_SQ:
    case QRDMA_DB_RQ:
        qrdma_db_wq(core, uctx, off == QRDMA_DB_SQ, handle, index);
        break;
    case QRDMA_DB_SRQ:
        qrdma_db_srq(core, uctx, handle, index);
        break;
    default:
        qrdma_db_cq(core, uctx, handle, index);
    }
}

/* QP lifecycle hooks */

/* A QP back in RESET, or out of it: no progress of the engines is left. */
static void qrdma_qp_engines_reset(QrdmaQp *qp)
{
    qp->sq_pi = qp->sq_ci = qp->rq_pi = qp->rq_ci = 0;
    memset(&qp->req, 0, sizeof(qp->req));
    memset(&qp->comp, 0, sizeof(qp->comp));
    /* Released first (qrdma_resp_release): nothing of it is lost. */
    memset(&qp->resp, 0, sizeof(qp->resp));
    QSIMPLEQ_INIT(&qp->resp.held);
    qrdma_wqe_forget(qp);
    qp->comm_est = false;
    qp->fatal = false;
}

void qrdma_dp_qp_created(QrdmaCore *core, QrdmaQp *qp)
{
    qrdma_qp_engines_reset(qp);
    qp->mtu = qrdma_qp_mtu_of(qp);
    qp->sent = g_new0(QrdmaSent, QRDMA_SENT_MAX);
    qp->core = core;
    qp->timer = timer_new_ns(QEMU_CLOCK_VIRTUAL, qrdma_comp_timer, qp);
}

void qrdma_dp_qp_loaded(QrdmaCore *core, QrdmaQp *qp, const QrdmaSent *sent,
                        int64_t deadline)
{
    qp->mtu = qrdma_qp_mtu_of(qp);
    qp->sent = g_memdup2(sent, sizeof(QrdmaSent) * QRDMA_SENT_MAX);
    qp->core = core;
    qp->timer = timer_new_ns(QEMU_CLOCK_VIRTUAL, qrdma_comp_timer, qp);
    if (deadline >= 0) {
        timer_mod(qp->timer, deadline);
    }
    qp->engines = 0;
    /* Not in the stream: read again from the ring, which migrated. */
    qp->wqe = NULL;
    /* Requests the source held while answering a READ: lost, as on a wire */
    QSIMPLEQ_INIT(&qp->resp.held);
    qp->resp.nheld = 0;
    /* Its sink is looked up again, in MRs that migrated with it. */
    qp->resp.mr_gen = core->mr_gen - 1;
    if (qp->queued) {
        QSIMPLEQ_INSERT_TAIL(&core->work, qp, next);
    }
    if (qp->resp.answer_queued) {
        QSIMPLEQ_INSERT_TAIL(&core->answers, qp, resp.answer_next);
    }
}

int64_t qrdma_dp_qp_deadline(const QrdmaQp *qp)
{
    return qp->timer && timer_pending(qp->timer) ?
           timer_expire_time_ns(qp->timer) : -1;
}

static void qrdma_qp_unqueue(QrdmaCore *core, QrdmaQp *qp)
{
    if (qp->queued) {
        QSIMPLEQ_REMOVE(&core->work, qp, QrdmaQp, next);
        qp->queued = false;
    }
    if (qp->timer) {
        timer_del(qp->timer);
    }
    qp->comp.rnr_wait = false;
    qp->comp.retry_armed = false;
    qp->comp.early_armed = false;
}

void qrdma_dp_qp_modified(QrdmaCore *core, QrdmaQp *qp, uint8_t from)
{
    if (qp->state == QRDMA_QPS_RESET || qp->state == QRDMA_QPS_ERR) {
        /* What waited for a READ's answer is dropped with it. */
        qrdma_resp_release(core, qp);
        qrdma_resp_farewell(core, qp, from);
    }
    if (qp->state == QRDMA_QPS_RESET) {
        /* Only now: the farewell went by the path they set. */
        qrdma_qp_clear_attr(qp);
    }
    qp->mtu = qrdma_qp_mtu_of(qp);
    switch (qp->state) {
    case QRDMA_QPS_RESET:
        /* S36: outstanding WRs are dropped, a flush stops. */
        qrdma_qp_unqueue(core, qp);
        qrdma_qp_engines_reset(qp);
        break;
    case QRDMA_QPS_ERR:
        if (from == QRDMA_QPS_ERR) {
            break;
        }
        /* S30: flush both queues in posting order. */
        qrdma_qp_unqueue(core, qp);
        qrdma_comp_flush_sq(core, qp);
        qrdma_resp_flush_rq(core, qp);
        qp->resp.in_msg = 0;
        /* S33: nothing taken from the SRQ is outstanding, so at once. */
        if (qp->srq) {
            qrdma_event(core, QRDMA_EV_QP_LAST_WQE_REACHED, qp->qpn);
        }
        break;
    case QRDMA_QPS_SQE:
        qrdma_qp_unqueue(core, qp);
        qrdma_comp_flush_sq(core, qp);
        break;
    case QRDMA_QPS_RTR:
        if (from == QRDMA_QPS_INIT) {
            qp->resp.epsn = le32_to_cpu(qp->attr.rq_psn) & QRDMA_PSN_MASK;
        }
        break;
    case QRDMA_QPS_SQD:
        if (from == QRDMA_QPS_RTS && qp->attr.en_sqd_async_notify) {
            /* WQEs run to completion at once, so the SQ is drained. */
            qrdma_event(core, QRDMA_EV_SQ_DRAINED, qp->qpn);
        }
        break;
    case QRDMA_QPS_RTS:
        if (from == QRDMA_QPS_RTR || from == QRDMA_QPS_INIT) {
            qp->req.psn = le32_to_cpu(qp->attr.sq_psn) & QRDMA_PSN_MASK;
            qp->req.psn_hi = qp->req.psn;
            qp->comp.psn = qp->req.psn;
            qp->comp.acked = qp->req.psn;
        }
        qrdma_comp_reset(qp);
        if (qp->sq_pi != qp->sq_ci) {
            qrdma_dp_kick(core, qp);
        }
        break;
    }
}

void qrdma_dp_qp_destroyed(QrdmaCore *core, QrdmaQp *qp)
{
    qrdma_resp_release(core, qp);
    qrdma_resp_farewell(core, qp, qp->state);
    /* S11: nothing of it runs after this. */
    qrdma_qp_unqueue(core, qp);
    timer_free(qp->timer);
    qp->timer = NULL;
    g_free(qp->sent);
    qp->sent = NULL;
    qrdma_wqe_cache_free(qp);
}

/* Device */

void qrdma_dp_realize(QrdmaCore *core)
{
    DeviceState *dev = DEVICE(core->owner);

    QSIMPLEQ_INIT(&core->work);
    QSIMPLEQ_INIT(&core->answers);
    core->dp_bh = qemu_bh_new_guarded(qrdma_dp_run, core,
                                      &dev->mem_reentrancy_guard);
    core->xport = &qrdma_wire_ops;
    qrdma_fabric_join(core->fabric_link, &core->port, core, qrdma_dp_rx);
    core->port_up = qrdma_eth_link_up(core);
}

void qrdma_dp_unrealize(QrdmaCore *core)
{
    qrdma_fabric_leave(&core->port);
    qemu_bh_delete(core->dp_bh);
    /* Frames the netdev still holds call back when it is deleted. */
    core->dp_bh = NULL;
}

void qrdma_dp_reset(QrdmaCore *core)
{
    uint32_t i;

    qemu_bh_cancel(core->dp_bh);
    for (i = 0; i < core->qp_table.max; i++) {
        qrdma_resp_release(core, &core->qp[i]);
    }
    QSIMPLEQ_INIT(&core->work);
    for (i = 0; i < core->qp_table.max; i++) {
        QrdmaQp *qp = &core->qp[i];

        qp->queued = false;
        if (qp->timer) {
            timer_free(qp->timer);
            qp->timer = NULL;
        }
        g_free(qp->sent);
        qp->sent = NULL;
        qrdma_wqe_cache_free(qp);
    }
    memset(core->eq, 0, sizeof(core->eq));
    core->port_up = qrdma_eth_link_up(core);
}
