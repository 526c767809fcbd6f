/*
 * roce_resp.c - the RC responder's receive side: PSN checks, opcode sequence, placement of
 * SEND and RDMA WRITE payloads, receive completions, RDMA READ and atomic execution into
 * responder resources, duplicates, and the ACK/NAK decision (see roce_resp.h; the packets
 * owed are sent from roce_resp_tx.c).
 *
 * Served: SEND (first/middle/last/only, with immediate, with invalidate: reported in the
 * completion), RDMA WRITE (first/middle/last/only, with immediate), RDMA READ, Compare &
 * Swap, Fetch & Add.
 */
#include <errno.h>
#include <string.h>
#include "../../lib/log.h"
#include "roce_internal.h"
#include "roce_odp_mr.h"
#include "roce_resp.h"

LOG_MODULE_USE(rdma);

/* Owe the requester an ACK or NAK (replacing an unsent older one: the newer covers it).
 * An unsent PSN-sequence NAK is not covered by an ACK: a packet past ePSN was dropped, so
 * it stays owed, at the current ePSN (9.7.5.1.2). Else, when the NIC was full while a
 * reordered pair arrived, the requester would learn of the drop only from its timer. */
static void roce_resp_answer(struct roce_qp *qp, uint8_t syndrome, uint32_t psn)
{
	struct roce_resp_ack *k = &qp->resp.ack;
	if (k->valid && k->syndrome == (AETH_TYPE_NAK | AETH_NAK_PSN_SEQ) &&
	    (syndrome & AETH_SYNDROME_TYPE_MASK) == AETH_TYPE_ACK) {
		syndrome = AETH_TYPE_NAK | AETH_NAK_PSN_SEQ;
		psn = qp->resp.epsn;
	}
	k->valid = true;
	k->syndrome = syndrome;
	k->psn = psn & ROCE_PSN_MASK;
	k->msn = qp->resp.msn;
}

/* A page of an on-demand paged MR that the request at ePSN touches is not resident: its
 * page-in is started; RNR NAK (as hardware ODP answers a page fault) so that the requester
 * retries after the RNR timer. ePSN stays; the packets behind it are dropped without a
 * PSN-sequence NAK until the retry arrives (one NAK per episode, as 9.7.5.1.2). */
static void roce_resp_rnr_fault(struct roce_qp *qp, const struct roce_pkt *p, uint32_t rkey)
{
	struct roce_resp_state *r = &qp->resp;
	r->naks_rnr++;
	r->nak_seq_sent = true;
	roce_mr_note_rnr(qp->dev, rkey);
	roce_resp_answer(qp, AETH_TYPE_RNR_NAK | (qp->attr.min_rnr_timer & 0x1f), p->psn);
}

/* A fatal request error (9.7.5.2.2..4): NAK code, complete the WR in progress with
 * status (if any), and the QP goes to ERR (flushing the rest). */
static void roce_resp_fatal(struct roce_qp *qp, const struct roce_pkt *p, uint8_t code, enum roce_wc_status status)
{
	struct roce_resp_state *r = &qp->resp;
	struct roce_qp_attr a = { .qp_state = ROCE_QPS_ERR };

	roce_resp_answer(qp, AETH_TYPE_NAK | code, p->psn);
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

/* Place len bytes of a SEND at message offset off into the WR's scatter list (copied, or
 * handed to an MR's sink: roce_scatter). 0, -EMSGSIZE (the message is longer than the WR's
 * buffers), -EACCES (an lkey check failed), -EINVAL (the packet is shorter than it said). */
static int roce_resp_place_send(struct roce_qp *qp, uint32_t off, struct netbuf *nb, size_t src_off, uint32_t len)
{
	const struct roce_recv_wr *w = &qp->resp.wqe;
	return roce_scatter(qp->dev, qp->pd, w->sg_list, w->num_sge, off, nb, src_off, len, &qp->resp.rx_frags,
			    &qp->resp.rx_frag_bytes);
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

/* The responder resources in use: max_dest_rd_atomic slots (at least one). */
static unsigned roce_resp_nres(const struct roce_qp *qp)
{
	unsigned n = qp->attr.max_dest_rd_atomic;
	return n < 1 ? 1 : n > ROCE_MAX_RD_ATOMIC ? ROCE_MAX_RD_ATOMIC : n;
}

/* The slot a new READ/atomic takes (the oldest), or NULL when every slot still owes
 * responses: the requester has more outstanding than max_dest_rd_atomic allows. */
static struct roce_resp_res *roce_resp_res_take(struct roce_qp *qp)
{
	struct roce_resp_state *r = &qp->resp;
	struct roce_resp_res *res = &r->res[r->res_next % roce_resp_nres(qp)];
	if (res->type != ROCE_RES_NONE && res->pending)
		return NULL;
	r->res_next = (r->res_next + 1) % roce_resp_nres(qp);
	return res;
}

/* PSNs a READ of len bytes takes: one per response packet, at least one (9.7.5.1). */
static uint32_t roce_resp_read_psns(const struct roce_qp *qp, uint32_t len)
{
	uint32_t pmtu = roce_mtu_bytes(qp->attr.path_mtu);
	return len ? (len + pmtu - 1) / pmtu : 1;
}

/* A new RDMA READ request (ePSN): check, keep as a resource whose responses are owed. */
static void roce_resp_read(struct roce_qp *qp, const struct roce_pkt *p)
{
	struct roce_resp_state *r = &qp->resp;
	struct roce_resp_res *res;
	uint32_t n = roce_resp_read_psns(qp, p->dmalen);
	dma_addr_t m;

	/* 9.4.4: a zero-length READ checks no key */
	if (!(qp->attr.qp_access_flags & ROCE_ACCESS_REMOTE_READ) ||
	    (p->dmalen &&
	     roce_mr_check(qp->dev, qp->pd, p->rkey, true, ROCE_ACCESS_REMOTE_READ, p->va, p->dmalen, &m))) {
		roce_resp_fatal(qp, p, AETH_NAK_REMOTE_ACCESS, ROCE_WC_REM_ACCESS_ERR);
		return;
	}
	/* a READ may not take a quarter of the PSN space (its responses would wrap into the
	 * window serial arithmetic compares against) */
	if (n > ROCE_PSN_MASK / 4 + 1) {
		roce_resp_fatal(qp, p, AETH_NAK_INVALID_REQ, ROCE_WC_REM_INV_REQ_ERR);
		return;
	}
	/* ODP: the first pages resident, or RNR NAK while they are paged in (the responses
	 * wait for any later page that is not) */
	switch (p->dmalen ? roce_mr_fault_window(qp->dev, p->rkey, p->va, p->dmalen) : 0) {
	case 0:
		break;
	case -EAGAIN:
		roce_resp_rnr_fault(qp, p, p->rkey);
		return;
	default:
		roce_resp_fatal(qp, p, AETH_NAK_REMOTE_OP, ROCE_WC_REM_OP_ERR);
		return;
	}
	if (!(res = roce_resp_res_take(qp))) {
		roce_resp_fatal(qp, p, AETH_NAK_INVALID_REQ, ROCE_WC_REM_INV_REQ_ERR);
		return;
	}
	r->msn = (r->msn + 1) & 0xffffffu;
	*res = (struct roce_resp_res){ .type = ROCE_RES_READ, .psn_first = p->psn,
				       .psn_last = roce_psn_add(p->psn, n - 1), .msn = r->msn, .pending = true,
				       .first = true, .psn = p->psn, .va = p->va, .rkey = p->rkey,
				       .remaining = p->dmalen };
	r->epsn = roce_psn_add(r->epsn, n);
	r->reads++;
}

/* A new atomic (ePSN): 8 aligned bytes of an MR with remote atomic rights, read, compared
 * or added, written back; the original value kept for the ACK and its replays (9.4.5). */
static void roce_resp_atomic(struct roce_qp *qp, const struct roce_pkt *p)
{
	struct roce_resp_state *r = &qp->resp;
	struct roce_resp_res *res;
	uint64_t orig, *cell;
	struct roce_tx_seg seg;
	dma_addr_t m;
	unsigned nseg;
	int rc;

	if (p->va & 7) {
		roce_resp_fatal(qp, p, AETH_NAK_INVALID_REQ, ROCE_WC_REM_INV_REQ_ERR);
		return;
	}
	if (!(qp->attr.qp_access_flags & ROCE_ACCESS_REMOTE_ATOMIC) ||
	    roce_mr_check(qp->dev, qp->pd, p->rkey, true, ROCE_ACCESS_REMOTE_ATOMIC, p->va, 8, &m)) {
		roce_resp_fatal(qp, p, AETH_NAK_REMOTE_ACCESS, ROCE_WC_REM_ACCESS_ERR);
		return;
	}
	/* 8 aligned bytes lie in one page (ODP: resident, or RNR NAK while it is paged in) */
	rc = roce_mr_map(qp->dev, qp->pd, p->rkey, true, ROCE_ACCESS_REMOTE_ATOMIC, p->va, 8, &seg, 1, &nseg);
	if (rc == -EAGAIN) {
		roce_resp_rnr_fault(qp, p, p->rkey);
		return;
	}
	if (rc) {
		roce_resp_fatal(qp, p, AETH_NAK_REMOTE_OP, ROCE_WC_REM_OP_ERR);
		return;
	}
	m = seg.mem;
	if (!(res = roce_resp_res_take(qp))) {
		roce_resp_fatal(qp, p, AETH_NAK_INVALID_REQ, ROCE_WC_REM_INV_REQ_ERR);
		return;
	}
	/* one poll loop owns the QP and its memory: the read-modify-write is atomic with
	 * respect to every other access through this device */
	cell = (uint64_t *)(uintptr_t)m.bus;
	orig = *cell;
	if (p->opcode == ROCE_RC_CMP_SWAP) {
		if (orig == p->compare)
			*cell = p->swap_add;
	} else {
		*cell = orig + p->swap_add;
	}
	dma_account_cpu(m.cls, 16);
	r->msn = (r->msn + 1) & 0xffffffu;
	*res = (struct roce_resp_res){ .type = ROCE_RES_ATOMIC, .psn_first = p->psn, .psn_last = p->psn,
				       .msn = r->msn, .orig = orig, .pending = true, .psn = p->psn };
	r->epsn = roce_psn_add(r->epsn, 1);
	r->atomics++;
}

/* The resource whose PSNs hold psn, or NULL. */
static struct roce_resp_res *roce_resp_res_find(struct roce_qp *qp, uint32_t psn)
{
	for (unsigned i = 0; i < roce_resp_nres(qp); i++) {
		struct roce_resp_res *res = &qp->resp.res[i];
		if (res->type != ROCE_RES_NONE && roce_psn_diff(psn, res->psn_first) >= 0 &&
		    roce_psn_diff(res->psn_last, psn) >= 0)
			return res;
	}
	return NULL;
}

/* A duplicate (PSN before ePSN, 9.7.5.1.1): a SEND or WRITE is not executed again but
 * acknowledged with the last PSN done; a READ is executed again from the duplicate's PSN
 * with its (possibly shortened) range; an atomic's saved result is sent again. A READ or
 * atomic older than every resource is dropped: the requester cannot be waiting for it. */
static void roce_resp_duplicate(struct roce_qp *qp, const struct roce_pkt *p)
{
	struct roce_resp_state *r = &qp->resp;
	struct roce_resp_res *res;
	dma_addr_t m;

	r->dups++;
	if (!(p->flags & (ROCE_F_READ_REQ | ROCE_F_ATOMIC))) {
		roce_resp_answer(qp, AETH_TYPE_ACK, roce_psn_add(r->epsn, ROCE_PSN_MASK));
		return;
	}
	res = roce_resp_res_find(qp, p->psn);
	if (!res)
		return;
	if (p->flags & ROCE_F_ATOMIC) {
		if (res->type == ROCE_RES_ATOMIC && res->psn_first == p->psn) {
			res->pending = true;
			r->replays++;
		}
		return;
	}
	if (res->type != ROCE_RES_READ ||
	    roce_psn_diff(res->psn_last, roce_psn_add(p->psn, roce_resp_read_psns(qp, p->dmalen) - 1)) < 0 ||
	    (p->dmalen &&
	     roce_mr_check(qp->dev, qp->pd, p->rkey, true, ROCE_ACCESS_REMOTE_READ, p->va, p->dmalen, &m)))
		return;
	res->pending = true;
	res->first = true;
	res->psn = p->psn;
	res->va = p->va;
	res->rkey = p->rkey;
	res->remaining = p->dmalen;
	r->replays++;
}

void roce_resp_rx(struct roce_qp *qp, const struct roce_pkt *p, struct netbuf *nb)
{
	struct roce_resp_state *r = &qp->resp;
	uint32_t pmtu = roce_mtu_bytes(qp->attr.path_mtu);
	int32_t d;

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
			roce_resp_answer(qp, AETH_TYPE_NAK | AETH_NAK_PSN_SEQ, r->epsn);
		}
		return;
	}
	if (d < 0) {
		roce_resp_duplicate(qp, p);
		return;
	}
	r->nak_seq_sent = false;

	if (!roce_resp_in_sequence(r, p)) {
		roce_resp_fatal(qp, p, AETH_NAK_INVALID_REQ, ROCE_WC_REM_INV_REQ_ERR);
		return;
	}
	if (p->flags & ROCE_F_READ_REQ) {
		roce_resp_read(qp, p);
		return;
	}
	if (p->flags & ROCE_F_ATOMIC) {
		roce_resp_atomic(qp, p);
		return;
	}
	/* 9.7.5.1.6: first and middle packets carry exactly a path MTU, last/only at most one */
	if ((p->flags & ROCE_F_LAST) ? p->payload_len > pmtu : p->payload_len != pmtu) {
		roce_resp_fatal(qp, p, AETH_NAK_INVALID_REQ, ROCE_WC_REM_INV_REQ_ERR);
		return;
	}
	/* a SEND, or the immediate of a WRITE, needs a receive WR: RNR NAK when none (9.7.5.2.8) */
	bool needs_wqe = (p->flags & ROCE_F_WRITE) ? (p->flags & ROCE_F_IMMDT) != 0 : (p->flags & ROCE_F_FIRST) != 0;
	if (needs_wqe && !r->has_wqe && !roce_resp_take_wqe(qp)) {
		r->naks_rnr++;
		roce_resp_answer(qp, AETH_TYPE_RNR_NAK | (qp->attr.min_rnr_timer & 0x1f), p->psn);
		return;
	}

	if (p->flags & ROCE_F_WRITE) {
		struct roce_tx_seg seg[ROCE_MAX_SGE];
		unsigned nseg = 0;
		dma_addr_t m;
		if (p->flags & ROCE_F_FIRST) {
			if (!(qp->attr.qp_access_flags & ROCE_ACCESS_REMOTE_WRITE) ||
			    roce_mr_check(qp->dev, qp->pd, p->rkey, true, ROCE_ACCESS_REMOTE_WRITE, p->va, p->dmalen, &m)) {
				roce_resp_fatal(qp, p, AETH_NAK_REMOTE_ACCESS, ROCE_WC_REM_ACCESS_ERR);
				return;
			}
		}
		uint32_t remaining = (p->flags & ROCE_F_FIRST) ? p->dmalen : r->remaining;
		if (p->payload_len > remaining || ((p->flags & ROCE_F_LAST) && p->payload_len != remaining)) {
			roce_resp_fatal(qp, p, AETH_NAK_INVALID_REQ, ROCE_WC_REM_INV_REQ_ERR);
			return;
		}
		/* the memory of this packet's bytes, before any state changes: an ODP page that
		 * is not resident is an RNR NAK and this PSN is retried (the MR may also have
		 * gone since the first packet was checked) */
		if (p->payload_len) {
			uint32_t rkey = (p->flags & ROCE_F_FIRST) ? p->rkey : r->rkey;
			int rc = roce_mr_map(qp->dev, qp->pd, rkey, true, ROCE_ACCESS_REMOTE_WRITE,
					     (p->flags & ROCE_F_FIRST) ? p->va : r->va, p->payload_len, seg, ROCE_MAX_SGE,
					     &nseg);
			if (rc == -EAGAIN) {
				roce_resp_rnr_fault(qp, p, rkey);
				return;
			}
			if (rc) {
				roce_resp_fatal(qp, p, rc == -EIO ? AETH_NAK_REMOTE_OP : AETH_NAK_REMOTE_ACCESS,
						rc == -EIO ? ROCE_WC_REM_OP_ERR : ROCE_WC_REM_ACCESS_ERR);
				return;
			}
		}
		if (p->flags & ROCE_F_FIRST) {
			r->msg = ROCE_RESP_WRITE;
			r->va = p->va;
			r->rkey = p->rkey;
			r->remaining = p->dmalen;
			r->offset = 0;
		}
		for (unsigned i = 0, off = 0; i < nseg; off += seg[i].len, i++) {
			if (roce_resp_copy(nb, p->hdr_len + off, seg[i].mem, seg[i].len)) {
				roce_resp_fatal(qp, p, AETH_NAK_REMOTE_ACCESS, ROCE_WC_REM_ACCESS_ERR);
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
			roce_resp_fatal(qp, p, AETH_NAK_INVALID_REQ, ROCE_WC_LOC_LEN_ERR);
			return;
		}
		if (rc) {
			roce_resp_fatal(qp, p, AETH_NAK_REMOTE_OP, ROCE_WC_LOC_PROT_ERR);
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
	r->unacked = true;
	/* ACK coalescing: the requester asks (AckReq) on the last packet of a message and as
	 * often as it wants more; an ACK covers every PSN up to it (9.7.5.1.4) */
	if (p->ackreq)
		roce_resp_answer(qp, AETH_TYPE_ACK, p->psn);
}
