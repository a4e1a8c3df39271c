/*
 * QTest: the same-host link (hw/rdma/qrdma_link.c, hw/rdma/qrdma-link.h)
 *
 * Copyright (c) 2026 The qrdma developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * Two ways in.  dp/link-rc links qrdma0 and qrdma1 of this QEMU through
 * a socket chardev pair, their netdevs on a hub the test listens to: the
 * verbs work, the data arrives, and no frame takes the wire.  The others
 * make the test the peer at the other end of qrdma0's link: it reads the
 * device's ring, answers through a ring of its own, and breaks each rule
 * of the protocol in turn; the device must cut the link, count it, offer
 * the link again, and never crash (the qtests run under ASan and UBSan).
 */

#include "qemu/osdep.h"
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include "qemu/module.h"
#include "qemu/timer.h"
#include "qobject/qdict.h"
#include "libqtest.h"
#include "qrdma-dp.h"
#include "hw/rdma/qrdma-link.h"

/* BTH opcodes, as the InfiniBand specification numbers them */
#define OP_RC_SEND_LAST         0x02
#define OP_RC_SEND_ONLY         0x04
#define OP_RC_WRITE_FIRST       0x06
#define OP_RC_WRITE_LAST        0x08
#define OP_RC_READ_RESP_ONLY    0x10
#define OP_RC_ACK               0x11
#define OP_UD_SEND_ONLY         0x64
/* an AETH syndrome: ACK, credits not counted */
#define AETH_ACK_NO_CREDITS     0x1f

#ifndef F_SEAL_FUTURE_WRITE
#define F_SEAL_FUTURE_WRITE 0x0010
#endif

typedef struct LinkSetup {
    char *dir;
    char *path;
    int cap[2];                         /* the hub's port: [0] the test's */
} LinkSetup;

static void link_cleanup(void *opaque)
{
    LinkSetup *s = opaque;

    close(s->cap[0]);
    qos_invalidate_command_line();
    close(s->cap[1]);
    unlink(s->path);
    rmdir(s->dir);
    g_free(s->path);
    g_free(s->dir);
    g_free(s);
}

static LinkSetup *link_setup_new(void)
{
    LinkSetup *s = g_new0(LinkSetup, 1);

    s->dir = g_dir_make_tmp("qrdma-link-XXXXXX", NULL);
    g_assert_nonnull(s->dir);
    s->path = g_strdup_printf("%s/link.sock", s->dir);
    g_assert_cmpint(socketpair(PF_UNIX, SOCK_DGRAM, 0, s->cap), ==, 0);
    g_test_queue_destroy(link_cleanup, s);
    return s;
}

/* qrdma0 and qrdma1 linked, both on hub 7 with the test's socket. */
static void *link_pair_setup(GString *cmd_line, void *arg)
{
    LinkSetup *s = link_setup_new();

    g_string_append_printf(cmd_line,
        " -netdev hubport,id=w0,hubid=7 -netdev hubport,id=w1,hubid=7"
        " -netdev dgram,id=cap,local.type=fd,local.str=%d"
        " -netdev hubport,id=w2,hubid=7,netdev=cap"
        " -chardev socket,id=l0,path=%s,server=on,wait=off"
        " -chardev socket,id=l1,path=%s,reconnect-ms=50"
        " -device qrdma-fabric,id=f1"
        " -device qrdma,addr=05.0,id=qrdma1,fabric=f1,netdev=w1,link=l1,mac="
        QRDMA_DP_WIRE_MAC1 " ", s->cap[1], s->path, s->path);
    return s;
}

/*
 * Guest RAM as memory-backend-memfd,share=on makes, sealed: what the
 * one-copy mode shares.
 */
#define LINK_SHARED_RAM \
    " -object memory-backend-memfd,id=ram0,size=128M,share=on" \
    " -machine memory-backend=ram0"

static void *link_pair_shared_setup(GString *cmd_line, void *arg)
{
    LinkSetup *s = link_pair_setup(cmd_line, arg);

    g_string_append(cmd_line, LINK_SHARED_RAM
                    " -global qrdma.link-share-ram=on ");
    return s;
}

/* qrdma0 linked to a socket the test connects to; no netdev. */
static void *link_peer_setup(GString *cmd_line, void *arg)
{
    LinkSetup *s = link_setup_new();

    g_string_append_printf(cmd_line,
        " -chardev socket,id=l0,path=%s,server=on,wait=off ", s->path);
    return s;
}

static void *link_peer_shared_setup(GString *cmd_line, void *arg)
{
    LinkSetup *s = link_peer_setup(cmd_line, arg);

    g_string_append(cmd_line, LINK_SHARED_RAM " ");
    return s;
}

static bool qom_bool(QrdmaT *t, const char *prop)
{
    QDict *rsp;
    bool val;

    rsp = qtest_qmp(t->qts, "{ 'execute': 'qom-get', 'arguments': "
                    "{ 'path': %s, 'property': %s } }",
                    t->qom_path ? t->qom_path : QRDMA_QOM_PATH, prop);
    g_assert(qdict_haskey(rsp, "return"));
    val = qdict_get_bool(rsp, "return");
    qobject_unref(rsp);
    return val;
}

static bool link_up(QrdmaT *t)
{
    return qom_bool(t, "link-up");
}

/* Waits up to 5 s for the link's state to be want. */
static void link_expect_up(QrdmaT *t, bool want)
{
    int i;

    for (i = 0; i < 500 && link_up(t) != want; i++) {
        g_usleep(10 * 1000);
    }
    g_assert_cmpint(link_up(t), ==, want);
}

/* Waits up to 5 s for the peer to have mapped the device's RAM. */
static void link_expect_one_copy(QrdmaT *t)
{
    int i;

    for (i = 0; i < 500 && !qom_bool(t, "link-one-copy"); i++) {
        g_usleep(10 * 1000);
    }
    g_assert_true(qom_bool(t, "link-one-copy"));
}

static const uint8_t gid15[16] = { [10] = 0xff, [11] = 0xff, 10, 0, 2, 15 };
static const uint8_t gid16[16] = { [10] = 0xff, [11] = 0xff, 10, 0, 2, 16 };
static const uint8_t gid_group[16] = { 0xff };

/*
 * An RDMA WRITE (opcode) of len bytes of e0's data to e1's over a, or an
 * RDMA READ of them back into e0's, cleared first: the bytes that arrive
 * checked against src.
 */
static void link_rdma(QrdmaDpEnv *e0, QrdmaDpQp *a, QrdmaDpEnv *e1,
                      uint8_t opcode, uint64_t wr_id, const uint8_t *src,
                      uint8_t *got, uint32_t len)
{
    bool read = opcode == QRDMA_WR_RDMA_READ;
    QrdmaDpEnv *to = read ? e0 : e1;
    struct qrdma_sq_wqe w;

    if (read) {
        qtest_memset(e0->t.qts, e0->data, 0, len);
    }
    w = qrdma_dp_wqe_sge(wr_id, opcode, e0->data, len, e0->lkey);
    w.rdma.remote_addr = cpu_to_le64(e1->data);
    w.rdma.rkey = cpu_to_le32(e1->rkey);
    qrdma_dp_post_send(e0, a, &w);
    qrdma_dp_expect_cqe(e0, &e0->cq, wr_id, a->qpn,
                        read ? QRDMA_WC_RDMA_READ : QRDMA_WC_RDMA_WRITE,
                        QRDMA_WC_SUCCESS);
    qtest_memread(to->t.qts, to->data, got, len);
    g_assert_cmpmem(got, len, src, len);
}

static void test_link_rc(void *obj, void *data, QGuestAllocator *alloc)
{
    enum { LEN = 3000, BIG = 60 * 1024 };
    LinkSetup *s = data;
    g_autofree uint8_t *src = g_malloc(BIG), *got = g_malloc(BIG);
    struct qrdma_sq_wqe w;
    uint64_t sent0, sent1, rcvd1;
    QQrdma q1;
    QrdmaDpEnv e0, e1;
    QrdmaDpQp a, b;
    int i;

    qrdma_dp_wire_envs(obj, alloc, &q1, &e0, &e1);
    link_expect_up(&e0.t, true);
    link_expect_up(&e1.t, true);
    e0.path_mtu = e1.path_mtu = 3;      /* 1024 */
    for (i = 0; i < BIG; i++) {
        src[i] = i * 13 + 5;
    }
    qtest_memwrite(e0.t.qts, e0.data, src, BIG);
    qrdma_dp_connect_rc(&e0, &a, &e1, &b, true);

    /* a SEND of 3 packets, each way the link's */
    sent0 = qrdma_t_qom_get(&e0.t, "link-pkts-sent");
    rcvd1 = qrdma_t_qom_get(&e1.t, "link-pkts-rcvd");
    sent1 = qrdma_t_qom_get(&e1.t, "link-pkts-sent");
    qrdma_dp_post_recv(&e1, &b, 0xb1, e1.data + 8192, 4096, e1.lkey);
    w = qrdma_dp_wqe_sge(0xa1, QRDMA_WR_SEND, e0.data, LEN, e0.lkey);
    qrdma_dp_post_send(&e0, &a, &w);
    qrdma_dp_expect_cqe(&e1, &e1.cq, 0xb1, b.qpn, QRDMA_WC_RECV,
                        QRDMA_WC_SUCCESS);
    qrdma_dp_expect_cqe(&e0, &e0.cq, 0xa1, a.qpn, QRDMA_WC_SEND,
                        QRDMA_WC_SUCCESS);
    qtest_memread(e1.t.qts, e1.data + 8192, got, LEN);
    g_assert_cmpmem(got, LEN, src, LEN);
    g_assert_cmpuint(qrdma_t_qom_get(&e0.t, "link-pkts-sent"), ==, sent0 + 3);
    g_assert_cmpuint(qrdma_t_qom_get(&e1.t, "link-pkts-rcvd"), ==, rcvd1 + 3);
    g_assert_cmpuint(qrdma_t_qom_get(&e1.t, "link-pkts-sent"), ==, sent1 + 1);

    /* WRITE 60 KiB to qrdma1, READ it back over the one it overwrote */
    link_rdma(&e0, &a, &e1, QRDMA_WR_RDMA_WRITE, 0xa2, src, got, BIG);
    link_rdma(&e0, &a, &e1, QRDMA_WR_RDMA_READ, 0xa3, src, got, BIG);

    /* an atomic: the old value back, the new one in place */
    qtest_writeq(e1.t.qts, e1.data + 4096 * 15, 40);
    w = qrdma_dp_wqe_sge(0xa4, QRDMA_WR_ATOMIC_FETCH_AND_ADD,
                         e0.data + 4096 * 15, 8, e0.lkey);
    w.rdma.remote_addr = cpu_to_le64(e1.data + 4096 * 15);
    w.rdma.rkey = cpu_to_le32(e1.rkey);
    w.rdma.compare_add = cpu_to_le64(2);
    qrdma_dp_post_send(&e0, &a, &w);
    qrdma_dp_expect_cqe(&e0, &e0.cq, 0xa4, a.qpn, QRDMA_WC_FETCH_ADD,
                        QRDMA_WC_SUCCESS);
    g_assert_cmpuint(qtest_readq(e1.t.qts, e1.data + 4096 * 15), ==, 42);
    g_assert_cmpuint(qtest_readq(e0.t.qts, e0.data + 4096 * 15), ==, 40);

    /* a bad rkey fails as on the wire: NAK, and the QP in error */
    w = qrdma_dp_wqe_sge(0xa5, QRDMA_WR_RDMA_WRITE, e0.data, 8, e0.lkey);
    w.rdma.remote_addr = cpu_to_le64(e1.data);
    w.rdma.rkey = cpu_to_le32(e1.rkey ^ 0x100);
    qrdma_dp_post_send(&e0, &a, &w);
    qrdma_dp_expect_cqe(&e0, &e0.cq, 0xa5, a.qpn, QRDMA_WC_RDMA_WRITE,
                        QRDMA_WC_REM_ACCESS_ERR);

    /* nothing of it went on the wire */
    g_assert_true(qrdma_dp_relay_quiet(s->cap[0]));
    g_assert_cmpuint(qrdma_t_qom_get(&e0.t, "link-errors"), ==, 0);
    g_assert_cmpuint(qrdma_t_qom_get(&e1.t, "link-errors"), ==, 0);
    g_assert_cmpuint(qrdma_t_qom_get(&e0.t, "link-tx-dropped"), ==, 0);
}

/*
 * Both functions share their guest's RAM: the payload of a large SEND or
 * WRITE crosses by reference, counted in link-pkts-one-copy, a small
 * one and READ's responses through the ring; the data arrives all the
 * same.
 */
static void test_link_one_copy(void *obj, void *data, QGuestAllocator *alloc)
{
    enum { SMALL = 3000, MID = 16 * 1024, BIG = 60 * 1024 };
    LinkSetup *s = data;
    g_autofree uint8_t *src = g_malloc(BIG), *got = g_malloc(BIG);
    struct qrdma_sq_wqe w;
    uint64_t one0, one1;
    QQrdma q1;
    QrdmaDpEnv e0, e1;
    QrdmaDpQp a, b;
    int i;

    qrdma_dp_wire_envs(obj, alloc, &q1, &e0, &e1);
    link_expect_up(&e0.t, true);
    link_expect_up(&e1.t, true);
    g_assert_true(qom_bool(&e0.t, "link-one-copy"));
    g_assert_true(qom_bool(&e1.t, "link-one-copy"));
    e0.path_mtu = e1.path_mtu = 3;      /* 1024 */
    for (i = 0; i < BIG; i++) {
        src[i] = i * 7 + 3;
    }
    qtest_memwrite(e0.t.qts, e0.data, src, BIG);
    qrdma_dp_connect_rc(&e0, &a, &e1, &b, true);
    one0 = qrdma_t_qom_get(&e0.t, "link-pkts-one-copy");
    one1 = qrdma_t_qom_get(&e1.t, "link-pkts-one-copy");

    /* a small SEND through the ring */
    qrdma_dp_post_recv(&e1, &b, 0xb1, e1.data + BIG, 4096, e1.lkey);
    w = qrdma_dp_wqe_sge(0xa1, QRDMA_WR_SEND, e0.data, SMALL, e0.lkey);
    qrdma_dp_post_send(&e0, &a, &w);
    qrdma_dp_expect_cqe(&e1, &e1.cq, 0xb1, b.qpn, QRDMA_WC_RECV,
                        QRDMA_WC_SUCCESS);
    qrdma_dp_expect_cqe(&e0, &e0.cq, 0xa1, a.qpn, QRDMA_WC_SEND,
                        QRDMA_WC_SUCCESS);
    qtest_memread(e1.t.qts, e1.data + BIG, got, SMALL);
    g_assert_cmpmem(got, SMALL, src, SMALL);
    g_assert_cmpuint(qrdma_t_qom_get(&e0.t, "link-pkts-one-copy"), ==, one0);

    /* a SEND of 16 packets, by reference, from two SGEs */
    qrdma_dp_post_recv(&e1, &b, 0xb2, e1.data + BIG - MID, MID, e1.lkey);
    w = qrdma_dp_wqe_sge(0xa2, QRDMA_WR_SEND, e0.data, MID / 2, e0.lkey);
    w.sge[1].addr = cpu_to_le64(e0.data + MID / 2);
    w.sge[1].length = cpu_to_le32(MID / 2);
    w.sge[1].lkey = cpu_to_le32(e0.lkey);
    w.num_sge = 2;
    qrdma_dp_post_send(&e0, &a, &w);
    qrdma_dp_expect_cqe(&e1, &e1.cq, 0xb2, b.qpn, QRDMA_WC_RECV,
                        QRDMA_WC_SUCCESS);
    qrdma_dp_expect_cqe(&e0, &e0.cq, 0xa2, a.qpn, QRDMA_WC_SEND,
                        QRDMA_WC_SUCCESS);
    qtest_memread(e1.t.qts, e1.data + BIG - MID, got, MID);
    g_assert_cmpmem(got, MID, src, MID);
    g_assert_cmpuint(qrdma_t_qom_get(&e0.t, "link-pkts-one-copy"), ==,
                     one0 + MID / 1024);

    /* a WRITE of 60 packets, by reference */
    link_rdma(&e0, &a, &e1, QRDMA_WR_RDMA_WRITE, 0xa3, src, got, BIG);
    g_assert_cmpuint(qrdma_t_qom_get(&e0.t, "link-pkts-one-copy"), ==,
                     one0 + (MID + BIG) / 1024);

    /* READ's responses take the ring: nobody waits for their copy */
    link_rdma(&e0, &a, &e1, QRDMA_WR_RDMA_READ, 0xa4, src, got, BIG);
    g_assert_cmpuint(qrdma_t_qom_get(&e1.t, "link-pkts-one-copy"), ==, one1);

    g_assert_true(qrdma_dp_relay_quiet(s->cap[0]));
    g_assert_cmpuint(qrdma_t_qom_get(&e0.t, "link-errors"), ==, 0);
    g_assert_cmpuint(qrdma_t_qom_get(&e1.t, "link-errors"), ==, 0);
}

/* The test as qrdma0's peer */

typedef struct LinkPeer {
    int sock;
    /* The device's: its ring, read-only, and its eventfd. */
    const uint8_t *dev_ring;
    int dev_kick;
    /* Ours: the ring, and the eventfd the device wakes us with. */
    uint8_t *ring;
    int ring_fd;
    int kick;
    uint32_t prod, cons;
    /* The device's guest RAM, shared (read-only), and its session. */
    const uint8_t *dev_ram;
    uint64_t dev_ram_bytes;
    uint32_t dev_epoch;
} LinkPeer;

static void peer_connect(LinkPeer *p, const char *path)
{
    struct sockaddr_un sun = { .sun_family = AF_UNIX };
    int i;

    memset(p, 0, sizeof(*p));
    p->ring_fd = p->kick = p->dev_kick = -1;
    g_assert_cmpuint(strlen(path), <, sizeof(sun.sun_path));
    strcpy(sun.sun_path, path);
    p->sock = socket(AF_UNIX, SOCK_STREAM, 0);
    g_assert_cmpint(p->sock, >=, 0);
    for (i = 0; i < 200; i++) {
        if (!connect(p->sock, (struct sockaddr *)&sun, sizeof(sun))) {
            return;
        }
        g_usleep(10 * 1000);
    }
    g_assert_not_reached();
}

static bool peer_readable(LinkPeer *p, int ms)
{
    struct pollfd pfd = { .fd = p->sock, .events = POLLIN };

    return poll(&pfd, 1, ms) == 1;
}

/*
 * The next message within 3 s, its body into body (of room bytes), the
 * fds that came with it into fds[2]; -1 if the device closed the socket.
 */
static int peer_recv(LinkPeer *p, void *body, size_t room, int *fds,
                     int *nfds)
{
    struct qrdma_link_msg m;
    char cbuf[CMSG_SPACE(4 * sizeof(int))];
    struct iovec iov = { .iov_base = &m, .iov_len = sizeof(m) };
    struct msghdr mh = {
        .msg_iov = &iov, .msg_iovlen = 1,
        .msg_control = cbuf, .msg_controllen = sizeof(cbuf),
    };
    struct cmsghdr *c;
    ssize_t n;

    *nfds = 0;
    g_assert_true(peer_readable(p, 3000));
    n = recvmsg(p->sock, &mh, MSG_WAITALL | MSG_CMSG_CLOEXEC);
    if (n == 0) {
        return -1;
    }
    g_assert_cmpint(n, ==, sizeof(m));
    for (c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
            *nfds = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
            g_assert_cmpint(*nfds, <=, 2);
            memcpy(fds, CMSG_DATA(c), *nfds * sizeof(int));
        }
    }
    g_assert_cmpuint(m.len, <=, room);
    if (m.len) {
        g_assert_cmpint(recv(p->sock, body, m.len, MSG_WAITALL), ==, m.len);
    }
    return m.type;
}

/* The next message but GIDS must be want: its fds in fds. */
static void peer_expect(LinkPeer *p, int want, int *fds)
{
    struct qrdma_link_hello h;
    int type, nfds;

    do {
        type = peer_recv(p, &h, sizeof(h), fds, &nfds);
    } while (type == QRDMA_LINK_MSG_GIDS);
    g_assert_cmpint(type, ==, want);
    if (want == QRDMA_LINK_MSG_HELLO) {
        g_assert_cmpint(nfds, ==, 2);
        g_assert_cmphex(h.magic, ==, QRDMA_LINK_MAGIC);
        g_assert_cmpuint(h.version, ==, QRDMA_LINK_VERSION);
        g_assert_cmpuint(h.slots, ==, QRDMA_LINK_SLOTS);
        g_assert_cmpuint(h.slot_bytes, ==, QRDMA_LINK_SLOT_BYTES);
        g_assert_cmpuint(h.ring_bytes, ==, QRDMA_LINK_RING_BYTES);
    } else {
        g_assert_cmpint(nfds, ==, 0);
    }
}

static void peer_send(LinkPeer *p, uint32_t type, const void *body,
                      uint32_t len, int *fds, int nfds)
{
    struct {
        struct qrdma_link_msg m;
        uint8_t body[sizeof(struct qrdma_link_hello)];
    } buf = { .m = { .type = type, .len = len } };
    char cbuf[CMSG_SPACE(2 * sizeof(int))] = { 0 };
    struct iovec iov = { .iov_base = &buf, .iov_len = sizeof(buf.m) + len };
    struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

    g_assert_cmpuint(len, <=, sizeof(buf.body));
    if (len) {
        memcpy(buf.body, body, len);
    }
    if (nfds) {
        struct cmsghdr *c;

        mh.msg_control = cbuf;
        mh.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
        c = CMSG_FIRSTHDR(&mh);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(nfds * sizeof(int));
        memcpy(CMSG_DATA(c), fds, nfds * sizeof(int));
    }
    g_assert_cmpint(sendmsg(p->sock, &mh, 0), ==, iov.iov_len);
}

/* The device's HELLO: its ring, which no one can map writable. */
static void peer_take_hello(LinkPeer *p)
{
    int fds[2], seals;
    void *ring;

    peer_expect(p, QRDMA_LINK_MSG_HELLO, fds);
    seals = fcntl(fds[0], F_GET_SEALS);
    g_assert_cmpint(seals & (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL), ==,
                    F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
    if (seals & F_SEAL_FUTURE_WRITE) {
        g_assert_true(mmap(NULL, QRDMA_LINK_RING_BYTES, PROT_READ | PROT_WRITE,
                           MAP_SHARED, fds[0], 0) == MAP_FAILED);
    }
    ring = mmap(NULL, QRDMA_LINK_RING_BYTES, PROT_READ, MAP_SHARED, fds[0], 0);
    g_assert_true(ring != MAP_FAILED);
    close(fds[0]);
    if (p->dev_ring) {
        munmap((void *)p->dev_ring, QRDMA_LINK_RING_BYTES);
        close(p->dev_kick);
    }
    p->dev_ring = ring;
    p->dev_kick = fds[1];
}

/* A ring of ours, new, sealed as the device wants it unless unsealed. */
static int peer_ring_fd(uint64_t size, bool sealed)
{
    int fd = memfd_create("qrdma-link-peer", MFD_ALLOW_SEALING);

    g_assert_cmpint(fd, >=, 0);
    g_assert_cmpint(ftruncate(fd, size), ==, 0);
    if (sealed) {
        g_assert_cmpint(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW),
                        ==, 0);
    }
    return fd;
}

/* A good HELLO of ours, announcing ::ffff:10.0.2.16, with nfds of fds. */
static void peer_send_hello(LinkPeer *p, int *fds, int nfds)
{
    struct qrdma_link_hello h = {
        .magic = QRDMA_LINK_MAGIC,
        .version = QRDMA_LINK_VERSION,
        .slots = QRDMA_LINK_SLOTS,
        .slot_bytes = QRDMA_LINK_SLOT_BYTES,
        .ring_bytes = QRDMA_LINK_RING_BYTES,
        .gids = { .valid = 1 },
    };

    memcpy(h.gids.gid[0], gid16, 16);
    peer_send(p, QRDMA_LINK_MSG_HELLO, &h, sizeof(h), fds, nfds);
}

static void peer_hello_with(LinkPeer *p, int ring_fd, int nfds)
{
    int fds[2] = { ring_fd, eventfd(0, EFD_NONBLOCK) };

    peer_send_hello(p, fds, nfds);
    close(fds[1]);
}

/* Our HELLO with a good new ring, mapped, and our eventfd. */
static void peer_hello(LinkPeer *p)
{
    int fds[2];

    if (p->ring) {
        munmap(p->ring, QRDMA_LINK_RING_BYTES);
        close(p->ring_fd);
        close(p->kick);
    }
    p->ring_fd = peer_ring_fd(QRDMA_LINK_RING_BYTES, true);
    p->ring = mmap(NULL, QRDMA_LINK_RING_BYTES, PROT_READ | PROT_WRITE,
                   MAP_SHARED, p->ring_fd, 0);
    g_assert_true(p->ring != MAP_FAILED);
    p->kick = eventfd(0, EFD_NONBLOCK);
    p->prod = p->cons = 0;
    fds[0] = p->ring_fd;
    fds[1] = p->kick;
    peer_send_hello(p, fds, 2);
}

static void peer_close(LinkPeer *p)
{
    close(p->sock);
    if (p->ring) {
        munmap(p->ring, QRDMA_LINK_RING_BYTES);
        close(p->ring_fd);
        close(p->kick);
    }
    if (p->dev_ring) {
        munmap((void *)p->dev_ring, QRDMA_LINK_RING_BYTES);
        close(p->dev_kick);
    }
    if (p->dev_ram) {
        munmap((void *)p->dev_ram, p->dev_ram_bytes);
    }
}

static struct qrdma_link_ring_hdr *peer_hdr(LinkPeer *p)
{
    return (struct qrdma_link_ring_hdr *)p->ring;
}

static const struct qrdma_link_ring_hdr *dev_hdr(LinkPeer *p)
{
    return (const struct qrdma_link_ring_hdr *)p->dev_ring;
}

static struct qrdma_link_desc *peer_desc(LinkPeer *p, uint32_t idx)
{
    return (struct qrdma_link_desc *)(p->ring + QRDMA_LINK_DESC_OFFSET) +
           idx % QRDMA_LINK_SLOTS;
}

/* Slot idx of our ring, cleared: npkts packets of opcode for dgid. */
static struct qrdma_link_desc *peer_desc_new(LinkPeer *p, uint32_t idx,
                                             uint32_t npkts, uint8_t opcode,
                                             const uint8_t *dgid)
{
    struct qrdma_link_desc *d = peer_desc(p, idx);

    memset(d, 0, sizeof(*d));
    d->npkts = npkts;
    d->opcode = opcode;
    memcpy(d->dgid, dgid, 16);
    return d;
}

/* Publish our ring's producer index, and wake the device. */
static void peer_publish(LinkPeer *p, uint32_t prod)
{
    uint64_t one = 1;

    __atomic_store_n(&peer_hdr(p)->prod, prod, __ATOMIC_RELEASE);
    g_assert_cmpint(write(p->dev_kick, &one, sizeof(one)), ==, sizeof(one));
}

/* Until the device has a descriptor for us, 2 s at most. */
static void peer_wait_desc(LinkPeer *p)
{
    int i;

    for (i = 0; i < 200; i++) {
        if (__atomic_load_n(&dev_hdr(p)->prod, __ATOMIC_ACQUIRE) != p->cons) {
            break;
        }
        g_usleep(10 * 1000);
    }
    g_assert_cmpuint(dev_hdr(p)->prod, !=, p->cons);
}

/* The device's next descriptor, within 2 s; its payload to payload. */
static struct qrdma_link_desc peer_next(LinkPeer *p, void *payload)
{
    struct qrdma_link_desc d;

    peer_wait_desc(p);
    memcpy(&d, (const struct qrdma_link_desc *)
           (p->dev_ring + QRDMA_LINK_DESC_OFFSET) + p->cons % QRDMA_LINK_SLOTS,
           sizeof(d));
    g_assert_cmpuint(d.paylen, <=, 4096);
    memcpy(payload, p->dev_ring + QRDMA_LINK_DATA_OFFSET +
           (uint64_t)(p->cons % QRDMA_LINK_SLOTS) * QRDMA_LINK_SLOT_BYTES,
           d.paylen);
    p->cons++;
    __atomic_store_n(&peer_hdr(p)->cons, p->cons, __ATOMIC_RELEASE);
    return d;
}

/*
 * The device offers the link again after it failed: BYE now, HELLO a
 * second later, which we answer.  link-errors has gone up by one.
 */
static void peer_after_error(LinkPeer *p, QrdmaDpEnv *e, uint64_t errors)
{
    int fds[2];

    qrdma_dp_wire_expect_count(e, "link-errors", errors + 1);
    link_expect_up(&e->t, false);
    peer_expect(p, QRDMA_LINK_MSG_BYE, fds);
    peer_take_hello(p);
    peer_hello(p);
    link_expect_up(&e->t, true);
}

/*
 * Each rule broken: the link down, counted, offered again; the device
 * goes on.
 */
static void test_link_hostile(void *obj, void *data, QGuestAllocator *alloc)
{
    LinkSetup *s = data;
    struct qrdma_link_desc *d;
    struct qrdma_link_hello h = { 0 };
    QrdmaDpEnv e;
    LinkPeer p;
    uint64_t errors;
    int fds[2];

    qrdma_dp_env_init(&e, obj, alloc);
    peer_connect(&p, s->path);
    peer_take_hello(&p);
    errors = qrdma_t_qom_get(&e.t, "link-errors");

    /* a HELLO without its fds */
    peer_hello_with(&p, -1, 0);
    qrdma_dp_wire_expect_count(&e, "link-errors", errors + 1);
    peer_expect(&p, QRDMA_LINK_MSG_BYE, fds);
    peer_take_hello(&p);
    g_assert_false(link_up(&e.t));

    /* a ring that could shrink under the device: it would fault */
    fds[0] = peer_ring_fd(QRDMA_LINK_RING_BYTES, false);
    peer_hello_with(&p, fds[0], 2);
    close(fds[0]);
    qrdma_dp_wire_expect_count(&e, "link-errors", errors + 2);
    peer_expect(&p, QRDMA_LINK_MSG_BYE, fds);
    peer_take_hello(&p);

    /* a ring too small for its slots */
    fds[0] = peer_ring_fd(QRDMA_LINK_RING_BYTES / 2, true);
    peer_hello_with(&p, fds[0], 2);
    close(fds[0]);
    errors += 3;
    qrdma_dp_wire_expect_count(&e, "link-errors", errors);
    peer_expect(&p, QRDMA_LINK_MSG_BYE, fds);
    peer_take_hello(&p);

    /* now a good one: up */
    peer_hello(&p);
    link_expect_up(&e.t, true);
    g_assert_cmpuint(qrdma_t_qom_get(&e.t, "link-ups"), >=, 1);

    /* a descriptor of no packets */
    peer_desc_new(&p, 0, 0, OP_RC_SEND_ONLY, gid15);
    peer_publish(&p, 1);
    peer_after_error(&p, &e, errors++);

    /* a payload larger than a slot */
    d = peer_desc_new(&p, 0, 1, OP_RC_SEND_ONLY, gid15);
    d->paylen = QRDMA_LINK_SLOT_BYTES + 1;
    peer_publish(&p, 1);
    peer_after_error(&p, &e, errors++);

    /* a burst whose opcodes are of two messages */
    d = peer_desc_new(&p, 0, 2, OP_RC_WRITE_FIRST, gid15);
    d->paylen = 2048;
    d->last_opcode = OP_RC_SEND_LAST;
    peer_publish(&p, 1);
    peer_after_error(&p, &e, errors++);

    /* a packet for a group */
    peer_desc_new(&p, 0, 1, OP_UD_SEND_ONLY, gid_group);
    peer_publish(&p, 1);
    peer_after_error(&p, &e, errors++);

    /* a producer index past the ring: slots the device never got */
    peer_publish(&p, QRDMA_LINK_SLOTS + 1);
    peer_after_error(&p, &e, errors++);

    /* an unknown opcode, after good packets for no QP, which are dropped */
    d = peer_desc_new(&p, 0, 1, OP_RC_SEND_ONLY, gid15);
    d->dqpn = 0x777;
    peer_desc_new(&p, 1, 1, 0x1e, gid15);
    peer_publish(&p, 2);
    peer_after_error(&p, &e, errors++);

    /* a HELLO of another version: the one up now goes down */
    h.magic = QRDMA_LINK_MAGIC;
    h.version = QRDMA_LINK_VERSION + 1;
    fds[0] = peer_ring_fd(QRDMA_LINK_RING_BYTES, true);
    fds[1] = eventfd(0, EFD_NONBLOCK);
    peer_send(&p, QRDMA_LINK_MSG_HELLO, &h, sizeof(h), fds, 2);
    close(fds[0]);
    close(fds[1]);
    peer_after_error(&p, &e, errors++);

    /* a message of a type it does not know: the socket goes too */
    peer_send(&p, 99, NULL, 0, NULL, 0);
    qrdma_dp_wire_expect_count(&e, "link-errors", errors + 1);
    link_expect_up(&e.t, false);
    for (;;) {
        int nfds, type = peer_recv(&p, &h, sizeof(h), fds, &nfds);

        g_assert_cmpint(nfds, ==, 0);
        if (type < 0) {
            break;
        }
        g_assert_cmpint(type, ==, QRDMA_LINK_MSG_BYE);
    }
    peer_close(&p);
    /* and the device takes a new peer */
    peer_connect(&p, s->path);
    peer_take_hello(&p);
    peer_hello(&p);
    link_expect_up(&e.t, true);
    peer_close(&p);
    link_expect_up(&e.t, false);
}

/*
 * The test as a peer that answers one SEND of the device's, then none:
 * the device's descriptor carries the packet as the engines made it, our
 * ACK completes it, and without one the QP fails as on the wire.  The
 * peer going away costs nothing but the link.
 */
static void test_link_peer_hangs(void *obj, void *data,
                                 QGuestAllocator *alloc)
{
    LinkSetup *s = data;
    struct qrdma_link_desc d, *ack;
    uint8_t payload[4096];
    struct qrdma_sq_wqe w;
    QrdmaDpEnv e;
    QrdmaDpQp a;
    LinkPeer p;

    qrdma_dp_env_init(&e, obj, alloc);
    e.peer_ip = 16;
    e.timeout = 14;                     /* 67 ms of the virtual clock */
    e.retry_cnt = 1;
    peer_connect(&p, s->path);
    peer_take_hello(&p);
    peer_hello(&p);
    link_expect_up(&e.t, true);

    g_assert_cmpuint(qrdma_dp_create_qp(&e, &a, QRDMA_QPT_RC, 0, &e.cq, &e.cq),
                     ==, 0);
    qrdma_dp_to_rtr(&e, &a, 0x99);
    qrdma_dp_to_rts(&e, &a, 0);
    qrdma_dp_write_data(&e, 0, "over the link");
    w = qrdma_dp_wqe_sge(0xa1, QRDMA_WR_SEND, e.data, 14, e.lkey);
    qrdma_dp_post_send(&e, &a, &w);
    d = peer_next(&p, payload);
    g_assert_cmpuint(d.npkts, ==, 1);
    g_assert_cmphex(d.opcode, ==, OP_RC_SEND_ONLY);
    g_assert_cmphex(d.dqpn, ==, 0x99);
    g_assert_cmphex(d.psn, ==, e.sq_psn);
    g_assert_cmphex(d.flags & QRDMA_LINK_DESC_ACK_REQ, ==,
                    QRDMA_LINK_DESC_ACK_REQ);
    g_assert_cmpmem(d.sgid, 16, gid15, 16);
    g_assert_cmpmem(d.dgid, 16, gid16, 16);
    g_assert_cmpmem(payload, d.paylen, "over the link", 14);

    ack = peer_desc_new(&p, 0, 1, OP_RC_ACK, gid15);
    ack->dqpn = a.qpn;
    ack->psn = d.psn;
    ack->syndrome = AETH_ACK_NO_CREDITS;
    ack->msn = 1;
    ack->vlan_id = d.vlan_id;
    memcpy(ack->sgid, gid16, 16);
    peer_publish(&p, 1);
    qrdma_dp_expect_cqe(&e, &e.cq, 0xa1, a.qpn, QRDMA_WC_SEND,
                        QRDMA_WC_SUCCESS);

    /* no answer now: RETRY_EXC_ERR once the retry and its timeout ran */
    w = qrdma_dp_wqe_sge(0xa2, QRDMA_WR_SEND, e.data, 14, e.lkey);
    qrdma_dp_post_send(&e, &a, &w);
    d = peer_next(&p, payload);
    g_assert_cmphex(d.psn, ==, (e.sq_psn + 1) & 0xffffff);
    qrdma_dp_expect_cqe_stepping(&e, &e.cq, 0xa2, a.qpn,
                                 QRDMA_WC_RETRY_EXC_ERR, SCALE_MS, 400);
    /* the early retry and the timeout's retry came too, on the link */
    d = peer_next(&p, payload);
    g_assert_cmphex(d.psn, ==, (e.sq_psn + 1) & 0xffffff);
    g_assert_cmpuint(qrdma_t_qom_get(&e.t, "link-errors"), ==, 0);
    g_assert_true(link_up(&e.t));

    /* the peer gone: the link down, the device as it was */
    peer_close(&p);
    link_expect_up(&e.t, false);
    g_assert_cmpuint(qrdma_t_qom_get(&e.t, "link-errors"), ==, 0);
}

/* The one-copy mode, the test as the peer */

/* The device's offer of its guest's RAM after its HELLO: mapped. */
static void peer_take_ram(LinkPeer *p)
{
    struct qrdma_link_ram r;
    struct stat st;
    int fds[2], nfds, type;

    do {
        type = peer_recv(p, &r, sizeof(r), fds, &nfds);
    } while (type == QRDMA_LINK_MSG_GIDS);
    g_assert_cmpint(type, ==, QRDMA_LINK_MSG_RAM);
    g_assert_cmpint(nfds, ==, 1);
    g_assert_cmpuint(r.id, ==, 0);
    g_assert_cmpint(fcntl(fds[0], F_GET_SEALS) & F_SEAL_SHRINK, ==,
                    F_SEAL_SHRINK);
    g_assert_cmpint(fstat(fds[0], &st), ==, 0);
    g_assert_cmpuint(r.bytes, ==, st.st_size);
    g_assert_cmpuint(r.bytes, >=, 128 * 1024 * 1024);
    if (p->dev_ram) {
        munmap((void *)p->dev_ram, p->dev_ram_bytes);
        g_assert_cmpuint(r.epoch, !=, p->dev_epoch);
    }
    p->dev_ram = mmap(NULL, r.bytes, PROT_READ, MAP_SHARED, fds[0], 0);
    g_assert_true(p->dev_ram != MAP_FAILED);
    close(fds[0]);
    p->dev_ram_bytes = r.bytes;
    p->dev_epoch = r.epoch;
}

static void peer_ram_ack(LinkPeer *p, uint32_t id, uint32_t epoch)
{
    struct qrdma_link_ram_ack a = { .id = id, .epoch = epoch, .mapped = 1 };

    peer_send(p, QRDMA_LINK_MSG_RAM_ACK, &a, sizeof(a), NULL, 0);
}

/* We are done with the device's slot at cons: it learns, woken if it waits. */
static void peer_consume(LinkPeer *p)
{
    uint64_t one = 1;

    p->cons++;
    __atomic_store_n(&peer_hdr(p)->cons, p->cons, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&dev_hdr(p)->tx_wait, __ATOMIC_SEQ_CST)) {
        g_assert_cmpint(write(p->dev_kick, &one, sizeof(one)), ==,
                        sizeof(one));
    }
}

/*
 * The device's next descriptor within 2 s, its payload appended to buf
 * at *off (room bytes in all), read from the slot or from the device's
 * guest RAM where its extents say; the slot taken if take.
 */
static struct qrdma_link_desc peer_next_big(LinkPeer *p, uint8_t *buf,
                                            size_t room, size_t *off,
                                            bool take)
{
    uint32_t slot = p->cons % QRDMA_LINK_SLOTS;
    const uint8_t *data = p->dev_ring + QRDMA_LINK_DATA_OFFSET +
                          (uint64_t)slot * QRDMA_LINK_SLOT_BYTES;
    struct qrdma_link_desc d;
    int i;

    peer_wait_desc(p);
    memcpy(&d, (const struct qrdma_link_desc *)
           (p->dev_ring + QRDMA_LINK_DESC_OFFSET) + slot, sizeof(d));
    g_assert_cmpuint(*off + d.paylen, <=, room);
    if (d.flags & QRDMA_LINK_DESC_EXTENTS) {
        const struct qrdma_link_extents *x = (const void *)data;
        uint64_t total = 0;

        g_assert_cmpuint(x->n, >=, 1);
        g_assert_cmpuint(x->n, <=, QRDMA_LINK_EXTENTS_MAX);
        for (i = 0; i < x->n; i++) {
            g_assert_cmpuint(x->e[i].ram, ==, 0);
            g_assert_cmpuint(x->e[i].offset + x->e[i].len, <=,
                             p->dev_ram_bytes);
            g_assert_cmpuint(total + x->e[i].len, <=, d.paylen);
            memcpy(buf + *off + total, p->dev_ram + x->e[i].offset,
                   x->e[i].len);
            total += x->e[i].len;
        }
        g_assert_cmpuint(total, ==, d.paylen);
    } else {
        g_assert_cmpuint(d.paylen, <=, QRDMA_LINK_SLOT_BYTES);
        memcpy(buf + *off, data, d.paylen);
    }
    *off += d.paylen;
    if (take) {
        peer_consume(p);
    }
    return d;
}

/* A SEND of len bytes from the device: each slot's flags are flags. */
static uint32_t peer_take_send(LinkPeer *p, uint8_t *buf, size_t len,
                               uint8_t flags)
{
    struct qrdma_link_desc d;
    size_t off = 0;

    do {
        d = peer_next_big(p, buf, len, &off, true);
        g_assert_cmphex(d.flags & QRDMA_LINK_DESC_EXTENTS, ==, flags);
    } while (off < len);
    return (d.psn + d.npkts - 1) & 0xffffff;
}

/* Our ACK of the device's QP qpn up to psn, its msn-th message. */
static void peer_ack(LinkPeer *p, uint32_t qpn, uint32_t psn, uint32_t msn)
{
    struct qrdma_link_desc *ack = peer_desc_new(p, p->prod, 1, OP_RC_ACK,
                                                gid15);

    ack->dqpn = qpn;
    ack->psn = psn;
    ack->syndrome = AETH_ACK_NO_CREDITS;
    ack->msn = msn;
    ack->vlan_id = QRDMA_VLAN_NONE;
    memcpy(ack->sgid, gid16, 16);
    peer_publish(p, ++p->prod);
}

/*
 * The device shares its guest's RAM once we have mapped it: not before.
 * Its commands wait for us to take what names that RAM, and when we do
 * not, the device takes the RAM back (ram_revoked) and the link down.
 */
static void test_link_one_copy_peer(void *obj, void *data,
                                    QGuestAllocator *alloc)
{
    enum { LEN = 16 * 1024 };
    LinkSetup *s = data;
    g_autofree uint8_t *src = g_malloc(LEN), *got = g_malloc(LEN);
    struct qrdma_cmd cmd = { .hdr.opcode = QRDMA_CMD_DEREG_MR };
    struct qrdma_cmpl cmpl;
    struct qrdma_sq_wqe w;
    uint32_t psn, idx, spare[2];
    uint64_t one, errors;
    gint64 t0;
    QrdmaDpEnv e;
    QrdmaDpQp a;
    LinkPeer p;
    int fds[2], i;

    qrdma_dp_env_init(&e, obj, alloc);
    e.peer_ip = 16;
    for (i = 0; i < LEN; i++) {
        src[i] = i * 11 + 1;
    }
    qtest_memwrite(e.t.qts, e.data, src, LEN);
    spare[0] = qrdma_dp_reg_mr(&e, e.pd, 0, 4096, 0);
    spare[1] = qrdma_dp_reg_mr(&e, e.pd, 0, 4096, 0);
    peer_connect(&p, s->path);
    peer_take_hello(&p);
    peer_take_ram(&p);
    peer_hello(&p);
    link_expect_up(&e.t, true);
    g_assert_false(qom_bool(&e.t, "link-one-copy"));
    g_assert_cmpuint(qrdma_dp_create_qp(&e, &a, QRDMA_QPT_RC, 0, &e.cq, &e.cq),
                     ==, 0);
    qrdma_dp_to_rtr(&e, &a, 0x99);
    qrdma_dp_to_rts(&e, &a, 0);

    /* not mapped yet: through the ring */
    w = qrdma_dp_wqe_sge(0xa1, QRDMA_WR_SEND, e.data, LEN, e.lkey);
    qrdma_dp_post_send(&e, &a, &w);
    psn = peer_take_send(&p, got, LEN, 0);
    g_assert_cmpmem(got, LEN, src, LEN);
    peer_ack(&p, a.qpn, psn, 1);
    qrdma_dp_expect_cqe(&e, &e.cq, 0xa1, a.qpn, QRDMA_WC_SEND,
                        QRDMA_WC_SUCCESS);

    /* mapped: by reference, the bytes where the extents say */
    peer_ram_ack(&p, 0, p.dev_epoch);
    link_expect_one_copy(&e.t);
    one = qrdma_t_qom_get(&e.t, "link-pkts-one-copy");
    memset(got, 0, LEN);
    w.wr_id = 0xa2;
    qrdma_dp_post_send(&e, &a, &w);
    psn = peer_take_send(&p, got, LEN, QRDMA_LINK_DESC_EXTENTS);
    g_assert_cmpmem(got, LEN, src, LEN);
    peer_ack(&p, a.qpn, psn, 2);
    qrdma_dp_expect_cqe(&e, &e.cq, 0xa2, a.qpn, QRDMA_WC_SEND,
                        QRDMA_WC_SUCCESS);
    g_assert_cmpuint(qrdma_t_qom_get(&e.t, "link-pkts-one-copy"), ==,
                     one + LEN / 1024);

    /* a command waits while we have not taken a slot naming guest RAM */
    w.wr_id = 0xa3;
    qrdma_dp_post_send(&e, &a, &w);
    peer_wait_desc(&p);
    cmd.destroy.handle = cpu_to_le32(spare[0]);
    idx = qrdma_t_cmd_start(&e.t, &cmd);
    g_usleep(300 * 1000);
    g_assert_false(qrdma_t_cmd_done(&e.t, idx, &cmpl));
    psn = peer_take_send(&p, got, LEN, QRDMA_LINK_DESC_EXTENTS);
    g_assert_cmpuint(qrdma_t_cmd_wait(&e.t, idx, &cmpl), ==, QRDMA_STATUS_OK);
    peer_ack(&p, a.qpn, psn, 3);
    qrdma_dp_expect_cqe(&e, &e.cq, 0xa3, a.qpn, QRDMA_WC_SEND,
                        QRDMA_WC_SUCCESS);
    g_assert_cmpuint(qrdma_t_qom_get(&e.t, "link-errors"), ==, 0);

    /* ... for a second at most: then the RAM is taken back, and the link */
    errors = qrdma_t_qom_get(&e.t, "link-errors");
    w.wr_id = 0xa4;
    qrdma_dp_post_send(&e, &a, &w);
    peer_wait_desc(&p);
    g_assert_cmpuint(dev_hdr(&p)->ram_revoked, ==, 0);
    cmd.destroy.handle = cpu_to_le32(spare[1]);
    t0 = g_get_monotonic_time();
    idx = qrdma_t_cmd_start(&e.t, &cmd);
    g_assert_cmpuint(qrdma_t_cmd_wait(&e.t, idx, &cmpl), ==, QRDMA_STATUS_OK);
    g_assert_cmpint(g_get_monotonic_time() - t0, >=, G_USEC_PER_SEC / 2);
    g_assert_cmpuint(__atomic_load_n(&dev_hdr(&p)->ram_revoked,
                                     __ATOMIC_ACQUIRE), ==, 1);
    qrdma_dp_wire_expect_count(&e, "link-errors", errors + 1);
    peer_expect(&p, QRDMA_LINK_MSG_BYE, fds);
    e.retry_cnt = 1;
    g_assert_cmpuint(qrdma_t_destroy(&e.t, QRDMA_CMD_DESTROY_QP, 0, a.qpn),
                     ==, QRDMA_STATUS_OK);

    /*
     * Offered again in a new session.  A QP that fails (its retries run
     * out) while we have yet to take the slots naming its SEND: the RAM
     * is taken back as its work completes, and a new session follows,
     * with no error.
     */
    peer_take_hello(&p);
    peer_take_ram(&p);
    peer_hello(&p);
    link_expect_up(&e.t, true);
    peer_ram_ack(&p, 0, p.dev_epoch);
    link_expect_one_copy(&e.t);
    g_assert_cmpuint(qrdma_dp_create_qp(&e, &a, QRDMA_QPT_RC, 0, &e.cq, &e.cq),
                     ==, 0);
    qrdma_dp_to_rtr(&e, &a, 0x99);
    qrdma_dp_to_rts(&e, &a, 0);
    w.wr_id = 0xa5;
    qrdma_dp_post_send(&e, &a, &w);
    peer_wait_desc(&p);
    g_assert_cmpuint(dev_hdr(&p)->ram_revoked, ==, 0);
    qrdma_dp_expect_cqe_stepping(&e, &e.cq, 0xa5, a.qpn,
                                 QRDMA_WC_RETRY_EXC_ERR, SCALE_MS, 400);
    g_assert_cmpuint(__atomic_load_n(&dev_hdr(&p)->ram_revoked,
                                     __ATOMIC_ACQUIRE), ==, 1);
    peer_take_hello(&p);
    peer_take_ram(&p);
    peer_hello(&p);
    link_expect_up(&e.t, true);
    g_assert_cmpuint(qrdma_t_qom_get(&e.t, "link-errors"), ==, errors + 1);

    /* an answer to no offer breaks the protocol */
    peer_ram_ack(&p, 5, p.dev_epoch);
    qrdma_dp_wire_expect_count(&e, "link-errors", errors + 2);
    link_expect_up(&e.t, false);
    peer_expect(&p, QRDMA_LINK_MSG_BYE, fds);
    peer_close(&p);
}

/* Our guest RAM for the device: a memfd of len bytes, sealed if sealed. */
static int peer_ram_fd(uint64_t len, bool sealed, uint8_t **map)
{
    int fd = peer_ring_fd(len, sealed);

    *map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    g_assert_true(*map != MAP_FAILED);
    return fd;
}

/* Offer RAM id of session epoch, bytes long, in fd (-1: none). */
static void peer_offer_ram(LinkPeer *p, int fd, uint32_t id, uint32_t epoch,
                           uint64_t bytes)
{
    struct qrdma_link_ram r = { .id = id, .epoch = epoch, .bytes = bytes };

    peer_send(p, QRDMA_LINK_MSG_RAM, &r, sizeof(r), &fd, fd >= 0 ? 1 : 0);
}

/* The device mapped our RAM id of session epoch. */
static void peer_expect_ram_ack(LinkPeer *p, uint32_t id, uint32_t epoch)
{
    struct qrdma_link_ram_ack a;
    int fds[2], nfds, type;

    do {
        type = peer_recv(p, &a, sizeof(a), fds, &nfds);
    } while (type == QRDMA_LINK_MSG_GIDS);
    g_assert_cmpint(type, ==, QRDMA_LINK_MSG_RAM_ACK);
    g_assert_cmpint(nfds, ==, 0);
    g_assert_cmpuint(a.id, ==, id);
    g_assert_cmpuint(a.epoch, ==, epoch);
    g_assert_cmpuint(a.mapped, ==, 1);
}

/* Our RAM in fd, bytes long, offered as RAM 0 of a new session: mapped. */
static void peer_share_ram(LinkPeer *p, int fd, uint32_t *epoch,
                           uint64_t bytes)
{
    ++*epoch;
    peer_offer_ram(p, fd, 0, *epoch, bytes);
    peer_expect_ram_ack(p, 0, *epoch);
}

/*
 * Slot idx of ours: a WRITE of npkts packets of 1 KiB to the device's QP
 * at psn, the payload by extents n of ext.
 */
static struct qrdma_link_desc *peer_write_ext(LinkPeer *p, QrdmaDpEnv *e,
                                              uint32_t qpn, uint32_t psn,
                                              uint32_t npkts, uint32_t paylen,
                                              const struct qrdma_link_extent
                                              *ext, uint32_t n)
{
    uint32_t idx = p->prod;
    struct qrdma_link_desc *d = peer_desc_new(p, idx, npkts,
                                              OP_RC_WRITE_FIRST, gid15);
    struct qrdma_link_extents *x = (struct qrdma_link_extents *)
        (p->ring + QRDMA_LINK_DATA_OFFSET +
         (uint64_t)(idx % QRDMA_LINK_SLOTS) * QRDMA_LINK_SLOT_BYTES);

    d->last_opcode = OP_RC_WRITE_LAST;
    d->paylen = paylen;
    d->flags = QRDMA_LINK_DESC_ACK_REQ | QRDMA_LINK_DESC_EXTENTS;
    d->dqpn = qpn;
    d->psn = psn;
    d->va = e->data;
    d->rkey = e->rkey;
    d->dma_len = paylen;
    d->vlan_id = QRDMA_VLAN_NONE;
    memcpy(d->sgid, gid16, 16);
    x->n = n;
    memcpy(x->e, ext, n * sizeof(*ext));
    return d;
}

/*
 * The device copies from our RAM where our extents say, and checks them:
 * each broken rule costs the link, RAM and all.
 */
static void test_link_extents(void *obj, void *data, QGuestAllocator *alloc)
{
    enum { RAM = 1024 * 1024, LEN = 8192 };
    static const struct qrdma_link_extent two[] = {
        { .ram = 0, .len = 3000, .offset = 100000 },
        { .ram = 0, .len = LEN - 3000, .offset = 300000 },
    };
    LinkSetup *s = data;
    g_autofree uint8_t *got = g_malloc(LEN);
    struct qrdma_link_extent bad[2];
    struct qrdma_link_desc *d, ack;
    uint8_t *ram, *unsealed, payload[4096];
    uint64_t errors, dropped;
    uint32_t epoch = 7, psn;
    QrdmaDpEnv e;
    QrdmaDpQp a;
    LinkPeer p;
    int fd, fd2, i;

    qrdma_dp_env_init(&e, obj, alloc);
    e.peer_ip = 16;
    fd = peer_ram_fd(RAM, true, &ram);
    for (i = 0; i < RAM; i++) {
        ram[i] = i * 3 + (i >> 12);
    }
    peer_connect(&p, s->path);
    peer_take_hello(&p);
    peer_hello(&p);
    link_expect_up(&e.t, true);
    peer_share_ram(&p, fd, &epoch, RAM);
    g_assert_cmpuint(qrdma_dp_create_qp(&e, &a, QRDMA_QPT_RC, 0, &e.cq, &e.cq),
                     ==, 0);
    qrdma_dp_to_rtr(&e, &a, 0x99);
    qrdma_dp_to_rts(&e, &a, 0);
    psn = e.rq_psn;

    /* two pieces of our RAM, one WRITE: ACKed, and in the guest */
    peer_write_ext(&p, &e, a.qpn, psn, LEN / 1024, LEN, two, 2);
    peer_publish(&p, ++p.prod);
    ack = peer_next(&p, payload);
    g_assert_cmphex(ack.opcode, ==, OP_RC_ACK);
    g_assert_cmphex(ack.psn, ==, psn + LEN / 1024 - 1);
    qtest_memread(e.t.qts, e.data, got, LEN);
    g_assert_cmpmem(got, 3000, ram + 100000, 3000);
    g_assert_cmpmem(got + 3000, LEN - 3000, ram + 300000, LEN - 3000);
    psn += LEN / 1024;

    /* taken back: the packets are lost, and nothing is read */
    dropped = qrdma_t_qom_get(&e.t, "pkts-dropped");
    __atomic_store_n(&peer_hdr(&p)->ram_revoked, 1, __ATOMIC_RELEASE);
    qtest_memset(e.t.qts, e.data, 0, LEN);
    peer_write_ext(&p, &e, a.qpn, psn, LEN / 1024, LEN, two, 2);
    peer_publish(&p, ++p.prod);
    qrdma_dp_wire_expect_count(&e, "pkts-dropped", dropped + 1);
    qtest_memread(e.t.qts, e.data, got, LEN);
    for (i = 0; i < LEN; i++) {
        g_assert_cmpuint(got[i], ==, 0);
    }
    errors = qrdma_t_qom_get(&e.t, "link-errors");
    g_assert_cmpuint(errors, ==, 0);

    /* RAM without its memfd */
    peer_offer_ram(&p, -1, 1, epoch, RAM);
    peer_after_error(&p, &e, errors++);

    /* RAM that could shrink under the device */
    fd2 = peer_ram_fd(RAM, false, &unsealed);
    peer_offer_ram(&p, fd2, 0, ++epoch, RAM);
    peer_after_error(&p, &e, errors++);
    munmap(unsealed, RAM);
    close(fd2);

    /* RAM longer than its memfd */
    peer_offer_ram(&p, fd, 0, ++epoch, 2 * RAM);
    peer_after_error(&p, &e, errors++);

    /* an extent past the end of its RAM */
    peer_share_ram(&p, fd, &epoch, RAM);
    memcpy(bad, two, sizeof(bad));
    bad[1].offset = RAM - 100;
    peer_write_ext(&p, &e, a.qpn, psn, LEN / 1024, LEN, bad, 2);
    peer_publish(&p, ++p.prod);
    peer_after_error(&p, &e, errors++);

    /* an extent in RAM never shared (ids are per session: none now) */
    peer_write_ext(&p, &e, a.qpn, psn, LEN / 1024, LEN, two, 2);
    peer_publish(&p, ++p.prod);
    peer_after_error(&p, &e, errors++);

    /* no extents */
    peer_share_ram(&p, fd, &epoch, RAM);
    peer_write_ext(&p, &e, a.qpn, psn, LEN / 1024, LEN, two, 0);
    peer_publish(&p, ++p.prod);
    peer_after_error(&p, &e, errors++);

    /* extents that add up to less than the payload */
    peer_share_ram(&p, fd, &epoch, RAM);
    memcpy(bad, two, sizeof(bad));
    bad[1].len -= 1;
    peer_write_ext(&p, &e, a.qpn, psn, LEN / 1024, LEN, bad, 2);
    peer_publish(&p, ++p.prod);
    peer_after_error(&p, &e, errors++);

    /* extents for a READ response: only requests may have them */
    peer_share_ram(&p, fd, &epoch, RAM);
    d = peer_write_ext(&p, &e, a.qpn, psn, 1, 1024, two, 1);
    d->opcode = OP_RC_READ_RESP_ONLY;
    d->last_opcode = 0;
    bad[0] = two[0];
    bad[0].len = 1024;
    memcpy((uint8_t *)p.ring + QRDMA_LINK_DATA_OFFSET +
           (uint64_t)(p.prod % QRDMA_LINK_SLOTS) * QRDMA_LINK_SLOT_BYTES +
           offsetof(struct qrdma_link_extents, e), bad, sizeof(bad[0]));
    peer_publish(&p, ++p.prod);
    peer_after_error(&p, &e, errors++);

    /* a burst of more packets than one slot may name */
    peer_share_ram(&p, fd, &epoch, RAM);
    peer_write_ext(&p, &e, a.qpn, psn, QRDMA_LINK_EXTENT_PKTS + 1, LEN, two,
                   2);
    peer_publish(&p, ++p.prod);
    peer_after_error(&p, &e, errors++);

    g_assert_cmpuint(qrdma_t_qom_get(&e.t, "link-errors"), ==, errors);
    peer_close(&p);
    munmap(ram, RAM);
    close(fd);
}

/* Migrates the test's QEMU to uri: its final status. */
static char *link_migrate(QTestState *qts, const char *uri)
{
    int i;

    qtest_qmp_assert_success(qts, "{ 'execute': 'migrate', "
                             "'arguments': { 'uri': %s } }", uri);
    for (i = 0; i < 6000; i++) {
        QDict *rsp = qtest_qmp_assert_success_ref(qts,
                                        "{ 'execute': 'query-migrate' }");
        const char *st = qdict_get_try_str(rsp, "status");
        char *status = g_strdup(st ? st : "none");

        qobject_unref(rsp);
        if (!strcmp(status, "completed") || !strcmp(status, "failed")) {
            return status;
        }
        g_free(status);
        g_usleep(10 * 1000);
    }
    g_assert_not_reached();
}

/*
 * A migration takes the link down before its first pass: the peer hears
 * BYE.  One that fails brings the link back; one that completes leaves it
 * down on the source, which is done.
 */
static void test_link_migration(void *obj, void *data, QGuestAllocator *alloc)
{
    LinkSetup *s = data;
    g_autofree char *file = g_strdup_printf("file:%s/vm.mig", s->dir);
    g_autofree char *status = NULL;
    QrdmaDpEnv e;
    LinkPeer p;
    int fds[2];

    qrdma_dp_env_init(&e, obj, alloc);
    peer_connect(&p, s->path);
    peer_take_hello(&p);
    peer_hello(&p);
    link_expect_up(&e.t, true);

    /* the stream's reader exits at once: the migration fails */
    status = link_migrate(e.t.qts, "exec:true");
    g_assert_cmpstr(status, ==, "failed");
    peer_expect(&p, QRDMA_LINK_MSG_BYE, fds);
    peer_take_hello(&p);
    peer_hello(&p);
    link_expect_up(&e.t, true);

    g_free(status);
    status = link_migrate(e.t.qts, file);
    g_assert_cmpstr(status, ==, "completed");
    peer_expect(&p, QRDMA_LINK_MSG_BYE, fds);
    g_assert_false(link_up(&e.t));
    /* no offer again: the retry would come within a second */
    g_assert_false(peer_readable(&p, 1500));
    g_assert_false(link_up(&e.t));
    g_assert_cmpuint(qrdma_t_qom_get(&e.t, "link-errors"), ==, 0);
    peer_close(&p);
    unlink(file + strlen("file:"));
}

static void qrdma_dp_link_register_tests(void)
{
    QOSGraphTestOptions pair_opts = {
        .before = link_pair_setup,
        .edge.extra_device_opts = "netdev=w0,link=l0,mac=" QRDMA_DP_WIRE_MAC0,
    };
    QOSGraphTestOptions shared_opts = {
        .before = link_pair_shared_setup,
        .edge.extra_device_opts = "netdev=w0,link=l0,mac=" QRDMA_DP_WIRE_MAC0,
    };
    QOSGraphTestOptions peer_opts = {
        .before = link_peer_setup,
        .edge.extra_device_opts = "link=l0",
    };
    QOSGraphTestOptions peer_shared_opts = {
        .before = link_peer_shared_setup,
        .edge.extra_device_opts = "link=l0,link-share-ram=on",
    };

    qos_add_test("dp/link-rc", QRDMA_NODE_DP, test_link_rc, &pair_opts);
    qos_add_test("dp/link-one-copy", QRDMA_NODE_DP, test_link_one_copy,
                 &shared_opts);
    qos_add_test("dp/link-hostile", QRDMA_NODE_DP, test_link_hostile,
                 &peer_opts);
    qos_add_test("dp/link-peer-hangs", QRDMA_NODE_DP, test_link_peer_hangs,
                 &peer_opts);
    qos_add_test("dp/link-migration", QRDMA_NODE_DP, test_link_migration,
                 &peer_opts);
    qos_add_test("dp/link-one-copy-peer", QRDMA_NODE_DP,
                 test_link_one_copy_peer, &peer_shared_opts);
    qos_add_test("dp/link-extents", QRDMA_NODE_DP, test_link_extents,
                 &peer_opts);
}

libqos_init(qrdma_dp_link_register_tests);
