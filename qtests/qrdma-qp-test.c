/*
 * QTest testcase for qrdma queue pairs: the lifecycle rules the device
 * decides, named by their ids in the project's
 * docs/specs/qrdma-lifecycle.rst (S2...S40).
 *
 * Copyright (c) 2026 The qrdma developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/module.h"
#include "libqtest.h"
#include "libqos/libqos-malloc.h"
#include "qrdma-qos.h"

typedef struct QpEnv {
    QrdmaT t;
    uint32_t pd;
    uint32_t cq;
} QpEnv;

static void env_init(QpEnv *e, void *obj, QGuestAllocator *alloc)
{
    qrdma_t_init(&e->t, obj, alloc, 4);
    e->pd = qrdma_t_alloc_pd(&e->t, 0);
    e->cq = qrdma_t_cq(&e->t, 0);
    /* RTR of connected QPs takes a source GID */
    qrdma_t_set_gid(&e->t, 0);
}

static QrdmaTQp qp_params(QpEnv *e, uint8_t type)
{
    QrdmaTQp p = {
        .pd = e->pd,
        .send_cq = e->cq,
        .recv_cq = e->cq,
        .type = type,
        .max_send_wr = 4,
        .max_recv_wr = 4,
        .max_send_sge = 1,
        .max_recv_sge = 1,
    };

    return p;
}

static uint32_t qp_new(QpEnv *e, uint8_t type)
{
    QrdmaTQp p = qp_params(e, type);
    uint32_t qpn;

    g_assert_cmpuint(qrdma_t_create_qp(&e->t, &p, &qpn, NULL), ==,
                     QRDMA_STATUS_OK);
    return qpn;
}

static uint8_t qp_state(QpEnv *e, uint32_t qpn)
{
    struct qrdma_query_qp_resp r;

    g_assert_cmpuint(qrdma_t_query_qp(&e->t, 0, qpn, &r), ==,
                     QRDMA_STATUS_OK);
    return r.attr.qp_state;
}

/* Valid values for every attribute; a test picks them with a mask. */
static struct qrdma_qp_attr attrs(uint32_t mask, uint8_t state)
{
    struct qrdma_qp_attr a = {
        .attr_mask = cpu_to_le32(mask),
        .qp_state = state,
        .path_mtu = 3,
        .qkey = cpu_to_le32(0x11111111),
        .rq_psn = cpu_to_le32(100),
        .sq_psn = cpu_to_le32(200),
        .dest_qp_num = cpu_to_le32(0x42),
        .qp_access_flags = cpu_to_le32(QRDMA_ACCESS_REMOTE_WRITE |
                                       QRDMA_ACCESS_REMOTE_READ),
        .max_rd_atomic = 4,
        .max_dest_rd_atomic = 4,
        .min_rnr_timer = 12,
        .port_num = 1,
        .timeout = 14,
        .retry_cnt = 7,
        .rnr_retry = 7,
        .av.sgid_index = 0,
        .av.hop_limit = 64,
    };

    return a;
}

static uint8_t modify(QpEnv *e, uint32_t qpn, uint32_t mask, uint8_t state)
{
    struct qrdma_qp_attr a = attrs(mask, state);

    return qrdma_t_modify_qp(&e->t, 0, qpn, &a);
}

/* The attributes the IB spec requires, per QP type and transition. */
static uint32_t required(uint8_t type, uint8_t from, uint8_t to)
{
    if (from == QRDMA_QPS_RESET && to == QRDMA_QPS_INIT) {
        switch (type) {
        case QRDMA_QPT_UD:
            return QRDMA_QP_ATTR_PKEY_INDEX | QRDMA_QP_ATTR_PORT |
                   QRDMA_QP_ATTR_QKEY;
        case QRDMA_QPT_GSI:
            return QRDMA_QP_ATTR_PKEY_INDEX | QRDMA_QP_ATTR_QKEY;
        default:
            return QRDMA_QP_ATTR_PKEY_INDEX | QRDMA_QP_ATTR_PORT |
                   QRDMA_QP_ATTR_ACCESS_FLAGS;
        }
    }
    if (from == QRDMA_QPS_INIT && to == QRDMA_QPS_RTR) {
        switch (type) {
        case QRDMA_QPT_RC:
            return QRDMA_QP_ATTR_AV | QRDMA_QP_ATTR_PATH_MTU |
                   QRDMA_QP_ATTR_DEST_QPN | QRDMA_QP_ATTR_RQ_PSN |
                   QRDMA_QP_ATTR_MAX_DEST_RD_ATOMIC |
                   QRDMA_QP_ATTR_MIN_RNR_TIMER;
        case QRDMA_QPT_UC:
            return QRDMA_QP_ATTR_AV | QRDMA_QP_ATTR_PATH_MTU |
                   QRDMA_QP_ATTR_DEST_QPN | QRDMA_QP_ATTR_RQ_PSN;
        default:
            return 0;
        }
    }
    if (from == QRDMA_QPS_RTR && to == QRDMA_QPS_RTS) {
        if (type == QRDMA_QPT_RC) {
            return QRDMA_QP_ATTR_TIMEOUT | QRDMA_QP_ATTR_RETRY_CNT |
                   QRDMA_QP_ATTR_RNR_RETRY | QRDMA_QP_ATTR_SQ_PSN |
                   QRDMA_QP_ATTR_MAX_QP_RD_ATOMIC;
        }
        return QRDMA_QP_ATTR_SQ_PSN;
    }
    return 0;
}

/* An attribute the transition does not take at all, for that type. */
static uint32_t foreign(uint8_t type, uint8_t from, uint8_t to)
{
    if (to == QRDMA_QPS_RESET || to == QRDMA_QPS_ERR) {
        return QRDMA_QP_ATTR_QKEY;
    }
    if (from == QRDMA_QPS_RESET) {
        return QRDMA_QP_ATTR_SQ_PSN;
    }
    if (to == QRDMA_QPS_RTR) {
        return type == QRDMA_QPT_UD ? QRDMA_QP_ATTR_AV : QRDMA_QP_ATTR_SQ_PSN;
    }
    return QRDMA_QP_ATTR_RQ_PSN;
}

static const bool valid_transition[7][7] = {
    [QRDMA_QPS_RESET] = { [QRDMA_QPS_RESET] = 1, [QRDMA_QPS_INIT] = 1 },
    [QRDMA_QPS_INIT] = { [QRDMA_QPS_RESET] = 1, [QRDMA_QPS_ERR] = 1,
                         [QRDMA_QPS_INIT] = 1, [QRDMA_QPS_RTR] = 1 },
    [QRDMA_QPS_RTR] = { [QRDMA_QPS_RESET] = 1, [QRDMA_QPS_ERR] = 1,
                        [QRDMA_QPS_RTS] = 1 },
    [QRDMA_QPS_RTS] = { [QRDMA_QPS_RESET] = 1, [QRDMA_QPS_ERR] = 1,
                        [QRDMA_QPS_RTS] = 1, [QRDMA_QPS_SQD] = 1 },
    [QRDMA_QPS_SQD] = { [QRDMA_QPS_RESET] = 1, [QRDMA_QPS_ERR] = 1,
                        [QRDMA_QPS_RTS] = 1, [QRDMA_QPS_SQD] = 1 },
    [QRDMA_QPS_SQE] = { [QRDMA_QPS_RESET] = 1, [QRDMA_QPS_ERR] = 1,
                        [QRDMA_QPS_RTS] = 1 },
    [QRDMA_QPS_ERR] = { [QRDMA_QPS_RESET] = 1, [QRDMA_QPS_ERR] = 1 },
};

/*
 * One step of the walk: every target the table lacks fails with the QP
 * unchanged; so does the step without each required attribute, and with
 * an attribute it does not take; then the step itself works.
 */
static void step(QpEnv *e, uint32_t qpn, uint8_t type, uint8_t from,
                 uint8_t to)
{
    uint32_t req = required(type, from, to);
    uint8_t other;
    int bit;

    g_assert_cmpuint(qp_state(e, qpn), ==, from);
    for (other = 0; other < 7; other++) {
        if (!valid_transition[from][other]) {
            g_assert_cmpuint(modify(e, qpn, QRDMA_QP_ATTR_STATE |
                                            required(type, from,
                                                                 other),
                                    other), ==, QRDMA_STATUS_BAD_STATE);
            g_assert_cmpuint(qp_state(e, qpn), ==, from);
        }
    }
    for (bit = 0; bit < 32; bit++) {
        if (req & (1u << bit)) {
            g_assert_cmpuint(modify(e, qpn, (QRDMA_QP_ATTR_STATE |
                                             req) & ~(1u << bit),
                                    to), ==, QRDMA_STATUS_BAD_PARAM);
            g_assert_cmpuint(qp_state(e, qpn), ==, from);
        }
    }
    g_assert_cmpuint(modify(e, qpn, QRDMA_QP_ATTR_STATE | req |
                                    foreign(type, from, to),
                            to), ==, QRDMA_STATUS_BAD_PARAM);
    g_assert_cmpuint(qp_state(e, qpn), ==, from);

    g_assert_cmpuint(modify(e, qpn, QRDMA_QP_ATTR_STATE | req, to), ==,
                     QRDMA_STATUS_OK);
    g_assert_cmpuint(qp_state(e, qpn), ==, to);
}

static void walk(QpEnv *e, uint8_t type)
{
    static const uint8_t path[] = {
        QRDMA_QPS_RESET, QRDMA_QPS_INIT, QRDMA_QPS_INIT, QRDMA_QPS_RTR,
        QRDMA_QPS_RTS, QRDMA_QPS_RTS, QRDMA_QPS_SQD, QRDMA_QPS_SQD,
        QRDMA_QPS_RTS, QRDMA_QPS_ERR, QRDMA_QPS_ERR, QRDMA_QPS_RESET,
        QRDMA_QPS_INIT, QRDMA_QPS_ERR, QRDMA_QPS_RESET,
    };
    uint32_t qpn = qp_new(e, type);
    size_t i;

    for (i = 0; i + 1 < ARRAY_SIZE(path); i++) {
        step(e, qpn, type, path[i], path[i + 1]);
    }
}

/* S40 */
static void test_s40_state_table_rc(void *obj, void *data,
                                    QGuestAllocator *alloc)
{
    QpEnv e;

    env_init(&e, obj, alloc);
    walk(&e, QRDMA_QPT_RC);
}

/* S40 */
static void test_s40_state_table_uc(void *obj, void *data,
                                    QGuestAllocator *alloc)
{
    QpEnv e;

    env_init(&e, obj, alloc);
    walk(&e, QRDMA_QPT_UC);
}

/* S40 */
static void test_s40_state_table_ud(void *obj, void *data,
                                    QGuestAllocator *alloc)
{
    QpEnv e;

    env_init(&e, obj, alloc);
    walk(&e, QRDMA_QPT_UD);
}

/* S40: bad attribute values fail and leave the QP as it was. */
static void test_s40_bad_values(void *obj, void *data,
                                QGuestAllocator *alloc)
{
    uint32_t init = QRDMA_QP_ATTR_STATE | QRDMA_QP_ATTR_PKEY_INDEX |
                    QRDMA_QP_ATTR_PORT | QRDMA_QP_ATTR_ACCESS_FLAGS;
    uint32_t rtr = QRDMA_QP_ATTR_STATE | required(QRDMA_QPT_RC, QRDMA_QPS_INIT,
                                       QRDMA_QPS_RTR);
    struct qrdma_query_qp_resp r;
    struct qrdma_qp_attr a;
    uint32_t qpn;
    QpEnv e;

    env_init(&e, obj, alloc);
    qpn = qp_new(&e, QRDMA_QPT_RC);

    a = attrs(init, QRDMA_QPS_INIT);
    a.port_num = 2;
    g_assert_cmpuint(qrdma_t_modify_qp(&e.t, 0, qpn, &a), ==,
                     QRDMA_STATUS_BAD_PARAM);
    a = attrs(init, QRDMA_QPS_INIT);
    a.pkey_index = cpu_to_le16(1);
    g_assert_cmpuint(qrdma_t_modify_qp(&e.t, 0, qpn, &a), ==,
                     QRDMA_STATUS_BAD_PARAM);
    a = attrs(init, QRDMA_QPS_INIT);
    /* bit 9: persistent flush, a right the device never grants */
    a.qp_access_flags = cpu_to_le32(0x200);
    g_assert_cmpuint(qrdma_t_modify_qp(&e.t, 0, qpn, &a), ==,
                     QRDMA_STATUS_BAD_PARAM);
    a = attrs(init | (1u << 25), QRDMA_QPS_INIT);
    g_assert_cmpuint(qrdma_t_modify_qp(&e.t, 0, qpn, &a), ==,
                     QRDMA_STATUS_BAD_PARAM);
    a = attrs(init, 7);
    g_assert_cmpuint(qrdma_t_modify_qp(&e.t, 0, qpn, &a), ==,
                     QRDMA_STATUS_BAD_PARAM);
    a = attrs(init | QRDMA_QP_ATTR_CUR_STATE, QRDMA_QPS_INIT);
    a.cur_qp_state = QRDMA_QPS_RTS;
    g_assert_cmpuint(qrdma_t_modify_qp(&e.t, 0, qpn, &a), ==,
                     QRDMA_STATUS_BAD_PARAM);
    g_assert_cmpuint(qp_state(&e, qpn), ==, QRDMA_QPS_RESET);

    g_assert_cmpuint(modify(&e, qpn, init, QRDMA_QPS_INIT), ==,
                     QRDMA_STATUS_OK);
    a = attrs(rtr, QRDMA_QPS_RTR);
    a.path_mtu = 6;
    g_assert_cmpuint(qrdma_t_modify_qp(&e.t, 0, qpn, &a), ==,
                     QRDMA_STATUS_BAD_PARAM);
    a = attrs(rtr, QRDMA_QPS_RTR);
    a.rq_psn = cpu_to_le32(0x1000000);
    g_assert_cmpuint(qrdma_t_modify_qp(&e.t, 0, qpn, &a), ==,
                     QRDMA_STATUS_BAD_PARAM);
    a = attrs(rtr, QRDMA_QPS_RTR);
    a.min_rnr_timer = 32;
    g_assert_cmpuint(qrdma_t_modify_qp(&e.t, 0, qpn, &a), ==,
                     QRDMA_STATUS_BAD_PARAM);
    a = attrs(rtr, QRDMA_QPS_RTR);
    a.max_dest_rd_atomic = 129;
    g_assert_cmpuint(qrdma_t_modify_qp(&e.t, 0, qpn, &a), ==,
                     QRDMA_STATUS_BAD_PARAM);
    a = attrs(rtr, QRDMA_QPS_RTR);
    a.av.sgid_index = 5;
    g_assert_cmpuint(qrdma_t_modify_qp(&e.t, 0, qpn, &a), ==,
                     QRDMA_STATUS_BAD_PARAM);
    a = attrs(rtr | QRDMA_QP_ATTR_ALT_PATH, QRDMA_QPS_RTR);
    g_assert_cmpuint(qrdma_t_modify_qp(&e.t, 0, qpn, &a), ==,
                     QRDMA_STATUS_NOT_SUPPORTED);

    /* nothing of those stuck */
    g_assert_cmpuint(qrdma_t_query_qp(&e.t, 0, qpn, &r), ==, QRDMA_STATUS_OK);
    g_assert_cmpuint(r.attr.qp_state, ==, QRDMA_QPS_INIT);
    g_assert_cmpuint(le32_to_cpu(r.attr.rq_psn), ==, 0);
    g_assert_cmpuint(r.attr.path_mtu, ==, 0);

    g_assert_cmpuint(modify(&e, qpn, rtr, QRDMA_QPS_RTR), ==,
                     QRDMA_STATUS_OK);
    g_assert_cmpuint(qrdma_t_query_qp(&e.t, 0, qpn, &r), ==, QRDMA_STATUS_OK);
    g_assert_cmpuint(le32_to_cpu(r.attr.rq_psn), ==, 100);
    g_assert_cmpuint(le32_to_cpu(r.attr.dest_qp_num), ==, 0x42);
    g_assert_cmpuint(r.attr.path_mtu, ==, 3);
}

/* S2 */
static void test_s2_caps(void *obj, void *data, QGuestAllocator *alloc)
{
    struct qrdma_create_qp_resp r;
    struct qrdma_query_qp_resp q;
    QrdmaTQp p;
    uint32_t qpn;
    QpEnv e;

    env_init(&e, obj, alloc);
    p = qp_params(&e, QRDMA_QPT_RC);
    p.max_send_wr = 3;
    p.max_recv_wr = 5;
    p.max_send_sge = 2;
    p.max_recv_sge = 3;
    p.max_inline_data = 10;
    g_assert_cmpuint(qrdma_t_create_qp(&e.t, &p, &qpn, &r), ==,
                     QRDMA_STATUS_OK);
    g_assert_cmpuint(le32_to_cpu(r.max_send_wr), >=, 3);
    g_assert_cmpuint(le32_to_cpu(r.max_recv_wr), >=, 5);
    g_assert_cmpuint(le32_to_cpu(r.max_send_sge), >=, 2);
    g_assert_cmpuint(le32_to_cpu(r.max_recv_sge), >=, 3);
    g_assert_cmpuint(le32_to_cpu(r.max_inline_data), >=, 10);
    /* the real ones: the query says the same */
    g_assert_cmpuint(qrdma_t_query_qp(&e.t, 0, qpn, &q), ==,
                     QRDMA_STATUS_OK);
    g_assert_cmpmem(&q.cap, sizeof(q.cap), &r, sizeof(r));

    /* exactly the limits still work */
    p.max_send_wr = 256;
    p.max_recv_wr = 256;
    p.max_send_sge = QRDMA_MAX_SEND_SGE;
    p.max_recv_sge = QRDMA_MAX_RECV_SGE;
    p.max_inline_data = QRDMA_MAX_INLINE;
    g_assert_cmpuint(qrdma_t_create_qp(&e.t, &p, NULL, &r), ==,
                     QRDMA_STATUS_OK);
    g_assert_cmpuint(le32_to_cpu(r.max_send_wr), ==, 256);

    /* one over any limit fails, never truncated (max-qp-wr=256) */
    p = qp_params(&e, QRDMA_QPT_RC);
    p.max_send_wr = 257;
    g_assert_cmpuint(qrdma_t_create_qp(&e.t, &p, NULL, NULL), ==,
                     QRDMA_STATUS_BAD_PARAM);
    p = qp_params(&e, QRDMA_QPT_RC);
    p.max_recv_wr = 257;
    g_assert_cmpuint(qrdma_t_create_qp(&e.t, &p, NULL, NULL), ==,
                     QRDMA_STATUS_BAD_PARAM);
    p = qp_params(&e, QRDMA_QPT_RC);
    p.max_send_sge = QRDMA_MAX_SEND_SGE + 1;
    g_assert_cmpuint(qrdma_t_create_qp(&e.t, &p, NULL, NULL), ==,
                     QRDMA_STATUS_BAD_PARAM);
    p = qp_params(&e, QRDMA_QPT_RC);
    p.max_recv_sge = QRDMA_MAX_RECV_SGE + 1;
    g_assert_cmpuint(qrdma_t_create_qp(&e.t, &p, NULL, NULL), ==,
                     QRDMA_STATUS_BAD_PARAM);
    p = qp_params(&e, QRDMA_QPT_RC);
    p.max_inline_data = QRDMA_MAX_INLINE + 1;
    g_assert_cmpuint(qrdma_t_create_qp(&e.t, &p, NULL, NULL), ==,
                     QRDMA_STATUS_BAD_PARAM);
    g_assert_cmpuint(qrdma_t_qom_get(&e.t, "resources"), ==, 4);
}

/* S3, and the GSI QP */
static void test_s3_types(void *obj, void *data, QGuestAllocator *alloc)
{
    uint32_t srq, qpn, uctx;
    QrdmaTQp p;
    QpEnv e;

    env_init(&e, obj, alloc);
    g_assert_cmpuint(qrdma_t_create_srq(&e.t, 0, e.pd, 16, &srq), ==,
                     QRDMA_STATUS_OK);

    qp_new(&e, QRDMA_QPT_RC);
    qp_new(&e, QRDMA_QPT_UC);
    qp_new(&e, QRDMA_QPT_UD);

    p = qp_params(&e, QRDMA_QPT_RC);
    p.srq = srq;
    g_assert_cmpuint(qrdma_t_create_qp(&e.t, &p, NULL, NULL), ==,
                     QRDMA_STATUS_OK);
    p.type = QRDMA_QPT_UD;
    g_assert_cmpuint(qrdma_t_create_qp(&e.t, &p, NULL, NULL), ==,
                     QRDMA_STATUS_OK);
    p.type = QRDMA_QPT_UC;
    g_assert_cmpuint(qrdma_t_create_qp(&e.t, &p, NULL, NULL), ==,
                     QRDMA_STATUS_BAD_PARAM);
    p.type = QRDMA_QPT_GSI;
    g_assert_cmpuint(qrdma_t_create_qp(&e.t, &p, NULL, NULL), ==,
                     QRDMA_STATUS_BAD_PARAM);

    /* SMI (0), RAW_PACKET (8) and unknown types are refused clearly */
    p = qp_params(&e, 0);
    g_assert_cmpuint(qrdma_t_create_qp(&e.t, &p, NULL, NULL), ==,
                     QRDMA_STATUS_NOT_SUPPORTED);
    p.type = 8;
    g_assert_cmpuint(qrdma_t_create_qp(&e.t, &p, NULL, NULL), ==,
                     QRDMA_STATUS_NOT_SUPPORTED);

    /* GSI: QP 1, one only, the kernel's */
    p = qp_params(&e, QRDMA_QPT_GSI);
    g_assert_cmpuint(qrdma_t_create_qp(&e.t, &p, &qpn, NULL), ==,
                     QRDMA_STATUS_OK);
    g_assert_cmphex(qpn, ==, 1);
    g_assert_cmpuint(qrdma_t_create_qp(&e.t, &p, NULL, NULL), ==,
                     QRDMA_STATUS_BUSY);
    step(&e, qpn, QRDMA_QPT_GSI, QRDMA_QPS_RESET, QRDMA_QPS_INIT);
    step(&e, qpn, QRDMA_QPT_GSI, QRDMA_QPS_INIT, QRDMA_QPS_RTR);
    step(&e, qpn, QRDMA_QPT_GSI, QRDMA_QPS_RTR, QRDMA_QPS_RTS);
    g_assert_cmpuint(qrdma_t_destroy(&e.t, QRDMA_CMD_DESTROY_QP, 0, 1), ==,
                     QRDMA_STATUS_OK);
    uctx = qrdma_t_create_uctx(&e.t);
    p.uctx = uctx;
    p.pd = qrdma_t_alloc_pd(&e.t, uctx);
    p.send_cq = p.recv_cq = qrdma_t_cq(&e.t, uctx);
    g_assert_cmpuint(qrdma_t_create_qp(&e.t, &p, NULL, NULL), ==,
                     QRDMA_STATUS_NOT_OWNER);
    p = qp_params(&e, QRDMA_QPT_GSI);
    g_assert_cmpuint(qrdma_t_create_qp(&e.t, &p, &qpn, NULL), ==,
                     QRDMA_STATUS_OK);
    g_assert_cmphex(qpn, ==, 1);
}

/* S4 */
static void test_s4_srq_ignores_recv_caps(void *obj, void *data,
                                          QGuestAllocator *alloc)
{
    struct qrdma_create_qp_resp r;
    uint32_t srq;
    QrdmaTQp p;
    QpEnv e;

    env_init(&e, obj, alloc);
    g_assert_cmpuint(qrdma_t_create_srq(&e.t, 0, e.pd, 16, &srq), ==,
                     QRDMA_STATUS_OK);
    p = qp_params(&e, QRDMA_QPT_RC);
    p.srq = srq;
    p.max_recv_wr = 1u << 30;
    p.max_recv_sge = 1000;
    g_assert_cmpuint(qrdma_t_create_qp(&e.t, &p, NULL, &r), ==,
                     QRDMA_STATUS_OK);
    g_assert_cmpuint(le32_to_cpu(r.max_recv_wr), ==, 0);
    g_assert_cmpuint(le32_to_cpu(r.max_recv_sge), ==, 0);

    /* and an SRQ in use is not destroyed */
    g_assert_cmpuint(qrdma_t_destroy(&e.t, QRDMA_CMD_DESTROY_SRQ, 0, srq), ==,
                     QRDMA_STATUS_BUSY);
}

/* S7 */
static void test_s7_reset_and_unique(void *obj, void *data,
                                     QGuestAllocator *alloc)
{
    uint32_t qpn[16];
    QpEnv e;
    int i, j;

    env_init(&e, obj, alloc);
    for (i = 0; i < 16; i++) {
        qpn[i] = qp_new(&e, i % 2 ? QRDMA_QPT_UD : QRDMA_QPT_RC);
        g_assert_cmpuint(qp_state(&e, qpn[i]), ==, QRDMA_QPS_RESET);
        g_assert_cmphex(qpn[i], >, 1);
        g_assert_cmphex(qpn[i], <=, 0xffffff);
        for (j = 0; j < i; j++) {
            g_assert_cmphex(qpn[i], !=, qpn[j]);
        }
    }
    /* a number freed and taken again is still unique among live QPs */
    g_assert_cmpuint(qrdma_t_destroy(&e.t, QRDMA_CMD_DESTROY_QP, 0, qpn[3]),
                     ==, QRDMA_STATUS_OK);
    qpn[3] = qp_new(&e, QRDMA_QPT_RC);
    for (j = 0; j < 16; j++) {
        g_assert_true(j == 3 || qpn[j] != qpn[3]);
    }
}

static void drive_to(QpEnv *e, uint32_t qpn, uint8_t type, uint8_t target)
{
    static const uint8_t path[] = {
        QRDMA_QPS_RESET, QRDMA_QPS_INIT, QRDMA_QPS_RTR, QRDMA_QPS_RTS,
        QRDMA_QPS_SQD,
    };
    size_t i;

    if (target == QRDMA_QPS_ERR) {
        drive_to(e, qpn, type, QRDMA_QPS_RTS);
        g_assert_cmpuint(modify(e, qpn, QRDMA_QP_ATTR_STATE, QRDMA_QPS_ERR), ==,
                         QRDMA_STATUS_OK);
        return;
    }
    for (i = 0; path[i] != target; i++) {
        g_assert_cmpuint(modify(e, qpn, QRDMA_QP_ATTR_STATE |
                                        required(type, path[i],
                                                             path[i + 1]),
                                path[i + 1]), ==, QRDMA_STATUS_OK);
    }
}

/* S10, S14 */
static void test_s10_destroy_any_state(void *obj, void *data,
                                       QGuestAllocator *alloc)
{
    static const uint8_t states[] = {
        QRDMA_QPS_RESET, QRDMA_QPS_INIT, QRDMA_QPS_RTR, QRDMA_QPS_RTS,
        QRDMA_QPS_SQD, QRDMA_QPS_ERR,
    };
    static const uint8_t types[] = { QRDMA_QPT_RC, QRDMA_QPT_UC,
                                     QRDMA_QPT_UD };
    size_t i, j;
    QpEnv e;

    env_init(&e, obj, alloc);
    for (j = 0; j < ARRAY_SIZE(types); j++) {
        for (i = 0; i < ARRAY_SIZE(states); i++) {
            uint32_t qpn = qp_new(&e, types[j]);

            drive_to(&e, qpn, types[j], states[i]);
            g_assert_cmpuint(qp_state(&e, qpn), ==, states[i]);
            /* S14: 0 on success, an error for what does not exist */
            g_assert_cmpuint(qrdma_t_destroy(&e.t, QRDMA_CMD_DESTROY_QP, 0,
                                             qpn), ==, QRDMA_STATUS_OK);
            g_assert_cmpuint(qrdma_t_destroy(&e.t, QRDMA_CMD_DESTROY_QP, 0,
                                             qpn), ==,
                             QRDMA_STATUS_BAD_HANDLE);
        }
    }
    /* pd and cq only */
    g_assert_cmpuint(qrdma_t_qom_get(&e.t, "resources"), ==, 2);
}

static uint8_t mcast(QpEnv *e, uint8_t opcode, uint32_t qpn, uint8_t last)
{
    struct qrdma_cmd cmd = {
        .hdr.opcode = opcode,
        .mcast.qpn = cpu_to_le32(qpn),
        .mcast.gid = { 0xff, 0x0e, [15] = last },
    };

    return qrdma_t_exec(&e->t, &cmd, NULL);
}

/* S13 */
static void test_s13_mcast_busy(void *obj, void *data,
                                QGuestAllocator *alloc)
{
    uint32_t ud, rc;
    QpEnv e;

    env_init(&e, obj, alloc);
    ud = qp_new(&e, QRDMA_QPT_UD);
    rc = qp_new(&e, QRDMA_QPT_RC);
    drive_to(&e, ud, QRDMA_QPT_UD, QRDMA_QPS_RTS);

    g_assert_cmpuint(mcast(&e, QRDMA_CMD_ATTACH_MCAST, ud, 1), ==,
                     QRDMA_STATUS_OK);
    g_assert_cmpuint(mcast(&e, QRDMA_CMD_ATTACH_MCAST, ud, 2), ==,
                     QRDMA_STATUS_OK);
    /* only UD QPs join groups, and only multicast GIDs are groups */
    g_assert_cmpuint(mcast(&e, QRDMA_CMD_ATTACH_MCAST, rc, 1), ==,
                     QRDMA_STATUS_BAD_PARAM);
    {
        struct qrdma_cmd cmd = {
            .hdr.opcode = QRDMA_CMD_ATTACH_MCAST,
            .mcast.qpn = cpu_to_le32(ud),
            .mcast.gid = { 0xfe, 0x80 },
        };
        g_assert_cmpuint(qrdma_t_exec(&e.t, &cmd, NULL), ==,
                         QRDMA_STATUS_BAD_PARAM);
    }

    g_assert_cmpuint(qrdma_t_destroy(&e.t, QRDMA_CMD_DESTROY_QP, 0, ud), ==,
                     QRDMA_STATUS_BUSY);
    /* nothing changed: the QP and both attachments are there */
    g_assert_cmpuint(qp_state(&e, ud), ==, QRDMA_QPS_RTS);
    g_assert_cmpuint(modify(&e, ud, QRDMA_QP_ATTR_QKEY, QRDMA_QPS_RTS), ==,
                     QRDMA_STATUS_OK);
    g_assert_cmpuint(mcast(&e, QRDMA_CMD_DETACH_MCAST, ud, 1), ==,
                     QRDMA_STATUS_OK);
    g_assert_cmpuint(qrdma_t_destroy(&e.t, QRDMA_CMD_DESTROY_QP, 0, ud), ==,
                     QRDMA_STATUS_BUSY);
    g_assert_cmpuint(mcast(&e, QRDMA_CMD_DETACH_MCAST, ud, 2), ==,
                     QRDMA_STATUS_OK);
    g_assert_cmpuint(mcast(&e, QRDMA_CMD_DETACH_MCAST, ud, 2), ==,
                     QRDMA_STATUS_BAD_PARAM);
    g_assert_cmpuint(qrdma_t_destroy(&e.t, QRDMA_CMD_DESTROY_QP, 0, ud), ==,
                     QRDMA_STATUS_OK);
}

/* S20 */
static void test_s20_cq_busy(void *obj, void *data, QGuestAllocator *alloc)
{
    uint32_t cq2, a, b;
    QrdmaTQp p;
    QpEnv e;

    env_init(&e, obj, alloc);
    cq2 = qrdma_t_cq(&e.t, 0);

    /* cq2 on the send side of a, the receive side of b */
    p = qp_params(&e, QRDMA_QPT_RC);
    p.send_cq = cq2;
    g_assert_cmpuint(qrdma_t_create_qp(&e.t, &p, &a, NULL), ==,
                     QRDMA_STATUS_OK);
    p = qp_params(&e, QRDMA_QPT_UD);
    p.recv_cq = cq2;
    g_assert_cmpuint(qrdma_t_create_qp(&e.t, &p, &b, NULL), ==,
                     QRDMA_STATUS_OK);

    g_assert_cmpuint(qrdma_t_destroy(&e.t, QRDMA_CMD_DESTROY_CQ, 0, cq2), ==,
                     QRDMA_STATUS_BUSY);
    /* the QPs go on working */
    drive_to(&e, a, QRDMA_QPT_RC, QRDMA_QPS_RTS);
    g_assert_cmpuint(qrdma_t_destroy(&e.t, QRDMA_CMD_DESTROY_QP, 0, a), ==,
                     QRDMA_STATUS_OK);
    g_assert_cmpuint(qrdma_t_destroy(&e.t, QRDMA_CMD_DESTROY_CQ, 0, cq2), ==,
                     QRDMA_STATUS_BUSY);
    drive_to(&e, b, QRDMA_QPT_UD, QRDMA_QPS_RTS);
    g_assert_cmpuint(qrdma_t_destroy(&e.t, QRDMA_CMD_DESTROY_QP, 0, b), ==,
                     QRDMA_STATUS_OK);
    g_assert_cmpuint(qrdma_t_destroy(&e.t, QRDMA_CMD_DESTROY_CQ, 0, cq2), ==,
                     QRDMA_STATUS_OK);
}

/* S21, S23: create and destroy many times; nothing is left behind. */
static void test_s23_no_leak(void *obj, void *data, QGuestAllocator *alloc)
{
    uint32_t cq, qpn;
    QrdmaTQp p;
    QpEnv e;
    int i;

    env_init(&e, obj, alloc);
    for (i = 0; i < 32; i++) {
        cq = qrdma_t_cq(&e.t, 0);
        p = qp_params(&e, QRDMA_QPT_RC);
        p.send_cq = p.recv_cq = cq;
        g_assert_cmpuint(qrdma_t_create_qp(&e.t, &p, &qpn, NULL), ==,
                         QRDMA_STATUS_OK);
        drive_to(&e, qpn, QRDMA_QPT_RC, QRDMA_QPS_RTS);
        g_assert_cmpuint(qrdma_t_destroy(&e.t, QRDMA_CMD_DESTROY_QP, 0, qpn),
                         ==, QRDMA_STATUS_OK);
        g_assert_cmpuint(qrdma_t_destroy(&e.t, QRDMA_CMD_DESTROY_CQ, 0, cq),
                         ==, QRDMA_STATUS_OK);
    }
    g_assert_cmpuint(qrdma_t_qom_get(&e.t, "resources"), ==, 2);
}

static void qrdma_qp_register_tests(void)
{
    QOSGraphTestOptions opts = {
        .edge.extra_device_opts = "max-qp-wr=256",
    };

    qos_add_test("qp/s2-caps", QRDMA_NODE_QP, test_s2_caps, &opts);
    qos_add_test("qp/s3-types", QRDMA_NODE_QP, test_s3_types, &opts);
    qos_add_test("qp/s4-srq-ignores-recv-caps", QRDMA_NODE_QP,
                 test_s4_srq_ignores_recv_caps, &opts);
    qos_add_test("qp/s7-reset-and-unique", QRDMA_NODE_QP,
                 test_s7_reset_and_unique, &opts);
    qos_add_test("qp/s10-s14-destroy-any-state", QRDMA_NODE_QP,
                 test_s10_destroy_any_state, &opts);
    qos_add_test("qp/s13-mcast-busy", QRDMA_NODE_QP,
                 test_s13_mcast_busy, &opts);
    qos_add_test("qp/s20-cq-busy", QRDMA_NODE_QP, test_s20_cq_busy, &opts);
    qos_add_test("qp/s21-s23-no-leak", QRDMA_NODE_QP, test_s23_no_leak, &opts);
    qos_add_test("qp/s40-state-table-rc", QRDMA_NODE_QP,
                 test_s40_state_table_rc, &opts);
    qos_add_test("qp/s40-state-table-uc", QRDMA_NODE_QP,
                 test_s40_state_table_uc, &opts);
    qos_add_test("qp/s40-state-table-ud", QRDMA_NODE_QP,
                 test_s40_state_table_ud, &opts);
    qos_add_test("qp/s40-bad-values", QRDMA_NODE_QP,
                 test_s40_bad_values, &opts);
}

libqos_init(qrdma_qp_register_tests);
