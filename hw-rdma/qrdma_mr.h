/*
 * QEMU qrdma: emulated RDMA (RoCEv2) NIC, memory regions and windows
 *
 * Copyright (c) 2026 The qrdma developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef HW_RDMA_QRDMA_MR_H
#define HW_RDMA_QRDMA_MR_H

#include "hw/rdma/qrdma-hw.h"

typedef struct QrdmaCore QrdmaCore;
typedef struct QrdmaMr QrdmaMr;
typedef struct QrdmaMw QrdmaMw;

/*
 * The one key lookup: the live MR or window in the slot a key names,
 * whatever its key byte (the caller compares the whole key), or NULL.
 */
QrdmaMr *qrdma_mr_by_key(QrdmaCore *core, uint32_t key);
/* Access an MR or window gave was taken away or changed. */
void qrdma_mr_access_lost(QrdmaCore *core);
QrdmaMw *qrdma_mw_by_key(QrdmaCore *core, uint32_t key);

/*
 * Local access: whether lkey lets a QP of pd (of user context uctx)
 * access [addr, addr + len) with the given rights; the MR in *out (NULL
 * for the local DMA lkey, whose addresses are guest addresses as they
 * are, given to the kernel only).
 */
bool qrdma_mr_check(QrdmaCore *core, uint32_t key, uint32_t pd,
                    uint32_t uctx, uint64_t addr, uint64_t len,
                    uint32_t access, const QrdmaMr **out);
/*
 * Remote access at responder QP qpn of pd: a window's rkey passes when it
 * is bound (type 2: to qpn), in pd, with the rights, over the range; the
 * MR under it serves the access.  Any other key is an MR's.
 */
bool qrdma_rkey_check(QrdmaCore *core, uint32_t pd, uint32_t qpn,
                      uint32_t uctx, uint32_t key, uint64_t addr,
                      uint64_t len, uint32_t access, const QrdmaMr **out);
/* FLUSH at the responder: the range, or with whole_mr the MR rkey names. */
bool qrdma_mr_flush_check(QrdmaCore *core, uint32_t pd, uint32_t uctx,
                          uint32_t rkey, bool whole_mr, uint64_t addr,
                          uint64_t len);
/*
 * The guest address of iova in mr, and in *room the bytes contiguous from
 * there (looking no further than want bytes).
 */
uint64_t qrdma_mr_gpa(const QrdmaMr *mr, uint64_t iova, uint64_t want,
                      uint64_t *room);

/*
 * Whether a page list of npages pages of 2^shift bytes describes exactly
 * [iova, iova + length): the check that both REG_MR, the command, and the
 * REG_MR work request make.
 */
bool qrdma_mr_layout_ok(uint64_t iova, uint64_t length, unsigned shift,
                        uint32_t npages);

/*
 * The memory work requests, BIND_MW, LOCAL_INV and REG_MR, of QP qpn in
 * pd: the completion status.
 */
uint8_t qrdma_mr_wr(QrdmaCore *core, uint32_t pd, uint32_t uctx,
                    uint32_t qpn, const struct qrdma_sq_wqe *wqe);
/* SEND with invalidate arriving at QP qpn of pd: invalidates rkey. */
void qrdma_mr_remote_inv(QrdmaCore *core, uint32_t pd, uint32_t qpn,
                         uint32_t rkey);

/* Unbind a window: it gives no access until it is bound again. */
void qrdma_mw_unbind(QrdmaCore *core, QrdmaMw *mw);
/*
 * Unbind the windows bound to the MR in slot mr_idx (before it changes or
 * goes), or, with mr_idx -1, the type 2 windows bound to QP qpn.
 */
void qrdma_mw_unbind_all(QrdmaCore *core, int mr_idx, uint32_t qpn);

/* The pages one MR may have: no more than all of them together. */
uint32_t qrdma_mr_max_pages(QrdmaCore *core);

/* The live MW handle of uctx: its slot in *idx, or a reported failure. */
uint8_t qrdma_get_mw(QrdmaCore *core, uint32_t uctx, uint32_t handle,
                     int *idx);

uint8_t qrdma_cmd_reg_mr(QrdmaCore *core, uint32_t uctx,
                         const struct qrdma_cmd *cmd,
                         struct qrdma_cmpl *cmpl);
uint8_t qrdma_cmd_alloc_mr(QrdmaCore *core, uint32_t uctx,
                           const struct qrdma_cmd *cmd,
                           struct qrdma_cmpl *cmpl);
uint8_t qrdma_cmd_dereg_mr(QrdmaCore *core, uint32_t uctx,
                           const struct qrdma_cmd *cmd,
                           struct qrdma_cmpl *cmpl);
uint8_t qrdma_cmd_alloc_mw(QrdmaCore *core, uint32_t uctx,
                           const struct qrdma_cmd *cmd,
                           struct qrdma_cmpl *cmpl);
uint8_t qrdma_cmd_dealloc_mw(QrdmaCore *core, uint32_t uctx,
                             const struct qrdma_cmd *cmd,
                             struct qrdma_cmpl *cmpl);

#endif /* HW_RDMA_QRDMA_MR_H */
