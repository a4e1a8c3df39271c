/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The commands libqrdma sends to qrdma.ko: the uverbs headers with the
 * driver's udata (kernel-headers/rdma/qrdma-abi.h, which is the driver's
 * guest-driver/qrdma-abi.h) appended.
 */
#ifndef __QRDMA_ABI_H__
#define __QRDMA_ABI_H__

#include <infiniband/kern-abi.h>
#include <kernel-abi/qrdma-abi.h>
#include <rdma/qrdma-abi.h>

DECLARE_DRV_CMD(uqrdma_alloc_ucontext, IB_USER_VERBS_CMD_GET_CONTEXT,
		qrdma_ibv_alloc_ucontext, qrdma_ibv_alloc_ucontext_resp);
DECLARE_DRV_CMD(uqrdma_create_ah, IB_USER_VERBS_CMD_CREATE_AH, empty,
		qrdma_ibv_create_ah_resp);
DECLARE_DRV_CMD(uqrdma_create_cq, IB_USER_VERBS_EX_CMD_CREATE_CQ,
		qrdma_ibv_create_cq, qrdma_ibv_create_cq_resp);
DECLARE_DRV_CMD(uqrdma_create_qp, IB_USER_VERBS_CMD_CREATE_QP,
		qrdma_ibv_create_qp, qrdma_ibv_create_qp_resp);
DECLARE_DRV_CMD(uqrdma_create_srq, IB_USER_VERBS_CMD_CREATE_SRQ,
		qrdma_ibv_create_srq, qrdma_ibv_create_srq_resp);
DECLARE_DRV_CMD(uqrdma_modify_srq, IB_USER_VERBS_CMD_MODIFY_SRQ,
		qrdma_ibv_modify_srq, empty);
DECLARE_DRV_CMD(uqrdma_resize_cq, IB_USER_VERBS_CMD_RESIZE_CQ,
		qrdma_ibv_resize_cq, qrdma_ibv_resize_cq_resp);

#endif /* __QRDMA_ABI_H__ */
