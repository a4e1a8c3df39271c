/*
 * QEMU qrdma: what differs between the QEMU versions the device builds in
 *
 * Copyright (c) 2026 The qrdma developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * One source of the device builds into QEMU 10.0 and 10.2
 * (scripts/build-qemu, QRDMA_QEMU).  Where an interface the device uses
 * changed between them and no code reads right for both, the difference
 * is bridged here, once, keyed on the version of the QEMU being built
 * (config-host.h, which qemu/osdep.h includes), each entry naming the
 * release and the change.  Where code can be written for both, it is
 * written so instead: the device includes "system/dma.h" and
 * "hw/pci/pci_device.h" for the memory API, which QEMU 10.1 moved from
 * "exec/memory.h" to "system/memory.h", rather than either of those.
 */

#ifndef HW_RDMA_QRDMA_QEMU_COMPAT_H
#define HW_RDMA_QRDMA_QEMU_COMPAT_H

#define QRDMA_QEMU_AT_LEAST(major, minor) \
    (QEMU_VERSION_MAJOR > (major) || \
     (QEMU_VERSION_MAJOR == (major) && QEMU_VERSION_MINOR >= (minor)))

/*
 * TypeInfo's class_init takes the class data as "const void *" from QEMU
 * 10.1 ("qom: Have class_init take a const data argument", in the QOM
 * constification of April 2025), "void *" before.  A function pointer of
 * the other type does not convert, so the parameter takes this type.
 */
#if QRDMA_QEMU_AT_LEAST(10, 1)
typedef const void QrdmaClassData;
#else
typedef void QrdmaClassData;
#endif

/*
 * The front end of a chardev is a CharFrontend in QEMU 10.2, a
 * CharBackend before ("chardev: rename CharBackend to CharFrontend").
 */
#if !QRDMA_QEMU_AT_LEAST(10, 2)
typedef CharBackend CharFrontend;
#endif

/*
 * Where a RAM block starts in its file: qemu_ram_get_fd_offset() in QEMU
 * 10.2, RAMBlock's field before, when RAMBlock was in "exec/ramblock.h".
 */
#if QRDMA_QEMU_AT_LEAST(10, 2)
#define qrdma_ram_fd_offset(rb) qemu_ram_get_fd_offset(rb)
#else
#include "exec/ramblock.h"
#define qrdma_ram_fd_offset(rb) ((rb)->fd_offset)
#endif

#endif
