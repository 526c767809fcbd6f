/*
 * fake_nvme.c - see fake_nvme.h. Linked into the NVMe controller unit tests.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "fake_nvme.h"
#include "tests/unit/unit_support.h"

#define SC(sct, sc) ((uint16_t)(((sct) << 9) | ((sc) << 1)))
#define DNR 0x8000

static bool in_cmb(struct fake_nvme *f, uint64_t a)
{
	uint64_t base = (uint64_t)(uintptr_t)f->cmb;
	return f->cmb && a >= base && a < base + FAKE_CMB_SIZE;
}

/* --- data transfer: gather/scatter len bytes between buf and the command's PRPs/SGLs --- */

struct xfer {
	struct fake_nvme *f;
	uint8_t *buf;
	uint64_t len, done;
	bool to_host;       /* the controller writes memory (Read, Identify) */
	bool first_cmb;     /* the first address was in the CMB */
	bool first_seen;
	uint16_t status;
};

static void move(struct xfer *x, uint64_t addr, uint64_t n)
{
	if (x->status)
		return;
	if (!x->first_seen) {
		x->first_seen = true;
		x->first_cmb = in_cmb(x->f, addr);
	}
	if (in_cmb(x->f, addr) != x->first_cmb) {
		x->status = SC(0, 0x12) | DNR; /* Invalid Use of CMB: memories mixed */
		return;
	}
	if (x->first_cmb && !x->f->cmse) {
		x->f->cmb_silent_drops++; /* QEMU: blocked re-entrant I/O, status 0 */
		x->done += n;
		return;
	}
	uint8_t *p = (uint8_t *)(uintptr_t)addr;
	if (x->to_host)
		memcpy(p, x->buf + x->done, n);
	else
		memcpy(x->buf + x->done, p, n);
	x->done += n;
}

static void check_list_location(struct xfer *x, uint64_t list)
{
	if (x->first_seen && in_cmb(x->f, list) != x->first_cmb)
		x->status = SC(0, 0x12) | DNR;
}

static void xfer_prp(struct xfer *x, uint64_t prp1, uint64_t prp2)
{
	uint64_t n = 4096 - (prp1 & 4095);
	if (n > x->len)
		n = x->len;
	move(x, prp1, n);
	uint64_t left = x->len - n;
	if (!left)
		return;
	if (left <= 4096) {
		move(x, prp2, left);
		return;
	}
	check_list_location(x, prp2);
	const le64_t *list = (const le64_t *)(uintptr_t)prp2;
	unsigned idx = (prp2 & 4095) / 8;
	while (left && !x->status) {
		if (idx == 511 && left > 4096) {
			list = (const le64_t *)(uintptr_t)le64_get(list[511]);
			idx = 0;
			continue;
		}
		uint64_t m = left < 4096 ? left : 4096;
		move(x, le64_get(list[idx++]), m);
		left -= m;
	}
}

static void xfer_sgl(struct xfer *x, const struct nvme_sgl_desc *d0)
{
	struct nvme_sgl_desc d = *d0;
	const struct nvme_sgl_desc *seg = NULL;
	unsigned nseg = 0, i = 0;
	for (unsigned guard = 0; guard < 100000 && !x->status; guard++) {
		unsigned type = d.id >> 4;
		if (type == NVME_SGL_TYPE_DATA_BLOCK) {
			if (le32_get(d.len) > x->len - x->done) {
				x->status = SC(0, 0x0f) | DNR;
				return;
			}
			move(x, le64_get(d.addr), le32_get(d.len));
		} else if (type == NVME_SGL_TYPE_SEGMENT || type == NVME_SGL_TYPE_LAST_SEGMENT) {
			if (seg && i != nseg) {
				x->status = SC(0, 0x0d) | DNR; /* segment pointer not last */
				return;
			}
			check_list_location(x, le64_get(d.addr));
			if (!x->first_seen) { /* the list address decides when it comes first */
				x->first_seen = true;
				x->first_cmb = in_cmb(x->f, le64_get(d.addr));
			}
			seg = (const struct nvme_sgl_desc *)(uintptr_t)le64_get(d.addr);
			nseg = le32_get(d.len) / 16;
			i = 0;
		} else {
			x->status = SC(0, 0x11) | DNR;
			return;
		}
		if (!seg || i >= nseg)
			break;
		d = seg[i++];
	}
	if (!x->status && x->done != x->len)
		x->status = SC(0, 0x0f) | DNR; /* SGL total != transfer length */
}

static uint16_t xfer(struct fake_nvme *f, const struct nvme_sqe *c, void *buf, uint64_t len, bool to_host)
{
	struct xfer x = { f, buf, len, 0, to_host, false, false, 0 };
	f->last_psdt = c->flags & NVME_SQE_PSDT_MASK;
	if (f->last_psdt == NVME_SQE_PSDT_SGL) {
		struct nvme_sgl_desc d = c->dptr.sgl1;
		xfer_sgl(&x, &d);
	} else {
		xfer_prp(&x, le64_get(c->dptr.prp1), le64_get(c->dptr.prp2));
	}
	return x.status;
}

/* --- commands --- */

static void post(struct fake_nvme *f, unsigned sqid, uint16_t cid, uint16_t status, uint32_t dw0)
{
	struct fake_q *sq = &f->sq[sqid], *cq = &f->cq[sq->cqid];
	struct nvme_cqe *e = (struct nvme_cqe *)(uintptr_t)cq->base + cq->tail;
	struct nvme_cqe v;
	memset(&v, 0, sizeof(v));
	v.dw0 = le32_make(dw0);
	v.sqhd = le16_make(sq->head);
	v.sqid = le16_make((uint16_t)sqid);
	v.cid = le16_make(cid);
	v.status = le16_make((uint16_t)(status | cq->phase));
	*e = v;
	f->last_status = status;
	if (++cq->tail == cq->depth) {
		cq->tail = 0;
		cq->phase ^= 1;
	}
}

static void put_str(uint8_t *dst, const char *s, size_t n)
{
	memset(dst, ' ', n);
	memcpy(dst, s, strlen(s));
}

static uint16_t admin(struct fake_nvme *f, const struct nvme_sqe *c, uint32_t *dw0)
{
	static uint8_t id[4096];
	uint32_t cdw10 = le32_get(c->cdw10), cdw11 = le32_get(c->cdw11);
	unsigned opc = c->opc, qid = cdw10 & 0xffff;
	switch (opc) {
	case NVME_ADM_IDENTIFY:
		memset(id, 0, sizeof(id));
		switch (cdw10 & 0xff) {
		case NVME_ID_CNS_CTRL:
			put_str(id + NVME_IDC_SN, "FAKE0001", 20);
			put_str(id + NVME_IDC_MN, "Fake NVMe Ctrl", 40);
			put_str(id + NVME_IDC_FR, "1.0", 8);
			id[NVME_IDC_MDTS] = f->mdts; /* 5 by default: 128 KiB */
			id[NVME_IDC_NN] = 1;
			id[NVME_IDC_ONCS] = NVME_ONCS_DSM | NVME_ONCS_WRITE_ZEROES;
			id[NVME_IDC_VWC] = f->vwc ? 1 : 0;
			memcpy(id + NVME_IDC_RTD3E, &f->rtd3e, 4);
			memcpy(id + NVME_IDC_SGLS, &f->sgls, 4);
			memcpy(id + NVME_IDC_VER, &f->vs, 4);
			break;
		case NVME_ID_CNS_NS:
			if (le32_get(c->nsid) == 1 && !f->ns_absent) {
				uint64_t nsze = f->id_nsze ? f->id_nsze : FAKE_NSZE;
				memcpy(id + NVME_IDNS_NSZE, &nsze, 8);
				memcpy(id + NVME_IDNS_NCAP, &nsze, 8);
				id[NVME_IDNS_LBAF + 2] = 9; /* LBADS 9: 512 bytes */
			}
			break;
		case NVME_ID_CNS_NS_ACTIVE_LIST:
			if (!f->ns_absent)
				id[0] = 1;
			break;
		default:
			return SC(0, 0x02) | DNR;
		}
		return xfer(f, c, id, 4096, true);
	case NVME_ADM_SET_FEATURES:
		if ((cdw10 & 0xff) != NVME_FEAT_NUM_QUEUES)
			return SC(0, 0x02) | DNR;
		*dw0 = 1u | (1u << 16); /* two SQs and two CQs */
		return 0;
	case NVME_ADM_CREATE_CQ:
		if (qid == 0 || qid >= 8 || f->cq[qid].live)
			return SC(1, 0x01) | DNR;
		f->cq[qid] = (struct fake_q){ le64_get(c->dptr.prp1), (uint16_t)((cdw10 >> 16) + 1), 0, 0, 0, 1, true };
		return 0;
	case NVME_ADM_CREATE_SQ: {
		unsigned cqid = cdw11 >> 16;
		if (qid == 0 || qid >= 8 || f->sq[qid].live)
			return SC(1, 0x01) | DNR;
		if (cqid >= 8 || !f->cq[cqid].live)
			return SC(1, 0x00) | DNR;
		f->sq[qid] = (struct fake_q){ le64_get(c->dptr.prp1), (uint16_t)((cdw10 >> 16) + 1), 0, 0, (uint16_t)cqid, 0,
					      true };
		return 0;
	}
	case NVME_ADM_DELETE_SQ:
		f->sq[qid].live = false;
		return 0;
	case NVME_ADM_DELETE_CQ:
		f->cq[qid].live = false;
		return 0;
	case NVME_ADM_ABORT:
		f->aborts++;
		if (f->drop_aborts)
			return 0xffff; /* no completion */
		if ((int)qid == f->held_sqid && (int)(cdw10 >> 16) == f->held_cid) {
			post(f, qid, (uint16_t)f->held_cid, SC(0, 0x07), 0); /* Command Abort Requested */
			f->held_sqid = -1;
			*dw0 = 0;
		} else {
			*dw0 = 1; /* not aborted */
		}
		return 0;
	default:
		return SC(0, 0x01) | DNR;
	}
}

/* Blocks [slba, slba + nlb) were written in media: durable now (no cache, FUA) or dirty. */
static void written(struct fake_nvme *f, uint64_t slba, uint64_t nlb, bool fua)
{
	for (uint64_t b = slba; b < slba + nlb; b++) {
		if (!f->vwc || fua) {
			memcpy(f->durable + b * 512, f->media + b * 512, 512);
			f->dirty[b] = 0;
		} else {
			f->dirty[b] = 1;
		}
	}
}

static void flush_cache(struct fake_nvme *f)
{
	for (uint64_t b = 0; b < FAKE_NSZE; b++)
		if (f->dirty[b]) {
			memcpy(f->durable + b * 512, f->media + b * 512, 512);
			f->dirty[b] = 0;
		}
}

static uint16_t io(struct fake_nvme *f, const struct nvme_sqe *c)
{
	unsigned opc = c->opc;
	uint64_t slba = le32_get(c->cdw10) | ((uint64_t)le32_get(c->cdw11) << 32);
	uint64_t nlb = (le32_get(c->cdw12) & 0xffff) + 1;
	bool fua = (le32_get(c->cdw12) & NVME_RW_FUA) != 0;
	f->io_commands++;
	if (le32_get(c->nsid) != 1 || f->ns_absent)
		return SC(0, 0x0b) | DNR;
	switch (opc) {
	case NVME_CMD_FLUSH:
		f->flushes++;
		flush_cache(f);
		return 0;
	case NVME_CMD_READ:
	case NVME_CMD_WRITE:
	case NVME_CMD_WRITE_ZEROES: {
		if (slba >= FAKE_NSZE || nlb > FAKE_NSZE - slba)
			return SC(0, 0x80) | DNR;
		if (f->err_status && slba < f->err_slba + f->err_nlb && f->err_slba < slba + nlb)
			return f->err_status;
		if (opc != NVME_CMD_READ && fua)
			f->fua_writes++;
		if (opc == NVME_CMD_WRITE_ZEROES) {
			memset(f->media + slba * 512, 0, nlb * 512);
			written(f, slba, nlb, fua);
			return 0;
		}
		uint16_t st = xfer(f, c, f->media + slba * 512, nlb * 512, opc == NVME_CMD_READ);
		if (opc == NVME_CMD_WRITE && !st)
			written(f, slba, nlb, fua);
		return st;
	}
	case NVME_CMD_DSM: {
		struct nvme_dsm_range r[1];
		uint16_t st = xfer(f, c, r, sizeof(r), false);
		if (st)
			return st;
		uint64_t slba = le64_get(r[0].slba);
		uint32_t nlb = le32_get(r[0].nlb);
		if (slba >= FAKE_NSZE || nlb > FAKE_NSZE - slba)
			return SC(0, 0x80) | DNR;
		memset(f->media + slba * 512, 0, (size_t)nlb * 512);
		written(f, slba, nlb, false);
		return 0;
	}
	default:
		return SC(0, 0x01) | DNR;
	}
}

/* Run what sqid holds between its head and its tail. */
static void run_sq(struct fake_nvme *f, unsigned sqid)
{
	struct fake_q *sq = &f->sq[sqid];
	if (!sq->live || !(f->csts & NVME_CSTS_RDY))
		return;
	while (sq->head != sq->tail) {
		struct nvme_sqe c = ((struct nvme_sqe *)(uintptr_t)sq->base)[sq->head];
		sq->head = (uint16_t)((sq->head + 1) % sq->depth);
		uint16_t cid = le16_get(c.cid);
		uint32_t dw0 = 0;
		f->commands++;
		if (f->nrec < FAKE_REC_MAX)
			f->rec[f->nrec] = (struct fake_rec){ (uint16_t)sqid, c.opc, le32_get(c.nsid), le32_get(c.cdw10),
							     le32_get(c.cdw11), le32_get(c.cdw12) };
		f->nrec++;
		if (sqid != 0 && (int)c.opc == f->drop_opc) {
			f->held++;
			f->held_sqid = (int)sqid;
			f->held_cid = cid;
			if (f->cfs_on_drop)
				f->csts |= NVME_CSTS_CFS;
			continue;
		}
		uint16_t st = sqid == 0 ? admin(f, &c, &dw0) : io(f, &c);
		if (st != 0xffff)
			post(f, sqid, cid, st, dw0);
		if (st != 0xffff && sqid != 0 && f->dup_io_cqe)
			post(f, sqid, cid, st, dw0);
	}
}

/* A submission queue's doorbell: the new tail, run at once, or at fake_nvme_run for an
 * I/O queue of a drive that answers later (io_later). */
static void ring_sq(struct fake_nvme *f, unsigned sqid, uint16_t tail)
{
	struct fake_q *sq = &f->sq[sqid];
	if (!sq->live || !(f->csts & NVME_CSTS_RDY))
		return;
	sq->tail = tail;
	if (!f->io_later || sqid == 0)
		run_sq(f, sqid);
}

void fake_nvme_run(struct fake_nvme *f)
{
	for (unsigned q = 1; q < sizeof(f->sq) / sizeof(f->sq[0]); q++)
		if (f->sq[q].live && f->sq[q].head != f->sq[q].tail)
			run_sq(f, q);
}

/* --- registers --- */

static uint32_t rd32(void *ctx, uint32_t off)
{
	struct fake_nvme *f = ctx;
	if (f->removed)
		return 0xffffffffu;
	switch (off) {
	case NVME_REG_VS: return f->vs;
	case NVME_REG_CC: return f->cc;
	case NVME_REG_CSTS: return f->csts;
	case NVME_REG_CMBLOC: return f->cmbloc;
	case NVME_REG_CMBSZ: return f->cmbsz;
	case NVME_REG_CMBSTS: return f->cmbsts;
	default: return 0;
	}
}

static uint64_t rd64(void *ctx, uint32_t off)
{
	struct fake_nvme *f = ctx;
	if (f->removed)
		return ~0ull;
	switch (off) {
	case NVME_REG_CAP: return f->cap;
	case NVME_REG_CMBMSC: return f->cmbmsc;
	default: return rd32(ctx, off);
	}
}

static void enable(struct fake_nvme *f)
{
	f->enables++;
	if (f->cfs_on_enable) {
		f->csts |= NVME_CSTS_CFS;
		return;
	}
	if (f->never_ready)
		return;
	unsigned depth = (f->aqa & 0xfff) + 1;
	f->sq[0] = (struct fake_q){ f->asq, (uint16_t)depth, 0, 0, 0, 0, true };
	f->cq[0] = (struct fake_q){ f->acq, (uint16_t)(((f->aqa >> 16) & 0xfff) + 1), 0, 0, 0, 1, true };
	f->csts |= NVME_CSTS_RDY;
}

static void wr32(void *ctx, uint32_t off, uint32_t v)
{
	struct fake_nvme *f = ctx;
	if (f->removed)
		return;
	unsigned stride = 4u << ((f->cap >> 32) & 0xf);
	if (off >= NVME_REG_DBS) {
		unsigned idx = (off - NVME_REG_DBS) / stride;
		if ((off - NVME_REG_DBS) % stride)
			return;
		if (idx % 2 == 0 && idx / 2 < 8)
			ring_sq(f, idx / 2, (uint16_t)v);
		else if (idx / 2 < 8)
			f->cq[idx / 2].head = (uint16_t)v;
		return;
	}
	switch (off) {
	case NVME_REG_CC: {
		bool was = f->cc & NVME_CC_EN, now = v & NVME_CC_EN;
		unsigned shn_was = (f->cc >> NVME_CC_SHN_SHIFT) & 3, shn = (v >> NVME_CC_SHN_SHIFT) & 3;
		f->cc = v;
		if (was && now && shn == NVME_CC_SHN_NORMAL && shn_was != shn) {
			/* normal shutdown: the controller writes its cache to media */
			f->shn_count++;
			f->shn_at = f->nrec ? f->nrec : 1;
			f->csts = (f->csts & ~(3u << NVME_CSTS_SHST_SHIFT)) |
				  ((f->shn_never_completes ? NVME_CSTS_SHST_OCCURRING : NVME_CSTS_SHST_DONE)
				   << NVME_CSTS_SHST_SHIFT);
			if (!f->shn_never_completes)
				flush_cache(f);
		}
		if (was && !now) {
			f->disables++;
			f->csts = 0;
			memset(f->sq, 0, sizeof(f->sq));
			memset(f->cq, 0, sizeof(f->cq));
		} else if (!was && now) {
			enable(f);
		}
		break;
	}
	case NVME_REG_AQA: f->aqa = v; break;
	case NVME_REG_CMBMSC:
	case NVME_REG_CMBMSC + 4: {
		if (!f->cmb_v14)
			break;
		if (off == NVME_REG_CMBMSC + 4) {
			f->cmbmsc = (f->cmbmsc & 0xffffffffull) | ((uint64_t)v << 32);
			break;
		}
		f->cmbmsc = (f->cmbmsc & ~0xffffffffull) | v;
		if (f->ignore_cmse)
			f->cmbmsc &= ~NVME_CMBMSC_CMSE;
		f->cmse = false;
		if (f->cmbmsc & NVME_CMBMSC_CRE) {
			f->cmbloc = 2;
			f->cmbsz = 0x0000421d; /* 4 x 1 MiB, SQS LISTS RDS WDS */
			if (f->cmbmsc & NVME_CMBMSC_CMSE)
				f->cmse = (f->cmbmsc & NVME_CMBMSC_CBA_MASK) == (uint64_t)(uintptr_t)f->cmb;
		}
		break;
	}
	default: break;
	}
}

static void wr64(void *ctx, uint32_t off, uint64_t v)
{
	struct fake_nvme *f = ctx;
	switch (off) {
	case NVME_REG_ASQ: f->asq = v; break;
	case NVME_REG_ACQ: f->acq = v; break;
	default:
		wr32(ctx, off + 4, (uint32_t)(v >> 32));
		wr32(ctx, off, (uint32_t)v);
	}
}

static void *dma_alloc(void *ctx, size_t bytes, dma_addr_t *addr)
{
	struct fake_nvme *f = ctx;
	size_t n = (bytes + 4095) & ~(size_t)4095;
	void *p = aligned_alloc(4096, n);
	if (!p)
		return NULL;
	memset(p, 0, n);
	*addr = dma_addr_host(p);
	f->dma_live++;
	return p;
}

static void dma_free(void *ctx, void *p, size_t bytes)
{
	struct fake_nvme *f = ctx;
	(void)bytes;
	free(p);
	f->dma_live--;
}

/* The driver waits: time passes, and a drive that answers later has answered. */
static void delay(void *ctx, uint64_t ns)
{
	struct fake_nvme *f = ctx;
	fake_clock_advance(ns);
	if (f->io_later)
		fake_nvme_run(f);
}

/* A healthy controller. */
void fake_nvme_init(struct fake_nvme *f)
{
	memset(f, 0, sizeof(*f));
	/* MQES 63, CQR, TO 4 (2 s), DSTRD 0, CSS NVM, MPSMIN 0 */
	f->cap = 63 | (1ull << 16) | (4ull << 24) | (1ull << 37);
	f->vs = NVME_VS(1, 4);
	f->sgls = 1;
	f->mdts = 5;
	f->drop_opc = -1;
	f->held_sqid = -1;
	f->media = calloc(FAKE_NSZE, 512);
	f->durable = calloc(FAKE_NSZE, 512);
	f->dirty = calloc(FAKE_NSZE, 1);
	f->cmb = aligned_alloc(1 << 20, FAKE_CMB_SIZE);
	memset(f->cmb, 0, FAKE_CMB_SIZE);
	f->bus.read32 = rd32;
	f->bus.read64 = rd64;
	f->bus.write32 = wr32;
	f->bus.write64 = wr64;
	f->bus.dma_alloc = dma_alloc;
	f->bus.dma_free = dma_free;
	f->bus.delay = delay;
	f->bus.ctx = f;
	f->bus.bar_bus[0] = 0xfe000000;
	f->bus.bar_size[0] = 0x4000;
	f->bus.bar_bus[2] = (uint64_t)(uintptr_t)f->cmb;
	f->bus.bar_size[2] = FAKE_CMB_SIZE;
	f->bus.bar_cpu[2] = f->cmb;
}

void fake_nvme_fini(struct fake_nvme *f)
{
	free(f->durable);
	free(f->dirty);
	free(f->media);
	free(f->cmb);
}

/* Power cut: the volatile cache is lost, the controller resets. */
void fake_nvme_power_cut(struct fake_nvme *f)
{
	memcpy(f->media, f->durable, (size_t)FAKE_NSZE * 512);
	memset(f->dirty, 0, FAKE_NSZE);
	f->cc = 0;
	f->csts = 0;
	memset(f->sq, 0, sizeof(f->sq));
	memset(f->cq, 0, sizeof(f->cq));
	f->power_cuts++;
}

/* Blocks only in the volatile cache. */
unsigned fake_nvme_dirty_blocks(const struct fake_nvme *f)
{
	unsigned n = 0;
	for (unsigned b = 0; b < FAKE_NSZE; b++)
		n += f->dirty[b];
	return n;
}

/* The n-th recorded command matching sqid class and opcode. */
int fake_nvme_find(const struct fake_nvme *f, int sqid, uint8_t opc, unsigned n)
{
	unsigned lim = f->nrec < FAKE_REC_MAX ? f->nrec : FAKE_REC_MAX;
	for (unsigned i = 0; i < lim; i++) {
		const struct fake_rec *r = &f->rec[i];
		bool q = sqid < 0 ? r->sqid != 0 : r->sqid == (unsigned)sqid;
		if (q && r->opc == opc && n-- == 0)
			return (int)i;
	}
	return -1;
}
