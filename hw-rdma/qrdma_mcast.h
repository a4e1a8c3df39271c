/*
 * QEMU qrdma: emulated RDMA (RoCEv2) NIC, multicast groups
 *
 * Copyright (c) 2026 The qrdma developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef HW_RDMA_QRDMA_MCAST_H
#define HW_RDMA_QRDMA_MCAST_H

#include "hw/rdma/qrdma-hw.h"

typedef struct QrdmaCore QrdmaCore;
typedef struct QrdmaMcast QrdmaMcast;

/*
 * The groups are found by GID through core->mcast_index, whose keys are
 * the groups' own gid arrays: a multicast packet costs the same whatever
 * the number of groups.
 */
guint qrdma_gid_hash(gconstpointer gid);
gboolean qrdma_gid_equal(gconstpointer a, gconstpointer b);
/* Group slot idx, its GID set, is found by that GID from now on. */
void qrdma_mcast_index(QrdmaCore *core, uint32_t idx);
/* The group of that GID, or NULL. */
QrdmaMcast *qrdma_mcast_group(QrdmaCore *core, const uint8_t *gid);

uint8_t qrdma_cmd_attach_mcast(QrdmaCore *core, uint32_t uctx,
                               const struct qrdma_cmd *cmd,
                               struct qrdma_cmpl *cmpl);
uint8_t qrdma_cmd_detach_mcast(QrdmaCore *core, uint32_t uctx,
                               const struct qrdma_cmd *cmd,
                               struct qrdma_cmpl *cmpl);

#endif /* HW_RDMA_QRDMA_MCAST_H */
