// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * How fast a device creates and destroys QPs and registers and
 * deregisters MRs, and whether that rate holds as their number grows: for
 * make bench's scale part, on qrdma and on rxe in one guest.
 *
 *   verbs-rates DEVICE qp|mr COUNT
 *
 * creates COUNT RC QPs (each on the one CQ, moved to INIT, as a ULP's
 * would be before it connects) or registers COUNT MRs (a 4 KiB buffer of
 * their own each), then destroys or deregisters them all, newest first.
 * The rates it prints are of the last WINDOW creations (COUNT - WINDOW
 * already there) and of the first WINDOW destructions (COUNT - 1 still
 * there), so that a run with a large COUNT gives the rate at that count
 * and one with COUNT = WINDOW the rate from nothing:
 *
 *   create RATE ops/s
 *   destroy RATE ops/s
 *
 * Exits 1, saying why, if a verb fails.  Built on the host against
 * rdma-core by scripts/build-provider and run in the guest by
 * tests/vm/bench-perftest.sh.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <infiniband/verbs.h>

#define WINDOW		100
#define MR_LEN		4096
#define COUNT_MAX	100000

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void __attribute__((noreturn)) die(const char *what, long i)
{
	fprintf(stderr, "verbs-rates: %s (object %ld): %s\n", what, i,
		strerror(errno));
	exit(1);
}

static struct ibv_context *open_device(const char *name)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx = NULL;
	int i;

	for (i = 0; list && list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			ctx = ibv_open_device(list[i]);
	if (list)
		ibv_free_device_list(list);
	if (!ctx) {
		fprintf(stderr, "verbs-rates: cannot open device %s\n", name);
		exit(1);
	}
	return ctx;
}

/* Rate of n operations that took ns nanoseconds. */
static double rate(long n, int64_t ns)
{
	return ns > 0 ? n * 1e9 / ns : 0;
}

static void report(long n, int64_t create_ns, int64_t destroy_ns)
{
	printf("create %.0f ops/s\n", rate(n, create_ns));
	printf("destroy %.0f ops/s\n", rate(n, destroy_ns));
}

static void qps(struct ibv_context *ctx, struct ibv_pd *pd, long count)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	struct ibv_qp **qp = calloc(count, sizeof(*qp));
	struct ibv_qp_init_attr init = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp_attr attr = {
		.qp_state = IBV_QPS_INIT,
		.port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE,
	};
	int64_t t0 = 0, create_ns, destroy_ns = 0;
	long i;

	if (!cq || !qp)
		die("ibv_create_cq", 0);
	init.send_cq = init.recv_cq = cq;
	for (i = 0; i < count; i++) {
		if (i == count - WINDOW)
			t0 = now_ns();
		qp[i] = ibv_create_qp(pd, &init);
		if (!qp[i])
			die("ibv_create_qp", i);
		if (ibv_modify_qp(qp[i], &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
				  IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
			die("ibv_modify_qp to INIT", i);
	}
	create_ns = now_ns() - t0;
	for (i = count - 1; i >= 0; i--) {
		if (i == count - 1)
			t0 = now_ns();
		if (ibv_destroy_qp(qp[i]))
			die("ibv_destroy_qp", i);
		if (i == count - WINDOW)
			destroy_ns = now_ns() - t0;
	}
	report(WINDOW, create_ns, destroy_ns);
	free(qp);
	ibv_destroy_cq(cq);
}

static void mrs(struct ibv_pd *pd, long count)
{
	struct ibv_mr **mr = calloc(count, sizeof(*mr));
	uint8_t *buf = aligned_alloc(MR_LEN, (size_t)count * MR_LEN);
	int64_t t0 = 0, create_ns, destroy_ns = 0;
	long i;

	if (!mr || !buf)
		die("out of memory", 0);
	memset(buf, 0, (size_t)count * MR_LEN);
	for (i = 0; i < count; i++) {
		if (i == count - WINDOW)
			t0 = now_ns();
		mr[i] = ibv_reg_mr(pd, buf + (size_t)i * MR_LEN, MR_LEN,
				   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
		if (!mr[i])
			die("ibv_reg_mr", i);
	}
	create_ns = now_ns() - t0;
	for (i = count - 1; i >= 0; i--) {
		if (i == count - 1)
			t0 = now_ns();
		if (ibv_dereg_mr(mr[i]))
			die("ibv_dereg_mr", i);
		if (i == count - WINDOW)
			destroy_ns = now_ns() - t0;
	}
	report(WINDOW, create_ns, destroy_ns);
	free(mr);
	free(buf);
}

int main(int argc, char **argv)
{
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	long count;

	if (argc != 4 || (strcmp(argv[2], "qp") && strcmp(argv[2], "mr"))) {
		fprintf(stderr, "usage: %s DEVICE qp|mr COUNT\n", argv[0]);
		return 2;
	}
	count = strtol(argv[3], NULL, 10);
	if (count < WINDOW || count > COUNT_MAX) {
		fprintf(stderr, "verbs-rates: COUNT from %d to %d\n", WINDOW,
			COUNT_MAX);
		return 2;
	}
	ctx = open_device(argv[1]);
	pd = ibv_alloc_pd(ctx);
	if (!pd)
		die("ibv_alloc_pd", 0);
	if (!strcmp(argv[2], "qp"))
		qps(ctx, pd, count);
	else
		mrs(pd, count);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	return 0;
}
