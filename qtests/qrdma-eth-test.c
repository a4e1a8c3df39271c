/*
 * QTest testcase for the Ethernet function of the qrdma emulated RDMA NIC
 *
 * Copyright (c) 2026 The qrdma developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * The tests hang off the qrdma-eth interface of the "qrdma" node
 * (qrdma-test.c).  Most give the device a socket netdev whose other end
 * the test holds, so that frames the guest sends can be read, and frames
 * for the guest written, byte for byte.  The socket backend frames each
 * packet with a 4-byte big-endian length.
 */

#include "qemu/osdep.h"
#include <poll.h>
#include "qemu/bswap.h"
#include "qemu/module.h"
#include "libqtest.h"
#include "libqos/qgraph.h"
#include "libqos/pci.h"
#include "libqos/libqos-malloc.h"
#include "qobject/qdict.h"
#include "hw/pci/pci_regs.h"
#include "hw/rdma/qrdma-hw.h"
#include "qrdma-qos.h"

#define ETH_MAC             "52:54:00:12:34:56"
#define ETH_LOG2            3
#define ETH_RING_SIZE       (1u << ETH_LOG2)
#define ETH_RING_BYTES      (ETH_RING_SIZE * sizeof(struct qrdma_eth_desc))
/* Not vector 0, so that a device signalling the wrong one shows up. */
#define ETH_VECTOR          2
#define ETH_BUF_SIZE        2048
#define ETH_TIMEOUT_US      (5 * G_USEC_PER_SEC)
/* Nothing is mapped there on the PC machines. */
#define ETH_BAD_ADDR        0xfffffffff000ull

typedef struct EthTest {
    QQrdma *q;
    QTestState *qts;
    QGuestAllocator *alloc;
    int fd;                             /* the test's end, -1: no netdev */
    uint64_t tx_ring;
    uint64_t rx_ring;
    uint32_t tx_pi;
    uint32_t rx_pi;
} EthTest;

static uint32_t eth_readl(EthTest *t, uint64_t reg)
{
    return qpci_io_readl(&t->q->dev, t->q->bar, reg);
}

static void eth_writel(EthTest *t, uint64_t reg, uint32_t val)
{
    qpci_io_writel(&t->q->dev, t->q->bar, reg, val);
}

static uint64_t eth_counter(EthTest *t, const char *name)
{
    QDict *rsp;
    uint64_t n;

    rsp = qtest_qmp(t->qts, "{ 'execute': 'qom-get', 'arguments': "
                    "{ 'path': %s, 'property': %s } }",
                    QRDMA_QOM_PATH, name);
    g_assert(qdict_haskey(rsp, "return"));
    n = qdict_get_int(rsp, "return");
    qobject_unref(rsp);
    return n;
}

static void eth_set_link(EthTest *t, const char *name, bool up)
{
    QDict *rsp;

    rsp = qtest_qmp(t->qts, "{ 'execute': 'set_link', 'arguments': "
                    "{ 'name': %s, 'up': %i } }", name, up);
    g_assert(qdict_haskey(rsp, "return"));
    qobject_unref(rsp);
}

/* Maps BAR0, turns MSI-X on and gives the rings zeroed guest memory. */
static void eth_init(EthTest *t, void *obj, void *data,
                     QGuestAllocator *alloc)
{
    static const uint8_t zero[ETH_RING_BYTES];

    memset(t, 0, sizeof(*t));
    t->q = obj;
    t->qts = t->q->dev.bus->qts;
    t->alloc = alloc;
    t->fd = data ? ((int *)data)[0] : -1;

    qpci_device_enable(&t->q->dev);
    t->q->bar = qpci_iomap(&t->q->dev, QRDMA_REG_BAR, NULL);
    qpci_msix_enable(&t->q->dev);

    t->tx_ring = guest_alloc(alloc, ETH_RING_BYTES);
    t->rx_ring = guest_alloc(alloc, ETH_RING_BYTES);
    g_assert_cmphex(t->tx_ring % QRDMA_ETH_RING_ALIGN, ==, 0);
    g_assert_cmphex(t->rx_ring % QRDMA_ETH_RING_ALIGN, ==, 0);
    qtest_memwrite(t->qts, t->tx_ring, zero, sizeof(zero));
    qtest_memwrite(t->qts, t->rx_ring, zero, sizeof(zero));
}

static void eth_fini(EthTest *t)
{
    qpci_msix_disable(&t->q->dev);
    qpci_iounmap(&t->q->dev, t->q->bar);
}

static void eth_configure(EthTest *t)
{
    qpci_io_writeq(&t->q->dev, t->q->bar, QRDMA_REG_ETH_TX_BASE, t->tx_ring);
    eth_writel(t, QRDMA_REG_ETH_TX_LOG2, ETH_LOG2);
    qpci_io_writeq(&t->q->dev, t->q->bar, QRDMA_REG_ETH_RX_BASE, t->rx_ring);
    eth_writel(t, QRDMA_REG_ETH_RX_LOG2, ETH_LOG2);
    eth_writel(t, QRDMA_REG_ETH_IRQ_VECTOR, ETH_VECTOR);
}

static void eth_start(EthTest *t)
{
    eth_configure(t);
    eth_writel(t, QRDMA_REG_ETH_CTRL, QRDMA_ETH_CTRL_ENABLE);
    g_assert_cmphex(eth_readl(t, QRDMA_REG_ETH_CTRL), ==,
                    QRDMA_ETH_CTRL_ENABLE);
    t->tx_pi = 0;
    t->rx_pi = 0;
}

static uint64_t eth_desc_addr(uint64_t ring, uint32_t idx)
{
    return ring + (idx % ETH_RING_SIZE) * sizeof(struct qrdma_eth_desc);
}

static void eth_desc_write(EthTest *t, uint64_t ring, uint32_t idx,
                           uint64_t addr, uint16_t len)
{
    struct qrdma_eth_desc d = {
        .addr = cpu_to_le64(addr),
        .len = cpu_to_le16(len),
    };

    qtest_memwrite(t->qts, eth_desc_addr(ring, idx), &d, sizeof(d));
}

static struct qrdma_eth_desc eth_desc_read(EthTest *t, uint64_t ring,
                                           uint32_t idx)
{
    struct qrdma_eth_desc d;

    qtest_memread(t->qts, eth_desc_addr(ring, idx), &d, sizeof(d));
    d.addr = le64_to_cpu(d.addr);
    d.len = le16_to_cpu(d.len);
    d.flags = le16_to_cpu(d.flags);
    return d;
}

/* Queues one TX descriptor without ringing the doorbell. */
static void eth_tx_queue(EthTest *t, uint64_t addr, uint16_t len)
{
    eth_desc_write(t, t->tx_ring, t->tx_pi++, addr, len);
}

static void eth_tx_doorbell(EthTest *t)
{
    eth_writel(t, QRDMA_REG_ETH_TX_PI, t->tx_pi);
}

static void eth_rx_post(EthTest *t, uint64_t addr, uint16_t len)
{
    eth_desc_write(t, t->rx_ring, t->rx_pi++, addr, len);
    eth_writel(t, QRDMA_REG_ETH_RX_PI, t->rx_pi);
}

/* Waits for a register of the device to reach a value. */
static void eth_wait_reg(EthTest *t, uint64_t reg, uint32_t val)
{
    gint64 end = g_get_monotonic_time() + ETH_TIMEOUT_US;

    while (eth_readl(t, reg) != val) {
        g_assert_cmpint(g_get_monotonic_time(), <, end);
        qtest_clock_step(t->qts, 10000);
    }
}

static void eth_wait_counter(EthTest *t, const char *name, uint64_t val)
{
    gint64 end = g_get_monotonic_time() + ETH_TIMEOUT_US;

    while (eth_counter(t, name) != val) {
        g_assert_cmpint(g_get_monotonic_time(), <, end);
        qtest_clock_step(t->qts, 10000);
    }
}

/* Gives the device's main loop time to act on what it has been given. */
static void eth_settle(EthTest *t)
{
    int i;

    for (i = 0; i < 20; i++) {
        qtest_clock_step(t->qts, 10000);
        g_usleep(1000);
    }
}

/* A test frame: to the device's MAC, with a payload derived from seed. */
static uint8_t *eth_frame(size_t len, uint8_t seed)
{
    static const uint8_t hdr[] = {
        0x52, 0x54, 0x00, 0x12, 0x34, 0x56,     /* destination */
        0x52, 0x54, 0x00, 0xab, 0xcd, 0xef,     /* source */
        0x88, 0xb5,                             /* local experimental */
    };
    uint8_t *f = g_malloc(len);
    size_t i;

    g_assert_cmpuint(len, >=, sizeof(hdr));
    memcpy(f, hdr, sizeof(hdr));
    for (i = sizeof(hdr); i < len; i++) {
        f[i] = seed + i * 7;
    }
    return f;
}

/* Puts a frame in guest memory; returns its address. */
static uint64_t eth_frame_in_guest(EthTest *t, size_t len, uint8_t seed)
{
    g_autofree uint8_t *f = eth_frame(len, seed);
    uint64_t addr = guest_alloc(t->alloc, len);

    qtest_memwrite(t->qts, addr, f, len);
    return addr;
}

static bool eth_sock_readable(EthTest *t, int timeout_ms)
{
    struct pollfd pfd = { .fd = t->fd, .events = POLLIN };

    return poll(&pfd, 1, timeout_ms) == 1;
}

static void eth_sock_read(EthTest *t, void *buf, size_t len)
{
    ssize_t n;

    g_assert_true(eth_sock_readable(t, ETH_TIMEOUT_US / 1000));
    n = recv(t->fd, buf, len, MSG_WAITALL);
    g_assert_cmpint(n, ==, len);
}

/* Reads the next frame the device sent and checks it byte for byte. */
static void eth_sock_expect(EthTest *t, size_t len, uint8_t seed)
{
    g_autofree uint8_t *want = eth_frame(len, seed);
    g_autofree uint8_t *got = g_malloc(len);
    uint32_t be_len;

    eth_sock_read(t, &be_len, sizeof(be_len));
    g_assert_cmpuint(ntohl(be_len), ==, len);
    eth_sock_read(t, got, len);
    g_assert_cmpmem(got, len, want, len);
}

static void eth_sock_send(EthTest *t, size_t len, uint8_t seed)
{
    g_autofree uint8_t *f = eth_frame(len, seed);
    uint32_t be_len = htonl(len);

    g_assert_cmpint(send(t->fd, &be_len, sizeof(be_len), 0), ==,
                    sizeof(be_len));
    g_assert_cmpint(send(t->fd, f, len, 0), ==, len);
}

/* Checks that an RX buffer holds the frame made from seed. */
static void eth_guest_expect(EthTest *t, uint64_t addr, size_t len,
                             uint8_t seed)
{
    g_autofree uint8_t *want = eth_frame(len, seed);
    g_autofree uint8_t *got = g_malloc(len);

    qtest_memread(t->qts, addr, got, len);
    g_assert_cmpmem(got, len, want, len);
}

/*
 * Clears the pending bit of a masked vector: unmasking delivers the
 * pending message (to guest address 0, which the tests do not use).
 */
static void eth_msix_clear(EthTest *t, uint16_t vector)
{
    QPCIDevice *dev = &t->q->dev;
    uint64_t ctrl = dev->msix_table_off + vector * PCI_MSIX_ENTRY_SIZE +
                    PCI_MSIX_ENTRY_VECTOR_CTRL;

    qpci_io_writel(dev, dev->msix_table_bar, ctrl, 0);
    qpci_io_writel(dev, dev->msix_table_bar, ctrl,
                   PCI_MSIX_ENTRY_CTRL_MASKBIT);
    g_assert_false(qpci_msix_pending(dev, vector));
}

static void test_eth_mac(void *obj, void *data, QGuestAllocator *alloc)
{
    EthTest t;

    eth_init(&t, obj, data, alloc);
    /* 52:54:00:12:34:56, byte 0 in the low byte */
    g_assert_cmphex(eth_readl(&t, QRDMA_REG_ETH_MAC_LO), ==, 0x12005452);
    g_assert_cmphex(eth_readl(&t, QRDMA_REG_ETH_MAC_HI), ==, 0x5634);
    g_assert_cmphex(eth_readl(&t, QRDMA_REG_ETH_LINK), ==,
                    QRDMA_ETH_LINK_UP);
    g_assert_cmphex(eth_readl(&t, QRDMA_REG_ETH_CTRL), ==, 0);
    g_assert_cmphex(eth_readl(&t, QRDMA_REG_ETH_TX_CI), ==, 0);
    g_assert_cmphex(eth_readl(&t, QRDMA_REG_ETH_RX_CI), ==, 0);
    g_assert_cmpuint(eth_counter(&t, "guest-errors"), ==, 0);
    eth_fini(&t);
}

static void test_eth_tx(void *obj, void *data, QGuestAllocator *alloc)
{
    EthTest t;
    struct qrdma_eth_desc d;
    uint64_t frames;
    uint64_t buf;
    uint32_t i;

    eth_init(&t, obj, data, alloc);
    frames = eth_counter(&t, "eth-tx-frames");
    eth_start(&t);
    g_assert_false(qpci_msix_pending(&t.q->dev, ETH_VECTOR));

    buf = eth_frame_in_guest(&t, 60, 1);
    eth_tx_queue(&t, buf, 60);
    eth_tx_doorbell(&t);
    eth_wait_reg(&t, QRDMA_REG_ETH_TX_CI, 1);

    d = eth_desc_read(&t, t.tx_ring, 0);
    g_assert_cmphex(d.flags, ==, QRDMA_ETH_DESC_DONE);
    g_assert_cmpuint(d.len, ==, 60);
    g_assert_cmphex(d.addr, ==, buf);
    eth_sock_expect(&t, 60, 1);
    g_assert_cmpuint(eth_counter(&t, "eth-tx-frames"), ==, frames + 1);
    g_assert_true(qpci_msix_pending(&t.q->dev, ETH_VECTOR));

    /* Batches that wrap around the ring, frames of every size class. */
    eth_msix_clear(&t, ETH_VECTOR);
    for (i = 0; i < ETH_RING_SIZE; i++) {
        size_t len = i == 3 ? QRDMA_ETH_FRAME_MAX : 14 + i * 100;

        eth_tx_queue(&t, eth_frame_in_guest(&t, len, 10 + i), len);
    }
    eth_tx_doorbell(&t);
    eth_wait_reg(&t, QRDMA_REG_ETH_TX_CI, 1 + ETH_RING_SIZE);
    for (i = 0; i < ETH_RING_SIZE; i++) {
        size_t len = i == 3 ? QRDMA_ETH_FRAME_MAX : 14 + i * 100;

        d = eth_desc_read(&t, t.tx_ring, 1 + i);
        g_assert_cmphex(d.flags, ==, QRDMA_ETH_DESC_DONE);
        eth_sock_expect(&t, len, 10 + i);
    }
    g_assert_true(qpci_msix_pending(&t.q->dev, ETH_VECTOR));
    g_assert_cmpuint(eth_counter(&t, "eth-tx-frames"), ==,
                     frames + 1 + ETH_RING_SIZE);
    g_assert_cmpuint(eth_counter(&t, "eth-tx-dropped"), ==, 0);
    g_assert_cmpuint(eth_counter(&t, "guest-errors"), ==, 0);

    /* Disabling stops the rings and starts their indices over. */
    eth_writel(&t, QRDMA_REG_ETH_CTRL, 0);
    g_assert_cmphex(eth_readl(&t, QRDMA_REG_ETH_CTRL), ==, 0);
    g_assert_cmphex(eth_readl(&t, QRDMA_REG_ETH_TX_PI), ==, 0);
    g_assert_cmphex(eth_readl(&t, QRDMA_REG_ETH_TX_CI), ==, 0);
    /* and the configuration stays */
    g_assert_cmphex(qpci_io_readq(&t.q->dev, t.q->bar,
                                  QRDMA_REG_ETH_TX_BASE), ==, t.tx_ring);
    eth_fini(&t);
}

static void test_eth_rx(void *obj, void *data, QGuestAllocator *alloc)
{
    EthTest t;
    struct qrdma_eth_desc d;
    uint64_t frames;
    uint64_t buf;

    eth_init(&t, obj, data, alloc);
    frames = eth_counter(&t, "eth-rx-frames");
    eth_start(&t);

    buf = guest_alloc(alloc, ETH_BUF_SIZE);
    eth_rx_post(&t, buf, ETH_BUF_SIZE);
    eth_sock_send(&t, 98, 3);
    eth_wait_reg(&t, QRDMA_REG_ETH_RX_CI, 1);

    d = eth_desc_read(&t, t.rx_ring, 0);
    g_assert_cmphex(d.flags, ==, QRDMA_ETH_DESC_DONE);
    g_assert_cmpuint(d.len, ==, 98);
    g_assert_cmphex(d.addr, ==, buf);
    eth_guest_expect(&t, buf, 98, 3);
    g_assert_cmpuint(eth_counter(&t, "eth-rx-frames"), ==, frames + 1);
    g_assert_true(qpci_msix_pending(&t.q->dev, ETH_VECTOR));
    g_assert_cmpuint(eth_counter(&t, "guest-errors"), ==, 0);
    eth_fini(&t);
}

/* Frames that find no posted buffer wait for one. */
static void test_eth_rx_queued(void *obj, void *data, QGuestAllocator *alloc)
{
    EthTest t;
    struct qrdma_eth_desc d;
    uint64_t frames;
    uint64_t buf[3];
    int i;

    eth_init(&t, obj, data, alloc);
    frames = eth_counter(&t, "eth-rx-frames");
    eth_start(&t);

    eth_sock_send(&t, 64, 20);
    eth_sock_send(&t, 70, 21);
    eth_sock_send(&t, 80, 22);
    eth_settle(&t);
    g_assert_cmphex(eth_readl(&t, QRDMA_REG_ETH_RX_CI), ==, 0);
    g_assert_cmpuint(eth_counter(&t, "eth-rx-frames"), ==, frames);
    g_assert_cmpuint(eth_counter(&t, "eth-rx-dropped"), ==, 0);

    /* One buffer: the first frame only; the others keep waiting. */
    for (i = 0; i < 3; i++) {
        buf[i] = guest_alloc(alloc, ETH_BUF_SIZE);
    }
    eth_rx_post(&t, buf[0], ETH_BUF_SIZE);
    eth_wait_reg(&t, QRDMA_REG_ETH_RX_CI, 1);
    eth_settle(&t);
    g_assert_cmphex(eth_readl(&t, QRDMA_REG_ETH_RX_CI), ==, 1);

    eth_desc_write(&t, t.rx_ring, t.rx_pi++, buf[1], ETH_BUF_SIZE);
    eth_desc_write(&t, t.rx_ring, t.rx_pi++, buf[2], ETH_BUF_SIZE);
    eth_writel(&t, QRDMA_REG_ETH_RX_PI, t.rx_pi);
    eth_wait_reg(&t, QRDMA_REG_ETH_RX_CI, 3);

    for (i = 0; i < 3; i++) {
        static const size_t len[] = { 64, 70, 80 };

        d = eth_desc_read(&t, t.rx_ring, i);
        g_assert_cmphex(d.flags, ==, QRDMA_ETH_DESC_DONE);
        g_assert_cmpuint(d.len, ==, len[i]);
        eth_guest_expect(&t, buf[i], len[i], 20 + i);
    }
    g_assert_cmpuint(eth_counter(&t, "eth-rx-frames"), ==, frames + 3);
    g_assert_cmpuint(eth_counter(&t, "eth-rx-dropped"), ==, 0);
    eth_fini(&t);
}

/*
 * Frames that find no RX buffer wait in the device, 64 of them (as a
 * NIC's receive FIFO holds frames), and more are dropped and counted:
 * they used to wait in QEMU's net layer, and the RoCE frames that share
 * the netdev with them waited behind them.  Those kept come in order as
 * buffers are posted.
 */
static void test_eth_rx_backlog(void *obj, void *data, QGuestAllocator *alloc)
{
    enum { SENT = 70, KEPT = 64 };
    EthTest t;
    struct qrdma_eth_desc d;
    uint64_t frames, dropped, buf[ETH_RING_SIZE];
    int i, j;

    eth_init(&t, obj, data, alloc);
    frames = eth_counter(&t, "eth-rx-frames");
    dropped = eth_counter(&t, "eth-rx-dropped");
    eth_start(&t);
    for (i = 0; i < SENT; i++) {
        eth_sock_send(&t, 64 + i, i);
    }
    eth_wait_counter(&t, "eth-rx-dropped", dropped + SENT - KEPT);
    eth_settle(&t);
    g_assert_cmpuint(eth_counter(&t, "eth-rx-frames"), ==, frames);

    for (j = 0; j < ETH_RING_SIZE; j++) {
        buf[j] = guest_alloc(alloc, ETH_BUF_SIZE);
    }
    for (i = 0; i < KEPT; i += ETH_RING_SIZE) {
        for (j = 0; j < ETH_RING_SIZE; j++) {
            eth_desc_write(&t, t.rx_ring, t.rx_pi++, buf[j], ETH_BUF_SIZE);
        }
        eth_writel(&t, QRDMA_REG_ETH_RX_PI, t.rx_pi);
        eth_wait_reg(&t, QRDMA_REG_ETH_RX_CI, t.rx_pi);
        for (j = 0; j < ETH_RING_SIZE; j++) {
            d = eth_desc_read(&t, t.rx_ring, i + j);
            g_assert_cmphex(d.flags, ==, QRDMA_ETH_DESC_DONE);
            g_assert_cmpuint(d.len, ==, 64 + i + j);
            eth_guest_expect(&t, buf[j], 64 + i + j, i + j);
        }
    }
    g_assert_cmpuint(eth_counter(&t, "eth-rx-frames"), ==, frames + KEPT);
    g_assert_cmpuint(eth_counter(&t, "eth-rx-dropped"), ==,
                     dropped + SENT - KEPT);
    eth_fini(&t);
}

/*
 * A frame longer than the buffer is dropped before any DMA; the buffer
 * stays posted for the next frame.  So is a frame while disabled.
 */
static void test_eth_rx_drop(void *obj, void *data, QGuestAllocator *alloc)
{
    EthTest t;
    struct qrdma_eth_desc d;
    uint64_t dropped;
    uint64_t buf;

    eth_init(&t, obj, data, alloc);
    dropped = eth_counter(&t, "eth-rx-dropped");

    /* disabled: taken and dropped */
    eth_sock_send(&t, 60, 30);
    eth_wait_counter(&t, "eth-rx-dropped", dropped + 1);

    eth_start(&t);
    buf = guest_alloc(alloc, 128);
    eth_rx_post(&t, buf, 64);
    eth_sock_send(&t, 100, 31);
    eth_wait_counter(&t, "eth-rx-dropped", dropped + 2);
    g_assert_cmphex(eth_readl(&t, QRDMA_REG_ETH_RX_CI), ==, 0);
    d = eth_desc_read(&t, t.rx_ring, 0);
    g_assert_cmphex(d.flags, ==, 0);

    /* over the largest frame the device takes at all */
    eth_sock_send(&t, QRDMA_ETH_FRAME_MAX + 1, 32);
    eth_wait_counter(&t, "eth-rx-dropped", dropped + 3);
    g_assert_cmphex(eth_readl(&t, QRDMA_REG_ETH_RX_CI), ==, 0);

    /* exactly the buffer's size fits */
    eth_sock_send(&t, 64, 33);
    eth_wait_reg(&t, QRDMA_REG_ETH_RX_CI, 1);
    d = eth_desc_read(&t, t.rx_ring, 0);
    g_assert_cmphex(d.flags, ==, QRDMA_ETH_DESC_DONE);
    g_assert_cmpuint(d.len, ==, 64);
    eth_guest_expect(&t, buf, 64, 33);
    g_assert_cmpuint(eth_counter(&t, "eth-rx-dropped"), ==, dropped + 3);
    g_assert_cmpuint(eth_counter(&t, "guest-errors"), ==, 0);
    eth_fini(&t);
}

/* No netdev: the link reads up, and frames complete as dropped. */
static void test_eth_no_netdev(void *obj, void *data, QGuestAllocator *alloc)
{
    EthTest t;
    struct qrdma_eth_desc d;
    uint64_t dropped;

    eth_init(&t, obj, NULL, alloc);
    g_assert_cmphex(eth_readl(&t, QRDMA_REG_ETH_LINK), ==,
                    QRDMA_ETH_LINK_UP);
    dropped = eth_counter(&t, "eth-tx-dropped");
    eth_start(&t);

    eth_tx_queue(&t, eth_frame_in_guest(&t, 60, 40), 60);
    eth_tx_queue(&t, eth_frame_in_guest(&t, 1514, 41), 1514);
    eth_tx_doorbell(&t);
    eth_wait_reg(&t, QRDMA_REG_ETH_TX_CI, 2);

    d = eth_desc_read(&t, t.tx_ring, 0);
    g_assert_cmphex(d.flags, ==, QRDMA_ETH_DESC_DONE | QRDMA_ETH_DESC_ERR);
    d = eth_desc_read(&t, t.tx_ring, 1);
    g_assert_cmphex(d.flags, ==, QRDMA_ETH_DESC_DONE | QRDMA_ETH_DESC_ERR);
    g_assert_cmpuint(eth_counter(&t, "eth-tx-dropped"), ==, dropped + 2);
    g_assert_true(qpci_msix_pending(&t.q->dev, ETH_VECTOR));
    /* Dropping for want of a backend is not the guest's fault. */
    g_assert_cmpuint(eth_counter(&t, "guest-errors"), ==, 0);
    eth_fini(&t);
}

static void test_eth_link(void *obj, void *data, QGuestAllocator *alloc)
{
    EthTest t;
    struct qrdma_eth_desc d;
    uint64_t dropped;

    eth_init(&t, obj, data, alloc);
    dropped = eth_counter(&t, "eth-tx-dropped");
    eth_start(&t);

    eth_set_link(&t, "hs0", false);
    g_assert_cmphex(eth_readl(&t, QRDMA_REG_ETH_LINK), ==, 0);

    eth_tx_queue(&t, eth_frame_in_guest(&t, 60, 50), 60);
    eth_tx_doorbell(&t);
    eth_wait_reg(&t, QRDMA_REG_ETH_TX_CI, 1);
    d = eth_desc_read(&t, t.tx_ring, 0);
    g_assert_cmphex(d.flags, ==, QRDMA_ETH_DESC_DONE | QRDMA_ETH_DESC_ERR);
    g_assert_cmpuint(eth_counter(&t, "eth-tx-dropped"), ==, dropped + 1);

    eth_set_link(&t, "hs0", true);
    g_assert_cmphex(eth_readl(&t, QRDMA_REG_ETH_LINK), ==,
                    QRDMA_ETH_LINK_UP);

    /* The NIC's own name works as well as the netdev's. */
    eth_set_link(&t, "qrdma0", false);
    g_assert_cmphex(eth_readl(&t, QRDMA_REG_ETH_LINK), ==, 0);
    eth_set_link(&t, "qrdma0", true);
    g_assert_cmphex(eth_readl(&t, QRDMA_REG_ETH_LINK), ==,
                    QRDMA_ETH_LINK_UP);

    /* The first frame on the wire is the one sent after link up. */
    eth_tx_queue(&t, eth_frame_in_guest(&t, 61, 51), 61);
    eth_tx_doorbell(&t);
    eth_wait_reg(&t, QRDMA_REG_ETH_TX_CI, 2);
    d = eth_desc_read(&t, t.tx_ring, 1);
    g_assert_cmphex(d.flags, ==, QRDMA_ETH_DESC_DONE);
    eth_sock_expect(&t, 61, 51);
    g_assert_cmpuint(eth_counter(&t, "guest-errors"), ==, 0);
    eth_fini(&t);
}

/*
 * Sets a good configuration but for one register, then tries to enable:
 * the device must refuse, count a guest error and stay disabled.
 */
static void eth_expect_refused(EthTest *t, uint64_t reg, uint64_t val,
                               uint64_t *errors)
{
    eth_configure(t);
    if (reg == QRDMA_REG_ETH_TX_BASE || reg == QRDMA_REG_ETH_RX_BASE) {
        qpci_io_writeq(&t->q->dev, t->q->bar, reg, val);
    } else {
        eth_writel(t, reg, val);
    }
    eth_writel(t, QRDMA_REG_ETH_CTRL, QRDMA_ETH_CTRL_ENABLE);
    g_assert_cmphex(eth_readl(t, QRDMA_REG_ETH_CTRL), ==, 0);
    g_assert_cmpuint(eth_counter(t, "guest-errors"), ==, ++*errors);
}

/* Configurations the device must refuse, and writes it must ignore. */
static void test_eth_bad_config(void *obj, void *data,
                                QGuestAllocator *alloc)
{
    EthTest t;
    uint64_t errors;

    eth_init(&t, obj, data, alloc);
    errors = eth_counter(&t, "guest-errors");

    eth_expect_refused(&t, QRDMA_REG_ETH_TX_BASE, 0, &errors);
    eth_expect_refused(&t, QRDMA_REG_ETH_TX_BASE, t.tx_ring + 8, &errors);
    eth_expect_refused(&t, QRDMA_REG_ETH_RX_BASE, 0, &errors);
    eth_expect_refused(&t, QRDMA_REG_ETH_RX_BASE, t.rx_ring + 4, &errors);
    /* a ring that would wrap around the end of the address space */
    eth_expect_refused(&t, QRDMA_REG_ETH_TX_BASE, 0xfffffffffffffff0ull,
                       &errors);
    eth_expect_refused(&t, QRDMA_REG_ETH_TX_LOG2, QRDMA_ETH_LOG2_MIN - 1,
                       &errors);
    eth_expect_refused(&t, QRDMA_REG_ETH_TX_LOG2, QRDMA_ETH_LOG2_MAX + 1,
                       &errors);
    eth_expect_refused(&t, QRDMA_REG_ETH_RX_LOG2, 0xffffffff, &errors);
    /* the default 4 MSI-X vectors */
    eth_expect_refused(&t, QRDMA_REG_ETH_IRQ_VECTOR, 4, &errors);
    eth_expect_refused(&t, QRDMA_REG_ETH_IRQ_VECTOR, 0xffffffff, &errors);

    /* reserved bits of ETH_CTRL: the write is ignored as a whole */
    eth_configure(&t);
    eth_writel(&t, QRDMA_REG_ETH_CTRL, QRDMA_ETH_CTRL_ENABLE | (1u << 31));
    eth_writel(&t, QRDMA_REG_ETH_CTRL, 2);
    g_assert_cmphex(eth_readl(&t, QRDMA_REG_ETH_CTRL), ==, 0);
    errors += 2;
    g_assert_cmpuint(eth_counter(&t, "guest-errors"), ==, errors);

    /* 64-bit registers also take two 32-bit halves */
    eth_writel(&t, QRDMA_REG_ETH_TX_BASE, 0x89abcdf0);
    eth_writel(&t, QRDMA_REG_ETH_TX_BASE + 4, 0x01234567);
    g_assert_cmphex(qpci_io_readq(&t.q->dev, t.q->bar,
                                  QRDMA_REG_ETH_TX_BASE), ==,
                    0x0123456789abcdf0ull);

    /* while enabled the configuration is fixed */
    eth_start(&t);
    qpci_io_writeq(&t.q->dev, t.q->bar, QRDMA_REG_ETH_TX_BASE, 0x10000);
    eth_writel(&t, QRDMA_REG_ETH_TX_BASE + 4, 1);
    eth_writel(&t, QRDMA_REG_ETH_TX_LOG2, 1);
    qpci_io_writeq(&t.q->dev, t.q->bar, QRDMA_REG_ETH_RX_BASE, 0x10000);
    eth_writel(&t, QRDMA_REG_ETH_RX_LOG2, 1);
    eth_writel(&t, QRDMA_REG_ETH_IRQ_VECTOR, 0);
    errors += 6;
    g_assert_cmpuint(eth_counter(&t, "guest-errors"), ==, errors);
    g_assert_cmphex(qpci_io_readq(&t.q->dev, t.q->bar,
                                  QRDMA_REG_ETH_TX_BASE), ==, t.tx_ring);
    g_assert_cmphex(eth_readl(&t, QRDMA_REG_ETH_TX_LOG2), ==, ETH_LOG2);
    g_assert_cmphex(qpci_io_readq(&t.q->dev, t.q->bar,
                                  QRDMA_REG_ETH_RX_BASE), ==, t.rx_ring);
    g_assert_cmphex(eth_readl(&t, QRDMA_REG_ETH_RX_LOG2), ==, ETH_LOG2);
    g_assert_cmphex(eth_readl(&t, QRDMA_REG_ETH_IRQ_VECTOR), ==, ETH_VECTOR);

    /* read-only registers stay so */
    eth_writel(&t, QRDMA_REG_ETH_TX_CI, 5);
    eth_writel(&t, QRDMA_REG_ETH_MAC_LO, 0);
    eth_writel(&t, QRDMA_REG_ETH_LINK, 0);
    errors += 3;
    g_assert_cmpuint(eth_counter(&t, "guest-errors"), ==, errors);
    g_assert_cmphex(eth_readl(&t, QRDMA_REG_ETH_TX_CI), ==, 0);
    g_assert_cmphex(eth_readl(&t, QRDMA_REG_ETH_MAC_LO), ==, 0x12005452);

    /* still works */
    eth_tx_queue(&t, eth_frame_in_guest(&t, 60, 60), 60);
    eth_tx_doorbell(&t);
    eth_wait_reg(&t, QRDMA_REG_ETH_TX_CI, 1);
    eth_sock_expect(&t, 60, 60);
    g_assert_cmpuint(eth_counter(&t, "guest-errors"), ==, errors);
    eth_fini(&t);
}

/* Doorbells the device must ignore. */
static void test_eth_bad_doorbell(void *obj, void *data,
                                  QGuestAllocator *alloc)
{
    EthTest t;
    uint64_t errors;
    uint64_t frames;
    uint64_t buf;

    eth_init(&t, obj, data, alloc);
    errors = eth_counter(&t, "guest-errors");
    frames = eth_counter(&t, "eth-tx-frames");

    /* before enable, even with valid-looking descriptors in place */
    eth_configure(&t);
    buf = eth_frame_in_guest(&t, 60, 70);
    eth_desc_write(&t, t.tx_ring, 0, buf, 60);
    eth_writel(&t, QRDMA_REG_ETH_TX_PI, 1);
    eth_writel(&t, QRDMA_REG_ETH_RX_PI, 1);
    errors += 2;
    eth_settle(&t);
    g_assert_cmphex(eth_readl(&t, QRDMA_REG_ETH_TX_PI), ==, 0);
    g_assert_cmphex(eth_readl(&t, QRDMA_REG_ETH_TX_CI), ==, 0);
    g_assert_cmphex(eth_readl(&t, QRDMA_REG_ETH_RX_PI), ==, 0);
    g_assert_cmpuint(eth_counter(&t, "eth-tx-frames"), ==, frames);
    g_assert_cmpuint(eth_counter(&t, "guest-errors"), ==, errors);
    g_assert_false(eth_sock_readable(&t, 0));

    eth_start(&t);
    /* more than the ring size ahead */
    eth_writel(&t, QRDMA_REG_ETH_TX_PI, ETH_RING_SIZE + 1);
    eth_writel(&t, QRDMA_REG_ETH_TX_PI, 0x80000000);
    eth_writel(&t, QRDMA_REG_ETH_RX_PI, ETH_RING_SIZE + 1);
    /* behind the consumer */
    eth_writel(&t, QRDMA_REG_ETH_TX_PI, 0xffffffff);
    errors += 4;
    eth_settle(&t);
    g_assert_cmphex(eth_readl(&t, QRDMA_REG_ETH_TX_PI), ==, 0);
    g_assert_cmphex(eth_readl(&t, QRDMA_REG_ETH_TX_CI), ==, 0);
    g_assert_cmphex(eth_readl(&t, QRDMA_REG_ETH_RX_PI), ==, 0);
    g_assert_cmpuint(eth_counter(&t, "guest-errors"), ==, errors);
    g_assert_false(eth_sock_readable(&t, 0));

    /* a full ring is fine, and a PI may not move back */
    eth_writel(&t, QRDMA_REG_ETH_RX_PI, ETH_RING_SIZE);
    eth_writel(&t, QRDMA_REG_ETH_RX_PI, 1);
    errors++;
    g_assert_cmphex(eth_readl(&t, QRDMA_REG_ETH_RX_PI), ==, ETH_RING_SIZE);
    g_assert_cmpuint(eth_counter(&t, "guest-errors"), ==, errors);

    /* the ring still works */
    eth_tx_queue(&t, buf, 60);
    eth_tx_doorbell(&t);
    eth_wait_reg(&t, QRDMA_REG_ETH_TX_CI, 1);
    eth_sock_expect(&t, 60, 70);
    g_assert_cmpuint(eth_counter(&t, "eth-tx-frames"), ==, frames + 1);
    g_assert_cmpuint(eth_counter(&t, "guest-errors"), ==, errors);
    eth_fini(&t);
}

/* TX descriptors the device must complete with ERR, sending nothing. */
static void test_eth_bad_tx_desc(void *obj, void *data,
                                 QGuestAllocator *alloc)
{
    EthTest t;
    struct qrdma_eth_desc d;
    uint64_t errors;
    uint64_t frames;
    uint64_t buf;
    uint32_t i;

    eth_init(&t, obj, data, alloc);
    errors = eth_counter(&t, "guest-errors");
    frames = eth_counter(&t, "eth-tx-frames");
    eth_start(&t);

    buf = eth_frame_in_guest(&t, 100, 80);
    eth_tx_queue(&t, buf, 0);
    eth_tx_queue(&t, buf, 13);
    eth_tx_queue(&t, buf, QRDMA_ETH_FRAME_MAX + 1);
    eth_tx_queue(&t, buf, 0xffff);
    eth_tx_queue(&t, ETH_BAD_ADDR, 60);
    eth_tx_queue(&t, 0xfffffffffffffff8ull, 60);        /* wraps */
    eth_tx_queue(&t, buf, 100);
    eth_tx_doorbell(&t);
    eth_wait_reg(&t, QRDMA_REG_ETH_TX_CI, 7);

    for (i = 0; i < 6; i++) {
        d = eth_desc_read(&t, t.tx_ring, i);
        g_assert_cmphex(d.flags, ==,
                        QRDMA_ETH_DESC_DONE | QRDMA_ETH_DESC_ERR);
    }
    d = eth_desc_read(&t, t.tx_ring, 6);
    g_assert_cmphex(d.flags, ==, QRDMA_ETH_DESC_DONE);
    g_assert_cmpuint(eth_counter(&t, "guest-errors"), ==, errors + 6);
    g_assert_cmpuint(eth_counter(&t, "eth-tx-frames"), ==, frames + 1);
    g_assert_cmpuint(eth_counter(&t, "eth-tx-dropped"), ==, 0);
    g_assert_true(qpci_msix_pending(&t.q->dev, ETH_VECTOR));
    /* only the good frame went out */
    eth_sock_expect(&t, 100, 80);
    eth_settle(&t);
    g_assert_false(eth_sock_readable(&t, 0));
    eth_fini(&t);
}

/* Rings and buffers outside guest RAM. */
static void test_eth_bad_addr(void *obj, void *data, QGuestAllocator *alloc)
{
    EthTest t;
    struct qrdma_eth_desc d;
    uint64_t errors;
    uint64_t dropped;
    uint64_t buf;

    eth_init(&t, obj, data, alloc);
    errors = eth_counter(&t, "guest-errors");
    dropped = eth_counter(&t, "eth-rx-dropped");

    /* An RX buffer that cannot be written comes back with ERR. */
    eth_start(&t);
    eth_rx_post(&t, ETH_BAD_ADDR, ETH_BUF_SIZE);
    eth_sock_send(&t, 60, 90);
    eth_wait_reg(&t, QRDMA_REG_ETH_RX_CI, 1);
    d = eth_desc_read(&t, t.rx_ring, 0);
    g_assert_cmphex(d.flags, ==, QRDMA_ETH_DESC_DONE | QRDMA_ETH_DESC_ERR);
    g_assert_cmpuint(d.len, ==, 0);
    g_assert_cmpuint(eth_counter(&t, "eth-rx-dropped"), ==, dropped + 1);
    g_assert_cmpuint(eth_counter(&t, "guest-errors"), ==, ++errors);

    /* and the next buffer takes the next frame */
    buf = guest_alloc(alloc, ETH_BUF_SIZE);
    eth_rx_post(&t, buf, ETH_BUF_SIZE);
    eth_sock_send(&t, 60, 91);
    eth_wait_reg(&t, QRDMA_REG_ETH_RX_CI, 2);
    eth_guest_expect(&t, buf, 60, 91);
    eth_writel(&t, QRDMA_REG_ETH_CTRL, 0);

    /* Rings outside RAM: the device refuses to use them, and survives. */
    t.tx_ring = ETH_BAD_ADDR;
    t.rx_ring = ETH_BAD_ADDR + 0x800;
    eth_start(&t);
    eth_writel(&t, QRDMA_REG_ETH_TX_PI, 1);
    eth_wait_counter(&t, "guest-errors", ++errors);
    eth_settle(&t);
    g_assert_cmphex(eth_readl(&t, QRDMA_REG_ETH_TX_CI), ==, 0);

    eth_writel(&t, QRDMA_REG_ETH_RX_PI, 1);
    eth_sock_send(&t, 60, 92);
    eth_wait_counter(&t, "eth-rx-dropped", dropped + 2);
    g_assert_cmphex(eth_readl(&t, QRDMA_REG_ETH_RX_CI), ==, 0);
    g_assert_cmpuint(eth_counter(&t, "guest-errors"), ==, ++errors);
    g_assert_false(eth_sock_readable(&t, 0));
    eth_fini(&t);
}

/*
 * DMA aimed at the device's own registers: a frame read from them, a frame
 * written over ETH_CTRL.  QEMU's re-entrancy guard refuses both accesses,
 * so they fail like any unreachable address, and the device keeps going.
 */
static void test_eth_self_dma(void *obj, void *data, QGuestAllocator *alloc)
{
    EthTest t;
    struct qrdma_eth_desc d;
    uint64_t errors;
    uint64_t regs;

    eth_init(&t, obj, data, alloc);
    g_assert_false(t.q->bar.is_io);
    regs = t.q->bar.addr;
    errors = eth_counter(&t, "guest-errors");
    eth_start(&t);

    eth_tx_queue(&t, regs, 64);
    eth_tx_doorbell(&t);
    eth_wait_reg(&t, QRDMA_REG_ETH_TX_CI, 1);
    d = eth_desc_read(&t, t.tx_ring, 0);
    g_assert_cmphex(d.flags, ==, QRDMA_ETH_DESC_DONE | QRDMA_ETH_DESC_ERR);
    g_assert_cmpuint(eth_counter(&t, "guest-errors"), ==, ++errors);

    eth_rx_post(&t, regs + QRDMA_REG_ETH_CTRL - 12, ETH_BUF_SIZE);
    eth_sock_send(&t, 60, 100);
    eth_wait_reg(&t, QRDMA_REG_ETH_RX_CI, 1);
    d = eth_desc_read(&t, t.rx_ring, 0);
    g_assert_cmphex(d.flags, ==, QRDMA_ETH_DESC_DONE | QRDMA_ETH_DESC_ERR);
    g_assert_cmpuint(eth_counter(&t, "guest-errors"), ==, ++errors);
    g_assert_cmphex(eth_readl(&t, QRDMA_REG_ETH_CTRL), ==,
                    QRDMA_ETH_CTRL_ENABLE);

    g_assert_false(eth_sock_readable(&t, 0));
    eth_fini(&t);
}

static void eth_socket_cleanup(void *sockets)
{
    int *sv = sockets;

    close(sv[0]);
    qos_invalidate_command_line();
    close(sv[1]);
    g_free(sv);
}

static void *eth_socket_setup(GString *cmd_line, void *arg)
{
    int *sv = g_new(int, 2);

    g_assert_cmpint(socketpair(PF_UNIX, SOCK_STREAM, 0, sv), ==, 0);
    g_string_append_printf(cmd_line, " -netdev socket,fd=%d,id=hs0 ", sv[1]);
    g_test_queue_destroy(eth_socket_cleanup, sv);
    return sv;
}

/* Not even the machine's default NIC: no netdev anywhere. */
static void *eth_no_netdev_setup(GString *cmd_line, void *arg)
{
    g_string_append(cmd_line, " -net none ");
    return NULL;
}

static void qrdma_eth_register_tests(void)
{
    QOSGraphTestOptions opts = {
        .before = eth_socket_setup,
        .edge.extra_device_opts = "netdev=hs0,mac=" ETH_MAC,
    };
    QOSGraphTestOptions no_netdev_opts = {
        .before = eth_no_netdev_setup,
        .edge.extra_device_opts = "mac=" ETH_MAC,
    };

    qos_add_test("eth-mac", QRDMA_NODE_ETH, test_eth_mac, &opts);
    qos_add_test("eth-tx", QRDMA_NODE_ETH, test_eth_tx, &opts);
    qos_add_test("eth-rx", QRDMA_NODE_ETH, test_eth_rx, &opts);
    qos_add_test("eth-rx-queued", QRDMA_NODE_ETH, test_eth_rx_queued, &opts);
    qos_add_test("eth-rx-drop", QRDMA_NODE_ETH, test_eth_rx_drop, &opts);
    qos_add_test("eth-rx-backlog", QRDMA_NODE_ETH, test_eth_rx_backlog, &opts);
    qos_add_test("eth-no-netdev", QRDMA_NODE_ETH, test_eth_no_netdev,
                 &no_netdev_opts);
    qos_add_test("eth-link", QRDMA_NODE_ETH, test_eth_link, &opts);
    qos_add_test("eth-bad-config", QRDMA_NODE_ETH, test_eth_bad_config, &opts);
    qos_add_test("eth-bad-doorbell", QRDMA_NODE_ETH,
                 test_eth_bad_doorbell, &opts);
    qos_add_test("eth-bad-tx-desc", QRDMA_NODE_ETH,
                 test_eth_bad_tx_desc, &opts);
    qos_add_test("eth-bad-addr", QRDMA_NODE_ETH, test_eth_bad_addr, &opts);
    qos_add_test("eth-self-dma", QRDMA_NODE_ETH, test_eth_self_dma, &opts);
}

libqos_init(qrdma_eth_register_tests);
