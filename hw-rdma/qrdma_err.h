/*
 * QEMU qrdma: emulated RDMA (RoCEv2) NIC, reporting what the guest got wrong
 *
 * Copyright (c) 2026 The qrdma developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef HW_RDMA_QRDMA_ERR_H
#define HW_RDMA_QRDMA_ERR_H

#include "qemu/log.h"

/*
 * A guest error: its own trace event (trace, a qrdma_err_* event of
 * trace-events, taking the arguments after fmt), a LOG_GUEST_ERROR line
 * that starts with the event's name, and the device's guest-errors
 * counter.  As NVME_GUEST_ERR, one condition, one event, named in full at
 * the call, so a trace can be filtered for exactly it and a grep for the
 * event finds where it is raised.
 */
#define QRDMA_GUEST_ERR(core, trace, fmt, ...)                              \
    do {                                                                    \
        (core)->counters.guest_errors++;                                    \
        trace_##trace(__VA_ARGS__);                                         \
        qemu_log_mask(LOG_GUEST_ERROR, #trace ": " fmt "\n",               \
                      ## __VA_ARGS__);                                      \
    } while (0)

#endif /* HW_RDMA_QRDMA_ERR_H */
