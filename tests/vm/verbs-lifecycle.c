// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Lifecycle rules that only show through libibverbs, on qrdma:
 *
 *   S1   ibv_create_qp returns NULL with errno set when it fails;
 *   S15  ibv_destroy_qp waits for an unacknowledged affiliated async event
 *        of the QP (here QP_LAST_WQE_REACHED);
 *   S22  ibv_destroy_cq waits for an unacknowledged CQ_ERR of the CQ.
 *
 *   verbs-lifecycle DEVICE       prints TAP, exits 1 on any failure
 *
 * Built on the host against rdma-core 56.1 by scripts/build-provider and
 * run in the guest by tests/vm/provider-semantics.sh.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <infiniband/verbs.h>

static int n, failed;

static void check(bool ok, const char *what)
{
	printf("%sok %d - %s\n", ok ? "" : "not ", ++n, what);
	if (!ok)
		failed++;
}

/*
 * A known gap, tracked: reported as TAP TODO (a failure that is expected
 * and does not fail the run), and as a plain pass once it works.
 */
static void check_todo(bool ok, const char *what, const char *why)
{
	printf("%sok %d - %s%s%s\n", ok ? "" : "not ", ++n, what,
	       ok ? "" : " # TODO ", ok ? "" : why);
}

/* The next async event within two seconds, or false. */
static bool next_event(struct ibv_context *ctx, struct ibv_async_event *ev)
{
	struct pollfd pfd = { .fd = ctx->async_fd, .events = POLLIN };

	if (poll(&pfd, 1, 2000) != 1)
		return false;
	return ibv_get_async_event(ctx, ev) == 0;
}

struct destroyer {
	void *obj;
	bool is_cq;
	int ret;
	volatile bool done;
};

static void *destroy_thread(void *arg)
{
	struct destroyer *d = arg;

	d->ret = d->is_cq ? ibv_destroy_cq(d->obj) : ibv_destroy_qp(d->obj);
	d->done = true;
	return NULL;
}

/*
 * Destroy obj in a thread while ev is not acknowledged: the destroy must
 * still wait after 300 ms, and return 0 soon after the ack.
 */
static bool destroy_waits_for_ack(void *obj, bool is_cq,
				  struct ibv_async_event *ev)
{
	struct destroyer d = { .obj = obj, .is_cq = is_cq };
	struct timespec ts = { 0, 300 * 1000 * 1000 };
	pthread_t t;
	bool waited;
	int i;

	pthread_create(&t, NULL, destroy_thread, &d);
	nanosleep(&ts, NULL);
	waited = !d.done;
	ibv_ack_async_event(ev);
	for (i = 0; i < 100 && !d.done; i++)
		usleep(20000);
	if (d.done)
		pthread_join(t, NULL);
	if (!(waited && d.done && d.ret == 0))
		printf("# waited %d, done %d, ret %d\n", waited, d.done, d.ret);
	return waited && d.done && d.ret == 0;
}

static struct ibv_qp *make_qp(struct ibv_pd *pd, struct ibv_cq *cq,
			      struct ibv_srq *srq, uint32_t recv_wr)
{
	struct ibv_qp_init_attr init = {
		.send_cq = cq,
		.recv_cq = cq,
		.srq = srq,
		.cap = { .max_send_wr = 1, .max_recv_wr = recv_wr,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};

	return ibv_create_qp(pd, &init);
}

static int to_init_then_err(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.port_num = 1,
		.qp_access_flags = IBV_ACCESS_LOCAL_WRITE,
	};

	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			  IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		return -1;
	a.qp_state = IBV_QPS_ERR;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE);
}

int main(int argc, char **argv)
{
	const char *name = argc > 1 ? argv[1] : "qrdma0";
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_async_event ev;
	struct ibv_context *ctx = NULL;
	struct ibv_device_attr attr;
	struct ibv_srq_init_attr sattr = { .attr = { .max_wr = 16,
						     .max_sge = 1 } };
	struct ibv_qp_init_attr big;
	struct ibv_srq *srq;
	struct ibv_cq *cq, *small;
	struct ibv_qp *qp;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	static char buf[4096];
	int i, nrecv;

	for (i = 0; list && list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			ctx = ibv_open_device(list[i]);
	if (!ctx || ibv_query_device(ctx, &attr)) {
		printf("1..1\nnot ok 1 - open %s\n", name);
		return 1;
	}
	printf("1..6\n");
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	if (!pd || !cq || !mr) {
		check(false, "PD, CQ and MR");
		return 1;
	}

	/* S1 */
	memset(&big, 0, sizeof(big));
	big.send_cq = cq;
	big.recv_cq = cq;
	big.qp_type = IBV_QPT_RC;
	big.cap.max_send_wr = attr.max_qp_wr + 1;
	big.cap.max_recv_wr = 1;
	big.cap.max_send_sge = 1;
	big.cap.max_recv_sge = 1;
	errno = 0;
	qp = ibv_create_qp(pd, &big);
	check(!qp && errno == EINVAL,
	      "S1: ibv_create_qp over max_qp_wr gives NULL and EINVAL");
	big.cap.max_send_wr = 1;
	qp = ibv_create_qp(pd, &big);
	check(qp && qp->qp_type == IBV_QPT_RC && qp->state == IBV_QPS_RESET,
	      "S1: ibv_create_qp within limits gives a QP of that type");
	if (qp)
		ibv_destroy_qp(qp);

	/* S15: QP_LAST_WQE_REACHED of an SRQ-attached QP moved to ERR */
	srq = ibv_create_srq(pd, &sattr);
	qp = srq ? make_qp(pd, cq, srq, 0) : NULL;
	if (!qp || to_init_then_err(qp) || !next_event(ctx, &ev) ||
	    ev.event_type != IBV_EVENT_QP_LAST_WQE_REACHED ||
	    ev.element.qp != qp) {
		check(false, "S15: an SRQ QP in ERR raises QP_LAST_WQE_REACHED");
		check(false, "S15: ibv_destroy_qp waits for the event's ack");
	} else {
		check(true, "S15: an SRQ QP in ERR raises QP_LAST_WQE_REACHED");
		check(destroy_waits_for_ack(qp, false, &ev),
		      "S15: ibv_destroy_qp waits for the event's ack");
	}
	if (srq)
		ibv_destroy_srq(srq);

	/*
	 * S22: a small CQ takes the flush of more receives than it holds:
	 * CQ_ERR.
	 * The QP goes first (a CQ in use cannot go), the event is left
	 * unacknowledged, and the CQ's destroy waits for it.
	 */
	small = ibv_create_cq(ctx, 1, NULL, NULL, 0);
	/* More receives than the CQ really holds (it may hold more than 1). */
	nrecv = small ? small->cqe + 4 : 0;
	qp = small ? make_qp(pd, small, NULL, nrecv) : NULL;
	for (i = 0; qp && i < nrecv; i++) {
		struct ibv_sge sge = { (uintptr_t)buf, 64, mr->lkey };
		struct ibv_recv_wr wr = { .wr_id = i, .sg_list = &sge,
					  .num_sge = 1 }, *bad;

		if (ibv_post_recv(qp, &wr, &bad))
			break;
	}
	ev.event_type = 0;
	if (qp && !to_init_then_err(qp)) {
		while (next_event(ctx, &ev)) {
			if (ev.event_type == IBV_EVENT_CQ_ERR &&
			    ev.element.cq == small)
				break;
			/* The QP may report its lost completions (QP_FATAL). */
			printf("# event %s\n", ibv_event_type_str(ev.event_type));
			ibv_ack_async_event(&ev);
			ev.event_type = 0;
		}
	}
	if (qp)
		ibv_destroy_qp(qp);
	printf("# CQ of %d entries, %d receives\n", small ? small->cqe : 0,
	       nrecv);
	check(qp && ev.event_type == IBV_EVENT_CQ_ERR,
	      "S22: a CQ overrun raises CQ_ERR to the process");
	if (qp && ev.event_type == IBV_EVENT_CQ_ERR)
		check_todo(destroy_waits_for_ack(small, true, &ev),
			   "S22: ibv_destroy_cq waits for the CQ_ERR's ack",
			   "the destroy returns at once: the kernel reports no "
			   "async event read for the CQ");

	ibv_dereg_mr(mr);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	return failed ? 1 : 0;
}
