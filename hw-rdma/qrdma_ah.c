/*
 * QEMU qrdma: emulated RDMA (RoCEv2) NIC, address handles
 *
 * Copyright (c) 2026 The qrdma developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qrdma.h"
#include "qrdma_pd.h"
#include "qrdma_ah.h"
#include "qrdma_err.h"
#include "trace.h"

uint8_t qrdma_get_ah(QrdmaCore *core, uint32_t uctx, uint32_t handle,
                     int *idx)
{
    *idx = qrdma_table_lookup(&core->ah_table, handle);
    if (*idx < 0) {
        return qrdma_no_handle(core, "ah", handle);
    }
    return qrdma_check_owner(core, "ah", handle, core->ah[*idx].uctx, uctx);
}

uint8_t qrdma_check_av(QrdmaCore *core, const struct qrdma_av *av)
{
    uint32_t flow_label = le32_to_cpu(av->flow_label);

    if (av->sgid_index >= QRDMA_GID_TABLE_LEN ||
        !core->gid[av->sgid_index].type) {
        QRDMA_GUEST_ERR(core, qrdma_err_cmd_av_sgid,
                        "source GID index %u is not set", av->sgid_index);
        return QRDMA_STATUS_BAD_PARAM;
    }
    if (flow_label > 0xfffff) {
        QRDMA_GUEST_ERR(core, qrdma_err_cmd_av_flow_label,
                        "flow label 0x%" PRIx32 " over 20 bits", flow_label);
        return QRDMA_STATUS_BAD_PARAM;
    }
    return QRDMA_STATUS_OK;
}

uint8_t qrdma_cmd_create_ah(QrdmaCore *core, uint32_t uctx,
                            const struct qrdma_cmd *cmd,
                            struct qrdma_cmpl *cmpl)
{
    QrdmaAh *ah;
    uint8_t st;
    int pd_idx, idx;

    st = qrdma_get_pd(core, uctx, le32_to_cpu(cmd->create_ah.pd), &pd_idx);
    if (st) {
        return st;
    }
    st = qrdma_check_av(core, &cmd->create_ah.av);
    if (st) {
        return st;
    }
    idx = qrdma_slot_alloc(core, &core->ah_table);
    if (idx < 0) {
        return QRDMA_STATUS_NO_RESOURCES;
    }
    ah = &core->ah[idx];
    ah->handle = qrdma_table_handle(&core->ah_table, idx);
    ah->uctx = uctx;
    ah->pd = core->pd[pd_idx].handle;
    ah->av = cmd->create_ah.av;
    core->pd[pd_idx].refs++;
    qrdma_uctx_ref(core, uctx, 1);
    cmpl->handle = cpu_to_le32(ah->handle);
    return QRDMA_STATUS_OK;
}

uint8_t qrdma_cmd_destroy_ah(QrdmaCore *core, uint32_t uctx,
                             const struct qrdma_cmd *cmd,
                             struct qrdma_cmpl *cmpl)
{
    uint8_t st;
    int idx;

    st = qrdma_get_ah(core, uctx, le32_to_cpu(cmd->destroy.handle), &idx);
    if (st) {
        return st;
    }
    qrdma_pd_unref(core, core->ah[idx].pd);
    qrdma_table_free(&core->ah_table, idx);
    qrdma_uctx_ref(core, uctx, -1);
    return QRDMA_STATUS_OK;
}

/* The port's GID an address vector sends from. */
const uint8_t *qrdma_av_sgid(QrdmaCore *core, const struct qrdma_av *av)
{
    /* The index was checked when the AV was set. */
    return core->gid[av->sgid_index < QRDMA_GID_TABLE_LEN ?
                     av->sgid_index : 0].gid;
}

void qrdma_av_pkt_path(QrdmaCore *core, const struct qrdma_av *av,
                       QrdmaPkt *pkt)
{
    memcpy(pkt->sgid, qrdma_av_sgid(core, av), 16);
    memcpy(pkt->dgid, av->dgid, 16);
    pkt->traffic_class = av->traffic_class;
    pkt->hop_limit = av->hop_limit;
    pkt->flow_label = le32_to_cpu(av->flow_label) & 0xfffff;
    memcpy(pkt->dmac, av->dmac, 6);
    pkt->vlan_id = le16_to_cpu(av->vlan_id);
}
