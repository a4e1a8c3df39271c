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
#include "qrdma_xport.h"

#define TYPE_QRDMA_FABRIC "qrdma-fabric"
OBJECT_DECLARE_SIMPLE_TYPE(QrdmaFabric, QRDMA_FABRIC)

/*
 * The in-process link between the functions of one QEMU: a packet from
 * one member goes to the member that owns its destination GID (to every
 * member, for a multicast GID), at once, its payload copied straight from
 * the sender's guest memory.  The wire (qrdma_wire.c) sends through it
 * what is for a member, as a NIC loops back what is for itself.
 * Functions link to one with their "fabric" property (-device
 * qrdma-fabric,id=f0 -device qrdma,fabric=f0), as nvme controllers link
 * to an nvme-subsys; those that name none share the machine's default
 * one, /machine/qrdma-fabric, made when the first of them is realized.
 * Like nvme-subsys it is a device on no bus, which cannot be unplugged
 * while functions point at it.
 */
struct QrdmaFabric {
    DeviceState parent_obj;

    QLIST_HEAD(, QrdmaFabricPort) members;
};

/* A function's place on a fabric. */
typedef struct QrdmaFabricPort {
    QrdmaFabric *fabric;
    QrdmaCore *core;
    QrdmaRxFn *rx;
    QLIST_ENTRY(QrdmaFabricPort) next;
} QrdmaFabricPort;

/* fabric NULL: the machine's default fabric. */
void qrdma_fabric_join(QrdmaFabric *fabric, QrdmaFabricPort *port,
                       QrdmaCore *core, QrdmaRxFn *rx);
void qrdma_fabric_leave(QrdmaFabricPort *port);

/*
 * Deliver a packet to the member that owns its destination GID; true if
 * one did.  A multicast packet goes to every member, and false returns:
 * the wire may have members of the group too.
 */
bool qrdma_fabric_route(QrdmaCore *core, QrdmaPkt *pkt);

/* Whether gid is in core's GID table. */
bool qrdma_fabric_owns_gid(const QrdmaCore *core, const uint8_t *gid);

#endif /* HW_RDMA_QRDMA_FABRIC_H */
