/*
 * A minimal qrdma driver for the qtests: command queue and resources
 *
 * Copyright (c) 2026 The qrdma developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/host-utils.h"
#include "libqtest.h"
#include "libqos/libqos-malloc.h"
#include "qobject/qdict.h"
#include "qrdma-qos.h"

#define QRDMA_T_TIMEOUT_US (5 * G_USEC_PER_SEC)

uint32_t qrdma_t_readl(QrdmaT *t, uint64_t off)
{
    return qpci_io_readl(&t->q->dev, t->q->bar, off);
}

void qrdma_t_writel(QrdmaT *t, uint64_t off, uint32_t val)
{
    qpci_io_writel(&t->q->dev, t->q->bar, off, val);
}

void qrdma_t_writeq(QrdmaT *t, uint64_t off, uint64_t val)
{
    qpci_io_writeq(&t->q->dev, t->q->bar, off, val);
}

void qrdma_t_init(QrdmaT *t, QQrdma *q, QGuestAllocator *alloc,
                  uint32_t log2)
{
    size_t n = 1u << log2;

    memset(t, 0, sizeof(*t));
    t->q = q;
    t->qts = q->dev.bus->qts;
    t->alloc = alloc;
    t->log2 = log2;

    qpci_device_enable(&q->dev);
    q->bar = qpci_iomap(&q->dev, QRDMA_REG_BAR, NULL);

    t->cmdq = guest_alloc(alloc, n * sizeof(struct qrdma_cmd));
    t->cmpq = guest_alloc(alloc, n * sizeof(struct qrdma_cmpl));
    qtest_memset(t->qts, t->cmpq, 0, n * sizeof(struct qrdma_cmpl));

    qrdma_t_writeq(t, QRDMA_REG_CMDQ_BASE, t->cmdq);
    qrdma_t_writel(t, QRDMA_REG_CMDQ_LOG2, log2);
    qrdma_t_writeq(t, QRDMA_REG_CMPQ_BASE, t->cmpq);
    qrdma_t_writel(t, QRDMA_REG_DEV_CTRL, QRDMA_DEV_CTRL_ENABLE);
    g_assert_cmphex(qrdma_t_readl(t, QRDMA_REG_DEV_STATUS), ==,
                    QRDMA_DEV_STATUS_READY);
}

static uint64_t qrdma_t_slot_addr(QrdmaT *t, uint64_t base, uint32_t idx,
                                  size_t size)
{
    return base + (uint64_t)(idx & ((1u << t->log2) - 1)) * size;
}

static void qrdma_t_post(QrdmaT *t, struct qrdma_cmd *cmd)
{
    cmd->hdr.cmd_id = cpu_to_le16(t->next_id++);
    qtest_memwrite(t->qts,
                   qrdma_t_slot_addr(t, t->cmdq, t->pi, sizeof(*cmd)),
                   cmd, sizeof(*cmd));
    t->pi++;
}

bool qrdma_t_cmd_done(QrdmaT *t, uint32_t idx, struct qrdma_cmpl *cmpl)
{
    uint64_t addr = qrdma_t_slot_addr(t, t->cmpq, idx, sizeof(*cmpl));
    uint8_t phase = ((idx >> t->log2) & 1) ? 0 : QRDMA_CMPL_F_PHASE;

    qtest_memread(t->qts, addr, cmpl, sizeof(*cmpl));
    return (cmpl->flags & QRDMA_CMPL_F_PHASE) == phase;
}

/* Wait for the completion of the command at index idx. */
static void qrdma_t_wait(QrdmaT *t, uint32_t idx, struct qrdma_cmpl *cmpl)
{
    gint64 deadline = g_get_monotonic_time() + QRDMA_T_TIMEOUT_US;

    while (!qrdma_t_cmd_done(t, idx, cmpl)) {
        g_assert_cmpint(g_get_monotonic_time(), <, deadline);
        g_usleep(100);
    }
}

uint32_t qrdma_t_cmd_start(QrdmaT *t, struct qrdma_cmd *cmd)
{
    qrdma_t_post(t, cmd);
    qrdma_t_writel(t, QRDMA_REG_CMDQ_PI, t->pi);
    return t->pi - 1;
}

uint8_t qrdma_t_cmd_wait(QrdmaT *t, uint32_t idx, struct qrdma_cmpl *cmpl)
{
    qrdma_t_wait(t, idx, cmpl);
    return cmpl->status;
}

uint8_t qrdma_t_exec(QrdmaT *t, struct qrdma_cmd *cmd,
                     struct qrdma_cmpl *cmpl)
{
    struct qrdma_cmpl local;
    uint16_t id = t->next_id;

    cmpl = cmpl ? cmpl : &local;
    qrdma_t_post(t, cmd);
    qrdma_t_writel(t, QRDMA_REG_CMDQ_PI, t->pi);
    qrdma_t_wait(t, t->pi - 1, cmpl);
    g_assert_cmpuint(le16_to_cpu(cmpl->cmd_id), ==, id);
    return cmpl->status;
}

void qrdma_t_exec_batch(QrdmaT *t, struct qrdma_cmd *cmds, unsigned n,
                        struct qrdma_cmpl *cmpl)
{
    uint32_t first = t->pi;
    unsigned i;

    for (i = 0; i < n; i++) {
        qrdma_t_post(t, &cmds[i]);
    }
    qrdma_t_writel(t, QRDMA_REG_CMDQ_PI, t->pi);
    for (i = 0; i < n; i++) {
        qrdma_t_wait(t, first + i, &cmpl[i]);
    }
}

uint64_t qrdma_t_page_list(QrdmaT *t, const uint64_t *addr, uint32_t n)
{
    uint64_t list = guest_alloc(t->alloc, n * sizeof(uint64_t));
    uint32_t i;

    for (i = 0; i < n; i++) {
        qtest_writeq(t->qts, list + i * sizeof(uint64_t), addr[i]);
    }
    return list;
}

uint64_t qrdma_t_pages(QrdmaT *t, uint32_t n)
{
    g_autofree uint64_t *addr = g_new(uint64_t, n);
    uint32_t i;

    for (i = 0; i < n; i++) {
        addr[i] = guest_alloc(t->alloc, QRDMA_PAGE_SIZE);
        g_assert_cmphex(addr[i] & (QRDMA_PAGE_SIZE - 1), ==, 0);
    }
    return qrdma_t_page_list(t, addr, n);
}

/*
 * The pages of a ring.  A ring beyond what the device allows is refused
 * before its pages are read, so for one that large a token list does.
 */
uint64_t qrdma_t_ring(QrdmaT *t, uint32_t npages)
{
    return qrdma_t_pages(t, npages <= 4096 ? npages : 1);
}

uint64_t qrdma_t_qom_get(QrdmaT *t, const char *prop)
{
    QDict *rsp;
    uint64_t n;

    rsp = qtest_qmp(t->qts, "{ 'execute': 'qom-get', 'arguments': "
                    "{ 'path': %s, 'property': %s } }",
                    t->qom_path ? t->qom_path : QRDMA_QOM_PATH, prop);
    g_assert(qdict_haskey(rsp, "return"));
    n = qdict_get_int(rsp, "return");
    qobject_unref(rsp);
    return n;
}

uint32_t qrdma_t_create_uctx(QrdmaT *t)
{
    struct qrdma_cmd cmd = { .hdr.opcode = QRDMA_CMD_CREATE_UCTX };
    struct qrdma_cmpl cmpl;

    g_assert_cmpuint(qrdma_t_exec(t, &cmd, &cmpl), ==, QRDMA_STATUS_OK);
    return le32_to_cpu(cmpl.handle);
}

uint32_t qrdma_t_alloc_pd(QrdmaT *t, uint32_t uctx)
{
    struct qrdma_cmd cmd = {
        .hdr.opcode = QRDMA_CMD_ALLOC_PD,
        .hdr.uctx = cpu_to_le32(uctx),
    };
    struct qrdma_cmpl cmpl;

    g_assert_cmpuint(qrdma_t_exec(t, &cmd, &cmpl), ==, QRDMA_STATUS_OK);
    return le32_to_cpu(cmpl.handle);
}

uint8_t qrdma_t_create_cq(QrdmaT *t, uint32_t uctx, uint32_t log2,
                          uint32_t *cqn)
{
    uint32_t npages = DIV_ROUND_UP((uint64_t)QRDMA_CQE_SIZE << log2,
                                   QRDMA_PAGE_SIZE);
    struct qrdma_cmd cmd = {
        .hdr.opcode = QRDMA_CMD_CREATE_CQ,
        .hdr.uctx = cpu_to_le32(uctx),
        .cq.pages_addr = cpu_to_le64(qrdma_t_ring(t, npages)),
        .cq.npages = cpu_to_le32(npages),
        .cq.log2_entries = cpu_to_le32(log2),
    };
    struct qrdma_cmpl cmpl;
    uint8_t st = qrdma_t_exec(t, &cmd, &cmpl);

    if (cqn) {
        *cqn = le32_to_cpu(cmpl.handle);
    }
    if (!st) {
        g_assert_cmpuint(le32_to_cpu(cmpl.data[0]), ==, 1u << log2);
    }
    return st;
}

uint32_t qrdma_t_cq(QrdmaT *t, uint32_t uctx)
{
    uint32_t cqn;

    g_assert_cmpuint(qrdma_t_create_cq(t, uctx, 4, &cqn), ==,
                     QRDMA_STATUS_OK);
    return cqn;
}

uint8_t qrdma_t_destroy(QrdmaT *t, uint8_t opcode, uint32_t uctx,
                        uint32_t handle)
{
    struct qrdma_cmd cmd = {
        .hdr.opcode = opcode,
        .hdr.uctx = cpu_to_le32(uctx),
        .destroy.handle = cpu_to_le32(handle),
    };

    return qrdma_t_exec(t, &cmd, NULL);
}

static uint32_t qrdma_t_log2(uint32_t n)
{
    return n <= 1 ? 0 : 32 - clz32(n - 1);
}

uint8_t qrdma_t_create_srq(QrdmaT *t, uint32_t uctx, uint32_t pd,
                           uint32_t max_wr, uint32_t *srqn)
{
    uint32_t log2 = qrdma_t_log2(max_wr);
    uint32_t npages = DIV_ROUND_UP((uint64_t)QRDMA_RQ_WQE_SIZE << log2,
                                   QRDMA_PAGE_SIZE);
    struct qrdma_cmd cmd = {
        .hdr.opcode = QRDMA_CMD_CREATE_SRQ,
        .hdr.uctx = cpu_to_le32(uctx),
        .srq.pd = cpu_to_le32(pd),
        .srq.max_wr = cpu_to_le32(max_wr),
        .srq.max_sge = cpu_to_le32(1),
        .srq.pages_addr = cpu_to_le64(qrdma_t_ring(t, npages)),
        .srq.npages = cpu_to_le32(npages),
        .srq.log2_entries = cpu_to_le32(log2),
    };
    struct qrdma_cmpl cmpl;
    uint8_t st = qrdma_t_exec(t, &cmd, &cmpl);

    if (srqn) {
        *srqn = le32_to_cpu(cmpl.handle);
    }
    return st;
}

uint8_t qrdma_t_create_qp(QrdmaT *t, const QrdmaTQp *p, uint32_t *qpn,
                          struct qrdma_create_qp_resp *resp)
{
    uint32_t sq_log2 = qrdma_t_log2(MIN(p->max_send_wr, 1u << 20));
    uint32_t rq_log2 = qrdma_t_log2(MIN(p->max_recv_wr, 1u << 20));
    uint32_t sq_pages = DIV_ROUND_UP((uint64_t)QRDMA_SQ_WQE_SIZE << sq_log2,
                                     QRDMA_PAGE_SIZE);
    uint32_t rq_pages = DIV_ROUND_UP((uint64_t)QRDMA_RQ_WQE_SIZE << rq_log2,
                                     QRDMA_PAGE_SIZE);
    struct qrdma_cmd cmd = {
        .hdr.opcode = QRDMA_CMD_CREATE_QP,
        .hdr.uctx = cpu_to_le32(p->uctx),
        .create_qp.pd = cpu_to_le32(p->pd),
        .create_qp.send_cq = cpu_to_le32(p->send_cq),
        .create_qp.recv_cq = cpu_to_le32(p->recv_cq),
        .create_qp.srq = cpu_to_le32(p->srq),
        .create_qp.qp_type = p->type,
        .create_qp.sq_log2 = sq_log2,
        .create_qp.max_send_wr = cpu_to_le32(p->max_send_wr),
        .create_qp.max_recv_wr = cpu_to_le32(p->max_recv_wr),
        .create_qp.max_send_sge = cpu_to_le32(p->max_send_sge),
        .create_qp.max_recv_sge = cpu_to_le32(p->max_recv_sge),
        .create_qp.max_inline_data = cpu_to_le32(p->max_inline_data),
        .create_qp.sq_npages = cpu_to_le32(sq_pages),
    };
    struct qrdma_cmpl cmpl;
    uint8_t st;

    cmd.create_qp.sq_pages_addr = cpu_to_le64(qrdma_t_ring(t, sq_pages));
    if (!p->srq) {
        cmd.create_qp.rq_log2 = rq_log2;
        cmd.create_qp.rq_npages = cpu_to_le32(rq_pages);
        cmd.create_qp.rq_pages_addr = cpu_to_le64(qrdma_t_ring(t, rq_pages));
    }
    st = qrdma_t_exec(t, &cmd, &cmpl);
    if (qpn) {
        *qpn = le32_to_cpu(cmpl.handle);
    }
    if (resp) {
        memcpy(resp, cmpl.data, sizeof(*resp));
    }
    return st;
}

uint8_t qrdma_t_modify_qp(QrdmaT *t, uint32_t uctx, uint32_t qpn,
                          const struct qrdma_qp_attr *attr)
{
    struct qrdma_cmd cmd = {
        .hdr.opcode = QRDMA_CMD_MODIFY_QP,
        .hdr.uctx = cpu_to_le32(uctx),
        .modify_qp.qpn = cpu_to_le32(qpn),
        .modify_qp.attr = *attr,
    };

    return qrdma_t_exec(t, &cmd, NULL);
}

uint8_t qrdma_t_query_qp(QrdmaT *t, uint32_t uctx, uint32_t qpn,
                         struct qrdma_query_qp_resp *resp)
{
    uint64_t buf = guest_alloc(t->alloc, sizeof(*resp));
    struct qrdma_cmd cmd = {
        .hdr.opcode = QRDMA_CMD_QUERY_QP,
        .hdr.uctx = cpu_to_le32(uctx),
        .query.resp_addr = cpu_to_le64(buf),
        .query.resp_len = cpu_to_le32(sizeof(*resp)),
        .query.index = cpu_to_le32(qpn),
    };
    uint8_t st = qrdma_t_exec(t, &cmd, NULL);

    qtest_memread(t->qts, buf, resp, sizeof(*resp));
    guest_free(t->alloc, buf);
    return st;
}

void qrdma_t_set_gid(QrdmaT *t, uint32_t index)
{
    struct qrdma_cmd cmd = {
        .hdr.opcode = QRDMA_CMD_SET_GID,
        .gid.index = cpu_to_le32(index),
        .gid.type = QRDMA_GID_TYPE_ROCE_V2,
        .gid.vlan_id = cpu_to_le16(QRDMA_VLAN_NONE),
        /* ::ffff:10.0.2.15, an IPv4-mapped RoCEv2 GID */
        .gid.gid = { [10] = 0xff, [11] = 0xff, 10, 0, 2, 15 },
    };

    g_assert_cmpuint(qrdma_t_exec(t, &cmd, NULL), ==, QRDMA_STATUS_OK);
}

static unsigned qrdma_t_env(const char *name, unsigned dflt)
{
    const char *s = g_getenv(name);

    return s ? (unsigned)g_ascii_strtoull(s, NULL, 0) : dflt;
}

GRand *qrdma_t_fuzz_rand(void)
{
    unsigned seed = qrdma_t_env("QRDMA_FUZZ_SEED", 0x71726d61);

    g_test_message("QRDMA_FUZZ_SEED=0x%x", seed);
    return g_rand_new_with_seed(seed);
}

unsigned qrdma_t_fuzz_iters(unsigned dflt)
{
    return qrdma_t_env("QRDMA_FUZZ_ITERS", dflt);
}
