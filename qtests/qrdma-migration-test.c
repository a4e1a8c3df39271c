/*
 * QTest testcase for qrdma: migration with live resources and traffic
 *
 * Copyright (c) 2026 The qrdma developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * The source is the test's own QEMU; the destination a second one started
 * with the same command line and "-incoming defer", loaded from a file
 * the source's "migrate" wrote, as QEMU's own migration qtests do with
 * the file: transport.  Once it is loaded the test's PCI bus points at
 * the destination, so the same environment (device, rings, MRs in guest
 * memory that migrated) drives it on.  Streams edited at known fields are
 * refused by the destination's post_load, which then holds nothing.
 */

#include "qemu/osdep.h"
#include "qemu/module.h"
#include "qemu/timer.h"
#include "libqtest.h"
#include "libqos/libqos-malloc.h"
#include "qobject/qdict.h"
#include "qrdma-dp.h"

/* How long a migration may take under ASan on a loaded machine. */
#define MIG_POLL_US     (10 * 1000)
#define MIG_POLL_MAX    6000

/* The status of the last migration of qts, when it is no longer running. */
static char *mig_wait(QTestState *qts)
{
    int i;

    for (i = 0; i < MIG_POLL_MAX; i++) {
        QDict *rsp = qtest_qmp_assert_success_ref(qts,
                                        "{ 'execute': 'query-migrate' }");
        const char *st = qdict_get_try_str(rsp, "status");
        char *status = g_strdup(st ? st : "none");

        qobject_unref(rsp);
        if (!strcmp(status, "completed") || !strcmp(status, "failed") ||
            !strcmp(status, "cancelled")) {
            return status;
        }
        g_free(status);
        g_usleep(MIG_POLL_US);
    }
    g_assert_not_reached();
}

/* The source's whole state, into a file. */
static void mig_save(QTestState *src, const char *path)
{
    g_autofree char *uri = g_strdup_printf("file:%s", path);
    g_autofree char *status = NULL;

    qtest_qmp_assert_success(src, "{ 'execute': 'migrate', "
                             "'arguments': { 'uri': %s } }", uri);
    status = mig_wait(src);
    g_assert_cmpstr(status, ==, "completed");
}

/*
 * A new QEMU with the source's command line loads path: whether it took
 * it.  A refused stream leaves it running, to be asked what it holds;
 * why it refused goes to *why (its error and the device's trace events).
 */
static bool mig_load_why(QTestState **dst, const char *path, char **why)
{
    g_autofree char *uri = g_strdup_printf("file:%s", path);
    g_autofree char *log = g_strdup_printf("%s.log", path);
    g_autofree char *status = NULL;
    g_autofree char *trace = NULL;
    QDict *rsp;
    bool ok;

    *dst = qtest_initf("%s -incoming defer -D %s -trace 'qrdma_err_mig_*' "
                       "-trace qrdma_err_post_load",
                       qos_get_current_command_line(), log);
    qtest_qmp_assert_success(*dst, "{ 'execute': 'migrate-incoming', "
                             "'arguments': { 'uri': %s, "
                             "'exit-on-error': false } }", uri);
    status = mig_wait(*dst);
    ok = !strcmp(status, "completed");
    rsp = qtest_qmp_assert_success_ref(*dst, "{ 'execute': 'query-migrate' }");
    g_file_get_contents(log, &trace, NULL, NULL);
    if (why) {
        *why = g_strdup_printf("%s\n%s",
                               qdict_haskey(rsp, "error-desc") ?
                               qdict_get_str(rsp, "error-desc") : "",
                               trace ? trace : "");
    }
    qobject_unref(rsp);
    unlink(log);
    return ok;
}

static bool mig_load(QTestState **dst, const char *path)
{
    g_autofree char *why = NULL;
    bool ok = mig_load_why(dst, path, &why);

    if (!ok) {
        g_test_message("refused: %s", why);
    }
    return ok;
}

/* From now on the environment's device is the one in qts. */
static void mig_switch(QrdmaDpEnv *e, QTestState *qts)
{
    e->t.q->dev.bus->qts = qts;
    e->t.qts = qts;
}

static char *mig_path(void)
{
    return g_strdup_printf("%s/qrdma-mig-%d", g_get_tmp_dir(), getpid());
}

/* The counters the host watches, read the same way on both sides. */
static const char *const mig_counters[] = {
    "cmds", "wqes", "pkts-sent", "pkts-rcvd", "retransmits", "resources",
};

static void mig_read_counters(QrdmaDpEnv *e, uint64_t *v)
{
    size_t i;

    for (i = 0; i < G_N_ELEMENTS(mig_counters); i++) {
        v[i] = qrdma_t_qom_get(&e->t, mig_counters[i]);
    }
}

static void run_send(QrdmaDpEnv *e, QrdmaDpQp *a, QrdmaDpQp *b,
                     uint64_t id, uint64_t off, const char *text)
{
    struct qrdma_sq_wqe w;

    qrdma_dp_write_data(e, off, text);
    qtest_memset(e->t.qts, e->data + off + 4096, 0xff, 64);
    qrdma_dp_post_recv(e, b, id | 0xb00, e->data + off + 4096, 64, e->lkey);
    w = qrdma_dp_wqe_sge(id | 0xa00, QRDMA_WR_SEND, e->data + off,
                         strlen(text) + 1, e->lkey);
    qrdma_dp_post_send(e, a, &w);
    qrdma_dp_expect_cqe(e, &e->cq, id | 0xb00, b->qpn, QRDMA_WC_RECV,
                        QRDMA_WC_SUCCESS);
    qrdma_dp_expect_cqe(e, &e->cq, id | 0xa00, a->qpn, QRDMA_WC_SEND,
                        QRDMA_WC_SUCCESS);
    qrdma_dp_expect_data(e, off + 4096, text);
}

/*
 * Resources and traffic move on.  Work posted while the source was
 * stopped waits in the stream (the QP queued, its doorbell taken) and
 * runs once the destination goes on; the counters go on from where they
 * were; afterwards READ, atomics and new objects work on the destination.
 */
static void test_migration_traffic(void *obj, void *data,
                                   QGuestAllocator *alloc)
{
    g_autofree char *path = mig_path();
    uint64_t before[G_N_ELEMENTS(mig_counters)];
    uint64_t after[G_N_ELEMENTS(mig_counters)];
    QTestState *src, *dst;
    struct qrdma_sq_wqe w;
    QrdmaDpQp a, b, c, d;
    QrdmaDpEnv e;
    uint64_t v;
    size_t i;

    qrdma_dp_env_init(&e, obj, alloc);
    src = e.t.qts;
    qrdma_dp_pair(&e, &a, &b, QRDMA_QPT_RC, 0);
    run_send(&e, &a, &b, 1, 0, "before the move");

    /* A SEND rung while the VM is stopped is only queued. */
    qtest_qmp_assert_success(src, "{ 'execute': 'stop' }");
    qrdma_dp_write_data(&e, 8192, "posted while stopped");
    qrdma_dp_post_recv(&e, &b, 0xb2, e.data + 12288, 64, e.lkey);
    w = qrdma_dp_wqe_sge(0xa2, QRDMA_WR_SEND, e.data + 8192, 21, e.lkey);
    qrdma_dp_post_send(&e, &a, &w);
    qrdma_dp_expect_no_cqe(&e, &e.cq);
    mig_read_counters(&e, before);
    g_assert_cmpuint(before[5], >, 0);

    mig_save(src, path);
    g_assert_true(mig_load(&dst, path));
    mig_switch(&e, dst);
    mig_read_counters(&e, after);
    for (i = 0; i < G_N_ELEMENTS(mig_counters); i++) {
        g_assert_cmpuint(after[i], ==, before[i]);
    }

    qtest_qmp_assert_success(dst, "{ 'execute': 'cont' }");
    qrdma_dp_expect_cqe(&e, &e.cq, 0xb2, b.qpn, QRDMA_WC_RECV,
                        QRDMA_WC_SUCCESS);
    qrdma_dp_expect_cqe(&e, &e.cq, 0xa2, a.qpn, QRDMA_WC_SEND,
                        QRDMA_WC_SUCCESS);
    qrdma_dp_expect_data(&e, 12288, "posted while stopped");

    run_send(&e, &a, &b, 3, 0, "after the move");
    qrdma_dp_write_data(&e, 5 * 4096, "read back");
    w = qrdma_dp_wqe_sge(4, QRDMA_WR_RDMA_READ, e.data + 6 * 4096, 10, e.lkey);
    w.rdma.remote_addr = cpu_to_le64(e.data + 5 * 4096);
    w.rdma.rkey = cpu_to_le32(e.rkey);
    qrdma_dp_post_send(&e, &a, &w);
    qrdma_dp_expect_cqe(&e, &e.cq, 4, a.qpn, QRDMA_WC_RDMA_READ,
                        QRDMA_WC_SUCCESS);
    qrdma_dp_expect_data(&e, 6 * 4096, "read back");
    qtest_writeq(dst, e.data + 7 * 4096, 40);
    w = qrdma_dp_wqe_sge(5, QRDMA_WR_ATOMIC_FETCH_AND_ADD, e.data + 8 * 4096,
                         8, e.lkey);
    w.rdma.remote_addr = cpu_to_le64(e.data + 7 * 4096);
    w.rdma.rkey = cpu_to_le32(e.rkey);
    w.rdma.compare_add = cpu_to_le64(2);
    qrdma_dp_post_send(&e, &a, &w);
    qrdma_dp_expect_cqe(&e, &e.cq, 5, a.qpn, QRDMA_WC_FETCH_ADD,
                        QRDMA_WC_SUCCESS);
    v = qtest_readq(dst, e.data + 7 * 4096);
    g_assert_cmpuint(v, ==, 42);
    g_assert_cmpuint(qtest_readq(dst, e.data + 8 * 4096), ==, 40);

    /* New QPs beside the old ones: the tables came whole. */
    qrdma_dp_pair(&e, &c, &d, QRDMA_QPT_RC, 0);
    g_assert_cmphex(c.qpn, !=, a.qpn);
    g_assert_cmphex(c.qpn, !=, b.qpn);
    run_send(&e, &c, &d, 6, 2 * 4096, "new pair");
    g_assert_cmpuint(qrdma_t_destroy(&e.t, QRDMA_CMD_DESTROY_QP, 0, a.qpn),
                     ==, 0);
    g_assert_cmpuint(qrdma_t_destroy(&e.t, QRDMA_CMD_DESTROY_QP, 0, b.qpn),
                     ==, 0);
    g_assert_cmpuint(qrdma_t_qom_get(&e.t, "resources"), ==, before[5]);
    g_assert_cmpuint(qrdma_t_qom_get(&e.t, "guest-errors"), ==, 0);

    mig_switch(&e, src);
    qtest_quit(dst);
    unlink(path);
    /* The source stays stopped: the next test needs a QEMU of its own. */
    qos_invalidate_command_line();
}

/*
 * A responder that answered more READs than a QP has resources at most
 * (128: each READ takes the next one, modulo max_dest_rd_atomic, its count
 * going on past 128) migrates, and answers READs on the destination.
 */
#define MIG_READS 130

static void test_migration_reads(void *obj, void *data, QGuestAllocator *alloc)
{
    g_autofree char *path = mig_path();
    QTestState *src, *dst;
    struct qrdma_sq_wqe w;
    QrdmaDpQp a, b;
    QrdmaDpEnv e;
    uint64_t i;

    qrdma_dp_env_init(&e, obj, alloc);
    src = e.t.qts;
    qrdma_dp_pair(&e, &a, &b, QRDMA_QPT_RC, 0);
    qrdma_dp_write_data(&e, 5 * 4096, "read back");
    for (i = 0; i < MIG_READS; i++) {
        qtest_memset(src, e.data + 6 * 4096, 0, 16);
        w = qrdma_dp_wqe_sge(i, QRDMA_WR_RDMA_READ, e.data + 6 * 4096, 10,
                             e.lkey);
        w.rdma.remote_addr = cpu_to_le64(e.data + 5 * 4096);
        w.rdma.rkey = cpu_to_le32(e.rkey);
        qrdma_dp_post_send(&e, &a, &w);
        qrdma_dp_expect_cqe(&e, &e.cq, i, a.qpn, QRDMA_WC_RDMA_READ,
                            QRDMA_WC_SUCCESS);
    }
    qrdma_dp_expect_data(&e, 6 * 4096, "read back");

    qtest_qmp_assert_success(src, "{ 'execute': 'stop' }");
    mig_save(src, path);
    g_assert_true(mig_load(&dst, path));
    mig_switch(&e, dst);
    qtest_qmp_assert_success(dst, "{ 'execute': 'cont' }");
    qtest_memset(dst, e.data + 6 * 4096, 0, 16);
    w = qrdma_dp_wqe_sge(0x100, QRDMA_WR_RDMA_READ, e.data + 6 * 4096, 10,
                         e.lkey);
    w.rdma.remote_addr = cpu_to_le64(e.data + 5 * 4096);
    w.rdma.rkey = cpu_to_le32(e.rkey);
    qrdma_dp_post_send(&e, &a, &w);
    qrdma_dp_expect_cqe(&e, &e.cq, 0x100, a.qpn, QRDMA_WC_RDMA_READ,
                        QRDMA_WC_SUCCESS);
    qrdma_dp_expect_data(&e, 6 * 4096, "read back");
    g_assert_cmpuint(qrdma_t_qom_get(&e.t, "guest-errors"), ==, 0);

    mig_switch(&e, src);
    qtest_quit(dst);
    unlink(path);
    qos_invalidate_command_line();
}

/*
 * A QP whose peer never answers migrates with its retry timer running:
 * on the destination the retries go on, from the count the source left,
 * to RETRY_EXC_ERR.
 */
static void test_migration_timer(void *obj, void *data, QGuestAllocator *alloc)
{
    g_autofree char *path = mig_path();
    QTestState *src, *dst;
    struct qrdma_sq_wqe w;
    uint64_t retransmits;
    QrdmaDpQp a;
    QrdmaDpEnv e;

    qrdma_dp_env_init(&e, obj, alloc);
    src = e.t.qts;
    e.timeout = 8;                      /* 1 ms */
    e.retry_cnt = 3;
    g_assert_cmpuint(qrdma_dp_create_qp(&e, &a, QRDMA_QPT_RC, 0, &e.cq,
                                        &e.cq), ==, 0);
    /* A QPN nobody has: every try goes unanswered. */
    qrdma_dp_to_rtr(&e, &a, 0xfffff0);
    qrdma_dp_to_rts(&e, &a, 0);
    w = qrdma_dp_wqe_sge(0xa1, QRDMA_WR_SEND, e.data, 8, e.lkey);
    qrdma_dp_post_send(&e, &a, &w);
    qtest_clock_step(src, 1500 * SCALE_US);
    retransmits = qrdma_t_qom_get(&e.t, "retransmits");
    g_assert_cmpuint(retransmits, ==, 1);
    qrdma_dp_expect_no_cqe(&e, &e.cq);

    mig_save(src, path);
    g_assert_true(mig_load(&dst, path));
    mig_switch(&e, dst);
    qrdma_dp_expect_cqe_stepping(&e, &e.cq, 0xa1, a.qpn,
                                 QRDMA_WC_RETRY_EXC_ERR, SCALE_MS, 20);
    /* The first try and retry_cnt more, one of them on the source. */
    g_assert_cmpuint(qrdma_t_qom_get(&e.t, "retransmits"), ==, 3);
    g_assert_cmpuint(qrdma_t_qom_get(&e.t, "retry-exceeded"), ==, 1);

    mig_switch(&e, src);
    qtest_quit(dst);
    unlink(path);
    qos_invalidate_command_line();
}

/* One RDMA WRITE of len bytes of data page 0 through rkey at addr. */
static void write_via(QrdmaDpEnv *e, QrdmaDpQp *a, uint64_t wr_id,
                      uint32_t rkey, uint64_t addr, uint32_t len)
{
    struct qrdma_sq_wqe w = qrdma_dp_wqe_sge(wr_id, QRDMA_WR_RDMA_WRITE,
                                             e->data, len, e->lkey);

    w.rdma.remote_addr = cpu_to_le64(addr);
    w.rdma.rkey = cpu_to_le32(rkey);
    qrdma_dp_run_wqe(e, a, w, QRDMA_WC_RDMA_WRITE, QRDMA_WC_SUCCESS);
}

static void srq_post(QrdmaDpEnv *e, uint64_t ring, uint32_t i)
{
    struct qrdma_rq_wqe r = {
        .wr_id = 0x100 + i,
        .num_sge = cpu_to_le32(1),
        .sge[0].addr = cpu_to_le64(e->data + 4096 * 14),
        .sge[0].length = cpu_to_le32(64),
        .sge[0].lkey = cpu_to_le32(e->lkey),
    };

    qtest_memwrite(e->t.qts, ring + (i % 4) * 128, &r, sizeof(r));
}

/*
 * Every kind of object, each in use, migrates and works on: a type 2
 * window bound on an MR, a fast-registration MR registered by a work
 * request, an SRQ with receives posted, UD QPs, an AH and a multicast
 * group; QUERY_QP answers the same on both sides.
 */
static void test_migration_objects(void *obj, void *data,
                                   QGuestAllocator *alloc)
{
    static const uint8_t group[16] = { [10] = 0xff, [11] = 0xff,
                                       239, 1, 2, 3 };
    struct qrdma_cmd cmd = { .hdr.opcode = QRDMA_CMD_ALLOC_MR };
    struct qrdma_cmd att = { .hdr.opcode = QRDMA_CMD_ATTACH_MCAST };
    struct qrdma_query_qp_resp before, after;
    g_autofree char *path = mig_path();
    uint32_t mr, window, fr_key, srq, ah;
    QrdmaDpQp a, b, c, d, u1, u2;
    QTestState *src, *dst;
    struct qrdma_cmpl cmpl;
    struct qrdma_sq_wqe w;
    uint64_t ring;
    QrdmaDpEnv e;
    uint32_t i;

    qrdma_dp_env_init(&e, obj, alloc);
    src = e.t.qts;
    qrdma_dp_pair(&e, &a, &b, QRDMA_QPT_RC, 0);

    /* A type 2 window on 256 bytes of data pages 10-11, bound by b. */
    mr = qrdma_dp_reg_mr(&e, e.pd, 4096 * 10, 8192,
                         QRDMA_ACCESS_LOCAL_WRITE | QRDMA_ACCESS_MW_BIND);
    window = qrdma_dp_next_key(qrdma_dp_alloc_mw(&e, e.pd, QRDMA_MW_TYPE_2,
                                                 NULL));
    qrdma_dp_run_wqe(&e, &b, qrdma_dp_wqe_bind(1, window, mr, 0x10000100, 256,
                                               QRDMA_ACCESS_REMOTE_WRITE |
                                               QRDMA_ACCESS_LOCAL_WRITE),
                     QRDMA_WC_BIND_MW, QRDMA_WC_SUCCESS);

    /* A fast-registration MR: data pages 12 and 13 at 0x50000000. */
    cmd.alloc_mr.pd = cpu_to_le32(e.pd);
    cmd.alloc_mr.max_pages = cpu_to_le32(4);
    g_assert_cmpuint(qrdma_t_exec(&e.t, &cmd, &cmpl), ==, 0);
    fr_key = (le32_to_cpu(cmpl.handle) & ~0xffu) | 0x42;
    qrdma_dp_run_wqe(&e, &a, qrdma_dp_wqe_fast_reg(&e, 2, fr_key,
                                                   QRDMA_ACCESS_LOCAL_WRITE |
                                                   QRDMA_ACCESS_REMOTE_WRITE),
                     QRDMA_WC_REG_MR, QRDMA_WC_SUCCESS);

    /* An SRQ of 4 with 3 receives posted, taken by c from d. */
    ring = guest_alloc(alloc, 4096);
    memset(&cmd, 0, sizeof(cmd));
    cmd.hdr.opcode = QRDMA_CMD_CREATE_SRQ;
    cmd.srq.pd = cpu_to_le32(e.pd);
    cmd.srq.max_wr = cpu_to_le32(4);
    cmd.srq.max_sge = cpu_to_le32(1);
    cmd.srq.log2_entries = cpu_to_le32(2);
    cmd.srq.npages = cpu_to_le32(1);
    cmd.srq.pages_addr = cpu_to_le64(qrdma_dp_page_list1(&e, ring));
    g_assert_cmpuint(qrdma_t_exec(&e.t, &cmd, &cmpl), ==, 0);
    srq = le32_to_cpu(cmpl.handle);
    g_assert_cmpuint(qrdma_dp_create_qp(&e, &c, QRDMA_QPT_RC, srq, &e.cq,
                                        &e.cq), ==, 0);
    g_assert_cmpuint(qrdma_dp_create_qp(&e, &d, QRDMA_QPT_RC, 0, &e.cq,
                                        &e.cq), ==, 0);
    qrdma_dp_to_rtr(&e, &c, d.qpn);
    qrdma_dp_to_rtr(&e, &d, c.qpn);
    qrdma_dp_to_rts(&e, &c, 0);
    qrdma_dp_to_rts(&e, &d, 0);
    for (i = 0; i < 3; i++) {
        srq_post(&e, ring, i);
    }
    qrdma_dp_ring_db(&e, QRDMA_DB_SRQ, srq, 3);

    /* UD: u2 in a multicast group, a receive posted; an AH to u2's GID */
    g_assert_cmpuint(qrdma_dp_create_qp(&e, &u1, QRDMA_QPT_UD, 0, &e.cq,
                                        &e.cq), ==, 0);
    g_assert_cmpuint(qrdma_dp_create_qp(&e, &u2, QRDMA_QPT_UD, 0, &e.cq,
                                        &e.cq), ==, 0);
    qrdma_dp_to_rtr(&e, &u1, 0);
    qrdma_dp_to_rts(&e, &u1, 0);
    qrdma_dp_to_rtr(&e, &u2, 0);
    qrdma_dp_to_rts(&e, &u2, 0);
    att.mcast.qpn = cpu_to_le32(u2.qpn);
    memcpy(att.mcast.gid, group, 16);
    g_assert_cmpuint(qrdma_t_exec(&e.t, &att, NULL), ==, QRDMA_STATUS_OK);
    memset(&cmd, 0, sizeof(cmd));
    cmd.hdr.opcode = QRDMA_CMD_CREATE_AH;
    cmd.create_ah.pd = cpu_to_le32(e.pd);
    cmd.create_ah.av.hop_limit = 64;
    cmd.create_ah.av.vlan_id = cpu_to_le16(QRDMA_VLAN_NONE);
    memcpy(cmd.create_ah.av.dgid,
           (uint8_t[16]) { [10] = 0xff, [11] = 0xff, 10, 0, 2, 15 }, 16);
    g_assert_cmpuint(qrdma_t_exec(&e.t, &cmd, &cmpl), ==, 0);
    ah = le32_to_cpu(cmpl.handle);
    qrdma_dp_post_recv(&e, &u2, 0xc1, e.data + 4096 * 15, 256, e.lkey);
    g_assert_cmpuint(qrdma_t_query_qp(&e.t, 0, a.qpn, &before), ==, 0);

    mig_save(src, path);
    g_assert_true(mig_load(&dst, path));
    mig_switch(&e, dst);

    g_assert_cmpuint(qrdma_t_query_qp(&e.t, 0, a.qpn, &after), ==, 0);
    g_assert_cmpmem(&before, sizeof(before), &after, sizeof(after));

    qrdma_dp_write_data(&e, 0, "through the window");
    write_via(&e, &a, 3, window, 0x10000108, 19);
    qrdma_dp_expect_data(&e, 4096 * 10 + 0x108, "through the window");
    qrdma_dp_write_data(&e, 0, "fast-registered");
    write_via(&e, &a, 4, fr_key, 0x50000000 + 4096 + 8, 16);
    qrdma_dp_expect_data(&e, 4096 * 13 + 8, "fast-registered");
    /* The window is still b's: b's destruction unbinds it for d to bind. */
    g_assert_cmpuint(qrdma_t_destroy(&e.t, QRDMA_CMD_DESTROY_QP, 0, b.qpn),
                     ==, QRDMA_STATUS_OK);
    window = qrdma_dp_next_key(window);
    qrdma_dp_run_wqe(&e, &d, qrdma_dp_wqe_bind(7, window, mr, 0x10000100, 256,
                                               QRDMA_ACCESS_REMOTE_WRITE),
                     QRDMA_WC_BIND_MW, QRDMA_WC_SUCCESS);

    qrdma_dp_write_data(&e, 0, "into the SRQ");
    w = qrdma_dp_wqe_sge(5, QRDMA_WR_SEND, e.data, 13, e.lkey);
    qrdma_dp_post_send(&e, &d, &w);
    qrdma_dp_expect_cqe(&e, &e.cq, 0x100, c.qpn, QRDMA_WC_RECV,
                        QRDMA_WC_SUCCESS);
    qrdma_dp_expect_cqe(&e, &e.cq, 5, d.qpn, QRDMA_WC_SEND, QRDMA_WC_SUCCESS);
    qrdma_dp_expect_data(&e, 4096 * 14, "into the SRQ");

    qrdma_dp_write_data(&e, 0, "datagram");
    w = qrdma_dp_wqe_sge(6, QRDMA_WR_SEND, e.data, 9, e.lkey);
    w.ud.ah = cpu_to_le32(ah);
    w.ud.remote_qpn = cpu_to_le32(u2.qpn);
    w.ud.remote_qkey = cpu_to_le32(0x1234);
    qrdma_dp_post_send(&e, &u1, &w);
    qrdma_dp_expect_cqe(&e, &e.cq, 6, u1.qpn, QRDMA_WC_SEND, QRDMA_WC_SUCCESS);
    qrdma_dp_expect_cqe(&e, &e.cq, 0xc1, u2.qpn, QRDMA_WC_RECV,
                        QRDMA_WC_SUCCESS);
    qrdma_dp_expect_data(&e, 4096 * 15 + 40, "datagram");

    /* u2 is still the group's member, and only once. */
    att.hdr.opcode = QRDMA_CMD_DETACH_MCAST;
    g_assert_cmpuint(qrdma_t_exec(&e.t, &att, NULL), ==, QRDMA_STATUS_OK);
    g_assert_cmpuint(qrdma_t_exec(&e.t, &att, NULL), !=, QRDMA_STATUS_OK);

    mig_switch(&e, src);
    qtest_quit(dst);
    unlink(path);
    qos_invalidate_command_line();
}

/*
 * Where the fields of the resources subsection are in a stream: its
 * header, then per table max, next, the generations, n and the slots;
 * the page and member arrays; then the objects, kind by kind, in the
 * order and sizes of qrdma_migration.c's descriptions.
 */
enum { MIG_UCTX, MIG_PD, MIG_MR, MIG_MW, MIG_CQ, MIG_SRQ, MIG_QP, MIG_TABLES };

typedef struct MigLayout {
    size_t max[MIG_TABLES + 2];
    size_t n[MIG_TABLES + 2];
    size_t slot[MIG_TABLES + 2];
    uint32_t count[MIG_TABLES + 2];
    size_t npages;
    size_t objects[MIG_TABLES];         /* first object of each kind */
} MigLayout;

static const size_t mig_object_size[MIG_TABLES] = {
    [MIG_UCTX] = 8, [MIG_PD] = 8, [MIG_MR] = 52, [MIG_MW] = 50,
    [MIG_CQ] = 39, [MIG_SRQ] = 40, [MIG_QP] = 0,
};

static uint32_t be32_at(const uint8_t *b, size_t off)
{
    return ldl_be_p(b + off);
}

static void mig_layout(const uint8_t *b, size_t len, MigLayout *l)
{
    static const char name[] = "\x05\x0fqrdma/resources";
    const uint8_t *hit = memmem(b, len, name, sizeof(name) - 1);
    size_t off, k;

    g_assert_nonnull(hit);
    off = hit - b + sizeof(name) - 1 + 4;
    for (k = 0; k < MIG_TABLES + 2; k++) {  /* with AHs and groups */
        l->max[k] = off;
        off += 8 + be32_at(b, off);
        l->n[k] = off;
        l->count[k] = be32_at(b, off);
        l->slot[k] = off + 4;
        off += 4 + 4 * l->count[k];
    }
    l->npages = off;
    off += 4 + 8 * be32_at(b, off);
    off += 4 + 4 * be32_at(b, off);
    for (k = 0; k < MIG_TABLES; k++) {
        l->objects[k] = off;
        off += mig_object_size[k] * l->count[k];
    }
    g_assert_cmpuint(off, <, len);
}

typedef struct MigEdit {
    const char *what;
    const char *why;                    /* in the refusal */
    int table;                          /* edits a table field, or -1 */
    size_t field;                       /* offset in the object */
    uint32_t value;
    unsigned width;                     /* bytes written, big-endian */
} MigEdit;

static void mig_edit(uint8_t *b, const MigLayout *l, const MigEdit *ed)
{
    size_t off;

    switch (ed->table) {
    case -1:
        off = l->npages;
        break;
    case -2:
        off = l->max[MIG_QP];
        break;
    case -3:
        off = l->n[MIG_CQ];
        break;
    case -4:
        /* the second QP in the first one's slot */
        g_assert_cmpuint(l->count[MIG_QP], >=, 2);
        memcpy(b + l->slot[MIG_QP] + 4, b + l->slot[MIG_QP], 4);
        return;
    default:
        off = l->objects[ed->table] + ed->field;
    }
    if (ed->width == 1) {
        b[off] = ed->value;
    } else {
        stl_be_p(b + off, ed->value);
    }
}

/*
 * A stream that says what the device could not have made is refused,
 * before anything of it is unpacked: the destination holds no resource.
 * The stream as saved loads, so each refusal is the edit's.
 */
static void test_migration_refused(void *obj, void *data,
                                   QGuestAllocator *alloc)
{
    static const MigEdit edits[] = {
        { "a table of another size", "table size as the destination's",
          -2, 0, 2000, 4 },
        { "more CQs than the table holds", "objects within the table",
          -3, 0, 0x7fffffff, 4 },
        { "page lists over every limit", "page lists within the limits",
          -1, 0, 0xffffffff, 4 },
        { "a QP slot twice", "out of the table or twice", -4 },
        { "a QP in no state", "type or state", MIG_QP, 13, 9, 1 },
        { "a QP's send CQ that does not exist", "send CQ",
          MIG_QP, 15, 0x00ffff00, 4 },
        { "a CQ on an event queue that does not exist", "ring, EQ or indices",
          MIG_CQ, 12, 60, 4 },
        { "an MR's page list not its layout", ": layout",
          MIG_MR, 44, 3, 4 },
    };
    g_autofree char *path = mig_path();
    g_autofree char *edited = g_strdup_printf("%s.edited", path);
    g_autofree uint8_t *stream = NULL;
    QTestState *src, *dst;
    QrdmaDpQp a, b;
    QrdmaDpEnv e;
    MigLayout l;
    gsize len;
    size_t i;

    qrdma_dp_env_init(&e, obj, alloc);
    src = e.t.qts;
    qrdma_dp_pair(&e, &a, &b, QRDMA_QPT_RC, 0);
    run_send(&e, &a, &b, 1, 0, "saved");
    mig_save(src, path);
    g_assert_true(g_file_get_contents(path, (char **)&stream, &len, NULL));
    mig_layout(stream, len, &l);
    g_assert_cmpuint(l.count[MIG_QP], ==, 2);

    g_assert_true(mig_load(&dst, path));
    mig_switch(&e, dst);
    g_assert_cmpuint(qrdma_t_qom_get(&e.t, "resources"), >, 0);
    qtest_quit(dst);

    for (i = 0; i < G_N_ELEMENTS(edits); i++) {
        g_autofree uint8_t *copy = g_memdup2(stream, len);
        g_autofree char *why = NULL;

        g_test_message("stream with %s", edits[i].what);
        mig_edit(copy, &l, &edits[i]);
        g_assert_true(g_file_set_contents(edited, (char *)copy, len, NULL));
        g_assert_false(mig_load_why(&dst, edited, &why));
        g_test_message("refused: %s", why);
        g_assert_nonnull(strstr(why, edits[i].why));
        mig_switch(&e, dst);
        g_assert_cmpuint(qrdma_t_qom_get(&e.t, "resources"), ==, 0);
        qtest_quit(dst);
    }

    mig_switch(&e, src);
    unlink(path);
    unlink(edited);
    qos_invalidate_command_line();
}

/* A handle's slot, which stays while its generation changes */
#define MIG_SLOT(handle) ((handle) & 0xffff)
#define MIG_TABLE_QPS 16
#define MIG_TABLE_PDS 8

static uint8_t mig_filler_qp(QrdmaDpEnv *e, uint64_t list, uint32_t *qpn)
{
    QrdmaDpQp qp;
    uint8_t st = qrdma_dp_create_qp_on(e, &qp, QRDMA_QPT_RC, 0, &e->cq,
                                       &e->cq, list, list);

    *qpn = qp.qpn;
    return st;
}

static uint8_t mig_alloc_pd(QrdmaDpEnv *e, uint32_t *pd)
{
    struct qrdma_cmd cmd = { .hdr.opcode = QRDMA_CMD_ALLOC_PD };
    struct qrdma_cmpl cmpl;
    uint8_t st = qrdma_t_exec(&e->t, &cmd, &cmpl);

    *pd = le32_to_cpu(cmpl.handle);
    return st;
}

/*
 * Full tables move, and the destination allocates from them as the
 * source would have: the QP table, all but one slot in use, hands out
 * that one slot, then refuses; the PD table, two slots freed in an order
 * a search round the table would not take, hands them out in the order
 * they were freed.
 */
static void test_migration_table_full(void *obj, void *data,
                                      QGuestAllocator *alloc)
{
    g_autofree char *path = mig_path();
    uint32_t qpn[MIG_TABLE_QPS], pd[MIG_TABLE_PDS], old, slot_sum = 0;
    QTestState *src, *dst;
    uint64_t filler;
    QrdmaDpEnv e;
    uint32_t i;

    qrdma_dp_env_init(&e, obj, alloc);
    src = e.t.qts;
    filler = qrdma_dp_page_list1(&e, e.data + 15 * 4096);
    for (i = 0; i < MIG_TABLE_QPS; i++) {
        g_assert_cmpuint(mig_filler_qp(&e, filler, &qpn[i]), ==, 0);
    }
    g_assert_cmpuint(qrdma_t_destroy(&e.t, QRDMA_CMD_DESTROY_QP, 0, qpn[9]),
                     ==, 0);
    pd[0] = e.pd;
    for (i = 1; i < MIG_TABLE_PDS; i++) {
        g_assert_cmpuint(mig_alloc_pd(&e, &pd[i]), ==, 0);
    }
    g_assert_cmpuint(qrdma_t_destroy(&e.t, QRDMA_CMD_DEALLOC_PD, 0, pd[6]),
                     ==, 0);
    g_assert_cmpuint(qrdma_t_destroy(&e.t, QRDMA_CMD_DEALLOC_PD, 0, pd[3]),
                     ==, 0);

    mig_save(src, path);
    g_assert_true(mig_load(&dst, path));
    mig_switch(&e, dst);
    qtest_qmp_assert_success(dst, "{ 'execute': 'cont' }");

    old = qpn[9];
    g_assert_cmpuint(mig_filler_qp(&e, filler, &qpn[9]), ==, 0);
    g_assert_cmphex(MIG_SLOT(qpn[9]), ==, MIG_SLOT(old));
    g_assert_cmphex(qpn[9], !=, old);
    g_assert_cmpuint(mig_filler_qp(&e, filler, &old), ==,
                     QRDMA_STATUS_NO_RESOURCES);
    /* every slot once: QP 1 is the GSI QP's, the others hold 2 to 17 */
    for (i = 0; i < MIG_TABLE_QPS; i++) {
        slot_sum += MIG_SLOT(qpn[i]);
    }
    g_assert_cmpuint(slot_sum, ==, (2 + MIG_TABLE_QPS + 1) * MIG_TABLE_QPS / 2);

    /* a QP from before the move freed: its slot again, its handle not */
    old = qpn[2];
    g_assert_cmpuint(qrdma_t_destroy(&e.t, QRDMA_CMD_DESTROY_QP, 0, old),
                     ==, 0);
    g_assert_cmpuint(mig_filler_qp(&e, filler, &qpn[2]), ==, 0);
    g_assert_cmphex(MIG_SLOT(qpn[2]), ==, MIG_SLOT(old));
    g_assert_cmpuint(qrdma_t_destroy(&e.t, QRDMA_CMD_DESTROY_QP, 0, old),
                     ==, QRDMA_STATUS_BAD_HANDLE);

    g_assert_cmpuint(mig_alloc_pd(&e, &old), ==, 0);
    g_assert_cmphex(old, ==, (pd[6] + (1u << 16)) & 0xffffff);
    g_assert_cmpuint(mig_alloc_pd(&e, &old), ==, 0);
    g_assert_cmphex(old, ==, (pd[3] + (1u << 16)) & 0xffffff);
    g_assert_cmpuint(mig_alloc_pd(&e, &old), ==, QRDMA_STATUS_NO_RESOURCES);

    mig_switch(&e, src);
    qtest_quit(dst);
    unlink(path);
    qos_invalidate_command_line();
}

static void qrdma_migration_register_tests(void)
{
    QOSGraphTestOptions table = {
        .edge.extra_device_opts = "max-qp=" stringify(MIG_TABLE_QPS)
                                  ",max-pd=" stringify(MIG_TABLE_PDS),
    };

    qos_add_test("migration/traffic", QRDMA_NODE_DP, test_migration_traffic,
                 NULL);
    qos_add_test("migration/timer", QRDMA_NODE_DP, test_migration_timer,
                 NULL);
    qos_add_test("migration/reads", QRDMA_NODE_DP, test_migration_reads,
                 NULL);
    qos_add_test("migration/objects", QRDMA_NODE_DP, test_migration_objects,
                 NULL);
    qos_add_test("migration/refused", QRDMA_NODE_DP, test_migration_refused,
                 NULL);
    qos_add_test("migration/table-full", QRDMA_NODE_DP,
                 test_migration_table_full, &table);
}

libqos_init(qrdma_migration_register_tests);
