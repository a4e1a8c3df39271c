/*
 * QEMU qrdma: emulated RDMA (RoCEv2) NIC, handle tables
 *
 * Copyright (c) 2026 The qrdma developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef HW_RDMA_QRDMA_TABLE_H
#define HW_RDMA_QRDMA_TABLE_H

/* Handles carry a slot index (low 16 bits) and a generation (bits 16-23). */
#define QRDMA_HANDLE_INDEX_BITS         16
#define QRDMA_TABLE_MAX                 0xfff0

/*
 * Bookkeeping of one kind of resource: which slots are in use, and the
 * generation of each slot, bumped on free so that a stale handle to a
 * reused slot is refused.
 */
typedef struct QrdmaTable {
    const char *name;
    uint32_t max;
    uint32_t in_use;
    uint32_t first;                     /* slots below are reserved */
    /*
     * Slots and generations drawn at random, so that the handles a peer
     * on the wire sees (QPNs, rkeys) tell it nothing of the others.
     */
    bool random;
    uint8_t *gen;
    bool *busy;
    /*
     * The free slots from first on, a ring of max - first in the order
     * they were freed: an allocation takes one in constant time however
     * full the table is, and a table that is not random reuses a slot as
     * late as it can.
     */
    uint32_t *free;
    uint32_t free_head;
    uint32_t nfree;
} QrdmaTable;

void qrdma_table_init(QrdmaTable *t, const char *name, uint32_t max,
                      uint32_t first);
void qrdma_table_destroy(QrdmaTable *t);
/* Every slot freed, as each would be, and handed out from first again. */
void qrdma_table_reset(QrdmaTable *t);
/*
 * The state a migration stream gave, of a table that holds nothing yet:
 * the generations, the n slots in use, and where allocation goes on.
 */
void qrdma_table_load(QrdmaTable *t, const uint8_t *gen, uint32_t next,
                      const uint32_t *slot, uint32_t n);
/* The slot a table that is not random hands out next, for the stream. */
uint32_t qrdma_table_next(const QrdmaTable *t);
/* The slot a handle names while that slot is live, or -1. */
int qrdma_table_lookup(const QrdmaTable *t, uint32_t handle);
uint32_t qrdma_table_handle(const QrdmaTable *t, uint32_t idx);
/* A free slot, or -1 when all are in use. */
int qrdma_table_alloc(QrdmaTable *t);
/* The reserved slot idx, which must be free. */
void qrdma_table_alloc_reserved(QrdmaTable *t, uint32_t idx);
void qrdma_table_free(QrdmaTable *t, uint32_t idx);

#endif /* HW_RDMA_QRDMA_TABLE_H */
