// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The RoCE port's netdev, on the device's Ethernet function: one TX and
 * one RX ring of whole-frame descriptors and a shared MSI-X vector.
 *
 * The device marks a descriptor DONE when it is through with it; the
 * driver follows those flags with its own indices and never reads the
 * device's, so nothing the device writes can steer it out of its rings.
 */

#include <linux/etherdevice.h>
#include <linux/ethtool.h>
#include <linux/if_vlan.h>
#include <linux/u64_stats_sync.h>

#include "qrdma.h"

#define QRDMA_ETH_TX_LOG2	8
#define QRDMA_ETH_RX_LOG2	8
#define QRDMA_ETH_MAX_MTU	(QRDMA_ETH_FRAME_MAX - ETH_HLEN - VLAN_HLEN)

struct qrdma_eth_buf {
	struct sk_buff *skb;
	dma_addr_t dma;
	unsigned int len;
};

struct qrdma_eth_ring_stats {
	u64_stats_t packets;
	u64_stats_t bytes;
	u64_stats_t errors;
	u64_stats_t dropped;
	struct u64_stats_sync syncp;
};

struct qrdma_eth {
	struct qrdma_dev *dev;
	struct net_device *netdev;
	struct device *dmadev;
	void __iomem *regs;
	struct napi_struct napi;
	/* Makes each read of the link and the carrier it sets one step. */
	spinlock_t link_lock;

	struct qrdma_eth_desc *tx_ring;
	dma_addr_t tx_dma;
	struct qrdma_eth_buf *tx_bufs;
	u32 tx_pi;			/* written by xmit */
	u32 tx_ci;			/* written by NAPI */

	struct qrdma_eth_desc *rx_ring;
	dma_addr_t rx_dma;
	struct qrdma_eth_buf *rx_bufs;
	u32 rx_pi;
	u32 rx_ci;
	unsigned int rx_buf_len;

	struct qrdma_eth_ring_stats tx_stats;
	struct qrdma_eth_ring_stats rx_stats;
};

#define QRDMA_ETH_TX_SIZE	BIT(QRDMA_ETH_TX_LOG2)
#define QRDMA_ETH_RX_SIZE	BIT(QRDMA_ETH_RX_LOG2)

static void qrdma_eth_stats_add(struct qrdma_eth_ring_stats *s, u64 packets,
				u64 bytes, u64 errors, u64 dropped)
{
	u64_stats_update_begin(&s->syncp);
	u64_stats_add(&s->packets, packets);
	u64_stats_add(&s->bytes, bytes);
	u64_stats_add(&s->errors, errors);
	u64_stats_add(&s->dropped, dropped);
	u64_stats_update_end(&s->syncp);
}

/*
 * The carrier follows the device's link.  The link poll, the device's
 * port events and the netdev's open all set it: without the lock, one
 * that read the link before a change could set the carrier after one
 * that read it since.  Netdevice notifiers hear of a change through
 * linkwatch, the port among them.
 */
void qrdma_eth_link_sync(struct qrdma_dev *dev)
{
	struct qrdma_eth *eth = dev->eth;

	spin_lock(&eth->link_lock);
	if (readl(dev->regs + QRDMA_REG_ETH_LINK) & QRDMA_ETH_LINK_UP)
		netif_carrier_on(eth->netdev);
	else
		netif_carrier_off(eth->netdev);
	spin_unlock(&eth->link_lock);
}

void qrdma_eth_interrupt(struct qrdma_dev *dev)
{
	struct qrdma_eth *eth = READ_ONCE(dev->eth);

	/* A no-op while NAPI is disabled, i.e. while the netdev is down. */
	if (eth)
		napi_schedule_irqoff(&eth->napi);
}

static int qrdma_eth_map_rx(struct qrdma_eth *eth, struct qrdma_eth_buf *buf,
			    gfp_t gfp)
{
	struct sk_buff *skb;

	skb = __netdev_alloc_skb_ip_align(eth->netdev, eth->rx_buf_len, gfp);
	if (!skb)
		return -ENOMEM;
	buf->dma = dma_map_single(eth->dmadev, skb->data, eth->rx_buf_len,
				  DMA_FROM_DEVICE);
	if (dma_mapping_error(eth->dmadev, buf->dma)) {
		dev_kfree_skb_any(skb);
		return -ENOMEM;
	}
	buf->skb = skb;
	buf->len = eth->rx_buf_len;
	return 0;
}

/* Hand slot @slot's buffer to the device. */
static void qrdma_eth_post_rx(struct qrdma_eth *eth, u32 slot)
{
	struct qrdma_eth_desc *desc = &eth->rx_ring[slot];

	desc->addr = cpu_to_le64(eth->rx_bufs[slot].dma);
	desc->len = cpu_to_le16(eth->rx_buf_len);
	desc->rsvd = 0;
	desc->flags = 0;
}

static void qrdma_eth_free_bufs(struct qrdma_eth *eth)
{
	u32 i;

	for (i = 0; i < QRDMA_ETH_TX_SIZE; i++) {
		struct qrdma_eth_buf *buf = &eth->tx_bufs[i];

		if (!buf->skb)
			continue;
		dma_unmap_single(eth->dmadev, buf->dma, buf->len,
				 DMA_TO_DEVICE);
		dev_kfree_skb_any(buf->skb);
		buf->skb = NULL;
	}
	for (i = 0; i < QRDMA_ETH_RX_SIZE; i++) {
		struct qrdma_eth_buf *buf = &eth->rx_bufs[i];

		if (!buf->skb)
			continue;
		dma_unmap_single(eth->dmadev, buf->dma, buf->len,
				 DMA_FROM_DEVICE);
		dev_kfree_skb_any(buf->skb);
		buf->skb = NULL;
	}
}

static void qrdma_eth_free_rings(struct qrdma_eth *eth)
{
	qrdma_eth_free_bufs(eth);
	kfree(eth->rx_bufs);
	kfree(eth->tx_bufs);
	if (eth->rx_ring)
		dma_free_coherent(eth->dmadev,
				  QRDMA_ETH_RX_SIZE * sizeof(*eth->rx_ring),
				  eth->rx_ring, eth->rx_dma);
	if (eth->tx_ring)
		dma_free_coherent(eth->dmadev,
				  QRDMA_ETH_TX_SIZE * sizeof(*eth->tx_ring),
				  eth->tx_ring, eth->tx_dma);
	eth->rx_bufs = NULL;
	eth->tx_bufs = NULL;
	eth->rx_ring = NULL;
	eth->tx_ring = NULL;
}

static int qrdma_eth_alloc_rings(struct qrdma_eth *eth)
{
	u32 i;
	int err;

	eth->tx_ring = dma_alloc_coherent(eth->dmadev,
					  QRDMA_ETH_TX_SIZE * sizeof(*eth->tx_ring),
					  &eth->tx_dma, GFP_KERNEL);
	eth->rx_ring = dma_alloc_coherent(eth->dmadev,
					  QRDMA_ETH_RX_SIZE * sizeof(*eth->rx_ring),
					  &eth->rx_dma, GFP_KERNEL);
	eth->tx_bufs = kcalloc(QRDMA_ETH_TX_SIZE, sizeof(*eth->tx_bufs),
			       GFP_KERNEL);
	eth->rx_bufs = kcalloc(QRDMA_ETH_RX_SIZE, sizeof(*eth->rx_bufs),
			       GFP_KERNEL);
	if (!eth->tx_ring || !eth->rx_ring || !eth->tx_bufs || !eth->rx_bufs) {
		err = -ENOMEM;
		goto err_free_rings;
	}

	/* Every RX slot holds a posted buffer at all times. */
	for (i = 0; i < QRDMA_ETH_RX_SIZE; i++) {
		err = qrdma_eth_map_rx(eth, &eth->rx_bufs[i], GFP_KERNEL);
		if (err)
			goto err_free_rings;
		qrdma_eth_post_rx(eth, i);
	}
	eth->tx_pi = 0;
	eth->tx_ci = 0;
	eth->rx_ci = 0;
	eth->rx_pi = QRDMA_ETH_RX_SIZE;
	return 0;

err_free_rings:
	qrdma_eth_free_rings(eth);
	return err;
}

static void qrdma_eth_clean_tx(struct qrdma_eth *eth, int budget)
{
	struct net_device *netdev = eth->netdev;
	/* Pairs with xmit's release: the buffers below pi are filled in. */
	u32 pi = smp_load_acquire(&eth->tx_pi);
	u32 mask = QRDMA_ETH_TX_SIZE - 1;
	u64 sent = 0, bytes = 0, errors = 0;
	unsigned int pkts = 0, len = 0;
	u32 ci = eth->tx_ci;

	while (ci != pi) {
		struct qrdma_eth_buf *buf = &eth->tx_bufs[ci & mask];
		u16 flags = le16_to_cpu(READ_ONCE(eth->tx_ring[ci & mask].flags));

		if (!(flags & QRDMA_ETH_DESC_DONE))
			break;
		dma_unmap_single(eth->dmadev, buf->dma, buf->len,
				 DMA_TO_DEVICE);
		if (flags & QRDMA_ETH_DESC_ERR) {
			errors++;
		} else {
			sent++;
			bytes += buf->len;
		}
		pkts++;
		len += buf->len;
		napi_consume_skb(buf->skb, budget);
		buf->skb = NULL;
		ci++;
	}
	if (!pkts)
		return;

	qrdma_eth_stats_add(&eth->tx_stats, sent, bytes, errors, 0);
	netdev_completed_queue(netdev, pkts, len);
	WRITE_ONCE(eth->tx_ci, ci);
	/* Pairs with the barrier in xmit: see the stop or let it see ci. */
	smp_mb();
	if (netif_queue_stopped(netdev) &&
	    pi - ci < QRDMA_ETH_TX_SIZE && netif_running(netdev))
		netif_wake_queue(netdev);
}

static int qrdma_eth_rx(struct qrdma_eth *eth, int budget)
{
	struct net_device *netdev = eth->netdev;
	u32 mask = QRDMA_ETH_RX_SIZE - 1;
	u64 bytes = 0, errors = 0, dropped = 0;
	int done = 0, seen = 0;

	while (seen < budget) {
		u32 slot = eth->rx_ci & mask;
		struct qrdma_eth_desc *desc = &eth->rx_ring[slot];
		struct qrdma_eth_buf *buf = &eth->rx_bufs[slot];
		struct qrdma_eth_buf fresh;
		struct sk_buff *skb;
		u16 flags, len;

		flags = le16_to_cpu(READ_ONCE(desc->flags));
		if (!(flags & QRDMA_ETH_DESC_DONE))
			break;
		/* Read the length the device wrote only after DONE. */
		dma_rmb();
		len = le16_to_cpu(desc->len);

		if (flags & QRDMA_ETH_DESC_ERR || len < ETH_HLEN ||
		    len > eth->rx_buf_len) {
			/* Reuse the buffer as it is. */
			errors++;
		} else if (qrdma_eth_map_rx(eth, &fresh, GFP_ATOMIC)) {
			dropped++;
		} else {
			skb = buf->skb;
			dma_unmap_single(eth->dmadev, buf->dma, buf->len,
					 DMA_FROM_DEVICE);
			*buf = fresh;
			skb_put(skb, len);
			skb->protocol = eth_type_trans(skb, netdev);
			napi_gro_receive(&eth->napi, skb);
			bytes += len;
			done++;
		}

		qrdma_eth_post_rx(eth, slot);
		eth->rx_ci++;
		eth->rx_pi++;
		seen++;
	}

	if (seen) {
		qrdma_eth_stats_add(&eth->rx_stats, done, bytes, errors,
				    dropped);
		/* writel() orders the descriptor stores before the index. */
		writel(eth->rx_pi, eth->regs + QRDMA_REG_ETH_RX_PI);
	}
	return seen;
}

static int qrdma_eth_poll(struct napi_struct *napi, int budget)
{
	struct qrdma_eth *eth = container_of(napi, struct qrdma_eth, napi);
	int done;

	qrdma_eth_clean_tx(eth, budget);
	done = qrdma_eth_rx(eth, budget);
	/*
	 * The device interrupts after every batch it completes, and has no
	 * interrupt mask to re-enable: completing is all there is to do.
	 */
	if (done < budget)
		napi_complete_done(napi, done);
	return done;
}

static netdev_tx_t qrdma_eth_xmit(struct sk_buff *skb,
				  struct net_device *netdev)
{
	struct qrdma_eth *eth = netdev_priv(netdev);
	u32 slot = eth->tx_pi & (QRDMA_ETH_TX_SIZE - 1);
	struct qrdma_eth_buf *buf = &eth->tx_bufs[slot];
	struct qrdma_eth_desc *desc = &eth->tx_ring[slot];
	dma_addr_t dma;

	/* Frees the skb on failure. */
	if (skb_put_padto(skb, ETH_ZLEN)) {
		dev_core_stats_tx_dropped_inc(netdev);
		goto ring;
	}
	if (skb->len > QRDMA_ETH_FRAME_MAX)
		goto drop;
	if (eth->tx_pi - READ_ONCE(eth->tx_ci) >= QRDMA_ETH_TX_SIZE) {
		/* The queue is stopped before the ring fills. */
		netif_stop_queue(netdev);
		return NETDEV_TX_BUSY;
	}

	dma = dma_map_single(eth->dmadev, skb->data, skb->len, DMA_TO_DEVICE);
	if (dma_mapping_error(eth->dmadev, dma))
		goto drop;
	buf->skb = skb;
	buf->dma = dma;
	buf->len = skb->len;
	desc->addr = cpu_to_le64(dma);
	desc->len = cpu_to_le16(skb->len);
	desc->flags = 0;
	desc->rsvd = 0;
	skb_tx_timestamp(skb);

	/* NAPI reads the slot's buffer once it sees the new index. */
	smp_store_release(&eth->tx_pi, eth->tx_pi + 1);
	if (eth->tx_pi - READ_ONCE(eth->tx_ci) >= QRDMA_ETH_TX_SIZE) {
		netif_stop_queue(netdev);
		/* NAPI may have freed slots before it saw the stop. */
		smp_mb();
		if (eth->tx_pi - READ_ONCE(eth->tx_ci) < QRDMA_ETH_TX_SIZE)
			netif_start_queue(netdev);
	}

	if (__netdev_sent_queue(netdev, buf->len, netdev_xmit_more()) ||
	    netif_queue_stopped(netdev))
		/* writel() orders the descriptor stores before the index. */
		writel(eth->tx_pi, eth->regs + QRDMA_REG_ETH_TX_PI);
	return NETDEV_TX_OK;

drop:
	dev_core_stats_tx_dropped_inc(netdev);
	dev_kfree_skb_any(skb);
ring:
	/*
	 * The frames before this one may have left the doorbell to it
	 * (xmit_more): ring it for them, or they wait in the ring until
	 * the next frame.
	 */
	writel(eth->tx_pi, eth->regs + QRDMA_REG_ETH_TX_PI);
	return NETDEV_TX_OK;
}

static int qrdma_eth_open(struct net_device *netdev)
{
	struct qrdma_eth *eth = netdev_priv(netdev);
	void __iomem *regs = eth->regs;
	int err;

	eth->rx_buf_len = netdev->mtu + ETH_HLEN + VLAN_HLEN;
	err = qrdma_eth_alloc_rings(eth);
	if (err)
		return err;

	writeq(eth->tx_dma, regs + QRDMA_REG_ETH_TX_BASE);
	writel(QRDMA_ETH_TX_LOG2, regs + QRDMA_REG_ETH_TX_LOG2);
	writeq(eth->rx_dma, regs + QRDMA_REG_ETH_RX_BASE);
	writel(QRDMA_ETH_RX_LOG2, regs + QRDMA_REG_ETH_RX_LOG2);
	/* Vector 0, with the command queue: see qrdma_admin_irq(). */
	writel(0, regs + QRDMA_REG_ETH_IRQ_VECTOR);
	writel(QRDMA_ETH_CTRL_ENABLE, regs + QRDMA_REG_ETH_CTRL);
	if (!(readl(regs + QRDMA_REG_ETH_CTRL) & QRDMA_ETH_CTRL_ENABLE)) {
		netdev_err(netdev, "the Ethernet function refused to start\n");
		err = -EIO;
		goto err_free_rings;
	}

	netdev_reset_queue(netdev);
	napi_enable(&eth->napi);
	writel(eth->rx_pi, regs + QRDMA_REG_ETH_RX_PI);
	qrdma_eth_link_sync(eth->dev);
	netif_start_queue(netdev);
	return 0;

err_free_rings:
	qrdma_eth_free_rings(eth);
	return err;
}

static int qrdma_eth_stop(struct net_device *netdev)
{
	struct qrdma_eth *eth = netdev_priv(netdev);

	netif_tx_disable(netdev);
	/*
	 * The device stops both rings and forgets what it had not done;
	 * the read flushes the posted write before the rings are freed.
	 */
	writel(0, eth->regs + QRDMA_REG_ETH_CTRL);
	readl(eth->regs + QRDMA_REG_ETH_CTRL);
	napi_disable(&eth->napi);
	qrdma_eth_free_rings(eth);
	return 0;
}

static int qrdma_eth_change_mtu(struct net_device *netdev, int new_mtu)
{
	unsigned int old_mtu = netdev->mtu;
	int err;

	WRITE_ONCE(netdev->mtu, new_mtu);
	if (!netif_running(netdev))
		return 0;
	/* The RX buffers are sized for the MTU: the rings start over. */
	qrdma_eth_stop(netdev);
	err = qrdma_eth_open(netdev);
	if (err) {
		netdev_err(netdev, "MTU %d: rings not restarted (%d)\n",
			   new_mtu, err);
		WRITE_ONCE(netdev->mtu, old_mtu);
		if (qrdma_eth_open(netdev))
			netdev_err(netdev, "rings not restarted at MTU %u\n",
				   old_mtu);
	}
	return err;
}

static void qrdma_eth_get_stats64(struct net_device *netdev,
				  struct rtnl_link_stats64 *stats)
{
	struct qrdma_eth *eth = netdev_priv(netdev);
	struct qrdma_eth_ring_stats *s;
	unsigned int start;

	s = &eth->rx_stats;
	do {
		start = u64_stats_fetch_begin(&s->syncp);
		stats->rx_packets = u64_stats_read(&s->packets);
		stats->rx_bytes = u64_stats_read(&s->bytes);
		stats->rx_errors = u64_stats_read(&s->errors);
		stats->rx_dropped = u64_stats_read(&s->dropped);
	} while (u64_stats_fetch_retry(&s->syncp, start));

	s = &eth->tx_stats;
	do {
		start = u64_stats_fetch_begin(&s->syncp);
		stats->tx_packets = u64_stats_read(&s->packets);
		stats->tx_bytes = u64_stats_read(&s->bytes);
		stats->tx_errors = u64_stats_read(&s->errors);
		stats->tx_dropped = u64_stats_read(&s->dropped);
	} while (u64_stats_fetch_retry(&s->syncp, start));
}

static const struct net_device_ops qrdma_eth_netdev_ops = {
	.ndo_open = qrdma_eth_open,
	.ndo_stop = qrdma_eth_stop,
	.ndo_start_xmit = qrdma_eth_xmit,
	.ndo_change_mtu = qrdma_eth_change_mtu,
	.ndo_get_stats64 = qrdma_eth_get_stats64,
	.ndo_validate_addr = eth_validate_addr,
};

static void qrdma_eth_get_drvinfo(struct net_device *netdev,
				  struct ethtool_drvinfo *info)
{
	struct qrdma_eth *eth = netdev_priv(netdev);

	strscpy(info->driver, DRV_MODULE_NAME, sizeof(info->driver));
	strscpy(info->bus_info, pci_name(eth->dev->pdev),
		sizeof(info->bus_info));
}

static const struct ethtool_ops qrdma_eth_ethtool_ops = {
	.get_drvinfo = qrdma_eth_get_drvinfo,
	.get_link = ethtool_op_get_link,
};

int qrdma_eth_init(struct qrdma_dev *dev)
{
	struct net_device *netdev;
	struct qrdma_eth *eth;
	u8 mac[ETH_ALEN];
	u32 lo, hi;
	int err;

	netdev = alloc_etherdev(sizeof(*eth));
	if (!netdev)
		return -ENOMEM;
	SET_NETDEV_DEV(netdev, &dev->pdev->dev);
	eth = netdev_priv(netdev);
	eth->dev = dev;
	eth->netdev = netdev;
	eth->dmadev = &dev->pdev->dev;
	eth->regs = dev->regs;
	spin_lock_init(&eth->link_lock);
	u64_stats_init(&eth->tx_stats.syncp);
	u64_stats_init(&eth->rx_stats.syncp);

	/* Bytes in transmission order, byte 0 in the lowest bits. */
	lo = readl(dev->regs + QRDMA_REG_ETH_MAC_LO);
	hi = readl(dev->regs + QRDMA_REG_ETH_MAC_HI);
	mac[0] = lo;
	mac[1] = lo >> 8;
	mac[2] = lo >> 16;
	mac[3] = lo >> 24;
	mac[4] = hi;
	mac[5] = hi >> 8;
	if (is_valid_ether_addr(mac)) {
		eth_hw_addr_set(netdev, mac);
	} else {
		dev_warn(&dev->pdev->dev, "invalid MAC %pM, using a random one\n",
			 mac);
		eth_hw_addr_random(netdev);
	}

	netdev->netdev_ops = &qrdma_eth_netdev_ops;
	netdev->ethtool_ops = &qrdma_eth_ethtool_ops;
	netdev->min_mtu = ETH_MIN_MTU;
	netdev->max_mtu = QRDMA_ETH_MAX_MTU;
	netif_napi_add(netdev, &eth->napi, qrdma_eth_poll);
	netif_carrier_off(netdev);

	/* It may be opened as soon as it is registered. */
	dev->netdev = netdev;
	WRITE_ONCE(dev->eth, eth);
	err = register_netdev(netdev);
	if (err) {
		dev_err(&dev->pdev->dev, "cannot register the netdev: %d\n",
			err);
		goto err_free_netdev;
	}
	return 0;

err_free_netdev:
	WRITE_ONCE(dev->eth, NULL);
	synchronize_irq(pci_irq_vector(dev->pdev, 0));
	dev->netdev = NULL;
	netif_napi_del(&eth->napi);
	free_netdev(netdev);
	return err;
}

void qrdma_eth_fini(struct qrdma_dev *dev)
{
	struct qrdma_eth *eth = dev->eth;

	/* Stops the netdev if it is up. */
	unregister_netdev(dev->netdev);
	WRITE_ONCE(dev->eth, NULL);
	/* The admin interrupt no longer looks at the netdev after this. */
	synchronize_irq(pci_irq_vector(dev->pdev, 0));
	netif_napi_del(&eth->napi);
	free_netdev(dev->netdev);
	dev->netdev = NULL;
}
