/*
 * nvmet_rdma_place.c - where the NVMe/RDMA transport puts a command's keyed payload: device
 * memory (an NVMe CMB published as P2P memory) for namespace I/O on a drive when the P2P
 * rules allow it, host DRAM otherwise, each fallback counted per reason and logged once per
 * direction, with the NVMe/TCP transport's reasons and names (nvmet_tcp.h,
 * nvmet_dram_reason.c). The decisions themselves are pci/p2p_placement.c's, reached through
 * the same mem_ops core/nvmet_boot.c gives the TCP transport:
 *
 *   host write  RDMA READ responses arrive by header split in the NIC's receive buffers in
 *               device memory; the RC completer moves each packet's payload into the
 *               command's buffer, here device memory the drive may read in place (mops->
 *               reach), and the NVMe Write points there. Host DRAM sees only headers.
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

/* Device memory for r's payload, registered for the RC layer. 0, or the DRAM reason with
 * *why (nothing held then). */
static int place_device(struct nvmet_rdma_rsp *r, const struct nvmet_bdev *bdev, enum nvmet_tcp_dram_reason *reason,
			const char **why)
{
	struct nvmet_rdma_queue *rq = r->rq;
	struct nvmet_rdma *t = rq->t;
	struct nvmet_rdma_buf *b = &r->buf;
	uint32_t len = r->sgl.len, chunk = 0, span = len;
	struct netdev_frag mem;
	int slot = -1, rc;

	if (r->dir == DMA_FROM_DEVICE && (chunk = stride_chunk(rq, len, &slot)))
		span = ((len - 1) / chunk + 1) * (chunk + NVMET_RDMA_CHUNK_GAP);
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
	int rc;

	memset(&r->buf, 0, sizeof(r->buf));
	if (!bdev) /* not namespace I/O (Connect data, log pages...): DRAM, not a fallback */
		return nvmet_rdma_buf_get(rq, r->sgl.len, &r->buf);
	if (t->p2p_off)
		reason = NVMET_TCP_DRAM_OFF;
	else if (t->mops && place_device(r, bdev, &reason, &why) == 0)
		return 0;
	if ((rc = nvmet_rdma_buf_get(rq, r->sgl.len, &r->buf)))
		return rc; /* waits; placed again (and counted once) when resumed */
	dram_fallback(r, reason, why);
	return 0;
}

void nvmet_rdma_place_put(struct nvmet_rdma_queue *rq, struct nvmet_rdma_buf *b)
{
	roce_dereg_mr(b->mr);
	if (rq->t->mops)
		rq->t->mops->free(&b->dev);
	if (b->sgt)
		rq->t->sgt_used[b->sgt_slot] = 0;
	rq->dev_bytes -= b->size;
	memset(b, 0, sizeof(*b));
}
