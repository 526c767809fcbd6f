/*
 * nvme_shutdown.c - orderly shutdown of NVMe controllers: let in-flight commands finish,
 * Flush every namespace of a controller with a volatile write cache, delete the I/O queues,
 * then the shutdown notification (CC.SHN = 01b, normal) and a bounded wait for CSTS.SHST =
 * 10b (complete), as NVMe 1.4 section 7.6.2 describes. Registered as a shutdown hook
 * (lib/shutdown.h), so power-off, reboot and a panic that resets run it for every drive.
 */
#include <errno.h>
#include <string.h>
#include "../../lib/clock.h"
#include "../../lib/log.h"
#include "../../lib/shutdown.h"
#include "nvme.h"

LOG_MODULE_USE(nvme);

#define SHST_POLL_NS (1ull * 1000000ull) /* CSTS poll interval while shutting down */

/* Does the controller report a volatile write cache? */
bool nvme_ctrl_has_vwc(const struct nvme_ctrl *c)
{
	return (c->vwc & 1) != 0;
}

static uint32_t csts_of(const struct nvme_ctrl *c)
{
	return c->bus->read32(c->bus->ctx, NVME_REG_CSTS);
}

static void pause_ns(const struct nvme_ctrl *c, uint64_t ns)
{
	if (c->bus->delay)
		c->bus->delay(c->bus->ctx, ns);
}

/* Poll every I/O queue until nothing is in flight, within the commands' own timeouts. */
static void drain(struct nvme_ctrl *c)
{
	uint64_t limit = clock_now_ns() + c->cmd_timeout_ns + c->abort_timeout_ns + NSEC_PER_SEC;
	for (;;) {
		unsigned busy = 0;
		for (unsigned i = 0; i < c->nio; i++) {
			nvme_qpair_poll(&c->io[i], NVME_MAX_QDEPTH);
			busy += c->io[i].outstanding;
		}
		nvme_qpair_poll(&c->admin, NVME_ADMIN_DEPTH);
		if (!busy || c->state != NVME_CTRL_LIVE || clock_now_ns() > limit)
			return;
		pause_ns(c, SHST_POLL_NS / 100);
	}
}

static void delete_io_queues(struct nvme_ctrl *c)
{
	struct nvme_request rq;
	for (unsigned i = c->nio; i-- > 0;) {
		memset(&rq, 0, sizeof(rq));
		rq.opc = NVME_ADM_DELETE_SQ;
		rq.cdw10 = c->io[i].qid;
		nvme_exec_sync(&c->admin, &rq, NULL);
		rq.opc = NVME_ADM_DELETE_CQ;
		nvme_exec_sync(&c->admin, &rq, NULL);
	}
}

/* CC.SHN = normal, then wait for CSTS.SHST = complete within the bound. */
static int notify(struct nvme_ctrl *c, uint64_t bound_ns)
{
	const struct nvme_bus *b = c->bus;
	uint32_t cc = b->read32(b->ctx, NVME_REG_CC);
	cc = (cc & ~(uint32_t)NVME_SET(NVME_CC_SHN, NVME_CC_SHN_MASK)) |
	     (uint32_t)NVME_SET(NVME_CC_SHN, NVME_CC_SHN_NORMAL);
	b->write32(b->ctx, NVME_REG_CC, cc);
	uint64_t deadline = clock_now_ns() + bound_ns;
	for (;;) {
		uint32_t csts = csts_of(c);
		if (csts == 0xffffffffu)
			return -ENODEV;
		if (NVME_GET(csts, NVME_CSTS_SHST) == NVME_CSTS_SHST_DONE)
			return 0;
		if (clock_now_ns() >= deadline)
			return -ETIMEDOUT;
		pause_ns(c, SHST_POLL_NS);
	}
}

/* Flush, delete the I/O queues, CC.SHN, wait for CSTS.SHST. */
int nvme_ctrl_shutdown(struct nvme_ctrl *c)
{
	uint64_t t0 = clock_now_ns();
	unsigned flushed = 0, flush_failed = 0;
	int rc;

	if (!c->bus || c->state == NVME_CTRL_NEW || c->state == NVME_CTRL_SHUTDOWN)
		return 0;
	if (csts_of(c) == 0xffffffffu) {
		rc = -ENODEV;
		goto out;
	}
	if (!(c->bus->read32(c->bus->ctx, NVME_REG_CC) & NVME_CC_EN)) {
		rc = 0; /* disabled: a disabled controller holds no cached writes of ours */
		goto out;
	}
	if (c->state == NVME_CTRL_LIVE) {
		drain(c);
		if (nvme_ctrl_has_vwc(c)) {
			for (unsigned i = 0; i < c->nns; i++) {
				if (!c->ns[i].active)
					continue;
				if (nvme_flush(c, c->ns[i].nsid) == 0) {
					flushed++;
				} else {
					flush_failed++;
					log_err("%s: shutdown: Flush of nsid %u failed", c->name, c->ns[i].nsid);
				}
			}
		}
		delete_io_queues(c);
	}
	/* RTD3E is in microseconds; a controller that gives none (or an optimistic one)
	 * still gets the floor. */
	uint64_t bound = (uint64_t)c->rtd3e * 1000u;
	if (bound < NVME_SHUTDOWN_FLOOR_NS)
		bound = NVME_SHUTDOWN_FLOOR_NS;
	if (bound > NVME_SHUTDOWN_CAP_NS)
		bound = NVME_SHUTDOWN_CAP_NS;
	rc = notify(c, bound);
	if (rc == 0 && flush_failed)
		rc = -EIO;
out:
	c->shutdown_rc = rc;
	c->shutdown_ns = clock_now_ns() - t0;
	if (rc == 0)
		log_info("%s: shutdown complete in %llu ms (%u namespace(s) flushed%s, CSTS.SHST complete)",
			 c->name, (unsigned long long)(c->shutdown_ns / NSEC_PER_MSEC), flushed,
			 nvme_ctrl_has_vwc(c) ? "" : ", no volatile write cache");
	else
		log_err("%s: shutdown FAILED after %llu ms: %s (%u flushed, %u flush failures)", c->name,
			(unsigned long long)(c->shutdown_ns / NSEC_PER_MSEC),
			rc == -ETIMEDOUT ? "CSTS.SHST not complete within the bound" :
			rc == -ENODEV ? "the device is gone" : "a Flush failed",
			flushed, flush_failed);
	if (c->state != NVME_CTRL_FAILED || rc == 0)
		c->state = NVME_CTRL_SHUTDOWN;
	return rc;
}

/* Shut every registered controller down. */
unsigned nvme_shutdown_all(void)
{
	unsigned failed = 0;
	for (unsigned i = 0; i < nvme_count(); i++)
		if (nvme_ctrl_shutdown(nvme_at(i)))
			failed++;
	return failed;
}

static void nvme_shutdown_hook(enum shutdown_reason why)
{
	if (!nvme_count())
		return;
	log_info("%s: flushing and shutting down %u NVMe controller(s)", shutdown_reason_name(why),
		 nvme_count());
	nvme_shutdown_all();
}
SHUTDOWN_HOOK(nvme, SHUTDOWN_ORDER_DRIVER, nvme_shutdown_hook);
