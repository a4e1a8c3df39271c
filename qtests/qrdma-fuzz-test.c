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
 * edge sizes), and random register writes.  Under ASan and UBSan that is a
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
#include "qrdma-qos.h"

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

static void qrdma_fuzz_register_nodes(void)
{
    qos_add_test("fuzz/commands", QRDMA_NODE_FUZZ, test_fuzz_commands, NULL);
    qos_add_test("fuzz/registers", QRDMA_NODE_FUZZ, test_fuzz_registers, NULL);
}

libqos_init(qrdma_fuzz_register_nodes);
