/*
 * QEMU qrdma: emulated RDMA (RoCEv2) NIC, handle tables
 *
 * Copyright (c) 2026 The qrdma developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/bitops.h"
#include "qemu/guest-random.h"
#include "qrdma_table.h"

/* How many slots the free ring can hold: every one but the reserved. */
static uint32_t qrdma_table_ring_size(const QrdmaTable *t)
{
    return t->max - t->first;
}

static void qrdma_table_push_free(QrdmaTable *t, uint32_t idx)
{
    uint32_t size = qrdma_table_ring_size(t);

    t->free[(t->free_head + t->nfree) % size] = idx;
    t->nfree++;
}

/*
 * The free slots in the order a search round the table from start would
 * meet them, so that a table that is not random hands out slots in turn.
 */
static void qrdma_table_refill(QrdmaTable *t, uint32_t start)
{
    uint32_t size = qrdma_table_ring_size(t), i, idx;

    t->free_head = 0;
    t->nfree = 0;
    if (start < t->first || start >= t->max) {
        start = t->first;
    }
    for (i = 0; i < size; i++) {
        idx = t->first + (start - t->first + i) % size;
        if (!t->busy[idx]) {
            qrdma_table_push_free(t, idx);
        }
    }
}

void qrdma_table_init(QrdmaTable *t, const char *name, uint32_t max,
                             uint32_t first)
{
    t->name = name;
    t->max = max;
    t->first = first;
    t->in_use = 0;
    t->gen = g_new0(uint8_t, max);
    t->busy = g_new0(bool, max);
    t->free = g_new(uint32_t, qrdma_table_ring_size(t));
    qrdma_table_refill(t, first);
}

void qrdma_table_destroy(QrdmaTable *t)
{
    g_free(t->gen);
    g_free(t->busy);
    g_free(t->free);
    t->gen = NULL;
    t->busy = NULL;
    t->free = NULL;
}

void qrdma_table_reset(QrdmaTable *t)
{
    uint32_t i;

    for (i = 0; i < t->max; i++) {
        if (t->busy[i]) {
            qrdma_table_free(t, i);
        }
    }
    qrdma_table_refill(t, t->first);
}

void qrdma_table_load(QrdmaTable *t, const uint8_t *gen, uint32_t next,
                      const uint32_t *slot, uint32_t n)
{
    uint32_t i;

    memcpy(t->gen, gen, t->max);
    memset(t->busy, 0, t->max * sizeof(bool));
    for (i = 0; i < n; i++) {
        t->busy[slot[i]] = true;
    }
    t->in_use = n;
    qrdma_table_refill(t, next);
}

uint32_t qrdma_table_next(const QrdmaTable *t)
{
    return t->nfree ? t->free[t->free_head] : t->first;
}

/* The slot a handle names while that slot is live, or -1. */
int qrdma_table_lookup(const QrdmaTable *t, uint32_t handle)
{
    uint32_t slot = handle & MAKE_64BIT_MASK(0, QRDMA_HANDLE_INDEX_BITS);
    uint32_t idx = slot - 1;

    if (!slot || idx >= t->max || !t->busy[idx] ||
        handle >> QRDMA_HANDLE_INDEX_BITS != t->gen[idx]) {
        return -1;
    }
    return idx;
}

uint32_t qrdma_table_handle(const QrdmaTable *t, uint32_t idx)
{
    return ((uint32_t)t->gen[idx] << QRDMA_HANDLE_INDEX_BITS) | (idx + 1);
}

int qrdma_table_alloc(QrdmaTable *t)
{
    uint32_t size = qrdma_table_ring_size(t), idx, r;

    if (!t->nfree) {
        return -1;
    }
    if (t->random) {
        uint32_t pick;

        /*
         * Any free slot alike, whatever the order they were freed in: the
         * one drawn trades places with the head, which is taken.
         */
        qemu_guest_getrandom_nofail(&r, sizeof(r));
        pick = (t->free_head + r % t->nfree) % size;
        idx = t->free[pick];
        t->free[pick] = t->free[t->free_head];
    } else {
        idx = t->free[t->free_head];
    }
    t->free_head = (t->free_head + 1) % size;
    t->nfree--;
    t->busy[idx] = true;
    t->in_use++;
    return idx;
}

void qrdma_table_alloc_reserved(QrdmaTable *t, uint32_t idx)
{
    assert(idx < t->first && !t->busy[idx]);
    t->busy[idx] = true;
    t->in_use++;
}

void qrdma_table_free(QrdmaTable *t, uint32_t idx)
{
    t->busy[idx] = false;
    t->in_use--;
    /* The reserved slots keep their fixed handles (QP 1 is always GSI). */
    if (idx >= t->first) {
        uint8_t gen = t->gen[idx];

        if (t->random) {
            /* Any generation but the one just freed. */
            qemu_guest_getrandom_nofail(&gen, sizeof(gen));
            gen += gen == t->gen[idx];
        } else {
            gen++;
        }
        t->gen[idx] = gen;
        qrdma_table_push_free(t, idx);
    }
}
