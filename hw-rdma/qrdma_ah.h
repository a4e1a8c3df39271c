/*
 * QEMU qrdma: emulated RDMA (RoCEv2) NIC, address handles
 *
 * Copyright (c) 2026 The qrdma developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef HW_RDMA_QRDMA_AH_H
#define HW_RDMA_QRDMA_AH_H

#include "hw/rdma/qrdma-hw.h"
#include "qrdma_pkt.h"

typedef struct QrdmaCore QrdmaCore;

/* The live AH handle of uctx: its slot in *idx, or a reported failure. */
uint8_t qrdma_get_ah(QrdmaCore *core, uint32_t uctx, uint32_t handle,
                     int *idx);
/* An address vector an AH or a connected QP takes: a reported failure. */
uint8_t qrdma_check_av(QrdmaCore *core, const struct qrdma_av *av);

/* The port's GID an address vector sends from. */
const uint8_t *qrdma_av_sgid(QrdmaCore *core, const struct qrdma_av *av);
/*
 * The network header and link of a packet to av, from the port's GID at
 * av's index: what a requester's packet and a responder's answer carry.
 */
void qrdma_av_pkt_path(QrdmaCore *core, const struct qrdma_av *av,
                       QrdmaPkt *pkt);

uint8_t qrdma_cmd_create_ah(QrdmaCore *core, uint32_t uctx,
                            const struct qrdma_cmd *cmd,
                            struct qrdma_cmpl *cmpl);
uint8_t qrdma_cmd_destroy_ah(QrdmaCore *core, uint32_t uctx,
                             const struct qrdma_cmd *cmd,
                             struct qrdma_cmpl *cmpl);

#endif /* HW_RDMA_QRDMA_AH_H */
