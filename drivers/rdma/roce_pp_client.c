/*
 * roce_pp_client.c - the ibv_rc_pingpong client (see roce_pp_client.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "../../lib/clock.h"
#include "../../lib/log.h"
#include "../../net/tcp/tcp.h"
#include "roce_internal.h"
#include "roce_net.h"
#include "roce_pp_client.h"
#include "roce_rc.h"

LOG_MODULE_USE(rdma);

#define PPC_IOVA 0x40000ull
enum { PPC_WR_RECV = 1, PPC_WR_SEND = 2 };  /* the example's wr_ids */

static const char *const roce_ppc_state_names[] = {
	[ROCE_PPC_IDLE] = "idle", [ROCE_PPC_CONNECTING] = "connecting", [ROCE_PPC_EXCHANGE] = "exchange",
	[ROCE_PPC_RUNNING] = "running",
};

const char *roce_ppc_state_name(enum roce_ppc_state s)
{
	return (unsigned)s < sizeof(roce_ppc_state_names) / sizeof(roce_ppc_state_names[0]) ? roce_ppc_state_names[s] : "?";
}

static void roce_ppc_set_state(struct roce_ppc *c, enum roce_ppc_state s)
{
	if (c->state != s)
		log_debug("pingpong client: %s -> %s", roce_ppc_state_name(c->state), roce_ppc_state_name(s));
	c->state = s;
}

/* The run ends with rc: the socket and every verbs object released. */
static void roce_ppc_finish(struct roce_ppc *c, int rc)
{
	char a[16];
	c->result = rc;
	if (rc)
		c->failures++;
	c->elapsed_ns = clock_now_ns() - c->started;
	log_info("pingpong client: %s: %u sent, %u received of %u x %u bytes in %llu us%s%s", net_format_ipv4(c->peer, a),
		 c->sent, c->received, c->count, c->size, (unsigned long long)(c->elapsed_ns / 1000), rc ? ", failed: " : "",
		 rc ? strerror(-rc) : "");
	if (c->sock)
		tcp_abort(c->sock);
	c->sock = NULL;
	roce_conn_res_free(&c->r);
	if (c->pd)
		roce_dealloc_pd(c->pd);
	c->pd = NULL;
	roce_ppc_set_state(c, ROCE_PPC_IDLE);
}

static int roce_ppc_post_recv(struct roce_ppc *c, unsigned i)
{
	struct roce_recv_wr w = { .wr_id = PPC_WR_RECV, .num_sge = 1,
				  .sg_list = { { PPC_IOVA + (uint64_t)(i + 1) * c->size, c->size, roce_mr_lkey(c->r.mr) } } };
	return roce_post_recv(c->r.qp, &w);
}

static int roce_ppc_post_send(struct roce_ppc *c)
{
	struct roce_send_wr w = { .wr_id = PPC_WR_SEND, .opcode = ROCE_WR_SEND, .send_flags = ROCE_SEND_SIGNALED,
				  .num_sge = 1, .sg_list = { { PPC_IOVA, c->size, roce_mr_lkey(c->r.mr) } } };
	c->send_out = true;
	c->recv_seen = false;
	return roce_post_send(c->r.qp, &w);
}

/* The server's address: our QP towards it (as the example's pp_connect_ctx), "done", the first SEND. */
static int roce_ppc_connect(struct roce_ppc *c, const struct roce_pp_dest *rem)
{
	struct roce_port_attr port;
	struct roce_qp_attr a;
	uint32_t ip;

	if (roce_gid_to_ipv4(&rem->gid, &ip) || ip != c->peer)
		return -EINVAL;  /* the server must name its RoCE v2 GID (-g) */
	roce_query_port(c->pd->dev, &port);
	memset(&a, 0, sizeof(a));
	a.qp_state = ROCE_QPS_RTR;
	a.ah_attr.dgid = rem->gid;
	a.ah_attr.hop_limit = 64;
	a.path_mtu = port.active_mtu < ROCE_MTU_1024 ? port.active_mtu : ROCE_MTU_1024;
	a.dest_qp_num = rem->qpn;
	a.rq_psn = rem->psn;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	if (roce_modify_qp(c->r.qp, &a, ROCE_QP_STATE | ROCE_QP_AV | ROCE_QP_PATH_MTU | ROCE_QP_DEST_QPN | ROCE_QP_RQ_PSN |
					       ROCE_QP_MAX_DEST_RD_ATOMIC | ROCE_QP_MIN_RNR_TIMER))
		return -EINVAL;
	a.qp_state = ROCE_QPS_RTS;
	a.sq_psn = c->ours.psn;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	if (roce_modify_qp(c->r.qp, &a, ROCE_QP_STATE | ROCE_QP_SQ_PSN | ROCE_QP_TIMEOUT | ROCE_QP_RETRY_CNT |
					       ROCE_QP_RNR_RETRY | ROCE_QP_MAX_QP_RD_ATOMIC))
		return -EINVAL;
	if (tcp_send_copy(c->sock, "done", 5) != 5)
		return -EIO;
	tcp_flush(c->sock);
	tcp_close(c->sock);
	c->sock = NULL;
	roce_ppc_set_state(c, ROCE_PPC_RUNNING);
	c->started = c->last = clock_now_ns();
	c->sent++;
	return roce_ppc_post_send(c) ? -EIO : 0;
}

static void roce_ppc_sock_event(struct tcp_sock *sock, void *ctx, unsigned events)
{
	struct roce_ppc *c = ctx;
	char msg[ROCE_PP_MSG_LEN];
	struct roce_pp_dest rem;
	int rc;

	if (events & TCP_EV_CLOSED) {
		c->sock = NULL;  /* the stack frees it */
		if (c->state == ROCE_PPC_CONNECTING || c->state == ROCE_PPC_EXCHANGE)
			roce_ppc_finish(c, tcp_error(sock) ? tcp_error(sock) : -ECONNRESET);
		return;
	}
	if ((events & TCP_EV_CONNECTED) && c->state == ROCE_PPC_CONNECTING) {
		roce_pp_format(&c->ours, msg);
		if (tcp_send_copy(sock, msg, sizeof(msg)) != (long)sizeof(msg)) {
			roce_ppc_finish(c, -EIO);
			return;
		}
		tcp_flush(sock);
		roce_ppc_set_state(c, ROCE_PPC_EXCHANGE);
		c->last = clock_now_ns();
	}
	if (!(events & TCP_EV_RECV) || c->state != ROCE_PPC_EXCHANGE)
		return;
	if (tcp_recv_avail(sock) < sizeof(msg)) {
		if (tcp_recv_eof(sock))
			roce_ppc_finish(c, -ECONNRESET);
		return;
	}
	tcp_recv_copy(sock, msg, sizeof(msg));
	if ((rc = roce_pp_parse(msg, sizeof(msg), &rem)) || (rc = roce_ppc_connect(c, &rem)))
		roce_ppc_finish(c, rc);
}

static const struct tcp_ops roce_ppc_sock_ops = { .event = roce_ppc_sock_event };

int roce_ppc_start(struct roce_ppc *c, struct roce_net *rn, uint32_t peer, unsigned count, uint32_t size)
{
	struct roce_qp_init_attr init = { .qp_type = ROCE_QPT_RC,
					  .cap = { .max_send_wr = 2, .max_recv_wr = ROCE_PPC_RECVS, .max_send_sge = 1,
						   .max_recv_sge = 1 } };
	struct roce_qp_attr a = { .qp_state = ROCE_QPS_INIT, .port_num = 1, .qp_access_flags = ROCE_ACCESS_LOCAL_WRITE };
	uint64_t runs = c->runs, failures = c->failures;
	uint64_t len = (uint64_t)(ROCE_PPC_RECVS + 1) * size;
	int rc;

	if (c->state != ROCE_PPC_IDLE)
		return -EBUSY;
	if (!size || size > ROCE_PP_MAX_SIZE || !count || count > ROCE_PPC_MAX_COUNT || !peer)
		return -EINVAL;
	memset(c, 0, sizeof(*c));
	c->runs = runs + 1;
	c->failures = failures;
	c->rn = rn;
	c->peer = peer;
	c->count = count;
	c->size = size;
	c->started = c->last = clock_now_ns();
	if ((rc = roce_alloc_pd(rn->dev, &c->pd)))
		goto fail;
	rc = -ENOMEM;
	if (!(c->r.mem = calloc(1, len)) || roce_create_cq(rn->dev, 2 * ROCE_PPC_RECVS + 4, NULL, NULL, &c->r.cq))
		goto fail;
	init.send_cq = init.recv_cq = c->r.cq;
	if ((rc = roce_create_qp(c->pd, &init, &c->r.qp)) ||
	    (rc = roce_reg_mr(c->pd, PPC_IOVA, len, dma_addr_host(c->r.mem), ROCE_ACCESS_LOCAL_WRITE, &c->r.mr)) ||
	    (rc = roce_modify_qp(c->r.qp, &a, ROCE_QP_STATE | ROCE_QP_PKEY_INDEX | ROCE_QP_PORT | ROCE_QP_ACCESS_FLAGS)))
		goto fail;
	for (unsigned i = 0; i < ROCE_PPC_RECVS; i++)
		if ((rc = roce_ppc_post_recv(c, i)))
			goto fail;
	c->ours.qpn = roce_qp_num(c->r.qp);
	c->ours.psn = (uint32_t)(clock_now_ns() >> 10 ^ c->ours.qpn * 2654435761u) & ROCE_PSN_MASK;
	roce_query_gid(rn->dev, 0, &c->ours.gid);
	roce_ppc_set_state(c, ROCE_PPC_CONNECTING);
	if ((rc = tcp_connect(peer, ROCE_PP_PORT, &roce_ppc_sock_ops, c, &c->sock))) {
		c->sock = NULL;
		goto fail;
	}
	return 0;
fail:
	roce_ppc_finish(c, rc);
	return rc;
}

int roce_ppc_poll(struct roce_ppc *c, uint64_t now)
{
	struct roce_wc wc[8];
	int n, work = 0;

	if (c->state == ROCE_PPC_IDLE)
		return 0;
	if (c->state == ROCE_PPC_RUNNING) {
		n = roce_poll_cq(c->r.cq, 8, wc);
		if (n < 0) {
			roce_ppc_finish(c, -EIO);
			return 1;
		}
		for (int k = 0; k < n; k++) {
			work++;
			c->last = now;
			if (wc[k].status != ROCE_WC_SUCCESS) {
				roce_ppc_finish(c, -EIO);
				return work;
			}
			if (wc[k].wr_id == PPC_WR_SEND) {
				c->send_out = false;
			} else {
				c->received++;
				c->recv_seen = true;
				if (wc[k].byte_len != c->size || roce_ppc_post_recv(c, c->received % ROCE_PPC_RECVS)) {
					roce_ppc_finish(c, -EBADMSG);
					return work;
				}
			}
			/* the example's rule: the next SEND once the last one completed and an answer came */
			if (c->sent < c->count && !c->send_out && c->recv_seen) {
				c->sent++;
				if (roce_ppc_post_send(c)) {
					roce_ppc_finish(c, -EIO);
					return work;
				}
			}
		}
		if (c->sent == c->count && c->received == c->count && !c->send_out) {
			roce_ppc_finish(c, 0);
			return work;
		}
	}
	if (now > c->last && now - c->last > ROCE_PPC_IDLE_NS)
		roce_ppc_finish(c, -ETIMEDOUT);
	return work;
}

void roce_ppc_stop(struct roce_ppc *c)
{
	if (c->state != ROCE_PPC_IDLE)
		roce_ppc_finish(c, -ECANCELED);
}
