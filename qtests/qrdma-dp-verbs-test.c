/*
 * QTest testcase for the qrdma data path: the verbs on the loopback
 * fabric
 *
 * Copyright (c) 2026 The qrdma developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * SEND and receive, inline data, RDMA WRITE and READ, the atomics,
 * ATOMIC_WRITE and FLUSH; UD with its GRH, Q_Key and VLAN; SRQs and their
 * resize, CQ resize, RNR, completion and async events.
 */

#include "qemu/osdep.h"
#include "qemu/module.h"
#include "libqtest.h"
#include "libqos/libqos-malloc.h"
#include "qobject/qdict.h"
#include "qrdma-dp.h"

static void test_send_recv(void *obj, void *data, QGuestAllocator *alloc)
{
    struct qrdma_sq_wqe w;
    struct qrdma_cqe cqe;
    QrdmaDpQp a, b;
    QrdmaDpEnv e;

    qrdma_dp_env_init(&e, obj, alloc);
    qrdma_dp_pair(&e, &a, &b, QRDMA_QPT_RC, 0);
    qrdma_dp_write_data(&e, 0, "hello over qrdma");
    /* every byte must land: the buffer starts as something else */
    qtest_memset(e.t.qts, e.data + 4096, 0xff, 64);
    qrdma_dp_post_recv(&e, &b, 0xb1, e.data + 4096, 64, e.lkey);
    w = qrdma_dp_wqe_sge(0xa1, QRDMA_WR_SEND_WITH_IMM, e.data, 17, e.lkey);
    w.imm_data = cpu_to_be32(0xfeed);
    qrdma_dp_post_send(&e, &a, &w);

    g_assert_true(qrdma_dp_poll_cq(&e, &e.cq, &cqe));
    /* the receive completes first: the send is acknowledged after it */
    g_assert_cmphex(cqe.wr_id, ==, 0xb1);
    g_assert_cmpuint(cqe.opcode, ==, QRDMA_WC_RECV);
    g_assert_cmpuint(cqe.status, ==, QRDMA_WC_SUCCESS);
    g_assert_cmpuint(le32_to_cpu(cqe.byte_len), ==, 17);
    g_assert_cmphex(cqe.imm_data, ==, cpu_to_be32(0xfeed));
    g_assert_true(cqe.flags & QRDMA_CQE_F_WITH_IMM);
    g_assert_cmphex(le32_to_cpu(cqe.qpn), ==, b.qpn);
    qrdma_dp_expect_cqe(&e, &e.cq, 0xa1, a.qpn, QRDMA_WC_SEND,
                        QRDMA_WC_SUCCESS);
    qrdma_dp_expect_data(&e, 4096, "hello over qrdma");

    /* inline: the data travels in the WQE itself (S6) */
    qrdma_dp_post_recv(&e, &b, 0xb2, e.data + 8192, 64, e.lkey);
    memset(&w, 0, sizeof(w));
    w.wr_id = 0xa2;
    w.opcode = QRDMA_WR_SEND;
    w.flags = QRDMA_WQE_F_SIGNALED | QRDMA_WQE_F_INLINE;
    w.inline_len = cpu_to_le32(7);
    memcpy(w.inline_data, "inline", 7);
    qrdma_dp_post_send(&e, &a, &w);
    qrdma_dp_expect_cqe(&e, &e.cq, 0xb2, b.qpn, QRDMA_WC_RECV,
                        QRDMA_WC_SUCCESS);
    qrdma_dp_expect_cqe(&e, &e.cq, 0xa2, a.qpn, QRDMA_WC_SEND,
                        QRDMA_WC_SUCCESS);
    qrdma_dp_expect_data(&e, 8192, "inline");

    /* S5: unsignaled sends complete silently */
    qrdma_dp_post_recv(&e, &b, 0xb3, e.data + 8192, 64, e.lkey);
    w = qrdma_dp_wqe_sge(0xa3, QRDMA_WR_SEND, e.data, 4, e.lkey);
    w.flags = 0;
    qrdma_dp_post_send(&e, &a, &w);
    qrdma_dp_expect_cqe(&e, &e.cq, 0xb3, b.qpn, QRDMA_WC_RECV,
                        QRDMA_WC_SUCCESS);
    qrdma_dp_expect_no_cqe(&e, &e.cq);
}

static void test_write_read_atomic(void *obj, void *data,
                                   QGuestAllocator *alloc)
{
    struct qrdma_sq_wqe w;
    uint64_t v;
    QrdmaDpQp a, b;
    QrdmaDpEnv e;

    qrdma_dp_env_init(&e, obj, alloc);
    qrdma_dp_pair(&e, &a, &b, QRDMA_QPT_RC, 0);

    qrdma_dp_write_data(&e, 0, "written remotely");
    w = qrdma_dp_wqe_sge(1, QRDMA_WR_RDMA_WRITE, e.data, 17, e.lkey);
    w.rdma.remote_addr = cpu_to_le64(e.data + 3 * 4096 + 100);
    w.rdma.rkey = cpu_to_le32(e.lkey);
    qrdma_dp_post_send(&e, &a, &w);
    qrdma_dp_expect_cqe(&e, &e.cq, 1, a.qpn, QRDMA_WC_RDMA_WRITE,
                        QRDMA_WC_SUCCESS);
    qrdma_dp_expect_data(&e, 3 * 4096 + 100, "written remotely");

    /* across a page boundary of the MR, and back with READ */
    qrdma_dp_write_data(&e, 4096 * 5 - 5, "straddles pages");
    w = qrdma_dp_wqe_sge(2, QRDMA_WR_RDMA_READ, e.data + 4096 * 7, 16, e.lkey);
    w.rdma.remote_addr = cpu_to_le64(e.data + 4096 * 5 - 5);
    w.rdma.rkey = cpu_to_le32(e.lkey);
    qrdma_dp_post_send(&e, &a, &w);
    qrdma_dp_expect_cqe(&e, &e.cq, 2, a.qpn, QRDMA_WC_RDMA_READ,
                        QRDMA_WC_SUCCESS);
    qrdma_dp_expect_data(&e, 4096 * 7, "straddles pages");

    /* WRITE with immediate consumes a receive */
    qrdma_dp_post_recv(&e, &b, 0xb1, e.data + 8192, 64, e.lkey);
    w = qrdma_dp_wqe_sge(3, QRDMA_WR_RDMA_WRITE_WITH_IMM, e.data, 5, e.lkey);
    w.rdma.remote_addr = cpu_to_le64(e.data + 4096 * 8);
    w.rdma.rkey = cpu_to_le32(e.lkey);
    w.imm_data = cpu_to_be32(7);
    qrdma_dp_post_send(&e, &a, &w);
    qrdma_dp_expect_cqe(&e, &e.cq, 0xb1, b.qpn, QRDMA_WC_RECV_RDMA_WITH_IMM,
                        QRDMA_WC_SUCCESS);
    qrdma_dp_expect_cqe(&e, &e.cq, 3, a.qpn, QRDMA_WC_RDMA_WRITE,
                        QRDMA_WC_SUCCESS);

    /* atomics: 8 bytes, the old value lands in the local SGE */
    qtest_writeq(e.t.qts, e.data + 4096 * 9, 40);
    w = qrdma_dp_wqe_sge(4, QRDMA_WR_ATOMIC_FETCH_AND_ADD, e.data + 4096 * 10,
                         8, e.lkey);
    w.rdma.remote_addr = cpu_to_le64(e.data + 4096 * 9);
    w.rdma.rkey = cpu_to_le32(e.lkey);
    w.rdma.compare_add = cpu_to_le64(2);
    qrdma_dp_post_send(&e, &a, &w);
    qrdma_dp_expect_cqe(&e, &e.cq, 4, a.qpn, QRDMA_WC_FETCH_ADD,
                        QRDMA_WC_SUCCESS);
    g_assert_cmpuint(qtest_readq(e.t.qts, e.data + 4096 * 9), ==, 42);
    g_assert_cmpuint(qtest_readq(e.t.qts, e.data + 4096 * 10), ==, 40);

    w = qrdma_dp_wqe_sge(5, QRDMA_WR_ATOMIC_CMP_AND_SWP, e.data + 4096 * 10, 8,
                         e.lkey);
    w.rdma.remote_addr = cpu_to_le64(e.data + 4096 * 9);
    w.rdma.rkey = cpu_to_le32(e.lkey);
    w.rdma.compare_add = cpu_to_le64(42);
    w.rdma.swap = cpu_to_le64(7);
    qrdma_dp_post_send(&e, &a, &w);
    qrdma_dp_expect_cqe(&e, &e.cq, 5, a.qpn, QRDMA_WC_COMP_SWAP,
                        QRDMA_WC_SUCCESS);
    v = qtest_readq(e.t.qts, e.data + 4096 * 9);
    g_assert_cmpuint(v, ==, 7);

    /* a misaligned atomic is an invalid request: REM_INV_REQ_ERR */
    w.wr_id = 6;
    w.rdma.remote_addr = cpu_to_le64(e.data + 4096 * 9 + 4);
    qrdma_dp_post_send(&e, &a, &w);
    qrdma_dp_expect_cqe(&e, &e.cq, 6, a.qpn, 0, QRDMA_WC_REM_INV_REQ_ERR);
    qrdma_dp_expect_event(&e, 0, QRDMA_EV_QP_REQ_ERR, b.qpn);
}

/* ATOMIC_WRITE: 8 bytes from the WQE, needing remote write, RC only */
static void test_atomic_write(void *obj, void *data, QGuestAllocator *alloc)
{
    static const uint8_t bytes[8] = "ABCDEFG";
    struct qrdma_sq_wqe w;
    uint8_t got[8];
    uint32_t no_write;
    QrdmaDpQp a, b;
    QrdmaDpEnv e;

    qrdma_dp_env_init(&e, obj, alloc);
    g_assert_true(qrdma_dp_device_caps(&e) & QRDMA_DEV_CAP_ATOMIC_WRITE);
    qrdma_dp_pair(&e, &a, &b, QRDMA_QPT_RC, 0);

    /* the SGEs play no part: a bad one does not fail the WQE */
    qtest_writeq(e.t.qts, e.data + 4096 * 9, 0x1111111111111111ull);
    w = qrdma_dp_wqe_sge(1, QRDMA_WR_ATOMIC_WRITE, 0xdead0000, 8, 0xbad);
    w.rdma.remote_addr = cpu_to_le64(e.data + 4096 * 9);
    w.rdma.rkey = cpu_to_le32(e.lkey);
    memcpy(&w.rdma.compare_add, bytes, 8);
    qrdma_dp_post_send(&e, &a, &w);
    qrdma_dp_expect_cqe(&e, &e.cq, 1, a.qpn, QRDMA_WC_ATOMIC_WRITE,
                        QRDMA_WC_SUCCESS);
    qtest_memread(e.t.qts, e.data + 4096 * 9, got, 8);
    g_assert_cmpmem(got, 8, bytes, 8);

    /* an MR with every right but remote write refuses it */
    no_write = qrdma_dp_reg_mr(&e, e.pd, 4096 * 10, 4096,
                               QRDMA_ACCESS_LOCAL_WRITE |
                               QRDMA_ACCESS_REMOTE_READ |
                               QRDMA_ACCESS_REMOTE_ATOMIC);
    qtest_writeq(e.t.qts, e.data + 4096 * 10, 5);
    w.wr_id = 2;
    w.rdma.remote_addr = cpu_to_le64(0x10000000);
    w.rdma.rkey = cpu_to_le32(no_write);
    qrdma_dp_post_send(&e, &a, &w);
    qrdma_dp_expect_cqe(&e, &e.cq, 2, a.qpn, 0, QRDMA_WC_REM_ACCESS_ERR);
    qrdma_dp_expect_event(&e, 0, QRDMA_EV_QP_ACCESS_ERR, b.qpn);
    g_assert_cmpuint(qtest_readq(e.t.qts, e.data + 4096 * 10), ==, 5);

    /* misaligned: an invalid request, nothing written */
    qrdma_dp_pair(&e, &a, &b, QRDMA_QPT_RC, 0);
    w.wr_id = 3;
    w.rdma.remote_addr = cpu_to_le64(e.data + 4096 * 10 + 4);
    w.rdma.rkey = cpu_to_le32(e.lkey);
    qrdma_dp_post_send(&e, &a, &w);
    qrdma_dp_expect_cqe(&e, &e.cq, 3, a.qpn, 0, QRDMA_WC_REM_INV_REQ_ERR);
    qrdma_dp_expect_event(&e, 0, QRDMA_EV_QP_REQ_ERR, b.qpn);
    g_assert_cmpuint(qtest_readq(e.t.qts, e.data + 4096 * 10), ==, 5);

    /* inline: it has nothing to send inline, a local error */
    qrdma_dp_pair(&e, &a, &b, QRDMA_QPT_RC, 0);
    w.wr_id = 4;
    w.flags |= QRDMA_WQE_F_INLINE;
    w.rdma.remote_addr = cpu_to_le64(e.data + 4096 * 10);
    qrdma_dp_post_send(&e, &a, &w);
    qrdma_dp_expect_cqe(&e, &e.cq, 4, a.qpn, 0, QRDMA_WC_LOC_QP_OP_ERR);

    /* UC has no atomics */
    qrdma_dp_pair(&e, &a, &b, QRDMA_QPT_UC, 0);
    w.wr_id = 5;
    w.flags &= ~QRDMA_WQE_F_INLINE;
    qrdma_dp_post_send(&e, &a, &w);
    qrdma_dp_expect_cqe(&e, &e.cq, 5, a.qpn, 0, QRDMA_WC_LOC_QP_OP_ERR);
    g_assert_cmpuint(qtest_readq(e.t.qts, e.data + 4096 * 10), ==, 5);
    qrdma_dp_expect_no_cqe(&e, &e.cq);
}

/* One FLUSH on a fresh RC pair, completing with status. */
static void flush_once(QrdmaDpEnv *e, uint32_t rkey, uint64_t addr,
                       uint64_t len, uint8_t type, uint8_t level,
                       uint8_t status)
{
    struct qrdma_sq_wqe w = qrdma_dp_wqe_flush(7, rkey, addr, len, type, level);
    struct qrdma_cqe cqe;
    QrdmaDpQp a, b;

    qrdma_dp_pair(e, &a, &b, QRDMA_QPT_RC, 0);
    qrdma_dp_post_send(e, &a, &w);
    g_assert_true(qrdma_dp_poll_cq(e, &e->cq, &cqe));
    g_assert_cmphex(le32_to_cpu(cqe.qpn), ==, a.qpn);
    g_assert_cmpuint(cqe.status, ==, status);
    if (status == QRDMA_WC_SUCCESS) {
        g_assert_cmpuint(cqe.opcode, ==, QRDMA_WC_FLUSH);
        g_assert_cmpuint(cqe.byte_len, ==, 0);
    } else if (status == QRDMA_WC_REM_ACCESS_ERR) {
        qrdma_dp_expect_event(e, 0, QRDMA_EV_QP_ACCESS_ERR, b.qpn);
    }
}

/*
 * FLUSH: type GLOBAL needs the flush right on the responder QP and MR,
 * over the range or the whole MR; PERSISTENT is never granted.
 */
static void test_flush(void *obj, void *data, QGuestAllocator *alloc)
{
    uint32_t mr, no_flush;
    uint64_t page;
    QrdmaDpEnv e;

    qrdma_dp_env_init(&e, obj, alloc);
    g_assert_true(qrdma_dp_device_caps(&e) & QRDMA_DEV_CAP_FLUSH_GLOBAL);
    mr = qrdma_dp_reg_mr(&e, e.pd, 4096 * 10, 4096,
                         QRDMA_ACCESS_LOCAL_WRITE | QRDMA_ACCESS_REMOTE_WRITE |
                         QRDMA_ACCESS_FLUSH_GLOBAL);
    no_flush = qrdma_dp_reg_mr(&e, e.pd, 4096 * 11, 4096,
                               QRDMA_ACCESS_LOCAL_WRITE |
                               QRDMA_ACCESS_REMOTE_WRITE);

    /* the responder QP without the flush right refuses it */
    flush_once(&e, mr, 0x10000000, 4096, QRDMA_FLUSH_GLOBAL,
               QRDMA_FLUSH_RANGE, QRDMA_WC_REM_ACCESS_ERR);

    e.qp_access |= QRDMA_ACCESS_FLUSH_GLOBAL;
    flush_once(&e, mr, 0x10000000, 4096, QRDMA_FLUSH_GLOBAL,
               QRDMA_FLUSH_RANGE, QRDMA_WC_SUCCESS);
    flush_once(&e, mr, 0x10000800, 0, QRDMA_FLUSH_GLOBAL,
               QRDMA_FLUSH_RANGE, QRDMA_WC_SUCCESS);
    /* level MR: the address and length play no part */
    flush_once(&e, mr, 0x1234, 12345678, QRDMA_FLUSH_GLOBAL, QRDMA_FLUSH_MR,
               QRDMA_WC_SUCCESS);

    /* a range past the MR, an MR without the right, persistence */
    flush_once(&e, mr, 0x10000800, 4096, QRDMA_FLUSH_GLOBAL,
               QRDMA_FLUSH_RANGE, QRDMA_WC_REM_ACCESS_ERR);
    flush_once(&e, no_flush, 0x10000000, 8, QRDMA_FLUSH_GLOBAL,
               QRDMA_FLUSH_MR, QRDMA_WC_REM_ACCESS_ERR);
    flush_once(&e, mr, 0x10000000, 8, QRDMA_FLUSH_PERSISTENT,
               QRDMA_FLUSH_RANGE, QRDMA_WC_REM_ACCESS_ERR);
    flush_once(&e, mr, 0x10000000, 8,
               QRDMA_FLUSH_GLOBAL | QRDMA_FLUSH_PERSISTENT, QRDMA_FLUSH_MR,
               QRDMA_WC_REM_ACCESS_ERR);
    /* the local DMA key is no rkey, not even for the kernel's QPs */
    flush_once(&e, QRDMA_LOCAL_DMA_LKEY, e.data, 8, QRDMA_FLUSH_GLOBAL,
               QRDMA_FLUSH_RANGE, QRDMA_WC_REM_ACCESS_ERR);

    /* malformed: no type, an unknown type bit, an unknown level */
    flush_once(&e, mr, 0x10000000, 8, 0, QRDMA_FLUSH_RANGE,
               QRDMA_WC_LOC_QP_OP_ERR);
    flush_once(&e, mr, 0x10000000, 8, 4, QRDMA_FLUSH_RANGE,
               QRDMA_WC_LOC_QP_OP_ERR);
    flush_once(&e, mr, 0x10000000, 8, QRDMA_FLUSH_GLOBAL, 2,
               QRDMA_WC_LOC_QP_OP_ERR);
    qrdma_dp_expect_no_cqe(&e, &e.cq);

    /* the persistence right exists nowhere: REG_MR refuses it */
    page = e.data + 4096 * 12;
    g_assert_cmpuint(qrdma_dp_reg_page_mr(&e, page, QRDMA_ACCESS_LOCAL_WRITE |
                                          (1u << 9), NULL), ==,
                     QRDMA_STATUS_BAD_PARAM);
}

/* The ones' complement sum of an IPv4 header: 0xffff if its checksum is. */
static uint16_t ipv4_header_sum(const uint8_t *ip)
{
    uint32_t sum = 0;
    int i;

    for (i = 0; i < 20; i += 2) {
        sum += ip[i] << 8 | ip[i + 1];
    }
    while (sum >> 16) {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    return sum;
}

/* An AH on e's PD to ::ffff:10.0.2.<ip> on VLAN vlan_id: its handle. */
static uint32_t create_ah(QrdmaDpEnv *e, uint8_t ip, uint16_t vlan_id)
{
    struct qrdma_cmd cmd = { .hdr.opcode = QRDMA_CMD_CREATE_AH };
    struct qrdma_cmpl cmpl;

    cmd.create_ah.pd = cpu_to_le32(e->pd);
    cmd.create_ah.av.hop_limit = 64;
    cmd.create_ah.av.vlan_id = cpu_to_le16(vlan_id);
    memcpy(cmd.create_ah.av.dgid,
           (uint8_t[16]) { [10] = 0xff, [11] = 0xff, 10, 0, 2, ip }, 16);
    g_assert_cmpuint(qrdma_t_exec(&e->t, &cmd, &cmpl), ==, 0);
    return cmpl.handle;
}

/*
 * The VLAN of a UD receive (what ib_cm matches a MAD's GID by): in the
 * CQE of a CQ created with QRDMA_CQ_F_VLAN, as QRDMA_CQE_F_VLAN and
 * vlan_id; a CQ without it keeps the P_Key index (0) there, as drivers
 * before the flag read it.  A flag the device does not know fails
 * CREATE_CQ.
 */
static void ud_vlan(QrdmaDpEnv *e)
{
    static const uint16_t vlans[] = { 100, QRDMA_VLAN_NONE, 0, 4094 };
    struct qrdma_sq_wqe w;
    struct qrdma_cqe cqe;
    QrdmaDpCq vcq, bad;
    QrdmaDpQp a, b, c;
    size_t i;

    g_assert_true(qrdma_dp_device_caps(e) & QRDMA_DEV_CAP_CQE_VLAN);
    g_assert_cmpuint(qrdma_dp_create_cq_flags(e, &bad, 4, 0, 1u << 5), ==,
                     QRDMA_STATUS_BAD_PARAM);
    g_assert_cmpuint(qrdma_dp_create_cq_flags(e, &vcq, 4, 0, QRDMA_CQ_F_VLAN),
                     ==, 0);
    g_assert_cmpuint(qrdma_dp_create_qp(e, &a, QRDMA_QPT_UD, 0, &e->cq, &e->cq),
                     ==, 0);
    /* b receives on the CQ that asked for the VLAN, c on one that did not */
    g_assert_cmpuint(qrdma_dp_create_qp(e, &b, QRDMA_QPT_UD, 0, &e->cq, &vcq),
                     ==, 0);
    g_assert_cmpuint(qrdma_dp_create_qp(e, &c, QRDMA_QPT_UD, 0, &e->cq, &e->cq),
                     ==, 0);
    qrdma_dp_to_rtr(e, &a, 0);
    qrdma_dp_to_rtr(e, &b, 0);
    qrdma_dp_to_rtr(e, &c, 0);
    qrdma_dp_to_rts(e, &a, 0);
    qrdma_dp_write_data(e, 0, "tagged");

    for (i = 0; i < ARRAY_SIZE(vlans); i++) {
        qrdma_dp_post_recv(e, &b, 0xb0 + i, e->data + 4096, 256, e->lkey);
        qrdma_dp_post_recv(e, &c, 0xc0 + i, e->data + 8192, 256, e->lkey);
        w = qrdma_dp_wqe_sge(0xa0 + i, QRDMA_WR_SEND, e->data, 7, e->lkey);
        w.ud.ah = create_ah(e, 15, vlans[i]);
        w.ud.remote_qkey = cpu_to_le32(0x1234);
        w.ud.remote_qpn = cpu_to_le32(b.qpn);
        qrdma_dp_post_send(e, &a, &w);
        w.wr_id = 0xd0 + i;
        w.ud.remote_qpn = cpu_to_le32(c.qpn);
        qrdma_dp_post_send(e, &a, &w);

        g_assert_true(qrdma_dp_poll_cq(e, &vcq, &cqe));
        g_assert_cmphex(cqe.wr_id, ==, 0xb0 + i);
        g_assert_cmpuint(cqe.status, ==, QRDMA_WC_SUCCESS);
        if (vlans[i] == QRDMA_VLAN_NONE) {
            g_assert_false(cqe.flags & QRDMA_CQE_F_VLAN);
            g_assert_cmpuint(le16_to_cpu(cqe.pkey_index), ==, 0);
        } else {
            g_assert_true(cqe.flags & QRDMA_CQE_F_VLAN);
            g_assert_cmpuint(le16_to_cpu(cqe.vlan_id), ==, vlans[i]);
        }
        /* Each send completes as it leaves, before c takes the second. */
        qrdma_dp_expect_cqe(e, &e->cq, 0xa0 + i, a.qpn, QRDMA_WC_SEND,
                            QRDMA_WC_SUCCESS);
        qrdma_dp_expect_cqe(e, &e->cq, 0xd0 + i, a.qpn, QRDMA_WC_SEND,
                            QRDMA_WC_SUCCESS);
        g_assert_true(qrdma_dp_poll_cq(e, &e->cq, &cqe));
        g_assert_cmphex(cqe.wr_id, ==, 0xc0 + i);
        g_assert_false(cqe.flags & QRDMA_CQE_F_VLAN);
        g_assert_cmpuint(le16_to_cpu(cqe.pkey_index), ==, 0);
        qrdma_dp_expect_data(e, 4096 + 40, "tagged");
        qrdma_dp_expect_data(e, 8192 + 40, "tagged");
    }
    qrdma_dp_expect_no_cqe(e, &vcq);
    qrdma_dp_expect_no_cqe(e, &e->cq);
}

static void test_ud(void *obj, void *data, QGuestAllocator *alloc)
{
    struct qrdma_cmd cmd = { .hdr.opcode = QRDMA_CMD_CREATE_AH };
    struct qrdma_cmpl cmpl;
    struct qrdma_sq_wqe w;
    struct qrdma_cqe cqe;
    uint8_t grh[40];
    QrdmaDpQp a, b;
    QrdmaDpEnv e;

    qrdma_dp_env_init(&e, obj, alloc);
    g_assert_cmpuint(qrdma_dp_create_qp(&e, &a, QRDMA_QPT_UD, 0, &e.cq, &e.cq),
                     ==, 0);
    g_assert_cmpuint(qrdma_dp_create_qp(&e, &b, QRDMA_QPT_UD, 0, &e.cq, &e.cq),
                     ==, 0);
    qrdma_dp_to_rtr(&e, &a, 0);
    qrdma_dp_to_rtr(&e, &b, 0);
    qrdma_dp_to_rts(&e, &a, 0);
    qrdma_dp_to_rts(&e, &b, 0);
    cmd.create_ah.pd = cpu_to_le32(e.pd);
    cmd.create_ah.av.hop_limit = 17;
    cmd.create_ah.av.traffic_class = 0x28;
    memcpy(cmd.create_ah.av.dgid,
           (uint8_t[16]) { [10] = 0xff, [11] = 0xff, 10, 0, 2, 15 }, 16);
    g_assert_cmpuint(qrdma_t_exec(&e.t, &cmd, &cmpl), ==, 0);

    qrdma_dp_write_data(&e, 0, "datagram");
    qrdma_dp_post_recv(&e, &b, 0xb1, e.data + 4096, 256, e.lkey);
    w = qrdma_dp_wqe_sge(0xa1, QRDMA_WR_SEND, e.data, 9, e.lkey);
    w.ud.ah = cmpl.handle;
    w.ud.remote_qpn = cpu_to_le32(b.qpn);
    w.ud.remote_qkey = cpu_to_le32(0x1234);
    qrdma_dp_post_send(&e, &a, &w);
    /*
     * A datagram's send completes as it leaves, before the receiver takes
     * it from the loopback's queue.
     */
    qrdma_dp_expect_cqe(&e, &e.cq, 0xa1, a.qpn, QRDMA_WC_SEND,
                        QRDMA_WC_SUCCESS);
    g_assert_true(qrdma_dp_poll_cq(&e, &e.cq, &cqe));
    g_assert_cmphex(cqe.wr_id, ==, 0xb1);
    g_assert_cmpuint(le32_to_cpu(cqe.byte_len), ==, 40 + 9);
    g_assert_cmphex(le32_to_cpu(cqe.src_qp), ==, a.qpn);
    g_assert_true(cqe.flags & QRDMA_CQE_F_GRH);
    g_assert_cmpuint(cqe.network_hdr_type, ==, 1);
    /*
     * The GRH: an IPv4 header in its last 20 bytes (the AH's TTL and
     * traffic class, UDP, the length of UDP, BTH, DETH, payload and ICRC,
     * a valid checksum), then the payload.
     */
    qtest_memread(e.t.qts, e.data + 4096, grh, sizeof(grh));
    g_assert_cmphex(grh[20], ==, 0x45);
    g_assert_cmphex(grh[21], ==, 0x28);
    g_assert_cmpuint(grh[22] << 8 | grh[23], ==, 20 + 8 + 12 + 8 + 9 + 4);
    g_assert_cmpuint(grh[28], ==, 17);
    g_assert_cmpuint(grh[29], ==, 17);
    g_assert_cmphex(ipv4_header_sum(grh + 20), ==, 0xffff);
    g_assert_cmpmem(grh + 32, 4, "\x0a\x00\x02\x0f", 4);
    g_assert_cmpmem(grh + 36, 4, "\x0a\x00\x02\x0f", 4);
    qrdma_dp_expect_data(&e, 4096 + 40, "datagram");

    /* a wrong Q_Key, or no receive posted: dropped, the sender succeeds */
    qrdma_dp_post_recv(&e, &b, 0xb2, e.data + 4096, 256, e.lkey);
    w.wr_id = 0xa2;
    w.ud.remote_qkey = cpu_to_le32(0x9999);
    qrdma_dp_post_send(&e, &a, &w);
    qrdma_dp_expect_cqe(&e, &e.cq, 0xa2, a.qpn, QRDMA_WC_SEND,
                        QRDMA_WC_SUCCESS);
    qrdma_dp_expect_no_cqe(&e, &e.cq);

    /*
     * Longer than the receive buffer (40 + 300 > 256): lost, the receive
     * stays for the next datagram, and the QP goes on.
     */
    w.wr_id = 0xa3;
    w.ud.remote_qkey = cpu_to_le32(0x1234);
    w.sge[0].length = cpu_to_le32(300);
    qrdma_dp_post_send(&e, &a, &w);
    qrdma_dp_expect_cqe(&e, &e.cq, 0xa3, a.qpn, QRDMA_WC_SEND,
                        QRDMA_WC_SUCCESS);
    qrdma_dp_expect_no_cqe(&e, &e.cq);
    w.wr_id = 0xa4;
    w.sge[0].length = cpu_to_le32(9);
    qrdma_dp_post_send(&e, &a, &w);
    qrdma_dp_expect_cqe(&e, &e.cq, 0xa4, a.qpn, QRDMA_WC_SEND,
                        QRDMA_WC_SUCCESS);
    g_assert_true(qrdma_dp_poll_cq(&e, &e.cq, &cqe));
    g_assert_cmphex(cqe.wr_id, ==, 0xb2);
    g_assert_cmpuint(cqe.status, ==, QRDMA_WC_SUCCESS);
    g_assert_cmpuint(le32_to_cpu(cqe.byte_len), ==, 40 + 9);
    qrdma_dp_expect_data(&e, 4096 + 40, "datagram");

    ud_vlan(&e);
}

/* An SRQ receive WQE with one 64-byte buffer in data page 1 + (i % 8). */
static void srq_wqe(QrdmaDpEnv *e, uint64_t ring, uint32_t log2, uint32_t i)
{
    struct qrdma_rq_wqe r = {
        .wr_id = 0x100 + i,
        .num_sge = cpu_to_le32(1),
        .sge[0].addr = cpu_to_le64(e->data + 4096 * (1 + i % 8)),
        .sge[0].length = cpu_to_le32(64),
        .sge[0].lkey = cpu_to_le32(e->lkey),
    };

    qtest_memwrite(e->t.qts, ring + (i & ((1u << log2) - 1)) * 128, &r,
                   sizeof(r));
}

static uint8_t resize_srq(QrdmaDpEnv *e, uint32_t srq, uint32_t log2,
                          uint64_t pages_addr, uint32_t mask, uint32_t limit)
{
    struct qrdma_cmd cmd = { .hdr.opcode = QRDMA_CMD_MODIFY_SRQ };

    cmd.srq.srqn = cpu_to_le32(srq);
    cmd.srq.attr_mask = cpu_to_le32(mask);
    cmd.srq.srq_limit = cpu_to_le32(limit);
    cmd.srq.max_wr = cpu_to_le32(1u << log2);
    cmd.srq.log2_entries = cpu_to_le32(log2);
    cmd.srq.npages = cpu_to_le32(1);
    cmd.srq.pages_addr = cpu_to_le64(pages_addr);
    return qrdma_t_exec(&e->t, &cmd, NULL);
}

static uint32_t srq_max_wr(QrdmaDpEnv *e, uint32_t srq)
{
    struct qrdma_cmd cmd = { .hdr.opcode = QRDMA_CMD_QUERY_SRQ };
    struct qrdma_cmpl cmpl;

    cmd.query.index = cpu_to_le32(srq);
    g_assert_cmpuint(qrdma_t_exec(&e->t, &cmd, &cmpl), ==, 0);
    return le32_to_cpu(cmpl.data[0]);
}

/*
 * MODIFY_SRQ with MAX_WR: the WQEs posted and not taken move to the new
 * ring at their indices; a shrink below them, a bad ring, a limit not
 * below the new size are refused and change nothing.
 */
static void test_srq_resize(void *obj, void *data, QGuestAllocator *alloc)
{
    struct qrdma_cmd cmd = { .hdr.opcode = QRDMA_CMD_CREATE_SRQ };
    uint64_t ring4, ring16, ring2, bad;
    struct qrdma_cmpl cmpl;
    struct qrdma_sq_wqe w;
    uint64_t errors;
    uint32_t srq, i;
    QrdmaDpQp a, b;
    QrdmaDpEnv e;

    qrdma_dp_env_init(&e, obj, alloc);
    ring4 = guest_alloc(alloc, 4096);
    ring16 = guest_alloc(alloc, 4096);
    ring2 = guest_alloc(alloc, 4096);
    cmd.srq.pd = cpu_to_le32(e.pd);
    cmd.srq.max_wr = cpu_to_le32(4);
    cmd.srq.max_sge = cpu_to_le32(1);
    cmd.srq.log2_entries = cpu_to_le32(2);
    cmd.srq.npages = cpu_to_le32(1);
    cmd.srq.pages_addr = cpu_to_le64(qrdma_dp_page_list1(&e, ring4));
    g_assert_cmpuint(qrdma_t_exec(&e.t, &cmd, &cmpl), ==, 0);
    srq = le32_to_cpu(cmpl.handle);

    g_assert_cmpuint(qrdma_dp_create_qp(&e, &a, QRDMA_QPT_RC, 0, &e.cq, &e.cq),
                     ==, 0);
    g_assert_cmpuint(qrdma_dp_create_qp(&e, &b, QRDMA_QPT_RC, srq, &e.cq,
                                        &e.cq), ==, 0);
    qrdma_dp_to_rtr(&e, &a, b.qpn);
    qrdma_dp_to_rtr(&e, &b, a.qpn);
    qrdma_dp_to_rts(&e, &a, 0);
    qrdma_dp_to_rts(&e, &b, 0);

    /* 4 posted, the first taken: 3 left at indices 1-3 */
    for (i = 0; i < 4; i++) {
        srq_wqe(&e, ring4, 2, i);
    }
    qrdma_dp_ring_db(&e, QRDMA_DB_SRQ, srq, 4);
    w = qrdma_dp_wqe_sge(0xa0, QRDMA_WR_SEND, e.data, 8, e.lkey);
    qrdma_dp_post_send(&e, &a, &w);
    qrdma_dp_expect_cqe(&e, &e.cq, 0x100, b.qpn, QRDMA_WC_RECV,
                        QRDMA_WC_SUCCESS);
    qrdma_dp_expect_cqe(&e, &e.cq, 0xa0, a.qpn, QRDMA_WC_SEND,
                        QRDMA_WC_SUCCESS);

    /* refused, changing nothing: 3 WQEs do not fit a ring of 2 */
    errors = qrdma_t_qom_get(&e.t, "guest-errors");
    g_assert_cmpuint(resize_srq(&e, srq, 1, qrdma_dp_page_list1(&e, ring2),
                                QRDMA_SRQ_ATTR_MAX_WR, 0), ==,
                     QRDMA_STATUS_BAD_PARAM);
    /* a ring over max-srq-wr, and npages that do not match */
    g_assert_cmpuint(resize_srq(&e, srq, 15, qrdma_dp_page_list1(&e, ring16),
                                QRDMA_SRQ_ATTR_MAX_WR, 0), ==,
                     QRDMA_STATUS_BAD_PARAM);
    g_assert_cmpuint(resize_srq(&e, srq, 6, qrdma_dp_page_list1(&e, ring16),
                                QRDMA_SRQ_ATTR_MAX_WR, 0), ==,
                     QRDMA_STATUS_BAD_PARAM);
    /* a limit not below the new size */
    g_assert_cmpuint(resize_srq(&e, srq, 4, qrdma_dp_page_list1(&e, ring16),
                                QRDMA_SRQ_ATTR_MAX_WR | QRDMA_SRQ_ATTR_LIMIT,
                                16), ==, QRDMA_STATUS_BAD_PARAM);
    /* a page that is not guest RAM */
    bad = 0xfffffffff000ull;  /* not RAM on pc or q35 */
    g_assert_cmpuint(resize_srq(&e, srq, 4, qrdma_t_page_list(&e.t, &bad, 1),
                                QRDMA_SRQ_ATTR_MAX_WR, 0), ==,
                     QRDMA_STATUS_BAD_ADDR);
    g_assert_cmpuint(qrdma_t_qom_get(&e.t, "guest-errors"), ==, errors + 5);
    g_assert_cmpuint(srq_max_wr(&e, srq), ==, 4);

    /* grow to 16, arming the limit at 12 in the same command */
    qtest_memset(e.t.qts, ring16, 0, 4096);
    g_assert_cmpuint(resize_srq(&e, srq, 4, qrdma_dp_page_list1(&e, ring16),
                                QRDMA_SRQ_ATTR_MAX_WR | QRDMA_SRQ_ATTR_LIMIT,
                                12), ==, 0);
    g_assert_cmpuint(srq_max_wr(&e, srq), ==, 16);
    /* the old ring is no longer read: what it holds now plays no part */
    qtest_memset(e.t.qts, ring4, 0xff, 4096);
    /* indices go on from 4, in the new ring: 16 outstanding is a full ring */
    for (i = 4; i < 17; i++) {
        srq_wqe(&e, ring16, 4, i);
    }
    qrdma_dp_ring_db(&e, QRDMA_DB_SRQ, srq, 17);
    for (i = 1; i < 17; i++) {
        w.wr_id = 0xa0 + i;
        qrdma_dp_post_send(&e, &a, &w);
        qrdma_dp_expect_cqe(&e, &e.cq, 0x100 + i, b.qpn, QRDMA_WC_RECV,
                            QRDMA_WC_SUCCESS);
        qrdma_dp_expect_cqe(&e, &e.cq, 0xa0 + i, a.qpn, QRDMA_WC_SEND,
                            QRDMA_WC_SUCCESS);
        if (i == 5) {
            /* 11 left: below the limit of 12 */
            qrdma_dp_expect_event(&e, 0, QRDMA_EV_SRQ_LIMIT_REACHED, srq);
        }
    }

    /* empty now: shrink to 2, then post 2 at indices 17 and 18 */
    g_assert_cmpuint(resize_srq(&e, srq, 1, qrdma_dp_page_list1(&e, ring2),
                                QRDMA_SRQ_ATTR_MAX_WR, 0), ==, 0);
    g_assert_cmpuint(srq_max_wr(&e, srq), ==, 2);
    srq_wqe(&e, ring2, 1, 17);
    srq_wqe(&e, ring2, 1, 18);
    qrdma_dp_ring_db(&e, QRDMA_DB_SRQ, srq, 19);
    for (i = 17; i < 19; i++) {
        w.wr_id = 0xa0 + i;
        qrdma_dp_post_send(&e, &a, &w);
        qrdma_dp_expect_cqe(&e, &e.cq, 0x100 + i, b.qpn, QRDMA_WC_RECV,
                            QRDMA_WC_SUCCESS);
        qrdma_dp_expect_cqe(&e, &e.cq, 0xa0 + i, a.qpn, QRDMA_WC_SEND,
                            QRDMA_WC_SUCCESS);
    }
    qrdma_dp_expect_no_cqe(&e, &e.cq);
}

static uint8_t resize_cq(QrdmaDpEnv *e, QrdmaDpCq *cq, uint32_t log2,
                         uint64_t ring, uint32_t ci)
{
    struct qrdma_cmd cmd = { .hdr.opcode = QRDMA_CMD_RESIZE_CQ };

    cmd.cq.cqn = cpu_to_le32(cq->cqn);
    cmd.cq.pages_addr = cpu_to_le64(qrdma_dp_page_list1(e, ring));
    cmd.cq.npages = cpu_to_le32(1);
    cmd.cq.log2_entries = cpu_to_le32(log2);
    cmd.cq.ci = cpu_to_le32(ci);
    return qrdma_t_exec(&e->t, &cmd, NULL);
}

/*
 * RESIZE_CQ with CQEs not yet polled: they move to the new ring, in order.
 * A new ring too small for them is refused, and is no guest error (the
 * consumer cannot know how many CQEs the device wrote meanwhile); a
 * consumer index the device never reached is one.
 */
static void test_cq_resize_outstanding(void *obj, void *data,
                                       QGuestAllocator *alloc)
{
    struct qrdma_sq_wqe w;
    struct qrdma_cqe cqe;
    uint64_t errors, ring;
    uint32_t ah;
    QrdmaDpQp a, b;
    QrdmaDpCq cq;
    int i;
    QrdmaDpEnv e;

    qrdma_dp_env_init(&e, obj, alloc);
    g_assert_cmpuint(qrdma_dp_create_cq(&e, &cq, 4, 0), ==, 0);
    g_assert_cmpuint(qrdma_dp_create_qp(&e, &a, QRDMA_QPT_UD, 0, &cq, &cq), ==,
                     0);
    g_assert_cmpuint(qrdma_dp_create_qp(&e, &b, QRDMA_QPT_UD, 0, &e.cq, &e.cq),
                     ==, 0);
    qrdma_dp_to_rtr(&e, &a, 0);
    qrdma_dp_to_rtr(&e, &b, 0);
    qrdma_dp_to_rts(&e, &a, 0);
    ah = create_ah(&e, 15, QRDMA_VLAN_NONE);
    /* six sends to a QP with no receive posted: six send CQEs */
    for (i = 0; i < 6; i++) {
        w = qrdma_dp_wqe_sge(0x10 + i, QRDMA_WR_SEND, e.data, 8, e.lkey);
        w.ud.ah = ah;
        w.ud.remote_qpn = cpu_to_le32(b.qpn);
        w.ud.remote_qkey = cpu_to_le32(0x1234);
        qrdma_dp_post_send(&e, &a, &w);
    }
    qrdma_dp_expect_cqe(&e, &cq, 0x10, a.qpn, QRDMA_WC_SEND, QRDMA_WC_SUCCESS);
    /* the sixth in the ring, not polled: slot 5, phase of the first pass */
    for (i = 0; i < 200; i++) {
        qtest_memread(e.t.qts, cq.ring + 5 * 32, &cqe, sizeof(cqe));
        if (cqe.flags & QRDMA_CQE_F_PHASE) {
            break;
        }
        g_usleep(100);
    }
    g_assert_true(cqe.flags & QRDMA_CQE_F_PHASE);

    errors = qrdma_t_qom_get(&e.t, "guest-errors");
    ring = guest_alloc(e.t.alloc, 4096);
    qtest_memset(e.t.qts, ring, 0, 4096);
    /* five outstanding into four: refused, no guest error */
    g_assert_cmpuint(resize_cq(&e, &cq, 2, ring, 1), ==,
                     QRDMA_STATUS_BAD_PARAM);
    g_assert_cmpuint(qrdma_t_qom_get(&e.t, "guest-errors"), ==, errors);
    /* a consumer index past the six written: the guest's error */
    g_assert_cmpuint(resize_cq(&e, &cq, 3, ring, 7), ==,
                     QRDMA_STATUS_BAD_PARAM);
    g_assert_cmpuint(qrdma_t_qom_get(&e.t, "guest-errors"), ==, errors + 1);
    /* five into eight: moved, in order, polled from slot 0 */
    g_assert_cmpuint(resize_cq(&e, &cq, 3, ring, 1), ==, QRDMA_STATUS_OK);
    cq.ring = ring;
    cq.log2 = 3;
    cq.ci = 0;
    qtest_writel(e.t.qts, cq.ci_addr, 0);
    for (i = 1; i < 6; i++) {
        qrdma_dp_expect_cqe(&e, &cq, 0x10 + i, a.qpn, QRDMA_WC_SEND,
                            QRDMA_WC_SUCCESS);
    }
    qrdma_dp_expect_no_cqe(&e, &cq);
    g_assert_cmpuint(qrdma_t_qom_get(&e.t, "guest-errors"), ==, errors + 1);
}

/*
 * A datagram longer than the receive WQE it took from an SRQ: that
 * receive completes with LOC_LEN_ERR, and the QP goes on to take the next
 * datagram.
 */
static void test_ud_too_long_srq(void *obj, void *data,
                                 QGuestAllocator *alloc)
{
    struct qrdma_cmd cmd = { .hdr.opcode = QRDMA_CMD_CREATE_SRQ };
    struct qrdma_cmpl cmpl;
    struct qrdma_sq_wqe w;
    struct qrdma_cqe cqe;
    uint64_t ring;
    uint32_t srq, ah;
    QrdmaDpQp a, b;
    QrdmaDpEnv e;

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
    /* 0x100 and 0x101, of 64 bytes each */
    srq_wqe(&e, ring, 5, 0);
    srq_wqe(&e, ring, 5, 1);
    qrdma_dp_ring_db(&e, QRDMA_DB_SRQ, srq, 2);

    g_assert_cmpuint(qrdma_dp_create_qp(&e, &a, QRDMA_QPT_UD, 0, &e.cq, &e.cq),
                     ==, 0);
    g_assert_cmpuint(qrdma_dp_create_qp(&e, &b, QRDMA_QPT_UD, srq, &e.cq,
                                        &e.cq), ==, 0);
    qrdma_dp_to_rtr(&e, &a, 0);
    qrdma_dp_to_rtr(&e, &b, 0);
    qrdma_dp_to_rts(&e, &a, 0);
    qrdma_dp_to_rts(&e, &b, 0);
    memset(&cmd, 0, sizeof(cmd));
    cmd.hdr.opcode = QRDMA_CMD_CREATE_AH;
    cmd.create_ah.pd = cpu_to_le32(e.pd);
    cmd.create_ah.av.hop_limit = 64;
    memcpy(cmd.create_ah.av.dgid,
           (uint8_t[16]) { [10] = 0xff, [11] = 0xff, 10, 0, 2, 15 }, 16);
    g_assert_cmpuint(qrdma_t_exec(&e.t, &cmd, &cmpl), ==, 0);
    ah = cmpl.handle;

    qrdma_dp_write_data(&e, 0, "datagram");
    w = qrdma_dp_wqe_sge(0xa1, QRDMA_WR_SEND, e.data, 100, e.lkey);
    w.ud.ah = ah;
    w.ud.remote_qpn = cpu_to_le32(b.qpn);
    w.ud.remote_qkey = cpu_to_le32(0x1234);
    qrdma_dp_post_send(&e, &a, &w);
    /* Sent before it is taken: the send's completion comes first. */
    qrdma_dp_expect_cqe(&e, &e.cq, 0xa1, a.qpn, QRDMA_WC_SEND,
                        QRDMA_WC_SUCCESS);
    g_assert_true(qrdma_dp_poll_cq(&e, &e.cq, &cqe));
    g_assert_cmphex(cqe.wr_id, ==, 0x100);
    g_assert_cmpuint(cqe.status, ==, QRDMA_WC_LOC_LEN_ERR);
    w.wr_id = 0xa2;
    w.sge[0].length = cpu_to_le32(9);
    qrdma_dp_post_send(&e, &a, &w);
    qrdma_dp_expect_cqe(&e, &e.cq, 0xa2, a.qpn, QRDMA_WC_SEND,
                        QRDMA_WC_SUCCESS);
    g_assert_true(qrdma_dp_poll_cq(&e, &e.cq, &cqe));
    g_assert_cmphex(cqe.wr_id, ==, 0x101);
    g_assert_cmpuint(cqe.status, ==, QRDMA_WC_SUCCESS);
    g_assert_cmpuint(le32_to_cpu(cqe.byte_len), ==, 40 + 9);
    qrdma_dp_expect_data(&e, 4096 * 2 + 40, "datagram");
    qrdma_dp_expect_no_cqe(&e, &e.cq);
}

/* RNR: no receive posted at an RC responder */
static void test_rnr(void *obj, void *data, QGuestAllocator *alloc)
{
    struct qrdma_sq_wqe w;
    QrdmaDpQp a, b;
    QrdmaDpEnv e;

    qrdma_dp_env_init(&e, obj, alloc);
    qrdma_dp_pair(&e, &a, &b, QRDMA_QPT_RC, 0);
    w = qrdma_dp_wqe_sge(1, QRDMA_WR_SEND, e.data, 8, e.lkey);
    qrdma_dp_post_send(&e, &a, &w);
    qrdma_dp_expect_cqe(&e, &e.cq, 1, a.qpn, 0, QRDMA_WC_RNR_RETRY_EXC_ERR);

    /* with retries: the receive posted in the meantime is taken */
    qrdma_dp_pair(&e, &a, &b, QRDMA_QPT_RC, 3);
    w.wr_id = 2;
    qrdma_dp_post_send(&e, &a, &w);
    qrdma_dp_expect_no_cqe(&e, &e.cq);
    qrdma_dp_post_recv(&e, &b, 0xb2, e.data + 4096, 64, e.lkey);
    qtest_clock_step(e.t.qts, 100 * 1000 * 1000);
    qrdma_dp_expect_cqe(&e, &e.cq, 0xb2, b.qpn, QRDMA_WC_RECV,
                        QRDMA_WC_SUCCESS);
    qrdma_dp_expect_cqe(&e, &e.cq, 2, a.qpn, QRDMA_WC_SEND, QRDMA_WC_SUCCESS);

    /*
     * RDMA WRITE with immediate meets the RNR condition too, before any
     * data lands: one packet, and 3 KiB at MTU 1024 (a burst of 3).  The
     * retry, after a receive is posted, places it all.
     */
    qrdma_dp_pair(&e, &a, &b, QRDMA_QPT_RC, 7);
    qrdma_dp_write_data(&e, 0, "write with imm after RNR");
    w = qrdma_dp_wqe_sge(4, QRDMA_WR_RDMA_WRITE_WITH_IMM, e.data, 25, e.lkey);
    w.rdma.remote_addr = cpu_to_le64(e.data + 8192);
    w.rdma.rkey = cpu_to_le32(e.rkey);
    qrdma_dp_post_send(&e, &a, &w);
    qrdma_dp_expect_no_cqe(&e, &e.cq);
    qrdma_dp_post_recv(&e, &b, 0xb4, e.data + 4096, 64, e.lkey);
    qtest_clock_step(e.t.qts, 100 * 1000 * 1000);
    qrdma_dp_expect_cqe(&e, &e.cq, 0xb4, b.qpn, QRDMA_WC_RECV_RDMA_WITH_IMM,
                        QRDMA_WC_SUCCESS);
    qrdma_dp_expect_cqe(&e, &e.cq, 4, a.qpn, QRDMA_WC_RDMA_WRITE,
                        QRDMA_WC_SUCCESS);
    qrdma_dp_expect_data(&e, 8192, "write with imm after RNR");
    w.wr_id = 5;
    w.sge[0].length = cpu_to_le32(3072);
    w.rdma.remote_addr = cpu_to_le64(e.data + 12288);
    qrdma_dp_post_send(&e, &a, &w);
    qrdma_dp_expect_no_cqe(&e, &e.cq);
    qrdma_dp_post_recv(&e, &b, 0xb5, e.data + 4096, 64, e.lkey);
    qtest_clock_step(e.t.qts, 100 * 1000 * 1000);
    qrdma_dp_expect_cqe(&e, &e.cq, 0xb5, b.qpn, QRDMA_WC_RECV_RDMA_WITH_IMM,
                        QRDMA_WC_SUCCESS);
    qrdma_dp_expect_cqe(&e, &e.cq, 5, a.qpn, QRDMA_WC_RDMA_WRITE,
                        QRDMA_WC_SUCCESS);
    qrdma_dp_expect_data(&e, 12288, "write with imm after RNR");

    /* UC: no receive, the message is dropped, the sender succeeds */
    qrdma_dp_pair(&e, &a, &b, QRDMA_QPT_UC, 0);
    w = qrdma_dp_wqe_sge(3, QRDMA_WR_SEND, e.data, 8, e.lkey);
    qrdma_dp_post_send(&e, &a, &w);
    qrdma_dp_expect_cqe(&e, &e.cq, 3, a.qpn, QRDMA_WC_SEND, QRDMA_WC_SUCCESS);
    qrdma_dp_expect_no_cqe(&e, &e.cq);
}

/* Completion events, and the async events the device raises. */
static void test_events(void *obj, void *data, QGuestAllocator *alloc)
{
    struct qrdma_sq_wqe w;
    QDict *rsp;
    QrdmaDpCq small;
    QrdmaDpQp a, b;
    QrdmaDpEnv e;

    qrdma_dp_env_init(&e, obj, alloc);
    g_assert_cmpuint(qrdma_dp_create_qp(&e, &a, QRDMA_QPT_RC, 0, &e.cq, &e.cq),
                     ==, 0);
    g_assert_cmpuint(qrdma_dp_create_qp(&e, &b, QRDMA_QPT_RC, 0, &e.cq, &e.cq),
                     ==, 0);
    qrdma_dp_to_rtr(&e, &a, b.qpn);
    qrdma_dp_to_rtr(&e, &b, a.qpn);
    qrdma_dp_to_rts(&e, &a, 0);

    /* COMM_EST: the first message reaches b while it is in RTR */
    qrdma_dp_ring_db(&e, QRDMA_DB_CQ_ARM, e.cq.cqn, QRDMA_DB_CQ_ARM_NEXT);
    qrdma_dp_post_recv(&e, &b, 0xb0, e.data, 64, e.lkey);
    w = qrdma_dp_wqe_sge(0xa0, QRDMA_WR_SEND, e.data, 8, e.lkey);
    qrdma_dp_post_send(&e, &a, &w);
    qrdma_dp_expect_event(&e, 0, QRDMA_EV_COMM_EST, b.qpn);
    /* the CQ was armed: one completion event on its EQ, then disarmed */
    qrdma_dp_expect_event(&e, 1, QRDMA_EV_COMPLETION, e.cq.cqn);
    qrdma_dp_expect_cqe(&e, &e.cq, 0xb0, b.qpn, QRDMA_WC_RECV,
                        QRDMA_WC_SUCCESS);
    qrdma_dp_expect_cqe(&e, &e.cq, 0xa0, a.qpn, QRDMA_WC_SEND,
                        QRDMA_WC_SUCCESS);
    g_assert_cmpuint(qrdma_t_readl(&e.t, QRDMA_REG_EQ(1) + QRDMA_REG_EQ_PI),
                     ==, 1);

    /* solicited arming: only a solicited CQE (or an error) wakes */
    qrdma_dp_to_rts(&e, &b, 0);
    qrdma_dp_ring_db(&e, QRDMA_DB_CQ_ARM, e.cq.cqn, QRDMA_DB_CQ_ARM_SOLICITED);
    qrdma_dp_post_recv(&e, &b, 0xb1, e.data, 64, e.lkey);
    w.wr_id = 0xa1;
    qrdma_dp_post_send(&e, &a, &w);
    qrdma_dp_expect_cqe(&e, &e.cq, 0xb1, b.qpn, QRDMA_WC_RECV,
                        QRDMA_WC_SUCCESS);
    qrdma_dp_expect_cqe(&e, &e.cq, 0xa1, a.qpn, QRDMA_WC_SEND,
                        QRDMA_WC_SUCCESS);
    g_assert_cmpuint(qrdma_t_readl(&e.t, QRDMA_REG_EQ(1) + QRDMA_REG_EQ_PI),
                     ==, 1);
    qrdma_dp_post_recv(&e, &b, 0xb2, e.data, 64, e.lkey);
    w.wr_id = 0xa2;
    w.flags |= QRDMA_WQE_F_SOLICITED;
    qrdma_dp_post_send(&e, &a, &w);
    qrdma_dp_expect_event(&e, 1, QRDMA_EV_COMPLETION, e.cq.cqn);
    qrdma_dp_expect_cqe(&e, &e.cq, 0xb2, b.qpn, QRDMA_WC_RECV,
                        QRDMA_WC_SUCCESS);
    qrdma_dp_expect_cqe(&e, &e.cq, 0xa2, a.qpn, QRDMA_WC_SEND,
                        QRDMA_WC_SUCCESS);

    /* SQ_DRAINED on RTS -> SQD with notification */
    {
        struct qrdma_qp_attr at = {
            .attr_mask = cpu_to_le32(QRDMA_QP_ATTR_STATE |
                                     QRDMA_QP_ATTR_EN_SQD_ASYNC_NOTIFY),
            .qp_state = QRDMA_QPS_SQD,
            .en_sqd_async_notify = 1,
        };
        g_assert_cmpuint(qrdma_t_modify_qp(&e.t, 0, a.qpn, &at), ==, 0);
        qrdma_dp_expect_event(&e, 0, QRDMA_EV_SQ_DRAINED, a.qpn);
    }

    /* CQ_ERR: a CQ of two entries whose consumer never polls */
    g_assert_cmpuint(qrdma_dp_create_cq(&e, &small, 1, 1), ==, 0);
    g_assert_cmpuint(qrdma_dp_create_qp(&e, &b, QRDMA_QPT_UD, 0, &small,
                                        &small), ==, 0);
    qrdma_dp_to_rtr(&e, &b, 0);
    qrdma_dp_to_rts(&e, &b, 0);
    /* a bad opcode: an error CQE, the SQ in SQE, the next two flushed */
    w = qrdma_dp_wqe_sge(1, 0x55, e.data, 8, e.lkey);
    qrdma_dp_post_send(&e, &b, &w);
    w.wr_id = 2;
    qrdma_dp_post_send(&e, &b, &w);
    w.wr_id = 3;
    qrdma_dp_post_send(&e, &b, &w);
    qrdma_dp_expect_event(&e, 0, QRDMA_EV_CQ_ERR, small.cqn);
    /* the QP whose completion was lost: QP_FATAL, and ERR */
    qrdma_dp_expect_event(&e, 0, QRDMA_EV_QP_FATAL, b.qpn);
    {
        struct qrdma_query_qp_resp r;

        g_assert_cmpuint(qrdma_t_query_qp(&e.t, 0, b.qpn, &r), ==, 0);
        g_assert_cmpuint(r.attr.qp_state, ==, QRDMA_QPS_ERR);
    }

    /* PORT_ERR and PORT_ACTIVE follow the link */
    rsp = qtest_qmp(e.t.qts, "{ 'execute': 'set_link', 'arguments': "
                    "{ 'name': 'qrdma0', 'up': false } }");
    qobject_unref(rsp);
    qrdma_dp_expect_event(&e, 0, QRDMA_EV_PORT_ERR, 1);
    rsp = qtest_qmp(e.t.qts, "{ 'execute': 'set_link', 'arguments': "
                    "{ 'name': 'qrdma0', 'up': true } }");
    qobject_unref(rsp);
    qrdma_dp_expect_event(&e, 0, QRDMA_EV_PORT_ACTIVE, 1);
    /*
     * A set_link that leaves the link as it was raises nothing: the next
     * event is the PORT_ERR of the next change, not a second PORT_ACTIVE.
     */
    rsp = qtest_qmp(e.t.qts, "{ 'execute': 'set_link', 'arguments': "
                    "{ 'name': 'qrdma0', 'up': true } }");
    qobject_unref(rsp);
    rsp = qtest_qmp(e.t.qts, "{ 'execute': 'set_link', 'arguments': "
                    "{ 'name': 'qrdma0', 'up': false } }");
    qobject_unref(rsp);
    qrdma_dp_expect_event(&e, 0, QRDMA_EV_PORT_ERR, 1);
}

static void qrdma_dp_verbs_register_tests(void)
{
    qos_add_test("dp/send-recv-inline-s5-s6", QRDMA_NODE_DP,
                 test_send_recv, NULL);
    qos_add_test("dp/write-read-atomic", QRDMA_NODE_DP, test_write_read_atomic,
                 NULL);
    qos_add_test("dp/atomic-write", QRDMA_NODE_DP, test_atomic_write, NULL);
    qos_add_test("dp/flush", QRDMA_NODE_DP, test_flush, NULL);
    qos_add_test("dp/ud-grh-qkey-vlan", QRDMA_NODE_DP, test_ud, NULL);
    qos_add_test("dp/ud-too-long-srq", QRDMA_NODE_DP,
                 test_ud_too_long_srq, NULL);
    qos_add_test("dp/cq-resize-outstanding", QRDMA_NODE_DP,
                 test_cq_resize_outstanding, NULL);
    qos_add_test("dp/srq-resize", QRDMA_NODE_DP, test_srq_resize, NULL);
    qos_add_test("dp/rnr", QRDMA_NODE_DP, test_rnr, NULL);
    qos_add_test("dp/events", QRDMA_NODE_DP, test_events, NULL);
}

libqos_init(qrdma_dp_verbs_register_tests);
