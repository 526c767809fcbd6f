/*
 * nvme.c - the bus-independent NVMe host controller core: reset and enable with bounded
 * waits on CSTS.RDY, the admin queue, Identify, Number of Queues, I/O queue pairs,
 * command submission with PRPs or SGLs, completion with the Phase Tag, per-command
 * timeouts with Abort, controller fatal status, CMB setup, and DMA accounting.
 *
 * It reaches the hardware only through struct nvme_bus (nvme.h), so host unit tests run it
 * against a fake controller. Everything is polled; nothing here blocks without a deadline.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "../../lib/clock.h"
#include "../../lib/config_key.h"
#include "../../lib/log.h"
#include "nvme.h"
#include "nvme_priv.h"

LOG_MODULE_DEFINE(nvme);

#define RDY_POLL_NS (1ull * 1000000ull)   /* CSTS poll interval during reset/enable */
#define SYNC_POLL_NS (10ull * 1000ull)     /* pause between polls of a synchronous command */

struct nvme_ctrl *nvme_registered[NVME_MAX_CTRLS];
unsigned nvme_nregistered;

static const char *const state_names[NVME_CTRL_STATE_COUNT] = {
	[NVME_CTRL_NEW] = "new",       [NVME_CTRL_RESETTING] = "resetting",
	[NVME_CTRL_ENABLING] = "enabling", [NVME_CTRL_ADMIN] = "admin",
	[NVME_CTRL_LIVE] = "live",     [NVME_CTRL_FAILED] = "failed",
	[NVME_CTRL_SHUTDOWN] = "shutdown", [NVME_CTRL_REMOVED] = "removed",
};

/* Name of a controller state. */
const char *nvme_ctrl_state_name(enum nvme_ctrl_state s)
{
	return (unsigned)s < NVME_CTRL_STATE_COUNT ? state_names[s] : "?";
}

static void set_state(struct nvme_ctrl *c, enum nvme_ctrl_state s)
{
	if (c->state != s)
		log_debug("%s: %s -> %s", c->name, nvme_ctrl_state_name(c->state), nvme_ctrl_state_name(s));
	c->state = s;
}

static uint32_t rd32(struct nvme_ctrl *c, uint32_t off)
{
	return c->bus->read32(c->bus->ctx, off);
}
static uint64_t rd64(struct nvme_ctrl *c, uint32_t off)
{
	return c->bus->read64(c->bus->ctx, off);
}
static void wr32(struct nvme_ctrl *c, uint32_t off, uint32_t v)
{
	c->bus->write32(c->bus->ctx, off, v);
}
static void wr64(struct nvme_ctrl *c, uint32_t off, uint64_t v)
{
	c->bus->write64(c->bus->ctx, off, v);
}
static void pause_ns(struct nvme_ctrl *c, uint64_t ns)
{
	if (c->bus->delay)
		c->bus->delay(c->bus->ctx, ns);
}

/* Wait until CSTS.RDY == want, at most CAP.TO. CSTS.CFS while enabling fails at once. */
static int wait_ready(struct nvme_ctrl *c, bool want)
{
	uint64_t deadline = clock_now_ns() + c->rdy_timeout_ns;
	for (;;) {
		uint32_t csts = rd32(c, NVME_REG_CSTS);
		if (csts == 0xffffffffu)
			return -ENODEV;    /* the function stopped decoding: surprise removal */
		if (want && (csts & NVME_CSTS_CFS))
			return -EIO;
		if (!!(csts & NVME_CSTS_RDY) == want)
			return 0;
		if (clock_now_ns() >= deadline)
			return -ETIMEDOUT;
		pause_ns(c, RDY_POLL_NS);
	}
}

/* Clear CC.EN and wait for CSTS.RDY = 0. */
int nvme_ctrl_disable(struct nvme_ctrl *c)
{
	uint32_t cc = rd32(c, NVME_REG_CC);
	uint32_t csts = rd32(c, NVME_REG_CSTS);
	if (csts == 0xffffffffu)
		return -ENODEV;
	if (!(cc & NVME_CC_EN) && !(csts & NVME_CSTS_RDY))
		return 0;
	if ((cc & NVME_CC_EN) && !(csts & NVME_CSTS_RDY) && !(csts & NVME_CSTS_CFS)) {
		/* Clearing EN while RDY is still 0 after a set is undefined: let the enable finish. */
		if (wait_ready(c, true) == -ETIMEDOUT)
			log_warn("%s: CC.EN=1 but CSTS.RDY stayed 0; resetting anyway", c->name);
	}
	if (csts & NVME_CSTS_CFS)
		log_warn("%s: CSTS.CFS set (controller fatal status); resetting", c->name);
	wr32(c, NVME_REG_CC, cc & ~NVME_CC_EN);
	int rc = wait_ready(c, false);
	if (rc)
		log_err("%s: CSTS.RDY did not clear within CAP.TO (%llu ms): %d", c->name,
			(unsigned long long)(c->rdy_timeout_ns / 1000000), rc);
	return rc;
}

/* --- queue pairs --- */

static bool sq_in_cmb_policy = true;
CONFIG_BOOL(nvme_sq_in_cmb, "nvme.sq_in_cmb", &sq_in_cmb_policy, "on", NULL,
	    "I/O submission queues in the drive's CMB when CMBSZ.SQS allows (off: host DRAM)");

/* Policy: I/O SQs in the CMB when allowed. */
void nvme_set_sq_in_cmb(bool on)
{
	sq_in_cmb_policy = on;
}

void nvme_qpair_free(struct nvme_ctrl *c, struct nvme_qpair *q)
{
	const struct nvme_bus *b = c->bus;
	unsigned depth = q->ring.depth;
	if (q->ring.sq && !q->sq_in_cmb) /* a CMB carve stays reserved until the next reset */
		b->dma_free(b->ctx, (void *)q->ring.sq, depth * sizeof(struct nvme_sqe));
	if (q->ring.cq)
		b->dma_free(b->ctx, (void *)q->ring.cq, depth * sizeof(struct nvme_cqe));
	if (q->host_lists.cpu)
		b->dma_free(b->ctx, q->host_lists.cpu,
			    (size_t)depth * NVME_LIST_PAGES * NVME_PAGE_SIZE);
	if (q->cmb_lists && b->cmb_alloc && b->cmb_free)
		b->cmb_free(b->ctx, q->cmb_lists_addr, q->cmb_lists_bytes);
	memset(q, 0, sizeof(*q));
}

/* Allocate the rings (and per-command list areas) of queue qid. */
static int qpair_alloc(struct nvme_ctrl *c, struct nvme_qpair *q, uint16_t qid, unsigned depth, bool lists)
{
	const struct nvme_bus *b = c->bus;
	void *sq, *cq, *hl = NULL;
	dma_addr_t hl_addr = { 0, MEM_CLASS_HOST };
	size_t list_bytes = NVME_LIST_PAGES * NVME_PAGE_SIZE;
	int rc = -ENOMEM;

	memset(q, 0, sizeof(*q));
	if (depth < 2 || depth > NVME_MAX_QDEPTH)
		return -EINVAL;
	q->ctrl = c;
	q->qid = qid;
	size_t sq_bytes = (depth * sizeof(struct nvme_sqe) + NVME_PAGE_SIZE - 1) & ~(size_t)(NVME_PAGE_SIZE - 1);
	if (qid && sq_in_cmb_policy && c->cmb.usable && c->cmb.info.sqs &&
	    c->cmb.reserved + sq_bytes <= c->cmb.size / 2) {
		/* I/O SQ in the controller's own CMB: carved from its start, before the CMB is
		 * published as P2P memory (the provider begins after c->cmb.reserved). */
		sq = c->cmb.cpu + c->cmb.reserved;
		q->sq_addr = dma_addr_device(c->cmb.bus + c->cmb.reserved);
		c->cmb.reserved += sq_bytes;
		c->cmb.sqs_in_cmb++;
		q->sq_in_cmb = true;
	} else if (!(sq = b->dma_alloc(b->ctx, depth * sizeof(struct nvme_sqe), &q->sq_addr))) {
		goto fail;
	}
	if (!(cq = b->dma_alloc(b->ctx, depth * sizeof(struct nvme_cqe), &q->cq_addr)))
		goto fail_sq;
	if (lists && !(hl = b->dma_alloc(b->ctx, depth * list_bytes, &hl_addr)))
		goto fail_cq;
	nvme_ring_init(&q->ring, sq, cq, (uint16_t)depth);
	if (hl)
		q->host_lists = (struct nvme_list_mem){ hl, hl_addr, list_bytes };
	/* every slot's host list is hl + i * list_bytes (a multiple of 16): one test for all */
	q->sgl_lists = qid != 0 && hl && list_bytes >= NVME_PAGE_SIZE && !(hl_addr.bus & 15);
	/* (Identify Controller, SGLS and MDTS, is read before the I/O queues at every bring-up) */
	q->lean_max = !q->sgl_lists || (c->sgls & NVME_SGLS_SUPPORTED_MASK) != NVME_SGLS_BYTE ? 0
		      : c->max_xfer ? c->max_xfer : UINT64_MAX;
	q->sq_db = nvme_sq_doorbell(qid, c->dstrd);
	q->cq_db = nvme_cq_doorbell(qid, c->dstrd);

	/* depth - 1 command IDs: the ring never holds more */
	for (unsigned i = 0; i < depth - 1; i++) {
		struct nvme_cmd *cmd = &q->cmds[i];
		cmd->cid = (uint16_t)i;
		if (hl) {
			cmd->host_list_cpu = (uint8_t *)hl + i * list_bytes;
			cmd->host_list_bus = dma_addr_add(hl_addr, i * list_bytes).bus;
		}
		q->free_cids[q->nfree++] = (uint16_t)(depth - 2 - i); /* pop order 0, 1, 2... */
	}
	return 0;

fail_cq:
	b->dma_free(b->ctx, cq, depth * sizeof(struct nvme_cqe));
fail_sq:
	if (!q->sq_in_cmb)
		b->dma_free(b->ctx, sq, depth * sizeof(struct nvme_sqe));
fail:
	memset(q, 0, sizeof(*q));
	return rc;
}

/* --- submission and completion --- */

/* Is [bus, bus + len) inside the controller's own CMB? */
bool nvme_in_own_cmb(const struct nvme_ctrl *c, uint64_t bus, uint64_t len)
{
	const struct nvme_cmb *m = &c->cmb;
	if (m->scheme == NVME_CMB_NONE || m->size == 0)
		return false;
	return bus >= m->bus && bus - m->bus < m->size && len <= m->size - (bus - m->bus);
}

/* Give every slot of q a list area in the CMB (first command with CMB data): from the
 * attach's allocator (the published P2P provider) or carved from the CMB's start. */
static int cmb_lists_ensure(struct nvme_qpair *q)
{
	struct nvme_ctrl *c = q->ctrl;
	size_t list_bytes = NVME_LIST_PAGES * NVME_PAGE_SIZE;
	size_t bytes = (size_t)(q->ring.depth - 1) * list_bytes;
	dma_addr_t addr;
	uint8_t *cpu;

	if (q->cmb_lists)
		return 0;
	if (!c->cmb.info.lists || !q->host_lists.cpu)
		return -EOPNOTSUPP;
	if (c->bus->cmb_alloc) {
		void *p;
		if (c->bus->cmb_alloc(c->bus->ctx, bytes, &addr, &p))
			return -ENOMEM;
		cpu = p;
	} else {
		if (c->cmb.reserved + bytes > c->cmb.size / 2)
			return -ENOMEM;
		addr = dma_addr_device(c->cmb.bus + c->cmb.reserved);
		cpu = c->cmb.cpu + c->cmb.reserved;
		c->cmb.reserved += bytes;
	}
	if (!nvme_in_own_cmb(c, addr.bus, bytes)) {
		if (c->bus->cmb_free)
			c->bus->cmb_free(c->bus->ctx, addr, bytes);
		return -EINVAL;
	}
	q->cmb_list_area = (struct nvme_list_mem){ cpu, addr, list_bytes };
	q->cmb_lists_addr = addr;
	q->cmb_lists_bytes = bytes;
	q->cmb_lists = true;
	return 0;
}

_Static_assert(sizeof(struct nvme_cmd) == 64, "a slot's address from its ID is one shift");

/* Slot cid's list area in base (the queue's host or CMB lists: one area of NVME_LIST_PAGES
 * pages per slot, in slot order, as qpair_alloc and cmb_lists_ensure lay them out); cpu
 * NULL when base has none. */
static inline struct nvme_list_mem slot_list(const struct nvme_list_mem *base, uint16_t cid)
{
	const size_t stride = NVME_LIST_PAGES * NVME_PAGE_SIZE;
	if (!base->cpu)
		return (struct nvme_list_mem){ NULL, base->addr, 0 };
	return (struct nvme_list_mem){ (uint8_t *)base->cpu + (size_t)cid * stride,
				       dma_addr_add(base->addr, (uint64_t)cid * stride), stride };
}

static int map_data_general(struct nvme_qpair *q, struct nvme_cmd *slot, const struct nvme_request *rq,
			    struct nvme_sqe *sqe);

/* Describe the data of rq into sqe using slot's list areas. lazy: rq is the caller's local
 * built from constants and arguments (nvme_submit_rw): the general path gets a copy, so that
 * rq itself never leaves this function and the compiler keeps its fields in registers
 * instead of writing the struct out for every command. */
static inline __attribute__((always_inline)) int map_data(struct nvme_qpair *q, struct nvme_cmd *slot,
							  const struct nvme_request *rq, struct nvme_sqe *sqe,
							  bool lazy)
{
	struct nvme_ctrl *c = q->ctrl;

	/* The two fast shapes below share their queue's terms: an I/O queue whose slots have
	 * host lists fit for a Last Segment (q->sgl_lists, fixed for the queue's life), a drive
	 * that takes SGLs, a command that does not ask for PRPs: tested once for both. */
	const unsigned sgls = c->sgls & NVME_SGLS_SUPPORTED_MASK;
	const unsigned n = rq->nsg;
	if (!q->sgl_lists || !sgls || rq->force_prp)
		goto general;
	const struct nvme_cmb *m = &c->cmb;
	const bool cmb = m->scheme != NVME_CMB_NONE && m->size != 0;
	const uint64_t lo = m->bus, hi = m->bus + m->size;

	/* One entry, outside the CMB (a read into one buffer): SGL1 is a Data Block descriptor,
	 * no list. Anything this does not take (a bad length, the CMB, a misaligned entry on a
	 * dword-SGL drive) goes the general way below, which answers it. */
	if (n == 1) {
		const struct nvme_sg *e = &rq->sg[0];
		bool near_cmb = cmb && e->addr.bus < hi && e->addr.bus + e->len > lo;
		bool misaligned = sgls == NVME_SGLS_DWORD_ALIGN && ((e->addr.bus & 3) || (e->len & 3));
		if (e->len != 0 && (!rq->sgl_total || e->len == rq->sgl_total) && (!c->max_xfer || e->len <= c->max_xfer) &&
		    !near_cmb && !misaligned) {
			sqe->dptr.sgl1.addr = le64_make(e->addr.bus);
			sqe->dptr.sgl1.len = le32_make(e->len);
			sqe->dptr.sgl1.id = NVME_SGL_ID(NVME_SGL_TYPE_DATA_BLOCK); /* rsvd: the SQE is zeroed */
			sqe->flags |= NVME_SQE_PSDT_SGL;
			slot->data_bytes = e->len;
			slot->data_cls = (uint8_t)e->addr.cls;
			slot->list_bytes = 0;
			slot->list_cls = MEM_CLASS_HOST;
			slot->dir = (uint8_t)rq->dir;
			return 0;
		}
		goto general;
	}

	/* The common gather: a few NIC buffers outside the CMB, one memory class, on a
	 * byte-granular SGL drive: one walk checks each entry and writes its Data Block into the
	 * slot's host list, SGL1 is the Last Segment over them. Anything it does not take (an
	 * empty entry, mixed memories, the CMB near, a sum that is not the command's, more than
	 * a list page) goes the general way below, which answers it (and writes the list again:
	 * nothing reads it before the doorbell). */
	if (n >= 2 && n <= NVME_PAGE_SIZE / sizeof(struct nvme_sgl_desc) && sgls == NVME_SGLS_BYTE) {
		const struct nvme_sg *sg = rq->sg;
		const int cls0 = sg[0].addr.cls;
		volatile struct nvme_sgl_desc *d = slot->host_list_cpu; /* (q->sgl_lists: there, aligned) */
		uint64_t total = 0;
		unsigned i = 0;
		if (!cmb && rq->checked && rq->sgl_total) {
			/* (a list its caller vouches for: summed to sgl_total, no empty entry, one
			 * memory class, nvme_request.checked: the walk only writes the list) */
			for (; i < n; i++)
				nvme_sgl_desc_put(&d[i], sg[i].addr.bus, sg[i].len, NVME_SGL_TYPE_DATA_BLOCK);
			total = rq->sgl_total;
		} else if (!cmb) {
			/* (no CMB: the same walk without its range test, the common drive) */
			for (; i < n; i++) {
				const uint64_t bus = sg[i].addr.bus;
				const uint32_t len = sg[i].len;
				if (len == 0 || (int)sg[i].addr.cls != cls0)
					break;
				nvme_sgl_desc_put(&d[i], bus, len, NVME_SGL_TYPE_DATA_BLOCK);
				total += len;
			}
		} else {
			for (; i < n; i++) {
				const uint64_t bus = sg[i].addr.bus;
				const uint32_t len = sg[i].len;
				if (len == 0 || (int)sg[i].addr.cls != cls0 || (bus < hi && bus + len > lo))
					break;
				nvme_sgl_desc_put(&d[i], bus, len, NVME_SGL_TYPE_DATA_BLOCK);
				total += len;
			}
		}
		if (i == n && (!rq->sgl_total || total == rq->sgl_total) && (!c->max_xfer || total <= c->max_xfer)) {
			nvme_sgl_desc_put(&sqe->dptr.sgl1, slot->host_list_bus, n * (uint32_t)sizeof(*d),
					  NVME_SGL_TYPE_LAST_SEGMENT);
			sqe->flags |= NVME_SQE_PSDT_SGL;
			slot->data_bytes = total;
			slot->data_cls = (uint8_t)cls0;
			slot->list_bytes = n * (uint32_t)sizeof(*d);
			slot->list_cls = (uint8_t)q->host_lists.addr.cls;
			slot->dir = (uint8_t)rq->dir;
			return 0;
		}
	}
general:
	if (lazy) {
		const struct nvme_request copy = *rq;
		return map_data_general(q, slot, &copy, sqe);
	}
	return map_data_general(q, slot, rq, sqe);
}

/* map_data past its one-entry case: several entries, the CMB, PRPs (out of line: a read
 * into one buffer stays lean). */
static __attribute__((noinline)) int map_data_general(struct nvme_qpair *q, struct nvme_cmd *slot,
						      const struct nvme_request *rq, struct nvme_sqe *sqe)
{
	struct nvme_ctrl *c = q->ctrl;
	unsigned own = 0;
	size_t list_bytes = 0;
	int rc;

	/* one walk over the entries for what the checks below need: their sum, one memory
	 * class, in the CMB or not (the same checks, in the same order, as separate walks) */
	const struct nvme_cmb *m = &c->cmb;
	bool cmb = m->scheme != NVME_CMB_NONE && m->size != 0, empty = false, mixed = false, straddles = false;
	int64_t total = 0;
	if (rq->nsg > NVME_MAX_SG)
		return -EINVAL;
	for (unsigned i = 0; i < rq->nsg; i++) {
		const struct nvme_sg *e = &rq->sg[i];
		empty |= e->len == 0;
		total += e->len; /* <= 512 entries of < 4 GiB: no overflow */
		mixed |= e->addr.cls != rq->sg[0].addr.cls;
		if (cmb && e->addr.bus < m->bus + m->size && e->addr.bus + e->len > m->bus) {
			/* touches the CMB's BAR range: inside it, or across its end */
			if (nvme_in_own_cmb(c, e->addr.bus, e->len))
				own++;
			else
				straddles = true;
		}
	}
	if (empty)
		return -EINVAL;
	if (rq->sgl_total && (uint64_t)total != rq->sgl_total) {
		log_debug("%s: scatter list holds %lld bytes, command moves %llu", c->name,
			  (long long)total, (unsigned long long)rq->sgl_total);
		return -EINVAL;
	}
	if (total > c->max_xfer && c->max_xfer)
		return -E2BIG;
	int cls = rq->sg[0].addr.cls;
	if (mixed) {
		log_debug("%s: command mixes host and device memory: refused", c->name);
		return -EINVAL;
	}
	if (straddles)
		return -EINVAL; /* straddles the CMB's end */
	if (own && own != rq->nsg) {
		log_debug("%s: command mixes the CMB and other memory: refused", c->name);
		return -EINVAL;
	}
	const struct nvme_list_mem host_list = slot_list(&q->host_lists, slot->cid);
	struct nvme_list_mem cmb_list;
	const struct nvme_list_mem *list = &host_list;
	if (own) {
		if (!c->cmb.usable) {
			/* The CMSE=0 trap: the drive would complete with success and move nothing. */
			log_warn("%s: data in the CMB refused: %s", c->name,
				 c->cmb.refused ? c->cmb.refused : "CMB not enabled");
			return -EINVAL;
		}
		if (cmb_lists_ensure(q) == 0) {
			cmb_list = slot_list(&q->cmb_list_area, slot->cid);
			list = &cmb_list; /* lists must be where the data is (the first address decides) */
		} else {
			list = NULL;      /* only list-free commands (one SGL data block, <= 2 PRPs) */
		}
	}

	bool sgl = !rq->force_prp && q->qid != 0 && (c->sgls & NVME_SGLS_SUPPORTED_MASK);
	if (sgl) {
		struct nvme_sgl_desc d;
		rc = nvme_sgl_build_summed(rq->sg, rq->nsg, NVME_PAGE_SIZE,
					   (c->sgls & NVME_SGLS_SUPPORTED_MASK) == NVME_SGLS_DWORD_ALIGN, list, &d,
					   &list_bytes);
		if (rc == 0) {
			sqe->dptr.sgl1 = d;
			sqe->flags |= NVME_SQE_PSDT_SGL;
			goto mapped;
		}
		if (!nvme_prp_possible(rq->sg, rq->nsg, NVME_PAGE_SIZE))
			return rc;
	}
	uint64_t prp1, prp2;
	rc = nvme_prp_build(rq->sg, rq->nsg, NVME_PAGE_SIZE, list, &prp1, &prp2, &list_bytes);
	if (rc)
		return rc;
	sqe->dptr.prp1 = le64_make(prp1);
	sqe->dptr.prp2 = le64_make(prp2);
mapped:
	slot->data_bytes = (uint64_t)total;
	slot->data_cls = (uint8_t)cls;
	slot->list_bytes = (uint32_t)list_bytes;
	slot->list_cls = (uint8_t)(list ? list->addr.cls : MEM_CLASS_HOST);
	slot->dir = (uint8_t)rq->dir;
	return 0;
}

/* Submit a command: nvme_submit's body, inline in nvme_submit and in nvme_submit_rw (where
 * the request's fields are constants and the checks on them fold away). */
static inline __attribute__((always_inline)) int submit_one(struct nvme_qpair *q, const struct nvme_request *rq,
							     nvme_done_fn done, void *arg, bool lazy)
{
	struct nvme_ctrl *c = q->ctrl;
	struct nvme_sqe local, *sqe;
	int rc;

	if (__builtin_expect(!c || c->state != NVME_CTRL_LIVE, 0)) {
		/* (live: every queue takes commands; one test for the three below) */
		if (!c || c->state == NVME_CTRL_FAILED)
			return -EIO;
		if (c->state == NVME_CTRL_REMOVED)
			return -ENODEV;
		if (q->qid)
			return c->in_reset ? -EAGAIN : -ENODEV; /* resetting: retry later */
	}
	if (q->nfree == 0 || nvme_ring_space(&q->ring) == 0)
		return -EBUSY;
	struct nvme_cmd *slot = &q->cmds[q->free_cids[q->nfree - 1]];

	/* an SQ in host memory gets the entry where it goes (the doorbell below publishes it, after
	 * the barrier); one in the CMB gets it in dword stores from a copy (nvme_ring_push) */
	sqe = q->sq_in_cmb ? &local : (struct nvme_sqe *)(uintptr_t)&q->ring.sq[q->ring.sq_tail];
	memset(sqe, 0, sizeof(*sqe));
	sqe->opc = rq->opc;
	sqe->cid = le16_make(slot->cid);
	sqe->nsid = le32_make(rq->nsid);
	sqe->cdw10 = le32_make(rq->cdw10);
	sqe->cdw11 = le32_make(rq->cdw11);
	sqe->cdw12 = le32_make(rq->cdw12);
	sqe->cdw13 = le32_make(rq->cdw13);
	sqe->cdw14 = le32_make(rq->cdw14);
	sqe->cdw15 = le32_make(rq->cdw15);
	if (rq->sg && rq->nsg) {
		if ((rc = map_data(q, slot, rq, sqe, lazy)))
			return rc; /* (nothing committed: the slot stays free) */
		/* (map_data set data_bytes and list_bytes on every success) */
	} else {
		slot->data_bytes = 0;
		slot->list_bytes = 0;
	}
	if (!rq->count_payload)
		slot->data_bytes = 0; /* metadata (identify data, DSM ranges): not payload */

	q->nfree--;
	q->outstanding++;
	if ((rq->opc == NVME_CMD_WRITE || rq->opc == NVME_CMD_READ || rq->opc == NVME_CMD_WRITE_ZEROES) &&
	    q->qid && (rq->cdw12 & NVME_RW_FUA))
		c->st.fua++;
	if (rq->opc == NVME_CMD_FLUSH && q->qid)
		c->st.flushes_sent++;
	slot->state = NVME_CMD_ACTIVE;
	slot->opc = rq->opc;
	slot->done = done;
	slot->arg = arg;
	slot->deadline_ns = clock_now_ns() + c->cmd_timeout_ns;
	if (slot->deadline_ns < q->next_timeout_ns)
		q->next_timeout_ns = slot->deadline_ns;
	if (sqe == &local)
		nvme_ring_push(&q->ring, &local);
	else
		nvme_ring_advance(&q->ring);
	dma_account_cpu(q->sq_in_cmb ? MEM_CLASS_DEVICE : MEM_CLASS_HOST, sizeof(*sqe));
	if (slot->list_bytes)
		dma_account_cpu((enum mem_class)slot->list_cls, slot->list_bytes); /* the CPU wrote the list */
	__sync_synchronize(); /* SQE, lists and WC stores to the CMB drained before the doorbell */
	q->st.submitted++;
	wr32(c, q->sq_db, q->ring.sq_tail);
	return 0;
}

int nvme_submit(struct nvme_qpair *q, const struct nvme_request *rq, nvme_done_fn done, void *arg)
{
	return submit_one(q, rq, done, arg, false);
}

/* Where a checked Read/Write's entries lie against the controller's CMB, for
 * nvme_submit_rw's lean ways: RW_AWAY none touches its BAR range (or it has none), RW_IN_CMB
 * every one lies inside it (nvme_in_own_cmb), RW_GENERAL anything else (a mix of the CMB and
 * other memory, an entry across an end: the general way refuses them). */
enum rw_place { RW_GENERAL, RW_AWAY, RW_IN_CMB };

/* sg's rw_place: one walk, only on a drive with a CMB (sg checked: no entry empty). */
static inline __attribute__((always_inline)) enum rw_place sg_place(const struct nvme_ctrl *c,
								     const struct nvme_sg *sg, unsigned nsg)
{
	const struct nvme_cmb *m = &c->cmb;
	if (m->size == 0)
		return RW_AWAY; /* (also without a CMB: cmb_setup sets size only after scheme) */
	if (nsg == 1) {
		/* the walk's answer for one entry in two tests: its offset into the CMB (below the
		 * CMB it wraps, so one compare for both ends) */
		const uint64_t bus = sg[0].addr.bus, len = sg[0].len, off = bus - m->bus;
		if (off < m->size)
			return len <= m->size - off ? RW_IN_CMB : RW_GENERAL;
		return bus < m->bus && bus + len > m->bus ? RW_GENERAL : RW_AWAY;
	}
	unsigned near = 0, inside = 0;
	for (unsigned i = 0; i < nsg; i++) {
		const uint64_t bus = sg[i].addr.bus, len = sg[i].len;
		if (bus < m->bus + m->size && bus + len > m->bus) {
			/* touches the range (map_data_general's test); inside it as nvme_in_own_cmb
			 * says (bus - m->bus < m->size follows from the test above) */
			near++;
			inside += bus >= m->bus && len <= m->size - (bus - m->bus);
		}
	}
	return near == 0 ? RW_AWAY : inside == nsg ? RW_IN_CMB : RW_GENERAL;
}

/* Does a Read/Write of nsg entries its caller checked (nvme_request.checked: summed to
 * bytes, none empty, one memory class) go one of nvme_submit_rw's lean ways, whose answers
 * are those map_data and submit_one would give it without their tests, and which? (Its
 * caller's: a live controller.) Room in q (next, the tail's next entry, is not the head), 1
 * to bytes within the queue's lean_max (an I/O queue whose slots have host lists fit for SGL
 * segments on a byte-granular SGL drive, MDTS), at most one list page of entries (checked:
 * there are entries, sg is not NULL), and its entries away from the CMB (RW_AWAY) or all in
 * it (RW_IN_CMB, whose own terms rw_lean_in_cmb adds). Anything else (RW_GENERAL) goes the
 * general way, which answers it. */
static inline __attribute__((always_inline)) enum rw_place rw_lean(const struct nvme_qpair *q,
								    const struct nvme_ctrl *c,
								    const struct nvme_sg *sg, unsigned nsg,
								    uint64_t bytes, uint16_t next)
{
	if (q->nfree && next != q->ring.sq_head && bytes - 1 < q->lean_max &&
	    nsg - 1u < NVME_PAGE_SIZE / sizeof(struct nvme_sgl_desc))
		return sg_place(c, sg, nsg);
	return RW_GENERAL;
}

/* The terms of the lean way for data in the controller's own CMB (the CMB mode's read data)
 * beyond rw_lean's: CMB transfers enabled (usable: CMBMSC.CMSE read back set; without it no
 * CMB address goes to the drive), and the queue's CMB list areas set up (q->cmb_lists: the
 * general way's cmb_lists_ensure on the queue's first command with CMB data), 16-byte
 * aligned when a Last Segment goes there: data in the CMB has its SGL segment in the CMB too
 * (the drive answers "Invalid Use of CMB" to a mix of the two). */
static inline __attribute__((always_inline)) bool rw_lean_in_cmb(const struct nvme_qpair *q,
								  const struct nvme_ctrl *c, unsigned nsg)
{
	return c->cmb.usable && q->cmb_lists && (nsg == 1 || !(q->cmb_list_area.addr.bus & 15));
}

/* nvme_submit_rw past its lean ways: the nvme_request, through submit_one (out of line: the
 * lean way keeps its registers). */
static __attribute__((noinline)) int submit_rw_general(struct nvme_qpair *q, bool write, uint32_t nsid, uint64_t slba,
						       uint32_t cdw12, const struct nvme_sg *sg, unsigned nsg,
						       uint64_t bytes, bool checked, nvme_done_fn done, void *arg)
{
	/* what nvme_submit gets for a Read/Write, set field by field (no copy of a caller's
	 * request): map_data reads it through the pointer */
	const struct nvme_request rq = {
		.opc = write ? NVME_CMD_WRITE : NVME_CMD_READ,
		.nsid = nsid,
		.cdw10 = (uint32_t)slba,
		.cdw11 = (uint32_t)(slba >> 32),
		.cdw12 = cdw12,
		.sg = sg,
		.nsg = nsg,
		.sgl_total = bytes,
		.dir = write ? DMA_TO_DEVICE : DMA_FROM_DEVICE,
		.count_payload = true,
		.checked = checked,
	};
	return submit_one(q, &rq, done, arg, true);
}

/* rw_lean_submit's SQE (PSDT SGL, SGL1 one descriptor of sgl_type over sgl_len bytes at
 * sgl_addr, the rest zero) written straight into an SQ in device memory as eight aligned
 * quadword stores (as nvme_sgl_desc_put writes a list there), without building it in a local
 * first and copying it: the same 64 bytes as the SQE written in host memory. */
static inline __attribute__((always_inline)) void rw_sqe_put_qwords(volatile uint64_t *dst, uint8_t opc, uint16_t cid,
								     uint32_t nsid, uint64_t slba, uint32_t cdw12,
								     uint64_t sgl_addr, uint32_t sgl_len,
								     unsigned sgl_type)
{
	_Static_assert(offsetof(struct nvme_sqe, dptr) == 3 * 8 && offsetof(struct nvme_sqe, cdw10) == 5 * 8 &&
			       offsetof(struct nvme_sgl_desc, id) == 15,
		       "SQE layout: DPTR at quadword 3, CDW10 at quadword 5, the SGL Identifier in DPTR's last byte");
	uint64_t q[8];
	le64_store(&q[0], opc | (uint64_t)NVME_SQE_PSDT_SGL << 8 | (uint64_t)cid << 16 | (uint64_t)nsid << 32);
	le64_store(&q[3], sgl_addr);
	le64_store(&q[4], (uint64_t)sgl_len | (uint64_t)NVME_SGL_ID(sgl_type) << 56);
	le64_store(&q[5], slba);
	le64_store(&q[6], cdw12); /* CDW13 zero */
	dst[0] = q[0];
	dst[1] = 0, dst[2] = 0; /* CDW2, CDW3, MPTR */
	dst[3] = q[3], dst[4] = q[4], dst[5] = q[5], dst[6] = q[6];
	dst[7] = 0; /* CDW14, CDW15 */
}

/* A Read/Write that rw_lean (in_cmb false) or rw_lean_in_cmb (in_cmb true) let through, in
 * one pass straight into its SQE and list: the command, list and slot map_data and
 * submit_one would make of it (SGL1 one Data Block, or a Last Segment over the Data Blocks
 * in the slot's host list, or in its CMB list for data in the CMB). sq_dev: q->sq_in_cmb
 * (the caller's test; a constant where it can be, so that a way is built for its SQ). Always 0. */
static inline __attribute__((always_inline)) int rw_lean_submit(struct nvme_qpair *q, const struct nvme_rw_route *rt,
								 uint64_t slba, uint32_t cdw12, struct nvme_rw_data d,
								 uint64_t bytes, uint64_t now, void *arg, uint16_t next,
								 bool in_cmb, bool sq_dev)
{
	struct nvme_ctrl *c = q->ctrl;
	const struct nvme_sg *sg = d.sg;
	const unsigned nsg = d.nsg;
	const bool write = d.write;
	const uint32_t nsid = rt->nsid;
	const nvme_done_fn done = rt->done;
	const uint64_t deadline = now + c->cmd_timeout_ns;
	const uint16_t tail = q->ring.sq_tail;
	struct nvme_cmd *slot = &q->cmds[q->free_cids[--q->nfree]];
	const uint8_t opc = write ? NVME_CMD_WRITE : NVME_CMD_READ;
	uint32_t list_bytes = 0;
	/* (map_data_general's list class for data in the CMB, with a list or without) */
	uint8_t list_cls = in_cmb ? (uint8_t)q->cmb_list_area.addr.cls : MEM_CLASS_HOST;
	/* the entry at the tail (room checked: rw_lean; the doorbell below publishes it): in place
	 * in an SQ in host memory; in an SQ in the CMB in eight quadword stores, straight, once
	 * SGL1 is known (rw_sqe_put_qwords), whatever memory the data is in: no local copy built
	 * first and copied */
	const bool qwords = sq_dev;
	volatile uint64_t *const dst = (volatile uint64_t *)(uintptr_t)&q->ring.sq[tail];
	struct nvme_sqe *sqe = (struct nvme_sqe *)(uintptr_t)&q->ring.sq[tail];
	if (!qwords) {
		memset(sqe, 0, sizeof(*sqe));
		sqe->opc = opc;
		sqe->flags = NVME_SQE_PSDT_SGL;
		sqe->cid = le16_make(slot->cid);
		sqe->nsid = le32_make(nsid);
		sqe->cdw10 = le32_make((uint32_t)slba);
		sqe->cdw11 = le32_make((uint32_t)(slba >> 32));
		sqe->cdw12 = le32_make(cdw12);
	}
	if (nsg == 1) {
		/* SGL1 is the one Data Block: no list */
		if (qwords)
			rw_sqe_put_qwords(dst, opc, slot->cid, nsid, slba, cdw12, sg[0].addr.bus, sg[0].len,
					  NVME_SGL_TYPE_DATA_BLOCK);
		else
			nvme_sgl_desc_put(&sqe->dptr.sgl1, sg[0].addr.bus, sg[0].len, NVME_SGL_TYPE_DATA_BLOCK);
	} else {
		/* SGL1 is the Last Segment over the Data Blocks in the slot's list (its CMB list:
		 * slot_list's place for it, as map_data_general takes it) */
		const struct nvme_list_mem cl = in_cmb ? slot_list(&q->cmb_list_area, slot->cid)
						       : (struct nvme_list_mem){ NULL, { 0, MEM_CLASS_HOST }, 0 };
		volatile struct nvme_sgl_desc *ld = in_cmb ? cl.cpu : slot->host_list_cpu;
		for (unsigned i = 0; i < nsg; i++)
			nvme_sgl_desc_put(&ld[i], sg[i].addr.bus, sg[i].len, NVME_SGL_TYPE_DATA_BLOCK);
		list_bytes = nsg * (uint32_t)sizeof(*ld);
		if (!in_cmb)
			list_cls = (uint8_t)q->host_lists.addr.cls;
		const uint64_t list_bus = in_cmb ? cl.addr.bus : slot->host_list_bus;
		if (qwords)
			rw_sqe_put_qwords(dst, opc, slot->cid, nsid, slba, cdw12, list_bus, list_bytes,
					  NVME_SGL_TYPE_LAST_SEGMENT);
		else
			nvme_sgl_desc_put(&sqe->dptr.sgl1, list_bus, list_bytes, NVME_SGL_TYPE_LAST_SEGMENT);
	}
	slot->data_bytes = bytes;
	slot->data_cls = (uint8_t)sg[0].addr.cls;
	slot->list_bytes = list_bytes;
	slot->list_cls = list_cls;
	slot->dir = (uint8_t)(write ? DMA_TO_DEVICE : DMA_FROM_DEVICE);
	slot->state = NVME_CMD_ACTIVE;
	slot->opc = opc;
	slot->done = done;
	slot->arg = arg;
	slot->deadline_ns = deadline;
	q->outstanding++;
	if (cdw12 & NVME_RW_FUA)
		c->st.fua++;
	if (deadline < q->next_timeout_ns)
		q->next_timeout_ns = deadline;
	q->ring.sq_tail = next;
	if (qwords) /* (two constant counts, not one indexed by the test) */
		dma_account_cpu(MEM_CLASS_DEVICE, sizeof(*sqe));
	else
		dma_account_cpu(MEM_CLASS_HOST, sizeof(*sqe));
	if (list_bytes)
		dma_account_cpu((enum mem_class)list_cls, list_bytes); /* the CPU wrote the list */
	__sync_synchronize(); /* SQE, list and WC stores to the CMB drained before the doorbell */
	q->st.submitted++;
	wr32(c, q->sq_db, next);
	return 0;
}

/* nvme_submit_rw past its two one-pass ways (data away from the CMB; the CMB mode's read, one
 * entry in the CMB with the SQ there): the lean way for the rest of the data in the CMB
 * (gathers, an SQ in DRAM), else the general way (out of line: the common ways keep their
 * registers; hot: reached from an unlikely branch, the compiler would build it for size, its
 * SQE zeroed byte by byte). Returns nvme_submit's answer; the caller tells a refusal to the route. */
static __attribute__((noinline, hot)) int submit_rw_other(struct nvme_qpair *q, const struct nvme_rw_route *rt,
						     uint64_t slba, uint32_t cdw12, struct nvme_rw_data d,
						     uint64_t bytes, uint64_t now, void *arg, enum rw_place place)
{
	if (place == RW_IN_CMB && rw_lean_in_cmb(q, q->ctrl, d.nsg))
		return rw_lean_submit(q, rt, slba, cdw12, d, bytes, now, arg, nvme_ring_next_tail(&q->ring), true,
				      q->sq_in_cmb);
	return submit_rw_general(q, d.write, rt->nsid, slba, cdw12, d.sg, d.nsg, bytes, d.checked, rt->done, arg);
}

/* (noipa: out of line, its body has the registers to itself, its arguments as declared: the
 * image's LTO would fold it into the target's nvme_bdev_rw, or split its data argument, and
 * its caller's tail call would go) */
__attribute__((noipa)) int nvme_submit_rw(struct nvme_rw_route *rt, uint64_t slba, uint32_t cdw12, struct nvme_rw_data d,
					  void *arg)
{
	const uint64_t now = clock_now_ns(); /* first: its call is made before the live values */
	struct nvme_ctrl *c = rt->c;
	const uint64_t bytes = (uint64_t)((cdw12 & 0xffff) + 1) << rt->lba_shift;
	int rc = -EIO;
	bool live = c && c->state == NVME_CTRL_LIVE; /* (tested once: rw_lean's term too) */

	if (__builtin_expect(!live || rt->gen != c->gen, 0) && rt->check) {
		/* (the owner's check, once per change of the controller: nvme_rw_route.check) */
		if ((rc = rt->check(rt)))
			goto refused;
		c = rt->c;
		rc = -EIO;
		live = c && c->state == NVME_CTRL_LIVE;
	}
	if (__builtin_expect(!c || !c->nio, 0))
		goto refused;
	unsigned qi = rt->next_q < c->nio ? rt->next_q : 0;
	rt->next_q = qi + 1;
	struct nvme_qpair *q = &c->io[qi];
	__asm__("" : "+r"(q)); /* the queue's address in a register, its fields at fixed offsets
				* from it (not rebuilt from the index at each use) */
	const uint16_t next = nvme_ring_next_tail(&q->ring);
	const enum rw_place place = d.checked && live ? rw_lean(q, c, d.sg, d.nsg, bytes, next) : RW_GENERAL;
	if (__builtin_expect(place != RW_AWAY, 0)) {
		/* the CMB mode's read (one entry in the drive's own CMB, the SQ there too) in one
		 * pass here as well; every other shape out of line */
		if (place == RW_IN_CMB && d.nsg == 1 && q->sq_in_cmb && rw_lean_in_cmb(q, c, 1))
			return rw_lean_submit(q, rt, slba, cdw12, d, bytes, now, arg, next, true, true);
		rc = submit_rw_other(q, rt, slba, cdw12, d, bytes, now, arg, place);
		if (rc == 0)
			return 0;
		goto refused;
	}
	/* the common command in one pass, straight into its SQ entry and list (a way for each kind
	 * of SQ: the one in host memory keeps its registers) */
	if (__builtin_expect(q->sq_in_cmb, 0))
		return rw_lean_submit(q, rt, slba, cdw12, d, bytes, now, arg, next, false, true);
	return rw_lean_submit(q, rt, slba, cdw12, d, bytes, now, arg, next, false, false);
refused:
	if (rt->refused)
		rt->refused(arg, rc, NULL);
	return rc;
}

/* Retire a slot and call its completion. */
void nvme_cmd_finish(struct nvme_qpair *q, struct nvme_cmd *slot, int rc, const struct nvme_cqe *cqe)
{
	nvme_done_fn done = slot->done;
	void *arg = slot->arg;
	slot->state = NVME_CMD_FREE;
	slot->done = NULL;
	q->free_cids[q->nfree++] = slot->cid;
	q->outstanding--;
	if (done)
		done(arg, rc, cqe);
}

static inline __attribute__((always_inline)) void account(struct nvme_ctrl *c, const struct nvme_cmd *slot)
{
	if (slot->data_bytes) {
		dma_account(slot->data_cls, slot->dir, slot->data_bytes);
		c->st.payload_bytes[slot->data_cls] += slot->data_bytes;
	}
	if (slot->list_bytes) {
		dma_account(slot->list_cls, DMA_TO_DEVICE, slot->list_bytes);
		c->st.list_bytes[slot->list_cls] += slot->list_bytes;
	}
}

/* One completion (complete_lean's answer for everything it does not take: out of line). */
static __attribute__((noinline)) void complete(struct nvme_qpair *q, const struct nvme_cqe *e)
{
	struct nvme_ctrl *c = q->ctrl;
	if (le16_get(e->cid) >= q->ring.depth - 1 || q->cmds[le16_get(e->cid)].state == NVME_CMD_FREE) {
		q->st.spurious++;
		log_warn("%s: q%u: completion for idle command ID %u ignored", c->name, q->qid, le16_get(e->cid));
		return;
	}
	struct nvme_cmd *slot = &q->cmds[le16_get(e->cid)];
	if (slot->state == NVME_CMD_LOST) {
		/* quarantined after an unanswered Abort: the controller did finish it, so its
		 * buffers are free again; its owner hears now (the reset still runs) */
		q->st.late++;
		if (!slot->done) { /* a synchronous caller that gave up at its own limit */
			slot->state = NVME_CMD_FREE;
			q->free_cids[q->nfree++] = slot->cid;
			q->outstanding--;
			return;
		}
	}
	/* the queue entries are DMA too: the SQE fetched (from the CMB when the SQ lives
	 * there), the CQE posted to DRAM and read by the CPU */
	enum mem_class sq_cls = q->sq_in_cmb ? MEM_CLASS_DEVICE : MEM_CLASS_HOST;
	dma_account(sq_cls, DMA_TO_DEVICE, sizeof(struct nvme_sqe));
	dma_account(MEM_CLASS_HOST, DMA_FROM_DEVICE, sizeof(struct nvme_cqe));
	dma_account_cpu(MEM_CLASS_HOST, sizeof(struct nvme_cqe));
	c->st.queue_bytes[sq_cls] += sizeof(struct nvme_sqe);
	c->st.queue_bytes[MEM_CLASS_HOST] += sizeof(struct nvme_cqe);
	uint16_t status = le16_get(e->status);
	int rc = (status & 0xfffe) ? nvme_status_errno(status) : 0; /* SCT, SC 0 (the phase apart): success */
	if (slot->state == NVME_CMD_ABORTING && rc == -ECANCELED)
		rc = -ETIMEDOUT;
	q->st.completed++;
	if (rc == 0) {
		account(c, slot);
	} else {
		q->st.errors++;
		c->last_error_status = (uint16_t)((le16_get(e->status) >> 1) & 0x7ff);
		/* a drive's error on an I/O queue is news (media errors, write faults); admin
		 * errors are usually probes of optional features */
		log_at(q->qid ? LOG_WARN : LOG_DEBUG, "%s: q%u cid %u opcode 0x%02x: status 0x%03x %s", c->name,
		       q->qid, slot->cid, slot->opc, (le16_get(e->status) >> 1) & 0x7ff, nvme_status_str(le16_get(e->status)));
	}
	nvme_cmd_finish(q, slot, rc, e);
}

/* One completion as complete() answers it, for the common one: a success of an ACTIVE
 * command; anything else (an error, an idle, aborting or quarantined slot) goes complete(). */
static inline __attribute__((always_inline)) void complete_lean(struct nvme_qpair *q, const struct nvme_cqe *e)
{
	const uint16_t cid = le16_get(e->cid);
	if (__builtin_expect(cid >= q->ring.depth - 1, 0))
		return complete(q, e);
	struct nvme_cmd *slot = &q->cmds[cid];
	__asm__("" : "+r"(slot)); /* (its address in a register: not rebuilt from cid at each use) */
	if (__builtin_expect(slot->state != NVME_CMD_ACTIVE || (le16_get(e->status) & 0xfffe), 0))
		return complete(q, e);
	struct nvme_ctrl *c = q->ctrl;
	/* the queue entries are DMA too: the SQE fetched (from the CMB when the SQ lives there),
	 * the CQE posted to DRAM and read by the CPU (complete()'s accounting) */
	const enum mem_class sq_cls = q->sq_in_cmb ? MEM_CLASS_DEVICE : MEM_CLASS_HOST;
	dma_account(sq_cls, DMA_TO_DEVICE, sizeof(struct nvme_sqe));
	dma_account(MEM_CLASS_HOST, DMA_FROM_DEVICE, sizeof(struct nvme_cqe));
	dma_account_cpu(MEM_CLASS_HOST, sizeof(struct nvme_cqe));
	c->st.queue_bytes[sq_cls] += sizeof(struct nvme_sqe);
	c->st.queue_bytes[MEM_CLASS_HOST] += sizeof(struct nvme_cqe);
	q->st.completed++;
	account(c, slot);
	nvme_cmd_finish(q, slot, 0, e);
}

/* Fail every command in flight on every queue with rc (their owners get their buffers back:
 * call only when the controller can no longer move data: disabled or gone). Quarantined
 * commands and commands that timed out get -ETIMEDOUT. Returns how many were failed. */
unsigned nvme_fail_inflight(struct nvme_ctrl *c, int rc)
{
	unsigned n = 0;
	for (unsigned qi = 0; qi <= c->nio; qi++) {
		struct nvme_qpair *q = qi == 0 ? &c->admin : &c->io[qi - 1];
		for (unsigned i = 0; q->ring.depth && i < q->ring.depth - 1u; i++) {
			struct nvme_cmd *s = &q->cmds[i];
			if (s->state == NVME_CMD_FREE)
				continue;
			int r = rc == -ENODEV ? rc : s->state == NVME_CMD_ACTIVE ? rc : -ETIMEDOUT;
			nvme_cmd_finish(q, s, r, NULL);
			n++;
		}
	}
	return n;
}

/* The device is gone (all-ones reads): nothing can move data any more; fail everything. */
void nvme_ctrl_mark_removed(struct nvme_ctrl *c)
{
	if (c->state == NVME_CTRL_REMOVED)
		return;
	log_err("%s: device removed (hot-unplugged or registers read all-ones): failing every command, namespaces not ready",
		c->name);
	set_state(c, NVME_CTRL_REMOVED);
	c->gen++;
	c->error = -ENODEV;
	c->rec.removals++;
	c->reset_needed = false;
	c->rec.failed_back += nvme_fail_inflight(c, -ENODEV);
	for (unsigned i = 0; i < c->nns; i++)
		c->ns[i].active = false; /* namespaces not ready */
	if (c->on_reset)
		c->on_reset(c, -ENODEV);
}

/* Ask for a controller reset at the end of the current poll. */
static void request_reset(struct nvme_ctrl *c, const char *why)
{
	if (!c->reset_needed)
		log_warn("%s: reset needed: %s", c->name, why);
	c->reset_needed = true;
	c->reset_reason = why;
}

/* CSTS.CFS or all-ones CSTS seen while commands are outstanding. */
static void ctrl_fatal(struct nvme_ctrl *c, uint32_t csts)
{
	if (csts == 0xffffffffu) {
		nvme_ctrl_mark_removed(c);
		return;
	}
	if (c->reset_needed || c->in_reset)
		return;
	c->rec.cfs++;
	log_err("%s: controller fatal status (CSTS 0x%08x)", c->name, csts);
	request_reset(c, "CSTS.CFS (controller fatal status)");
}

static void abort_done(void *arg, int rc, const struct nvme_cqe *cqe)
{
	struct nvme_ctrl *c = arg;
	/* Abort DW0 bit 0: 0 = the command was aborted, 1 = it was not */
	log_debug("%s: abort completed rc %d dw0 0x%x", c->name, rc, cqe ? le32_get(cqe->dw0) : 0);
}

/* Send Abort for a timed-out command (never for an Abort). */
static void send_abort(struct nvme_qpair *q, struct nvme_cmd *slot)
{
	struct nvme_ctrl *c = q->ctrl;
	struct nvme_request rq;
	if (q->qid == 0 && slot->opc == NVME_ADM_ABORT)
		return;
	memset(&rq, 0, sizeof(rq));
	rq.opc = NVME_ADM_ABORT;
	rq.cdw10 = q->qid | ((uint32_t)slot->cid << 16); /* SQID 15:0, CID 31:16 */
	if (nvme_submit(&c->admin, &rq, abort_done, c) == 0)
		q->st.aborts_sent++;
}

static void check_timeouts(struct nvme_qpair *q, uint64_t now)
{
	struct nvme_ctrl *c = q->ctrl;
	uint64_t next = UINT64_MAX;

	if (now < q->next_timeout_ns)
		return; /* no deadline due yet: no scan of the slots on every poll */
	q->next_timeout_ns = UINT64_MAX; /* an Abort submitted below lowers it */
	for (unsigned i = 0; i < q->ring.depth - 1u; i++) {
		struct nvme_cmd *s = &q->cmds[i];
		if (s->state != NVME_CMD_ACTIVE && s->state != NVME_CMD_ABORTING)
			continue;
		if (now < s->deadline_ns) {
			if (s->deadline_ns < next)
				next = s->deadline_ns;
			continue;
		}
		uint32_t csts = rd32(c, NVME_REG_CSTS);
		if (csts == 0xffffffffu || (csts & NVME_CSTS_CFS)) {
			q->next_timeout_ns = 0; /* scan again on the next poll */
			ctrl_fatal(c, csts);
			return;
		}
		if (s->state == NVME_CMD_ACTIVE) {
			q->st.timeouts++;
			log_warn("%s: q%u cid %u opcode 0x%02x timed out after %llu ms: aborting", c->name,
				 q->qid, s->cid, s->opc, (unsigned long long)(c->cmd_timeout_ns / 1000000));
			s->state = NVME_CMD_ABORTING;
			s->deadline_ns = now + c->abort_timeout_ns;
			if (s->deadline_ns < next)
				next = s->deadline_ns;
			send_abort(q, s);
		} else {
			/* No answer to the Abort either: the controller may still complete the
			 * command and move its data, so neither the ID nor the buffers go back to
			 * anyone: quarantined until the controller reset disables it. */
			q->st.lost++;
			log_err("%s: q%u cid %u quarantined (no completion after Abort): resetting the controller",
				c->name, q->qid, s->cid);
			s->state = NVME_CMD_LOST;
			request_reset(c, "a command did not answer its Abort");
		}
	}
	if (next < q->next_timeout_ns)
		q->next_timeout_ns = next;
}

/* Reap completions, ring the CQ head doorbell, handle timeouts. */
int nvme_qpair_poll(struct nvme_qpair *q, unsigned budget)
{
	struct nvme_ctrl *c = q->ctrl;
	unsigned n = 0;
	const volatile struct nvme_cqe *v;

	if (!c || !q->ring.depth)
		return 0;
	while (n < budget && (v = nvme_ring_peek(&q->ring))) {
		/* the entry copied out in two 8-byte loads (struct nvme_cqe is 16 bytes, aligned 8):
		 * the same bytes as field by field, in a quarter of the loads and stores */
		struct nvme_cqe e;
		const volatile uint64_t *w = (const volatile uint64_t *)v;
		uint64_t raw[2] = { w[0], w[1] };
		memcpy(&e, raw, sizeof(e));
		if (nvme_ring_pop_sqhd(&q->ring, le16_get(e.sqhd)) < 0)
			log_warn("%s: q%u: CQE with SQHD %u outside the queue", c->name, q->qid, le16_get(e.sqhd));
		n++;
		complete_lean(q, &e);
	}
	if (n)
		wr32(c, q->cq_db, q->ring.cq_head);
	if (q->outstanding) {
		uint64_t now = clock_now_ns();
		check_timeouts(q, now);
		if (!c->reset_needed && c->state == NVME_CTRL_LIVE && !c->in_reset)
			nvme_ctrl_check(c, now); /* CSTS.CFS / removal, at most every 100 ms */
	}
	if (__builtin_expect(!c->reset_needed && c->state == NVME_CTRL_LIVE, 1))
		return (int)n; /* the usual pass: what follows would change nothing */
	if (c->reset_needed && !c->in_reset && c->state == NVME_CTRL_LIVE)
		nvme_ctrl_reset(c, c->reset_reason);
	if (c->state == NVME_CTRL_REMOVED)
		return -ENODEV;
	return c->state == NVME_CTRL_FAILED ? -EIO : (int)n;
}

struct sync_wait {
	bool done;
	int rc;
	struct nvme_cqe cqe;
};

static void sync_done(void *arg, int rc, const struct nvme_cqe *cqe)
{
	struct sync_wait *w = arg;
	w->done = true;
	w->rc = rc;
	if (cqe)
		w->cqe = *cqe;
}

/* Submit and wait (polling) for the completion. */
int nvme_exec_sync(struct nvme_qpair *q, const struct nvme_request *rq, struct nvme_cqe *cqe_out)
{
	struct nvme_ctrl *c = q->ctrl;
	struct sync_wait w;
	int rc;

	memset(&w, 0, sizeof(w));
	if (!c)
		return -ENODEV;
	/* a command's own timeout, its Abort's, and the reset it may trigger (two CAP.TO waits) */
	uint64_t limit = clock_now_ns() + c->cmd_timeout_ns + c->abort_timeout_ns + 2 * c->rdy_timeout_ns +
			 NSEC_PER_SEC;
	while ((rc = nvme_submit(q, rq, sync_done, &w)) == -EBUSY) {
		nvme_qpair_poll(q, NVME_MAX_QDEPTH);
		if (clock_now_ns() > limit)
			return -EBUSY;
		pause_ns(c, SYNC_POLL_NS);
	}
	if (rc)
		return rc;
	uint16_t cid = q->cmds[q->free_cids[q->nfree]].cid; /* the slot just taken */
	while (!w.done) {
		nvme_qpair_poll(q, NVME_MAX_QDEPTH);
		if (q != &c->admin)
			nvme_qpair_poll(&c->admin, NVME_ADMIN_DEPTH); /* Abort completions */
		if (w.done)
			break;
		if (clock_now_ns() > limit) {
			/* Cannot happen while timeouts run; never leave &w in a live slot. */
			struct nvme_cmd *s = &q->cmds[cid];
			if (s->done == sync_done && s->arg == &w) {
				s->done = NULL;
				if (s->state == NVME_CMD_ACTIVE || s->state == NVME_CMD_ABORTING) {
					s->state = NVME_CMD_LOST;
					q->st.lost++;
				}
			}
			return -ETIMEDOUT;
		}
		pause_ns(c, SYNC_POLL_NS);
	}
	if (cqe_out)
		*cqe_out = w.cqe;
	return w.rc;
}

/* --- admin commands --- */

static int admin_identify(struct nvme_ctrl *c, uint8_t cns, uint32_t nsid, void *buf, dma_addr_t addr)
{
	struct nvme_request rq;
	struct nvme_sg sg = { addr, NVME_PAGE_SIZE };
	memset(&rq, 0, sizeof(rq));
	memset(buf, 0, NVME_PAGE_SIZE);
	rq.opc = NVME_ADM_IDENTIFY;
	rq.nsid = nsid;
	rq.cdw10 = cns;
	rq.sg = &sg;
	rq.nsg = 1;
	rq.dir = DMA_FROM_DEVICE;
	rq.force_prp = true;
	return nvme_exec_sync(&c->admin, &rq, NULL);
}

static void copy_id_string(char *dst, const uint8_t *src, size_t n)
{
	memcpy(dst, src, n);
	dst[n] = 0;
	while (n > 0 && (dst[n - 1] == ' ' || dst[n - 1] == 0))
		dst[--n] = 0;
	for (size_t i = 0; i < n; i++)
		if (dst[i] < 0x20 || dst[i] > 0x7e)
			dst[i] = '?'; /* untrusted bytes on the console */
}

static void parse_idctrl(struct nvme_ctrl *c)
{
	const uint8_t *id = c->idctrl;
	copy_id_string(c->sn, id + NVME_IDC_SN, 20);
	copy_id_string(c->mn, id + NVME_IDC_MN, 40);
	copy_id_string(c->fr, id + NVME_IDC_FR, 8);
	c->mdts = id[NVME_IDC_MDTS];
	c->cntlid = le16_load(id + NVME_IDC_CNTLID);
	c->ver = le32_load(id + NVME_IDC_VER);
	c->acl = id[NVME_IDC_ACL];
	c->nn = le32_load(id + NVME_IDC_NN);
	c->oncs = le16_load(id + NVME_IDC_ONCS);
	c->vwc = id[NVME_IDC_VWC];
	c->rtd3e = le32_load(id + NVME_IDC_RTD3E);
	c->sgls = le32_load(id + NVME_IDC_SGLS);
	uint64_t mpsmin = 4096ull << NVME_GET(c->cap, NVME_CAP_MPSMIN);
	uint64_t max = NVME_MAX_XFER;
	if (c->mdts && c->mdts < 32 && (mpsmin << c->mdts) < max)
		max = mpsmin << c->mdts;
	c->max_xfer = (uint32_t)max;
}

static int parse_idns(struct nvme_ctrl *c, uint32_t nsid, const uint8_t *id, struct nvme_ns *ns)
{
	memset(ns, 0, sizeof(*ns));
	ns->nsid = nsid;
	ns->nsze = le64_load(id + NVME_IDNS_NSZE);
	ns->ncap = le64_load(id + NVME_IDNS_NCAP);
	ns->nuse = le64_load(id + NVME_IDNS_NUSE);
	unsigned fmt = id[NVME_IDNS_FLBAS] & 0xf;
	uint32_t lbaf = le32_load(id + NVME_IDNS_LBAF + 4 * fmt);
	ns->ms = lbaf & 0xffff;
	ns->lba_shift = (lbaf >> 16) & 0xff;
	if (ns->nsze == 0)
		return -ENODEV; /* inactive NSID: Identify returns zeroes */
	if (ns->lba_shift < 9 || ns->lba_shift > 16 || fmt > id[NVME_IDNS_NLBAF]) {
		log_warn("%s: nsid %u has an unusable LBA format (LBADS %u)", c->name, nsid, ns->lba_shift);
		return -EINVAL;
	}
	ns->active = true;
	return 0;
}

static int scan_namespaces(struct nvme_ctrl *c)
{
	uint32_t list[NVME_MAX_NS];
	unsigned n = 0;
	int rc;

	if (c->vs >= NVME_VS(1, 1)) {
		rc = admin_identify(c, NVME_ID_CNS_NS_ACTIVE_LIST, 0, c->idctrl, c->idctrl_addr);
		if (rc)
			return rc;
		const uint8_t *p = c->idctrl;
		for (unsigned i = 0; i < 1024 && n < NVME_MAX_NS; i++) {
			uint32_t id = le32_load(p + 4 * i);
			if (id == 0)
				break;
			list[n++] = id;
		}
	} else {
		for (uint32_t id = 1; id <= c->nn && n < NVME_MAX_NS; id++)
			list[n++] = id;
	}
	c->gen++;
	c->nns = 0;
	for (unsigned i = 0; i < n; i++) {
		if ((rc = admin_identify(c, NVME_ID_CNS_NS, list[i], c->idctrl, c->idctrl_addr)))
			return rc;
		struct nvme_ns *ns = &c->ns[c->nns];
		if (parse_idns(c, list[i], c->idctrl, ns) == 0)
			c->nns++;
	}
	return 0;
}

static int set_num_queues(struct nvme_ctrl *c, unsigned want, unsigned *got)
{
	struct nvme_request rq;
	struct nvme_cqe cqe;
	memset(&rq, 0, sizeof(rq));
	rq.opc = NVME_ADM_SET_FEATURES;
	rq.cdw10 = NVME_FEAT_NUM_QUEUES;
	rq.cdw11 = (want - 1) | ((uint32_t)(want - 1) << 16); /* NSQR 15:0, NCQR 31:16, 0's based */
	int rc = nvme_exec_sync(&c->admin, &rq, &cqe);
	if (rc)
		return rc;
	unsigned nsqa = (le32_get(cqe.dw0) & 0xffff) + 1, ncqa = (le32_get(cqe.dw0) >> 16) + 1;
	*got = want < nsqa ? want : nsqa;
	if (ncqa < *got)
		*got = ncqa;
	return 0;
}

static int create_io_queue(struct nvme_ctrl *c, struct nvme_qpair *q)
{
	struct nvme_request rq;
	int rc;
	memset(&rq, 0, sizeof(rq));
	rq.opc = NVME_ADM_CREATE_CQ;
	rq.cdw10 = q->qid | ((uint32_t)(q->ring.depth - 1) << 16); /* QID, QSIZE 0's based */
	rq.cdw11 = NVME_CREATE_CQ_PC;                                /* polled; interrupts only wake an idle CPU */
	if (c->bus->cq_irq)
		rq.cdw11 |= NVME_CREATE_CQ_IEN | 0u << NVME_CREATE_CQ_IV_SHIFT;
	struct nvme_sg cq = { q->cq_addr, q->ring.depth * (uint32_t)sizeof(struct nvme_cqe) };
	rq.sg = &cq;
	rq.nsg = 1;
	rq.force_prp = true;
	if ((rc = nvme_exec_sync(&c->admin, &rq, NULL)))
		return rc;
	rq.opc = NVME_ADM_CREATE_SQ;
	rq.cdw11 = NVME_CREATE_SQ_PC | ((uint32_t)q->qid << 16);   /* CQID 31:16 */
	struct nvme_sg sq = { q->sq_addr, q->ring.depth * (uint32_t)sizeof(struct nvme_sqe) };
	rq.sg = &sq;
	return nvme_exec_sync(&c->admin, &rq, NULL);
}

static int delete_io_queue(struct nvme_ctrl *c, struct nvme_qpair *q)
{
	struct nvme_request rq;
	memset(&rq, 0, sizeof(rq));
	rq.opc = NVME_ADM_DELETE_SQ;
	rq.cdw10 = q->qid;
	int rc = nvme_exec_sync(&c->admin, &rq, NULL);
	rq.opc = NVME_ADM_DELETE_CQ;
	int rc2 = nvme_exec_sync(&c->admin, &rq, NULL);
	return rc ? rc : rc2;
}

/* --- CMB --- */

static void cmb_refuse(struct nvme_ctrl *c, const char *why)
{
	c->cmb.usable = false;
	c->cmb.refused = why;
	log_warn("%s: CMB not used: %s", c->name, why);
}

/* Discover the CMB (1.4 or legacy scheme), enable it and check that it really is enabled. */
static void cmb_setup(struct nvme_ctrl *c)
{
	struct nvme_cmb *m = &c->cmb;
	bool v14 = NVME_GET(c->cap, NVME_CAP_CMBS) && c->vs >= NVME_VS(1, 4);
	uint32_t loc, sz;

	memset(m, 0, sizeof(*m));
	if (v14) {
		uint64_t msc = rd64(c, NVME_REG_CMBMSC);
		if (!(msc & NVME_CMBMSC_CRE))
			wr32(c, NVME_REG_CMBMSC, (uint32_t)(msc | NVME_CMBMSC_CRE)); /* CMBLOC/CMBSZ valid */
	}
	loc = rd32(c, NVME_REG_CMBLOC);
	sz = rd32(c, NVME_REG_CMBSZ);
	int rc = nvme_cmb_decode(loc, sz, &m->info);
	if (rc == -ENODEV)
		return;
	m->scheme = v14 ? NVME_CMB_V14 : NVME_CMB_LEGACY;
	if (rc) {
		cmb_refuse(c, "CMBLOC/CMBSZ hold reserved values");
		return;
	}
	unsigned bir = m->info.bir;
	uint64_t bar = c->bus->bar_bus[bir], bar_size = c->bus->bar_size[bir];
	if (!bar || !bar_size) {
		cmb_refuse(c, "the BAR named by CMBLOC.BIR is not assigned");
		return;
	}
	if (m->info.offset >= bar_size || m->info.size > bar_size - m->info.offset) {
		cmb_refuse(c, "CMBLOC/CMBSZ describe memory beyond the BAR");
		return;
	}
	m->bus = bar + m->info.offset;
	m->size = m->info.size;
	m->cpu = c->bus->bar_cpu[bir] ? (uint8_t *)c->bus->bar_cpu[bir] + m->info.offset : NULL;
	if (v14) {
		/* CBA first (high dword), then CRE|CMSE with the low dword: the controller takes CBA
		 * when CMSE is written. */
		uint64_t want = (m->bus & NVME_CMBMSC_CBA_MASK) | NVME_CMBMSC_CMSE | NVME_CMBMSC_CRE;
		wr32(c, NVME_REG_CMBMSC + 4, (uint32_t)(want >> 32));
		wr32(c, NVME_REG_CMBMSC, (uint32_t)want);
		m->cmbmsc = rd64(c, NVME_REG_CMBMSC);
		if (!(m->cmbmsc & NVME_CMBMSC_CMSE)) {
			cmb_refuse(c, "CMBMSC.CMSE reads back 0: CMB transfers would complete without moving data");
			return;
		}
		if ((m->cmbmsc & NVME_CMBMSC_CBA_MASK) != (m->bus & NVME_CMBMSC_CBA_MASK)) {
			cmb_refuse(c, "CMBMSC.CBA did not keep the CMB's address");
			return;
		}
		if (rd32(c, NVME_REG_CMBSTS) & NVME_CMBSTS_CBAI) {
			cmb_refuse(c, "CMBSTS.CBAI: controller base address invalid");
			return;
		}
	}
	if (!m->cpu) {
		cmb_refuse(c, "the CMB's BAR is not mapped");
		return;
	}
	if (!m->info.rds || !m->info.wds) {
		cmb_refuse(c, "CMBSZ lacks RDS/WDS: no data in the CMB");
		return;
	}
	m->usable = true;
	char uses[40];
	log_info("%s: CMB %llu MiB at 0x%llx (BAR%u, %s scheme), uses %s", c->name,
		 (unsigned long long)(m->size >> 20), (unsigned long long)m->bus, bir,
		 v14 ? "1.4" : "legacy", nvme_cmb_uses_str(&m->info, uses, sizeof(uses)));
}

/* --- bring-up --- */

/* Bring the controller up. */
int nvme_ctrl_init(struct nvme_ctrl *c, const char *name, const struct nvme_bus *bus, unsigned nio)
{
	/* the generation goes on across a new init of the same struct (another drive brought
	 * up in its place): what a user checked of the old one never passes for the new one */
	uint32_t gen = c->gen;

	memset(c, 0, sizeof(*c));
	c->gen = gen + 1;
	snprintf(c->name, sizeof(c->name), "%s", name);
	c->bus = bus;
	c->cmd_timeout_ns = NVME_CMD_TIMEOUT_NS;
	c->abort_timeout_ns = NVME_ABORT_TIMEOUT_NS;
	c->nio_wanted = nio;
	return nvme_ctrl_bring_up(c);
}

/* The bring-up proper (init and reset): registers, queues, Identify, CMB, namespaces. */
int nvme_ctrl_bring_up(struct nvme_ctrl *c)
{
	const struct nvme_bus *bus = c->bus;
	unsigned nio = c->nio_wanted;
	uint64_t t0 = clock_now_ns();
	int rc;

	c->gen++;
	c->nio = 0;
	c->nns = 0;
	c->cap = rd64(c, NVME_REG_CAP);
	c->vs = rd32(c, NVME_REG_VS);
	if (c->cap == ~0ull) {
		rc = -ENODEV;
		goto fail;
	}
	unsigned to = NVME_GET(c->cap, NVME_CAP_TO);
	c->rdy_timeout_ns = (uint64_t)(to ? to : 1) * 500 * NSEC_PER_MSEC;
	c->dstrd = NVME_GET(c->cap, NVME_CAP_DSTRD);
	if (NVME_GET(c->cap, NVME_CAP_MPSMIN) != 0 || !(NVME_GET(c->cap, NVME_CAP_CSS) & 1)) {
		log_err("%s: needs 4 KiB pages and the NVM command set (CAP 0x%llx)", c->name,
			(unsigned long long)c->cap);
		rc = -EOPNOTSUPP;
		goto fail;
	}

	set_state(c, NVME_CTRL_RESETTING);
	if ((rc = nvme_ctrl_disable(c)))
		goto fail;

	unsigned mqes = NVME_GET(c->cap, NVME_CAP_MQES) + 1;
	unsigned adepth = mqes < NVME_ADMIN_DEPTH ? mqes : NVME_ADMIN_DEPTH;
	c->io_depth = mqes < NVME_IO_DEPTH ? mqes : NVME_IO_DEPTH;
	if ((rc = qpair_alloc(c, &c->admin, 0, adepth, false)))
		goto fail;
	if (!(c->idctrl = bus->dma_alloc(bus->ctx, NVME_PAGE_SIZE, &c->idctrl_addr))) {
		rc = -ENOMEM;
		goto fail;
	}
	wr32(c, NVME_REG_AQA, NVME_SET(NVME_AQA_ASQS, adepth - 1) | NVME_SET(NVME_AQA_ACQS, adepth - 1));
	wr64(c, NVME_REG_ASQ, c->admin.sq_addr.bus);
	wr64(c, NVME_REG_ACQ, c->admin.cq_addr.bus);
	uint32_t cc = NVME_SET(NVME_CC_CSS, 0) | NVME_SET(NVME_CC_MPS, 0) | NVME_SET(NVME_CC_AMS, 0) |
		      NVME_SET(NVME_CC_IOSQES, 6) | NVME_SET(NVME_CC_IOCQES, 4);
	set_state(c, NVME_CTRL_ENABLING);
	wr32(c, NVME_REG_CC, cc);
	wr32(c, NVME_REG_CC, cc | NVME_CC_EN);
	if ((rc = wait_ready(c, true))) {
		log_err("%s: CSTS.RDY not set within CAP.TO (%llu ms)%s", c->name,
			(unsigned long long)(c->rdy_timeout_ns / NSEC_PER_MSEC),
			rc == -EIO ? ": CSTS.CFS" : "");
		goto fail_disable;
	}
	set_state(c, NVME_CTRL_ADMIN);

	if ((rc = admin_identify(c, NVME_ID_CNS_CTRL, 0, c->idctrl, c->idctrl_addr)))
		goto fail_disable;
	parse_idctrl(c);
	cmb_setup(c);

	unsigned got = 0;
	if (nio > NVME_MAX_IO_QUEUES)
		nio = NVME_MAX_IO_QUEUES;
	if (nio && (rc = set_num_queues(c, nio, &got)))
		goto fail_disable;
	for (c->nio = 0; c->nio < got; c->nio++) {
		struct nvme_qpair *q = &c->io[c->nio];
		if ((rc = qpair_alloc(c, q, (uint16_t)(c->nio + 1), c->io_depth, true)))
			goto fail_disable;
		if ((rc = create_io_queue(c, q))) {
			nvme_qpair_free(c, q);
			goto fail_disable;
		}
	}
	/* Identify Controller is kept for the console: scan namespaces with a second buffer */
	uint8_t *keep = c->idctrl;
	dma_addr_t keep_addr = c->idctrl_addr;
	if (!(c->idctrl = bus->dma_alloc(bus->ctx, NVME_PAGE_SIZE, &c->idctrl_addr))) {
		c->idctrl = keep;
		c->idctrl_addr = keep_addr;
		rc = -ENOMEM;
		goto fail_disable;
	}
	rc = scan_namespaces(c);
	bus->dma_free(bus->ctx, c->idctrl, NVME_PAGE_SIZE);
	c->idctrl = keep;
	c->idctrl_addr = keep_addr;
	if (rc)
		goto fail_disable;
	c->reset_ns = clock_now_ns() - t0;
	set_state(c, NVME_CTRL_LIVE);
	log_info("%s: %s sn %s fw %s, %u namespace(s), %u I/O queue(s) of %u, max %u KiB/cmd%s", c->name,
		 c->mn, c->sn, c->fr, c->nns, c->nio, c->io_depth, c->max_xfer >> 10,
		 (c->sgls & NVME_SGLS_SUPPORTED_MASK) ? ", SGLs" : "");
	return 0;

fail_disable:
	nvme_ctrl_disable(c);
fail:
	c->error = rc;
	set_state(c, NVME_CTRL_FAILED);
	log_err("%s: bring-up failed: %d", c->name, rc);
	return rc;
}

/* Tear a controller down. */
void nvme_ctrl_fini(struct nvme_ctrl *c)
{
	if (!c->bus)
		return;
	if (c->state == NVME_CTRL_LIVE)
		for (unsigned i = c->nio; i-- > 0;)
			delete_io_queue(c, &c->io[i]);
	if (c->state != NVME_CTRL_NEW && nvme_ctrl_disable(c))
		log_err("%s: disable failed; freeing queues anyway", c->name);
	for (unsigned i = 0; i < c->nio; i++)
		nvme_qpair_free(c, &c->io[i]);
	nvme_qpair_free(c, &c->admin);
	if (c->idctrl)
		c->bus->dma_free(c->bus->ctx, c->idctrl, NVME_PAGE_SIZE);
	c->idctrl = NULL;
	c->nio = 0;
	c->gen++;
	set_state(c, NVME_CTRL_NEW);
}

/* --- namespaces and NVM commands --- */

/* An active namespace by ID. */
struct nvme_ns *nvme_ns_get(struct nvme_ctrl *c, uint32_t nsid)
{
	for (unsigned i = 0; i < c->nns; i++)
		if (c->ns[i].nsid == nsid && c->ns[i].active)
			return &c->ns[i];
	return NULL;
}

static int io_ready(struct nvme_ctrl *c)
{
	if (c->state == NVME_CTRL_FAILED)
		return -EIO;
	if (c->in_reset)
		return -EAGAIN;
	if (c->state != NVME_CTRL_LIVE || c->nio == 0)
		return -ENODEV;
	return 0;
}

/* A read or write request, checked against the namespace. */
int nvme_rw_request(struct nvme_ctrl *c, bool write, uint32_t nsid, uint64_t slba, uint32_t nlb,
		    const struct nvme_sg *sg, unsigned nsg, struct nvme_request *rq)
{
	int rc = io_ready(c);
	if (rc)
		return rc;
	struct nvme_ns *ns = nvme_ns_get(c, nsid);
	if (!ns)
		return -ENODEV;
	if (nlb == 0 || nlb > 0x10000)
		return -EINVAL;
	if (slba >= ns->nsze || nlb > ns->nsze - slba)
		return -ERANGE;
	memset(rq, 0, sizeof(*rq));
	rq->opc = write ? NVME_CMD_WRITE : NVME_CMD_READ;
	rq->nsid = nsid;
	rq->cdw10 = (uint32_t)slba;
	rq->cdw11 = (uint32_t)(slba >> 32);
	rq->cdw12 = nlb - 1;                    /* NLB, 0's based */
	rq->sg = sg;
	rq->nsg = nsg;
	rq->sgl_total = (uint64_t)nlb << ns->lba_shift;
	rq->dir = write ? DMA_TO_DEVICE : DMA_FROM_DEVICE;
	rq->count_payload = true;
	return 0;
}

static int rw(struct nvme_ctrl *c, bool write, uint32_t nsid, uint64_t slba, uint32_t nlb,
	      const struct nvme_sg *sg, unsigned nsg)
{
	struct nvme_request rq;
	int rc = nvme_rw_request(c, write, nsid, slba, nlb, sg, nsg, &rq);
	if (rc == 0)
		rc = nvme_exec_sync(&c->io[0], &rq, NULL);
	if (write)
		c->st.writes++;
	else
		c->st.reads++;
	if (rc)
		c->st.failed++;
	return rc;
}

/* Synchronous read. */
int nvme_read(struct nvme_ctrl *c, uint32_t nsid, uint64_t slba, uint32_t nlb,
	      const struct nvme_sg *sg, unsigned nsg)
{
	return rw(c, false, nsid, slba, nlb, sg, nsg);
}

/* Synchronous write. */
int nvme_write(struct nvme_ctrl *c, uint32_t nsid, uint64_t slba, uint32_t nlb,
	       const struct nvme_sg *sg, unsigned nsg)
{
	return rw(c, true, nsid, slba, nlb, sg, nsg);
}

/* Synchronous write with Force Unit Access. */
int nvme_write_fua(struct nvme_ctrl *c, uint32_t nsid, uint64_t slba, uint32_t nlb,
		   const struct nvme_sg *sg, unsigned nsg)
{
	struct nvme_request rq;
	int rc = nvme_rw_request(c, true, nsid, slba, nlb, sg, nsg, &rq);
	if (rc == 0) {
		rq.cdw12 |= NVME_RW_FUA;
		rc = nvme_exec_sync(&c->io[0], &rq, NULL);
	}
	c->st.writes++;
	if (rc)
		c->st.failed++;
	return rc;
}

/* Flush the volatile write cache of a namespace. */
int nvme_flush(struct nvme_ctrl *c, uint32_t nsid)
{
	struct nvme_request rq;
	int rc = io_ready(c);
	if (rc)
		return rc;
	if (!nvme_ns_get(c, nsid))
		return -ENODEV;
	memset(&rq, 0, sizeof(rq));
	rq.opc = NVME_CMD_FLUSH;
	rq.nsid = nsid;
	c->st.flushes++;
	return nvme_exec_sync(&c->io[0], &rq, NULL);
}

/* Write Zeroes over an LBA range. */
int nvme_write_zeroes(struct nvme_ctrl *c, uint32_t nsid, uint64_t slba, uint32_t nlb)
{
	struct nvme_request rq;
	int rc = io_ready(c);
	if (rc)
		return rc;
	struct nvme_ns *ns = nvme_ns_get(c, nsid);
	if (!ns)
		return -ENODEV;
	if (!(c->oncs & NVME_ONCS_WRITE_ZEROES))
		return -EOPNOTSUPP;
	if (nlb == 0 || nlb > 0x10000)
		return -EINVAL;
	if (slba >= ns->nsze || nlb > ns->nsze - slba)
		return -ERANGE;
	memset(&rq, 0, sizeof(rq));
	rq.opc = NVME_CMD_WRITE_ZEROES;
	rq.nsid = nsid;
	rq.cdw10 = (uint32_t)slba;
	rq.cdw11 = (uint32_t)(slba >> 32);
	rq.cdw12 = nlb - 1;
	c->st.write_zeroes++;
	return nvme_exec_sync(&c->io[0], &rq, NULL);
}

/* Deallocate an LBA range (Dataset Management with AD). */
int nvme_deallocate(struct nvme_ctrl *c, uint32_t nsid, uint64_t slba, uint32_t nlb)
{
	struct nvme_request rq;
	dma_addr_t addr;
	int rc = io_ready(c);
	if (rc)
		return rc;
	struct nvme_ns *ns = nvme_ns_get(c, nsid);
	if (!ns)
		return -ENODEV;
	if (!(c->oncs & NVME_ONCS_DSM))
		return -EOPNOTSUPP;
	if (nlb == 0 || slba >= ns->nsze || nlb > ns->nsze - slba)
		return nlb == 0 ? -EINVAL : -ERANGE;
	struct nvme_dsm_range *r = c->bus->dma_alloc(c->bus->ctx, NVME_PAGE_SIZE, &addr);
	if (!r)
		return -ENOMEM;
	r->cattr = le32_make(0);
	r->nlb = le32_make(nlb);
	r->slba = le64_make(slba);
	struct nvme_sg sg = { addr, sizeof(*r) };
	memset(&rq, 0, sizeof(rq));
	rq.opc = NVME_CMD_DSM;
	rq.nsid = nsid;
	rq.cdw10 = 0;            /* NR: one range, 0's based */
	rq.cdw11 = NVME_DSM_AD;
	rq.sg = &sg;
	rq.nsg = 1;
	rq.dir = DMA_TO_DEVICE;
	c->st.dsms++;
	rc = nvme_exec_sync(&c->io[0], &rq, NULL);
	/* After a timeout the controller may still read the range: keep the page then. */
	if (rc != -ETIMEDOUT)
		c->bus->dma_free(c->bus->ctx, r, NVME_PAGE_SIZE);
	return rc;
}

/* --- registry --- */

/* Make a controller visible to the console and other drivers. */
int nvme_register(struct nvme_ctrl *c)
{
	if (nvme_nregistered >= NVME_MAX_CTRLS)
		return -ENOSPC;
	nvme_registered[nvme_nregistered++] = c;
	return 0;
}

/* Remove a controller from the registry. */
void nvme_unregister(struct nvme_ctrl *c)
{
	for (unsigned i = 0; i < nvme_nregistered; i++)
		if (nvme_registered[i] == c) {
			nvme_registered[i] = nvme_registered[--nvme_nregistered];
			nvme_registered[nvme_nregistered] = NULL;
			return;
		}
}

