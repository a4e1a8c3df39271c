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
void *qrdma_dma_map(QrdmaCore *core, uint64_t addr, dma_addr_t *len,
                    DMADirection dir);
void qrdma_dma_unmap(QrdmaCore *core, void *p, dma_addr_t len,
                     DMADirection dir, dma_addr_t done);

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
