/*
 * QEMU qrdma: emulated RDMA (RoCEv2) NIC, what carries the engines' packets
 *
 * Copyright (c) 2026 The qrdma developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef HW_RDMA_QRDMA_XPORT_H
#define HW_RDMA_QRDMA_XPORT_H

#include "qrdma_pkt.h"

typedef struct QrdmaCore QrdmaCore;

/*
 * The seam between the transport engines (requester, responder,
 * completer) and what carries their packets.  A transport gives a
 * packet's bytes to the function that owns its destination GID, which
 * takes it in through the receive function it joined with; a packet it
 * cannot deliver is lost, as on a wire, and the engines' timers recover.
 * The payload iterator is the sender's, positioned at the packet's first
 * byte, and valid only in the call: a transport reads the payload before
 * it returns, and the receiver takes the packet later, never inside the
 * sender's call (qrdma_dp.h: the engines), reading the transport's copy.
 */
typedef struct QrdmaTransportOps {
    const char *name;
    /* The payload bytes a burst (QrdmaPkt.npkts > 1) may carry; 0: none. */
    uint32_t max_burst;
    void (*xmit)(QrdmaCore *core, QrdmaPkt *pkt);
    /*
     * Whether what it carries is backed up, as a NIC's TX queue fills
     * when the link is slower than the host: the requester sends no more
     * until it is not, and the transport schedules the work list's
     * bottom half (core->dp_bh) when it drains.  NULL: never.
     */
    bool (*busy)(QrdmaCore *core);
} QrdmaTransportOps;

/* How a function takes in the packets a transport delivers to it. */
typedef void QrdmaRxFn(QrdmaCore *core, QrdmaPkt *pkt);

#endif /* HW_RDMA_QRDMA_XPORT_H */
