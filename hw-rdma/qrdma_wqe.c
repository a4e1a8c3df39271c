/*
 * QEMU qrdma: emulated RDMA (RoCEv2) NIC, send work queue entries
 *
 * Copyright (c) 2026 The qrdma developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * A send WQE is copied out of the SQ once, checked, and its local buffer
 * looked up, into the QP's WQE cache, from which the requester sends it
 * and the completer completes it.
 */

#include "qemu/osdep.h"
#include "qrdma.h"
#include "qrdma_dp.h"
#include "qrdma_mr.h"
#include "qrdma_err.h"
#include "qrdma_wqe.h"
#include "trace.h"

bool qrdma_wqe_is_read_or_atomic(uint8_t opcode)
{
    return opcode == QRDMA_WR_RDMA_READ ||
           opcode == QRDMA_WR_ATOMIC_CMP_AND_SWP ||
           opcode == QRDMA_WR_ATOMIC_FETCH_AND_ADD;
}

bool qrdma_wqe_takes_response(uint8_t opcode)
{
    return qrdma_wqe_is_read_or_atomic(opcode) ||
           opcode == QRDMA_WR_FLUSH || opcode == QRDMA_WR_ATOMIC_WRITE;
}

uint8_t qrdma_wc_opcode(uint8_t wr_opcode)
{
    switch (wr_opcode) {
    case QRDMA_WR_RDMA_WRITE:
    case QRDMA_WR_RDMA_WRITE_WITH_IMM:
        return QRDMA_WC_RDMA_WRITE;
    case QRDMA_WR_RDMA_READ:
        return QRDMA_WC_RDMA_READ;
    case QRDMA_WR_ATOMIC_CMP_AND_SWP:
        return QRDMA_WC_COMP_SWAP;
    case QRDMA_WR_ATOMIC_FETCH_AND_ADD:
        return QRDMA_WC_FETCH_ADD;
    case QRDMA_WR_LOCAL_INV:
        return QRDMA_WC_LOCAL_INV;
    case QRDMA_WR_BIND_MW:
        return QRDMA_WC_BIND_MW;
    case QRDMA_WR_REG_MR:
        return QRDMA_WC_REG_MR;
    case QRDMA_WR_ATOMIC_WRITE:
        return QRDMA_WC_ATOMIC_WRITE;
    case QRDMA_WR_FLUSH:
        return QRDMA_WC_FLUSH;
    default:
        return QRDMA_WC_SEND;
    }
}

/* The header and one SGE: all that most WQEs hold, in one read. */
#define QRDMA_WQE_FIRST_READ \
    (offsetof(struct qrdma_sq_wqe, sge) + sizeof(struct qrdma_sge))

/* What is left to read of a WQE after the first read, by its own count. */
static size_t qrdma_wqe_rest(const struct qrdma_sq_wqe *wqe)
{
    size_t used = wqe->flags & QRDMA_WQE_F_INLINE ?
                  MIN(le32_to_cpu(wqe->inline_len), QRDMA_MAX_INLINE) :
                  MIN(wqe->num_sge, QRDMA_MAX_SEND_SGE) *
                  sizeof(struct qrdma_sge);

    return used > sizeof(struct qrdma_sge) ?
           used - sizeof(struct qrdma_sge) : 0;
}

/*
 * Copy the next send WQE of qp out of guest memory, once; only the copy
 * is looked at.  The header first, then only the SGEs or inline bytes it
 * says it has (bounded by the WQE size, so a bad count reads no further).
 * A WQE that cannot be read is fatal to the QP.
 */
static bool qrdma_wqe_fetch(QrdmaCore *core, QrdmaQp *qp, uint32_t idx,
                            struct qrdma_sq_wqe *wqe)
{
    uint64_t addr = qrdma_ring_addr(&qp->sq, idx, qp->sq_log2,
                                   QRDMA_SQ_WQE_SIZE);

    if (!qrdma_dma_read(core, addr, wqe, QRDMA_WQE_FIRST_READ) ||
        (qrdma_wqe_rest(wqe) &&
         !qrdma_dma_read(core, addr + QRDMA_WQE_FIRST_READ,
                         (uint8_t *)wqe + QRDMA_WQE_FIRST_READ,
                         qrdma_wqe_rest(wqe)))) {
        QRDMA_GUEST_ERR(core, qrdma_err_wqe_unreadable,
                        "qp 0x%" PRIx32 ": send WQE" " at 0x%" PRIx64
                        " unreadable", qp->qpn, addr);
        qrdma_event(core, QRDMA_EV_QP_FATAL, qp->qpn);
        qrdma_qp_to_err(core, qp, false);
        return false;
    }
    return true;
}

/*
 * The requester's local side of a message: the source, or for READ and
 * atomics the sink, from the SGEs or the inline data.
 */
static uint8_t qrdma_gather(QrdmaCore *core, const QrdmaQp *qp,
                            const struct qrdma_sq_wqe *wqe, QrdmaIter *it)
{
    uint32_t access = qrdma_wqe_is_read_or_atomic(wqe->opcode) ?
                      QRDMA_ACCESS_LOCAL_WRITE : 0;

    qrdma_iter_range(it, core, NULL, 0, 0);
    if (wqe->opcode == QRDMA_WR_ATOMIC_WRITE ||
        wqe->opcode == QRDMA_WR_FLUSH) {
        /* No local buffer: the SGEs play no part. */
        return QRDMA_WC_SUCCESS;
    }
    if (wqe->flags & QRDMA_WQE_F_INLINE && !access) {
        qrdma_iter_host(it, wqe->inline_data, le32_to_cpu(wqe->inline_len));
        return QRDMA_WC_SUCCESS;
    }
    if (!qrdma_iter_sges(it, core, qp->pd, qp->uctx, wqe->sge, wqe->num_sge,
                         access)) {
        return QRDMA_WC_LOC_PROT_ERR;
    }
    if (qrdma_iter_total(it) > QRDMA_MAX_MSG) {
        return QRDMA_WC_LOC_LEN_ERR;
    }
    if (wqe->opcode == QRDMA_WR_ATOMIC_CMP_AND_SWP ||
        wqe->opcode == QRDMA_WR_ATOMIC_FETCH_AND_ADD) {
        /* The original value goes to the first SGE, whole. */
        if (!it->n || it->span[0].len < 8) {
            return QRDMA_WC_LOC_LEN_ERR;
        }
        it->n = 1;
        it->span[0].len = 8;
    }
    return QRDMA_WC_SUCCESS;
}

/*
 * The local side of c's WQE, checked against the MRs as they are now; if
 * an SGE fails, the WQE has none (not the SGEs checked before the one
 * that failed).
 */
static void qrdma_wqe_gather(QrdmaCore *core, const QrdmaQp *qp,
                             QrdmaWqeCache *c)
{
    c->status = qrdma_gather(core, qp, &c->wqe, &c->local);
    if (c->status) {
        qrdma_iter_range(&c->local, core, NULL, 0, 0);
    }
    c->len = qrdma_iter_total(&c->local);
}

/* Whether qp may post the WQE: its opcode, inline data and SGE count. */
static uint8_t qrdma_wqe_check(const QrdmaQp *qp,
                               const struct qrdma_sq_wqe *wqe)
{
    unsigned num = wqe->num_sge;
    uint8_t status = QRDMA_WC_SUCCESS;

    switch (wqe->opcode) {
    case QRDMA_WR_SEND:
    case QRDMA_WR_SEND_WITH_IMM:
        break;
    case QRDMA_WR_RDMA_WRITE:
    case QRDMA_WR_RDMA_WRITE_WITH_IMM:
    case QRDMA_WR_SEND_WITH_INV:
        if (qp->type == QRDMA_QPT_UD || qp->type == QRDMA_QPT_GSI ||
            (wqe->opcode == QRDMA_WR_SEND_WITH_INV &&
             qp->type != QRDMA_QPT_RC)) {
            status = QRDMA_WC_LOC_QP_OP_ERR;
        }
        break;
    case QRDMA_WR_RDMA_READ:
    case QRDMA_WR_ATOMIC_CMP_AND_SWP:
    case QRDMA_WR_ATOMIC_FETCH_AND_ADD:
    case QRDMA_WR_ATOMIC_WRITE:
        if (qp->type != QRDMA_QPT_RC) {
            status = QRDMA_WC_LOC_QP_OP_ERR;
        }
        break;
    case QRDMA_WR_FLUSH:
        if (qp->type != QRDMA_QPT_RC || !wqe->flush.type ||
            (wqe->flush.type & ~(QRDMA_FLUSH_GLOBAL |
                                QRDMA_FLUSH_PERSISTENT)) ||
            wqe->flush.level > QRDMA_FLUSH_MR) {
            status = QRDMA_WC_LOC_QP_OP_ERR;
        }
        break;
    case QRDMA_WR_LOCAL_INV:
    case QRDMA_WR_REG_MR:
        break;
    case QRDMA_WR_BIND_MW:
        /* Windows serve RDMA, which UD and GSI QPs do not take. */
        if (qp->type != QRDMA_QPT_RC && qp->type != QRDMA_QPT_UC) {
            status = QRDMA_WC_LOC_QP_OP_ERR;
        }
        break;
    default:
        status = QRDMA_WC_LOC_QP_OP_ERR;
    }
    if (!status && (wqe->flags & QRDMA_WQE_F_INLINE) &&
        wqe->opcode != QRDMA_WR_SEND && wqe->opcode != QRDMA_WR_SEND_WITH_IMM &&
        wqe->opcode != QRDMA_WR_SEND_WITH_INV &&
        wqe->opcode != QRDMA_WR_RDMA_WRITE &&
        wqe->opcode != QRDMA_WR_RDMA_WRITE_WITH_IMM) {
        /* Inline data is a source: READ and atomics have none. */
        status = QRDMA_WC_LOC_QP_OP_ERR;
    } else if (!status && (wqe->flags & QRDMA_WQE_F_INLINE) &&
        le32_to_cpu(wqe->inline_len) > QRDMA_MAX_INLINE) {
        status = QRDMA_WC_LOC_LEN_ERR;
    } else if (!status && !(wqe->flags & QRDMA_WQE_F_INLINE) &&
               num > QRDMA_MAX_SEND_SGE) {
        status = QRDMA_WC_LOC_QP_OP_ERR;
    }
    return status;
}


/*
 * The WQE at idx, copied out of guest memory and checked once: its
 * opcode and counts, then its SGEs, which are checked again when an MR
 * has lost access since (mr_gen).  NULL when it cannot be read, which is
 * fatal to the QP.
 */
const QrdmaWqeCache *qrdma_wqe_cached(const QrdmaQp *qp, uint32_t idx)
{
    const QrdmaWqeCache *c;

    if (!qp->wqe) {
        return NULL;
    }
    c = &qp->wqe[idx % QRDMA_WQE_CACHE_SLOTS];
    return c->valid && c->idx == idx ? c : NULL;
}

void qrdma_wqe_forget(QrdmaQp *qp)
{
    unsigned i;

    if (!qp->wqe) {
        return;
    }
    for (i = 0; i < QRDMA_WQE_CACHE_SLOTS; i++) {
        qp->wqe[i].valid = false;
    }
}

void qrdma_wqe_cache_free(QrdmaQp *qp)
{
    g_free(qp->wqe);
    qp->wqe = NULL;
}

QrdmaWqeCache *qrdma_wqe_get(QrdmaCore *core, QrdmaQp *qp, uint32_t idx)
{
    QrdmaWqeCache *c;
    struct qrdma_sq_wqe *wqe;

    if (!qp->wqe) {
        /*
         * Only valid is read before a slot is filled: zeroing all 20 KiB
         * cost a QP's first WQE more than the WQE itself (bench/scale).
         */
        qp->wqe = g_new(QrdmaWqeCache, QRDMA_WQE_CACHE_SLOTS);
        qrdma_wqe_forget(qp);
    }
    c = &qp->wqe[idx % QRDMA_WQE_CACHE_SLOTS];
    wqe = &c->wqe;
    if (c->valid && c->idx == idx) {
        if (c->mr_gen != core->mr_gen && !c->status) {
            c->mr_gen = core->mr_gen;
            qrdma_wqe_gather(core, qp, c);
        }
        return c;
    }
    c->valid = false;
    /*
     * Nothing of the WQE this cache held before may serve the one read
     * now, least of all its local buffer: a WQE that fails its checks has
     * none, whatever answer comes for it.
     */
    qrdma_iter_range(&c->local, core, NULL, 0, 0);
    c->len = 0;
    if (!qrdma_wqe_fetch(core, qp, idx, wqe)) {
        return NULL;
    }
    c->valid = true;
    c->idx = idx;
    c->mr_gen = core->mr_gen;
    c->status = qrdma_wqe_check(qp, wqe);
    if (c->status) {
        QRDMA_GUEST_ERR(core, qrdma_err_wqe_bad,
                        "qp 0x%" PRIx32 ": bad send WQE "
                        "(opcode %u, %u SGEs)", qp->qpn, wqe->opcode,
                        wqe->num_sge);
        return c;
    }
    if (wqe->opcode == QRDMA_WR_BIND_MW || wqe->opcode == QRDMA_WR_LOCAL_INV ||
        wqe->opcode == QRDMA_WR_REG_MR) {
        return c;
    }
    qrdma_wqe_gather(core, qp, c);
    return c;
}

uint32_t qrdma_wqe_psns(const QrdmaQp *qp, const QrdmaWqeCache *c)
{
    uint8_t op = c->wqe.opcode;

    if (op == QRDMA_WR_ATOMIC_CMP_AND_SWP ||
        op == QRDMA_WR_ATOMIC_FETCH_AND_ADD ||
        op == QRDMA_WR_ATOMIC_WRITE || op == QRDMA_WR_FLUSH || !c->len) {
        return 1;
    }
    return DIV_ROUND_UP(c->len, qrdma_qp_mtu(qp));
}

void qrdma_wqe_sent(QrdmaQp *qp, const QrdmaWqeCache *c, QrdmaSent *s)
{
    s->wr_id = c->wqe.wr_id;
    s->len = c->len;
    s->psns = qrdma_wqe_psns(qp, c);
    s->opcode = c->wqe.opcode;
    s->signaled = qp->sq_sig_all || (c->wqe.flags & QRDMA_WQE_F_SIGNALED);
}
