/*
 * QEMU qrdma: emulated RDMA (RoCEv2) NIC, the transport on the wire
 *
 * Copyright (c) 2026 The qrdma developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * Packets for a function of this QEMU go over the loopback fabric, as a
 * NIC loops back what is for itself; those for the function at the other
 * end of the same-host link, if it is up, go over the link
 * (qrdma_link.c); all others leave as RoCEv2 frames on
 * the netdev of the Ethernet function, a burst cut into packets of the
 * path MTU as a NIC's segmentation offload does.  Frames that come in
 * for one of the port's GIDs go to the engines; everything else stays
 * with the Ethernet function.
 */

#include "qemu/osdep.h"
#include "qemu/units.h"
#include "net/eth.h"
#include "net/net.h"
#include "qrdma.h"
#include "qrdma_dp.h"
#include "qrdma_link.h"
#include "qrdma_roce.h"
#include "qrdma_wire.h"
#include "trace.h"

/* The multicast MAC of a multicast GID: RFC 1112 for IPv4, 2464 for v6. */
static void qrdma_wire_mcast_mac(const uint8_t *gid, uint8_t *mac)
{
    if (gid[0] == 0xff) {
        mac[0] = mac[1] = 0x33;
        memcpy(mac + 2, gid + 12, 4);
    } else {
        mac[0] = 0x01;
        mac[1] = 0x00;
        mac[2] = 0x5e;
        mac[3] = gid[13] & 0x7f;
        mac[4] = gid[14];
        mac[5] = gid[15];
    }
}

/*
 * Frames the netdev may hold back before the requester waits: past the
 * first that the backend could not take at once (a socket full), the
 * rest of a burst, at most 1 MiB, and the answers of the responder.
 * Without this, a requester faster than the link piles frames into the
 * net layer, which drops them past its queue's limit, and the retries
 * that follow pile up more.
 */
#define QRDMA_WIRE_QUEUE_MAX 64

static void qrdma_wire_sent(NetClientState *nc, ssize_t len)
{
    QrdmaCore *core = qemu_get_nic_opaque(nc);

    assert(core->wire_queued);
    if (--core->wire_queued < QRDMA_WIRE_QUEUE_MAX && core->dp_bh) {
        qemu_bh_schedule(core->dp_bh);
    }
}

static bool qrdma_wire_busy(QrdmaCore *core)
{
    return core->wire_queued >= QRDMA_WIRE_QUEUE_MAX ||
           qrdma_fabric_busy(&core->port) || qrdma_link_busy(core);
}

static void qrdma_wire_frame(QrdmaCore *core, NetClientState *nc,
                             const QrdmaPkt *one, const QrdmaRoceLink *link)
{
    uint8_t frame[QRDMA_ROCE_FRAME_MAX];
    size_t len = qrdma_roce_encode(one, link, frame, sizeof(frame));

    if (!len) {
        /* The sender's memory went away under the packet: lost. */
        core->counters.pkts_dropped++;
        trace_qrdma_wire_tx_lost(one->dqpn, one->opcode, one->psn);
        return;
    }
    trace_qrdma_wire_tx(one->dqpn, one->opcode, one->psn, len);
    /* Held back (0): the net layer keeps a copy and calls back once sent. */
    if (!qemu_send_packet_async(nc, frame, len, qrdma_wire_sent)) {
        core->wire_queued++;
    }
}

/* A burst leaves as npkts frames, each of the MTU but the last. */
static void qrdma_wire_xmit_frames(QrdmaCore *core, NetClientState *nc,
                                   QrdmaPkt *pkt, const QrdmaRoceLink *link)
{
    uint32_t mtu = pkt->mtu ? pkt->mtu : 4096;
    uint32_t left = pkt->paylen;
    QrdmaPkt one = *pkt;
    uint32_t i;

    one.npkts = 1;
    for (i = 0; i < pkt->npkts; i++) {
        bool last = i + 1 == pkt->npkts;

        one.opcode = i == 0 ? pkt->opcode :
                     last ? pkt->last_opcode : qrdma_op_middle(pkt->opcode);
        one.psn = (pkt->psn + i) & QRDMA_PSN_MASK;
        one.paylen = last ? left : MIN(mtu, left);
        one.ack_req = last && pkt->ack_req;
        one.solicited = last && pkt->solicited;
        left -= one.paylen;
        qrdma_wire_frame(core, nc, &one, link);
    }
}

static void qrdma_wire_xmit(QrdmaCore *core, QrdmaPkt *pkt)
{
    NetClientState *nc;
    QrdmaRoceLink link;

    if (qrdma_fabric_route(core, pkt) || qrdma_link_route(core, pkt)) {
        return;
    }
    nc = core->eth.nic ? qemu_get_queue(core->eth.nic) : NULL;
    if (!nc || !nc->peer || nc->link_down) {
        trace_qrdma_wire_no_route(pkt->dqpn, pkt->opcode);
        return;
    }
    memcpy(link.smac, core->eth.conf.macaddr.a, 6);
    if (qrdma_gid_is_mcast(pkt->dgid)) {
        qrdma_wire_mcast_mac(pkt->dgid, link.dmac);
    } else {
        memcpy(link.dmac, pkt->dmac, 6);
    }
    link.vlan_id = pkt->vlan_id;
    link.pcp = pkt->traffic_class >> 5;
    link.sport = qrdma_roce_sport(pkt->flow_label, pkt->lqpn, pkt->dqpn);
    qrdma_wire_xmit_frames(core, nc, pkt, &link);
}

const QrdmaTransportOps qrdma_wire_ops = {
    .name = "wire",
    /*
     * The engines hand over bursts as large as the loopback takes; the
     * wire cuts them into frames, the payload read once, into the frame,
     * as the loopback reads it once into the packet it queues.
     */
    .max_burst = 1 * MiB,
    .xmit = qrdma_wire_xmit,
    .busy = qrdma_wire_busy,
};

void qrdma_xmit(QrdmaCore *core, QrdmaQp *qp, QrdmaPkt *pkt)
{
    pkt->lqpn = qp->qpn;
    pkt->mtu = qrdma_qp_mtu(qp);
    core->counters.pkts_sent += pkt->npkts;
    trace_qrdma_pkt_xmit(qp->qpn, pkt->dqpn, pkt->opcode, pkt->psn,
                         pkt->paylen);
    core->xport->xmit(core, pkt);
}

/* A frame for this port's MAC, or for a group. */
static bool qrdma_wire_for_us(QrdmaCore *core, const uint8_t *buf)
{
    return (buf[0] & 1) || !memcmp(buf, core->eth.conf.macaddr.a, 6);
}

/*
 * Whether a UD packet came from the wire a moment ago already: a network
 * that repeats a frame.  UD does not check PSNs, and the specification
 * leaves such a repeat to the consumer; qrdma hands each datagram over at
 * most once, as consumers of UD on a real fabric expect.  A packet is
 * known by its PSN and its ICRC, which covers the GIDs, both QPNs and the
 * payload; a repeat is one within 100 ms among the last 4 of its set
 * (of 64), so that a look costs the same however many datagrams come.  A
 * consumer that sends the same datagram again after a timeout of its own
 * (a MAD retried, with the same PSN on a sender that keeps it) is not held
 * back.
 */
#define QRDMA_UD_SEEN_NS (100 * SCALE_MS)

static bool qrdma_wire_ud_seen(QrdmaCore *core, uint32_t psn, uint32_t icrc)
{
    uint64_t key = (uint64_t)psn << 32 | icrc;
    int64_t now = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
    QrdmaUdSeen *set = &core->ud_seen[((key * core->ud_seen_salt) >>
                                       (64 - QRDMA_UD_SEEN_SET_BITS)) *
                                      QRDMA_UD_SEEN_WAYS];
    QrdmaUdSeen *oldest = set;
    int i;

    for (i = 0; i < QRDMA_UD_SEEN_WAYS; i++) {
        QrdmaUdSeen *e = &set[i];

        if (e->when && e->key == key && now - e->when < QRDMA_UD_SEEN_NS) {
            return true;
        }
        if (e->when < oldest->when) {
            oldest = e;
        }
    }
    oldest->key = key;
    oldest->when = now ? now : 1;
    return false;
}

bool qrdma_wire_receive(QrdmaCore *core, const uint8_t *buf, size_t len)
{
    QrdmaRoceFrame f;
    QrdmaPkt pkt = { };
    QrdmaIter payload;
    const char *why;
    QrdmaRoceRx rx;

    if (len < ETH_HLEN || !qrdma_wire_for_us(core, buf)) {
        return false;
    }
    rx = qrdma_roce_parse_ip(buf, len, &f, &pkt, &why);
    if (rx == QRDMA_ROCE_RX_NOT_ROCE) {
        return false;
    }
    if (rx == QRDMA_ROCE_RX_OK) {
        if (!qrdma_gid_is_mcast(pkt.dgid) &&
            !qrdma_fabric_owns_gid(core, pkt.dgid)) {
            /* Someone else's RoCE, e.g. rxe on the guest's netdev. */
            return false;
        }
        rx = qrdma_roce_parse_ib(&f, &pkt, &payload, &why);
    }
    if (rx == QRDMA_ROCE_RX_OK && qrdma_gid_is_mcast(pkt.dgid) &&
        pkt.dqpn != QRDMA_MULTICAST_QPN) {
        /* Only the multicast QPN addresses a group. */
        rx = QRDMA_ROCE_RX_BAD_BTH;
        why = "multicast GID with a unicast destination QPN";
    }
    if (rx == QRDMA_ROCE_RX_OK &&
        QRDMA_OP_TRANSPORT(pkt.opcode) == QRDMA_OP_UD &&
        qrdma_wire_ud_seen(core, pkt.psn,
                           ldl_le_p(f.l3 + f.l3_len + f.l4_len - 4))) {
        core->counters.ud_duplicates++;
        core->counters.dup_reqs++;
        trace_qrdma_wire_rx_dropped("UD packet repeated", len);
        return true;
    }
    switch (rx) {
    case QRDMA_ROCE_RX_OK:
        core->port.rx(core, &pkt);
        return true;
    case QRDMA_ROCE_RX_BAD_ICRC:
        core->counters.icrc_errors++;
        break;
    default:
        core->counters.wire_malformed++;
        break;
    }
    trace_qrdma_wire_rx_dropped(why, len);
    return true;
}
