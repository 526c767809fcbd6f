/*
 * roce_perftest.c - the perftest bandwidth server (see roce_perftest.h): sessions, their
 * out-of-band channel (TCP or an rdma_cm connected QP), their data QP.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "../../lib/clock.h"
#include "../../lib/log.h"
#include "../../net/tcp/tcp.h"
#include "roce_internal.h"
#include "roce_net.h"
#include "roce_perftest.h"
#include "roce_rc.h"

LOG_MODULE_USE(rdma);

#define PT_IOVA 0x100000ull          /* the data buffer's iova (what the client writes to) */
#define PT_CTL_IOVA 0x10000ull       /* the channel buffers: receive, then send */
#define PT_CTL_LEN (2 * ROCE_PT_MSG_MAX)
#define PT_MIN_RNR_TIMER 12          /* 0.64 ms, as perftest's own server asks */

enum { PT_WR_DATA_RECV = 1, PT_WR_CTL_RECV, PT_WR_CTL_SEND };

static const char *const roce_pt_state_names[] = {
	[ROCE_PT_FREE] = "free", [ROCE_PT_CONNECTING] = "connecting", [ROCE_PT_EXCHANGE] = "exchange",
	[ROCE_PT_WAIT_DATA_CONN] = "wait-data-conn", [ROCE_PT_RUNNING] = "running",
};

const char *roce_pt_state_name(enum roce_pt_state s)
{
	return (unsigned)s < sizeof(roce_pt_state_names) / sizeof(roce_pt_state_names[0]) ? roce_pt_state_names[s] : "?";
}

static void roce_pt_set_state(struct roce_pt_session *s, enum roce_pt_state st)
{
	if (s->state != st)
		log_debug("perftest %u: %s -> %s", (unsigned)(s - s->pt->s), roce_pt_state_name(s->state),
			  roce_pt_state_name(st));
	s->state = st;
}

static void roce_pt_qp_destroy(struct roce_pt_session *s, struct roce_qp **qp)
{
	struct roce_qp_attr e = { .qp_state = ROCE_QPS_ERR };
	struct roce_wc wc[16];
	if (!*qp)
		return;
	roce_modify_qp(*qp, &e, ROCE_QP_STATE);
	while (roce_poll_cq(s->cq, 16, wc) > 0)
		;
	roce_destroy_qp(*qp);
	*qp = NULL;
}

/* End session s: its connections let go (graceful says whether the TCP channel closes or is
 * reset), its data QP's counters kept, everything released. */
static void roce_pt_free(struct roce_pt_session *s, bool graceful)
{
	struct roce_pt *pt = s->pt;

	if (s->sock) {
		if (graceful)
			tcp_close(s->sock);
		else
			tcp_abort(s->sock);
	}
	if (s->data_conn) {
		if (!graceful)
			roce_cm_disconnect(s->data_conn);
		roce_cm_detach(s->data_conn);
	}
	if (s->ctl_conn) {
		if (!graceful)
			roce_cm_disconnect(s->ctl_conn);
		roce_cm_detach(s->ctl_conn);
	}
	if (s->qp) {
		pt->st.reads += s->qp->resp.reads;
		pt->st.atomics += s->qp->resp.atomics;
		pt->st.messages += s->qp->resp.msn;
	}
	if (s->cq) {
		roce_pt_qp_destroy(s, &s->qp);
		roce_pt_qp_destroy(s, &s->ctl_qp);
	}
	if (s->mr)
		roce_dereg_mr(s->mr);
	if (s->ctl_mr)
		roce_dereg_mr(s->ctl_mr);
	if (s->cq)
		roce_destroy_cq(s->cq);
	free(s->mem);
	memset(s, 0, sizeof(*s));
	s->pt = pt;
}

static void roce_pt_fail(struct roce_pt_session *s, const char *why)
{
	log_info("perftest: session from %u.%u.%u.%u ends: %s", s->peer >> 24, s->peer >> 16 & 0xff,
		 s->peer >> 8 & 0xff, s->peer & 0xff, why);
	s->pt->st.errors++;
	roce_pt_free(s, false);
}

/* A free session for a client at peer, within the bounds (total, per peer); NULL when none. */
static struct roce_pt_session *roce_pt_slot(struct roce_pt *pt, uint32_t peer)
{
	struct roce_pt_session *free_slot = NULL;
	unsigned mine = 0;
	for (unsigned i = 0; i < ROCE_PT_MAX; i++) {
		if (pt->s[i].state == ROCE_PT_FREE) {
			if (!free_slot)
				free_slot = &pt->s[i];
		} else if (pt->s[i].peer == peer) {
			mine++;
		}
	}
	if (!free_slot || mine >= ROCE_PT_MAX_PER_PEER) {
		pt->st.refused++;
		return NULL;
	}
	memset(free_slot, 0, sizeof(*free_slot));
	free_slot->pt = pt;
	free_slot->peer = peer;
	return free_slot;
}

/* The session's memory, CQ and MRs, and what we announce. 0 or -ENOMEM. */
static int roce_pt_res_alloc(struct roce_pt_session *s, enum roce_pt_wire wire)
{
	struct roce_pt *pt = s->pt;
	struct roce_port_attr port;

	roce_pt_xchg_init(&s->x, wire);
	if (!(s->mem = calloc(1, ROCE_PT_BUF_SIZE + PT_CTL_LEN)))
		return -ENOMEM;
	if (roce_create_cq(pt->pd->dev, ROCE_PT_RECVS + 16, NULL, NULL, &s->cq) ||
	    roce_reg_mr(pt->pd, PT_IOVA, ROCE_PT_BUF_SIZE, dma_addr_host(s->mem), ROCE_ACCESS_ALL, &s->mr) ||
	    roce_reg_mr(pt->pd, PT_CTL_IOVA, PT_CTL_LEN, dma_addr_host(s->mem + ROCE_PT_BUF_SIZE), ROCE_ACCESS_LOCAL_WRITE,
			&s->ctl_mr))
		return -ENOMEM;
	roce_query_port(pt->pd->dev, &port);
	s->ours.mtu = port.active_mtu;
	s->ours.dest.out_reads = ROCE_PT_OUT_READS;
	s->ours.dest.rkey = roce_mr_rkey(s->mr);
	s->ours.dest.vaddr = PT_IOVA;
	roce_query_gid(pt->pd->dev, 0, &s->ours.dest.gid);
	s->last = clock_now_ns();
	return 0;
}

/* An RC QP in INIT on the session's CQ, open to remote access. */
static int roce_pt_qp_create(struct roce_pt_session *s, unsigned send_wr, unsigned recv_wr, struct roce_qp **out)
{
	struct roce_qp_init_attr init = { .qp_type = ROCE_QPT_RC, .send_cq = s->cq, .recv_cq = s->cq,
					  .cap = { .max_send_wr = send_wr, .max_recv_wr = recv_wr, .max_send_sge = 1,
						   .max_recv_sge = 1 } };
	struct roce_qp_attr a = { .qp_state = ROCE_QPS_INIT, .port_num = 1, .qp_access_flags = ROCE_ACCESS_ALL };
	int rc;
	if ((rc = roce_create_qp(s->pt->pd, &init, out)))
		return rc;
	if ((rc = roce_modify_qp(*out, &a, ROCE_QP_STATE | ROCE_QP_PKEY_INDEX | ROCE_QP_PORT | ROCE_QP_ACCESS_FLAGS))) {
		roce_destroy_qp(*out);
		*out = NULL;
	}
	return rc;
}

static int roce_pt_post_data_recv(struct roce_pt_session *s)
{
	/* every receive on the one buffer: the bytes are the client's to measure, not to keep */
	struct roce_recv_wr w = { .wr_id = PT_WR_DATA_RECV, .num_sge = 1,
				  .sg_list = { { PT_IOVA, ROCE_PT_BUF_SIZE, roce_mr_lkey(s->mr) } } };
	return roce_post_recv(s->qp, &w);
}

static int roce_pt_post_ctl_recv(struct roce_pt_session *s)
{
	struct roce_recv_wr w = { .wr_id = PT_WR_CTL_RECV, .num_sge = 1,
				  .sg_list = { { PT_CTL_IOVA, ROCE_PT_MSG_MAX, roce_mr_lkey(s->ctl_mr) } } };
	return roce_post_recv(s->ctl_qp, &w);
}

/* The data QP in INIT with its receives posted. */
static int roce_pt_data_qp(struct roce_pt_session *s)
{
	int rc;
	if ((rc = roce_pt_qp_create(s, 4, ROCE_PT_RECVS, &s->qp)))
		return rc;
	for (unsigned i = 0; i < ROCE_PT_RECVS; i++)
		if ((rc = roce_pt_post_data_recv(s)))
			return rc;
	return 0;
}

/* The client's keys name its QP: ours towards it (RTR, RTS), as perftest's ctx_connect does. */
static int roce_pt_connect_keys(struct roce_pt_session *s, const struct roce_pt_dest *rem)
{
	struct roce_qp_attr a;
	uint32_t ip;
	int rc;

	if (roce_gid_to_ipv4(&rem->gid, &ip) || ip != s->peer)
		return -EINVAL;  /* a RoCE v2 IPv4 GID, the channel's own peer */
	if ((rc = roce_pt_data_qp(s)))
		return rc;
	memset(&a, 0, sizeof(a));
	a.qp_state = ROCE_QPS_RTR;
	a.ah_attr.dgid = rem->gid;
	a.ah_attr.hop_limit = 64;
	a.path_mtu = s->x.mtu < s->ours.mtu ? s->x.mtu : s->ours.mtu;
	a.dest_qp_num = rem->qpn;
	a.rq_psn = rem->psn;
	a.max_dest_rd_atomic = ROCE_PT_OUT_READS;  /* the client's max_rd_atomic is our out_reads */
	a.min_rnr_timer = PT_MIN_RNR_TIMER;
	if ((rc = roce_modify_qp(s->qp, &a, ROCE_QP_STATE | ROCE_QP_AV | ROCE_QP_PATH_MTU | ROCE_QP_DEST_QPN |
						    ROCE_QP_RQ_PSN | ROCE_QP_MAX_DEST_RD_ATOMIC | ROCE_QP_MIN_RNR_TIMER)))
		return rc;
	s->ours.dest.qpn = roce_qp_num(s->qp);
	s->ours.dest.psn = (uint32_t)(clock_now_ns() >> 10 ^ s->ours.dest.qpn * 2654435761u) & ROCE_PSN_MASK;
	a.qp_state = ROCE_QPS_RTS;
	a.sq_psn = s->ours.dest.psn;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = (uint8_t)(rem->out_reads < ROCE_MAX_RD_ATOMIC ? rem->out_reads : ROCE_MAX_RD_ATOMIC);
	if ((rc = roce_modify_qp(s->qp, &a, ROCE_QP_STATE | ROCE_QP_SQ_PSN | ROCE_QP_TIMEOUT | ROCE_QP_RETRY_CNT |
						    ROCE_QP_RNR_RETRY | ROCE_QP_MAX_QP_RD_ATOMIC)))
		return rc;
	s->last_epsn = s->qp->resp.epsn;
	roce_pt_set_state(s, ROCE_PT_RUNNING);
	return 0;
}

/* Send our answer on the session's channel. 0 or -EIO. */
static int roce_pt_answer(struct roce_pt_session *s)
{
	uint8_t out[ROCE_PT_MSG_MAX];
	size_t n = roce_pt_xchg_answer(&s->x, &s->ours, out, sizeof(out));

	if (!n)
		return 0;
	if (s->sock) {
		if (tcp_send_copy(s->sock, out, n) != (long)n)
			return -EIO;  /* a few bytes against an empty send queue: the reserve always takes them */
		tcp_flush(s->sock);
		return 0;
	}
	struct roce_send_wr w = { .wr_id = PT_WR_CTL_SEND, .opcode = ROCE_WR_SEND, .send_flags = ROCE_SEND_SIGNALED,
				  .num_sge = 1, .sg_list = { { PT_CTL_IOVA + ROCE_PT_MSG_MAX, (uint32_t)n,
							       roce_mr_lkey(s->ctl_mr) } } };
	memcpy(s->mem + ROCE_PT_BUF_SIZE + ROCE_PT_MSG_MAX, out, n);
	return roce_post_send(s->ctl_qp, &w) ? -EIO : 0;
}

/* One message of the client on the channel. 0, 1 when the session ended (freed). */
static int roce_pt_message(struct roce_pt_session *s, const uint8_t *msg, size_t len)
{
	struct roce_pt_dest rem;
	int rc = roce_pt_xchg_take(&s->x, msg, len, &rem);

	s->last = clock_now_ns();
	if (rc < 0) {
		roce_pt_fail(s, "not a perftest message, or one we refuse (version, cycle buffer, MTU)");
		return 1;
	}
	if (rc == 2) {
		roce_pt_free(s, true);  /* "done": the test is over */
		return 1;
	}
	if (rc == 1 && !s->qp && s->state != ROCE_PT_WAIT_DATA_CONN) {
		if (rem.qpn == 0 && s->x.wire == ROCE_PT_WIRE_CM) {
			roce_pt_set_state(s, ROCE_PT_WAIT_DATA_CONN);  /* -R: the data QP comes by rdma_cm */
		} else if (roce_pt_connect_keys(s, &rem)) {
			roce_pt_fail(s, "its keys name no QP we can connect to");
			return 1;
		}
	}
	if (roce_pt_answer(s)) {
		roce_pt_fail(s, "our answer could not be sent");
		return 1;
	}
	return 0;
}

/* The TCP channel: take every whole message queued. */
static void roce_pt_tcp_drain(struct roce_pt_session *s)
{
	uint8_t msg[ROCE_PT_MSG_MAX];

	while (s->sock) {
		size_t avail = tcp_recv_avail(s->sock), need;
		need = roce_pt_xchg_need(&s->x, avail && !tcp_peek(s->sock, 0, msg, 1) ? msg[0] : -1);
		if (!need || avail < need) {
			if (tcp_recv_eof(s->sock))
				roce_pt_fail(s, "the client closed the channel");
			return;
		}
		tcp_recv_copy(s->sock, msg, need);
		if (roce_pt_message(s, msg, need))
			return;
	}
}

static void roce_pt_sock_event(struct tcp_sock *sock, void *ctx, unsigned events)
{
	struct roce_pt_session *s = ctx;
	(void)sock;
	if (events & TCP_EV_CLOSED) {
		s->sock = NULL;  /* the stack frees it */
		roce_pt_fail(s, "the channel was reset");
		return;
	}
	if (events & TCP_EV_RECV)
		roce_pt_tcp_drain(s);
}

static const struct tcp_ops roce_pt_sock_ops = { .event = roce_pt_sock_event };

int roce_pt_adopt(struct roce_pt *pt, struct tcp_sock *sock)
{
	struct roce_pt_session *s;
	struct tcp_info ti;

	if (!pt->pd)
		return -EBUSY;
	tcp_get_info(sock, &ti);
	if (!(s = roce_pt_slot(pt, ti.raddr)))
		return -EBUSY;
	if (roce_pt_res_alloc(s, ROCE_PT_WIRE_TCP)) {
		roce_pt_free(s, false);
		pt->st.refused++;
		return -EBUSY;
	}
	s->sock = sock;
	roce_pt_set_state(s, ROCE_PT_EXCHANGE);
	pt->st.sessions++;
	pt->st.tcp++;
	tcp_set_ops(sock, &roce_pt_sock_ops, s);
	roce_pt_tcp_drain(s);  /* its first bytes are already here */
	return 0;
}

static struct roce_pt_session *roce_pt_of(struct roce_pt *pt, const struct roce_cm_conn *c)
{
	for (unsigned i = 0; i < ROCE_PT_MAX; i++)
		if (pt->s[i].state != ROCE_PT_FREE && (pt->s[i].ctl_conn == c || pt->s[i].data_conn == c))
			return &pt->s[i];
	return NULL;
}

/* A REQ on rdma_cm port 18515: the data connection of a -R session of this peer that waits
 * for one, or else a new session's channel. */
static int roce_pt_req(struct roce_cm_conn *c, const struct roce_cm_req *req, uint32_t peer, void *ctx)
{
	struct roce_pt *pt = ctx;
	struct roce_pt_session *s = NULL;
	(void)req;

	for (unsigned i = 0; i < ROCE_PT_MAX && !s; i++)
		if (pt->s[i].state == ROCE_PT_WAIT_DATA_CONN && pt->s[i].peer == peer && !pt->s[i].data_conn)
			s = &pt->s[i];
	if (s) {
		if (roce_pt_data_qp(s) || roce_cm_accept(c, s->qp, NULL, 0)) {
			roce_pt_fail(s, "its data connection could not be accepted");
			return CM_REJ_NO_RESOURCES;
		}
		s->data_conn = c;
		s->ours.dest.qpn = roce_qp_num(s->qp);
		s->last_epsn = s->qp->resp.epsn;
		pt->st.data_conns++;
		return 0;
	}
	if (!(s = roce_pt_slot(pt, peer)))
		return CM_REJ_NO_RESOURCES;
	if (roce_pt_res_alloc(s, ROCE_PT_WIRE_CM) || roce_pt_qp_create(s, 2, 2, &s->ctl_qp) || roce_pt_post_ctl_recv(s) ||
	    roce_cm_accept(c, s->ctl_qp, NULL, 0)) {
		roce_pt_free(s, true);
		pt->st.refused++;
		return CM_REJ_NO_RESOURCES;
	}
	s->ctl_conn = c;
	roce_pt_set_state(s, ROCE_PT_CONNECTING);
	pt->st.sessions++;
	pt->st.cm++;
	return 0;
}

static void roce_pt_event(struct roce_cm_conn *c, enum roce_cm_event ev, void *ctx)
{
	struct roce_pt *pt = ctx;
	struct roce_pt_session *s = roce_pt_of(pt, c);

	if (!s)
		return;
	if (ev == ROCE_CM_EV_ESTABLISHED) {
		if (c == s->ctl_conn && s->state == ROCE_PT_CONNECTING)
			roce_pt_set_state(s, ROCE_PT_EXCHANGE);
		else if (c == s->data_conn)
			roce_pt_set_state(s, ROCE_PT_RUNNING);
		return;
	}
	/* either connection going ends the session: the test is over (or its client gone) */
	if (c == s->ctl_conn)
		s->ctl_conn = NULL;
	else
		s->data_conn = NULL;
	roce_cm_detach(c);
	log_info("perftest: session from %u.%u.%u.%u ends (disconnected), %llu receives", s->peer >> 24,
		 s->peer >> 16 & 0xff, s->peer >> 8 & 0xff, s->peer & 0xff, (unsigned long long)s->recvs);
	if (s->data_conn)
		roce_cm_disconnect(s->data_conn);
	if (s->ctl_conn)
		roce_cm_disconnect(s->ctl_conn);
	roce_pt_free(s, true);
}

int roce_pt_start(struct roce_pt *pt, struct roce_net *rn)
{
	int rc;
	memset(pt, 0, sizeof(*pt));
	pt->rn = rn;
	for (unsigned i = 0; i < ROCE_PT_MAX; i++)
		pt->s[i].pt = pt;
	if ((rc = roce_alloc_pd(rn->dev, &pt->pd)))
		return rc;
	if ((rc = roce_cm_listen(rn, ROCE_CM_PS_TCP_SID(ROCE_PT_PORT), roce_pt_req, roce_pt_event, pt))) {
		roce_dealloc_pd(pt->pd);
		pt->pd = NULL;
	}
	return rc;
}

void roce_pt_stop(struct roce_pt *pt)
{
	if (!pt->pd)
		return;
	roce_cm_unlisten(pt->rn, ROCE_CM_PS_TCP_SID(ROCE_PT_PORT));
	for (unsigned i = 0; i < ROCE_PT_MAX; i++)
		if (pt->s[i].state != ROCE_PT_FREE)
			roce_pt_free(&pt->s[i], false);
	roce_dealloc_pd(pt->pd);
	pt->pd = NULL;
}

/* One completion of session s. 0, 1 when the session ended. */
static int roce_pt_completion(struct roce_pt_session *s, const struct roce_wc *wc)
{
	if (wc->status != ROCE_WC_SUCCESS) {
		roce_pt_fail(s, wc->wr_id == PT_WR_DATA_RECV ? "a receive failed (a SEND larger than our buffer?)"
							     : "a channel message failed");
		return 1;
	}
	switch (wc->wr_id) {
	case PT_WR_DATA_RECV:
		s->recvs++;
		s->recv_bytes += wc->byte_len;
		s->pt->st.recvs++;
		s->pt->st.recv_bytes += wc->byte_len;
		if (roce_pt_post_data_recv(s)) {
			roce_pt_fail(s, "its receive could not be posted again");
			return 1;
		}
		return 0;
	case PT_WR_CTL_RECV: {
		uint8_t msg[ROCE_PT_MSG_MAX];
		uint32_t n = wc->byte_len < sizeof(msg) ? wc->byte_len : (uint32_t)sizeof(msg);
		memcpy(msg, s->mem + ROCE_PT_BUF_SIZE, n);
		if (s->state == ROCE_PT_CONNECTING)
			roce_pt_set_state(s, ROCE_PT_EXCHANGE);  /* the message came before the RTU */
		if (roce_pt_post_ctl_recv(s)) {
			roce_pt_fail(s, "its channel receive could not be posted again");
			return 1;
		}
		return roce_pt_message(s, msg, n);
	}
	default:
		return 0;
	}
}

int roce_pt_poll(struct roce_pt *pt, uint64_t now)
{
	int work = 0;

	for (unsigned i = 0; i < ROCE_PT_MAX; i++) {
		struct roce_pt_session *s = &pt->s[i];
		struct roce_wc wc[16];
		int n;

		if (s->state == ROCE_PT_FREE || !s->cq)
			continue;
		n = roce_poll_cq(s->cq, 16, wc);
		if (n < 0) {
			roce_pt_fail(s, "its CQ overflowed");
			continue;
		}
		for (int k = 0; k < n; k++) {
			work++;
			s->last = now;
			if (roce_pt_completion(s, &wc[k]))
				break;
		}
		if (s->state == ROCE_PT_FREE)
			continue;
		/* WRITE, READ and atomics complete nothing here: the responder's ePSN shows progress */
		if (s->qp && s->qp->resp.epsn != s->last_epsn) {
			s->last_epsn = s->qp->resp.epsn;
			s->last = now;
		}
		if (now > s->last && now - s->last > ROCE_PT_IDLE_NS)  /* a message may have set last after now */
			roce_pt_fail(s, "idle");
	}
	return work;
}
