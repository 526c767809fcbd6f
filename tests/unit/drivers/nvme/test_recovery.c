// sources: drivers/nvme/nvme.c drivers/nvme/nvme_reset.c drivers/nvme/nvme_shutdown.c drivers/nvme/nvme_prp.c drivers/nvme/nvme_queue.c drivers/nvme/nvme_cmb.c drivers/nvme/nvme_status.c mm/dma.c lib/log.c lib/shutdown.c tests/unit/drivers/nvme/fake_nvme.c
/*
 * Recovery against the fake controller: a command that answers neither itself nor its Abort
 * is quarantined and its owner is told only after the reset has disabled the controller;
 * commands of bystanders are failed back retryable; the reset keeps the CMB layout, SQs in
 * the CMB and the counters and tells the attach before and after; drive error status reaches
 * the owner with the raw CQE; surprise removal (all-ones reads) fails everything with
 * -ENODEV and takes the namespaces away; memory back to zero after each.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "drivers/nvme/nvme.h"
#include "lib/clock.h"
#include "tests/unit/drivers/nvme/fake_nvme.h"
#include "tests/unit/unit_support.h"

static struct fake_nvme f;
static struct nvme_ctrl c;
static uint8_t *buf;

static void setup(void)
{
	fake_clock_install();
	fake_nvme_init(&f);
	dma_counters_reset();
	memset(&c, 0, sizeof(c));
	buf = aligned_alloc(4096, 8192);
	memset(buf, 0x5a, 8192);
	unit_pools_begin();
}

static void teardown(void)
{
	nvme_ctrl_fini(&c);
	cr_expect_eq(f.dma_live, 0, "every DMA allocation freed (%u left)", f.dma_live);
	fake_nvme_fini(&f);
	free(buf);
	unit_pools_end();
}

TestSuite(recovery, .init = setup, .fini = teardown);

struct owner {
	unsigned calls;
	int rc;
	uint16_t status;
	bool ctrl_was_disabled; /* CC.EN was 0 when the owner got its command back */
	unsigned disables_then;
};

static void owner_done(void *arg, int rc, const struct nvme_cqe *cqe)
{
	struct owner *o = arg;
	o->calls++;
	o->rc = rc;
	o->status = cqe ? (uint16_t)(le16_get(cqe->status) & 0xfffe) : 0;
	o->ctrl_was_disabled = !(f.cc & NVME_CC_EN);
	o->disables_then = f.disables;
}

static int submit_rw(bool write, uint64_t slba, uint32_t nlb, struct owner *o)
{
	struct nvme_sg sg = { dma_addr_host(buf), nlb * 512 };
	struct nvme_request rq;
	int rc = nvme_rw_request(&c, write, 1, slba, nlb, &sg, 1, &rq);
	return rc ? rc : nvme_submit(&c.io[0], &rq, owner_done, o);
}

static void poll_for(uint64_t ns)
{
	uint64_t end = clock_now_ns() + ns;
	while (clock_now_ns() < end) {
		nvme_qpair_poll(&c.io[0], 64);
		nvme_qpair_poll(&c.admin, 32);
		fake_clock_advance(NSEC_PER_MSEC);
	}
}

Test(recovery, a_lost_command_is_quarantined_until_the_reset_has_disabled_the_controller)
{
	cr_assert_eq(nvme_ctrl_init(&c, "nvme0", &f.bus, 1), 0);
	f.drop_opc = NVME_CMD_READ;
	f.drop_aborts = true;
	struct owner lost = { 0 }, bystander = { 0 };
	cr_assert_eq(submit_rw(false, 0, 8, &lost), 0);
	f.drop_opc = NVME_CMD_WRITE; /* a second command that also hangs, but not timed out yet */
	fake_clock_advance(c.cmd_timeout_ns - 10 * NSEC_PER_MSEC);
	cr_assert_eq(submit_rw(true, 64, 8, &bystander), 0);
	poll_for(c.abort_timeout_ns / 2);
	cr_assert_eq(f.aborts, 1, "timed out: Abort sent");
	cr_assert_eq(lost.calls, 0, "aborted, not answered: still held");
	poll_for(c.abort_timeout_ns);
	cr_assert_eq(lost.calls, 1);
	cr_assert_eq(lost.rc, -ETIMEDOUT);
	cr_assert(lost.ctrl_was_disabled, "the owner got its buffers back only with CC.EN = 0");
	cr_assert_eq(lost.disables_then, 1);
	cr_assert_eq(bystander.calls, 1);
	cr_assert_eq(bystander.rc, -EAGAIN, "a bystander is failed back retryable");
	cr_assert_eq(c.rec.resets, 1);
	cr_assert_eq(c.rec.failed_back, 3, "the read, the write and the unanswered Abort");
	cr_assert_eq(c.state, NVME_CTRL_LIVE);
	f.drop_opc = -1;
	struct nvme_sg sg = { dma_addr_host(buf), 4096 };
	cr_assert_eq(nvme_write(&c, 1, 8, 8, &sg, 1), 0);
}

Test(recovery, submissions_during_a_reset_are_refused_retryable)
{
	cr_assert_eq(nvme_ctrl_init(&c, "nvme0", &f.bus, 1), 0);
	c.in_reset = true;
	struct owner o = { 0 };
	cr_assert_eq(submit_rw(false, 0, 1, &o), -EAGAIN);
	c.in_reset = false;
}

static unsigned reset_calls;
static int reset_rcs[4];
static void on_reset(struct nvme_ctrl *ctrl, int rc)
{
	(void)ctrl;
	if (reset_calls < 4)
		reset_rcs[reset_calls] = rc;
	reset_calls++;
}

Test(recovery, a_reset_keeps_the_cmb_layout_sqs_in_the_cmb_and_tells_the_attach)
{
	f.cap |= 1ull << 57;
	f.cmb_v14 = true;
	cr_assert_eq(nvme_ctrl_init(&c, "nvme0", &f.bus, 1), 0);
	cr_assert(c.cmb.usable && c.io[0].sq_in_cmb);
	uint64_t reserved = c.cmb.reserved;
	c.on_reset = on_reset;
	reset_calls = 0;
	struct nvme_sg sg = { dma_addr_host(buf), 4096 };
	cr_assert_eq(nvme_write(&c, 1, 0, 8, &sg, 1), 0);
	uint64_t writes = c.st.writes;
	cr_assert_eq(nvme_ctrl_reset(&c, "test"), 0);
	cr_assert_eq(reset_calls, 2);
	cr_assert_eq(reset_rcs[0], -EINPROGRESS);
	cr_assert_eq(reset_rcs[1], 0);
	cr_assert(c.cmb.usable && c.io[0].sq_in_cmb, "SQ back in the CMB");
	cr_assert_eq(c.cmb.reserved, reserved, "same carve: the published provider stays valid");
	cr_assert(f.cmse, "CMBMSC rewritten");
	cr_assert_eq(c.st.writes, writes, "counters kept");
	cr_assert_str_eq(c.name, "nvme0");
	/* data through the CMB after the reset */
	struct nvme_sg cs = { dma_addr_device((uint64_t)(uintptr_t)f.cmb + (2u << 20)), 4096 };
	memset(f.cmb + (2u << 20), 0xc3, 4096);
	cr_assert_eq(nvme_write(&c, 1, 16, 8, &cs, 1), 0);
	cr_assert_eq(f.media[16 * 512], 0xc3);
}

Test(recovery, a_drive_error_reaches_the_owner_with_its_status)
{
	cr_assert_eq(nvme_ctrl_init(&c, "nvme0", &f.bus, 1), 0);
	f.err_status = (uint16_t)((2u << 9) | (0x81u << 1)); /* Media: Unrecovered Read Error */
	f.err_slba = 100;
	f.err_nlb = 4;
	struct owner o = { 0 }, ok = { 0 };
	cr_assert_eq(submit_rw(false, 98, 4, &o), 0);
	cr_assert_eq(submit_rw(false, 0, 4, &ok), 0);
	poll_for(NSEC_PER_MSEC);
	cr_assert_eq(o.calls, 1);
	cr_assert_eq(o.rc, -EIO);
	cr_assert_eq(o.status, f.err_status, "the raw status for the fabric (0x%x)", o.status);
	cr_assert_eq(ok.calls, 1);
	cr_assert_eq(ok.rc, 0, "other LBAs unaffected");
	cr_assert_eq(c.rec.resets, 0, "a media error is no reason to reset");
	cr_assert_eq(c.last_error_status, 0x281, "the console shows SCT 2 SC 0x81 (0x%x)", c.last_error_status);
}

Test(recovery, surprise_removal_fails_everything_with_enodev_and_takes_the_namespaces)
{
	cr_assert_eq(nvme_ctrl_init(&c, "nvme0", &f.bus, 1), 0);
	f.drop_opc = NVME_CMD_READ;
	struct owner o = { 0 };
	cr_assert_eq(submit_rw(false, 0, 8, &o), 0);
	f.removed = true;
	uint64_t t0 = clock_now_ns();
	poll_for(NVME_HEALTH_INTERVAL_NS + 2 * NSEC_PER_MSEC);
	cr_assert_eq(o.calls, 1);
	cr_assert_eq(o.rc, -ENODEV);
	cr_assert_leq(clock_now_ns() - t0, NVME_HEALTH_INTERVAL_NS + 3 * NSEC_PER_MSEC);
	cr_assert_eq(c.state, NVME_CTRL_REMOVED);
	cr_assert_eq(c.rec.removals, 1);
	cr_assert_null(nvme_ns_get(&c, 1), "namespace not ready");
	struct nvme_sg sg = { dma_addr_host(buf), 512 };
	cr_assert_eq(nvme_read(&c, 1, 0, 1, &sg, 1), -ENODEV);
	cr_assert_eq(nvme_ctrl_reset(&c, "x"), -EINVAL, "nothing to reset");
	cr_assert_eq(nvme_ctrl_shutdown(&c), -ENODEV);
}

Test(recovery, a_controller_that_fails_its_reset_stays_failed_with_eio)
{
	cr_assert_eq(nvme_ctrl_init(&c, "nvme0", &f.bus, 1), 0);
	f.never_ready = true;
	cr_assert_eq(nvme_ctrl_reset(&c, "test"), -ETIMEDOUT);
	cr_assert_eq(c.state, NVME_CTRL_FAILED);
	cr_assert_eq(c.rec.reset_failures, 1);
	struct nvme_sg sg = { dma_addr_host(buf), 512 };
	cr_assert_eq(nvme_read(&c, 1, 0, 1, &sg, 1), -EIO);
}
