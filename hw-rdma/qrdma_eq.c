/*
 * QEMU qrdma: emulated RDMA (RoCEv2) NIC, event queues and interrupts
 *
 * Copyright (c) 2026 The qrdma developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/host-utils.h"
#include "qemu/main-loop.h"
#include "hw/pci/msix.h"
#include "qrdma.h"
#include "qrdma_eq.h"
#include "qrdma_err.h"
#include "trace.h"

/*
 * Interrupts go out from a bottom half of their own, never from inside an
 * operation.  An MSI-X message is a memory write that the guest may aim
 * anywhere: at this device's or a peer qrdma's registers (DEV_CTRL.RESET),
 * at a root port's bridge control (a secondary bus reset).  Sent in the
 * middle of a command or of a delivery into a peer, it could reset a
 * device whose rings and QPs the operation is still using, and QEMU's
 * re-entrancy guard covers only the device whose handler is running.
 * From this bottom half it may still change any device, but then no
 * operation of any qrdma device is in progress.
 */
void qrdma_notify(QrdmaCore *core, unsigned vector)
{
    if (vector < core->msix_vectors) {
        core->irq_pending |= 1ull << vector;
        qemu_bh_schedule(core->irq_bh);
    }
}

void qrdma_irq_bh(void *opaque)
{
    QrdmaCore *core = opaque;

    if (!core->running) {
        return;
    }
    /*
     * A message may reset this device, which clears irq_pending, or make
     * a peer deliver into it, which adds to it: re-read it after each.
     */
    while (core->irq_pending) {
        unsigned vector = ctz64(core->irq_pending);

        core->irq_pending &= ~(1ull << vector);
        if (msix_enabled(core->owner)) {
            trace_qrdma_notify(vector);
            msix_notify(core->owner, vector);
        }
    }
}

bool qrdma_eq_reg(QrdmaCore *core, hwaddr addr, unsigned size,
                     unsigned *eq, hwaddr *reg, unsigned *width,
                     bool *writable)
{
    hwaddr off;

    if (addr < QRDMA_REG_EQ(0) ||
        addr >= QRDMA_REG_EQ(core->msix_vectors)) {
        return false;
    }
    *eq = (addr - QRDMA_REG_EQ(0)) / 0x20;
    off = (addr - QRDMA_REG_EQ(0)) % 0x20;
    switch (off & ~7) {
    case QRDMA_REG_EQ_BASE:
        *reg = QRDMA_REG_EQ_BASE;
        *width = 8;
        *writable = true;
        return true;
    case QRDMA_REG_EQ_LOG2:
        *reg = off;
        *width = 4;
        *writable = true;
        return true;
    case QRDMA_REG_EQ_CTRL:
        *reg = off;
        *width = 4;
        *writable = off == QRDMA_REG_EQ_CTRL;
        return true;
    }
    return false;
}

uint64_t qrdma_eq_read(QrdmaCore *core, unsigned n, hwaddr reg)
{
    QrdmaEq *eq = &core->eq[n];

    switch (reg) {
    case QRDMA_REG_EQ_BASE:
        return eq->base;
    case QRDMA_REG_EQ_LOG2:
        return eq->log2;
    case QRDMA_REG_EQ_CI:
        return eq->ci;
    case QRDMA_REG_EQ_CTRL:
        return eq->ctrl;
    case QRDMA_REG_EQ_PI:
        return eq->pi;
    }
    return 0;
}

void qrdma_eq_write(QrdmaCore *core, unsigned n, hwaddr reg, uint64_t val)
{
    QrdmaEq *eq = &core->eq[n];
    bool enabled = eq->ctrl & QRDMA_EQ_CTRL_ENABLE;

    switch (reg) {
    case QRDMA_REG_EQ_CI:
        if (!enabled || eq->pi - (uint32_t)val > (1u << eq->log2)) {
            QRDMA_GUEST_ERR(core, qrdma_err_eq_ci,
                            "EQ %u: consumer index 0x%" PRIx64
                            " out of range, ignored", n, val);
            return;
        }
        eq->ci = val;
        return;
    case QRDMA_REG_EQ_CTRL:
        if (val & ~QRDMA_EQ_CTRL_ENABLE) {
            QRDMA_GUEST_ERR(core, qrdma_err_eq_ctrl_reserved,
                            "EQ %u: reserved control" " bits 0x%" PRIx64
                            ", ignored", n, val);
            return;
        }
        if (!(val & QRDMA_EQ_CTRL_ENABLE)) {
            eq->ctrl = 0;
            eq->pi = eq->ci = 0;
            return;
        }
        if (enabled) {
            return;
        }
        if (!eq->base || !QEMU_IS_ALIGNED(eq->base, sizeof(struct qrdma_eqe)) ||
            eq->log2 < QRDMA_EQ_LOG2_MIN || eq->log2 > QRDMA_EQ_LOG2_MAX) {
            QRDMA_GUEST_ERR(core, qrdma_err_eq_config,
                            "EQ %u: enable refused: base 0x%" PRIx64 " log2 %"
                            PRIu32, n, eq->base, eq->log2);
            return;
        }
        eq->ctrl = QRDMA_EQ_CTRL_ENABLE;
        eq->pi = eq->ci = 0;
        return;
    }

    if (enabled) {
        QRDMA_GUEST_ERR(core, qrdma_err_eq_write_while_enabled,
                        "EQ %u: register 0x%" HWADDR_PRIx
                        " written while enabled, ignored", n, reg);
        return;
    }
    if (reg == QRDMA_REG_EQ_BASE) {
        eq->base = val;
    } else {
        eq->log2 = val;
    }
}

void qrdma_eq_post(QrdmaCore *core, unsigned n, uint8_t type,
                          uint32_t handle)
{
    QrdmaEq *eq = &core->eq[n];
    struct qrdma_eqe eqe = {
        .type = type,
        .handle = cpu_to_le32(handle),
    };
    uint64_t addr;
    uint8_t phase;

    if (!(eq->ctrl & QRDMA_EQ_CTRL_ENABLE) ||
        eq->pi - eq->ci >= (1u << eq->log2)) {
        trace_qrdma_event_dropped(n, type, handle);
        core->counters.events_dropped++;
        return;
    }
    addr = eq->base + (uint64_t)(eq->pi & ((1u << eq->log2) - 1)) *
           sizeof(eqe);
    phase = !((eq->pi >> eq->log2) & 1);
    /* As for command completions: the phase goes in last. */
    eqe.flags = phase ? 0 : QRDMA_EQE_F_PHASE;
    if (!qrdma_dma_write(core, addr, &eqe, sizeof(eqe))) {
        QRDMA_GUEST_ERR(core, qrdma_err_eq_entry_not_ram,
                        "EQ %u: entry at 0x%" PRIx64 " is not RAM", n, addr);
        core->counters.events_dropped++;
        return;
    }
    /* The driver polls the phase bit: the rest must be seen first. */
    smp_wmb();
    eqe.flags = phase ? QRDMA_EQE_F_PHASE : 0;
    qrdma_dma_write(core, addr + offsetof(struct qrdma_eqe, flags),
                    &eqe.flags, 1);
    eq->pi++;
    trace_qrdma_event(n, type, handle);
    qrdma_notify(core, n);
}

void qrdma_event(QrdmaCore *core, uint8_t type, uint32_t handle)
{
    qrdma_eq_post(core, 0, type, handle);
}

void qrdma_port_event(QrdmaCore *core, bool up)
{
    /* set_link may repeat a state: only a change is an event. */
    if (up != core->port_up) {
        core->port_up = up;
        qrdma_event(core, up ? QRDMA_EV_PORT_ACTIVE : QRDMA_EV_PORT_ERR, 1);
    }
}
