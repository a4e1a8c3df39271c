/*
 * QEMU qrdma: emulated RDMA (RoCEv2) NIC, address handles
 *
 * Copyright (c) 2026 The qrdma developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef HW_RDMA_QRDMA_AH_H
#define HW_RDMA_QRDMA_AH_H

#include "hw/rdma/qrdma-hw.h"

typedef struct QrdmaCore QrdmaCore;

/* The live AH handle of uctx: its slot in *idx, or a reported failure. */
uint8_t qrdma_get_ah(QrdmaCore *core, uint32_t uctx, uint32_t handle,
                     int *idx);
/* An address vector an AH or a connected QP takes: a reported failure. */
uint8_t qrdma_check_av(QrdmaCore *core, const struct qrdma_av *av);

uint8_t qrdma_cmd_create_ah(QrdmaCore *core, uint32_t uctx,
                            const struct qrdma_cmd *cmd,
                            struct qrdma_cmpl *cmpl);
uint8_t qrdma_cmd_destroy_ah(QrdmaCore *core, uint32_t uctx,
                             const struct qrdma_cmd *cmd,
                             struct qrdma_cmpl *cmpl);

#endif /* HW_RDMA_QRDMA_AH_H */
