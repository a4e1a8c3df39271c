/*
 * QEMU qrdma: emulated RDMA (RoCEv2) NIC, the command queue
 *
 * Copyright (c) 2026 The qrdma developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef HW_RDMA_QRDMA_CMD_H
#define HW_RDMA_QRDMA_CMD_H

typedef struct QrdmaCore QrdmaCore;

/* The command queue's bottom half: runs the commands the driver posted. */
void qrdma_cmdq_process(void *opaque);

#endif /* HW_RDMA_QRDMA_CMD_H */
