/*
 * roce_comp.c - the RC completer: cumulative ACKs, READ responses placed in order, atomic
 * ACKs, RNR NAKs and NAKs, implied NAKs, and the retries they start (see roce_req.h).
 */
#include <stdint.h>
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

/* Progress: the retry counters start again, the timer runs while anything is outstanding. */
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

/* Does a scatter element of wr lie in an MR with a sink (roce_mr_set_sink)? */
static bool roce_comp_sink_wanted(struct roce_qp *qp, const struct roce_send_wr *wr)
{
	for (unsigned i = 0; i < wr->num_sge; i++) {
		const struct roce_sge *s = &wr->sg_list[i];
		struct roce_mr *mr;
		if (!roce_mr_find(qp->dev, qp->pd, s->lkey, false, ROCE_ACCESS_LOCAL_WRITE, s->addr, s->length, &mr) &&
		    mr->sink)
			return true;
	}
	return false;
}

/* Take the bytes [src_off, src_off + len) of nb out of it as references to the NIC's receive
 * buffers: at most max pieces into f, each narrowed to its payload bytes and holding its
 * buffer. nb is changed (the fragments leave it) and must not be read again. false, with
 * nothing taken, when a byte lies in nb's host part (a frame the NIC did not split) or in a
 * fragment without an owner, or when more than max pieces would be needed. */
static bool roce_comp_take_frags(struct netbuf *nb, size_t src_off, uint32_t len, struct netdev_frag *f, unsigned max,
				 unsigned *n)
{
	size_t host = netbuf_host_len(nb), base = 0, pos = 0, off, end;
	unsigned first = 0, k = 0;

	*n = 0;
	if (src_off < host || !len)
		return false;
	off = src_off - host;
	end = off + len;
	for (unsigned i = 0; i < nb->nfrags && pos < end; pos += nb->frags[i++].len) {
		if (pos + nb->frags[i].len <= off) {
			first = i + 1;
			base = pos + nb->frags[i].len;
			continue;
		}
		if (!nb->frags[i].owner || k >= max)
			return false;
		k++;
	}
	if (pos < end)
		return false;
	for (unsigned j = 0; j < k; j++) {
		struct netdev_frag *p = &f[j];
		size_t flen, a, b;
		netbuf_take_frag(nb, first, p);
		flen = p->len;
		a = off > base ? off - base : 0;
		b = end - base < flen ? end - base : flen;
		p->addr = dma_addr_add(p->addr, a);
		p->offset += a;
		p->len = (uint32_t)(b - a);
		base += flen;
	}
	*n = k;
	return true;
}

/* Place len bytes of a READ response at message offset off into the WR's scatter list: copied
 * into the MRs' memory, or, where an MR has a sink and the NIC left the payload in its receive
 * buffers, handed over as those buffers (then nb is not read again). */
static int roce_comp_scatter(struct roce_qp *qp, const struct roce_send_wr *wr, uint32_t off, struct netbuf *nb,
			     size_t src_off, uint32_t len)
{
	struct netdev_frag f[NETBUF_MAX_FRAGS];
	unsigned nf = 0, fi = 0;
	uint64_t base = 0;
	int rc = -1;

	if (roce_comp_sink_wanted(qp, wr) && roce_comp_take_frags(nb, src_off, len, f, NETBUF_MAX_FRAGS, &nf))
		src_off = SIZE_MAX; /* nb is no longer read: the bytes are in f */
	for (unsigned i = 0; i < wr->num_sge && len; i++) {
		const struct roce_sge *s = &wr->sg_list[i];
		uint64_t end = base + s->length;
		if (off < end) {
			uint32_t in = (uint32_t)(off - base);
			uint32_t n = s->length - in < len ? s->length - in : len;
			struct roce_mr *mr;
			dma_addr_t m;
			if (roce_mr_check(qp->dev, qp->pd, s->lkey, false, ROCE_ACCESS_LOCAL_WRITE, s->addr + in, n, &m) ||
			    roce_mr_find(qp->dev, qp->pd, s->lkey, false, ROCE_ACCESS_LOCAL_WRITE, s->addr + in, n, &mr))
				goto out;
			if (!nf) {
				if (netbuf_copy_out(nb, src_off, (void *)(uintptr_t)m.bus, n))
					goto out;
				dma_account_cpu(m.cls, n);
				src_off += n;
			}
			for (uint32_t done = 0; nf && done < n;) {
				struct netdev_frag *c = &f[fi];
				uint32_t k = c->len < n - done ? c->len : n - done;
				uint8_t *dst = (uint8_t *)(uintptr_t)m.bus + done;
				if (k == c->len && mr->sink) {
					/* the whole piece lies here: offered to the sink first */
					struct netdev_frag piece = *c;
					c->owner = NULL;
					c->len = 0;
					fi++;
					if (mr->sink(mr->sink_ctx, s->addr + in + done - mr->iova, &piece) == 0) {
						qp->req.n.rx_frags++;
						qp->req.n.rx_frag_bytes += k;
					} else {
						int e = netdev_frag_read(&piece, 0, dst, k);
						netdev_frag_release(&piece);
						if (e)
							goto out;
						dma_account_cpu(m.cls, k);
					}
				} else {
					if (netdev_frag_read(c, 0, dst, k))
						goto out;
					dma_account_cpu(m.cls, k);
					if (k == c->len) {
						netdev_frag_release(c);
						fi++;
					} else {
						c->addr = dma_addr_add(c->addr, k);
						c->offset += k;
						c->len -= k;
					}
				}
				done += k;
			}
			off += n;
			len -= n;
		}
		base = end;
	}
	rc = len ? -1 : 0;
out:
	while (fi < nf)
		netdev_frag_release(&f[fi++]);
	return rc;
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
