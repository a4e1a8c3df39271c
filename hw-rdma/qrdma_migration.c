/*
 * QEMU qrdma: emulated RDMA (RoCEv2) NIC, what migrates of its resources
 *
 * Copyright (c) 2026 The qrdma developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * The tables are sized by the device's limits and mostly empty, and each
 * object keeps host pointers beside its fields (page lists, a QP's timer
 * and send records, iterators into MRs).  Before a save the live objects
 * are packed into a QrdmaMigImage: per table the slots in use and the
 * generation of every slot, the objects densely, and their page lists and
 * multicast members in two flat arrays that the objects' counts slice.
 * After a load every field is checked, as the commands that made the
 * objects checked them, before anything is unpacked into the tables; the
 * host pointers are made anew.
 *
 * What does not migrate, because a wire loses it as well and RC recovers
 * it: packets on the loopback fabric or in the netdev's queue, requests a
 * QP held while it answered a READ, the UD duplicate filter.  See the
 * Migration section of docs/specs/qrdma.rst.
 */

#include "qemu/osdep.h"
#include "qemu/bitops.h"
#include "migration/vmstate.h"
#include "qrdma.h"
#include "qrdma_dp.h"
#include "qrdma_mcast.h"
#include "qrdma_pkt.h"
#include "qrdma_qp.h"
#include "qrdma_pd.h"
#include "qrdma_resources.h"
#include "trace.h"

static const char *const qrdma_mig_kind[QRDMA_MIG_TABLES] = {
    [QRDMA_MIG_UCTX] = "uctx", [QRDMA_MIG_PD] = "pd", [QRDMA_MIG_MR] = "mr",
    [QRDMA_MIG_MW] = "mw", [QRDMA_MIG_CQ] = "cq", [QRDMA_MIG_SRQ] = "srq",
    [QRDMA_MIG_QP] = "qp", [QRDMA_MIG_AH] = "ah",
    [QRDMA_MIG_MCAST] = "mcast",
};

static QrdmaTable *qrdma_mig_table(QrdmaCore *core, QrdmaResKindIdx k)
{
    QrdmaTable *const tables[QRDMA_MIG_TABLES] = {
        [QRDMA_MIG_UCTX] = &core->uctx_table, [QRDMA_MIG_PD] = &core->pd_table,
        [QRDMA_MIG_MR] = &core->mr_table, [QRDMA_MIG_MW] = &core->mw_table,
        [QRDMA_MIG_CQ] = &core->cq_table, [QRDMA_MIG_SRQ] = &core->srq_table,
        [QRDMA_MIG_QP] = &core->qp_table, [QRDMA_MIG_AH] = &core->ah_table,
        [QRDMA_MIG_MCAST] = &core->mcast_table,
    };

    return tables[k];
}

void qrdma_mig_init(QrdmaCore *core)
{
    unsigned k;

    core->mig.core = core;
    for (k = 0; k < QRDMA_MIG_TABLES; k++) {
        core->mig.t[k].table = qrdma_mig_table(core, k);
    }
}

/*
 * Drop what the image holds.  After a save its objects share their page
 * lists and member arrays with the tables; after a load (loaded) they are
 * its own until unpacked, and a load that failed leaves them here.
 */
static void qrdma_mig_release(QrdmaMigImage *m)
{
    unsigned k;

    if (m->loaded) {
        g_free(m->pages);
        g_free(m->members);
    }
    m->pages = NULL;
    m->members = NULL;
    m->npages = 0;
    m->nmembers = 0;
    for (k = 0; k < QRDMA_MIG_TABLES; k++) {
        g_free(m->t[k].gen);
        g_free(m->t[k].slot);
        m->t[k].gen = NULL;
        m->t[k].slot = NULL;
        m->t[k].n = 0;
    }
    g_clear_pointer(&m->uctx, g_free);
    g_clear_pointer(&m->pd, g_free);
    g_clear_pointer(&m->mr, g_free);
    g_clear_pointer(&m->mw, g_free);
    g_clear_pointer(&m->cq, g_free);
    g_clear_pointer(&m->srq, g_free);
    g_clear_pointer(&m->qp, g_free);
    g_clear_pointer(&m->ah, g_free);
    g_clear_pointer(&m->mcast, g_free);
    m->loaded = false;
}

void qrdma_mig_cleanup(QrdmaCore *core)
{
    qrdma_mig_release(&core->mig);
}

/* Saving */

/* The live slots of table k into the image; their number. */
static uint32_t qrdma_mig_pack_table(QrdmaMigImage *m, QrdmaResKindIdx k)
{
    QrdmaMigTable *mt = &m->t[k];
    const QrdmaTable *t = mt->table;
    uint32_t i, n = 0;

    mt->max = t->max;
    mt->next = qrdma_table_next(t);
    mt->gen = g_memdup2(t->gen, t->max);
    mt->slot = g_new(uint32_t, t->in_use);
    for (i = 0; i < t->max && n < t->in_use; i++) {
        if (t->busy[i]) {
            mt->slot[n++] = i;
        }
    }
    mt->n = n;
    return n;
}

static void qrdma_mig_add_pages(QrdmaMigImage *m, const QrdmaPages *p)
{
    /* An SRQ's QP has no receive ring: no list at all. */
    if (p->n) {
        memcpy(m->pages + m->npages, p->addr, p->n * sizeof(uint64_t));
        m->npages += p->n;
    }
}

static int qrdma_mig_pre_save(void *opaque)
{
    QrdmaMigImage *m = opaque;
    QrdmaCore *core = m->core;
    uint32_t i, npages = 0, nmembers = 0, objects = 0;
    unsigned k;

    qrdma_mig_release(m);
    for (k = 0; k < QRDMA_MIG_TABLES; k++) {
        objects += qrdma_mig_pack_table(m, k);
    }

#define QRDMA_MIG_PACK(kind, field)                                     \
    do {                                                                \
        m->field = g_new(typeof(*m->field), m->t[kind].n);              \
        for (i = 0; i < m->t[kind].n; i++) {                            \
            m->field[i] = core->field[m->t[kind].slot[i]];              \
        }                                                               \
    } while (0)
    QRDMA_MIG_PACK(QRDMA_MIG_UCTX, uctx);
    QRDMA_MIG_PACK(QRDMA_MIG_PD, pd);
    QRDMA_MIG_PACK(QRDMA_MIG_MR, mr);
    QRDMA_MIG_PACK(QRDMA_MIG_MW, mw);
    QRDMA_MIG_PACK(QRDMA_MIG_CQ, cq);
    QRDMA_MIG_PACK(QRDMA_MIG_SRQ, srq);
    QRDMA_MIG_PACK(QRDMA_MIG_AH, ah);
    QRDMA_MIG_PACK(QRDMA_MIG_MCAST, mcast);
#undef QRDMA_MIG_PACK

    m->qp = g_new0(QrdmaMigQp, m->t[QRDMA_MIG_QP].n);
    for (i = 0; i < m->t[QRDMA_MIG_QP].n; i++) {
        QrdmaQp *qp = &core->qp[m->t[QRDMA_MIG_QP].slot[i]];

        /* Saved between two turns of the main loop: no engine runs. */
        assert(!qp->engines);
        m->qp[i].qp = *qp;
        /*
         * Requests it holds while it answers a READ stay behind, lost as
         * on a wire (the sender retries them): the image holds none.
         */
        m->qp[i].qp.resp.nheld = 0;
        memcpy(m->qp[i].sent, qp->sent, sizeof(m->qp[i].sent));
        m->qp[i].deadline = qrdma_dp_qp_deadline(qp);
    }

    /* Page lists: those of the MRs, then the rings, in table order. */
    for (i = 0; i < m->t[QRDMA_MIG_MR].n; i++) {
        npages += m->mr[i].pages.n;
    }
    for (i = 0; i < m->t[QRDMA_MIG_CQ].n; i++) {
        npages += m->cq[i].ring.n;
    }
    for (i = 0; i < m->t[QRDMA_MIG_SRQ].n; i++) {
        npages += m->srq[i].ring.n;
    }
    for (i = 0; i < m->t[QRDMA_MIG_QP].n; i++) {
        npages += m->qp[i].qp.sq.n + m->qp[i].qp.rq.n;
    }
    for (i = 0; i < m->t[QRDMA_MIG_MCAST].n; i++) {
        nmembers += m->mcast[i].nqp;
    }
    m->pages = g_new(uint64_t, npages);
    for (i = 0; i < m->t[QRDMA_MIG_MR].n; i++) {
        qrdma_mig_add_pages(m, &m->mr[i].pages);
    }
    for (i = 0; i < m->t[QRDMA_MIG_CQ].n; i++) {
        qrdma_mig_add_pages(m, &m->cq[i].ring);
    }
    for (i = 0; i < m->t[QRDMA_MIG_SRQ].n; i++) {
        qrdma_mig_add_pages(m, &m->srq[i].ring);
    }
    for (i = 0; i < m->t[QRDMA_MIG_QP].n; i++) {
        qrdma_mig_add_pages(m, &m->qp[i].qp.sq);
        qrdma_mig_add_pages(m, &m->qp[i].qp.rq);
    }
    m->members = g_new(uint32_t, nmembers);
    for (i = 0; i < m->t[QRDMA_MIG_MCAST].n; i++) {
        memcpy(m->members + m->nmembers, m->mcast[i].qpn,
               m->mcast[i].nqp * sizeof(uint32_t));
        m->nmembers += m->mcast[i].nqp;
    }
    /* The flat arrays are the image's own; the objects' pointers are not. */
    m->loaded = true;
    trace_qrdma_mig_save(objects, m->npages, m->nmembers);
    return 0;
}

static int qrdma_mig_post_save(void *opaque)
{
    QrdmaMigImage *m = opaque;

    qrdma_mig_release(m);
    return 0;
}

/* Loading: every count is checked before anything is allocated by it. */

static int qrdma_mig_pre_load(void *opaque)
{
    QrdmaMigImage *m = opaque;

    qrdma_mig_release(m);
    m->loaded = true;
    return 0;
}

static bool qrdma_mig_table_max_ok(void *opaque, int version_id)
{
    QrdmaMigTable *mt = opaque;

    /* The destination was started with the same limits as the source. */
    if (mt->max != mt->table->max || mt->next >= mt->max) {
        trace_qrdma_err_mig_table(mt->table->name, mt->max,
                                 "table size as the destination's");
        return false;
    }
    return true;
}

static bool qrdma_mig_table_n_ok(void *opaque, int version_id)
{
    QrdmaMigTable *mt = opaque;

    if (mt->n > mt->max) {
        trace_qrdma_err_mig_table(mt->table->name, mt->n,
                                 "objects within the table");
        return false;
    }
    return true;
}

static const VMStateDescription qrdma_vmstate_mig_table = {
    .name = "qrdma-mig-table",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32(max, QrdmaMigTable),
        VMSTATE_UINT32(next, QrdmaMigTable),
        VMSTATE_VALIDATE("table size as the destination's",
                         qrdma_mig_table_max_ok),
        VMSTATE_VBUFFER_ALLOC_UINT32(gen, QrdmaMigTable, 0, NULL, max),
        VMSTATE_UINT32(n, QrdmaMigTable),
        VMSTATE_VALIDATE("objects within the table", qrdma_mig_table_n_ok),
        VMSTATE_VARRAY_UINT32_ALLOC(slot, QrdmaMigTable, n, 0,
                                    vmstate_info_uint32, uint32_t),
        VMSTATE_END_OF_LIST()
    },
};

/* The most page list entries the objects counted could have. */
static uint64_t qrdma_mig_pages_max(const QrdmaMigImage *m)
{
    const QrdmaLimits *l = &m->core->limits;
    uint64_t cq = (uint64_t)l->max_cqe * QRDMA_CQE_SIZE / QRDMA_PAGE_SIZE + 1;
    uint64_t srq = (uint64_t)l->max_srq_wr * QRDMA_RQ_WQE_SIZE /
                   QRDMA_PAGE_SIZE + 1;
    uint64_t qp = (uint64_t)l->max_qp_wr *
                  (QRDMA_SQ_WQE_SIZE + QRDMA_RQ_WQE_SIZE) / QRDMA_PAGE_SIZE + 2;

    return l->max_mr_pages_total + m->t[QRDMA_MIG_CQ].n * cq +
           m->t[QRDMA_MIG_SRQ].n * srq + m->t[QRDMA_MIG_QP].n * qp;
}

static bool qrdma_mig_npages_ok(void *opaque, int version_id)
{
    QrdmaMigImage *m = opaque;

    if (m->npages > qrdma_mig_pages_max(m)) {
        trace_qrdma_err_post_load("page lists within the limits");
        return false;
    }
    return true;
}

static bool qrdma_mig_nmembers_ok(void *opaque, int version_id)
{
    QrdmaMigImage *m = opaque;

    if (m->nmembers > (uint64_t)m->t[QRDMA_MIG_MCAST].n *
                      m->core->limits.max_mcast_qp_attach) {
        trace_qrdma_err_post_load("multicast members within the limits");
        return false;
    }
    return true;
}

/*
 * VMS_ALLOC leaves the objects uninitialised: what the stream does not
 * carry (reference counts, host pointers, caches) starts from zero.
 */
static int qrdma_mig_zero_uctx(void *opaque)
{
    memset(opaque, 0, sizeof(QrdmaUctx));
    return 0;
}

static int qrdma_mig_zero_pd(void *opaque)
{
    memset(opaque, 0, sizeof(QrdmaPd));
    return 0;
}

static int qrdma_mig_zero_mr(void *opaque)
{
    memset(opaque, 0, sizeof(QrdmaMr));
    return 0;
}

static int qrdma_mig_zero_mw(void *opaque)
{
    memset(opaque, 0, sizeof(QrdmaMw));
    return 0;
}

static int qrdma_mig_zero_cq(void *opaque)
{
    memset(opaque, 0, sizeof(QrdmaCq));
    return 0;
}

static int qrdma_mig_zero_srq(void *opaque)
{
    memset(opaque, 0, sizeof(QrdmaSrq));
    return 0;
}

static int qrdma_mig_zero_qp(void *opaque)
{
    memset(opaque, 0, sizeof(QrdmaMigQp));
    return 0;
}

static int qrdma_mig_zero_ah(void *opaque)
{
    memset(opaque, 0, sizeof(QrdmaAh));
    return 0;
}

static int qrdma_mig_zero_mcast(void *opaque)
{
    memset(opaque, 0, sizeof(QrdmaMcast));
    return 0;
}

static const VMStateDescription qrdma_vmstate_mig_uctx = {
    .name = "qrdma-uctx",
    .version_id = 1,
    .minimum_version_id = 1,
    .pre_load = qrdma_mig_zero_uctx,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32(handle, QrdmaUctx),
        VMSTATE_UINT32(db_page, QrdmaUctx),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription qrdma_vmstate_mig_pd = {
    .name = "qrdma-pd",
    .version_id = 1,
    .minimum_version_id = 1,
    .pre_load = qrdma_mig_zero_pd,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32(handle, QrdmaPd),
        VMSTATE_UINT32(uctx, QrdmaPd),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription qrdma_vmstate_mig_mr = {
    .name = "qrdma-mr",
    .version_id = 1,
    .minimum_version_id = 1,
    .pre_load = qrdma_mig_zero_mr,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32(lkey, QrdmaMr),
        VMSTATE_UINT32(rkey, QrdmaMr),
        VMSTATE_UINT32(uctx, QrdmaMr),
        VMSTATE_UINT32(pd, QrdmaMr),
        VMSTATE_UINT32(access, QrdmaMr),
        VMSTATE_BOOL(dma, QrdmaMr),
        VMSTATE_BOOL(fast_reg, QrdmaMr),
        VMSTATE_BOOL(valid, QrdmaMr),
        VMSTATE_UINT64(iova, QrdmaMr),
        VMSTATE_UINT64(length, QrdmaMr),
        VMSTATE_UINT8(page_shift, QrdmaMr),
        VMSTATE_UINT32(max_pages, QrdmaMr),
        VMSTATE_UINT32(pages.n, QrdmaMr),
        VMSTATE_UINT32(charged, QrdmaMr),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription qrdma_vmstate_mig_mw = {
    .name = "qrdma-mw",
    .version_id = 1,
    .minimum_version_id = 1,
    .pre_load = qrdma_mig_zero_mw,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32(handle, QrdmaMw),
        VMSTATE_UINT32(uctx, QrdmaMw),
        VMSTATE_UINT32(pd, QrdmaMw),
        VMSTATE_UINT8(type, QrdmaMw),
        VMSTATE_BOOL(bound, QrdmaMw),
        VMSTATE_UINT32(rkey, QrdmaMw),
        VMSTATE_UINT32(access, QrdmaMw),
        VMSTATE_UINT32(qpn, QrdmaMw),
        VMSTATE_UINT32(mr_idx, QrdmaMw),
        VMSTATE_UINT32(mr_lkey, QrdmaMw),
        VMSTATE_UINT64(addr, QrdmaMw),
        VMSTATE_UINT64(length, QrdmaMw),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription qrdma_vmstate_mig_cq = {
    .name = "qrdma-cq",
    .version_id = 1,
    .minimum_version_id = 1,
    .pre_load = qrdma_mig_zero_cq,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32(handle, QrdmaCq),
        VMSTATE_UINT32(uctx, QrdmaCq),
        VMSTATE_UINT32(log2, QrdmaCq),
        VMSTATE_UINT32(eq, QrdmaCq),
        VMSTATE_UINT32(ring.n, QrdmaCq),
        VMSTATE_UINT32(pi, QrdmaCq),
        VMSTATE_UINT32(ci_seen, QrdmaCq),
        VMSTATE_UINT64(ci_addr, QrdmaCq),
        VMSTATE_UINT8(armed, QrdmaCq),
        VMSTATE_BOOL(overrun, QrdmaCq),
        VMSTATE_BOOL(report_vlan, QrdmaCq),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription qrdma_vmstate_mig_srq = {
    .name = "qrdma-srq",
    .version_id = 1,
    .minimum_version_id = 1,
    .pre_load = qrdma_mig_zero_srq,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32(handle, QrdmaSrq),
        VMSTATE_UINT32(uctx, QrdmaSrq),
        VMSTATE_UINT32(pd, QrdmaSrq),
        VMSTATE_UINT32(log2, QrdmaSrq),
        VMSTATE_UINT32(max_wr, QrdmaSrq),
        VMSTATE_UINT32(max_sge, QrdmaSrq),
        VMSTATE_UINT32(limit, QrdmaSrq),
        VMSTATE_UINT32(ring.n, QrdmaSrq),
        VMSTATE_UINT32(pi, QrdmaSrq),
        VMSTATE_UINT32(ci, QrdmaSrq),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription qrdma_vmstate_mig_ah = {
    .name = "qrdma-ah",
    .version_id = 1,
    .minimum_version_id = 1,
    .pre_load = qrdma_mig_zero_ah,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32(handle, QrdmaAh),
        VMSTATE_UINT32(uctx, QrdmaAh),
        VMSTATE_UINT32(pd, QrdmaAh),
        /* As the driver wrote it: little-endian fields. */
        VMSTATE_BUFFER_UNSAFE(av, QrdmaAh, 0, sizeof(struct qrdma_av)),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription qrdma_vmstate_mig_mcast = {
    .name = "qrdma-mcast",
    .version_id = 1,
    .minimum_version_id = 1,
    .pre_load = qrdma_mig_zero_mcast,
    .fields = (const VMStateField[]) {
        VMSTATE_BUFFER(gid, QrdmaMcast),
        VMSTATE_UINT32(nqp, QrdmaMcast),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription qrdma_vmstate_mig_req = {
    .name = "qrdma-req",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32(idx, QrdmaReq),
        VMSTATE_UINT32(idx_hi, QrdmaReq),
        VMSTATE_UINT32(psn, QrdmaReq),
        VMSTATE_UINT32(psn_hi, QrdmaReq),
        VMSTATE_UINT32(sent, QrdmaReq),
        VMSTATE_BOOL(started, QrdmaReq),
        VMSTATE_BOOL(waiting, QrdmaReq),
        VMSTATE_UINT32(unacked, QrdmaReq),
        VMSTATE_BOOL(ack_all, QrdmaReq),
        VMSTATE_UINT32(counted, QrdmaReq),
        VMSTATE_END_OF_LIST()
    },
};

/* Sent only while an early retry is due or has gone. */
static bool qrdma_mig_comp_early_needed(void *opaque)
{
    const QrdmaComp *c = opaque;

    return c->early_armed || c->early_retried;
}

static const VMStateDescription qrdma_vmstate_mig_comp_early = {
    .name = "qrdma-comp/early",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = qrdma_mig_comp_early_needed,
    .fields = (const VMStateField[]) {
        VMSTATE_BOOL(early_armed, QrdmaComp),
        VMSTATE_BOOL(early_retried, QrdmaComp),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription qrdma_vmstate_mig_comp = {
    .name = "qrdma-comp",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32(psn, QrdmaComp),
        VMSTATE_UINT32(acked, QrdmaComp),
        VMSTATE_UINT32(read_done, QrdmaComp),
        VMSTATE_BOOL(gap_retried, QrdmaComp),
        VMSTATE_UINT8(rnr_left, QrdmaComp),
        VMSTATE_UINT8(retry_left, QrdmaComp),
        VMSTATE_BOOL(rnr_wait, QrdmaComp),
        VMSTATE_BOOL(retry_armed, QrdmaComp),
        VMSTATE_END_OF_LIST()
    },
    .subsections = (const VMStateDescription * const []) {
        &qrdma_vmstate_mig_comp_early,
        NULL
    },
};

static const VMStateDescription qrdma_vmstate_mig_res = {
    .name = "qrdma-resp-res",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT8(kind, QrdmaRespRes),
        VMSTATE_UINT32(psn, QrdmaRespRes),
        VMSTATE_UINT32(psns, QrdmaRespRes),
        VMSTATE_UINT64(va, QrdmaRespRes),
        VMSTATE_UINT32(rkey, QrdmaRespRes),
        VMSTATE_UINT32(len, QrdmaRespRes),
        VMSTATE_UINT64(orig, QrdmaRespRes),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription qrdma_vmstate_mig_answer = {
    .name = "qrdma-read-answer",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_BOOL(active, QrdmaReadAnswer),
        VMSTATE_BOOL(resumed, QrdmaReadAnswer),
        VMSTATE_UINT32(psn, QrdmaReadAnswer),
        VMSTATE_UINT32(npkts, QrdmaReadAnswer),
        VMSTATE_UINT32(next, QrdmaReadAnswer),
        VMSTATE_UINT64(va, QrdmaReadAnswer),
        VMSTATE_UINT32(rkey, QrdmaReadAnswer),
        VMSTATE_UINT32(len, QrdmaReadAnswer),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription qrdma_vmstate_mig_resp = {
    .name = "qrdma-resp",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32(epsn, QrdmaResp),
        VMSTATE_UINT32(msn, QrdmaResp),
        VMSTATE_BOOL(nak_sent, QrdmaResp),
        VMSTATE_UINT8(in_msg, QrdmaResp),
        VMSTATE_UINT32(placed, QrdmaResp),
        /* As taken from the guest's ring: little-endian fields. */
        VMSTATE_BUFFER_UNSAFE(rwqe, QrdmaResp, 0,
                              sizeof(struct qrdma_rq_wqe)),
        VMSTATE_UINT64(va, QrdmaResp),
        VMSTATE_UINT32(rkey, QrdmaResp),
        VMSTATE_UINT32(dma_len, QrdmaResp),
        VMSTATE_STRUCT_ARRAY(res, QrdmaResp, QRDMA_MAX_RD_ATOMIC, 0,
                             qrdma_vmstate_mig_res, QrdmaRespRes),
        VMSTATE_UINT32(res_next, QrdmaResp),
        VMSTATE_STRUCT(answer, QrdmaResp, 0, qrdma_vmstate_mig_answer,
                       QrdmaReadAnswer),
        VMSTATE_BOOL(answer_queued, QrdmaResp),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription qrdma_vmstate_mig_sent = {
    .name = "qrdma-sent",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT64(wr_id, QrdmaSent),
        VMSTATE_UINT32(len, QrdmaSent),
        VMSTATE_UINT32(psns, QrdmaSent),
        VMSTATE_UINT8(opcode, QrdmaSent),
        VMSTATE_BOOL(signaled, QrdmaSent),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription qrdma_vmstate_mig_qp = {
    .name = "qrdma-qp",
    .version_id = 1,
    .minimum_version_id = 1,
    .pre_load = qrdma_mig_zero_qp,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32(qp.qpn, QrdmaMigQp),
        VMSTATE_UINT32(qp.uctx, QrdmaMigQp),
        VMSTATE_UINT32(qp.pd, QrdmaMigQp),
        VMSTATE_UINT8(qp.type, QrdmaMigQp),
        VMSTATE_UINT8(qp.state, QrdmaMigQp),
        VMSTATE_BOOL(qp.sq_sig_all, QrdmaMigQp),
        VMSTATE_UINT32(qp.send_cq, QrdmaMigQp),
        VMSTATE_UINT32(qp.recv_cq, QrdmaMigQp),
        VMSTATE_UINT32(qp.srq, QrdmaMigQp),
        VMSTATE_UINT32(qp.sq_log2, QrdmaMigQp),
        VMSTATE_UINT32(qp.rq_log2, QrdmaMigQp),
        /* As the driver wrote them: little-endian fields. */
        VMSTATE_BUFFER_UNSAFE(qp.attr, QrdmaMigQp, 0,
                              sizeof(struct qrdma_qp_attr)),
        VMSTATE_UINT32(qp.sq.n, QrdmaMigQp),
        VMSTATE_UINT32(qp.rq.n, QrdmaMigQp),
        VMSTATE_UINT32(qp.sq_pi, QrdmaMigQp),
        VMSTATE_UINT32(qp.sq_ci, QrdmaMigQp),
        VMSTATE_UINT32(qp.rq_pi, QrdmaMigQp),
        VMSTATE_UINT32(qp.rq_ci, QrdmaMigQp),
        VMSTATE_BOOL(qp.queued, QrdmaMigQp),
        VMSTATE_BOOL(qp.comm_est, QrdmaMigQp),
        VMSTATE_BOOL(qp.fatal, QrdmaMigQp),
        VMSTATE_STRUCT(qp.req, QrdmaMigQp, 0, qrdma_vmstate_mig_req, QrdmaReq),
        VMSTATE_STRUCT(qp.comp, QrdmaMigQp, 0, qrdma_vmstate_mig_comp,
                       QrdmaComp),
        VMSTATE_STRUCT(qp.resp, QrdmaMigQp, 0, qrdma_vmstate_mig_resp,
                       QrdmaResp),
        VMSTATE_STRUCT_ARRAY(sent, QrdmaMigQp, QRDMA_SENT_MAX, 0,
                             qrdma_vmstate_mig_sent, QrdmaSent),
        VMSTATE_INT64(deadline, QrdmaMigQp),
        VMSTATE_END_OF_LIST()
    },
};

/* An array of n (a uint32_t of the image) objects, allocated on load. */
#define QRDMA_VMSTATE_OBJECTS(_field, _kind, _vmsd, _type) {                \
    .name       = stringify(_field),                                        \
    .num_offset = vmstate_offset_value(QrdmaMigImage, t[_kind].n, uint32_t), \
    .vmsd       = &(_vmsd),                                                 \
    .size       = sizeof(_type),                                            \
    .flags      = VMS_STRUCT | VMS_VARRAY_UINT32 | VMS_ALLOC | VMS_POINTER, \
    .offset     = vmstate_offset_pointer(QrdmaMigImage, _field, _type),     \
}

static int qrdma_mig_post_load(void *opaque, int version_id);

const VMStateDescription qrdma_vmstate_resources = {
    .name = "qrdma-resources",
    .version_id = 1,
    .minimum_version_id = 1,
    .pre_save = qrdma_mig_pre_save,
    .post_save = qrdma_mig_post_save,
    .pre_load = qrdma_mig_pre_load,
    .post_load = qrdma_mig_post_load,
    .fields = (const VMStateField[]) {
        VMSTATE_STRUCT_ARRAY(t, QrdmaMigImage, QRDMA_MIG_TABLES, 0,
                             qrdma_vmstate_mig_table, QrdmaMigTable),
        VMSTATE_UINT32(npages, QrdmaMigImage),
        VMSTATE_VALIDATE("page lists within the limits", qrdma_mig_npages_ok),
        VMSTATE_VARRAY_UINT32_ALLOC(pages, QrdmaMigImage, npages, 0,
                                    vmstate_info_uint64, uint64_t),
        VMSTATE_UINT32(nmembers, QrdmaMigImage),
        VMSTATE_VALIDATE("multicast members within the limits",
                         qrdma_mig_nmembers_ok),
        VMSTATE_VARRAY_UINT32_ALLOC(members, QrdmaMigImage, nmembers, 0,
                                    vmstate_info_uint32, uint32_t),
        QRDMA_VMSTATE_OBJECTS(uctx, QRDMA_MIG_UCTX, qrdma_vmstate_mig_uctx,
                              QrdmaUctx),
        QRDMA_VMSTATE_OBJECTS(pd, QRDMA_MIG_PD, qrdma_vmstate_mig_pd, QrdmaPd),
        QRDMA_VMSTATE_OBJECTS(mr, QRDMA_MIG_MR, qrdma_vmstate_mig_mr, QrdmaMr),
        QRDMA_VMSTATE_OBJECTS(mw, QRDMA_MIG_MW, qrdma_vmstate_mig_mw, QrdmaMw),
        QRDMA_VMSTATE_OBJECTS(cq, QRDMA_MIG_CQ, qrdma_vmstate_mig_cq, QrdmaCq),
        QRDMA_VMSTATE_OBJECTS(srq, QRDMA_MIG_SRQ, qrdma_vmstate_mig_srq,
                              QrdmaSrq),
        QRDMA_VMSTATE_OBJECTS(qp, QRDMA_MIG_QP, qrdma_vmstate_mig_qp,
                              QrdmaMigQp),
        QRDMA_VMSTATE_OBJECTS(ah, QRDMA_MIG_AH, qrdma_vmstate_mig_ah, QrdmaAh),
        QRDMA_VMSTATE_OBJECTS(mcast, QRDMA_MIG_MCAST, qrdma_vmstate_mig_mcast,
                              QrdmaMcast),
        VMSTATE_END_OF_LIST()
    },
};

/* Checking a load */

typedef struct QrdmaMigCheck {
    QrdmaMigImage *m;
    QrdmaCore *core;
    /* Per table, by slot: the object's index in the image, or UINT32_MAX */
    uint32_t *where[QRDMA_MIG_TABLES];
    uint32_t pages_used;                /* of m->pages, sliced so far */
    uint32_t members_used;
} QrdmaMigCheck;

/* Object i of the image, of the given kind, is refused: false. */
#define QRDMA_MIG_BAD(kind, i, why)                                     \
    ({                                                                  \
        trace_qrdma_err_mig_load(qrdma_mig_kind[kind],                  \
                                 m->t[kind].slot[i], why);              \
        false;                                                          \
    })

/*
 * The slots of every table: within it, each once, the reserved ones only
 * for what the device puts there (slot 0 of the QPs: the GSI QP, QP 1).
 */
static bool qrdma_mig_check_slots(QrdmaMigCheck *c)
{
    QrdmaMigImage *m = c->m;
    unsigned k;
    uint32_t i;

    for (k = 0; k < QRDMA_MIG_TABLES; k++) {
        QrdmaMigTable *mt = &m->t[k];

        c->where[k] = g_new(uint32_t, mt->max);
        memset(c->where[k], 0xff, mt->max * sizeof(uint32_t));
        for (i = 0; i < mt->n; i++) {
            uint32_t s = mt->slot[i];

            if (s >= mt->max || c->where[k][s] != UINT32_MAX) {
                return QRDMA_MIG_BAD(k, i, "slot out of the table or twice");
            }
            c->where[k][s] = i;
            if (k == QRDMA_MIG_QP && (s == 0) !=
                (m->qp[i].qp.type == QRDMA_QPT_GSI)) {
                return QRDMA_MIG_BAD(k, i, "the GSI QP not in slot 0");
            }
            if (k == QRDMA_MIG_QP && s == 0 &&
                m->qp[i].qp.qpn != QRDMA_GSI_QPN) {
                return QRDMA_MIG_BAD(k, i, "the GSI QP not QP 1");
            }
        }
    }
    return true;
}

/* The index in the image of the object a handle of table k names, or -1 */
static int qrdma_mig_lookup(QrdmaMigCheck *c, QrdmaResKindIdx k,
                            uint32_t handle)
{
    QrdmaMigTable *mt = &c->m->t[k];
    uint32_t idx = (handle & MAKE_64BIT_MASK(0, QRDMA_HANDLE_INDEX_BITS)) - 1;

    if (idx >= mt->max || handle >> QRDMA_HANDLE_INDEX_BITS != mt->gen[idx] ||
        c->where[k][idx] == UINT32_MAX) {
        return -1;
    }
    return c->where[k][idx];
}

/* The handle of the object in image slot i of table k is its own. */
static bool qrdma_mig_own_handle(QrdmaMigImage *m, QrdmaResKindIdx k,
                                 uint32_t i, uint32_t handle)
{
    uint32_t s = m->t[k].slot[i];

    return handle == (((uint32_t)m->t[k].gen[s] << QRDMA_HANDLE_INDEX_BITS) |
                      (s + 1));
}

/* uctx is the kernel's or a context of the image. */
static bool qrdma_mig_uctx_ok(QrdmaMigCheck *c, uint32_t uctx)
{
    return uctx == QRDMA_UCTX_KERNEL ||
           qrdma_mig_lookup(c, QRDMA_MIG_UCTX, uctx) >= 0;
}

/* pd is a PD of the image, of the same owner. */
static bool qrdma_mig_pd_ok(QrdmaMigCheck *c, uint32_t pd, uint32_t uctx)
{
    int i = qrdma_mig_lookup(c, QRDMA_MIG_PD, pd);

    return i >= 0 && c->m->pd[i].uctx == uctx;
}

/* The next n entries of the flat page array, as a list of its own. */
static bool qrdma_mig_take_pages(QrdmaMigCheck *c, uint32_t n,
                                 QrdmaPages *out)
{
    uint32_t i;

    if (n > c->m->npages - c->pages_used) {
        return false;
    }
    for (i = 0; i < n; i++) {
        if (c->m->pages[c->pages_used + i] & (QRDMA_PAGE_SIZE - 1)) {
            return false;
        }
    }
    out->addr = n ? g_memdup2(c->m->pages + c->pages_used,
                              n * sizeof(uint64_t)) : NULL;
    out->n = n;
    c->pages_used += n;
    return true;
}

static bool qrdma_mig_check_uctx(QrdmaMigCheck *c)
{
    QrdmaMigImage *m = c->m;
    uint32_t i, j;

    for (i = 0; i < m->t[QRDMA_MIG_UCTX].n; i++) {
        QrdmaUctx *u = &m->uctx[i];

        if (!qrdma_mig_own_handle(m, QRDMA_MIG_UCTX, i, u->handle)) {
            return QRDMA_MIG_BAD(QRDMA_MIG_UCTX, i, "handle not its slot's");
        }
        /* Doorbell page 0 is the kernel's; each context has one more. */
        if (u->db_page == 0 || u->db_page > m->t[QRDMA_MIG_UCTX].max) {
            return QRDMA_MIG_BAD(QRDMA_MIG_UCTX, i, "doorbell page");
        }
        for (j = 0; j < i; j++) {
            if (m->uctx[j].db_page == u->db_page) {
                return QRDMA_MIG_BAD(QRDMA_MIG_UCTX, i,
                                     "doorbell page of another");
            }
        }
    }
    return true;
}

static bool qrdma_mig_check_pd(QrdmaMigCheck *c)
{
    QrdmaMigImage *m = c->m;
    uint32_t i;

    for (i = 0; i < m->t[QRDMA_MIG_PD].n; i++) {
        if (!qrdma_mig_own_handle(m, QRDMA_MIG_PD, i, m->pd[i].handle) ||
            !qrdma_mig_uctx_ok(c, m->pd[i].uctx)) {
            return QRDMA_MIG_BAD(QRDMA_MIG_PD, i, "handle or owner");
        }
    }
    return true;
}

static bool qrdma_mig_check_mr(QrdmaMigCheck *c)
{
    QrdmaMigImage *m = c->m;
    const QrdmaLimits *l = &c->core->limits;
    uint64_t charged = 0;
    uint32_t i;

    for (i = 0; i < m->t[QRDMA_MIG_MR].n; i++) {
        QrdmaMr *mr = &m->mr[i];
        uint32_t n = mr->pages.n;

        mr->pages = (QrdmaPages) { };
        mr->windows = 0;
        if (mr->lkey >> 8 != m->t[QRDMA_MIG_MR].slot[i] + 1 ||
            (mr->rkey >> 8) != (mr->lkey >> 8)) {
            return QRDMA_MIG_BAD(QRDMA_MIG_MR, i, "keys not its slot's");
        }
        if (!qrdma_mig_uctx_ok(c, mr->uctx) ||
            !qrdma_mig_pd_ok(c, mr->pd, mr->uctx)) {
            return QRDMA_MIG_BAD(QRDMA_MIG_MR, i, "owner or PD");
        }
        if (mr->access & ~QRDMA_ACCESS_VALID_MASK) {
            return QRDMA_MIG_BAD(QRDMA_MIG_MR, i, "access rights");
        }
        if (mr->dma) {
            /* Guest addresses: no page list. */
            if (n || mr->fast_reg || mr->charged) {
                return QRDMA_MIG_BAD(QRDMA_MIG_MR, i, "DMA MR with pages");
            }
            continue;
        }
        /*
         * An invalidated MR keeps its pages; a fast-registration MR that
         * was never registered has none.
         */
        if (mr->fast_reg) {
            if (!mr->max_pages || mr->max_pages > qrdma_mr_max_pages(c->core) ||
                mr->charged != mr->max_pages || n > mr->max_pages ||
                (n && !qrdma_mr_layout_ok(mr->iova, mr->length,
                                          mr->page_shift, n)) ||
                (mr->valid && !n)) {
                return QRDMA_MIG_BAD(QRDMA_MIG_MR, i, "fast-reg layout");
            }
        } else if (n > l->max_mr_pages || mr->charged != n ||
                   !qrdma_mr_layout_ok(mr->iova, mr->length, mr->page_shift,
                                       n)) {
            return QRDMA_MIG_BAD(QRDMA_MIG_MR, i, "layout");
        }
        charged += mr->charged;
        if (charged > l->max_mr_pages_total) {
            return QRDMA_MIG_BAD(QRDMA_MIG_MR, i, "over max-mr-pages-total");
        }
        if (!qrdma_mig_take_pages(c, n, &mr->pages)) {
            return QRDMA_MIG_BAD(QRDMA_MIG_MR, i, "page list");
        }
    }
    return true;
}

static bool qrdma_mig_check_mw(QrdmaMigCheck *c)
{
    QrdmaMigImage *m = c->m;
    uint32_t i;

    for (i = 0; i < m->t[QRDMA_MIG_MW].n; i++) {
        QrdmaMw *mw = &m->mw[i];
        QrdmaMr *mr;

        if (!qrdma_mig_own_handle(m, QRDMA_MIG_MW, i, mw->handle) ||
            !qrdma_mig_uctx_ok(c, mw->uctx) ||
            !qrdma_mig_pd_ok(c, mw->pd, mw->uctx) ||
            (mw->type != QRDMA_MW_TYPE_1 && mw->type != QRDMA_MW_TYPE_2)) {
            return QRDMA_MIG_BAD(QRDMA_MIG_MW, i, "handle, owner or type");
        }
        if (!mw->bound) {
            continue;
        }
        /* A bound window lies within a valid MR. */
        if (mw->mr_idx >= m->t[QRDMA_MIG_MR].max ||
            c->where[QRDMA_MIG_MR][mw->mr_idx] == UINT32_MAX) {
            return QRDMA_MIG_BAD(QRDMA_MIG_MW, i, "bound to no MR");
        }
        mr = &m->mr[c->where[QRDMA_MIG_MR][mw->mr_idx]];
        if (mr->lkey != mw->mr_lkey || !mr->valid || mr->dma ||
            (mw->access & ~QRDMA_ACCESS_VALID_MASK) ||
            mw->addr < mr->iova || mw->length > mr->length ||
            mw->addr - mr->iova > mr->length - mw->length ||
            (mw->type == QRDMA_MW_TYPE_2) != (mw->qpn != 0)) {
            return QRDMA_MIG_BAD(QRDMA_MIG_MW, i, "bound outside its MR");
        }
        mr->windows++;
    }
    return true;
}

static bool qrdma_mig_check_cq(QrdmaMigCheck *c)
{
    QrdmaMigImage *m = c->m;
    uint32_t i;

    for (i = 0; i < m->t[QRDMA_MIG_CQ].n; i++) {
        QrdmaCq *cq = &m->cq[i];
        uint32_t n = cq->ring.n;

        cq->ring = (QrdmaPages) { };
        cq->refs = 0;
        if (!qrdma_mig_own_handle(m, QRDMA_MIG_CQ, i, cq->handle) ||
            !qrdma_mig_uctx_ok(c, cq->uctx)) {
            return QRDMA_MIG_BAD(QRDMA_MIG_CQ, i, "handle or owner");
        }
        if (cq->log2 > 31 || (1ull << cq->log2) > c->core->limits.max_cqe ||
            n != qrdma_ring_pages(cq->log2, QRDMA_CQE_SIZE) ||
            cq->eq >= c->core->msix_vectors ||
            cq->pi - cq->ci_seen > (1u << cq->log2) ||
            (cq->armed & ~(QRDMA_DB_CQ_ARM_NEXT | QRDMA_DB_CQ_ARM_SOLICITED)) ||
            !QEMU_IS_ALIGNED(cq->ci_addr, sizeof(uint32_t))) {
            return QRDMA_MIG_BAD(QRDMA_MIG_CQ, i, "ring, EQ or indices");
        }
        if (!qrdma_mig_take_pages(c, n, &cq->ring)) {
            return QRDMA_MIG_BAD(QRDMA_MIG_CQ, i, "page list");
        }
    }
    return true;
}

static bool qrdma_mig_check_srq(QrdmaMigCheck *c)
{
    QrdmaMigImage *m = c->m;
    const QrdmaLimits *l = &c->core->limits;
    uint32_t i;

    for (i = 0; i < m->t[QRDMA_MIG_SRQ].n; i++) {
        QrdmaSrq *srq = &m->srq[i];
        uint32_t n = srq->ring.n;

        srq->ring = (QrdmaPages) { };
        srq->refs = 0;
        if (!qrdma_mig_own_handle(m, QRDMA_MIG_SRQ, i, srq->handle) ||
            !qrdma_mig_uctx_ok(c, srq->uctx) ||
            !qrdma_mig_pd_ok(c, srq->pd, srq->uctx)) {
            return QRDMA_MIG_BAD(QRDMA_MIG_SRQ, i, "handle, owner or PD");
        }
        if (srq->max_wr > l->max_srq_wr || srq->max_sge > QRDMA_MAX_RECV_SGE ||
            srq->log2 > 31 || (1u << srq->log2) < MAX(srq->max_wr, 1) ||
            (1u << srq->log2) > l->max_srq_wr ||
            n != qrdma_ring_pages(srq->log2, QRDMA_RQ_WQE_SIZE) ||
            srq->limit > srq->max_wr ||
            srq->pi - srq->ci > (1u << srq->log2)) {
            return QRDMA_MIG_BAD(QRDMA_MIG_SRQ, i, "ring or indices");
        }
        if (!qrdma_mig_take_pages(c, n, &srq->ring)) {
            return QRDMA_MIG_BAD(QRDMA_MIG_SRQ, i, "page list");
        }
    }
    return true;
}

/* A path the data path can follow: its source GID index in the table. */
static bool qrdma_mig_av_ok(const struct qrdma_av *av)
{
    return av->sgid_index < QRDMA_GID_TABLE_LEN &&
           le32_to_cpu(av->flow_label) <= 0xfffff;
}

/* The transport state of a QP: indices within its rings, PSNs 24 bits. */
static const char *qrdma_mig_qp_transport_bad(const QrdmaQp *qp)
{
    const QrdmaResp *r = &qp->resp;
    uint32_t sq_size = 1u << qp->sq_log2;
    uint32_t i;

    if (qp->sq_pi - qp->sq_ci > sq_size ||
        qp->req.idx - qp->sq_ci > qp->sq_pi - qp->sq_ci ||
        qp->req.idx_hi - qp->sq_ci > qp->sq_pi - qp->sq_ci ||
        qp->req.idx - qp->sq_ci > QRDMA_SENT_MAX ||
        qp->req.idx_hi - qp->sq_ci > QRDMA_SENT_MAX ||
        qp->req.counted - qp->sq_ci > qp->sq_pi - qp->sq_ci) {
        return "send queue indices";
    }
    if (qp->srq == QRDMA_HANDLE_NONE ?
        qp->rq_pi - qp->rq_ci > (1u << qp->rq_log2) :
        (qp->rq_pi || qp->rq_ci)) {
        return "receive queue indices";
    }
    if ((qp->req.psn | qp->req.psn_hi | qp->comp.psn | qp->comp.acked |
         r->epsn) & ~QRDMA_PSN_MASK) {
        return "PSNs over 24 bits";
    }
    if (qp->req.sent >= QRDMA_MAX_MSG || qp->comp.read_done >= QRDMA_MAX_MSG ||
        qp->comp.rnr_left > 7 || qp->comp.retry_left > 7) {
        return "requester or completer progress";
    }
    if (qp->comp.early_armed &&
        (!qp->comp.retry_armed || qp->comp.early_retried)) {
        return "early retry without its timer";
    }
    /*
     * res_next counts the responder resources taken, each the next modulo
     * max_dest_rd_atomic: any count is one (a QP that answered 128 READs
     * has gone past QRDMA_MAX_RD_ATOMIC).
     */
    if ((r->in_msg != 0 && r->in_msg != QRDMA_OPF_SEND &&
         r->in_msg != QRDMA_OPF_WRITE) ||
        (r->in_msg == QRDMA_OPF_WRITE ?
         r->dma_len > QRDMA_MAX_MSG || r->placed > r->dma_len :
         r->placed >= QRDMA_MAX_MSG) ||
        le32_to_cpu(r->rwqe.num_sge) > QRDMA_MAX_RECV_SGE || r->nheld) {
        return "responder message";
    }
    for (i = 0; i < QRDMA_MAX_RD_ATOMIC; i++) {
        const QrdmaRespRes *res = &r->res[i];

        if (res->kind > QRDMA_RES_EMPTY || (res->psn & ~QRDMA_PSN_MASK) ||
            res->psns > QRDMA_MAX_MSG / 256 + 1 || res->len > QRDMA_MAX_MSG) {
            return "responder resource";
        }
    }
    if (r->answer.active &&
        ((r->answer.psn & ~QRDMA_PSN_MASK) || r->answer.len > QRDMA_MAX_MSG ||
         r->answer.npkts > QRDMA_MAX_MSG / 256 + 1 ||
         r->answer.next > r->answer.npkts)) {
        return "READ answer";
    }
    if (r->answer_queued && !r->answer.active) {
        return "an answer queued with none under way";
    }
    return NULL;
}

static bool qrdma_mig_check_qp(QrdmaMigCheck *c)
{
    QrdmaMigImage *m = c->m;
    const QrdmaLimits *l = &c->core->limits;
    uint32_t i;

    for (i = 0; i < m->t[QRDMA_MIG_QP].n; i++) {
        QrdmaMigQp *mq = &m->qp[i];
        QrdmaQp *qp = &mq->qp;
        bool has_srq = qp->srq != QRDMA_HANDLE_NONE;
        uint32_t sq_n = qp->sq.n, rq_n = qp->rq.n;
        const char *why;
        int cq, srq;

        qp->sq = qp->rq = (QrdmaPages) { };
        qp->mcast_attached = 0;
        qp->windows = 0;
        if (!qrdma_mig_own_handle(m, QRDMA_MIG_QP, i, qp->qpn) ||
            !qrdma_mig_uctx_ok(c, qp->uctx) ||
            !qrdma_mig_pd_ok(c, qp->pd, qp->uctx)) {
            return QRDMA_MIG_BAD(QRDMA_MIG_QP, i, "QPN, owner or PD");
        }
        if (qp->type < QRDMA_QPT_GSI || qp->type > QRDMA_QPT_UD ||
            qp->state > QRDMA_QPS_ERR ||
            (has_srq && qp->type != QRDMA_QPT_RC &&
             qp->type != QRDMA_QPT_UD)) {
            return QRDMA_MIG_BAD(QRDMA_MIG_QP, i, "type or state");
        }
        cq = qrdma_mig_lookup(c, QRDMA_MIG_CQ, qp->send_cq);
        if (cq < 0 || m->cq[cq].uctx != qp->uctx) {
            return QRDMA_MIG_BAD(QRDMA_MIG_QP, i, "send CQ");
        }
        m->cq[cq].refs++;
        cq = qrdma_mig_lookup(c, QRDMA_MIG_CQ, qp->recv_cq);
        if (cq < 0 || m->cq[cq].uctx != qp->uctx) {
            return QRDMA_MIG_BAD(QRDMA_MIG_QP, i, "receive CQ");
        }
        m->cq[cq].refs++;
        if (has_srq) {
            srq = qrdma_mig_lookup(c, QRDMA_MIG_SRQ, qp->srq);
            if (srq < 0 || m->srq[srq].uctx != qp->uctx) {
                return QRDMA_MIG_BAD(QRDMA_MIG_QP, i, "SRQ");
            }
            m->srq[srq].refs++;
        }
        if (qp->sq_log2 > 31 || (1u << qp->sq_log2) > l->max_qp_wr ||
            sq_n != qrdma_ring_pages(qp->sq_log2, QRDMA_SQ_WQE_SIZE) ||
            (has_srq ? qp->rq_log2 || rq_n :
             qp->rq_log2 > 31 || (1u << qp->rq_log2) > l->max_qp_wr ||
             rq_n != qrdma_ring_pages(qp->rq_log2, QRDMA_RQ_WQE_SIZE))) {
            return QRDMA_MIG_BAD(QRDMA_MIG_QP, i, "rings");
        }
        /*
         * Every attribute as a modify would have checked it (a path MTU
         * never set is 0); the source GID may have gone from the table
         * since, as on the source.
         */
        if (qrdma_qp_bad_value(&qp->attr, ~(QRDMA_QP_ATTR_ALT_PATH |
                                            QRDMA_QP_ATTR_PATH_MTU)) ||
            qp->attr.path_mtu > 5 || !qrdma_mig_av_ok(&qp->attr.av)) {
            return QRDMA_MIG_BAD(QRDMA_MIG_QP, i, "attributes");
        }
        why = qrdma_mig_qp_transport_bad(qp);
        if (why) {
            return QRDMA_MIG_BAD(QRDMA_MIG_QP, i, why);
        }
        if (qp->state == QRDMA_QPS_RESET && (qp->queued || qp->sq_pi)) {
            return QRDMA_MIG_BAD(QRDMA_MIG_QP, i, "work in RESET");
        }
        if (!qrdma_mig_take_pages(c, sq_n, &qp->sq) ||
            !qrdma_mig_take_pages(c, rq_n, &qp->rq)) {
            return QRDMA_MIG_BAD(QRDMA_MIG_QP, i, "page list");
        }
        qp->srq = has_srq ? qp->srq : QRDMA_HANDLE_NONE;
        qrdma_qp_set_caps(qp);
    }
    return true;
}

static bool qrdma_mig_check_ah(QrdmaMigCheck *c)
{
    QrdmaMigImage *m = c->m;
    uint32_t i;

    for (i = 0; i < m->t[QRDMA_MIG_AH].n; i++) {
        QrdmaAh *ah = &m->ah[i];

        if (!qrdma_mig_own_handle(m, QRDMA_MIG_AH, i, ah->handle) ||
            !qrdma_mig_uctx_ok(c, ah->uctx) ||
            !qrdma_mig_pd_ok(c, ah->pd, ah->uctx) ||
            !qrdma_mig_av_ok(&ah->av)) {
            return QRDMA_MIG_BAD(QRDMA_MIG_AH, i, "handle, owner or path");
        }
    }
    return true;
}

static bool qrdma_mig_has_member(const uint32_t *qpn, uint32_t n, uint32_t want)
{
    uint32_t i;

    for (i = 0; i < n; i++) {
        if (qpn[i] == want) {
            return true;
        }
    }
    return false;
}

static bool qrdma_mig_check_mcast(QrdmaMigCheck *c)
{
    QrdmaMigImage *m = c->m;
    g_autoptr(GHashTable) gids = g_hash_table_new(qrdma_gid_hash,
                                                  qrdma_gid_equal);
    uint32_t i, j;

    for (i = 0; i < m->t[QRDMA_MIG_MCAST].n; i++) {
        QrdmaMcast *g = &m->mcast[i];

        g->qpn = NULL;
        /* A group is found by its GID: one group a GID. */
        if (!qrdma_gid_is_mcast(g->gid) ||
            !g_hash_table_add(gids, g->gid)) {
            return QRDMA_MIG_BAD(QRDMA_MIG_MCAST, i,
                                 "GID not multicast, or twice");
        }
        if (!g->nqp || g->nqp > c->core->limits.max_mcast_qp_attach ||
            g->nqp > m->nmembers - c->members_used) {
            return QRDMA_MIG_BAD(QRDMA_MIG_MCAST, i, "members");
        }
        for (j = 0; j < g->nqp; j++) {
            uint32_t qpn = m->members[c->members_used + j];
            int q = qrdma_mig_lookup(c, QRDMA_MIG_QP, qpn);

            if (q < 0 || m->qp[q].qp.type != QRDMA_QPT_UD ||
                qrdma_mig_has_member(m->members + c->members_used, j, qpn)) {
                return QRDMA_MIG_BAD(QRDMA_MIG_MCAST, i,
                                     "member not a UD QP, or twice");
            }
            m->qp[q].qp.mcast_attached++;
        }
        c->members_used += g->nqp;
    }
    return true;
}

/* A bound type 2 window belongs to a QP of its PD, which counts it. */
static bool qrdma_mig_check_mw_qp(QrdmaMigCheck *c)
{
    QrdmaMigImage *m = c->m;
    uint32_t i;

    for (i = 0; i < m->t[QRDMA_MIG_MW].n; i++) {
        QrdmaMw *mw = &m->mw[i];
        int q;

        if (!mw->bound || mw->type != QRDMA_MW_TYPE_2) {
            continue;
        }
        q = qrdma_mig_lookup(c, QRDMA_MIG_QP, mw->qpn);
        if (q < 0 || m->qp[q].qp.pd != mw->pd) {
            return QRDMA_MIG_BAD(QRDMA_MIG_MW, i,
                                 "type 2 window bound to no QP of its PD");
        }
        m->qp[q].qp.windows++;
    }
    return true;
}

static bool qrdma_mig_check(QrdmaMigCheck *c)
{
    bool (*const checks[])(QrdmaMigCheck *c) = {
        qrdma_mig_check_uctx, qrdma_mig_check_pd, qrdma_mig_check_mr,
        qrdma_mig_check_mw, qrdma_mig_check_cq, qrdma_mig_check_srq,
        qrdma_mig_check_qp, qrdma_mig_check_mw_qp, qrdma_mig_check_ah,
        qrdma_mig_check_mcast,
    };
    size_t i;

    if (!qrdma_mig_check_slots(c)) {
        return false;
    }
    for (i = 0; i < ARRAY_SIZE(checks); i++) {
        if (!checks[i](c)) {
            return false;
        }
    }
    if (c->pages_used != c->m->npages || c->members_used != c->m->nmembers) {
        trace_qrdma_err_post_load("page lists or multicast members left over");
        return false;
    }
    return true;
}

/* The page lists a failed load had already sliced off. */
static void qrdma_mig_free_sliced(QrdmaMigImage *m)
{
    uint32_t i;

    for (i = 0; i < m->t[QRDMA_MIG_MR].n; i++) {
        qrdma_pages_free(&m->mr[i].pages);
    }
    for (i = 0; i < m->t[QRDMA_MIG_CQ].n; i++) {
        qrdma_pages_free(&m->cq[i].ring);
    }
    for (i = 0; i < m->t[QRDMA_MIG_SRQ].n; i++) {
        qrdma_pages_free(&m->srq[i].ring);
    }
    for (i = 0; i < m->t[QRDMA_MIG_QP].n; i++) {
        qrdma_pages_free(&m->qp[i].qp.sq);
        qrdma_pages_free(&m->qp[i].qp.rq);
    }
}

/* Unpacking: everything was checked; the tables take it over. */
static void qrdma_mig_unpack(QrdmaMigImage *m)
{
    QrdmaCore *core = m->core;
    uint32_t i, members = 0;
    unsigned k;

    for (k = 0; k < QRDMA_MIG_TABLES; k++) {
        QrdmaMigTable *mt = &m->t[k];
        QrdmaTable *t = qrdma_mig_table(core, k);

        qrdma_table_load(t, mt->gen, mt->next, mt->slot, mt->n);
    }

#define QRDMA_MIG_UNPACK(kind, field)                                   \
    for (i = 0; i < m->t[kind].n; i++) {                                \
        core->field[m->t[kind].slot[i]] = m->field[i];                  \
    }
    QRDMA_MIG_UNPACK(QRDMA_MIG_UCTX, uctx);
    QRDMA_MIG_UNPACK(QRDMA_MIG_PD, pd);
    QRDMA_MIG_UNPACK(QRDMA_MIG_MR, mr);
    QRDMA_MIG_UNPACK(QRDMA_MIG_MW, mw);
    QRDMA_MIG_UNPACK(QRDMA_MIG_CQ, cq);
    QRDMA_MIG_UNPACK(QRDMA_MIG_SRQ, srq);
    QRDMA_MIG_UNPACK(QRDMA_MIG_AH, ah);
#undef QRDMA_MIG_UNPACK

    /* What references them: recounted, never taken from the stream. */
    for (i = 0; i < m->t[QRDMA_MIG_MR].n; i++) {
        QrdmaMr *mr = &m->mr[i];

        core->mr_pages_in_use += mr->charged;
        core->pd[qrdma_table_lookup(&core->pd_table, mr->pd)].refs++;
        qrdma_uctx_ref(core, mr->uctx, 1);
    }
    for (i = 0; i < m->t[QRDMA_MIG_MW].n; i++) {
        core->pd[qrdma_table_lookup(&core->pd_table, m->mw[i].pd)].refs++;
        qrdma_uctx_ref(core, m->mw[i].uctx, 1);
    }
    for (i = 0; i < m->t[QRDMA_MIG_SRQ].n; i++) {
        core->pd[qrdma_table_lookup(&core->pd_table, m->srq[i].pd)].refs++;
        qrdma_uctx_ref(core, m->srq[i].uctx, 1);
    }
    for (i = 0; i < m->t[QRDMA_MIG_AH].n; i++) {
        core->pd[qrdma_table_lookup(&core->pd_table, m->ah[i].pd)].refs++;
        qrdma_uctx_ref(core, m->ah[i].uctx, 1);
    }
    for (i = 0; i < m->t[QRDMA_MIG_PD].n; i++) {
        qrdma_uctx_ref(core, m->pd[i].uctx, 1);
    }
    for (i = 0; i < m->t[QRDMA_MIG_CQ].n; i++) {
        qrdma_uctx_ref(core, m->cq[i].uctx, 1);
    }
    for (i = 0; i < m->t[QRDMA_MIG_QP].n; i++) {
        QrdmaMigQp *mq = &m->qp[i];
        QrdmaQp *qp = &core->qp[m->t[QRDMA_MIG_QP].slot[i]];

        *qp = mq->qp;
        core->pd[qrdma_table_lookup(&core->pd_table, qp->pd)].refs++;
        qrdma_uctx_ref(core, qp->uctx, 1);
        qrdma_dp_qp_loaded(core, qp, mq->sent, mq->deadline);
    }
    for (i = 0; i < m->t[QRDMA_MIG_MCAST].n; i++) {
        QrdmaMcast *g = &core->mcast[m->t[QRDMA_MIG_MCAST].slot[i]];

        memcpy(g->gid, m->mcast[i].gid, sizeof(g->gid));
        qrdma_mcast_index(core, m->t[QRDMA_MIG_MCAST].slot[i]);
        g->nqp = m->mcast[i].nqp;
        memcpy(g->qpn, m->members + members, g->nqp * sizeof(uint32_t));
        members += g->nqp;
    }
}

static int qrdma_mig_post_load(void *opaque, int version_id)
{
    QrdmaMigImage *m = opaque;
    QrdmaMigCheck c = { .m = m, .core = m->core };
    uint32_t objects = 0;
    unsigned k;
    bool ok;

    if (qrdma_resources_in_use(m->core)) {
        trace_qrdma_err_post_load("resources loaded into a device that has "
                                  "some");
        qrdma_mig_release(m);
        return -EINVAL;
    }
    ok = qrdma_mig_check(&c);
    for (k = 0; k < QRDMA_MIG_TABLES; k++) {
        g_free(c.where[k]);
    }
    if (!ok) {
        qrdma_mig_free_sliced(m);
        qrdma_mig_release(m);
        return -EINVAL;
    }
    for (k = 0; k < QRDMA_MIG_TABLES; k++) {
        objects += m->t[k].n;
    }
    trace_qrdma_mig_loaded(objects, m->npages, m->nmembers);
    qrdma_mig_unpack(m);
    qrdma_mig_release(m);
    return 0;
}

const VMStateDescription qrdma_vmstate_counters = {
    .name = "qrdma-counters",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT64(wqes, QrdmaCounters),
        VMSTATE_UINT64(events_dropped, QrdmaCounters),
        VMSTATE_UINT64(cmds, QrdmaCounters),
        VMSTATE_UINT64(cmd_errors, QrdmaCounters),
        VMSTATE_UINT64(guest_errors, QrdmaCounters),
        VMSTATE_UINT64(eth_tx_frames, QrdmaCounters),
        VMSTATE_UINT64(eth_rx_frames, QrdmaCounters),
        VMSTATE_UINT64(eth_rx_dropped, QrdmaCounters),
        VMSTATE_UINT64(eth_tx_dropped, QrdmaCounters),
        VMSTATE_UINT64(sq_deferred, QrdmaCounters),
        VMSTATE_UINT64(pkts_sent, QrdmaCounters),
        VMSTATE_UINT64(pkts_rcvd, QrdmaCounters),
        VMSTATE_UINT64(pkts_dropped, QrdmaCounters),
        VMSTATE_UINT64(dup_reqs, QrdmaCounters),
        VMSTATE_UINT64(out_of_seq, QrdmaCounters),
        VMSTATE_UINT64(seq_naks_sent, QrdmaCounters),
        VMSTATE_UINT64(seq_naks_rcvd, QrdmaCounters),
        VMSTATE_UINT64(rnr_naks_sent, QrdmaCounters),
        VMSTATE_UINT64(rnr_naks_rcvd, QrdmaCounters),
        VMSTATE_UINT64(retransmits, QrdmaCounters),
        VMSTATE_UINT64(retry_exceeded, QrdmaCounters),
        VMSTATE_UINT64(icrc_errors, QrdmaCounters),
        VMSTATE_UINT64(wire_malformed, QrdmaCounters),
        VMSTATE_UINT64(ud_duplicates, QrdmaCounters),
        VMSTATE_UINT64(held_dropped, QrdmaCounters),
        VMSTATE_UINT64(dup_unmatched, QrdmaCounters),
        VMSTATE_UINT64(acks_withheld, QrdmaCounters),
        VMSTATE_END_OF_LIST()
    },
};
