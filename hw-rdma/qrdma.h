/*
 * QEMU qrdma: emulated RDMA (RoCEv2) NIC, state shared by the device's files
 *
 * Copyright (c) 2026 The qrdma developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef HW_RDMA_QRDMA_H
#define HW_RDMA_QRDMA_H

#include "hw/pci/pci_device.h"
#include "net/net.h"
#include "migration/vmstate.h"
#include "qemu/queue.h"
#include "qemu/timer.h"
#include "hw/rdma/qrdma-hw.h"
#include "qrdma_table.h"
#include "qrdma_dma.h"
#include "qrdma_fabric.h"
#include "qrdma_link.h"
#include "qrdma_eq.h"
#include "qrdma_sgl.h"
#include "qrdma_mr.h"
#include "qrdma_cq.h"

#define TYPE_QRDMA "qrdma"
OBJECT_DECLARE_SIMPLE_TYPE(QrdmaState, QRDMA)

/* Bounds of the msix-vectors property: at least the async event vector. */
#define QRDMA_MSIX_VECTORS_MIN          1
#define QRDMA_MSIX_VECTORS_MAX          64
#define QRDMA_MSIX_VECTORS_DEFAULT      4

#define QRDMA_GSI_QPN                   1
#define QRDMA_GID_TABLE_LEN             16
#define QRDMA_MAX_RD_ATOMIC             128
#define QRDMA_MAX_MCAST_QP_LIMIT        64

typedef struct QrdmaUctx {
    uint32_t handle;
    uint32_t db_page;
    uint32_t refs;                      /* resources it owns */
} QrdmaUctx;

typedef struct QrdmaPd {
    uint32_t handle;
    uint32_t uctx;
    uint32_t refs;                      /* MRs, MWs, QPs, SRQs, AHs in it */
} QrdmaPd;

typedef struct QrdmaMr {
    uint32_t lkey;
    uint32_t rkey;
    uint32_t uctx;
    uint32_t pd;
    uint32_t access;
    bool dma;                           /* untranslated guest addresses */
    bool fast_reg;                      /* from ALLOC_MR */
    bool valid;                         /* fast-reg MRs: registered */
    uint64_t iova;
    uint64_t length;
    uint8_t page_shift;
    uint32_t max_pages;
    QrdmaPages pages;
    uint32_t charged;                   /* its pages in mr_pages_in_use */
    uint32_t windows;                   /* memory windows bound to it */
} QrdmaMr;

/*
 * A memory window.  While bound it names [addr, addr + length) of the MR
 * in slot mr_idx, which had lkey mr_lkey then: whatever changes that MR
 * (deregistration, invalidation, fast registration) unbinds the window
 * first, so a bound window always lies within a valid MR.
 */
typedef struct QrdmaMw {
    uint32_t handle;
    uint32_t uctx;
    uint32_t pd;
    uint8_t type;                       /* QRDMA_MW_TYPE_* */
    bool bound;
    uint32_t rkey;
    uint32_t access;                    /* remote rights only */
    uint32_t qpn;                       /* type 2: the QP it is bound to */
    uint32_t mr_idx;
    uint32_t mr_lkey;
    uint64_t addr;
    uint64_t length;
} QrdmaMw;

typedef struct QrdmaCq {
    uint32_t handle;
    uint32_t uctx;
    uint32_t log2;
    uint32_t eq;
    uint32_t refs;                      /* send and receive sides of QPs */
    QrdmaPages ring;
    uint32_t pi;                        /* CQEs written */
    uint32_t ci_seen;                   /* consumer index last read */
    uint64_t ci_addr;
    uint8_t armed;                      /* QRDMA_DB_CQ_ARM_* */
    bool overrun;
    bool report_vlan;                   /* QRDMA_CQ_F_VLAN */
} QrdmaCq;

typedef struct QrdmaSrq {
    uint32_t handle;
    uint32_t uctx;
    uint32_t pd;
    uint32_t log2;
    uint32_t max_wr;
    uint32_t max_sge;
    uint32_t limit;
    uint32_t refs;                      /* QPs attached */
    QrdmaPages ring;
    uint32_t pi;
    uint32_t ci;
} QrdmaSrq;

/*
 * The requester's progress through the SQ: which WQE it sends, and how
 * far.  WQEs from sq_ci up to idx have gone out and wait for the
 * completer; a retransmission moves idx back to sq_ci.
 */
typedef struct QrdmaReq {
    uint32_t idx;                       /* SQ index of the WQE it sends */
    /*
     * One past the last WQE sent whole, which a retry does not move
     * back: answers to what went before the retry still complete WQEs.
     */
    uint32_t idx_hi;
    uint32_t psn;                       /* of the next packet */
    uint32_t psn_hi;                    /* the next PSN never sent yet */
    uint32_t sent;                      /* bytes of that message sent */
    bool started;                       /* its WQE was checked and counted */
    bool waiting;                       /* for the WQEs before it */
    uint32_t unacked;                   /* packets sent since an AckReq */
    bool ack_all;                       /* every WQE asks for an ACK */
    uint32_t counted;                   /* WQEs before it were counted */
} QrdmaReq;

/* The completer: the oldest WQE not complete, sq_ci, and its answers. */
typedef struct QrdmaComp {
    uint32_t psn;                       /* first PSN of WQE sq_ci */
    uint32_t acked;                     /* the first PSN not acknowledged */
    uint32_t read_done;                 /* READ response bytes placed */
    /*
     * A response past the one awaited sent the oldest READ again at
     * once; until that one comes, later ones send nothing more.
     */
    bool gap_retried;
    uint8_t rnr_left;                   /* RNR retries left for the WQE */
    uint8_t retry_left;                 /* transport retries left for it */
    bool rnr_wait;                      /* waits for the RNR timer */
    bool retry_armed;                   /* the ACK timer runs */
    /*
     * The timer runs to the early retry (qrdma_comp.c), not yet to the
     * local ACK timeout; and whether the early retry went since the last
     * progress, which allows one.
     */
    bool early_armed;
    bool early_retried;
} QrdmaComp;

/*
 * A responder resource: a READ, atomic, FLUSH or ATOMIC_WRITE the
 * responder took, kept so that the request coming again (its answer was
 * lost) is answered from it and never done twice.  The QP keeps the last
 * max_dest_rd_atomic of them, as many as it told its peer it has.
 */
typedef enum QrdmaResKind {
    QRDMA_RES_NONE,
    QRDMA_RES_READ,
    QRDMA_RES_ATOMIC,
    QRDMA_RES_EMPTY,                    /* FLUSH, ATOMIC_WRITE */
} QrdmaResKind;

typedef struct QrdmaRespRes {
    uint8_t kind;                       /* QrdmaResKind */
    uint32_t psn;                       /* of the request */
    uint32_t psns;                      /* PSNs its answer takes */
    uint64_t va;                        /* RETH, or AtomicETH's address */
    uint32_t rkey;
    uint32_t len;                       /* READ: bytes asked for */
    uint64_t orig;                      /* atomic: the value it returned */
} QrdmaRespRes;

/*
 * The READ the responder answers: a turn at a time, by its engine, so
 * that one request never makes the main loop send gigabytes, and only as
 * fast as the transport takes them.  The range is looked up again each
 * turn: the MR may go meanwhile.
 */
typedef struct QrdmaReadAnswer {
    bool active;
    bool resumed;                       /* the rest of one: no FIRST */
    uint32_t psn;                       /* of its first response */
    uint32_t npkts;
    uint32_t next;                      /* responses sent */
    uint64_t va;
    uint32_t rkey;
    uint32_t len;
} QrdmaReadAnswer;

/* A request that waits while its QP answers a READ (qrdma_resp.c). */
typedef struct QrdmaHeldPkt QrdmaHeldPkt;

/* The responder: the PSN it expects and the message it is taking in. */
typedef struct QrdmaResp {
    uint32_t epsn;                      /* the next PSN expected */
    uint32_t msn;                       /* messages completed */
    bool nak_sent;                      /* a sequence NAK for epsn went */
    uint8_t in_msg;                     /* QRDMA_OPF_SEND or _WRITE, or 0 */
    uint32_t placed;                    /* bytes of it placed */
    uint32_t mr_gen;                    /* sink checked at this MR gen */
    struct qrdma_rq_wqe rwqe;           /* that WQE, as taken */
    uint64_t va;                        /* a WRITE's range */
    uint32_t rkey;
    uint32_t dma_len;
    QrdmaIter sink;                     /* where its bytes go */
    /* max_dest_rd_atomic of them in use, the oldest replaced first */
    QrdmaRespRes res[QRDMA_MAX_RD_ATOMIC];
    uint32_t res_next;
    QrdmaReadAnswer answer;
    QSIMPLEQ_HEAD(, QrdmaHeldPkt) held;
    uint32_t nheld;
    bool answer_queued;                 /* on the device's answer list */
    QSIMPLEQ_ENTRY(QrdmaQp) answer_next;
} QrdmaResp;

/*
 * What the completer needs of a WQE that went out: kept by the requester
 * for each of the last QRDMA_SENT_MAX, which bounds the WQEs in flight.
 */
#define QRDMA_SENT_MAX 64

typedef struct QrdmaSent {
    uint64_t wr_id;
    uint32_t len;
    uint32_t psns;                      /* PSNs its packets take */
    uint8_t opcode;                     /* QRDMA_WR_* */
    bool signaled;
} QrdmaSent;

/*
 * A send WQE the requester or completer works on, copied out of guest
 * memory once and checked once, with the SGEs it names.
 */
typedef struct QrdmaWqeCache {
    bool valid;
    uint32_t idx;
    uint32_t mr_gen;                    /* local iterator checked then */
    uint8_t status;                     /* of the checks: a WC status */
    uint64_t len;                       /* message length */
    struct qrdma_sq_wqe wqe;
    QrdmaIter local;                    /* source, or READ/atomic sink */
} QrdmaWqeCache;

/*
 * The WQEs a QP keeps read, each in slot idx % QRDMA_WQE_CACHE_SLOTS: the
 * requester runs ahead of the completer by the WQEs in flight, and with
 * pipelined READs the responses for the oldest arrive while the
 * requester reads the newest.  Room for twice the READs a QP commonly has
 * in flight (16), as the requester reads a WQE before it knows that the
 * READs in flight are all it may have.
 */
#define QRDMA_WQE_CACHE_SLOTS 32

typedef struct QrdmaQp {
    uint32_t qpn;
    uint32_t uctx;
    uint32_t pd;
    uint8_t type;
    uint8_t state;
    bool sq_sig_all;
    uint32_t send_cq;
    uint32_t recv_cq;
    uint32_t srq;
    uint32_t sq_log2;
    uint32_t rq_log2;
    struct qrdma_create_qp_resp cap;
    struct qrdma_qp_attr attr;          /* the values last set */
    uint32_t mcast_attached;
    uint32_t windows;                   /* type 2 windows bound to it */
    QrdmaPages sq;
    QrdmaPages rq;

    /* data path */
    uint32_t sq_pi;                     /* last doorbell value */
    uint32_t sq_ci;                     /* WQEs complete */
    uint32_t rq_pi;
    uint32_t rq_ci;
    bool queued;                        /* on the device's work list */
    bool comm_est;                      /* first message seen */
    bool fatal;                         /* lost a completion: QP_FATAL */
    uint8_t engines;                    /* QRDMA_ENGINE_*: those running */
    uint32_t mtu;                       /* of its packets, from path_mtu */
    QrdmaReq req;
    QrdmaComp comp;
    QrdmaResp resp;
    /*
     * QRDMA_WQE_CACHE_SLOTS, once the QP has work to read: a QP that
     * never posts (as most of thousands may not) holds none.
     */
    QrdmaWqeCache *wqe;
    QrdmaSent *sent;                    /* QRDMA_SENT_MAX, by SQ index */
    QEMUTimer *timer;                   /* the completer's RNR or retry wait */
    struct QrdmaCore *core;
    QSIMPLEQ_ENTRY(QrdmaQp) next;
} QrdmaQp;

typedef struct QrdmaAh {
    uint32_t handle;
    uint32_t uctx;
    uint32_t pd;
    struct qrdma_av av;
} QrdmaAh;

typedef struct QrdmaMcast {
    uint8_t gid[16];
    uint32_t nqp;
    uint32_t *qpn;                      /* max_mcast_qp_attach entries */
} QrdmaMcast;

/*
 * The live resources as the migration stream carries them
 * (qrdma_migration.c): the slots and generations of each table, the
 * objects in it packed densely, their page lists and multicast members
 * in flat arrays that the objects' counts slice.
 */
typedef enum QrdmaResKindIdx {
    QRDMA_MIG_UCTX,
    QRDMA_MIG_PD,
    QRDMA_MIG_MR,
    QRDMA_MIG_MW,
    QRDMA_MIG_CQ,
    QRDMA_MIG_SRQ,
    QRDMA_MIG_QP,
    QRDMA_MIG_AH,
    QRDMA_MIG_MCAST,
    QRDMA_MIG_TABLES,
} QrdmaResKindIdx;

typedef struct QrdmaMigTable {
    const QrdmaTable *table;            /* the device's, which it mirrors */
    uint32_t max;
    uint32_t next;
    uint8_t *gen;                       /* max entries */
    uint32_t n;                         /* live objects */
    uint32_t *slot;                     /* n entries: where each lives */
} QrdmaMigTable;

/* What a QP has beside the struct: its send records, its timer. */
typedef struct QrdmaMigQp {
    QrdmaQp qp;
    QrdmaSent sent[QRDMA_SENT_MAX];
    int64_t deadline;                   /* of its timer; -1: not running */
} QrdmaMigQp;

typedef struct QrdmaMigImage {
    struct QrdmaCore *core;
    /* Holds what a load brought, not page lists the tables own. */
    bool loaded;
    QrdmaMigTable t[QRDMA_MIG_TABLES];
    uint32_t npages;
    uint64_t *pages;                    /* of MRs, then of every ring */
    uint32_t nmembers;
    uint32_t *members;                  /* of multicast groups */
    QrdmaUctx *uctx;
    QrdmaPd *pd;
    QrdmaMr *mr;
    QrdmaMw *mw;
    QrdmaCq *cq;
    QrdmaSrq *srq;
    QrdmaMigQp *qp;
    QrdmaAh *ah;
    QrdmaMcast *mcast;
} QrdmaMigImage;

/* Device limits, set by properties and fixed at realize. */
typedef struct QrdmaLimits {
    uint32_t max_uctx;
    uint32_t max_pd;
    uint32_t max_mr;
    uint32_t max_mr_pages;
    uint32_t max_mr_pages_total;        /* of all MRs together */
    uint32_t max_mw;
    uint32_t max_cq;
    uint32_t max_cqe;
    uint32_t max_qp;
    uint32_t max_qp_wr;
    uint32_t max_srq;
    uint32_t max_srq_wr;
    uint32_t max_ah;
    uint32_t max_mcast_grp;
    uint32_t max_mcast_qp_attach;
} QrdmaLimits;

typedef struct QrdmaCmdq {
    uint64_t base;
    uint32_t log2;
    uint32_t pi;                        /* last value the driver wrote */
    uint32_t ci;
    uint64_t cmpq_base;
    QEMUBH *bh;
    const char *cur_name;               /* of the command executing */
} QrdmaCmdq;

typedef struct QrdmaEthRing {
    uint64_t base;
    uint32_t log2;
    uint32_t pi;
    uint32_t ci;
} QrdmaEthRing;

/* A frame for the Ethernet function that waits for a posted RX buffer. */
typedef struct QrdmaEthFrame {
    QSIMPLEQ_ENTRY(QrdmaEthFrame) next;
    size_t len;
    uint8_t data[];
} QrdmaEthFrame;

typedef struct QrdmaEth {
    NICState *nic;
    NICConf conf;
    uint32_t ctrl;
    uint32_t irq_vector;
    QrdmaEthRing tx;
    QrdmaEthRing rx;
    QEMUBH *tx_bh;
    /* not migrated: frames lost in a migration, as on a wire */
    QSIMPLEQ_HEAD(, QrdmaEthFrame) rx_backlog;
    uint32_t rx_backlog_len;
} QrdmaEth;

typedef struct QrdmaEq {
    uint64_t base;
    uint32_t log2;
    uint32_t pi;
    uint32_t ci;
    uint32_t ctrl;
} QrdmaEq;

typedef struct QrdmaCounters {
    uint64_t wqes;
    uint64_t events_dropped;
    uint64_t cmds;
    uint64_t cmd_errors;
    uint64_t guest_errors;
    uint64_t eth_tx_frames;
    uint64_t eth_rx_frames;
    uint64_t eth_rx_dropped;
    uint64_t eth_tx_dropped;
    uint64_t sq_deferred;               /* doorbells left to the bottom half */
    /* the transport */
    uint64_t pkts_sent;
    uint64_t pkts_rcvd;
    uint64_t pkts_dropped;              /* for no QP, or not expected */
    uint64_t dup_reqs;                  /* duplicate requests */
    uint64_t out_of_seq;                /* requests ahead of the PSN */
    uint64_t seq_naks_sent;
    uint64_t seq_naks_rcvd;
    uint64_t rnr_naks_sent;
    uint64_t rnr_naks_rcvd;
    uint64_t retransmits;               /* ACK timeouts with retries left */
    uint64_t early_retries;             /* retries before the timeout */
    uint64_t retry_exceeded;
    /* frames from the wire dropped before the engines saw them */
    uint64_t icrc_errors;
    uint64_t wire_malformed;            /* headers short, inconsistent */
    uint64_t ud_duplicates;             /* also counted in dup_reqs */
    /* requests dropped while their QP answered a READ: too many waited */
    uint64_t held_dropped;
    /* duplicate requests no responder resource matched: not answered */
    uint64_t dup_unmatched;
    /* ACKs of all taken not sent: ePSN - 1 was a response's */
    uint64_t acks_withheld;
    /* the same-host link: its packets, also counted in pkts_* above */
    uint64_t link_pkts_sent;
    uint64_t link_pkts_rcvd;
    uint64_t link_tx_dropped;           /* its ring full */
    uint64_t link_errors;               /* the peer broke a rule, or hung */
    uint64_t link_ups;
    uint64_t link_pkts_one_copy;        /* sent: the peer read guest RAM */
} QrdmaCounters;

/* A UD packet lately taken from the wire: see qrdma_wire_ud_seen(). */
typedef struct QrdmaUdSeen {
    uint64_t key;
    int64_t when;
} QrdmaUdSeen;

/* 64 sets of 4: a packet is looked for among the 4 of its set only. */
#define QRDMA_UD_SEEN_SET_BITS 6
#define QRDMA_UD_SEEN_WAYS 4
#define QRDMA_UD_SEEN_MAX (QRDMA_UD_SEEN_WAYS << QRDMA_UD_SEEN_SET_BITS)

/*
 * The device logic.  It takes this struct, never the QOM object, so that
 * the PCI glue in qrdma.c stays the only place that knows about QOM.
 */
typedef struct QrdmaCore {
    PCIDevice *owner;

    /* configuration, fixed at realize */
    uint16_t msix_vectors;
    QrdmaLimits limits;

    /* registers */
    uint32_t dev_ctrl;
    uint32_t dev_status;
    uint32_t config_err;
    QrdmaCmdq cmdq;

    QrdmaEth eth;

    /* resources */
    QrdmaTable uctx_table;
    QrdmaUctx *uctx;
    QrdmaTable pd_table;
    QrdmaPd *pd;
    QrdmaTable mr_table;
    QrdmaMr *mr;
    QrdmaTable mw_table;
    QrdmaMw *mw;
    QrdmaTable cq_table;
    QrdmaCq *cq;
    QrdmaTable srq_table;
    QrdmaSrq *srq;
    QrdmaTable qp_table;
    QrdmaQp *qp;
    QrdmaTable ah_table;
    QrdmaAh *ah;
    QrdmaTable mcast_table;
    QrdmaMcast *mcast;
    GHashTable *mcast_index;            /* a group's GID -> its slot + 1 */
    struct qrdma_gid_entry gid[QRDMA_GID_TABLE_LEN];
    uint64_t mr_pages_in_use;           /* page list entries of all MRs */

    QrdmaEq eq[QRDMA_MSIX_VECTORS_MAX];
    uint64_t irq_pending;               /* vectors to notify, one bit each */
    QEMUBH *irq_bh;
    bool port_up;                       /* as last reported to the driver */
    QEMUBH *dp_bh;
    QSIMPLEQ_HEAD(, QrdmaQp) work;      /* QPs with send work to do */
    QSIMPLEQ_HEAD(, QrdmaQp) answers;   /* QPs with a READ to answer */
    uint64_t held_bytes;                /* of every QrdmaHeldPkt */
    QrdmaFabric *fabric_link;           /* the "fabric" property, or NULL */
    QrdmaFabricPort port;               /* the loopback transport */
    const QrdmaTransportOps *xport;     /* what carries packets */
    uint32_t wire_queued;               /* frames the netdev holds back */
    QrdmaLink link;                     /* the "link" property's */
    QrdmaUdSeen ud_seen[QRDMA_UD_SEEN_MAX];
    uint64_t ud_seen_salt;              /* odd, drawn at realize */
    uint32_t mr_gen;                    /* bumped when access is taken away */
    QrdmaDmaCache dma;

    QrdmaCounters counters;
    /*
     * The VM runs: while it is stopped (for a migration's last pass, a
     * savevm) nothing is sent, taken in or written to guest memory.
     */
    bool running;
    VMChangeStateEntry *vm_state;
    QrdmaMigImage mig;
} QrdmaCore;

struct QrdmaState {
    PCIDevice parent_obj;

    MemoryRegion mmio;
    MemoryRegion doorbells;
    QrdmaCore core;
};

/* qrdma_core.c */
void qrdma_core_realize(QrdmaCore *core, PCIDevice *owner, Error **errp);
void qrdma_core_unrealize(QrdmaCore *core);
void qrdma_core_reset(QrdmaCore *core);
uint64_t qrdma_core_mmio_read(QrdmaCore *core, hwaddr addr, unsigned size);
void qrdma_core_mmio_write(QrdmaCore *core, hwaddr addr, uint64_t val,
                           unsigned size);
uint64_t qrdma_core_db_read(QrdmaCore *core, hwaddr addr, unsigned size);
void qrdma_core_db_write(QrdmaCore *core, hwaddr addr, uint64_t val,
                         unsigned size);
bool qrdma_core_post_load(QrdmaCore *core);
void qrdma_fatal(QrdmaCore *core, uint32_t why);

/* qrdma_eth.c */
void qrdma_eth_realize(QrdmaCore *core, DeviceState *dev,
                       MemReentrancyGuard *guard, Error **errp);
void qrdma_eth_unrealize(QrdmaCore *core);
void qrdma_eth_reset(QrdmaCore *core);
/*
 * Register accessors for the ETH_* registers.  The caller has checked the
 * access against the register table: reg is the offset of a register of
 * the Ethernet function, and a write gets the whole new register value
 * (for a 64-bit register written in halves, the other half is the old one).
 */
uint64_t qrdma_eth_reg_read(QrdmaCore *core, hwaddr reg);
void qrdma_eth_reg_write(QrdmaCore *core, hwaddr reg, uint64_t val);
bool qrdma_eth_link_up(QrdmaCore *core);
/* Checks the migrated Ethernet state as post_load does for the rest. */
bool qrdma_eth_post_load(QrdmaCore *core);
void qrdma_eth_resume(QrdmaCore *core);
extern const VMStateDescription qrdma_vmstate_eth;

/* qrdma_migration.c */
void qrdma_mig_init(QrdmaCore *core);
void qrdma_mig_cleanup(QrdmaCore *core);
extern const VMStateDescription qrdma_vmstate_resources;
extern const VMStateDescription qrdma_vmstate_counters;

#endif /* HW_RDMA_QRDMA_H */
