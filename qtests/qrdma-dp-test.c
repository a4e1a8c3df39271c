/*
 * QTest testcase for the qrdma data path: work queues, the loopback
 * fabric, completions, events and flushes.  Tests of a lifecycle rule are
 * named by its id in the project's docs/specs/qrdma-lifecycle.rst.
 *
 * Copyright (c) 2026 The qrdma developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include <poll.h>
#include "qemu/module.h"
#include "qemu/timer.h"
#include "qemu/units.h"
#include "hw/pci/pci_regs.h"
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
        qrdma_dp_expect_cqe(e, &e->cq, 0xa0 + i, a.qpn, QRDMA_WC_SEND,
                            QRDMA_WC_SUCCESS);
        g_assert_true(qrdma_dp_poll_cq(e, &e->cq, &cqe));
        g_assert_cmphex(cqe.wr_id, ==, 0xc0 + i);
        g_assert_false(cqe.flags & QRDMA_CQE_F_VLAN);
        g_assert_cmpuint(le16_to_cpu(cqe.pkey_index), ==, 0);
        qrdma_dp_expect_cqe(e, &e->cq, 0xd0 + i, a.qpn, QRDMA_WC_SEND,
                            QRDMA_WC_SUCCESS);
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
    g_assert_true(qrdma_dp_poll_cq(&e, &e.cq, &cqe));
    g_assert_cmphex(cqe.wr_id, ==, 0xb1);
    g_assert_cmpuint(le32_to_cpu(cqe.byte_len), ==, 40 + 9);
    g_assert_cmphex(le32_to_cpu(cqe.src_qp), ==, a.qpn);
    g_assert_true(cqe.flags & QRDMA_CQE_F_GRH);
    g_assert_cmpuint(cqe.network_hdr_type, ==, 1);
    qrdma_dp_expect_cqe(&e, &e.cq, 0xa1, a.qpn, QRDMA_WC_SEND,
                        QRDMA_WC_SUCCESS);
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
    g_assert_true(qrdma_dp_poll_cq(&e, &e.cq, &cqe));
    g_assert_cmphex(cqe.wr_id, ==, 0xb2);
    g_assert_cmpuint(cqe.status, ==, QRDMA_WC_SUCCESS);
    g_assert_cmpuint(le32_to_cpu(cqe.byte_len), ==, 40 + 9);
    qrdma_dp_expect_cqe(&e, &e.cq, 0xa4, a.qpn, QRDMA_WC_SEND,
                        QRDMA_WC_SUCCESS);
    qrdma_dp_expect_data(&e, 4096 + 40, "datagram");

    ud_vlan(&e);
}

/* Protection: each violation gets its own status; S31 and S32 for RC. */
static void test_protection(void *obj, void *data, QGuestAllocator *alloc)
{
    uint32_t pd2, other_pd_key, ro_key;
    struct qrdma_sq_wqe w;
    QrdmaDpQp a, b;
    QrdmaDpEnv e;

    qrdma_dp_env_init(&e, obj, alloc);
    pd2 = qrdma_t_alloc_pd(&e.t, 0);
    other_pd_key = qrdma_dp_reg_mr(&e, pd2, 0, 4096, QRDMA_ACCESS_LOCAL_WRITE);
    ro_key = qrdma_dp_reg_mr(&e, e.pd, 4096, 4096, QRDMA_ACCESS_REMOTE_READ);

    /* remote write to an MR without REMOTE_WRITE: both QPs to ERR */
    qrdma_dp_pair(&e, &a, &b, QRDMA_QPT_RC, 0);
    w = qrdma_dp_wqe_sge(1, QRDMA_WR_RDMA_WRITE, e.data, 8, e.lkey);
    w.rdma.remote_addr = cpu_to_le64(0x10000000);
    w.rdma.rkey = cpu_to_le32(ro_key);
    qrdma_dp_post_send(&e, &a, &w);
    qrdma_dp_expect_cqe(&e, &e.cq, 1, a.qpn, 0, QRDMA_WC_REM_ACCESS_ERR);
    qrdma_dp_expect_event(&e, 0, QRDMA_EV_QP_ACCESS_ERR, b.qpn);

    /* beyond the MR's end */
    qrdma_dp_pair(&e, &a, &b, QRDMA_QPT_RC, 0);
    w = qrdma_dp_wqe_sge(2, QRDMA_WR_RDMA_READ, e.data, 16, e.lkey);
    w.rdma.remote_addr = cpu_to_le64(0x10000000 + 4090);
    w.rdma.rkey = cpu_to_le32(ro_key);
    qrdma_dp_post_send(&e, &a, &w);
    qrdma_dp_expect_cqe(&e, &e.cq, 2, a.qpn, 0, QRDMA_WC_REM_ACCESS_ERR);
    qrdma_dp_expect_event(&e, 0, QRDMA_EV_QP_ACCESS_ERR, b.qpn);

    /* an lkey of another PD, an unknown lkey: LOC_PROT_ERR */
    qrdma_dp_pair(&e, &a, &b, QRDMA_QPT_RC, 0);
    w = qrdma_dp_wqe_sge(3, QRDMA_WR_SEND, e.data, 8, other_pd_key);
    qrdma_dp_post_send(&e, &a, &w);
    qrdma_dp_expect_cqe(&e, &e.cq, 3, a.qpn, 0, QRDMA_WC_LOC_PROT_ERR);
    qrdma_dp_pair(&e, &a, &b, QRDMA_QPT_RC, 0);
    w = qrdma_dp_wqe_sge(4, QRDMA_WR_SEND, e.data, 8, 0x7777700);
    qrdma_dp_post_send(&e, &a, &w);
    qrdma_dp_expect_cqe(&e, &e.cq, 4, a.qpn, 0, QRDMA_WC_LOC_PROT_ERR);

    /* the local DMA lkey is the kernel's: fine for this kernel QP */
    qrdma_dp_pair(&e, &a, &b, QRDMA_QPT_RC, 0);
    qrdma_dp_post_recv(&e, &b, 0xb5, e.data + 4096 * 2, 64,
                       QRDMA_LOCAL_DMA_LKEY);
    w = qrdma_dp_wqe_sge(5, QRDMA_WR_SEND, e.data, 8, QRDMA_LOCAL_DMA_LKEY);
    qrdma_dp_post_send(&e, &a, &w);
    qrdma_dp_expect_cqe(&e, &e.cq, 0xb5, b.qpn, QRDMA_WC_RECV,
                        QRDMA_WC_SUCCESS);
    qrdma_dp_expect_cqe(&e, &e.cq, 5, a.qpn, QRDMA_WC_SEND, QRDMA_WC_SUCCESS);

    /*
     * S32: a receive-queue error (buffer too small) takes the responder to
     * ERR with LOC_LEN_ERR; the RC requester gets REM_INV_REQ_ERR.
     */
    qrdma_dp_post_recv(&e, &b, 0xb6, e.data + 4096 * 2, 4, e.lkey);
    w = qrdma_dp_wqe_sge(6, QRDMA_WR_SEND, e.data, 8, e.lkey);
    qrdma_dp_post_send(&e, &a, &w);
    qrdma_dp_expect_cqe(&e, &e.cq, 0xb6, b.qpn, QRDMA_WC_RECV,
                        QRDMA_WC_LOC_LEN_ERR);
    qrdma_dp_expect_cqe(&e, &e.cq, 6, a.qpn, 0, QRDMA_WC_REM_INV_REQ_ERR);
}

/* Hostile WQEs complete with an error and move the QP as S31 says. */
static void test_hostile_wqe(void *obj, void *data, QGuestAllocator *alloc)
{
    struct qrdma_sq_wqe w;
    uint64_t errors;
    QrdmaDpQp a, b, c, d;
    QrdmaDpEnv e;

    qrdma_dp_env_init(&e, obj, alloc);
    qrdma_dp_pair(&e, &a, &b, QRDMA_QPT_RC, 0);
    w = qrdma_dp_wqe_sge(1, 0x55, e.data, 8, e.lkey);
    qrdma_dp_post_send(&e, &a, &w);
    qrdma_dp_expect_cqe(&e, &e.cq, 1, a.qpn, 0, QRDMA_WC_LOC_QP_OP_ERR);

    qrdma_dp_pair(&e, &a, &b, QRDMA_QPT_RC, 0);
    w = qrdma_dp_wqe_sge(2, QRDMA_WR_SEND, e.data, 8, e.lkey);
    w.num_sge = QRDMA_MAX_SEND_SGE + 1;
    qrdma_dp_post_send(&e, &a, &w);
    qrdma_dp_expect_cqe(&e, &e.cq, 2, a.qpn, 0, QRDMA_WC_LOC_QP_OP_ERR);

    /* SGE lengths that add up past 2^31 */
    qrdma_dp_pair(&e, &a, &b, QRDMA_QPT_RC, 0);
    w = qrdma_dp_wqe_sge(3, QRDMA_WR_SEND, e.data, 0x80000000u,
                         QRDMA_LOCAL_DMA_LKEY);
    qrdma_dp_post_send(&e, &a, &w);
    qrdma_dp_expect_cqe(&e, &e.cq, 3, a.qpn, 0, QRDMA_WC_LOC_PROT_ERR);

    /* S31: UC and UD errors stop the send queue only (SQE) */
    qrdma_dp_pair(&e, &c, &d, QRDMA_QPT_UC, 0);
    qrdma_dp_post_recv(&e, &c, 0xc1, e.data, 64, e.lkey);
    w = qrdma_dp_wqe_sge(4, QRDMA_WR_RDMA_READ, e.data, 8, e.lkey);
    qrdma_dp_post_send(&e, &c, &w);
    qrdma_dp_expect_cqe(&e, &e.cq, 4, c.qpn, 0, QRDMA_WC_LOC_QP_OP_ERR);
    {
        struct qrdma_query_qp_resp r;

        g_assert_cmpuint(qrdma_t_query_qp(&e.t, 0, c.qpn, &r), ==, 0);
        g_assert_cmpuint(r.attr.qp_state, ==, QRDMA_QPS_SQE);
        g_assert_cmpuint(qrdma_t_query_qp(&e.t, 0, a.qpn, &r), ==, 0);
        g_assert_cmpuint(r.attr.qp_state, ==, QRDMA_QPS_ERR);
    }
    /* the receive queue of the SQE QP still works */
    w = qrdma_dp_wqe_sge(5, QRDMA_WR_SEND, e.data, 8, e.lkey);
    qrdma_dp_post_send(&e, &d, &w);
    qrdma_dp_expect_cqe(&e, &e.cq, 0xc1, c.qpn, QRDMA_WC_RECV,
                        QRDMA_WC_SUCCESS);
    qrdma_dp_expect_cqe(&e, &e.cq, 5, d.qpn, QRDMA_WC_SEND, QRDMA_WC_SUCCESS);

    /* doorbells beyond the ring, or for a QP that is gone */
    errors = qrdma_t_qom_get(&e.t, "guest-errors");
    qrdma_dp_ring_db(&e, QRDMA_DB_SQ, d.qpn, d.sq_pi + 17);
    qrdma_dp_ring_db(&e, QRDMA_DB_RQ, d.qpn, 1000);
    g_assert_cmpuint(qrdma_t_destroy(&e.t, QRDMA_CMD_DESTROY_QP, 0, b.qpn),
                     ==, 0);
    qrdma_dp_ring_db(&e, QRDMA_DB_SQ, b.qpn, 1);
    qrdma_dp_ring_db(&e, QRDMA_DB_CQ_ARM, e.cq.cqn, 0x80);
    qpci_io_writel(&e.t.q->dev, e.db, QRDMA_DB_SQ, 1);
    g_assert_cmpuint(qrdma_t_qom_get(&e.t, "guest-errors"), ==, errors + 5);
    qrdma_dp_expect_no_cqe(&e, &e.cq);
}

/*
 * Regressions: inline data with READ and a count of SGEs past the WQE;
 * an atomic whose SGE is too short; a QP that is its own responder and
 * fails on its receive side (that once flushed the WQE it was running).
 */
static void test_hostile_more(void *obj, void *data, QGuestAllocator *alloc)
{
    struct qrdma_cmd cmd = { .hdr.opcode = QRDMA_CMD_CREATE_AH };
    struct qrdma_cmpl cmpl;
    struct qrdma_sq_wqe w;
    QrdmaDpQp a, b, u;
    QrdmaDpEnv e;

    qrdma_dp_env_init(&e, obj, alloc);
    qrdma_dp_pair(&e, &a, &b, QRDMA_QPT_RC, 0);
    w = qrdma_dp_wqe_sge(1, QRDMA_WR_RDMA_READ, e.data, 8, e.lkey);
    w.flags |= QRDMA_WQE_F_INLINE;
    w.num_sge = 255;
    qrdma_dp_post_send(&e, &a, &w);
    qrdma_dp_expect_cqe(&e, &e.cq, 1, a.qpn, 0, QRDMA_WC_LOC_QP_OP_ERR);

    qrdma_dp_pair(&e, &a, &b, QRDMA_QPT_RC, 0);
    w = qrdma_dp_wqe_sge(2, QRDMA_WR_ATOMIC_FETCH_AND_ADD,
                         e.data + QRDMA_DP_DATA_PAGES * 4096 - 4, 4, e.lkey);
    w.rdma.remote_addr = cpu_to_le64(e.data);
    w.rdma.rkey = cpu_to_le32(e.lkey);
    qrdma_dp_post_send(&e, &a, &w);
    qrdma_dp_expect_cqe(&e, &e.cq, 2, a.qpn, 0, QRDMA_WC_LOC_LEN_ERR);

    /* a UD QP sending to itself, its receive WQE bad */
    g_assert_cmpuint(qrdma_dp_create_qp(&e, &u, QRDMA_QPT_UD, 0, &e.cq, &e.cq),
                     ==, 0);
    qrdma_dp_to_rtr(&e, &u, 0);
    qrdma_dp_to_rts(&e, &u, 0);
    cmd.create_ah.pd = cpu_to_le32(e.pd);
    memcpy(cmd.create_ah.av.dgid,
           (uint8_t[16]) { [10] = 0xff, [11] = 0xff, 10, 0, 2, 15 }, 16);
    g_assert_cmpuint(qrdma_t_exec(&e.t, &cmd, &cmpl), ==, 0);
    qrdma_dp_post_recv(&e, &u, 0xe0, e.data, 64, 0x7777700);
    w = qrdma_dp_wqe_sge(3, QRDMA_WR_SEND, e.data, 8, e.lkey);
    w.ud.ah = cmpl.handle;
    w.ud.remote_qpn = cpu_to_le32(u.qpn);
    w.ud.remote_qkey = cpu_to_le32(0x1234);
    qrdma_dp_post_send(&e, &u, &w);
    qrdma_dp_expect_cqe(&e, &e.cq, 0xe0, u.qpn, QRDMA_WC_RECV,
                        QRDMA_WC_LOC_PROT_ERR);
    qrdma_dp_expect_cqe(&e, &e.cq, 3, u.qpn, QRDMA_WC_SEND, QRDMA_WC_SUCCESS);
    w.wr_id = 4;
    qrdma_dp_post_send(&e, &u, &w);
    qrdma_dp_expect_cqe(&e, &e.cq, 4, u.qpn, 0, QRDMA_WC_WR_FLUSH_ERR);
    qrdma_dp_expect_no_cqe(&e, &e.cq);
}

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

/* RNR: no receive posted at an RC responder */
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
    g_assert_true(qrdma_dp_poll_cq(&e, &e.cq, &cqe));
    g_assert_cmphex(cqe.wr_id, ==, 0x100);
    g_assert_cmpuint(cqe.status, ==, QRDMA_WC_LOC_LEN_ERR);
    qrdma_dp_expect_cqe(&e, &e.cq, 0xa1, a.qpn, QRDMA_WC_SEND,
                        QRDMA_WC_SUCCESS);
    w.wr_id = 0xa2;
    w.sge[0].length = cpu_to_le32(9);
    qrdma_dp_post_send(&e, &a, &w);
    g_assert_true(qrdma_dp_poll_cq(&e, &e.cq, &cqe));
    g_assert_cmphex(cqe.wr_id, ==, 0x101);
    g_assert_cmpuint(cqe.status, ==, QRDMA_WC_SUCCESS);
    g_assert_cmpuint(le32_to_cpu(cqe.byte_len), ==, 40 + 9);
    qrdma_dp_expect_cqe(&e, &e.cq, 0xa2, a.qpn, QRDMA_WC_SEND,
                        QRDMA_WC_SUCCESS);
    qrdma_dp_expect_data(&e, 4096 * 2 + 40, "datagram");
    qrdma_dp_expect_no_cqe(&e, &e.cq);
}

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

/* Fast registration: an MR from a page list by a WQE, then invalidated. */
static void test_fast_reg(void *obj, void *data, QGuestAllocator *alloc)
{
    struct qrdma_cmd cmd = { .hdr.opcode = QRDMA_CMD_ALLOC_MR };
    uint64_t pages[2];
    struct qrdma_cmpl cmpl;
    struct qrdma_sq_wqe w;
    uint32_t key;
    QrdmaDpQp a, b;
    QrdmaDpEnv e;

    qrdma_dp_env_init(&e, obj, alloc);
    qrdma_dp_pair(&e, &a, &b, QRDMA_QPT_RC, 0);
    cmd.alloc_mr.pd = cpu_to_le32(e.pd);
    cmd.alloc_mr.max_pages = cpu_to_le32(4);
    g_assert_cmpuint(qrdma_t_exec(&e.t, &cmd, &cmpl), ==, 0);
    /* a new key byte, as ib_update_fast_reg_key() makes */
    key = (le32_to_cpu(cmpl.handle) & ~0xffu) | 0x42;

    /* not registered yet: remote access fails */
    w = qrdma_dp_wqe_sge(1, QRDMA_WR_RDMA_WRITE, e.data, 8, e.lkey);
    w.rdma.remote_addr = cpu_to_le64(0x50000000);
    w.rdma.rkey = cpu_to_le32(key);
    qrdma_dp_post_send(&e, &a, &w);
    qrdma_dp_expect_cqe(&e, &e.cq, 1, a.qpn, 0, QRDMA_WC_REM_ACCESS_ERR);
    qrdma_dp_expect_event(&e, 0, QRDMA_EV_QP_ACCESS_ERR, b.qpn);

    qrdma_dp_pair(&e, &a, &b, QRDMA_QPT_RC, 0);
    pages[0] = e.data + 4096 * 12;
    pages[1] = e.data + 4096 * 11;
    memset(&w, 0, sizeof(w));
    w.wr_id = 2;
    w.opcode = QRDMA_WR_REG_MR;
    w.flags = QRDMA_WQE_F_SIGNALED;
    w.reg_mr.iova = cpu_to_le64(0x50000000);
    w.reg_mr.length = cpu_to_le64(8192);
    w.reg_mr.pages_addr = cpu_to_le64(qrdma_t_page_list(&e.t, pages, 2));
    w.reg_mr.key = cpu_to_le32(key);
    w.reg_mr.access = cpu_to_le32(QRDMA_ACCESS_LOCAL_WRITE |
                                  QRDMA_ACCESS_REMOTE_WRITE);
    w.reg_mr.npages = cpu_to_le32(2);
    w.reg_mr.page_shift = 12;
    qrdma_dp_post_send(&e, &a, &w);
    qrdma_dp_expect_cqe(&e, &e.cq, 2, a.qpn, QRDMA_WC_REG_MR, QRDMA_WC_SUCCESS);

    /* the second page of the region is the first page of the list... */
    qrdma_dp_write_data(&e, 0, "fast");
    w = qrdma_dp_wqe_sge(3, QRDMA_WR_RDMA_WRITE, e.data, 5, e.lkey);
    w.rdma.remote_addr = cpu_to_le64(0x50000000 + 4096);
    w.rdma.rkey = cpu_to_le32(key);
    qrdma_dp_post_send(&e, &a, &w);
    qrdma_dp_expect_cqe(&e, &e.cq, 3, a.qpn, QRDMA_WC_RDMA_WRITE,
                        QRDMA_WC_SUCCESS);
    /* ...in reverse order here: page 1 of the region is data page 11 */
    qrdma_dp_expect_data(&e, 4096 * 11, "fast");

    /* invalidated: gone for remote access */
    memset(&w, 0, sizeof(w));
    w.wr_id = 4;
    w.opcode = QRDMA_WR_LOCAL_INV;
    w.flags = QRDMA_WQE_F_SIGNALED;
    w.imm_data = cpu_to_le32(key);
    qrdma_dp_post_send(&e, &a, &w);
    qrdma_dp_expect_cqe(&e, &e.cq, 4, a.qpn, QRDMA_WC_LOCAL_INV,
                        QRDMA_WC_SUCCESS);
    w = qrdma_dp_wqe_sge(5, QRDMA_WR_RDMA_WRITE, e.data, 5, e.lkey);
    w.rdma.remote_addr = cpu_to_le64(0x50000000);
    w.rdma.rkey = cpu_to_le32(key);
    qrdma_dp_post_send(&e, &a, &w);
    qrdma_dp_expect_cqe(&e, &e.cq, 5, a.qpn, 0, QRDMA_WC_REM_ACCESS_ERR);
}

/* LOCAL_INV of key on qp. */
static void local_inv(QrdmaDpEnv *e, QrdmaDpQp *qp, uint64_t wr_id,
                      uint32_t key, uint8_t status)
{
    struct qrdma_sq_wqe w = {
        .wr_id = wr_id,
        .opcode = QRDMA_WR_LOCAL_INV,
        .flags = QRDMA_WQE_F_SIGNALED,
        .imm_data = cpu_to_le32(key),
    };

    qrdma_dp_run_wqe(e, qp, w, QRDMA_WC_LOCAL_INV, status);
}

/* An RDMA WRITE or READ of len bytes at data offset 0, a to b via rkey. */
static void rdma_via(QrdmaDpEnv *e, QrdmaDpQp *a, QrdmaDpQp *b,
                     uint64_t wr_id, uint8_t opcode, uint32_t rkey,
                     uint64_t addr, uint32_t len, uint8_t status)
{
    struct qrdma_sq_wqe w =
        qrdma_dp_wqe_sge(wr_id, opcode, e->data, len, e->lkey);

    w.rdma.remote_addr = cpu_to_le64(addr);
    w.rdma.rkey = cpu_to_le32(rkey);
    qrdma_dp_run_wqe(e, a, w, opcode == QRDMA_WR_RDMA_READ ?
                     QRDMA_WC_RDMA_READ : QRDMA_WC_RDMA_WRITE, status);
    if (status == QRDMA_WC_REM_ACCESS_ERR) {
        qrdma_dp_expect_event(e, 0, QRDMA_EV_QP_ACCESS_ERR, b->qpn);
    }
}

/*
 * A fresh pair, and the type 2 window of *key invalidated (from a, any QP
 * of the PD may) and bound again by b, under the next key.
 */
static void rebind2(QrdmaDpEnv *e, QrdmaDpQp *a, QrdmaDpQp *b, uint32_t *key,
                    uint32_t mr)
{
    qrdma_dp_pair(e, a, b, QRDMA_QPT_RC, 0);
    local_inv(e, a, 0x10, *key, QRDMA_WC_SUCCESS);
    *key = qrdma_dp_next_key(*key);
    qrdma_dp_run_wqe(e, b, qrdma_dp_wqe_bind(0x11, *key, mr, 0x10000100, 256,
                                             QRDMA_ACCESS_REMOTE_WRITE |
                                             QRDMA_ACCESS_LOCAL_WRITE),
                     QRDMA_WC_BIND_MW, QRDMA_WC_SUCCESS);
}

/* A bind on a fresh pair that fails with status (and takes a to ERR). */
static void bind_fails(QrdmaDpEnv *e, struct qrdma_sq_wqe w, uint8_t status)
{
    uint64_t errors = qrdma_t_qom_get(&e->t, "guest-errors");
    QrdmaDpQp a, b;

    qrdma_dp_pair(e, &a, &b, QRDMA_QPT_RC, 0);
    qrdma_dp_run_wqe(e, &a, w, QRDMA_WC_BIND_MW, status);
    g_assert_cmpuint(qrdma_t_qom_get(&e->t, "guest-errors"), >, errors);
    /* S31: the QP went to ERR; what follows is flushed */
    rdma_via(e, &a, &b, 0x99, QRDMA_WR_RDMA_WRITE, e->lkey, e->data, 8,
             QRDMA_WC_WR_FLUSH_ERR);
}

/* Type 2 windows: bound by a QP to a range of an MR, for that QP only. */
static void test_mw_type2(void *obj, void *data, QGuestAllocator *alloc)
{
    uint32_t mr, rkey, key, handle;
    QrdmaDpQp a, b, c, d;
    QrdmaDpEnv e;

    qrdma_dp_env_init(&e, obj, alloc);
    g_assert_true(qrdma_dp_device_caps(&e) & QRDMA_DEV_CAP_MW);
    /* data pages 10-11 at iova 0x10000000, no remote right of its own */
    mr = qrdma_dp_reg_mr(&e, e.pd, 4096 * 10, 8192,
                         QRDMA_ACCESS_LOCAL_WRITE | QRDMA_ACCESS_MW_BIND);
    rkey = qrdma_dp_alloc_mw(&e, e.pd, QRDMA_MW_TYPE_2, &handle);

    /* unbound: no access */
    qrdma_dp_pair(&e, &a, &b, QRDMA_QPT_RC, 0);
    rdma_via(&e, &a, &b, 1, QRDMA_WR_RDMA_WRITE, rkey, 0x10000100, 8,
             QRDMA_WC_REM_ACCESS_ERR);

    /* bound by b to 256 bytes at 0x10000100, remote write */
    qrdma_dp_pair(&e, &a, &b, QRDMA_QPT_RC, 0);
    key = qrdma_dp_next_key(rkey);
    qrdma_dp_run_wqe(&e, &b, qrdma_dp_wqe_bind(2, key, mr, 0x10000100, 256,
                                               QRDMA_ACCESS_REMOTE_WRITE |
                                               QRDMA_ACCESS_LOCAL_WRITE),
                     QRDMA_WC_BIND_MW, QRDMA_WC_SUCCESS);
    qrdma_dp_write_data(&e, 0, "through a window");
    rdma_via(&e, &a, &b, 3, QRDMA_WR_RDMA_WRITE, key, 0x10000108, 17,
             QRDMA_WC_SUCCESS);
    qrdma_dp_expect_data(&e, 4096 * 10 + 0x108, "through a window");
    /* the last bytes of the window, then one byte past it */
    rdma_via(&e, &a, &b, 4, QRDMA_WR_RDMA_WRITE, key, 0x100001f8, 8,
             QRDMA_WC_SUCCESS);
    rdma_via(&e, &a, &b, 5, QRDMA_WR_RDMA_WRITE, key, 0x100001f9, 8,
             QRDMA_WC_REM_ACCESS_ERR);

    /* the window's old key, a right it lacks, the MR's own key */
    rebind2(&e, &a, &b, &key, mr);
    rdma_via(&e, &a, &b, 6, QRDMA_WR_RDMA_WRITE, rkey, 0x10000100, 8,
             QRDMA_WC_REM_ACCESS_ERR);
    rebind2(&e, &a, &b, &key, mr);
    rdma_via(&e, &a, &b, 7, QRDMA_WR_RDMA_READ, key, 0x10000100, 8,
             QRDMA_WC_REM_ACCESS_ERR);
    rebind2(&e, &a, &b, &key, mr);
    rdma_via(&e, &a, &b, 8, QRDMA_WR_RDMA_WRITE, mr, 0x10000100, 8,
             QRDMA_WC_REM_ACCESS_ERR);

    /* type 2B: through another QP of the PD, no access */
    rebind2(&e, &a, &b, &key, mr);
    qrdma_dp_pair(&e, &c, &d, QRDMA_QPT_RC, 0);
    rdma_via(&e, &c, &d, 9, QRDMA_WR_RDMA_WRITE, key, 0x10000100, 8,
             QRDMA_WC_REM_ACCESS_ERR);
    /* windows are for remote access: as an lkey it fails */
    {
        struct qrdma_sq_wqe w =
            qrdma_dp_wqe_sge(10, QRDMA_WR_RDMA_WRITE, 0x10000100, 8, key);

        w.rdma.remote_addr = cpu_to_le64(e.data);
        w.rdma.rkey = cpu_to_le32(e.lkey);
        qrdma_dp_run_wqe(&e, &b, w, QRDMA_WC_RDMA_WRITE, QRDMA_WC_LOC_PROT_ERR);
    }

    /* bound already: a second bind fails, LOCAL_INV must come first */
    rebind2(&e, &a, &b, &key, mr);
    qrdma_dp_run_wqe(&e, &b, qrdma_dp_wqe_bind(11, qrdma_dp_next_key(key), mr,
                                               0x10000000, 8,
                                               QRDMA_ACCESS_REMOTE_WRITE),
                     QRDMA_WC_BIND_MW, QRDMA_WC_MW_BIND_ERR);

    /* SEND_WITH_INV from the peer invalidates it at b */
    rebind2(&e, &a, &b, &key, mr);
    qrdma_dp_post_recv(&e, &b, 12, e.data + 8192, 64, e.lkey);
    {
        struct qrdma_sq_wqe w =
            qrdma_dp_wqe_sge(13, QRDMA_WR_SEND_WITH_INV, e.data, 4, e.lkey);
        struct qrdma_cqe cqe;

        w.imm_data = cpu_to_le32(key);
        qrdma_dp_post_send(&e, &a, &w);
        g_assert_true(qrdma_dp_poll_cq(&e, &e.cq, &cqe));
        g_assert_cmphex(cqe.wr_id, ==, 12);
        g_assert_cmpuint(cqe.status, ==, QRDMA_WC_SUCCESS);
        g_assert_true(cqe.flags & QRDMA_CQE_F_WITH_INV);
        g_assert_cmphex(le32_to_cpu(cqe.imm_data), ==, key);
        qrdma_dp_expect_cqe(&e, &e.cq, 13, a.qpn, QRDMA_WC_SEND,
                            QRDMA_WC_SUCCESS);
    }
    rdma_via(&e, &a, &b, 14, QRDMA_WR_RDMA_WRITE, key, 0x10000100, 8,
             QRDMA_WC_REM_ACCESS_ERR);

    /* destroying its QP unbinds it: a bind needs no LOCAL_INV then */
    qrdma_dp_pair(&e, &a, &b, QRDMA_QPT_RC, 0);
    key = qrdma_dp_next_key(key);
    qrdma_dp_run_wqe(&e, &b, qrdma_dp_wqe_bind(15, key, mr, 0x10000100, 256,
                                               QRDMA_ACCESS_REMOTE_WRITE),
                     QRDMA_WC_BIND_MW, QRDMA_WC_SUCCESS);
    g_assert_cmpuint(qrdma_t_destroy(&e.t, QRDMA_CMD_DESTROY_QP, 0, b.qpn),
                     ==, QRDMA_STATUS_OK);
    qrdma_dp_pair(&e, &a, &b, QRDMA_QPT_RC, 0);
    key = qrdma_dp_next_key(key);
    qrdma_dp_run_wqe(&e, &b, qrdma_dp_wqe_bind(16, key, mr, 0x10000100, 256,
                                               QRDMA_ACCESS_REMOTE_WRITE),
                     QRDMA_WC_BIND_MW, QRDMA_WC_SUCCESS);
    rdma_via(&e, &a, &b, 17, QRDMA_WR_RDMA_WRITE, key, 0x10000100, 8,
             QRDMA_WC_SUCCESS);

    /* deallocated while bound: gone */
    g_assert_cmpuint(qrdma_t_destroy(&e.t, QRDMA_CMD_DEALLOC_MW, 0, handle),
                     ==, QRDMA_STATUS_OK);
    rdma_via(&e, &a, &b, 18, QRDMA_WR_RDMA_WRITE, key, 0x10000100, 8,
             QRDMA_WC_REM_ACCESS_ERR);
    qrdma_dp_expect_no_cqe(&e, &e.cq);
}

/*
 * Type 1 windows: the PD's, usable through any of its QPs, rebound at
 * will, unbound by a bind of length 0 or when their MR goes; and every
 * bind the device refuses.
 */
static void test_mw_type1(void *obj, void *data, QGuestAllocator *alloc)
{
    uint32_t mr, rkey, key, key2, no_bind, no_lw, pd2;
    struct qrdma_sq_wqe w;
    QrdmaDpQp a, b, u;
    QrdmaDpEnv e;

    qrdma_dp_env_init(&e, obj, alloc);
    mr = qrdma_dp_reg_mr(&e, e.pd, 4096 * 10, 8192,
                         QRDMA_ACCESS_LOCAL_WRITE | QRDMA_ACCESS_MW_BIND);
    rkey = qrdma_dp_alloc_mw(&e, e.pd, QRDMA_MW_TYPE_1, NULL);
    key2 =
        qrdma_dp_next_key(qrdma_dp_alloc_mw(&e, e.pd, QRDMA_MW_TYPE_2, NULL));

    /* bound on a, used through b as responder: the whole MR, both ways */
    qrdma_dp_pair(&e, &a, &b, QRDMA_QPT_RC, 0);
    key = qrdma_dp_next_key(rkey);
    qrdma_dp_run_wqe(&e, &a, qrdma_dp_wqe_bind(1, key, mr, 0x10000000, 8192,
                                               QRDMA_ACCESS_REMOTE_WRITE |
                                               QRDMA_ACCESS_REMOTE_READ),
                     QRDMA_WC_BIND_MW, QRDMA_WC_SUCCESS);
    qrdma_dp_write_data(&e, 0, "type one");
    rdma_via(&e, &a, &b, 2, QRDMA_WR_RDMA_WRITE, key, 0x10001ff0, 9,
             QRDMA_WC_SUCCESS);
    qrdma_dp_expect_data(&e, 4096 * 11 + 0xff0, "type one");
    rdma_via(&e, &b, &a, 3, QRDMA_WR_RDMA_READ, key, 0x10000000, 16,
             QRDMA_WC_SUCCESS);

    /* rebound while bound, read only: the old key is dead */
    qrdma_dp_run_wqe(&e, &b, qrdma_dp_wqe_bind(4, qrdma_dp_next_key(key), mr,
                                               0x10000000, 64,
                                               QRDMA_ACCESS_REMOTE_READ),
                     QRDMA_WC_BIND_MW, QRDMA_WC_SUCCESS);
    rdma_via(&e, &a, &b, 5, QRDMA_WR_RDMA_WRITE, key, 0x10000000, 8,
             QRDMA_WC_REM_ACCESS_ERR);
    key = qrdma_dp_next_key(key);
    qrdma_dp_pair(&e, &a, &b, QRDMA_QPT_RC, 0);
    rdma_via(&e, &a, &b, 6, QRDMA_WR_RDMA_READ, key, 0x10000000, 64,
             QRDMA_WC_SUCCESS);
    rdma_via(&e, &a, &b, 7, QRDMA_WR_RDMA_WRITE, key, 0x10000000, 8,
             QRDMA_WC_REM_ACCESS_ERR);

    /* LOCAL_INV is for type 2; a bind of length 0 unbinds type 1 */
    qrdma_dp_pair(&e, &a, &b, QRDMA_QPT_RC, 0);
    local_inv(&e, &a, 8, key, QRDMA_WC_LOC_PROT_ERR);
    qrdma_dp_pair(&e, &a, &b, QRDMA_QPT_RC, 0);
    qrdma_dp_run_wqe(&e, &a, qrdma_dp_wqe_bind(9, qrdma_dp_next_key(key), 0, 0,
                                               0, 0),
                     QRDMA_WC_BIND_MW, QRDMA_WC_SUCCESS);
    rdma_via(&e, &a, &b, 10, QRDMA_WR_RDMA_READ, qrdma_dp_next_key(key),
             0x10000000, 8, QRDMA_WC_REM_ACCESS_ERR);
    key = qrdma_dp_next_key(key);

    /* the MR goes: the window bound to it gives no access */
    qrdma_dp_pair(&e, &a, &b, QRDMA_QPT_RC, 0);
    key = qrdma_dp_next_key(key);
    qrdma_dp_run_wqe(&e, &a, qrdma_dp_wqe_bind(11, key, mr, 0x10000000, 8192,
                                               QRDMA_ACCESS_REMOTE_WRITE),
                     QRDMA_WC_BIND_MW, QRDMA_WC_SUCCESS);
    g_assert_cmpuint(qrdma_t_destroy(&e.t, QRDMA_CMD_DEREG_MR, 0, mr), ==,
                     QRDMA_STATUS_OK);
    mr = qrdma_dp_reg_mr(&e, e.pd, 4096 * 10, 8192,
                         QRDMA_ACCESS_LOCAL_WRITE | QRDMA_ACCESS_MW_BIND);
    rdma_via(&e, &a, &b, 12, QRDMA_WR_RDMA_WRITE, key, 0x10000000, 8,
             QRDMA_WC_REM_ACCESS_ERR);

    /* refused binds: MW_BIND_ERR, traced and logged */
    key = qrdma_dp_next_key(key);
    no_bind = qrdma_dp_reg_mr(&e, e.pd, 4096 * 12, 4096,
                              QRDMA_ACCESS_LOCAL_WRITE |
                              QRDMA_ACCESS_REMOTE_WRITE);
    no_lw = qrdma_dp_reg_mr(&e, e.pd, 4096 * 13, 4096,
                            QRDMA_ACCESS_MW_BIND | QRDMA_ACCESS_REMOTE_READ);
    bind_fails(&e, qrdma_dp_wqe_bind(20, key, no_bind, 0x10000000, 8,
                                     QRDMA_ACCESS_REMOTE_WRITE),
               QRDMA_WC_MW_BIND_ERR);
    bind_fails(&e, qrdma_dp_wqe_bind(21, key, no_lw, 0x10000000, 8,
                                     QRDMA_ACCESS_REMOTE_WRITE),
               QRDMA_WC_MW_BIND_ERR);
    bind_fails(&e, qrdma_dp_wqe_bind(22, key, no_lw, 0x10000000, 8,
                                     QRDMA_ACCESS_REMOTE_ATOMIC),
               QRDMA_WC_MW_BIND_ERR);
    bind_fails(&e, qrdma_dp_wqe_bind(23, key, mr, 0x10001ff8, 16,
                                     QRDMA_ACCESS_REMOTE_WRITE),
               QRDMA_WC_MW_BIND_ERR);
    bind_fails(&e, qrdma_dp_wqe_bind(24, key, mr, 0x0fffffff, 8,
                                     QRDMA_ACCESS_REMOTE_WRITE),
               QRDMA_WC_MW_BIND_ERR);
    /* bit 5, zero-based, and an unknown bit */
    bind_fails(&e, qrdma_dp_wqe_bind(25, key, mr, 0x10000000, 8, 1u << 5),
               QRDMA_WC_MW_BIND_ERR);
    bind_fails(&e, qrdma_dp_wqe_bind(26, key, mr, 0x10000000, 8, 1u << 9),
               QRDMA_WC_MW_BIND_ERR);
    /* keys that name no window: slot, high bits, an MR's key */
    bind_fails(&e, qrdma_dp_wqe_bind(27, QRDMA_KEY_MW | 0x7fff00, mr,
                                     0x10000000, 8, QRDMA_ACCESS_REMOTE_WRITE),
               QRDMA_WC_MW_BIND_ERR);
    bind_fails(&e, qrdma_dp_wqe_bind(28, key | 0x01000000, mr, 0x10000000, 8,
                                     QRDMA_ACCESS_REMOTE_WRITE),
               QRDMA_WC_MW_BIND_ERR);
    bind_fails(&e, qrdma_dp_wqe_bind(29, mr, mr, 0x10000000, 8,
                                     QRDMA_ACCESS_REMOTE_WRITE),
               QRDMA_WC_MW_BIND_ERR);
    /* an MR key with the wrong key byte, the local DMA key */
    bind_fails(&e, qrdma_dp_wqe_bind(30, key, mr ^ 1, 0x10000000, 8,
                                     QRDMA_ACCESS_REMOTE_WRITE),
               QRDMA_WC_MW_BIND_ERR);
    bind_fails(&e, qrdma_dp_wqe_bind(31, key, QRDMA_LOCAL_DMA_LKEY, e.data, 8,
                                     QRDMA_ACCESS_REMOTE_WRITE),
               QRDMA_WC_MW_BIND_ERR);
    /* type 2 needs a range */
    bind_fails(&e, qrdma_dp_wqe_bind(32, key2, mr, 0x10000000, 0,
                                     QRDMA_ACCESS_REMOTE_WRITE),
               QRDMA_WC_MW_BIND_ERR);
    /* a window of another PD */
    pd2 = qrdma_t_alloc_pd(&e.t, 0);
    bind_fails(&e, qrdma_dp_wqe_bind(33,
                                     qrdma_dp_next_key(
                                         qrdma_dp_alloc_mw(&e, pd2,
                                                           QRDMA_MW_TYPE_1,
                                                           NULL)),
                                     mr, 0x10000000, 8,
                                     QRDMA_ACCESS_REMOTE_WRITE),
               QRDMA_WC_MW_BIND_ERR);
    /* read over an MR without local write is fine */
    qrdma_dp_pair(&e, &a, &b, QRDMA_QPT_RC, 0);
    qrdma_dp_run_wqe(&e, &a, qrdma_dp_wqe_bind(34, key, no_lw, 0x10000000, 4096,
                                               QRDMA_ACCESS_REMOTE_READ),
                     QRDMA_WC_BIND_MW, QRDMA_WC_SUCCESS);

    /* inline, and UD QPs, take no bind */
    w = qrdma_dp_wqe_bind(35, key, mr, 0x10000000, 8,
                          QRDMA_ACCESS_REMOTE_WRITE);
    w.flags |= QRDMA_WQE_F_INLINE;
    qrdma_dp_run_wqe(&e, &a, w, QRDMA_WC_BIND_MW, QRDMA_WC_LOC_QP_OP_ERR);
    g_assert_cmpuint(qrdma_dp_create_qp(&e, &u, QRDMA_QPT_UD, 0, &e.cq, &e.cq),
                     ==, 0);
    qrdma_dp_to_rtr(&e, &u, 0);
    qrdma_dp_to_rts(&e, &u, 0);
    qrdma_dp_run_wqe(&e, &u, qrdma_dp_wqe_bind(36, key, mr, 0x10000000, 8,
                                               QRDMA_ACCESS_REMOTE_WRITE),
                     QRDMA_WC_BIND_MW, QRDMA_WC_LOC_QP_OP_ERR);
    qrdma_dp_expect_no_cqe(&e, &e.cq);
}

/*
 * Windows on UC QPs, atomics through a window, and a fast registration MR
 * that is invalidated or registered again taking its windows with it.
 */
static void test_mw_more(void *obj, void *data, QGuestAllocator *alloc)
{
    struct qrdma_cmd cmd = { .hdr.opcode = QRDMA_CMD_ALLOC_MR };
    uint32_t mr, key, fr, w1;
    struct qrdma_cmpl cmpl;
    struct qrdma_sq_wqe w;
    QrdmaDpQp a, b;
    QrdmaDpEnv e;

    qrdma_dp_env_init(&e, obj, alloc);
    mr = qrdma_dp_reg_mr(&e, e.pd, 4096 * 10, 8192,
                         QRDMA_ACCESS_LOCAL_WRITE | QRDMA_ACCESS_MW_BIND);

    /* UC binds type 2 windows and writes through them */
    qrdma_dp_pair(&e, &a, &b, QRDMA_QPT_UC, 0);
    key = qrdma_dp_next_key(qrdma_dp_alloc_mw(&e, e.pd, QRDMA_MW_TYPE_2, NULL));
    qrdma_dp_run_wqe(&e, &b, qrdma_dp_wqe_bind(1, key, mr, 0x10000000, 64,
                                               QRDMA_ACCESS_REMOTE_WRITE),
                     QRDMA_WC_BIND_MW, QRDMA_WC_SUCCESS);
    qrdma_dp_write_data(&e, 0, "uc window");
    rdma_via(&e, &a, &b, 2, QRDMA_WR_RDMA_WRITE, key, 0x10000000, 10,
             QRDMA_WC_SUCCESS);
    qrdma_dp_expect_data(&e, 4096 * 10, "uc window");

    /* an atomic through a window with the atomic right, and without */
    qrdma_dp_pair(&e, &a, &b, QRDMA_QPT_RC, 0);
    w1 = qrdma_dp_next_key(qrdma_dp_alloc_mw(&e, e.pd, QRDMA_MW_TYPE_1, NULL));
    qrdma_dp_run_wqe(&e, &a, qrdma_dp_wqe_bind(3, w1, mr, 0x10001000, 4096,
                                               QRDMA_ACCESS_REMOTE_ATOMIC),
                     QRDMA_WC_BIND_MW, QRDMA_WC_SUCCESS);
    qtest_writeq(e.t.qts, e.data + 4096 * 11 + 8, 40);
    w = qrdma_dp_wqe_sge(4, QRDMA_WR_ATOMIC_FETCH_AND_ADD, e.data + 4096 * 9, 8,
                         e.lkey);
    w.rdma.remote_addr = cpu_to_le64(0x10001008);
    w.rdma.rkey = cpu_to_le32(w1);
    w.rdma.compare_add = cpu_to_le64(2);
    qrdma_dp_run_wqe(&e, &a, w, QRDMA_WC_FETCH_ADD, QRDMA_WC_SUCCESS);
    g_assert_cmpuint(qtest_readq(e.t.qts, e.data + 4096 * 11 + 8), ==, 42);
    g_assert_cmpuint(qtest_readq(e.t.qts, e.data + 4096 * 9), ==, 40);
    rdma_via(&e, &a, &b, 5, QRDMA_WR_RDMA_WRITE, w1, 0x10001008, 8,
             QRDMA_WC_REM_ACCESS_ERR);

    /* a fast registration MR with the bind right */
    cmd.alloc_mr.pd = cpu_to_le32(e.pd);
    cmd.alloc_mr.max_pages = cpu_to_le32(2);
    g_assert_cmpuint(qrdma_t_exec(&e.t, &cmd, &cmpl), ==, 0);
    fr = (le32_to_cpu(cmpl.handle) & ~0xffu) | 0x42;
    qrdma_dp_pair(&e, &a, &b, QRDMA_QPT_RC, 0);
    qrdma_dp_run_wqe(&e, &a, qrdma_dp_wqe_fast_reg(&e, 6, fr,
                                                   QRDMA_ACCESS_LOCAL_WRITE |
                                                   QRDMA_ACCESS_MW_BIND),
                     QRDMA_WC_REG_MR, QRDMA_WC_SUCCESS);
    w1 = qrdma_dp_next_key(w1);
    qrdma_dp_run_wqe(&e, &a, qrdma_dp_wqe_bind(7, w1, fr, 0x50001000, 4096,
                                               QRDMA_ACCESS_REMOTE_WRITE),
                     QRDMA_WC_BIND_MW, QRDMA_WC_SUCCESS);
    qrdma_dp_write_data(&e, 0, "fast window");
    rdma_via(&e, &a, &b, 8, QRDMA_WR_RDMA_WRITE, w1, 0x50001000, 12,
             QRDMA_WC_SUCCESS);
    qrdma_dp_expect_data(&e, 4096 * 13, "fast window");
    /*
     * Invalidating the MR unbinds the window: it stays unbound once the
     * MR is registered again.  Registering it again unbinds it too.
     */
    local_inv(&e, &a, 9, fr, QRDMA_WC_SUCCESS);
    rdma_via(&e, &a, &b, 10, QRDMA_WR_RDMA_WRITE, w1, 0x50001000, 8,
             QRDMA_WC_REM_ACCESS_ERR);
    qrdma_dp_pair(&e, &a, &b, QRDMA_QPT_RC, 0);
    qrdma_dp_run_wqe(&e, &a, qrdma_dp_wqe_fast_reg(&e, 10, fr,
                                                   QRDMA_ACCESS_LOCAL_WRITE |
                                                   QRDMA_ACCESS_MW_BIND),
                     QRDMA_WC_REG_MR, QRDMA_WC_SUCCESS);
    rdma_via(&e, &a, &b, 11, QRDMA_WR_RDMA_WRITE, w1, 0x50001000, 8,
             QRDMA_WC_REM_ACCESS_ERR);
    qrdma_dp_pair(&e, &a, &b, QRDMA_QPT_RC, 0);
    w1 = qrdma_dp_next_key(w1);
    qrdma_dp_run_wqe(&e, &a, qrdma_dp_wqe_bind(12, w1, fr, 0x50000000, 8192,
                                               QRDMA_ACCESS_REMOTE_WRITE),
                     QRDMA_WC_BIND_MW, QRDMA_WC_SUCCESS);
    qrdma_dp_run_wqe(&e, &a, qrdma_dp_wqe_fast_reg(&e, 13, fr,
                                                   QRDMA_ACCESS_LOCAL_WRITE |
                                                   QRDMA_ACCESS_MW_BIND),
                     QRDMA_WC_REG_MR, QRDMA_WC_SUCCESS);
    rdma_via(&e, &a, &b, 14, QRDMA_WR_RDMA_WRITE, w1, 0x50000000, 8,
             QRDMA_WC_REM_ACCESS_ERR);
    qrdma_dp_expect_no_cqe(&e, &e.cq);
}

/* Two qrdma devices of one QEMU: routed by destination GID and QPN. */
static void test_two_devices(void *obj, void *data, QGuestAllocator *alloc)
{
    QQrdma q2;
    struct qrdma_sq_wqe w;
    QrdmaDpEnv e1, e2;
    QrdmaDpQp a, b;

    qrdma_dp_second_device(obj, &q2, alloc, &e1, &e2);
    qrdma_dp_connect_rc(&e1, &a, &e2, &b, true);

    qrdma_dp_write_data(&e1, 0, "from device one");
    qrdma_dp_post_recv(&e2, &b, 0xb1, e2.data, 64, e2.lkey);
    w = qrdma_dp_wqe_sge(0xa1, QRDMA_WR_SEND, e1.data, 16, e1.lkey);
    qrdma_dp_post_send(&e1, &a, &w);
    qrdma_dp_expect_cqe(&e2, &e2.cq, 0xb1, b.qpn, QRDMA_WC_RECV,
                        QRDMA_WC_SUCCESS);
    qrdma_dp_expect_cqe(&e1, &e1.cq, 0xa1, a.qpn, QRDMA_WC_SEND,
                        QRDMA_WC_SUCCESS);
    qrdma_dp_expect_data(&e2, 0, "from device one");

    /* RDMA WRITE into the other device's MR */
    w = qrdma_dp_wqe_sge(0xa2, QRDMA_WR_RDMA_WRITE, e1.data, 16, e1.lkey);
    w.rdma.remote_addr = cpu_to_le64(e2.data + 4096);
    w.rdma.rkey = cpu_to_le32(e2.lkey);
    qrdma_dp_post_send(&e1, &a, &w);
    qrdma_dp_expect_cqe(&e1, &e1.cq, 0xa2, a.qpn, QRDMA_WC_RDMA_WRITE,
                        QRDMA_WC_SUCCESS);
    qrdma_dp_expect_data(&e2, 4096, "from device one");
}

/* Aim MSI-X vector of dev at addr with data, unmasked. */
static void msix_aim(QPCIDevice *dev, uint16_t vector, uint64_t addr,
                     uint32_t data)
{
    uint64_t entry = dev->msix_table_off + vector * PCI_MSIX_ENTRY_SIZE;

    qpci_io_writel(dev, dev->msix_table_bar,
                   entry + PCI_MSIX_ENTRY_LOWER_ADDR, addr);
    qpci_io_writel(dev, dev->msix_table_bar,
                   entry + PCI_MSIX_ENTRY_UPPER_ADDR, addr >> 32);
    qpci_io_writel(dev, dev->msix_table_bar, entry + PCI_MSIX_ENTRY_DATA,
                   data);
    qpci_io_writel(dev, dev->msix_table_bar,
                   entry + PCI_MSIX_ENTRY_VECTOR_CTRL, 0);
}

/*
 * Interrupts that reset a device while a peer delivers into it.  Device
 * B's vectors write DEV_CTRL.RESET into a device's BAR0, so the first
 * event B raises while A delivers into it (COMM_EST, an access error, a
 * completion of an armed CQ, each flush CQE) resets that device.  QEMU's
 * re-entrancy guard covers only the device whose handler runs (A), so the
 * device itself must never send an interrupt in the middle of an
 * operation: B's own reset, aimed at B, must not free B's rings under A;
 * aimed at A, it must not reset A under its own doorbell.
 */
typedef struct PeerResetRound {
    uint8_t op;
    bool bad_rkey;                      /* B raises an access error too */
    bool arm;                           /* and a completion event per CQE */
    bool at_a;                          /* B's vectors aim at A, not B */
} PeerResetRound;

static void test_peer_reset_by_msi(void *obj, void *data,
                                   QGuestAllocator *alloc)
{
    const PeerResetRound *r = data;
    QQrdma q2;
    struct qrdma_sq_wqe w;
    struct qrdma_cqe cqe;
    uint64_t target;
    QrdmaDpEnv e1, e2;
    QrdmaDpQp a, b;
    unsigned v, k;

    qrdma_dp_second_device(obj, &q2, alloc, &e1, &e2);
    /* B stays in RTR: the first message raises COMM_EST. */
    qrdma_dp_connect_rc(&e1, &a, &e2, &b, false);
    for (k = 0; k < 4; k++) {
        qrdma_dp_post_recv(&e2, &b, 0xb0 + k, e2.data, 64, e2.lkey);
    }
    if (r->arm) {
        /* Every flush CQE of B raises a completion event. */
        qrdma_dp_ring_db(&e2, QRDMA_DB_CQ_ARM, e2.cq.cqn, QRDMA_DB_CQ_ARM_NEXT);
    }
    /* Only now: B's vector 0 fires on every command completion. */
    qpci_msix_enable(&q2.dev);
    target = (r->at_a ? e1.t.q->bar.addr : q2.bar.addr) + QRDMA_REG_DEV_CTRL;
    for (v = 0; v < 2; v++) {
        msix_aim(&q2.dev, v, target, QRDMA_DEV_CTRL_RESET);
    }
    w = qrdma_dp_wqe_sge(0xa1, r->op, e1.data, 16, e1.lkey);
    w.rdma.remote_addr = cpu_to_le64(e2.data);
    w.rdma.rkey = cpu_to_le32(r->bad_rkey ? e2.lkey ^ 0x100 : e2.lkey);
    qrdma_dp_post_send(&e1, &a, &w);
    w.wr_id = 0xa2;
    qrdma_dp_post_send(&e1, &a, &w);

    /* Each device is either reset or whole. */
    for (k = 0; k < 2; k++) {
        QrdmaDpEnv *e = k ? &e2 : &e1;
        uint32_t st = qrdma_t_readl(&e->t, QRDMA_REG_DEV_STATUS);

        if (st == 0) {
            g_assert_cmpuint(qrdma_t_qom_get(&e->t, "resources"), ==, 0);
        } else {
            g_assert_cmphex(st, ==, QRDMA_DEV_STATUS_READY);
        }
    }
    if (!r->at_a) {
        /* A was not reset: it reports both WRs, whatever became of B. */
        for (k = 0; k < 2; k++) {
            g_assert_true(qrdma_dp_poll_cq(&e1, &e1.cq, &cqe));
            g_assert_cmphex(cqe.wr_id, ==, 0xa1 + k);
            g_assert_cmphex(le32_to_cpu(cqe.qpn), ==, a.qpn);
        }
    } else {
        /* B's first event reset A, after A's doorbell write was over. */
        g_assert_cmpuint(qrdma_t_readl(&e1.t, QRDMA_REG_DEV_STATUS), ==, 0);
    }
}

static void add_peer_reset_tests(void)
{
    static const struct {
        const char *name;
        PeerResetRound r;
    } rounds[] = {
        { "send", { QRDMA_WR_SEND, false, false, false } },
        { "send-armed", { QRDMA_WR_SEND, false, true, false } },
        { "write-access-err", { QRDMA_WR_RDMA_WRITE, true, true, false } },
        { "write-imm-access-err",
          { QRDMA_WR_RDMA_WRITE_WITH_IMM, true, true, false } },
        { "send-at-a", { QRDMA_WR_SEND, false, true, true } },
        { "write-access-err-at-a", { QRDMA_WR_RDMA_WRITE, true, true, true } },
    };
    size_t i;

    for (i = 0; i < G_N_ELEMENTS(rounds); i++) {
        g_autofree char *name = g_strdup_printf("dp/peer-reset-by-msi/%s",
                                                rounds[i].name);

        qos_add_test(name, QRDMA_NODE_DP, test_peer_reset_by_msi,
                     &(QOSGraphTestOptions) {
            .edge.before_cmd_line = "-device qrdma,addr=05.0,id=qrdma1",
            .arg = (void *)&rounds[i].r,
        });
    }
}

/*
 * Guest RAM is checked on every access, not only at registration.  An MR
 * on the RAM behind an ivshmem BAR is registered; then the guest turns
 * that BAR off and puts the peer qrdma's doorbell page at its address.
 * An RDMA WRITE into the MR must fail, and the peer see no doorbell: the
 * device writes nothing but RAM, whatever the memory map became.
 */
static void test_dma_rechecked(void *obj, void *data, QGuestAllocator *alloc)
{
    QQrdma *q = obj;
    QPCIDevice *shm = qpci_device_find(q->dev.bus, QPCI_DEVFN(6, 0));
    uint32_t rkey;
    struct qrdma_sq_wqe w;
    QPCIBar shm_bar;
    uint64_t x, bad_db = QRDMA_DB_VAL(0x4321, 1);
    uint64_t peer_errors, errors;
    QQrdma q2;
    QrdmaDpEnv e1, e2;
    QrdmaDpQp a, b;

    g_assert_nonnull(shm);
    qrdma_dp_second_device(q, &q2, alloc, &e1, &e2);
    qpci_device_enable(shm);
    shm_bar = qpci_iomap(shm, 2, NULL);
    x = shm_bar.addr;
    g_assert_true(QEMU_IS_ALIGNED(x, 1 * MiB));

    /* An MR of one page of the ivshmem RAM: RAM now, so it registers. */
    g_assert_cmpuint(qrdma_dp_reg_page_mr(&e1, x, QRDMA_ACCESS_LOCAL_WRITE |
                                          QRDMA_ACCESS_REMOTE_WRITE, &rkey), ==,
                     QRDMA_STATUS_OK);

    /* The page becomes the peer's doorbells. */
    qpci_config_writew(shm, PCI_COMMAND, PCI_COMMAND_MASTER);
    qpci_config_writel(&q2.dev, PCI_BASE_ADDRESS_2,
                       (uint32_t)x | PCI_BASE_ADDRESS_MEM_TYPE_64);
    qpci_config_writel(&q2.dev, PCI_BASE_ADDRESS_3, x >> 32);

    /* A loopback pair on the first device. */
    e1.peer_ip = 15;
    qrdma_dp_pair(&e1, &a, &b, QRDMA_QPT_RC, 0);
    qtest_memwrite(e1.t.qts, e1.data, &bad_db, sizeof(bad_db));
    peer_errors = qrdma_t_qom_get(&e2.t, "guest-errors");
    errors = qrdma_t_qom_get(&e1.t, "guest-errors");
    w = qrdma_dp_wqe_sge(0xd1, QRDMA_WR_RDMA_WRITE, e1.data, 8, e1.lkey);
    w.rdma.remote_addr = cpu_to_le64(x);
    w.rdma.rkey = cpu_to_le32(rkey);
    qrdma_dp_post_send(&e1, &a, &w);
    qrdma_dp_expect_cqe(&e1, &e1.cq, 0xd1, a.qpn, QRDMA_WC_RDMA_WRITE,
                        QRDMA_WC_REM_ACCESS_ERR);
    g_assert_cmpuint(qrdma_t_qom_get(&e2.t, "guest-errors"), ==, peer_errors);
    g_assert_cmpuint(qrdma_t_qom_get(&e1.t, "guest-errors"), >, errors);
    g_free(shm);
}

/*
 * The device bounds what page lists all MRs together may hold
 * (max-mr-pages-total), so that a guest with little RAM cannot make QEMU
 * allocate gigabytes for page lists.  A fast-registration MR holds its
 * max_pages from ALLOC_MR on.  The test device allows
 * QRDMA_DP_DATA_PAGES + 8.
 */
static void test_mr_pages_total(void *obj, void *data, QGuestAllocator *alloc)
{
    struct qrdma_cmd cmd = { .hdr.opcode = QRDMA_CMD_QUERY_DEVICE };
    struct qrdma_device_attr attr;
    struct qrdma_cmpl cmpl;
    uint32_t lkey, fr;
    QrdmaDpEnv e;

    qrdma_dp_env_init(&e, obj, alloc);
    memset(&attr, 0, sizeof(attr));
    cmd.query.resp_addr = cpu_to_le64(guest_alloc(alloc, sizeof(attr)));
    cmd.query.resp_len = cpu_to_le32(sizeof(attr));
    g_assert_cmpuint(qrdma_t_exec(&e.t, &cmd, NULL), ==, QRDMA_STATUS_OK);
    qtest_memread(e.t.qts, le64_to_cpu(cmd.query.resp_addr), &attr,
                  sizeof(attr));
    g_assert_cmpuint(le32_to_cpu(attr.max_mr_pages_total), ==,
                     QRDMA_DP_DATA_PAGES + 8);
    /* No single MR may be larger than all of them together. */
    g_assert_cmpuint(le32_to_cpu(attr.max_mr_pages), ==,
                     QRDMA_DP_DATA_PAGES + 8);

    lkey = qrdma_dp_reg_mr(&e, e.pd, 0, 8 * 4096, QRDMA_ACCESS_LOCAL_WRITE);
    memset(&cmd, 0, sizeof(cmd));
    cmd.hdr.opcode = QRDMA_CMD_ALLOC_MR;
    cmd.alloc_mr.pd = cpu_to_le32(e.pd);
    cmd.alloc_mr.max_pages = cpu_to_le32(1);
    g_assert_cmpuint(qrdma_t_exec(&e.t, &cmd, NULL), ==,
                     QRDMA_STATUS_NO_RESOURCES);
    g_assert_cmpuint(qrdma_t_destroy(&e.t, QRDMA_CMD_DEREG_MR, 0, lkey), ==,
                     QRDMA_STATUS_OK);
    cmd.alloc_mr.max_pages = cpu_to_le32(8);
    g_assert_cmpuint(qrdma_t_exec(&e.t, &cmd, &cmpl), ==, QRDMA_STATUS_OK);
    fr = le32_to_cpu(cmpl.handle);
    /* The fast-registration MR holds its pages though it has none yet. */
    g_assert_cmpuint(qrdma_dp_reg_page_mr(&e, e.data, QRDMA_ACCESS_LOCAL_WRITE,
                                          NULL), ==, QRDMA_STATUS_NO_RESOURCES);
    g_assert_cmpuint(qrdma_t_destroy(&e.t, QRDMA_CMD_DEREG_MR, 0, fr), ==,
                     QRDMA_STATUS_OK);
    g_assert_cmpuint(qrdma_dp_reg_page_mr(&e, e.data, QRDMA_ACCESS_LOCAL_WRITE,
                                          NULL), ==, QRDMA_STATUS_OK);
}

/*
 * A DMA MR has no pages and its page_shift field means nothing: a value
 * of 64 or more must not be shifted by.  (UBSan catches the shift.)
 */
static void test_dma_mr_page_shift(void *obj, void *data,
                                   QGuestAllocator *alloc)
{
    struct qrdma_cmd cmd = { .hdr.opcode = QRDMA_CMD_REG_MR };
    struct qrdma_cmpl cmpl;
    struct qrdma_sq_wqe w;
    QrdmaDpEnv e;
    QrdmaDpQp a, b;

    qrdma_dp_env_init(&e, obj, alloc);
    cmd.reg_mr.pd = cpu_to_le32(e.pd);
    cmd.reg_mr.access = cpu_to_le32(QRDMA_ACCESS_LOCAL_WRITE);
    cmd.reg_mr.flags = QRDMA_MR_F_DMA;
    cmd.reg_mr.page_shift = 200;
    g_assert_cmpuint(qrdma_t_exec(&e.t, &cmd, &cmpl), ==, QRDMA_STATUS_OK);
    qrdma_dp_pair(&e, &a, &b, QRDMA_QPT_RC, 0);
    qrdma_dp_write_data(&e, 0, "through the DMA MR");
    w = qrdma_dp_wqe_sge(0xd2, QRDMA_WR_RDMA_WRITE, e.data, 20,
                         le32_to_cpu(cmpl.handle));
    w.rdma.remote_addr = cpu_to_le64(e.data + 8192);
    w.rdma.rkey = cpu_to_le32(e.rkey);
    qrdma_dp_run_wqe(&e, &a, w, QRDMA_WC_RDMA_WRITE, QRDMA_WC_SUCCESS);
    qrdma_dp_expect_data(&e, 8192, "through the DMA MR");
}

/*
 * A QP whose completion was lost to a CQ overrun is fatal, in ERR, for
 * good: a local error of the same WQE must not move it to SQE, from
 * where a move to RTS would revive it (S31 applies to live QPs only).
 */
static void test_fatal_stays_err(void *obj, void *data,
                                 QGuestAllocator *alloc)
{
    struct qrdma_query_qp_resp resp;
    struct qrdma_sq_wqe w;
    QrdmaDpCq small;
    QrdmaDpEnv e;
    QrdmaDpQp a, b;
    unsigned i;

    qrdma_dp_env_init(&e, obj, alloc);
    g_assert_cmpuint(qrdma_dp_create_cq(&e, &small, 2, 1), ==, QRDMA_STATUS_OK);
    g_assert_cmpuint(qrdma_dp_create_qp(&e, &a, QRDMA_QPT_UC, 0, &small, &e.cq),
                     ==, 0);
    g_assert_cmpuint(qrdma_dp_create_qp(&e, &b, QRDMA_QPT_UC, 0, &e.cq, &e.cq),
                     ==, 0);
    qrdma_dp_to_rtr(&e, &a, b.qpn);
    qrdma_dp_to_rtr(&e, &b, a.qpn);
    qrdma_dp_to_rts(&e, &a, 0);
    qrdma_dp_to_rts(&e, &b, 0);
    /* Four completions fill the CQ; nobody polls it. */
    for (i = 0; i < 4; i++) {
        w = qrdma_dp_wqe_sge(0xe0 + i, QRDMA_WR_RDMA_WRITE, e.data, 8, e.lkey);
        w.rdma.remote_addr = cpu_to_le64(e.data + 4096);
        w.rdma.rkey = cpu_to_le32(e.rkey);
        qrdma_dp_post_send(&e, &a, &w);
    }
    /* A local error whose completion has nowhere to go. */
    w = qrdma_dp_wqe_sge(0xe9, 0x7f, e.data, 8, e.lkey);
    qrdma_dp_post_send(&e, &a, &w);
    qrdma_dp_expect_event(&e, 0, QRDMA_EV_CQ_ERR, small.cqn);
    qrdma_dp_expect_event(&e, 0, QRDMA_EV_QP_FATAL, a.qpn);
    g_assert_cmpuint(qrdma_t_query_qp(&e.t, 0, a.qpn, &resp), ==, 0);
    g_assert_cmpuint(resp.attr.qp_state, ==, QRDMA_QPS_ERR);
    /* ERR goes to RESET only (S40). */
    g_assert_cmpuint(qrdma_dp_modify_state(&e, &a, QRDMA_QPS_RTS), !=, 0);
    g_assert_cmpuint(qrdma_t_query_qp(&e.t, 0, a.qpn, &resp), ==, 0);
    g_assert_cmpuint(resp.attr.qp_state, ==, QRDMA_QPS_ERR);
}

/*
 * A send doorbell runs small messages inside the doorbell write, but a
 * large one goes to the bottom half whole: the vCPU that rang waits for
 * the doorbell write, and must not wait for megabytes to be copied.
 */
static void test_doorbell_byte_budget(void *obj, void *data,
                                      QGuestAllocator *alloc)
{
    enum { BIG_PAGES = 48, BIG = BIG_PAGES * 4096 };
    struct qrdma_cmd cmd = { .hdr.opcode = QRDMA_CMD_REG_MR };
    struct qrdma_cmpl cmpl;
    uint64_t pages[BIG_PAGES], big, deferred;
    struct qrdma_sq_wqe w;
    uint8_t first, last;
    uint32_t key;
    QrdmaDpEnv e;
    QrdmaDpQp a, b;
    int i;

    qrdma_dp_env_init(&e, obj, alloc);
    big = guest_alloc(alloc, 2 * BIG);
    for (i = 0; i < BIG_PAGES; i++) {
        pages[i] = big + BIG + i * 4096;
    }
    qtest_memset(e.t.qts, big, 0x5a, BIG);
    qtest_memset(e.t.qts, big + BIG, 0, BIG);
    cmd.reg_mr.pd = cpu_to_le32(e.pd);
    cmd.reg_mr.access = cpu_to_le32(QRDMA_ACCESS_LOCAL_WRITE |
                                    QRDMA_ACCESS_REMOTE_WRITE);
    cmd.reg_mr.iova = cpu_to_le64(0x40000000);
    cmd.reg_mr.length = cpu_to_le64(BIG);
    cmd.reg_mr.pages_addr = cpu_to_le64(qrdma_t_page_list(&e.t, pages,
                                                          BIG_PAGES));
    cmd.reg_mr.npages = cpu_to_le32(BIG_PAGES);
    cmd.reg_mr.page_shift = 12;
    g_assert_cmpuint(qrdma_t_exec(&e.t, &cmd, &cmpl), ==, QRDMA_STATUS_OK);
    key = le32_to_cpu(cmpl.handle);
    qrdma_dp_pair(&e, &a, &b, QRDMA_QPT_RC, 0);

    deferred = qrdma_t_qom_get(&e.t, "sq-deferred");
    w = qrdma_dp_wqe_sge(0xf1, QRDMA_WR_RDMA_WRITE, e.data, 4096, e.lkey);
    w.rdma.remote_addr = cpu_to_le64(0x40000000);
    w.rdma.rkey = cpu_to_le32(key);
    qrdma_dp_run_wqe(&e, &a, w, QRDMA_WC_RDMA_WRITE, QRDMA_WC_SUCCESS);
    g_assert_cmpuint(qrdma_t_qom_get(&e.t, "sq-deferred"), ==, deferred);

    /* The source: the first half, through the kernel's local DMA lkey. */
    w = qrdma_dp_wqe_sge(0xf2, QRDMA_WR_RDMA_WRITE, big, BIG,
                         QRDMA_LOCAL_DMA_LKEY);
    w.rdma.remote_addr = cpu_to_le64(0x40000000);
    w.rdma.rkey = cpu_to_le32(key);
    qrdma_dp_run_wqe(&e, &a, w, QRDMA_WC_RDMA_WRITE, QRDMA_WC_SUCCESS);
    g_assert_cmpuint(qrdma_t_qom_get(&e.t, "sq-deferred"), ==, deferred + 1);
    first = qtest_readb(e.t.qts, big + BIG);
    last = qtest_readb(e.t.qts, big + 2 * BIG - 1);
    g_assert_cmphex(first, ==, 0x5a);
    g_assert_cmphex(last, ==, 0x5a);
}

/*
 * An RDMA WRITE into the sender's own MR may overlap its source: the
 * device copies as memmove does (memcpy is undefined there; ASan says so).
 */
static void test_write_overlap(void *obj, void *data, QGuestAllocator *alloc)
{
    uint8_t src[256], got[256];
    struct qrdma_sq_wqe w;
    QrdmaDpEnv e;
    QrdmaDpQp a, b;
    int i;

    qrdma_dp_env_init(&e, obj, alloc);
    for (i = 0; i < sizeof(src); i++) {
        src[i] = i;
    }
    qtest_memwrite(e.t.qts, e.data, src, sizeof(src));
    qrdma_dp_pair(&e, &a, &b, QRDMA_QPT_RC, 0);
    w = qrdma_dp_wqe_sge(0xf3, QRDMA_WR_RDMA_WRITE, e.data, sizeof(src),
                         e.lkey);
    w.rdma.remote_addr = cpu_to_le64(e.data + 8);
    w.rdma.rkey = cpu_to_le32(e.rkey);
    qrdma_dp_run_wqe(&e, &a, w, QRDMA_WC_RDMA_WRITE, QRDMA_WC_SUCCESS);
    qtest_memread(e.t.qts, e.data + 8, got, sizeof(got));
    g_assert_cmpmem(got, sizeof(got), src, sizeof(src));
}

/*
 * An RC request that no responder answers is sent again after the local
 * ACK timeout.  The common race of connection set-up: the requester is in
 * RTS before its peer reaches RTR; the first send finds nobody, and the
 * retransmission after the timeout succeeds.
 */
static void test_rc_retry_late_rtr(void *obj, void *data,
                                   QGuestAllocator *alloc)
{
    const uint32_t init_mask = QRDMA_QP_ATTR_STATE | QRDMA_QP_ATTR_PKEY_INDEX |
                               QRDMA_QP_ATTR_PORT | QRDMA_QP_ATTR_ACCESS_FLAGS;
    const uint32_t rtr_mask = QRDMA_QP_ATTR_STATE | QRDMA_QP_ATTR_AV |
                              QRDMA_QP_ATTR_PATH_MTU | QRDMA_QP_ATTR_DEST_QPN |
                              QRDMA_QP_ATTR_RQ_PSN |
                              QRDMA_QP_ATTR_MAX_DEST_RD_ATOMIC |
                              QRDMA_QP_ATTR_MIN_RNR_TIMER;
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
    g_assert_cmpuint(qrdma_dp_modify(&e, &b, init_mask, QRDMA_QPS_INIT, 0, 0),
                     ==, 0);
    qrdma_dp_write_data(&e, 0, "late");
    w = qrdma_dp_wqe_sge(0xc1, QRDMA_WR_SEND, e.data, 5, e.lkey);
    qrdma_dp_post_send(&e, &a, &w);
    /* Nobody answers yet: no completion until the timer fires. */
    qrdma_dp_expect_no_cqe(&e, &e.cq);
    g_assert_cmpuint(qrdma_dp_modify(&e, &b, rtr_mask, QRDMA_QPS_RTR, a.qpn, 0),
                     ==, 0);
    qrdma_dp_post_recv(&e, &b, 0xc2, e.data + 4096, 64, e.lkey);
    /* 4.096 us * 2^14 = 67 ms later the request goes again, and lands. */
    qrdma_dp_expect_cqe_stepping(&e, &e.cq, 0xc2, b.qpn, QRDMA_WC_SUCCESS,
                                 10 * SCALE_MS, 20);
    qrdma_dp_expect_cqe(&e, &e.cq, 0xc1, a.qpn, QRDMA_WC_SEND,
                        QRDMA_WC_SUCCESS);
    qrdma_dp_expect_data(&e, 4096, "late");
}

/*
 * With nobody ever answering, the request is sent 1 + retry_cnt times and
 * fails RETRY_EXC_ERR when the last one times out: (1 + 3) * 4.19 ms for
 * timeout 10 and retry_cnt 3.  A move to ERR meanwhile flushes it instead,
 * and timeout 0 (no timer) waits for as long as it takes.
 */
/* A fresh RC QP *a in RTS, connected to QPN dest, which nobody has. */
static void rc_to_nobody(QrdmaDpEnv *e, QrdmaDpQp *a, uint32_t dest)
{
    g_assert_cmpuint(qrdma_dp_create_qp(e, a, QRDMA_QPT_RC, 0, &e->cq, &e->cq),
                     ==, 0);
    qrdma_dp_to_rtr(e, a, dest);
    qrdma_dp_to_rts(e, a, 0);
}

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
 * completion, which it asks for by sending them again: the first goes
 * again, asking for an ACK, and the responder's answer to that duplicate
 * (it places nothing twice) acknowledges all three, so the others need
 * not go again.
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

/* The wire */

/* The RETH's DMA length in a frame of IPv4: Ethernet, IP, UDP, BTH, RETH. */
#define WIRE_RETH_LEN (14 + 20 + 8 + 12 + 12)

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

/* The frame counters of e: every frame it takes lands in one of them. */
static uint64_t wire_frames_counted(QrdmaDpEnv *e)
{
    return qrdma_t_qom_get(&e->t, "pkts-rcvd") +
           qrdma_t_qom_get(&e->t, "icrc-errors") +
           qrdma_t_qom_get(&e->t, "wire-malformed") +
           qrdma_t_qom_get(&e->t, "eth-rx-frames") +
           qrdma_t_qom_get(&e->t, "eth-rx-dropped");
}

/* Waits up to 2 s for e to have counted want frames since before. */
static void wire_expect_frames(QrdmaDpEnv *e, uint64_t before, uint64_t want)
{
    int i;

    for (i = 0; i < 200 && wire_frames_counted(e) - before != want; i++) {
        g_usleep(10 * 1000);
    }
    g_assert_cmpuint(wire_frames_counted(e) - before, ==, want);
}

/* Takes every CQE there is, so that the CQ never overflows. */
static void drain_cq(QrdmaDpEnv *e)
{
    struct qrdma_cqe cqe;

    while (qrdma_dp_poll_cq(e, &e->cq, &cqe)) {
        g_assert_cmpuint(cqe.status, <=, QRDMA_WC_GENERAL_ERR);
    }
}

/*
 * One frame made from a good one: bits flipped anywhere; or cut short;
 * or, with its headers made consistent again and a good ICRC, so that
 * it reaches the engines, a random opcode, PSN near the expected, or
 * RETH / AtomicETH / AETH bytes, and a payload of another length.
 */
static size_t wire_mutate(GRand *r, const uint8_t *good, size_t len,
                          uint8_t *f)
{
    size_t n = len;
    int k;

    memcpy(f, good, len);
    switch (g_rand_int_range(r, 0, 4)) {
    case 0:
        for (k = g_rand_int_range(r, 1, 9); k > 0; k--) {
            f[g_rand_int_range(r, 0, n)] ^= 1 << g_rand_int_range(r, 0, 8);
        }
        return n;
    case 1:
        return g_rand_int_range(r, 1, n);
    case 2:
        f[QRDMA_DP_WIRE_BTH] = g_rand_int_range(r, 0, 256);
        f[QRDMA_DP_WIRE_BTH + 1] &= 0xf0;
        break;
    default:
        for (k = g_rand_int_range(r, 1, 6); k > 0; k--) {
            f[QRDMA_DP_WIRE_BTH + 8 + g_rand_int_range(r, 0, 32)] =
                g_rand_int_range(r, 0, 256);
        }
        if (g_rand_boolean(r)) {
            n = MIN(MAX(QRDMA_DP_WIRE_BTH + 16,
                        n + g_rand_int_range(r, -64, 65)),
                    (size_t)QRDMA_DP_WIRE_FRAME_MAX);
            memset(f + len, 0x5a, n > len ? n - len : 0);
        }
        break;
    }
    qrdma_dp_wire_fix(f, n);
    return n;
}

/*
 * Hostile frames at a device with live QPs (issue: wire input is
 * hostile): frames of every kind its peer sent, mutated (QRDMA_FUZZ_SEED
 * replays a run), go to qrdma1 while its QPs work.  Every frame is
 * counted exactly once, as a packet, a drop for its headers or ICRC, or
 * one for the Ethernet function; nothing crashes or trips the sanitizers;
 * and a new pair of QPs still moves data across.
 */
static void test_fuzz_wire_frames(void *obj, void *data,
                                  QGuestAllocator *alloc)
{
    enum { MAX_GOOD = 64 };
    int *sv = data;
    static uint8_t good[MAX_GOOD][QRDMA_DP_WIRE_FRAME_MAX];
    size_t good_len[MAX_GOOD], n;
    uint8_t f[QRDMA_DP_WIRE_FRAME_MAX], ops[64];
    unsigned ngood = 0, i, iters;
    struct qrdma_sq_wqe w;
    uint64_t before;
    QQrdma q1;
    QrdmaDpEnv e0, e1;
    QrdmaDpQp a, b, c, d;
    GRand *r;

    qrdma_dp_wire_envs(obj, alloc, &q1, &e0, &e1);
    e0.path_mtu = e1.path_mtu = 1;
    qrdma_dp_connect_rc(&e0, &a, &e1, &b, true);

    /* the good frames: SEND, WRITE, READ, atomics, passed on as they go */
    qrdma_dp_post_recv(&e1, &b, 0xb1, e1.data, 4096, e1.lkey);
    w = qrdma_dp_wqe_sge(0xa1, QRDMA_WR_SEND, e0.data, 700, e0.lkey);
    qrdma_dp_post_send(&e0, &a, &w);
    w = qrdma_dp_wqe_sge(0xa2, QRDMA_WR_RDMA_WRITE_WITH_IMM, e0.data, 600,
                         e0.lkey);
    w.rdma.remote_addr = cpu_to_le64(e1.data + 8192);
    w.rdma.rkey = cpu_to_le32(e1.rkey);
    qrdma_dp_post_recv(&e1, &b, 0xb2, e1.data, 4096, e1.lkey);
    qrdma_dp_post_send(&e0, &a, &w);
    w = qrdma_dp_wqe_sge(0xa3, QRDMA_WR_RDMA_READ, e0.data + 4096, 600,
                         e0.lkey);
    w.rdma.remote_addr = cpu_to_le64(e1.data + 8192);
    w.rdma.rkey = cpu_to_le32(e1.rkey);
    qrdma_dp_post_send(&e0, &a, &w);
    w = qrdma_dp_wqe_sge(0xa4, QRDMA_WR_ATOMIC_FETCH_AND_ADD, e0.data + 8192, 8,
                         e0.lkey);
    w.rdma.remote_addr = cpu_to_le64(e1.data + 4096 * 3);
    w.rdma.rkey = cpu_to_le32(e1.rkey);
    qrdma_dp_post_send(&e0, &a, &w);
    for (i = 0; i < 8 && ngood < MAX_GOOD; i++) {
        while (ngood < MAX_GOOD &&
               (n = qrdma_dp_wire_recv(sv[0], good[ngood])) != 0) {
            qrdma_dp_wire_send(sv[2], good[ngood], n);
            good_len[ngood++] = n;
        }
        qrdma_dp_relay(sv[2], sv[0], G_N_ELEMENTS(ops), ops);
    }
    g_assert_cmpuint(ngood, >=, 8);

    r = qrdma_t_fuzz_rand();
    iters = qrdma_t_fuzz_iters(3000);
    qrdma_dp_post_recv(&e1, &b, 0xb3, e1.data, 4096, e1.lkey);
    before = wire_frames_counted(&e1);
    for (i = 0; i < iters; i++) {
        unsigned g = g_rand_int_range(r, 0, ngood);

        n = wire_mutate(r, good[g], good_len[g], f);
        qrdma_dp_wire_send(sv[2], f, n);
        /* what qrdma1 answers goes nowhere: the test drops it */
        if (i % 64 == 63) {
            wire_expect_frames(&e1, before, i + 1);
            qrdma_dp_wire_drain(sv[2]);
            drain_cq(&e1);
        }
    }
    wire_expect_frames(&e1, before, iters);
    g_test_message("%u frames: %" PRIu64 " packets, %" PRIu64 " ICRC, %"
                   PRIu64 " malformed", iters,
                   qrdma_t_qom_get(&e1.t, "pkts-rcvd"),
                   qrdma_t_qom_get(&e1.t, "icrc-errors"),
                   qrdma_t_qom_get(&e1.t, "wire-malformed"));

    /* the devices still work: a new pair of QPs, data across */
    qrdma_dp_wire_drain(sv[0]);
    qrdma_dp_wire_drain(sv[2]);
    drain_cq(&e0);
    drain_cq(&e1);
    qrdma_dp_connect_rc(&e0, &c, &e1, &d, true);
    qrdma_dp_write_data(&e0, 4096 * 5, "still here");
    qrdma_dp_post_recv(&e1, &d, 0xd1, e1.data + 4096 * 6, 64, e1.lkey);
    w = qrdma_dp_wqe_sge(0xc1, QRDMA_WR_SEND, e0.data + 4096 * 5, 11, e0.lkey);
    qrdma_dp_post_send(&e0, &c, &w);
    qrdma_dp_relay(sv[0], sv[2], 1, ops);
    qrdma_dp_relay(sv[2], sv[0], 1, ops);
    qrdma_dp_expect_cqe(&e1, &e1.cq, 0xd1, d.qpn, QRDMA_WC_RECV,
                        QRDMA_WC_SUCCESS);
    qrdma_dp_expect_cqe(&e0, &e0.cq, 0xc1, c.qpn, QRDMA_WC_SEND,
                        QRDMA_WC_SUCCESS);
    qrdma_dp_expect_data(&e1, 4096 * 6, "still here");
    g_rand_free(r);
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
 * The answer to a READ or an atomic comes for a WQE whose ring slot the
 * guest rewrote after it went out.  The completer reads the WQE again to
 * complete it, and the rewritten one fails its checks (too many SGEs): the
 * answer lands nowhere, above all not in the local buffer of the WQE the
 * completer held before (the SEND after it, whose source is in an MR
 * without local write, deregistered meanwhile or not), and the WQE
 * completes with the error of its checks.
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
    g_assert_cmpint(qrdma_dp_relay(sv[2], sv[0], 2, ops), >=, 1);
    g_assert_cmphex(ops[0], ==,
                    opcode == QRDMA_WR_RDMA_READ ? 0x10 : 0x12);
    qrdma_dp_expect_cqe(e0, &e0->cq, 0xa1, a.qpn, wc, QRDMA_WC_LOC_QP_OP_ERR);
    qrdma_dp_expect_cqe(e0, &e0->cq, 0xa2, a.qpn, QRDMA_WC_SEND,
                        QRDMA_WC_WR_FLUSH_ERR);
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
    enum { PAGES = 1024, LEN = PAGES * 4096, SMALL = 120 };
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

    /* a READ within the requester's window, and a SEND after it */
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
 * A duplicate READ is answered only from the responder resource of the
 * READ it repeats, and only for what that READ asked for: the same
 * request again, or the rest of it from one of its responses on (MIDDLE,
 * LAST).  One with another rkey (valid too), or a range the READ did not
 * ask for, or repeating a READ no resource keeps any more (with
 * max_dest_rd_atomic 1, an older one), is not answered.  A duplicate
 * SEND is acknowledged even without AckReq.  A READ of more
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
    w = qrdma_dp_wqe_sge(0xa2, QRDMA_WR_RDMA_READ, e0.data + 4096 * 5, 100,
                         e0.lkey);
    w.rdma.remote_addr = cpu_to_le64(e1.data + 4096 * 2);
    w.rdma.rkey = cpu_to_le32(e1.rkey);
    qrdma_dp_post_send(&e0, &a, &w);
    g_assert_cmpint(qrdma_dp_relay(sv[0], sv[2], 1, ops), ==, 1);
    g_assert_cmpint(qrdma_dp_relay(sv[2], sv[0], 1, ops), ==, 1);
    g_assert_cmphex(ops[0], ==, 0x10);
    qrdma_dp_expect_cqe(&e0, &e0.cq, 0xa2, a.qpn, QRDMA_WC_RDMA_READ,
                        QRDMA_WC_SUCCESS);
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

    /* more than 2^31 bytes: NAK invalid request, the QP fails */
    memcpy(f, req, len);
    wire_forge_read(f, len, psn + 5, e1.data, e1.rkey, 0x80000001u);
    qrdma_dp_wire_send(sv[2], f, len);
    /* and the ACK a QP that goes to ERR sends of what it took */
    g_assert_cmpint(wire_answers(sv[2], ops, aeth), ==, 2);
    g_assert_cmphex(ops[0], ==, 0x11);
    g_assert_cmphex(aeth[0], ==, 0x61);
    g_assert_cmpuint(qp_state(&e1, b.qpn), ==, QRDMA_QPS_ERR);

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

/*
 * QPNs and rkeys do not follow one from another: 32 MRs (and their QPs)
 * made in a row have key bytes and slots drawn at random, not counted
 * up, so a peer that knows one cannot work out the next.
 */
static void test_unguessable_handles(void *obj, void *data,
                                     QGuestAllocator *alloc)
{
    enum { N = 32 };
    uint32_t key[N], qpn[N];
    int i, key_steps = 0, slot_steps = 0, qp_steps = 0;
    QrdmaDpQp q[N];
    QrdmaDpEnv e;

    qrdma_dp_env_init(&e, obj, alloc);
    for (i = 0; i < N; i++) {
        g_assert_cmpuint(qrdma_dp_reg_page_mr(&e, e.data + 4096 *
                                              (i % QRDMA_DP_DATA_PAGES),
                                              QRDMA_ACCESS_REMOTE_READ,
                                              &key[i]), ==, 0);
        g_assert_cmpuint(qrdma_dp_create_qp(&e, &q[i], QRDMA_QPT_RC, 0, &e.cq,
                                            &e.cq), ==, 0);
        qpn[i] = q[i].qpn;
    }
    for (i = 1; i < N; i++) {
        key_steps += (uint8_t)(key[i] - key[i - 1]) == 1;
        slot_steps += (key[i] >> 8) - (key[i - 1] >> 8) == 1;
        qp_steps += qpn[i] - qpn[i - 1] == 1;
    }
    /* counted up, each would step by one 31 times; at random, rarely */
    g_assert_cmpint(key_steps, <, 8);
    g_assert_cmpint(slot_steps, <, 8);
    g_assert_cmpint(qp_steps, <, 8);
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

/*
 * The wire of qrdma_dp_wire_setup with a capture: filter-dump on qrdma0's
 * netdev w0 writes every frame of the hub, both ways, to the pcap file
 * $QRDMA_PCAP, which stays (scripts/check-pcap decodes it with tshark),
 * or to a file of the test's own, removed at the end.
 */
typedef struct PcapWire {
    int *sv;                            /* qrdma_dp_wire_setup's sockets */
    char *path;
    bool keep;
    GPtrArray *seen;                    /* GBytes: the frames the hub sent */
    uint8_t seed;                       /* of the next message's bytes */
} PcapWire;

static void pcap_cleanup(void *pw)
{
    PcapWire *p = pw;

    if (!p->keep) {
        unlink(p->path);
    }
    if (p->seen) {
        g_ptr_array_unref(p->seen);
    }
    g_free(p->path);
    g_free(p);
}

static void *pcap_setup(GString *cmd_line, void *arg)
{
    PcapWire *p = g_new0(PcapWire, 1);
    const char *env = g_getenv("QRDMA_PCAP");
    GError *err = NULL;
    int fd;

    if (env && *env) {
        p->path = g_strdup(env);
        p->keep = true;
    } else {
        fd = g_file_open_tmp("qrdma-pcap-XXXXXX.pcap", &p->path, &err);
        g_assert_no_error(err);
        close(fd);
    }
    /* a comma would end QEMU's option, a space the command line's word */
    g_assert_null(strpbrk(p->path, ", "));
    p->sv = qrdma_dp_wire_setup(cmd_line, arg);
    g_string_append_printf(cmd_line,
        " -object filter-dump,id=dump0,netdev=w0,file=%s ", p->path);
    g_test_queue_destroy(pcap_cleanup, p);
    return p;
}

/* The frames the hub brought the test, until none comes within wait_ms. */
static void pcap_take(PcapWire *p, int wait_ms)
{
    struct pollfd pfd = { .fd = p->sv[0], .events = POLLIN };
    uint8_t f[QRDMA_DP_WIRE_FRAME_MAX];
    ssize_t n;

    while (poll(&pfd, 1, wait_ms) == 1) {
        n = recv(p->sv[0], f, sizeof(f), 0);
        g_assert_cmpint(n, >, 0);
        g_ptr_array_add(p->seen, g_bytes_new(f, n));
    }
}

/*
 * The frames of a capture, in order: filter-dump writes the pcap format
 * in host byte order, Ethernet frames without FCS, each whole.
 */
static GPtrArray *pcap_read(const char *path)
{
    GPtrArray *frames = g_ptr_array_new_with_free_func(
        (GDestroyNotify)g_bytes_unref);
    g_autofree char *buf = NULL;
    gsize len, off = 24;
    uint32_t caplen;

    g_assert_true(g_file_get_contents(path, &buf, &len, NULL));
    g_assert_cmpuint(len, >=, 24);
    g_assert_cmphex((uint32_t)ldl_he_p(buf), ==, 0xa1b2c3d4);
    g_assert_cmpuint(ldl_he_p(buf + 20), ==, 1);          /* Ethernet */
    while (off < len) {
        g_assert_cmpuint(len - off, >=, 16);
        caplen = ldl_he_p(buf + off + 8);
        g_assert_cmpuint(caplen, ==, (uint32_t)ldl_he_p(buf + off + 12));
        g_assert_cmpuint(len - off - 16, >=, caplen);
        g_ptr_array_add(frames, g_bytes_new(buf + off + 16, caplen));
        off += 16 + caplen;
    }
    return frames;
}

/* A requester QP on s and its peer on r; ah is the AH on s for UD. */
typedef struct PcapPair {
    QrdmaDpEnv *s;
    QrdmaDpQp *a;
    QrdmaDpEnv *r;
    QrdmaDpQp *b;
    uint32_t ah;
} PcapPair;

/* Where a message's bytes come from and where they land. */
#define PCAP_SRC        0
#define PCAP_DST        (4096 * 4)

/* QPs of a type on both functions, connected (but UD), in RTS. */
static void pcap_connect(PcapPair *q, uint8_t type, uint8_t rnr_retry)
{
    g_assert_cmpuint(qrdma_dp_create_qp(q->s, q->a, type, 0, &q->s->cq,
                                        &q->s->cq), ==, 0);
    g_assert_cmpuint(qrdma_dp_create_qp(q->r, q->b, type, 0, &q->r->cq,
                                        &q->r->cq), ==, 0);
    qrdma_dp_to_rtr(q->s, q->a, type == QRDMA_QPT_UD ? 0 : q->b->qpn);
    qrdma_dp_to_rtr(q->r, q->b, type == QRDMA_QPT_UD ? 0 : q->a->qpn);
    qrdma_dp_to_rts(q->s, q->a, rnr_retry);
    qrdma_dp_to_rts(q->r, q->b, rnr_retry);
}

/* Waits up to 2 s for len bytes at addr of e to be want. */
static void pcap_expect_bytes(QrdmaDpEnv *e, uint64_t addr, const uint8_t *want,
                              uint32_t len)
{
    uint8_t got[1024];
    int i;

    g_assert_cmpuint(len, <=, sizeof(got));
    for (i = 0; i < 200; i++) {
        qtest_memread(e->t.qts, addr, got, len);
        if (!memcmp(got, want, len)) {
            break;
        }
        g_usleep(10 * 1000);
    }
    g_assert_cmpmem(got, len, want, len);
}

/*
 * One message of len bytes by wr opcode op over the pair, from bytes of
 * its own: a receive posted for the opcodes that take one (if
 * rnr_wait_ns is not 0, only once the first try drew an RNR NAK, and
 * rnr_wait_ns of virtual time then passes), both sides' completions
 * checked, the bytes where they land.
 * imm is the immediate, or the rkey for SEND_WITH_INV.
 */
static void pcap_message(PcapWire *p, PcapPair *q, uint8_t op, uint32_t len,
                         uint32_t imm, int64_t rnr_wait_ns)
{
    bool read = op == QRDMA_WR_RDMA_READ;
    bool recv = op != QRDMA_WR_RDMA_WRITE && !read;
    bool send = recv && op != QRDMA_WR_RDMA_WRITE_WITH_IMM;
    uint32_t grh = q->a->type == QRDMA_QPT_UD ? QRDMA_GRH_SIZE : 0;
    QrdmaDpEnv *from = read ? q->r : q->s, *to = read ? q->s : q->r;
    uint64_t wr_id = 0xa00 + op;
    struct qrdma_sq_wqe w;
    struct qrdma_cqe cqe;
    uint8_t src[1024];
    uint64_t rnr;
    uint32_t i;

    g_assert_cmpuint(len, <=, sizeof(src));
    p->seed += 0x35;
    for (i = 0; i < len; i++) {
        src[i] = p->seed + i * 7;
    }
    qtest_memwrite(from->t.qts, from->data + PCAP_SRC, src, len);
    qtest_memset(to->t.qts, to->data + PCAP_DST, 0, grh + len);

    w = qrdma_dp_wqe_sge(wr_id, op, q->s->data + (read ? PCAP_DST : PCAP_SRC),
                         len, q->s->lkey);
    if (grh) {
        w.ud.ah = cpu_to_le32(q->ah);
        w.ud.remote_qpn = cpu_to_le32(q->b->qpn);
        w.ud.remote_qkey = cpu_to_le32(0x1234);
    } else if (!send) {
        w.rdma.remote_addr = cpu_to_le64(q->r->data +
                                         (read ? PCAP_SRC : PCAP_DST));
        w.rdma.rkey = cpu_to_le32(q->r->rkey);
    }
    if (op == QRDMA_WR_SEND_WITH_INV) {
        w.invalidate_rkey = cpu_to_le32(imm);
    } else {
        w.imm_data = cpu_to_be32(imm);
    }
    if (recv && !rnr_wait_ns) {
        qrdma_dp_post_recv(q->r, q->b, wr_id + 0x100, q->r->data + PCAP_DST,
                           4096, q->r->lkey);
    }
    rnr = qrdma_t_qom_get(&q->s->t, "rnr-naks-rcvd");
    qrdma_dp_post_send(q->s, q->a, &w);
    if (rnr_wait_ns) {
        qrdma_dp_wire_expect_count(q->s, "rnr-naks-rcvd", rnr + 1);
        qrdma_dp_post_recv(q->r, q->b, wr_id + 0x100, q->r->data + PCAP_DST,
                           4096, q->r->lkey);
        qtest_clock_step(q->s->t.qts, rnr_wait_ns);
    }

    if (recv) {
        g_assert_true(qrdma_dp_poll_cq(q->r, &q->r->cq, &cqe));
        g_assert_cmphex(cqe.wr_id, ==, wr_id + 0x100);
        g_assert_cmpuint(cqe.status, ==, QRDMA_WC_SUCCESS);
        g_assert_cmpuint(cqe.opcode, ==, send ? QRDMA_WC_RECV :
                         QRDMA_WC_RECV_RDMA_WITH_IMM);
        g_assert_cmpuint(le32_to_cpu(cqe.byte_len), ==, grh + len);
        if (op == QRDMA_WR_SEND_WITH_INV) {
            g_assert_true(cqe.flags & QRDMA_CQE_F_WITH_INV);
            g_assert_cmphex(le32_to_cpu(cqe.invalidate_rkey), ==, imm);
        } else if (op != QRDMA_WR_SEND) {
            g_assert_true(cqe.flags & QRDMA_CQE_F_WITH_IMM);
            g_assert_cmphex(be32_to_cpu(cqe.imm_data), ==, imm);
        } else {
            g_assert_false(cqe.flags & (QRDMA_CQE_F_WITH_IMM |
                                        QRDMA_CQE_F_WITH_INV));
        }
        if (grh) {
            g_assert_cmphex(le32_to_cpu(cqe.src_qp), ==, q->a->qpn);
        }
    }
    qrdma_dp_expect_cqe(q->s, &q->s->cq, wr_id, q->a->qpn,
                        send ? QRDMA_WC_SEND : read ? QRDMA_WC_RDMA_READ :
                        QRDMA_WC_RDMA_WRITE, QRDMA_WC_SUCCESS);
    pcap_expect_bytes(to, to->data + PCAP_DST + grh, src, len);
    pcap_take(p, 10);
}

/*
 * r's type 2 window, bound through b to the first 256 bytes of the MR
 * mr under its next key, which goes to *key: the bind fails while the
 * window is still bound, so a second one shows that a SEND_WITH_INV
 * unbound it.
 */
static void pcap_bind(PcapPair *q, uint32_t mr, uint32_t *key)
{
    *key = qrdma_dp_next_key(*key);
    qrdma_dp_run_wqe(q->r, q->b,
                     qrdma_dp_wqe_bind(0xbb, *key, mr, 0x10000000, 256,
                                       QRDMA_ACCESS_REMOTE_WRITE),
                     QRDMA_WC_BIND_MW, QRDMA_WC_SUCCESS);
}

/*
 * Every BTH opcode the device sends: RC's but RESYNC, with FLUSH and
 * ATOMIC_WRITE (IBTA 1.5), UC's, and UD's SEND_ONLY and SEND_ONLY_IMM.
 * scripts/check-pcap has the same list.
 */
static const uint8_t pcap_opcodes[] = {
    0x00, 0x01, 0x02, 0x03, 0x04, 0x05,         /* RC SEND */
    0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b,         /* RC RDMA WRITE */
    0x0c, 0x0d, 0x0e, 0x0f, 0x10,               /* RC RDMA READ */
    0x11, 0x12, 0x13, 0x14,                     /* ACK, atomics */
    0x16, 0x17,                                 /* SEND with invalidate */
    0x1c, 0x1d,                                 /* FLUSH, ATOMIC_WRITE */
    0x20, 0x21, 0x22, 0x23, 0x24, 0x25,         /* UC SEND */
    0x26, 0x27, 0x28, 0x29, 0x2a, 0x2b,         /* UC RDMA WRITE */
    0x64, 0x65,                                 /* UD SEND */
};

/*
 * A capture of every opcode: each message of RC (SEND, with immediate,
 * with invalidate, RDMA WRITE, with immediate, READ, each as one packet
 * and as three at MTU 256; an RNR NAK; both atomics, ATOMIC_WRITE,
 * FLUSH), of UC (SEND and RDMA WRITE, with immediate and without) and of
 * UD (SEND, with immediate and without) crosses the hub, its data
 * checked where it lands.  Every frame the hub carried is checked
 * against the annex (its ICRC too), their opcodes are exactly
 * pcap_opcodes, and the capture holds those frames, in order, byte for
 * byte.
 */
static void test_wire_pcap(void *obj, void *data, QGuestAllocator *alloc)
{
    static const uint32_t lens[] = { 600, 16 };
    PcapWire *p = data;
    g_autoptr(GPtrArray) capture = NULL;
    g_autoptr(GString) missing = g_string_new("");
    g_autoptr(GString) unexpected = g_string_new("");
    struct qrdma_cmd cmd = { .hdr.opcode = QRDMA_CMD_CREATE_AH };
    struct qrdma_cmpl cmpl;
    unsigned ops[256] = { 0 }, rnr = 0;
    bool listed[256] = { false };
    uint32_t mr, key;
    struct qrdma_sq_wqe w;
    QQrdma q1;
    QrdmaDpEnv e0, e1;
    QrdmaDpQp a, b;
    PcapPair q = { .s = &e0, .a = &a, .r = &e1, .b = &b };
    const uint8_t *f;
    size_t n;
    unsigned i;

    p->seen = g_ptr_array_new_with_free_func((GDestroyNotify)g_bytes_unref);
    qrdma_dp_wire_envs(obj, alloc, &q1, &e0, &e1);
    e0.path_mtu = e1.path_mtu = 1;
    e1.qp_access |= QRDMA_ACCESS_FLUSH_GLOBAL;

    /* RC: rnr_retry 7 (for ever), so that the RNR NAK only delays */
    pcap_connect(&q, QRDMA_QPT_RC, 7);
    mr = qrdma_dp_reg_mr(&e1, e1.pd, 4096 * 12, 4096,
                         QRDMA_ACCESS_LOCAL_WRITE | QRDMA_ACCESS_MW_BIND);
    key = qrdma_dp_alloc_mw(&e1, e1.pd, QRDMA_MW_TYPE_2, NULL);
    for (i = 0; i < G_N_ELEMENTS(lens); i++) {
        pcap_message(p, &q, QRDMA_WR_SEND, lens[i], 0, 0);
        pcap_message(p, &q, QRDMA_WR_SEND_WITH_IMM, lens[i], 0x1000 + i, 0);
        pcap_bind(&q, mr, &key);
        pcap_message(p, &q, QRDMA_WR_SEND_WITH_INV, lens[i], key, 0);
        pcap_message(p, &q, QRDMA_WR_RDMA_WRITE, lens[i], 0, 0);
        pcap_message(p, &q, QRDMA_WR_RDMA_WRITE_WITH_IMM, lens[i],
                     0x2000 + i, 0);
        pcap_message(p, &q, QRDMA_WR_RDMA_READ, lens[i], 0, 0);
    }
    /* the last SEND_WITH_INV unbound the window too */
    pcap_bind(&q, mr, &key);
    /* no receive at first: an RNR NAK, then the retry takes one */
    pcap_message(p, &q, QRDMA_WR_SEND, 16, 0, 100 * SCALE_MS);

    /* atomics on page 9 of qrdma1, the old values to page 10 of qrdma0 */
    qtest_writeq(e1.t.qts, e1.data + 4096 * 9, 40);
    w = qrdma_dp_wqe_sge(0xa4, QRDMA_WR_ATOMIC_FETCH_AND_ADD,
                         e0.data + 4096 * 10, 8, e0.lkey);
    w.rdma.remote_addr = cpu_to_le64(e1.data + 4096 * 9);
    w.rdma.rkey = cpu_to_le32(e1.rkey);
    w.rdma.compare_add = cpu_to_le64(2);
    qrdma_dp_run_wqe(&e0, &a, w, QRDMA_WC_FETCH_ADD, QRDMA_WC_SUCCESS);
    g_assert_cmpuint(qtest_readq(e1.t.qts, e1.data + 4096 * 9), ==, 42);
    g_assert_cmpuint(qtest_readq(e0.t.qts, e0.data + 4096 * 10), ==, 40);
    w = qrdma_dp_wqe_sge(0xa5, QRDMA_WR_ATOMIC_CMP_AND_SWP, e0.data + 4096 * 10,
                         8, e0.lkey);
    w.rdma.remote_addr = cpu_to_le64(e1.data + 4096 * 9);
    w.rdma.rkey = cpu_to_le32(e1.rkey);
    w.rdma.compare_add = cpu_to_le64(42);
    w.rdma.swap = cpu_to_le64(0x1122334455667788ull);
    qrdma_dp_run_wqe(&e0, &a, w, QRDMA_WC_COMP_SWAP, QRDMA_WC_SUCCESS);
    g_assert_cmphex(qtest_readq(e1.t.qts, e1.data + 4096 * 9), ==,
                    0x1122334455667788ull);
    g_assert_cmpuint(qtest_readq(e0.t.qts, e0.data + 4096 * 10), ==, 42);
    w = qrdma_dp_wqe_sge(0xa6, QRDMA_WR_ATOMIC_WRITE, e0.data, 8, e0.lkey);
    w.rdma.remote_addr = cpu_to_le64(e1.data + 4096 * 9);
    w.rdma.rkey = cpu_to_le32(e1.rkey);
    memcpy(&w.rdma.compare_add, "ABCDEFG", 8);
    qrdma_dp_run_wqe(&e0, &a, w, QRDMA_WC_ATOMIC_WRITE, QRDMA_WC_SUCCESS);
    pcap_expect_bytes(&e1, e1.data + 4096 * 9, (const uint8_t *)"ABCDEFG", 8);
    qrdma_dp_run_wqe(&e0, &a,
                     qrdma_dp_wqe_flush(0xa7, e1.rkey, e1.data + 4096 * 9, 8,
                                        QRDMA_FLUSH_GLOBAL, QRDMA_FLUSH_RANGE),
                     QRDMA_WC_FLUSH, QRDMA_WC_SUCCESS);
    pcap_take(p, 10);

    /* UC */
    pcap_connect(&q, QRDMA_QPT_UC, 0);
    for (i = 0; i < G_N_ELEMENTS(lens); i++) {
        pcap_message(p, &q, QRDMA_WR_SEND, lens[i], 0, 0);
        pcap_message(p, &q, QRDMA_WR_SEND_WITH_IMM, lens[i], 0x3000 + i, 0);
        pcap_message(p, &q, QRDMA_WR_RDMA_WRITE, lens[i], 0, 0);
        pcap_message(p, &q, QRDMA_WR_RDMA_WRITE_WITH_IMM, lens[i],
                     0x4000 + i, 0);
    }

    /* UD, to qrdma1 by an AH */
    pcap_connect(&q, QRDMA_QPT_UD, 0);
    cmd.create_ah.pd = cpu_to_le32(e0.pd);
    cmd.create_ah.av.hop_limit = 64;
    cmd.create_ah.av.vlan_id = cpu_to_le16(QRDMA_VLAN_NONE);
    memcpy(cmd.create_ah.av.dgid,
           (uint8_t[16]) { [10] = 0xff, [11] = 0xff, 10, 0, 2, 16 }, 16);
    memcpy(cmd.create_ah.av.dmac, qrdma_dp_wire_mac1, 6);
    g_assert_cmpuint(qrdma_t_exec(&e0.t, &cmd, &cmpl), ==, 0);
    q.ah = le32_to_cpu(cmpl.handle);
    pcap_message(p, &q, QRDMA_WR_SEND, 64, 0, 0);
    pcap_message(p, &q, QRDMA_WR_SEND_WITH_IMM, 64, 0x5000, 0);

    /* the capture has each frame before the hub passes it on */
    capture = pcap_read(p->path);
    for (i = 0; i < 20 && p->seen->len < capture->len; i++) {
        pcap_take(p, 100);
    }
    g_assert_cmpuint(capture->len, ==, p->seen->len);
    for (i = 0; i < capture->len; i++) {
        g_assert_true(g_bytes_equal(capture->pdata[i], p->seen->pdata[i]));
    }

    for (i = 0; i < p->seen->len; i++) {
        f = g_bytes_get_data(p->seen->pdata[i], &n);
        ops[qrdma_dp_wire_check_frame(f, n)]++;
        /* an ACK whose AETH's syndrome is an RNR NAK */
        rnr += f[QRDMA_DP_WIRE_BTH] == 0x11 &&
               (f[QRDMA_DP_WIRE_BTH + 12] & 0x60) == 0x20;
    }
    for (i = 0; i < G_N_ELEMENTS(pcap_opcodes); i++) {
        listed[pcap_opcodes[i]] = true;
        if (!ops[pcap_opcodes[i]]) {
            g_string_append_printf(missing, " 0x%02x", pcap_opcodes[i]);
        }
    }
    for (i = 0; i < 256; i++) {
        if (ops[i] && !listed[i]) {
            g_string_append_printf(unexpected, " 0x%02x", i);
        }
    }
    g_assert_cmpstr(missing->str, ==, "");
    g_assert_cmpstr(unexpected->str, ==, "");
    g_assert_cmpuint(rnr, >=, 1);
    g_assert_cmpuint(qrdma_t_qom_get(&e0.t, "rnr-naks-rcvd"), ==, rnr);
    g_assert_cmpuint(qrdma_t_qom_get(&e0.t, "icrc-errors") +
                     qrdma_t_qom_get(&e1.t, "icrc-errors") +
                     qrdma_t_qom_get(&e0.t, "wire-malformed") +
                     qrdma_t_qom_get(&e1.t, "wire-malformed"), ==, 0);
    g_test_message("%u frames in %s", capture->len, p->path);
}

/*
 * Functions reach each other only on one qrdma-fabric.  qrdma1 and qrdma2
 * link to fabric f1, qrdma0 stays on the default one: a send from qrdma2
 * reaches qrdma1, one from qrdma0 finds nobody and its retries run out.
 * A fabric cannot be unplugged.
 */
static void test_fabric_link(void *obj, void *data, QGuestAllocator *alloc)
{
    QQrdma q1, q2;
    struct qrdma_sq_wqe w;
    QDict *rsp;
    QrdmaDpEnv e0, e1, e2;
    QrdmaDpQp a, b, c;

    qrdma_dp_env_init(&e0, obj, alloc);
    qrdma_dp_other_device(obj, 5, 16, &q1, alloc, &e1);
    qrdma_dp_other_device(obj, 6, 17, &q2, alloc, &e2);
    e0.peer_ip = 16;
    e2.peer_ip = 16;
    e1.peer_ip = 17;
    e0.timeout = 8;
    e0.retry_cnt = 1;
    qrdma_dp_connect_rc(&e2, &c, &e1, &b, true);
    g_assert_cmpuint(qrdma_dp_create_qp(&e0, &a, QRDMA_QPT_RC, 0, &e0.cq,
                                        &e0.cq), ==, 0);
    qrdma_dp_to_rtr(&e0, &a, b.qpn);
    qrdma_dp_to_rts(&e0, &a, 0);

    qrdma_dp_write_data(&e2, 0, "fabric");
    qrdma_dp_post_recv(&e1, &b, 0xb1, e1.data, 64, e1.lkey);
    w = qrdma_dp_wqe_sge(0xc1, QRDMA_WR_SEND, e2.data, 7, e2.lkey);
    qrdma_dp_post_send(&e2, &c, &w);
    qrdma_dp_expect_cqe(&e1, &e1.cq, 0xb1, b.qpn, QRDMA_WC_RECV,
                        QRDMA_WC_SUCCESS);
    qrdma_dp_expect_cqe(&e2, &e2.cq, 0xc1, c.qpn, QRDMA_WC_SEND,
                        QRDMA_WC_SUCCESS);
    qrdma_dp_expect_data(&e1, 0, "fabric");

    qrdma_dp_post_recv(&e1, &b, 0xb2, e1.data, 64, e1.lkey);
    w = qrdma_dp_wqe_sge(0xa1, QRDMA_WR_SEND, e0.data, 7, e0.lkey);
    qrdma_dp_post_send(&e0, &a, &w);
    qrdma_dp_expect_cqe_stepping(&e0, &e0.cq, 0xa1, a.qpn,
                                 QRDMA_WC_RETRY_EXC_ERR, SCALE_MS, 10);
    qrdma_dp_expect_no_cqe(&e1, &e1.cq);

    rsp = qtest_qmp(e0.t.qts, "{ 'execute': 'device_del', "
                    "'arguments': { 'id': 'f1' } }");
    g_assert_true(qdict_haskey(rsp, "error"));
    qobject_unref(rsp);
}

/*
 * An MR's pages need be readable only: behind an IOMMU a ULP registers
 * buffers it mapped for the device to read.  Writes are checked when they
 * happen.  Here the page is the top of the PC BIOS, ROM: READ from it
 * works, a WRITE into it fails as an access error and a guest error.
 */
static void test_mr_readonly_pages(void *obj, void *data,
                                   QGuestAllocator *alloc)
{
    const uint64_t rom = 0xfffff000;
    uint8_t want[64], got[64];
    uint32_t rkey;
    struct qrdma_sq_wqe w;
    uint64_t errors;
    QrdmaDpEnv e;
    QrdmaDpQp a, b;

    qrdma_dp_env_init(&e, obj, alloc);
    g_assert_cmpuint(qrdma_dp_reg_page_mr(&e, rom, QRDMA_ACCESS_LOCAL_WRITE |
                                          QRDMA_ACCESS_REMOTE_WRITE |
                                          QRDMA_ACCESS_REMOTE_READ, &rkey), ==,
                     QRDMA_STATUS_OK);
    qrdma_dp_pair(&e, &a, &b, QRDMA_QPT_RC, 0);

    qtest_memread(e.t.qts, rom + 4096 - sizeof(want), want, sizeof(want));
    w = qrdma_dp_wqe_sge(0xd3, QRDMA_WR_RDMA_READ, e.data, sizeof(want),
                         e.lkey);
    w.rdma.remote_addr = cpu_to_le64(rom + 4096 - sizeof(want));
    w.rdma.rkey = cpu_to_le32(rkey);
    qrdma_dp_run_wqe(&e, &a, w, QRDMA_WC_RDMA_READ, QRDMA_WC_SUCCESS);
    qtest_memread(e.t.qts, e.data, got, sizeof(got));
    g_assert_cmpmem(got, sizeof(got), want, sizeof(want));

    errors = qrdma_t_qom_get(&e.t, "guest-errors");
    w = qrdma_dp_wqe_sge(0xd4, QRDMA_WR_RDMA_WRITE, e.data, 8, e.lkey);
    w.rdma.remote_addr = cpu_to_le64(rom);
    w.rdma.rkey = cpu_to_le32(rkey);
    qrdma_dp_run_wqe(&e, &a, w, QRDMA_WC_RDMA_WRITE, QRDMA_WC_REM_ACCESS_ERR);
    g_assert_cmpuint(qrdma_t_qom_get(&e.t, "guest-errors"), >, errors);
    qtest_memread(e.t.qts, rom + 4096 - sizeof(want), got, sizeof(got));
    g_assert_cmpmem(got, sizeof(got), want, sizeof(want));
}

/* DEVICE_FATAL: the command ring vanishes from under the device. */
/*
 * Seeded random WQEs (QRDMA_FUZZ_SEED replays one run): bytes at random,
 * then opcode, flags, SGE count, keys and addresses set near the valid
 * ones, on RC and UC pairs, with random receive WQEs on the other
 * side.  For any of them the contract holds: what completes does so with
 * a status of the spec, both QPs still destroy, the device stays ready,
 * and a reset frees everything.
 */
static uint64_t fuzz_near(GRand *r, QrdmaDpEnv *e, uint64_t valid)
{
    switch (g_rand_int_range(r, 0, 16)) {
    case 0:
        return (uint64_t)g_rand_int(r) << 32 | g_rand_int(r);
    case 1:
        return valid + g_rand_int_range(r, -64, 64);
    case 2:
        return e->data + g_rand_int_range(r, 0,
                                          QRDMA_DP_DATA_PAGES * 4096 + 64);
    default:
        return valid;
    }
}

static void fuzz_sq_wqe(GRand *r, QrdmaDpEnv *e, uint8_t *slot)
{
    static const uint8_t ops[] = {
        QRDMA_WR_RDMA_WRITE, QRDMA_WR_RDMA_WRITE_WITH_IMM, QRDMA_WR_SEND,
        QRDMA_WR_SEND_WITH_IMM, QRDMA_WR_RDMA_READ,
        QRDMA_WR_ATOMIC_CMP_AND_SWP, QRDMA_WR_ATOMIC_FETCH_AND_ADD,
        QRDMA_WR_LOCAL_INV, QRDMA_WR_BIND_MW, QRDMA_WR_SEND_WITH_INV,
        QRDMA_WR_FLUSH, QRDMA_WR_ATOMIC_WRITE, QRDMA_WR_REG_MR,
    };
    struct qrdma_sq_wqe *w = (struct qrdma_sq_wqe *)slot;
    unsigned i;

    /*
     * An error ends the QP's run (the rest is flushed): most WQEs start
     * from zeros with fields near the valid ones, to get past the first.
     */
    memset(slot, 0, QRDMA_SQ_WQE_SIZE);
    for (i = 0; !g_rand_int_range(r, 0, 8) && i < QRDMA_SQ_WQE_SIZE;) {
        uint32_t v = g_rand_int(r);

        memcpy(slot + i, &v, 4);
        i += 4;
    }
    w->wr_id = g_rand_int(r);
    w->opcode = g_rand_int_range(r, 0, 16) ?
                ops[g_rand_int_range(r, 0, G_N_ELEMENTS(ops))] : g_rand_int(r);
    w->flags = g_rand_int_range(r, 0, 8) ? QRDMA_WQE_F_SIGNALED :
               g_rand_int(r);
    w->num_sge = g_rand_int_range(r, 0, 8) ? 1 : g_rand_int_range(r, 0, 40);
    w->imm_data = g_rand_int(r);
    if (w->flags & QRDMA_WQE_F_INLINE) {
        w->inline_len = cpu_to_le32(fuzz_near(r, e, 32));
    }
    for (i = 0; i < 3; i++) {
        w->sge[i].addr = cpu_to_le64(fuzz_near(r, e, e->data + i * 4096));
        w->sge[i].length = cpu_to_le32(fuzz_near(r, e, 64));
        w->sge[i].lkey = cpu_to_le32(fuzz_near(r, e, e->lkey));
    }
    w->rdma.remote_addr = cpu_to_le64(fuzz_near(r, e, e->data + 8192));
    w->rdma.rkey = cpu_to_le32(fuzz_near(r, e, e->rkey));
}

static void test_fuzz_wqes(void *obj, void *data, QGuestAllocator *alloc)
{
    /* UD's own checks (AH, Q_Key) have their targeted tests. */
    static const uint8_t types[] = { QRDMA_QPT_RC, QRDMA_QPT_UC };
    GRand *r;
    unsigned round, i, cqes = 0, failed = 0;
    uint8_t slot[QRDMA_SQ_WQE_SIZE];
    struct qrdma_cqe cqe;
    QrdmaDpQp a, b;
    QrdmaDpEnv e;

    qrdma_dp_env_init(&e, obj, alloc);
    r = qrdma_t_fuzz_rand();
    for (round = 0; round < 32; round++) {
        /* rnr_retry 0: a send without a receive fails rather than waits. */
        qrdma_dp_pair(&e, &a, &b, types[round % G_N_ELEMENTS(types)], 0);
        for (i = 0; i < 8; i++) {
            qrdma_dp_post_recv(&e, &b, i, fuzz_near(r, &e, e.data + i * 512),
                               fuzz_near(r, &e, 512), fuzz_near(r, &e, e.lkey));
        }
        for (i = 0; i < 8; i++) {
            fuzz_sq_wqe(r, &e, slot);
            qtest_memwrite(e.t.qts, a.sq + (a.sq_pi % 16) * QRDMA_SQ_WQE_SIZE,
                           slot, sizeof(slot));
            a.sq_pi++;
            qrdma_dp_ring_db(&e, QRDMA_DB_SQ, a.qpn, a.sq_pi);
        }
        while (qrdma_dp_poll_cq(&e, &e.cq, &cqe)) {
            cqes++;
            failed += cqe.status != QRDMA_WC_SUCCESS;
            g_assert_cmpuint(cqe.status, <=, QRDMA_WC_GENERAL_ERR);
        }
        g_assert_cmpuint(qrdma_t_destroy(&e.t, QRDMA_CMD_DESTROY_QP, 0,
                                         a.qpn), ==, QRDMA_STATUS_OK);
        g_assert_cmpuint(qrdma_t_destroy(&e.t, QRDMA_CMD_DESTROY_QP, 0,
                                         b.qpn), ==, QRDMA_STATUS_OK);
        g_assert_cmphex(qrdma_t_readl(&e.t, QRDMA_REG_DEV_STATUS), ==,
                        QRDMA_DEV_STATUS_READY);
    }
    g_test_message("%u CQEs, %u of them errors", cqes, failed);
    g_assert_cmpuint(cqes, >, 0);
    qrdma_t_writel(&e.t, QRDMA_REG_DEV_CTRL, QRDMA_DEV_CTRL_RESET);
    g_assert_cmpuint(qrdma_t_qom_get(&e.t, "resources"), ==, 0);
    g_rand_free(r);
}

static void test_device_fatal(void *obj, void *data, QGuestAllocator *alloc)
{
    QrdmaDpEnv e;

    qrdma_dp_env_init(&e, obj, alloc);
    qrdma_t_writel(&e.t, QRDMA_REG_DEV_CTRL, 0);
    qrdma_t_writeq(&e.t, QRDMA_REG_CMDQ_BASE, 0xfffffffff000ull);
    qrdma_t_writel(&e.t, QRDMA_REG_DEV_CTRL, QRDMA_DEV_CTRL_ENABLE);
    qrdma_t_writel(&e.t, QRDMA_REG_CMDQ_PI, 1);
    qrdma_dp_expect_event(&e, 0, QRDMA_EV_DEVICE_FATAL, 0);
    g_assert_cmphex(qrdma_t_readl(&e.t, QRDMA_REG_DEV_STATUS), ==,
                    QRDMA_DEV_STATUS_FATAL);
}

/*
 * Benchmarks, run by scripts/bench on the optimized build with
 * QRDMA_BENCH=1 (and under callgrind for instruction counts).  Without it
 * they run a few iterations only, checking that every WQE completes.
 */

#define BENCH_SQ_LOG2 8
#define BENCH_BUF (2 * 1024 * 1024)

static bool bench_on(void)
{
    return g_getenv("QRDMA_BENCH") != NULL;
}

static void bench_qp(QrdmaDpEnv *e, QrdmaDpQp *qp, uint8_t type)
{
    uint32_t sq_pages = (QRDMA_SQ_WQE_SIZE << BENCH_SQ_LOG2) / 4096;
    uint64_t pages[64];
    struct qrdma_cmd cmd = { .hdr.opcode = QRDMA_CMD_CREATE_QP };
    struct qrdma_cmpl cmpl;
    uint32_t i;

    memset(qp, 0, sizeof(*qp));
    qp->type = type;
    qp->sq = guest_alloc(e->t.alloc, sq_pages * 4096);
    qp->rq = guest_alloc(e->t.alloc, 4096 * 8);
    for (i = 0; i < sq_pages; i++) {
        pages[i] = qp->sq + i * 4096;
    }
    cmd.create_qp.pd = cpu_to_le32(e->pd);
    cmd.create_qp.send_cq = cpu_to_le32(e->cq.cqn);
    cmd.create_qp.recv_cq = cpu_to_le32(e->cq.cqn);
    cmd.create_qp.qp_type = type;
    cmd.create_qp.sq_log2 = BENCH_SQ_LOG2;
    cmd.create_qp.max_send_wr = cpu_to_le32(1u << BENCH_SQ_LOG2);
    cmd.create_qp.sq_pages_addr = cpu_to_le64(qrdma_t_page_list(&e->t, pages,
                                                               sq_pages));
    cmd.create_qp.sq_npages = cpu_to_le32(sq_pages);
    for (i = 0; i < 8; i++) {
        pages[i] = qp->rq + i * 4096;
    }
    cmd.create_qp.rq_log2 = BENCH_SQ_LOG2;
    cmd.create_qp.max_recv_wr = cpu_to_le32(1u << BENCH_SQ_LOG2);
    cmd.create_qp.rq_pages_addr = cpu_to_le64(qrdma_t_page_list(&e->t, pages,
                                                               8));
    cmd.create_qp.rq_npages = cpu_to_le32(8);
    g_assert_cmpuint(qrdma_t_exec(&e->t, &cmd, &cmpl), ==, 0);
    qp->qpn = le32_to_cpu(cmpl.handle);
}

static uint32_t bench_mr(QrdmaDpEnv *e, uint64_t buf)
{
    g_autofree uint64_t *pages = g_new(uint64_t, BENCH_BUF / 4096);
    struct qrdma_cmd cmd = { .hdr.opcode = QRDMA_CMD_REG_MR };
    struct qrdma_cmpl cmpl;
    uint32_t i;

    for (i = 0; i < BENCH_BUF / 4096; i++) {
        pages[i] = buf + i * 4096;
    }
    cmd.reg_mr.pd = cpu_to_le32(e->pd);
    cmd.reg_mr.access = cpu_to_le32(QRDMA_ACCESS_LOCAL_WRITE |
                                    QRDMA_ACCESS_REMOTE_WRITE |
                                    QRDMA_ACCESS_REMOTE_READ);
    cmd.reg_mr.iova = cpu_to_le64(buf);
    cmd.reg_mr.length = cpu_to_le64(BENCH_BUF);
    cmd.reg_mr.pages_addr = cpu_to_le64(qrdma_t_page_list(&e->t, pages,
                                                          BENCH_BUF / 4096));
    cmd.reg_mr.npages = cpu_to_le32(BENCH_BUF / 4096);
    cmd.reg_mr.page_shift = 12;
    g_assert_cmpuint(qrdma_t_exec(&e->t, &cmd, &cmpl), ==, 0);
    return le32_to_cpu(cmpl.handle);
}

/*
 * Fill the whole send ring once with the same WQE (only the last of each
 * batch signaled); a batch is then one doorbell and one CQE to wait for,
 * so the qtest protocol adds little to what is measured.
 */
static void bench_fill(QrdmaDpEnv *e, QrdmaDpQp *qp, struct qrdma_sq_wqe *w,
                       uint32_t batch)
{
    uint32_t n = 1u << BENCH_SQ_LOG2, i;

    for (i = 0; i < n; i++) {
        w->flags = i % batch == batch - 1 ? QRDMA_WQE_F_SIGNALED : 0;
        w->wr_id = i;
        qtest_memwrite(e->t.qts, qp->sq + i * QRDMA_SQ_WQE_SIZE, w,
                       sizeof(*w));
    }
}

/*
 * Post a batch (one doorbell) and busy-poll until its signaled send
 * completes; receive CQEs on the way are consumed.  A sleep would be
 * coarser than a small batch.
 */
static void bench_batch(QrdmaDpEnv *e, QrdmaDpQp *qp, uint32_t batch)
{
    QrdmaDpCq *cq = &e->cq;
    struct qrdma_cqe cqe;

    qp->sq_pi += batch;
    qrdma_dp_ring_db(e, QRDMA_DB_SQ, qp->qpn, qp->sq_pi);
    do {
        uint64_t addr = cq->ring + (cq->ci & ((1u << cq->log2) - 1)) * 32;
        uint8_t phase = (cq->ci >> cq->log2) & 1 ? 0 : QRDMA_CQE_F_PHASE;

        do {
            qtest_memread(e->t.qts, addr, &cqe, sizeof(cqe));
        } while ((cqe.flags & QRDMA_CQE_F_PHASE) != phase);
        cq->ci++;
        qtest_writel(e->t.qts, cq->ci_addr, cq->ci);
        g_assert_cmpuint(cqe.status, ==, QRDMA_WC_SUCCESS);
    } while (cqe.is_recv);
    g_assert_cmpuint(cqe.wr_id % batch, ==, batch - 1);
}

static double bench_memcpy(size_t size, uint64_t total)
{
    g_autofree uint8_t *src = g_malloc(size), *dst = g_malloc(size);
    gint64 t0;
    uint64_t done;

    memset(src, 1, size);
    memset(dst, 2, size);
    t0 = g_get_monotonic_time();
    for (done = 0; done < total; done += size) {
        memcpy(dst, src, size);
        /* keep the compiler from dropping the copies */
        asm volatile("" : : "r"(dst) : "memory");
    }
    return (double)total / (g_get_monotonic_time() - t0) / 1e3;
}

static void test_bench_write(void *obj, void *data, QGuestAllocator *alloc)
{
    static const uint32_t sizes[] = { 4096, 65536, 1048576 };
    uint64_t src, dst;
    uint32_t key;
    QrdmaDpQp a, b;
    QrdmaDpEnv e;
    size_t i;

    qrdma_dp_env_init(&e, obj, alloc);
    /* Connected both ways: the ACKs of b's responder go back to a. */
    bench_qp(&e, &a, QRDMA_QPT_RC);
    bench_qp(&e, &b, QRDMA_QPT_RC);
    qrdma_dp_to_rtr(&e, &a, b.qpn);
    qrdma_dp_to_rtr(&e, &b, a.qpn);
    qrdma_dp_to_rts(&e, &a, 0);
    qrdma_dp_to_rts(&e, &b, 0);
    src = guest_alloc(alloc, BENCH_BUF);
    dst = guest_alloc(alloc, BENCH_BUF);
    key = bench_mr(&e, src);

    if (bench_on()) {
        printf("# %-10s %12s %12s %8s\n", "size", "qrdma MB/s",
               "memcpy MB/s", "ratio");
    }
    for (i = 0; i < ARRAY_SIZE(sizes); i++) {
        uint64_t per_batch = (uint64_t)sizes[i] << BENCH_SQ_LOG2;
        uint64_t total = bench_on() ? 1024ull * 1024 * 1024 : per_batch;
        uint32_t keyd = bench_mr(&e, dst);
        struct qrdma_sq_wqe w = qrdma_dp_wqe_sge(0, QRDMA_WR_RDMA_WRITE, src,
                                                 sizes[i], key);
        uint64_t done;
        gint64 t0;
        double dev, mem;

        w.rdma.remote_addr = cpu_to_le64(dst);
        w.rdma.rkey = cpu_to_le32(keyd);
        bench_fill(&e, &a, &w, 1u << BENCH_SQ_LOG2);
        bench_batch(&e, &a, 1u << BENCH_SQ_LOG2);
        t0 = g_get_monotonic_time();
        for (done = 0; done < total; done += per_batch) {
            bench_batch(&e, &a, 1u << BENCH_SQ_LOG2);
        }
        dev = (double)done / (g_get_monotonic_time() - t0);
        mem = bench_memcpy(sizes[i], done) * 1e3;
        if (bench_on()) {
            printf("# %-10u %12.0f %12.0f %8.2f\n", sizes[i], dev, mem,
                   dev / mem);
        }
    }
}

/* Small WQEs, for instruction counts: scripts/bench runs it in callgrind. */
static void test_bench_small(void *obj, void *data, QGuestAllocator *alloc)
{
    const char *op = g_getenv("QRDMA_BENCH_OP");
    bool send = op && !strcmp(op, "send");
    uint32_t batches = bench_on() ? 16 : 2, i, j;
    struct qrdma_sq_wqe w;
    QrdmaDpQp a, b;
    QrdmaDpEnv e;

    qrdma_dp_env_init(&e, obj, alloc);
    bench_qp(&e, &a, QRDMA_QPT_RC);
    bench_qp(&e, &b, QRDMA_QPT_RC);
    qrdma_dp_to_rtr(&e, &a, b.qpn);
    qrdma_dp_to_rtr(&e, &b, a.qpn);
    qrdma_dp_to_rts(&e, &a, 0);
    qrdma_dp_to_rts(&e, &b, 0);

    w = qrdma_dp_wqe_sge(0, send ? QRDMA_WR_SEND : QRDMA_WR_RDMA_WRITE, e.data,
                         64, e.lkey);
    w.rdma.remote_addr = cpu_to_le64(e.data + 4096);
    w.rdma.rkey = cpu_to_le32(e.lkey);
    /* Batches of 64: their CQEs fit the test CQ of 128. */
    bench_fill(&e, &a, &w, 64);
    if (send) {
        struct qrdma_rq_wqe r = {
            .num_sge = cpu_to_le32(1),
            .sge[0].addr = cpu_to_le64(e.data + 8192),
            .sge[0].length = cpu_to_le32(64),
            .sge[0].lkey = cpu_to_le32(e.lkey),
        };

        for (j = 0; j < (1u << BENCH_SQ_LOG2); j++) {
            r.wr_id = j;
            qtest_memwrite(e.t.qts, b.rq + j * QRDMA_RQ_WQE_SIZE, &r,
                           sizeof(r));
        }
    }
    for (i = 0; i < batches * 4; i++) {
        if (send) {
            b.rq_pi += 64;
            qrdma_dp_ring_db(&e, QRDMA_DB_RQ, b.qpn, b.rq_pi);
        }
        bench_batch(&e, &a, 64);
    }
    if (bench_on()) {
        printf("# wqes %u\n", batches << BENCH_SQ_LOG2);
    }
}

static void qrdma_dp_register_tests(void)
{
    QOSGraphTestOptions wire_opts = {
        .before = qrdma_dp_wire_setup,
        .edge.extra_device_opts = "netdev=w0,mac=" QRDMA_DP_WIRE_MAC0,
    };
    QOSGraphTestOptions relay_opts = {
        .before = qrdma_dp_relay_setup,
        .edge.extra_device_opts = "netdev=w0,mac=" QRDMA_DP_WIRE_MAC0,
    };
    QOSGraphTestOptions pcap_opts = {
        .before = pcap_setup,
        .edge.extra_device_opts = "netdev=w0,mac=" QRDMA_DP_WIRE_MAC0,
    };

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
    qos_add_test("dp/protection-s31-s32", QRDMA_NODE_DP, test_protection, NULL);
    qos_add_test("dp/hostile-wqe-s31", QRDMA_NODE_DP, test_hostile_wqe, NULL);
    qos_add_test("dp/hostile-wqe-more", QRDMA_NODE_DP, test_hostile_more, NULL);
    qos_add_test("dp/s30-s35-flush", QRDMA_NODE_DP, test_s30_s35_flush, NULL);
    qos_add_test("dp/s36-s37-reset", QRDMA_NODE_DP, test_s36_s37_reset, NULL);
    qos_add_test("dp/s11-s12-s16-destroy", QRDMA_NODE_DP,
                 test_s11_s12_s16_destroy, NULL);
    qos_add_test("dp/s33-s34-srq", QRDMA_NODE_DP, test_s33_s34_srq, NULL);
    qos_add_test("dp/srq-resize", QRDMA_NODE_DP, test_srq_resize, NULL);
    qos_add_test("dp/rnr", QRDMA_NODE_DP, test_rnr, NULL);
    qos_add_test("dp/events", QRDMA_NODE_DP, test_events, NULL);
    qos_add_test("dp/fast-reg", QRDMA_NODE_DP, test_fast_reg, NULL);
    qos_add_test("dp/mw-type2", QRDMA_NODE_DP, test_mw_type2, NULL);
    qos_add_test("dp/mw-type1", QRDMA_NODE_DP, test_mw_type1, NULL);
    qos_add_test("dp/mw-more", QRDMA_NODE_DP, test_mw_more, NULL);
    qos_add_test("dp/two-devices", QRDMA_NODE_DP, test_two_devices,
                 &(QOSGraphTestOptions) {
        .edge.before_cmd_line = "-device qrdma,addr=05.0,id=qrdma1",
    });
    add_peer_reset_tests();
    qos_add_test("dp/dma-rechecked", QRDMA_NODE_DP, test_dma_rechecked,
                 &(QOSGraphTestOptions) {
        .edge.before_cmd_line = "-device qrdma,addr=05.0,id=qrdma1 "
                                "-object memory-backend-ram,id=shm,size=1M "
                                "-device ivshmem-plain,memdev=shm,addr=06.0",
    });
    qos_add_test("dp/mr-pages-total", QRDMA_NODE_DP, test_mr_pages_total,
                 &(QOSGraphTestOptions) {
        .edge.extra_device_opts = "max-mr-pages-total=24",
    });
    qos_add_test("dp/dma-mr-page-shift", QRDMA_NODE_DP, test_dma_mr_page_shift,
                 NULL);
    qos_add_test("dp/fatal-stays-err", QRDMA_NODE_DP,
                 test_fatal_stays_err, NULL);
    qos_add_test("dp/doorbell-byte-budget", QRDMA_NODE_DP,
                 test_doorbell_byte_budget, NULL);
    qos_add_test("dp/write-overlap", QRDMA_NODE_DP, test_write_overlap, NULL);
    qos_add_test("dp/rc-retry-late-rtr", QRDMA_NODE_DP, test_rc_retry_late_rtr,
                 NULL);
    qos_add_test("dp/rc-retry-budget", QRDMA_NODE_DP,
                 test_rc_retry_budget, NULL);
    qos_add_test("dp/packets-mtu", QRDMA_NODE_DP, test_packets_mtu, NULL);
    qos_add_test("dp/psn", QRDMA_NODE_DP, test_psn, NULL);
    qos_add_test("dp/ack-coalescing", QRDMA_NODE_DP, test_ack_coalescing, NULL);
    qos_add_test("dp/fabric-link", QRDMA_NODE_DP, test_fabric_link,
                 &(QOSGraphTestOptions) {
        .edge.before_cmd_line = "-device qrdma-fabric,id=f1 "
                                "-device qrdma,addr=05.0,id=qrdma1,fabric=f1 "
                                "-device qrdma,addr=06.0,id=qrdma2,fabric=f1",
    });
    qos_add_test("dp/wire-rc", QRDMA_NODE_DP, test_wire_rc, &wire_opts);
    qos_add_test("dp/wire-bad-frames", QRDMA_NODE_DP, test_wire_bad_frames,
                 &wire_opts);
    qos_add_test("dp/wire-responder-resources", QRDMA_NODE_DP,
                 test_wire_responder_resources, &wire_opts);
    qos_add_test("dp/wire-rd-atomic-limit", QRDMA_NODE_DP,
                 test_wire_rd_atomic_limit, &relay_opts);
    qos_add_test("fuzz/wire-frames", QRDMA_NODE_DP, test_fuzz_wire_frames,
                 &relay_opts);
    qos_add_test("dp/wire-read-gap", QRDMA_NODE_DP, test_wire_read_gap,
                 &relay_opts);
    qos_add_test("dp/wire-read-retry", QRDMA_NODE_DP, test_wire_read_retry,
                 &relay_opts);
    qos_add_test("dp/wire-ud-repeat", QRDMA_NODE_DP, test_wire_ud_repeat,
                 &relay_opts);
    qos_add_test("dp/wire-rnr-repeat", QRDMA_NODE_DP, test_wire_rnr_repeat,
                 &relay_opts);
    qos_add_test("dp/wire-farewell-ack", QRDMA_NODE_DP, test_wire_farewell_ack,
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
    qos_add_test("dp/wire-msn-pmtu", QRDMA_NODE_DP, test_wire_msn_pmtu,
                 &relay_opts);
    qos_add_test("dp/wire-flush-atomic-write", QRDMA_NODE_DP,
                 test_wire_flush_atomic_write, &relay_opts);
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
    qos_add_test("dp/unguessable-handles", QRDMA_NODE_DP,
                 test_unguessable_handles, NULL);
    qos_add_test("dp/wire-pcap", QRDMA_NODE_DP, test_wire_pcap, &pcap_opts);
    qos_add_test("dp/mr-readonly-pages", QRDMA_NODE_DP, test_mr_readonly_pages,
                 NULL);
    qos_add_test("dp/device-fatal", QRDMA_NODE_DP, test_device_fatal, NULL);
    qos_add_test("fuzz/wqes", QRDMA_NODE_DP, test_fuzz_wqes, NULL);
    qos_add_test("bench/write-throughput", QRDMA_NODE_DP,
                 test_bench_write, NULL);
    qos_add_test("bench/small-wqe", QRDMA_NODE_DP, test_bench_small, NULL);
}

libqos_init(qrdma_dp_register_tests);
