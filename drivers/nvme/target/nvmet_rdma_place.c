/*
 * nvmet_rdma_place.c - where the NVMe/RDMA transport puts a command's keyed payload: device
 * memory (an NVMe CMB published as P2P memory) for namespace I/O on a drive when the P2P
 * rules allow it, host DRAM otherwise, each fallback counted per reason and logged once per
 * direction, with the NVMe/TCP transport's reasons and names (nvmet_tcp.h,
 * nvmet_dram_reason.c). The decisions themselves are pci/p2p_placement.c's, reached through
 * the same mem_ops core/nvmet_boot.c gives the TCP transport:
 *
 *   host write  RDMA READ responses arrive by header split in the NIC's receive buffers in
 *               device memory and stay there: the command's MR has a sink (roce_mr_set_sink),
 *               so the RC completer hands each response's payload over as a reference to
 *               the NIC's buffer instead of copying it, and the NVMe Write's SGL gathers the
 *               pieces in place when the drive may read that memory (mops->reach: its own
 *               CMB; another device's only with nvmet.peer_sgl on). Otherwise they are copied
 *               into the command's device buffer (counted per reason, logged once). The
 *               buffers go back to the NIC when the Write completes (or the command goes),
 *               within a budget: a quarter of the NIC's receive buffers, a host address half
 *               of it, 1/n while n > 2 compete (or one command when it holds none); a write
 *               beyond it waits before its RDMA READ. 4 KiB of in-capsule data stays in the NIC's buffers the same way
 *               (the capsule MR's sink, a budget of its own). Host DRAM sees only headers
 *               and the 64-byte commands.
 *   host read   the drive writes into device memory the NIC may gather from (mops->alloc);
 *               the RDMA WRITE's packets take their payload from there (drivers/rdma sends
 *               a device-memory payload without a copy).
 *
 * A read buffer is strided when a segment table is free: one chunk per path-MTU packet of
 * the RDMA WRITE with NVMET_RDMA_CHUNK_GAP bytes behind each, the NVMe Read scattering into
 * the chunks (one segment each) and the MR strided the same way (roce_reg_mr_strided), so
 * each packet's pad and ICRC go in the gap behind its payload and the NIC gathers the
 * packet's payload and trailer as one piece: host DRAM carries only its headers.
 *
 * Each device buffer gets its own MR (local write) for the command's lifetime; a host
 * address holds at most NVMET_RDMA_HOST_DEVICE_MAX bytes of device memory.
 */
#include <errno.h>
#include <string.h>
#include "../../../lib/log.h"
#include "nvmet_rdma_priv.h"

LOG_MODULE_USE(nvmet);

void nvmet_rdma_set_placement(struct nvmet_rdma *t, const struct nvmet_tcp_mem_ops *mops, bool p2p)
{
	t->mops = mops;
	t->p2p_off = !p2p;
}

/* Device memory held by rq's host address (all its queues). */
static uint64_t host_dev_bytes(const struct nvmet_rdma_queue *rq)
{
	struct list_node *it;
	uint64_t n = 0;
	list_for_each(&rq->t->queues, it) {
		const struct nvmet_rdma_queue *o = container_of(it, struct nvmet_rdma_queue, node);
		if (o->peer == rq->peer)
			n += o->dev_bytes;
	}
	return n;
}

/* r's payload goes through DRAM: count it, say why once per direction and reason. */
static void dram_fallback(struct nvmet_rdma_rsp *r, enum nvmet_tcp_dram_reason why, const char *detail)
{
	struct nvmet_rdma *t = r->rq->t;
	bool write = r->dir == DMA_TO_DEVICE;

	t->st.dram_cmds[why]++;
	t->st.dram_bytes[why] += r->sgl.len;
	r->rq->dram_bytes += r->sgl.len;
	if (!t->reason_logged[write][why]) {
		t->reason_logged[write][why] = true; /* the counters say how often */
		log_info("rdma: %s payloads through host DRAM: %s%s%s", write ? "write" : "read",
			 nvmet_tcp_dram_reason_name(why), detail ? ": " : "", detail ? detail : "");
	}
}

/* For a read of len bytes on rq: the chunk size of a strided buffer (the QP's path MTU) and
 * a free segment table (*slot), or 0 for a contiguous buffer. */
static uint32_t stride_chunk(struct nvmet_rdma_queue *rq, uint32_t len, int *slot)
{
	struct nvmet_rdma *t = rq->t;
	struct roce_qp_attr a;
	struct roce_qp_init_attr init;
	uint32_t chunk;

	*slot = -1;
	if (!t->sgt || roce_query_qp(rq->qp, &a, &init))
		return 0;
	chunk = roce_mtu_bytes(a.path_mtu);
	if (chunk < NVMET_RDMA_MAX_XFER / NVMET_RDMA_SG_MAX || (len - 1) / chunk + 1 > NVMET_RDMA_SG_MAX)
		return 0;
	for (unsigned i = 0; i < NVMET_RDMA_SG_TABLES; i++)
		if (!t->sgt_used[i]) {
			t->sgt_used[i] = 1;
			*slot = (int)i;
			return chunk;
		}
	return 0;
}

/* NIC receive buffers a write of len bytes on rq holds when its data stays in place (one
 * per RDMA READ response packet), with *max the budget of all hosts; 0 when it cannot stay
 * (*reason says why): the NIC does not lend split receive buffers, or the responses are more
 * than a table holds or than the budget. */
static unsigned inplace_need(struct nvmet_rdma_queue *rq, uint32_t len, unsigned *max,
			     enum nvmet_tcp_dram_reason *reason)
{
	const struct netdev *nd = netdev_first();
	struct roce_qp_attr a;
	struct roce_qp_init_attr init;
	unsigned need;

	*reason = NVMET_TCP_DRAM_NIC_DRAM;
	if (!nd || !(nd->features & NETDEV_F_RX_SPLIT) || !nd->rx_bufs || !rq->t->fragt ||
	    roce_query_qp(rq->qp, &a, &init) || !roce_mtu_bytes(a.path_mtu))
		return 0;
	*reason = NVMET_TCP_DRAM_FRAGMENTS;
	need = (len - 1) / roce_mtu_bytes(a.path_mtu) + 1;
	*max = nd->rx_bufs / NVMET_RDMA_RX_HOLD_DIV;
	return need <= NVMET_RDMA_SG_MAX && need <= *max ? need : 0;
}

static unsigned rx_held(const struct nvmet_rdma_queue *o, unsigned unused)
{
	(void)unused;
	return o->rx_reserved;
}

/* NIC receive buffers reserved by rq's host address (all its queues). */
static unsigned host_rx(const struct nvmet_rdma_queue *rq)
{
	struct list_node *it;
	unsigned n = 0;
	list_for_each(&rq->t->queues, it) {
		const struct nvmet_rdma_queue *o = container_of(it, struct nvmet_rdma_queue, node);
		if (o->peer == rq->peer)
			n += o->rx_reserved;
	}
	return n;
}

/* A free segment table (and its fragment table), or -1. */
static int sgt_take(struct nvmet_rdma *t)
{
	for (unsigned i = 0; i < NVMET_RDMA_SG_TABLES; i++)
		if (!t->sgt_used[i]) {
			t->sgt_used[i] = 1;
			return (int)i;
		}
	return -1;
}

/* The completer hands over a piece of r's write data in the NIC's receive buffer (the MR's
 * sink, roce_mr_set_sink): kept when it continues the held bytes and within the reservation. */
static int write_frag_take(void *ctx, uint64_t off, struct netdev_frag *f)
{
	struct nvmet_rdma_rsp *r = ctx;
	struct nvmet_rdma_buf *b = &r->buf;
	struct nvmet_rdma_stats *st = &r->rq->t->st;

	if (!b->frags || off != b->frag_bytes || b->nfrags >= b->rx_reserved || b->nfrags >= NVMET_RDMA_SG_MAX ||
	    f->len > r->sgl.len - b->frag_bytes)
		return -ENOSPC;
	b->frags[b->nfrags++] = *f;
	b->frag_bytes += f->len;
	if (++st->rx_held > st->rx_held_peak)
		st->rx_held_peak = st->rx_held;
	return 0;
}

/* Device memory for r's payload, registered for the RC layer. A write's data is meant to stay
 * in the NIC's receive buffers (the MR's sink takes them, a segment table and a reservation of
 * NIC buffers go with it); the device memory takes what cannot. 0, -EAGAIN when the write
 * waits for a table or the NIC buffer budget (nothing held), or the DRAM reason with *why
 * (nothing held then). */
static int place_device(struct nvmet_rdma_rsp *r, const struct nvmet_bdev *bdev, enum nvmet_tcp_dram_reason *reason,
			const char **why)
{
	struct nvmet_rdma_queue *rq = r->rq;
	struct nvmet_rdma *t = rq->t;
	struct nvmet_rdma_buf *b = &r->buf;
	uint32_t len = r->sgl.len, chunk = 0, span = len;
	enum nvmet_tcp_dram_reason copy = NVMET_TCP_DRAM_NIC_DRAM;
	unsigned need = 0, max = 0;
	struct netdev_frag mem;
	int slot = -1, rc;

	if (r->dir == DMA_FROM_DEVICE && (chunk = stride_chunk(rq, len, &slot)))
		span = ((len - 1) / chunk + 1) * (chunk + NVMET_RDMA_CHUNK_GAP);
	if (r->dir == DMA_TO_DEVICE && (need = inplace_need(rq, len, &max, &copy))) {
		unsigned host = host_rx(rq);
		/* within the budget, a host beyond its share of it (half, 1/n while n > 2 host
		 * addresses compete) only while it holds nothing */
		if (t->rx_reserved + need > max ||
		    (host && host + need > max / nvmet_rdma_hosts_competing(rq, rx_held, 0)) ||
		    (slot = sgt_take(t)) < 0) {
			if (r->state != NVMET_RDMA_RSP_WAIT_BUF)
				t->st.rx_waits++;
			return -EAGAIN;
		}
	}
	if (host_dev_bytes(rq) + span > NVMET_RDMA_HOST_DEVICE_MAX) {
		*why = "the host holds its share of device memory";
		*reason = NVMET_TCP_DRAM_ALLOC;
		rc = -ENOMEM;
		goto fail_slot;
	}
	if ((rc = t->mops->alloc(bdev, span, &mem, why))) {
		*reason = rc == -ENOMEM ? NVMET_TCP_DRAM_ALLOC : rc == -EXDEV ? NVMET_TCP_DRAM_P2P_REFUSED
								: NVMET_TCP_DRAM_NO_CMB;
		goto fail_slot;
	}
	/* a write's data is read by the drive from there: in place only where it may */
	if (r->dir == DMA_TO_DEVICE && (rc = t->mops->reach(bdev, mem.provider, why))) {
		*reason = rc == -EXDEV ? NVMET_TCP_DRAM_P2P_REFUSED : NVMET_TCP_DRAM_NO_CMB;
		goto fail;
	}
	rc = chunk ? roce_reg_mr_strided(t->pd, mem.addr.bus, len, mem.addr, ROCE_ACCESS_LOCAL_WRITE, chunk,
					 NVMET_RDMA_CHUNK_GAP, &b->mr)
		   : roce_reg_mr(t->pd, mem.addr.bus, len, mem.addr, ROCE_ACCESS_LOCAL_WRITE, &b->mr);
	if (rc) {
		*why = "no memory region left";
		*reason = NVMET_TCP_DRAM_ALLOC;
		goto fail;
	}
	if (chunk) {
		t->st.p2p_strided++;
		/* the drive scatters the read into the chunks: one segment each */
		b->sgt = t->sgt[slot];
		b->sgt_slot = slot;
		for (uint32_t off = 0; off < len; off += chunk) {
			struct nvme_sg *sg = &b->sgt[b->nsg++];
			sg->addr = dma_addr_add(mem.addr, (uint64_t)(off / chunk) * (chunk + NVMET_RDMA_CHUNK_GAP));
			sg->len = len - off < chunk ? len - off : chunk;
		}
	}
	if (r->dir == DMA_FROM_DEVICE)
		roce_mr_set_tx_owner(b->mr, &t->txo, (uint64_t)(uintptr_t)r); /* held until the NIC sent it */
	if (need) {
		/* the READ responses stay where the NIC put them: handed over, not copied */
		roce_mr_set_sink(b->mr, write_frag_take, r);
		b->sink_on = true;
		b->sgt = t->sgt[slot];
		b->sgt_slot = slot;
		b->frags = t->fragt[slot];
		b->rx_reserved = need;
		t->rx_reserved += need;
		rq->rx_reserved += need;
	}
	b->copy_reason = (uint8_t)copy;
	b->p = (uint8_t *)(uintptr_t)mem.addr.bus;
	b->addr = mem.addr;
	b->size = span;
	b->lkey = roce_mr_lkey(b->mr);
	b->device = true;
	b->dev = mem;
	rq->dev_bytes += span;
	rq->p2p_bytes += len;
	if (r->dir == DMA_TO_DEVICE) {
		t->st.p2p_writes++;
		t->st.p2p_write_bytes += len;
	} else {
		t->st.p2p_reads++;
		t->st.p2p_read_bytes += len;
	}
	return 0;
fail:
	t->mops->free(&mem);
fail_slot:
	if (slot >= 0)
		t->sgt_used[slot] = 0;
	return rc;
}

int nvmet_rdma_place(struct nvmet_rdma_rsp *r)
{
	struct nvmet_rdma_queue *rq = r->rq;
	struct nvmet_rdma *t = rq->t;
	const struct nvmet_bdev *bdev = rq->q ? nvmet_req_bdev(rq->q, &r->sqe) : NULL;
	enum nvmet_tcp_dram_reason reason = NVMET_TCP_DRAM_NO_CMB;
	const char *why = NULL;
	int rc = 0;

	memset(&r->buf, 0, sizeof(r->buf));
	if (!bdev) /* not namespace I/O (Connect data, log pages...): DRAM, not a fallback */
		return nvmet_rdma_buf_get(rq, r->sgl.len, &r->buf);
	if (t->p2p_off)
		reason = NVMET_TCP_DRAM_OFF;
	else if (t->mops && ((rc = place_device(r, bdev, &reason, &why)) == 0 || rc == -EAGAIN))
		return rc; /* -EAGAIN: waits for the NIC buffer budget or a table, placed again when resumed */
	if ((rc = nvmet_rdma_buf_get(rq, r->sgl.len, &r->buf)))
		return rc; /* waits; placed again (and counted once) when resumed */
	dram_fallback(r, reason, why);
	return 0;
}

void nvmet_rdma_place_release_frags(struct nvmet_rdma_queue *rq, struct nvmet_rdma_buf *b)
{
	struct nvmet_rdma *t = rq->t;

	for (unsigned i = 0; i < b->nfrags; i++)
		netdev_frag_release(&b->frags[i]);
	t->st.rx_held -= b->nfrags;
	b->nfrags = 0;
	b->frag_bytes = 0;
	t->rx_reserved -= b->rx_reserved;
	rq->rx_reserved -= b->rx_reserved;
	b->rx_reserved = 0;
	if (b->mr && b->sink_on) {
		roce_mr_set_sink(b->mr, NULL, NULL);
		b->sink_on = false;
	}
}

/* Copy the held fragments into b's device buffer (counted CPU reads and writes) and give them
 * back. 0 or -EIO (a fragment shorter than it says: nothing should make that happen). */
static int frags_copy(struct nvmet_rdma_queue *rq, struct nvmet_rdma_buf *b)
{
	uint32_t off = 0;
	int rc = 0;

	for (unsigned i = 0; i < b->nfrags && !rc; i++) {
		if (netdev_frag_read(&b->frags[i], 0, b->p + off, b->frags[i].len))
			rc = -EIO;
		else
			dma_account_cpu(b->addr.cls, b->frags[i].len);
		off += b->frags[i].len;
	}
	nvmet_rdma_place_release_frags(rq, b);
	return rc;
}

/* May the drive behind bdev read the n fragments f in place? 0, or the reason. */
static int frags_reach(const struct nvmet_rdma *t, const struct nvmet_bdev *bdev, const struct netdev_frag *f,
		       unsigned n, enum nvmet_tcp_dram_reason *reason, const char **why)
{
	uint16_t provider = f[0].provider;

	for (unsigned i = 0; i < n; i++) {
		if (f[i].addr.cls != MEM_CLASS_DEVICE) {
			*reason = NVMET_TCP_DRAM_NIC_DRAM;
			*why = "the NIC received into host DRAM";
			return -EXDEV;
		}
		if (f[i].provider != provider) {
			/* one command reads one memory: the first address decides */
			*reason = NVMET_TCP_DRAM_P2P_REFUSED;
			*why = "fragments in two providers";
			return -EXDEV;
		}
	}
	*reason = NVMET_TCP_DRAM_P2P_REFUSED;
	return bdev && t->mops ? t->mops->reach(bdev, provider, why) : -ENODEV;
}

/* A write's data was copied out of the NIC's buffers: count it, say why once per reason. */
static void copy_counted(struct nvmet_rdma *t, enum nvmet_tcp_dram_reason why, const char *detail, uint32_t len)
{
	t->st.copy_cmds[why]++;
	t->st.copy_bytes[why] += len;
	if (!t->copy_logged[why]) {
		t->copy_logged[why] = true; /* the counters say how often */
		log_info("rdma: write payloads copied out of the NIC's receive buffers: %s%s%s",
			 nvmet_tcp_dram_reason_name(why), detail ? ": " : "", detail ? detail : "");
	}
}

void nvmet_rdma_place_write_ready(struct nvmet_rdma_rsp *r)
{
	struct nvmet_rdma_queue *rq = r->rq;
	struct nvmet_rdma *t = rq->t;
	struct nvmet_rdma_buf *b = &r->buf;
	enum nvmet_tcp_dram_reason why = (enum nvmet_tcp_dram_reason)b->copy_reason;
	const char *detail = NULL;

	b->nsg = 0;
	if (!b->device || r->dir != DMA_TO_DEVICE)
		return; /* a DRAM slot: the completer copied into it as always */
	if (b->frags && b->nfrags && b->frag_bytes == r->sgl.len) {
		const struct nvmet_bdev *bdev = rq->q ? nvmet_req_bdev(rq->q, &r->sqe) : NULL;
		if (frags_reach(t, bdev, b->frags, b->nfrags, &why, &detail) == 0) {
			/* the NVMe Write's SGL gathers the responses where the NIC put them */
			for (unsigned i = 0; i < b->nfrags; i++) {
				b->sgt[i].addr = b->frags[i].addr;
				b->sgt[i].len = b->frags[i].len;
			}
			b->nsg = b->nfrags;
			t->st.inplace_writes++;
			t->st.inplace_bytes += r->sgl.len;
			return;
		}
	} else if (b->frags) {
		why = b->frag_bytes ? NVMET_TCP_DRAM_FRAGMENTS : NVMET_TCP_DRAM_NIC_DRAM;
	}
	if (b->frags && frags_copy(rq, b))
		log_warn("rdma: QP %#x: a held fragment could not be read", roce_qp_num(rq->qp));
	copy_counted(t, why, detail, r->sgl.len);
}

/* --- in-capsule data left in place --- */

/* NIC receive buffers the capsules of all hosts may hold. */
static unsigned capsule_budget(void)
{
	const struct netdev *nd = netdev_first();
	return nd && (nd->features & NETDEV_F_RX_SPLIT) ? nd->rx_bufs / NVMET_RDMA_RX_CAPSULE_DIV : 0;
}

/* NIC receive buffers the capsules of rq's host address hold (all its queues). */
static unsigned host_capsule(const struct nvmet_rdma_queue *rq)
{
	struct list_node *it;
	unsigned n = 0;
	list_for_each(&rq->t->queues, it) {
		const struct nvmet_rdma_queue *o = container_of(it, struct nvmet_rdma_queue, node);
		if (o->peer == rq->peer)
			n += o->rx_capsule;
	}
	return n;
}

int nvmet_rdma_capsule_frag_take(void *ctx, uint64_t off, struct netdev_frag *f)
{
	struct nvmet_rdma_queue *rq = ctx;
	struct nvmet_rdma *t = rq->t;
	unsigned max = capsule_budget(), host;
	struct nvmet_rdma_cfrags *c;
	uint32_t in;

	if (!rq->cfr || rq->state == NVMET_RDMA_Q_CLOSING || t->p2p_off || !t->mops ||
	    off >= (uint64_t)rq->depth * rq->capsule_size)
		return -EINVAL;
	c = &rq->cfr[off / rq->capsule_size];
	in = (uint32_t)(off % rq->capsule_size);
	/* a command without data is copied (64 bytes, its buffer back to the NIC at once) */
	if (in != c->bytes || c->n >= NVMET_RDMA_CAPSULE_FRAGS || f->len > rq->capsule_size - in ||
	    (in == 0 && f->len <= sizeof(struct nvme_sqe)))
		return -ENOSPC;
	host = host_capsule(rq);
	if (t->rx_capsule >= max || (host && host + 1 > max / 2))
		return -ENOSPC;
	c->f[c->n++] = *f;
	c->bytes += f->len;
	t->rx_capsule++;
	rq->rx_capsule++;
	if (++t->st.rx_held > t->st.rx_held_peak)
		t->st.rx_held_peak = t->st.rx_held;
	return 0;
}

void nvmet_rdma_capsule_release(struct nvmet_rdma_queue *rq, unsigned i)
{
	struct nvmet_rdma_cfrags *c;

	if (!rq->cfr || i >= rq->depth)
		return;
	c = &rq->cfr[i];
	for (unsigned k = 0; k < c->n; k++)
		netdev_frag_release(&c->f[k]);
	rq->t->st.rx_held -= c->n;
	rq->t->rx_capsule -= c->n;
	rq->rx_capsule -= c->n;
	c->n = 0;
	c->bytes = 0;
}

void nvmet_rdma_capsule_copy(struct nvmet_rdma_queue *rq, unsigned i, uint32_t copy_len)
{
	const struct nvmet_rdma_cfrags *c = &rq->cfr[i];
	uint8_t *dst = rq->mem + (size_t)i * rq->capsule_size;
	uint32_t off = 0;

	for (unsigned k = 0; k < c->n && off < copy_len; k++) {
		uint32_t n = c->f[k].len < copy_len - off ? c->f[k].len : copy_len - off;
		if (netdev_frag_read(&c->f[k], 0, dst + off, n) == 0)
			dma_account_cpu(MEM_CLASS_HOST, n);
		off += n;
	}
}

void nvmet_rdma_capsule_place(struct nvmet_rdma_rsp *r, uint32_t off, uint32_t len)
{
	struct nvmet_rdma_queue *rq = r->rq;
	struct nvmet_rdma *t = rq->t;
	const struct nvmet_rdma_cfrags *c = rq->cfr ? &rq->cfr[r->capsule] : NULL;
	const struct nvmet_bdev *bdev = rq->q ? nvmet_req_bdev(rq->q, &r->sqe) : NULL;
	enum nvmet_tcp_dram_reason why = NVMET_TCP_DRAM_OFF;
	const char *detail = NULL;

	r->nisg = 0;
	if (!c || !c->n)
		return; /* the responder copied it into the capsule's DRAM buffer */
	if (bdev && len && off <= c->bytes && len <= c->bytes - off &&
	    frags_reach(t, bdev, c->f, c->n, &why, &detail) == 0) {
		/* the NVMe Write's segments: the pieces' bytes of [off, off + len) */
		uint32_t pos = 0, end = off + len;
		for (unsigned k = 0; k < c->n; pos += c->f[k++].len) {
			uint32_t a = off > pos ? off - pos : 0, b = end - pos < c->f[k].len ? end - pos : c->f[k].len;
			if (pos + c->f[k].len <= off || pos >= end)
				continue;
			r->isg[r->nisg].addr = dma_addr_add(c->f[k].addr, a);
			r->isg[r->nisg++].len = b - a;
		}
		t->st.inline_inplace++;
		t->st.inline_inplace_bytes += len;
		return;
	}
	if (bdev)
		copy_counted(t, why, detail, len);
	nvmet_rdma_capsule_copy(rq, r->capsule, c->bytes);
	t->st.capsule_copied++;
	nvmet_rdma_capsule_release(rq, r->capsule);
}

void nvmet_rdma_place_put(struct nvmet_rdma_queue *rq, struct nvmet_rdma_buf *b)
{
	nvmet_rdma_place_release_frags(rq, b);
	roce_dereg_mr(b->mr);
	if (rq->t->mops)
		rq->t->mops->free(&b->dev);
	if (b->sgt)
		rq->t->sgt_used[b->sgt_slot] = 0;
	rq->dev_bytes -= b->size;
	memset(b, 0, sizeof(*b));
}
