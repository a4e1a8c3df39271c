/*
 * QEMU qrdma: emulated RDMA (RoCEv2) NIC, DMA into guest RAM and page lists
 *
 * Copyright (c) 2026 The qrdma developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/rcu.h"
#include "exec/memory.h"
#include "hw/pci/pci_device.h"
#include "qrdma.h"
#include "qrdma_dma.h"
#include "qrdma_err.h"
#include "trace.h"

/*
 * Whether [addr, addr + len) is guest RAM the device may access (writable
 * RAM when is_write).  The device reads and writes nothing else: not MMIO,
 * not its own BARs, not unassigned space.
 */
bool qrdma_dma_ok(QrdmaCore *core, uint64_t addr, uint64_t len, bool is_write)
{
    AddressSpace *as = pci_get_address_space(core->owner);

    if (!len || addr + len < addr) {
        return false;
    }

    RCU_READ_LOCK_GUARD();
    while (len) {
        hwaddr xlat, plen = len;
        MemoryRegion *mr;

        mr = address_space_translate(as, addr, &xlat, &plen, is_write,
                                     MEMTXATTRS_UNSPECIFIED);
        if (!memory_region_is_ram(mr) || memory_region_is_ram_device(mr) ||
            (is_write && mr->readonly) || !plen) {
            return false;
        }
        addr += plen;
        len -= plen;
    }
    return true;
}

bool qrdma_dma_read(QrdmaCore *core, uint64_t addr, void *buf, uint64_t len)
{
    return qrdma_dma_ok(core, addr, len, false) &&
           pci_dma_read(core->owner, addr, buf, len) == MEMTX_OK;
}

bool qrdma_dma_write(QrdmaCore *core, uint64_t addr, const void *buf,
                     uint64_t len)
{
    return qrdma_dma_ok(core, addr, len, true) &&
           pci_dma_write(core->owner, addr, buf, len) == MEMTX_OK;
}

/*
 * Map up to *len bytes of guest RAM at addr for the device to copy from
 * (dir DMA_DIRECTION_TO_DEVICE) or into; *len becomes what was mapped.
 * Checked now, not only when an MR or ring was registered: the guest may
 * change its memory map in between, and behind a vIOMMU remap at will.
 * Anything else (MMIO, a peer's doorbells, unassigned space) is refused
 * before it is touched, where dma_memory_map would bounce it through
 * MMIO accesses.
 */
void *qrdma_dma_map(QrdmaCore *core, uint64_t addr, dma_addr_t *len,
                    DMADirection dir)
{
    AddressSpace *as = pci_get_address_space(core->owner);
    bool is_write = dir == DMA_DIRECTION_FROM_DEVICE;
    hwaddr xlat, plen = *len;
    MemoryRegion *mr;

    if (!plen) {
        return NULL;
    }
    WITH_RCU_READ_LOCK_GUARD() {
        mr = address_space_translate(as, addr, &xlat, &plen, is_write,
                                     MEMTXATTRS_UNSPECIFIED);
        if (!memory_region_is_ram(mr) || memory_region_is_ram_device(mr) ||
            (is_write && mr->readonly) || !plen) {
            QRDMA_GUEST_ERR(core, dma_not_ram, "DMA 0x%" PRIx64 "+0x%" PRIx64
                            " (write %d): not guest RAM", addr, *len,
                            is_write);
            return NULL;
        }
    }
    *len = MIN(*len, plen);
    return dma_memory_map(as, addr, len, dir, MEMTXATTRS_UNSPECIFIED);
}

void qrdma_dma_unmap(QrdmaCore *core, void *p, dma_addr_t len,
                     DMADirection dir, dma_addr_t done)
{
    dma_memory_unmap(pci_get_address_space(core->owner), p, len, dir, done);
}

void qrdma_pages_free(QrdmaPages *pages)
{
    g_free(pages->addr);
    pages->addr = NULL;
    pages->n = 0;
}

/* The guest address of entry idx (taken modulo 2^log2) of a ring. */
uint64_t qrdma_ring_addr(const QrdmaPages *ring, uint32_t idx, uint32_t log2,
                         uint32_t entry_size)
{
    uint64_t off = (uint64_t)(idx & ((1u << log2) - 1)) * entry_size;

    return ring->addr[off >> QRDMA_PAGE_SHIFT] + (off & (QRDMA_PAGE_SIZE - 1));
}

/* The pages a ring of 2^log2 entries of the given size takes. */
uint32_t qrdma_ring_pages(uint32_t log2, uint32_t entry_size)
{
    return DIV_ROUND_UP((uint64_t)entry_size << log2, QRDMA_PAGE_SIZE);
}

/*
 * Read a page list of n entries from addr: every entry must be a guest RAM
 * page of 2^page_shift bytes, aligned, and writable where the device will
 * always write (rings).  An MR's pages need only be readable here: behind
 * an IOMMU a ULP may map a buffer the device only reads (DMA_TO_DEVICE)
 * and register it with write access all the same, and every write checks
 * its page when it happens (qrdma_dma_map).  The list is kept in device
 * memory, so later accesses never read it from the guest again.  A
 * failure is reported as the guest's error in `what`, the command or work
 * request that named the list.
 */
uint8_t qrdma_pages_read(QrdmaCore *core, const char *what, uint64_t addr,
                         uint32_t n, uint32_t max, unsigned page_shift,
                         bool writable, QrdmaPages *out)
{
    uint64_t page_size = 1ull << page_shift;
    uint64_t *list;
    uint32_t i;

    if (n == 0 || n > max) {
        QRDMA_GUEST_ERR(core, pages_count, "%s: page list of %" PRIu32
                        " entries, limit %" PRIu32, what, n, max);
        return QRDMA_STATUS_BAD_PARAM;
    }
    if (!QEMU_IS_ALIGNED(addr, sizeof(uint64_t))) {
        QRDMA_GUEST_ERR(core, pages_misaligned, "%s: page list at 0x%" PRIx64
                        " is misaligned", what, addr);
        return QRDMA_STATUS_BAD_PARAM;
    }
    list = g_try_new(uint64_t, n);
    if (!list) {
        QRDMA_GUEST_ERR(core, pages_no_memory, "%s: no memory for a page "
                        "list of %" PRIu32, what, n);
        return QRDMA_STATUS_NO_RESOURCES;
    }
    if (!qrdma_dma_read(core, addr, list, (uint64_t)n * sizeof(uint64_t))) {
        g_free(list);
        QRDMA_GUEST_ERR(core, pages_not_ram, "%s: page list at 0x%" PRIx64
                        " is not in RAM", what, addr);
        return QRDMA_STATUS_BAD_ADDR;
    }
    for (i = 0; i < n; i++) {
        list[i] = le64_to_cpu(list[i]);
        if (!QEMU_IS_ALIGNED(list[i], page_size) ||
            !qrdma_dma_ok(core, list[i], page_size, writable)) {
            uint64_t bad = list[i];

            g_free(list);
            QRDMA_GUEST_ERR(core, pages_bad_page, "%s: page %" PRIu32
                            " at 0x%" PRIx64 " is not an aligned page of "
                            "guest RAM (writable %d)", what, i, bad,
                            writable);
            return QRDMA_STATUS_BAD_ADDR;
        }
    }
    out->addr = list;
    out->n = n;
    return QRDMA_STATUS_OK;
}
