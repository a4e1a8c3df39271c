/*
 * QEMU qrdma: emulated RDMA (RoCEv2) NIC, completion queues
 *
 * Copyright (c) 2026 The qrdma developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/atomic.h"
#include "qrdma.h"
#include "qrdma_pd.h"
#include "qrdma_cq.h"
#include "qrdma_err.h"
#include "trace.h"

QrdmaCq *qrdma_cq_of(QrdmaCore *core, uint32_t cqn)
{
    int idx = qrdma_table_lookup(&core->cq_table, cqn);

    return idx < 0 ? NULL : &core->cq[idx];
}

static bool qrdma_cq_full(QrdmaCore *core, QrdmaCq *cq)
{
    uint32_t size = 1u << cq->log2;
    uint32_t ci;

    /* Without a consumer index word the device cannot see overruns. */
    if (!cq->ci_addr || cq->pi - cq->ci_seen < size) {
        return false;
    }
    /* Only now read the consumer index the consumer keeps in RAM. */
    if (!qrdma_dma_read(core, cq->ci_addr, &ci, sizeof(ci))) {
        return true;
    }
    ci = le32_to_cpu(ci);
    if (cq->pi - ci <= size) {
        cq->ci_seen = ci;
    }
    return cq->pi - cq->ci_seen >= size;
}

bool qrdma_cq_push(QrdmaCore *core, uint32_t cqn,
                          struct qrdma_cqe *cqe, bool solicited)
{
    QrdmaCq *cq = qrdma_cq_of(core, cqn);
    uint64_t addr;
    uint8_t phase;

    if (!cq || cq->overrun) {
        return false;
    }
    if (qrdma_cq_full(core, cq)) {
        trace_qrdma_cq_overrun(cqn);
        cq->overrun = true;
        qrdma_event(core, QRDMA_EV_CQ_ERR, cqn);
        return false;
    }
    addr = qrdma_ring_addr(&cq->ring, cq->pi, cq->log2, QRDMA_CQE_SIZE);
    phase = !((cq->pi >> cq->log2) & 1);

    /* A CQ that did not ask for the VLAN has the P_Key index there. */
    if ((cqe->flags & QRDMA_CQE_F_VLAN) && !cq->report_vlan) {
        cqe->flags &= ~QRDMA_CQE_F_VLAN;
        cqe->pkey_index = 0;
    }

    cqe->flags &= ~QRDMA_CQE_F_PHASE;
    cqe->flags |= phase ? QRDMA_CQE_F_PHASE : 0;
    /*
     * The ring was RAM when the CQ was created; the guest may have changed
     * its memory map since.  A ring that is no longer RAM is an overrun
     * of a kind: the CQ takes nothing more.
     */
    if (!qrdma_dma_publish(core, addr, cqe, sizeof(*cqe),
                           offsetof(struct qrdma_cqe, flags))) {
        QRDMA_GUEST_ERR(core, qrdma_err_cq_ring_gone,
                        "CQ 0x%" PRIx32 ": entry at 0x%" PRIx64
                        " is no longer RAM", cqn, addr);
        cq->overrun = true;
        qrdma_event(core, QRDMA_EV_CQ_ERR, cqn);
        return false;
    }
    cq->pi++;

    if ((cq->armed & QRDMA_DB_CQ_ARM_NEXT) ||
        ((cq->armed & QRDMA_DB_CQ_ARM_SOLICITED) &&
         (solicited || cqe->status != QRDMA_WC_SUCCESS))) {
        cq->armed = 0;
        qrdma_eq_post(core, cq->eq, QRDMA_EV_COMPLETION, cqn);
    }
    return true;
}

uint8_t qrdma_get_cq(QrdmaCore *core, uint32_t uctx, uint32_t handle,
                     int *idx)
{
    *idx = qrdma_table_lookup(&core->cq_table, handle);
    if (*idx < 0) {
        return qrdma_no_handle(core, "cq", handle);
    }
    return qrdma_check_owner(core, "cq", handle, core->cq[*idx].uctx, uctx);
}

static uint8_t qrdma_cq_ring(QrdmaCore *core, const struct qrdma_cmd_cq *c,
                             uint32_t *log2, QrdmaPages *ring)
{
    uint32_t npages = le32_to_cpu(c->npages);

    *log2 = le32_to_cpu(c->log2_entries);
    if ((1ull << MIN(*log2, 63)) > core->limits.max_cqe) {
        QRDMA_GUEST_ERR(core, qrdma_err_cmd_cq_size,
                        "2^%" PRIu32 " CQEs, limit %" PRIu32, *log2,
                        core->limits.max_cqe);
        return QRDMA_STATUS_BAD_PARAM;
    }
    if (npages != qrdma_ring_pages(*log2, QRDMA_CQE_SIZE)) {
        QRDMA_GUEST_ERR(core, qrdma_err_cmd_cq_ring_pages,
                        "CQ ring of 2^%" PRIu32 " entries on %" PRIu32 " pages",
                        *log2, npages);
        return QRDMA_STATUS_BAD_PARAM;
    }
    return qrdma_pages_read(core, core->cmdq.cur_name,
                            le64_to_cpu(c->pages_addr), npages, npages,
                            QRDMA_PAGE_SHIFT, true, ring);
}

uint8_t qrdma_cmd_create_cq(QrdmaCore *core, uint32_t uctx,
                            const struct qrdma_cmd *cmd,
                            struct qrdma_cmpl *cmpl)
{
    uint32_t eq = le32_to_cpu(cmd->cq.eq);
    uint32_t flags = le32_to_cpu(cmd->cq.flags);
    uint64_t ci_addr = le64_to_cpu(cmd->cq.ci_addr);
    QrdmaPages ring = { };
    uint32_t log2;
    QrdmaCq *cq;
    uint8_t st;
    int idx;

    if (flags & ~QRDMA_CQ_F_ALL) {
        QRDMA_GUEST_ERR(core, qrdma_err_cmd_cq_flags,
                        "CQ flags 0x%" PRIx32, flags);
        return QRDMA_STATUS_BAD_PARAM;
    }
    if (eq >= core->msix_vectors) {
        QRDMA_GUEST_ERR(core, qrdma_err_cmd_cq_vector,
                        "completion vector %" PRIu32 " of %u", eq,
                        core->msix_vectors);
        return QRDMA_STATUS_BAD_PARAM;
    }
    if (ci_addr && (!QEMU_IS_ALIGNED(ci_addr, sizeof(uint32_t)) ||
                    !qrdma_dma_ok(core, ci_addr, sizeof(uint32_t), false))) {
        QRDMA_GUEST_ERR(core, qrdma_err_cmd_cq_ci_addr,
                        "consumer index word at 0x%" PRIx64
                        " is not aligned RAM", ci_addr);
        return QRDMA_STATUS_BAD_ADDR;
    }
    st = qrdma_cq_ring(core, &cmd->cq, &log2, &ring);
    if (st) {
        return st;
    }
    idx = qrdma_slot_alloc(core, &core->cq_table);
    if (idx < 0) {
        qrdma_pages_free(&ring);
        return QRDMA_STATUS_NO_RESOURCES;
    }
    cq = &core->cq[idx];
    cq->handle = qrdma_table_handle(&core->cq_table, idx);
    cq->uctx = uctx;
    cq->log2 = log2;
    cq->eq = eq;
    cq->refs = 0;
    cq->ring = ring;
    cq->pi = 0;
    cq->ci_seen = 0;
    cq->ci_addr = ci_addr;
    cq->armed = 0;
    cq->overrun = false;
    cq->report_vlan = flags & QRDMA_CQ_F_VLAN;
    qrdma_uctx_ref(core, uctx, 1);
    cmpl->handle = cpu_to_le32(cq->handle);
    cmpl->data[0] = cpu_to_le32(1u << log2);
    return QRDMA_STATUS_OK;
}

uint8_t qrdma_cmd_resize_cq(QrdmaCore *core, uint32_t uctx,
                            const struct qrdma_cmd *cmd,
                            struct qrdma_cmpl *cmpl)
{
    uint32_t ci = le32_to_cpu(cmd->cq.ci);
    QrdmaPages ring = { };
    uint32_t log2, n, i;
    QrdmaCq *cq;
    uint8_t st;
    int idx;

    st = qrdma_get_cq(core, uctx, le32_to_cpu(cmd->cq.cqn), &idx);
    if (st) {
        return st;
    }
    st = qrdma_cq_ring(core, &cmd->cq, &log2, &ring);
    if (st) {
        return st;
    }
    cq = &core->cq[idx];
    n = cq->pi - ci;
    if (n > (1u << cq->log2)) {
        qrdma_pages_free(&ring);
        QRDMA_GUEST_ERR(core, qrdma_err_cmd_cq_resize_ci, "cq 0x%" PRIx32
                        ": consumer index %" PRIu32 " with %" PRIu32
                        " CQEs written", cq->handle, ci, cq->pi);
        return QRDMA_STATUS_BAD_PARAM;
    }
    /*
     * A ring too small for what the consumer has not polled yet is a
     * request that cannot be met, not the guest's error: it cannot know
     * how many CQEs the device wrote meanwhile.
     */
    if (n > (1u << log2)) {
        qrdma_pages_free(&ring);
        trace_qrdma_cq_resize_too_small(cq->handle, n, log2);
        return QRDMA_STATUS_BAD_PARAM;
    }
    /* The unpolled CQEs move to the start of the new ring, in order. */
    for (i = 0; i < n; i++) {
        struct qrdma_cqe cqe;

        if (!qrdma_dma_read(core, qrdma_ring_addr(&cq->ring, ci + i,
                                                  cq->log2, QRDMA_CQE_SIZE),
                            &cqe, sizeof(cqe))) {
            break;
        }
        cqe.flags |= QRDMA_CQE_F_PHASE;
        qrdma_dma_write(core, qrdma_ring_addr(&ring, i, log2, QRDMA_CQE_SIZE),
                        &cqe, sizeof(cqe));
    }
    qrdma_pages_free(&cq->ring);
    cq->ring = ring;
    cq->log2 = log2;
    /* What could be moved is what the new ring holds. */
    cq->pi = i;
    cq->ci_seen = 0;
    cq->overrun = false;
    cmpl->data[0] = cpu_to_le32(1u << log2);
    return QRDMA_STATUS_OK;
}

uint8_t qrdma_cmd_destroy_cq(QrdmaCore *core, uint32_t uctx,
                             const struct qrdma_cmd *cmd,
                             struct qrdma_cmpl *cmpl)
{
    uint32_t handle = le32_to_cpu(cmd->destroy.handle);
    QrdmaCq *cq;
    uint8_t st;
    int idx;

    st = qrdma_get_cq(core, uctx, handle, &idx);
    if (st) {
        return st;
    }
    cq = &core->cq[idx];
    /* S20 */
    if (cq->refs) {
        QRDMA_GUEST_ERR(core, qrdma_err_cmd_cq_busy,
                        "cq 0x%" PRIx32 " is still used by" " %" PRIu32
                        " work queues", handle, cq->refs);
        return QRDMA_STATUS_BUSY;
    }
    qrdma_pages_free(&cq->ring);
    qrdma_table_free(&core->cq_table, idx);
    qrdma_uctx_ref(core, uctx, -1);
    return QRDMA_STATUS_OK;
}
