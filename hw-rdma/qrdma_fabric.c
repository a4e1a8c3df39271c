/*
 * QEMU qrdma: the loopback fabric that links qrdma functions of one QEMU
 *
 * Copyright (c) 2026 The qrdma developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/module.h"
#include "hw/qdev-core.h"
#include "qrdma.h"
#include "qrdma-qemu-compat.h"
#include "qrdma_fabric.h"
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
    trace_qrdma_fabric_join(id ? id : "(default)");
}

void qrdma_fabric_leave(QrdmaFabricPort *port)
{
    if (port->fabric) {
        QLIST_REMOVE(port, next);
        port->fabric = NULL;
    }
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

/*
 * To several receivers: each reads the payload from where the sender left
 * it, the iterator put back after every delivery.
 */
static void qrdma_fabric_deliver(QrdmaFabricPort *port, QrdmaPkt *pkt)
{
    QrdmaIter saved;

    if (!pkt->payload) {
        port->rx(port->core, pkt);
        return;
    }
    saved = *pkt->payload;
    port->rx(port->core, pkt);
    *pkt->payload = saved;
}

bool qrdma_fabric_route(QrdmaCore *core, QrdmaPkt *pkt)
{
    QrdmaFabric *fabric = core->port.fabric;
    QrdmaFabricPort *p;

    if (!fabric) {
        return false;
    }
    if (qrdma_gid_is_mcast(pkt->dgid)) {
        QLIST_FOREACH(p, &fabric->members, next) {
            qrdma_fabric_deliver(p, pkt);
        }
        return false;
    }
    QLIST_FOREACH(p, &fabric->members, next) {
        if (qrdma_fabric_owns_gid(p->core, pkt->dgid)) {
            /* One receiver: it may move the payload iterator as it reads. */
            p->rx(p->core, pkt);
            return true;
        }
    }
    return false;
}

static void qrdma_fabric_init(Object *obj)
{
    QLIST_INIT(&QRDMA_FABRIC(obj)->members);
}

static void qrdma_fabric_class_init(ObjectClass *oc, QrdmaClassData *data)
{
    DeviceClass *dc = DEVICE_CLASS(oc);

    set_bit(DEVICE_CATEGORY_NETWORK, dc->categories);
    dc->desc = "Loopback RDMA fabric linking qrdma functions";
    dc->hotpluggable = false;
}

static const TypeInfo qrdma_fabric_info = {
    .name = TYPE_QRDMA_FABRIC,
    .parent = TYPE_DEVICE,
    .instance_size = sizeof(QrdmaFabric),
    .instance_init = qrdma_fabric_init,
    .class_init = qrdma_fabric_class_init,
};

static void qrdma_fabric_register_types(void)
{
    type_register_static(&qrdma_fabric_info);
}

type_init(qrdma_fabric_register_types)
