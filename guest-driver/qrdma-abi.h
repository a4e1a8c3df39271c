/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR BSD-2-Clause) */
/*
 * qrdma user verbs ABI: the driver-specific data that libqrdma (the
 * rdma-core provider) and qrdma.ko exchange through ib_uverbs.
 *
 * Rules, as for every uverbs ABI:
 * - every structure is a multiple of 8 bytes, 64-bit fields are
 *   __aligned_u64, so 32- and 64-bit user space see one layout;
 * - comp_mask and every reserved field of a command must be zero, and so
 *   must any byte a newer provider sends beyond the structure the kernel
 *   knows; the kernel writes at most the response length user space gave.
 *
 * The names carry "ibv" so that they never meet the device's own
 * structures of qrdma-hw.h, which the provider includes too.
 *
 * Rings that user space allocates (CQ, SQ, RQ, SRQ) start on a page
 * boundary and span whole pages of ring_page_size bytes; their entry
 * formats are the ones of qrdma-hw.h.  A new CQ ring must be zeroed, so
 * that no entry carries the phase bit of the first pass.
 */
#ifndef QRDMA_ABI_USER_H
#define QRDMA_ABI_USER_H

#include <linux/types.h>

/* Incremented on every change that breaks compatibility. */
#define QRDMA_UVERBS_ABI_VERSION	1

struct qrdma_ibv_alloc_ucontext {
	__u32 comp_mask;
	__u32 reserved;
};

enum qrdma_ucontext_caps {
	/* The device executes work requests: doorbells and CQEs work. */
	QRDMA_UCONTEXT_CAP_DATA_PATH = 1 << 0,
	/* The device executes IBV_WR_ATOMIC_WRITE (ibv_wr_atomic_write). */
	QRDMA_UCONTEXT_CAP_ATOMIC_WRITE = 1 << 1,
	/* ... IBV_WR_FLUSH (ibv_wr_flush) of type IBV_FLUSH_GLOBAL. */
	QRDMA_UCONTEXT_CAP_FLUSH = 1 << 2,
	/*
	 * ... IBV_WR_BIND_MW (ibv_wr_bind_mw) and ibv_bind_mw(): memory
	 * windows of type 1 and 2B, which ibv_alloc_mw() makes.
	 */
	QRDMA_UCONTEXT_CAP_MW = 1 << 3,
	/*
	 * A CQ created with QRDMA_CREATE_CQ_VLAN has the VLAN of UD receive
	 * completions in its CQEs (QRDMA_CQE_F_VLAN, vlan_id).
	 */
	QRDMA_UCONTEXT_CAP_CQE_VLAN = 1 << 4,
};

struct qrdma_ibv_alloc_ucontext_resp {
	__u32 comp_mask;
	__u32 device_caps;		/* enum qrdma_ucontext_caps */
	/* mmap() offset and length of this context's doorbell page. */
	__aligned_u64 db_mmap_key;
	__u32 db_page_size;
	/* Page size, and alignment, of every ring user space provides. */
	__u32 ring_page_size;
	__u32 sq_wqe_size;
	__u32 rq_wqe_size;
	__u32 cqe_size;
	__u32 max_qp_wr;
	__u32 max_srq_wr;
	__u32 max_cqe;
	__u32 max_send_sge;
	__u32 max_recv_sge;
	__u32 max_srq_sge;
	__u32 max_inline_data;
};

enum qrdma_create_cq_comp_mask {
	/*
	 * Request: CQEs with the VLAN instead of the P_Key index (only with
	 * QRDMA_UCONTEXT_CAP_CQE_VLAN); response: they have it.
	 */
	QRDMA_CREATE_CQ_VLAN = 1 << 0,
};

struct qrdma_ibv_create_cq {
	__u32 comp_mask;		/* enum qrdma_create_cq_comp_mask */
	/* Ring entries: a power of two, at least the CQ size asked for. */
	__u32 entries;
	/* The ring: entries * cqe_size bytes, rounded up to whole pages. */
	__aligned_u64 ring_va;
	/* A 4-byte aligned word where the consumer index is kept: required. */
	__aligned_u64 ci_va;
};

struct qrdma_ibv_create_cq_resp {
	__u32 comp_mask;		/* enum qrdma_create_cq_comp_mask */
	__u32 cqn;
	__u32 entries;
	__u32 reserved;
};

struct qrdma_ibv_resize_cq {
	__u32 comp_mask;
	/* The new ring, zeroed, as for create. */
	__u32 entries;
	__aligned_u64 ring_va;
	/* The consumer index: unpolled entries from here on move over. */
	__u32 ci;
	__u32 reserved;
};

struct qrdma_ibv_resize_cq_resp {
	__u32 comp_mask;
	__u32 entries;
};

struct qrdma_ibv_create_qp {
	__u32 comp_mask;
	/* Ring entries, powers of two; rq_entries is 0 with an SRQ. */
	__u32 sq_entries;
	__u32 rq_entries;
	__u32 reserved;
	__aligned_u64 sq_ring_va;
	__aligned_u64 rq_ring_va;
};

struct qrdma_ibv_create_qp_resp {
	__u32 comp_mask;
	__u32 qpn;
	__u32 max_send_wr;
	__u32 max_recv_wr;
	__u32 max_send_sge;
	__u32 max_recv_sge;
	__u32 max_inline_data;
	__u32 reserved;
};

struct qrdma_ibv_create_srq {
	__u32 comp_mask;
	/* Ring entries, a power of two. */
	__u32 entries;
	__aligned_u64 ring_va;
};

struct qrdma_ibv_create_srq_resp {
	__u32 comp_mask;
	__u32 srqn;
	__u32 max_wr;
	__u32 max_sge;
};

/*
 * modify_srq with IBV_SRQ_MAX_WR: the new ring.  Until the verb returns,
 * user space writes every WQE it posts into both rings (see the spec,
 * "Shared receive queue resize"); afterwards it uses the new one if the
 * verb succeeded and the old one if it failed.  Without IBV_SRQ_MAX_WR
 * the command may be left out, or sent with every field 0.
 */
struct qrdma_ibv_modify_srq {
	__u32 comp_mask;
	/* Ring entries, a power of two, at least max_wr. */
	__u32 entries;
	__aligned_u64 ring_va;
};

struct qrdma_ibv_create_ah_resp {
	__u32 comp_mask;
	/* The handle a UD send WQE names the AH by. */
	__u32 ah;
};

#endif /* QRDMA_ABI_USER_H */
