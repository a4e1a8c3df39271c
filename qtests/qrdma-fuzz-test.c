/*
 * QTest testcase for qrdma: random guest input
 *
 * Copyright (c) 2026 The qrdma developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * The targeted tests of the other files check each rule of the spec with
 * the value that breaks it.  These throw seeded random input at the same
 * interfaces: commands whose bytes are random but for a few fields set to
 * values the device will find valid (handles it gave out, RAM addresses,
 * edge sizes), random register writes, and on the data path WQEs and
 * frames from the wire made the same way.  Under ASan and UBSan that is a
 * search for what no targeted test thought of; what the tests assert is
 * the contract for any input: every command completes with a status of
 * the spec, and the device still works afterwards.
 *
 * QRDMA_FUZZ_SEED and QRDMA_FUZZ_ITERS override the fixed seed and the
 * count; the seed is printed so a failure can be replayed.
 */

#include "qemu/osdep.h"
#include "qemu/module.h"
#include "libqtest.h"
#include "libqos/libqos-malloc.h"
#include "qrdma-dp.h"

#define FUZZ_ITERS 1500
/* Scratch pages for the addresses the commands carry. */
#define FUZZ_PAGES 8

typedef struct Fuzz {
    QrdmaT t;
    GRand *rand;
    uint64_t page[FUZZ_PAGES];
    uint64_t page_list;         /* a page list of the scratch pages */
    uint32_t handle[64];        /* every handle a command gave out */
    unsigned nhandle;
} Fuzz;

static const uint8_t fuzz_opcodes[] = {
    QRDMA_CMD_QUERY_DEVICE, QRDMA_CMD_QUERY_PORT, QRDMA_CMD_QUERY_GID,
    QRDMA_CMD_SET_GID, QRDMA_CMD_DEL_GID, QRDMA_CMD_QUERY_STATS,
    QRDMA_CMD_CREATE_UCTX, QRDMA_CMD_DESTROY_UCTX, QRDMA_CMD_ALLOC_PD,
    QRDMA_CMD_DEALLOC_PD, QRDMA_CMD_REG_MR, QRDMA_CMD_DEREG_MR,
    QRDMA_CMD_ALLOC_MR, QRDMA_CMD_ALLOC_MW, QRDMA_CMD_DEALLOC_MW,
    QRDMA_CMD_CREATE_CQ, QRDMA_CMD_DESTROY_CQ, QRDMA_CMD_RESIZE_CQ,
    QRDMA_CMD_CREATE_QP, QRDMA_CMD_MODIFY_QP, QRDMA_CMD_QUERY_QP,
    QRDMA_CMD_DESTROY_QP, QRDMA_CMD_CREATE_SRQ, QRDMA_CMD_MODIFY_SRQ,
    QRDMA_CMD_QUERY_SRQ, QRDMA_CMD_DESTROY_SRQ, QRDMA_CMD_CREATE_AH,
    QRDMA_CMD_DESTROY_AH, QRDMA_CMD_ATTACH_MCAST, QRDMA_CMD_DETACH_MCAST,
};

static void fuzz_init(Fuzz *f, void *obj, QGuestAllocator *alloc)
{
    unsigned i;

    memset(f, 0, sizeof(*f));
    qrdma_t_init(&f->t, obj, alloc, 4);
    f->rand = qrdma_t_fuzz_rand();
    for (i = 0; i < FUZZ_PAGES; i++) {
        f->page[i] = guest_alloc(alloc, 4096);
    }
    f->page_list = qrdma_t_page_list(&f->t, f->page, FUZZ_PAGES);
}

static uint32_t fuzz_u32(Fuzz *f)
{
    return g_rand_int(f->rand);
}

static uint64_t fuzz_u64(Fuzz *f)
{
    return (uint64_t)g_rand_int(f->rand) << 32 | g_rand_int(f->rand);
}

/* A value the device may well accept where a handle, size or address goes. */
static uint64_t fuzz_interesting(Fuzz *f)
{
    switch (g_rand_int_range(f->rand, 0, 12)) {
    case 0:
        return 0;
    case 1:
        return g_rand_int_range(f->rand, 1, 17);
    case 2:
        return 1ull << g_rand_int_range(f->rand, 0, 64);
    case 3:
        return (1ull << g_rand_int_range(f->rand, 1, 64)) - 1;
    case 4:
        return UINT64_MAX;
    case 5:
    case 6:
        return f->nhandle ?
               f->handle[g_rand_int_range(f->rand, 0, f->nhandle)] :
               QRDMA_UCTX_KERNEL;
    case 7:
        return f->page[g_rand_int_range(f->rand, 0, FUZZ_PAGES)] +
               g_rand_int_range(f->rand, 0, 8) * 512;
    case 8:
        return f->page_list;
    case 9:
        return QRDMA_PAGE_SHIFT;
    case 10:
        /* Just below 4 GiB: the end of the pc machine's low RAM hole. */
        return 0xfffff000ull;
    default:
        return fuzz_u64(f);
    }
}

static void fuzz_command(Fuzz *f, struct qrdma_cmd *cmd)
{
    bool all_random = !g_rand_int_range(f->rand, 0, 4);
    unsigned i, n;

    /*
     * Reserved fields must be zero, so all-random bytes are refused at
     * the first check; most commands start from zeros and get a few
     * fields, to reach the checks behind those.
     */
    memset(cmd, 0, sizeof(*cmd));
    for (i = 0; all_random && i < sizeof(cmd->raw); i += 4) {
        uint32_t v = fuzz_u32(f);

        memcpy(cmd->raw + i, &v, 4);
    }
    cmd->hdr.opcode = g_rand_int_range(f->rand, 0, 10) ?
        fuzz_opcodes[g_rand_int_range(f->rand, 0,
                                      G_N_ELEMENTS(fuzz_opcodes))] :
        fuzz_u32(f);
    cmd->hdr.flags = g_rand_int_range(f->rand, 0, 8) ? 0 : fuzz_u32(f);
    /* The owner decides most lookups: mostly the kernel or the context. */
    switch (g_rand_int_range(f->rand, 0, 4)) {
    case 0:
    case 1:
        cmd->hdr.uctx = cpu_to_le32(QRDMA_UCTX_KERNEL);
        break;
    case 2:
        cmd->hdr.uctx = cpu_to_le32(f->handle[0]);
        break;
    default:
        cmd->hdr.uctx = cpu_to_le32(fuzz_interesting(f));
        break;
    }
    /* Most fields of most commands then get values worth trying. */
    n = g_rand_int_range(f->rand, 0, 16);
    for (i = 0; i < n; i++) {
        unsigned at = g_rand_int_range(f->rand, 0, sizeof(cmd->raw) / 4) * 4;
        uint64_t v = cpu_to_le64(fuzz_interesting(f));

        if (at % 8 == 0 && at + 8 <= sizeof(cmd->raw) &&
            g_rand_boolean(f->rand)) {
            memcpy(cmd->raw + at, &v, 8);
        } else {
            uint32_t w = cpu_to_le32(v);

            memcpy(cmd->raw + at, &w, 4);
        }
    }
}

/*
 * Whatever state the input left, a reset frees all it made and a new
 * set-up brings the device back.
 */
static void fuzz_expect_recovers(Fuzz *f, void *obj, QGuestAllocator *alloc)
{
    struct qrdma_cmd cmd = {
        .hdr.opcode = QRDMA_CMD_QUERY_DEVICE,
        .query.resp_addr = cpu_to_le64(f->page[0]),
        .query.resp_len = cpu_to_le32(4096),
    };
    uint32_t uctx;

    qrdma_t_writel(&f->t, QRDMA_REG_DEV_CTRL, QRDMA_DEV_CTRL_RESET);
    g_assert_cmpuint(qrdma_t_qom_get(&f->t, "resources"), ==, 0);
    qrdma_t_init(&f->t, obj, alloc, 4);
    g_assert_cmpuint(qrdma_t_exec(&f->t, &cmd, NULL), ==, QRDMA_STATUS_OK);
    uctx = qrdma_t_create_uctx(&f->t);
    qrdma_t_alloc_pd(&f->t, uctx);
    qrdma_t_cq(&f->t, uctx);
}

static void test_fuzz_commands(void *obj, void *data, QGuestAllocator *alloc)
{
    unsigned iters = qrdma_t_fuzz_iters(FUZZ_ITERS);
    uint64_t cmds0, errors0, errors;
    unsigned ok = 0, i;
    Fuzz f;

    fuzz_init(&f, obj, alloc);
    /* Some live resources, so that handles lead somewhere. */
    f.handle[f.nhandle++] = qrdma_t_create_uctx(&f.t);
    f.handle[f.nhandle++] = qrdma_t_alloc_pd(&f.t, f.handle[0]);
    f.handle[f.nhandle++] = qrdma_t_cq(&f.t, f.handle[0]);
    f.handle[f.nhandle++] = qrdma_t_alloc_pd(&f.t, QRDMA_UCTX_KERNEL);
    f.handle[f.nhandle++] = qrdma_t_cq(&f.t, QRDMA_UCTX_KERNEL);

    cmds0 = qrdma_t_qom_get(&f.t, "cmds");
    errors0 = qrdma_t_qom_get(&f.t, "cmd-errors");
    for (i = 0; i < iters; i++) {
        struct qrdma_cmpl cmpl;
        struct qrdma_cmd cmd;
        uint8_t st;

        fuzz_command(&f, &cmd);
        st = qrdma_t_exec(&f.t, &cmd, &cmpl);
        /* The contract for any input: a status the spec lists. */
        g_assert_cmpuint(st, <=, QRDMA_STATUS_NOT_SUPPORTED);
        if (st == QRDMA_STATUS_OK) {
            ok++;
            if (cmpl.handle && f.nhandle < G_N_ELEMENTS(f.handle)) {
                f.handle[f.nhandle++] = le32_to_cpu(cmpl.handle);
            }
        }
    }
    errors = qrdma_t_qom_get(&f.t, "cmd-errors") - errors0;
    g_test_message("%u random commands: %u OK, %" PRIu64 " refused, "
                   "%" PRIu64 " resources live", iters, ok, errors,
                   qrdma_t_qom_get(&f.t, "resources"));
    /* Each one counted once, and refused exactly when its status says. */
    g_assert_cmpuint(qrdma_t_qom_get(&f.t, "cmds") - cmds0, ==, iters);
    g_assert_cmpuint(ok + errors, ==, iters);
    /* Random bytes should mostly be refused, and some accepted. */
    g_assert_cmpuint(errors, >, iters / 2);
    g_assert_cmpuint(ok, >, 0);
    /* And the queue still answers. */
    g_assert_cmphex(qrdma_t_readl(&f.t, QRDMA_REG_DEV_STATUS), ==,
                    QRDMA_DEV_STATUS_READY);
    fuzz_expect_recovers(&f, obj, alloc);
    g_rand_free(f.rand);
}

/* Random writes, of every width the BAR takes, to every register. */
static void test_fuzz_registers(void *obj, void *data, QGuestAllocator *alloc)
{
    unsigned iters = qrdma_t_fuzz_iters(FUZZ_ITERS);
    unsigned i;
    Fuzz f;

    fuzz_init(&f, obj, alloc);
    for (i = 0; i < iters; i++) {
        uint64_t off = g_rand_int_range(f.rand, 0, QRDMA_REG_BAR_SIZE / 4) * 4;
        uint64_t v = fuzz_interesting(&f);

        switch (g_rand_int_range(f.rand, 0, 4)) {
        case 0:
            qpci_io_writeb(&f.t.q->dev, f.t.q->bar, off, v);
            break;
        case 1:
            qpci_io_writew(&f.t.q->dev, f.t.q->bar, off & ~1ull, v);
            break;
        case 2:
            qpci_io_writel(&f.t.q->dev, f.t.q->bar, off, v);
            break;
        default:
            qpci_io_writeq(&f.t.q->dev, f.t.q->bar, off & ~7ull, v);
            break;
        }
        qpci_io_readl(&f.t.q->dev, f.t.q->bar,
                      g_rand_int_range(f.rand, 0, QRDMA_REG_BAR_SIZE / 4) * 4);
    }
    g_test_message("%u random register writes, %" PRIu64 " guest errors",
                   iters, qrdma_t_qom_get(&f.t, "guest-errors"));

    fuzz_expect_recovers(&f, obj, alloc);
    g_rand_free(f.rand);
}

/* The frame counters of e: every frame it takes lands in one of them. */
static uint64_t wire_frames_counted(QrdmaDpEnv *e)
{
    return qrdma_t_qom_get(&e->t, "pkts-rcvd") +
           qrdma_t_qom_get(&e->t, "icrc-errors") +
           qrdma_t_qom_get(&e->t, "wire-malformed") +
           qrdma_t_qom_get(&e->t, "eth-rx-frames") +
           qrdma_t_qom_get(&e->t, "eth-rx-dropped");
}

/* Waits up to 2 s for e to have counted want frames since before. */
static void wire_expect_frames(QrdmaDpEnv *e, uint64_t before, uint64_t want)
{
    int i;

    for (i = 0; i < 200 && wire_frames_counted(e) - before != want; i++) {
        g_usleep(10 * 1000);
    }
    g_assert_cmpuint(wire_frames_counted(e) - before, ==, want);
}

/* Takes every CQE there is, so that the CQ never overflows. */
static void drain_cq(QrdmaDpEnv *e)
{
    struct qrdma_cqe cqe;

    while (qrdma_dp_poll_cq(e, &e->cq, &cqe)) {
        g_assert_cmpuint(cqe.status, <=, QRDMA_WC_GENERAL_ERR);
    }
}

/*
 * One frame made from a good one: bits flipped anywhere; or cut short;
 * or, with its headers made consistent again and a good ICRC, so that
 * it reaches the engines, a random opcode, PSN near the expected, or
 * RETH / AtomicETH / AETH bytes, and a payload of another length.
 */
static size_t wire_mutate(GRand *r, const uint8_t *good, size_t len,
                          uint8_t *f)
{
    size_t n = len;
    int k;

    memcpy(f, good, len);
    switch (g_rand_int_range(r, 0, 4)) {
    case 0:
        for (k = g_rand_int_range(r, 1, 9); k > 0; k--) {
            f[g_rand_int_range(r, 0, n)] ^= 1 << g_rand_int_range(r, 0, 8);
        }
        return n;
    case 1:
        return g_rand_int_range(r, 1, n);
    case 2:
        f[QRDMA_DP_WIRE_BTH] = g_rand_int_range(r, 0, 256);
        f[QRDMA_DP_WIRE_BTH + 1] &= 0xf0;
        break;
    default:
        for (k = g_rand_int_range(r, 1, 6); k > 0; k--) {
            f[QRDMA_DP_WIRE_BTH + 8 + g_rand_int_range(r, 0, 32)] =
                g_rand_int_range(r, 0, 256);
        }
        if (g_rand_boolean(r)) {
            n = MIN(MAX(QRDMA_DP_WIRE_BTH + 16,
                        n + g_rand_int_range(r, -64, 65)),
                    (size_t)QRDMA_DP_WIRE_FRAME_MAX);
            memset(f + len, 0x5a, n > len ? n - len : 0);
        }
        break;
    }
    qrdma_dp_wire_fix(f, n);
    return n;
}

/*
 * Hostile frames at a device with live QPs (issue: wire input is
 * hostile): frames of every kind its peer sent, mutated (QRDMA_FUZZ_SEED
 * replays a run), go to qrdma1 while its QPs work.  Every frame is
 * counted exactly once, as a packet, a drop for its headers or ICRC, or
 * one for the Ethernet function; nothing crashes or trips the sanitizers;
 * and a new pair of QPs still moves data across.
 */
static void test_fuzz_wire_frames(void *obj, void *data,
                                  QGuestAllocator *alloc)
{
    enum { MAX_GOOD = 64 };
    int *sv = data;
    static uint8_t good[MAX_GOOD][QRDMA_DP_WIRE_FRAME_MAX];
    size_t good_len[MAX_GOOD], n;
    uint8_t f[QRDMA_DP_WIRE_FRAME_MAX], ops[64];
    unsigned ngood = 0, i, iters;
    struct qrdma_sq_wqe w;
    uint64_t before;
    QQrdma q1;
    QrdmaDpEnv e0, e1;
    QrdmaDpQp a, b, c, d;
    GRand *r;

    qrdma_dp_wire_envs(obj, alloc, &q1, &e0, &e1);
    e0.path_mtu = e1.path_mtu = 1;
    qrdma_dp_connect_rc(&e0, &a, &e1, &b, true);

    /* the good frames: SEND, WRITE, READ, atomics, passed on as they go */
    qrdma_dp_post_recv(&e1, &b, 0xb1, e1.data, 4096, e1.lkey);
    w = qrdma_dp_wqe_sge(0xa1, QRDMA_WR_SEND, e0.data, 700, e0.lkey);
    qrdma_dp_post_send(&e0, &a, &w);
    w = qrdma_dp_wqe_sge(0xa2, QRDMA_WR_RDMA_WRITE_WITH_IMM, e0.data, 600,
                         e0.lkey);
    w.rdma.remote_addr = cpu_to_le64(e1.data + 8192);
    w.rdma.rkey = cpu_to_le32(e1.rkey);
    qrdma_dp_post_recv(&e1, &b, 0xb2, e1.data, 4096, e1.lkey);
    qrdma_dp_post_send(&e0, &a, &w);
    w = qrdma_dp_wqe_sge(0xa3, QRDMA_WR_RDMA_READ, e0.data + 4096, 600,
                         e0.lkey);
    w.rdma.remote_addr = cpu_to_le64(e1.data + 8192);
    w.rdma.rkey = cpu_to_le32(e1.rkey);
    qrdma_dp_post_send(&e0, &a, &w);
    w = qrdma_dp_wqe_sge(0xa4, QRDMA_WR_ATOMIC_FETCH_AND_ADD, e0.data + 8192, 8,
                         e0.lkey);
    w.rdma.remote_addr = cpu_to_le64(e1.data + 4096 * 3);
    w.rdma.rkey = cpu_to_le32(e1.rkey);
    qrdma_dp_post_send(&e0, &a, &w);
    for (i = 0; i < 8 && ngood < MAX_GOOD; i++) {
        while (ngood < MAX_GOOD &&
               (n = qrdma_dp_wire_recv(sv[0], good[ngood])) != 0) {
            qrdma_dp_wire_send(sv[2], good[ngood], n);
            good_len[ngood++] = n;
        }
        qrdma_dp_relay(sv[2], sv[0], G_N_ELEMENTS(ops), ops);
    }
    g_assert_cmpuint(ngood, >=, 8);

    r = qrdma_t_fuzz_rand();
    iters = qrdma_t_fuzz_iters(3000);
    qrdma_dp_post_recv(&e1, &b, 0xb3, e1.data, 4096, e1.lkey);
    before = wire_frames_counted(&e1);
    for (i = 0; i < iters; i++) {
        unsigned g = g_rand_int_range(r, 0, ngood);

        n = wire_mutate(r, good[g], good_len[g], f);
        qrdma_dp_wire_send(sv[2], f, n);
        /* what qrdma1 answers goes nowhere: the test drops it */
        if (i % 64 == 63) {
            wire_expect_frames(&e1, before, i + 1);
            qrdma_dp_wire_drain(sv[2]);
            drain_cq(&e1);
        }
    }
    wire_expect_frames(&e1, before, iters);
    g_test_message("%u frames: %" PRIu64 " packets, %" PRIu64 " ICRC, %"
                   PRIu64 " malformed", iters,
                   qrdma_t_qom_get(&e1.t, "pkts-rcvd"),
                   qrdma_t_qom_get(&e1.t, "icrc-errors"),
                   qrdma_t_qom_get(&e1.t, "wire-malformed"));

    /* the devices still work: a new pair of QPs, data across */
    qrdma_dp_wire_drain(sv[0]);
    qrdma_dp_wire_drain(sv[2]);
    drain_cq(&e0);
    drain_cq(&e1);
    qrdma_dp_connect_rc(&e0, &c, &e1, &d, true);
    qrdma_dp_write_data(&e0, 4096 * 5, "still here");
    qrdma_dp_post_recv(&e1, &d, 0xd1, e1.data + 4096 * 6, 64, e1.lkey);
    w = qrdma_dp_wqe_sge(0xc1, QRDMA_WR_SEND, e0.data + 4096 * 5, 11, e0.lkey);
    qrdma_dp_post_send(&e0, &c, &w);
    qrdma_dp_relay(sv[0], sv[2], 1, ops);
    qrdma_dp_relay(sv[2], sv[0], 1, ops);
    qrdma_dp_expect_cqe(&e1, &e1.cq, 0xd1, d.qpn, QRDMA_WC_RECV,
                        QRDMA_WC_SUCCESS);
    qrdma_dp_expect_cqe(&e0, &e0.cq, 0xc1, c.qpn, QRDMA_WC_SEND,
                        QRDMA_WC_SUCCESS);
    qrdma_dp_expect_data(&e1, 4096 * 6, "still here");
    g_rand_free(r);
}

/*
 * Seeded random WQEs (QRDMA_FUZZ_SEED replays one run): bytes at random,
 * then opcode, flags, SGE count, keys and addresses set near the valid
 * ones, on RC and UC pairs, with random receive WQEs on the other
 * side.  For any of them the contract holds: what completes does so with
 * a status of the spec, both QPs still destroy, the device stays ready,
 * and a reset frees everything.
 */
static uint64_t fuzz_near(GRand *r, QrdmaDpEnv *e, uint64_t valid)
{
    switch (g_rand_int_range(r, 0, 16)) {
    case 0:
        return (uint64_t)g_rand_int(r) << 32 | g_rand_int(r);
    case 1:
        return valid + g_rand_int_range(r, -64, 64);
    case 2:
        return e->data + g_rand_int_range(r, 0,
                                          QRDMA_DP_DATA_PAGES * 4096 + 64);
    default:
        return valid;
    }
}

static void fuzz_sq_wqe(GRand *r, QrdmaDpEnv *e, uint8_t *slot)
{
    static const uint8_t ops[] = {
        QRDMA_WR_RDMA_WRITE, QRDMA_WR_RDMA_WRITE_WITH_IMM, QRDMA_WR_SEND,
        QRDMA_WR_SEND_WITH_IMM, QRDMA_WR_RDMA_READ,
        QRDMA_WR_ATOMIC_CMP_AND_SWP, QRDMA_WR_ATOMIC_FETCH_AND_ADD,
        QRDMA_WR_LOCAL_INV, QRDMA_WR_BIND_MW, QRDMA_WR_SEND_WITH_INV,
        QRDMA_WR_FLUSH, QRDMA_WR_ATOMIC_WRITE, QRDMA_WR_REG_MR,
    };
    struct qrdma_sq_wqe *w = (struct qrdma_sq_wqe *)slot;
    unsigned i;

    /*
     * An error ends the QP's run (the rest is flushed): most WQEs start
     * from zeros with fields near the valid ones, to get past the first.
     */
    memset(slot, 0, QRDMA_SQ_WQE_SIZE);
    for (i = 0; !g_rand_int_range(r, 0, 8) && i < QRDMA_SQ_WQE_SIZE;) {
        uint32_t v = g_rand_int(r);

        memcpy(slot + i, &v, 4);
        i += 4;
    }
    w->wr_id = g_rand_int(r);
    w->opcode = g_rand_int_range(r, 0, 16) ?
                ops[g_rand_int_range(r, 0, G_N_ELEMENTS(ops))] : g_rand_int(r);
    w->flags = g_rand_int_range(r, 0, 8) ? QRDMA_WQE_F_SIGNALED :
               g_rand_int(r);
    w->num_sge = g_rand_int_range(r, 0, 8) ? 1 : g_rand_int_range(r, 0, 40);
    w->imm_data = g_rand_int(r);
    if (w->flags & QRDMA_WQE_F_INLINE) {
        w->inline_len = cpu_to_le32(fuzz_near(r, e, 32));
    }
    for (i = 0; i < 3; i++) {
        w->sge[i].addr = cpu_to_le64(fuzz_near(r, e, e->data + i * 4096));
        w->sge[i].length = cpu_to_le32(fuzz_near(r, e, 64));
        w->sge[i].lkey = cpu_to_le32(fuzz_near(r, e, e->lkey));
    }
    w->rdma.remote_addr = cpu_to_le64(fuzz_near(r, e, e->data + 8192));
    w->rdma.rkey = cpu_to_le32(fuzz_near(r, e, e->rkey));
}

static void test_fuzz_wqes(void *obj, void *data, QGuestAllocator *alloc)
{
    /* UD's own checks (AH, Q_Key) have their targeted tests. */
    static const uint8_t types[] = { QRDMA_QPT_RC, QRDMA_QPT_UC };
    GRand *r;
    unsigned round, i, cqes = 0, failed = 0;
    uint8_t slot[QRDMA_SQ_WQE_SIZE];
    struct qrdma_cqe cqe;
    QrdmaDpQp a, b;
    QrdmaDpEnv e;

    qrdma_dp_env_init(&e, obj, alloc);
    r = qrdma_t_fuzz_rand();
    for (round = 0; round < 32; round++) {
        /* rnr_retry 0: a send without a receive fails rather than waits. */
        qrdma_dp_pair(&e, &a, &b, types[round % G_N_ELEMENTS(types)], 0);
        for (i = 0; i < 8; i++) {
            qrdma_dp_post_recv(&e, &b, i, fuzz_near(r, &e, e.data + i * 512),
                               fuzz_near(r, &e, 512), fuzz_near(r, &e, e.lkey));
        }
        for (i = 0; i < 8; i++) {
            fuzz_sq_wqe(r, &e, slot);
            qtest_memwrite(e.t.qts, a.sq + (a.sq_pi % 16) * QRDMA_SQ_WQE_SIZE,
                           slot, sizeof(slot));
            a.sq_pi++;
            qrdma_dp_ring_db(&e, QRDMA_DB_SQ, a.qpn, a.sq_pi);
        }
        while (qrdma_dp_poll_cq(&e, &e.cq, &cqe)) {
            cqes++;
            failed += cqe.status != QRDMA_WC_SUCCESS;
            g_assert_cmpuint(cqe.status, <=, QRDMA_WC_GENERAL_ERR);
        }
        g_assert_cmpuint(qrdma_t_destroy(&e.t, QRDMA_CMD_DESTROY_QP, 0,
                                         a.qpn), ==, QRDMA_STATUS_OK);
        g_assert_cmpuint(qrdma_t_destroy(&e.t, QRDMA_CMD_DESTROY_QP, 0,
                                         b.qpn), ==, QRDMA_STATUS_OK);
        g_assert_cmphex(qrdma_t_readl(&e.t, QRDMA_REG_DEV_STATUS), ==,
                        QRDMA_DEV_STATUS_READY);
    }
    g_test_message("%u CQEs, %u of them errors", cqes, failed);
    g_assert_cmpuint(cqes, >, 0);
    qrdma_t_writel(&e.t, QRDMA_REG_DEV_CTRL, QRDMA_DEV_CTRL_RESET);
    g_assert_cmpuint(qrdma_t_qom_get(&e.t, "resources"), ==, 0);
    g_rand_free(r);
}

static void qrdma_fuzz_register_nodes(void)
{
    QOSGraphTestOptions relay_opts = {
        .before = qrdma_dp_relay_setup,
        .edge.extra_device_opts = "netdev=w0,mac=" QRDMA_DP_WIRE_MAC0,
    };

    qos_add_test("fuzz/commands", QRDMA_NODE_FUZZ, test_fuzz_commands, NULL);
    qos_add_test("fuzz/registers", QRDMA_NODE_FUZZ, test_fuzz_registers, NULL);
    /* The data path's, on its node, where their paths have always been. */
    qos_add_test("fuzz/wire-frames", QRDMA_NODE_DP, test_fuzz_wire_frames,
                 &relay_opts);
    qos_add_test("fuzz/wqes", QRDMA_NODE_DP, test_fuzz_wqes, NULL);
}

libqos_init(qrdma_fuzz_register_nodes);
