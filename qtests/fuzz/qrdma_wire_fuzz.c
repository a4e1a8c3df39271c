/*
 * qrdma-wire: a libFuzzer target for the RoCEv2 frames a qrdma function
 * receives from its netdev
 *
 * Copyright (c) 2026 The qrdma developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * Built only into the libFuzzer binary (scripts/build-qemu fuzz): the fuzz
 * tree's tests/qtest/fuzz/meson.build names it, from hw-rdma's fuzz patch.
 *
 * Once, before the first input, qtest sets up one qrdma function (GID
 * ::ffff:10.0.2.15, fe80::15 and, on VLAN 5, ::ffff:10.0.5.15) whose
 * netdev is a datagram socket the target holds the other end of, as a
 * driver would: EQs, a PD, MRs of every remote access, CQs (one tiny, to
 * overflow), an SRQ, and QPs of every type in RTS with receives posted,
 * each connected to a QPN of the fuzzer's "peer" at 10.0.2.16: RC (one on
 * its own RQ, one on the SRQ with PSNs about to wrap, one over IPv6 with
 * an MTU of 256), UC, UD (one attached to the group ::ffff:239.1.1.1, one
 * on the SRQ) and the GSI QP.  The RC and UC QPs have SENDs, WRITEs,
 * READs, atomics, ATOMIC_WRITE and FLUSH in flight that no one answered,
 * so responses and ACKs from the fuzzer meet live requester state.
 *
 * Each input then runs in a child process forked from that state, as
 * QEMU's fork-based fuzzers once did: the device starts every input from
 * the same QPs, and an input that crashes or hangs the device reproduces
 * on its own.  The child hands libFuzzer's coverage counters back through
 * shared memory; a child that dies takes the parent with it, so that
 * libFuzzer records the input.
 *
 * An input is a list of records separated by "WIRE"; a record's first
 * byte says what it is (see wf_record()).  Most are frames: the fuzzer
 * chooses the BTH and what follows it, and the target wraps them in
 * Ethernet, IPv4 or IPv6 and UDP to 4791 addressed to the function, with
 * the destination QPN mapped onto a live QP, the PSN near the one the QP
 * expects, keys and addresses of live MRs and a good ICRC, unless the
 * record's flags ask for the fuzzer's own bytes there.  Other records are
 * raw frames, steps of the virtual clock (retransmissions, RNR and ACK
 * timeouts), and the driver's side: new work requests, receives, CQ
 * polls, QPs moved to SQD or ERR.  After each record the main loop runs
 * until it is quiet, and what the device sent is read from the socket;
 * its PSNs steer the next frames.
 */

#include "qemu/osdep.h"
#include <poll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include "qemu/main-loop.h"
#include "net/net.h"
#include "qom/object.h"
#include "qapi/error.h"
#include "tests/qtest/libqtest.h"
#include "tests/qtest/libqos/pci-pc.h"
#include "tests/qtest/fuzz/fuzz.h"
#include "hw/rdma/qrdma-hw.h"
#include "qrdma_wire_fuzz.h"

#define WF_SEPARATOR    "WIRE"
#define WF_DEVFN        (4 << 3)
#define WF_FRAME_MAX    9018
#define WF_PAYLOAD_MAX  4200
#define WF_MEM_BASE     (16 * 1024 * 1024)
#define WF_MEM_END      (64 * 1024 * 1024)
#define WF_DATA_PAGES   16
#define WF_QKEY         0x1234
#define WF_GSI_QKEY     0x80010000u
#define WF_NQP          8
#define WF_CMDQ_LOG2    4

static const uint8_t wf_dev_mac[6] = { 0x52, 0x54, 0, 0, 2, 0x0f };
static const uint8_t wf_peer_mac[6] = { 0x52, 0x54, 0, 0, 2, 0x10 };
static const uint8_t wf_other_mac[6] = { 0x52, 0x54, 0, 0, 2, 0x63 };
static const uint8_t wf_v4_prefix[12] = { [10] = 0xff, [11] = 0xff };
static const uint8_t wf_dev_ip[4] = { 10, 0, 2, 15 };
static const uint8_t wf_dev_vlan_ip[4] = { 10, 0, 5, 15 };
static const uint8_t wf_peer_ip[4] = { 10, 0, 2, 16 };
static const uint8_t wf_other_ip[4] = { 10, 0, 2, 99 };
static const uint8_t wf_mcast_ip[4] = { 239, 1, 1, 1 };
static const uint8_t wf_dev_ip6[16] = { 0xfe, 0x80, [15] = 0x15 };
static const uint8_t wf_peer_ip6[16] = { 0xfe, 0x80, [15] = 0x16 };
#define WF_VLAN         5

typedef struct WfCq {
    uint32_t cqn;
    uint32_t log2;
    uint64_t ring;
    uint64_t ci_addr;
    uint32_t ci;
} WfCq;

typedef struct WfQp {
    uint32_t qpn;
    uint8_t type;
    bool srq;
    bool v6;
    uint64_t sq;                        /* one page: 16 WQEs */
    uint64_t rq;                        /* one page: 32 WQEs */
    uint32_t sq_pi;
    uint32_t rq_pi;
    uint32_t peer_qpn;
    uint32_t sq_psn;
    uint32_t rq_psn;
    uint32_t qkey;
    /* learned in an input's process from what the device sends */
    uint32_t last_req_psn;              /* its last request */
    uint32_t next_req_psn;              /* what its responder expects */
} WfQp;

typedef struct Wf {
    QTestState *qts;
    QPCIBus *bus;
    QPCIDevice *dev;
    QPCIBar bar;
    QPCIBar db;
    uint64_t mem_next;
    uint64_t cmdq;
    uint64_t cmpq;
    uint32_t cmd_pi;
    uint16_t cmd_id;
    uint64_t eq[2];
    uint32_t pd;
    uint64_t data;                      /* WF_DATA_PAGES, the MRs' pages */
    uint32_t lkey;
    uint32_t rkey[3];                   /* all rights, read only, write only */
    uint64_t mr_base[3];
    uint32_t mr_len[3];
    uint32_t ah;
    WfCq cq[2];
    uint32_t srqn;
    uint64_t srq_ring;
    uint32_t srq_pi;
    WfQp qp[WF_NQP];
    unsigned nqp;
    int fd;                             /* our end of the netdev's socket */
    NetClientState *nc;                 /* the netdev */
    uint8_t *counters;                  /* shared with the input's process */
    bool fork;
    bool debug;                         /* QRDMA_WIRE_FUZZ_DEBUG */
    unsigned reset_every;               /* without fork: inputs per set-up */
    unsigned inputs;
    int timeout_ms;                     /* of an input's process; -1: none */
} Wf;

static Wf wf;

/* Guest memory: a bump allocator above what the machine uses. */
static uint64_t wf_alloc(size_t len)
{
    static const uint8_t zero[4096];
    uint64_t a = wf.mem_next;
    size_t i;

    wf.mem_next += ROUND_UP(len, 4096);
    g_assert(wf.mem_next <= WF_MEM_END);
    /* not qtest_memset(): the fuzzer's wrapper of it leaks its buffer */
    for (i = 0; i < len; i += sizeof(zero)) {
        qtest_memwrite(wf.qts, a + i, zero, MIN(len - i, sizeof(zero)));
    }
    return a;
}

static uint64_t wf_page_list(const uint64_t *pages, unsigned n)
{
    uint64_t list = wf_alloc(n * 8);
    unsigned i;

    for (i = 0; i < n; i++) {
        qtest_writeq(wf.qts, list + i * 8, pages[i]);
    }
    return list;
}

static uint64_t wf_page_list1(uint64_t page)
{
    return wf_page_list(&page, 1);
}

static void wf_writel(uint64_t off, uint32_t val)
{
    qpci_io_writel(wf.dev, wf.bar, off, val);
}

static void wf_writeq(uint64_t off, uint64_t val)
{
    qpci_io_writeq(wf.dev, wf.bar, off, val);
}

static void wf_db(uint64_t off, uint32_t handle, uint32_t index)
{
    qpci_io_writeq(wf.dev, wf.db, off, QRDMA_DB_VAL(handle, index));
}

/* One command; the main loop runs until its completion is there. */
static uint8_t wf_exec(struct qrdma_cmd *cmd, struct qrdma_cmpl *cmpl)
{
    uint32_t slot = wf.cmd_pi & ((1u << WF_CMDQ_LOG2) - 1);
    uint8_t phase = (wf.cmd_pi >> WF_CMDQ_LOG2) & 1 ? 0 : QRDMA_CMPL_F_PHASE;
    uint64_t at = wf.cmpq + slot * sizeof(*cmpl);
    int i;

    cmd->hdr.cmd_id = cpu_to_le16(wf.cmd_id++);
    qtest_memwrite(wf.qts, wf.cmdq + slot * sizeof(*cmd), cmd, sizeof(*cmd));
    wf.cmd_pi++;
    wf_writel(QRDMA_REG_CMDQ_PI, wf.cmd_pi);
    for (i = 0; i < 1000; i++) {
        qtest_memread(wf.qts, at, cmpl, sizeof(*cmpl));
        if ((cmpl->flags & QRDMA_CMPL_F_PHASE) == phase) {
            return cmpl->status;
        }
        main_loop_wait(true);
    }
    g_error("qrdma-wire: command 0x%x never completed", cmd->hdr.opcode);
}

static uint32_t wf_exec_ok(struct qrdma_cmd *cmd, struct qrdma_cmpl *cmpl)
{
    struct qrdma_cmpl local;
    uint8_t st;

    cmpl = cmpl ? cmpl : &local;
    st = wf_exec(cmd, cmpl);
    if (st) {
        g_error("qrdma-wire: set-up command 0x%x failed: status %u",
                cmd->hdr.opcode, st);
    }
    return le32_to_cpu(cmpl->handle);
}

static void wf_set_gid(uint32_t index, const uint8_t *gid, uint16_t vlan)
{
    struct qrdma_cmd cmd = {
        .hdr.opcode = QRDMA_CMD_SET_GID,
        .gid.index = cpu_to_le32(index),
        .gid.type = QRDMA_GID_TYPE_ROCE_V2,
        .gid.vlan_id = cpu_to_le16(vlan),
    };

    memcpy(cmd.gid.gid, gid, 16);
    memcpy(cmd.gid.mac, wf_dev_mac, 6);
    wf_exec_ok(&cmd, NULL);
}

static void wf_v4_gid(uint8_t *gid, const uint8_t *ip)
{
    memcpy(gid, wf_v4_prefix, 12);
    memcpy(gid + 12, ip, 4);
}

static uint32_t wf_reg_mr(unsigned first, unsigned n, uint32_t access,
                          unsigned idx)
{
    uint64_t pages[WF_DATA_PAGES];
    struct qrdma_cmd cmd = { .hdr.opcode = QRDMA_CMD_REG_MR };
    struct qrdma_cmpl cmpl;
    unsigned i;

    for (i = 0; i < n; i++) {
        pages[i] = wf.data + (first + i) * 4096;
    }
    cmd.reg_mr.pd = cpu_to_le32(wf.pd);
    cmd.reg_mr.access = cpu_to_le32(access);
    cmd.reg_mr.iova = cpu_to_le64(pages[0]);
    cmd.reg_mr.length = cpu_to_le64(n * 4096);
    cmd.reg_mr.pages_addr = cpu_to_le64(wf_page_list(pages, n));
    cmd.reg_mr.npages = cpu_to_le32(n);
    cmd.reg_mr.page_shift = 12;
    wf_exec_ok(&cmd, &cmpl);
    wf.rkey[idx] = le32_to_cpu(cmpl.data[0]);
    wf.mr_base[idx] = pages[0];
    wf.mr_len[idx] = n * 4096;
    return le32_to_cpu(cmpl.handle);
}

static void wf_create_cq(WfCq *cq, uint32_t log2)
{
    struct qrdma_cmd cmd = { .hdr.opcode = QRDMA_CMD_CREATE_CQ };

    cq->log2 = log2;
    cq->ring = wf_alloc(4096);
    cq->ci_addr = wf_alloc(4096);
    cmd.cq.pages_addr = cpu_to_le64(wf_page_list1(cq->ring));
    cmd.cq.npages = cpu_to_le32(1);
    cmd.cq.log2_entries = cpu_to_le32(log2);
    cmd.cq.eq = cpu_to_le32(1);
    cmd.cq.ci_addr = cpu_to_le64(cq->ci_addr);
    cq->cqn = wf_exec_ok(&cmd, NULL);
    wf_db(QRDMA_DB_CQ_ARM, cq->cqn, QRDMA_DB_CQ_ARM_NEXT);
}

static void wf_post_srq(unsigned n)
{
    struct qrdma_rq_wqe r = { .num_sge = cpu_to_le32(1) };

    while (n--) {
        r.wr_id = 0x5000 + wf.srq_pi;
        r.sge[0].addr = cpu_to_le64(wf.data + 4096 * 2 +
                                    (wf.srq_pi % 8) * 512);
        r.sge[0].length = cpu_to_le32(512);
        r.sge[0].lkey = cpu_to_le32(wf.lkey);
        qtest_memwrite(wf.qts, wf.srq_ring + (wf.srq_pi % 32) *
                       QRDMA_RQ_WQE_SIZE, &r, sizeof(r));
        wf.srq_pi++;
    }
    wf_db(QRDMA_DB_SRQ, wf.srqn, wf.srq_pi);
}

static void wf_post_recv(WfQp *qp, unsigned n)
{
    struct qrdma_rq_wqe r = { .num_sge = cpu_to_le32(2) };

    if (qp->srq) {
        wf_post_srq(n);
        return;
    }
    while (n--) {
        r.wr_id = 0x4000 + qp->rq_pi;
        /* a small first SGE, so that a message may span both */
        r.sge[0].addr = cpu_to_le64(wf.data + 4096 * 4 +
                                    (qp->rq_pi % 4) * 1024);
        r.sge[0].length = cpu_to_le32(64);
        r.sge[0].lkey = cpu_to_le32(wf.lkey);
        r.sge[1].addr = cpu_to_le64(wf.data + 4096 * 4 +
                                    (qp->rq_pi % 4) * 1024 + 64);
        r.sge[1].length = cpu_to_le32(960);
        r.sge[1].lkey = cpu_to_le32(wf.lkey);
        qtest_memwrite(wf.qts, qp->rq + (qp->rq_pi % 32) * QRDMA_RQ_WQE_SIZE,
                       &r, sizeof(r));
        qp->rq_pi++;
    }
    wf_db(QRDMA_DB_RQ, qp->qpn, qp->rq_pi);
}

static uint8_t wf_modify(WfQp *qp, uint32_t mask, uint8_t state)
{
    struct qrdma_cmd cmd = { .hdr.opcode = QRDMA_CMD_MODIFY_QP };
    struct qrdma_cmpl cmpl;
    struct qrdma_qp_attr *a = &cmd.modify_qp.attr;

    cmd.modify_qp.qpn = cpu_to_le32(qp->qpn);
    a->attr_mask = cpu_to_le32(mask);
    a->qp_state = state;
    a->path_mtu = qp->v6 ? 1 : 3;
    a->qkey = cpu_to_le32(qp->qkey);
    a->sq_psn = cpu_to_le32(qp->sq_psn);
    a->rq_psn = cpu_to_le32(qp->rq_psn);
    a->dest_qp_num = cpu_to_le32(qp->peer_qpn);
    a->qp_access_flags = cpu_to_le32(QRDMA_ACCESS_LOCAL_WRITE |
                                     QRDMA_ACCESS_REMOTE_WRITE |
                                     QRDMA_ACCESS_REMOTE_READ |
                                     QRDMA_ACCESS_REMOTE_ATOMIC |
                                     QRDMA_ACCESS_FLUSH_GLOBAL);
    a->max_rd_atomic = 4;
    a->max_dest_rd_atomic = 4;
    a->min_rnr_timer = 1;
    a->port_num = 1;
    a->timeout = 14;
    a->retry_cnt = 7;
    a->rnr_retry = qp->qpn & 1 ? 7 : 3;
    a->av.hop_limit = 64;
    a->av.vlan_id = cpu_to_le16(QRDMA_VLAN_NONE);
    memcpy(a->av.dmac, wf_peer_mac, 6);
    if (qp->v6) {
        memcpy(a->av.dgid, wf_peer_ip6, 16);
        a->av.sgid_index = 1;
        a->av.flow_label = cpu_to_le32(0x12345);
    } else {
        wf_v4_gid(a->av.dgid, wf_peer_ip);
    }
    return wf_exec(&cmd, &cmpl);
}

static void wf_to_rts(WfQp *qp)
{
    bool ud = qp->type == QRDMA_QPT_UD || qp->type == QRDMA_QPT_GSI;
    uint32_t init = ud ? QRDMA_QP_ATTR_STATE | QRDMA_QP_ATTR_PKEY_INDEX |
                         QRDMA_QP_ATTR_PORT | QRDMA_QP_ATTR_QKEY :
                    QRDMA_QP_ATTR_STATE | QRDMA_QP_ATTR_PKEY_INDEX |
                    QRDMA_QP_ATTR_PORT | QRDMA_QP_ATTR_ACCESS_FLAGS;
    uint32_t rtr = QRDMA_QP_ATTR_STATE;
    uint32_t rts = QRDMA_QP_ATTR_STATE | QRDMA_QP_ATTR_SQ_PSN;

    if (qp->type == QRDMA_QPT_GSI) {
        init &= ~QRDMA_QP_ATTR_PORT;
    }
    if (qp->type == QRDMA_QPT_RC) {
        rtr |= QRDMA_QP_ATTR_AV | QRDMA_QP_ATTR_PATH_MTU |
               QRDMA_QP_ATTR_DEST_QPN | QRDMA_QP_ATTR_RQ_PSN |
               QRDMA_QP_ATTR_MAX_DEST_RD_ATOMIC | QRDMA_QP_ATTR_MIN_RNR_TIMER;
        rts |= QRDMA_QP_ATTR_TIMEOUT | QRDMA_QP_ATTR_RETRY_CNT |
               QRDMA_QP_ATTR_RNR_RETRY | QRDMA_QP_ATTR_MAX_QP_RD_ATOMIC;
    } else if (qp->type == QRDMA_QPT_UC) {
        rtr |= QRDMA_QP_ATTR_AV | QRDMA_QP_ATTR_PATH_MTU |
               QRDMA_QP_ATTR_DEST_QPN | QRDMA_QP_ATTR_RQ_PSN;
    }
    if (wf_modify(qp, init, QRDMA_QPS_INIT) ||
        wf_modify(qp, rtr, QRDMA_QPS_RTR) ||
        wf_modify(qp, rts, QRDMA_QPS_RTS)) {
        g_error("qrdma-wire: QP 0x%x of type %u does not reach RTS",
                qp->qpn, qp->type);
    }
}

static WfQp *wf_create_qp(uint8_t type, bool srq, bool v6, uint32_t sq_psn,
                          uint32_t rq_psn)
{
    struct qrdma_cmd cmd = { .hdr.opcode = QRDMA_CMD_CREATE_QP };
    WfQp *qp = &wf.qp[wf.nqp];

    g_assert(wf.nqp < WF_NQP);
    qp->type = type;
    qp->srq = srq;
    qp->v6 = v6;
    qp->sq = wf_alloc(4096);
    qp->rq = wf_alloc(4096);
    qp->peer_qpn = 0x100 + wf.nqp;
    qp->sq_psn = sq_psn;
    qp->rq_psn = rq_psn;
    qp->qkey = type == QRDMA_QPT_GSI ? WF_GSI_QKEY : WF_QKEY;
    cmd.create_qp.pd = cpu_to_le32(wf.pd);
    cmd.create_qp.send_cq = cpu_to_le32(wf.cq[0].cqn);
    /* the tiny CQ takes the receives of the SRQ's QPs */
    cmd.create_qp.recv_cq = cpu_to_le32(wf.cq[srq ? 1 : 0].cqn);
    cmd.create_qp.srq = cpu_to_le32(srq ? wf.srqn : QRDMA_HANDLE_NONE);
    cmd.create_qp.qp_type = type;
    cmd.create_qp.sq_log2 = 4;
    cmd.create_qp.max_send_wr = cpu_to_le32(16);
    cmd.create_qp.max_send_sge = cpu_to_le32(2);
    cmd.create_qp.max_inline_data = cpu_to_le32(64);
    cmd.create_qp.sq_pages_addr = cpu_to_le64(wf_page_list1(qp->sq));
    cmd.create_qp.sq_npages = cpu_to_le32(1);
    if (!srq) {
        cmd.create_qp.rq_log2 = 5;
        cmd.create_qp.max_recv_wr = cpu_to_le32(32);
        cmd.create_qp.max_recv_sge = cpu_to_le32(2);
        cmd.create_qp.rq_pages_addr = cpu_to_le64(wf_page_list1(qp->rq));
        cmd.create_qp.rq_npages = cpu_to_le32(1);
    }
    qp->qpn = wf_exec_ok(&cmd, NULL);
    wf.nqp++;
    wf_to_rts(qp);
    wf_post_recv(qp, 8);
    return qp;
}

/* The driver's side */

static const uint8_t wf_wr_ops[] = {
    QRDMA_WR_SEND, QRDMA_WR_SEND_WITH_IMM, QRDMA_WR_RDMA_WRITE,
    QRDMA_WR_RDMA_WRITE_WITH_IMM, QRDMA_WR_RDMA_READ,
    QRDMA_WR_ATOMIC_CMP_AND_SWP, QRDMA_WR_ATOMIC_FETCH_AND_ADD,
    QRDMA_WR_ATOMIC_WRITE, QRDMA_WR_FLUSH, QRDMA_WR_SEND_WITH_INV,
};

static void wf_post_send(WfQp *qp, uint8_t opcode, uint32_t len,
                         uint8_t flags)
{
    struct qrdma_sq_wqe w = {
        .wr_id = 0x1000 + qp->sq_pi,
        .opcode = opcode,
        .flags = QRDMA_WQE_F_SIGNALED | (flags & (QRDMA_WQE_F_SOLICITED |
                                                 QRDMA_WQE_F_FENCE)),
        .num_sge = 1,
        .imm_data = cpu_to_be32(0x11223344),
        .sge[0].addr = cpu_to_le64(wf.data + 4096 * 8),
        .sge[0].length = cpu_to_le32(len),
        .sge[0].lkey = cpu_to_le32(wf.lkey),
    };
    bool atomic = opcode == QRDMA_WR_ATOMIC_CMP_AND_SWP ||
                  opcode == QRDMA_WR_ATOMIC_FETCH_AND_ADD;

    if (atomic) {
        w.sge[0].length = cpu_to_le32(8);
    }
    if (opcode == QRDMA_WR_ATOMIC_WRITE) {
        w.num_sge = 0;
    }
    if (qp->type == QRDMA_QPT_UD || qp->type == QRDMA_QPT_GSI) {
        w.opcode = opcode & 1 ? QRDMA_WR_SEND_WITH_IMM : QRDMA_WR_SEND;
        w.ud.ah = cpu_to_le32(wf.ah);
        w.ud.remote_qpn = cpu_to_le32(qp->type == QRDMA_QPT_GSI ? 1 :
                                      qp->peer_qpn);
        w.ud.remote_qkey = cpu_to_le32(qp->qkey);
    } else if (opcode == QRDMA_WR_FLUSH) {
        w.num_sge = 0;
        w.flush.remote_addr = cpu_to_le64(wf.mr_base[0] + 4096);
        w.flush.rkey = cpu_to_le32(wf.rkey[0]);
        w.flush.length = cpu_to_le64(len);
        w.flush.type = QRDMA_FLUSH_GLOBAL;
        w.flush.level = QRDMA_FLUSH_RANGE;
    } else {
        w.rdma.remote_addr = cpu_to_le64(0x7f000000 + (atomic ? 64 : 0));
        w.rdma.rkey = cpu_to_le32(0xabcd01);
        w.rdma.compare_add = cpu_to_le64(5);
        w.rdma.swap = cpu_to_le64(7);
        if (opcode == QRDMA_WR_SEND_WITH_INV) {
            w.invalidate_rkey = cpu_to_le32(0xabcd02);
        }
    }
    qtest_memwrite(wf.qts, qp->sq + (qp->sq_pi % 16) * QRDMA_SQ_WQE_SIZE,
                   &w, sizeof(w));
    qp->sq_pi++;
    wf_db(QRDMA_DB_SQ, qp->qpn, qp->sq_pi);
}

/* Take the CQEs there are, as a driver polls, and arm again. */
static void wf_poll_cq(WfCq *cq, bool solicited)
{
    struct qrdma_cqe cqe;
    int n = 0;

    for (;;) {
        uint64_t at = cq->ring + (cq->ci & ((1u << cq->log2) - 1)) *
                      QRDMA_CQE_SIZE;
        uint8_t phase = (cq->ci >> cq->log2) & 1 ? 0 : QRDMA_CQE_F_PHASE;

        qtest_memread(wf.qts, at, &cqe, sizeof(cqe));
        if ((cqe.flags & QRDMA_CQE_F_PHASE) != phase || n++ > 256) {
            break;
        }
        cq->ci++;
    }
    qtest_writel(wf.qts, cq->ci_addr, cq->ci);
    wf_db(QRDMA_DB_CQ_ARM, cq->cqn, solicited ? QRDMA_DB_CQ_ARM_SOLICITED :
                                                QRDMA_DB_CQ_ARM_NEXT);
}

/* The wire */

static uint32_t wf_crc32_table[256];

static uint32_t wf_crc32(uint32_t crc, const uint8_t *p, size_t len)
{
    crc = ~crc;
    while (len--) {
        crc = wf_crc32_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
    }
    return ~crc;
}

static void wf_crc32_init(void)
{
    uint32_t i, c;
    int k;

    for (i = 0; i < 256; i++) {
        c = i;
        for (k = 0; k < 8; k++) {
            c = c >> 1 ^ (0xedb88320u & -(c & 1));
        }
        wf_crc32_table[i] = c;
    }
}

/*
 * The ICRC of a RoCEv2 packet by annex A17: 8 bytes of ones, then IP to
 * the end of the payload, the variant fields (IPv4 TOS, TTL and header
 * checksum; IPv6 traffic class, flow label and hop limit; the UDP
 * checksum; the BTH's reserved byte) taken as ones.
 */
static uint32_t wf_icrc(const uint8_t *l3, size_t l3_len, size_t len)
{
    static const uint8_t ones[8] = { 0xff, 0xff, 0xff, 0xff,
                                     0xff, 0xff, 0xff, 0xff };
    uint8_t h[40 + 8 + 12];
    size_t hlen = l3_len + 8 + 12;
    uint32_t crc;

    memcpy(h, l3, hlen);
    if (l3_len == 20) {
        h[1] = h[8] = h[10] = h[11] = 0xff;
    } else {
        h[0] |= 0x0f;
        h[1] = h[2] = h[3] = h[7] = 0xff;
    }
    h[l3_len + 6] = h[l3_len + 7] = 0xff;
    h[l3_len + 8 + 4] = 0xff;
    crc = wf_crc32(wf_crc32(0, ones, 8), h, hlen);
    return wf_crc32(crc, l3 + hlen, len - hlen);
}

static uint16_t wf_csum_fold(uint32_t sum)
{
    while (sum >> 16) {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    return ~sum & 0xffff;
}

static uint32_t wf_csum_add(uint32_t sum, const uint8_t *p, size_t len)
{
    size_t i;

    for (i = 0; i + 1 < len; i += 2) {
        sum += lduw_be_p(p + i);
    }
    if (len & 1) {
        sum += p[len - 1] << 8;
    }
    return sum;
}

static bool wf_is_response(uint8_t opcode)
{
    uint8_t op = opcode & 0x1f;

    return opcode < 0x40 && op >= 0x0d && op <= 0x12;
}

/* The extended headers before the payload, for the opcodes that have them. */
static size_t wf_ext_len(uint8_t opcode)
{
    uint8_t t = opcode >> 5, op = opcode & 0x1f;
    size_t n = t == 3 ? 8 : 0;          /* UD: DETH */

    if (t > 1) {
        return n;
    }
    switch (op) {
    case 0x06: case 0x0a: case 0x0c: case 0x1d:
        return 16;                                      /* RETH */
    case 0x0b:
        return 16 + 4;                                  /* RETH, ImmDt */
    case 0x1c:
        return 4 + 16;                                  /* FETH, RETH */
    case 0x13: case 0x14:
        return 28;                                      /* AtomicETH */
    case 0x0d: case 0x0f: case 0x10: case 0x11:
        return 4;                                       /* AETH */
    case 0x12:
        return 4 + 8;                                   /* AETH, AtomicAckETH */
    }
    return n;
}

/*
 * Fix the keys and addresses of the extended headers: an rkey of a live
 * MR (sel picks which) and an address inside it; UD's Q_Key.
 */
static void wf_fix_ext(uint8_t *p, size_t len, uint8_t opcode, WfQp *qp,
                       uint8_t sel)
{
    uint8_t t = opcode >> 5, op = opcode & 0x1f;
    unsigned m = sel % 3;
    size_t at = 0;

    if (t == 3) {
        if (len >= 8) {
            stl_be_p(p, sel & 0x80 ? WF_GSI_QKEY : qp->qkey);
        }
        return;
    }
    if (t > 1) {
        return;
    }
    if (op == 0x1c) {
        at = 4;
    }
    if (op == 0x06 || op == 0x0a || op == 0x0b || op == 0x0c ||
        op == 0x1c || op == 0x1d || op == 0x13 || op == 0x14) {
        uint64_t off;

        if (len < at + 12) {
            return;
        }
        off = ldq_be_p(p + at) % wf.mr_len[m];
        if (op == 0x13 || op == 0x14 || op == 0x1d) {
            off &= ~7ull;
        }
        stq_be_p(p + at, wf.mr_base[m] + off);
        stl_be_p(p + at + 8, wf.rkey[m]);
        if (len >= at + 16 && op != 0x13 && op != 0x14 && !(sel & 0x40)) {
            /* a length that fits, mostly */
            stl_be_p(p + at + 12, ldl_be_p(p + at + 12) %
                                  (wf.mr_len[m] - off + 1));
        }
    }
}

/*
 * A frame the fuzzer chose: d[0] flags, d[1] the QP, d[2] how far from
 * the expected PSN, then the BTH and what follows it.  Flags:
 *   0x01 IPv6 (fe80::16 to fe80::15)
 *   0x02 a VLAN tag (VLAN 5, to ::ffff:10.0.5.15)
 *   0x04 the fuzzer's destination QPN, not the QP's
 *   0x08 the fuzzer's PSN
 *   0x10 the fuzzer's P_Key, version, pad count and extended headers
 *   0x20 a wrong ICRC
 *   0x40 to the multicast group (QPN 0xffffff)
 *   0x80 from another host (10.0.2.99, another MAC)
 * d[1] & 0x80 takes the PSN from what the device sent so far rather than
 * from the QP's initial PSNs.
 */
static size_t wf_build_frame(const uint8_t *d, size_t n, uint8_t *f)
{
    uint8_t flags = n > 0 ? d[0] : 0, sel = n > 1 ? d[1] : 0;
    int8_t delta = n > 2 ? d[2] : 0;
    WfQp *qp = &wf.qp[(sel & 0x7f) % wf.nqp];
    bool v6 = flags & 0x01, vlan = flags & 0x02, raw = flags & 0x10;
    bool mcast = !v6 && (flags & 0x40), other = flags & 0x80;
    size_t l2 = vlan ? 18 : 14, l3_len = v6 ? 40 : 20, paylen, ext, pad;
    size_t l4_len, len;
    uint8_t *l3, *udp, *bth, opcode;
    uint32_t psn, base;

    d += MIN(n, 3);
    n -= MIN(n, 3);
    paylen = MIN(n, WF_PAYLOAD_MAX);
    bth = f + l2 + l3_len + 8;
    memset(f, 0, bth + 12 - f);
    memcpy(bth, d, MIN(paylen, 12));
    opcode = bth[0];
    /* what follows the BTH: the fuzzer's, padded to whole words */
    if (paylen > 12) {
        memcpy(bth + 12, d + 12, paylen - 12);
    }
    paylen = paylen > 12 ? paylen - 12 : 0;
    pad = raw ? (bth[1] >> 4) & 3 : -paylen & 3;
    memset(bth + 12 + paylen, 0, 3);
    l4_len = 8 + 12 + paylen + pad + 4;
    len = l2 + l3_len + l4_len;

    if (!raw) {
        bth[1] = (bth[1] & 0x80) | pad << 4;
        stw_be_p(bth + 2, 0xffff);
        bth[8] &= 0x80;
        ext = wf_ext_len(opcode);
        wf_fix_ext(bth + 12, MIN(ext, paylen), opcode, qp,
                   paylen > ext ? bth[12 + ext] : sel);
    }
    if (!(flags & 0x04)) {
        stl_be_p(bth + 4, mcast ? 0xffffff :
                 (opcode >> 5 == 3 && (sel & 0x40)) ? 1 : qp->qpn);
    }
    if (!(flags & 0x08)) {
        if (wf_is_response(opcode)) {
            base = sel & 0x80 ? qp->last_req_psn : qp->sq_psn;
        } else {
            base = sel & 0x80 ? qp->next_req_psn : qp->rq_psn;
        }
        psn = (base + delta) & 0xffffff;
        stl_be_p(bth + 8, (uint32_t)bth[8] << 24 | psn);
    }

    /* Ethernet */
    if (mcast) {
        static const uint8_t mc[6] = { 0x01, 0x00, 0x5e, 0x01, 0x01, 0x01 };

        memcpy(f, mc, 6);
    } else {
        memcpy(f, wf_dev_mac, 6);
    }
    memcpy(f + 6, other ? wf_other_mac : wf_peer_mac, 6);
    if (vlan) {
        stw_be_p(f + 12, 0x8100);
        stw_be_p(f + 14, (sel >> 5) << 13 | WF_VLAN);
    }
    stw_be_p(f + l2 - 2, v6 ? 0x86dd : 0x0800);

    /* IP */
    l3 = f + l2;
    if (v6) {
        stl_be_p(l3, 6u << 28 | (uint32_t)(sel & 0xfc) << 20 | 0x12345);
        stw_be_p(l3 + 4, l4_len);
        l3[6] = 17;
        l3[7] = 64;
        memcpy(l3 + 8, wf_peer_ip6, 16);
        if (other) {
            l3[23] = 0x63;
        }
        memcpy(l3 + 24, wf_dev_ip6, 16);
    } else {
        l3[0] = 0x45;
        l3[1] = sel & 0xfc;
        stw_be_p(l3 + 2, 20 + l4_len);
        stw_be_p(l3 + 6, 0x4000);
        l3[8] = 64;
        l3[9] = 17;
        memcpy(l3 + 12, other ? wf_other_ip : wf_peer_ip, 4);
        memcpy(l3 + 16, mcast ? wf_mcast_ip :
                        vlan ? wf_dev_vlan_ip : wf_dev_ip, 4);
        stw_be_p(l3 + 10, wf_csum_fold(wf_csum_add(0, l3, 20)));
    }

    /* UDP and the ICRC */
    udp = l3 + l3_len;
    stw_be_p(udp, 0xc000 | (qp->peer_qpn & 0x3fff));
    stw_be_p(udp + 2, 4791);
    stw_be_p(udp + 4, l4_len);
    stl_le_p(udp + l4_len - 4, wf_icrc(l3, l3_len, l3_len + l4_len - 4) ^
                               (flags & 0x20 ? 0x80 : 0));
    if (v6) {
        uint32_t sum = wf_csum_add(0, l3 + 8, 32) + l4_len + 17;

        sum = wf_csum_add(sum, udp, l4_len);
        stw_be_p(udp + 6, wf_csum_fold(sum) ? wf_csum_fold(sum) : 0xffff);
    }
    return len;
}

static void wf_inject(const uint8_t *f, size_t len)
{
    qemu_send_packet(wf.nc, f, len);
}

/* What the device sent: its PSNs, for the next frames of this input. */
static void wf_learn(const uint8_t *f, size_t len)
{
    size_t off = 14, l3_len;
    uint8_t opcode;
    uint32_t dqpn, psn;
    unsigned i;

    if (len >= 18 && lduw_be_p(f + 12) == 0x8100) {
        off = 18;
    }
    if (len < off + 2) {
        return;
    }
    l3_len = lduw_be_p(f + off - 2) == 0x86dd ? 40 : 20;
    if (len < off + l3_len + 8 + 12 + 4 ||
        lduw_be_p(f + off + l3_len + 2) != 4791) {
        return;
    }
    f += off + l3_len + 8;
    opcode = f[0];
    dqpn = ldl_be_p(f + 4) & 0xffffff;
    psn = ldl_be_p(f + 8) & 0xffffff;
    if (wf.debug) {
        fprintf(stderr, "qrdma-wire: sent opcode 0x%02x to QPN 0x%x PSN 0x%x"
                " AETH 0x%08x\n", opcode, dqpn, psn,
                wf_ext_len(opcode) >= 4 && wf_is_response(opcode) ?
                ldl_be_p(f + 12) : 0);
    }
    for (i = 0; i < wf.nqp; i++) {
        WfQp *qp = &wf.qp[i];

        if (qp->peer_qpn != dqpn) {
            continue;
        }
        if (wf_is_response(opcode)) {
            qp->next_req_psn = (psn + 1) & 0xffffff;
        } else {
            qp->last_req_psn = psn;
        }
    }
}

static void wf_drain(bool learn)
{
    uint8_t f[WF_FRAME_MAX];
    ssize_t n;

    while ((n = recv(wf.fd, f, sizeof(f), MSG_DONTWAIT)) > 0) {
        if (learn) {
            wf_learn(f, n);
        }
    }
}

static void wf_quiesce(QTestState *s)
{
    int i;

    for (i = 0; i < 4; i++) {
        flush_events(s);
        wf_drain(true);
    }
}

/*
 * One record.  Its first byte, modulo 8:
 *   0-3  a frame of the fuzzer's BTH (wf_build_frame())
 *   4    a raw frame, as it is
 *   5    a step of the virtual clock: 2 bytes, in units of 50 us
 *   6    the driver: d[1] what, d[2] the QP, d[3] and d[4] its arguments
 *   7    a frame as 0-3, then a step of 1 ms
 */
static void wf_record(QTestState *s, const uint8_t *d, size_t n)
{
    uint8_t f[WF_FRAME_MAX];
    size_t len;
    WfQp *qp;

    switch (d[0] % 8) {
    case 4:
        len = MIN(n - 1, WF_FRAME_MAX);
        if (len >= 14) {
            memcpy(f, d + 1, len);
            wf_inject(f, len);
        }
        break;
    case 5:
        qtest_clock_step(s, ((n > 1 ? d[1] : 0) | (n > 2 ? d[2] << 8 : 0)) *
                            50000ull + 1000);
        break;
    case 6:
        if (n < 3) {
            break;
        }
        qp = &wf.qp[d[2] % wf.nqp];
        switch (d[1] % 5) {
        case 0:
            wf_post_send(qp, wf_wr_ops[(n > 3 ? d[3] : 0) %
                                       ARRAY_SIZE(wf_wr_ops)],
                         (n > 4 ? d[4] : 1) * 24, d[1] >> 4);
            break;
        case 1:
            wf_post_recv(qp, 1 + (d[1] >> 5));
            break;
        case 2:
            wf_poll_cq(&wf.cq[d[2] & 1], d[1] & 0x80);
            break;
        case 3:
            wf_modify(qp, QRDMA_QP_ATTR_STATE, d[1] & 0x80 ? QRDMA_QPS_ERR :
                                                  QRDMA_QPS_SQD);
            break;
        case 4:
            wf_modify(qp, QRDMA_QP_ATTR_STATE, QRDMA_QPS_RTS);
            break;
        }
        break;
    default:
        len = wf_build_frame(d + 1, n - 1, f);
        wf_inject(f, len);
        if (d[0] % 8 == 7) {
            flush_events(s);
            qtest_clock_step(s, 1000000);
        }
        break;
    }
    wf_quiesce(s);
}

/* QRDMA_WIRE_FUZZ_DEBUG: what became of the frames of an input. */
static void wf_debug(void)
{
    static const char *const props[] = {
        "pkts-rcvd", "pkts-sent", "pkts-dropped", "icrc-errors",
        "wire-malformed", "dup-reqs", "out-of-seq", "seq-naks-sent",
        "rnr-naks-sent", "retransmits", "guest-errors",
    };
    Object *o = object_resolve_path("/machine/peripheral/qrdma0", NULL);
    unsigned i;

    for (i = 0; i < ARRAY_SIZE(props); i++) {
        fprintf(stderr, "%s %" PRIu64 "%s", props[i],
                object_property_get_uint(o, props[i], &error_abort),
                i + 1 < ARRAY_SIZE(props) ? ", " : "\n");
    }
}

static void wf_run(QTestState *s, const uint8_t *data, size_t size)
{
    const uint8_t *rec = data, *next;
    size_t len, sep = strlen(WF_SEPARATOR);
    unsigned i;

    for (i = 0; i < wf.nqp; i++) {
        wf.qp[i].last_req_psn = wf.qp[i].sq_psn;
        wf.qp[i].next_req_psn = wf.qp[i].rq_psn;
    }
    wf_drain(true);
    /*
     * QRDMA_WIRE_FUZZ_SELFTEST: an input "CRASH" aborts and "HANG" sleeps,
     * to check that the fuzzer records what its input's process does.
     */
    if (getenv("QRDMA_WIRE_FUZZ_SELFTEST")) {
        if (size >= 5 && !memcmp(data, "CRASH", 5)) {
            abort();
        }
        if (size >= 4 && !memcmp(data, "HANG", 4)) {
            for (;;) {
                pause();
            }
        }
    }
    while (rec && size) {
        next = memmem(rec, size, WF_SEPARATOR, sep);
        len = next ? next - rec : size;
        if (len) {
            wf_record(s, rec, len);
        }
        if (!next) {
            break;
        }
        size -= len + sep;
        rec = next + sep;
    }
    if (wf.debug) {
        wf_debug();
    }
}

static void wf_setup(QTestState *s);

/*
 * Each input in a process of its own, forked from the state wf_pre_fuzz()
 * built.  The process says it is done through a pipe once the counters
 * are back, before it exits: its teardown, as long as its fork, then runs
 * beside the next input rather than before it.
 */
static void wf_fuzz(QTestState *s, const unsigned char *data, size_t size)
{
    size_t ncnt = __stop___sancov_cntrs - __start___sancov_cntrs;
    struct pollfd pfd = { .events = POLLIN };
    int status, pipefd[2];
    char done = 0;
    ssize_t n;
    pid_t pid;

    if (!wf.fork) {
        /*
         * QRDMA_WIRE_FUZZ_NOFORK=N: each input on the state of the last,
         * and every N inputs (if N > 0) a reset and the set-up again.
         */
        if (wf.reset_every && ++wf.inputs % wf.reset_every == 0) {
            fuzz_reset(s);
            wf_setup(s);
        }
        wf_run(s, data, size);
        return;
    }
    /* the processes of earlier inputs that have exited since */
    while (waitpid(-1, NULL, WNOHANG) > 0) {
        continue;
    }
    fflush(stdout);
    fflush(stderr);
    g_assert(pipe(pipefd) == 0);
    pid = fork();
    g_assert(pid >= 0);
    if (pid == 0) {
        /* gone when the fuzzer is */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        close(pipefd[0]);
        wf_run(s, data, size);
        memcpy(wf.counters, __start___sancov_cntrs, ncnt);
        done = 1;
        if (write(pipefd[1], &done, 1) != 1) {
            abort();
        }
        _exit(0);
    }
    close(pipefd[1]);
    /*
     * QEMU blocks SIGALRM, so libFuzzer's -timeout never fires: the
     * input's process has QRDMA_WIRE_FUZZ_TIMEOUT seconds (default 10,
     * 0 for ever) of the real clock.
     */
    pfd.fd = pipefd[0];
    do {
        n = poll(&pfd, 1, wf.timeout_ms);
    } while (n < 0 && errno == EINTR);
    if (n == 0) {
        kill(pid, SIGKILL);
        fprintf(stderr, "qrdma-wire: the input's process hung for %d s\n",
                wf.timeout_ms / 1000);
        abort();
    }
    do {
        n = read(pipefd[0], &done, 1);
    } while (n < 0 && errno == EINTR);
    close(pipefd[0]);
    if (n == 1 && done == 1) {
        memcpy(__start___sancov_cntrs, wf.counters, ncnt);
        return;
    }
    while (waitpid(pid, &status, 0) < 0) {
        g_assert(errno == EINTR);
    }
    fprintf(stderr, "qrdma-wire: the input's process %s %d\n",
            WIFSIGNALED(status) ? "died of signal" : "exited with",
            WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
    abort();
}

/*
 * The function as a driver sets it up, from a reset: every input of the
 * fuzzer starts from here.
 */
static void wf_setup(QTestState *s)
{
    struct qrdma_cmd cmd;
    uint64_t pages[WF_DATA_PAGES];
    uint8_t gid[16];
    WfQp *rc0, *rc1, *rc6, *uc, *ud;
    unsigned i;

    if (wf.bus) {
        g_free(wf.dev);
        qpci_free_pc(wf.bus);
    }
    wf.mem_next = WF_MEM_BASE;
    wf.cmd_pi = 0;
    wf.srq_pi = 0;
    wf.nqp = 0;
    memset(wf.qp, 0, sizeof(wf.qp));
    wf.bus = qpci_new_pc(s, NULL);
    wf.dev = qpci_device_find(wf.bus, WF_DEVFN);
    g_assert(wf.dev);
    qpci_device_enable(wf.dev);
    wf.bar = qpci_iomap(wf.dev, QRDMA_REG_BAR, NULL);
    wf.db = qpci_iomap(wf.dev, QRDMA_DB_BAR, NULL);

    wf.cmdq = wf_alloc(sizeof(struct qrdma_cmd) << WF_CMDQ_LOG2);
    wf.cmpq = wf_alloc(sizeof(struct qrdma_cmpl) << WF_CMDQ_LOG2);
    wf_writeq(QRDMA_REG_CMDQ_BASE, wf.cmdq);
    wf_writel(QRDMA_REG_CMDQ_LOG2, WF_CMDQ_LOG2);
    wf_writeq(QRDMA_REG_CMPQ_BASE, wf.cmpq);
    wf_writel(QRDMA_REG_DEV_CTRL, QRDMA_DEV_CTRL_ENABLE);
    for (i = 0; i < 2; i++) {
        wf.eq[i] = wf_alloc(4096);
        wf_writeq(QRDMA_REG_EQ(i) + QRDMA_REG_EQ_BASE, wf.eq[i]);
        wf_writel(QRDMA_REG_EQ(i) + QRDMA_REG_EQ_LOG2, 8);
        wf_writel(QRDMA_REG_EQ(i) + QRDMA_REG_EQ_CTRL, QRDMA_EQ_CTRL_ENABLE);
    }

    wf_v4_gid(gid, wf_dev_ip);
    wf_set_gid(0, gid, QRDMA_VLAN_NONE);
    wf_set_gid(1, wf_dev_ip6, QRDMA_VLAN_NONE);
    wf_v4_gid(gid, wf_dev_vlan_ip);
    wf_set_gid(2, gid, WF_VLAN);

    cmd = (struct qrdma_cmd) { .hdr.opcode = QRDMA_CMD_ALLOC_PD };
    wf.pd = wf_exec_ok(&cmd, NULL);

    wf.data = wf_alloc(WF_DATA_PAGES * 4096);
    for (i = 0; i < WF_DATA_PAGES; i++) {
        pages[i] = wf.data + i * 4096;
    }
    wf.lkey = wf_reg_mr(0, WF_DATA_PAGES, QRDMA_ACCESS_VALID_MASK &
                        ~QRDMA_ACCESS_MW_BIND, 0);
    wf_reg_mr(10, 2, QRDMA_ACCESS_REMOTE_READ, 1);
    wf_reg_mr(12, 3, QRDMA_ACCESS_LOCAL_WRITE | QRDMA_ACCESS_REMOTE_WRITE, 2);

    wf_create_cq(&wf.cq[0], 7);
    wf_create_cq(&wf.cq[1], 2);

    cmd = (struct qrdma_cmd) { .hdr.opcode = QRDMA_CMD_CREATE_SRQ };
    wf.srq_ring = wf_alloc(4096);
    cmd.srq.pd = cpu_to_le32(wf.pd);
    cmd.srq.max_wr = cpu_to_le32(32);
    cmd.srq.max_sge = cpu_to_le32(1);
    cmd.srq.log2_entries = cpu_to_le32(5);
    cmd.srq.npages = cpu_to_le32(1);
    cmd.srq.pages_addr = cpu_to_le64(wf_page_list1(wf.srq_ring));
    wf.srqn = wf_exec_ok(&cmd, NULL);

    cmd = (struct qrdma_cmd) { .hdr.opcode = QRDMA_CMD_CREATE_AH };
    cmd.create_ah.pd = cpu_to_le32(wf.pd);
    cmd.create_ah.av.hop_limit = 64;
    cmd.create_ah.av.vlan_id = cpu_to_le16(QRDMA_VLAN_NONE);
    wf_v4_gid(cmd.create_ah.av.dgid, wf_peer_ip);
    memcpy(cmd.create_ah.av.dmac, wf_peer_mac, 6);
    wf.ah = wf_exec_ok(&cmd, NULL);

    wf_create_qp(QRDMA_QPT_GSI, false, false, 0, 0);
    rc0 = wf_create_qp(QRDMA_QPT_RC, false, false, 0x100, 0x800);
    rc1 = wf_create_qp(QRDMA_QPT_RC, true, false, 0xfffff0, 0xfffffa);
    rc6 = wf_create_qp(QRDMA_QPT_RC, false, true, 0x3000, 0x3800);
    uc = wf_create_qp(QRDMA_QPT_UC, false, false, 0x4000, 0x4800);
    ud = wf_create_qp(QRDMA_QPT_UD, false, false, 0, 0);
    wf_create_qp(QRDMA_QPT_UD, true, false, 0, 0);

    cmd = (struct qrdma_cmd) { .hdr.opcode = QRDMA_CMD_ATTACH_MCAST };
    cmd.mcast.qpn = cpu_to_le32(ud->qpn);
    wf_v4_gid(cmd.mcast.gid, wf_mcast_ip);
    wf_exec_ok(&cmd, NULL);

    /* requests no one answered yet */
    wf_post_send(rc0, QRDMA_WR_SEND, 700, 0);
    wf_post_send(rc0, QRDMA_WR_RDMA_WRITE, 600, 0);
    wf_post_send(rc0, QRDMA_WR_RDMA_READ, 600, 0);
    wf_post_send(rc0, QRDMA_WR_ATOMIC_FETCH_AND_ADD, 8, 0);
    wf_post_send(rc0, QRDMA_WR_ATOMIC_CMP_AND_SWP, 8, 0);
    wf_post_send(rc0, QRDMA_WR_SEND_WITH_IMM, 100, 0);
    wf_post_send(rc1, QRDMA_WR_RDMA_READ, 3000, 0);
    wf_post_send(rc1, QRDMA_WR_ATOMIC_WRITE, 8, 0);
    wf_post_send(rc1, QRDMA_WR_FLUSH, 64, 0);
    wf_post_send(rc1, QRDMA_WR_SEND_WITH_INV, 40, 0);
    wf_post_send(rc6, QRDMA_WR_SEND, 1000, 0);
    wf_post_send(rc6, QRDMA_WR_RDMA_WRITE_WITH_IMM, 300, 0);
    wf_post_send(rc6, QRDMA_WR_RDMA_READ, 700, 0);
    wf_post_send(uc, QRDMA_WR_RDMA_WRITE, 600, 0);
    wf_post_send(uc, QRDMA_WR_SEND, 300, 0);
    wf_post_send(ud, QRDMA_WR_SEND, 200, 0);
    wf_quiesce(s);
    wf_drain(false);
}

static void wf_pre_fuzz(QTestState *s)
{
    size_t ncnt = __stop___sancov_cntrs - __start___sancov_cntrs;
    const char *nofork = getenv("QRDMA_WIRE_FUZZ_NOFORK");

    wf.qts = s;
    wf.debug = getenv("QRDMA_WIRE_FUZZ_DEBUG");
    wf.fork = !nofork;
    wf.reset_every = nofork ? atoi(nofork) : 0;
    wf.timeout_ms = getenv("QRDMA_WIRE_FUZZ_TIMEOUT") ?
                    atoi(getenv("QRDMA_WIRE_FUZZ_TIMEOUT")) * 1000 : 10000;
    if (wf.timeout_ms <= 0) {
        wf.timeout_ms = -1;
    }
    wf_crc32_init();
    wf.counters = mmap(NULL, ncnt, PROT_READ | PROT_WRITE,
                       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    g_assert(wf.counters != MAP_FAILED);
    wf.nc = qemu_find_netdev("wire");
    g_assert(wf.nc);
    wf_setup(s);
}

static GString *wf_cmdline(FuzzTarget *t)
{
    GString *cmd = g_string_new(TARGET_NAME);
    int sv[2];

    g_assert_cmpint(socketpair(PF_UNIX, SOCK_DGRAM, 0, sv), ==, 0);
    wf.fd = sv[0];
    /*
     * -seed: the device draws QPN slots and key bytes at random, from
     * QEMU's generator; seeded, an input replays as it ran.
     */
    g_string_append_printf(cmd,
        " -display none -machine q35,accel=qtest -m 128M -nodefaults -seed 1"
        " -netdev dgram,id=wire,local.type=fd,local.str=%d"
        " -device qrdma,addr=04.0,id=qrdma0,netdev=wire,"
        "mac=52:54:00:00:02:0f ", sv[1]);
    return cmd;
}

static void wf_register(void)
{
    fuzz_add_target(&(FuzzTarget){
        .name = "qrdma-wire",
        .description = "RoCEv2 frames into a qrdma function with live QPs "
                       "of every type",
        .get_init_cmdline = wf_cmdline,
        .pre_fuzz = wf_pre_fuzz,
        .fuzz = wf_fuzz,
    });
}

fuzz_target_init(wf_register);
