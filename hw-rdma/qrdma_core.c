/*
 * QEMU qrdma: emulated RDMA (RoCEv2) NIC, device logic
 *
 * Copyright (c) 2026 The qrdma developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/log.h"
#include "qrdma.h"
#include "trace.h"

typedef struct QrdmaRegInfo {
    hwaddr offset;
    unsigned width;
    bool writable;
} QrdmaRegInfo;

static const QrdmaRegInfo qrdma_regs[] = {
    { QRDMA_REG_VERSION,    4, false },
    { QRDMA_REG_CAPS,       8, false },
    { QRDMA_REG_DEV_CTRL,   4, true },
    { QRDMA_REG_DEV_STATUS, 4, false },
};

static void G_GNUC_PRINTF(2, 3)
qrdma_guest_error(QrdmaCore *core, const char *fmt, ...)
{
    g_autofree char *msg = NULL;
    va_list ap;

    core->guest_errors++;
    va_start(ap, fmt);
    msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    qemu_log_mask(LOG_GUEST_ERROR, "qrdma: %s\n", msg);
}

/*
 * The register an access falls in, or NULL when the access is not one the
 * interface allows: aligned 32-bit accesses, and aligned 64-bit accesses to
 * 64-bit registers.  The memory core is told to let every width through so
 * that a bad access is seen, logged and counted here rather than dropped
 * silently before it reaches the device.
 */
static const QrdmaRegInfo *qrdma_reg_find(hwaddr addr, unsigned size)
{
    size_t i;

    if ((size != 4 && size != 8) || !QEMU_IS_ALIGNED(addr, size)) {
        return NULL;
    }
    for (i = 0; i < ARRAY_SIZE(qrdma_regs); i++) {
        const QrdmaRegInfo *reg = &qrdma_regs[i];

        if (addr >= reg->offset && addr + size <= reg->offset + reg->width &&
            (size == 4 || size == reg->width)) {
            return reg;
        }
    }
    return NULL;
}

static uint64_t qrdma_reg_value(QrdmaCore *core, const QrdmaRegInfo *reg)
{
    switch (reg->offset) {
    case QRDMA_REG_VERSION:
        return QRDMA_VERSION;
    case QRDMA_REG_CAPS:
        return core->msix_vectors & QRDMA_CAPS_MSIX_VECTORS_MASK;
    case QRDMA_REG_DEV_CTRL:
        return core->dev_ctrl;
    case QRDMA_REG_DEV_STATUS:
        return core->dev_status;
    default:
        g_assert_not_reached();
    }
}

uint64_t qrdma_core_mmio_read(QrdmaCore *core, hwaddr addr, unsigned size)
{
    const QrdmaRegInfo *reg = qrdma_reg_find(addr, size);
    uint64_t val;

    if (!reg) {
        trace_qrdma_err_mmio_bad_access("read", addr, size);
        qrdma_guest_error(core, "invalid %u-byte read at 0x%" HWADDR_PRIx,
                          size, addr);
        return 0;
    }

    val = qrdma_reg_value(core, reg) >> ((addr - reg->offset) * 8);
    if (size == 4) {
        val = (uint32_t)val;
    }
    trace_qrdma_mmio_read(addr, size, val);
    return val;
}

static void qrdma_write_dev_ctrl(QrdmaCore *core, uint32_t val)
{
    if (val & ~QRDMA_DEV_CTRL_VALID_MASK) {
        trace_qrdma_err_dev_ctrl_reserved(val);
        qrdma_guest_error(core, "DEV_CTRL write 0x%" PRIx32
                          " sets reserved bits, ignored", val);
        return;
    }

    if (val & QRDMA_DEV_CTRL_RESET) {
        trace_qrdma_dev_reset();
        qrdma_core_reset(core);
        return;
    }

    if ((val & QRDMA_DEV_CTRL_ENABLE) && !(core->dev_ctrl & QRDMA_DEV_CTRL_ENABLE)) {
        trace_qrdma_dev_enable();
        core->dev_ctrl |= QRDMA_DEV_CTRL_ENABLE;
        core->dev_status |= QRDMA_DEV_STATUS_READY;
    } else if (!(val & QRDMA_DEV_CTRL_ENABLE) &&
               (core->dev_ctrl & QRDMA_DEV_CTRL_ENABLE)) {
        trace_qrdma_dev_disable();
        core->dev_ctrl &= ~QRDMA_DEV_CTRL_ENABLE;
        core->dev_status &= ~QRDMA_DEV_STATUS_READY;
    }
}

void qrdma_core_mmio_write(QrdmaCore *core, hwaddr addr, uint64_t val,
                           unsigned size)
{
    const QrdmaRegInfo *reg = qrdma_reg_find(addr, size);

    if (!reg) {
        trace_qrdma_err_mmio_bad_access("write", addr, size);
        qrdma_guest_error(core, "invalid %u-byte write at 0x%" HWADDR_PRIx
                          " (val 0x%" PRIx64 "), ignored", size, addr, val);
        return;
    }
    if (!reg->writable) {
        trace_qrdma_err_mmio_read_only(addr, val);
        qrdma_guest_error(core, "write 0x%" PRIx64 " to read-only register"
                          " 0x%" HWADDR_PRIx ", ignored", val, addr);
        return;
    }

    trace_qrdma_mmio_write(addr, size, val);
    switch (reg->offset) {
    case QRDMA_REG_DEV_CTRL:
        qrdma_write_dev_ctrl(core, val);
        break;
    default:
        g_assert_not_reached();
    }
}

void qrdma_core_reset(QrdmaCore *core)
{
    core->dev_ctrl = 0;
    core->dev_status = 0;
}

void qrdma_core_realize(QrdmaCore *core, PCIDevice *owner)
{
    core->owner = owner;
    qrdma_core_reset(core);
}

/*
 * A migration stream is guest-controlled input like any other: accept only
 * register contents the device itself could have produced.
 */
bool qrdma_core_post_load(QrdmaCore *core)
{
    bool enabled = core->dev_ctrl & QRDMA_DEV_CTRL_ENABLE;
    bool ready = core->dev_status & QRDMA_DEV_STATUS_READY;

    if (core->dev_ctrl & ~QRDMA_DEV_CTRL_ENABLE) {
        trace_qrdma_err_post_load("DEV_CTRL holds bits that never persist");
        return false;
    }
    if (core->dev_status & ~(QRDMA_DEV_STATUS_READY | QRDMA_DEV_STATUS_FATAL)) {
        trace_qrdma_err_post_load("DEV_STATUS holds undefined bits");
        return false;
    }
    if (enabled != ready) {
        trace_qrdma_err_post_load("DEV_STATUS.READY disagrees with DEV_CTRL");
        return false;
    }
    return true;
}
