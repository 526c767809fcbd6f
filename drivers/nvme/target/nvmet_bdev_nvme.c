/*
 * nvmet_bdev_nvme.c - the namespace backend over the local NVMe host driver: a config
 * namespace /dev/nvmeXnY is namespace Y of the X-th registered controller. Commands are
 * submitted asynchronously on the controller's I/O queues (round robin per namespace:
 * its nvme_rw_route.next_q, state of the namespace, not of the file) with the
 * request's segments as they are (host DRAM or a CMB: the driver builds PRPs/SGLs, in
 * the CMB when the data is there), and complete from the driver's poller. FUA is passed in
 * CDW12 (NVMe drives honour it), the drive's volatile write cache (Identify VWC) is reported
 * to the core, and a drive's error status is handed back as is for the host.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "../../../lib/list.h"
#include "nvmet.h"

static bool nvme_bdev_ready(const struct nvmet_bdev *b);

/* The namespace found at the last command (b->priv_hint) is still in c's list, active, and
 * the one b was opened on: nvme_bdev_ready()'s answer for a live controller without its
 * walk of the namespace list (a rescan or another drive in its place fails a field, and
 * the walk runs again). */
static bool ns_still_ours(const struct nvmet_bdev *b, const struct nvme_ctrl *c)
{
	const struct nvme_ns *ns = b->priv_hint;
	return ns && (size_t)(ns - c->ns) < c->nns && ns->active && ns->nsid == b->priv_id &&
	       ns->nsze == b->nblocks && ns->lba_shift == b->lba_shift;
}

static void nvme_bio_done(void *arg, int rc, const struct nvme_cqe *cqe)
{
	struct nvmet_bio *bio = arg;
	if (rc && cqe)
		bio->status = (uint16_t)((le16_get(cqe->status) >> 1) & 0x7ff); /* SCT << 8 | SC */
	bio->done(bio, rc);
}

/* The controller is live with I/O queues and b's namespace still the one it was opened
 * on: 0, else the errno a command gets (both submit paths). */
static int nvme_bdev_usable_slow(struct nvmet_bdev *b, struct nvme_ctrl *c)
{
	if (c->state != NVME_CTRL_LIVE || c->nio == 0)
		return c->in_reset ? -EAGAIN : c->state == NVME_CTRL_REMOVED ? -ENODEV : -EIO;
	if (!ns_still_ours(b, c)) {
		if (!nvme_bdev_ready(b))
			return -ENODEV; /* another drive came back in its place */
		b->priv_hint = nvme_ns_get(c, b->priv_id);
	}
	b->priv_gen = c->gen;
	b->route.gen = c->gen;
	return 0;
}

/* Is nvme_bdev_usable_slow's answer known to be 0? It is checked once per change of the
 * controller's queues or namespaces (nvme_ctrl.gen) rather than per command: while the
 * controller is LIVE with the gen of the last check that passed, nothing it looked at has
 * changed. */
static inline bool nvme_bdev_usable_known(const struct nvmet_bdev *b, const struct nvme_ctrl *c)
{
	return __builtin_expect(c->state == NVME_CTRL_LIVE && b->priv_gen == c->gen, 1);
}

/* nvme_bdev_usable_slow's answer, 0 at once when nvme_bdev_usable_known. */
static inline int nvme_bdev_usable(struct nvmet_bdev *b, struct nvme_ctrl *c)
{
	return nvme_bdev_usable_known(b, c) ? 0 : nvme_bdev_usable_slow(b, c);
}

/* The route's check (nvme_rw_route.check): nvme_bdev_usable_slow's answer, the route's gen
 * set with the backend's when it passes. A closed backend's commands are refused. */
static int nvme_route_check(struct nvme_rw_route *rt)
{
	struct nvmet_bdev *b = container_of(rt, struct nvmet_bdev, route);
	return b->priv ? nvme_bdev_usable_slow(b, b->priv) : -ENODEV;
}

/* ops->rw: the NVMe Read/Write built from the request's fields, completed by nvmet_rw_done
 * (the same command nvme_bio_submit builds from a bio); the driver runs the backend's check
 * (nvme_route_check) when the controller changed, and a refusal is completed by
 * nvmet_rw_refused (nvme_rw_route.refused): the driver's call is the last, a tail call. The
 * core makes the same call itself (ops->rw_route). */
static int nvme_bdev_rw(struct nvmet_bdev *b, struct nvmet_req *req, bool write, uint64_t slba, uint32_t nlb, bool fua)
{
	const struct nvme_rw_data d = {
		.sg = req->data.sg, .nsg = req->data.nsg, .write = write, .checked = req->data.checked
	};
	return nvme_submit_rw(&b->route, slba, (nlb - 1) | (fua ? NVME_RW_FUA : 0), d, req);
}

static int nvme_bio_submit(struct nvmet_bdev *b, struct nvmet_bio *bio)
{
	struct nvme_ctrl *c = b->priv;
	struct nvme_request rq;
	struct nvme_qpair *q;
	int rc;

	if ((rc = nvme_bdev_usable(b, c)))
		return rc;
	memset(&rq, 0, sizeof(rq));
	rq.nsid = b->priv_id;
	switch (bio->op) {
	case NVMET_BIO_READ:
	case NVMET_BIO_WRITE:
		rq.opc = bio->op == NVMET_BIO_READ ? NVME_CMD_READ : NVME_CMD_WRITE;
		rq.cdw10 = (uint32_t)bio->slba;
		rq.cdw11 = (uint32_t)(bio->slba >> 32);
		rq.cdw12 = (bio->nlb - 1) | (bio->fua ? NVME_RW_FUA : 0);
		rq.sg = bio->sg;
		rq.nsg = bio->nsg;
		rq.sgl_total = (uint64_t)bio->nlb << b->lba_shift;
		rq.dir = bio->op == NVMET_BIO_WRITE ? DMA_TO_DEVICE : DMA_FROM_DEVICE;
		rq.count_payload = true;
		break;
	case NVMET_BIO_FLUSH:
		rq.opc = NVME_CMD_FLUSH;
		break;
	case NVMET_BIO_WRITE_ZEROES:
		rq.opc = NVME_CMD_WRITE_ZEROES;
		rq.cdw10 = (uint32_t)bio->slba;
		rq.cdw11 = (uint32_t)(bio->slba >> 32);
		rq.cdw12 = (bio->nlb - 1) | (bio->attr & NVME_WZ_DEAC) | (bio->fua ? NVME_RW_FUA : 0);
		break;
	case NVMET_BIO_DSM:
		rq.opc = NVME_CMD_DSM;
		rq.cdw10 = bio->nlb - 1;
		rq.cdw11 = bio->attr;
		rq.sg = bio->sg;
		rq.nsg = bio->nsg;
		rq.dir = DMA_TO_DEVICE;
		break;
	default:
		return -EOPNOTSUPP;
	}
	q = &c->io[b->route.next_q++ % c->nio];
	return nvme_submit(q, &rq, nvme_bio_done, bio);
}

static void nvme_bdev_close(struct nvmet_bdev *b)
{
	b->priv = NULL;
	b->route.c = NULL;
}

static int nvme_bdev_flush_sync(struct nvmet_bdev *b)
{
	struct nvme_ctrl *c = b->priv;
	return c ? nvme_flush(c, b->priv_id) : -ENODEV;
}

/* Gone while the drive is removed (hot-unplugged, all-ones registers); back once a drive
 * hot-added in its place brought the same namespace up with the same size. */
static bool nvme_bdev_ready(const struct nvmet_bdev *b)
{
	struct nvme_ctrl *c = b->priv;
	if (!c || c->state == NVME_CTRL_REMOVED)
		return false;
	if (c->state != NVME_CTRL_LIVE)
		return true; /* resetting or failed: answered per command, not a removal */
	struct nvme_ns *ns = nvme_ns_get(c, b->priv_id);
	return ns && ns->nsze == b->nblocks && ns->lba_shift == b->lba_shift;
}

static const struct nvmet_bdev_ops nvme_bdev_ops = {
	.submit = nvme_bio_submit,
	.close = nvme_bdev_close,
	.flush_sync = nvme_bdev_flush_sync,
	.ready = nvme_bdev_ready,
	.rw = nvme_bdev_rw,
	.rw_route = nvme_submit_rw,
};

int nvmet_bdev_nvme_open(void *ctx, unsigned si, const struct nvmet_cfg_ns *ns, struct nvmet_bdev *out)
{
	struct nvme_ctrl *c = ns->ctrl < nvme_count() ? nvme_at(ns->ctrl) : NULL;
	struct nvme_ns *lns = c ? nvme_ns_get(c, ns->ctrl_nsid) : NULL;
	(void)ctx;
	(void)si;

	if (!lns)
		return -ENODEV;
	if (lns->ms)
		return -EOPNOTSUPP; /* metadata formats are not exported */
	memset(out, 0, sizeof(*out));
	out->ops = &nvme_bdev_ops;
	out->priv = c;
	out->priv_id = ns->ctrl_nsid;
	out->priv_gen = c->gen - 1; /* the first command checks the namespace (nvme_bdev_usable) */
	out->nblocks = lns->nsze;
	out->lba_shift = lns->lba_shift;
	out->max_xfer = c->max_xfer;
	out->write_zeroes = (c->oncs & NVME_ONCS_WRITE_ZEROES) != 0;
	out->dsm = (c->oncs & NVME_ONCS_DSM) != 0;
	out->vwc = nvme_ctrl_has_vwc(c);
	out->fua = true; /* FUA is part of every NVMe Write and Write Zeroes */
	out->has_nguid = ns->has_nguid;
	memcpy(out->nguid, ns->nguid, 16);
	out->has_uuid = ns->has_uuid;
	memcpy(out->uuid, ns->uuid, 16);
	snprintf(out->name, sizeof(out->name), "%sn%u", c->name, ns->ctrl_nsid);
	out->route = (struct nvme_rw_route){ .c = c, .nsid = ns->ctrl_nsid, .lba_shift = lns->lba_shift,
					     .gen = out->priv_gen, .done = nvmet_rw_done, .refused = nvmet_rw_refused,
					     .check = nvme_route_check };
	return 0;
}

/* The controller of an NVMe backend (NULL for other backends). */
struct nvme_ctrl *nvmet_bdev_nvme_ctrl(const struct nvmet_bdev *b)
{
	return b && b->ops == &nvme_bdev_ops ? b->priv : NULL;
}
