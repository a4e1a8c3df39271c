/*
 * QEMU qrdma: emulated RDMA (RoCEv2) NIC, the tables of its resources
 *
 * Copyright (c) 2026 The qrdma developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef HW_RDMA_QRDMA_RESOURCES_H
#define HW_RDMA_QRDMA_RESOURCES_H

typedef struct QrdmaCore QrdmaCore;

/* The tables of every kind of resource, sized by the device limits. */
void qrdma_resources_init(QrdmaCore *core);
/* Free what every live resource holds, and mark all slots free. */
void qrdma_resources_reset(QrdmaCore *core);
void qrdma_resources_free(QrdmaCore *core);
uint32_t qrdma_resources_in_use(QrdmaCore *core);

#endif /* HW_RDMA_QRDMA_RESOURCES_H */
