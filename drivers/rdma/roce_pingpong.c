/*
 * roce_pingpong.c - the ibv_rc_pingpong server (see roce_pingpong.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../../lib/clock.h"
#include "../../lib/log.h"
#include "../../net/tcp/tcp.h"
#include "roce_app.h"
#include "roce_internal.h"
#include "roce_net.h"
#include "roce_pingpong.h"

LOG_MODULE_USE(rdma);

#define PP_IOVA 0x20000ull
#define PP_SEND_WRID 1000u
#define PP_MEM_LEN ((ROCE_PP_RECVS + 1) * ROCE_PP_MAX_SIZE)

static void roce_pp_free(struct roce_pp_session *s)
{
	if (s->sock)
		tcp_abort(s->sock);
	roce_conn_res_free(&s->r);
	memset(s, 0, sizeof(*s));
}

static int roce_pp_post_recv(struct roce_pp_session *s, unsigned i)
{
	struct roce_recv_wr w = { .wr_id = i, .num_sge = 1,
				  .sg_list = { { PP_IOVA + (uint64_t)i * ROCE_PP_MAX_SIZE, ROCE_PP_MAX_SIZE, roce_mr_lkey(s->r.mr) } } };
	return roce_post_recv(s->r.qp, &w);
}

/* The client's address arrived: our QP towards it, and our answer. */
static int roce_pp_connect(struct roce_pp_session *s, const struct roce_pp_dest *rem)
{
	struct roce_pp *pp = s->pp;
	struct roce_qp_init_attr init = { .qp_type = ROCE_QPT_RC,
					  .cap = { .max_send_wr = ROCE_PP_RECVS + 1, .max_recv_wr = ROCE_PP_RECVS,
						   .max_send_sge = 1, .max_recv_sge = 1 } };
	struct roce_qp_attr a = { .qp_state = ROCE_QPS_INIT, .port_num = 1, .qp_access_flags = ROCE_ACCESS_LOCAL_WRITE };
	struct roce_port_attr port;
	struct roce_pp_dest ours;
	char msg[ROCE_PP_MSG_LEN];
	uint32_t ip;

	if (roce_gid_to_ipv4(&rem->gid, &ip))
		return -EINVAL;  /* the client must name its RoCE v2 GID (-g) */
	if (!(s->r.mem = calloc(1, PP_MEM_LEN)) || roce_create_cq(pp->pd->dev, 2 * ROCE_PP_RECVS + 2, NULL, NULL, &s->r.cq))
		return -ENOMEM;
	init.send_cq = init.recv_cq = s->r.cq;
	if (roce_create_qp(pp->pd, &init, &s->r.qp) ||
	    roce_reg_mr(pp->pd, PP_IOVA, PP_MEM_LEN, dma_addr_host(s->r.mem), ROCE_ACCESS_LOCAL_WRITE, &s->r.mr) ||
	    roce_modify_qp(s->r.qp, &a, ROCE_QP_STATE | ROCE_QP_PKEY_INDEX | ROCE_QP_PORT | ROCE_QP_ACCESS_FLAGS))
		return -ENOMEM;
	for (unsigned i = 0; i < ROCE_PP_RECVS; i++)
		if (roce_pp_post_recv(s, i))
			return -ENOMEM;
	roce_query_port(pp->pd->dev, &port);
	memset(&a, 0, sizeof(a));
	a.qp_state = ROCE_QPS_RTR;
	a.ah_attr.dgid = rem->gid;
	a.ah_attr.hop_limit = 64;
	a.path_mtu = port.active_mtu < ROCE_MTU_1024 ? port.active_mtu : ROCE_MTU_1024;  /* the example's default */
	a.dest_qp_num = rem->qpn;
	a.rq_psn = rem->psn;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	if (roce_modify_qp(s->r.qp, &a, ROCE_QP_STATE | ROCE_QP_AV | ROCE_QP_PATH_MTU | ROCE_QP_DEST_QPN | ROCE_QP_RQ_PSN |
					     ROCE_QP_MAX_DEST_RD_ATOMIC | ROCE_QP_MIN_RNR_TIMER))
		return -EINVAL;
	memset(&ours, 0, sizeof(ours));
	ours.qpn = roce_qp_num(s->r.qp);
	ours.psn = (uint32_t)(clock_now_ns() >> 10) & ROCE_PSN_MASK;
	roce_query_gid(pp->pd->dev, 0, &ours.gid);
	a.qp_state = ROCE_QPS_RTS;
	a.sq_psn = ours.psn;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	if (roce_modify_qp(s->r.qp, &a, ROCE_QP_STATE | ROCE_QP_SQ_PSN | ROCE_QP_TIMEOUT | ROCE_QP_RETRY_CNT |
					     ROCE_QP_RNR_RETRY | ROCE_QP_MAX_QP_RD_ATOMIC))
		return -EINVAL;
	roce_pp_format(&ours, msg);
	if (tcp_send_copy(s->sock, msg, sizeof(msg)) != (long)sizeof(msg))
		return -EIO;
	tcp_flush(s->sock);
	s->state = ROCE_PP_RUNNING;
	s->last = clock_now_ns();
	pp->sessions++;
	return 0;
}

static void roce_pp_sock_event(struct tcp_sock *sock, void *ctx, unsigned events)
{
	struct roce_pp_session *s = ctx;
	char msg[ROCE_PP_MSG_LEN];
	struct roce_pp_dest rem;

	if (events & TCP_EV_CLOSED) {
		s->sock = NULL;  /* the stack frees it */
		if (s->state == ROCE_PP_EXCHANGE)
			roce_pp_free(s);
		return;
	}
	if (!(events & TCP_EV_RECV))
		return;
	if (s->state == ROCE_PP_EXCHANGE) {
		struct roce_pp *pp = s->pp;
		if (pp->other && !tcp_peek(sock, 0, msg, 5) && msg[4] != ':') {
			/* not "LLLL:": perftest's version message (the same port by default) */
			s->sock = NULL;
			roce_pp_free(s);
			pp->handed_over++;
			if (pp->other(sock, pp->other_ctx))
				tcp_close(sock);
			return;
		}
		if (tcp_recv_avail(sock) < sizeof(msg)) {
			if (tcp_recv_eof(sock))
				roce_pp_free(s);
			return;
		}
		tcp_recv_copy(sock, msg, sizeof(msg));
		if (roce_pp_parse(msg, sizeof(msg), &rem) || roce_pp_connect(s, &rem)) {
			log_info("pingpong: bad exchange from the client, closing");
			s->pp->errors++;
			roce_pp_free(s);
		}
		return;
	}
	/* "done" (or the client's close): the exchange is over */
	while (tcp_recv_copy(sock, msg, sizeof(msg)) > 0)
		;
	tcp_close(sock);
	s->sock = NULL;
}

static const struct tcp_ops roce_pp_sock_ops = { .event = roce_pp_sock_event };

static void roce_pp_listen_event(struct tcp_sock *l, void *ctx, unsigned events)
{
	struct roce_pp *pp = ctx;
	struct tcp_sock *c;

	if (!(events & TCP_EV_ACCEPT))
		return;
	while ((c = tcp_accept(l))) {
		struct roce_pp_session *s = NULL;
		for (unsigned i = 0; i < ROCE_PP_MAX && !s; i++)
			if (pp->s[i].state == ROCE_PP_FREE)
				s = &pp->s[i];
		if (!s) {
			tcp_close(c);
			continue;
		}
		memset(s, 0, sizeof(*s));
		s->pp = pp;
		s->sock = c;
		s->state = ROCE_PP_EXCHANGE;
		s->last = clock_now_ns();
		tcp_set_ops(c, &roce_pp_sock_ops, s);
	}
}

static const struct tcp_ops roce_pp_listen_ops = { .event = roce_pp_listen_event };

int roce_pp_start(struct roce_pp *pp, struct roce_net *rn)
{
	int rc;
	memset(pp, 0, sizeof(*pp));
	pp->rn = rn;
	if ((rc = roce_alloc_pd(rn->dev, &pp->pd)))
		return rc;
	if ((rc = tcp_listen(ROCE_PP_PORT, ROCE_PP_MAX, &roce_pp_listen_ops, pp, &pp->listener))) {
		roce_dealloc_pd(pp->pd);
		pp->pd = NULL;
	}
	return rc;
}

void roce_pp_set_other(struct roce_pp *pp, roce_pp_other_fn fn, void *ctx)
{
	pp->other = fn;
	pp->other_ctx = ctx;
}

void roce_pp_stop(struct roce_pp *pp)
{
	if (!pp->pd)
		return;
	tcp_close(pp->listener);
	for (unsigned i = 0; i < ROCE_PP_MAX; i++)
		if (pp->s[i].state != ROCE_PP_FREE)
			roce_pp_free(&pp->s[i]);
	roce_dealloc_pd(pp->pd);
	pp->pd = NULL;
}

int roce_pp_poll(struct roce_pp *pp, uint64_t now)
{
	int work = 0;

	for (unsigned i = 0; i < ROCE_PP_MAX; i++) {
		struct roce_pp_session *s = &pp->s[i];
		struct roce_wc wc[8];
		int n;

		if (s->state == ROCE_PP_EXCHANGE && now - s->last > ROCE_PP_IDLE_NS) {
			roce_pp_free(s);
			continue;
		}
		if (s->state != ROCE_PP_RUNNING)
			continue;
		n = roce_poll_cq(s->r.cq, 8, wc);
		for (int k = 0; k < n; k++) {
			s->last = now;
			work++;
			if (wc[k].status != ROCE_WC_SUCCESS) {
				/* the client is gone (its QP destroyed: our SEND ran out of retries) */
				if (wc[k].status != ROCE_WC_WR_FLUSH_ERR)
					log_info("pingpong: session ends after %llu messages (status %d)",
						 (unsigned long long)s->msgs, wc[k].status);
				n = -1;
				break;
			}
			if (wc[k].opcode != ROCE_WC_RECV)
				continue;
			/* answer with a message of the same length, and keep the receive posted */
			struct roce_send_wr w = { .wr_id = PP_SEND_WRID, .opcode = ROCE_WR_SEND,
						  .send_flags = ROCE_SEND_SIGNALED, .num_sge = 1,
						  .sg_list = { { PP_IOVA + (uint64_t)ROCE_PP_RECVS * ROCE_PP_MAX_SIZE,
								 wc[k].byte_len, roce_mr_lkey(s->r.mr) } } };
			s->msgs++;
			pp->msgs++;
			if (roce_pp_post_recv(s, (unsigned)wc[k].wr_id) || roce_post_send(s->r.qp, &w)) {
				n = -1;
				break;
			}
		}
		if (n < 0 || now - s->last > ROCE_PP_IDLE_NS)
			roce_pp_free(s);
	}
	return work;
}
