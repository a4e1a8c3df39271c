/*
 * QEMU qrdma: emulated RDMA (RoCEv2) NIC, PCI function
 *
 * Copyright (c) 2026 The qrdma developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * This file is the PCI and QOM glue: BARs, MSI-X, properties, reset and
 * migration.  The device logic lives in qrdma_core.c.  The interface is
 * specified in docs/qrdma-spec.rst and defined in qrdma-hw.h.
 */

#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/module.h"
#include "hw/pci/msix.h"
#include "hw/pci/pcie.h"
#include "hw/qdev-properties.h"
#include "migration/vmstate.h"
#include "qrdma.h"
#include "trace.h"

#define QRDMA_PCIE_CAP_OFFSET 0x80

static uint64_t qrdma_mmio_read(void *opaque, hwaddr addr, unsigned size)
{
    QrdmaState *s = opaque;

    return qrdma_core_mmio_read(&s->core, addr, size);
}

static void qrdma_mmio_write(void *opaque, hwaddr addr, uint64_t val,
                             unsigned size)
{
    QrdmaState *s = opaque;

    qrdma_core_mmio_write(&s->core, addr, val, size);
}

static const MemoryRegionOps qrdma_mmio_ops = {
    .read = qrdma_mmio_read,
    .write = qrdma_mmio_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    /*
     * Every access reaches the handler whole, whatever its width and
     * alignment, so that the handler can reject, log and count the ones
     * the interface does not allow instead of the memory core splitting
     * or dropping them silently.
     */
    .valid = {
        .min_access_size = 1,
        .max_access_size = 8,
        .unaligned = true,
    },
    .impl = {
        .min_access_size = 1,
        .max_access_size = 8,
        .unaligned = true,
    },
};

static void qrdma_realize(PCIDevice *pci_dev, Error **errp)
{
    QrdmaState *s = QRDMA(pci_dev);
    uint16_t nvec = s->core.msix_vectors;
    int ret;
    int i;

    if (nvec < QRDMA_MSIX_VECTORS_MIN || nvec > QRDMA_MSIX_VECTORS_MAX) {
        error_setg(errp, "msix-vectors must be between %d and %d, not %u",
                   QRDMA_MSIX_VECTORS_MIN, QRDMA_MSIX_VECTORS_MAX, nvec);
        return;
    }

    pci_dev->config[PCI_INTERRUPT_PIN] = 1;

    memory_region_init_io(&s->mmio, OBJECT(s), &qrdma_mmio_ops, s,
                          "qrdma-regs", QRDMA_REG_BAR_SIZE);
    pci_register_bar(pci_dev, QRDMA_REG_BAR, PCI_BASE_ADDRESS_SPACE_MEMORY,
                     &s->mmio);

    ret = pcie_endpoint_cap_init(pci_dev, QRDMA_PCIE_CAP_OFFSET);
    if (ret < 0) {
        error_setg_errno(errp, -ret, "cannot add the PCI Express capability");
        return;
    }

    /* The driver needs MSI-X: the event queues have a vector each. */
    ret = msix_init_exclusive_bar(pci_dev, nvec, QRDMA_MSIX_BAR, errp);
    if (ret < 0) {
        return;
    }
    for (i = 0; i < nvec; i++) {
        msix_vector_use(pci_dev, i);
    }

    qrdma_core_realize(&s->core, pci_dev);
    trace_qrdma_realize(nvec);
}

static void qrdma_exit(PCIDevice *pci_dev)
{
    QrdmaState *s = QRDMA(pci_dev);
    int i;

    for (i = 0; i < s->core.msix_vectors; i++) {
        msix_vector_unuse(pci_dev, i);
    }
    msix_uninit_exclusive_bar(pci_dev);
    pcie_cap_exit(pci_dev);
}

static void qrdma_reset_hold(Object *obj, ResetType type)
{
    QrdmaState *s = QRDMA(obj);

    trace_qrdma_reset();
    qrdma_core_reset(&s->core);
}

static int qrdma_post_load(void *opaque, int version_id)
{
    QrdmaState *s = opaque;

    return qrdma_core_post_load(&s->core) ? 0 : -EINVAL;
}

static const VMStateDescription qrdma_vmstate = {
    .name = TYPE_QRDMA,
    .version_id = 1,
    .minimum_version_id = 1,
    .post_load = qrdma_post_load,
    .fields = (const VMStateField[]) {
        VMSTATE_PCI_DEVICE(parent_obj, QrdmaState),
        VMSTATE_MSIX(parent_obj, QrdmaState),
        VMSTATE_UINT32(core.dev_ctrl, QrdmaState),
        VMSTATE_UINT32(core.dev_status, QrdmaState),
        VMSTATE_END_OF_LIST()
    },
};

static const Property qrdma_properties[] = {
    DEFINE_PROP_UINT16("msix-vectors", QrdmaState, core.msix_vectors,
                       QRDMA_MSIX_VECTORS_DEFAULT),
};

static void qrdma_instance_init(Object *obj)
{
    QrdmaState *s = QRDMA(obj);

    object_property_add_uint64_ptr(obj, "guest-errors",
                                   &s->core.guest_errors,
                                   OBJ_PROP_FLAG_READ);
}

static void qrdma_class_init(ObjectClass *klass, void *data)
{
    DeviceClass *dc = DEVICE_CLASS(klass);
    PCIDeviceClass *pc = PCI_DEVICE_CLASS(klass);
    ResettableClass *rc = RESETTABLE_CLASS(klass);

    pc->realize = qrdma_realize;
    pc->exit = qrdma_exit;
    pc->vendor_id = QRDMA_PCI_VENDOR_ID;
    pc->device_id = QRDMA_PCI_DEVICE_ID;
    pc->revision = QRDMA_PCI_REVISION;
    pc->class_id = QRDMA_PCI_CLASS;

    rc->phases.hold = qrdma_reset_hold;

    dc->desc = "qrdma emulated RDMA (RoCEv2) NIC";
    dc->vmsd = &qrdma_vmstate;
    device_class_set_props(dc, qrdma_properties);
    set_bit(DEVICE_CATEGORY_NETWORK, dc->categories);
}

static const TypeInfo qrdma_info = {
    .name = TYPE_QRDMA,
    .parent = TYPE_PCI_DEVICE,
    .instance_size = sizeof(QrdmaState),
    .instance_init = qrdma_instance_init,
    .class_init = qrdma_class_init,
    .interfaces = (InterfaceInfo[]) {
        { INTERFACE_PCIE_DEVICE },
        { }
    },
};

static void qrdma_register_types(void)
{
    type_register_static(&qrdma_info);
}

type_init(qrdma_register_types)
