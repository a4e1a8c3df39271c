/*
 * QEMU qrdma: emulated RDMA (RoCEv2) NIC, the command queue
 *
 * Copyright (c) 2026 The qrdma developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * Every command is copied out of guest memory once, then checked field by
 * field, then executed; a command that fails leaves the device as it was.
 * The handlers of each object's commands are in that object's file; the
 * ones here answer for the device as a whole.
 */

#include "qemu/osdep.h"
#include "qemu/bitops.h"
#include "qapi/error.h"
#include "qrdma.h"
#include "qrdma_dp.h"
#include "qrdma_pd.h"
#include "qrdma_mr.h"
#include "qrdma_cq.h"
#include "qrdma_srq.h"
#include "qrdma_ah.h"
#include "qrdma_mcast.h"
#include "qrdma_qp.h"
#include "qrdma_cmd.h"
#include "qrdma_resources.h"
#include "qrdma_err.h"
#include "trace.h"

/* Write a command's answer to the buffer it named. */
static uint8_t qrdma_reply(QrdmaCore *core, const struct qrdma_cmd_query *q,
                           const void *resp, size_t len)
{
    uint64_t addr = le64_to_cpu(q->resp_addr);
    uint32_t resp_len = le32_to_cpu(q->resp_len);

    if (resp_len < len) {
        QRDMA_GUEST_ERR(core, qrdma_err_cmd_reply_short,
                        "answer buffer of %" PRIu32 " bytes, %zu needed",
                        resp_len, len);
        return QRDMA_STATUS_BAD_PARAM;
    }
    if (!qrdma_dma_write(core, addr, resp, len)) {
        QRDMA_GUEST_ERR(core, qrdma_err_cmd_reply_not_ram,
                        "answer buffer at 0x%" PRIx64 " is not RAM", addr);
        return QRDMA_STATUS_BAD_ADDR;
    }
    return QRDMA_STATUS_OK;
}

/* Queries and the GID table */

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
    a.max_mr_size = cpu_to_le64((uint64_t)qrdma_mr_max_pages(core) <<
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
    a.max_fast_reg_page_list_len = cpu_to_le32(qrdma_mr_max_pages(core));
    a.max_mr_pages = cpu_to_le32(qrdma_mr_max_pages(core));
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
                                QRDMA_DEV_CAP_MW |
                                QRDMA_DEV_CAP_CQE_VLAN);
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
        QRDMA_GUEST_ERR(core, qrdma_err_cmd_bad_port, "no port %" PRIu32, port);
        return QRDMA_STATUS_BAD_PARAM;
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
        QRDMA_GUEST_ERR(core, qrdma_err_cmd_gid_index, "GID index %" PRIu32
                        " out of range", index);
        return QRDMA_STATUS_BAD_PARAM;
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
    uint8_t st;

    st = qrdma_check_kernel(core, uctx);
    if (st) {
        return st;
    }
    if (index >= QRDMA_GID_TABLE_LEN) {
        QRDMA_GUEST_ERR(core, qrdma_err_cmd_gid_index, "GID index %" PRIu32
                        " out of range", index);
        return QRDMA_STATUS_BAD_PARAM;
    }
    if (g->type != QRDMA_GID_TYPE_ROCE_V2) {
        QRDMA_GUEST_ERR(core, qrdma_err_cmd_gid_type,
                        "GID type %u is not RoCEv2", g->type);
        return QRDMA_STATUS_BAD_PARAM;
    }
    e = &core->gid[index];
    memcpy(e->gid, g->gid, sizeof(e->gid));
    memcpy(e->mac, g->mac, sizeof(e->mac));
    e->vlan_id = g->vlan_id;
    e->type = g->type;
    qrdma_fabric_gid_changed(&core->port, index);
    qrdma_link_gids_changed(core);
    trace_qrdma_gid_set(index);
    return QRDMA_STATUS_OK;
}

static uint8_t qrdma_cmd_del_gid(QrdmaCore *core, uint32_t uctx,
                                 const struct qrdma_cmd *cmd,
                                 struct qrdma_cmpl *cmpl)
{
    uint32_t index = le32_to_cpu(cmd->gid.index);
    uint8_t st;

    st = qrdma_check_kernel(core, uctx);
    if (st) {
        return st;
    }
    if (index >= QRDMA_GID_TABLE_LEN) {
        QRDMA_GUEST_ERR(core, qrdma_err_cmd_gid_index, "GID index %" PRIu32
                        " out of range", index);
        return QRDMA_STATUS_BAD_PARAM;
    }
    memset(&core->gid[index], 0, sizeof(core->gid[index]));
    qrdma_fabric_gid_changed(&core->port, index);
    qrdma_link_gids_changed(core);
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
        .pkts_sent = cpu_to_le64(c->pkts_sent),
        .pkts_rcvd = cpu_to_le64(c->pkts_rcvd),
        .pkts_dropped = cpu_to_le64(c->pkts_dropped),
        .dup_reqs = cpu_to_le64(c->dup_reqs),
        .out_of_seq = cpu_to_le64(c->out_of_seq),
        .seq_naks_sent = cpu_to_le64(c->seq_naks_sent),
        .seq_naks_rcvd = cpu_to_le64(c->seq_naks_rcvd),
        .rnr_naks_sent = cpu_to_le64(c->rnr_naks_sent),
        .rnr_naks_rcvd = cpu_to_le64(c->rnr_naks_rcvd),
        .retransmits = cpu_to_le64(c->retransmits),
        .retry_exceeded = cpu_to_le64(c->retry_exceeded),
        .icrc_errors = cpu_to_le64(c->icrc_errors),
        .wire_malformed = cpu_to_le64(c->wire_malformed),
    };

    return qrdma_reply(core, &cmd->query, &s, sizeof(s));
}

/*
 * The QP commands: the QP object makes the change, and the data path,
 * which keeps state of its own for each QP, is told of it here.
 */

static uint8_t qrdma_cmd_create_qp(QrdmaCore *core, uint32_t uctx,
                                   const struct qrdma_cmd *cmd,
                                   struct qrdma_cmpl *cmpl)
{
    QrdmaQp *qp;
    uint8_t st;

    st = qrdma_qp_create(core, uctx, cmd, cmpl, &qp);
    if (st) {
        return st;
    }
    qrdma_dp_qp_created(core, qp);
    return QRDMA_STATUS_OK;
}

static uint8_t qrdma_cmd_modify_qp(QrdmaCore *core, uint32_t uctx,
                                   const struct qrdma_cmd *cmd,
                                   struct qrdma_cmpl *cmpl)
{
    QrdmaQp *qp;
    uint8_t from, st;

    st = qrdma_qp_modify(core, uctx, cmd, &qp, &from);
    if (st) {
        return st;
    }
    qrdma_dp_qp_modified(core, qp, from);
    return QRDMA_STATUS_OK;
}

static uint8_t qrdma_cmd_query_qp(QrdmaCore *core, uint32_t uctx,
                                  const struct qrdma_cmd *cmd,
                                  struct qrdma_cmpl *cmpl)
{
    struct qrdma_query_qp_resp resp;
    uint8_t st;

    st = qrdma_qp_query(core, uctx, le32_to_cpu(cmd->query.index), &resp);
    if (st) {
        return st;
    }
    return qrdma_reply(core, &cmd->query, &resp, sizeof(resp));
}

static uint8_t qrdma_cmd_destroy_qp(QrdmaCore *core, uint32_t uctx,
                                    const struct qrdma_cmd *cmd,
                                    struct qrdma_cmpl *cmpl)
{
    QrdmaQp *qp;
    uint8_t st;

    st = qrdma_qp_destroy_check(core, uctx, le32_to_cpu(cmd->destroy.handle),
                                &qp);
    if (st) {
        return st;
    }
    qrdma_dp_qp_destroyed(core, qp);
    qrdma_qp_free(core, qp);
    return QRDMA_STATUS_OK;
}

/* The command queue */

typedef uint8_t QrdmaCmdFn(QrdmaCore *core, uint32_t uctx,
                           const struct qrdma_cmd *cmd,
                           struct qrdma_cmpl *cmpl);

/* The names come from the header's QRDMA_CMD_LIST, with the opcodes. */
typedef struct QrdmaCmdInfo {
    QrdmaCmdFn *fn;
} QrdmaCmdInfo;

static const QrdmaCmdInfo qrdma_cmds[] = {
    [QRDMA_CMD_QUERY_DEVICE] = { qrdma_cmd_query_device },
    [QRDMA_CMD_QUERY_PORT] = { qrdma_cmd_query_port },
    [QRDMA_CMD_QUERY_GID] = { qrdma_cmd_query_gid },
    [QRDMA_CMD_SET_GID] = { qrdma_cmd_set_gid },
    [QRDMA_CMD_DEL_GID] = { qrdma_cmd_del_gid },
    [QRDMA_CMD_QUERY_STATS] = { qrdma_cmd_query_stats },
    [QRDMA_CMD_CREATE_UCTX] = { qrdma_cmd_create_uctx },
    [QRDMA_CMD_DESTROY_UCTX] = { qrdma_cmd_destroy_uctx },
    [QRDMA_CMD_ALLOC_PD] = { qrdma_cmd_alloc_pd },
    [QRDMA_CMD_DEALLOC_PD] = { qrdma_cmd_dealloc_pd },
    [QRDMA_CMD_REG_MR] = { qrdma_cmd_reg_mr },
    [QRDMA_CMD_DEREG_MR] = { qrdma_cmd_dereg_mr },
    [QRDMA_CMD_ALLOC_MR] = { qrdma_cmd_alloc_mr },
    [QRDMA_CMD_ALLOC_MW] = { qrdma_cmd_alloc_mw },
    [QRDMA_CMD_DEALLOC_MW] = { qrdma_cmd_dealloc_mw },
    [QRDMA_CMD_CREATE_CQ] = { qrdma_cmd_create_cq },
    [QRDMA_CMD_DESTROY_CQ] = { qrdma_cmd_destroy_cq },
    [QRDMA_CMD_RESIZE_CQ] = { qrdma_cmd_resize_cq },
    [QRDMA_CMD_CREATE_QP] = { qrdma_cmd_create_qp },
    [QRDMA_CMD_MODIFY_QP] = { qrdma_cmd_modify_qp },
    [QRDMA_CMD_QUERY_QP] = { qrdma_cmd_query_qp },
    [QRDMA_CMD_DESTROY_QP] = { qrdma_cmd_destroy_qp },
    [QRDMA_CMD_CREATE_SRQ] = { qrdma_cmd_create_srq },
    [QRDMA_CMD_MODIFY_SRQ] = { qrdma_cmd_modify_srq },
    [QRDMA_CMD_QUERY_SRQ] = { qrdma_cmd_query_srq },
    [QRDMA_CMD_DESTROY_SRQ] = { qrdma_cmd_destroy_srq },
    [QRDMA_CMD_CREATE_AH] = { qrdma_cmd_create_ah },
    [QRDMA_CMD_DESTROY_AH] = { qrdma_cmd_destroy_ah },
    [QRDMA_CMD_ATTACH_MCAST] = { qrdma_cmd_attach_mcast },
    [QRDMA_CMD_DETACH_MCAST] = { qrdma_cmd_detach_mcast },
};

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
        QRDMA_GUEST_ERR(core, qrdma_err_cmd_bad_opcode, "unknown opcode 0x%02x",
                        cmd->hdr.opcode);
        return QRDMA_STATUS_BAD_OPCODE;
    }
    if (cmd->hdr.flags) {
        QRDMA_GUEST_ERR(core, qrdma_err_cmd_hdr_flags,
                        "reserved header flags 0x%02x", cmd->hdr.flags);
        return QRDMA_STATUS_BAD_PARAM;
    }
    if (uctx != QRDMA_UCTX_KERNEL &&
        qrdma_table_lookup(&core->uctx_table, uctx) < 0) {
        return qrdma_no_handle(core, "user context", uctx);
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
    if (!(core->dev_status & QRDMA_DEV_STATUS_READY) || !core->running) {
        return;
    }
    /*
     * A command may let the guest reuse memory (an MR deregistered):
     * the link's peer first takes what it may still read of it.
     */
    if (q->ci != q->pi && !qrdma_link_fence(core)) {
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
            QRDMA_GUEST_ERR(core, qrdma_err_cmdq_entry_not_ram,
                            "command ring entry " "at 0x%" PRIx64
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
            QRDMA_GUEST_ERR(core, qrdma_err_cmdq_cmpl_not_ram,
                            "completion ring entry" " at 0x%" PRIx64
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
    qrdma_link_fence_done(core);

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
