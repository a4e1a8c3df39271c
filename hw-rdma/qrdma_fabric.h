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
 * member, for a multicast GID).  The wire (qrdma_wire.c) sends through it
 * what is for a member, as a NIC loops back what is for itself.
 *
 * A packet is queued, its payload copied out of the sender's guest
 * memory as it is sent (as the wire copies it into a frame), and the
 * receiver takes it from the queue later: in the fabric's bottom half,
 * or once the doorbell that sent it is done (qrdma_fabric_deliver()),
 * never on the sender's stack.  So no transport engine runs inside
 * another, and the sender's memory may change or go once the packet is
 * on its way.  A member that has too much on the queue is busy
 * (qrdma_fabric_busy()) and sends no more until the receivers catch up.
 *
 * Functions link to one with their "fabric" property (-device
 * qrdma-fabric,id=f0 -device qrdma,fabric=f0), as nvme controllers link
 * to an nvme-subsys; those that name none share the machine's default
 * one, /machine/qrdma-fabric, made when the first of them is realized.
 * Like nvme-subsys it is a device on no bus, which cannot be unplugged
 * while functions point at it.
 */
typedef struct QrdmaFabricPkt QrdmaFabricPkt;

struct QrdmaFabric {
    DeviceState parent_obj;

    QLIST_HEAD(, QrdmaFabricPort) members;
    /*
     * The unicast GIDs of the members' GID tables, each to the members
     * that hold it (QrdmaFabricGid), so that routing a packet is one
     * look-up however many members there are.
     */
    GHashTable *gids;
    /* Sent and not yet taken, in the order they were sent. */
    QSIMPLEQ_HEAD(, QrdmaFabricPkt) queue;
    QEMUBH *bh;
    bool delivering;
};

/* The entries of a member's GID table, as the fabric has them indexed. */
#define QRDMA_FABRIC_PORT_GIDS 16

/* A function's place on a fabric. */
typedef struct QrdmaFabricPort {
    QrdmaFabric *fabric;
    QrdmaCore *core;
    QrdmaRxFn *rx;
    /*
     * What of its GID table is in the fabric's index: the GID table may
     * have changed under it (a migration stream loads it whole), and the
     * index must lose exactly what it was given.
     */
    uint8_t indexed_gid[QRDMA_FABRIC_PORT_GIDS][16];
    bool indexed[QRDMA_FABRIC_PORT_GIDS];
    /* Its packets on the queue, and their payload bytes. */
    uint32_t queued;
    uint64_t queued_bytes;
    QLIST_ENTRY(QrdmaFabricPort) next;
} QrdmaFabricPort;

/* fabric NULL: the machine's default fabric. */
void qrdma_fabric_join(QrdmaFabric *fabric, QrdmaFabricPort *port,
                       QrdmaCore *core, QrdmaRxFn *rx);
void qrdma_fabric_leave(QrdmaFabricPort *port);

/*
 * Queue a packet for the member that owns its destination GID; true if
 * one does.  A multicast packet is queued for every member, and false
 * returns: the wire may have members of the group too.  pkt->payload is
 * left where it was.
 */
bool qrdma_fabric_route(QrdmaCore *core, QrdmaPkt *pkt);

/*
 * Queue a packet for port itself, to be taken later: a packet that came
 * in while an engine of its QP was running (qrdma_dp.c).
 */
void qrdma_fabric_requeue(QrdmaFabricPort *port, QrdmaPkt *pkt);

/*
 * Deliver queued packets, about bytes of payload, in order; the engines
 * that take them may queue more, which follow in the same run.  What is
 * left goes on in the fabric's bottom half.
 */
void qrdma_fabric_deliver(QrdmaFabric *fabric, uint64_t bytes);

/* The VM goes on: deliver what waited while it was stopped. */
void qrdma_fabric_resume(QrdmaFabric *fabric);

/* Whether packets wait on the queue. */
bool qrdma_fabric_pending(const QrdmaFabric *fabric);

/* Whether port has as much on the queue as it may: it sends no more. */
bool qrdma_fabric_busy(const QrdmaFabricPort *port);

/* Whether gid is in core's GID table. */
bool qrdma_fabric_owns_gid(const QrdmaCore *core, const uint8_t *gid);

/* Entry index of port's GID table changed: the fabric's index follows. */
void qrdma_fabric_gid_changed(QrdmaFabricPort *port, unsigned index);
/* The same for every entry: after a reset, or a migration's load. */
void qrdma_fabric_gids_changed(QrdmaFabricPort *port);

#endif /* HW_RDMA_QRDMA_FABRIC_H */
