/*
 * QEMU qrdma: emulated RDMA (RoCEv2) NIC, multicast groups
 *
 * Copyright (c) 2026 The qrdma developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qrdma.h"
#include "qrdma_pd.h"
#include "qrdma_qp.h"
#include "qrdma_mcast.h"
#include "qrdma_pkt.h"
#include "qrdma_err.h"
#include "trace.h"

guint qrdma_gid_hash(gconstpointer gid)
{
    const uint8_t *g = gid;

    return ldl_he_p(g) * 0x9e3779b1u ^ ldl_he_p(g + 4) * 0x85ebca77u ^
           ldl_he_p(g + 8) * 0xc2b2ae3du ^ ldl_he_p(g + 12);
}

gboolean qrdma_gid_equal(gconstpointer a, gconstpointer b)
{
    return !memcmp(a, b, 16);
}

void qrdma_mcast_index(QrdmaCore *core, uint32_t idx)
{
    g_hash_table_insert(core->mcast_index, core->mcast[idx].gid,
                        GUINT_TO_POINTER(idx + 1));
}

static int qrdma_mcast_find(QrdmaCore *core, const uint8_t *gid)
{
    return GPOINTER_TO_UINT(g_hash_table_lookup(core->mcast_index, gid)) - 1;
}

QrdmaMcast *qrdma_mcast_group(QrdmaCore *core, const uint8_t *gid)
{
    int idx = qrdma_mcast_find(core, gid);

    return idx < 0 ? NULL : &core->mcast[idx];
}

static int qrdma_mcast_member(const QrdmaMcast *m, uint32_t qpn)
{
    uint32_t i;

    for (i = 0; i < m->nqp; i++) {
        if (m->qpn[i] == qpn) {
            return i;
        }
    }
    return -1;
}

uint8_t qrdma_cmd_attach_mcast(QrdmaCore *core, uint32_t uctx,
                               const struct qrdma_cmd *cmd,
                               struct qrdma_cmpl *cmpl)
{
    const struct qrdma_cmd_mcast *c = &cmd->mcast;
    uint32_t qpn = le32_to_cpu(c->qpn);
    QrdmaMcast *m;
    QrdmaQp *qp;
    uint8_t st;
    int qp_idx, idx;

    st = qrdma_get_qp(core, uctx, qpn, &qp_idx);
    if (st) {
        return st;
    }
    qp = &core->qp[qp_idx];
    if (qp->type != QRDMA_QPT_UD) {
        QRDMA_GUEST_ERR(core, qrdma_err_cmd_mcast_qp_type,
                        "qp 0x%" PRIx32 " of type %u" " is not UD", qpn,
                        qp->type);
        return QRDMA_STATUS_BAD_PARAM;
    }
    if (!qrdma_gid_is_mcast(c->gid)) {
        QRDMA_GUEST_ERR(core, qrdma_err_cmd_mcast_gid,
                        "qp 0x%" PRIx32 ": the GID is " "not a multicast GID",
                        qpn);
        return QRDMA_STATUS_BAD_PARAM;
    }
    idx = qrdma_mcast_find(core, c->gid);
    if (idx >= 0 && qrdma_mcast_member(&core->mcast[idx], qpn) >= 0) {
        return QRDMA_STATUS_OK;
    }
    if (idx < 0) {
        idx = qrdma_slot_alloc(core, &core->mcast_table);
        if (idx < 0) {
            return QRDMA_STATUS_NO_RESOURCES;
        }
        memcpy(core->mcast[idx].gid, c->gid, sizeof(c->gid));
        core->mcast[idx].nqp = 0;
        qrdma_mcast_index(core, idx);
    }
    m = &core->mcast[idx];
    if (m->nqp >= core->limits.max_mcast_qp_attach) {
        QRDMA_GUEST_ERR(core, qrdma_err_cmd_mcast_full,
                        "qp 0x%" PRIx32 ": multicast " "group full (%" PRIu32
                        " QPs)", qpn, m->nqp);
        return QRDMA_STATUS_NO_RESOURCES;
    }
    m->qpn[m->nqp++] = qpn;
    qp->mcast_attached++;
    return QRDMA_STATUS_OK;
}

uint8_t qrdma_cmd_detach_mcast(QrdmaCore *core, uint32_t uctx,
                               const struct qrdma_cmd *cmd,
                               struct qrdma_cmpl *cmpl)
{
    const struct qrdma_cmd_mcast *c = &cmd->mcast;
    uint32_t qpn = le32_to_cpu(c->qpn);
    QrdmaMcast *m;
    uint8_t st;
    int qp_idx, idx, member;

    st = qrdma_get_qp(core, uctx, qpn, &qp_idx);
    if (st) {
        return st;
    }
    idx = qrdma_mcast_find(core, c->gid);
    member = idx < 0 ? -1 : qrdma_mcast_member(&core->mcast[idx], qpn);
    if (member < 0) {
        QRDMA_GUEST_ERR(core, qrdma_err_cmd_mcast_not_attached, "qp 0x%" PRIx32
                        " is not attached to the group", qpn);
        return QRDMA_STATUS_BAD_PARAM;
    }
    m = &core->mcast[idx];
    m->qpn[member] = m->qpn[--m->nqp];
    core->qp[qp_idx].mcast_attached--;
    if (!m->nqp) {
        g_hash_table_remove(core->mcast_index, m->gid);
        qrdma_table_free(&core->mcast_table, idx);
    }
    return QRDMA_STATUS_OK;
}
