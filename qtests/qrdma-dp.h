/*
 * qrdma data path tests: the set-up and helpers their files share
 *
 * Copyright (c) 2026 The qrdma developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * The tests of the data path hang off QRDMA_NODE_DP, one file per area
 * (qrdma-dp-*-test.c), with the random WQEs and frames of
 * qrdma-fuzz-test.c and the benchmarks of qrdma-bench.c; a test of a
 * lifecycle rule is named by its id in the project's
 * docs/specs/qrdma-lifecycle.rst.  They all start from a QrdmaDpEnv: a
 * function with its event queues, a PD, an MR over QRDMA_DP_DATA_PAGES of
 * guest memory and a CQ; the wire helpers join two functions through
 * netdevs the test sees.
 */

#ifndef QTEST_QRDMA_DP_H
#define QTEST_QRDMA_DP_H

#include "qrdma-qos.h"

#define QRDMA_DP_DATA_PAGES 16

typedef struct QrdmaDpCq {
    uint32_t cqn;
    uint64_t ring;                      /* one page: 128 CQEs */
    uint32_t log2;
    uint32_t ci;
    uint64_t ci_addr;
} QrdmaDpCq;

typedef struct QrdmaDpQp {
    uint32_t qpn;
    uint8_t type;
    uint64_t sq;                        /* one page: 16 WQEs */
    uint64_t rq;                        /* one page: 32 WQEs */
    uint32_t sq_pi;
    uint32_t rq_pi;
} QrdmaDpQp;

typedef struct QrdmaDpEnv {
    QrdmaT t;
    QPCIBar db;
    uint32_t pd;
    uint64_t data;                      /* QRDMA_DP_DATA_PAGES of RAM */
    uint32_t lkey;                      /* all access rights on data */
    uint32_t rkey;                      /* the same MR's rkey */
    QrdmaDpCq cq;
    uint64_t eq0;
    uint32_t eq0_ci;
    uint64_t eq1;
    uint32_t eq1_ci;
    uint8_t peer_ip;                    /* last byte of the peer's GID */
    uint8_t peer_mac[6];                /* and its MAC, for the wire */
    /* What qrdma_dp_modify() asks for: */
    uint32_t qp_access;                 /* qp_access_flags */
    uint8_t timeout;                    /* local ACK timeout */
    uint8_t retry_cnt;                  /* and its retry count */
    uint8_t path_mtu;                   /* IB enum */
    uint8_t max_rd_atomic;              /* and the READs/atomics in flight */
    uint8_t max_dest_rd_atomic;         /* and the responder resources */
    uint32_t sq_psn;                    /* and the PSNs */
    uint32_t rq_psn;
} QrdmaDpEnv;

void qrdma_dp_env_init(QrdmaDpEnv *e, void *obj, QGuestAllocator *alloc);

/* Resources */
uint64_t qrdma_dp_page_list1(QrdmaDpEnv *e, uint64_t page);
uint8_t qrdma_dp_create_cq_flags(QrdmaDpEnv *e, QrdmaDpCq *cq, uint32_t log2,
                                 uint32_t eq, uint32_t flags);
uint8_t qrdma_dp_create_cq(QrdmaDpEnv *e, QrdmaDpCq *cq, uint32_t log2,
                           uint32_t eq);
uint32_t qrdma_dp_reg_mr(QrdmaDpEnv *e, uint32_t pd, uint64_t off,
                         uint64_t len, uint32_t access);
/*
 * REG_MR of the one page at guest address page, at iova page, with the
 * given access: the status, and the rkey in *rkey (if not NULL) when it
 * succeeds.
 */
uint8_t qrdma_dp_reg_page_mr(QrdmaDpEnv *e, uint64_t page, uint32_t access,
                             uint32_t *rkey);
void qrdma_dp_query_device(QrdmaDpEnv *e, struct qrdma_device_attr *attr);
uint32_t qrdma_dp_device_caps(QrdmaDpEnv *e);
uint32_t qrdma_dp_alloc_mw(QrdmaDpEnv *e, uint32_t pd, uint8_t type,
                           uint32_t *handle);
/* The next key of a window, as ibv_inc_rkey() makes it. */
uint32_t qrdma_dp_next_key(uint32_t key);

/* QPs */
uint8_t qrdma_dp_create_qp(QrdmaDpEnv *e, QrdmaDpQp *qp, uint8_t type,
                           uint32_t srq, const QrdmaDpCq *scq,
                           const QrdmaDpCq *rcq);
/*
 * The same on rings the caller has: one page each, from the page lists at
 * sq_list and rq_list (rq_list unused with an SRQ); qp->sq and qp->rq are
 * left 0.  QPs that never post may share them.
 */
uint8_t qrdma_dp_create_qp_on(QrdmaDpEnv *e, QrdmaDpQp *qp, uint8_t type,
                              uint32_t srq, const QrdmaDpCq *scq,
                              const QrdmaDpCq *rcq, uint64_t sq_list,
                              uint64_t rq_list);
uint8_t qrdma_dp_modify(QrdmaDpEnv *e, QrdmaDpQp *qp, uint32_t mask,
                        uint8_t state, uint32_t dest, uint8_t rnr_retry);
/* A modify that moves the QP to @state and changes nothing else. */
uint8_t qrdma_dp_modify_state(QrdmaDpEnv *e, QrdmaDpQp *qp, uint8_t state);
void qrdma_dp_to_rtr(QrdmaDpEnv *e, QrdmaDpQp *qp, uint32_t dest);
void qrdma_dp_to_rts(QrdmaDpEnv *e, QrdmaDpQp *qp, uint8_t rnr_retry);
/* Two QPs of a type connected to each other, in RTS. */
void qrdma_dp_pair(QrdmaDpEnv *e, QrdmaDpQp *a, QrdmaDpQp *b, uint8_t type,
                   uint8_t rnr_retry);

/* Work requests */
void qrdma_dp_ring_db(QrdmaDpEnv *e, uint64_t off, uint32_t handle,
                      uint32_t index);
void qrdma_dp_post_send(QrdmaDpEnv *e, QrdmaDpQp *qp,
                        struct qrdma_sq_wqe *wqe);
struct qrdma_sq_wqe qrdma_dp_wqe_sge(uint64_t wr_id, uint8_t opcode,
                                     uint64_t addr, uint32_t len,
                                     uint32_t lkey);
void qrdma_dp_post_recv(QrdmaDpEnv *e, QrdmaDpQp *qp, uint64_t wr_id,
                        uint64_t addr, uint32_t len, uint32_t lkey);
struct qrdma_sq_wqe qrdma_dp_wqe_flush(uint64_t wr_id, uint32_t rkey,
                                       uint64_t addr, uint64_t len,
                                       uint8_t type, uint8_t level);
struct qrdma_sq_wqe qrdma_dp_wqe_bind(uint64_t wr_id, uint32_t key,
                                      uint32_t lkey, uint64_t addr,
                                      uint64_t len, uint32_t access);
/* A fast registration of 2 pages (data pages 12-13) at iova 0x50000000. */
struct qrdma_sq_wqe qrdma_dp_wqe_fast_reg(QrdmaDpEnv *e, uint64_t wr_id,
                                          uint32_t key, uint32_t access);
/* Post w on qp and expect its CQE. */
void qrdma_dp_run_wqe(QrdmaDpEnv *e, QrdmaDpQp *qp, struct qrdma_sq_wqe w,
                      uint8_t opcode, uint8_t status);

/* Completions, events and data */
/* The next CQE, or false when none comes within a short wait. */
bool qrdma_dp_poll_cq(QrdmaDpEnv *e, QrdmaDpCq *cq, struct qrdma_cqe *cqe);
void qrdma_dp_expect_cqe(QrdmaDpEnv *e, QrdmaDpCq *cq, uint64_t wr_id,
                         uint32_t qpn, uint8_t opcode, uint8_t status);
void qrdma_dp_expect_no_cqe(QrdmaDpEnv *e, QrdmaDpCq *cq);
/*
 * The next CQE, with QEMU's virtual clock stepped by step_ns between
 * looks, at most n times: for completions that wait for a device timer.
 * Returns the virtual time it took, in ns.
 */
int64_t qrdma_dp_expect_cqe_stepping(QrdmaDpEnv *e, QrdmaDpCq *cq,
                                     uint64_t wr_id, uint32_t qpn,
                                     uint8_t status, int64_t step_ns, int n);
/* The next event on EQ n, which must be type and handle. */
void qrdma_dp_expect_event(QrdmaDpEnv *e, unsigned n, uint8_t type,
                           uint32_t handle);
void qrdma_dp_write_data(QrdmaDpEnv *e, uint64_t off, const char *s);
void qrdma_dp_expect_data(QrdmaDpEnv *e, uint64_t off, const char *s);

/* More functions of one QEMU */
/*
 * Another qrdma device of a multi-device test, in PCI slot `slot`, with
 * QOM id qrdma<slot - 4>: it answers to 10.0.2.<ip> only.
 */
void qrdma_dp_other_device(QQrdma *q, unsigned slot, uint8_t ip, QQrdma *qn,
                           QGuestAllocator *alloc, QrdmaDpEnv *en);
/*
 * The second qrdma device of a two-device test, in slot 5: it answers to
 * 10.0.2.16 only, and e1 sends to it.
 */
void qrdma_dp_second_device(QQrdma *q, QQrdma *q2, QGuestAllocator *alloc,
                            QrdmaDpEnv *e1, QrdmaDpEnv *e2);
/* RC QPs a of e1 and b of e2, each in RTR towards the other. */
void qrdma_dp_rc_to_rtr(QrdmaDpEnv *e1, QrdmaDpQp *a, QrdmaDpEnv *e2,
                        QrdmaDpQp *b);
/*
 * RC QP a on device e1 and b on e2, connected to each other: a in RTS, b
 * in RTR, and in RTS too if b_rts.
 */
void qrdma_dp_connect_rc(QrdmaDpEnv *e1, QrdmaDpQp *a, QrdmaDpEnv *e2,
                         QrdmaDpQp *b, bool b_rts);

/*
 * The wire
 *
 * Two functions on fabrics of their own, so that nothing passes between
 * them but frames: qrdma0 (10.0.2.15) on netdev w0 and qrdma1 (10.0.2.16)
 * on w1.  With qrdma_dp_wire_setup they are hub ports of hub 7, and the
 * hub's third port is the test's: a datagram socket that sees every frame
 * either sends, and sends frames of its own to both.  With
 * qrdma_dp_relay_setup the test is the wire between the two functions:
 * qrdma0's netdev and qrdma1's are each a datagram socket whose other end
 * the test holds, and a frame goes across only when the test passes it on.
 * Both are the .before of a test whose edge adds
 * "netdev=w0,mac=" QRDMA_DP_WIRE_MAC0 to qrdma0.
 */
#define QRDMA_DP_WIRE_MAC0 "52:54:00:00:02:0f"
#define QRDMA_DP_WIRE_MAC1 "52:54:00:00:02:10"
#define QRDMA_DP_WIRE_FRAME_MAX 9018

/* Where the headers of an untagged IPv4 RoCEv2 frame start. */
#define QRDMA_DP_WIRE_IP     14
#define QRDMA_DP_WIRE_UDP    (QRDMA_DP_WIRE_IP + 20)
#define QRDMA_DP_WIRE_BTH    (QRDMA_DP_WIRE_UDP + 8)

extern const uint8_t qrdma_dp_wire_mac0[6];
extern const uint8_t qrdma_dp_wire_mac1[6];

/* The sockets: the hub's port in [0], or qrdma0's in [0], qrdma1's in [2]. */
void *qrdma_dp_wire_setup(GString *cmd_line, void *arg);
void *qrdma_dp_relay_setup(GString *cmd_line, void *arg);
/* qrdma0 in e0 and qrdma1 in e1, each other's peer. */
void qrdma_dp_wire_envs(void *obj, QGuestAllocator *alloc, QQrdma *q1,
                        QrdmaDpEnv *e0, QrdmaDpEnv *e1);

/* The next frame the hub brought the test, 0 if none within 2 s. */
size_t qrdma_dp_wire_recv(int fd, uint8_t *buf);
void qrdma_dp_wire_drain(int fd);
void qrdma_dp_wire_send(int fd, const uint8_t *f, size_t len);
/* Pass on every frame from one side, up to want of them; their opcodes. */
int qrdma_dp_relay(int from, int to, int want, uint8_t *ops);
/* Whether a frame comes from fd within 300 ms. */
bool qrdma_dp_relay_quiet(int fd);
/* Waits up to 2 s for a counter of e to reach want. */
void qrdma_dp_wire_expect_count(QrdmaDpEnv *e, const char *name,
                                uint64_t want);

/* The Internet checksum of an IPv4 header: 0 when it is right. */
uint16_t qrdma_dp_wire_ipsum(const uint8_t *h);
void qrdma_dp_wire_set_icrc(uint8_t *f, size_t len);
/* The IPv4 header checksum and the ICRC of a frame, made right again. */
void qrdma_dp_wire_fix(uint8_t *f, size_t len);
/*
 * A frame as the annex lays it out: to the peer's MAC from the sender's,
 * IPv4 from ::ffff:10.0.2.x to ::ffff:10.0.2.y with DF and a good header
 * checksum, UDP from a port of 0xc000-0xffff to 4791 with checksum 0 and
 * a length that matches IP's, the BTH's version 0 and default P_Key, pad
 * that makes the payload whole words, and the ICRC.  Returns its opcode.
 */
uint8_t qrdma_dp_wire_check_frame(const uint8_t *f, size_t len);
/* The BTH PSN of a frame. */
uint32_t qrdma_dp_wire_psn(const uint8_t *f);

#endif /* QTEST_QRDMA_DP_H */
