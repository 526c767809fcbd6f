/*
 * roce_cm.c - the communication manager's passive side (see roce_cm.h).
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include "../../lib/clock.h"
#include "../../lib/log.h"
#include "roce_internal.h"
#include "roce_net.h"
#include "roce_rc.h"

LOG_MODULE_USE(rdma);

#define ROCE_CM_MIN_RNR_TIMER 12     /* 0.64 ms: what an RNR NAK asks the requester to wait */
#define ROCE_CM_TARGET_ACK_DELAY 15  /* REP: 4.096 us * 2^15 = 134 ms, the ACK delay TCG needs */

static const char *const roce_cm_state_names[] = {
	[ROCE_CM_FREE] = "free", [ROCE_CM_REQ_RCVD] = "req-rcvd", [ROCE_CM_REP_SENT] = "rep-sent",
	[ROCE_CM_ESTABLISHED] = "established", [ROCE_CM_DREQ_SENT] = "dreq-sent", [ROCE_CM_TIMEWAIT] = "timewait",
	[ROCE_CM_REQ_SENT] = "req-sent",
};

const char *roce_cm_state_name(enum roce_cm_state s)
{
	return (unsigned)s < sizeof(roce_cm_state_names) / sizeof(roce_cm_state_names[0]) ? roce_cm_state_names[s] : "?";
}

static void roce_cm_set_state(struct roce_cm_conn *c, enum roce_cm_state s)
{
	if (c->state != s)
		log_debug("cm %#x: %s -> %s", c->local_id, roce_cm_state_name(c->state), roce_cm_state_name(s));
	c->state = s;
}

static int roce_cm_send(struct roce_net *rn, uint32_t peer, const uint8_t mad[ROCE_MAD_LEN])
{
	struct roce_pkt out = { .opcode = ROCE_UD_SEND_ONLY, .pkey = ROCE_PKEY_DEFAULT, .destqp = ROCE_GSI_QPN,
				.qkey = ROCE_GSI_QKEY, .srcqp = ROCE_GSI_QPN };
	return roce_net_send_ud(rn, peer, &out, mad, ROCE_MAD_LEN);
}

/* 4.096 us * 2^t, bounded (a CM timeout field is 5 bits). */
static uint64_t roce_cm_rto(uint8_t t)
{
	uint64_t ns = 4096ull << (t & 31);
	return ns < ROCE_CM_RTO_MIN_NS ? ROCE_CM_RTO_MIN_NS : ns > ROCE_CM_RTO_MAX_NS ? ROCE_CM_RTO_MAX_NS : ns;
}

int roce_cm_listen(struct roce_net *rn, uint64_t service_id, roce_cm_req_fn req, roce_cm_event_fn event, void *ctx)
{
	struct roce_cm_listener *free_slot = NULL;
	for (unsigned i = 0; i < ROCE_CM_MAX_LISTEN; i++) {
		struct roce_cm_listener *l = &rn->cm.ls[i];
		if (l->used && l->service_id == service_id)
			return -EEXIST;
		if (!l->used && !free_slot)
			free_slot = l;
	}
	if (!free_slot)
		return -ENOSPC;
	*free_slot = (struct roce_cm_listener){ .used = true, .service_id = service_id, .req = req, .event = event,
						.ctx = ctx };
	return 0;
}

void roce_cm_unlisten(struct roce_net *rn, uint64_t service_id)
{
	for (unsigned i = 0; i < ROCE_CM_MAX_LISTEN; i++)
		if (rn->cm.ls[i].used && rn->cm.ls[i].service_id == service_id)
			rn->cm.ls[i].used = false;
}

static struct roce_cm_listener *roce_cm_find_listener(struct roce_net *rn, uint64_t sid)
{
	for (unsigned i = 0; i < ROCE_CM_MAX_LISTEN; i++)
		if (rn->cm.ls[i].used && rn->cm.ls[i].service_id == sid)
			return &rn->cm.ls[i];
	return NULL;
}

/* The connection whose local Communication ID is id, from peer. */
static struct roce_cm_conn *roce_cm_by_local(struct roce_net *rn, uint32_t peer, uint32_t id)
{
	for (unsigned i = 0; i < ROCE_CM_MAX_CONN; i++) {
		struct roce_cm_conn *c = &rn->cm.conns[i];
		if (c->state != ROCE_CM_FREE && c->peer == peer && c->local_id == id)
			return c;
	}
	return NULL;
}

static void roce_cm_qp_err(struct roce_cm_conn *c)
{
	struct roce_qp_attr a = { .qp_state = ROCE_QPS_ERR };
	if (c->qp && roce_qp_state(c->qp) != ROCE_QPS_ERR && roce_qp_state(c->qp) != ROCE_QPS_RESET)
		roce_modify_qp(c->qp, &a, ROCE_QP_STATE);
}

/* Tell the connection's owner (its listener, or the active side's caller). */
static void roce_cm_tell(struct roce_cm_conn *c, enum roce_cm_event ev)
{
	if (c->l && c->l->event)
		c->l->event(c, ev, c->l->ctx);
	else if (c->event)
		c->event(c, ev, c->ctx);
}

/* The connection ends: QP to ERR, the owner told once, a time-wait follows. */
static void roce_cm_closed(struct roce_cm_conn *c, uint64_t now)
{
	bool tell = c->state == ROCE_CM_REP_SENT || c->state == ROCE_CM_ESTABLISHED || c->state == ROCE_CM_DREQ_SENT ||
		    c->state == ROCE_CM_REQ_SENT;
	roce_cm_qp_err(c);
	roce_cm_set_state(c, ROCE_CM_TIMEWAIT);
	c->deadline = now + ROCE_CM_TIMEWAIT_NS;
	if (tell)
		roce_cm_tell(c, ROCE_CM_EV_DISCONNECTED);
	c->qp = NULL;  /* the owner may destroy it from now on */
}

void roce_cm_detach(struct roce_cm_conn *c)
{
	c->qp = NULL;
	c->l = NULL;
	c->event = NULL;
}

static void roce_cm_established(struct roce_cm_conn *c)
{
	roce_cm_set_state(c, ROCE_CM_ESTABLISHED);
	roce_cm_tell(c, ROCE_CM_EV_ESTABLISHED);
}

static void roce_cm_reject_priv(struct roce_net *rn, uint32_t peer, const struct roce_mad *m, uint32_t local_id,
				uint16_t reason, const uint8_t *priv, size_t len)
{
	uint8_t rej[ROCE_MAD_LEN];
	roce_cm_build_rej_ids(rej, m->tid, local_id, m->req_local_comm_id, CM_REJ_MSG_REQ, reason);
	if (len && len <= sizeof(((struct roce_cm_rej *)0)->private_data))
		memcpy(rej + ROCE_MAD_HDR_LEN + offsetof(struct roce_cm_rej, private_data), priv, len);
	if (roce_cm_send(rn, peer, rej) == 0) {
		rn->cm.st.rej_tx++;
		rn->st.cm_rej_tx++;
	}
}

static void roce_cm_reject(struct roce_net *rn, uint32_t peer, const struct roce_mad *m, uint32_t local_id,
			   uint16_t reason)
{
	roce_cm_reject_priv(rn, peer, m, local_id, reason, NULL, 0);
}

void roce_cm_reject_data(struct roce_cm_conn *c, const void *priv, size_t len)
{
	if (c->state != ROCE_CM_REQ_RCVD || len > sizeof(((struct roce_cm_rej *)0)->private_data))
		return;
	memset(c->mad, 0, sizeof(c->mad));
	memcpy(c->mad, priv, len);
	c->rej_len = (uint8_t)len;
}

int roce_cm_accept(struct roce_cm_conn *c, struct roce_qp *qp, const void *priv, size_t len)
{
	const struct roce_cm_req *q = &c->req;
	struct roce_port_attr port;
	struct roce_qp_attr a;
	struct roce_cm_rep_msg rep;
	uint32_t rq_psn;
	enum roce_mtu mtu;

	if (c->state != ROCE_CM_REQ_RCVD || roce_qp_state(qp) != ROCE_QPS_INIT || len > CM_REP_PRIVATE_LEN)
		return -EINVAL;
	roce_query_port(qp->dev, &port);
	mtu = q->path_mtu >= ROCE_MTU_256 && q->path_mtu <= ROCE_MTU_4096 ? (enum roce_mtu)q->path_mtu : ROCE_MTU_1024;
	if (mtu > port.active_mtu)
		mtu = port.active_mtu;
	memset(&a, 0, sizeof(a));
	a.qp_state = ROCE_QPS_RTR;
	memcpy(a.ah_attr.dgid.raw, q->local_gid, 16);
	a.ah_attr.hop_limit = q->hop_limit;
	a.ah_attr.traffic_class = q->traffic_class;
	a.path_mtu = mtu;
	a.dest_qp_num = q->local_qpn;
	/* each side announces the PSN it expects to receive: the REQ's Starting PSN is where
	 * our send queue starts, the REP's where the peer's does (Linux's CM, checked against
	 * rxe in the lab: its first SEND carries the REP's PSN) */
	rq_psn = (uint32_t)(clock_now_ns() >> 10 ^ c->local_id * 2654435761u) & ROCE_PSN_MASK;
	a.rq_psn = rq_psn;
	a.max_dest_rd_atomic = q->initiator_depth > ROCE_MAX_RD_ATOMIC ? ROCE_MAX_RD_ATOMIC : q->initiator_depth;
	a.min_rnr_timer = ROCE_CM_MIN_RNR_TIMER;
	if (roce_modify_qp(qp, &a, ROCE_QP_STATE | ROCE_QP_AV | ROCE_QP_PATH_MTU | ROCE_QP_DEST_QPN | ROCE_QP_RQ_PSN |
					  ROCE_QP_MAX_DEST_RD_ATOMIC | ROCE_QP_MIN_RNR_TIMER))
		return -EINVAL;
	/* the passive side may send as soon as the active side can take it: rdma_cm moves it
	 * to RTS on accept; the application waits for the established event */
	a.qp_state = ROCE_QPS_RTS;
	a.sq_psn = q->starting_psn;
	a.timeout = q->ack_timeout;
	a.retry_cnt = q->retry_cnt;
	a.rnr_retry = q->rnr_retry;
	a.max_rd_atomic = q->responder_resources > ROCE_MAX_RD_ATOMIC ? ROCE_MAX_RD_ATOMIC : q->responder_resources;
	if (roce_modify_qp(qp, &a, ROCE_QP_STATE | ROCE_QP_SQ_PSN | ROCE_QP_TIMEOUT | ROCE_QP_RETRY_CNT |
					  ROCE_QP_RNR_RETRY | ROCE_QP_MAX_QP_RD_ATOMIC)) {
		roce_cm_qp_err(c);
		return -EINVAL;
	}
	memset(&rep, 0, sizeof(rep));
	rep.local_comm_id = be32_make(c->local_id);
	rep.remote_comm_id = be32_make(c->remote_id);
	rep.local_qpn = be24_make(roce_qp_num(qp));
	rep.starting_psn = be24_make(rq_psn);
	rep.responder_resources = a.max_dest_rd_atomic;
	rep.initiator_depth = a.max_rd_atomic;
	rep.tad_fo_e2e = ROCE_CM_TARGET_ACK_DELAY << 3;
	rep.rnr_srq = (uint8_t)(7 << 5 | (qp->init.srq ? 0x10 : 0));
	rep.local_ca_guid = be64_make(0x02000000fe000000ull | qp->dev->addr);
	if (len)
		memcpy(rep.private_data, priv, len);
	roce_cm_build_rep(c->mad, c->tid, &rep);
	c->qp = qp;
	c->rq_psn = rq_psn;
	roce_cm_set_state(c, ROCE_CM_REP_SENT);
	c->rto = roce_cm_rto((uint8_t)(q->local_cm_timeout + 1));
	c->retries_left = q->max_cm_retries;
	c->deadline = clock_now_ns() + c->rto;
	if (roce_cm_send(c->rn, c->peer, c->mad) == 0)
		c->rn->cm.st.rep_tx++;
	return 0;
}

int roce_cm_disconnect(struct roce_cm_conn *c)
{
	if (c->state != ROCE_CM_ESTABLISHED && c->state != ROCE_CM_REP_SENT)
		return -EINVAL;
	roce_cm_qp_err(c);
	c->tid = (uint64_t)c->local_id << 32 | ++c->rn->cm.next_id;
	roce_cm_build_dreq(c->mad, c->tid, c->local_id, c->remote_id, c->req.local_qpn);
	roce_cm_set_state(c, ROCE_CM_DREQ_SENT);
	c->retries_left = ROCE_CM_DREQ_RETRIES;
	c->deadline = clock_now_ns() + c->rto;
	if (roce_cm_send(c->rn, c->peer, c->mad) == 0)
		c->rn->cm.st.dreq_tx++;
	return 0;
}

static void roce_cm_req_rx(struct roce_net *rn, uint32_t peer, const uint8_t *mad, const struct roce_mad *m)
{
	struct roce_cm *cm = &rn->cm;
	struct roce_cm_conn *c = NULL;
	struct roce_cm_listener *l;
	struct roce_cm_req q;
	unsigned from_peer = 0;
	uint32_t gid_ip;
	char a[16];

	cm->st.req++;
	roce_cm_parse_req(mad, &q);
	for (unsigned i = 0; i < ROCE_CM_MAX_CONN; i++) {
		struct roce_cm_conn *x = &cm->conns[i];
		if (x->state == ROCE_CM_FREE) {
			if (!c)
				c = x;
			continue;
		}
		if (x->peer != peer)
			continue;
		from_peer++;
		if (x->remote_id == q.local_comm_id) {
			/* 12.9.5: a duplicate REQ while the REP is unanswered gets the REP again */
			cm->st.dup_req++;
			if (x->state == ROCE_CM_REP_SENT && roce_cm_send(rn, peer, x->mad) == 0)
				cm->st.rep_retx++;
			return;
		}
	}
	if (!(l = roce_cm_find_listener(rn, q.service_id))) {
		cm->st.no_listener++;
		roce_cm_reject(rn, peer, m, 0, CM_REJ_INVALID_SERVICE_ID);
		log_info("cm: REQ from %s comm id %#x service id %#llx: no listener, REJ sent", net_format_ipv4(peer, a),
			 q.local_comm_id, (unsigned long long)q.service_id);
		return;
	}
	if (q.transport != 0 || roce_gid_to_ipv4((const struct roce_gid *)q.local_gid, &gid_ip) || gid_ip != peer) {
		roce_cm_reject(rn, peer, m, 0, CM_REJ_UNSUPPORTED);
		return;
	}
	if (!c || from_peer >= ROCE_CM_MAX_PER_PEER) {
		cm->st.no_room++;
		roce_cm_reject(rn, peer, m, 0, CM_REJ_NO_RESOURCES);
		return;
	}
	memset(c, 0, sizeof(*c));
	c->rn = rn;
	c->l = l;
	c->peer = peer;
	c->local_id = ++cm->next_id | 0x80000000u;
	c->remote_id = q.local_comm_id;
	c->tid = m->tid;
	c->req = q;
	c->rto = roce_cm_rto((uint8_t)(q.local_cm_timeout + 1));
	roce_cm_set_state(c, ROCE_CM_REQ_RCVD);
	l->reqs++;
	int reason = l->req(c, &q, peer, l->ctx);
	if (c->state == ROCE_CM_REQ_RCVD) {
		/* refused, or not accepted */
		roce_cm_reject_priv(rn, peer, m, c->local_id, reason > 0 ? (uint16_t)reason : CM_REJ_CONSUMER, c->mad,
				    c->rej_len);
		roce_cm_qp_err(c);
		c->state = ROCE_CM_FREE;
		return;
	}
	log_info("cm: REQ from %s comm id %#x service id %#llx accepted on QP %#x", net_format_ipv4(peer, a),
		 q.local_comm_id, (unsigned long long)q.service_id, c->qp ? roce_qp_num(c->qp) : 0);
}

int roce_cm_connect(struct roce_net *rn, struct roce_qp *qp, const struct roce_cm_connect_param *p,
		    struct roce_cm_conn **out)
{
	struct roce_cm *cm = &rn->cm;
	struct roce_cm_conn *c = NULL;
	struct roce_cm_req_msg r;
	struct roce_port_attr port;
	unsigned from_peer = 0;
	uint32_t rq_psn;

	if (roce_qp_state(qp) != ROCE_QPS_INIT || qp->type != ROCE_QPT_RC || !qp->dev->addr || !p->peer ||
	    p->len > CM_REQ_PRIVATE_LEN - CM_RDMA_CM_HDR_LEN || (p->len && !p->priv))
		return -EINVAL;
	for (unsigned i = 0; i < ROCE_CM_MAX_CONN; i++) {
		struct roce_cm_conn *x = &cm->conns[i];
		if (x->state == ROCE_CM_FREE) {
			if (!c)
				c = x;
		} else {
			if (x->qp == qp)
				return -EBUSY;
			if (x->peer == p->peer)
				from_peer++;
		}
	}
	if (!c || from_peer >= ROCE_CM_MAX_PER_PEER)
		return -ENOSPC;
	roce_query_port(qp->dev, &port);
	memset(c, 0, sizeof(*c));
	c->rn = rn;
	c->peer = p->peer;
	c->active = true;
	c->event = p->event;
	c->ctx = p->ctx;
	c->qp = qp;
	c->local_id = ++cm->next_id | 0x80000000u;
	c->tid = (uint64_t)c->local_id << 32 | cm->next_id;
	/* as Linux's CM: the REQ announces the PSN our receive queue expects (the peer's send queue
	 * starts there), the REP the one the peer's expects (our send queue's start) */
	rq_psn = (uint32_t)(clock_now_ns() >> 10 ^ c->local_id * 2654435761u) & ROCE_PSN_MASK;
	c->rq_psn = rq_psn;
	c->req.service_id = ROCE_CM_PS_TCP_SID(p->port);
	c->req.path_mtu = (uint8_t)(port.active_mtu < ROCE_MTU_1024 ? port.active_mtu : ROCE_MTU_1024);
	c->req.responder_resources = p->responder_resources > ROCE_MAX_RD_ATOMIC ? ROCE_MAX_RD_ATOMIC : p->responder_resources;
	c->req.initiator_depth = p->initiator_depth > ROCE_MAX_RD_ATOMIC ? ROCE_MAX_RD_ATOMIC : p->initiator_depth;
	c->req.ack_timeout = 19;
	c->req.retry_cnt = 7;
	c->req.rnr_retry = 7;
	memset(&r, 0, sizeof(r));
	r.local_comm_id = be32_make(c->local_id);
	r.service_id = be64_make(c->req.service_id);
	r.local_ca_guid = be64_make(0x02000000fe000000ull | qp->dev->addr);
	r.local_qpn = be24_make(roce_qp_num(qp));
	r.responder_resources = c->req.responder_resources;
	r.initiator_depth = c->req.initiator_depth;
	r.rto_tst_e2e = ROCE_CM_ACTIVE_TIMEOUT << 3;  /* Remote CM Response Timeout; RC; no E2E credits */
	r.starting_psn = be24_make(rq_psn);
	r.lto_retry = (uint8_t)(ROCE_CM_ACTIVE_TIMEOUT << 3 | c->req.retry_cnt);
	r.pkey = be16_make(ROCE_PKEY_DEFAULT);
	r.mtu_rdc_rnr = (uint8_t)(c->req.path_mtu << 4 | c->req.rnr_retry);
	r.maxcm_srq_ext = (uint8_t)(ROCE_CM_REQ_RETRIES << 4 | (qp->init.srq ? 0x08 : 0));
	r.primary_local_lid = r.primary_remote_lid = be16_make(0xffff);  /* permissive: RoCE has no LIDs */
	roce_gid_from_ipv4(qp->dev->addr, (struct roce_gid *)r.primary_local_gid);
	roce_gid_from_ipv4(p->peer, (struct roce_gid *)r.primary_remote_gid);
	r.primary_hop_limit = 64;
	r.primary_ack_timeout = (uint8_t)(c->req.ack_timeout << 3);
	roce_cm_rdma_cm_hdr(r.private_data, p->src_port, qp->dev->addr, p->peer);
	if (p->len)
		memcpy(r.private_data + CM_RDMA_CM_HDR_LEN, p->priv, p->len);
	roce_cm_build_req(c->mad, c->tid, &r);
	c->rto = ROCE_CM_ACTIVE_RTO_NS;
	c->retries_left = ROCE_CM_REQ_RETRIES;
	c->deadline = clock_now_ns() + c->rto;
	roce_cm_set_state(c, ROCE_CM_REQ_SENT);
	if (roce_cm_send(rn, c->peer, c->mad) == 0)
		cm->st.req_tx++;
	*out = c;
	return 0;
}

/* Active side: the REP to our REQ. The QP to RTR and RTS with what it says, then the RTU. */
static void roce_cm_rep_rx(struct roce_cm_conn *c, const uint8_t *mad, uint64_t now)
{
	struct roce_cm *cm = &c->rn->cm;
	struct roce_cm_rep rep;
	struct roce_qp_attr a;
	uint8_t rtu[ROCE_MAD_LEN];

	roce_cm_parse_rep(mad, &rep);
	cm->st.rep_rx++;
	c->remote_id = rep.local_comm_id;
	c->req.local_qpn = rep.local_qpn;  /* the peer's QP: what our DREQ names */
	memset(&a, 0, sizeof(a));
	a.qp_state = ROCE_QPS_RTR;
	roce_gid_from_ipv4(c->peer, &a.ah_attr.dgid);
	a.ah_attr.hop_limit = 64;
	a.path_mtu = (enum roce_mtu)c->req.path_mtu;
	a.dest_qp_num = rep.local_qpn;
	a.rq_psn = c->rq_psn;
	/* the peer's Initiator Depth is how many READs/atomics it sends us at once */
	a.max_dest_rd_atomic = rep.initiator_depth < c->req.responder_resources ? rep.initiator_depth
									      : c->req.responder_resources;
	a.min_rnr_timer = ROCE_CM_MIN_RNR_TIMER;
	if (roce_modify_qp(c->qp, &a, ROCE_QP_STATE | ROCE_QP_AV | ROCE_QP_PATH_MTU | ROCE_QP_DEST_QPN | ROCE_QP_RQ_PSN |
					    ROCE_QP_MAX_DEST_RD_ATOMIC | ROCE_QP_MIN_RNR_TIMER))
		goto refuse;
	a.qp_state = ROCE_QPS_RTS;
	a.sq_psn = rep.starting_psn;
	a.timeout = c->req.ack_timeout;
	a.retry_cnt = c->req.retry_cnt;
	a.rnr_retry = rep.rnr_retry;
	a.max_rd_atomic = rep.responder_resources < c->req.initiator_depth ? rep.responder_resources
									   : c->req.initiator_depth;
	if (roce_modify_qp(c->qp, &a, ROCE_QP_STATE | ROCE_QP_SQ_PSN | ROCE_QP_TIMEOUT | ROCE_QP_RETRY_CNT |
					    ROCE_QP_RNR_RETRY | ROCE_QP_MAX_QP_RD_ATOMIC))
		goto refuse;
	roce_cm_build_ids(c->mad, CM_ATTR_RTU, c->tid, c->local_id, c->remote_id);
	if (roce_cm_send(c->rn, c->peer, c->mad) == 0)
		cm->st.rtu_tx++;
	c->rto = roce_cm_rto((uint8_t)(ROCE_CM_ACTIVE_TIMEOUT + 1));  /* the DREQ's */
	roce_cm_established(c);
	return;
refuse:
	roce_cm_build_rej_ids(rtu, c->tid, c->local_id, c->remote_id, CM_REJ_MSG_REP, CM_REJ_UNSUPPORTED);
	if (roce_cm_send(c->rn, c->peer, rtu) == 0)
		cm->st.rej_tx++;
	c->rej_reason = CM_REJ_UNSUPPORTED;
	log_info("cm %#x: the REP's attributes do not fit our QP, REJ sent", c->local_id);
	roce_cm_closed(c, now);
}

void roce_cm_rx(struct roce_net *rn, uint32_t peer, const uint8_t *mad, const struct roce_mad *m)
{
	struct roce_cm *cm = &rn->cm;
	uint64_t now = clock_now_ns();
	struct roce_cm_conn *c;

	if (m->method != MAD_METHOD_SEND) {
		cm->st.unknown++;
		return;
	}
	if (m->attr_id == CM_ATTR_REQ) {
		roce_cm_req_rx(rn, peer, mad, m);
		return;
	}
	/* the others name our Communication ID as their Remote one */
	c = roce_cm_by_local(rn, peer, m->remote_comm_id);
	switch (m->attr_id) {
	case CM_ATTR_RTU:
		if (c && c->state == ROCE_CM_REP_SENT) {
			cm->st.rtu++;
			roce_cm_established(c);
			return;
		}
		break;
	case CM_ATTR_REP:
		if (c && c->active && c->state == ROCE_CM_REQ_SENT) {
			roce_cm_rep_rx(c, mad, now);
			return;
		}
		if (c && c->active && c->state == ROCE_CM_ESTABLISHED) {
			/* 12.9.5: our RTU was lost, the peer sends its REP again */
			cm->st.dup_rep++;
			if (roce_cm_send(rn, peer, c->mad) == 0)
				cm->st.rtu_tx++;
			return;
		}
		break;
	case CM_ATTR_MRA:
		if (c && c->active && c->state == ROCE_CM_REQ_SENT) {
			/* the passive side needs longer for our REQ (12.6.6): its service timeout on top */
			cm->st.mra++;
			c->deadline = now + roce_cm_rto(mad[ROCE_MAD_HDR_LEN + 9] >> 3) + c->rto;
			return;
		}
		if (c && c->state == ROCE_CM_REP_SENT) {
			/* the active side needs longer: wait its service timeout (12.6.6) */
			cm->st.mra++;
			c->deadline = now + roce_cm_rto(mad[ROCE_MAD_HDR_LEN + 9] >> 3) + c->rto;
			return;
		}
		break;
	case CM_ATTR_REJ:
		if (c && c->state != ROCE_CM_TIMEWAIT) {
			cm->st.rej_rx++;
			c->rej_reason = m->rej_reason;
			log_info("cm %#x: REJ reason %u", c->local_id, m->rej_reason);
			roce_cm_closed(c, now);
			return;
		}
		break;
	case CM_ATTR_DREQ: {
		uint8_t drep[ROCE_MAD_LEN];
		/* 12.9.6: a DREQ is always answered, also for a connection gone or unknown */
		cm->st.dreq_rx++;
		roce_cm_build_ids(drep, CM_ATTR_DREP, m->tid, m->remote_comm_id, m->local_comm_id);
		if (roce_cm_send(rn, peer, drep) == 0)
			cm->st.drep_tx++;
		if (c && c->state != ROCE_CM_TIMEWAIT)
			roce_cm_closed(c, now);
		return;
	}
	case CM_ATTR_DREP:
		if (c && c->state == ROCE_CM_DREQ_SENT) {
			cm->st.drep_rx++;
			roce_cm_closed(c, now);
			return;
		}
		break;
	default:
		break;
	}
	cm->st.unknown++;
}

/* The retransmission timer of c's last message (REP, REQ or DREQ) expired: send it again
 * (counted in *sent) and return true, or false when its retries are spent (counted as a
 * timeout: the caller ends the connection). */
static bool roce_cm_resend(struct roce_cm_conn *c, uint64_t now, uint64_t *sent)
{
	if (c->retries_left) {
		c->retries_left--;
		c->deadline = now + c->rto;
		if (roce_cm_send(c->rn, c->peer, c->mad) == 0)
			(*sent)++;
		return true;
	}
	c->rn->cm.st.timeouts++;
	return false;
}

int roce_cm_poll(struct roce_net *rn, uint64_t now)
{
	struct roce_cm *cm = &rn->cm;
	int events = 0;

	for (unsigned i = 0; i < ROCE_CM_MAX_CONN; i++) {
		struct roce_cm_conn *c = &cm->conns[i];
		switch (c->state) {
		case ROCE_CM_REP_SENT:
			/* 12.9.7: the first request on the QP means the RTU was lost */
			if (c->qp && roce_psn_diff(c->qp->resp.epsn, c->rq_psn) != 0) {
				roce_cm_established(c);
				events++;
				break;
			}
			if (now < c->deadline)
				break;
			events++;
			if (roce_cm_resend(c, now, &cm->st.rep_retx))
				break;
			{
				uint8_t rej[ROCE_MAD_LEN];
				roce_cm_build_rej_ids(rej, c->tid, c->local_id, c->remote_id, CM_REJ_MSG_REP, CM_REJ_TIMEOUT);
				if (roce_cm_send(rn, c->peer, rej) == 0)
					cm->st.rej_tx++;
			}
			log_info("cm %#x: no RTU after %u REPs, REJ timeout", c->local_id, c->req.max_cm_retries + 1);
			roce_cm_closed(c, now);
			break;
		case ROCE_CM_REQ_SENT:
			if (now < c->deadline)
				break;
			events++;
			if (roce_cm_resend(c, now, &cm->st.req_retx))
				break;
			c->rej_reason = CM_REJ_TIMEOUT;
			log_info("cm %#x: no REP after %u REQs", c->local_id, ROCE_CM_REQ_RETRIES + 1);
			roce_cm_closed(c, now);
			break;
		case ROCE_CM_DREQ_SENT:
			if (now < c->deadline)
				break;
			events++;
			if (roce_cm_resend(c, now, &cm->st.dreq_tx))
				break;
			roce_cm_closed(c, now);
			break;
		case ROCE_CM_TIMEWAIT:
			if (now >= c->deadline) {
				c->state = ROCE_CM_FREE;
				events++;
			}
			break;
		default:
			break;
		}
	}
	return events;
}
