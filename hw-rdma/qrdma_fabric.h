/*
 * QEMU qrdma: the loopback fabric that links qrdma functions of one QEMU
 *
 * Copyright (c) 2026 The qrdma developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef HW_RDMA_QRDMA_FABRIC_H
#define HW_RDMA_QRDMA_FABRIC_H

#include "hw/qdev-core.h"
#include "qemu/queue.h"

#define TYPE_QRDMA_FABRIC "qrdma-fabric"
OBJECT_DECLARE_SIMPLE_TYPE(QrdmaFabric, QRDMA_FABRIC)

typedef struct QrdmaCore QrdmaCore;
typedef struct QrdmaQp QrdmaQp;

/*
 * The functions that reach each other: a message from one member goes to
 * the member that owns its destination GID.  Functions link to one with
 * their "fabric" property (-device qrdma-fabric,id=f0 -device
 * qrdma,fabric=f0), as nvme controllers link to an nvme-subsys; those that
 * name none share a default one, which is what a QEMU with a single fabric
 * wants.  Like nvme-subsys it is a device on no bus, which cannot be
 * unplugged while functions point at it.
 */
struct QrdmaFabric {
    DeviceState parent_obj;

    QLIST_HEAD(, QrdmaCore) members;
};

QrdmaFabric *qrdma_fabric_default(void);
void qrdma_fabric_join(QrdmaFabric *fabric, QrdmaCore *core);
void qrdma_fabric_leave(QrdmaCore *core);
/* The live QP with number qpn of the member that has GID dgid, if any. */
QrdmaQp *qrdma_fabric_find_qp(QrdmaFabric *fabric, const uint8_t *dgid,
                              uint32_t qpn, QrdmaCore **dst_core);

#define QRDMA_FABRIC_FOREACH_MEMBER(core, fabric) \
    QLIST_FOREACH(core, &(fabric)->members, fabric_next)

#endif /* HW_RDMA_QRDMA_FABRIC_H */
