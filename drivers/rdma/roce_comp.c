/*
 * roce_comp.c - the RC completer: cumulative ACKs, READ responses placed in order, atomic
 * ACKs, RNR NAKs and NAKs, implied NAKs, and the retries they start (see roce_req.h).
 */
#include <string.h>
#include "../../lib/log.h"
#include "roce_internal.h"
#include "roce_req.h"

LOG_MODULE_USE(rdma);

/* The oldest started WR not yet done (its distance from the head), or -1. */
static int roce_comp_oldest(struct roce_qp *qp)
{
	for (unsigned k = 0; k < qp->req.started; k++)
		if (!roce_req_wqe_at(qp, k)->done)
			return (int)k;
	return -1;
}

/* Fail the oldest outstanding WR with status (the QP goes to ERR when it completes). */
static void roce_comp_fail(struct roce_qp *qp, enum roce_wc_status status)
{
	int k = roce_comp_oldest(qp);
	if (k >= 0) {
		struct roce_req_wqe *w = roce_req_wqe_at(qp, (unsigned)k);
		w->done = true;
		w->status = status;
	}
	roce_req_complete(qp);
}

/* Retransmit from the oldest unacknowledged PSN, or fail with ROCE_WC_RETRY_EXC_ERR when
 * retry_cnt retries are spent (9.7.6.1.3: sequence errors and timeouts count alike). */
static void roce_comp_retry(struct roce_qp *qp)
{
	struct roce_req_state *q = &qp->req;
	if (q->retrying)
		return;  /* the rest of a burst after one loss: one retry is enough (the timer covers it) */
	if (!q->retry_left) {
		roce_comp_fail(qp, ROCE_WC_RETRY_EXC_ERR);
		return;
	}
	q->retrying = true;
	q->retry_left--;
	q->deadline = 0;
	roce_req_rewind(qp);
	q->n.retransmits++;
}

/* Forward progress: the oldest unacknowledged PSN moved (an in-order READ response, first,
 * middle or last; an atomic ACK; an ACK, or the implied ACK of a NAK, covering part of a
 * message or all of it). The retry counters start again (9.7.6.1.3: the count limits retries
 * without progress, not per WR; rxe re-arms on each in-order READ response and ACK alike),
 * the timer runs while anything is outstanding. */
static void roce_comp_progress(struct roce_qp *qp, uint64_t now)
{
	struct roce_req_state *q = &qp->req;
	q->retry_left = qp->attr.retry_cnt;
	q->rnr_left = qp->attr.rnr_retry;
	q->retrying = false;
	q->deadline = roce_comp_oldest(qp) >= 0 ? now + roce_req_timeout_ns(qp->attr.timeout) : 0;
}

/* Acknowledge every WR whose PSNs end at or before psn (9.7.6.1.1: ACKs are cumulative).
 * A READ or atomic covered that way has lost its response: an implied NAK (9.7.6.1.4),
 * retried. Returns false when a retry was started (the caller stops there). */
static bool roce_comp_ack_upto(struct roce_qp *qp, uint32_t psn, uint64_t now)
{
	struct roce_req_state *q = &qp->req;
	bool progress = false;

	for (unsigned k = 0; k < q->started; k++) {
		struct roce_req_wqe *w = roce_req_wqe_at(qp, k);
		const struct roce_send_wr *wr = roce_req_wr_at(qp, k);
		if (w->done)
			continue;
		if (roce_psn_diff(psn, w->psn_last) < 0) {
			/* only a SEND/WRITE is acknowledged part by part; a READ's PSNs are its
			 * responses' and move una as they are placed */
			if (wr->opcode == ROCE_WR_RDMA_READ || wr->opcode == ROCE_WR_ATOMIC_CMP_AND_SWP ||
			    wr->opcode == ROCE_WR_ATOMIC_FETCH_AND_ADD)
				psn = roce_psn_add(roce_psn_diff(w->psn_first, q->una) > 0 ? w->psn_first : q->una,
						   ROCE_PSN_MASK);
			break;
		}
		if (wr->opcode == ROCE_WR_RDMA_READ || wr->opcode == ROCE_WR_ATOMIC_CMP_AND_SWP ||
		    wr->opcode == ROCE_WR_ATOMIC_FETCH_AND_ADD) {
			if (progress)
				roce_comp_progress(qp, now);
			if (!q->retrying)
				q->n.implied_naks++;
			roce_comp_retry(qp);
			return false;
		}
		w->done = true;
		progress = true;
	}
	if (roce_psn_diff(roce_psn_add(psn, 1), q->una) > 0) {
		q->una = roce_psn_add(psn, 1);
		progress = true;
	}
	if (progress) {
		roce_comp_progress(qp, now);
		/* a retransmission behind what is now acknowledged skips ahead */
		if (roce_psn_diff(q->psn, q->una) < 0)
			roce_req_rewind(qp);
	}
	return true;
}

/* Place len bytes of a READ response at message offset off into the WR's scatter list
 * (copied, or handed to an MR's sink: roce_scatter). */
static int roce_comp_scatter(struct roce_qp *qp, const struct roce_send_wr *wr, uint32_t off, struct netbuf *nb,
			     size_t src_off, uint32_t len)
{
	return roce_scatter(qp->dev, qp->pd, wr->sg_list, wr->num_sge, off, nb, src_off, len, &qp->req.n.rx_frags,
			    &qp->req.n.rx_frag_bytes) ? -1 : 0;
}

static void roce_comp_read_resp(struct roce_qp *qp, const struct roce_pkt *p, struct netbuf *nb, uint64_t now)
{
	struct roce_req_state *q = &qp->req;
	uint32_t pmtu = roce_mtu_bytes(qp->attr.path_mtu);
	int k = roce_comp_oldest(qp);
	struct roce_req_wqe *w;
	const struct roce_send_wr *wr;

	if (k < 0 || roce_req_wr_at(qp, (unsigned)k)->opcode != ROCE_WR_RDMA_READ) {
		q->n.dup_resps++;
		return;
	}
	w = roce_req_wqe_at(qp, (unsigned)k);
	wr = roce_req_wr_at(qp, (unsigned)k);
	int32_t d = roce_psn_diff(p->psn, roce_psn_add(w->psn_first, w->read_got / pmtu));
	if (d < 0) {
		q->n.dup_resps++;
		return;
	}
	if (d > 0) {
		/* a response is missing: ask again from the first byte not placed */
		q->n.seq_naks++;
		roce_comp_retry(qp);
		return;
	}
	uint32_t rest = w->len - w->read_got;
	bool last = (p->flags & ROCE_F_LAST) != 0;
	if (last ? p->payload_len != rest : (p->payload_len != pmtu || pmtu >= rest)) {
		log_info("qp %#x: READ response PSN %#x with %u bytes, %u expected", qp->qpn, p->psn, p->payload_len,
			 last ? rest : pmtu);
		roce_comp_fail(qp, ROCE_WC_BAD_RESP_ERR);
		return;
	}
	if (p->payload_len && roce_comp_scatter(qp, wr, w->read_got, nb, p->hdr_len, p->payload_len)) {
		roce_comp_fail(qp, ROCE_WC_LOC_PROT_ERR);
		return;
	}
	w->read_got += p->payload_len;
	q->una = roce_psn_add(p->psn, 1);
	if (last)
		w->done = true;
	roce_comp_progress(qp, now);
	roce_req_complete(qp);
}

static void roce_comp_atomic_ack(struct roce_qp *qp, const struct roce_pkt *p, uint64_t now)
{
	struct roce_req_state *q = &qp->req;
	int k = roce_comp_oldest(qp);
	const struct roce_send_wr *wr;
	struct roce_req_wqe *w;
	dma_addr_t m;

	if (k < 0) {
		q->n.dup_resps++;
		return;
	}
	w = roce_req_wqe_at(qp, (unsigned)k);
	wr = roce_req_wr_at(qp, (unsigned)k);
	if ((wr->opcode != ROCE_WR_ATOMIC_CMP_AND_SWP && wr->opcode != ROCE_WR_ATOMIC_FETCH_AND_ADD) ||
	    w->psn_first != p->psn) {
		if (roce_psn_diff(p->psn, w->psn_first) < 0)
			q->n.dup_resps++;
		else
			roce_comp_fail(qp, ROCE_WC_BAD_RESP_ERR);
		return;
	}
	if (roce_mr_check(qp->dev, qp->pd, wr->sg_list[0].lkey, false, ROCE_ACCESS_LOCAL_WRITE, wr->sg_list[0].addr, 8,
			  &m)) {
		roce_comp_fail(qp, ROCE_WC_LOC_PROT_ERR);
		return;
	}
	memcpy((void *)(uintptr_t)m.bus, &p->orig, 8);
	dma_account_cpu(m.cls, 8);
	w->done = true;
	q->una = roce_psn_add(p->psn, 1);
	roce_comp_progress(qp, now);
	roce_req_complete(qp);
}

void roce_comp_rx(struct roce_qp *qp, const struct roce_pkt *p, struct netbuf *nb, uint64_t now)
{
	struct roce_req_state *q = &qp->req;
	uint32_t hi = roce_psn_add(q->psn_hi, ROCE_PSN_MASK);  /* the highest PSN sent */

	if (qp->type != ROCE_QPT_RC || (qp->state != ROCE_QPS_RTS && qp->state != ROCE_QPS_SQD))
		return;
	if (!q->started || roce_psn_diff(p->psn, hi) > 0 ||
	    roce_psn_diff(p->psn, roce_psn_add(q->una, ROCE_PSN_MASK)) < 0) {
		q->n.dup_resps++;  /* for nothing outstanding, beyond what was sent, or older than una - 1 */
		return;
	}
	/* a response or NAK at PSN p acknowledges everything before it */
	if (!roce_comp_ack_upto(qp, roce_psn_add(p->psn, ROCE_PSN_MASK), now)) {
		roce_req_complete(qp);
		return;
	}
	roce_req_complete(qp);
	if (!q->started)
		return;
	if (p->flags & ROCE_F_READ_RESP) {
		roce_comp_read_resp(qp, p, nb, now);
		return;
	}
	if (p->opcode == ROCE_RC_ATOMIC_ACK) {
		roce_comp_atomic_ack(qp, p, now);
		return;
	}
	switch (p->syndrome & AETH_SYNDROME_TYPE_MASK) {
	case AETH_TYPE_ACK:
		if (roce_comp_ack_upto(qp, p->psn, now))
			roce_req_complete(qp);
		return;
	case AETH_TYPE_RNR_NAK:
		/* 9.7.5.2.8: wait the responder's timer, then send again from the PSN it named */
		q->n.rnr_naks++;
		if (!q->rnr_left) {
			roce_comp_fail(qp, ROCE_WC_RNR_RETRY_EXC_ERR);
			return;
		}
		if (qp->attr.rnr_retry != 7)
			q->rnr_left--;
		q->rnr_until = now + roce_rnr_timer_ns(p->syndrome & 0x1f);
		q->deadline = 0;
		roce_req_rewind(qp);
		q->n.retransmits++;
		return;
	case AETH_TYPE_NAK:
		switch (p->syndrome & 0x1f) {
		case AETH_NAK_PSN_SEQ:
			q->n.seq_naks++;
			roce_comp_retry(qp);
			return;
		case AETH_NAK_INVALID_REQ:
			roce_comp_fail(qp, ROCE_WC_REM_INV_REQ_ERR);
			return;
		case AETH_NAK_REMOTE_ACCESS:
			roce_comp_fail(qp, ROCE_WC_REM_ACCESS_ERR);
			return;
		case AETH_NAK_REMOTE_OP:
			roce_comp_fail(qp, ROCE_WC_REM_OP_ERR);
			return;
		default:
			roce_comp_fail(qp, ROCE_WC_BAD_RESP_ERR);
			return;
		}
	default:
		q->n.dup_resps++;  /* reserved syndrome type: ignored */
		return;
	}
}
