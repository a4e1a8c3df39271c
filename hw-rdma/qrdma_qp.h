/*
 * QEMU qrdma: emulated RDMA (RoCEv2) NIC, queue pairs
 *
 * Copyright (c) 2026 The qrdma developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef HW_RDMA_QRDMA_QP_H
#define HW_RDMA_QRDMA_QP_H

#include "hw/rdma/qrdma-hw.h"

typedef struct QrdmaCore QrdmaCore;
typedef struct QrdmaQp QrdmaQp;

/*
 * The QP object.  The data path keeps state of its own for each QP, so
 * each function that creates, changes or frees a QP hands back what
 * changed, and the command layer tells the data path.  Each returns
 * QRDMA_STATUS_OK or a failure status already reported as a guest error.
 */

/* The live QP qpn of uctx: its slot in *idx. */
uint8_t qrdma_get_qp(QrdmaCore *core, uint32_t uctx, uint32_t qpn, int *idx);

/* CREATE_QP: the new QP, in RESET, in *qp. */
uint8_t qrdma_qp_create(QrdmaCore *core, uint32_t uctx,
                        const struct qrdma_cmd *cmd, struct qrdma_cmpl *cmpl,
                        QrdmaQp **qp);
/* MODIFY_QP: the QP in *qp, and in *from its state before the change. */
/* The attributes of a QP in RESET: none set, port 1. */
void qrdma_qp_clear_attr(QrdmaQp *qp);
/* The caps a QP has: its whole rings, and all a fixed-size WQE holds. */
void qrdma_qp_set_caps(QrdmaQp *qp);
/*
 * The attribute of mask whose value a modify may not set, or 0.  Each
 * is checked only when mask sets it.
 */
uint32_t qrdma_qp_bad_value(const struct qrdma_qp_attr *a, uint32_t mask);
uint8_t qrdma_qp_modify(QrdmaCore *core, uint32_t uctx,
                        const struct qrdma_cmd *cmd, QrdmaQp **qp,
                        uint8_t *from);
/* QUERY_QP: the answer in *resp. */
uint8_t qrdma_qp_query(QrdmaCore *core, uint32_t uctx, uint32_t qpn,
                       struct qrdma_query_qp_resp *resp);
/*
 * DESTROY_QP in two steps, so that the data path can let go of the QP in
 * between: whether QP qpn of uctx may go (it in *qp), then its freeing.
 */
uint8_t qrdma_qp_destroy_check(QrdmaCore *core, uint32_t uctx, uint32_t qpn,
                               QrdmaQp **qp);
void qrdma_qp_free(QrdmaCore *core, QrdmaQp *qp);

/*
 * For the data path: an error of the QP moves it to ERR (SQE for the send
 * queue of UC and UD, sq_only), and its queues are flushed.
 */
void qrdma_qp_to_err(QrdmaCore *core, QrdmaQp *qp, bool sq_only);
/* A completion of qp; a CQ that cannot take it makes the QP fatal. */
void qrdma_qp_cqe(QrdmaCore *core, QrdmaQp *qp, bool recv,
                  struct qrdma_cqe *cqe, bool solicited);

#endif /* HW_RDMA_QRDMA_QP_H */
