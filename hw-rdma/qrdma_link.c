/*
 * QEMU qrdma: emulated RDMA (RoCEv2) NIC, the same-host link
 *
 * Copyright (c) 2026 The qrdma developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * Two qrdma functions of two QEMUs on one host, each with -device
 * qrdma,link=CHARDEV on the two ends of a unix socket, trade their
 * packets through shared memory rather than as frames through the
 * netdevs (qrdma-link.h has what passes between them).  The engines do
 * not know: a packet leaves through the wire's xmit, which hands it here
 * when its destination GID is one the peer announced, and comes in
 * through the same receive function as a frame's.  RC's ordering, ACKs,
 * retries and errors are the engines', as on the wire; a packet the
 * link cannot take is lost as a frame is, and a retry recovers it.
 *
 * The peer is trusted no more than a wire is: each descriptor is copied
 * out of its ring once and checked before anything reads it, its memfd
 * must be sealed against shrinking (so that a read of it cannot fault)
 * and is mapped read-only, and its indices are checked against the
 * ring's size.  A peer that breaks a rule, or stops taking our packets
 * for a second, loses the link: traffic goes on the wire from then on,
 * where a peer that is gone fails its QPs with RETRY_EXC_ERR, and the
 * link is offered again a second later.  The payload crosses twice:
 * into the sender's ring, then out of it into the receiver's guest, so
 * that each QEMU only ever reads the peer's ring and writes its own
 * guest's memory.
 */

#include "qemu/osdep.h"
#include <sys/mman.h>
#include "qapi/error.h"
#include "qemu/log.h"
#include "qemu/main-loop.h"
#include "qemu/memfd.h"
#include "chardev/char-fe.h"
#include "migration/misc.h"
#include "qrdma.h"
#include "qrdma_link.h"
#include "trace.h"

QEMU_BUILD_BUG_ON(sizeof(struct qrdma_link_desc) != 128);
QEMU_BUILD_BUG_ON(sizeof(struct qrdma_link_ring_hdr) > QRDMA_LINK_HDR_BYTES);

#ifndef F_SEAL_FUTURE_WRITE
#define F_SEAL_FUTURE_WRITE 0x0010
#endif

/*
 * The slots kept for what answers the peer (ACKs, READ responses): the
 * requester stops with this many free, so that an ACK does not find the
 * ring full behind a window of requests.
 */
#define QRDMA_LINK_RESERVE      128u
/* Slots taken in one turn of the main loop: the rest in the bottom half. */
#define QRDMA_LINK_RX_BUDGET    128u
/* How long the peer may leave our ring full before the link is cut. */
#define QRDMA_LINK_STALL_MS     1000
/* How long after a failure the link is offered again. */
#define QRDMA_LINK_RETRY_MS     1000

static struct qrdma_link_ring_hdr *qrdma_link_hdr(QrdmaLink *l)
{
    return (struct qrdma_link_ring_hdr *)l->ring;
}

static const struct qrdma_link_ring_hdr *qrdma_link_peer_hdr(QrdmaLink *l)
{
    return (const struct qrdma_link_ring_hdr *)l->peer_ring;
}

static void qrdma_link_kick(QrdmaLink *l)
{
    uint64_t one = 1;

    /* Non-blocking: a peer's eventfd that is full is awake anyway. */
    if (write(l->peer_kick_fd, &one, sizeof(one)) < 0 && errno != EAGAIN) {
        trace_qrdma_link_kick_failed(errno);
    }
}

/* The control channel */

static void qrdma_link_send(QrdmaLink *l, uint32_t type, const void *body,
                            uint32_t len, int *fds, int nfds)
{
    uint8_t buf[sizeof(struct qrdma_link_msg) +
                sizeof(struct qrdma_link_hello)];
    struct qrdma_link_msg *m = (struct qrdma_link_msg *)buf;

    assert(len <= sizeof(buf) - sizeof(*m));
    m->type = type;
    m->len = len;
    if (len) {
        memcpy(buf + sizeof(*m), body, len);
    }
    if (nfds && qemu_chr_fe_set_msgfds(&l->chr, fds, nfds) < 0) {
        trace_qrdma_link_send_failed(type);
        return;
    }
    if (qemu_chr_fe_write_all(&l->chr, buf, sizeof(*m) + len) !=
        sizeof(*m) + len) {
        trace_qrdma_link_send_failed(type);
    }
}

static void qrdma_link_our_gids(QrdmaCore *core, struct qrdma_link_gids *g)
{
    unsigned i;

    QEMU_BUILD_BUG_ON(QRDMA_LINK_GIDS != QRDMA_GID_TABLE_LEN);
    memset(g, 0, sizeof(*g));
    for (i = 0; i < QRDMA_GID_TABLE_LEN; i++) {
        if (core->gid[i].type && !qrdma_gid_is_mcast(core->gid[i].gid)) {
            g->valid |= 1u << i;
            memcpy(g->gid[i], core->gid[i].gid, 16);
        }
    }
}

/* Ours: a new, empty ring, mapped, that the peer can only read. */
static bool qrdma_link_new_ring(QrdmaLink *l)
{
    Error *err = NULL;
    int fd;
    void *p;

    fd = qemu_memfd_create("qrdma-link", QRDMA_LINK_RING_BYTES, false, 0,
                           F_SEAL_GROW | F_SEAL_SHRINK, &err);
    if (fd < 0) {
        error_report_err(err);
        return false;
    }
    p = mmap(NULL, QRDMA_LINK_RING_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED,
             fd, 0);
    if (p == MAP_FAILED) {
        trace_qrdma_link_error("cannot map its own ring");
        close(fd);
        return false;
    }
    /* Sealed after our mapping: no other can be writable (Linux 5.1+). */
    if (fcntl(fd, F_ADD_SEALS, F_SEAL_FUTURE_WRITE | F_SEAL_SEAL) < 0) {
        fcntl(fd, F_ADD_SEALS, F_SEAL_SEAL);
    }
    l->ring_fd = fd;
    l->ring = p;
    l->prod = 0;
    l->cons = 0;
    return true;
}

/* Let go of both rings; the peer's packets still in its ring are lost. */
static void qrdma_link_drop_rings(QrdmaLink *l)
{
    QrdmaCore *core = l->core;

    if (l->state == QRDMA_LINK_UP) {
        trace_qrdma_link_down();
    }
    l->state = QRDMA_LINK_DOWN;
    qemu_bh_cancel(l->rx_bh);
    timer_del(l->stall_timer);
    if (l->peer_ring) {
        munmap((void *)l->peer_ring, QRDMA_LINK_RING_BYTES);
        l->peer_ring = NULL;
    }
    if (l->peer_kick_fd >= 0) {
        close(l->peer_kick_fd);
        l->peer_kick_fd = -1;
    }
    if (l->ring) {
        munmap(l->ring, QRDMA_LINK_RING_BYTES);
        l->ring = NULL;
        close(l->ring_fd);
        l->ring_fd = -1;
    }
    memset(&l->peer_gids, 0, sizeof(l->peer_gids));
    /* What waited for the ring to drain goes on the wire now. */
    if (core->dp_bh) {
        qemu_bh_schedule(core->dp_bh);
    }
}

static void qrdma_link_hello(QrdmaLink *l)
{
    struct qrdma_link_hello h = {
        .magic = QRDMA_LINK_MAGIC,
        .version = QRDMA_LINK_VERSION,
        .slots = QRDMA_LINK_SLOTS,
        .slot_bytes = QRDMA_LINK_SLOT_BYTES,
        .ring_bytes = QRDMA_LINK_RING_BYTES,
    };
    int fds[2];

    if (l->ring) {
        qrdma_link_drop_rings(l);
    }
    if (!qrdma_link_new_ring(l)) {
        return;
    }
    qrdma_link_our_gids(l->core, &h.gids);
    fds[0] = l->ring_fd;
    fds[1] = event_notifier_get_fd(&l->notify);
    qrdma_link_send(l, QRDMA_LINK_MSG_HELLO, &h, sizeof(h), fds, 2);
    l->state = QRDMA_LINK_SENT;
    trace_qrdma_link_hello_sent();
}

/*
 * The peer broke a rule of the protocol, or stopped: the link goes down
 * and is offered again later, the peer told so if it still listens.
 */
static void qrdma_link_fail(QrdmaLink *l, const char *why)
{
    l->core->counters.link_errors++;
    trace_qrdma_link_error(why);
    qemu_log_mask(LOG_GUEST_ERROR, "qrdma: link peer: %s\n", why);
    qrdma_link_drop_rings(l);
    if (l->connected) {
        qrdma_link_send(l, QRDMA_LINK_MSG_BYE, NULL, 0, NULL, 0);
        timer_mod(l->retry_timer, qemu_clock_get_ms(QEMU_CLOCK_REALTIME) +
                  QRDMA_LINK_RETRY_MS);
    }
}

static void qrdma_link_retry(void *opaque)
{
    QrdmaLink *l = opaque;

    if (l->connected && !l->migrating && l->state == QRDMA_LINK_DOWN) {
        qrdma_link_hello(l);
    }
}

static void qrdma_link_close_msg_fds(QrdmaLink *l)
{
    int i;

    for (i = 0; i < l->msg_nfds; i++) {
        close(l->msg_fds[i]);
    }
    l->msg_nfds = 0;
}

/* Whether fd is a memfd of the ring's size that cannot shrink under us. */
static const char *qrdma_link_check_ring_fd(int fd)
{
    struct stat st;
    int seals;

    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        return "ring is not a file";
    }
    if (st.st_size != QRDMA_LINK_RING_BYTES) {
        return "ring of the wrong size";
    }
    seals = fcntl(fd, F_GET_SEALS);
    if (seals < 0 || !(seals & F_SEAL_SHRINK)) {
        return "ring not sealed against shrinking";
    }
    return NULL;
}

static void qrdma_link_take_hello(QrdmaLink *l,
                                  const struct qrdma_link_hello *h)
{
    const char *why = NULL;
    void *p;

    if (l->msg_nfds != 2) {
        why = "HELLO without its ring and eventfd";
    } else if (h->magic != QRDMA_LINK_MAGIC ||
               h->version != QRDMA_LINK_VERSION) {
        why = "HELLO of another protocol or version";
    } else if (h->slots != QRDMA_LINK_SLOTS ||
               h->slot_bytes != QRDMA_LINK_SLOT_BYTES ||
               h->ring_bytes != QRDMA_LINK_RING_BYTES) {
        why = "HELLO with a ring of another shape";
    } else {
        why = qrdma_link_check_ring_fd(l->msg_fds[0]);
    }
    if (!why) {
        int fl = fcntl(l->msg_fds[1], F_GETFL);

        if (fl < 0 || fcntl(l->msg_fds[1], F_SETFL, fl | O_NONBLOCK) < 0) {
            why = "eventfd cannot be made non-blocking";
        }
    }
    if (why) {
        qrdma_link_close_msg_fds(l);
        qrdma_link_fail(l, why);
        return;
    }
    /* The peer started over: so do we, with a ring it has not seen. */
    if (l->state != QRDMA_LINK_SENT) {
        qrdma_link_hello(l);
        if (l->state != QRDMA_LINK_SENT) {
            qrdma_link_close_msg_fds(l);
            return;
        }
    }
    p = mmap(NULL, QRDMA_LINK_RING_BYTES, PROT_READ, MAP_SHARED,
             l->msg_fds[0], 0);
    close(l->msg_fds[0]);
    l->msg_nfds = 0;
    if (p == MAP_FAILED) {
        close(l->msg_fds[1]);
        qrdma_link_fail(l, "ring cannot be mapped");
        return;
    }
    l->peer_ring = p;
    l->peer_kick_fd = l->msg_fds[1];
    l->peer_gids = h->gids;
    l->state = QRDMA_LINK_UP;
    l->core->counters.link_ups++;
    trace_qrdma_link_up(h->gids.valid);
    /* Anything the peer put in already. */
    qemu_bh_schedule(l->rx_bh);
}

static void qrdma_link_take_msg(QrdmaLink *l, const struct qrdma_link_msg *m,
                                const void *body)
{
    switch (m->type) {
    case QRDMA_LINK_MSG_HELLO:
        if (l->migrating) {
            qrdma_link_close_msg_fds(l);
            return;
        }
        qrdma_link_take_hello(l, body);
        return;
    case QRDMA_LINK_MSG_GIDS:
        if (l->state == QRDMA_LINK_UP) {
            memcpy(&l->peer_gids, body, sizeof(l->peer_gids));
            trace_qrdma_link_gids(l->peer_gids.valid);
        }
        break;
    case QRDMA_LINK_MSG_BYE:
        trace_qrdma_link_bye();
        qrdma_link_drop_rings(l);
        break;
    }
    /* Only HELLO brings fds. */
    if (l->msg_nfds) {
        qrdma_link_close_msg_fds(l);
        qrdma_link_fail(l, "file descriptors with a message that has none");
    }
}

static uint32_t qrdma_link_msg_body_len(uint32_t type)
{
    switch (type) {
    case QRDMA_LINK_MSG_HELLO:
        return sizeof(struct qrdma_link_hello);
    case QRDMA_LINK_MSG_GIDS:
        return sizeof(struct qrdma_link_gids);
    case QRDMA_LINK_MSG_BYE:
        return 0;
    }
    return UINT32_MAX;
}

static int qrdma_link_can_read(void *opaque)
{
    QrdmaLink *l = opaque;

    return sizeof(l->msg) - l->msg_len;
}

static void qrdma_link_read(void *opaque, const uint8_t *buf, int size)
{
    QrdmaLink *l = opaque;
    struct qrdma_link_msg m;
    union {
        struct qrdma_link_hello hello;
        struct qrdma_link_gids gids;
    } body;
    int fds[2], n;

    n = qemu_chr_fe_get_msgfds(&l->chr, fds, ARRAY_SIZE(fds));
    if (n > 0) {
        /* A message brings its fds with its first bytes: older ones go. */
        qrdma_link_close_msg_fds(l);
        memcpy(l->msg_fds, fds, n * sizeof(int));
        l->msg_nfds = n;
    }
    assert(size <= sizeof(l->msg) - l->msg_len);
    memcpy(l->msg + l->msg_len, buf, size);
    l->msg_len += size;
    while (l->msg_len >= sizeof(m)) {
        uint32_t want;

        memcpy(&m, l->msg, sizeof(m));
        want = qrdma_link_msg_body_len(m.type);
        if (want == UINT32_MAX || m.len != want) {
            /* Where the next message starts is lost: start over. */
            l->msg_len = 0;
            qrdma_link_close_msg_fds(l);
            qrdma_link_fail(l, "message of an unknown type or length");
            qemu_chr_fe_disconnect(&l->chr);
            return;
        }
        if (l->msg_len < sizeof(m) + want) {
            return;
        }
        memcpy(&body, l->msg + sizeof(m), want);
        qrdma_link_take_msg(l, &m, &body);
        memmove(l->msg, l->msg + sizeof(m) + want,
                l->msg_len - sizeof(m) - want);
        l->msg_len -= sizeof(m) + want;
    }
}

static void qrdma_link_event(void *opaque, QEMUChrEvent event)
{
    QrdmaLink *l = opaque;

    switch (event) {
    case CHR_EVENT_OPENED:
        l->connected = true;
        l->msg_len = 0;
        qrdma_link_close_msg_fds(l);
        trace_qrdma_link_connected();
        if (!l->migrating) {
            qrdma_link_hello(l);
        }
        break;
    case CHR_EVENT_CLOSED:
        l->connected = false;
        l->msg_len = 0;
        qrdma_link_close_msg_fds(l);
        timer_del(l->retry_timer);
        trace_qrdma_link_disconnected();
        qrdma_link_drop_rings(l);
        break;
    default:
        break;
    }
}

void qrdma_link_gids_changed(QrdmaCore *core)
{
    QrdmaLink *l = &core->link;
    struct qrdma_link_gids g;

    if (l->state == QRDMA_LINK_DOWN || !l->connected) {
        return;
    }
    qrdma_link_our_gids(core, &g);
    qrdma_link_send(l, QRDMA_LINK_MSG_GIDS, &g, sizeof(g), NULL, 0);
}

/* Sending */

static bool qrdma_link_peer_owns(const QrdmaLink *l, const uint8_t *gid)
{
    unsigned i;

    for (i = 0; i < QRDMA_LINK_GIDS; i++) {
        if ((l->peer_gids.valid & (1u << i)) &&
            !memcmp(l->peer_gids.gid[i], gid, 16)) {
            return true;
        }
    }
    return false;
}

bool qrdma_link_carries(QrdmaCore *core, const uint8_t *gid)
{
    return core->link.state == QRDMA_LINK_UP &&
           qrdma_link_peer_owns(&core->link, gid);
}

/* Slots of ours the peer has not taken yet. */
static uint32_t qrdma_link_in_use(QrdmaLink *l)
{
    return l->prod - qatomic_load_acquire(&qrdma_link_peer_hdr(l)->cons);
}

/* The opcode of packet i of a burst of n. */
static uint8_t qrdma_link_opcode_at(const QrdmaPkt *pkt, uint32_t i)
{
    if (i == 0) {
        return pkt->opcode;
    }
    return i + 1 == pkt->npkts ? pkt->last_opcode :
           qrdma_op_middle(pkt->opcode);
}

/*
 * Packets first .. first + n - 1 of pkt, paylen bytes of payload, into
 * the next slot.
 */
static bool qrdma_link_put(QrdmaLink *l, const QrdmaPkt *pkt, uint32_t first,
                           uint32_t n, uint32_t paylen)
{
    uint32_t slot = l->prod % QRDMA_LINK_SLOTS;
    struct qrdma_link_desc *d = (struct qrdma_link_desc *)
        (l->ring + QRDMA_LINK_DESC_OFFSET) + slot;
    uint8_t *data = l->ring + QRDMA_LINK_DATA_OFFSET +
                    (uint64_t)slot * QRDMA_LINK_SLOT_BYTES;
    bool last = first + n == pkt->npkts;

    if (paylen) {
        QrdmaIter it;

        qrdma_iter_host(&it, data, paylen);
        if (qrdma_copy(pkt->payload, &it, paylen) != QRDMA_COPY_OK) {
            return false;
        }
    }
    d->npkts = n;
    d->paylen = paylen;
    d->opcode = qrdma_link_opcode_at(pkt, first);
    d->last_opcode = n > 1 ? qrdma_link_opcode_at(pkt, first + n - 1) : 0;
    d->flags = (last && pkt->solicited ? QRDMA_LINK_DESC_SOLICITED : 0) |
               (last && pkt->ack_req ? QRDMA_LINK_DESC_ACK_REQ : 0);
    d->traffic_class = pkt->traffic_class;
    d->pkey = pkt->pkey;
    d->vlan_id = pkt->vlan_id;
    d->dqpn = pkt->dqpn;
    d->psn = (pkt->psn + first) & QRDMA_PSN_MASK;
    d->qkey = pkt->qkey;
    d->sqpn = pkt->sqpn;
    d->va = pkt->va;
    d->rkey = pkt->rkey;
    d->dma_len = pkt->dma_len;
    d->imm = pkt->imm;
    d->msn = pkt->msn;
    d->swap_add = pkt->swap_add;
    d->compare = pkt->compare;
    d->orig = pkt->orig;
    d->atomic_data = pkt->atomic_data;
    d->flush_type = pkt->flush_type;
    d->flush_level = pkt->flush_level;
    d->syndrome = pkt->syndrome;
    d->hop_limit = pkt->hop_limit;
    d->flow_label = pkt->flow_label;
    memcpy(d->sgid, pkt->sgid, 16);
    memcpy(d->dgid, pkt->dgid, 16);
    l->prod++;
    return true;
}

bool qrdma_link_route(QrdmaCore *core, QrdmaPkt *pkt)
{
    QrdmaLink *l = &core->link;
    uint32_t mtu = pkt->mtu ? pkt->mtu : 4096;
    uint32_t per_slot = MAX(QRDMA_LINK_SLOT_BYTES / mtu, 1);
    uint32_t left = pkt->paylen, i, n;

    if (!qrdma_link_carries(core, pkt->dgid)) {
        return false;
    }
    for (i = 0; i < pkt->npkts; i += n) {
        uint32_t paylen;

        n = MIN(per_slot, pkt->npkts - i);
        paylen = i + n == pkt->npkts ? left : MIN(left, n * mtu);
        if (qrdma_link_in_use(l) >= QRDMA_LINK_SLOTS) {
            /* Lost, as a frame the NIC had no room for. */
            core->counters.link_tx_dropped += pkt->npkts - i;
            trace_qrdma_link_tx_full(pkt->dqpn, pkt->opcode, pkt->psn);
            break;
        }
        if (!qrdma_link_put(l, pkt, i, n, paylen)) {
            /* The sender's memory went away under the packet: lost. */
            core->counters.pkts_dropped++;
            trace_qrdma_link_tx_lost(pkt->dqpn, pkt->opcode, pkt->psn);
            break;
        }
        left -= paylen;
        core->counters.link_pkts_sent += n;
    }
    qatomic_store_release(&qrdma_link_hdr(l)->prod, l->prod);
    /* Its rx_idle read after our prod is seen: one of us sees the other. */
    smp_mb();
    if (qatomic_read(&qrdma_link_peer_hdr(l)->rx_idle)) {
        qrdma_link_kick(l);
    }
    trace_qrdma_link_tx(pkt->dqpn, pkt->opcode, pkt->psn, pkt->npkts,
                        pkt->paylen);
    return true;
}

static void qrdma_link_stalled(void *opaque)
{
    QrdmaLink *l = opaque;
    uint32_t cons;

    if (l->state != QRDMA_LINK_UP) {
        return;
    }
    cons = qatomic_load_acquire(&qrdma_link_peer_hdr(l)->cons);
    if (cons == l->stall_cons && l->prod != cons) {
        qrdma_link_fail(l, "peer took none of our packets for a second");
        return;
    }
    if (qrdma_link_busy(l->core)) {
        l->stall_cons = cons;
        timer_mod(l->stall_timer, qemu_clock_get_ms(QEMU_CLOCK_REALTIME) +
                  QRDMA_LINK_STALL_MS);
    }
}

bool qrdma_link_busy(QrdmaCore *core)
{
    QrdmaLink *l = &core->link;
    struct qrdma_link_ring_hdr *hdr;

    if (l->state != QRDMA_LINK_UP ||
        qrdma_link_in_use(l) < QRDMA_LINK_SLOTS - QRDMA_LINK_RESERVE) {
        return false;
    }
    hdr = qrdma_link_hdr(l);
    qatomic_set(&hdr->tx_wait, 1);
    /* Its cons read after our tx_wait is seen: it frees, or we see it. */
    smp_mb();
    if (qrdma_link_in_use(l) < QRDMA_LINK_SLOTS - QRDMA_LINK_RESERVE) {
        qatomic_set(&hdr->tx_wait, 0);
        return false;
    }
    if (!timer_pending(l->stall_timer)) {
        l->stall_cons = qatomic_load_acquire(&qrdma_link_peer_hdr(l)->cons);
        timer_mod(l->stall_timer, qemu_clock_get_ms(QEMU_CLOCK_REALTIME) +
                  QRDMA_LINK_STALL_MS);
    }
    return true;
}

/* Receiving */

/* Whether the packets of a descriptor are ones the engines could send. */
static const char *qrdma_link_check_desc(QrdmaLink *l,
                                         const struct qrdma_link_desc *d)
{
    uint32_t f = qrdma_op_flags(d->opcode);
    uint32_t kinds = QRDMA_OPF_SEND | QRDMA_OPF_WRITE | QRDMA_OPF_RESP;

    if (!f) {
        return "unknown opcode";
    }
    if (d->npkts == 0 || d->npkts > QRDMA_LINK_SLOT_BYTES / 256 ||
        d->paylen > QRDMA_LINK_SLOT_BYTES) {
        return "burst of a size no slot holds";
    }
    if (d->paylen && !(f & QRDMA_OPF_PAYLOAD)) {
        return "payload where the opcode carries none";
    }
    if (d->npkts > 1) {
        uint32_t lf = qrdma_op_flags(d->last_opcode);

        /* One message: its packets of one kind, first or not, then last. */
        if (!lf || !(f & QRDMA_OPF_PAYLOAD) || !(lf & QRDMA_OPF_PAYLOAD) ||
            QRDMA_OP_TRANSPORT(d->opcode) !=
            QRDMA_OP_TRANSPORT(d->last_opcode) ||
            (f & kinds) != (lf & kinds) || (f & QRDMA_OPF_LAST) ||
            (lf & QRDMA_OPF_FIRST)) {
            return "burst whose opcodes are not of one message";
        }
        if (d->paylen <= (d->npkts - 1) * 256) {
            return "burst shorter than its packets";
        }
    }
    if (d->npkts == 1 && d->paylen > 4096) {
        return "packet longer than the largest path MTU";
    }
    if (d->flags & ~(QRDMA_LINK_DESC_SOLICITED | QRDMA_LINK_DESC_ACK_REQ)) {
        return "undefined descriptor flags";
    }
    if (qrdma_gid_is_mcast(d->dgid)) {
        return "packet for a group: the wire carries those";
    }
    return NULL;
}

static void qrdma_link_unpack(const struct qrdma_link_desc *d, QrdmaPkt *pkt)
{
    pkt->npkts = d->npkts;
    pkt->last_opcode = d->last_opcode;
    pkt->opcode = d->opcode;
    pkt->solicited = d->flags & QRDMA_LINK_DESC_SOLICITED;
    pkt->ack_req = d->flags & QRDMA_LINK_DESC_ACK_REQ;
    pkt->pkey = d->pkey;
    pkt->dqpn = d->dqpn & QRDMA_PSN_MASK;
    pkt->psn = d->psn & QRDMA_PSN_MASK;
    pkt->qkey = d->qkey;
    pkt->sqpn = d->sqpn & QRDMA_PSN_MASK;
    pkt->va = d->va;
    pkt->rkey = d->rkey;
    pkt->dma_len = d->dma_len;
    pkt->imm = d->imm;
    pkt->swap_add = d->swap_add;
    pkt->compare = d->compare;
    pkt->flush_type = d->flush_type;
    pkt->flush_level = d->flush_level;
    pkt->syndrome = d->syndrome;
    pkt->msn = d->msn & QRDMA_PSN_MASK;
    pkt->orig = d->orig;
    pkt->atomic_data = d->atomic_data;
    memcpy(pkt->sgid, d->sgid, 16);
    memcpy(pkt->dgid, d->dgid, 16);
    pkt->traffic_class = d->traffic_class;
    pkt->hop_limit = d->hop_limit;
    pkt->flow_label = d->flow_label & 0xfffff;
    pkt->vlan_id = d->vlan_id;
    pkt->paylen = d->paylen;
}

/* A packet of slot to the engines, its payload read from the slot. */
static void qrdma_link_deliver(QrdmaLink *l, QrdmaPkt *pkt, uint32_t slot)
{
    QrdmaCore *core = l->core;
    QrdmaIter payload;

    if (pkt->paylen) {
        qrdma_iter_host(&payload, l->peer_ring + QRDMA_LINK_DATA_OFFSET +
                        (uint64_t)slot * QRDMA_LINK_SLOT_BYTES, pkt->paylen);
        pkt->payload = &payload;
    }
    core->counters.link_pkts_rcvd += pkt->npkts;
    trace_qrdma_link_rx(pkt->dqpn, pkt->opcode, pkt->psn, pkt->npkts,
                        pkt->paylen);
    core->port.rx(core, pkt);
}

/*
 * Take up to budget of the peer's packets.  False if the link went down
 * (the peer broke a rule): nothing of it may be looked at after.
 */
static bool qrdma_link_take(QrdmaLink *l, uint32_t budget, bool *more)
{
    QrdmaCore *core = l->core;
    uint32_t prod = qatomic_load_acquire(&qrdma_link_peer_hdr(l)->prod);
    uint32_t avail = prod - l->cons;
    struct qrdma_link_ring_hdr *hdr = qrdma_link_hdr(l);
    uint32_t taken = 0;

    if (avail > QRDMA_LINK_SLOTS) {
        qrdma_link_fail(l, "producer index beyond the ring");
        return false;
    }
    while (taken < MIN(avail, budget)) {
        uint32_t slot = l->cons % QRDMA_LINK_SLOTS;
        const struct qrdma_link_desc *src = (const struct qrdma_link_desc *)
            (l->peer_ring + QRDMA_LINK_DESC_OFFSET) + slot;
        struct qrdma_link_desc d;
        QrdmaPkt pkt = { };
        const char *why;

        /* Once: the peer may change the slot while we look at our copy. */
        memcpy(&d, src, sizeof(d));
        why = qrdma_link_check_desc(l, &d);
        if (why) {
            qrdma_link_fail(l, why);
            return false;
        }
        qrdma_link_unpack(&d, &pkt);
        if (!qrdma_fabric_owns_gid(core, pkt.dgid)) {
            /* A GID we dropped just now, which the peer has yet to hear. */
            core->counters.pkts_dropped++;
            trace_qrdma_link_rx_not_ours(pkt.dqpn, pkt.opcode, pkt.psn);
        } else {
            qrdma_link_deliver(l, &pkt, slot);
            /* The engines may have cut the link (a GID gone) in there. */
            if (l->state != QRDMA_LINK_UP) {
                return false;
            }
        }
        l->cons++;
        taken++;
    }
    if (taken) {
        qatomic_store_release(&hdr->cons, l->cons);
        /* Its tx_wait read after our cons is seen: see qrdma_link_busy(). */
        smp_mb();
        if (qatomic_read(&qrdma_link_peer_hdr(l)->tx_wait)) {
            qrdma_link_kick(l);
        }
    }
    *more = avail > taken;
    return true;
}

static void qrdma_link_rx_run(QrdmaLink *l)
{
    struct qrdma_link_ring_hdr *hdr;
    bool more;

    if (l->state != QRDMA_LINK_UP || !l->core->running) {
        return;
    }
    hdr = qrdma_link_hdr(l);
    qatomic_set(&hdr->rx_idle, 0);
    if (!qrdma_link_take(l, QRDMA_LINK_RX_BUDGET, &more)) {
        return;
    }
    if (!more) {
        qatomic_set(&hdr->rx_idle, 1);
        /* Its prod read after our rx_idle is seen: it wakes us, or we see. */
        smp_mb();
        more = qatomic_load_acquire(&qrdma_link_peer_hdr(l)->prod) != l->cons;
    }
    if (more) {
        qatomic_set(&hdr->rx_idle, 0);
        qemu_bh_schedule(l->rx_bh);
    }
}

static void qrdma_link_rx_bh(void *opaque)
{
    qrdma_link_rx_run(opaque);
}

/* The peer put packets in, or took ours. */
static void qrdma_link_notified(EventNotifier *n)
{
    QrdmaLink *l = container_of(n, QrdmaLink, notify);
    QrdmaCore *core = l->core;

    event_notifier_test_and_clear(n);
    if (l->state != QRDMA_LINK_UP) {
        return;
    }
    if (qatomic_read(&qrdma_link_hdr(l)->tx_wait) && !qrdma_link_busy(core)) {
        qatomic_set(&qrdma_link_hdr(l)->tx_wait, 0);
        timer_del(l->stall_timer);
        qemu_bh_schedule(core->dp_bh);
    }
    qrdma_link_rx_run(l);
}

void qrdma_link_resume(QrdmaCore *core)
{
    if (core->link.state == QRDMA_LINK_UP) {
        qemu_bh_schedule(core->link.rx_bh);
    }
}

/*
 * The peer may read this guest's memory no more once the guest leaves
 * this QEMU, and the destination's link is its own: the link goes down
 * before the first pass, and traffic takes the wire until the migration
 * is done (and for good on this side), or has failed.
 */
static int qrdma_link_migration(NotifierWithReturn *n, MigrationEvent *e,
                                Error **errp)
{
    QrdmaLink *l = container_of(n, QrdmaLink, migration);

    switch (e->type) {
    case MIG_EVENT_PRECOPY_SETUP:
        l->migrating = true;
        timer_del(l->retry_timer);
        if (l->state != QRDMA_LINK_DOWN) {
            qrdma_link_drop_rings(l);
            if (l->connected) {
                qrdma_link_send(l, QRDMA_LINK_MSG_BYE, NULL, 0, NULL, 0);
            }
        }
        break;
    case MIG_EVENT_PRECOPY_FAILED:
        l->migrating = false;
        if (l->connected && l->state == QRDMA_LINK_DOWN) {
            qrdma_link_hello(l);
        }
        break;
    default:
        break;
    }
    return 0;
}

/* Device */

void qrdma_link_realize(QrdmaCore *core, Error **errp)
{
    QrdmaLink *l = &core->link;
    DeviceState *dev = DEVICE(core->owner);

    l->core = core;
    l->ring_fd = -1;
    l->peer_kick_fd = -1;
    if (!qemu_chr_fe_backend_connected(&l->chr)) {
        return;
    }
    if (!qemu_chr_has_feature(qemu_chr_fe_get_driver(&l->chr),
                              QEMU_CHAR_FEATURE_FD_PASS)) {
        error_setg(errp, "qrdma: link chardev must be a unix socket");
        return;
    }
    if (event_notifier_init(&l->notify, false) < 0) {
        error_setg(errp, "qrdma: link: cannot make an eventfd");
        return;
    }
    event_notifier_set_handler(&l->notify, qrdma_link_notified);
    l->rx_bh = qemu_bh_new_guarded(qrdma_link_rx_bh, l,
                                   &dev->mem_reentrancy_guard);
    l->stall_timer = timer_new_ms(QEMU_CLOCK_REALTIME, qrdma_link_stalled, l);
    l->retry_timer = timer_new_ms(QEMU_CLOCK_REALTIME, qrdma_link_retry, l);
    migration_add_notifier(&l->migration, qrdma_link_migration);
    qemu_chr_fe_set_handlers(&l->chr, qrdma_link_can_read, qrdma_link_read,
                             qrdma_link_event, NULL, l, NULL, true);
}

void qrdma_link_unrealize(QrdmaCore *core)
{
    QrdmaLink *l = &core->link;

    if (!l->rx_bh) {
        return;
    }
    /* The chardev outlives an unplugged device: the peer must let go. */
    if (l->connected && l->state != QRDMA_LINK_DOWN) {
        qrdma_link_send(l, QRDMA_LINK_MSG_BYE, NULL, 0, NULL, 0);
    }
    qemu_chr_fe_deinit(&l->chr, false);
    migration_remove_notifier(&l->migration);
    qrdma_link_drop_rings(l);
    qrdma_link_close_msg_fds(l);
    timer_free(l->stall_timer);
    timer_free(l->retry_timer);
    qemu_bh_delete(l->rx_bh);
    l->rx_bh = NULL;
    event_notifier_set_handler(&l->notify, NULL);
    event_notifier_cleanup(&l->notify);
}
