/*
 * QTest testcase for the qrdma emulated RDMA NIC
 *
 * Copyright (c) 2026 The qrdma developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include <glib/gstdio.h>
#include "qemu/module.h"
#include "libqtest.h"
#include "libqos/qgraph.h"
#include "libqos/pci.h"
#include "libqos/libqos-malloc.h"
#include "qobject/qdict.h"
#include "hw/pci/pci_regs.h"
#include "hw/rdma/qrdma-hw.h"
#include "qrdma-qos.h"

/* Where the guest-error log of the invalid-access test goes. */
static char *qrdma_log_path;

static void *qrdma_get_driver(void *obj, const char *interface)
{
    QQrdma *q = obj;

    if (!g_strcmp0(interface, "pci-device")) {
        return &q->dev;
    }
    if (!g_strcmp0(interface, QRDMA_NODE_CMD) ||
        !g_strcmp0(interface, QRDMA_NODE_QP) ||
        !g_strcmp0(interface, QRDMA_NODE_ETH) ||
        !g_strcmp0(interface, QRDMA_NODE_DP) ||
        !g_strcmp0(interface, QRDMA_NODE_FUZZ)) {
        return q;
    }

    fprintf(stderr, "%s not present in qrdma\n", interface);
    g_assert_not_reached();
}

static void *qrdma_create(void *pci_bus, QGuestAllocator *alloc, void *addr)
{
    QQrdma *q = g_new0(QQrdma, 1);

    qpci_device_init(&q->dev, pci_bus, addr);
    q->obj.get_driver = qrdma_get_driver;
    return &q->obj;
}

static QPCIBar qrdma_map_regs(QQrdma *q, uint64_t *size)
{
    qpci_device_enable(&q->dev);
    return qpci_iomap(&q->dev, QRDMA_REG_BAR, size);
}

static uint32_t qrdma_readl(QQrdma *q, uint64_t off)
{
    return qpci_io_readl(&q->dev, q->bar, off);
}

static void qrdma_writel(QQrdma *q, uint64_t off, uint32_t val)
{
    qpci_io_writel(&q->dev, q->bar, off, val);
}

static uint64_t qrdma_guest_errors(QQrdma *q)
{
    QDict *rsp;
    uint64_t n;

    rsp = qtest_qmp(q->dev.bus->qts,
                    "{ 'execute': 'qom-get', 'arguments': "
                    "{ 'path': %s, 'property': 'guest-errors' } }",
                    QRDMA_QOM_PATH);
    g_assert(qdict_haskey(rsp, "return"));
    n = qdict_get_int(rsp, "return");
    qobject_unref(rsp);
    return n;
}

static void test_pci_ids(void *obj, void *data, QGuestAllocator *alloc)
{
    QQrdma *q = obj;
    QPCIDevice *dev = &q->dev;
    uint8_t msix;

    g_assert_cmphex(qpci_config_readw(dev, PCI_VENDOR_ID), ==,
                    QRDMA_PCI_VENDOR_ID);
    g_assert_cmphex(qpci_config_readw(dev, PCI_DEVICE_ID), ==,
                    QRDMA_PCI_DEVICE_ID);
    g_assert_cmphex(qpci_config_readw(dev, PCI_CLASS_DEVICE), ==,
                    QRDMA_PCI_CLASS);
    g_assert_cmphex(qpci_config_readb(dev, PCI_REVISION_ID), ==,
                    QRDMA_PCI_REVISION);

    g_assert_cmpint(qpci_find_capability(dev, PCI_CAP_ID_EXP, 0), !=, 0);
    msix = qpci_find_capability(dev, PCI_CAP_ID_MSIX, 0);
    g_assert_cmpint(msix, !=, 0);
    /* The table lives alone in its own BAR. */
    g_assert_cmpint(qpci_config_readl(dev, msix + PCI_MSIX_TABLE) &
                    PCI_MSIX_FLAGS_BIRMASK, ==, QRDMA_MSIX_BAR);
}

static void test_bar_sizes(void *obj, void *data, QGuestAllocator *alloc)
{
    QQrdma *q = obj;
    uint64_t size;
    QPCIBar bar;

    q->bar = qrdma_map_regs(q, &size);
    g_assert_cmphex(size, ==, QRDMA_REG_BAR_SIZE);

    bar = qpci_iomap(&q->dev, QRDMA_MSIX_BAR, &size);
    /* 4 vectors of 16 bytes plus the PBA, in one page. */
    g_assert_cmphex(size, ==, 0x1000);
    qpci_iounmap(&q->dev, bar);
    qpci_iounmap(&q->dev, q->bar);
}

static void test_version_caps(void *obj, void *data, QGuestAllocator *alloc)
{
    QQrdma *q = obj;
    uint64_t caps;

    q->bar = qrdma_map_regs(q, NULL);
    g_assert_cmphex(qrdma_readl(q, QRDMA_REG_VERSION), ==, QRDMA_VERSION);
    g_assert_cmpint(QRDMA_VERSION_GET_MAJOR(qrdma_readl(q, QRDMA_REG_VERSION)),
                    ==, 1);

    caps = qpci_io_readq(&q->dev, q->bar, QRDMA_REG_CAPS);
    g_assert_cmpuint(caps & QRDMA_CAPS_MSIX_VECTORS_MASK, ==, 4);
    /* A 64-bit register also reads as two 32-bit halves. */
    g_assert_cmphex(qrdma_readl(q, QRDMA_REG_CAPS), ==, (uint32_t)caps);
    g_assert_cmphex(qrdma_readl(q, QRDMA_REG_CAPS + 4), ==, caps >> 32);

    g_assert_cmphex(qrdma_readl(q, QRDMA_REG_DEV_CTRL), ==, 0);
    g_assert_cmphex(qrdma_readl(q, QRDMA_REG_DEV_STATUS), ==, 0);
    g_assert_cmpuint(qrdma_guest_errors(q), ==, 0);
    qpci_iounmap(&q->dev, q->bar);
}

static void test_msix_vectors_property(void *obj, void *data,
                                       QGuestAllocator *alloc)
{
    QQrdma *q = obj;

    q->bar = qrdma_map_regs(q, NULL);
    g_assert_cmpuint(qpci_io_readq(&q->dev, q->bar, QRDMA_REG_CAPS) &
                     QRDMA_CAPS_MSIX_VECTORS_MASK, ==, 16);
    g_assert_cmpuint(qpci_msix_table_size(&q->dev), ==, 16);
    qpci_iounmap(&q->dev, q->bar);
}

static void configure_cmdq(QQrdma *q, uint64_t ring)
{
    qpci_io_writeq(&q->dev, q->bar, QRDMA_REG_CMDQ_BASE, ring);
    qrdma_writel(q, QRDMA_REG_CMDQ_LOG2, 2);
    qpci_io_writeq(&q->dev, q->bar, QRDMA_REG_CMPQ_BASE, ring + 2048);
}

static void test_enable_reset(void *obj, void *data, QGuestAllocator *alloc)
{
    QQrdma *q = obj;
    uint64_t ring = guest_alloc(alloc, 4096);

    q->bar = qrdma_map_regs(q, NULL);

    /* Enabling takes a command queue; the reset clears its registers. */
    configure_cmdq(q, ring);
    qrdma_writel(q, QRDMA_REG_DEV_CTRL, QRDMA_DEV_CTRL_ENABLE);
    g_assert_cmphex(qrdma_readl(q, QRDMA_REG_DEV_CTRL), ==,
                    QRDMA_DEV_CTRL_ENABLE);
    g_assert_cmphex(qrdma_readl(q, QRDMA_REG_DEV_STATUS), ==,
                    QRDMA_DEV_STATUS_READY);

    qrdma_writel(q, QRDMA_REG_DEV_CTRL, QRDMA_DEV_CTRL_RESET);
    g_assert_cmphex(qrdma_readl(q, QRDMA_REG_DEV_CTRL), ==, 0);
    g_assert_cmphex(qrdma_readl(q, QRDMA_REG_DEV_STATUS), ==, 0);
    g_assert_cmphex(qpci_io_readq(&q->dev, q->bar, QRDMA_REG_CMDQ_BASE), ==,
                    0);

    /* After a reset the device enables again, and disables. */
    configure_cmdq(q, ring);
    qrdma_writel(q, QRDMA_REG_DEV_CTRL, QRDMA_DEV_CTRL_ENABLE);
    g_assert_cmphex(qrdma_readl(q, QRDMA_REG_DEV_STATUS), ==,
                    QRDMA_DEV_STATUS_READY);
    qrdma_writel(q, QRDMA_REG_DEV_CTRL, 0);
    g_assert_cmphex(qrdma_readl(q, QRDMA_REG_DEV_STATUS), ==, 0);

    g_assert_cmpuint(qrdma_guest_errors(q), ==, 0);
    qpci_iounmap(&q->dev, q->bar);
}

/*
 * Accesses the interface does not allow: each is ignored (reads give 0,
 * writes change nothing), counted and logged as a guest error.
 */
static void test_invalid_access(void *obj, void *data, QGuestAllocator *alloc)
{
    QQrdma *q = obj;
    QPCIDevice *dev = &q->dev;
    g_autofree char *log = NULL;
    uint64_t errors = 0;

    q->bar = qrdma_map_regs(q, NULL);

    /* offsets that hold no register */
    g_assert_cmphex(qrdma_readl(q, 0x004), ==, 0);
    g_assert_cmphex(qrdma_readl(q, 0x800), ==, 0);
    g_assert_cmphex(qrdma_readl(q, QRDMA_REG_BAR_SIZE - 4), ==, 0);
    qrdma_writel(q, 0x800, 0xffffffff);
    errors += 4;

    /* widths other than 32 bits, and 64 bits on a 32-bit register */
    g_assert_cmphex(qpci_io_readb(dev, q->bar, QRDMA_REG_VERSION), ==, 0);
    g_assert_cmphex(qpci_io_readw(dev, q->bar, QRDMA_REG_VERSION), ==, 0);
    g_assert_cmphex(qpci_io_readq(dev, q->bar, QRDMA_REG_DEV_CTRL), ==, 0);
    qpci_io_writeb(dev, q->bar, QRDMA_REG_DEV_CTRL, QRDMA_DEV_CTRL_ENABLE);
    qpci_io_writew(dev, q->bar, QRDMA_REG_DEV_CTRL, QRDMA_DEV_CTRL_ENABLE);
    errors += 5;

    /* unaligned */
    g_assert_cmphex(qrdma_readl(q, QRDMA_REG_VERSION + 2), ==, 0);
    g_assert_cmphex(qpci_io_readq(dev, q->bar, QRDMA_REG_CAPS + 4), ==, 0);
    errors += 2;

    /* read-only registers, and reserved bits of DEV_CTRL */
    qrdma_writel(q, QRDMA_REG_VERSION, 0);
    qrdma_writel(q, QRDMA_REG_DEV_STATUS, QRDMA_DEV_STATUS_READY);
    qpci_io_writeq(dev, q->bar, QRDMA_REG_CAPS, 0);
    qrdma_writel(q, QRDMA_REG_DEV_CTRL, QRDMA_DEV_CTRL_ENABLE | (1u << 31));
    errors += 4;

    /* nothing changed */
    g_assert_cmphex(qrdma_readl(q, QRDMA_REG_VERSION), ==, QRDMA_VERSION);
    g_assert_cmphex(qrdma_readl(q, QRDMA_REG_DEV_CTRL), ==, 0);
    g_assert_cmphex(qrdma_readl(q, QRDMA_REG_DEV_STATUS), ==, 0);
    g_assert_cmpuint(qpci_io_readq(dev, q->bar, QRDMA_REG_CAPS) &
                     QRDMA_CAPS_MSIX_VECTORS_MASK, ==, 4);

    g_assert_cmpuint(qrdma_guest_errors(q), ==, errors);

    /* and each was logged, named for its condition */
    g_assert_true(g_file_get_contents(qrdma_log_path, &log, NULL, NULL));
    g_assert_nonnull(strstr(log, "qrdma_err_mmio_bad_read: "
                            "invalid 4-byte read at 0x800"));
    g_assert_nonnull(strstr(log, "qrdma_err_mmio_bad_write: "
                            "invalid 1-byte write at 0x10"));
    g_assert_nonnull(strstr(log, "qrdma_err_mmio_bad_read: "
                            "invalid 8-byte read at 0xc"));
    g_assert_nonnull(strstr(log, "read-only register 0x0"));
    g_assert_nonnull(strstr(log, "sets reserved bits"));

    qpci_iounmap(dev, q->bar);
    g_unlink(qrdma_log_path);
}

static void qrdma_register_nodes(void)
{
    QOSGraphEdgeOptions opts = {
        .extra_device_opts = "addr=04.0,id=qrdma0",
    };
    QOSGraphTestOptions log_opts = { };

    add_qpci_address(&opts, &(QPCIAddress) { .devfn = QPCI_DEVFN(4, 0) });

    qos_node_create_driver("qrdma", qrdma_create);
    qos_node_consumes("qrdma", "pci-bus", &opts);
    qos_node_produces("qrdma", "pci-device");
    qos_node_produces("qrdma", QRDMA_NODE_CMD);
    qos_node_produces("qrdma", QRDMA_NODE_QP);
    qos_node_produces("qrdma", QRDMA_NODE_ETH);
    qos_node_produces("qrdma", QRDMA_NODE_DP);
    qos_node_produces("qrdma", QRDMA_NODE_FUZZ);

    qos_add_test("pci-ids", "qrdma", test_pci_ids, NULL);
    qos_add_test("bar-sizes", "qrdma", test_bar_sizes, NULL);
    qos_add_test("version-caps", "qrdma", test_version_caps, NULL);
    qos_add_test("msix-vectors-property", "qrdma",
                 test_msix_vectors_property, &(QOSGraphTestOptions) {
        .edge.extra_device_opts = "msix-vectors=16",
    });
    qos_add_test("enable-reset", "qrdma", test_enable_reset, NULL);

    qrdma_log_path = g_strdup_printf("%s/qrdma-test-%d.log",
                                     g_get_tmp_dir(), getpid());
    log_opts.edge.before_cmd_line =
        g_strdup_printf("-d guest_errors -D %s", qrdma_log_path);
    qos_add_test("invalid-access", "qrdma", test_invalid_access, &log_opts);
}

libqos_init(qrdma_register_nodes);
