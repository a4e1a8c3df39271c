// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The command queue engine.
 *
 * The device executes the commands of one ring in order and writes the
 * completion of the command in slot i into slot i of the completion ring,
 * with a phase bit that flips on every pass.  Each command in flight owns a
 * context (its waiter, the copy of its completion and its answer buffer);
 * contexts are not tied to ring slots, so a waiter may look at its answer
 * after the ring has moved on.  The semaphore bounds the commands in flight
 * to the contexts, which are as many as the ring has entries, so the ring
 * can never overflow.
 *
 * Completions are reaped by the MSI-X vector 0 handler and, in case the
 * interrupt does not come, by the waiters themselves.
 */

#include <linux/device.h>
#include <linux/dma-mapping.h>
#include <linux/io.h>
#include <linux/jiffies.h>
#include <linux/slab.h>

#include "qrdma_cmdq.h"

/* How often a waiter looks at the completion ring itself. */
#define QRDMA_CMDQ_POLL_MS	5

static const int qrdma_status_errno[] = {
	[QRDMA_STATUS_OK] = 0,
	[QRDMA_STATUS_BAD_OPCODE] = -EOPNOTSUPP,
	[QRDMA_STATUS_BAD_PARAM] = -EINVAL,
	[QRDMA_STATUS_BAD_HANDLE] = -EINVAL,
	[QRDMA_STATUS_NO_RESOURCES] = -ENOMEM,
	[QRDMA_STATUS_BUSY] = -EBUSY,
	[QRDMA_STATUS_BAD_STATE] = -EINVAL,
	[QRDMA_STATUS_BAD_ADDR] = -EFAULT,
	[QRDMA_STATUS_NOT_OWNER] = -EINVAL,
	[QRDMA_STATUS_NOT_SUPPORTED] = -EOPNOTSUPP,
};

int qrdma_status_to_errno(u8 status)
{
	/* The device defines no other status; anything else is its bug. */
	if (status >= ARRAY_SIZE(qrdma_status_errno))
		return -EIO;
	return qrdma_status_errno[status];
}

static void qrdma_cmdq_free_rings(struct qrdma_cmdq *cmdq)
{
	if (cmdq->resp)
		dma_free_coherent(cmdq->dmadev,
				  cmdq->depth * QRDMA_CMDQ_RESP_SIZE,
				  cmdq->resp, cmdq->resp_dma);
	if (cmdq->cmpls)
		dma_free_coherent(cmdq->dmadev,
				  cmdq->depth * sizeof(*cmdq->cmpls),
				  cmdq->cmpls, cmdq->cmpls_dma);
	if (cmdq->cmds)
		dma_free_coherent(cmdq->dmadev,
				  cmdq->depth * sizeof(*cmdq->cmds),
				  cmdq->cmds, cmdq->cmds_dma);
	kfree(cmdq->slot_ctx);
	kfree(cmdq->ctx);
}

/**
 * qrdma_cmdq_init - allocate the command queue and enable the device
 * @cmdq: the queue, zeroed
 * @dmadev: the device DMA is mapped for
 * @regs: BAR0
 * @timeout_ms: how long a command may take before the device is given up
 *
 * The device must be disabled (just reset).  On success it is enabled and
 * accepts commands.
 */
int qrdma_cmdq_init(struct qrdma_cmdq *cmdq, struct device *dmadev,
		    void __iomem *regs, unsigned int timeout_ms)
{
	u32 status, i;

	cmdq->dmadev = dmadev;
	cmdq->regs = regs;
	cmdq->log2 = QRDMA_CMDQ_LOG2;
	cmdq->depth = 1U << QRDMA_CMDQ_LOG2;
	cmdq->timeout_ms = timeout_ms;
	spin_lock_init(&cmdq->lock);
	sema_init(&cmdq->avail, cmdq->depth);

	cmdq->ctx = kcalloc(cmdq->depth, sizeof(*cmdq->ctx), GFP_KERNEL);
	cmdq->slot_ctx = kcalloc(cmdq->depth, sizeof(*cmdq->slot_ctx),
				 GFP_KERNEL);
	/* dma_alloc_coherent() zeroes: no completion carries phase 1 yet. */
	cmdq->cmds = dma_alloc_coherent(dmadev,
					cmdq->depth * sizeof(*cmdq->cmds),
					&cmdq->cmds_dma, GFP_KERNEL);
	cmdq->cmpls = dma_alloc_coherent(dmadev,
					 cmdq->depth * sizeof(*cmdq->cmpls),
					 &cmdq->cmpls_dma, GFP_KERNEL);
	cmdq->resp = dma_alloc_coherent(dmadev,
					cmdq->depth * QRDMA_CMDQ_RESP_SIZE,
					&cmdq->resp_dma, GFP_KERNEL);
	if (!cmdq->ctx || !cmdq->slot_ctx || !cmdq->cmds || !cmdq->cmpls ||
	    !cmdq->resp) {
		qrdma_cmdq_free_rings(cmdq);
		return -ENOMEM;
	}

	for (i = 0; i < cmdq->depth; i++) {
		struct qrdma_cmdq_ctx *ctx = &cmdq->ctx[i];

		init_completion(&ctx->done);
		ctx->resp = cmdq->resp + i * QRDMA_CMDQ_RESP_SIZE;
		ctx->resp_dma = cmdq->resp_dma + i * QRDMA_CMDQ_RESP_SIZE;
		ctx->next_free = i + 1;
	}
	cmdq->free_head = 0;

	writeq(cmdq->cmds_dma, regs + QRDMA_REG_CMDQ_BASE);
	writel(cmdq->log2, regs + QRDMA_REG_CMDQ_LOG2);
	writeq(cmdq->cmpls_dma, regs + QRDMA_REG_CMPQ_BASE);
	writel(QRDMA_DEV_CTRL_ENABLE, regs + QRDMA_REG_DEV_CTRL);

	status = readl(regs + QRDMA_REG_DEV_STATUS);
	if (!(status & QRDMA_DEV_STATUS_READY)) {
		dev_err(dmadev,
			"device refused to enable: status %#x config error %u\n",
			status, readl(regs + QRDMA_REG_CONFIG_ERR));
		qrdma_cmdq_free_rings(cmdq);
		return -EIO;
	}

	cmdq->running = true;
	return 0;
}

/**
 * qrdma_cmdq_destroy - free the queue
 * @cmdq: the queue
 *
 * The caller has reset the device, so it no longer reads or writes the
 * rings, and no command is in flight.
 */
void qrdma_cmdq_destroy(struct qrdma_cmdq *cmdq)
{
	qrdma_cmdq_free_rings(cmdq);
}

/* Give a context back; under the lock, so any context may. */
static void qrdma_cmdq_put_ctx_locked(struct qrdma_cmdq *cmdq,
				      struct qrdma_cmdq_ctx *ctx)
{
	ctx->next_free = cmdq->free_head;
	cmdq->free_head = ctx - cmdq->ctx;
	up(&cmdq->avail);
}

static bool qrdma_cmdq_disable_locked(struct qrdma_cmdq *cmdq)
{
	u32 mask = cmdq->depth - 1;

	if (!cmdq->running)
		return false;
	/*
	 * Reset before anyone can see the queue stopped: a destroy that
	 * gets -ENODEV frees memory the device used, and after the reset
	 * it uses none.  The read flushes the posted write.
	 */
	writel(QRDMA_DEV_CTRL_RESET, cmdq->regs + QRDMA_REG_DEV_CTRL);
	readl(cmdq->regs + QRDMA_REG_DEV_STATUS);
	cmdq->running = false;

	/* The reset dropped the commands in flight: fail them now. */
	for (; cmdq->ci != cmdq->pi; cmdq->ci++) {
		u32 slot = cmdq->ci & mask;
		struct qrdma_cmdq_ctx *ctx = cmdq->slot_ctx[slot];

		cmdq->slot_ctx[slot] = NULL;
		ctx->aborted = true;
		complete(&ctx->done);
	}
	return true;
}

/**
 * qrdma_cmdq_disable - give the device up
 * @cmdq: the queue
 *
 * Resets the device, which stops all its DMA and destroys every resource,
 * fails the commands in flight with -ENODEV and refuses further ones.
 * Any context.  Returns true if this call did it, false if the queue was
 * already disabled.
 */
bool qrdma_cmdq_disable(struct qrdma_cmdq *cmdq)
{
	unsigned long flags;
	bool disabled;

	spin_lock_irqsave(&cmdq->lock, flags);
	disabled = qrdma_cmdq_disable_locked(cmdq);
	spin_unlock_irqrestore(&cmdq->lock, flags);
	return disabled;
}

bool qrdma_cmdq_running(struct qrdma_cmdq *cmdq)
{
	return READ_ONCE(cmdq->running);
}

/**
 * qrdma_cmdq_process - reap the completions the device has written
 * @cmdq: the queue
 *
 * Called from the interrupt handler and from waiters; any context.
 */
void qrdma_cmdq_process(struct qrdma_cmdq *cmdq)
{
	u32 mask = cmdq->depth - 1;
	unsigned long flags;

	spin_lock_irqsave(&cmdq->lock, flags);
	while (cmdq->ci != cmdq->pi) {
		u32 slot = cmdq->ci & mask;
		struct qrdma_cmpl *cmpl = &cmdq->cmpls[slot];
		u8 phase = (cmdq->ci >> cmdq->log2) & 1 ? 0 : QRDMA_CMPL_F_PHASE;
		struct qrdma_cmdq_ctx *ctx;

		if ((READ_ONCE(cmpl->flags) & QRDMA_CMPL_F_PHASE) != phase)
			break;
		/*
		 * The device writes the phase bit after the rest of the
		 * entry; read the entry only after seeing the new phase.
		 */
		dma_rmb();

		ctx = cmdq->slot_ctx[slot];
		cmdq->slot_ctx[slot] = NULL;
		cmdq->ci++;
		memcpy(&ctx->cmpl, cmpl, sizeof(ctx->cmpl));
		complete(&ctx->done);
	}
	spin_unlock_irqrestore(&cmdq->lock, flags);
}

/* Post @cmd; the caller holds one count of the semaphore. */
static struct qrdma_cmdq_ctx *qrdma_cmdq_submit(struct qrdma_cmdq *cmdq,
						struct qrdma_cmd *cmd,
						void *resp, u32 resp_len)
{
	u32 mask = cmdq->depth - 1;
	struct qrdma_cmdq_ctx *ctx;
	unsigned long flags;
	u32 slot;

	spin_lock_irqsave(&cmdq->lock, flags);
	if (!cmdq->running) {
		spin_unlock_irqrestore(&cmdq->lock, flags);
		return NULL;
	}
	/* The semaphore guarantees a free context. */
	ctx = &cmdq->ctx[cmdq->free_head];
	cmdq->free_head = ctx->next_free;

	ctx->cmd_id = cmdq->next_cmd_id++;
	ctx->aborted = false;
	reinit_completion(&ctx->done);
	cmd->hdr.cmd_id = cpu_to_le16(ctx->cmd_id);
	cmd->hdr.flags = 0;
	if (resp) {
		memset(ctx->resp, 0, resp_len);
		cmd->query.resp_addr = cpu_to_le64(ctx->resp_dma);
		cmd->query.resp_len = cpu_to_le32(resp_len);
	}

	slot = cmdq->pi & mask;
	memcpy(&cmdq->cmds[slot], cmd, sizeof(*cmd));
	cmdq->slot_ctx[slot] = ctx;
	cmdq->pi++;
	/*
	 * writel() is ordered after the command's stores to coherent memory,
	 * so the device reads the whole command once it sees the index.
	 */
	writel(cmdq->pi, cmdq->regs + QRDMA_REG_CMDQ_PI);
	spin_unlock_irqrestore(&cmdq->lock, flags);
	atomic64_inc(&cmdq->stats.submitted);
	return ctx;
}

/*
 * Take the results of a completed command and free its context.  A
 * command the reset dropped fails with @aborted_err.
 */
static int qrdma_cmdq_finish(struct qrdma_cmdq *cmdq,
			     struct qrdma_cmdq_ctx *ctx, u8 opcode,
			     struct qrdma_cmpl *cmpl, void *resp, u32 resp_len,
			     int aborted_err)
{
	unsigned long flags;
	bool aborted;
	u16 cmd_id;

	*cmpl = ctx->cmpl;
	if (resp)
		memcpy(resp, ctx->resp, resp_len);
	cmd_id = ctx->cmd_id;

	spin_lock_irqsave(&cmdq->lock, flags);
	aborted = ctx->aborted;
	qrdma_cmdq_put_ctx_locked(cmdq, ctx);
	spin_unlock_irqrestore(&cmdq->lock, flags);
	if (aborted)
		return aborted_err;
	atomic64_inc(&cmdq->stats.completed);

	if (le16_to_cpu(cmpl->cmd_id) != cmd_id) {
		dev_err_ratelimited(cmdq->dmadev,
				    "command %#x: completion for id %u, expected %u\n",
				    opcode, le16_to_cpu(cmpl->cmd_id), cmd_id);
		atomic64_inc(&cmdq->stats.failed);
		return -EIO;
	}
	if (cmpl->status != QRDMA_STATUS_OK) {
		atomic64_inc(&cmdq->stats.failed);
		return qrdma_status_to_errno(cmpl->status);
	}
	return 0;
}

/*
 * The device stopped executing commands: it is reset, so that it stops
 * all DMA (destroys now succeed without it and free the memory it used),
 * and every waiter is woken with an error.  The owner hears of it
 * through ->dead().
 */
static void qrdma_cmdq_timeout(struct qrdma_cmdq *cmdq,
			       struct qrdma_cmdq_ctx *ctx, u8 opcode)
{
	unsigned long flags;
	u32 status, config_err;

	atomic64_inc(&cmdq->stats.timeouts);
	/* Read before the reset clears them. */
	status = readl(cmdq->regs + QRDMA_REG_DEV_STATUS);
	config_err = readl(cmdq->regs + QRDMA_REG_CONFIG_ERR);

	spin_lock_irqsave(&cmdq->lock, flags);
	if (qrdma_cmdq_disable_locked(cmdq)) {
		dev_err(cmdq->dmadev,
			"command %#x (id %u) got no completion in %u ms (status %#x, config error %u); device reset\n",
			opcode, ctx->cmd_id, cmdq->timeout_ms, status,
			config_err);
		if (cmdq->dead)
			cmdq->dead(cmdq);
	}
	spin_unlock_irqrestore(&cmdq->lock, flags);
}

/**
 * qrdma_cmdq_exec - execute one command and wait for its completion
 * @cmdq: the queue
 * @cmd: the command, opcode, owner and payload filled in; the engine sets
 *	cmd_id and, when @resp is given, the answer buffer of the struct
 *	qrdma_cmd_query payload
 * @cmpl: where the completion goes
 * @resp: where the answer goes, or NULL for a command without one
 * @resp_len: the answer's size
 *
 * Sleeps.  Returns 0 when the command completed with status OK (and
 * @cmpl holds the completion), the status' errno otherwise, -ETIMEDOUT if
 * the device did not answer and -ENODEV once it has stopped answering.
 */
int qrdma_cmdq_exec(struct qrdma_cmdq *cmdq, struct qrdma_cmd *cmd,
		    struct qrdma_cmpl *cmpl, void *resp, u32 resp_len)
{
	unsigned long poll = max(msecs_to_jiffies(QRDMA_CMDQ_POLL_MS), 1UL);
	unsigned long deadline;
	struct qrdma_cmdq_ctx *ctx;
	u8 opcode = cmd->hdr.opcode;

	if (WARN_ON_ONCE(resp_len > QRDMA_CMDQ_RESP_SIZE))
		return -EINVAL;

	might_sleep();
	down(&cmdq->avail);
	ctx = qrdma_cmdq_submit(cmdq, cmd, resp, resp_len);
	if (!ctx) {
		up(&cmdq->avail);
		return -ENODEV;
	}

	deadline = jiffies + msecs_to_jiffies(cmdq->timeout_ms);
	for (;;) {
		if (wait_for_completion_timeout(&ctx->done, poll))
			break;
		/* The interrupt may be masked or lost: look ourselves. */
		qrdma_cmdq_process(cmdq);
		if (completion_done(&ctx->done))
			break;
		if (time_after(jiffies, deadline)) {
			/* Completes the context, by the device or the reset. */
			qrdma_cmdq_timeout(cmdq, ctx, opcode);
			wait_for_completion(&ctx->done);
			return qrdma_cmdq_finish(cmdq, ctx, opcode, cmpl, resp,
						 resp_len, -ETIMEDOUT);
		}
	}
	return qrdma_cmdq_finish(cmdq, ctx, opcode, cmpl, resp, resp_len,
				 -ENODEV);
}
