/*
 * QEMU qrdma: emulated RDMA (RoCEv2) NIC, the RoCEv2 frame format
 *
 * Copyright (c) 2026 The qrdma developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * One packet in one frame, as the InfiniBand specification's RoCEv2 annex
 * (A17) lays it out: Ethernet, IPv4 or IPv6 (by the GID: an IPv4-mapped
 * one is IPv4), UDP to port 4791, the BTH and the extended headers the
 * opcode carries, the payload padded to 4 bytes, and the invariant CRC.
 * docs/specs/qrdma.rst, "RoCEv2 on the wire", gives the choices the annex
 * leaves open.
 */

#include "qemu/osdep.h"
#include "net/eth.h"
#include "net/checksum.h"
#include <zlib.h>
#include "qrdma_roce.h"

#define ETH_TYPE_VLAN           0x8100
#define IPV4_HLEN               20
#define IPV6_HLEN               40
#define UDP_HLEN                8
#define BTH_LEN                 12
#define ICRC_LEN                4
#define IPV4_DF                 0x4000
#define IPV4_FRAG_MASK          0x3fff      /* MF and the fragment offset */

/* The BTH's second byte. */
#define BTH_SE                  0x80
#define BTH_PAD_SHIFT           4
#define BTH_PAD_MASK            0x30
#define BTH_TVER_MASK           0x0f
#define BTH_ACKREQ              0x80

/*
 * The ICRC starts over 8 bytes of ones, which stand for the LRH a RoCEv2
 * packet does not have, and leaves out (counts as ones) what routers
 * change: IPv4's TOS, TTL and checksum, IPv6's traffic class, flow label
 * and hop limit, the UDP checksum, and the BTH's reserved byte that
 * carries FECN and BECN.
 */
static const uint8_t icrc_lrh[8] = {
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
};

static uint32_t qrdma_roce_icrc(const uint8_t *l3, size_t l3_len,
                                size_t len, bool v4)
{
    uint8_t hdr[IPV6_HLEN + UDP_HLEN + BTH_LEN];
    size_t hlen = l3_len + UDP_HLEN + BTH_LEN;
    uint32_t crc;

    memcpy(hdr, l3, hlen);
    if (v4) {
        hdr[1] = 0xff;                          /* TOS */
        hdr[8] = 0xff;                          /* TTL */
        hdr[10] = hdr[11] = 0xff;               /* header checksum */
    } else {
        hdr[0] |= 0x0f;                         /* traffic class, */
        memset(hdr + 1, 0xff, 3);               /* flow label */
        hdr[7] = 0xff;                          /* hop limit */
    }
    hdr[l3_len + 6] = hdr[l3_len + 7] = 0xff;   /* UDP checksum */
    hdr[l3_len + UDP_HLEN + 4] = 0xff;          /* BTH resv8a */

    crc = crc32(0, icrc_lrh, sizeof(icrc_lrh));
    crc = crc32(crc, hdr, hlen);
    return crc32(crc, l3 + hlen, len - hlen);
}

/* A GID that maps an IPv4 address: ::ffff:a.b.c.d. */
static bool qrdma_roce_gid_v4(const uint8_t *gid)
{
    static const uint8_t v4_prefix[12] = { [10] = 0xff, [11] = 0xff };

    return !memcmp(gid, v4_prefix, sizeof(v4_prefix));
}

uint16_t qrdma_roce_sport(uint32_t flow_label, uint32_t lqpn, uint32_t rqpn)
{
    uint32_t fl = flow_label & 0xfffff;

    if (!fl) {
        uint64_t v = (uint64_t)lqpn * rqpn;

        v ^= v >> 20;
        v ^= v >> 40;
        fl = v & 0xfffff;
    }
    /* 14 bits of entropy folded from 20, in the range 0xc000-0xffff. */
    return ((fl & 0x3fff) ^ (fl >> 14)) | 0xc000;
}

/* The bytes of the extended headers an opcode carries. */
static size_t qrdma_roce_ext_len(uint8_t opcode, uint32_t flags)
{
    size_t len = 0;

    if (QRDMA_OP_TRANSPORT(opcode) == QRDMA_OP_UD) {
        len += 8;                               /* DETH */
    }
    if ((opcode & 0x1f) == QRDMA_OP_FLUSH) {
        len += 4;                               /* FETH */
    }
    if (flags & QRDMA_OPF_RETH) {
        len += 16;
    }
    if (flags & QRDMA_OPF_ATOMIC) {
        len += 28;                              /* AtomicETH */
    }
    if (flags & QRDMA_OPF_AETH) {
        len += 4;
    }
    if ((opcode & 0x1f) == QRDMA_OP_ATOMIC_ACK) {
        len += 8;                               /* AtomicAckETH */
    }
    if (flags & (QRDMA_OPF_IMM | QRDMA_OPF_IETH)) {
        len += 4;
    }
    return len;
}

/* The payload bytes an opcode carries in a frame but not in a QrdmaPkt. */
static size_t qrdma_roce_inline_len(uint8_t opcode)
{
    return (opcode & 0x1f) == QRDMA_OP_ATOMIC_WRITE ? 8 : 0;
}

static uint8_t *qrdma_roce_put_ext(const QrdmaPkt *pkt, uint32_t flags,
                                   uint8_t *p)
{
    if (QRDMA_OP_TRANSPORT(pkt->opcode) == QRDMA_OP_UD) {
        stl_be_p(p, pkt->qkey);
        stl_be_p(p + 4, pkt->sqpn & QRDMA_PSN_MASK);
        p += 8;
    }
    if ((pkt->opcode & 0x1f) == QRDMA_OP_FLUSH) {
        stl_be_p(p, (pkt->flush_level & 3) << 4 | (pkt->flush_type & 0xf));
        p += 4;
    }
    if (flags & QRDMA_OPF_RETH) {
        stq_be_p(p, pkt->va);
        stl_be_p(p + 8, pkt->rkey);
        stl_be_p(p + 12, pkt->dma_len);
        p += 16;
    }
    if (flags & QRDMA_OPF_ATOMIC) {
        stq_be_p(p, pkt->va);
        stl_be_p(p + 8, pkt->rkey);
        stq_be_p(p + 12, pkt->swap_add);
        stq_be_p(p + 20, pkt->compare);
        p += 28;
    }
    if (flags & QRDMA_OPF_AETH) {
        stl_be_p(p, (uint32_t)pkt->syndrome << 24 |
                    (pkt->msn & QRDMA_PSN_MASK));
        p += 4;
    }
    if ((pkt->opcode & 0x1f) == QRDMA_OP_ATOMIC_ACK) {
        stq_be_p(p, pkt->orig);
        p += 8;
    }
    if (flags & QRDMA_OPF_IMM) {
        /* The consumer's bytes, already in network order. */
        memcpy(p, &pkt->imm, 4);
        p += 4;
    } else if (flags & QRDMA_OPF_IETH) {
        stl_be_p(p, le32_to_cpu(pkt->imm));
        p += 4;
    }
    return p;
}

/* Ethernet, with a VLAN tag if there is one; returns where L3 starts. */
static uint8_t *qrdma_roce_put_eth(const QrdmaRoceLink *link, bool v4,
                                   uint8_t *p)
{
    memcpy(p, link->dmac, 6);
    memcpy(p + 6, link->smac, 6);
    p += 12;
    if (link->vlan_id != QRDMA_VLAN_NONE) {
        stw_be_p(p, ETH_TYPE_VLAN);
        stw_be_p(p + 2, (uint16_t)(link->pcp & 7) << 13 |
                        (link->vlan_id & 0xfff));
        p += 4;
    }
    stw_be_p(p, v4 ? ETH_P_IP : ETH_P_IPV6);
    return p + 2;
}

static void qrdma_roce_put_ip(const QrdmaPkt *pkt, bool v4, size_t l4_len,
                              uint8_t *p)
{
    if (v4) {
        p[0] = 0x45;
        p[1] = pkt->traffic_class;
        stw_be_p(p + 2, IPV4_HLEN + l4_len);
        stw_be_p(p + 4, 0);
        stw_be_p(p + 6, IPV4_DF);
        p[8] = pkt->hop_limit;
        p[9] = IP_PROTO_UDP;
        stw_be_p(p + 10, 0);
        memcpy(p + 12, pkt->sgid + 12, 4);
        memcpy(p + 16, pkt->dgid + 12, 4);
        stw_be_p(p + 10, net_raw_checksum(p, IPV4_HLEN));
    } else {
        stl_be_p(p, 6u << 28 | (uint32_t)pkt->traffic_class << 20 |
                    (pkt->flow_label & 0xfffff));
        stw_be_p(p + 4, l4_len);
        p[6] = IP_PROTO_UDP;
        p[7] = pkt->hop_limit;
        memcpy(p + 8, pkt->sgid, 16);
        memcpy(p + 24, pkt->dgid, 16);
    }
}

/* IPv6 requires it; IPv4 goes without, as rxe and RoCE NICs send. */
static void qrdma_roce_udp6_csum(uint8_t *l3, size_t l4_len)
{
    uint8_t *udp = l3 + IPV6_HLEN;
    uint32_t sum;

    sum = net_checksum_add(32, l3 + 8);
    sum += l4_len + IP_PROTO_UDP;
    sum += net_checksum_add(l4_len, udp);
    stw_be_p(udp + 6, net_checksum_finish_nozero(sum));
}

size_t qrdma_roce_encode(const QrdmaPkt *pkt, const QrdmaRoceLink *link,
                         uint8_t *buf, size_t size)
{
    uint32_t flags = qrdma_op_flags(pkt->opcode);
    bool v4 = qrdma_roce_gid_v4(pkt->dgid);
    size_t l3_len = v4 ? IPV4_HLEN : IPV6_HLEN;
    size_t data = pkt->paylen + qrdma_roce_inline_len(pkt->opcode);
    size_t pad = -data & 3;
    size_t l4_len = UDP_HLEN + BTH_LEN +
                    qrdma_roce_ext_len(pkt->opcode, flags) + data + pad +
                    ICRC_LEN;
    uint8_t *l3, *udp, *p;
    QrdmaIter dst;

    if (18 + l3_len + l4_len > size) {
        return 0;
    }
    l3 = qrdma_roce_put_eth(link, v4, buf);
    qrdma_roce_put_ip(pkt, v4, l4_len, l3);
    udp = l3 + l3_len;
    stw_be_p(udp, link->sport);
    stw_be_p(udp + 2, QRDMA_ROCE_UDP_PORT);
    stw_be_p(udp + 4, l4_len);
    stw_be_p(udp + 6, 0);

    p = udp + UDP_HLEN;
    p[0] = pkt->opcode;
    p[1] = (pkt->solicited ? BTH_SE : 0) | pad << BTH_PAD_SHIFT;
    stw_be_p(p + 2, pkt->pkey);
    stl_be_p(p + 4, pkt->dqpn & QRDMA_PSN_MASK);
    stl_be_p(p + 8, (pkt->ack_req ? (uint32_t)BTH_ACKREQ << 24 : 0) |
                    (pkt->psn & QRDMA_PSN_MASK));
    p = qrdma_roce_put_ext(pkt, flags, p + BTH_LEN);

    if (qrdma_roce_inline_len(pkt->opcode)) {
        memcpy(p, &pkt->atomic_data, 8);
    } else if (pkt->paylen) {
        qrdma_iter_host(&dst, p, pkt->paylen);
        if (qrdma_copy(pkt->payload, &dst, pkt->paylen) != QRDMA_COPY_OK) {
            return 0;
        }
    }
    p += data;
    memset(p, 0, pad);
    p += pad;
    /* The ICRC leaves the UDP checksum out; the checksum covers it. */
    stl_le_p(p, qrdma_roce_icrc(l3, l3_len, p - l3, v4));
    if (!v4) {
        qrdma_roce_udp6_csum(l3, l4_len);
    }
    return p + ICRC_LEN - buf;
}

/* Decoding */

/*
 * The IPv4 header of a frame.  Only a datagram to UDP port 4791 is looked
 * at closer: anything else, well formed or not, is the netdev's.
 */
static QrdmaRoceRx qrdma_roce_ipv4(const uint8_t *p, size_t len,
                                   QrdmaRoceFrame *f, QrdmaPkt *pkt,
                                   const char **why)
{
    size_t ihl = (p[0] & 0xf) * 4, total;

    if (len < IPV4_HLEN || p[0] >> 4 != 4 || ihl < IPV4_HLEN ||
        p[9] != IP_PROTO_UDP || lduw_be_p(p + 6) & 0x1fff ||
        len < ihl + UDP_HLEN ||
        lduw_be_p(p + ihl + 2) != QRDMA_ROCE_UDP_PORT) {
        return QRDMA_ROCE_RX_NOT_ROCE;
    }
    total = lduw_be_p(p + 2);
    if (ihl != IPV4_HLEN) {
        *why = "IPv4 options";
        return QRDMA_ROCE_RX_MALFORMED;
    }
    if (total < IPV4_HLEN + UDP_HLEN || total > len) {
        *why = "IPv4 total length beyond the frame";
        return QRDMA_ROCE_RX_MALFORMED;
    }
    if (lduw_be_p(p + 6) & IPV4_FRAG_MASK) {
        *why = "IPv4 fragment";
        return QRDMA_ROCE_RX_MALFORMED;
    }
    if (net_raw_checksum((uint8_t *)p, IPV4_HLEN)) {
        *why = "IPv4 header checksum";
        return QRDMA_ROCE_RX_MALFORMED;
    }
    f->v4 = true;
    f->l3_len = IPV4_HLEN;
    f->l4_len = total - IPV4_HLEN;
    pkt->traffic_class = p[1];
    pkt->hop_limit = p[8];
    pkt->flow_label = 0;
    memset(pkt->sgid, 0, 16);
    pkt->sgid[10] = pkt->sgid[11] = 0xff;
    memcpy(pkt->dgid, pkt->sgid, 12);
    memcpy(pkt->sgid + 12, p + 12, 4);
    memcpy(pkt->dgid + 12, p + 16, 4);
    return QRDMA_ROCE_RX_OK;
}

/* The IPv6 header of a frame, UDP to 4791 straight after it. */
static QrdmaRoceRx qrdma_roce_ipv6(const uint8_t *p, size_t len,
                                   QrdmaRoceFrame *f, QrdmaPkt *pkt,
                                   const char **why)
{
    uint32_t w;

    if (len < IPV6_HLEN + UDP_HLEN || p[0] >> 4 != 6 ||
        p[6] != IP_PROTO_UDP ||
        lduw_be_p(p + IPV6_HLEN + 2) != QRDMA_ROCE_UDP_PORT) {
        return QRDMA_ROCE_RX_NOT_ROCE;
    }
    w = ldl_be_p(p);
    f->v4 = false;
    f->l3_len = IPV6_HLEN;
    f->l4_len = lduw_be_p(p + 4);
    if (f->l4_len > len - IPV6_HLEN) {
        *why = "IPv6 payload length beyond the frame";
        return QRDMA_ROCE_RX_MALFORMED;
    }
    pkt->traffic_class = w >> 20;
    pkt->flow_label = w & 0xfffff;
    pkt->hop_limit = p[7];
    memcpy(pkt->sgid, p + 8, 16);
    memcpy(pkt->dgid, p + 24, 16);
    return QRDMA_ROCE_RX_OK;
}

/* Ethernet and IP: where UDP starts, if the frame is IP carrying UDP. */
static QrdmaRoceRx qrdma_roce_l3(const uint8_t *buf, size_t len,
                                 QrdmaRoceFrame *f, QrdmaPkt *pkt,
                                 const char **why)
{
    size_t off = 12;
    uint16_t type;

    if (len < ETH_HLEN) {
        return QRDMA_ROCE_RX_NOT_ROCE;
    }
    type = lduw_be_p(buf + off);
    pkt->vlan_id = QRDMA_VLAN_NONE;
    if (type == ETH_TYPE_VLAN) {
        off += 4;
        if (len < off + 2) {
            return QRDMA_ROCE_RX_NOT_ROCE;
        }
        pkt->vlan_id = lduw_be_p(buf + off - 2) & 0xfff;
        type = lduw_be_p(buf + off);
    }
    off += 2;
    f->l3 = buf + off;
    switch (type) {
    case ETH_P_IP:
        return qrdma_roce_ipv4(buf + off, len - off, f, pkt, why);
    case ETH_P_IPV6:
        return qrdma_roce_ipv6(buf + off, len - off, f, pkt, why);
    default:
        return QRDMA_ROCE_RX_NOT_ROCE;
    }
}

static void qrdma_roce_get_ext(QrdmaPkt *pkt, uint32_t flags,
                               const uint8_t *p)
{
    if (QRDMA_OP_TRANSPORT(pkt->opcode) == QRDMA_OP_UD) {
        pkt->qkey = ldl_be_p(p);
        pkt->sqpn = ldl_be_p(p + 4) & QRDMA_PSN_MASK;
        p += 8;
    }
    if ((pkt->opcode & 0x1f) == QRDMA_OP_FLUSH) {
        uint32_t feth = ldl_be_p(p);

        pkt->flush_type = feth & 0xf;
        pkt->flush_level = (feth >> 4) & 3;
        p += 4;
    }
    if (flags & QRDMA_OPF_RETH) {
        pkt->va = ldq_be_p(p);
        pkt->rkey = ldl_be_p(p + 8);
        pkt->dma_len = ldl_be_p(p + 12);
        p += 16;
    }
    if (flags & QRDMA_OPF_ATOMIC) {
        pkt->va = ldq_be_p(p);
        pkt->rkey = ldl_be_p(p + 8);
        pkt->swap_add = ldq_be_p(p + 12);
        pkt->compare = ldq_be_p(p + 20);
        p += 28;
    }
    if (flags & QRDMA_OPF_AETH) {
        uint32_t aeth = ldl_be_p(p);

        pkt->syndrome = aeth >> 24;
        pkt->msn = aeth & QRDMA_PSN_MASK;
        p += 4;
    }
    if ((pkt->opcode & 0x1f) == QRDMA_OP_ATOMIC_ACK) {
        pkt->orig = ldq_be_p(p);
        p += 8;
    }
    if (flags & QRDMA_OPF_IMM) {
        memcpy(&pkt->imm, p, 4);
    } else if (flags & QRDMA_OPF_IETH) {
        pkt->imm = cpu_to_le32(ldl_be_p(p));
    }
}

/*
 * The BTH, the extended headers and the payload of a UDP datagram to
 * 4791 of l4_len bytes, its ICRC already checked.
 */
static QrdmaRoceRx qrdma_roce_transport(const uint8_t *udp, size_t l4_len,
                                        QrdmaPkt *pkt, QrdmaIter *payload,
                                        const char **why)
{
    const uint8_t *bth = udp + UDP_HLEN;
    uint32_t flags = qrdma_op_flags(bth[0]);
    size_t hlen, pad, data, inl;

    pkt->opcode = bth[0];
    if (!flags) {
        *why = "unknown BTH opcode";
        return QRDMA_ROCE_RX_BAD_BTH;
    }
    if (bth[1] & BTH_TVER_MASK) {
        *why = "BTH transport header version not 0";
        return QRDMA_ROCE_RX_BAD_BTH;
    }
    pkt->pkey = lduw_be_p(bth + 2);
    if ((pkt->pkey & 0x7fff) != 0x7fff) {
        *why = "P_Key not the default partition's";
        return QRDMA_ROCE_RX_BAD_BTH;
    }
    hlen = UDP_HLEN + BTH_LEN + qrdma_roce_ext_len(pkt->opcode, flags);
    pad = (bth[1] & BTH_PAD_MASK) >> BTH_PAD_SHIFT;
    inl = qrdma_roce_inline_len(pkt->opcode);
    if (l4_len < hlen + pad + ICRC_LEN) {
        *why = "shorter than the headers its opcode carries";
        return QRDMA_ROCE_RX_MALFORMED;
    }
    data = l4_len - hlen - pad - ICRC_LEN;
    if (inl ? data != inl : (data && !(flags & QRDMA_OPF_PAYLOAD))) {
        *why = "payload where its opcode carries none, or of a wrong size";
        return QRDMA_ROCE_RX_MALFORMED;
    }
    pkt->npkts = 1;
    pkt->last_opcode = pkt->opcode;
    pkt->solicited = bth[1] & BTH_SE;
    pkt->dqpn = ldl_be_p(bth + 4) & QRDMA_PSN_MASK;
    pkt->ack_req = bth[8] & BTH_ACKREQ;
    pkt->psn = ldl_be_p(bth + 8) & QRDMA_PSN_MASK;
    qrdma_roce_get_ext(pkt, flags, bth + BTH_LEN);
    if (inl) {
        memcpy(&pkt->atomic_data, udp + hlen, 8);
        data = 0;
    }
    pkt->paylen = data;
    pkt->payload = NULL;
    if (data) {
        qrdma_iter_host(payload, udp + hlen, data);
        pkt->payload = payload;
    }
    return QRDMA_ROCE_RX_OK;
}

QrdmaRoceRx qrdma_roce_parse_ip(const uint8_t *buf, size_t len,
                                QrdmaRoceFrame *f, QrdmaPkt *pkt,
                                const char **why)
{
    QrdmaRoceRx rx;

    *why = NULL;
    rx = qrdma_roce_l3(buf, len, f, pkt, why);
    if (rx != QRDMA_ROCE_RX_OK) {
        return rx;
    }
    if (lduw_be_p(f->l3 + f->l3_len + 4) != f->l4_len) {
        *why = "UDP length differs from the IP header's";
        return QRDMA_ROCE_RX_MALFORMED;
    }
    if (f->l4_len < UDP_HLEN + BTH_LEN + ICRC_LEN) {
        *why = "shorter than a BTH and an ICRC";
        return QRDMA_ROCE_RX_MALFORMED;
    }
    return QRDMA_ROCE_RX_OK;
}

QrdmaRoceRx qrdma_roce_parse_ib(const QrdmaRoceFrame *f, QrdmaPkt *pkt,
                                QrdmaIter *payload, const char **why)
{
    size_t end = f->l3_len + f->l4_len - ICRC_LEN;

    if (ldl_le_p(f->l3 + end) != qrdma_roce_icrc(f->l3, f->l3_len, end,
                                                  f->v4)) {
        *why = "ICRC";
        return QRDMA_ROCE_RX_BAD_ICRC;
    }
    return qrdma_roce_transport(f->l3 + f->l3_len, f->l4_len, pkt, payload,
                                why);
}
