/*
 * QEMU qrdma: emulated RDMA (RoCEv2) NIC, shared receive queues
 *
 * Copyright (c) 2026 The qrdma developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef HW_RDMA_QRDMA_SRQ_H
#define HW_RDMA_QRDMA_SRQ_H

#include "hw/rdma/qrdma-hw.h"

typedef struct QrdmaCore QrdmaCore;

/* The live SRQ handle of uctx: its slot in *idx, or a reported failure. */
uint8_t qrdma_get_srq(QrdmaCore *core, uint32_t uctx, uint32_t handle,
                      int *idx);
/*
 * S2 for one work queue (an SRQ's, or a QP's send or receive queue):
 * max_wr requests of max_sge SGEs fit the device limits, and the ring the
 * driver made (2^log2 entries of wqe_size bytes on npages pages) holds
 * them.  A reported failure, or QRDMA_STATUS_OK.
 */
uint8_t qrdma_check_wq(QrdmaCore *core, const char *queue, uint32_t max_wr,
                       uint32_t limit_wr, uint32_t max_sge,
                       uint32_t limit_sge, uint32_t log2, uint32_t npages,
                       uint32_t wqe_size);

uint8_t qrdma_cmd_create_srq(QrdmaCore *core, uint32_t uctx,
                             const struct qrdma_cmd *cmd,
                             struct qrdma_cmpl *cmpl);
uint8_t qrdma_cmd_modify_srq(QrdmaCore *core, uint32_t uctx,
                             const struct qrdma_cmd *cmd,
                             struct qrdma_cmpl *cmpl);
uint8_t qrdma_cmd_query_srq(QrdmaCore *core, uint32_t uctx,
                            const struct qrdma_cmd *cmd,
                            struct qrdma_cmpl *cmpl);
uint8_t qrdma_cmd_destroy_srq(QrdmaCore *core, uint32_t uctx,
                              const struct qrdma_cmd *cmd,
                              struct qrdma_cmpl *cmpl);

#endif /* HW_RDMA_QRDMA_SRQ_H */
