/*
 * QTest testcase for the qrdma data path: the lifecycle rules of QPs
 * with work outstanding
 *
 * Copyright (c) 2026 The qrdma developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * Each test is named by the ids of the rules it checks in the project's
 * docs/specs/qrdma-lifecycle.rst: flush on ERR, RESET, destroy, SRQs.
 */

#include "qemu/osdep.h"
#include "qemu/module.h"
#include "qemu/timer.h"
#include "libqtest.h"
#include "libqos/libqos-malloc.h"
#include "qrdma-dp.h"

/* S30, S35: ERR flushes everything outstanding, in order; later posts too */
static void test_s30_s35_flush(void *obj, void *data, QGuestAllocator *alloc)
{
    struct qrdma_sq_wqe w;
    QrdmaDpQp a, b;
    QrdmaDpEnv e;
    int i;

    qrdma_dp_env_init(&e, obj, alloc);
    g_assert_cmpuint(qrdma_dp_create_qp(&e, &a, QRDMA_QPT_RC, 0, &e.cq, &e.cq),
                     ==, 0);
    g_assert_cmpuint(qrdma_dp_create_qp(&e, &b, QRDMA_QPT_RC, 0, &e.cq, &e.cq),
                     ==, 0);
    qrdma_dp_to_rtr(&e, &a, b.qpn);
    /* RTR: sends wait; receives are taken */
    for (i = 0; i < 3; i++) {
        qrdma_dp_post_recv(&e, &a, 0x100 + i, e.data, 64, e.lkey);
        w = qrdma_dp_wqe_sge(0x200 + i, QRDMA_WR_SEND, e.data, 8, e.lkey);
        w.flags = 0;
        qrdma_dp_post_send(&e, &a, &w);
    }
    qrdma_dp_expect_no_cqe(&e, &e.cq);
    g_assert_cmpuint(qrdma_dp_modify_state(&e, &a, QRDMA_QPS_ERR), ==, 0);
    for (i = 0; i < 3; i++) {
        qrdma_dp_expect_cqe(&e, &e.cq, 0x200 + i, a.qpn, 0,
                            QRDMA_WC_WR_FLUSH_ERR);
    }
    for (i = 0; i < 3; i++) {
        qrdma_dp_expect_cqe(&e, &e.cq, 0x100 + i, a.qpn, QRDMA_WC_RECV,
                            QRDMA_WC_WR_FLUSH_ERR);
    }
    qrdma_dp_expect_no_cqe(&e, &e.cq);

    /* S35 */
    qrdma_dp_post_recv(&e, &a, 0x300, e.data, 64, e.lkey);
    qrdma_dp_expect_cqe(&e, &e.cq, 0x300, a.qpn, QRDMA_WC_RECV,
                        QRDMA_WC_WR_FLUSH_ERR);
    w = qrdma_dp_wqe_sge(0x301, QRDMA_WR_SEND, e.data, 8, e.lkey);
    qrdma_dp_post_send(&e, &a, &w);
    qrdma_dp_expect_cqe(&e, &e.cq, 0x301, a.qpn, 0, QRDMA_WC_WR_FLUSH_ERR);
}

/* S36, S37: RESET drops WRs without completions; the QP works again */
static void test_s36_s37_reset(void *obj, void *data, QGuestAllocator *alloc)
{
    struct qrdma_sq_wqe w;
    QrdmaDpQp a, b;
    QrdmaDpEnv e;

    qrdma_dp_env_init(&e, obj, alloc);
    g_assert_cmpuint(qrdma_dp_create_qp(&e, &a, QRDMA_QPT_RC, 0, &e.cq, &e.cq),
                     ==, 0);
    g_assert_cmpuint(qrdma_dp_create_qp(&e, &b, QRDMA_QPT_RC, 0, &e.cq, &e.cq),
                     ==, 0);
    qrdma_dp_to_rtr(&e, &a, b.qpn);
    qrdma_dp_post_recv(&e, &a, 0x100, e.data, 64, e.lkey);
    w = qrdma_dp_wqe_sge(0x200, QRDMA_WR_SEND, e.data, 8, e.lkey);
    qrdma_dp_post_send(&e, &a, &w);
    g_assert_cmpuint(qrdma_dp_modify_state(&e, &a, QRDMA_QPS_RESET), ==, 0);
    qrdma_dp_expect_no_cqe(&e, &e.cq);

    /* S37: ERR -> RESET -> INIT -> RTR -> RTS works again */
    a.sq_pi = a.rq_pi = 0;
    qrdma_dp_to_rtr(&e, &a, b.qpn);
    qrdma_dp_to_rtr(&e, &b, a.qpn);
    qrdma_dp_to_rts(&e, &a, 0);
    qrdma_dp_to_rts(&e, &b, 0);
    g_assert_cmpuint(qrdma_dp_modify_state(&e, &a, QRDMA_QPS_ERR), ==, 0);
    g_assert_cmpuint(qrdma_dp_modify_state(&e, &a, QRDMA_QPS_RESET), ==, 0);
    a.sq_pi = a.rq_pi = 0;
    qrdma_dp_to_rtr(&e, &a, b.qpn);
    qrdma_dp_to_rts(&e, &a, 0);
    qrdma_dp_post_recv(&e, &b, 0xb1, e.data + 4096, 64, e.lkey);
    qrdma_dp_write_data(&e, 0, "again");
    w = qrdma_dp_wqe_sge(0xa1, QRDMA_WR_SEND, e.data, 6, e.lkey);
    qrdma_dp_post_send(&e, &a, &w);
    qrdma_dp_expect_cqe(&e, &e.cq, 0xb1, b.qpn, QRDMA_WC_RECV,
                        QRDMA_WC_SUCCESS);
    qrdma_dp_expect_cqe(&e, &e.cq, 0xa1, a.qpn, QRDMA_WC_SEND,
                        QRDMA_WC_SUCCESS);
    qrdma_dp_expect_data(&e, 4096, "again");
}

/* S11, S12, S16: the recommended destroy sequence */
static void test_s11_s12_s16_destroy(void *obj, void *data,
                                     QGuestAllocator *alloc)
{
    struct qrdma_sq_wqe w;
    struct qrdma_cqe cqe;
    QrdmaDpQp a, b;
    QrdmaDpEnv e;
    int i;

    qrdma_dp_env_init(&e, obj, alloc);
    qrdma_dp_pair(&e, &a, &b, QRDMA_QPT_RC, 0);
    /* one completed, three outstanding receives */
    qrdma_dp_post_recv(&e, &b, 0xb0, e.data, 64, e.lkey);
    w = qrdma_dp_wqe_sge(0xa0, QRDMA_WR_SEND, e.data + 4096, 8, e.lkey);
    qrdma_dp_post_send(&e, &a, &w);
    for (i = 1; i < 4; i++) {
        qrdma_dp_post_recv(&e, &b, 0xb0 + i, e.data, 64, e.lkey);
    }
    /* S16: ERR, drain: every WR has exactly one completion */
    g_assert_cmpuint(qrdma_dp_modify_state(&e, &b, QRDMA_QPS_ERR), ==, 0);
    qrdma_dp_expect_cqe(&e, &e.cq, 0xb0, b.qpn, QRDMA_WC_RECV,
                        QRDMA_WC_SUCCESS);
    qrdma_dp_expect_cqe(&e, &e.cq, 0xa0, a.qpn, QRDMA_WC_SEND,
                        QRDMA_WC_SUCCESS);
    for (i = 1; i < 4; i++) {
        qrdma_dp_expect_cqe(&e, &e.cq, 0xb0 + i, b.qpn, QRDMA_WC_RECV,
                            QRDMA_WC_WR_FLUSH_ERR);
    }
    qrdma_dp_expect_no_cqe(&e, &e.cq);
    g_assert_cmpuint(qrdma_t_destroy(&e.t, QRDMA_CMD_DESTROY_QP, 0, b.qpn),
                     ==, 0);

    /* S11: WRs of a destroyed QP never run, nor touch their buffers */
    g_assert_cmpuint(qrdma_dp_create_qp(&e, &b, QRDMA_QPT_RC, 0, &e.cq, &e.cq),
                     ==, 0);
    qrdma_dp_to_rtr(&e, &b, a.qpn);
    qrdma_dp_post_recv(&e, &b, 0xc0, e.data + 4096 * 4, 64, e.lkey);
    qtest_writeq(e.t.qts, e.data + 4096 * 4, 0x5a5a5a5a);
    g_assert_cmpuint(qrdma_t_destroy(&e.t, QRDMA_CMD_DESTROY_QP, 0, b.qpn),
                     ==, 0);
    w = qrdma_dp_wqe_sge(0xa1, QRDMA_WR_SEND, e.data + 4096, 8, e.lkey);
    qrdma_dp_post_send(&e, &a, &w);
    /* the peer is gone: RC retries run out, nothing lands */
    qrdma_dp_expect_cqe_stepping(&e, &e.cq, 0xa1, a.qpn, QRDMA_WC_RETRY_EXC_ERR,
                                 100 * SCALE_MS, 20);
    qrdma_dp_expect_no_cqe(&e, &e.cq);
    g_assert_cmphex(qtest_readq(e.t.qts, e.data + 4096 * 4), ==, 0x5a5a5a5a);

    /* S12: CQEs of a destroyed QP stay pollable */
    qrdma_dp_pair(&e, &a, &b, QRDMA_QPT_RC, 0);
    qrdma_dp_post_recv(&e, &b, 0xd0, e.data, 64, e.lkey);
    w = qrdma_dp_wqe_sge(0xd1, QRDMA_WR_SEND, e.data + 4096, 8, e.lkey);
    qrdma_dp_post_send(&e, &a, &w);
    g_usleep(10000);
    g_assert_cmpuint(qrdma_t_destroy(&e.t, QRDMA_CMD_DESTROY_QP, 0, b.qpn),
                     ==, 0);
    g_assert_true(qrdma_dp_poll_cq(&e, &e.cq, &cqe));
    g_assert_cmphex(cqe.wr_id, ==, 0xd0);
}

/* S33, S34: SRQ-attached QP to ERR; the SRQ's WRs stay for the others */
static void test_s33_s34_srq(void *obj, void *data, QGuestAllocator *alloc)
{
    struct qrdma_cmd cmd = { .hdr.opcode = QRDMA_CMD_CREATE_SRQ };
    struct qrdma_rq_wqe r = { .num_sge = cpu_to_le32(1) };
    struct qrdma_cmpl cmpl;
    struct qrdma_sq_wqe w;
    uint64_t ring;
    uint32_t srq;
    QrdmaDpQp a, b, c;
    QrdmaDpEnv e;
    int i;

    qrdma_dp_env_init(&e, obj, alloc);
    ring = guest_alloc(alloc, 4096);
    cmd.srq.pd = cpu_to_le32(e.pd);
    cmd.srq.max_wr = cpu_to_le32(32);
    cmd.srq.max_sge = cpu_to_le32(1);
    cmd.srq.log2_entries = cpu_to_le32(5);
    cmd.srq.npages = cpu_to_le32(1);
    cmd.srq.pages_addr = cpu_to_le64(qrdma_dp_page_list1(&e, ring));
    g_assert_cmpuint(qrdma_t_exec(&e.t, &cmd, &cmpl), ==, 0);
    srq = le32_to_cpu(cmpl.handle);

    for (i = 0; i < 4; i++) {
        r.wr_id = 0x100 + i;
        r.sge[0].addr = cpu_to_le64(e.data + 4096 * (1 + i));
        r.sge[0].length = cpu_to_le32(64);
        r.sge[0].lkey = cpu_to_le32(e.lkey);
        qtest_memwrite(e.t.qts, ring + i * 128, &r, sizeof(r));
    }
    qrdma_dp_ring_db(&e, QRDMA_DB_SRQ, srq, 4);
    /* the SRQ limit: armed at 3, fires when fewer than 3 are left */
    memset(&cmd, 0, sizeof(cmd));
    cmd.hdr.opcode = QRDMA_CMD_MODIFY_SRQ;
    cmd.srq.srqn = cpu_to_le32(srq);
    cmd.srq.attr_mask = cpu_to_le32(QRDMA_SRQ_ATTR_LIMIT);
    cmd.srq.srq_limit = cpu_to_le32(3);
    g_assert_cmpuint(qrdma_t_exec(&e.t, &cmd, NULL), ==, 0);

    g_assert_cmpuint(qrdma_dp_create_qp(&e, &a, QRDMA_QPT_RC, 0, &e.cq, &e.cq),
                     ==, 0);
    g_assert_cmpuint(qrdma_dp_create_qp(&e, &b, QRDMA_QPT_RC, srq, &e.cq,
                                        &e.cq), ==, 0);
    g_assert_cmpuint(qrdma_dp_create_qp(&e, &c, QRDMA_QPT_RC, srq, &e.cq,
                                        &e.cq), ==, 0);
    qrdma_dp_to_rtr(&e, &a, b.qpn);
    qrdma_dp_to_rtr(&e, &b, a.qpn);
    qrdma_dp_to_rtr(&e, &c, a.qpn);
    qrdma_dp_to_rts(&e, &a, 0);
    qrdma_dp_to_rts(&e, &b, 0);

    w = qrdma_dp_wqe_sge(0xa0, QRDMA_WR_SEND, e.data, 8, e.lkey);
    qrdma_dp_post_send(&e, &a, &w);
    qrdma_dp_expect_cqe(&e, &e.cq, 0x100, b.qpn, QRDMA_WC_RECV,
                        QRDMA_WC_SUCCESS);
    qrdma_dp_expect_cqe(&e, &e.cq, 0xa0, a.qpn, QRDMA_WC_SEND,
                        QRDMA_WC_SUCCESS);
    w.wr_id = 0xa1;
    qrdma_dp_post_send(&e, &a, &w);
    qrdma_dp_expect_cqe(&e, &e.cq, 0x101, b.qpn, QRDMA_WC_RECV,
                        QRDMA_WC_SUCCESS);
    qrdma_dp_expect_cqe(&e, &e.cq, 0xa1, a.qpn, QRDMA_WC_SEND,
                        QRDMA_WC_SUCCESS);
    qrdma_dp_expect_event(&e, 0, QRDMA_EV_SRQ_LIMIT_REACHED, srq);

    /* S33: b to ERR: nothing of the SRQ's is flushed; LAST_WQE_REACHED */
    g_assert_cmpuint(qrdma_dp_modify_state(&e, &b, QRDMA_QPS_ERR), ==, 0);
    qrdma_dp_expect_event(&e, 0, QRDMA_EV_QP_LAST_WQE_REACHED, b.qpn);
    qrdma_dp_expect_no_cqe(&e, &e.cq);

    /* S34: c, on the same SRQ, takes what is left */
    g_assert_cmpuint(qrdma_dp_modify_state(&e, &a, QRDMA_QPS_RESET), ==, 0);
    a.sq_pi = a.rq_pi = 0;
    qrdma_dp_to_rtr(&e, &a, c.qpn);
    qrdma_dp_to_rts(&e, &a, 0);
    qrdma_dp_to_rts(&e, &c, 0);
    w.wr_id = 0xa2;
    qrdma_dp_post_send(&e, &a, &w);
    qrdma_dp_expect_cqe(&e, &e.cq, 0x102, c.qpn, QRDMA_WC_RECV,
                        QRDMA_WC_SUCCESS);
    qrdma_dp_expect_cqe(&e, &e.cq, 0xa2, a.qpn, QRDMA_WC_SEND,
                        QRDMA_WC_SUCCESS);
}

static void qrdma_dp_lifecycle_register_tests(void)
{
    qos_add_test("dp/s30-s35-flush", QRDMA_NODE_DP, test_s30_s35_flush, NULL);
    qos_add_test("dp/s36-s37-reset", QRDMA_NODE_DP, test_s36_s37_reset, NULL);
    qos_add_test("dp/s11-s12-s16-destroy", QRDMA_NODE_DP,
                 test_s11_s12_s16_destroy, NULL);
    qos_add_test("dp/s33-s34-srq", QRDMA_NODE_DP, test_s33_s34_srq, NULL);
}

libqos_init(qrdma_dp_lifecycle_register_tests);
