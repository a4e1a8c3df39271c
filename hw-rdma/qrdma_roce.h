/*
 * QEMU qrdma: emulated RDMA (RoCEv2) NIC, the RoCEv2 frame format
 *
 * Copyright (c) 2026 The qrdma developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef HW_RDMA_QRDMA_ROCE_H
#define HW_RDMA_QRDMA_ROCE_H

#include "qrdma_pkt.h"

#define QRDMA_ROCE_UDP_PORT             4791

/*
 * The largest frame of one packet: Ethernet with a VLAN tag, IPv6, UDP,
 * BTH and the longest extended headers (RETH and ImmDt), 4096 bytes of
 * payload, pad and ICRC.
 */
#define QRDMA_ROCE_FRAME_MAX            (18 + 40 + 8 + 12 + 20 + 4096 + 3 + 4)

/* What a frame carries that the packet does not: its link layer. */
typedef struct QrdmaRoceLink {
    uint8_t smac[6];
    uint8_t dmac[6];
    uint16_t vlan_id;                   /* QRDMA_VLAN_NONE for none */
    uint8_t pcp;                        /* the tag's priority */
    uint16_t sport;                     /* UDP source port */
} QrdmaRoceLink;

/*
 * The frame of one packet (npkts 1), its payload read from pkt->payload,
 * which moves on.  Returns its length, or 0 when the payload cannot be
 * read or the frame does not fit in size bytes.
 */
size_t qrdma_roce_encode(const QrdmaPkt *pkt, const QrdmaRoceLink *link,
                         uint8_t *buf, size_t size);

typedef enum QrdmaRoceRx {
    QRDMA_ROCE_RX_OK,
    QRDMA_ROCE_RX_NOT_ROCE,             /* not UDP to 4791: for the netdev */
    QRDMA_ROCE_RX_MALFORMED,            /* headers short or inconsistent */
    QRDMA_ROCE_RX_BAD_BTH,              /* opcode, version, P_Key, pad */
    QRDMA_ROCE_RX_BAD_ICRC,
} QrdmaRoceRx;

/* Where a received frame's IP header and UDP datagram are. */
typedef struct QrdmaRoceFrame {
    const uint8_t *l3;
    size_t l3_len;
    size_t l4_len;                      /* UDP header to ICRC, both in */
    bool v4;
} QrdmaRoceFrame;

/*
 * The first half of decoding a received frame: its Ethernet, IP and UDP
 * headers.  QRDMA_ROCE_RX_OK for a UDP datagram to port 4791 whose
 * headers hold together, the GIDs and the network header's fields in pkt;
 * *why says what is wrong with one that is malformed.
 */
QrdmaRoceRx qrdma_roce_parse_ip(const uint8_t *buf, size_t len,
                                QrdmaRoceFrame *f, QrdmaPkt *pkt,
                                const char **why);

/*
 * The second half, for a packet the port takes: the ICRC, the BTH and the
 * extended headers into pkt, and its payload, an iterator over the frame
 * that *payload is made into.
 */
QrdmaRoceRx qrdma_roce_parse_ib(const QrdmaRoceFrame *f, QrdmaPkt *pkt,
                                QrdmaIter *payload, const char **why);

/*
 * The UDP source port of a flow, as Linux picks it for RoCEv2: from the
 * flow label, or one made of both QP numbers when there is none, so that
 * both directions of a connection hash alike.
 */
uint16_t qrdma_roce_sport(uint32_t flow_label, uint32_t lqpn, uint32_t rqpn);

#endif /* HW_RDMA_QRDMA_ROCE_H */
