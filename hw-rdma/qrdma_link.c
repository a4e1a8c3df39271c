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
 *
 * Unless the sender shares its guest's RAM (link-share-ram=on, on RAM
 * that is a sealed memfd): then the payload of an RC SEND or WRITE
 * request stays where the guest put it, its slot naming it by extents,
 * and crosses once, when the receiver copies it into its own guest
 * after its own checks (rkey, receive WQE).  Such a request completes
 * only once the peer has ACKed it, so after its copy; what else lets
 * the guest reuse memory a slot may name (its commands: deregistering
 * an MR, destroying a QP; a reset) waits for the peer to take the slot
 * first, or takes the RAM back (ram_revoked) and the link down.
 */

#include "qemu/osdep.h"
#include <sys/mman.h>
#include "qapi/error.h"
#include "qemu/error-report.h"
#include "qemu/log.h"
#include "qemu/main-loop.h"
#include "qemu/memfd.h"
#include "exec/cpu-common.h"
#include <sys/vfs.h>
#include <linux/magic.h>
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
/* The least payload the peer is better off copying from our RAM. */
#define QRDMA_LINK_ONE_COPY_MIN 4096u

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
    unsigned i;

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
        /*
         * The peer may have yet to hear that we let go: nothing our
         * slots name is to be read now, as the guest may reuse it.
         */
        qatomic_store_release(&qrdma_link_hdr(l)->ram_revoked, 1);
        if (l->extents_out) {
            trace_qrdma_link_revoked(l->extents_prod);
        }
        munmap(l->ring, QRDMA_LINK_RING_BYTES);
        l->ring = NULL;
        close(l->ring_fd);
        l->ring_fd = -1;
    }
    for (i = 0; i < QRDMA_LINK_RAM_REGIONS; i++) {
        if (l->peer_ram[i]) {
            munmap((void *)l->peer_ram[i], l->peer_ram_bytes[i]);
            l->peer_ram[i] = NULL;
        }
    }
    l->nram = 0;
    l->extents_out = false;
    l->revoked = false;
    if (l->fencing) {
        l->fencing = false;
        timer_del(l->fence_timer);
        qemu_bh_schedule(core->cmdq.bh);
    }
    memset(&l->peer_gids, 0, sizeof(l->peer_gids));
    /* What waited for the ring to drain goes on the wire now. */
    if (core->dp_bh) {
        qemu_bh_schedule(core->dp_bh);
    }
}

/*
 * Whether fd is a memfd whose bytes can be read for as long as it is
 * mapped (*bytes of them): it cannot shrink, and no read of it has to
 * find a huge page that may not be there.
 */
static const char *qrdma_link_check_ram_fd(int fd, uint64_t *bytes)
{
    struct statfs sfs;
    struct stat st;
    int seals;

    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size <= 0) {
        return "RAM is not a file";
    }
    seals = fcntl(fd, F_GET_SEALS);
    if (seals < 0 || !(seals & F_SEAL_SHRINK)) {
        return "RAM not sealed against shrinking";
    }
    if (fstatfs(fd, &sfs) < 0 || sfs.f_type == HUGETLBFS_MAGIC) {
        return "RAM of huge pages";
    }
    *bytes = st.st_size;
    return NULL;
}

static int qrdma_link_find_ram(RAMBlock *rb, void *opaque)
{
    QrdmaLink *l = opaque;
    int fd = qemu_ram_get_fd(rb);
    uint64_t off = qrdma_ram_fd_offset(rb), bytes;
    QrdmaLinkRam *r;

    if (l->nram == QRDMA_LINK_RAM_REGIONS || fd < 0 ||
        !qemu_ram_is_shared(rb) || qrdma_link_check_ram_fd(fd, &bytes) ||
        off > bytes || qemu_ram_get_used_length(rb) > bytes - off) {
        return 0;
    }
    r = &l->ram[l->nram++];
    r->rb = rb;
    r->fd = fd;
    r->fd_offset = off;
    r->bytes = bytes;
    r->acked = false;
    return 0;
}

/* Offer the peer our guest's RAM, for this session. */
static void qrdma_link_offer_ram(QrdmaLink *l)
{
    unsigned i;

    l->nram = 0;
    qemu_ram_foreach_block(qrdma_link_find_ram, l);
    for (i = 0; i < l->nram; i++) {
        struct qrdma_link_ram r = {
            .id = i,
            .epoch = l->epoch,
            .bytes = l->ram[i].bytes,
        };

        trace_qrdma_link_ram_offered(i, l->epoch, r.bytes);
        qrdma_link_send(l, QRDMA_LINK_MSG_RAM, &r, sizeof(r), &l->ram[i].fd,
                        1);
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
    l->epoch++;
    qrdma_link_send(l, QRDMA_LINK_MSG_HELLO, &h, sizeof(h), fds, 2);
    l->state = QRDMA_LINK_SENT;
    trace_qrdma_link_hello_sent();
    if (l->share_ram) {
        qrdma_link_offer_ram(l);
    }
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

    if (l->connected && !l->migrating &&
        (l->state == QRDMA_LINK_DOWN || l->revoked)) {
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

/* The peer's RAM for this session: mapped, and the peer told. */
static void qrdma_link_take_ram(QrdmaLink *l, const struct qrdma_link_ram *r)
{
    struct qrdma_link_ram_ack ack = { .id = r->id, .epoch = r->epoch };
    const char *why = NULL;
    uint64_t bytes = 0;
    void *p;

    if (l->msg_nfds != 1) {
        why = "RAM without its memfd";
    } else if (l->state != QRDMA_LINK_UP) {
        /* Of a session that ended here: the peer will hear. */
        qrdma_link_close_msg_fds(l);
        return;
    } else if (r->id >= QRDMA_LINK_RAM_REGIONS || l->peer_ram[r->id]) {
        why = "RAM of an id out of range, or taken";
    } else {
        why = qrdma_link_check_ram_fd(l->msg_fds[0], &bytes);
        if (!why && (!r->bytes || r->bytes > bytes)) {
            why = "RAM longer than its memfd";
        }
    }
    if (why) {
        qrdma_link_close_msg_fds(l);
        qrdma_link_fail(l, why);
        return;
    }
    p = mmap(NULL, r->bytes, PROT_READ, MAP_SHARED, l->msg_fds[0], 0);
    qrdma_link_close_msg_fds(l);
    if (p != MAP_FAILED) {
        l->peer_ram[r->id] = p;
        l->peer_ram_bytes[r->id] = r->bytes;
        ack.mapped = 1;
    }
    trace_qrdma_link_ram_mapped(r->id, r->epoch, r->bytes, ack.mapped);
    qrdma_link_send(l, QRDMA_LINK_MSG_RAM_ACK, &ack, sizeof(ack), NULL, 0);
}

static void qrdma_link_take_ram_ack(QrdmaLink *l,
                                    const struct qrdma_link_ram_ack *a)
{
    /* An answer to an offer of an earlier session is of no use now. */
    if (a->epoch != l->epoch || l->state == QRDMA_LINK_DOWN || l->revoked) {
        return;
    }
    if (a->id >= l->nram || a->mapped > 1 || a->rsvd) {
        qrdma_link_fail(l, "RAM_ACK of RAM not offered");
        return;
    }
    trace_qrdma_link_ram_acked(a->id, a->epoch, a->mapped);
    if (a->mapped && l->ram[a->id].rb) {
        l->ram[a->id].acked = true;
    }
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
    case QRDMA_LINK_MSG_RAM:
        qrdma_link_take_ram(l, body);
        return;
    case QRDMA_LINK_MSG_RAM_ACK:
        qrdma_link_take_ram_ack(l, body);
        break;
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
    /* Only HELLO and RAM bring fds. */
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
    case QRDMA_LINK_MSG_RAM:
        return sizeof(struct qrdma_link_ram);
    case QRDMA_LINK_MSG_RAM_ACK:
        return sizeof(struct qrdma_link_ram_ack);
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
        struct qrdma_link_ram ram;
        struct qrdma_link_ram_ack ram_ack;
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

bool qrdma_link_one_copy(const QrdmaLink *l)
{
    unsigned i;

    if (l->revoked) {
        return false;
    }
    for (i = 0; i < l->nram; i++) {
        if (l->ram[i].acked) {
            return true;
        }
    }
    return false;
}

/*
 * Whether the peer may copy pkt's payload from our guest's RAM: an RC
 * request's (completed only once ACKed, so after the copy), that is in
 * guest memory, large enough, while no command waits for the peer.
 */
static bool qrdma_link_by_reference(QrdmaLink *l, const QrdmaPkt *pkt)
{
    uint32_t f = qrdma_pkt_flags(pkt);

    return !l->fencing && qrdma_link_one_copy(l) &&
           pkt->paylen >= QRDMA_LINK_ONE_COPY_MIN &&
           QRDMA_OP_TRANSPORT(pkt->opcode) == QRDMA_OP_RC &&
           (f & (QRDMA_OPF_SEND | QRDMA_OPF_WRITE)) &&
           !(f & QRDMA_OPF_RESP) &&
           !qrdma_iter_is_host(pkt->payload);
}

typedef struct QrdmaLinkExtentsOut {
    QrdmaLink *l;
    struct qrdma_link_extents *x;       /* in the slot */
} QrdmaLinkExtentsOut;

/* The extent of our shared RAM at host, len bytes, after those in x. */
static bool qrdma_link_add_extent(void *opaque, void *host, uint64_t len)
{
    QrdmaLinkExtentsOut *out = opaque;
    QrdmaLink *l = out->l;
    struct qrdma_link_extents *x = out->x;
    struct qrdma_link_extent *prev = x->n ? &x->e[x->n - 1] : NULL;
    ram_addr_t off;
    RAMBlock *rb = qemu_ram_block_from_host(host, false, &off);
    unsigned i;

    for (i = 0; i < l->nram; i++) {
        if (rb && l->ram[i].rb == rb && l->ram[i].acked) {
            break;
        }
    }
    if (i == l->nram) {
        return false;
    }
    off += l->ram[i].fd_offset;
    /* One payload's pieces are seldom apart in the guest's memory. */
    if (prev && prev->ram == i && prev->offset + prev->len == off) {
        prev->len += len;
        return true;
    }
    if (x->n == QRDMA_LINK_EXTENTS_MAX) {
        return false;
    }
    x->e[x->n].ram = i;
    x->e[x->n].len = len;
    x->e[x->n].offset = off;
    x->n++;
    return true;
}

/*
 * Packets first .. first + n - 1 of pkt, paylen bytes of payload, into
 * the next slot: the payload itself, or with extents (by_ref) where it
 * is in our guest's RAM.  False, the payload where it was, when it could
 * not be read, or named.
 */
static bool qrdma_link_put(QrdmaLink *l, const QrdmaPkt *pkt, uint32_t first,
                           uint32_t n, uint32_t paylen, bool by_ref)
{
    uint32_t slot = l->prod % QRDMA_LINK_SLOTS;
    struct qrdma_link_desc *d = (struct qrdma_link_desc *)
        (l->ring + QRDMA_LINK_DESC_OFFSET) + slot;
    uint8_t *data = l->ring + QRDMA_LINK_DATA_OFFSET +
                    (uint64_t)slot * QRDMA_LINK_SLOT_BYTES;
    bool last = first + n == pkt->npkts;

    if (by_ref) {
        QrdmaIter saved = *pkt->payload;
        QrdmaLinkExtentsOut out = {
            .l = l,
            .x = (struct qrdma_link_extents *)data,
        };

        out.x->n = 0;
        if (!qrdma_iter_each_host(pkt->payload, paylen, qrdma_link_add_extent,
                                  &out)) {
            *pkt->payload = saved;
            return false;
        }
    } else if (paylen) {
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
               (last && pkt->ack_req ? QRDMA_LINK_DESC_ACK_REQ : 0) |
               (by_ref ? QRDMA_LINK_DESC_EXTENTS : 0);
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
    if (by_ref) {
        l->extents_out = true;
        l->extents_prod = l->prod;
    }
    return true;
}

bool qrdma_link_route(QrdmaCore *core, QrdmaPkt *pkt)
{
    QrdmaLink *l = &core->link;
    uint32_t mtu = pkt->mtu ? pkt->mtu : 4096;
    uint32_t per_slot = MAX(QRDMA_LINK_SLOT_BYTES / mtu, 1);
    uint32_t left = pkt->paylen, i, n;
    bool by_ref;

    if (!qrdma_link_carries(core, pkt->dgid)) {
        return false;
    }
    by_ref = qrdma_link_by_reference(l, pkt);
    for (i = 0; i < pkt->npkts; i += n) {
        uint32_t paylen;

        if (qrdma_link_in_use(l) >= QRDMA_LINK_SLOTS) {
            /* Lost, as a frame the NIC had no room for. */
            core->counters.link_tx_dropped += pkt->npkts - i;
            trace_qrdma_link_tx_full(pkt->dqpn, pkt->opcode, pkt->psn);
            break;
        }
        if (by_ref) {
            n = MIN(QRDMA_LINK_EXTENT_PKTS, pkt->npkts - i);
            paylen = i + n == pkt->npkts ? left : MIN(left, n * mtu);
            if (qrdma_link_put(l, pkt, i, n, paylen, true)) {
                left -= paylen;
                core->counters.link_pkts_sent += n;
                core->counters.link_pkts_one_copy += n;
                continue;
            }
            /* Not all of it in RAM we share: the rest through the ring. */
            by_ref = false;
        }
        n = MIN(per_slot, pkt->npkts - i);
        paylen = i + n == pkt->npkts ? left : MIN(left, n * mtu);
        if (!qrdma_link_put(l, pkt, i, n, paylen, false)) {
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

/* Whether the peer has yet to take a slot that names our guest's RAM. */
static bool qrdma_link_extents_untaken(QrdmaLink *l)
{
    return l->state == QRDMA_LINK_UP && l->extents_out &&
           (int32_t)(l->extents_prod -
                     qatomic_load_acquire(&qrdma_link_peer_hdr(l)->cons)) > 0;
}

bool qrdma_link_fence(QrdmaCore *core)
{
    QrdmaLink *l = &core->link;

    if (!qrdma_link_one_copy(l) || l->state != QRDMA_LINK_UP) {
        return true;
    }
    /* From here to the commands' end, no slot names guest RAM. */
    l->fencing = true;
    if (!qrdma_link_extents_untaken(l)) {
        return true;
    }
    qatomic_set(&qrdma_link_hdr(l)->tx_wait, 1);
    /* Its cons read after our tx_wait is seen: see qrdma_link_busy(). */
    smp_mb();
    if (!qrdma_link_extents_untaken(l)) {
        return true;
    }
    trace_qrdma_link_fence_wait(l->extents_prod,
        qatomic_load_acquire(&qrdma_link_peer_hdr(l)->cons));
    if (!timer_pending(l->fence_timer)) {
        timer_mod(l->fence_timer, qemu_clock_get_ms(QEMU_CLOCK_REALTIME) +
                  QRDMA_LINK_STALL_MS);
    }
    return false;
}

void qrdma_link_fence_done(QrdmaCore *core)
{
    core->link.fencing = false;
}

static void qrdma_link_fence_expired(void *opaque)
{
    QrdmaLink *l = opaque;

    if (l->fencing && qrdma_link_extents_untaken(l)) {
        qrdma_link_fail(l, "peer left packets naming our RAM for a second");
    }
}

void qrdma_link_revoke(QrdmaCore *core)
{
    QrdmaLink *l = &core->link;

    if (!qrdma_link_extents_untaken(l)) {
        return;
    }
    trace_qrdma_link_revoked(l->extents_prod);
    qatomic_store_release(&qrdma_link_hdr(l)->ram_revoked, 1);
    /* What the peer drops comes again, through the ring. */
    l->revoked = true;
    l->extents_out = false;
    if (l->fencing) {
        timer_del(l->fence_timer);
        qemu_bh_schedule(core->cmdq.bh);
    }
    /* A new session, in which the peer may read our RAM again. */
    timer_mod(l->retry_timer, qemu_clock_get_ms(QEMU_CLOCK_REALTIME));
}

/* A block of guest RAM is going away: it is shared no more. */
static void qrdma_link_ram_removed(RAMBlockNotifier *n, void *host,
                                   size_t size, size_t max_size)
{
    QrdmaLink *l = container_of(n, QrdmaLink, ram_notifier);
    unsigned i;

    for (i = 0; i < l->nram; i++) {
        if (l->ram[i].rb && qemu_ram_get_host_addr(l->ram[i].rb) == host) {
            trace_qrdma_link_ram_gone(i);
            l->ram[i].rb = NULL;
            l->ram[i].acked = false;
        }
    }
}

/* Receiving */

/* Whether the packets of a descriptor are ones the engines could send. */
static const char *qrdma_link_check_desc(QrdmaLink *l,
                                         const struct qrdma_link_desc *d)
{
    uint32_t f = qrdma_op_flags(d->opcode);
    uint32_t kinds = QRDMA_OPF_SEND | QRDMA_OPF_WRITE | QRDMA_OPF_RESP;
    bool ext = d->flags & QRDMA_LINK_DESC_EXTENTS;

    if (!f) {
        return "unknown opcode";
    }
    if (ext ? d->npkts == 0 || d->npkts > QRDMA_LINK_EXTENT_PKTS ||
              d->paylen > d->npkts * 4096 :
              d->npkts == 0 || d->npkts > QRDMA_LINK_SLOT_BYTES / 256 ||
              d->paylen > QRDMA_LINK_SLOT_BYTES) {
        return "burst of a size no slot holds";
    }
    if (ext && (!d->paylen || QRDMA_OP_TRANSPORT(d->opcode) != QRDMA_OP_RC ||
                !(f & (QRDMA_OPF_SEND | QRDMA_OPF_WRITE)) ||
                (f & QRDMA_OPF_RESP))) {
        return "extents where only an RC request's payload may have them";
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
    if (d->flags & ~(QRDMA_LINK_DESC_SOLICITED | QRDMA_LINK_DESC_ACK_REQ |
                     QRDMA_LINK_DESC_EXTENTS)) {
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

/*
 * The pieces of the peer's RAM that the extents in slot name, as
 * rx_iov[0 .. *n - 1]: each read out of the slot once, and checked to
 * lie in RAM the peer shared in this session, together paylen bytes.
 */
static const char *qrdma_link_take_extents(QrdmaLink *l, uint32_t slot,
                                           uint32_t paylen, unsigned *n)
{
    const uint8_t *data = l->peer_ring + QRDMA_LINK_DATA_OFFSET +
                          (uint64_t)slot * QRDMA_LINK_SLOT_BYTES;
    uint64_t total = 0;
    uint32_t count, i;

    memcpy(&count, data + offsetof(struct qrdma_link_extents, n),
           sizeof(count));
    if (count == 0 || count > QRDMA_LINK_EXTENTS_MAX) {
        return "extents of a count no slot holds";
    }
    for (i = 0; i < count; i++) {
        struct qrdma_link_extent e;

        memcpy(&e, data + offsetof(struct qrdma_link_extents, e) +
               i * sizeof(e), sizeof(e));
        if (e.ram >= QRDMA_LINK_RAM_REGIONS || !l->peer_ram[e.ram]) {
            return "extent in RAM the peer did not share";
        }
        if (!e.len || e.offset > l->peer_ram_bytes[e.ram] ||
            e.len > l->peer_ram_bytes[e.ram] - e.offset) {
            return "extent beyond its RAM";
        }
        total += e.len;
        if (total > paylen) {
            return "extents longer than the payload";
        }
        l->rx_iov[i].iov_base = (void *)(l->peer_ram[e.ram] + e.offset);
        l->rx_iov[i].iov_len = e.len;
    }
    if (total != paylen) {
        return "extents shorter than the payload";
    }
    *n = count;
    return NULL;
}

/*
 * A packet of slot to the engines, its payload read from the slot, or
 * from the peer's RAM (the niov pieces of rx_iov).
 */
static void qrdma_link_deliver(QrdmaLink *l, QrdmaPkt *pkt, uint32_t slot,
                               unsigned niov)
{
    QrdmaCore *core = l->core;
    QrdmaIter payload;

    if (niov) {
        qrdma_iter_hostv(&payload, l->rx_iov, niov);
        pkt->payload = &payload;
    } else if (pkt->paylen) {
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
        unsigned niov = 0;

        /* Once: the peer may change the slot while we look at our copy. */
        memcpy(&d, src, sizeof(d));
        why = qrdma_link_check_desc(l, &d);
        if (!why && (d.flags & QRDMA_LINK_DESC_EXTENTS)) {
            why = qrdma_link_take_extents(l, slot, d.paylen, &niov);
        }
        if (why) {
            qrdma_link_fail(l, why);
            return false;
        }
        qrdma_link_unpack(&d, &pkt);
        if (!qrdma_fabric_owns_gid(core, pkt.dgid)) {
            /* A GID we dropped just now, which the peer has yet to hear. */
            core->counters.pkts_dropped++;
            trace_qrdma_link_rx_not_ours(pkt.dqpn, pkt.opcode, pkt.psn);
        } else if (niov &&
                   qatomic_load_acquire(&qrdma_link_peer_hdr(l)->ram_revoked)) {
            /* The peer's guest may have reused what it names: lost. */
            core->counters.pkts_dropped++;
            trace_qrdma_link_rx_revoked(pkt.dqpn, pkt.opcode, pkt.psn);
        } else {
            qrdma_link_deliver(l, &pkt, slot, niov);
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
    if (l->fencing) {
        /* Commands wait for the peer: woken again when it takes more. */
        if (qrdma_link_extents_untaken(l)) {
            qatomic_set(&qrdma_link_hdr(l)->tx_wait, 1);
            /* Its cons read after our tx_wait is seen, as in busy(). */
            smp_mb();
        }
        if (!qrdma_link_extents_untaken(l)) {
            timer_del(l->fence_timer);
            qemu_bh_schedule(core->cmdq.bh);
        }
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
        if (l->share_ram) {
            error_setg(errp, "qrdma: link-share-ram needs a link");
        }
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
    l->fence_timer = timer_new_ms(QEMU_CLOCK_REALTIME,
                                  qrdma_link_fence_expired, l);
    l->rx_iov = g_new(struct iovec, QRDMA_LINK_EXTENTS_MAX);
    if (l->share_ram) {
        qemu_ram_foreach_block(qrdma_link_find_ram, l);
        if (!l->nram) {
            warn_report("qrdma: link-share-ram: no guest RAM is a sealed "
                        "memfd (memory-backend-memfd,share=on): the link "
                        "copies through its ring");
        }
        l->nram = 0;
        l->ram_notifier.ram_block_removed = qrdma_link_ram_removed;
        ram_block_notifier_add(&l->ram_notifier);
    }
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
    timer_free(l->fence_timer);
    g_free(l->rx_iov);
    l->rx_iov = NULL;
    if (l->share_ram) {
        ram_block_notifier_remove(&l->ram_notifier);
    }
    qemu_bh_delete(l->rx_bh);
    l->rx_bh = NULL;
    event_notifier_set_handler(&l->notify, NULL);
    event_notifier_cleanup(&l->notify);
}
