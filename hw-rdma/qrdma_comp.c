/*
 * QEMU qrdma: emulated RDMA (RoCEv2) NIC, the completer
 *
 * Copyright (c) 2026 The qrdma developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * The completer takes the responder's answers (ACK and NAK, READ
 * responses, atomic ACKs) and completes send WQEs in order, from sq_ci:
 * an ACK is cumulative, a READ or an atomic completes with its response.
 * It runs the QP's timer: the local ACK timeout, 4.096 us * 2^timeout,
 * after which what is outstanding goes again, up to retry_cnt times, and
 * the RNR wait a responder asked for, up to rnr_retry times (7: for
 * ever).  timeout 0 means no ACK timer: the request waits for as long as
 * the QP stays in RTS.
 */

#include "qemu/osdep.h"
#include "qemu/timer.h"
#include "qrdma.h"
#include "qrdma_dp.h"
#include "qrdma_err.h"
#include "trace.h"

/*
 * The IB RNR timer encoding (min_rnr_timer 0..31) in units of 10 us:
 * 0 is the longest, 655.36 ms.
 */
static const uint32_t qrdma_rnr_10us[32] = {
    65536, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256,
    384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384,
    24576, 32768, 49152,
};

void qrdma_comp_reset(QrdmaQp *qp)
{
    qp->comp.rnr_left = qp->attr.rnr_retry;
    qp->comp.retry_left = qp->attr.retry_cnt;
    qp->comp.gap_retried = false;
}

/*
 * WQE sq_ci, which is c, is complete with status: its completion when
 * signaled or failed, and for an error the QP's move down (S31: RC to
 * ERR, UC and UD to SQE).
 */
static void qrdma_comp_done(QrdmaCore *core, QrdmaQp *qp, const QrdmaSent *c,
                            uint8_t status, uint32_t psns)
{
    bool signaled = c->signaled;

    qp->sq_ci++;
    qp->comp.psn = (qp->comp.psn + psns) & QRDMA_PSN_MASK;
    if (qrdma_psn_diff(qp->comp.psn, qp->comp.acked) > 0) {
        qp->comp.acked = qp->comp.psn;
    }
    qp->comp.read_done = 0;
    qrdma_comp_reset(qp);
    if ((int32_t)(qp->req.idx - qp->sq_ci) < 0) {
        /* Answered while a retry was sending it again: on from the next. */
        qrdma_req_rewind(qp);
    }
    if (signaled || status) {
        struct qrdma_cqe cqe = {
            .wr_id = c->wr_id,
            .byte_len = cpu_to_le32(qrdma_wqe_is_read_or_atomic(
                                        c->opcode) ? c->len : 0),
            .qpn = cpu_to_le32(qp->qpn),
            .opcode = qrdma_wc_opcode(c->opcode),
            .status = status,
        };

        qrdma_qp_cqe(core, qp, false, &cqe, false);
    }
    if (status) {
        qrdma_qp_to_err(core, qp, qp->type != QRDMA_QPT_RC);
    } else if (qp->req.waiting) {
        /* The requester waited for this one (a window, a memory WQE). */
        qp->req.waiting = false;
        qrdma_dp_kick(core, qp);
    }
}

void qrdma_comp_local(QrdmaCore *core, QrdmaQp *qp, const QrdmaWqeCache *c,
                      uint8_t status)
{
    QrdmaSent s;

    qrdma_wqe_sent(qp, c, &s);
    qrdma_comp_done(core, qp, &s, status, 0);
}

/* The record of WQE sq_ci, which went out. */
static QrdmaSent *qrdma_comp_oldest(QrdmaQp *qp)
{
    return &qp->sent[qp->sq_ci % QRDMA_SENT_MAX];
}

bool qrdma_comp_take_unacked(QrdmaCore *core, QrdmaQp *qp,
                             struct qrdma_cqe *cqe)
{
    QrdmaWqeCache *c = qrdma_wqe_get(core, qp, qp->sq_ci);

    if (!c) {
        return false;
    }
    qp->sq_ci++;
    qp->comp.psn = (qp->comp.psn + qrdma_wqe_psns(qp, c)) & QRDMA_PSN_MASK;
    memset(cqe, 0, sizeof(*cqe));
    cqe->wr_id = c->wqe.wr_id;
    cqe->qpn = cpu_to_le32(qp->qpn);
    cqe->opcode = qrdma_wc_opcode(c->wqe.opcode);
    cqe->status = QRDMA_WC_SUCCESS;
    return qp->sq_sig_all || (c->wqe.flags & QRDMA_WQE_F_SIGNALED);
}

static bool qrdma_comp_outstanding(const QrdmaQp *qp)
{
    return qp->sq_ci != qp->req.idx_hi || qp->req.sent;
}

/* The local ACK timeout: 4.096 us * 2^timeout. */
static int64_t qrdma_comp_timeout_ns(const QrdmaQp *qp)
{
    return 4096ll << qp->attr.timeout;
}

/*
 * The early retry.  A packet lost at the end of what was sent (the last
 * of a window, the ACK of it, a NAK, or a packet sent again after a NAK)
 * leaves nothing after it to show the gap, and only the ACK timer
 * notices.  The timeouts consumers set are long (perftest 67 ms, rdma_cm
 * over RoCE about a second), and through 1% loss those waits were most
 * of the time a transfer took.  So, as NICs with adaptive retransmission
 * do, the requester goes back once after an eighth of the timeout, at
 * least 2 ms, if nothing moved meanwhile: go-back-N from the first PSN
 * not acknowledged, which the responder answers as it answers any retry.
 * It does not count against retry_cnt, and the timeout still fires at
 * its time from the last progress: a peer that went away fails as late
 * as before.  One per stall, so a network that loses a lot is not sent
 * more than twice what a timeout alone would send; none for a timeout
 * under 16 ms, where the early retry would come too soon after a packet.
 */
#define QRDMA_EARLY_RETRY_MIN_NS (2 * SCALE_MS)

static int64_t qrdma_comp_early_ns(const QrdmaQp *qp)
{
    int64_t ns = qrdma_comp_timeout_ns(qp) / 8;

    return ns >= QRDMA_EARLY_RETRY_MIN_NS ? ns : 0;
}

void qrdma_comp_arm_retry(QrdmaCore *core, QrdmaQp *qp)
{
    int64_t early;

    if (qp->type != QRDMA_QPT_RC || !qp->attr.timeout ||
        qp->comp.retry_armed || qp->comp.rnr_wait ||
        !qrdma_comp_outstanding(qp) || qp->state != QRDMA_QPS_RTS) {
        return;
    }
    qp->comp.retry_armed = true;
    early = qp->comp.early_retried ? 0 : qrdma_comp_early_ns(qp);
    qp->comp.early_armed = early != 0;
    timer_mod(qp->timer, qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL) +
              (early ? early : qrdma_comp_timeout_ns(qp)));
}

/*
 * Progress: the ACK timer starts over for what is still outstanding, and
 * the retries with it: retry_cnt bounds the timeouts in a row without an
 * answer, not those a message meets on a lossy wire.
 */
static void qrdma_comp_progress(QrdmaCore *core, QrdmaQp *qp)
{
    qp->comp.retry_left = qp->attr.retry_cnt;
    qp->comp.gap_retried = false;
    qp->comp.early_retried = false;
    if (qp->comp.retry_armed) {
        qp->comp.retry_armed = false;
        qp->comp.early_armed = false;
        timer_del(qp->timer);
        qrdma_comp_arm_retry(core, qp);
    }
}

/*
 * Whether the oldest WQE outstanding awaits a response of its own: a
 * READ, an atomic, FLUSH or ATOMIC_WRITE.
 */
static bool qrdma_comp_awaits_response(QrdmaQp *qp)
{
    return qp->sq_ci != qp->req.idx_hi &&
           qrdma_wqe_takes_response(qrdma_comp_oldest(qp)->opcode);
}

/* The PSN of the response that oldest READ or atomic awaits next. */
static uint32_t qrdma_comp_awaited(QrdmaQp *qp)
{
    return (qp->comp.psn + qp->comp.read_done / qrdma_qp_mtu(qp)) &
           QRDMA_PSN_MASK;
}

/*
 * An answer came past the response awaited: that response was lost, as
 * the responder answers in order.  The READ or atomic goes again at once,
 * once: what comes after it before it is answered says nothing new.  The
 * timer remains for a retry that is lost too.
 */
static void qrdma_comp_gap(QrdmaCore *core, QrdmaQp *qp, uint32_t psn)
{
    if (qp->comp.gap_retried || !qrdma_comp_awaits_response(qp) ||
        qrdma_psn_diff(psn, qrdma_comp_awaited(qp)) <= 0 ||
        qrdma_psn_diff(psn, qp->req.psn_hi) >= 0) {
        return;
    }
    qp->comp.gap_retried = true;
    core->counters.retransmits++;
    trace_qrdma_retry_gap(qp->qpn, qrdma_comp_awaited(qp), psn);
    qrdma_req_rewind_to(qp, qrdma_comp_awaited(qp));
    qrdma_dp_kick(core, qp);
}

/*
 * Complete, in order, the WQEs an ACK of psn covers: all whose last
 * packet is at or before it, up to the first that waits for a response
 * of its own.  Returns whether all up to psn are complete.
 */
static bool qrdma_comp_ack_upto(QrdmaCore *core, QrdmaQp *qp, uint32_t psn)
{
    uint32_t next = (psn + 1) & QRDMA_PSN_MASK;
    bool moved = false;

    while (qp->sq_ci != qp->req.idx_hi) {
        QrdmaSent *c = qrdma_comp_oldest(qp);

        if (qrdma_psn_diff(psn, qp->comp.psn + c->psns - 1) < 0 ||
            qrdma_wqe_takes_response(c->opcode)) {
            break;
        }
        qrdma_comp_done(core, qp, c, QRDMA_WC_SUCCESS, c->psns);
        moved = true;
        if (qp->state != QRDMA_QPS_RTS && qp->state != QRDMA_QPS_SQD) {
            return false;
        }
    }
    /*
     * Not past a READ or atomic that still awaits responses: an answer to
     * a later WQE says its requests arrived, not that the responses before
     * it did.
     */
    if (qrdma_comp_awaits_response(qp) &&
        qrdma_psn_diff(next, qrdma_comp_awaited(qp)) > 0) {
        next = qrdma_comp_awaited(qp);
    }
    /*
     * Acknowledged as far as that, if it was sent: the window moves, even
     * in the middle of a long message, and that is progress.
     */
    if (qrdma_psn_diff(next, qp->comp.acked) > 0 &&
        qrdma_psn_diff(next, qp->req.psn_hi) <= 0) {
        qp->comp.acked = next;
        moved = true;
        if (qp->req.waiting) {
            qp->req.waiting = false;
            qrdma_dp_kick(core, qp);
        }
    }
    if (moved) {
        qrdma_comp_progress(core, qp);
    }
    return qrdma_psn_diff(psn, qp->comp.psn) < 0;
}

static uint8_t qrdma_comp_nak_status(uint8_t code)
{
    switch (code) {
    case QRDMA_NAK_INV_REQ:
    case QRDMA_NAK_INV_RD_REQ:
        return QRDMA_WC_REM_INV_REQ_ERR;
    case QRDMA_NAK_REM_ACCESS_ERR:
        return QRDMA_WC_REM_ACCESS_ERR;
    default:
        return QRDMA_WC_REM_OP_ERR;
    }
}

/*
 * Whether psn is one of the oldest outstanding WQE's, which every WQE
 * before it being complete, a NAK of psn is about.
 */
static bool qrdma_comp_in_oldest(QrdmaQp *qp, uint32_t psn)
{
    int32_t d = qrdma_psn_diff(psn, qp->comp.psn);

    return qp->sq_ci != qp->req.idx_hi && d >= 0 &&
           d < (int32_t)qrdma_comp_oldest(qp)->psns &&
           qrdma_psn_diff(psn, qp->req.psn_hi) < 0;
}

/*
 * An RNR NAK of psn: while retries are left, the WQE waits for the
 * responder's RNR timer and goes again from that packet, which the
 * responder did not take (rnr_retry 7 means for ever).
 */
static void qrdma_comp_rnr(QrdmaCore *core, QrdmaQp *qp, uint8_t timer,
                           uint32_t psn)
{
    if (qp->comp.rnr_left == 0) {
        qrdma_comp_done(core, qp, qrdma_comp_oldest(qp),
                        QRDMA_WC_RNR_RETRY_EXC_ERR, 0);
        return;
    }
    if (qp->comp.rnr_left != 7) {
        qp->comp.rnr_left--;
    }
    trace_qrdma_rnr(qp->qpn, qp->comp.rnr_left);
    qrdma_req_rewind_to(qp, psn);
    qp->comp.rnr_wait = true;
    qp->comp.retry_armed = false;
    qp->comp.early_armed = false;
    timer_mod(qp->timer, qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL) +
              (int64_t)qrdma_rnr_10us[timer & 31] * 10 * SCALE_US);
}

static void qrdma_comp_aeth(QrdmaCore *core, QrdmaQp *qp, QrdmaPkt *pkt)
{
    uint8_t type = QRDMA_AETH_TYPE(pkt->syndrome);

    if (type == QRDMA_AETH_ACK) {
        qrdma_comp_ack_upto(core, qp, pkt->psn);
        qrdma_comp_gap(core, qp, pkt->psn);
        return;
    }
    /* A NAK acknowledges everything before the PSN it names. */
    qrdma_comp_ack_upto(core, qp, (pkt->psn - 1) & QRDMA_PSN_MASK);
    if (!qrdma_comp_outstanding(qp)) {
        return;
    }
    if (type == QRDMA_AETH_NAK &&
        (pkt->syndrome & 0x1f) == QRDMA_NAK_PSN_SEQ_ERR) {
        core->counters.seq_naks_rcvd++;
        if (qrdma_psn_diff(pkt->psn, qp->comp.acked) < 0) {
            /* Late: what it asks for was acknowledged since. */
            return;
        }
        /*
         * The responder missed packets: all from that one go again, from
         * the middle of a message if that is where it is.
         */
        trace_qrdma_comp_seq_nak(qp->qpn, pkt->psn, qp->req.psn);
        qrdma_req_rewind_to(qp, pkt->psn);
        qrdma_dp_kick(core, qp);
        return;
    }
    /*
     * The others name the packet in error, which may be any packet of the
     * oldest WQE: a receive buffer overflows at SEND_LAST, rxe refuses a
     * WRITE_LAST_WITH_IMM for want of a receive, an MR goes away in the
     * middle of a WRITE.
     */
    if (!qrdma_comp_in_oldest(qp, pkt->psn)) {
        core->counters.pkts_dropped++;
        trace_qrdma_comp_unexpected(qp->qpn, pkt->opcode, pkt->psn);
        return;
    }
    if (type == QRDMA_AETH_RNR_NAK) {
        core->counters.rnr_naks_rcvd++;
        /*
         * While the WQE waits out an RNR NAK it has not gone again, so
         * another NAK for it is the same one repeated by the network.
         */
        if (!qp->comp.rnr_wait) {
            qrdma_comp_rnr(core, qp, pkt->syndrome & 0x1f, pkt->psn);
        }
        return;
    }
    qrdma_comp_done(core, qp, qrdma_comp_oldest(qp),
                    qrdma_comp_nak_status(pkt->syndrome & 0x1f), 0);
}

/*
 * The response awaited has come, but the WQE it answers, read again from
 * the ring, now fails its checks: its slot was rewritten after it went
 * out, or an MR it names lost access since.  The response has nowhere to
 * go, and the WQE completes with the error its checks found.
 */
static void qrdma_comp_stale(QrdmaCore *core, QrdmaQp *qp,
                             const QrdmaWqeCache *c, const QrdmaPkt *pkt)
{
    core->counters.pkts_dropped++;
    trace_qrdma_comp_stale_wqe(qp->qpn, qp->sq_ci, pkt->opcode, c->status);
    qrdma_comp_done(core, qp, qrdma_comp_oldest(qp), c->status, 0);
}

/*
 * The response of FLUSH and ATOMIC_WRITE (IBA 1.5, as rxe sends it): an
 * RDMA READ Response Only with no payload, of the request's PSN.
 */
static void qrdma_comp_empty_resp(QrdmaCore *core, QrdmaQp *qp,
                                  QrdmaPkt *pkt)
{
    if ((pkt->opcode & 0x1f) != QRDMA_OP_READ_RESP_ONLY || pkt->paylen ||
        pkt->psn != qp->comp.psn) {
        core->counters.pkts_dropped++;
        trace_qrdma_comp_unexpected(qp->qpn, pkt->opcode, pkt->psn);
        qrdma_comp_gap(core, qp, pkt->psn);
        return;
    }
    qrdma_comp_done(core, qp, qrdma_comp_oldest(qp), QRDMA_WC_SUCCESS, 1);
    qrdma_comp_progress(core, qp);
}

/*
 * A READ response packet: its bytes go to the WQE's SGEs, in order.  The
 * first may start past the WQE's first byte: the answer to a READ asked
 * for again from a lost response on.
 */
static void qrdma_comp_read_resp(QrdmaCore *core, QrdmaQp *qp,
                                 QrdmaPkt *pkt, uint32_t flags)
{
    QrdmaWqeCache *c = qrdma_wqe_get(core, qp, qp->sq_ci);
    QrdmaSent *sent = qrdma_comp_oldest(qp);
    uint32_t mtu = qrdma_qp_mtu(qp);
    uint32_t off = qp->comp.read_done;
    QrdmaCopy res;

    if (c && c->status &&
        pkt->psn == ((qp->comp.psn + off / mtu) & QRDMA_PSN_MASK)) {
        qrdma_comp_stale(core, qp, c, pkt);
        return;
    }
    if (c && (c->wqe.opcode == QRDMA_WR_FLUSH ||
              c->wqe.opcode == QRDMA_WR_ATOMIC_WRITE)) {
        qrdma_comp_empty_resp(core, qp, pkt);
        return;
    }
    if (!c || c->wqe.opcode != QRDMA_WR_RDMA_READ ||
        pkt->psn != ((qp->comp.psn + off / mtu) & QRDMA_PSN_MASK) ||
        (!off && !(flags & QRDMA_OPF_FIRST)) ||
        pkt->paylen > c->len - off ||
        (pkt->paylen && DIV_ROUND_UP(pkt->paylen, mtu) != pkt->npkts) ||
        ((flags & QRDMA_OPF_LAST) ? pkt->paylen != c->len - off :
                                    pkt->paylen != pkt->npkts * mtu)) {
        /* Not the one awaited: that one may be lost. */
        core->counters.pkts_dropped++;
        trace_qrdma_comp_unexpected(qp->qpn, pkt->opcode, pkt->psn);
        qrdma_comp_gap(core, qp, pkt->psn);
        return;
    }
    qrdma_iter_seek(&c->local, off);
    res = qrdma_copy(pkt->payload, &c->local, pkt->paylen);
    if (res != QRDMA_COPY_OK) {
        qrdma_comp_done(core, qp, sent, res == QRDMA_COPY_SRC_ERR ?
                        QRDMA_WC_REM_ACCESS_ERR : QRDMA_WC_LOC_PROT_ERR, 0);
        return;
    }
    qp->comp.read_done += pkt->paylen;
    if (qrdma_psn_diff(qrdma_comp_awaited(qp), qp->comp.acked) > 0) {
        /* A retry asks for the responses from the next one on. */
        qp->comp.acked = qrdma_comp_awaited(qp);
    }
    if (flags & QRDMA_OPF_LAST) {
        qrdma_comp_done(core, qp, sent, QRDMA_WC_SUCCESS, sent->psns);
    }
    /* Each response in order is progress: a long READ is not a lost one. */
    qrdma_comp_progress(core, qp);
}

static void qrdma_comp_atomic_ack(QrdmaCore *core, QrdmaQp *qp,
                                  QrdmaPkt *pkt)
{
    QrdmaWqeCache *c = qrdma_wqe_get(core, qp, qp->sq_ci);
    uint64_t orig = cpu_to_le64(pkt->orig);
    QrdmaIter oi;

    if (c && c->status && pkt->psn == qp->comp.psn) {
        qrdma_comp_stale(core, qp, c, pkt);
        return;
    }
    if (!c || pkt->psn != qp->comp.psn ||
        (c->wqe.opcode != QRDMA_WR_ATOMIC_CMP_AND_SWP &&
         c->wqe.opcode != QRDMA_WR_ATOMIC_FETCH_AND_ADD)) {
        core->counters.pkts_dropped++;
        trace_qrdma_comp_unexpected(qp->qpn, pkt->opcode, pkt->psn);
        qrdma_comp_gap(core, qp, pkt->psn);
        return;
    }
    qrdma_iter_host(&oi, &orig, 8);
    qrdma_iter_seek(&c->local, 0);
    qrdma_comp_done(core, qp, qrdma_comp_oldest(qp),
                    qrdma_copy(&oi, &c->local, 8) == QRDMA_COPY_OK ?
                    QRDMA_WC_SUCCESS : QRDMA_WC_LOC_PROT_ERR, 1);
    qrdma_comp_progress(core, qp);
}

static void qrdma_comp_take(QrdmaCore *core, QrdmaQp *qp, QrdmaPkt *pkt)
{
    uint32_t flags = qrdma_pkt_flags(pkt);

    if (qp->type != QRDMA_QPT_RC ||
        QRDMA_OP_TRANSPORT(pkt->opcode) != QRDMA_OP_RC ||
        (qp->state != QRDMA_QPS_RTS && qp->state != QRDMA_QPS_SQD)) {
        core->counters.pkts_dropped++;
        return;
    }
    if (pkt->opcode == QRDMA_OP_ACK) {
        qrdma_comp_aeth(core, qp, pkt);
        return;
    }
    /* A response acknowledges every request before it. */
    qrdma_comp_ack_upto(core, qp, (pkt->psn - 1) & QRDMA_PSN_MASK);
    if (!qrdma_comp_outstanding(qp) ||
        (qp->state != QRDMA_QPS_RTS && qp->state != QRDMA_QPS_SQD)) {
        /*
         * A duplicate, or a stray from the wire: no WQE awaits it, and
         * the slot at sq_ci may not even be posted yet, so not read.
         */
        core->counters.pkts_dropped++;
        trace_qrdma_comp_unexpected(qp->qpn, pkt->opcode, pkt->psn);
        return;
    }
    if (pkt->opcode == QRDMA_OP_ATOMIC_ACK) {
        qrdma_comp_atomic_ack(core, qp, pkt);
    } else {
        qrdma_comp_read_resp(core, qp, pkt, flags);
    }
}

void qrdma_comp_rx(QrdmaCore *core, QrdmaQp *qp, QrdmaPkt *pkt)
{
    qrdma_engine_enter(qp, QRDMA_ENGINE_COMP);
    qrdma_comp_take(core, qp, pkt);
    qrdma_engine_leave(qp, QRDMA_ENGINE_COMP);
}

static void qrdma_comp_expired(QrdmaCore *core, QrdmaQp *qp)
{

    if (qp->comp.rnr_wait) {
        qp->comp.rnr_wait = false;
        qrdma_dp_kick(core, qp);
        return;
    }
    if (!qp->comp.retry_armed) {
        return;
    }
    qp->comp.retry_armed = false;
    if (!qrdma_comp_outstanding(qp) || qp->state != QRDMA_QPS_RTS) {
        qp->comp.early_armed = false;
        return;
    }
    if (qp->comp.early_armed) {
        /* The rest of the timeout runs from here, as armed. */
        qp->comp.early_armed = false;
        qp->comp.early_retried = true;
        core->counters.early_retries++;
        trace_qrdma_retry_early(qp->qpn, qp->comp.acked);
        qrdma_req_rewind_to(qp, qp->comp.acked);
        qrdma_dp_kick(core, qp);
        qp->comp.retry_armed = true;
        timer_mod(qp->timer, qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL) +
                  qrdma_comp_timeout_ns(qp) - qrdma_comp_early_ns(qp));
        return;
    }
    if (!qp->comp.retry_left) {
        core->counters.retry_exceeded++;
        qrdma_comp_done(core, qp, qrdma_comp_oldest(qp),
                        QRDMA_WC_RETRY_EXC_ERR, 0);
        return;
    }
    qp->comp.retry_left--;
    core->counters.retransmits++;
    trace_qrdma_retry(qp->qpn, qp->comp.retry_left);
    qrdma_req_rewind_to(qp, qp->comp.acked);
    qrdma_dp_kick(core, qp);
    /*
     * Armed again even if the retry cannot leave yet (the netdev's queue
     * is full: a peer that stopped reading): the retries count down all
     * the same.
     */
    qrdma_comp_arm_retry(core, qp);
}

/*
 * The QP's timer: an RNR wait is over, or nothing answered within the
 * local ACK timeout.  Then what is outstanding goes again from the oldest
 * WQE, while retries are left; after the last, that WQE fails.
 */
void qrdma_comp_timer(void *opaque)
{
    QrdmaQp *qp = opaque;

    /*
     * The virtual clock stands while the VM is stopped; only a qtest
     * moves it then.  The wait ends once the VM runs again.
     */
    if (!qp->core->running) {
        timer_mod(qp->timer, qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL) + SCALE_MS);
        return;
    }
    qrdma_engine_enter(qp, QRDMA_ENGINE_COMP);
    qrdma_comp_expired(qp->core, qp);
    qrdma_engine_leave(qp, QRDMA_ENGINE_COMP);
}

void qrdma_comp_flush_sq(QrdmaCore *core, QrdmaQp *qp)
{
    while (qp->sq_ci != qp->sq_pi) {
        struct qrdma_sq_wqe wqe;
        uint64_t addr = qrdma_ring_addr(&qp->sq, qp->sq_ci, qp->sq_log2,
                                       QRDMA_SQ_WQE_SIZE);
        struct qrdma_cqe cqe = {
            .qpn = cpu_to_le32(qp->qpn),
            .status = QRDMA_WC_WR_FLUSH_ERR,
        };
        const QrdmaWqeCache *c = qrdma_wqe_cached(qp, qp->sq_ci);

        if (c) {
            wqe.wr_id = c->wqe.wr_id;
            wqe.opcode = c->wqe.opcode;
        } else if (!qrdma_dma_read(core, addr, &wqe,
                                   offsetof(typeof(wqe), rsvd0))) {
            wqe.wr_id = 0;
            wqe.opcode = QRDMA_WR_SEND;
        }
        /* S30: flushed WRs always complete, signaled or not. */
        cqe.wr_id = wqe.wr_id;
        cqe.opcode = qrdma_wc_opcode(wqe.opcode);
        qrdma_qp_cqe(core, qp, false, &cqe, false);
        qp->sq_ci++;
    }
    qrdma_wqe_forget(qp);
    qp->req.idx = qp->sq_ci;
    qp->req.idx_hi = qp->sq_ci;
    qp->req.counted = qp->sq_ci;
    qp->req.sent = 0;
    qp->req.started = false;
    qp->comp.psn = qp->req.psn;
    qp->comp.acked = qp->req.psn;
    qp->req.psn_hi = qp->req.psn;
    qp->comp.read_done = 0;
}
