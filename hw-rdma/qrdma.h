/*
 * QEMU qrdma: emulated RDMA (RoCEv2) NIC, state shared by the device's files
 *
 * Copyright (c) 2026 The qrdma developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef HW_RDMA_QRDMA_H
#define HW_RDMA_QRDMA_H

#include "hw/pci/pci_device.h"
#include "hw/rdma/qrdma-hw.h"

#define TYPE_QRDMA "qrdma"
OBJECT_DECLARE_SIMPLE_TYPE(QrdmaState, QRDMA)

/* Bounds of the msix-vectors property: at least the async event vector. */
#define QRDMA_MSIX_VECTORS_MIN          1
#define QRDMA_MSIX_VECTORS_MAX          64
#define QRDMA_MSIX_VECTORS_DEFAULT      4

/*
 * The device logic.  It takes this struct, never the QOM object, so that
 * the PCI glue in qrdma.c stays the only place that knows about QOM.
 */
typedef struct QrdmaCore {
    PCIDevice *owner;

    /* configuration, fixed at realize */
    uint16_t msix_vectors;

    /* registers */
    uint32_t dev_ctrl;
    uint32_t dev_status;

    /* counters, readable from the host as QOM properties */
    uint64_t guest_errors;
} QrdmaCore;

struct QrdmaState {
    PCIDevice parent_obj;

    MemoryRegion mmio;
    QrdmaCore core;
};

void qrdma_core_realize(QrdmaCore *core, PCIDevice *owner);
void qrdma_core_reset(QrdmaCore *core);
uint64_t qrdma_core_mmio_read(QrdmaCore *core, hwaddr addr, unsigned size);
void qrdma_core_mmio_write(QrdmaCore *core, hwaddr addr, uint64_t val,
                           unsigned size);
bool qrdma_core_post_load(QrdmaCore *core);

#endif /* HW_RDMA_QRDMA_H */
