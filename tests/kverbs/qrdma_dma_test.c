// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * DMA to bus addresses the guest never mapped is the guest's error, never
 * an access to memory it does not own.  A kernel ULP can name any bus
 * address in a work request; this module does, on RC QPs connected to
 * themselves:
 *
 *   - an RDMA WRITE whose local SGE (the local DMA lkey) is an address
 *     never mapped;
 *   - an RDMA WRITE to an address never mapped, through the DMA MR's rkey;
 *   - a fast registration (IB_WR_REG_MR) of a page never mapped, after
 *     which the MR must still deregister;
 *   - behind an IOMMU, an RDMA WRITE from an address that was mapped and
 *     is unmapped again.
 *
 * Each must complete in error and leave the destination as it was, and
 * the device's guest_errors counter (its port hw_counters) must go up.
 * "Never mapped": an address far above the guest's RAM and below the
 * IOMMU's 39-bit address width, which the DMA API never hands out here.
 *
 * Results go to the kernel log as TAP, each line prefixed "qrdma-dma: ";
 * tests/vm/kernel-verbs.sh loads it and reads them.  Built by
 * scripts/build-driver against the guest kernel's headers.
 *
 *   insmod qrdma_dma_test.ko [ibdev=qrdma0] gid_index=N
 */
#define pr_fmt(fmt) "qrdma-dma: " fmt

#include <linux/bits.h>
#include <linux/delay.h>
#include <linux/dma-mapping.h>
#include <linux/etherdevice.h>
#include <linux/iommu.h>
#include <linux/module.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_verbs.h>

static char *ibdev = "qrdma0";
module_param(ibdev, charp, 0444);
MODULE_PARM_DESC(ibdev, "the RDMA device to test");

static int gid_index = -1;
module_param(gid_index, int, 0444);
MODULE_PARM_DESC(gid_index, "the port's RoCE v2 GID to connect the QPs over");

#define DT_PORT 1
#define DT_LEN 64
/* 256 GiB: no RAM of the guest, inside a 39-bit IOVA space, never mapped. */
#define DT_NEVER_MAPPED BIT_ULL(38)
#define DT_PATTERN 0xa5

static int tap_n, tap_failed;

static bool tap(bool ok, const char *what)
{
	pr_info("%sok %d - %s\n", ok ? "" : "not ", ++tap_n, what);
	if (!ok)
		tap_failed++;
	return ok;
}

static void tap_skip(const char *what, const char *why)
{
	pr_info("ok %d - %s # SKIP %s\n", ++tap_n, what, why);
}

struct dt_ctx {
	struct ib_device *dev;
	struct ib_pd *pd;
	struct ib_cq *cq;
	u8 *buf;
	u64 dma;
	struct rdma_hw_stats *stats;
	int guest_errors_index;
};

/* The device's guest_errors counter now, or -1. */
static s64 dt_guest_errors(struct dt_ctx *dt)
{
	int i = dt->guest_errors_index;

	if (i < 0 || dt->dev->ops.get_hw_stats(dt->dev, dt->stats, DT_PORT,
					       i) <= i)
		return -1;
	return dt->stats->value[i];
}

static int dt_stats_init(struct dt_ctx *dt)
{
	int i;

	dt->guest_errors_index = -1;
	if (!dt->dev->ops.alloc_hw_port_stats || !dt->dev->ops.get_hw_stats)
		return -EOPNOTSUPP;
	dt->stats = dt->dev->ops.alloc_hw_port_stats(dt->dev, DT_PORT);
	if (!dt->stats)
		return -ENOMEM;
	for (i = 0; i < dt->stats->num_counters; i++)
		if (!strcmp(dt->stats->descs[i].name, "guest_errors"))
			dt->guest_errors_index = i;
	return dt->guest_errors_index < 0 ? -ENOENT : 0;
}

/* An RC QP in RTS, its own peer, on the context's CQ. */
static struct ib_qp *dt_qp(struct dt_ctx *dt)
{
	struct ib_qp_init_attr ia = {
		.send_cq = dt->cq,
		.recv_cq = dt->cq,
		.qp_type = IB_QPT_RC,
		.sq_sig_type = IB_SIGNAL_ALL_WR,
		.cap = { .max_send_wr = 4, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ib_qp_attr a = {
		.qp_state = IB_QPS_INIT,
		.port_num = DT_PORT,
		.qp_access_flags = IB_ACCESS_LOCAL_WRITE |
				   IB_ACCESS_REMOTE_WRITE,
	};
	const struct ib_gid_attr *sgid;
	struct net_device *ndev;
	union ib_gid dgid;
	struct ib_qp *qp;
	int err;

	qp = ib_create_qp(dt->pd, &ia);
	if (IS_ERR(qp))
		return qp;
	err = ib_modify_qp(qp, &a, IB_QP_STATE | IB_QP_PKEY_INDEX |
			   IB_QP_PORT | IB_QP_ACCESS_FLAGS);
	sgid = err ? ERR_PTR(err) :
	       rdma_get_gid_attr(dt->dev, DT_PORT, gid_index);
	if (IS_ERR(sgid)) {
		err = PTR_ERR(sgid);
		goto err_destroy;
	}
	memset(&a, 0, sizeof(a));
	a.qp_state = IB_QPS_RTR;
	a.path_mtu = IB_MTU_1024;
	a.dest_qp_num = qp->qp_num;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.type = rdma_ah_find_type(dt->dev, DT_PORT);
	rdma_ah_set_port_num(&a.ah_attr, DT_PORT);
	dgid = sgid->gid;
	rdma_ah_set_grh(&a.ah_attr, &dgid, 0, gid_index, 64, 0);
	rcu_read_lock();
	ndev = rdma_read_gid_attr_ndev_rcu(sgid);
	if (!IS_ERR(ndev))
		ether_addr_copy(a.ah_attr.roce.dmac, ndev->dev_addr);
	rcu_read_unlock();
	err = IS_ERR(ndev) ? PTR_ERR(ndev) :
	      ib_modify_qp(qp, &a, IB_QP_STATE | IB_QP_AV | IB_QP_PATH_MTU |
			   IB_QP_DEST_QPN | IB_QP_RQ_PSN |
			   IB_QP_MAX_DEST_RD_ATOMIC | IB_QP_MIN_RNR_TIMER);
	rdma_put_gid_attr(sgid);
	if (err)
		goto err_destroy;
	memset(&a, 0, sizeof(a));
	a.qp_state = IB_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	err = ib_modify_qp(qp, &a, IB_QP_STATE | IB_QP_TIMEOUT |
			   IB_QP_RETRY_CNT | IB_QP_RNR_RETRY | IB_QP_SQ_PSN |
			   IB_QP_MAX_QP_RD_ATOMIC);
	if (err)
		goto err_destroy;
	return qp;

err_destroy:
	ib_destroy_qp(qp);
	return ERR_PTR(err);
}

/* The status of the one completion of a signaled WR, or -1 after 5 s. */
static int dt_wait(struct dt_ctx *dt)
{
	struct ib_wc wc;
	int i;

	for (i = 0; i < 500; i++) {
		if (ib_poll_cq(dt->cq, 1, &wc) == 1)
			return wc.status;
		usleep_range(10000, 20000);
	}
	return -1;
}

/* Post one signaled WR and wait for its completion's status. */
static int dt_post(struct dt_ctx *dt, struct ib_qp *qp,
		   const struct ib_send_wr *wr)
{
	const struct ib_send_wr *bad;
	int err;

	err = ib_post_send(qp, wr, &bad);
	if (err) {
		pr_info("# ib_post_send: %d\n", err);
		return -1;
	}
	return dt_wait(dt);
}

/* An RDMA WRITE of DT_LEN bytes from laddr to raddr on qp. */
static int dt_write_on(struct dt_ctx *dt, struct ib_qp *qp, u64 laddr,
		       u64 raddr)
{
	struct ib_sge sge = {
		.addr = laddr,
		.length = DT_LEN,
		.lkey = dt->pd->local_dma_lkey,
	};
	struct ib_rdma_wr wr = {
		.wr = {
			.sg_list = &sge,
			.num_sge = 1,
			.opcode = IB_WR_RDMA_WRITE,
			.send_flags = IB_SEND_SIGNALED,
		},
		.remote_addr = raddr,
		.rkey = dt->pd->unsafe_global_rkey,
	};
	int status;

	status = dt_post(dt, qp, &wr.wr);
	pr_info("# RDMA WRITE %#llx -> %#llx: %s\n", laddr, raddr,
		status < 0 ? "no completion" : ib_wc_status_msg(status));
	return status;
}

/* The same on a fresh QP. */
static int dt_write(struct dt_ctx *dt, u64 laddr, u64 raddr)
{
	struct ib_qp *qp;
	int status;

	qp = dt_qp(dt);
	if (IS_ERR(qp)) {
		pr_info("# a QP connected to itself: %ld\n", PTR_ERR(qp));
		return -1;
	}
	status = dt_write_on(dt, qp, laddr, raddr);
	ib_destroy_qp(qp);
	return status;
}

/* The destination half of the buffer still holds the pattern. */
static bool dt_untouched(struct dt_ctx *dt)
{
	return !memchr_inv(dt->buf + PAGE_SIZE, DT_PATTERN, DT_LEN);
}

static bool dt_behind_iommu(struct dt_ctx *dt)
{
	struct iommu_domain *dom = iommu_get_domain_for_dev(dt->dev->dma_device);

	return dom && (dom->type & __IOMMU_DOMAIN_DMA_API);
}

/* The checks of a refused write; the destination if it is the buffer. */
static void dt_check(struct dt_ctx *dt, int status, s64 errors0,
		     const char *what, bool dst_is_buf)
{
	char line[160];
	s64 errors = dt_guest_errors(dt);

	pr_info("# guest_errors %lld -> %lld\n", errors0, errors);
	snprintf(line, sizeof(line), "%s: completes in error", what);
	tap(status > 0, line);
	if (dst_is_buf) {
		snprintf(line, sizeof(line),
			 "%s: the destination is untouched", what);
		tap(dt_untouched(dt), line);
	}
	snprintf(line, sizeof(line), "%s: guest_errors goes up", what);
	tap(errors0 >= 0 && errors > errors0, line);
}

static void dt_write_never_mapped(struct dt_ctx *dt)
{
	s64 errors0 = dt_guest_errors(dt);
	int status;

	status = dt_write(dt, DT_NEVER_MAPPED, dt->dma + PAGE_SIZE);
	dt_check(dt, status, errors0,
		 "RDMA WRITE from an address never mapped (local DMA lkey)",
		 true);

	errors0 = dt_guest_errors(dt);
	status = dt_write(dt, dt->dma, DT_NEVER_MAPPED);
	dt_check(dt, status, errors0,
		 "RDMA WRITE to an address never mapped (DMA MR rkey)", false);
}

/* IB_WR_REG_MR of a page never mapped, then the MR's deregistration. */
static void dt_reg_mr_never_mapped(struct dt_ctx *dt)
{
	struct ib_reg_wr wr = {
		.wr = {
			.opcode = IB_WR_REG_MR,
			.send_flags = IB_SEND_SIGNALED,
		},
		.access = IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE,
	};
	struct scatterlist sg;
	struct ib_qp *qp;
	struct ib_mr *mr;
	s64 errors0;
	int n, status = -1, err;

	mr = ib_alloc_mr(dt->pd, IB_MR_TYPE_MEM_REG, 1);
	if (!tap(!IS_ERR(mr), "REG_MR of a page never mapped: an MR for fast registration"))
		return;
	sg_init_table(&sg, 1);
	sg_dma_address(&sg) = DT_NEVER_MAPPED;
	sg_dma_len(&sg) = PAGE_SIZE;
	n = ib_map_mr_sg(mr, &sg, 1, NULL, PAGE_SIZE);
	qp = n == 1 ? dt_qp(dt) : ERR_PTR(-EINVAL);
	errors0 = dt_guest_errors(dt);
	if (!IS_ERR(qp)) {
		/* As a ULP does: a new key for every registration. */
		ib_update_fast_reg_key(mr, ib_inc_rkey(mr->rkey));
		wr.mr = mr;
		wr.key = mr->rkey;
		status = dt_post(dt, qp, &wr.wr);
		ib_destroy_qp(qp);
	}
	pr_info("# ib_map_mr_sg %d, REG_MR %s, guest_errors %lld -> %lld\n",
		n, status < 0 ? "no completion" : ib_wc_status_msg(status),
		errors0, dt_guest_errors(dt));
	tap(status > 0, "REG_MR of a page never mapped: completes in error");
	tap(errors0 >= 0 && dt_guest_errors(dt) > errors0,
	    "REG_MR of a page never mapped: guest_errors goes up");
	err = ib_dereg_mr(mr);
	pr_info("# ib_dereg_mr: %d\n", err);
	tap(!err, "REG_MR of a page never mapped: the MR, its registration failed, deregisters");
}

/*
 * Behind an IOMMU: an address mapped, unmapped again, then used.  The QP
 * is made first: its rings would take the freed address again.
 */
static void dt_write_unmapped(struct dt_ctx *dt)
{
	const char *what = "RDMA WRITE from an address unmapped after use";
	struct device *dma_dev = dt->dev->dma_device;
	struct ib_qp *qp;
	s64 errors0;
	dma_addr_t gone;
	void *page;
	int status;

	if (!dt_behind_iommu(dt)) {
		tap_skip(what, "no IOMMU translates the device's DMA");
		return;
	}
	page = (void *)get_zeroed_page(GFP_KERNEL);
	qp = page ? dt_qp(dt) : ERR_PTR(-ENOMEM);
	if (IS_ERR(qp)) {
		pr_info("# a page and a QP: %ld\n", PTR_ERR(qp));
		tap(false, what);
		goto free_page;
	}
	gone = dma_map_single(dma_dev, page, PAGE_SIZE, DMA_TO_DEVICE);
	if (dma_mapping_error(dma_dev, gone)) {
		tap(false, what);
		goto destroy_qp;
	}
	dma_unmap_single(dma_dev, gone, PAGE_SIZE, DMA_TO_DEVICE);
	errors0 = dt_guest_errors(dt);
	status = dt_write_on(dt, qp, gone, dt->dma + PAGE_SIZE);
	dt_check(dt, status, errors0, what, true);
destroy_qp:
	ib_destroy_qp(qp);
free_page:
	free_page((unsigned long)page);
}

static int dt_run(struct ib_device *dev)
{
	struct dt_ctx *dt;
	int err;

	dt = kzalloc(sizeof(*dt), GFP_KERNEL);
	if (!dt)
		return -ENOMEM;
	dt->dev = dev;
	err = dt_stats_init(dt);
	if (err)
		goto free_stats;
	/* The writes' remote side: the DMA MR, remote access through it. */
	dt->pd = ib_alloc_pd(dev, IB_PD_UNSAFE_GLOBAL_RKEY);
	if (IS_ERR(dt->pd)) {
		err = PTR_ERR(dt->pd);
		goto free_stats;
	}
	dt->cq = ib_alloc_cq(dev, dt, 8, 0, IB_POLL_DIRECT);
	if (IS_ERR(dt->cq)) {
		err = PTR_ERR(dt->cq);
		goto dealloc_pd;
	}
	/* Source in the first page, destination in the second. */
	dt->buf = kmalloc(2 * PAGE_SIZE, GFP_KERNEL);
	if (!dt->buf) {
		err = -ENOMEM;
		goto free_cq;
	}
	memset(dt->buf, DT_PATTERN, 2 * PAGE_SIZE);
	dt->dma = ib_dma_map_single(dev, dt->buf, 2 * PAGE_SIZE,
				    DMA_BIDIRECTIONAL);
	if (ib_dma_mapping_error(dev, dt->dma)) {
		err = -ENOMEM;
		goto free_buf;
	}
	pr_info("# DMA through an IOMMU: %s; buffer at bus address %#llx\n",
		dt_behind_iommu(dt) ? "yes" : "no", dt->dma);

	/* A good write first: what the failures are measured against. */
	tap(dt_write(dt, dt->dma, dt->dma + PAGE_SIZE) == IB_WC_SUCCESS,
	    "an RDMA WRITE between mapped addresses succeeds");
	dt_write_never_mapped(dt);
	dt_reg_mr_never_mapped(dt);
	dt_write_unmapped(dt);

	ib_dma_unmap_single(dev, dt->dma, 2 * PAGE_SIZE, DMA_BIDIRECTIONAL);
free_buf:
	kfree(dt->buf);
free_cq:
	ib_free_cq(dt->cq);
dealloc_pd:
	ib_dealloc_pd(dt->pd);
free_stats:
	if (dt->stats)
		rdma_free_hw_stats_struct(dt->stats);
	kfree(dt);
	return err;
}

static bool dt_tested;

static int dt_add_one(struct ib_device *dev)
{
	int err;

	if (strcmp(dev_name(&dev->dev), ibdev))
		return -EOPNOTSUPP;
	dt_tested = true;
	err = dt_run(dev);
	if (err) {
		pr_info("# setting up: %d\n", err);
		tap(false, "counters, PD, CQ and buffer for the tests");
	}
	pr_info("1..%d\n", tap_n);
	pr_info("# %d failed\n", tap_failed);
	return 0;
}

static void dt_remove_one(struct ib_device *dev, void *client_data)
{
}

static struct ib_client dt_client = {
	.name = "qrdma-dma-test",
	.add = dt_add_one,
	.remove = dt_remove_one,
};

static int __init dt_init(void)
{
	int err;

	if (gid_index < 0) {
		pr_err("gid_index=N is required\n");
		return -EINVAL;
	}
	err = ib_register_client(&dt_client);
	if (err)
		return err;
	if (!dt_tested) {
		ib_unregister_client(&dt_client);
		pr_err("no RDMA device %s\n", ibdev);
		return -ENODEV;
	}
	return 0;
}

static void __exit dt_exit(void)
{
	ib_unregister_client(&dt_client);
}

module_init(dt_init);
module_exit(dt_exit);

MODULE_DESCRIPTION("qrdma: DMA to addresses never mapped is a guest error");
MODULE_LICENSE("Dual BSD/GPL");
