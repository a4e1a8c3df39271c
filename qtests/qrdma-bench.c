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
#include "qemu/host-utils.h"
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

/*
 * The scale benchmarks, which scripts/bench runs in callgrind at several
 * sizes so that the growth of the device's cost per operation shows.
 * QRDMA_BENCH_SCALE names one and QRDMA_BENCH_N its size:
 *   qps N      64-byte RDMA WRITEs on N RC QPs at once, in pairs that
 *              write to each other: a doorbell and a WRITE per QP a round;
 *   mrs N      64-byte RDMA WRITEs on one pair with N MRs registered;
 *   fastreg N  I/Os as NVMe-oF and iSER hosts make them, on N pairs: a
 *              fast registration of a page, a WRITE from it to the peer,
 *              its invalidation;
 *   conns N    connections set up and torn down (two RC QPs created,
 *              moved to RTS, destroyed) with N memory windows allocated,
 *              the commands' cost; QRDMA_BENCH_ROUNDS=0 runs the set-up
 *              alone, whose cost scripts/bench takes away;
 *   alloc N    a QP created and destroyed with N QPs in the table
 *              already, the commands' cost; QRDMA_BENCH_ROUNDS as for
 *              conns;
 *   reads N    64-byte RDMA READs on one pair whose QPs have N READs in
 *              flight at most, 16 posted with each doorbell.
 * It prints "# ops N", the WRITEs, I/Os or connections it ran, every one
 * of them checked by its CQE or its command's status.
 */

#define BENCH_OPS 4096
#define BENCH_FR_IOVA 0x50000000ull

/* A CQ of 2^log2 CQEs on contiguous guest pages, as qrdma_dp_poll_cq reads */
static void bench_cq(QrdmaDpEnv *e, QrdmaDpCq *cq, uint32_t log2)
{
    uint32_t npages = MAX((QRDMA_CQE_SIZE << log2) / 4096, 1), i;
    g_autofree uint64_t *pages = g_new(uint64_t, npages);
    struct qrdma_cmd cmd = { .hdr.opcode = QRDMA_CMD_CREATE_CQ };
    struct qrdma_cmpl cmpl;

    memset(cq, 0, sizeof(*cq));
    cq->log2 = log2;
    cq->ring = guest_alloc(e->t.alloc, npages * 4096);
    cq->ci_addr = guest_alloc(e->t.alloc, 4096);
    qtest_memset(e->t.qts, cq->ring, 0, npages * 4096);
    qtest_writel(e->t.qts, cq->ci_addr, 0);
    for (i = 0; i < npages; i++) {
        pages[i] = cq->ring + i * 4096;
    }
    cmd.cq.pages_addr = cpu_to_le64(qrdma_t_page_list(&e->t, pages, npages));
    cmd.cq.npages = cpu_to_le32(npages);
    cmd.cq.log2_entries = cpu_to_le32(log2);
    cmd.cq.eq = cpu_to_le32(1);
    cmd.cq.ci_addr = cpu_to_le64(cq->ci_addr);
    g_assert_cmpuint(qrdma_t_exec(&e->t, &cmd, &cmpl), ==, 0);
    cq->cqn = le32_to_cpu(cmpl.handle);
}

/* Wait for the next n CQEs, each a success, and consume them. */
static void bench_reap(QrdmaDpEnv *e, QrdmaDpCq *cq, uint32_t n)
{
    uint32_t size = 1u << cq->log2, last = cq->ci + n - 1, i, first, chunk;
    uint8_t phase = (last >> cq->log2) & 1 ? 0 : QRDMA_CQE_F_PHASE;
    g_autofree struct qrdma_cqe *cqe = g_new(struct qrdma_cqe, n);

    g_assert_cmpuint(n, <=, size);
    do {
        qtest_memread(e->t.qts, cq->ring + (last % size) * QRDMA_CQE_SIZE,
                      cqe, sizeof(*cqe));
    } while ((cqe->flags & QRDMA_CQE_F_PHASE) != phase);
    /* in at most two pieces: up to the end of the ring, then from 0 */
    first = cq->ci % size;
    chunk = MIN(n, size - first);
    qtest_memread(e->t.qts, cq->ring + first * QRDMA_CQE_SIZE, cqe,
                  chunk * sizeof(*cqe));
    if (chunk < n) {
        qtest_memread(e->t.qts, cq->ring, cqe + chunk,
                      (n - chunk) * sizeof(*cqe));
    }
    for (i = 0; i < n; i++) {
        uint32_t idx = cq->ci + i;

        g_assert_cmphex(cqe[i].flags & QRDMA_CQE_F_PHASE, ==,
                        (idx >> cq->log2) & 1 ? 0 : QRDMA_CQE_F_PHASE);
        g_assert_cmpuint(cqe[i].status, ==, QRDMA_WC_SUCCESS);
    }
    cq->ci += n;
    qtest_writel(e->t.qts, cq->ci_addr, cq->ci);
}

/*
 * n QPs in pairs connected to each other, on cq.  With sq_list, every QP
 * sends from that one ring; without, each from a ring of its own (in
 * qp->sq).
 */
static QrdmaDpQp *bench_pairs(QrdmaDpEnv *e, uint32_t n, const QrdmaDpCq *cq,
                              uint64_t sq_list)
{
    QrdmaDpQp *qp = g_new0(QrdmaDpQp, n);
    uint64_t rq_list = qrdma_dp_page_list1(e, guest_alloc(e->t.alloc, 4096));
    uint32_t i;

    for (i = 0; i < n; i++) {
        uint64_t sq = 0;

        if (!sq_list) {
            sq = guest_alloc(e->t.alloc, 4096);
        }
        g_assert_cmpuint(qrdma_dp_create_qp_on(e, &qp[i], QRDMA_QPT_RC, 0, cq,
                                               cq, sq_list ? sq_list :
                                               qrdma_dp_page_list1(e, sq),
                                               rq_list), ==, 0);
        qp[i].sq = sq;
    }
    for (i = 0; i < n; i++) {
        qrdma_dp_to_rtr(e, &qp[i], qp[i ^ 1].qpn);
        qrdma_dp_to_rts(e, &qp[i], 0);
    }
    return qp;
}

/* The ring every QP of qps and mrs sends from: 16 WRITEs of 64 bytes */
static uint64_t bench_write_ring(QrdmaDpEnv *e)
{
    uint64_t ring = guest_alloc(e->t.alloc, 4096);
    struct qrdma_sq_wqe w = qrdma_dp_wqe_sge(0, QRDMA_WR_RDMA_WRITE, e->data,
                                             64, e->lkey);
    uint32_t i;

    w.rdma.remote_addr = cpu_to_le64(e->data + 4096);
    w.rdma.rkey = cpu_to_le32(e->rkey);
    for (i = 0; i < 16; i++) {
        w.wr_id = i;
        qtest_memwrite(e->t.qts, ring + i * QRDMA_SQ_WQE_SIZE, &w, sizeof(w));
    }
    return qrdma_dp_page_list1(e, ring);
}

/* rounds of a WRITE on each of the n QPs, one doorbell each */
static uint32_t bench_write_rounds(QrdmaDpEnv *e, QrdmaDpCq *cq, QrdmaDpQp *qp,
                                   uint32_t n)
{
    uint32_t rounds = bench_on() ? MAX(4, BENCH_OPS / n) : 1, r, i;

    for (r = 0; r < rounds; r++) {
        for (i = 0; i < n; i++) {
            qrdma_dp_ring_db(e, QRDMA_DB_SQ, qp[i].qpn, ++qp[i].sq_pi);
        }
        bench_reap(e, cq, n);
    }
    return rounds * n;
}

static uint32_t bench_log2(uint32_t n)
{
    return n <= 1 ? 0 : 32 - clz32(n - 1);
}

static uint32_t bench_scale_qps(QrdmaDpEnv *e, uint32_t n)
{
    g_autofree QrdmaDpQp *qp = NULL;
    QrdmaDpCq cq;

    n = ROUND_UP(MAX(n, 2), 2);
    bench_cq(e, &cq, MAX(bench_log2(n), 7));
    qp = bench_pairs(e, n, &cq, bench_write_ring(e));
    return bench_write_rounds(e, &cq, qp, n);
}

static uint32_t bench_scale_mrs(QrdmaDpEnv *e, uint32_t n)
{
    uint64_t list = qrdma_dp_page_list1(e, e->data + 15 * 4096);
    struct qrdma_cmd cmd = { .hdr.opcode = QRDMA_CMD_REG_MR };
    g_autofree QrdmaDpQp *qp = NULL;
    QrdmaDpCq cq;
    uint32_t i;

    /* the environment's MR is the first */
    cmd.reg_mr.pd = cpu_to_le32(e->pd);
    cmd.reg_mr.access = cpu_to_le32(QRDMA_ACCESS_LOCAL_WRITE |
                                    QRDMA_ACCESS_REMOTE_WRITE);
    cmd.reg_mr.iova = cpu_to_le64(0x20000000);
    cmd.reg_mr.length = cpu_to_le64(4096);
    cmd.reg_mr.pages_addr = cpu_to_le64(list);
    cmd.reg_mr.npages = cpu_to_le32(1);
    cmd.reg_mr.page_shift = 12;
    for (i = 1; i < n; i++) {
        g_assert_cmpuint(qrdma_t_exec(&e->t, &cmd, NULL), ==, 0);
    }
    bench_cq(e, &cq, 7);
    qp = bench_pairs(e, 2, &cq, bench_write_ring(e));
    return bench_write_rounds(e, &cq, qp, 2);
}

/*
 * n pairs; an I/O on the first QP of a pair: REG_MR of data page 12 at
 * BENCH_FR_IOVA with a new key, a 64-byte WRITE from it to the peer,
 * LOCAL_INV.  The pairs' I/Os interleave, as those of many connections do.
 */
static uint32_t bench_scale_fastreg(QrdmaDpEnv *e, uint32_t n)
{
    uint32_t rounds = bench_on() ? MAX(4, BENCH_OPS / n) : 1, r, i, j;
    uint64_t page = e->data + 12 * 4096;
    uint64_t list = qrdma_t_page_list(&e->t, &page, 1);
    g_autofree uint32_t *key = g_new(uint32_t, n);
    g_autofree QrdmaDpQp *qp = NULL;
    struct qrdma_sq_wqe w[3];
    QrdmaDpCq cq;

    bench_cq(e, &cq, MAX(bench_log2(3 * n), 7));
    qp = bench_pairs(e, 2 * n, &cq, 0);
    for (i = 0; i < n; i++) {
        struct qrdma_cmd cmd = { .hdr.opcode = QRDMA_CMD_ALLOC_MR };
        struct qrdma_cmpl cmpl;

        cmd.alloc_mr.pd = cpu_to_le32(e->pd);
        cmd.alloc_mr.max_pages = cpu_to_le32(1);
        g_assert_cmpuint(qrdma_t_exec(&e->t, &cmd, &cmpl), ==, 0);
        key[i] = le32_to_cpu(cmpl.handle);
    }
    for (r = 0; r < rounds; r++) {
        for (i = 0; i < n; i++) {
            QrdmaDpQp *a = &qp[2 * i];

            /* a new key byte, as ib_update_fast_reg_key() makes */
            key[i] = (key[i] & ~0xffu) | ((key[i] + 1) & 0xff);
            memset(&w[0], 0, sizeof(w[0]));
            w[0].opcode = QRDMA_WR_REG_MR;
            w[0].flags = QRDMA_WQE_F_SIGNALED;
            w[0].reg_mr.iova = cpu_to_le64(BENCH_FR_IOVA);
            w[0].reg_mr.length = cpu_to_le64(4096);
            w[0].reg_mr.pages_addr = cpu_to_le64(list);
            w[0].reg_mr.key = cpu_to_le32(key[i]);
            w[0].reg_mr.access = cpu_to_le32(QRDMA_ACCESS_LOCAL_WRITE);
            w[0].reg_mr.npages = cpu_to_le32(1);
            w[0].reg_mr.page_shift = 12;
            w[1] = qrdma_dp_wqe_sge(1, QRDMA_WR_RDMA_WRITE, BENCH_FR_IOVA, 64,
                                    key[i]);
            w[1].rdma.remote_addr = cpu_to_le64(e->data + 4096);
            w[1].rdma.rkey = cpu_to_le32(e->rkey);
            memset(&w[2], 0, sizeof(w[2]));
            w[2].wr_id = 2;
            w[2].opcode = QRDMA_WR_LOCAL_INV;
            w[2].flags = QRDMA_WQE_F_SIGNALED;
            w[2].imm_data = cpu_to_le32(key[i]);
            for (j = 0; j < 3; j++) {
                qtest_memwrite(e->t.qts, a->sq + (a->sq_pi++ % 16) *
                               QRDMA_SQ_WQE_SIZE, &w[j], sizeof(w[j]));
            }
            qrdma_dp_ring_db(e, QRDMA_DB_SQ, a->qpn, a->sq_pi);
        }
        bench_reap(e, &cq, 3 * n);
    }
    return rounds * n;
}

static uint32_t bench_scale_conns(QrdmaDpEnv *e, uint32_t n)
{
    const char *only = g_getenv("QRDMA_BENCH_ROUNDS");
    uint32_t rounds = only ? atoi(only) : bench_on() ? 64 : 1, r, i;
    uint64_t sq_list = qrdma_dp_page_list1(e, guest_alloc(e->t.alloc, 4096));

    for (i = 0; i < n; i++) {
        qrdma_dp_alloc_mw(e, e->pd, QRDMA_MW_TYPE_1, NULL);
    }
    for (r = 0; r < rounds; r++) {
        g_autofree QrdmaDpQp *qp = bench_pairs(e, 2, &e->cq, sq_list);

        for (i = 0; i < 2; i++) {
            g_assert_cmpuint(qrdma_t_destroy(&e->t, QRDMA_CMD_DESTROY_QP, 0,
                                             qp[i].qpn), ==, QRDMA_STATUS_OK);
        }
    }
    return rounds;
}

static uint32_t bench_scale_alloc(QrdmaDpEnv *e, uint32_t n)
{
    const char *only = g_getenv("QRDMA_BENCH_ROUNDS");
    uint32_t rounds = only ? atoi(only) : bench_on() ? 64 : 1, r, i;
    uint64_t list = qrdma_dp_page_list1(e, guest_alloc(e->t.alloc, 4096));
    QrdmaDpQp qp;

    for (i = 0; i < n; i++) {
        g_assert_cmpuint(qrdma_dp_create_qp_on(e, &qp, QRDMA_QPT_RC, 0,
                                               &e->cq, &e->cq, list, list),
                         ==, 0);
    }
    for (r = 0; r < rounds; r++) {
        g_assert_cmpuint(qrdma_dp_create_qp_on(e, &qp, QRDMA_QPT_RC, 0,
                                               &e->cq, &e->cq, list, list),
                         ==, 0);
        g_assert_cmpuint(qrdma_t_destroy(&e->t, QRDMA_CMD_DESTROY_QP, 0,
                                         qp.qpn), ==, QRDMA_STATUS_OK);
    }
    return rounds;
}

static uint32_t bench_scale_reads(QrdmaDpEnv *e, uint32_t n)
{
    uint32_t rounds = bench_on() ? BENCH_OPS / 16 : 1, r, i;
    uint64_t ring = guest_alloc(e->t.alloc, 4096);
    g_autofree QrdmaDpQp *qp = NULL;
    QrdmaDpCq cq;

    for (i = 0; i < 16; i++) {
        struct qrdma_sq_wqe w = qrdma_dp_wqe_sge(i, QRDMA_WR_RDMA_READ,
                                                 e->data + 4096, 64, e->lkey);

        w.rdma.remote_addr = cpu_to_le64(e->data);
        w.rdma.rkey = cpu_to_le32(e->rkey);
        qtest_memwrite(e->t.qts, ring + i * QRDMA_SQ_WQE_SIZE, &w, sizeof(w));
    }
    e->max_rd_atomic = MAX(n, 1);
    e->max_dest_rd_atomic = MAX(n, 1);
    bench_cq(e, &cq, 7);
    qp = bench_pairs(e, 2, &cq, qrdma_dp_page_list1(e, ring));
    for (r = 0; r < rounds; r++) {
        qp[0].sq_pi += 16;
        qrdma_dp_ring_db(e, QRDMA_DB_SQ, qp[0].qpn, qp[0].sq_pi);
        bench_reap(e, &cq, 16);
    }
    return rounds * 16;
}

static void test_bench_scale(void *obj, void *data, QGuestAllocator *alloc)
{
    const char *what = g_getenv("QRDMA_BENCH_SCALE") ?: "qps";
    const char *size = g_getenv("QRDMA_BENCH_N");
    uint32_t n = size ? atoi(size) : 2, ops;
    QrdmaDpEnv e;

    qrdma_dp_env_init(&e, obj, alloc);
    /* what every WRITE copies, from data page 0 or page 12 to page 1 */
    qrdma_dp_write_data(&e, 0, "at scale");
    qrdma_dp_write_data(&e, 12 * 4096, "at scale");
    if (!strcmp(what, "qps")) {
        ops = bench_scale_qps(&e, n);
    } else if (!strcmp(what, "mrs")) {
        ops = bench_scale_mrs(&e, n);
    } else if (!strcmp(what, "reads")) {
        ops = bench_scale_reads(&e, n);
    } else if (!strcmp(what, "alloc")) {
        qrdma_dp_write_data(&e, 4096, "at scale");
        ops = bench_scale_alloc(&e, n);
    } else if (!strcmp(what, "conns")) {
        qrdma_dp_write_data(&e, 4096, "at scale");
        ops = bench_scale_conns(&e, n);
    } else {
        g_assert_cmpstr(what, ==, "fastreg");
        ops = bench_scale_fastreg(&e, n);
    }
    qrdma_dp_expect_data(&e, 4096, "at scale");
    printf("# ops %u\n", ops);
}

static void qrdma_bench_register_tests(void)
{
    /*
     * qos-test's main() runs g_test_init() before the libqos_init
     * functions, so -m perf is known by now: without it the benchmarks
     * are not even listed.
     */
    QOSGraphTestOptions scale = {
        .edge.extra_device_opts = "max-qp=16384,max-mr=65520,max-mw=65520",
    };

    if (!g_test_perf()) {
        return;
    }
    qos_add_test("bench/write-throughput", QRDMA_NODE_DP,
                 test_bench_write, NULL);
    qos_add_test("bench/small-wqe", QRDMA_NODE_DP, test_bench_small, NULL);
    qos_add_test("bench/scale", QRDMA_NODE_DP, test_bench_scale, &scale);
}

libqos_init(qrdma_bench_register_tests);
