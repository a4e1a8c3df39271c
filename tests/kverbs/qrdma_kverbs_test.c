// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Kernel verbs on a qrdma device, used the way a kernel ULP uses them:
 * S38 for kernel posts (ib_post_recv and ib_post_send on a full queue, or
 * with more SGEs than the QP's cap: ENOMEM or EINVAL, bad_wr the first WR
 * not posted, the ones before it posted) and ib_drain_qp on a connected
 * RC QP, resizing a kernel SRQ with receives posted, resizing one CQ
 * from two threads at once, an event for the CQEs a resize moves when
 * the CQ is armed meanwhile, an AH created and destroyed under a
 * spinlock while the device is slow, and a kernel SRQ's entries coming
 * back when the receive CQEs of its QP are dropped unpolled.  The QPs talk to
 * themselves over the port's RoCE v2 GID.
 *
 * The module runs its tests when it finds the device (an ib_client) and
 * writes them to the kernel log as TAP, each line prefixed "qrdma-kverbs: ";
 * tests/vm/kernel-verbs.sh loads it and reads them.  Built by
 * scripts/build-driver against the guest kernel's headers.
 *
 *   insmod qrdma_kverbs_test.ko [ibdev=qrdma0] gid_index=N
 */
#define pr_fmt(fmt) "qrdma-kverbs: " fmt

#include <linux/completion.h>
#include <linux/dma-mapping.h>
#include <linux/etherdevice.h>
#include <linux/delay.h>
#include <linux/kprobes.h>
#include <linux/kthread.h>
#include <linux/module.h>
#include <linux/pci.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_verbs.h>

#include "qrdma_config.h"

static char *ibdev = "qrdma0";
module_param(ibdev, charp, 0444);
MODULE_PARM_DESC(ibdev, "the RDMA device to test");

static int gid_index = -1;
module_param(gid_index, int, 0444);
MODULE_PARM_DESC(gid_index, "the port's RoCE v2 GID to connect the QPs over");

#define KV_PORT 1
#define KV_BUF_SIZE 4096
/* What the QPs ask for; the caps they get back are what the tests use. */
#define KV_QP_WR 4
#define KV_PATTERN 0x716b766572627321ULL

static int tap_n, tap_failed;

static bool tap(bool ok, const char *what)
{
	pr_info("%sok %d - %s\n", ok ? "" : "not ", ++tap_n, what);
	if (!ok)
		tap_failed++;
	return ok;
}

struct kv_ctx {
	struct ib_device *dev;
	struct ib_pd *pd;
	struct ib_cq *cq;
	void *buf;
	u64 dma;
	u32 rkey;
	atomic_t done_ok;
	atomic_t done_flushed;
	atomic_t done_other;
	struct completion write_done;
	struct ib_cqe cqe;
	struct ib_cqe write_cqe;
};

static void kv_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct kv_ctx *kv = container_of(wc->wr_cqe, struct kv_ctx, cqe);

	if (wc->status == IB_WC_SUCCESS)
		atomic_inc(&kv->done_ok);
	else if (wc->status == IB_WC_WR_FLUSH_ERR)
		atomic_inc(&kv->done_flushed);
	else
		atomic_inc(&kv->done_other);
}

static void kv_write_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct kv_ctx *kv = container_of(wc->wr_cqe, struct kv_ctx, write_cqe);

	if (wc->status != IB_WC_SUCCESS) {
		pr_info("# the RDMA WRITE completed with %s\n",
			ib_wc_status_msg(wc->status));
		atomic_inc(&kv->done_other);
	}
	complete(&kv->write_done);
}

/* An RC QP of send_wr sends, on srq or with an RQ of its own. */
static struct ib_qp *kv_create_qp_on(struct kv_ctx *kv,
				     struct ib_qp_init_attr *ia,
				     struct ib_srq *srq, u32 send_wr)
{
	memset(ia, 0, sizeof(*ia));
	ia->send_cq = kv->cq;
	ia->recv_cq = kv->cq;
	ia->srq = srq;
	ia->qp_type = IB_QPT_RC;
	/* Unsignaled WRs keep their slots until a signaled one completes. */
	ia->sq_sig_type = IB_SIGNAL_REQ_WR;
	ia->cap.max_send_wr = send_wr;
	ia->cap.max_recv_wr = srq ? 0 : KV_QP_WR;
	ia->cap.max_send_sge = 1;
	ia->cap.max_recv_sge = srq ? 0 : 1;
	return ib_create_qp(kv->pd, ia);
}

static struct ib_qp *kv_create_qp(struct kv_ctx *kv,
				  struct ib_qp_init_attr *ia)
{
	return kv_create_qp_on(kv, ia, NULL, KV_QP_WR);
}

static int kv_to_init(struct ib_qp *qp)
{
	struct ib_qp_attr a = {
		.qp_state = IB_QPS_INIT,
		.port_num = KV_PORT,
		.qp_access_flags = IB_ACCESS_REMOTE_WRITE,
	};

	return ib_modify_qp(qp, &a, IB_QP_STATE | IB_QP_PKEY_INDEX |
			    IB_QP_PORT | IB_QP_ACCESS_FLAGS);
}

/*
 * INIT -> RTR -> RTS, the QP its own peer.  Kernel users hand ib_core a
 * resolved address: the destination MAC is the port netdev's own.
 */
static int kv_connect_self(struct kv_ctx *kv, struct ib_qp *qp)
{
	const struct ib_gid_attr *sgid;
	struct net_device *ndev;
	struct ib_qp_attr a = {};
	union ib_gid dgid;
	int err;

	sgid = rdma_get_gid_attr(kv->dev, KV_PORT, gid_index);
	if (IS_ERR(sgid))
		return PTR_ERR(sgid);

	a.qp_state = IB_QPS_RTR;
	a.path_mtu = IB_MTU_1024;
	a.dest_qp_num = qp->qp_num;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.type = rdma_ah_find_type(kv->dev, KV_PORT);
	rdma_ah_set_port_num(&a.ah_attr, KV_PORT);
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
		return err;

	memset(&a, 0, sizeof(a));
	a.qp_state = IB_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	return ib_modify_qp(qp, &a, IB_QP_STATE | IB_QP_TIMEOUT |
			    IB_QP_RETRY_CNT | IB_QP_RNR_RETRY | IB_QP_SQ_PSN |
			    IB_QP_MAX_QP_RD_ATOMIC);
}

/* n receives of 64 bytes each, chained. */
static void kv_recv_chain(struct kv_ctx *kv, struct ib_recv_wr *wr,
			  struct ib_sge *sge, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		sge[i].addr = kv->dma + 64 * (i % (KV_BUF_SIZE / 64));
		sge[i].length = 64;
		sge[i].lkey = kv->pd->local_dma_lkey;
		wr[i] = (struct ib_recv_wr) {
			.next = i + 1 < n ? &wr[i + 1] : NULL,
			.wr_cqe = &kv->cqe,
			.sg_list = &sge[i],
			.num_sge = 1,
		};
	}
}

/* n unsignaled 8-byte RDMA WRITEs within the buffer, chained. */
static void kv_write_chain(struct kv_ctx *kv, struct ib_rdma_wr *wr,
			   struct ib_sge *sge, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		sge[i].addr = kv->dma;
		sge[i].length = 8;
		sge[i].lkey = kv->pd->local_dma_lkey;
		wr[i] = (struct ib_rdma_wr) {
			.wr = {
				.next = i + 1 < n ? &wr[i + 1].wr : NULL,
				.wr_cqe = &kv->cqe,
				.sg_list = &sge[i],
				.num_sge = 1,
				.opcode = IB_WR_RDMA_WRITE,
			},
			.remote_addr = kv->dma + KV_BUF_SIZE / 2,
			.rkey = kv->rkey,
		};
	}
}

/* S38 on the receive queue of a QP in INIT. */
static void kv_s38_recv(struct kv_ctx *kv, struct ib_qp *qp,
			const struct ib_qp_cap *cap)
{
	int n = cap->max_recv_wr + 1, sges = cap->max_recv_sge + 1, err;
	const struct ib_recv_wr *bad;
	struct ib_recv_wr *wr;
	struct ib_sge *sge;

	wr = kcalloc(n, sizeof(*wr), GFP_KERNEL);
	sge = kcalloc(max(n, sges), sizeof(*sge), GFP_KERNEL);
	if (!wr || !sge) {
		tap(false, "S38: memory for the receive tests");
		goto free;
	}

	kv_recv_chain(kv, wr, sge, 1);
	wr[0].num_sge = sges;
	bad = NULL;
	err = ib_post_recv(qp, wr, &bad);
	pr_info("# a receive of %d SGEs (max_recv_sge %u): %d\n", sges,
		cap->max_recv_sge, err);
	tap((err == -EINVAL || err == -ENOMEM) && bad == wr,
	    "S38: ib_post_recv with num_sge over max_recv_sge: EINVAL, bad_wr the WR");

	kv_recv_chain(kv, wr, sge, n);
	bad = NULL;
	err = ib_post_recv(qp, wr, &bad);
	pr_info("# %d receives on an RQ of %u: %d, bad_wr #%td\n", n,
		cap->max_recv_wr, err, bad ? bad - wr : -1);
	tap(err == -ENOMEM && bad == &wr[n - 1],
	    "S38: ib_post_recv past the RQ's cap: ENOMEM, bad_wr the first not posted");

	kv_recv_chain(kv, wr, sge, 1);
	bad = NULL;
	err = ib_post_recv(qp, wr, &bad);
	tap(err == -ENOMEM && bad == wr,
	    "S38: ib_post_recv on a full RQ: ENOMEM, bad_wr the WR");
free:
	kfree(sge);
	kfree(wr);
}

/* S38 on the send queue of a QP in RTS. */
static void kv_s38_send(struct kv_ctx *kv, struct ib_qp *qp,
			const struct ib_qp_cap *cap)
{
	int n = cap->max_send_wr + 1, sges = cap->max_send_sge + 1, err;
	const struct ib_send_wr *bad;
	struct ib_rdma_wr *wr;
	struct ib_sge *sge;

	wr = kcalloc(n, sizeof(*wr), GFP_KERNEL);
	sge = kcalloc(max(n, sges), sizeof(*sge), GFP_KERNEL);
	if (!wr || !sge) {
		tap(false, "S38: memory for the send tests");
		goto free;
	}

	kv_write_chain(kv, wr, sge, 1);
	wr[0].wr.num_sge = sges;
	bad = NULL;
	err = ib_post_send(qp, &wr[0].wr, &bad);
	pr_info("# a send of %d SGEs (max_send_sge %u): %d\n", sges,
		cap->max_send_sge, err);
	tap((err == -EINVAL || err == -ENOMEM) && bad == &wr[0].wr,
	    "S38: ib_post_send with num_sge over max_send_sge: EINVAL, bad_wr the WR");

	kv_write_chain(kv, wr, sge, n);
	bad = NULL;
	err = ib_post_send(qp, &wr[0].wr, &bad);
	pr_info("# %d unsignaled writes on an SQ of %u: %d\n", n,
		cap->max_send_wr, err);
	tap(err == -ENOMEM && bad == &wr[n - 1].wr,
	    "S38: ib_post_send past the SQ's cap: ENOMEM, bad_wr the first not posted");

	kv_write_chain(kv, wr, sge, 1);
	bad = NULL;
	err = ib_post_send(qp, &wr[0].wr, &bad);
	tap(err == -ENOMEM && bad == &wr[0].wr,
	    "S38: ib_post_send on a full SQ: ENOMEM, bad_wr the WR");
free:
	kfree(sge);
	kfree(wr);
}

static void kv_s38(struct kv_ctx *kv)
{
	struct ib_qp_init_attr ia;
	struct ib_qp *qp;

	qp = kv_create_qp(kv, &ia);
	if (!tap(!IS_ERR(qp), "S38: an RC QP for the post tests"))
		return;
	if (tap(!kv_to_init(qp), "S38: the QP moves to INIT"))
		kv_s38_recv(kv, qp, &ia.cap);
	if (tap(!kv_connect_self(kv, qp), "S38: the QP connects to itself (RTR, RTS)"))
		kv_s38_send(kv, qp, &ia.cap);
	/* Full queues: nothing to drain with; the destroy drops the WRs. */
	ib_destroy_qp(qp);
}

/*
 * ib_drain_qp: a connected QP with two receives posted and a write done
 * moves to ERR; the receives come back flushed and the drain returns.
 */
static void kv_drain(struct kv_ctx *kv)
{
	struct ib_recv_wr rwr[2];
	struct ib_sge rsge[2], wsge;
	struct ib_rdma_wr wwr;
	const struct ib_recv_wr *rbad;
	const struct ib_send_wr *wbad;
	struct ib_qp_init_attr ia;
	unsigned long done;
	struct ib_qp *qp;
	int ok0, flushed0;

	qp = kv_create_qp(kv, &ia);
	if (!tap(!IS_ERR(qp), "drain: an RC QP"))
		return;
	if (!tap(!kv_to_init(qp) && !kv_connect_self(kv, qp),
		 "drain: the QP connects to itself")) {
		ib_destroy_qp(qp);
		return;
	}
	ok0 = atomic_read(&kv->done_ok);
	flushed0 = atomic_read(&kv->done_flushed);
	kv_recv_chain(kv, rwr, rsge, 2);
	kv_write_chain(kv, &wwr, &wsge, 1);
	wwr.wr.wr_cqe = &kv->write_cqe;
	wwr.wr.send_flags = IB_SEND_SIGNALED;
	reinit_completion(&kv->write_done);
	*(u64 *)kv->buf = KV_PATTERN;
	*(u64 *)(kv->buf + KV_BUF_SIZE / 2) = 0;
	ib_dma_sync_single_for_device(kv->dev, kv->dma, KV_BUF_SIZE,
				      DMA_BIDIRECTIONAL);
	if (tap(!ib_post_recv(qp, rwr, &rbad) &&
		!ib_post_send(qp, &wwr.wr, &wbad),
		"drain: two receives and a signaled RDMA WRITE posted")) {
		done = wait_for_completion_timeout(&kv->write_done, 10 * HZ);
		ib_dma_sync_single_for_cpu(kv->dev, kv->dma, KV_BUF_SIZE,
					   DMA_BIDIRECTIONAL);
		tap(done && !atomic_read(&kv->done_other) &&
		    *(u64 *)(kv->buf + KV_BUF_SIZE / 2) == KV_PATTERN,
		    "drain: the RDMA WRITE to itself completes and its data is there");
	}
	ib_drain_qp(qp);
	pr_info("# after ib_drain_qp: %d ok, %d flushed, %d other\n",
		atomic_read(&kv->done_ok) - ok0,
		atomic_read(&kv->done_flushed) - flushed0,
		atomic_read(&kv->done_other));
	tap(atomic_read(&kv->done_flushed) - flushed0 == 2 &&
	    atomic_read(&kv->done_ok) == ok0,
	    "drain: ib_drain_qp returns with both receives flushed");
	ib_destroy_qp(qp);
}

/* Until the completions counted as ok reach want, or 10 s. */
static bool kv_wait_ok(struct kv_ctx *kv, int want)
{
	int i;

	for (i = 0; i < 1000 && atomic_read(&kv->done_ok) < want; i++)
		usleep_range(10000, 20000);
	return atomic_read(&kv->done_ok) == want;
}

/*
 * A kernel SRQ resized with receives posted: they stay, in posting order,
 * and the grown SRQ takes as many more.  Receive j lands at 16 * j, send
 * i carries 8 bytes of the value i from the upper half of the buffer.
 */
static void kv_srq_resize(struct kv_ctx *kv)
{
	struct ib_srq_init_attr sia = {
		.attr = { .max_wr = KV_QP_WR, .max_sge = 1 },
		.srq_type = IB_SRQT_BASIC,
	};
	struct ib_srq_attr grow = {};
	struct ib_qp_init_attr ia;
	struct ib_srq *srq;
	struct ib_qp *qp;
	u32 small, n, i;
	int ok0;
	bool good;

	srq = ib_create_srq(kv->pd, &sia);
	if (!tap(!IS_ERR(srq), "SRQ resize: a kernel SRQ"))
		return;
	small = sia.attr.max_wr;
	n = 4 * small;
	qp = kv_create_qp_on(kv, &ia, srq, n);
	if (!tap(!IS_ERR(qp) && !kv_to_init(qp) && !kv_connect_self(kv, qp) &&
		 n * 16 <= KV_BUF_SIZE / 2 && n * 8 <= KV_BUF_SIZE / 2,
		 "SRQ resize: an RC QP on it connects to itself")) {
		if (!IS_ERR(qp))
			ib_destroy_qp(qp);
		ib_destroy_srq(srq);
		return;
	}
	memset(kv->buf, 0, KV_BUF_SIZE);
	for (i = 0; i < n; i++)
		*(u64 *)(kv->buf + KV_BUF_SIZE / 2 + 8 * i) = KV_PATTERN + i;
	ib_dma_sync_single_for_device(kv->dev, kv->dma, KV_BUF_SIZE,
				      DMA_BIDIRECTIONAL);
	ok0 = atomic_read(&kv->done_ok);

	good = true;
	for (i = 0; i < n && good; i++) {
		struct ib_sge sge = {
			.addr = kv->dma + 16 * i,
			.length = 16,
			.lkey = kv->pd->local_dma_lkey,
		};
		struct ib_recv_wr wr = {
			.wr_cqe = &kv->cqe, .sg_list = &sge, .num_sge = 1,
		};
		const struct ib_recv_wr *bad;

		if (i == small) {
			grow.max_wr = n;
			good = !ib_modify_srq(srq, &grow, IB_SRQ_MAX_WR);
			pr_info("# SRQ of %u resized to %u: %s\n", small, n,
				good ? "ok" : "failed");
		}
		good = good && !ib_post_srq_recv(srq, &wr, &bad);
	}
	tap(good, "SRQ resize: ib_modify_srq(IB_SRQ_MAX_WR) grows it, with receives posted");

	for (i = 0; i < n && good; i++) {
		struct ib_sge sge = {
			.addr = kv->dma + KV_BUF_SIZE / 2 + 8 * i,
			.length = 8,
			.lkey = kv->pd->local_dma_lkey,
		};
		struct ib_send_wr wr = {
			.wr_cqe = &kv->cqe, .sg_list = &sge, .num_sge = 1,
			.opcode = IB_WR_SEND, .send_flags = IB_SEND_SIGNALED,
		};
		const struct ib_send_wr *bad;

		good = !ib_post_send(qp, &wr, &bad);
	}
	good = good && kv_wait_ok(kv, ok0 + 2 * n);
	ib_dma_sync_single_for_cpu(kv->dev, kv->dma, KV_BUF_SIZE,
				   DMA_BIDIRECTIONAL);
	for (i = 0; i < n && good; i++)
		good = *(u64 *)(kv->buf + 16 * i) == KV_PATTERN + i;
	pr_info("# %d completions ok of %u, receive %u checked last\n",
		atomic_read(&kv->done_ok) - ok0, 2 * n, i);
	tap(good, "SRQ resize: every message lands in its receive, in posting order");
	ib_destroy_qp(qp);
	ib_destroy_srq(srq);
}

/* post n receives of 16 bytes to srq; true if all are taken. */
static bool kv_srq_fill(struct kv_ctx *kv, struct ib_srq *srq, u32 n)
{
	u32 i;

	for (i = 0; i < n; i++) {
		struct ib_sge sge = {
			.addr = kv->dma + 16 * i,
			.length = 16,
			.lkey = kv->pd->local_dma_lkey,
		};
		struct ib_recv_wr wr = {
			.wr_cqe = &kv->cqe, .sg_list = &sge, .num_sge = 1,
		};
		const struct ib_recv_wr *bad;
		int err = ib_post_srq_recv(srq, &wr, &bad);

		if (err) {
			pr_info("# receive %u of %u on the SRQ: %d\n", i, n,
				err);
			return false;
		}
	}
	return true;
}

/* n signaled 8-byte sends on qp; true once all completed ok (10 s). */
static bool kv_send_n(struct kv_ctx *kv, struct ib_qp *qp, u32 n)
{
	int ok0 = atomic_read(&kv->done_ok);
	u32 i;

	for (i = 0; i < n; i++) {
		struct ib_sge sge = {
			.addr = kv->dma + KV_BUF_SIZE / 2,
			.length = 8,
			.lkey = kv->pd->local_dma_lkey,
		};
		struct ib_send_wr wr = {
			.wr_cqe = &kv->cqe, .sg_list = &sge, .num_sge = 1,
			.opcode = IB_WR_SEND, .send_flags = IB_SEND_SIGNALED,
		};
		const struct ib_send_wr *bad;

		if (ib_post_send(qp, &wr, &bad))
			return false;
	}
	return kv_wait_ok(kv, ok0 + n);
}

/*
 * Receive completions of a QP on a kernel SRQ that nobody polled, then
 * dropped by the QP's move to RESET or its destroy: the SRQ entries they
 * stand for are free again, and the SRQ takes as many receives as before.
 * The sends complete on the test's CQ; the receives on one never polled.
 */
static void kv_srq_clean(struct kv_ctx *kv)
{
	struct ib_srq_init_attr sia = {
		.attr = { .max_wr = KV_QP_WR, .max_sge = 1 },
		.srq_type = IB_SRQT_BASIC,
	};
	struct ib_qp_attr reset = { .qp_state = IB_QPS_RESET };
	struct ib_qp_init_attr ia;
	struct ib_cq *rcq;
	struct ib_srq *srq;
	struct ib_qp *qp;
	u32 n;

	rcq = ib_alloc_cq(kv->dev, NULL, 4 * KV_QP_WR, 0, IB_POLL_DIRECT);
	if (!tap(!IS_ERR(rcq), "SRQ clean: a CQ nobody polls"))
		return;
	srq = ib_create_srq(kv->pd, &sia);
	if (!tap(!IS_ERR(srq), "SRQ clean: a kernel SRQ")) {
		ib_free_cq(rcq);
		return;
	}
	n = sia.attr.max_wr;
	memset(&ia, 0, sizeof(ia));
	ia.send_cq = kv->cq;
	ia.recv_cq = rcq;
	ia.srq = srq;
	ia.qp_type = IB_QPT_RC;
	ia.sq_sig_type = IB_SIGNAL_REQ_WR;
	ia.cap.max_send_wr = n;
	ia.cap.max_send_sge = 1;
	qp = ib_create_qp(kv->pd, &ia);
	if (!tap(!IS_ERR(qp) && !kv_to_init(qp) && !kv_connect_self(kv, qp),
		 "SRQ clean: an RC QP on it connects to itself")) {
		if (!IS_ERR(qp))
			ib_destroy_qp(qp);
		goto out;
	}

	tap(kv_srq_fill(kv, srq, n) && kv_send_n(kv, qp, n),
	    "SRQ clean: the SRQ filled, and as many messages received");
	tap(!ib_modify_qp(qp, &reset, IB_QP_STATE) && kv_srq_fill(kv, srq, n),
	    "SRQ clean: after the QP's move to RESET dropped the receive CQEs, the SRQ takes as many receives again");

	tap(!kv_to_init(qp) && !kv_connect_self(kv, qp) && kv_send_n(kv, qp, n),
	    "SRQ clean: the QP reconnects and consumes them");
	ib_destroy_qp(qp);
	tap(kv_srq_fill(kv, srq, n),
	    "SRQ clean: after the QP's destroy dropped the receive CQEs, the SRQ takes as many receives again");
out:
	ib_destroy_srq(srq);
	ib_free_cq(rcq);
}

/* Until cq has given one completion, or 10 s; polled here, by nobody else. */
static int kv_poll_one(struct ib_cq *cq, struct ib_wc *wc)
{
	int i, n = 0;

	for (i = 0; i < 1000 && !n; i++) {
		n = ib_poll_cq(cq, 1, wc);
		if (!n)
			usleep_range(10000, 20000);
	}
	return n;
}

#ifdef QRDMA_HAVE_IB_RESIZE_CQ
/* An RC QP of kv's PD whose send and receive completions go to cq. */
static struct ib_qp *kv_rc_qp_on(struct kv_ctx *kv, struct ib_cq *cq)
{
	struct ib_qp_init_attr ia = {
		.send_cq = cq,
		.recv_cq = cq,
		.qp_type = IB_QPT_RC,
		.sq_sig_type = IB_SIGNAL_REQ_WR,
		.cap = {
			.max_send_wr = KV_QP_WR,
			.max_recv_wr = KV_QP_WR,
			.max_send_sge = 1,
			.max_recv_sge = 1,
		},
	};

	return ib_create_qp(kv->pd, &ia);
}

struct kv_resizer {
	struct ib_cq *cq;
	int first;		/* sizes alternate from this one */
	int failed;
	struct completion done;
};

static int kv_resizer_fn(void *arg)
{
	struct kv_resizer *r = arg;
	int i;

	for (i = 0; i < 40; i++)
		if (ib_resize_cq(r->cq, (i + r->first) % 2 ? 64 : 16))
			r->failed++;
	complete(&r->done);
	return 0;
}

/*
 * Two resizes of one kernel CQ at once, many times: ib_core does not
 * serialise them.  Afterwards the CQ still takes and gives completions,
 * so the ring the device writes is the one the driver reads.  A race
 * there shows only now and then: passing is not proof, failing is.
 */
static void kv_resize_race(struct kv_ctx *kv)
{
	struct kv_resizer r[2];
	struct ib_rdma_wr wr;
	struct ib_sge sge;
	const struct ib_send_wr *bad;
	struct ib_cq *cq;
	struct ib_qp *qp;
	struct ib_wc wc;
	int i, failed = 0;

	cq = ib_alloc_cq(kv->dev, NULL, 16, 0, IB_POLL_DIRECT);
	if (!tap(!IS_ERR(cq), "resize race: a kernel CQ"))
		return;
	for (i = 0; i < 2; i++) {
		struct task_struct *t;

		r[i] = (struct kv_resizer) { .cq = cq, .first = i };
		init_completion(&r[i].done);
		t = kthread_run(kv_resizer_fn, &r[i], "kv-resize%d", i);
		if (IS_ERR(t)) {
			r[i].failed = 1;
			complete(&r[i].done);
		}
	}
	for (i = 0; i < 2; i++) {
		wait_for_completion(&r[i].done);
		failed += r[i].failed;
	}
	tap(!failed, "resize race: two threads resize one CQ 40 times each");

	qp = kv_rc_qp_on(kv, cq);
	if (!tap(!IS_ERR(qp) && !kv_to_init(qp) && !kv_connect_self(kv, qp),
		 "resize race: an RC QP on the CQ connects to itself")) {
		if (!IS_ERR(qp))
			ib_destroy_qp(qp);
		ib_free_cq(cq);
		return;
	}
	kv_write_chain(kv, &wr, &sge, 1);
	wr.wr.wr_id = 0x5eed;
	wr.wr.send_flags = IB_SEND_SIGNALED;
	tap(!ib_post_send(qp, &wr.wr, &bad) && kv_poll_one(cq, &wc) == 1 &&
	    wc.status == IB_WC_SUCCESS && wc.wr_id == 0x5eed,
	    "resize race: the resized CQ gives the write's completion");
	ib_destroy_qp(qp);
	ib_free_cq(cq);
}

/*
 * A consumer that arms a CQ while a resize moves its CQEs (ib_cq's poller
 * does, after a poll that found it empty) must get an event for them, or
 * be told that it may have missed one: arming does not look at CQEs
 * already written.  A kprobe on the driver's RESIZE_CQ command arms the
 * CQ while the resize is under way, with IB_CQ_REPORT_MISSED_EVENTS.
 */
static struct {
	struct ib_cq *cq;
	atomic_t events;
	int missed;		/* what the arm during the resize returned */
	bool armed;
} kv_rn;

static void kv_rn_comp(struct ib_cq *cq, void *ctx)
{
	atomic_inc(&kv_rn.events);
}

static int kv_rn_pre(struct kprobe *p, struct pt_regs *regs)
{
	if (kv_rn.cq && !kv_rn.armed) {
		kv_rn.armed = true;
		kv_rn.missed = ib_req_notify_cq(kv_rn.cq, IB_CQ_NEXT_COMP |
						IB_CQ_REPORT_MISSED_EVENTS);
	}
	return 0;
}

static struct kprobe kv_rn_probe = {
	.symbol_name = "qrdma_cmd_resize_cq",
	.pre_handler = kv_rn_pre,
};

static bool kv_rn_wait_events(int want)
{
	int i;

	for (i = 0; i < 100 && atomic_read(&kv_rn.events) < want; i++)
		usleep_range(10000, 20000);
	return atomic_read(&kv_rn.events) >= want;
}

static void kv_resize_notify(struct kv_ctx *kv)
{
	struct ib_cq_init_attr ca = { .cqe = 16 };
	const struct ib_send_wr *bad;
	struct ib_rdma_wr wr;
	struct ib_sge sge;
	struct ib_cq *cq;
	struct ib_qp *qp;
	struct ib_wc wc;
	bool got;
	int err;

	atomic_set(&kv_rn.events, 0);
	cq = ib_create_cq(kv->dev, kv_rn_comp, NULL, NULL, &ca);
	if (!tap(!IS_ERR(cq), "resize notify: a kernel CQ with a completion handler"))
		return;
	qp = kv_rc_qp_on(kv, cq);
	if (!tap(!IS_ERR(qp) && !kv_to_init(qp) && !kv_connect_self(kv, qp),
		 "resize notify: an RC QP on the CQ connects to itself")) {
		if (!IS_ERR(qp))
			ib_destroy_qp(qp);
		ib_destroy_cq(cq);
		return;
	}
	/* One CQE in the ring, not polled; its event says it is there. */
	ib_req_notify_cq(cq, IB_CQ_NEXT_COMP);
	kv_write_chain(kv, &wr, &sge, 1);
	wr.wr.wr_cqe = NULL;
	wr.wr.wr_id = 0x7e51;
	wr.wr.send_flags = IB_SEND_SIGNALED;
	got = !ib_post_send(qp, &wr.wr, &bad) && kv_rn_wait_events(1);
	if (!tap(got, "resize notify: the write's CQE raised its event"))
		goto out;

	kv_rn.armed = false;
	kv_rn.cq = cq;
	err = register_kprobe(&kv_rn_probe);
	if (!tap(!err, "resize notify: a kprobe on qrdma_cmd_resize_cq")) {
		pr_info("# register_kprobe: %d\n", err);
		kv_rn.cq = NULL;
		goto out;
	}
	err = ib_resize_cq(cq, 64);
	unregister_kprobe(&kv_rn_probe);
	kv_rn.cq = NULL;
	pr_info("# resize %d, armed during it %d, it returned %d, events %d\n",
		err, kv_rn.armed, kv_rn.missed, atomic_read(&kv_rn.events));
	if (!tap(!err && kv_rn.armed,
		 "resize notify: the CQ resizes, armed while the resize runs"))
		goto out;
	tap(kv_rn.missed > 0 || kv_rn_wait_events(2),
	    "resize notify: arming during the resize reports missed events or the CQE moved raises an event");
	tap(ib_poll_cq(cq, 1, &wc) == 1 && wc.status == IB_WC_SUCCESS &&
	    wc.wr_id == 0x7e51,
	    "resize notify: the moved CQE is polled from the new ring");
out:
	ib_destroy_qp(qp);
	ib_destroy_cq(cq);
}

#endif /* QRDMA_HAVE_IB_RESIZE_CQ */

/*
 * The kernel's CM creates AHs where it cannot sleep (under a spinlock)
 * and posts its MAD with the AH at once.  A kprobe makes CREATE_AH slow,
 * as on a busy device: creating the AH under a spinlock must not wait for
 * it, and a UD send posted with the AH at once must still go out, and
 * reach its UD QP, once the device has made the AH.
 */
#define KV_AH_DELAY_MS 300
#define KV_QKEY 0x11111111
static bool kv_ah_slow;

static int kv_ah_pre(struct kprobe *p, struct pt_regs *regs)
{
	if (READ_ONCE(kv_ah_slow))
		mdelay(KV_AH_DELAY_MS);
	return 0;
}

static struct kprobe kv_ah_probe = {
	.symbol_name = "qrdma_cmd_create_ah",
	.pre_handler = kv_ah_pre,
};

static int kv_ud_to_rts(struct ib_qp *qp)
{
	struct ib_qp_attr a = {
		.qp_state = IB_QPS_INIT,
		.port_num = KV_PORT,
		.qkey = KV_QKEY,
	};
	int err;

	err = ib_modify_qp(qp, &a, IB_QP_STATE | IB_QP_PKEY_INDEX |
			   IB_QP_PORT | IB_QP_QKEY);
	if (err)
		return err;
	a.qp_state = IB_QPS_RTR;
	err = ib_modify_qp(qp, &a, IB_QP_STATE);
	if (err)
		return err;
	a.qp_state = IB_QPS_RTS;
	a.sq_psn = 0;
	return ib_modify_qp(qp, &a, IB_QP_STATE | IB_QP_SQ_PSN);
}

/* The AV of the port's own GID and MAC, as kernel users give it. */
static int kv_self_ah_attr(struct kv_ctx *kv, struct rdma_ah_attr *attr)
{
	const struct ib_gid_attr *sgid;
	struct net_device *ndev;
	union ib_gid dgid;

	sgid = rdma_get_gid_attr(kv->dev, KV_PORT, gid_index);
	if (IS_ERR(sgid))
		return PTR_ERR(sgid);
	memset(attr, 0, sizeof(*attr));
	attr->type = rdma_ah_find_type(kv->dev, KV_PORT);
	rdma_ah_set_port_num(attr, KV_PORT);
	dgid = sgid->gid;
	rdma_ah_set_grh(attr, &dgid, 0, gid_index, 64, 0);
	rcu_read_lock();
	ndev = rdma_read_gid_attr_ndev_rcu(sgid);
	if (!IS_ERR(ndev))
		ether_addr_copy(attr->roce.dmac, ndev->dev_addr);
	rcu_read_unlock();
	rdma_put_gid_attr(sgid);
	return PTR_ERR_OR_ZERO(ndev);
}

static void kv_ah_nosleep(struct kv_ctx *kv)
{
	struct ib_qp_init_attr ia = {};
	struct rdma_ah_attr attr;
	const struct ib_recv_wr *rbad;
	const struct ib_send_wr *bad;
	struct ib_recv_wr rwr = {};
	struct ib_ud_wr wr = {};
	struct ib_sge sge, rsge;
	struct ib_wc wc[2];
	DEFINE_SPINLOCK(lock);
	unsigned long flags;
	struct ib_cq *cq;
	struct ib_qp *qp;
	struct ib_ah *ah;
	bool sent = false, got = false;
	u8 *payload = kv->buf, *grh_and_data = kv->buf + 1024;
	s64 us;
	int i, n, err;

	cq = ib_alloc_cq(kv->dev, NULL, 16, 0, IB_POLL_DIRECT);
	if (!tap(!IS_ERR(cq), "AH without sleeping: a kernel CQ"))
		return;
	ia.send_cq = cq;
	ia.recv_cq = cq;
	ia.qp_type = IB_QPT_UD;
	ia.sq_sig_type = IB_SIGNAL_ALL_WR;
	ia.cap.max_send_wr = KV_QP_WR;
	ia.cap.max_recv_wr = KV_QP_WR;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	qp = ib_create_qp(kv->pd, &ia);
	if (!tap(!IS_ERR(qp) && !kv_ud_to_rts(qp) && !kv_self_ah_attr(kv, &attr),
		 "AH without sleeping: a UD QP in RTS, the port's own address")) {
		if (!IS_ERR(qp))
			ib_destroy_qp(qp);
		ib_free_cq(cq);
		return;
	}

	/* The GRH comes first in a UD receive buffer. */
	memset(grh_and_data, 0, 40 + 64);
	rsge = (struct ib_sge) { .addr = kv->dma + 1024, .length = 40 + 64,
				 .lkey = kv->pd->local_dma_lkey };
	rwr.wr_id = 0x2ec;
	rwr.sg_list = &rsge;
	rwr.num_sge = 1;
	for (i = 0; i < 64; i++)
		payload[i] = 0xa5 ^ i;
	sge = (struct ib_sge) { .addr = kv->dma, .length = 64,
				.lkey = kv->pd->local_dma_lkey };
	ib_dma_sync_single_for_device(kv->dev, kv->dma, KV_BUF_SIZE,
				      DMA_BIDIRECTIONAL);
	if (!tap(!ib_post_recv(qp, &rwr, &rbad), "AH without sleeping: a receive posted"))
		goto out;

	err = register_kprobe(&kv_ah_probe);
	if (!tap(!err, "AH without sleeping: a kprobe on qrdma_cmd_create_ah")) {
		pr_info("# register_kprobe: %d\n", err);
		goto out;
	}
	WRITE_ONCE(kv_ah_slow, true);
	spin_lock_irqsave(&lock, flags);
	us = ktime_to_us(ktime_get());
	ah = rdma_create_ah(kv->pd, &attr, 0);
	us = ktime_to_us(ktime_get()) - us;
	if (!IS_ERR(ah)) {
		wr.wr.wr_id = 0x5e4d;
		wr.wr.sg_list = &sge;
		wr.wr.num_sge = 1;
		wr.wr.opcode = IB_WR_SEND;
		wr.ah = ah;
		wr.remote_qpn = qp->qp_num;
		wr.remote_qkey = KV_QKEY;
		sent = !ib_post_send(qp, &wr.wr, &bad);
	}
	spin_unlock_irqrestore(&lock, flags);
	WRITE_ONCE(kv_ah_slow, false);
	unregister_kprobe(&kv_ah_probe);
	pr_info("# rdma_create_ah without sleeping took %lld us (CREATE_AH takes %d ms)\n",
		us, KV_AH_DELAY_MS);
	if (!tap(!IS_ERR(ah), "AH without sleeping: created under a spinlock"))
		goto out;
	tap(us < KV_AH_DELAY_MS * 1000 / 3,
	    "AH without sleeping: creating it does not wait for the device");
	if (tap(sent, "AH without sleeping: a UD send with it posted at once")) {
		for (n = 0; n < 2 && kv_poll_one(cq, &wc[n]) == 1; n++)
			;
		got = n == 2;
		for (i = 0; i < n; i++) {
			pr_info("# wr_id %#llx status %d byte_len %u\n",
				wc[i].wr_id, wc[i].status, wc[i].byte_len);
			got = got && wc[i].status == IB_WC_SUCCESS;
		}
		ib_dma_sync_single_for_cpu(kv->dev, kv->dma, KV_BUF_SIZE,
					   DMA_BIDIRECTIONAL);
		got = got && !memcmp(grh_and_data + 40, payload, 64);
	}
	tap(got, "AH without sleeping: the send completes and its UD QP receives it");
	spin_lock_irqsave(&lock, flags);
	rdma_destroy_ah(ah, 0);
	spin_unlock_irqrestore(&lock, flags);
out:
	ib_destroy_qp(qp);
	ib_free_cq(cq);
}

/*
 * Every CQ may be armed on one completion vector, one event each: its EQ
 * must hold them all.  eq_cqs CQs on vector 0 are armed and each given a
 * CQE while the vector's interrupt is disabled, so that the events pile
 * up in the EQ; once it is enabled again, each CQ must get its event.
 * Two CQs per RC QP connected to itself: a SEND completes on one and is
 * received on the other.
 */
static int eq_cqs;
module_param(eq_cqs, int, 0444);
MODULE_PARM_DESC(eq_cqs, "CQs armed at once on one vector in the EQ test (0: no test)");

static atomic_t kv_eq_events;

static void kv_eq_comp(struct ib_cq *cq, void *ctx)
{
	atomic_inc(&kv_eq_events);
}

static bool kv_eq_qp(struct kv_ctx *kv, struct ib_cq *scq, struct ib_cq *rcq,
		     struct ib_qp **qpp)
{
	struct ib_qp_init_attr ia = {
		.send_cq = scq,
		.recv_cq = rcq,
		.qp_type = IB_QPT_RC,
		.sq_sig_type = IB_SIGNAL_ALL_WR,
		.cap = { .max_send_wr = 1, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ib_sge sge = { .addr = kv->dma, .length = 8,
			      .lkey = kv->pd->local_dma_lkey };
	struct ib_recv_wr rwr = { .sg_list = &sge, .num_sge = 1 };
	const struct ib_recv_wr *bad;
	struct ib_qp *qp;

	qp = ib_create_qp(kv->pd, &ia);
	if (IS_ERR(qp))
		return false;
	*qpp = qp;
	return !kv_to_init(qp) && !kv_connect_self(kv, qp) &&
	       !ib_post_recv(qp, &rwr, &bad);
}

static void kv_eq_flood(struct kv_ctx *kv)
{
	struct ib_cq_init_attr ca = { .cqe = 2, .comp_vector = 0 };
	struct pci_dev *pdev = to_pci_dev(kv->dev->dev.parent);
	struct ib_sge sge = { .addr = kv->dma, .length = 8,
			      .lkey = kv->pd->local_dma_lkey };
	struct ib_send_wr wr = { .sg_list = &sge, .num_sge = 1,
				 .opcode = IB_WR_SEND,
				 .send_flags = IB_SEND_SIGNALED };
	const struct ib_send_wr *bad;
	int n = eq_cqs & ~1, nq = n / 2, i, polled = 0, ready = 0, irq;
	struct ib_cq **cqs;
	struct ib_qp **qps;
	unsigned long end;
	struct ib_wc wc;
	bool ok = true;

	if (!n)
		return;
	irq = pci_irq_vector(pdev, 1);
	cqs = kvcalloc(n, sizeof(*cqs), GFP_KERNEL);
	qps = kvcalloc(nq, sizeof(*qps), GFP_KERNEL);
	if (!tap(cqs && qps && irq > 0, "EQ: room for the CQs and QPs, a completion vector"))
		goto out;
	for (i = 0; i < n && ok; i++) {
		cqs[i] = ib_create_cq(kv->dev, kv_eq_comp, NULL, NULL, &ca);
		ok = !IS_ERR(cqs[i]);
		if (!ok)
			cqs[i] = NULL;
	}
	for (i = 0; i < nq && ok; i++, ready++)
		ok = kv_eq_qp(kv, cqs[2 * i], cqs[2 * i + 1], &qps[i]);
	if (!tap(ok, "EQ: the CQs on vector 0 and an RC QP per two, connected"))
		goto out;

	atomic_set(&kv_eq_events, 0);
	for (i = 0; i < n; i++)
		ib_req_notify_cq(cqs[i], IB_CQ_NEXT_COMP);
	/* The events stay in the EQ until the interrupt is enabled. */
	disable_irq(irq);
	for (i = 0; i < nq && ok; i++)
		ok = !ib_post_send(qps[i], &wr, &bad);
	end = jiffies + 120 * HZ;
	for (i = 0; i < n && ok && time_before(jiffies, end); ) {
		if (ib_poll_cq(cqs[i], 1, &wc) == 1) {
			ok = wc.status == IB_WC_SUCCESS;
			polled++;
			i++;
		} else {
			usleep_range(1000, 2000);
		}
	}
	enable_irq(irq);
	pr_info("# %d CQEs polled of %d\n", polled, n);
	if (!tap(ok && polled == n, "EQ: every QP's SEND completes on its two CQs"))
		goto out;
	for (i = 0; i < 500 && atomic_read(&kv_eq_events) < n; i++)
		usleep_range(10000, 20000);
	pr_info("# %d completion events for %d armed CQs on one vector\n",
		atomic_read(&kv_eq_events), n);
	tap(atomic_read(&kv_eq_events) == n,
	    "EQ: every armed CQ gets its event, with all of them pending on one EQ at once");
out:
	for (i = 0; i < ready; i++)
		if (!IS_ERR_OR_NULL(qps[i]))
			ib_destroy_qp(qps[i]);
	for (i = 0; cqs && i < n; i++)
		if (cqs[i])
			ib_destroy_cq(cqs[i]);
	kvfree(qps);
	kvfree(cqs);
}

/*
 * An async event the device wrote before a destroy's completion belongs
 * to the object destroyed: the destroy must deliver it (or drop it) before
 * it returns, not leave it for later, when a new object may have the
 * handle.  With vector 0's interrupt disabled (commands complete all the
 * same: their waiters poll), a QP on an SRQ moves to ERR, which writes
 * LAST_WQE_REACHED, and is destroyed; its handler must have the event
 * when ib_destroy_qp() returns.
 */
static atomic_t kv_ev_last_wqe;

static void kv_ev_handler(struct ib_event *event, void *ctx)
{
	if (event->event == IB_EVENT_QP_LAST_WQE_REACHED)
		atomic_inc(&kv_ev_last_wqe);
}

static void kv_destroy_drains(struct kv_ctx *kv)
{
	struct ib_srq_init_attr sia = {
		.attr = { .max_wr = KV_QP_WR, .max_sge = 1 },
		.srq_type = IB_SRQT_BASIC,
	};
	struct pci_dev *pdev = to_pci_dev(kv->dev->dev.parent);
	struct ib_qp_attr err_attr = { .qp_state = IB_QPS_ERR };
	struct ib_qp_init_attr ia = {};
	struct ib_srq *srq;
	struct ib_qp *qp;
	int irq = pci_irq_vector(pdev, 0), before, after, err;

	srq = ib_create_srq(kv->pd, &sia);
	if (!tap(!IS_ERR(srq) && irq > 0, "destroy drains: a kernel SRQ"))
		return;
	ia.send_cq = kv->cq;
	ia.recv_cq = kv->cq;
	ia.srq = srq;
	ia.qp_type = IB_QPT_RC;
	ia.sq_sig_type = IB_SIGNAL_REQ_WR;
	ia.cap.max_send_wr = KV_QP_WR;
	ia.cap.max_send_sge = 1;
	ia.event_handler = kv_ev_handler;
	qp = ib_create_qp(kv->pd, &ia);
	if (!tap(!IS_ERR(qp) && !kv_to_init(qp),
		 "destroy drains: an RC QP on the SRQ in INIT")) {
		if (!IS_ERR(qp))
			ib_destroy_qp(qp);
		goto out;
	}
	atomic_set(&kv_ev_last_wqe, 0);
	disable_irq(irq);
	err = ib_modify_qp(qp, &err_attr, IB_QP_STATE);
	before = atomic_read(&kv_ev_last_wqe);
	ib_destroy_qp(qp);
	after = atomic_read(&kv_ev_last_wqe);
	enable_irq(irq);
	pr_info("# modify to ERR %d; LAST_WQE_REACHED: %d before the destroy, %d when it returned\n",
		err, before, after);
	tap(!err && after == 1,
	    "destroy drains: the LAST_WQE_REACHED written before the destroy reaches the QP's handler before ib_destroy_qp returns");
out:
	ib_destroy_srq(srq);
}

static int kv_run(struct ib_device *dev)
{
	struct kv_ctx *kv;
	int err = 0;

	kv = kzalloc(sizeof(*kv), GFP_KERNEL);
	if (!kv)
		return -ENOMEM;
	kv->dev = dev;
	kv->cqe.done = kv_done;
	kv->write_cqe.done = kv_write_done;
	init_completion(&kv->write_done);

	/* The writes target the same buffer: a DMA MR with remote access. */
	kv->pd = ib_alloc_pd(dev, IB_PD_UNSAFE_GLOBAL_RKEY);
	if (IS_ERR(kv->pd)) {
		err = PTR_ERR(kv->pd);
		goto free_kv;
	}
	kv->rkey = kv->pd->unsafe_global_rkey;
	kv->cq = ib_alloc_cq(dev, kv, 4 * KV_QP_WR + 8, 0, IB_POLL_SOFTIRQ);
	if (IS_ERR(kv->cq)) {
		err = PTR_ERR(kv->cq);
		goto dealloc_pd;
	}
	kv->buf = kzalloc(KV_BUF_SIZE, GFP_KERNEL);
	if (!kv->buf) {
		err = -ENOMEM;
		goto free_cq;
	}
	kv->dma = ib_dma_map_single(dev, kv->buf, KV_BUF_SIZE,
				    DMA_BIDIRECTIONAL);
	if (ib_dma_mapping_error(dev, kv->dma)) {
		err = -ENOMEM;
		goto free_buf;
	}

	/*
	 * ib_umem and the block layer build MR page lists from DMA
	 * segments: capped at the default 64 KiB, an MR never gets the
	 * huge pages the device takes.
	 */
	tap(dma_get_max_seg_size(dev->dma_device) >= SZ_1G,
	    "the device's DMA segments are not capped (max_seg_size at least 1 GiB)");
	kv_s38(kv);
	kv_drain(kv);
	kv_srq_resize(kv);
#ifdef QRDMA_HAVE_IB_RESIZE_CQ
	kv_resize_race(kv);
	kv_resize_notify(kv);
#else
	pr_info("ok %d - kernel CQ resize # SKIP this kernel has no ib_resize_cq()\n",
		++tap_n);
#endif
	kv_ah_nosleep(kv);
	kv_eq_flood(kv);
	kv_destroy_drains(kv);
	kv_srq_clean(kv);

	ib_dma_unmap_single(dev, kv->dma, KV_BUF_SIZE, DMA_BIDIRECTIONAL);
free_buf:
	kfree(kv->buf);
free_cq:
	ib_free_cq(kv->cq);
dealloc_pd:
	ib_dealloc_pd(kv->pd);
free_kv:
	kfree(kv);
	return err;
}

static bool kv_tested;

static int kv_add_one(struct ib_device *dev)
{
	int err;

	if (strcmp(dev_name(&dev->dev), ibdev))
		return -EOPNOTSUPP;
	kv_tested = true;
	err = kv_run(dev);
	if (err) {
		pr_info("# setting up: %d\n", err);
		tap(false, "PD, CQ and buffer for the tests");
	}
	pr_info("1..%d\n", tap_n);
	pr_info("# %d failed\n", tap_failed);
	return 0;
}

static void kv_remove_one(struct ib_device *dev, void *client_data)
{
}

static struct ib_client kv_client = {
	.name = "qrdma-kverbs-test",
	.add = kv_add_one,
	.remove = kv_remove_one,
};

static int __init kv_init(void)
{
	int err;

	if (gid_index < 0) {
		pr_err("gid_index=N is required\n");
		return -EINVAL;
	}
	err = ib_register_client(&kv_client);
	if (err)
		return err;
	if (!kv_tested) {
		ib_unregister_client(&kv_client);
		pr_err("no RDMA device %s\n", ibdev);
		return -ENODEV;
	}
	return 0;
}

static void __exit kv_exit(void)
{
	ib_unregister_client(&kv_client);
}

module_init(kv_init);
module_exit(kv_exit);

MODULE_DESCRIPTION("Kernel verbs tests of qrdma (S38, ib_drain_qp, SRQ resize)");
MODULE_LICENSE("Dual BSD/GPL");
