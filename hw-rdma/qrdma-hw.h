/* SPDX-License-Identifier: GPL-2.0-or-later OR BSD-2-Clause */
/*
 * qrdma hardware interface: the one definition of what the device exposes.
 *
 * The QEMU device model, its qtests, the Linux driver and the rdma-core
 * provider all include this file; docs/specs/qrdma.rst describes it in prose.
 * Nothing here may depend on the environment it is compiled in beyond
 * fixed-width integer types and the byte-order types below.
 *
 * Every multi-byte field is little-endian, typed qrdma_le16, qrdma_le32,
 * qrdma_le64, or qrdma_be32, qrdma_be64 for the few that hold bytes in
 * network order.  In Linux and rdma-core these are the kernel's __le32 and
 * the like, which sparse sees as restricted types, so that it checks every
 * conversion.  In QEMU, whose files include qemu/osdep.h first, they are
 * the fixed-width integers they hold, which the device and the qtests
 * convert with le32_to_cpu() and the like; they cannot be __le32 there,
 * since on a Linux host osdep.h already has <linux/types.h> define that
 * name, as another type than uint64_t for the 64-bit ones.
 */
#ifndef QRDMA_HW_H
#define QRDMA_HW_H

#ifdef QEMU_OSDEP_H
typedef uint16_t qrdma_le16;
typedef uint32_t qrdma_le32;
typedef uint64_t qrdma_le64;
typedef uint32_t qrdma_be32;
typedef uint64_t qrdma_be64;
#else
#ifndef __KERNEL__
#include <stdint.h>
#endif
#include <linux/types.h>
typedef __le16 qrdma_le16;
typedef __le32 qrdma_le32;
typedef __le64 qrdma_le64;
typedef __be32 qrdma_be32;
typedef __be64 qrdma_be64;
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
/*
 * BAR2 holds one 4 KiB doorbell page per user context, so that a page can
 * be mapped into exactly one process.  Page 0 belongs to the kernel.
 */
#define QRDMA_DB_BAR                    2
#define QRDMA_DB_PAGE_SIZE              0x1000
#define QRDMA_MSIX_BAR                  4

/* The page size of every page list the device reads. */
#define QRDMA_PAGE_SHIFT                12
#define QRDMA_PAGE_SIZE                 (1u << QRDMA_PAGE_SHIFT)

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
#define QRDMA_REG_CONFIG_ERR            0x018   /* RO 32 */
/*
 * Command queue.  BASE, LOG2 and CMPQ_BASE are writable only while
 * DEV_CTRL.ENABLE is 0; CMDQ_PI only while DEV_STATUS.READY is 1.
 */
#define QRDMA_REG_CMDQ_BASE             0x020   /* RW 64 */
#define QRDMA_REG_CMDQ_LOG2             0x028   /* RW 32 */
#define QRDMA_REG_CMDQ_PI               0x02c   /* RW 32, the doorbell */
#define QRDMA_REG_CMDQ_CI               0x030   /* RO 32 */
#define QRDMA_REG_CMPQ_BASE             0x038   /* RW 64 */
/* Ethernet function */
#define QRDMA_REG_ETH_MAC_LO            0x100   /* RO 32: MAC bytes 0-3 */
#define QRDMA_REG_ETH_MAC_HI            0x104   /* RO 32: MAC bytes 4-5 */
#define QRDMA_REG_ETH_LINK              0x108   /* RO 32 */
#define QRDMA_REG_ETH_CTRL              0x10c   /* RW 32 */
#define QRDMA_REG_ETH_TX_BASE           0x110   /* RW 64 */
#define QRDMA_REG_ETH_TX_LOG2           0x118   /* RW 32 */
#define QRDMA_REG_ETH_TX_PI             0x11c   /* RW 32, the doorbell */
#define QRDMA_REG_ETH_TX_CI             0x120   /* RO 32 */
#define QRDMA_REG_ETH_RX_BASE           0x128   /* RW 64 */
#define QRDMA_REG_ETH_RX_LOG2           0x130   /* RW 32 */
#define QRDMA_REG_ETH_RX_PI             0x134   /* RW 32, the doorbell */
#define QRDMA_REG_ETH_RX_CI             0x138   /* RO 32 */
#define QRDMA_REG_ETH_IRQ_VECTOR        0x13c   /* RW 32 */
/*
 * Event queues: one per MSI-X vector, a bank of registers each at
 * QRDMA_REG_EQ(n).  EQ 0 takes the asynchronous events; a CQ sends its
 * completion events to the EQ it was created with (0 included).
 */
#define QRDMA_REG_EQ(n)                 (0x200 + (n) * 0x20)
#define QRDMA_REG_EQ_BASE               0x00    /* RW 64 */
#define QRDMA_REG_EQ_LOG2               0x08    /* RW 32 */
#define QRDMA_REG_EQ_CI                 0x0c    /* RW 32 */
#define QRDMA_REG_EQ_CTRL               0x10    /* RW 32 */
#define QRDMA_REG_EQ_PI                 0x14    /* RO 32 */

/* QRDMA_REG_CAPS.  Bits not defined here read as zero; drivers ignore them. */
#define QRDMA_CAPS_MSIX_VECTORS_MASK    0xffull /* MSI-X vectors provided */
#define QRDMA_CAPS_CMDQ                 (1ull << 8)
#define QRDMA_CAPS_ETH                  (1ull << 9)
#define QRDMA_CAPS_DATA_PATH            (1ull << 10)

/* QRDMA_REG_DEV_CTRL */
#define QRDMA_DEV_CTRL_ENABLE           (1u << 0)
/* Write 1: reset the function to its power-on state; reads back as 0. */
#define QRDMA_DEV_CTRL_RESET            (1u << 1)
#define QRDMA_DEV_CTRL_VALID_MASK       (QRDMA_DEV_CTRL_ENABLE | \
                                         QRDMA_DEV_CTRL_RESET)

/* QRDMA_REG_DEV_STATUS */
#define QRDMA_DEV_STATUS_READY          (1u << 0)
#define QRDMA_DEV_STATUS_FATAL          (1u << 1)

/* QRDMA_REG_CONFIG_ERR: why the last enable or the device failed. */
enum qrdma_config_err {
    QRDMA_CONFIG_ERR_NONE               = 0,
    QRDMA_CONFIG_ERR_CMDQ_BASE          = 1,    /* 0 or misaligned */
    QRDMA_CONFIG_ERR_CMDQ_LOG2          = 2,    /* out of range */
    QRDMA_CONFIG_ERR_CMPQ_BASE          = 3,    /* 0 or misaligned */
    QRDMA_CONFIG_ERR_DMA                = 4,    /* a ring access failed */
};

/*
 * Command queue.  The driver writes 128-byte commands into a ring of
 * 2^CMDQ_LOG2 entries at CMDQ_BASE and the new producer index (free
 * running, modulo 2^32) into CMDQ_PI.  The device executes them in order,
 * off the register access, and writes a 32-byte completion for each into
 * the ring of as many entries at CMPQ_BASE, in the same slot, with the
 * phase bit set on even passes over the ring and clear on odd ones; then
 * it signals MSI-X vector 0.  CMDQ_CI counts the commands consumed.
 */
#define QRDMA_CMDQ_LOG2_MIN             1
#define QRDMA_CMDQ_LOG2_MAX             10
#define QRDMA_CMDQ_ALIGN                128
#define QRDMA_CMPQ_ALIGN                32

/*
 * The commands, each as X(NAME, opcode): the one list from which the
 * opcodes (QRDMA_CMD_QUERY_DEVICE and on) and their names in logs and
 * traces (qrdma_cmd_name()) come, in the device and the driver alike.
 */
#define QRDMA_CMD_LIST(X) \
    X(QUERY_DEVICE, 0x01) \
    X(QUERY_PORT,   0x02) \
    X(QUERY_GID,    0x03) \
    X(SET_GID,      0x04) \
    X(DEL_GID,      0x05) \
    X(QUERY_STATS,  0x06) \
    X(CREATE_UCTX,  0x10) \
    X(DESTROY_UCTX, 0x11) \
    X(ALLOC_PD,     0x12) \
    X(DEALLOC_PD,   0x13) \
    X(REG_MR,       0x20) \
    X(DEREG_MR,     0x21) \
    X(ALLOC_MR,     0x22) \
    X(ALLOC_MW,     0x23) \
    X(DEALLOC_MW,   0x24) \
    X(CREATE_CQ,    0x30) \
    X(DESTROY_CQ,   0x31) \
    X(RESIZE_CQ,    0x32) \
    X(CREATE_QP,    0x40) \
    X(MODIFY_QP,    0x41) \
    X(QUERY_QP,     0x42) \
    X(DESTROY_QP,   0x43) \
    X(CREATE_SRQ,   0x50) \
    X(MODIFY_SRQ,   0x51) \
    X(QUERY_SRQ,    0x52) \
    X(DESTROY_SRQ,  0x53) \
    X(CREATE_AH,    0x60) \
    X(DESTROY_AH,   0x61) \
    X(ATTACH_MCAST, 0x70) \
    X(DETACH_MCAST, 0x71)

/* One enum per command: QEMU's checkpatch refuses a macro ending in a comma. */
#define QRDMA_CMD_ENUM(name, opcode) enum { QRDMA_CMD_##name = opcode };
QRDMA_CMD_LIST(QRDMA_CMD_ENUM)
#undef QRDMA_CMD_ENUM

/* The name of a command, "QUERY_DEVICE" say, or "UNKNOWN". */
static inline const char *qrdma_cmd_name(unsigned int opcode)
{
#define QRDMA_CMD_CASE(name, opcode) case opcode: return #name;
    switch (opcode) {
    QRDMA_CMD_LIST(QRDMA_CMD_CASE)
    }
#undef QRDMA_CMD_CASE
    return "UNKNOWN";
}

enum qrdma_cmd_status {
    QRDMA_STATUS_OK                     = 0,
    QRDMA_STATUS_BAD_OPCODE             = 1,    /* -> EOPNOTSUPP */
    QRDMA_STATUS_BAD_PARAM              = 2,    /* -> EINVAL */
    QRDMA_STATUS_BAD_HANDLE             = 3,    /* -> EINVAL */
    QRDMA_STATUS_NO_RESOURCES           = 4,    /* -> ENOMEM */
    QRDMA_STATUS_BUSY                   = 5,    /* -> EBUSY */
    QRDMA_STATUS_BAD_STATE              = 6,    /* -> EINVAL */
    QRDMA_STATUS_BAD_ADDR               = 7,    /* -> EFAULT */
    QRDMA_STATUS_NOT_OWNER              = 8,    /* -> EINVAL */
    QRDMA_STATUS_NOT_SUPPORTED          = 9,    /* -> EOPNOTSUPP */
};

/* The handle that stands for "none" wherever a command takes a handle. */
#define QRDMA_HANDLE_NONE               0
/* The user context handle of the kernel's own resources. */
#define QRDMA_UCTX_KERNEL               0

struct qrdma_cmd_hdr {
    uint8_t opcode;
    uint8_t flags;                      /* reserved, 0 */
    qrdma_le16 cmd_id;                  /* echoed in the completion */
    qrdma_le32 uctx;                    /* owner: a user context or kernel */
};

/* QUERY_DEVICE, QUERY_PORT, QUERY_GID, QUERY_QP, QUERY_SRQ, QUERY_STATS */
struct qrdma_cmd_query {
    qrdma_le64 resp_addr;               /* where the answer goes */
    qrdma_le32 resp_len;                /* at least the answer's size */
    qrdma_le32 index;                   /* port, GID index, qpn or srqn */
};

/* SET_GID, DEL_GID: the RoCE GID table of port 1, kept by the driver. */
struct qrdma_cmd_gid {
    qrdma_le32 index;
    uint8_t type;                       /* QRDMA_GID_TYPE_* */
    uint8_t rsvd0;
    qrdma_le16 vlan_id;                 /* QRDMA_VLAN_NONE for none */
    uint8_t gid[16];
    uint8_t mac[6];
    uint8_t rsvd1[2];
};

#define QRDMA_GID_TYPE_ROCE_V2          2
#define QRDMA_VLAN_NONE                 0xffff

/* Every DESTROY_*, DEALLOC_PD and DEREG_MR */
struct qrdma_cmd_destroy {
    qrdma_le32 handle;
    qrdma_le32 rsvd;
};

/* MR access flags: the IB verbs values. */
#define QRDMA_ACCESS_LOCAL_WRITE        (1u << 0)
#define QRDMA_ACCESS_REMOTE_WRITE       (1u << 1)
#define QRDMA_ACCESS_REMOTE_READ        (1u << 2)
#define QRDMA_ACCESS_REMOTE_ATOMIC      (1u << 3)
#define QRDMA_ACCESS_MW_BIND            (1u << 4)
/* FLUSH of type GLOBAL may name the MR (QRDMA_DEV_CAP_FLUSH_GLOBAL). */
#define QRDMA_ACCESS_FLUSH_GLOBAL       (1u << 8)
#define QRDMA_ACCESS_VALID_MASK         0x11f

/*
 * REG_MR: the region [iova, iova + length) maps onto npages pages of
 * 2^page_shift bytes listed, as 64-bit guest addresses, at pages_addr; iova
 * is at offset (iova mod 2^page_shift) in the first page.  With
 * QRDMA_MR_F_DMA (kernel only) the region is the whole guest address space
 * with iova = guest address, and npages, pages_addr are 0.
 */
struct qrdma_cmd_reg_mr {
    qrdma_le32 pd;
    qrdma_le32 access;
    qrdma_le64 iova;
    qrdma_le64 length;
    qrdma_le64 pages_addr;
    qrdma_le32 npages;
    uint8_t page_shift;
    uint8_t flags;                      /* QRDMA_MR_F_* */
    qrdma_le16 rsvd;
};

#define QRDMA_MR_F_DMA                  (1u << 0)

/* ALLOC_MR: an MR for fast registration, invalid until a REG_MR WQE. */
struct qrdma_cmd_alloc_mr {
    qrdma_le32 pd;
    qrdma_le32 max_pages;
};

/* The lkey of the kernel's local DMA: guest addresses, untranslated. */
#define QRDMA_LOCAL_DMA_LKEY            0

/*
 * ALLOC_MW: a memory window of the PD, unbound, with no access until a
 * BIND_MW WQE binds it (QRDMA_DEV_CAP_MW).  Type 1 windows belong to the
 * PD; type 2 windows (2B) to the QP that binds them, until invalidated.
 */
struct qrdma_cmd_alloc_mw {
    qrdma_le32 pd;
    uint8_t type;                       /* QRDMA_MW_TYPE_* */
    uint8_t rsvd[3];
};

#define QRDMA_MW_TYPE_1                 1
#define QRDMA_MW_TYPE_2                 2

/*
 * The rkey of a window has this bit set, its slot plus 1 in bits 23:8 and
 * a key byte in bits 7:0; an MR key never has it, so the two never meet.
 */
#define QRDMA_KEY_MW                    (1u << 31)

/*
 * CREATE_CQ, RESIZE_CQ: a ring of 2^log2_entries 32-byte CQEs on npages
 * pages.  RESIZE_CQ moves the CQEs from the consumer index ci on to the
 * start of the new ring.
 */
struct qrdma_cmd_cq {
    qrdma_le64 pages_addr;
    qrdma_le32 npages;
    qrdma_le32 log2_entries;
    qrdma_le32 cqn;                     /* RESIZE_CQ */
    qrdma_le32 eq;                      /* CREATE_CQ: completion vector */
    qrdma_le32 ci;                      /* RESIZE_CQ */
    qrdma_le32 flags;                   /* CREATE_CQ: QRDMA_CQ_F_* */
    /*
     * CREATE_CQ: a 4-byte word in guest RAM where the consumer keeps its
     * consumer index (free running), so the device sees a full ring
     * without a register access per poll.  0: none (overruns undetected).
     */
    qrdma_le64 ci_addr;
};

/*
 * CREATE_CQ flags.  VLAN: receive CQEs of UD and GSI QPs say which VLAN
 * their frame came on (QRDMA_CQE_F_VLAN, vlan_id), where a CQ without it
 * has pkey_index; only with QRDMA_DEV_CAP_CQE_VLAN.
 */
#define QRDMA_CQ_F_VLAN                 (1u << 0)
#define QRDMA_CQ_F_ALL                  QRDMA_CQ_F_VLAN

/* QP types: the IB verbs values. */
enum qrdma_qp_type {
    QRDMA_QPT_GSI                       = 1,
    QRDMA_QPT_RC                        = 2,
    QRDMA_QPT_UC                        = 3,
    QRDMA_QPT_UD                        = 4,
};

/* QP states: the IB verbs values. */
enum qrdma_qp_state {
    QRDMA_QPS_RESET                     = 0,
    QRDMA_QPS_INIT                      = 1,
    QRDMA_QPS_RTR                       = 2,
    QRDMA_QPS_RTS                       = 3,
    QRDMA_QPS_SQD                       = 4,
    QRDMA_QPS_SQE                       = 5,
    QRDMA_QPS_ERR                       = 6,
};

/*
 * Work queue entry sizes are fixed, so the caps follow from them: a send
 * WQE holds a 64-byte header and QRDMA_MAX_SEND_SGE scatter/gather entries
 * or QRDMA_MAX_INLINE bytes inline; a receive WQE a 16-byte header and
 * QRDMA_MAX_RECV_SGE entries.
 */
#define QRDMA_SQ_WQE_SIZE               256
#define QRDMA_RQ_WQE_SIZE               128
#define QRDMA_CQE_SIZE                  32
#define QRDMA_MAX_SEND_SGE              12
#define QRDMA_MAX_RECV_SGE              7
#define QRDMA_MAX_INLINE                192

#define QRDMA_QP_F_SQ_SIG_ALL           (1u << 0)

/*
 * CREATE_QP: the send ring has 2^sq_log2 entries on sq_npages pages, the
 * receive ring 2^rq_log2 on rq_npages (none with an SRQ).  The caps asked
 * for must fit in them and in the device limits.
 */
struct qrdma_cmd_create_qp {
    qrdma_le32 pd;
    qrdma_le32 send_cq;
    qrdma_le32 recv_cq;
    qrdma_le32 srq;                     /* QRDMA_HANDLE_NONE: none */
    uint8_t qp_type;                    /* enum qrdma_qp_type */
    uint8_t flags;                      /* QRDMA_QP_F_* */
    uint8_t sq_log2;
    uint8_t rq_log2;
    qrdma_le32 max_send_wr;
    qrdma_le32 max_recv_wr;
    qrdma_le32 max_send_sge;
    qrdma_le32 max_recv_sge;
    qrdma_le32 max_inline_data;
    qrdma_le64 sq_pages_addr;
    qrdma_le64 rq_pages_addr;
    qrdma_le32 sq_npages;
    qrdma_le32 rq_npages;
};

/* The caps a CREATE_QP completion returns in its data words. */
struct qrdma_create_qp_resp {
    qrdma_le32 max_send_wr;
    qrdma_le32 max_recv_wr;
    qrdma_le32 max_send_sge;
    qrdma_le32 max_recv_sge;
    qrdma_le32 max_inline_data;
    qrdma_le32 rsvd;
};

/* The address vector of a connected QP or an AH (RoCEv2). */
struct qrdma_av {
    uint8_t dgid[16];
    qrdma_le32 flow_label;
    uint8_t sgid_index;
    uint8_t hop_limit;
    uint8_t traffic_class;
    uint8_t sl;
    uint8_t dmac[6];
    qrdma_le16 vlan_id;                 /* QRDMA_VLAN_NONE for none */
};

/* modify_qp attribute mask: the IB verbs bit values. */
#define QRDMA_QP_ATTR_STATE             (1u << 0)
#define QRDMA_QP_ATTR_CUR_STATE         (1u << 1)
#define QRDMA_QP_ATTR_EN_SQD_ASYNC_NOTIFY (1u << 2)
#define QRDMA_QP_ATTR_ACCESS_FLAGS      (1u << 3)
#define QRDMA_QP_ATTR_PKEY_INDEX        (1u << 4)
#define QRDMA_QP_ATTR_PORT              (1u << 5)
#define QRDMA_QP_ATTR_QKEY              (1u << 6)
#define QRDMA_QP_ATTR_AV                (1u << 7)
#define QRDMA_QP_ATTR_PATH_MTU          (1u << 8)
#define QRDMA_QP_ATTR_TIMEOUT           (1u << 9)
#define QRDMA_QP_ATTR_RETRY_CNT         (1u << 10)
#define QRDMA_QP_ATTR_RNR_RETRY         (1u << 11)
#define QRDMA_QP_ATTR_RQ_PSN            (1u << 12)
#define QRDMA_QP_ATTR_MAX_QP_RD_ATOMIC  (1u << 13)
#define QRDMA_QP_ATTR_ALT_PATH          (1u << 14)
#define QRDMA_QP_ATTR_MIN_RNR_TIMER     (1u << 15)
#define QRDMA_QP_ATTR_SQ_PSN            (1u << 16)
#define QRDMA_QP_ATTR_MAX_DEST_RD_ATOMIC (1u << 17)
#define QRDMA_QP_ATTR_PATH_MIG_STATE    (1u << 18)
#define QRDMA_QP_ATTR_CAP               (1u << 19)
#define QRDMA_QP_ATTR_DEST_QPN          (1u << 20)

/* The attributes of MODIFY_QP (inline) and of the QUERY_QP answer. */
struct qrdma_qp_attr {
    qrdma_le32 attr_mask;
    uint8_t qp_state;
    uint8_t cur_qp_state;
    uint8_t path_mtu;                   /* IB enum: 1 = 256 ... 5 = 4096 */
    uint8_t path_mig_state;
    qrdma_le32 qkey;
    qrdma_le32 rq_psn;
    qrdma_le32 sq_psn;
    qrdma_le32 dest_qp_num;
    qrdma_le32 qp_access_flags;         /* QRDMA_ACCESS_* */
    qrdma_le16 pkey_index;
    uint8_t en_sqd_async_notify;
    uint8_t sq_draining;
    uint8_t max_rd_atomic;
    uint8_t max_dest_rd_atomic;
    uint8_t min_rnr_timer;
    uint8_t port_num;
    uint8_t timeout;
    uint8_t retry_cnt;
    uint8_t rnr_retry;
    uint8_t rsvd;
    struct qrdma_av av;
};

struct qrdma_cmd_modify_qp {
    qrdma_le32 qpn;
    qrdma_le32 rsvd;
    struct qrdma_qp_attr attr;
};

/* The QUERY_QP answer. */
struct qrdma_query_qp_resp {
    struct qrdma_qp_attr attr;          /* attr_mask: 0 */
    struct qrdma_create_qp_resp cap;
    uint8_t qp_type;
    uint8_t sq_sig_all;
    uint8_t rsvd[6];
};

/*
 * CREATE_SRQ, MODIFY_SRQ.  MODIFY_SRQ with QRDMA_SRQ_ATTR_MAX_WR moves the
 * SRQ onto a new ring (max_wr, pages_addr, npages, log2_entries), copying
 * the WQEs posted and not yet taken to the same free-running index there.
 */
struct qrdma_cmd_srq {
    qrdma_le32 pd;                      /* CREATE_SRQ */
    qrdma_le32 srqn;                    /* MODIFY_SRQ */
    qrdma_le32 max_wr;
    qrdma_le32 max_sge;                 /* CREATE_SRQ */
    qrdma_le32 srq_limit;
    qrdma_le32 attr_mask;               /* MODIFY_SRQ: QRDMA_SRQ_ATTR_* */
    qrdma_le64 pages_addr;              /* the ring */
    qrdma_le32 npages;
    qrdma_le32 log2_entries;
};

#define QRDMA_SRQ_ATTR_MAX_WR           (1u << 0)
#define QRDMA_SRQ_ATTR_LIMIT            (1u << 1)

/* The CREATE_SRQ completion data and the QUERY_SRQ answer. */
struct qrdma_srq_resp {
    qrdma_le32 max_wr;
    qrdma_le32 max_sge;
    qrdma_le32 srq_limit;
    qrdma_le32 rsvd;
};

struct qrdma_cmd_create_ah {
    qrdma_le32 pd;
    qrdma_le32 rsvd;
    struct qrdma_av av;
};

/* ATTACH_MCAST, DETACH_MCAST */
struct qrdma_cmd_mcast {
    qrdma_le32 qpn;
    qrdma_le32 rsvd;
    uint8_t gid[16];
};

struct qrdma_cmd {
    struct qrdma_cmd_hdr hdr;
    union {
        struct qrdma_cmd_query query;
        struct qrdma_cmd_gid gid;
        struct qrdma_cmd_destroy destroy;
        struct qrdma_cmd_reg_mr reg_mr;
        struct qrdma_cmd_alloc_mr alloc_mr;
        struct qrdma_cmd_alloc_mw alloc_mw;
        struct qrdma_cmd_cq cq;
        struct qrdma_cmd_create_qp create_qp;
        struct qrdma_cmd_modify_qp modify_qp;
        struct qrdma_cmd_srq srq;
        struct qrdma_cmd_create_ah create_ah;
        struct qrdma_cmd_mcast mcast;
        uint8_t raw[120];
    };
};

#define QRDMA_CMPL_F_PHASE              (1u << 0)

struct qrdma_cmpl {
    qrdma_le16 cmd_id;
    uint8_t status;                     /* enum qrdma_cmd_status */
    uint8_t flags;                      /* QRDMA_CMPL_F_* */
    qrdma_le32 handle;                  /* what a CREATE/ALLOC/REG made */
    qrdma_le32 data[6];                 /* command-specific results */
};

/*
 * CREATE_UCTX: data[0] of the completion is the index in BAR2 of the
 * context's doorbell page.  REG_MR, ALLOC_MR: handle is the lkey, data[0]
 * the rkey.  ALLOC_MW: handle is the window's handle, data[0] its first
 * rkey.  CREATE_CQ, RESIZE_CQ: data[0] is the number of entries.
 * CREATE_QP: data holds a struct qrdma_create_qp_resp.  CREATE_SRQ,
 * QUERY_SRQ: data holds a struct qrdma_srq_resp.
 */

/* The QUERY_DEVICE answer. */
struct qrdma_device_attr {
    qrdma_le64 fw_ver;
    qrdma_be64 node_guid;               /* EUI-64, network order */
    qrdma_le64 max_mr_size;
    qrdma_le64 page_size_cap;
    qrdma_le32 vendor_id;
    qrdma_le32 vendor_part_id;
    qrdma_le32 hw_ver;
    qrdma_le32 max_qp;
    qrdma_le32 max_qp_wr;
    qrdma_le32 max_send_sge;
    qrdma_le32 max_recv_sge;
    qrdma_le32 max_sge_rd;
    qrdma_le32 max_cq;
    qrdma_le32 max_cqe;
    qrdma_le32 max_mr;
    qrdma_le32 max_pd;
    qrdma_le32 max_qp_rd_atom;
    qrdma_le32 max_qp_init_rd_atom;
    qrdma_le32 max_srq;
    qrdma_le32 max_srq_wr;
    qrdma_le32 max_srq_sge;
    qrdma_le32 max_ah;
    qrdma_le32 max_mcast_grp;
    qrdma_le32 max_mcast_qp_attach;
    qrdma_le32 max_uctx;
    qrdma_le32 max_inline_data;
    qrdma_le32 max_fast_reg_page_list_len;
    qrdma_le32 max_mr_pages;
    qrdma_le32 num_comp_vectors;
    qrdma_le32 max_pkeys;
    uint8_t local_ca_ack_delay;
    uint8_t atomic_cap;                 /* 1: within this HCA */
    uint8_t rsvd[2];
    qrdma_le32 device_caps;             /* QRDMA_DEV_CAP_* */
    qrdma_le32 max_mw;                  /* QRDMA_DEV_CAP_MW */
    /* page list entries of all MRs together (ALLOC_MR: its max_pages) */
    qrdma_le32 max_mr_pages_total;
};

/*
 * QRDMA_DEVICE_ATTR device_caps: what the device does beyond the base
 * interface.  A device that does not know a bit reports it as 0.
 */
#define QRDMA_DEV_CAP_SRQ_RESIZE        (1u << 0)   /* MODIFY_SRQ MAX_WR */
#define QRDMA_DEV_CAP_ATOMIC_WRITE      (1u << 1)   /* QRDMA_WR_ATOMIC_WRITE */
/* QRDMA_WR_FLUSH of type GLOBAL, QRDMA_ACCESS_FLUSH_GLOBAL */
#define QRDMA_DEV_CAP_FLUSH_GLOBAL      (1u << 2)
/* ALLOC_MW, DEALLOC_MW, QRDMA_WR_BIND_MW: memory windows of type 1 and 2B */
#define QRDMA_DEV_CAP_MW                (1u << 3)
/* CREATE_CQ takes QRDMA_CQ_F_VLAN */
#define QRDMA_DEV_CAP_CQE_VLAN          (1u << 4)

/* Port states: the IB verbs values. */
#define QRDMA_PORT_DOWN                 1
#define QRDMA_PORT_ACTIVE               4

/* The QUERY_PORT answer. */
struct qrdma_port_attr {
    uint8_t state;                      /* QRDMA_PORT_* */
    uint8_t phys_state;                 /* 3 disabled, 5 link up */
    uint8_t max_mtu;                    /* IB enum */
    uint8_t active_mtu;                 /* IB enum */
    qrdma_le32 gid_tbl_len;
    qrdma_le32 max_msg_sz;
    qrdma_le16 pkey_tbl_len;
    uint8_t active_speed;               /* IB enum */
    uint8_t active_width;               /* IB enum */
    uint8_t mac[6];
    uint8_t rsvd[2];
};

/* The QUERY_GID answer. */
struct qrdma_gid_entry {
    uint8_t gid[16];
    uint8_t type;                       /* QRDMA_GID_TYPE_*, 0: unused */
    uint8_t rsvd0;
    qrdma_le16 vlan_id;
    uint8_t mac[6];
    uint8_t rsvd1[2];
};

/* The QUERY_STATS answer: counters since the device was created. */
struct qrdma_stats {
    qrdma_le64 cmds;
    qrdma_le64 cmd_errors;
    qrdma_le64 guest_errors;
    qrdma_le64 eth_tx_frames;
    qrdma_le64 eth_rx_frames;
    qrdma_le64 eth_rx_dropped;
    qrdma_le64 eth_tx_dropped;
    qrdma_le32 uctx;                    /* resources in use */
    qrdma_le32 pd;
    qrdma_le32 mr;
    qrdma_le32 cq;
    qrdma_le32 qp;
    qrdma_le32 srq;
    qrdma_le32 ah;
    qrdma_le32 mcast;
    qrdma_le32 mw;
    qrdma_le32 rsvd;
    /* the transport: packets, not bursts */
    qrdma_le64 pkts_sent;
    qrdma_le64 pkts_rcvd;
    qrdma_le64 pkts_dropped;            /* for no QP, or not expected */
    qrdma_le64 dup_reqs;                /* duplicate requests */
    qrdma_le64 out_of_seq;              /* requests ahead of the PSN */
    qrdma_le64 seq_naks_sent;
    qrdma_le64 seq_naks_rcvd;
    qrdma_le64 rnr_naks_sent;
    qrdma_le64 rnr_naks_rcvd;
    qrdma_le64 retransmits;             /* ACK timeouts with retries left */
    qrdma_le64 retry_exceeded;
    qrdma_le64 icrc_errors;             /* frames from the wire */
    qrdma_le64 wire_malformed;
};

/*
 * Event queues.  A ring of 2^EQ_LOG2 16-byte entries at EQ_BASE, set while
 * EQ_CTRL.ENABLE is 0.  The device writes entries with the phase bit set on
 * even passes over the ring and clear on odd ones, advances EQ_PI and
 * signals the EQ's MSI-X vector; the driver writes the entries it consumed
 * to EQ_CI.  An event that finds the ring full is dropped and counted.
 */
#define QRDMA_EQ_LOG2_MIN               1
#define QRDMA_EQ_LOG2_MAX               16
#define QRDMA_EQ_CTRL_ENABLE            (1u << 0)

/* Event types: the IB verbs async event values, and completion events. */
enum qrdma_event_type {
    QRDMA_EV_CQ_ERR                     = 0,
    QRDMA_EV_QP_FATAL                   = 1,
    QRDMA_EV_QP_REQ_ERR                 = 2,
    QRDMA_EV_QP_ACCESS_ERR              = 3,
    QRDMA_EV_COMM_EST                   = 4,
    QRDMA_EV_SQ_DRAINED                 = 5,
    QRDMA_EV_DEVICE_FATAL               = 8,
    QRDMA_EV_PORT_ACTIVE                = 9,
    QRDMA_EV_PORT_ERR                   = 10,
    QRDMA_EV_SRQ_LIMIT_REACHED          = 15,
    QRDMA_EV_QP_LAST_WQE_REACHED        = 16,
    QRDMA_EV_COMPLETION                 = 0x80,
};

#define QRDMA_EQE_F_PHASE               (1u << 0)

struct qrdma_eqe {
    uint8_t type;                       /* enum qrdma_event_type */
    uint8_t flags;                      /* QRDMA_EQE_F_* */
    qrdma_le16 rsvd0;
    qrdma_le32 handle;                  /* cqn, qpn, srqn, or port number */
    qrdma_le64 rsvd1;
};

/*
 * Doorbells, in a context's page of BAR2, each one aligned 64-bit write of
 * a handle (low 32 bits) and an index (high 32 bits).  SQ, RQ, SRQ: the
 * producer index, free running, of the work queue.  A doorbell for a
 * queue of another context, or one more than the ring size ahead of the
 * device's consumer index, is a guest error and ignored.
 */
#define QRDMA_DB_SQ                     0x00
#define QRDMA_DB_RQ                     0x08
#define QRDMA_DB_SRQ                    0x10
/*
 * CQ_ARM: ask for one completion event on the next CQE (NEXT) or the next
 * solicited or error CQE (SOLICITED).  The index half holds the flags.
 */
#define QRDMA_DB_CQ_ARM                 0x18
#define QRDMA_DB_CQ_ARM_NEXT            (1u << 0)
#define QRDMA_DB_CQ_ARM_SOLICITED       (1u << 1)
#define QRDMA_DB_VAL(handle, index)     ((uint64_t)(index) << 32 | (handle))

/* A scatter/gather entry; lkey QRDMA_LOCAL_DMA_LKEY only for the kernel. */
struct qrdma_sge {
    qrdma_le64 addr;
    qrdma_le32 length;
    qrdma_le32 lkey;
};

/* Send opcodes: the IB values (ib_wr_opcode, ibv_wr_opcode). */
enum qrdma_wr_opcode {
    QRDMA_WR_RDMA_WRITE                 = 0,
    QRDMA_WR_RDMA_WRITE_WITH_IMM        = 1,
    QRDMA_WR_SEND                       = 2,
    QRDMA_WR_SEND_WITH_IMM              = 3,
    QRDMA_WR_RDMA_READ                  = 4,
    QRDMA_WR_ATOMIC_CMP_AND_SWP         = 5,
    QRDMA_WR_ATOMIC_FETCH_AND_ADD       = 6,
    QRDMA_WR_LOCAL_INV                  = 7,
    QRDMA_WR_BIND_MW                    = 8,
    QRDMA_WR_SEND_WITH_INV              = 9,
    QRDMA_WR_FLUSH                      = 14,
    QRDMA_WR_ATOMIC_WRITE               = 15,
    QRDMA_WR_REG_MR                     = 0x20,
};

#define QRDMA_WQE_F_SIGNALED            (1u << 0)
#define QRDMA_WQE_F_SOLICITED           (1u << 1)
#define QRDMA_WQE_F_FENCE               (1u << 2)
#define QRDMA_WQE_F_INLINE              (1u << 3)

/*
 * A send WQE: 64 bytes of header and operation, then QRDMA_MAX_SEND_SGE
 * SGEs or, with QRDMA_WQE_F_INLINE, inline_len bytes of data.  One word
 * holds imm_data, the immediate (as the consumer gave it, in network
 * order), or, for SEND_WITH_INV and LOCAL_INV, invalidate_rkey, the rkey
 * (of an MR or a window) to invalidate.
 */
struct qrdma_sq_wqe {
    qrdma_le64 wr_id;
    uint8_t opcode;                     /* enum qrdma_wr_opcode */
    uint8_t flags;                      /* QRDMA_WQE_F_* */
    uint8_t num_sge;
    uint8_t rsvd0;
    union {
        qrdma_be32 imm_data;
        qrdma_le32 invalidate_rkey;
    };
    qrdma_le32 inline_len;
    qrdma_le32 rsvd1;
    union {
        struct {
            qrdma_le64 remote_addr;
            qrdma_le32 rkey;
            qrdma_le32 rsvd;
            /* atomics; ATOMIC_WRITE: the 8 bytes to write, in order */
            qrdma_le64 compare_add;
            qrdma_le64 swap;            /* ATOMIC_CMP_AND_SWP */
        } rdma;
        struct {
            qrdma_le64 remote_addr;     /* as in rdma */
            qrdma_le32 rkey;
            qrdma_le32 rsvd;
            qrdma_le64 length;          /* QRDMA_FLUSH_RANGE */
            uint8_t type;               /* QRDMA_FLUSH_GLOBAL, _PERSISTENT */
            uint8_t level;              /* QRDMA_FLUSH_RANGE, _MR */
            uint8_t rsvd2[6];
        } flush;
        struct {
            qrdma_le32 ah;
            qrdma_le32 remote_qpn;
            qrdma_le32 remote_qkey;
            qrdma_le32 rsvd;
        } ud;
        struct {
            qrdma_le64 iova;
            qrdma_le64 length;
            qrdma_le64 pages_addr;      /* 64-bit page addresses */
            qrdma_le32 key;             /* the MR's new lkey/rkey */
            qrdma_le32 access;          /* QRDMA_ACCESS_* */
            qrdma_le32 npages;
            uint8_t page_shift;
            uint8_t rsvd[3];
        } reg_mr;
        struct {
            /*
             * [addr, addr + length) of the MR mr_lkey names; length 0
             * unbinds a type 1 window.  key names the window by its bits
             * 31:8 and becomes its rkey.
             */
            qrdma_le64 addr;
            qrdma_le64 length;
            qrdma_le32 key;
            qrdma_le32 mr_lkey;
            qrdma_le32 access;          /* QRDMA_ACCESS_*: bits 0-3 */
            qrdma_le32 rsvd[3];
        } bind_mw;
        uint8_t raw[40];
    };
    union {
        struct qrdma_sge sge[QRDMA_MAX_SEND_SGE];
        uint8_t inline_data[QRDMA_MAX_INLINE];
    };
};

/* FLUSH types (a mask) and levels: the ibv_wr_flush values. */
#define QRDMA_FLUSH_GLOBAL              (1u << 0)
#define QRDMA_FLUSH_PERSISTENT          (1u << 1)
#define QRDMA_FLUSH_RANGE               0
#define QRDMA_FLUSH_MR                  1

struct qrdma_rq_wqe {
    qrdma_le64 wr_id;
    qrdma_le32 num_sge;
    qrdma_le32 rsvd;
    struct qrdma_sge sge[QRDMA_MAX_RECV_SGE];
};

/* Completion opcodes and statuses: the IB values (ib_wc_*, ibv_wc_*). */
enum qrdma_wc_opcode {
    QRDMA_WC_SEND                       = 0,
    QRDMA_WC_RDMA_WRITE                 = 1,
    QRDMA_WC_RDMA_READ                  = 2,
    QRDMA_WC_COMP_SWAP                  = 3,
    QRDMA_WC_FETCH_ADD                  = 4,
    QRDMA_WC_BIND_MW                    = 5,
    QRDMA_WC_LOCAL_INV                  = 6,
    QRDMA_WC_REG_MR                     = 8,
    QRDMA_WC_ATOMIC_WRITE               = 9,
    /* The verbs' 8 is REG_MR's here (as ib_wc_opcode had it first). */
    QRDMA_WC_FLUSH                      = 0x10,
    QRDMA_WC_RECV                       = 0x80,
    QRDMA_WC_RECV_RDMA_WITH_IMM         = 0x81,
};

enum qrdma_wc_status {
    QRDMA_WC_SUCCESS                    = 0,
    QRDMA_WC_LOC_LEN_ERR                = 1,
    QRDMA_WC_LOC_QP_OP_ERR              = 2,
    QRDMA_WC_LOC_PROT_ERR               = 4,
    QRDMA_WC_WR_FLUSH_ERR               = 5,
    QRDMA_WC_MW_BIND_ERR                = 6,
    QRDMA_WC_BAD_RESP_ERR               = 7,
    QRDMA_WC_LOC_ACCESS_ERR             = 8,
    QRDMA_WC_REM_INV_REQ_ERR            = 9,
    QRDMA_WC_REM_ACCESS_ERR             = 10,
    QRDMA_WC_REM_OP_ERR                 = 11,
    QRDMA_WC_RETRY_EXC_ERR              = 12,
    QRDMA_WC_RNR_RETRY_EXC_ERR          = 13,
    QRDMA_WC_FATAL_ERR                  = 19,
    QRDMA_WC_GENERAL_ERR                = 21,
};

/*
 * CQE flags: the ibv_wc_flags values where there is one, VLAN (the
 * frame's 802.1Q VLAN ID is in vlan_id; on CQs of QRDMA_CQ_F_VLAN only),
 * and the phase bit.
 */
#define QRDMA_CQE_F_GRH                 (1u << 0)
#define QRDMA_CQE_F_WITH_IMM            (1u << 1)
#define QRDMA_CQE_F_WITH_INV            (1u << 3)
#define QRDMA_CQE_F_VLAN                (1u << 4)
#define QRDMA_CQE_F_PHASE               (1u << 7)

/*
 * A CQE.  The device writes CQE i of a ring of 2^log2 with the phase bit
 * set on even passes and clear on odd ones, and writes the flags byte
 * last.  qpn says which QP (and is_recv which of its queues) completed.
 */
struct qrdma_cqe {
    qrdma_le64 wr_id;
    qrdma_le32 byte_len;
    union {
        qrdma_be32 imm_data;            /* the immediate, as in the WQE */
        qrdma_le32 invalidate_rkey;     /* QRDMA_CQE_F_WITH_INV */
    };
    qrdma_le32 qpn;
    qrdma_le32 src_qp;                  /* UD: the sender's QPN */
    uint8_t opcode;                     /* enum qrdma_wc_opcode */
    uint8_t status;                     /* enum qrdma_wc_status */
    uint8_t flags;                      /* QRDMA_CQE_F_* */
    uint8_t is_recv;                    /* 1: from the receive side */
    union {
        /*
         * The port has one P_Key (max_pkeys 1), so this is 0; CQs of
         * QRDMA_CQ_F_VLAN hold vlan_id here instead.
         */
        qrdma_le16 pkey_index;
        qrdma_le16 vlan_id;             /* QRDMA_CQE_F_VLAN */
    };
    uint8_t sl;
    uint8_t network_hdr_type;           /* 0 none, 1 IPv4, 2 IPv6 (GRH) */
};

/* The GRH at the start of a UD receive buffer. */
#define QRDMA_GRH_SIZE                  40

/*
 * Ethernet function: a TX and an RX ring of 16-byte descriptors, 2^LOG2
 * entries each, configured while ETH_CTRL.ENABLE is 0.  For TX the driver
 * fills addr and len of one whole frame per descriptor and advances
 * ETH_TX_PI; for RX it fills addr and len (the buffer size) and advances
 * ETH_RX_PI.  The device sets QRDMA_ETH_DESC_DONE when it is done with a
 * descriptor (for RX with len set to the frame length), advances the
 * consumer index and signals MSI-X vector ETH_IRQ_VECTOR.
 */
#define QRDMA_ETH_LOG2_MIN              1
#define QRDMA_ETH_LOG2_MAX              12
#define QRDMA_ETH_RING_ALIGN            16
#define QRDMA_ETH_FRAME_MAX             9018

#define QRDMA_ETH_LINK_UP               (1u << 0)
#define QRDMA_ETH_CTRL_ENABLE           (1u << 0)

#define QRDMA_ETH_DESC_DONE             (1u << 0)
/*
 * TX: the frame was not sent (no backend, link down, bad descriptor).
 * RX: the buffer could not be written (bad address); len is 0.
 */
#define QRDMA_ETH_DESC_ERR              (1u << 1)

struct qrdma_eth_desc {
    qrdma_le64 addr;
    qrdma_le16 len;
    qrdma_le16 flags;                   /* QRDMA_ETH_DESC_* */
    qrdma_le32 rsvd;
};

/*
 * The layouts above are the ones docs/specs/qrdma.rst gives: their sizes
 * are checked here, once, wherever the header is compiled.  C11's
 * _Static_assert works alike in QEMU, Linux and rdma-core.
 */
#define QRDMA_CHECK_SIZE(name, size) \
    _Static_assert(sizeof(struct name) == (size), \
                   "struct " #name " is not " #size " bytes")

QRDMA_CHECK_SIZE(qrdma_cmd_hdr, 8);
QRDMA_CHECK_SIZE(qrdma_cmd_query, 16);
QRDMA_CHECK_SIZE(qrdma_cmd_gid, 32);
QRDMA_CHECK_SIZE(qrdma_cmd_destroy, 8);
QRDMA_CHECK_SIZE(qrdma_cmd_reg_mr, 40);
QRDMA_CHECK_SIZE(qrdma_cmd_alloc_mr, 8);
QRDMA_CHECK_SIZE(qrdma_cmd_alloc_mw, 8);
QRDMA_CHECK_SIZE(qrdma_cmd_cq, 40);
QRDMA_CHECK_SIZE(qrdma_cmd_create_qp, 64);
QRDMA_CHECK_SIZE(qrdma_create_qp_resp, 24);
QRDMA_CHECK_SIZE(qrdma_av, 32);
QRDMA_CHECK_SIZE(qrdma_qp_attr, 72);
QRDMA_CHECK_SIZE(qrdma_cmd_modify_qp, 80);
QRDMA_CHECK_SIZE(qrdma_query_qp_resp, 104);
QRDMA_CHECK_SIZE(qrdma_cmd_srq, 40);
QRDMA_CHECK_SIZE(qrdma_srq_resp, 16);
QRDMA_CHECK_SIZE(qrdma_cmd_create_ah, 40);
QRDMA_CHECK_SIZE(qrdma_cmd_mcast, 24);
QRDMA_CHECK_SIZE(qrdma_cmd, 128);
QRDMA_CHECK_SIZE(qrdma_cmpl, 32);
QRDMA_CHECK_SIZE(qrdma_device_attr, 152);
QRDMA_CHECK_SIZE(qrdma_port_attr, 24);
QRDMA_CHECK_SIZE(qrdma_gid_entry, 28);
QRDMA_CHECK_SIZE(qrdma_stats, 200);
QRDMA_CHECK_SIZE(qrdma_eqe, 16);
QRDMA_CHECK_SIZE(qrdma_sge, 16);
QRDMA_CHECK_SIZE(qrdma_sq_wqe, QRDMA_SQ_WQE_SIZE);
QRDMA_CHECK_SIZE(qrdma_rq_wqe, QRDMA_RQ_WQE_SIZE);
QRDMA_CHECK_SIZE(qrdma_cqe, QRDMA_CQE_SIZE);
QRDMA_CHECK_SIZE(qrdma_eth_desc, 16);

#undef QRDMA_CHECK_SIZE

#endif /* QRDMA_HW_H */
