// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Faults in qrdma's probe and shutdown, for tests/vm/guest-faults.sh.
 *
 * The guest kernel (Debian's) has no CONFIG_FUNCTION_ERROR_INJECTION, so
 * fail_function cannot make a call fail; this module does what it does,
 * with a kretprobe on qrdma_query_port(), the verb ib_core calls while it
 * registers the device (ib_cache_setup_one()), to stand for the device
 * failing QUERY_PORT or its port coming up at that moment:
 *
 *   fail_query_port=N  the next N calls return -EIO: ib_register_device()
 *                      fails and the probe must unwind
 *   hold_query_port=1  the next call returns only once the port's netdev
 *                      is up with carrier (at most 10 s), so that the port
 *                      comes up after ib_core read it DOWN; the parameter
 *                      holding is 1 while it waits
 *   shutdown=BDF       calls the PCI shutdown of qrdma's function BDF at
 *                      load, as reboot and kexec do
 *
 * and shows ib_core's cached state of port 1 of ibdev= in the parameter
 * cached_port_state (the enum ib_port_state value).  Messages go to the
 * kernel log prefixed "qrdma-probe-test: ".
 */
#define pr_fmt(fmt) "qrdma-probe-test: " fmt

#include <linux/delay.h>
#include <linux/kprobes.h>
#include <linux/module.h>
#include <linux/netdevice.h>
#include <linux/pci.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_verbs.h>

#include "qrdma_config.h"

static char *ibdev = "qrdma0";
module_param(ibdev, charp, 0444);
MODULE_PARM_DESC(ibdev, "the RDMA device cached_port_state reads");

static atomic_t fail_query_port = ATOMIC_INIT(0);
static int fail_query_port_init;
module_param_named(fail_query_port, fail_query_port_init, int, 0444);
MODULE_PARM_DESC(fail_query_port, "fail this many qrdma_query_port() calls with -EIO");

static bool hold_query_port;
module_param(hold_query_port, bool, 0444);
MODULE_PARM_DESC(hold_query_port, "hold the next qrdma_query_port() until the port's netdev is up");
static atomic_t hold_armed = ATOMIC_INIT(0);
static int holding;
module_param(holding, int, 0444);
MODULE_PARM_DESC(holding, "1 while a qrdma_query_port() is held, 2 after");

static char *shutdown = "";
module_param(shutdown, charp, 0444);
MODULE_PARM_DESC(shutdown, "call the PCI shutdown of this qrdma function at load");

#define PT_HOLD_MS 10000

/*
 * The ib_device named ibdev, held: found through the netdevs, as no
 * lookup by name is exported on every kernel (7.x has none).
 */
static struct ib_device *pt_ibdev_get(void)
{
	struct ib_device *dev, *found = NULL;
	struct net_device *ndev;

	rcu_read_lock();
	for_each_netdev_rcu(&init_net, ndev) {
		dev = ib_device_get_by_netdev(ndev, RDMA_DRIVER_UNKNOWN);
		if (!dev)
			continue;
		if (!strcmp(dev_name(&dev->dev), ibdev)) {
			found = dev;
			break;
		}
		ib_device_put(dev);
	}
	rcu_read_unlock();
	return found;
}

static int pt_get_cached_state(char *buf, const struct kernel_param *kp)
{
	enum ib_port_state state;
	struct ib_device *dev;
	int err;

	dev = pt_ibdev_get();
	if (!dev)
		return -ENODEV;
	err = ib_get_cached_port_state(dev, 1, &state);
	ib_device_put(dev);
	if (err)
		return err;
	return sysfs_emit(buf, "%d\n", state);
}

static const struct kernel_param_ops pt_cached_state_ops = {
	.get = pt_get_cached_state,
};
module_param_cb(cached_port_state, &pt_cached_state_ops, NULL, 0444);
MODULE_PARM_DESC(cached_port_state, "ib_core's cached state of port 1 of ibdev");

/* qrdma_query_port(struct ib_device *ibdev, u32 port, ...) */
struct pt_call {
	struct ib_device *dev;
};

static int pt_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct pt_call *call = (struct pt_call *)ri->data;

	call->dev = (struct ib_device *)regs->di;
	return 0;
}

/* The netdev of the port, held. */
static struct net_device *pt_port_netdev(struct ib_device *dev)
{
#ifdef QRDMA_HAVE_IB_DEVICE_GET_NETDEV
	return ib_device_get_netdev(dev, 1);
#else
	struct net_device *ndev, *found = NULL;

	/* Not exported yet: qrdma's netdev is the one of its PCI function. */
	rcu_read_lock();
	for_each_netdev_rcu(&init_net, ndev) {
		if (ndev->dev.parent == dev->dev.parent) {
			dev_hold(ndev);
			found = ndev;
			break;
		}
	}
	rcu_read_unlock();
	return found;
#endif
}

/* Until the netdev of the port is up with carrier; kprobe context. */
static void pt_hold(struct ib_device *dev)
{
	struct net_device *ndev = pt_port_netdev(dev);
	int ms;

	if (!ndev) {
		pr_info("hold: the port has no netdev\n");
		return;
	}
	pr_info("hold: %s is %s as ib_core reads the port\n",
		netdev_name(ndev), netif_running(ndev) ? "up" : "down");
	/* The test brings the netdev up once it sees this. */
	WRITE_ONCE(holding, 1);
	for (ms = 0; ms < PT_HOLD_MS; ms++) {
		if (netif_running(ndev) && netif_carrier_ok(ndev))
			break;
		mdelay(1);
	}
	WRITE_ONCE(holding, 2);
	pr_info("hold: %s is %s after %d ms\n", netdev_name(ndev),
		ms < PT_HOLD_MS ? "up" : "still down", ms);
	dev_put(ndev);
}

static int pt_return(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct pt_call *call = (struct pt_call *)ri->data;

	if (atomic_add_unless(&fail_query_port, -1, 0)) {
		pr_info("qrdma_query_port() fails with -EIO\n");
		regs_set_return_value(regs, -EIO);
		return 0;
	}
	if (atomic_cmpxchg(&hold_armed, 1, 0) == 1)
		pt_hold(call->dev);
	return 0;
}

static struct kretprobe pt_probe = {
	.kp.symbol_name = "qrdma_query_port",
	.entry_handler = pt_entry,
	.handler = pt_return,
	.data_size = sizeof(struct pt_call),
	.maxactive = 16,
};

static bool pt_probe_registered;

static int pt_shutdown(const char *bdf)
{
	struct pci_driver *drv;
	struct pci_dev *pdev;
	struct device *d;
	int err = 0;

	d = bus_find_device_by_name(&pci_bus_type, NULL, bdf);
	if (!d) {
		pr_err("no PCI function %s\n", bdf);
		return -ENODEV;
	}
	pdev = to_pci_dev(d);
	device_lock(d);
	drv = d->driver ? to_pci_driver(d->driver) : NULL;
	if (!drv || strcmp(drv->name, "qrdma") || !drv->shutdown) {
		pr_err("%s is not bound to qrdma\n", bdf);
		err = -ENODEV;
	} else {
		drv->shutdown(pdev);
		pr_info("%s: shut down\n", bdf);
	}
	device_unlock(d);
	put_device(d);
	return err;
}

static int __init pt_init(void)
{
	int err;

	if (*shutdown)
		return pt_shutdown(shutdown);

	atomic_set(&fail_query_port, fail_query_port_init);
	atomic_set(&hold_armed, hold_query_port);
	if (!fail_query_port_init && !hold_query_port)
		return 0;
	err = register_kretprobe(&pt_probe);
	if (err) {
		pr_err("cannot probe qrdma_query_port(): %d (is qrdma loaded?)\n",
		       err);
		return err;
	}
	pt_probe_registered = true;
	return 0;
}

static void __exit pt_exit(void)
{
	if (pt_probe_registered)
		unregister_kretprobe(&pt_probe);
}

module_init(pt_init);
module_exit(pt_exit);

MODULE_DESCRIPTION("Faults in qrdma's probe and shutdown, for its tests");
MODULE_LICENSE("Dual BSD/GPL");
