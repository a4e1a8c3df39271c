/*
 * QEMU qrdma: emulated RDMA (RoCEv2) NIC, memory regions and windows
 *
 * Copyright (c) 2026 The qrdma developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/guest-random.h"
#include "qrdma.h"
#include "qrdma_pd.h"
#include "qrdma_mr.h"
#include "qrdma_err.h"
#include "trace.h"

#define QRDMA_MW_RIGHTS (QRDMA_ACCESS_REMOTE_WRITE | \
                         QRDMA_ACCESS_REMOTE_READ | \
                         QRDMA_ACCESS_REMOTE_ATOMIC)

/*
 * What an MR or window granted has changed or gone: the engines check
 * again the SGEs and ranges they hold for messages under way.
 */
/*
 * The key byte of a new MR or MW: drawn at random, as rxe draws it, so
 * that a peer cannot work out one rkey from another.
 */
static uint8_t qrdma_mr_new_key(void)
{
    uint8_t key;

    qemu_guest_getrandom_nofail(&key, sizeof(key));
    return key;
}

void qrdma_mr_access_lost(QrdmaCore *core)
{
    core->mr_gen++;
}

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
    QRDMA_GUEST_ERR(core, qrdma_err_wr_not_ram, "work request names 0x%" PRIx64
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

bool qrdma_mr_layout_ok(uint64_t iova, uint64_t length, unsigned shift,
                        uint32_t npages)
{
    return shift >= QRDMA_PAGE_SHIFT && shift <= 30 && length &&
           iova + length >= iova &&
           DIV_ROUND_UP((iova & ((1ull << shift) - 1)) + length,
                        1ull << shift) == npages;
}

/*
 * A memory work request refused, for the reason that the trace event
 * names (qrdma_err_*, taking the QPN and the key): its completion status.
 */
#define QRDMA_WR_REFUSED(core, trace, qpn, key, status, text)               \
    ({                                                                      \
        QRDMA_GUEST_ERR(core, trace, "qp 0x%" PRIx32 ": memory work "       \
                        "request for key 0x%" PRIx32 " refused: " text,     \
                        qpn, key);                                          \
        (uint8_t)(status);                                                  \
    })

/* The QP a type 2 window is bound to, which counts its windows. */
static QrdmaQp *qrdma_mw_qp(QrdmaCore *core, uint32_t qpn)
{
    int idx = qrdma_table_lookup(&core->qp_table, qpn);

    return idx < 0 ? NULL : &core->qp[idx];
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
    const uint8_t err = QRDMA_WC_MW_BIND_ERR;

    if (!mw || mw->pd != pd) {
        return QRDMA_WR_REFUSED(core, qrdma_err_bind_no_mw, qpn, key, err,
                                "no window in the QP's PD");
    }
    if (access & ~(QRDMA_MW_RIGHTS | QRDMA_ACCESS_LOCAL_WRITE)) {
        return QRDMA_WR_REFUSED(core, qrdma_err_bind_access, qpn, key, err,
                                "access flags a window cannot have");
    }
    if (mw->type == QRDMA_MW_TYPE_2 && mw->bound) {
        return QRDMA_WR_REFUSED(core, qrdma_err_bind_type2_bound, qpn, key, err,
                                "a bound type 2 window must be "
                                "invalidated first");
    }
    if (mw->type == QRDMA_MW_TYPE_2 && !len) {
        return QRDMA_WR_REFUSED(core, qrdma_err_bind_type2_empty, qpn, key, err,
                                "a type 2 window needs a range");
    }
    if (!len) {
        /* Type 1 bound to nothing: unbound, under its new key. */
        qrdma_mw_unbind(core, mw);
        mw->rkey = key;
        return QRDMA_WC_SUCCESS;
    }

    if (!mr || mr->lkey != lkey || mr->pd != pd || !mr->valid || mr->dma) {
        return QRDMA_WR_REFUSED(core, qrdma_err_bind_no_mr, qpn, key, err,
                                "no valid MR in the QP's PD with that lkey");
    }
    if (!(mr->access & QRDMA_ACCESS_MW_BIND)) {
        return QRDMA_WR_REFUSED(core, qrdma_err_bind_no_right, qpn, key, err,
                                "the MR has no MW bind right");
    }
    if ((access & (QRDMA_ACCESS_REMOTE_WRITE | QRDMA_ACCESS_REMOTE_ATOMIC)) &&
        !(mr->access & QRDMA_ACCESS_LOCAL_WRITE)) {
        return QRDMA_WR_REFUSED(core, qrdma_err_bind_no_local_write,
                                qpn, key, err,
                                "remote write or atomic over an MR "
                                "without local write");
    }
    if (!qrdma_in_range(addr, len, mr->iova, mr->length)) {
        return QRDMA_WR_REFUSED(core, qrdma_err_bind_range, qpn, key, err,
                                "the range is not within the MR");
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
    if (mw->type == QRDMA_MW_TYPE_2) {
        qrdma_mw_qp(core, qpn)->windows++;
    }
    trace_qrdma_mw_bind(qpn, key, lkey, addr, len, mw->access);
    return QRDMA_WC_SUCCESS;
}

/* LOCAL_INV of a window: type 2 only, by its current key. */
static uint8_t qrdma_mw_local_inv(QrdmaCore *core, uint32_t pd, uint32_t qpn,
                                  uint32_t key)
{
    QrdmaMw *mw = qrdma_mw_by_key(core, key);

    if (!mw || mw->rkey != key || mw->pd != pd) {
        return QRDMA_WR_REFUSED(core, qrdma_err_inv_no_mw, qpn, key,
                                QRDMA_WC_LOC_PROT_ERR,
                                "no window in the QP's PD with that key");
    }
    if (mw->type != QRDMA_MW_TYPE_2) {
        return QRDMA_WR_REFUSED(core, qrdma_err_inv_type1, qpn, key,
                                QRDMA_WC_LOC_PROT_ERR,
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

    if (!qrdma_mr_layout_ok(iova, length, shift, npages)) {
        QRDMA_GUEST_ERR(core, qrdma_err_reg_mr_wr_layout,
                        "qp 0x%" PRIx32 ": REG_MR of" " key 0x%" PRIx32 ": %"
                        PRIu32 " pages of 2^%u bytes" " do not make region 0x%"
                        PRIx64 "+0x%" PRIx64, qpn, key, npages, shift, iova,
                        length);
        return QRDMA_WC_LOC_PROT_ERR;
    }
    if (npages > mr->max_pages) {
        return QRDMA_WR_REFUSED(core, qrdma_err_reg_mr_wr_too_many, qpn, key,
                                QRDMA_WC_LOC_PROT_ERR, "more pages than the "
                                "MR was allocated for");
    }
    if (qrdma_pages_read(core, "REG_MR work request",
                         le64_to_cpu(wqe->reg_mr.pages_addr), npages,
                         mr->max_pages, shift, false, &pages)) {
        return QRDMA_WC_LOC_PROT_ERR;
    }
    qrdma_mw_unbind_all(core, mr - core->mr, 0);
    qrdma_pages_free(&mr->pages);
    qrdma_mr_access_lost(core);
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
        return qrdma_mw_local_inv(core, pd, qpn, key);
    }
    mr = qrdma_mr_by_key(core, key);
    if (!mr || mr->pd != pd || !mr->fast_reg) {
        return QRDMA_WR_REFUSED(core, qrdma_err_no_fast_reg_mr, qpn, key,
                                QRDMA_WC_LOC_PROT_ERR,
                                "no fast-registration MR in the QP's PD");
    }
    if (wqe->opcode == QRDMA_WR_REG_MR) {
        if (uctx != QRDMA_UCTX_KERNEL) {
            return QRDMA_WR_REFUSED(core, qrdma_err_reg_mr_wr_user, qpn, key,
                                    QRDMA_WC_LOC_PROT_ERR,
                                    "REG_MR from user space");
        }
        return qrdma_mr_fast_reg(core, mr, qpn, wqe, key);
    }
    if (mr->lkey != key) {
        return QRDMA_WR_REFUSED(core, qrdma_err_inv_stale_key, qpn, key,
                                QRDMA_WC_LOC_PROT_ERR,
                                "not the MR's current key");
    }
    qrdma_mw_unbind_all(core, mr - core->mr, 0);
    mr->valid = false;
    qrdma_mr_access_lost(core);
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
        qrdma_mr_access_lost(core);
    }
}

void qrdma_mw_unbind(QrdmaCore *core, QrdmaMw *mw)
{
    QrdmaQp *qp;

    if (mw->bound) {
        core->mr[mw->mr_idx].windows--;
        qp = mw->type == QRDMA_MW_TYPE_2 ? qrdma_mw_qp(core, mw->qpn) : NULL;
        if (qp) {
            qp->windows--;
        }
        mw->bound = false;
        qrdma_mr_access_lost(core);
        trace_qrdma_mw_unbind(mw->rkey);
    }
}

/*
 * The scan of the window table runs only while the MR or the QP has
 * windows bound, and stops at the last: an MR deregistered, invalidated
 * or registered again per I/O, and a QP destroyed, cost nothing else.
 */
void qrdma_mw_unbind_all(QrdmaCore *core, int mr_idx, uint32_t qpn)
{
    QrdmaQp *qp = mr_idx >= 0 ? NULL : qrdma_mw_qp(core, qpn);
    uint32_t *left = qp ? &qp->windows : mr_idx >= 0 ?
                     &core->mr[mr_idx].windows : NULL;
    uint32_t i;

    for (i = 0; left && *left && i < core->mw_table.max; i++) {
        QrdmaMw *mw = &core->mw[i];

        if (core->mw_table.busy[i] && mw->bound &&
            (mr_idx >= 0 ? mw->mr_idx == (uint32_t)mr_idx :
             mw->type == QRDMA_MW_TYPE_2 && mw->qpn == qpn)) {
            qrdma_mw_unbind(core, mw);
        }
    }
}

uint32_t qrdma_mr_max_pages(QrdmaCore *core)
{
    return MIN(core->limits.max_mr_pages, core->limits.max_mr_pages_total);
}

/* The MR commands name an MR by its current lkey, not by a handle. */
static uint8_t qrdma_get_mr(QrdmaCore *core, uint32_t uctx, uint32_t lkey,
                            int *idx)
{
    QrdmaMr *mr = qrdma_mr_by_key(core, lkey);

    if (!mr || mr->lkey != lkey) {
        return qrdma_no_handle(core, "mr", lkey);
    }
    *idx = mr - core->mr;
    return qrdma_check_owner(core, "mr", lkey, mr->uctx, uctx);
}

uint8_t qrdma_get_mw(QrdmaCore *core, uint32_t uctx, uint32_t handle,
                     int *idx)
{
    *idx = qrdma_table_lookup(&core->mw_table, handle);
    if (*idx < 0) {
        return qrdma_no_handle(core, "mw", handle);
    }
    return qrdma_check_owner(core, "mw", handle, core->mw[*idx].uctx, uctx);
}

/*
 * Charge an MR's page list to the device's total, which bounds the host
 * memory the guest can make QEMU allocate for page lists: each MR may be
 * within max_mr_pages, and there are max_mr of them.
 */
static uint8_t qrdma_mr_pages_charge(QrdmaCore *core, uint32_t npages)
{
    if (core->mr_pages_in_use + npages > core->limits.max_mr_pages_total) {
        trace_qrdma_mr_pages_exhausted(core->mr_pages_in_use, npages,
                                       core->limits.max_mr_pages_total);
        return QRDMA_STATUS_NO_RESOURCES;
    }
    core->mr_pages_in_use += npages;
    return QRDMA_STATUS_OK;
}

static int qrdma_mr_alloc(QrdmaCore *core, uint32_t uctx, uint32_t pd_idx)
{
    int idx = qrdma_slot_alloc(core, &core->mr_table);
    QrdmaMr *mr;

    if (idx < 0) {
        return -1;
    }
    mr = &core->mr[idx];
    memset(mr, 0, sizeof(*mr));
    /* A new key byte each time, so an old lkey of a reused slot fails. */
    mr->lkey = ((uint32_t)(idx + 1) << 8) | qrdma_mr_new_key();
    mr->rkey = mr->lkey;
    mr->uctx = uctx;
    mr->pd = core->pd[pd_idx].handle;
    core->pd[pd_idx].refs++;
    qrdma_uctx_ref(core, uctx, 1);
    return idx;
}

/* The access rights and flags REG_MR asks for, checked. */
static uint8_t qrdma_reg_mr_check(QrdmaCore *core, uint32_t uctx,
                                  const struct qrdma_cmd_reg_mr *r)
{
    uint32_t access = le32_to_cpu(r->access);

    if (access & ~QRDMA_ACCESS_VALID_MASK) {
        QRDMA_GUEST_ERR(core, qrdma_err_cmd_mr_access,
                        "unknown access flags 0x%" PRIx32, access);
        return QRDMA_STATUS_BAD_PARAM;
    }
    /* IB: remote write and atomic access need local write. */
    if ((access & (QRDMA_ACCESS_REMOTE_WRITE | QRDMA_ACCESS_REMOTE_ATOMIC)) &&
        !(access & QRDMA_ACCESS_LOCAL_WRITE)) {
        QRDMA_GUEST_ERR(core, qrdma_err_cmd_mr_remote_no_local_write,
                        "access 0x%" PRIx32
                        ": remote write or atomic without local write", access);
        return QRDMA_STATUS_BAD_PARAM;
    }
    if (r->flags & ~QRDMA_MR_F_DMA) {
        QRDMA_GUEST_ERR(core, qrdma_err_cmd_mr_flags,
                        "unknown flags 0x%x", r->flags);
        return QRDMA_STATUS_BAD_PARAM;
    }
    if (r->flags & QRDMA_MR_F_DMA) {
        return qrdma_check_kernel(core, uctx);
    }
    return QRDMA_STATUS_OK;
}

/*
 * The page list of a REG_MR that is not a DMA MR: checked as the REG_MR
 * work request checks its own, charged, and read.
 */
static uint8_t qrdma_reg_mr_pages(QrdmaCore *core,
                                  const struct qrdma_cmd_reg_mr *r,
                                  QrdmaPages *pages)
{
    uint64_t iova = le64_to_cpu(r->iova);
    uint64_t length = le64_to_cpu(r->length);
    uint32_t npages = le32_to_cpu(r->npages);
    uint64_t max_size = (uint64_t)qrdma_mr_max_pages(core) << QRDMA_PAGE_SHIFT;
    uint8_t st;

    if (!qrdma_mr_layout_ok(iova, length, r->page_shift, npages)) {
        QRDMA_GUEST_ERR(core, qrdma_err_cmd_mr_layout,
                        "%" PRIu32 " pages of 2^%u bytes"
                        " do not make region 0x%" PRIx64 "+0x%" PRIx64, npages,
                        r->page_shift, iova, length);
        return QRDMA_STATUS_BAD_PARAM;
    }
    if (length > max_size) {
        QRDMA_GUEST_ERR(core, qrdma_err_cmd_mr_too_big, "region of 0x%" PRIx64
                        " bytes, max_mr_size 0x%" PRIx64, length, max_size);
        return QRDMA_STATUS_BAD_PARAM;
    }
    st = qrdma_mr_pages_charge(core, npages);
    if (st) {
        return st;
    }
    st = qrdma_pages_read(core, core->cmdq.cur_name,
                          le64_to_cpu(r->pages_addr), npages,
                          core->limits.max_mr_pages, r->page_shift, false,
                          pages);
    if (st) {
        core->mr_pages_in_use -= npages;
    }
    return st;
}

uint8_t qrdma_cmd_reg_mr(QrdmaCore *core, uint32_t uctx,
                         const struct qrdma_cmd *cmd,
                         struct qrdma_cmpl *cmpl)
{
    const struct qrdma_cmd_reg_mr *r = &cmd->reg_mr;
    bool dma = r->flags & QRDMA_MR_F_DMA;
    QrdmaPages pages = { };
    QrdmaMr *mr;
    uint8_t st;
    int pd_idx, idx;

    st = qrdma_get_pd(core, uctx, le32_to_cpu(r->pd), &pd_idx);
    if (st) {
        return st;
    }
    st = qrdma_reg_mr_check(core, uctx, r);
    if (st) {
        return st;
    }
    if (!dma) {
        st = qrdma_reg_mr_pages(core, r, &pages);
        if (st) {
            return st;
        }
    }

    idx = qrdma_mr_alloc(core, uctx, pd_idx);
    if (idx < 0) {
        core->mr_pages_in_use -= pages.n;
        qrdma_pages_free(&pages);
        return QRDMA_STATUS_NO_RESOURCES;
    }
    mr = &core->mr[idx];
    mr->charged = pages.n;
    mr->valid = true;
    mr->access = le32_to_cpu(r->access);
    mr->dma = dma;
    mr->iova = dma ? 0 : le64_to_cpu(r->iova);
    mr->length = dma ? UINT64_MAX : le64_to_cpu(r->length);
    /* A DMA MR has no pages: its page_shift field is not looked at. */
    mr->page_shift = dma ? QRDMA_PAGE_SHIFT : r->page_shift;
    mr->pages = pages;
    trace_qrdma_mr_reg(mr->lkey, mr->iova, mr->length, mr->access);
    cmpl->handle = cpu_to_le32(mr->lkey);
    cmpl->data[0] = cpu_to_le32(mr->rkey);
    return QRDMA_STATUS_OK;
}

uint8_t qrdma_cmd_alloc_mr(QrdmaCore *core, uint32_t uctx,
                           const struct qrdma_cmd *cmd,
                           struct qrdma_cmpl *cmpl)
{
    uint32_t max_pages = le32_to_cpu(cmd->alloc_mr.max_pages);
    QrdmaMr *mr;
    uint8_t st;
    int pd_idx, idx;

    st = qrdma_get_pd(core, uctx, le32_to_cpu(cmd->alloc_mr.pd), &pd_idx);
    if (st) {
        return st;
    }
    if (!max_pages || max_pages > qrdma_mr_max_pages(core)) {
        QRDMA_GUEST_ERR(core, qrdma_err_cmd_mr_max_pages,
                        "%" PRIu32 " pages for fast " "registration, limit %"
                        PRIu32, max_pages, qrdma_mr_max_pages(core));
        return QRDMA_STATUS_BAD_PARAM;
    }
    /* Registration by work request must not fail for want of pages. */
    st = qrdma_mr_pages_charge(core, max_pages);
    if (st) {
        return st;
    }
    idx = qrdma_mr_alloc(core, uctx, pd_idx);
    if (idx < 0) {
        core->mr_pages_in_use -= max_pages;
        return QRDMA_STATUS_NO_RESOURCES;
    }
    mr = &core->mr[idx];
    mr->charged = max_pages;
    mr->fast_reg = true;
    mr->max_pages = max_pages;
    cmpl->handle = cpu_to_le32(mr->lkey);
    cmpl->data[0] = cpu_to_le32(mr->rkey);
    return QRDMA_STATUS_OK;
}

static void qrdma_mr_free(QrdmaCore *core, int idx)
{
    QrdmaMr *mr = &core->mr[idx];

    qrdma_mw_unbind_all(core, idx, 0);
    qrdma_mr_access_lost(core);
    qrdma_pd_unref(core, mr->pd);
    qrdma_uctx_ref(core, mr->uctx, -1);
    qrdma_pages_free(&mr->pages);
    core->mr_pages_in_use -= mr->charged;
    qrdma_table_free(&core->mr_table, idx);
}

uint8_t qrdma_cmd_dereg_mr(QrdmaCore *core, uint32_t uctx,
                           const struct qrdma_cmd *cmd,
                           struct qrdma_cmpl *cmpl)
{
    uint8_t st;
    int idx;

    st = qrdma_get_mr(core, uctx, le32_to_cpu(cmd->destroy.handle), &idx);
    if (st) {
        return st;
    }
    qrdma_mr_free(core, idx);
    return QRDMA_STATUS_OK;
}

uint8_t qrdma_cmd_alloc_mw(QrdmaCore *core, uint32_t uctx,
                           const struct qrdma_cmd *cmd,
                           struct qrdma_cmpl *cmpl)
{
    const struct qrdma_cmd_alloc_mw *a = &cmd->alloc_mw;
    QrdmaMw *mw;
    uint8_t st;
    int pd_idx, idx;

    st = qrdma_get_pd(core, uctx, le32_to_cpu(a->pd), &pd_idx);
    if (st) {
        return st;
    }
    if (a->type != QRDMA_MW_TYPE_1 && a->type != QRDMA_MW_TYPE_2) {
        QRDMA_GUEST_ERR(core, qrdma_err_cmd_mw_type,
                        "memory window type %u", a->type);
        return QRDMA_STATUS_BAD_PARAM;
    }
    idx = qrdma_slot_alloc(core, &core->mw_table);
    if (idx < 0) {
        return QRDMA_STATUS_NO_RESOURCES;
    }
    mw = &core->mw[idx];
    memset(mw, 0, sizeof(*mw));
    mw->handle = qrdma_table_handle(&core->mw_table, idx);
    mw->uctx = uctx;
    mw->pd = core->pd[pd_idx].handle;
    mw->type = a->type;
    /* As for MRs: a new key byte, so an rkey of a reused slot fails. */
    mw->rkey = QRDMA_KEY_MW | ((uint32_t)(idx + 1) << 8) | qrdma_mr_new_key();
    core->pd[pd_idx].refs++;
    qrdma_uctx_ref(core, uctx, 1);
    trace_qrdma_mw_alloc(mw->handle, mw->type, mw->rkey);
    cmpl->handle = cpu_to_le32(mw->handle);
    cmpl->data[0] = cpu_to_le32(mw->rkey);
    return QRDMA_STATUS_OK;
}

static void qrdma_mw_free(QrdmaCore *core, int idx)
{
    QrdmaMw *mw = &core->mw[idx];

    qrdma_mw_unbind(core, mw);
    qrdma_pd_unref(core, mw->pd);
    qrdma_uctx_ref(core, mw->uctx, -1);
    qrdma_table_free(&core->mw_table, idx);
}

uint8_t qrdma_cmd_dealloc_mw(QrdmaCore *core, uint32_t uctx,
                             const struct qrdma_cmd *cmd,
                             struct qrdma_cmpl *cmpl)
{
    uint8_t st;
    int idx;

    st = qrdma_get_mw(core, uctx, le32_to_cpu(cmd->destroy.handle), &idx);
    if (st) {
        return st;
    }
    qrdma_mw_free(core, idx);
    return QRDMA_STATUS_OK;
}
