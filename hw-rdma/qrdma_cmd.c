/*
 * QEMU qrdma: emulated RDMA (RoCEv2) NIC, command queue and resources
 *
 * Copyright (c) 2026 The qrdma developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * Every command is copied out of guest memory once, then checked field by
 * field, then executed; a command that fails leaves the device as it was.
 */

#include "qemu/osdep.h"
#include "qemu/log.h"
#include "qemu/bitops.h"
#include "qemu/rcu.h"
#include "qapi/error.h"
#include "exec/memory.h"
#include "hw/pci/pci_device.h"
#include "migration/blocker.h"
#include "qrdma.h"
#include "qrdma_cmd.h"
#include "trace.h"

/* A free slot of t, or -1 after failing the command: all are in use. */
int qrdma_slot_alloc(QrdmaCore *core, QrdmaTable *t)
{
    int idx = qrdma_table_alloc(t);

    if (idx < 0) {
        qrdma_cmd_fail(core, QRDMA_STATUS_NO_RESOURCES,
                       "all %" PRIu32 " %s slots in use", t->max - t->first,
                       t->name);
    }
    return idx;
}

/*
 * S2 for one work queue: max_wr requests of max_sge SGEs fit the device
 * limits, and the ring the driver made (2^log2 entries of wqe_size bytes
 * on npages pages) holds them.
 */
uint8_t qrdma_check_wq(QrdmaCore *core, const char *what, uint32_t max_wr,
                       uint32_t limit_wr, uint32_t max_sge,
                       uint32_t limit_sge, uint32_t log2, uint32_t npages,
                       uint32_t wqe_size)
{
    if (max_wr > limit_wr || max_sge > limit_sge) {
        return qrdma_cmd_fail(core, QRDMA_STATUS_BAD_PARAM,
                              "%s queue of %" PRIu32 " WRs of %" PRIu32
                              " SGEs is over the device limits", what,
                              max_wr, max_sge);
    }
    if (log2 > 31 || (1u << log2) < MAX(max_wr, 1) ||
        (1u << log2) > limit_wr) {
        return qrdma_cmd_fail(core, QRDMA_STATUS_BAD_PARAM,
                              "%s ring of 2^%" PRIu32 " for %" PRIu32 " WRs",
                              what, log2, max_wr);
    }
    if (npages != qrdma_ring_pages(log2, wqe_size)) {
        return qrdma_cmd_fail(core, QRDMA_STATUS_BAD_PARAM,
                              "%s ring of 2^%" PRIu32 " on %" PRIu32 " pages",
                              what, log2, npages);
    }
    return QRDMA_STATUS_OK;
}

/* Write a command's answer to the buffer it named. */
uint8_t qrdma_reply(QrdmaCore *core, const struct qrdma_cmd_query *q,
                    const void *resp, size_t len)
{
    uint64_t addr = le64_to_cpu(q->resp_addr);
    uint32_t resp_len = le32_to_cpu(q->resp_len);

    if (resp_len < len) {
        return qrdma_cmd_fail(core, QRDMA_STATUS_BAD_PARAM,
                              "answer buffer of %" PRIu32 " bytes, %zu "
                              "needed", resp_len, len);
    }
    if (!qrdma_dma_write(core, addr, resp, len)) {
        return qrdma_cmd_fail(core, QRDMA_STATUS_BAD_ADDR,
                              "answer buffer at 0x%" PRIx64 " is not RAM",
                              addr);
    }
    return QRDMA_STATUS_OK;
}

/* Command failures: a status, a trace event and a guest error line. */
uint8_t qrdma_cmd_fail(QrdmaCore *core, uint8_t status, const char *fmt, ...)
{
    g_autofree char *msg = NULL;
    va_list ap;

    va_start(ap, fmt);
    msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    trace_qrdma_err_cmd(core->cmdq.cur_name, status, msg);
    qrdma_guest_error(core, "%s: %s (status %u)", core->cmdq.cur_name, msg,
                      status);
    return status;
}

/* Owned handles */

static uint8_t qrdma_check_owner(QrdmaCore *core, const char *what,
                                 uint32_t handle, uint32_t owner,
                                 uint32_t uctx)
{
    if (owner != uctx) {
        return qrdma_cmd_fail(core, QRDMA_STATUS_NOT_OWNER,
                              "%s 0x%" PRIx32 " belongs to context 0x%"
                              PRIx32 ", not 0x%" PRIx32,
                              what, handle, owner, uctx);
    }
    return QRDMA_STATUS_OK;
}

#define QRDMA_DEFINE_GET(kind, field, owner_field)                           \
uint8_t qrdma_get_##kind(QrdmaCore *core, uint32_t uctx, uint32_t handle,   \
                         int *idx)                                          \
{                                                                           \
    *idx = qrdma_table_lookup(&core->kind##_table, handle);                  \
    if (*idx < 0) {                                                         \
        return qrdma_cmd_fail(core, QRDMA_STATUS_BAD_HANDLE,                \
                              "no " #kind " 0x%" PRIx32, handle);           \
    }                                                                       \
    return qrdma_check_owner(core, #kind, handle,                           \
                             core->field[*idx].owner_field, uctx);          \
}

QRDMA_DEFINE_GET(pd, pd, uctx)
QRDMA_DEFINE_GET(mw, mw, uctx)
QRDMA_DEFINE_GET(cq, cq, uctx)
QRDMA_DEFINE_GET(srq, srq, uctx)
QRDMA_DEFINE_GET(ah, ah, uctx)

uint8_t qrdma_get_qp(QrdmaCore *core, uint32_t uctx, uint32_t qpn, int *idx)
{
    *idx = qrdma_table_lookup(&core->qp_table, qpn);
    if (*idx < 0) {
        return qrdma_cmd_fail(core, QRDMA_STATUS_BAD_HANDLE,
                              "no qp 0x%" PRIx32, qpn);
    }
    return qrdma_check_owner(core, "qp", qpn, core->qp[*idx].uctx, uctx);
}

static uint8_t qrdma_get_mr(QrdmaCore *core, uint32_t uctx, uint32_t lkey,
                            int *idx)
{
    uint32_t slot = lkey >> 8;

    *idx = slot - 1;
    if (!slot || slot > core->mr_table.max || !core->mr_table.busy[*idx] ||
        core->mr[*idx].lkey != lkey) {
        return qrdma_cmd_fail(core, QRDMA_STATUS_BAD_HANDLE,
                              "no mr with lkey 0x%" PRIx32, lkey);
    }
    return qrdma_check_owner(core, "mr", lkey, core->mr[*idx].uctx, uctx);
}

/* Drop the reference an MR, SRQ, AH or QP holds on its PD. */
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

/* Queries and the GID table */

/* The pages one MR may have: no more than all of them together. */
static uint32_t qrdma_max_mr_pages(QrdmaCore *core)
{
    return MIN(core->limits.max_mr_pages, core->limits.max_mr_pages_total);
}

static void qrdma_node_guid(QrdmaCore *core, uint8_t guid[8])
{
    const uint8_t *mac = core->eth.conf.macaddr.a;

    /* EUI-64 from the port's MAC, as RoCE NICs derive theirs. */
    guid[0] = mac[0] ^ 2;
    guid[1] = mac[1];
    guid[2] = mac[2];
    guid[3] = 0xff;
    guid[4] = 0xfe;
    guid[5] = mac[3];
    guid[6] = mac[4];
    guid[7] = mac[5];
}

static uint8_t qrdma_cmd_query_device(QrdmaCore *core, uint32_t uctx,
                                      const struct qrdma_cmd *cmd,
                                      struct qrdma_cmpl *cmpl)
{
    const QrdmaLimits *l = &core->limits;
    struct qrdma_device_attr a = { };
    uint8_t guid[8];

    qrdma_node_guid(core, guid);
    a.fw_ver = cpu_to_le64(QRDMA_VERSION);
    memcpy(&a.node_guid, guid, sizeof(guid));
    a.max_mr_size = cpu_to_le64((uint64_t)qrdma_max_mr_pages(core) <<
                                QRDMA_PAGE_SHIFT);
    /* MR pages of 4 KiB up to 1 GiB */
    a.page_size_cap = cpu_to_le64(MAKE_64BIT_MASK(QRDMA_PAGE_SHIFT,
                                                  31 - QRDMA_PAGE_SHIFT));
    a.vendor_id = cpu_to_le32(QRDMA_PCI_VENDOR_ID);
    a.vendor_part_id = cpu_to_le32(QRDMA_PCI_DEVICE_ID);
    a.hw_ver = cpu_to_le32(QRDMA_PCI_REVISION);
    a.max_qp = cpu_to_le32(l->max_qp);
    a.max_qp_wr = cpu_to_le32(l->max_qp_wr);
    a.max_send_sge = cpu_to_le32(QRDMA_MAX_SEND_SGE);
    a.max_recv_sge = cpu_to_le32(QRDMA_MAX_RECV_SGE);
    a.max_sge_rd = cpu_to_le32(QRDMA_MAX_SEND_SGE);
    a.max_cq = cpu_to_le32(l->max_cq);
    a.max_cqe = cpu_to_le32(l->max_cqe);
    a.max_mr = cpu_to_le32(l->max_mr);
    a.max_pd = cpu_to_le32(l->max_pd);
    a.max_qp_rd_atom = cpu_to_le32(QRDMA_MAX_RD_ATOMIC);
    a.max_qp_init_rd_atom = cpu_to_le32(QRDMA_MAX_RD_ATOMIC);
    a.max_srq = cpu_to_le32(l->max_srq);
    a.max_srq_wr = cpu_to_le32(l->max_srq_wr);
    a.max_srq_sge = cpu_to_le32(QRDMA_MAX_RECV_SGE);
    a.max_ah = cpu_to_le32(l->max_ah);
    a.max_mcast_grp = cpu_to_le32(l->max_mcast_grp);
    a.max_mcast_qp_attach = cpu_to_le32(l->max_mcast_qp_attach);
    a.max_uctx = cpu_to_le32(l->max_uctx);
    a.max_inline_data = cpu_to_le32(QRDMA_MAX_INLINE);
    a.max_fast_reg_page_list_len = cpu_to_le32(qrdma_max_mr_pages(core));
    a.max_mr_pages = cpu_to_le32(qrdma_max_mr_pages(core));
    a.max_mr_pages_total = cpu_to_le32(l->max_mr_pages_total);
    a.max_mw = cpu_to_le32(l->max_mw);
    /* Vector 0 carries commands and async events; the rest completions. */
    a.num_comp_vectors = cpu_to_le32(MAX(core->msix_vectors - 1, 1));
    a.max_pkeys = cpu_to_le32(1);
    a.local_ca_ack_delay = 15;
    a.atomic_cap = 1;
    a.device_caps = cpu_to_le32(QRDMA_DEV_CAP_SRQ_RESIZE |
                                QRDMA_DEV_CAP_ATOMIC_WRITE |
                                QRDMA_DEV_CAP_FLUSH_GLOBAL |
                                QRDMA_DEV_CAP_MW);
    return qrdma_reply(core, &cmd->query, &a, sizeof(a));
}

static uint8_t qrdma_cmd_query_port(QrdmaCore *core, uint32_t uctx,
                                    const struct qrdma_cmd *cmd,
                                    struct qrdma_cmpl *cmpl)
{
    struct qrdma_port_attr p = { };
    uint32_t port = le32_to_cpu(cmd->query.index);
    bool up = qrdma_eth_link_up(core);

    if (port != 1) {
        return qrdma_cmd_fail(core, QRDMA_STATUS_BAD_PARAM,
                              "no port %" PRIu32, port);
    }
    p.state = up ? QRDMA_PORT_ACTIVE : QRDMA_PORT_DOWN;
    p.phys_state = up ? 5 : 3;
    p.max_mtu = 5;                      /* 4096 */
    p.active_mtu = 3;                   /* 1024: fits a 1500-byte frame */
    p.gid_tbl_len = cpu_to_le32(QRDMA_GID_TABLE_LEN);
    p.max_msg_sz = cpu_to_le32(1u << 31);
    p.pkey_tbl_len = cpu_to_le16(1);
    p.active_speed = 32;                /* EDR */
    p.active_width = 2;                 /* 4X */
    memcpy(p.mac, core->eth.conf.macaddr.a, sizeof(p.mac));
    return qrdma_reply(core, &cmd->query, &p, sizeof(p));
}

static uint8_t qrdma_cmd_query_gid(QrdmaCore *core, uint32_t uctx,
                                   const struct qrdma_cmd *cmd,
                                   struct qrdma_cmpl *cmpl)
{
    uint32_t index = le32_to_cpu(cmd->query.index);

    if (index >= QRDMA_GID_TABLE_LEN) {
        return qrdma_cmd_fail(core, QRDMA_STATUS_BAD_PARAM,
                              "GID index %" PRIu32 " out of range", index);
    }
    return qrdma_reply(core, &cmd->query, &core->gid[index],
                       sizeof(core->gid[index]));
}

static uint8_t qrdma_cmd_set_gid(QrdmaCore *core, uint32_t uctx,
                                 const struct qrdma_cmd *cmd,
                                 struct qrdma_cmpl *cmpl)
{
    const struct qrdma_cmd_gid *g = &cmd->gid;
    uint32_t index = le32_to_cpu(g->index);
    struct qrdma_gid_entry *e;

    if (uctx != QRDMA_UCTX_KERNEL) {
        return qrdma_cmd_fail(core, QRDMA_STATUS_NOT_OWNER,
                              "only the kernel sets GIDs");
    }
    if (index >= QRDMA_GID_TABLE_LEN) {
        return qrdma_cmd_fail(core, QRDMA_STATUS_BAD_PARAM,
                              "GID index %" PRIu32 " out of range", index);
    }
    if (g->type != QRDMA_GID_TYPE_ROCE_V2) {
        return qrdma_cmd_fail(core, QRDMA_STATUS_BAD_PARAM,
                              "GID type %u is not RoCEv2", g->type);
    }
    e = &core->gid[index];
    memcpy(e->gid, g->gid, sizeof(e->gid));
    memcpy(e->mac, g->mac, sizeof(e->mac));
    e->vlan_id = g->vlan_id;
    e->type = g->type;
    trace_qrdma_gid_set(index);
    return QRDMA_STATUS_OK;
}

static uint8_t qrdma_cmd_del_gid(QrdmaCore *core, uint32_t uctx,
                                 const struct qrdma_cmd *cmd,
                                 struct qrdma_cmpl *cmpl)
{
    uint32_t index = le32_to_cpu(cmd->gid.index);

    if (uctx != QRDMA_UCTX_KERNEL) {
        return qrdma_cmd_fail(core, QRDMA_STATUS_NOT_OWNER,
                              "only the kernel deletes GIDs");
    }
    if (index >= QRDMA_GID_TABLE_LEN) {
        return qrdma_cmd_fail(core, QRDMA_STATUS_BAD_PARAM,
                              "GID index %" PRIu32 " out of range", index);
    }
    memset(&core->gid[index], 0, sizeof(core->gid[index]));
    trace_qrdma_gid_del(index);
    return QRDMA_STATUS_OK;
}

static uint8_t qrdma_cmd_query_stats(QrdmaCore *core, uint32_t uctx,
                                     const struct qrdma_cmd *cmd,
                                     struct qrdma_cmpl *cmpl)
{
    const QrdmaCounters *c = &core->counters;
    struct qrdma_stats s = {
        .cmds = cpu_to_le64(c->cmds),
        .cmd_errors = cpu_to_le64(c->cmd_errors),
        .guest_errors = cpu_to_le64(c->guest_errors),
        .eth_tx_frames = cpu_to_le64(c->eth_tx_frames),
        .eth_rx_frames = cpu_to_le64(c->eth_rx_frames),
        .eth_rx_dropped = cpu_to_le64(c->eth_rx_dropped),
        .eth_tx_dropped = cpu_to_le64(c->eth_tx_dropped),
        .uctx = cpu_to_le32(core->uctx_table.in_use),
        .pd = cpu_to_le32(core->pd_table.in_use),
        .mr = cpu_to_le32(core->mr_table.in_use),
        .cq = cpu_to_le32(core->cq_table.in_use),
        .qp = cpu_to_le32(core->qp_table.in_use),
        .srq = cpu_to_le32(core->srq_table.in_use),
        .ah = cpu_to_le32(core->ah_table.in_use),
        .mcast = cpu_to_le32(core->mcast_table.in_use),
        .mw = cpu_to_le32(core->mw_table.in_use),
    };

    return qrdma_reply(core, &cmd->query, &s, sizeof(s));
}

/* User contexts and PDs */

static uint8_t qrdma_cmd_create_uctx(QrdmaCore *core, uint32_t uctx,
                                     const struct qrdma_cmd *cmd,
                                     struct qrdma_cmpl *cmpl)
{
    QrdmaUctx *u;
    int idx;

    if (uctx != QRDMA_UCTX_KERNEL) {
        return qrdma_cmd_fail(core, QRDMA_STATUS_NOT_OWNER,
                              "only the kernel creates user contexts");
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

static uint8_t qrdma_cmd_destroy_uctx(QrdmaCore *core, uint32_t uctx,
                                      const struct qrdma_cmd *cmd,
                                      struct qrdma_cmpl *cmpl)
{
    uint32_t handle = le32_to_cpu(cmd->destroy.handle);
    int idx;

    if (uctx != QRDMA_UCTX_KERNEL) {
        return qrdma_cmd_fail(core, QRDMA_STATUS_NOT_OWNER,
                              "only the kernel destroys user contexts");
    }
    idx = qrdma_table_lookup(&core->uctx_table, handle);
    if (idx < 0) {
        return qrdma_cmd_fail(core, QRDMA_STATUS_BAD_HANDLE,
                              "no user context 0x%" PRIx32, handle);
    }
    if (core->uctx[idx].refs) {
        return qrdma_cmd_fail(core, QRDMA_STATUS_BUSY,
                              "user context 0x%" PRIx32 " still owns %"
                              PRIu32 " resources", handle,
                              core->uctx[idx].refs);
    }
    qrdma_table_free(&core->uctx_table, idx);
    return QRDMA_STATUS_OK;
}

static uint8_t qrdma_cmd_alloc_pd(QrdmaCore *core, uint32_t uctx,
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

static uint8_t qrdma_cmd_dealloc_pd(QrdmaCore *core, uint32_t uctx,
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
        return qrdma_cmd_fail(core, QRDMA_STATUS_BUSY,
                              "pd 0x%" PRIx32 " still holds %" PRIu32
                              " resources", handle, core->pd[idx].refs);
    }
    qrdma_table_free(&core->pd_table, idx);
    qrdma_uctx_ref(core, uctx, -1);
    return QRDMA_STATUS_OK;
}

/* Memory regions */

/*
 * Charge an MR's page list to the device's total, which bounds the host
 * memory the guest can make QEMU allocate for page lists: each MR may be
 * within max_mr_pages, and there are max_mr of them.
 */
static uint8_t qrdma_mr_pages_charge(QrdmaCore *core, uint32_t npages)
{
    if (core->mr_pages_in_use + npages > core->limits.max_mr_pages_total) {
        trace_qrdma_mr_pages_exhausted(core->mr_pages_in_use, npages,
                                       core->limits.max_mr_pages_total);
        return QRDMA_STATUS_NO_RESOURCES;
    }
    core->mr_pages_in_use += npages;
    return QRDMA_STATUS_OK;
}

static int qrdma_mr_alloc(QrdmaCore *core, uint32_t uctx, uint32_t pd_idx)
{
    int idx = qrdma_slot_alloc(core, &core->mr_table);
    QrdmaMr *mr;

    if (idx < 0) {
        return -1;
    }
    mr = &core->mr[idx];
    memset(mr, 0, sizeof(*mr));
    /* A new key byte each time, so an old lkey of a reused slot fails. */
    mr->lkey = ((uint32_t)(idx + 1) << 8) | core->mr_key++;
    mr->rkey = mr->lkey;
    mr->uctx = uctx;
    mr->pd = core->pd[pd_idx].handle;
    core->pd[pd_idx].refs++;
    qrdma_uctx_ref(core, uctx, 1);
    return idx;
}

static uint8_t qrdma_cmd_reg_mr(QrdmaCore *core, uint32_t uctx,
                                const struct qrdma_cmd *cmd,
                                struct qrdma_cmpl *cmpl)
{
    const struct qrdma_cmd_reg_mr *r = &cmd->reg_mr;
    uint32_t access = le32_to_cpu(r->access);
    uint64_t iova = le64_to_cpu(r->iova);
    uint64_t length = le64_to_cpu(r->length);
    uint32_t npages = le32_to_cpu(r->npages);
    bool dma = r->flags & QRDMA_MR_F_DMA;
    QrdmaPages pages = { };
    QrdmaMr *mr;
    uint8_t st;
    int pd_idx, idx;

    st = qrdma_get_pd(core, uctx, le32_to_cpu(r->pd), &pd_idx);
    if (st) {
        return st;
    }
    if (access & ~QRDMA_ACCESS_VALID_MASK) {
        return qrdma_cmd_fail(core, QRDMA_STATUS_BAD_PARAM,
                              "unknown access flags 0x%" PRIx32, access);
    }
    /* IB: remote write and atomic access need local write. */
    if ((access & (QRDMA_ACCESS_REMOTE_WRITE | QRDMA_ACCESS_REMOTE_ATOMIC)) &&
        !(access & QRDMA_ACCESS_LOCAL_WRITE)) {
        return qrdma_cmd_fail(core, QRDMA_STATUS_BAD_PARAM,
                              "remote write or atomic without local write");
    }
    if (r->flags & ~QRDMA_MR_F_DMA) {
        return qrdma_cmd_fail(core, QRDMA_STATUS_BAD_PARAM,
                              "unknown flags 0x%x", r->flags);
    }

    if (dma) {
        if (uctx != QRDMA_UCTX_KERNEL) {
            return qrdma_cmd_fail(core, QRDMA_STATUS_NOT_OWNER,
                                  "only the kernel registers DMA MRs");
        }
        iova = 0;
        length = UINT64_MAX;
    } else {
        unsigned shift = r->page_shift;
        uint64_t offset, need;

        if (shift < QRDMA_PAGE_SHIFT || shift > 30) {
            return qrdma_cmd_fail(core, QRDMA_STATUS_BAD_PARAM,
                                  "page shift %u out of range", shift);
        }
        if (!length || iova + length < iova ||
            length > (uint64_t)qrdma_max_mr_pages(core) << QRDMA_PAGE_SHIFT) {
            return qrdma_cmd_fail(core, QRDMA_STATUS_BAD_PARAM,
                                  "region 0x%" PRIx64 "+0x%" PRIx64
                                  " is empty, wraps or is over max_mr_size",
                                  iova, length);
        }
        offset = iova & ((1ull << shift) - 1);
        need = DIV_ROUND_UP(offset + length, 1ull << shift);
        if (need != npages) {
            return qrdma_cmd_fail(core, QRDMA_STATUS_BAD_PARAM,
                                  "region needs %" PRIu64 " pages, list has %"
                                  PRIu32, need, npages);
        }
        st = qrdma_mr_pages_charge(core, npages);
        if (st) {
            return st;
        }
        st = qrdma_pages_read(core, core->cmdq.cur_name,
                              le64_to_cpu(r->pages_addr), npages,
                              core->limits.max_mr_pages, shift, false,
                              &pages);
        if (st) {
            core->mr_pages_in_use -= npages;
            return st;
        }
    }

    idx = qrdma_mr_alloc(core, uctx, pd_idx);
    if (idx < 0) {
        core->mr_pages_in_use -= pages.n;
        qrdma_pages_free(&pages);
        return QRDMA_STATUS_NO_RESOURCES;
    }
    mr = &core->mr[idx];
    mr->charged = pages.n;
    mr->valid = true;
    mr->access = access;
    mr->dma = dma;
    mr->iova = iova;
    mr->length = length;
    /* A DMA MR has no pages: its page_shift field is not looked at. */
    mr->page_shift = dma ? QRDMA_PAGE_SHIFT : r->page_shift;
    mr->pages = pages;
    trace_qrdma_mr_reg(mr->lkey, iova, length, access);
    cmpl->handle = cpu_to_le32(mr->lkey);
    cmpl->data[0] = cpu_to_le32(mr->rkey);
    return QRDMA_STATUS_OK;
}

static uint8_t qrdma_cmd_alloc_mr(QrdmaCore *core, uint32_t uctx,
                                  const struct qrdma_cmd *cmd,
                                  struct qrdma_cmpl *cmpl)
{
    uint32_t max_pages = le32_to_cpu(cmd->alloc_mr.max_pages);
    QrdmaMr *mr;
    uint8_t st;
    int pd_idx, idx;

    st = qrdma_get_pd(core, uctx, le32_to_cpu(cmd->alloc_mr.pd), &pd_idx);
    if (st) {
        return st;
    }
    if (!max_pages || max_pages > qrdma_max_mr_pages(core)) {
        return qrdma_cmd_fail(core, QRDMA_STATUS_BAD_PARAM,
                              "%" PRIu32 " pages for fast registration, "
                              "limit %" PRIu32, max_pages,
                              qrdma_max_mr_pages(core));
    }
    /* Registration by work request must not fail for want of pages. */
    st = qrdma_mr_pages_charge(core, max_pages);
    if (st) {
        return st;
    }
    idx = qrdma_mr_alloc(core, uctx, pd_idx);
    if (idx < 0) {
        core->mr_pages_in_use -= max_pages;
        return QRDMA_STATUS_NO_RESOURCES;
    }
    mr = &core->mr[idx];
    mr->charged = max_pages;
    mr->fast_reg = true;
    mr->max_pages = max_pages;
    cmpl->handle = cpu_to_le32(mr->lkey);
    cmpl->data[0] = cpu_to_le32(mr->rkey);
    return QRDMA_STATUS_OK;
}

/* Unbind a window: it gives no access until it is bound again. */
void qrdma_mw_unbind(QrdmaCore *core, QrdmaMw *mw)
{
    if (mw->bound) {
        core->mr[mw->mr_idx].windows--;
        mw->bound = false;
        trace_qrdma_mw_unbind(mw->rkey);
    }
}

/*
 * Unbind the windows bound to the MR in slot mr_idx (before it changes or
 * goes), or, with mr_idx -1, the type 2 windows bound to QP qpn.
 */
void qrdma_mw_unbind_all(QrdmaCore *core, int mr_idx, uint32_t qpn)
{
    uint32_t i;

    if (mr_idx >= 0 && !core->mr[mr_idx].windows) {
        return;
    }
    for (i = 0; i < core->mw_table.max; i++) {
        QrdmaMw *mw = &core->mw[i];

        if (core->mw_table.busy[i] && mw->bound &&
            (mr_idx >= 0 ? mw->mr_idx == (uint32_t)mr_idx :
             mw->type == QRDMA_MW_TYPE_2 && mw->qpn == qpn)) {
            qrdma_mw_unbind(core, mw);
        }
    }
}

static void qrdma_mr_free(QrdmaCore *core, int idx)
{
    QrdmaMr *mr = &core->mr[idx];

    qrdma_mw_unbind_all(core, idx, 0);
    qrdma_pd_unref(core, mr->pd);
    qrdma_uctx_ref(core, mr->uctx, -1);
    qrdma_pages_free(&mr->pages);
    core->mr_pages_in_use -= mr->charged;
    qrdma_table_free(&core->mr_table, idx);
}

static uint8_t qrdma_cmd_dereg_mr(QrdmaCore *core, uint32_t uctx,
                                  const struct qrdma_cmd *cmd,
                                  struct qrdma_cmpl *cmpl)
{
    uint8_t st;
    int idx;

    st = qrdma_get_mr(core, uctx, le32_to_cpu(cmd->destroy.handle), &idx);
    if (st) {
        return st;
    }
    qrdma_mr_free(core, idx);
    return QRDMA_STATUS_OK;
}

/* Memory windows */

static uint8_t qrdma_cmd_alloc_mw(QrdmaCore *core, uint32_t uctx,
                                  const struct qrdma_cmd *cmd,
                                  struct qrdma_cmpl *cmpl)
{
    const struct qrdma_cmd_alloc_mw *a = &cmd->alloc_mw;
    QrdmaMw *mw;
    uint8_t st;
    int pd_idx, idx;

    st = qrdma_get_pd(core, uctx, le32_to_cpu(a->pd), &pd_idx);
    if (st) {
        return st;
    }
    if (a->type != QRDMA_MW_TYPE_1 && a->type != QRDMA_MW_TYPE_2) {
        return qrdma_cmd_fail(core, QRDMA_STATUS_BAD_PARAM,
                              "memory window type %u", a->type);
    }
    idx = qrdma_slot_alloc(core, &core->mw_table);
    if (idx < 0) {
        return QRDMA_STATUS_NO_RESOURCES;
    }
    mw = &core->mw[idx];
    memset(mw, 0, sizeof(*mw));
    mw->handle = qrdma_table_handle(&core->mw_table, idx);
    mw->uctx = uctx;
    mw->pd = core->pd[pd_idx].handle;
    mw->type = a->type;
    /* As for MRs: a new key byte, so an rkey of a reused slot fails. */
    mw->rkey = QRDMA_KEY_MW | ((uint32_t)(idx + 1) << 8) | core->mr_key++;
    core->pd[pd_idx].refs++;
    qrdma_uctx_ref(core, uctx, 1);
    trace_qrdma_mw_alloc(mw->handle, mw->type, mw->rkey);
    cmpl->handle = cpu_to_le32(mw->handle);
    cmpl->data[0] = cpu_to_le32(mw->rkey);
    return QRDMA_STATUS_OK;
}

static void qrdma_mw_free(QrdmaCore *core, int idx)
{
    QrdmaMw *mw = &core->mw[idx];

    qrdma_mw_unbind(core, mw);
    qrdma_pd_unref(core, mw->pd);
    qrdma_uctx_ref(core, mw->uctx, -1);
    qrdma_table_free(&core->mw_table, idx);
}

static uint8_t qrdma_cmd_dealloc_mw(QrdmaCore *core, uint32_t uctx,
                                    const struct qrdma_cmd *cmd,
                                    struct qrdma_cmpl *cmpl)
{
    uint8_t st;
    int idx;

    st = qrdma_get_mw(core, uctx, le32_to_cpu(cmd->destroy.handle), &idx);
    if (st) {
        return st;
    }
    qrdma_mw_free(core, idx);
    return QRDMA_STATUS_OK;
}

/* Completion queues */

static uint8_t qrdma_cq_ring(QrdmaCore *core, const struct qrdma_cmd_cq *c,
                             uint32_t *log2, QrdmaPages *ring)
{
    uint32_t npages = le32_to_cpu(c->npages);

    *log2 = le32_to_cpu(c->log2_entries);
    if ((1ull << MIN(*log2, 63)) > core->limits.max_cqe) {
        return qrdma_cmd_fail(core, QRDMA_STATUS_BAD_PARAM,
                              "2^%" PRIu32 " CQEs, limit %" PRIu32,
                              *log2, core->limits.max_cqe);
    }
    if (npages != qrdma_ring_pages(*log2, QRDMA_CQE_SIZE)) {
        return qrdma_cmd_fail(core, QRDMA_STATUS_BAD_PARAM,
                              "CQ ring of 2^%" PRIu32 " entries on %" PRIu32
                              " pages", *log2, npages);
    }
    return qrdma_pages_read(core, core->cmdq.cur_name,
                            le64_to_cpu(c->pages_addr), npages, npages,
                            QRDMA_PAGE_SHIFT, true, ring);
}

static uint8_t qrdma_cmd_create_cq(QrdmaCore *core, uint32_t uctx,
                                   const struct qrdma_cmd *cmd,
                                   struct qrdma_cmpl *cmpl)
{
    uint32_t eq = le32_to_cpu(cmd->cq.eq);
    uint64_t ci_addr = le64_to_cpu(cmd->cq.ci_addr);
    QrdmaPages ring = { };
    uint32_t log2;
    QrdmaCq *cq;
    uint8_t st;
    int idx;

    if (eq >= core->msix_vectors) {
        return qrdma_cmd_fail(core, QRDMA_STATUS_BAD_PARAM,
                              "completion vector %" PRIu32 " of %u", eq,
                              core->msix_vectors);
    }
    if (ci_addr && (!QEMU_IS_ALIGNED(ci_addr, sizeof(uint32_t)) ||
                    !qrdma_dma_ok(core, ci_addr, sizeof(uint32_t), false))) {
        return qrdma_cmd_fail(core, QRDMA_STATUS_BAD_ADDR,
                              "consumer index word at 0x%" PRIx64
                              " is not aligned RAM", ci_addr);
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
    qrdma_uctx_ref(core, uctx, 1);
    cmpl->handle = cpu_to_le32(cq->handle);
    cmpl->data[0] = cpu_to_le32(1u << log2);
    return QRDMA_STATUS_OK;
}

static uint8_t qrdma_cmd_resize_cq(QrdmaCore *core, uint32_t uctx,
                                   const struct qrdma_cmd *cmd,
                                   struct qrdma_cmpl *cmpl)
{
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
    n = cq->pi - le32_to_cpu(cmd->cq.ci);
    if (n > (1u << cq->log2) || n > (1u << log2)) {
        qrdma_pages_free(&ring);
        return qrdma_cmd_fail(core, QRDMA_STATUS_BAD_PARAM,
                              "%" PRIu32 " CQEs outstanding do not fit",
                              n);
    }
    /* The unpolled CQEs move to the start of the new ring, in order. */
    for (i = 0; i < n; i++) {
        struct qrdma_cqe cqe;

        if (!qrdma_dma_read(core, qrdma_ring_addr(&cq->ring,
                                                  le32_to_cpu(cmd->cq.ci) + i,
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

static uint8_t qrdma_cmd_destroy_cq(QrdmaCore *core, uint32_t uctx,
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
        return qrdma_cmd_fail(core, QRDMA_STATUS_BUSY,
                              "cq 0x%" PRIx32 " is still used by %" PRIu32
                              " work queues", handle, cq->refs);
    }
    qrdma_pages_free(&cq->ring);
    qrdma_table_free(&core->cq_table, idx);
    qrdma_uctx_ref(core, uctx, -1);
    return QRDMA_STATUS_OK;
}

/* Shared receive queues */

static uint8_t qrdma_cmd_create_srq(QrdmaCore *core, uint32_t uctx,
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

static uint8_t qrdma_cmd_modify_srq(QrdmaCore *core, uint32_t uctx,
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
        return qrdma_cmd_fail(core, QRDMA_STATUS_BAD_PARAM,
                              "unknown SRQ attributes 0x%" PRIx32, mask);
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
            return qrdma_cmd_fail(core, QRDMA_STATUS_BAD_PARAM,
                                  "%" PRIu32 " WQEs posted do not fit a "
                                  "ring of 2^%" PRIu32, posted, log2);
        }
        max_wr = 1u << log2;
    }
    if (!(mask & QRDMA_SRQ_ATTR_LIMIT)) {
        limit = srq->limit;
    }
    if (limit >= max_wr) {
        return qrdma_cmd_fail(core, QRDMA_STATUS_BAD_PARAM,
                              "SRQ limit %" PRIu32 " not below %" PRIu32,
                              limit, max_wr);
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

static uint8_t qrdma_cmd_query_srq(QrdmaCore *core, uint32_t uctx,
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

static uint8_t qrdma_cmd_destroy_srq(QrdmaCore *core, uint32_t uctx,
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
        return qrdma_cmd_fail(core, QRDMA_STATUS_BUSY,
                              "srq 0x%" PRIx32 " is still used by %" PRIu32
                              " QPs", handle, srq->refs);
    }
    qrdma_pd_unref(core, srq->pd);
    qrdma_pages_free(&srq->ring);
    qrdma_table_free(&core->srq_table, idx);
    qrdma_uctx_ref(core, uctx, -1);
    return QRDMA_STATUS_OK;
}

/* Address handles */

uint8_t qrdma_check_av(QrdmaCore *core, const struct qrdma_av *av)
{
    if (av->sgid_index >= QRDMA_GID_TABLE_LEN ||
        !core->gid[av->sgid_index].type) {
        return qrdma_cmd_fail(core, QRDMA_STATUS_BAD_PARAM,
                              "source GID index %u is not set",
                              av->sgid_index);
    }
    if (le32_to_cpu(av->flow_label) > 0xfffff) {
        return qrdma_cmd_fail(core, QRDMA_STATUS_BAD_PARAM,
                              "flow label 0x%" PRIx32 " over 20 bits",
                              le32_to_cpu(av->flow_label));
    }
    return QRDMA_STATUS_OK;
}

static uint8_t qrdma_cmd_create_ah(QrdmaCore *core, uint32_t uctx,
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

static uint8_t qrdma_cmd_destroy_ah(QrdmaCore *core, uint32_t uctx,
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

/* Multicast */

/* An IPv6 multicast GID, or for RoCEv2 an IPv4-mapped one (224.0.0.0/4). */
bool qrdma_gid_is_mcast(const uint8_t *gid)
{
    static const uint8_t v4_prefix[12] = { [10] = 0xff, [11] = 0xff };

    return gid[0] == 0xff ||
           (!memcmp(gid, v4_prefix, sizeof(v4_prefix)) &&
            (gid[12] & 0xf0) == 0xe0);
}

static int qrdma_mcast_find(QrdmaCore *core, const uint8_t *gid)
{
    uint32_t i;

    for (i = 0; i < core->mcast_table.max; i++) {
        if (core->mcast_table.busy[i] &&
            !memcmp(core->mcast[i].gid, gid, sizeof(core->mcast[i].gid))) {
            return i;
        }
    }
    return -1;
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

static uint8_t qrdma_cmd_attach_mcast(QrdmaCore *core, uint32_t uctx,
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
        return qrdma_cmd_fail(core, QRDMA_STATUS_BAD_PARAM,
                              "qp 0x%" PRIx32 " is not UD", qpn);
    }
    if (!qrdma_gid_is_mcast(c->gid)) {
        return qrdma_cmd_fail(core, QRDMA_STATUS_BAD_PARAM,
                              "GID is not a multicast GID");
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
    }
    m = &core->mcast[idx];
    if (m->nqp >= core->limits.max_mcast_qp_attach) {
        return qrdma_cmd_fail(core, QRDMA_STATUS_NO_RESOURCES,
                              "multicast group full (%" PRIu32 " QPs)",
                              m->nqp);
    }
    m->qpn[m->nqp++] = qpn;
    qp->mcast_attached++;
    return QRDMA_STATUS_OK;
}

static uint8_t qrdma_cmd_detach_mcast(QrdmaCore *core, uint32_t uctx,
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
        return qrdma_cmd_fail(core, QRDMA_STATUS_BAD_PARAM,
                              "qp 0x%" PRIx32 " is not attached to the "
                              "group", qpn);
    }
    m = &core->mcast[idx];
    m->qpn[member] = m->qpn[--m->nqp];
    core->qp[qp_idx].mcast_attached--;
    if (!m->nqp) {
        qrdma_table_free(&core->mcast_table, idx);
    }
    return QRDMA_STATUS_OK;
}

/* The command queue */

typedef uint8_t QrdmaCmdFn(QrdmaCore *core, uint32_t uctx,
                           const struct qrdma_cmd *cmd,
                           struct qrdma_cmpl *cmpl);

/* The names come from the header's QRDMA_CMD_LIST, with the opcodes. */
typedef struct QrdmaCmdInfo {
    QrdmaCmdFn *fn;
    bool creates;                       /* makes a resource */
} QrdmaCmdInfo;

static const QrdmaCmdInfo qrdma_cmds[] = {
    [QRDMA_CMD_QUERY_DEVICE] = { qrdma_cmd_query_device },
    [QRDMA_CMD_QUERY_PORT] = { qrdma_cmd_query_port },
    [QRDMA_CMD_QUERY_GID] = { qrdma_cmd_query_gid },
    [QRDMA_CMD_SET_GID] = { qrdma_cmd_set_gid },
    [QRDMA_CMD_DEL_GID] = { qrdma_cmd_del_gid },
    [QRDMA_CMD_QUERY_STATS] = { qrdma_cmd_query_stats },
    [QRDMA_CMD_CREATE_UCTX] = { qrdma_cmd_create_uctx, true },
    [QRDMA_CMD_DESTROY_UCTX] = { qrdma_cmd_destroy_uctx },
    [QRDMA_CMD_ALLOC_PD] = { qrdma_cmd_alloc_pd, true },
    [QRDMA_CMD_DEALLOC_PD] = { qrdma_cmd_dealloc_pd },
    [QRDMA_CMD_REG_MR] = { qrdma_cmd_reg_mr, true },
    [QRDMA_CMD_DEREG_MR] = { qrdma_cmd_dereg_mr },
    [QRDMA_CMD_ALLOC_MR] = { qrdma_cmd_alloc_mr, true },
    [QRDMA_CMD_ALLOC_MW] = { qrdma_cmd_alloc_mw, true },
    [QRDMA_CMD_DEALLOC_MW] = { qrdma_cmd_dealloc_mw },
    [QRDMA_CMD_CREATE_CQ] = { qrdma_cmd_create_cq, true },
    [QRDMA_CMD_DESTROY_CQ] = { qrdma_cmd_destroy_cq },
    [QRDMA_CMD_RESIZE_CQ] = { qrdma_cmd_resize_cq },
    [QRDMA_CMD_CREATE_QP] = { qrdma_cmd_create_qp, true },
    [QRDMA_CMD_MODIFY_QP] = { qrdma_cmd_modify_qp },
    [QRDMA_CMD_QUERY_QP] = { qrdma_cmd_query_qp },
    [QRDMA_CMD_DESTROY_QP] = { qrdma_cmd_destroy_qp },
    [QRDMA_CMD_CREATE_SRQ] = { qrdma_cmd_create_srq, true },
    [QRDMA_CMD_MODIFY_SRQ] = { qrdma_cmd_modify_srq },
    [QRDMA_CMD_QUERY_SRQ] = { qrdma_cmd_query_srq },
    [QRDMA_CMD_DESTROY_SRQ] = { qrdma_cmd_destroy_srq },
    [QRDMA_CMD_CREATE_AH] = { qrdma_cmd_create_ah, true },
    [QRDMA_CMD_DESTROY_AH] = { qrdma_cmd_destroy_ah },
    [QRDMA_CMD_ATTACH_MCAST] = { qrdma_cmd_attach_mcast, true },
    [QRDMA_CMD_DETACH_MCAST] = { qrdma_cmd_detach_mcast },
};

uint32_t qrdma_resources_in_use(QrdmaCore *core)
{
    return core->uctx_table.in_use + core->pd_table.in_use +
           core->mr_table.in_use + core->mw_table.in_use +
           core->cq_table.in_use +
           core->qp_table.in_use + core->srq_table.in_use +
           core->ah_table.in_use + core->mcast_table.in_use;
}

/*
 * Live resources do not migrate yet: a blocker stands while any exists.  A
 * command that would create the first one while a migration is already
 * running fails instead, so nothing is ever lost silently.
 */
static bool qrdma_block_migration(QrdmaCore *core)
{
    Error *err = NULL;

    if (core->migration_blocker) {
        return true;
    }
    error_setg(&core->migration_blocker,
               "qrdma: the device holds RDMA resources, which cannot "
               "migrate; destroy them (unload the driver) first");
    if (migrate_add_blocker(&core->migration_blocker, &err) < 0) {
        error_free(err);
        return false;
    }
    return true;
}

static void qrdma_unblock_migration(QrdmaCore *core)
{
    if (core->migration_blocker && !qrdma_resources_in_use(core)) {
        migrate_del_blocker(&core->migration_blocker);
    }
}

static uint8_t qrdma_cmd_exec(QrdmaCore *core, const struct qrdma_cmd *cmd,
                              struct qrdma_cmpl *cmpl)
{
    uint32_t uctx = le32_to_cpu(cmd->hdr.uctx);
    const QrdmaCmdInfo *info = NULL;

    if (cmd->hdr.opcode < ARRAY_SIZE(qrdma_cmds) &&
        qrdma_cmds[cmd->hdr.opcode].fn) {
        info = &qrdma_cmds[cmd->hdr.opcode];
    }
    core->cmdq.cur_name = qrdma_cmd_name(cmd->hdr.opcode);
    trace_qrdma_cmd(core->cmdq.cur_name, le16_to_cpu(cmd->hdr.cmd_id), uctx);

    if (!info) {
        return qrdma_cmd_fail(core, QRDMA_STATUS_BAD_OPCODE,
                              "unknown opcode 0x%02x", cmd->hdr.opcode);
    }
    if (cmd->hdr.flags) {
        return qrdma_cmd_fail(core, QRDMA_STATUS_BAD_PARAM,
                              "reserved header flags 0x%02x",
                              cmd->hdr.flags);
    }
    if (uctx != QRDMA_UCTX_KERNEL &&
        qrdma_table_lookup(&core->uctx_table, uctx) < 0) {
        return qrdma_cmd_fail(core, QRDMA_STATUS_BAD_HANDLE,
                              "no user context 0x%" PRIx32, uctx);
    }
    if (info->creates && !qrdma_block_migration(core)) {
        return qrdma_cmd_fail(core, QRDMA_STATUS_BUSY,
                              "a migration is running");
    }
    return info->fn(core, uctx, cmd, cmpl);
}

void qrdma_cmdq_process(void *opaque)
{
    QrdmaCore *core = opaque;
    QrdmaCmdq *q = &core->cmdq;
    uint32_t mask = (1u << q->log2) - 1;
    uint32_t budget = 1u << q->log2;
    bool completed = false;

    /* Only a ready device runs commands (not a fatal one, say). */
    if (!(core->dev_status & QRDMA_DEV_STATUS_READY)) {
        return;
    }
    qrdma_dp_drain(core);

    while (q->ci != q->pi && budget--) {
        uint32_t slot = q->ci & mask;
        uint64_t cmd_addr = q->base + (uint64_t)slot * sizeof(struct qrdma_cmd);
        uint64_t cmpl_addr = q->cmpq_base +
                             (uint64_t)slot * sizeof(struct qrdma_cmpl);
        struct qrdma_cmd cmd;
        struct qrdma_cmpl cmpl = { };
        uint8_t phase = !((q->ci >> q->log2) & 1);

        /* One copy out of guest memory; only the copy is looked at. */
        if (!qrdma_dma_read(core, cmd_addr, &cmd, sizeof(cmd))) {
            qrdma_guest_error(core, "command ring entry at 0x%" PRIx64
                              " is not in RAM: device fatal", cmd_addr);
            qrdma_fatal(core, QRDMA_CONFIG_ERR_DMA);
            break;
        }

        cmpl.status = qrdma_cmd_exec(core, &cmd, &cmpl);
        cmpl.cmd_id = cmd.hdr.cmd_id;
        core->counters.cmds++;
        if (cmpl.status) {
            core->counters.cmd_errors++;
        }
        trace_qrdma_cmd_done(core->cmdq.cur_name, le16_to_cpu(cmpl.cmd_id),
                             cmpl.status, le32_to_cpu(cmpl.handle));

        /*
         * The driver polls the phase bit: write the completion with the
         * old phase first and the flags byte last, with a barrier between,
         * so that it never sees the new phase on a half-written entry.
         */
        cmpl.flags = phase ? 0 : QRDMA_CMPL_F_PHASE;
        if (!qrdma_dma_write(core, cmpl_addr, &cmpl, sizeof(cmpl))) {
            qrdma_guest_error(core, "completion ring entry at 0x%" PRIx64
                              " is not in RAM: device fatal", cmpl_addr);
            qrdma_fatal(core, QRDMA_CONFIG_ERR_DMA);
            break;
        }
        /* The driver polls the phase bit: the rest must be seen first. */
        smp_wmb();
        cmpl.flags = phase ? QRDMA_CMPL_F_PHASE : 0;
        qrdma_dma_write(core, cmpl_addr + offsetof(struct qrdma_cmpl, flags),
                        &cmpl.flags, sizeof(cmpl.flags));
        q->ci++;
        completed = true;
    }

    qrdma_unblock_migration(core);
    if (!(core->dev_status & QRDMA_DEV_STATUS_READY)) {
        return;
    }
    if (q->ci != q->pi) {
        /* A full ring per run, so a busy guest cannot stall the loop. */
        qemu_bh_schedule(q->bh);
    }
    if (completed) {
        qrdma_notify(core, 0);
    }
}

/* Resource tables */

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
        QrdmaTable *t = tables[i];
        uint32_t j;

        for (j = 0; j < t->max; j++) {
            if (t->busy[j]) {
                qrdma_table_free(t, j);
            }
        }
        t->next = t->first;
    }
    memset(core->gid, 0, sizeof(core->gid));
    qrdma_unblock_migration(core);
}

void qrdma_resources_free(QrdmaCore *core)
{
    uint32_t i;

    qrdma_resources_reset(core);
    for (i = 0; i < core->mcast_table.max; i++) {
        g_free(core->mcast[i].qpn);
    }
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
