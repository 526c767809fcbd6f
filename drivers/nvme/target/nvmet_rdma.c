/*
 * nvmet_rdma.c - the NVMe/RDMA transport: listeners on the CM, queue admission and set-up
 * from the REQ's private data, the queue state machine, closing and freeing, the poller.
 * Commands, data buffers and responses are in nvmet_rdma_cmd.c. See nvmet_rdma.h.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../../../lib/clock.h"
#include "../../../lib/log.h"
#include "../../../net/net.h"
#include "../../rdma/roce_net.h"
#include "nvmet_rdma_priv.h"
#include "nvmet_wire.h"

LOG_MODULE_USE(nvmet);

static const char *const queue_state_names[NVMET_RDMA_Q_STATE_COUNT] = {
	[NVMET_RDMA_Q_CONNECTING] = "connecting",
	[NVMET_RDMA_Q_LIVE] = "live",
	[NVMET_RDMA_Q_CLOSING] = "closing",
};

const char *nvmet_rdma_queue_state_name(enum nvmet_rdma_queue_state s)
{
	return (unsigned)s < NVMET_RDMA_Q_STATE_COUNT ? queue_state_names[s] : "?";
}

static void set_state(struct nvmet_rdma_queue *rq, enum nvmet_rdma_queue_state s)
{
	if (rq->state == s)
		return;
	log_debug("rdma queue %p: %s -> %s", (void *)rq, nvmet_rdma_queue_state_name(rq->state),
		  nvmet_rdma_queue_state_name(s));
	rq->state = s;
}

static void queue_kill(void *tctx, int reason);

const struct nvmet_transport_ops nvmet_rdma_ops = {
	.name = "rdma",
	.trtype = NVMET_TRTYPE_RDMA,
	.max_queue_size = NVMET_RDMA_QUEUE_DEPTH,
	.in_capsule_data = NVMET_RDMA_IN_CAPSULE,
	.msdbd = 1,
	.sgls_extra = NVME_SGLS_KEYED | NVME_SGLS_OFFSET,
	.max_xfer = NVMET_RDMA_MAX_XFER,
	.queue_kill = queue_kill,
};

/* The core killed the controller: close from the poll loop, not inside this call. */
static void queue_kill(void *tctx, int reason)
{
	struct nvmet_rdma_queue *rq = tctx;
	rq->kill_pending = true;
	rq->kill_reason = reason;
	rq->t->st.kills++;
}

/* --- queue resources --- */

static void queue_free(struct nvmet_rdma_queue *rq)
{
	struct nvmet_rdma *t = rq->t;

	if (rq->cm) {
		roce_cm_detach(rq->cm);
		rq->cm = NULL;
	}
	if (rq->qp) {
		struct roce_qp_attr e = { .qp_state = ROCE_QPS_ERR };
		struct roce_wc wc[16];
		roce_modify_qp(rq->qp, &e, ROCE_QP_STATE);
		while (roce_poll_cq(rq->cq, 16, wc) > 0)
			;
		roce_destroy_qp(rq->qp);
	}
	if (rq->cfr)
		for (unsigned i = 0; i < rq->depth; i++)
			nvmet_rdma_capsule_release(rq, i);
	free(rq->cfr);
	if (rq->rsps) {
		nvmet_rdma_tx_reap(rq); /* the NIC is done with every frame by now (the callers wait) */
		/* a rsp whose flush completion never came (lost with an overrun CQ) still holds its
		 * buffer: with the QP gone and nothing at the core or in the NIC, nobody uses it */
		for (unsigned i = 0; i < rq->nrsp; i++)
			if (rq->rsps[i].buf.p)
				nvmet_rdma_buf_put(rq, &rq->rsps[i].buf);
	}
	if (rq->mr)
		roce_dereg_mr(rq->mr);
	if (rq->cq)
		roce_destroy_cq(rq->cq);
	free(rq->rsps);
	free(rq->mem);
	if (rq->node.next) {
		list_del(&rq->node);
		t->nqueues--;
		t->st.freed++;
	}
	free(rq);
}

/* Create the QP (in INIT), its CQ, the capsule and response memory and its MR, and post
 * every receive buffer. 0 or errno (the caller frees rq). */
static int queue_setup(struct nvmet_rdma_queue *rq)
{
	struct nvmet_rdma *t = rq->t;
	struct roce_qp_init_attr init = { .qp_type = ROCE_QPT_RC };
	struct roce_qp_attr a = { .qp_state = ROCE_QPS_INIT, .port_num = 1, .qp_access_flags = ROCE_ACCESS_LOCAL_WRITE };
	size_t memlen;
	int rc;

	rq->nrsp = rq->depth * 2;
	rq->sq_max = ROCE_MAX_WR;
	memlen = (size_t)rq->depth * rq->capsule_size + (size_t)rq->nrsp * sizeof(struct nvme_cqe);
	if (!(rq->mem = calloc(1, memlen)) || !(rq->rsps = calloc(rq->nrsp, sizeof(*rq->rsps))) ||
	    !(rq->cfr = calloc(rq->depth, sizeof(*rq->cfr))))
		return -ENOMEM;
	for (unsigned i = 0; i < rq->nrsp; i++) {
		rq->rsps[i].rq = rq;
		rq->rsps[i].idx = i;
	}
	if ((rc = roce_create_cq(t->dev, rq->depth + rq->sq_max, NULL, NULL, &rq->cq)))
		return rc;
	init.send_cq = init.recv_cq = rq->cq;
	init.cap.max_send_wr = rq->sq_max;
	init.cap.max_recv_wr = rq->depth;
	init.cap.max_send_sge = 1;
	init.cap.max_recv_sge = 1;
	init.qp_context = rq;
	if ((rc = roce_create_qp(t->pd, &init, &rq->qp)))
		return rc;
	if ((rc = roce_reg_mr(t->pd, (uint64_t)(uintptr_t)rq->mem, memlen, dma_addr_host(rq->mem),
			      ROCE_ACCESS_LOCAL_WRITE, &rq->mr)))
		return rc;
	/* capsules with data stay in the NIC's receive buffers where the drive may read them */
	if (rq->capsule_size > sizeof(struct nvme_sqe))
		roce_mr_set_sink(rq->mr, nvmet_rdma_capsule_frag_take, rq);
	if ((rc = roce_modify_qp(rq->qp, &a, ROCE_QP_STATE | ROCE_QP_PKEY_INDEX | ROCE_QP_PORT | ROCE_QP_ACCESS_FLAGS)))
		return rc;
	for (unsigned i = 0; i < rq->depth; i++)
		if ((rc = nvmet_rdma_post_recv(rq, i)))
			return rc;
	return 0;
}

/* --- the CM --- */

/* The nvmet port for a REQ to rdma_cm port `svc` at our address `local`, or -1. */
static int find_port(uint16_t svc, uint32_t local)
{
	for (unsigned i = 0; i < nvmet_port_count(); i++) {
		const struct nvmet_cfg_port *p = nvmet_port_at(i);
		if (p && p->trtype == NVMET_TRTYPE_RDMA && p->trsvcid == svc && (p->traddr == 0 || p->traddr == local))
			return (int)i;
	}
	return -1;
}

static unsigned peer_queues(const struct nvmet_rdma *t, uint32_t peer)
{
	struct list_node *it;
	unsigned n = 0;
	list_for_each(&t->queues, it) {
		const struct nvmet_rdma_queue *rq = container_of(it, struct nvmet_rdma_queue, node);
		n += rq->peer == peer && rq->state != NVMET_RDMA_Q_CLOSING;
	}
	return n;
}

/* Refuse a REQ: the NVMe/RDMA status in the REJ's private data, consumer-defined reason. */
static int refuse(struct nvmet_rdma *t, struct roce_cm_conn *c, enum nvme_rdma_cm_status sts, uint32_t peer)
{
	uint8_t priv[NVME_RDMA_CM_REJ_LEN];
	char a[16];

	t->st.rejected++;
	if ((unsigned)sts < sizeof(t->st.rej_status) / sizeof(t->st.rej_status[0]))
		t->st.rej_status[sts]++;
	nvmet_rdma_cm_build_rej(priv, sizeof(priv), sts);
	roce_cm_reject_data(c, priv, sizeof(priv));
	log_info("rdma: REQ from %s refused: %s", net_format_ipv4(peer, a), nvme_rdma_cm_status_name(sts));
	return CM_REJ_CONSUMER;
}

static int cm_req(struct roce_cm_conn *c, const struct roce_cm_req *req, uint32_t peer, void *ctx)
{
	struct nvmet_rdma *t = ctx;
	const struct nvmet_rdma_cm_limits lim = { .max_qid = NVMET_MAX_IO_QUEUES, .admin_depth = NVME_RDMA_AQ_DEPTH,
						  .io_depth = NVMET_RDMA_QUEUE_DEPTH, .max_hrqsize = 1024 };
	struct nvmet_rdma_cm_params prm;
	struct nvmet_rdma_queue *rq;
	struct net_config nc;
	uint8_t rep[NVME_RDMA_CM_REP_LEN];
	uint32_t local = 0;
	enum nvme_rdma_cm_status sts;
	int port, rc;

	t->st.reqs++;
	net_config_get(&nc);
	if (roce_gid_to_ipv4((const struct roce_gid *)req->remote_gid, &local))
		local = nc.addr;
	sts = nvmet_rdma_cm_parse_req(req->private_data + NVMET_RDMA_CMA_HDR_LEN,
				      sizeof(req->private_data) - NVMET_RDMA_CMA_HDR_LEN, &lim, &prm);
	if (sts != NVME_RDMA_CM_OK)
		return refuse(t, c, sts, peer);
	if ((port = find_port((uint16_t)req->service_id, local)) < 0)
		return refuse(t, c, NVME_RDMA_CM_NO_RSC, peer);
	if (t->nqueues >= NVMET_RDMA_MAX_QUEUES) {
		t->st.no_queue++;
		return refuse(t, c, NVME_RDMA_CM_NO_RSC, peer);
	}
	if (peer_queues(t, peer) >= NVMET_RDMA_QUEUES_PER_PEER) {
		t->st.peer_refused++;
		return refuse(t, c, NVME_RDMA_CM_NO_RSC, peer);
	}
	if (!(rq = calloc(1, sizeof(*rq))))
		return refuse(t, c, NVME_RDMA_CM_NO_RSC, peer);
	rq->t = t;
	rq->port = (unsigned)port;
	rq->peer = peer;
	rq->host_qid = prm.qid;
	rq->depth = prm.depth;
	rq->capsule_size = (unsigned)sizeof(struct nvme_sqe) + (prm.qid ? NVMET_RDMA_IN_CAPSULE : 0);
	list_init(&rq->waitq);
	list_init(&rq->bufq);
	if ((rc = queue_setup(rq)) || (rc = nvmet_queue_create(rq->port, &nvmet_rdma_ops, rq, &rq->q))) {
		log_warn("rdma: no resources for a queue of depth %u (%d)", rq->depth, rc);
		queue_free(rq);
		return refuse(t, c, NVME_RDMA_CM_NO_RSC, peer);
	}
	nvmet_queue_set_peer(rq->q, peer, 0);
	nvmet_queue_set_local(rq->q, local);
	list_add_tail(&t->queues, &rq->node);
	t->nqueues++;
	rq->sq_stamp = clock_now_ns();
	rq->deadline = rq->sq_stamp + (uint64_t)NVMET_RDMA_CONNECT_TIMEOUT_MS * 1000000ull;
	set_state(rq, NVMET_RDMA_Q_CONNECTING);
	nvmet_rdma_cm_build_rep(rep, sizeof(rep), (uint16_t)rq->depth);
	if ((rc = roce_cm_accept(c, rq->qp, rep, sizeof(rep)))) {
		nvmet_queue_destroy(rq->q);
		rq->q = NULL;
		queue_free(rq);
		return refuse(t, c, NVME_RDMA_CM_NO_RSC, peer);
	}
	rq->cm = c;
	c->user = rq;
	t->st.accepted++;
	return 0;
}

static void cm_event(struct roce_cm_conn *c, enum roce_cm_event ev, void *ctx)
{
	struct nvmet_rdma *t = ctx;
	struct nvmet_rdma_queue *rq = c->user;

	if (!rq || rq->cm != c)
		return;
	if (ev == ROCE_CM_EV_ESTABLISHED) {
		t->st.established++;
		if (rq->state == NVMET_RDMA_Q_CONNECTING)
			set_state(rq, NVMET_RDMA_Q_LIVE);
		return;
	}
	/* DREQ, DREP, REJ or a CM timeout: the QP is in ERR already */
	t->st.disconnects++;
	roce_cm_detach(c);
	c->user = NULL;
	rq->cm = NULL;
	nvmet_rdma_queue_close(rq, "disconnected");
}

void nvmet_rdma_queue_close(struct nvmet_rdma_queue *rq, const char *why)
{
	struct roce_qp_attr e = { .qp_state = ROCE_QPS_ERR };
	struct roce_wc wc[16];
	int n;

	if (rq->state == NVMET_RDMA_Q_CLOSING)
		return;
	log_debug("rdma queue %p: close (%s)", (void *)rq, why);
	set_state(rq, NVMET_RDMA_Q_CLOSING);
	rq->t->st.closed++;
	if (rq->cm) {
		struct roce_cm_conn *c = rq->cm;
		rq->cm = NULL;
		c->user = NULL;
		if (c->state == ROCE_CM_ESTABLISHED || c->state == ROCE_CM_REP_SENT)
			roce_cm_disconnect(c);  /* DREQ; the CM finishes it alone */
		roce_cm_detach(c);
	}
	/* every posted work request completes flushed: the rsps they held come back */
	roce_modify_qp(rq->qp, &e, ROCE_QP_STATE);
	while ((n = roce_poll_cq(rq->cq, 16, wc)) > 0)
		for (int i = 0; i < n; i++)
			if (wc[i].opcode != ROCE_WC_RECV)
				nvmet_rdma_send_done(rq, &wc[i]);
	nvmet_rdma_drop_waiting(rq);
	rq->npending = 0;
	if (rq->q) {
		struct nvmet_queue *q = rq->q;
		rq->q = NULL;
		nvmet_queue_destroy(q);  /* held AERs complete inside: their rsps go free */
	}
}

/* --- start, stop --- */

int nvmet_rdma_start(struct nvmet_rdma *t, struct roce_net *rn)
{
	int rc = 0;

	if (t->started)
		return -EBUSY;
	memset(t, 0, sizeof(*t));
	list_init(&t->queues);
	nvmet_rdma_tx_owner_init(t);
	for (unsigned i = 0; i < nvmet_port_count(); i++) {
		const struct nvmet_cfg_port *p = nvmet_port_at(i);
		bool dup = false;
		if (!p || p->trtype != NVMET_TRTYPE_RDMA)
			continue;
		for (unsigned k = 0; k < t->nlisten; k++)
			dup |= t->listen[k] == p->trsvcid;
		if (dup)
			continue;
		if (t->nlisten >= NVMET_RDMA_MAX_LISTEN) {
			log_err("rdma: more than %u RDMA ports", NVMET_RDMA_MAX_LISTEN);
			rc = -ENOSPC;
			goto fail;
		}
		if (!rn || !rn->dev) {
			log_err("rdma: port %u is RDMA but there is no RoCE device", p->portid);
			rc = -ENODEV;
			goto fail;
		}
		if (!t->pd) {
			t->rn = rn;
			t->dev = rn->dev;
			if ((rc = roce_alloc_pd(t->dev, &t->pd)) || (rc = nvmet_rdma_pools_init(t)))
				goto fail;
		}
		if ((rc = roce_cm_listen(rn, ROCE_CM_PS_TCP_SID(p->trsvcid), cm_req, cm_event, t))) {
			log_err("rdma: cannot listen on rdma_cm port %u (%d)", p->trsvcid, rc);
			goto fail;
		}
		t->listen[t->nlisten++] = p->trsvcid;
		log_info("rdma: NVMe/RDMA listening on rdma_cm port %u (port %u)", p->trsvcid, p->portid);
	}
	t->started = true;
	return 0;
fail:
	for (unsigned k = 0; k < t->nlisten; k++)
		roce_cm_unlisten(rn, ROCE_CM_PS_TCP_SID(t->listen[k]));
	t->nlisten = 0;
	nvmet_rdma_pools_fini(t);
	if (t->pd)
		roce_dealloc_pd(t->pd);
	t->pd = NULL;
	return rc;
}

void nvmet_rdma_stop(struct nvmet_rdma *t)
{
	struct list_node *it, *tmp;

	if (!t->started)
		return;
	for (unsigned k = 0; k < t->nlisten; k++)
		roce_cm_unlisten(t->rn, ROCE_CM_PS_TCP_SID(t->listen[k]));
	t->nlisten = 0;
	list_for_each_safe(&t->queues, it, tmp) {
		struct nvmet_rdma_queue *rq = container_of(it, struct nvmet_rdma_queue, node);
		nvmet_rdma_queue_close(rq, "stop");
		nvmet_rdma_tx_reap(rq);
		if (!rq->at_core && !rq->tx_refs)
			queue_free(rq);
	}
	t->started = false;
	if (list_empty(&t->queues)) {
		nvmet_rdma_pools_fini(t);
		if (t->pd)
			roce_dealloc_pd(t->pd);
		t->pd = NULL;
	}
}

/* --- the poller --- */

/* Completions of rq, at most budget. Returns how many. */
static int queue_poll(struct nvmet_rdma_queue *rq, unsigned budget)
{
	struct roce_wc wc[16];
	int work = 0, n;

	while ((unsigned)work < budget && rq->state != NVMET_RDMA_Q_CLOSING &&
	       (n = roce_poll_cq(rq->cq, 16, wc)) != 0) {
		if (n < 0) {
			nvmet_rdma_queue_close(rq, "completion queue overflow");
			break;
		}
		for (int i = 0; i < n; i++) {
			const struct roce_wc *w = &wc[i];
			work++;
			if (w->status != ROCE_WC_SUCCESS) {
				if (w->status != ROCE_WC_WR_FLUSH_ERR) {
					rq->t->st.wc_errors++;
					log_info("rdma: QP %#x: work request %#llx failed (status %d): closing the queue",
						 roce_qp_num(rq->qp), (unsigned long long)w->wr_id, w->status);
				}
				if (w->opcode != ROCE_WC_RECV && (w->wr_id >> 32) != NVMET_RDMA_WR_RECV)
					nvmet_rdma_send_done(rq, w);
				nvmet_rdma_queue_close(rq, "work request failed");
				continue;
			}
			if (w->opcode == ROCE_WC_RECV) {
				if (rq->state == NVMET_RDMA_Q_CONNECTING && rq->cm && rq->cm->state == ROCE_CM_ESTABLISHED)
					set_state(rq, NVMET_RDMA_Q_LIVE);
				nvmet_rdma_capsule(rq, (uint32_t)w->wr_id, w->byte_len);
			} else {
				nvmet_rdma_send_done(rq, w);
			}
		}
	}
	return work;
}

/* Has rq had send work requests outstanding and none completed for NVMET_RDMA_SEND_STALL_MS?
 * Counted from the last pass that saw its send queue empty or a completion come. */
static bool send_stalled(struct nvmet_rdma_queue *rq, uint64_t now)
{
	if (!rq->sq_used || rq->sq_done != rq->sq_seen) {
		rq->sq_seen = rq->sq_done;
		rq->sq_stamp = now;
		return false;
	}
	return now - rq->sq_stamp > (uint64_t)NVMET_RDMA_SEND_STALL_MS * 1000000ull;
}

int nvmet_rdma_poll(struct nvmet_rdma *t, unsigned budget)
{
	struct list_node *it, *tmp;
	uint64_t now = clock_now_ns();
	int work = 0;

	/* never started (no RDMA port): the queue list is still zeroed, not an empty list */
	if (!t->started && (!t->queues.next || list_empty(&t->queues)))
		return 0;
	list_for_each_safe(&t->queues, it, tmp) {
		struct nvmet_rdma_queue *rq = container_of(it, struct nvmet_rdma_queue, node);
		if (rq->state != NVMET_RDMA_Q_CLOSING) {
			work += queue_poll(rq, budget);
			if (!list_empty(&rq->waitq) || !list_empty(&rq->bufq))
				work += nvmet_rdma_resume(rq);
		}
		if (rq->state != NVMET_RDMA_Q_CLOSING && rq->kill_pending) {
			nvmet_rdma_queue_close(rq, "controller killed");
			work++;
		} else if (rq->state != NVMET_RDMA_Q_CLOSING && rq->q && nvmet_queue_qid(rq->q) < 0 &&
			   now > rq->deadline) {
			t->st.timeouts++;
			log_info("rdma: queue from QP %#x: no Connect within %u ms, closing", roce_qp_num(rq->qp),
				 NVMET_RDMA_CONNECT_TIMEOUT_MS);
			nvmet_rdma_queue_close(rq, "connect timeout");
			work++;
		} else if (rq->state != NVMET_RDMA_Q_CLOSING && send_stalled(rq, now)) {
			/* the RC layer retries an RNR NAK for ever when the host asked (rnr_retry 7):
			 * its rsps, buffers and send room are not held for ever */
			t->st.sq_stalls++;
			log_info("rdma: queue from QP %#x: %u send work requests and none completed for %u ms, closing",
				 roce_qp_num(rq->qp), rq->sq_used, NVMET_RDMA_SEND_STALL_MS);
			nvmet_rdma_queue_close(rq, "send queue stalled");
			work++;
		}
		if (rq->tx_held)
			work += nvmet_rdma_tx_reap(rq);
		/* freed once nothing of it is at the core or in the NIC's transmit ring */
		if (rq->state == NVMET_RDMA_Q_CLOSING && !rq->at_core && !rq->tx_refs) {
			queue_free(rq);
			work++;
		}
	}
	if (!t->started && list_empty(&t->queues) && t->pd) {
		nvmet_rdma_pools_fini(t);
		roce_dealloc_pd(t->pd);
		t->pd = NULL;
	}
	return work;
}

unsigned nvmet_rdma_queue_count(const struct nvmet_rdma *t)
{
	return t->nqueues;
}

unsigned nvmet_rdma_queue_count_state(const struct nvmet_rdma *t, enum nvmet_rdma_queue_state s)
{
	struct list_node *it;
	unsigned n = 0;
	list_for_each(&t->queues, it)
		n += container_of(it, struct nvmet_rdma_queue, node)->state == s;
	return n;
}

#define U(x) ((unsigned long long)(x))

void nvmet_rdma_show(const struct nvmet_rdma *t)
{
	const struct nvmet_rdma_stats *s = &t->st;
	struct list_node *it;
	char a[16];

	printf("rdma: %u queues, data buffers small %u/%u large %u/%u\n", t->nqueues, t->pool_used[0],
	       t->pool_count[0], t->pool_used[1], t->pool_count[1]);
	list_for_each(&t->queues, it) {
		const struct nvmet_rdma_queue *rq = container_of(it, const struct nvmet_rdma_queue, node);
		printf("  qpn %#x <- %s qid %u cntlid %d %s: credits %u/%u busy %u waiting %s capsules %llu "
		       "rdma-read %llu (%llu B) rdma-write %llu (%llu B) sends %llu (invalidate %llu) placement device %llu B "
		       "dram %llu B\n",
		       roce_qp_num(rq->qp), net_format_ipv4(rq->peer, a), rq->host_qid, rq->q ? nvmet_queue_cntlid(rq->q) : -1,
		       nvmet_rdma_queue_state_name(rq->state), rq->depth - (rq->busy < rq->depth ? rq->busy : rq->depth),
		       rq->depth, rq->busy, list_empty(&rq->waitq) && list_empty(&rq->bufq) ? "no" : "yes",
		       U(rq->capsules), U(rq->rdma_reads),
		       U(rq->read_bytes), U(rq->rdma_writes), U(rq->write_bytes), U(rq->sends), U(rq->send_invs),
		       U(rq->p2p_bytes), U(rq->dram_bytes));
	}
	printf("rdma cm: reqs %llu accepted %llu rejected %llu (peer share %llu, table %llu) established %llu "
	       "disconnects %llu kills %llu timeouts %llu send-stalls %llu wc-errors %llu closed %llu freed %llu\n",
	       U(s->reqs), U(s->accepted), U(s->rejected), U(s->peer_refused), U(s->no_queue), U(s->established),
	       U(s->disconnects), U(s->kills), U(s->timeouts), U(s->sq_stalls), U(s->wc_errors), U(s->closed),
	       U(s->freed));
	printf("rdma data: capsules %llu (short %llu) responses %llu (invalidate %llu) rdma-read %llu (%llu B) "
	       "rdma-write %llu (%llu B) in-capsule %llu (%llu B) sgl-refused %llu buf-waits %llu sq-waits %llu "
	       "resumed %llu host-share %llu\n",
	       U(s->capsules), U(s->short_capsules), U(s->responses), U(s->send_invs), U(s->rdma_reads),
	       U(s->read_bytes), U(s->rdma_writes), U(s->write_bytes), U(s->inline_writes), U(s->inline_bytes),
	       U(s->sgl_refused), U(s->buf_waits), U(s->sq_waits), U(s->resumed), U(s->host_share));
	printf("rdma p2p: %s, reads %llu (%llu B) writes %llu (%llu B), strided reads %llu\n",
	       !t->mops ? "none" : t->p2p_off ? "off" : "auto", U(s->p2p_reads), U(s->p2p_read_bytes), U(s->p2p_writes),
	       U(s->p2p_write_bytes), U(s->p2p_strided));
	printf("rdma write in place: %llu (%llu B), nic buffers held %llu (peak %llu, reserved %u), budget waits %llu\n",
	       U(s->inplace_writes), U(s->inplace_bytes), U(s->rx_held), U(s->rx_held_peak), t->rx_reserved,
	       U(s->rx_waits));
	printf("rdma in-capsule in place: %llu (%llu B), capsules copied out of the NIC's buffers %llu\n",
	       U(s->inline_inplace), U(s->inline_inplace_bytes), U(s->capsule_copied));
	printf("rdma read buffers held past their command by frames in the NIC's transmit ring: %llu\n",
	       U(s->tx_deferred));
	printf("rdma write copied:");
	for (int r = 0; r < NVMET_TCP_DRAM_REASON_COUNT; r++)
		printf(" %s %llu (%llu B)", nvmet_tcp_dram_reason_name((enum nvmet_tcp_dram_reason)r), U(s->copy_cmds[r]),
		       U(s->copy_bytes[r]));
	printf("\n");
	printf("rdma dram fallback:");
	for (int r = 0; r < NVMET_TCP_DRAM_REASON_COUNT; r++)
		printf(" %s %llu (%llu B)", nvmet_tcp_dram_reason_name((enum nvmet_tcp_dram_reason)r), U(s->dram_cmds[r]),
		       U(s->dram_bytes[r]));
	printf("\n");
}
