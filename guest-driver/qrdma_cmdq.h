/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The command queue engine: submits commands to the device's command ring
 * and waits for their completions.  It knows the ring protocol, not the
 * commands; qrdma_cmd.c builds those.
 */
#ifndef _QRDMA_CMDQ_H_
#define _QRDMA_CMDQ_H_

#include <linux/completion.h>
#include <linux/semaphore.h>
#include <linux/spinlock.h>
#include <linux/types.h>

#include "qrdma-hw.h"

/* Ring entries: enough for every verb in flight on a small guest. */
#define QRDMA_CMDQ_LOG2		6
/* Answer buffer of one command: the largest answer, rounded up. */
#define QRDMA_CMDQ_RESP_SIZE	256

struct device;

/* One command in flight: who waits for it and what came back. */
struct qrdma_cmdq_ctx {
	struct completion done;
	struct qrdma_cmpl cmpl;		/* copied out of the completion ring */
	void *resp;			/* this context's answer buffer */
	dma_addr_t resp_dma;
	u16 cmd_id;
	u16 next_free;
	/* Under the queue's lock: completed by the reset, not the device */
	bool aborted;
};

struct qrdma_cmdq_stats {
	atomic64_t submitted;
	atomic64_t completed;
	atomic64_t failed;		/* completed with a status other than OK */
	atomic64_t timeouts;
};

struct qrdma_cmdq {
	struct device *dmadev;
	void __iomem *regs;

	struct qrdma_cmd *cmds;
	dma_addr_t cmds_dma;
	struct qrdma_cmpl *cmpls;
	dma_addr_t cmpls_dma;
	void *resp;
	dma_addr_t resp_dma;
	u32 depth;
	u32 log2;

	/* Protects everything below, the rings and the contexts. */
	spinlock_t lock;
	u32 pi;				/* commands posted, free running */
	u32 ci;				/* completions consumed, free running */
	u16 next_cmd_id;
	u16 free_head;			/* first free context, or depth */
	struct qrdma_cmdq_ctx *ctx;
	/* The context waiting on each ring slot, by our own slot index. */
	struct qrdma_cmdq_ctx **slot_ctx;
	/*
	 * Cleared, with the device reset, when the driver gives the
	 * device up: no command is sent afterwards.
	 */
	bool running;
	/*
	 * Called once when a command timed out and the device was reset
	 * for it; under the lock, in any context.
	 */
	void (*dead)(struct qrdma_cmdq *cmdq);

	/* Bounds the commands in flight to the contexts (= ring entries). */
	struct semaphore avail;
	unsigned int timeout_ms;
	struct qrdma_cmdq_stats stats;
};

int qrdma_cmdq_init(struct qrdma_cmdq *cmdq, struct device *dmadev,
		    void __iomem *regs, unsigned int timeout_ms);
void qrdma_cmdq_destroy(struct qrdma_cmdq *cmdq);
int qrdma_cmdq_exec(struct qrdma_cmdq *cmdq, struct qrdma_cmd *cmd,
		    struct qrdma_cmpl *cmpl, void *resp, u32 resp_len);
void qrdma_cmdq_process(struct qrdma_cmdq *cmdq);
bool qrdma_cmdq_disable(struct qrdma_cmdq *cmdq);
bool qrdma_cmdq_running(struct qrdma_cmdq *cmdq);
int qrdma_status_to_errno(u8 status);

#endif /* _QRDMA_CMDQ_H_ */
