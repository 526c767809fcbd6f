// sources: drivers/rdma/roce_odp.c tests/unit/drivers/rdma/fake_odp_store.c
/*
 * The ODP core over the fake store and the fake clock: registration with nothing resident,
 * fault -> retry -> success, multi-page accesses, pages in flight, clean and dirty
 * eviction with write-back before reuse, pins never evicted, invalidation racing a
 * page-in, flush making contents durable, destroy with commands in flight, a full store,
 * failed page-ins, prefetch and the fault service time histogram. Every test ends with
 * the pool empty and fini succeeding (ASan checks nothing leaks).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "drivers/rdma/roce_odp.h"
#include "lib/clock.h"
#include "tests/unit/drivers/rdma/fake_odp_store.h"
#include "tests/unit/unit_support.h"

#define PG ROCE_ODP_PAGE_SIZE

static struct roce_odp *odp;
static struct fake_store fs;
static struct roce_odp_region *reg;

static void setup_n(unsigned nframes, uint64_t pages)
{
	fake_clock_install();
	fake_store_init(&fs, pages * PG);
	cr_assert_eq(roce_odp_init(&odp, nframes), 0);
	cr_assert_eq(roce_odp_region_create(odp, "t", &fs.store, pages * PG, &reg), 0);
}

static void setup(void)
{
	setup_n(4, 16);
}

static void teardown(void)
{
	if (reg) {
		cr_assert_eq(roce_odp_region_destroy(reg), 0);
		fake_store_complete(&fs, 0);
		roce_odp_poll(odp, 0);
	}
	if (roce_odp_fini(odp)) {
		fprintf(stderr, "odp pool not empty: resident %u inflight %u pinned %u\n", roce_odp_resident(odp),
			roce_odp_inflight(odp), roce_odp_pinned(odp));
		abort();  /* Criterion ignores assertions in .fini */
	}  /* Criterion ignores assertions in .fini */
	fake_store_fini(&fs);
}

TestSuite(roce_odp, .init = setup, .fini = teardown);

/* One access; returns rc; on success the bytes are copied to/from buf. */
static int acc(uint64_t off, uint32_t len, bool write, uint8_t *buf)
{
	dma_addr_t mem[4];
	uint32_t pl[4];
	unsigned n;
	int rc = roce_odp_access(reg, off, len, write, clock_now_ns(), mem, pl, 4, &n);
	if (rc)
		return rc;
	uint32_t done = 0;
	for (unsigned i = 0; i < n; i++) {
		void *p = (void *)(uintptr_t)mem[i].bus;
		if (write)
			memcpy(p, buf + done, pl[i]);
		else
			memcpy(buf + done, p, pl[i]);
		done += pl[i];
	}
	cr_assert_eq(done, len);
	return 0;
}

/* Access until it succeeds, completing the store's commands between tries (the
 * requester's RNR retries). Returns the tries taken. */
static unsigned acc_retry(uint64_t off, uint32_t len, bool write, uint8_t *buf)
{
	unsigned tries = 1;
	int rc;
	while ((rc = acc(off, len, write, buf)) == -EAGAIN) {
		cr_assert_lt(tries, 64, "no progress at %llu", (unsigned long long)off);
		fake_clock_advance(100000);
		fake_store_complete(&fs, 0);
		roce_odp_poll(odp, clock_now_ns());
		tries++;
	}
	cr_assert_eq(rc, 0, "rc %d", rc);
	return tries;
}

static void expect_pattern(const uint8_t *b, uint64_t off, uint32_t len)
{
	for (uint32_t i = 0; i < len; i++)
		cr_assert_eq(b[i], fake_store_pattern(off + i), "byte %llu", (unsigned long long)(off + i));
}

Test(roce_odp, a_new_region_has_nothing_resident_and_a_fault_brings_the_page)
{
	uint8_t b[100];
	const struct roce_odp_stats *st = roce_odp_stats(odp);

	cr_assert_eq(roce_odp_resident(odp), 0);
	cr_assert_eq(roce_odp_region_resident(reg), 0);
	cr_assert_eq(acc(PG + 10, 100, false, b), -EAGAIN);
	cr_assert_eq(st->faults, 1);
	cr_assert_eq(fs.nq, 1);
	cr_assert_eq(fs.q[0]->offset, PG);
	cr_assert_eq(fs.q[0]->op, ROCE_ODP_IO_READ);
	/* the retry before the page-in completes waits again, without a second read */
	cr_assert_eq(acc(PG + 10, 100, false, b), -EAGAIN);
	cr_assert_eq(st->faults, 1);
	cr_assert_eq(st->fault_waits, 1);
	fake_clock_advance(300000);
	cr_assert_eq(fake_store_complete(&fs, 0), 1);
	cr_assert_eq(acc(PG + 10, 100, false, b), 0);
	expect_pattern(b, PG + 10, 100);
	cr_assert_eq(st->pageins, 1);
	cr_assert_eq(st->bytes_in, PG);
	/* 300 us: the bucket [256, 512) us */
	cr_assert_eq(st->hist[8], 1);
	cr_assert_eq(roce_odp_hist_quantile(odp, 500), 512);
	cr_assert_eq(roce_odp_resident(odp), 1);
	cr_assert_eq(roce_odp_dirty(odp), 0);
}

Test(roce_odp, a_multi_page_access_faults_every_page_and_returns_a_piece_each)
{
	uint8_t b[PG + 200];
	dma_addr_t mem[4];
	uint32_t pl[4];
	unsigned n;

	cr_assert_eq(acc(2 * PG - 100, PG + 200, false, b), -EAGAIN);
	cr_assert_eq(fs.nq, 3);
	fake_store_complete(&fs, 2);
	cr_assert_eq(acc(2 * PG - 100, PG + 200, false, b), -EAGAIN, "one page still reading");
	fake_store_complete(&fs, 0);
	cr_assert_eq(roce_odp_access(reg, 2 * PG - 100, PG + 200, false, 0, mem, pl, 4, &n), 0);
	cr_assert_eq(n, 3);
	cr_assert_eq(pl[0], 100);
	cr_assert_eq(pl[1], PG);
	cr_assert_eq(pl[2], 100);
	cr_assert_eq(roce_odp_access(reg, 2 * PG - 100, PG + 200, false, 0, mem, pl, 2, &n), -E2BIG);
	cr_assert_eq(acc(2 * PG - 100, PG + 200, false, b), 0);
	expect_pattern(b, 2 * PG - 100, PG + 200);
	cr_assert_eq(roce_odp_access(reg, 16 * PG - 1, 2, false, 0, mem, pl, 4, &n), -ERANGE);
}

Test(roce_odp, clean_pages_are_evicted_by_the_clock_and_come_back_on_access)
{
	uint8_t b[64];
	const struct roce_odp_stats *st = roce_odp_stats(odp);

	for (unsigned p = 0; p < 8; p++) {
		acc_retry(p * PG, 64, false, b);
		expect_pattern(b, p * PG, 64);
	}
	cr_assert_eq(roce_odp_resident(odp), 4);
	cr_assert_eq(st->evict_clean, 4);
	cr_assert_eq(st->writebacks, 0);
	/* page 0 was evicted: it faults again and reads the same bytes */
	cr_assert_gt(acc_retry(0, 64, false, b), 1);
	expect_pattern(b, 0, 64);
}

Test(roce_odp, dirty_pages_are_written_back_before_their_frame_is_reused)
{
	uint8_t w[PG], b[PG];
	const struct roce_odp_stats *st = roce_odp_stats(odp);

	for (unsigned p = 0; p < 4; p++) {
		memset(w, 0xa0 + p, sizeof(w));
		acc_retry(p * PG, PG, true, w);
	}
	cr_assert_eq(roce_odp_dirty(odp), 4);
	cr_assert_eq(roce_odp_region_dirty(reg), 4);
	/* a fifth page: every frame is dirty; the clock starts write-backs and takes none yet */
	cr_assert_eq(acc(4 * PG, 8, false, b), -EAGAIN);
	cr_assert_gt(st->writebacks, 0);
	cr_assert_eq(st->pageins, 4);
	for (unsigned i = 0; i < fs.nq; i++)
		cr_assert_eq(fs.q[i]->op, ROCE_ODP_IO_WRITE, "no page-in before a frame is clean");
	/* the written-back page cannot be written while its write runs; it can be read */
	cr_assert_eq(acc(0, 8, true, w), -EAGAIN);
	cr_assert_eq(acc(0, 8, false, b), 0);
	acc_retry(4 * PG, 8, false, b);
	expect_pattern(b, 4 * PG, 8);
	cr_assert_eq(fs.disk[0], 0xa0, "the dirty page reached the disk before its frame was reused");
	cr_assert_gt(st->pageouts, 0);
	/* every page comes back with what was written */
	for (unsigned p = 0; p < 4; p++) {
		acc_retry(p * PG, PG, false, b);
		for (unsigned i = 0; i < PG; i++)
			cr_assert_eq(b[i], 0xa0 + p);
	}
}

Test(roce_odp, a_pinned_page_is_never_evicted)
{
	uint8_t b[8];

	acc_retry(0, 8, false, b);
	cr_assert_eq(roce_odp_pin(reg, 0, 8, 0), 0);
	cr_assert_eq(roce_odp_pinned(odp), 1);
	for (unsigned round = 0; round < 3; round++)
		for (unsigned p = 1; p < 16; p++)
			acc_retry(p * PG, 8, false, b);
	cr_assert_eq(acc(0, 8, false, b), 0, "page 0 stayed resident");
	roce_odp_unpin(reg, 0, 8);
	cr_assert_eq(roce_odp_pinned(odp), 0);
	/* pinning a page that is not resident faults it in first */
	roce_odp_invalidate(reg, 15 * PG, PG);
	cr_assert_eq(roce_odp_pin(reg, 15 * PG, 8, 0), -EAGAIN);
	cr_assert_eq(roce_odp_pinned(odp), 0);
	fake_store_complete(&fs, 0);
	cr_assert_eq(roce_odp_pin(reg, 15 * PG, 8, 0), 0);
	roce_odp_unpin(reg, 15 * PG, 8);
}

Test(roce_odp, with_every_frame_pinned_a_fault_is_put_off_not_forced)
{
	uint8_t b[8];
	const struct roce_odp_stats *st = roce_odp_stats(odp);

	for (unsigned p = 0; p < 4; p++) {
		acc_retry(p * PG, 8, false, b);
		cr_assert_eq(roce_odp_pin(reg, p * PG, 8, 0), 0);
	}
	cr_assert_eq(acc(5 * PG, 8, false, b), -EAGAIN);
	cr_assert_eq(st->no_frame, 1);
	cr_assert_eq(fs.nq, 0);
	roce_odp_unpin(reg, 0, 4 * PG);
	acc_retry(5 * PG, 8, false, b);
	expect_pattern(b, 5 * PG, 8);
}

Test(roce_odp, invalidation_racing_a_page_in_discards_it_and_the_next_access_reads_anew)
{
	uint8_t b[8];
	const struct roce_odp_stats *st = roce_odp_stats(odp);

	cr_assert_eq(acc(3 * PG, 8, false, b), -EAGAIN);
	cr_assert_eq(roce_odp_invalidate(reg, 0, 16 * PG), 1);
	/* the disk changes behind the page-in (another writer of the namespace) */
	fs.disk[3 * PG] = 0x55;
	fake_store_complete(&fs, 0);
	cr_assert_eq(st->discarded, 1);
	cr_assert_eq(roce_odp_resident(odp), 0);
	acc_retry(3 * PG, 8, false, b);
	cr_assert_eq(b[0], 0x55);
}

Test(roce_odp, invalidation_writes_dirty_pages_back_and_drops_them)
{
	uint8_t w[8] = { 1, 2, 3, 4, 5, 6, 7, 8 }, b[8];

	acc_retry(PG, 8, true, w);
	acc_retry(3 * PG, 8, false, b);
	cr_assert_eq(roce_odp_invalidate(reg, 0, 16 * PG), 2);
	cr_assert_eq(roce_odp_resident(odp), 1, "the dirty page stays until written");
	cr_assert_eq(acc(PG, 8, true, w), -EAGAIN, "no write to a page being written back");
	fake_store_complete(&fs, 0);
	cr_assert_eq(roce_odp_resident(odp), 0);
	cr_assert_eq(memcmp(fs.disk + PG, w, 8), 0);
	acc_retry(PG, 8, false, b);
	cr_assert_eq(memcmp(b, w, 8), 0);
}

static int flush_rc = 1;
static unsigned flush_calls;
static void on_flush(void *arg, int rc)
{
	(void)arg;
	flush_rc = rc;
	flush_calls++;
}

Test(roce_odp, flush_writes_back_every_dirty_page_then_flushes_the_store)
{
	uint8_t w[16];

	flush_calls = 0;
	for (unsigned p = 0; p < 3; p++) {
		memset(w, 0x30 + p, sizeof(w));
		acc_retry(p * PG + 8, sizeof(w), true, w);
	}
	cr_assert_eq(roce_odp_flush(reg, on_flush, NULL), 0);
	cr_assert_eq(roce_odp_flush(reg, on_flush, NULL), -EBUSY);
	cr_assert_eq(fs.nq, 3);
	fake_store_complete(&fs, 3);
	cr_assert_eq(fs.nq, 1);
	cr_assert_eq(fs.q[0]->op, ROCE_ODP_IO_FLUSH, "the store flush follows the last write-back");
	cr_assert_eq(flush_calls, 0);
	fake_store_complete(&fs, 0);
	cr_assert_eq(flush_calls, 1);
	cr_assert_eq(flush_rc, 0);
	for (unsigned p = 0; p < 3; p++)
		cr_assert_eq(fs.durable[p * PG + 8], 0x30 + p);
	cr_assert_eq(roce_odp_dirty(odp), 0);
	cr_assert_eq(roce_odp_stats(odp)->flushes, 1);
	/* nothing dirty: a flush is just the store's, and its result still comes from the poll loop */
	cr_assert_eq(roce_odp_flush(reg, on_flush, NULL), 0);
	cr_assert_eq(flush_calls, 1);
	fake_store_complete(&fs, 0);
	cr_assert_eq(flush_calls, 2);
}

Test(roce_odp, a_failed_write_back_keeps_the_page_dirty_and_fails_the_flush)
{
	uint8_t w[8] = { 9 };

	flush_calls = 0;
	acc_retry(0, 8, true, w);
	cr_assert_eq(roce_odp_flush(reg, on_flush, NULL), 0);
	fs.fail_complete = -EIO;
	fake_store_complete(&fs, 0);
	cr_assert_eq(flush_calls, 1);
	cr_assert_eq(flush_rc, -EIO);
	cr_assert_eq(roce_odp_dirty(odp), 1);
	cr_assert_eq(roce_odp_stats(odp)->io_errors, 1);
	/* a second flush succeeds and the data arrives */
	cr_assert_eq(roce_odp_flush(reg, on_flush, NULL), 0);
	fake_store_complete(&fs, 0);
	cr_assert_eq(flush_rc, 0);
	cr_assert_eq(fs.durable[0], 9);
}

Test(roce_odp, destroy_with_commands_in_flight_waits_for_them_and_writes_dirty_pages)
{
	uint8_t w[8] = { 0x77 }, b[8];

	acc_retry(0, 8, true, w);
	cr_assert_eq(acc(PG, 8, false, b), -EAGAIN);
	roce_odp_region_get(reg);
	cr_assert_eq(roce_odp_region_destroy(reg), -EBUSY, "an MR is registered on it");
	roce_odp_region_put(reg);
	cr_assert_eq(roce_odp_region_destroy(reg), 0);
	cr_assert_eq(acc(0, 8, false, b), -ENODEV);
	cr_assert_eq(roce_odp_fini(odp), -EBUSY, "the dying region still has commands");
	fake_store_complete(&fs, 0);
	cr_assert_eq(fs.disk[0], 0x77, "the dirty page was written back on destroy");
	cr_assert_eq(roce_odp_resident(odp), 0);
	cr_assert_eq(roce_odp_inflight(odp), 0);
	reg = NULL;
}

Test(roce_odp, a_full_store_queues_commands_for_the_poller)
{
	uint8_t b[8];

	fs.busy = 2;
	cr_assert_eq(acc(0, 8, false, b), -EAGAIN);
	cr_assert_eq(fs.nq, 0);
	roce_odp_poll(odp, 0);  /* refused again */
	cr_assert_eq(fs.nq, 0);
	roce_odp_poll(odp, 0);
	cr_assert_eq(fs.nq, 1);
	acc_retry(0, 8, false, b);
	expect_pattern(b, 0, 8);
}

Test(roce_odp, a_failed_page_in_is_an_error_until_advice_retries_it)
{
	uint8_t b[8];

	cr_assert_eq(acc(0, 8, false, b), -EAGAIN);
	fs.fail_complete = -EIO;
	fake_store_complete(&fs, 0);
	cr_assert_eq(acc(0, 8, false, b), -EIO);
	cr_assert_eq(roce_odp_resident(odp), 0);
	cr_assert_eq(roce_odp_prefetch(reg, 0, 8, 0), 1);
	fake_store_complete(&fs, 0);
	cr_assert_eq(acc(0, 8, false, b), 0);
	/* a submit refused outright frees the frame at once */
	fs.fail_submit = -EIO;
	cr_assert_eq(acc(5 * PG, 8, false, b), -EAGAIN);
	cr_assert_eq(roce_odp_resident(odp), 1);
	acc_retry(5 * PG, 8, false, b);
}

Test(roce_odp, prefetch_starts_page_ins_bounded_by_the_pool)
{
	uint8_t b[8];
	const struct roce_odp_stats *st = roce_odp_stats(odp);

	cr_assert_eq(roce_odp_prefetch(reg, 0, 16 * PG, 0), 4);
	cr_assert_eq(st->prefetches, 4);
	cr_assert_eq(st->faults, 0);
	fake_store_complete(&fs, 0);
	cr_assert_eq(acc(3 * PG, 8, false, b), 0, "no fault after advice");
	cr_assert_eq(roce_odp_prefetch(reg, 0, 4 * PG, 0), 0, "already resident");
	cr_assert_eq(roce_odp_prefetch(reg, 0, 17 * PG, 0), -ERANGE);
}

Test(roce_odp, a_sequential_fault_reads_ahead_into_free_frames_only)
{
	uint8_t b[8];
	const struct roce_odp_stats *st = roce_odp_stats(odp);

	acc_retry(0, 8, false, b);
	cr_assert_eq(st->prefetches, 0, "no read-ahead without a resident page before");
	cr_assert_eq(acc(PG, 8, false, b), -EAGAIN);
	cr_assert_eq(fs.nq, 3, "page 1 and read-ahead into the two free frames left");
	cr_assert_eq(st->prefetches, 2);
	fake_store_complete(&fs, 0);
	cr_assert_eq(acc(2 * PG, 8, false, b), 0);
	cr_assert_eq(acc(3 * PG, 8, false, b), 0);
	/* the pool is full: a sequential fault evicts for itself, never for read-ahead */
	cr_assert_eq(acc(4 * PG, 8, false, b), -EAGAIN);
	cr_assert_eq(fs.nq, 1);
	cr_assert_eq(st->prefetches, 2);
	fake_store_complete(&fs, 0);
}

Test(roce_odp, regions_and_pool_are_bounded)
{
	struct roce_odp *o2;
	struct roce_odp_region *r2;

	cr_assert_eq(roce_odp_init(&o2, 0), -EINVAL);
	cr_assert_eq(roce_odp_init(&o2, ROCE_ODP_MAX_FRAMES + 1), -EINVAL);
	cr_assert_eq(roce_odp_region_create(odp, "x", &fs.store, 17 * PG, &r2), -EINVAL, "beyond the store");
	cr_assert_eq(roce_odp_region_create(odp, "x", &fs.store, PG + 1, &r2), -EINVAL, "not whole pages");
	struct roce_odp_region *rs[ROCE_ODP_MAX_REGIONS];
	unsigned n = 0;
	while (n < ROCE_ODP_MAX_REGIONS && roce_odp_region_create(odp, "x", &fs.store, PG, &rs[n]) == 0)
		n++;
	cr_assert_eq(n, ROCE_ODP_MAX_REGIONS - 1);
	cr_assert_eq(roce_odp_region_create(odp, "x", &fs.store, PG, &r2), -ENOSPC);
	for (unsigned i = 0; i < n; i++)
		cr_assert_eq(roce_odp_region_destroy(rs[i]), 0);
}

TestSuite(roce_odp_big);

Test(roce_odp_big, a_region_sixteen_times_the_pool_keeps_every_byte_under_random_access)
{
	enum { FRAMES = 8, PAGES = 128 };
	static uint8_t model[PAGES * PG];
	uint8_t b[64];
	uint64_t x = 88172645463325252ull;

	setup_n(FRAMES, PAGES);
	for (uint64_t i = 0; i < sizeof(model); i++)
		model[i] = fake_store_pattern(i);
	for (unsigned k = 0; k < 3000; k++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		uint64_t off = (x >> 8) % (PAGES * PG - sizeof(b));
		uint32_t len = 1 + (uint32_t)((x >> 40) % sizeof(b));
		bool write = x & 1;
		if (write)
			for (uint32_t i = 0; i < len; i++)
				b[i] = model[off + i] = (uint8_t)(x >> (i % 56));
		acc_retry(off, len, write, b);
		if (!write)
			cr_assert_eq(memcmp(b, model + off, len), 0, "access %u at %llu", k, (unsigned long long)off);
		if (k % 500 == 0)
			roce_odp_invalidate(reg, off, PG);
	}
	cr_assert_leq(roce_odp_resident(odp), FRAMES);
	cr_assert_eq(roce_odp_flush(reg, on_flush, NULL), 0);
	while (fs.nq)
		fake_store_complete(&fs, 0);
	cr_assert_eq(memcmp(fs.durable, model, sizeof(model)), 0, "flushed contents equal the model");
	teardown();
}
