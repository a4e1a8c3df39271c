/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * libqrdma: the rdma-core provider of qrdma, the emulated RoCEv2 NIC.
 *
 * Control verbs go to qrdma.ko; the data path is all in user space.  The
 * provider allocates every ring (send, receive, SRQ, CQ) in its own pages
 * and hands their addresses to the kernel, which pins them for the device;
 * work requests become WQEs in those rings followed by one doorbell write
 * per batch to the context's doorbell page, and completions are read from
 * the CQ rings by their phase bit.  The formats are the device's,
 * qrdma-hw.h.
 */
#ifndef __QRDMA_H__
#define __QRDMA_H__

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <infiniband/driver.h>
#include <util/udma_barrier.h>

#include "qrdma-abi.h"
#include "qrdma-hw.h"

/* QPNs are 24 bits: a table of 2^12 lazily allocated leaves of 2^12. */
#define QRDMA_QP_TABLE_SHIFT	12
#define QRDMA_QP_TABLE_SIZE	(1 << QRDMA_QP_TABLE_SHIFT)
#define QRDMA_QP_TABLE_MASK	(QRDMA_QP_TABLE_SIZE - 1)

struct qrdma_device {
	struct verbs_device ibvdev;
};

struct qrdma_context {
	struct verbs_context ibvctx;
	/* This context's doorbell page of BAR2. */
	void *db;
	size_t db_size;
	uint32_t device_caps;
	uint32_t ring_page_size;
	uint32_t max_qp_wr;
	uint32_t max_srq_wr;
	uint32_t max_cqe;
	uint32_t max_send_sge;
	uint32_t max_recv_sge;
	uint32_t max_srq_sge;
	uint32_t max_inline_data;
	/*
	 * QPN -> QP, for the pollers.  An entry changes under qp_table_mutex
	 * and the locks of the QP's CQs, so a poller, which holds its CQ's
	 * lock, sees the QPs of its CQ come and go atomically.  A leaf, once
	 * there, stays until the context goes.
	 */
	pthread_mutex_t qp_table_mutex;
	_Atomic(struct qrdma_qp **) qp_table[QRDMA_QP_TABLE_SIZE];
};

struct qrdma_pd {
	struct ibv_pd ibvpd;
};

/* A ring the provider allocated: page aligned, whole pages. */
struct qrdma_buf {
	void *addr;
	size_t size;
};

/*
 * A work queue: the send or receive queue of a QP, or an SRQ.  pi and ci
 * run free (modulo 2^32); the ring has 2^log2 entries.  A QP's WQEs carry
 * their index pi as the device's wr_id, so a CQE names the WQE it
 * completes and the consumer's wr_id comes from wrid[]; the device runs a
 * queue in order, so every WQE before it is done too.  An SRQ's WQEs carry
 * the consumer's wr_id itself, and ci counts the CQEs of the SRQ.
 */
struct qrdma_wq {
	struct qrdma_buf buf;
	uint64_t *wrid;
	pthread_spinlock_t lock;
	uint32_t log2;
	uint32_t wqe_size;
	uint32_t max_sge;
	/* Written by the poster under lock, read by pollers. */
	_Atomic(uint32_t) pi;
	/* Written by pollers, read by the poster. */
	_Atomic(uint32_t) ci;
	/*
	 * An SRQ being resized: the device switches from buf to next_buf at
	 * a moment the provider cannot see, so posters write each WQE into
	 * both until the resize returns.  Under lock.
	 */
	struct qrdma_buf *next_buf;
	uint32_t next_log2;
};

struct qrdma_cq {
	struct verbs_cq vcq;
	pthread_spinlock_t lock;
	/*
	 * Held across RESIZE_CQ, a command that may take as long as the
	 * kernel's command timeout: one resize at a time, and whoever must
	 * not touch the ring while the device moves its entries (pollers,
	 * the clean-up of a QP's CQEs) sleeps on it instead of spinning.
	 */
	pthread_mutex_t resize_mutex;
	/* RESIZE_CQ is moving the entries.  Under lock and resize_mutex. */
	bool resizing;
	uint32_t cqn;
	struct qrdma_buf buf;
	uint32_t log2;
	/* Consumer index, free running; the device reads it at ci_rec. */
	uint32_t ci;
	struct qrdma_buf ci_buf;
	_Atomic(uint32_t) *ci_rec;
	/* The extended poll: the entry start_poll/next_poll returned. */
	struct qrdma_cqe *cur_cqe;
	struct qrdma_qp *cur_qp;
};

struct qrdma_srq {
	struct verbs_srq vsrq;
	uint32_t srqn;
	struct qrdma_wq rq;
	/* One resize at a time: each replaces the ring the others use. */
	pthread_mutex_t resize_mutex;
};

struct qrdma_qp {
	struct verbs_qp vqp;
	uint32_t qpn;
	bool sq_sig_all;
	uint32_t max_inline_data;
	struct qrdma_cq *send_cq;
	struct qrdma_cq *recv_cq;
	/* The SRQ the QP receives from, or NULL for its own RQ. */
	struct qrdma_srq *srq;
	struct qrdma_wq sq;
	struct qrdma_wq rq;
	/*
	 * The ibv_wr_*() session, under sq.lock from wr_start to
	 * wr_complete/wr_abort: the WQE being built, the producer index
	 * of the next one, and the first error, which fails the session.
	 */
	struct qrdma_sq_wqe *wr_wqe;
	uint32_t wr_pi;
	int wr_err;
};

struct qrdma_ah {
	struct ibv_ah ibvah;
	uint32_t handle;
};

/*
 * The commands whose signature changed between the rdma-core releases the
 * provider builds in (44 to 65); CMakeLists.txt's probes say which this
 * one has.  qrdma passes no file descriptors and no CQ buffer of the
 * core's: its rings are its own, named in the udata.
 */
static inline int
qrdma_cmd_get_context(struct verbs_context *vctx, struct ibv_get_context *cmd,
		      size_t cmd_size, struct ib_uverbs_get_context_resp *resp,
		      size_t resp_size)
{
#ifdef HAVE_IBV_CMD_GET_CONTEXT_FD_ARR
	return ibv_cmd_get_context(vctx, cmd, cmd_size, NULL, resp, resp_size);
#else
	return ibv_cmd_get_context(vctx, cmd, cmd_size, resp, resp_size);
#endif
}

static inline int
qrdma_cmd_create_cq_ex(struct ibv_context *ibvctx,
		       const struct ibv_cq_init_attr_ex *attr,
		       struct verbs_cq *vcq, struct ibv_create_cq_ex *cmd,
		       size_t cmd_size, struct ib_uverbs_ex_create_cq_resp *resp,
		       size_t resp_size)
{
#ifdef HAVE_IBV_CMD_CREATE_CQ_EX_PROV_ATTR
	return ibv_cmd_create_cq_ex(ibvctx, attr, NULL, vcq, cmd, cmd_size,
				    resp, resp_size, 0);
#else
	return ibv_cmd_create_cq_ex(ibvctx, attr, vcq, cmd, cmd_size, resp,
				    resp_size, 0);
#endif
}

static inline struct qrdma_device *to_qrdma_dev(struct ibv_device *ibvdev)
{
	return container_of(ibvdev, struct qrdma_device, ibvdev.device);
}

static inline struct qrdma_context *to_qrdma_ctx(struct ibv_context *ibvctx)
{
	return container_of(ibvctx, struct qrdma_context, ibvctx.context);
}

static inline struct qrdma_pd *to_qrdma_pd(struct ibv_pd *ibvpd)
{
	return container_of(ibvpd, struct qrdma_pd, ibvpd);
}

static inline struct qrdma_cq *to_qrdma_cq(struct ibv_cq *ibvcq)
{
	return container_of(ibvcq, struct qrdma_cq, vcq.cq);
}

static inline struct qrdma_cq *to_qrdma_cq_ex(struct ibv_cq_ex *ibvcqx)
{
	return container_of(ibvcqx, struct qrdma_cq, vcq.cq_ex);
}

static inline struct qrdma_srq *to_qrdma_srq(struct ibv_srq *ibvsrq)
{
	return container_of(ibvsrq, struct qrdma_srq, vsrq.srq);
}

static inline struct qrdma_qp *to_qrdma_qp(struct ibv_qp *ibvqp)
{
	return container_of(ibvqp, struct qrdma_qp, vqp.qp);
}

static inline struct qrdma_qp *to_qrdma_qp_ex(struct ibv_qp_ex *ibvqpx)
{
	return container_of(ibvqpx, struct qrdma_qp, vqp.qp_ex);
}

static inline struct qrdma_ah *to_qrdma_ah(struct ibv_ah *ibvah)
{
	return container_of(ibvah, struct qrdma_ah, ibvah);
}

#endif /* __QRDMA_H__ */
