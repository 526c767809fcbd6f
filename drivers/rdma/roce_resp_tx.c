/*
 * roce_resp_tx.c - the packets the RC responder owes, in PSN order: READ responses
 * (segmented by the path MTU, AETH on the first and last, 9.7.5.2.4), atomic ACKs with the
 * original data (9.7.5.2.5), and the one coalesced ACK/NAK (9.7.5.1.4) with the credits
 * of the receive queue (9.7.7.2.5). See roce_resp.h.
 */
#include <errno.h>
#include <string.h>
#include "../../lib/log.h"
#include "roce_internal.h"
#include "roce_odp_mr.h"
#include "roce_resp.h"

LOG_MODULE_USE(rdma);

/* Table 45: the receive WR counts the 5-bit credit codes 0..30 stand for. */
static const uint16_t roce_credit_count[31] = {
	0, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536,
	2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768,
};

uint8_t roce_resp_credit_code(unsigned avail)
{
	uint8_t code = 0;
	while (code < 30 && roce_credit_count[code + 1] <= avail)
		code++;
	return code;
}

/* The ACK syndrome: credits of the QP's own receive queue; with an SRQ the requester is not
 * limited by this QP's credits (9.7.7.2.5), so "invalid" (unlimited). */
static uint8_t roce_resp_ack_syndrome(const struct roce_qp *qp)
{
	if (qp->init.srq)
		return AETH_TYPE_ACK | AETH_CREDIT_INVALID;
	return AETH_TYPE_ACK | roce_resp_credit_code(qp->rq.count);
}

/* The pending resource with the earliest response PSN, or NULL. */
static struct roce_resp_res *roce_resp_res_due(struct roce_qp *qp)
{
	struct roce_resp_res *best = NULL;
	for (unsigned i = 0; i < ROCE_MAX_RD_ATOMIC; i++) {
		struct roce_resp_res *res = &qp->resp.res[i];
		if (res->type != ROCE_RES_NONE && res->pending &&
		    (!best || roce_psn_diff(res->psn, best->psn) < 0))
			best = res;
	}
	return best;
}

/* Fill tx with the next response of READ resource res. 1: filled; 0: a page of an ODP MR
 * is being paged in (the response waits; the poller offers it again); -1: its memory is gone. */
static int roce_resp_read_next(struct roce_qp *qp, struct roce_resp_res *res, struct roce_tx *tx)
{
	uint32_t pmtu = roce_mtu_bytes(qp->attr.path_mtu);
	bool last = res->remaining <= pmtu;
	uint32_t len = last ? res->remaining : pmtu;
	int rc = 0;

	tx->nseg = 0;
	/* 9.4.4: a zero-length READ checks no key */
	if (len)
		rc = roce_mr_map(qp->dev, qp->pd, res->rkey, true, ROCE_ACCESS_REMOTE_READ, res->va, len, tx->seg,
			 ROCE_MAX_SGE, &tx->nseg);
	if (rc == -EAGAIN)
		return 0;
	if (rc)
		return -1;
	tx->len = len;
	tx->pkt.opcode = res->first ? (last ? ROCE_RC_READ_RESP_ONLY : ROCE_RC_READ_RESP_FIRST)
				    : (last ? ROCE_RC_READ_RESP_LAST : ROCE_RC_READ_RESP_MIDDLE);
	tx->pkt.psn = res->psn;
	tx->pkt.syndrome = roce_resp_ack_syndrome(qp);
	tx->pkt.msn = res->msn;
	tx->pkt.payload_len = len;
	return 1;
}

bool roce_resp_tx_next(struct roce_qp *qp, struct roce_tx *tx)
{
	struct roce_resp_state *r = &qp->resp;
	struct roce_resp_res *res = NULL;

	memset(tx, 0, sizeof(*tx));
	tx->pkt.pkey = ROCE_PKEY_DEFAULT;
	tx->pkt.destqp = qp->attr.dest_qp_num;
	if (qp->state != ROCE_QPS_ERR)
		res = roce_resp_res_due(qp);
	/* an ACK/NAK goes out only after the responses of the requests before it */
	if (res && (!r->ack.valid || roce_psn_diff(res->psn, r->ack.psn) <= 0)) {
		if (res->type == ROCE_RES_ATOMIC) {
			tx->pkt.opcode = ROCE_RC_ATOMIC_ACK;
			tx->pkt.psn = res->psn;
			tx->pkt.syndrome = roce_resp_ack_syndrome(qp);
			tx->pkt.msn = res->msn;
			tx->pkt.orig = res->orig;
			return true;
		}
		int rc = roce_resp_read_next(qp, res, tx);
		if (rc > 0)
			return true;
		if (rc == 0)
			return false;  /* an ODP page-in: nothing later may pass this response */
		/* the MR was deregistered while its READ was being answered (9.7.5.2.4) */
		struct roce_qp_attr a = { .qp_state = ROCE_QPS_ERR };
		log_info("qp %#x: READ response PSN %#x: R_Key %#x no longer valid, QP to ERR", qp->qpn, res->psn,
			 res->rkey);
		r->ack = (struct roce_resp_ack){ .valid = true, .syndrome = AETH_TYPE_NAK | AETH_NAK_REMOTE_ACCESS,
						 .psn = res->psn, .msn = r->msn };
		r->naks_access++;
		res->pending = false;
		roce_modify_qp(qp, &a, ROCE_QP_STATE);
		memset(tx, 0, sizeof(*tx));
		tx->pkt.pkey = ROCE_PKEY_DEFAULT;
		tx->pkt.destqp = qp->attr.dest_qp_num;
	}
	if (!r->ack.valid)
		return false;
	tx->pkt.opcode = ROCE_RC_ACK;
	if (r->ack.syndrome == (AETH_TYPE_NAK | AETH_NAK_PSN_SEQ) && r->unacked) {
		/* requests were taken since the last answer: ACK them before the sequence NAK. The
		 * NAK acknowledges them too (9.7.5.1.2), but Linux rxe's completer, in the middle of
		 * a retry, ignores a NAK until an ACK has ended that retry, and then waits for its
		 * retransmit timer (2 s from Linux's CM) */
		tx->pkt.psn = roce_psn_add(r->ack.psn, ROCE_PSN_MASK);
		tx->pkt.msn = r->ack.msn;
		tx->pkt.syndrome = roce_resp_ack_syndrome(qp);
		return true;
	}
	tx->pkt.psn = r->ack.psn;
	tx->pkt.msn = r->ack.msn;
	tx->pkt.syndrome = (r->ack.syndrome & AETH_SYNDROME_TYPE_MASK) == AETH_TYPE_ACK ? roce_resp_ack_syndrome(qp)
											 : r->ack.syndrome;
	return true;
}

void roce_resp_tx_done(struct roce_qp *qp, const struct roce_tx *tx)
{
	struct roce_resp_state *r = &qp->resp;

	if (tx->pkt.opcode == ROCE_RC_ACK) {
		bool ack = (tx->pkt.syndrome & AETH_SYNDROME_TYPE_MASK) == AETH_TYPE_ACK;
		if (ack)
			r->acks++;
		r->unacked = false;
		if (ack && r->ack.valid && r->ack.syndrome == (AETH_TYPE_NAK | AETH_NAK_PSN_SEQ))
			return;  /* the ACK ahead of a sequence NAK: the NAK is still owed */
		r->ack.valid = false;
		return;
	}
	for (unsigned i = 0; i < ROCE_MAX_RD_ATOMIC; i++) {
		struct roce_resp_res *res = &r->res[i];
		if (res->type == ROCE_RES_NONE || !res->pending || res->psn != tx->pkt.psn)
			continue;
		if (res->type == ROCE_RES_ATOMIC) {
			res->pending = false;
		} else {
			r->read_resps++;
			res->va += tx->len;
			res->remaining -= tx->len;
			res->first = false;
			res->pending = tx->pkt.opcode == ROCE_RC_READ_RESP_FIRST ||
				       tx->pkt.opcode == ROCE_RC_READ_RESP_MIDDLE;
			res->psn = roce_psn_add(res->psn, 1);
		}
		break;
	}
	/* a response covers every request before it: an ACK not later than it is redundant */
	if (r->ack.valid && (r->ack.syndrome & AETH_SYNDROME_TYPE_MASK) == AETH_TYPE_ACK &&
	    roce_psn_diff(r->ack.psn, tx->pkt.psn) <= 0)
		r->ack.valid = false;
}
