/*
 * QEMU qrdma: emulated RDMA (RoCEv2) NIC, the transport on the wire
 *
 * Copyright (c) 2026 The qrdma developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef HW_RDMA_QRDMA_WIRE_H
#define HW_RDMA_QRDMA_WIRE_H

#include "qrdma_xport.h"

/*
 * What carries a function's packets: the loopback fabric to the functions
 * of this QEMU that own the destination GID, RoCEv2 frames on the
 * Ethernet function's netdev to everyone else.
 */
extern const QrdmaTransportOps qrdma_wire_ops;

/* A packet of qp's, to the transport; it is counted and traced here. */
typedef struct QrdmaQp QrdmaQp;
void qrdma_xmit(QrdmaCore *core, QrdmaQp *qp, QrdmaPkt *pkt);

/*
 * A frame the netdev brought: true if it was a RoCEv2 frame for this
 * port, taken in (or dropped and counted if bad); false if it is for the
 * Ethernet function's rings.
 */
bool qrdma_wire_receive(QrdmaCore *core, const uint8_t *buf, size_t len);

#endif /* HW_RDMA_QRDMA_WIRE_H */
