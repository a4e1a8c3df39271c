// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Lifecycle rules that only show through libibverbs, on qrdma:
 *
 *   S1   ibv_create_qp returns NULL with errno set when it fails;
 *   S15  ibv_destroy_qp waits for an unacknowledged affiliated async event
 *        of the QP (here QP_LAST_WQE_REACHED);
 *   S22  ibv_destroy_cq waits for an unacknowledged CQ_ERR of the CQ;
 *
 * and the other rules of docs/specs/qrdma-lifecycle.rst that the driver or
 * the provider decides or that only show end to end (S2-S7, S10-S14, S16,
 * S20, S21, S30-S38), each test named by its id.  Pairs of RC/UC/UD QPs
 * of the device talk over its loopback fabric with the port's IPv4-mapped
 * RoCE v2 GID.
 *
 *   verbs-lifecycle DEVICE [GID_INDEX]   prints KTAP (kselftest.h), exits 1
 *                                        on any failure
 *
 * Built on the host against rdma-core 56.1, with the guest kernel's
 * kselftest.h, by scripts/build-provider and run in the guest by
 * tests/vm/verbs-lifecycle.sh.
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
#include "kselftest.h"

static void check(bool ok, const char *what)
{
	ksft_test_result(ok, "%s\n", what);
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

/* ---- Two QPs of one device over its loopback fabric ---- */

static struct ibv_context *g_ctx;
static struct ibv_device_attr g_attr;
static struct ibv_pd *g_pd;
static struct ibv_cq *g_cq;
static struct ibv_mr *g_mr;
static struct ibv_ah *g_ah;
static union ibv_gid g_gid;
static int g_gidx = -1;
static char g_buf[65536];
#define QKEY 0x11111111

static int find_gid(void)
{
	struct ibv_port_attr pa;
	struct ibv_gid_entry e;
	int i;

	if (ibv_query_port(g_ctx, 1, &pa))
		return -1;
	for (i = 0; i < pa.gid_tbl_len; i++) {
		if (ibv_query_gid_ex(g_ctx, 1, i, &e, 0))
			continue;
		if (e.gid_type == IBV_GID_TYPE_ROCE_V2 &&
		    !memcmp(e.gid.raw, "\0\0\0\0\0\0\0\0\0\0\xff\xff", 12))
			return i;
	}
	return -1;
}

static struct ibv_qp *mkqp(enum ibv_qp_type t, struct ibv_cq *scq,
			   struct ibv_cq *rcq, struct ibv_srq *srq, int sig_all)
{
	struct ibv_qp_init_attr init = {
		.send_cq = scq, .recv_cq = rcq, .srq = srq,
		.cap = { .max_send_wr = 8, .max_recv_wr = 8,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = t, .sq_sig_all = sig_all,
	};

	return ibv_create_qp(g_pd, &init);
}

static int qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr i;

	if (ibv_query_qp(qp, &a, IBV_QP_STATE, &i))
		return -1;
	return a.qp_state;
}

static int set_state(struct ibv_qp *qp, enum ibv_qp_state st)
{
	struct ibv_qp_attr a = { .qp_state = st };

	return ibv_modify_qp(qp, &a, IBV_QP_STATE);
}

static int to_init(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
				 .qkey = QKEY,
				 .qp_access_flags = IBV_ACCESS_LOCAL_WRITE |
						    IBV_ACCESS_REMOTE_WRITE };
	int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;

	mask |= qp->qp_type == IBV_QPT_UD ? IBV_QP_QKEY : IBV_QP_ACCESS_FLAGS;
	return ibv_modify_qp(qp, &a, mask);
}

/* RESET (or INIT) -> RTR, talking to remote_qpn (ignored for UD). */
static int to_rtr(struct ibv_qp *qp, uint32_t remote_qpn)
{
	struct ibv_qp_attr a;
	int mask;

	if (qp_state(qp) == IBV_QPS_RESET && to_init(qp))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	mask = IBV_QP_STATE;
	if (qp->qp_type != IBV_QPT_UD) {
		a.path_mtu = IBV_MTU_1024;
		a.dest_qp_num = remote_qpn;
		a.rq_psn = 0;
		a.ah_attr.is_global = 1;
		a.ah_attr.grh.dgid = g_gid;
		a.ah_attr.grh.sgid_index = g_gidx;
		a.ah_attr.grh.hop_limit = 64;
		a.ah_attr.port_num = 1;
		mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			IBV_QP_RQ_PSN;
		if (qp->qp_type == IBV_QPT_RC) {
			a.max_dest_rd_atomic = 1;
			a.min_rnr_timer = 1;
			mask |= IBV_QP_MAX_DEST_RD_ATOMIC |
				IBV_QP_MIN_RNR_TIMER;
		}
	}
	if (ibv_modify_qp(qp, &a, mask)) {
		printf("# RTR: %s\n", strerror(errno));
		return -1;
	}
	return 0;
}

/* RESET (or INIT) -> RTS, talking to remote_qpn (ignored for UD). */
static int to_rts(struct ibv_qp *qp, uint32_t remote_qpn)
{
	struct ibv_qp_attr a;
	int mask;

	if (to_rtr(qp, remote_qpn))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0;
	mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
	if (qp->qp_type == IBV_QPT_RC) {
		a.timeout = 14;
		a.retry_cnt = 7;
		a.rnr_retry = 7;
		a.max_rd_atomic = 1;
		mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			IBV_QP_MAX_QP_RD_ATOMIC;
	}
	if (ibv_modify_qp(qp, &a, mask)) {
		printf("# RTS: %s\n", strerror(errno));
		return -1;
	}
	return 0;
}

static int psend(struct ibv_qp *qp, uint64_t id, int off, int len, int flags,
		 uint32_t lkey, uint32_t remote_qpn)
{
	struct ibv_sge sge = { (uintptr_t)g_buf + off, len, lkey };
	struct ibv_send_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND,
				  .send_flags = flags }, *bad;

	wr.wr.ud.ah = g_ah;
	wr.wr.ud.remote_qpn = remote_qpn;
	wr.wr.ud.remote_qkey = QKEY;
	return ibv_post_send(qp, &wr, &bad);
}

static int precv(struct ibv_qp *qp, uint64_t id, int off, int len,
		 uint32_t lkey)
{
	struct ibv_sge sge = { (uintptr_t)g_buf + off, len, lkey };
	struct ibv_recv_wr wr = { .wr_id = id, .sg_list = &sge,
				  .num_sge = 1 }, *bad;

	return ibv_post_recv(qp, &wr, &bad);
}

static int srecv(struct ibv_srq *srq, uint64_t id, int off, int len)
{
	struct ibv_sge sge = { (uintptr_t)g_buf + off, len, g_mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = id, .sg_list = &sge,
				  .num_sge = 1 }, *bad;

	return ibv_post_srq_recv(srq, &wr, &bad);
}

static long ms_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Up to want completions within ms milliseconds; how many came. */
static int pollw(struct ibv_cq *cq, struct ibv_wc *wc, int want, int ms)
{
	long end = ms_now() + ms;
	int got = 0, r;

	while (got < want) {
		r = ibv_poll_cq(cq, want - got, wc + got);
		if (r < 0)
			return got;
		got += r;
		if (!r) {
			if (ms_now() > end)
				break;
			usleep(1000);
		}
	}
	return got;
}

/* How many completions come within ms (all drained, up to 64 kept). */
static int quiet(struct ibv_cq *cq, int ms)
{
	struct ibv_wc wc[64];

	return pollw(cq, wc, 64, ms);
}

static void show_wc(const char *who, struct ibv_wc *wc, int k)
{
	int i;

	for (i = 0; i < k; i++)
		printf("# %s wc: id %llu status %s opcode %d qp %u\n", who,
		       (unsigned long long)wc[i].wr_id,
		       ibv_wc_status_str(wc[i].status), wc[i].opcode,
		       wc[i].qp_num);
}

struct pair {
	struct ibv_cq *ca, *cb;
	struct ibv_qp *a, *b;
};

/* a -> b of type t, each with its own CQ; connected unless !conn. */
static bool mkpair(struct pair *p, enum ibv_qp_type t, int sig_all)
{
	memset(p, 0, sizeof(*p));
	p->ca = ibv_create_cq(g_ctx, 64, NULL, NULL, 0);
	p->cb = ibv_create_cq(g_ctx, 64, NULL, NULL, 0);
	if (!p->ca || !p->cb)
		return false;
	p->a = mkqp(t, p->ca, p->ca, NULL, sig_all);
	p->b = mkqp(t, p->cb, p->cb, NULL, sig_all);
	if (!p->a || !p->b)
		return false;
	return !to_rts(p->a, p->b->qp_num) && !to_rts(p->b, p->a->qp_num);
}

static void rmpair(struct pair *p)
{
	if (p->a)
		ibv_destroy_qp(p->a);
	if (p->b)
		ibv_destroy_qp(p->b);
	if (p->ca)
		ibv_destroy_cq(p->ca);
	if (p->cb)
		ibv_destroy_cq(p->cb);
	memset(p, 0, sizeof(*p));
}

static bool flushed_in_order(struct ibv_wc *wc, int k, uint64_t first)
{
	int i;

	for (i = 0; i < k; i++)
		if (wc[i].status != IBV_WC_WR_FLUSH_ERR ||
		    wc[i].wr_id != first + i)
			return false;
	return true;
}


/* ---- The tests, a function per rule or group of rules ---- */

static void test_s1_create(void)
{
	struct ibv_qp_init_attr big;
	struct ibv_qp *qp;

	memset(&big, 0, sizeof(big));
	big.send_cq = g_cq;
	big.recv_cq = g_cq;
	big.qp_type = IBV_QPT_RC;
	big.cap.max_send_wr = g_attr.max_qp_wr + 1;
	big.cap.max_recv_wr = 1;
	big.cap.max_send_sge = 1;
	big.cap.max_recv_sge = 1;
	errno = 0;
	qp = ibv_create_qp(g_pd, &big);
	check(!qp && errno == EINVAL,
	      "S1: ibv_create_qp over max_qp_wr gives NULL and EINVAL");
	big.cap.max_send_wr = 1;
	qp = ibv_create_qp(g_pd, &big);
	check(qp && qp->qp_type == IBV_QPT_RC && qp->state == IBV_QPS_RESET,
	      "S1: ibv_create_qp within limits gives a QP of that type");
	if (qp)
		ibv_destroy_qp(qp);
}

/* S15: QP_LAST_WQE_REACHED of an SRQ-attached QP moved to ERR */
static void test_s15_destroy_waits_for_ack(void)
{
	struct ibv_srq_init_attr sattr = { .attr = { .max_wr = 16,
						     .max_sge = 1 } };
	struct ibv_async_event ev;
	struct ibv_srq *srq;
	struct ibv_qp *qp;

	srq = ibv_create_srq(g_pd, &sattr);
	qp = srq ? make_qp(g_pd, g_cq, srq, 0) : NULL;
	if (!qp || to_init_then_err(qp) || !next_event(g_ctx, &ev) ||
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
}

/*
 * S22: a small CQ takes the flush of more receives than it holds:
 * CQ_ERR.
 * The QP goes first (a CQ in use cannot go), the event is left
 * unacknowledged, and the CQ's destroy waits for it.
 */
static void test_s22_destroy_waits_for_ack(void)
{
	struct ibv_async_event ev;
	struct ibv_cq *small;
	struct ibv_qp *qp;
	bool got_cq_err;
	int i, nrecv;

	small = ibv_create_cq(g_ctx, 1, NULL, NULL, 0);
	/* More receives than the CQ really holds (it may hold more than 1). */
	nrecv = small ? small->cqe + 4 : 0;
	qp = small ? make_qp(g_pd, small, NULL, nrecv) : NULL;
	/* A QP in RESET takes no receive: they go in once it is in INIT. */
	if (qp && to_init(qp))
		nrecv = 0;
	for (i = 0; qp && i < nrecv; i++) {
		struct ibv_sge sge = { (uintptr_t)g_buf, 64, g_mr->lkey };
		struct ibv_recv_wr wr = { .wr_id = i, .sg_list = &sge,
					  .num_sge = 1 }, *bad;

		if (ibv_post_recv(qp, &wr, &bad))
			break;
	}
	nrecv = i;
	/* IBV_EVENT_CQ_ERR is 0: a flag, not the type, says one came. */
	got_cq_err = false;
	if (qp && !set_state(qp, IBV_QPS_ERR)) {
		while (!got_cq_err && next_event(g_ctx, &ev)) {
			got_cq_err = ev.event_type == IBV_EVENT_CQ_ERR &&
				     ev.element.cq == small;
			if (got_cq_err)
				break;
			/* The QP may report its lost completions (QP_FATAL). */
			printf("# event %s\n", ibv_event_type_str(ev.event_type));
			ibv_ack_async_event(&ev);
		}
	}
	if (qp)
		ibv_destroy_qp(qp);
	printf("# CQ of %d entries, %d receives\n", small ? small->cqe : 0,
	       nrecv);
	check(got_cq_err, "S22: a CQ overrun raises CQ_ERR to the process");
	check(got_cq_err && destroy_waits_for_ack(small, true, &ev),
	      "S22: ibv_destroy_cq waits for the CQ_ERR's ack");
}

/* S2: the caps written back, and over the limits */
static void test_s2_caps(void)
{
	struct ibv_qp_init_attr ia;
	struct ibv_qp *x, *y;
	bool ok;
	int r;

	memset(&ia, 0, sizeof(ia));
	ia.send_cq = ia.recv_cq = g_cq;
	ia.qp_type = IBV_QPT_RC;
	ia.cap.max_send_wr = 3;
	ia.cap.max_recv_wr = 5;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	ia.cap.max_inline_data = 16;
	x = ibv_create_qp(g_pd, &ia);
	ok = x && ia.cap.max_send_wr >= 3 && ia.cap.max_recv_wr >= 5 &&
	     ia.cap.max_send_sge >= 1 && ia.cap.max_recv_sge >= 1 &&
	     ia.cap.max_inline_data >= 16;
	printf("# caps %u %u %u %u %u\n", ia.cap.max_send_wr,
	       ia.cap.max_recv_wr, ia.cap.max_send_sge, ia.cap.max_recv_sge,
	       ia.cap.max_inline_data);
	check(ok, "S2: written-back caps are >= those requested");
	if (x)
		ibv_destroy_qp(x);
	ia.cap.max_inline_data = 0;
	/*
	 * Over the send SGE limit.  (qrdma advertises max_sge 7, the receive
	 * limit, but takes up to 12 send SGEs: 8 is not refused.)
	 */
	ia.cap.max_send_sge = 1024;
	errno = 0;
	x = ibv_create_qp(g_pd, &ia);
	r = errno;
	if (x)
		ibv_destroy_qp(x);
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = g_attr.max_sge + 1;
	errno = 0;
	y = ibv_create_qp(g_pd, &ia);
	if (y || errno != EINVAL) {
		printf("# max_recv_sge %d: %p %s\n", g_attr.max_sge + 1,
		       (void *)y, strerror(errno));
		r = errno ? errno : -1;
	}
	if (y)
		ibv_destroy_qp(y);
	ia.cap.max_recv_sge = 1;
	ia.cap.max_recv_wr = g_attr.max_qp_wr + 1;
	errno = 0;
	y = ibv_create_qp(g_pd, &ia);
	if (x || r != EINVAL || y || errno != EINVAL)
		printf("# max_sge %d: %p %s; max_qp_wr %d: %p %s\n",
		       g_attr.max_sge, (void *)x, strerror(r), g_attr.max_qp_wr,
		       (void *)y, strerror(errno));
	check(!x && r == EINVAL && !y && errno == EINVAL,
	      "S2: max_send_sge, max_recv_sge or max_recv_wr over the limit gives EINVAL");
	if (y)
		ibv_destroy_qp(y);
}

/* S3, S7: the QP types, a new QP's state and number */
static void test_s3_s7_create(void)
{
	struct ibv_srq_init_attr sia = { .attr = { .max_wr = 16,
						   .max_sge = 1 } };
	struct ibv_srq *srq;
	struct ibv_qp *q[3], *x;
	bool ok;
	int i;

	q[0] = mkqp(IBV_QPT_RC, g_cq, g_cq, NULL, 0);
	q[1] = mkqp(IBV_QPT_UC, g_cq, g_cq, NULL, 0);
	q[2] = mkqp(IBV_QPT_UD, g_cq, g_cq, NULL, 0);
	check(q[0] && q[1] && q[2] && q[0]->qp_type == IBV_QPT_RC &&
	      q[1]->qp_type == IBV_QPT_UC && q[2]->qp_type == IBV_QPT_UD,
	      "S3: RC, UC and UD QPs can be created");
	srq = ibv_create_srq(g_pd, &sia);
	errno = 0;
	x = srq ? mkqp(IBV_QPT_UC, g_cq, g_cq, srq, 0) : NULL;
	check(srq && !x && errno, "S3: a UC QP with an SRQ is refused");
	if (x)
		ibv_destroy_qp(x);
	ok = q[0] && q[1] && q[2];
	for (i = 0; ok && i < 3; i++)
		ok = qp_state(q[i]) == IBV_QPS_RESET;
	check(ok, "S7: a new QP is in RESET (ibv_query_qp)");
	check(ok && q[0]->qp_num != q[1]->qp_num &&
	      q[0]->qp_num != q[2]->qp_num && q[1]->qp_num != q[2]->qp_num,
	      "S7: live QPs have distinct qp_num");
	for (i = 0; i < 3; i++)
		if (q[i])
			ibv_destroy_qp(q[i]);
	if (srq)
		ibv_destroy_srq(srq);
}

/* S4: with an SRQ, the receive limits are not the QP's */
static void test_s4_srq_limits(void)
{
	struct ibv_srq_init_attr sia = { .attr = { .max_wr = 16,
						   .max_sge = 1 } };
	struct ibv_qp_init_attr ia;
	struct ibv_srq *srq;
	struct ibv_qp *x;

	srq = ibv_create_srq(g_pd, &sia);
	memset(&ia, 0, sizeof(ia));
	ia.send_cq = ia.recv_cq = g_cq;
	ia.srq = srq;
	ia.qp_type = IBV_QPT_RC;
	ia.cap.max_send_wr = 1;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_wr = g_attr.max_qp_wr + 1;
	ia.cap.max_recv_sge = g_attr.max_sge + 1;
	x = srq ? ibv_create_qp(g_pd, &ia) : NULL;
	if (!x)
		printf("# create: %s\n", strerror(errno));
	check(x != NULL, "S4: with an SRQ, max_recv_wr/max_recv_sge are ignored");
	if (x)
		ibv_destroy_qp(x);
	if (srq)
		ibv_destroy_srq(srq);
}

/* S5: which sends complete */
static void test_s5_signaling(void)
{
	struct ibv_wc wc[64];
	struct pair p;
	bool ok;
	int i, k, r;

	ok = mkpair(&p, IBV_QPT_RC, 0);
	for (i = 0; ok && i < 4; i++)
		ok = !precv(p.b, i, 4096 + 64 * i, 64, g_mr->lkey);
	ok = ok && !psend(p.a, 1, 0, 8, 0, g_mr->lkey, 0) &&
	     !psend(p.a, 2, 0, 8, IBV_SEND_SIGNALED, g_mr->lkey, 0);
	k = ok ? pollw(p.cb, wc, 2, 2000) : 0;
	r = ok ? pollw(p.ca, wc + 2, 2, 300) : 0;
	if (!(k == 2 && r == 1 && wc[2].wr_id == 2)) {
		printf("# recv %d send %d\n", k, r);
		show_wc("send", wc + 2, r);
	}
	check(k == 2 && r == 1 && wc[2].wr_id == 2 &&
	      wc[2].status == IBV_WC_SUCCESS,
	      "S5: sq_sig_all clear: only the SIGNALED send completes");
	rmpair(&p);
	ok = mkpair(&p, IBV_QPT_RC, 1);
	for (i = 0; ok && i < 4; i++)
		ok = !precv(p.b, i, 4096 + 64 * i, 64, g_mr->lkey);
	ok = ok && !psend(p.a, 1, 0, 8, 0, g_mr->lkey, 0) &&
	     !psend(p.a, 2, 0, 8, 0, g_mr->lkey, 0);
	k = ok ? pollw(p.cb, wc, 2, 2000) : 0;
	r = ok ? pollw(p.ca, wc + 2, 3, 300) : 0;
	if (!(k == 2 && r == 2))
		printf("# recv %d send %d\n", k, r);
	check(k == 2 && r == 2, "S5: sq_sig_all set: every send completes");
	rmpair(&p);

	/* S5: errors complete even unsignaled */
	ok = mkpair(&p, IBV_QPT_RC, 0);
	ok = ok && !precv(p.b, 1, 4096, 64, g_mr->lkey) &&
	     !psend(p.a, 1, 0, 8, 0, 0x7777, 0);
	k = ok ? pollw(p.ca, wc, 1, 2000) : 0;
	check(k == 1 && wc[0].status != IBV_WC_SUCCESS && wc[0].wr_id == 1,
	      "S5: an unsignaled send that fails still completes");
	rmpair(&p);
}

/* S10, S11, S36: sends left pending (RNR: the peer has no receive) */
static void test_s10_s11_s36_pending_sends(void)
{
	struct pair p;
	bool ok;
	int i, k, r;

	ok = mkpair(&p, IBV_QPT_RC, 1);
	for (i = 0; ok && i < 3; i++)
		ok = !psend(p.a, i, 0, 8, 0, g_mr->lkey, 0);
	usleep(100000);
	ok = ok && !set_state(p.a, IBV_QPS_RESET);
	k = ok ? quiet(p.ca, 300) : -1;
	if (k)
		printf("# %d completions after RESET\n", k);
	check(k == 0, "S36: RESET drops pending sends: no completion polled");
	ok = ok && !to_rts(p.a, p.b->qp_num);
	for (i = 0; ok && i < 3; i++)
		ok = !psend(p.a, i, 0, 8, 0, g_mr->lkey, 0);
	usleep(100000);
	r = ok ? ibv_destroy_qp(p.a) : -1;
	if (!r)
		p.a = NULL;
	k = !r ? quiet(p.ca, 300) : -1;
	printf("# destroy %d, then %d completions\n", r, k);
	check(r == 0, "S10: an RTS QP with sends pending can be destroyed");
	check(k == 0, "S11: its pending sends give no completion afterwards");
	rmpair(&p);
}

/* S10: SQD, where the device has it */
static void test_s10_sqd(void)
{
	struct pair p;
	bool ok;
	int r, st;

	ok = mkpair(&p, IBV_QPT_RC, 1);
	r = ok ? set_state(p.a, IBV_QPS_SQD) : -1;
	if (ok && r) {
		ksft_test_result_skip("S10: a QP in SQD can be destroyed: no SQD (%s)\n",
				      strerror(errno));
	} else {
		st = ok ? qp_state(p.a) : -1;
		r = ok ? ibv_destroy_qp(p.a) : -1;
		if (!r)
			p.a = NULL;
		printf("# state %d, destroy %d\n", st, r);
		check(r == 0, "S10: a QP in SQD can be destroyed");
	}
	rmpair(&p);
}

/* S6: inline data */
static void test_s6_inline(void)
{
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr qa;
	struct ibv_wc wc[64];
	struct pair p;
	bool ok;
	int k;

	ok = mkpair(&p, IBV_QPT_RC, 1);
	memset(&ia, 0, sizeof(ia));
	if (ok)
		ibv_query_qp(p.a, &qa, IBV_QP_CAP, &ia);
	printf("# max_inline_data %u\n", ia.cap.max_inline_data);
	ok = ok && ia.cap.max_inline_data >= 16;
	memset(g_buf + 4096, 0, 64);
	memcpy(g_buf, "inline-original!", 16);
	ok = ok && !precv(p.b, 7, 4096, 64, g_mr->lkey) &&
	     !psend(p.a, 7, 0, 16, IBV_SEND_INLINE, 0, 0);
	memcpy(g_buf, "OVERWRITTEN-----", 16);
	k = ok ? pollw(p.cb, wc, 1, 2000) : 0;
	if (k == 1)
		printf("# got %.16s\n", g_buf + 4096);
	check(k == 1 && wc[0].status == IBV_WC_SUCCESS &&
	      !memcmp(g_buf + 4096, "inline-original!", 16),
	      "S6: inline data is taken at post time");
	rmpair(&p);
}

/* S10, S14: destroy in each state, with outstanding WRs */
static void test_s10_s14_destroy_states(void)
{
	struct ibv_qp *x;
	int i, r, st;

	{
		static const enum ibv_qp_state sts[] = {
			IBV_QPS_RESET, IBV_QPS_INIT, IBV_QPS_RTR,
			IBV_QPS_RTS, IBV_QPS_ERR };
		int bad = 0;

		for (i = 0; i < 5; i++) {
			x = mkqp(IBV_QPT_RC, g_cq, g_cq, NULL, 0);
			if (!x) {
				bad++;
				continue;
			}
			if (sts[i] >= IBV_QPS_INIT)
				to_init(x);
			if (sts[i] >= IBV_QPS_INIT)
				precv(x, i, 8192, 64, g_mr->lkey);
			if (sts[i] == IBV_QPS_RTR)
				to_rtr(x, x->qp_num);
			if (sts[i] >= IBV_QPS_RTS)
				to_rts(x, x->qp_num);
			if (sts[i] == IBV_QPS_ERR)
				set_state(x, IBV_QPS_ERR);
			st = qp_state(x);
			r = ibv_destroy_qp(x);
			if (r || st != (int)sts[i]) {
				printf("# state %d (want %d) destroy %d\n",
				       st, sts[i], r);
				bad++;
			}
		}
		quiet(g_cq, 200);
		check(!bad, "S10/S14: destroy returns 0 in RESET, INIT, RTR, RTS, ERR (receives posted)");
	}
}

/* S31, S10: a UD QP after a send error, in SQE */
static void test_s31_ud(void)
{
	struct ibv_wc wc[64];
	struct pair p;
	bool ok;
	int k, r, st;

	ok = mkpair(&p, IBV_QPT_UD, 1);
	ok = ok && !psend(p.a, 1, 0, 8, 0, 0x7777, p.b->qp_num);
	k = ok ? pollw(p.ca, wc, 1, 2000) : 0;
	st = ok ? qp_state(p.a) : -1;
	printf("# UD send with a bad lkey: %d wc, status %s, state %d\n", k,
	       k ? ibv_wc_status_str(wc[0].status) : "-", st);
	check(k == 1 && wc[0].status != IBV_WC_SUCCESS && st == IBV_QPS_SQE,
	      "S31: a UD send-queue error moves the QP to SQE");
	ok = ok && !precv(p.a, 2, 4096, 128, g_mr->lkey) &&
	     !psend(p.b, 2, 0, 8, 0, g_mr->lkey, p.a->qp_num);
	k = ok ? pollw(p.ca, wc, 1, 2000) : 0;
	if (k != 1 || wc[0].status != IBV_WC_SUCCESS)
		show_wc("a", wc, k);
	quiet(p.cb, 100);
	check(k == 1 && wc[0].status == IBV_WC_SUCCESS && wc[0].wr_id == 2,
	      "S31: in SQE the receive queue goes on working");
	r = ok ? ibv_destroy_qp(p.a) : -1;
	if (!r)
		p.a = NULL;
	check(r == 0, "S10: a QP in SQE can be destroyed");
	rmpair(&p);
}

/* S31: a UC QP after a send error */
static void test_s31_uc(void)
{
	struct ibv_wc wc[64];
	struct pair p;
	bool ok;
	int k, st;

	ok = mkpair(&p, IBV_QPT_UC, 1);
	ok = ok && !psend(p.a, 1, 0, 8, 0, 0x7777, 0);
	k = ok ? pollw(p.ca, wc, 1, 2000) : 0;
	st = ok ? qp_state(p.a) : -1;
	printf("# UC send with a bad lkey: %d wc, status %s, state %d\n", k,
	       k ? ibv_wc_status_str(wc[0].status) : "-", st);
	check(k == 1 && wc[0].status != IBV_WC_SUCCESS && st == IBV_QPS_SQE,
	      "S31: a UC send-queue error moves the QP to SQE");
	rmpair(&p);
}

/* S31: an RC QP after a send error */
static void test_s31_rc(void)
{
	struct ibv_wc wc[64];
	struct pair p;
	bool ok;
	int k, st;

	ok = mkpair(&p, IBV_QPT_RC, 1);
	ok = ok && !precv(p.b, 1, 4096, 64, g_mr->lkey) &&
	     !psend(p.a, 1, 0, 8, 0, 0x7777, 0);
	k = ok ? pollw(p.ca, wc, 1, 2000) : 0;
	st = ok ? qp_state(p.a) : -1;
	printf("# RC send with a bad lkey: %d wc, status %s, state %d\n", k,
	       k ? ibv_wc_status_str(wc[0].status) : "-", st);
	check(k == 1 && wc[0].status != IBV_WC_SUCCESS && st == IBV_QPS_ERR,
	      "S31: an RC send-queue error moves the QP to ERR");
	rmpair(&p);
}

/* S32: receive error (bad lkey in the receive WR) */
static void test_s32_recv_error(void)
{
	struct ibv_wc wc[64];
	struct pair p;
	bool ok;
	int k, r, st;

	ok = mkpair(&p, IBV_QPT_RC, 1);
	ok = ok && !precv(p.b, 1, 4096, 64, 0x7777) &&
	     !psend(p.a, 1, 0, 8, 0, g_mr->lkey, 0);
	k = ok ? pollw(p.cb, wc, 1, 2000) : 0;
	r = ok ? pollw(p.ca, wc + 1, 1, 2000) : 0;
	st = ok ? qp_state(p.b) : -1;
	printf("# RC receive with a bad lkey: %d wc, status %s, state %d\n",
	       k, k ? ibv_wc_status_str(wc[0].status) : "-", st);
	check(k == 1 && wc[0].status != IBV_WC_SUCCESS && st == IBV_QPS_ERR,
	      "S32: a receive-queue error moves the responder to ERR");
	st = ok ? qp_state(p.a) : -1;
	printf("# its requester: %d wc, status %s, state %d\n",
	       r, r ? ibv_wc_status_str(wc[1].status) : "-", st);
	check(r == 1 && wc[1].status != IBV_WC_SUCCESS && st == IBV_QPS_ERR,
	      "S32: an RC requester whose remote reports an error goes to ERR");
	rmpair(&p);
}

/* S30, S16, S35: one receive completes, then ERR flushes the rest */
static void test_s30_s16_s35_flush_recv(void)
{
	struct ibv_wc wc[64];
	struct pair p;
	bool ok;
	int i, k, r;

	ok = mkpair(&p, IBV_QPT_RC, 1);
	for (i = 0; ok && i < 4; i++)
		ok = !precv(p.b, i, 4096 + 64 * i, 64, g_mr->lkey);
	ok = ok && !psend(p.a, 100, 0, 8, 0, g_mr->lkey, 0);
	k = ok ? pollw(p.cb, wc, 1, 2000) : 0;
	ok = ok && k == 1 && wc[0].status == IBV_WC_SUCCESS &&
	     wc[0].wr_id == 0;
	ok = ok && !set_state(p.b, IBV_QPS_ERR);
	k = ok ? pollw(p.cb, wc + 1, 3, 2000) : 0;
	r = quiet(p.cb, 200);
	if (!(k == 3 && flushed_in_order(wc + 1, 3, 1) && !r)) {
		printf("# flushed %d, then %d more\n", k, r);
		show_wc("b", wc + 1, k);
	}
	check(k == 3 && flushed_in_order(wc + 1, 3, 1),
	      "S30: ERR flushes pending receives in order with WR_FLUSH_ERR");
	check(ok && k == 3 && !r && wc[0].status == IBV_WC_SUCCESS,
	      "S16: ERR + drain: exactly one completion per receive WR");
	/* S35 */
	ok = !precv(p.b, 9, 4096, 64, g_mr->lkey) &&
	     !psend(p.b, 10, 0, 8, 0, g_mr->lkey, 0);
	k = pollw(p.cb, wc, 2, 2000);
	if (k != 2)
		show_wc("b", wc, k);
	check(ok && k == 2 && wc[0].status == IBV_WC_WR_FLUSH_ERR &&
	      wc[1].status == IBV_WC_WR_FLUSH_ERR,
	      "S35: WRs posted in ERR complete with WR_FLUSH_ERR");
	r = ibv_destroy_qp(p.b);
	if (!r)
		p.b = NULL;
	check(r == 0, "S16: destroy after ERR and drain returns 0");
	rmpair(&p);
}

/* S30 send side: sends stuck on RNR are flushed in order */
static void test_s30_flush_send(void)
{
	struct ibv_wc wc[64];
	struct pair p;
	bool ok;
	int i, k;

	ok = mkpair(&p, IBV_QPT_RC, 1);
	for (i = 0; ok && i < 3; i++)
		ok = !psend(p.a, i, 0, 8, 0, g_mr->lkey, 0);
	usleep(100000);
	ok = ok && !set_state(p.a, IBV_QPS_ERR);
	k = ok ? pollw(p.ca, wc, 3, 2000) : 0;
	if (!(k == 3 && flushed_in_order(wc, 3, 0)))
		show_wc("a", wc, k);
	check(k == 3 && flushed_in_order(wc, 3, 0),
	      "S30: ERR flushes pending sends in order with WR_FLUSH_ERR");
	rmpair(&p);
}

/* S36, S37: RESET drops WRs and their completions; the QP works again */
static void test_s36_s37_reset(void)
{
	struct ibv_wc wc[64];
	struct pair p;
	bool ok;
	int i, k;

	ok = mkpair(&p, IBV_QPT_RC, 1);
	for (i = 0; ok && i < 4; i++)
		ok = !precv(p.b, i, 4096 + 64 * i, 64, g_mr->lkey);
	ok = ok && !set_state(p.b, IBV_QPS_ERR) &&
	     !set_state(p.b, IBV_QPS_RESET);
	k = ok ? quiet(p.cb, 300) : -1;
	if (k)
		printf("# %d completions after RESET\n", k);
	check(k == 0, "S36: RESET removes the WRs and their completions");
	/* S37 */
	ok = ok && !to_rts(p.b, p.a->qp_num) &&
	     !precv(p.b, 5, 4096, 64, g_mr->lkey) &&
	     !psend(p.a, 5, 0, 8, 0, g_mr->lkey, 0);
	k = ok ? pollw(p.cb, wc, 1, 2000) : 0;
	check(k == 1 && wc[0].status == IBV_WC_SUCCESS && wc[0].wr_id == 5,
	      "S37: ERR -> RESET -> INIT -> RTR -> RTS works again");
	rmpair(&p);
}

/* S38: posting receives past the RQ's limits */
static void test_s38_post_recv(void)
{
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr qa;
	struct ibv_qp *x;
	bool ok;
	int i, r;

	x = mkqp(IBV_QPT_RC, g_cq, g_cq, NULL, 1);
	memset(&ia, 0, sizeof(ia));
	ok = x && !ibv_query_qp(x, &qa, IBV_QP_CAP, &ia) && !to_init(x);
	{
		int nr = ia.cap.max_recv_wr + 1;
		struct ibv_sge sge[32];
		struct ibv_recv_wr *rw = calloc(nr, sizeof(*rw)), *bad = NULL;

		for (i = 0; i < 32; i++)
			sge[i] = (struct ibv_sge){ (uintptr_t)g_buf + 8192,
						   64, g_mr->lkey };
		for (i = 0; ok && i < nr; i++) {
			rw[i].wr_id = i;
			rw[i].sg_list = sge;
			rw[i].num_sge = 1;
			rw[i].next = i + 1 < nr ? &rw[i + 1] : NULL;
		}
		r = ok ? ibv_post_recv(x, rw, &bad) : -1;
		printf("# %d receives: %d, bad %ld\n", nr, r,
		       bad ? (long)(bad - rw) : -1L);
		check(r == ENOMEM && bad == &rw[nr - 1],
		      "S38: post_recv on a full RQ: ENOMEM, bad_wr the first not posted");
		if (ok)
			set_state(x, IBV_QPS_RESET);
		ok = ok && !to_init(x);
		if (ok) {
			rw[0].next = &rw[1];
			rw[1].next = NULL;
			rw[1].num_sge = ia.cap.max_recv_sge + 1;
		}
		bad = NULL;
		r = ok && ia.cap.max_recv_sge < 31 ?
			ibv_post_recv(x, rw, &bad) : -1;
		printf("# max_recv_sge %u: %d, bad %ld\n", ia.cap.max_recv_sge,
		       r, bad ? (long)(bad - rw) : -1L);
		check((r == EINVAL || r == ENOMEM) && bad == &rw[1],
		      "S38: post_recv over max_recv_sge: EINVAL, bad_wr the first not posted");
		free(rw);
	}
	if (x)
		ibv_destroy_qp(x);
	quiet(g_cq, 100);
}

/* S38, the send side: sends stuck on RNR fill the SQ */
static void test_s38_post_send(void)
{
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr qa;
	struct pair p;
	bool ok;
	int i, r;

	ok = mkpair(&p, IBV_QPT_RC, 1);
	memset(&ia, 0, sizeof(ia));
	ok = ok && !ibv_query_qp(p.a, &qa, IBV_QP_CAP, &ia);
	{
		int ns = ia.cap.max_send_wr + 1;
		struct ibv_sge sge[32];
		struct ibv_send_wr *sw = calloc(ns, sizeof(*sw)), *bad = NULL;

		for (i = 0; i < 32; i++)
			sge[i] = (struct ibv_sge){ (uintptr_t)g_buf, 8,
						   g_mr->lkey };
		for (i = 0; ok && i < ns; i++) {
			sw[i].wr_id = i;
			sw[i].sg_list = sge;
			sw[i].num_sge = 1;
			sw[i].opcode = IBV_WR_SEND;
			sw[i].next = i + 1 < ns ? &sw[i + 1] : NULL;
		}
		r = ok ? ibv_post_send(p.a, sw, &bad) : -1;
		printf("# %d sends: %d, bad %ld\n", ns, r,
		       bad ? (long)(bad - sw) : -1L);
		check(r == ENOMEM && bad == &sw[ns - 1],
		      "S38: post_send on a full SQ: ENOMEM, bad_wr the first not posted");
		rmpair(&p);
		ok = mkpair(&p, IBV_QPT_RC, 1);
		if (ok) {
			sw[0].next = &sw[1];
			sw[1].next = NULL;
			sw[1].num_sge = ia.cap.max_send_sge + 1;
		}
		bad = NULL;
		r = ok && ia.cap.max_send_sge < 31 ?
			ibv_post_send(p.a, sw, &bad) : -1;
		printf("# max_send_sge %u: %d, bad %ld\n", ia.cap.max_send_sge,
		       r, bad ? (long)(bad - sw) : -1L);
		check((r == EINVAL || r == ENOMEM) && bad == &sw[1],
		      "S38: post_send over max_send_sge: EINVAL, bad_wr the first not posted");
		free(sw);
	}
	rmpair(&p);
}

/* S11, S12: destroy a UC receiver with receives posted */
static void test_s11_s12_destroyed_uc(void)
{
	struct ibv_wc wc[64];
	struct pair p;
	bool ok;
	int i, k;

	ok = mkpair(&p, IBV_QPT_UC, 1);
	memset(g_buf + 12288, 0x5a, 64);
	memcpy(g_buf, "payload!", 8);
	ok = ok && !precv(p.b, 1, 4096, 64, g_mr->lkey) &&
	     !psend(p.a, 1, 0, 8, 0, g_mr->lkey, 0);
	k = ok ? pollw(p.cb, wc, 1, 2000) : 0;
	ok = ok && k == 1 && !precv(p.b, 2, 4160, 64, g_mr->lkey) &&
	     !precv(p.b, 3, 12288, 64, g_mr->lkey);
	/* one completion left unpolled in cb, one receive outstanding */
	ok = ok && !psend(p.a, 2, 0, 8, 0, g_mr->lkey, 0) &&
	     pollw(p.ca, wc, 2, 2000) == 2;
	usleep(100000);
	uint32_t bqpn = ok ? p.b->qp_num : 0;
	ok = ok && !ibv_destroy_qp(p.b);
	if (ok)
		p.b = NULL;
	/* S12: whatever is polled belongs to the QP and is sane */
	k = ok ? pollw(p.cb, wc, 4, 200) : -1;
	for (i = 0; i < k; i++)
		if (wc[i].qp_num != bqpn || wc[i].wr_id != 2)
			ok = false;
	printf("# %d completion(s) of the destroyed QP polled\n", k);
	check(ok && k >= 0 && k <= 1, "S12: polling after destroy is sane");
	memset(g_buf + 12288, 0x5a, 64);
	ok = ok && !psend(p.a, 3, 0, 8, 0, g_mr->lkey, 0);
	pollw(p.ca, wc, 1, 2000);
	k = ok ? quiet(p.cb, 300) : -1;
	check(ok && k == 0 && g_buf[12288] == 0x5a,
	      "S11: after destroy no completions and no buffer writes");
	rmpair(&p);
}

/* S13: a UD QP attached to a multicast group */
static void test_s13_mcast(void)
{
	struct ibv_wc wc[64];
	struct pair p;
	bool ok;
	int k, r;

	ok = mkpair(&p, IBV_QPT_UD, 1);
	{
		union ibv_gid mg = { .raw = { 0xff, 0x0e, [15] = 1 } };

		r = ok ? ibv_attach_mcast(p.b, &mg, 0) : -1;
		if (r)
			printf("# attach: %d\n", r);
		ok = ok && !r;
		r = ok ? ibv_destroy_qp(p.b) : -1;
		check(r == EBUSY, "S13/S14: destroy of an attached UD QP returns EBUSY");
		ok = ok && r == EBUSY && !precv(p.b, 1, 4096, 128, g_mr->lkey) &&
		     !psend(p.a, 1, 0, 8, 0, g_mr->lkey, p.b->qp_num);
		k = ok ? pollw(p.cb, wc, 1, 2000) : 0;
		check(k == 1 && wc[0].status == IBV_WC_SUCCESS,
		      "S13: the QP still works after the failed destroy");
		r = ok ? ibv_detach_mcast(p.b, &mg, 0) : -1;
		r = !r ? ibv_destroy_qp(p.b) : -1;
		if (!r)
			p.b = NULL;
		check(r == 0, "S13: detach, then destroy returns 0");
	}
	rmpair(&p);
}

/* S20, S21: destroying CQs in use, holding completions, armed */
static void test_s20_s21_cq_destroy(void)
{
	struct ibv_wc wc[64];
	struct ibv_cq *c2;
	struct pair p;
	bool ok;
	int k, r, st;

	ok = mkpair(&p, IBV_QPT_RC, 1);
	r = ok ? ibv_destroy_cq(p.cb) : -1;
	check(r == EBUSY, "S20/S14: destroying a CQ in use returns EBUSY");
	r = ok ? ibv_destroy_cq(p.ca) : -1;
	check(r == EBUSY, "S20: likewise the send CQ");
	ok = ok && !precv(p.b, 1, 4096, 64, g_mr->lkey) &&
	     !psend(p.a, 1, 0, 8, 0, g_mr->lkey, 0);
	k = ok ? pollw(p.cb, wc, 1, 2000) : 0;
	r = ok ? pollw(p.ca, wc + 1, 1, 2000) : 0;
	check(k == 1 && r == 1 && wc[0].status == IBV_WC_SUCCESS &&
	      wc[1].status == IBV_WC_SUCCESS,
	      "S20: the QPs keep working on their CQs");

	/* S21: CQs with unpolled completions, and armed */
	ok = ok && !precv(p.b, 2, 4096, 64, g_mr->lkey) &&
	     !psend(p.a, 2, 0, 8, 0, g_mr->lkey, 0);
	usleep(200000);
	ibv_destroy_qp(p.a);
	ibv_destroy_qp(p.b);
	p.a = p.b = NULL;
	r = ibv_destroy_cq(p.cb);
	st = ibv_destroy_cq(p.ca);
	p.ca = p.cb = NULL;
	check(ok && r == 0 && st == 0,
	      "S21: CQs holding unpolled completions can be destroyed");
	{
		struct ibv_comp_channel *ch = ibv_create_comp_channel(g_ctx);

		c2 = ch ? ibv_create_cq(g_ctx, 16, NULL, ch, 0) : NULL;
		ok = c2 && !ibv_req_notify_cq(c2, 0);
		r = c2 ? ibv_destroy_cq(c2) : -1;
		check(ok && r == 0, "S21: an armed CQ can be destroyed");
		if (ch)
			ibv_destroy_comp_channel(ch);
	}
}

/* S33, S34: two RC QPs on one SRQ */
static void test_s33_s34_srq(void)
{
	struct ibv_wc wc[64];
	struct ibv_srq_init_attr sia = { .attr = { .max_wr = 16,
						   .max_sge = 1 } };
	struct ibv_srq *srq;
	struct ibv_qp *x, *y;
	struct ibv_cq *c2;
	struct pair p;
	bool ok;
	int i, k, r;

	srq = ibv_create_srq(g_pd, &sia);
	c2 = ibv_create_cq(g_ctx, 64, NULL, NULL, 0);
	x = srq ? mkqp(IBV_QPT_RC, c2, c2, srq, 1) : NULL;
	y = srq ? mkqp(IBV_QPT_RC, c2, c2, srq, 1) : NULL;
	memset(&p, 0, sizeof(p));
	ok = x && y && mkpair(&p, IBV_QPT_RC, 1);
	/* p.a sends to x, p.b sends to y */
	ok = ok && !to_rts(x, p.a->qp_num) && !to_rts(y, p.b->qp_num);
	if (ok) {
		struct ibv_qp_attr ra = { .qp_state = IBV_QPS_RESET };

		ibv_modify_qp(p.a, &ra, IBV_QP_STATE);
		ibv_modify_qp(p.b, &ra, IBV_QP_STATE);
		ok = !to_rts(p.a, x->qp_num) && !to_rts(p.b, y->qp_num);
	}
	for (i = 0; ok && i < 3; i++)
		ok = !srecv(srq, i, 4096 + 64 * i, 64);
	ok = ok && !psend(p.a, 1, 0, 8, 0, g_mr->lkey, 0);
	k = ok ? pollw(c2, wc, 1, 2000) : 0;
	ok = ok && k == 1 && wc[0].status == IBV_WC_SUCCESS &&
	     wc[0].qp_num == x->qp_num;
	{
		struct ibv_async_event ev;
		bool got = false;

		ok = ok && !set_state(x, IBV_QPS_ERR);
		while (ok && next_event(g_ctx, &ev)) {
			if (ev.event_type == IBV_EVENT_QP_LAST_WQE_REACHED &&
			    ev.element.qp == x)
				got = true;
			else
				printf("# event %s\n",
				       ibv_event_type_str(ev.event_type));
			ibv_ack_async_event(&ev);
			if (got)
				break;
		}
		r = quiet(c2, 200);
		check(got && !r,
		      "S33: SRQ QP to ERR: LAST_WQE_REACHED, nothing taken from the SRQ flushed");
	}
	ok = ok && !psend(p.b, 2, 0, 8, 0, g_mr->lkey, 0) &&
	     !psend(p.b, 3, 0, 8, 0, g_mr->lkey, 0);
	k = ok ? pollw(c2, wc, 2, 2000) : 0;
	if (k != 2)
		show_wc("y", wc, k);
	check(k == 2 && wc[0].status == IBV_WC_SUCCESS &&
	      wc[1].status == IBV_WC_SUCCESS && wc[0].qp_num == y->qp_num,
	      "S34: the SRQ's receives stay usable by the other QP");
	if (x)
		ibv_destroy_qp(x);
	if (y)
		ibv_destroy_qp(y);
	rmpair(&p);
	if (srq)
		ibv_destroy_srq(srq);
	if (c2)
		ibv_destroy_cq(c2);
}

/*
 * The tests in the order they run, each with the number of results it
 * reports whatever happens in it: the plan is their sum, and a test that
 * reports another number is named.
 */
static const struct lifecycle_test {
	const char *name;
	void (*run)(void);
	unsigned int results;
} tests[] = {
#define LIFECYCLE_TEST(name, results) { #name, test_##name, results }
	LIFECYCLE_TEST(s1_create, 2),
	LIFECYCLE_TEST(s15_destroy_waits_for_ack, 2),
	LIFECYCLE_TEST(s22_destroy_waits_for_ack, 2),
	LIFECYCLE_TEST(s2_caps, 2),
	LIFECYCLE_TEST(s3_s7_create, 4),
	LIFECYCLE_TEST(s4_srq_limits, 1),
	LIFECYCLE_TEST(s5_signaling, 3),
	LIFECYCLE_TEST(s10_s11_s36_pending_sends, 3),
	LIFECYCLE_TEST(s10_sqd, 1),
	LIFECYCLE_TEST(s6_inline, 1),
	LIFECYCLE_TEST(s10_s14_destroy_states, 1),
	LIFECYCLE_TEST(s31_ud, 3),
	LIFECYCLE_TEST(s31_uc, 1),
	LIFECYCLE_TEST(s31_rc, 1),
	LIFECYCLE_TEST(s32_recv_error, 2),
	LIFECYCLE_TEST(s30_s16_s35_flush_recv, 4),
	LIFECYCLE_TEST(s30_flush_send, 1),
	LIFECYCLE_TEST(s36_s37_reset, 2),
	LIFECYCLE_TEST(s38_post_recv, 2),
	LIFECYCLE_TEST(s38_post_send, 2),
	LIFECYCLE_TEST(s11_s12_destroyed_uc, 2),
	LIFECYCLE_TEST(s13_mcast, 3),
	LIFECYCLE_TEST(s20_s21_cq_destroy, 5),
	LIFECYCLE_TEST(s33_s34_srq, 2),
#undef LIFECYCLE_TEST
};

/* The device, a PD, a CQ and a registered buffer, and an AH to ourselves. */
static int setup(const char *name)
{
	struct ibv_device **list;
	int i;

	list = ibv_get_device_list(NULL);
	for (i = 0; list && list[i] && !g_ctx; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			g_ctx = ibv_open_device(list[i]);
	if (list)
		ibv_free_device_list(list);
	if (!g_ctx || ibv_query_device(g_ctx, &g_attr))
		return -1;
	g_pd = ibv_alloc_pd(g_ctx);
	g_cq = g_pd ? ibv_create_cq(g_ctx, 64, NULL, NULL, 0) : NULL;
	g_mr = g_cq ? ibv_reg_mr(g_pd, g_buf, sizeof(g_buf),
				 IBV_ACCESS_LOCAL_WRITE |
				 IBV_ACCESS_REMOTE_WRITE) : NULL;
	if (!g_mr)
		return -1;
	if (g_gidx < 0)
		g_gidx = find_gid();
	if (g_gidx >= 0 && !ibv_query_gid(g_ctx, 1, g_gidx, &g_gid)) {
		struct ibv_ah_attr aa = { .is_global = 1, .port_num = 1 };

		aa.grh.dgid = g_gid;
		aa.grh.sgid_index = g_gidx;
		aa.grh.hop_limit = 64;
		g_ah = ibv_create_ah(g_pd, &aa);
	}
	ksft_print_msg("GID index %d, ah %p\n", g_gidx, (void *)g_ah);
	return 0;
}

static void teardown(void)
{
	if (g_ah)
		ibv_destroy_ah(g_ah);
	ibv_dereg_mr(g_mr);
	ibv_destroy_cq(g_cq);
	ibv_dealloc_pd(g_pd);
	ibv_close_device(g_ctx);
}

int main(int argc, char **argv)
{
	const char *name = argc > 1 ? argv[1] : "qrdma0";
	unsigned int plan = 0, before;
	size_t i;

	if (argc > 2)
		g_gidx = atoi(argv[2]);
	ksft_print_header();
	for (i = 0; i < ARRAY_SIZE(tests); i++)
		plan += tests[i].results;
	ksft_set_plan(plan);
	if (setup(name))
		ksft_exit_fail_msg("open %s and set it up: %s\n", name,
				   strerror(errno));
	for (i = 0; i < ARRAY_SIZE(tests); i++) {
		before = ksft_test_num();
		tests[i].run();
		if (ksft_test_num() - before != tests[i].results)
			ksft_print_msg("%s reported %u results, not %u\n",
				       tests[i].name, ksft_test_num() - before,
				       tests[i].results);
	}
	teardown();
	ksft_finished();
}
