// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * qrdma: PCI probe and remove, interrupts, event queues, and the
 * ib_device the RoCE port is registered as.
 */

#include <linux/dmapool.h>
#include <linux/module.h>
#include <linux/pci.h>

#include "qrdma.h"

MODULE_AUTHOR("The qrdma authors");
MODULE_LICENSE("Dual BSD/GPL");
MODULE_DESCRIPTION("RDMA driver for the qrdma emulated RoCEv2 NIC");

static unsigned int cmd_timeout_ms = 30000;
module_param(cmd_timeout_ms, uint, 0444);
MODULE_PARM_DESC(cmd_timeout_ms,
		 "Time a device command may take before the device is given up (default 30000)");

/* How often the link state is read: the device raises no link interrupt. */
#define QRDMA_LINK_POLL_MS	1000

static const struct pci_device_id qrdma_pci_tbl[] = {
	{ PCI_DEVICE(QRDMA_PCI_VENDOR_ID, QRDMA_PCI_DEVICE_ID) },
	{ }
};
MODULE_DEVICE_TABLE(pci, qrdma_pci_tbl);

static int qrdma_dev_reset(struct qrdma_dev *dev)
{
	u32 status;

	writel(QRDMA_DEV_CTRL_RESET, dev->regs + QRDMA_REG_DEV_CTRL);
	/* The read flushes the posted write: the reset has then happened. */
	status = readl(dev->regs + QRDMA_REG_DEV_STATUS);
	if (status & (QRDMA_DEV_STATUS_READY | QRDMA_DEV_STATUS_FATAL)) {
		dev_err(&dev->pdev->dev, "device did not reset: status %#x\n",
			status);
		return -EIO;
	}
	return 0;
}

u16 qrdma_comp_vector_to_eq(struct qrdma_dev *dev, int comp_vector)
{
	/* Vector 0 carries the command queue and async events; completions
	 * have the others to themselves when there are others.
	 */
	if (dev->num_vectors < 2)
		return QRDMA_ASYNC_EQ;
	return 1 + comp_vector % (dev->num_vectors - 1);
}

/*
 * Wait until no handler of EQ @eq still uses an object it looked up, so
 * that the caller, which has unlisted the object, can free it.
 */
void qrdma_sync_eq(struct qrdma_dev *dev, u16 eq)
{
	if (!dev->num_eqs)
		return;
	if (eq == QRDMA_ASYNC_EQ)
		flush_work(&dev->async_work);
	else
		synchronize_irq(pci_irq_vector(dev->pdev, eq));
}

/*
 * Handle the async events the device has written, now.  A destroy calls
 * it once the device has destroyed the object, before unlisting it: the
 * events the device raised for the object before that may still wait
 * for their interrupt, and reach the object's handler now rather than
 * later, when a new object may have its handle.
 */
void qrdma_drain_async_eq(struct qrdma_dev *dev)
{
	if (!dev->num_eqs)
		return;
	queue_work(dev->async_wq, &dev->async_work);
	flush_work(&dev->async_work);
}

static void qrdma_qp_event(struct qrdma_dev *dev, u32 qpn,
			   enum ib_event_type type)
{
	struct ib_event event = {};
	struct qrdma_qp *qp;

	/*
	 * Only the async work handles QP events; destroy_qp unlists the QP
	 * and then flushes the work, so the QP outlives this call.
	 */
	qp = xa_load(&dev->qp_xa, qpn);
	if (!qp) {
		atomic64_inc(&dev->sw_stats.bad_events);
		return;
	}
	if (!qp->ibqp.event_handler)
		return;
	event.device = &dev->ibdev;
	event.element.qp = &qp->ibqp;
	event.event = type;
	qp->ibqp.event_handler(&event, qp->ibqp.qp_context);
}

static void qrdma_srq_event(struct qrdma_dev *dev, u32 srqn,
			    enum ib_event_type type)
{
	struct ib_event event = {};
	struct qrdma_srq *srq;

	srq = xa_load(&dev->srq_xa, srqn);
	if (!srq) {
		atomic64_inc(&dev->sw_stats.bad_events);
		return;
	}
	if (!srq->ibsrq.event_handler)
		return;
	event.device = &dev->ibdev;
	event.element.srq = &srq->ibsrq;
	event.event = type;
	srq->ibsrq.event_handler(&event, srq->ibsrq.srq_context);
}

static void qrdma_cq_event(struct qrdma_dev *dev, u32 cqn, bool completion)
{
	struct ib_event event = {};
	struct qrdma_cq *cq;

	cq = xa_load(&dev->cq_xa, cqn);
	if (!cq) {
		atomic64_inc(&dev->sw_stats.bad_events);
		return;
	}
	if (completion) {
		atomic64_inc(&dev->sw_stats.comp_events);
		if (cq->ibcq.comp_handler)
			cq->ibcq.comp_handler(&cq->ibcq, cq->ibcq.cq_context);
		return;
	}
	if (!cq->ibcq.event_handler)
		return;
	event.device = &dev->ibdev;
	event.element.cq = &cq->ibcq;
	event.event = IB_EVENT_CQ_ERR;
	cq->ibcq.event_handler(&event, cq->ibcq.cq_context);
}

/* Tell the consumers, once, that the device is lost. */
static void qrdma_report_fatal(struct qrdma_dev *dev)
{
	struct ib_event event = {
		.device = &dev->ibdev,
		.element.port_num = QRDMA_PORT,
		.event = IB_EVENT_DEVICE_FATAL,
	};

	mutex_lock(&dev->event_lock);
	if (dev->ib_live && !dev->fatal_reported) {
		dev->fatal_reported = true;
		ib_dispatch_event(&event);
	}
	mutex_unlock(&dev->event_lock);
}

static void qrdma_fatal_work(struct work_struct *work)
{
	qrdma_report_fatal(container_of(work, struct qrdma_dev, fatal_work));
}

/* A command timed out and the engine reset the device; any context. */
static void qrdma_cmdq_dead(struct qrdma_cmdq *cmdq)
{
	struct qrdma_dev *dev = container_of(cmdq, struct qrdma_dev, cmdq);

	schedule_work(&dev->fatal_work);
}

/*
 * The device says it is fatal: by a DEVICE_FATAL event, or in DEV_STATUS
 * where the link work looks.  Both may find it at once; the one that
 * disables the queue says so.  Sleeps.
 */
static void qrdma_device_fatal(struct qrdma_dev *dev)
{
	/* Read before the reset clears it. */
	u32 config_err = readl(dev->regs + QRDMA_REG_CONFIG_ERR);

	/*
	 * Destroys succeed without the device from now on and free what
	 * it used: disabling the queue resets it, which stops all its DMA.
	 */
	if (qrdma_cmdq_disable(&dev->cmdq))
		ibdev_err(&dev->ibdev, "device reported a fatal error (config error %u); reset it\n",
			  config_err);
	qrdma_report_fatal(dev);
}

/* @async: true from the async work, which may sleep; false in hard IRQ. */
static void qrdma_handle_event(struct qrdma_eq *eq, const struct qrdma_eqe *eqe,
			       bool async)
{
	struct qrdma_dev *dev = eq->dev;
	u32 handle = le32_to_cpu(eqe->handle);
	u8 type = eqe->type;

	if (type == QRDMA_EV_COMPLETION) {
		qrdma_cq_event(dev, handle, true);
		return;
	}
	if (!async) {
		/* Async events belong on EQ 0; the device is confused. */
		atomic64_inc(&dev->sw_stats.bad_events);
		ibdev_err_ratelimited(&dev->ibdev,
				      "async event %u on completion EQ %u\n",
				      type, eq->idx);
		return;
	}

	atomic64_inc(&dev->sw_stats.async_events);
	switch (type) {
	case QRDMA_EV_CQ_ERR:
		qrdma_cq_event(dev, handle, false);
		break;
	case QRDMA_EV_QP_FATAL:
		qrdma_qp_event(dev, handle, IB_EVENT_QP_FATAL);
		break;
	case QRDMA_EV_QP_REQ_ERR:
		qrdma_qp_event(dev, handle, IB_EVENT_QP_REQ_ERR);
		break;
	case QRDMA_EV_QP_ACCESS_ERR:
		qrdma_qp_event(dev, handle, IB_EVENT_QP_ACCESS_ERR);
		break;
	case QRDMA_EV_COMM_EST:
		qrdma_qp_event(dev, handle, IB_EVENT_COMM_EST);
		break;
	case QRDMA_EV_SQ_DRAINED:
		qrdma_qp_event(dev, handle, IB_EVENT_SQ_DRAINED);
		break;
	case QRDMA_EV_QP_LAST_WQE_REACHED:
		qrdma_qp_event(dev, handle, IB_EVENT_QP_LAST_WQE_REACHED);
		break;
	case QRDMA_EV_SRQ_LIMIT_REACHED:
		qrdma_srq_event(dev, handle, IB_EVENT_SRQ_LIMIT_REACHED);
		break;
	case QRDMA_EV_PORT_ACTIVE:
	case QRDMA_EV_PORT_ERR:
		/*
		 * The link changed: the carrier follows now rather than at
		 * the next poll, and the port follows the carrier.
		 */
		qrdma_eth_link_sync(dev);
		break;
	case QRDMA_EV_DEVICE_FATAL:
		qrdma_device_fatal(dev);
		break;
	default:
		atomic64_inc(&dev->sw_stats.bad_events);
		ibdev_err_ratelimited(&dev->ibdev,
				      "unknown event type %u (handle %#x)\n",
				      type, handle);
		break;
	}
}

static void qrdma_eq_process(struct qrdma_eq *eq, bool async)
{
	void __iomem *ci_reg = eq->dev->regs + QRDMA_REG_EQ(eq->idx) +
			       QRDMA_REG_EQ_CI;
	u32 mask = (1U << eq->log2) - 1;
	u32 done = 0;

	for (;;) {
		struct qrdma_eqe *eqe = &eq->ring[eq->ci & mask];
		u8 phase = (eq->ci >> eq->log2) & 1 ? 0 : QRDMA_EQE_F_PHASE;

		if ((READ_ONCE(eqe->flags) & QRDMA_EQE_F_PHASE) != phase)
			break;
		/* The phase bit is written last: read the entry after it. */
		dma_rmb();
		qrdma_handle_event(eq, eqe, async);
		eq->ci++;
		/*
		 * The device drops what finds the EQ full: during a long
		 * run, give it back what is done as often as its size
		 * needs (qrdma_eq_size()).
		 */
		if (++done == eq->ci_batch) {
			writel(eq->ci, ci_reg);
			done = 0;
		}
	}
	if (done)
		writel(eq->ci, ci_reg);
}

static void qrdma_async_work(struct work_struct *work)
{
	struct qrdma_dev *dev = container_of(work, struct qrdma_dev,
					     async_work);

	qrdma_eq_process(&dev->eqs[QRDMA_ASYNC_EQ], true);
}

/* Vector 0: command completions, async events and the Ethernet rings. */
static irqreturn_t qrdma_admin_irq(int irq, void *data)
{
	struct qrdma_dev *dev = data;

	qrdma_cmdq_process(&dev->cmdq);
	if (READ_ONCE(dev->num_eqs))
		queue_work(dev->async_wq, &dev->async_work);
	qrdma_eth_interrupt(dev);
	return IRQ_HANDLED;
}

static irqreturn_t qrdma_comp_irq(int irq, void *data)
{
	qrdma_eq_process(data, false);
	return IRQ_HANDLED;
}

static void qrdma_eq_disable(struct qrdma_dev *dev, struct qrdma_eq *eq)
{
	void __iomem *ctrl = dev->regs + QRDMA_REG_EQ(eq->idx) +
			     QRDMA_REG_EQ_CTRL;

	writel(0, ctrl);
	/* Flush the posted write: the device writes the ring no more. */
	readl(ctrl);
}

static void qrdma_eqs_free(struct qrdma_dev *dev, int count)
{
	int i;

	for (i = count - 1; i >= 0; i--) {
		struct qrdma_eq *eq = &dev->eqs[i];

		qrdma_eq_disable(dev, eq);
		if (i != QRDMA_ASYNC_EQ)
			free_irq(pci_irq_vector(dev->pdev, i), eq);
		dma_free_coherent(&dev->pdev->dev,
				  sizeof(*eq->ring) << eq->log2, eq->ring,
				  eq->dma);
	}
	kfree(dev->eqs);
	dev->eqs = NULL;
}

/*
 * The device drops an event that finds its EQ full, and nothing tells of
 * it afterwards: a lost LAST_WQE_REACHED leaves ib_drain_qp() waiting on
 * an SRQ QP, a lost completion event a ULP waiting on its CQ.  Each EQ
 * holds every event that can be pending on it at once.  On the async EQ:
 * a QP raises at most COMM_EST, one error and LAST_WQE_REACHED before a
 * command moves it again, a CQ one CQ_ERR, an SRQ one armed limit; the
 * port and fatal events come one at a time.  On a completion EQ: one
 * event per arming of a CQ, and every CQ may be on the same EQ.
 */
static u64 qrdma_eq_max_events(struct qrdma_dev *dev, u16 idx)
{
	u64 events = 0;

	if (idx == QRDMA_ASYNC_EQ)
		events = 3ULL * dev->attr.max_qp + dev->attr.max_cq +
			 dev->attr.max_srq + 16;
	if (idx != QRDMA_ASYNC_EQ || dev->num_vectors < 2)
		events += dev->attr.max_cq;
	return events;
}

/*
 * The EQ's size, and how many entries its reader consumes before it gives
 * them back (writes EQ_CI): the entries consumed and not given back count
 * as used, so the ring holds the events that may be pending and those.
 * A ring of the largest size that cannot gives back every entry.
 */
static void qrdma_eq_size(struct qrdma_dev *dev, struct qrdma_eq *eq)
{
	u64 events = qrdma_eq_max_events(dev, eq->idx);
	u64 size;

	/* A quarter of the ring given back at a time: 4/3 of the events. */
	eq->log2 = clamp_t(u32, order_base_2(DIV_ROUND_UP(events * 4, 3)), 8,
			   QRDMA_EQ_LOG2_MAX);
	size = 1ULL << eq->log2;
	eq->ci_batch = size > events ? min(size - events, size / 4) : 1;
}

static int qrdma_eq_init(struct qrdma_dev *dev, struct qrdma_eq *eq, u16 idx)
{
	void __iomem *regs = dev->regs + QRDMA_REG_EQ(idx);
	int err;

	eq->dev = dev;
	eq->idx = idx;
	qrdma_eq_size(dev, eq);
	eq->ring = dma_alloc_coherent(&dev->pdev->dev,
				      sizeof(*eq->ring) << eq->log2,
				      &eq->dma, GFP_KERNEL);
	if (!eq->ring)
		return -ENOMEM;

	if (idx != QRDMA_ASYNC_EQ) {
		snprintf(eq->irq_name, sizeof(eq->irq_name),
			 DRV_MODULE_NAME "-comp%u@pci:%s", idx,
			 pci_name(dev->pdev));
		err = request_irq(pci_irq_vector(dev->pdev, idx),
				  qrdma_comp_irq, 0, eq->irq_name, eq);
		if (err)
			goto err_free_ring;
	}

	/* Enabling starts both indices at 0. */
	writeq(eq->dma, regs + QRDMA_REG_EQ_BASE);
	writel(eq->log2, regs + QRDMA_REG_EQ_LOG2);
	writel(QRDMA_EQ_CTRL_ENABLE, regs + QRDMA_REG_EQ_CTRL);
	if (!(readl(regs + QRDMA_REG_EQ_CTRL) & QRDMA_EQ_CTRL_ENABLE)) {
		ibdev_err(&dev->ibdev, "EQ %u refused to enable\n", idx);
		err = -EIO;
		goto err_free_irq;
	}
	return 0;

err_free_irq:
	if (idx != QRDMA_ASYNC_EQ)
		free_irq(pci_irq_vector(dev->pdev, idx), eq);
err_free_ring:
	dma_free_coherent(&dev->pdev->dev, sizeof(*eq->ring) << eq->log2,
			  eq->ring, eq->dma);
	return err;
}

/* One EQ per MSI-X vector; EQ 0 takes the async events. */
static int qrdma_eqs_init(struct qrdma_dev *dev)
{
	int i, err;

	dev->async_wq = alloc_ordered_workqueue("qrdma-async-%s",
						WQ_MEM_RECLAIM | WQ_HIGHPRI,
						pci_name(dev->pdev));
	if (!dev->async_wq)
		return -ENOMEM;
	dev->eqs = kcalloc(dev->num_vectors, sizeof(*dev->eqs), GFP_KERNEL);
	if (!dev->eqs) {
		err = -ENOMEM;
		goto err_destroy_wq;
	}

	for (i = 0; i < dev->num_vectors; i++) {
		err = qrdma_eq_init(dev, &dev->eqs[i], i);
		if (err) {
			qrdma_eqs_free(dev, i);
			goto err_destroy_wq;
		}
	}
	/* The admin interrupt looks at EQ 0 from now on. */
	smp_store_release(&dev->num_eqs, dev->num_vectors);
	return 0;

err_destroy_wq:
	destroy_workqueue(dev->async_wq);
	return err;
}

static void qrdma_eqs_fini(struct qrdma_dev *dev)
{
	int count = dev->num_eqs;

	if (!count)
		return;
	qrdma_eq_disable(dev, &dev->eqs[QRDMA_ASYNC_EQ]);
	WRITE_ONCE(dev->num_eqs, 0);
	synchronize_irq(pci_irq_vector(dev->pdev, 0));
	cancel_work_sync(&dev->async_work);
	destroy_workqueue(dev->async_wq);
	qrdma_eqs_free(dev, count);
}

static int qrdma_alloc_vectors(struct qrdma_dev *dev)
{
	struct pci_dev *pdev = dev->pdev;
	int nvec = dev->caps & QRDMA_CAPS_MSIX_VECTORS_MASK;

	if (!nvec) {
		dev_err(&pdev->dev, "device has no MSI-X vector\n");
		return -ENODEV;
	}
	nvec = pci_alloc_irq_vectors(pdev, 1, nvec, PCI_IRQ_MSIX);
	if (nvec < 0) {
		dev_err(&pdev->dev, "cannot enable MSI-X: %d\n", nvec);
		return nvec;
	}
	dev->num_vectors = nvec;
	return 0;
}

/* Tell ib_core the port's state; under event_lock, the device live. */
static void qrdma_port_event(struct qrdma_dev *dev)
{
	struct ib_event event = {
		.device = &dev->ibdev,
		.element.port_num = QRDMA_PORT,
	};

	lockdep_assert_held(&dev->event_lock);
	event.event = dev->port_state == IB_PORT_ACTIVE ?
		      IB_EVENT_PORT_ACTIVE : IB_EVENT_PORT_ERR;
	ib_dispatch_event(&event);
}

/*
 * The port is ACTIVE while its netdev is up with carrier, as on other
 * RoCE NICs; tell ib_core when that changes.  The netdev is read under
 * the lock: of two updates, the later one reads the later state.
 */
static void qrdma_port_update(struct qrdma_dev *dev)
{
	struct net_device *netdev = dev->netdev;
	enum ib_port_state state;

	mutex_lock(&dev->event_lock);
	state = netif_running(netdev) && netif_carrier_ok(netdev) ?
		IB_PORT_ACTIVE : IB_PORT_DOWN;
	if (dev->port_state != state) {
		dev->port_state = state;
		/*
		 * ib_core reads the port while it registers the device,
		 * maybe before this change: it hears of it once the
		 * ib_device is live (qrdma_ib_set_live()).
		 */
		if (dev->ib_live)
			qrdma_port_event(dev);
		else
			dev->port_event_pending = true;
	}
	mutex_unlock(&dev->event_lock);
}

/*
 * Runs under RTNL, and takes event_lock: nothing may take RTNL with
 * event_lock held.  ib_dispatch_event() only queues the event.
 *
 * Whatever the event, the port is computed again from the netdev, so
 * that a NETDEV_DOWN replayed as the notifier is unregistered, or the
 * NETDEV_UNREGISTER of a move to another namespace (the netdev is
 * closed first), cannot leave a state the netdev is not in.
 * NETDEV_CHANGEMTU needs nothing: qrdma_query_port() reads the MTU at
 * every call, and ib_core keeps none of it.
 */
static int qrdma_netdev_event(struct notifier_block *nb, unsigned long event,
			      void *ptr)
{
	struct qrdma_dev *dev = container_of(nb, struct qrdma_dev, netdev_nb);

	/* The namespace's other netdevs are not the port's. */
	if (netdev_notifier_info_to_dev(ptr) != dev->netdev)
		return NOTIFY_DONE;

	switch (event) {
	case NETDEV_UP:
	case NETDEV_DOWN:
	case NETDEV_CHANGE:	/* the carrier, through linkwatch */
		qrdma_port_update(dev);
		break;
	default:
		break;
	}
	return NOTIFY_DONE;
}

/*
 * The notifier of the netdev's namespace, which follows the netdev when
 * it moves to another: a global notifier would run for every netdev of
 * every namespace, one of a fixed namespace would lose the netdev when
 * it moves.  Registering replays NETDEV_UP for a netdev already up, so
 * that one opened before this is seen too.
 */
static int qrdma_netdev_notifier_register(struct qrdma_dev *dev)
{
	dev->netdev_nb.notifier_call = qrdma_netdev_event;
	return register_netdevice_notifier_dev_net(dev->netdev,
						   &dev->netdev_nb,
						   &dev->netdev_nn);
}

/* Takes RTNL: call it with no lock of the driver held. */
static void qrdma_netdev_notifier_unregister(struct qrdma_dev *dev)
{
	unregister_netdevice_notifier_dev_net(dev->netdev, &dev->netdev_nb,
					      &dev->netdev_nn);
}

/* Events reach ib_core from now on, starting with what it missed. */
static void qrdma_ib_set_live(struct qrdma_dev *dev)
{
	mutex_lock(&dev->event_lock);
	dev->ib_live = true;
	if (dev->port_event_pending) {
		dev->port_event_pending = false;
		qrdma_port_event(dev);
	}
	mutex_unlock(&dev->event_lock);
}

static void qrdma_link_work(struct work_struct *work)
{
	struct qrdma_dev *dev = container_of(to_delayed_work(work),
					     struct qrdma_dev, link_work);

	if (readl(dev->regs + QRDMA_REG_DEV_STATUS) & QRDMA_DEV_STATUS_FATAL)
		qrdma_device_fatal(dev);

	/* The port follows the carrier through the netdev notifier. */
	qrdma_eth_link_sync(dev);

	schedule_delayed_work(&dev->link_work,
			      msecs_to_jiffies(QRDMA_LINK_POLL_MS));
}

static const struct ib_device_ops qrdma_dev_ops = {
	.owner = THIS_MODULE,
	.driver_id = RDMA_DRIVER_UNKNOWN,
	.uverbs_abi_ver = QRDMA_UVERBS_ABI_VERSION,

	.add_gid = qrdma_add_gid,
	.alloc_hw_port_stats = qrdma_alloc_hw_port_stats,
	.alloc_mr = qrdma_alloc_mr,
	.alloc_mw = qrdma_alloc_mw,
	.alloc_pd = qrdma_alloc_pd,
	.alloc_ucontext = qrdma_alloc_ucontext,
	.attach_mcast = qrdma_attach_mcast,
	.create_ah = qrdma_create_ah,
	.create_user_ah = qrdma_create_ah,
	.create_cq = qrdma_create_cq,
	.create_qp = qrdma_create_qp,
	.create_srq = qrdma_create_srq,
	.dealloc_mw = qrdma_dealloc_mw,
	.dealloc_pd = qrdma_dealloc_pd,
	.dealloc_ucontext = qrdma_dealloc_ucontext,
	.del_gid = qrdma_del_gid,
	.dereg_mr = qrdma_dereg_mr,
	.destroy_ah = qrdma_destroy_ah,
	.destroy_cq = qrdma_destroy_cq,
	.destroy_qp = qrdma_destroy_qp,
	.destroy_srq = qrdma_destroy_srq,
	.detach_mcast = qrdma_detach_mcast,
	.disassociate_ucontext = qrdma_disassociate_ucontext,
	.get_dev_fw_str = qrdma_get_dev_fw_str,
	.get_dma_mr = qrdma_get_dma_mr,
	.get_hw_stats = qrdma_get_hw_stats,
	.get_link_layer = qrdma_get_link_layer,
	.get_port_immutable = qrdma_get_port_immutable,
	.map_mr_sg = qrdma_map_mr_sg,
	.mmap = qrdma_mmap,
	.mmap_free = qrdma_mmap_free,
	.modify_qp = qrdma_modify_qp,
	.modify_srq = qrdma_modify_srq,
	.poll_cq = qrdma_poll_cq,
	.post_recv = qrdma_post_recv,
	.post_send = qrdma_post_send,
	.post_srq_recv = qrdma_post_srq_recv,
	.query_device = qrdma_query_device,
	.query_pkey = qrdma_query_pkey,
	.query_port = qrdma_query_port,
	.query_qp = qrdma_query_qp,
	.query_srq = qrdma_query_srq,
	.reg_user_mr = qrdma_reg_user_mr,
	.req_notify_cq = qrdma_req_notify_cq,
#ifdef QRDMA_HAVE_RESIZE_USER_CQ
	.resize_user_cq = qrdma_resize_cq,
#else
	.resize_cq = qrdma_resize_cq,
#endif

	INIT_RDMA_OBJ_SIZE(ib_ah, qrdma_ah, ibah),
	INIT_RDMA_OBJ_SIZE(ib_cq, qrdma_cq, ibcq),
	INIT_RDMA_OBJ_SIZE(ib_mw, qrdma_mw, ibmw),
	INIT_RDMA_OBJ_SIZE(ib_pd, qrdma_pd, ibpd),
	INIT_RDMA_OBJ_SIZE(ib_qp, qrdma_qp, ibqp),
	INIT_RDMA_OBJ_SIZE(ib_srq, qrdma_srq, ibsrq),
	INIT_RDMA_OBJ_SIZE(ib_ucontext, qrdma_ucontext, ibucontext),
};

static int qrdma_ib_register(struct qrdma_dev *dev)
{
	struct ib_device *ibdev = &dev->ibdev;
	int err;

	ibdev->node_type = RDMA_NODE_IB_CA;
	ibdev->phys_port_cnt = 1;
	ibdev->num_comp_vectors = max(dev->num_vectors - 1, 1);
	ibdev->node_guid = dev->attr.node_guid;
	ibdev->local_dma_lkey = QRDMA_LOCAL_DMA_LKEY;
	ibdev->dev.parent = &dev->pdev->dev;
	ib_set_device_ops(ibdev, &qrdma_dev_ops);

	/* ib_core fills the RoCE GID table from the netdev's addresses. */
	err = ib_device_set_netdev(ibdev, dev->netdev, QRDMA_PORT);
	if (err)
		return err;

	err = ib_register_device(ibdev, "qrdma%d", &dev->pdev->dev);
	if (err)
		/*
		 * The port holds a reference on the netdev until the
		 * ib_device is freed, which is after the netdev is
		 * unregistered: unregister_netdev() would wait for ever.
		 */
		ib_device_set_netdev(ibdev, NULL, QRDMA_PORT);
	return err;
}

static int qrdma_check_device(struct qrdma_dev *dev)
{
	struct device *pdev = &dev->pdev->dev;
	u32 version;

	version = readl(dev->regs + QRDMA_REG_VERSION);
	if (QRDMA_VERSION_GET_MAJOR(version) != QRDMA_VERSION_MAJOR) {
		dev_err(pdev, "unsupported interface version %u.%u\n",
			QRDMA_VERSION_GET_MAJOR(version),
			QRDMA_VERSION_GET_MINOR(version));
		return -ENODEV;
	}

	dev->caps = readq(dev->regs + QRDMA_REG_CAPS);
	if (!(dev->caps & QRDMA_CAPS_CMDQ) || !(dev->caps & QRDMA_CAPS_ETH)) {
		dev_err(pdev, "device lacks the command queue or Ethernet function (caps %#llx)\n",
			dev->caps);
		return -ENODEV;
	}
	dev->data_path = dev->caps & QRDMA_CAPS_DATA_PATH;
	dev_info(pdev, "interface %u.%u, caps %#llx%s\n",
		 QRDMA_VERSION_GET_MAJOR(version),
		 QRDMA_VERSION_GET_MINOR(version), dev->caps,
		 dev->data_path ? "" : " (no data path: work requests are not executed)");
	return 0;
}

/* What the verbs rely on; a device that says otherwise is not used. */
static int qrdma_check_attrs(struct qrdma_dev *dev)
{
	struct qrdma_dev_attr *attr = &dev->attr;

	if (!dev->port.gid_tbl_len || !attr->max_cqe || !attr->max_qp_wr ||
	    !attr->max_srq_wr || !attr->max_mr_pages ||
	    attr->max_send_sge > QRDMA_MAX_SEND_SGE ||
	    attr->max_recv_sge > QRDMA_MAX_RECV_SGE ||
	    attr->max_srq_sge > QRDMA_MAX_RECV_SGE ||
	    attr->max_inline_data > QRDMA_MAX_INLINE) {
		dev_err(&dev->pdev->dev, "device reports inconsistent limits\n");
		return -EIO;
	}
	return 0;
}

/*
 * The PCI function and the command queue: everything up to the device
 * answering commands.  qrdma_remove_device() undoes it.
 */
static struct qrdma_dev *qrdma_probe_device(struct pci_dev *pdev)
{
	struct qrdma_dev *dev;
	int err;

	err = pci_enable_device_mem(pdev);
	if (err)
		return ERR_PTR(dev_err_probe(&pdev->dev, err,
					     "cannot enable device\n"));
	pci_set_master(pdev);

	err = dma_set_mask_and_coherent(&pdev->dev, DMA_BIT_MASK(64));
	if (err) {
		dev_err(&pdev->dev, "cannot set the DMA mask: %d\n", err);
		goto err_disable_device;
	}
	/*
	 * MR page lists take pages of any size the device supports, and
	 * ib_umem builds them from the DMA segments: do not cut those at
	 * the default 64 KiB.
	 */
	dma_set_max_seg_size(&pdev->dev, UINT_MAX);

	err = pci_request_selected_regions(pdev,
					   BIT(QRDMA_REG_BAR) | BIT(QRDMA_DB_BAR),
					   DRV_MODULE_NAME);
	if (err) {
		dev_err(&pdev->dev, "cannot claim the BARs: %d\n", err);
		goto err_disable_device;
	}

	dev = ib_alloc_device(qrdma_dev, ibdev);
	if (!dev) {
		err = -ENOMEM;
		goto err_release_regions;
	}
	dev->pdev = pdev;
	pci_set_drvdata(pdev, dev);
	xa_init(&dev->qp_xa);
	xa_init(&dev->cq_xa);
	xa_init(&dev->srq_xa);
	INIT_WORK(&dev->async_work, qrdma_async_work);
	INIT_DELAYED_WORK(&dev->link_work, qrdma_link_work);
	INIT_WORK(&dev->fatal_work, qrdma_fatal_work);
	mutex_init(&dev->event_lock);
	dev->port_state = IB_PORT_DOWN;

	dev->regs = pci_iomap(pdev, QRDMA_REG_BAR, QRDMA_REG_BAR_SIZE);
	if (!dev->regs) {
		err = -ENOMEM;
		goto err_dealloc_ibdev;
	}

	err = qrdma_check_device(dev);
	if (err)
		goto err_unmap_regs;
	/* Whatever an earlier driver left, start from power-on state. */
	err = qrdma_dev_reset(dev);
	if (err)
		goto err_unmap_regs;

	dev->db_bar_addr = pci_resource_start(pdev, QRDMA_DB_BAR);
	dev->db_pages = pci_resource_len(pdev, QRDMA_DB_BAR) /
			QRDMA_DB_PAGE_SIZE;
	/* Doorbells are single 64-bit writes: uncached, never combined. */
	if (dev->db_pages)
		dev->kdb = pci_iomap_range(pdev, QRDMA_DB_BAR, 0,
					   QRDMA_DB_PAGE_SIZE);
	if (!dev->kdb) {
		dev_err(&pdev->dev, "cannot map the doorbell BAR\n");
		err = -ENOMEM;
		goto err_unmap_regs;
	}

	err = qrdma_alloc_vectors(dev);
	if (err)
		goto err_unmap_db;

	err = qrdma_cmdq_init(&dev->cmdq, &pdev->dev, dev->regs,
			      cmd_timeout_ms);
	if (err)
		goto err_free_vectors;
	dev->cmdq.dead = qrdma_cmdq_dead;

	/* The handler reaps the command queue: it exists from now on. */
	snprintf(dev->admin_irq_name, sizeof(dev->admin_irq_name),
		 DRV_MODULE_NAME "-admin@pci:%s", pci_name(pdev));
	err = request_irq(pci_irq_vector(pdev, 0), qrdma_admin_irq, 0,
			  dev->admin_irq_name, dev);
	if (err)
		goto err_destroy_cmdq;

	return dev;

err_destroy_cmdq:
	/* Resets the device: no DMA into the rings freed after it. */
	qrdma_cmdq_disable(&dev->cmdq);
	cancel_work_sync(&dev->fatal_work);
	qrdma_cmdq_destroy(&dev->cmdq);
err_free_vectors:
	pci_free_irq_vectors(pdev);
err_unmap_db:
	pci_iounmap(pdev, dev->kdb);
err_unmap_regs:
	pci_iounmap(pdev, dev->regs);
err_dealloc_ibdev:
	ib_dealloc_device(&dev->ibdev);
err_release_regions:
	pci_release_selected_regions(pdev,
				     BIT(QRDMA_REG_BAR) | BIT(QRDMA_DB_BAR));
err_disable_device:
	pci_disable_device(pdev);
	return ERR_PTR(err);
}

static void qrdma_remove_device(struct qrdma_dev *dev)
{
	struct pci_dev *pdev = dev->pdev;

	/* The device forgets everything and stops all DMA. */
	qrdma_cmdq_disable(&dev->cmdq);
	/* No handler reaps the command queue after this. */
	free_irq(pci_irq_vector(pdev, 0), dev);
	cancel_work_sync(&dev->fatal_work);
	qrdma_cmdq_destroy(&dev->cmdq);
	pci_free_irq_vectors(pdev);
	pci_iounmap(pdev, dev->kdb);
	pci_iounmap(pdev, dev->regs);
	WARN_ON(!xa_empty(&dev->qp_xa) || !xa_empty(&dev->cq_xa) ||
		!xa_empty(&dev->srq_xa));
	xa_destroy(&dev->qp_xa);
	xa_destroy(&dev->cq_xa);
	xa_destroy(&dev->srq_xa);
	ib_dealloc_device(&dev->ibdev);
	pci_release_selected_regions(pdev,
				     BIT(QRDMA_REG_BAR) | BIT(QRDMA_DB_BAR));
	pci_disable_device(pdev);
}

/*
 * What the device is, its Ethernet function, its event queues and the
 * ib_device on them.  qrdma_ib_device_remove() undoes it.
 */
static int qrdma_ib_device_add(struct qrdma_dev *dev)
{
	struct device *dmadev = &dev->pdev->dev;
	int err;

	err = qrdma_cmd_query_device(&dev->cmdq, &dev->attr);
	if (err) {
		dev_err(dmadev, "QUERY_DEVICE failed: %d\n", err);
		return err;
	}
	dev->attr.device_caps &= ~QRDMA_DEV_CAPS_KERNEL_LACKS;
	err = qrdma_cmd_query_port(&dev->cmdq, QRDMA_PORT, &dev->port);
	if (err) {
		dev_err(dmadev, "QUERY_PORT failed: %d\n", err);
		return err;
	}
	err = qrdma_check_attrs(dev);
	if (err)
		return err;

	dev->ci_pool = dma_pool_create("qrdma-cq-ci", dmadev,
				       sizeof(__le32), sizeof(__le32), 0);
	if (!dev->ci_pool)
		return -ENOMEM;

	/* The connection manager's MADs may be needed to reclaim memory. */
	dev->ah_wq = alloc_ordered_workqueue("qrdma-ah-%s", WQ_MEM_RECLAIM,
					     pci_name(dev->pdev));
	dev->ah_post_wq = alloc_workqueue("qrdma-ah-post-%s",
					  WQ_MEM_RECLAIM | WQ_UNBOUND, 0,
					  pci_name(dev->pdev));
	if (!dev->ah_wq || !dev->ah_post_wq) {
		err = -ENOMEM;
		goto err_destroy_wqs;
	}

	err = qrdma_eth_init(dev);
	if (err)
		goto err_destroy_wqs;

	/*
	 * Before the ib_device: the port's state is known, and its changes
	 * kept for ib_core (port_event_pending), while it registers.
	 */
	err = qrdma_netdev_notifier_register(dev);
	if (err) {
		dev_err(dmadev, "cannot register the netdev notifier: %d\n",
			err);
		goto err_fini_eth;
	}

	if (dev->data_path) {
		err = qrdma_eqs_init(dev);
		if (err)
			goto err_unregister_notifier;
	}

	err = qrdma_ib_register(dev);
	if (err) {
		dev_err(dmadev, "cannot register the RDMA device: %d\n", err);
		goto err_fini_eqs;
	}

	qrdma_ib_set_live(dev);
	/* A device lost while it registered is reported now. */
	if (!qrdma_cmdq_running(&dev->cmdq))
		qrdma_report_fatal(dev);
	schedule_delayed_work(&dev->link_work, 0);
	return 0;

err_fini_eqs:
	qrdma_eqs_fini(dev);
err_unregister_notifier:
	qrdma_netdev_notifier_unregister(dev);
err_fini_eth:
	/* May stop an open netdev: the port hears of it no more. */
	qrdma_eth_fini(dev);
err_destroy_wqs:
	if (dev->ah_post_wq)
		destroy_workqueue(dev->ah_post_wq);
	if (dev->ah_wq)
		destroy_workqueue(dev->ah_wq);
	dma_pool_destroy(dev->ci_pool);
	return err;
}

static void qrdma_ib_device_remove(struct qrdma_dev *dev)
{
	/*
	 * The notifier hangs on the netdev, which goes below; what the
	 * netdev does from now on is no news to a port going away.
	 */
	qrdma_netdev_notifier_unregister(dev);
	cancel_delayed_work_sync(&dev->link_work);
	/*
	 * From now on no event reaches ib_core: the async work would
	 * report DEVICE_FATAL for an ib_device that is gone.  Those
	 * reported before, unregistering flushes.
	 */
	mutex_lock(&dev->event_lock);
	dev->ib_live = false;
	mutex_unlock(&dev->event_lock);
	/* Destroys every object, the consumers' and user space's. */
	ib_unregister_device(&dev->ibdev);
	/* Idle: each PD waited for the destroys of its AHs. */
	destroy_workqueue(dev->ah_post_wq);
	destroy_workqueue(dev->ah_wq);
	qrdma_eqs_fini(dev);
	qrdma_eth_fini(dev);
	dma_pool_destroy(dev->ci_pool);
}

static int qrdma_probe(struct pci_dev *pdev, const struct pci_device_id *ent)
{
	struct qrdma_dev *dev;
	int err;

	dev = qrdma_probe_device(pdev);
	if (IS_ERR(dev))
		return PTR_ERR(dev);

	err = qrdma_ib_device_add(dev);
	if (err)
		goto err_remove_device;

	return 0;

err_remove_device:
	qrdma_remove_device(dev);
	return err;
}

static void qrdma_remove(struct pci_dev *pdev)
{
	struct qrdma_dev *dev = pci_get_drvdata(pdev);

	qrdma_ib_device_remove(dev);
	qrdma_remove_device(dev);
}

/*
 * Stop all DMA before the next kernel (kexec) reuses the memory, and
 * leave nothing that waits for the device: the ib_device stays
 * registered, and its consumers may still call it while the system goes
 * down.
 */
static void qrdma_shutdown(struct pci_dev *pdev)
{
	struct qrdma_dev *dev = pci_get_drvdata(pdev);
	int i;

	cancel_delayed_work_sync(&dev->link_work);
	netif_device_detach(dev->netdev);
	/*
	 * Resets the device, fails the commands in flight and every later
	 * one at once, as for a device that is lost: destroys succeed.
	 */
	qrdma_cmdq_disable(&dev->cmdq);
	/* A reset device raises no interrupt; let those under way end. */
	for (i = 0; i < dev->num_vectors; i++)
		synchronize_irq(pci_irq_vector(pdev, i));
	pci_clear_master(pdev);
}

static struct pci_driver qrdma_pci_driver = {
	.name = DRV_MODULE_NAME,
	.id_table = qrdma_pci_tbl,
	.probe = qrdma_probe,
	.remove = qrdma_remove,
	.shutdown = qrdma_shutdown,
};

module_pci_driver(qrdma_pci_driver);
