/* SPDX-License-Identifier: GPL-2.0-or-later OR BSD-2-Clause */
/*
 * qrdma hardware interface: the one definition of what the device exposes.
 *
 * The QEMU device model, its qtests, the Linux driver and the rdma-core
 * provider all include this file; docs/qrdma-spec.rst describes it in prose.
 * Every multi-byte field is little-endian.  Nothing here may depend on the
 * environment it is compiled in beyond fixed-width integer types.
 */
#ifndef QRDMA_HW_H
#define QRDMA_HW_H

#ifdef __KERNEL__
#include <linux/types.h>
#else
#include <stdint.h>
#endif

/* PCI identity: Red Hat's range reserved for experimental devices. */
#define QRDMA_PCI_VENDOR_ID             0x1af4
#define QRDMA_PCI_DEVICE_ID             0x10f0
#define QRDMA_PCI_REVISION              0x01
/* Ethernet controller: the port is RoCEv2, as on other RoCE NICs. */
#define QRDMA_PCI_CLASS                 0x0200

/* Interface version in QRDMA_REG_VERSION: incompatible changes bump major. */
#define QRDMA_VERSION_MAJOR             1
#define QRDMA_VERSION_MINOR             0
#define QRDMA_VERSION                   ((QRDMA_VERSION_MAJOR << 16) | \
                                         QRDMA_VERSION_MINOR)
#define QRDMA_VERSION_GET_MAJOR(v)      (((v) >> 16) & 0xffff)
#define QRDMA_VERSION_GET_MINOR(v)      ((v) & 0xffff)

/* BARs */
#define QRDMA_REG_BAR                   0
#define QRDMA_REG_BAR_SIZE              0x1000
#define QRDMA_MSIX_BAR                  4

/*
 * BAR0 registers.  32-bit registers take aligned 32-bit accesses only; a
 * 64-bit register also takes two aligned 32-bit accesses.  Any other access,
 * and any access to an offset not listed here, is a guest error: reads
 * return 0 and writes are ignored.
 */
#define QRDMA_REG_VERSION               0x000   /* RO 32 */
#define QRDMA_REG_CAPS                  0x008   /* RO 64 */
#define QRDMA_REG_DEV_CTRL              0x010   /* RW 32 */
#define QRDMA_REG_DEV_STATUS            0x014   /* RO 32 */

/* QRDMA_REG_CAPS.  Bits not defined here read as zero; drivers ignore them. */
#define QRDMA_CAPS_MSIX_VECTORS_MASK    0xffull /* MSI-X vectors provided */

/* QRDMA_REG_DEV_CTRL */
#define QRDMA_DEV_CTRL_ENABLE           (1u << 0)
/* Write 1: reset the function to its power-on state; reads back as 0. */
#define QRDMA_DEV_CTRL_RESET            (1u << 1)
#define QRDMA_DEV_CTRL_VALID_MASK       (QRDMA_DEV_CTRL_ENABLE | \
                                         QRDMA_DEV_CTRL_RESET)

/* QRDMA_REG_DEV_STATUS */
#define QRDMA_DEV_STATUS_READY          (1u << 0)
#define QRDMA_DEV_STATUS_FATAL          (1u << 1)

#endif /* QRDMA_HW_H */
