/*
 * roce_req.c - the RC requester: send WRs to request packets, the retransmit/RNR timers,
 * rewinding to the oldest unacknowledged PSN, and in-order completion of the send queue.
 * See roce_req.h; the responses are taken in roce_comp.c.
 */
#include <errno.h>
#include <string.h>
#include "../../lib/log.h"
#include "roce_internal.h"
#include "roce_odp_mr.h"
#include "roce_req.h"

LOG_MODULE_USE(rdma);

#define ROCE_REQ_ACKREQ_EVERY 16     /* inside a long message, ask for an ACK every so many packets */

static const uint32_t roce_rnr_us[32] = {
	655360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960, 1280, 1920, 2560, 3840, 5120, 7680,
	10240, 15360, 20480, 30720, 40960, 61440, 81920, 122880, 163840, 245760, 327680, 491520,
};

uint64_t roce_rnr_timer_ns(uint8_t code)
{
	return (uint64_t)roce_rnr_us[code & 31] * 1000u;
}

uint64_t roce_req_timeout_ns(uint8_t timeout)
{
	/* 4.096 us * 2^timeout; 0 means "infinite" to the spec, but every wait here is bounded */
	unsigned t = timeout ? (timeout > 31 ? 31 : timeout) : 31;
	return 4096ull << t;
}

struct roce_req_wqe *roce_req_wqe_at(struct roce_qp *qp, unsigned k)
{
	return &qp->req.wqe[(qp->sq.head + k) % qp->sq.size];
}

const struct roce_send_wr *roce_req_wr_at(const struct roce_qp *qp, unsigned k)
{
	return &qp->sq_ring[(qp->sq.head + k) % qp->sq.size];
}

static bool roce_wr_is_rd_atomic(enum roce_wr_opcode op)
{
	return op == ROCE_WR_RDMA_READ || op == ROCE_WR_ATOMIC_CMP_AND_SWP || op == ROCE_WR_ATOMIC_FETCH_AND_ADD;
}

uint32_t roce_req_psns(const struct roce_qp *qp, const struct roce_send_wr *wr, uint32_t len)
{
	uint32_t pmtu = roce_mtu_bytes(qp->attr.path_mtu);
	if (wr->opcode == ROCE_WR_ATOMIC_CMP_AND_SWP || wr->opcode == ROCE_WR_ATOMIC_FETCH_AND_ADD)
		return 1;
	return len ? (len + pmtu - 1) / pmtu : 1;
}

void roce_req_reset(struct roce_qp *qp)
{
	struct roce_req_state *q = &qp->req;
	struct roce_req_counters keep = q->n;

	memset(q, 0, sizeof(*q));
	q->n = keep;
	q->psn = q->una = q->psn_hi = qp->attr.sq_psn & ROCE_PSN_MASK;
	q->retry_left = qp->attr.retry_cnt;
	q->rnr_left = qp->attr.rnr_retry;
}

static enum roce_wc_opcode roce_req_wc_opcode(enum roce_wr_opcode op)
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

void roce_req_complete(struct roce_qp *qp)
{
	struct roce_req_state *q = &qp->req;

	while (q->started && roce_req_wqe_at(qp, 0)->done) {
		const struct roce_send_wr *wr = roce_req_wr_at(qp, 0);
		struct roce_req_wqe *w = roce_req_wqe_at(qp, 0);
		enum roce_wc_status st = w->status;
		if (st != ROCE_WC_SUCCESS || qp->init.sq_sig_all || (wr->send_flags & ROCE_SEND_SIGNALED)) {
			struct roce_wc wc = { .wr_id = wr->wr_id, .status = st, .opcode = roce_req_wc_opcode(wr->opcode),
					      .byte_len = w->len, .qp_num = qp->qpn, .src_qp = qp->attr.dest_qp_num };
			(void)roce_cq_push(qp->init.send_cq, &wc);
		}
		qp->sq.head = (qp->sq.head + 1) % qp->sq.size;
		qp->sq.count--;
		q->started--;
		if (q->cur)
			q->cur--;
		else
			q->cur_off = 0;  /* it failed before it was sent */
		q->n.completions++;
		if (st != ROCE_WC_SUCCESS) {
			struct roce_qp_attr a = { .qp_state = ROCE_QPS_ERR };
			log_info("qp %#x: send WR %#llx failed (status %d), QP to ERR", qp->qpn,
				 (unsigned long long)wr->wr_id, st);
			roce_modify_qp(qp, &a, ROCE_QP_STATE);
			return;
		}
	}
	if (!q->started)
		q->deadline = 0;
}

void roce_req_rewind(struct roce_qp *qp)
{
	struct roce_req_state *q = &qp->req;
	uint32_t pmtu = roce_mtu_bytes(qp->attr.path_mtu);

	for (unsigned k = 0; k < q->started; k++) {
		struct roce_req_wqe *w = roce_req_wqe_at(qp, k);
		const struct roce_send_wr *wr = roce_req_wr_at(qp, k);
		if (w->done)
			continue;
		q->cur = k;
		if (wr->opcode == ROCE_WR_RDMA_READ) {
			q->cur_off = w->read_got;
			q->psn = roce_psn_add(w->psn_first, w->read_got / pmtu);
		} else if (roce_wr_is_rd_atomic(wr->opcode) || roce_psn_diff(q->una, w->psn_first) <= 0) {
			q->cur_off = 0;
			q->psn = w->psn_first;
		} else {
			/* part of the message was acknowledged: resume inside it (9.7.5.1.3 allows a
			 * middle packet at ePSN) */
			uint32_t acked = (uint32_t)roce_psn_diff(q->una, w->psn_first);
			q->cur_off = acked * pmtu;
			q->psn = q->una;
		}
		return;
	}
	/* everything started is acknowledged: carry on after it */
	q->cur = q->started;
	q->cur_off = 0;
	q->psn = q->psn_hi;
}

/* Gather len bytes of wr's message from offset off into tx's pieces. -EACCES when an lkey
 * does not cover them (or an ODP MR's pages need more pieces than a packet has), -EAGAIN
 * when a page of an ODP MR is not resident (its page-in started). */
static int roce_req_gather(struct roce_qp *qp, const struct roce_send_wr *wr, uint32_t off, uint32_t len,
			   struct roce_tx *tx)
{
	uint64_t base = 0;

	for (unsigned i = 0; i < wr->num_sge && len; i++) {
		const struct roce_sge *s = &wr->sg_list[i];
		uint64_t end = base + s->length;
		if (off < end) {
			uint32_t in = (uint32_t)(off - base);
			uint32_t n = s->length - in < len ? s->length - in : len;
			unsigned k;
			int rc = roce_mr_map(qp->dev, qp->pd, s->lkey, false, 0, s->addr + in, n, &tx->seg[tx->nseg],
					     ROCE_MAX_SGE - tx->nseg, &k);
			if (rc == -EAGAIN) {
				roce_mr_note_local_wait(qp->dev, s->lkey);
				return rc;
			}
			if (rc)
				return -EACCES;
			tx->nseg += k;
			off += n;
			len -= n;
		}
		base = end;
	}
	return len ? -EACCES : 0;
}

/* How many READs/atomics among the WRs started before cur still wait for responses. */
static unsigned roce_req_rd_outstanding(struct roce_qp *qp)
{
	unsigned n = 0;
	for (unsigned k = 0; k < qp->req.cur; k++)
		if (!roce_req_wqe_at(qp, k)->done && roce_wr_is_rd_atomic(roce_req_wr_at(qp, k)->opcode))
			n++;
	return n;
}

static uint8_t roce_req_opcode(enum roce_wr_opcode op, bool first, bool last)
{
	static const uint8_t send[4] = { ROCE_RC_SEND_MIDDLE, ROCE_RC_SEND_FIRST, ROCE_RC_SEND_LAST, ROCE_RC_SEND_ONLY };
	static const uint8_t write[4] = { ROCE_RC_WRITE_MIDDLE, ROCE_RC_WRITE_FIRST, ROCE_RC_WRITE_LAST,
					  ROCE_RC_WRITE_ONLY };
	unsigned i = (first ? 1 : 0) | (last ? 2 : 0);

	switch (op) {
	case ROCE_WR_SEND_WITH_IMM:
		return last ? (first ? ROCE_RC_SEND_ONLY_IMM : ROCE_RC_SEND_LAST_IMM) : send[i];
	case ROCE_WR_SEND_WITH_INV:
		return last ? (first ? ROCE_RC_SEND_ONLY_INV : ROCE_RC_SEND_LAST_INV) : send[i];
	case ROCE_WR_RDMA_WRITE:
		return write[i];
	case ROCE_WR_RDMA_WRITE_WITH_IMM:
		return last ? (first ? ROCE_RC_WRITE_ONLY_IMM : ROCE_RC_WRITE_LAST_IMM) : write[i];
	default:
		return send[i];
	}
}

/* Fail the WR at cur locally: it completes with status in its turn; nothing more is sent. */
static void roce_req_fail_local(struct roce_qp *qp, enum roce_wc_status status)
{
	struct roce_req_state *q = &qp->req;
	struct roce_req_wqe *w = roce_req_wqe_at(qp, q->cur);

	if (q->cur == q->started)
		q->started++;
	w->done = true;
	w->status = status;
	q->halted = true;
	roce_req_complete(qp);
}

bool roce_req_tx_next(struct roce_qp *qp, uint64_t now, struct roce_tx *tx)
{
	struct roce_req_state *q = &qp->req;
	uint32_t pmtu = roce_mtu_bytes(qp->attr.path_mtu);
	const struct roce_send_wr *wr;
	uint32_t len, n;

	if (qp->type != ROCE_QPT_RC || q->halted || (qp->state != ROCE_QPS_RTS && qp->state != ROCE_QPS_SQD))
		return false;
	if (q->cur >= qp->sq.count || (qp->state == ROCE_QPS_SQD && q->cur >= q->started))
		return false;  /* nothing to send; SQD starts no new WR */
	if (q->rnr_until && now < q->rnr_until)
		return false;
	wr = roce_req_wr_at(qp, q->cur);
	len = 0;
	for (unsigned i = 0; i < wr->num_sge; i++)
		len += wr->sg_list[i].length;
	if (q->cur_off == 0 && roce_wr_is_rd_atomic(wr->opcode) &&
	    roce_req_rd_outstanding(qp) >= (qp->attr.max_rd_atomic ? qp->attr.max_rd_atomic : 1u))
		return false;  /* 9.7.4.1.4: no more outstanding than the responder takes */

	memset(tx, 0, sizeof(*tx));
	tx->pkt.pkey = ROCE_PKEY_DEFAULT;
	tx->pkt.destqp = qp->attr.dest_qp_num;
	tx->pkt.psn = q->psn;
	switch (wr->opcode) {
	case ROCE_WR_RDMA_READ: {
		struct roce_tx_seg chk;
		/* the scatter list must take the whole response (checked before asking) */
		for (unsigned i = 0; i < wr->num_sge; i++) {
			const struct roce_sge *s = &wr->sg_list[i];
			if (s->length && roce_mr_check(qp->dev, qp->pd, s->lkey, false, ROCE_ACCESS_LOCAL_WRITE, s->addr,
						       s->length, &chk.mem)) {
				roce_req_fail_local(qp, ROCE_WC_LOC_PROT_ERR);
				return false;
			}
		}
		tx->pkt.opcode = ROCE_RC_READ_REQUEST;
		tx->pkt.va = wr->remote_addr + q->cur_off;
		tx->pkt.rkey = wr->rkey;
		tx->pkt.dmalen = len - q->cur_off;
		tx->pkt.ackreq = true;
		return true;
	}
	case ROCE_WR_ATOMIC_CMP_AND_SWP:
	case ROCE_WR_ATOMIC_FETCH_AND_ADD: {
		struct roce_tx_seg chk;
		const struct roce_sge *s = &wr->sg_list[0];
		if (roce_mr_check(qp->dev, qp->pd, s->lkey, false, ROCE_ACCESS_LOCAL_WRITE, s->addr, 8, &chk.mem)) {
			roce_req_fail_local(qp, ROCE_WC_LOC_PROT_ERR);
			return false;
		}
		tx->pkt.opcode = wr->opcode == ROCE_WR_ATOMIC_CMP_AND_SWP ? ROCE_RC_CMP_SWAP : ROCE_RC_FETCH_ADD;
		tx->pkt.va = wr->remote_addr;
		tx->pkt.rkey = wr->rkey;
		tx->pkt.swap_add = wr->opcode == ROCE_WR_ATOMIC_CMP_AND_SWP ? wr->swap : wr->compare_add;
		tx->pkt.compare = wr->opcode == ROCE_WR_ATOMIC_CMP_AND_SWP ? wr->compare_add : 0;
		tx->pkt.ackreq = true;
		return true;
	}
	default:
		break;
	}
	n = len - q->cur_off < pmtu ? len - q->cur_off : pmtu;
	bool first = q->cur_off == 0, last = q->cur_off + n == len;
	tx->pkt.opcode = roce_req_opcode(wr->opcode, first, last);
	int rc = roce_req_gather(qp, wr, q->cur_off, n, tx);
	if (rc == -EAGAIN)
		return false;  /* an ODP page-in: the WR waits in the send queue, offered again by the poller */
	if (rc) {
		roce_req_fail_local(qp, ROCE_WC_LOC_PROT_ERR);
		return false;
	}
	tx->len = tx->pkt.payload_len = n;
	if (first && (wr->opcode == ROCE_WR_RDMA_WRITE || wr->opcode == ROCE_WR_RDMA_WRITE_WITH_IMM)) {
		tx->pkt.va = wr->remote_addr;
		tx->pkt.rkey = wr->rkey;
		tx->pkt.dmalen = len;
	}
	if (last) {
		tx->pkt.imm = wr->imm_data;
		tx->pkt.inv_rkey = wr->invalidate_rkey;
		tx->pkt.se = (wr->send_flags & ROCE_SEND_SOLICITED) != 0;
	}
	tx->pkt.ackreq = last || (q->cur_off / pmtu) % ROCE_REQ_ACKREQ_EVERY == ROCE_REQ_ACKREQ_EVERY - 1;
	return true;
}

void roce_req_tx_done(struct roce_qp *qp, uint64_t now, const struct roce_tx *tx)
{
	struct roce_req_state *q = &qp->req;
	const struct roce_send_wr *wr = roce_req_wr_at(qp, q->cur);
	struct roce_req_wqe *w = roce_req_wqe_at(qp, q->cur);
	uint32_t len = 0;

	for (unsigned i = 0; i < wr->num_sge; i++)
		len += wr->sg_list[i].length;
	if (q->cur == q->started || (q->cur_off == 0 && w->read_got == 0)) {
		/* the WR starts (a first time, or again from its start): its PSNs from here; the
		 * slot's record is a previous WR's until then */
		*w = (struct roce_req_wqe){ .psn_first = q->psn, .len = len,
					    .psn_last = roce_psn_add(q->psn, roce_req_psns(qp, wr, len) - 1) };
	}
	if (q->cur == q->started)
		q->started++;
	if (roce_wr_is_rd_atomic(wr->opcode)) {
		/* one request packet; a READ takes a PSN per response, an atomic one */
		q->psn = roce_psn_add(q->psn, roce_req_psns(qp, wr, len - q->cur_off));
		q->cur_off = len;
	} else {
		q->psn = roce_psn_add(q->psn, 1);
		q->cur_off += tx->len;
	}
	if (q->cur_off >= len) {
		q->cur++;
		q->cur_off = 0;
	}
	if (roce_psn_diff(q->psn, q->psn_hi) > 0)
		q->psn_hi = q->psn;
	q->n.pkts++;
	if (!q->deadline)
		q->deadline = now + roce_req_timeout_ns(qp->attr.timeout);
	q->rnr_until = 0;
}

bool roce_req_tick(struct roce_qp *qp, uint64_t now)
{
	struct roce_req_state *q = &qp->req;

	if (qp->type != ROCE_QPT_RC || (qp->state != ROCE_QPS_RTS && qp->state != ROCE_QPS_SQD))
		return false;
	if (!q->deadline || now < q->deadline || !q->started)
		return false;
	q->n.timeouts++;
	q->deadline = 0;
	if (!q->retry_left) {
		struct roce_req_wqe *w = roce_req_wqe_at(qp, 0);
		log_info("qp %#x: no answer from QP %#x after %u retries, PSN %#x", qp->qpn, qp->attr.dest_qp_num,
			 qp->attr.retry_cnt, q->una);
		w->done = true;
		w->status = ROCE_WC_RETRY_EXC_ERR;
		roce_req_complete(qp);
		return true;
	}
	q->retry_left--;
	roce_req_rewind(qp);
	q->n.retransmits++;
	return true;
}
