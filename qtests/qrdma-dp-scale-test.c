/*
 * QTest testcase for the qrdma data path: every limit the device
 * advertises, reached
 *
 * Copyright (c) 2026 The qrdma developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * A device with its default limits is filled, table by table, to exactly
 * what QUERY_DEVICE advertises: one more of each is refused with
 * NO_RESOURCES, and data then moves through the last object of each
 * kind.  The last objects share the last PD, so that one RC pair, one UD
 * sender and the members of the last multicast group prove them all.
 */

#include "qemu/osdep.h"
#include "qemu/bitops.h"
#include "qemu/module.h"
#include "libqtest.h"
#include "qrdma-dp.h"

/* The last QPs: an RC pair and a UD sender, then the groups' members */
#define SCALE_LAST_RC 2
#define SCALE_LAST_UD 1

typedef struct ScaleLast {
    uint32_t pd;
    QrdmaDpCq cq;
    uint32_t srq;
    uint64_t srq_ring;
    uint32_t mr;                        /* lkey and rkey of data pages 0-15 */
    uint32_t mw;                        /* a type 2 window, not bound yet */
    uint32_t ah;                        /* to the last group */
    uint8_t group[16];
    QrdmaDpQp rc[SCALE_LAST_RC];
    QrdmaDpQp ud;
    QrdmaDpQp *member;
    uint32_t nmember;
} ScaleLast;

static void scale_group_gid(uint8_t *gid, uint32_t i)
{
    static const uint8_t v4_prefix[12] = { [10] = 0xff, [11] = 0xff };

    memcpy(gid, v4_prefix, sizeof(v4_prefix));
    gid[12] = 239;
    gid[13] = 2;
    gid[14] = i >> 8;
    gid[15] = i;
}

/* The iova of the last MR: data page 0 */
#define SCALE_IOVA 0x10000000ull

/*
 * Run a command that makes an object: its status, and (when it succeeds)
 * its handle in *handle, if not NULL.
 */
static uint8_t scale_exec(QrdmaDpEnv *e, struct qrdma_cmd *cmd,
                          uint32_t *handle)
{
    struct qrdma_cmpl cmpl;
    uint8_t st = qrdma_t_exec(&e->t, cmd, &cmpl);

    if (!st && handle) {
        *handle = le32_to_cpu(cmpl.handle);
    }
    return st;
}

/* The MR's lkey, which is its rkey too, in *key. */
static uint8_t scale_reg_mr(QrdmaDpEnv *e, uint32_t pd, uint64_t list,
                            uint32_t npages, uint32_t access, uint32_t *key)
{
    struct qrdma_cmd cmd = { .hdr.opcode = QRDMA_CMD_REG_MR };

    cmd.reg_mr.pd = cpu_to_le32(pd);
    cmd.reg_mr.access = cpu_to_le32(access);
    cmd.reg_mr.iova = cpu_to_le64(SCALE_IOVA);
    cmd.reg_mr.length = cpu_to_le64((uint64_t)npages * 4096);
    cmd.reg_mr.pages_addr = cpu_to_le64(list);
    cmd.reg_mr.npages = cpu_to_le32(npages);
    cmd.reg_mr.page_shift = 12;
    return scale_exec(e, &cmd, key);
}

/* The window's key (not its handle) in *key. */
static uint8_t scale_alloc_mw(QrdmaDpEnv *e, uint32_t pd, uint8_t type,
                              uint32_t *key)
{
    struct qrdma_cmd cmd = { .hdr.opcode = QRDMA_CMD_ALLOC_MW };
    struct qrdma_cmpl cmpl;
    uint8_t st;

    cmd.alloc_mw.pd = cpu_to_le32(pd);
    cmd.alloc_mw.type = type;
    st = qrdma_t_exec(&e->t, &cmd, &cmpl);
    if (!st && key) {
        *key = le32_to_cpu(cmpl.data[0]);
    }
    return st;
}

static uint8_t scale_alloc_pd(QrdmaDpEnv *e, uint32_t *pd)
{
    struct qrdma_cmd cmd = { .hdr.opcode = QRDMA_CMD_ALLOC_PD };

    return scale_exec(e, &cmd, pd);
}

/* An SRQ of 4 on the ring whose page list is at list */
static uint8_t scale_create_srq(QrdmaDpEnv *e, uint32_t pd, uint64_t list,
                                uint32_t *srqn)
{
    struct qrdma_cmd cmd = { .hdr.opcode = QRDMA_CMD_CREATE_SRQ };

    cmd.srq.pd = cpu_to_le32(pd);
    cmd.srq.max_wr = cpu_to_le32(4);
    cmd.srq.max_sge = cpu_to_le32(1);
    cmd.srq.log2_entries = cpu_to_le32(2);
    cmd.srq.npages = cpu_to_le32(1);
    cmd.srq.pages_addr = cpu_to_le64(list);
    return scale_exec(e, &cmd, srqn);
}

static uint8_t scale_create_ah(QrdmaDpEnv *e, uint32_t pd, const uint8_t *gid,
                               uint32_t *ah)
{
    struct qrdma_cmd cmd = { .hdr.opcode = QRDMA_CMD_CREATE_AH };

    cmd.create_ah.pd = cpu_to_le32(pd);
    cmd.create_ah.av.hop_limit = 1;
    cmd.create_ah.av.vlan_id = cpu_to_le16(QRDMA_VLAN_NONE);
    memcpy(cmd.create_ah.av.dgid, gid, 16);
    return scale_exec(e, &cmd, ah);
}

static uint8_t scale_attach(QrdmaDpEnv *e, uint32_t qpn, const uint8_t *gid)
{
    struct qrdma_cmd cmd = { .hdr.opcode = QRDMA_CMD_ATTACH_MCAST };

    cmd.mcast.qpn = cpu_to_le32(qpn);
    memcpy(cmd.mcast.gid, gid, 16);
    return qrdma_t_exec(&e->t, &cmd, NULL);
}

/*
 * Create with make() until max objects exist (have of them already): each
 * one succeeds.
 */
#define SCALE_FILL(have, max, make)                                         \
    do {                                                                    \
        uint32_t n_;                                                        \
        for (n_ = (have); n_ < (max); n_++) {                               \
            g_assert_cmpuint((make), ==, QRDMA_STATUS_OK);                  \
        }                                                                   \
    } while (0)

/*
 * The fillers of the CQ and QP tables share one ring page, which the
 * device never writes while nothing is posted to them.
 */
static uint8_t scale_filler_cq(QrdmaDpEnv *e, uint64_t list)
{
    struct qrdma_cmd cmd = { .hdr.opcode = QRDMA_CMD_CREATE_CQ };

    cmd.cq.pages_addr = cpu_to_le64(list);
    cmd.cq.npages = cpu_to_le32(1);
    cmd.cq.log2_entries = cpu_to_le32(4);
    cmd.cq.eq = cpu_to_le32(1);
    cmd.cq.ci_addr = cpu_to_le64(e->data + 14 * 4096);
    return qrdma_t_exec(&e->t, &cmd, NULL);
}

static uint8_t scale_filler_qp(QrdmaDpEnv *e, uint64_t list)
{
    QrdmaDpQp qp;

    return qrdma_dp_create_qp_on(e, &qp, QRDMA_QPT_RC, 0, &e->cq, &e->cq,
                                 list, list);
}

/* One more is refused for want of resources. */
static void scale_full(const char *what, uint8_t more, uint32_t max)
{
    g_assert_cmpuint(more, ==, QRDMA_STATUS_NO_RESOURCES);
    g_test_message("%s: %" PRIu32 ", the advertised limit", what, max);
}

static void scale_fill(QrdmaDpEnv *e, const struct qrdma_device_attr *a,
                       ScaleLast *l)
{
    uint32_t max_pd = le32_to_cpu(a->max_pd);
    uint32_t max_cq = le32_to_cpu(a->max_cq);
    uint32_t max_srq = le32_to_cpu(a->max_srq);
    uint32_t max_mr = le32_to_cpu(a->max_mr);
    uint32_t max_mw = le32_to_cpu(a->max_mw);
    uint32_t max_qp = le32_to_cpu(a->max_qp);
    uint32_t max_ah = le32_to_cpu(a->max_ah);
    uint64_t pages[QRDMA_DP_DATA_PAGES];
    /* one page, data page 15, for every filler's ring */
    uint64_t filler = qrdma_dp_page_list1(e, e->data + 15 * 4096);
    uint32_t first_pd = e->pd, i;

    /* The environment holds a PD, an MR and a CQ already. */
    SCALE_FILL(1, max_pd - 1, scale_alloc_pd(e, NULL));
    g_assert_cmpuint(scale_alloc_pd(e, &l->pd), ==, 0);
    scale_full("PDs", scale_alloc_pd(e, NULL), max_pd);

    SCALE_FILL(1, max_cq - 1, scale_filler_cq(e, filler));
    g_assert_cmpuint(qrdma_dp_create_cq(e, &l->cq, 7, 1), ==, 0);
    scale_full("CQs", scale_filler_cq(e, filler), max_cq);

    SCALE_FILL(0, max_srq - 1, scale_create_srq(e, first_pd, filler, NULL));
    l->srq_ring = guest_alloc(e->t.alloc, 4096);
    g_assert_cmpuint(scale_create_srq(e, l->pd,
                                      qrdma_dp_page_list1(e, l->srq_ring),
                                      &l->srq), ==, 0);
    scale_full("SRQs", scale_create_srq(e, first_pd, filler, NULL), max_srq);

    SCALE_FILL(1, max_mr - 1, scale_reg_mr(e, first_pd, filler, 1,
                                          QRDMA_ACCESS_LOCAL_WRITE, NULL));
    for (i = 0; i < QRDMA_DP_DATA_PAGES; i++) {
        pages[i] = e->data + i * 4096;
    }
    g_assert_cmpuint(scale_reg_mr(e, l->pd,
                                  qrdma_t_page_list(&e->t, pages,
                                                    QRDMA_DP_DATA_PAGES),
                                  QRDMA_DP_DATA_PAGES,
                                  QRDMA_ACCESS_LOCAL_WRITE |
                                  QRDMA_ACCESS_REMOTE_WRITE |
                                  QRDMA_ACCESS_MW_BIND, &l->mr), ==, 0);
    scale_full("MRs", scale_reg_mr(e, first_pd, filler, 1,
                                   QRDMA_ACCESS_LOCAL_WRITE, NULL), max_mr);

    SCALE_FILL(0, max_mw - 1,
               scale_alloc_mw(e, first_pd, QRDMA_MW_TYPE_1, NULL));
    g_assert_cmpuint(scale_alloc_mw(e, l->pd, QRDMA_MW_TYPE_2, &l->mw), ==, 0);
    scale_full("MWs", scale_alloc_mw(e, first_pd, QRDMA_MW_TYPE_1, NULL),
               max_mw);

    /* QPs: the last ones in the last PD, on the last CQ and SRQ */
    l->nmember = le32_to_cpu(a->max_mcast_qp_attach);
    l->member = g_new0(QrdmaDpQp, l->nmember);
    SCALE_FILL(0, max_qp - SCALE_LAST_RC - SCALE_LAST_UD - l->nmember,
               scale_filler_qp(e, filler));
    e->pd = l->pd;
    g_assert_cmpuint(qrdma_dp_create_qp(e, &l->rc[0], QRDMA_QPT_RC, 0, &l->cq,
                                        &l->cq), ==, 0);
    g_assert_cmpuint(qrdma_dp_create_qp(e, &l->rc[1], QRDMA_QPT_RC, l->srq,
                                        &l->cq, &l->cq), ==, 0);
    g_assert_cmpuint(qrdma_dp_create_qp(e, &l->ud, QRDMA_QPT_UD, 0, &l->cq,
                                        &l->cq), ==, 0);
    for (i = 0; i < l->nmember; i++) {
        g_assert_cmpuint(qrdma_dp_create_qp(e, &l->member[i], QRDMA_QPT_UD, 0,
                                            &l->cq, &l->cq), ==, 0);
    }
    scale_full("QPs", scale_filler_qp(e, filler), max_qp);

    /* AHs: the last to the last group */
    scale_group_gid(l->group, le32_to_cpu(a->max_mcast_grp) - 1);
    SCALE_FILL(0, max_ah - 1, scale_create_ah(e, first_pd, l->group, NULL));
    g_assert_cmpuint(scale_create_ah(e, l->pd, l->group, &l->ah), ==, 0);
    scale_full("AHs", scale_create_ah(e, first_pd, l->group, NULL), max_ah);
}

/*
 * Every group, each with as many members as a group may have: the last
 * group is the one the AH names.
 */
static void scale_fill_groups(QrdmaDpEnv *e,
                              const struct qrdma_device_attr *a,
                              ScaleLast *l)
{
    uint32_t max_grp = le32_to_cpu(a->max_mcast_grp);
    uint8_t gid[16];
    uint32_t g, i;

    for (i = 0; i < l->nmember; i++) {
        qrdma_dp_to_rtr(e, &l->member[i], 0);
        qrdma_dp_to_rts(e, &l->member[i], 0);
    }
    for (g = 0; g < max_grp; g++) {
        scale_group_gid(gid, g);
        for (i = 0; i < l->nmember; i++) {
            g_assert_cmpuint(scale_attach(e, l->member[i].qpn, gid), ==,
                             QRDMA_STATUS_OK);
        }
    }
    /* no group more, and no member more in any group */
    scale_group_gid(gid, max_grp);
    scale_full("multicast groups", scale_attach(e, l->member[0].qpn, gid),
               max_grp);
    scale_full("QPs in a group", scale_attach(e, l->ud.qpn, l->group),
               l->nmember);
}

static void scale_srq_post(QrdmaDpEnv *e, ScaleLast *l, uint64_t wr_id,
                           uint64_t addr, uint32_t len)
{
    struct qrdma_rq_wqe r = {
        .wr_id = wr_id,
        .num_sge = cpu_to_le32(1),
        .sge[0].addr = cpu_to_le64(addr),
        .sge[0].length = cpu_to_le32(len),
        .sge[0].lkey = cpu_to_le32(l->mr),
    };

    qtest_memwrite(e->t.qts, l->srq_ring, &r, sizeof(r));
    qrdma_dp_ring_db(e, QRDMA_DB_SRQ, l->srq, 1);
}

/* An RDMA WRITE from rc[0] of len bytes at iova src to rkey at dst. */
static void scale_write(QrdmaDpEnv *e, ScaleLast *l, uint64_t wr_id,
                        uint64_t src, uint32_t rkey, uint64_t dst,
                        uint32_t len)
{
    struct qrdma_sq_wqe w = qrdma_dp_wqe_sge(wr_id, QRDMA_WR_RDMA_WRITE, src,
                                             len, l->mr);

    w.rdma.remote_addr = cpu_to_le64(dst);
    w.rdma.rkey = cpu_to_le32(rkey);
    qrdma_dp_run_wqe(e, &l->rc[0], w, QRDMA_WC_RDMA_WRITE, QRDMA_WC_SUCCESS);
}

static void test_scale_limits(void *obj, void *data, QGuestAllocator *alloc)
{
    struct qrdma_device_attr a;
    uint64_t seen = 0;
    uint32_t window, i;
    struct qrdma_sq_wqe w;
    struct qrdma_cqe cqe;
    ScaleLast l = { };
    QrdmaDpEnv e;

    qrdma_dp_env_init(&e, obj, alloc);
    qrdma_dp_query_device(&e, &a);
    scale_fill(&e, &a, &l);
    scale_fill_groups(&e, &a, &l);
    e.cq = l.cq;

    /* The last RC pair, in the last PD: a WRITE through the last MR */
    qrdma_dp_to_rtr(&e, &l.rc[0], l.rc[1].qpn);
    qrdma_dp_to_rtr(&e, &l.rc[1], l.rc[0].qpn);
    qrdma_dp_to_rts(&e, &l.rc[0], 0);
    qrdma_dp_to_rts(&e, &l.rc[1], 0);
    qrdma_dp_write_data(&e, 0, "through the last MR");
    scale_write(&e, &l, 1, SCALE_IOVA, l.mr, SCALE_IOVA + 2 * 4096 + 8, 20);
    qrdma_dp_expect_data(&e, 2 * 4096 + 8, "through the last MR");

    /* the last window, bound by rc[1] on data page 3 */
    window = qrdma_dp_next_key(l.mw);
    qrdma_dp_run_wqe(&e, &l.rc[1],
                     qrdma_dp_wqe_bind(2, window, l.mr, SCALE_IOVA + 3 * 4096,
                                       256, QRDMA_ACCESS_REMOTE_WRITE |
                                       QRDMA_ACCESS_LOCAL_WRITE),
                     QRDMA_WC_BIND_MW, QRDMA_WC_SUCCESS);
    qrdma_dp_write_data(&e, 0, "through the last window");
    scale_write(&e, &l, 3, SCALE_IOVA, window, SCALE_IOVA + 3 * 4096 + 16, 24);
    qrdma_dp_expect_data(&e, 3 * 4096 + 16, "through the last window");

    /* a SEND into the last SRQ */
    qrdma_dp_write_data(&e, 0, "into the last SRQ");
    scale_srq_post(&e, &l, 0x51, SCALE_IOVA + 4 * 4096, 64);
    w = qrdma_dp_wqe_sge(4, QRDMA_WR_SEND, SCALE_IOVA, 18, l.mr);
    qrdma_dp_post_send(&e, &l.rc[0], &w);
    qrdma_dp_expect_cqe(&e, &e.cq, 0x51, l.rc[1].qpn, QRDMA_WC_RECV,
                        QRDMA_WC_SUCCESS);
    qrdma_dp_expect_cqe(&e, &e.cq, 4, l.rc[0].qpn, QRDMA_WC_SEND,
                        QRDMA_WC_SUCCESS);
    qrdma_dp_expect_data(&e, 4 * 4096, "into the last SRQ");

    /* a datagram through the last AH to every member of the last group */
    qrdma_dp_to_rtr(&e, &l.ud, 0);
    qrdma_dp_to_rts(&e, &l.ud, 0);
    for (i = 0; i < l.nmember; i++) {
        qrdma_dp_post_recv(&e, &l.member[i], 0x100 + i,
                           SCALE_IOVA + 5 * 4096 + i * 128, 128, l.mr);
    }
    qrdma_dp_write_data(&e, 0, "to the last group");
    w = qrdma_dp_wqe_sge(5, QRDMA_WR_SEND, SCALE_IOVA, 18, l.mr);
    w.ud.ah = cpu_to_le32(l.ah);
    w.ud.remote_qpn = cpu_to_le32(0xffffff);
    w.ud.remote_qkey = cpu_to_le32(0x1234);
    qrdma_dp_post_send(&e, &l.ud, &w);
    for (i = 0; i <= l.nmember; i++) {
        g_assert_true(qrdma_dp_poll_cq(&e, &e.cq, &cqe));
        g_assert_cmpuint(cqe.status, ==, QRDMA_WC_SUCCESS);
        if (cqe.wr_id == 5) {
            g_assert_cmpuint(cqe.opcode, ==, QRDMA_WC_SEND);
            continue;
        }
        g_assert_cmpuint(cqe.wr_id, >=, 0x100);
        g_assert_cmpuint(cqe.wr_id, <, 0x100 + l.nmember);
        g_assert_cmphex(le32_to_cpu(cqe.qpn), ==,
                        l.member[cqe.wr_id - 0x100].qpn);
        g_assert_cmphex(le32_to_cpu(cqe.src_qp), ==, l.ud.qpn);
        g_assert_cmpuint(le32_to_cpu(cqe.byte_len), ==, QRDMA_GRH_SIZE + 18);
        seen |= 1ull << (cqe.wr_id - 0x100);
    }
    g_assert_cmphex(seen, ==, MAKE_64BIT_MASK(0, l.nmember));
    for (i = 0; i < l.nmember; i++) {
        qrdma_dp_expect_data(&e, 5 * 4096 + i * 128 + QRDMA_GRH_SIZE,
                             "to the last group");
    }
    qrdma_dp_expect_no_cqe(&e, &e.cq);
    g_free(l.member);
}

/* A handle's slot, which stays while its generation changes */
#define SCALE_SLOT(handle) ((handle) & 0xffff)

/* A QP on the filler ring: its QPN in *qpn */
static uint8_t scale_filler_qpn(QrdmaDpEnv *e, uint64_t list, uint32_t *qpn)
{
    QrdmaDpQp qp;
    uint8_t st = qrdma_dp_create_qp_on(e, &qp, QRDMA_QPT_RC, 0, &e->cq,
                                       &e->cq, list, list);

    *qpn = qp.qpn;
    return st;
}

/*
 * The QP table of "dp/scale-table-reuse": small, so that the free ring's
 * head goes round it many times.
 */
#define SCALE_TABLE_QPS 24
#define SCALE_TABLE_PDS 8

/*
 * A full table hands out exactly the slot freed, under a new handle, the
 * old one refused: the QP table, whose slots are drawn at random, again
 * and again from wherever its free ring's head got to; the PD table,
 * which is not random, slots in turn, and freed ones in the order they
 * were freed, each with the next generation.
 */
static void test_scale_table_reuse(void *obj, void *data,
                                   QGuestAllocator *alloc)
{
    uint32_t qpn[SCALE_TABLE_QPS], pd[SCALE_TABLE_PDS], old, other, i;
    uint64_t filler;
    bool in_turn = true;
    QrdmaDpEnv e;

    qrdma_dp_env_init(&e, obj, alloc);
    filler = qrdma_dp_page_list1(&e, e.data + 15 * 4096);
    for (i = 0; i < SCALE_TABLE_QPS; i++) {
        g_assert_cmpuint(scale_filler_qpn(&e, filler, &qpn[i]), ==, 0);
        in_turn &= !i || SCALE_SLOT(qpn[i]) == SCALE_SLOT(qpn[i - 1]) + 1;
    }
    g_assert_false(in_turn);
    g_assert_cmpuint(scale_filler_qpn(&e, filler, &other), ==,
                     QRDMA_STATUS_NO_RESOURCES);

    for (i = 0; i < 3 * SCALE_TABLE_QPS; i++) {
        uint32_t k = (i * 7 + 3) % SCALE_TABLE_QPS;

        old = qpn[k];
        g_assert_cmpuint(qrdma_t_destroy(&e.t, QRDMA_CMD_DESTROY_QP, 0, old),
                         ==, 0);
        g_assert_cmpuint(scale_filler_qpn(&e, filler, &qpn[k]), ==, 0);
        g_assert_cmphex(SCALE_SLOT(qpn[k]), ==, SCALE_SLOT(old));
        g_assert_cmphex(qpn[k], !=, old);
        g_assert_cmpuint(qrdma_t_destroy(&e.t, QRDMA_CMD_DESTROY_QP, 0, old),
                         ==, QRDMA_STATUS_BAD_HANDLE);
        g_assert_cmpuint(scale_filler_qpn(&e, filler, &other), ==,
                         QRDMA_STATUS_NO_RESOURCES);
    }

    /* two free: the two slots, in either order */
    g_assert_cmpuint(qrdma_t_destroy(&e.t, QRDMA_CMD_DESTROY_QP, 0, qpn[5]),
                     ==, 0);
    g_assert_cmpuint(qrdma_t_destroy(&e.t, QRDMA_CMD_DESTROY_QP, 0, qpn[17]),
                     ==, 0);
    g_assert_cmpuint(scale_filler_qpn(&e, filler, &old), ==, 0);
    g_assert_cmpuint(scale_filler_qpn(&e, filler, &other), ==, 0);
    g_assert_cmphex(SCALE_SLOT(old) ^ SCALE_SLOT(other), ==,
                    SCALE_SLOT(qpn[5]) ^ SCALE_SLOT(qpn[17]));
    g_assert_true(SCALE_SLOT(old) == SCALE_SLOT(qpn[5]) ||
                  SCALE_SLOT(old) == SCALE_SLOT(qpn[17]));

    /* The environment's PD has slot 1: the others follow it in turn. */
    pd[0] = e.pd;
    for (i = 1; i < SCALE_TABLE_PDS; i++) {
        g_assert_cmpuint(scale_alloc_pd(&e, &pd[i]), ==, 0);
        g_assert_cmphex(SCALE_SLOT(pd[i]), ==, i + 1);
    }
    g_assert_cmpuint(scale_alloc_pd(&e, &other), ==,
                     QRDMA_STATUS_NO_RESOURCES);
    for (i = 0; i < 3 * SCALE_TABLE_PDS; i++) {
        uint32_t a = 1 + i % (SCALE_TABLE_PDS - 1);
        uint32_t b = 1 + (i * 3 + 2) % (SCALE_TABLE_PDS - 1);
        uint32_t want_a = (pd[a] + (1u << 16)) & 0xffffff;
        uint32_t want_b = (pd[b] + (1u << 16)) & 0xffffff;

        if (a == b) {
            continue;
        }
        g_assert_cmpuint(qrdma_t_destroy(&e.t, QRDMA_CMD_DEALLOC_PD, 0,
                                         pd[b]), ==, 0);
        g_assert_cmpuint(qrdma_t_destroy(&e.t, QRDMA_CMD_DEALLOC_PD, 0,
                                         pd[a]), ==, 0);
        g_assert_cmpuint(scale_alloc_pd(&e, &pd[b]), ==, 0);
        g_assert_cmpuint(scale_alloc_pd(&e, &pd[a]), ==, 0);
        g_assert_cmphex(pd[a], ==, want_a);
        g_assert_cmphex(pd[b], ==, want_b);
        g_assert_cmpuint(scale_alloc_pd(&e, &other), ==,
                         QRDMA_STATUS_NO_RESOURCES);
    }
}

static void qrdma_dp_scale_register_tests(void)
{
    /*
     * As large as the tables go (QPNs and MR keys have 16 bits of slot),
     * with groups of as many QPs as a group may have.
     */
    QOSGraphTestOptions largest = {
        .edge.extra_device_opts = "max-pd=65520,max-mr=65520,max-mw=65520,"
                                  "max-cq=65520,max-qp=65519,max-srq=65520,"
                                  "max-ah=65520,max-mcast-grp=1024,"
                                  "max-mcast-qp-attach=64",
    };

    QOSGraphTestOptions table = {
        .edge.extra_device_opts = "max-qp=" stringify(SCALE_TABLE_QPS)
                                  ",max-pd=" stringify(SCALE_TABLE_PDS),
    };

    qos_add_test("dp/scale-limits", QRDMA_NODE_DP, test_scale_limits, NULL);
    qos_add_test("dp/scale-table-reuse", QRDMA_NODE_DP,
                 test_scale_table_reuse, &table);
    qos_add_test("dp/scale-limits-largest", QRDMA_NODE_DP, test_scale_limits,
                 &largest);
}

libqos_init(qrdma_dp_scale_register_tests);
