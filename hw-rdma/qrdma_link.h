/*
 * QEMU qrdma: emulated RDMA (RoCEv2) NIC, the same-host link
 *
 * Copyright (c) 2026 The qrdma developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef HW_RDMA_QRDMA_LINK_H
#define HW_RDMA_QRDMA_LINK_H

#include "chardev/char-fe.h"
#include "qemu/event_notifier.h"
#include "qemu/notify.h"
#include "qemu/timer.h"
#include "exec/ramlist.h"
#include "qrdma-link.h"
#include "qrdma-qemu-compat.h"
#include "qrdma_pkt.h"

typedef struct QrdmaCore QrdmaCore;

typedef enum QrdmaLinkState {
    QRDMA_LINK_DOWN,                    /* no ring of ours out */
    QRDMA_LINK_SENT,                    /* HELLO sent, the peer's awaited */
    QRDMA_LINK_UP,                      /* each has the other's ring */
} QrdmaLinkState;

/* A block of our guest's RAM, offered to the peer (the one-copy mode). */
typedef struct QrdmaLinkRam {
    RAMBlock *rb;
    int fd;
    uint64_t fd_offset;                 /* of the block's start in fd */
    uint64_t bytes;                     /* of fd */
    bool acked;                         /* the peer mapped it */
} QrdmaLinkRam;

/*
 * A function's link to a qrdma function of another QEMU on this host
 * (qrdma-link.h has the protocol).  Packets for the GIDs the peer
 * announced go through the rings while the link is up; the wire carries
 * everything else, and everything when it is down.
 */
typedef struct QrdmaLink {
    CharFrontend chr;                   /* the "link" property */
    QrdmaCore *core;
    QrdmaLinkState state;
    bool connected;                     /* the chardev is open */
    bool migrating;                     /* no link until it fails */

    /* The control channel: a message being read, and fds that came. */
    uint8_t msg[sizeof(struct qrdma_link_msg) +
                sizeof(struct qrdma_link_hello)];
    uint32_t msg_len;
    int msg_fds[2];
    int msg_nfds;

    /* Ours: the ring the peer reads, and what the peer wakes us with. */
    int ring_fd;
    uint8_t *ring;                      /* mapped read-write */
    uint32_t prod;                      /* what the ring's prod says */
    uint32_t cons;                      /* what the ring's cons says */
    EventNotifier notify;

    /* The peer's: its ring read-only, its wake-up, the GIDs it takes. */
    const uint8_t *peer_ring;
    int peer_kick_fd;
    struct qrdma_link_gids peer_gids;

    QEMUBH *rx_bh;                      /* more of the peer's ring to take */
    QEMUTimer *stall_timer;             /* the peer does not take ours */
    uint32_t stall_cons;                /* its cons when the timer started */
    QEMUTimer *retry_timer;             /* HELLO again after a failure */
    NotifierWithReturn migration;

    /*
     * The one-copy mode.  Ours: the RAM offered in the session of our
     * HELLO number epoch (acked: the peer has it mapped), and prod after
     * the last slot that named some; while fencing, until
     * the peer has taken that slot, the guest's commands wait and
     * payloads take the ring.
     */
    bool share_ram;                     /* the "link-share-ram" property */
    uint32_t epoch;
    QrdmaLinkRam ram[QRDMA_LINK_RAM_REGIONS];
    unsigned nram;
    bool extents_out;                   /* some slot named guest RAM */
    uint32_t extents_prod;
    bool fencing;
    bool revoked;                       /* ram_revoked set: none till HELLO */
    QEMUTimer *fence_timer;
    RAMBlockNotifier ram_notifier;
    /* The peer's RAM, mapped read-only (NULL: none), and extents' pieces. */
    const uint8_t *peer_ram[QRDMA_LINK_RAM_REGIONS];
    uint64_t peer_ram_bytes[QRDMA_LINK_RAM_REGIONS];
    struct iovec *rx_iov;
} QrdmaLink;

void qrdma_link_realize(QrdmaCore *core, Error **errp);
void qrdma_link_unrealize(QrdmaCore *core);

/*
 * Send a packet over the link if its destination GID is the peer's; true
 * if it was taken (sent, or lost with the ring full).
 */
bool qrdma_link_route(QrdmaCore *core, QrdmaPkt *pkt);

/* Whether a packet for gid would take the link now. */
bool qrdma_link_carries(QrdmaCore *core, const uint8_t *gid);

/* Whether the peer has too much of ours untaken: send no more. */
bool qrdma_link_busy(QrdmaCore *core);

/* The GID table changed: the peer learns which GIDs are ours now. */
void qrdma_link_gids_changed(QrdmaCore *core);

/* The VM goes on: take what the peer sent while it was stopped. */
void qrdma_link_resume(QrdmaCore *core);

/*
 * Whether payloads may cross by reference now: the peer has RAM of ours
 * mapped in this session, which we have not taken back.
 */
bool qrdma_link_one_copy(const QrdmaLink *l);

/*
 * Whether the guest's commands may run: false while the peer may still
 * read guest RAM a packet named (the commands' bottom half is scheduled
 * again when it cannot).  Until qrdma_link_fence_done(), payloads take
 * the ring.
 */
bool qrdma_link_fence(QrdmaCore *core);
void qrdma_link_fence_done(QrdmaCore *core);

/*
 * The guest may reuse RAM a slot the peer has yet to take names (a reset,
 * a QP's work flushed): the peer is to read none of it now, and gets a
 * new session.
 */
void qrdma_link_revoke(QrdmaCore *core);

#endif /* HW_RDMA_QRDMA_LINK_H */
