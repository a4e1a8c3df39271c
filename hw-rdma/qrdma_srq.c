/*
 * QEMU qrdma: emulated RDMA (RoCEv2) NIC, shared receive queues
 *
 * Copyright (c) 2026 The qrdma developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qrdma.h"
#include "qrdma_pd.h"
#include "qrdma_srq.h"
#include "qrdma_err.h"
#include "trace.h"

uint8_t qrdma_get_srq(QrdmaCore *core, uint32_t uctx, uint32_t handle,
                      int *idx)
{
    *idx = qrdma_table_lookup(&core->srq_table, handle);
    if (*idx < 0) {
        return qrdma_no_handle(core, "srq", handle);
    }
    return qrdma_check_owner(core, "srq", handle, core->srq[*idx].uctx, uctx);
}

uint8_t qrdma_check_wq(QrdmaCore *core, const char *queue, uint32_t max_wr,
                       uint32_t limit_wr, uint32_t max_sge,
                       uint32_t limit_sge, uint32_t log2, uint32_t npages,
                       uint32_t wqe_size)
{
    if (max_wr > limit_wr || max_sge > limit_sge) {
        QRDMA_GUEST_ERR(core, qrdma_err_cmd_wq_limits, "%s queue of %" PRIu32
                        " WRs of %" PRIu32 " SGEs is over the device limits",
                        queue, max_wr, max_sge);
        return QRDMA_STATUS_BAD_PARAM;
    }
    if (log2 > 31 || (1u << log2) < MAX(max_wr, 1) ||
        (1u << log2) > limit_wr) {
        QRDMA_GUEST_ERR(core, qrdma_err_cmd_wq_ring_size,
                        "%s ring of 2^%" PRIu32 " for %" PRIu32 " WRs", queue,
                        log2, max_wr);
        return QRDMA_STATUS_BAD_PARAM;
    }
    if (npages != qrdma_ring_pages(log2, wqe_size)) {
        QRDMA_GUEST_ERR(core, qrdma_err_cmd_wq_ring_pages,
                        "%s ring of 2^%" PRIu32 " on %" PRIu32 " pages", queue,
                        log2, npages);
        return QRDMA_STATUS_BAD_PARAM;
    }
    return QRDMA_STATUS_OK;
}

uint8_t qrdma_cmd_create_srq(QrdmaCore *core, uint32_t uctx,
                             const struct qrdma_cmd *cmd,
                             struct qrdma_cmpl *cmpl)
{
    const struct qrdma_cmd_srq *c = &cmd->srq;
    uint32_t max_wr = le32_to_cpu(c->max_wr);
    uint32_t max_sge = le32_to_cpu(c->max_sge);
    uint32_t log2 = le32_to_cpu(c->log2_entries);
    uint32_t npages = le32_to_cpu(c->npages);
    struct qrdma_srq_resp *resp = (struct qrdma_srq_resp *)cmpl->data;
    QrdmaPages ring = { };
    QrdmaSrq *srq;
    uint8_t st;
    int pd_idx, idx;

    st = qrdma_get_pd(core, uctx, le32_to_cpu(c->pd), &pd_idx);
    if (st) {
        return st;
    }
    st = qrdma_check_wq(core, "shared receive", max_wr,
                        core->limits.max_srq_wr, max_sge, QRDMA_MAX_RECV_SGE,
                        log2, npages, QRDMA_RQ_WQE_SIZE);
    if (st) {
        return st;
    }
    st = qrdma_pages_read(core, core->cmdq.cur_name,
                          le64_to_cpu(c->pages_addr), npages, npages,
                          QRDMA_PAGE_SHIFT, true, &ring);
    if (st) {
        return st;
    }
    idx = qrdma_slot_alloc(core, &core->srq_table);
    if (idx < 0) {
        qrdma_pages_free(&ring);
        return QRDMA_STATUS_NO_RESOURCES;
    }
    srq = &core->srq[idx];
    srq->handle = qrdma_table_handle(&core->srq_table, idx);
    srq->uctx = uctx;
    srq->pd = core->pd[pd_idx].handle;
    srq->log2 = log2;
    srq->max_wr = 1u << log2;
    srq->max_sge = QRDMA_MAX_RECV_SGE;
    /* ibv_create_srq ignores srq_limit; it is armed by MODIFY_SRQ. */
    srq->limit = 0;
    srq->refs = 0;
    srq->ring = ring;
    srq->pi = 0;
    srq->ci = 0;
    core->pd[pd_idx].refs++;
    qrdma_uctx_ref(core, uctx, 1);

    cmpl->handle = cpu_to_le32(srq->handle);
    resp->max_wr = cpu_to_le32(srq->max_wr);
    resp->max_sge = cpu_to_le32(srq->max_sge);
    resp->srq_limit = 0;
    return QRDMA_STATUS_OK;
}

/*
 * Move an SRQ onto the ring of 2^log2 entries in pages.  The WQEs posted
 * and not yet taken keep their free-running indices: each is copied to
 * slot (index mod 2^log2) of the new ring, so neither the consumer's nor
 * the device's producer and consumer indices change.
 */
static void qrdma_srq_move(QrdmaCore *core, QrdmaSrq *srq, QrdmaPages *pages,
                           uint32_t log2)
{
    struct qrdma_rq_wqe wqe;
    uint32_t i;

    for (i = srq->ci; i != srq->pi; i++) {
        if (!qrdma_dma_read(core, qrdma_ring_addr(&srq->ring, i, srq->log2,
                                                  QRDMA_RQ_WQE_SIZE),
                            &wqe, sizeof(wqe))) {
            /* Taking it would have failed too: let the new slot fail. */
            memset(&wqe, 0, sizeof(wqe));
            wqe.num_sge = cpu_to_le32(UINT32_MAX);
        }
        qrdma_dma_write(core, qrdma_ring_addr(pages, i, log2,
                                              QRDMA_RQ_WQE_SIZE),
                        &wqe, sizeof(wqe));
    }
    qrdma_pages_free(&srq->ring);
    srq->ring = *pages;
    srq->log2 = log2;
    srq->max_wr = 1u << log2;
}

uint8_t qrdma_cmd_modify_srq(QrdmaCore *core, uint32_t uctx,
                             const struct qrdma_cmd *cmd,
                             struct qrdma_cmpl *cmpl)
{
    const struct qrdma_cmd_srq *c = &cmd->srq;
    uint32_t mask = le32_to_cpu(c->attr_mask);
    uint32_t limit = le32_to_cpu(c->srq_limit);
    uint32_t log2 = le32_to_cpu(c->log2_entries);
    uint32_t npages = le32_to_cpu(c->npages);
    uint32_t max_wr, posted = 0;
    QrdmaPages ring = { };
    QrdmaSrq *srq;
    uint8_t st;
    int idx;

    st = qrdma_get_srq(core, uctx, le32_to_cpu(c->srqn), &idx);
    if (st) {
        return st;
    }
    srq = &core->srq[idx];
    if (mask & ~(QRDMA_SRQ_ATTR_MAX_WR | QRDMA_SRQ_ATTR_LIMIT)) {
        QRDMA_GUEST_ERR(core, qrdma_err_cmd_srq_attr_unknown, "srq 0x%" PRIx32
                        ": unknown attributes 0x%" PRIx32, srq->handle, mask);
        return QRDMA_STATUS_BAD_PARAM;
    }
    max_wr = srq->max_wr;
    if (mask & QRDMA_SRQ_ATTR_MAX_WR) {
        st = qrdma_check_wq(core, "shared receive", le32_to_cpu(c->max_wr),
                            core->limits.max_srq_wr, 0, QRDMA_MAX_RECV_SGE,
                            log2, npages, QRDMA_RQ_WQE_SIZE);
        if (st) {
            return st;
        }
        posted = srq->pi - srq->ci;
        if (posted > (1u << log2)) {
            QRDMA_GUEST_ERR(core, qrdma_err_cmd_srq_posted,
                            "srq 0x%" PRIx32 ": %" PRIu32
                            " WQEs posted do not fit a ring of 2^%" PRIu32,
                            srq->handle, posted, log2);
            return QRDMA_STATUS_BAD_PARAM;
        }
        max_wr = 1u << log2;
    }
    if (!(mask & QRDMA_SRQ_ATTR_LIMIT)) {
        limit = srq->limit;
    }
    if (limit >= max_wr) {
        QRDMA_GUEST_ERR(core, qrdma_err_cmd_srq_limit,
                        "srq 0x%" PRIx32 ": limit %" PRIu32 " not below %"
                        PRIu32, srq->handle, limit, max_wr);
        return QRDMA_STATUS_BAD_PARAM;
    }
    if (mask & QRDMA_SRQ_ATTR_MAX_WR) {
        st = qrdma_pages_read(core, core->cmdq.cur_name,
                              le64_to_cpu(c->pages_addr), npages,
                              npages, QRDMA_PAGE_SHIFT, true, &ring);
        if (st) {
            return st;
        }
        qrdma_srq_move(core, srq, &ring, log2);
        trace_qrdma_srq_resize(srq->handle, log2, posted);
    }
    srq->limit = limit;
    return QRDMA_STATUS_OK;
}

uint8_t qrdma_cmd_query_srq(QrdmaCore *core, uint32_t uctx,
                            const struct qrdma_cmd *cmd,
                            struct qrdma_cmpl *cmpl)
{
    struct qrdma_srq_resp *resp = (struct qrdma_srq_resp *)cmpl->data;
    QrdmaSrq *srq;
    uint8_t st;
    int idx;

    st = qrdma_get_srq(core, uctx, le32_to_cpu(cmd->query.index), &idx);
    if (st) {
        return st;
    }
    srq = &core->srq[idx];
    resp->max_wr = cpu_to_le32(srq->max_wr);
    resp->max_sge = cpu_to_le32(srq->max_sge);
    resp->srq_limit = cpu_to_le32(srq->limit);
    return QRDMA_STATUS_OK;
}

uint8_t qrdma_cmd_destroy_srq(QrdmaCore *core, uint32_t uctx,
                              const struct qrdma_cmd *cmd,
                              struct qrdma_cmpl *cmpl)
{
    uint32_t handle = le32_to_cpu(cmd->destroy.handle);
    QrdmaSrq *srq;
    uint8_t st;
    int idx;

    st = qrdma_get_srq(core, uctx, handle, &idx);
    if (st) {
        return st;
    }
    srq = &core->srq[idx];
    if (srq->refs) {
        QRDMA_GUEST_ERR(core, qrdma_err_cmd_srq_busy,
                        "srq 0x%" PRIx32 " is still used" " by %" PRIu32 " QPs",
                        handle, srq->refs);
        return QRDMA_STATUS_BUSY;
    }
    qrdma_pd_unref(core, srq->pd);
    qrdma_pages_free(&srq->ring);
    qrdma_table_free(&core->srq_table, idx);
    qrdma_uctx_ref(core, uctx, -1);
    return QRDMA_STATUS_OK;
}
