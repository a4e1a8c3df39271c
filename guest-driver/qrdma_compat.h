/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * qrdma: what differs between the kernels the driver builds for, from
 * Linux 6.1 on.  qrdma-config's feature tests say what this kernel has
 * (qrdma_config.h); the driver's files use the names below, never a
 * version number.
 */
#ifndef _QRDMA_COMPAT_H_
#define _QRDMA_COMPAT_H_

#include <rdma/ib_umem.h>
#include <rdma/ib_verbs.h>
#include <rdma/uverbs_ioctl.h>

#include "qrdma-hw.h"
#include "qrdma_config.h"

/*
 * Linux 6.2 brought IBA 1.5's FLUSH and ATOMIC_WRITE to ib_core.  Before,
 * neither the user verbs nor the completions can carry them: the device's
 * capabilities are not offered.
 */
#ifdef QRDMA_HAVE_FLUSH_ATOMIC_WRITE
#define QRDMA_DEV_CAPS_KERNEL_LACKS	0
#else
#define QRDMA_DEV_CAPS_KERNEL_LACKS	(QRDMA_DEV_CAP_ATOMIC_WRITE | \
					 QRDMA_DEV_CAP_FLUSH_GLOBAL)
#endif

/*
 * Linux 6.11 gives create_cq the uverbs attribute bundle, its udata
 * inside; before, the udata alone.
 */
#ifdef QRDMA_HAVE_CREATE_CQ_ATTRS
#define QRDMA_CREATE_CQ_UDATA	struct uverbs_attr_bundle
static inline struct ib_udata *
qrdma_create_cq_udata(struct uverbs_attr_bundle *attrs)
{
	return attrs ? &attrs->driver_udata : NULL;
}
#else
#define QRDMA_CREATE_CQ_UDATA	struct ib_udata
static inline struct ib_udata *qrdma_create_cq_udata(struct ib_udata *udata)
{
	return udata;
}
#endif

/*
 * Linux 6.17 tells reg_user_mr the DMA handle (TPH steering) the MR is to
 * use; qrdma has none to offer.
 */
#ifdef QRDMA_HAVE_REG_USER_MR_DMAH
#define QRDMA_REG_USER_MR_DMAH	struct ib_dmah *dmah,
#else
#define QRDMA_REG_USER_MR_DMAH
#endif

/* Newer kernels resize CQs for user space only, the size unsigned. */
#ifdef QRDMA_HAVE_RESIZE_USER_CQ
#define QRDMA_RESIZE_CQ_SIZE	unsigned int
#else
#define QRDMA_RESIZE_CQ_SIZE	int
#endif

static inline struct ib_umem *qrdma_umem_get(struct ib_device *ibdev,
					     unsigned long addr, size_t size,
					     int access)
{
#ifdef QRDMA_HAVE_IB_UMEM_GET_VA
	return ib_umem_get_va(ibdev, addr, size, access);
#else
	return ib_umem_get(ibdev, addr, size, access);
#endif
}

#endif /* _QRDMA_COMPAT_H_ */
