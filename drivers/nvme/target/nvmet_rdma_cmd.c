/*
 * nvmet_rdma_cmd.c - the commands of the NVMe/RDMA transport: a capsule from its receive
 * buffer to the core (in-capsule data used where it landed, keyed write data fetched by
 * RDMA READ into a data buffer), the response (read data by RDMA WRITE, then the CQE by
 * SEND or SEND with Invalidate), the receive buffer posted again, and the data buffer
 * pools with their per-host share. See nvmet_rdma.h.
 *
 * Ownership: a rsp holds its capsule's receive buffer from the capsule's arrival until the
 * core completed the command (then the buffer is posted again), and its data buffer until
 * every work request it posted completed (the RC layer reads the SEND and WRITE payload
 * when it sends them, and again on a retransmission). Write data left in the NIC's receive
 * buffers (the RDMA READ responses, or the capsule's SEND: nvmet_rdma_place.c) is held
 * until the core completed the command, then given back to the NIC.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "../../../lib/log.h"
#include "nvmet_rdma_priv.h"
#include "nvmet_wire.h"

LOG_MODULE_USE(nvmet);

static uint8_t *capsule_at(struct nvmet_rdma_queue *rq, unsigned i)
{
	return rq->mem + (size_t)i * rq->capsule_size;
}

static uint8_t *cqe_at(struct nvmet_rdma_queue *rq, unsigned r)
{
	return rq->mem + (size_t)rq->depth * rq->capsule_size + (size_t)r * sizeof(struct nvme_cqe);
}

int nvmet_rdma_post_recv(struct nvmet_rdma_queue *rq, unsigned i)
{
	struct roce_recv_wr w = { .wr_id = NVMET_RDMA_WR_ID(NVMET_RDMA_WR_RECV, i), .num_sge = 1 };
	w.sg_list[0].addr = (uint64_t)(uintptr_t)capsule_at(rq, i);
	w.sg_list[0].length = rq->capsule_size;
	w.sg_list[0].lkey = roce_mr_lkey(rq->mr);
	return roce_post_recv(rq->qp, &w);
}

/* --- data buffers --- */

int nvmet_rdma_pools_init(struct nvmet_rdma *t)
{
	static const uint32_t size[2] = { NVMET_RDMA_SMALL_SIZE, NVMET_RDMA_LARGE_SIZE };
	static const unsigned count[2] = { NVMET_RDMA_SMALL_BUFS, NVMET_RDMA_LARGE_BUFS };
	int rc;

	for (unsigned c = 0; c < 2; c++) {
		size_t len = (size_t)size[c] * count[c];
		t->pool_size[c] = size[c];
		t->pool_count[c] = count[c];
		t->pool_used[c] = 0;
		memset(t->pool_map[c], 0, sizeof(t->pool_map[c]));
		/* zeroed: a peer never reads bytes it was not meant to */
		if (!(t->pool_mem[c] = calloc(1, len)))
			return -ENOMEM;
		if ((rc = roce_reg_mr(t->pd, (uint64_t)(uintptr_t)t->pool_mem[c], len, dma_addr_host(t->pool_mem[c]),
				      ROCE_ACCESS_LOCAL_WRITE, &t->pool_mr[c])))
			return rc;
	}
	if (!(t->sgt = calloc(NVMET_RDMA_SG_TABLES, sizeof(*t->sgt))) ||
	    !(t->fragt = calloc(NVMET_RDMA_SG_TABLES, sizeof(*t->fragt))))
		return -ENOMEM;
	memset(t->sgt_used, 0, sizeof(t->sgt_used));
	return 0;
}

void nvmet_rdma_pools_fini(struct nvmet_rdma *t)
{
	free(t->sgt);
	t->sgt = NULL;
	free(t->fragt);
	t->fragt = NULL;
	for (unsigned c = 0; c < 2; c++) {
		if (t->pool_mr[c])
			roce_dereg_mr(t->pool_mr[c]);
		free(t->pool_mem[c]);
		t->pool_mr[c] = NULL;
		t->pool_mem[c] = NULL;
	}
}

/* Buffers of class c held by rq's host address (all its queues). */
static unsigned host_bufs(const struct nvmet_rdma_queue *rq, unsigned c)
{
	struct list_node *it;
	unsigned n = 0;
	list_for_each(&rq->t->queues, it) {
		const struct nvmet_rdma_queue *o = container_of(it, struct nvmet_rdma_queue, node);
		if (o->peer == rq->peer)
			n += o->bufs[c];
	}
	return n;
}

unsigned nvmet_rdma_hosts_competing(const struct nvmet_rdma_queue *rq,
				    unsigned (*held)(const struct nvmet_rdma_queue *, unsigned), unsigned arg)
{
	struct list_node *it, *jt;
	unsigned n = 1; /* rq's host address */

	list_for_each(&rq->t->queues, it) {
		const struct nvmet_rdma_queue *o = container_of(it, struct nvmet_rdma_queue, node);
		bool first = true;
		if (o->peer == rq->peer || (!held(o, arg) && list_empty(&o->bufq)))
			continue;
		/* counted once: the first of its competing queues */
		for (jt = rq->t->queues.next; jt != it && first; jt = jt->next) {
			const struct nvmet_rdma_queue *p = container_of(jt, struct nvmet_rdma_queue, node);
			first = p->peer != o->peer || (!held(p, arg) && list_empty(&p->bufq));
		}
		n += first;
	}
	return n > NVMET_RDMA_HOST_SHARE ? n : NVMET_RDMA_HOST_SHARE;
}

static unsigned bufs_held(const struct nvmet_rdma_queue *o, unsigned c)
{
	return o->bufs[c];
}

/* A data buffer of at least len bytes for rq: the small class when it fits, else the
 * large one; never beyond the host's share of a class: 1/NVMET_RDMA_HOST_SHARE of it, less
 * while more host addresses compete for it (nvmet_rdma_hosts_competing). 0 or -ENOMEM (the
 * caller waits). */
int nvmet_rdma_buf_get(struct nvmet_rdma_queue *rq, uint32_t len, struct nvmet_rdma_buf *b)
{
	struct nvmet_rdma *t = rq->t;

	for (unsigned c = len <= NVMET_RDMA_SMALL_SIZE ? 0 : 1; c < 2; c++) {
		if (len > t->pool_size[c] || t->pool_used[c] >= t->pool_count[c])
			continue;
		unsigned held = host_bufs(rq, c);
		/* a host holding none is within any share (one buffer at least): nothing to count */
		if (held && held >= t->pool_count[c] / nvmet_rdma_hosts_competing(rq, bufs_held, c)) {
			t->st.host_share++;
			continue;
		}
		for (unsigned s = 0; s < t->pool_count[c]; s++) {
			if (t->pool_map[c][s])
				continue;
			t->pool_map[c][s] = 1;
			t->pool_used[c]++;
			rq->bufs[c]++;
			b->p = t->pool_mem[c] + (size_t)s * t->pool_size[c];
			b->addr = dma_addr_host(b->p);
			b->size = t->pool_size[c];
			b->lkey = roce_mr_lkey(t->pool_mr[c]);
			b->cls = (uint8_t)c;
			b->slot = (uint16_t)s;
			return 0;
		}
	}
	return -ENOMEM;
}

void nvmet_rdma_buf_put(struct nvmet_rdma_queue *rq, struct nvmet_rdma_buf *b)
{
	struct nvmet_rdma *t = rq->t;
	if (!b->p)
		return;
	if (b->device)
		return nvmet_rdma_place_put(rq, b);
	t->pool_map[b->cls][b->slot] = 0;
	t->pool_used[b->cls]--;
	rq->bufs[b->cls]--;
	memset(b, 0, sizeof(*b));
}

/* --- rsps --- */

static struct nvmet_rdma_rsp *rsp_get(struct nvmet_rdma_queue *rq)
{
	for (unsigned i = 0; i < rq->nrsp; i++)
		if (rq->rsps[i].state == NVMET_RDMA_RSP_FREE) {
			rq->busy++;
			return &rq->rsps[i];
		}
	return NULL;
}

static void rsp_start(struct nvmet_rdma_rsp *r, unsigned capsule, uint32_t len);

/* --- frames the NIC still reads from a read's device buffer --- */

static void tx_hold(struct roce_mr_tx_owner *o, uint64_t token)
{
	struct nvmet_rdma_rsp *r = (struct nvmet_rdma_rsp *)(uintptr_t)token;
	(void)o;
	r->tx_refs++;
	r->rq->tx_refs++;
}

static void tx_release(struct netdev_frag_owner *o, uint64_t token)
{
	struct nvmet_rdma_rsp *r = (struct nvmet_rdma_rsp *)(uintptr_t)token;
	(void)o;
	if (!r->tx_refs)
		return;
	r->tx_refs--;
	r->rq->tx_refs--;
	/* a TX_HELD rsp is freed from the poll loop (nvmet_rdma_tx_reap), not inside the NIC's */
}

void nvmet_rdma_tx_owner_init(struct nvmet_rdma *t)
{
	t->tx_owner.name = "nvmet-rdma-read";
	t->tx_owner.release = tx_release;
	t->txo.owner = &t->tx_owner;
	t->txo.hold = tx_hold;
}

static void rsp_free(struct nvmet_rdma_rsp *r);

int nvmet_rdma_tx_reap(struct nvmet_rdma_queue *rq)
{
	int n = 0;
	for (unsigned i = 0; i < rq->nrsp && rq->tx_held; i++) {
		struct nvmet_rdma_rsp *r = &rq->rsps[i];
		if (r->state != NVMET_RDMA_RSP_TX_HELD || r->tx_refs)
			continue;
		rq->tx_held--;
		rsp_free(r);
		n++;
	}
	return n;
}

static void rsp_free(struct nvmet_rdma_rsp *r)
{
	struct nvmet_rdma_queue *rq = r->rq;

	if (r->tx_refs) {
		/* the NIC still gathers frames from the device buffer: it stays until they are done */
		if (r->state != NVMET_RDMA_RSP_TX_HELD) {
			r->state = NVMET_RDMA_RSP_TX_HELD;
			rq->tx_held++;
			rq->t->st.tx_deferred++;
		}
		return;
	}
	nvmet_rdma_buf_put(rq, &r->buf);
	r->state = NVMET_RDMA_RSP_FREE;
	r->wr_pending = 0;
	rq->busy--;
	/* a capsule that came while every rsp was busy goes now, in arrival order */
	if (rq->state != NVMET_RDMA_Q_CLOSING && rq->npending) {
		struct nvmet_rdma_rsp *n = rsp_get(rq);
		unsigned cap = rq->pending[0];
		uint32_t clen = rq->pending_len[0];
		rq->npending--;
		memmove(rq->pending, rq->pending + 1, rq->npending * sizeof(rq->pending[0]));
		memmove(rq->pending_len, rq->pending_len + 1, rq->npending * sizeof(rq->pending_len[0]));
		rsp_start(n, cap, clen);
	}
}

static void req_done(struct nvmet_req *req, void *arg);

/* Run r at the core with nsg segments (0 or 1: r->sg; the buffer's segment table instead when
 * it has one in use: a strided read buffer, or write data in the NIC's receive buffers). */
static void rsp_exec(struct nvmet_rdma_rsp *r, unsigned nsg)
{
	struct nvmet_rdma_queue *rq = r->rq;
	struct nvmet_data d = { .sg = &r->sg, .nsg = nsg, .len = r->len };
	if (nsg && r->nisg) {
		d.sg = r->isg;
		d.nsg = r->nisg;
	} else if (nsg && r->buf.sgt && r->buf.nsg) {
		d.sg = r->buf.sgt;
		d.nsg = r->buf.nsg;
	}
	r->state = NVMET_RDMA_RSP_EXEC;
	rq->at_core++;
	nvmet_exec(rq->q, &r->req, &r->sqe, &d, req_done, r);
}

/* Run r so that the core completes it with SGL Length Invalid without touching data: one
 * segment that cannot match the SGL length (one place for NVMe status). */
static void rsp_refuse(struct nvmet_rdma_rsp *r)
{
	r->sg.addr = (dma_addr_t){ 0 };
	r->sg.len = r->len ? 0 : 1;
	rsp_exec(r, 1);
}

/* r waits: for a data buffer in rq's bufq, for send room in its waitq (both in order). */
static void rsp_wait(struct nvmet_rdma_rsp *r, enum nvmet_rdma_rsp_state s)
{
	struct nvmet_rdma_queue *rq = r->rq;
	r->state = s;
	if (s == NVMET_RDMA_RSP_WAIT_BUF) {
		list_add_tail(&rq->bufq, &r->wait_node);
		rq->t->st.buf_waits++;
	} else {
		list_add_tail(&rq->waitq, &r->wait_node);
		rq->t->st.sq_waits++;
	}
}

/* A keyed command with its buffer: fetch write data by RDMA READ, or run a read. 0, or
 * -EAGAIN when the send queue has no room (the caller waits). */
static int rsp_keyed_go(struct nvmet_rdma_rsp *r)
{
	struct nvmet_rdma_queue *rq = r->rq;
	struct roce_send_wr w = { .wr_id = NVMET_RDMA_WR_ID(NVMET_RDMA_WR_READ, r->idx), .opcode = ROCE_WR_RDMA_READ,
				  .send_flags = ROCE_SEND_SIGNALED, .num_sge = 1 };

	r->sg.addr = r->buf.addr;
	r->sg.len = r->sgl.len;
	if (r->dir != DMA_TO_DEVICE) {
		rsp_exec(r, 1);
		return 0;
	}
	if (rq->sq_used >= rq->sq_max)
		return -EAGAIN;
	w.sg_list[0].addr = (uint64_t)(uintptr_t)r->buf.p;
	w.sg_list[0].length = r->sgl.len;
	w.sg_list[0].lkey = r->buf.lkey;
	w.remote_addr = r->sgl.addr;
	w.rkey = r->sgl.key;
	r->state = NVMET_RDMA_RSP_READING;
	if (roce_post_send(rq->qp, &w)) {
		nvmet_rdma_queue_close(rq, "RDMA READ not posted");
		return 0;
	}
	rq->sq_used++;
	r->wr_pending = 1;
	rq->rdma_reads++;
	rq->read_bytes += r->sgl.len;
	rq->t->st.rdma_reads++;
	rq->t->st.read_bytes += r->sgl.len;
	return 0;
}

/* Is sqe a fabrics Connect? */
static bool is_connect(const struct nvme_sqe *sqe)
{
	return sqe->opc == NVMF_OPC_FABRICS && nvmf_fctype(sqe) == NVMF_FCTYPE_CONNECT;
}

/* The capsule in receive buffer `capsule` (len bytes, at least an SQE) on rsp r. */
static void rsp_start(struct nvmet_rdma_rsp *r, unsigned capsule, uint32_t len)
{
	struct nvmet_rdma_queue *rq = r->rq;
	const uint8_t *cap = capsule_at(rq, capsule);
	enum nvmet_rdma_sgl_err e;

	r->capsule = capsule;
	r->capsule_len = len;
	r->wr_pending = 0;
	r->nisg = 0;
	memset(&r->buf, 0, sizeof(r->buf));
	if (rq->cfr && rq->cfr[capsule].n) {
		/* the SEND stayed in the NIC's buffers: the command read out of them (64 bytes);
		 * a capsule only partly there is copied whole into its DRAM buffer */
		if (rq->cfr[capsule].bytes == len) {
			nvmet_rdma_capsule_copy(rq, capsule, sizeof(struct nvme_sqe));
		} else {
			nvmet_rdma_capsule_copy(rq, capsule, rq->cfr[capsule].bytes);
			rq->t->st.capsule_copied++;
			nvmet_rdma_capsule_release(rq, capsule);
		}
	}
	memcpy(&r->sqe, cap, sizeof(r->sqe));
	r->dir = (uint8_t)nvmet_req_dir(rq->q, &r->sqe);
	r->len = nvmet_req_data_len(&r->sqe);
	e = nvmet_rdma_sgl_parse(cap, len - (uint32_t)sizeof(struct nvme_sqe), r->dir == DMA_TO_DEVICE,
				 NVMET_RDMA_MAX_XFER, &r->sgl);
	if (nvmet_queue_qid(rq->q) < 0 &&
	    (!is_connect(&r->sqe) || e != NVMET_RDMA_SGL_OK || r->sgl.len != NVMF_CONNECT_DATA_LEN)) {
		/* not Connected yet: nothing is committed (no buffer, no READ); the core
		 * answers (Command Sequence Error, or the Connect's own checks) */
		r->len = 0;
		memset(&r->sgl, 0, sizeof(r->sgl));
		return rsp_exec(r, 0);
	}
	if (e == NVMET_RDMA_SGL_BAD_TYPE)
		return rsp_exec(r, 0); /* the core answers SGL Descriptor Type Invalid (or Length) */
	if (e != NVMET_RDMA_SGL_OK || r->sgl.len != r->len) {
		rq->t->st.sgl_refused++;
		return rsp_refuse(r);
	}
	switch (r->sgl.kind) {
	case NVMET_RDMA_SGL_NONE:
		return rsp_exec(r, 0);
	case NVMET_RDMA_SGL_INLINE:
		/* in-capsule data used where it landed, the NIC's buffers when the drive may read
		 * them there: the buffer is posted again after done */
		nvmet_rdma_capsule_place(r, (uint32_t)sizeof(struct nvme_sqe) + r->sgl.off, r->sgl.len);
		r->sg.addr = dma_addr_host(cap + sizeof(struct nvme_sqe) + r->sgl.off);
		r->sg.len = r->sgl.len;
		rq->t->st.inline_writes++;
		rq->t->st.inline_bytes += r->sgl.len;
		return rsp_exec(r, 1);
	case NVMET_RDMA_SGL_KEYED:
		/* behind the queue's earlier commands that wait for a buffer, never past them */
		if (!list_empty(&rq->bufq) || nvmet_rdma_place(r))
			return rsp_wait(r, NVMET_RDMA_RSP_WAIT_BUF);
		if (rsp_keyed_go(r))
			rsp_wait(r, NVMET_RDMA_RSP_WAIT_READ);
		return;
	}
}

void nvmet_rdma_capsule(struct nvmet_rdma_queue *rq, unsigned i, uint32_t len)
{
	struct nvmet_rdma_rsp *r;

	rq->capsules++;
	rq->t->st.capsules++;
	if (rq->state == NVMET_RDMA_Q_CLOSING || i >= rq->depth)
		return;
	if (len < sizeof(struct nvme_sqe)) {
		rq->t->st.short_capsules++;
		log_warn("rdma: QP %#x: a capsule of %u bytes (shorter than a command): closing the queue",
			 roce_qp_num(rq->qp), len);
		nvmet_rdma_queue_close(rq, "short capsule");
		return;
	}
	if (!(r = rsp_get(rq))) {
		/* every rsp is still sending an earlier response: bounded by the receive buffers */
		rq->pending[rq->npending] = i;
		rq->pending_len[rq->npending++] = len;
		return;
	}
	rsp_start(r, i, len);
}

/* The response of r: RDMA WRITE of the read data (if any), then the CQE by SEND (with
 * Invalidate when the host asked). 0, or -EAGAIN without send room. */
static int rsp_respond(struct nvmet_rdma_rsp *r)
{
	struct nvmet_rdma_queue *rq = r->rq;
	struct roce_send_wr w = { .send_flags = ROCE_SEND_SIGNALED, .num_sge = 1 };
	uint32_t n = 0;
	bool data = r->dir == DMA_FROM_DEVICE && r->sgl.kind == NVMET_RDMA_SGL_KEYED && r->buf.p && r->req.xfer_len;

	if (data)
		n = r->req.xfer_len < r->sgl.len ? r->req.xfer_len : r->sgl.len;
	if (rq->sq_used + (data ? 2u : 1u) > rq->sq_max)
		return -EAGAIN;
	r->state = NVMET_RDMA_RSP_SENDING;
	if (data) {
		w.wr_id = NVMET_RDMA_WR_ID(NVMET_RDMA_WR_WRITE, r->idx);
		w.opcode = ROCE_WR_RDMA_WRITE;
		w.sg_list[0].addr = (uint64_t)(uintptr_t)r->buf.p;
		w.sg_list[0].length = n;
		w.sg_list[0].lkey = r->buf.lkey;
		w.remote_addr = r->sgl.addr;
		w.rkey = r->sgl.key;
		if (roce_post_send(rq->qp, &w))
			goto fail;
		rq->sq_used++;
		r->wr_pending++;
		rq->rdma_writes++;
		rq->write_bytes += n;
		rq->t->st.rdma_writes++;
		rq->t->st.write_bytes += n;
	}
	memcpy(cqe_at(rq, r->idx), &r->req.cqe, sizeof(struct nvme_cqe));
	memset(&w, 0, sizeof(w));
	w.wr_id = NVMET_RDMA_WR_ID(NVMET_RDMA_WR_SEND, r->idx);
	w.opcode = ROCE_WR_SEND;
	w.send_flags = ROCE_SEND_SIGNALED;
	w.num_sge = 1;
	w.sg_list[0].addr = (uint64_t)(uintptr_t)cqe_at(rq, r->idx);
	w.sg_list[0].length = sizeof(struct nvme_cqe);
	w.sg_list[0].lkey = roce_mr_lkey(rq->mr);
	if (r->sgl.kind == NVMET_RDMA_SGL_KEYED && r->sgl.invalidate) {
		w.opcode = ROCE_WR_SEND_WITH_INV;
		w.invalidate_rkey = r->sgl.key;
		rq->send_invs++;
		rq->t->st.send_invs++;
	}
	if (roce_post_send(rq->qp, &w))
		goto fail;
	rq->sq_used++;
	r->wr_pending++;
	rq->sends++;
	rq->t->st.responses++;
	return 0;
fail:
	if (!r->wr_pending)
		rsp_free(r);
	nvmet_rdma_queue_close(rq, "response not posted");
	return 0;
}

static void req_done(struct nvmet_req *req, void *arg)
{
	struct nvmet_rdma_rsp *r = arg;
	struct nvmet_rdma_queue *rq = r->rq;
	(void)req;

	rq->at_core--;
	/* the drive has read the write data: the NIC's receive buffers go back */
	if (r->dir == DMA_TO_DEVICE && r->buf.frags)
		nvmet_rdma_place_release_frags(rq, &r->buf);
	nvmet_rdma_capsule_release(rq, r->capsule);
	if (rq->state == NVMET_RDMA_Q_CLOSING) {
		rsp_free(r);
		return;
	}
	/* the capsule (and its in-capsule data) is no longer needed: a credit back to the host */
	if (nvmet_rdma_post_recv(rq, r->capsule)) {
		rsp_free(r);
		nvmet_rdma_queue_close(rq, "receive not posted");
		return;
	}
	if (!list_empty(&rq->waitq) || rsp_respond(r))
		rsp_wait(r, NVMET_RDMA_RSP_WAIT_SQ);
}

void nvmet_rdma_send_done(struct nvmet_rdma_queue *rq, const struct roce_wc *wc)
{
	unsigned kind = (unsigned)(wc->wr_id >> 32), idx = (uint32_t)wc->wr_id;
	struct nvmet_rdma_rsp *r;

	if (idx >= rq->nrsp || kind < NVMET_RDMA_WR_READ || kind > NVMET_RDMA_WR_SEND)
		return;
	r = &rq->rsps[idx];
	if (rq->sq_used)
		rq->sq_used--;
	rq->sq_done++;  /* the send queue moves (nvmet_rdma_poll's stall check) */
	if (!r->wr_pending)
		return;
	r->wr_pending--;
	if (kind == NVMET_RDMA_WR_READ && r->state == NVMET_RDMA_RSP_READING) {
		/* the host's write data is in: run the command, its segments the NIC's receive
		 * buffers where they lie (or the buffer they were copied into) */
		if (wc->status != ROCE_WC_SUCCESS || rq->state == NVMET_RDMA_Q_CLOSING) {
			rsp_free(r);
		} else {
			nvmet_rdma_place_write_ready(r);
			rsp_exec(r, 1);
		}
		return;
	}
	if (!r->wr_pending && r->state == NVMET_RDMA_RSP_SENDING)
		rsp_free(r);
}

int nvmet_rdma_resume(struct nvmet_rdma_queue *rq)
{
	int work = 0;

	/* send room first: these rsps hold the buffers the ones in bufq wait for, so they never
	 * wait behind them (they would wait for ever once every buffer of the host is theirs) */
	while (!list_empty(&rq->waitq) && rq->state != NVMET_RDMA_Q_CLOSING) {
		struct nvmet_rdma_rsp *r = container_of(rq->waitq.next, struct nvmet_rdma_rsp, wait_node);
		int rc;
		list_del(&r->wait_node);
		rc = r->state == NVMET_RDMA_RSP_WAIT_SQ ? rsp_respond(r) : rsp_keyed_go(r);
		if (rc) {
			/* still no send room: first again, arrival order kept */
			list_add_head(&rq->waitq, &r->wait_node);
			break;
		}
		rq->t->st.resumed++;
		work++;
	}
	/* then the buffer waiters in order; one that got its buffer but finds no send room for
	 * its RDMA READ joins the send-room waiters (it no longer holds anyone up here) */
	while (!list_empty(&rq->bufq) && rq->state != NVMET_RDMA_Q_CLOSING) {
		struct nvmet_rdma_rsp *r = container_of(rq->bufq.next, struct nvmet_rdma_rsp, wait_node);
		if (nvmet_rdma_place(r))
			break;
		list_del(&r->wait_node);
		r->state = NVMET_RDMA_RSP_WAIT_READ;
		if (rsp_keyed_go(r))
			rsp_wait(r, NVMET_RDMA_RSP_WAIT_READ);
		rq->t->st.resumed++;
		work++;
	}
	return work;
}

void nvmet_rdma_drop_waiting(struct nvmet_rdma_queue *rq)
{
	struct list_node *qs[2] = { &rq->waitq, &rq->bufq };

	for (unsigned k = 0; k < 2; k++)
		while (!list_empty(qs[k])) {
			struct nvmet_rdma_rsp *r = container_of(qs[k]->next, struct nvmet_rdma_rsp, wait_node);
			list_del(&r->wait_node);
			rsp_free(r);
		}
}
