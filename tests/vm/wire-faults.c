// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * What the perftest and rdma-core examples do not show of a wire that
 * loses, repeats and corrupts, or of a peer that is slow to receive:
 *
 *   wire-faults ud-recv ADDR PORT COUNT SIZE [VLAN]
 *   wire-faults ud-send ADDR PORT COUNT SIZE
 *       UD: the sender sends COUNT datagrams of SIZE bytes, each numbered
 *       and with a checksum; the receiver takes what arrives until the
 *       sender is done and the wire has been quiet for a while.  Some may
 *       be lost; none may arrive corrupted or twice.  With VLAN, the
 *       receiver polls an extended CQ made with IBV_WC_EX_WITH_CVLAN, and
 *       each datagram must say it came on that VLAN (ibv_wc_read_cvlan).
 *
 *   wire-faults mcast-recv ADDR GROUP COUNT SIZE MIN_PERCENT
 *   wire-faults mcast-send ADDR GROUP COUNT SIZE PACE_US
 *       UD multicast: each joins the IPv4 group GROUP (rdma_cm, on the
 *       device of ADDR); the sender sends COUNT datagrams as ud-send
 *       does, PACE_US apart, to the group, and each receiver (which
 *       says "# joined" once it is attached, its receives posted) takes
 *       them as ud-recv does.  Besides, at least MIN_PERCENT of them must
 *       arrive.
 *
 *   wire-faults rnr-server ADDR PORT RNR_RETRY DELAY_MS
 *   wire-faults rnr-client ADDR PORT RNR_RETRY
 *       RC: the server accepts one connection, sets its QP's
 *       min_rnr_timer to 14 (1.28 ms) and posts its receive only
 *       DELAY_MS after the connection is up (never if DELAY_MS is -1).
 *       The client sends 4 KiB 100 ms after it, with rnr_retry
 *       RNR_RETRY (both sides offer it in the CM exchange).  With 7 (for
 *       ever) the send must complete and the server get the bytes; with
 *       fewer the send must fail with IBV_WC_RNR_RETRY_EXC_ERR, after at
 *       least RNR_RETRY waits of the timer.
 *
 *   wire-faults rc-sink ADDR PORT
 *   wire-faults rc-stream ADDR PORT TIMEOUT RETRY_CNT
 *       A peer that dies: the sink accepts one RC connection and takes
 *       SENDs until it is killed; the stream connects with local ACK
 *       timeout TIMEOUT and retry_cnt RETRY_CNT, prints "# streaming"
 *       once 64 SENDs of 64 KiB completed, and sends until a SEND
 *       fails.  That must be IBV_WC_RETRY_EXC_ERR, and come after the
 *       last SEND that succeeded within the time the two give: at least
 *       RETRY_CNT local ACK timeouts (4.096 us * 2^TIMEOUT), at most 4
 *       times 1 + RETRY_CNT of them (the specification lets a timer run
 *       up to 4 times as long) and 2 s more.  The stream then exits
 *       without freeing anything: the kernel must.
 *
 *   wire-faults rmw-server ADDR PORT COUNT
 *   wire-faults rmw-client ADDR PORT COUNT flush|no-flush
 *       RC, IBA 1.5's FLUSH and ATOMIC_WRITE: the server lets its QP and
 *       an MR take both (IBV_ACCESS_FLUSH_GLOBAL) and sends the MR's
 *       address and rkey; the client then, COUNT times, writes a new
 *       8-byte value there with ATOMIC_WRITE and (with flush) makes it
 *       visible with a FLUSH of those 8 bytes (both signaled, each must
 *       succeed with its own opcode), and finally SENDs the last value;
 *       the server checks that its memory holds it.  rxe answers both
 *       with an empty RDMA READ response and expects that answer, as the
 *       specification has it.  Built against an rdma-core without the two
 *       verbs (before 45), both exit 77: skipped.
 *
 * The server side binds ADDR, the client side connects to it; both
 * connect through rdma_cm, which picks the device and the GID.  Each
 * prints what it saw and "PASS" or "FAIL: why", and exits 0 only on PASS.
 * Built on the host against the guest's rdma-core by scripts/build-provider
 * (HAVE_IBV_WR_FLUSH and HAVE_IBV_WR_ATOMIC_WRITE from the provider's
 * probes) and run in the guests by tests/vm/wire-pair.sh.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <rdma/rdma_cma.h>
#include <infiniband/verbs.h>

#define GRH_LEN 40
#define RNR_LEN 4096
/* min_rnr_timer 14: 1.28 ms, in the IB specification's table. */
#define RNR_TIMER 14
#define RNR_TIMER_US 1280
/* After the sender is done, the receiver waits this long for stragglers. */
#define UD_QUIET_MS 2000
/* Long enough for the CM to send a lost MAD again twice. */
#define CM_TIMEOUT_MS 30000
#define WC_TIMEOUT_MS 60000

struct conn {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *listen_id;
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	/* ud-recv VLAN: the extended CQ, and what it said of the last one */
	struct ibv_cq_ex *cqx;
	bool want_vlan;
	uint16_t vlan;
	struct ibv_mr *mr;
	uint8_t *buf;
	size_t buf_len;
	/* UD: whom to send to */
	struct ibv_ah *ah;
	uint32_t remote_qpn;
	uint32_t remote_qkey;
};

static void __attribute__((noreturn, format(printf, 1, 2)))
fail(const char *fmt, ...)
{
	va_list ap;

	printf("FAIL: ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	exit(1);
}

static int64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* The next CM event, which must be of type want. */
/* The next CM event, which must be want or (if not 0) also. */
static struct rdma_cm_event *cm_expect_either(struct conn *c,
					      enum rdma_cm_event_type want,
					      enum rdma_cm_event_type also)
{
	struct pollfd p = { .fd = c->ch->fd, .events = POLLIN };
	struct rdma_cm_event *ev;

	if (poll(&p, 1, CM_TIMEOUT_MS) != 1)
		fail("no %s within %d ms", rdma_event_str(want),
		     CM_TIMEOUT_MS);
	if (rdma_get_cm_event(c->ch, &ev))
		fail("rdma_get_cm_event: %s", strerror(errno));
	if (ev->event != want && (!also || ev->event != also))
		fail("%s (status %d) where %s was due",
		     rdma_event_str(ev->event), ev->status,
		     rdma_event_str(want));
	return ev;
}

static struct rdma_cm_event *cm_expect(struct conn *c,
				       enum rdma_cm_event_type want)
{
	return cm_expect_either(c, want, 0);
}

static void resolve(const char *addr, const char *port,
		    struct sockaddr_storage *sa)
{
	struct addrinfo hints = { .ai_family = AF_INET }, *res;

	if (getaddrinfo(addr, port, &hints, &res))
		fail("address %s port %s", addr, port);
	memcpy(sa, res->ai_addr, res->ai_addrlen);
	freeaddrinfo(res);
}

/* PD, CQ, buffer and QP of the connection's id. */
static void make_qp(struct conn *c, enum ibv_qp_type type, int depth)
{
	struct ibv_qp_init_attr qa = {
		.qp_type = type,
		.cap = {
			.max_send_wr = depth,
			.max_recv_wr = depth,
			.max_send_sge = 1,
			.max_recv_sge = 1,
		},
	};

	c->pd = ibv_alloc_pd(c->id->verbs);
	if (!c->pd)
		fail("ibv_alloc_pd");
	if (c->want_vlan) {
		struct ibv_cq_init_attr_ex ca = {
			.cqe = 2 * depth,
			.wc_flags = IBV_WC_STANDARD_FLAGS | IBV_WC_EX_WITH_CVLAN,
		};

		c->cqx = ibv_create_cq_ex(c->id->verbs, &ca);
		if (!c->cqx)
			fail("ibv_create_cq_ex with IBV_WC_EX_WITH_CVLAN: %s",
			     strerror(errno));
		c->cq = ibv_cq_ex_to_cq(c->cqx);
	} else {
		c->cq = ibv_create_cq(c->id->verbs, 2 * depth, NULL, NULL, 0);
	}
	if (!c->cq)
		fail("ibv_create_cq");
	c->buf = calloc(1, c->buf_len);
	if (!c->buf)
		fail("out of memory");
	c->mr = ibv_reg_mr(c->pd, c->buf, c->buf_len, IBV_ACCESS_LOCAL_WRITE);
	if (!c->mr)
		fail("ibv_reg_mr: %s", strerror(errno));
	qa.send_cq = c->cq;
	qa.recv_cq = c->cq;
	if (rdma_create_qp(c->id, c->pd, &qa))
		fail("rdma_create_qp: %s", strerror(errno));
}

/* The server's half of connecting: the id of the peer's request. */
static void cm_listen(struct conn *c, const char *addr, const char *port,
		      enum rdma_port_space ps)
{
	struct sockaddr_storage sa;
	struct rdma_cm_event *ev;

	resolve(addr, port, &sa);
	c->ch = rdma_create_event_channel();
	if (!c->ch || rdma_create_id(c->ch, &c->listen_id, NULL, ps))
		fail("rdma_create_id: %s", strerror(errno));
	if (rdma_bind_addr(c->listen_id, (struct sockaddr *)&sa) ||
	    rdma_listen(c->listen_id, 1))
		fail("listen on %s:%s: %s", addr, port, strerror(errno));
	printf("# listening on %s:%s\n", addr, port);
	fflush(stdout);
	ev = cm_expect(c, RDMA_CM_EVENT_CONNECT_REQUEST);
	c->id = ev->id;
	rdma_ack_cm_event(ev);
}

/* The client's half, up to the route: the QP is made next. */
static void cm_resolve(struct conn *c, const char *addr, const char *port,
		       enum rdma_port_space ps)
{
	struct sockaddr_storage sa;

	resolve(addr, port, &sa);
	c->ch = rdma_create_event_channel();
	if (!c->ch || rdma_create_id(c->ch, &c->id, NULL, ps))
		fail("rdma_create_id: %s", strerror(errno));
	if (rdma_resolve_addr(c->id, NULL, (struct sockaddr *)&sa, 5000))
		fail("rdma_resolve_addr: %s", strerror(errno));
	rdma_ack_cm_event(cm_expect(c, RDMA_CM_EVENT_ADDR_RESOLVED));
	if (rdma_resolve_route(c->id, 5000))
		fail("rdma_resolve_route: %s", strerror(errno));
	rdma_ack_cm_event(cm_expect(c, RDMA_CM_EVENT_ROUTE_RESOLVED));
}

/* What an RC end offers in the CM exchange: one READ each way. */
static struct rdma_conn_param rc_param(int retry_cnt, int rnr_retry)
{
	return (struct rdma_conn_param) {
		.responder_resources = 1,
		.initiator_depth = 1,
		.retry_count = retry_cnt,
		.rnr_retry_count = rnr_retry,
	};
}

/* One completion of the extended CQ, its VLAN in c->vlan. */
static int poll_one_ex(struct conn *c, struct ibv_wc *wc)
{
	struct ibv_poll_cq_attr pa = { 0 };
	int ret = ibv_start_poll(c->cqx, &pa);

	if (ret == ENOENT)
		return 0;
	if (ret)
		return -1;
	wc->wr_id = c->cqx->wr_id;
	wc->status = c->cqx->status;
	wc->byte_len = ibv_wc_read_byte_len(c->cqx);
	c->vlan = ibv_wc_read_cvlan(c->cqx);
	ibv_end_poll(c->cqx);
	return 1;
}

/* One completion within ms, or none (false). */
static bool poll_one(struct conn *c, struct ibv_wc *wc, int ms)
{
	int64_t end = now_us() + (int64_t)ms * 1000;
	int n;

	do {
		n = c->cqx ? poll_one_ex(c, wc) : ibv_poll_cq(c->cq, 1, wc);
		if (n < 0)
			fail("ibv_poll_cq");
		if (n)
			return true;
		usleep(100);
	} while (now_us() < end);
	return false;
}

static void post_recv(struct conn *c, uint64_t off, uint32_t len)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)c->buf + off,
		.length = len,
		.lkey = c->mr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = off, .sg_list = &sge, .num_sge = 1 };
	struct ibv_recv_wr *bad;

	if (ibv_post_recv(c->id->qp, &wr, &bad))
		fail("ibv_post_recv: %s", strerror(errno));
}

static void post_send(struct conn *c, uint64_t off, uint32_t len)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)c->buf + off,
		.length = len,
		.lkey = c->mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = off,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED,
	};
	struct ibv_send_wr *bad;

	if (c->ah) {
		wr.wr.ud.ah = c->ah;
		wr.wr.ud.remote_qpn = c->remote_qpn;
		wr.wr.ud.remote_qkey = c->remote_qkey;
	}
	if (ibv_post_send(c->id->qp, &wr, &bad))
		fail("ibv_post_send: %s", strerror(errno));
}

/*
 * A datagram: its number, then bytes that follow from the number, then a
 * checksum of all before it (FNV-1a: the test's own, independent of the
 * ICRC that the wire checks).
 */
static uint32_t fnv1a(const uint8_t *p, size_t n)
{
	uint32_t h = 2166136261u;

	while (n--)
		h = (h ^ *p++) * 16777619u;
	return h;
}

static void ud_fill(uint8_t *p, uint32_t size, uint32_t seq)
{
	uint32_t i, h;

	memcpy(p, &seq, 4);
	for (i = 4; i < size - 4; i++)
		p[i] = (uint8_t)(seq * 7 + i * 13);
	h = fnv1a(p, size - 4);
	memcpy(p + size - 4, &h, 4);
}

static bool ud_check(const uint8_t *p, uint32_t size, uint32_t *seq)
{
	uint32_t i, h;

	memcpy(seq, p, 4);
	memcpy(&h, p + size - 4, 4);
	if (h != fnv1a(p, size - 4))
		return false;
	for (i = 4; i < size - 4; i++)
		if (p[i] != (uint8_t)(*seq * 7 + i * 13))
			return false;
	return true;
}

/* The receive ring of the UD receiver: slots of GRH + SIZE. */
#define UD_RING 256

/*
 * Datagrams of SIZE bytes numbered below count, taken into a ring of
 * UD_RING receives already posted until the sender is done and the wire
 * has been quiet for a while.  Fails if one arrives corrupted, twice or
 * made up, or if fewer than min_pct percent of the count arrive.
 */
static int ud_take(struct conn *c, uint32_t count, uint32_t size, int vlan,
		   uint32_t min_pct)
{
	uint32_t got = 0, bad = 0, twice = 0, beyond = 0, distinct = 0, seq, i;
	uint32_t other_vlan = 0;
	uint8_t *seen = calloc(count, 1);
	uint32_t *first = calloc(count, sizeof(*first));
	int64_t last;
	struct ibv_wc wc;

	if (!seen || !first)
		fail("out of memory");
	last = now_us();
	while (now_us() - last < (int64_t)(got ? UD_QUIET_MS : WC_TIMEOUT_MS) *
	       1000) {
		if (!poll_one(c, &wc, 10))
			continue;
		last = now_us();
		if (wc.status != IBV_WC_SUCCESS)
			fail("receive completed with %s",
			     ibv_wc_status_str(wc.status));
		if (c->want_vlan && c->vlan != vlan && other_vlan++ < 10)
			printf("# a datagram on VLAN %u, not %d\n", c->vlan,
			       vlan);
		if (wc.byte_len != GRH_LEN + size) {
			bad++;
		} else if (!ud_check(c->buf + wc.wr_id + GRH_LEN, size,
				     &seq)) {
			bad++;
		} else if (seq >= count) {
			beyond++;
		} else if (seen[seq]++) {
			if (twice++ < 10)
				printf("# datagram %u again, %u received since the first\n",
				       seq, got - first[seq]);
		} else {
			first[seq] = got;
		}
		got++;
		post_recv(c, wc.wr_id, GRH_LEN + size);
	}
	for (i = 0; i < count; i++)
		distinct += !!seen[i];
	printf("# received %u of %u datagrams of %u bytes: %u lost, %u corrupted, %u twice, %u never sent\n",
	       got, count, size, count - distinct, bad, twice, beyond);
	if (!got)
		fail("nothing arrived");
	if (bad || twice || beyond)
		fail("a datagram arrived corrupted, twice or made up");
	if ((uint64_t)distinct * 100 < (uint64_t)count * min_pct)
		fail("fewer than %u%% of the datagrams arrived", min_pct);
	if (c->want_vlan)
		printf("# %u said VLAN %d, %u another\n", got - other_vlan,
		       vlan, other_vlan);
	if (other_vlan)
		fail("the completions named another VLAN than the one used");
	free(seen);
	free(first);
	printf("PASS\n");
	return 0;
}

static int ud_recv(const char *addr, const char *port, uint32_t count,
		   uint32_t size, int vlan)
{
	struct conn c = {
		.buf_len = (size_t)UD_RING * (GRH_LEN + size),
		.want_vlan = vlan >= 0,
	};
	struct rdma_conn_param cp = { 0 };
	uint32_t i;

	cm_listen(&c, addr, port, RDMA_PS_UDP);
	make_qp(&c, IBV_QPT_UD, UD_RING);
	for (i = 0; i < UD_RING; i++)
		post_recv(&c, (uint64_t)i * (GRH_LEN + size), GRH_LEN + size);
	cp.qp_num = c.id->qp->qp_num;
	if (rdma_accept(c.id, &cp))
		fail("rdma_accept: %s", strerror(errno));
	return ud_take(&c, count, size, vlan, 0);
}

/*
 * COUNT datagrams of SIZE bytes to whom c names, 32 in flight (a slow
 * receiver loses some, as UD allows), pace_us apart; every send must
 * complete successfully.
 */
static void ud_stream(struct conn *c, uint32_t count, uint32_t size,
		      uint32_t pace_us)
{
	uint32_t sent = 0, done = 0, errors = 0;
	struct ibv_wc wc;

	while (done < count) {
		while (sent < count && sent - done < 32) {
			uint64_t off = (uint64_t)(sent % 64) * size;

			ud_fill(c->buf + off, size, sent);
			post_send(c, off, size);
			sent++;
			if (pace_us)
				usleep(pace_us);
		}
		if (!poll_one(c, &wc, WC_TIMEOUT_MS))
			fail("a send did not complete");
		if (wc.status != IBV_WC_SUCCESS)
			errors++;
		done++;
	}
	printf("# sent %u datagrams of %u bytes to QPN 0x%x, %u send errors\n",
	       count, size, c->remote_qpn, errors);
	if (errors)
		fail("sends completed in error");
}

/* The AH, QPN and Q_Key of the peer or group that ev describes. */
static void ud_target(struct conn *c, struct rdma_cm_event *ev)
{
	c->remote_qpn = ev->param.ud.qp_num;
	c->remote_qkey = ev->param.ud.qkey;
	c->ah = ibv_create_ah(c->pd, &ev->param.ud.ah_attr);
	if (!c->ah)
		fail("ibv_create_ah: %s", strerror(errno));
}

static int ud_send(const char *addr, const char *port, uint32_t count,
		   uint32_t size)
{
	struct conn c = { .buf_len = (size_t)64 * size };
	struct rdma_conn_param cp = { 0 };
	struct rdma_cm_event *ev;

	cm_resolve(&c, addr, port, RDMA_PS_UDP);
	make_qp(&c, IBV_QPT_UD, 64);
	if (rdma_connect(c.id, &cp))
		fail("rdma_connect: %s", strerror(errno));
	ev = cm_expect(&c, RDMA_CM_EVENT_ESTABLISHED);
	ud_target(&c, ev);
	rdma_ack_cm_event(ev);
	ud_stream(&c, count, size, 0);
	printf("PASS\n");
	return 0;
}

/*
 * Multicast: a UD QP on the device of ADDR joined to the IPv4 group
 * GROUP through rdma_cm, which attaches the QP and (on rxe) has the
 * netdev take the group's MAC; receives posted first when it receives.
 */
static void mcast_join(struct conn *c, const char *addr, const char *group,
		       bool receiver)
{
	struct sockaddr_storage sa, ga;
	struct rdma_cm_event *ev;
	uint32_t i;

	resolve(addr, "0", &sa);
	resolve(group, "0", &ga);
	c->ch = rdma_create_event_channel();
	if (!c->ch || rdma_create_id(c->ch, &c->id, NULL, RDMA_PS_UDP))
		fail("rdma_create_id: %s", strerror(errno));
	if (rdma_resolve_addr(c->id, (struct sockaddr *)&sa,
			      (struct sockaddr *)&ga, 5000))
		fail("rdma_resolve_addr %s -> %s: %s", addr, group,
		     strerror(errno));
	rdma_ack_cm_event(cm_expect(c, RDMA_CM_EVENT_ADDR_RESOLVED));
	make_qp(c, IBV_QPT_UD, UD_RING);
	if (receiver)
		for (i = 0; i < UD_RING; i++)
			post_recv(c, (uint64_t)i * (c->buf_len / UD_RING),
				  c->buf_len / UD_RING);
	if (rdma_join_multicast(c->id, (struct sockaddr *)&ga, NULL))
		fail("rdma_join_multicast %s: %s", group, strerror(errno));
	ev = cm_expect(c, RDMA_CM_EVENT_MULTICAST_JOIN);
	ud_target(c, ev);
	rdma_ack_cm_event(ev);
	printf("# joined %s on %s, QPN 0x%x\n", group, addr, c->id->qp->qp_num);
}

static int mcast_recv(const char *addr, const char *group, uint32_t count,
		      uint32_t size, uint32_t min_pct)
{
	struct conn c = { .buf_len = (size_t)UD_RING * (GRH_LEN + size) };

	mcast_join(&c, addr, group, true);
	return ud_take(&c, count, size, -1, min_pct);
}

static int mcast_send(const char *addr, const char *group, uint32_t count,
		      uint32_t size, uint32_t pace_us)
{
	struct conn c = { .buf_len = (size_t)UD_RING * size };

	mcast_join(&c, addr, group, false);
	ud_stream(&c, count, size, pace_us);
	printf("PASS\n");
	return 0;
}

static int rnr_server(const char *addr, const char *port, int rnr_retry,
		      int delay_ms)
{
	struct conn c = { .buf_len = RNR_LEN };
	struct rdma_conn_param cp = rc_param(7, rnr_retry);
	struct ibv_qp_attr attr = { .min_rnr_timer = RNR_TIMER };
	struct rdma_cm_event *ev;
	struct ibv_wc wc;
	uint32_t i;

	cm_listen(&c, addr, port, RDMA_PS_TCP);
	make_qp(&c, IBV_QPT_RC, 4);
	if (rdma_accept(c.id, &cp))
		fail("rdma_accept: %s", strerror(errno));
	/*
	 * rdma_cm leaves min_rnr_timer at 0, 655 ms: a shorter one, set
	 * before the client can send (rdma_accept leaves the QP in RTS).
	 */
	if (ibv_modify_qp(c.id->qp, &attr, IBV_QP_MIN_RNR_TIMER))
		fail("ibv_modify_qp(min_rnr_timer): %s", strerror(errno));
	if (delay_ms < 0) {
		printf("# no receive posted: the client's send must fail\n");
		/*
		 * A lost RTU leaves this side waiting for the REP's retry,
		 * seconds away; the client, done in a few RNR timeouts,
		 * disconnects before, and the DREQ ends the connection.
		 */
		ev = cm_expect_either(&c, RDMA_CM_EVENT_ESTABLISHED,
				      RDMA_CM_EVENT_DISCONNECTED);
		if (ev->event == RDMA_CM_EVENT_DISCONNECTED) {
			printf("# disconnected before established: the RTU was lost\n");
			rdma_ack_cm_event(ev);
		} else {
			rdma_ack_cm_event(ev);
			rdma_ack_cm_event(cm_expect(&c,
						    RDMA_CM_EVENT_DISCONNECTED));
		}
		printf("PASS\n");
		return 0;
	}
	rdma_ack_cm_event(cm_expect(&c, RDMA_CM_EVENT_ESTABLISHED));
	usleep((useconds_t)delay_ms * 1000);
	post_recv(&c, 0, RNR_LEN);
	printf("# receive posted %d ms after the connection\n", delay_ms);
	if (!poll_one(&c, &wc, WC_TIMEOUT_MS))
		fail("the send never arrived");
	if (wc.status != IBV_WC_SUCCESS || wc.byte_len != RNR_LEN)
		fail("receive: %s, %u bytes", ibv_wc_status_str(wc.status),
		     wc.byte_len);
	for (i = 0; i < RNR_LEN; i++)
		if (c.buf[i] != (uint8_t)(i * 11 + 3))
			fail("byte %u is 0x%02x", i, c.buf[i]);
	printf("# %d bytes received and checked\n", RNR_LEN);
	rdma_ack_cm_event(cm_expect(&c, RDMA_CM_EVENT_DISCONNECTED));
	printf("PASS\n");
	return 0;
}

static int rnr_client(const char *addr, const char *port, int rnr_retry)
{
	struct conn c = { .buf_len = RNR_LEN };
	struct rdma_conn_param cp = rc_param(7, rnr_retry);
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr qa;
	struct ibv_wc wc;
	int64_t start, took;
	uint32_t i;

	cm_resolve(&c, addr, port, RDMA_PS_TCP);
	make_qp(&c, IBV_QPT_RC, 4);
	if (rdma_connect(c.id, &cp))
		fail("rdma_connect: %s", strerror(errno));
	rdma_ack_cm_event(cm_expect(&c, RDMA_CM_EVENT_ESTABLISHED));
	if (ibv_query_qp(c.id->qp, &qa, IBV_QP_RNR_RETRY, &ia))
		fail("ibv_query_qp: %s", strerror(errno));
	if (qa.rnr_retry != rnr_retry)
		fail("the QP's rnr_retry is %u, not %d", qa.rnr_retry,
		     rnr_retry);
	/* The server's min_rnr_timer set meanwhile. */
	usleep(100 * 1000);
	for (i = 0; i < RNR_LEN; i++)
		c.buf[i] = (uint8_t)(i * 11 + 3);
	start = now_us();
	post_send(&c, 0, RNR_LEN);
	if (!poll_one(&c, &wc, WC_TIMEOUT_MS))
		fail("the send did not complete in %d ms", WC_TIMEOUT_MS);
	took = now_us() - start;
	printf("# rnr_retry %d: the send completed with %s after %lld ms\n",
	       rnr_retry, ibv_wc_status_str(wc.status),
	       (long long)took / 1000);
	/*
	 * Until the server's answer (or the CM's timeout): the DREQ is
	 * retried only while the id lives, and the wire may lose it.
	 */
	if (rdma_disconnect(c.id))
		fail("rdma_disconnect: %s", strerror(errno));
	rdma_ack_cm_event(cm_expect(&c, RDMA_CM_EVENT_DISCONNECTED));
	if (rnr_retry == 7) {
		if (wc.status != IBV_WC_SUCCESS)
			fail("rnr_retry 7 retries for ever: the send must succeed");
	} else {
		if (wc.status != IBV_WC_RNR_RETRY_EXC_ERR)
			fail("expected IBV_WC_RNR_RETRY_EXC_ERR");
		if (took < (int64_t)rnr_retry * RNR_TIMER_US)
			fail("failed after %lld us, before %d RNR waits of %d us",
			     (long long)took, rnr_retry, RNR_TIMER_US);
	}
	printf("PASS\n");
	return 0;
}

#define STREAM_LEN 65536
#define STREAM_DEPTH 16

static int rc_sink(const char *addr, const char *port)
{
	struct conn c = { .buf_len = (size_t)STREAM_DEPTH * STREAM_LEN };
	struct rdma_conn_param cp = rc_param(7, 7);
	uint64_t got = 0;
	struct ibv_wc wc;
	uint32_t i;

	cm_listen(&c, addr, port, RDMA_PS_TCP);
	make_qp(&c, IBV_QPT_RC, STREAM_DEPTH);
	for (i = 0; i < STREAM_DEPTH; i++)
		post_recv(&c, (uint64_t)i * STREAM_LEN, STREAM_LEN);
	if (rdma_accept(c.id, &cp))
		fail("rdma_accept: %s", strerror(errno));
	rdma_ack_cm_event(cm_expect(&c, RDMA_CM_EVENT_ESTABLISHED));
	printf("# taking SENDs until this VM dies\n");
	for (;;) {
		if (!poll_one(&c, &wc, 1000))
			continue;
		if (wc.status != IBV_WC_SUCCESS)
			fail("receive %llu: %s", (unsigned long long)got,
			     ibv_wc_status_str(wc.status));
		got++;
		post_recv(&c, wc.wr_id, STREAM_LEN);
	}
}

static int rc_stream(const char *addr, const char *port, int timeout,
		     int retry_cnt)
{
	struct conn c = { .buf_len = STREAM_LEN };
	struct rdma_conn_param cp = rc_param(retry_cnt, 7);
	uint8_t t = timeout;
	double tmo_us = 4.096 * (double)(1u << timeout);
	int64_t last_ok, now, took, lo, hi;
	uint64_t ok = 0, posted = 0;
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr qa;
	struct ibv_wc wc;

	cm_resolve(&c, addr, port, RDMA_PS_TCP);
	if (rdma_set_option(c.id, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT,
			    &t, sizeof(t)))
		fail("rdma_set_option(ACK_TIMEOUT): %s", strerror(errno));
	make_qp(&c, IBV_QPT_RC, STREAM_DEPTH);
	if (rdma_connect(c.id, &cp))
		fail("rdma_connect: %s", strerror(errno));
	rdma_ack_cm_event(cm_expect(&c, RDMA_CM_EVENT_ESTABLISHED));
	if (ibv_query_qp(c.id->qp, &qa, IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT, &ia))
		fail("ibv_query_qp: %s", strerror(errno));
	printf("# QP timeout %u, retry_cnt %u\n", qa.timeout, qa.retry_cnt);
	if (qa.timeout != timeout || qa.retry_cnt != retry_cnt)
		fail("the QP's timeout and retry_cnt are not %d and %d",
		     timeout, retry_cnt);
	last_ok = now_us();
	for (;;) {
		while (posted - ok < STREAM_DEPTH) {
			post_send(&c, 0, STREAM_LEN);
			posted++;
		}
		if (!poll_one(&c, &wc, WC_TIMEOUT_MS))
			fail("no completion for %d ms: the QP neither moved nor failed",
			     WC_TIMEOUT_MS);
		now = now_us();
		if (wc.status != IBV_WC_SUCCESS)
			break;
		last_ok = now;
		if (++ok == 64)
			printf("# streaming\n");
	}
	took = now - last_ok;
	lo = (int64_t)(retry_cnt * tmo_us);
	hi = (int64_t)(4 * (retry_cnt + 1) * tmo_us) + 2000000;
	printf("# %llu SENDs of %d bytes completed; then %s, %lld ms after the last\n",
	       (unsigned long long)ok, STREAM_LEN,
	       ibv_wc_status_str(wc.status), (long long)took / 1000);
	printf("# the bound: %lld to %lld ms (timeout %d: %.1f ms, retry_cnt %d)\n",
	       (long long)lo / 1000, (long long)hi / 1000, timeout,
	       tmo_us / 1000, retry_cnt);
	if (wc.status != IBV_WC_RETRY_EXC_ERR)
		fail("expected IBV_WC_RETRY_EXC_ERR");
	if (ok < 64)
		fail("the peer died before the stream was under way");
	if (took < lo || took > hi)
		fail("outside the bound");
	printf("PASS\n");
	/* Nothing freed: the kernel must, as the process exits. */
	return 0;
}

#if defined(HAVE_IBV_WR_FLUSH) && defined(HAVE_IBV_WR_ATOMIC_WRITE)
#define HAVE_RMW 1
/* The value of the i-th ATOMIC_WRITE of rmw-client. */
static uint64_t rmw_value(uint32_t i)
{
	return 0x0123456789abcdefull ^ ((uint64_t)i * 0x9e3779b97f4a7c15ull);
}

/* The MR's address and rkey, as the server sends them. */
struct rmw_target {
	uint64_t addr;
	uint32_t rkey;
	uint32_t pad;
};

static void expect_wc(struct conn *c, enum ibv_wc_opcode opcode,
		      uint64_t wr_id, const char *what)
{
	struct ibv_wc wc;

	if (!poll_one(c, &wc, WC_TIMEOUT_MS))
		fail("%s %llu: no completion", what,
		     (unsigned long long)wr_id);
	if (wc.status != IBV_WC_SUCCESS || wc.opcode != opcode ||
	    wc.wr_id != wr_id)
		fail("%s %llu: %s, opcode %d, wr_id %llu", what,
		     (unsigned long long)wr_id, ibv_wc_status_str(wc.status),
		     wc.opcode, (unsigned long long)wc.wr_id);
}

static int rmw_server(const char *addr, const char *port, uint32_t count)
{
	struct conn c = { .buf_len = 4096 };
	struct rdma_conn_param cp = rc_param(7, 7);
	struct ibv_qp_attr attr = {
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_READ |
				   IBV_ACCESS_REMOTE_ATOMIC |
				   IBV_ACCESS_FLUSH_GLOBAL,
	};
	struct rmw_target t;
	uint64_t *target, last;
	struct ibv_mr *mr;
	struct ibv_wc wc;

	cm_listen(&c, addr, port, RDMA_PS_TCP);
	make_qp(&c, IBV_QPT_RC, 4);
	target = aligned_alloc(4096, 4096);
	if (!target)
		fail("out of memory");
	*target = 0;
	mr = ibv_reg_mr(c.pd, target, 4096, IBV_ACCESS_LOCAL_WRITE |
			IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC |
			IBV_ACCESS_FLUSH_GLOBAL);
	if (!mr)
		fail("ibv_reg_mr(FLUSH_GLOBAL): %s", strerror(errno));
	post_recv(&c, 0, 8);
	if (rdma_accept(c.id, &cp))
		fail("rdma_accept: %s", strerror(errno));
	rdma_ack_cm_event(cm_expect(&c, RDMA_CM_EVENT_ESTABLISHED));
	/* rdma_cm grants no FLUSH: the QP gets it before the client may. */
	if (ibv_modify_qp(c.id->qp, &attr, IBV_QP_ACCESS_FLAGS))
		fail("ibv_modify_qp(qp_access_flags): %s", strerror(errno));
	t = (struct rmw_target){ .addr = (uintptr_t)target, .rkey = mr->rkey };
	memcpy(c.buf + 64, &t, sizeof(t));
	post_send(&c, 64, sizeof(t));
	expect_wc(&c, IBV_WC_SEND, 64, "the target's SEND");
	if (!poll_one(&c, &wc, WC_TIMEOUT_MS))
		fail("the client's last value never came");
	if (wc.status != IBV_WC_SUCCESS || wc.byte_len != 8)
		fail("receive: %s, %u bytes", ibv_wc_status_str(wc.status),
		     wc.byte_len);
	memcpy(&last, c.buf, 8);
	if (last != rmw_value(count - 1) || *target != last)
		fail("the target holds 0x%016llx, the client's last value was "
		     "0x%016llx, the %u-th 0x%016llx",
		     (unsigned long long)*target, (unsigned long long)last,
		     count, (unsigned long long)rmw_value(count - 1));
	printf("# %u ATOMIC_WRITEs and FLUSHes taken; the target holds the "
	       "last value\n", count);
	rdma_ack_cm_event(cm_expect(&c, RDMA_CM_EVENT_DISCONNECTED));
	printf("PASS\n");
	return 0;
}

static int rmw_client(const char *addr, const char *port, uint32_t count,
		      bool flush)
{
	struct conn c = { .buf_len = 4096 };
	struct rdma_conn_param cp = rc_param(7, 7);
	struct ibv_qp_init_attr_ex qa = {
		.qp_type = IBV_QPT_RC,
		.cap = {
			.max_send_wr = 4,
			.max_recv_wr = 4,
			.max_send_sge = 1,
			.max_recv_sge = 1,
		},
		.comp_mask = IBV_QP_INIT_ATTR_PD |
			     IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.send_ops_flags = IBV_QP_EX_WITH_ATOMIC_WRITE |
				  IBV_QP_EX_WITH_FLUSH | IBV_QP_EX_WITH_SEND,
	};
	struct rmw_target t;
	struct ibv_qp_ex *qpx;
	struct ibv_wc wc;
	uint64_t value;
	uint32_t i;

	cm_resolve(&c, addr, port, RDMA_PS_TCP);
	c.pd = ibv_alloc_pd(c.id->verbs);
	c.cq = c.pd ? ibv_create_cq(c.id->verbs, 8, NULL, NULL, 0) : NULL;
	c.buf = calloc(1, c.buf_len);
	if (!c.cq || !c.buf)
		fail("ibv_alloc_pd, ibv_create_cq");
	c.mr = ibv_reg_mr(c.pd, c.buf, c.buf_len, IBV_ACCESS_LOCAL_WRITE);
	if (!c.mr)
		fail("ibv_reg_mr: %s", strerror(errno));
	qa.pd = c.pd;
	qa.send_cq = c.cq;
	qa.recv_cq = c.cq;
	if (rdma_create_qp_ex(c.id, &qa))
		fail("rdma_create_qp_ex(ATOMIC_WRITE, FLUSH): %s",
		     strerror(errno));
	qpx = ibv_qp_to_qp_ex(c.id->qp);
	post_recv(&c, 0, sizeof(t));
	if (rdma_connect(c.id, &cp))
		fail("rdma_connect: %s", strerror(errno));
	rdma_ack_cm_event(cm_expect(&c, RDMA_CM_EVENT_ESTABLISHED));
	if (!poll_one(&c, &wc, WC_TIMEOUT_MS) || wc.status != IBV_WC_SUCCESS ||
	    wc.byte_len != sizeof(t))
		fail("the server's target never came");
	memcpy(&t, c.buf, sizeof(t));
	for (i = 0; i < count; i++) {
		value = rmw_value(i);
		ibv_wr_start(qpx);
		qpx->wr_id = 2 * i;
		qpx->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_atomic_write(qpx, t.rkey, t.addr, &value);
		if (flush) {
			qpx->wr_id = 2 * i + 1;
			qpx->wr_flags = IBV_SEND_SIGNALED;
			ibv_wr_flush(qpx, t.rkey, t.addr, 8, IBV_FLUSH_GLOBAL,
				     IBV_FLUSH_RANGE);
		}
		if (ibv_wr_complete(qpx))
			fail("ibv_wr_complete: %s", strerror(errno));
		expect_wc(&c, IBV_WC_ATOMIC_WRITE, 2 * i, "ATOMIC_WRITE");
		if (flush)
			expect_wc(&c, IBV_WC_FLUSH, 2 * i + 1, "FLUSH");
	}
	memcpy(c.buf + 64, &value, 8);
	ibv_wr_start(qpx);
	qpx->wr_id = 64;
	qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(qpx);
	ibv_wr_set_sge(qpx, c.mr->lkey, (uintptr_t)c.buf + 64, 8);
	if (ibv_wr_complete(qpx))
		fail("ibv_wr_complete: %s", strerror(errno));
	expect_wc(&c, IBV_WC_SEND, 64, "the last value's SEND");
	printf("# %u ATOMIC_WRITEs%s completed\n", count,
	       flush ? " and FLUSHes" : "");
	rdma_disconnect(c.id);
	printf("PASS\n");
	return 0;
}
#endif

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if ((argc == 6 || argc == 7) && !strncmp(argv[1], "ud-", 3) &&
	    (atoi(argv[4]) < 1 || atoi(argv[5]) < 8))
		fail("COUNT must be 1 or more, SIZE 8 or more");
	if (argc == 6 && !strcmp(argv[1], "ud-recv"))
		return ud_recv(argv[2], argv[3], atoi(argv[4]), atoi(argv[5]),
			       -1);
	if (argc == 7 && !strcmp(argv[1], "ud-recv") &&
	    atoi(argv[6]) >= 0 && atoi(argv[6]) < 4095)
		return ud_recv(argv[2], argv[3], atoi(argv[4]), atoi(argv[5]),
			       atoi(argv[6]));
	if (argc == 6 && !strcmp(argv[1], "ud-send"))
		return ud_send(argv[2], argv[3], atoi(argv[4]), atoi(argv[5]));
	if (argc == 7 && !strncmp(argv[1], "mcast-", 6) &&
	    (atoi(argv[4]) < 1 || atoi(argv[5]) < 8 || atoi(argv[6]) < 0))
		fail("COUNT must be 1 or more, SIZE 8 or more");
	if (argc == 7 && !strcmp(argv[1], "mcast-recv") &&
	    atoi(argv[6]) <= 100)
		return mcast_recv(argv[2], argv[3], atoi(argv[4]),
				  atoi(argv[5]), atoi(argv[6]));
	if (argc == 7 && !strcmp(argv[1], "mcast-send"))
		return mcast_send(argv[2], argv[3], atoi(argv[4]),
				  atoi(argv[5]), atoi(argv[6]));
	if (argc == 6 && !strcmp(argv[1], "rnr-server"))
		return rnr_server(argv[2], argv[3], atoi(argv[4]),
				  atoi(argv[5]));
	if (argc == 5 && !strcmp(argv[1], "rnr-client"))
		return rnr_client(argv[2], argv[3], atoi(argv[4]));
	if (argc == 4 && !strcmp(argv[1], "rc-sink"))
		return rc_sink(argv[2], argv[3]);
	if (argc == 6 && !strcmp(argv[1], "rc-stream"))
		return rc_stream(argv[2], argv[3], atoi(argv[4]),
				 atoi(argv[5]));
#ifdef HAVE_RMW
	if (argc >= 5 && !strncmp(argv[1], "rmw-", 4) && atoi(argv[4]) < 1)
		fail("COUNT must be 1 or more");
	if (argc == 5 && !strcmp(argv[1], "rmw-server"))
		return rmw_server(argv[2], argv[3], atoi(argv[4]));
	if (argc == 6 && !strcmp(argv[1], "rmw-client") &&
	    (!strcmp(argv[5], "flush") || !strcmp(argv[5], "no-flush")))
		return rmw_client(argv[2], argv[3], atoi(argv[4]),
				  !strcmp(argv[5], "flush"));
#else
	if (argc >= 2 && !strncmp(argv[1], "rmw-", 4)) {
		printf("SKIP: this rdma-core has no ATOMIC_WRITE and FLUSH verbs\n");
		return 77;
	}
#endif
	fprintf(stderr,
		"usage: %s ud-recv ADDR PORT COUNT SIZE [VLAN]\n"
		"       %s ud-send ADDR PORT COUNT SIZE\n"
		"       %s mcast-recv ADDR GROUP COUNT SIZE MIN_PERCENT\n"
		"       %s mcast-send ADDR GROUP COUNT SIZE PACE_US\n"
		"       %s rnr-server ADDR PORT RNR_RETRY DELAY_MS\n"
		"       %s rnr-client ADDR PORT RNR_RETRY\n"
		"       %s rc-sink ADDR PORT\n"
		"       %s rc-stream ADDR PORT TIMEOUT RETRY_CNT\n"
		"       %s rmw-server ADDR PORT COUNT\n"
		"       %s rmw-client ADDR PORT COUNT flush|no-flush\n",
		argv[0], argv[0], argv[0], argv[0], argv[0], argv[0], argv[0],
		argv[0], argv[0], argv[0]);
	return 2;
}
