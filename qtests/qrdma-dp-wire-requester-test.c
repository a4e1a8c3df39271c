/*
 * QTest testcase for the qrdma data path: the requester on the wire
 *
 * Copyright (c) 2026 The qrdma developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * The test relays the frames between two functions (qrdma-dp.h) and loses,
 * holds back, repeats or rewrites some: the requester's READ and atomic
 * limit, its retries after timeouts, gaps and NAKs, late and stale
 * answers, RNR NAKs, a peer that stalls or goes away.
 */

#include "qemu/osdep.h"
#include "qemu/module.h"
#include "qemu/timer.h"
#include "libqtest.h"
#include "qrdma-dp.h"

/* The RETH's DMA length in a frame of IPv4: Ethernet, IP, UDP, BTH, RETH. */
#define WIRE_RETH_LEN (14 + 20 + 8 + 12 + 12)

/*
 * The requester keeps no more READs and atomics in flight than
 * max_rd_atomic, the responder resources its peer said it has: with 1,
 * three READs posted together go one at a time, the next only when the
 * response of the one before has come.
 */
static void test_wire_rd_atomic_limit(void *obj, void *data,
                                      QGuestAllocator *alloc)
{
    int *sv = data;
    struct qrdma_sq_wqe w;
    uint8_t ops[8];
    QQrdma q1;
    QrdmaDpEnv e0, e1;
    QrdmaDpQp a, b;
    int i, k;

    qrdma_dp_wire_envs(obj, alloc, &q1, &e0, &e1);
    e0.max_rd_atomic = 1;
    qrdma_dp_connect_rc(&e0, &a, &e1, &b, true);
    qrdma_dp_write_data(&e1, 4096 * 9, "read me");
    for (i = 0; i < 3; i++) {
        w = qrdma_dp_wqe_sge(0xb1 + i, QRDMA_WR_RDMA_READ,
                             e0.data + 4096 * (4 + i), 2048, e0.lkey);
        w.rdma.remote_addr = cpu_to_le64(e1.data + 4096 * 9);
        w.rdma.rkey = cpu_to_le32(e1.rkey);
        qtest_memwrite(e0.t.qts, a.sq + (a.sq_pi % 16) * QRDMA_SQ_WQE_SIZE,
                       &w, sizeof(w));
        a.sq_pi++;
    }
    qrdma_dp_ring_db(&e0, QRDMA_DB_SQ, a.qpn, a.sq_pi);
    for (i = 0; i < 3; i++) {
        k = qrdma_dp_relay(sv[0], sv[2], 1, ops);
        g_assert_cmpint(k, ==, 1);
        g_assert_cmphex(ops[0], ==, 0x0c);              /* READ_REQ */
        g_assert_true(qrdma_dp_relay_quiet(sv[0]));
        k = qrdma_dp_relay(sv[2], sv[0], 2, ops);
        g_assert_cmpint(k, ==, 2);
        g_assert_cmphex(ops[0], ==, 0x0d);
        g_assert_cmphex(ops[1], ==, 0x0f);
        qrdma_dp_expect_cqe(&e0, &e0.cq, 0xb1 + i, a.qpn, QRDMA_WC_RDMA_READ,
                            QRDMA_WC_SUCCESS);
        qrdma_dp_expect_data(&e0, 4096 * (4 + i), "read me");
    }
    g_assert_true(qrdma_dp_relay_quiet(sv[0]));
}

/*
 * A READ whose responses are lost after the first is asked for again when
 * the ACK timer fires, from the first lost response on: the second and
 * third come, placed where they belong.  And each response is progress:
 * responses that come slowly, but each within the timeout of the one
 * before, send nothing again, though together they take longer than the
 * timeout.  With max_rd_atomic 1, as rping has it: the READ that goes
 * again is the one already counted against the responder's resources,
 * not one more.
 */
static void test_wire_read_retry(void *obj, void *data,
                                 QGuestAllocator *alloc)
{
    enum { LEN = 3000 };
    int *sv = data;
    uint8_t src[LEN], got[LEN], f[QRDMA_DP_WIRE_FRAME_MAX], ops[8];
    struct qrdma_sq_wqe w;
    uint64_t retx, rcvd;
    QQrdma q1;
    QrdmaDpEnv e0, e1;
    QrdmaDpQp a, b;
    size_t n;
    int i;

    qrdma_dp_wire_envs(obj, alloc, &q1, &e0, &e1);
    e0.timeout = 10;                    /* 4.2 ms of the virtual clock */
    e0.max_rd_atomic = 1;
    qrdma_dp_connect_rc(&e0, &a, &e1, &b, true);
    for (i = 0; i < LEN; i++) {
        src[i] = i * 29 + 1;
    }
    qtest_memwrite(e1.t.qts, e1.data + 4096 * 2, src, LEN);
    retx = qrdma_t_qom_get(&e0.t, "retransmits");

    w = qrdma_dp_wqe_sge(0xa1, QRDMA_WR_RDMA_READ, e0.data + 4096 * 4, LEN,
                         e0.lkey);
    w.rdma.remote_addr = cpu_to_le64(e1.data + 4096 * 2);
    w.rdma.rkey = cpu_to_le32(e1.rkey);
    qrdma_dp_post_send(&e0, &a, &w);
    g_assert_cmpint(qrdma_dp_relay(sv[0], sv[2], 1, ops), ==, 1);
    g_assert_cmphex(ops[0], ==, 0x0c);
    /* the first of three responses arrives, the others are lost */
    n = qrdma_dp_wire_recv(sv[2], f);
    g_assert_cmphex(qrdma_dp_wire_check_frame(f, n), ==, 0x0d);
    rcvd = qrdma_t_qom_get(&e0.t, "pkts-rcvd");
    qrdma_dp_wire_send(sv[0], f, n);
    /* in before the clock moves: QEMU reads the socket when it can */
    qrdma_dp_wire_expect_count(&e0, "pkts-rcvd", rcvd + 1);
    qrdma_dp_wire_drain(sv[2]);
    qrdma_dp_expect_no_cqe(&e0, &e0.cq);

    /* the timer fires: the READ goes again for the rest, two responses */
    qtest_clock_step(e0.t.qts, 5 * SCALE_MS);
    n = qrdma_dp_wire_recv(sv[0], f);
    g_assert_cmphex(qrdma_dp_wire_check_frame(f, n), ==, 0x0c);
    g_assert_cmpuint(ldl_be_p(f + WIRE_RETH_LEN), ==, LEN - 1024);
    qrdma_dp_wire_send(sv[2], f, n);
    /* the rest of the first answer: MIDDLE, LAST, as rxe expects */
    g_assert_cmpint(qrdma_dp_relay(sv[2], sv[0], 2, ops), ==, 2);
    g_assert_cmphex(ops[0], ==, 0x0e);
    g_assert_cmphex(ops[1], ==, 0x0f);
    qrdma_dp_expect_cqe(&e0, &e0.cq, 0xa1, a.qpn, QRDMA_WC_RDMA_READ,
                        QRDMA_WC_SUCCESS);
    g_assert_cmpuint(qrdma_t_qom_get(&e0.t, "retransmits") - retx, ==, 1);
    qtest_memread(e0.t.qts, e0.data + 4096 * 4, got, LEN);
    g_assert_cmpmem(got, LEN, src, LEN);

    /* slow: 3 ms between responses, 9 ms in all, against 4.2 ms */
    w = qrdma_dp_wqe_sge(0xa2, QRDMA_WR_RDMA_READ, e0.data + 4096 * 8, LEN,
                         e0.lkey);
    w.rdma.remote_addr = cpu_to_le64(e1.data + 4096 * 2);
    w.rdma.rkey = cpu_to_le32(e1.rkey);
    qrdma_dp_post_send(&e0, &a, &w);
    g_assert_cmpint(qrdma_dp_relay(sv[0], sv[2], 1, ops), ==, 1);
    for (i = 0; i < 3; i++) {
        qtest_clock_step(e0.t.qts, 3 * SCALE_MS);
        rcvd = qrdma_t_qom_get(&e0.t, "pkts-rcvd");
        g_assert_cmpint(qrdma_dp_relay(sv[2], sv[0], 1, ops), ==, 1);
        qrdma_dp_wire_expect_count(&e0, "pkts-rcvd", rcvd + 1);
    }
    qrdma_dp_expect_cqe(&e0, &e0.cq, 0xa2, a.qpn, QRDMA_WC_RDMA_READ,
                        QRDMA_WC_SUCCESS);
    g_assert_cmpuint(qrdma_t_qom_get(&e0.t, "retransmits") - retx, ==, 1);
    g_assert_true(qrdma_dp_relay_quiet(sv[0]));
    qtest_memread(e0.t.qts, e0.data + 4096 * 8, got, LEN);
    g_assert_cmpmem(got, LEN, src, LEN);
}

/*
 * A lost READ response is asked for again as soon as a later answer shows
 * the gap, not when the ACK timer fires: two READs go, the middle response
 * of the first is lost, and the last response of the first sends both
 * again at once, the first for its last two responses only.  The answers
 * still on their way send nothing more.
 */
static void test_wire_read_gap(void *obj, void *data, QGuestAllocator *alloc)
{
    enum { LEN = 3000 };
    static const uint8_t want[6] = { 0x0d, 0x0e, 0x0f, 0x0d, 0x0e, 0x0f };
    static uint8_t f[6][QRDMA_DP_WIRE_FRAME_MAX];
    int *sv = data;
    uint8_t src[LEN], got[LEN], ops[8];
    struct qrdma_sq_wqe w;
    uint64_t retx, rcvd;
    size_t n[6];
    QQrdma q1;
    QrdmaDpEnv e0, e1;
    QrdmaDpQp a, b;
    int i;

    qrdma_dp_wire_envs(obj, alloc, &q1, &e0, &e1);
    qrdma_dp_connect_rc(&e0, &a, &e1, &b, true);
    for (i = 0; i < LEN; i++) {
        src[i] = i * 31 + 7;
    }
    qtest_memwrite(e1.t.qts, e1.data + 4096 * 2, src, LEN);
    retx = qrdma_t_qom_get(&e0.t, "retransmits");

    for (i = 0; i < 2; i++) {
        w = qrdma_dp_wqe_sge(0xa1 + i, QRDMA_WR_RDMA_READ,
                             e0.data + 4096 * (4 + 4 * i), LEN, e0.lkey);
        w.rdma.remote_addr = cpu_to_le64(e1.data + 4096 * 2);
        w.rdma.rkey = cpu_to_le32(e1.rkey);
        qrdma_dp_post_send(&e0, &a, &w);
    }
    g_assert_cmpint(qrdma_dp_relay(sv[0], sv[2], 2, ops), ==, 2);
    g_assert_cmphex(ops[0], ==, 0x0c);
    g_assert_cmphex(ops[1], ==, 0x0c);
    for (i = 0; i < 6; i++) {
        n[i] = qrdma_dp_wire_recv(sv[2], f[i]);
        g_assert_cmphex(qrdma_dp_wire_check_frame(f[i], n[i]), ==, want[i]);
    }
    /* the first READ's middle response is lost */
    rcvd = qrdma_t_qom_get(&e0.t, "pkts-rcvd");
    qrdma_dp_wire_send(sv[0], f[0], n[0]);
    for (i = 2; i < 6; i++) {
        qrdma_dp_wire_send(sv[0], f[i], n[i]);
    }
    qrdma_dp_wire_expect_count(&e0, "pkts-rcvd", rcvd + 5);

    /* both READs went again, once, with the clock standing still */
    for (i = 0; i < 2; i++) {
        n[i] = qrdma_dp_wire_recv(sv[0], f[i]);
        g_assert_cmphex(qrdma_dp_wire_check_frame(f[i], n[i]), ==, 0x0c);
    }
    g_assert_cmpuint(ldl_be_p(f[0] + WIRE_RETH_LEN), ==, LEN - 1024);
    g_assert_cmpuint(ldl_be_p(f[1] + WIRE_RETH_LEN), ==, LEN);
    g_assert_true(qrdma_dp_relay_quiet(sv[0]));
    g_assert_cmpuint(qrdma_t_qom_get(&e0.t, "retransmits") - retx, ==, 1);
    qrdma_dp_expect_no_cqe(&e0, &e0.cq);

    for (i = 0; i < 2; i++) {
        qrdma_dp_wire_send(sv[2], f[i], n[i]);
    }
    g_assert_cmpint(qrdma_dp_relay(sv[2], sv[0], 5, ops), ==, 5);
    g_assert_cmphex(ops[0], ==, 0x0e);  /* the first READ's rest */
    g_assert_cmphex(ops[1], ==, 0x0f);
    for (i = 0; i < 2; i++) {
        qrdma_dp_expect_cqe(&e0, &e0.cq, 0xa1 + i, a.qpn, QRDMA_WC_RDMA_READ,
                            QRDMA_WC_SUCCESS);
        qtest_memread(e0.t.qts, e0.data + 4096 * (4 + 4 * i), got, LEN);
        g_assert_cmpmem(got, LEN, src, LEN);
    }
    g_assert_cmpuint(qrdma_t_qom_get(&e0.t, "retransmits") - retx, ==, 1);
    g_assert_true(qrdma_dp_relay_quiet(sv[0]));
}

/*
 * Go-back-N does not forget what went before: three SENDs go, their ACKs
 * are late, the timer fires and they go again; the late ACKs then
 * complete all three, and once they are answered the requester sends no
 * more.
 */
static void test_wire_late_ack(void *obj, void *data, QGuestAllocator *alloc)
{
    int *sv = data;
    static uint8_t ack[3][QRDMA_DP_WIRE_FRAME_MAX];
    uint8_t f[QRDMA_DP_WIRE_FRAME_MAX], ops[8];
    struct qrdma_sq_wqe w;
    size_t n, ack_len[3];
    uint64_t rcvd;
    QQrdma q1;
    QrdmaDpEnv e0, e1;
    QrdmaDpQp a, b;
    int i;

    qrdma_dp_wire_envs(obj, alloc, &q1, &e0, &e1);
    e0.timeout = 10;                    /* 4.2 ms of the virtual clock */
    qrdma_dp_connect_rc(&e0, &a, &e1, &b, true);
    for (i = 0; i < 3; i++) {
        qrdma_dp_post_recv(&e1, &b, 0xb1 + i, e1.data + 64 * i, 64, e1.lkey);
    }
    for (i = 0; i < 3; i++) {
        w = qrdma_dp_wqe_sge(0xa1 + i, QRDMA_WR_SEND, e0.data, 16, e0.lkey);
        qtest_memwrite(e0.t.qts, a.sq + (a.sq_pi % 16) * QRDMA_SQ_WQE_SIZE,
                       &w, sizeof(w));
        a.sq_pi++;
    }
    qrdma_dp_ring_db(&e0, QRDMA_DB_SQ, a.qpn, a.sq_pi);
    g_assert_cmpint(qrdma_dp_relay(sv[0], sv[2], 3, ops), ==, 3);
    for (i = 0; i < 3; i++) {
        qrdma_dp_expect_cqe(&e1, &e1.cq, 0xb1 + i, b.qpn, QRDMA_WC_RECV,
                            QRDMA_WC_SUCCESS);
    }
    /* their ACKs, held back */
    for (i = 0; i < 3; i++) {
        ack_len[i] = qrdma_dp_wire_recv(sv[2], ack[i]);
        g_assert_cmphex(qrdma_dp_wire_check_frame(ack[i], ack_len[i]), ==,
                        0x11);
    }

    /* the timer fires: the first goes again */
    qtest_clock_step(e0.t.qts, 5 * SCALE_MS);
    n = qrdma_dp_wire_recv(sv[0], f);
    g_assert_cmphex(qrdma_dp_wire_check_frame(f, n), ==, 0x04);
    /* the late ACKs complete the three */
    rcvd = qrdma_t_qom_get(&e0.t, "pkts-rcvd");
    for (i = 0; i < 3; i++) {
        qrdma_dp_wire_send(sv[0], ack[i], ack_len[i]);
    }
    qrdma_dp_wire_expect_count(&e0, "pkts-rcvd", rcvd + 3);
    for (i = 0; i < 3; i++) {
        qrdma_dp_expect_cqe(&e0, &e0.cq, 0xa1 + i, a.qpn, QRDMA_WC_SEND,
                            QRDMA_WC_SUCCESS);
    }
    /* what the retry sent before the ACK came is all it sends */
    qrdma_dp_wire_drain(sv[0]);
    qtest_clock_step(e0.t.qts, 20 * SCALE_MS);
    g_assert_true(qrdma_dp_relay_quiet(sv[0]));
}

/* A copy of an answer, made to say otherwise. */
static void wire_forge_aeth(uint8_t *f, size_t n, uint32_t psn,
                            uint8_t syndrome)
{
    stl_be_p(f + QRDMA_DP_WIRE_BTH + 8, psn);
    f[QRDMA_DP_WIRE_BTH + 12] = syndrome;
    qrdma_dp_wire_set_icrc(f, n);
}

/*
 * A NAK names the packet in error, which may be any packet of a message,
 * not only its first: the requester takes it all the same.  An RNR NAK of
 * a WRITE_LAST_WITH_IMM (as rxe's responder sends, wanting a receive only
 * there) sends that packet again after the RNR timer, and it alone; a
 * remote access NAK of a WRITE's MIDDLE fails the WRITE at once; and a
 * receive buffer that overflows at SEND_LAST (a qrdma responder's NAK)
 * fails the SEND with REM_INV_REQ_ERR, not RETRY_EXC_ERR.
 */
static void test_wire_nak_mid_message(void *obj, void *data,
                                      QGuestAllocator *alloc)
{
    enum { LEN = 3000 };
    int *sv = data;
    uint8_t ack[QRDMA_DP_WIRE_FRAME_MAX], f[QRDMA_DP_WIRE_FRAME_MAX];
    uint8_t mid[QRDMA_DP_WIRE_FRAME_MAX];
    uint8_t ops[8];
    struct qrdma_sq_wqe w;
    uint32_t last;
    size_t n, ack_len;
    QQrdma q1;
    QrdmaDpEnv e0, e1;
    QrdmaDpQp a, b;
    int i;

    qrdma_dp_wire_envs(obj, alloc, &q1, &e0, &e1);
    qrdma_dp_rc_to_rtr(&e0, &a, &e1, &b);
    qrdma_dp_to_rts(&e0, &a, 7);
    qrdma_dp_to_rts(&e1, &b, 7);

    /* WRITE_WITH_IMM in three packets; its ACK becomes an RNR NAK */
    qrdma_dp_post_recv(&e1, &b, 0xb1, e1.data, 64, e1.lkey);
    w = qrdma_dp_wqe_sge(0xa1, QRDMA_WR_RDMA_WRITE_WITH_IMM, e0.data, LEN,
                         e0.lkey);
    w.rdma.remote_addr = cpu_to_le64(e1.data + 4096 * 4);
    w.rdma.rkey = cpu_to_le32(e1.rkey);
    qrdma_dp_post_send(&e0, &a, &w);
    g_assert_cmpint(qrdma_dp_relay(sv[0], sv[2], 3, ops), ==, 3);
    g_assert_cmphex(ops[2], ==, 0x09);          /* RDMA_WRITE_LAST_WITH_IMM */
    qrdma_dp_expect_cqe(&e1, &e1.cq, 0xb1, b.qpn, QRDMA_WC_RECV_RDMA_WITH_IMM,
                        QRDMA_WC_SUCCESS);
    ack_len = qrdma_dp_wire_recv(sv[2], ack);
    g_assert_cmphex(qrdma_dp_wire_check_frame(ack, ack_len), ==, 0x11);
    last = qrdma_dp_wire_psn(ack);
    memcpy(f, ack, ack_len);
    wire_forge_aeth(f, ack_len, last, 0x20 | 1);    /* RNR NAK, 10 us */
    qrdma_dp_wire_send(sv[0], f, ack_len);
    qrdma_dp_wire_expect_count(&e0, "rnr-naks-rcvd", 1);
    qrdma_dp_expect_no_cqe(&e0, &e0.cq);
    qtest_clock_step(e0.t.qts, SCALE_MS);
    n = qrdma_dp_wire_recv(sv[0], f);
    g_assert_cmphex(qrdma_dp_wire_check_frame(f, n), ==, 0x09);
    g_assert_cmphex(qrdma_dp_wire_psn(f), ==, last);
    g_assert_true(qrdma_dp_relay_quiet(sv[0]));
    /* the ACK it would have had in the first place */
    qrdma_dp_wire_send(sv[0], ack, ack_len);
    qrdma_dp_expect_cqe(&e0, &e0.cq, 0xa1, a.qpn, QRDMA_WC_RDMA_WRITE,
                        QRDMA_WC_SUCCESS);

    /* a WRITE whose MIDDLE is refused: REM_ACCESS_ERR, no clock needed */
    w = qrdma_dp_wqe_sge(0xa2, QRDMA_WR_RDMA_WRITE, e0.data, LEN, e0.lkey);
    w.rdma.remote_addr = cpu_to_le64(e1.data + 4096 * 8);
    w.rdma.rkey = cpu_to_le32(e1.rkey);
    qrdma_dp_post_send(&e0, &a, &w);
    for (i = 0; i < 3; i++) {
        n = qrdma_dp_wire_recv(sv[0], f);
        g_assert_cmphex(qrdma_dp_wire_check_frame(f, n), ==, 0x06 + i);
        if (i == 1) {
            memcpy(mid, f, n);
        }
    }
    memcpy(f, ack, ack_len);
    wire_forge_aeth(f, ack_len, qrdma_dp_wire_psn(mid), 0x60 | 2);
    qrdma_dp_wire_send(sv[0], f, ack_len);
    qrdma_dp_expect_cqe(&e0, &e0.cq, 0xa2, a.qpn, QRDMA_WC_RDMA_WRITE,
                        QRDMA_WC_REM_ACCESS_ERR);
    qrdma_dp_wire_drain(sv[0]);

    /* a receive of 2500 bytes for a SEND of 3000: NAKed at SEND_LAST */
    qrdma_dp_connect_rc(&e0, &a, &e1, &b, true);
    qrdma_dp_post_recv(&e1, &b, 0xb3, e1.data, 2500, e1.lkey);
    w = qrdma_dp_wqe_sge(0xa3, QRDMA_WR_SEND, e0.data, LEN, e0.lkey);
    qrdma_dp_post_send(&e0, &a, &w);
    for (i = 0; i < 3; i++) {
        n = qrdma_dp_wire_recv(sv[0], f);
        g_assert_cmphex(qrdma_dp_wire_check_frame(f, n), ==, i);    /* SEND_* */
        last = qrdma_dp_wire_psn(f);
        qrdma_dp_wire_send(sv[2], f, n);
    }
    qrdma_dp_expect_cqe(&e1, &e1.cq, 0xb3, b.qpn, QRDMA_WC_RECV,
                        QRDMA_WC_LOC_LEN_ERR);
    n = qrdma_dp_wire_recv(sv[2], f);
    g_assert_cmphex(qrdma_dp_wire_check_frame(f, n), ==, 0x11);
    /* NAK: invalid req */
    g_assert_cmphex(f[QRDMA_DP_WIRE_BTH + 12], ==, 0x60 | 1);
    g_assert_cmphex(qrdma_dp_wire_psn(f), ==, last);
    qrdma_dp_wire_send(sv[0], f, n);
    qrdma_dp_expect_cqe(&e0, &e0.cq, 0xa3, a.qpn, QRDMA_WC_SEND,
                        QRDMA_WC_REM_INV_REQ_ERR);
    qrdma_dp_wire_drain(sv[0]);
    qrdma_dp_wire_drain(sv[2]);
}

/*
 * The answer to a READ or an atomic comes for a WQE whose ring slot the
 * guest rewrote after it went out (too many SGEs), while the completer
 * holds the SEND after it too.  The WQE is not read again: the answer
 * lands where the WQE said when it was posted, not in the local buffer of
 * the SEND (whose source is in an MR without local write, deregistered
 * meanwhile or not), and both complete.
 */
static void stale_answer(QrdmaDpEnv *e0, QrdmaDpEnv *e1, int *sv,
                         uint8_t opcode, bool dereg)
{
    static const char pattern[] = "the SEND's source, never written";
    uint8_t ops[8], wc = opcode == QRDMA_WR_RDMA_READ ? QRDMA_WC_RDMA_READ :
                                                         QRDMA_WC_FETCH_ADD;
    struct qrdma_sq_wqe w[2];
    uint32_t x;
    QrdmaDpQp a, b;
    int i;

    qrdma_dp_connect_rc(e0, &a, e1, &b, true);
    x = qrdma_dp_reg_mr(e0, e0->pd, 4096 * 6, 4096, 0);
    qrdma_dp_write_data(e0, 4096 * 6, pattern);
    qtest_writeq(e0->t.qts, e0->data + 4096 * 10, 0);
    qtest_writeq(e1->t.qts, e1->data + 4096 * 9, 40);
    qrdma_dp_post_recv(e1, &b, 0xb1, e1->data, 64, e1->lkey);
    w[0] = qrdma_dp_wqe_sge(0xa1, opcode, e0->data + 4096 * 10, 8, e0->lkey);
    w[0].rdma.remote_addr = cpu_to_le64(e1->data + 4096 * 9);
    w[0].rdma.rkey = cpu_to_le32(e1->rkey);
    w[0].rdma.compare_add = cpu_to_le64(2);
    w[1] =
        qrdma_dp_wqe_sge(0xa2, QRDMA_WR_SEND, 0x10000000, sizeof(pattern), x);
    for (i = 0; i < 2; i++) {
        qtest_memwrite(e0->t.qts, a.sq + (a.sq_pi % 16) * QRDMA_SQ_WQE_SIZE,
                       &w[i], sizeof(w[i]));
        a.sq_pi++;
    }
    qrdma_dp_ring_db(e0, QRDMA_DB_SQ, a.qpn, a.sq_pi);
    g_assert_cmpint(qrdma_dp_relay(sv[0], sv[2], 2, ops), ==, 2);
    g_assert_cmphex(ops[1], ==, 0x04);                  /* SEND_ONLY */
    qrdma_dp_expect_cqe(e1, &e1->cq, 0xb1, b.qpn, QRDMA_WC_RECV,
                        QRDMA_WC_SUCCESS);

    /* both went out; the first slot is rewritten, X perhaps deregistered */
    w[0].num_sge = QRDMA_MAX_SEND_SGE + 1;
    qtest_memwrite(e0->t.qts, a.sq, &w[0], sizeof(w[0]));
    if (dereg) {
        g_assert_cmpuint(qrdma_t_destroy(&e0->t, QRDMA_CMD_DEREG_MR, 0, x),
                         ==, QRDMA_STATUS_OK);
    }
    /* the answer (ATOMIC_ACK or READ_RESPONSE_ONLY) and the SEND's ACK */
    g_assert_cmpint(qrdma_dp_relay(sv[2], sv[0], 2, ops), ==, 2);
    g_assert_cmphex(ops[0], ==,
                    opcode == QRDMA_WR_RDMA_READ ? 0x10 : 0x12);
    qrdma_dp_expect_cqe(e0, &e0->cq, 0xa1, a.qpn, wc, QRDMA_WC_SUCCESS);
    qrdma_dp_expect_cqe(e0, &e0->cq, 0xa2, a.qpn, QRDMA_WC_SEND,
                        QRDMA_WC_SUCCESS);
    g_assert_cmpuint(qtest_readq(e0->t.qts, e0->data + 4096 * 10), ==, 40);
    qrdma_dp_expect_data(e0, 4096 * 6, pattern);
    if (!dereg) {
        g_assert_cmpuint(qrdma_t_destroy(&e0->t, QRDMA_CMD_DEREG_MR, 0, x),
                         ==, QRDMA_STATUS_OK);
    }
}

static void test_wire_stale_answer(void *obj, void *data,
                                   QGuestAllocator *alloc)
{
    QQrdma q1;
    QrdmaDpEnv e0, e1;

    qrdma_dp_wire_envs(obj, alloc, &q1, &e0, &e1);
    stale_answer(&e0, &e1, data, QRDMA_WR_ATOMIC_FETCH_AND_ADD, true);
    stale_answer(&e0, &e1, data, QRDMA_WR_ATOMIC_FETCH_AND_ADD, false);
    stale_answer(&e0, &e1, data, QRDMA_WR_RDMA_READ, false);
    stale_answer(&e0, &e1, data, QRDMA_WR_RDMA_READ, true);
    qrdma_dp_expect_no_cqe(&e0, &e0.cq);
}

/*
 * A SEND of three packets loses its middle one: the responder NAKs its
 * PSN, and the requester sends again from there, MIDDLE and LAST, not
 * the whole message; the data lands whole and once.  The ACK timeout is
 * never needed: the clock does not move.
 */
static void test_wire_nak_resume(void *obj, void *data,
                                 QGuestAllocator *alloc)
{
    enum { LEN = 3000 };
    int *sv = data;
    uint8_t src[LEN], got[LEN], f[3][QRDMA_DP_WIRE_FRAME_MAX], ops[8];
    size_t n[3];
    struct qrdma_sq_wqe w;
    QQrdma q1;
    QrdmaDpEnv e0, e1;
    QrdmaDpQp a, b;
    int i;

    qrdma_dp_wire_envs(obj, alloc, &q1, &e0, &e1);
    qrdma_dp_connect_rc(&e0, &a, &e1, &b, true);
    for (i = 0; i < LEN; i++) {
        src[i] = i * 31 + 7;
    }
    qtest_memwrite(e0.t.qts, e0.data, src, LEN);
    qrdma_dp_post_recv(&e1, &b, 0xb1, e1.data + 4096, 4096, e1.lkey);
    w = qrdma_dp_wqe_sge(0xa1, QRDMA_WR_SEND, e0.data, LEN, e0.lkey);
    qrdma_dp_post_send(&e0, &a, &w);
    for (i = 0; i < 3; i++) {
        n[i] = qrdma_dp_wire_recv(sv[0], f[i]);
        g_assert_cmphex(qrdma_dp_wire_check_frame(f[i], n[i]), ==, i);
    }
    /* the middle one is lost: the last draws a sequence NAK */
    qrdma_dp_wire_send(sv[2], f[0], n[0]);
    qrdma_dp_wire_send(sv[2], f[2], n[2]);
    g_assert_cmpint(qrdma_dp_relay(sv[2], sv[0], 1, ops), ==, 1);
    g_assert_cmphex(ops[0], ==, 0x11);
    /* again from the lost one: MIDDLE and LAST */
    g_assert_cmpint(qrdma_dp_relay(sv[0], sv[2], 2, ops), ==, 2);
    g_assert_cmphex(ops[0], ==, 0x01);
    g_assert_cmphex(ops[1], ==, 0x02);
    g_assert_cmpint(qrdma_dp_relay(sv[2], sv[0], 1, ops), ==, 1);
    g_assert_cmphex(ops[0], ==, 0x11);
    qrdma_dp_expect_cqe(&e1, &e1.cq, 0xb1, b.qpn, QRDMA_WC_RECV,
                        QRDMA_WC_SUCCESS);
    qrdma_dp_expect_cqe(&e0, &e0.cq, 0xa1, a.qpn, QRDMA_WC_SEND,
                        QRDMA_WC_SUCCESS);
    qtest_memread(e1.t.qts, e1.data + 4096, got, LEN);
    g_assert_cmpmem(got, LEN, src, LEN);
    g_assert_cmpuint(qrdma_t_qom_get(&e0.t, "seq-naks-rcvd"), ==, 1);
    g_assert_cmpuint(qrdma_t_qom_get(&e0.t, "retransmits"), ==, 0);
    g_assert_true(qrdma_dp_relay_quiet(sv[0]));
}

/*
 * An RNR NAK the network repeats counts once against rnr_retry: with
 * rnr_retry 1, the two copies of the first NAK leave the one retry, and
 * the SEND goes again after the RNR timer and succeeds.
 */
static void test_wire_rnr_repeat(void *obj, void *data,
                                 QGuestAllocator *alloc)
{
    int *sv = data;
    uint8_t f[QRDMA_DP_WIRE_FRAME_MAX], ops[8];
    struct qrdma_sq_wqe w;
    uint64_t naks;
    QQrdma q1;
    QrdmaDpEnv e0, e1;
    QrdmaDpQp a, b;
    size_t n;

    qrdma_dp_wire_envs(obj, alloc, &q1, &e0, &e1);
    qrdma_dp_rc_to_rtr(&e0, &a, &e1, &b);
    qrdma_dp_to_rts(&e0, &a, 1);
    qrdma_dp_to_rts(&e1, &b, 0);
    qrdma_dp_write_data(&e0, 0, "after an RNR NAK");
    w = qrdma_dp_wqe_sge(0xa1, QRDMA_WR_SEND, e0.data, 17, e0.lkey);
    qrdma_dp_post_send(&e0, &a, &w);
    g_assert_cmpint(qrdma_dp_relay(sv[0], sv[2], 1, ops), ==, 1);
    n = qrdma_dp_wire_recv(sv[2], f);
    g_assert_cmphex(qrdma_dp_wire_check_frame(f, n), ==, 0x11);
    g_assert_cmphex(f[QRDMA_DP_WIRE_BTH + 12] & 0x60, ==, 0x20);   /* RNR NAK */
    naks = qrdma_t_qom_get(&e0.t, "rnr-naks-rcvd");
    qrdma_dp_wire_send(sv[0], f, n);
    qrdma_dp_wire_send(sv[0], f, n);
    qrdma_dp_wire_expect_count(&e0, "rnr-naks-rcvd", naks + 2);
    qrdma_dp_expect_no_cqe(&e0, &e0.cq);

    qrdma_dp_post_recv(&e1, &b, 0xb1, e1.data, 64, e1.lkey);
    qtest_clock_step(e0.t.qts, SCALE_MS);
    g_assert_cmpint(qrdma_dp_relay(sv[0], sv[2], 1, ops), ==, 1);
    g_assert_cmphex(ops[0], ==, 0x04);
    g_assert_cmpint(qrdma_dp_relay(sv[2], sv[0], 1, ops), ==, 1);
    g_assert_cmphex(ops[0], ==, 0x11);
    qrdma_dp_expect_cqe(&e0, &e0.cq, 0xa1, a.qpn, QRDMA_WC_SEND,
                        QRDMA_WC_SUCCESS);
    qrdma_dp_expect_cqe(&e1, &e1.cq, 0xb1, b.qpn, QRDMA_WC_RECV,
                        QRDMA_WC_SUCCESS);
    qrdma_dp_expect_data(&e1, 0, "after an RNR NAK");
}

/*
 * A peer that stops reading its socket, as a VM whose NIC is reset: the
 * frames back up in the netdev, the requester stops sending, and its ACK
 * timer still counts the retries down: the QP fails after 1 + retry_cnt
 * timeouts, not once the socket drains.
 */
static void test_wire_stalled_peer(void *obj, void *data,
                                   QGuestAllocator *alloc)
{
    enum { N = 16, LEN = 16384 };           /* 256 frames of 1024 bytes */
    int *sv = data;
    struct qrdma_sq_wqe w;
    QQrdma q1;
    QrdmaDpEnv e0, e1;
    QrdmaDpQp a, b;
    int i;

    qrdma_dp_wire_envs(obj, alloc, &q1, &e0, &e1);
    e0.timeout = 10;                    /* 4.2 ms of the virtual clock */
    e0.retry_cnt = 2;
    qrdma_dp_connect_rc(&e0, &a, &e1, &b, true);
    for (i = 0; i < N; i++) {
        w = qrdma_dp_wqe_sge(0xa00 + i, QRDMA_WR_SEND, e0.data, LEN, e0.lkey);
        qrdma_dp_post_send(&e0, &a, &w);
    }
    /* nobody reads sv[0]: three timeouts and the first WQE fails */
    for (i = 0; i < 20; i++) {
        qtest_clock_step(e0.t.qts, SCALE_MS);
    }
    qrdma_dp_expect_cqe(&e0, &e0.cq, 0xa00, a.qpn, QRDMA_WC_SEND,
                        QRDMA_WC_RETRY_EXC_ERR);
    g_assert_cmpuint(qrdma_t_qom_get(&e0.t, "retry-exceeded"), ==, 1);
    qrdma_dp_wire_drain(sv[0]);
}

/*
 * The early retry: a SEND, the last packet sent, is lost, and nothing
 * behind it shows the gap.  With timeout 14 (67 ms) it goes again after
 * an eighth of that (8.4 ms), not counted as a timeout, and completes.
 * Once per stall: a peer that answers nothing gets one early retry, and
 * the WQE still fails only when the timeouts run out, (1 + retry_cnt)
 * timeouts after the last answer, as without it.
 */
static void test_wire_early_retry(void *obj, void *data,
                                  QGuestAllocator *alloc)
{
    int *sv = data;
    uint8_t f[QRDMA_DP_WIRE_FRAME_MAX], ops[8];
    struct qrdma_sq_wqe w;
    uint64_t retx, early;
    QQrdma q1;
    QrdmaDpEnv e0, e1;
    QrdmaDpQp a, b;
    size_t n;
    int i;

    qrdma_dp_wire_envs(obj, alloc, &q1, &e0, &e1);
    e0.timeout = 14;                    /* 67 ms of the virtual clock */
    e0.retry_cnt = 1;
    qrdma_dp_connect_rc(&e0, &a, &e1, &b, true);
    retx = qrdma_t_qom_get(&e0.t, "retransmits");
    early = qrdma_t_qom_get(&e0.t, "early-retries");
    qrdma_dp_write_data(&e0, 0, "lost once");
    qrdma_dp_post_recv(&e1, &b, 0xb1, e1.data, 64, e1.lkey);
    w = qrdma_dp_wqe_sge(0xa1, QRDMA_WR_SEND, e0.data, 10, e0.lkey);
    qrdma_dp_post_send(&e0, &a, &w);
    n = qrdma_dp_wire_recv(sv[0], f);
    g_assert_cmphex(qrdma_dp_wire_check_frame(f, n), ==, 0x04);

    /* not before an eighth of the timeout */
    qtest_clock_step(e0.t.qts, 8 * SCALE_MS);
    g_assert_true(qrdma_dp_relay_quiet(sv[0]));
    qtest_clock_step(e0.t.qts, SCALE_MS);
    g_assert_cmpint(qrdma_dp_relay(sv[0], sv[2], 1, ops), ==, 1);
    g_assert_cmphex(ops[0], ==, 0x04);
    g_assert_cmpint(qrdma_dp_relay(sv[2], sv[0], 1, ops), ==, 1);
    g_assert_cmphex(ops[0], ==, 0x11);
    qrdma_dp_expect_cqe(&e0, &e0.cq, 0xa1, a.qpn, QRDMA_WC_SEND,
                        QRDMA_WC_SUCCESS);
    qrdma_dp_expect_cqe(&e1, &e1.cq, 0xb1, b.qpn, QRDMA_WC_RECV,
                        QRDMA_WC_SUCCESS);
    qrdma_dp_expect_data(&e1, 0, "lost once");
    g_assert_cmpuint(qrdma_t_qom_get(&e0.t, "early-retries"), ==, early + 1);
    g_assert_cmpuint(qrdma_t_qom_get(&e0.t, "retransmits"), ==, retx);

    /*
     * Nobody answers now: the early retry at 8.4 ms, the timeout's retry
     * at 67 ms, and the WQE fails at 134 ms, not before.
     */
    w = qrdma_dp_wqe_sge(0xa2, QRDMA_WR_SEND, e0.data, 10, e0.lkey);
    qrdma_dp_post_send(&e0, &a, &w);
    for (i = 0; i < 133; i++) {
        qtest_clock_step(e0.t.qts, SCALE_MS);
    }
    qrdma_dp_expect_no_cqe(&e0, &e0.cq);
    g_assert_cmpuint(qrdma_t_qom_get(&e0.t, "early-retries"), ==, early + 2);
    g_assert_cmpuint(qrdma_t_qom_get(&e0.t, "retransmits"), ==, retx + 1);
    /* the first sending, the early retry and the timeout's retry */
    for (i = 0; i < 3; i++) {
        n = qrdma_dp_wire_recv(sv[0], f);
        g_assert_cmphex(qrdma_dp_wire_check_frame(f, n), ==, 0x04);
    }
    g_assert_true(qrdma_dp_relay_quiet(sv[0]));
    qtest_clock_step(e0.t.qts, 2 * SCALE_MS);
    qrdma_dp_expect_cqe(&e0, &e0.cq, 0xa2, a.qpn, QRDMA_WC_SEND,
                        QRDMA_WC_RETRY_EXC_ERR);
}

/*
 * A responder QP that goes away acknowledges once more what it took: the
 * ACK of a SEND is lost, the responder's QP goes (how: QRDMA_QPS_RESET or
 * QRDMA_QPS_ERR, else destroyed), and its last ACK completes the SEND
 * with no retry.  ibv_rc_pingpong's server leaves so, as soon as its own
 * last SEND is acknowledged.
 */
static void farewell_ack(QrdmaDpEnv *e0, QrdmaDpEnv *e1, int *sv, uint8_t how)
{
    uint8_t f[QRDMA_DP_WIRE_FRAME_MAX], ops[8];
    struct qrdma_sq_wqe w;
    uint64_t retx;
    QrdmaDpQp a, b;
    size_t n;

    qrdma_dp_connect_rc(e0, &a, e1, &b, true);
    retx = qrdma_t_qom_get(&e0->t, "retransmits");
    qrdma_dp_write_data(e0, 0, "the last one");
    qrdma_dp_post_recv(e1, &b, 0xb1, e1->data, 64, e1->lkey);
    w = qrdma_dp_wqe_sge(0xa1, QRDMA_WR_SEND, e0->data, 13, e0->lkey);
    qrdma_dp_post_send(e0, &a, &w);
    g_assert_cmpint(qrdma_dp_relay(sv[0], sv[2], 1, ops), ==, 1);
    qrdma_dp_expect_cqe(e1, &e1->cq, 0xb1, b.qpn, QRDMA_WC_RECV,
                        QRDMA_WC_SUCCESS);
    /* its ACK is lost */
    n = qrdma_dp_wire_recv(sv[2], f);
    g_assert_cmphex(qrdma_dp_wire_check_frame(f, n), ==, 0x11);
    qrdma_dp_expect_no_cqe(e0, &e0->cq);

    if (how == QRDMA_QPS_RESET || how == QRDMA_QPS_ERR) {
        g_assert_cmpuint(qrdma_dp_modify(e1, &b, QRDMA_QP_ATTR_STATE, how, 0,
                                         0), ==, 0);
    } else {
        g_assert_cmpuint(qrdma_t_destroy(&e1->t, QRDMA_CMD_DESTROY_QP, 0,
                                         b.qpn), ==, 0);
    }
    /* the farewell ACK goes where the QP's path pointed, to a's QPN */
    n = qrdma_dp_wire_recv(sv[2], f);
    g_assert_cmphex(qrdma_dp_wire_check_frame(f, n), ==, 0x11);
    g_assert_cmphex(ldl_be_p(f + QRDMA_DP_WIRE_BTH + 4) & 0xffffff, ==, a.qpn);
    qrdma_dp_wire_send(sv[0], f, n);
    qrdma_dp_expect_cqe(e0, &e0->cq, 0xa1, a.qpn, QRDMA_WC_SEND,
                        QRDMA_WC_SUCCESS);
    g_assert_cmpuint(qrdma_t_qom_get(&e0->t, "retransmits"), ==, retx);
    g_assert_true(qrdma_dp_relay_quiet(sv[2]));
    if (how == QRDMA_QPS_RESET || how == QRDMA_QPS_ERR) {
        g_assert_cmpuint(qrdma_t_destroy(&e1->t, QRDMA_CMD_DESTROY_QP, 0,
                                         b.qpn), ==, 0);
    }
    g_assert_cmpuint(qrdma_t_destroy(&e0->t, QRDMA_CMD_DESTROY_QP, 0, a.qpn),
                     ==, 0);
}

/*
 * Destroyed, moved to RESET (whose attributes are cleared, but only after
 * the ACK left by them) or to ERR: each time the farewell ACK completes
 * the SEND.
 */
static void test_wire_farewell_ack(void *obj, void *data,
                                   QGuestAllocator *alloc)
{
    QQrdma q1;
    QrdmaDpEnv e0, e1;

    qrdma_dp_wire_envs(obj, alloc, &q1, &e0, &e1);
    /* 0xff: destroyed */
    farewell_ack(&e0, &e1, data, 0xff);
    farewell_ack(&e0, &e1, data, QRDMA_QPS_RESET);
    farewell_ack(&e0, &e1, data, QRDMA_QPS_ERR);
}

static void qrdma_dp_wire_requester_register_tests(void)
{
    QOSGraphTestOptions relay_opts = {
        .before = qrdma_dp_relay_setup,
        .edge.extra_device_opts = "netdev=w0,mac=" QRDMA_DP_WIRE_MAC0,
    };

    qos_add_test("dp/wire-rd-atomic-limit", QRDMA_NODE_DP,
                 test_wire_rd_atomic_limit, &relay_opts);
    qos_add_test("dp/wire-read-gap", QRDMA_NODE_DP, test_wire_read_gap,
                 &relay_opts);
    qos_add_test("dp/wire-read-retry", QRDMA_NODE_DP, test_wire_read_retry,
                 &relay_opts);
    qos_add_test("dp/wire-rnr-repeat", QRDMA_NODE_DP, test_wire_rnr_repeat,
                 &relay_opts);
    qos_add_test("dp/wire-farewell-ack", QRDMA_NODE_DP, test_wire_farewell_ack,
                 &relay_opts);
    qos_add_test("dp/wire-early-retry", QRDMA_NODE_DP, test_wire_early_retry,
                 &relay_opts);
    qos_add_test("dp/wire-stalled-peer", QRDMA_NODE_DP, test_wire_stalled_peer,
                 &relay_opts);
    qos_add_test("dp/wire-late-ack", QRDMA_NODE_DP, test_wire_late_ack,
                 &relay_opts);
    qos_add_test("dp/wire-nak-resume", QRDMA_NODE_DP, test_wire_nak_resume,
                 &relay_opts);
    qos_add_test("dp/wire-stale-answer", QRDMA_NODE_DP, test_wire_stale_answer,
                 &relay_opts);
    qos_add_test("dp/wire-nak-mid-message", QRDMA_NODE_DP,
                 test_wire_nak_mid_message, &relay_opts);
}

libqos_init(qrdma_dp_wire_requester_register_tests);
