/*
 * QEMU qrdma: emulated RDMA (RoCEv2) NIC, PCI function
 *
 * Copyright (c) 2026 The qrdma developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * This file is the PCI and QOM glue: BARs, MSI-X, properties, reset and
 * migration.  The device logic lives in qrdma_core.c.  The interface is
 * specified in docs/specs/qrdma.rst and defined in qrdma-hw.h.
 */

#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/module.h"
#include "hw/pci/msix.h"
#include "hw/pci/pcie.h"
#include "hw/qdev-properties.h"
#include "hw/qdev-properties-system.h"
#include "migration/vmstate.h"
#include "qapi/visitor.h"
#include "qemu/host-utils.h"
#include "qrdma.h"
#include "qrdma-qemu-compat.h"
#include "qrdma_resources.h"
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

static uint64_t qrdma_db_read(void *opaque, hwaddr addr, unsigned size)
{
    QrdmaState *s = opaque;

    return qrdma_core_db_read(&s->core, addr, size);
}

static void qrdma_db_write(void *opaque, hwaddr addr, uint64_t val,
                           unsigned size)
{
    QrdmaState *s = opaque;

    qrdma_core_db_write(&s->core, addr, val, size);
}

static const MemoryRegionOps qrdma_db_ops = {
    .read = qrdma_db_read,
    .write = qrdma_db_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
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

typedef struct QrdmaLimitInfo {
    const char *name;
    size_t offset;
    uint32_t max;
    bool pow2;
} QrdmaLimitInfo;

#define QRDMA_LIMIT(prop, field, max_, pow2_) \
    { prop, offsetof(QrdmaLimits, field), max_, pow2_ }

static const QrdmaLimitInfo qrdma_limit_info[] = {
    QRDMA_LIMIT("max-uctx", max_uctx, 1023, false),
    QRDMA_LIMIT("max-pd", max_pd, QRDMA_TABLE_MAX, false),
    QRDMA_LIMIT("max-mr", max_mr, QRDMA_TABLE_MAX, false),
    QRDMA_LIMIT("max-mr-pages", max_mr_pages, 1u << 20, false),
    QRDMA_LIMIT("max-mr-pages-total", max_mr_pages_total, 1u << 26, false),
    QRDMA_LIMIT("max-mw", max_mw, QRDMA_TABLE_MAX, false),
    QRDMA_LIMIT("max-cq", max_cq, QRDMA_TABLE_MAX, false),
    QRDMA_LIMIT("max-cqe", max_cqe, 1u << 20, true),
    QRDMA_LIMIT("max-qp", max_qp, QRDMA_TABLE_MAX - 1, false),
    QRDMA_LIMIT("max-qp-wr", max_qp_wr, 1u << 15, true),
    QRDMA_LIMIT("max-srq", max_srq, QRDMA_TABLE_MAX, false),
    QRDMA_LIMIT("max-srq-wr", max_srq_wr, 1u << 15, true),
    QRDMA_LIMIT("max-ah", max_ah, QRDMA_TABLE_MAX, false),
    QRDMA_LIMIT("max-mcast-grp", max_mcast_grp, 1024, false),
    QRDMA_LIMIT("max-mcast-qp-attach", max_mcast_qp_attach,
                QRDMA_MAX_MCAST_QP_LIMIT, false),
};

static bool qrdma_check_limits(QrdmaState *s, Error **errp)
{
    size_t i;

    for (i = 0; i < ARRAY_SIZE(qrdma_limit_info); i++) {
        const QrdmaLimitInfo *info = &qrdma_limit_info[i];
        uint32_t val = *(uint32_t *)((char *)&s->core.limits + info->offset);

        if (val < 1 || val > info->max) {
            error_setg(errp, "%s must be between 1 and %" PRIu32 ", not %"
                       PRIu32, info->name, info->max, val);
            return false;
        }
        if (info->pow2 && !is_power_of_2(val)) {
            error_setg(errp, "%s must be a power of two, not %" PRIu32,
                       info->name, val);
            return false;
        }
    }
    return true;
}

static void qrdma_realize(PCIDevice *pci_dev, Error **errp)
{
    ERRP_GUARD();
    QrdmaState *s = QRDMA(pci_dev);
    uint16_t nvec = s->core.msix_vectors;
    int ret;
    int i;

    if (nvec < QRDMA_MSIX_VECTORS_MIN || nvec > QRDMA_MSIX_VECTORS_MAX) {
        error_setg(errp, "msix-vectors must be between %d and %d, not %u",
                   QRDMA_MSIX_VECTORS_MIN, QRDMA_MSIX_VECTORS_MAX, nvec);
        return;
    }
    if (!qrdma_check_limits(s, errp)) {
        return;
    }

    /* MSI-X only: the driver needs a vector per event queue anyway. */
    pci_dev->config[PCI_INTERRUPT_PIN] = 0;

    memory_region_init_io(&s->mmio, OBJECT(s), &qrdma_mmio_ops, s,
                          "qrdma-regs", QRDMA_REG_BAR_SIZE);
    pci_register_bar(pci_dev, QRDMA_REG_BAR, PCI_BASE_ADDRESS_SPACE_MEMORY,
                     &s->mmio);

    /* One doorbell page for the kernel and one per user context. */
    memory_region_init_io(&s->doorbells, OBJECT(s), &qrdma_db_ops, s,
                          "qrdma-doorbells",
                          pow2ceil((uint64_t)(s->core.limits.max_uctx + 1) *
                                   QRDMA_DB_PAGE_SIZE));
    pci_register_bar(pci_dev, QRDMA_DB_BAR,
                     PCI_BASE_ADDRESS_SPACE_MEMORY |
                     PCI_BASE_ADDRESS_MEM_TYPE_64, &s->doorbells);

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

    qrdma_eth_realize(&s->core, DEVICE(s), &DEVICE(s)->mem_reentrancy_guard,
                      errp);
    if (*errp) {
        goto err_msix;
    }
    qrdma_core_realize(&s->core, pci_dev, errp);
    if (*errp) {
        qrdma_core_unrealize(&s->core);
        qrdma_eth_unrealize(&s->core);
        goto err_msix;
    }
    trace_qrdma_realize(nvec);
    return;

err_msix:
    for (i = 0; i < nvec; i++) {
        msix_vector_unuse(pci_dev, i);
    }
    msix_uninit_exclusive_bar(pci_dev);
    pcie_cap_exit(pci_dev);
}

static void qrdma_exit(PCIDevice *pci_dev)
{
    QrdmaState *s = QRDMA(pci_dev);
    int i;

    qrdma_core_unrealize(&s->core);
    qrdma_eth_unrealize(&s->core);
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

static const VMStateDescription qrdma_vmstate_eq = {
    .name = "qrdma-eq",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT64(base, QrdmaEq),
        VMSTATE_UINT32(log2, QrdmaEq),
        VMSTATE_UINT32(pi, QrdmaEq),
        VMSTATE_UINT32(ci, QrdmaEq),
        VMSTATE_UINT32(ctrl, QrdmaEq),
        VMSTATE_END_OF_LIST()
    },
};

/* Interrupts raised and not yet sent when the source stopped. */
static bool qrdma_irq_pending_needed(void *opaque)
{
    QrdmaState *s = opaque;

    return s->core.irq_pending != 0;
}

static const VMStateDescription qrdma_vmstate_irq_pending = {
    .name = "qrdma/irq-pending",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = qrdma_irq_pending_needed,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT64(core.irq_pending, QrdmaState),
        VMSTATE_END_OF_LIST()
    },
};

/* The live RDMA resources and their transport state (qrdma_migration.c). */
static bool qrdma_resources_needed(void *opaque)
{
    QrdmaState *s = opaque;

    return qrdma_resources_in_use(&s->core) != 0;
}

static const VMStateDescription qrdma_vmstate_resources_sub = {
    .name = "qrdma/resources",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = qrdma_resources_needed,
    .fields = (const VMStateField[]) {
        VMSTATE_STRUCT(core.mig, QrdmaState, 0, qrdma_vmstate_resources,
                       QrdmaMigImage),
        VMSTATE_END_OF_LIST()
    },
};

/* The counters a host watches go on counting on the destination. */
static const VMStateDescription qrdma_vmstate_counters_sub = {
    .name = "qrdma/counters",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_STRUCT(core.counters, QrdmaState, 0, qrdma_vmstate_counters,
                       QrdmaCounters),
        VMSTATE_END_OF_LIST()
    },
};

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
        VMSTATE_UINT32(core.config_err, QrdmaState),
        VMSTATE_UINT64(core.cmdq.base, QrdmaState),
        VMSTATE_UINT32(core.cmdq.log2, QrdmaState),
        VMSTATE_UINT32(core.cmdq.pi, QrdmaState),
        VMSTATE_UINT32(core.cmdq.ci, QrdmaState),
        VMSTATE_UINT64(core.cmdq.cmpq_base, QrdmaState),
        VMSTATE_STRUCT(core.eth, QrdmaState, 0, qrdma_vmstate_eth, QrdmaEth),
        /* The GID table is the driver's, set with no resource behind it. */
        VMSTATE_BUFFER_UNSAFE(core.gid, QrdmaState, 0,
                              sizeof(((QrdmaCore *)0)->gid)),
        VMSTATE_STRUCT_ARRAY(core.eq, QrdmaState, QRDMA_MSIX_VECTORS_MAX, 0,
                             qrdma_vmstate_eq, QrdmaEq),
        VMSTATE_END_OF_LIST()
    },
    .subsections = (const VMStateDescription * const []) {
        &qrdma_vmstate_irq_pending,
        &qrdma_vmstate_resources_sub,
        &qrdma_vmstate_counters_sub,
        NULL
    },
};

static const Property qrdma_properties[] = {
    DEFINE_NIC_PROPERTIES(QrdmaState, core.eth.conf),
    DEFINE_PROP_CHR("link", QrdmaState, core.link.chr),
    DEFINE_PROP_BOOL("link-share-ram", QrdmaState, core.link.share_ram, false),
    DEFINE_PROP_LINK("fabric", QrdmaState, core.fabric_link,
                     TYPE_QRDMA_FABRIC, QrdmaFabric *),
    DEFINE_PROP_UINT16("msix-vectors", QrdmaState, core.msix_vectors,
                       QRDMA_MSIX_VECTORS_DEFAULT),
    DEFINE_PROP_UINT32("max-uctx", QrdmaState, core.limits.max_uctx, 64),
    DEFINE_PROP_UINT32("max-pd", QrdmaState, core.limits.max_pd, 256),
    DEFINE_PROP_UINT32("max-mr", QrdmaState, core.limits.max_mr, 4096),
    DEFINE_PROP_UINT32("max-mr-pages", QrdmaState, core.limits.max_mr_pages,
                       1u << 18),
    /* 32 MiB of page lists in QEMU at most, whatever the guest registers */
    DEFINE_PROP_UINT32("max-mr-pages-total", QrdmaState,
                       core.limits.max_mr_pages_total, 1u << 22),
    DEFINE_PROP_UINT32("max-mw", QrdmaState, core.limits.max_mw, 4096),
    DEFINE_PROP_UINT32("max-cq", QrdmaState, core.limits.max_cq, 1024),
    DEFINE_PROP_UINT32("max-cqe", QrdmaState, core.limits.max_cqe,
                       1u << 16),
    DEFINE_PROP_UINT32("max-qp", QrdmaState, core.limits.max_qp, 1024),
    DEFINE_PROP_UINT32("max-qp-wr", QrdmaState, core.limits.max_qp_wr,
                       1u << 14),
    DEFINE_PROP_UINT32("max-srq", QrdmaState, core.limits.max_srq, 256),
    DEFINE_PROP_UINT32("max-srq-wr", QrdmaState, core.limits.max_srq_wr,
                       1u << 14),
    DEFINE_PROP_UINT32("max-ah", QrdmaState, core.limits.max_ah, 4096),
    DEFINE_PROP_UINT32("max-mcast-grp", QrdmaState, core.limits.max_mcast_grp,
                       64),
    DEFINE_PROP_UINT32("max-mcast-qp-attach", QrdmaState,
                       core.limits.max_mcast_qp_attach, 16),
};

/* Counters the host reads with qom-get; a guest reset keeps them. */
static const struct {
    const char *name;
    size_t offset;
} qrdma_counter_props[] = {
    { "cmds", offsetof(QrdmaCounters, cmds) },
    { "cmd-errors", offsetof(QrdmaCounters, cmd_errors) },
    { "guest-errors", offsetof(QrdmaCounters, guest_errors) },
    { "eth-tx-frames", offsetof(QrdmaCounters, eth_tx_frames) },
    { "eth-rx-frames", offsetof(QrdmaCounters, eth_rx_frames) },
    { "eth-rx-dropped", offsetof(QrdmaCounters, eth_rx_dropped) },
    { "eth-tx-dropped", offsetof(QrdmaCounters, eth_tx_dropped) },
    { "wqes", offsetof(QrdmaCounters, wqes) },
    { "events-dropped", offsetof(QrdmaCounters, events_dropped) },
    { "sq-deferred", offsetof(QrdmaCounters, sq_deferred) },
    { "pkts-sent", offsetof(QrdmaCounters, pkts_sent) },
    { "pkts-rcvd", offsetof(QrdmaCounters, pkts_rcvd) },
    { "pkts-dropped", offsetof(QrdmaCounters, pkts_dropped) },
    { "dup-reqs", offsetof(QrdmaCounters, dup_reqs) },
    { "out-of-seq", offsetof(QrdmaCounters, out_of_seq) },
    { "seq-naks-sent", offsetof(QrdmaCounters, seq_naks_sent) },
    { "seq-naks-rcvd", offsetof(QrdmaCounters, seq_naks_rcvd) },
    { "rnr-naks-sent", offsetof(QrdmaCounters, rnr_naks_sent) },
    { "rnr-naks-rcvd", offsetof(QrdmaCounters, rnr_naks_rcvd) },
    { "retransmits", offsetof(QrdmaCounters, retransmits) },
    { "early-retries", offsetof(QrdmaCounters, early_retries) },
    { "retry-exceeded", offsetof(QrdmaCounters, retry_exceeded) },
    { "icrc-errors", offsetof(QrdmaCounters, icrc_errors) },
    { "wire-malformed", offsetof(QrdmaCounters, wire_malformed) },
    { "wire-ud-duplicates", offsetof(QrdmaCounters, ud_duplicates) },
    { "held-dropped", offsetof(QrdmaCounters, held_dropped) },
    { "dup-unmatched", offsetof(QrdmaCounters, dup_unmatched) },
    { "acks-withheld", offsetof(QrdmaCounters, acks_withheld) },
    { "link-pkts-sent", offsetof(QrdmaCounters, link_pkts_sent) },
    { "link-pkts-rcvd", offsetof(QrdmaCounters, link_pkts_rcvd) },
    { "link-tx-dropped", offsetof(QrdmaCounters, link_tx_dropped) },
    { "link-errors", offsetof(QrdmaCounters, link_errors) },
    { "link-ups", offsetof(QrdmaCounters, link_ups) },
    { "link-pkts-one-copy", offsetof(QrdmaCounters, link_pkts_one_copy) },
};

static void qrdma_get_resources(Object *obj, Visitor *v, const char *name,
                                void *opaque, Error **errp)
{
    QrdmaState *s = QRDMA(obj);
    uint32_t n = qrdma_resources_in_use(&s->core);

    visit_type_uint32(v, name, &n, errp);
}

static bool qrdma_get_link_up(Object *obj, Error **errp)
{
    return QRDMA(obj)->core.link.state == QRDMA_LINK_UP;
}

static bool qrdma_get_link_one_copy(Object *obj, Error **errp)
{
    QrdmaLink *l = &QRDMA(obj)->core.link;

    return l->state == QRDMA_LINK_UP && qrdma_link_one_copy(l);
}

static void qrdma_instance_init(Object *obj)
{
    QrdmaState *s = QRDMA(obj);
    size_t i;

    for (i = 0; i < ARRAY_SIZE(qrdma_counter_props); i++) {
        object_property_add_uint64_ptr(obj, qrdma_counter_props[i].name,
                                       (uint64_t *)((char *)&s->core.counters +
                                           qrdma_counter_props[i].offset),
                                       OBJ_PROP_FLAG_READ);
    }
    object_property_add(obj, "resources", "uint32", qrdma_get_resources,
                        NULL, NULL, NULL);
    object_property_add_bool(obj, "link-up", qrdma_get_link_up, NULL);
    object_property_add_bool(obj, "link-one-copy", qrdma_get_link_one_copy,
                             NULL);
}

static void qrdma_class_init(ObjectClass *klass, QrdmaClassData *data)
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
