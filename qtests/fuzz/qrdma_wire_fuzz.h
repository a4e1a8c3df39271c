/*
 * qrdma-wire: what the libFuzzer target needs of the fuzzer's binary
 *
 * Copyright (c) 2026 The qrdma developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef QRDMA_WIRE_FUZZ_H
#define QRDMA_WIRE_FUZZ_H

/*
 * libFuzzer's 8-bit coverage counters, the section the linker names:
 * an input's process copies them back to the fuzzer.
 */
extern uint8_t __start___sancov_cntrs[];
extern uint8_t __stop___sancov_cntrs[];

#endif /* QRDMA_WIRE_FUZZ_H */
