/*
 * roce_odp_nvme.c - the NVMe namespace store of on-demand paged regions (see
 * roce_odp_nvme.h). The frame is host DRAM: one page, one PRP entry.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "../nvme/nvme.h"
#include "roce_odp_nvme.h"

static void odp_nvme_done(void *arg, int rc, const struct nvme_cqe *cqe)
{
	struct roce_odp_io *io = arg;
	(void)cqe;
	io->done(io, rc);
}

static int odp_nvme_submit(void *ctx, struct roce_odp_io *io)
{
	struct roce_odp_nvme *s = ctx;
	struct nvme_ctrl *c = s->ctrl;
	struct nvme_request rq;
	struct nvme_sg sg;
	int rc;

	if (c->state != NVME_CTRL_LIVE || c->nio == 0)
		return c->in_reset ? -EAGAIN : c->state == NVME_CTRL_REMOVED ? -ENODEV : -EIO;
	memset(&rq, 0, sizeof(rq));
	if (io->op == ROCE_ODP_IO_FLUSH) {
		rq.opc = NVME_CMD_FLUSH;
		rq.nsid = s->nsid;
	} else {
		sg.addr = io->mem;
		sg.len = io->len;
		rc = nvme_rw_request(c, io->op == ROCE_ODP_IO_WRITE, s->nsid, s->base_lba + (io->offset >> s->lba_shift),
				     io->len >> s->lba_shift, &sg, 1, &rq);
		if (rc)
			return rc;
	}
	rc = nvme_submit(&c->io[s->rr % c->nio], &rq, odp_nvme_done, io);
	if (rc == -EBUSY) {
		s->refused++;
		return rc;
	}
	if (!rc) {
		s->submitted++;
		s->rr++;
	}
	return rc;
}

static void odp_nvme_describe(void *ctx, char *buf, unsigned cap)
{
	struct roce_odp_nvme *s = ctx;
	snprintf(buf, cap, "nvme%un%u from LBA %llu (%u B blocks)", s->ctrl_index, (unsigned)s->nsid,
		 (unsigned long long)s->base_lba, 1u << s->lba_shift);
}

int roce_odp_nvme_poll(struct roce_odp_nvme *s)
{
	int n = 0;
	for (unsigned q = 0; q < s->ctrl->nio; q++) {
		int k = nvme_qpair_poll(&s->ctrl->io[q], NVME_MAX_QDEPTH);
		if (k > 0)
			n += k;
	}
	return n;
}

static const struct roce_odp_store_ops odp_nvme_ops = { .submit = odp_nvme_submit, .describe = odp_nvme_describe };

int roce_odp_nvme_open(struct roce_odp_nvme *s, unsigned ctrl_index, uint32_t nsid, uint64_t offset,
		       uint64_t length, struct roce_odp_store *store)
{
	struct nvme_ctrl *c = ctrl_index < nvme_count() ? nvme_at(ctrl_index) : NULL;
	struct nvme_ns *ns = c ? nvme_ns_get(c, nsid) : NULL;
	uint64_t bytes;

	if (!ns)
		return -ENODEV;
	if (ns->lba_shift > ROCE_ODP_PAGE_SHIFT || ns->ms || offset % ROCE_ODP_PAGE_SIZE || length % ROCE_ODP_PAGE_SIZE)
		return -EINVAL;
	bytes = ns->nsze << ns->lba_shift;
	if (offset > bytes || length > bytes - offset || length == 0)
		return -ERANGE;
	memset(s, 0, sizeof(*s));
	s->ctrl = c;
	s->ctrl_index = ctrl_index;
	s->nsid = nsid;
	s->lba_shift = ns->lba_shift;
	s->base_lba = offset >> ns->lba_shift;
	*store = (struct roce_odp_store){ .ops = &odp_nvme_ops, .ctx = s, .size = length };
	return 0;
}
