// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libqrdma: device matching and the user context.
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <ccan/minmax.h>

#include "qrdma.h"
#include "verbs.h"

static void qrdma_free_context(struct ibv_context *ibvctx);

/*
 * qrdma.ko is not in the kernel tree, so it has no RDMA_DRIVER_* id to
 * match on: the PCI ID it binds to does.
 */
static const struct verbs_match_ent qrdma_table[] = {
	VERBS_PCI_MATCH(QRDMA_PCI_VENDOR_ID, QRDMA_PCI_DEVICE_ID, NULL),
	{}
};

static const struct verbs_context_ops qrdma_ctx_ops = {
	.alloc_mw = qrdma_alloc_mw,
	.alloc_pd = qrdma_alloc_pd,
	.attach_mcast = qrdma_attach_mcast,
	.bind_mw = qrdma_bind_mw,
	.create_ah = qrdma_create_ah,
	.create_cq = qrdma_create_cq,
	.create_cq_ex = qrdma_create_cq_ex,
	.create_qp = qrdma_create_qp,
	.create_qp_ex = qrdma_create_qp_ex,
	.create_srq = qrdma_create_srq,
	.dealloc_mw = qrdma_dealloc_mw,
	.dealloc_pd = qrdma_dealloc_pd,
	.dereg_mr = qrdma_dereg_mr,
	.destroy_ah = qrdma_destroy_ah,
	.destroy_cq = qrdma_destroy_cq,
	.destroy_qp = qrdma_destroy_qp,
	.destroy_srq = qrdma_destroy_srq,
	.detach_mcast = qrdma_detach_mcast,
	.modify_qp = qrdma_modify_qp,
	.modify_srq = qrdma_modify_srq,
	.poll_cq = qrdma_poll_cq,
	.post_recv = qrdma_post_recv,
	.post_send = qrdma_post_send,
	.post_srq_recv = qrdma_post_srq_recv,
	.query_device_ex = qrdma_query_device_ex,
	.query_port = qrdma_query_port,
	.query_qp = qrdma_query_qp,
	.query_srq = qrdma_query_srq,
	.reg_mr = qrdma_reg_mr,
	.req_notify_cq = qrdma_req_notify_cq,
	.resize_cq = qrdma_resize_cq,
	.free_context = qrdma_free_context,
};

/* The kernel must describe the device this provider was written for. */
static int qrdma_check_ucontext(struct qrdma_context *ctx,
				const struct uqrdma_alloc_ucontext_resp *resp)
{
	if (resp->sq_wqe_size != QRDMA_SQ_WQE_SIZE ||
	    resp->rq_wqe_size != QRDMA_RQ_WQE_SIZE ||
	    resp->cqe_size != QRDMA_CQE_SIZE ||
	    resp->ring_page_size != QRDMA_PAGE_SIZE) {
		verbs_err(&ctx->ibvctx,
			  "unsupported entry sizes: SQ %u, RQ %u, CQE %u, page %u\n",
			  resp->sq_wqe_size, resp->rq_wqe_size, resp->cqe_size,
			  resp->ring_page_size);
		return EOPNOTSUPP;
	}
	if (!resp->db_page_size ||
	    resp->db_page_size < QRDMA_DB_CQ_ARM + sizeof(uint64_t)) {
		verbs_err(&ctx->ibvctx, "bad doorbell page size %u\n",
			  resp->db_page_size);
		return EOPNOTSUPP;
	}
	return 0;
}

static struct verbs_context *qrdma_alloc_context(struct ibv_device *ibvdev,
						 int cmd_fd,
						 void *private_data)
{
	struct uqrdma_alloc_ucontext_resp resp = {};
	struct uqrdma_alloc_ucontext cmd = {};
	struct qrdma_context *ctx;
	int err;

	ctx = verbs_init_and_alloc_context(ibvdev, cmd_fd, ctx, ibvctx,
					   RDMA_DRIVER_UNKNOWN);
	if (!ctx)
		return NULL;

	if (qrdma_cmd_get_context(&ctx->ibvctx, &cmd.ibv_cmd, sizeof(cmd),
				  &resp.ibv_resp, sizeof(resp))) {
		verbs_err(&ctx->ibvctx, "ibv_cmd_get_context failed\n");
		goto err_free_ctx;
	}

	err = qrdma_check_ucontext(ctx, &resp);
	if (err) {
		errno = err;
		goto err_free_ctx;
	}
	ctx->device_caps = resp.device_caps;
	ctx->ring_page_size = resp.ring_page_size;
	ctx->max_qp_wr = resp.max_qp_wr;
	ctx->max_srq_wr = resp.max_srq_wr;
	ctx->max_cqe = resp.max_cqe;
	ctx->max_send_sge = min_t(uint32_t, resp.max_send_sge,
				  QRDMA_MAX_SEND_SGE);
	ctx->max_recv_sge = min_t(uint32_t, resp.max_recv_sge,
				  QRDMA_MAX_RECV_SGE);
	ctx->max_srq_sge = min_t(uint32_t, resp.max_srq_sge,
				 QRDMA_MAX_RECV_SGE);
	ctx->max_inline_data = min_t(uint32_t, resp.max_inline_data,
				     QRDMA_MAX_INLINE);
	pthread_mutex_init(&ctx->qp_table_mutex, NULL);

	ctx->db_size = resp.db_page_size;
	ctx->db = mmap(NULL, ctx->db_size, PROT_WRITE, MAP_SHARED, cmd_fd,
		       resp.db_mmap_key);
	if (ctx->db == MAP_FAILED) {
		verbs_err(&ctx->ibvctx, "cannot map the doorbell page: %s\n",
			  strerror(errno));
		goto err_destroy_mutex;
	}

	verbs_set_ops(&ctx->ibvctx, &qrdma_ctx_ops);
	return &ctx->ibvctx;

err_destroy_mutex:
	pthread_mutex_destroy(&ctx->qp_table_mutex);
err_free_ctx:
	verbs_uninit_context(&ctx->ibvctx);
	free(ctx);
	return NULL;
}

static void qrdma_free_context(struct ibv_context *ibvctx)
{
	struct qrdma_context *ctx = to_qrdma_ctx(ibvctx);
	int i;

	munmap(ctx->db, ctx->db_size);
	for (i = 0; i < QRDMA_QP_TABLE_SIZE; i++)
		free(atomic_load(&ctx->qp_table[i]));
	pthread_mutex_destroy(&ctx->qp_table_mutex);
	verbs_uninit_context(&ctx->ibvctx);
	free(ctx);
}

static struct verbs_device *
qrdma_device_alloc(struct verbs_sysfs_dev *sysfs_dev)
{
	struct qrdma_device *dev;

	dev = calloc(1, sizeof(*dev));
	if (!dev)
		return NULL;
	return &dev->ibvdev;
}

static void qrdma_uninit_device(struct verbs_device *verbs_device)
{
	free(to_qrdma_dev(&verbs_device->device));
}

static const struct verbs_device_ops qrdma_dev_ops = {
	.name = "qrdma",
	.match_min_abi_version = QRDMA_UVERBS_ABI_VERSION,
	.match_max_abi_version = QRDMA_UVERBS_ABI_VERSION,
	.match_table = qrdma_table,
	.alloc_device = qrdma_device_alloc,
	.uninit_device = qrdma_uninit_device,
	.alloc_context = qrdma_alloc_context,
};
PROVIDER_DRIVER(qrdma, qrdma_dev_ops);
