/*
 * QEMU qrdma: emulated RDMA (RoCEv2) NIC, user contexts, PDs and ownership
 *
 * Copyright (c) 2026 The qrdma developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qrdma.h"
#include "qrdma_pd.h"
#include "qrdma_err.h"
#include "trace.h"

int qrdma_slot_alloc(QrdmaCore *core, QrdmaTable *t)
{
    int idx = qrdma_table_alloc(t);

    if (idx < 0) {
        QRDMA_GUEST_ERR(core, qrdma_err_cmd_no_slot,
                        "all %" PRIu32 " %s slots in use", t->max - t->first,
                        t->name);
    }
    return idx;
}

uint8_t qrdma_no_handle(QrdmaCore *core, const char *kind, uint32_t handle)
{
    QRDMA_GUEST_ERR(core, qrdma_err_cmd_bad_handle,
                    "no %s 0x%" PRIx32, kind, handle);
    return QRDMA_STATUS_BAD_HANDLE;
}

uint8_t qrdma_check_owner(QrdmaCore *core, const char *kind, uint32_t handle,
                          uint32_t owner, uint32_t uctx)
{
    if (owner != uctx) {
        QRDMA_GUEST_ERR(core, qrdma_err_cmd_not_owner,
                        "%s 0x%" PRIx32 " belongs to " "context 0x%" PRIx32
                        ", not 0x%" PRIx32, kind, handle, owner, uctx);
        return QRDMA_STATUS_NOT_OWNER;
    }
    return QRDMA_STATUS_OK;
}

uint8_t qrdma_check_kernel(QrdmaCore *core, uint32_t uctx)
{
    if (uctx != QRDMA_UCTX_KERNEL) {
        QRDMA_GUEST_ERR(core, qrdma_err_cmd_kernel_only,
                        "%s: only the kernel may, " "not context 0x%" PRIx32,
                        core->cmdq.cur_name, uctx);
        return QRDMA_STATUS_NOT_OWNER;
    }
    return QRDMA_STATUS_OK;
}

uint8_t qrdma_get_pd(QrdmaCore *core, uint32_t uctx, uint32_t handle,
                     int *idx)
{
    *idx = qrdma_table_lookup(&core->pd_table, handle);
    if (*idx < 0) {
        return qrdma_no_handle(core, "pd", handle);
    }
    return qrdma_check_owner(core, "pd", handle, core->pd[*idx].uctx, uctx);
}

void qrdma_pd_unref(QrdmaCore *core, uint32_t pd)
{
    int idx = qrdma_table_lookup(&core->pd_table, pd);

    if (idx >= 0) {
        core->pd[idx].refs--;
    }
}

void qrdma_uctx_ref(QrdmaCore *core, uint32_t uctx, int delta)
{
    int idx;

    if (uctx == QRDMA_UCTX_KERNEL) {
        return;
    }
    idx = qrdma_table_lookup(&core->uctx_table, uctx);
    if (idx >= 0) {
        core->uctx[idx].refs += delta;
    }
}

uint8_t qrdma_cmd_create_uctx(QrdmaCore *core, uint32_t uctx,
                              const struct qrdma_cmd *cmd,
                              struct qrdma_cmpl *cmpl)
{
    QrdmaUctx *u;
    uint8_t st;
    int idx;

    st = qrdma_check_kernel(core, uctx);
    if (st) {
        return st;
    }
    idx = qrdma_slot_alloc(core, &core->uctx_table);
    if (idx < 0) {
        return QRDMA_STATUS_NO_RESOURCES;
    }
    u = &core->uctx[idx];
    u->handle = qrdma_table_handle(&core->uctx_table, idx);
    /* Page 0 of BAR2 is the kernel's. */
    u->db_page = idx + 1;
    u->refs = 0;
    cmpl->handle = cpu_to_le32(u->handle);
    cmpl->data[0] = cpu_to_le32(u->db_page);
    return QRDMA_STATUS_OK;
}

uint8_t qrdma_cmd_destroy_uctx(QrdmaCore *core, uint32_t uctx,
                               const struct qrdma_cmd *cmd,
                               struct qrdma_cmpl *cmpl)
{
    uint32_t handle = le32_to_cpu(cmd->destroy.handle);
    uint8_t st;
    int idx;

    st = qrdma_check_kernel(core, uctx);
    if (st) {
        return st;
    }
    idx = qrdma_table_lookup(&core->uctx_table, handle);
    if (idx < 0) {
        return qrdma_no_handle(core, "user context", handle);
    }
    if (core->uctx[idx].refs) {
        QRDMA_GUEST_ERR(core, qrdma_err_cmd_uctx_busy, "user context 0x%" PRIx32
                        " still owns %" PRIu32 " resources",
                        handle, core->uctx[idx].refs);
        return QRDMA_STATUS_BUSY;
    }
    qrdma_table_free(&core->uctx_table, idx);
    return QRDMA_STATUS_OK;
}

uint8_t qrdma_cmd_alloc_pd(QrdmaCore *core, uint32_t uctx,
                           const struct qrdma_cmd *cmd,
                           struct qrdma_cmpl *cmpl)
{
    QrdmaPd *pd;
    int idx = qrdma_slot_alloc(core, &core->pd_table);

    if (idx < 0) {
        return QRDMA_STATUS_NO_RESOURCES;
    }
    pd = &core->pd[idx];
    pd->handle = qrdma_table_handle(&core->pd_table, idx);
    pd->uctx = uctx;
    pd->refs = 0;
    qrdma_uctx_ref(core, uctx, 1);
    cmpl->handle = cpu_to_le32(pd->handle);
    return QRDMA_STATUS_OK;
}

uint8_t qrdma_cmd_dealloc_pd(QrdmaCore *core, uint32_t uctx,
                             const struct qrdma_cmd *cmd,
                             struct qrdma_cmpl *cmpl)
{
    uint32_t handle = le32_to_cpu(cmd->destroy.handle);
    uint8_t st;
    int idx;

    st = qrdma_get_pd(core, uctx, handle, &idx);
    if (st) {
        return st;
    }
    if (core->pd[idx].refs) {
        QRDMA_GUEST_ERR(core, qrdma_err_cmd_pd_busy,
                        "pd 0x%" PRIx32 " still holds %" PRIu32 " resources",
                        handle, core->pd[idx].refs);
        return QRDMA_STATUS_BUSY;
    }
    qrdma_table_free(&core->pd_table, idx);
    qrdma_uctx_ref(core, uctx, -1);
    return QRDMA_STATUS_OK;
}
