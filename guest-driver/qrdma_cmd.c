// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * One function per device command: fill the wire structure from plain
 * parameters, execute, return plain results.
 */

#include <linux/device.h>
#include <linux/string.h>

#include "qrdma_cmd.h"
#include "qrdma_cmdq.h"

static void qrdma_cmd_init(struct qrdma_cmd *cmd, u8 opcode, u32 uctx)
{
	memset(cmd, 0, sizeof(*cmd));
	cmd->hdr.opcode = opcode;
	cmd->hdr.uctx = cpu_to_le32(uctx);
}

static int qrdma_cmd_exec(struct qrdma_cmdq *cmdq, struct qrdma_cmd *cmd,
			  struct qrdma_cmpl *cmpl, void *resp, u32 resp_len)
{
	u8 opcode = cmd->hdr.opcode;
	int err;

	memset(cmpl, 0, sizeof(*cmpl));
	err = qrdma_cmdq_exec(cmdq, cmd, cmpl, resp, resp_len);
	/*
	 * A failing status is most often the answer to what a consumer
	 * asked for (a busy CQ, a bad attribute): not a device failure.
	 */
	if (err && err != -ETIMEDOUT && err != -ENODEV)
		dev_dbg(cmdq->dmadev, "%s (uctx %u) failed: status %u (%d)\n",
			qrdma_cmd_name(opcode), le32_to_cpu(cmd->hdr.uctx),
			cmpl->status, err);
	return err;
}

/* The commands that only name a resource by its handle. */
static int qrdma_cmd_destroy(struct qrdma_cmdq *cmdq, u8 opcode, u32 uctx,
			     u32 handle)
{
	struct qrdma_cmpl cmpl;
	struct qrdma_cmd cmd;

	qrdma_cmd_init(&cmd, opcode, uctx);
	cmd.destroy.handle = cpu_to_le32(handle);
	return qrdma_cmd_exec(cmdq, &cmd, &cmpl, NULL, 0);
}

int qrdma_cmd_query_device(struct qrdma_cmdq *cmdq,
			   struct qrdma_dev_attr *attr)
{
	struct qrdma_device_attr resp;
	struct qrdma_cmpl cmpl;
	struct qrdma_cmd cmd;
	int err;

	BUILD_BUG_ON(sizeof(resp) > QRDMA_CMDQ_RESP_SIZE);
	qrdma_cmd_init(&cmd, QRDMA_CMD_QUERY_DEVICE, QRDMA_UCTX_KERNEL);
	err = qrdma_cmd_exec(cmdq, &cmd, &cmpl, &resp, sizeof(resp));
	if (err)
		return err;

	attr->fw_ver = le64_to_cpu(resp.fw_ver);
	/* Bytes in network order, as IB keeps GUIDs. */
	attr->node_guid = resp.node_guid;
	attr->max_mr_size = le64_to_cpu(resp.max_mr_size);
	attr->page_size_cap = le64_to_cpu(resp.page_size_cap);
	attr->vendor_id = le32_to_cpu(resp.vendor_id);
	attr->vendor_part_id = le32_to_cpu(resp.vendor_part_id);
	attr->hw_ver = le32_to_cpu(resp.hw_ver);
	attr->max_qp = le32_to_cpu(resp.max_qp);
	attr->max_qp_wr = le32_to_cpu(resp.max_qp_wr);
	attr->max_send_sge = le32_to_cpu(resp.max_send_sge);
	attr->max_recv_sge = le32_to_cpu(resp.max_recv_sge);
	attr->max_sge_rd = le32_to_cpu(resp.max_sge_rd);
	attr->max_cq = le32_to_cpu(resp.max_cq);
	attr->max_cqe = le32_to_cpu(resp.max_cqe);
	attr->max_mr = le32_to_cpu(resp.max_mr);
	attr->max_pd = le32_to_cpu(resp.max_pd);
	attr->max_qp_rd_atom = le32_to_cpu(resp.max_qp_rd_atom);
	attr->max_qp_init_rd_atom = le32_to_cpu(resp.max_qp_init_rd_atom);
	attr->max_srq = le32_to_cpu(resp.max_srq);
	attr->max_srq_wr = le32_to_cpu(resp.max_srq_wr);
	attr->max_srq_sge = le32_to_cpu(resp.max_srq_sge);
	attr->max_ah = le32_to_cpu(resp.max_ah);
	attr->max_mcast_grp = le32_to_cpu(resp.max_mcast_grp);
	attr->max_mcast_qp_attach = le32_to_cpu(resp.max_mcast_qp_attach);
	attr->max_uctx = le32_to_cpu(resp.max_uctx);
	attr->max_inline_data = le32_to_cpu(resp.max_inline_data);
	attr->max_fast_reg_page_list_len =
		le32_to_cpu(resp.max_fast_reg_page_list_len);
	attr->max_mr_pages = le32_to_cpu(resp.max_mr_pages);
	attr->num_comp_vectors = le32_to_cpu(resp.num_comp_vectors);
	attr->max_pkeys = le32_to_cpu(resp.max_pkeys);
	attr->local_ca_ack_delay = resp.local_ca_ack_delay;
	attr->atomic_cap = resp.atomic_cap;
	attr->device_caps = le32_to_cpu(resp.device_caps);
	attr->max_mw = le32_to_cpu(resp.max_mw);
	return 0;
}

int qrdma_cmd_query_port(struct qrdma_cmdq *cmdq, u32 port,
			 struct qrdma_port_info *info)
{
	struct qrdma_port_attr resp;
	struct qrdma_cmpl cmpl;
	struct qrdma_cmd cmd;
	int err;

	BUILD_BUG_ON(sizeof(resp) > QRDMA_CMDQ_RESP_SIZE);
	qrdma_cmd_init(&cmd, QRDMA_CMD_QUERY_PORT, QRDMA_UCTX_KERNEL);
	cmd.query.index = cpu_to_le32(port);
	err = qrdma_cmd_exec(cmdq, &cmd, &cmpl, &resp, sizeof(resp));
	if (err)
		return err;

	info->state = resp.state;
	info->phys_state = resp.phys_state;
	info->max_mtu = resp.max_mtu;
	info->active_mtu = resp.active_mtu;
	info->active_speed = resp.active_speed;
	info->active_width = resp.active_width;
	info->pkey_tbl_len = le16_to_cpu(resp.pkey_tbl_len);
	info->gid_tbl_len = le32_to_cpu(resp.gid_tbl_len);
	info->max_msg_sz = le32_to_cpu(resp.max_msg_sz);
	memcpy(info->mac, resp.mac, ETH_ALEN);
	return 0;
}

int qrdma_cmd_query_stats(struct qrdma_cmdq *cmdq,
			  struct qrdma_dev_stats *stats)
{
	struct qrdma_stats resp;
	struct qrdma_cmpl cmpl;
	struct qrdma_cmd cmd;
	int err;

	BUILD_BUG_ON(sizeof(resp) > QRDMA_CMDQ_RESP_SIZE);
	qrdma_cmd_init(&cmd, QRDMA_CMD_QUERY_STATS, QRDMA_UCTX_KERNEL);
	err = qrdma_cmd_exec(cmdq, &cmd, &cmpl, &resp, sizeof(resp));
	if (err)
		return err;

	stats->cmds = le64_to_cpu(resp.cmds);
	stats->cmd_errors = le64_to_cpu(resp.cmd_errors);
	stats->guest_errors = le64_to_cpu(resp.guest_errors);
	stats->eth_tx_frames = le64_to_cpu(resp.eth_tx_frames);
	stats->eth_rx_frames = le64_to_cpu(resp.eth_rx_frames);
	stats->eth_rx_dropped = le64_to_cpu(resp.eth_rx_dropped);
	stats->eth_tx_dropped = le64_to_cpu(resp.eth_tx_dropped);
	stats->uctx = le32_to_cpu(resp.uctx);
	stats->pd = le32_to_cpu(resp.pd);
	stats->mr = le32_to_cpu(resp.mr);
	stats->cq = le32_to_cpu(resp.cq);
	stats->qp = le32_to_cpu(resp.qp);
	stats->srq = le32_to_cpu(resp.srq);
	stats->ah = le32_to_cpu(resp.ah);
	stats->mcast = le32_to_cpu(resp.mcast);
	stats->mw = le32_to_cpu(resp.mw);
	stats->pkts_sent = le64_to_cpu(resp.pkts_sent);
	stats->pkts_rcvd = le64_to_cpu(resp.pkts_rcvd);
	stats->pkts_dropped = le64_to_cpu(resp.pkts_dropped);
	stats->dup_reqs = le64_to_cpu(resp.dup_reqs);
	stats->out_of_seq = le64_to_cpu(resp.out_of_seq);
	stats->seq_naks_sent = le64_to_cpu(resp.seq_naks_sent);
	stats->seq_naks_rcvd = le64_to_cpu(resp.seq_naks_rcvd);
	stats->rnr_naks_sent = le64_to_cpu(resp.rnr_naks_sent);
	stats->rnr_naks_rcvd = le64_to_cpu(resp.rnr_naks_rcvd);
	stats->retransmits = le64_to_cpu(resp.retransmits);
	stats->retry_exceeded = le64_to_cpu(resp.retry_exceeded);
	stats->icrc_errors = le64_to_cpu(resp.icrc_errors);
	stats->wire_malformed = le64_to_cpu(resp.wire_malformed);
	return 0;
}

int qrdma_cmd_set_gid(struct qrdma_cmdq *cmdq,
		      const struct qrdma_gid_params *params)
{
	struct qrdma_cmpl cmpl;
	struct qrdma_cmd cmd;

	qrdma_cmd_init(&cmd, QRDMA_CMD_SET_GID, QRDMA_UCTX_KERNEL);
	cmd.gid.index = cpu_to_le32(params->index);
	cmd.gid.type = QRDMA_GID_TYPE_ROCE_V2;
	cmd.gid.vlan_id = cpu_to_le16(params->vlan_id);
	memcpy(cmd.gid.gid, params->gid, sizeof(cmd.gid.gid));
	memcpy(cmd.gid.mac, params->mac, sizeof(cmd.gid.mac));
	return qrdma_cmd_exec(cmdq, &cmd, &cmpl, NULL, 0);
}

int qrdma_cmd_del_gid(struct qrdma_cmdq *cmdq, u32 index)
{
	struct qrdma_cmpl cmpl;
	struct qrdma_cmd cmd;

	qrdma_cmd_init(&cmd, QRDMA_CMD_DEL_GID, QRDMA_UCTX_KERNEL);
	cmd.gid.index = cpu_to_le32(index);
	return qrdma_cmd_exec(cmdq, &cmd, &cmpl, NULL, 0);
}

int qrdma_cmd_create_uctx(struct qrdma_cmdq *cmdq,
			  struct qrdma_uctx_result *result)
{
	struct qrdma_cmpl cmpl;
	struct qrdma_cmd cmd;
	int err;

	qrdma_cmd_init(&cmd, QRDMA_CMD_CREATE_UCTX, QRDMA_UCTX_KERNEL);
	err = qrdma_cmd_exec(cmdq, &cmd, &cmpl, NULL, 0);
	if (err)
		return err;

	result->handle = le32_to_cpu(cmpl.handle);
	result->db_page = le32_to_cpu(cmpl.data[0]);
	return 0;
}

int qrdma_cmd_destroy_uctx(struct qrdma_cmdq *cmdq, u32 handle)
{
	return qrdma_cmd_destroy(cmdq, QRDMA_CMD_DESTROY_UCTX,
				 QRDMA_UCTX_KERNEL, handle);
}

int qrdma_cmd_alloc_pd(struct qrdma_cmdq *cmdq, u32 uctx, u32 *pdn)
{
	struct qrdma_cmpl cmpl;
	struct qrdma_cmd cmd;
	int err;

	qrdma_cmd_init(&cmd, QRDMA_CMD_ALLOC_PD, uctx);
	err = qrdma_cmd_exec(cmdq, &cmd, &cmpl, NULL, 0);
	if (err)
		return err;

	*pdn = le32_to_cpu(cmpl.handle);
	return 0;
}

int qrdma_cmd_dealloc_pd(struct qrdma_cmdq *cmdq, u32 uctx, u32 pdn)
{
	return qrdma_cmd_destroy(cmdq, QRDMA_CMD_DEALLOC_PD, uctx, pdn);
}

int qrdma_cmd_reg_mr(struct qrdma_cmdq *cmdq,
		     const struct qrdma_reg_mr_params *params,
		     struct qrdma_mr_keys *keys)
{
	struct qrdma_cmpl cmpl;
	struct qrdma_cmd cmd;
	int err;

	qrdma_cmd_init(&cmd, QRDMA_CMD_REG_MR, params->uctx);
	cmd.reg_mr.pd = cpu_to_le32(params->pd);
	cmd.reg_mr.access = cpu_to_le32(params->access);
	if (params->dma) {
		cmd.reg_mr.flags = QRDMA_MR_F_DMA;
	} else {
		cmd.reg_mr.iova = cpu_to_le64(params->iova);
		cmd.reg_mr.length = cpu_to_le64(params->length);
		cmd.reg_mr.pages_addr = cpu_to_le64(params->pages_dma);
		cmd.reg_mr.npages = cpu_to_le32(params->npages);
		cmd.reg_mr.page_shift = params->page_shift;
	}
	err = qrdma_cmd_exec(cmdq, &cmd, &cmpl, NULL, 0);
	if (err)
		return err;

	keys->lkey = le32_to_cpu(cmpl.handle);
	keys->rkey = le32_to_cpu(cmpl.data[0]);
	return 0;
}

int qrdma_cmd_alloc_mr(struct qrdma_cmdq *cmdq, u32 uctx, u32 pd,
		       u32 max_pages, struct qrdma_mr_keys *keys)
{
	struct qrdma_cmpl cmpl;
	struct qrdma_cmd cmd;
	int err;

	qrdma_cmd_init(&cmd, QRDMA_CMD_ALLOC_MR, uctx);
	cmd.alloc_mr.pd = cpu_to_le32(pd);
	cmd.alloc_mr.max_pages = cpu_to_le32(max_pages);
	err = qrdma_cmd_exec(cmdq, &cmd, &cmpl, NULL, 0);
	if (err)
		return err;

	keys->lkey = le32_to_cpu(cmpl.handle);
	keys->rkey = le32_to_cpu(cmpl.data[0]);
	return 0;
}

int qrdma_cmd_dereg_mr(struct qrdma_cmdq *cmdq, u32 uctx, u32 lkey)
{
	return qrdma_cmd_destroy(cmdq, QRDMA_CMD_DEREG_MR, uctx, lkey);
}

int qrdma_cmd_alloc_mw(struct qrdma_cmdq *cmdq, u32 uctx, u32 pd, u8 type,
		       struct qrdma_mw_result *result)
{
	struct qrdma_cmpl cmpl;
	struct qrdma_cmd cmd;
	int err;

	qrdma_cmd_init(&cmd, QRDMA_CMD_ALLOC_MW, uctx);
	cmd.alloc_mw.pd = cpu_to_le32(pd);
	cmd.alloc_mw.type = type;
	err = qrdma_cmd_exec(cmdq, &cmd, &cmpl, NULL, 0);
	if (err)
		return err;

	result->handle = le32_to_cpu(cmpl.handle);
	result->rkey = le32_to_cpu(cmpl.data[0]);
	return 0;
}

int qrdma_cmd_dealloc_mw(struct qrdma_cmdq *cmdq, u32 uctx, u32 handle)
{
	return qrdma_cmd_destroy(cmdq, QRDMA_CMD_DEALLOC_MW, uctx, handle);
}

static void qrdma_cmd_fill_cq(struct qrdma_cmd *cmd,
			      const struct qrdma_cq_params *params)
{
	cmd->cq.pages_addr = cpu_to_le64(params->pages_dma);
	cmd->cq.npages = cpu_to_le32(params->npages);
	cmd->cq.log2_entries = cpu_to_le32(params->log2_entries);
}

int qrdma_cmd_create_cq(struct qrdma_cmdq *cmdq,
			const struct qrdma_cq_params *params,
			struct qrdma_cq_result *result)
{
	struct qrdma_cmpl cmpl;
	struct qrdma_cmd cmd;
	int err;

	qrdma_cmd_init(&cmd, QRDMA_CMD_CREATE_CQ, params->uctx);
	qrdma_cmd_fill_cq(&cmd, params);
	cmd.cq.eq = cpu_to_le32(params->eq);
	cmd.cq.flags = cpu_to_le32(params->flags);
	cmd.cq.ci_addr = cpu_to_le64(params->ci_dma);
	err = qrdma_cmd_exec(cmdq, &cmd, &cmpl, NULL, 0);
	if (err)
		return err;

	result->cqn = le32_to_cpu(cmpl.handle);
	result->entries = le32_to_cpu(cmpl.data[0]);
	return 0;
}

int qrdma_cmd_resize_cq(struct qrdma_cmdq *cmdq,
			const struct qrdma_cq_params *params,
			struct qrdma_cq_result *result)
{
	struct qrdma_cmpl cmpl;
	struct qrdma_cmd cmd;
	int err;

	qrdma_cmd_init(&cmd, QRDMA_CMD_RESIZE_CQ, params->uctx);
	qrdma_cmd_fill_cq(&cmd, params);
	cmd.cq.cqn = cpu_to_le32(params->cqn);
	cmd.cq.ci = cpu_to_le32(params->ci);
	err = qrdma_cmd_exec(cmdq, &cmd, &cmpl, NULL, 0);
	if (err)
		return err;

	result->cqn = params->cqn;
	result->entries = le32_to_cpu(cmpl.data[0]);
	return 0;
}

int qrdma_cmd_destroy_cq(struct qrdma_cmdq *cmdq, u32 uctx, u32 cqn)
{
	return qrdma_cmd_destroy(cmdq, QRDMA_CMD_DESTROY_CQ, uctx, cqn);
}

static void qrdma_caps_from_wire(struct qrdma_qp_caps *caps,
				 const struct qrdma_create_qp_resp *wire)
{
	caps->max_send_wr = le32_to_cpu(wire->max_send_wr);
	caps->max_recv_wr = le32_to_cpu(wire->max_recv_wr);
	caps->max_send_sge = le32_to_cpu(wire->max_send_sge);
	caps->max_recv_sge = le32_to_cpu(wire->max_recv_sge);
	caps->max_inline_data = le32_to_cpu(wire->max_inline_data);
}

int qrdma_cmd_create_qp(struct qrdma_cmdq *cmdq,
			const struct qrdma_create_qp_params *params,
			struct qrdma_create_qp_result *result)
{
	struct qrdma_create_qp_resp wire_caps;
	struct qrdma_cmd_create_qp *c;
	struct qrdma_cmpl cmpl;
	struct qrdma_cmd cmd;
	int err;

	qrdma_cmd_init(&cmd, QRDMA_CMD_CREATE_QP, params->uctx);
	c = &cmd.create_qp;
	c->pd = cpu_to_le32(params->pd);
	c->send_cq = cpu_to_le32(params->send_cq);
	c->recv_cq = cpu_to_le32(params->recv_cq);
	c->srq = cpu_to_le32(params->srq);
	c->qp_type = params->qp_type;
	c->flags = params->sq_sig_all ? QRDMA_QP_F_SQ_SIG_ALL : 0;
	c->sq_log2 = params->sq_log2;
	c->rq_log2 = params->rq_log2;
	c->max_send_wr = cpu_to_le32(params->max_send_wr);
	c->max_recv_wr = cpu_to_le32(params->max_recv_wr);
	c->max_send_sge = cpu_to_le32(params->max_send_sge);
	c->max_recv_sge = cpu_to_le32(params->max_recv_sge);
	c->max_inline_data = cpu_to_le32(params->max_inline_data);
	c->sq_pages_addr = cpu_to_le64(params->sq_pages_dma);
	c->rq_pages_addr = cpu_to_le64(params->rq_pages_dma);
	c->sq_npages = cpu_to_le32(params->sq_npages);
	c->rq_npages = cpu_to_le32(params->rq_npages);
	err = qrdma_cmd_exec(cmdq, &cmd, &cmpl, NULL, 0);
	if (err)
		return err;

	BUILD_BUG_ON(sizeof(wire_caps) > sizeof(cmpl.data));
	memcpy(&wire_caps, cmpl.data, sizeof(wire_caps));
	result->qpn = le32_to_cpu(cmpl.handle);
	qrdma_caps_from_wire(&result->caps, &wire_caps);
	return 0;
}

static void qrdma_av_to_wire(struct qrdma_av *wire,
			     const struct qrdma_av_params *av)
{
	memcpy(wire->dgid, av->dgid, sizeof(wire->dgid));
	wire->flow_label = cpu_to_le32(av->flow_label);
	wire->sgid_index = av->sgid_index;
	wire->hop_limit = av->hop_limit;
	wire->traffic_class = av->traffic_class;
	wire->sl = av->sl;
	memcpy(wire->dmac, av->dmac, sizeof(wire->dmac));
	wire->vlan_id = cpu_to_le16(av->vlan_id);
}

static void qrdma_av_from_wire(struct qrdma_av_params *av,
			       const struct qrdma_av *wire)
{
	memcpy(av->dgid, wire->dgid, sizeof(av->dgid));
	av->flow_label = le32_to_cpu(wire->flow_label);
	av->sgid_index = wire->sgid_index;
	av->hop_limit = wire->hop_limit;
	av->traffic_class = wire->traffic_class;
	av->sl = wire->sl;
	memcpy(av->dmac, wire->dmac, sizeof(av->dmac));
	av->vlan_id = le16_to_cpu(wire->vlan_id);
}

int qrdma_cmd_modify_qp(struct qrdma_cmdq *cmdq, u32 uctx, u32 qpn,
			const struct qrdma_qp_params *attr)
{
	struct qrdma_qp_attr *w;
	struct qrdma_cmpl cmpl;
	struct qrdma_cmd cmd;

	qrdma_cmd_init(&cmd, QRDMA_CMD_MODIFY_QP, uctx);
	cmd.modify_qp.qpn = cpu_to_le32(qpn);
	w = &cmd.modify_qp.attr;
	w->attr_mask = cpu_to_le32(attr->attr_mask);
	w->qp_state = attr->qp_state;
	w->cur_qp_state = attr->cur_qp_state;
	w->path_mtu = attr->path_mtu;
	w->path_mig_state = attr->path_mig_state;
	w->qkey = cpu_to_le32(attr->qkey);
	w->rq_psn = cpu_to_le32(attr->rq_psn);
	w->sq_psn = cpu_to_le32(attr->sq_psn);
	w->dest_qp_num = cpu_to_le32(attr->dest_qp_num);
	w->qp_access_flags = cpu_to_le32(attr->qp_access_flags);
	w->pkey_index = cpu_to_le16(attr->pkey_index);
	w->en_sqd_async_notify = attr->en_sqd_async_notify;
	w->max_rd_atomic = attr->max_rd_atomic;
	w->max_dest_rd_atomic = attr->max_dest_rd_atomic;
	w->min_rnr_timer = attr->min_rnr_timer;
	w->port_num = attr->port_num;
	w->timeout = attr->timeout;
	w->retry_cnt = attr->retry_cnt;
	w->rnr_retry = attr->rnr_retry;
	qrdma_av_to_wire(&w->av, &attr->av);
	return qrdma_cmd_exec(cmdq, &cmd, &cmpl, NULL, 0);
}

int qrdma_cmd_query_qp(struct qrdma_cmdq *cmdq, u32 uctx, u32 qpn,
		       struct qrdma_query_qp_result *result)
{
	struct qrdma_query_qp_resp resp;
	struct qrdma_qp_params *attr = &result->attr;
	struct qrdma_qp_attr *w = &resp.attr;
	struct qrdma_cmpl cmpl;
	struct qrdma_cmd cmd;
	int err;

	BUILD_BUG_ON(sizeof(resp) > QRDMA_CMDQ_RESP_SIZE);
	qrdma_cmd_init(&cmd, QRDMA_CMD_QUERY_QP, uctx);
	cmd.query.index = cpu_to_le32(qpn);
	err = qrdma_cmd_exec(cmdq, &cmd, &cmpl, &resp, sizeof(resp));
	if (err)
		return err;

	attr->attr_mask = le32_to_cpu(w->attr_mask);
	attr->qp_state = w->qp_state;
	attr->cur_qp_state = w->cur_qp_state;
	attr->path_mtu = w->path_mtu;
	attr->path_mig_state = w->path_mig_state;
	attr->qkey = le32_to_cpu(w->qkey);
	attr->rq_psn = le32_to_cpu(w->rq_psn);
	attr->sq_psn = le32_to_cpu(w->sq_psn);
	attr->dest_qp_num = le32_to_cpu(w->dest_qp_num);
	attr->qp_access_flags = le32_to_cpu(w->qp_access_flags);
	attr->pkey_index = le16_to_cpu(w->pkey_index);
	attr->en_sqd_async_notify = w->en_sqd_async_notify;
	attr->sq_draining = w->sq_draining;
	attr->max_rd_atomic = w->max_rd_atomic;
	attr->max_dest_rd_atomic = w->max_dest_rd_atomic;
	attr->min_rnr_timer = w->min_rnr_timer;
	attr->port_num = w->port_num;
	attr->timeout = w->timeout;
	attr->retry_cnt = w->retry_cnt;
	attr->rnr_retry = w->rnr_retry;
	qrdma_av_from_wire(&attr->av, &w->av);
	qrdma_caps_from_wire(&result->caps, &resp.cap);
	result->qp_type = resp.qp_type;
	result->sq_sig_all = resp.sq_sig_all;
	return 0;
}

int qrdma_cmd_destroy_qp(struct qrdma_cmdq *cmdq, u32 uctx, u32 qpn)
{
	return qrdma_cmd_destroy(cmdq, QRDMA_CMD_DESTROY_QP, uctx, qpn);
}

static void qrdma_srq_from_wire(struct qrdma_srq_result *result,
				const struct qrdma_cmpl *cmpl)
{
	struct qrdma_srq_resp wire;

	BUILD_BUG_ON(sizeof(wire) > sizeof(cmpl->data));
	memcpy(&wire, cmpl->data, sizeof(wire));
	result->max_wr = le32_to_cpu(wire.max_wr);
	result->max_sge = le32_to_cpu(wire.max_sge);
	result->srq_limit = le32_to_cpu(wire.srq_limit);
}

int qrdma_cmd_create_srq(struct qrdma_cmdq *cmdq,
			 const struct qrdma_create_srq_params *params,
			 struct qrdma_srq_result *result)
{
	struct qrdma_cmpl cmpl;
	struct qrdma_cmd cmd;
	int err;

	qrdma_cmd_init(&cmd, QRDMA_CMD_CREATE_SRQ, params->uctx);
	cmd.srq.pd = cpu_to_le32(params->pd);
	cmd.srq.max_wr = cpu_to_le32(params->max_wr);
	cmd.srq.max_sge = cpu_to_le32(params->max_sge);
	cmd.srq.pages_addr = cpu_to_le64(params->pages_dma);
	cmd.srq.npages = cpu_to_le32(params->npages);
	cmd.srq.log2_entries = cpu_to_le32(params->log2_entries);
	err = qrdma_cmd_exec(cmdq, &cmd, &cmpl, NULL, 0);
	if (err)
		return err;

	result->srqn = le32_to_cpu(cmpl.handle);
	qrdma_srq_from_wire(result, &cmpl);
	return 0;
}

int qrdma_cmd_modify_srq(struct qrdma_cmdq *cmdq,
			 const struct qrdma_modify_srq_params *params)
{
	struct qrdma_cmpl cmpl;
	struct qrdma_cmd cmd;

	qrdma_cmd_init(&cmd, QRDMA_CMD_MODIFY_SRQ, params->uctx);
	cmd.srq.srqn = cpu_to_le32(params->srqn);
	cmd.srq.attr_mask = cpu_to_le32(params->attr_mask);
	cmd.srq.srq_limit = cpu_to_le32(params->srq_limit);
	if (params->attr_mask & QRDMA_SRQ_ATTR_MAX_WR) {
		cmd.srq.max_wr = cpu_to_le32(params->max_wr);
		cmd.srq.pages_addr = cpu_to_le64(params->pages_dma);
		cmd.srq.npages = cpu_to_le32(params->npages);
		cmd.srq.log2_entries = cpu_to_le32(params->log2_entries);
	}
	return qrdma_cmd_exec(cmdq, &cmd, &cmpl, NULL, 0);
}

int qrdma_cmd_query_srq(struct qrdma_cmdq *cmdq, u32 uctx, u32 srqn,
			struct qrdma_srq_result *result)
{
	struct qrdma_cmpl cmpl;
	struct qrdma_cmd cmd;
	int err;

	/* The answer comes in the completion; no answer buffer. */
	qrdma_cmd_init(&cmd, QRDMA_CMD_QUERY_SRQ, uctx);
	cmd.query.index = cpu_to_le32(srqn);
	err = qrdma_cmd_exec(cmdq, &cmd, &cmpl, NULL, 0);
	if (err)
		return err;

	result->srqn = srqn;
	qrdma_srq_from_wire(result, &cmpl);
	return 0;
}

int qrdma_cmd_destroy_srq(struct qrdma_cmdq *cmdq, u32 uctx, u32 srqn)
{
	return qrdma_cmd_destroy(cmdq, QRDMA_CMD_DESTROY_SRQ, uctx, srqn);
}

int qrdma_cmd_create_ah(struct qrdma_cmdq *cmdq, u32 uctx, u32 pd,
			const struct qrdma_av_params *av, u32 *ah)
{
	struct qrdma_cmpl cmpl;
	struct qrdma_cmd cmd;
	int err;

	qrdma_cmd_init(&cmd, QRDMA_CMD_CREATE_AH, uctx);
	cmd.create_ah.pd = cpu_to_le32(pd);
	qrdma_av_to_wire(&cmd.create_ah.av, av);
	err = qrdma_cmd_exec(cmdq, &cmd, &cmpl, NULL, 0);
	if (err)
		return err;

	*ah = le32_to_cpu(cmpl.handle);
	return 0;
}

int qrdma_cmd_destroy_ah(struct qrdma_cmdq *cmdq, u32 uctx, u32 ah)
{
	return qrdma_cmd_destroy(cmdq, QRDMA_CMD_DESTROY_AH, uctx, ah);
}

static int qrdma_cmd_mcast(struct qrdma_cmdq *cmdq, u8 opcode, u32 uctx,
			   u32 qpn, const u8 *gid)
{
	struct qrdma_cmpl cmpl;
	struct qrdma_cmd cmd;

	qrdma_cmd_init(&cmd, opcode, uctx);
	cmd.mcast.qpn = cpu_to_le32(qpn);
	memcpy(cmd.mcast.gid, gid, sizeof(cmd.mcast.gid));
	return qrdma_cmd_exec(cmdq, &cmd, &cmpl, NULL, 0);
}

int qrdma_cmd_attach_mcast(struct qrdma_cmdq *cmdq, u32 uctx, u32 qpn,
			   const u8 *gid)
{
	return qrdma_cmd_mcast(cmdq, QRDMA_CMD_ATTACH_MCAST, uctx, qpn, gid);
}

int qrdma_cmd_detach_mcast(struct qrdma_cmdq *cmdq, u32 uctx, u32 qpn,
			   const u8 *gid)
{
	return qrdma_cmd_mcast(cmdq, QRDMA_CMD_DETACH_MCAST, uctx, qpn, gid);
}
