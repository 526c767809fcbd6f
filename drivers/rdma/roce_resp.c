/*
 * roce_resp.c - the RC responder: PSN checks, opcode sequence, placement of SEND and RDMA
 * WRITE payloads, receive completions, and the ACK/NAK decision (see roce_resp.h).
 *
 * Served: SEND (first/middle/last/only, with immediate, with invalidate: reported in the
 * completion), RDMA WRITE (first/middle/last/only, with immediate). RDMA READ and atomics
 * are answered with an invalid-request NAK until the responder's read/atomic resources
 * land (issue 15's next step).
 */
#include <errno.h>
#include <string.h>
#include "../../lib/log.h"
#include "roce_internal.h"
#include "roce_resp.h"

LOG_MODULE_USE(rdma);

static void roce_resp_answer(struct roce_resp_out *out, enum roce_resp_answer a, uint8_t syndrome, uint32_t psn,
			     uint32_t msn)
{
	out->answer = a;
	out->syndrome = syndrome;
	out->psn = psn & ROCE_PSN_MASK;
	out->msn = msn & 0xffffffu;
}

/* A fatal request error (9.7.5.2.2..4): NAK code, complete the WR in progress with
 * status (if any), and the QP goes to ERR (flushing the rest). */
static void roce_resp_fatal(struct roce_qp *qp, const struct roce_pkt *p, uint8_t code, enum roce_wc_status status,
			    struct roce_resp_out *out)
{
	struct roce_resp_state *r = &qp->resp;
	struct roce_qp_attr a = { .qp_state = ROCE_QPS_ERR };

	roce_resp_answer(out, ROCE_ANSWER_NAK, AETH_TYPE_NAK | code, p->psn, r->msn);
	switch (code) {
	case AETH_NAK_INVALID_REQ: r->naks_inv++; break;
	case AETH_NAK_REMOTE_ACCESS: r->naks_access++; break;
	default: r->naks_op++; break;
	}
	if (r->has_wqe) {
		struct roce_wc wc = { .wr_id = r->wqe.wr_id, .status = status, .opcode = ROCE_WC_RECV,
				      .qp_num = qp->qpn, .src_qp = qp->attr.dest_qp_num };
		(void)roce_cq_push(qp->init.recv_cq, &wc);
		r->has_wqe = false;
	}
	r->msg = ROCE_RESP_IDLE;
	log_info("qp %#x: request PSN %#x %s refused (NAK code %u), QP to ERR", qp->qpn, p->psn,
		 roce_opcode_name(p->opcode), code);
	roce_modify_qp(qp, &a, ROCE_QP_STATE);
}

/* Take the next receive WR (the SRQ's or the QP's own). false when none is posted. */
static bool roce_resp_take_wqe(struct roce_qp *qp)
{
	struct roce_resp_state *r = &qp->resp;
	struct roce_wq *wq;
	struct roce_recv_wr *ring;

	if (qp->init.srq) {
		wq = &qp->init.srq->wq;
		ring = qp->init.srq->ring;
	} else {
		wq = &qp->rq;
		ring = qp->rq_ring;
	}
	if (!wq->count)
		return false;
	r->wqe = ring[wq->head];
	wq->head = (wq->head + 1) % wq->size;
	wq->count--;
	r->has_wqe = true;
	return true;
}

/* Copy len payload bytes (at src_off in nb) to memory at m (counted by class). */
static int roce_resp_copy(const struct netbuf *nb, size_t src_off, dma_addr_t m, uint32_t len)
{
	if (netbuf_copy_out(nb, src_off, (void *)(uintptr_t)m.bus, len))
		return -EINVAL;
	dma_account_cpu(m.cls, len);
	return 0;
}

/* Place len bytes of a SEND at message offset off into the WR's scatter list. 0,
 * -EMSGSIZE (the message is longer than the WR's buffers), -EACCES (an lkey check
 * failed), -EINVAL (the packet is shorter than it said). */
static int roce_resp_place_send(struct roce_qp *qp, uint32_t off, const struct netbuf *nb, size_t src_off, uint32_t len)
{
	const struct roce_recv_wr *w = &qp->resp.wqe;
	uint64_t base = 0;

	for (unsigned i = 0; i < w->num_sge && len; i++) {
		const struct roce_sge *s = &w->sg_list[i];
		uint64_t end = base + s->length;
		if (off < end) {
			uint32_t in = (uint32_t)(off - base);
			uint32_t n = s->length - in < len ? s->length - in : len;
			dma_addr_t m;
			int rc;
			if (roce_mr_check(qp->dev, qp->pd, s->lkey, false, ROCE_ACCESS_LOCAL_WRITE, s->addr + in, n, &m))
				return -EACCES;
			if ((rc = roce_resp_copy(nb, src_off, m, n)))
				return rc;
			off += n;
			src_off += n;
			len -= n;
		}
		base = end;
	}
	return len ? -EMSGSIZE : 0;
}

static void roce_resp_complete_recv(struct roce_qp *qp, const struct roce_pkt *p, enum roce_wc_opcode op,
				    uint32_t byte_len)
{
	struct roce_resp_state *r = &qp->resp;
	struct roce_wc wc = { .wr_id = r->wqe.wr_id, .status = ROCE_WC_SUCCESS, .opcode = op, .byte_len = byte_len,
			      .qp_num = qp->qpn, .src_qp = qp->attr.dest_qp_num };
	if (p->flags & ROCE_F_IMMDT) {
		wc.wc_flags |= ROCE_WC_WITH_IMM;
		wc.imm_data = p->imm;
	}
	if (p->flags & ROCE_F_IETH) {
		wc.wc_flags |= ROCE_WC_WITH_INV;
		wc.imm_data = p->inv_rkey;
	}
	(void)roce_cq_push(qp->init.recv_cq, &wc);
	r->has_wqe = false;
}

/* Is p the packet the message in progress (or none) allows next (9.7.5.1.3)? */
static bool roce_resp_in_sequence(const struct roce_resp_state *r, const struct roce_pkt *p)
{
	switch (r->msg) {
	case ROCE_RESP_IDLE:
		return p->flags & ROCE_F_FIRST;
	case ROCE_RESP_SEND:
		return (p->flags & ROCE_F_SEND) && !(p->flags & ROCE_F_WRITE) && !(p->flags & ROCE_F_FIRST);
	case ROCE_RESP_WRITE:
		return (p->flags & ROCE_F_WRITE) && !(p->flags & ROCE_F_FIRST);
	}
	return false;
}

void roce_resp_rx(struct roce_qp *qp, const struct roce_pkt *p, const struct netbuf *nb, struct roce_resp_out *out)
{
	struct roce_resp_state *r = &qp->resp;
	uint32_t pmtu = roce_mtu_bytes(qp->attr.path_mtu);
	int32_t d;

	roce_resp_answer(out, ROCE_ANSWER_NONE, 0, 0, 0);
	if (qp->type != ROCE_QPT_RC || !(p->flags & ROCE_F_REQUEST) || (p->flags & ROCE_F_UD))
		return;
	if (qp->state != ROCE_QPS_RTR && qp->state != ROCE_QPS_RTS && qp->state != ROCE_QPS_SQD)
		return;  /* 10.3.1: RESET/INIT/ERR drop requests silently */

	d = roce_psn_diff(p->psn, r->epsn);
	if (d > 0) {
		/* 9.7.5.1.2: a PSN ahead of ePSN means lost packets: one NAK until ePSN arrives */
		if (!r->nak_seq_sent) {
			r->nak_seq_sent = true;
			r->naks_seq++;
			roce_resp_answer(out, ROCE_ANSWER_NAK, AETH_TYPE_NAK | AETH_NAK_PSN_SEQ, r->epsn, r->msn);
		}
		return;
	}
	if (d < 0) {
		/* 9.7.5.1.1: a duplicate SEND/WRITE is not executed again; it is acknowledged
		 * with the last PSN done, so a requester whose ACK was lost moves on */
		r->dups++;
		r->acks++;
		roce_resp_answer(out, ROCE_ANSWER_ACK, AETH_TYPE_ACK | AETH_CREDIT_INVALID,
				 roce_psn_add(r->epsn, ROCE_PSN_MASK), r->msn);
		return;
	}
	r->nak_seq_sent = false;

	if (p->flags & (ROCE_F_READ_REQ | ROCE_F_ATOMIC)) {
		roce_resp_fatal(qp, p, AETH_NAK_INVALID_REQ, ROCE_WC_REM_INV_REQ_ERR, out);
		return;
	}
	if (!roce_resp_in_sequence(r, p)) {
		roce_resp_fatal(qp, p, AETH_NAK_INVALID_REQ, ROCE_WC_REM_INV_REQ_ERR, out);
		return;
	}
	/* 9.7.5.1.6: first and middle packets carry exactly a path MTU, last/only at most one */
	if ((p->flags & ROCE_F_LAST) ? p->payload_len > pmtu : p->payload_len != pmtu) {
		roce_resp_fatal(qp, p, AETH_NAK_INVALID_REQ, ROCE_WC_REM_INV_REQ_ERR, out);
		return;
	}
	/* a SEND, or the immediate of a WRITE, needs a receive WR: RNR NAK when none (9.7.5.2.8) */
	bool needs_wqe = (p->flags & ROCE_F_WRITE) ? (p->flags & ROCE_F_IMMDT) != 0 : (p->flags & ROCE_F_FIRST) != 0;
	if (needs_wqe && !r->has_wqe && !roce_resp_take_wqe(qp)) {
		r->naks_rnr++;
		roce_resp_answer(out, ROCE_ANSWER_RNR, AETH_TYPE_RNR_NAK | (qp->attr.min_rnr_timer & 0x1f), p->psn,
				 r->msn);
		return;
	}

	if (p->flags & ROCE_F_WRITE) {
		dma_addr_t m;
		if (p->flags & ROCE_F_FIRST) {
			if (!(qp->attr.qp_access_flags & ROCE_ACCESS_REMOTE_WRITE) ||
			    roce_mr_check(qp->dev, qp->pd, p->rkey, true, ROCE_ACCESS_REMOTE_WRITE, p->va, p->dmalen, &m)) {
				roce_resp_fatal(qp, p, AETH_NAK_REMOTE_ACCESS, ROCE_WC_REM_ACCESS_ERR, out);
				return;
			}
			r->msg = ROCE_RESP_WRITE;
			r->va = p->va;
			r->rkey = p->rkey;
			r->remaining = p->dmalen;
			r->offset = 0;
		}
		if (p->payload_len > r->remaining || ((p->flags & ROCE_F_LAST) && p->payload_len != r->remaining)) {
			roce_resp_fatal(qp, p, AETH_NAK_INVALID_REQ, ROCE_WC_REM_INV_REQ_ERR, out);
			return;
		}
		if (p->payload_len) {
			/* the whole range was checked at the first packet; the MR may have gone since */
			if (roce_mr_check(qp->dev, qp->pd, r->rkey, true, ROCE_ACCESS_REMOTE_WRITE, r->va, p->payload_len,
					  &m) ||
			    roce_resp_copy(nb, p->hdr_len, m, p->payload_len)) {
				roce_resp_fatal(qp, p, AETH_NAK_REMOTE_ACCESS, ROCE_WC_REM_ACCESS_ERR, out);
				return;
			}
		}
		r->va += p->payload_len;
		r->remaining -= p->payload_len;
		r->offset += p->payload_len;
		if (p->flags & ROCE_F_LAST) {
			if (p->flags & ROCE_F_IMMDT)
				roce_resp_complete_recv(qp, p, ROCE_WC_RECV_RDMA_WITH_IMM, r->offset);
			r->msg = ROCE_RESP_IDLE;
			r->msn = (r->msn + 1) & 0xffffffu;
		}
	} else {
		if (p->flags & ROCE_F_FIRST) {
			r->msg = ROCE_RESP_SEND;
			r->offset = 0;
		}
		int rc = roce_resp_place_send(qp, r->offset, nb, p->hdr_len, p->payload_len);
		if (rc == -EMSGSIZE) {
			roce_resp_fatal(qp, p, AETH_NAK_INVALID_REQ, ROCE_WC_LOC_LEN_ERR, out);
			return;
		}
		if (rc) {
			roce_resp_fatal(qp, p, AETH_NAK_REMOTE_OP, ROCE_WC_LOC_PROT_ERR, out);
			return;
		}
		r->offset += p->payload_len;
		if (p->flags & ROCE_F_LAST) {
			roce_resp_complete_recv(qp, p, ROCE_WC_RECV, r->offset);
			r->msg = ROCE_RESP_IDLE;
			r->msn = (r->msn + 1) & 0xffffffu;
		}
	}
	r->epsn = roce_psn_add(r->epsn, 1);
	/* ACK coalescing: the requester asks (AckReq) on the last packet of a message and as
	 * often as it wants more; an ACK covers every PSN up to it (9.7.5.1.4) */
	if (p->ackreq) {
		r->acks++;
		roce_resp_answer(out, ROCE_ANSWER_ACK, AETH_TYPE_ACK | AETH_CREDIT_INVALID, p->psn, r->msn);
	}
}
