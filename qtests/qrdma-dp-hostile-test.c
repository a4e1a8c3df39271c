/*
 * QTest testcase for the qrdma data path: hostile guest input and DMA
 * robustness
 *
 * Copyright (c) 2026 The qrdma developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * WQEs, keys and doorbells a guest gets wrong on purpose, memory that
 * stops being RAM or never could be written, bounds on what a guest may
 * make QEMU allocate or copy in a doorbell write, handles a peer cannot
 * guess, and the fatal states that must stay so.
 */

#include "qemu/osdep.h"
#include "qemu/module.h"
#include "qemu/units.h"
#include "hw/pci/pci_regs.h"
#include "libqtest.h"
#include "libqos/libqos-malloc.h"
#include "qrdma-dp.h"

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
    /* UC completes a send as it leaves, before the receiver takes it. */
    qrdma_dp_expect_cqe(&e, &e.cq, 5, d.qpn, QRDMA_WC_SEND, QRDMA_WC_SUCCESS);
    qrdma_dp_expect_cqe(&e, &e.cq, 0xc1, c.qpn, QRDMA_WC_RECV,
                        QRDMA_WC_SUCCESS);

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
    /* The send completes as it leaves; the receive side fails after. */
    qrdma_dp_expect_cqe(&e, &e.cq, 3, u.qpn, QRDMA_WC_SEND, QRDMA_WC_SUCCESS);
    qrdma_dp_expect_cqe(&e, &e.cq, 0xe0, u.qpn, QRDMA_WC_RECV,
                        QRDMA_WC_LOC_PROT_ERR);
    w.wr_id = 4;
    qrdma_dp_post_send(&e, &u, &w);
    qrdma_dp_expect_cqe(&e, &e.cq, 4, u.qpn, 0, QRDMA_WC_WR_FLUSH_ERR);
    qrdma_dp_expect_no_cqe(&e, &e.cq);
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

static void qrdma_dp_hostile_register_tests(void)
{
    qos_add_test("dp/protection-s31-s32", QRDMA_NODE_DP, test_protection, NULL);
    qos_add_test("dp/hostile-wqe-s31", QRDMA_NODE_DP, test_hostile_wqe, NULL);
    qos_add_test("dp/hostile-wqe-more", QRDMA_NODE_DP, test_hostile_more, NULL);
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
    qos_add_test("dp/unguessable-handles", QRDMA_NODE_DP,
                 test_unguessable_handles, NULL);
    qos_add_test("dp/mr-readonly-pages", QRDMA_NODE_DP, test_mr_readonly_pages,
                 NULL);
    qos_add_test("dp/device-fatal", QRDMA_NODE_DP, test_device_fatal, NULL);
}

libqos_init(qrdma_dp_hostile_register_tests);
