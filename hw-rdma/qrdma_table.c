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

void qrdma_table_init(QrdmaTable *t, const char *name, uint32_t max,
                             uint32_t first)
{
    t->name = name;
    t->max = max;
    t->first = first;
    t->in_use = 0;
    t->next = first;
    t->gen = g_new0(uint8_t, max);
    t->busy = g_new0(bool, max);
}

void qrdma_table_destroy(QrdmaTable *t)
{
    g_free(t->gen);
    g_free(t->busy);
    t->gen = NULL;
    t->busy = NULL;
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
    uint32_t i, idx, r;

    if (t->random && t->max > t->first) {
        qemu_guest_getrandom_nofail(&r, sizeof(r));
        t->next = t->first + r % (t->max - t->first);
    }
    for (i = t->first; i < t->max; i++) {
        idx = t->next;
        t->next = idx + 1 < t->max ? idx + 1 : t->first;
        if (!t->busy[idx]) {
            t->busy[idx] = true;
            t->in_use++;
            return idx;
        }
    }
    return -1;
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
    }
}
