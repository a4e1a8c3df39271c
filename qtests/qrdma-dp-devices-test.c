/*
 * QTest testcase for the qrdma data path: several qrdma functions in one
 * QEMU
 *
 * Copyright (c) 2026 The qrdma developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * Traffic between two functions, interrupts of one that reset the other
 * while it delivers, functions that reach each other only on one
 * qrdma-fabric, and a fabric that routes by GID tables that change.
 */

#include "qemu/osdep.h"
#include "qemu/module.h"
#include "qemu/timer.h"
#include "hw/pci/pci_regs.h"
#include "libqtest.h"
#include "qobject/qdict.h"
#include "qrdma-dp.h"

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

static void gid_set(QrdmaDpEnv *e, uint32_t index, uint8_t ip)
{
    struct qrdma_cmd cmd = { .hdr.opcode = QRDMA_CMD_SET_GID };

    cmd.gid.index = cpu_to_le32(index);
    cmd.gid.type = QRDMA_GID_TYPE_ROCE_V2;
    cmd.gid.vlan_id = cpu_to_le16(QRDMA_VLAN_NONE);
    memcpy(cmd.gid.gid, (uint8_t[16]) { [10] = 0xff, [11] = 0xff, 10, 0, 2,
                                        ip }, 16);
    g_assert_cmpuint(qrdma_t_exec(&e->t, &cmd, NULL), ==, 0);
}

static void gid_del(QrdmaDpEnv *e, uint32_t index)
{
    struct qrdma_cmd cmd = { .hdr.opcode = QRDMA_CMD_DEL_GID };

    cmd.gid.index = cpu_to_le32(index);
    g_assert_cmpuint(qrdma_t_exec(&e->t, &cmd, NULL), ==, 0);
}

/* A new RC QP of e0 to ip, on a QP of er that answers e0 at 10.0.2.15. */
static void gid_connect(QrdmaDpEnv *e0, QrdmaDpQp *a, uint8_t ip,
                        QrdmaDpEnv *er, QrdmaDpQp *b)
{
    e0->peer_ip = ip;
    er->peer_ip = 15;
    qrdma_dp_connect_rc(e0, a, er, b, true);
}

/* A SEND from a of e0 reaches b of er. */
static void gid_send(QrdmaDpEnv *e0, QrdmaDpQp *a, QrdmaDpEnv *er,
                     QrdmaDpQp *b, uint64_t id)
{
    struct qrdma_sq_wqe w;

    qrdma_dp_write_data(e0, 0, "to the GID");
    qtest_memset(er->t.qts, er->data + 4096, 0, 64);
    qrdma_dp_post_recv(er, b, id | 0xb00, er->data + 4096, 64, er->lkey);
    w = qrdma_dp_wqe_sge(id | 0xa00, QRDMA_WR_SEND, e0->data, 11, e0->lkey);
    qrdma_dp_post_send(e0, a, &w);
    qrdma_dp_expect_cqe(er, &er->cq, id | 0xb00, b->qpn, QRDMA_WC_RECV,
                        QRDMA_WC_SUCCESS);
    qrdma_dp_expect_cqe(e0, &e0->cq, id | 0xa00, a->qpn, QRDMA_WC_SEND,
                        QRDMA_WC_SUCCESS);
    qrdma_dp_expect_data(er, 4096, "to the GID");
}

/* A SEND from a of e0 finds no member: its retries run out. */
static void gid_send_lost(QrdmaDpEnv *e0, QrdmaDpQp *a, uint64_t id)
{
    struct qrdma_sq_wqe w;

    w = qrdma_dp_wqe_sge(id, QRDMA_WR_SEND, e0->data, 11, e0->lkey);
    qrdma_dp_post_send(e0, a, &w);
    qrdma_dp_expect_cqe_stepping(e0, &e0->cq, id, a->qpn,
                                 QRDMA_WC_RETRY_EXC_ERR, SCALE_MS, 10);
}

/*
 * A SEND from a new QP of e0 to ip, for QPN qpn: it reaches er, whose
 * packet count grows, and nothing more (no QP of er takes it from e0 at
 * ip), or reaches nobody if !arrives; its retries run out either way.
 */
static void gid_send_probe(QrdmaDpEnv *e0, QrdmaDpQp *a, uint8_t ip,
                           uint32_t qpn, QrdmaDpEnv *er, bool arrives,
                           uint64_t id)
{
    uint64_t rcvd = qrdma_t_qom_get(&er->t, "pkts-rcvd");

    e0->peer_ip = ip;
    g_assert_cmpuint(qrdma_dp_create_qp(e0, a, QRDMA_QPT_RC, 0, &e0->cq,
                                        &e0->cq), ==, 0);
    qrdma_dp_to_rtr(e0, a, qpn);
    qrdma_dp_to_rts(e0, a, 0);
    gid_send_lost(e0, a, id);
    if (arrives) {
        g_assert_cmpuint(qrdma_t_qom_get(&er->t, "pkts-rcvd"), >, rcvd);
    } else {
        g_assert_cmpuint(qrdma_t_qom_get(&er->t, "pkts-rcvd"), ==, rcvd);
    }
}

/*
 * The fabric routes by the members' GID tables as they are now.  Three
 * functions on one fabric, qrdma1 at 10.0.2.16 and qrdma2 at .17:
 * qrdma1 deletes .16, and packets to it reach nobody; takes .18 at the
 * same index, and packets to .18 reach it; qrdma2 sets .16 over its .17,
 * and packets to .16 reach qrdma2, to .17 nobody.  A GID two members
 * claim stays with the first until it sets another in its place.  An
 * entry at another index routes too, until it is deleted.  A reset
 * empties a member's GID table: packets to it reach nobody again.
 */
static void test_fabric_gid_moves(void *obj, void *data,
                                  QGuestAllocator *alloc)
{
    QrdmaDpQp a[10], b[5];
    QQrdma q1, q2;
    QrdmaDpEnv e0, e1, e2;

    qrdma_dp_env_init(&e0, obj, alloc);
    qrdma_dp_other_device(obj, 5, 16, &q1, alloc, &e1);
    qrdma_dp_other_device(obj, 6, 17, &q2, alloc, &e2);
    e0.timeout = 8;
    e0.retry_cnt = 1;

    gid_connect(&e0, &a[0], 16, &e1, &b[0]);
    gid_send(&e0, &a[0], &e1, &b[0], 1);
    gid_del(&e1, 0);
    gid_send_probe(&e0, &a[1], 16, b[0].qpn, &e1, false, 2);
    gid_set(&e1, 0, 18);
    gid_connect(&e0, &a[2], 18, &e1, &b[1]);
    gid_send(&e0, &a[2], &e1, &b[1], 3);

    gid_set(&e2, 0, 16);
    gid_connect(&e0, &a[3], 16, &e2, &b[2]);
    gid_send(&e0, &a[3], &e2, &b[2], 4);
    gid_send_probe(&e0, &a[4], 17, b[2].qpn, &e2, false, 5);

    /* .16 twice: qrdma2's, until qrdma2 sets .19 in its place */
    gid_set(&e1, 0, 16);
    gid_send(&e0, &a[3], &e2, &b[2], 6);
    gid_set(&e2, 0, 19);
    gid_connect(&e0, &a[5], 16, &e1, &b[3]);
    gid_send(&e0, &a[5], &e1, &b[3], 7);

    /* .20 at index 5 of qrdma2 */
    gid_set(&e2, 5, 20);
    gid_send_probe(&e0, &a[6], 20, b[2].qpn, &e2, true, 8);
    gid_del(&e2, 5);
    gid_send_probe(&e0, &a[7], 20, b[2].qpn, &e2, false, 9);

    qrdma_t_writel(&e1.t, QRDMA_REG_DEV_CTRL, QRDMA_DEV_CTRL_RESET);
    gid_send_probe(&e0, &a[8], 16, b[3].qpn, &e1, false, 10);
    gid_send_probe(&e0, &a[9], 16, b[3].qpn, &e2, false, 11);
}

static void qrdma_dp_devices_register_tests(void)
{
    qos_add_test("dp/two-devices", QRDMA_NODE_DP, test_two_devices,
                 &(QOSGraphTestOptions) {
        .edge.before_cmd_line = "-device qrdma,addr=05.0,id=qrdma1",
    });
    add_peer_reset_tests();
    qos_add_test("dp/fabric-link", QRDMA_NODE_DP, test_fabric_link,
                 &(QOSGraphTestOptions) {
        .edge.before_cmd_line = "-device qrdma-fabric,id=f1 "
                                "-device qrdma,addr=05.0,id=qrdma1,fabric=f1 "
                                "-device qrdma,addr=06.0,id=qrdma2,fabric=f1",
    });
    qos_add_test("dp/fabric-gid-moves", QRDMA_NODE_DP, test_fabric_gid_moves,
                 &(QOSGraphTestOptions) {
        .edge.before_cmd_line = "-device qrdma,addr=05.0,id=qrdma1 "
                                "-device qrdma,addr=06.0,id=qrdma2",
    });
}

libqos_init(qrdma_dp_devices_register_tests);
