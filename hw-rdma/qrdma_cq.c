/*
 * QEMU qrdma: emulated RDMA (RoCEv2) NIC, completion queues: writing completions
 *
 * Copyright (c) 2026 The qrdma developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/atomic.h"
#include "qrdma.h"
#include "qrdma_cq.h"
#include "qrdma_err.h"
#include "trace.h"

QrdmaCq *qrdma_cq_of(QrdmaCore *core, uint32_t cqn)
{
    int idx = qrdma_table_lookup(&core->cq_table, cqn);

    return idx < 0 ? NULL : &core->cq[idx];
}

static bool qrdma_cq_full(QrdmaCore *core, QrdmaCq *cq)
{
    uint32_t size = 1u << cq->log2;
    uint32_t ci;

    /* Without a consumer index word the device cannot see overruns. */
    if (!cq->ci_addr || cq->pi - cq->ci_seen < size) {
        return false;
    }
    /* Only now read the consumer index the consumer keeps in RAM. */
    if (!qrdma_dma_read(core, cq->ci_addr, &ci, sizeof(ci))) {
        return true;
    }
    ci = le32_to_cpu(ci);
    if (cq->pi - ci <= size) {
        cq->ci_seen = ci;
    }
    return cq->pi - cq->ci_seen >= size;
}

bool qrdma_cq_push(QrdmaCore *core, uint32_t cqn,
                          struct qrdma_cqe *cqe, bool solicited)
{
    QrdmaCq *cq = qrdma_cq_of(core, cqn);
    uint64_t addr;
    uint8_t phase;

    if (!cq || cq->overrun) {
        return false;
    }
    if (qrdma_cq_full(core, cq)) {
        trace_qrdma_cq_overrun(cqn);
        cq->overrun = true;
        qrdma_event(core, QRDMA_EV_CQ_ERR, cqn);
        return false;
    }
    addr = qrdma_ring_addr(&cq->ring, cq->pi, cq->log2, QRDMA_CQE_SIZE);
    phase = !((cq->pi >> cq->log2) & 1);

    cqe->flags &= ~QRDMA_CQE_F_PHASE;
    cqe->flags |= phase ? 0 : QRDMA_CQE_F_PHASE;
    /*
     * The ring was RAM when the CQ was created; the guest may have changed
     * its memory map since.  A ring that is no longer RAM is an overrun
     * of a kind: the CQ takes nothing more.
     */
    if (!qrdma_dma_write(core, addr, cqe, sizeof(*cqe))) {
        QRDMA_GUEST_ERR(core, cq_ring_gone, "CQ 0x%" PRIx32 ": entry at 0x%"
                        PRIx64 " is no longer RAM", cqn, addr);
        cq->overrun = true;
        qrdma_event(core, QRDMA_EV_CQ_ERR, cqn);
        return false;
    }
    /* The consumer polls the phase bit: it goes in last. */
    smp_wmb();
    cqe->flags ^= QRDMA_CQE_F_PHASE;
    qrdma_dma_write(core, addr + offsetof(struct qrdma_cqe, flags),
                    &cqe->flags, 1);
    cq->pi++;

    if ((cq->armed & QRDMA_DB_CQ_ARM_NEXT) ||
        ((cq->armed & QRDMA_DB_CQ_ARM_SOLICITED) &&
         (solicited || cqe->status != QRDMA_WC_SUCCESS))) {
        cq->armed = 0;
        qrdma_eq_post(core, cq->eq, QRDMA_EV_COMPLETION, cqn);
    }
    return true;
}
