/*
 * QTest testcase for the qrdma data path: fast registration and memory
 * windows
 *
 * Copyright (c) 2026 The qrdma developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/module.h"
#include "libqtest.h"
#include "qrdma-dp.h"

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

static void qrdma_dp_mw_register_tests(void)
{
    qos_add_test("dp/fast-reg", QRDMA_NODE_DP, test_fast_reg, NULL);
    qos_add_test("dp/mw-type2", QRDMA_NODE_DP, test_mw_type2, NULL);
    qos_add_test("dp/mw-type1", QRDMA_NODE_DP, test_mw_type1, NULL);
    qos_add_test("dp/mw-more", QRDMA_NODE_DP, test_mw_more, NULL);
}

libqos_init(qrdma_dp_mw_register_tests);
