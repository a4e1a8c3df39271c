/*
 * QTest testcase for the qrdma data path: a capture of every opcode
 *
 * Copyright (c) 2026 The qrdma developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include <poll.h>
#include "qemu/module.h"
#include "qemu/timer.h"
#include "libqtest.h"
#include "qrdma-dp.h"

/*
 * The wire of qrdma_dp_wire_setup with a capture: filter-dump on qrdma0's
 * netdev w0 writes every frame of the hub, both ways, to the pcap file
 * $QRDMA_PCAP, which stays (scripts/check-pcap decodes it with tshark),
 * or to a file of the test's own, removed at the end.
 */
typedef struct PcapWire {
    int *sv;                            /* qrdma_dp_wire_setup's sockets */
    char *path;
    bool keep;
    GPtrArray *seen;                    /* GBytes: the frames the hub sent */
    uint8_t seed;                       /* of the next message's bytes */
} PcapWire;

static void pcap_cleanup(void *pw)
{
    PcapWire *p = pw;

    if (!p->keep) {
        unlink(p->path);
    }
    if (p->seen) {
        g_ptr_array_unref(p->seen);
    }
    g_free(p->path);
    g_free(p);
}

static void *pcap_setup(GString *cmd_line, void *arg)
{
    PcapWire *p = g_new0(PcapWire, 1);
    const char *env = g_getenv("QRDMA_PCAP");
    GError *err = NULL;
    int fd;

    if (env && *env) {
        p->path = g_strdup(env);
        p->keep = true;
    } else {
        fd = g_file_open_tmp("qrdma-pcap-XXXXXX.pcap", &p->path, &err);
        g_assert_no_error(err);
        close(fd);
    }
    /* a comma would end QEMU's option, a space the command line's word */
    g_assert_null(strpbrk(p->path, ", "));
    p->sv = qrdma_dp_wire_setup(cmd_line, arg);
    g_string_append_printf(cmd_line,
        " -object filter-dump,id=dump0,netdev=w0,file=%s ", p->path);
    g_test_queue_destroy(pcap_cleanup, p);
    return p;
}

/* The frames the hub brought the test, until none comes within wait_ms. */
static void pcap_take(PcapWire *p, int wait_ms)
{
    struct pollfd pfd = { .fd = p->sv[0], .events = POLLIN };
    uint8_t f[QRDMA_DP_WIRE_FRAME_MAX];
    ssize_t n;

    while (poll(&pfd, 1, wait_ms) == 1) {
        n = recv(p->sv[0], f, sizeof(f), 0);
        g_assert_cmpint(n, >, 0);
        g_ptr_array_add(p->seen, g_bytes_new(f, n));
    }
}

/*
 * The frames of a capture, in order: filter-dump writes the pcap format
 * in host byte order, Ethernet frames without FCS, each whole.
 */
static GPtrArray *pcap_read(const char *path)
{
    GPtrArray *frames = g_ptr_array_new_with_free_func(
        (GDestroyNotify)g_bytes_unref);
    g_autofree char *buf = NULL;
    gsize len, off = 24;
    uint32_t caplen;

    g_assert_true(g_file_get_contents(path, &buf, &len, NULL));
    g_assert_cmpuint(len, >=, 24);
    g_assert_cmphex((uint32_t)ldl_he_p(buf), ==, 0xa1b2c3d4);
    g_assert_cmpuint(ldl_he_p(buf + 20), ==, 1);          /* Ethernet */
    while (off < len) {
        g_assert_cmpuint(len - off, >=, 16);
        caplen = ldl_he_p(buf + off + 8);
        g_assert_cmpuint(caplen, ==, (uint32_t)ldl_he_p(buf + off + 12));
        g_assert_cmpuint(len - off - 16, >=, caplen);
        g_ptr_array_add(frames, g_bytes_new(buf + off + 16, caplen));
        off += 16 + caplen;
    }
    return frames;
}

/* A requester QP on s and its peer on r; ah is the AH on s for UD. */
typedef struct PcapPair {
    QrdmaDpEnv *s;
    QrdmaDpQp *a;
    QrdmaDpEnv *r;
    QrdmaDpQp *b;
    uint32_t ah;
} PcapPair;

/* Where a message's bytes come from and where they land. */
#define PCAP_SRC        0
#define PCAP_DST        (4096 * 4)

/* QPs of a type on both functions, connected (but UD), in RTS. */
static void pcap_connect(PcapPair *q, uint8_t type, uint8_t rnr_retry)
{
    g_assert_cmpuint(qrdma_dp_create_qp(q->s, q->a, type, 0, &q->s->cq,
                                        &q->s->cq), ==, 0);
    g_assert_cmpuint(qrdma_dp_create_qp(q->r, q->b, type, 0, &q->r->cq,
                                        &q->r->cq), ==, 0);
    qrdma_dp_to_rtr(q->s, q->a, type == QRDMA_QPT_UD ? 0 : q->b->qpn);
    qrdma_dp_to_rtr(q->r, q->b, type == QRDMA_QPT_UD ? 0 : q->a->qpn);
    qrdma_dp_to_rts(q->s, q->a, rnr_retry);
    qrdma_dp_to_rts(q->r, q->b, rnr_retry);
}

/* Waits up to 2 s for len bytes at addr of e to be want. */
static void pcap_expect_bytes(QrdmaDpEnv *e, uint64_t addr, const uint8_t *want,
                              uint32_t len)
{
    uint8_t got[1024];
    int i;

    g_assert_cmpuint(len, <=, sizeof(got));
    for (i = 0; i < 200; i++) {
        qtest_memread(e->t.qts, addr, got, len);
        if (!memcmp(got, want, len)) {
            break;
        }
        g_usleep(10 * 1000);
    }
    g_assert_cmpmem(got, len, want, len);
}

/*
 * One message of len bytes by wr opcode op over the pair, from bytes of
 * its own: a receive posted for the opcodes that take one (if
 * rnr_wait_ns is not 0, only once the first try drew an RNR NAK, and
 * rnr_wait_ns of virtual time then passes), both sides' completions
 * checked, the bytes where they land.
 * imm is the immediate, or the rkey for SEND_WITH_INV.
 */
static void pcap_message(PcapWire *p, PcapPair *q, uint8_t op, uint32_t len,
                         uint32_t imm, int64_t rnr_wait_ns)
{
    bool read = op == QRDMA_WR_RDMA_READ;
    bool recv = op != QRDMA_WR_RDMA_WRITE && !read;
    bool send = recv && op != QRDMA_WR_RDMA_WRITE_WITH_IMM;
    uint32_t grh = q->a->type == QRDMA_QPT_UD ? QRDMA_GRH_SIZE : 0;
    QrdmaDpEnv *from = read ? q->r : q->s, *to = read ? q->s : q->r;
    uint64_t wr_id = 0xa00 + op;
    struct qrdma_sq_wqe w;
    struct qrdma_cqe cqe;
    uint8_t src[1024];
    uint64_t rnr;
    uint32_t i;

    g_assert_cmpuint(len, <=, sizeof(src));
    p->seed += 0x35;
    for (i = 0; i < len; i++) {
        src[i] = p->seed + i * 7;
    }
    qtest_memwrite(from->t.qts, from->data + PCAP_SRC, src, len);
    qtest_memset(to->t.qts, to->data + PCAP_DST, 0, grh + len);

    w = qrdma_dp_wqe_sge(wr_id, op, q->s->data + (read ? PCAP_DST : PCAP_SRC),
                         len, q->s->lkey);
    if (grh) {
        w.ud.ah = cpu_to_le32(q->ah);
        w.ud.remote_qpn = cpu_to_le32(q->b->qpn);
        w.ud.remote_qkey = cpu_to_le32(0x1234);
    } else if (!send) {
        w.rdma.remote_addr = cpu_to_le64(q->r->data +
                                         (read ? PCAP_SRC : PCAP_DST));
        w.rdma.rkey = cpu_to_le32(q->r->rkey);
    }
    if (op == QRDMA_WR_SEND_WITH_INV) {
        w.invalidate_rkey = cpu_to_le32(imm);
    } else {
        w.imm_data = cpu_to_be32(imm);
    }
    if (recv && !rnr_wait_ns) {
        qrdma_dp_post_recv(q->r, q->b, wr_id + 0x100, q->r->data + PCAP_DST,
                           4096, q->r->lkey);
    }
    rnr = qrdma_t_qom_get(&q->s->t, "rnr-naks-rcvd");
    qrdma_dp_post_send(q->s, q->a, &w);
    if (rnr_wait_ns) {
        qrdma_dp_wire_expect_count(q->s, "rnr-naks-rcvd", rnr + 1);
        qrdma_dp_post_recv(q->r, q->b, wr_id + 0x100, q->r->data + PCAP_DST,
                           4096, q->r->lkey);
        qtest_clock_step(q->s->t.qts, rnr_wait_ns);
    }

    if (recv) {
        g_assert_true(qrdma_dp_poll_cq(q->r, &q->r->cq, &cqe));
        g_assert_cmphex(cqe.wr_id, ==, wr_id + 0x100);
        g_assert_cmpuint(cqe.status, ==, QRDMA_WC_SUCCESS);
        g_assert_cmpuint(cqe.opcode, ==, send ? QRDMA_WC_RECV :
                         QRDMA_WC_RECV_RDMA_WITH_IMM);
        g_assert_cmpuint(le32_to_cpu(cqe.byte_len), ==, grh + len);
        if (op == QRDMA_WR_SEND_WITH_INV) {
            g_assert_true(cqe.flags & QRDMA_CQE_F_WITH_INV);
            g_assert_cmphex(le32_to_cpu(cqe.invalidate_rkey), ==, imm);
        } else if (op != QRDMA_WR_SEND) {
            g_assert_true(cqe.flags & QRDMA_CQE_F_WITH_IMM);
            g_assert_cmphex(be32_to_cpu(cqe.imm_data), ==, imm);
        } else {
            g_assert_false(cqe.flags & (QRDMA_CQE_F_WITH_IMM |
                                        QRDMA_CQE_F_WITH_INV));
        }
        if (grh) {
            g_assert_cmphex(le32_to_cpu(cqe.src_qp), ==, q->a->qpn);
        }
    }
    qrdma_dp_expect_cqe(q->s, &q->s->cq, wr_id, q->a->qpn,
                        send ? QRDMA_WC_SEND : read ? QRDMA_WC_RDMA_READ :
                        QRDMA_WC_RDMA_WRITE, QRDMA_WC_SUCCESS);
    pcap_expect_bytes(to, to->data + PCAP_DST + grh, src, len);
    pcap_take(p, 10);
}

/*
 * r's type 2 window, bound through b to the first 256 bytes of the MR
 * mr under its next key, which goes to *key: the bind fails while the
 * window is still bound, so a second one shows that a SEND_WITH_INV
 * unbound it.
 */
static void pcap_bind(PcapPair *q, uint32_t mr, uint32_t *key)
{
    *key = qrdma_dp_next_key(*key);
    qrdma_dp_run_wqe(q->r, q->b,
                     qrdma_dp_wqe_bind(0xbb, *key, mr, 0x10000000, 256,
                                       QRDMA_ACCESS_REMOTE_WRITE),
                     QRDMA_WC_BIND_MW, QRDMA_WC_SUCCESS);
}

/*
 * Every BTH opcode the device sends: RC's but RESYNC, with FLUSH and
 * ATOMIC_WRITE (IBTA 1.5), UC's, and UD's SEND_ONLY and SEND_ONLY_IMM.
 * scripts/check-pcap has the same list.
 */
static const uint8_t pcap_opcodes[] = {
    0x00, 0x01, 0x02, 0x03, 0x04, 0x05,         /* RC SEND */
    0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b,         /* RC RDMA WRITE */
    0x0c, 0x0d, 0x0e, 0x0f, 0x10,               /* RC RDMA READ */
    0x11, 0x12, 0x13, 0x14,                     /* ACK, atomics */
    0x16, 0x17,                                 /* SEND with invalidate */
    0x1c, 0x1d,                                 /* FLUSH, ATOMIC_WRITE */
    0x20, 0x21, 0x22, 0x23, 0x24, 0x25,         /* UC SEND */
    0x26, 0x27, 0x28, 0x29, 0x2a, 0x2b,         /* UC RDMA WRITE */
    0x64, 0x65,                                 /* UD SEND */
};

/*
 * A capture of every opcode: each message of RC (SEND, with immediate,
 * with invalidate, RDMA WRITE, with immediate, READ, each as one packet
 * and as three at MTU 256; an RNR NAK; both atomics, ATOMIC_WRITE,
 * FLUSH), of UC (SEND and RDMA WRITE, with immediate and without) and of
 * UD (SEND, with immediate and without) crosses the hub, its data
 * checked where it lands.  Every frame the hub carried is checked
 * against the annex (its ICRC too), their opcodes are exactly
 * pcap_opcodes, and the capture holds those frames, in order, byte for
 * byte.
 */
static void test_wire_pcap(void *obj, void *data, QGuestAllocator *alloc)
{
    static const uint32_t lens[] = { 600, 16 };
    PcapWire *p = data;
    g_autoptr(GPtrArray) capture = NULL;
    g_autoptr(GString) missing = g_string_new("");
    g_autoptr(GString) unexpected = g_string_new("");
    struct qrdma_cmd cmd = { .hdr.opcode = QRDMA_CMD_CREATE_AH };
    struct qrdma_cmpl cmpl;
    unsigned ops[256] = { 0 }, rnr = 0;
    bool listed[256] = { false };
    uint32_t mr, key;
    struct qrdma_sq_wqe w;
    QQrdma q1;
    QrdmaDpEnv e0, e1;
    QrdmaDpQp a, b;
    PcapPair q = { .s = &e0, .a = &a, .r = &e1, .b = &b };
    const uint8_t *f;
    size_t n;
    unsigned i;

    p->seen = g_ptr_array_new_with_free_func((GDestroyNotify)g_bytes_unref);
    qrdma_dp_wire_envs(obj, alloc, &q1, &e0, &e1);
    e0.path_mtu = e1.path_mtu = 1;
    e1.qp_access |= QRDMA_ACCESS_FLUSH_GLOBAL;

    /* RC: rnr_retry 7 (for ever), so that the RNR NAK only delays */
    pcap_connect(&q, QRDMA_QPT_RC, 7);
    mr = qrdma_dp_reg_mr(&e1, e1.pd, 4096 * 12, 4096,
                         QRDMA_ACCESS_LOCAL_WRITE | QRDMA_ACCESS_MW_BIND);
    key = qrdma_dp_alloc_mw(&e1, e1.pd, QRDMA_MW_TYPE_2, NULL);
    for (i = 0; i < G_N_ELEMENTS(lens); i++) {
        pcap_message(p, &q, QRDMA_WR_SEND, lens[i], 0, 0);
        pcap_message(p, &q, QRDMA_WR_SEND_WITH_IMM, lens[i], 0x1000 + i, 0);
        pcap_bind(&q, mr, &key);
        pcap_message(p, &q, QRDMA_WR_SEND_WITH_INV, lens[i], key, 0);
        pcap_message(p, &q, QRDMA_WR_RDMA_WRITE, lens[i], 0, 0);
        pcap_message(p, &q, QRDMA_WR_RDMA_WRITE_WITH_IMM, lens[i],
                     0x2000 + i, 0);
        pcap_message(p, &q, QRDMA_WR_RDMA_READ, lens[i], 0, 0);
    }
    /* the last SEND_WITH_INV unbound the window too */
    pcap_bind(&q, mr, &key);
    /* no receive at first: an RNR NAK, then the retry takes one */
    pcap_message(p, &q, QRDMA_WR_SEND, 16, 0, 100 * SCALE_MS);

    /* atomics on page 9 of qrdma1, the old values to page 10 of qrdma0 */
    qtest_writeq(e1.t.qts, e1.data + 4096 * 9, 40);
    w = qrdma_dp_wqe_sge(0xa4, QRDMA_WR_ATOMIC_FETCH_AND_ADD,
                         e0.data + 4096 * 10, 8, e0.lkey);
    w.rdma.remote_addr = cpu_to_le64(e1.data + 4096 * 9);
    w.rdma.rkey = cpu_to_le32(e1.rkey);
    w.rdma.compare_add = cpu_to_le64(2);
    qrdma_dp_run_wqe(&e0, &a, w, QRDMA_WC_FETCH_ADD, QRDMA_WC_SUCCESS);
    g_assert_cmpuint(qtest_readq(e1.t.qts, e1.data + 4096 * 9), ==, 42);
    g_assert_cmpuint(qtest_readq(e0.t.qts, e0.data + 4096 * 10), ==, 40);
    w = qrdma_dp_wqe_sge(0xa5, QRDMA_WR_ATOMIC_CMP_AND_SWP, e0.data + 4096 * 10,
                         8, e0.lkey);
    w.rdma.remote_addr = cpu_to_le64(e1.data + 4096 * 9);
    w.rdma.rkey = cpu_to_le32(e1.rkey);
    w.rdma.compare_add = cpu_to_le64(42);
    w.rdma.swap = cpu_to_le64(0x1122334455667788ull);
    qrdma_dp_run_wqe(&e0, &a, w, QRDMA_WC_COMP_SWAP, QRDMA_WC_SUCCESS);
    g_assert_cmphex(qtest_readq(e1.t.qts, e1.data + 4096 * 9), ==,
                    0x1122334455667788ull);
    g_assert_cmpuint(qtest_readq(e0.t.qts, e0.data + 4096 * 10), ==, 42);
    w = qrdma_dp_wqe_sge(0xa6, QRDMA_WR_ATOMIC_WRITE, e0.data, 8, e0.lkey);
    w.rdma.remote_addr = cpu_to_le64(e1.data + 4096 * 9);
    w.rdma.rkey = cpu_to_le32(e1.rkey);
    memcpy(&w.rdma.compare_add, "ABCDEFG", 8);
    qrdma_dp_run_wqe(&e0, &a, w, QRDMA_WC_ATOMIC_WRITE, QRDMA_WC_SUCCESS);
    pcap_expect_bytes(&e1, e1.data + 4096 * 9, (const uint8_t *)"ABCDEFG", 8);
    qrdma_dp_run_wqe(&e0, &a,
                     qrdma_dp_wqe_flush(0xa7, e1.rkey, e1.data + 4096 * 9, 8,
                                        QRDMA_FLUSH_GLOBAL, QRDMA_FLUSH_RANGE),
                     QRDMA_WC_FLUSH, QRDMA_WC_SUCCESS);
    pcap_take(p, 10);

    /* UC */
    pcap_connect(&q, QRDMA_QPT_UC, 0);
    for (i = 0; i < G_N_ELEMENTS(lens); i++) {
        pcap_message(p, &q, QRDMA_WR_SEND, lens[i], 0, 0);
        pcap_message(p, &q, QRDMA_WR_SEND_WITH_IMM, lens[i], 0x3000 + i, 0);
        pcap_message(p, &q, QRDMA_WR_RDMA_WRITE, lens[i], 0, 0);
        pcap_message(p, &q, QRDMA_WR_RDMA_WRITE_WITH_IMM, lens[i],
                     0x4000 + i, 0);
    }

    /* UD, to qrdma1 by an AH */
    pcap_connect(&q, QRDMA_QPT_UD, 0);
    cmd.create_ah.pd = cpu_to_le32(e0.pd);
    cmd.create_ah.av.hop_limit = 64;
    cmd.create_ah.av.vlan_id = cpu_to_le16(QRDMA_VLAN_NONE);
    memcpy(cmd.create_ah.av.dgid,
           (uint8_t[16]) { [10] = 0xff, [11] = 0xff, 10, 0, 2, 16 }, 16);
    memcpy(cmd.create_ah.av.dmac, qrdma_dp_wire_mac1, 6);
    g_assert_cmpuint(qrdma_t_exec(&e0.t, &cmd, &cmpl), ==, 0);
    q.ah = le32_to_cpu(cmpl.handle);
    pcap_message(p, &q, QRDMA_WR_SEND, 64, 0, 0);
    pcap_message(p, &q, QRDMA_WR_SEND_WITH_IMM, 64, 0x5000, 0);

    /* the capture has each frame before the hub passes it on */
    capture = pcap_read(p->path);
    for (i = 0; i < 20 && p->seen->len < capture->len; i++) {
        pcap_take(p, 100);
    }
    g_assert_cmpuint(capture->len, ==, p->seen->len);
    for (i = 0; i < capture->len; i++) {
        g_assert_true(g_bytes_equal(capture->pdata[i], p->seen->pdata[i]));
    }

    for (i = 0; i < p->seen->len; i++) {
        f = g_bytes_get_data(p->seen->pdata[i], &n);
        ops[qrdma_dp_wire_check_frame(f, n)]++;
        /* an ACK whose AETH's syndrome is an RNR NAK */
        rnr += f[QRDMA_DP_WIRE_BTH] == 0x11 &&
               (f[QRDMA_DP_WIRE_BTH + 12] & 0x60) == 0x20;
    }
    for (i = 0; i < G_N_ELEMENTS(pcap_opcodes); i++) {
        listed[pcap_opcodes[i]] = true;
        if (!ops[pcap_opcodes[i]]) {
            g_string_append_printf(missing, " 0x%02x", pcap_opcodes[i]);
        }
    }
    for (i = 0; i < 256; i++) {
        if (ops[i] && !listed[i]) {
            g_string_append_printf(unexpected, " 0x%02x", i);
        }
    }
    g_assert_cmpstr(missing->str, ==, "");
    g_assert_cmpstr(unexpected->str, ==, "");
    g_assert_cmpuint(rnr, >=, 1);
    g_assert_cmpuint(qrdma_t_qom_get(&e0.t, "rnr-naks-rcvd"), ==, rnr);
    g_assert_cmpuint(qrdma_t_qom_get(&e0.t, "icrc-errors") +
                     qrdma_t_qom_get(&e1.t, "icrc-errors") +
                     qrdma_t_qom_get(&e0.t, "wire-malformed") +
                     qrdma_t_qom_get(&e1.t, "wire-malformed"), ==, 0);
    g_test_message("%u frames in %s", capture->len, p->path);
}

static void qrdma_dp_pcap_register_tests(void)
{
    QOSGraphTestOptions pcap_opts = {
        .before = pcap_setup,
        .edge.extra_device_opts = "netdev=w0,mac=" QRDMA_DP_WIRE_MAC0,
    };

    qos_add_test("dp/wire-pcap", QRDMA_NODE_DP, test_wire_pcap, &pcap_opts);
}

libqos_init(qrdma_dp_pcap_register_tests);
