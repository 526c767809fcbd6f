/*
 * roce_rping.c - the rping server (see roce_rping.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "../../lib/clock.h"
#include "../../lib/log.h"
#include "roce_app.h"
#include "roce_internal.h"
#include "roce_net.h"
#include "roce_rping.h"

LOG_MODULE_USE(rdma);

#define RP_RECV 0                    /* offsets in a session's memory */
#define RP_SEND 16
#define RP_DATA 32
#define RP_IOVA 0x10000ull           /* the iova of the session's MR (what the client never sees) */

enum { WR_RECV = 1, WR_SEND, WR_READ, WR_WRITE };

static void roce_rping_free(struct roce_rping_session *s)
{
	if (s->conn)
		roce_cm_detach(s->conn);
	roce_conn_res_free(&s->r);
	memset(s, 0, sizeof(*s));
}

static int roce_rping_post_recv(struct roce_rping_session *s)
{
	struct roce_recv_wr w = { .wr_id = WR_RECV, .num_sge = 1,
				  .sg_list = { { RP_IOVA + RP_RECV, sizeof(struct roce_rping_info), roce_mr_lkey(s->r.mr) } } };
	return roce_post_recv(s->r.qp, &w);
}

static int roce_rping_post(struct roce_rping_session *s, enum roce_wr_opcode op, uint64_t id, uint64_t laddr,
			   uint32_t len, uint64_t raddr, uint32_t rkey)
{
	struct roce_send_wr w = { .wr_id = id, .opcode = op, .send_flags = ROCE_SEND_SIGNALED, .num_sge = 1,
				  .sg_list = { { laddr, len, roce_mr_lkey(s->r.mr) } }, .remote_addr = raddr, .rkey = rkey };
	return roce_post_send(s->r.qp, &w);
}

static struct roce_rping_session *roce_rping_of(struct roce_rping *rp, struct roce_cm_conn *c)
{
	for (unsigned i = 0; i < ROCE_RPING_MAX; i++)
		if (rp->s[i].state != ROCE_RPING_FREE && rp->s[i].conn == c)
			return &rp->s[i];
	return NULL;
}

static int roce_rping_req(struct roce_cm_conn *c, const struct roce_cm_req *req, uint32_t peer, void *ctx)
{
	struct roce_rping *rp = ctx;
	struct roce_rping_session *s = NULL;
	struct roce_qp_init_attr init = { .qp_type = ROCE_QPT_RC,
					  .cap = { .max_send_wr = 4, .max_recv_wr = 2, .max_send_sge = 1, .max_recv_sge = 1 } };
	struct roce_qp_attr a = { .qp_state = ROCE_QPS_INIT, .port_num = 1, .qp_access_flags = ROCE_ACCESS_LOCAL_WRITE };
	(void)req;
	(void)peer;

	for (unsigned i = 0; i < ROCE_RPING_MAX && !s; i++)
		if (rp->s[i].state == ROCE_RPING_FREE)
			s = &rp->s[i];
	if (!s)
		return CM_REJ_NO_RESOURCES;
	memset(s, 0, sizeof(*s));
	if (!(s->r.mem = calloc(1, RP_DATA + ROCE_RPING_MAX_SIZE)))
		goto fail;
	if (roce_create_cq(rp->pd->dev, 8, NULL, NULL, &s->r.cq))
		goto fail;
	init.send_cq = init.recv_cq = s->r.cq;
	if (roce_create_qp(rp->pd, &init, &s->r.qp))
		goto fail;
	if (roce_reg_mr(rp->pd, RP_IOVA, RP_DATA + ROCE_RPING_MAX_SIZE, dma_addr_host(s->r.mem), ROCE_ACCESS_LOCAL_WRITE,
			&s->r.mr))
		goto fail;
	if (roce_modify_qp(s->r.qp, &a, ROCE_QP_STATE | ROCE_QP_PKEY_INDEX | ROCE_QP_PORT | ROCE_QP_ACCESS_FLAGS))
		goto fail;
	s->state = ROCE_RPING_CONNECTING;
	s->last = clock_now_ns();
	if (roce_rping_post_recv(s) || roce_cm_accept(c, s->r.qp, NULL, 0))
		goto fail;
	s->conn = c;
	rp->sessions++;
	return 0;
fail:
	roce_rping_free(s);
	return CM_REJ_NO_RESOURCES;
}

static void roce_rping_event(struct roce_cm_conn *c, enum roce_cm_event ev, void *ctx)
{
	struct roce_rping *rp = ctx;
	struct roce_rping_session *s = roce_rping_of(rp, c);
	if (!s)
		return;
	if (ev == ROCE_CM_EV_ESTABLISHED) {
		if (s->state == ROCE_RPING_CONNECTING)
			s->state = ROCE_RPING_WAIT_START;
		return;
	}
	log_info("rping: session closed after %llu rounds", (unsigned long long)s->rounds);
	roce_rping_free(s);
}

int roce_rping_start(struct roce_rping *rp, struct roce_net *rn)
{
	int rc;
	memset(rp, 0, sizeof(*rp));
	rp->rn = rn;
	if ((rc = roce_alloc_pd(rn->dev, &rp->pd)))
		return rc;
	if ((rc = roce_cm_listen(rn, ROCE_CM_PS_TCP_SID(ROCE_RPING_PORT), roce_rping_req, roce_rping_event, rp))) {
		roce_dealloc_pd(rp->pd);
		rp->pd = NULL;
	}
	return rc;
}

void roce_rping_stop(struct roce_rping *rp)
{
	if (!rp->pd)
		return;
	roce_cm_unlisten(rp->rn, ROCE_CM_PS_TCP_SID(ROCE_RPING_PORT));
	for (unsigned i = 0; i < ROCE_RPING_MAX; i++)
		if (rp->s[i].state != ROCE_RPING_FREE) {
			roce_cm_disconnect(rp->s[i].conn);
			roce_rping_free(&rp->s[i]);
		}
	roce_dealloc_pd(rp->pd);
	rp->pd = NULL;
}

/* One completion of session s: the next step of rping's server loop. 0, or -EIO to close. */
static int roce_rping_step(struct roce_rping *rp, struct roce_rping_session *s, const struct roce_wc *wc)
{
	struct roce_rping_info info;

	if (wc->status != ROCE_WC_SUCCESS) {
		log_info("rping: WR %llu failed (status %d)", (unsigned long long)wc->wr_id, wc->status);
		return -EIO;
	}
	switch (wc->wr_id) {
	case WR_RECV:
		if (wc->byte_len < sizeof(info))
			return -EIO;
		memcpy(&info, s->r.mem + RP_RECV, sizeof(info));
		if (roce_rping_post_recv(s))
			return -EIO;
		if (s->state == ROCE_RPING_CONNECTING)
			s->state = ROCE_RPING_WAIT_START;  /* the request came before the RTU */
		if (s->state == ROCE_RPING_WAIT_START) {
			/* the client's start buffer: read it all */
			if (be32_get(info.size) > ROCE_RPING_MAX_SIZE || !be32_get(info.size))
				return -EIO;
			s->len = be32_get(info.size);
			s->state = ROCE_RPING_READING;
			return roce_rping_post(s, ROCE_WR_RDMA_READ, WR_READ, RP_IOVA + RP_DATA, s->len, be64_get(info.buf), be32_get(info.rkey));
		}
		if (s->state == ROCE_RPING_WAIT_SINK) {
			/* the client's sink: write back what we read (at most its size) */
			uint32_t n = be32_get(info.size) < s->len ? be32_get(info.size) : s->len;
			s->state = ROCE_RPING_WRITING;
			return roce_rping_post(s, ROCE_WR_RDMA_WRITE, WR_WRITE, RP_IOVA + RP_DATA, n, be64_get(info.buf), be32_get(info.rkey));
		}
		return -EIO;
	case WR_READ:
		s->state = ROCE_RPING_WAIT_SINK;
		return roce_rping_post(s, ROCE_WR_SEND, WR_SEND, RP_IOVA + RP_SEND, sizeof(info), 0, 0);
	case WR_WRITE:
		s->state = ROCE_RPING_WAIT_START;
		s->rounds++;
		rp->rounds++;
		return roce_rping_post(s, ROCE_WR_SEND, WR_SEND, RP_IOVA + RP_SEND, sizeof(info), 0, 0);
	case WR_SEND:
		return 0;
	default:
		return -EIO;
	}
}

int roce_rping_poll(struct roce_rping *rp, uint64_t now)
{
	int work = 0;

	for (unsigned i = 0; i < ROCE_RPING_MAX; i++) {
		struct roce_rping_session *s = &rp->s[i];
		struct roce_wc wc[4];
		int n;

		if (s->state == ROCE_RPING_FREE)
			continue;
		n = roce_poll_cq(s->r.cq, 4, wc);
		for (int k = 0; k < n; k++) {
			s->last = now;
			work++;
			if (roce_rping_step(rp, s, &wc[k])) {
				rp->errors++;
				roce_cm_disconnect(s->conn);  /* DREQ; the CM finishes it alone */
				roce_rping_free(s);
				break;
			}
		}
		if (n < 0 || (s->state != ROCE_RPING_FREE && now - s->last > ROCE_RPING_IDLE_NS)) {
			log_info("rping: session idle or its CQ overflowed, closing");
			rp->errors++;
			roce_cm_disconnect(s->conn);
			roce_rping_free(s);
		}
	}
	return work;
}
