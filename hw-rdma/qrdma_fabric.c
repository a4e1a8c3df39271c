/*
 * QEMU qrdma: the loopback fabric that links qrdma functions of one QEMU
 *
 * Copyright (c) 2026 The qrdma developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/main-loop.h"
#include "qemu/module.h"
#include "qemu/units.h"
#include "hw/qdev-core.h"
#include "system/runstate.h"
#include "qrdma.h"
#include "qrdma-qemu-compat.h"
#include "qrdma_fabric.h"
#include "qrdma_mcast.h"
#include "trace.h"

#define QRDMA_FABRIC_DEFAULT "qrdma-fabric"

static QrdmaFabric *qrdma_fabric_default(void)
{
    Object *machine = qdev_get_machine();
    Object *obj = object_resolve_path_component(machine,
                                                QRDMA_FABRIC_DEFAULT);

    if (!obj) {
        obj = object_new(TYPE_QRDMA_FABRIC);
        object_property_add_child(machine, QRDMA_FABRIC_DEFAULT, obj);
        /* A device on no bus, realized as -device would. */
        qdev_realize(DEVICE(obj), NULL, &error_abort);
        object_unref(obj);
    }
    return QRDMA_FABRIC(obj);
}

/*
 * A unicast GID in the fabric's index: the members that hold it, one
 * entry per GID table entry, in the order they took it.  A packet to it
 * goes to the first; two members that claim one GID are a guest's
 * mistake, and the one that claimed it first keeps it.
 */
typedef struct QrdmaFabricGid {
    uint8_t gid[16];
    GSList *holders;
} QrdmaFabricGid;

QEMU_BUILD_BUG_ON(QRDMA_FABRIC_PORT_GIDS != QRDMA_GID_TABLE_LEN);

static void qrdma_fabric_gid_unindex(QrdmaFabricPort *port, unsigned index)
{
    QrdmaFabric *fabric = port->fabric;
    QrdmaFabricGid *g;

    if (!port->indexed[index]) {
        return;
    }
    port->indexed[index] = false;
    g = g_hash_table_lookup(fabric->gids, port->indexed_gid[index]);
    g->holders = g_slist_remove(g->holders, port);
    if (!g->holders) {
        g_hash_table_remove(fabric->gids, g->gid);
    }
}

void qrdma_fabric_gid_changed(QrdmaFabricPort *port, unsigned index)
{
    const struct qrdma_gid_entry *e = &port->core->gid[index];
    QrdmaFabric *fabric = port->fabric;
    QrdmaFabricGid *g;

    if (!fabric) {
        return;
    }
    qrdma_fabric_gid_unindex(port, index);
    /* Multicast packets go to every member: no owner to look up. */
    if (!e->type || qrdma_gid_is_mcast(e->gid)) {
        return;
    }
    g = g_hash_table_lookup(fabric->gids, e->gid);
    if (!g) {
        g = g_new0(QrdmaFabricGid, 1);
        memcpy(g->gid, e->gid, sizeof(g->gid));
        g_hash_table_insert(fabric->gids, g->gid, g);
    }
    g->holders = g_slist_append(g->holders, port);
    memcpy(port->indexed_gid[index], e->gid, 16);
    port->indexed[index] = true;
}

void qrdma_fabric_gids_changed(QrdmaFabricPort *port)
{
    unsigned i;

    for (i = 0; i < QRDMA_FABRIC_PORT_GIDS; i++) {
        qrdma_fabric_gid_changed(port, i);
    }
}

static void qrdma_fabric_gid_free(gpointer data)
{
    QrdmaFabricGid *g = data;

    g_slist_free(g->holders);
    g_free(g);
}

void qrdma_fabric_join(QrdmaFabric *fabric, QrdmaFabricPort *port,
                       QrdmaCore *core, QrdmaRxFn *rx)
{
    const char *id;

    if (!fabric) {
        fabric = qrdma_fabric_default();
    }
    id = object_get_canonical_path_component(OBJECT(fabric));
    port->fabric = fabric;
    port->core = core;
    port->rx = rx;
    QLIST_INSERT_HEAD(&fabric->members, port, next);
    qrdma_fabric_gids_changed(port);
    trace_qrdma_fabric_join(id ? id : "(default)");
}

/*
 * What one member may have on the queue: a few of the transport's largest
 * bursts, enough for the receiver to be busy while the sender fills the
 * queue again.  Past either bound the sender is busy.
 */
#define QRDMA_FABRIC_PORT_BYTES (4 * MiB)
#define QRDMA_FABRIC_PORT_PKTS 512

/* What the fabric's bottom half delivers in one turn of the main loop. */
#define QRDMA_FABRIC_TURN_BYTES (1 * MiB)

struct QrdmaFabricPkt {
    QSIMPLEQ_ENTRY(QrdmaFabricPkt) next;
    QrdmaFabricPort *src;               /* NULL: queued again, not sent */
    QrdmaFabricPort *dst;
    QrdmaPkt pkt;
    QrdmaIter payload;
    uint8_t data[];
};

bool qrdma_fabric_pending(const QrdmaFabric *fabric)
{
    return fabric && !QSIMPLEQ_EMPTY(&fabric->queue);
}

bool qrdma_fabric_busy(const QrdmaFabricPort *port)
{
    return port->queued >= QRDMA_FABRIC_PORT_PKTS ||
           port->queued_bytes >= QRDMA_FABRIC_PORT_BYTES;
}

/*
 * The packet, its payload copied out of the sender's memory, on the
 * queue for dst; pkt->payload is put back where it was.  A payload that
 * cannot be read (the sender's memory went away) loses the packet, as the
 * wire does, and the engines' retries recover.
 */
static void qrdma_fabric_enqueue(QrdmaFabric *fabric, QrdmaCore *core,
                                 QrdmaFabricPort *src, QrdmaFabricPort *dst,
                                 QrdmaPkt *pkt)
{
    QrdmaFabricPkt *q = g_malloc(sizeof(*q) + pkt->paylen);

    q->src = src;
    q->dst = dst;
    if (!qrdma_pkt_keep(&q->pkt, &q->payload, q->data, pkt)) {
        core->counters.pkts_dropped++;
        trace_qrdma_fabric_lost(pkt->dqpn, pkt->opcode, pkt->psn);
        g_free(q);
        return;
    }
    if (src) {
        src->queued++;
        src->queued_bytes += pkt->paylen;
    }
    if (QSIMPLEQ_EMPTY(&fabric->queue) && !fabric->delivering) {
        qemu_bh_schedule(fabric->bh);
    }
    QSIMPLEQ_INSERT_TAIL(&fabric->queue, q, next);
}

/* q leaves the queue: its sender may send again. */
static void qrdma_fabric_unqueue(QrdmaFabric *fabric, QrdmaFabricPkt *q)
{
    QrdmaFabricPort *src = q->src;
    bool was_busy;

    QSIMPLEQ_REMOVE(&fabric->queue, q, QrdmaFabricPkt, next);
    if (!src) {
        return;
    }
    was_busy = qrdma_fabric_busy(src);
    src->queued--;
    src->queued_bytes -= q->pkt.paylen;
    if (was_busy && !qrdma_fabric_busy(src) && src->core->dp_bh) {
        qemu_bh_schedule(src->core->dp_bh);
    }
}

void qrdma_fabric_deliver(QrdmaFabric *fabric, uint64_t bytes)
{
    QrdmaFabricPkt *q;

    /* Packets queued by the engines it runs are taken by this loop. */
    if (!fabric || fabric->delivering || !runstate_is_running()) {
        return;
    }
    fabric->delivering = true;
    while (bytes && (q = QSIMPLEQ_FIRST(&fabric->queue))) {
        qrdma_fabric_unqueue(fabric, q);
        bytes -= MIN(bytes, MAX(q->pkt.paylen, 1));
        q->dst->rx(q->dst->core, &q->pkt);
        g_free(q);
    }
    fabric->delivering = false;
    if (!QSIMPLEQ_EMPTY(&fabric->queue)) {
        qemu_bh_schedule(fabric->bh);
    }
}

void qrdma_fabric_resume(QrdmaFabric *fabric)
{
    if (fabric && !QSIMPLEQ_EMPTY(&fabric->queue)) {
        qemu_bh_schedule(fabric->bh);
    }
}

static void qrdma_fabric_bh(void *opaque)
{
    qrdma_fabric_deliver(opaque, QRDMA_FABRIC_TURN_BYTES);
}

void qrdma_fabric_leave(QrdmaFabricPort *port)
{
    QrdmaFabric *fabric = port->fabric;
    QrdmaFabricPkt *q, *tmp;
    unsigned i;

    if (!fabric) {
        return;
    }
    for (i = 0; i < QRDMA_FABRIC_PORT_GIDS; i++) {
        qrdma_fabric_gid_unindex(port, i);
    }
    /* What it sent and what it has still to take are lost with it. */
    QSIMPLEQ_FOREACH_SAFE(q, &fabric->queue, next, tmp) {
        if (q->src == port || q->dst == port) {
            qrdma_fabric_unqueue(fabric, q);
            g_free(q);
        }
    }
    QLIST_REMOVE(port, next);
    port->fabric = NULL;
}

bool qrdma_fabric_owns_gid(const QrdmaCore *core, const uint8_t *gid)
{
    int i;

    for (i = 0; i < QRDMA_GID_TABLE_LEN; i++) {
        if (core->gid[i].type && !memcmp(core->gid[i].gid, gid, 16)) {
            return true;
        }
    }
    return false;
}

bool qrdma_fabric_route(QrdmaCore *core, QrdmaPkt *pkt)
{
    QrdmaFabricPort *src = &core->port;
    QrdmaFabric *fabric = src->fabric;
    QrdmaFabricPort *p;
    QrdmaFabricGid *g;

    if (!fabric) {
        return false;
    }
    if (qrdma_gid_is_mcast(pkt->dgid)) {
        QLIST_FOREACH(p, &fabric->members, next) {
            qrdma_fabric_enqueue(fabric, core, src, p, pkt);
        }
        return false;
    }
    g = g_hash_table_lookup(fabric->gids, pkt->dgid);
    if (!g) {
        return false;
    }
    qrdma_fabric_enqueue(fabric, core, src, g->holders->data, pkt);
    return true;
}

void qrdma_fabric_requeue(QrdmaFabricPort *port, QrdmaPkt *pkt)
{
    qrdma_fabric_enqueue(port->fabric, port->core, NULL, port, pkt);
}

static void qrdma_fabric_init(Object *obj)
{
    QrdmaFabric *fabric = QRDMA_FABRIC(obj);

    QLIST_INIT(&fabric->members);
    QSIMPLEQ_INIT(&fabric->queue);
    fabric->gids = g_hash_table_new_full(qrdma_gid_hash, qrdma_gid_equal,
                                         NULL, qrdma_fabric_gid_free);
}

static void qrdma_fabric_finalize(Object *obj)
{
    QrdmaFabric *fabric = QRDMA_FABRIC(obj);

    g_hash_table_destroy(fabric->gids);
}

static void qrdma_fabric_realize(DeviceState *dev, Error **errp)
{
    QrdmaFabric *fabric = QRDMA_FABRIC(dev);

    /* No guard: the fabric has no registers to re-enter. */
    fabric->bh = qemu_bh_new(qrdma_fabric_bh, fabric);
}

static void qrdma_fabric_unrealize(DeviceState *dev)
{
    QrdmaFabric *fabric = QRDMA_FABRIC(dev);

    /* Its members left first: the queue holds nothing. */
    assert(QSIMPLEQ_EMPTY(&fabric->queue));
    qemu_bh_delete(fabric->bh);
    fabric->bh = NULL;
}

static void qrdma_fabric_class_init(ObjectClass *oc, QrdmaClassData *data)
{
    DeviceClass *dc = DEVICE_CLASS(oc);

    set_bit(DEVICE_CATEGORY_NETWORK, dc->categories);
    dc->desc = "Loopback RDMA fabric linking qrdma functions";
    dc->realize = qrdma_fabric_realize;
    dc->unrealize = qrdma_fabric_unrealize;
    dc->hotpluggable = false;
}

static const TypeInfo qrdma_fabric_info = {
    .name = TYPE_QRDMA_FABRIC,
    .parent = TYPE_DEVICE,
    .instance_size = sizeof(QrdmaFabric),
    .instance_init = qrdma_fabric_init,
    .instance_finalize = qrdma_fabric_finalize,
    .class_init = qrdma_fabric_class_init,
};

static void qrdma_fabric_register_types(void)
{
    type_register_static(&qrdma_fabric_info);
}

type_init(qrdma_fabric_register_types)
