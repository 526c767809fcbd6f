/*
 * nvmet_io.c - NVM commands on I/O queues: Read, Write, Flush, Write Zeroes and Dataset
 * Management, checked (namespace, LBA range, transfer length against the host's SGL and
 * MDTS) and routed to the namespace's backend. The backend I/O lives in the request
 * (bio_space), so an I/O allocates nothing; its errno becomes an NVMe status in
 * nvmet_errno_status() only.
 */
#include <errno.h>
#include <string.h>
#include "nvmet_priv.h"

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
	nvmet_req_complete(req, nvmet_errno_status(rc));
}

static void submit(struct nvmet_req *req, struct nvmet_ns *ns, struct nvmet_bio *bio)
{
	int rc;

	bio->sg = req->data.sg;
	bio->nsg = req->data.nsg;
	bio->done = bio_done;
	bio->arg = req;
	if ((rc = ns->bdev.ops->submit(&ns->bdev, bio)) < 0)
		nvmet_req_complete(req, nvmet_errno_status(rc));
}

/* [slba, slba + nlb) inside the namespace? */
static bool lba_ok(const struct nvmet_ns *ns, uint64_t slba, uint64_t nlb)
{
	return slba <= ns->bdev.nblocks && nlb <= ns->bdev.nblocks - slba;
}

static void exec_rw(struct nvmet_req *req, struct nvmet_ns *ns, bool write)
{
	struct nvmet_bio *bio = (struct nvmet_bio *)req->bio_space;
	struct nvmet_subsys *s = req->q->ctrl->subsys;
	uint64_t slba = (uint64_t)req->sqe.cdw11 << 32 | req->sqe.cdw10;
	uint32_t nlb = (req->sqe.cdw12 & 0xffff) + 1;
	uint64_t bytes = (uint64_t)nlb << ns->bdev.lba_shift;

	if (!lba_ok(ns, slba, nlb))
		return nvmet_req_complete(req, NVMET_SC_LBA_RANGE);
	if (bytes > nvmet_ctrl_mdts_bytes(req->q->ctrl))
		return nvmet_req_complete(req, NVMET_SC_INVALID_FIELD);
	if (req->data.len != bytes)
		return nvmet_req_complete(req, NVMET_SC_SGL_LENGTH_INVALID);
	if (write) {
		s->write_cmds++;
		s->write_bytes += bytes;
	} else {
		s->read_cmds++;
		s->read_bytes += bytes;
	}
	memset(bio, 0, sizeof(*bio));
	bio->op = write ? NVMET_BIO_WRITE : NVMET_BIO_READ;
	bio->slba = slba;
	bio->nlb = nlb;
	submit(req, ns, bio);
}

static void exec_write_zeroes(struct nvmet_req *req, struct nvmet_ns *ns)
{
	struct nvmet_bio *bio = (struct nvmet_bio *)req->bio_space;
	uint64_t slba = (uint64_t)req->sqe.cdw11 << 32 | req->sqe.cdw10;
	uint32_t nlb = (req->sqe.cdw12 & 0xffff) + 1;

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
	bio->attr = req->sqe.cdw12 & NVME_WZ_DEAC;
	submit(req, ns, bio);
}

static void exec_dsm(struct nvmet_req *req, struct nvmet_ns *ns)
{
	struct nvmet_bio *bio = (struct nvmet_bio *)req->bio_space;
	uint32_t nr = (req->sqe.cdw10 & 0xff) + 1;

	if (req->data.len != nr * sizeof(struct nvme_dsm_range))
		return nvmet_req_complete(req, NVMET_SC_SGL_LENGTH_INVALID);
	for (uint32_t i = 0; i < nr; i++) {
		uint8_t r[sizeof(struct nvme_dsm_range)];
		if (nvmet_copy_from_req(req, i * (uint32_t)sizeof(r), r, sizeof(r)) < 0)
			return nvmet_req_complete(req, NVMET_SC_DATA_XFER_ERROR);
		if (!lba_ok(ns, nvme_ld64(r + 8), nvme_ld32(r + 4)))
			return nvmet_req_complete(req, NVMET_SC_LBA_RANGE);
	}
	/* without Attribute - Deallocate the ranges are hints only */
	if (!(req->sqe.cdw11 & NVME_DSM_AD) || !ns->bdev.dsm)
		return nvmet_req_complete(req, NVMET_SC_SUCCESS);
	memset(bio, 0, sizeof(*bio));
	bio->op = NVMET_BIO_DSM;
	bio->nlb = nr;
	bio->attr = req->sqe.cdw11;
	submit(req, ns, bio);
}

void nvmet_exec_io(struct nvmet_req *req)
{
	struct nvmet_bio *bio = (struct nvmet_bio *)req->bio_space;
	uint8_t opc = (uint8_t)NVME_SQE_OPC(req->sqe.cdw0);
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
	if (!(ns = nvmet_ns_find(req->q->ctrl->subsys, req->sqe.nsid)))
		return nvmet_req_complete(req, NVMET_SC_INVALID_NS);
	switch (opc) {
	case NVME_CMD_READ:
		return exec_rw(req, ns, false);
	case NVME_CMD_WRITE:
		return exec_rw(req, ns, true);
	case NVME_CMD_FLUSH:
		if (req->data.len)
			return nvmet_req_complete(req, NVMET_SC_SGL_LENGTH_INVALID);
		memset(bio, 0, sizeof(*bio));
		bio->op = NVMET_BIO_FLUSH;
		return submit(req, ns, bio);
	case NVME_CMD_WRITE_ZEROES:
		return exec_write_zeroes(req, ns);
	default:
		return exec_dsm(req, ns);
	}
}

/* The backend of an I/O Read/Write on a live I/O queue (for the transport's choice of
 * payload memory), or NULL for any other command. */
const struct nvmet_bdev *nvmet_req_bdev(const struct nvmet_queue *q, const struct nvme_sqe *sqe)
{
	uint8_t opc = (uint8_t)NVME_SQE_OPC(sqe->cdw0);
	struct nvmet_ns *ns;

	if (!q || q->state != NVMET_Q_LIVE || q->qid == 0 || !q->ctrl || !q->ctrl->subsys)
		return NULL;
	if (opc != NVME_CMD_READ && opc != NVME_CMD_WRITE)
		return NULL;
	ns = nvmet_ns_find(q->ctrl->subsys, sqe->nsid);
	return ns && ns->opened ? &ns->bdev : NULL;
}

/* Did the host disable SQ flow control at Connect (CATTR)? */
bool nvmet_queue_sqflow_disabled(const struct nvmet_queue *q)
{
	return q && q->sqflow_off;
}
