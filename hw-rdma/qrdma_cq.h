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

#endif /* HW_RDMA_QRDMA_CQ_H */
