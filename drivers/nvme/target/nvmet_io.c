/*
 * nvmet_io.c - NVM commands on I/O queues: Read, Write, Flush, Write Zeroes and Dataset
 * Management, checked (namespace, LBA range, transfer length against the host's SGL and
 * MDTS) and routed to the namespace's backend. The backend I/O lives in the request
 * (bio_space), so an I/O allocates nothing; its errno becomes an NVMe status in
 * nvmet_errno_status() only.
 */
#include <errno.h>
#include <string.h>
#include "../../../lib/log.h"
#include "nvmet_priv.h"

LOG_MODULE_USE(nvmet);

/* The status a host sees for a backend's result: the device's own NVMe status when it has
 * one (a media error stays a media error), Namespace Not Ready when the device is gone, else
 * the errno conversion. */
static uint16_t bio_status(const struct nvmet_bio *bio, int rc)
{
	if (rc == 0)
		return NVMET_SC_SUCCESS;
	nvmet_tgt.st.backend_errors++;
	if (bio->status)
		return bio->status;
	if (rc == -ENODEV)
		return NVMET_SC_NS_NOT_READY;
	return nvmet_errno_status(rc);
}

/* bio_submit, submit, exec_rw: inline (once per command, the path of every Read/Write) */
static inline __attribute__((always_inline)) int bio_submit(struct nvmet_bdev *b, struct nvmet_bio *bio)
{
	bio->bdev = b;
	bio->status = 0;
	return b->ops->submit(b, bio);
}

static void bio_done(struct nvmet_bio *bio, int rc)
{
	struct nvmet_req *req = bio->arg;
	struct nvmet_queue *q = req->q;

	if (rc == 0 && bio->op == NVMET_BIO_READ) {
		req->xfer_len = req->data.len;
		q->st.read_bytes += req->data.len;
	} else if (rc == 0 && bio->op == NVMET_BIO_WRITE) {
		q->st.write_bytes += req->data.len;
	}
	if (rc == 0 && bio->fua && !bio->fua_flush && (bio->op == NVMET_BIO_WRITE || bio->op == NVMET_BIO_WRITE_ZEROES) &&
	    bio->bdev->vwc && !bio->bdev->fua) {
		/* FUA the backend cannot honour: the write is in its cache; complete only once a
		 * Flush issued after it has completed */
		nvmet_tgt.st.fua_emulated++;
		bio->op = NVMET_BIO_FLUSH;
		bio->fua_flush = true;
		if ((rc = bio_submit(bio->bdev, bio)) == 0)
			return;
	}
	nvmet_req_complete(req, bio_status(bio, rc));
}

static inline __attribute__((always_inline)) void submit(struct nvmet_req *req, struct nvmet_ns *ns, struct nvmet_bio *bio)
{
	int rc;

	bio->sg = req->data.sg;
	bio->nsg = req->data.nsg;
	bio->done = bio_done;
	bio->arg = req;
	if ((rc = bio_submit(&ns->bdev, bio)) < 0)
		nvmet_req_complete(req, rc == -ENODEV ? NVMET_SC_NS_NOT_READY : nvmet_errno_status(rc));
}

/* ns's bit in its controller's ns_written. */
static inline uint32_t ns_bit(const struct nvmet_ctrl *c, const struct nvmet_ns *ns)
{
	return 1u << (unsigned)(ns - c->subsys->ns);
}

/* Remember that this controller wrote to ns (CC.SHN flushes it). */
static void mark_written(struct nvmet_req *req, const struct nvmet_ns *ns)
{
	req->q->ctrl->ns_written |= ns_bit(req->q->ctrl, ns);
}

/* Does ns's backend take a Read/Write through ops->rw: FUA needs no emulation there (the
 * backend honours it, or nothing is volatile)? */
static inline bool rw_direct(const struct nvmet_ns *ns)
{
	return ns->bdev.ops->rw && (ns->bdev.fua || !ns->bdev.vwc);
}

/* [slba, slba + nlb) inside the namespace? */
static bool lba_ok(const struct nvmet_ns *ns, uint64_t slba, uint64_t nlb)
{
	return slba <= ns->bdev.nblocks && nlb <= ns->bdev.nblocks - slba;
}

/* The backend's route of ns when ops->rw serves it (direct) and it says what ops->rw calls
 * on it (ops->rw_route), else NULL: a call the core makes itself (struct nvmet_rw_fast). */
static struct nvme_rw_route *rw_route(struct nvmet_ns *ns, bool direct)
{
	return direct && ns->bdev.ops->rw_route ? &ns->bdev.route : NULL;
}

/* A Read/Write to ns, its checks before the namespace's made: its LBA range, MDTS (mdts),
 * length, then the backend (ops->rw when direct; ops->rw_route straight when f has the
 * route: rw_route). bit: ns's bit in ns_written. */
static inline __attribute__((always_inline)) void exec_rw(struct nvmet_req *req, struct nvmet_ns *ns, bool write,
							 uint32_t mdts, uint32_t bit, bool direct,
							 const struct nvmet_rw_fast *f)
{
	struct nvmet_bio *bio = (struct nvmet_bio *)req->bio_space;
	struct nvmet_subsys *s = req->q->ctrl->subsys;
	uint64_t slba = (uint64_t)le32_get(req->sqe.cdw11) << 32 | le32_get(req->sqe.cdw10);
	uint32_t nlb = (le32_get(req->sqe.cdw12) & 0xffff) + 1;
	uint64_t bytes = (uint64_t)nlb << ns->bdev.lba_shift;

	if (!lba_ok(ns, slba, nlb))
		return nvmet_req_complete(req, NVMET_SC_LBA_RANGE);
	if (bytes > mdts)
		return nvmet_req_complete(req, NVMET_SC_INVALID_FIELD);
	if (req->data.len != bytes)
		return nvmet_req_complete(req, NVMET_SC_SGL_LENGTH_INVALID);
	if (write) {
		s->write_cmds++;
		s->write_bytes += bytes;
		req->q->ctrl->ns_written |= bit; /* CC.SHN flushes it */
	} else {
		s->read_cmds++;
		s->read_bytes += bytes;
	}
	bool fua = (le32_get(req->sqe.cdw12) & NVME_RW_FUA) != 0; /* Read FUA passes through too */
	if (write && fua)
		nvmet_tgt.st.fua_writes++;
	if (direct) {
		/* straight to the device, completed by nvmet_rw_done (rw_direct), a refusal by
		 * nvmet_rw_refused in the backend: nothing left to do here (a tail call) */
		nvmet_tgt.st.rw_direct++;
		if (f->route) {
			/* (ops->rw's call, without the backend's layer: NVMe's driver runs the
			 * backend's check when the controller changed, nvme_rw_route.check) */
			const struct nvme_rw_data d = {
				.sg = req->data.sg, .nsg = req->data.nsg, .write = write, .checked = req->data.checked
			};
			(void)f->rw_route(f->route, slba, le32_get(req->sqe.cdw12) & (0xffffu | NVME_RW_FUA), d, req);
			return;
		}
		(void)ns->bdev.ops->rw(&ns->bdev, req, write, slba, nlb, fua);
		return;
	}
	memset(bio, 0, sizeof(*bio));
	bio->op = write ? NVMET_BIO_WRITE : NVMET_BIO_READ;
	bio->slba = slba;
	bio->nlb = nlb;
	bio->fua = fua;
	submit(req, ns, bio);
}

void nvmet_rw_done(void *arg, int rc, const struct nvme_cqe *cqe)
{
	struct nvmet_req *req = arg;
	struct nvmet_queue *q = req->q;

	if (rc == 0) {
		/* bio_done's accounting for a Read/Write */
		if (req->sqe.opc == NVME_CMD_READ) {
			req->xfer_len = req->data.len;
			q->st.read_bytes += req->data.len;
		} else {
			q->st.write_bytes += req->data.len;
		}
		return nvmet_req_complete(req, NVMET_SC_SUCCESS);
	}
	/* bio_status: the drive's own status, Namespace Not Ready when gone, else the errno */
	nvmet_tgt.st.backend_errors++;
	uint16_t status = cqe ? (uint16_t)((le16_get(cqe->status) >> 1) & 0x7ff) : 0; /* SCT << 8 | SC */
	if (!status)
		status = rc == -ENODEV ? NVMET_SC_NS_NOT_READY : nvmet_errno_status(rc);
	nvmet_req_complete(req, status);
}

void nvmet_rw_refused(void *arg, int rc, const struct nvme_cqe *cqe)
{
	(void)cqe;
	nvmet_req_complete(arg, rc == -ENODEV ? NVMET_SC_NS_NOT_READY : nvmet_errno_status(rc));
}

static void exec_write_zeroes(struct nvmet_req *req, struct nvmet_ns *ns)
{
	struct nvmet_bio *bio = (struct nvmet_bio *)req->bio_space;
	uint64_t slba = (uint64_t)le32_get(req->sqe.cdw11) << 32 | le32_get(req->sqe.cdw10);
	uint32_t nlb = (le32_get(req->sqe.cdw12) & 0xffff) + 1;

	if (!ns->bdev.write_zeroes)
		return nvmet_req_complete(req, NVMET_SC_INVALID_OPCODE);
	if (req->data.len)
		return nvmet_req_complete(req, NVMET_SC_SGL_LENGTH_INVALID);
	if (!lba_ok(ns, slba, nlb))
		return nvmet_req_complete(req, NVMET_SC_LBA_RANGE);
	memset(bio, 0, sizeof(*bio));
	bio->op = NVMET_BIO_WRITE_ZEROES;
	bio->slba = slba;
	bio->nlb = nlb;
	bio->attr = le32_get(req->sqe.cdw12) & NVME_WZ_DEAC;
	bio->fua = (le32_get(req->sqe.cdw12) & NVME_RW_FUA) != 0;
	if (bio->fua)
		nvmet_tgt.st.fua_writes++;
	mark_written(req, ns);
	submit(req, ns, bio);
}

static void exec_dsm(struct nvmet_req *req, struct nvmet_ns *ns)
{
	struct nvmet_bio *bio = (struct nvmet_bio *)req->bio_space;
	uint32_t nr = (le32_get(req->sqe.cdw10) & 0xff) + 1;

	if (req->data.len != nr * sizeof(struct nvme_dsm_range))
		return nvmet_req_complete(req, NVMET_SC_SGL_LENGTH_INVALID);
	for (uint32_t i = 0; i < nr; i++) {
		struct nvme_dsm_range r;
		if (nvmet_copy_from_req(req, i * (uint32_t)sizeof(r), &r, sizeof(r)) < 0)
			return nvmet_req_complete(req, NVMET_SC_DATA_XFER_ERROR);
		if (!lba_ok(ns, le64_get(r.slba), le32_get(r.nlb)))
			return nvmet_req_complete(req, NVMET_SC_LBA_RANGE);
	}
	/* without Attribute - Deallocate the ranges are hints only */
	if (!(le32_get(req->sqe.cdw11) & NVME_DSM_AD) || !ns->bdev.dsm)
		return nvmet_req_complete(req, NVMET_SC_SUCCESS);
	memset(bio, 0, sizeof(*bio));
	mark_written(req, ns);
	bio->op = NVMET_BIO_DSM;
	bio->nlb = nr;
	bio->attr = le32_get(req->sqe.cdw11);
	submit(req, ns, bio);
}

/* nvmet_ana_io_status's common answer inline (every Read and Write asks): the namespace's
 * group (nvmet_ana_ns_grpid) optimized or non-optimized on the controller's port, read where
 * nvmet_ana_state reads it; anything else goes to the full function, which answers it. */
static inline uint16_t ana_io_status(const struct nvmet_ctrl *c, const struct nvmet_ns *ns)
{
	uint32_t g = ns->cfg && ns->cfg->anagrpid ? ns->cfg->anagrpid : 1;
	if (c->port < NVMET_CFG_MAX_PORTS && g <= NVMET_ANA_GRPMAX) {
		uint8_t st = nvmet_tgt.ana.port[c->port].state[g];
		if (st == NVMET_ANA_OPTIMIZED || st == NVMET_ANA_NON_OPTIMIZED)
			return NVMET_SC_SUCCESS;
	}
	return nvmet_ana_io_status(c, ns);
}

/* A Read/Write to ns that passed every check up to the namespace's own and its ANA status
 * on the general path (or nvmet_exec's hinted one): the queue's rw_fast from what those
 * checks found (struct nvmet_rw_fast says what it caches and what drops it), then the
 * Read/Write with the values it caches. */
static inline __attribute__((always_inline)) void exec_rw_build(struct nvmet_req *req, struct nvmet_ns *ns,
							       bool write)
{
	struct nvmet_queue *q = req->q;
	struct nvmet_rw_fast *f = &q->rw_fast;
	struct nvmet_ctrl *c = q->ctrl;

	if (f->gen != nvmet_tgt.rw_gen || f->ns != ns) {
		f->nsid = ns->nsid;
		f->ns = ns;
		f->mdts = nvmet_ctrl_mdts_inline(c);
		f->ns_bit = ns_bit(c, ns);
		f->direct = rw_direct(ns);
		f->route = rw_route(ns, f->direct);
		f->rw_route = ns->bdev.ops->rw_route;
		/* what the callers checked, said again: the descriptor stands for it */
		f->gen = nvmet_tgt.rw_fast_off || q->state != NVMET_Q_LIVE || !q->qid || c->state != NVMET_CTRL_ENABLED ||
				 !ns->opened || !nvmet_ns_active(ns)
			 ? 0
			 : nvmet_tgt.rw_gen;
	}
	exec_rw(req, ns, write, f->mdts, f->ns_bit, f->direct, f);
}

void nvmet_exec_rw(struct nvmet_req *req, struct nvmet_ns *ns)
{
	uint16_t ana = ana_io_status(req->q->ctrl, ns); /* not through this port: a path status */
	if (ana)
		return nvmet_req_complete(req, ana);
	exec_rw_build(req, ns, req->sqe.opc == NVME_CMD_WRITE);
}

void nvmet_exec_rw_fast(struct nvmet_req *req)
{
	const struct nvmet_rw_fast *f = &req->q->rw_fast;

	nvmet_tgt.st.rw_fast++;
	exec_rw(req, f->ns, req->sqe.opc == NVME_CMD_WRITE, f->mdts, f->ns_bit, f->direct, f);
}

void nvmet_exec_io(struct nvmet_req *req)
{
	struct nvmet_bio *bio = (struct nvmet_bio *)req->bio_space;
	uint8_t opc = req->sqe.opc;
	struct nvmet_ns *ns;

	switch (opc) {
	case NVME_CMD_READ:
	case NVME_CMD_WRITE:
	case NVME_CMD_FLUSH:
	case NVME_CMD_WRITE_ZEROES:
	case NVME_CMD_DSM:
		break;
	default:
		return nvmet_req_complete(req, NVMET_SC_INVALID_OPCODE);
	}
	if (!(ns = nvmet_ns_find(req->q->ctrl->subsys, le32_get(req->sqe.nsid))))
		return nvmet_req_complete(req, NVMET_SC_INVALID_NS);
	uint16_t ana = nvmet_ana_io_status(req->q->ctrl, ns); /* not through this port: a path status */
	if (ana)
		return nvmet_req_complete(req, ana);
	switch (opc) {
	case NVME_CMD_READ:
		return exec_rw_build(req, ns, false);
	case NVME_CMD_WRITE:
		return exec_rw_build(req, ns, true);
	case NVME_CMD_FLUSH:
		if (req->data.len)
			return nvmet_req_complete(req, NVMET_SC_SGL_LENGTH_INVALID);
		if (!ns->bdev.vwc) {
			/* nothing volatile behind this namespace: every completed write is durable */
			nvmet_tgt.st.flushes_skipped++;
			return nvmet_req_complete(req, NVMET_SC_SUCCESS);
		}
		/* Ordering: a write is completed to the host only after its backend completed it,
		 * so every write the host saw complete before this Flush has completed at the
		 * drive before this Flush is submitted: the drive's Flush covers it. */
		nvmet_tgt.st.flushes++;
		memset(bio, 0, sizeof(*bio));
		bio->op = NVMET_BIO_FLUSH;
		return submit(req, ns, bio);
	case NVME_CMD_WRITE_ZEROES:
		return exec_write_zeroes(req, ns);
	default:
		return exec_dsm(req, ns);
	}
}

/* --- CC.SHN --- */

bool nvmet_subsys_vwc(const struct nvmet_subsys *s)
{
	for (unsigned i = 0; i < s->nns; i++)
		if (s->ns[i].opened && s->ns[i].bdev.vwc)
			return true;
	return false;
}

static void shn_set_complete(struct nvmet_ctrl *c)
{
	c->csts = (c->csts & ~(uint32_t)NVME_SET(NVME_CSTS_SHST, NVME_CSTS_SHST_MASK)) |
		  (uint32_t)NVME_SET(NVME_CSTS_SHST, NVME_CSTS_SHST_COMPLETE);
}

static void shn_flush_done(struct nvmet_bio *bio, int rc)
{
	struct nvmet_ctrl *c = bio->arg;

	if (rc) {
		c->shn_failed = true;
		nvmet_tgt.st.shn_flush_failures++;
		log_err("ctrl %u: shutdown Flush of %s failed (%d): CSTS.SHST stays \"occurring\"", c->cntlid,
			bio->bdev->name, rc);
	}
	if (--c->shn_pending)
		return;
	if (c->free_deferred) {
		nvmet_ctrl_release(c);
		return;
	}
	if (!c->shn_failed && c->state == NVMET_CTRL_SHUTDOWN && NVME_GET(c->cc, NVME_CC_SHN)) {
		shn_set_complete(c);
		log_info("ctrl %u: shutdown complete (caches flushed)", c->cntlid);
	}
}

/* CC.SHN: flush what this controller wrote, then CSTS.SHST complete. */
void nvmet_ctrl_shutdown_start(struct nvmet_ctrl *c)
{
	struct nvmet_subsys *s = c->subsys;

	nvmet_ctrl_set_state(c, NVMET_CTRL_SHUTDOWN);
	/* the controller stops processing (RDY 0, as before) and reports the shutdown */
	c->csts = (uint32_t)NVME_SET(NVME_CSTS_SHST, NVME_CSTS_SHST_OCCURRING);
	if (c->shn_pending)
		return; /* a previous shutdown's Flushes are still out: they finish it */
	c->shn_failed = false;
	c->shn_pending = 1; /* held while submitting, so a Flush done inside submit cannot finish */
	for (unsigned i = 0; s && i < s->nns; i++) {
		struct nvmet_ns *ns = &s->ns[i];
		if (!(c->ns_written & (1u << i)) || !ns->opened || !ns->bdev.vwc)
			continue;
		struct nvmet_bio *bio = &c->shn_bio[i];
		memset(bio, 0, sizeof(*bio));
		bio->op = NVMET_BIO_FLUSH;
		bio->done = shn_flush_done;
		bio->arg = c;
		c->shn_pending++;
		nvmet_tgt.st.shn_flushes++;
		int rc = bio_submit(&ns->bdev, bio);
		if (rc) {
			c->shn_pending--;
			c->shn_failed = true;
			nvmet_tgt.st.shn_flush_failures++;
			log_err("ctrl %u: shutdown Flush of %s not started (%d)", c->cntlid, ns->bdev.name, rc);
		}
	}
	c->ns_written = 0;
	struct nvmet_bio hold = { .arg = c, .bdev = NULL };
	shn_flush_done(&hold, 0); /* drops the hold; completes at once when nothing was written */
}

/* Did the host disable SQ flow control at Connect (CATTR)? */
bool nvmet_queue_sqflow_disabled(const struct nvmet_queue *q)
{
	return q && q->sqflow_off;
}
