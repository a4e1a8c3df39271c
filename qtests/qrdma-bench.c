/*
 * Benchmarks of the qrdma data path
 *
 * Copyright (c) 2026 The qrdma developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * RDMA WRITE throughput beside memcpy, and small WQEs for callgrind's
 * instruction counts.  They are not tests: qos-test has them only in
 * glib's perf mode (qos-test -m perf), so scripts/run-qtests, which runs
 * every path qos-test lists, leaves them out, and scripts/bench asks for
 * them.
 */

#include "qemu/osdep.h"
#include "qemu/module.h"
#include "libqtest.h"
#include "libqos/libqos-malloc.h"
#include "qrdma-dp.h"

/*
 * scripts/bench runs them on the optimized build with QRDMA_BENCH=1 (and
 * under callgrind for instruction counts).  Without it they run a few
 * iterations only, checking that every WQE completes.
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

static void qrdma_bench_register_tests(void)
{
    /*
     * qos-test's main() runs g_test_init() before the libqos_init
     * functions, so -m perf is known by now: without it the benchmarks
     * are not even listed.
     */
    if (!g_test_perf()) {
        return;
    }
    qos_add_test("bench/write-throughput", QRDMA_NODE_DP,
                 test_bench_write, NULL);
    qos_add_test("bench/small-wqe", QRDMA_NODE_DP, test_bench_small, NULL);
}

libqos_init(qrdma_bench_register_tests);
