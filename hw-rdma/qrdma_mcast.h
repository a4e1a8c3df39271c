/*
 * QEMU qrdma: emulated RDMA (RoCEv2) NIC, multicast groups
 *
 * Copyright (c) 2026 The qrdma developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef HW_RDMA_QRDMA_MCAST_H
#define HW_RDMA_QRDMA_MCAST_H

#include "hw/rdma/qrdma-hw.h"

typedef struct QrdmaCore QrdmaCore;

/* An IPv6 multicast GID, or for RoCEv2 an IPv4-mapped one (224.0.0.0/4). */

uint8_t qrdma_cmd_attach_mcast(QrdmaCore *core, uint32_t uctx,
                               const struct qrdma_cmd *cmd,
                               struct qrdma_cmpl *cmpl);
uint8_t qrdma_cmd_detach_mcast(QrdmaCore *core, uint32_t uctx,
                               const struct qrdma_cmd *cmd,
                               struct qrdma_cmpl *cmpl);

#endif /* HW_RDMA_QRDMA_MCAST_H */
