/*
 * QTest testcase for the qrdma data path: frames on the wire and the
 * responder
 *
 * Copyright (c) 2026 The qrdma developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * Two functions joined by netdevs the test sees (qrdma-dp.h): every frame
 * checked against the RoCEv2 annex, hostile frames dropped and counted,
 * what the responder answers to requests repeated, forged or cut short,
 * the READ engine, UD on the wire and who a connected QP listens to.
 */

#include "qemu/osdep.h"
#include "qemu/module.h"
#include "qemu/timer.h"
#include "libqtest.h"
#include "libqos/libqos-malloc.h"
#include "qrdma-dp.h"

/*
 * RC across the wire: a SEND of 3000 bytes at MTU 256 leaves as 12
 * frames (SEND_FIRST, 10 SEND_MIDDLE, SEND_LAST) and an ACK comes back;
 * WRITE, READ and both atomics work, the data and old values checked;
 * every frame the hub carried is checked against the annex.
 */
static void test_wire_rc(void *obj, void *data, QGuestAllocator *alloc)
{
    enum { LEN = 3000 };
    int fd = ((int *)data)[0];
    uint8_t src[LEN], got[LEN], f[QRDMA_DP_WIRE_FRAME_MAX];
    unsigned ops[256] = { 0 };
    struct qrdma_sq_wqe w;
    QQrdma q1;
    QrdmaDpEnv e0, e1;
    QrdmaDpQp a, b;
    size_t n;
    int i;

    qrdma_dp_wire_envs(obj, alloc, &q1, &e0, &e1);
    e0.path_mtu = e1.path_mtu = 1;
    for (i = 0; i < LEN; i++) {
        src[i] = i * 13 + 5;
    }
    qtest_memwrite(e0.t.qts, e0.data, src, LEN);
    qrdma_dp_connect_rc(&e0, &a, &e1, &b, true);
    qrdma_dp_wire_drain(fd);

    qrdma_dp_post_recv(&e1, &b, 0xb1, e1.data + 8192, 4096, e1.lkey);
    w = qrdma_dp_wqe_sge(0xa1, QRDMA_WR_SEND, e0.data, LEN, e0.lkey);
    qrdma_dp_post_send(&e0, &a, &w);
    qrdma_dp_expect_cqe(&e1, &e1.cq, 0xb1, b.qpn, QRDMA_WC_RECV,
                        QRDMA_WC_SUCCESS);
    qrdma_dp_expect_cqe(&e0, &e0.cq, 0xa1, a.qpn, QRDMA_WC_SEND,
                        QRDMA_WC_SUCCESS);
    qtest_memread(e1.t.qts, e1.data + 8192, got, LEN);
    g_assert_cmpmem(got, LEN, src, LEN);
    while ((n = qrdma_dp_wire_recv(fd, f)) != 0) {
        ops[qrdma_dp_wire_check_frame(f, n)]++;
        if (ops[0x11]) {
            break;
        }
    }
    g_assert_cmpuint(ops[0x00], ==, 1);                 /* SEND_FIRST */
    g_assert_cmpuint(ops[0x01], ==, 10);                /* SEND_MIDDLE */
    g_assert_cmpuint(ops[0x02], ==, 1);                 /* SEND_LAST */
    g_assert_cmpuint(ops[0x11], ==, 1);                 /* ACK */

    /* WRITE 3000 bytes to page 4 of qrdma1, READ them back to page 8 */
    w = qrdma_dp_wqe_sge(0xa2, QRDMA_WR_RDMA_WRITE, e0.data, LEN, e0.lkey);
    w.rdma.remote_addr = cpu_to_le64(e1.data + 4096 * 4);
    w.rdma.rkey = cpu_to_le32(e1.rkey);
    qrdma_dp_post_send(&e0, &a, &w);
    qrdma_dp_expect_cqe(&e0, &e0.cq, 0xa2, a.qpn, QRDMA_WC_RDMA_WRITE,
                        QRDMA_WC_SUCCESS);
    qtest_memread(e1.t.qts, e1.data + 4096 * 4, got, LEN);
    g_assert_cmpmem(got, LEN, src, LEN);
    w = qrdma_dp_wqe_sge(0xa3, QRDMA_WR_RDMA_READ, e0.data + 4096 * 8, LEN,
                         e0.lkey);
    w.rdma.remote_addr = cpu_to_le64(e1.data + 4096 * 4);
    w.rdma.rkey = cpu_to_le32(e1.rkey);
    qrdma_dp_post_send(&e0, &a, &w);
    qrdma_dp_expect_cqe(&e0, &e0.cq, 0xa3, a.qpn, QRDMA_WC_RDMA_READ,
                        QRDMA_WC_SUCCESS);
    qtest_memread(e0.t.qts, e0.data + 4096 * 8, got, LEN);
    g_assert_cmpmem(got, LEN, src, LEN);

    /* atomics on page 9 of qrdma1, the old values to page 10 of qrdma0 */
    qtest_writeq(e1.t.qts, e1.data + 4096 * 9, 40);
    w = qrdma_dp_wqe_sge(0xa4, QRDMA_WR_ATOMIC_FETCH_AND_ADD,
                         e0.data + 4096 * 10, 8, e0.lkey);
    w.rdma.remote_addr = cpu_to_le64(e1.data + 4096 * 9);
    w.rdma.rkey = cpu_to_le32(e1.rkey);
    w.rdma.compare_add = cpu_to_le64(2);
    qrdma_dp_post_send(&e0, &a, &w);
    qrdma_dp_expect_cqe(&e0, &e0.cq, 0xa4, a.qpn, QRDMA_WC_FETCH_ADD,
                        QRDMA_WC_SUCCESS);
    g_assert_cmpuint(qtest_readq(e1.t.qts, e1.data + 4096 * 9), ==, 42);
    g_assert_cmpuint(qtest_readq(e0.t.qts, e0.data + 4096 * 10), ==, 40);
    w = qrdma_dp_wqe_sge(0xa5, QRDMA_WR_ATOMIC_CMP_AND_SWP, e0.data + 4096 * 10,
                         8, e0.lkey);
    w.rdma.remote_addr = cpu_to_le64(e1.data + 4096 * 9);
    w.rdma.rkey = cpu_to_le32(e1.rkey);
    w.rdma.compare_add = cpu_to_le64(42);
    w.rdma.swap = cpu_to_le64(0x1122334455667788ull);
    qrdma_dp_post_send(&e0, &a, &w);
    qrdma_dp_expect_cqe(&e0, &e0.cq, 0xa5, a.qpn, QRDMA_WC_COMP_SWAP,
                        QRDMA_WC_SUCCESS);
    g_assert_cmphex(qtest_readq(e1.t.qts, e1.data + 4096 * 9), ==,
                    0x1122334455667788ull);
    g_assert_cmpuint(qtest_readq(e0.t.qts, e0.data + 4096 * 10), ==, 42);
    while ((n = qrdma_dp_wire_recv(fd, f)) != 0) {
        ops[qrdma_dp_wire_check_frame(f, n)]++;
    }
    g_assert_cmpuint(ops[0x0c], ==, 1);                 /* READ_REQ */
    g_assert_cmpuint(ops[0x0d] + ops[0x0e] + ops[0x0f], ==, 12);
    g_assert_cmpuint(ops[0x14], ==, 1);                 /* FETCH_ADD */
    g_assert_cmpuint(ops[0x13], ==, 1);                 /* CMP_SWAP */
    g_assert_cmpuint(ops[0x12], ==, 2);                 /* ATOMIC_ACK */
    g_assert_cmpuint(qrdma_t_qom_get(&e0.t, "icrc-errors") +
                     qrdma_t_qom_get(&e1.t, "icrc-errors") +
                     qrdma_t_qom_get(&e0.t, "wire-malformed") +
                     qrdma_t_qom_get(&e1.t, "wire-malformed"), ==, 0);
}

/*
 * Frames from the wire are hostile: a flipped payload bit (ICRC), a UDP
 * length that disagrees with IP's, an IPv4 header with a bad checksum,
 * an unknown opcode, a BTH version not 0, a frame cut short: each is
 * dropped and counted, and nothing lands.  A well-made frame for a QPN
 * that does not exist is dropped as well.  The QPs still work.
 */
static void test_wire_bad_frames(void *obj, void *data,
                                 QGuestAllocator *alloc)
{
    int fd = ((int *)data)[0];
    uint8_t good[QRDMA_DP_WIRE_FRAME_MAX], f[QRDMA_DP_WIRE_FRAME_MAX];
    struct qrdma_sq_wqe w;
    uint64_t icrc, bad, drop;
    QQrdma q1;
    QrdmaDpEnv e0, e1;
    QrdmaDpQp a, b;
    size_t n;

    qrdma_dp_wire_envs(obj, alloc, &q1, &e0, &e1);
    qrdma_dp_connect_rc(&e0, &a, &e1, &b, true);
    qrdma_dp_write_data(&e0, 0, "on the wire");
    qrdma_dp_wire_drain(fd);

    /* one good SEND_ONLY, kept to be replayed, mutated */
    qrdma_dp_post_recv(&e1, &b, 0xb1, e1.data, 64, e1.lkey);
    w = qrdma_dp_wqe_sge(0xa1, QRDMA_WR_SEND, e0.data, 12, e0.lkey);
    qrdma_dp_post_send(&e0, &a, &w);
    qrdma_dp_expect_cqe(&e1, &e1.cq, 0xb1, b.qpn, QRDMA_WC_RECV,
                        QRDMA_WC_SUCCESS);
    qrdma_dp_expect_cqe(&e0, &e0.cq, 0xa1, a.qpn, QRDMA_WC_SEND,
                        QRDMA_WC_SUCCESS);
    n = qrdma_dp_wire_recv(fd, good);
    g_assert_cmphex(qrdma_dp_wire_check_frame(good, n), ==, 0x04);
    qrdma_dp_wire_drain(fd);
    qrdma_dp_write_data(&e1, 0, "untouched");
    qrdma_dp_post_recv(&e1, &b, 0xb2, e1.data, 64, e1.lkey);

    icrc = qrdma_t_qom_get(&e1.t, "icrc-errors");
    bad = qrdma_t_qom_get(&e1.t, "wire-malformed");
    drop = qrdma_t_qom_get(&e1.t, "pkts-dropped");

    memcpy(f, good, n);
    f[QRDMA_DP_WIRE_BTH + 12] ^= 0x01;                /* a payload bit */
    qrdma_dp_wire_send(fd, f, n);
    qrdma_dp_wire_expect_count(&e1, "icrc-errors", icrc + 1);

    memcpy(f, good, n);
    stw_be_p(f + QRDMA_DP_WIRE_UDP + 4,
             lduw_be_p(f + QRDMA_DP_WIRE_UDP + 4) - 4);
    qrdma_dp_wire_send(fd, f, n);
    qrdma_dp_wire_expect_count(&e1, "wire-malformed", bad + 1);

    memcpy(f, good, n);
    f[QRDMA_DP_WIRE_IP + 10] ^= 0x55;                 /* IPv4 header checksum */
    qrdma_dp_wire_send(fd, f, n);
    qrdma_dp_wire_expect_count(&e1, "wire-malformed", bad + 2);

    memcpy(f, good, n);
    f[QRDMA_DP_WIRE_BTH] = 0x1f;                      /* no such RC opcode */
    qrdma_dp_wire_set_icrc(f, n);
    qrdma_dp_wire_send(fd, f, n);
    qrdma_dp_wire_expect_count(&e1, "wire-malformed", bad + 3);

    memcpy(f, good, n);
    f[QRDMA_DP_WIRE_BTH + 1] |= 0x01;                 /* transport version 1 */
    qrdma_dp_wire_set_icrc(f, n);
    qrdma_dp_wire_send(fd, f, n);
    qrdma_dp_wire_expect_count(&e1, "wire-malformed", bad + 4);

    /* cut in the BTH */
    qrdma_dp_wire_send(fd, good, QRDMA_DP_WIRE_BTH + 6);
    qrdma_dp_wire_expect_count(&e1, "wire-malformed", bad + 5);

    memcpy(f, good, n);
    stl_be_p(f + QRDMA_DP_WIRE_BTH + 4, 0x00abcdef);  /* nobody's QPN */
    qrdma_dp_wire_set_icrc(f, n);
    qrdma_dp_wire_send(fd, f, n);
    qrdma_dp_wire_expect_count(&e1, "pkts-dropped", drop + 1);
    g_assert_cmpuint(qrdma_t_qom_get(&e1.t, "icrc-errors"), ==, icrc + 1);

    qrdma_dp_expect_no_cqe(&e1, &e1.cq);
    qrdma_dp_expect_data(&e1, 0, "untouched");

    /* the QPs go on as if nothing had come */
    w = qrdma_dp_wqe_sge(0xa2, QRDMA_WR_SEND, e0.data, 12, e0.lkey);
    qrdma_dp_post_send(&e0, &a, &w);
    qrdma_dp_expect_cqe(&e1, &e1.cq, 0xb2, b.qpn, QRDMA_WC_RECV,
                        QRDMA_WC_SUCCESS);
    qrdma_dp_expect_cqe(&e0, &e0.cq, 0xa2, a.qpn, QRDMA_WC_SEND,
                        QRDMA_WC_SUCCESS);
    qrdma_dp_expect_data(&e1, 0, "on the wire");
}

/*
 * Responder resources on the wire.  A FETCH_ADD that comes again (here:
 * the test sends the first of two again) is answered with the value it
 * returned the first time and not done again, even when it is not the
 * last atomic; the requester, which awaits nothing, drops its answer.
 */
static void test_wire_responder_resources(void *obj, void *data,
                                          QGuestAllocator *alloc)
{
    int fd = ((int *)data)[0];
    uint8_t f[QRDMA_DP_WIRE_FRAME_MAX], first[QRDMA_DP_WIRE_FRAME_MAX];
    size_t n, first_len = 0;
    struct qrdma_sq_wqe w;
    int i, acks = 0;
    uint64_t dups;
    QQrdma q1;
    QrdmaDpEnv e0, e1;
    QrdmaDpQp a, b;

    qrdma_dp_wire_envs(obj, alloc, &q1, &e0, &e1);
    qrdma_dp_connect_rc(&e0, &a, &e1, &b, true);
    qtest_writeq(e1.t.qts, e1.data + 4096 * 9, 100);
    qrdma_dp_wire_drain(fd);

    for (i = 0; i < 2; i++) {
        w = qrdma_dp_wqe_sge(0xa1 + i, QRDMA_WR_ATOMIC_FETCH_AND_ADD,
                             e0.data + 4096 * 10 + 8 * i, 8, e0.lkey);
        w.rdma.remote_addr = cpu_to_le64(e1.data + 4096 * 9);
        w.rdma.rkey = cpu_to_le32(e1.rkey);
        w.rdma.compare_add = cpu_to_le64(1 + i);
        qrdma_dp_post_send(&e0, &a, &w);
        qrdma_dp_expect_cqe(&e0, &e0.cq, 0xa1 + i, a.qpn, QRDMA_WC_FETCH_ADD,
                            QRDMA_WC_SUCCESS);
    }
    g_assert_cmpuint(qtest_readq(e1.t.qts, e1.data + 4096 * 9), ==, 103);
    while ((n = qrdma_dp_wire_recv(fd, f)) != 0) {
        if (qrdma_dp_wire_check_frame(f, n) == 0x14 && !first_len) {
            memcpy(first, f, n);
            first_len = n;
        }
    }
    g_assert_cmpuint(first_len, >, 0);

    dups = qrdma_t_qom_get(&e1.t, "dup-reqs");
    qrdma_dp_wire_send(fd, first, first_len);
    qrdma_dp_wire_expect_count(&e1, "dup-reqs", dups + 1);
    g_assert_cmpuint(qtest_readq(e1.t.qts, e1.data + 4096 * 9), ==, 103);
    while ((n = qrdma_dp_wire_recv(fd, f)) != 0) {
        if (qrdma_dp_wire_check_frame(f, n) == 0x12) {
            /* AtomicAckETH after the BTH and the AETH: the first value */
            g_assert_cmpuint(ldq_be_p(f + QRDMA_DP_WIRE_BTH + 16), ==, 100);
            acks++;
        }
    }
    g_assert_cmpint(acks, ==, 1);
    qrdma_dp_expect_no_cqe(&e0, &e0.cq);
}

/* The frame f of n bytes with the last cut bytes of its payload gone. */
static size_t wire_trim_payload(uint8_t *f, size_t n, size_t cut)
{
    size_t len = n - cut;

    stw_be_p(f + QRDMA_DP_WIRE_IP + 2, len - QRDMA_DP_WIRE_IP);
    stw_be_p(f + QRDMA_DP_WIRE_IP + 10, 0);
    stw_be_p(f + QRDMA_DP_WIRE_IP + 10,
             qrdma_dp_wire_ipsum(f + QRDMA_DP_WIRE_IP));
    stw_be_p(f + QRDMA_DP_WIRE_UDP + 4, len - QRDMA_DP_WIRE_UDP);
    qrdma_dp_wire_set_icrc(f, len);
    return len;
}

/*
 * The responses of a READ carry the MSN that counts the READ (IBA
 * C9-148): 1 for the first message of a QP.  A packet's payload is held
 * to the path MTU (C9-92): a WRITE_MIDDLE cut short is refused with an
 * invalid request NAK of its PSN.
 */
static void test_wire_msn_pmtu(void *obj, void *data, QGuestAllocator *alloc)
{
    enum { LEN = 3000 };
    int *sv = data;
    uint8_t f[QRDMA_DP_WIRE_FRAME_MAX], ops[8];
    struct qrdma_sq_wqe w;
    uint32_t mid_psn = 0;
    QQrdma q1;
    QrdmaDpEnv e0, e1;
    QrdmaDpQp a, b;
    size_t n;
    int i;

    qrdma_dp_wire_envs(obj, alloc, &q1, &e0, &e1);
    qrdma_dp_connect_rc(&e0, &a, &e1, &b, true);
    w = qrdma_dp_wqe_sge(0xa1, QRDMA_WR_RDMA_READ, e0.data + 4096 * 4, 8,
                         e0.lkey);
    w.rdma.remote_addr = cpu_to_le64(e1.data);
    w.rdma.rkey = cpu_to_le32(e1.rkey);
    qrdma_dp_post_send(&e0, &a, &w);
    g_assert_cmpint(qrdma_dp_relay(sv[0], sv[2], 1, ops), ==, 1);
    n = qrdma_dp_wire_recv(sv[2], f);
    g_assert_cmphex(qrdma_dp_wire_check_frame(f, n), ==, 0x10);
    g_assert_cmpuint(ldl_be_p(f + QRDMA_DP_WIRE_BTH + 12) & 0xffffff, ==, 1);
    qrdma_dp_wire_send(sv[0], f, n);
    qrdma_dp_expect_cqe(&e0, &e0.cq, 0xa1, a.qpn, QRDMA_WC_RDMA_READ,
                        QRDMA_WC_SUCCESS);

    w = qrdma_dp_wqe_sge(0xa2, QRDMA_WR_RDMA_WRITE, e0.data, LEN, e0.lkey);
    w.rdma.remote_addr = cpu_to_le64(e1.data + 4096 * 4);
    w.rdma.rkey = cpu_to_le32(e1.rkey);
    qrdma_dp_post_send(&e0, &a, &w);
    for (i = 0; i < 3; i++) {
        n = qrdma_dp_wire_recv(sv[0], f);
        g_assert_cmphex(qrdma_dp_wire_check_frame(f, n), ==, 0x06 + i);
        if (i == 1) {
            mid_psn = qrdma_dp_wire_psn(f);
            n = wire_trim_payload(f, n, 512);
            g_assert_cmphex(qrdma_dp_wire_check_frame(f, n), ==, 0x07);
        }
        if (i < 2) {
            qrdma_dp_wire_send(sv[2], f, n);
        }
    }
    n = qrdma_dp_wire_recv(sv[2], f);
    g_assert_cmphex(qrdma_dp_wire_check_frame(f, n), ==, 0x11);
    /* invalid request */
    g_assert_cmphex(f[QRDMA_DP_WIRE_BTH + 12], ==, 0x60 | 1);
    g_assert_cmphex(qrdma_dp_wire_psn(f), ==, mid_psn);
    qrdma_dp_wire_drain(sv[0]);
    qrdma_dp_wire_drain(sv[2]);
}

/*
 * FLUSH and ATOMIC_WRITE across the wire, as IBA 1.5 has them and rxe
 * does them: each is answered with an RDMA READ Response Only without
 * payload, not an ACK; each holds a responder resource, so with
 * max_rd_atomic 1 the second waits for the first's response; and the
 * request coming again is answered again from the resource, not done
 * again.
 */
static void test_wire_flush_atomic_write(void *obj, void *data,
                                         QGuestAllocator *alloc)
{
    static const uint8_t bytes[8] = "ABCDEFG";
    int *sv = data;
    uint8_t f[QRDMA_DP_WIRE_FRAME_MAX], req[QRDMA_DP_WIRE_FRAME_MAX];
    uint8_t aw[QRDMA_DP_WIRE_FRAME_MAX];
    uint8_t ops[8], got[8];
    struct qrdma_sq_wqe w;
    size_t n, req_len, aw_len;
    uint32_t mr;
    QQrdma q1;
    QrdmaDpEnv e0, e1;
    QrdmaDpQp a, b;

    qrdma_dp_wire_envs(obj, alloc, &q1, &e0, &e1);
    e0.max_rd_atomic = 1;
    e1.qp_access |= QRDMA_ACCESS_FLUSH_GLOBAL;
    qrdma_dp_connect_rc(&e0, &a, &e1, &b, true);
    mr = qrdma_dp_reg_mr(&e1, e1.pd, 4096 * 10, 4096,
                         QRDMA_ACCESS_LOCAL_WRITE | QRDMA_ACCESS_REMOTE_WRITE |
                         QRDMA_ACCESS_FLUSH_GLOBAL);
    qtest_writeq(e1.t.qts, e1.data + 4096 * 9, 0x1111111111111111ull);

    w = qrdma_dp_wqe_sge(0xa1, QRDMA_WR_ATOMIC_WRITE, 0xdead0000, 8, 0xbad);
    w.rdma.remote_addr = cpu_to_le64(e1.data + 4096 * 9);
    w.rdma.rkey = cpu_to_le32(e1.rkey);
    memcpy(&w.rdma.compare_add, bytes, 8);
    qrdma_dp_post_send(&e0, &a, &w);
    w = qrdma_dp_wqe_flush(0xa2, mr, 0x10000000, 4096, QRDMA_FLUSH_GLOBAL,
                           QRDMA_FLUSH_RANGE);
    qrdma_dp_post_send(&e0, &a, &w);

    /* ATOMIC_WRITE alone: the FLUSH waits for its response */
    req_len = qrdma_dp_wire_recv(sv[0], req);
    g_assert_cmphex(qrdma_dp_wire_check_frame(req, req_len), ==, 0x1d);
    /* RETH: its 8 bytes, as rxe requires (IBA 1.5 oA19-28) */
    g_assert_cmpuint(ldl_be_p(req + QRDMA_DP_WIRE_BTH + 12 + 12), ==, 8);
    memcpy(aw, req, req_len);
    aw_len = req_len;
    g_assert_true(qrdma_dp_relay_quiet(sv[0]));
    qrdma_dp_wire_send(sv[2], req, req_len);
    n = qrdma_dp_wire_recv(sv[2], f);
    g_assert_cmphex(qrdma_dp_wire_check_frame(f, n), ==, 0x10);
    /* AETH, no payload */
    g_assert_cmpuint(n, ==, QRDMA_DP_WIRE_BTH + 12 + 4 + 4);
    qtest_memread(e1.t.qts, e1.data + 4096 * 9, got, 8);
    g_assert_cmpmem(got, 8, bytes, 8);
    /* the request again: answered again, not done again */
    qtest_writeq(e1.t.qts, e1.data + 4096 * 9, 5);
    qrdma_dp_wire_send(sv[2], req, req_len);
    g_assert_cmpint(qrdma_dp_relay(sv[2], sv[0], 1, ops), ==, 1);
    g_assert_cmphex(ops[0], ==, 0x10);
    g_assert_cmpuint(qtest_readq(e1.t.qts, e1.data + 4096 * 9), ==, 5);
    /* the first response completes it, and the FLUSH goes */
    qrdma_dp_wire_send(sv[0], f, n);
    qrdma_dp_expect_cqe(&e0, &e0.cq, 0xa1, a.qpn, QRDMA_WC_ATOMIC_WRITE,
                        QRDMA_WC_SUCCESS);
    g_assert_cmpint(qrdma_dp_relay(sv[0], sv[2], 1, ops), ==, 1);
    g_assert_cmphex(ops[0], ==, 0x1c);
    n = qrdma_dp_wire_recv(sv[2], f);
    g_assert_cmphex(qrdma_dp_wire_check_frame(f, n), ==, 0x10);
    g_assert_cmpuint(n, ==, QRDMA_DP_WIRE_BTH + 12 + 4 + 4);
    /* an ACK of its PSN does not complete it: only its response does */
    memcpy(req, f, n);
    req[QRDMA_DP_WIRE_BTH] = 0x11;
    qrdma_dp_wire_set_icrc(req, n);
    qrdma_dp_wire_send(sv[0], req, n);
    qrdma_dp_expect_no_cqe(&e0, &e0.cq);
    qrdma_dp_wire_send(sv[0], f, n);
    qrdma_dp_expect_cqe(&e0, &e0.cq, 0xa2, a.qpn, QRDMA_WC_FLUSH,
                        QRDMA_WC_SUCCESS);

    /* an ATOMIC_WRITE whose RETH names 0 bytes: an invalid request */
    stl_be_p(aw + QRDMA_DP_WIRE_BTH + 8, (qrdma_dp_wire_psn(f) + 1) & 0xffffff);
    stl_be_p(aw + QRDMA_DP_WIRE_BTH + 12 + 12, 0);
    qrdma_dp_wire_set_icrc(aw, aw_len);
    qrdma_dp_wire_send(sv[2], aw, aw_len);
    n = qrdma_dp_wire_recv(sv[2], f);
    g_assert_cmphex(qrdma_dp_wire_check_frame(f, n), ==, 0x11);
    g_assert_cmphex(f[QRDMA_DP_WIRE_BTH + 12], ==, 0x60 | 1);
    g_assert_cmpuint(qtest_readq(e1.t.qts, e1.data + 4096 * 9), ==, 5);
    qrdma_dp_wire_drain(sv[0]);
    qrdma_dp_wire_drain(sv[2]);
}

/*
 * A UD datagram the network repeats reaches the consumer once: the copy
 * that comes right after it is dropped and counted.  The same frame
 * 200 ms later is a datagram sent again, as a consumer's own retry (a MAD
 * with a PSN that does not move) would be: it is taken.
 */
static void test_wire_ud_repeat(void *obj, void *data, QGuestAllocator *alloc)
{
    int *sv = data;
    uint8_t f[QRDMA_DP_WIRE_FRAME_MAX];
    struct qrdma_sq_wqe w;
    struct qrdma_cmd cmd = { .hdr.opcode = QRDMA_CMD_CREATE_AH };
    struct qrdma_cmpl cmpl;
    uint64_t dups, rcvd;
    QQrdma q1;
    QrdmaDpEnv e0, e1;
    QrdmaDpQp a, b;
    size_t n;
    int i;

    qrdma_dp_wire_envs(obj, alloc, &q1, &e0, &e1);
    g_assert_cmpuint(qrdma_dp_create_qp(&e0, &a, QRDMA_QPT_UD, 0, &e0.cq,
                                        &e0.cq), ==, 0);
    g_assert_cmpuint(qrdma_dp_create_qp(&e1, &b, QRDMA_QPT_UD, 0, &e1.cq,
                                        &e1.cq), ==, 0);
    qrdma_dp_to_rtr(&e0, &a, 0);
    qrdma_dp_to_rtr(&e1, &b, 0);
    qrdma_dp_to_rts(&e0, &a, 0);
    qrdma_dp_to_rts(&e1, &b, 0);
    cmd.create_ah.pd = cpu_to_le32(e0.pd);
    cmd.create_ah.av.hop_limit = 64;
    cmd.create_ah.av.vlan_id = cpu_to_le16(QRDMA_VLAN_NONE);
    memcpy(cmd.create_ah.av.dgid,
           (uint8_t[16]) { [10] = 0xff, [11] = 0xff, 10, 0, 2, 16 }, 16);
    memcpy(cmd.create_ah.av.dmac, qrdma_dp_wire_mac1, 6);
    g_assert_cmpuint(qrdma_t_exec(&e0.t, &cmd, &cmpl), ==, 0);

    for (i = 0; i < 3; i++) {
        qrdma_dp_post_recv(&e1, &b, 0xb1 + i, e1.data + 4096 * i, 4096,
                           e1.lkey);
    }
    qrdma_dp_write_data(&e0, 0, "once only");
    w = qrdma_dp_wqe_sge(0xa1, QRDMA_WR_SEND, e0.data, 10, e0.lkey);
    w.ud.ah = cmpl.handle;
    w.ud.remote_qpn = cpu_to_le32(b.qpn);
    w.ud.remote_qkey = cpu_to_le32(0x1234);
    qrdma_dp_post_send(&e0, &a, &w);
    qrdma_dp_expect_cqe(&e0, &e0.cq, 0xa1, a.qpn, QRDMA_WC_SEND,
                        QRDMA_WC_SUCCESS);
    n = qrdma_dp_wire_recv(sv[0], f);
    g_assert_cmphex(qrdma_dp_wire_check_frame(f, n), ==, 0x64);

    dups = qrdma_t_qom_get(&e1.t, "wire-ud-duplicates");
    rcvd = qrdma_t_qom_get(&e1.t, "pkts-rcvd");
    qrdma_dp_wire_send(sv[2], f, n);
    qrdma_dp_wire_send(sv[2], f, n);
    qrdma_dp_wire_expect_count(&e1, "wire-ud-duplicates", dups + 1);
    g_assert_cmpuint(qrdma_t_qom_get(&e1.t, "pkts-rcvd"), ==, rcvd + 1);
    qrdma_dp_expect_cqe(&e1, &e1.cq, 0xb1, b.qpn, QRDMA_WC_RECV,
                        QRDMA_WC_SUCCESS);
    qrdma_dp_expect_no_cqe(&e1, &e1.cq);
    qrdma_dp_expect_data(&e1, QRDMA_GRH_SIZE, "once only");

    /* later, it is a datagram of its own */
    qtest_clock_step(e1.t.qts, 200 * SCALE_MS);
    qrdma_dp_wire_send(sv[2], f, n);
    qrdma_dp_expect_cqe(&e1, &e1.cq, 0xb2, b.qpn, QRDMA_WC_RECV,
                        QRDMA_WC_SUCCESS);
    g_assert_cmpuint(qrdma_t_qom_get(&e1.t, "wire-ud-duplicates"), ==,
                     dups + 1);
}

/* The state of QP qpn of uctx 0, as QUERY_QP gives it. */
static uint8_t qp_state(QrdmaDpEnv *e, uint32_t qpn)
{
    struct qrdma_query_qp_resp r;

    g_assert_cmpuint(qrdma_t_query_qp(&e->t, 0, qpn, &r), ==, 0);
    return r.attr.qp_state;
}

/*
 * An MR of npages pages at iova 0x20000000 that go round the data pages
 * again and again: a large range for a READ with a page list of the
 * test's few pages.  Its lkey, and its rkey in *rkey.
 */
static uint32_t reg_round_mr(QrdmaDpEnv *e, uint32_t npages, uint32_t *rkey)
{
    g_autofree uint64_t *pages = g_new(uint64_t, npages);
    struct qrdma_cmd cmd = { .hdr.opcode = QRDMA_CMD_REG_MR };
    struct qrdma_cmpl cmpl;
    uint32_t i;

    for (i = 0; i < npages; i++) {
        pages[i] = e->data + (i % QRDMA_DP_DATA_PAGES) * 4096;
    }
    cmd.reg_mr.pd = cpu_to_le32(e->pd);
    cmd.reg_mr.access = cpu_to_le32(QRDMA_ACCESS_LOCAL_WRITE |
                                    QRDMA_ACCESS_REMOTE_READ);
    cmd.reg_mr.iova = cpu_to_le64(0x20000000);
    cmd.reg_mr.length = cpu_to_le64((uint64_t)npages * 4096);
    cmd.reg_mr.pages_addr = cpu_to_le64(qrdma_t_page_list(&e->t, pages,
                                                          npages));
    cmd.reg_mr.npages = cpu_to_le32(npages);
    cmd.reg_mr.page_shift = 12;
    g_assert_cmpuint(qrdma_t_exec(&e->t, &cmd, &cmpl), ==, QRDMA_STATUS_OK);
    *rkey = le32_to_cpu(cmpl.data[0]);
    return le32_to_cpu(cmpl.handle);
}

/*
 * Relay the answer of a READ of npkts responses of 4096 bytes from the
 * responder (sv[2]) to the requester (sv[0]), checking their opcodes and
 * PSNs; then acks ACKs.  Any other frame fails the test.
 */
static void relay_read_answer(int *sv, int npkts, int acks)
{
    uint8_t f[QRDMA_DP_WIRE_FRAME_MAX];
    uint32_t psn = 0;
    int resps = 0, acked = 0;
    size_t n;

    while ((n = qrdma_dp_wire_recv(sv[2], f)) != 0) {
        uint8_t op = qrdma_dp_wire_check_frame(f, n);

        if (op == 0x11) {
            /* after the READ's last response, and for the PSN after it */
            g_assert_cmpint(resps, ==, npkts);
            g_assert_cmphex(f[QRDMA_DP_WIRE_BTH + 12] & 0xe0, ==, 0);
            g_assert_cmphex(qrdma_dp_wire_psn(f), ==, (psn + 1) & 0xffffff);
            acked++;
        } else {
            g_assert_cmphex(op, ==, resps == 0 ? 0x0d :
                            resps == npkts - 1 ? 0x0f : 0x0e);
            g_assert_cmpuint(n, ==, QRDMA_DP_WIRE_BTH + 12 +
                             (op != 0x0e ? 4 : 0) + 4096 + 4);
            if (resps) {
                g_assert_cmphex(qrdma_dp_wire_psn(f), ==, (psn + 1) & 0xffffff);
            }
            psn = qrdma_dp_wire_psn(f);
            resps++;
        }
        qrdma_dp_wire_send(sv[0], f, n);
    }
    g_assert_cmpint(resps, ==, npkts);
    g_assert_cmpint(acked, ==, acks);
}

/*
 * At path MTU 4096 the requester keeps 32 packets (128 KiB) in flight,
 * not 128: a SEND of 64 packets sends 32 and waits for their ACK.  It
 * asks for an ACK every 16 packets, half the window, so that the window
 * moves on without a timeout; the rest goes once the ACKs come.
 */
static void test_wire_window(void *obj, void *data, QGuestAllocator *alloc)
{
    enum { PKTS = 64 };
    int *sv = data;
    uint8_t f[QRDMA_DP_WIRE_FRAME_MAX], ops[8], got[4096];
    uint32_t lkey0, lkey1, rkey;
    struct qrdma_sq_wqe w;
    QQrdma q1;
    QrdmaDpEnv e0, e1;
    QrdmaDpQp a, b;
    int round, i, k;
    size_t n;

    qrdma_dp_wire_envs(obj, alloc, &q1, &e0, &e1);
    e0.path_mtu = e1.path_mtu = 5;              /* 4096 */
    qrdma_dp_connect_rc(&e0, &a, &e1, &b, true);
    qrdma_dp_write_data(&e0, 4096 * 3, "page 3 of 16");
    lkey0 = reg_round_mr(&e0, PKTS, &rkey);
    lkey1 = reg_round_mr(&e1, PKTS, &rkey);
    qrdma_dp_post_recv(&e1, &b, 0xb1, 0x20000000, PKTS * 4096, lkey1);
    w = qrdma_dp_wqe_sge(0xa1, QRDMA_WR_SEND, 0x20000000, PKTS * 4096, lkey0);
    qrdma_dp_post_send(&e0, &a, &w);
    for (round = 0; round < 2; round++) {
        for (i = 0; i < 32; i++) {
            n = qrdma_dp_wire_recv(sv[0], f);
            g_assert_cmpuint(n, >, 4096);
            qrdma_dp_wire_check_frame(f, n);
            g_assert_cmpuint(qrdma_dp_wire_psn(f), ==,
                             (e0.sq_psn + round * 32 + i) & 0xffffff);
            /* at the latest the window's last asks for an ACK */
            if (i == 31) {
                g_assert_cmphex(f[QRDMA_DP_WIRE_BTH + 8] & 0x80, ==, 0x80);
            }
            qrdma_dp_wire_send(sv[2], f, n);
        }
        /* the window is full until the ACKs come */
        g_assert_true(qrdma_dp_relay_quiet(sv[0]));
        k = qrdma_dp_relay(sv[2], sv[0], 2, ops);
        g_assert_cmpint(k, >=, 1);
        while (k--) {
            g_assert_cmphex(ops[k], ==, 0x11);
        }
    }
    qrdma_dp_expect_cqe(&e1, &e1.cq, 0xb1, b.qpn, QRDMA_WC_RECV,
                        QRDMA_WC_SUCCESS);
    qrdma_dp_expect_cqe(&e0, &e0.cq, 0xa1, a.qpn, QRDMA_WC_SEND,
                        QRDMA_WC_SUCCESS);
    g_assert_cmpuint(qrdma_t_qom_get(&e0.t, "retransmits"), ==, 0);
    g_assert_cmpuint(qrdma_t_qom_get(&e0.t, "early-retries"), ==, 0);
    /* the last page of the message is the round MR's page 63 % 16 */
    qtest_memread(e1.t.qts, e1.data + 4096 * 3, got, 13);
    g_assert_cmpstr((char *)got, ==, "page 3 of 16");
}

/*
 * A READ of 4 MiB is answered a turn at a time, only as fast as the wire
 * takes it: with nobody reading the responder's socket, a few hundred
 * KiB of its 1024 responses leave and the rest waits (all of it went at
 * once, into QEMU's net queue, in the receive callback of the request).
 * Once the socket is read everything comes, in order, and the bytes are
 * right.  A SEND that comes while a READ is answered waits its turn: its
 * ACK follows the READ's last response.  A READ whose MR goes away while
 * it is answered ends with a remote access NAK of the first response not
 * sent, and the requester completes it with REM_ACCESS_ERR.
 */
static void test_wire_read_engine(void *obj, void *data,
                                  QGuestAllocator *alloc)
{
    enum { PAGES = 1024, LEN = PAGES * 4096, SMALL = 24 };
    int *sv = data;
    uint8_t f[QRDMA_DP_WIRE_FRAME_MAX], ops[8], src[QRDMA_DP_DATA_PAGES * 4096];
    uint8_t got[QRDMA_DP_DATA_PAGES * 4096];
    uint32_t lkey0, rkey0, rkey1, mr1, psn = 0;
    uint64_t sent;
    struct qrdma_sq_wqe w;
    int i, resps, naks;
    QQrdma q1;
    QrdmaDpEnv e0, e1;
    QrdmaDpQp a, b;
    size_t n;

    qrdma_dp_wire_envs(obj, alloc, &q1, &e0, &e1);
    e0.path_mtu = e1.path_mtu = 5;              /* 4096 */
    qrdma_dp_connect_rc(&e0, &a, &e1, &b, true);
    for (i = 0; i < (int)sizeof(src); i++) {
        src[i] = i * 7 + i / 4096;
    }
    qtest_memwrite(e1.t.qts, e1.data, src, sizeof(src));
    lkey0 = reg_round_mr(&e0, PAGES, &rkey0);
    mr1 = reg_round_mr(&e1, PAGES, &rkey1);
    /* e0's data pages take the READ: other bytes until it lands */
    qtest_memset(e0.t.qts, e0.data, 0xee, 15 * 4096);

    w = qrdma_dp_wqe_sge(0xa1, QRDMA_WR_RDMA_READ, 0x20000000, LEN, lkey0);
    w.rdma.remote_addr = cpu_to_le64(0x20000000);
    w.rdma.rkey = cpu_to_le32(rkey1);
    qrdma_dp_post_send(&e0, &a, &w);
    sent = qrdma_t_qom_get(&e1.t, "pkts-sent");
    g_assert_cmpint(qrdma_dp_relay(sv[0], sv[2], 1, ops), ==, 1);
    g_assert_cmphex(ops[0], ==, 0x0c);
    /* nobody reads the responder's socket for a while */
    g_usleep(300 * 1000);
    g_assert_cmpuint(qrdma_t_qom_get(&e1.t, "pkts-sent") - sent, <, 256);
    relay_read_answer(sv, PAGES, 0);
    qrdma_dp_expect_cqe(&e0, &e0.cq, 0xa1, a.qpn, QRDMA_WC_RDMA_READ,
                        QRDMA_WC_SUCCESS);
    /* the last round of the responder's pages landed last on e0's */
    qtest_memread(e0.t.qts, e0.data, got, sizeof(got));
    g_assert_cmpmem(got, 15 * 4096, src, 15 * 4096);

    /* a READ within the requester's window (32 packets), a SEND after it */
    qrdma_dp_post_recv(&e1, &b, 0xb1, e1.data + 4096 * 15, 64, e1.lkey);
    w = qrdma_dp_wqe_sge(0xa2, QRDMA_WR_RDMA_READ, 0x20000000, SMALL * 4096,
                         lkey0);
    w.rdma.remote_addr = cpu_to_le64(0x20000000);
    w.rdma.rkey = cpu_to_le32(rkey1);
    qrdma_dp_post_send(&e0, &a, &w);
    w = qrdma_dp_wqe_sge(0xa3, QRDMA_WR_SEND, e0.data + 4096 * 15, 16, e0.lkey);
    qrdma_dp_post_send(&e0, &a, &w);
    g_assert_cmpint(qrdma_dp_relay(sv[0], sv[2], 2, ops), ==, 2);
    g_assert_cmphex(ops[0], ==, 0x0c);
    g_assert_cmphex(ops[1], ==, 0x04);
    relay_read_answer(sv, SMALL, 1);
    qrdma_dp_expect_cqe(&e1, &e1.cq, 0xb1, b.qpn, QRDMA_WC_RECV,
                        QRDMA_WC_SUCCESS);
    qrdma_dp_expect_cqe(&e0, &e0.cq, 0xa2, a.qpn, QRDMA_WC_RDMA_READ,
                        QRDMA_WC_SUCCESS);
    qrdma_dp_expect_cqe(&e0, &e0.cq, 0xa3, a.qpn, QRDMA_WC_SEND,
                        QRDMA_WC_SUCCESS);

    /* the MR of a READ under way goes away */
    w = qrdma_dp_wqe_sge(0xa4, QRDMA_WR_RDMA_READ, 0x20000000, LEN, lkey0);
    w.rdma.remote_addr = cpu_to_le64(0x20000000);
    w.rdma.rkey = cpu_to_le32(rkey1);
    qrdma_dp_post_send(&e0, &a, &w);
    n = qrdma_dp_wire_recv(sv[0], f);
    g_assert_cmphex(qrdma_dp_wire_check_frame(f, n), ==, 0x0c);
    psn = qrdma_dp_wire_psn(f);
    qrdma_dp_wire_send(sv[2], f, n);
    g_usleep(100 * 1000);
    g_assert_cmpuint(qrdma_t_destroy(&e1.t, QRDMA_CMD_DEREG_MR, 0, mr1), ==,
                     0);
    resps = naks = 0;
    while ((n = qrdma_dp_wire_recv(sv[2], f)) != 0) {
        uint8_t op = qrdma_dp_wire_check_frame(f, n);

        if (op == 0x11 && !naks) {
            /* AETH: NAK, remote access error, of the next response */
            g_assert_cmphex(f[QRDMA_DP_WIRE_BTH + 12], ==, 0x62);
            g_assert_cmphex(qrdma_dp_wire_psn(f), ==, (psn + resps) & 0xffffff);
            naks++;
        } else if (op != 0x11) {
            g_assert_cmpint(naks, ==, 0);
            resps++;
        }
        qrdma_dp_wire_send(sv[0], f, n);
    }
    g_assert_cmpint(naks, ==, 1);
    g_assert_cmpint(resps, <, PAGES);
    qrdma_dp_expect_cqe(&e0, &e0.cq, 0xa4, a.qpn, QRDMA_WC_RDMA_READ,
                        QRDMA_WC_REM_ACCESS_ERR);
    g_assert_cmpuint(qp_state(&e1, b.qpn), ==, QRDMA_QPS_ERR);
}

/* A copy of a READ request frame asking for len bytes at va with rkey. */
static void wire_forge_read(uint8_t *f, size_t n, uint32_t psn, uint64_t va,
                            uint32_t rkey, uint32_t len)
{
    stl_be_p(f + QRDMA_DP_WIRE_BTH + 8, psn);
    stq_be_p(f + QRDMA_DP_WIRE_BTH + 12, va);
    stl_be_p(f + QRDMA_DP_WIRE_BTH + 20, rkey);
    stl_be_p(f + QRDMA_DP_WIRE_BTH + 24, len);
    qrdma_dp_wire_set_icrc(f, n);
}

/* The opcodes of the frames that come back from the responder, up to 8. */
static int wire_answers(int fd, uint8_t *ops, uint8_t *aeth)
{
    uint8_t f[QRDMA_DP_WIRE_FRAME_MAX];
    size_t n;
    int k = 0;

    while (k < 8 && (n = qrdma_dp_wire_recv(fd, f)) != 0) {
        ops[k] = qrdma_dp_wire_check_frame(f, n);
        if (aeth) {
            aeth[k] = f[QRDMA_DP_WIRE_BTH + 12];
        }
        k++;
    }
    return k;
}

/*
 * A READ of 100 bytes from a's QP through the relay, answered whole in one
 * RDMA READ Response Only, and completed.
 */
static void wire_small_read(QrdmaDpEnv *e0, QrdmaDpQp *a, QrdmaDpEnv *e1,
                            int *sv, uint64_t wr_id)
{
    struct qrdma_sq_wqe w;
    uint8_t ops[1];

    w = qrdma_dp_wqe_sge(wr_id, QRDMA_WR_RDMA_READ, e0->data + 4096 * 5, 100,
                         e0->lkey);
    w.rdma.remote_addr = cpu_to_le64(e1->data + 4096 * 2);
    w.rdma.rkey = cpu_to_le32(e1->rkey);
    qrdma_dp_post_send(e0, a, &w);
    g_assert_cmpint(qrdma_dp_relay(sv[0], sv[2], 1, ops), ==, 1);
    g_assert_cmpint(qrdma_dp_relay(sv[2], sv[0], 1, ops), ==, 1);
    g_assert_cmphex(ops[0], ==, 0x10);
    qrdma_dp_expect_cqe(e0, &e0->cq, wr_id, a->qpn, QRDMA_WC_RDMA_READ,
                        QRDMA_WC_SUCCESS);
}

/*
 * A duplicate READ is answered only from the responder resource of the
 * READ it repeats, and only for what that READ asked for: the same
 * request again, or the rest of it from one of its responses on (MIDDLE,
 * LAST).  One with another rkey (valid too), or a range the READ did not
 * ask for, or repeating a READ no resource keeps any more (with
 * max_dest_rd_atomic 1, an older one), is not answered.  A duplicate
 * SEND is acknowledged even without AckReq, but not with the PSN of a
 * READ taken after it.  A READ of more
 * than 2^31 bytes is an invalid request, and with max_dest_rd_atomic 0 so
 * is any READ: NAK, and the QP fails.
 */
static void test_wire_read_duplicates(void *obj, void *data,
                                      QGuestAllocator *alloc)
{
    enum { LEN = 3000 };
    int *sv = data;
    uint8_t req[QRDMA_DP_WIRE_FRAME_MAX], f[QRDMA_DP_WIRE_FRAME_MAX];
    uint8_t ops[8], aeth[8];
    uint8_t send[QRDMA_DP_WIRE_FRAME_MAX];
    uint32_t psn, other_rkey;
    struct qrdma_sq_wqe w;
    size_t len, slen;
    QQrdma q1;
    QrdmaDpEnv e0, e1;
    QrdmaDpQp a, b, c, d;

    qrdma_dp_wire_envs(obj, alloc, &q1, &e0, &e1);
    e1.max_dest_rd_atomic = 1;
    qrdma_dp_connect_rc(&e0, &a, &e1, &b, true);
    qrdma_dp_write_data(&e1, 4096 * 2, "read me twice");
    g_assert_cmpuint(qrdma_dp_reg_page_mr(&e1, e1.data + 4096 * 3,
                                          QRDMA_ACCESS_REMOTE_READ,
                                          &other_rkey), ==, 0);

    w = qrdma_dp_wqe_sge(0xa1, QRDMA_WR_RDMA_READ, e0.data + 4096 * 4, LEN,
                         e0.lkey);
    w.rdma.remote_addr = cpu_to_le64(e1.data + 4096 * 2);
    w.rdma.rkey = cpu_to_le32(e1.rkey);
    qrdma_dp_post_send(&e0, &a, &w);
    len = qrdma_dp_wire_recv(sv[0], req);
    g_assert_cmphex(qrdma_dp_wire_check_frame(req, len), ==, 0x0c);
    psn = qrdma_dp_wire_psn(req);
    qrdma_dp_wire_send(sv[2], req, len);
    g_assert_cmpint(qrdma_dp_relay(sv[2], sv[0], 3, ops), ==, 3);
    qrdma_dp_expect_cqe(&e0, &e0.cq, 0xa1, a.qpn, QRDMA_WC_RDMA_READ,
                        QRDMA_WC_SUCCESS);
    qrdma_dp_expect_data(&e0, 4096 * 4, "read me twice");

    /* the same READ again: answered whole */
    qrdma_dp_wire_send(sv[2], req, len);
    g_assert_cmpint(wire_answers(sv[2], ops, NULL), ==, 3);
    g_assert_cmphex(ops[0], ==, 0x0d);
    g_assert_cmphex(ops[2], ==, 0x0f);
    /* from its second response on: the rest */
    memcpy(f, req, len);
    wire_forge_read(f, len, psn + 1, e1.data + 4096 * 2 + 1024, e1.rkey,
                    LEN - 1024);
    qrdma_dp_wire_send(sv[2], f, len);
    g_assert_cmpint(wire_answers(sv[2], ops, NULL), ==, 2);
    g_assert_cmphex(ops[0], ==, 0x0e);
    g_assert_cmphex(ops[1], ==, 0x0f);

    /* another rkey, valid on the responder: not what the READ asked */
    memcpy(f, req, len);
    wire_forge_read(f, len, psn, e1.data + 4096 * 3, other_rkey, 100);
    qrdma_dp_wire_send(sv[2], f, len);
    g_assert_cmpint(wire_answers(sv[2], ops, NULL), ==, 0);
    /* the same rkey, a range the READ did not cover */
    memcpy(f, req, len);
    wire_forge_read(f, len, psn, e1.data + 4096 * 8, e1.rkey, LEN);
    qrdma_dp_wire_send(sv[2], f, len);
    g_assert_cmpint(wire_answers(sv[2], ops, NULL), ==, 0);
    /* the rest from the second response, but more than the rest */
    memcpy(f, req, len);
    wire_forge_read(f, len, psn + 1, e1.data + 4096 * 2 + 1024, e1.rkey,
                    LEN);
    qrdma_dp_wire_send(sv[2], f, len);
    g_assert_cmpint(wire_answers(sv[2], ops, NULL), ==, 0);
    g_assert_cmpuint(qrdma_t_qom_get(&e1.t, "dup-unmatched"), ==, 3);

    /* a second READ takes the one resource: the first is no longer kept */
    wire_small_read(&e0, &a, &e1, sv, 0xa2);
    qrdma_dp_wire_send(sv[2], req, len);
    g_assert_cmpint(wire_answers(sv[2], ops, NULL), ==, 0);
    g_assert_cmpuint(qrdma_t_qom_get(&e1.t, "dup-unmatched"), ==, 4);

    /* a SEND that comes again without AckReq is acknowledged all the same */
    qrdma_dp_post_recv(&e1, &b, 0xb1, e1.data + 4096 * 6, 64, e1.lkey);
    w = qrdma_dp_wqe_sge(0xa4, QRDMA_WR_SEND, e0.data, 16, e0.lkey);
    qrdma_dp_post_send(&e0, &a, &w);
    slen = qrdma_dp_wire_recv(sv[0], send);
    g_assert_cmphex(qrdma_dp_wire_check_frame(send, slen), ==, 0x04);
    qrdma_dp_wire_send(sv[2], send, slen);
    g_assert_cmpint(qrdma_dp_relay(sv[2], sv[0], 1, ops), ==, 1);
    qrdma_dp_expect_cqe(&e0, &e0.cq, 0xa4, a.qpn, QRDMA_WC_SEND,
                        QRDMA_WC_SUCCESS);
    qrdma_dp_expect_cqe(&e1, &e1.cq, 0xb1, b.qpn, QRDMA_WC_RECV,
                        QRDMA_WC_SUCCESS);
    send[QRDMA_DP_WIRE_BTH + 8] &= 0x7f;
    qrdma_dp_wire_set_icrc(send, slen);
    qrdma_dp_wire_send(sv[2], send, slen);
    g_assert_cmpint(wire_answers(sv[2], ops, aeth), ==, 1);
    g_assert_cmphex(ops[0], ==, 0x11);
    g_assert_cmphex(aeth[0] & 0xe0, ==, 0);
    qrdma_dp_expect_no_cqe(&e1, &e1.cq);

    /*
     * ... but not once a READ was taken after it: all taken ends with the
     * READ's response, and an ACK of its PSN could complete the READ at a
     * requester that lost that response (rxe's does).
     */
    wire_small_read(&e0, &a, &e1, sv, 0xa5);
    qrdma_dp_wire_send(sv[2], send, slen);
    g_assert_cmpint(wire_answers(sv[2], ops, NULL), ==, 0);
    g_assert_cmpuint(qrdma_t_qom_get(&e1.t, "acks-withheld"), ==, 1);
    qrdma_dp_expect_no_cqe(&e1, &e1.cq);

    /* more than 2^31 bytes: NAK invalid request, the QP fails */
    memcpy(f, req, len);
    wire_forge_read(f, len, psn + 6, e1.data, e1.rkey, 0x80000001u);
    qrdma_dp_wire_send(sv[2], f, len);
    /*
     * Not followed by the ACK a QP that goes to ERR sends of what it took:
     * that ends with the READ's response too.
     */
    g_assert_cmpint(wire_answers(sv[2], ops, aeth), ==, 1);
    g_assert_cmphex(ops[0], ==, 0x11);
    g_assert_cmphex(aeth[0], ==, 0x61);
    g_assert_cmpuint(qp_state(&e1, b.qpn), ==, QRDMA_QPS_ERR);
    g_assert_cmpuint(qrdma_t_qom_get(&e1.t, "acks-withheld"), ==, 2);

    /* no responder resources at all: any READ is an invalid request */
    e1.max_dest_rd_atomic = 0;
    qrdma_dp_connect_rc(&e0, &c, &e1, &d, true);
    w = qrdma_dp_wqe_sge(0xa3, QRDMA_WR_RDMA_READ, e0.data + 4096 * 5, 100,
                         e0.lkey);
    w.rdma.remote_addr = cpu_to_le64(e1.data + 4096 * 2);
    w.rdma.rkey = cpu_to_le32(e1.rkey);
    qrdma_dp_post_send(&e0, &c, &w);
    g_assert_cmpint(qrdma_dp_relay(sv[0], sv[2], 1, ops), ==, 1);
    g_assert_cmpint(wire_answers(sv[2], ops, aeth), ==, 1);
    g_assert_cmphex(ops[0], ==, 0x11);
    g_assert_cmphex(aeth[0], ==, 0x61);
    g_assert_cmpuint(qp_state(&e1, d.qpn), ==, QRDMA_QPS_ERR);
    qrdma_dp_wire_drain(sv[0]);
}

/*
 * RoCE does not wait for the Ethernet function's RX buffers: with its
 * ring enabled and empty, a broadcast for the Ethernet function comes
 * first, and a SEND behind it still lands at once; the broadcast waits
 * for a buffer and lands in the first one posted.  (Both used to wait in
 * QEMU's net layer until the guest posted a buffer.)
 */
static void test_wire_roce_without_eth_buffers(void *obj, void *data,
                                               QGuestAllocator *alloc)
{
    int *sv = data;
    uint8_t bcast[60] = {
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x52, 0x54, 0, 0, 2, 0x20,
        0x08, 0x06,
    };
    uint8_t got[sizeof(bcast)], ops[8];
    struct qrdma_eth_desc desc = { };
    struct qrdma_sq_wqe w;
    uint64_t ring, buf;
    QQrdma q1;
    QrdmaDpEnv e0, e1;
    QrdmaDpQp a, b;
    int i;

    for (i = 14; i < (int)sizeof(bcast); i++) {
        bcast[i] = i;
    }
    qrdma_dp_wire_envs(obj, alloc, &q1, &e0, &e1);
    qrdma_dp_connect_rc(&e0, &a, &e1, &b, true);
    ring = guest_alloc(alloc, 4096);
    qtest_memset(e1.t.qts, ring, 0, 4096);
    qrdma_t_writeq(&e1.t, QRDMA_REG_ETH_TX_BASE, ring + 2048);
    qrdma_t_writel(&e1.t, QRDMA_REG_ETH_TX_LOG2, 4);
    qrdma_t_writeq(&e1.t, QRDMA_REG_ETH_RX_BASE, ring);
    qrdma_t_writel(&e1.t, QRDMA_REG_ETH_RX_LOG2, 4);
    qrdma_t_writel(&e1.t, QRDMA_REG_ETH_CTRL, QRDMA_ETH_CTRL_ENABLE);
    g_assert_cmphex(qrdma_t_readl(&e1.t, QRDMA_REG_ETH_CTRL), ==,
                    QRDMA_ETH_CTRL_ENABLE);

    qrdma_dp_wire_send(sv[2], bcast, sizeof(bcast));
    qrdma_dp_write_data(&e0, 0, "past the broadcast");
    qrdma_dp_post_recv(&e1, &b, 0xb1, e1.data + 4096, 64, e1.lkey);
    w = qrdma_dp_wqe_sge(0xa1, QRDMA_WR_SEND, e0.data, 19, e0.lkey);
    qrdma_dp_post_send(&e0, &a, &w);
    g_assert_cmpint(qrdma_dp_relay(sv[0], sv[2], 1, ops), ==, 1);
    qrdma_dp_expect_cqe(&e1, &e1.cq, 0xb1, b.qpn, QRDMA_WC_RECV,
                        QRDMA_WC_SUCCESS);
    qrdma_dp_expect_data(&e1, 4096, "past the broadcast");
    g_assert_cmpint(qrdma_dp_relay(sv[2], sv[0], 1, ops), ==, 1);
    qrdma_dp_expect_cqe(&e0, &e0.cq, 0xa1, a.qpn, QRDMA_WC_SEND,
                        QRDMA_WC_SUCCESS);
    g_assert_cmpuint(qrdma_t_qom_get(&e1.t, "eth-rx-frames"), ==, 0);

    /* the broadcast waited for a buffer */
    buf = guest_alloc(alloc, 2048);
    desc.addr = cpu_to_le64(buf);
    desc.len = cpu_to_le16(2048);
    qtest_memwrite(e1.t.qts, ring, &desc, sizeof(desc));
    qrdma_t_writel(&e1.t, QRDMA_REG_ETH_RX_PI, 1);
    qrdma_dp_wire_expect_count(&e1, "eth-rx-frames", 1);
    qtest_memread(e1.t.qts, ring, &desc, sizeof(desc));
    g_assert_cmphex(le16_to_cpu(desc.flags), ==, QRDMA_ETH_DESC_DONE);
    g_assert_cmpuint(le16_to_cpu(desc.len), ==, sizeof(bcast));
    qtest_memread(e1.t.qts, buf, got, sizeof(got));
    g_assert_cmpmem(got, sizeof(got), bcast, sizeof(bcast));
    g_assert_cmpuint(qrdma_t_qom_get(&e1.t, "eth-rx-dropped"), ==, 0);
}

/*
 * A UD datagram to a multicast group over the wire reaches the attached
 * QP of the other side, and so does one of 0 bytes (it was dropped: a
 * frame with no payload has no payload iterator).
 */
static void test_wire_ud_mcast(void *obj, void *data, QGuestAllocator *alloc)
{
    static const uint8_t group[16] = { [10] = 0xff, [11] = 0xff,
                                       239, 1, 2, 3 };
    struct qrdma_cmd cmd = { .hdr.opcode = QRDMA_CMD_CREATE_AH };
    struct qrdma_cmd att = { .hdr.opcode = QRDMA_CMD_ATTACH_MCAST };
    int *sv = data;
    uint8_t f[QRDMA_DP_WIRE_FRAME_MAX];
    struct qrdma_cmpl cmpl;
    struct qrdma_sq_wqe w;
    struct qrdma_cqe cqe;
    uint32_t len[2] = { 9, 0 };
    QQrdma q1;
    QrdmaDpEnv e0, e1;
    QrdmaDpQp a, b;
    size_t n;
    int i;

    qrdma_dp_wire_envs(obj, alloc, &q1, &e0, &e1);
    g_assert_cmpuint(qrdma_dp_create_qp(&e0, &a, QRDMA_QPT_UD, 0, &e0.cq,
                                        &e0.cq), ==, 0);
    g_assert_cmpuint(qrdma_dp_create_qp(&e1, &b, QRDMA_QPT_UD, 0, &e1.cq,
                                        &e1.cq), ==, 0);
    qrdma_dp_to_rtr(&e0, &a, 0);
    qrdma_dp_to_rts(&e0, &a, 0);
    qrdma_dp_to_rtr(&e1, &b, 0);
    qrdma_dp_to_rts(&e1, &b, 0);
    att.mcast.qpn = cpu_to_le32(b.qpn);
    memcpy(att.mcast.gid, group, 16);
    g_assert_cmpuint(qrdma_t_exec(&e1.t, &att, NULL), ==, QRDMA_STATUS_OK);
    cmd.create_ah.pd = cpu_to_le32(e0.pd);
    cmd.create_ah.av.hop_limit = 1;
    cmd.create_ah.av.vlan_id = cpu_to_le16(QRDMA_VLAN_NONE);
    memcpy(cmd.create_ah.av.dgid, group, 16);
    g_assert_cmpuint(qrdma_t_exec(&e0.t, &cmd, &cmpl), ==, 0);
    qrdma_dp_write_data(&e0, 0, "to all");

    for (i = 0; i < 2; i++) {
        qrdma_dp_post_recv(&e1, &b, 0xb1 + i, e1.data + 4096 * (1 + i), 256,
                           e1.lkey);
        w = qrdma_dp_wqe_sge(0xa1 + i, QRDMA_WR_SEND, e0.data, len[i], e0.lkey);
        w.num_sge = len[i] ? 1 : 0;
        w.ud.ah = cmpl.handle;
        w.ud.remote_qpn = cpu_to_le32(0xffffff);
        w.ud.remote_qkey = cpu_to_le32(0x1234);
        qrdma_dp_post_send(&e0, &a, &w);
        qrdma_dp_expect_cqe(&e0, &e0.cq, 0xa1 + i, a.qpn, QRDMA_WC_SEND,
                            QRDMA_WC_SUCCESS);
        n = qrdma_dp_wire_recv(sv[0], f);
        g_assert_cmpuint(n, >, 0);
        /* to the group's MAC, 01:00:5e:01:02:03 */
        g_assert_cmphex(f[0], ==, 0x01);
        g_assert_cmphex(f[5], ==, 0x03);
        qrdma_dp_wire_send(sv[2], f, n);
        g_assert_true(qrdma_dp_poll_cq(&e1, &e1.cq, &cqe));
        g_assert_cmphex(cqe.wr_id, ==, 0xb1 + i);
        g_assert_cmpuint(cqe.status, ==, QRDMA_WC_SUCCESS);
        g_assert_cmpuint(le32_to_cpu(cqe.byte_len), ==, 40 + len[i]);
        g_assert_cmphex(le32_to_cpu(cqe.src_qp), ==, a.qpn);
    }
    qrdma_dp_expect_data(&e1, 4096 + 40, "to all");
}

/*
 * A connected QP hears only its peer: a SEND for it from another source
 * address, or from its peer's address on another VLAN, is dropped and
 * counted, and the real one then lands (rxe checks the same).
 */
static void test_wire_foreign_source(void *obj, void *data,
                                     QGuestAllocator *alloc)
{
    int *sv = data;
    uint8_t f[QRDMA_DP_WIRE_FRAME_MAX], g[QRDMA_DP_WIRE_FRAME_MAX + 4], ops[8];
    struct qrdma_sq_wqe w;
    uint64_t dropped;
    QQrdma q1;
    QrdmaDpEnv e0, e1;
    QrdmaDpQp a, b;
    size_t n;

    qrdma_dp_wire_envs(obj, alloc, &q1, &e0, &e1);
    qrdma_dp_connect_rc(&e0, &a, &e1, &b, true);
    qrdma_dp_write_data(&e0, 0, "only from the peer");
    qrdma_dp_post_recv(&e1, &b, 0xb1, e1.data + 4096, 64, e1.lkey);
    w = qrdma_dp_wqe_sge(0xa1, QRDMA_WR_SEND, e0.data, 19, e0.lkey);
    qrdma_dp_post_send(&e0, &a, &w);
    n = qrdma_dp_wire_recv(sv[0], f);
    g_assert_cmphex(qrdma_dp_wire_check_frame(f, n), ==, 0x04);
    dropped = qrdma_t_qom_get(&e1.t, "pkts-dropped");

    /* from 10.0.2.99 */
    memcpy(g, f, n);
    g[QRDMA_DP_WIRE_IP + 15] = 99;
    qrdma_dp_wire_fix(g, n);
    qrdma_dp_wire_send(sv[2], g, n);
    qrdma_dp_wire_expect_count(&e1, "pkts-dropped", dropped + 1);
    /* from the peer's address, on VLAN 5 */
    memcpy(g, f, 12);
    stw_be_p(g + 12, 0x8100);
    stw_be_p(g + 14, 5);
    memcpy(g + 16, f + 12, n - 12);
    qrdma_dp_wire_send(sv[2], g, n + 4);
    qrdma_dp_wire_expect_count(&e1, "pkts-dropped", dropped + 2);
    qrdma_dp_expect_no_cqe(&e1, &e1.cq);
    g_assert_true(qrdma_dp_relay_quiet(sv[2]));

    qrdma_dp_wire_send(sv[2], f, n);
    qrdma_dp_expect_cqe(&e1, &e1.cq, 0xb1, b.qpn, QRDMA_WC_RECV,
                        QRDMA_WC_SUCCESS);
    qrdma_dp_expect_data(&e1, 4096, "only from the peer");
    g_assert_cmpint(qrdma_dp_relay(sv[2], sv[0], 1, ops), ==, 1);
    qrdma_dp_expect_cqe(&e0, &e0.cq, 0xa1, a.qpn, QRDMA_WC_SEND,
                        QRDMA_WC_SUCCESS);
}

static void qrdma_dp_wire_register_tests(void)
{
    QOSGraphTestOptions wire_opts = {
        .before = qrdma_dp_wire_setup,
        .edge.extra_device_opts = "netdev=w0,mac=" QRDMA_DP_WIRE_MAC0,
    };
    QOSGraphTestOptions relay_opts = {
        .before = qrdma_dp_relay_setup,
        .edge.extra_device_opts = "netdev=w0,mac=" QRDMA_DP_WIRE_MAC0,
    };

    qos_add_test("dp/wire-rc", QRDMA_NODE_DP, test_wire_rc, &wire_opts);
    qos_add_test("dp/wire-bad-frames", QRDMA_NODE_DP, test_wire_bad_frames,
                 &wire_opts);
    qos_add_test("dp/wire-responder-resources", QRDMA_NODE_DP,
                 test_wire_responder_resources, &wire_opts);
    qos_add_test("dp/wire-ud-repeat", QRDMA_NODE_DP, test_wire_ud_repeat,
                 &relay_opts);
    qos_add_test("dp/wire-msn-pmtu", QRDMA_NODE_DP, test_wire_msn_pmtu,
                 &relay_opts);
    qos_add_test("dp/wire-flush-atomic-write", QRDMA_NODE_DP,
                 test_wire_flush_atomic_write, &relay_opts);
    qos_add_test("dp/wire-window", QRDMA_NODE_DP, test_wire_window,
                 &relay_opts);
    qos_add_test("dp/wire-read-engine", QRDMA_NODE_DP, test_wire_read_engine,
                 &relay_opts);
    qos_add_test("dp/wire-read-duplicates", QRDMA_NODE_DP,
                 test_wire_read_duplicates, &relay_opts);
    qos_add_test("dp/wire-roce-without-eth-buffers", QRDMA_NODE_DP,
                 test_wire_roce_without_eth_buffers, &relay_opts);
    qos_add_test("dp/wire-ud-mcast", QRDMA_NODE_DP, test_wire_ud_mcast,
                 &relay_opts);
    qos_add_test("dp/wire-foreign-source", QRDMA_NODE_DP,
                 test_wire_foreign_source, &relay_opts);
}

libqos_init(qrdma_dp_wire_register_tests);
