/*
 * QEMU qrdma: the same-host link between two qrdma functions, as the two
 * QEMUs see it
 *
 * Copyright (c) 2026 The qrdma developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * This is the one definition of what passes between two QEMUs whose qrdma
 * functions are linked (-device qrdma,link=CHARDEV): the device
 * (qrdma_link.c) and the qtests that play a peer include it.  It is not
 * the guest's interface (qrdma-hw.h is).  Both ends are processes of one
 * host, so every field is in the host's byte order.
 *
 * The control channel is the chardev, a unix stream socket: messages of
 * a struct qrdma_link_msg and len bytes after it.  Each side opens with
 * HELLO, which brings two file descriptors (SCM_RIGHTS): [0] a memfd
 * holding the sender's ring (struct qrdma_link_ring below), sealed
 * against shrinking, which the receiver maps read-only, and [1] an
 * eventfd the receiver writes to wake the sender.  GIDS says again which
 * GIDs the sender answers to; BYE that it has let go of the peer's ring
 * and made its own unused, until its next HELLO.
 *
 * In the one-copy mode (-device qrdma,link-share-ram=on on the sender),
 * each HELLO is followed by a RAM message for each of the sender's guest
 * RAM blocks that is a memfd sealed against shrinking, with that memfd
 * (SCM_RIGHTS).  The receiver maps it read-only and answers RAM_ACK;
 * from then on the payload of an RC SEND or WRITE request may stay in
 * the sender's guest RAM, named by extents in its slot, for the receiver
 * to copy straight into its own guest.  Which of its guest's RAM the
 * sender lets the peer read is the sender's choice: the receiver checks
 * only that each extent lies in RAM it was given in this session.
 *
 * The data channel is the two rings.  Each side writes only its own
 * memfd: the packets it sends, how far it has taken the peer's packets,
 * and whether it waits to be woken.  A packet for the peer goes in the
 * next slot of the sender's ring (its headers in the slot's descriptor,
 * its payload in the slot's data), then prod moves on; the peer copies
 * each descriptor out once before it looks at it, and moves its cons on
 * when it is done with the slot.
 */

#ifndef HW_RDMA_QRDMA_LINK_PROTO_H
#define HW_RDMA_QRDMA_LINK_PROTO_H

#define QRDMA_LINK_MAGIC                0x4c445251u     /* "QRDL" */
#define QRDMA_LINK_VERSION              2

enum qrdma_link_msg_type {
    QRDMA_LINK_MSG_HELLO = 1,
    QRDMA_LINK_MSG_GIDS = 2,
    QRDMA_LINK_MSG_BYE = 3,
    QRDMA_LINK_MSG_RAM = 4,
    QRDMA_LINK_MSG_RAM_ACK = 5,
};

struct qrdma_link_msg {
    uint32_t type;                      /* enum qrdma_link_msg_type */
    uint32_t len;                       /* of what follows: its struct's */
};

#define QRDMA_LINK_GIDS                 16

/* The unicast GIDs the sender takes packets for; bit i of valid: gid[i]. */
struct qrdma_link_gids {
    uint32_t valid;
    uint32_t rsvd;
    uint8_t gid[QRDMA_LINK_GIDS][16];
};

struct qrdma_link_hello {
    uint32_t magic;
    uint32_t version;
    /* The ring's shape, which both must have: the values below. */
    uint32_t slots;
    uint32_t slot_bytes;
    uint64_t ring_bytes;
    struct qrdma_link_gids gids;
};

/* The guest RAM a sender may share, in so many memfds at most. */
#define QRDMA_LINK_RAM_REGIONS          8

/*
 * A memfd of the sender's guest RAM (with the message, SCM_RIGHTS), bytes
 * long from offset 0, that extents of the session of its HELLO number
 * epoch may name as RAM id.
 */
struct qrdma_link_ram {
    uint32_t id;                        /* < QRDMA_LINK_RAM_REGIONS */
    uint32_t epoch;
    uint64_t bytes;
};

/* The receiver mapped RAM id of session epoch (mapped 1), or cannot. */
struct qrdma_link_ram_ack {
    uint32_t id;
    uint32_t epoch;
    uint32_t mapped;
    uint32_t rsvd;
};

/*
 * The ring.  512 slots of 16 KiB: a slot takes up to 16 KiB of one
 * message's packets (a burst, as the loopback fabric carries them), and
 * a small message a slot of its own, so that a window of small messages
 * fits as well as one of large ones.
 */
#define QRDMA_LINK_SLOTS                512u
#define QRDMA_LINK_SLOT_BYTES           (16u * 1024)

/* Who writes what: each field on a cache line of its own. */
struct qrdma_link_ring_hdr {
    /* Slots this side has filled in its ring, ever (wraps at 2^32). */
    uint32_t prod;
    uint8_t rsvd0[60];
    /* Slots of the peer's ring this side is done with, ever. */
    uint32_t cons;
    uint8_t rsvd1[60];
    /* 1: this side sleeps until woken for a new packet of the peer's. */
    uint32_t rx_idle;
    uint8_t rsvd2[60];
    /* 1: this side waits to be woken when the peer frees slots of its. */
    uint32_t tx_wait;
    uint8_t rsvd3[60];
    /*
     * 1: the guest RAM this side's extents name is no longer to be read
     * (it let go of this ring with some untaken); the packets are lost.
     */
    uint32_t ram_revoked;
    uint8_t rsvd4[60];
};

#define QRDMA_LINK_DESC_SOLICITED       (1u << 0)
#define QRDMA_LINK_DESC_ACK_REQ         (1u << 1)
/* The slot holds extents of the sender's guest RAM, not the payload. */
#define QRDMA_LINK_DESC_EXTENTS         (1u << 2)

/*
 * A slot's packet, or burst of npkts packets of one message with
 * consecutive PSNs (struct QrdmaPkt's fields; the opcodes of a burst as
 * the fabric has them): opcode the first's, last_opcode the last's.
 */
struct qrdma_link_desc {
    uint32_t npkts;
    uint32_t paylen;
    uint8_t opcode;
    uint8_t last_opcode;
    uint8_t flags;                      /* QRDMA_LINK_DESC_* */
    uint8_t traffic_class;
    uint16_t pkey;
    uint16_t vlan_id;
    uint32_t dqpn;
    uint32_t psn;
    uint32_t qkey;
    uint32_t sqpn;
    uint64_t va;
    uint32_t rkey;
    uint32_t dma_len;
    uint32_t imm;
    uint32_t msn;
    uint64_t swap_add;
    uint64_t compare;
    uint64_t orig;
    uint64_t atomic_data;
    uint8_t flush_type;
    uint8_t flush_level;
    uint8_t syndrome;
    uint8_t hop_limit;
    uint32_t flow_label;
    uint8_t sgid[16];
    uint8_t dgid[16];
};

/*
 * The slot of a descriptor with QRDMA_LINK_DESC_EXTENTS: the payload's
 * paylen bytes are, in order, the n pieces of the sender's guest RAM
 * (RAM id, from byte offset of its memfd).  Such a burst is of an RC
 * SEND or WRITE request, up to QRDMA_LINK_EXTENT_PKTS packets.
 */
struct qrdma_link_extent {
    uint32_t ram;
    uint32_t len;
    uint64_t offset;
};

struct qrdma_link_extents {
    uint32_t n;
    uint32_t rsvd;
    struct qrdma_link_extent e[];
};

#define QRDMA_LINK_EXTENTS_MAX          ((QRDMA_LINK_SLOT_BYTES - 8) / 16)
#define QRDMA_LINK_EXTENT_PKTS          256u

#define QRDMA_LINK_HDR_BYTES            4096u
#define QRDMA_LINK_DESC_OFFSET          QRDMA_LINK_HDR_BYTES
#define QRDMA_LINK_DATA_OFFSET          (QRDMA_LINK_DESC_OFFSET + \
                                         QRDMA_LINK_SLOTS * 128u)
#define QRDMA_LINK_RING_BYTES           (QRDMA_LINK_DATA_OFFSET + \
                                         (uint64_t)QRDMA_LINK_SLOTS * \
                                         QRDMA_LINK_SLOT_BYTES)

#endif /* HW_RDMA_QRDMA_LINK_PROTO_H */
