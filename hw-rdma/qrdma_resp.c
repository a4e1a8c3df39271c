/*
 * QEMU qrdma: emulated RDMA (RoCEv2) NIC, the responder
 *
 * Copyright (c) 2026 The qrdma developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * The responder takes request packets: it checks the QP's state, the PSN
 * (RC: a packet ahead of it is answered with one sequence NAK, one behind
 * it is a duplicate, answered again but not carried out again) and the
 * order of a message's packets; places SENDs in receive WQEs (from the
 * SRQ if the QP has one) and WRITEs in the range the rkey grants, carries
 * out READs, atomics, ATOMIC_WRITE and FLUSH, writes receive completions,
 * and answers: ACK, NAK, READ responses, atomic ACKs.  What it is taking
 * in (the receive WQE, the range, the bytes placed) is kept in the QP, so
 * a message may arrive a packet at a time.
 */

#include "qemu/osdep.h"
#include "qemu/atomic.h"
#include "qemu/units.h"
#include "net/checksum.h"
#include "system/dma.h"
#include "qrdma.h"
#include "qrdma_dp.h"
#include "qrdma_mr.h"
#include "qrdma_err.h"
#include "trace.h"

typedef enum {
    QRDMA_RX_OK,
    QRDMA_RX_DROP,                      /* silently: UC, UD */
    QRDMA_RX_RNR,                       /* no receive WQE posted */
    QRDMA_RX_LEN,                       /* message too long */
    QRDMA_RX_PROT,                      /* bad receive WQE */
    QRDMA_RX_ACCESS,                    /* bad rkey or rights */
    QRDMA_RX_INV_REQ,                   /* request the responder refuses */
} QrdmaRxResult;

/* Receive queues */

/* Whether a receive WQE is there to take. */
static bool qrdma_resp_recv_ready(QrdmaCore *core, QrdmaQp *qp)
{
    int idx;

    if (!qp->srq) {
        return qp->rq_ci != qp->rq_pi;
    }
    idx = qrdma_table_lookup(&core->srq_table, qp->srq);
    return idx >= 0 && core->srq[idx].ci != core->srq[idx].pi;
}

/* Take the next receive WQE of a QP (from its SRQ if it has one). */
bool qrdma_resp_take_recv(QrdmaCore *core, QrdmaQp *qp,
                          struct qrdma_rq_wqe *wqe)
{
    const QrdmaPages *ring;
    uint32_t *ci, pi, log2;
    QrdmaSrq *srq = NULL;
    int idx;

    if (qp->srq) {
        idx = qrdma_table_lookup(&core->srq_table, qp->srq);
        if (idx < 0) {
            return false;
        }
        srq = &core->srq[idx];
        ring = &srq->ring;
        ci = &srq->ci;
        pi = srq->pi;
        log2 = srq->log2;
    } else {
        ring = &qp->rq;
        ci = &qp->rq_ci;
        pi = qp->rq_pi;
        log2 = qp->rq_log2;
    }
    if (*ci == pi) {
        return false;
    }
    if (!qrdma_dma_read(core, qrdma_ring_addr(ring, *ci, log2,
                                              QRDMA_RQ_WQE_SIZE),
                        wqe, sizeof(*wqe))) {
        memset(wqe, 0, sizeof(*wqe));
        wqe->num_sge = cpu_to_le32(UINT32_MAX);
    }
    (*ci)++;
    if (srq && srq->limit && pi - *ci < srq->limit) {
        /* Armed once by MODIFY_SRQ; fires once. */
        srq->limit = 0;
        qrdma_event(core, QRDMA_EV_SRQ_LIMIT_REACHED, srq->handle);
    }
    return true;
}

/*
 * The receive WQE just taken from qp's own RQ (not an SRQ's) goes back,
 * unused.
 */
static void qrdma_resp_untake_recv(QrdmaQp *qp)
{
    qp->rq_ci--;
}

void qrdma_resp_flush_rq(QrdmaCore *core, QrdmaQp *qp)
{
    while (qp->rq_ci != qp->rq_pi) {
        uint64_t addr = qrdma_ring_addr(&qp->rq, qp->rq_ci, qp->rq_log2,
                                       QRDMA_RQ_WQE_SIZE);
        struct qrdma_cqe cqe = {
            .qpn = cpu_to_le32(qp->qpn),
            .opcode = QRDMA_WC_RECV,
            .status = QRDMA_WC_WR_FLUSH_ERR,
            .is_recv = 1,
        };

        qrdma_dma_read(core, addr, &cqe.wr_id, sizeof(cqe.wr_id));
        qrdma_qp_cqe(core, qp, true, &cqe, false);
        qp->rq_ci++;
    }
}

/* A receive completion of the WQE the message took. */
static void qrdma_resp_cqe(QrdmaCore *core, QrdmaQp *qp, uint8_t status,
                           struct qrdma_cqe *cqe, bool solicited)
{
    cqe->wr_id = qp->resp.rwqe.wr_id;
    cqe->qpn = cpu_to_le32(qp->qpn);
    cqe->is_recv = 1;
    cqe->status = status;
    if (!cqe->opcode) {
        cqe->opcode = QRDMA_WC_RECV;
    }
    qrdma_qp_cqe(core, qp, true, cqe, solicited);
}

/* The WQE taken is refused (bad SGEs, too short): its error completion. */
static QrdmaRxResult qrdma_resp_recv_err(QrdmaCore *core, QrdmaQp *qp,
                                         QrdmaRxResult rx)
{
    struct qrdma_cqe cqe = { };

    qrdma_resp_cqe(core, qp, rx == QRDMA_RX_LEN ? QRDMA_WC_LOC_LEN_ERR :
                   QRDMA_WC_LOC_PROT_ERR, &cqe, false);
    qp->resp.in_msg = 0;
    return rx;
}

/* Take a receive WQE for a message, and check the SGEs it gives. */
static QrdmaRxResult qrdma_resp_start_recv(QrdmaCore *core, QrdmaQp *qp)
{
    QrdmaResp *r = &qp->resp;
    uint32_t num;

    if (!qrdma_resp_take_recv(core, qp, &r->rwqe)) {
        return qp->type == QRDMA_QPT_RC ? QRDMA_RX_RNR : QRDMA_RX_DROP;
    }
    r->placed = 0;
    r->mr_gen = core->mr_gen;
    num = le32_to_cpu(r->rwqe.num_sge);
    if (num > QRDMA_MAX_RECV_SGE ||
        !qrdma_iter_sges(&r->sink, core, qp->pd, qp->uctx, r->rwqe.sge, num,
                         QRDMA_ACCESS_LOCAL_WRITE)) {
        return qrdma_resp_recv_err(core, qp, QRDMA_RX_PROT);
    }
    return QRDMA_RX_OK;
}

/*
 * The sink of a message under way, checked again if an MR lost access
 * since its last packet.
 */
static bool qrdma_resp_sink_ok(QrdmaCore *core, QrdmaQp *qp)
{
    QrdmaResp *r = &qp->resp;
    const QrdmaMr *mr;

    if (r->mr_gen == core->mr_gen) {
        return true;
    }
    r->mr_gen = core->mr_gen;
    if (r->in_msg == QRDMA_OPF_WRITE) {
        if (!r->dma_len) {
            return true;
        }
        if (!qrdma_rkey_check(core, qp->pd, qp->qpn, qp->uctx, r->rkey,
                              r->va, r->dma_len, QRDMA_ACCESS_REMOTE_WRITE,
                              &mr) || !mr) {
            return false;
        }
        qrdma_iter_range(&r->sink, core, mr, r->va, r->dma_len);
    } else if (!qrdma_iter_sges(&r->sink, core, qp->pd, qp->uctx,
                                r->rwqe.sge,
                                le32_to_cpu(r->rwqe.num_sge),
                                QRDMA_ACCESS_LOCAL_WRITE)) {
        return false;
    }
    qrdma_iter_seek(&r->sink, r->placed);
    return true;
}

/* SEND */

static QrdmaRxResult qrdma_resp_send(QrdmaCore *core, QrdmaQp *qp,
                                     QrdmaPkt *pkt, uint32_t flags)
{
    QrdmaResp *r = &qp->resp;
    struct qrdma_cqe cqe = { };
    QrdmaRxResult rx;

    if (flags & QRDMA_OPF_FIRST) {
        rx = qrdma_resp_start_recv(core, qp);
        if (rx) {
            return rx;
        }
    } else if (!qrdma_resp_sink_ok(core, qp)) {
        return qrdma_resp_recv_err(core, qp, QRDMA_RX_PROT);
    }
    r->in_msg = QRDMA_OPF_SEND;
    if (pkt->paylen > qrdma_iter_total(&r->sink) - r->placed) {
        return qrdma_resp_recv_err(core, qp, QRDMA_RX_LEN);
    }
    if (pkt->paylen &&
        qrdma_copy(pkt->payload, &r->sink, pkt->paylen) != QRDMA_COPY_OK) {
        return qrdma_resp_recv_err(core, qp, QRDMA_RX_PROT);
    }
    r->placed += pkt->paylen;
    if (!(flags & QRDMA_OPF_LAST)) {
        return QRDMA_RX_OK;
    }
    r->in_msg = 0;
    cqe.byte_len = cpu_to_le32(r->placed);
    if (flags & QRDMA_OPF_IMM) {
        cqe.flags |= QRDMA_CQE_F_WITH_IMM;
        cqe.imm_data = pkt->imm;
    } else if (flags & QRDMA_OPF_IETH) {
        qrdma_mr_remote_inv(core, qp->pd, qp->qpn, le32_to_cpu(pkt->imm));
        cqe.flags |= QRDMA_CQE_F_WITH_INV;
        cqe.imm_data = pkt->imm;
    }
    qrdma_resp_cqe(core, qp, QRDMA_WC_SUCCESS, &cqe, pkt->solicited);
    return QRDMA_RX_OK;
}

/* RDMA WRITE */

/* The range a RETH names, checked against the rkey, as an iterator. */
static bool qrdma_resp_range(QrdmaCore *core, QrdmaQp *qp, uint64_t va,
                             uint32_t rkey, uint64_t len, uint32_t access,
                             QrdmaIter *it)
{
    const QrdmaMr *mr;

    if (!(le32_to_cpu(qp->attr.qp_access_flags) & access) ||
        !qrdma_rkey_check(core, qp->pd, qp->qpn, qp->uctx, rkey, va, len,
                          access, &mr) || !mr) {
        return false;
    }
    qrdma_iter_range(it, core, mr, va, len);
    return true;
}

static QrdmaRxResult qrdma_resp_write(QrdmaCore *core, QrdmaQp *qp,
                                      QrdmaPkt *pkt, uint32_t flags)
{
    QrdmaResp *r = &qp->resp;
    struct qrdma_cqe cqe = { };

    if (flags & QRDMA_OPF_FIRST) {
        if (pkt->dma_len > QRDMA_MAX_MSG) {
            return QRDMA_RX_INV_REQ;
        }
        r->va = pkt->va;
        r->rkey = pkt->rkey;
        r->dma_len = pkt->dma_len;
        r->placed = 0;
        r->mr_gen = core->mr_gen;
        if (!r->dma_len) {
            qrdma_iter_range(&r->sink, core, NULL, 0, 0);
        } else if (!qrdma_resp_range(core, qp, r->va, r->rkey, r->dma_len,
                                     QRDMA_ACCESS_REMOTE_WRITE, &r->sink)) {
            return QRDMA_RX_ACCESS;
        }
    } else if (!qrdma_resp_sink_ok(core, qp)) {
        return QRDMA_RX_ACCESS;
    }
    r->in_msg = QRDMA_OPF_WRITE;
    /* The receive WQE of an immediate must be there before data lands. */
    if ((flags & QRDMA_OPF_IMM) && !qrdma_resp_recv_ready(core, qp)) {
        return qp->type == QRDMA_QPT_RC ? QRDMA_RX_RNR : QRDMA_RX_DROP;
    }
    if (pkt->paylen > r->dma_len - r->placed ||
        ((flags & QRDMA_OPF_LAST) &&
         pkt->paylen != r->dma_len - r->placed)) {
        return QRDMA_RX_INV_REQ;
    }
    if (pkt->paylen &&
        qrdma_copy(pkt->payload, &r->sink, pkt->paylen) != QRDMA_COPY_OK) {
        return QRDMA_RX_ACCESS;
    }
    r->placed += pkt->paylen;
    if (!(flags & QRDMA_OPF_LAST)) {
        return QRDMA_RX_OK;
    }
    r->in_msg = 0;
    if (!(flags & QRDMA_OPF_IMM)) {
        return QRDMA_RX_OK;
    }
    /* WRITE with immediate: a receive WQE, which takes no data. */
    if (qrdma_resp_start_recv(core, qp)) {
        return QRDMA_RX_PROT;
    }
    cqe.opcode = QRDMA_WC_RECV_RDMA_WITH_IMM;
    cqe.flags = QRDMA_CQE_F_WITH_IMM;
    cqe.imm_data = pkt->imm;
    cqe.byte_len = cpu_to_le32(r->dma_len);
    qrdma_resp_cqe(core, qp, QRDMA_WC_SUCCESS, &cqe, pkt->solicited);
    return QRDMA_RX_OK;
}

/* Answers */

/* Fill in the BTH and address of an answer to the connected requester. */
static void qrdma_resp_answer(QrdmaCore *core, QrdmaQp *qp, QrdmaPkt *out,
                              uint8_t opcode, uint32_t psn)
{
    out->opcode = opcode;
    out->npkts = 1;
    out->pkey = 0xffff;
    out->dqpn = le32_to_cpu(qp->attr.dest_qp_num) & QRDMA_PSN_MASK;
    out->psn = psn & QRDMA_PSN_MASK;
    qrdma_av_pkt_path(core, &qp->attr.av, out);
    out->msn = qp->resp.msn & QRDMA_PSN_MASK;
}

static void qrdma_resp_ack(QrdmaCore *core, QrdmaQp *qp, uint32_t psn,
                           uint8_t syndrome)
{
    QrdmaPkt out = { };

    qrdma_resp_answer(core, qp, &out, QRDMA_OP_ACK, psn);
    out.syndrome = syndrome;
    qrdma_xmit(core, qp, &out);
}

/* The responder resources the QP has, at most the device's. */
static uint32_t qrdma_resp_res_max(const QrdmaQp *qp)
{
    return MIN(qp->attr.max_dest_rd_atomic, QRDMA_MAX_RD_ATOMIC);
}

/* Whether res is kept and its answer holds psn. */
static bool qrdma_resp_res_holds(const QrdmaRespRes *res, uint32_t psn)
{
    int32_t d = qrdma_psn_diff(psn, res->psn);

    return res->kind != QRDMA_RES_NONE && d >= 0 && d < (int32_t)res->psns;
}

/*
 * Whether psn is that of a response the responder answered with: of a
 * READ, an atomic, a FLUSH or an ATOMIC_WRITE it keeps a resource for.
 * ePSN - 1 is one when the request taken last was such.
 */
static bool qrdma_resp_psn_answered(const QrdmaQp *qp, uint32_t psn)
{
    uint32_t i;

    for (i = 0; i < qrdma_resp_res_max(qp); i++) {
        if (qrdma_resp_res_holds(&qp->resp.res[i], psn)) {
            return true;
        }
    }
    return false;
}

/*
 * The ACK of all the responder took, ePSN - 1, unless that PSN is a
 * response's: an ACK does not complete a READ or an atomic, whose own
 * responses do (and acknowledge what came before them), but a requester
 * that has every response of a READ but its last may take an ACK of that
 * PSN for it, and complete the READ without the last response's data
 * (rxe's completer does, Linux 6.12).  The requester asks for the READ
 * again, and its answer acknowledges all before it.
 */
static void qrdma_resp_ack_taken(QrdmaCore *core, QrdmaQp *qp)
{
    uint32_t psn = (qp->resp.epsn - 1) & QRDMA_PSN_MASK;

    if (qrdma_resp_psn_answered(qp, psn)) {
        core->counters.acks_withheld++;
        trace_qrdma_resp_ack_withheld(qp->qpn, psn);
        return;
    }
    qrdma_resp_ack(core, qp, psn, QRDMA_AETH_ACK | QRDMA_AETH_NO_CREDITS);
}

/*
 * An RC QP that took requests is going away (moved to ERR or RESET, or
 * destroyed): it acknowledges once more all it took.  If its last ACK
 * was lost, the requester would otherwise retry a QP that no longer
 * answers until its retries run out, and fail a message that arrived:
 * ibv_rc_pingpong's server exits as soon as its last SEND is
 * acknowledged, before the client's last one may be.  A requester takes
 * the ACK as a duplicate if it has the first.
 */
void qrdma_resp_farewell(QrdmaCore *core, QrdmaQp *qp, uint8_t state)
{
    if (qp->type != QRDMA_QPT_RC ||
        (state != QRDMA_QPS_RTR && state != QRDMA_QPS_RTS &&
         state != QRDMA_QPS_SQD && state != QRDMA_QPS_SQE) ||
        qp->resp.epsn == (le32_to_cpu(qp->attr.rq_psn) & QRDMA_PSN_MASK)) {
        return;
    }
    qrdma_resp_ack_taken(core, qp);
}

/*
 * The answer to FLUSH and ATOMIC_WRITE (IBA 1.5; rxe answers so, and
 * expects it): an RDMA READ Response Only with no payload.
 */
static void qrdma_resp_empty_read_resp(QrdmaCore *core, QrdmaQp *qp,
                                       uint32_t psn)
{
    QrdmaPkt out = { };

    qrdma_resp_answer(core, qp, &out, QRDMA_OP_READ_RESP_ONLY, psn);
    out.syndrome = QRDMA_AETH_ACK | QRDMA_AETH_NO_CREDITS;
    qrdma_xmit(core, qp, &out);
}

/*
 * A responder resource keeps the READ, atomic, FLUSH or ATOMIC_WRITE pkt
 * in place of the oldest of the QP's max_dest_rd_atomic.  Its answer
 * will take psns PSNs.
 */
static QrdmaRespRes *qrdma_resp_keep(QrdmaQp *qp, QrdmaResKind kind,
                                     const QrdmaPkt *pkt, uint32_t psns)
{
    /* Not 0: requests that take one are refused then. */
    uint32_t max = MAX(qrdma_resp_res_max(qp), 1);
    QrdmaRespRes *res = &qp->resp.res[qp->resp.res_next++ % max];

    *res = (QrdmaRespRes) {
        .kind = kind,
        .psn = pkt->psn,
        .psns = psns,
        .va = pkt->va,
        .rkey = pkt->rkey,
        .len = pkt->dma_len,
    };
    return res;
}

/*
 * The resource a duplicate request of kind repeats: the one whose answer
 * holds psn.  None if it is older than those kept, or was never taken.
 */
static const QrdmaRespRes *qrdma_resp_res_of(const QrdmaQp *qp,
                                             QrdmaResKind kind, uint32_t psn)
{
    uint32_t i;

    for (i = 0; i < qrdma_resp_res_max(qp); i++) {
        const QrdmaRespRes *res = &qp->resp.res[i];

        if (res->kind == kind && qrdma_resp_res_holds(res, psn)) {
            return res;
        }
    }
    return NULL;
}

/*
 * The engine is to answer the READ pkt asks for, npkts responses from
 * its PSN on; resumed: the rest of an earlier answer, so no FIRST.
 */
static void qrdma_resp_answer_start(QrdmaQp *qp, const QrdmaPkt *pkt,
                                    uint32_t npkts, bool resumed)
{
    qp->resp.answer = (QrdmaReadAnswer) {
        .active = true,
        .resumed = resumed,
        .psn = pkt->psn,
        .npkts = npkts,
        .va = pkt->va,
        .rkey = pkt->rkey,
        .len = pkt->dma_len,
    };
}

/*
 * READ: taken in whole, counted by the MSN at once (so that its own
 * responses carry the count with it, IBA C9-148), and answered by the
 * engine.  A message is at most 2^31 bytes (IBA 9.4.1): a longer one is
 * an invalid request, as rxe has it.
 */
static QrdmaRxResult qrdma_resp_read(QrdmaCore *core, QrdmaQp *qp,
                                     QrdmaPkt *pkt, uint32_t *psns)
{
    uint32_t len = pkt->dma_len;
    QrdmaIter src;

    if (len > QRDMA_MAX_MSG) {
        return QRDMA_RX_INV_REQ;
    }
    if (len && !qrdma_resp_range(core, qp, pkt->va, pkt->rkey, len,
                                 QRDMA_ACCESS_REMOTE_READ, &src)) {
        return QRDMA_RX_ACCESS;
    }
    qp->resp.msn++;
    *psns = len ? DIV_ROUND_UP(len, qrdma_qp_mtu(qp)) : 1;
    qrdma_resp_keep(qp, QRDMA_RES_READ, pkt, *psns);
    qrdma_resp_answer_start(qp, pkt, *psns, false);
    return QRDMA_RX_OK;
}

/*
 * A READ that came again: its answer was lost, in whole or from one of
 * its responses on.  It is answered again, from the PSN it names, but
 * only if it asks for what the READ it repeats asked for (the same rkey,
 * a part of the same range): else a peer could read, under the name of a
 * duplicate, what it never asked for in a request the responder took.
 * Bytes are read anew, as the specification allows.
 */
static void qrdma_resp_read_again(QrdmaCore *core, QrdmaQp *qp,
                                  const QrdmaPkt *pkt)
{
    const QrdmaRespRes *res = qrdma_resp_res_of(qp, QRDMA_RES_READ,
                                                pkt->psn);
    uint32_t mtu = qrdma_qp_mtu(qp);
    uint64_t skip;

    if (!res) {
        core->counters.dup_unmatched++;
        trace_qrdma_resp_dup_unmatched(qp->qpn, pkt->opcode, pkt->psn);
        return;
    }
    skip = (uint64_t)qrdma_psn_diff(pkt->psn, res->psn) * mtu;
    if (pkt->rkey != res->rkey || pkt->va != res->va + skip ||
        pkt->dma_len != res->len - skip) {
        core->counters.dup_unmatched++;
        trace_qrdma_resp_dup_mismatch(qp->qpn, pkt->psn, pkt->va,
                                      pkt->rkey, pkt->dma_len);
        return;
    }
    qrdma_resp_answer_start(qp, pkt,
                            res->psns - qrdma_psn_diff(pkt->psn, res->psn),
                            pkt->psn != res->psn);
}

/*
 * An error of the responder that the requester is told of with a NAK of
 * psn, the packet in error; the QP goes to ERR (IBA 9.9.3.1.3).
 */
static void qrdma_resp_fail(QrdmaCore *core, QrdmaQp *qp, uint32_t psn,
                            QrdmaRxResult rx)
{
    static const uint8_t nak[] = {
        [QRDMA_RX_LEN] = QRDMA_NAK_INV_REQ,
        [QRDMA_RX_PROT] = QRDMA_NAK_REM_OP_ERR,
        [QRDMA_RX_ACCESS] = QRDMA_NAK_REM_ACCESS_ERR,
        [QRDMA_RX_INV_REQ] = QRDMA_NAK_INV_REQ,
    };

    qrdma_resp_ack(core, qp, psn, QRDMA_AETH_NAK | nak[rx]);
    if (rx == QRDMA_RX_INV_REQ) {
        qrdma_event(core, QRDMA_EV_QP_REQ_ERR, qp->qpn);
    } else if (rx == QRDMA_RX_ACCESS) {
        qrdma_event(core, QRDMA_EV_QP_ACCESS_ERR, qp->qpn);
    }
    qrdma_qp_to_err(core, qp, false);
}

/*
 * The engine's turn at the READ qp answers: responses of the path MTU,
 * the first and last with an AETH, until *bytes are sent or the
 * transport backs up.  A range that is gone (the MR was deregistered or
 * invalidated under the READ) fails it with a remote access NAK of the
 * response that could not be read.
 */
static void qrdma_resp_answer_turn(QrdmaCore *core, QrdmaQp *qp,
                                   uint64_t *bytes)
{
    QrdmaReadAnswer *a = &qp->resp.answer;
    uint32_t mtu = qrdma_qp_mtu(qp);
    uint32_t burst = MAX(core->xport->max_burst / mtu, 1);
    QrdmaIter src;

    if (!a->len) {
        qrdma_iter_range(&src, core, NULL, 0, 0);
    } else if (!qrdma_resp_range(core, qp, a->va, a->rkey, a->len,
                                 QRDMA_ACCESS_REMOTE_READ, &src)) {
        trace_qrdma_resp_read_gone(qp->qpn, a->psn, a->next);
        a->active = false;
        qrdma_resp_fail(core, qp, a->psn + a->next, QRDMA_RX_ACCESS);
        return;
    }
    while (a->next < a->npkts && *bytes && !qrdma_dp_xport_busy(core)) {
        QrdmaPkt out = { };
        uint32_t i = a->next;
        uint32_t k = MIN(MIN(burst, a->npkts - i),
                         DIV_ROUND_UP(MIN(*bytes, UINT32_MAX), mtu));
        bool first = i == 0 && !a->resumed;
        bool last = i + k == a->npkts;

        qrdma_resp_answer(core, qp, &out,
                          first && last && k == 1 ?
                          QRDMA_OP_READ_RESP_ONLY :
                          first ? QRDMA_OP_READ_RESP_FIRST :
                          last && k == 1 ? QRDMA_OP_READ_RESP_LAST :
                          QRDMA_OP_READ_RESP_MIDDLE, a->psn + i);
        out.npkts = k;
        out.last_opcode = last ? QRDMA_OP_READ_RESP_LAST :
                          QRDMA_OP_READ_RESP_MIDDLE;
        out.syndrome = QRDMA_AETH_ACK | QRDMA_AETH_NO_CREDITS;
        out.paylen = MIN((uint64_t)k * mtu, a->len - (uint64_t)i * mtu);
        out.payload = out.paylen ? &src : NULL;
        qrdma_iter_seek(&src, (uint64_t)i * mtu);
        a->next += k;
        *bytes -= MIN(*bytes, MAX(out.paylen, 1));
        qrdma_xmit(core, qp, &out);
    }
    if (a->next == a->npkts) {
        a->active = false;
    }
}

/*
 * The 8 aligned bytes an atomic or ATOMIC_WRITE targets, mapped for one
 * access as a whole (a PCIe AtomicOp is one); NULL and *rx the error
 * when the address or the rights do not allow it.
 */
static uint64_t *qrdma_resp_atomic_map(QrdmaCore *core, QrdmaQp *qp,
                                       QrdmaPkt *pkt, uint32_t access,
                                       QrdmaMap *m, QrdmaRxResult *rx)
{
    uint64_t gpa, room;
    QrdmaIter rit;

    if (!QEMU_IS_ALIGNED(pkt->va, 8)) {
        *rx = QRDMA_RX_INV_REQ;
        return NULL;
    }
    *rx = QRDMA_RX_ACCESS;
    if (!qrdma_resp_range(core, qp, pkt->va, pkt->rkey, 8, access, &rit)) {
        return NULL;
    }
    gpa = qrdma_mr_gpa(rit.span[0].mr, rit.span[0].addr, 8, &room);
    if (!qrdma_dma_map(core, gpa, 8, DMA_DIRECTION_FROM_DEVICE, m)) {
        return NULL;
    }
    if (m->len < 8) {
        qrdma_dma_unmap(core, m, 0);
        return NULL;
    }
    return (uint64_t *)m->host;
}

/* The atomic ACK of an atomic: the value it kept returns. */
static void qrdma_resp_atomic_ack(QrdmaCore *core, QrdmaQp *qp,
                                  const QrdmaRespRes *res)
{
    QrdmaPkt out = { };

    qrdma_resp_answer(core, qp, &out, QRDMA_OP_ATOMIC_ACK, res->psn);
    out.syndrome = QRDMA_AETH_ACK | QRDMA_AETH_NO_CREDITS;
    out.orig = res->orig;
    qrdma_xmit(core, qp, &out);
}

static QrdmaRxResult qrdma_resp_atomic(QrdmaCore *core, QrdmaQp *qp,
                                       QrdmaPkt *pkt)
{
    QrdmaRespRes *res;
    QrdmaRxResult rx;
    QrdmaMap m;
    uint64_t *p, orig;

    p = qrdma_resp_atomic_map(core, qp, pkt, QRDMA_ACCESS_REMOTE_ATOMIC,
                              &m, &rx);
    if (!p) {
        return rx;
    }
    /* Atomic against the guest's own CPUs too, as a PCIe AtomicOp is. */
    if (pkt->opcode == (QRDMA_OP_RC | QRDMA_OP_CMP_SWAP)) {
        orig = qatomic_cmpxchg__nocheck(p, cpu_to_le64(pkt->compare),
                                        cpu_to_le64(pkt->swap_add));
    } else {
        uint64_t old, new;

        do {
            old = qatomic_read__nocheck(p);
            new = cpu_to_le64(le64_to_cpu(old) + pkt->swap_add);
        } while (qatomic_cmpxchg__nocheck(p, old, new) != old);
        orig = old;
    }
    qrdma_dma_unmap(core, &m, 8);
    /* Kept, so that the request coming again is answered, not redone. */
    res = qrdma_resp_keep(qp, QRDMA_RES_ATOMIC, pkt, 1);
    res->orig = le64_to_cpu(orig);
    qp->resp.msn++;
    qrdma_resp_atomic_ack(core, qp, res);
    return QRDMA_RX_OK;
}

/*
 * ATOMIC_WRITE: the 8 bytes land in one aligned 64-bit store, so no
 * reader, the guest's CPUs included, sees half of them.  FLUSH: the
 * responder checks the rights its type needs, on the QP and on the MR
 * (over the range, or the whole MR), then makes what was written before
 * visible.  The device writes guest memory as each packet arrives, so
 * global visibility needs no more than ordering; persistence the device
 * cannot give, so no MR ever has that right and it always fails.
 */
static QrdmaRxResult qrdma_resp_other(QrdmaCore *core, QrdmaQp *qp,
                                      QrdmaPkt *pkt)
{
    QrdmaRxResult rx;
    QrdmaMap m;
    uint64_t *p;

    if ((pkt->opcode & 0x1f) == QRDMA_OP_ATOMIC_WRITE) {
        /* The RETH names exactly its 8 bytes (IBA 1.5 oA19-28). */
        if (pkt->dma_len != 8) {
            return QRDMA_RX_INV_REQ;
        }
        p = qrdma_resp_atomic_map(core, qp, pkt, QRDMA_ACCESS_REMOTE_WRITE,
                                  &m, &rx);
        if (!p) {
            return rx;
        }
        qatomic_set__nocheck(p, pkt->atomic_data);
        qrdma_dma_unmap(core, &m, 8);
    } else if (pkt->flush_type & QRDMA_FLUSH_PERSISTENT ||
               !(le32_to_cpu(qp->attr.qp_access_flags) &
                 QRDMA_ACCESS_FLUSH_GLOBAL) ||
               !qrdma_mr_flush_check(core, qp->pd, qp->uctx, pkt->rkey,
                                     pkt->flush_level == QRDMA_FLUSH_MR,
                                     pkt->va, pkt->dma_len)) {
        return QRDMA_RX_ACCESS;
    } else {
        /* Every store of the requests before it is visible first. */
        smp_mb();
    }
    /*
     * Done: the MSN counts it, and a responder resource keeps it, so that
     * the request coming again is answered again, not done again.
     */
    qp->resp.msn++;
    qrdma_resp_keep(qp, QRDMA_RES_EMPTY, pkt, 1);
    qrdma_resp_empty_read_resp(core, qp, pkt->psn);
    return QRDMA_RX_OK;
}

/* UD */

/*
 * The GRH a UD receive gets: the IP header the message came with over
 * RoCE v2, as a consumer may read and check it.
 */
static void qrdma_resp_grh(const QrdmaPkt *pkt, uint8_t grh[QRDMA_GRH_SIZE],
                           uint8_t *type)
{
    static const uint8_t v4_prefix[12] = { [10] = 0xff, [11] = 0xff };
    /* UDP, BTH and DETH before the payload, the ICRC after it. */
    uint32_t l4_len = 8 + 12 + 8 + pkt->paylen + 4;

    memset(grh, 0, QRDMA_GRH_SIZE);
    if (!memcmp(pkt->sgid, v4_prefix, 12)) {
        /* RoCEv2 over IPv4: the IPv4 header in the last 20 bytes. */
        uint8_t *ip = grh + 20;

        ip[0] = 0x45;
        ip[1] = pkt->traffic_class;
        stw_be_p(ip + 2, 20 + l4_len);
        ip[6] = 0x40;                   /* don't fragment */
        ip[8] = pkt->hop_limit;
        ip[9] = 17;
        memcpy(ip + 12, pkt->sgid + 12, 4);
        memcpy(ip + 16, pkt->dgid + 12, 4);
        stw_be_p(ip + 10, net_raw_checksum(ip, 20));
        *type = 1;
    } else {
        stl_be_p(grh, 6u << 28 | (uint32_t)pkt->traffic_class << 20 |
                      pkt->flow_label);
        stw_be_p(grh + 4, l4_len);
        grh[6] = 17;
        grh[7] = pkt->hop_limit;
        memcpy(grh + 8, pkt->sgid, 16);
        memcpy(grh + 24, pkt->dgid, 16);
        *type = 2;
    }
}

/* UD and GSI: a message nobody can take is lost, as on a wire. */
static void qrdma_resp_ud(QrdmaCore *core, QrdmaQp *qp, QrdmaPkt *pkt,
                          uint32_t flags)
{
    QrdmaResp *r = &qp->resp;
    struct qrdma_cqe cqe = { .flags = QRDMA_CQE_F_GRH };
    uint8_t grh[QRDMA_GRH_SIZE];
    QrdmaIter gi;
    QrdmaRxResult rx;

    if (pkt->qkey != le32_to_cpu(qp->attr.qkey)) {
        core->counters.pkts_dropped++;
        return;
    }
    rx = qrdma_resp_start_recv(core, qp);
    if (rx == QRDMA_RX_PROT) {
        qrdma_qp_to_err(core, qp, false);
    }
    if (rx) {
        core->counters.pkts_dropped++;
        return;
    }
    if (qrdma_iter_total(&r->sink) < QRDMA_GRH_SIZE + pkt->paylen) {
        /*
         * A datagram longer than the receive buffer is the sender's doing,
         * and anyone may send one: it is lost, and the QP goes on (a QP
         * that failed on it would let one datagram to QP1 end a guest's
         * CM).  The WQE it took from the RQ stays for the next; one taken
         * from an SRQ, which other QPs share, completes in error.  rxe
         * does the same, but completes with REM_INV_REQ_ERR.
         */
        core->counters.pkts_dropped++;
        trace_qrdma_resp_ud_too_long(qp->qpn, pkt->paylen,
                                     qrdma_iter_total(&r->sink));
        if (qp->srq) {
            qrdma_resp_recv_err(core, qp, QRDMA_RX_LEN);
        } else {
            qrdma_resp_untake_recv(qp);
        }
        return;
    }
    qrdma_resp_grh(pkt, grh, &cqe.network_hdr_type);
    qrdma_iter_host(&gi, grh, sizeof(grh));
    if (qrdma_copy(&gi, &r->sink, sizeof(grh)) != QRDMA_COPY_OK ||
        (pkt->paylen && qrdma_copy(pkt->payload, &r->sink, pkt->paylen) !=
         QRDMA_COPY_OK)) {
        qrdma_resp_recv_err(core, qp, QRDMA_RX_PROT);
        qrdma_qp_to_err(core, qp, false);
        return;
    }
    cqe.src_qp = cpu_to_le32(pkt->sqpn);
    cqe.byte_len = cpu_to_le32(QRDMA_GRH_SIZE + pkt->paylen);
    if (pkt->vlan_id != QRDMA_VLAN_NONE) {
        cqe.flags |= QRDMA_CQE_F_VLAN;
        cqe.vlan_id = cpu_to_le16(pkt->vlan_id & 0xfff);
    }
    if (flags & QRDMA_OPF_IMM) {
        cqe.flags |= QRDMA_CQE_F_WITH_IMM;
        cqe.imm_data = pkt->imm;
    }
    qrdma_resp_cqe(core, qp, QRDMA_WC_SUCCESS, &cqe, pkt->solicited);
}

/* RC and UC */

/*
 * A packet behind the expected PSN: a request that came again because its
 * answer was lost.  It is answered again from the responder resource it
 * repeats, never carried out again: a READ is read again, an atomic
 * answered with the value it returned the first time.  A SEND or WRITE
 * is acknowledged up to the last PSN taken, with AckReq or without (as
 * rxe does): the requester may be waiting for an ACK that was lost.
 */
static void qrdma_resp_duplicate(QrdmaCore *core, QrdmaQp *qp,
                                 QrdmaPkt *pkt, uint32_t flags)
{
    const QrdmaRespRes *res;

    core->counters.dup_reqs++;
    if (flags & QRDMA_OPF_READ) {
        qrdma_resp_read_again(core, qp, pkt);
        return;
    }
    if (!(flags & (QRDMA_OPF_ATOMIC | QRDMA_OPF_OTHER))) {
        qrdma_resp_ack_taken(core, qp);
        return;
    }
    res = qrdma_resp_res_of(qp, flags & QRDMA_OPF_ATOMIC ?
                            QRDMA_RES_ATOMIC : QRDMA_RES_EMPTY, pkt->psn);
    if (!res || res->psn != pkt->psn || res->va != pkt->va ||
        res->rkey != pkt->rkey) {
        core->counters.dup_unmatched++;
        trace_qrdma_resp_dup_unmatched(qp->qpn, pkt->opcode, pkt->psn);
    } else if (res->kind == QRDMA_RES_ATOMIC) {
        qrdma_resp_atomic_ack(core, qp, res);
    } else {
        qrdma_resp_empty_read_resp(core, qp, pkt->psn);
    }
}

/*
 * The PSN check of RC: true for the packet expected.  One ahead of it
 * means packets were lost: one sequence NAK, until the expected one comes.
 */
static bool qrdma_resp_psn_ok(QrdmaCore *core, QrdmaQp *qp, QrdmaPkt *pkt,
                              uint32_t flags)
{
    int32_t d = qrdma_psn_diff(pkt->psn, qp->resp.epsn);

    if (d < 0) {
        qrdma_resp_duplicate(core, qp, pkt, flags);
        return false;
    }
    if (d > 0) {
        core->counters.out_of_seq++;
        if (!qp->resp.nak_sent) {
            qp->resp.nak_sent = true;
            core->counters.seq_naks_sent++;
            trace_qrdma_resp_seq_nak(qp->qpn, qp->resp.epsn, pkt->psn);
            qrdma_resp_ack(core, qp, qp->resp.epsn,
                           QRDMA_AETH_NAK | QRDMA_NAK_PSN_SEQ_ERR);
        }
        return false;
    }
    if (qp->resp.nak_sent) {
        qp->resp.nak_sent = false;
        trace_qrdma_resp_seq_resumed(qp->qpn, pkt->psn);
    }
    return true;
}

/* What the requester is told, and for RC errors the QP's move to ERR. */
static void qrdma_resp_outcome(QrdmaCore *core, QrdmaQp *qp, QrdmaPkt *pkt,
                               uint32_t flags, QrdmaRxResult rx,
                               uint32_t psns)
{
    bool rc = qp->type == QRDMA_QPT_RC;

    switch (rx) {
    case QRDMA_RX_OK:
        qp->resp.epsn = (qp->resp.epsn + psns) & QRDMA_PSN_MASK;
        /*
         * READs, atomics, FLUSH and ATOMIC_WRITE counted themselves and
         * answered with responses of their own.
         */
        if ((flags & QRDMA_OPF_LAST) &&
            !(flags & (QRDMA_OPF_ATOMIC | QRDMA_OPF_READ |
                       QRDMA_OPF_OTHER))) {
            qp->resp.msn++;
        }
        if (rc && pkt->ack_req && !(flags & (QRDMA_OPF_READ |
                                            QRDMA_OPF_ATOMIC |
                                            QRDMA_OPF_OTHER))) {
            qrdma_resp_ack(core, qp, pkt->psn + psns - 1,
                           QRDMA_AETH_ACK | QRDMA_AETH_NO_CREDITS);
        }
        return;
    case QRDMA_RX_DROP:
        qp->resp.in_msg = 0;
        return;
    case QRDMA_RX_RNR:
        /* The message goes again from the packet refused. */
        if (flags & QRDMA_OPF_FIRST) {
            qp->resp.in_msg = 0;
        }
        if (rc) {
            core->counters.rnr_naks_sent++;
            qrdma_resp_ack(core, qp, pkt->psn,
                           QRDMA_AETH_RNR_NAK |
                           (qp->attr.min_rnr_timer & 31));
        }
        return;
    default:
        break;
    }
    trace_qrdma_resp_refused(qp->qpn, pkt->opcode, pkt->psn, pkt->npkts,
                             pkt->paylen, rx, qp->resp.in_msg,
                             qp->resp.placed, qp->resp.dma_len);
    qp->resp.in_msg = 0;
    if (!rc) {
        /* UC: the responder drops what it may not take. */
        if (rx == QRDMA_RX_LEN || rx == QRDMA_RX_PROT) {
            qrdma_qp_to_err(core, qp, false);
        }
        return;
    }
    qrdma_resp_fail(core, qp, pkt->psn, rx);
}

/*
 * Whether the payload of a SEND or WRITE packet fits the path MTU, as
 * IBA C9-92 has it: each packet before a message's last one carries the
 * MTU exactly, the last (or only) one at most the MTU, and a last one
 * that is not also the first at least one byte.  A burst of npkts packets
 * of the loopback fabric carries what its packets would.
 */
static bool qrdma_resp_pmtu_ok(const QrdmaQp *qp, const QrdmaPkt *pkt,
                               uint32_t flags)
{
    uint64_t mtu = qrdma_qp_mtu(qp), full = pkt->npkts * mtu;
    bool ok;

    if (!(flags & (QRDMA_OPF_SEND | QRDMA_OPF_WRITE))) {
        return true;
    }
    if (!(flags & QRDMA_OPF_LAST)) {
        ok = pkt->paylen == full;
    } else if (pkt->npkts == 1 && (flags & QRDMA_OPF_FIRST)) {
        ok = pkt->paylen <= mtu;
    } else {
        ok = pkt->paylen > full - mtu && pkt->paylen <= full;
    }
    if (!ok) {
        trace_qrdma_resp_bad_pmtu(qp->qpn, pkt->opcode, pkt->psn,
                                  pkt->npkts, pkt->paylen, mtu);
    }
    return ok;
}

/* Whether a packet fits the message under way (or starts one). */
static bool qrdma_resp_in_order(const QrdmaQp *qp, uint32_t flags)
{
    uint32_t kind = flags & (QRDMA_OPF_SEND | QRDMA_OPF_WRITE);

    if (qp->resp.in_msg) {
        return kind == qp->resp.in_msg && !(flags & QRDMA_OPF_FIRST);
    }
    return flags & QRDMA_OPF_FIRST;
}

/* Carry out one request packet (or burst) of qp, in the order they came. */
static void qrdma_resp_take(QrdmaCore *core, QrdmaQp *qp, QrdmaPkt *pkt)
{
    uint32_t flags = qrdma_pkt_flags(pkt);
    uint8_t transport = QRDMA_OP_TRANSPORT(pkt->opcode);
    bool ud = qp->type == QRDMA_QPT_UD || qp->type == QRDMA_QPT_GSI;
    QrdmaRxResult rx;
    uint32_t psns = pkt->npkts;

    if (qp->state < QRDMA_QPS_RTR || qp->state > QRDMA_QPS_SQE ||
        transport != (ud ? QRDMA_OP_UD : qp->type == QRDMA_QPT_UC ?
                      QRDMA_OP_UC : QRDMA_OP_RC)) {
        core->counters.pkts_dropped++;
        return;
    }
    if (ud) {
        qrdma_resp_ud(core, qp, pkt, flags);
        return;
    }
    if (!qp->comm_est) {
        qp->comm_est = true;
        if (qp->state == QRDMA_QPS_RTR) {
            qrdma_event(core, QRDMA_EV_COMM_EST, qp->qpn);
        }
    }
    if (qp->type == QRDMA_QPT_RC) {
        if (!qrdma_resp_psn_ok(core, qp, pkt, flags)) {
            return;
        }
    } else if (pkt->psn != qp->resp.epsn) {
        /* UC: a message with a packet lost is dropped whole. */
        qp->resp.in_msg = 0;
        qp->resp.epsn = pkt->psn;
    }
    if (!qrdma_resp_in_order(qp, flags) ||
        !qrdma_resp_pmtu_ok(qp, pkt, flags)) {
        rx = qp->type == QRDMA_QPT_RC ? QRDMA_RX_INV_REQ : QRDMA_RX_DROP;
    } else if (flags & QRDMA_OPF_SEND) {
        rx = qrdma_resp_send(core, qp, pkt, flags);
    } else if (flags & QRDMA_OPF_WRITE) {
        rx = qrdma_resp_write(core, qp, pkt, flags);
    } else if (!qp->attr.max_dest_rd_atomic) {
        /*
         * READ, atomic, FLUSH, ATOMIC_WRITE: each takes a responder
         * resource, and the QP said it has none (IBA 9.7.5.2.2).
         */
        rx = QRDMA_RX_INV_REQ;
    } else if (flags & QRDMA_OPF_READ) {
        rx = qrdma_resp_read(core, qp, pkt, &psns);
    } else if (flags & QRDMA_OPF_ATOMIC) {
        rx = qrdma_resp_atomic(core, qp, pkt);
    } else {
        rx = qrdma_resp_other(core, qp, pkt);
    }
    qrdma_resp_outcome(core, qp, pkt, flags, rx, psns);
}

/*
 * Requests that wait while their QP answers a READ: per QP, and their
 * payloads in all.  One over either is dropped, and the requester's retry
 * brings it again; a requester within its max_rd_atomic waits for the
 * READ's responses anyway.
 */
#define QRDMA_RESP_HELD_MAX 64
#define QRDMA_RESP_HELD_BYTES (4 * MiB)

struct QrdmaHeldPkt {
    QSIMPLEQ_ENTRY(QrdmaHeldPkt) next;
    QrdmaPkt pkt;
    QrdmaIter payload;
    uint8_t data[];
};

static void qrdma_resp_hold(QrdmaCore *core, QrdmaQp *qp, QrdmaPkt *pkt)
{
    QrdmaHeldPkt *h;

    if (qp->resp.nheld >= QRDMA_RESP_HELD_MAX ||
        pkt->paylen > QRDMA_RESP_HELD_BYTES - core->held_bytes) {
        core->counters.held_dropped++;
        trace_qrdma_resp_held_dropped(qp->qpn, pkt->opcode, pkt->psn,
                                      qp->resp.nheld, core->held_bytes);
        return;
    }
    h = g_malloc(sizeof(*h) + pkt->paylen);
    if (!qrdma_pkt_keep(&h->pkt, &h->payload, h->data, pkt)) {
        g_free(h);
        core->counters.pkts_dropped++;
        return;
    }
    h->pkt.payload = &h->payload;
    QSIMPLEQ_INSERT_TAIL(&qp->resp.held, h, next);
    qp->resp.nheld++;
    core->held_bytes += pkt->paylen;
    trace_qrdma_resp_held(qp->qpn, pkt->opcode, pkt->psn, qp->resp.nheld);
}

static QrdmaHeldPkt *qrdma_resp_unhold(QrdmaCore *core, QrdmaQp *qp)
{
    QrdmaHeldPkt *h = QSIMPLEQ_FIRST(&qp->resp.held);

    if (h) {
        QSIMPLEQ_REMOVE_HEAD(&qp->resp.held, next);
        qp->resp.nheld--;
        core->held_bytes -= h->pkt.paylen;
    }
    return h;
}

/* The READ being answered, then the requests held while it was. */
static void qrdma_resp_turn(QrdmaCore *core, QrdmaQp *qp, uint64_t bytes)
{
    QrdmaHeldPkt *h;

    for (;;) {
        if (qp->resp.answer.active) {
            qrdma_resp_answer_turn(core, qp, &bytes);
            if (qp->resp.answer.active) {
                qrdma_dp_answer_later(core, qp);
                return;
            }
        }
        if (QSIMPLEQ_EMPTY(&qp->resp.held)) {
            return;
        }
        if (!bytes) {
            qrdma_dp_answer_later(core, qp);
            return;
        }
        h = qrdma_resp_unhold(core, qp);
        bytes -= MIN(bytes, MAX(h->pkt.paylen, 1));
        qrdma_resp_take(core, qp, &h->pkt);
        g_free(h);
    }
}

void qrdma_resp_run(QrdmaCore *core, QrdmaQp *qp, uint64_t bytes)
{
    qrdma_engine_enter(qp, QRDMA_ENGINE_RESP);
    qrdma_resp_turn(core, qp, bytes);
    qrdma_engine_leave(qp, QRDMA_ENGINE_RESP);
}

void qrdma_resp_release(QrdmaCore *core, QrdmaQp *qp)
{
    QrdmaHeldPkt *h;

    while ((h = qrdma_resp_unhold(core, qp))) {
        g_free(h);
    }
    qp->resp.answer.active = false;
    qrdma_dp_answer_cancel(core, qp);
}

/*
 * What a READ's answer sends in the packet's own receive callback: a small
 * READ is answered at once, a large one goes on in the engine's turns.
 */
#define QRDMA_RESP_INLINE_BYTES (64 * KiB)

void qrdma_resp_rx(QrdmaCore *core, QrdmaQp *qp, QrdmaPkt *pkt)
{
    qrdma_engine_enter(qp, QRDMA_ENGINE_RESP);
    if (qp->resp.answer.active || !QSIMPLEQ_EMPTY(&qp->resp.held)) {
        qrdma_resp_hold(core, qp, pkt);
    } else {
        qrdma_resp_take(core, qp, pkt);
        if (qp->resp.answer.active) {
            qrdma_resp_turn(core, qp, QRDMA_RESP_INLINE_BYTES);
        }
    }
    qrdma_engine_leave(qp, QRDMA_ENGINE_RESP);
}
