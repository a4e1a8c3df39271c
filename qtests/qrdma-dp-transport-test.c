/*
 * QTest testcase for the qrdma data path: RC transport on the loopback
 * fabric
 *
 * Copyright (c) 2026 The qrdma developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * Retransmission after the local ACK timeout and its retry budget,
 * packets of the path MTU, PSNs and their wrap, cumulative ACKs, and
 * READs in flight many at once.
 */

#include "qemu/osdep.h"
#include "qemu/module.h"
#include "qemu/timer.h"
#include "libqtest.h"
#include "qrdma-dp.h"

/* What a test that moves an RC QP to INIT and to RTR by hand gives. */
#define RC_INIT_MASK (QRDMA_QP_ATTR_STATE | QRDMA_QP_ATTR_PKEY_INDEX | \
                      QRDMA_QP_ATTR_PORT | QRDMA_QP_ATTR_ACCESS_FLAGS)
#define RC_RTR_MASK (QRDMA_QP_ATTR_STATE | QRDMA_QP_ATTR_AV | \
                     QRDMA_QP_ATTR_PATH_MTU | QRDMA_QP_ATTR_DEST_QPN | \
                     QRDMA_QP_ATTR_RQ_PSN | QRDMA_QP_ATTR_MAX_DEST_RD_ATOMIC | \
                     QRDMA_QP_ATTR_MIN_RNR_TIMER)

/*
 * An RC request that no responder answers is sent again after the local
 * ACK timeout.  The common race of connection set-up: the requester is in
 * RTS before its peer reaches RTR; the first send finds nobody, and the
 * retransmission after the timeout succeeds.
 */
static void test_rc_retry_late_rtr(void *obj, void *data,
                                   QGuestAllocator *alloc)
{
    struct qrdma_sq_wqe w;
    QrdmaDpEnv e;
    QrdmaDpQp a, b;

    qrdma_dp_env_init(&e, obj, alloc);
    g_assert_cmpuint(qrdma_dp_create_qp(&e, &a, QRDMA_QPT_RC, 0, &e.cq, &e.cq),
                     ==, 0);
    g_assert_cmpuint(qrdma_dp_create_qp(&e, &b, QRDMA_QPT_RC, 0, &e.cq, &e.cq),
                     ==, 0);
    qrdma_dp_to_rtr(&e, &a, b.qpn);
    qrdma_dp_to_rts(&e, &a, 0);
    g_assert_cmpuint(qrdma_dp_modify(&e, &b, RC_INIT_MASK,
                                     QRDMA_QPS_INIT, 0, 0),
                     ==, 0);
    qrdma_dp_write_data(&e, 0, "late");
    w = qrdma_dp_wqe_sge(0xc1, QRDMA_WR_SEND, e.data, 5, e.lkey);
    qrdma_dp_post_send(&e, &a, &w);
    /* Nobody answers yet: no completion until the timer fires. */
    qrdma_dp_expect_no_cqe(&e, &e.cq);
    g_assert_cmpuint(qrdma_dp_modify(&e, &b, RC_RTR_MASK,
                                     QRDMA_QPS_RTR, a.qpn, 0),
                     ==, 0);
    qrdma_dp_post_recv(&e, &b, 0xc2, e.data + 4096, 64, e.lkey);
    /* 4.096 us * 2^14 = 67 ms later the request goes again, and lands. */
    qrdma_dp_expect_cqe_stepping(&e, &e.cq, 0xc2, b.qpn, QRDMA_WC_SUCCESS,
                                 10 * SCALE_MS, 20);
    qrdma_dp_expect_cqe(&e, &e.cq, 0xc1, a.qpn, QRDMA_WC_SEND,
                        QRDMA_WC_SUCCESS);
    qrdma_dp_expect_data(&e, 4096, "late");
}

/* A fresh RC QP *a in RTS, connected to QPN dest, which nobody has. */
static void rc_to_nobody(QrdmaDpEnv *e, QrdmaDpQp *a, uint32_t dest)
{
    g_assert_cmpuint(qrdma_dp_create_qp(e, a, QRDMA_QPT_RC, 0, &e->cq, &e->cq),
                     ==, 0);
    qrdma_dp_to_rtr(e, a, dest);
    qrdma_dp_to_rts(e, a, 0);
}

/*
 * With nobody ever answering, the request is sent 1 + retry_cnt times and
 * fails RETRY_EXC_ERR when the last one times out: (1 + 3) * 4.19 ms for
 * timeout 10 and retry_cnt 3.  A move to ERR meanwhile flushes it instead,
 * and timeout 0 (no timer) waits for as long as it takes.
 */
static void test_rc_retry_budget(void *obj, void *data,
                                 QGuestAllocator *alloc)
{
    const int64_t t = 4096ll << 10;
    struct qrdma_sq_wqe w;
    int64_t took;
    QrdmaDpEnv e;
    QrdmaDpQp a;

    qrdma_dp_env_init(&e, obj, alloc);
    e.timeout = 10;
    e.retry_cnt = 3;
    rc_to_nobody(&e, &a, 0x7777);
    w = qrdma_dp_wqe_sge(0xc3, QRDMA_WR_SEND, e.data, 8, e.lkey);
    qrdma_dp_post_send(&e, &a, &w);
    took = qrdma_dp_expect_cqe_stepping(&e, &e.cq, 0xc3, a.qpn,
                                        QRDMA_WC_RETRY_EXC_ERR, SCALE_MS / 4,
                                        200);
    g_assert_cmpint(took, >=, 4 * t);
    g_assert_cmpint(took, <, 4 * t + SCALE_MS / 2);

    /* Outstanding when the QP goes to ERR: flushed, not a retry error. */
    g_assert_cmpuint(qrdma_t_destroy(&e.t, QRDMA_CMD_DESTROY_QP, 0, a.qpn),
                     ==, 0);
    rc_to_nobody(&e, &a, 0x7777);
    w.wr_id = 0xc4;
    qrdma_dp_post_send(&e, &a, &w);
    qtest_clock_step(e.t.qts, 2 * t);
    qrdma_dp_expect_no_cqe(&e, &e.cq);
    g_assert_cmpuint(qrdma_dp_modify_state(&e, &a, QRDMA_QPS_ERR), ==, 0);
    qrdma_dp_expect_cqe(&e, &e.cq, 0xc4, a.qpn, QRDMA_WC_SEND,
                        QRDMA_WC_WR_FLUSH_ERR);

    /* timeout 0: no timer, the request waits (an hour here). */
    g_assert_cmpuint(qrdma_t_destroy(&e.t, QRDMA_CMD_DESTROY_QP, 0, a.qpn),
                     ==, 0);
    e.timeout = 0;
    rc_to_nobody(&e, &a, 0x7777);
    w.wr_id = 0xc5;
    qrdma_dp_post_send(&e, &a, &w);
    qtest_clock_step(e.t.qts, 3600 * NANOSECONDS_PER_SECOND);
    qrdma_dp_expect_no_cqe(&e, &e.cq);
    g_assert_cmpuint(qrdma_dp_modify_state(&e, &a, QRDMA_QPS_ERR), ==, 0);
    qrdma_dp_expect_cqe(&e, &e.cq, 0xc5, a.qpn, QRDMA_WC_SEND,
                        QRDMA_WC_WR_FLUSH_ERR);
}

/*
 * A message goes as packets of the path MTU: a SEND of 3000 bytes from
 * three SGEs at MTU 256 is 12 request packets, placed across two receive
 * SGEs, and one ACK.  An RDMA READ of 1000 bytes is one request and four
 * response packets.
 */
static void test_packets_mtu(void *obj, void *data, QGuestAllocator *alloc)
{
    enum { LEN = 3000 };
    uint8_t src[LEN], got[LEN];
    struct qrdma_sq_wqe w;
    uint64_t sent;
    QrdmaDpEnv e;
    QrdmaDpQp a, b;
    int i;

    qrdma_dp_env_init(&e, obj, alloc);
    e.path_mtu = 1;
    for (i = 0; i < LEN; i++) {
        src[i] = i * 7 + 3;
    }
    qtest_memwrite(e.t.qts, e.data, src, LEN);
    qrdma_dp_pair(&e, &a, &b, QRDMA_QPT_RC, 0);
    {
        struct qrdma_rq_wqe r = {
            .wr_id = 0x71,
            .num_sge = cpu_to_le32(2),
            .sge[0].addr = cpu_to_le64(e.data + 8192),
            .sge[0].length = cpu_to_le32(1000),
            .sge[0].lkey = cpu_to_le32(e.lkey),
            .sge[1].addr = cpu_to_le64(e.data + 16384),
            .sge[1].length = cpu_to_le32(4096),
            .sge[1].lkey = cpu_to_le32(e.lkey),
        };

        qtest_memwrite(e.t.qts, b.rq, &r, sizeof(r));
        b.rq_pi++;
        qrdma_dp_ring_db(&e, QRDMA_DB_RQ, b.qpn, b.rq_pi);
    }
    w = qrdma_dp_wqe_sge(0x72, QRDMA_WR_SEND, e.data, 1000, e.lkey);
    w.num_sge = 3;
    w.sge[1].addr = cpu_to_le64(e.data + 1000);
    w.sge[1].length = cpu_to_le32(1);
    w.sge[1].lkey = cpu_to_le32(e.lkey);
    w.sge[2].addr = cpu_to_le64(e.data + 1001);
    w.sge[2].length = cpu_to_le32(LEN - 1001);
    w.sge[2].lkey = cpu_to_le32(e.lkey);
    sent = qrdma_t_qom_get(&e.t, "pkts-sent");
    qrdma_dp_post_send(&e, &a, &w);
    qrdma_dp_expect_cqe(&e, &e.cq, 0x71, b.qpn, QRDMA_WC_RECV,
                        QRDMA_WC_SUCCESS);
    qrdma_dp_expect_cqe(&e, &e.cq, 0x72, a.qpn, QRDMA_WC_SEND,
                        QRDMA_WC_SUCCESS);
    g_assert_cmpuint(qrdma_t_qom_get(&e.t, "pkts-sent") - sent, ==, 12 + 1);
    qtest_memread(e.t.qts, e.data + 8192, got, 1000);
    qtest_memread(e.t.qts, e.data + 16384, got + 1000, LEN - 1000);
    g_assert_cmpmem(got, LEN, src, LEN);

    /* READ the first 1000 bytes back, into page 8 */
    w = qrdma_dp_wqe_sge(0x73, QRDMA_WR_RDMA_READ, e.data + 4096 * 8, 1000,
                         e.lkey);
    w.rdma.remote_addr = cpu_to_le64(e.data);
    w.rdma.rkey = cpu_to_le32(e.rkey);
    sent = qrdma_t_qom_get(&e.t, "pkts-sent");
    qrdma_dp_post_send(&e, &a, &w);
    qrdma_dp_expect_cqe(&e, &e.cq, 0x73, a.qpn, QRDMA_WC_RDMA_READ,
                        QRDMA_WC_SUCCESS);
    g_assert_cmpuint(qrdma_t_qom_get(&e.t, "pkts-sent") - sent, ==, 1 + 4);
    qtest_memread(e.t.qts, e.data + 4096 * 8, got, 1000);
    g_assert_cmpmem(got, 1000, src, 1000);
}

/*
 * The requester's first PSN (sq_psn) and the responder's (rq_psn) must
 * agree.  When they do not, the responder answers the first packet ahead
 * of what it expects with one sequence NAK and drops the rest; the
 * request goes again after each timeout and fails RETRY_EXC_ERR, and the
 * responder carried out nothing.  PSNs wrap at 2^24.
 */
static void test_psn(void *obj, void *data, QGuestAllocator *alloc)
{
    const int64_t t = 4096ll << 10;
    struct qrdma_sq_wqe w;
    uint64_t naks, seq;
    QrdmaDpEnv e;
    QrdmaDpQp a, b;

    qrdma_dp_env_init(&e, obj, alloc);
    e.timeout = 10;
    e.retry_cnt = 2;
    /* just below the wrap: the SEND's 3 packets take 0xfffffe..0x000000 */
    e.path_mtu = 1;
    e.sq_psn = e.rq_psn = 0xfffffe;
    qrdma_dp_pair(&e, &a, &b, QRDMA_QPT_RC, 0);
    qrdma_dp_post_recv(&e, &b, 0x81, e.data + 8192, 1024, e.lkey);
    qrdma_dp_write_data(&e, 0, "wraps");
    w = qrdma_dp_wqe_sge(0x82, QRDMA_WR_SEND, e.data, 600, e.lkey);
    qrdma_dp_post_send(&e, &a, &w);
    qrdma_dp_expect_cqe(&e, &e.cq, 0x81, b.qpn, QRDMA_WC_RECV,
                        QRDMA_WC_SUCCESS);
    qrdma_dp_expect_cqe(&e, &e.cq, 0x82, a.qpn, QRDMA_WC_SEND,
                        QRDMA_WC_SUCCESS);
    qrdma_dp_expect_data(&e, 8192, "wraps");

    /* b expects PSN 0x100, a starts at 0x200 */
    e.sq_psn = 0x200;
    e.rq_psn = 0x100;
    qrdma_dp_pair(&e, &a, &b, QRDMA_QPT_RC, 0);
    qrdma_dp_post_recv(&e, &b, 0x83, e.data + 8192, 64, e.lkey);
    naks = qrdma_t_qom_get(&e.t, "seq-naks-sent");
    seq = qrdma_t_qom_get(&e.t, "out-of-seq");
    w.wr_id = 0x84;
    qrdma_dp_post_send(&e, &a, &w);
    qrdma_dp_expect_cqe_stepping(&e, &e.cq, 0x84, a.qpn, QRDMA_WC_RETRY_EXC_ERR,
                                 t / 2, 20);
    g_assert_cmpuint(qrdma_t_qom_get(&e.t, "seq-naks-sent") - naks, ==, 1);
    g_assert_cmpuint(qrdma_t_qom_get(&e.t, "out-of-seq") - seq, >=, 3);
    g_assert_cmpuint(qrdma_t_qom_get(&e.t, "retry-exceeded"), >=, 1);
    /* b's receive WQE was never taken: the flush of a's ERR is a's own */
    g_assert_cmpuint(qrdma_dp_modify_state(&e, &b, QRDMA_QPS_ERR), ==, 0);
    qrdma_dp_expect_cqe(&e, &e.cq, 0x83, b.qpn, QRDMA_WC_RECV,
                        QRDMA_WC_WR_FLUSH_ERR);
}

/*
 * ACKs are cumulative: unsignaled SENDs posted with one doorbell ask for
 * none of their own.  A memory work request after them waits for their
 * completion, which it asks for by sending the last of them again, asking
 * for an ACK: the responder's answer to that duplicate (it places nothing
 * twice) acknowledges all three, so the others need not go again.
 */
static void test_ack_coalescing(void *obj, void *data,
                                QGuestAllocator *alloc)
{
    struct qrdma_cmd cmd = { .hdr.opcode = QRDMA_CMD_ALLOC_MR };
    struct qrdma_cmpl cmpl;
    struct qrdma_sq_wqe w;
    uint64_t dups;
    uint32_t key;
    QrdmaDpEnv e;
    QrdmaDpQp a, b;
    int i;

    qrdma_dp_env_init(&e, obj, alloc);
    cmd.alloc_mr.pd = cpu_to_le32(e.pd);
    cmd.alloc_mr.max_pages = cpu_to_le32(2);
    g_assert_cmpuint(qrdma_t_exec(&e.t, &cmd, &cmpl), ==, 0);
    key = le32_to_cpu(cmpl.handle);
    qrdma_dp_pair(&e, &a, &b, QRDMA_QPT_RC, 0);
    for (i = 0; i < 3; i++) {
        qrdma_dp_post_recv(&e, &b, 0x90 + i, e.data + 8192 + 64 * i, 64,
                           e.lkey);
    }
    qrdma_dp_write_data(&e, 0, "coalesced");
    dups = qrdma_t_qom_get(&e.t, "dup-reqs");
    for (i = 0; i < 3; i++) {
        w = qrdma_dp_wqe_sge(0xa0 + i, QRDMA_WR_SEND, e.data, 10, e.lkey);
        w.flags = 0;
        qtest_memwrite(e.t.qts, a.sq + (a.sq_pi++ % 16) * QRDMA_SQ_WQE_SIZE,
                       &w, sizeof(w));
    }
    w = qrdma_dp_wqe_fast_reg(&e, 0xa3, key, QRDMA_ACCESS_LOCAL_WRITE);
    qtest_memwrite(e.t.qts, a.sq + (a.sq_pi++ % 16) * QRDMA_SQ_WQE_SIZE,
                   &w, sizeof(w));
    qrdma_dp_ring_db(&e, QRDMA_DB_SQ, a.qpn, a.sq_pi);
    for (i = 0; i < 3; i++) {
        qrdma_dp_expect_cqe(&e, &e.cq, 0x90 + i, b.qpn, QRDMA_WC_RECV,
                            QRDMA_WC_SUCCESS);
        qrdma_dp_expect_data(&e, 8192 + 64 * i, "coalesced");
    }
    qrdma_dp_expect_cqe(&e, &e.cq, 0xa3, a.qpn, QRDMA_WC_REG_MR,
                        QRDMA_WC_SUCCESS);
    qrdma_dp_expect_no_cqe(&e, &e.cq);
    g_assert_cmpuint(qrdma_t_qom_get(&e.t, "dup-reqs") - dups, ==, 1);
}

/* The READs of dp/read-pipeline: a ring's worth, all in flight at once */
#define READS 16

/*
 * READ i of READS on a: 64 bytes from data page 1 at i * 64 into page
 * 2 at i * 64, wr_id 0x100 + i; posted with one doorbell.
 */
static void reads_post(QrdmaDpEnv *e, QrdmaDpQp *a)
{
    uint32_t i;

    for (i = 0; i < READS; i++) {
        struct qrdma_sq_wqe w = qrdma_dp_wqe_sge(0x100 + i, QRDMA_WR_RDMA_READ,
                                                 e->data + 2 * 4096 + i * 64,
                                                 64, e->lkey);

        w.rdma.remote_addr = cpu_to_le64(e->data + 4096 + i * 64);
        w.rdma.rkey = cpu_to_le32(e->rkey);
        qtest_memwrite(e->t.qts, a->sq + (a->sq_pi++ % 16) * QRDMA_SQ_WQE_SIZE,
                       &w, sizeof(w));
    }
    qrdma_dp_ring_db(e, QRDMA_DB_SQ, a->qpn, a->sq_pi);
}

static void reads_source(QrdmaDpEnv *e)
{
    uint32_t i;

    for (i = 0; i < READS; i++) {
        g_autofree char *s = g_strdup_printf("read number %u", i);

        qrdma_dp_write_data(e, 4096 + i * 64, s);
    }
    qtest_memset(e->t.qts, e->data + 2 * 4096, 0, 2 * 4096);
}

/* Each READ's CQE after the first, in order, and its data where it said. */
static void reads_expect(QrdmaDpEnv *e, QrdmaDpQp *a)
{
    uint32_t i;

    for (i = 1; i < READS; i++) {
        qrdma_dp_expect_cqe(e, &e->cq, 0x100 + i, a->qpn, QRDMA_WC_RDMA_READ,
                            QRDMA_WC_SUCCESS);
    }
    qrdma_dp_expect_no_cqe(e, &e->cq);
    for (i = 0; i < READS; i++) {
        g_autofree char *s = g_strdup_printf("read number %u", i);

        qrdma_dp_expect_data(e, 2 * 4096 + i * 64, s);
    }
}

/*
 * READS RDMA READs in flight at once on one QP, posted with one
 * doorbell: the responses for the oldest come while the requester has
 * read the newest, and each lands where its WQE said.  Then the same with
 * the responder not there yet, and one WQE written over in the ring once
 * posted (its wr_id, its sink, its source): the READs go again after the
 * timeout, each as it was read when posted, and the ring is not read
 * again.
 */
static void test_read_pipeline(void *obj, void *data, QGuestAllocator *alloc)
{
    struct qrdma_sq_wqe w;
    QrdmaDpQp a, b, c, d;
    QrdmaDpEnv e;

    qrdma_dp_env_init(&e, obj, alloc);
    e.max_rd_atomic = READS;
    e.max_dest_rd_atomic = READS;
    qrdma_dp_pair(&e, &a, &b, QRDMA_QPT_RC, 0);
    reads_source(&e);
    reads_post(&e, &a);
    qrdma_dp_expect_cqe(&e, &e.cq, 0x100, a.qpn, QRDMA_WC_RDMA_READ,
                        QRDMA_WC_SUCCESS);
    reads_expect(&e, &a);

    e.timeout = 12;
    g_assert_cmpuint(qrdma_dp_create_qp(&e, &c, QRDMA_QPT_RC, 0, &e.cq, &e.cq),
                     ==, 0);
    g_assert_cmpuint(qrdma_dp_create_qp(&e, &d, QRDMA_QPT_RC, 0, &e.cq, &e.cq),
                     ==, 0);
    qrdma_dp_to_rtr(&e, &c, d.qpn);
    qrdma_dp_to_rts(&e, &c, 0);
    g_assert_cmpuint(qrdma_dp_modify(&e, &d, RC_INIT_MASK,
                                     QRDMA_QPS_INIT, 0, 0),
                     ==, 0);
    reads_source(&e);
    reads_post(&e, &c);
    qrdma_dp_expect_no_cqe(&e, &e.cq);
    w = qrdma_dp_wqe_sge(0xbad, QRDMA_WR_RDMA_READ, e.data + 3 * 4096, 64,
                         e.lkey);
    w.rdma.remote_addr = cpu_to_le64(e.data + 4096);
    w.rdma.rkey = cpu_to_le32(e.rkey);
    qtest_memwrite(e.t.qts, c.sq + 5 * QRDMA_SQ_WQE_SIZE, &w, sizeof(w));
    g_assert_cmpuint(qrdma_dp_modify(&e, &d, RC_RTR_MASK,
                                     QRDMA_QPS_RTR, c.qpn, 0),
                     ==, 0);
    /* 4.096 us * 2^12 = 17 ms later the READs go again, and are answered. */
    qrdma_dp_expect_cqe_stepping(&e, &e.cq, 0x100, c.qpn, QRDMA_WC_SUCCESS,
                                 5 * SCALE_MS, 20);
    reads_expect(&e, &c);
    g_assert_cmpuint(qtest_readq(e.t.qts, e.data + 3 * 4096), ==, 0);
}

static void qrdma_dp_transport_register_tests(void)
{
    qos_add_test("dp/rc-retry-late-rtr", QRDMA_NODE_DP, test_rc_retry_late_rtr,
                 NULL);
    qos_add_test("dp/rc-retry-budget", QRDMA_NODE_DP,
                 test_rc_retry_budget, NULL);
    qos_add_test("dp/packets-mtu", QRDMA_NODE_DP, test_packets_mtu, NULL);
    qos_add_test("dp/psn", QRDMA_NODE_DP, test_psn, NULL);
    qos_add_test("dp/ack-coalescing", QRDMA_NODE_DP, test_ack_coalescing, NULL);
    qos_add_test("dp/read-pipeline", QRDMA_NODE_DP, test_read_pipeline, NULL);
}

libqos_init(qrdma_dp_transport_register_tests);
