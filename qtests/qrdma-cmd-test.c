/*
 * QTest testcase for the qrdma command queue and resources
 *
 * Copyright (c) 2026 The qrdma developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * Besides the commands themselves, these tests hold one regression test
 * per class of bug that made QEMU drop its last RDMA device: commands
 * before initialisation, bad ring sizes, long page lists, stale handles,
 * DMA outside guest RAM, ring wrap and reset with work in flight.
 */

#include "qemu/osdep.h"
#include <glib/gstdio.h>
#include "qemu/module.h"
#include "libqtest.h"
#include "libqos/libqos-malloc.h"
#include "qobject/qdict.h"
#include "qrdma-qos.h"

/* Guest-physical memory that is not RAM on the pc and q35 machines. */
#define NOT_RAM 0xfffffffff000ull

static void test_before_enable(void *obj, void *data, QGuestAllocator *alloc)
{
    QQrdma *q = obj;
    QrdmaT t = { .q = q, .qts = q->dev.bus->qts };
    uint64_t ring = guest_alloc(alloc, 4096);
    uint64_t errors;

    qpci_device_enable(&q->dev);
    q->bar = qpci_iomap(&q->dev, QRDMA_REG_BAR, NULL);

    /* CVE-2022-1050 class: a doorbell before the queue exists. */
    qrdma_t_writel(&t, QRDMA_REG_CMDQ_PI, 1);
    g_assert_cmpuint(qrdma_t_readl(&t, QRDMA_REG_CMDQ_CI), ==, 0);
    g_assert_cmpuint(qrdma_t_readl(&t, QRDMA_REG_CMDQ_PI), ==, 0);

    /* Configured but not enabled: still nothing runs. */
    qrdma_t_writeq(&t, QRDMA_REG_CMDQ_BASE, ring);
    qrdma_t_writel(&t, QRDMA_REG_CMDQ_LOG2, 2);
    qrdma_t_writeq(&t, QRDMA_REG_CMPQ_BASE, ring + 2048);
    qrdma_t_writel(&t, QRDMA_REG_CMDQ_PI, 1);
    g_assert_cmpuint(qrdma_t_readl(&t, QRDMA_REG_CMDQ_CI), ==, 0);
    g_assert_cmpuint(qtest_readq(t.qts, ring + 2048), ==, 0);

    errors = qrdma_t_qom_get(&t, "guest-errors");
    g_assert_cmpuint(errors, ==, 2);
    g_assert_cmpuint(qrdma_t_qom_get(&t, "cmds"), ==, 0);
}

static void enable_expect(QrdmaT *t, uint64_t base, uint32_t log2,
                          uint64_t cmpq, uint32_t config_err)
{
    qrdma_t_writel(t, QRDMA_REG_DEV_CTRL, 0);
    qrdma_t_writeq(t, QRDMA_REG_CMDQ_BASE, base);
    qrdma_t_writel(t, QRDMA_REG_CMDQ_LOG2, log2);
    qrdma_t_writeq(t, QRDMA_REG_CMPQ_BASE, cmpq);
    qrdma_t_writel(t, QRDMA_REG_DEV_CTRL, QRDMA_DEV_CTRL_ENABLE);
    g_assert_cmpuint(qrdma_t_readl(t, QRDMA_REG_CONFIG_ERR), ==, config_err);
    g_assert_cmphex(qrdma_t_readl(t, QRDMA_REG_DEV_STATUS), ==,
                    config_err ? 0 : QRDMA_DEV_STATUS_READY);
    g_assert_cmphex(qrdma_t_readl(t, QRDMA_REG_DEV_CTRL), ==,
                    config_err ? 0 : QRDMA_DEV_CTRL_ENABLE);
}

/* CVE-2023-1544 class: ring sizes zero, too large, and bases misaligned. */
static void test_bad_ring_config(void *obj, void *data,
                                 QGuestAllocator *alloc)
{
    QQrdma *q = obj;
    QrdmaT t = { .q = q, .qts = q->dev.bus->qts };
    uint64_t ring = guest_alloc(alloc, 256 * 1024);

    qpci_device_enable(&q->dev);
    q->bar = qpci_iomap(&q->dev, QRDMA_REG_BAR, NULL);

    enable_expect(&t, 0, 4, ring, QRDMA_CONFIG_ERR_CMDQ_BASE);
    enable_expect(&t, ring + 64, 4, ring, QRDMA_CONFIG_ERR_CMDQ_BASE);
    enable_expect(&t, ring, 0, ring, QRDMA_CONFIG_ERR_CMDQ_LOG2);
    enable_expect(&t, ring, QRDMA_CMDQ_LOG2_MAX + 1, ring,
                  QRDMA_CONFIG_ERR_CMDQ_LOG2);
    enable_expect(&t, ring, 0xffffffff, ring, QRDMA_CONFIG_ERR_CMDQ_LOG2);
    enable_expect(&t, ring, 4, 0, QRDMA_CONFIG_ERR_CMPQ_BASE);
    enable_expect(&t, ring, 4, ring + 8, QRDMA_CONFIG_ERR_CMPQ_BASE);
    /* rings that would run past the end of the address space */
    enable_expect(&t, 0xffffffffffffff80ull, 4, ring,
                  QRDMA_CONFIG_ERR_CMDQ_BASE);
    enable_expect(&t, ring, 4, 0xffffffffffffffe0ull,
                  QRDMA_CONFIG_ERR_CMPQ_BASE);
    enable_expect(&t, ring, QRDMA_CMDQ_LOG2_MAX, ring + 128 * 1024,
                  QRDMA_CONFIG_ERR_NONE);

    /* While enabled the queue registers are fixed. */
    qrdma_t_writel(&t, QRDMA_REG_CMDQ_LOG2, 1);
    qrdma_t_writeq(&t, QRDMA_REG_CMDQ_BASE, 0);
    g_assert_cmpuint(qrdma_t_readl(&t, QRDMA_REG_CMDQ_LOG2), ==,
                     QRDMA_CMDQ_LOG2_MAX);
    g_assert_cmphex(qpci_io_readq(&q->dev, q->bar, QRDMA_REG_CMDQ_BASE), ==,
                    ring);
}

static void test_pi_beyond_ring(void *obj, void *data, QGuestAllocator *alloc)
{
    QrdmaT t;
    struct qrdma_cmd cmd = { .hdr.opcode = QRDMA_CMD_ALLOC_PD };
    uint64_t errors;

    qrdma_t_init(&t, obj, alloc, 2);
    errors = qrdma_t_qom_get(&t, "guest-errors");

    /* Five entries ahead of a ring of four: refused, nothing runs. */
    qrdma_t_writel(&t, QRDMA_REG_CMDQ_PI, 5);
    qrdma_t_writel(&t, QRDMA_REG_CMDQ_PI, 0x80000000);
    g_assert_cmpuint(qrdma_t_readl(&t, QRDMA_REG_CMDQ_PI), ==, 0);
    g_assert_cmpuint(qrdma_t_readl(&t, QRDMA_REG_CMDQ_CI), ==, 0);
    g_assert_cmpuint(qrdma_t_qom_get(&t, "guest-errors"), ==, errors + 2);

    /* and the queue still works */
    g_assert_cmpuint(qrdma_t_exec(&t, &cmd, NULL), ==, QRDMA_STATUS_OK);
}

/* The smallest ring, wrapped many times: phases and slots stay right. */
static void test_ring_wrap(void *obj, void *data, QGuestAllocator *alloc)
{
    QrdmaT t;
    struct qrdma_cmd cmds[2];
    struct qrdma_cmpl cmpl[2];
    uint32_t handles[20];
    int i, j;

    qrdma_t_init(&t, obj, alloc, QRDMA_CMDQ_LOG2_MIN);
    for (i = 0; i < 10; i++) {
        for (j = 0; j < 2; j++) {
            memset(&cmds[j], 0, sizeof(cmds[j]));
            cmds[j].hdr.opcode = QRDMA_CMD_ALLOC_PD;
        }
        qrdma_t_exec_batch(&t, cmds, 2, cmpl);
        for (j = 0; j < 2; j++) {
            g_assert_cmpuint(cmpl[j].status, ==, QRDMA_STATUS_OK);
            handles[i * 2 + j] = le32_to_cpu(cmpl[j].handle);
        }
    }
    g_assert_cmpuint(qrdma_t_readl(&t, QRDMA_REG_CMDQ_CI), ==, 20);
    for (i = 0; i < 20; i++) {
        for (j = 0; j < i; j++) {
            g_assert_cmphex(handles[i], !=, handles[j]);
        }
    }
    g_assert_cmpuint(qrdma_t_qom_get(&t, "resources"), ==, 20);
}

static void test_bad_opcode(void *obj, void *data, QGuestAllocator *alloc)
{
    QrdmaT t;
    struct qrdma_cmd cmd = { .hdr.opcode = 0xee };
    uint64_t errors;

    qrdma_t_init(&t, obj, alloc, 4);
    errors = qrdma_t_qom_get(&t, "guest-errors");
    g_assert_cmpuint(qrdma_t_exec(&t, &cmd, NULL), ==,
                     QRDMA_STATUS_BAD_OPCODE);
    memset(&cmd, 0, sizeof(cmd));
    cmd.hdr.opcode = 0;
    g_assert_cmpuint(qrdma_t_exec(&t, &cmd, NULL), ==,
                     QRDMA_STATUS_BAD_OPCODE);
    memset(&cmd, 0, sizeof(cmd));
    cmd.hdr.opcode = QRDMA_CMD_ALLOC_PD;
    cmd.hdr.flags = 1;
    g_assert_cmpuint(qrdma_t_exec(&t, &cmd, NULL), ==,
                     QRDMA_STATUS_BAD_PARAM);
    g_assert_cmpuint(qrdma_t_qom_get(&t, "guest-errors"), ==, errors + 3);
    g_assert_cmpuint(qrdma_t_qom_get(&t, "cmd-errors"), ==, 3);
    g_assert_cmpuint(qrdma_t_qom_get(&t, "resources"), ==, 0);
}

static uint8_t query(QrdmaT *t, uint8_t opcode, uint32_t index, void *resp,
                     size_t len)
{
    uint64_t buf = guest_alloc(t->alloc, MAX(len, 1));
    struct qrdma_cmd cmd = {
        .hdr.opcode = opcode,
        .query.resp_addr = cpu_to_le64(buf),
        .query.resp_len = cpu_to_le32(len),
        .query.index = cpu_to_le32(index),
    };
    uint8_t st = qrdma_t_exec(t, &cmd, NULL);

    if (len) {
        qtest_memread(t->qts, buf, resp, len);
    }
    return st;
}

static void test_query_device(void *obj, void *data, QGuestAllocator *alloc)
{
    struct qrdma_device_attr a;
    struct qrdma_port_attr p;
    QrdmaT t;

    qrdma_t_init(&t, obj, alloc, 4);
    g_assert_cmpuint(query(&t, QRDMA_CMD_QUERY_DEVICE, 0, &a, sizeof(a)), ==,
                     QRDMA_STATUS_OK);
    g_assert_cmphex(le32_to_cpu(a.vendor_id), ==, QRDMA_PCI_VENDOR_ID);
    g_assert_cmphex(le32_to_cpu(a.vendor_part_id), ==, QRDMA_PCI_DEVICE_ID);
    /* the values of the properties this test sets */
    g_assert_cmpuint(le32_to_cpu(a.max_qp), ==, 8);
    g_assert_cmpuint(le32_to_cpu(a.max_qp_wr), ==, 256);
    g_assert_cmpuint(le32_to_cpu(a.max_pd), ==, 4);
    g_assert_cmpuint(le32_to_cpu(a.max_send_sge), ==, QRDMA_MAX_SEND_SGE);
    g_assert_cmpuint(le32_to_cpu(a.max_recv_sge), ==, QRDMA_MAX_RECV_SGE);
    g_assert_cmpuint(le32_to_cpu(a.max_inline_data), ==, QRDMA_MAX_INLINE);
    g_assert_cmpuint(le32_to_cpu(a.num_comp_vectors), ==, 3);
    g_assert_cmpuint(le32_to_cpu(a.max_mw), ==, 2);
    g_assert_true(le32_to_cpu(a.device_caps) & QRDMA_DEV_CAP_MW);
    /* EUI-64 of mac=52:54:00:12:34:56 */
    g_assert_cmphex(be64_to_cpu(a.node_guid), ==, 0x505400fffe123456ull);

    g_assert_cmpuint(query(&t, QRDMA_CMD_QUERY_PORT, 1, &p, sizeof(p)), ==,
                     QRDMA_STATUS_OK);
    g_assert_cmpuint(p.state, ==, QRDMA_PORT_ACTIVE);
    g_assert_cmpuint(le32_to_cpu(p.gid_tbl_len), ==, 16);
    g_assert_cmpuint(le16_to_cpu(p.pkey_tbl_len), ==, 1);
    g_assert_cmpmem(p.mac, 6, "\x52\x54\x00\x12\x34\x56", 6);

    /* no port 2; an answer buffer too small, or not in RAM */
    g_assert_cmpuint(query(&t, QRDMA_CMD_QUERY_PORT, 2, &p, sizeof(p)), ==,
                     QRDMA_STATUS_BAD_PARAM);
    g_assert_cmpuint(query(&t, QRDMA_CMD_QUERY_DEVICE, 0, &a, 8), ==,
                     QRDMA_STATUS_BAD_PARAM);
    {
        struct qrdma_cmd cmd = {
            .hdr.opcode = QRDMA_CMD_QUERY_DEVICE,
            .query.resp_addr = cpu_to_le64(NOT_RAM),
            .query.resp_len = cpu_to_le32(sizeof(a)),
        };
        g_assert_cmpuint(qrdma_t_exec(&t, &cmd, NULL), ==,
                         QRDMA_STATUS_BAD_ADDR);
    }
}

static void test_gid_table(void *obj, void *data, QGuestAllocator *alloc)
{
    struct qrdma_gid_entry e;
    uint32_t uctx;
    QrdmaT t;
    struct qrdma_cmd cmd = {
        .hdr.opcode = QRDMA_CMD_SET_GID,
        .gid.type = QRDMA_GID_TYPE_ROCE_V2,
        .gid.index = cpu_to_le32(16),
    };

    qrdma_t_init(&t, obj, alloc, 4);
    qrdma_t_set_gid(&t, 3);
    g_assert_cmpuint(query(&t, QRDMA_CMD_QUERY_GID, 3, &e, sizeof(e)), ==,
                     QRDMA_STATUS_OK);
    g_assert_cmpuint(e.type, ==, QRDMA_GID_TYPE_ROCE_V2);
    g_assert_cmpuint(e.gid[15], ==, 15);

    g_assert_cmpuint(qrdma_t_exec(&t, &cmd, NULL), ==,
                     QRDMA_STATUS_BAD_PARAM);
    cmd.gid.index = 0;
    cmd.gid.type = 1;
    g_assert_cmpuint(qrdma_t_exec(&t, &cmd, NULL), ==,
                     QRDMA_STATUS_BAD_PARAM);
    /* only the kernel owns the GID table */
    uctx = qrdma_t_create_uctx(&t);
    cmd.gid.type = QRDMA_GID_TYPE_ROCE_V2;
    cmd.hdr.uctx = cpu_to_le32(uctx);
    g_assert_cmpuint(qrdma_t_exec(&t, &cmd, NULL), ==,
                     QRDMA_STATUS_NOT_OWNER);

    memset(&cmd, 0, sizeof(cmd));
    cmd.hdr.opcode = QRDMA_CMD_DEL_GID;
    cmd.gid.index = cpu_to_le32(3);
    g_assert_cmpuint(qrdma_t_exec(&t, &cmd, NULL), ==, QRDMA_STATUS_OK);
    g_assert_cmpuint(query(&t, QRDMA_CMD_QUERY_GID, 3, &e, sizeof(e)), ==,
                     QRDMA_STATUS_OK);
    g_assert_cmpuint(e.type, ==, 0);
    g_assert_cmpuint(query(&t, QRDMA_CMD_QUERY_GID, 16, &e, sizeof(e)), ==,
                     QRDMA_STATUS_BAD_PARAM);
}

/* Handles out of range, freed, or freed and their slot reused. */
static void test_stale_handles(void *obj, void *data, QGuestAllocator *alloc)
{
    uint32_t a, b;
    QrdmaT t;

    qrdma_t_init(&t, obj, alloc, 4);
    a = qrdma_t_alloc_pd(&t, 0);
    g_assert_cmpuint(qrdma_t_destroy(&t, QRDMA_CMD_DEALLOC_PD, 0, a), ==,
                     QRDMA_STATUS_OK);
    g_assert_cmpuint(qrdma_t_destroy(&t, QRDMA_CMD_DEALLOC_PD, 0, a), ==,
                     QRDMA_STATUS_BAD_HANDLE);

    /* max-pd=4: the slots come round again, with new handles */
    do {
        b = qrdma_t_alloc_pd(&t, 0);
        g_assert_cmphex(b, !=, a);
        if ((b & 0xffff) != (a & 0xffff)) {
            g_assert_cmpuint(qrdma_t_destroy(&t, QRDMA_CMD_DEALLOC_PD, 0, b),
                             ==, QRDMA_STATUS_OK);
        }
    } while ((b & 0xffff) != (a & 0xffff));
    g_assert_cmpuint(qrdma_t_destroy(&t, QRDMA_CMD_DEALLOC_PD, 0, a), ==,
                     QRDMA_STATUS_BAD_HANDLE);
    g_assert_cmpuint(qrdma_t_destroy(&t, QRDMA_CMD_DEALLOC_PD, 0, b), ==,
                     QRDMA_STATUS_OK);

    g_assert_cmpuint(qrdma_t_destroy(&t, QRDMA_CMD_DEALLOC_PD, 0, 0), ==,
                     QRDMA_STATUS_BAD_HANDLE);
    g_assert_cmpuint(qrdma_t_destroy(&t, QRDMA_CMD_DEALLOC_PD, 0, 0xffff), ==,
                     QRDMA_STATUS_BAD_HANDLE);
    g_assert_cmpuint(qrdma_t_destroy(&t, QRDMA_CMD_DESTROY_CQ, 0, 0xffffffff),
                     ==, QRDMA_STATUS_BAD_HANDLE);
    g_assert_cmpuint(qrdma_t_destroy(&t, QRDMA_CMD_DESTROY_QP, 0, 1), ==,
                     QRDMA_STATUS_BAD_HANDLE);
    g_assert_cmpuint(qrdma_t_destroy(&t, QRDMA_CMD_DEREG_MR, 0, 0x100), ==,
                     QRDMA_STATUS_BAD_HANDLE);
    g_assert_cmpuint(qrdma_t_qom_get(&t, "resources"), ==, 0);
}

static void test_limits(void *obj, void *data, QGuestAllocator *alloc)
{
    uint32_t pd[4];
    QrdmaT t;
    int i;
    struct qrdma_cmd cmd = { .hdr.opcode = QRDMA_CMD_ALLOC_PD };

    qrdma_t_init(&t, obj, alloc, 4);
    for (i = 0; i < 4; i++) {
        pd[i] = qrdma_t_alloc_pd(&t, 0);
    }
    g_assert_cmpuint(qrdma_t_exec(&t, &cmd, NULL), ==,
                     QRDMA_STATUS_NO_RESOURCES);
    g_assert_cmpuint(qrdma_t_destroy(&t, QRDMA_CMD_DEALLOC_PD, 0, pd[2]), ==,
                     QRDMA_STATUS_OK);
    g_assert_cmpuint(qrdma_t_exec(&t, &cmd, NULL), ==, QRDMA_STATUS_OK);
}

static uint8_t reg_mr(QrdmaT *t, uint32_t uctx, uint32_t pd, uint64_t iova,
                      uint64_t length, uint64_t list, uint32_t npages,
                      uint32_t access, uint32_t *lkey)
{
    struct qrdma_cmd cmd = {
        .hdr.opcode = QRDMA_CMD_REG_MR,
        .hdr.uctx = cpu_to_le32(uctx),
        .reg_mr.pd = cpu_to_le32(pd),
        .reg_mr.access = cpu_to_le32(access),
        .reg_mr.iova = cpu_to_le64(iova),
        .reg_mr.length = cpu_to_le64(length),
        .reg_mr.pages_addr = cpu_to_le64(list),
        .reg_mr.npages = cpu_to_le32(npages),
        .reg_mr.page_shift = QRDMA_PAGE_SHIFT,
    };
    struct qrdma_cmpl cmpl;
    uint8_t st = qrdma_t_exec(t, &cmd, &cmpl);

    if (lkey) {
        *lkey = le32_to_cpu(cmpl.handle);
    }
    return st;
}

static void test_mr(void *obj, void *data, QGuestAllocator *alloc)
{
    uint64_t bad[2];
    uint32_t pd, lkey, lkey2;
    QrdmaT t;
    struct qrdma_cmd cmd = {
        .hdr.opcode = QRDMA_CMD_REG_MR,
        .reg_mr.flags = QRDMA_MR_F_DMA,
        .reg_mr.access = cpu_to_le32(QRDMA_ACCESS_LOCAL_WRITE),
    };

    qrdma_t_init(&t, obj, alloc, 4);
    pd = qrdma_t_alloc_pd(&t, 0);

    /* 3 pages: 0x10800 + 0x2000 spans pages 0x10000..0x12fff */
    g_assert_cmpuint(reg_mr(&t, 0, pd, 0x10800, 0x2000, qrdma_t_pages(&t, 3),
                            3, QRDMA_ACCESS_LOCAL_WRITE |
                            QRDMA_ACCESS_REMOTE_WRITE, &lkey), ==,
                     QRDMA_STATUS_OK);
    g_assert_cmphex(lkey, !=, QRDMA_LOCAL_DMA_LKEY);
    /* the page count must match the region */
    g_assert_cmpuint(reg_mr(&t, 0, pd, 0x10800, 0x2000, qrdma_t_pages(&t, 2),
                            2, 0, NULL), ==, QRDMA_STATUS_BAD_PARAM);
    /* CVE-2018-20124 class: a list longer than max-mr-pages=16 */
    g_assert_cmpuint(reg_mr(&t, 0, pd, 0, 17 * 4096, qrdma_t_pages(&t, 1),
                            17, 0, NULL), ==, QRDMA_STATUS_BAD_PARAM);
    g_assert_cmpuint(reg_mr(&t, 0, pd, 0, 0xffffffffull * 4096,
                            qrdma_t_pages(&t, 1), 0xffffffff, 0, NULL), ==,
                     QRDMA_STATUS_BAD_PARAM);
    /* pages, and the list itself, outside guest RAM */
    bad[0] = guest_alloc(alloc, 4096);
    bad[1] = NOT_RAM;
    g_assert_cmpuint(reg_mr(&t, 0, pd, 0, 0x2000,
                            qrdma_t_page_list(&t, bad, 2), 2, 0, NULL), ==,
                     QRDMA_STATUS_BAD_ADDR);
    g_assert_cmpuint(reg_mr(&t, 0, pd, 0, 0x1000, NOT_RAM, 1, 0, NULL), ==,
                     QRDMA_STATUS_BAD_ADDR);
    bad[1] = bad[0] + 8;
    g_assert_cmpuint(reg_mr(&t, 0, pd, 0, 0x2000,
                            qrdma_t_page_list(&t, bad, 2), 2, 0, NULL), ==,
                     QRDMA_STATUS_BAD_ADDR);
    /* remote write without local write; a wrapping region */
    g_assert_cmpuint(reg_mr(&t, 0, pd, 0, 0x1000, qrdma_t_pages(&t, 1), 1,
                            QRDMA_ACCESS_REMOTE_WRITE, NULL), ==,
                     QRDMA_STATUS_BAD_PARAM);
    g_assert_cmpuint(reg_mr(&t, 0, pd, UINT64_MAX - 10, 0x1000,
                            qrdma_t_pages(&t, 1), 1, 0, NULL), ==,
                     QRDMA_STATUS_BAD_PARAM);

    /* DMA MRs are the kernel's */
    cmd.reg_mr.pd = cpu_to_le32(pd);
    g_assert_cmpuint(qrdma_t_exec(&t, &cmd, NULL), ==, QRDMA_STATUS_OK);

    /* deregistered keys stop working; a new key for a reused slot */
    g_assert_cmpuint(qrdma_t_destroy(&t, QRDMA_CMD_DEREG_MR, 0, lkey), ==,
                     QRDMA_STATUS_OK);
    g_assert_cmpuint(qrdma_t_destroy(&t, QRDMA_CMD_DEREG_MR, 0, lkey), ==,
                     QRDMA_STATUS_BAD_HANDLE);
    g_assert_cmpuint(reg_mr(&t, 0, pd, 0, 0x1000, qrdma_t_pages(&t, 1), 1, 0,
                            &lkey2), ==, QRDMA_STATUS_OK);
    g_assert_cmphex(lkey2, !=, lkey);

    /* a PD holding MRs cannot go */
    g_assert_cmpuint(qrdma_t_destroy(&t, QRDMA_CMD_DEALLOC_PD, 0, pd), ==,
                     QRDMA_STATUS_BUSY);
}

/* An MR, CQ or QP of another user context is refused, and left alone. */
static void test_ownership(void *obj, void *data, QGuestAllocator *alloc)
{
    uint32_t u1, u2, pd1, cq1, lkey, qpn;
    QrdmaTQp p = { .type = QRDMA_QPT_RC, .max_send_wr = 1,
                   .max_recv_wr = 1 };
    struct qrdma_cmd cmd = { .hdr.opcode = QRDMA_CMD_DESTROY_UCTX };
    QrdmaT t;

    qrdma_t_init(&t, obj, alloc, 4);
    u1 = qrdma_t_create_uctx(&t);
    u2 = qrdma_t_create_uctx(&t);
    pd1 = qrdma_t_alloc_pd(&t, u1);
    cq1 = qrdma_t_cq(&t, u1);

    g_assert_cmpuint(reg_mr(&t, u2, pd1, 0, 0x1000, qrdma_t_pages(&t, 1), 1,
                            0, NULL), ==, QRDMA_STATUS_NOT_OWNER);
    g_assert_cmpuint(reg_mr(&t, u1, pd1, 0, 0x1000, qrdma_t_pages(&t, 1), 1,
                            0, &lkey), ==, QRDMA_STATUS_OK);
    g_assert_cmpuint(qrdma_t_destroy(&t, QRDMA_CMD_DEREG_MR, u2, lkey), ==,
                     QRDMA_STATUS_NOT_OWNER);
    g_assert_cmpuint(qrdma_t_destroy(&t, QRDMA_CMD_DEREG_MR, 0, lkey), ==,
                     QRDMA_STATUS_NOT_OWNER);
    g_assert_cmpuint(qrdma_t_destroy(&t, QRDMA_CMD_DESTROY_CQ, u2, cq1), ==,
                     QRDMA_STATUS_NOT_OWNER);

    p.uctx = u2;
    p.pd = pd1;
    p.send_cq = p.recv_cq = cq1;
    g_assert_cmpuint(qrdma_t_create_qp(&t, &p, NULL, NULL), ==,
                     QRDMA_STATUS_NOT_OWNER);
    p.uctx = u1;
    g_assert_cmpuint(qrdma_t_create_qp(&t, &p, &qpn, NULL), ==,
                     QRDMA_STATUS_OK);
    g_assert_cmpuint(qrdma_t_destroy(&t, QRDMA_CMD_DESTROY_QP, u2, qpn), ==,
                     QRDMA_STATUS_NOT_OWNER);

    /* a context that owns resources stays; a stale one is refused */
    cmd.destroy.handle = cpu_to_le32(u1);
    g_assert_cmpuint(qrdma_t_exec(&t, &cmd, NULL), ==, QRDMA_STATUS_BUSY);
    cmd.destroy.handle = cpu_to_le32(u2);
    g_assert_cmpuint(qrdma_t_exec(&t, &cmd, NULL), ==, QRDMA_STATUS_OK);
    g_assert_cmpuint(qrdma_t_alloc_pd(&t, 0), !=, 0);
    memset(&cmd, 0, sizeof(cmd));
    cmd.hdr.opcode = QRDMA_CMD_ALLOC_PD;
    cmd.hdr.uctx = cpu_to_le32(u2);
    g_assert_cmpuint(qrdma_t_exec(&t, &cmd, NULL), ==,
                     QRDMA_STATUS_BAD_HANDLE);

    /* all of u1's resources still work for u1 */
    g_assert_cmpuint(qrdma_t_destroy(&t, QRDMA_CMD_DESTROY_QP, u1, qpn), ==,
                     QRDMA_STATUS_OK);
    g_assert_cmpuint(qrdma_t_destroy(&t, QRDMA_CMD_DEREG_MR, u1, lkey), ==,
                     QRDMA_STATUS_OK);
    g_assert_cmpuint(qrdma_t_destroy(&t, QRDMA_CMD_DESTROY_CQ, u1, cq1), ==,
                     QRDMA_STATUS_OK);
    g_assert_cmpuint(qrdma_t_destroy(&t, QRDMA_CMD_DEALLOC_PD, u1, pd1), ==,
                     QRDMA_STATUS_OK);
    cmd.hdr.opcode = QRDMA_CMD_DESTROY_UCTX;
    cmd.hdr.uctx = 0;
    cmd.destroy.handle = cpu_to_le32(u1);
    g_assert_cmpuint(qrdma_t_exec(&t, &cmd, NULL), ==, QRDMA_STATUS_OK);
}

static void test_cq(void *obj, void *data, QGuestAllocator *alloc)
{
    uint32_t cqn;
    QrdmaT t;
    struct qrdma_cmd cmd = {
        .hdr.opcode = QRDMA_CMD_CREATE_CQ,
        .cq.log2_entries = cpu_to_le32(4),
        .cq.npages = cpu_to_le32(1),
    };

    qrdma_t_init(&t, obj, alloc, 4);
    /* max-cqe=1024 */
    g_assert_cmpuint(qrdma_t_create_cq(&t, 0, 10, &cqn), ==, QRDMA_STATUS_OK);
    g_assert_cmpuint(qrdma_t_create_cq(&t, 0, 11, NULL), ==,
                     QRDMA_STATUS_BAD_PARAM);
    cmd.cq.log2_entries = cpu_to_le32(0xffffffff);
    g_assert_cmpuint(qrdma_t_exec(&t, &cmd, NULL), ==,
                     QRDMA_STATUS_BAD_PARAM);
    /* ring of 16 CQEs is one page, not two; vector 4 of 4 does not exist */
    cmd.cq.log2_entries = cpu_to_le32(4);
    cmd.cq.npages = cpu_to_le32(2);
    cmd.cq.pages_addr = cpu_to_le64(qrdma_t_pages(&t, 2));
    g_assert_cmpuint(qrdma_t_exec(&t, &cmd, NULL), ==,
                     QRDMA_STATUS_BAD_PARAM);
    cmd.cq.npages = cpu_to_le32(1);
    cmd.cq.eq = cpu_to_le32(4);
    g_assert_cmpuint(qrdma_t_exec(&t, &cmd, NULL), ==,
                     QRDMA_STATUS_BAD_PARAM);
    cmd.cq.eq = cpu_to_le32(3);
    cmd.cq.pages_addr = cpu_to_le64(NOT_RAM);
    g_assert_cmpuint(qrdma_t_exec(&t, &cmd, NULL), ==,
                     QRDMA_STATUS_BAD_ADDR);

    /* resize */
    memset(&cmd, 0, sizeof(cmd));
    cmd.hdr.opcode = QRDMA_CMD_RESIZE_CQ;
    cmd.cq.cqn = cpu_to_le32(cqn);
    cmd.cq.log2_entries = cpu_to_le32(7);
    cmd.cq.npages = cpu_to_le32(1);
    cmd.cq.pages_addr = cpu_to_le64(qrdma_t_pages(&t, 1));
    g_assert_cmpuint(qrdma_t_exec(&t, &cmd, NULL), ==, QRDMA_STATUS_OK);

    /* S21: an empty CQ is destroyed */
    g_assert_cmpuint(qrdma_t_destroy(&t, QRDMA_CMD_DESTROY_CQ, 0, cqn), ==,
                     QRDMA_STATUS_OK);
    g_assert_cmpuint(qrdma_t_qom_get(&t, "resources"), ==, 0);
}

static void test_srq(void *obj, void *data, QGuestAllocator *alloc)
{
    uint32_t pd, srqn;
    struct qrdma_cmpl cmpl;
    QrdmaT t;
    struct qrdma_cmd cmd = { .hdr.opcode = QRDMA_CMD_MODIFY_SRQ };

    qrdma_t_init(&t, obj, alloc, 4);
    pd = qrdma_t_alloc_pd(&t, 0);
    g_assert_cmpuint(qrdma_t_create_srq(&t, 0, pd, 100, &srqn), ==,
                     QRDMA_STATUS_OK);
    g_assert_cmpuint(qrdma_t_create_srq(&t, 0, pd, 1u << 20, NULL), ==,
                     QRDMA_STATUS_BAD_PARAM);

    /* arm the limit; a limit not below max_wr is refused */
    cmd.srq.srqn = cpu_to_le32(srqn);
    cmd.srq.attr_mask = cpu_to_le32(QRDMA_SRQ_ATTR_LIMIT);
    cmd.srq.srq_limit = cpu_to_le32(10);
    g_assert_cmpuint(qrdma_t_exec(&t, &cmd, NULL), ==, QRDMA_STATUS_OK);
    cmd.srq.srq_limit = cpu_to_le32(128);
    g_assert_cmpuint(qrdma_t_exec(&t, &cmd, NULL), ==,
                     QRDMA_STATUS_BAD_PARAM);
    /* a resize needs a ring: none given is a bad one */
    cmd.srq.attr_mask = cpu_to_le32(QRDMA_SRQ_ATTR_MAX_WR);
    g_assert_cmpuint(qrdma_t_exec(&t, &cmd, NULL), ==,
                     QRDMA_STATUS_BAD_PARAM);

    memset(&cmd, 0, sizeof(cmd));
    cmd.hdr.opcode = QRDMA_CMD_QUERY_SRQ;
    cmd.query.index = cpu_to_le32(srqn);
    g_assert_cmpuint(qrdma_t_exec(&t, &cmd, &cmpl), ==, QRDMA_STATUS_OK);
    g_assert_cmpuint(le32_to_cpu(cmpl.data[0]), ==, 128);
    g_assert_cmpuint(le32_to_cpu(cmpl.data[2]), ==, 10);

    g_assert_cmpuint(qrdma_t_destroy(&t, QRDMA_CMD_DESTROY_SRQ, 0, srqn), ==,
                     QRDMA_STATUS_OK);
}

static void test_ah(void *obj, void *data, QGuestAllocator *alloc)
{
    QrdmaT t;
    struct qrdma_cmpl cmpl;
    struct qrdma_cmd cmd = {
        .hdr.opcode = QRDMA_CMD_CREATE_AH,
        .create_ah.av.sgid_index = 1,
        .create_ah.av.hop_limit = 64,
    };

    qrdma_t_init(&t, obj, alloc, 4);
    cmd.create_ah.pd = cpu_to_le32(qrdma_t_alloc_pd(&t, 0));
    /* the source GID must be set */
    g_assert_cmpuint(qrdma_t_exec(&t, &cmd, NULL), ==,
                     QRDMA_STATUS_BAD_PARAM);
    qrdma_t_set_gid(&t, 1);
    cmd.create_ah.av.flow_label = cpu_to_le32(0x100000);
    g_assert_cmpuint(qrdma_t_exec(&t, &cmd, NULL), ==,
                     QRDMA_STATUS_BAD_PARAM);
    cmd.create_ah.av.flow_label = 0;
    g_assert_cmpuint(qrdma_t_exec(&t, &cmd, &cmpl), ==, QRDMA_STATUS_OK);
    g_assert_cmpuint(qrdma_t_destroy(&t, QRDMA_CMD_DESTROY_AH, 0,
                                     le32_to_cpu(cmpl.handle)), ==,
                     QRDMA_STATUS_OK);
}

static uint8_t alloc_mw(QrdmaT *t, uint32_t uctx, uint32_t pd, uint8_t type,
                        uint32_t *handle, uint32_t *rkey)
{
    struct qrdma_cmd cmd = {
        .hdr.opcode = QRDMA_CMD_ALLOC_MW,
        .hdr.uctx = cpu_to_le32(uctx),
        .alloc_mw.pd = cpu_to_le32(pd),
        .alloc_mw.type = type,
    };
    struct qrdma_cmpl cmpl;
    uint8_t st = qrdma_t_exec(t, &cmd, &cmpl);

    *handle = le32_to_cpu(cmpl.handle);
    if (rkey) {
        *rkey = le32_to_cpu(cmpl.data[0]);
    }
    return st;
}

/*
 * ALLOC_MW and DEALLOC_MW: types 1 and 2 only, max-mw of them, owned and
 * counted like every resource; a window keeps its PD and context alive.
 */
static void test_mw(void *obj, void *data, QGuestAllocator *alloc)
{
    uint32_t uctx, upd, pd, mw1, mw2, mw3, rkey1, rkey2, stale;
    struct qrdma_stats stats;
    QrdmaT t;

    qrdma_t_init(&t, obj, alloc, 4);
    pd = qrdma_t_alloc_pd(&t, 0);
    uctx = qrdma_t_create_uctx(&t);
    upd = qrdma_t_alloc_pd(&t, uctx);

    g_assert_cmpuint(alloc_mw(&t, 0, pd, 0, &mw1, NULL), ==,
                     QRDMA_STATUS_BAD_PARAM);
    g_assert_cmpuint(alloc_mw(&t, 0, pd, 3, &mw1, NULL), ==,
                     QRDMA_STATUS_BAD_PARAM);
    g_assert_cmpuint(alloc_mw(&t, 0, pd + 0x10000, QRDMA_MW_TYPE_1, &mw1,
                              NULL), ==, QRDMA_STATUS_BAD_HANDLE);
    g_assert_cmpuint(alloc_mw(&t, 0, upd, QRDMA_MW_TYPE_1, &mw1, NULL), ==,
                     QRDMA_STATUS_NOT_OWNER);
    g_assert_cmpuint(qrdma_t_qom_get(&t, "resources"), ==, 3);

    g_assert_cmpuint(alloc_mw(&t, 0, pd, QRDMA_MW_TYPE_1, &mw1, &rkey1), ==,
                     QRDMA_STATUS_OK);
    g_assert_cmpuint(alloc_mw(&t, uctx, upd, QRDMA_MW_TYPE_2, &mw2, &rkey2),
                     ==, QRDMA_STATUS_OK);
    /* window keys: bit 31, the slot in 23:8, never an MR's */
    g_assert_cmphex(rkey1 & 0xff000000, ==, QRDMA_KEY_MW);
    g_assert_cmphex(rkey2 & 0xff000000, ==, QRDMA_KEY_MW);
    g_assert_cmphex(rkey1 >> 8, !=, rkey2 >> 8);
    g_assert_cmpuint(qrdma_t_qom_get(&t, "resources"), ==, 5);
    g_assert_cmpuint(query(&t, QRDMA_CMD_QUERY_STATS, 0, &stats,
                           sizeof(stats)), ==, QRDMA_STATUS_OK);
    g_assert_cmpuint(le32_to_cpu(stats.mw), ==, 2);
    g_assert_cmpuint(le32_to_cpu(stats.mr), ==, 0);
    /* max-mw=2 */
    g_assert_cmpuint(alloc_mw(&t, 0, pd, QRDMA_MW_TYPE_2, &mw3, NULL), ==,
                     QRDMA_STATUS_NO_RESOURCES);

    /* the PD and the context are busy while they hold a window */
    g_assert_cmpuint(qrdma_t_destroy(&t, QRDMA_CMD_DEALLOC_PD, 0, pd), ==,
                     QRDMA_STATUS_BUSY);
    g_assert_cmpuint(qrdma_t_destroy(&t, QRDMA_CMD_DEALLOC_PD, uctx, upd), ==,
                     QRDMA_STATUS_BUSY);
    g_assert_cmpuint(qrdma_t_destroy(&t, QRDMA_CMD_DEALLOC_MW, 0, mw2), ==,
                     QRDMA_STATUS_NOT_OWNER);
    g_assert_cmpuint(qrdma_t_destroy(&t, QRDMA_CMD_DEALLOC_MW, 0, rkey1), ==,
                     QRDMA_STATUS_BAD_HANDLE);
    g_assert_cmpuint(qrdma_t_destroy(&t, QRDMA_CMD_DEALLOC_MW, uctx, mw2), ==,
                     QRDMA_STATUS_OK);
    g_assert_cmpuint(qrdma_t_destroy(&t, QRDMA_CMD_DEALLOC_MW, uctx, mw2), ==,
                     QRDMA_STATUS_BAD_HANDLE);
    g_assert_cmpuint(qrdma_t_destroy(&t, QRDMA_CMD_DEALLOC_PD, uctx, upd), ==,
                     QRDMA_STATUS_OK);
    g_assert_cmpuint(qrdma_t_destroy(&t, QRDMA_CMD_DESTROY_UCTX, 0, uctx), ==,
                     QRDMA_STATUS_OK);

    /* a freed slot comes back with a new handle and a new key */
    stale = mw1;
    g_assert_cmpuint(qrdma_t_destroy(&t, QRDMA_CMD_DEALLOC_MW, 0, mw1), ==,
                     QRDMA_STATUS_OK);
    g_assert_cmpuint(alloc_mw(&t, 0, pd, QRDMA_MW_TYPE_2, &mw1, &rkey2), ==,
                     QRDMA_STATUS_OK);
    g_assert_cmpuint(alloc_mw(&t, 0, pd, QRDMA_MW_TYPE_2, &mw3, NULL), ==,
                     QRDMA_STATUS_OK);
    g_assert_cmphex(mw1, !=, stale);
    g_assert_cmphex(mw3, !=, stale);
    g_assert_cmpuint(qrdma_t_destroy(&t, QRDMA_CMD_DEALLOC_MW, 0, stale), ==,
                     QRDMA_STATUS_BAD_HANDLE);

    /* windows count among the resources, and reset frees them */
    g_assert_cmpuint(qrdma_t_qom_get(&t, "resources"), ==, 3);
    qrdma_t_writel(&t, QRDMA_REG_DEV_CTRL, QRDMA_DEV_CTRL_RESET);
    g_assert_cmpuint(qrdma_t_qom_get(&t, "resources"), ==, 0);
    qrdma_t_init(&t, obj, alloc, 4);
    pd = qrdma_t_alloc_pd(&t, 0);
    g_assert_cmpuint(alloc_mw(&t, 0, pd, QRDMA_MW_TYPE_1, &mw2, NULL), ==,
                     QRDMA_STATUS_OK);
    g_assert_cmpuint(alloc_mw(&t, 0, pd, QRDMA_MW_TYPE_1, &mw3, NULL), ==,
                     QRDMA_STATUS_OK);
    g_assert_cmpuint(qrdma_t_destroy(&t, QRDMA_CMD_DEALLOC_MW, 0, mw1), ==,
                     QRDMA_STATUS_BAD_HANDLE);
}

/* Many resources, then a reset: all gone, and the device works again. */
static void test_reset_frees_all(void *obj, void *data,
                                 QGuestAllocator *alloc)
{
    QQrdma *q = obj;
    QrdmaTQp p = { .type = QRDMA_QPT_UD, .max_send_wr = 4,
                   .max_recv_wr = 4 };
    uint32_t uctx;
    QrdmaT t;
    int i;

    qrdma_t_init(&t, q, alloc, 4);
    uctx = qrdma_t_create_uctx(&t);
    p.uctx = uctx;
    p.pd = qrdma_t_alloc_pd(&t, uctx);
    p.send_cq = p.recv_cq = qrdma_t_cq(&t, uctx);
    for (i = 0; i < 8; i++) {
        g_assert_cmpuint(qrdma_t_create_qp(&t, &p, NULL, NULL), ==,
                         QRDMA_STATUS_OK);
    }
    g_assert_cmpuint(reg_mr(&t, uctx, p.pd, 0, 0x4000, qrdma_t_pages(&t, 4),
                            4, 0, NULL), ==, QRDMA_STATUS_OK);
    g_assert_cmpuint(qrdma_t_qom_get(&t, "resources"), ==, 12);

    qrdma_t_writel(&t, QRDMA_REG_DEV_CTRL, QRDMA_DEV_CTRL_RESET);
    g_assert_cmpuint(qrdma_t_readl(&t, QRDMA_REG_DEV_STATUS), ==, 0);
    g_assert_cmpuint(qrdma_t_qom_get(&t, "resources"), ==, 0);

    /* a fresh start: the same numbers of everything fit again */
    qrdma_t_init(&t, q, alloc, 4);
    uctx = qrdma_t_create_uctx(&t);
    p.uctx = uctx;
    p.pd = qrdma_t_alloc_pd(&t, uctx);
    p.send_cq = p.recv_cq = qrdma_t_cq(&t, uctx);
    for (i = 0; i < 8; i++) {
        g_assert_cmpuint(qrdma_t_create_qp(&t, &p, NULL, NULL), ==,
                         QRDMA_STATUS_OK);
    }

    /* a system reset does the same */
    qtest_system_reset(t.qts);
    g_assert_cmpuint(qrdma_t_qom_get(&t, "resources"), ==, 0);
}

/* Reset with commands posted and not yet run. */
static void test_reset_in_flight(void *obj, void *data,
                                 QGuestAllocator *alloc)
{
    QQrdma *q = obj;
    struct qrdma_cmd cmd = { .hdr.opcode = QRDMA_CMD_ALLOC_PD };
    QrdmaT t;
    int i;

    qrdma_t_init(&t, q, alloc, 4);
    for (i = 0; i < 16; i++) {
        cmd.hdr.cmd_id = cpu_to_le16(i);
        qtest_memwrite(t.qts, t.cmdq + i * sizeof(cmd), &cmd, sizeof(cmd));
    }
    /* doorbell and reset in one go, before the main loop runs the queue */
    qrdma_t_writel(&t, QRDMA_REG_CMDQ_PI, 16);
    qrdma_t_writel(&t, QRDMA_REG_DEV_CTRL, QRDMA_DEV_CTRL_RESET);
    g_assert_cmpuint(qrdma_t_readl(&t, QRDMA_REG_CMDQ_CI), ==, 0);
    g_assert_cmpuint(qrdma_t_qom_get(&t, "resources"), ==, 0);

    qrdma_t_init(&t, q, alloc, 4);
    g_assert_cmpuint(qrdma_t_alloc_pd(&t, 0), !=, 0);
}

/* A command ring outside RAM: the device goes fatal, and reset recovers. */
static void test_ring_not_ram(void *obj, void *data, QGuestAllocator *alloc)
{
    QQrdma *q = obj;
    QrdmaT t = { .q = q, .qts = q->dev.bus->qts };
    gint64 deadline = g_get_monotonic_time() + 5 * G_USEC_PER_SEC;

    qpci_device_enable(&q->dev);
    q->bar = qpci_iomap(&q->dev, QRDMA_REG_BAR, NULL);
    qrdma_t_writeq(&t, QRDMA_REG_CMDQ_BASE, NOT_RAM);
    qrdma_t_writel(&t, QRDMA_REG_CMDQ_LOG2, 2);
    qrdma_t_writeq(&t, QRDMA_REG_CMPQ_BASE, NOT_RAM + 2048);
    qrdma_t_writel(&t, QRDMA_REG_DEV_CTRL, QRDMA_DEV_CTRL_ENABLE);
    qrdma_t_writel(&t, QRDMA_REG_CMDQ_PI, 1);
    while (!(qrdma_t_readl(&t, QRDMA_REG_DEV_STATUS) &
             QRDMA_DEV_STATUS_FATAL)) {
        g_assert_cmpint(g_get_monotonic_time(), <, deadline);
        g_usleep(100);
    }
    g_assert_cmpuint(qrdma_t_readl(&t, QRDMA_REG_CONFIG_ERR), ==,
                     QRDMA_CONFIG_ERR_DMA);
    /* fatal: enabling again does nothing, reset does */
    qrdma_t_writel(&t, QRDMA_REG_DEV_CTRL, QRDMA_DEV_CTRL_ENABLE);
    g_assert_cmphex(qrdma_t_readl(&t, QRDMA_REG_DEV_STATUS), ==,
                    QRDMA_DEV_STATUS_FATAL);
    qrdma_t_writel(&t, QRDMA_REG_DEV_CTRL, QRDMA_DEV_CTRL_RESET);
    qrdma_t_init(&t, q, alloc, 4);
    g_assert_cmpuint(qrdma_t_alloc_pd(&t, 0), !=, 0);
}

static void qrdma_cmd_register_tests(void)
{
    QOSGraphTestOptions small = {
        .edge.extra_device_opts = "mac=52:54:00:12:34:56,max-qp=8,"
                                  "max-qp-wr=256,max-pd=4,max-mr-pages=16,"
                                  "max-cqe=1024,max-mw=2",
    };

    qos_add_test("cmd/before-enable", QRDMA_NODE_CMD, test_before_enable, NULL);
    qos_add_test("cmd/bad-ring-config", QRDMA_NODE_CMD,
                 test_bad_ring_config, NULL);
    qos_add_test("cmd/pi-beyond-ring", QRDMA_NODE_CMD,
                 test_pi_beyond_ring, NULL);
    qos_add_test("cmd/ring-wrap", QRDMA_NODE_CMD, test_ring_wrap, NULL);
    qos_add_test("cmd/bad-opcode", QRDMA_NODE_CMD, test_bad_opcode, NULL);
    qos_add_test("cmd/query-device-port", QRDMA_NODE_CMD, test_query_device,
                 &small);
    qos_add_test("cmd/gid-table", QRDMA_NODE_CMD, test_gid_table, NULL);
    qos_add_test("cmd/stale-handles", QRDMA_NODE_CMD,
                 test_stale_handles, &small);
    qos_add_test("cmd/limits", QRDMA_NODE_CMD, test_limits, &small);
    qos_add_test("cmd/mr", QRDMA_NODE_CMD, test_mr, &small);
    qos_add_test("cmd/ownership", QRDMA_NODE_CMD, test_ownership, NULL);
    qos_add_test("cmd/cq", QRDMA_NODE_CMD, test_cq, &small);
    qos_add_test("cmd/srq", QRDMA_NODE_CMD, test_srq, NULL);
    qos_add_test("cmd/ah", QRDMA_NODE_CMD, test_ah, NULL);
    qos_add_test("cmd/mw", QRDMA_NODE_CMD, test_mw, &small);
    qos_add_test("cmd/reset-frees-all", QRDMA_NODE_CMD,
                 test_reset_frees_all, NULL);
    qos_add_test("cmd/reset-in-flight", QRDMA_NODE_CMD,
                 test_reset_in_flight, NULL);
    qos_add_test("cmd/ring-not-ram", QRDMA_NODE_CMD, test_ring_not_ram, NULL);
}

libqos_init(qrdma_cmd_register_tests);
