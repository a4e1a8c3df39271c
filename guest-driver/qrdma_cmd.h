/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The device's commands, one function each.  Every function takes its
 * parameters in a plain structure (CPU byte order, no wire layout), fills
 * the command, executes it and returns the result in another plain
 * structure, so that the verbs never see the wire format.
 */
#ifndef _QRDMA_CMD_H_
#define _QRDMA_CMD_H_

#include <linux/if_ether.h>
#include <linux/types.h>

struct qrdma_cmdq;

/* QUERY_DEVICE */
struct qrdma_dev_attr {
	u64 fw_ver;
	__be64 node_guid;
	u64 max_mr_size;
	u64 page_size_cap;
	u32 vendor_id;
	u32 vendor_part_id;
	u32 hw_ver;
	u32 max_qp;
	u32 max_qp_wr;
	u32 max_send_sge;
	u32 max_recv_sge;
	u32 max_sge_rd;
	u32 max_cq;
	u32 max_cqe;
	u32 max_mr;
	u32 max_pd;
	u32 max_qp_rd_atom;
	u32 max_qp_init_rd_atom;
	u32 max_srq;
	u32 max_srq_wr;
	u32 max_srq_sge;
	u32 max_ah;
	u32 max_mcast_grp;
	u32 max_mcast_qp_attach;
	u32 max_uctx;
	u32 max_inline_data;
	u32 max_fast_reg_page_list_len;
	u32 max_mr_pages;
	u32 num_comp_vectors;
	u32 max_pkeys;
	u8 local_ca_ack_delay;
	u8 atomic_cap;
	u32 device_caps;		/* QRDMA_DEV_CAP_* */
	u32 max_mw;
};

/* QUERY_PORT */
struct qrdma_port_info {
	u8 state;
	u8 phys_state;
	u8 max_mtu;
	u8 active_mtu;
	u8 active_speed;
	u8 active_width;
	u16 pkey_tbl_len;
	u32 gid_tbl_len;
	u32 max_msg_sz;
	u8 mac[ETH_ALEN];
};

/* QUERY_STATS */
struct qrdma_dev_stats {
	u64 cmds;
	u64 cmd_errors;
	u64 guest_errors;
	u64 eth_tx_frames;
	u64 eth_rx_frames;
	u64 eth_rx_dropped;
	u64 eth_tx_dropped;
	u32 uctx;
	u32 pd;
	u32 mr;
	u32 cq;
	u32 qp;
	u32 srq;
	u32 ah;
	u32 mcast;
	u32 mw;
	u64 pkts_sent;
	u64 pkts_rcvd;
	u64 pkts_dropped;
	u64 dup_reqs;
	u64 out_of_seq;
	u64 seq_naks_sent;
	u64 seq_naks_rcvd;
	u64 rnr_naks_sent;
	u64 rnr_naks_rcvd;
	u64 retransmits;
	u64 retry_exceeded;
	u64 icrc_errors;
	u64 wire_malformed;
};

/* SET_GID */
struct qrdma_gid_params {
	u32 index;
	u16 vlan_id;
	u8 gid[16];
	u8 mac[ETH_ALEN];
};

/* CREATE_UCTX */
struct qrdma_uctx_result {
	u32 handle;
	u32 db_page;
};

/* REG_MR */
struct qrdma_reg_mr_params {
	u32 uctx;
	u32 pd;
	u32 access;			/* QRDMA_ACCESS_* */
	u64 iova;
	u64 length;
	dma_addr_t pages_dma;
	u32 npages;
	u8 page_shift;
	bool dma;			/* the kernel's whole-memory MR */
};

/* REG_MR, ALLOC_MR */
struct qrdma_mr_keys {
	u32 lkey;
	u32 rkey;
};

/* ALLOC_MW */
struct qrdma_mw_result {
	u32 handle;
	u32 rkey;
};

/* CREATE_CQ, RESIZE_CQ */
struct qrdma_cq_params {
	u32 uctx;
	u32 cqn;			/* RESIZE_CQ */
	dma_addr_t pages_dma;
	u32 npages;
	u32 log2_entries;
	u32 eq;				/* CREATE_CQ */
	u32 flags;			/* CREATE_CQ: QRDMA_CQ_F_* */
	u32 ci;				/* RESIZE_CQ */
	dma_addr_t ci_dma;		/* CREATE_CQ, 0: none */
};

struct qrdma_cq_result {
	u32 cqn;
	u32 entries;
};

/* CREATE_QP */
struct qrdma_create_qp_params {
	u32 uctx;
	u32 pd;
	u32 send_cq;
	u32 recv_cq;
	u32 srq;			/* 0: none */
	u8 qp_type;			/* enum qrdma_qp_type */
	bool sq_sig_all;
	u8 sq_log2;
	u8 rq_log2;
	u32 max_send_wr;
	u32 max_recv_wr;
	u32 max_send_sge;
	u32 max_recv_sge;
	u32 max_inline_data;
	dma_addr_t sq_pages_dma;
	dma_addr_t rq_pages_dma;
	u32 sq_npages;
	u32 rq_npages;
};

struct qrdma_qp_caps {
	u32 max_send_wr;
	u32 max_recv_wr;
	u32 max_send_sge;
	u32 max_recv_sge;
	u32 max_inline_data;
};

struct qrdma_create_qp_result {
	u32 qpn;
	struct qrdma_qp_caps caps;
};

/* The address vector of a connected QP or an AH. */
struct qrdma_av_params {
	u8 dgid[16];
	u32 flow_label;
	u8 sgid_index;
	u8 hop_limit;
	u8 traffic_class;
	u8 sl;
	u8 dmac[ETH_ALEN];
	u16 vlan_id;
};

/* MODIFY_QP attributes and the QUERY_QP answer. */
struct qrdma_qp_params {
	u32 attr_mask;			/* QRDMA_QP_ATTR_* */
	u8 qp_state;
	u8 cur_qp_state;
	u8 path_mtu;
	u8 path_mig_state;
	u32 qkey;
	u32 rq_psn;
	u32 sq_psn;
	u32 dest_qp_num;
	u32 qp_access_flags;
	u16 pkey_index;
	u8 en_sqd_async_notify;
	u8 sq_draining;
	u8 max_rd_atomic;
	u8 max_dest_rd_atomic;
	u8 min_rnr_timer;
	u8 port_num;
	u8 timeout;
	u8 retry_cnt;
	u8 rnr_retry;
	struct qrdma_av_params av;
};

struct qrdma_query_qp_result {
	struct qrdma_qp_params attr;
	struct qrdma_qp_caps caps;
	u8 qp_type;
	bool sq_sig_all;
};

/* CREATE_SRQ */
struct qrdma_create_srq_params {
	u32 uctx;
	u32 pd;
	u32 max_wr;
	u32 max_sge;
	dma_addr_t pages_dma;
	u32 npages;
	u32 log2_entries;
};

/* MODIFY_SRQ: the new ring only with QRDMA_SRQ_ATTR_MAX_WR */
struct qrdma_modify_srq_params {
	u32 uctx;
	u32 srqn;
	u32 attr_mask;			/* QRDMA_SRQ_ATTR_* */
	u32 srq_limit;
	u32 max_wr;
	dma_addr_t pages_dma;
	u32 npages;
	u32 log2_entries;
};

/* CREATE_SRQ, QUERY_SRQ */
struct qrdma_srq_result {
	u32 srqn;
	u32 max_wr;
	u32 max_sge;
	u32 srq_limit;
};

int qrdma_cmd_query_device(struct qrdma_cmdq *cmdq,
			   struct qrdma_dev_attr *attr);
int qrdma_cmd_query_port(struct qrdma_cmdq *cmdq, u32 port,
			 struct qrdma_port_info *info);
int qrdma_cmd_query_stats(struct qrdma_cmdq *cmdq,
			  struct qrdma_dev_stats *stats);
int qrdma_cmd_set_gid(struct qrdma_cmdq *cmdq,
		      const struct qrdma_gid_params *params);
int qrdma_cmd_del_gid(struct qrdma_cmdq *cmdq, u32 index);
int qrdma_cmd_create_uctx(struct qrdma_cmdq *cmdq,
			  struct qrdma_uctx_result *result);
int qrdma_cmd_destroy_uctx(struct qrdma_cmdq *cmdq, u32 handle);
int qrdma_cmd_alloc_pd(struct qrdma_cmdq *cmdq, u32 uctx, u32 *pdn);
int qrdma_cmd_dealloc_pd(struct qrdma_cmdq *cmdq, u32 uctx, u32 pdn);
int qrdma_cmd_reg_mr(struct qrdma_cmdq *cmdq,
		     const struct qrdma_reg_mr_params *params,
		     struct qrdma_mr_keys *keys);
int qrdma_cmd_alloc_mr(struct qrdma_cmdq *cmdq, u32 uctx, u32 pd,
		       u32 max_pages, struct qrdma_mr_keys *keys);
int qrdma_cmd_dereg_mr(struct qrdma_cmdq *cmdq, u32 uctx, u32 lkey);
int qrdma_cmd_alloc_mw(struct qrdma_cmdq *cmdq, u32 uctx, u32 pd, u8 type,
		       struct qrdma_mw_result *result);
int qrdma_cmd_dealloc_mw(struct qrdma_cmdq *cmdq, u32 uctx, u32 handle);
int qrdma_cmd_create_cq(struct qrdma_cmdq *cmdq,
			const struct qrdma_cq_params *params,
			struct qrdma_cq_result *result);
int qrdma_cmd_resize_cq(struct qrdma_cmdq *cmdq,
			const struct qrdma_cq_params *params,
			struct qrdma_cq_result *result);
int qrdma_cmd_destroy_cq(struct qrdma_cmdq *cmdq, u32 uctx, u32 cqn);
int qrdma_cmd_create_qp(struct qrdma_cmdq *cmdq,
			const struct qrdma_create_qp_params *params,
			struct qrdma_create_qp_result *result);
int qrdma_cmd_modify_qp(struct qrdma_cmdq *cmdq, u32 uctx, u32 qpn,
			const struct qrdma_qp_params *attr);
int qrdma_cmd_query_qp(struct qrdma_cmdq *cmdq, u32 uctx, u32 qpn,
		       struct qrdma_query_qp_result *result);
int qrdma_cmd_destroy_qp(struct qrdma_cmdq *cmdq, u32 uctx, u32 qpn);
int qrdma_cmd_create_srq(struct qrdma_cmdq *cmdq,
			 const struct qrdma_create_srq_params *params,
			 struct qrdma_srq_result *result);
int qrdma_cmd_modify_srq(struct qrdma_cmdq *cmdq,
			 const struct qrdma_modify_srq_params *params);
int qrdma_cmd_query_srq(struct qrdma_cmdq *cmdq, u32 uctx, u32 srqn,
			struct qrdma_srq_result *result);
int qrdma_cmd_destroy_srq(struct qrdma_cmdq *cmdq, u32 uctx, u32 srqn);
int qrdma_cmd_create_ah(struct qrdma_cmdq *cmdq, u32 uctx, u32 pd,
			const struct qrdma_av_params *av, u32 *ah);
int qrdma_cmd_destroy_ah(struct qrdma_cmdq *cmdq, u32 uctx, u32 ah);
int qrdma_cmd_attach_mcast(struct qrdma_cmdq *cmdq, u32 uctx, u32 qpn,
			   const u8 *gid);
int qrdma_cmd_detach_mcast(struct qrdma_cmdq *cmdq, u32 uctx, u32 qpn,
			   const u8 *gid);

#endif /* _QRDMA_CMD_H_ */
