/*
 * QEMU qrdma: emulated RDMA (RoCEv2) NIC, the verbs data path
 *
 * Copyright (c) 2026 The qrdma developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * A send doorbell runs a few WQEs at once; all else, and more than a few,
 * runs in a bottom half, one WQE at a time, each copied once out of guest
 * memory before it is checked.
 * The fabric is loopback: between QPs of one device and between the qrdma
 * devices of its qrdma-fabric, routed by destination GID and QPN, with the
 * transport semantics of RC, UC and UD applied as if packets had flowed.
 * Data moves with a single copy between mapped guest pages.
 */

#include "qemu/osdep.h"
#include "qemu/log.h"
#include "qemu/main-loop.h"
#include "qemu/atomic.h"
#include "qemu/units.h"
#include "system/dma.h"
#include "hw/pci/msix.h"
#include "net/checksum.h"
#include "qrdma.h"
#include "qrdma_mcast.h"
#include "qrdma_fabric.h"
#include "qrdma_cq.h"
#include "qrdma_mr.h"
#include "qrdma_sgl.h"
#include "qrdma_err.h"
#include "trace.h"

#define QRDMA_MAX_MSG (1u << 31)

/*
 * A completion of qp that its CQ cannot take (overrun): the QP can no
 * longer report its work, a catastrophic error of the QP.  It goes to ERR
 * at once; a flush would have nowhere to go.
 */
static void qrdma_qp_cq_push(QrdmaCore *core, QrdmaQp *qp, uint32_t cqn,
                             struct qrdma_cqe *cqe, bool solicited)
{
    if (!qrdma_cq_push(core, cqn, cqe, solicited) && !qp->fatal) {
        qp->fatal = true;
        qp->state = QRDMA_QPS_ERR;
        trace_qrdma_qp_error(qp->qpn, qp->state);
        qrdma_event(core, QRDMA_EV_QP_FATAL, qp->qpn);
    }
}

/* Work queue entries */

static uint8_t qrdma_wc_opcode(uint8_t wr_opcode)
{
    switch (wr_opcode) {
    case QRDMA_WR_RDMA_WRITE:
    case QRDMA_WR_RDMA_WRITE_WITH_IMM:
        return QRDMA_WC_RDMA_WRITE;
    case QRDMA_WR_RDMA_READ:
        return QRDMA_WC_RDMA_READ;
    case QRDMA_WR_ATOMIC_CMP_AND_SWP:
        return QRDMA_WC_COMP_SWAP;
    case QRDMA_WR_ATOMIC_FETCH_AND_ADD:
        return QRDMA_WC_FETCH_ADD;
    case QRDMA_WR_LOCAL_INV:
        return QRDMA_WC_LOCAL_INV;
    case QRDMA_WR_BIND_MW:
        return QRDMA_WC_BIND_MW;
    case QRDMA_WR_REG_MR:
        return QRDMA_WC_REG_MR;
    case QRDMA_WR_ATOMIC_WRITE:
        return QRDMA_WC_ATOMIC_WRITE;
    case QRDMA_WR_FLUSH:
        return QRDMA_WC_FLUSH;
    default:
        return QRDMA_WC_SEND;
    }
}

static void qrdma_send_cqe(QrdmaCore *core, QrdmaQp *qp, uint64_t wr_id,
                           uint8_t opcode, uint8_t status, uint32_t len)
{
    struct qrdma_cqe cqe = {
        .wr_id = wr_id,
        .byte_len = cpu_to_le32(len),
        .qpn = cpu_to_le32(qp->qpn),
        .opcode = opcode,
        .status = status,
    };

    qrdma_qp_cq_push(core, qp, qp->send_cq, &cqe, false);
}

static void qrdma_flush_sq(QrdmaCore *core, QrdmaQp *qp)
{
    while (qp->sq_ci != qp->sq_pi) {
        struct qrdma_sq_wqe wqe;
        uint64_t addr = qrdma_ring_addr(&qp->sq, qp->sq_ci, qp->sq_log2,
                                       QRDMA_SQ_WQE_SIZE);

        if (!qrdma_dma_read(core, addr, &wqe, offsetof(typeof(wqe), rsvd0))) {
            wqe.wr_id = 0;
            wqe.opcode = QRDMA_WR_SEND;
        }
        /* S30: flushed WRs always complete, signaled or not. */
        qrdma_send_cqe(core, qp, wqe.wr_id, qrdma_wc_opcode(wqe.opcode),
                       QRDMA_WC_WR_FLUSH_ERR, 0);
        qp->sq_ci++;
    }
}

static void qrdma_flush_rq(QrdmaCore *core, QrdmaQp *qp)
{
    while (qp->rq_ci != qp->rq_pi) {
        uint64_t addr = qrdma_ring_addr(&qp->rq, qp->rq_ci, qp->rq_log2,
                                       QRDMA_RQ_WQE_SIZE);
        struct qrdma_cqe cqe = {
            .qpn = cpu_to_le32(qp->qpn),
            .opcode = QRDMA_WC_RECV,
            .status = QRDMA_WC_WR_FLUSH_ERR,
            .is_recv = 1,
        };

        qrdma_dma_read(core, addr, &cqe.wr_id, sizeof(cqe.wr_id));
        qrdma_qp_cq_push(core, qp, qp->recv_cq, &cqe, false);
        qp->rq_ci++;
    }
}

static void qrdma_qp_to_err(QrdmaCore *core, QrdmaQp *qp, bool sq_only)
{
    uint8_t from = qp->state;

    /*
     * SQE is a way down from RTS only: a QP already in ERR (a fatal one
     * whose completion was just lost, say) stays there, or a move SQE ->
     * RTS would revive it.
     */
    qp->state = sq_only && from != QRDMA_QPS_ERR ? QRDMA_QPS_SQE :
                QRDMA_QPS_ERR;
    trace_qrdma_qp_error(qp->qpn, qp->state);
    qrdma_dp_qp_modified(core, qp, from);
}

typedef enum {
    QRDMA_RX_OK,
    QRDMA_RX_DROP,                      /* silently: UC, UD */
    QRDMA_RX_RNR,                       /* no receive WQE posted */
    QRDMA_RX_LEN,                       /* message too long */
    QRDMA_RX_PROT,                      /* bad receive WQE */
    QRDMA_RX_ACCESS,                    /* bad rkey or rights */
    QRDMA_RX_INV_REQ,                   /* request the responder refuses */
} QrdmaRxResult;

/*
 * The IB RNR timer encoding (min_rnr_timer 0..31) in units of 10 us:
 * 0 is the longest, 655.36 ms.
 */
static const uint32_t qrdma_rnr_10us[32] = {
    65536, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256,
    384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384,
    24576, 32768, 49152,
};

/* Take the next receive WQE of a QP (from its SRQ if it has one). */
static bool qrdma_take_recv(QrdmaCore *core, QrdmaQp *qp,
                            struct qrdma_rq_wqe *wqe)
{
    const QrdmaPages *ring;
    uint32_t *ci, pi, log2;
    QrdmaSrq *srq = NULL;
    int idx;

    if (qp->srq) {
        idx = qrdma_table_lookup(&core->srq_table, qp->srq);
        if (idx < 0) {
            return false;
        }
        srq = &core->srq[idx];
        ring = &srq->ring;
        ci = &srq->ci;
        pi = srq->pi;
        log2 = srq->log2;
    } else {
        ring = &qp->rq;
        ci = &qp->rq_ci;
        pi = qp->rq_pi;
        log2 = qp->rq_log2;
    }
    if (*ci == pi) {
        return false;
    }
    if (!qrdma_dma_read(core, qrdma_ring_addr(ring, *ci, log2,
                                              QRDMA_RQ_WQE_SIZE),
                        wqe, sizeof(*wqe))) {
        memset(wqe, 0, sizeof(*wqe));
        wqe->num_sge = cpu_to_le32(UINT32_MAX);
    }
    (*ci)++;
    if (srq && srq->limit && pi - *ci < srq->limit) {
        /* Armed once by MODIFY_SRQ; fires once. */
        srq->limit = 0;
        qrdma_event(core, QRDMA_EV_SRQ_LIMIT_REACHED, srq->handle);
    }
    return true;
}

/*
 * The GRH a UD receive gets: the IP header the message would have come
 * with over RoCE v2, from the sender's address vector (hop limit, traffic
 * class, flow label) and GID, as a consumer may read and check it.
 */
static void qrdma_build_grh(QrdmaCore *core, const struct qrdma_av *av,
                            const uint8_t *dgid, uint32_t payload,
                            uint8_t grh[QRDMA_GRH_SIZE], uint8_t *type)
{
    /* The index was checked when the AV was set. */
    const uint8_t *sgid = core->gid[av->sgid_index < QRDMA_GID_TABLE_LEN ?
                                    av->sgid_index : 0].gid;
    static const uint8_t v4_prefix[12] = { [10] = 0xff, [11] = 0xff };
    /* UDP, BTH and DETH before the payload, the ICRC after it. */
    uint32_t l4_len = 8 + 12 + 8 + payload + 4;

    memset(grh, 0, QRDMA_GRH_SIZE);
    if (!memcmp(sgid, v4_prefix, 12)) {
        /* RoCEv2 over IPv4: the IPv4 header in the last 20 bytes. */
        uint8_t *ip = grh + 20;

        ip[0] = 0x45;
        ip[1] = av->traffic_class;
        stw_be_p(ip + 2, 20 + l4_len);
        ip[6] = 0x40;                   /* don't fragment */
        ip[8] = av->hop_limit;
        ip[9] = 17;
        memcpy(ip + 12, sgid + 12, 4);
        memcpy(ip + 16, dgid + 12, 4);
        stw_be_p(ip + 10, net_raw_checksum(ip, 20));
        *type = 1;
    } else {
        stl_be_p(grh, 6u << 28 | (uint32_t)av->traffic_class << 20 |
                      (le32_to_cpu(av->flow_label) & 0xfffff));
        stw_be_p(grh + 4, l4_len);
        grh[6] = 17;
        grh[7] = av->hop_limit;
        memcpy(grh + 8, sgid, 16);
        memcpy(grh + 24, dgid, 16);
        *type = 2;
    }
}

/*
 * Deliver a message that consumes a receive WQE at dst: SEND (with
 * immediate or invalidate) and RDMA WRITE with immediate.
 */
static QrdmaRxResult qrdma_deliver_recv(QrdmaCore *core, QrdmaQp *qp,
                                        const struct qrdma_sq_wqe *wqe,
                                        QrdmaIter *src, uint32_t len,
                                        QrdmaCore *dc, QrdmaQp *dst,
                                        const struct qrdma_av *av)
{
    const uint8_t *dgid = av->dgid;
    struct qrdma_rq_wqe rwqe;
    struct qrdma_cqe cqe = {
        .qpn = cpu_to_le32(dst->qpn),
        .opcode = QRDMA_WC_RECV,
        .is_recv = 1,
    };
    uint8_t grh[QRDMA_GRH_SIZE];
    uint32_t num, total = len;
    QrdmaIter dit;
    bool ud = dst->type == QRDMA_QPT_UD || dst->type == QRDMA_QPT_GSI;

    if (!qrdma_take_recv(dc, dst, &rwqe)) {
        return dst->type == QRDMA_QPT_RC ? QRDMA_RX_RNR : QRDMA_RX_DROP;
    }
    cqe.wr_id = rwqe.wr_id;
    num = le32_to_cpu(rwqe.num_sge);
    if (ud) {
        total += QRDMA_GRH_SIZE;
        cqe.src_qp = cpu_to_le32(qp->qpn);
        cqe.flags |= QRDMA_CQE_F_GRH;
    }
    if (num > QRDMA_MAX_RECV_SGE ||
        !qrdma_iter_sges(&dit, dc, dst->pd, dst->uctx, rwqe.sge, num,
                         QRDMA_ACCESS_LOCAL_WRITE)) {
        cqe.status = QRDMA_WC_LOC_PROT_ERR;
        qrdma_qp_cq_push(dc, dst, dst->recv_cq, &cqe, false);
        qrdma_qp_to_err(dc, dst, false);
        return QRDMA_RX_PROT;
    }
    /* RDMA WRITE with immediate places nothing in the receive buffer. */
    if (wqe->opcode != QRDMA_WR_RDMA_WRITE_WITH_IMM &&
        qrdma_iter_total(&dit) < total) {
        cqe.status = QRDMA_WC_LOC_LEN_ERR;
        qrdma_qp_cq_push(dc, dst, dst->recv_cq, &cqe, false);
        qrdma_qp_to_err(dc, dst, false);
        return QRDMA_RX_LEN;
    }
    if (ud) {
        QrdmaIter gi;

        qrdma_iter_host(&gi, grh, sizeof(grh));

        qrdma_build_grh(core, av, dgid, len, grh, &cqe.network_hdr_type);
        qrdma_copy(&gi, &dit, sizeof(grh));
    }
    if (wqe->opcode != QRDMA_WR_RDMA_WRITE_WITH_IMM &&
        !qrdma_copy(src, &dit, len)) {
        cqe.status = QRDMA_WC_LOC_PROT_ERR;
        qrdma_qp_cq_push(dc, dst, dst->recv_cq, &cqe, false);
        qrdma_qp_to_err(dc, dst, false);
        return QRDMA_RX_PROT;
    }

    switch (wqe->opcode) {
    case QRDMA_WR_SEND_WITH_IMM:
        cqe.flags |= QRDMA_CQE_F_WITH_IMM;
        cqe.imm_data = wqe->imm_data;
        break;
    case QRDMA_WR_RDMA_WRITE_WITH_IMM:
        cqe.opcode = QRDMA_WC_RECV_RDMA_WITH_IMM;
        cqe.flags |= QRDMA_CQE_F_WITH_IMM;
        cqe.imm_data = wqe->imm_data;
        total = len;
        break;
    case QRDMA_WR_SEND_WITH_INV: {
        qrdma_mr_remote_inv(dc, dst->pd, dst->qpn,
                            le32_to_cpu(wqe->imm_data));
        cqe.flags |= QRDMA_CQE_F_WITH_INV;
        cqe.imm_data = wqe->imm_data;
        break;
    }
    }
    cqe.byte_len = cpu_to_le32(total);
    qrdma_qp_cq_push(dc, dst, dst->recv_cq, &cqe,
                  wqe->flags & QRDMA_WQE_F_SOLICITED);
    return QRDMA_RX_OK;
}

/* The responder side of RDMA WRITE, READ and atomics: the remote range. */
static bool qrdma_remote_span(QrdmaCore *dc, QrdmaQp *dst,
                              const struct qrdma_sq_wqe *wqe, uint64_t len,
                              uint32_t access, QrdmaIter *it)
{
    uint64_t raddr = le64_to_cpu(wqe->rdma.remote_addr);
    const QrdmaMr *mr;

    qrdma_iter_range(it, dc, NULL, 0, 0);
    if (!(le32_to_cpu(dst->attr.qp_access_flags) & access) ||
        !qrdma_rkey_check(dc, dst->pd, dst->qpn, dst->uctx,
                          le32_to_cpu(wqe->rdma.rkey), raddr, len,
                          access, &mr) ||
        !mr) {
        return false;
    }
    it->span[0].mr = mr;
    it->span[0].addr = raddr;
    it->span[0].len = len;
    it->n = 1;
    return true;
}

/*
 * The 8 aligned bytes at the responder that an atomic targets, mapped
 * for one access as a whole (a PCIe AtomicOp is one); NULL and *rx the
 * error when the address or the rights do not allow it.
 */
static uint64_t *qrdma_atomic_map(QrdmaCore *dc, QrdmaQp *dst,
                                  const struct qrdma_sq_wqe *wqe,
                                  uint32_t access, dma_addr_t *plen,
                                  QrdmaRxResult *rx)
{
    uint64_t gpa, room;
    QrdmaIter rit;
    uint64_t *p;

    if (!QEMU_IS_ALIGNED(le64_to_cpu(wqe->rdma.remote_addr), 8)) {
        *rx = QRDMA_RX_INV_REQ;
        return NULL;
    }
    *rx = QRDMA_RX_ACCESS;
    if (!qrdma_remote_span(dc, dst, wqe, 8, access, &rit)) {
        return NULL;
    }
    gpa = qrdma_mr_gpa(rit.span[0].mr, rit.span[0].addr, 8, &room);
    *plen = 8;
    p = qrdma_dma_map(dc, gpa, plen, DMA_DIRECTION_FROM_DEVICE);
    if (p && *plen < 8) {
        qrdma_dma_unmap(dc, p, *plen, DMA_DIRECTION_FROM_DEVICE, 0);
        p = NULL;
    }
    return p;
}

static void qrdma_atomic_unmap(QrdmaCore *dc, uint64_t *p, dma_addr_t plen)
{
    qrdma_dma_unmap(dc, p, plen, DMA_DIRECTION_FROM_DEVICE, 8);
}

static QrdmaRxResult qrdma_atomic(QrdmaCore *core, QrdmaQp *qp,
                                  const struct qrdma_sq_wqe *wqe,
                                  QrdmaIter *local, QrdmaCore *dc,
                                  QrdmaQp *dst)
{
    uint64_t orig;
    QrdmaIter oi;
    QrdmaRxResult rx;
    dma_addr_t plen;
    uint64_t *p;

    p = qrdma_atomic_map(dc, dst, wqe, QRDMA_ACCESS_REMOTE_ATOMIC, &plen,
                         &rx);
    if (!p) {
        return rx;
    }
    /* Atomic against the guest's own CPUs too, as a PCIe AtomicOp is. */
    if (wqe->opcode == QRDMA_WR_ATOMIC_CMP_AND_SWP) {
        orig = qatomic_cmpxchg__nocheck(p,
                                        cpu_to_le64(le64_to_cpu(
                                            wqe->rdma.compare_add)),
                                        wqe->rdma.swap);
    } else {
        uint64_t old, new;

        do {
            old = qatomic_read__nocheck(p);
            new = cpu_to_le64(le64_to_cpu(old) +
                              le64_to_cpu(wqe->rdma.compare_add));
        } while (qatomic_cmpxchg__nocheck(p, old, new) != old);
        orig = old;
    }
    qrdma_atomic_unmap(dc, p, plen);
    qrdma_iter_host(&oi, &orig, 8);
    return qrdma_copy(&oi, local, 8) ? QRDMA_RX_OK : QRDMA_RX_PROT;
}

/*
 * ATOMIC_WRITE: the WQE's 8 bytes land in one aligned 64-bit store, so
 * no reader, the guest's CPUs included, sees half of them.
 */
static QrdmaRxResult qrdma_atomic_write(QrdmaCore *dc, QrdmaQp *dst,
                                        const struct qrdma_sq_wqe *wqe)
{
    QrdmaRxResult rx;
    dma_addr_t plen;
    uint64_t *p;

    p = qrdma_atomic_map(dc, dst, wqe, QRDMA_ACCESS_REMOTE_WRITE, &plen,
                         &rx);
    if (!p) {
        return rx;
    }
    /* The bytes as the consumer gave them: no byte order applies. */
    qatomic_set__nocheck(p, wqe->rdma.compare_add);
    qrdma_atomic_unmap(dc, p, plen);
    return QRDMA_RX_OK;
}

/*
 * FLUSH: the responder checks the rights its type needs, on the QP and on
 * the MR (over the range, or the whole MR), then makes what was written
 * before visible.  The device writes guest memory as each WQE runs, so
 * global visibility needs no more than ordering; persistence the device
 * cannot give, so no MR ever has that right and it always fails.
 */
static QrdmaRxResult qrdma_flush(QrdmaCore *dc, QrdmaQp *dst,
                                 const struct qrdma_sq_wqe *wqe)
{
    uint32_t rkey = le32_to_cpu(wqe->flush.rkey);
    uint64_t addr = le64_to_cpu(wqe->flush.remote_addr);
    uint64_t len = le64_to_cpu(wqe->flush.length);

    if (wqe->flush.type & QRDMA_FLUSH_PERSISTENT ||
        !(le32_to_cpu(dst->attr.qp_access_flags) &
          QRDMA_ACCESS_FLUSH_GLOBAL)) {
        return QRDMA_RX_ACCESS;
    }
    if (!qrdma_mr_flush_check(dc, dst->pd, dst->uctx, rkey,
                              wqe->flush.level == QRDMA_FLUSH_MR, addr, len)) {
        return QRDMA_RX_ACCESS;
    }
    /* Every store of the WQEs before it is visible before its ACK. */
    smp_mb();
    return QRDMA_RX_OK;
}

/* The header and one SGE: all that most WQEs hold, in one read. */
#define QRDMA_WQE_FIRST_READ \
    (offsetof(struct qrdma_sq_wqe, sge) + sizeof(struct qrdma_sge))

/* What is left to read of a WQE after the first read, by its own count. */
static size_t qrdma_wqe_rest(const struct qrdma_sq_wqe *wqe)
{
    size_t used = wqe->flags & QRDMA_WQE_F_INLINE ?
                  MIN(le32_to_cpu(wqe->inline_len), QRDMA_MAX_INLINE) :
                  MIN(wqe->num_sge, QRDMA_MAX_SEND_SGE) *
                  sizeof(struct qrdma_sge);

    return used > sizeof(struct qrdma_sge) ?
           used - sizeof(struct qrdma_sge) : 0;
}

/*
 * An RC request that no responder answered (none at that GID and QPN, or
 * one not yet in RTR, as in a connection set-up race) is sent again when
 * the local ACK timeout, 4.096 us * 2^timeout, expires, up to retry_cnt
 * times; only when the last one is not answered either does it complete
 * with RETRY_EXC_ERR.  timeout 0 means no timer: the request waits until
 * the QP leaves RTS.  Returns false when the retries are spent.
 */
static bool qrdma_retry_later(QrdmaQp *qp)
{
    if (qp->retry_due) {
        qp->retry_due = false;
        if (!qp->retry_left) {
            return false;
        }
        qp->retry_left--;
    }
    qp->retry_wait = true;
    trace_qrdma_retry(qp->qpn, qp->retry_left);
    if (qp->attr.timeout) {
        timer_mod(qp->timer, qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL) +
                  (4096ll << qp->attr.timeout));
    }
    return true;
}

/*
 * Give back the WQE taken at the start of qrdma_exec_send, not run after
 * all: it runs again later, and is counted then.
 */
static void qrdma_wqe_put_back(QrdmaCore *core, QrdmaQp *qp)
{
    qp->sq_ci--;
    core->counters.wqes--;
}

typedef enum QrdmaExec {
    QRDMA_EXEC_NEXT,                    /* done: on to the next WQE */
    QRDMA_EXEC_STOP,                    /* the queue waits (RNR, an error) */
    QRDMA_EXEC_DEFER,                   /* over the byte budget: not taken */
} QrdmaExec;

/*
 * Work out the next send WQE of qp, if its message is at most *bytes
 * long; *bytes is reduced by what it moved.
 */
/*
 * Copy the next send WQE of qp out of guest memory, once; only the copy
 * is looked at.  The header first, then only the SGEs or inline bytes it
 * says it has (bounded by the WQE size, so a bad count reads no further).
 * A WQE that cannot be read is fatal to the QP.
 */
static bool qrdma_wqe_fetch(QrdmaCore *core, QrdmaQp *qp,
                            struct qrdma_sq_wqe *wqe)
{
    uint64_t addr = qrdma_ring_addr(&qp->sq, qp->sq_ci, qp->sq_log2,
                                   QRDMA_SQ_WQE_SIZE);

    if (!qrdma_dma_read(core, addr, wqe, QRDMA_WQE_FIRST_READ) ||
        (qrdma_wqe_rest(wqe) &&
         !qrdma_dma_read(core, addr + QRDMA_WQE_FIRST_READ,
                         (uint8_t *)wqe + QRDMA_WQE_FIRST_READ,
                         qrdma_wqe_rest(wqe)))) {
        qrdma_guest_error(core, "qp 0x%" PRIx32 ": send WQE at 0x%" PRIx64
                          " unreadable", qp->qpn, addr);
        qrdma_event(core, QRDMA_EV_QP_FATAL, qp->qpn);
        qrdma_qp_to_err(core, qp, false);
        return false;
    }
    return true;
}

/*
 * The requester's local side of a message: the source, or for READ and
 * atomics the sink, from the SGEs or the inline data.
 */
static uint8_t qrdma_gather(QrdmaCore *core, const QrdmaQp *qp,
                            const struct qrdma_sq_wqe *wqe, QrdmaIter *it)
{
    uint32_t access = (wqe->opcode == QRDMA_WR_RDMA_READ ||
                       wqe->opcode == QRDMA_WR_ATOMIC_CMP_AND_SWP ||
                       wqe->opcode == QRDMA_WR_ATOMIC_FETCH_AND_ADD) ?
                      QRDMA_ACCESS_LOCAL_WRITE : 0;

    qrdma_iter_range(it, core, NULL, 0, 0);
    if (wqe->opcode == QRDMA_WR_ATOMIC_WRITE ||
        wqe->opcode == QRDMA_WR_FLUSH) {
        /* No local buffer: the SGEs play no part. */
        return QRDMA_WC_SUCCESS;
    }
    if (wqe->flags & QRDMA_WQE_F_INLINE && !access) {
        qrdma_iter_host(it, wqe->inline_data, le32_to_cpu(wqe->inline_len));
        return QRDMA_WC_SUCCESS;
    }
    if (!qrdma_iter_sges(it, core, qp->pd, qp->uctx, wqe->sge, wqe->num_sge,
                         access)) {
        return QRDMA_WC_LOC_PROT_ERR;
    }
    if (qrdma_iter_total(it) > QRDMA_MAX_MSG) {
        return QRDMA_WC_LOC_LEN_ERR;
    }
    return QRDMA_WC_SUCCESS;
}

/* Whether qp may post the WQE: its opcode, inline data and SGE count. */
static uint8_t qrdma_wqe_check(const QrdmaQp *qp,
                               const struct qrdma_sq_wqe *wqe)
{
    unsigned num = wqe->num_sge;
    uint8_t status = QRDMA_WC_SUCCESS;

    switch (wqe->opcode) {
    case QRDMA_WR_SEND:
    case QRDMA_WR_SEND_WITH_IMM:
        break;
    case QRDMA_WR_RDMA_WRITE:
    case QRDMA_WR_RDMA_WRITE_WITH_IMM:
    case QRDMA_WR_SEND_WITH_INV:
        if (qp->type == QRDMA_QPT_UD || qp->type == QRDMA_QPT_GSI ||
            (wqe->opcode == QRDMA_WR_SEND_WITH_INV &&
             qp->type != QRDMA_QPT_RC)) {
            status = QRDMA_WC_LOC_QP_OP_ERR;
        }
        break;
    case QRDMA_WR_RDMA_READ:
    case QRDMA_WR_ATOMIC_CMP_AND_SWP:
    case QRDMA_WR_ATOMIC_FETCH_AND_ADD:
    case QRDMA_WR_ATOMIC_WRITE:
        if (qp->type != QRDMA_QPT_RC) {
            status = QRDMA_WC_LOC_QP_OP_ERR;
        }
        break;
    case QRDMA_WR_FLUSH:
        if (qp->type != QRDMA_QPT_RC || !wqe->flush.type ||
            (wqe->flush.type & ~(QRDMA_FLUSH_GLOBAL |
                                QRDMA_FLUSH_PERSISTENT)) ||
            wqe->flush.level > QRDMA_FLUSH_MR) {
            status = QRDMA_WC_LOC_QP_OP_ERR;
        }
        break;
    case QRDMA_WR_LOCAL_INV:
    case QRDMA_WR_REG_MR:
        break;
    case QRDMA_WR_BIND_MW:
        /* Windows serve RDMA, which UD and GSI QPs do not take. */
        if (qp->type != QRDMA_QPT_RC && qp->type != QRDMA_QPT_UC) {
            status = QRDMA_WC_LOC_QP_OP_ERR;
        }
        break;
    default:
        status = QRDMA_WC_LOC_QP_OP_ERR;
    }
    if (!status && (wqe->flags & QRDMA_WQE_F_INLINE) &&
        wqe->opcode != QRDMA_WR_SEND && wqe->opcode != QRDMA_WR_SEND_WITH_IMM &&
        wqe->opcode != QRDMA_WR_SEND_WITH_INV &&
        wqe->opcode != QRDMA_WR_RDMA_WRITE &&
        wqe->opcode != QRDMA_WR_RDMA_WRITE_WITH_IMM) {
        /* Inline data is a source: READ and atomics have none. */
        status = QRDMA_WC_LOC_QP_OP_ERR;
    } else if (!status && (wqe->flags & QRDMA_WQE_F_INLINE) &&
        le32_to_cpu(wqe->inline_len) > QRDMA_MAX_INLINE) {
        status = QRDMA_WC_LOC_LEN_ERR;
    } else if (!status && !(wqe->flags & QRDMA_WQE_F_INLINE) &&
               num > QRDMA_MAX_SEND_SGE) {
        status = QRDMA_WC_LOC_QP_OP_ERR;
    }
    return status;
}

/*
 * UD and GSI: the message goes to the QP the AH's GID and the WQE's QPN
 * name, or to every QP of a multicast group; a message nobody takes is
 * lost, as on a wire.  The requester's status.
 */
static uint8_t qrdma_send_ud(QrdmaCore *core, QrdmaQp *qp,
                             const struct qrdma_sq_wqe *wqe, QrdmaIter *it,
                             uint32_t len)
{
    const struct qrdma_av *av;
    const uint8_t *dgid;
    QrdmaCore *dc = NULL;
    QrdmaQp *dst;

    int ah = qrdma_table_lookup(&core->ah_table,
                                le32_to_cpu(wqe->ud.ah));
    uint32_t qkey = le32_to_cpu(wqe->ud.remote_qkey);

    if (ah < 0 || core->ah[ah].uctx != qp->uctx ||
        core->ah[ah].pd != qp->pd) {
        return QRDMA_WC_LOC_QP_OP_ERR;
    }
    if (len > 4096) {
        return QRDMA_WC_LOC_LEN_ERR;
    }
    av = &core->ah[ah].av;
    dgid = av->dgid;
    /* IB: a Q_Key with the high bit set means the QP's own. */
    if (qkey & 0x80000000u) {
        qkey = le32_to_cpu(qp->attr.qkey);
    }
    if (qrdma_gid_is_mcast(dgid)) {
        QrdmaCore *c;
        uint32_t g, k;

        QRDMA_FABRIC_FOREACH_MEMBER(c, core->fabric) {
            for (g = 0; g < c->mcast_table.max; g++) {
                QrdmaMcast *m = &c->mcast[g];

                if (!c->mcast_table.busy[g] || memcmp(m->gid, dgid, 16)) {
                    continue;
                }
                for (k = 0; k < m->nqp; k++) {
                    int q = qrdma_table_lookup(&c->qp_table, m->qpn[k]);
                    QrdmaIter copy = *it;

                    if (q >= 0 && c->qp[q].state >= QRDMA_QPS_RTR &&
                        c->qp[q].state <= QRDMA_QPS_SQE &&
                        le32_to_cpu(c->qp[q].attr.qkey) == qkey) {
                        qrdma_deliver_recv(core, qp, wqe, &copy, len, c,
                                           &c->qp[q], av);
                    }
                }
            }
        }
        return QRDMA_WC_SUCCESS;
    }
    dst = qrdma_fabric_find_qp(core->fabric, dgid,
                               le32_to_cpu(wqe->ud.remote_qpn), &dc);
    if (!dst || (dst->type != QRDMA_QPT_UD &&
                 dst->type != QRDMA_QPT_GSI) ||
        dst->state < QRDMA_QPS_RTR || dst->state > QRDMA_QPS_SQE ||
        le32_to_cpu(dst->attr.qkey) != qkey) {
        /* UD: silently dropped, as on a wire. */
        return QRDMA_WC_SUCCESS;
    }
    qrdma_deliver_recv(core, qp, wqe, it, len, dc, dst, av);
    return QRDMA_WC_SUCCESS;
}

/*
 * The responder's part of an RC or UC message to dst of dc, done at once:
 * what it tells the requester.  it is the requester's side (for an atomic,
 * the first SGE cut to 8 bytes).
 */
static QrdmaRxResult qrdma_respond(QrdmaCore *core, QrdmaQp *qp,
                                   const struct qrdma_sq_wqe *wqe,
                                   QrdmaIter *it, uint32_t len,
                                   QrdmaCore *dc, QrdmaQp *dst,
                                   const struct qrdma_av *av)
{
    QrdmaRxResult rx = QRDMA_RX_OK;

    switch (wqe->opcode) {
    case QRDMA_WR_SEND:
    case QRDMA_WR_SEND_WITH_IMM:
    case QRDMA_WR_SEND_WITH_INV:
        rx = qrdma_deliver_recv(core, qp, wqe, it, len, dc, dst, av);
        break;
    case QRDMA_WR_RDMA_WRITE:
    case QRDMA_WR_RDMA_WRITE_WITH_IMM: {
        QrdmaIter rit;

        if (!qrdma_remote_span(dc, dst, wqe, len,
                               QRDMA_ACCESS_REMOTE_WRITE, &rit) && len) {
            rx = QRDMA_RX_ACCESS;
            break;
        }
        if (wqe->opcode == QRDMA_WR_RDMA_WRITE_WITH_IMM) {
            /* The receive WQE must be there before any data lands. */
            if (dst->srq ? false : dst->rq_ci == dst->rq_pi) {
                rx = dst->type == QRDMA_QPT_RC ? QRDMA_RX_RNR : QRDMA_RX_DROP;
                break;
            }
        }
        if (len && !qrdma_copy(it, &rit, len)) {
            rx = QRDMA_RX_ACCESS;
            break;
        }
        if (wqe->opcode == QRDMA_WR_RDMA_WRITE_WITH_IMM) {
            rx = qrdma_deliver_recv(core, qp, wqe, it, len, dc, dst, av);
        }
        break;
    }
    case QRDMA_WR_RDMA_READ: {
        QrdmaIter rit;

        if (!qrdma_remote_span(dc, dst, wqe, len, QRDMA_ACCESS_REMOTE_READ,
                               &rit) && len) {
            rx = QRDMA_RX_ACCESS;
        } else if (len && !qrdma_copy(&rit, it, len)) {
            rx = QRDMA_RX_ACCESS;
        }
        break;
    }
    case QRDMA_WR_ATOMIC_CMP_AND_SWP:
    case QRDMA_WR_ATOMIC_FETCH_AND_ADD:
        rx = qrdma_atomic(core, qp, wqe, it, dc, dst);
        break;
    case QRDMA_WR_ATOMIC_WRITE:
        rx = qrdma_atomic_write(dc, dst, wqe);
        break;
    case QRDMA_WR_FLUSH:
        rx = qrdma_flush(dc, dst, wqe);
        break;
    }
    return rx;
}

/*
 * What the responder's answer means for the requester's WQE: its status,
 * and for the errors the IB specification makes fatal to the responder's
 * QP, that QP's move to ERR.
 */
static uint8_t qrdma_rx_outcome(const QrdmaQp *qp, QrdmaCore *dc,
                                QrdmaQp *dst, QrdmaRxResult rx)
{
    uint8_t status = QRDMA_WC_SUCCESS;

    switch (rx) {
    case QRDMA_RX_OK:
    case QRDMA_RX_DROP:
        break;
    case QRDMA_RX_RNR:
        /* The caller retries while RNR retries are left. */
        status = QRDMA_WC_RNR_RETRY_EXC_ERR;
        break;
    case QRDMA_RX_LEN:
    case QRDMA_RX_INV_REQ:
        status = QRDMA_WC_REM_INV_REQ_ERR;
        if (rx == QRDMA_RX_INV_REQ) {
            qrdma_event(dc, QRDMA_EV_QP_REQ_ERR, dst->qpn);
            qrdma_qp_to_err(dc, dst, false);
        }
        break;
    case QRDMA_RX_PROT:
        status = QRDMA_WC_REM_OP_ERR;
        break;
    case QRDMA_RX_ACCESS:
        status = QRDMA_WC_REM_ACCESS_ERR;
        if (qp->type == QRDMA_QPT_UC) {
            /* UC: the responder drops what it may not take. */
            status = QRDMA_WC_SUCCESS;
        } else {
            qrdma_event(dc, QRDMA_EV_QP_ACCESS_ERR, dst->qpn);
            qrdma_qp_to_err(dc, dst, false);
        }
        break;
    }
    if (qp->type == QRDMA_QPT_UC && status != QRDMA_WC_SUCCESS &&
        rx != QRDMA_RX_OK) {
        status = QRDMA_WC_SUCCESS;
    }
    return status;
}

/*
 * An RNR NAK: while retries are left, the WQE waits for the responder's
 * RNR timer and runs again (rnr_retry 7 means for ever).  Returns false
 * when they are spent.
 */
static bool qrdma_rnr_later(QrdmaQp *qp, const QrdmaQp *dst)
{
    if (qp->rnr_left == 0) {
        return false;
    }
    if (qp->rnr_left != 7) {
        qp->rnr_left--;
    }
    trace_qrdma_rnr(qp->qpn, qp->rnr_left);
    timer_mod(qp->timer, qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL) +
              (int64_t)qrdma_rnr_10us[dst->attr.min_rnr_timer & 31] *
              10 * SCALE_US);
    return true;
}

static QrdmaExec qrdma_exec_send(QrdmaCore *core, QrdmaQp *qp,
                                 uint64_t *bytes)
{
    struct qrdma_sq_wqe wqe;
    uint8_t status = QRDMA_WC_SUCCESS;
    uint32_t len = 0;
    const struct qrdma_av *av;
    const uint8_t *dgid;
    QrdmaQp *dst = NULL;
    QrdmaCore *dc = NULL;
    QrdmaRxResult rx = QRDMA_RX_OK;
    QrdmaIter it;
    bool signaled;
    unsigned num;

    if (!qrdma_wqe_fetch(core, qp, &wqe)) {
        return QRDMA_EXEC_STOP;
    }
    core->counters.wqes++;
    trace_qrdma_wqe(qp->qpn, qp->sq_ci, wqe.opcode, wqe.flags);
    /*
     * The WQE is taken before it runs: a QP that is its own responder may
     * be flushed by its receive side meanwhile, and that flush must not
     * take this WQE too.
     */
    qp->sq_ci++;
    signaled = qp->sq_sig_all || (wqe.flags & QRDMA_WQE_F_SIGNALED);
    num = wqe.num_sge;

    status = qrdma_wqe_check(qp, &wqe);
    if (status) {
        qrdma_guest_error(core, "qp 0x%" PRIx32 ": bad send WQE (opcode %u,"
                          " %u SGEs)", qp->qpn, wqe.opcode, num);
        goto complete;
    }

    if (wqe.opcode == QRDMA_WR_BIND_MW || wqe.opcode == QRDMA_WR_LOCAL_INV ||
        wqe.opcode == QRDMA_WR_REG_MR) {
        status = qrdma_mr_wr(core, qp->pd, qp->uctx, qp->qpn, &wqe);
        goto complete;
    }

    status = qrdma_gather(core, qp, &wqe, &it);
    if (status) {
        goto complete;
    }
    len = qrdma_iter_total(&it);
    if (len > *bytes) {
        /* Not taken after all: the bottom half runs it, whole. */
        qrdma_wqe_put_back(core, qp);
        core->counters.sq_deferred++;
        trace_qrdma_sq_deferred(qp->qpn, len);
        return QRDMA_EXEC_DEFER;
    }
    *bytes -= len;

    if (qp->type == QRDMA_QPT_UD || qp->type == QRDMA_QPT_GSI) {
        status = qrdma_send_ud(core, qp, &wqe, &it, len);
        goto complete;
    }

    /* RC and UC: the connected responder. */
    av = &qp->attr.av;
    dgid = av->dgid;
    dst = qrdma_fabric_find_qp(core->fabric, dgid,
                               le32_to_cpu(qp->attr.dest_qp_num), &dc);
    if (!dst || dst->type != qp->type || dst->state < QRDMA_QPS_RTR ||
        dst->state > QRDMA_QPS_SQE) {
        if (qp->type == QRDMA_QPT_RC) {
            /* No responder answers: try again after the ACK timeout. */
            if (qrdma_retry_later(qp)) {
                qrdma_wqe_put_back(core, qp);
                return QRDMA_EXEC_STOP;
            }
            status = QRDMA_WC_RETRY_EXC_ERR;
        }
        goto complete;
    }
    if (!dst->comm_est) {
        dst->comm_est = true;
        if (dst->state == QRDMA_QPS_RTR) {
            qrdma_event(dc, QRDMA_EV_COMM_EST, dst->qpn);
        }
    }

    if (wqe.opcode == QRDMA_WR_ATOMIC_CMP_AND_SWP ||
        wqe.opcode == QRDMA_WR_ATOMIC_FETCH_AND_ADD) {
        /* The original value goes to the first SGE, whole. */
        if (!it.n || it.span[0].len < 8) {
            status = QRDMA_WC_LOC_LEN_ERR;
            goto complete;
        }
        it.n = 1;
        it.span[0].len = 8;
    }
    rx = qrdma_respond(core, qp, &wqe, &it, len, dc, dst, av);
    if (wqe.opcode == QRDMA_WR_ATOMIC_CMP_AND_SWP ||
        wqe.opcode == QRDMA_WR_ATOMIC_FETCH_AND_ADD) {
        len = 8;
    }

    if (rx == QRDMA_RX_RNR && qrdma_rnr_later(qp, dst)) {
        /* Not done: the WQE runs again when the timer fires. */
        qp->sq_ci--;
        return QRDMA_EXEC_STOP;
    }
    status = qrdma_rx_outcome(qp, dc, dst, rx);

complete:
    qp->rnr_left = qp->attr.rnr_retry;
    qp->retry_left = qp->attr.retry_cnt;
    qp->retry_due = false;
    if (signaled || status) {
        qrdma_send_cqe(core, qp, wqe.wr_id, qrdma_wc_opcode(wqe.opcode),
                       status, (wqe.opcode == QRDMA_WR_RDMA_READ ||
                                wqe.opcode == QRDMA_WR_ATOMIC_CMP_AND_SWP ||
                                wqe.opcode == QRDMA_WR_ATOMIC_FETCH_AND_ADD) ?
                       len : 0);
    }
    if (status) {
        /* S31: RC errors take the QP to ERR, UC and UD only the SQ. */
        qrdma_qp_to_err(core, qp, qp->type != QRDMA_QPT_RC);
        return QRDMA_EXEC_STOP;
    }
    return QRDMA_EXEC_NEXT;
}

/*
 * Run up to budget WQEs of qp, moving at most bytes; what is left waits
 * for the bottom half.
 */
static void qrdma_process_sq(QrdmaCore *core, QrdmaQp *qp, uint32_t budget,
                             uint64_t bytes)
{
    while (qp->sq_ci != qp->sq_pi && budget--) {
        QrdmaExec ret;

        if (qp->state == QRDMA_QPS_ERR || qp->state == QRDMA_QPS_SQE) {
            qrdma_flush_sq(core, qp);
            return;
        }
        if (qp->state != QRDMA_QPS_RTS || timer_pending(qp->timer) ||
            qp->retry_wait) {
            return;
        }
        ret = qrdma_exec_send(core, qp, &bytes);
        if (ret == QRDMA_EXEC_STOP) {
            return;
        }
        if (ret == QRDMA_EXEC_DEFER) {
            break;
        }
    }
    if (qp->sq_ci != qp->sq_pi && qp->state == QRDMA_QPS_RTS &&
        !qp->queued) {
        /* More than its turn's worth: come back later, others go first. */
        qp->queued = true;
        QSIMPLEQ_INSERT_TAIL(&core->work, qp, next);
        qemu_bh_schedule(core->dp_bh);
    }
}

static void qrdma_dp_run(void *opaque)
{
    QrdmaCore *core = opaque;
    QrdmaQp *qp, *last = QSIMPLEQ_LAST(&core->work, QrdmaQp, next);
    bool more = true;

    /*
     * One turn for each QP queued now; those queued again meanwhile wait
     * for the next run, so the main loop gets its turn in between.
     */
    while (more && (qp = QSIMPLEQ_FIRST(&core->work))) {
        more = qp != last;
        QSIMPLEQ_REMOVE_HEAD(&core->work, next);
        qp->queued = false;
        qrdma_process_sq(core, qp, 1u << qp->sq_log2, UINT64_MAX);
        if (qp->state == QRDMA_QPS_ERR) {
            qrdma_flush_rq(core, qp);
        }
    }
    if (!QSIMPLEQ_EMPTY(&core->work)) {
        qemu_bh_schedule(core->dp_bh);
    }
}

/*
 * Work posted before a command runs before it: a driver that rang a
 * doorbell and then sends a command sees the command find that work done.
 */
void qrdma_dp_drain(QrdmaCore *core)
{
    if (!QSIMPLEQ_EMPTY(&core->work)) {
        qrdma_dp_run(core);
    }
}

static void qrdma_qp_kick(QrdmaCore *core, QrdmaQp *qp)
{
    if (!qp->queued) {
        qp->queued = true;
        QSIMPLEQ_INSERT_TAIL(&core->work, qp, next);
    }
    qemu_bh_schedule(core->dp_bh);
}

/*
 * A send doorbell runs a few WQEs at once, in the doorbell write, as a
 * NIC starts on a doorbell without waiting: a bottom half costs a trip
 * through the main loop, which was most of a small message's latency.
 * Only when nothing is queued, so no QP overtakes work queued before it;
 * the rest of a long post list goes to the bottom half, which shares the
 * main loop with the rest of QEMU.  The vCPU that wrote the doorbell
 * waits for all of it, so it is bounded by bytes as well as by WQEs: a
 * WQE of a large message goes to the bottom half whole.
 */
#define QRDMA_DB_INLINE_WQES 8
#define QRDMA_DB_INLINE_BYTES (64 * KiB)

static void qrdma_qp_sq_doorbell(QrdmaCore *core, QrdmaQp *qp)
{
    if (qp->queued || !QSIMPLEQ_EMPTY(&core->work) ||
        qp->state != QRDMA_QPS_RTS) {
        qrdma_qp_kick(core, qp);
        return;
    }
    qrdma_process_sq(core, qp, QRDMA_DB_INLINE_WQES, QRDMA_DB_INLINE_BYTES);
}

/* The QP's timer: an RNR wait or a retry wait is over. */
static void qrdma_qp_timer_expired(void *opaque)
{
    QrdmaQp *qp = opaque;

    if (qp->retry_wait) {
        qp->retry_wait = false;
        qp->retry_due = true;
    }
    qrdma_qp_kick(qp->core, qp);
}

/* Doorbells */

void qrdma_dp_db_write(QrdmaCore *core, hwaddr addr, uint64_t val,
                       unsigned size)
{
    uint32_t page = addr / QRDMA_DB_PAGE_SIZE;
    hwaddr off = addr % QRDMA_DB_PAGE_SIZE;
    uint32_t handle = val, index = val >> 32;
    uint32_t uctx = QRDMA_UCTX_KERNEL;
    const char *why = NULL;
    int idx;

    if (!(core->dev_status & QRDMA_DEV_STATUS_READY)) {
        why = "device not ready";
    } else if (size != 8 || !QEMU_IS_ALIGNED(off, 8) ||
               off > QRDMA_DB_CQ_ARM) {
        why = "not a doorbell";
    } else if (page) {
        idx = page - 1;
        if (idx >= core->uctx_table.max || !core->uctx_table.busy[idx]) {
            why = "page of no user context";
        } else {
            uctx = qrdma_table_handle(&core->uctx_table, idx);
        }
    }
    if (why) {
        goto bad;
    }

    if (off == QRDMA_DB_SQ || off == QRDMA_DB_RQ) {
        QrdmaQp *qp;
        bool sq = off == QRDMA_DB_SQ;
        uint32_t ci, log2;

        idx = qrdma_table_lookup(&core->qp_table, handle);
        if (idx < 0 || core->qp[idx].uctx != uctx) {
            why = "no such QP in this context";
            goto bad;
        }
        qp = &core->qp[idx];
        if (!sq && qp->srq) {
            why = "RQ doorbell of a QP on an SRQ";
            goto bad;
        }
        ci = sq ? qp->sq_ci : qp->rq_ci;
        log2 = sq ? qp->sq_log2 : qp->rq_log2;
        if (index - ci > (1u << log2)) {
            why = "producer index beyond the ring";
            goto bad;
        }
        trace_qrdma_db(sq ? "SQ" : "RQ", handle, index);
        if (sq) {
            qp->sq_pi = index;
        } else {
            qp->rq_pi = index;
        }
        if (sq) {
            qrdma_qp_sq_doorbell(core, qp);
        } else if (qp->state == QRDMA_QPS_ERR) {
            /* S35: WRs posted in ERR complete at once, flushed. */
            qrdma_qp_kick(core, qp);
        }
        return;
    }
    if (off == QRDMA_DB_SRQ) {
        QrdmaSrq *srq;

        idx = qrdma_table_lookup(&core->srq_table, handle);
        if (idx < 0 || core->srq[idx].uctx != uctx) {
            why = "no such SRQ in this context";
            goto bad;
        }
        srq = &core->srq[idx];
        if (index - srq->ci > (1u << srq->log2)) {
            why = "producer index beyond the ring";
            goto bad;
        }
        srq->pi = index;
        return;
    }

    idx = qrdma_table_lookup(&core->cq_table, handle);
    if (idx < 0 || core->cq[idx].uctx != uctx) {
        why = "no such CQ in this context";
        goto bad;
    }
    if (index & ~(QRDMA_DB_CQ_ARM_NEXT | QRDMA_DB_CQ_ARM_SOLICITED)) {
        why = "unknown arm flags";
        goto bad;
    }
    core->cq[idx].armed |= index;
    return;

bad:
    trace_qrdma_err_db(addr, val, why);
    qrdma_guest_error(core, "doorbell 0x%" PRIx64 " at 0x%" HWADDR_PRIx
                      ": %s, ignored", val, addr, why);
}

/* QP lifecycle hooks */

void qrdma_dp_qp_created(QrdmaCore *core, QrdmaQp *qp)
{
    qp->core = core;
    qp->timer = timer_new_ns(QEMU_CLOCK_VIRTUAL, qrdma_qp_timer_expired, qp);
}

static void qrdma_qp_unqueue(QrdmaCore *core, QrdmaQp *qp)
{
    if (qp->queued) {
        QSIMPLEQ_REMOVE(&core->work, qp, QrdmaQp, next);
        qp->queued = false;
    }
    if (qp->timer) {
        timer_del(qp->timer);
    }
    qp->retry_wait = false;
    qp->retry_due = false;
}

void qrdma_dp_qp_modified(QrdmaCore *core, QrdmaQp *qp, uint8_t from)
{
    switch (qp->state) {
    case QRDMA_QPS_RESET:
        /* S36: outstanding WRs are dropped, a flush stops. */
        qrdma_qp_unqueue(core, qp);
        qp->sq_pi = qp->sq_ci = qp->rq_pi = qp->rq_ci = 0;
        qp->comm_est = false;
        qp->fatal = false;
        break;
    case QRDMA_QPS_ERR:
        if (from == QRDMA_QPS_ERR) {
            break;
        }
        /* S30: flush both queues in posting order. */
        qrdma_qp_unqueue(core, qp);
        qrdma_flush_sq(core, qp);
        qrdma_flush_rq(core, qp);
        /* S33: nothing taken from the SRQ is outstanding, so at once. */
        if (qp->srq) {
            qrdma_event(core, QRDMA_EV_QP_LAST_WQE_REACHED, qp->qpn);
        }
        break;
    case QRDMA_QPS_SQE:
        qrdma_qp_unqueue(core, qp);
        qrdma_flush_sq(core, qp);
        break;
    case QRDMA_QPS_SQD:
        if (from == QRDMA_QPS_RTS && qp->attr.en_sqd_async_notify) {
            /* WQEs run to completion at once, so the SQ is drained. */
            qrdma_event(core, QRDMA_EV_SQ_DRAINED, qp->qpn);
        }
        break;
    case QRDMA_QPS_RTS:
        qp->rnr_left = qp->attr.rnr_retry;
        qp->retry_left = qp->attr.retry_cnt;
        if (qp->sq_pi != qp->sq_ci) {
            qrdma_qp_kick(core, qp);
        }
        break;
    }
}

void qrdma_dp_qp_destroyed(QrdmaCore *core, QrdmaQp *qp)
{
    /* S11: nothing of it runs after this. */
    qrdma_qp_unqueue(core, qp);
    timer_free(qp->timer);
    qp->timer = NULL;
}

/* Device */

void qrdma_dp_realize(QrdmaCore *core)
{
    DeviceState *dev = DEVICE(core->owner);

    QSIMPLEQ_INIT(&core->work);
    core->dp_bh = qemu_bh_new_guarded(qrdma_dp_run, core,
                                      &dev->mem_reentrancy_guard);
    qrdma_fabric_join(core->fabric_link ? core->fabric_link :
                      qrdma_fabric_default(), core);
    core->port_up = qrdma_eth_link_up(core);
}

void qrdma_dp_unrealize(QrdmaCore *core)
{
    qrdma_fabric_leave(core);
    qemu_bh_delete(core->dp_bh);
}

void qrdma_dp_reset(QrdmaCore *core)
{
    uint32_t i;

    qemu_bh_cancel(core->dp_bh);
    QSIMPLEQ_INIT(&core->work);
    for (i = 0; i < core->qp_table.max; i++) {
        QrdmaQp *qp = &core->qp[i];

        qp->queued = false;
        if (qp->timer) {
            timer_free(qp->timer);
            qp->timer = NULL;
        }
    }
    memset(core->eq, 0, sizeof(core->eq));
    core->port_up = qrdma_eth_link_up(core);
}
