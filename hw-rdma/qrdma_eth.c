/*
 * QEMU qrdma: emulated RDMA (RoCEv2) NIC, Ethernet function
 *
 * Copyright (c) 2026 The qrdma developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * A plain Ethernet port beside the RDMA engine: one TX and one RX ring of
 * 16-byte descriptors in guest memory, each descriptor holding one whole
 * frame, and a net client towards the -netdev backend.  The interface is
 * the Ethernet part of qrdma-hw.h; docs/specs/qrdma.rst describes it.
 *
 * Everything that comes from the guest (registers, descriptors, the
 * migration stream) is checked before use.  A descriptor is copied out of
 * guest memory once and only the copy is looked at afterwards.
 */

#include "qemu/osdep.h"
#include "qemu/log.h"
#include "qemu/main-loop.h"
#include "hw/pci/pci_device.h"
#include "net/eth.h"
#include "net/net.h"
#include "system/dma.h"
#include "qrdma.h"
#include "qrdma_err.h"
#include "qrdma_wire.h"
#include "trace.h"

QEMU_BUILD_BUG_ON(QRDMA_ETH_RING_ALIGN % sizeof(struct qrdma_eth_desc));

/* Where the device writes back the len and flags of a descriptor. */
#define QRDMA_ETH_DESC_LEN_OFFSET   offsetof(struct qrdma_eth_desc, len)
#define QRDMA_ETH_DESC_FLAGS_OFFSET offsetof(struct qrdma_eth_desc, flags)

/* A frame shorter than its Ethernet header is not a frame. */
#define QRDMA_ETH_FRAME_MIN         ETH_HLEN

static bool qrdma_eth_enabled(const QrdmaEth *eth)
{
    return eth->ctrl & QRDMA_ETH_CTRL_ENABLE;
}

/* Only meaningful while enabled: LOG2 was checked when ENABLE was set. */
static uint32_t qrdma_eth_ring_size(const QrdmaEthRing *ring)
{
    return 1u << ring->log2;
}

static dma_addr_t qrdma_eth_desc_addr(const QrdmaEthRing *ring, uint32_t idx)
{
    uint32_t slot = idx & (qrdma_eth_ring_size(ring) - 1);

    return ring->base + (dma_addr_t)slot * sizeof(struct qrdma_eth_desc);
}

static NetClientState *qrdma_eth_nc(QrdmaCore *core)
{
    return qemu_get_queue(core->eth.nic);
}

bool qrdma_eth_link_up(QrdmaCore *core)
{
    /*
     * Without a backend the port still reports link up: that is what the
     * guest sees of a NIC with nothing plugged in on the host side, and
     * its frames are counted as dropped instead of vanishing unnoticed.
     */
    return core->eth.nic && !qrdma_eth_nc(core)->link_down;
}

/* Whether a frame handed to the net layer now would go anywhere. */
static bool qrdma_eth_can_send(QrdmaCore *core)
{
    NetClientState *nc = qrdma_eth_nc(core);

    return nc->peer && !nc->link_down;
}

/*
 * Why a ring's configuration cannot be used, or NULL when it can.  Checked
 * once, when ENABLE is set (and on migration), so the data path can trust
 * base and LOG2: they cannot change while the function is enabled.
 */
static const char *qrdma_eth_ring_error(const QrdmaEthRing *ring)
{
    uint64_t bytes;

    if (!ring->base || !QEMU_IS_ALIGNED(ring->base, QRDMA_ETH_RING_ALIGN)) {
        return "base is 0 or not 16-byte aligned";
    }
    if (ring->log2 < QRDMA_ETH_LOG2_MIN || ring->log2 > QRDMA_ETH_LOG2_MAX) {
        return "LOG2 out of range";
    }
    bytes = (uint64_t)sizeof(struct qrdma_eth_desc) << ring->log2;
    if (ring->base > UINT64_MAX - bytes + 1) {
        return "ring wraps around the end of the address space";
    }
    return NULL;
}

/* Checks the whole configuration; on failure says which ring and why. */
static bool qrdma_eth_config_ok(QrdmaCore *core, const char **ring,
                                const char **why)
{
    QrdmaEth *eth = &core->eth;

    *ring = "TX";
    *why = qrdma_eth_ring_error(&eth->tx);
    if (*why) {
        return false;
    }
    *ring = "RX";
    *why = qrdma_eth_ring_error(&eth->rx);
    if (*why) {
        return false;
    }
    *ring = "IRQ";
    if (eth->irq_vector >= core->msix_vectors) {
        *why = "vector beyond the MSI-X table";
        return false;
    }
    return true;
}

/*
 * Stops both rings: nothing is pending afterwards and the indices start
 * from 0 again.  Frames the net layer queued for lack of RX buffers are
 * then delivered, and dropped, so that none arrives stale after the next
 * enable.
 */
static void qrdma_eth_backlog_drop(QrdmaCore *core)
{
    QrdmaEth *eth = &core->eth;
    QrdmaEthFrame *f;

    while ((f = QSIMPLEQ_FIRST(&eth->rx_backlog))) {
        QSIMPLEQ_REMOVE_HEAD(&eth->rx_backlog, next);
        core->counters.eth_rx_dropped++;
        g_free(f);
    }
    eth->rx_backlog_len = 0;
}

static void qrdma_eth_rx_backlog_run(QrdmaCore *core);

static void qrdma_eth_stop(QrdmaCore *core)
{
    QrdmaEth *eth = &core->eth;

    eth->ctrl &= ~QRDMA_ETH_CTRL_ENABLE;
    eth->tx.pi = 0;
    eth->tx.ci = 0;
    eth->rx.pi = 0;
    eth->rx.ci = 0;
    if (eth->tx_bh) {
        qemu_bh_cancel(eth->tx_bh);
    }
    qrdma_eth_backlog_drop(core);
}

static void qrdma_eth_write_ctrl(QrdmaCore *core, uint32_t val)
{
    QrdmaEth *eth = &core->eth;
    const char *ring;
    const char *why;

    if (val & ~QRDMA_ETH_CTRL_ENABLE) {
        QRDMA_GUEST_ERR(core, qrdma_err_eth_ctrl_reserved,
                        "ETH_CTRL write 0x%" PRIx32
                        " sets reserved bits, ignored", val);
        return;
    }

    if (!(val & QRDMA_ETH_CTRL_ENABLE)) {
        if (qrdma_eth_enabled(eth)) {
            trace_qrdma_eth_disable();
            qrdma_eth_stop(core);
        }
        return;
    }
    if (qrdma_eth_enabled(eth)) {
        return;
    }
    if (!qrdma_eth_config_ok(core, &ring, &why)) {
        QRDMA_GUEST_ERR(core, qrdma_err_eth_enable,
                        "ETH enable refused: TX 0x%" PRIx64 "/%" PRIu32
                        ", RX 0x%" PRIx64 "/%" PRIu32 ", vector %" PRIu32
                        " of %u", eth->tx.base, eth->tx.log2, eth->rx.base,
                        eth->rx.log2, eth->irq_vector, core->msix_vectors);
        return;
    }
    trace_qrdma_eth_enable(eth->tx.base, eth->tx.log2, eth->rx.base,
                           eth->rx.log2, eth->irq_vector);
    eth->tx.pi = 0;
    eth->tx.ci = 0;
    eth->rx.pi = 0;
    eth->rx.ci = 0;
    eth->ctrl |= QRDMA_ETH_CTRL_ENABLE;
}

/*
 * Accepts a new producer index for a ring, or refuses it as a guest error.
 * The index is free running; it may move forward only, and by no more than
 * leaves the ring holding at most its size of descriptors.  Anything else
 * would make the device walk over descriptors the driver does not own.
 */
static bool qrdma_eth_pi_ok(QrdmaCore *core, const char *name,
                            const QrdmaEthRing *ring, uint32_t pi)
{
    if (!qrdma_eth_enabled(&core->eth)) {
        QRDMA_GUEST_ERR(core, qrdma_err_eth_db_disabled,
                        "ETH %s doorbell 0x%" PRIx32
                        " while ETH_CTRL.ENABLE is 0, ignored", name, pi);
        return false;
    }
    if (pi - ring->ci > qrdma_eth_ring_size(ring) ||
        pi - ring->ci < ring->pi - ring->ci) {
        QRDMA_GUEST_ERR(core, qrdma_err_eth_db_bad_pi,
                        "ETH %s doorbell 0x%" PRIx32 " moves back from 0x%"
                        PRIx32 " or is more than %" PRIu32 " ahead of CI 0x%"
                        PRIx32 ", ignored", name, pi, ring->pi,
                        qrdma_eth_ring_size(ring), ring->ci);
        return false;
    }
    return true;
}

static void qrdma_eth_write_tx_pi(QrdmaCore *core, uint32_t pi)
{
    QrdmaEth *eth = &core->eth;

    if (!qrdma_eth_pi_ok(core, "TX", &eth->tx, pi)) {
        return;
    }
    trace_qrdma_eth_tx_doorbell(pi, eth->tx.ci);
    eth->tx.pi = pi;
    /* Frames go out from the main loop, not inside the register write. */
    if (eth->tx.pi != eth->tx.ci) {
        qemu_bh_schedule(eth->tx_bh);
    }
}

static void qrdma_eth_write_rx_pi(QrdmaCore *core, uint32_t pi)
{
    QrdmaEth *eth = &core->eth;

    if (!qrdma_eth_pi_ok(core, "RX", &eth->rx, pi)) {
        return;
    }
    trace_qrdma_eth_rx_doorbell(pi, eth->rx.ci);
    eth->rx.pi = pi;
    /* New buffers: the frames that waited for them come in first. */
    qrdma_eth_rx_backlog_run(core);
}

uint64_t qrdma_eth_reg_read(QrdmaCore *core, hwaddr reg)
{
    QrdmaEth *eth = &core->eth;

    switch (reg) {
    case QRDMA_REG_ETH_MAC_LO:
        return ldl_le_p(&eth->conf.macaddr.a[0]);
    case QRDMA_REG_ETH_MAC_HI:
        return lduw_le_p(&eth->conf.macaddr.a[4]);
    case QRDMA_REG_ETH_LINK:
        return qrdma_eth_link_up(core) ? QRDMA_ETH_LINK_UP : 0;
    case QRDMA_REG_ETH_CTRL:
        return eth->ctrl;
    case QRDMA_REG_ETH_TX_BASE:
        return eth->tx.base;
    case QRDMA_REG_ETH_TX_LOG2:
        return eth->tx.log2;
    case QRDMA_REG_ETH_TX_PI:
        return eth->tx.pi;
    case QRDMA_REG_ETH_TX_CI:
        return eth->tx.ci;
    case QRDMA_REG_ETH_RX_BASE:
        return eth->rx.base;
    case QRDMA_REG_ETH_RX_LOG2:
        return eth->rx.log2;
    case QRDMA_REG_ETH_RX_PI:
        return eth->rx.pi;
    case QRDMA_REG_ETH_RX_CI:
        return eth->rx.ci;
    case QRDMA_REG_ETH_IRQ_VECTOR:
        return eth->irq_vector;
    default:
        /* The register table and this switch disagree: refuse, loudly. */
        QRDMA_GUEST_ERR(core, qrdma_err_eth_reg_unknown, "read of unknown ETH "
                        "register 0x%" HWADDR_PRIx, reg);
        return 0;
    }
}

void qrdma_eth_reg_write(QrdmaCore *core, hwaddr reg, uint64_t val)
{
    QrdmaEth *eth = &core->eth;

    switch (reg) {
    case QRDMA_REG_ETH_CTRL:
        qrdma_eth_write_ctrl(core, val);
        return;
    case QRDMA_REG_ETH_TX_PI:
        qrdma_eth_write_tx_pi(core, val);
        return;
    case QRDMA_REG_ETH_RX_PI:
        qrdma_eth_write_rx_pi(core, val);
        return;
    case QRDMA_REG_ETH_TX_BASE:
    case QRDMA_REG_ETH_TX_LOG2:
    case QRDMA_REG_ETH_RX_BASE:
    case QRDMA_REG_ETH_RX_LOG2:
    case QRDMA_REG_ETH_IRQ_VECTOR:
        break;
    default:
        QRDMA_GUEST_ERR(core, qrdma_err_eth_reg_read_only,
                        "write 0x%" PRIx64 " to ETH" " register 0x%" HWADDR_PRIx
                        " that takes no write, " "ignored", val, reg);
        return;
    }

    /* The ring configuration is fixed while the rings run. */
    if (qrdma_eth_enabled(eth)) {
        QRDMA_GUEST_ERR(core, qrdma_err_eth_config_enabled, "ETH register 0x%"
                        HWADDR_PRIx " written (0x%" PRIx64 ") while "
                        "ETH_CTRL.ENABLE is 1, ignored", reg, val);
        return;
    }

    switch (reg) {
    case QRDMA_REG_ETH_TX_BASE:
        eth->tx.base = val;
        break;
    case QRDMA_REG_ETH_TX_LOG2:
        eth->tx.log2 = val;
        break;
    case QRDMA_REG_ETH_RX_BASE:
        eth->rx.base = val;
        break;
    case QRDMA_REG_ETH_RX_LOG2:
        eth->rx.log2 = val;
        break;
    case QRDMA_REG_ETH_IRQ_VECTOR:
        eth->irq_vector = val;
        break;
    }
}

/* Writes the result of one descriptor back to the guest: len and flags. */
static void qrdma_eth_desc_complete(QrdmaCore *core, const char *name,
                                    uint32_t idx, dma_addr_t desc_addr,
                                    uint16_t len, uint16_t flags)
{
    uint16_t wb[2] = { cpu_to_le16(len), cpu_to_le16(flags) };

    QEMU_BUILD_BUG_ON(QRDMA_ETH_DESC_FLAGS_OFFSET !=
                      QRDMA_ETH_DESC_LEN_OFFSET + sizeof(uint16_t));

    if (!qrdma_dma_write(core, desc_addr + QRDMA_ETH_DESC_LEN_OFFSET,
                         wb, sizeof(wb))) {
        QRDMA_GUEST_ERR(core, qrdma_err_eth_desc_write,
                        "ETH %s: cannot write back " "descriptor %" PRIu32
                        " at 0x%" PRIx64, name, idx, desc_addr);
    }
}

/*
 * Sends the frame of the descriptor at TX CI and completes the descriptor.
 * Returns false, leaving CI where it is, when the descriptor itself cannot
 * be read: then there is nothing to complete, and the ring waits for the
 * next doorbell rather than spinning on memory that is not there.
 */
static bool qrdma_eth_tx_one(QrdmaCore *core)
{
    QrdmaEthRing *tx = &core->eth.tx;
    uint32_t idx = tx->ci;
    dma_addr_t desc_addr = qrdma_eth_desc_addr(tx, idx);
    struct qrdma_eth_desc desc;
    uint8_t frame[QRDMA_ETH_FRAME_MAX];
    uint16_t flags = QRDMA_ETH_DESC_DONE;
    uint64_t addr;
    uint16_t len;

    if (!qrdma_dma_read(core, desc_addr, &desc, sizeof(desc))) {
        QRDMA_GUEST_ERR(core, qrdma_err_eth_desc_read,
                        "ETH %s: cannot read descriptor" " %" PRIu32 " at 0x%"
                        PRIx64 ", ring stalled", "TX", idx, desc_addr);
        return false;
    }
    addr = le64_to_cpu(desc.addr);
    len = le16_to_cpu(desc.len);
    trace_qrdma_eth_tx_desc(idx, addr, len);

    if (len < QRDMA_ETH_FRAME_MIN || len > QRDMA_ETH_FRAME_MAX) {
        QRDMA_GUEST_ERR(core, qrdma_err_eth_tx_len,
                        "ETH TX: descriptor %" PRIu32 " has frame length %"
                        PRIu16 ", not %d-%d", idx, len, QRDMA_ETH_FRAME_MIN,
                        QRDMA_ETH_FRAME_MAX);
        flags |= QRDMA_ETH_DESC_ERR;
    } else if (!qrdma_eth_can_send(core)) {
        /* Not the guest's fault: the cable is out. */
        trace_qrdma_eth_tx_dropped(idx, len);
        core->counters.eth_tx_dropped++;
        flags |= QRDMA_ETH_DESC_ERR;
    } else if (addr > UINT64_MAX - len + 1 ||
               !qrdma_dma_read(core, addr, frame, len)) {
        QRDMA_GUEST_ERR(core, qrdma_err_eth_buf_dma,
                        "ETH %s: descriptor %" PRIu32 ": cannot read 0x%" PRIx64
                        "+%" PRIu64, "TX", idx, addr, (uint64_t)len);
        flags |= QRDMA_ETH_DESC_ERR;
    } else {
        trace_qrdma_eth_tx_frame(idx, len);
        qemu_send_packet(qrdma_eth_nc(core), frame, len);
        core->counters.eth_tx_frames++;
    }

    qrdma_eth_desc_complete(core, "TX", idx, desc_addr, len, flags);
    tx->ci++;
    return true;
}

static void qrdma_eth_tx_bh(void *opaque)
{
    QrdmaCore *core = opaque;
    QrdmaEth *eth = &core->eth;
    uint32_t budget;
    uint32_t done = 0;

    if (!qrdma_eth_enabled(eth) || !core->running) {
        return;
    }

    /*
     * At most one ring's worth per run, so that whatever the guest does
     * the main loop gets its turn; what is left waits for the next run.
     */
    budget = qrdma_eth_ring_size(&eth->tx);
    while (eth->tx.ci != eth->tx.pi && done < budget) {
        if (!qrdma_eth_tx_one(core)) {
            break;
        }
        done++;
    }

    trace_qrdma_eth_tx_batch(done, eth->tx.ci, eth->tx.pi);
    if (done) {
        qrdma_notify(core, eth->irq_vector);
    }
    if (done == budget && eth->tx.ci != eth->tx.pi) {
        qemu_bh_schedule(eth->tx_bh);
    }
}

/*
 * Always: RoCE frames share the netdev with the Ethernet function, and
 * must not wait behind an RX ring the guest left empty (its netdev down, a
 * flood of broadcasts).  Frames for the Ethernet function that find no
 * buffer wait in the device (qrdma_eth_rx_wait), as many as a NIC's
 * receive FIFO holds; past that they are dropped, as a NIC misses them.
 */
static bool qrdma_eth_can_receive(NetClientState *nc)
{
    return true;
}

/* Frames that wait for RX buffers: 64 at most, 576 KiB at their largest. */
#define QRDMA_ETH_RX_BACKLOG 64

/* Into the RX buffer at rx.ci, which the caller checked is posted. */
static void qrdma_eth_rx_deliver(QrdmaCore *core, const uint8_t *buf,
                                 size_t size)
{
    QrdmaEthRing *rx = &core->eth.rx;
    struct qrdma_eth_desc desc;
    dma_addr_t desc_addr;
    uint16_t flags = QRDMA_ETH_DESC_DONE;
    uint16_t buf_len;
    uint64_t addr;
    uint32_t idx;

    idx = rx->ci;
    desc_addr = qrdma_eth_desc_addr(rx, idx);
    if (!qrdma_dma_read(core, desc_addr, &desc, sizeof(desc))) {
        QRDMA_GUEST_ERR(core, qrdma_err_eth_desc_read,
                        "ETH %s: cannot read descriptor" " %" PRIu32 " at 0x%"
                        PRIx64 ", frame dropped", "RX", idx, desc_addr);
        core->counters.eth_rx_dropped++;
        return;
    }
    addr = le64_to_cpu(desc.addr);
    buf_len = le16_to_cpu(desc.len);

    if (size > buf_len) {
        /*
         * As a MAC drops a frame over its maximum frame size before any
         * DMA: the buffer stays posted for the next frame that fits.
         */
        trace_qrdma_eth_rx_dropped("frame longer than the buffer", size);
        core->counters.eth_rx_dropped++;
        return;
    }

    if (addr > UINT64_MAX - size + 1 ||
        !qrdma_dma_write(core, addr, buf, size)) {
        /*
         * The buffer is bad, not the frame: hand the buffer back with ERR
         * so that one bad descriptor does not stall the ring for good.
         */
        QRDMA_GUEST_ERR(core, qrdma_err_eth_buf_dma,
                        "ETH %s: descriptor %" PRIu32 ": cannot write 0x%"
                        PRIx64 "+%" PRIu64 ", frame " "dropped", "RX", idx,
                        addr, (uint64_t)size);
        core->counters.eth_rx_dropped++;
        qrdma_eth_desc_complete(core, "RX", idx, desc_addr, 0,
                                flags | QRDMA_ETH_DESC_ERR);
    } else {
        trace_qrdma_eth_rx_frame(idx, size);
        core->counters.eth_rx_frames++;
        qrdma_eth_desc_complete(core, "RX", idx, desc_addr, size, flags);
    }
    rx->ci++;
    qrdma_notify(core, core->eth.irq_vector);
}

/* A frame with no RX buffer waits for one, behind those before it. */
static void qrdma_eth_rx_wait(QrdmaCore *core, const uint8_t *buf,
                              size_t size)
{
    QrdmaEth *eth = &core->eth;
    QrdmaEthFrame *f;

    if (eth->rx_backlog_len >= QRDMA_ETH_RX_BACKLOG) {
        trace_qrdma_eth_rx_dropped("no RX buffer, and the backlog is full",
                                   size);
        core->counters.eth_rx_dropped++;
        return;
    }
    trace_qrdma_eth_rx_no_buffer(size);
    f = g_malloc(sizeof(*f) + size);
    f->len = size;
    memcpy(f->data, buf, size);
    QSIMPLEQ_INSERT_TAIL(&eth->rx_backlog, f, next);
    eth->rx_backlog_len++;
}

static void qrdma_eth_rx_backlog_run(QrdmaCore *core)
{
    QrdmaEth *eth = &core->eth;
    QrdmaEthFrame *f;

    while (eth->rx.pi != eth->rx.ci &&
           (f = QSIMPLEQ_FIRST(&eth->rx_backlog))) {
        QSIMPLEQ_REMOVE_HEAD(&eth->rx_backlog, next);
        eth->rx_backlog_len--;
        qrdma_eth_rx_deliver(core, f->data, f->len);
        g_free(f);
    }
}

static ssize_t qrdma_eth_receive(NetClientState *nc, const uint8_t *buf,
                                 size_t size)
{
    QrdmaCore *core = qemu_get_nic_opaque(nc);
    QrdmaEth *eth = &core->eth;

    if (qrdma_wire_receive(core, buf, size)) {
        return size;
    }
    if (!qrdma_eth_enabled(eth)) {
        trace_qrdma_eth_rx_dropped("function disabled", size);
        core->counters.eth_rx_dropped++;
        return size;
    }
    if (size < QRDMA_ETH_FRAME_MIN || size > QRDMA_ETH_FRAME_MAX) {
        trace_qrdma_eth_rx_dropped("frame size out of range", size);
        core->counters.eth_rx_dropped++;
        return size;
    }
    /*
     * Frames wait only while the ring is empty: an ETH_RX_PI write
     * delivers them until it is empty again, so this one comes behind
     * them either way.
     */
    if (eth->rx.pi == eth->rx.ci) {
        qrdma_eth_rx_wait(core, buf, size);
        return size;
    }
    qrdma_eth_rx_deliver(core, buf, size);
    return size;
}

static void qrdma_eth_set_link_status(NetClientState *nc)
{
    QrdmaCore *core = qemu_get_nic_opaque(nc);

    /*
     * ETH_LINK reads the net client's state directly; the RDMA port
     * follows it, and tells the driver with PORT_ACTIVE or PORT_ERR.
     */
    trace_qrdma_eth_link_status(!nc->link_down);
    if (core->dev_status & QRDMA_DEV_STATUS_READY) {
        qrdma_port_event(core, !nc->link_down);
    }
}

static NetClientInfo qrdma_eth_info = {
    .type = NET_CLIENT_DRIVER_NIC,
    .size = sizeof(NICState),
    .can_receive = qrdma_eth_can_receive,
    .receive = qrdma_eth_receive,
    .link_status_changed = qrdma_eth_set_link_status,
};

void qrdma_eth_realize(QrdmaCore *core, DeviceState *dev,
                       MemReentrancyGuard *guard, Error **errp)
{
    QrdmaEth *eth = &core->eth;

    qemu_macaddr_default_if_unset(&eth->conf.macaddr);
    eth->nic = qemu_new_nic(&qrdma_eth_info, &eth->conf,
                            object_get_typename(OBJECT(dev)), dev->id,
                            guard, core);
    qemu_format_nic_info_str(qrdma_eth_nc(core), eth->conf.macaddr.a);
    eth->tx_bh = qemu_bh_new_guarded(qrdma_eth_tx_bh, core, guard);
    QSIMPLEQ_INIT(&eth->rx_backlog);
}

void qrdma_eth_unrealize(QrdmaCore *core)
{
    QrdmaEth *eth = &core->eth;

    if (eth->tx_bh) {
        qemu_bh_delete(eth->tx_bh);
        eth->tx_bh = NULL;
    }
    qrdma_eth_backlog_drop(core);
    if (eth->nic) {
        qemu_del_nic(eth->nic);
        eth->nic = NULL;
    }
}

void qrdma_eth_reset(QrdmaCore *core)
{
    QrdmaEth *eth = &core->eth;

    trace_qrdma_eth_reset();
    eth->irq_vector = 0;
    eth->tx.base = 0;
    eth->tx.log2 = 0;
    eth->rx.base = 0;
    eth->rx.log2 = 0;
    qrdma_eth_stop(core);
}

/*
 * The migration stream is as untrusted as the guest: accept only a state
 * the device could have reached through its registers.
 */
bool qrdma_eth_post_load(QrdmaCore *core)
{
    QrdmaEth *eth = &core->eth;
    const QrdmaEthRing *rings[] = { &eth->tx, &eth->rx };
    const char *ring;
    const char *why;
    size_t i;

    if (eth->ctrl & ~QRDMA_ETH_CTRL_ENABLE) {
        trace_qrdma_err_eth_post_load("CTRL", "reserved bits set");
        return false;
    }
    if (!qrdma_eth_enabled(eth)) {
        for (i = 0; i < ARRAY_SIZE(rings); i++) {
            if (rings[i]->pi || rings[i]->ci) {
                trace_qrdma_err_eth_post_load(i ? "RX" : "TX",
                                              "indices of a stopped ring");
                return false;
            }
        }
        return true;
    }

    if (!qrdma_eth_config_ok(core, &ring, &why)) {
        trace_qrdma_err_eth_post_load(ring, why);
        return false;
    }
    for (i = 0; i < ARRAY_SIZE(rings); i++) {
        if (rings[i]->pi - rings[i]->ci > qrdma_eth_ring_size(rings[i])) {
            trace_qrdma_err_eth_post_load(i ? "RX" : "TX",
                                          "indices out of range");
            return false;
        }
    }
    return true;
}

/* The VM goes on: a doorbell written before it stopped is served now. */
void qrdma_eth_resume(QrdmaCore *core)
{
    QrdmaEth *eth = &core->eth;

    if (qrdma_eth_enabled(eth) && eth->tx.pi != eth->tx.ci) {
        qemu_bh_schedule(eth->tx_bh);
    }
}

static const VMStateDescription qrdma_vmstate_eth_ring = {
    .name = "qrdma-eth-ring",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT64(base, QrdmaEthRing),
        VMSTATE_UINT32(log2, QrdmaEthRing),
        VMSTATE_UINT32(pi, QrdmaEthRing),
        VMSTATE_UINT32(ci, QrdmaEthRing),
        VMSTATE_END_OF_LIST()
    },
};

const VMStateDescription qrdma_vmstate_eth = {
    .name = "qrdma-eth",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32(ctrl, QrdmaEth),
        VMSTATE_UINT32(irq_vector, QrdmaEth),
        VMSTATE_STRUCT(tx, QrdmaEth, 1, qrdma_vmstate_eth_ring, QrdmaEthRing),
        VMSTATE_STRUCT(rx, QrdmaEth, 1, qrdma_vmstate_eth_ring, QrdmaEthRing),
        VMSTATE_END_OF_LIST()
    },
};
