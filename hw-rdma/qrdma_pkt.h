/*
 * QEMU qrdma: emulated RDMA (RoCEv2) NIC, the packets between the engines
 *
 * Copyright (c) 2026 The qrdma developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef HW_RDMA_QRDMA_PKT_H
#define HW_RDMA_QRDMA_PKT_H

#include "qrdma_sgl.h"

/*
 * BTH opcodes, as the InfiniBand specification numbers them: the transport
 * in bits 7:5 (RC 0, UC 1, UD 3), the operation in bits 4:0.
 */
#define QRDMA_OP_RC                     0x00
#define QRDMA_OP_UC                     0x20
#define QRDMA_OP_UD                     0x60
#define QRDMA_OP_TRANSPORT(op)          ((op) & 0xe0)

#define QRDMA_OP_SEND_FIRST             0x00
#define QRDMA_OP_SEND_MIDDLE            0x01
#define QRDMA_OP_SEND_LAST              0x02
#define QRDMA_OP_SEND_LAST_IMM          0x03
#define QRDMA_OP_SEND_ONLY              0x04
#define QRDMA_OP_SEND_ONLY_IMM          0x05
#define QRDMA_OP_WRITE_FIRST            0x06
#define QRDMA_OP_WRITE_MIDDLE           0x07
#define QRDMA_OP_WRITE_LAST             0x08
#define QRDMA_OP_WRITE_LAST_IMM         0x09
#define QRDMA_OP_WRITE_ONLY             0x0a
#define QRDMA_OP_WRITE_ONLY_IMM         0x0b
#define QRDMA_OP_READ_REQ               0x0c
#define QRDMA_OP_READ_RESP_FIRST        0x0d
#define QRDMA_OP_READ_RESP_MIDDLE       0x0e
#define QRDMA_OP_READ_RESP_LAST         0x0f
#define QRDMA_OP_READ_RESP_ONLY         0x10
#define QRDMA_OP_ACK                    0x11
#define QRDMA_OP_ATOMIC_ACK             0x12
#define QRDMA_OP_CMP_SWAP               0x13
#define QRDMA_OP_FETCH_ADD              0x14
#define QRDMA_OP_SEND_LAST_INV          0x16
#define QRDMA_OP_SEND_ONLY_INV          0x17
#define QRDMA_OP_FLUSH                  0x1c
#define QRDMA_OP_ATOMIC_WRITE           0x1d

/* What an opcode is and carries (qrdma_op_flags). */
#define QRDMA_OPF_VALID                 (1u << 0)
#define QRDMA_OPF_FIRST                 (1u << 1)   /* starts a message */
#define QRDMA_OPF_LAST                  (1u << 2)   /* ends one */
#define QRDMA_OPF_SEND                  (1u << 3)
#define QRDMA_OPF_WRITE                 (1u << 4)
#define QRDMA_OPF_READ                  (1u << 5)   /* READ request */
#define QRDMA_OPF_ATOMIC                (1u << 6)   /* CMP_SWAP, FETCH_ADD */
#define QRDMA_OPF_RESP                  (1u << 7)   /* requester's side */
#define QRDMA_OPF_RETH                  (1u << 8)
#define QRDMA_OPF_IMM                   (1u << 9)
#define QRDMA_OPF_IETH                  (1u << 10)
#define QRDMA_OPF_AETH                  (1u << 11)
#define QRDMA_OPF_PAYLOAD               (1u << 12)
#define QRDMA_OPF_RECV                  (1u << 13)  /* takes a receive WQE */
#define QRDMA_OPF_OTHER                 (1u << 14)  /* FLUSH, ATOMIC_WRITE */

/* What the operations of RC carry; UC has SEND and WRITE, UD SEND_ONLY. */
extern const uint32_t qrdma_op_table[32];

/* What the last packet of a burst brings besides its first's flags. */
#define QRDMA_OPF_OF_LAST (QRDMA_OPF_LAST | QRDMA_OPF_IMM | QRDMA_OPF_IETH)

/* The flags of a BTH opcode; 0 for one qrdma does not know. */
static inline uint32_t qrdma_op_flags(uint8_t opcode)
{
    uint8_t op = opcode & 0x1f;
    uint32_t f;

    switch (QRDMA_OP_TRANSPORT(opcode)) {
    case QRDMA_OP_RC:
        f = qrdma_op_table[op];
        break;
    case QRDMA_OP_UC:
        f = op <= QRDMA_OP_WRITE_ONLY_IMM ? qrdma_op_table[op] : 0;
        break;
    case QRDMA_OP_UD:
        f = op == QRDMA_OP_SEND_ONLY || op == QRDMA_OP_SEND_ONLY_IMM ?
            qrdma_op_table[op] : 0;
        break;
    default:
        f = 0;
    }
    return f ? f | QRDMA_OPF_VALID : 0;
}

/* The opcode of a packet in the middle of a burst that opcode starts. */
static inline uint8_t qrdma_op_middle(uint8_t opcode)
{
    uint32_t f = qrdma_op_flags(opcode);
    uint8_t op = f & QRDMA_OPF_SEND ? QRDMA_OP_SEND_MIDDLE :
                 f & QRDMA_OPF_WRITE ? QRDMA_OP_WRITE_MIDDLE :
                 QRDMA_OP_READ_RESP_MIDDLE;

    return QRDMA_OP_TRANSPORT(opcode) | op;
}

/* AETH syndromes: bits 6:5 say which, 4:0 the value. */
#define QRDMA_AETH_ACK                  0x00        /* | credit count */
#define QRDMA_AETH_RNR_NAK              0x20        /* | RNR timer */
#define QRDMA_AETH_NAK                  0x60        /* | NAK code */
#define QRDMA_AETH_TYPE(s)              ((s) & 0x60)
#define QRDMA_NAK_PSN_SEQ_ERR           0
#define QRDMA_NAK_INV_REQ               1
#define QRDMA_NAK_REM_ACCESS_ERR        2
#define QRDMA_NAK_REM_OP_ERR            3
#define QRDMA_NAK_INV_RD_REQ            4
/* Credits are not counted: the "invalid" count, as responders may send. */
#define QRDMA_AETH_NO_CREDITS           0x1f

#define QRDMA_PSN_MASK                  0xffffff
#define QRDMA_MULTICAST_QPN             0xffffff

/* A multicast GID: ff00::/8, or an IPv4-mapped 224.0.0.0/4. */
static inline bool qrdma_gid_is_mcast(const uint8_t *gid)
{
    static const uint8_t v4_prefix[12] = { [10] = 0xff, [11] = 0xff };

    return gid[0] == 0xff ||
           (!memcmp(gid, v4_prefix, 12) && (gid[12] & 0xf0) == 0xe0);
}

/* a - b of two 24-bit PSNs, as a signed distance. */
static inline int32_t qrdma_psn_diff(uint32_t a, uint32_t b)
{
    return (int32_t)((a - b) << 8) >> 8;
}

/*
 * One packet, its headers decoded, between an engine and the transport.
 * The fields of headers the opcode does not carry are not looked at.
 * The payload is an iterator positioned at the packet's first byte: over
 * the sender's guest memory on the loopback transport, which so copies
 * once from one guest to the other, or over a frame's bytes.
 */
typedef struct QrdmaPkt {
    /*
     * A burst: npkts packets of one message with consecutive PSNs, all
     * of the path MTU but the last, passed on together where the
     * transport allows (QrdmaTransportOps.max_burst), as a NIC's
     * segmentation offload does; a transport that cannot carries them
     * as npkts frames.  opcode is the first packet's, last_opcode the
     * last's; psn the first's.  npkts 1: one packet.
     */
    uint32_t npkts;
    uint8_t last_opcode;
    /* BTH */
    uint8_t opcode;
    bool solicited;
    bool ack_req;
    uint16_t pkey;
    uint32_t dqpn;
    uint32_t psn;
    /* DETH */
    uint32_t qkey;
    uint32_t sqpn;
    /* RETH, and FETH's range for FLUSH */
    uint64_t va;
    uint32_t rkey;
    uint32_t dma_len;
    /* ImmDt, or IETH's rkey: the bytes of the WQE's imm_data field */
    uint32_t imm;
    /* AtomicETH */
    uint64_t swap_add;
    uint64_t compare;
    /* FETH */
    uint8_t flush_type;
    uint8_t flush_level;
    /* AETH */
    uint8_t syndrome;
    uint32_t msn;
    /* AtomicAckETH */
    uint64_t orig;
    /* ATOMIC_WRITE's 8 bytes of payload, as the consumer gave them */
    uint64_t atomic_data;
    /* the network header */
    uint8_t sgid[16];
    uint8_t dgid[16];
    uint8_t traffic_class;
    uint8_t hop_limit;
    uint32_t flow_label;
    /*
     * The link, for the wire: where the frame goes (the address the
     * guest resolved), the QP sending, whose number with the peer's
     * makes the flow's UDP source port, and the path MTU a burst is cut
     * into.
     */
    uint8_t dmac[6];
    uint16_t vlan_id;
    uint32_t lqpn;
    uint32_t mtu;
    /* the payload */
    uint32_t paylen;
    QrdmaIter *payload;
} QrdmaPkt;

/*
 * The flags of a packet, or of a burst: its first packet's, with what its
 * last packet ends the message with.
 */
static inline uint32_t qrdma_pkt_flags(const QrdmaPkt *pkt)
{
    uint32_t f = qrdma_op_flags(pkt->opcode);

    if (pkt->npkts > 1) {
        f |= qrdma_op_flags(pkt->last_opcode) & QRDMA_OPF_OF_LAST;
    }
    return f;
}

/*
 * Keep a packet past the call that brought it: *dst gets its headers and
 * its payload, copied into data (pkt->paylen bytes), which dst->payload
 * reads through *it.  pkt->payload is put back where it was.  False when
 * the payload could not be read: the packet is lost.
 */
bool qrdma_pkt_keep(QrdmaPkt *dst, QrdmaIter *it, uint8_t *data,
                    QrdmaPkt *pkt);

#endif /* HW_RDMA_QRDMA_PKT_H */
