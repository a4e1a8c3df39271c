/*
 * libqos node of the qrdma emulated RDMA NIC, shared by its qtest files
 *
 * Copyright (c) 2026 The qrdma developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * qrdma-test.c creates the "qrdma" qgraph node; the other files only add
 * tests to it, and see the node's object through this struct.
 */

#ifndef QTEST_QRDMA_QOS_H
#define QTEST_QRDMA_QOS_H

#include "libqos/qgraph.h"
#include "libqos/pci.h"
#include "qemu/bswap.h"
#include "hw/rdma/qrdma-hw.h"

typedef struct QQrdma {
    QOSGraphObject obj;
    QPCIDevice dev;
    QPCIBar bar;
} QQrdma;

#define QRDMA_QOM_PATH "/machine/peripheral/qrdma0"

/*
 * The tests of each area hang off an interface of their own that the
 * "qrdma" node produces (get_driver gives them the QQrdma): qos-test walks
 * the graph with a stack of QOS_PATH_MAX_ELEMENT_SIZE (128) entries, which
 * holds every test of one node at once, and all of them under "qrdma" no
 * longer fit.
 */
#define QRDMA_NODE_CMD  "qrdma-cmd"
#define QRDMA_NODE_QP   "qrdma-qp"
#define QRDMA_NODE_ETH  "qrdma-eth"
#define QRDMA_NODE_DP   "qrdma-dp"
#define QRDMA_NODE_FUZZ "qrdma-fuzz"

/*
 * A minimal driver for the tests: the command queue in guest memory, and
 * helpers that build rings and page lists.  Every helper asserts on what a
 * test does not look at and returns what a test checks.
 */
typedef struct QrdmaT {
    QQrdma *q;
    QTestState *qts;
    QGuestAllocator *alloc;
    uint64_t cmdq;
    uint64_t cmpq;
    uint32_t log2;
    uint32_t pi;
    uint16_t next_id;
    const char *qom_path;               /* for qom-get; NULL: qrdma0's */
} QrdmaT;

/* Map BAR0, enable bus mastering and the device with a ring of 2^log2. */
void qrdma_t_init(QrdmaT *t, QQrdma *q, QGuestAllocator *alloc,
                  uint32_t log2);
uint32_t qrdma_t_readl(QrdmaT *t, uint64_t off);
void qrdma_t_writel(QrdmaT *t, uint64_t off, uint32_t val);
void qrdma_t_writeq(QrdmaT *t, uint64_t off, uint64_t val);

/* Post one command, ring the doorbell and wait for its completion. */
uint8_t qrdma_t_exec(QrdmaT *t, struct qrdma_cmd *cmd,
                     struct qrdma_cmpl *cmpl);
/*
 * Post one command and ring the doorbell: its index, for
 * qrdma_t_cmd_done() (whether it completed, now) or qrdma_t_cmd_wait().
 */
uint32_t qrdma_t_cmd_start(QrdmaT *t, struct qrdma_cmd *cmd);
bool qrdma_t_cmd_done(QrdmaT *t, uint32_t idx, struct qrdma_cmpl *cmpl);
uint8_t qrdma_t_cmd_wait(QrdmaT *t, uint32_t idx, struct qrdma_cmpl *cmpl);
/* Post n commands with a single doorbell; completions into cmpl[]. */
void qrdma_t_exec_batch(QrdmaT *t, struct qrdma_cmd *cmds, unsigned n,
                        struct qrdma_cmpl *cmpl);

/* A page list of n fresh guest pages; returns its guest address. */
uint64_t qrdma_t_pages(QrdmaT *t, uint32_t n);
/*
 * The pages of a ring.  A ring beyond what the device allows is refused
 * before its pages are read, so for one that large a token list does.
 */
uint64_t qrdma_t_ring(QrdmaT *t, uint32_t npages);
/* A page list whose entries are the given addresses. */
uint64_t qrdma_t_page_list(QrdmaT *t, const uint64_t *addr, uint32_t n);

uint64_t qrdma_t_qom_get(QrdmaT *t, const char *prop);

/* Resource helpers: they assert success and return the handle. */
uint32_t qrdma_t_create_uctx(QrdmaT *t);
uint32_t qrdma_t_alloc_pd(QrdmaT *t, uint32_t uctx);
uint8_t qrdma_t_create_cq(QrdmaT *t, uint32_t uctx, uint32_t log2,
                          uint32_t *cqn);
uint32_t qrdma_t_cq(QrdmaT *t, uint32_t uctx);
uint8_t qrdma_t_destroy(QrdmaT *t, uint8_t opcode, uint32_t uctx,
                        uint32_t handle);
uint8_t qrdma_t_create_srq(QrdmaT *t, uint32_t uctx, uint32_t pd,
                           uint32_t max_wr, uint32_t *srqn);

typedef struct QrdmaTQp {
    uint32_t uctx;
    uint32_t pd;
    uint32_t send_cq;
    uint32_t recv_cq;
    uint32_t srq;
    uint8_t type;
    uint32_t max_send_wr;
    uint32_t max_recv_wr;
    uint32_t max_send_sge;
    uint32_t max_recv_sge;
    uint32_t max_inline_data;
} QrdmaTQp;

/* Create a QP with rings sized for the caps asked; caps out in *resp. */
uint8_t qrdma_t_create_qp(QrdmaT *t, const QrdmaTQp *p, uint32_t *qpn,
                          struct qrdma_create_qp_resp *resp);
uint8_t qrdma_t_modify_qp(QrdmaT *t, uint32_t uctx, uint32_t qpn,
                          const struct qrdma_qp_attr *attr);
uint8_t qrdma_t_query_qp(QrdmaT *t, uint32_t uctx, uint32_t qpn,
                         struct qrdma_query_qp_resp *resp);
void qrdma_t_set_gid(QrdmaT *t, uint32_t index);

/*
 * The random-input tests: a generator seeded with QRDMA_FUZZ_SEED, or a
 * fixed seed, which it prints so that a failure can be replayed; and the
 * length of a run, QRDMA_FUZZ_ITERS or dflt.
 */
GRand *qrdma_t_fuzz_rand(void);
unsigned qrdma_t_fuzz_iters(unsigned dflt);

#endif /* QTEST_QRDMA_QOS_H */
