// sources: drivers/nvme/nvme.c drivers/nvme/nvme_reset.c drivers/nvme/nvme_shutdown.c drivers/nvme/nvme_prp.c drivers/nvme/nvme_queue.c drivers/nvme/nvme_cmb.c drivers/nvme/nvme_status.c mm/dma.c lib/log.c lib/shutdown.c tests/unit/drivers/nvme/fake_nvme.c
/*
 * Durability against a fake drive with a volatile write cache that loses unflushed writes
 * at a simulated power cut: the fake's model itself (a plain write is lost, a flushed one
 * is not), FUA writes survive, the orderly shutdown (in-flight commands drained, Flush of
 * every namespace, then CC.SHN and a bounded wait for CSTS.SHST, RTD3E honoured), no Flush
 * for a drive without a cache, and the shutdown hook that power-off and reboot run.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "drivers/nvme/nvme.h"
#include "lib/clock.h"
#include "lib/shutdown.h"
#include "tests/unit/drivers/nvme/fake_nvme.h"
#include "tests/unit/unit_support.h"

static struct fake_nvme f;
static struct nvme_ctrl c;
static uint8_t *buf;

static void setup(void)
{
	fake_clock_install();
	fake_nvme_init(&f);
	f.vwc = true;
	dma_counters_reset();
	memset(&c, 0, sizeof(c));
	buf = aligned_alloc(4096, 8192);
	for (unsigned i = 0; i < 8192; i++)
		buf[i] = (uint8_t)(i * 13 + 7);
	unit_pools_begin();
}

static void teardown(void)
{
	nvme_unregister(&c);
	nvme_ctrl_fini(&c);
	cr_expect_eq(f.dma_live, 0, "every DMA allocation freed (%u left)", f.dma_live);
	fake_nvme_fini(&f);
	free(buf);
	unit_pools_end();
}

TestSuite(durable, .init = setup, .fini = teardown);

static struct nvme_sg sg_buf(uint32_t len)
{
	struct nvme_sg s = { dma_addr_host(buf), len };
	return s;
}

/* After a power cut the drive comes back with what was durable. */
static bool survived(uint64_t slba, uint32_t bytes)
{
	return memcmp(f.durable + slba * 512, buf, bytes) == 0;
}

Test(durable, the_fake_loses_a_plain_write_at_a_power_cut_and_keeps_a_flushed_one)
{
	cr_assert_eq(nvme_ctrl_init(&c, "nvme0", &f.bus, 1), 0);
	cr_assert(nvme_ctrl_has_vwc(&c), "Identify VWC read from the drive");
	struct nvme_sg sg = sg_buf(4096);
	cr_assert_eq(nvme_write(&c, 1, 16, 8, &sg, 1), 0);
	cr_assert_eq(fake_nvme_dirty_blocks(&f), 8, "acknowledged, but only in the drive's cache");
	cr_assert(!survived(16, 4096));
	cr_assert_eq(nvme_flush(&c, 1), 0);
	cr_assert_eq(fake_nvme_dirty_blocks(&f), 0);
	fake_nvme_power_cut(&f);
	cr_assert_eq(memcmp(f.media + 16 * 512, buf, 4096), 0, "flushed data survives the cut");
	cr_assert_eq(c.st.flushes_sent, 1);
}

Test(durable, a_fua_write_is_durable_when_it_completes)
{
	cr_assert_eq(nvme_ctrl_init(&c, "nvme0", &f.bus, 1), 0);
	struct nvme_sg sg = sg_buf(8192);
	cr_assert_eq(nvme_write_fua(&c, 1, 100, 16, &sg, 1), 0);
	int i = fake_nvme_find(&f, -1, NVME_CMD_WRITE, 0);
	cr_assert_geq(i, 0);
	cr_assert(f.rec[i].cdw12 & NVME_RW_FUA, "CDW12.FUA reached the drive");
	cr_assert_eq(fake_nvme_dirty_blocks(&f), 0);
	cr_assert_eq(c.st.fua, 1);
	cr_assert_eq(fake_nvme_find(&f, -1, NVME_CMD_FLUSH, 0), -1, "no Flush needed");
	fake_nvme_power_cut(&f);
	cr_assert(survived(100, 8192));
	/* a plain write next to it is lost */
	fake_nvme_fini(&f);
	fake_nvme_init(&f);
	f.vwc = true;
	nvme_ctrl_fini(&c);
	cr_assert_eq(nvme_ctrl_init(&c, "nvme0", &f.bus, 1), 0);
	cr_assert_eq(nvme_write(&c, 1, 100, 16, &sg, 1), 0);
	fake_nvme_power_cut(&f);
	cr_assert(!survived(100, 8192));
}

static unsigned async_done;
static void on_done(void *arg, int rc, const struct nvme_cqe *cqe)
{
	(void)arg;
	(void)cqe;
	cr_assert_eq(rc, 0);
	async_done++;
}

Test(durable, shutdown_drains_flushes_then_notifies_and_the_data_survives_the_cut)
{
	cr_assert_eq(nvme_ctrl_init(&c, "nvme0", &f.bus, 1), 0);
	struct nvme_sg sg = sg_buf(4096);
	struct nvme_request rq;
	cr_assert_eq(nvme_rw_request(&c, true, 1, 40, 8, &sg, 1, &rq), 0);
	async_done = 0;
	cr_assert_eq(nvme_submit(&c.io[0], &rq, on_done, NULL), 0); /* in flight, not reaped */
	uint64_t t0 = clock_now_ns();
	cr_assert_eq(nvme_ctrl_shutdown(&c), 0);
	cr_assert_eq(async_done, 1, "the write in flight completed to its owner first");
	int w = fake_nvme_find(&f, -1, NVME_CMD_WRITE, 0);
	int fl = fake_nvme_find(&f, -1, NVME_CMD_FLUSH, 0);
	cr_assert(w >= 0 && fl > w, "Flush after the write (%d, %d)", w, fl);
	cr_assert_eq(f.shn_count, 1, "CC.SHN = normal sent once");
	cr_assert_gt(f.shn_at, (unsigned)fl, "CC.SHN after the Flush completed");
	cr_assert(fake_nvme_find(&f, 0, NVME_ADM_DELETE_SQ, 0) >= 0, "I/O queues deleted first");
	cr_assert_eq(c.state, NVME_CTRL_SHUTDOWN);
	cr_assert_eq(c.shutdown_rc, 0);
	cr_assert_lt(clock_now_ns() - t0, NSEC_PER_SEC);
	cr_assert_eq(nvme_write(&c, 1, 0, 8, &sg, 1), -ENODEV, "no I/O after shutdown");
	cr_assert_eq(nvme_ctrl_shutdown(&c), 0, "a second shutdown is a no-op");
	cr_assert_eq(f.shn_count, 1);
	fake_nvme_power_cut(&f);
	cr_assert(survived(40, 4096));
}

Test(durable, a_drive_without_a_volatile_cache_gets_no_flush_but_the_notification)
{
	f.vwc = false;
	cr_assert_eq(nvme_ctrl_init(&c, "nvme0", &f.bus, 1), 0);
	cr_assert(!nvme_ctrl_has_vwc(&c));
	struct nvme_sg sg = sg_buf(512);
	cr_assert_eq(nvme_write(&c, 1, 3, 1, &sg, 1), 0);
	cr_assert_eq(nvme_ctrl_shutdown(&c), 0);
	cr_assert_eq(fake_nvme_find(&f, -1, NVME_CMD_FLUSH, 0), -1);
	cr_assert_eq(f.shn_count, 1);
	fake_nvme_power_cut(&f);
	cr_assert(survived(3, 512), "write-through drive: durable at completion");
}

Test(durable, a_shutdown_that_never_completes_is_bounded_by_rtd3e)
{
	f.rtd3e = 8000000; /* 8 s */
	f.shn_never_completes = true;
	cr_assert_eq(nvme_ctrl_init(&c, "nvme0", &f.bus, 1), 0);
	cr_assert_eq(c.rtd3e, 8000000);
	uint64_t t0 = clock_now_ns();
	cr_assert_eq(nvme_ctrl_shutdown(&c), -ETIMEDOUT);
	uint64_t took = clock_now_ns() - t0;
	cr_assert_geq(took, 8 * NSEC_PER_SEC);
	cr_assert_lt(took, 8 * NSEC_PER_SEC + 100 * NSEC_PER_MSEC, "took %llu ns", (unsigned long long)took);
	cr_assert_eq(c.shutdown_rc, -ETIMEDOUT);
}

Test(durable, without_rtd3e_the_wait_has_a_floor_and_a_huge_rtd3e_is_capped)
{
	f.shn_never_completes = true;
	f.rtd3e = 0;
	cr_assert_eq(nvme_ctrl_init(&c, "nvme0", &f.bus, 1), 0);
	uint64_t t0 = clock_now_ns();
	cr_assert_eq(nvme_ctrl_shutdown(&c), -ETIMEDOUT);
	cr_assert_geq(clock_now_ns() - t0, NVME_SHUTDOWN_FLOOR_NS);
	cr_assert_lt(clock_now_ns() - t0, NVME_SHUTDOWN_FLOOR_NS + NSEC_PER_SEC);
	nvme_ctrl_fini(&c);
	f.rtd3e = 0xffffffffu; /* ~71 minutes */
	cr_assert_eq(nvme_ctrl_init(&c, "nvme0", &f.bus, 1), 0);
	t0 = clock_now_ns();
	cr_assert_eq(nvme_ctrl_shutdown(&c), -ETIMEDOUT);
	cr_assert_lt(clock_now_ns() - t0, NVME_SHUTDOWN_CAP_NS + NSEC_PER_SEC);
}

Test(durable, a_vanished_drive_reports_enodev_at_once)
{
	cr_assert_eq(nvme_ctrl_init(&c, "nvme0", &f.bus, 1), 0);
	f.csts = 0xffffffffu;
	cr_assert_eq(nvme_ctrl_shutdown(&c), -ENODEV);
	f.csts = 0;
	f.cc = 0;
}

Test(durable, poweroff_runs_the_nvme_shutdown_hook_for_every_registered_drive)
{
	cr_assert_eq(nvme_ctrl_init(&c, "nvme0", &f.bus, 1), 0);
	cr_assert_eq(nvme_register(&c), 0);
	struct nvme_sg sg = sg_buf(4096);
	cr_assert_eq(nvme_write(&c, 1, 500, 8, &sg, 1), 0);
	cr_assert_geq(shutdown_run_hooks(SHUTDOWN_POWEROFF), 1);
	cr_assert_eq(f.shn_count, 1);
	cr_assert_geq(fake_nvme_find(&f, -1, NVME_CMD_FLUSH, 0), 0);
	cr_assert_eq(shutdown_run_hooks(SHUTDOWN_REBOOT), 0, "hooks run once");
	fake_nvme_power_cut(&f);
	cr_assert(survived(500, 4096));
}
