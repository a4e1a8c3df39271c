/*
 * QEMU qrdma: emulated RDMA (RoCEv2) NIC, memory regions and windows
 *
 * Copyright (c) 2026 The qrdma developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qrdma.h"
#include "qrdma_mr.h"
#include "qrdma_err.h"
#include "trace.h"

#define QRDMA_MW_RIGHTS (QRDMA_ACCESS_REMOTE_WRITE | \
                         QRDMA_ACCESS_REMOTE_READ | \
                         QRDMA_ACCESS_REMOTE_ATOMIC)

QrdmaMr *qrdma_mr_by_key(QrdmaCore *core, uint32_t key)
{
    uint32_t slot = key >> 8;

    if ((key & QRDMA_KEY_MW) || !slot || slot > core->mr_table.max ||
        !core->mr_table.busy[slot - 1]) {
        return NULL;
    }
    return &core->mr[slot - 1];
}

QrdmaMw *qrdma_mw_by_key(QrdmaCore *core, uint32_t key)
{
    uint32_t slot = (key >> 8) & MAKE_64BIT_MASK(0, QRDMA_HANDLE_INDEX_BITS);

    if (!(key & QRDMA_KEY_MW) || (key & ~(QRDMA_KEY_MW | 0xffffffu)) ||
        !slot || slot > core->mw_table.max || !core->mw_table.busy[slot - 1]) {
        return NULL;
    }
    return &core->mw[slot - 1];
}

/*
 * Whether an untranslated range (the local DMA lkey, a DMA MR) is guest
 * RAM: a work request that names anything else is the guest's error.
 */
static bool qrdma_dma_span_ok(QrdmaCore *core, uint64_t addr, uint64_t len,
                              bool is_write)
{
    if (!len || qrdma_dma_ok(core, addr, len, is_write)) {
        return true;
    }
    QRDMA_GUEST_ERR(core, wr_not_ram, "work request names 0x%" PRIx64
                    "+0x%" PRIx64 " (write %d), not guest RAM",
                    addr, len, is_write);
    return false;
}

static bool qrdma_in_range(uint64_t addr, uint64_t len, uint64_t start,
                           uint64_t length)
{
    return addr >= start && len <= length && addr - start <= length - len;
}

bool qrdma_mr_check(QrdmaCore *core, uint32_t key, uint32_t pd,
                    uint32_t uctx, uint64_t addr, uint64_t len,
                    uint32_t access, const QrdmaMr **out)
{
    const QrdmaMr *mr;

    *out = NULL;
    if (key == QRDMA_LOCAL_DMA_LKEY) {
        return uctx == QRDMA_UCTX_KERNEL &&
               !(access & (QRDMA_ACCESS_REMOTE_WRITE |
                           QRDMA_ACCESS_REMOTE_READ |
                           QRDMA_ACCESS_REMOTE_ATOMIC |
                           QRDMA_ACCESS_FLUSH_GLOBAL)) &&
               qrdma_dma_span_ok(core, addr, len,
                                 access & QRDMA_ACCESS_LOCAL_WRITE);
    }
    mr = qrdma_mr_by_key(core, key);
    if (!mr || mr->lkey != key || mr->pd != pd || !mr->valid ||
        (mr->access & access) != access ||
        !qrdma_in_range(addr, len, mr->iova, mr->length)) {
        return false;
    }
    if (mr->dma && !qrdma_dma_span_ok(core, addr, len,
                                      access & QRDMA_ACCESS_LOCAL_WRITE)) {
        return false;
    }
    *out = mr;
    return true;
}

bool qrdma_rkey_check(QrdmaCore *core, uint32_t pd, uint32_t qpn,
                      uint32_t uctx, uint32_t key, uint64_t addr,
                      uint64_t len, uint32_t access, const QrdmaMr **out)
{
    const QrdmaMw *mw;
    const QrdmaMr *mr;

    if (!(key & QRDMA_KEY_MW)) {
        return qrdma_mr_check(core, key, pd, uctx, addr, len, access, out);
    }
    *out = NULL;
    mw = qrdma_mw_by_key(core, key);
    if (!mw || !mw->bound || mw->rkey != key || mw->pd != pd ||
        (mw->type == QRDMA_MW_TYPE_2 && mw->qpn != qpn) ||
        !(access & QRDMA_MW_RIGHTS) || (access & ~QRDMA_MW_RIGHTS) ||
        (mw->access & access) != access ||
        !qrdma_in_range(addr, len, mw->addr, mw->length)) {
        return false;
    }
    /*
     * Whatever changes or frees the MR unbinds the window first, so this
     * holds; checking it costs little and keeps a slip from ever reaching
     * guest memory the MR no longer grants.
     */
    mr = &core->mr[mw->mr_idx];
    if (!core->mr_table.busy[mw->mr_idx] || mr->lkey != mw->mr_lkey ||
        !mr->valid) {
        return false;
    }
    *out = mr;
    return true;
}

bool qrdma_mr_flush_check(QrdmaCore *core, uint32_t pd, uint32_t uctx,
                          uint32_t rkey, bool whole_mr, uint64_t addr,
                          uint64_t len)
{
    const QrdmaMr *mr = qrdma_mr_by_key(core, rkey);

    if (whole_mr) {
        /* The whole MR: its own range is what gets checked. */
        if (!mr) {
            return false;
        }
        addr = mr->iova;
        len = 0;
    }
    return qrdma_mr_check(core, rkey, pd, uctx, addr, len,
                          QRDMA_ACCESS_FLUSH_GLOBAL, &mr) && mr;
}

uint64_t qrdma_mr_gpa(const QrdmaMr *mr, uint64_t iova, uint64_t want,
                      uint64_t *room)
{
    uint64_t psize, off, in_page, idx, gpa;
    uint32_t i;

    if (mr->dma) {
        *room = UINT64_MAX - iova;
        return iova;
    }
    psize = 1ull << mr->page_shift;
    off = iova - mr->iova + (mr->iova & (psize - 1));
    in_page = off & (psize - 1);
    idx = off >> mr->page_shift;
    gpa = mr->pages.addr[idx];
    *room = psize - in_page;
    /* Pages that follow each other in guest memory make one piece. */
    for (i = idx + 1; *room < want && i < mr->pages.n &&
         mr->pages.addr[i] == gpa + (i - idx) * psize; i++) {
        *room += psize;
    }
    return gpa + in_page;
}

const char *qrdma_mr_layout_check(uint64_t iova, uint64_t length,
                                  unsigned shift, uint32_t npages)
{
    if (shift < QRDMA_PAGE_SHIFT || shift > 30) {
        return "page shift out of range";
    }
    if (!length || iova + length < iova) {
        return "region is empty or wraps";
    }
    if (DIV_ROUND_UP((iova & ((1ull << shift) - 1)) + length,
                     1ull << shift) != npages) {
        return "page count does not cover the region";
    }
    return NULL;
}

/* A memory work request refused: its status, after a guest error. */
static uint8_t qrdma_mr_wr_refused(QrdmaCore *core, uint32_t qpn,
                                   const struct qrdma_sq_wqe *wqe,
                                   uint32_t key, uint8_t status,
                                   const char *why)
{
    QRDMA_GUEST_ERR(core, mem_wr, "qp 0x%" PRIx32 ": work request %u for"
                    " key 0x%" PRIx32 " refused: %s",
                    qpn, wqe->opcode, key, why);
    return status;
}

/*
 * BIND_MW: the window that key names takes key as its rkey and the range
 * of the MR mr_lkey names, with the remote rights of access.
 */
static uint8_t qrdma_mw_bind(QrdmaCore *core, uint32_t pd, uint32_t qpn,
                             const struct qrdma_sq_wqe *wqe)
{
    uint32_t key = le32_to_cpu(wqe->bind_mw.key);
    uint32_t lkey = le32_to_cpu(wqe->bind_mw.mr_lkey);
    uint32_t access = le32_to_cpu(wqe->bind_mw.access);
    uint64_t addr = le64_to_cpu(wqe->bind_mw.addr);
    uint64_t len = le64_to_cpu(wqe->bind_mw.length);
    QrdmaMw *mw = qrdma_mw_by_key(core, key);
    QrdmaMr *mr = qrdma_mr_by_key(core, lkey);
    const char *why = NULL;

    if (!mw || mw->pd != pd) {
        why = "no window in the QP's PD";
    } else if (access & ~(QRDMA_MW_RIGHTS | QRDMA_ACCESS_LOCAL_WRITE)) {
        why = "access flags a window cannot have";
    } else if (mw->type == QRDMA_MW_TYPE_2 && mw->bound) {
        why = "a bound type 2 window must be invalidated first";
    } else if (mw->type == QRDMA_MW_TYPE_2 && !len) {
        why = "a type 2 window needs a range";
    }
    if (why) {
        return qrdma_mr_wr_refused(core, qpn, wqe, key,
                                   QRDMA_WC_MW_BIND_ERR, why);
    }
    if (!len) {
        /* Type 1 bound to nothing: unbound, under its new key. */
        qrdma_mw_unbind(core, mw);
        mw->rkey = key;
        return QRDMA_WC_SUCCESS;
    }

    if (!mr || mr->lkey != lkey || mr->pd != pd || !mr->valid || mr->dma) {
        why = "no valid MR in the QP's PD with that lkey";
    } else if (!(mr->access & QRDMA_ACCESS_MW_BIND)) {
        why = "the MR has no MW bind right";
    } else if ((access & (QRDMA_ACCESS_REMOTE_WRITE |
                          QRDMA_ACCESS_REMOTE_ATOMIC)) &&
               !(mr->access & QRDMA_ACCESS_LOCAL_WRITE)) {
        why = "remote write or atomic over an MR without local write";
    } else if (!qrdma_in_range(addr, len, mr->iova, mr->length)) {
        why = "the range is not within the MR";
    }
    if (why) {
        return qrdma_mr_wr_refused(core, qpn, wqe, key,
                                   QRDMA_WC_MW_BIND_ERR, why);
    }

    qrdma_mw_unbind(core, mw);
    mw->bound = true;
    mw->rkey = key;
    mw->mr_idx = mr - core->mr;
    mw->mr_lkey = lkey;
    mw->addr = addr;
    mw->length = len;
    /* A window gives remote access only; local write has no meaning. */
    mw->access = access & QRDMA_MW_RIGHTS;
    mw->qpn = mw->type == QRDMA_MW_TYPE_2 ? qpn : 0;
    mr->windows++;
    trace_qrdma_mw_bind(qpn, key, lkey, addr, len, mw->access);
    return QRDMA_WC_SUCCESS;
}

/* LOCAL_INV of a window: type 2 only, by its current key. */
static uint8_t qrdma_mw_local_inv(QrdmaCore *core, uint32_t pd, uint32_t qpn,
                                  const struct qrdma_sq_wqe *wqe, uint32_t key)
{
    QrdmaMw *mw = qrdma_mw_by_key(core, key);

    if (!mw || mw->rkey != key || mw->pd != pd) {
        return qrdma_mr_wr_refused(core, qpn, wqe, key, QRDMA_WC_LOC_PROT_ERR,
                                   "no window in the QP's PD with that key");
    }
    if (mw->type != QRDMA_MW_TYPE_2) {
        return qrdma_mr_wr_refused(core, qpn, wqe, key, QRDMA_WC_LOC_PROT_ERR,
                                   "a type 1 window is unbound by a bind");
    }
    qrdma_mw_unbind(core, mw);
    return QRDMA_WC_SUCCESS;
}

/* REG_MR: the fast-registration MR of key takes the WQE's page list. */
static uint8_t qrdma_mr_fast_reg(QrdmaCore *core, QrdmaMr *mr, uint32_t qpn,
                                 const struct qrdma_sq_wqe *wqe, uint32_t key)
{
    uint32_t npages = le32_to_cpu(wqe->reg_mr.npages);
    uint64_t iova = le64_to_cpu(wqe->reg_mr.iova);
    uint64_t length = le64_to_cpu(wqe->reg_mr.length);
    unsigned shift = wqe->reg_mr.page_shift;
    QrdmaPages pages = { };
    const char *why;

    why = qrdma_mr_layout_check(iova, length, shift, npages);
    if (!why && npages > mr->max_pages) {
        why = "more pages than the MR was allocated for";
    }
    if (why) {
        return qrdma_mr_wr_refused(core, qpn, wqe, key, QRDMA_WC_LOC_PROT_ERR,
                                   why);
    }
    if (qrdma_pages_read(core, "REG_MR work request",
                         le64_to_cpu(wqe->reg_mr.pages_addr), npages,
                         mr->max_pages, shift, false, &pages)) {
        return QRDMA_WC_LOC_PROT_ERR;
    }
    qrdma_mw_unbind_all(core, mr - core->mr, 0);
    qrdma_pages_free(&mr->pages);
    mr->pages = pages;
    mr->iova = iova;
    mr->length = length;
    mr->page_shift = shift;
    mr->access = le32_to_cpu(wqe->reg_mr.access) & QRDMA_ACCESS_VALID_MASK;
    mr->lkey = mr->rkey = key;
    mr->valid = true;
    return QRDMA_WC_SUCCESS;
}

uint8_t qrdma_mr_wr(QrdmaCore *core, uint32_t pd, uint32_t uctx,
                    uint32_t qpn, const struct qrdma_sq_wqe *wqe)
{
    uint32_t key;
    QrdmaMr *mr;

    if (wqe->opcode == QRDMA_WR_BIND_MW) {
        return qrdma_mw_bind(core, pd, qpn, wqe);
    }
    key = le32_to_cpu(wqe->opcode == QRDMA_WR_LOCAL_INV ?
                      wqe->imm_data : wqe->reg_mr.key);
    if (wqe->opcode == QRDMA_WR_LOCAL_INV && (key & QRDMA_KEY_MW)) {
        return qrdma_mw_local_inv(core, pd, qpn, wqe, key);
    }
    mr = qrdma_mr_by_key(core, key);
    if (!mr || mr->pd != pd || !mr->fast_reg) {
        return qrdma_mr_wr_refused(core, qpn, wqe, key, QRDMA_WC_LOC_PROT_ERR,
                                   "no fast-registration MR in the QP's PD");
    }
    if (wqe->opcode == QRDMA_WR_REG_MR) {
        if (uctx != QRDMA_UCTX_KERNEL) {
            return qrdma_mr_wr_refused(core, qpn, wqe, key,
                                       QRDMA_WC_LOC_PROT_ERR,
                                       "REG_MR from user space");
        }
        return qrdma_mr_fast_reg(core, mr, qpn, wqe, key);
    }
    if (mr->lkey != key) {
        return qrdma_mr_wr_refused(core, qpn, wqe, key, QRDMA_WC_LOC_PROT_ERR,
                                   "not the MR's current key");
    }
    qrdma_mw_unbind_all(core, mr - core->mr, 0);
    mr->valid = false;
    return QRDMA_WC_SUCCESS;
}

void qrdma_mr_remote_inv(QrdmaCore *core, uint32_t pd, uint32_t qpn,
                         uint32_t rkey)
{
    QrdmaMw *mw = qrdma_mw_by_key(core, rkey);
    QrdmaMr *mr = qrdma_mr_by_key(core, rkey);

    if (mw) {
        /* Type 2B: only through the QP the window is bound to. */
        if (mw->bound && mw->rkey == rkey && mw->qpn == qpn &&
            mw->type == QRDMA_MW_TYPE_2) {
            qrdma_mw_unbind(core, mw);
        }
    } else if (mr && mr->rkey == rkey && mr->pd == pd && mr->fast_reg) {
        qrdma_mw_unbind_all(core, mr - core->mr, 0);
        mr->valid = false;
    }
}
