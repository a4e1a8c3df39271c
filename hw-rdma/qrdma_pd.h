/*
 * QEMU qrdma: emulated RDMA (RoCEv2) NIC, user contexts, PDs and ownership
 *
 * Copyright (c) 2026 The qrdma developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef HW_RDMA_QRDMA_PD_H
#define HW_RDMA_QRDMA_PD_H

#include "hw/rdma/qrdma-hw.h"
#include "qrdma_table.h"

typedef struct QrdmaCore QrdmaCore;

/*
 * Every object is owned by a user context (or the kernel), so the checks
 * that a command may name an object live with the contexts.  Each of
 * these returns QRDMA_STATUS_OK, or a failure status already reported as
 * a guest error.
 */

/* A free slot of t, or -1 (reported: all are in use). */
int qrdma_slot_alloc(QrdmaCore *core, QrdmaTable *t);
/* QRDMA_STATUS_BAD_HANDLE for a handle of kind that names nothing. */
uint8_t qrdma_no_handle(QrdmaCore *core, const char *kind, uint32_t handle);
/* Whether the object of kind handle, owned by owner, is uctx's. */
uint8_t qrdma_check_owner(QrdmaCore *core, const char *kind, uint32_t handle,
                          uint32_t owner, uint32_t uctx);
/* Whether uctx is the kernel, for what only the kernel may do. */
uint8_t qrdma_check_kernel(QrdmaCore *core, uint32_t uctx);

/* The live PD handle of uctx: its slot in *idx. */
uint8_t qrdma_get_pd(QrdmaCore *core, uint32_t uctx, uint32_t handle,
                     int *idx);
/* Count a resource in (delta 1) or out (-1) of the context that owns it. */
void qrdma_uctx_ref(QrdmaCore *core, uint32_t uctx, int delta);
/* Drop the reference an MR, MW, SRQ, AH or QP holds on its PD. */
void qrdma_pd_unref(QrdmaCore *core, uint32_t pd);

uint8_t qrdma_cmd_create_uctx(QrdmaCore *core, uint32_t uctx,
                              const struct qrdma_cmd *cmd,
                              struct qrdma_cmpl *cmpl);
uint8_t qrdma_cmd_destroy_uctx(QrdmaCore *core, uint32_t uctx,
                               const struct qrdma_cmd *cmd,
                               struct qrdma_cmpl *cmpl);
uint8_t qrdma_cmd_alloc_pd(QrdmaCore *core, uint32_t uctx,
                           const struct qrdma_cmd *cmd,
                           struct qrdma_cmpl *cmpl);
uint8_t qrdma_cmd_dealloc_pd(QrdmaCore *core, uint32_t uctx,
                             const struct qrdma_cmd *cmd,
                             struct qrdma_cmpl *cmpl);

#endif /* HW_RDMA_QRDMA_PD_H */
