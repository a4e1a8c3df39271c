// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * qrdma-uverbs-abi: the driver's user verbs ABI (guest-driver/qrdma-abi.h)
 * as a provider would use it, and as a hostile program would, through the
 * plain uverbs write() interface: there is no provider yet, and without
 * one libibverbs ignores the device.  Runs in the guest as root with
 * qrdma.ko loaded; prints KTAP (kselftest.h) and exits 1 on any failure.
 * Built static on the host, with the guest kernel's kselftest.h, by
 * scripts/build-driver, and run by tests/vm/driver-load.sh.
 *
 * Checks: the ucontext answer, the doorbell page mapping, that malformed
 * commands get an errno, S2 (real caps, no truncation), S3 (SRQ only with
 * RC and UD), S4 (a QP on an SRQ has no receive queue of its own), S20 (a
 * CQ in use gives EBUSY) and S40 (state table).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <rdma/ib_user_verbs.h>

#include "../../guest-driver/qrdma-abi.h"
/* QP types, states and attribute bits: the IB verbs values. */
#include "../../hw-rdma/qrdma-hw.h"
#include "kselftest.h"

#define PAGE 4096

static void check(bool ok, const char *what)
{
	ksft_test_result(ok, "%s\n", what);
}

/* Check that a call failed with errno @want. */
static void check_errno(int ret, int want, const char *what)
{
	char buf[256];
	bool ok = ret < 0 && errno == want;

	snprintf(buf, sizeof(buf), "%s: %s (want %s)", what,
		 ret < 0 ? strerror(errno) : "succeeded", strerror(want));
	check(ok, buf);
}

/*
 * One legacy uverbs command: header, core command, driver command; the
 * response (core, then driver) goes where the command's first word says.
 */
static int uverbs_cmd(int fd, uint32_t command, void *core, size_t core_len,
		      const void *drv, size_t drv_len, size_t resp_len)
{
	struct ib_uverbs_cmd_hdr hdr = {
		.command = command,
		.in_words = (sizeof(hdr) + core_len + drv_len) / 4,
		.out_words = resp_len / 4,
	};
	char buf[1024];
	size_t len = sizeof(hdr) + core_len + drv_len;

	memcpy(buf, &hdr, sizeof(hdr));
	memcpy(buf + sizeof(hdr), core, core_len);
	if (drv_len)
		memcpy(buf + sizeof(hdr) + core_len, drv, drv_len);
	return write(fd, buf, len) == (ssize_t)len ? 0 : -1;
}

static int open_qrdma(void)
{
	struct dirent *de;
	char path[512], name[64];
	DIR *d = opendir("/sys/class/infiniband_verbs");
	int fd = -1;

	if (!d)
		return -1;
	while ((de = readdir(d))) {
		FILE *f;

		if (strncmp(de->d_name, "uverbs", 6))
			continue;
		snprintf(path, sizeof(path),
			 "/sys/class/infiniband_verbs/%s/ibdev", de->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(name, sizeof(name), f) && !strncmp(name, "qrdma", 5)) {
			snprintf(path, sizeof(path), "/dev/infiniband/%s",
				 de->d_name);
			fd = open(path, O_RDWR | O_CLOEXEC);
		}
		fclose(f);
		if (fd >= 0)
			break;
	}
	closedir(d);
	return fd;
}

static int get_context(int fd, const struct qrdma_ibv_alloc_ucontext *drv,
		       struct qrdma_ibv_alloc_ucontext_resp *uresp)
{
	struct {
		struct ib_uverbs_get_context_resp core;
		struct qrdma_ibv_alloc_ucontext_resp drv;
	} resp = {};
	struct ib_uverbs_get_context cmd = { .response = (uintptr_t)&resp };
	int ret;

	ret = uverbs_cmd(fd, IB_USER_VERBS_CMD_GET_CONTEXT, &cmd, sizeof(cmd),
			 drv, drv ? sizeof(*drv) : 0, sizeof(resp));
	if (!ret && uresp)
		*uresp = resp.drv;
	return ret;
}

static int alloc_pd(int fd, uint32_t *pd)
{
	struct ib_uverbs_alloc_pd_resp resp = {};
	struct ib_uverbs_alloc_pd cmd = { .response = (uintptr_t)&resp };
	int ret;

	ret = uverbs_cmd(fd, IB_USER_VERBS_CMD_ALLOC_PD, &cmd, sizeof(cmd),
			 NULL, 0, sizeof(resp));
	*pd = resp.pd_handle;
	return ret;
}

/* A page-aligned, zeroed ring of @bytes. */
static void *ring(size_t bytes)
{
	void *p = mmap(NULL, (bytes + PAGE - 1) & ~(size_t)(PAGE - 1),
		       PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		       -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

static int create_cq(int fd, uint32_t cqe, const void *drv, size_t drv_len,
		     uint32_t *handle, struct qrdma_ibv_create_cq_resp *dresp)
{
	struct {
		struct ib_uverbs_create_cq_resp core;
		struct qrdma_ibv_create_cq_resp drv;
	} resp = {};
	struct ib_uverbs_create_cq cmd = {
		.response = (uintptr_t)&resp,
		.cqe = cqe,
		.comp_channel = -1,
	};
	int ret;

	ret = uverbs_cmd(fd, IB_USER_VERBS_CMD_CREATE_CQ, &cmd, sizeof(cmd),
			 drv, drv_len, sizeof(resp));
	*handle = resp.core.cq_handle;
	if (dresp)
		*dresp = resp.drv;
	return ret;
}

static int destroy_cq(int fd, uint32_t handle)
{
	struct ib_uverbs_destroy_cq_resp resp;
	struct ib_uverbs_destroy_cq cmd = {
		.response = (uintptr_t)&resp,
		.cq_handle = handle,
	};

	return uverbs_cmd(fd, IB_USER_VERBS_CMD_DESTROY_CQ, &cmd, sizeof(cmd),
			  NULL, 0, sizeof(resp));
}

struct qp_req {
	uint32_t pd, cq, srq;
	uint8_t type;
	uint32_t send_wr, recv_wr, send_sge, recv_sge, inline_data;
	struct qrdma_ibv_create_qp drv;
};

static int create_qp(int fd, const struct qp_req *r, uint32_t *handle,
		     struct ib_uverbs_create_qp_resp *core,
		     struct qrdma_ibv_create_qp_resp *dresp)
{
	struct {
		struct ib_uverbs_create_qp_resp core;
		struct qrdma_ibv_create_qp_resp drv;
	} resp = {};
	struct ib_uverbs_create_qp cmd = {
		.response = (uintptr_t)&resp,
		.pd_handle = r->pd,
		.send_cq_handle = r->cq,
		.recv_cq_handle = r->cq,
		.srq_handle = r->srq,
		.max_send_wr = r->send_wr,
		.max_recv_wr = r->recv_wr,
		.max_send_sge = r->send_sge,
		.max_recv_sge = r->recv_sge,
		.max_inline_data = r->inline_data,
		.qp_type = r->type,
		.is_srq = r->srq != 0,
	};
	int ret;

	ret = uverbs_cmd(fd, IB_USER_VERBS_CMD_CREATE_QP, &cmd, sizeof(cmd),
			 &r->drv, sizeof(r->drv), sizeof(resp));
	*handle = resp.core.qp_handle;
	if (core)
		*core = resp.core;
	if (dresp)
		*dresp = resp.drv;
	return ret;
}

static int destroy_qp(int fd, uint32_t handle)
{
	struct ib_uverbs_destroy_qp_resp resp;
	struct ib_uverbs_destroy_qp cmd = {
		.response = (uintptr_t)&resp,
		.qp_handle = handle,
	};

	return uverbs_cmd(fd, IB_USER_VERBS_CMD_DESTROY_QP, &cmd, sizeof(cmd),
			  NULL, 0, sizeof(resp));
}

static int modify_qp(int fd, uint32_t handle, uint32_t mask, uint8_t state,
		     uint32_t qkey)
{
	struct ib_uverbs_modify_qp cmd = {
		.qp_handle = handle,
		.attr_mask = mask,
		.qp_state = state,
		.port_num = 1,
		.qkey = qkey,
	};

	return uverbs_cmd(fd, IB_USER_VERBS_CMD_MODIFY_QP, &cmd, sizeof(cmd),
			  NULL, 0, 0);
}

static int create_srq(int fd, uint32_t pd, uint32_t max_wr,
		      const struct qrdma_ibv_create_srq *drv, uint32_t *handle)
{
	struct {
		struct ib_uverbs_create_srq_resp core;
		struct qrdma_ibv_create_srq_resp drv;
	} resp = {};
	struct ib_uverbs_create_srq cmd = {
		.response = (uintptr_t)&resp,
		.pd_handle = pd,
		.max_wr = max_wr,
		.max_sge = 1,
	};
	int ret;

	ret = uverbs_cmd(fd, IB_USER_VERBS_CMD_CREATE_SRQ, &cmd, sizeof(cmd),
			 drv, sizeof(*drv), sizeof(resp));
	*handle = resp.core.srq_handle;
	return ret;
}

/*
 * The objects a step makes for the steps after it; have says which exist,
 * so that a step whose objects an earlier one failed to make is skipped
 * rather than failing for that earlier step.
 */
enum {
	HAVE_CTX = 1 << 0,
	HAVE_PD = 1 << 1,
	HAVE_CQ = 1 << 2,
	HAVE_QP = 1 << 3,
	HAVE_UD_QP = 1 << 4,
};

static const char *const have_names[] = {
	"ucontext", "PD", "CQ", "RC QP", "UD QP",
};

struct abi {
	int fd;
	unsigned int have;
	struct qrdma_ibv_alloc_ucontext_resp uresp;
	void *db;
	uint32_t pd, cq, qp, ud_qp;
	struct qrdma_ibv_create_cq_resp cq_resp;
	void *sq_ring, *rq_ring;
};

/* The RC QP the QP checks start from, and S3/S4 too: one set of rings. */
static void qp_request(struct abi *s, struct qp_req *req)
{
	if (!s->sq_ring) {
		s->sq_ring = ring(16 * 256);
		s->rq_ring = ring(16 * 128);
	}
	memset(req, 0, sizeof(*req));
	req->pd = s->pd;
	req->cq = s->cq;
	req->type = QRDMA_QPT_RC;
	req->send_wr = 10;
	req->recv_wr = 10;
	req->send_sge = 2;
	req->recv_sge = 2;
	req->inline_data = 64;
	req->drv.sq_entries = 16;
	req->drv.rq_entries = 16;
	req->drv.sq_ring_va = (uintptr_t)s->sq_ring;
	req->drv.rq_ring_va = (uintptr_t)s->rq_ring;
}

/* A context: comp_mask must be 0; the answer describes the device. */
static void test_ucontext(struct abi *s)
{
	struct qrdma_ibv_alloc_ucontext bad_ctx = { .comp_mask = 1 };
	struct qrdma_ibv_alloc_ucontext good_ctx = {};
	struct qrdma_ibv_alloc_ucontext_resp *u = &s->uresp;
	int fd2;
	bool ok;

	fd2 = open_qrdma();
	check_errno(get_context(fd2, &bad_ctx, NULL), EOPNOTSUPP,
		    "alloc_ucontext with an unknown comp_mask");
	close(fd2);
	ok = !get_context(s->fd, &good_ctx, u);
	check(ok, "alloc_ucontext");
	if (ok)
		s->have |= HAVE_CTX;
	check(u->sq_wqe_size == 256 && u->rq_wqe_size == 128 &&
	      u->cqe_size == 32 && u->ring_page_size == PAGE &&
	      u->max_send_sge == 12 && u->max_recv_sge == 7 &&
	      u->max_inline_data == 192 && u->max_qp_wr &&
	      u->max_cqe && u->db_page_size == PAGE,
	      "the ucontext answer holds the WQE/CQE sizes and limits");
}

/* The doorbell page maps write-only at its key; nothing else does. */
static void test_doorbell_mmap(struct abi *s)
{
	s->db = mmap(NULL, s->uresp.db_page_size, PROT_WRITE, MAP_SHARED,
		     s->fd, s->uresp.db_mmap_key);
	check(s->db != MAP_FAILED, "mmap of the doorbell page");
	check(mmap(NULL, PAGE, PROT_WRITE, MAP_SHARED, s->fd,
		   s->uresp.db_mmap_key + PAGE) == MAP_FAILED && errno == EINVAL,
	      "mmap at an offset that is no key fails with EINVAL");
	check(mmap(NULL, 2 * PAGE, PROT_WRITE, MAP_SHARED, s->fd,
		   s->uresp.db_mmap_key) == MAP_FAILED,
	      "mmap of two pages at the doorbell key fails");
}

static void test_pd(struct abi *s)
{
	bool ok = !alloc_pd(s->fd, &s->pd);

	check(ok, "alloc_pd");
	if (ok)
		s->have |= HAVE_PD;
}

/* CQs: every malformed command gets an errno. */
static void test_cq_commands(struct abi *s)
{
	struct qrdma_ibv_create_cq cqd = { .entries = 64 };
	char big[sizeof(cqd) + 8] = {};
	uint32_t *ci = ring(PAGE);
	void *cq_ring = ring(64 * 32);
	uint32_t cq;
	bool ok;

	cqd.ring_va = (uintptr_t)cq_ring;
	cqd.ci_va = (uintptr_t)ci;
	check_errno(create_cq(s->fd, 64, &cqd, 8, &cq, NULL), EINVAL,
		    "create_cq with a short driver command");
	cqd.comp_mask = ~(uint32_t)QRDMA_CREATE_CQ_VLAN;
	check_errno(create_cq(s->fd, 64, &cqd, sizeof(cqd), &cq, NULL),
		    EOPNOTSUPP, "create_cq with an unknown comp_mask");
	cqd.comp_mask = 0;
	cqd.entries = 48;
	check_errno(create_cq(s->fd, 48, &cqd, sizeof(cqd), &cq, NULL), EINVAL,
		    "create_cq with a ring that is not a power of two");
	cqd.entries = 32;
	check_errno(create_cq(s->fd, 64, &cqd, sizeof(cqd), &cq, NULL), EINVAL,
		    "create_cq with a ring smaller than the CQ");
	cqd.entries = 64;
	cqd.ring_va = (uintptr_t)cq_ring + 64;
	check_errno(create_cq(s->fd, 64, &cqd, sizeof(cqd), &cq, NULL), EINVAL,
		    "create_cq with a misaligned ring");
	cqd.ring_va = 0x1000;
	check_errno(create_cq(s->fd, 64, &cqd, sizeof(cqd), &cq, NULL), EFAULT,
		    "create_cq with a ring at an unmapped address");
	cqd.ring_va = (uintptr_t)cq_ring;
	cqd.ci_va = 0;
	check_errno(create_cq(s->fd, 64, &cqd, sizeof(cqd), &cq, NULL), EINVAL,
		    "create_cq without a consumer index record");
	cqd.ci_va = (uintptr_t)ci + 2;
	check_errno(create_cq(s->fd, 64, &cqd, sizeof(cqd), &cq, NULL), EINVAL,
		    "create_cq with a misaligned consumer index record");
	cqd.ci_va = (uintptr_t)ci;

	memcpy(big, &cqd, sizeof(cqd));
	big[sizeof(cqd) + 3] = 1;
	check_errno(create_cq(s->fd, 64, big, sizeof(big), &cq, NULL),
		    EOPNOTSUPP, "create_cq with unknown trailing bytes set");
	big[sizeof(cqd) + 3] = 0;
	ok = !create_cq(s->fd, 64, big, sizeof(big), &s->cq, &s->cq_resp);
	check(ok, "create_cq with zero trailing bytes");
	if (ok)
		s->have |= HAVE_CQ;
	check(s->cq_resp.entries == 64 && s->cq_resp.cqn &&
	      !s->cq_resp.comp_mask, "create_cq answer");

	/* An arm doorbell on the mapped page (the device counts refusals). */
	if (s->db != MAP_FAILED && ok)
		*(volatile uint64_t *)((char *)s->db + 0x18) =
			(uint64_t)1 << 32 | s->cq_resp.cqn;
}

static void test_cq_vlan(struct abi *s)
{
	struct qrdma_ibv_create_cq vd = {
		.comp_mask = QRDMA_CREATE_CQ_VLAN,
		.entries = 64,
		.ring_va = (uintptr_t)ring(64 * 32),
		.ci_va = (uintptr_t)ring(PAGE),
	};
	struct qrdma_ibv_create_cq_resp vr = {};
	uint32_t vcq;
	bool made;

	check(s->uresp.device_caps & QRDMA_UCONTEXT_CAP_CQE_VLAN,
	      "the context offers CQEs with the VLAN");
	made = !create_cq(s->fd, 64, &vd, sizeof(vd), &vcq, &vr);
	check(made && vr.comp_mask == QRDMA_CREATE_CQ_VLAN,
	      "create_cq asking for the VLAN in CQEs gets it");
	if (made)
		check(!destroy_cq(s->fd, vcq), "destroy_cq of that CQ");
	else
		ksft_test_result_skip("destroy_cq of that CQ: it was not made\n");
}

static void test_qp_commands_s2(struct abi *s)
{
	struct qrdma_ibv_create_qp_resp dresp;
	struct ib_uverbs_create_qp_resp core;
	struct qp_req req;
	uint32_t qp;
	bool ok;

	qp_request(s, &req);
	req.send_sge = 13;
	check_errno(create_qp(s->fd, &req, &qp, NULL, NULL), EINVAL,
		    "S2: create_qp asking for more SGEs than the device has");
	req.send_sge = 2;
	req.drv.sq_entries = 8;
	check_errno(create_qp(s->fd, &req, &qp, NULL, NULL), EINVAL,
		    "create_qp with a send ring smaller than max_send_wr");
	req.drv.sq_entries = 16;
	req.drv.reserved = 1;
	check_errno(create_qp(s->fd, &req, &qp, NULL, NULL), EOPNOTSUPP,
		    "create_qp with a reserved field set");
	req.drv.reserved = 0;
	req.drv.rq_ring_va = (uintptr_t)s->rq_ring + 8;
	check_errno(create_qp(s->fd, &req, &qp, NULL, NULL), EINVAL,
		    "create_qp with a misaligned receive ring");
	req.drv.rq_ring_va = (uintptr_t)s->rq_ring;
	ok = !create_qp(s->fd, &req, &s->qp, &core, &dresp);
	check(ok, "create_qp RC");
	if (ok)
		s->have |= HAVE_QP;
	check(ok && core.max_send_wr >= 10 && core.max_recv_wr >= 10 &&
	      core.max_send_sge >= 2 && core.max_recv_sge >= 2 &&
	      core.max_inline_data >= 64 && dresp.qpn == core.qpn &&
	      dresp.max_send_wr == core.max_send_wr,
	      "S2: the caps returned are at least those asked for");
}

/* S40: RESET -> RTS is no transition; RESET -> INIT is. */
static void test_s40_state_table(struct abi *s)
{
	check_errno(modify_qp(s->fd, s->qp, QRDMA_QP_ATTR_STATE, QRDMA_QPS_RTS, 0),
		    EINVAL, "S40: modify_qp RESET -> RTS");
	check(!modify_qp(s->fd, s->qp, QRDMA_QP_ATTR_STATE | QRDMA_QP_ATTR_PKEY_INDEX |
			 QRDMA_QP_ATTR_PORT | QRDMA_QP_ATTR_ACCESS_FLAGS,
			 QRDMA_QPS_INIT, 0),
	      "modify_qp RESET -> INIT");
	check_errno(modify_qp(s->fd, s->qp, QRDMA_QP_ATTR_STATE | QRDMA_QP_ATTR_QKEY,
			      QRDMA_QPS_RTR, 7), EINVAL,
		    "S40: modify_qp INIT -> RTR of an RC QP without its attributes");
}

/* S20: a CQ a QP uses cannot be destroyed; it stays usable. */
static void test_s20_cq_in_use(struct abi *s)
{
	int ret = destroy_cq(s->fd, s->cq);

	check_errno(ret, EBUSY, "S20: destroy_cq of a CQ in use");
	/* Gone after all: the teardown's destroy_cq has nothing to test. */
	if (!ret)
		s->have &= ~HAVE_CQ;
	check(!modify_qp(s->fd, s->qp, QRDMA_QP_ATTR_STATE, QRDMA_QPS_ERR, 0),
	      "the QP goes on working after the refused destroy_cq");
}

/* S3: an SRQ only with RC and UD. */
static void test_s3_s4_srq(struct abi *s)
{
	struct ib_uverbs_create_qp_resp core;
	struct qrdma_ibv_create_srq srqd = {
		.entries = 16,
		.ring_va = (uintptr_t)ring(16 * 128),
	};
	struct qp_req req;
	uint32_t srq, qp;
	bool ok;

	ok = !create_srq(s->fd, s->pd, 16, &srqd, &srq);
	check(ok, "create_srq");
	if (!ok) {
		ksft_test_result_skip("S3: create_qp UC with an SRQ: no SRQ\n");
		ksft_test_result_skip("S4: create_qp UD with an SRQ: no SRQ\n");
		return;
	}
	qp_request(s, &req);
	req.srq = srq;
	req.type = QRDMA_QPT_UC;
	req.drv.rq_entries = 0;
	req.drv.rq_ring_va = 0;
	check_errno(create_qp(s->fd, &req, &qp, NULL, NULL), EINVAL,
		    "S3: create_qp UC with an SRQ");
	req.type = QRDMA_QPT_UD;
	req.drv.sq_ring_va = (uintptr_t)ring(16 * 256);
	ok = !create_qp(s->fd, &req, &s->ud_qp, &core, NULL);
	if (ok)
		s->have |= HAVE_UD_QP;
	check(ok && core.max_recv_wr == 0,
	      "S4: create_qp UD with an SRQ has no receive queue of its own");
}

/*
 * Closing the file would destroy these too; by hand, the commands are
 * tested, and that a CQ goes once no QP uses it.
 */
static void test_teardown(struct abi *s)
{
	if (s->have & HAVE_UD_QP)
		check(!destroy_qp(s->fd, s->ud_qp), "destroy_qp UD");
	else
		ksft_test_result_skip("destroy_qp UD: no UD QP was made\n");
	if (s->have & HAVE_QP)
		check(!destroy_qp(s->fd, s->qp), "destroy_qp RC");
	else
		ksft_test_result_skip("destroy_qp RC: no RC QP was made\n");
	if (s->have & HAVE_CQ)
		check(!destroy_cq(s->fd, s->cq), "destroy_cq once no QP uses it");
	else
		ksft_test_result_skip("destroy_cq once no QP uses it: no CQ left\n");
}

/*
 * The steps in the order they run, each with the number of results it
 * reports whatever happens in it and the objects it needs: the plan is
 * their sum, a step without its objects reports that many skips, and a
 * step that reports another number is named.
 */
static const struct abi_test {
	const char *name;
	void (*run)(struct abi *s);
	unsigned int results;
	unsigned int needs;
} tests[] = {
#define ABI_TEST(name, results, needs) { #name, test_##name, results, needs }
	ABI_TEST(ucontext, 3, 0),
	ABI_TEST(doorbell_mmap, 3, HAVE_CTX),
	ABI_TEST(pd, 1, HAVE_CTX),
	ABI_TEST(cq_commands, 11, HAVE_CTX),
	ABI_TEST(cq_vlan, 3, HAVE_CTX),
	ABI_TEST(qp_commands_s2, 6, HAVE_PD | HAVE_CQ),
	ABI_TEST(s40_state_table, 3, HAVE_QP),
	ABI_TEST(s20_cq_in_use, 2, HAVE_QP | HAVE_CQ),
	ABI_TEST(s3_s4_srq, 3, HAVE_PD | HAVE_CQ),
	ABI_TEST(teardown, 3, 0),
#undef ABI_TEST
};

static void skip_test(const struct abi_test *t, unsigned int missing)
{
	const char *what = have_names[__builtin_ctz(missing)];
	unsigned int i;

	for (i = 0; i < t->results; i++)
		ksft_test_result_skip("%s %u/%u: no %s (an earlier step failed)\n",
				      t->name, i + 1, t->results, what);
}

int main(void)
{
	struct abi s = { .db = MAP_FAILED };
	unsigned int plan = 0, before, missing;
	size_t i;

	ksft_print_header();
	for (i = 0; i < ARRAY_SIZE(tests); i++)
		plan += tests[i].results;
	ksft_set_plan(plan);
	s.fd = open_qrdma();
	if (s.fd < 0)
		ksft_exit_fail_msg("no uverbs device of qrdma: %s\n",
				   strerror(errno));
	for (i = 0; i < ARRAY_SIZE(tests); i++) {
		before = ksft_test_num();
		missing = tests[i].needs & ~s.have;
		if (missing)
			skip_test(&tests[i], missing);
		else
			tests[i].run(&s);
		if (ksft_test_num() - before != tests[i].results)
			ksft_print_msg("%s reported %u results, not %u\n",
				       tests[i].name, ksft_test_num() - before,
				       tests[i].results);
	}
	/* Closing the file destroys what is left: the SRQ, PD and context. */
	close(s.fd);
	ksft_finished();
}
