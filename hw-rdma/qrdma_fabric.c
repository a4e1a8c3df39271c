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
#include "qrdma.h"
#include "qrdma_fabric.h"
#include "trace.h"

QrdmaFabric *qrdma_fabric_default(void)
{
    static QrdmaFabric *fabric;

    if (!fabric) {
        fabric = QRDMA_FABRIC(object_new(TYPE_QRDMA_FABRIC));
    }
    return fabric;
}

void qrdma_fabric_join(QrdmaFabric *fabric, QrdmaCore *core)
{
    const char *id = object_get_canonical_path_component(OBJECT(fabric));

    core->fabric = fabric;
    QLIST_INSERT_HEAD(&fabric->members, core, fabric_next);
    trace_qrdma_fabric_join(id ? id : "(default)");
}

void qrdma_fabric_leave(QrdmaCore *core)
{
    if (core->fabric) {
        QLIST_REMOVE(core, fabric_next);
        core->fabric = NULL;
    }
}

QrdmaQp *qrdma_fabric_find_qp(QrdmaFabric *fabric, const uint8_t *dgid,
                              uint32_t qpn, QrdmaCore **dst_core)
{
    QrdmaCore *c;
    int i, idx;

    QRDMA_FABRIC_FOREACH_MEMBER(c, fabric) {
        for (i = 0; i < QRDMA_GID_TABLE_LEN; i++) {
            if (c->gid[i].type && !memcmp(c->gid[i].gid, dgid, 16)) {
                idx = qrdma_table_lookup(&c->qp_table, qpn);
                if (idx < 0) {
                    return NULL;
                }
                *dst_core = c;
                return &c->qp[idx];
            }
        }
    }
    return NULL;
}

static void qrdma_fabric_init(Object *obj)
{
    QLIST_INIT(&QRDMA_FABRIC(obj)->members);
}

static void qrdma_fabric_class_init(ObjectClass *oc, void *data)
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
