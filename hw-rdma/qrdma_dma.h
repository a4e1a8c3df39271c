/*
 * QEMU qrdma: emulated RDMA (RoCEv2) NIC, DMA into guest RAM and page lists
 *
 * Copyright (c) 2026 The qrdma developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef HW_RDMA_QRDMA_DMA_H
#define HW_RDMA_QRDMA_DMA_H

#include "system/dma.h"

typedef struct QrdmaCore QrdmaCore;

/* A list of guest pages, read from guest memory once, at create time. */
typedef struct QrdmaPages {
    uint64_t *addr;
    uint32_t n;
} QrdmaPages;

/*
 * The device reads and writes guest RAM only (see the RAM-only DMA rule
 * of docs/specs/qrdma.rst), checked at every access.
 */
bool qrdma_dma_ok(QrdmaCore *core, uint64_t addr, uint64_t len,
                  bool is_write);
bool qrdma_dma_read(QrdmaCore *core, uint64_t addr, void *buf, uint64_t len);
bool qrdma_dma_write(QrdmaCore *core, uint64_t addr, const void *buf,
                     uint64_t len);
/*
 * Write len bytes at addr, the byte at offset last (a valid or phase
 * flag the consumer polls) after all the others are visible.
 */
bool qrdma_dma_publish(QrdmaCore *core, uint64_t addr, const void *buf,
                       uint64_t len, uint64_t last);

/* A piece of guest RAM mapped for the device to copy into or out of. */
typedef struct QrdmaMap {
    uint8_t *host;
    dma_addr_t len;
    DMADirection dir;
    struct QrdmaDmaEntry *entry;        /* its cached translation, or NULL */
    hwaddr off;                         /* within that */
} QrdmaMap;

bool qrdma_dma_map(QrdmaCore *core, uint64_t addr, dma_addr_t len,
                   DMADirection dir, QrdmaMap *m);
/* done: the bytes written, for a map the device wrote into. */
void qrdma_dma_unmap(QrdmaCore *core, QrdmaMap *m, dma_addr_t done);

/* Translations of guest RAM the device keeps (see qrdma_dma.c). */
#define QRDMA_DMA_CACHE_LEN 64

typedef struct QrdmaDmaEntry {
    bool valid;
    bool writable;
    bool log_dirty;                     /* writes must be marked dirty */
    uint64_t start;                     /* guest address cache starts at */
    MemoryRegionCache cache;
} QrdmaDmaEntry;

typedef struct QrdmaDmaCache {
    bool started;
    bool usable;                        /* no vIOMMU in the way */
    AddressSpace *as;
    MemoryListener listener;
    QrdmaDmaEntry e[QRDMA_DMA_CACHE_LEN];
} QrdmaDmaCache;

void qrdma_dma_cleanup(QrdmaCore *core);

void qrdma_pages_free(QrdmaPages *pages);
uint8_t qrdma_pages_read(QrdmaCore *core, const char *what, uint64_t addr,
                         uint32_t n, uint32_t max, unsigned page_shift,
                         bool writable, QrdmaPages *out);
/* The guest address of entry idx (taken modulo 2^log2) of a ring. */
uint64_t qrdma_ring_addr(const QrdmaPages *ring, uint32_t idx, uint32_t log2,
                         uint32_t entry_size);
/* The pages a ring of 2^log2 entries of the given size takes. */
uint32_t qrdma_ring_pages(uint32_t log2, uint32_t entry_size);

#endif /* HW_RDMA_QRDMA_DMA_H */
