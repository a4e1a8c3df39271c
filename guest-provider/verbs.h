/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
#ifndef __QRDMA_VERBS_H__
#define __QRDMA_VERBS_H__

#include <infiniband/driver.h>
#include <infiniband/verbs.h>

int qrdma_query_device_ex(struct ibv_context *ibvctx,
			  const struct ibv_query_device_ex_input *input,
			  struct ibv_device_attr_ex *attr, size_t attr_size);
int qrdma_query_port(struct ibv_context *ibvctx, uint8_t port,
		     struct ibv_port_attr *attr);

struct ibv_pd *qrdma_alloc_pd(struct ibv_context *ibvctx);
int qrdma_dealloc_pd(struct ibv_pd *ibvpd);
struct ibv_mr *qrdma_reg_mr(struct ibv_pd *ibvpd, void *addr, size_t length,
			    uint64_t hca_va, int access);
int qrdma_dereg_mr(struct verbs_mr *vmr);
struct ibv_mw *qrdma_alloc_mw(struct ibv_pd *ibvpd, enum ibv_mw_type type);
int qrdma_dealloc_mw(struct ibv_mw *mw);
int qrdma_bind_mw(struct ibv_qp *ibvqp, struct ibv_mw *mw,
		  struct ibv_mw_bind *mw_bind);

struct ibv_cq *qrdma_create_cq(struct ibv_context *ibvctx, int cqe,
			       struct ibv_comp_channel *channel,
			       int comp_vector);
struct ibv_cq_ex *qrdma_create_cq_ex(struct ibv_context *ibvctx,
				     struct ibv_cq_init_attr_ex *attr);
int qrdma_resize_cq(struct ibv_cq *ibvcq, int cqe);
int qrdma_destroy_cq(struct ibv_cq *ibvcq);
int qrdma_poll_cq(struct ibv_cq *ibvcq, int ne, struct ibv_wc *wc);
int qrdma_req_notify_cq(struct ibv_cq *ibvcq, int solicited_only);

struct ibv_srq *qrdma_create_srq(struct ibv_pd *ibvpd,
				 struct ibv_srq_init_attr *attr);
int qrdma_modify_srq(struct ibv_srq *ibvsrq, struct ibv_srq_attr *attr,
		     int attr_mask);
int qrdma_query_srq(struct ibv_srq *ibvsrq, struct ibv_srq_attr *attr);
int qrdma_destroy_srq(struct ibv_srq *ibvsrq);
int qrdma_post_srq_recv(struct ibv_srq *ibvsrq, struct ibv_recv_wr *wr,
			struct ibv_recv_wr **bad_wr);

struct ibv_qp *qrdma_create_qp(struct ibv_pd *ibvpd,
			       struct ibv_qp_init_attr *attr);
struct ibv_qp *qrdma_create_qp_ex(struct ibv_context *ibvctx,
				  struct ibv_qp_init_attr_ex *attr);
int qrdma_modify_qp(struct ibv_qp *ibvqp, struct ibv_qp_attr *attr,
		    int attr_mask);
int qrdma_query_qp(struct ibv_qp *ibvqp, struct ibv_qp_attr *attr,
		   int attr_mask, struct ibv_qp_init_attr *init_attr);
int qrdma_destroy_qp(struct ibv_qp *ibvqp);
int qrdma_post_send(struct ibv_qp *ibvqp, struct ibv_send_wr *wr,
		    struct ibv_send_wr **bad_wr);
int qrdma_post_recv(struct ibv_qp *ibvqp, struct ibv_recv_wr *wr,
		    struct ibv_recv_wr **bad_wr);

struct ibv_ah *qrdma_create_ah(struct ibv_pd *ibvpd, struct ibv_ah_attr *attr);
int qrdma_destroy_ah(struct ibv_ah *ibvah);
int qrdma_attach_mcast(struct ibv_qp *ibvqp, const union ibv_gid *gid,
		       uint16_t lid);
int qrdma_detach_mcast(struct ibv_qp *ibvqp, const union ibv_gid *gid,
		       uint16_t lid);

#endif /* __QRDMA_VERBS_H__ */
