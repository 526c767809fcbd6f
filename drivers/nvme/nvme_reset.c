/*
 * nvme_reset.c - recovery of a controller that stopped answering or reported a fatal
 * status: disable it (CC.EN = 0, bounded wait for CSTS.RDY = 0: from then on it moves no
 * data), fail the commands in flight back to their owners with a retryable errno (their
 * buffers are safe now, quarantined ones included), bring it up again with the same queues,
 * CMB layout and namespaces, and tell the attach (which republishes the CMB provider).
 * Also the periodic health check that finds CSTS.CFS and surprise removal (all-ones reads)
 * while nothing times out, and the detach of a hot-removed controller.
 */
#include <errno.h>
#include <string.h>
#include "../../lib/clock.h"
#include "../../lib/log.h"
#include "nvme.h"
#include "nvme_priv.h"

LOG_MODULE_USE(nvme);

static uint32_t csts_of(const struct nvme_ctrl *c)
{
	return c->bus->read32(c->bus->ctx, NVME_REG_CSTS);
}

static void release_memory(struct nvme_ctrl *c)
{
	for (unsigned i = 0; i < c->nio; i++)
		nvme_qpair_free(c, &c->io[i]);
	nvme_qpair_free(c, &c->admin);
	if (c->idctrl)
		c->bus->dma_free(c->bus->ctx, c->idctrl, NVME_PAGE_SIZE);
	c->idctrl = NULL;
	c->nio = 0;
	c->gen++;
}

/* Reset and re-initialise. */
int nvme_ctrl_reset(struct nvme_ctrl *c, const char *why)
{
	uint64_t t0 = clock_now_ns();
	int rc;

	if (c->in_reset)
		return -EBUSY;
	if (!c->bus || c->state == NVME_CTRL_NEW || c->state == NVME_CTRL_SHUTDOWN ||
	    c->state == NVME_CTRL_REMOVED)
		return -EINVAL;
	c->in_reset = true;
	c->reset_needed = false;
	c->rec.last_reason = why;
	log_warn("%s: controller reset: %s", c->name, why ? why : "requested");
	if (c->on_reset)
		c->on_reset(c, -EINPROGRESS); /* the attach stops handing out CMB memory */
	if (csts_of(c) == 0xffffffffu) {
		c->in_reset = false;
		nvme_ctrl_mark_removed(c);
		return -ENODEV;
	}
	c->state = NVME_CTRL_RESETTING;
	rc = nvme_ctrl_disable(c);
	if (rc == -ENODEV) {
		c->in_reset = false;
		nvme_ctrl_mark_removed(c);
		return rc;
	}
	if (rc) {
		/* Still enabled: it may still move data, so quarantined commands stay where they
		 * are (their owners are never told, their buffers never reused). */
		log_err("%s: reset: the controller would not disable (%d): failed for good", c->name, rc);
		c->state = NVME_CTRL_FAILED;
		c->error = rc;
		c->rec.reset_failures++;
		c->in_reset = false;
		if (c->on_reset)
			c->on_reset(c, rc);
		return rc;
	}
	/* Disabled: no more DMA. Owners get their commands (and buffers) back. */
	unsigned failed = nvme_fail_inflight(c, -EAGAIN);
	c->rec.failed_back += failed;
	uint64_t reserved = c->cmb.reserved;
	bool had_cmb = c->cmb.usable;
	struct nvme_qpair_stats qst[NVME_MAX_IO_QUEUES + 1];
	unsigned nio = c->nio;
	qst[0] = c->admin.st;
	for (unsigned i = 0; i < nio; i++)
		qst[i + 1] = c->io[i].st;
	release_memory(c);
	rc = nvme_ctrl_bring_up(c);
	/* queue counters carry over the reset */
	c->admin.st = qst[0];
	for (unsigned i = 0; i < nio && i < c->nio; i++)
		c->io[i].st = qst[i + 1];
	if (rc == 0 && had_cmb && (!c->cmb.usable || c->cmb.reserved != reserved)) {
		/* the published provider starts after the old carve: a different layout would
		 * hand the same CMB bytes to two users */
		log_err("%s: reset: CMB layout changed (%llu -> %llu bytes carved)", c->name,
			(unsigned long long)reserved, (unsigned long long)c->cmb.reserved);
		rc = -EIO;
		c->state = NVME_CTRL_FAILED;
		c->error = rc;
	}
	c->rec.last_reset_ns = clock_now_ns() - t0;
	if (rc == 0) {
		c->rec.resets++;
		log_warn("%s: reset complete in %llu ms: %u command(s) failed back for retry, live again",
			 c->name, (unsigned long long)(c->rec.last_reset_ns / NSEC_PER_MSEC), failed);
	} else {
		c->rec.reset_failures++;
		log_err("%s: reset failed (%d) after %llu ms: the controller stays failed", c->name, rc,
			(unsigned long long)(c->rec.last_reset_ns / NSEC_PER_MSEC));
	}
	c->in_reset = false;
	if (c->on_reset)
		c->on_reset(c, rc);
	return rc;
}

/* Periodic health check. */
int nvme_ctrl_check(struct nvme_ctrl *c, uint64_t now)
{
	if (c->in_reset || c->state != NVME_CTRL_LIVE)
		return 0;
	if (c->reset_needed) {
		nvme_ctrl_reset(c, c->reset_reason);
		return 1;
	}
	if (now < c->next_health_ns)
		return 0;
	c->next_health_ns = now + NVME_HEALTH_INTERVAL_NS;
	uint32_t csts = csts_of(c);
	if (csts == 0xffffffffu) {
		nvme_ctrl_mark_removed(c);
		return 1;
	}
	if (csts & NVME_CSTS_CFS) {
		c->rec.cfs++;
		log_err("%s: controller fatal status (CSTS 0x%08x)", c->name, csts);
		nvme_ctrl_reset(c, "CSTS.CFS (controller fatal status)");
		return 1;
	}
	return 0;
}

/* Detach a controller whose device is being hot-removed (present) or is gone. */
void nvme_ctrl_detach(struct nvme_ctrl *c, bool present)
{
	if (!c->bus)
		return;
	if (present && c->state == NVME_CTRL_LIVE && !c->in_reset) {
		/* removal on request: what hosts wrote leaves the drive's cache first */
		int rc = nvme_ctrl_shutdown(c);
		if (rc)
			log_err("%s: shutdown before removal failed (%d)", c->name, rc);
	} else if (present && c->state != NVME_CTRL_NEW && c->state != NVME_CTRL_REMOVED &&
		   c->state != NVME_CTRL_SHUTDOWN) {
		(void)nvme_ctrl_disable(c); /* no DMA from here on, as far as it listens */
	}
	nvme_ctrl_mark_removed(c);
	release_memory(c);
}
