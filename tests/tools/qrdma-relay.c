/*
 * qrdma-relay: an impairing Ethernet relay between QEMU VMs, for tests
 *
 * Copyright (c) 2026 The qrdma developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * Each VM's wire is a QEMU "-netdev dgram" on a unix socket; the relay
 * holds the other end of every one.  A frame from one port goes to every
 * other port (a hub; with two ports, a cable), and on its way it may be
 * dropped, duplicated, held back behind later frames (reordered),
 * delayed with jitter, or get one bit flipped, each at its own rate.  The
 * random choices come from a seed, so a run can be replayed.  The relay
 * stops after --duration seconds or at SIGTERM/SIGINT, and prints what
 * it did.
 *
 *   qrdma-relay [options] PORT...      PORT: RELAY_SOCKET=VM_SOCKET
 *
 * The relay binds RELAY_SOCKET and sends to VM_SOCKET; the VM's netdev is
 * -netdev dgram,local.path=VM_SOCKET,remote.path=RELAY_SOCKET.  With
 * --pcap it writes every frame as it came in, before any impairment, to a
 * pcap file (Ethernet), for tshark or scripts/roce-pcap.
 *
 * --drop-cm NAME[:N] drops, besides, the first N (default 1) RoCEv2
 * connection manager MADs of one kind (REQ, REP, RTU, DREQ, ...), and
 * --drop-nd N the first N IPv6 neighbour solicitations (not duplicate
 * address detection's): losses the random ones reach only now and then,
 * made certain for one test.
 */

#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define MAX_PORTS       8
#define FRAME_MAX       65536
/* Frames held for delay or reordering: beyond, the newest is dropped. */
#define HELD_MAX        4096
/* A reordered frame goes at the latest after this, later ones or not. */
#define REORDER_MAX_NS  (50 * 1000000ull)

/*
 * Frames for a port whose socket was full, in the order they came: they
 * go, and every later frame for that port goes, behind the first, as a
 * NIC's transmit queue holds them.  Not held otherwise: a full socket
 * reorders nothing the relay was not told to reorder.
 */
typedef struct Backlog {
    uint8_t *buf[HELD_MAX];
    uint32_t len[HELD_MAX];
    unsigned head, count;
} Backlog;

typedef struct Port {
    int fd;
    struct sockaddr_un peer;
    Backlog backlog;
} Port;

typedef struct Held {
    uint64_t due_ns;
    unsigned behind;                    /* frames it still waits behind */
    int from;                           /* the port it came in on */
    int to;                             /* the one port it goes to, or -1 */
    uint32_t len;
    uint8_t *buf;
} Held;

typedef struct Rates {
    double drop, dup, reorder, corrupt;
    double delay_ms, jitter_ms;
    unsigned reorder_window;            /* frames a held one waits behind */
} Rates;

typedef struct Stats {
    uint64_t in, out, dropped, duplicated, reordered, corrupted, overflow;
    uint64_t cm_dropped, nd_dropped;
} Stats;

/* A kind of CM MAD to drop, by attribute ID, and how many more of it. */
typedef struct CmDrop {
    const char *name;
    uint16_t attr_id;
    unsigned left;
} CmDrop;

/* Neighbour solicitations still to drop (--drop-nd). */
static unsigned nd_drops;

static CmDrop cm_drops[] = {
    { .name = "req", .attr_id = 0x0010 },
    { .name = "mra", .attr_id = 0x0011 },
    { .name = "rej", .attr_id = 0x0012 },
    { .name = "rep", .attr_id = 0x0013 },
    { .name = "rtu", .attr_id = 0x0014 },
    { .name = "dreq", .attr_id = 0x0015 },
    { .name = "drep", .attr_id = 0x0016 },
};

static volatile sig_atomic_t stop;
static Port ports[MAX_PORTS];
static int nports;
static Held held[HELD_MAX];
static int nheld;
static Stats stats;
static uint64_t rng_state;
static FILE *pcap;

static void on_signal(int sig)
{
    stop = 1;
}

/* splitmix64: small, fast, and the same sequence for a seed everywhere. */
static uint64_t rng_next(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static double rng_unit(void)
{
    return (rng_next() >> 11) * (1.0 / 9007199254740992.0);
}

static bool chance(double p)
{
    return p > 0 && rng_unit() < p;
}

static uint64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static void usage(FILE *f)
{
    fprintf(f,
        "usage: qrdma-relay [options] RELAY_SOCKET=VM_SOCKET...\n"
        "  --drop P        drop a frame with probability P (0-1)\n"
        "  --dup P         send a frame twice\n"
        "  --reorder P     hold a frame back behind up to --window later ones\n"
        "  --window N      frames a reordered one waits behind (default 4)\n"
        "  --corrupt P     flip one random bit of a frame\n"
        "  --delay MS      delay every frame by MS milliseconds\n"
        "  --jitter MS     and by up to MS more, at random\n"
        "  --seed N        the random seed (default 1)\n"
        "  --duration SEC  stop after SEC seconds (default 3600)\n"
        "  --stats FILE    write the counts there at the end too\n"
        "  --pcap FILE     write every frame as it came in to FILE (pcap)\n"
        "  --drop-cm NAME[:N]  drop the first N (default 1) CM MADs NAME:\n"
        "                  req mra rej rep rtu dreq drep (may be repeated)\n"
        "  --drop-nd N     drop the first N IPv6 neighbour solicitations\n");
}

static int port_open(const char *spec)
{
    const char *eq = strchr(spec, '=');
    struct sockaddr_un self = { .sun_family = AF_UNIX };
    Port *p = &ports[nports];
    size_t n;

    if (!eq || nports == MAX_PORTS) {
        return -1;
    }
    n = eq - spec;
    if (n >= sizeof(self.sun_path) ||
        strlen(eq + 1) >= sizeof(p->peer.sun_path)) {
        return -1;
    }
    memcpy(self.sun_path, spec, n);
    p->peer.sun_family = AF_UNIX;
    strcpy(p->peer.sun_path, eq + 1);
    p->fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (p->fd < 0) {
        return -1;
    }
    unlink(self.sun_path);
    if (bind(p->fd, (struct sockaddr *)&self, sizeof(self)) < 0) {
        close(p->fd);
        return -1;
    }
    nports++;
    return 0;
}

/* 1 sent, 0 the socket is full, -1 lost (nobody there). */
static int port_send(Port *p, const uint8_t *buf, uint32_t len)
{
    if (sendto(p->fd, buf, len, 0, (struct sockaddr *)&p->peer,
               sizeof(p->peer)) == (ssize_t)len) {
        stats.out++;
        return 1;
    }
    if (errno == EAGAIN || errno == ENOBUFS) {
        return 0;
    }
    stats.overflow++;
    return -1;
}

static void backlog_add(Backlog *b, const uint8_t *buf, uint32_t len)
{
    unsigned tail = (b->head + b->count) % HELD_MAX;

    if (b->count == HELD_MAX || !(b->buf[tail] = malloc(len))) {
        stats.overflow++;
        return;
    }
    memcpy(b->buf[tail], buf, len);
    b->len[tail] = len;
    b->count++;
}

/* Whatever of its backlog the port's socket takes now, in order. */
static void backlog_flush(Port *p)
{
    Backlog *b = &p->backlog;

    while (b->count && port_send(p, b->buf[b->head], b->len[b->head])) {
        free(b->buf[b->head]);
        b->head = (b->head + 1) % HELD_MAX;
        b->count--;
    }
}

/*
 * To port to, or to every port but the one it came in on.  A VM whose
 * socket is full gets it a little later, in order, as a NIC's queue would
 * hold it; one that is not there (yet, or any more) loses it, as a cable
 * would.
 */
static void forward(int from, int to, const uint8_t *buf, uint32_t len)
{
    int i;

    for (i = 0; i < nports; i++) {
        if (i == from || (to >= 0 && i != to)) {
            continue;
        }
        backlog_flush(&ports[i]);
        if (ports[i].backlog.count || !port_send(&ports[i], buf, len)) {
            backlog_add(&ports[i].backlog, buf, len);
        }
    }
}

static void hold(int from, int to, const uint8_t *buf, uint32_t len,
                 uint64_t due, unsigned behind)
{
    Held *h;

    if (nheld == HELD_MAX) {
        stats.overflow++;
        return;
    }
    h = &held[nheld++];
    h->due_ns = due;
    h->behind = behind;
    h->from = from;
    h->to = to;
    h->len = len;
    h->buf = malloc(len);
    if (!h->buf) {
        nheld--;
        stats.overflow++;
        return;
    }
    memcpy(h->buf, buf, len);
}

/* Sends every held frame that is due, oldest due first. */
static void release_due(uint64_t now)
{
    int i, best;

    for (;;) {
        best = -1;
        for (i = 0; i < nheld; i++) {
            if (held[i].due_ns <= now &&
                (best < 0 || held[i].due_ns < held[best].due_ns)) {
                best = i;
            }
        }
        if (best < 0) {
            return;
        }
        Held h = held[best];

        /* out of the list first: forward() may hold it again */
        held[best] = held[--nheld];
        forward(h.from, h.to, h.buf, h.len);
        free(h.buf);
    }
}

/* Ms until the next held frame is due, for poll(); -1 if none. */
static int next_due_ms(uint64_t now)
{
    uint64_t first = UINT64_MAX;
    int i;

    /* A backlog is tried again each millisecond. */
    for (i = 0; i < nports; i++) {
        if (ports[i].backlog.count) {
            first = now + 1000000;
        }
    }

    for (i = 0; i < nheld; i++) {
        if (held[i].due_ns < first) {
            first = held[i].due_ns;
        }
    }
    if (first == UINT64_MAX) {
        return -1;
    }
    return first <= now ? 0 : (int)((first - now + 999999) / 1000000);
}

/* pcap's global header: version 2.4, microseconds, Ethernet. */
static bool pcap_open(const char *path)
{
    static const uint32_t hdr[6] = { 0xa1b2c3d4, 0x00040002, 0, 0, 65535, 1 };

    pcap = fopen(path, "wb");
    return pcap && fwrite(hdr, sizeof(hdr), 1, pcap) == 1;
}

static void pcap_frame(const uint8_t *buf, uint32_t len)
{
    struct timespec ts;
    uint32_t rec[4];

    clock_gettime(CLOCK_REALTIME, &ts);
    rec[0] = ts.tv_sec;
    rec[1] = ts.tv_nsec / 1000;
    rec[2] = rec[3] = len;
    if (fwrite(rec, sizeof(rec), 1, pcap) != 1 ||
        fwrite(buf, len, 1, pcap) != 1) {
        perror("qrdma-relay: pcap");
        fclose(pcap);
        pcap = NULL;
    }
}

static uint16_t be16(const uint8_t *p)
{
    return (uint16_t)(p[0] << 8 | p[1]);
}

/*
 * The CM attribute ID of a frame that carries a connection manager MAD
 * (RoCEv2: UDP 4791, a UD SEND to QP1, management class 7), or 0.
 */
static uint16_t cm_attr_id(const uint8_t *buf, uint32_t len)
{
    uint32_t off = 12, ip_len;
    uint16_t type;

    if (len < off + 2) {
        return 0;
    }
    type = be16(buf + off);
    off += 2;
    if (type == 0x8100 && len >= off + 4) {
        type = be16(buf + off + 2);
        off += 4;
    }
    if (type == 0x0800 && len >= off + 20 && buf[off + 9] == 17) {
        ip_len = (buf[off] & 0xf) * 4;
    } else if (type == 0x86dd && len >= off + 40 && buf[off + 6] == 17) {
        ip_len = 40;
    } else {
        return 0;
    }
    off += ip_len;
    /* UDP 8, BTH 12, DETH 8, then the MAD's common header (24). */
    if (len < off + 8 + 12 + 8 + 24 || be16(buf + off + 2) != 4791) {
        return 0;
    }
    off += 8;
    if (buf[off] != 0x64 ||                             /* UD SEND Only */
        (buf[off + 5] << 16 | buf[off + 6] << 8 | buf[off + 7]) != 1) {
        return 0;
    }
    off += 12 + 8;
    return buf[off + 1] == 0x07 ? be16(buf + off + 16) : 0;
}

/*
 * Whether a frame is an IPv6 neighbour solicitation from an address (not
 * duplicate address detection's, from ::) that --drop-nd still wants
 * dropped.  Only without extension headers, as Linux sends them.
 */
static bool nd_drop(const uint8_t *buf, uint32_t len)
{
    static const uint8_t unspecified[16];
    uint32_t off = 14;

    if (!nd_drops || len < off + 40 + 1) {
        return false;
    }
    if (be16(buf + 12) == 0x8100) {
        off += 4;
        if (len < off + 40 + 1 || be16(buf + 16) != 0x86dd) {
            return false;
        }
    } else if (be16(buf + 12) != 0x86dd) {
        return false;
    }
    if (buf[off + 6] != 58 || buf[off + 40] != 135 ||
        !memcmp(buf + off + 8, unspecified, 16)) {
        return false;
    }
    nd_drops--;
    return true;
}

/* Whether a frame is a CM MAD --drop-cm still wants dropped. */
static bool cm_drop(const uint8_t *buf, uint32_t len)
{
    uint16_t attr = cm_attr_id(buf, len);
    size_t i;

    for (i = 0; attr && i < sizeof(cm_drops) / sizeof(cm_drops[0]); i++) {
        if (cm_drops[i].attr_id == attr && cm_drops[i].left) {
            cm_drops[i].left--;
            return true;
        }
    }
    return false;
}

static bool parse_cm_drop(const char *s)
{
    const char *colon = strchr(s, ':');
    size_t n = colon ? (size_t)(colon - s) : strlen(s), i;
    unsigned long count = 1;
    char *end;

    if (colon) {
        count = strtoul(colon + 1, &end, 10);
        if (!colon[1] || *end || !count || count > 1000000) {
            return false;
        }
    }
    for (i = 0; i < sizeof(cm_drops) / sizeof(cm_drops[0]); i++) {
        if (strlen(cm_drops[i].name) == n &&
            !strncasecmp(cm_drops[i].name, s, n)) {
            cm_drops[i].left = count;
            return true;
        }
    }
    return false;
}

static void take(const Rates *r, int from, uint8_t *buf, uint32_t len)
{
    uint64_t now = now_ns(), due = now;
    int copies = 1, c, i;

    stats.in++;
    if (pcap) {
        pcap_frame(buf, len);
    }
    /* A reordered frame goes once as many later ones have passed it. */
    for (i = 0; i < nheld; i++) {
        if (held[i].behind && --held[i].behind == 0) {
            held[i].due_ns = now;
        }
    }
    /* Before any random choice: the seed's sequence stays the same. */
    if (cm_drop(buf, len)) {
        stats.cm_dropped++;
        return;
    }
    if (nd_drop(buf, len)) {
        stats.nd_dropped++;
        return;
    }
    if (chance(r->drop)) {
        stats.dropped++;
        return;
    }
    if (chance(r->corrupt) && len) {
        uint32_t bit = rng_next() % (len * 8);

        buf[bit / 8] ^= 1u << (bit % 8);
        stats.corrupted++;
    }
    if (chance(r->dup)) {
        copies = 2;
        stats.duplicated++;
    }
    if (r->delay_ms > 0 || r->jitter_ms > 0) {
        due = now + (uint64_t)((r->delay_ms + rng_unit() * r->jitter_ms) *
                               1e6);
    }
    for (c = 0; c < copies; c++) {
        if (chance(r->reorder)) {
            stats.reordered++;
            hold(from, -1, buf, len, due + REORDER_MAX_NS,
                 r->reorder_window);
        } else if (due > now) {
            hold(from, -1, buf, len, due, 0);
        } else {
            forward(from, -1, buf, len);
        }
    }
}

static void print_stats(FILE *f, const Rates *r, unsigned long seed)
{
    fprintf(f, "seed %lu drop %g dup %g reorder %g/%u corrupt %g "
            "delay %g+%g ms\n", seed, r->drop, r->dup, r->reorder,
            r->reorder_window, r->corrupt, r->delay_ms, r->jitter_ms);
    fprintf(f, "frames in %llu out %llu dropped %llu duplicated %llu "
            "reordered %llu corrupted %llu undeliverable %llu\n",
            (unsigned long long)stats.in, (unsigned long long)stats.out,
            (unsigned long long)stats.dropped,
            (unsigned long long)stats.duplicated,
            (unsigned long long)stats.reordered,
            (unsigned long long)stats.corrupted,
            (unsigned long long)stats.overflow);
    if (stats.cm_dropped) {
        fprintf(f, "CM MADs dropped %llu\n",
                (unsigned long long)stats.cm_dropped);
    }
    if (stats.nd_dropped) {
        fprintf(f, "neighbour solicitations dropped %llu\n",
                (unsigned long long)stats.nd_dropped);
    }
}

static bool parse_rate(const char *s, double *v)
{
    char *end;

    *v = strtod(s, &end);
    return *s && !*end && *v >= 0 && *v <= 1;
}

static bool parse_num(const char *s, double *v)
{
    char *end;

    *v = strtod(s, &end);
    return *s && !*end && *v >= 0;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        { "drop", required_argument, NULL, 'd' },
        { "dup", required_argument, NULL, 'u' },
        { "reorder", required_argument, NULL, 'r' },
        { "window", required_argument, NULL, 'w' },
        { "corrupt", required_argument, NULL, 'c' },
        { "delay", required_argument, NULL, 'D' },
        { "jitter", required_argument, NULL, 'j' },
        { "seed", required_argument, NULL, 's' },
        { "duration", required_argument, NULL, 't' },
        { "stats", required_argument, NULL, 'o' },
        { "pcap", required_argument, NULL, 'p' },
        { "drop-cm", required_argument, NULL, 'm' },
        { "drop-nd", required_argument, NULL, 'n' },
        { "help", no_argument, NULL, 'h' },
        { 0 }
    };
    Rates r = { .reorder_window = 4 };
    double duration = 3600, v;
    unsigned long seed = 1;
    const char *stats_file = NULL;
    struct pollfd pfd[MAX_PORTS];
    static uint8_t buf[FRAME_MAX];
    uint64_t end;
    int c, i;
    bool ok;

    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'd': ok = parse_rate(optarg, &r.drop); break;
        case 'u': ok = parse_rate(optarg, &r.dup); break;
        case 'r': ok = parse_rate(optarg, &r.reorder); break;
        case 'c': ok = parse_rate(optarg, &r.corrupt); break;
        case 'D': ok = parse_num(optarg, &r.delay_ms); break;
        case 'j': ok = parse_num(optarg, &r.jitter_ms); break;
        case 't': ok = parse_num(optarg, &duration); break;
        case 'w':
            ok = parse_num(optarg, &v) && v >= 1 && v <= 1000;
            r.reorder_window = v;
            break;
        case 's':
            ok = parse_num(optarg, &v);
            seed = v;
            break;
        case 'o':
            stats_file = optarg;
            ok = true;
            break;
        case 'p':
            ok = pcap_open(optarg);
            if (!ok) {
                fprintf(stderr, "qrdma-relay: cannot write %s: %s\n",
                        optarg, strerror(errno));
                return 1;
            }
            break;
        case 'm': ok = parse_cm_drop(optarg); break;
        case 'n':
            ok = parse_num(optarg, &v) && v <= 1000000;
            nd_drops = v;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            ok = false;
        }
        if (!ok) {
            usage(stderr);
            return 2;
        }
    }
    if (argc - optind < 2) {
        usage(stderr);
        return 2;
    }
    for (i = optind; i < argc; i++) {
        if (port_open(argv[i]) < 0) {
            fprintf(stderr, "qrdma-relay: cannot open port %s: %s\n",
                    argv[i], strerror(errno));
            return 1;
        }
    }
    rng_state = seed;
    signal(SIGTERM, on_signal);
    signal(SIGINT, on_signal);
    for (i = 0; i < nports; i++) {
        pfd[i].fd = ports[i].fd;
        pfd[i].events = POLLIN;
    }
    end = now_ns() + (uint64_t)(duration * 1e9);

    while (!stop && now_ns() < end) {
        uint64_t now = now_ns();
        int timeout = next_due_ms(now);

        if (timeout < 0 || timeout > 100) {
            timeout = 100;              /* checks stop and the duration */
        }
        if (poll(pfd, nports, timeout) < 0 && errno != EINTR) {
            perror("qrdma-relay: poll");
            return 1;
        }
        for (i = 0; i < nports; i++) {
            ssize_t n;

            if (!(pfd[i].revents & POLLIN)) {
                continue;
            }
            /* At most a few per port per turn: no port starves another. */
            for (c = 0; c < 64; c++) {
                n = recv(ports[i].fd, buf, sizeof(buf), 0);
                if (n < 0) {
                    break;
                }
                take(&r, i, buf, n);
            }
        }
        for (i = 0; i < nports; i++) {
            backlog_flush(&ports[i]);
        }
        release_due(now_ns());
    }
    print_stats(stdout, &r, seed);
    if (pcap && fclose(pcap)) {
        perror("qrdma-relay: pcap");
        return 1;
    }
    if (stats_file) {
        FILE *f = fopen(stats_file, "w");

        if (f) {
            print_stats(f, &r, seed);
            fclose(f);
        }
    }
    return 0;
}
