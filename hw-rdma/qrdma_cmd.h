/*
 * QEMU qrdma: emulated RDMA (RoCEv2) NIC, helpers of the command handlers
 *
 * Copyright (c) 2026 The qrdma developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef HW_RDMA_QRDMA_CMD_H
#define HW_RDMA_QRDMA_CMD_H

#include "qrdma.h"

int qrdma_slot_alloc(QrdmaCore *core, QrdmaTable *t);

uint8_t qrdma_check_wq(QrdmaCore *core, const char *what, uint32_t max_wr,
                       uint32_t limit_wr, uint32_t max_sge,
                       uint32_t limit_sge, uint32_t log2, uint32_t npages,
                       uint32_t wqe_size);
/* Write a command's answer to the buffer the query command names. */
uint8_t qrdma_reply(QrdmaCore *core, const struct qrdma_cmd_query *q,
                    const void *resp, size_t len);

/* Returns status, after a trace event and a guest error line. */
uint8_t G_GNUC_PRINTF(3, 4) qrdma_cmd_fail(QrdmaCore *core, uint8_t status,
                                           const char *fmt, ...);

/*
 * Look up a live handle owned by user context uctx: the slot in *idx and
 * QRDMA_STATUS_OK, or a failure status (already reported).
 */
uint8_t qrdma_get_pd(QrdmaCore *core, uint32_t uctx, uint32_t handle,
                     int *idx);
uint8_t qrdma_get_mw(QrdmaCore *core, uint32_t uctx, uint32_t handle,
                     int *idx);
uint8_t qrdma_get_cq(QrdmaCore *core, uint32_t uctx, uint32_t handle,
                     int *idx);
uint8_t qrdma_get_srq(QrdmaCore *core, uint32_t uctx, uint32_t handle,
                      int *idx);
uint8_t qrdma_get_ah(QrdmaCore *core, uint32_t uctx, uint32_t handle,
                     int *idx);
uint8_t qrdma_get_qp(QrdmaCore *core, uint32_t uctx, uint32_t qpn, int *idx);
void qrdma_uctx_ref(QrdmaCore *core, uint32_t uctx, int delta);
void qrdma_pd_unref(QrdmaCore *core, uint32_t pd);
uint8_t qrdma_check_av(QrdmaCore *core, const struct qrdma_av *av);
bool qrdma_gid_is_mcast(const uint8_t *gid);

/* qrdma_qp.c */
uint8_t qrdma_cmd_create_qp(QrdmaCore *core, uint32_t uctx,
                            const struct qrdma_cmd *cmd,
                            struct qrdma_cmpl *cmpl);
uint8_t qrdma_cmd_modify_qp(QrdmaCore *core, uint32_t uctx,
                            const struct qrdma_cmd *cmd,
                            struct qrdma_cmpl *cmpl);
uint8_t qrdma_cmd_query_qp(QrdmaCore *core, uint32_t uctx,
                           const struct qrdma_cmd *cmd,
                           struct qrdma_cmpl *cmpl);
uint8_t qrdma_cmd_destroy_qp(QrdmaCore *core, uint32_t uctx,
                             const struct qrdma_cmd *cmd,
                             struct qrdma_cmpl *cmpl);

#endif /* HW_RDMA_QRDMA_CMD_H */
