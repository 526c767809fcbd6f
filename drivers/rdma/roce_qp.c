/*
 * roce_qp.c - queue pairs: creation with QPNs that carry a generation, the state
 * machine of IBTA 10.3.1 with the required/optional attributes of each transition
 * (11.2.5.2; the table Linux keeps in ib_modify_qp_is_ok), attribute range checks,
 * flushing on ERR, and posting of work requests.
 */
#include <errno.h>
#include <string.h>
#include "../../lib/log.h"
#include "roce_internal.h"
#include "roce_req.h"
#include "roce_wire.h"

LOG_MODULE_USE(rdma);

enum { T_RC, T_UD, T_COUNT };

struct roce_qp_rule {
	bool valid;
	unsigned req[T_COUNT], opt[T_COUNT];
};

#define RC_PATH_OPT (ROCE_QP_ALT_PATH | ROCE_QP_ACCESS_FLAGS | ROCE_QP_MIN_RNR_TIMER | ROCE_QP_PATH_MIG_STATE)

static const struct roce_qp_rule roce_qp_rules[ROCE_QPS_COUNT][ROCE_QPS_COUNT] = {
	[ROCE_QPS_RESET] = {
		[ROCE_QPS_RESET] = { .valid = true },
		[ROCE_QPS_INIT] = { .valid = true,
			.req = { [T_RC] = ROCE_QP_PKEY_INDEX | ROCE_QP_PORT | ROCE_QP_ACCESS_FLAGS,
				 [T_UD] = ROCE_QP_PKEY_INDEX | ROCE_QP_PORT | ROCE_QP_QKEY } },
	},
	[ROCE_QPS_INIT] = {
		[ROCE_QPS_RESET] = { .valid = true },
		[ROCE_QPS_ERR] = { .valid = true },
		[ROCE_QPS_INIT] = { .valid = true,
			.opt = { [T_RC] = ROCE_QP_PKEY_INDEX | ROCE_QP_PORT | ROCE_QP_ACCESS_FLAGS,
				 [T_UD] = ROCE_QP_PKEY_INDEX | ROCE_QP_PORT | ROCE_QP_QKEY } },
		[ROCE_QPS_RTR] = { .valid = true,
			.req = { [T_RC] = ROCE_QP_AV | ROCE_QP_PATH_MTU | ROCE_QP_DEST_QPN | ROCE_QP_RQ_PSN |
					  ROCE_QP_MAX_DEST_RD_ATOMIC | ROCE_QP_MIN_RNR_TIMER },
			.opt = { [T_RC] = ROCE_QP_ALT_PATH | ROCE_QP_ACCESS_FLAGS | ROCE_QP_PKEY_INDEX,
				 [T_UD] = ROCE_QP_PKEY_INDEX | ROCE_QP_QKEY } },
	},
	[ROCE_QPS_RTR] = {
		[ROCE_QPS_RESET] = { .valid = true },
		[ROCE_QPS_ERR] = { .valid = true },
		[ROCE_QPS_RTS] = { .valid = true,
			.req = { [T_RC] = ROCE_QP_SQ_PSN | ROCE_QP_TIMEOUT | ROCE_QP_RETRY_CNT | ROCE_QP_RNR_RETRY |
					  ROCE_QP_MAX_QP_RD_ATOMIC,
				 [T_UD] = ROCE_QP_SQ_PSN },
			.opt = { [T_RC] = ROCE_QP_CUR_STATE | RC_PATH_OPT, [T_UD] = ROCE_QP_CUR_STATE | ROCE_QP_QKEY } },
	},
	[ROCE_QPS_RTS] = {
		[ROCE_QPS_RESET] = { .valid = true },
		[ROCE_QPS_ERR] = { .valid = true },
		[ROCE_QPS_RTS] = { .valid = true,
			.opt = { [T_RC] = ROCE_QP_CUR_STATE | RC_PATH_OPT, [T_UD] = ROCE_QP_CUR_STATE | ROCE_QP_QKEY } },
		[ROCE_QPS_SQD] = { .valid = true,
			.opt = { [T_RC] = ROCE_QP_EN_SQD_ASYNC_NOTIFY, [T_UD] = ROCE_QP_EN_SQD_ASYNC_NOTIFY } },
	},
	[ROCE_QPS_SQD] = {
		[ROCE_QPS_RESET] = { .valid = true },
		[ROCE_QPS_ERR] = { .valid = true },
		[ROCE_QPS_RTS] = { .valid = true,
			.opt = { [T_RC] = ROCE_QP_CUR_STATE | RC_PATH_OPT, [T_UD] = ROCE_QP_CUR_STATE | ROCE_QP_QKEY } },
		[ROCE_QPS_SQD] = { .valid = true,
			.opt = { [T_RC] = ROCE_QP_PKEY_INDEX | ROCE_QP_AV | ROCE_QP_TIMEOUT | ROCE_QP_RETRY_CNT |
					  ROCE_QP_RNR_RETRY | ROCE_QP_MAX_QP_RD_ATOMIC | ROCE_QP_MAX_DEST_RD_ATOMIC |
					  RC_PATH_OPT,
				 [T_UD] = ROCE_QP_PKEY_INDEX | ROCE_QP_QKEY } },
	},
	/* 10.3.1.6: SQE exists for UD (and UC); an RC send-queue error takes the QP to ERR */
	[ROCE_QPS_SQE] = {
		[ROCE_QPS_RESET] = { .valid = true },
		[ROCE_QPS_ERR] = { .valid = true },
		[ROCE_QPS_RTS] = { .valid = true, .opt = { [T_UD] = ROCE_QP_CUR_STATE | ROCE_QP_QKEY } },
	},
	[ROCE_QPS_ERR] = {
		[ROCE_QPS_RESET] = { .valid = true },
		[ROCE_QPS_ERR] = { .valid = true },
	},
};

static const char *const roce_qp_state_names[ROCE_QPS_COUNT] = { "RESET", "INIT", "RTR", "RTS", "SQD", "SQE",
								 "ERR" };

const char *roce_qp_state_name(enum roce_qp_state s)
{
	return (unsigned)s < ROCE_QPS_COUNT ? roce_qp_state_names[s] : "?";
}

static int roce_qp_check_caps(const struct roce_qp_init_attr *init, bool srq)
{
	const struct roce_qp_cap *c = &init->cap;
	if (c->max_send_wr == 0 || c->max_send_wr > ROCE_MAX_WR || c->max_send_sge > ROCE_MAX_SGE)
		return -EINVAL;
	if (!srq && (c->max_recv_wr == 0 || c->max_recv_wr > ROCE_MAX_WR || c->max_recv_sge > ROCE_MAX_SGE))
		return -EINVAL;
	return 0;
}

static int roce_qp_create(struct roce_pd *pd, const struct roce_qp_init_attr *init, bool gsi, struct roce_qp **out)
{
	struct roce_dev *dev = pd->dev;
	struct roce_qp *qp;
	int slot, rc;

	if (init->qp_type != ROCE_QPT_RC && init->qp_type != ROCE_QPT_UD)
		return -EINVAL;
	if (gsi && init->qp_type != ROCE_QPT_UD)
		return -EINVAL;
	if (!init->send_cq || !init->recv_cq || init->send_cq->dev != dev || init->recv_cq->dev != dev)
		return -EINVAL;
	if (init->srq && (init->srq->pd != pd || init->qp_type != ROCE_QPT_RC))
		return -EINVAL;
	if ((rc = roce_qp_check_caps(init, init->srq != NULL)))
		return rc;
	if (gsi) {
		for (unsigned i = 0; i < ROCE_MAX_QP; i++)
			if (dev->qps[i] && dev->qps[i]->qpn == ROCE_GSI_QPN)
				return -EEXIST;
	}
	if ((slot = roce_table_slot((void *const *)dev->qps, ROCE_MAX_QP)) < 0 || !(qp = mm_pool_zalloc(&dev->qp_pool)))
		return -ENOMEM;
	qp->dev = dev;
	qp->pd = pd;
	qp->index = (unsigned)slot;
	qp->type = init->qp_type;
	qp->init = *init;
	if (gsi) {
		qp->qpn = ROCE_GSI_QPN;
	} else {
		qp->qpn = (dev->qp_gen << 8 | (uint32_t)slot) & ROCE_QPN_MASK;
		if (++dev->qp_gen > 0xffff)
			dev->qp_gen = 1;
	}
	qp->state = ROCE_QPS_RESET;
	qp->sq.size = init->cap.max_send_wr;
	qp->sq.max_sge = init->cap.max_send_sge;
	qp->rq.size = init->srq ? 0 : init->cap.max_recv_wr;
	qp->rq.max_sge = init->srq ? 0 : init->cap.max_recv_sge;
	qp->attr.port_num = 1;
	qp->attr.path_mtu = ROCE_MTU_256;
	init->send_cq->users++;
	init->recv_cq->users++;
	if (init->srq)
		init->srq->users++;
	pd->users++;
	dev->qps[slot] = qp;
	*out = qp;
	return 0;
}

int roce_create_qp(struct roce_pd *pd, const struct roce_qp_init_attr *init, struct roce_qp **out)
{
	return roce_qp_create(pd, init, false, out);
}

int roce_create_gsi_qp(struct roce_pd *pd, const struct roce_qp_init_attr *init, struct roce_qp **out)
{
	return roce_qp_create(pd, init, true, out);
}

int roce_destroy_qp(struct roce_qp *qp)
{
	struct roce_dev *dev = qp->dev;
	qp->init.send_cq->users--;
	qp->init.recv_cq->users--;
	if (qp->init.srq)
		qp->init.srq->users--;
	qp->pd->users--;
	dev->qps[qp->index] = NULL;
	mm_pool_free(&dev->qp_pool, qp);
	return 0;
}

uint32_t roce_qp_num(const struct roce_qp *qp)
{
	return qp->qpn;
}

enum roce_qp_state roce_qp_state(const struct roce_qp *qp)
{
	return qp->state;
}

struct roce_qp *roce_qp_lookup(struct roce_dev *dev, uint32_t qpn)
{
	if (qpn == ROCE_GSI_QPN) {
		for (unsigned i = 0; i < ROCE_MAX_QP; i++)
			if (dev->qps[i] && dev->qps[i]->qpn == ROCE_GSI_QPN)
				return dev->qps[i];
		return NULL;
	}
	if ((qpn & 0xff) >= ROCE_MAX_QP)
		return NULL;
	struct roce_qp *qp = dev->qps[qpn & 0xff];
	return (qp && qp->qpn == qpn) ? qp : NULL;
}

unsigned roce_qp_sq_count(const struct roce_qp *qp)
{
	return qp->sq.count;
}

unsigned roce_qp_rq_count(const struct roce_qp *qp)
{
	return qp->rq.count;
}

/* Range checks of the attributes mask names (11.2.5.2 and the port's limits). */
static int roce_qp_check_attr(const struct roce_qp *qp, const struct roce_qp_attr *a, unsigned mask)
{
	const struct roce_port_attr *port = &qp->dev->port;
	uint32_t ip;

	if ((mask & ROCE_QP_CUR_STATE) && a->cur_qp_state != qp->state)
		return -EINVAL;
	if ((mask & ROCE_QP_ACCESS_FLAGS) && (a->qp_access_flags & ~(unsigned)ROCE_ACCESS_ALL))
		return -EINVAL;
	if ((mask & ROCE_QP_PKEY_INDEX) && a->pkey_index != 0)
		return -EINVAL;
	if ((mask & ROCE_QP_PORT) && a->port_num != 1)
		return -EINVAL;
	if ((mask & ROCE_QP_AV) && (a->ah_attr.sgid_index != 0 || roce_gid_to_ipv4(&a->ah_attr.dgid, &ip) || ip == 0))
		return -EINVAL;
	if ((mask & ROCE_QP_PATH_MTU) && (!roce_mtu_bytes(a->path_mtu) || a->path_mtu > port->active_mtu))
		return -EINVAL;
	if ((mask & ROCE_QP_TIMEOUT) && a->timeout > 31)
		return -EINVAL;
	if ((mask & ROCE_QP_RETRY_CNT) && a->retry_cnt > 7)
		return -EINVAL;
	if ((mask & ROCE_QP_RNR_RETRY) && a->rnr_retry > 7)
		return -EINVAL;
	if ((mask & ROCE_QP_MIN_RNR_TIMER) && a->min_rnr_timer > 31)
		return -EINVAL;
	if ((mask & ROCE_QP_RQ_PSN) && (a->rq_psn & ~ROCE_PSN_MASK))
		return -EINVAL;
	if ((mask & ROCE_QP_SQ_PSN) && (a->sq_psn & ~ROCE_PSN_MASK))
		return -EINVAL;
	if ((mask & ROCE_QP_MAX_QP_RD_ATOMIC) && a->max_rd_atomic > ROCE_MAX_RD_ATOMIC)
		return -EINVAL;
	if ((mask & ROCE_QP_MAX_DEST_RD_ATOMIC) && a->max_dest_rd_atomic > ROCE_MAX_RD_ATOMIC)
		return -EINVAL;
	if ((mask & ROCE_QP_DEST_QPN) && (a->dest_qp_num & ~ROCE_QPN_MASK))
		return -EINVAL;
	if (mask & (ROCE_QP_ALT_PATH | ROCE_QP_PATH_MIG_STATE | ROCE_QP_CAP))
		return -EINVAL;  /* no alternate path (one port); no resizing */
	return 0;
}

static void roce_qp_apply(struct roce_qp *qp, const struct roce_qp_attr *a, unsigned mask)
{
	struct roce_qp_attr *t = &qp->attr;
	if (mask & ROCE_QP_ACCESS_FLAGS)
		t->qp_access_flags = a->qp_access_flags;
	if (mask & ROCE_QP_PKEY_INDEX)
		t->pkey_index = a->pkey_index;
	if (mask & ROCE_QP_PORT)
		t->port_num = a->port_num;
	if (mask & ROCE_QP_QKEY)
		t->qkey = a->qkey;
	if (mask & ROCE_QP_AV)
		t->ah_attr = a->ah_attr;
	if (mask & ROCE_QP_PATH_MTU)
		t->path_mtu = a->path_mtu;
	if (mask & ROCE_QP_TIMEOUT)
		t->timeout = a->timeout;
	if (mask & ROCE_QP_RETRY_CNT)
		t->retry_cnt = a->retry_cnt;
	if (mask & ROCE_QP_RNR_RETRY)
		t->rnr_retry = a->rnr_retry;
	if (mask & ROCE_QP_RQ_PSN)
		t->rq_psn = a->rq_psn;
	if (mask & ROCE_QP_MAX_QP_RD_ATOMIC)
		t->max_rd_atomic = a->max_rd_atomic;
	if (mask & ROCE_QP_MIN_RNR_TIMER)
		t->min_rnr_timer = a->min_rnr_timer;
	if (mask & ROCE_QP_SQ_PSN)
		t->sq_psn = a->sq_psn;
	if (mask & ROCE_QP_MAX_DEST_RD_ATOMIC)
		t->max_dest_rd_atomic = a->max_dest_rd_atomic;
	if (mask & ROCE_QP_DEST_QPN)
		t->dest_qp_num = a->dest_qp_num;
	if (mask & ROCE_QP_EN_SQD_ASYNC_NOTIFY)
		t->en_sqd_async_notify = a->en_sqd_async_notify;
}

static void roce_qp_flush_one(struct roce_qp *qp, struct roce_cq *cq, uint64_t wr_id, enum roce_wc_opcode op)
{
	struct roce_wc wc = { .wr_id = wr_id, .status = ROCE_WC_WR_FLUSH_ERR, .opcode = op, .qp_num = qp->qpn };
	qp->flushed++;
	(void)roce_cq_push(cq, &wc);  /* an overflow is the CQ's error, counted there */
}

/* 10.3.1.7 (Error state): every outstanding WR completes with a flush error. */
static void roce_qp_flush(struct roce_qp *qp)
{
	while (qp->sq.count) {
		roce_qp_flush_one(qp, qp->init.send_cq, qp->sq_ring[qp->sq.head].wr_id, ROCE_WC_SEND);
		qp->sq.head = (qp->sq.head + 1) % qp->sq.size;
		qp->sq.count--;
	}
	while (qp->rq.count) {
		roce_qp_flush_one(qp, qp->init.recv_cq, qp->rq_ring[qp->rq.head].wr_id, ROCE_WC_RECV);
		qp->rq.head = (qp->rq.head + 1) % qp->rq.size;
		qp->rq.count--;
	}
}

static void roce_qp_set_state(struct roce_qp *qp, enum roce_qp_state s)
{
	if (qp->state != s)
		log_debug("qp %#x: %s -> %s", qp->qpn, roce_qp_state_name(qp->state), roce_qp_state_name(s));
	qp->state = s;
}

int roce_modify_qp(struct roce_qp *qp, const struct roce_qp_attr *attr, unsigned mask)
{
	enum roce_qp_state cur = qp->state, next = (mask & ROCE_QP_STATE) ? attr->qp_state : cur;
	unsigned t = qp->type == ROCE_QPT_RC ? T_RC : T_UD;
	const struct roce_qp_rule *r;
	int rc;

	if ((unsigned)next >= ROCE_QPS_COUNT)
		return -EINVAL;
	if ((mask & ROCE_QP_CUR_STATE) && (unsigned)attr->cur_qp_state >= ROCE_QPS_COUNT)
		return -EINVAL;
	r = &roce_qp_rules[cur][next];
	if (!r->valid)
		return -EINVAL;
	if (qp->type == ROCE_QPT_RC && cur == ROCE_QPS_SQE)
		return -EINVAL;  /* never reached by RC */
	if ((mask & r->req[t]) != r->req[t] || (mask & ~(r->req[t] | r->opt[t] | ROCE_QP_STATE)))
		return -EINVAL;
	if ((rc = roce_qp_check_attr(qp, attr, mask)))
		return rc;
	roce_qp_apply(qp, attr, mask);
	if (next == ROCE_QPS_RESET) {
		/* back to the start: queues emptied without completions (11.2.5.2) */
		qp->sq.head = qp->sq.count = 0;
		qp->rq.head = qp->rq.count = 0;
	}
	if (cur == ROCE_QPS_INIT && next == ROCE_QPS_RTR) {
		/* the responder starts at the RQ PSN with MSN 0 (9.7.5.1) */
		memset(&qp->resp, 0, sizeof(qp->resp));
		qp->resp.epsn = qp->attr.rq_psn;
	}
	roce_qp_set_state(qp, next);
	if (next == ROCE_QPS_ERR)
		roce_qp_flush(qp);
	/* the requester starts at the SQ PSN on entering RTS, and forgets everything when the
	 * send queue is flushed or reset */
	if ((cur == ROCE_QPS_RTR && next == ROCE_QPS_RTS) || next == ROCE_QPS_ERR || next == ROCE_QPS_RESET)
		roce_req_reset(qp);
	return 0;
}

int roce_query_qp(const struct roce_qp *qp, struct roce_qp_attr *attr, struct roce_qp_init_attr *init)
{
	*attr = qp->attr;
	attr->qp_state = attr->cur_qp_state = qp->state;
	attr->cap = qp->init.cap;
	if (init)
		*init = qp->init;
	return 0;
}

/* Which work requests each QP type takes (11.4.1.1). */
static bool roce_wr_allowed(enum roce_qp_type t, enum roce_wr_opcode op)
{
	switch (op) {
	case ROCE_WR_SEND:
	case ROCE_WR_SEND_WITH_IMM:
		return true;
	case ROCE_WR_RDMA_WRITE:
	case ROCE_WR_RDMA_WRITE_WITH_IMM:
	case ROCE_WR_RDMA_READ:
	case ROCE_WR_ATOMIC_CMP_AND_SWP:
	case ROCE_WR_ATOMIC_FETCH_AND_ADD:
	case ROCE_WR_SEND_WITH_INV:
		return t == ROCE_QPT_RC;
	}
	return false;
}

static enum roce_wc_opcode roce_wr_wc_opcode(enum roce_wr_opcode op)
{
	switch (op) {
	case ROCE_WR_RDMA_WRITE:
	case ROCE_WR_RDMA_WRITE_WITH_IMM:
		return ROCE_WC_RDMA_WRITE;
	case ROCE_WR_RDMA_READ:
		return ROCE_WC_RDMA_READ;
	case ROCE_WR_ATOMIC_CMP_AND_SWP:
		return ROCE_WC_COMP_SWAP;
	case ROCE_WR_ATOMIC_FETCH_AND_ADD:
		return ROCE_WC_FETCH_ADD;
	default:
		return ROCE_WC_SEND;
	}
}

int roce_post_send(struct roce_qp *qp, const struct roce_send_wr *wr)
{
	uint64_t total = 0;

	if (!roce_wr_allowed(qp->type, wr->opcode) || wr->num_sge > qp->sq.max_sge)
		return -EINVAL;
	for (unsigned i = 0; i < wr->num_sge; i++)
		total += wr->sg_list[i].length;
	if (total > UINT32_MAX)
		return -EINVAL;
	/* atomics move exactly 8 bytes into one SGE (9.4.5) */
	if ((wr->opcode == ROCE_WR_ATOMIC_CMP_AND_SWP || wr->opcode == ROCE_WR_ATOMIC_FETCH_AND_ADD) &&
	    (wr->num_sge != 1 || wr->sg_list[0].length != 8 || (wr->remote_addr & 7)))
		return -EINVAL;
	/* UD: one PMTU at most (no segmentation of datagrams) */
	if (qp->type == ROCE_QPT_UD && total > roce_mtu_bytes(qp->dev->port.active_mtu))
		return -EINVAL;
	switch (qp->state) {
	case ROCE_QPS_RTS:
	case ROCE_QPS_SQD:  /* queued; the transport starts no new WR while draining */
		break;
	case ROCE_QPS_ERR:
		roce_qp_flush_one(qp, qp->init.send_cq, wr->wr_id, roce_wr_wc_opcode(wr->opcode));
		return 0;
	default:
		return -EINVAL;
	}
	if (qp->sq.count == qp->sq.size)
		return -ENOMEM;
	qp->sq_ring[(qp->sq.head + qp->sq.count) % qp->sq.size] = *wr;
	qp->sq.count++;
	return 0;
}

int roce_post_recv(struct roce_qp *qp, const struct roce_recv_wr *wr)
{
	if (qp->init.srq)
		return -EINVAL;  /* receives go to the SRQ */
	if (wr->num_sge > qp->rq.max_sge)
		return -EINVAL;
	switch (qp->state) {
	case ROCE_QPS_RESET:
		return -EINVAL;
	case ROCE_QPS_ERR:
		roce_qp_flush_one(qp, qp->init.recv_cq, wr->wr_id, ROCE_WC_RECV);
		return 0;
	default:
		break;
	}
	if (qp->rq.count == qp->rq.size)
		return -ENOMEM;
	qp->rq_ring[(qp->rq.head + qp->rq.count) % qp->rq.size] = *wr;
	qp->rq.count++;
	return 0;
}
