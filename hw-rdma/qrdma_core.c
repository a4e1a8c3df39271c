/*
 * QEMU qrdma: emulated RDMA (RoCEv2) NIC, registers and device state
 *
 * Copyright (c) 2026 The qrdma developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/host-utils.h"
#include "qemu/guest-random.h"
#include "qemu/log.h"
#include "qemu/main-loop.h"
#include "qapi/error.h"
#include "hw/pci/msix.h"
#include "system/runstate.h"
#include "qrdma.h"
#include "qrdma_dp.h"
#include "qrdma_cmd.h"
#include "qrdma_resources.h"
#include "qrdma_err.h"
#include "trace.h"

typedef struct QrdmaRegInfo {
    hwaddr offset;
    unsigned width;
    bool writable;
} QrdmaRegInfo;

static const QrdmaRegInfo qrdma_regs[] = {
    { QRDMA_REG_VERSION,        4, false },
    { QRDMA_REG_CAPS,           8, false },
    { QRDMA_REG_DEV_CTRL,       4, true },
    { QRDMA_REG_DEV_STATUS,     4, false },
    { QRDMA_REG_CONFIG_ERR,     4, false },
    { QRDMA_REG_CMDQ_BASE,      8, true },
    { QRDMA_REG_CMDQ_LOG2,      4, true },
    { QRDMA_REG_CMDQ_PI,        4, true },
    { QRDMA_REG_CMDQ_CI,        4, false },
    { QRDMA_REG_CMPQ_BASE,      8, true },
    { QRDMA_REG_ETH_MAC_LO,     4, false },
    { QRDMA_REG_ETH_MAC_HI,     4, false },
    { QRDMA_REG_ETH_LINK,       4, false },
    { QRDMA_REG_ETH_CTRL,       4, true },
    { QRDMA_REG_ETH_TX_BASE,    8, true },
    { QRDMA_REG_ETH_TX_LOG2,    4, true },
    { QRDMA_REG_ETH_TX_PI,      4, true },
    { QRDMA_REG_ETH_TX_CI,      4, false },
    { QRDMA_REG_ETH_RX_BASE,    8, true },
    { QRDMA_REG_ETH_RX_LOG2,    4, true },
    { QRDMA_REG_ETH_RX_PI,      4, true },
    { QRDMA_REG_ETH_RX_CI,      4, false },
    { QRDMA_REG_ETH_IRQ_VECTOR, 4, true },
};

static bool qrdma_reg_is_eth(hwaddr offset)
{
    return offset >= QRDMA_REG_ETH_MAC_LO && offset <= QRDMA_REG_ETH_IRQ_VECTOR;
}

/*
 * The device cannot go on (its own ring in guest memory is unreachable):
 * stop accepting work until the driver resets it.
 */
void qrdma_fatal(QrdmaCore *core, uint32_t why)
{
    trace_qrdma_fatal(why);
    core->config_err = why;
    core->dev_status = QRDMA_DEV_STATUS_FATAL;
    qemu_bh_cancel(core->cmdq.bh);
    qrdma_event(core, QRDMA_EV_DEVICE_FATAL, 0);
}

/*
 * The register an access falls in, or NULL when the access is not one the
 * interface allows: aligned 32-bit accesses, and aligned 64-bit accesses to
 * 64-bit registers.  The memory core is told to let every width through so
 * that a bad access is seen, logged and counted here rather than dropped
 * silently before it reaches the device.
 */
static bool qrdma_reg_find(QrdmaCore *core, hwaddr addr, unsigned size,
                           QrdmaRegInfo *out)
{
    unsigned eq;
    hwaddr reg;
    size_t i;

    if ((size != 4 && size != 8) || !QEMU_IS_ALIGNED(addr, size)) {
        return false;
    }
    for (i = 0; i < ARRAY_SIZE(qrdma_regs); i++) {
        *out = qrdma_regs[i];
        if (addr >= out->offset && addr + size <= out->offset + out->width &&
            (size == 4 || size == out->width)) {
            return true;
        }
    }
    /* The event queue banks: only those of vectors that exist. */
    if (qrdma_eq_reg(core, addr, size, &eq, &reg, &out->width,
                        &out->writable)) {
        out->offset = QRDMA_REG_EQ(eq) + reg;
        return addr + size <= out->offset + out->width &&
               (size == 4 || size == out->width);
    }
    return false;
}

static bool qrdma_reg_is_eq(hwaddr offset)
{
    return offset >= QRDMA_REG_EQ(0) &&
           offset < QRDMA_REG_EQ(QRDMA_MSIX_VECTORS_MAX);
}

static uint64_t qrdma_caps(QrdmaCore *core)
{
    return (core->msix_vectors & QRDMA_CAPS_MSIX_VECTORS_MASK) |
           QRDMA_CAPS_CMDQ | QRDMA_CAPS_ETH | QRDMA_CAPS_DATA_PATH;
}

static uint64_t qrdma_reg_value(QrdmaCore *core, const QrdmaRegInfo *reg)
{
    if (qrdma_reg_is_eth(reg->offset)) {
        return qrdma_eth_reg_read(core, reg->offset);
    }
    if (qrdma_reg_is_eq(reg->offset)) {
        return qrdma_eq_read(core, (reg->offset - QRDMA_REG_EQ(0)) / 0x20,
                                (reg->offset - QRDMA_REG_EQ(0)) % 0x20);
    }

    switch (reg->offset) {
    case QRDMA_REG_VERSION:
        return QRDMA_VERSION;
    case QRDMA_REG_CAPS:
        return qrdma_caps(core);
    case QRDMA_REG_DEV_CTRL:
        return core->dev_ctrl;
    case QRDMA_REG_DEV_STATUS:
        return core->dev_status;
    case QRDMA_REG_CONFIG_ERR:
        return core->config_err;
    case QRDMA_REG_CMDQ_BASE:
        return core->cmdq.base;
    case QRDMA_REG_CMDQ_LOG2:
        return core->cmdq.log2;
    case QRDMA_REG_CMDQ_PI:
        return core->cmdq.pi;
    case QRDMA_REG_CMDQ_CI:
        return core->cmdq.ci;
    case QRDMA_REG_CMPQ_BASE:
        return core->cmdq.cmpq_base;
    default:
        g_assert_not_reached();
    }
}

uint64_t qrdma_core_mmio_read(QrdmaCore *core, hwaddr addr, unsigned size)
{
    QrdmaRegInfo info;
    const QrdmaRegInfo *reg = &info;
    uint64_t val;

    if (!qrdma_reg_find(core, addr, size, &info)) {
        QRDMA_GUEST_ERR(core, qrdma_err_mmio_bad_read,
                        "invalid %u-byte read at 0x%" HWADDR_PRIx, size, addr);
        return 0;
    }

    val = qrdma_reg_value(core, reg) >> ((addr - reg->offset) * 8);
    if (size == 4) {
        val = (uint32_t)val;
    }
    trace_qrdma_mmio_read(addr, size, val);
    return val;
}

/*
 * Enabling checks the command queue configuration once, so that the
 * command path can trust it afterwards (the registers are read-only while
 * the device is enabled).
 */
static uint32_t qrdma_check_config(QrdmaCore *core)
{
    QrdmaCmdq *q = &core->cmdq;

    if (q->log2 < QRDMA_CMDQ_LOG2_MIN || q->log2 > QRDMA_CMDQ_LOG2_MAX) {
        return QRDMA_CONFIG_ERR_CMDQ_LOG2;
    }
    /* A ring may not run past the end of the address space either. */
    if (!q->base || !QEMU_IS_ALIGNED(q->base, QRDMA_CMDQ_ALIGN) ||
        q->base + ((uint64_t)sizeof(struct qrdma_cmd) << q->log2) < q->base) {
        return QRDMA_CONFIG_ERR_CMDQ_BASE;
    }
    if (!q->cmpq_base || !QEMU_IS_ALIGNED(q->cmpq_base, QRDMA_CMPQ_ALIGN) ||
        q->cmpq_base + ((uint64_t)sizeof(struct qrdma_cmpl) << q->log2) <
        q->cmpq_base) {
        return QRDMA_CONFIG_ERR_CMPQ_BASE;
    }
    return QRDMA_CONFIG_ERR_NONE;
}

static void qrdma_enable(QrdmaCore *core)
{
    uint32_t err = qrdma_check_config(core);

    core->config_err = err;
    if (err != QRDMA_CONFIG_ERR_NONE) {
        QRDMA_GUEST_ERR(core, qrdma_err_enable,
                        "enable refused: bad command queue "
                        "configuration (CONFIG_ERR %" PRIu32 ")", err);
        return;
    }
    trace_qrdma_dev_enable(core->cmdq.base, core->cmdq.log2,
                           core->cmdq.cmpq_base);
    core->dev_ctrl |= QRDMA_DEV_CTRL_ENABLE;
    core->dev_status |= QRDMA_DEV_STATUS_READY;
    core->cmdq.pi = 0;
    core->cmdq.ci = 0;
}

static void qrdma_disable(QrdmaCore *core)
{
    trace_qrdma_dev_disable();
    qemu_bh_cancel(core->cmdq.bh);
    core->dev_ctrl &= ~QRDMA_DEV_CTRL_ENABLE;
    core->dev_status &= ~QRDMA_DEV_STATUS_READY;
}

static void qrdma_write_dev_ctrl(QrdmaCore *core, uint32_t val)
{
    bool enabled = core->dev_ctrl & QRDMA_DEV_CTRL_ENABLE;

    if (val & ~QRDMA_DEV_CTRL_VALID_MASK) {
        QRDMA_GUEST_ERR(core, qrdma_err_dev_ctrl_reserved,
                        "DEV_CTRL write 0x%" PRIx32
                        " sets reserved bits, ignored", val);
        return;
    }

    if (val & QRDMA_DEV_CTRL_RESET) {
        trace_qrdma_dev_reset();
        qrdma_core_reset(core);
        return;
    }

    if (core->dev_status & QRDMA_DEV_STATUS_FATAL) {
        QRDMA_GUEST_ERR(core, qrdma_err_dev_ctrl_fatal,
                        "DEV_CTRL write 0x%" PRIx32
                        " while the device is in fatal state, ignored", val);
        return;
    }
    if ((val & QRDMA_DEV_CTRL_ENABLE) && !enabled) {
        qrdma_enable(core);
    } else if (!(val & QRDMA_DEV_CTRL_ENABLE) && enabled) {
        qrdma_disable(core);
    }
}

/* CMDQ_PI: the only way work reaches the command queue. */
static void qrdma_write_cmdq_pi(QrdmaCore *core, uint32_t pi)
{
    QrdmaCmdq *q = &core->cmdq;

    if (!(core->dev_status & QRDMA_DEV_STATUS_READY)) {
        QRDMA_GUEST_ERR(core, qrdma_err_cmdq_db_not_ready,
                        "command doorbell 0x%" PRIx32
                        " while the device is not ready, ignored", pi);
        return;
    }
    if (pi - q->ci > (1u << q->log2)) {
        QRDMA_GUEST_ERR(core, qrdma_err_cmdq_db_beyond_ring,
                        "command doorbell 0x%" PRIx32
                        " is more than the ring size ahead of 0x%" PRIx32
                        ", ignored", pi, q->ci);
        return;
    }
    trace_qrdma_cmdq_db(pi, q->ci);
    q->pi = pi;
    /* Commands run from the main loop, not inside the register write. */
    qemu_bh_schedule(q->bh);
}

void qrdma_core_mmio_write(QrdmaCore *core, hwaddr addr, uint64_t val,
                           unsigned size)
{
    QrdmaRegInfo info;
    const QrdmaRegInfo *reg = &info;
    uint64_t full;

    if (!qrdma_reg_find(core, addr, size, &info)) {
        QRDMA_GUEST_ERR(core, qrdma_err_mmio_bad_write,
                        "invalid %u-byte write at 0x%" HWADDR_PRIx " (val 0x%"
                        PRIx64 "), ignored", size, addr, val);
        return;
    }
    if (!reg->writable) {
        QRDMA_GUEST_ERR(core, qrdma_err_mmio_read_only,
                        "write 0x%" PRIx64 " to " "read-only register 0x%"
                        HWADDR_PRIx ", ignored", val, addr);
        return;
    }
    trace_qrdma_mmio_write(addr, size, val);

    /* A 32-bit half of a 64-bit register keeps the other half. */
    full = val;
    if (size < reg->width) {
        full = deposit64(qrdma_reg_value(core, reg),
                         (addr - reg->offset) * 8, size * 8, val);
    }

    if (qrdma_reg_is_eth(reg->offset)) {
        qrdma_eth_reg_write(core, reg->offset, full);
        return;
    }
    if (qrdma_reg_is_eq(reg->offset)) {
        qrdma_eq_write(core, (reg->offset - QRDMA_REG_EQ(0)) / 0x20,
                          (reg->offset - QRDMA_REG_EQ(0)) % 0x20, full);
        return;
    }

    switch (reg->offset) {
    case QRDMA_REG_DEV_CTRL:
        qrdma_write_dev_ctrl(core, full);
        return;
    case QRDMA_REG_CMDQ_PI:
        qrdma_write_cmdq_pi(core, full);
        return;
    }

    /* The rest configure the command queue: fixed while enabled. */
    if (core->dev_ctrl & QRDMA_DEV_CTRL_ENABLE) {
        QRDMA_GUEST_ERR(core, qrdma_err_cmdq_config_enabled,
                        "command queue register " "0x%" HWADDR_PRIx
                        " written while enabled, ignored", addr);
        return;
    }
    switch (reg->offset) {
    case QRDMA_REG_CMDQ_BASE:
        core->cmdq.base = full;
        break;
    case QRDMA_REG_CMDQ_LOG2:
        core->cmdq.log2 = full;
        break;
    case QRDMA_REG_CMPQ_BASE:
        core->cmdq.cmpq_base = full;
        break;
    default:
        g_assert_not_reached();
    }
}

/* BAR2, the doorbell pages: write-only. */
uint64_t qrdma_core_db_read(QrdmaCore *core, hwaddr addr, unsigned size)
{
    QRDMA_GUEST_ERR(core, qrdma_err_db_read, "%u-byte read at 0x%" HWADDR_PRIx
                    " of the doorbell BAR, ignored", size, addr);
    return 0;
}

void qrdma_core_db_write(QrdmaCore *core, hwaddr addr, uint64_t val,
                         unsigned size)
{
    qrdma_dp_db_write(core, addr, val, size);
}

void qrdma_core_reset(QrdmaCore *core)
{
    trace_qrdma_core_reset(qrdma_resources_in_use(core));
    qemu_bh_cancel(core->cmdq.bh);
    qemu_bh_cancel(core->irq_bh);
    core->irq_pending = 0;
    qrdma_dp_reset(core);
    core->dev_ctrl = 0;
    core->dev_status = 0;
    core->config_err = 0;
    core->cmdq.base = 0;
    core->cmdq.log2 = 0;
    core->cmdq.pi = 0;
    core->cmdq.ci = 0;
    core->cmdq.cmpq_base = 0;
    qrdma_resources_reset(core);
    qrdma_eth_reset(core);
    memset(core->ud_seen, 0, sizeof(core->ud_seen));
    /* The counters are the host's: a guest reset does not clear them. */
}

/*
 * The data path stops with the VM and goes on with it: what a stopped
 * source sent, placed or completed after its last pass would be lost to
 * the destination, or done twice.  The bottom halves find the device
 * stopped and do nothing; here they are woken for what waited.
 */
static void qrdma_vm_state_change(void *opaque, bool running, RunState state)
{
    QrdmaCore *core = opaque;

    core->running = running;
    trace_qrdma_vm_state(running, RunState_str(state));
    if (!running) {
        return;
    }
    if ((core->dev_status & QRDMA_DEV_STATUS_READY) &&
        core->cmdq.pi != core->cmdq.ci) {
        qemu_bh_schedule(core->cmdq.bh);
    }
    if (core->irq_pending) {
        qemu_bh_schedule(core->irq_bh);
    }
    qrdma_dp_resume(core);
    qrdma_link_resume(core);
    qrdma_eth_resume(core);
}

void qrdma_core_realize(QrdmaCore *core, PCIDevice *owner, Error **errp)
{
    core->owner = owner;
    core->running = runstate_is_running();
    core->vm_state = qemu_add_vm_change_state_handler(qrdma_vm_state_change,
                                                      core);
    core->cmdq.bh = qemu_bh_new_guarded(qrdma_cmdq_process, core,
                                        &DEVICE(owner)->mem_reentrancy_guard);
    core->irq_bh = qemu_bh_new_guarded(qrdma_irq_bh, core,
                                       &DEVICE(owner)->mem_reentrancy_guard);
    /*
     * The set of a UD packet in the duplicate filter is a keyed hash: a
     * peer that steers its ICRCs cannot crowd one set on purpose.
     */
    qemu_guest_getrandom_nofail(&core->ud_seen_salt,
                                sizeof(core->ud_seen_salt));
    core->ud_seen_salt |= 1;
    qrdma_resources_init(core);
    qrdma_dp_realize(core);
    qrdma_mig_init(core);
    qrdma_link_realize(core, errp);
}

void qrdma_core_unrealize(QrdmaCore *core)
{
    qrdma_link_unrealize(core);
    qemu_bh_delete(core->cmdq.bh);
    core->cmdq.bh = NULL;
    qemu_bh_delete(core->irq_bh);
    core->irq_bh = NULL;
    qrdma_dp_reset(core);
    qrdma_dp_unrealize(core);
    qrdma_resources_free(core);
    qrdma_dma_cleanup(core);
    qrdma_mig_cleanup(core);
    qemu_del_vm_change_state_handler(core->vm_state);
    core->vm_state = NULL;
}

/*
 * A migration stream is guest-controlled input like any other: accept only
 * register contents the device itself could have produced.  The resources
 * came before, in their subsection, each checked as it was unpacked
 * (qrdma_migration.c).
 */
bool qrdma_core_post_load(QrdmaCore *core)
{
    bool enabled = core->dev_ctrl & QRDMA_DEV_CTRL_ENABLE;
    bool ready = core->dev_status & QRDMA_DEV_STATUS_READY;
    bool fatal = core->dev_status & QRDMA_DEV_STATUS_FATAL;
    unsigned i;

    /* The stream wrote the GID table: whether it holds or not, route by it. */
    qrdma_fabric_gids_changed(&core->port);
    qrdma_link_gids_changed(core);

    if (core->dev_ctrl & ~QRDMA_DEV_CTRL_ENABLE) {
        trace_qrdma_err_post_load("DEV_CTRL holds bits that never persist");
        return false;
    }
    if (core->dev_status & ~(QRDMA_DEV_STATUS_READY | QRDMA_DEV_STATUS_FATAL)) {
        trace_qrdma_err_post_load("DEV_STATUS holds undefined bits");
        return false;
    }
    if (fatal ? ready : (enabled != ready)) {
        trace_qrdma_err_post_load("DEV_STATUS.READY disagrees with DEV_CTRL");
        return false;
    }
    if (enabled && qrdma_check_config(core) != QRDMA_CONFIG_ERR_NONE) {
        trace_qrdma_err_post_load("enabled with a bad command queue");
        return false;
    }
    if (enabled && core->cmdq.pi - core->cmdq.ci > (1u << core->cmdq.log2)) {
        trace_qrdma_err_post_load("command queue indices out of range");
        return false;
    }
    for (i = 0; i < QRDMA_MSIX_VECTORS_MAX; i++) {
        const QrdmaEq *eq = &core->eq[i];

        if (!eq->ctrl) {
            continue;
        }
        if (eq->ctrl != QRDMA_EQ_CTRL_ENABLE || i >= core->msix_vectors ||
            !eq->base || !QEMU_IS_ALIGNED(eq->base, sizeof(struct qrdma_eqe)) ||
            eq->log2 < QRDMA_EQ_LOG2_MIN || eq->log2 > QRDMA_EQ_LOG2_MAX ||
            eq->pi - eq->ci > (1u << eq->log2)) {
            trace_qrdma_err_post_load("event queue state out of range");
            return false;
        }
    }
    if (!qrdma_eth_post_load(core)) {
        return false;
    }
    if (core->config_err > QRDMA_CONFIG_ERR_DMA) {
        trace_qrdma_err_post_load("undefined CONFIG_ERR");
        return false;
    }
    for (i = 0; i < QRDMA_GID_TABLE_LEN; i++) {
        uint8_t type = core->gid[i].type;

        if (type != 0 && type != QRDMA_GID_TYPE_ROCE_V2) {
            trace_qrdma_err_post_load("GID entry of an undefined type");
            return false;
        }
    }
    if (core->msix_vectors < 64 &&
        (core->irq_pending >> core->msix_vectors)) {
        trace_qrdma_err_post_load("interrupt pending on a vector that does "
                                  "not exist");
        return false;
    }
    /* The VM is stopped: its start wakes what waits (qrdma_vm_state_change) */
    return true;
}
