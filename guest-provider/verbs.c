// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libqrdma verbs: control verbs through qrdma.ko, and the data path.
 *
 * Posting writes WQEs into the rings and rings one doorbell per batch;
 * polling reads CQEs by their phase bit.  Neither enters the kernel.
 * Locking: one spinlock per work queue (posters), one per CQ (pollers).
 * A poller trusts a CQE only once its QP number names a QP of this context
 * that completes into this CQ and its WQE index is one outstanding; other
 * CQEs are skipped.  Taking a QP out of the QP table, or resetting its
 * queues, happens under the locks of its CQs, after the CQEs it still has
 * there are cleaned out (S12, S36).  No spinlock is held across a system
 * call: RESIZE_CQ runs under the CQ's resize_mutex, on which pollers and
 * those clean-ups wait.
 */

#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <ccan/minmax.h>
#include <util/compiler.h>
#include <util/mmio.h>
#include <util/util.h>

#include "qrdma.h"
#include "verbs.h"

/* The device's send opcodes are the verbs values: they pass unchanged. */
#define QRDMA_SAME_VALUE(a, b) static_assert((int)(a) == (int)(b), #a)
QRDMA_SAME_VALUE(IBV_WR_RDMA_WRITE, QRDMA_WR_RDMA_WRITE);
QRDMA_SAME_VALUE(IBV_WR_RDMA_WRITE_WITH_IMM, QRDMA_WR_RDMA_WRITE_WITH_IMM);
QRDMA_SAME_VALUE(IBV_WR_SEND, QRDMA_WR_SEND);
QRDMA_SAME_VALUE(IBV_WR_SEND_WITH_IMM, QRDMA_WR_SEND_WITH_IMM);
QRDMA_SAME_VALUE(IBV_WR_RDMA_READ, QRDMA_WR_RDMA_READ);
QRDMA_SAME_VALUE(IBV_WR_ATOMIC_CMP_AND_SWP, QRDMA_WR_ATOMIC_CMP_AND_SWP);
QRDMA_SAME_VALUE(IBV_WR_ATOMIC_FETCH_AND_ADD, QRDMA_WR_ATOMIC_FETCH_AND_ADD);
QRDMA_SAME_VALUE(IBV_WR_LOCAL_INV, QRDMA_WR_LOCAL_INV);
QRDMA_SAME_VALUE(IBV_WR_SEND_WITH_INV, QRDMA_WR_SEND_WITH_INV);
QRDMA_SAME_VALUE(IBV_WR_BIND_MW, QRDMA_WR_BIND_MW);
#ifdef HAVE_IBV_WR_FLUSH
QRDMA_SAME_VALUE(IBV_WR_FLUSH, QRDMA_WR_FLUSH);
QRDMA_SAME_VALUE(IBV_FLUSH_GLOBAL, QRDMA_FLUSH_GLOBAL);
QRDMA_SAME_VALUE(IBV_FLUSH_PERSISTENT, QRDMA_FLUSH_PERSISTENT);
QRDMA_SAME_VALUE(IBV_FLUSH_RANGE, QRDMA_FLUSH_RANGE);
QRDMA_SAME_VALUE(IBV_FLUSH_MR, QRDMA_FLUSH_MR);
QRDMA_SAME_VALUE(IBV_ACCESS_FLUSH_GLOBAL, QRDMA_ACCESS_FLUSH_GLOBAL);
#endif
#ifdef HAVE_IBV_WR_ATOMIC_WRITE
QRDMA_SAME_VALUE(IBV_WR_ATOMIC_WRITE, QRDMA_WR_ATOMIC_WRITE);
#endif
/* A window's access flags pass unchanged too. */
QRDMA_SAME_VALUE(IBV_ACCESS_LOCAL_WRITE, QRDMA_ACCESS_LOCAL_WRITE);
QRDMA_SAME_VALUE(IBV_ACCESS_REMOTE_WRITE, QRDMA_ACCESS_REMOTE_WRITE);
QRDMA_SAME_VALUE(IBV_ACCESS_REMOTE_READ, QRDMA_ACCESS_REMOTE_READ);
QRDMA_SAME_VALUE(IBV_ACCESS_REMOTE_ATOMIC, QRDMA_ACCESS_REMOTE_ATOMIC);

/* The header of a send WQE, before its SGEs or inline data. */
#define QRDMA_SQ_WQE_HDR_SIZE	offsetof(struct qrdma_sq_wqe, sge)

/* Rings and other memory the device reads or writes */

/* Zeroed whole pages, kept out of fork()ed children (the device has them). */
static int qrdma_alloc_buf(struct qrdma_buf *buf, size_t size)
{
	buf->size = align(size, QRDMA_PAGE_SIZE);
	buf->addr = mmap(NULL, buf->size, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf->addr == MAP_FAILED) {
		buf->addr = NULL;
		return errno;
	}
	if (ibv_dontfork_range(buf->addr, buf->size)) {
		munmap(buf->addr, buf->size);
		buf->addr = NULL;
		return ENOMEM;
	}
	return 0;
}

static void qrdma_free_buf(struct qrdma_buf *buf)
{
	if (!buf->addr)
		return;
	ibv_dofork_range(buf->addr, buf->size);
	munmap(buf->addr, buf->size);
	buf->addr = NULL;
}

static uint32_t qrdma_ilog2(uint32_t n)
{
	return 31 - __builtin_clz(n);
}

/* Ring entries for @n requests: a power of two, at least one. */
static uint32_t qrdma_ring_entries(uint32_t n)
{
	return roundup_pow_of_two(max_t(uint32_t, n, 1));
}

/*
 * One 64-bit doorbell write; the caller orders the WQE stores before it.
 * The device reads its registers little-endian, whatever the CPU.
 */
static void qrdma_ring_db(struct qrdma_context *ctx, uint32_t offset,
			  uint32_t handle, uint32_t index)
{
	mmio_write64_le((uint8_t *)ctx->db + offset,
			htole64(QRDMA_DB_VAL(handle, index)));
}

static bool qrdma_has_data_path(struct qrdma_context *ctx)
{
	if (ctx->device_caps & QRDMA_UCONTEXT_CAP_DATA_PATH)
		return true;
	verbs_err(&ctx->ibvctx, "the device has no data path\n");
	return false;
}

/* Device, port, PD, MR */

int qrdma_query_device_ex(struct ibv_context *ibvctx,
			  const struct ibv_query_device_ex_input *input,
			  struct ibv_device_attr_ex *attr, size_t attr_size)
{
	struct ib_uverbs_ex_query_device_resp resp;
	size_t resp_size = sizeof(resp);
	uint64_t fw_ver;
	int err;

	err = ibv_cmd_query_device_any(ibvctx, input, attr, attr_size, &resp,
				       &resp_size);
	if (err)
		return err;

	/* QRDMA_REG_VERSION: major in bits 31:16, minor in bits 15:0. */
	fw_ver = resp.base.fw_ver;
	snprintf(attr->orig_attr.fw_ver, sizeof(attr->orig_attr.fw_ver),
		 "%u.%u", QRDMA_VERSION_GET_MAJOR((uint32_t)fw_ver),
		 QRDMA_VERSION_GET_MINOR((uint32_t)fw_ver));
	return 0;
}

int qrdma_query_port(struct ibv_context *ibvctx, uint8_t port,
		     struct ibv_port_attr *attr)
{
	struct ibv_query_port cmd;

	return ibv_cmd_query_port(ibvctx, port, attr, &cmd, sizeof(cmd));
}

struct ibv_pd *qrdma_alloc_pd(struct ibv_context *ibvctx)
{
	struct ib_uverbs_alloc_pd_resp resp;
	struct ibv_alloc_pd cmd;
	struct qrdma_pd *pd;
	int err;

	pd = calloc(1, sizeof(*pd));
	if (!pd) {
		errno = ENOMEM;
		return NULL;
	}
	err = ibv_cmd_alloc_pd(ibvctx, &pd->ibvpd, &cmd, sizeof(cmd), &resp,
			       sizeof(resp));
	if (err) {
		free(pd);
		errno = err;
		return NULL;
	}
	return &pd->ibvpd;
}

int qrdma_dealloc_pd(struct ibv_pd *ibvpd)
{
	int err;

	err = ibv_cmd_dealloc_pd(ibvpd);
	if (err)
		return err;
	free(to_qrdma_pd(ibvpd));
	return 0;
}

struct ibv_mr *qrdma_reg_mr(struct ibv_pd *ibvpd, void *addr, size_t length,
			    uint64_t hca_va, int access)
{
	struct ib_uverbs_reg_mr_resp resp;
	struct ibv_reg_mr cmd;
	struct verbs_mr *vmr;
	int err;

	vmr = calloc(1, sizeof(*vmr));
	if (!vmr) {
		errno = ENOMEM;
		return NULL;
	}
	err = ibv_cmd_reg_mr(ibvpd, addr, length, hca_va, access, vmr, &cmd,
			     sizeof(cmd), &resp, sizeof(resp));
	if (err) {
		free(vmr);
		errno = err;
		return NULL;
	}
	return &vmr->ibv_mr;
}

int qrdma_dereg_mr(struct verbs_mr *vmr)
{
	int err;

	err = ibv_cmd_dereg_mr(vmr);
	if (err)
		return err;
	free(vmr);
	return 0;
}

/* Memory windows: allocated by the kernel, bound by send WQEs. */

struct ibv_mw *qrdma_alloc_mw(struct ibv_pd *ibvpd, enum ibv_mw_type type)
{
	struct qrdma_context *ctx = to_qrdma_ctx(ibvpd->context);
	struct ib_uverbs_alloc_mw_resp resp;
	struct ibv_alloc_mw cmd;
	struct ibv_mw *mw;
	int err;

	if (!(ctx->device_caps & QRDMA_UCONTEXT_CAP_MW)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	/* Windows the device has: any other type is a bad argument. */
	if (type != IBV_MW_TYPE_1 && type != IBV_MW_TYPE_2) {
		errno = EINVAL;
		return NULL;
	}
	mw = calloc(1, sizeof(*mw));
	if (!mw) {
		errno = ENOMEM;
		return NULL;
	}
	err = ibv_cmd_alloc_mw(ibvpd, type, mw, &cmd, sizeof(cmd), &resp,
			       sizeof(resp));
	if (err) {
		free(mw);
		errno = err;
		return NULL;
	}
	return mw;
}

int qrdma_dealloc_mw(struct ibv_mw *mw)
{
	int err;

	err = ibv_cmd_dealloc_mw(mw);
	if (err)
		return err;
	free(mw);
	return 0;
}

/* The QP table */

static struct qrdma_qp *qrdma_find_qp(struct qrdma_context *ctx, uint32_t qpn)
{
	struct qrdma_qp **leaf;

	if (qpn >> (2 * QRDMA_QP_TABLE_SHIFT))
		return NULL;
	leaf = atomic_load_explicit(&ctx->qp_table[qpn >> QRDMA_QP_TABLE_SHIFT],
				    memory_order_acquire);
	return leaf ? leaf[qpn & QRDMA_QP_TABLE_MASK] : NULL;
}

/* Under qp_table_mutex. */
static int qrdma_qp_table_reserve(struct qrdma_context *ctx, uint32_t qpn)
{
	_Atomic(struct qrdma_qp **) *slot;
	struct qrdma_qp **leaf;

	if (qpn >> (2 * QRDMA_QP_TABLE_SHIFT))
		return EINVAL;
	slot = &ctx->qp_table[qpn >> QRDMA_QP_TABLE_SHIFT];
	leaf = atomic_load_explicit(slot, memory_order_relaxed);
	if (!leaf) {
		leaf = calloc(QRDMA_QP_TABLE_SIZE, sizeof(*leaf));
		if (!leaf)
			return ENOMEM;
		atomic_store_explicit(slot, leaf, memory_order_release);
	}
	return leaf[qpn & QRDMA_QP_TABLE_MASK] ? EEXIST : 0;
}

/* Under qp_table_mutex and the QP's CQ locks, after a reserve. */
static void qrdma_qp_table_set(struct qrdma_context *ctx, uint32_t qpn,
			       struct qrdma_qp *qp)
{
	struct qrdma_qp **leaf;

	leaf = atomic_load_explicit(&ctx->qp_table[qpn >> QRDMA_QP_TABLE_SHIFT],
				    memory_order_relaxed);
	leaf[qpn & QRDMA_QP_TABLE_MASK] = qp;
}

/* Completion queues */

static struct qrdma_cqe *qrdma_cq_entry(struct qrdma_cq *cq, uint32_t index)
{
	struct qrdma_cqe *ring = cq->buf.addr;

	return &ring[index & ((1U << cq->log2) - 1)];
}

/*
 * Has the device written entry @index on the pass over the ring it is on?
 * The phase bit is set on even passes, clear on odd ones.
 */
static bool qrdma_cqe_valid(struct qrdma_cq *cq, uint32_t index)
{
	uint8_t phase = (index >> cq->log2) & 1 ? 0 : QRDMA_CQE_F_PHASE;
	uint8_t flags = atomic_load_explicit(
		(_Atomic(uint8_t) *)&qrdma_cq_entry(cq, index)->flags,
		memory_order_relaxed);

	return (flags & QRDMA_CQE_F_PHASE) == phase;
}

/* Let the device see the room polling made; after the entries are read. */
static void qrdma_cq_update_ci(struct qrdma_cq *cq)
{
	atomic_store_explicit(cq->ci_rec, htole32(cq->ci),
			      memory_order_release);
}

/*
 * Take cq->lock to consume CQEs.  While RESIZE_CQ moves the entries
 * nothing may be consumed, and the command may take long: the poller
 * sleeps until it is done rather than spin, and rather than find the CQ
 * empty, which would lose the wake-up of a consumer polling after a
 * completion event.
 */
static void qrdma_cq_lock_poll(struct qrdma_cq *cq)
{
	pthread_spin_lock(&cq->lock);
	while (unlikely(cq->resizing)) {
		pthread_spin_unlock(&cq->lock);
		pthread_mutex_lock(&cq->resize_mutex);
		pthread_mutex_unlock(&cq->resize_mutex);
		pthread_spin_lock(&cq->lock);
	}
}

/*
 * Keep the resizes of a QP's CQs away while its CQEs are cleaned out of
 * them: the device would copy entries the clean-up is changing.  Taken
 * before qp_table_mutex and the CQ locks.
 */
static void qrdma_hold_cq_resizes(struct qrdma_cq *a, struct qrdma_cq *b)
{
	if (a == b) {
		pthread_mutex_lock(&a->resize_mutex);
	} else if (a < b) {
		pthread_mutex_lock(&a->resize_mutex);
		pthread_mutex_lock(&b->resize_mutex);
	} else {
		pthread_mutex_lock(&b->resize_mutex);
		pthread_mutex_lock(&a->resize_mutex);
	}
}

static void qrdma_release_cq_resizes(struct qrdma_cq *a, struct qrdma_cq *b)
{
	if (a != b)
		pthread_mutex_unlock(&b->resize_mutex);
	pthread_mutex_unlock(&a->resize_mutex);
}

static void qrdma_lock_cqs(struct qrdma_cq *a, struct qrdma_cq *b)
{
	if (a == b) {
		pthread_spin_lock(&a->lock);
	} else if (a < b) {
		pthread_spin_lock(&a->lock);
		pthread_spin_lock(&b->lock);
	} else {
		pthread_spin_lock(&b->lock);
		pthread_spin_lock(&a->lock);
	}
}

static void qrdma_unlock_cqs(struct qrdma_cq *a, struct qrdma_cq *b)
{
	if (a != b)
		pthread_spin_unlock(&b->lock);
	pthread_spin_unlock(&a->lock);
}

/*
 * Forget the CQEs of @qp not polled yet (under cq->lock): QPN 0 is never
 * a QP's, so the poller skips them.  Receives an SRQ served are accounted
 * to it now, since the poller will not see them.
 */
static void qrdma_cq_clean(struct qrdma_cq *cq, struct qrdma_qp *qp)
{
	uint32_t i, end = cq->ci + (1U << cq->log2);

	for (i = cq->ci; i != end && qrdma_cqe_valid(cq, i); i++) {
		struct qrdma_cqe *cqe = qrdma_cq_entry(cq, i);

		udma_from_device_barrier();
		if (le32toh(cqe->qpn) != qp->qpn)
			continue;
		if (cqe->is_recv && qp->srq && qp->recv_cq == cq)
			atomic_fetch_add_explicit(&qp->srq->rq.ci, 1,
						  memory_order_release);
		cqe->qpn = 0;
	}
}

static enum ibv_wc_status qrdma_wc_status(uint8_t status)
{
	switch (status) {
	case QRDMA_WC_SUCCESS:
		return IBV_WC_SUCCESS;
	case QRDMA_WC_LOC_LEN_ERR:
		return IBV_WC_LOC_LEN_ERR;
	case QRDMA_WC_LOC_QP_OP_ERR:
		return IBV_WC_LOC_QP_OP_ERR;
	case QRDMA_WC_LOC_PROT_ERR:
		return IBV_WC_LOC_PROT_ERR;
	case QRDMA_WC_WR_FLUSH_ERR:
		return IBV_WC_WR_FLUSH_ERR;
	case QRDMA_WC_MW_BIND_ERR:
		return IBV_WC_MW_BIND_ERR;
	case QRDMA_WC_BAD_RESP_ERR:
		return IBV_WC_BAD_RESP_ERR;
	case QRDMA_WC_LOC_ACCESS_ERR:
		return IBV_WC_LOC_ACCESS_ERR;
	case QRDMA_WC_REM_INV_REQ_ERR:
		return IBV_WC_REM_INV_REQ_ERR;
	case QRDMA_WC_REM_ACCESS_ERR:
		return IBV_WC_REM_ACCESS_ERR;
	case QRDMA_WC_REM_OP_ERR:
		return IBV_WC_REM_OP_ERR;
	case QRDMA_WC_RETRY_EXC_ERR:
		return IBV_WC_RETRY_EXC_ERR;
	case QRDMA_WC_RNR_RETRY_EXC_ERR:
		return IBV_WC_RNR_RETRY_EXC_ERR;
	case QRDMA_WC_FATAL_ERR:
		return IBV_WC_FATAL_ERR;
	default:
		return IBV_WC_GENERAL_ERR;
	}
}

static enum ibv_wc_opcode qrdma_wc_opcode(uint8_t opcode)
{
	switch (opcode) {
	case QRDMA_WC_SEND:
		return IBV_WC_SEND;
	case QRDMA_WC_RDMA_WRITE:
		return IBV_WC_RDMA_WRITE;
	case QRDMA_WC_RDMA_READ:
		return IBV_WC_RDMA_READ;
	case QRDMA_WC_COMP_SWAP:
		return IBV_WC_COMP_SWAP;
	case QRDMA_WC_FETCH_ADD:
		return IBV_WC_FETCH_ADD;
	case QRDMA_WC_LOCAL_INV:
		return IBV_WC_LOCAL_INV;
	case QRDMA_WC_BIND_MW:
		return IBV_WC_BIND_MW;
#ifdef HAVE_IBV_WR_ATOMIC_WRITE
	case QRDMA_WC_ATOMIC_WRITE:
		return IBV_WC_ATOMIC_WRITE;
#endif
#ifdef HAVE_IBV_WR_FLUSH
	case QRDMA_WC_FLUSH:
		return IBV_WC_FLUSH;
#endif
	case QRDMA_WC_RECV_RDMA_WITH_IMM:
		return IBV_WC_RECV_RDMA_WITH_IMM;
	case QRDMA_WC_RECV:
	default:
		return IBV_WC_RECV;
	}
}

static unsigned int qrdma_wc_flags(const struct qrdma_cqe *cqe)
{
	unsigned int flags = 0;

	if (cqe->flags & QRDMA_CQE_F_GRH)
		flags |= IBV_WC_GRH;
	if (cqe->flags & QRDMA_CQE_F_WITH_IMM)
		flags |= IBV_WC_WITH_IMM;
	else if (cqe->flags & QRDMA_CQE_F_WITH_INV)
		flags |= IBV_WC_WITH_INV;
	return flags;
}

/*
 * The consumer's wr_id of the WQE @cookie of a QP's queue names, which
 * retires it and every WQE before it.  False if it is not outstanding.
 */
static bool qrdma_wq_complete(struct qrdma_wq *wq, uint64_t cookie,
			      uint64_t *wr_id)
{
	uint32_t pi = atomic_load_explicit(&wq->pi, memory_order_acquire);
	uint32_t ci = atomic_load_explicit(&wq->ci, memory_order_relaxed);
	uint32_t index = cookie;

	if (cookie > UINT32_MAX || index - ci >= pi - ci)
		return false;
	*wr_id = wq->wrid[index & ((1U << wq->log2) - 1)];
	/* The poster may reuse the entries once it sees this. */
	atomic_store_explicit(&wq->ci, index + 1, memory_order_release);
	return true;
}

/* Account for a CQE of @qp in @cq; false if it is not to be trusted. */
static bool qrdma_cqe_complete(struct qrdma_cq *cq, struct qrdma_qp *qp,
			       const struct qrdma_cqe *cqe, uint64_t *wr_id)
{
	if (!cqe->is_recv)
		return qp->send_cq == cq &&
		       qrdma_wq_complete(&qp->sq, le64toh(cqe->wr_id), wr_id);
	if (qp->recv_cq != cq)
		return false;
	if (!qp->srq)
		return qrdma_wq_complete(&qp->rq, le64toh(cqe->wr_id), wr_id);
	/* An SRQ WQE carries the wr_id; the SRQ serves in order. */
	*wr_id = le64toh(cqe->wr_id);
	atomic_fetch_add_explicit(&qp->srq->rq.ci, 1, memory_order_release);
	return true;
}

/*
 * The next CQE to report, with its QP and wr_id, or NULL when there is
 * none; the ones not to be trusted are consumed on the way (S12).  The
 * caller consumes the one returned by advancing cq->ci.  Under cq->lock.
 */
static struct qrdma_cqe *qrdma_next_cqe(struct qrdma_cq *cq,
					struct qrdma_qp **qp, uint64_t *wr_id)
{
	struct qrdma_context *ctx = to_qrdma_ctx(cq->vcq.cq.context);
	struct qrdma_cqe *cqe;

	while (qrdma_cqe_valid(cq, cq->ci)) {
		cqe = qrdma_cq_entry(cq, cq->ci);
		/* The flags byte is written last: read the rest after it. */
		udma_from_device_barrier();
		*qp = qrdma_find_qp(ctx, le32toh(cqe->qpn));
		if (likely(*qp && qrdma_cqe_complete(cq, *qp, cqe, wr_id)))
			return cqe;
		if (cqe->qpn)
			verbs_debug(&ctx->ibvctx,
				    "CQ %#x: CQE %u of QP %#x skipped\n",
				    cq->cqn, cq->ci, le32toh(cqe->qpn));
		cq->ci++;
	}
	return NULL;
}

static void qrdma_fill_wc(const struct qrdma_cqe *cqe, struct qrdma_qp *qp,
			  uint64_t wr_id, struct ibv_wc *wc)
{
	wc->wr_id = wr_id;
	wc->status = qrdma_wc_status(cqe->status);
	wc->opcode = qrdma_wc_opcode(cqe->opcode);
	wc->vendor_err = cqe->status == QRDMA_WC_SUCCESS ? 0 : cqe->status;
	wc->byte_len = le32toh(cqe->byte_len);
	wc->qp_num = qp->qpn;
	wc->src_qp = le32toh(cqe->src_qp);
	wc->wc_flags = qrdma_wc_flags(cqe);
	if (cqe->flags & QRDMA_CQE_F_WITH_IMM)
		/* As the sender gave it: network order already. */
		wc->imm_data = cqe->imm_data;
	else if (cqe->flags & QRDMA_CQE_F_WITH_INV)
		wc->invalidated_rkey = le32toh(cqe->invalidate_rkey);
	else
		wc->imm_data = 0;
	/* One P_Key: index 0, where the VLAN may be instead. */
	wc->pkey_index = cqe->flags & QRDMA_CQE_F_VLAN ? 0 :
			 le16toh(cqe->pkey_index);
	wc->slid = 0;
	wc->sl = cqe->sl;
	wc->dlid_path_bits = 0;
}

int qrdma_poll_cq(struct ibv_cq *ibvcq, int ne, struct ibv_wc *wc)
{
	struct qrdma_cq *cq = to_qrdma_cq(ibvcq);
	struct qrdma_cqe *cqe;
	struct qrdma_qp *qp;
	uint64_t wr_id;
	uint32_t start;
	int n = 0;

	qrdma_cq_lock_poll(cq);
	start = cq->ci;
	while (n < ne) {
		cqe = qrdma_next_cqe(cq, &qp, &wr_id);
		if (!cqe)
			break;
		qrdma_fill_wc(cqe, qp, wr_id, &wc[n++]);
		cq->ci++;
	}
	if (cq->ci != start)
		qrdma_cq_update_ci(cq);
	pthread_spin_unlock(&cq->lock);
	return n;
}

/* The extended poll: the CQE is read where it lies, field by field. */

static int qrdma_cq_ex_fetch(struct qrdma_cq *cq)
{
	struct ibv_cq_ex *ibvcqx = &cq->vcq.cq_ex;
	uint64_t wr_id;

	cq->cur_cqe = qrdma_next_cqe(cq, &cq->cur_qp, &wr_id);
	if (!cq->cur_cqe)
		return ENOENT;
	ibvcqx->wr_id = wr_id;
	ibvcqx->status = qrdma_wc_status(cq->cur_cqe->status);
	return 0;
}

static int qrdma_start_poll(struct ibv_cq_ex *ibvcqx,
			    struct ibv_poll_cq_attr *attr)
{
	struct qrdma_cq *cq = to_qrdma_cq_ex(ibvcqx);
	uint32_t start;
	int err;

	if (unlikely(attr->comp_mask))
		return EINVAL;

	qrdma_cq_lock_poll(cq);
	start = cq->ci;
	err = qrdma_cq_ex_fetch(cq);
	if (err) {
		/* No end_poll follows: give back what was skipped now. */
		if (cq->ci != start)
			qrdma_cq_update_ci(cq);
		pthread_spin_unlock(&cq->lock);
	}
	return err;
}

static int qrdma_next_poll(struct ibv_cq_ex *ibvcqx)
{
	struct qrdma_cq *cq = to_qrdma_cq_ex(ibvcqx);

	cq->ci++;
	return qrdma_cq_ex_fetch(cq);
}

static void qrdma_end_poll(struct ibv_cq_ex *ibvcqx)
{
	struct qrdma_cq *cq = to_qrdma_cq_ex(ibvcqx);

	if (cq->cur_cqe) {
		cq->ci++;
		cq->cur_cqe = NULL;
	}
	qrdma_cq_update_ci(cq);
	pthread_spin_unlock(&cq->lock);
}

static enum ibv_wc_opcode qrdma_wc_read_opcode(struct ibv_cq_ex *ibvcqx)
{
	return qrdma_wc_opcode(to_qrdma_cq_ex(ibvcqx)->cur_cqe->opcode);
}

static uint32_t qrdma_wc_read_vendor_err(struct ibv_cq_ex *ibvcqx)
{
	uint8_t status = to_qrdma_cq_ex(ibvcqx)->cur_cqe->status;

	return status == QRDMA_WC_SUCCESS ? 0 : status;
}

static uint32_t qrdma_wc_read_byte_len(struct ibv_cq_ex *ibvcqx)
{
	return le32toh(to_qrdma_cq_ex(ibvcqx)->cur_cqe->byte_len);
}

static __be32 qrdma_wc_read_imm_data(struct ibv_cq_ex *ibvcqx)
{
	const struct qrdma_cqe *cqe = to_qrdma_cq_ex(ibvcqx)->cur_cqe;

	/* For IBV_WC_WITH_INV, the rkey, in host order as verbs wants it. */
	if (cqe->flags & QRDMA_CQE_F_WITH_INV)
		return (__force __be32)le32toh(cqe->invalidate_rkey);
	return cqe->imm_data;
}

static uint32_t qrdma_wc_read_qp_num(struct ibv_cq_ex *ibvcqx)
{
	return to_qrdma_cq_ex(ibvcqx)->cur_qp->qpn;
}

static uint32_t qrdma_wc_read_src_qp(struct ibv_cq_ex *ibvcqx)
{
	return le32toh(to_qrdma_cq_ex(ibvcqx)->cur_cqe->src_qp);
}

static unsigned int qrdma_wc_read_wc_flags(struct ibv_cq_ex *ibvcqx)
{
	return qrdma_wc_flags(to_qrdma_cq_ex(ibvcqx)->cur_cqe);
}

static uint32_t qrdma_wc_read_slid(struct ibv_cq_ex *ibvcqx)
{
	return 0;
}

static uint8_t qrdma_wc_read_sl(struct ibv_cq_ex *ibvcqx)
{
	return to_qrdma_cq_ex(ibvcqx)->cur_cqe->sl;
}

static uint8_t qrdma_wc_read_dlid_path_bits(struct ibv_cq_ex *ibvcqx)
{
	return 0;
}

/*
 * The 802.1Q VLAN ID a UD datagram came with (the device reports no
 * priority bits); 0 without a tag.
 */
static uint16_t qrdma_wc_read_cvlan(struct ibv_cq_ex *ibvcqx)
{
	const struct qrdma_cqe *cqe = to_qrdma_cq_ex(ibvcqx)->cur_cqe;

	/* The ID alone, as qrdma.ko takes it: bits 15:12 are not the device's. */
	if (!(cqe->flags & QRDMA_CQE_F_VLAN))
		return 0;
	return le16toh(cqe->vlan_id) & 0xfff;
}

static void qrdma_cq_fill_pfns(struct qrdma_cq *cq,
			       const struct ibv_cq_init_attr_ex *attr)
{
	struct ibv_cq_ex *ibvcqx = &cq->vcq.cq_ex;

	ibvcqx->start_poll = qrdma_start_poll;
	ibvcqx->next_poll = qrdma_next_poll;
	ibvcqx->end_poll = qrdma_end_poll;

	ibvcqx->read_opcode = qrdma_wc_read_opcode;
	ibvcqx->read_vendor_err = qrdma_wc_read_vendor_err;
	ibvcqx->read_wc_flags = qrdma_wc_read_wc_flags;

	if (attr->wc_flags & IBV_WC_EX_WITH_BYTE_LEN)
		ibvcqx->read_byte_len = qrdma_wc_read_byte_len;
	if (attr->wc_flags & IBV_WC_EX_WITH_IMM)
		ibvcqx->read_imm_data = qrdma_wc_read_imm_data;
	if (attr->wc_flags & IBV_WC_EX_WITH_QP_NUM)
		ibvcqx->read_qp_num = qrdma_wc_read_qp_num;
	if (attr->wc_flags & IBV_WC_EX_WITH_SRC_QP)
		ibvcqx->read_src_qp = qrdma_wc_read_src_qp;
	if (attr->wc_flags & IBV_WC_EX_WITH_SLID)
		ibvcqx->read_slid = qrdma_wc_read_slid;
	if (attr->wc_flags & IBV_WC_EX_WITH_SL)
		ibvcqx->read_sl = qrdma_wc_read_sl;
	if (attr->wc_flags & IBV_WC_EX_WITH_DLID_PATH_BITS)
		ibvcqx->read_dlid_path_bits = qrdma_wc_read_dlid_path_bits;
	if (attr->wc_flags & IBV_WC_EX_WITH_CVLAN)
		ibvcqx->read_cvlan = qrdma_wc_read_cvlan;
}

static struct ibv_cq_ex *create_cq(struct ibv_context *ibvctx,
				   struct ibv_cq_init_attr_ex *attr)
{
	struct qrdma_context *ctx = to_qrdma_ctx(ibvctx);
	struct uqrdma_create_cq_resp resp = {};
	struct uqrdma_create_cq cmd = {};
	uint64_t wc_flags = IBV_WC_STANDARD_FLAGS;
	struct qrdma_cq *cq;
	uint32_t entries;
	int err;

	/* The VLAN takes the P_Key index's place in CQEs that carry it. */
	if (ctx->device_caps & QRDMA_UCONTEXT_CAP_CQE_VLAN)
		wc_flags |= IBV_WC_EX_WITH_CVLAN;
	if (!check_comp_mask(attr->comp_mask, IBV_CQ_INIT_ATTR_MASK_FLAGS) ||
	    ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
	     !check_comp_mask(attr->flags,
			      IBV_CREATE_CQ_ATTR_SINGLE_THREADED)) ||
	    !check_comp_mask(attr->wc_flags, wc_flags)) {
		verbs_err(&ctx->ibvctx,
			  "unsupported CQ comp_mask %#x, flags %#x, wc_flags %#" PRIx64 "\n",
			  attr->comp_mask, attr->flags, attr->wc_flags);
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (!qrdma_has_data_path(ctx)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (!attr->cqe || attr->cqe > ctx->max_cqe) {
		errno = EINVAL;
		return NULL;
	}
	entries = qrdma_ring_entries(attr->cqe);

	cq = calloc(1, sizeof(*cq));
	if (!cq) {
		errno = ENOMEM;
		return NULL;
	}
	cq->log2 = qrdma_ilog2(entries);
	/* Zeroed, so that no entry carries the phase of the first pass. */
	err = qrdma_alloc_buf(&cq->buf, (size_t)entries * QRDMA_CQE_SIZE);
	if (err)
		goto err_free_cq;
	/* Its own page: it outlives the ring when the CQ is resized. */
	err = qrdma_alloc_buf(&cq->ci_buf, sizeof(*cq->ci_rec));
	if (err)
		goto err_free_ring;
	cq->ci_rec = cq->ci_buf.addr;

	cmd.entries = entries;
	cmd.ring_va = (uintptr_t)cq->buf.addr;
	cmd.ci_va = (uintptr_t)cq->ci_rec;
	if (attr->wc_flags & IBV_WC_EX_WITH_CVLAN)
		cmd.comp_mask |= QRDMA_CREATE_CQ_VLAN;
	err = qrdma_cmd_create_cq_ex(ibvctx, attr, &cq->vcq, &cmd.ibv_cmd,
				     sizeof(cmd), &resp.ibv_resp, sizeof(resp));
	if (err) {
		verbs_err(&ctx->ibvctx, "CQ of %u entries: create failed: %d\n",
			  entries, err);
		goto err_free_ci;
	}
	cq->cqn = resp.cqn;
	if ((cmd.comp_mask & QRDMA_CREATE_CQ_VLAN) &&
	    !(resp.comp_mask & QRDMA_CREATE_CQ_VLAN)) {
		verbs_err(&ctx->ibvctx, "CQ %#x: the kernel left out the VLAN\n",
			  cq->cqn);
		ibv_cmd_destroy_cq(&cq->vcq.cq);
		err = EOPNOTSUPP;
		goto err_free_ci;
	}

	pthread_spin_init(&cq->lock, PTHREAD_PROCESS_PRIVATE);
	pthread_mutex_init(&cq->resize_mutex, NULL);
	qrdma_cq_fill_pfns(cq, attr);
	return &cq->vcq.cq_ex;

err_free_ci:
	qrdma_free_buf(&cq->ci_buf);
err_free_ring:
	qrdma_free_buf(&cq->buf);
err_free_cq:
	free(cq);
	errno = err;
	return NULL;
}

struct ibv_cq *qrdma_create_cq(struct ibv_context *ibvctx, int cqe,
			       struct ibv_comp_channel *channel,
			       int comp_vector)
{
	struct ibv_cq_init_attr_ex attr = {
		.cqe = cqe,
		.channel = channel,
		.comp_vector = comp_vector,
	};
	struct ibv_cq_ex *ibvcqx;

	if (cqe <= 0) {
		errno = EINVAL;
		return NULL;
	}
	ibvcqx = create_cq(ibvctx, &attr);
	return ibvcqx ? ibv_cq_ex_to_cq(ibvcqx) : NULL;
}

struct ibv_cq_ex *qrdma_create_cq_ex(struct ibv_context *ibvctx,
				     struct ibv_cq_init_attr_ex *attr)
{
	return create_cq(ibvctx, attr);
}

int qrdma_resize_cq(struct ibv_cq *ibvcq, int cqe)
{
	struct qrdma_context *ctx = to_qrdma_ctx(ibvcq->context);
	struct qrdma_cq *cq = to_qrdma_cq(ibvcq);
	struct uqrdma_resize_cq_resp resp = {};
	struct uqrdma_resize_cq cmd = {};
	struct qrdma_buf buf;
	uint32_t entries;
	int err;

	if (cqe <= 0 || (uint32_t)cqe > ctx->max_cqe)
		return EINVAL;
	entries = qrdma_ring_entries(cqe);
	err = qrdma_alloc_buf(&buf, (size_t)entries * QRDMA_CQE_SIZE);
	if (err)
		return err;

	/*
	 * The device moves the entries not polled yet, from cmd.ci on, to
	 * the start of the new ring; nobody consumes any until it has.  The
	 * command is not issued under cq->lock: pollers wait for it on
	 * resize_mutex, asleep.
	 */
	pthread_mutex_lock(&cq->resize_mutex);
	pthread_spin_lock(&cq->lock);
	cq->resizing = true;
	cmd.ci = cq->ci;
	pthread_spin_unlock(&cq->lock);

	cmd.entries = entries;
	cmd.ring_va = (uintptr_t)buf.addr;
	err = ibv_cmd_resize_cq(ibvcq, cqe, &cmd.ibv_cmd, sizeof(cmd),
				&resp.ibv_resp, sizeof(resp));

	pthread_spin_lock(&cq->lock);
	if (!err) {
		struct qrdma_buf old = cq->buf;

		cq->buf = buf;
		buf = old;
		cq->log2 = qrdma_ilog2(entries);
		cq->ci = 0;
		qrdma_cq_update_ci(cq);
	}
	cq->resizing = false;
	pthread_spin_unlock(&cq->lock);
	pthread_mutex_unlock(&cq->resize_mutex);

	/* The old ring on success, the new one on failure. */
	qrdma_free_buf(&buf);
	return err;
}

int qrdma_destroy_cq(struct ibv_cq *ibvcq)
{
	struct qrdma_cq *cq = to_qrdma_cq(ibvcq);
	int err;

	err = ibv_cmd_destroy_cq(ibvcq);
	if (err)
		return err;
	qrdma_free_buf(&cq->ci_buf);
	qrdma_free_buf(&cq->buf);
	pthread_mutex_destroy(&cq->resize_mutex);
	pthread_spin_destroy(&cq->lock);
	free(cq);
	return 0;
}

int qrdma_req_notify_cq(struct ibv_cq *ibvcq, int solicited_only)
{
	struct qrdma_cq *cq = to_qrdma_cq(ibvcq);

	qrdma_ring_db(to_qrdma_ctx(ibvcq->context), QRDMA_DB_CQ_ARM, cq->cqn,
		      solicited_only ? QRDMA_DB_CQ_ARM_SOLICITED :
				       QRDMA_DB_CQ_ARM_NEXT);
	return 0;
}

/* Work queues */

static int qrdma_wq_init(struct qrdma_wq *wq, uint32_t entries,
			 uint32_t wqe_size, bool wrids)
{
	int err;

	wq->log2 = qrdma_ilog2(entries);
	wq->wqe_size = wqe_size;
	atomic_init(&wq->pi, 0);
	atomic_init(&wq->ci, 0);
	err = qrdma_alloc_buf(&wq->buf, (size_t)entries * wqe_size);
	if (err)
		return err;
	if (wrids) {
		wq->wrid = calloc(entries, sizeof(*wq->wrid));
		if (!wq->wrid) {
			qrdma_free_buf(&wq->buf);
			return ENOMEM;
		}
	}
	pthread_spin_init(&wq->lock, PTHREAD_PROCESS_PRIVATE);
	return 0;
}

static void qrdma_wq_destroy(struct qrdma_wq *wq)
{
	if (!wq->buf.addr)
		return;
	pthread_spin_destroy(&wq->lock);
	free(wq->wrid);
	wq->wrid = NULL;
	qrdma_free_buf(&wq->buf);
}

/* Forget what was posted: after a move to RESET the device has too. */
static void qrdma_wq_reset(struct qrdma_wq *wq)
{
	if (!wq->buf.addr)
		return;
	pthread_spin_lock(&wq->lock);
	atomic_store_explicit(&wq->pi, 0, memory_order_relaxed);
	atomic_store_explicit(&wq->ci, 0, memory_order_relaxed);
	pthread_spin_unlock(&wq->lock);
}

static void *qrdma_wq_entry(struct qrdma_wq *wq, uint32_t index)
{
	return (uint8_t *)wq->buf.addr +
	       (size_t)(index & ((1U << wq->log2) - 1)) * wq->wqe_size;
}

/* S38: a full ring refuses with ENOMEM. */
static bool qrdma_wq_full(struct qrdma_wq *wq, uint32_t pi)
{
	uint32_t log2 = wq->log2;

	/* During an SRQ resize a WQE must fit both rings. */
	if (wq->next_buf)
		log2 = min(log2, wq->next_log2);
	return pi - atomic_load_explicit(&wq->ci, memory_order_acquire) >=
	       (1U << log2);
}

static void qrdma_set_sge(struct qrdma_sge *sge, uint32_t lkey,
			  uint64_t addr, uint32_t length)
{
	sge->addr = htole64(addr);
	sge->length = htole32(length);
	sge->lkey = htole32(lkey);
}

/*
 * Post receive WQEs to a QP's RQ (whose WQEs carry their index, with the
 * wr_id in wq->wrid[]) or to an SRQ (whose WQEs carry the wr_id).
 */
static int qrdma_post_rq(struct qrdma_context *ctx, struct qrdma_wq *wq,
			 uint32_t db, uint32_t handle, struct ibv_recv_wr *wr,
			 struct ibv_recv_wr **bad_wr)
{
	struct qrdma_rq_wqe *wqe;
	uint32_t pi, start;
	int err = 0;
	int i;

	pthread_spin_lock(&wq->lock);
	start = pi = atomic_load_explicit(&wq->pi, memory_order_relaxed);
	for (; wr; wr = wr->next) {
		if (unlikely(qrdma_wq_full(wq, pi))) {
			err = ENOMEM;
			break;
		}
		if (unlikely(wr->num_sge < 0 ||
			     (uint32_t)wr->num_sge > wq->max_sge)) {
			err = EINVAL;
			break;
		}
		wqe = qrdma_wq_entry(wq, pi);
		if (wq->wrid) {
			wqe->wr_id = htole64(pi);
			wq->wrid[pi & ((1U << wq->log2) - 1)] = wr->wr_id;
		} else {
			wqe->wr_id = htole64(wr->wr_id);
		}
		wqe->num_sge = htole32(wr->num_sge);
		wqe->rsvd = 0;
		for (i = 0; i < wr->num_sge; i++)
			qrdma_set_sge(&wqe->sge[i], wr->sg_list[i].lkey,
				      wr->sg_list[i].addr,
				      wr->sg_list[i].length);
		if (unlikely(wq->next_buf))
			memcpy((uint8_t *)wq->next_buf->addr +
			       (size_t)(pi & ((1U << wq->next_log2) - 1)) *
			       wq->wqe_size, wqe, wq->wqe_size);
		pi++;
	}
	if (pi != start) {
		/* Pollers read wrid[] below pi. */
		atomic_store_explicit(&wq->pi, pi, memory_order_release);
		udma_to_device_barrier();
		qrdma_ring_db(ctx, db, handle, pi);
	}
	pthread_spin_unlock(&wq->lock);

	if (err)
		*bad_wr = wr;
	return err;
}

/* Shared receive queues */

struct ibv_srq *qrdma_create_srq(struct ibv_pd *ibvpd,
				 struct ibv_srq_init_attr *attr)
{
	struct qrdma_context *ctx = to_qrdma_ctx(ibvpd->context);
	struct uqrdma_create_srq_resp resp = {};
	struct uqrdma_create_srq cmd = {};
	struct qrdma_srq *srq;
	uint32_t entries;
	int err;

	if (!qrdma_has_data_path(ctx)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (!attr->attr.max_wr || attr->attr.max_wr > ctx->max_srq_wr ||
	    attr->attr.max_sge > ctx->max_srq_sge) {
		verbs_err(&ctx->ibvctx, "SRQ of %u WRs, %u SGEs: too large\n",
			  attr->attr.max_wr, attr->attr.max_sge);
		errno = EINVAL;
		return NULL;
	}
	entries = qrdma_ring_entries(attr->attr.max_wr);

	srq = calloc(1, sizeof(*srq));
	if (!srq) {
		errno = ENOMEM;
		return NULL;
	}
	err = qrdma_wq_init(&srq->rq, entries, QRDMA_RQ_WQE_SIZE, false);
	if (err)
		goto err_free_srq;

	cmd.entries = entries;
	cmd.ring_va = (uintptr_t)srq->rq.buf.addr;
	err = ibv_cmd_create_srq(ibvpd, &srq->vsrq.srq, attr, &cmd.ibv_cmd,
				 sizeof(cmd), &resp.ibv_resp, sizeof(resp));
	if (err) {
		verbs_err(&ctx->ibvctx, "SRQ of %u entries: create failed: %d\n",
			  entries, err);
		goto err_destroy_wq;
	}
	srq->srqn = resp.srqn;
	srq->rq.max_sge = min_t(uint32_t, resp.max_sge, QRDMA_MAX_RECV_SGE);
	pthread_mutex_init(&srq->resize_mutex, NULL);
	return &srq->vsrq.srq;

err_destroy_wq:
	qrdma_wq_destroy(&srq->rq);
err_free_srq:
	free(srq);
	errno = err;
	return NULL;
}

/*
 * Resize: the device copies the WQEs it holds into the new ring when the
 * command executes; what is posted meanwhile goes into both rings.
 */
static int qrdma_resize_srq(struct qrdma_srq *srq, struct ibv_srq_attr *attr,
			    int attr_mask)
{
	struct qrdma_context *ctx = to_qrdma_ctx(srq->vsrq.srq.context);
	struct uqrdma_modify_srq cmd = {};
	struct qrdma_wq *wq = &srq->rq;
	struct qrdma_buf buf, old;
	uint32_t entries, posted;
	int err;

	if (!attr->max_wr || attr->max_wr > ctx->max_srq_wr)
		return EINVAL;
	entries = qrdma_ring_entries(attr->max_wr);
	err = qrdma_alloc_buf(&buf, (size_t)entries * wq->wqe_size);
	if (err)
		return err;

	pthread_spin_lock(&wq->lock);
	posted = atomic_load_explicit(&wq->pi, memory_order_relaxed) -
		 atomic_load_explicit(&wq->ci, memory_order_acquire);
	if (posted > entries) {
		pthread_spin_unlock(&wq->lock);
		qrdma_free_buf(&buf);
		return EINVAL;
	}
	wq->next_buf = &buf;
	wq->next_log2 = qrdma_ilog2(entries);
	pthread_spin_unlock(&wq->lock);

	cmd.entries = entries;
	cmd.ring_va = (uintptr_t)buf.addr;
	err = ibv_cmd_modify_srq(&srq->vsrq.srq, attr, attr_mask, &cmd.ibv_cmd,
				 sizeof(cmd));

	pthread_spin_lock(&wq->lock);
	if (!err) {
		old = wq->buf;
		wq->buf = buf;
		wq->log2 = wq->next_log2;
	} else {
		old = buf;
	}
	wq->next_buf = NULL;
	pthread_spin_unlock(&wq->lock);
	qrdma_free_buf(&old);
	return err;
}

int qrdma_modify_srq(struct ibv_srq *ibvsrq, struct ibv_srq_attr *attr,
		     int attr_mask)
{
	struct qrdma_srq *srq = to_qrdma_srq(ibvsrq);
	struct ibv_modify_srq cmd;
	int err;

	if (!(attr_mask & IBV_SRQ_MAX_WR))
		return ibv_cmd_modify_srq(ibvsrq, attr, attr_mask, &cmd,
					  sizeof(cmd));

	pthread_mutex_lock(&srq->resize_mutex);
	err = qrdma_resize_srq(srq, attr, attr_mask);
	pthread_mutex_unlock(&srq->resize_mutex);
	return err;
}

int qrdma_query_srq(struct ibv_srq *ibvsrq, struct ibv_srq_attr *attr)
{
	struct ibv_query_srq cmd;

	return ibv_cmd_query_srq(ibvsrq, attr, &cmd, sizeof(cmd));
}

int qrdma_destroy_srq(struct ibv_srq *ibvsrq)
{
	struct qrdma_srq *srq = to_qrdma_srq(ibvsrq);
	int err;

	err = ibv_cmd_destroy_srq(ibvsrq);
	if (err)
		return err;
	pthread_mutex_destroy(&srq->resize_mutex);
	qrdma_wq_destroy(&srq->rq);
	free(srq);
	return 0;
}

int qrdma_post_srq_recv(struct ibv_srq *ibvsrq, struct ibv_recv_wr *wr,
			struct ibv_recv_wr **bad_wr)
{
	struct qrdma_srq *srq = to_qrdma_srq(ibvsrq);

	return qrdma_post_rq(to_qrdma_ctx(ibvsrq->context), &srq->rq,
			     QRDMA_DB_SRQ, srq->srqn, wr, bad_wr);
}

/* Queue pairs */

#define QRDMA_UD_SEND_OPS	(IBV_QP_EX_WITH_SEND | \
				 IBV_QP_EX_WITH_SEND_WITH_IMM)
#define QRDMA_UC_SEND_OPS	(QRDMA_UD_SEND_OPS | \
				 IBV_QP_EX_WITH_RDMA_WRITE | \
				 IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | \
				 IBV_QP_EX_WITH_LOCAL_INV)
#define QRDMA_RC_SEND_OPS	(QRDMA_UC_SEND_OPS | \
				 IBV_QP_EX_WITH_RDMA_READ | \
				 IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP | \
				 IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD | \
				 IBV_QP_EX_WITH_SEND_WITH_INV)

static uint64_t qrdma_send_ops(struct qrdma_context *ctx,
			       enum ibv_qp_type qp_type)
{
	uint64_t rc_ops = QRDMA_RC_SEND_OPS;
	uint64_t uc_ops = QRDMA_UC_SEND_OPS;

	/*
	 * An rdma-core without these verbs (before 45) has no way to post
	 * them: they are not offered there, whatever the device can do.
	 */
#ifdef HAVE_IBV_WR_ATOMIC_WRITE
	if (ctx->device_caps & QRDMA_UCONTEXT_CAP_ATOMIC_WRITE)
		rc_ops |= IBV_QP_EX_WITH_ATOMIC_WRITE;
#endif
#ifdef HAVE_IBV_WR_FLUSH
	if (ctx->device_caps & QRDMA_UCONTEXT_CAP_FLUSH)
		rc_ops |= IBV_QP_EX_WITH_FLUSH;
#endif
	if (ctx->device_caps & QRDMA_UCONTEXT_CAP_MW) {
		rc_ops |= IBV_QP_EX_WITH_BIND_MW;
		uc_ops |= IBV_QP_EX_WITH_BIND_MW;
	}

	switch (qp_type) {
	case IBV_QPT_RC:
		return rc_ops;
	case IBV_QPT_UC:
		return uc_ops;
	default:
		return QRDMA_UD_SEND_OPS;
	}
}

/* The send operations each QP type takes, as IBV_QP_EX_WITH_* bits. */
static bool qrdma_send_op_ok(struct qrdma_qp *qp, enum ibv_wr_opcode opcode)
{
	uint64_t op;

	switch (opcode) {
	case IBV_WR_SEND:
		op = IBV_QP_EX_WITH_SEND;
		break;
	case IBV_WR_SEND_WITH_IMM:
		op = IBV_QP_EX_WITH_SEND_WITH_IMM;
		break;
	case IBV_WR_RDMA_WRITE:
		op = IBV_QP_EX_WITH_RDMA_WRITE;
		break;
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		op = IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM;
		break;
	case IBV_WR_RDMA_READ:
		op = IBV_QP_EX_WITH_RDMA_READ;
		break;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		op = IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP;
		break;
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		op = IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
		break;
	case IBV_WR_LOCAL_INV:
		op = IBV_QP_EX_WITH_LOCAL_INV;
		break;
	case IBV_WR_SEND_WITH_INV:
		op = IBV_QP_EX_WITH_SEND_WITH_INV;
		break;
	case IBV_WR_BIND_MW:
		op = IBV_QP_EX_WITH_BIND_MW;
		break;
	default:
		return false;
	}
	return qrdma_send_ops(to_qrdma_ctx(qp->vqp.qp.context),
			      qp->vqp.qp.qp_type) & op;
}

#define QRDMA_QP_INIT_ATTR_MASK	(IBV_QP_INIT_ATTR_PD | \
				 IBV_QP_INIT_ATTR_SEND_OPS_FLAGS | \
				 IBV_QP_INIT_ATTR_CREATE_FLAGS | \
				 IBV_QP_INIT_ATTR_MAX_TSO_HEADER)

static int qrdma_check_qp_attr(struct qrdma_context *ctx,
			       const struct ibv_qp_init_attr_ex *attr)
{
	const struct ibv_qp_cap *cap = &attr->cap;

	/* No creation flags nor TSO: they are accepted only when zero. */
	if (!check_comp_mask(attr->comp_mask, QRDMA_QP_INIT_ATTR_MASK) ||
	    !(attr->comp_mask & IBV_QP_INIT_ATTR_PD) ||
	    ((attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) &&
	     attr->create_flags) ||
	    ((attr->comp_mask & IBV_QP_INIT_ATTR_MAX_TSO_HEADER) &&
	     attr->max_tso_header)) {
		verbs_err(&ctx->ibvctx, "unsupported QP comp_mask %#x\n",
			  attr->comp_mask);
		return EOPNOTSUPP;
	}
	if (attr->qp_type != IBV_QPT_RC && attr->qp_type != IBV_QPT_UC &&
	    attr->qp_type != IBV_QPT_UD) {
		verbs_err(&ctx->ibvctx, "unsupported QP type %d\n",
			  attr->qp_type);
		return EOPNOTSUPP;
	}
	if ((attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) &&
	    !check_comp_mask(attr->send_ops_flags,
			     qrdma_send_ops(ctx, attr->qp_type))) {
		verbs_err(&ctx->ibvctx,
			  "unsupported send_ops_flags %#" PRIx64 " for QP type %d\n",
			  attr->send_ops_flags, attr->qp_type);
		return EOPNOTSUPP;
	}
	if (!attr->send_cq || (attr->srq && attr->qp_type == IBV_QPT_UC))
		return EINVAL;
	if (cap->max_send_wr > ctx->max_qp_wr ||
	    cap->max_send_sge > ctx->max_send_sge ||
	    cap->max_inline_data > ctx->max_inline_data ||
	    (!attr->srq && (cap->max_recv_wr > ctx->max_qp_wr ||
			    cap->max_recv_sge > ctx->max_recv_sge))) {
		verbs_err(&ctx->ibvctx,
			  "QP caps %u/%u WRs, %u/%u SGEs, %u inline exceed the device's\n",
			  cap->max_send_wr, cap->max_recv_wr, cap->max_send_sge,
			  cap->max_recv_sge, cap->max_inline_data);
		return EINVAL;
	}
	if (!qrdma_has_data_path(ctx))
		return EOPNOTSUPP;
	return 0;
}

static void qrdma_qp_fill_wr_pfns(struct ibv_qp_ex *ibvqpx,
				  const struct ibv_qp_init_attr_ex *attr);

static struct ibv_qp *create_qp(struct ibv_context *ibvctx,
				struct ibv_qp_init_attr_ex *attr)
{
	struct qrdma_context *ctx = to_qrdma_ctx(ibvctx);
	struct uqrdma_create_qp_resp resp = {};
	struct uqrdma_create_qp cmd = {};
	struct qrdma_qp *qp;
	uint32_t sq_entries, rq_entries = 0;
	uint32_t comp_mask;
	int err;

	err = qrdma_check_qp_attr(ctx, attr);
	if (err) {
		errno = err;
		return NULL;
	}

	qp = calloc(1, sizeof(*qp));
	if (!qp) {
		errno = ENOMEM;
		return NULL;
	}
	sq_entries = qrdma_ring_entries(attr->cap.max_send_wr);
	err = qrdma_wq_init(&qp->sq, sq_entries, QRDMA_SQ_WQE_SIZE, true);
	if (err)
		goto err_free_qp;
	if (!attr->srq) {
		rq_entries = qrdma_ring_entries(attr->cap.max_recv_wr);
		err = qrdma_wq_init(&qp->rq, rq_entries, QRDMA_RQ_WQE_SIZE,
				    true);
		if (err)
			goto err_destroy_sq;
	}

	cmd.sq_entries = sq_entries;
	cmd.rq_entries = rq_entries;
	cmd.sq_ring_va = (uintptr_t)qp->sq.buf.addr;
	cmd.rq_ring_va = (uintptr_t)qp->rq.buf.addr;
	/* What is left of the creation flags and TSO is zero: not sent. */
	comp_mask = attr->comp_mask;
	attr->comp_mask &= IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	err = ibv_cmd_create_qp_ex(ibvctx, &qp->vqp, attr, &cmd.ibv_cmd,
				   sizeof(cmd), &resp.ibv_resp, sizeof(resp));
	attr->comp_mask = comp_mask;
	if (err) {
		verbs_err(&ctx->ibvctx, "QP create failed: %d\n", err);
		goto err_destroy_rq;
	}

	qp->qpn = qp->vqp.qp.qp_num;
	qp->sq_sig_all = attr->sq_sig_all;
	qp->send_cq = to_qrdma_cq(attr->send_cq);
	qp->recv_cq = attr->recv_cq ? to_qrdma_cq(attr->recv_cq) : qp->send_cq;
	qp->srq = attr->srq ? to_qrdma_srq(attr->srq) : NULL;
	/* The rings bound what is written, whatever the kernel says. */
	qp->sq.max_sge = min_t(uint32_t, resp.max_send_sge, QRDMA_MAX_SEND_SGE);
	qp->rq.max_sge = min_t(uint32_t, resp.max_recv_sge, QRDMA_MAX_RECV_SGE);
	qp->max_inline_data = min_t(uint32_t, resp.max_inline_data,
				    QRDMA_MAX_INLINE);

	pthread_mutex_lock(&ctx->qp_table_mutex);
	err = qrdma_qp_table_reserve(ctx, qp->qpn);
	if (!err) {
		qrdma_lock_cqs(qp->send_cq, qp->recv_cq);
		qrdma_qp_table_set(ctx, qp->qpn, qp);
		qrdma_unlock_cqs(qp->send_cq, qp->recv_cq);
	}
	pthread_mutex_unlock(&ctx->qp_table_mutex);
	if (err) {
		verbs_err(&ctx->ibvctx, "QP %#x: cannot track it: %d\n",
			  qp->qpn, err);
		goto err_destroy_qp;
	}

	if (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) {
		qrdma_qp_fill_wr_pfns(&qp->vqp.qp_ex, attr);
		qp->vqp.comp_mask |= VERBS_QP_EX;
	}
	return &qp->vqp.qp;

err_destroy_qp:
	ibv_cmd_destroy_qp(&qp->vqp.qp);
err_destroy_rq:
	qrdma_wq_destroy(&qp->rq);
err_destroy_sq:
	qrdma_wq_destroy(&qp->sq);
err_free_qp:
	free(qp);
	errno = err;
	return NULL;
}

struct ibv_qp *qrdma_create_qp(struct ibv_pd *ibvpd,
			       struct ibv_qp_init_attr *attr)
{
	struct ibv_qp_init_attr_ex attr_ex = {};
	struct ibv_qp *ibvqp;

	memcpy(&attr_ex, attr, sizeof(*attr));
	attr_ex.comp_mask = IBV_QP_INIT_ATTR_PD;
	attr_ex.pd = ibvpd;
	ibvqp = create_qp(ibvpd->context, &attr_ex);
	if (ibvqp)
		memcpy(attr, &attr_ex, sizeof(*attr));
	return ibvqp;
}

struct ibv_qp *qrdma_create_qp_ex(struct ibv_context *ibvctx,
				  struct ibv_qp_init_attr_ex *attr)
{
	return create_qp(ibvctx, attr);
}

/*
 * S36: after a move to RESET nothing the QP posted is left anywhere: not
 * its CQEs in the CQs, not its queues' indices (the device zeroed its own).
 */
static void qrdma_qp_reset(struct qrdma_qp *qp)
{
	qrdma_hold_cq_resizes(qp->send_cq, qp->recv_cq);
	qrdma_lock_cqs(qp->send_cq, qp->recv_cq);
	qrdma_cq_clean(qp->send_cq, qp);
	if (qp->recv_cq != qp->send_cq)
		qrdma_cq_clean(qp->recv_cq, qp);
	qrdma_wq_reset(&qp->sq);
	qrdma_wq_reset(&qp->rq);
	qrdma_unlock_cqs(qp->send_cq, qp->recv_cq);
	qrdma_release_cq_resizes(qp->send_cq, qp->recv_cq);
}

int qrdma_modify_qp(struct ibv_qp *ibvqp, struct ibv_qp_attr *attr,
		    int attr_mask)
{
	struct ibv_modify_qp cmd = {};
	int err;

	err = ibv_cmd_modify_qp(ibvqp, attr, attr_mask, &cmd, sizeof(cmd));
	if (err)
		return err;
	if (attr_mask & IBV_QP_STATE) {
		ibvqp->state = attr->qp_state;
		if (attr->qp_state == IBV_QPS_RESET)
			qrdma_qp_reset(to_qrdma_qp(ibvqp));
	}
	return 0;
}

int qrdma_query_qp(struct ibv_qp *ibvqp, struct ibv_qp_attr *attr,
		   int attr_mask, struct ibv_qp_init_attr *init_attr)
{
	struct ibv_query_qp cmd;

	return ibv_cmd_query_qp(ibvqp, attr, attr_mask, init_attr, &cmd,
				sizeof(cmd));
}

int qrdma_destroy_qp(struct ibv_qp *ibvqp)
{
	struct qrdma_context *ctx = to_qrdma_ctx(ibvqp->context);
	struct qrdma_qp *qp = to_qrdma_qp(ibvqp);
	int err;

	err = ibv_cmd_destroy_qp(ibvqp);
	if (err)
		return err;

	/* S12: the device is done with the QP; so are the pollers after this. */
	qrdma_hold_cq_resizes(qp->send_cq, qp->recv_cq);
	pthread_mutex_lock(&ctx->qp_table_mutex);
	qrdma_lock_cqs(qp->send_cq, qp->recv_cq);
	qrdma_cq_clean(qp->send_cq, qp);
	if (qp->recv_cq != qp->send_cq)
		qrdma_cq_clean(qp->recv_cq, qp);
	qrdma_qp_table_set(ctx, qp->qpn, NULL);
	qrdma_unlock_cqs(qp->send_cq, qp->recv_cq);
	pthread_mutex_unlock(&ctx->qp_table_mutex);
	qrdma_release_cq_resizes(qp->send_cq, qp->recv_cq);

	qrdma_wq_destroy(&qp->rq);
	qrdma_wq_destroy(&qp->sq);
	free(qp);
	return 0;
}

/* Send */

static uint8_t qrdma_wqe_flags(struct qrdma_qp *qp, unsigned int send_flags)
{
	uint8_t flags = 0;

	if (qp->sq_sig_all || send_flags & IBV_SEND_SIGNALED)
		flags |= QRDMA_WQE_F_SIGNALED;
	if (send_flags & IBV_SEND_SOLICITED)
		flags |= QRDMA_WQE_F_SOLICITED;
	if (send_flags & IBV_SEND_FENCE)
		flags |= QRDMA_WQE_F_FENCE;
	return flags;
}

/*
 * Start the WQE at @pi: the header zeroed and filled, the wr_id kept for
 * the poller.  The device reads the SGEs or inline bytes the header counts.
 */
static struct qrdma_sq_wqe *qrdma_sq_wqe_start(struct qrdma_qp *qp,
					       uint32_t pi, uint8_t opcode,
					       unsigned int send_flags,
					       uint64_t wr_id)
{
	struct qrdma_sq_wqe *wqe = qrdma_wq_entry(&qp->sq, pi);

	memset(wqe, 0, QRDMA_SQ_WQE_HDR_SIZE);
	wqe->wr_id = htole64(pi);
	wqe->opcode = opcode;
	wqe->flags = qrdma_wqe_flags(qp, send_flags);
	qp->sq.wrid[pi & ((1U << qp->sq.log2) - 1)] = wr_id;
	return wqe;
}

static int qrdma_build_inline(struct qrdma_qp *qp, struct qrdma_sq_wqe *wqe,
			      const struct ibv_sge *sg_list, int num_sge)
{
	uint32_t len = 0;
	int i;

	for (i = 0; i < num_sge; i++) {
		if (sg_list[i].length > qp->max_inline_data - len)
			return EINVAL;
		memcpy(wqe->inline_data + len,
		       (void *)(uintptr_t)sg_list[i].addr, sg_list[i].length);
		len += sg_list[i].length;
	}
	wqe->flags |= QRDMA_WQE_F_INLINE;
	wqe->inline_len = htole32(len);
	return 0;
}

/*
 * The device names the window by the new rkey's bits 31:8, which never
 * change, so the WQE needs no other handle of it.
 */
static void qrdma_set_bind(struct qrdma_sq_wqe *wqe, uint32_t rkey,
			   const struct ibv_mw_bind_info *info)
{
	wqe->bind_mw.key = htole32(rkey);
	wqe->bind_mw.mr_lkey = htole32(info->mr ? info->mr->lkey : 0);
	wqe->bind_mw.addr = htole64(info->addr);
	wqe->bind_mw.length = htole64(info->length);
	wqe->bind_mw.access = htole32(info->mw_access_flags);
}

static int qrdma_build_send_wqe(struct qrdma_qp *qp, struct ibv_send_wr *wr,
				uint32_t pi)
{
	struct qrdma_sq_wqe *wqe;
	int i;

	if (unlikely(!qrdma_send_op_ok(qp, wr->opcode)))
		return EINVAL;
	if (unlikely(wr->num_sge < 0 ||
		     (uint32_t)wr->num_sge > qp->sq.max_sge))
		return EINVAL;
	/* Work requests bind type 2 windows; ibv_bind_mw() binds type 1. */
	if (unlikely(wr->opcode == IBV_WR_BIND_MW &&
		     (!wr->bind_mw.mw ||
		      wr->bind_mw.mw->type != IBV_MW_TYPE_2)))
		return EINVAL;

	wqe = qrdma_sq_wqe_start(qp, pi, wr->opcode, wr->send_flags,
				 wr->wr_id);
	switch (wr->opcode) {
	case IBV_WR_SEND_WITH_IMM:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		/* As the consumer gave it: network order. */
		wqe->imm_data = wr->imm_data;
		break;
	case IBV_WR_SEND_WITH_INV:
	case IBV_WR_LOCAL_INV:
		wqe->invalidate_rkey = htole32(wr->invalidate_rkey);
		break;
	default:
		break;
	}

	switch (wr->opcode) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
	case IBV_WR_RDMA_READ:
		wqe->rdma.remote_addr = htole64(wr->wr.rdma.remote_addr);
		wqe->rdma.rkey = htole32(wr->wr.rdma.rkey);
		break;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		wqe->rdma.remote_addr = htole64(wr->wr.atomic.remote_addr);
		wqe->rdma.rkey = htole32(wr->wr.atomic.rkey);
		wqe->rdma.compare_add = htole64(wr->wr.atomic.compare_add);
		wqe->rdma.swap = htole64(wr->wr.atomic.swap);
		break;
	case IBV_WR_LOCAL_INV:
		return 0;
	case IBV_WR_BIND_MW:
		qrdma_set_bind(wqe, wr->bind_mw.rkey, &wr->bind_mw.bind_info);
		return 0;
	default:
		break;
	}

	if (qp->vqp.qp.qp_type == IBV_QPT_UD) {
		if (unlikely(!wr->wr.ud.ah))
			return EINVAL;
		wqe->ud.ah = htole32(to_qrdma_ah(wr->wr.ud.ah)->handle);
		wqe->ud.remote_qpn = htole32(wr->wr.ud.remote_qpn);
		wqe->ud.remote_qkey = htole32(wr->wr.ud.remote_qkey);
	}

	if (wr->send_flags & IBV_SEND_INLINE &&
	    wr->opcode != IBV_WR_RDMA_READ &&
	    wr->opcode != IBV_WR_ATOMIC_CMP_AND_SWP &&
	    wr->opcode != IBV_WR_ATOMIC_FETCH_AND_ADD)
		return qrdma_build_inline(qp, wqe, wr->sg_list, wr->num_sge);

	wqe->num_sge = wr->num_sge;
	for (i = 0; i < wr->num_sge; i++)
		qrdma_set_sge(&wqe->sge[i], wr->sg_list[i].lkey,
			      wr->sg_list[i].addr, wr->sg_list[i].length);
	return 0;
}

/* Make WQEs up to @pi the device's: one doorbell for the batch. */
static void qrdma_sq_publish(struct qrdma_qp *qp, uint32_t pi)
{
	/* Pollers read wrid[] below pi. */
	atomic_store_explicit(&qp->sq.pi, pi, memory_order_release);
	udma_to_device_barrier();
	qrdma_ring_db(to_qrdma_ctx(qp->vqp.qp.context), QRDMA_DB_SQ, qp->qpn,
		      pi);
}

int qrdma_post_send(struct ibv_qp *ibvqp, struct ibv_send_wr *wr,
		    struct ibv_send_wr **bad_wr)
{
	struct qrdma_qp *qp = to_qrdma_qp(ibvqp);
	uint32_t pi, start;
	int err = 0;

	/* IB: a QP in RESET takes no work request (ERR does, S35). */
	if (unlikely(ibvqp->state == IBV_QPS_RESET)) {
		*bad_wr = wr;
		return EINVAL;
	}

	pthread_spin_lock(&qp->sq.lock);
	start = pi = atomic_load_explicit(&qp->sq.pi, memory_order_relaxed);
	for (; wr; wr = wr->next) {
		/* S38: ENOMEM when full, EINVAL for a bad request. */
		if (unlikely(qrdma_wq_full(&qp->sq, pi))) {
			err = ENOMEM;
			break;
		}
		err = qrdma_build_send_wqe(qp, wr, pi);
		if (unlikely(err))
			break;
		pi++;
	}
	if (pi != start)
		qrdma_sq_publish(qp, pi);
	pthread_spin_unlock(&qp->sq.lock);

	if (err)
		*bad_wr = wr;
	return err;
}

/*
 * Type 1: a BIND_MW WQE under the next key, which becomes the window's as
 * the WQE is posted; a consumer that gets an error CQE knows it failed.
 */
int qrdma_bind_mw(struct ibv_qp *ibvqp, struct ibv_mw *mw,
		  struct ibv_mw_bind *mw_bind)
{
	struct qrdma_qp *qp = to_qrdma_qp(ibvqp);
	uint32_t rkey = ibv_inc_rkey(mw->rkey);
	struct qrdma_sq_wqe *wqe;
	uint32_t pi;
	int err = 0;

	if (unlikely(!(qrdma_send_ops(to_qrdma_ctx(ibvqp->context),
				      ibvqp->qp_type) &
		       IBV_QP_EX_WITH_BIND_MW) ||
		     ibvqp->state == IBV_QPS_RESET))
		return EINVAL;

	pthread_spin_lock(&qp->sq.lock);
	pi = atomic_load_explicit(&qp->sq.pi, memory_order_relaxed);
	if (unlikely(qrdma_wq_full(&qp->sq, pi))) {
		err = ENOMEM;
	} else {
		wqe = qrdma_sq_wqe_start(qp, pi, QRDMA_WR_BIND_MW,
					 mw_bind->send_flags, mw_bind->wr_id);
		qrdma_set_bind(wqe, rkey, &mw_bind->bind_info);
		qrdma_sq_publish(qp, pi + 1);
		mw->rkey = rkey;
	}
	pthread_spin_unlock(&qp->sq.lock);
	return err;
}

int qrdma_post_recv(struct ibv_qp *ibvqp, struct ibv_recv_wr *wr,
		    struct ibv_recv_wr **bad_wr)
{
	struct qrdma_qp *qp = to_qrdma_qp(ibvqp);

	/*
	 * A QP on an SRQ has no receive queue of its own; a QP in RESET
	 * takes no work request.
	 */
	if (unlikely(qp->srq || ibvqp->state == IBV_QPS_RESET)) {
		*bad_wr = wr;
		return EINVAL;
	}
	return qrdma_post_rq(to_qrdma_ctx(ibvqp->context), &qp->rq,
			     QRDMA_DB_RQ, qp->qpn, wr, bad_wr);
}

/*
 * The ibv_wr_*() API.  Each wr_<op>() starts a WQE at the session's
 * producer index; the wr_set_*() that follow complete it.  Nothing reaches
 * the device before wr_complete(), which rings the doorbell once; the
 * first error fails the session and wr_complete() then posts nothing.
 */

static struct qrdma_sq_wqe *qrdma_wr_begin(struct ibv_qp_ex *ibvqpx,
					   uint8_t opcode)
{
	struct qrdma_qp *qp = to_qrdma_qp_ex(ibvqpx);

	qp->wr_wqe = NULL;
	if (unlikely(qp->wr_err))
		return NULL;
	if (unlikely(qrdma_wq_full(&qp->sq, qp->wr_pi))) {
		qp->wr_err = ENOMEM;
		return NULL;
	}
	qp->wr_wqe = qrdma_sq_wqe_start(qp, qp->wr_pi, opcode,
					ibvqpx->wr_flags, ibvqpx->wr_id);
	qp->wr_pi++;
	return qp->wr_wqe;
}

static void qrdma_wr_send(struct ibv_qp_ex *ibvqpx)
{
	qrdma_wr_begin(ibvqpx, QRDMA_WR_SEND);
}

static void qrdma_wr_send_imm(struct ibv_qp_ex *ibvqpx, __be32 imm_data)
{
	struct qrdma_sq_wqe *wqe = qrdma_wr_begin(ibvqpx,
						  QRDMA_WR_SEND_WITH_IMM);

	if (wqe)
		wqe->imm_data = imm_data;
}

static void qrdma_wr_send_inv(struct ibv_qp_ex *ibvqpx,
			      uint32_t invalidate_rkey)
{
	struct qrdma_sq_wqe *wqe = qrdma_wr_begin(ibvqpx,
						  QRDMA_WR_SEND_WITH_INV);

	if (wqe)
		wqe->invalidate_rkey = htole32(invalidate_rkey);
}

static void qrdma_wr_set_rdma(struct qrdma_sq_wqe *wqe, uint32_t rkey,
			      uint64_t remote_addr)
{
	wqe->rdma.remote_addr = htole64(remote_addr);
	wqe->rdma.rkey = htole32(rkey);
}

static void qrdma_wr_rdma_write(struct ibv_qp_ex *ibvqpx, uint32_t rkey,
				uint64_t remote_addr)
{
	struct qrdma_sq_wqe *wqe = qrdma_wr_begin(ibvqpx, QRDMA_WR_RDMA_WRITE);

	if (wqe)
		qrdma_wr_set_rdma(wqe, rkey, remote_addr);
}

static void qrdma_wr_rdma_write_imm(struct ibv_qp_ex *ibvqpx, uint32_t rkey,
				    uint64_t remote_addr, __be32 imm_data)
{
	struct qrdma_sq_wqe *wqe =
		qrdma_wr_begin(ibvqpx, QRDMA_WR_RDMA_WRITE_WITH_IMM);

	if (wqe) {
		qrdma_wr_set_rdma(wqe, rkey, remote_addr);
		wqe->imm_data = imm_data;
	}
}

static void qrdma_wr_rdma_read(struct ibv_qp_ex *ibvqpx, uint32_t rkey,
			       uint64_t remote_addr)
{
	struct qrdma_sq_wqe *wqe = qrdma_wr_begin(ibvqpx, QRDMA_WR_RDMA_READ);

	if (wqe)
		qrdma_wr_set_rdma(wqe, rkey, remote_addr);
}

static void qrdma_wr_atomic_cmp_swp(struct ibv_qp_ex *ibvqpx, uint32_t rkey,
				    uint64_t remote_addr, uint64_t compare,
				    uint64_t swap)
{
	struct qrdma_sq_wqe *wqe =
		qrdma_wr_begin(ibvqpx, QRDMA_WR_ATOMIC_CMP_AND_SWP);

	if (wqe) {
		qrdma_wr_set_rdma(wqe, rkey, remote_addr);
		wqe->rdma.compare_add = htole64(compare);
		wqe->rdma.swap = htole64(swap);
	}
}

static void qrdma_wr_atomic_fetch_add(struct ibv_qp_ex *ibvqpx, uint32_t rkey,
				      uint64_t remote_addr, uint64_t add)
{
	struct qrdma_sq_wqe *wqe =
		qrdma_wr_begin(ibvqpx, QRDMA_WR_ATOMIC_FETCH_AND_ADD);

	if (wqe) {
		qrdma_wr_set_rdma(wqe, rkey, remote_addr);
		wqe->rdma.compare_add = htole64(add);
	}
}

#ifdef HAVE_IBV_WR_ATOMIC_WRITE
static void qrdma_wr_atomic_write(struct ibv_qp_ex *ibvqpx, uint32_t rkey,
				  uint64_t remote_addr, const void *atomic_wr)
{
	struct qrdma_sq_wqe *wqe =
		qrdma_wr_begin(ibvqpx, QRDMA_WR_ATOMIC_WRITE);

	if (wqe) {
		qrdma_wr_set_rdma(wqe, rkey, remote_addr);
		/* Bytes in memory order, as the remote word gets them. */
		memcpy(&wqe->rdma.compare_add, atomic_wr, 8);
	}
}
#endif

#ifdef HAVE_IBV_WR_FLUSH
static void qrdma_wr_flush(struct ibv_qp_ex *ibvqpx, uint32_t rkey,
			   uint64_t remote_addr, size_t len, uint8_t type,
			   uint8_t level)
{
	struct qrdma_sq_wqe *wqe = qrdma_wr_begin(ibvqpx, QRDMA_WR_FLUSH);

	if (wqe) {
		wqe->flush.remote_addr = htole64(remote_addr);
		wqe->flush.rkey = htole32(rkey);
		wqe->flush.length = htole64(len);
		/* The verbs values are the device's. */
		wqe->flush.type = type;
		wqe->flush.level = level;
	}
}
#endif

static void qrdma_wr_bind_mw(struct ibv_qp_ex *ibvqpx, struct ibv_mw *mw,
			     uint32_t rkey,
			     const struct ibv_mw_bind_info *bind_info)
{
	struct qrdma_qp *qp = to_qrdma_qp_ex(ibvqpx);
	struct qrdma_sq_wqe *wqe = qrdma_wr_begin(ibvqpx, QRDMA_WR_BIND_MW);

	if (!wqe)
		return;
	/* ibv_bind_mw() binds type 1 windows, work requests type 2. */
	if (unlikely(!mw || mw->type != IBV_MW_TYPE_2)) {
		qp->wr_err = EINVAL;
		return;
	}
	qrdma_set_bind(wqe, rkey, bind_info);
}

static void qrdma_wr_local_inv(struct ibv_qp_ex *ibvqpx,
			       uint32_t invalidate_rkey)
{
	struct qrdma_sq_wqe *wqe = qrdma_wr_begin(ibvqpx, QRDMA_WR_LOCAL_INV);

	if (wqe)
		wqe->invalidate_rkey = htole32(invalidate_rkey);
}

static void qrdma_wr_set_ud_addr(struct ibv_qp_ex *ibvqpx, struct ibv_ah *ah,
				 uint32_t remote_qpn, uint32_t remote_qkey)
{
	struct qrdma_qp *qp = to_qrdma_qp_ex(ibvqpx);
	struct qrdma_sq_wqe *wqe = qp->wr_wqe;

	if (unlikely(!wqe))
		return;
	if (unlikely(!ah)) {
		qp->wr_err = EINVAL;
		return;
	}
	wqe->ud.ah = htole32(to_qrdma_ah(ah)->handle);
	wqe->ud.remote_qpn = htole32(remote_qpn);
	wqe->ud.remote_qkey = htole32(remote_qkey);
}

static void qrdma_wr_set_sge(struct ibv_qp_ex *ibvqpx, uint32_t lkey,
			     uint64_t addr, uint32_t length)
{
	struct qrdma_qp *qp = to_qrdma_qp_ex(ibvqpx);
	struct qrdma_sq_wqe *wqe = qp->wr_wqe;

	if (unlikely(!wqe))
		return;
	if (unlikely(!qp->sq.max_sge)) {
		qp->wr_err = EINVAL;
		return;
	}
	wqe->num_sge = 1;
	qrdma_set_sge(&wqe->sge[0], lkey, addr, length);
}

static void qrdma_wr_set_sge_list(struct ibv_qp_ex *ibvqpx, size_t num_sge,
				  const struct ibv_sge *sg_list)
{
	struct qrdma_qp *qp = to_qrdma_qp_ex(ibvqpx);
	struct qrdma_sq_wqe *wqe = qp->wr_wqe;
	size_t i;

	if (unlikely(!wqe))
		return;
	if (unlikely(num_sge > qp->sq.max_sge)) {
		qp->wr_err = EINVAL;
		return;
	}
	wqe->num_sge = num_sge;
	for (i = 0; i < num_sge; i++)
		qrdma_set_sge(&wqe->sge[i], sg_list[i].lkey, sg_list[i].addr,
			      sg_list[i].length);
}

static void qrdma_wr_set_inline_data_list(struct ibv_qp_ex *ibvqpx,
					  size_t num_buf,
					  const struct ibv_data_buf *buf_list)
{
	struct qrdma_qp *qp = to_qrdma_qp_ex(ibvqpx);
	struct qrdma_sq_wqe *wqe = qp->wr_wqe;
	size_t i, len = 0;

	if (unlikely(!wqe))
		return;
	for (i = 0; i < num_buf; i++) {
		if (unlikely(buf_list[i].length > qp->max_inline_data - len)) {
			qp->wr_err = EINVAL;
			return;
		}
		memcpy(wqe->inline_data + len, buf_list[i].addr,
		       buf_list[i].length);
		len += buf_list[i].length;
	}
	wqe->flags |= QRDMA_WQE_F_INLINE;
	wqe->inline_len = htole32(len);
}

static void qrdma_wr_set_inline_data(struct ibv_qp_ex *ibvqpx, void *addr,
				     size_t length)
{
	struct ibv_data_buf buf = { .addr = addr, .length = length };

	qrdma_wr_set_inline_data_list(ibvqpx, 1, &buf);
}

static void qrdma_wr_start(struct ibv_qp_ex *ibvqpx)
{
	struct qrdma_qp *qp = to_qrdma_qp_ex(ibvqpx);

	pthread_spin_lock(&qp->sq.lock);
	qp->wr_err = 0;
	qp->wr_wqe = NULL;
	qp->wr_pi = atomic_load_explicit(&qp->sq.pi, memory_order_relaxed);
}

static int qrdma_wr_complete(struct ibv_qp_ex *ibvqpx)
{
	struct qrdma_qp *qp = to_qrdma_qp_ex(ibvqpx);
	int err = qp->wr_err;

	if (unlikely(!err && ibvqpx->qp_base.state == IBV_QPS_RESET))
		err = EINVAL;
	/* On error the WQEs built stay unposted: the index never moved. */
	if (!err &&
	    qp->wr_pi != atomic_load_explicit(&qp->sq.pi, memory_order_relaxed))
		qrdma_sq_publish(qp, qp->wr_pi);
	qp->wr_wqe = NULL;
	pthread_spin_unlock(&qp->sq.lock);
	return err;
}

static void qrdma_wr_abort(struct ibv_qp_ex *ibvqpx)
{
	struct qrdma_qp *qp = to_qrdma_qp_ex(ibvqpx);

	qp->wr_wqe = NULL;
	pthread_spin_unlock(&qp->sq.lock);
}

static void qrdma_qp_fill_wr_pfns(struct ibv_qp_ex *ibvqpx,
				  const struct ibv_qp_init_attr_ex *attr)
{
	uint64_t ops = attr->send_ops_flags;

	ibvqpx->wr_start = qrdma_wr_start;
	ibvqpx->wr_complete = qrdma_wr_complete;
	ibvqpx->wr_abort = qrdma_wr_abort;

	if (ops & IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP)
		ibvqpx->wr_atomic_cmp_swp = qrdma_wr_atomic_cmp_swp;
	if (ops & IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD)
		ibvqpx->wr_atomic_fetch_add = qrdma_wr_atomic_fetch_add;
#ifdef HAVE_IBV_WR_ATOMIC_WRITE
	if (ops & IBV_QP_EX_WITH_ATOMIC_WRITE)
		ibvqpx->wr_atomic_write = qrdma_wr_atomic_write;
#endif
	if (ops & IBV_QP_EX_WITH_BIND_MW)
		ibvqpx->wr_bind_mw = qrdma_wr_bind_mw;
#ifdef HAVE_IBV_WR_FLUSH
	if (ops & IBV_QP_EX_WITH_FLUSH)
		ibvqpx->wr_flush = qrdma_wr_flush;
#endif
	if (ops & IBV_QP_EX_WITH_LOCAL_INV)
		ibvqpx->wr_local_inv = qrdma_wr_local_inv;
	if (ops & IBV_QP_EX_WITH_RDMA_READ)
		ibvqpx->wr_rdma_read = qrdma_wr_rdma_read;
	if (ops & IBV_QP_EX_WITH_RDMA_WRITE)
		ibvqpx->wr_rdma_write = qrdma_wr_rdma_write;
	if (ops & IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM)
		ibvqpx->wr_rdma_write_imm = qrdma_wr_rdma_write_imm;
	if (ops & IBV_QP_EX_WITH_SEND)
		ibvqpx->wr_send = qrdma_wr_send;
	if (ops & IBV_QP_EX_WITH_SEND_WITH_IMM)
		ibvqpx->wr_send_imm = qrdma_wr_send_imm;
	if (ops & IBV_QP_EX_WITH_SEND_WITH_INV)
		ibvqpx->wr_send_inv = qrdma_wr_send_inv;

	ibvqpx->wr_set_inline_data = qrdma_wr_set_inline_data;
	ibvqpx->wr_set_inline_data_list = qrdma_wr_set_inline_data_list;
	ibvqpx->wr_set_sge = qrdma_wr_set_sge;
	ibvqpx->wr_set_sge_list = qrdma_wr_set_sge_list;
	if (attr->qp_type == IBV_QPT_UD)
		ibvqpx->wr_set_ud_addr = qrdma_wr_set_ud_addr;
}

/* Address handles, multicast */

struct ibv_ah *qrdma_create_ah(struct ibv_pd *ibvpd, struct ibv_ah_attr *attr)
{
	struct uqrdma_create_ah_resp resp = {};
	struct qrdma_ah *ah;
	int err;

	ah = calloc(1, sizeof(*ah));
	if (!ah) {
		errno = ENOMEM;
		return NULL;
	}
	err = ibv_cmd_create_ah(ibvpd, &ah->ibvah, attr, &resp.ibv_resp,
				sizeof(resp));
	if (err) {
		free(ah);
		errno = err;
		return NULL;
	}
	ah->handle = resp.ah;
	return &ah->ibvah;
}

int qrdma_destroy_ah(struct ibv_ah *ibvah)
{
	int err;

	err = ibv_cmd_destroy_ah(ibvah);
	if (err)
		return err;
	free(to_qrdma_ah(ibvah));
	return 0;
}

int qrdma_attach_mcast(struct ibv_qp *ibvqp, const union ibv_gid *gid,
		       uint16_t lid)
{
	return ibv_cmd_attach_mcast(ibvqp, gid, lid);
}

int qrdma_detach_mcast(struct ibv_qp *ibvqp, const union ibv_gid *gid,
		       uint16_t lid)
{
	return ibv_cmd_detach_mcast(ibvqp, gid, lid);
}
