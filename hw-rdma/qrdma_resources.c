/*
 * QEMU qrdma: emulated RDMA (RoCEv2) NIC, the tables of its resources
 *
 * Copyright (c) 2026 The qrdma developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * One table per kind of object (user contexts, PDs, MRs, MWs, CQs, SRQs,
 * QPs, AHs, multicast groups), sized by the device's limits, and the
 * objects in it; the commands of each kind are in its own file, and what
 * migrates of them in qrdma_migration.c.
 */

#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qrdma.h"
#include "qrdma_mr.h"
#include "qrdma_mcast.h"
#include "qrdma_resources.h"

uint32_t qrdma_resources_in_use(QrdmaCore *core)
{
    return core->uctx_table.in_use + core->pd_table.in_use +
           core->mr_table.in_use + core->mw_table.in_use +
           core->cq_table.in_use +
           core->qp_table.in_use + core->srq_table.in_use +
           core->ah_table.in_use + core->mcast_table.in_use;
}

void qrdma_resources_init(QrdmaCore *core)
{
    const QrdmaLimits *l = &core->limits;
    uint32_t i;

    qrdma_table_init(&core->uctx_table, "uctx", l->max_uctx, 0);
    qrdma_table_init(&core->pd_table, "pd", l->max_pd, 0);
    qrdma_table_init(&core->mr_table, "mr", l->max_mr, 0);
    qrdma_table_init(&core->mw_table, "mw", l->max_mw, 0);
    qrdma_table_init(&core->cq_table, "cq", l->max_cq, 0);
    qrdma_table_init(&core->srq_table, "srq", l->max_srq, 0);
    /* Slot 0 is QP 1, the GSI QP; it is only ever created explicitly. */
    qrdma_table_init(&core->qp_table, "qp", l->max_qp + 1, 1);
    qrdma_table_init(&core->ah_table, "ah", l->max_ah, 0);
    qrdma_table_init(&core->mcast_table, "mcast", l->max_mcast_grp, 0);
    /* What a peer names on the wire: QPNs, and the rkeys of MRs and MWs. */
    core->qp_table.random = true;
    core->mr_table.random = true;
    core->mw_table.random = true;
    core->uctx = g_new0(QrdmaUctx, l->max_uctx);
    core->pd = g_new0(QrdmaPd, l->max_pd);
    core->mr = g_new0(QrdmaMr, l->max_mr);
    core->mw = g_new0(QrdmaMw, l->max_mw);
    core->cq = g_new0(QrdmaCq, l->max_cq);
    core->srq = g_new0(QrdmaSrq, l->max_srq);
    core->qp = g_new0(QrdmaQp, l->max_qp + 1);
    core->ah = g_new0(QrdmaAh, l->max_ah);
    core->mcast = g_new0(QrdmaMcast, l->max_mcast_grp);
    for (i = 0; i < l->max_mcast_grp; i++) {
        core->mcast[i].qpn = g_new0(uint32_t, l->max_mcast_qp_attach);
    }
    core->mcast_index = g_hash_table_new(qrdma_gid_hash, qrdma_gid_equal);
}

/* Free what every live resource holds, and mark all slots free. */
void qrdma_resources_reset(QrdmaCore *core)
{
    QrdmaTable *tables[] = {
        &core->uctx_table, &core->pd_table, &core->mr_table, &core->mw_table,
        &core->cq_table, &core->srq_table, &core->qp_table, &core->ah_table,
        &core->mcast_table,
    };
    uint32_t i;

    if (!core->qp) {
        return;
    }
    for (i = 0; i < core->mr_table.max; i++) {
        qrdma_pages_free(&core->mr[i].pages);
        core->mr[i].windows = 0;
    }
    core->mr_pages_in_use = 0;
    for (i = 0; i < core->mw_table.max; i++) {
        core->mw[i].bound = false;
    }
    for (i = 0; i < core->cq_table.max; i++) {
        qrdma_pages_free(&core->cq[i].ring);
    }
    for (i = 0; i < core->srq_table.max; i++) {
        qrdma_pages_free(&core->srq[i].ring);
    }
    for (i = 0; i < core->qp_table.max; i++) {
        qrdma_pages_free(&core->qp[i].sq);
        qrdma_pages_free(&core->qp[i].rq);
    }
    for (i = 0; i < ARRAY_SIZE(tables); i++) {
        qrdma_table_reset(tables[i]);
    }
    g_hash_table_remove_all(core->mcast_index);
    memset(core->gid, 0, sizeof(core->gid));
    qrdma_fabric_gids_changed(&core->port);
    qrdma_link_revoke(core);
    qrdma_link_gids_changed(core);
}

void qrdma_resources_free(QrdmaCore *core)
{
    uint32_t i;

    qrdma_resources_reset(core);
    for (i = 0; i < core->mcast_table.max; i++) {
        g_free(core->mcast[i].qpn);
    }
    g_hash_table_destroy(core->mcast_index);
    qrdma_table_destroy(&core->uctx_table);
    qrdma_table_destroy(&core->pd_table);
    qrdma_table_destroy(&core->mr_table);
    qrdma_table_destroy(&core->mw_table);
    qrdma_table_destroy(&core->cq_table);
    qrdma_table_destroy(&core->srq_table);
    qrdma_table_destroy(&core->qp_table);
    qrdma_table_destroy(&core->ah_table);
    qrdma_table_destroy(&core->mcast_table);
    g_free(core->uctx);
    g_free(core->pd);
    g_free(core->mr);
    g_free(core->mw);
    g_free(core->cq);
    g_free(core->srq);
    g_free(core->qp);
    g_free(core->ah);
    g_free(core->mcast);
    core->qp = NULL;
}
