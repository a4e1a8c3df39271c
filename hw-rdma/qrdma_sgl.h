/*
 * QEMU qrdma: emulated RDMA (RoCEv2) NIC, scatter/gather lists and copies
 *
 * Copyright (c) 2026 The qrdma developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef HW_RDMA_QRDMA_SGL_H
#define HW_RDMA_QRDMA_SGL_H

#include "hw/rdma/qrdma-hw.h"

typedef struct QrdmaCore QrdmaCore;
typedef struct QrdmaMr QrdmaMr;

typedef struct QrdmaSpan {
    const QrdmaMr *mr;                  /* NULL: untranslated guest address */
    uint64_t addr;
    uint64_t len;
} QrdmaSpan;

/*
 * The bytes of a message, in order: spans of one device's guest memory
 * (the SGEs of a WQE, a remote range), or bytes of the host (inline data,
 * a received frame).  A position in it moves as bytes are copied or
 * skipped, so a message can be moved a packet at a time.
 */
typedef struct QrdmaIter {
    QrdmaCore *core;                    /* whose guest memory */
    QrdmaSpan span[QRDMA_MAX_SEND_SGE];
    unsigned n;
    unsigned i;
    uint64_t done;                      /* within span[i] */
    const uint8_t *host;                /* or: host bytes */
    uint64_t host_len;
    uint64_t host_done;
    const struct iovec *hv;             /* or: host bytes in pieces */
    unsigned hv_n;
    unsigned hv_i;                      /* host_done is within hv[hv_i] */
} QrdmaIter;

/* An iterator over host bytes. */
void qrdma_iter_host(QrdmaIter *it, const void *buf, uint64_t len);
/* An iterator over n pieces of host bytes, none empty, which it keeps. */
void qrdma_iter_hostv(QrdmaIter *it, const struct iovec *iov, unsigned n);
/* Whether it reads host bytes rather than a guest's memory. */
static inline bool qrdma_iter_is_host(const QrdmaIter *it)
{
    return it->host || it->hv;
}
/* An iterator over one range of an MR of core (mr NULL: untranslated). */
void qrdma_iter_range(QrdmaIter *it, QrdmaCore *core, const QrdmaMr *mr,
                      uint64_t addr, uint64_t len);
/*
 * An iterator over SGEs of core, each checked against the PD and access
 * rights: false (with a guest error) if one fails.  Empty SGEs are left
 * out.
 */
bool qrdma_iter_sges(QrdmaIter *it, QrdmaCore *core, uint32_t pd,
                     uint32_t uctx, const struct qrdma_sge *sge, unsigned num,
                     uint32_t access);
/* All the bytes, from the start. */
uint64_t qrdma_iter_total(const QrdmaIter *it);
/* Move the position len bytes on, copying nothing; false past the end. */
bool qrdma_iter_skip(QrdmaIter *it, uint64_t len);
/* Move the position to off bytes from the start. */
void qrdma_iter_seek(QrdmaIter *it, uint64_t off);
/*
 * The next len bytes of a guest's memory, a piece at a time as host
 * pointers, each to fn, the position moved on: false when a piece is not
 * guest RAM, the iterator holds host bytes, or fn says false.
 */
typedef bool QrdmaHostPieceFn(void *opaque, void *host, uint64_t len);
bool qrdma_iter_each_host(QrdmaIter *it, uint64_t len, QrdmaHostPieceFn *fn,
                          void *opaque);
typedef enum QrdmaCopy {
    QRDMA_COPY_OK,
    QRDMA_COPY_SRC_ERR,                 /* the source ended or is not RAM */
    QRDMA_COPY_DST_ERR,                 /* the same of the destination */
} QrdmaCopy;

/*
 * Copy len bytes from src to dst, both moved on: one copy between mapped
 * guest pages, each piece checked to be guest RAM as it is mapped.
 */
QrdmaCopy qrdma_copy(QrdmaIter *src, QrdmaIter *dst, uint64_t len);

#endif /* HW_RDMA_QRDMA_SGL_H */
