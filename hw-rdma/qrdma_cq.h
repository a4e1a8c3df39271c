/*
 * QEMU qrdma: emulated RDMA (RoCEv2) NIC, completion queues
 *
 * Copyright (c) 2026 The qrdma developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef HW_RDMA_QRDMA_CQ_H
#define HW_RDMA_QRDMA_CQ_H

#include "hw/rdma/qrdma-hw.h"

typedef struct QrdmaCore QrdmaCore;
typedef struct QrdmaCq QrdmaCq;

/* The live CQ with handle cqn, or NULL. */
QrdmaCq *qrdma_cq_of(QrdmaCore *core, uint32_t cqn);
/*
 * Write cqe (its phase bit set here) to CQ cqn and raise the completion
 * event its arming asks for.  False when the CQ cannot take it: gone,
 * overrun, or its ring no longer RAM (then it takes nothing more).
 */
bool qrdma_cq_push(QrdmaCore *core, uint32_t cqn, struct qrdma_cqe *cqe,
                   bool solicited);

/* The live CQ handle of uctx: its slot in *idx, or a reported failure. */
uint8_t qrdma_get_cq(QrdmaCore *core, uint32_t uctx, uint32_t handle,
                     int *idx);

uint8_t qrdma_cmd_create_cq(QrdmaCore *core, uint32_t uctx,
                            const struct qrdma_cmd *cmd,
                            struct qrdma_cmpl *cmpl);
uint8_t qrdma_cmd_resize_cq(QrdmaCore *core, uint32_t uctx,
                            const struct qrdma_cmd *cmd,
                            struct qrdma_cmpl *cmpl);
uint8_t qrdma_cmd_destroy_cq(QrdmaCore *core, uint32_t uctx,
                             const struct qrdma_cmd *cmd,
                             struct qrdma_cmpl *cmpl);

#endif /* HW_RDMA_QRDMA_CQ_H */
