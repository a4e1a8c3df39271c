/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * qrdma: the driver's structures and the functions its files share.
 */
#ifndef _QRDMA_H_
#define _QRDMA_H_

#include <linux/interrupt.h>
#include <linux/kref.h>
#include <linux/netdevice.h>
#include <linux/pci.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>
#include <rdma/ib_umem.h>
#include <rdma/ib_verbs.h>
#include <rdma/uverbs_ioctl.h>

#include "qrdma-hw.h"
#include "qrdma-abi.h"
#include "qrdma_compat.h"
#include "qrdma_cmd.h"
#include "qrdma_cmdq.h"

#define DRV_MODULE_NAME		"qrdma"
#define QRDMA_PORT		1

/* The async event queue, on vector 0 with the command completions. */
#define QRDMA_ASYNC_EQ		0
/* "qrdma-comp65535@pci:" and a PCI name, with room to spare */
#define QRDMA_IRQ_NAME_LEN	48

struct qrdma_dev;
struct qrdma_eth;
struct qrdma_kah;

struct qrdma_eq {
	struct qrdma_dev *dev;
	struct qrdma_eqe *ring;
	dma_addr_t dma;
	u32 log2;
	u32 ci;				/* entries consumed, free running */
	u32 ci_batch;			/* entries consumed per EQ_CI write */
	u16 idx;			/* EQ number, the MSI-X vector */
	char irq_name[QRDMA_IRQ_NAME_LEN];
};

/* Counters the driver keeps; the device's come from QUERY_STATS. */
struct qrdma_sw_stats {
	atomic64_t async_events;
	atomic64_t comp_events;
	atomic64_t bad_events;		/* for handles that are not live */
	atomic64_t stale_cqes;		/* of QPs no longer live */
};

struct qrdma_dev {
	struct ib_device ibdev;
	struct pci_dev *pdev;
	void __iomem *regs;		/* BAR0 */
	void __iomem *kdb;		/* BAR2 page 0: the kernel's doorbells */
	resource_size_t db_bar_addr;
	u32 db_pages;			/* doorbell pages in BAR2 */
	u64 caps;
	/* The device executes work requests; else doorbells are refused. */
	bool data_path;

	struct qrdma_cmdq cmdq;
	struct qrdma_dev_attr attr;
	struct qrdma_port_info port;

	int num_vectors;
	char admin_irq_name[QRDMA_IRQ_NAME_LEN];
	struct qrdma_eq *eqs;		/* num_eqs of them, with the data path */
	int num_eqs;
	/*
	 * EQ 0 is read here: its handlers may sleep.  Destroy verbs flush
	 * it, from workqueues that may reclaim memory: so may this one.
	 */
	struct workqueue_struct *async_wq;
	struct work_struct async_work;

	struct qrdma_eth *eth;		/* the RoCE port's Ethernet function */
	struct net_device *netdev;
	struct delayed_work link_work;
	/* The port follows the netdev's state through these. */
	struct notifier_block netdev_nb;
	struct netdev_net_notifier netdev_nn;

	/*
	 * Events go to ib_core only while the ib_device is registered:
	 * ib_core runs a port event's cache update later, on its own
	 * workqueue, and that queries the port.  Protects what follows.
	 */
	struct mutex event_lock;
	bool ib_live;
	enum ib_port_state port_state;	/* last state seen */
	/* port_state changed before ib_live: ib_core may not know it */
	bool port_event_pending;
	bool fatal_reported;
	/* Reports DEVICE_FATAL for a command timeout, which may not sleep. */
	struct work_struct fatal_work;

	/* Makes and destroys the device AHs of kernel AHs (qrdma_kah). */
	struct workqueue_struct *ah_wq;
	/* Runs the QPs' ah_work: their sends that wait for an AH. */
	struct workqueue_struct *ah_post_wq;

	/* Consumer index records of kernel CQs. */
	struct dma_pool *ci_pool;

	/* Live objects by handle, for CQEs and events that name them. */
	struct xarray qp_xa;
	struct xarray cq_xa;
	struct xarray srq_xa;

	struct qrdma_sw_stats sw_stats;
};

struct qrdma_ucontext {
	struct ib_ucontext ibucontext;
	u32 handle;
	u32 db_page;
	struct rdma_user_mmap_entry *db_entry;
};

struct qrdma_user_mmap_entry {
	struct rdma_user_mmap_entry rdma_entry;
	resource_size_t address;
};

struct qrdma_pd {
	struct ib_pd ibpd;
	u32 pdn;
	u32 uctx;
	/* Device AHs of kernel AHs in the PD, destroyed or not (qrdma_kah) */
	atomic_t kahs;
};

struct qrdma_mr {
	struct ib_mr ibmr;
	u32 uctx;
	struct ib_umem *umem;
	/* Fast registration: the page list a REG_MR work request names. */
	__le64 *pages;
	dma_addr_t pages_dma;
	u32 max_pages;
	u32 npages;
};

struct qrdma_mw {
	struct ib_mw ibmw;
	u32 handle;
	u32 uctx;
};

/* Memory the kernel allocates for a ring the device reads or writes. */
struct qrdma_kring {
	void *buf;
	dma_addr_t dma;
	size_t size;			/* whole QRDMA_PAGE_SIZE pages */
};

struct qrdma_cq {
	struct ib_cq ibcq;
	u32 cqn;
	u32 uctx;
	u16 eq;
	u32 log2;
	/* Kernel CQs: the ring, the consumer index and its record. */
	spinlock_t lock;
	struct qrdma_kring ring;
	u32 ci;
	__le32 *ci_rec;
	dma_addr_t ci_dma;
	/*
	 * RESIZE_CQ is moving the entries: the poller keeps away and finds
	 * the CQ empty.  Arming meanwhile sets resize_notify, and the
	 * resize raises the completion event for the entries it moved.
	 */
	bool resizing;
	bool resize_notify;
	/*
	 * One RESIZE_CQ at a time: each swaps the ring the others would
	 * use, and ib_core lets them run at once.  Cleaning waits for it
	 * too, so that it finds the entries where the device left them.
	 */
	struct mutex resize_lock;
	/* User CQs: the pinned ring and consumer index record. */
	struct ib_umem *umem;
	struct ib_umem *ci_umem;
};

/*
 * A kernel work queue: SQ, RQ or SRQ ring and the driver's indices.
 *
 * The WQEs of a QP's queues carry their ring index as wr_id, and the
 * consumer's wr_id waits in wr_ids: a CQE then says exactly which WQE it
 * completes, signaled or not, so the ring space is known exactly.  An
 * SRQ's WQEs are taken by several QPs and complete out of ring order;
 * they carry the consumer's wr_id, and each completion frees one entry
 * (the device takes them in ring order, so the oldest is the one free).
 */
struct qrdma_wq {
	struct qrdma_kring ring;
	u32 log2;
	u32 max_sge;
	/* Protects pi, wr_ids and the ring entries the driver writes. */
	spinlock_t lock;
	u32 pi;				/* entries posted, free running */
	/*
	 * Entries known consumed, free running.  Written by the poller of
	 * the CQ the queue completes to (release), read by posters
	 * (acquire), who then reuse the slots below it.
	 */
	atomic_t ci;
	u64 *wr_ids;			/* QP queues only */
	/*
	 * SRQs, while MODIFY_SRQ moves the queue to a new ring: the device
	 * reads the old ring until the command executes and the new one
	 * afterwards, so posters write each WQE into both.  Under lock.
	 */
	struct qrdma_kring *next_ring;
	u32 next_log2;
};

/*
 * A UD send WQE of a kernel QP, written to the ring, that names an AH the
 * device has not made yet: the QP's doorbell stays before it until the
 * QP's ah_work has written the AH's handle into it.
 */
struct qrdma_ah_wait {
	struct list_head list;
	struct qrdma_kah *kah;
	u32 index;			/* the WQE's, free running */
};

struct qrdma_qp {
	struct ib_qp ibqp;
	u32 qpn;
	u32 uctx;
	/* Serialises modify_qp; the state as the driver last set it. */
	struct mutex state_lock;
	enum ib_qp_state state;
	bool sq_sig_all;
	u32 max_inline_data;
	struct qrdma_wq sq;
	/* Kernel QPs, under sq.lock: the SQ index the device was given */
	u32 sq_db;
	/* ...and the WQEs from there on waiting for their AH, in order */
	struct list_head ah_waits;
	struct work_struct ah_work;
	struct qrdma_wq rq;		/* unused with an SRQ */
	struct ib_umem *sq_umem;
	struct ib_umem *rq_umem;
};

struct qrdma_srq {
	struct ib_srq ibsrq;
	u32 srqn;
	u32 uctx;
	struct qrdma_wq rq;
	struct ib_umem *umem;
	/* One resize at a time: each swaps the ring the others would use. */
	struct mutex resize_lock;
};

/*
 * The device's AH of a kernel AH.  The kernel's CM creates and destroys
 * AHs where it cannot sleep, while a command means waiting for the
 * device: the commands of kernel AHs are not waited for there.  Those
 * created so are made by a work item (dev->ah_wq), and a UD send that
 * names one in the meantime waits in its ring (struct qrdma_ah_wait);
 * all are destroyed by a work item, once nothing names them.
 */
struct qrdma_kah {
	/* The ib_ah's, the make work's, and each waiting WQE's */
	struct kref ref;
	struct qrdma_dev *dev;
	struct qrdma_pd *pd;
	struct qrdma_av_params av;
	struct work_struct make_work;
	struct work_struct destroy_work;
	struct completion made;
	/* Once made: the device's handle, QRDMA_HANDLE_NONE if it failed */
	u32 handle;
	int err;
};

struct qrdma_ah {
	struct ib_ah ibah;
	u32 handle;			/* user AHs */
	u32 uctx;
	struct qrdma_kah *kah;		/* kernel AHs */
};

static inline struct qrdma_dev *to_qdev(struct ib_device *ibdev)
{
	return container_of(ibdev, struct qrdma_dev, ibdev);
}

static inline struct qrdma_ucontext *to_quctx(struct ib_ucontext *ibuctx)
{
	return container_of(ibuctx, struct qrdma_ucontext, ibucontext);
}

static inline struct qrdma_user_mmap_entry *
to_qmmap(struct rdma_user_mmap_entry *rdma_entry)
{
	return container_of(rdma_entry, struct qrdma_user_mmap_entry,
			    rdma_entry);
}

static inline struct qrdma_pd *to_qpd(struct ib_pd *ibpd)
{
	return container_of(ibpd, struct qrdma_pd, ibpd);
}

static inline struct qrdma_mr *to_qmr(struct ib_mr *ibmr)
{
	return container_of(ibmr, struct qrdma_mr, ibmr);
}

static inline struct qrdma_mw *to_qmw(struct ib_mw *ibmw)
{
	return container_of(ibmw, struct qrdma_mw, ibmw);
}

static inline struct qrdma_cq *to_qcq(struct ib_cq *ibcq)
{
	return container_of(ibcq, struct qrdma_cq, ibcq);
}

static inline struct qrdma_qp *to_qqp(struct ib_qp *ibqp)
{
	return container_of(ibqp, struct qrdma_qp, ibqp);
}

static inline struct qrdma_srq *to_qsrq(struct ib_srq *ibsrq)
{
	return container_of(ibsrq, struct qrdma_srq, ibsrq);
}

static inline struct qrdma_ah *to_qah(struct ib_ah *ibah)
{
	return container_of(ibah, struct qrdma_ah, ibah);
}

/* The owner handle of the commands issued for a verb's caller. */
static inline u32 qrdma_udata_uctx(struct ib_udata *udata)
{
	struct qrdma_ucontext *uctx;

	uctx = rdma_udata_to_drv_context(udata, struct qrdma_ucontext,
					 ibucontext);
	return uctx ? uctx->handle : QRDMA_UCTX_KERNEL;
}

/* qrdma_main.c */
u16 qrdma_comp_vector_to_eq(struct qrdma_dev *dev, int comp_vector);
void qrdma_sync_eq(struct qrdma_dev *dev, u16 eq);
void qrdma_drain_async_eq(struct qrdma_dev *dev);

/* qrdma_eth.c */
int qrdma_eth_init(struct qrdma_dev *dev);
void qrdma_eth_fini(struct qrdma_dev *dev);
void qrdma_eth_interrupt(struct qrdma_dev *dev);
void qrdma_eth_link_sync(struct qrdma_dev *dev);

/* qrdma_verbs.c */
int qrdma_query_device(struct ib_device *ibdev, struct ib_device_attr *props,
		       struct ib_udata *udata);
int qrdma_query_port(struct ib_device *ibdev, u32 port,
		     struct ib_port_attr *props);
int qrdma_query_pkey(struct ib_device *ibdev, u32 port, u16 index,
		     u16 *pkey);
int qrdma_get_port_immutable(struct ib_device *ibdev, u32 port,
			     struct ib_port_immutable *immutable);
enum rdma_link_layer qrdma_get_link_layer(struct ib_device *ibdev, u32 port);
void qrdma_get_dev_fw_str(struct ib_device *ibdev, char *str);
int qrdma_add_gid(const struct ib_gid_attr *attr, void **context);
int qrdma_del_gid(const struct ib_gid_attr *attr, void **context);
int qrdma_alloc_ucontext(struct ib_ucontext *ibuctx, struct ib_udata *udata);
void qrdma_dealloc_ucontext(struct ib_ucontext *ibuctx);
void qrdma_disassociate_ucontext(struct ib_ucontext *ibuctx);
int qrdma_mmap(struct ib_ucontext *ibuctx, struct vm_area_struct *vma);
void qrdma_mmap_free(struct rdma_user_mmap_entry *rdma_entry);
int qrdma_alloc_pd(struct ib_pd *ibpd, struct ib_udata *udata);
int qrdma_dealloc_pd(struct ib_pd *ibpd, struct ib_udata *udata);
struct ib_mr *qrdma_get_dma_mr(struct ib_pd *ibpd, int access);
struct ib_mr *qrdma_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 length,
				u64 virt_addr, int access,
				QRDMA_REG_USER_MR_DMAH
				struct ib_udata *udata);
struct ib_mr *qrdma_alloc_mr(struct ib_pd *ibpd, enum ib_mr_type mr_type,
			     u32 max_num_sg);
int qrdma_map_mr_sg(struct ib_mr *ibmr, struct scatterlist *sg, int sg_nents,
		    unsigned int *sg_offset);
int qrdma_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata);
int qrdma_alloc_mw(struct ib_mw *ibmw, struct ib_udata *udata);
int qrdma_dealloc_mw(struct ib_mw *ibmw);
int qrdma_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		    QRDMA_CREATE_CQ_UDATA *udata_or_attrs);
int qrdma_resize_cq(struct ib_cq *ibcq, QRDMA_RESIZE_CQ_SIZE cqe,
		    struct ib_udata *udata);
int qrdma_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata);
int qrdma_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *init_attr,
		    struct ib_udata *udata);
int qrdma_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr,
		    int attr_mask, struct ib_udata *udata);
int qrdma_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int attr_mask,
		   struct ib_qp_init_attr *init_attr);
int qrdma_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata);
int qrdma_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *init_attr,
		     struct ib_udata *udata);
int qrdma_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
		     enum ib_srq_attr_mask attr_mask, struct ib_udata *udata);
int qrdma_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr);
int qrdma_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata);
int qrdma_create_ah(struct ib_ah *ibah, struct rdma_ah_init_attr *init_attr,
		    struct ib_udata *udata);
int qrdma_destroy_ah(struct ib_ah *ibah, u32 flags);
int qrdma_attach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid);
int qrdma_detach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid);
struct rdma_hw_stats *qrdma_alloc_hw_port_stats(struct ib_device *ibdev,
						u32 port);
int qrdma_get_hw_stats(struct ib_device *ibdev, struct rdma_hw_stats *stats,
		       u32 port, int index);

/* qrdma_dp.c: the kernel's data path */
int qrdma_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		    const struct ib_send_wr **bad_wr);
int qrdma_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		    const struct ib_recv_wr **bad_wr);
int qrdma_post_srq_recv(struct ib_srq *ibsrq, const struct ib_recv_wr *wr,
			const struct ib_recv_wr **bad_wr);
int qrdma_poll_cq(struct ib_cq *ibcq, int num_entries, struct ib_wc *wc);
int qrdma_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags);
void qrdma_cq_clean(struct qrdma_cq *cq, struct qrdma_qp *qp);
bool qrdma_cq_has_cqe(struct qrdma_cq *cq);
void qrdma_wq_reset(struct qrdma_wq *wq);
void qrdma_qp_ah_work(struct work_struct *work);
void qrdma_qp_drop_ah_waits(struct qrdma_qp *qp);
void qrdma_kah_put(struct qrdma_kah *kah);

#endif /* _QRDMA_H_ */
