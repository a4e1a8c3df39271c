// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * qrdma verbs: everything but the kernel's data path (qrdma_dp.c).
 *
 * Every object is created by a device command on behalf of its owner: the
 * kernel (user context 0) or the user context of the process.  What user
 * space hands in (udata, ring addresses, sizes) is checked here before it
 * reaches a command; the device checks again.
 */

#include <linux/dmapool.h>
#include <linux/log2.h>
#include <rdma/ib_addr.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_mad.h>
#include <rdma/ib_umem.h>
#include <rdma/iter.h>

#include "qrdma.h"

/* The page sizes an MR may use: QRDMA_PAGE_SIZE to 1 GiB. */
#define QRDMA_MR_PAGE_SIZES	GENMASK_ULL(30, QRDMA_PAGE_SHIFT)

/* The IB values are the device's: they pass unchanged. */
static_assert(IB_ACCESS_LOCAL_WRITE == QRDMA_ACCESS_LOCAL_WRITE);
static_assert(IB_ACCESS_REMOTE_WRITE == QRDMA_ACCESS_REMOTE_WRITE);
static_assert(IB_ACCESS_REMOTE_READ == QRDMA_ACCESS_REMOTE_READ);
static_assert(IB_ACCESS_REMOTE_ATOMIC == QRDMA_ACCESS_REMOTE_ATOMIC);
static_assert(IB_ACCESS_MW_BIND == QRDMA_ACCESS_MW_BIND);
#ifdef QRDMA_HAVE_FLUSH_ATOMIC_WRITE
static_assert(IB_ACCESS_FLUSH_GLOBAL == QRDMA_ACCESS_FLUSH_GLOBAL);
#endif
static_assert(IB_QP_STATE == QRDMA_QP_ATTR_STATE);
static_assert(IB_QP_CUR_STATE == QRDMA_QP_ATTR_CUR_STATE);
static_assert(IB_QP_EN_SQD_ASYNC_NOTIFY == QRDMA_QP_ATTR_EN_SQD_ASYNC_NOTIFY);
static_assert(IB_QP_ACCESS_FLAGS == QRDMA_QP_ATTR_ACCESS_FLAGS);
static_assert(IB_QP_PKEY_INDEX == QRDMA_QP_ATTR_PKEY_INDEX);
static_assert(IB_QP_PORT == QRDMA_QP_ATTR_PORT);
static_assert(IB_QP_QKEY == QRDMA_QP_ATTR_QKEY);
static_assert(IB_QP_AV == QRDMA_QP_ATTR_AV);
static_assert(IB_QP_PATH_MTU == QRDMA_QP_ATTR_PATH_MTU);
static_assert(IB_QP_TIMEOUT == QRDMA_QP_ATTR_TIMEOUT);
static_assert(IB_QP_RETRY_CNT == QRDMA_QP_ATTR_RETRY_CNT);
static_assert(IB_QP_RNR_RETRY == QRDMA_QP_ATTR_RNR_RETRY);
static_assert(IB_QP_RQ_PSN == QRDMA_QP_ATTR_RQ_PSN);
static_assert(IB_QP_MAX_QP_RD_ATOMIC == QRDMA_QP_ATTR_MAX_QP_RD_ATOMIC);
static_assert(IB_QP_ALT_PATH == QRDMA_QP_ATTR_ALT_PATH);
static_assert(IB_QP_MIN_RNR_TIMER == QRDMA_QP_ATTR_MIN_RNR_TIMER);
static_assert(IB_QP_SQ_PSN == QRDMA_QP_ATTR_SQ_PSN);
static_assert(IB_QP_MAX_DEST_RD_ATOMIC == QRDMA_QP_ATTR_MAX_DEST_RD_ATOMIC);
static_assert(IB_QP_PATH_MIG_STATE == QRDMA_QP_ATTR_PATH_MIG_STATE);
static_assert(IB_QP_CAP == QRDMA_QP_ATTR_CAP);
static_assert(IB_QP_DEST_QPN == QRDMA_QP_ATTR_DEST_QPN);
static_assert((int)IB_QPS_RESET == (int)QRDMA_QPS_RESET &&
	      (int)IB_QPS_ERR == (int)QRDMA_QPS_ERR);

/* A page list in memory the device reads, for one command. */
struct qrdma_page_list {
	__le64 *pages;
	dma_addr_t dma;
	u32 npages;
};

static int qrdma_page_list_alloc(struct qrdma_dev *dev,
				 struct qrdma_page_list *pl, u32 npages)
{
	pl->npages = npages;
	pl->pages = dma_alloc_coherent(&dev->pdev->dev,
				       npages * sizeof(*pl->pages), &pl->dma,
				       GFP_KERNEL);
	return pl->pages ? 0 : -ENOMEM;
}

static void qrdma_page_list_free(struct qrdma_dev *dev,
				 struct qrdma_page_list *pl)
{
	if (!pl->pages)
		return;
	dma_free_coherent(&dev->pdev->dev, pl->npages * sizeof(*pl->pages),
			  pl->pages, pl->dma);
	pl->pages = NULL;
}

/* Pages of a ring of 2^log2 entries of @entry_size bytes. */
static u32 qrdma_ring_pages(u32 log2, u32 entry_size)
{
	return DIV_ROUND_UP((size_t)entry_size << log2, QRDMA_PAGE_SIZE);
}

static int qrdma_kring_alloc(struct qrdma_dev *dev, struct qrdma_kring *ring,
			     u32 npages, struct qrdma_page_list *pl)
{
	u32 i;
	int err;

	ring->size = (size_t)npages * QRDMA_PAGE_SIZE;
	ring->buf = dma_alloc_coherent(&dev->pdev->dev, ring->size, &ring->dma,
				       GFP_KERNEL);
	if (!ring->buf)
		return -ENOMEM;

	err = qrdma_page_list_alloc(dev, pl, npages);
	if (err) {
		dma_free_coherent(&dev->pdev->dev, ring->size, ring->buf,
				  ring->dma);
		ring->buf = NULL;
		return err;
	}
	for (i = 0; i < npages; i++)
		pl->pages[i] = cpu_to_le64(ring->dma + i * QRDMA_PAGE_SIZE);
	return 0;
}

static void qrdma_kring_free(struct qrdma_dev *dev, struct qrdma_kring *ring)
{
	if (ring->buf)
		dma_free_coherent(&dev->pdev->dev, ring->size, ring->buf,
				  ring->dma);
	ring->buf = NULL;
}

/* Pin a user ring of @npages pages at @va and list them for the device. */
static struct ib_umem *qrdma_uring_get(struct qrdma_dev *dev, u64 va,
				       u32 npages, struct qrdma_page_list *pl)
{
	struct ib_block_iter biter;
	struct ib_umem *umem;
	u32 i = 0;
	int err;

	if (!va || va & (QRDMA_PAGE_SIZE - 1)) {
		ibdev_dbg(&dev->ibdev, "ring address %#llx is not page aligned\n",
			  va);
		return ERR_PTR(-EINVAL);
	}
	umem = qrdma_umem_get(&dev->ibdev, va, (size_t)npages * QRDMA_PAGE_SIZE,
			      IB_ACCESS_LOCAL_WRITE);
	if (IS_ERR(umem)) {
		ibdev_dbg(&dev->ibdev, "cannot pin ring at %#llx: %ld\n", va,
			  PTR_ERR(umem));
		return umem;
	}
	if (ib_umem_num_dma_blocks(umem, QRDMA_PAGE_SIZE) != npages) {
		err = -EINVAL;
		goto err_release;
	}
	err = qrdma_page_list_alloc(dev, pl, npages);
	if (err)
		goto err_release;
	rdma_umem_for_each_dma_block(umem, &biter, QRDMA_PAGE_SIZE)
		pl->pages[i++] = cpu_to_le64(rdma_block_iter_dma_address(&biter));
	return umem;

err_release:
	ib_umem_release(umem);
	return ERR_PTR(err);
}

/*
 * Copy the driver's part of a command from user space: at least @min_len
 * bytes, the fields the driver cannot do without; bytes past what this
 * driver knows must be zero (a newer provider asking for more).
 */
static int qrdma_copy_cmd(struct ib_device *ibdev, struct ib_udata *udata,
			  void *cmd, size_t cmd_len, size_t min_len)
{
	int err;

	if (udata->inlen < min_len) {
		ibdev_dbg(ibdev, "command too short: %zu < %zu bytes\n",
			  udata->inlen, min_len);
		return -EINVAL;
	}
	if (udata->inlen > cmd_len &&
	    !ib_is_udata_cleared(udata, cmd_len, udata->inlen - cmd_len)) {
		ibdev_dbg(ibdev, "unknown fields set past %zu bytes\n",
			  cmd_len);
		return -EOPNOTSUPP;
	}
	err = ib_copy_from_udata(cmd, udata, min(udata->inlen, cmd_len));
	if (err)
		ibdev_dbg(ibdev, "cannot read the command\n");
	return err;
}

static int qrdma_copy_resp(struct ib_device *ibdev, struct ib_udata *udata,
			   const void *resp, size_t len)
{
	int err;

	err = ib_copy_to_udata(udata, (void *)resp, min(len, udata->outlen));
	if (err)
		ibdev_dbg(ibdev, "cannot write the response\n");
	return err;
}

/* A verb that takes no driver data refuses any it is given. */
static bool qrdma_udata_is_empty(struct ib_device *ibdev,
				 struct ib_udata *udata)
{
	if (!udata || !udata->inlen ||
	    ib_is_udata_cleared(udata, 0, udata->inlen))
		return true;
	ibdev_dbg(ibdev, "unexpected driver data (%zu bytes)\n",
		  udata->inlen);
	return false;
}

/*
 * A destroy that failed because the device stopped answering leaves
 * nothing to undo: the command queue resets the device, which destroys
 * everything, before it fails a command.  Report it done so that memory
 * is freed.
 */
static int qrdma_destroy_result(int err)
{
	if (err == -ENODEV || err == -ETIMEDOUT)
		return 0;
	return err;
}

/*
 * The destroy of a kernel object cannot fail: ib_core frees the object
 * whatever the driver says (ib_free_cq, ib_dealloc_pd), and a ULP could
 * not do anything else with it anyway.  So when the device refuses one,
 * the object goes all the same, unlisted; the memory the device may
 * still read or write is left to it, leaked rather than freed under it.
 * True if the caller must keep that memory.  A user object's refusal
 * (S13, S20) goes back to user space, and the object stays as it was.
 */
static bool qrdma_kernel_destroy_refused(struct qrdma_dev *dev,
					 const char *what, u32 handle, int err)
{
	if (!err)
		return false;
	ibdev_err_ratelimited(&dev->ibdev,
			      "%s %#x of the kernel failed: %d; destroyed anyway, its memory left to the device\n",
			      what, handle, err);
	return true;
}

int qrdma_query_device(struct ib_device *ibdev, struct ib_device_attr *props,
		       struct ib_udata *udata)
{
	struct qrdma_dev *dev = to_qdev(ibdev);
	struct qrdma_dev_attr *attr = &dev->attr;

	if (!qrdma_udata_is_empty(ibdev, udata))
		return -EINVAL;

	memset(props, 0, sizeof(*props));
	props->fw_ver = attr->fw_ver;
	props->sys_image_guid = attr->node_guid;
	props->max_mr_size = attr->max_mr_size;
	props->page_size_cap = attr->page_size_cap & QRDMA_MR_PAGE_SIZES;
	props->vendor_id = attr->vendor_id;
	props->vendor_part_id = attr->vendor_part_id;
	props->hw_ver = attr->hw_ver;
	props->max_qp = attr->max_qp;
	props->max_qp_wr = attr->max_qp_wr;
	props->device_cap_flags = IB_DEVICE_MEM_MGT_EXTENSIONS |
				  IB_DEVICE_PORT_ACTIVE_EVENT |
				  IB_DEVICE_SYS_IMAGE_GUID;
	if (attr->device_caps & QRDMA_DEV_CAP_SRQ_RESIZE)
		props->device_cap_flags |= IB_DEVICE_SRQ_RESIZE;
#ifdef QRDMA_HAVE_FLUSH_ATOMIC_WRITE
	/* User space posts it (ibv_wr_atomic_write); kernel WRs cannot. */
	if (attr->device_caps & QRDMA_DEV_CAP_ATOMIC_WRITE)
		props->device_cap_flags |= IB_DEVICE_ATOMIC_WRITE;
	/*
	 * Global visibility only: guest memory is not made persistent, so
	 * ib_core refuses IB_ACCESS_FLUSH_PERSISTENT on MRs.
	 */
	if (attr->device_caps & QRDMA_DEV_CAP_FLUSH_GLOBAL)
		props->device_cap_flags |= IB_DEVICE_FLUSH_GLOBAL;
#endif
	/* User space binds them; kernel WRs have no bind any more. */
	if (attr->device_caps & QRDMA_DEV_CAP_MW) {
		props->device_cap_flags |= IB_DEVICE_MEM_WINDOW |
					   IB_DEVICE_MEM_WINDOW_TYPE_2B;
		props->max_mw = attr->max_mw;
	}
	props->kernel_cap_flags = IBK_LOCAL_DMA_LKEY;
	props->max_send_sge = attr->max_send_sge;
	props->max_recv_sge = attr->max_recv_sge;
	props->max_sge_rd = attr->max_sge_rd;
	props->max_cq = attr->max_cq;
	props->max_cqe = attr->max_cqe;
	props->max_mr = attr->max_mr;
	props->max_pd = attr->max_pd;
	props->max_qp_rd_atom = attr->max_qp_rd_atom;
	props->max_qp_init_rd_atom = attr->max_qp_init_rd_atom;
	props->max_res_rd_atom = attr->max_qp_rd_atom * attr->max_qp;
	props->atomic_cap = attr->atomic_cap ? IB_ATOMIC_HCA : IB_ATOMIC_NONE;
	props->max_mcast_grp = attr->max_mcast_grp;
	props->max_mcast_qp_attach = attr->max_mcast_qp_attach;
	props->max_total_mcast_qp_attach =
		attr->max_mcast_grp * attr->max_mcast_qp_attach;
	props->max_ah = attr->max_ah;
	props->max_srq = attr->max_srq;
	props->max_srq_wr = attr->max_srq_wr;
	props->max_srq_sge = attr->max_srq_sge;
	props->max_fast_reg_page_list_len = attr->max_fast_reg_page_list_len;
	props->max_pkeys = attr->max_pkeys;
	props->local_ca_ack_delay = attr->local_ca_ack_delay;
	return 0;
}

static enum ib_mtu qrdma_ib_mtu(u8 mtu)
{
	/* Never pass on a value the device should not have sent. */
	if (mtu < IB_MTU_256 || mtu > IB_MTU_4096)
		return IB_MTU_1024;
	return mtu;
}

int qrdma_query_port(struct ib_device *ibdev, u32 port,
		     struct ib_port_attr *props)
{
	struct qrdma_dev *dev = to_qdev(ibdev);
	struct net_device *netdev = dev->netdev;
	struct qrdma_port_info info;
	int err;

	err = qrdma_cmd_query_port(&dev->cmdq, port, &info);
	if (err) {
		ibdev_err_ratelimited(ibdev, "QUERY_PORT failed: %d\n", err);
		return err;
	}

	/* ib_core zeroed props. */
	props->state = IB_PORT_DOWN;
	props->phys_state = IB_PORT_PHYS_STATE_DISABLED;
	if (info.state == QRDMA_PORT_ACTIVE) {
		props->phys_state = IB_PORT_PHYS_STATE_LINK_UP;
		if (netif_running(netdev) && netif_carrier_ok(netdev))
			props->state = IB_PORT_ACTIVE;
	}
	props->max_mtu = qrdma_ib_mtu(info.max_mtu);
	/* As for any RoCE port: what a frame of the netdev's MTU carries. */
	props->active_mtu = min(qrdma_ib_mtu(info.max_mtu),
				iboe_get_mtu(READ_ONCE(netdev->mtu)));
	props->gid_tbl_len = info.gid_tbl_len;
	props->ip_gids = true;
	props->port_cap_flags = IB_PORT_CM_SUP;
	props->max_msg_sz = info.max_msg_sz;
	props->pkey_tbl_len = info.pkey_tbl_len;
	props->active_speed = info.active_speed;
	props->active_width = info.active_width;
	props->max_vl_num = 1;
	return 0;
}

int qrdma_query_pkey(struct ib_device *ibdev, u32 port, u16 index, u16 *pkey)
{
	if (index > 0)
		return -EINVAL;
	*pkey = IB_DEFAULT_PKEY_FULL;
	return 0;
}

int qrdma_get_port_immutable(struct ib_device *ibdev, u32 port,
			     struct ib_port_immutable *immutable)
{
	struct qrdma_dev *dev = to_qdev(ibdev);

	immutable->core_cap_flags = RDMA_CORE_PORT_IBA_ROCE_UDP_ENCAP;
	immutable->gid_tbl_len = dev->port.gid_tbl_len;
	immutable->pkey_tbl_len = dev->port.pkey_tbl_len;
	immutable->max_mad_size = IB_MGMT_MAD_SIZE;
	return 0;
}

enum rdma_link_layer qrdma_get_link_layer(struct ib_device *ibdev, u32 port)
{
	return IB_LINK_LAYER_ETHERNET;
}

void qrdma_get_dev_fw_str(struct ib_device *ibdev, char *str)
{
	struct qrdma_dev *dev = to_qdev(ibdev);

	snprintf(str, IB_FW_VERSION_NAME_MAX, "%u.%u",
		 QRDMA_VERSION_GET_MAJOR((u32)dev->attr.fw_ver),
		 QRDMA_VERSION_GET_MINOR((u32)dev->attr.fw_ver));
}

int qrdma_add_gid(const struct ib_gid_attr *attr, void **context)
{
	struct qrdma_dev *dev = to_qdev(attr->device);
	struct qrdma_gid_params params = { .index = attr->index };
	int err;

	/* The port is RoCE v2 only, so ib_core hands in nothing else. */
	if (attr->gid_type != IB_GID_TYPE_ROCE_UDP_ENCAP)
		return -EOPNOTSUPP;
	if (attr->index >= dev->port.gid_tbl_len)
		return -EINVAL;

	err = rdma_read_gid_l2_fields(attr, &params.vlan_id, params.mac);
	if (err)
		return err;
	memcpy(params.gid, attr->gid.raw, sizeof(params.gid));

	err = qrdma_cmd_set_gid(&dev->cmdq, &params);
	if (err)
		ibdev_err_ratelimited(&dev->ibdev, "SET_GID %u failed: %d\n",
				      attr->index, err);
	return err;
}

int qrdma_del_gid(const struct ib_gid_attr *attr, void **context)
{
	struct qrdma_dev *dev = to_qdev(attr->device);
	int err;

	if (attr->index >= dev->port.gid_tbl_len)
		return -EINVAL;
	err = qrdma_cmd_del_gid(&dev->cmdq, attr->index);
	if (err)
		ibdev_err_ratelimited(&dev->ibdev, "DEL_GID %u failed: %d\n",
				      attr->index, err);
	return qrdma_destroy_result(err);
}

int qrdma_alloc_ucontext(struct ib_ucontext *ibuctx, struct ib_udata *udata)
{
	struct qrdma_ucontext *uctx = to_quctx(ibuctx);
	struct qrdma_dev *dev = to_qdev(ibuctx->device);
	struct qrdma_ibv_alloc_ucontext_resp resp = {};
	struct qrdma_ibv_alloc_ucontext cmd = {};
	struct qrdma_user_mmap_entry *entry;
	struct qrdma_uctx_result result;
	int err;

	/* One doorbell page, and nothing else, per process. */
	if (PAGE_SIZE != QRDMA_DB_PAGE_SIZE) {
		ibdev_dbg(&dev->ibdev, "user contexts need 4 KiB pages\n");
		return -EOPNOTSUPP;
	}

	/* Older providers send no command. */
	err = qrdma_copy_cmd(&dev->ibdev, udata, &cmd, sizeof(cmd), 0);
	if (err)
		return err;
	if (cmd.comp_mask || cmd.reserved) {
		ibdev_dbg(&dev->ibdev, "unknown alloc_ucontext comp_mask %#x\n",
			  cmd.comp_mask);
		return -EOPNOTSUPP;
	}

	err = qrdma_cmd_create_uctx(&dev->cmdq, &result);
	if (err) {
		ibdev_dbg(&dev->ibdev, "CREATE_UCTX failed: %d\n", err);
		return err;
	}
	uctx->handle = result.handle;
	uctx->db_page = result.db_page;
	/* Page 0 is the kernel's: never map it, nor past the BAR. */
	if (!result.db_page || result.db_page >= dev->db_pages) {
		ibdev_err_ratelimited(&dev->ibdev,
				      "CREATE_UCTX gave doorbell page %u of %u\n",
				      result.db_page, dev->db_pages);
		err = -EIO;
		goto err_destroy_uctx;
	}

	entry = kzalloc(sizeof(*entry), GFP_KERNEL);
	if (!entry) {
		err = -ENOMEM;
		goto err_destroy_uctx;
	}
	entry->address = dev->db_bar_addr +
			 (resource_size_t)result.db_page * QRDMA_DB_PAGE_SIZE;
	err = rdma_user_mmap_entry_insert(ibuctx, &entry->rdma_entry,
					  PAGE_SIZE);
	if (err) {
		kfree(entry);
		goto err_destroy_uctx;
	}
	uctx->db_entry = &entry->rdma_entry;

	if (dev->data_path)
		resp.device_caps |= QRDMA_UCONTEXT_CAP_DATA_PATH;
	if (dev->data_path && dev->attr.device_caps & QRDMA_DEV_CAP_ATOMIC_WRITE)
		resp.device_caps |= QRDMA_UCONTEXT_CAP_ATOMIC_WRITE;
	if (dev->data_path && dev->attr.device_caps & QRDMA_DEV_CAP_FLUSH_GLOBAL)
		resp.device_caps |= QRDMA_UCONTEXT_CAP_FLUSH;
	if (dev->data_path && dev->attr.device_caps & QRDMA_DEV_CAP_MW)
		resp.device_caps |= QRDMA_UCONTEXT_CAP_MW;
	if (dev->attr.device_caps & QRDMA_DEV_CAP_CQE_VLAN)
		resp.device_caps |= QRDMA_UCONTEXT_CAP_CQE_VLAN;
	resp.db_mmap_key = rdma_user_mmap_get_offset(uctx->db_entry);
	resp.db_page_size = PAGE_SIZE;
	resp.ring_page_size = QRDMA_PAGE_SIZE;
	resp.sq_wqe_size = QRDMA_SQ_WQE_SIZE;
	resp.rq_wqe_size = QRDMA_RQ_WQE_SIZE;
	resp.cqe_size = QRDMA_CQE_SIZE;
	resp.max_qp_wr = dev->attr.max_qp_wr;
	resp.max_srq_wr = dev->attr.max_srq_wr;
	resp.max_cqe = dev->attr.max_cqe;
	resp.max_send_sge = dev->attr.max_send_sge;
	resp.max_recv_sge = dev->attr.max_recv_sge;
	resp.max_srq_sge = dev->attr.max_srq_sge;
	resp.max_inline_data = dev->attr.max_inline_data;
	err = qrdma_copy_resp(&dev->ibdev, udata, &resp, sizeof(resp));
	if (err)
		goto err_remove_mmap;
	return 0;

err_remove_mmap:
	/* Frees the entry through qrdma_mmap_free(). */
	rdma_user_mmap_entry_remove(uctx->db_entry);
err_destroy_uctx:
	qrdma_cmd_destroy_uctx(&dev->cmdq, uctx->handle);
	return err;
}

void qrdma_dealloc_ucontext(struct ib_ucontext *ibuctx)
{
	struct qrdma_ucontext *uctx = to_quctx(ibuctx);
	struct qrdma_dev *dev = to_qdev(ibuctx->device);
	int err;

	rdma_user_mmap_entry_remove(uctx->db_entry);
	/* ib_core destroyed the context's objects first. */
	err = qrdma_cmd_destroy_uctx(&dev->cmdq, uctx->handle);
	if (qrdma_destroy_result(err))
		ibdev_err_ratelimited(&dev->ibdev,
				      "DESTROY_UCTX %#x failed: %d\n",
				      uctx->handle, err);
}

/*
 * On device removal ib_core zaps the doorbell mappings and destroys the
 * objects itself; providing this lets it do so with processes still
 * running, instead of waiting for them.
 */
void qrdma_disassociate_ucontext(struct ib_ucontext *ibuctx)
{
}

int qrdma_mmap(struct ib_ucontext *ibuctx, struct vm_area_struct *vma)
{
	struct rdma_user_mmap_entry *rdma_entry;
	struct qrdma_user_mmap_entry *entry;
	int err;

	/* Also checks that the mapping has the entry's size. */
	rdma_entry = rdma_user_mmap_entry_get(ibuctx, vma);
	if (!rdma_entry) {
		ibdev_dbg(ibuctx->device, "no mapping at pgoff %#lx\n",
			  vma->vm_pgoff);
		return -EINVAL;
	}
	entry = to_qmmap(rdma_entry);

	err = rdma_user_mmap_io(ibuctx, vma, PHYS_PFN(entry->address),
				PAGE_SIZE, pgprot_noncached(vma->vm_page_prot),
				rdma_entry);
	if (err)
		ibdev_dbg(ibuctx->device, "cannot map the doorbell page: %d\n",
			  err);
	rdma_user_mmap_entry_put(rdma_entry);
	return err;
}

void qrdma_mmap_free(struct rdma_user_mmap_entry *rdma_entry)
{
	kfree(to_qmmap(rdma_entry));
}

int qrdma_alloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct qrdma_dev *dev = to_qdev(ibpd->device);
	struct qrdma_pd *pd = to_qpd(ibpd);
	int err;

	if (!qrdma_udata_is_empty(&dev->ibdev, udata))
		return -EINVAL;

	pd->uctx = qrdma_udata_uctx(udata);
	err = qrdma_cmd_alloc_pd(&dev->cmdq, pd->uctx, &pd->pdn);
	if (err)
		ibdev_dbg(&dev->ibdev, "ALLOC_PD failed: %d\n", err);
	return err;
}

int qrdma_dealloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct qrdma_dev *dev = to_qdev(ibpd->device);
	struct qrdma_pd *pd = to_qpd(ibpd);
	int err;

	/* The device refuses a PD its AHs use: wait for their destroy. */
	wait_var_event(&pd->kahs, !atomic_read(&pd->kahs));

	err = qrdma_destroy_result(qrdma_cmd_dealloc_pd(&dev->cmdq, pd->uctx,
							pd->pdn));
	if (err && pd->uctx) {
		ibdev_dbg(&dev->ibdev, "DEALLOC_PD %#x failed: %d\n", pd->pdn,
			  err);
		return err;
	}
	qrdma_kernel_destroy_refused(dev, "DEALLOC_PD", pd->pdn, err);
	return 0;
}

/* The QRDMA_ACCESS_* bits this device takes, for MRs and QPs. */
static u32 qrdma_access_mask(struct qrdma_dev *dev)
{
	u32 mask = QRDMA_ACCESS_VALID_MASK;

	if (!(dev->attr.device_caps & QRDMA_DEV_CAP_FLUSH_GLOBAL))
		mask &= ~QRDMA_ACCESS_FLUSH_GLOBAL;
	return mask;
}

static int qrdma_mr_access(struct ib_device *ibdev, int access, u32 *out)
{
	/* The optional flags are hints a device may ignore. */
	access &= ~IB_ACCESS_OPTIONAL;
	if (access & ~qrdma_access_mask(to_qdev(ibdev))) {
		ibdev_dbg(ibdev, "unsupported access flags %#x\n", access);
		return -EOPNOTSUPP;
	}
	*out = access;
	return 0;
}

struct ib_mr *qrdma_get_dma_mr(struct ib_pd *ibpd, int access)
{
	struct qrdma_dev *dev = to_qdev(ibpd->device);
	struct qrdma_pd *pd = to_qpd(ibpd);
	struct qrdma_reg_mr_params params = {
		.uctx = pd->uctx,
		.pd = pd->pdn,
		.dma = true,
	};
	struct qrdma_mr_keys keys;
	struct qrdma_mr *mr;
	int err;

	/*
	 * The kernel writes all of its memory through the local DMA lkey
	 * anyway; ib_alloc_pd() asks for remote access alone (unsafe global
	 * rkey), which the device, as IB says, refuses without local write.
	 */
	err = qrdma_mr_access(&dev->ibdev, access | IB_ACCESS_LOCAL_WRITE,
			      &params.access);
	if (err)
		return ERR_PTR(err);

	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		return ERR_PTR(-ENOMEM);

	err = qrdma_cmd_reg_mr(&dev->cmdq, &params, &keys);
	if (err) {
		ibdev_dbg(&dev->ibdev, "REG_MR (DMA) failed: %d\n", err);
		kfree(mr);
		return ERR_PTR(err);
	}
	mr->uctx = pd->uctx;
	mr->ibmr.lkey = keys.lkey;
	mr->ibmr.rkey = keys.rkey;
	return &mr->ibmr;
}

/*
 * The page sizes of @sizes whose pages stay within what @umem mapped.  The
 * device checks every page of an MR's list, whole, at registration.
 * Behind an IOMMU a umem is one range of bus addresses, and
 * ib_umem_find_best_pgsz() may choose a page larger than the MR, whose
 * first or last page then reaches into addresses nothing maps: the
 * device refuses the MR.  A page size that divides both ends of the
 * mapping keeps every page inside; between the ends,
 * ib_umem_find_best_pgsz() already keeps to the boundaries.
 */
static unsigned long qrdma_umem_page_sizes(struct ib_umem *umem,
					   unsigned long sizes)
{
	struct scatterlist *sg, *last = NULL;
	dma_addr_t start = 0, end;
	unsigned int i;

	for_each_sgtable_dma_sg(&umem->sgt_append.sgt, sg, i) {
		if (!last)
			start = sg_dma_address(sg);
		last = sg;
	}
	if (!last)
		return sizes;
	end = sg_dma_address(last) + sg_dma_len(last);
	return sizes & GENMASK_ULL(__ffs64(start | end), 0);
}

struct ib_mr *qrdma_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 length,
				u64 virt_addr, int access,
				QRDMA_REG_USER_MR_DMAH
				struct ib_udata *udata)
{
	struct qrdma_dev *dev = to_qdev(ibpd->device);
	struct qrdma_pd *pd = to_qpd(ibpd);
	struct qrdma_reg_mr_params params = {
		.uctx = pd->uctx,
		.pd = pd->pdn,
		.iova = virt_addr,
		.length = length,
	};
	struct qrdma_page_list pl;
	struct ib_block_iter biter;
	struct qrdma_mr_keys keys;
	unsigned long page_sizes, pgsz;
	struct qrdma_mr *mr;
	size_t npages;
	u32 i = 0;
	int err;

	if (!qrdma_udata_is_empty(&dev->ibdev, udata))
		return ERR_PTR(-EINVAL);
#ifdef QRDMA_HAVE_REG_USER_MR_DMAH
	if (dmah) {
		ibdev_dbg(&dev->ibdev, "MR with a DMA handle: none offered\n");
		return ERR_PTR(-EOPNOTSUPP);
	}
#endif
	err = qrdma_mr_access(&dev->ibdev, access, &params.access);
	if (err)
		return ERR_PTR(err);
	if (!length || length > dev->attr.max_mr_size ||
	    virt_addr + length < virt_addr) {
		ibdev_dbg(&dev->ibdev, "bad MR length %#llx at %#llx\n",
			  length, virt_addr);
		return ERR_PTR(-EINVAL);
	}

	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		return ERR_PTR(-ENOMEM);

	mr->umem = qrdma_umem_get(ibpd->device, start, length, access);
	if (IS_ERR(mr->umem)) {
		err = PTR_ERR(mr->umem);
		ibdev_dbg(&dev->ibdev, "cannot pin MR memory: %d\n", err);
		goto err_free_mr;
	}

	page_sizes = qrdma_umem_page_sizes(mr->umem, dev->attr.page_size_cap &
					   QRDMA_MR_PAGE_SIZES);
	pgsz = ib_umem_find_best_pgsz(mr->umem, page_sizes, virt_addr);
	if (!pgsz) {
		ibdev_dbg(&dev->ibdev, "no page size fits the MR\n");
		err = -EINVAL;
		goto err_release_umem;
	}
	npages = ib_umem_num_dma_blocks(mr->umem, pgsz);
	if (npages > dev->attr.max_mr_pages) {
		ibdev_dbg(&dev->ibdev, "MR of %zu pages of %lu bytes is too large\n",
			  npages, pgsz);
		err = -EINVAL;
		goto err_release_umem;
	}

	err = qrdma_page_list_alloc(dev, &pl, npages);
	if (err)
		goto err_release_umem;
	rdma_umem_for_each_dma_block(mr->umem, &biter, pgsz)
		pl.pages[i++] = cpu_to_le64(rdma_block_iter_dma_address(&biter));

	params.pages_dma = pl.dma;
	params.npages = npages;
	params.page_shift = __ffs(pgsz);
	err = qrdma_cmd_reg_mr(&dev->cmdq, &params, &keys);
	/* The device keeps its own copy of the list. */
	qrdma_page_list_free(dev, &pl);
	if (err) {
		ibdev_dbg(&dev->ibdev, "REG_MR failed: %d\n", err);
		goto err_release_umem;
	}

	mr->uctx = pd->uctx;
	mr->ibmr.lkey = keys.lkey;
	mr->ibmr.rkey = keys.rkey;
	return &mr->ibmr;

err_release_umem:
	ib_umem_release(mr->umem);
err_free_mr:
	kfree(mr);
	return ERR_PTR(err);
}

struct ib_mr *qrdma_alloc_mr(struct ib_pd *ibpd, enum ib_mr_type mr_type,
			     u32 max_num_sg)
{
	struct qrdma_dev *dev = to_qdev(ibpd->device);
	struct qrdma_pd *pd = to_qpd(ibpd);
	struct qrdma_mr_keys keys;
	struct qrdma_mr *mr;
	int err;

	if (mr_type != IB_MR_TYPE_MEM_REG) {
		ibdev_dbg(&dev->ibdev, "unsupported MR type %d\n", mr_type);
		return ERR_PTR(-EOPNOTSUPP);
	}
	if (!max_num_sg || max_num_sg > dev->attr.max_fast_reg_page_list_len) {
		ibdev_dbg(&dev->ibdev, "bad page list length %u\n",
			  max_num_sg);
		return ERR_PTR(-EINVAL);
	}

	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		return ERR_PTR(-ENOMEM);
	mr->max_pages = max_num_sg;
	mr->pages = dma_alloc_coherent(&dev->pdev->dev,
				       max_num_sg * sizeof(*mr->pages),
				       &mr->pages_dma, GFP_KERNEL);
	if (!mr->pages) {
		err = -ENOMEM;
		goto err_free_mr;
	}

	err = qrdma_cmd_alloc_mr(&dev->cmdq, pd->uctx, pd->pdn, max_num_sg,
				 &keys);
	if (err) {
		ibdev_dbg(&dev->ibdev, "ALLOC_MR failed: %d\n", err);
		goto err_free_pages;
	}
	mr->uctx = pd->uctx;
	mr->ibmr.lkey = keys.lkey;
	mr->ibmr.rkey = keys.rkey;
	return &mr->ibmr;

err_free_pages:
	dma_free_coherent(&dev->pdev->dev, max_num_sg * sizeof(*mr->pages),
			  mr->pages, mr->pages_dma);
err_free_mr:
	kfree(mr);
	return ERR_PTR(err);
}

static int qrdma_set_page(struct ib_mr *ibmr, u64 addr)
{
	struct qrdma_mr *mr = to_qmr(ibmr);

	if (mr->npages >= mr->max_pages)
		return -ENOMEM;
	mr->pages[mr->npages++] = cpu_to_le64(addr);
	return 0;
}

int qrdma_map_mr_sg(struct ib_mr *ibmr, struct scatterlist *sg, int sg_nents,
		    unsigned int *sg_offset)
{
	struct qrdma_mr *mr = to_qmr(ibmr);

	mr->npages = 0;
	return ib_sg_to_pages(ibmr, sg, sg_nents, sg_offset, qrdma_set_page);
}

/*
 * DEREG_MR names an MR by the key the device holds.  For a fast
 * registration MR that is the key of the last REG_MR work request the
 * device carried out, not ibmr->lkey if that one failed:
 * ib_update_fast_reg_key() sets the new key before the post.  The slot
 * (the key above its low byte) stays this MR's until DEREG_MR succeeds,
 * so when the device does not know ibmr->lkey, the key byte it holds is
 * looked for, newest first.
 */
static int qrdma_dereg_fast_reg_mr(struct qrdma_dev *dev, struct qrdma_mr *mr)
{
	u32 key = mr->ibmr.lkey;
	int err, i;

	err = qrdma_cmd_dereg_mr(&dev->cmdq, mr->uctx, key);
	for (i = 1; err == -EINVAL && i < 256; i++)
		err = qrdma_cmd_dereg_mr(&dev->cmdq, mr->uctx,
					 (key & ~0xffU) | ((key - i) & 0xff));
	return err;
}

int qrdma_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata)
{
	struct qrdma_dev *dev = to_qdev(ibmr->device);
	struct qrdma_mr *mr = to_qmr(ibmr);
	int err;

	if (mr->pages)
		err = qrdma_dereg_fast_reg_mr(dev, mr);
	else
		err = qrdma_cmd_dereg_mr(&dev->cmdq, mr->uctx, ibmr->lkey);
	err = qrdma_destroy_result(err);
	if (err && mr->uctx) {
		ibdev_dbg(&dev->ibdev, "DEREG_MR %#x failed: %d\n", ibmr->lkey,
			  err);
		return err;
	}
	/* The device may still read a fast-registration page list. */
	if (qrdma_kernel_destroy_refused(dev, "DEREG_MR", ibmr->lkey, err))
		mr->pages = NULL;
	if (mr->pages)
		dma_free_coherent(&dev->pdev->dev,
				  mr->max_pages * sizeof(*mr->pages),
				  mr->pages, mr->pages_dma);
	ib_umem_release(mr->umem);
	kfree(mr);
	return 0;
}

/* The device's window types are the IB values. */
static_assert(IB_MW_TYPE_1 == QRDMA_MW_TYPE_1);
static_assert(IB_MW_TYPE_2 == QRDMA_MW_TYPE_2);

int qrdma_alloc_mw(struct ib_mw *ibmw, struct ib_udata *udata)
{
	struct qrdma_dev *dev = to_qdev(ibmw->device);
	struct qrdma_pd *pd = to_qpd(ibmw->pd);
	struct qrdma_mw *mw = to_qmw(ibmw);
	struct qrdma_mw_result result;
	int err;

	if (!qrdma_udata_is_empty(&dev->ibdev, udata))
		return -EINVAL;
	if (!(dev->attr.device_caps & QRDMA_DEV_CAP_MW))
		return -EOPNOTSUPP;
	if (ibmw->type != IB_MW_TYPE_1 && ibmw->type != IB_MW_TYPE_2) {
		ibdev_dbg(&dev->ibdev, "bad MW type %d\n", ibmw->type);
		return -EINVAL;
	}

	err = qrdma_cmd_alloc_mw(&dev->cmdq, pd->uctx, pd->pdn, ibmw->type,
				 &result);
	if (err) {
		ibdev_dbg(&dev->ibdev, "ALLOC_MW failed: %d\n", err);
		return err;
	}
	mw->handle = result.handle;
	mw->uctx = pd->uctx;
	ibmw->rkey = result.rkey;
	return 0;
}

int qrdma_dealloc_mw(struct ib_mw *ibmw)
{
	struct qrdma_dev *dev = to_qdev(ibmw->device);
	struct qrdma_mw *mw = to_qmw(ibmw);
	int err;

	err = qrdma_destroy_result(qrdma_cmd_dealloc_mw(&dev->cmdq, mw->uctx,
							mw->handle));
	if (err)
		ibdev_dbg(&dev->ibdev, "DEALLOC_MW %#x failed: %d\n",
			  mw->handle, err);
	return err;
}

static void qrdma_cq_free_rings(struct qrdma_dev *dev, struct qrdma_cq *cq)
{
	qrdma_kring_free(dev, &cq->ring);
	if (cq->ci_rec)
		dma_pool_free(dev->ci_pool, cq->ci_rec, cq->ci_dma);
	cq->ci_rec = NULL;
	ib_umem_release(cq->umem);
	ib_umem_release(cq->ci_umem);
	cq->umem = NULL;
	cq->ci_umem = NULL;
}

/* The bus address of user memory at @va, pinned in @umem. */
static dma_addr_t qrdma_umem_dma(struct ib_umem *umem, u64 va)
{
	struct ib_block_iter biter;

	rdma_umem_for_each_dma_block(umem, &biter, PAGE_SIZE)
		return rdma_block_iter_dma_address(&biter) +
		       (va & ~PAGE_MASK);
	return 0;
}

static int qrdma_user_cq_rings(struct qrdma_dev *dev, struct qrdma_cq *cq,
			       const struct ib_cq_init_attr *attr,
			       struct ib_udata *udata,
			       struct qrdma_cq_params *params,
			       struct qrdma_page_list *pl)
{
	struct qrdma_ibv_create_cq cmd = {};
	int err;

	err = qrdma_copy_cmd(&dev->ibdev, udata, &cmd, sizeof(cmd),
			     sizeof(cmd));
	if (err)
		return err;
	if (cmd.comp_mask & ~QRDMA_CREATE_CQ_VLAN ||
	    (cmd.comp_mask & QRDMA_CREATE_CQ_VLAN &&
	     !(dev->attr.device_caps & QRDMA_DEV_CAP_CQE_VLAN))) {
		ibdev_dbg(&dev->ibdev, "unsupported create_cq comp_mask %#x\n",
			  cmd.comp_mask);
		return -EOPNOTSUPP;
	}
	/* Only a provider that asks reads the VLAN where the P_Key index was. */
	if (cmd.comp_mask & QRDMA_CREATE_CQ_VLAN)
		params->flags |= QRDMA_CQ_F_VLAN;
	if (!is_power_of_2(cmd.entries) || cmd.entries < attr->cqe ||
	    cmd.entries > dev->attr.max_cqe) {
		ibdev_dbg(&dev->ibdev, "bad CQ ring of %u entries for %u\n",
			  cmd.entries, attr->cqe);
		return -EINVAL;
	}
	/* Without it the device takes the ring for full after one pass. */
	if (!cmd.ci_va || cmd.ci_va & (sizeof(u32) - 1)) {
		ibdev_dbg(&dev->ibdev, "bad CQ consumer index address %#llx\n",
			  cmd.ci_va);
		return -EINVAL;
	}

	cq->log2 = ilog2(cmd.entries);
	params->log2_entries = cq->log2;
	params->npages = qrdma_ring_pages(cq->log2, QRDMA_CQE_SIZE);
	cq->umem = qrdma_uring_get(dev, cmd.ring_va, params->npages, pl);
	if (IS_ERR(cq->umem)) {
		err = PTR_ERR(cq->umem);
		cq->umem = NULL;
		return err;
	}
	params->pages_dma = pl->dma;

	cq->ci_umem = qrdma_umem_get(&dev->ibdev, cmd.ci_va, sizeof(u32),
				     IB_ACCESS_LOCAL_WRITE);
	if (IS_ERR(cq->ci_umem)) {
		err = PTR_ERR(cq->ci_umem);
		cq->ci_umem = NULL;
		ibdev_dbg(&dev->ibdev, "cannot pin the consumer index: %d\n",
			  err);
		goto err_free_pl;
	}
	params->ci_dma = qrdma_umem_dma(cq->ci_umem, cmd.ci_va);
	return 0;

err_free_pl:
	qrdma_page_list_free(dev, pl);
	ib_umem_release(cq->umem);
	cq->umem = NULL;
	return err;
}

static int qrdma_kernel_cq_rings(struct qrdma_dev *dev, struct qrdma_cq *cq,
				 const struct ib_cq_init_attr *attr,
				 struct qrdma_cq_params *params,
				 struct qrdma_page_list *pl)
{
	int err;

	cq->log2 = order_base_2(attr->cqe);
	params->log2_entries = cq->log2;
	/* ib_cm finds the GID a MAD came to by its VLAN (IB_WC_WITH_VLAN). */
	if (dev->attr.device_caps & QRDMA_DEV_CAP_CQE_VLAN)
		params->flags |= QRDMA_CQ_F_VLAN;
	params->npages = qrdma_ring_pages(cq->log2, QRDMA_CQE_SIZE);
	/* Zeroed: no entry carries the phase of the first pass yet. */
	err = qrdma_kring_alloc(dev, &cq->ring, params->npages, pl);
	if (err)
		return err;
	params->pages_dma = pl->dma;

	cq->ci_rec = dma_pool_zalloc(dev->ci_pool, GFP_KERNEL, &cq->ci_dma);
	if (!cq->ci_rec) {
		qrdma_page_list_free(dev, pl);
		qrdma_kring_free(dev, &cq->ring);
		return -ENOMEM;
	}
	params->ci_dma = cq->ci_dma;
	return 0;
}

int qrdma_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		    QRDMA_CREATE_CQ_UDATA *udata_or_attrs)
{
	struct ib_udata *udata = qrdma_create_cq_udata(udata_or_attrs);
	struct qrdma_dev *dev = to_qdev(ibcq->device);
	struct qrdma_ibv_create_cq_resp resp = {};
	struct qrdma_cq *cq = to_qcq(ibcq);
	struct qrdma_cq_params params = {};
	struct qrdma_cq_result result;
	struct qrdma_page_list pl;
	int err;

	if (attr->flags) {
		ibdev_dbg(&dev->ibdev, "unsupported CQ flags %#x\n",
			  attr->flags);
		return -EOPNOTSUPP;
	}
	if (!attr->cqe || attr->cqe > dev->attr.max_cqe) {
		ibdev_dbg(&dev->ibdev, "bad CQ size %u\n", attr->cqe);
		return -EINVAL;
	}

	spin_lock_init(&cq->lock);
	mutex_init(&cq->resize_lock);
	cq->uctx = qrdma_udata_uctx(udata);
	cq->eq = qrdma_comp_vector_to_eq(dev, attr->comp_vector);
	params.uctx = cq->uctx;
	params.eq = cq->eq;

	if (udata)
		err = qrdma_user_cq_rings(dev, cq, attr, udata, &params, &pl);
	else
		err = qrdma_kernel_cq_rings(dev, cq, attr, &params, &pl);
	if (err)
		return err;

	err = qrdma_cmd_create_cq(&dev->cmdq, &params, &result);
	/* The device keeps its own copy of the page list. */
	qrdma_page_list_free(dev, &pl);
	if (err) {
		ibdev_dbg(&dev->ibdev, "CREATE_CQ failed: %d\n", err);
		goto err_free_rings;
	}
	cq->cqn = result.cqn;
	ibcq->cqe = result.entries;

	err = xa_insert(&dev->cq_xa, cq->cqn, cq, GFP_KERNEL);
	if (err)
		goto err_destroy_cq;

	if (udata) {
		resp.cqn = cq->cqn;
		resp.entries = result.entries;
		if (params.flags & QRDMA_CQ_F_VLAN)
			resp.comp_mask |= QRDMA_CREATE_CQ_VLAN;
		err = qrdma_copy_resp(&dev->ibdev, udata, &resp, sizeof(resp));
		if (err)
			goto err_erase_cq;
	}
	return 0;

err_erase_cq:
	xa_erase(&dev->cq_xa, cq->cqn);
err_destroy_cq:
	qrdma_cmd_destroy_cq(&dev->cmdq, cq->uctx, cq->cqn);
err_free_rings:
	qrdma_cq_free_rings(dev, cq);
	return err;
}

static int qrdma_resize_kernel_cq(struct qrdma_dev *dev, struct qrdma_cq *cq,
				  int cqe)
{
	struct qrdma_cq_params params = {
		.uctx = cq->uctx,
		.cqn = cq->cqn,
		.log2_entries = order_base_2(cqe),
	};
	struct qrdma_kring ring = {};
	struct qrdma_cq_result result;
	struct qrdma_page_list pl;
	unsigned long flags;
	bool notify;
	int err;

	params.npages = qrdma_ring_pages(params.log2_entries, QRDMA_CQE_SIZE);
	err = qrdma_kring_alloc(dev, &ring, params.npages, &pl);
	if (err)
		return err;
	params.pages_dma = pl.dma;

	/*
	 * The device moves the entries not polled yet; until it has, the
	 * poller finds the CQ empty rather than racing with the move.
	 */
	spin_lock_irqsave(&cq->lock, flags);
	cq->resizing = true;
	params.ci = cq->ci;
	spin_unlock_irqrestore(&cq->lock, flags);

	err = qrdma_cmd_resize_cq(&dev->cmdq, &params, &result);
	qrdma_page_list_free(dev, &pl);

	spin_lock_irqsave(&cq->lock, flags);
	if (!err) {
		swap(cq->ring, ring);
		cq->log2 = params.log2_entries;
		cq->ci = 0;
		WRITE_ONCE(*cq->ci_rec, 0);
		cq->ibcq.cqe = result.entries;
	}
	cq->resizing = false;
	/*
	 * A consumer that armed the CQ meanwhile found it empty and waits
	 * for an event, which the CQEs already written do not raise.
	 */
	notify = cq->resize_notify && qrdma_cq_has_cqe(cq);
	cq->resize_notify = false;
	spin_unlock_irqrestore(&cq->lock, flags);
	if (notify && cq->ibcq.comp_handler)
		cq->ibcq.comp_handler(&cq->ibcq, cq->ibcq.cq_context);

	/* The old ring on success, the unused new one on failure. */
	qrdma_kring_free(dev, &ring);
	if (err)
		ibdev_dbg(&dev->ibdev, "RESIZE_CQ %#x failed: %d\n", cq->cqn,
			  err);
	return err;
}

static int qrdma_resize_user_cq(struct qrdma_dev *dev, struct qrdma_cq *cq,
				int cqe, struct ib_udata *udata)
{
	struct qrdma_cq_params params = {
		.uctx = cq->uctx,
		.cqn = cq->cqn,
	};
	struct qrdma_ibv_resize_cq_resp resp = {};
	struct qrdma_ibv_resize_cq cmd = {};
	struct qrdma_cq_result result;
	struct qrdma_page_list pl;
	struct ib_umem *umem;
	int err;

	err = qrdma_copy_cmd(&dev->ibdev, udata, &cmd, sizeof(cmd),
			     sizeof(cmd));
	if (err)
		return err;
	if (cmd.comp_mask || cmd.reserved) {
		ibdev_dbg(&dev->ibdev, "unknown resize_cq comp_mask %#x\n",
			  cmd.comp_mask);
		return -EOPNOTSUPP;
	}
	if (!is_power_of_2(cmd.entries) || cmd.entries < cqe ||
	    cmd.entries > dev->attr.max_cqe) {
		ibdev_dbg(&dev->ibdev, "bad CQ ring of %u entries for %d\n",
			  cmd.entries, cqe);
		return -EINVAL;
	}

	params.log2_entries = ilog2(cmd.entries);
	params.npages = qrdma_ring_pages(params.log2_entries, QRDMA_CQE_SIZE);
	params.ci = cmd.ci;
	umem = qrdma_uring_get(dev, cmd.ring_va, params.npages, &pl);
	if (IS_ERR(umem))
		return PTR_ERR(umem);
	params.pages_dma = pl.dma;

	err = qrdma_cmd_resize_cq(&dev->cmdq, &params, &result);
	qrdma_page_list_free(dev, &pl);
	if (err) {
		ibdev_dbg(&dev->ibdev, "RESIZE_CQ %#x failed: %d\n", cq->cqn,
			  err);
		ib_umem_release(umem);
		return err;
	}

	/* The device no longer uses the old ring. */
	swap(cq->umem, umem);
	ib_umem_release(umem);
	cq->log2 = params.log2_entries;
	cq->ibcq.cqe = result.entries;

	resp.entries = result.entries;
	return qrdma_copy_resp(&dev->ibdev, udata, &resp, sizeof(resp));
}

int qrdma_resize_cq(struct ib_cq *ibcq, QRDMA_RESIZE_CQ_SIZE cqe,
		    struct ib_udata *udata)
{
	struct qrdma_dev *dev = to_qdev(ibcq->device);
	struct qrdma_cq *cq = to_qcq(ibcq);
	int err;

	if (cqe < 1 || cqe > dev->attr.max_cqe) {
		ibdev_dbg(&dev->ibdev, "bad CQ size %lld\n", (long long)cqe);
		return -EINVAL;
	}
	/*
	 * uverbs holds the CQ only shared: two resizes may come at once,
	 * and the second must start from the ring the first left.
	 */
	mutex_lock(&cq->resize_lock);
	if (udata)
		err = qrdma_resize_user_cq(dev, cq, cqe, udata);
	else
		err = qrdma_resize_kernel_cq(dev, cq, cqe);
	mutex_unlock(&cq->resize_lock);
	return err;
}

int qrdma_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata)
{
	struct qrdma_dev *dev = to_qdev(ibcq->device);
	struct qrdma_cq *cq = to_qcq(ibcq);
	int err;

	/* S20: EBUSY while a QP uses the CQ; the CQ then stays as it was. */
	err = qrdma_destroy_result(qrdma_cmd_destroy_cq(&dev->cmdq, cq->uctx,
							cq->cqn));
	if (err && cq->uctx) {
		ibdev_dbg(&dev->ibdev, "DESTROY_CQ %#x failed: %d\n", cq->cqn,
			  err);
		return err;
	}

	qrdma_drain_async_eq(dev);
	xa_erase(&dev->cq_xa, cq->cqn);
	/* Handlers that looked the CQ up are done with it once these return. */
	qrdma_sync_eq(dev, cq->eq);
	qrdma_sync_eq(dev, QRDMA_ASYNC_EQ);
	if (!qrdma_kernel_destroy_refused(dev, "DESTROY_CQ", cq->cqn, err))
		qrdma_cq_free_rings(dev, cq);
	return 0;
}

static int qrdma_qp_type(enum ib_qp_type type, u8 *qp_type)
{
	switch (type) {
	case IB_QPT_GSI:
		*qp_type = QRDMA_QPT_GSI;
		return 0;
	case IB_QPT_RC:
		*qp_type = QRDMA_QPT_RC;
		return 0;
	case IB_QPT_UC:
		*qp_type = QRDMA_QPT_UC;
		return 0;
	case IB_QPT_UD:
		*qp_type = QRDMA_QPT_UD;
		return 0;
	default:
		return -EOPNOTSUPP;
	}
}

/* S2: a request above the device limits fails; nothing is truncated. */
static int qrdma_check_qp_caps(struct qrdma_dev *dev,
			       const struct ib_qp_init_attr *init_attr)
{
	const struct ib_qp_cap *cap = &init_attr->cap;
	const struct qrdma_dev_attr *attr = &dev->attr;

	if (cap->max_send_wr > attr->max_qp_wr ||
	    cap->max_send_sge > attr->max_send_sge ||
	    cap->max_inline_data > attr->max_inline_data ||
	    (!init_attr->srq && (cap->max_recv_wr > attr->max_qp_wr ||
				 cap->max_recv_sge > attr->max_recv_sge))) {
		ibdev_dbg(&dev->ibdev,
			  "QP caps %u/%u WRs, %u/%u SGEs, %u inline exceed the device's\n",
			  cap->max_send_wr, cap->max_recv_wr, cap->max_send_sge,
			  cap->max_recv_sge, cap->max_inline_data);
		return -EINVAL;
	}
	return 0;
}

static void qrdma_wq_free(struct qrdma_dev *dev, struct qrdma_wq *wq)
{
	qrdma_kring_free(dev, &wq->ring);
	kvfree(wq->wr_ids);
	wq->wr_ids = NULL;
}

static int qrdma_wq_alloc(struct qrdma_dev *dev, struct qrdma_wq *wq, u32 log2,
			  u32 entry_size, bool qp, struct qrdma_page_list *pl)
{
	int err;

	spin_lock_init(&wq->lock);
	atomic_set(&wq->ci, 0);
	wq->log2 = log2;
	err = qrdma_kring_alloc(dev, &wq->ring,
				qrdma_ring_pages(log2, entry_size), pl);
	if (err)
		return err;
	if (qp) {
		wq->wr_ids = kvcalloc(1U << log2, sizeof(*wq->wr_ids),
				      GFP_KERNEL);
		if (!wq->wr_ids) {
			qrdma_page_list_free(dev, pl);
			qrdma_kring_free(dev, &wq->ring);
			return -ENOMEM;
		}
	}
	return 0;
}

static void qrdma_qp_free_rings(struct qrdma_dev *dev, struct qrdma_qp *qp)
{
	qrdma_wq_free(dev, &qp->sq);
	qrdma_wq_free(dev, &qp->rq);
	ib_umem_release(qp->sq_umem);
	ib_umem_release(qp->rq_umem);
	qp->sq_umem = NULL;
	qp->rq_umem = NULL;
}

static int qrdma_kernel_qp_rings(struct qrdma_dev *dev, struct qrdma_qp *qp,
				 const struct ib_qp_init_attr *init_attr,
				 struct qrdma_create_qp_params *params,
				 struct qrdma_page_list *sq_pl,
				 struct qrdma_page_list *rq_pl)
{
	const struct ib_qp_cap *cap = &init_attr->cap;
	int err;

	params->sq_log2 = order_base_2(max(cap->max_send_wr, 1U));
	err = qrdma_wq_alloc(dev, &qp->sq, params->sq_log2, QRDMA_SQ_WQE_SIZE,
			     true, sq_pl);
	if (err)
		return err;
	params->sq_pages_dma = sq_pl->dma;
	params->sq_npages = sq_pl->npages;

	if (init_attr->srq)
		return 0;
	params->rq_log2 = order_base_2(max(cap->max_recv_wr, 1U));
	err = qrdma_wq_alloc(dev, &qp->rq, params->rq_log2, QRDMA_RQ_WQE_SIZE,
			     true, rq_pl);
	if (err)
		return err;
	params->rq_pages_dma = rq_pl->dma;
	params->rq_npages = rq_pl->npages;
	return 0;
}

/* Ring entries user space asks for: a power of two within the limits. */
static bool qrdma_ring_entries_ok(struct qrdma_dev *dev, u32 entries,
				  u32 wanted, u32 max)
{
	if (is_power_of_2(entries) && entries >= max(wanted, 1U) &&
	    entries <= max)
		return true;
	ibdev_dbg(&dev->ibdev, "bad ring of %u entries for %u (max %u)\n",
		  entries, wanted, max);
	return false;
}

static int qrdma_user_qp_rings(struct qrdma_dev *dev, struct qrdma_qp *qp,
			       const struct ib_qp_init_attr *init_attr,
			       struct ib_udata *udata,
			       struct qrdma_create_qp_params *params,
			       struct qrdma_page_list *sq_pl,
			       struct qrdma_page_list *rq_pl)
{
	const struct ib_qp_cap *cap = &init_attr->cap;
	struct qrdma_ibv_create_qp cmd = {};
	int err;

	err = qrdma_copy_cmd(&dev->ibdev, udata, &cmd, sizeof(cmd),
			     sizeof(cmd));
	if (err)
		return err;
	if (cmd.comp_mask || cmd.reserved) {
		ibdev_dbg(&dev->ibdev, "unknown create_qp comp_mask %#x\n",
			  cmd.comp_mask);
		return -EOPNOTSUPP;
	}
	if (!qrdma_ring_entries_ok(dev, cmd.sq_entries, cap->max_send_wr,
				   dev->attr.max_qp_wr))
		return -EINVAL;
	if (init_attr->srq ? cmd.rq_entries || cmd.rq_ring_va :
	    !qrdma_ring_entries_ok(dev, cmd.rq_entries, cap->max_recv_wr,
				   dev->attr.max_qp_wr)) {
		ibdev_dbg(&dev->ibdev, "bad receive ring for the QP\n");
		return -EINVAL;
	}

	params->sq_log2 = ilog2(cmd.sq_entries);
	params->sq_npages = qrdma_ring_pages(params->sq_log2,
					     QRDMA_SQ_WQE_SIZE);
	qp->sq_umem = qrdma_uring_get(dev, cmd.sq_ring_va, params->sq_npages,
				      sq_pl);
	if (IS_ERR(qp->sq_umem)) {
		err = PTR_ERR(qp->sq_umem);
		qp->sq_umem = NULL;
		return err;
	}
	params->sq_pages_dma = sq_pl->dma;

	if (init_attr->srq)
		return 0;
	params->rq_log2 = ilog2(cmd.rq_entries);
	params->rq_npages = qrdma_ring_pages(params->rq_log2,
					     QRDMA_RQ_WQE_SIZE);
	qp->rq_umem = qrdma_uring_get(dev, cmd.rq_ring_va, params->rq_npages,
				      rq_pl);
	if (IS_ERR(qp->rq_umem)) {
		err = PTR_ERR(qp->rq_umem);
		qp->rq_umem = NULL;
		return err;
	}
	params->rq_pages_dma = rq_pl->dma;
	return 0;
}

int qrdma_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *init_attr,
		    struct ib_udata *udata)
{
	struct qrdma_dev *dev = to_qdev(ibqp->device);
	struct qrdma_page_list sq_pl = {}, rq_pl = {};
	struct qrdma_create_qp_params params = {};
	struct qrdma_ibv_create_qp_resp resp = {};
	struct qrdma_pd *pd = to_qpd(ibqp->pd);
	struct qrdma_create_qp_result result;
	struct qrdma_qp *qp = to_qqp(ibqp);
	struct ib_qp_cap *cap = &init_attr->cap;
	struct ib_cq *recv_cq;
	bool bad_qpn;
	int err;

	if (init_attr->create_flags) {
		ibdev_dbg(&dev->ibdev, "unsupported QP create flags %#x\n",
			  init_attr->create_flags);
		return -EOPNOTSUPP;
	}
	err = qrdma_qp_type(init_attr->qp_type, &params.qp_type);
	if (err) {
		ibdev_dbg(&dev->ibdev, "unsupported QP type %d\n",
			  init_attr->qp_type);
		return err;
	}
	/* S3: only RC and UD take an SRQ. */
	if (init_attr->srq && init_attr->qp_type != IB_QPT_RC &&
	    init_attr->qp_type != IB_QPT_UD) {
		ibdev_dbg(&dev->ibdev, "QP type %d cannot use an SRQ\n",
			  init_attr->qp_type);
		return -EINVAL;
	}
	if (!init_attr->send_cq) {
		ibdev_dbg(&dev->ibdev, "QP without a send CQ\n");
		return -EINVAL;
	}
	err = qrdma_check_qp_caps(dev, init_attr);
	if (err)
		return err;
	recv_cq = init_attr->recv_cq ?: init_attr->send_cq;

	mutex_init(&qp->state_lock);
	INIT_LIST_HEAD(&qp->ah_waits);
	INIT_WORK(&qp->ah_work, qrdma_qp_ah_work);
	qp->state = IB_QPS_RESET;
	qp->uctx = qrdma_udata_uctx(udata);
	qp->sq_sig_all = init_attr->sq_sig_type == IB_SIGNAL_ALL_WR;

	params.uctx = qp->uctx;
	params.pd = pd->pdn;
	params.send_cq = to_qcq(init_attr->send_cq)->cqn;
	params.recv_cq = to_qcq(recv_cq)->cqn;
	params.srq = init_attr->srq ? to_qsrq(init_attr->srq)->srqn :
				      QRDMA_HANDLE_NONE;
	params.sq_sig_all = qp->sq_sig_all;
	params.max_send_wr = cap->max_send_wr;
	params.max_send_sge = cap->max_send_sge;
	params.max_inline_data = cap->max_inline_data;
	if (!init_attr->srq) {
		params.max_recv_wr = cap->max_recv_wr;
		params.max_recv_sge = cap->max_recv_sge;
	}

	if (udata)
		err = qrdma_user_qp_rings(dev, qp, init_attr, udata, &params,
					  &sq_pl, &rq_pl);
	else
		err = qrdma_kernel_qp_rings(dev, qp, init_attr, &params,
					    &sq_pl, &rq_pl);
	if (err)
		goto err_free_rings;

	err = qrdma_cmd_create_qp(&dev->cmdq, &params, &result);
	/* The device keeps its own copies of the page lists. */
	qrdma_page_list_free(dev, &sq_pl);
	qrdma_page_list_free(dev, &rq_pl);
	if (err) {
		ibdev_dbg(&dev->ibdev, "CREATE_QP failed: %d\n", err);
		goto err_free_rings;
	}

	if (init_attr->qp_type == IB_QPT_GSI)
		bad_qpn = result.qpn != 1;
	else
		bad_qpn = result.qpn < 2 || result.qpn > 0xffffff;
	qp->qpn = result.qpn;
	if (bad_qpn) {
		ibdev_err_ratelimited(&dev->ibdev,
				      "CREATE_QP gave QPN %#x to a QP of type %d\n",
				      result.qpn, init_attr->qp_type);
		err = -EIO;
		goto err_destroy_qp;
	}
	ibqp->qp_num = qp->qpn;

	/* The driver's rings bound what it writes, whatever the device says. */
	qp->sq.max_sge = min_t(u32, result.caps.max_send_sge,
			       QRDMA_MAX_SEND_SGE);
	qp->rq.max_sge = min_t(u32, result.caps.max_recv_sge,
			       QRDMA_MAX_RECV_SGE);
	qp->max_inline_data = min_t(u32, result.caps.max_inline_data,
				    QRDMA_MAX_INLINE);
	/* S2: the real capabilities, at least those asked for. */
	cap->max_send_wr = result.caps.max_send_wr;
	cap->max_recv_wr = result.caps.max_recv_wr;
	cap->max_send_sge = result.caps.max_send_sge;
	cap->max_recv_sge = result.caps.max_recv_sge;
	cap->max_inline_data = result.caps.max_inline_data;

	err = xa_insert(&dev->qp_xa, qp->qpn, qp, GFP_KERNEL);
	if (err)
		goto err_destroy_qp;

	if (udata) {
		resp.qpn = qp->qpn;
		resp.max_send_wr = cap->max_send_wr;
		resp.max_recv_wr = cap->max_recv_wr;
		resp.max_send_sge = cap->max_send_sge;
		resp.max_recv_sge = cap->max_recv_sge;
		resp.max_inline_data = cap->max_inline_data;
		err = qrdma_copy_resp(&dev->ibdev, udata, &resp, sizeof(resp));
		if (err)
			goto err_erase_qp;
	}
	return 0;

err_erase_qp:
	xa_erase(&dev->qp_xa, qp->qpn);
err_destroy_qp:
	qrdma_cmd_destroy_qp(&dev->cmdq, qp->uctx, qp->qpn);
err_free_rings:
	qrdma_page_list_free(dev, &sq_pl);
	qrdma_page_list_free(dev, &rq_pl);
	qrdma_qp_free_rings(dev, qp);
	return err;
}

static int qrdma_ah_attr_to_av(struct qrdma_dev *dev,
			       const struct rdma_ah_attr *ah_attr,
			       struct qrdma_av_params *av)
{
	const struct ib_global_route *grh;
	u16 vlan_id;

	if (ah_attr->type != RDMA_AH_ATTR_TYPE_ROCE ||
	    !(rdma_ah_get_ah_flags(ah_attr) & IB_AH_GRH)) {
		ibdev_dbg(&dev->ibdev, "address vector is not RoCE with a GRH\n");
		return -EINVAL;
	}
	grh = rdma_ah_read_grh(ah_attr);
	memcpy(av->dgid, grh->dgid.raw, sizeof(av->dgid));
	/* 20 bits on the wire; UCX, for one, sets all 32. */
	av->flow_label = grh->flow_label & IB_GRH_FLOWLABEL_MASK;
	av->sgid_index = grh->sgid_index;
	av->hop_limit = grh->hop_limit;
	av->traffic_class = grh->traffic_class;
	av->sl = rdma_ah_get_sl(ah_attr);
	memcpy(av->dmac, ah_attr->roce.dmac, ETH_ALEN);
	av->vlan_id = QRDMA_VLAN_NONE;
	if (grh->sgid_attr &&
	    !rdma_read_gid_l2_fields(grh->sgid_attr, &vlan_id, NULL))
		av->vlan_id = vlan_id;
	return 0;
}

static void qrdma_av_to_ah_attr(const struct qrdma_av_params *av,
				struct rdma_ah_attr *ah_attr)
{
	union ib_gid dgid;

	memcpy(dgid.raw, av->dgid, sizeof(dgid.raw));
	ah_attr->type = RDMA_AH_ATTR_TYPE_ROCE;
	rdma_ah_set_sl(ah_attr, av->sl);
	rdma_ah_set_port_num(ah_attr, QRDMA_PORT);
	rdma_ah_set_grh(ah_attr, &dgid, av->flow_label, av->sgid_index,
			av->hop_limit, av->traffic_class);
	memcpy(ah_attr->roce.dmac, av->dmac, ETH_ALEN);
}

/* The state the device holds: it may have moved the QP to SQE or ERR. */
static int qrdma_qp_refresh_state(struct qrdma_dev *dev, struct qrdma_qp *qp)
{
	struct qrdma_query_qp_result result;
	int err;

	err = qrdma_cmd_query_qp(&dev->cmdq, qp->uctx, qp->qpn, &result);
	if (err)
		return err;
	if (result.attr.qp_state > IB_QPS_ERR)
		return -EIO;
	qp->state = result.attr.qp_state;
	return 0;
}

/* After a move to RESET nothing the QP had posted is left anywhere (S36). */
static void qrdma_qp_reset_kernel(struct qrdma_qp *qp)
{
	struct ib_qp *ibqp = &qp->ibqp;

	qrdma_qp_drop_ah_waits(qp);
	qrdma_cq_clean(to_qcq(ibqp->send_cq), qp);
	if (ibqp->recv_cq && ibqp->recv_cq != ibqp->send_cq)
		qrdma_cq_clean(to_qcq(ibqp->recv_cq), qp);
	qrdma_wq_reset(&qp->sq);
	qp->sq_db = 0;
	if (!ibqp->srq)
		qrdma_wq_reset(&qp->rq);
}

static int qrdma_qp_attr_to_params(struct qrdma_dev *dev,
				   const struct ib_qp_attr *attr,
				   int attr_mask,
				   struct qrdma_qp_params *params)
{
	params->attr_mask = attr_mask;
	if (attr_mask & IB_QP_STATE)
		params->qp_state = attr->qp_state;
	if (attr_mask & IB_QP_CUR_STATE)
		params->cur_qp_state = attr->cur_qp_state;
	if (attr_mask & IB_QP_EN_SQD_ASYNC_NOTIFY)
		params->en_sqd_async_notify = attr->en_sqd_async_notify;
	/*
	 * Access bits the device has no use for (persistent flush, relaxed
	 * ordering...) grant nothing it would enforce: drop them, as other
	 * drivers do.
	 */
	if (attr_mask & IB_QP_ACCESS_FLAGS)
		params->qp_access_flags = attr->qp_access_flags &
					  qrdma_access_mask(dev);
	if (attr_mask & IB_QP_PKEY_INDEX)
		params->pkey_index = attr->pkey_index;
	if (attr_mask & IB_QP_PORT) {
		if (attr->port_num != QRDMA_PORT) {
			ibdev_dbg(&dev->ibdev, "bad port %u\n", attr->port_num);
			return -EINVAL;
		}
		params->port_num = attr->port_num;
	}
	if (attr_mask & IB_QP_QKEY)
		params->qkey = attr->qkey;
	if (attr_mask & IB_QP_AV) {
		int err = qrdma_ah_attr_to_av(dev, &attr->ah_attr, &params->av);

		if (err)
			return err;
	}
	if (attr_mask & IB_QP_PATH_MTU)
		params->path_mtu = attr->path_mtu;
	if (attr_mask & IB_QP_TIMEOUT)
		params->timeout = attr->timeout;
	if (attr_mask & IB_QP_RETRY_CNT)
		params->retry_cnt = attr->retry_cnt;
	if (attr_mask & IB_QP_RNR_RETRY)
		params->rnr_retry = attr->rnr_retry;
	if (attr_mask & IB_QP_RQ_PSN)
		params->rq_psn = attr->rq_psn;
	if (attr_mask & IB_QP_MAX_QP_RD_ATOMIC)
		params->max_rd_atomic = attr->max_rd_atomic;
	if (attr_mask & IB_QP_MIN_RNR_TIMER)
		params->min_rnr_timer = attr->min_rnr_timer;
	if (attr_mask & IB_QP_SQ_PSN)
		params->sq_psn = attr->sq_psn;
	if (attr_mask & IB_QP_MAX_DEST_RD_ATOMIC)
		params->max_dest_rd_atomic = attr->max_dest_rd_atomic;
	if (attr_mask & IB_QP_PATH_MIG_STATE)
		params->path_mig_state = attr->path_mig_state;
	if (attr_mask & IB_QP_DEST_QPN)
		params->dest_qp_num = attr->dest_qp_num;
	/* ALT_PATH and CAP have no fields: the device refuses both. */
	return 0;
}

int qrdma_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr,
		    int attr_mask, struct ib_udata *udata)
{
	struct qrdma_dev *dev = to_qdev(ibqp->device);
	struct qrdma_qp *qp = to_qqp(ibqp);
	struct qrdma_qp_params params = {};
	enum ib_qp_state cur, next;
	int err;

	if (attr_mask & ~IB_QP_ATTR_STANDARD_BITS) {
		ibdev_dbg(&dev->ibdev, "unsupported QP attributes %#x\n",
			  attr_mask);
		return -EOPNOTSUPP;
	}
	if (!qrdma_udata_is_empty(&dev->ibdev, udata))
		return -EINVAL;

	err = qrdma_qp_attr_to_params(dev, attr, attr_mask, &params);
	if (err)
		return err;

	mutex_lock(&qp->state_lock);
	cur = attr_mask & IB_QP_CUR_STATE ? attr->cur_qp_state : qp->state;
	next = attr_mask & IB_QP_STATE ? attr->qp_state : cur;
	/*
	 * S40: the IB state table; the device checks it too.  The device
	 * moves a QP to SQE or ERR by itself, so a refusal based on the
	 * state the driver last set is checked against the device's.
	 */
	if (!ib_modify_qp_is_ok(cur, next, ibqp->qp_type, attr_mask) &&
	    !(attr_mask & IB_QP_CUR_STATE) &&
	    !qrdma_qp_refresh_state(dev, qp)) {
		cur = qp->state;
		next = attr_mask & IB_QP_STATE ? attr->qp_state : cur;
	}
	if (!ib_modify_qp_is_ok(cur, next, ibqp->qp_type, attr_mask)) {
		ibdev_dbg(&dev->ibdev,
			  "QP %#x: no transition %d -> %d with attributes %#x\n",
			  qp->qpn, cur, next, attr_mask);
		err = -EINVAL;
		goto out_unlock;
	}

	err = qrdma_cmd_modify_qp(&dev->cmdq, qp->uctx, qp->qpn, &params);
	if (err) {
		ibdev_dbg(&dev->ibdev, "MODIFY_QP %#x failed: %d\n", qp->qpn,
			  err);
		goto out_unlock;
	}
	qp->state = next;
	if (next == IB_QPS_RESET && !qp->uctx)
		qrdma_qp_reset_kernel(qp);

out_unlock:
	mutex_unlock(&qp->state_lock);
	return err;
}

int qrdma_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int attr_mask,
		   struct ib_qp_init_attr *init_attr)
{
	struct qrdma_dev *dev = to_qdev(ibqp->device);
	struct qrdma_qp *qp = to_qqp(ibqp);
	struct qrdma_query_qp_result result;
	struct qrdma_qp_params *a = &result.attr;
	int err;

	err = qrdma_cmd_query_qp(&dev->cmdq, qp->uctx, qp->qpn, &result);
	if (err) {
		ibdev_dbg(&dev->ibdev, "QUERY_QP %#x failed: %d\n", qp->qpn,
			  err);
		return err;
	}
	if (a->qp_state > IB_QPS_ERR || a->cur_qp_state > IB_QPS_ERR) {
		ibdev_err_ratelimited(&dev->ibdev, "QUERY_QP %#x: state %u\n",
				      qp->qpn, a->qp_state);
		return -EIO;
	}

	memset(attr, 0, sizeof(*attr));
	memset(init_attr, 0, sizeof(*init_attr));
	attr->qp_state = a->qp_state;
	attr->cur_qp_state = a->qp_state;
	attr->path_mtu = a->path_mtu;
	attr->path_mig_state = a->path_mig_state;
	attr->qkey = a->qkey;
	attr->rq_psn = a->rq_psn;
	attr->sq_psn = a->sq_psn;
	attr->dest_qp_num = a->dest_qp_num;
	attr->qp_access_flags = a->qp_access_flags;
	attr->pkey_index = a->pkey_index;
	attr->en_sqd_async_notify = a->en_sqd_async_notify;
	attr->sq_draining = a->sq_draining;
	attr->max_rd_atomic = a->max_rd_atomic;
	attr->max_dest_rd_atomic = a->max_dest_rd_atomic;
	attr->min_rnr_timer = a->min_rnr_timer;
	attr->port_num = a->port_num;
	attr->timeout = a->timeout;
	attr->retry_cnt = a->retry_cnt;
	attr->rnr_retry = a->rnr_retry;
	attr->cap.max_send_wr = result.caps.max_send_wr;
	attr->cap.max_recv_wr = result.caps.max_recv_wr;
	attr->cap.max_send_sge = result.caps.max_send_sge;
	attr->cap.max_recv_sge = result.caps.max_recv_sge;
	attr->cap.max_inline_data = result.caps.max_inline_data;
	if ((ibqp->qp_type == IB_QPT_RC || ibqp->qp_type == IB_QPT_UC) &&
	    a->qp_state >= IB_QPS_RTR && a->qp_state <= IB_QPS_SQE)
		qrdma_av_to_ah_attr(&a->av, &attr->ah_attr);

	init_attr->qp_context = ibqp->qp_context;
	init_attr->send_cq = ibqp->send_cq;
	init_attr->recv_cq = ibqp->recv_cq;
	init_attr->srq = ibqp->srq;
	init_attr->qp_type = ibqp->qp_type;
	init_attr->cap = attr->cap;
	init_attr->sq_sig_type = result.sq_sig_all ? IB_SIGNAL_ALL_WR :
						     IB_SIGNAL_REQ_WR;
	init_attr->port_num = QRDMA_PORT;

	mutex_lock(&qp->state_lock);
	qp->state = a->qp_state;
	mutex_unlock(&qp->state_lock);
	return 0;
}

int qrdma_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata)
{
	struct qrdma_dev *dev = to_qdev(ibqp->device);
	struct qrdma_qp *qp = to_qqp(ibqp);
	int err;

	/*
	 * No doorbell after the QP is gone: its sends that wait for an AH
	 * are dropped (the kernel's destroy does not fail).
	 */
	if (!qp->uctx)
		qrdma_qp_drop_ah_waits(qp);
	/* S13: EBUSY while attached to a multicast group; nothing changes. */
	err = qrdma_destroy_result(qrdma_cmd_destroy_qp(&dev->cmdq, qp->uctx,
							qp->qpn));
	if (err && qp->uctx) {
		ibdev_dbg(&dev->ibdev, "DESTROY_QP %#x failed: %d\n", qp->qpn,
			  err);
		return err;
	}

	if (!qp->uctx) {
		/*
		 * S12: the QP's completions still in its CQs are dropped,
		 * and the SRQ entries they stand for freed.  The device
		 * writes none after DESTROY_QP; cleaning before the QP is
		 * unlisted leaves pollers none to drop without crediting.
		 * Cleaning takes each CQ's lock, under which pollers look
		 * QPs up, so no poller holds this QP afterwards.
		 */
		qrdma_cq_clean(to_qcq(ibqp->send_cq), qp);
		if (ibqp->recv_cq && ibqp->recv_cq != ibqp->send_cq)
			qrdma_cq_clean(to_qcq(ibqp->recv_cq), qp);
	}
	qrdma_drain_async_eq(dev);
	xa_erase(&dev->qp_xa, qp->qpn);
	/* Event handlers that looked the QP up are done with it after this. */
	qrdma_sync_eq(dev, QRDMA_ASYNC_EQ);
	if (qrdma_kernel_destroy_refused(dev, "DESTROY_QP", qp->qpn, err)) {
		/* The rings stay the device's; the driver's own part goes. */
		kvfree(qp->sq.wr_ids);
		kvfree(qp->rq.wr_ids);
		return 0;
	}
	qrdma_qp_free_rings(dev, qp);
	return 0;
}

/*
 * The ring a user SRQ's udata names, at create and at resize: its size
 * checked against the WRs asked for and the device's limit, its pages
 * pinned and listed for the device.
 */
static struct ib_umem *qrdma_srq_uring(struct qrdma_dev *dev, const char *verb,
				       u32 comp_mask, u32 entries, u64 ring_va,
				       u32 max_wr, u32 *log2_entries,
				       u32 *npages, struct qrdma_page_list *pl)
{
	if (comp_mask) {
		ibdev_dbg(&dev->ibdev, "unknown %s comp_mask %#x\n", verb,
			  comp_mask);
		return ERR_PTR(-EOPNOTSUPP);
	}
	if (!qrdma_ring_entries_ok(dev, entries, max_wr, dev->attr.max_srq_wr))
		return ERR_PTR(-EINVAL);
	*log2_entries = ilog2(entries);
	*npages = qrdma_ring_pages(*log2_entries, QRDMA_RQ_WQE_SIZE);
	return qrdma_uring_get(dev, ring_va, *npages, pl);
}

int qrdma_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *init_attr,
		     struct ib_udata *udata)
{
	struct qrdma_dev *dev = to_qdev(ibsrq->device);
	struct ib_srq_attr *attr = &init_attr->attr;
	struct qrdma_srq *srq = to_qsrq(ibsrq);
	struct qrdma_create_srq_params params = {
		.pd = to_qpd(ibsrq->pd)->pdn,
		.max_wr = attr->max_wr,
		.max_sge = attr->max_sge,
	};
	struct qrdma_ibv_create_srq_resp resp = {};
	struct qrdma_ibv_create_srq cmd = {};
	struct qrdma_srq_result result;
	struct qrdma_page_list pl = {};
	int err;

	if (init_attr->srq_type != IB_SRQT_BASIC) {
		ibdev_dbg(&dev->ibdev, "unsupported SRQ type %d\n",
			  init_attr->srq_type);
		return -EOPNOTSUPP;
	}
	if (!attr->max_wr || attr->max_wr > dev->attr.max_srq_wr ||
	    attr->max_sge > dev->attr.max_srq_sge) {
		ibdev_dbg(&dev->ibdev, "SRQ of %u WRs, %u SGEs exceeds the device's\n",
			  attr->max_wr, attr->max_sge);
		return -EINVAL;
	}

	srq->uctx = qrdma_udata_uctx(udata);
	params.uctx = srq->uctx;
	mutex_init(&srq->resize_lock);
	if (udata) {
		err = qrdma_copy_cmd(&dev->ibdev, udata, &cmd, sizeof(cmd),
				     sizeof(cmd));
		if (err)
			return err;
		srq->umem = qrdma_srq_uring(dev, "create_srq", cmd.comp_mask,
					    cmd.entries, cmd.ring_va,
					    attr->max_wr, &params.log2_entries,
					    &params.npages, &pl);
		if (IS_ERR(srq->umem)) {
			err = PTR_ERR(srq->umem);
			srq->umem = NULL;
			return err;
		}
	} else {
		params.log2_entries = order_base_2(attr->max_wr);
		err = qrdma_wq_alloc(dev, &srq->rq, params.log2_entries,
				     QRDMA_RQ_WQE_SIZE, false, &pl);
		if (err)
			return err;
		params.npages = pl.npages;
	}
	params.pages_dma = pl.dma;

	err = qrdma_cmd_create_srq(&dev->cmdq, &params, &result);
	qrdma_page_list_free(dev, &pl);
	if (err) {
		ibdev_dbg(&dev->ibdev, "CREATE_SRQ failed: %d\n", err);
		goto err_free_ring;
	}
	srq->srqn = result.srqn;
	srq->rq.max_sge = min_t(u32, result.max_sge, QRDMA_MAX_RECV_SGE);
	attr->max_wr = result.max_wr;
	attr->max_sge = result.max_sge;
	attr->srq_limit = result.srq_limit;

	err = xa_insert(&dev->srq_xa, srq->srqn, srq, GFP_KERNEL);
	if (err)
		goto err_destroy_srq;

	if (udata) {
		resp.srqn = srq->srqn;
		resp.max_wr = result.max_wr;
		resp.max_sge = result.max_sge;
		err = qrdma_copy_resp(&dev->ibdev, udata, &resp, sizeof(resp));
		if (err)
			goto err_erase_srq;
	}
	return 0;

err_erase_srq:
	xa_erase(&dev->srq_xa, srq->srqn);
err_destroy_srq:
	qrdma_cmd_destroy_srq(&dev->cmdq, srq->uctx, srq->srqn);
err_free_ring:
	qrdma_wq_free(dev, &srq->rq);
	ib_umem_release(srq->umem);
	return err;
}

static int qrdma_resize_kernel_srq(struct qrdma_dev *dev, struct qrdma_srq *srq,
				   struct qrdma_modify_srq_params *params)
{
	struct qrdma_wq *wq = &srq->rq;
	struct qrdma_kring ring = {};
	struct qrdma_page_list pl;
	unsigned long flags;
	u32 posted;
	int err;

	params->log2_entries = order_base_2(params->max_wr);
	params->npages = qrdma_ring_pages(params->log2_entries,
					  QRDMA_RQ_WQE_SIZE);
	err = qrdma_kring_alloc(dev, &ring, params->npages, &pl);
	if (err)
		return err;
	params->pages_dma = pl.dma;

	/*
	 * The device copies what was posted up to the last doorbell when
	 * the command executes, a moment the driver cannot see; until the
	 * completion, posters write into both rings (see qrdma_post_rq).
	 */
	spin_lock_irqsave(&wq->lock, flags);
	posted = wq->pi - (u32)atomic_read(&wq->ci);
	if (posted > (1U << params->log2_entries)) {
		spin_unlock_irqrestore(&wq->lock, flags);
		ibdev_dbg(&dev->ibdev, "SRQ %#x holds %u WRs, more than %u\n",
			  srq->srqn, posted, params->max_wr);
		err = -EINVAL;
		goto err_free_ring;
	}
	wq->next_ring = &ring;
	wq->next_log2 = params->log2_entries;
	spin_unlock_irqrestore(&wq->lock, flags);

	err = qrdma_cmd_modify_srq(&dev->cmdq, params);

	spin_lock_irqsave(&wq->lock, flags);
	if (!err) {
		swap(wq->ring, ring);
		wq->log2 = params->log2_entries;
	}
	wq->next_ring = NULL;
	spin_unlock_irqrestore(&wq->lock, flags);

err_free_ring:
	/* The old ring on success, the unused new one otherwise. */
	qrdma_page_list_free(dev, &pl);
	qrdma_kring_free(dev, &ring);
	return err;
}

static int qrdma_resize_user_srq(struct qrdma_dev *dev, struct qrdma_srq *srq,
				 struct qrdma_modify_srq_params *params,
				 struct ib_udata *udata)
{
	struct qrdma_ibv_modify_srq cmd = {};
	struct qrdma_page_list pl;
	struct ib_umem *umem;
	int err;

	err = qrdma_copy_cmd(&dev->ibdev, udata, &cmd, sizeof(cmd),
			     sizeof(cmd));
	if (err)
		return err;
	umem = qrdma_srq_uring(dev, "modify_srq", cmd.comp_mask, cmd.entries,
			       cmd.ring_va, params->max_wr,
			       &params->log2_entries, &params->npages, &pl);
	if (IS_ERR(umem))
		return PTR_ERR(umem);
	params->pages_dma = pl.dma;

	err = qrdma_cmd_modify_srq(&dev->cmdq, params);
	qrdma_page_list_free(dev, &pl);
	if (!err)
		/* The device no longer uses the old ring. */
		swap(srq->umem, umem);
	ib_umem_release(umem);
	return err;
}

int qrdma_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
		     enum ib_srq_attr_mask attr_mask, struct ib_udata *udata)
{
	struct qrdma_dev *dev = to_qdev(ibsrq->device);
	struct qrdma_srq *srq = to_qsrq(ibsrq);
	struct qrdma_modify_srq_params params = {
		.uctx = srq->uctx,
		.srqn = srq->srqn,
		.srq_limit = attr->srq_limit,
		.max_wr = attr->max_wr,
	};
	int err;

	if (attr_mask & ~(IB_SRQ_MAX_WR | IB_SRQ_LIMIT)) {
		ibdev_dbg(&dev->ibdev, "unsupported SRQ attributes %#x\n",
			  attr_mask);
		return -EINVAL;
	}
	if (attr_mask & IB_SRQ_LIMIT)
		params.attr_mask |= QRDMA_SRQ_ATTR_LIMIT;

	if (!(attr_mask & IB_SRQ_MAX_WR)) {
		if (!qrdma_udata_is_empty(&dev->ibdev, udata))
			return -EINVAL;
		err = qrdma_cmd_modify_srq(&dev->cmdq, &params);
		goto out;
	}

	if (!(dev->attr.device_caps & QRDMA_DEV_CAP_SRQ_RESIZE))
		return -EOPNOTSUPP;
	if (!attr->max_wr || attr->max_wr > dev->attr.max_srq_wr) {
		ibdev_dbg(&dev->ibdev, "SRQ of %u WRs exceeds the device's\n",
			  attr->max_wr);
		return -EINVAL;
	}
	params.attr_mask |= QRDMA_SRQ_ATTR_MAX_WR;
	mutex_lock(&srq->resize_lock);
	if (srq->uctx)
		err = qrdma_resize_user_srq(dev, srq, &params, udata);
	else
		err = qrdma_resize_kernel_srq(dev, srq, &params);
	mutex_unlock(&srq->resize_lock);
out:
	if (err)
		ibdev_dbg(&dev->ibdev, "MODIFY_SRQ %#x failed: %d\n",
			  srq->srqn, err);
	return err;
}

int qrdma_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr)
{
	struct qrdma_dev *dev = to_qdev(ibsrq->device);
	struct qrdma_srq *srq = to_qsrq(ibsrq);
	struct qrdma_srq_result result;
	int err;

	err = qrdma_cmd_query_srq(&dev->cmdq, srq->uctx, srq->srqn, &result);
	if (err) {
		ibdev_dbg(&dev->ibdev, "QUERY_SRQ %#x failed: %d\n", srq->srqn,
			  err);
		return err;
	}
	attr->max_wr = result.max_wr;
	attr->max_sge = result.max_sge;
	attr->srq_limit = result.srq_limit;
	return 0;
}

int qrdma_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata)
{
	struct qrdma_dev *dev = to_qdev(ibsrq->device);
	struct qrdma_srq *srq = to_qsrq(ibsrq);
	int err;

	err = qrdma_destroy_result(qrdma_cmd_destroy_srq(&dev->cmdq, srq->uctx,
							 srq->srqn));
	if (err && srq->uctx) {
		ibdev_dbg(&dev->ibdev, "DESTROY_SRQ %#x failed: %d\n",
			  srq->srqn, err);
		return err;
	}
	qrdma_drain_async_eq(dev);
	xa_erase(&dev->srq_xa, srq->srqn);
	qrdma_sync_eq(dev, QRDMA_ASYNC_EQ);
	if (!qrdma_kernel_destroy_refused(dev, "DESTROY_SRQ", srq->srqn, err))
		qrdma_wq_free(dev, &srq->rq);
	ib_umem_release(srq->umem);
	return 0;
}

static void qrdma_kah_destroy_work(struct work_struct *work)
{
	struct qrdma_kah *kah = container_of(work, struct qrdma_kah,
					     destroy_work);
	struct qrdma_dev *dev = kah->dev;
	struct qrdma_pd *pd = kah->pd;
	int err;

	if (kah->handle != QRDMA_HANDLE_NONE) {
		err = qrdma_destroy_result(qrdma_cmd_destroy_ah(&dev->cmdq,
								QRDMA_UCTX_KERNEL,
								kah->handle));
		qrdma_kernel_destroy_refused(dev, "DESTROY_AH", kah->handle,
					     err);
	}
	kfree(kah);
	/* The PD may go now: the device's AH no longer holds it. */
	if (atomic_dec_and_test(&pd->kahs))
		wake_up_var(&pd->kahs);
}

static void qrdma_kah_release(struct kref *ref)
{
	struct qrdma_kah *kah = container_of(ref, struct qrdma_kah, ref);

	queue_work(kah->dev->ah_wq, &kah->destroy_work);
}

/* Any context. */
void qrdma_kah_put(struct qrdma_kah *kah)
{
	kref_put(&kah->ref, qrdma_kah_release);
}

/* CREATE_AH for @kah, waiting for the device; done when it returns. */
static void qrdma_kah_make(struct qrdma_kah *kah)
{
	struct qrdma_dev *dev = kah->dev;
	u32 handle;

	kah->err = qrdma_cmd_create_ah(&dev->cmdq, QRDMA_UCTX_KERNEL,
				       kah->pd->pdn, &kah->av, &handle);
	kah->handle = kah->err ? QRDMA_HANDLE_NONE : handle;
	/* Orders the handle before the sends that read it. */
	complete_all(&kah->made);
}

static void qrdma_kah_make_work(struct work_struct *work)
{
	struct qrdma_kah *kah = container_of(work, struct qrdma_kah,
					     make_work);

	qrdma_kah_make(kah);
	/* Its sends then fail with LOC_QP_OP_ERR, their QP to SQE. */
	if (kah->err)
		ibdev_warn_ratelimited(&kah->dev->ibdev,
				       "CREATE_AH of the kernel failed: %d\n",
				       kah->err);
	qrdma_kah_put(kah);
}

static int qrdma_create_kernel_ah(struct qrdma_dev *dev, struct qrdma_pd *pd,
				  struct qrdma_ah *ah,
				  const struct qrdma_av_params *av,
				  bool can_sleep)
{
	struct qrdma_kah *kah;
	int err;

	kah = kzalloc(sizeof(*kah), can_sleep ? GFP_KERNEL : GFP_ATOMIC);
	if (!kah)
		return -ENOMEM;
	kref_init(&kah->ref);
	kah->dev = dev;
	kah->pd = pd;
	kah->av = *av;
	INIT_WORK(&kah->make_work, qrdma_kah_make_work);
	INIT_WORK(&kah->destroy_work, qrdma_kah_destroy_work);
	init_completion(&kah->made);
	atomic_inc(&pd->kahs);
	ah->kah = kah;

	if (!can_sleep) {
		/* The make work's reference. */
		kref_get(&kah->ref);
		queue_work(dev->ah_wq, &kah->make_work);
		return 0;
	}

	qrdma_kah_make(kah);
	err = kah->err;
	if (err) {
		ibdev_dbg(&dev->ibdev, "CREATE_AH failed: %d\n", err);
		ah->kah = NULL;
		qrdma_kah_put(kah);
	}
	return err;
}

int qrdma_create_ah(struct ib_ah *ibah, struct rdma_ah_init_attr *init_attr,
		    struct ib_udata *udata)
{
	struct qrdma_dev *dev = to_qdev(ibah->device);
	struct qrdma_pd *pd = to_qpd(ibah->pd);
	struct qrdma_ah *ah = to_qah(ibah);
	struct qrdma_ibv_create_ah_resp resp = {};
	struct qrdma_av_params av;
	int err;

	if (!qrdma_udata_is_empty(&dev->ibdev, udata))
		return -EINVAL;

	err = qrdma_ah_attr_to_av(dev, init_attr->ah_attr, &av);
	if (err)
		return err;

	ah->uctx = pd->uctx;
	/* The kernel's CM creates AHs under its locks. */
	if (!udata)
		return qrdma_create_kernel_ah(dev, pd, ah, &av,
					      init_attr->flags &
					      RDMA_CREATE_AH_SLEEPABLE);

	err = qrdma_cmd_create_ah(&dev->cmdq, ah->uctx, pd->pdn, &av,
				  &ah->handle);
	if (err) {
		ibdev_dbg(&dev->ibdev, "CREATE_AH failed: %d\n", err);
		return err;
	}
	resp.ah = ah->handle;
	err = qrdma_copy_resp(&dev->ibdev, udata, &resp, sizeof(resp));
	if (err)
		qrdma_cmd_destroy_ah(&dev->cmdq, ah->uctx, ah->handle);
	return err;
}

int qrdma_destroy_ah(struct ib_ah *ibah, u32 flags)
{
	struct qrdma_dev *dev = to_qdev(ibah->device);
	struct qrdma_ah *ah = to_qah(ibah);
	int err;

	/* Maybe where the caller cannot sleep: the work destroys it. */
	if (ah->kah) {
		qrdma_kah_put(ah->kah);
		return 0;
	}

	/* uverbs destroys user AHs where it may sleep. */
	err = qrdma_destroy_result(qrdma_cmd_destroy_ah(&dev->cmdq, ah->uctx,
							ah->handle));
	if (err)
		ibdev_dbg(&dev->ibdev, "DESTROY_AH %#x failed: %d\n",
			  ah->handle, err);
	return err;
}

int qrdma_attach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid)
{
	struct qrdma_dev *dev = to_qdev(ibqp->device);
	struct qrdma_qp *qp = to_qqp(ibqp);
	int err;

	err = qrdma_cmd_attach_mcast(&dev->cmdq, qp->uctx, qp->qpn, gid->raw);
	if (err)
		ibdev_dbg(&dev->ibdev, "ATTACH_MCAST of QP %#x to %pI6 failed: %d\n",
			  qp->qpn, gid->raw, err);
	return err;
}

int qrdma_detach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid)
{
	struct qrdma_dev *dev = to_qdev(ibqp->device);
	struct qrdma_qp *qp = to_qqp(ibqp);
	int err;

	err = qrdma_cmd_detach_mcast(&dev->cmdq, qp->uctx, qp->qpn, gid->raw);
	if (err)
		ibdev_dbg(&dev->ibdev, "DETACH_MCAST of QP %#x from %pI6 failed: %d\n",
			  qp->qpn, gid->raw, err);
	return qrdma_destroy_result(err);
}

enum qrdma_hw_stat {
	/* The device's, from QUERY_STATS */
	QRDMA_STAT_CMDS,
	QRDMA_STAT_CMD_ERRORS,
	QRDMA_STAT_GUEST_ERRORS,
	QRDMA_STAT_ETH_TX_FRAMES,
	QRDMA_STAT_ETH_RX_FRAMES,
	QRDMA_STAT_ETH_RX_DROPPED,
	QRDMA_STAT_ETH_TX_DROPPED,
	QRDMA_STAT_UCTX,
	QRDMA_STAT_PD,
	QRDMA_STAT_MR,
	QRDMA_STAT_MW,
	QRDMA_STAT_CQ,
	QRDMA_STAT_QP,
	QRDMA_STAT_SRQ,
	QRDMA_STAT_AH,
	QRDMA_STAT_MCAST,
	QRDMA_STAT_SENT_PKTS,
	QRDMA_STAT_RCVD_PKTS,
	QRDMA_STAT_DROPPED_PKTS,
	QRDMA_STAT_DUP_REQ,
	QRDMA_STAT_OUT_OF_SEQ,
	QRDMA_STAT_SEND_SEQ_ERR,
	QRDMA_STAT_RCVD_SEQ_ERR,
	QRDMA_STAT_SEND_RNR_ERR,
	QRDMA_STAT_RCVD_RNR_ERR,
	QRDMA_STAT_RETRANSMITS,
	QRDMA_STAT_RETRY_EXCEEDED,
	QRDMA_STAT_ICRC_ERRORS,
	QRDMA_STAT_WIRE_MALFORMED,
	/* The driver's */
	QRDMA_STAT_CMD_TIMEOUTS,
	QRDMA_STAT_CMD_FAILURES,
	QRDMA_STAT_ASYNC_EVENTS,
	QRDMA_STAT_COMP_EVENTS,
	QRDMA_STAT_BAD_EVENTS,
	QRDMA_STAT_STALE_CQES,
	QRDMA_NUM_STATS,
};

static const struct rdma_stat_desc qrdma_port_stat_descs[] = {
	[QRDMA_STAT_CMDS].name = "cmds",
	[QRDMA_STAT_CMD_ERRORS].name = "cmd_errors",
	[QRDMA_STAT_GUEST_ERRORS].name = "guest_errors",
	[QRDMA_STAT_ETH_TX_FRAMES].name = "eth_tx_frames",
	[QRDMA_STAT_ETH_RX_FRAMES].name = "eth_rx_frames",
	[QRDMA_STAT_ETH_RX_DROPPED].name = "eth_rx_dropped",
	[QRDMA_STAT_ETH_TX_DROPPED].name = "eth_tx_dropped",
	[QRDMA_STAT_UCTX].name = "live_uctx",
	[QRDMA_STAT_PD].name = "live_pd",
	[QRDMA_STAT_MR].name = "live_mr",
	[QRDMA_STAT_MW].name = "live_mw",
	[QRDMA_STAT_CQ].name = "live_cq",
	[QRDMA_STAT_QP].name = "live_qp",
	[QRDMA_STAT_SRQ].name = "live_srq",
	[QRDMA_STAT_AH].name = "live_ah",
	[QRDMA_STAT_MCAST].name = "live_mcast_groups",
	/* The transport's, by rxe's names where rxe counts the same */
	[QRDMA_STAT_SENT_PKTS].name = "sent_pkts",
	[QRDMA_STAT_RCVD_PKTS].name = "rcvd_pkts",
	[QRDMA_STAT_DROPPED_PKTS].name = "dropped_pkts",
	[QRDMA_STAT_DUP_REQ].name = "duplicate_request",
	[QRDMA_STAT_OUT_OF_SEQ].name = "out_of_seq_request",
	[QRDMA_STAT_SEND_SEQ_ERR].name = "send_seq_err",
	[QRDMA_STAT_RCVD_SEQ_ERR].name = "rcvd_seq_err",
	[QRDMA_STAT_SEND_RNR_ERR].name = "send_rnr_err",
	[QRDMA_STAT_RCVD_RNR_ERR].name = "rcvd_rnr_err",
	[QRDMA_STAT_RETRANSMITS].name = "completer_retry_err",
	[QRDMA_STAT_RETRY_EXCEEDED].name = "retry_exceeded_err",
	[QRDMA_STAT_ICRC_ERRORS].name = "icrc_errors",
	[QRDMA_STAT_WIRE_MALFORMED].name = "malformed_frames",
	[QRDMA_STAT_CMD_TIMEOUTS].name = "cmd_timeouts",
	[QRDMA_STAT_CMD_FAILURES].name = "cmd_failures",
	[QRDMA_STAT_ASYNC_EVENTS].name = "async_events",
	[QRDMA_STAT_COMP_EVENTS].name = "completion_events",
	[QRDMA_STAT_BAD_EVENTS].name = "bad_events",
	[QRDMA_STAT_STALE_CQES].name = "stale_cqes",
};

static_assert(ARRAY_SIZE(qrdma_port_stat_descs) == QRDMA_NUM_STATS);

struct rdma_hw_stats *qrdma_alloc_hw_port_stats(struct ib_device *ibdev,
						u32 port)
{
	return rdma_alloc_hw_stats_struct(qrdma_port_stat_descs,
					  QRDMA_NUM_STATS,
					  RDMA_HW_STATS_DEFAULT_LIFESPAN);
}

int qrdma_get_hw_stats(struct ib_device *ibdev, struct rdma_hw_stats *stats,
		       u32 port, int index)
{
	struct qrdma_dev *dev = to_qdev(ibdev);
	struct qrdma_cmdq_stats *cs = &dev->cmdq.stats;
	struct qrdma_sw_stats *ss = &dev->sw_stats;
	struct qrdma_dev_stats ds;
	u64 *v = stats->value;
	int err;

	err = qrdma_cmd_query_stats(&dev->cmdq, &ds);
	if (err) {
		ibdev_err_ratelimited(ibdev, "QUERY_STATS failed: %d\n", err);
		return err;
	}

	v[QRDMA_STAT_CMDS] = ds.cmds;
	v[QRDMA_STAT_CMD_ERRORS] = ds.cmd_errors;
	v[QRDMA_STAT_GUEST_ERRORS] = ds.guest_errors;
	v[QRDMA_STAT_ETH_TX_FRAMES] = ds.eth_tx_frames;
	v[QRDMA_STAT_ETH_RX_FRAMES] = ds.eth_rx_frames;
	v[QRDMA_STAT_ETH_RX_DROPPED] = ds.eth_rx_dropped;
	v[QRDMA_STAT_ETH_TX_DROPPED] = ds.eth_tx_dropped;
	v[QRDMA_STAT_UCTX] = ds.uctx;
	v[QRDMA_STAT_PD] = ds.pd;
	v[QRDMA_STAT_MR] = ds.mr;
	v[QRDMA_STAT_MW] = ds.mw;
	v[QRDMA_STAT_CQ] = ds.cq;
	v[QRDMA_STAT_QP] = ds.qp;
	v[QRDMA_STAT_SRQ] = ds.srq;
	v[QRDMA_STAT_AH] = ds.ah;
	v[QRDMA_STAT_MCAST] = ds.mcast;
	v[QRDMA_STAT_SENT_PKTS] = ds.pkts_sent;
	v[QRDMA_STAT_RCVD_PKTS] = ds.pkts_rcvd;
	v[QRDMA_STAT_DROPPED_PKTS] = ds.pkts_dropped;
	v[QRDMA_STAT_DUP_REQ] = ds.dup_reqs;
	v[QRDMA_STAT_OUT_OF_SEQ] = ds.out_of_seq;
	v[QRDMA_STAT_SEND_SEQ_ERR] = ds.seq_naks_sent;
	v[QRDMA_STAT_RCVD_SEQ_ERR] = ds.seq_naks_rcvd;
	v[QRDMA_STAT_SEND_RNR_ERR] = ds.rnr_naks_sent;
	v[QRDMA_STAT_RCVD_RNR_ERR] = ds.rnr_naks_rcvd;
	v[QRDMA_STAT_RETRANSMITS] = ds.retransmits;
	v[QRDMA_STAT_RETRY_EXCEEDED] = ds.retry_exceeded;
	v[QRDMA_STAT_ICRC_ERRORS] = ds.icrc_errors;
	v[QRDMA_STAT_WIRE_MALFORMED] = ds.wire_malformed;
	v[QRDMA_STAT_CMD_TIMEOUTS] = atomic64_read(&cs->timeouts);
	v[QRDMA_STAT_CMD_FAILURES] = atomic64_read(&cs->failed);
	v[QRDMA_STAT_ASYNC_EVENTS] = atomic64_read(&ss->async_events);
	v[QRDMA_STAT_COMP_EVENTS] = atomic64_read(&ss->comp_events);
	v[QRDMA_STAT_BAD_EVENTS] = atomic64_read(&ss->bad_events);
	v[QRDMA_STAT_STALE_CQES] = atomic64_read(&ss->stale_cqes);
	return QRDMA_NUM_STATS;
}
