/*
 * QEMU qrdma: emulated RDMA (RoCEv2) NIC, DMA into guest RAM and page lists
 *
 * Copyright (c) 2026 The qrdma developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/rcu.h"
#include "qemu/atomic.h"
#include "system/xen.h"
#include "hw/pci/pci_device.h"
#include "qrdma.h"
#include "qrdma_dma.h"
#include "qrdma_err.h"
#include "trace.h"

/*
 * Cached translations.  Translating a guest address through the memory
 * map costs more than a small message's whole transport; the device's
 * rings and buffers sit in few places, so it keeps, per 2 MiB block of
 * guest addresses, one MemoryRegionCache of the RAM found there.  They
 * are dropped whenever the memory map of the device's address space
 * changes (the listener's commit: a BAR moved, RAM unplugged, bus
 * mastering off), so an access is checked against the map of the moment
 * as before.  Behind a vIOMMU, whose mappings change without that, and
 * for anything that is not RAM, every access is translated anew.
 */
#define QRDMA_DMA_BLOCK_SHIFT 21

static void qrdma_dma_cache_drop(QrdmaDmaCache *dc)
{
    unsigned i;

    for (i = 0; i < QRDMA_DMA_CACHE_LEN; i++) {
        if (dc->e[i].valid) {
            address_space_cache_destroy(&dc->e[i].cache);
            dc->e[i].valid = false;
        }
    }
}

static void qrdma_dma_map_changed(MemoryListener *listener)
{
    QrdmaDmaCache *dc = container_of(listener, QrdmaDmaCache, listener);

    qrdma_dma_cache_drop(dc);
}

/*
 * Started on the first access: a cold-plugged function's bus master
 * address space is set up only once the machine is done.
 */
static bool qrdma_dma_cache_on(QrdmaCore *core)
{
    QrdmaDmaCache *dc = &core->dma;

    if (!dc->started) {
        dc->started = true;
        dc->usable = pci_device_iommu_address_space(core->owner) ==
                     &address_space_memory;
        if (dc->usable) {
            dc->as = pci_get_address_space(core->owner);
            dc->listener.name = "qrdma-dma";
            dc->listener.commit = qrdma_dma_map_changed;
            memory_listener_register(&dc->listener, dc->as);
        }
    }
    return dc->usable;
}

void qrdma_dma_cleanup(QrdmaCore *core)
{
    QrdmaDmaCache *dc = &core->dma;

    if (dc->usable) {
        memory_listener_unregister(&dc->listener);
        qrdma_dma_cache_drop(dc);
    }
    dc->started = dc->usable = false;
}

static bool qrdma_dma_is_ram(const MemoryRegionCache *c)
{
    return c->ptr && memory_region_is_ram(c->mrs.mr) &&
           !memory_region_is_ram_device(c->mrs.mr);
}

/* Cache the RAM from addr to the end of its block (or of the RAM). */
static bool qrdma_dma_cache_fill(QrdmaDmaCache *dc, QrdmaDmaEntry *e,
                                 uint64_t addr)
{
    uint64_t end = (addr | ((1ull << QRDMA_DMA_BLOCK_SHIFT) - 1)) + 1;

    if (e->valid) {
        address_space_cache_destroy(&e->cache);
        e->valid = false;
    }
    e->writable = true;
    address_space_cache_init(&e->cache, dc->as, addr, end - addr, true);
    if (!qrdma_dma_is_ram(&e->cache)) {
        /* Read-only RAM (a ROM) has no pointer for writing: read then. */
        address_space_cache_destroy(&e->cache);
        e->writable = false;
        address_space_cache_init(&e->cache, dc->as, addr, end - addr, false);
        if (!qrdma_dma_is_ram(&e->cache)) {
            address_space_cache_destroy(&e->cache);
            return false;
        }
    }
    /*
     * Whether writes are logged can change only with a commit of the
     * memory map (migration starting, a region logging), which drops
     * every entry: asked once here.
     */
    e->log_dirty = memory_region_get_dirty_log_mask(e->cache.mrs.mr) ||
                   xen_enabled();
    e->start = addr;
    e->valid = true;
    return true;
}

/*
 * Bytes the device wrote through a cached translation: dirty for
 * migration, and TCG's code built from them dropped.  With nobody
 * logging dirty memory (no migration, not TCG, not Xen) there is
 * nothing to do, and the bookkeeping costs as much as a small message.
 */
static inline void qrdma_dma_written(QrdmaDmaEntry *e, hwaddr off,
                                     hwaddr len)
{
    if (e->log_dirty) {
        address_space_cache_invalidate(&e->cache, off, len);
    }
}

/*
 * The cached RAM at addr, and in *room the bytes of it from there; NULL
 * when it is not cached RAM (then the slow path translates).
 */
static QrdmaDmaEntry *qrdma_dma_lookup_slow(QrdmaCore *core, uint64_t addr,
                                            bool is_write, uint64_t *room)
{
    QrdmaDmaCache *dc = &core->dma;
    QrdmaDmaEntry *e;

    if (!qrdma_dma_cache_on(core)) {
        return NULL;
    }
    e = &dc->e[(addr >> QRDMA_DMA_BLOCK_SHIFT) % QRDMA_DMA_CACHE_LEN];
    if (!qrdma_dma_cache_fill(dc, e, addr) || (is_write && !e->writable)) {
        return NULL;
    }
    *room = e->cache.len;
    return e;
}

/* Entries exist only while the cache is usable: a hit needs no more. */
static inline QrdmaDmaEntry *qrdma_dma_lookup(QrdmaCore *core, uint64_t addr,
                                              bool is_write, uint64_t *room)
{
    QrdmaDmaEntry *e = &core->dma.e[(addr >> QRDMA_DMA_BLOCK_SHIFT) %
                                    QRDMA_DMA_CACHE_LEN];
    uint64_t off = addr - e->start;

    if (likely(e->valid && off < e->cache.len &&
               (e->writable || !is_write))) {
        *room = e->cache.len - off;
        return e;
    }
    return qrdma_dma_lookup_slow(core, addr, is_write, room);
}

/*
 * Whether [addr, addr + len) is guest RAM the device may access (writable
 * RAM when is_write).  The device reads and writes nothing else: not MMIO,
 * not its own BARs, not unassigned space.
 */
bool qrdma_dma_ok(QrdmaCore *core, uint64_t addr, uint64_t len, bool is_write)
{
    AddressSpace *as = pci_get_address_space(core->owner);
    uint64_t room;

    if (!len || addr + len < addr) {
        return false;
    }
    while (len && qrdma_dma_lookup(core, addr, is_write, &room)) {
        room = MIN(room, len);
        addr += room;
        len -= room;
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
    QrdmaDmaEntry *e;
    uint64_t room;

    e = len ? qrdma_dma_lookup(core, addr, false, &room) : NULL;
    if (e && room >= len) {
        memcpy(buf, e->cache.ptr + (addr - e->start), len);
        return true;
    }
    return qrdma_dma_ok(core, addr, len, false) &&
           pci_dma_read(core->owner, addr, buf, len) == MEMTX_OK;
}

bool qrdma_dma_write(QrdmaCore *core, uint64_t addr, const void *buf,
                     uint64_t len)
{
    QrdmaDmaEntry *e;
    uint64_t room;

    e = len ? qrdma_dma_lookup(core, addr, true, &room) : NULL;
    if (e && room >= len) {
        memcpy(e->cache.ptr + (addr - e->start), buf, len);
        qrdma_dma_written(e, addr - e->start, len);
        return true;
    }
    return qrdma_dma_ok(core, addr, len, true) &&
           pci_dma_write(core->owner, addr, buf, len) == MEMTX_OK;
}

bool qrdma_dma_publish(QrdmaCore *core, uint64_t addr, const void *buf,
                       uint64_t len, uint64_t last)
{
    const uint8_t *b = buf;
    QrdmaDmaEntry *e;
    uint8_t *host;
    uint64_t room;

    e = qrdma_dma_lookup(core, addr, true, &room);
    if (e && room >= len) {
        host = e->cache.ptr + (addr - e->start);
        memcpy(host, b, last);
        memcpy(host + last + 1, b + last + 1, len - last - 1);
        /* The consumer polls that byte: the rest is visible first. */
        smp_wmb();
        qatomic_set(host + last, b[last]);
        qrdma_dma_written(e, addr - e->start, len);
        return true;
    }
    if (!qrdma_dma_write(core, addr, b, last) ||
        !qrdma_dma_write(core, addr + last + 1, b + last + 1,
                         len - last - 1)) {
        return false;
    }
    /* As above: the polled byte only after the rest is visible. */
    smp_wmb();
    return qrdma_dma_write(core, addr + last, b + last, 1);
}

/*
 * Map up to len bytes of guest RAM at addr for the device to copy from
 * (dir DMA_DIRECTION_TO_DEVICE) or into; m->len becomes what was mapped.
 * Checked now, not only when an MR or ring was registered: the guest may
 * change its memory map in between, and behind a vIOMMU remap at will.
 * Anything else (MMIO, a peer's doorbells, unassigned space) is refused
 * before it is touched, where dma_memory_map would bounce it through
 * MMIO accesses.
 */
bool qrdma_dma_map(QrdmaCore *core, uint64_t addr, dma_addr_t len,
                   DMADirection dir, QrdmaMap *m)
{
    AddressSpace *as = pci_get_address_space(core->owner);
    bool is_write = dir == DMA_DIRECTION_FROM_DEVICE;
    hwaddr xlat, plen = len;
    QrdmaDmaEntry *e;
    MemoryRegion *mr;
    uint64_t room;

    m->dir = dir;
    m->entry = NULL;
    if (!len) {
        return false;
    }
    e = qrdma_dma_lookup(core, addr, is_write, &room);
    if (e) {
        m->entry = e;
        m->off = addr - e->start;
        m->host = e->cache.ptr + m->off;
        m->len = MIN(len, room);
        return true;
    }
    WITH_RCU_READ_LOCK_GUARD() {
        mr = address_space_translate(as, addr, &xlat, &plen, is_write,
                                     MEMTXATTRS_UNSPECIFIED);
        if (!memory_region_is_ram(mr) || memory_region_is_ram_device(mr) ||
            (is_write && mr->readonly) || !plen) {
            QRDMA_GUEST_ERR(core, qrdma_err_dma_not_ram,
                            "DMA 0x%" PRIx64 "+0x%" PRIx64
                            " (write %d): not guest RAM", addr, len, is_write);
            return false;
        }
    }
    m->len = MIN(len, plen);
    m->host = dma_memory_map(as, addr, &m->len, dir, MEMTXATTRS_UNSPECIFIED);
    return m->host != NULL;
}

void qrdma_dma_unmap(QrdmaCore *core, QrdmaMap *m, dma_addr_t done)
{
    if (!m->entry) {
        dma_memory_unmap(pci_get_address_space(core->owner), m->host, m->len,
                         m->dir, done);
    } else if (m->dir == DMA_DIRECTION_FROM_DEVICE && done) {
        qrdma_dma_written(m->entry, m->off, done);
    }
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
        QRDMA_GUEST_ERR(core, qrdma_err_pages_count, "%s: page list of %" PRIu32
                        " entries, limit %" PRIu32, what, n, max);
        return QRDMA_STATUS_BAD_PARAM;
    }
    if (!QEMU_IS_ALIGNED(addr, sizeof(uint64_t))) {
        QRDMA_GUEST_ERR(core, qrdma_err_pages_misaligned,
                        "%s: page list at 0x%" PRIx64 " is misaligned", what,
                        addr);
        return QRDMA_STATUS_BAD_PARAM;
    }
    list = g_try_new(uint64_t, n);
    if (!list) {
        QRDMA_GUEST_ERR(core, qrdma_err_pages_no_memory,
                        "%s: no memory for a page " "list of %" PRIu32, what,
                        n);
        return QRDMA_STATUS_NO_RESOURCES;
    }
    if (!qrdma_dma_read(core, addr, list, (uint64_t)n * sizeof(uint64_t))) {
        g_free(list);
        QRDMA_GUEST_ERR(core, qrdma_err_pages_not_ram,
                        "%s: page list at 0x%" PRIx64 " is not in RAM", what,
                        addr);
        return QRDMA_STATUS_BAD_ADDR;
    }
    for (i = 0; i < n; i++) {
        list[i] = le64_to_cpu(list[i]);
        if (!QEMU_IS_ALIGNED(list[i], page_size) ||
            !qrdma_dma_ok(core, list[i], page_size, writable)) {
            uint64_t bad = list[i];

            g_free(list);
            QRDMA_GUEST_ERR(core, qrdma_err_pages_bad_page, "%s: page %" PRIu32
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
