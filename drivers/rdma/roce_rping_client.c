/*
 * roce_rping_client.c - the rping client (see roce_rping_client.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../../lib/clock.h"
#include "../../lib/log.h"
#include "roce_internal.h"
#include "roce_net.h"
#include "roce_rping_client.h"

LOG_MODULE_USE(rdma);

#define RPC_IOVA 0x30000ull
#define RPC_RECV 0                   /* offsets in the run's memory: the server's "go" */
#define RPC_SEND 16                  /* our advertisement */
#define RPC_START 32                 /* then the start buffer, then the sink */

enum { RPC_WR_RECV = 1, RPC_WR_SEND };

static const char *const roce_rpc_state_names[] = {
	[ROCE_RPC_IDLE] = "idle", [ROCE_RPC_CONNECTING] = "connecting", [ROCE_RPC_WAIT_READ] = "wait-read",
	[ROCE_RPC_WAIT_WRITE] = "wait-write", [ROCE_RPC_CLOSING] = "closing",
};

const char *roce_rping_client_state_name(enum roce_rping_client_state s)
{
	return (unsigned)s < sizeof(roce_rpc_state_names) / sizeof(roce_rpc_state_names[0]) ? roce_rpc_state_names[s] : "?";
}

static void roce_rpc_set_state(struct roce_rping_client *c, enum roce_rping_client_state s)
{
	if (c->state != s)
		log_debug("rping client: %s -> %s", roce_rping_client_state_name(c->state), roce_rping_client_state_name(s));
	c->state = s;
}

/* Release the run's verbs objects (the connection let go first). */
static void roce_rpc_release(struct roce_rping_client *c)
{
	if (c->conn)
		roce_cm_detach(c->conn);
	c->conn = NULL;
	roce_conn_res_free(&c->r);
	if (c->pd)
		roce_dealloc_pd(c->pd);
	c->pd = NULL;
	roce_rpc_set_state(c, ROCE_RPC_IDLE);
}

/* The run ends with result rc: DREQ if connected, then everything released. */
static void roce_rpc_finish(struct roce_rping_client *c, int rc)
{
	char a[16];
	c->result = rc;
	if (rc)
		c->failures++;
	log_info("rping client: %s:%u: %u of %u rounds of %u bytes verified%s%s", net_format_ipv4(c->peer, a), c->port,
		 c->rounds, c->count, c->size, rc ? ", failed: " : "", rc ? strerror(-rc) : "");
	if (c->conn && (c->conn->state == ROCE_CM_ESTABLISHED || c->conn->state == ROCE_CM_REP_SENT))
		roce_cm_disconnect(c->conn);
	roce_rpc_release(c);
}

static int roce_rpc_post_recv(struct roce_rping_client *c)
{
	struct roce_recv_wr w = { .wr_id = RPC_WR_RECV, .num_sge = 1,
				  .sg_list = { { RPC_IOVA + RPC_RECV, sizeof(struct roce_rping_info), roce_mr_lkey(c->r.mr) } } };
	return roce_post_recv(c->r.qp, &w);
}

/* SEND the advertisement of [off, off + size) of our memory. */
static int roce_rpc_advertise(struct roce_rping_client *c, uint32_t off)
{
	struct roce_rping_info info = { .buf = be64_make(RPC_IOVA + off), .rkey = be32_make(roce_mr_rkey(c->r.mr)),
					.size = be32_make(c->size) };
	struct roce_send_wr w = { .wr_id = RPC_WR_SEND, .opcode = ROCE_WR_SEND, .send_flags = ROCE_SEND_SIGNALED,
				  .num_sge = 1, .sg_list = { { RPC_IOVA + RPC_SEND, sizeof(info), roce_mr_lkey(c->r.mr) } } };
	memcpy(c->r.mem + RPC_SEND, &info, sizeof(info));
	return roce_post_send(c->r.qp, &w);
}

/* Round n's start buffer as rping fills it: "rdma-ping-n: ", then letters A..z cycling from a
 * point that moves each round, NUL-terminated; the sink cleared. */
static void roce_rpc_fill(struct roce_rping_client *c)
{
	uint8_t *start = c->r.mem + RPC_START, *sink = start + c->size;
	int n = snprintf((char *)start, c->size, "rdma-ping-%u: ", c->rounds);
	uint8_t ch = (uint8_t)('A' + c->rounds % 58);
	for (uint32_t i = (uint32_t)n; i < c->size; i++) {
		start[i] = ch;
		ch = ch == 'z' ? 'A' : (uint8_t)(ch + 1);
	}
	start[c->size - 1] = 0;
	memset(sink, 0, c->size);
}

static void roce_rpc_event(struct roce_cm_conn *conn, enum roce_cm_event ev, void *ctx)
{
	struct roce_rping_client *c = ctx;
	if (conn != c->conn)
		return;
	if (ev == ROCE_CM_EV_ESTABLISHED) {
		c->last = clock_now_ns();
		roce_rpc_fill(c);
		if (roce_rpc_advertise(c, RPC_START)) {
			roce_rpc_finish(c, -EIO);
			return;
		}
		roce_rpc_set_state(c, ROCE_RPC_WAIT_READ);
		return;
	}
	/* the peer refused (REJ), never answered, or disconnected */
	c->rej_reason = conn->rej_reason;
	c->conn = NULL;
	roce_cm_detach(conn);
	if (c->state == ROCE_RPC_CLOSING)
		roce_rpc_release(c);
	else
		roce_rpc_finish(c, conn->rej_reason == CM_REJ_TIMEOUT ? -ETIMEDOUT
				   : conn->rej_reason ? -ECONNREFUSED : -ECONNRESET);
}

int roce_rping_client_start(struct roce_rping_client *c, struct roce_net *rn, uint32_t peer, uint16_t port,
			    unsigned count, uint32_t size)
{
	struct roce_qp_init_attr init = { .qp_type = ROCE_QPT_RC,
					  .cap = { .max_send_wr = 4, .max_recv_wr = 2, .max_send_sge = 1, .max_recv_sge = 1 } };
	struct roce_qp_attr a = { .qp_state = ROCE_QPS_INIT, .port_num = 1,
				  .qp_access_flags = ROCE_ACCESS_LOCAL_WRITE | ROCE_ACCESS_REMOTE_READ | ROCE_ACCESS_REMOTE_WRITE };
	struct roce_cm_connect_param p = { .peer = peer, .port = port, .responder_resources = 1, .initiator_depth = 1,
					   .event = roce_rpc_event, .ctx = c };
	uint64_t runs = c->runs, failures = c->failures;
	uint32_t len = RPC_START + 2 * size;
	int rc;

	if (c->state != ROCE_RPC_IDLE)
		return -EBUSY;
	if (size < ROCE_RPING_CLIENT_MIN_SIZE || size > ROCE_RPING_MAX_SIZE || !count ||
	    count > ROCE_RPING_CLIENT_MAX_COUNT || !peer || !port)
		return -EINVAL;
	memset(c, 0, sizeof(*c));
	c->runs = runs + 1;
	c->failures = failures;
	c->rn = rn;
	c->peer = peer;
	c->port = port;
	c->count = count;
	c->size = size;
	c->last = clock_now_ns();
	p.src_port = (uint16_t)(0x8000 | (clock_now_ns() >> 10 & 0x7fff));
	if ((rc = roce_alloc_pd(rn->dev, &c->pd)))
		goto fail;
	rc = -ENOMEM;
	if (!(c->r.mem = calloc(1, len)) || roce_create_cq(rn->dev, 8, NULL, NULL, &c->r.cq))
		goto fail;
	init.send_cq = init.recv_cq = c->r.cq;
	if ((rc = roce_create_qp(c->pd, &init, &c->r.qp)) ||
	    (rc = roce_reg_mr(c->pd, RPC_IOVA, len, dma_addr_host(c->r.mem), a.qp_access_flags, &c->r.mr)) ||
	    (rc = roce_modify_qp(c->r.qp, &a, ROCE_QP_STATE | ROCE_QP_PKEY_INDEX | ROCE_QP_PORT | ROCE_QP_ACCESS_FLAGS)) ||
	    (rc = roce_rpc_post_recv(c)))
		goto fail;
	roce_rpc_set_state(c, ROCE_RPC_CONNECTING);
	if ((rc = roce_cm_connect(rn, c->r.qp, &p, &c->conn)))
		goto fail;
	return 0;
fail:
	c->result = rc;
	c->failures++;
	roce_rpc_release(c);
	return rc;
}

/* One completion. 0, or -errno to end the run. */
static int roce_rpc_step(struct roce_rping_client *c, const struct roce_wc *wc)
{
	if (wc->status != ROCE_WC_SUCCESS) {
		log_info("rping client: WR %llu failed (status %d)", (unsigned long long)wc->wr_id, wc->status);
		return -EIO;
	}
	if (wc->wr_id != RPC_WR_RECV)
		return 0;
	if (roce_rpc_post_recv(c))
		return -EIO;
	if (c->state == ROCE_RPC_WAIT_READ) {
		/* the server has READ our start buffer: now our sink */
		roce_rpc_set_state(c, ROCE_RPC_WAIT_WRITE);
		return roce_rpc_advertise(c, RPC_START + c->size) ? -EIO : 0;
	}
	if (c->state != ROCE_RPC_WAIT_WRITE)
		return -EPROTO;
	/* the server has WRITTEN the sink: rping -V */
	if (memcmp(c->r.mem + RPC_START, c->r.mem + RPC_START + c->size, c->size)) {
		log_info("rping client: round %u: the sink differs from the start buffer", c->rounds);
		return -EBADMSG;
	}
	if (++c->rounds == c->count) {
		c->result = 0;
		roce_rpc_set_state(c, ROCE_RPC_CLOSING);
		return 1;
	}
	roce_rpc_fill(c);
	roce_rpc_set_state(c, ROCE_RPC_WAIT_READ);
	return roce_rpc_advertise(c, RPC_START) ? -EIO : 0;
}

int roce_rping_client_poll(struct roce_rping_client *c, uint64_t now)
{
	struct roce_wc wc[4];
	int n, work = 0;

	if (c->state == ROCE_RPC_IDLE || c->state == ROCE_RPC_CONNECTING) {
		if (c->state == ROCE_RPC_CONNECTING && now > c->last && now - c->last > ROCE_RPING_CLIENT_IDLE_NS)
			roce_rpc_finish(c, -ETIMEDOUT);
		return 0;
	}
	if (c->state == ROCE_RPC_CLOSING)
		return 0;
	n = roce_poll_cq(c->r.cq, 4, wc);
	if (n < 0) {
		roce_rpc_finish(c, -EIO);
		return 1;
	}
	for (int k = 0; k < n; k++) {
		int rc = roce_rpc_step(c, &wc[k]);
		work++;
		c->last = now;
		if (rc < 0) {
			roce_rpc_finish(c, rc);
			return work;
		}
		if (rc > 0) {
			roce_rpc_finish(c, 0);  /* every round verified: DREQ */
			return work;
		}
	}
	if (now > c->last && now - c->last > ROCE_RPING_CLIENT_IDLE_NS)
		roce_rpc_finish(c, -ETIMEDOUT);
	return work;
}

void roce_rping_client_stop(struct roce_rping_client *c)
{
	if (c->state != ROCE_RPC_IDLE)
		roce_rpc_finish(c, -ECANCELED);
}
