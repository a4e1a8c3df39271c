/*
 * QEMU qrdma: emulated RDMA (RoCEv2) NIC, the requester
 *
 * Copyright (c) 2026 The qrdma developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * The requester takes send WQEs in order and turns each into request
 * packets of at most the path MTU: a SEND or WRITE into first, middle and
 * last packets, a READ into one request for all its response packets'
 * PSNs, an atomic into one.  Its progress (the WQE, the bytes sent, the
 * next PSN) is kept in the QP, so it stops between any two packets (a
 * doorbell's byte budget, an RNR wait) and goes on from there.  The
 * memory work requests (BIND_MW, LOCAL_INV, REG_MR) and refused WQEs it
 * completes itself, in order with those it sent.
 */

#include "qemu/osdep.h"
#include "qemu/units.h"
#include "qrdma.h"
#include "qrdma_dp.h"
#include "qrdma_mr.h"
#include "qrdma_err.h"
#include "trace.h"

/* The UD message limit: one packet of the port's MTU. */
#define QRDMA_UD_MTU 4096

static bool qrdma_wr_is_local(uint8_t opcode)
{
    return opcode == QRDMA_WR_BIND_MW || opcode == QRDMA_WR_LOCAL_INV ||
           opcode == QRDMA_WR_REG_MR;
}

/* The BTH opcode of a packet of a SEND or WRITE, by its place. */
static uint8_t qrdma_req_opcode(uint8_t wr_opcode, bool first, bool last)
{
    bool only = first && last;

    switch (wr_opcode) {
    case QRDMA_WR_SEND:
        return only ? QRDMA_OP_SEND_ONLY : first ? QRDMA_OP_SEND_FIRST :
               last ? QRDMA_OP_SEND_LAST : QRDMA_OP_SEND_MIDDLE;
    case QRDMA_WR_SEND_WITH_IMM:
        return only ? QRDMA_OP_SEND_ONLY_IMM : first ? QRDMA_OP_SEND_FIRST :
               last ? QRDMA_OP_SEND_LAST_IMM : QRDMA_OP_SEND_MIDDLE;
    case QRDMA_WR_SEND_WITH_INV:
        return only ? QRDMA_OP_SEND_ONLY_INV : first ? QRDMA_OP_SEND_FIRST :
               last ? QRDMA_OP_SEND_LAST_INV : QRDMA_OP_SEND_MIDDLE;
    case QRDMA_WR_RDMA_WRITE:
        return only ? QRDMA_OP_WRITE_ONLY : first ? QRDMA_OP_WRITE_FIRST :
               last ? QRDMA_OP_WRITE_LAST : QRDMA_OP_WRITE_MIDDLE;
    case QRDMA_WR_RDMA_WRITE_WITH_IMM:
        return only ? QRDMA_OP_WRITE_ONLY_IMM : first ? QRDMA_OP_WRITE_FIRST :
               last ? QRDMA_OP_WRITE_LAST_IMM : QRDMA_OP_WRITE_MIDDLE;
    case QRDMA_WR_RDMA_READ:
        return QRDMA_OP_READ_REQ;
    case QRDMA_WR_ATOMIC_CMP_AND_SWP:
        return QRDMA_OP_CMP_SWAP;
    case QRDMA_WR_ATOMIC_FETCH_AND_ADD:
        return QRDMA_OP_FETCH_ADD;
    case QRDMA_WR_ATOMIC_WRITE:
        return QRDMA_OP_ATOMIC_WRITE;
    default:
        return QRDMA_OP_FLUSH;
    }
}

/*
 * The headers a WQE's request packets carry besides the BTH: RETH,
 * AtomicETH, FETH, ImmDt or IETH (these last on the last packet only).
 */
static void qrdma_req_ext(const struct qrdma_sq_wqe *wqe, uint64_t len,
                          QrdmaPkt *pkt)
{
    switch (wqe->opcode) {
    case QRDMA_WR_RDMA_WRITE:
    case QRDMA_WR_RDMA_WRITE_WITH_IMM:
    case QRDMA_WR_RDMA_READ:
        pkt->va = le64_to_cpu(wqe->rdma.remote_addr);
        pkt->rkey = le32_to_cpu(wqe->rdma.rkey);
        pkt->dma_len = len;
        break;
    case QRDMA_WR_ATOMIC_WRITE:
        /* Its RETH names the 8 bytes it writes (IBA 1.5 oA19-28). */
        pkt->va = le64_to_cpu(wqe->rdma.remote_addr);
        pkt->rkey = le32_to_cpu(wqe->rdma.rkey);
        pkt->dma_len = 8;
        pkt->atomic_data = wqe->rdma.compare_add;
        break;
    case QRDMA_WR_ATOMIC_CMP_AND_SWP:
    case QRDMA_WR_ATOMIC_FETCH_AND_ADD:
        pkt->va = le64_to_cpu(wqe->rdma.remote_addr);
        pkt->rkey = le32_to_cpu(wqe->rdma.rkey);
        pkt->compare = le64_to_cpu(wqe->rdma.compare_add);
        pkt->swap_add = wqe->opcode == QRDMA_WR_ATOMIC_CMP_AND_SWP ?
                        le64_to_cpu(wqe->rdma.swap) :
                        le64_to_cpu(wqe->rdma.compare_add);
        break;
    case QRDMA_WR_FLUSH:
        pkt->va = le64_to_cpu(wqe->flush.remote_addr);
        pkt->rkey = le32_to_cpu(wqe->flush.rkey);
        pkt->dma_len = le64_to_cpu(wqe->flush.length);
        pkt->flush_type = wqe->flush.type;
        pkt->flush_level = wqe->flush.level;
        break;
    }
    pkt->imm = wqe->imm_data;
}

/*
 * UD and GSI: the AH and the Q_Key the WQE names.  A message nobody takes
 * is lost, as on a wire.
 */
static uint8_t qrdma_req_ud_addr(QrdmaCore *core, QrdmaQp *qp,
                                 const struct qrdma_sq_wqe *wqe,
                                 uint64_t len, QrdmaPkt *pkt)
{
    int ah = qrdma_table_lookup(&core->ah_table, le32_to_cpu(wqe->ud.ah));
    uint32_t qkey = le32_to_cpu(wqe->ud.remote_qkey);

    if (ah < 0 || core->ah[ah].uctx != qp->uctx ||
        core->ah[ah].pd != qp->pd) {
        return QRDMA_WC_LOC_QP_OP_ERR;
    }
    if (len > QRDMA_UD_MTU) {
        return QRDMA_WC_LOC_LEN_ERR;
    }
    qrdma_av_pkt_path(core, &core->ah[ah].av, pkt);
    /* IB: a Q_Key with the high bit set means the QP's own. */
    pkt->qkey = qkey & 0x80000000u ? le32_to_cpu(qp->attr.qkey) : qkey;
    pkt->sqpn = qp->qpn;
    pkt->dqpn = le32_to_cpu(wqe->ud.remote_qpn) & QRDMA_PSN_MASK;
    return QRDMA_WC_SUCCESS;
}

/*
 * RC keeps at most QRDMA_REQ_WINDOW packets unacknowledged, as rxe keeps
 * its PSNs: a responder much slower than the requester (a
 * software RoCE in a VM) would otherwise get more than it answers within
 * the ACK timeout, and every retry would send it all again.  It also
 * bounds what a retry sends again, and what a loss costs: the responder
 * drops everything behind a lost packet, and it all goes again.  So no
 * more than QRDMA_REQ_WINDOW_BYTES either: at path MTU 4096, 32 packets.
 * Between two VMs that window moves as much as 128 did (make bench), and
 * through 1% loss it kept 54 MiB/s of ib_write_bw where 128 kept 31.
 */
#define QRDMA_REQ_WINDOW 128
#define QRDMA_REQ_WINDOW_BYTES (128 * KiB)

/*
 * Over the same-host link the responder is another qrdma, nothing is lost
 * on the way, and a round trip crosses two main loops, each woken by the
 * other: a window of 128 KiB would leave the link idle for most of each
 * round trip.
 */
#define QRDMA_REQ_LINK_WINDOW 256
#define QRDMA_REQ_LINK_WINDOW_BYTES (1 * MiB)

static uint32_t qrdma_req_window(QrdmaCore *core, const QrdmaQp *qp)
{
    uint32_t mtu = qrdma_qp_mtu(qp);

    if (qrdma_link_carries(core, qp->attr.av.dgid)) {
        return MIN(QRDMA_REQ_LINK_WINDOW, QRDMA_REQ_LINK_WINDOW_BYTES / mtu);
    }
    return MIN(QRDMA_REQ_WINDOW, QRDMA_REQ_WINDOW_BYTES / mtu);
}

/*
 * Whether a request packet asks for an ACK.  ACKs are cumulative, so an
 * unsignaled WQE in the middle of a batch needs none of its own: its
 * completion comes with a later one's.  Asked for on the last packet of
 * a signaled WQE, of the last WQE posted so far, and at least every
 * QRDMA_REQ_ACK_EVERY packets and every half window, which bounds what a
 * lost ACK sends again and lets the window move on before it is full.
 */
#define QRDMA_REQ_ACK_EVERY 64

static bool qrdma_req_ack_req(QrdmaCore *core, QrdmaQp *qp,
                              const QrdmaWqeCache *c, bool last,
                              uint32_t npkts)
{
    qp->req.unacked += npkts;
    if (qp->req.unacked >= MIN(QRDMA_REQ_ACK_EVERY,
                               qrdma_req_window(core, qp) / 2) ||
        (last && (qp->sq_sig_all || (c->wqe.flags & QRDMA_WQE_F_SIGNALED) ||
                  qp->req.idx + 1 == qp->sq_pi || qp->req.ack_all))) {
        qp->req.unacked = 0;
        return true;
    }
    return false;
}

/*
 * The payload of the next packet, or of a burst of them: whole packets of
 * the MTU, as many as the transport takes together and the doorbell's
 * byte budget allows (at least one).
 */
static uint32_t qrdma_req_burst(QrdmaCore *core, uint64_t left, uint32_t mtu,
                                uint64_t budget)
{
    uint64_t n = MIN(left, MAX(core->xport->max_burst, mtu));

    if (n < left) {
        n -= n % mtu;
    }
    if (n > mtu && n > budget) {
        n = MAX(budget - budget % mtu, mtu);
    }
    return n;
}

/* The PSNs a READ takes: one per response packet. */
static uint32_t qrdma_req_read_psns(uint64_t len, uint32_t mtu)
{
    return len ? DIV_ROUND_UP(len, mtu) : 1;
}

/* On to the next WQE, the one sent whole counted as sent. */
static void qrdma_req_next(QrdmaQp *qp)
{
    qp->req.idx++;
    if ((int32_t)(qp->req.idx - qp->req.idx_hi) > 0) {
        qp->req.idx_hi = qp->req.idx;
    }
}

/* A memory work request, or a WQE refused: done here, once it is oldest. */
static bool qrdma_req_local(QrdmaCore *core, QrdmaQp *qp, QrdmaWqeCache *c)
{
    uint8_t status = c->status;

    if (qp->sq_ci != qp->req.idx) {
        /* Completions go in order: the completer calls again. */
        qp->req.waiting = true;
        if (qp->req.unacked) {
            /*
             * No ACK was asked for the packets before it: the last goes
             * again, asking for one.  The responder answers the
             * duplicate with what it has taken, and an ACK is
             * cumulative: it covers them all.
             */
            qp->req.ack_all = true;
            qrdma_req_rewind_to(qp, (qp->req.psn - 1) & QRDMA_PSN_MASK);
            return true;
        }
        return false;
    }
    qp->req.ack_all = false;
    if (!status) {
        status = qrdma_mr_wr(core, qp->pd, qp->uctx, qp->qpn, &c->wqe);
    }
    qrdma_req_next(qp);
    qp->req.sent = 0;
    qp->req.started = false;
    qrdma_comp_local(core, qp, c, status);
    return true;
}

/* Packets sent and not acknowledged; none after a retry went back. */
static uint32_t qrdma_req_unacked(const QrdmaQp *qp)
{
    return MAX(qrdma_psn_diff(qp->req.psn, qp->comp.acked), 0);
}

static bool qrdma_req_window_full(QrdmaCore *core, const QrdmaQp *qp)
{
    return qp->type == QRDMA_QPT_RC &&
           qrdma_req_unacked(qp) >= qrdma_req_window(core, qp);
}

/* The payload bytes the window has room for now (at least a packet's). */
static uint64_t qrdma_req_window_room(QrdmaCore *core, const QrdmaQp *qp,
                                      uint32_t mtu)
{
    if (qp->type != QRDMA_QPT_RC) {
        return UINT64_MAX;
    }
    return (uint64_t)MAX((int32_t)qrdma_req_window(core, qp) -
                         (int32_t)qrdma_req_unacked(qp), 1) * mtu;
}

/*
 * Send the next packet of WQE c: false when it cannot go (a UD address
 * the WQE got wrong, which completes it with an error).
 */
static bool qrdma_req_packet(QrdmaCore *core, QrdmaQp *qp, QrdmaWqeCache *c,
                             uint64_t *bytes)
{
    const struct qrdma_sq_wqe *wqe = &c->wqe;
    uint32_t mtu = qrdma_qp_mtu(qp);
    bool ud = qp->type == QRDMA_QPT_UD || qp->type == QRDMA_QPT_GSI;
    bool first = qp->req.sent == 0;
    uint64_t left = c->len - qp->req.sent;
    uint32_t paylen = 0, psns = 1;
    bool last = true, signaled = false;
    struct qrdma_cqe cqe;
    QrdmaPkt pkt = { .npkts = 1 };

    if (ud) {
        uint8_t status = qrdma_req_ud_addr(core, qp, wqe, c->len, &pkt);

        if (status) {
            c->status = status;
            return false;
        }
        paylen = c->len;
    } else {
        qrdma_av_pkt_path(core, &qp->attr.av, &pkt);
        pkt.dqpn = le32_to_cpu(qp->attr.dest_qp_num) & QRDMA_PSN_MASK;
        if (wqe->opcode == QRDMA_WR_RDMA_READ) {
            psns = qrdma_req_read_psns(left, mtu);
        } else if (!qrdma_wqe_is_read_or_atomic(wqe->opcode) &&
                   wqe->opcode != QRDMA_WR_FLUSH) {
            paylen = qrdma_req_burst(core, left, mtu,
                                     MIN(*bytes,
                                         qrdma_req_window_room(core, qp, mtu)));
            last = paylen == left;
            pkt.npkts = paylen ? DIV_ROUND_UP(paylen, mtu) : 1;
            psns = pkt.npkts;
        }
    }
    pkt.opcode = qrdma_req_opcode(wqe->opcode, first, last && psns == 1) |
                 (ud ? QRDMA_OP_UD :
                  qp->type == QRDMA_QPT_UC ? QRDMA_OP_UC : QRDMA_OP_RC);
    if (pkt.npkts > 1) {
        pkt.last_opcode = qrdma_req_opcode(wqe->opcode, false, last) |
                          (pkt.opcode & 0xe0);
    }
    pkt.pkey = 0xffff;
    pkt.psn = qp->req.psn;
    pkt.ack_req = qp->type == QRDMA_QPT_RC &&
                  qrdma_req_ack_req(core, qp, c, last, pkt.npkts);
    pkt.solicited = last && (wqe->flags & QRDMA_WQE_F_SOLICITED);
    if (first || last) {
        qrdma_req_ext(wqe, c->len, &pkt);
    }
    if (wqe->opcode == QRDMA_WR_RDMA_READ && !first) {
        /* Asked for again from a response that was lost: the rest only. */
        pkt.va += qp->req.sent;
        pkt.dma_len = left;
    }
    if (first && !ud) {
        qrdma_wqe_sent(qp, c, &qp->sent[qp->req.idx % QRDMA_SENT_MAX]);
    }
    /* ATOMIC_WRITE's 8 bytes of payload travel in pkt.atomic_data. */
    pkt.paylen = paylen;
    if (paylen) {
        qrdma_iter_seek(&c->local, qp->req.sent);
        pkt.payload = &c->local;
    }

    qp->req.psn = (qp->req.psn + psns) & QRDMA_PSN_MASK;
    if (qrdma_psn_diff(qp->req.psn, qp->req.psn_hi) > 0) {
        qp->req.psn_hi = qp->req.psn;
    }
    qp->req.sent += paylen;
    *bytes -= MIN(*bytes, paylen);
    if (last) {
        qrdma_req_next(qp);
        qp->req.sent = 0;
        qp->req.started = false;
        if (qp->type != QRDMA_QPT_RC) {
            signaled = qrdma_comp_take_unacked(core, qp, &cqe);
        }
    }
    qrdma_xmit(core, qp, &pkt);
    if (signaled) {
        qrdma_qp_cqe(core, qp, false, &cqe, false);
    }
    return true;
}

/*
 * Whether max_rd_atomic READs, atomics, FLUSHes and ATOMIC_WRITEs are in
 * flight already, as many as the responder said it keeps resources for.
 * 0 counts as 1: with none, a READ could never go.  Only those before
 * req.idx count: after a retry, those from req.idx on go again and
 * replace what they sent before.
 */
static bool qrdma_req_rd_atomic_full(const QrdmaQp *qp)
{
    uint32_t limit = MAX(qp->attr.max_rd_atomic, 1);
    uint32_t i, n = 0;

    for (i = qp->sq_ci; i != qp->req.idx; i++) {
        if (qrdma_wqe_takes_response(qp->sent[i % QRDMA_SENT_MAX].opcode) &&
            ++n >= limit) {
            return true;
        }
    }
    return false;
}

void qrdma_req_rewind(QrdmaQp *qp)
{
    qp->req.idx = qp->sq_ci;
    qp->req.psn = qp->comp.psn;
    qp->req.sent = 0;
    qp->req.started = false;
}

void qrdma_req_rewind_to(QrdmaQp *qp, uint32_t psn)
{
    uint32_t idx = qp->sq_ci, first = qp->comp.psn;
    const QrdmaSent *s = NULL;
    int32_t off;

    if (qrdma_psn_diff(psn, first) < 0 ||
        qrdma_psn_diff(psn, qp->req.psn_hi) >= 0) {
        qrdma_req_rewind(qp);
        return;
    }
    /* The WQE that sent psn: the last one started, if none before. */
    for (; idx != qp->req.idx_hi; idx++) {
        s = &qp->sent[idx % QRDMA_SENT_MAX];
        if (qrdma_psn_diff(psn, first) < (int32_t)s->psns) {
            break;
        }
        first = (first + s->psns) & QRDMA_PSN_MASK;
        s = NULL;
    }
    off = qrdma_psn_diff(psn, first);
    qp->req.idx = idx;
    qp->req.started = false;
    if (idx == qp->req.idx_hi) {
        s = &qp->sent[idx % QRDMA_SENT_MAX];
    }
    if (!off || (qrdma_wqe_is_read_or_atomic(s->opcode) &&
                 s->opcode != QRDMA_WR_RDMA_READ)) {
        /* An atomic goes again whole. */
        qp->req.psn = first;
        qp->req.sent = 0;
    } else {
        /*
         * From the packet that was lost; a READ asks again for the
         * responses from there on only, its RETH moved on as far.
         */
        qp->req.psn = psn;
        qp->req.sent = off * qrdma_qp_mtu(qp);
    }
}

static void qrdma_req_turn(QrdmaCore *core, QrdmaQp *qp, uint32_t budget,
                           uint64_t *bytes)
{
    while (budget && *bytes && qp->state == QRDMA_QPS_RTS &&
           !qp->comp.rnr_wait && qp->req.idx != qp->sq_pi &&
           !qrdma_dp_xport_busy(core)) {
        QrdmaWqeCache *c = qrdma_wqe_get(core, qp, qp->req.idx);
        uint32_t idx = qp->req.idx;

        if (!c) {
            return;
        }
        if (!qp->req.started) {
            qp->req.started = true;
            /* Counted once: not again when it goes again. */
            if (idx == qp->req.counted) {
                qp->req.counted++;
                core->counters.wqes++;
            }
            trace_qrdma_wqe(qp->qpn, idx, c->wqe.opcode, c->wqe.flags);
        }
        if (c->status || qrdma_wr_is_local(c->wqe.opcode)) {
            if (!qrdma_req_local(core, qp, c)) {
                break;
            }
        } else if (!qp->req.sent &&
                   qp->req.idx - qp->sq_ci >= QRDMA_SENT_MAX) {
            /* As many in flight as the completer keeps: it calls again. */
            qp->req.waiting = true;
            break;
        } else if (qrdma_req_window_full(core, qp)) {
            /* The completer calls again as ACKs come. */
            qp->req.waiting = true;
            break;
        } else if (!qp->req.sent &&
                   qrdma_wqe_takes_response(c->wqe.opcode) &&
                   qrdma_req_rd_atomic_full(qp)) {
            /* The responder's resources are all in use: it calls again. */
            qp->req.waiting = true;
            break;
        } else if (!qrdma_req_packet(core, qp, c, bytes)) {
            continue;
        }
        if (qp->req.idx != idx) {
            budget--;
        }
    }
}

/*
 * Send packets of qp's WQEs, at most budget WQEs and about *bytes of
 * payload (reduced by what went): it stops between packets.
 */
void qrdma_req_run(QrdmaCore *core, QrdmaQp *qp, uint32_t budget,
                   uint64_t *bytes)
{
    qrdma_engine_enter(qp, QRDMA_ENGINE_REQ);
    qrdma_req_turn(core, qp, budget, bytes);
    qrdma_engine_leave(qp, QRDMA_ENGINE_REQ);
}
