/*
 * QEMU qrdma: emulated RDMA (RoCEv2) NIC, scatter/gather lists and copies
 *
 * Copyright (c) 2026 The qrdma developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "system/dma.h"
#include "qrdma.h"
#include "qrdma_mr.h"
#include "qrdma_sgl.h"

void qrdma_iter_host(QrdmaIter *it, const void *buf, uint64_t len)
{
    it->core = NULL;
    it->n = it->i = 0;
    it->done = 0;
    it->host = buf;
    it->host_len = len;
    it->host_done = 0;
    it->hv = NULL;
    it->hv_n = it->hv_i = 0;
}

void qrdma_iter_hostv(QrdmaIter *it, const struct iovec *iov, unsigned n)
{
    unsigned i;

    it->core = NULL;
    it->n = it->i = 0;
    it->done = 0;
    it->host = NULL;
    it->host_len = 0;
    for (i = 0; i < n; i++) {
        it->host_len += iov[i].iov_len;
    }
    it->host_done = 0;
    it->hv = iov;
    it->hv_n = n;
    it->hv_i = 0;
}

void qrdma_iter_range(QrdmaIter *it, QrdmaCore *core, const QrdmaMr *mr,
                      uint64_t addr, uint64_t len)
{
    it->core = core;
    it->host = NULL;
    it->host_len = it->host_done = 0;
    it->hv = NULL;
    it->hv_n = it->hv_i = 0;
    it->i = 0;
    it->done = 0;
    it->n = len ? 1 : 0;
    it->span[0].mr = mr;
    it->span[0].addr = addr;
    it->span[0].len = len;
}

bool qrdma_iter_sges(QrdmaIter *it, QrdmaCore *core, uint32_t pd,
                     uint32_t uctx, const struct qrdma_sge *sge, unsigned num,
                     uint32_t access)
{
    unsigned i;

    qrdma_iter_range(it, core, NULL, 0, 0);
    if (num > ARRAY_SIZE(it->span)) {
        return false;
    }
    for (i = 0; i < num; i++) {
        uint64_t addr = le64_to_cpu(sge[i].addr);
        uint32_t len = le32_to_cpu(sge[i].length);

        if (!len) {
            continue;
        }
        if (!qrdma_mr_check(core, le32_to_cpu(sge[i].lkey), pd, uctx,
                            addr, len, access, &it->span[it->n].mr)) {
            return false;
        }
        it->span[it->n].addr = addr;
        it->span[it->n].len = len;
        it->n++;
    }
    return true;
}

uint64_t qrdma_iter_total(const QrdmaIter *it)
{
    uint64_t total = qrdma_iter_is_host(it) ? it->host_len : 0;
    unsigned i;

    for (i = 0; i < it->n; i++) {
        total += it->span[i].len;
    }
    return total;
}

bool qrdma_iter_skip(QrdmaIter *it, uint64_t len)
{
    while (it->hv && len) {
        uint64_t n;

        if (it->hv_i == it->hv_n) {
            return false;
        }
        n = MIN(len, it->hv[it->hv_i].iov_len - it->host_done);
        it->host_done += n;
        len -= n;
        if (it->host_done == it->hv[it->hv_i].iov_len) {
            it->hv_i++;
            it->host_done = 0;
        }
    }
    if (it->hv) {
        return true;
    }
    if (it->host) {
        if (len > it->host_len - it->host_done) {
            return false;
        }
        it->host_done += len;
        return true;
    }
    while (len) {
        uint64_t n;

        if (it->i == it->n) {
            return false;
        }
        n = MIN(len, it->span[it->i].len - it->done);
        it->done += n;
        len -= n;
        if (it->done == it->span[it->i].len) {
            it->i++;
            it->done = 0;
        }
    }
    return true;
}

void qrdma_iter_seek(QrdmaIter *it, uint64_t off)
{
    it->i = 0;
    it->done = 0;
    it->host_done = 0;
    it->hv_i = 0;
    qrdma_iter_skip(it, off);
}

/*
 * The next contiguous piece, at most max bytes: a host pointer, or a
 * guest-physical address (*host NULL).
 */
static inline bool qrdma_iter_next(QrdmaIter *it, uint64_t max,
                                   uint64_t *gpa, const uint8_t **host,
                                   uint64_t *len)
{
    const QrdmaSpan *s;
    uint64_t room;

    *host = NULL;
    if (it->hv) {
        while (it->hv_i < it->hv_n &&
               it->host_done == it->hv[it->hv_i].iov_len) {
            it->hv_i++;
            it->host_done = 0;
        }
        if (it->hv_i == it->hv_n) {
            return false;
        }
        *host = (const uint8_t *)it->hv[it->hv_i].iov_base + it->host_done;
        *len = MIN(max, it->hv[it->hv_i].iov_len - it->host_done);
        return true;
    }
    if (it->host) {
        if (it->host_done == it->host_len) {
            return false;
        }
        *host = it->host + it->host_done;
        *len = MIN(max, it->host_len - it->host_done);
        return true;
    }
    while (it->i < it->n && it->done == it->span[it->i].len) {
        it->i++;
        it->done = 0;
    }
    if (it->i == it->n) {
        return false;
    }
    s = &it->span[it->i];
    if (s->mr) {
        *gpa = qrdma_mr_gpa(s->mr, s->addr + it->done,
                            MIN(max, s->len - it->done), &room);
    } else {
        *gpa = s->addr + it->done;
        room = UINT64_MAX;
    }
    *len = MIN(MIN(room, s->len - it->done), max);
    return true;
}

static void qrdma_iter_advance(QrdmaIter *it, uint64_t n)
{
    if (qrdma_iter_is_host(it)) {
        it->host_done += n;
    } else {
        it->done += n;
    }
}

/*
 * The two sides may overlap (an RDMA WRITE into the sender's own MR):
 * memmove.
 */
QrdmaCopy qrdma_copy(QrdmaIter *src, QrdmaIter *dst, uint64_t len)
{
    while (len) {
        uint64_t dgpa = 0, dlen, sgpa = 0, slen, n;
        const uint8_t *dhost, *shost;
        QrdmaMap dm, sm;

        if (!qrdma_iter_next(dst, len, &dgpa, &dhost, &dlen)) {
            return QRDMA_COPY_DST_ERR;
        }
        if (!qrdma_iter_next(src, dlen, &sgpa, &shost, &slen)) {
            return QRDMA_COPY_SRC_ERR;
        }
        n = MIN(dlen, slen);
        if (!dhost) {
            if (!qrdma_dma_map(dst->core, dgpa, n, DMA_DIRECTION_FROM_DEVICE,
                               &dm)) {
                return QRDMA_COPY_DST_ERR;
            }
            dhost = dm.host;
            n = MIN(n, dm.len);
        }
        if (!shost) {
            if (!qrdma_dma_map(src->core, sgpa, n, DMA_DIRECTION_TO_DEVICE,
                               &sm)) {
                if (!qrdma_iter_is_host(dst)) {
                    qrdma_dma_unmap(dst->core, &dm, 0);
                }
                return QRDMA_COPY_SRC_ERR;
            }
            shost = sm.host;
            n = MIN(n, sm.len);
            memmove((uint8_t *)dhost, shost, n);
            qrdma_dma_unmap(src->core, &sm, n);
        } else {
            memmove((uint8_t *)dhost, shost, n);
        }
        if (!qrdma_iter_is_host(dst)) {
            qrdma_dma_unmap(dst->core, &dm, n);
        }
        qrdma_iter_advance(src, n);
        qrdma_iter_advance(dst, n);
        len -= n;
    }
    return QRDMA_COPY_OK;
}

bool qrdma_iter_each_host(QrdmaIter *it, uint64_t len, QrdmaHostPieceFn *fn,
                          void *opaque)
{
    if (qrdma_iter_is_host(it)) {
        return false;
    }
    while (len) {
        uint64_t gpa = 0, n;
        const uint8_t *host;
        QrdmaMap m;
        bool ok;

        if (!qrdma_iter_next(it, len, &gpa, &host, &n) ||
            !qrdma_dma_map(it->core, gpa, n, DMA_DIRECTION_TO_DEVICE, &m)) {
            return false;
        }
        n = MIN(n, m.len);
        ok = fn(opaque, m.host, n);
        qrdma_dma_unmap(it->core, &m, n);
        if (!ok) {
            return false;
        }
        qrdma_iter_advance(it, n);
        len -= n;
    }
    return true;
}
