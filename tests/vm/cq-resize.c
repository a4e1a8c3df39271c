// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * ibv_resize_cq while other threads use the CQ, on qrdma.
 *
 * The resize command may take as long as the kernel's command timeout, so
 * the provider must not hold the CQ's spinlock across it: a poller would
 * spin for as long.  To hold a resize inside the kernel for as long as the
 * test wants, the new ring the provider maps is registered with
 * userfaultfd (this program interposes mmap() for the provider): the
 * kernel's pinning of the ring faults, and the fault waits for this
 * program to fill the page.  Meanwhile it checks that
 *
 *   - a poller of the CQ sleeps rather than spins, and consumes nothing;
 *   - moving a QP to RESET waits too;
 *
 * and, once the resize is let go, that the poller gets the completions
 * that were in the CQ before, in order, and that the QP reset removed its
 * completions from the resized CQ.  An RC QP talks to itself over the
 * port's IPv4-mapped RoCE v2 GID.
 *
 *   cq-resize DEVICE GID_INDEX   prints KTAP (kselftest.h), exits 1 on any
 *                                failure
 *
 * Built on the host against rdma-core 56.1, with the guest kernel's
 * kselftest.h, by scripts/build-provider (with its mmap exported to the
 * provider) and run in the guest by
 * tests/vm/verbs-lifecycle.sh.  Needs userfaultfd for kernel faults: root.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <infiniband/verbs.h>
#include "kselftest.h"

#define NWRITES 4
/* The resized CQ: 2^8 CQEs of 32 bytes, two pages of ring. */
#define NEW_CQE 200

/* What the test reports, in that order: the plan is their number. */
enum result {
	SETUP,
	HELD,
	POLLER_ASLEEP,
	RESIZE_RETURNS,
	COMPLETIONS_KEPT,
	NEW_SIZE,
	RESET_WAITS,
	RESET_REMOVES,
	QP_WORKS,
};

static const char *const result_what[] = {
	[SETUP] = "resize: an RC QP connected to itself, a userfaultfd",
	[HELD] = "resize: ibv_resize_cq is held in the kernel, pinning its new ring",
	[POLLER_ASLEEP] = "resize: a poller waits for the resize asleep, not spinning",
	[RESIZE_RETURNS] = "resize: ibv_resize_cq returns 0 once its ring is there",
	[COMPLETIONS_KEPT] = "resize: the completions from before it come after it, in order, once",
	[NEW_SIZE] = "resize: the CQ has the new size",
	[RESET_WAITS] = "resize: moving a QP of the CQ to RESET waits for the resize",
	[RESET_REMOVES] = "resize: the reset QP's completions are gone from the resized CQ",
	[QP_WORKS] = "resize: the QP, reconnected, completes on the resized CQ",
};

static void check(enum result which, bool ok)
{
	ksft_test_result(ok, "%s\n", result_what[which]);
}

/* ---- The provider's next anonymous mapping, on a userfaultfd ---- */

static int uffd = -1;
static atomic_bool uffd_armed;
static void *uffd_addr;
static size_t uffd_len;

/* Interposed on the provider (and everyone else): see the head comment. */
void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	void *p = (void *)syscall(SYS_mmap, addr, len, prot, flags, fd, off);
	struct uffdio_register reg = {
		.range = { .start = (uintptr_t)p, .len = len },
		.mode = UFFDIO_REGISTER_MODE_MISSING,
	};

	if (p == MAP_FAILED || !(flags & MAP_ANONYMOUS) ||
	    !atomic_exchange(&uffd_armed, false))
		return p;
	if (ioctl(uffd, UFFDIO_REGISTER, &reg))
		printf("# UFFDIO_REGISTER: %s\n", strerror(errno));
	else
		uffd_addr = p, uffd_len = len;
	return p;
}

static bool uffd_open(void)
{
	struct uffdio_api api = { .api = UFFD_API };

	/* Faults of the kernel too (no UFFD_USER_MODE_ONLY): needs root. */
	uffd = syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (uffd < 0 || ioctl(uffd, UFFDIO_API, &api)) {
		printf("# userfaultfd: %s\n", strerror(errno));
		return false;
	}
	return true;
}

/* Wait up to ms for a fault; its page address, or 0. */
static uint64_t uffd_wait(int ms)
{
	struct pollfd pfd = { .fd = uffd, .events = POLLIN };
	struct uffd_msg msg;

	if (poll(&pfd, 1, ms) != 1 || read(uffd, &msg, sizeof(msg)) !=
	    sizeof(msg) || msg.event != UFFD_EVENT_PAGEFAULT)
		return 0;
	return msg.arg.pagefault.address & ~(uint64_t)(getpagesize() - 1);
}

/* Fill the page at addr with zeroes and wake who faulted on it. */
static void uffd_fill(uint64_t addr)
{
	static char zero[65536] __attribute__((aligned(65536)));
	struct uffdio_copy copy = {
		.dst = addr, .src = (uintptr_t)zero, .len = getpagesize(),
	};

	if (ioctl(uffd, UFFDIO_COPY, &copy) && errno != EEXIST)
		printf("# UFFDIO_COPY at %#llx: %s\n",
		       (unsigned long long)addr, strerror(errno));
}

/* ---- An RC QP connected to itself ---- */

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_mr *mr;
static struct ibv_cq *cq;
static struct ibv_qp *qp;
static int gid_index;
static char buf[8192] __attribute__((aligned(4096)));

static int connect_self(void)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.port_num = 1,
		.qp_access_flags = IBV_ACCESS_LOCAL_WRITE |
				   IBV_ACCESS_REMOTE_WRITE,
	};
	union ibv_gid gid;

	if (ibv_query_gid(ctx, 1, gid_index, &gid) ||
	    ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			  IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = qp->qp_num;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 1;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = gid;
	a.ah_attr.grh.sgid_index = gid_index;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN |
			     IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			     IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
}

static int to_state(enum ibv_qp_state st)
{
	struct ibv_qp_attr a = { .qp_state = st };

	return ibv_modify_qp(qp, &a, IBV_QP_STATE);
}

/* Signaled RDMA WRITEs of 64 bytes to itself, wr_ids first, first + 1... */
static int post_writes(uint64_t first, int k)
{
	struct ibv_sge sge = { (uintptr_t)buf, 64, 0 };
	struct ibv_send_wr wr = {
		.sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;
	int i;

	sge.lkey = mr->lkey;
	wr.wr.rdma.remote_addr = (uintptr_t)buf + 4096;
	wr.wr.rdma.rkey = mr->rkey;
	for (i = 0; i < k; i++) {
		wr.wr_id = first + i;
		if (ibv_post_send(qp, &wr, &bad))
			return -1;
	}
	return 0;
}

static long ms_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Up to want completions within ms; how many came. */
static int pollw(struct ibv_wc *wc, int want, int ms)
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

static bool in_order(const struct ibv_wc *wc, int k, uint64_t first)
{
	int i;

	for (i = 0; i < k; i++)
		if (wc[i].status != IBV_WC_SUCCESS ||
		    wc[i].wr_id != first + i)
			return false;
	return true;
}

/* ---- Threads: the resize, a poller, a QP reset ---- */

struct job {
	pthread_t thread;
	atomic_bool done;
	int ret;
	struct ibv_wc wc[NWRITES];
};

static void *resize_job(void *arg)
{
	struct job *j = arg;

	atomic_store(&uffd_armed, true);
	j->ret = ibv_resize_cq(cq, NEW_CQE);
	atomic_store(&j->done, true);
	return NULL;
}

static void *poll_job(void *arg)
{
	struct job *j = arg;

	j->ret = ibv_poll_cq(cq, NWRITES, j->wc);
	atomic_store(&j->done, true);
	return NULL;
}

static void *reset_job(void *arg)
{
	struct job *j = arg;

	j->ret = to_state(IBV_QPS_RESET);
	atomic_store(&j->done, true);
	return NULL;
}

/* CPU time of a thread in ms. */
static long cpu_ms(pthread_t t)
{
	struct timespec ts;
	clockid_t id;

	if (pthread_getcpuclockid(t, &id) || clock_gettime(id, &ts))
		return -1;
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * Start a resize and wait until it is held in the kernel on its new
 * ring's first page; that page's address, or 0.
 */
static uint64_t resize_held(struct job *r)
{
	uint64_t page;

	memset(r, 0, sizeof(*r));
	pthread_create(&r->thread, NULL, resize_job, r);
	page = uffd_wait(5000);
	if (!page)
		printf("# the resize did not fault on its ring (done %d, ret %d)\n",
		       atomic_load(&r->done), r->ret);
	return page;
}

/* Let the resize go: fill each page it faults on until it returns. */
static int resize_release(struct job *r, uint64_t page)
{
	long end = ms_now() + 30000;

	while (page) {
		uffd_fill(page);
		page = 0;
		while (!atomic_load(&r->done) && !page && ms_now() < end)
			page = uffd_wait(100);
	}
	pthread_join(r->thread, NULL);
	return r->ret;
}

int main(int argc, char **argv)
{
	const char *name = argc > 1 ? argv[1] : "qrdma0";
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_qp_init_attr init = {
		.cap = { .max_send_wr = 16, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	struct job r, p, s;
	struct ibv_wc wc[NWRITES];
	uint64_t page;
	long cpu0, cpu1;
	bool waited = false;
	int i, k;

	ksft_print_header();
	ksft_set_plan(ARRAY_SIZE(result_what));
	gid_index = argc > 2 ? atoi(argv[2]) : 0;
	for (i = 0; list && list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			ctx = ibv_open_device(list[i]);
	pd = ctx ? ibv_alloc_pd(ctx) : NULL;
	mr = pd ? ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE |
			     IBV_ACCESS_REMOTE_WRITE) : NULL;
	cq = ctx ? ibv_create_cq(ctx, 16, NULL, NULL, 0) : NULL;
	init.send_cq = init.recv_cq = cq;
	qp = cq && pd ? ibv_create_qp(pd, &init) : NULL;
	if (!qp || connect_self() || !uffd_open()) {
		ksft_print_msg("setup: %s\n", strerror(errno));
		check(SETUP, false);
		ksft_exit_fail();
	}
	check(SETUP, true);

	/* Completions in the CQ, not polled, when the resize starts. */
	k = post_writes(1, NWRITES) ? -1 : 0;
	usleep(200000);
	page = k ? 0 : resize_held(&r);
	if (!page && atomic_load(&r.done) && r.ret == EFAULT) {
		/*
		 * On some kernels (Linux 6.1; 6.12 and 7.3 wait) pinning a
		 * page that userfaultfd has to fill fails with EFAULT
		 * instead of waiting for it: no resize can be held in the
		 * kernel, so what the others do meanwhile is not seen.
		 */
		for (i = HELD; i < (int)ARRAY_SIZE(result_what); i++)
			ksft_test_result_skip("%s: this kernel's page pinning fails on a userfaultfd page (EFAULT) instead of waiting\n",
					      result_what[i]);
		ksft_finished();
	}
	check(HELD, page && !atomic_load(&r.done));
	if (!page) {
		/* Nothing else can be tested: let it finish if it can. */
		pthread_join(r.thread, NULL);
		ksft_exit_fail();
	}

	memset(&p, 0, sizeof(p));
	pthread_create(&p.thread, NULL, poll_job, &p);
	usleep(100000);
	cpu0 = cpu_ms(p.thread);
	usleep(500000);
	cpu1 = cpu_ms(p.thread);
	waited = !atomic_load(&p.done);
	printf("# poller: done %d, %ld ms of CPU in 500 ms\n", !waited,
	       cpu1 - cpu0);
	check(POLLER_ASLEEP, waited && cpu0 >= 0 && cpu1 - cpu0 < 100);

	k = resize_release(&r, page);
	check(RESIZE_RETURNS, k == 0);
	pthread_join(p.thread, NULL);
	k = p.ret > 0 ? p.ret : 0;
	k += pollw(wc + k, NWRITES - k, 2000);
	memcpy(wc, p.wc, sizeof(*wc) * (p.ret > 0 ? p.ret : 0));
	printf("# %d completions after the resize, %d from the waiting poll\n",
	       k, p.ret);
	check(COMPLETIONS_KEPT, k == NWRITES && in_order(wc, k, 1));
	check(NEW_SIZE, cq->cqe >= NEW_CQE);

	/* The QP's completions, then a QP reset while a resize is held. */
	k = post_writes(11, NWRITES) ? -1 : 0;
	usleep(200000);
	page = k ? 0 : resize_held(&r);
	memset(&s, 0, sizeof(s));
	if (page) {
		pthread_create(&s.thread, NULL, reset_job, &s);
		usleep(500000);
		waited = !atomic_load(&s.done);
		k = resize_release(&r, page);
		pthread_join(s.thread, NULL);
	}
	printf("# reset waited %d, returned %d; resize %d\n", waited, s.ret,
	       k);
	check(RESET_WAITS, page && waited && s.ret == 0 && k == 0);
	k = pollw(wc, NWRITES, 300);
	check(RESET_REMOVES, k == 0);

	/* The QP works on the resized CQ. */
	k = connect_self() || post_writes(21, NWRITES) ? -1 :
	    pollw(wc, NWRITES, 2000);
	check(QP_WORKS, k == NWRITES && in_order(wc, k, 21));

	ibv_destroy_qp(qp);
	ibv_destroy_cq(cq);
	ibv_dereg_mr(mr);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	close(uffd);
	ksft_finished();
}
