/*
 * qrdma data path tests: the set-up and helpers their files share
 *
 * Copyright (c) 2026 The qrdma developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include <poll.h>
#include "libqtest.h"
#include "libqos/libqos-malloc.h"
#include "qrdma-dp.h"

uint64_t qrdma_dp_page_list1(QrdmaDpEnv *e, uint64_t page)
{
    return qrdma_t_page_list(&e->t, &page, 1);
}

static void eq_enable(QrdmaDpEnv *e, unsigned n, uint64_t base)
{
    qrdma_t_writeq(&e->t, QRDMA_REG_EQ(n) + QRDMA_REG_EQ_BASE, base);
    qrdma_t_writel(&e->t, QRDMA_REG_EQ(n) + QRDMA_REG_EQ_LOG2, 8);
    qrdma_t_writel(&e->t, QRDMA_REG_EQ(n) + QRDMA_REG_EQ_CTRL,
                   QRDMA_EQ_CTRL_ENABLE);
    g_assert_cmpuint(qrdma_t_readl(&e->t, QRDMA_REG_EQ(n) + QRDMA_REG_EQ_CTRL),
                     ==, QRDMA_EQ_CTRL_ENABLE);
}

uint8_t qrdma_dp_create_cq_flags(QrdmaDpEnv *e, QrdmaDpCq *cq, uint32_t log2,
                                 uint32_t eq, uint32_t flags)
{
    struct qrdma_cmd cmd = { .hdr.opcode = QRDMA_CMD_CREATE_CQ };
    struct qrdma_cmpl cmpl;
    uint8_t st;

    memset(cq, 0, sizeof(*cq));
    cq->log2 = log2;
    cq->ring = guest_alloc(e->t.alloc, 4096);
    cq->ci_addr = guest_alloc(e->t.alloc, 4096);
    qtest_memset(e->t.qts, cq->ring, 0, 4096);
    qtest_writel(e->t.qts, cq->ci_addr, 0);
    cmd.cq.pages_addr = cpu_to_le64(qrdma_dp_page_list1(e, cq->ring));
    cmd.cq.npages = cpu_to_le32(1);
    cmd.cq.log2_entries = cpu_to_le32(log2);
    cmd.cq.eq = cpu_to_le32(eq);
    cmd.cq.flags = cpu_to_le32(flags);
    cmd.cq.ci_addr = cpu_to_le64(cq->ci_addr);
    st = qrdma_t_exec(&e->t, &cmd, &cmpl);
    cq->cqn = le32_to_cpu(cmpl.handle);
    return st;
}

uint8_t qrdma_dp_create_cq(QrdmaDpEnv *e, QrdmaDpCq *cq, uint32_t log2,
                           uint32_t eq)
{
    return qrdma_dp_create_cq_flags(e, cq, log2, eq, 0);
}

void qrdma_dp_env_init(QrdmaDpEnv *e, void *obj, QGuestAllocator *alloc)
{
    uint64_t pages[QRDMA_DP_DATA_PAGES];
    struct qrdma_cmd cmd = { .hdr.opcode = QRDMA_CMD_REG_MR };
    struct qrdma_cmpl cmpl;
    int i;

    memset(e, 0, sizeof(*e));
    e->peer_ip = 15;
    e->qp_access = QRDMA_ACCESS_REMOTE_WRITE | QRDMA_ACCESS_REMOTE_READ |
                   QRDMA_ACCESS_REMOTE_ATOMIC;
    e->timeout = 14;
    e->retry_cnt = 7;
    e->path_mtu = 3;
    e->max_rd_atomic = 4;
    e->max_dest_rd_atomic = 4;
    qrdma_t_init(&e->t, obj, alloc, 4);
    e->db = qpci_iomap(&e->t.q->dev, QRDMA_DB_BAR, NULL);
    e->eq0 = guest_alloc(alloc, 4096);
    e->eq1 = guest_alloc(alloc, 4096);
    qtest_memset(e->t.qts, e->eq0, 0, 4096);
    qtest_memset(e->t.qts, e->eq1, 0, 4096);
    eq_enable(e, 0, e->eq0);
    eq_enable(e, 1, e->eq1);
    qrdma_t_set_gid(&e->t, 0);
    e->pd = qrdma_t_alloc_pd(&e->t, 0);

    e->data = guest_alloc(alloc, QRDMA_DP_DATA_PAGES * 4096);
    qtest_memset(e->t.qts, e->data, 0, QRDMA_DP_DATA_PAGES * 4096);
    for (i = 0; i < QRDMA_DP_DATA_PAGES; i++) {
        pages[i] = e->data + i * 4096;
    }
    cmd.reg_mr.pd = cpu_to_le32(e->pd);
    cmd.reg_mr.access = cpu_to_le32(QRDMA_ACCESS_VALID_MASK & ~
                                    QRDMA_ACCESS_MW_BIND);
    cmd.reg_mr.iova = cpu_to_le64(e->data);
    cmd.reg_mr.length = cpu_to_le64(QRDMA_DP_DATA_PAGES * 4096);
    cmd.reg_mr.pages_addr = cpu_to_le64(qrdma_t_page_list(&e->t, pages,
                                                          QRDMA_DP_DATA_PAGES));
    cmd.reg_mr.npages = cpu_to_le32(QRDMA_DP_DATA_PAGES);
    cmd.reg_mr.page_shift = 12;
    g_assert_cmpuint(qrdma_t_exec(&e->t, &cmd, &cmpl), ==, QRDMA_STATUS_OK);
    e->lkey = le32_to_cpu(cmpl.handle);
    e->rkey = le32_to_cpu(cmpl.data[0]);

    g_assert_cmpuint(qrdma_dp_create_cq(e, &e->cq, 7, 1), ==, QRDMA_STATUS_OK);
}

uint32_t qrdma_dp_reg_mr(QrdmaDpEnv *e, uint32_t pd, uint64_t off, uint64_t len,
                         uint32_t access)
{
    uint64_t pages[QRDMA_DP_DATA_PAGES];
    uint32_t n = DIV_ROUND_UP(len, 4096), i;
    struct qrdma_cmd cmd = { .hdr.opcode = QRDMA_CMD_REG_MR };
    struct qrdma_cmpl cmpl;

    for (i = 0; i < n; i++) {
        pages[i] = e->data + off + i * 4096;
    }
    cmd.reg_mr.pd = cpu_to_le32(pd);
    cmd.reg_mr.access = cpu_to_le32(access);
    cmd.reg_mr.iova = cpu_to_le64(0x10000000);
    cmd.reg_mr.length = cpu_to_le64(len);
    cmd.reg_mr.pages_addr = cpu_to_le64(qrdma_t_page_list(&e->t, pages, n));
    cmd.reg_mr.npages = cpu_to_le32(n);
    cmd.reg_mr.page_shift = 12;
    g_assert_cmpuint(qrdma_t_exec(&e->t, &cmd, &cmpl), ==, QRDMA_STATUS_OK);
    return le32_to_cpu(cmpl.handle);
}

uint8_t qrdma_dp_reg_page_mr(QrdmaDpEnv *e, uint64_t page, uint32_t access,
                             uint32_t *rkey)
{
    struct qrdma_cmd cmd = { .hdr.opcode = QRDMA_CMD_REG_MR };
    struct qrdma_cmpl cmpl;
    uint8_t st;

    cmd.reg_mr.pd = cpu_to_le32(e->pd);
    cmd.reg_mr.access = cpu_to_le32(access);
    cmd.reg_mr.iova = cpu_to_le64(page);
    cmd.reg_mr.length = cpu_to_le64(4096);
    cmd.reg_mr.pages_addr = cpu_to_le64(qrdma_dp_page_list1(e, page));
    cmd.reg_mr.npages = cpu_to_le32(1);
    cmd.reg_mr.page_shift = 12;
    st = qrdma_t_exec(&e->t, &cmd, &cmpl);
    if (!st && rkey) {
        *rkey = le32_to_cpu(cmpl.data[0]);
    }
    return st;
}

uint8_t qrdma_dp_modify(QrdmaDpEnv *e, QrdmaDpQp *qp, uint32_t mask,
                        uint8_t state, uint32_t dest, uint8_t rnr_retry)
{
    struct qrdma_qp_attr a = {
        .attr_mask = cpu_to_le32(mask),
        .qp_state = state,
        .path_mtu = e->path_mtu,
        .qkey = cpu_to_le32(0x1234),
        .sq_psn = cpu_to_le32(e->sq_psn),
        .rq_psn = cpu_to_le32(e->rq_psn),
        .dest_qp_num = cpu_to_le32(dest),
        .qp_access_flags = cpu_to_le32(e->qp_access),
        .max_rd_atomic = e->max_rd_atomic,
        .max_dest_rd_atomic = e->max_dest_rd_atomic,
        .min_rnr_timer = 1,
        .port_num = 1,
        .timeout = e->timeout,
        .retry_cnt = e->retry_cnt,
        .rnr_retry = rnr_retry,
        .av.hop_limit = 64,
        /* ::ffff:10.0.2.<peer_ip>; qrdma_t_set_gid() sets .15 */
        .av.dgid = { [10] = 0xff, [11] = 0xff, 10, 0, 2, e->peer_ip },
        .av.vlan_id = cpu_to_le16(QRDMA_VLAN_NONE),
    };

    memcpy(a.av.dmac, e->peer_mac, 6);

    return qrdma_t_modify_qp(&e->t, 0, qp->qpn, &a);
}

uint8_t qrdma_dp_modify_state(QrdmaDpEnv *e, QrdmaDpQp *qp, uint8_t state)
{
    return qrdma_dp_modify(e, qp, QRDMA_QP_ATTR_STATE, state, 0, 0);
}

void qrdma_dp_to_rtr(QrdmaDpEnv *e, QrdmaDpQp *qp, uint32_t dest)
{
    uint32_t init = qp->type == QRDMA_QPT_UD ?
        QRDMA_QP_ATTR_STATE | QRDMA_QP_ATTR_PKEY_INDEX | QRDMA_QP_ATTR_PORT |
        QRDMA_QP_ATTR_QKEY :
        QRDMA_QP_ATTR_STATE | QRDMA_QP_ATTR_PKEY_INDEX | QRDMA_QP_ATTR_PORT |
        QRDMA_QP_ATTR_ACCESS_FLAGS;
    uint32_t rtr = QRDMA_QP_ATTR_STATE;

    if (qp->type == QRDMA_QPT_RC) {
        rtr |= QRDMA_QP_ATTR_AV | QRDMA_QP_ATTR_PATH_MTU |
               QRDMA_QP_ATTR_DEST_QPN | QRDMA_QP_ATTR_RQ_PSN |
               QRDMA_QP_ATTR_MAX_DEST_RD_ATOMIC | QRDMA_QP_ATTR_MIN_RNR_TIMER;
    } else if (qp->type == QRDMA_QPT_UC) {
        rtr |= QRDMA_QP_ATTR_AV | QRDMA_QP_ATTR_PATH_MTU |
               QRDMA_QP_ATTR_DEST_QPN | QRDMA_QP_ATTR_RQ_PSN;
    }
    g_assert_cmpuint(qrdma_dp_modify(e, qp, init, QRDMA_QPS_INIT, 0, 0), ==, 0);
    g_assert_cmpuint(qrdma_dp_modify(e, qp, rtr, QRDMA_QPS_RTR, dest, 0), ==,
                     0);
}

void qrdma_dp_to_rts(QrdmaDpEnv *e, QrdmaDpQp *qp, uint8_t rnr_retry)
{
    uint32_t rts = QRDMA_QP_ATTR_STATE | QRDMA_QP_ATTR_SQ_PSN;

    if (qp->type == QRDMA_QPT_RC) {
        rts |= QRDMA_QP_ATTR_TIMEOUT | QRDMA_QP_ATTR_RETRY_CNT |
               QRDMA_QP_ATTR_RNR_RETRY | QRDMA_QP_ATTR_MAX_QP_RD_ATOMIC;
    }
    g_assert_cmpuint(qrdma_dp_modify(e, qp, rts, QRDMA_QPS_RTS, 0, rnr_retry),
                     ==, 0);
}

uint8_t qrdma_dp_create_qp(QrdmaDpEnv *e, QrdmaDpQp *qp, uint8_t type,
                           uint32_t srq, const QrdmaDpCq *scq,
                           const QrdmaDpCq *rcq)
{
    uint64_t sq = guest_alloc(e->t.alloc, 4096);
    uint64_t rq = guest_alloc(e->t.alloc, 4096);
    uint64_t sq_list = qrdma_dp_page_list1(e, sq);
    uint64_t rq_list = srq ? 0 : qrdma_dp_page_list1(e, rq);
    uint8_t st;

    st = qrdma_dp_create_qp_on(e, qp, type, srq, scq, rcq, sq_list, rq_list);
    qp->sq = sq;
    qp->rq = rq;
    return st;
}

uint8_t qrdma_dp_create_qp_on(QrdmaDpEnv *e, QrdmaDpQp *qp, uint8_t type,
                              uint32_t srq, const QrdmaDpCq *scq,
                              const QrdmaDpCq *rcq, uint64_t sq_list,
                              uint64_t rq_list)
{
    struct qrdma_cmd cmd = { .hdr.opcode = QRDMA_CMD_CREATE_QP };
    struct qrdma_cmpl cmpl;
    uint8_t st;

    memset(qp, 0, sizeof(*qp));
    qp->type = type;
    cmd.create_qp.pd = cpu_to_le32(e->pd);
    cmd.create_qp.send_cq = cpu_to_le32(scq->cqn);
    cmd.create_qp.recv_cq = cpu_to_le32(rcq->cqn);
    cmd.create_qp.srq = cpu_to_le32(srq);
    cmd.create_qp.qp_type = type;
    cmd.create_qp.sq_log2 = 4;
    cmd.create_qp.max_send_wr = cpu_to_le32(16);
    cmd.create_qp.sq_pages_addr = cpu_to_le64(sq_list);
    cmd.create_qp.sq_npages = cpu_to_le32(1);
    if (!srq) {
        cmd.create_qp.rq_log2 = 5;
        cmd.create_qp.max_recv_wr = cpu_to_le32(32);
        cmd.create_qp.rq_pages_addr = cpu_to_le64(rq_list);
        cmd.create_qp.rq_npages = cpu_to_le32(1);
    }
    st = qrdma_t_exec(&e->t, &cmd, &cmpl);
    qp->qpn = le32_to_cpu(cmpl.handle);
    return st;
}

void qrdma_dp_pair(QrdmaDpEnv *e, QrdmaDpQp *a, QrdmaDpQp *b, uint8_t type,
                   uint8_t rnr_retry)
{
    g_assert_cmpuint(qrdma_dp_create_qp(e, a, type, 0, &e->cq, &e->cq), ==, 0);
    g_assert_cmpuint(qrdma_dp_create_qp(e, b, type, 0, &e->cq, &e->cq), ==, 0);
    qrdma_dp_to_rtr(e, a, b->qpn);
    qrdma_dp_to_rtr(e, b, a->qpn);
    qrdma_dp_to_rts(e, a, rnr_retry);
    qrdma_dp_to_rts(e, b, rnr_retry);
}

void qrdma_dp_ring_db(QrdmaDpEnv *e, uint64_t off, uint32_t handle,
                      uint32_t index)
{
    qpci_io_writeq(&e->t.q->dev, e->db, off, QRDMA_DB_VAL(handle, index));
}

void qrdma_dp_post_send(QrdmaDpEnv *e, QrdmaDpQp *qp, struct qrdma_sq_wqe *wqe)
{
    qtest_memwrite(e->t.qts, qp->sq + (qp->sq_pi % 16) * QRDMA_SQ_WQE_SIZE,
                   wqe, sizeof(*wqe));
    qp->sq_pi++;
    qrdma_dp_ring_db(e, QRDMA_DB_SQ, qp->qpn, qp->sq_pi);
}

struct qrdma_sq_wqe qrdma_dp_wqe_sge(uint64_t wr_id, uint8_t opcode,
                                     uint64_t addr, uint32_t len, uint32_t lkey)
{
    struct qrdma_sq_wqe w = {
        .wr_id = wr_id,
        .opcode = opcode,
        .flags = QRDMA_WQE_F_SIGNALED,
        .num_sge = 1,
        .sge[0].addr = cpu_to_le64(addr),
        .sge[0].length = cpu_to_le32(len),
        .sge[0].lkey = cpu_to_le32(lkey),
    };

    return w;
}

void qrdma_dp_post_recv(QrdmaDpEnv *e, QrdmaDpQp *qp, uint64_t wr_id,
                        uint64_t addr, uint32_t len, uint32_t lkey)
{
    struct qrdma_rq_wqe w = {
        .wr_id = wr_id,
        .num_sge = cpu_to_le32(1),
        .sge[0].addr = cpu_to_le64(addr),
        .sge[0].length = cpu_to_le32(len),
        .sge[0].lkey = cpu_to_le32(lkey),
    };

    qtest_memwrite(e->t.qts, qp->rq + (qp->rq_pi % 32) * QRDMA_RQ_WQE_SIZE,
                   &w, sizeof(w));
    qp->rq_pi++;
    qrdma_dp_ring_db(e, QRDMA_DB_RQ, qp->qpn, qp->rq_pi);
}

bool qrdma_dp_poll_cq(QrdmaDpEnv *e, QrdmaDpCq *cq, struct qrdma_cqe *cqe)
{
    uint64_t addr = cq->ring + (cq->ci & ((1u << cq->log2) - 1)) * 32;
    uint8_t phase = (cq->ci >> cq->log2) & 1 ? 0 : QRDMA_CQE_F_PHASE;
    int i;

    for (i = 0; i < 200; i++) {
        qtest_memread(e->t.qts, addr, cqe, sizeof(*cqe));
        if ((cqe->flags & QRDMA_CQE_F_PHASE) == phase) {
            cq->ci++;
            qtest_writel(e->t.qts, cq->ci_addr, cq->ci);
            return true;
        }
        g_usleep(100);
    }
    return false;
}

void qrdma_dp_expect_cqe(QrdmaDpEnv *e, QrdmaDpCq *cq, uint64_t wr_id,
                         uint32_t qpn, uint8_t opcode, uint8_t status)
{
    struct qrdma_cqe cqe;

    g_assert_true(qrdma_dp_poll_cq(e, cq, &cqe));
    g_assert_cmphex(cqe.wr_id, ==, wr_id);
    g_assert_cmphex(le32_to_cpu(cqe.qpn), ==, qpn);
    g_assert_cmpuint(cqe.status, ==, status);
    if (status == QRDMA_WC_SUCCESS || opcode >= QRDMA_WC_RECV) {
        g_assert_cmpuint(cqe.opcode, ==, opcode);
    }
}

void qrdma_dp_expect_no_cqe(QrdmaDpEnv *e, QrdmaDpCq *cq)
{
    struct qrdma_cqe cqe;

    g_assert_false(qrdma_dp_poll_cq(e, cq, &cqe));
}

int64_t qrdma_dp_expect_cqe_stepping(QrdmaDpEnv *e, QrdmaDpCq *cq,
                                     uint64_t wr_id, uint32_t qpn,
                                     uint8_t status, int64_t step_ns, int n)
{
    struct qrdma_cqe cqe;
    int64_t waited = 0;

    while (!qrdma_dp_poll_cq(e, cq, &cqe)) {
        g_assert_cmpint(n--, >, 0);
        qtest_clock_step(e->t.qts, step_ns);
        waited += step_ns;
    }
    g_assert_cmphex(cqe.wr_id, ==, wr_id);
    g_assert_cmphex(le32_to_cpu(cqe.qpn), ==, qpn);
    g_assert_cmpuint(cqe.status, ==, status);
    return waited;
}

void qrdma_dp_expect_event(QrdmaDpEnv *e, unsigned n, uint8_t type,
                           uint32_t handle)
{
    uint64_t base = n ? e->eq1 : e->eq0;
    uint32_t *ci = n ? &e->eq1_ci : &e->eq0_ci;
    struct qrdma_eqe eqe;
    int i;

    for (i = 0; i < 200; i++) {
        qtest_memread(e->t.qts, base + (*ci % 256) * 16, &eqe, sizeof(eqe));
        if ((eqe.flags & QRDMA_EQE_F_PHASE) == ((*ci / 256) & 1 ? 0 : 1)) {
            g_assert_cmphex(eqe.type, ==, type);
            g_assert_cmphex(le32_to_cpu(eqe.handle), ==, handle);
            (*ci)++;
            qrdma_t_writel(&e->t, QRDMA_REG_EQ(n) + QRDMA_REG_EQ_CI, *ci);
            return;
        }
        g_usleep(100);
    }
    g_assert_not_reached();
}

void qrdma_dp_write_data(QrdmaDpEnv *e, uint64_t off, const char *s)
{
    qtest_memwrite(e->t.qts, e->data + off, s, strlen(s) + 1);
}

void qrdma_dp_expect_data(QrdmaDpEnv *e, uint64_t off, const char *s)
{
    g_autofree char *buf = g_malloc0(strlen(s) + 1);

    qtest_memread(e->t.qts, e->data + off, buf, strlen(s) + 1);
    g_assert_cmpstr(buf, ==, s);
}

void qrdma_dp_query_device(QrdmaDpEnv *e, struct qrdma_device_attr *attr)
{
    struct qrdma_cmd cmd = { .hdr.opcode = QRDMA_CMD_QUERY_DEVICE };
    uint64_t buf = guest_alloc(e->t.alloc, sizeof(*attr));

    cmd.query.resp_addr = cpu_to_le64(buf);
    cmd.query.resp_len = cpu_to_le32(sizeof(*attr));
    g_assert_cmpuint(qrdma_t_exec(&e->t, &cmd, NULL), ==, 0);
    qtest_memread(e->t.qts, buf, attr, sizeof(*attr));
}

uint32_t qrdma_dp_device_caps(QrdmaDpEnv *e)
{
    struct qrdma_device_attr attr;

    qrdma_dp_query_device(e, &attr);
    return le32_to_cpu(attr.device_caps);
}

struct qrdma_sq_wqe qrdma_dp_wqe_flush(uint64_t wr_id, uint32_t rkey,
                                       uint64_t addr, uint64_t len,
                                       uint8_t type, uint8_t level)
{
    /* a bad SGE: FLUSH has no local side, so it plays no part */
    struct qrdma_sq_wqe w =
        qrdma_dp_wqe_sge(wr_id, QRDMA_WR_FLUSH, 0xdead0000, 8, 0xbad);

    w.flush.remote_addr = cpu_to_le64(addr);
    w.flush.rkey = cpu_to_le32(rkey);
    w.flush.length = cpu_to_le64(len);
    w.flush.type = type;
    w.flush.level = level;
    return w;
}

uint32_t qrdma_dp_alloc_mw(QrdmaDpEnv *e, uint32_t pd, uint8_t type,
                           uint32_t *handle)
{
    struct qrdma_cmd cmd = { .hdr.opcode = QRDMA_CMD_ALLOC_MW };
    struct qrdma_cmpl cmpl;

    cmd.alloc_mw.pd = cpu_to_le32(pd);
    cmd.alloc_mw.type = type;
    g_assert_cmpuint(qrdma_t_exec(&e->t, &cmd, &cmpl), ==, QRDMA_STATUS_OK);
    if (handle) {
        *handle = le32_to_cpu(cmpl.handle);
    }
    return le32_to_cpu(cmpl.data[0]);
}

uint32_t qrdma_dp_next_key(uint32_t key)
{
    return (key & ~0xffu) | ((key + 1) & 0xff);
}

struct qrdma_sq_wqe qrdma_dp_wqe_bind(uint64_t wr_id, uint32_t key,
                                      uint32_t lkey, uint64_t addr,
                                      uint64_t len, uint32_t access)
{
    struct qrdma_sq_wqe w = {
        .wr_id = wr_id,
        .opcode = QRDMA_WR_BIND_MW,
        .flags = QRDMA_WQE_F_SIGNALED,
    };

    w.bind_mw.key = cpu_to_le32(key);
    w.bind_mw.mr_lkey = cpu_to_le32(lkey);
    w.bind_mw.addr = cpu_to_le64(addr);
    w.bind_mw.length = cpu_to_le64(len);
    w.bind_mw.access = cpu_to_le32(access);
    return w;
}

void qrdma_dp_run_wqe(QrdmaDpEnv *e, QrdmaDpQp *qp, struct qrdma_sq_wqe w,
                      uint8_t opcode, uint8_t status)
{
    qrdma_dp_post_send(e, qp, &w);
    qrdma_dp_expect_cqe(e, &e->cq, w.wr_id, qp->qpn, opcode, status);
}

struct qrdma_sq_wqe qrdma_dp_wqe_fast_reg(QrdmaDpEnv *e, uint64_t wr_id,
                                          uint32_t key, uint32_t access)
{
    uint64_t pages[2] = { e->data + 4096 * 12, e->data + 4096 * 13 };
    struct qrdma_sq_wqe w = {
        .wr_id = wr_id,
        .opcode = QRDMA_WR_REG_MR,
        .flags = QRDMA_WQE_F_SIGNALED,
    };

    w.reg_mr.iova = cpu_to_le64(0x50000000);
    w.reg_mr.length = cpu_to_le64(8192);
    w.reg_mr.pages_addr = cpu_to_le64(qrdma_t_page_list(&e->t, pages, 2));
    w.reg_mr.key = cpu_to_le32(key);
    w.reg_mr.access = cpu_to_le32(access);
    w.reg_mr.npages = cpu_to_le32(2);
    w.reg_mr.page_shift = 12;
    return w;
}

void qrdma_dp_other_device(QQrdma *q, unsigned slot, uint8_t ip, QQrdma *qn,
                           QGuestAllocator *alloc, QrdmaDpEnv *en)
{
    QPCIDevice *dev = qpci_device_find(q->dev.bus, QPCI_DEVFN(slot, 0));
    struct qrdma_cmd cmd = { .hdr.opcode = QRDMA_CMD_DEL_GID };

    g_assert_nonnull(dev);
    memset(qn, 0, sizeof(*qn));
    qn->dev = *dev;
    g_free(dev);
    qrdma_dp_env_init(en, qn, alloc);
    en->t.qom_path = g_strdup_printf("/machine/peripheral/qrdma%u", slot - 4);
    g_assert_cmpuint(qrdma_t_exec(&en->t, &cmd, NULL), ==, 0);
    cmd.hdr.opcode = QRDMA_CMD_SET_GID;
    cmd.gid.type = QRDMA_GID_TYPE_ROCE_V2;
    memcpy(cmd.gid.gid, (uint8_t[16]) { [10] = 0xff, [11] = 0xff, 10, 0, 2,
                                        ip }, 16);
    g_assert_cmpuint(qrdma_t_exec(&en->t, &cmd, NULL), ==, 0);
}

void qrdma_dp_second_device(QQrdma *q, QQrdma *q2, QGuestAllocator *alloc,
                            QrdmaDpEnv *e1, QrdmaDpEnv *e2)
{
    qrdma_dp_env_init(e1, q, alloc);
    qrdma_dp_other_device(q, 5, 16, q2, alloc, e2);
    e1->peer_ip = 16;
}

void qrdma_dp_rc_to_rtr(QrdmaDpEnv *e1, QrdmaDpQp *a, QrdmaDpEnv *e2,
                        QrdmaDpQp *b)
{
    g_assert_cmpuint(qrdma_dp_create_qp(e1, a, QRDMA_QPT_RC, 0, &e1->cq,
                                        &e1->cq), ==, 0);
    g_assert_cmpuint(qrdma_dp_create_qp(e2, b, QRDMA_QPT_RC, 0, &e2->cq,
                                        &e2->cq), ==, 0);
    qrdma_dp_to_rtr(e1, a, b->qpn);
    qrdma_dp_to_rtr(e2, b, a->qpn);
}

void qrdma_dp_connect_rc(QrdmaDpEnv *e1, QrdmaDpQp *a, QrdmaDpEnv *e2,
                         QrdmaDpQp *b, bool b_rts)
{
    qrdma_dp_rc_to_rtr(e1, a, e2, b);
    qrdma_dp_to_rts(e1, a, 0);
    if (b_rts) {
        qrdma_dp_to_rts(e2, b, 0);
    }
}

const uint8_t qrdma_dp_wire_mac0[6] = { 0x52, 0x54, 0, 0, 2, 0x0f };

const uint8_t qrdma_dp_wire_mac1[6] = { 0x52, 0x54, 0, 0, 2, 0x10 };

static void wire_cleanup(void *sockets)
{
    int *sv = sockets;

    close(sv[0]);
    qos_invalidate_command_line();
    close(sv[1]);
    g_free(sv);
}

void *qrdma_dp_wire_setup(GString *cmd_line, void *arg)
{
    int *sv = g_new(int, 2);

    g_assert_cmpint(socketpair(PF_UNIX, SOCK_DGRAM, 0, sv), ==, 0);
    g_string_append_printf(cmd_line,
        " -netdev hubport,id=w0,hubid=7 -netdev hubport,id=w1,hubid=7"
        " -netdev dgram,id=cap,local.type=fd,local.str=%d"
        " -netdev hubport,id=w2,hubid=7,netdev=cap"
        " -device qrdma-fabric,id=f1"
        " -device qrdma,addr=05.0,id=qrdma1,fabric=f1,netdev=w1,mac="
        QRDMA_DP_WIRE_MAC1 " ", sv[1]);
    g_test_queue_destroy(wire_cleanup, sv);
    return sv;
}

void qrdma_dp_wire_envs(void *obj, QGuestAllocator *alloc, QQrdma *q1,
                        QrdmaDpEnv *e0, QrdmaDpEnv *e1)
{
    qrdma_dp_env_init(e0, obj, alloc);
    qrdma_dp_other_device(obj, 5, 16, q1, alloc, e1);
    e0->peer_ip = 16;
    memcpy(e0->peer_mac, qrdma_dp_wire_mac1, 6);
    memcpy(e1->peer_mac, qrdma_dp_wire_mac0, 6);
}

size_t qrdma_dp_wire_recv(int fd, uint8_t *buf)
{
    struct pollfd p = { .fd = fd, .events = POLLIN };
    ssize_t n;

    if (poll(&p, 1, 2000) != 1) {
        return 0;
    }
    n = recv(fd, buf, QRDMA_DP_WIRE_FRAME_MAX, 0);
    g_assert_cmpint(n, >, 0);
    return n;
}

void qrdma_dp_wire_drain(int fd)
{
    uint8_t buf[QRDMA_DP_WIRE_FRAME_MAX];
    struct pollfd p = { .fd = fd, .events = POLLIN };

    while (poll(&p, 1, 0) == 1) {
        g_assert_cmpint(recv(fd, buf, sizeof(buf), 0), >, 0);
    }
}

uint16_t qrdma_dp_wire_ipsum(const uint8_t *h)
{
    uint32_t sum = 0;
    int i;

    for (i = 0; i < 20; i += 2) {
        sum += lduw_be_p(h + i);
    }
    while (sum >> 16) {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    return ~sum & 0xffff;
}

/* CRC-32 as Ethernet computes it, a bit at a time: the test's own. */
static uint32_t wire_crc32(uint32_t crc, const uint8_t *p, size_t len)
{
    int k;

    crc = ~crc;
    while (len--) {
        crc ^= *p++;
        for (k = 0; k < 8; k++) {
            crc = crc >> 1 ^ (0xedb88320u & -(crc & 1));
        }
    }
    return ~crc;
}

/*
 * The ICRC of an untagged IPv4 RoCEv2 frame of len bytes, by annex A17:
 * over 8 bytes of ones, then IP to the end of the payload with TOS, TTL,
 * the IP and UDP checksums and the BTH's reserved byte taken as ones.
 */
static uint32_t wire_icrc(const uint8_t *f, size_t len)
{
    static const uint8_t ones[8] = { 0xff, 0xff, 0xff, 0xff,
                                     0xff, 0xff, 0xff, 0xff };
    uint8_t m[QRDMA_DP_WIRE_FRAME_MAX];

    memcpy(m, f, len);
    m[QRDMA_DP_WIRE_IP + 1] = m[QRDMA_DP_WIRE_IP + 8] = 0xff;
    m[QRDMA_DP_WIRE_IP + 10] = m[QRDMA_DP_WIRE_IP + 11] = 0xff;
    m[QRDMA_DP_WIRE_UDP + 6] = m[QRDMA_DP_WIRE_UDP + 7] = 0xff;
    m[QRDMA_DP_WIRE_BTH + 4] = 0xff;
    return wire_crc32(wire_crc32(0, ones, 8), m + QRDMA_DP_WIRE_IP,
                      len - QRDMA_DP_WIRE_IP - 4);
}

void qrdma_dp_wire_set_icrc(uint8_t *f, size_t len)
{
    uint32_t icrc = wire_icrc(f, len);

    memcpy(f + len - 4, &icrc, 4);
    if (G_BYTE_ORDER == G_BIG_ENDIAN) {
        stl_le_p(f + len - 4, icrc);
    }
}

uint8_t qrdma_dp_wire_check_frame(const uint8_t *f, size_t len)
{
    const uint8_t *dst = f[11] == 0x0f ? qrdma_dp_wire_mac1 :
                                         qrdma_dp_wire_mac0;
    uint32_t icrc;
    uint8_t pad;

    g_assert_cmpuint(len, >=, QRDMA_DP_WIRE_BTH + 12 + 4);
    g_assert_cmpmem(f, 6, dst, 6);
    g_assert_cmphex(lduw_be_p(f + 12), ==, 0x0800);
    g_assert_cmphex(f[QRDMA_DP_WIRE_IP], ==, 0x45);
    g_assert_cmpuint(lduw_be_p(f + QRDMA_DP_WIRE_IP + 2), ==,
                     len - QRDMA_DP_WIRE_IP);
    g_assert_cmphex(lduw_be_p(f + QRDMA_DP_WIRE_IP + 6), ==, 0x4000);
    g_assert_cmpuint(f[QRDMA_DP_WIRE_IP + 9], ==, 17);
    g_assert_cmphex(qrdma_dp_wire_ipsum(f + QRDMA_DP_WIRE_IP), ==, 0);
    g_assert_cmphex(f[QRDMA_DP_WIRE_IP + 12], ==, 10);
    g_assert_cmphex(f[QRDMA_DP_WIRE_IP + 19], ==, f[11] == 0x0f ? 16 : 15);
    g_assert_cmphex(lduw_be_p(f + QRDMA_DP_WIRE_UDP), >=, 0xc000);
    g_assert_cmpuint(lduw_be_p(f + QRDMA_DP_WIRE_UDP + 2), ==, 4791);
    g_assert_cmpuint(lduw_be_p(f + QRDMA_DP_WIRE_UDP + 4), ==,
                     len - QRDMA_DP_WIRE_UDP);
    g_assert_cmphex(lduw_be_p(f + QRDMA_DP_WIRE_UDP + 6), ==, 0);
    g_assert_cmphex(f[QRDMA_DP_WIRE_BTH + 1] & 0xf, ==, 0);
    g_assert_cmphex(lduw_be_p(f + QRDMA_DP_WIRE_BTH + 2), ==, 0xffff);
    pad = (f[QRDMA_DP_WIRE_BTH + 1] >> 4) & 3;
    g_assert_cmpuint((len - QRDMA_DP_WIRE_BTH - 4) % 4, ==, 0);
    g_assert_true(pad == 0 || f[len - 5] == 0);
    icrc = ldl_le_p(f + len - 4);
    g_assert_cmphex(icrc, ==, wire_icrc(f, len));
    return f[QRDMA_DP_WIRE_BTH];
}

void qrdma_dp_wire_send(int fd, const uint8_t *f, size_t len)
{
    g_assert_cmpint(send(fd, f, len, 0), ==, len);
}

void qrdma_dp_wire_expect_count(QrdmaDpEnv *e, const char *name, uint64_t want)
{
    int i;

    for (i = 0; i < 200 && qrdma_t_qom_get(&e->t, name) != want; i++) {
        g_usleep(10 * 1000);
    }
    g_assert_cmpuint(qrdma_t_qom_get(&e->t, name), ==, want);
}

static void relay_cleanup(void *sockets)
{
    int *sv = sockets;

    close(sv[0]);
    close(sv[2]);
    qos_invalidate_command_line();
    close(sv[1]);
    close(sv[3]);
    g_free(sv);
}

void *qrdma_dp_relay_setup(GString *cmd_line, void *arg)
{
    int *sv = g_new(int, 4);

    g_assert_cmpint(socketpair(PF_UNIX, SOCK_DGRAM, 0, sv), ==, 0);
    g_assert_cmpint(socketpair(PF_UNIX, SOCK_DGRAM, 0, sv + 2), ==, 0);
    g_string_append_printf(cmd_line,
        " -netdev dgram,id=w0,local.type=fd,local.str=%d"
        " -netdev dgram,id=w1,local.type=fd,local.str=%d"
        " -device qrdma-fabric,id=f1"
        " -device qrdma,addr=05.0,id=qrdma1,fabric=f1,netdev=w1,mac="
        QRDMA_DP_WIRE_MAC1 " ", sv[1], sv[3]);
    g_test_queue_destroy(relay_cleanup, sv);
    return sv;
}

int qrdma_dp_relay(int from, int to, int want, uint8_t *ops)
{
    uint8_t f[QRDMA_DP_WIRE_FRAME_MAX];
    size_t n;
    int k = 0;

    while (k < want && (n = qrdma_dp_wire_recv(from, f)) != 0) {
        ops[k++] = qrdma_dp_wire_check_frame(f, n);
        qrdma_dp_wire_send(to, f, n);
    }
    return k;
}

bool qrdma_dp_relay_quiet(int fd)
{
    struct pollfd p = { .fd = fd, .events = POLLIN };

    return poll(&p, 1, 300) == 0;
}

void qrdma_dp_wire_fix(uint8_t *f, size_t len)
{
    stw_be_p(f + QRDMA_DP_WIRE_IP + 2, len - QRDMA_DP_WIRE_IP);
    stw_be_p(f + QRDMA_DP_WIRE_UDP + 4, len - QRDMA_DP_WIRE_UDP);
    stw_be_p(f + QRDMA_DP_WIRE_IP + 10, 0);
    stw_be_p(f + QRDMA_DP_WIRE_IP + 10,
             qrdma_dp_wire_ipsum(f + QRDMA_DP_WIRE_IP));
    qrdma_dp_wire_set_icrc(f, len);
}

uint32_t qrdma_dp_wire_psn(const uint8_t *f)
{
    return ldl_be_p(f + QRDMA_DP_WIRE_BTH + 8) & 0xffffff;
}
