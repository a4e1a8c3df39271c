/*
 * QEMU qrdma: emulated RDMA (RoCEv2) NIC, event queues and interrupts
 *
 * Copyright (c) 2026 The qrdma developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef HW_RDMA_QRDMA_EQ_H
#define HW_RDMA_QRDMA_EQ_H

#include "exec/hwaddr.h"

typedef struct QrdmaCore QrdmaCore;

/*
 * Raise MSI-X vector `vector`: sent later from the device's guarded
 * bottom half (qrdma_irq_bh), never in the middle of an operation.
 */
void qrdma_notify(QrdmaCore *core, unsigned vector);
void qrdma_irq_bh(void *opaque);

/* The EQ register bank an access falls in, for the register decoder. */
bool qrdma_eq_reg(QrdmaCore *core, hwaddr addr, unsigned size,
                  unsigned *eq, hwaddr *reg, unsigned *width,
                  bool *writable);
uint64_t qrdma_eq_read(QrdmaCore *core, unsigned eq, hwaddr reg);
void qrdma_eq_write(QrdmaCore *core, unsigned eq, hwaddr reg, uint64_t val);

/* An entry of type for handle on EQ n, and its interrupt. */
void qrdma_eq_post(QrdmaCore *core, unsigned n, uint8_t type,
                   uint32_t handle);
/* An asynchronous event: EQ 0. */
void qrdma_event(QrdmaCore *core, uint8_t type, uint32_t handle);
/* PORT_ACTIVE or PORT_ERR, when the port's state changed. */
void qrdma_port_event(QrdmaCore *core, bool up);

#endif /* HW_RDMA_QRDMA_EQ_H */
