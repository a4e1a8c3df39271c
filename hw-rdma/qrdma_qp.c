/*
 * QEMU qrdma: emulated RDMA (RoCEv2) NIC, queue pairs
 *
 * Copyright (c) 2026 The qrdma developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qrdma.h"
#include "qrdma_pd.h"
#include "qrdma_ah.h"
#include "qrdma_cq.h"
#include "qrdma_srq.h"
#include "qrdma_qp.h"
#include "qrdma_dp.h"
#include "qrdma_err.h"
#include "trace.h"

#define QRDMA_QP_ATTR_KNOWN (QRDMA_QP_ATTR_DEST_QPN * 2 - 1)
#define QRDMA_NUM_QPS 7
#define QRDMA_NUM_QPT 5

/*
 * The QP state table of the InfiniBand specification (11.2.4.2, as Linux
 * applies it in ib_modify_qp_is_ok()): which modify transitions exist,
 * and for each QP type the attributes a transition requires and those it
 * also allows.  Any other attribute makes the modify fail.
 */
typedef struct QrdmaQpTransition {
    bool valid;
    uint32_t req[QRDMA_NUM_QPT];
    uint32_t opt[QRDMA_NUM_QPT];
} QrdmaQpTransition;

#define QPT_UD_GSI(ud, gsi) [QRDMA_QPT_UD] = (ud), [QRDMA_QPT_GSI] = (gsi)

static const QrdmaQpTransition qrdma_qp_table[QRDMA_NUM_QPS][QRDMA_NUM_QPS] = {
    [QRDMA_QPS_RESET] = {
        [QRDMA_QPS_RESET] = { .valid = true },
        [QRDMA_QPS_INIT] = {
            .valid = true,
            .req = {
                QPT_UD_GSI(QRDMA_QP_ATTR_PKEY_INDEX | QRDMA_QP_ATTR_PORT |
                           QRDMA_QP_ATTR_QKEY,
                           QRDMA_QP_ATTR_PKEY_INDEX | QRDMA_QP_ATTR_QKEY),
                [QRDMA_QPT_UC] = QRDMA_QP_ATTR_PKEY_INDEX | QRDMA_QP_ATTR_PORT |
                                 QRDMA_QP_ATTR_ACCESS_FLAGS,
                [QRDMA_QPT_RC] = QRDMA_QP_ATTR_PKEY_INDEX | QRDMA_QP_ATTR_PORT |
                                 QRDMA_QP_ATTR_ACCESS_FLAGS,
            },
        },
    },
    [QRDMA_QPS_INIT] = {
        [QRDMA_QPS_RESET] = { .valid = true },
        [QRDMA_QPS_ERR] = { .valid = true },
        [QRDMA_QPS_INIT] = {
            .valid = true,
            .opt = {
                QPT_UD_GSI(QRDMA_QP_ATTR_PKEY_INDEX | QRDMA_QP_ATTR_PORT |
                           QRDMA_QP_ATTR_QKEY,
                           QRDMA_QP_ATTR_PKEY_INDEX | QRDMA_QP_ATTR_QKEY),
                [QRDMA_QPT_UC] = QRDMA_QP_ATTR_PKEY_INDEX | QRDMA_QP_ATTR_PORT |
                                 QRDMA_QP_ATTR_ACCESS_FLAGS,
                [QRDMA_QPT_RC] = QRDMA_QP_ATTR_PKEY_INDEX | QRDMA_QP_ATTR_PORT |
                                 QRDMA_QP_ATTR_ACCESS_FLAGS,
            },
        },
        [QRDMA_QPS_RTR] = {
            .valid = true,
            .req = {
                [QRDMA_QPT_UC] = QRDMA_QP_ATTR_AV | QRDMA_QP_ATTR_PATH_MTU |
                                 QRDMA_QP_ATTR_DEST_QPN |
                                 QRDMA_QP_ATTR_RQ_PSN,
                [QRDMA_QPT_RC] = QRDMA_QP_ATTR_AV | QRDMA_QP_ATTR_PATH_MTU |
                                 QRDMA_QP_ATTR_DEST_QPN | QRDMA_QP_ATTR_RQ_PSN |
                                 QRDMA_QP_ATTR_MAX_DEST_RD_ATOMIC |
                                 QRDMA_QP_ATTR_MIN_RNR_TIMER,
            },
            .opt = {
                QPT_UD_GSI(QRDMA_QP_ATTR_PKEY_INDEX | QRDMA_QP_ATTR_QKEY,
                           QRDMA_QP_ATTR_PKEY_INDEX | QRDMA_QP_ATTR_QKEY),
                [QRDMA_QPT_UC] = QRDMA_QP_ATTR_ALT_PATH |
                                 QRDMA_QP_ATTR_ACCESS_FLAGS |
                                 QRDMA_QP_ATTR_PKEY_INDEX,
                [QRDMA_QPT_RC] = QRDMA_QP_ATTR_ALT_PATH |
                                 QRDMA_QP_ATTR_ACCESS_FLAGS |
                                 QRDMA_QP_ATTR_PKEY_INDEX,
            },
        },
    },
    [QRDMA_QPS_RTR] = {
        [QRDMA_QPS_RESET] = { .valid = true },
        [QRDMA_QPS_ERR] = { .valid = true },
        [QRDMA_QPS_RTS] = {
            .valid = true,
            .req = {
                QPT_UD_GSI(QRDMA_QP_ATTR_SQ_PSN, QRDMA_QP_ATTR_SQ_PSN),
                [QRDMA_QPT_UC] = QRDMA_QP_ATTR_SQ_PSN,
                [QRDMA_QPT_RC] = QRDMA_QP_ATTR_TIMEOUT |
                                 QRDMA_QP_ATTR_RETRY_CNT |
                                 QRDMA_QP_ATTR_RNR_RETRY |
                                 QRDMA_QP_ATTR_SQ_PSN |
                                 QRDMA_QP_ATTR_MAX_QP_RD_ATOMIC,
            },
            .opt = {
                QPT_UD_GSI(QRDMA_QP_ATTR_CUR_STATE | QRDMA_QP_ATTR_QKEY,
                           QRDMA_QP_ATTR_CUR_STATE | QRDMA_QP_ATTR_QKEY),
                [QRDMA_QPT_UC] = QRDMA_QP_ATTR_CUR_STATE |
                                 QRDMA_QP_ATTR_ALT_PATH |
                                 QRDMA_QP_ATTR_ACCESS_FLAGS |
                                 QRDMA_QP_ATTR_PATH_MIG_STATE,
                [QRDMA_QPT_RC] = QRDMA_QP_ATTR_CUR_STATE |
                                 QRDMA_QP_ATTR_ALT_PATH |
                                 QRDMA_QP_ATTR_ACCESS_FLAGS |
                                 QRDMA_QP_ATTR_MIN_RNR_TIMER |
                                 QRDMA_QP_ATTR_PATH_MIG_STATE,
            },
        },
    },
    [QRDMA_QPS_RTS] = {
        [QRDMA_QPS_RESET] = { .valid = true },
        [QRDMA_QPS_ERR] = { .valid = true },
        [QRDMA_QPS_RTS] = {
            .valid = true,
            .opt = {
                QPT_UD_GSI(QRDMA_QP_ATTR_CUR_STATE | QRDMA_QP_ATTR_QKEY,
                           QRDMA_QP_ATTR_CUR_STATE | QRDMA_QP_ATTR_QKEY),
                [QRDMA_QPT_UC] = QRDMA_QP_ATTR_CUR_STATE |
                                 QRDMA_QP_ATTR_ACCESS_FLAGS |
                                 QRDMA_QP_ATTR_ALT_PATH |
                                 QRDMA_QP_ATTR_PATH_MIG_STATE,
                [QRDMA_QPT_RC] = QRDMA_QP_ATTR_CUR_STATE |
                                 QRDMA_QP_ATTR_ACCESS_FLAGS |
                                 QRDMA_QP_ATTR_ALT_PATH |
                                 QRDMA_QP_ATTR_PATH_MIG_STATE |
                                 QRDMA_QP_ATTR_MIN_RNR_TIMER,
            },
        },
        [QRDMA_QPS_SQD] = {
            .valid = true,
            .opt = {
                QPT_UD_GSI(QRDMA_QP_ATTR_EN_SQD_ASYNC_NOTIFY,
                           QRDMA_QP_ATTR_EN_SQD_ASYNC_NOTIFY),
                [QRDMA_QPT_UC] = QRDMA_QP_ATTR_EN_SQD_ASYNC_NOTIFY,
                [QRDMA_QPT_RC] = QRDMA_QP_ATTR_EN_SQD_ASYNC_NOTIFY,
            },
        },
    },
    [QRDMA_QPS_SQD] = {
        [QRDMA_QPS_RESET] = { .valid = true },
        [QRDMA_QPS_ERR] = { .valid = true },
        [QRDMA_QPS_RTS] = {
            .valid = true,
            .opt = {
                QPT_UD_GSI(QRDMA_QP_ATTR_CUR_STATE | QRDMA_QP_ATTR_QKEY,
                           QRDMA_QP_ATTR_CUR_STATE | QRDMA_QP_ATTR_QKEY),
                [QRDMA_QPT_UC] = QRDMA_QP_ATTR_CUR_STATE |
                                 QRDMA_QP_ATTR_ALT_PATH |
                                 QRDMA_QP_ATTR_ACCESS_FLAGS |
                                 QRDMA_QP_ATTR_PATH_MIG_STATE,
                [QRDMA_QPT_RC] = QRDMA_QP_ATTR_CUR_STATE |
                                 QRDMA_QP_ATTR_ALT_PATH |
                                 QRDMA_QP_ATTR_ACCESS_FLAGS |
                                 QRDMA_QP_ATTR_MIN_RNR_TIMER |
                                 QRDMA_QP_ATTR_PATH_MIG_STATE,
            },
        },
        [QRDMA_QPS_SQD] = {
            .valid = true,
            .opt = {
                QPT_UD_GSI(QRDMA_QP_ATTR_PKEY_INDEX | QRDMA_QP_ATTR_QKEY,
                           QRDMA_QP_ATTR_PKEY_INDEX | QRDMA_QP_ATTR_QKEY),
                [QRDMA_QPT_UC] = QRDMA_QP_ATTR_AV | QRDMA_QP_ATTR_ALT_PATH |
                                 QRDMA_QP_ATTR_ACCESS_FLAGS |
                                 QRDMA_QP_ATTR_PKEY_INDEX |
                                 QRDMA_QP_ATTR_PATH_MIG_STATE,
                [QRDMA_QPT_RC] = QRDMA_QP_ATTR_PORT | QRDMA_QP_ATTR_AV |
                                 QRDMA_QP_ATTR_TIMEOUT |
                                 QRDMA_QP_ATTR_RETRY_CNT |
                                 QRDMA_QP_ATTR_RNR_RETRY |
                                 QRDMA_QP_ATTR_MAX_QP_RD_ATOMIC |
                                 QRDMA_QP_ATTR_MAX_DEST_RD_ATOMIC |
                                 QRDMA_QP_ATTR_ALT_PATH |
                                 QRDMA_QP_ATTR_ACCESS_FLAGS |
                                 QRDMA_QP_ATTR_PKEY_INDEX |
                                 QRDMA_QP_ATTR_MIN_RNR_TIMER |
                                 QRDMA_QP_ATTR_PATH_MIG_STATE,
            },
        },
    },
    [QRDMA_QPS_SQE] = {
        [QRDMA_QPS_RESET] = { .valid = true },
        [QRDMA_QPS_ERR] = { .valid = true },
        [QRDMA_QPS_RTS] = {
            .valid = true,
            .opt = {
                QPT_UD_GSI(QRDMA_QP_ATTR_CUR_STATE | QRDMA_QP_ATTR_QKEY,
                           QRDMA_QP_ATTR_CUR_STATE | QRDMA_QP_ATTR_QKEY),
                [QRDMA_QPT_UC] = QRDMA_QP_ATTR_CUR_STATE |
                                 QRDMA_QP_ATTR_ACCESS_FLAGS,
            },
        },
    },
    [QRDMA_QPS_ERR] = {
        [QRDMA_QPS_RESET] = { .valid = true },
        [QRDMA_QPS_ERR] = { .valid = true },
    },
};

static const char *const qrdma_qps_names[QRDMA_NUM_QPS] = {
    "RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR",
};

uint8_t qrdma_get_qp(QrdmaCore *core, uint32_t uctx, uint32_t qpn, int *idx)
{
    *idx = qrdma_table_lookup(&core->qp_table, qpn);
    if (*idx < 0) {
        return qrdma_no_handle(core, "qp", qpn);
    }
    return qrdma_check_owner(core, "qp", qpn, core->qp[*idx].uctx, uctx);
}

static void qrdma_qp_put_refs(QrdmaCore *core, QrdmaQp *qp)
{
    int idx;

    qrdma_pd_unref(core, qp->pd);
    idx = qrdma_table_lookup(&core->cq_table, qp->send_cq);
    if (idx >= 0) {
        core->cq[idx].refs--;
    }
    idx = qrdma_table_lookup(&core->cq_table, qp->recv_cq);
    if (idx >= 0) {
        core->cq[idx].refs--;
    }
    idx = qrdma_table_lookup(&core->srq_table, qp->srq);
    if (idx >= 0) {
        core->srq[idx].refs--;
    }
    qrdma_uctx_ref(core, qp->uctx, -1);
}

/* S2: the caps asked for fit the device and the rings the driver made. */
static uint8_t qrdma_qp_check_caps(QrdmaCore *core,
                                   const struct qrdma_cmd_create_qp *c,
                                   bool has_srq)
{
    uint32_t max_wr = core->limits.max_qp_wr;
    uint32_t max_inline = le32_to_cpu(c->max_inline_data);
    uint8_t st;

    if (max_inline > QRDMA_MAX_INLINE) {
        QRDMA_GUEST_ERR(core, qrdma_err_cmd_qp_inline,
                        "%" PRIu32 " bytes of inline " "data, limit %d",
                        max_inline, QRDMA_MAX_INLINE);
        return QRDMA_STATUS_BAD_PARAM;
    }
    st = qrdma_check_wq(core, "send", le32_to_cpu(c->max_send_wr), max_wr,
                        le32_to_cpu(c->max_send_sge), QRDMA_MAX_SEND_SGE,
                        c->sq_log2, le32_to_cpu(c->sq_npages),
                        QRDMA_SQ_WQE_SIZE);
    if (st) {
        return st;
    }

    /* S4: with an SRQ the receive caps are ignored. */
    if (has_srq) {
        if (c->rq_log2 || c->rq_npages || c->rq_pages_addr) {
            QRDMA_GUEST_ERR(core, qrdma_err_cmd_qp_rq_with_srq,
                            "a receive ring of 2^%u" " on %" PRIu32
                            " pages with an SRQ", c->rq_log2,
                            le32_to_cpu(c->rq_npages));
            return QRDMA_STATUS_BAD_PARAM;
        }
        return QRDMA_STATUS_OK;
    }
    return qrdma_check_wq(core, "receive", le32_to_cpu(c->max_recv_wr), max_wr,
                          le32_to_cpu(c->max_recv_sge), QRDMA_MAX_RECV_SGE,
                          c->rq_log2, le32_to_cpu(c->rq_npages),
                          QRDMA_RQ_WQE_SIZE);
}

/* The type and flags of a new QP, before any handle it names. */
static uint8_t qrdma_qp_check_type(QrdmaCore *core, uint32_t uctx,
                                   const struct qrdma_cmd_create_qp *c,
                                   bool has_srq)
{
    switch (c->qp_type) {
    case QRDMA_QPT_RC:
    case QRDMA_QPT_UC:
    case QRDMA_QPT_UD:
    case QRDMA_QPT_GSI:
        break;
    default:
        QRDMA_GUEST_ERR(core, qrdma_err_cmd_qp_type, "QP type %u", c->qp_type);
        return QRDMA_STATUS_NOT_SUPPORTED;
    }
    if (c->flags & ~QRDMA_QP_F_SQ_SIG_ALL) {
        QRDMA_GUEST_ERR(core, qrdma_err_cmd_qp_flags,
                        "unknown flags 0x%x", c->flags);
        return QRDMA_STATUS_BAD_PARAM;
    }
    /* S3: only RC and UD QPs take an SRQ. */
    if (has_srq && c->qp_type != QRDMA_QPT_RC && c->qp_type != QRDMA_QPT_UD) {
        QRDMA_GUEST_ERR(core, qrdma_err_cmd_qp_srq_type,
                        "QP type %u cannot use an SRQ", c->qp_type);
        return QRDMA_STATUS_BAD_PARAM;
    }
    if (c->qp_type == QRDMA_QPT_GSI) {
        uint8_t st = qrdma_check_kernel(core, uctx);

        if (st) {
            return st;
        }
        if (core->qp_table.busy[0]) {
            QRDMA_GUEST_ERR(core, qrdma_err_cmd_qp_gsi_exists,
                            "QP 0x%x exists already", QRDMA_GSI_QPN);
            return QRDMA_STATUS_BUSY;
        }
    }
    return QRDMA_STATUS_OK;
}

/* The objects a new QP names: their slots, each looked up and owned. */
typedef struct QrdmaQpRefs {
    int pd;
    int send_cq;
    int recv_cq;
    int srq;                            /* -1: none */
} QrdmaQpRefs;

static uint8_t qrdma_qp_get_refs(QrdmaCore *core, uint32_t uctx,
                                 const struct qrdma_cmd_create_qp *c,
                                 bool has_srq, QrdmaQpRefs *r)
{
    uint8_t st;

    r->srq = -1;
    st = qrdma_get_pd(core, uctx, le32_to_cpu(c->pd), &r->pd);
    if (st) {
        return st;
    }
    st = qrdma_get_cq(core, uctx, le32_to_cpu(c->send_cq), &r->send_cq);
    if (st) {
        return st;
    }
    st = qrdma_get_cq(core, uctx, le32_to_cpu(c->recv_cq), &r->recv_cq);
    if (st || !has_srq) {
        return st;
    }
    return qrdma_get_srq(core, uctx, le32_to_cpu(c->srq), &r->srq);
}

/* The send ring and, without an SRQ, the receive ring of a new QP. */
static uint8_t qrdma_qp_read_rings(QrdmaCore *core,
                                   const struct qrdma_cmd_create_qp *c,
                                   bool has_srq, QrdmaPages *sq,
                                   QrdmaPages *rq)
{
    uint8_t st;

    st = qrdma_pages_read(core, core->cmdq.cur_name,
                          le64_to_cpu(c->sq_pages_addr),
                          le32_to_cpu(c->sq_npages),
                          le32_to_cpu(c->sq_npages), QRDMA_PAGE_SHIFT, true,
                          sq);
    if (st || has_srq) {
        return st;
    }
    st = qrdma_pages_read(core, core->cmdq.cur_name,
                          le64_to_cpu(c->rq_pages_addr),
                          le32_to_cpu(c->rq_npages),
                          le32_to_cpu(c->rq_npages), QRDMA_PAGE_SHIFT,
                          true, rq);
    if (st) {
        qrdma_pages_free(sq);
    }
    return st;
}

/* The slot of a new QP: the GSI QP has slot 0, reserved for it. */
static int qrdma_qp_slot_alloc(QrdmaCore *core, uint8_t type)
{
    if (type == QRDMA_QPT_GSI) {
        qrdma_table_alloc_reserved(&core->qp_table, 0);
        return 0;
    }
    return qrdma_slot_alloc(core, &core->qp_table);
}

void qrdma_qp_clear_attr(QrdmaQp *qp)
{
    memset(&qp->attr, 0, sizeof(qp->attr));
    qp->attr.port_num = 1;
}

void qrdma_qp_set_caps(QrdmaQp *qp)
{
    bool has_srq = qp->srq != QRDMA_HANDLE_NONE;

    /* The real caps: the whole rings, and all a fixed-size WQE holds. */
    memset(&qp->cap, 0, sizeof(qp->cap));
    qp->cap.max_send_wr = 1u << qp->sq_log2;
    qp->cap.max_send_sge = QRDMA_MAX_SEND_SGE;
    qp->cap.max_inline_data = QRDMA_MAX_INLINE;
    if (!has_srq) {
        qp->cap.max_recv_wr = 1u << qp->rq_log2;
        qp->cap.max_recv_sge = QRDMA_MAX_RECV_SGE;
    }
}

static void qrdma_qp_init(QrdmaCore *core, QrdmaQp *qp, uint32_t uctx,
                          const struct qrdma_cmd_create_qp *c,
                          const QrdmaQpRefs *r)
{
    bool has_srq = r->srq >= 0;

    qp->uctx = uctx;
    qp->pd = core->pd[r->pd].handle;
    qp->type = c->qp_type;
    qp->state = QRDMA_QPS_RESET;
    qp->sq_sig_all = c->flags & QRDMA_QP_F_SQ_SIG_ALL;
    qp->send_cq = core->cq[r->send_cq].handle;
    qp->recv_cq = core->cq[r->recv_cq].handle;
    qp->srq = has_srq ? core->srq[r->srq].handle : QRDMA_HANDLE_NONE;
    qp->sq_log2 = c->sq_log2;
    qp->rq_log2 = has_srq ? 0 : c->rq_log2;
    qrdma_qp_set_caps(qp);
    qp->attr.port_num = 1;

    core->pd[r->pd].refs++;
    core->cq[r->send_cq].refs++;
    core->cq[r->recv_cq].refs++;
    if (has_srq) {
        core->srq[r->srq].refs++;
    }
    qrdma_uctx_ref(core, uctx, 1);
}

uint8_t qrdma_qp_create(QrdmaCore *core, uint32_t uctx,
                        const struct qrdma_cmd *cmd, struct qrdma_cmpl *cmpl,
                        QrdmaQp **out)
{
    const struct qrdma_cmd_create_qp *c = &cmd->create_qp;
    struct qrdma_create_qp_resp *resp = (void *)cmpl->data;
    bool has_srq = le32_to_cpu(c->srq) != QRDMA_HANDLE_NONE;
    QrdmaPages sq = { }, rq = { };
    QrdmaQpRefs refs;
    QrdmaQp *qp;
    uint8_t st;
    int idx;

    st = qrdma_qp_check_type(core, uctx, c, has_srq);
    if (st) {
        return st;
    }
    st = qrdma_qp_get_refs(core, uctx, c, has_srq, &refs);
    if (st) {
        return st;
    }
    st = qrdma_qp_check_caps(core, c, has_srq);
    if (st) {
        return st;
    }
    st = qrdma_qp_read_rings(core, c, has_srq, &sq, &rq);
    if (st) {
        return st;
    }
    idx = qrdma_qp_slot_alloc(core, c->qp_type);
    if (idx < 0) {
        qrdma_pages_free(&sq);
        qrdma_pages_free(&rq);
        return QRDMA_STATUS_NO_RESOURCES;
    }

    qp = &core->qp[idx];
    memset(qp, 0, sizeof(*qp));
    qp->qpn = qrdma_table_handle(&core->qp_table, idx);
    qp->sq = sq;
    qp->rq = rq;
    qrdma_qp_init(core, qp, uctx, c, &refs);
    trace_qrdma_qp_create(qp->qpn, qp->type, qp->cap.max_send_wr,
                          qp->cap.max_recv_wr);
    cmpl->handle = cpu_to_le32(qp->qpn);
    resp->max_send_wr = cpu_to_le32(qp->cap.max_send_wr);
    resp->max_recv_wr = cpu_to_le32(qp->cap.max_recv_wr);
    resp->max_send_sge = cpu_to_le32(qp->cap.max_send_sge);
    resp->max_recv_sge = cpu_to_le32(qp->cap.max_recv_sge);
    resp->max_inline_data = cpu_to_le32(qp->cap.max_inline_data);
    *out = qp;
    return QRDMA_STATUS_OK;
}

uint32_t qrdma_qp_bad_value(const struct qrdma_qp_attr *a, uint32_t mask)
{
    const struct {
        uint32_t attr;
        bool bad;
    } checks[] = {
        { QRDMA_QP_ATTR_PKEY_INDEX, le16_to_cpu(a->pkey_index) != 0 },
        { QRDMA_QP_ATTR_PORT, a->port_num != 1 },
        { QRDMA_QP_ATTR_ACCESS_FLAGS,
          le32_to_cpu(a->qp_access_flags) & ~QRDMA_ACCESS_VALID_MASK },
        { QRDMA_QP_ATTR_PATH_MTU, a->path_mtu < 1 || a->path_mtu > 5 },
        { QRDMA_QP_ATTR_TIMEOUT, a->timeout > 31 },
        { QRDMA_QP_ATTR_RETRY_CNT, a->retry_cnt > 7 },
        { QRDMA_QP_ATTR_RNR_RETRY, a->rnr_retry > 7 },
        { QRDMA_QP_ATTR_MIN_RNR_TIMER, a->min_rnr_timer > 31 },
        { QRDMA_QP_ATTR_RQ_PSN, le32_to_cpu(a->rq_psn) > 0xffffff },
        { QRDMA_QP_ATTR_SQ_PSN, le32_to_cpu(a->sq_psn) > 0xffffff },
        { QRDMA_QP_ATTR_DEST_QPN, le32_to_cpu(a->dest_qp_num) > 0xffffff },
        { QRDMA_QP_ATTR_MAX_QP_RD_ATOMIC,
          a->max_rd_atomic > QRDMA_MAX_RD_ATOMIC },
        { QRDMA_QP_ATTR_MAX_DEST_RD_ATOMIC,
          a->max_dest_rd_atomic > QRDMA_MAX_RD_ATOMIC },
        /* Without APM a path is only ever MIGRATED. */
        { QRDMA_QP_ATTR_PATH_MIG_STATE, a->path_mig_state != 0 },
        { QRDMA_QP_ATTR_EN_SQD_ASYNC_NOTIFY, a->en_sqd_async_notify > 1 },
    };
    size_t i;

    for (i = 0; i < ARRAY_SIZE(checks); i++) {
        if ((mask & checks[i].attr) && checks[i].bad) {
            return checks[i].attr;
        }
    }
    return 0;
}

/* The values of the attributes a modify sets, each checked. */
static uint8_t qrdma_qp_check_values(QrdmaCore *core, const QrdmaQp *qp,
                                     const struct qrdma_qp_attr *a,
                                     uint32_t mask)
{
    uint32_t bad = qrdma_qp_bad_value(a, mask);

    if (bad) {
        QRDMA_GUEST_ERR(core, qrdma_err_cmd_qp_attr_value,
                        "qp 0x%" PRIx32 ": value of" " attribute 0x%" PRIx32
                        " out of range", qp->qpn, bad);
        return QRDMA_STATUS_BAD_PARAM;
    }
    if (mask & QRDMA_QP_ATTR_ALT_PATH) {
        QRDMA_GUEST_ERR(core, qrdma_err_cmd_qp_alt_path, "qp 0x%" PRIx32 ": no "
                        "alternate paths (APM)", qp->qpn);
        return QRDMA_STATUS_NOT_SUPPORTED;
    }
    if (mask & QRDMA_QP_ATTR_AV) {
        return qrdma_check_av(core, &a->av);
    }
    return QRDMA_STATUS_OK;
}

static void qrdma_qp_apply(QrdmaQp *qp, const struct qrdma_qp_attr *a,
                           uint32_t mask)
{
    struct qrdma_qp_attr *s = &qp->attr;

    if (mask & QRDMA_QP_ATTR_EN_SQD_ASYNC_NOTIFY) {
        s->en_sqd_async_notify = a->en_sqd_async_notify;
    }
    if (mask & QRDMA_QP_ATTR_ACCESS_FLAGS) {
        s->qp_access_flags = a->qp_access_flags;
    }
    if (mask & QRDMA_QP_ATTR_PKEY_INDEX) {
        s->pkey_index = a->pkey_index;
    }
    if (mask & QRDMA_QP_ATTR_PORT) {
        s->port_num = a->port_num;
    }
    if (mask & QRDMA_QP_ATTR_QKEY) {
        s->qkey = a->qkey;
    }
    if (mask & QRDMA_QP_ATTR_AV) {
        s->av = a->av;
    }
    if (mask & QRDMA_QP_ATTR_PATH_MTU) {
        s->path_mtu = a->path_mtu;
    }
    if (mask & QRDMA_QP_ATTR_TIMEOUT) {
        s->timeout = a->timeout;
    }
    if (mask & QRDMA_QP_ATTR_RETRY_CNT) {
        s->retry_cnt = a->retry_cnt;
    }
    if (mask & QRDMA_QP_ATTR_RNR_RETRY) {
        s->rnr_retry = a->rnr_retry;
    }
    if (mask & QRDMA_QP_ATTR_RQ_PSN) {
        s->rq_psn = a->rq_psn;
    }
    if (mask & QRDMA_QP_ATTR_MAX_QP_RD_ATOMIC) {
        s->max_rd_atomic = a->max_rd_atomic;
    }
    if (mask & QRDMA_QP_ATTR_MIN_RNR_TIMER) {
        s->min_rnr_timer = a->min_rnr_timer;
    }
    if (mask & QRDMA_QP_ATTR_SQ_PSN) {
        s->sq_psn = a->sq_psn;
    }
    if (mask & QRDMA_QP_ATTR_MAX_DEST_RD_ATOMIC) {
        s->max_dest_rd_atomic = a->max_dest_rd_atomic;
    }
    if (mask & QRDMA_QP_ATTR_PATH_MIG_STATE) {
        s->path_mig_state = a->path_mig_state;
    }
    if (mask & QRDMA_QP_ATTR_DEST_QPN) {
        s->dest_qp_num = a->dest_qp_num;
    }
}

/* The state a modify moves qp to, and whether the table allows it. */
static uint8_t qrdma_qp_check_transition(QrdmaCore *core, const QrdmaQp *qp,
                                         const struct qrdma_qp_attr *a,
                                         uint32_t mask, uint8_t *next)
{
    uint8_t cur = qp->state;
    const QrdmaQpTransition *t;
    uint32_t req, allowed;

    if (mask & ~QRDMA_QP_ATTR_KNOWN) {
        QRDMA_GUEST_ERR(core, qrdma_err_cmd_qp_attr_unknown, "qp 0x%" PRIx32
                        ": unknown attributes 0x%" PRIx32, qp->qpn, mask);
        return QRDMA_STATUS_BAD_PARAM;
    }
    if ((mask & QRDMA_QP_ATTR_CUR_STATE) && a->cur_qp_state != cur) {
        QRDMA_GUEST_ERR(core, qrdma_err_cmd_qp_cur_state,
                        "qp 0x%" PRIx32 ": current " "state given as %u, is %u",
                        qp->qpn, a->cur_qp_state, cur);
        return QRDMA_STATUS_BAD_PARAM;
    }
    *next = mask & QRDMA_QP_ATTR_STATE ? a->qp_state : cur;
    if (*next >= QRDMA_NUM_QPS) {
        QRDMA_GUEST_ERR(core, qrdma_err_cmd_qp_bad_state,
                        "qp 0x%" PRIx32 ": no QP " "state %u", qp->qpn, *next);
        return QRDMA_STATUS_BAD_PARAM;
    }

    /* S40 */
    t = &qrdma_qp_table[cur][*next];
    if (!t->valid) {
        QRDMA_GUEST_ERR(core, qrdma_err_cmd_qp_transition,
                        "qp 0x%" PRIx32 ": no " "transition %s -> %s", qp->qpn,
                        qrdma_qps_names[cur], qrdma_qps_names[*next]);
        return QRDMA_STATUS_BAD_STATE;
    }
    req = t->req[qp->type];
    if ((mask & req) != req) {
        QRDMA_GUEST_ERR(core, qrdma_err_cmd_qp_attr_missing,
                        "qp 0x%" PRIx32 ": %s -> "
                        "%s lacks required attributes 0x%" PRIx32, qp->qpn,
                        qrdma_qps_names[cur], qrdma_qps_names[*next],
                        req & ~mask);
        return QRDMA_STATUS_BAD_PARAM;
    }
    allowed = req | t->opt[qp->type] | QRDMA_QP_ATTR_STATE;
    if (mask & ~allowed) {
        QRDMA_GUEST_ERR(core, qrdma_err_cmd_qp_attr_not_allowed,
                        "qp 0x%" PRIx32 ": %s "
                        "-> %s does not take attributes 0x%" PRIx32, qp->qpn,
                        qrdma_qps_names[cur], qrdma_qps_names[*next],
                        mask & ~allowed);
        return QRDMA_STATUS_BAD_PARAM;
    }
    return QRDMA_STATUS_OK;
}

uint8_t qrdma_qp_modify(QrdmaCore *core, uint32_t uctx,
                        const struct qrdma_cmd *cmd, QrdmaQp **out,
                        uint8_t *from)
{
    const struct qrdma_qp_attr *a = &cmd->modify_qp.attr;
    uint32_t mask = le32_to_cpu(a->attr_mask);
    uint8_t next, st;
    QrdmaQp *qp;
    int idx;

    st = qrdma_get_qp(core, uctx, le32_to_cpu(cmd->modify_qp.qpn), &idx);
    if (st) {
        return st;
    }
    qp = &core->qp[idx];
    st = qrdma_qp_check_transition(core, qp, a, mask, &next);
    if (st) {
        return st;
    }
    st = qrdma_qp_check_values(core, qp, a, mask);
    if (st) {
        return st;
    }

    /*
     * Checked in full: now change the QP.  A move to RESET clears the
     * attributes in qrdma_dp_qp_modified, once the QP's last ACK has gone
     * to the peer they name.
     */
    if (next != QRDMA_QPS_RESET) {
        qrdma_qp_apply(qp, a, mask);
    }
    trace_qrdma_qp_modify(qp->qpn, qrdma_qps_names[qp->state],
                          qrdma_qps_names[next], mask);
    *from = qp->state;
    qp->state = next;
    *out = qp;
    return QRDMA_STATUS_OK;
}

uint8_t qrdma_qp_query(QrdmaCore *core, uint32_t uctx, uint32_t qpn,
                       struct qrdma_query_qp_resp *resp)
{
    QrdmaQp *qp;
    uint8_t st;
    int idx;

    st = qrdma_get_qp(core, uctx, qpn, &idx);
    if (st) {
        return st;
    }
    qp = &core->qp[idx];
    memset(resp, 0, sizeof(*resp));
    resp->attr = qp->attr;
    resp->attr.attr_mask = 0;
    resp->attr.qp_state = qp->state;
    resp->attr.cur_qp_state = qp->state;
    resp->cap.max_send_wr = cpu_to_le32(qp->cap.max_send_wr);
    resp->cap.max_recv_wr = cpu_to_le32(qp->cap.max_recv_wr);
    resp->cap.max_send_sge = cpu_to_le32(qp->cap.max_send_sge);
    resp->cap.max_recv_sge = cpu_to_le32(qp->cap.max_recv_sge);
    resp->cap.max_inline_data = cpu_to_le32(qp->cap.max_inline_data);
    resp->qp_type = qp->type;
    resp->sq_sig_all = qp->sq_sig_all;
    return QRDMA_STATUS_OK;
}

uint8_t qrdma_qp_destroy_check(QrdmaCore *core, uint32_t uctx, uint32_t qpn,
                               QrdmaQp **out)
{
    QrdmaQp *qp;
    uint8_t st;
    int idx;

    st = qrdma_get_qp(core, uctx, qpn, &idx);
    if (st) {
        return st;
    }
    qp = &core->qp[idx];
    /* S13 */
    if (qp->mcast_attached) {
        QRDMA_GUEST_ERR(core, qrdma_err_cmd_qp_mcast_attached,
                        "qp 0x%" PRIx32 " is " "attached to %" PRIu32
                        " multicast groups", qpn, qp->mcast_attached);
        return QRDMA_STATUS_BUSY;
    }
    trace_qrdma_qp_destroy(qpn, qrdma_qps_names[qp->state]);
    *out = qp;
    return QRDMA_STATUS_OK;
}

void qrdma_qp_free(QrdmaCore *core, QrdmaQp *qp)
{
    /* A type 2 window is the QP's: it gives no access once the QP is gone. */
    qrdma_mw_unbind_all(core, -1, qp->qpn);
    qrdma_qp_put_refs(core, qp);
    qrdma_pages_free(&qp->sq);
    qrdma_pages_free(&qp->rq);
    qrdma_table_free(&core->qp_table, qp - core->qp);
}

/* The data path */

void qrdma_qp_cqe(QrdmaCore *core, QrdmaQp *qp, bool recv,
                  struct qrdma_cqe *cqe, bool solicited)
{
    /*
     * A completion the CQ cannot take (overrun): the QP can no longer
     * report its work, a catastrophic error of the QP.  It goes to ERR at
     * once; a flush would have nowhere to go.
     */
    if (!qrdma_cq_push(core, recv ? qp->recv_cq : qp->send_cq, cqe,
                       solicited) && !qp->fatal) {
        qp->fatal = true;
        qp->state = QRDMA_QPS_ERR;
        trace_qrdma_qp_error(qp->qpn, qp->state);
        if (qp->type == QRDMA_QPT_RC) {
            qrdma_link_revoke(core);
        }
        qrdma_event(core, QRDMA_EV_QP_FATAL, qp->qpn);
    }
}

void qrdma_qp_to_err(QrdmaCore *core, QrdmaQp *qp, bool sq_only)
{
    uint8_t from = qp->state;

    /*
     * SQE is a way down from RTS only: a QP already in ERR (a fatal one
     * whose completion was just lost, say) stays there, or a move SQE ->
     * RTS would revive it.
     */
    qp->state = sq_only && from != QRDMA_QPS_ERR ? QRDMA_QPS_SQE :
                QRDMA_QPS_ERR;
    trace_qrdma_qp_error(qp->qpn, qp->state);
    /* Its work flushed, the guest may reuse what the peer has yet to read. */
    if (qp->type == QRDMA_QPT_RC) {
        qrdma_link_revoke(core);
    }
    qrdma_dp_qp_modified(core, qp, from);
}
