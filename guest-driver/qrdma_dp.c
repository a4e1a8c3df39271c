// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The kernel's data path: work requests into the rings of kernel QPs and
 * SRQs, completions out of kernel CQs.  User space has its own (the
 * provider); these verbs refuse user objects, whose rings the kernel does
 * not map.
 *
 * A QP's WQEs carry their ring index as wr_id (see struct qrdma_wq), so
 * a CQE tells which WQE it completes and which wr_id to report; the device
 * runs a queue in order, so every WQE before it is done too.
 */

#include <linux/if_vlan.h>

#include "qrdma.h"

static void qrdma_ring_db(struct qrdma_dev *dev, u32 offset, u32 handle,
			  u32 index)
{
	/* Without the data path every BAR2 access is a refused guest error. */
	if (!dev->data_path)
		return;
	/*
	 * One 64-bit write, as the device requires; writeq() is ordered
	 * after the WQE stores to coherent memory that precede it.
	 */
	writeq(QRDMA_DB_VAL(handle, index), dev->kdb + offset);
}

static bool qrdma_wq_full(struct qrdma_wq *wq, u32 pi)
{
	u32 log2 = wq->log2;

	/* During an SRQ resize a WQE must fit both rings. */
	if (wq->next_ring)
		log2 = min(log2, wq->next_log2);
	/*
	 * Pairs with the poller's release: the entries below ci, and
	 * their wr_ids, are read before they may be written again.
	 */
	return pi - (u32)atomic_read_acquire(&wq->ci) >= (1U << log2);
}

static void *qrdma_wq_entry(struct qrdma_wq *wq, u32 index, u32 size)
{
	return wq->ring.buf + (size_t)(index & ((1U << wq->log2) - 1)) * size;
}

static void qrdma_set_sge(struct qrdma_sge *dst, const struct ib_sge *src)
{
	dst->addr = cpu_to_le64(src->addr);
	dst->length = cpu_to_le32(src->length);
	dst->lkey = cpu_to_le32(src->lkey);
}

static int qrdma_wr_opcode(enum ib_wr_opcode opcode, u8 *out)
{
	switch (opcode) {
	case IB_WR_RDMA_WRITE:
		*out = QRDMA_WR_RDMA_WRITE;
		break;
	case IB_WR_RDMA_WRITE_WITH_IMM:
		*out = QRDMA_WR_RDMA_WRITE_WITH_IMM;
		break;
	case IB_WR_SEND:
		*out = QRDMA_WR_SEND;
		break;
	case IB_WR_SEND_WITH_IMM:
		*out = QRDMA_WR_SEND_WITH_IMM;
		break;
	case IB_WR_RDMA_READ:
		*out = QRDMA_WR_RDMA_READ;
		break;
	case IB_WR_ATOMIC_CMP_AND_SWP:
		*out = QRDMA_WR_ATOMIC_CMP_AND_SWP;
		break;
	case IB_WR_ATOMIC_FETCH_AND_ADD:
		*out = QRDMA_WR_ATOMIC_FETCH_AND_ADD;
		break;
	case IB_WR_LOCAL_INV:
		*out = QRDMA_WR_LOCAL_INV;
		break;
	case IB_WR_SEND_WITH_INV:
		*out = QRDMA_WR_SEND_WITH_INV;
		break;
	case IB_WR_REG_MR:
		*out = QRDMA_WR_REG_MR;
		break;
	default:
		return -EINVAL;
	}
	return 0;
}

static int qrdma_build_inline(struct qrdma_qp *qp, const struct ib_send_wr *wr,
			      struct qrdma_sq_wqe *wqe)
{
	u32 len = 0;
	int i;

	for (i = 0; i < wr->num_sge; i++) {
		const struct ib_sge *sge = &wr->sg_list[i];

		if (sge->length > qp->max_inline_data - len)
			return -EINVAL;
		/* A kernel consumer's inline data is at a kernel address. */
		memcpy(wqe->inline_data + len, (void *)(uintptr_t)sge->addr,
		       sge->length);
		len += sge->length;
	}
	wqe->flags |= QRDMA_WQE_F_INLINE;
	wqe->inline_len = cpu_to_le32(len);
	return 0;
}

/* The handle a UD WQE names for @ah: its own, or its device AH's. */
static u32 qrdma_ah_handle(struct qrdma_ah *ah)
{
	if (!ah->kah)
		return ah->handle;
	/* Ordered after complete_all(), which follows the write. */
	return completion_done(&ah->kah->made) ? ah->kah->handle :
						 QRDMA_HANDLE_NONE;
}

static int qrdma_build_send_wqe(struct qrdma_qp *qp,
				const struct ib_send_wr *wr,
				struct qrdma_sq_wqe *wqe, u32 index, bool signaled)
{
	bool ud = qp->ibqp.qp_type == IB_QPT_UD ||
		  qp->ibqp.qp_type == IB_QPT_GSI;
	const struct ib_reg_wr *reg;
	struct qrdma_mr *mr;
	u8 opcode;
	int i;

	if (qrdma_wr_opcode(wr->opcode, &opcode))
		return -EINVAL;
	/* A datagram QP only sends. */
	if (ud && wr->opcode != IB_WR_SEND && wr->opcode != IB_WR_SEND_WITH_IMM)
		return -EINVAL;

	memset(wqe, 0, sizeof(*wqe));
	wqe->wr_id = cpu_to_le64(index);
	wqe->opcode = opcode;
	if (signaled)
		wqe->flags |= QRDMA_WQE_F_SIGNALED;
	if (wr->send_flags & IB_SEND_SOLICITED)
		wqe->flags |= QRDMA_WQE_F_SOLICITED;
	if (wr->send_flags & IB_SEND_FENCE)
		wqe->flags |= QRDMA_WQE_F_FENCE;

	switch (wr->opcode) {
	case IB_WR_SEND_WITH_IMM:
	case IB_WR_RDMA_WRITE_WITH_IMM:
		/* As the consumer gave it: network order. */
		wqe->imm_data = wr->ex.imm_data;
		break;
	case IB_WR_SEND_WITH_INV:
	case IB_WR_LOCAL_INV:
		wqe->invalidate_rkey = cpu_to_le32(wr->ex.invalidate_rkey);
		break;
	default:
		break;
	}

	switch (wr->opcode) {
	case IB_WR_RDMA_WRITE:
	case IB_WR_RDMA_WRITE_WITH_IMM:
	case IB_WR_RDMA_READ:
		wqe->rdma.remote_addr = cpu_to_le64(rdma_wr(wr)->remote_addr);
		wqe->rdma.rkey = cpu_to_le32(rdma_wr(wr)->rkey);
		break;
	case IB_WR_ATOMIC_CMP_AND_SWP:
	case IB_WR_ATOMIC_FETCH_AND_ADD:
		wqe->rdma.remote_addr = cpu_to_le64(atomic_wr(wr)->remote_addr);
		wqe->rdma.rkey = cpu_to_le32(atomic_wr(wr)->rkey);
		wqe->rdma.compare_add = cpu_to_le64(atomic_wr(wr)->compare_add);
		wqe->rdma.swap = cpu_to_le64(atomic_wr(wr)->swap);
		break;
	case IB_WR_REG_MR:
		reg = reg_wr(wr);
		mr = to_qmr(reg->mr);
		if (reg->access & ~QRDMA_ACCESS_VALID_MASK ||
		    !is_power_of_2(mr->ibmr.page_size))
			return -EINVAL;
		wqe->reg_mr.iova = cpu_to_le64(mr->ibmr.iova);
		wqe->reg_mr.length = cpu_to_le64(mr->ibmr.length);
		wqe->reg_mr.pages_addr = cpu_to_le64(mr->pages_dma);
		wqe->reg_mr.key = cpu_to_le32(reg->key);
		wqe->reg_mr.access = cpu_to_le32(reg->access);
		wqe->reg_mr.npages = cpu_to_le32(mr->npages);
		wqe->reg_mr.page_shift = ilog2(mr->ibmr.page_size);
		return 0;
	case IB_WR_LOCAL_INV:
		return 0;
	default:
		break;
	}

	if (ud) {
		wqe->ud.ah = cpu_to_le32(qrdma_ah_handle(to_qah(ud_wr(wr)->ah)));
		wqe->ud.remote_qpn = cpu_to_le32(ud_wr(wr)->remote_qpn);
		wqe->ud.remote_qkey = cpu_to_le32(ud_wr(wr)->remote_qkey);
	}

	if (wr->send_flags & IB_SEND_INLINE &&
	    wr->opcode != IB_WR_RDMA_READ &&
	    wr->opcode != IB_WR_ATOMIC_CMP_AND_SWP &&
	    wr->opcode != IB_WR_ATOMIC_FETCH_AND_ADD)
		return qrdma_build_inline(qp, wr, wqe);

	wqe->num_sge = wr->num_sge;
	for (i = 0; i < wr->num_sge; i++)
		qrdma_set_sge(&wqe->sge[i], &wr->sg_list[i]);
	return 0;
}

/*
 * Give the device the SQ's WQEs up to the first that waits for its AH.
 * Under the SQ's lock.
 */
static void qrdma_sq_doorbell(struct qrdma_dev *dev, struct qrdma_qp *qp)
{
	struct qrdma_ah_wait *w;
	u32 db;

	w = list_first_entry_or_null(&qp->ah_waits, struct qrdma_ah_wait,
				     list);
	db = w ? w->index : qp->sq.pi;
	if (db != qp->sq_db) {
		qp->sq_db = db;
		qrdma_ring_db(dev, QRDMA_DB_SQ, qp->qpn, db);
	}
}

/*
 * The WQE at @index names @ah: if the device has not made the AH yet, the
 * WQE waits for it, and so, behind the doorbell, do those after it.
 * Under the SQ's lock.
 */
static int qrdma_sq_wait_ah(struct qrdma_dev *dev, struct qrdma_qp *qp,
			    struct qrdma_ah *ah, struct qrdma_sq_wqe *wqe,
			    u32 index)
{
	struct qrdma_ah_wait *w;

	if (!ah->kah || completion_done(&ah->kah->made)) {
		/* Maybe made since the WQE was built: its handle now. */
		wqe->ud.ah = cpu_to_le32(qrdma_ah_handle(ah));
		return 0;
	}
	w = kmalloc(sizeof(*w), GFP_ATOMIC);
	if (!w)
		return -ENOMEM;
	kref_get(&ah->kah->ref);
	w->kah = ah->kah;
	w->index = index;
	if (list_empty(&qp->ah_waits))
		queue_work(dev->ah_post_wq, &qp->ah_work);
	list_add_tail(&w->list, &qp->ah_waits);
	return 0;
}

/*
 * Write the handles of the AHs the device made into the WQEs that wait
 * for them, and ring the doorbell for them, in order.
 */
void qrdma_qp_ah_work(struct work_struct *work)
{
	struct qrdma_qp *qp = container_of(work, struct qrdma_qp, ah_work);
	struct qrdma_dev *dev = to_qdev(qp->ibqp.device);
	struct qrdma_wq *wq = &qp->sq;
	struct qrdma_sq_wqe *wqe;
	struct qrdma_ah_wait *w;
	unsigned long flags;

	for (;;) {
		spin_lock_irqsave(&wq->lock, flags);
		w = list_first_entry_or_null(&qp->ah_waits,
					     struct qrdma_ah_wait, list);
		spin_unlock_irqrestore(&wq->lock, flags);
		if (!w)
			return;
		/* At the latest when CREATE_AH times out. */
		wait_for_completion(&w->kah->made);

		spin_lock_irqsave(&wq->lock, flags);
		wqe = qrdma_wq_entry(wq, w->index, QRDMA_SQ_WQE_SIZE);
		wqe->ud.ah = cpu_to_le32(w->kah->handle);
		list_del(&w->list);
		qrdma_sq_doorbell(dev, qp);
		spin_unlock_irqrestore(&wq->lock, flags);
		qrdma_kah_put(w->kah);
		kfree(w);
	}
}

/* Forget the sends that wait for an AH: the QP is reset or destroyed. */
void qrdma_qp_drop_ah_waits(struct qrdma_qp *qp)
{
	struct qrdma_ah_wait *w, *next;
	unsigned long flags;
	LIST_HEAD(waits);

	cancel_work_sync(&qp->ah_work);
	spin_lock_irqsave(&qp->sq.lock, flags);
	list_splice_init(&qp->ah_waits, &waits);
	spin_unlock_irqrestore(&qp->sq.lock, flags);
	list_for_each_entry_safe(w, next, &waits, list) {
		qrdma_kah_put(w->kah);
		kfree(w);
	}
}

int qrdma_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		    const struct ib_send_wr **bad_wr)
{
	struct qrdma_dev *dev = to_qdev(ibqp->device);
	struct qrdma_qp *qp = to_qqp(ibqp);
	bool ud = ibqp->qp_type == IB_QPT_UD || ibqp->qp_type == IB_QPT_GSI;
	struct qrdma_wq *wq = &qp->sq;
	struct qrdma_sq_wqe *wqe;
	unsigned long flags;
	int err = 0;
	u32 pi;

	if (qp->uctx) {
		*bad_wr = wr;
		return -EINVAL;
	}

	spin_lock_irqsave(&wq->lock, flags);
	pi = wq->pi;
	for (; wr; wr = wr->next) {
		bool signaled = qp->sq_sig_all ||
				wr->send_flags & IB_SEND_SIGNALED;

		/* S38: a full ring is ENOMEM, too many SGEs EINVAL. */
		if (qrdma_wq_full(wq, pi)) {
			err = -ENOMEM;
			break;
		}
		if (wr->num_sge < 0 || wr->num_sge > wq->max_sge) {
			err = -EINVAL;
			break;
		}
		wqe = qrdma_wq_entry(wq, pi, QRDMA_SQ_WQE_SIZE);
		err = qrdma_build_send_wqe(qp, wr, wqe, pi, signaled);
		if (!err && ud)
			err = qrdma_sq_wait_ah(dev, qp, to_qah(ud_wr(wr)->ah),
					       wqe, pi);
		if (err)
			break;
		wq->wr_ids[pi & ((1U << wq->log2) - 1)] = wr->wr_id;
		pi++;
	}
	if (pi != wq->pi) {
		/* The poller reads wr_ids below pi. */
		smp_store_release(&wq->pi, pi);
		qrdma_sq_doorbell(dev, qp);
	}
	spin_unlock_irqrestore(&wq->lock, flags);

	if (err)
		*bad_wr = wr;
	return err;
}

static int qrdma_post_rq(struct qrdma_dev *dev, struct qrdma_wq *wq,
			 u32 db, u32 handle, const struct ib_recv_wr *wr,
			 const struct ib_recv_wr **bad_wr)
{
	unsigned long flags;
	int err = 0;
	u32 pi;
	int i;

	spin_lock_irqsave(&wq->lock, flags);
	pi = wq->pi;
	for (; wr; wr = wr->next) {
		struct qrdma_rq_wqe *wqe;

		/* S38: a full ring is ENOMEM, too many SGEs EINVAL. */
		if (qrdma_wq_full(wq, pi)) {
			err = -ENOMEM;
			break;
		}
		if (wr->num_sge < 0 || wr->num_sge > wq->max_sge) {
			err = -EINVAL;
			break;
		}
		wqe = qrdma_wq_entry(wq, pi, QRDMA_RQ_WQE_SIZE);
		memset(wqe, 0, sizeof(*wqe));
		if (wq->wr_ids) {
			wqe->wr_id = cpu_to_le64(pi);
			wq->wr_ids[pi & ((1U << wq->log2) - 1)] = wr->wr_id;
		} else {
			wqe->wr_id = cpu_to_le64(wr->wr_id);
		}
		wqe->num_sge = cpu_to_le32(wr->num_sge);
		for (i = 0; i < wr->num_sge; i++)
			qrdma_set_sge(&wqe->sge[i], &wr->sg_list[i]);
		if (wq->next_ring)
			memcpy(wq->next_ring->buf +
			       (size_t)(pi & ((1U << wq->next_log2) - 1)) *
			       QRDMA_RQ_WQE_SIZE, wqe, sizeof(*wqe));
		pi++;
	}
	if (pi != wq->pi) {
		/* The poller reads wr_ids below pi. */
		smp_store_release(&wq->pi, pi);
		qrdma_ring_db(dev, db, handle, pi);
	}
	spin_unlock_irqrestore(&wq->lock, flags);

	if (err)
		*bad_wr = wr;
	return err;
}

int qrdma_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		    const struct ib_recv_wr **bad_wr)
{
	struct qrdma_qp *qp = to_qqp(ibqp);

	/* A QP on an SRQ has no receive queue of its own. */
	if (qp->uctx || ibqp->srq) {
		*bad_wr = wr;
		return -EINVAL;
	}
	return qrdma_post_rq(to_qdev(ibqp->device), &qp->rq, QRDMA_DB_RQ,
			     qp->qpn, wr, bad_wr);
}

int qrdma_post_srq_recv(struct ib_srq *ibsrq, const struct ib_recv_wr *wr,
			const struct ib_recv_wr **bad_wr)
{
	struct qrdma_srq *srq = to_qsrq(ibsrq);

	if (srq->uctx) {
		*bad_wr = wr;
		return -EINVAL;
	}
	return qrdma_post_rq(to_qdev(ibsrq->device), &srq->rq, QRDMA_DB_SRQ,
			     srq->srqn, wr, bad_wr);
}

/* Drop what the driver knows of a queue: after a move to RESET (S36). */
void qrdma_wq_reset(struct qrdma_wq *wq)
{
	unsigned long flags;

	spin_lock_irqsave(&wq->lock, flags);
	wq->pi = 0;
	atomic_set(&wq->ci, 0);
	spin_unlock_irqrestore(&wq->lock, flags);
}

/*
 * The wr_id of the WQE a CQE of a QP queue completes, and retire it with
 * every WQE before it.  False if the index is not one outstanding.
 */
static bool qrdma_wq_complete(struct qrdma_wq *wq, u64 cookie, u64 *wr_id)
{
	/* Pairs with the poster's release: wr_ids below pi are written. */
	u32 pi = smp_load_acquire(&wq->pi);
	u32 ci = atomic_read(&wq->ci);
	u32 index = cookie;

	if (cookie > U32_MAX || index - ci >= pi - ci)
		return false;
	*wr_id = wq->wr_ids[index & ((1U << wq->log2) - 1)];
	/* The slot is the posters' again once they see it: read it first. */
	atomic_set_release(&wq->ci, index + 1);
	return true;
}

static enum ib_wc_status qrdma_wc_status(u8 status)
{
	switch (status) {
	case QRDMA_WC_SUCCESS: return IB_WC_SUCCESS;
	case QRDMA_WC_LOC_LEN_ERR: return IB_WC_LOC_LEN_ERR;
	case QRDMA_WC_LOC_QP_OP_ERR: return IB_WC_LOC_QP_OP_ERR;
	case QRDMA_WC_LOC_PROT_ERR: return IB_WC_LOC_PROT_ERR;
	case QRDMA_WC_WR_FLUSH_ERR: return IB_WC_WR_FLUSH_ERR;
	case QRDMA_WC_BAD_RESP_ERR: return IB_WC_BAD_RESP_ERR;
	case QRDMA_WC_LOC_ACCESS_ERR: return IB_WC_LOC_ACCESS_ERR;
	case QRDMA_WC_REM_INV_REQ_ERR: return IB_WC_REM_INV_REQ_ERR;
	case QRDMA_WC_REM_ACCESS_ERR: return IB_WC_REM_ACCESS_ERR;
	case QRDMA_WC_REM_OP_ERR: return IB_WC_REM_OP_ERR;
	case QRDMA_WC_RETRY_EXC_ERR: return IB_WC_RETRY_EXC_ERR;
	case QRDMA_WC_RNR_RETRY_EXC_ERR: return IB_WC_RNR_RETRY_EXC_ERR;
	case QRDMA_WC_FATAL_ERR: return IB_WC_FATAL_ERR;
	default: return IB_WC_GENERAL_ERR;
	}
}

static enum ib_wc_opcode qrdma_wc_opcode(u8 opcode)
{
	switch (opcode) {
	case QRDMA_WC_SEND: return IB_WC_SEND;
	case QRDMA_WC_RDMA_WRITE: return IB_WC_RDMA_WRITE;
	case QRDMA_WC_RDMA_READ: return IB_WC_RDMA_READ;
	case QRDMA_WC_COMP_SWAP: return IB_WC_COMP_SWAP;
	case QRDMA_WC_FETCH_ADD: return IB_WC_FETCH_ADD;
	case QRDMA_WC_LOCAL_INV: return IB_WC_LOCAL_INV;
	case QRDMA_WC_REG_MR: return IB_WC_REG_MR;
#ifdef QRDMA_HAVE_FLUSH_ATOMIC_WRITE
	case QRDMA_WC_ATOMIC_WRITE: return IB_WC_ATOMIC_WRITE;
	case QRDMA_WC_FLUSH: return IB_WC_FLUSH;
#endif
	case QRDMA_WC_RECV_RDMA_WITH_IMM: return IB_WC_RECV_RDMA_WITH_IMM;
	case QRDMA_WC_RECV:
	default: return IB_WC_RECV;
	}
}

/* Fill @wc from @cqe; false if the CQE is to be skipped. */
static bool qrdma_poll_one(struct qrdma_dev *dev, struct qrdma_cq *cq,
			   const struct qrdma_cqe *cqe, struct ib_wc *wc)
{
	u32 qpn = le32_to_cpu(cqe->qpn);
	bool is_recv = cqe->is_recv;
	struct qrdma_qp *qp;
	struct ib_cq *qcq;

	/*
	 * S12: completions of a QP destroyed (or reset) meanwhile are
	 * dropped: its destroy cleaned them, under the CQ lock, before it
	 * unlisted the QP.  So the QP cannot go away while we hold the
	 * lock, and a CQE of a QP not listed is the device's error.
	 */
	qp = xa_load(&dev->qp_xa, qpn);
	if (!qp) {
		atomic64_inc(&dev->sw_stats.stale_cqes);
		return false;
	}
	qcq = is_recv ? qp->ibqp.recv_cq : qp->ibqp.send_cq;
	if (qcq != &cq->ibcq || qp->uctx) {
		ibdev_err_ratelimited(&dev->ibdev,
				      "CQ %#x: CQE for QP %#x, which does not complete here\n",
				      cq->cqn, qpn);
		atomic64_inc(&dev->sw_stats.stale_cqes);
		return false;
	}

	memset(wc, 0, sizeof(*wc));
	if (is_recv && qp->ibqp.srq) {
		/* The SRQ's WQEs hold the wr_id; the oldest entry is free. */
		wc->wr_id = le64_to_cpu(cqe->wr_id);
		atomic_inc(&to_qsrq(qp->ibqp.srq)->rq.ci);
	} else if (!qrdma_wq_complete(is_recv ? &qp->rq : &qp->sq,
				      le64_to_cpu(cqe->wr_id), &wc->wr_id)) {
		ibdev_err_ratelimited(&dev->ibdev,
				      "CQ %#x: CQE for QP %#x names WQE %#llx, not outstanding\n",
				      cq->cqn, qpn, le64_to_cpu(cqe->wr_id));
		atomic64_inc(&dev->sw_stats.stale_cqes);
		return false;
	}
	wc->status = qrdma_wc_status(cqe->status);
	wc->opcode = qrdma_wc_opcode(cqe->opcode);
	wc->vendor_err = cqe->status;
	wc->byte_len = le32_to_cpu(cqe->byte_len);
	wc->qp = &qp->ibqp;
	wc->src_qp = le32_to_cpu(cqe->src_qp);
	if (cqe->flags & QRDMA_CQE_F_VLAN) {
		wc->wc_flags |= IB_WC_WITH_VLAN;
		wc->vlan_id = le16_to_cpu(cqe->vlan_id) & VLAN_VID_MASK;
	} else {
		wc->pkey_index = le16_to_cpu(cqe->pkey_index);
	}
	wc->sl = cqe->sl;
	wc->port_num = QRDMA_PORT;
	if (cqe->flags & QRDMA_CQE_F_WITH_IMM) {
		wc->wc_flags |= IB_WC_WITH_IMM;
		wc->ex.imm_data = cqe->imm_data;
	} else if (cqe->flags & QRDMA_CQE_F_WITH_INV) {
		wc->wc_flags |= IB_WC_WITH_INVALIDATE;
		wc->ex.invalidate_rkey = le32_to_cpu(cqe->invalidate_rkey);
	}
	if (cqe->flags & QRDMA_CQE_F_GRH)
		wc->wc_flags |= IB_WC_GRH;
	if (cqe->network_hdr_type == 1 || cqe->network_hdr_type == 2) {
		wc->wc_flags |= IB_WC_WITH_NETWORK_HDR_TYPE;
		wc->network_hdr_type = cqe->network_hdr_type == 1 ?
				       RDMA_NETWORK_IPV4 : RDMA_NETWORK_IPV6;
	}
	return true;
}

static struct qrdma_cqe *qrdma_cq_entry(struct qrdma_cq *cq, u32 index)
{
	struct qrdma_cqe *cqe = cq->ring.buf;

	return &cqe[index & ((1U << cq->log2) - 1)];
}

/* Has the device written the entry at @index, on the pass it is on? */
static bool qrdma_cqe_valid(struct qrdma_cq *cq, u32 index)
{
	u8 phase = (index >> cq->log2) & 1 ? 0 : QRDMA_CQE_F_PHASE;

	return (READ_ONCE(qrdma_cq_entry(cq, index)->flags) &
		QRDMA_CQE_F_PHASE) == phase;
}

/* Does the ring hold a CQE not polled yet?  Under the CQ's lock. */
bool qrdma_cq_has_cqe(struct qrdma_cq *cq)
{
	lockdep_assert_held(&cq->lock);
	return qrdma_cqe_valid(cq, cq->ci);
}

int qrdma_poll_cq(struct ib_cq *ibcq, int num_entries, struct ib_wc *wc)
{
	struct qrdma_dev *dev = to_qdev(ibcq->device);
	struct qrdma_cq *cq = to_qcq(ibcq);
	unsigned long flags;
	u32 start;
	int n = 0;

	if (cq->uctx)
		return -EINVAL;

	spin_lock_irqsave(&cq->lock, flags);
	if (cq->resizing)
		goto out_unlock;
	start = cq->ci;
	while (n < num_entries && qrdma_cqe_valid(cq, cq->ci)) {
		/* The flags byte is written last: read the rest after it. */
		dma_rmb();
		if (qrdma_poll_one(dev, cq, qrdma_cq_entry(cq, cq->ci), &wc[n]))
			n++;
		cq->ci++;
	}
	if (cq->ci != start) {
		/*
		 * The device may reuse the entries once it sees the new
		 * index: finish reading them first.
		 */
		dma_mb();
		WRITE_ONCE(*cq->ci_rec, cpu_to_le32(cq->ci));
	}
out_unlock:
	spin_unlock_irqrestore(&cq->lock, flags);
	return n;
}

int qrdma_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags)
{
	struct qrdma_dev *dev = to_qdev(ibcq->device);
	struct qrdma_cq *cq = to_qcq(ibcq);
	unsigned long irqflags;
	u32 arm;
	int ret = 0;

	if (cq->uctx)
		return -EINVAL;

	arm = (flags & IB_CQ_SOLICITED_MASK) == IB_CQ_SOLICITED ?
	      QRDMA_DB_CQ_ARM_SOLICITED : QRDMA_DB_CQ_ARM_NEXT;
	qrdma_ring_db(dev, QRDMA_DB_CQ_ARM, cq->cqn, arm);

	spin_lock_irqsave(&cq->lock, irqflags);
	if (cq->resizing)
		/*
		 * The device is moving the CQEs not polled to the new ring,
		 * and arming does not look at CQEs already written: the
		 * resize raises the event for them when it ends.
		 */
		cq->resize_notify = true;
	else if (flags & IB_CQ_REPORT_MISSED_EVENTS)
		ret = qrdma_cqe_valid(cq, cq->ci);
	spin_unlock_irqrestore(&cq->lock, irqflags);
	return ret;
}

/*
 * Forget the CQEs of @qp not polled yet: QPN 0 is never a QP's, so the
 * poller skips them.  The device never rewrites an entry it wrote.  A
 * receive CQE of a QP on an SRQ stands for an SRQ entry the device took;
 * polled, it frees that entry, so skipped, it must free it here, or the
 * SRQ loses the slot for good.
 */
void qrdma_cq_clean(struct qrdma_cq *cq, struct qrdma_qp *qp)
{
	struct ib_srq *srq = qp->ibqp.srq;
	unsigned long flags;
	u32 i, end, freed = 0;

	if (cq->uctx)
		return;

	/* A resize moves the entries: clean where it left them. */
	mutex_lock(&cq->resize_lock);
	spin_lock_irqsave(&cq->lock, flags);
	end = cq->ci + (1U << cq->log2);
	for (i = cq->ci; i != end && qrdma_cqe_valid(cq, i); i++) {
		struct qrdma_cqe *cqe = qrdma_cq_entry(cq, i);

		/* Valid per the phase bit: read after it. */
		dma_rmb();
		if (le32_to_cpu(cqe->qpn) != qp->qpn)
			continue;
		if (srq && cqe->is_recv)
			freed++;
		WRITE_ONCE(cqe->qpn, 0);
	}
	if (freed)
		atomic_add(freed, &to_qsrq(srq)->rq.ci);
	spin_unlock_irqrestore(&cq->lock, flags);
	mutex_unlock(&cq->resize_lock);
}
