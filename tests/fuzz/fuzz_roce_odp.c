// sources: drivers/rdma/roce_odp.c tests/unit/drivers/rdma/fake_odp_store.c lib/clock.c
/*
 * libFuzzer harness: sequences of operations on an on-demand paged region (4 frames,
 * 16 pages) over the fake store, checked against a model of the region's bytes. Each
 * input byte picks an operation (access read/write at an offset and length, complete
 * store commands, invalidate, prefetch, pin/unpin, flush, a full store, a failed
 * command, poll, destroy and re-create the region over the same store). Invariants: a
 * read that succeeds returns the model's bytes;
 * resident frames never exceed the pool; a completed flush leaves on the "durable" disk
 * every byte not written since the flush began; after destroy and re-create (commands
 * all completed, no failure injected in between) the region reads as the model; at the
 * end everything completes and the pool is empty.
 */
#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "drivers/rdma/roce_odp.h"
#include "tests/unit/drivers/rdma/fake_odp_store.h"

#define FRAMES 4
#define PAGES 16
#define SIZE (PAGES * ROCE_ODP_PAGE_SIZE)

static uint8_t model[SIZE];
static uint8_t snap[SIZE];          /* the model when the running flush began */
static uint8_t since[SIZE];         /* written since the running flush began */
static struct fake_store fs;
static struct roce_odp *odp;
static struct roce_odp_region *reg;
static bool flushing, flush_ok_seen, failed_read, failed_write;
static unsigned pins[PAGES];

static void on_flush(void *arg, int rc)
{
	(void)arg;
	flushing = false;
	if (rc)
		return;
	for (unsigned i = 0; i < SIZE; i++)
		if (!since[i])
			assert(fs.durable[i] == snap[i]);
	flush_ok_seen = true;
}

static void drain_all(void)
{
	for (unsigned k = 0; k < 64 && (fs.nq || roce_odp_inflight(odp)); k++) {
		fs.busy = 0;
		fake_store_complete(&fs, 0);
		roce_odp_poll(odp, 0);
	}
	assert(!fs.nq);
}

static void unpin_all(void)
{
	for (unsigned p = 0; p < PAGES; p++)
		while (pins[p]) {
			roce_odp_unpin(reg, (uint64_t)p * ROCE_ODP_PAGE_SIZE, 1);
			pins[p]--;
		}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t i = 0;

	fake_store_init(&fs, SIZE);
	for (unsigned k = 0; k < SIZE; k++)
		model[k] = fake_store_pattern(k);
	memset(pins, 0, sizeof(pins));
	flushing = failed_read = failed_write = false;
	if (roce_odp_init(&odp, FRAMES) || roce_odp_region_create(odp, "f", &fs.store, SIZE, &reg))
		abort();

	while (i + 4 <= size) {
		uint8_t op = data[i] % 12;
		uint32_t off = ((uint32_t)data[i + 1] << 8 | data[i + 2]) * 7 % SIZE;
		uint32_t len = 1 + data[i + 3] * 23 % 6000;
		i += 4;
		if (len > SIZE - off)
			len = SIZE - off;
		switch (op) {
		case 0:
		case 1: {  /* access */
			bool write = op == 1;
			dma_addr_t mem[4];
			uint32_t pl[4];
			unsigned n;
			int rc = roce_odp_access(reg, off, len, write, 0, mem, pl, 4, &n);
			assert(rc == 0 || rc == -EAGAIN || rc == -E2BIG || (rc == -EIO && failed_read));
			if (rc)
				break;
			uint32_t at = off;
			for (unsigned k = 0; k < n; k++) {
				uint8_t *p = (uint8_t *)(uintptr_t)mem[k].bus;
				for (uint32_t b = 0; b < pl[k]; b++, at++) {
					if (write) {
						p[b] = model[at] = (uint8_t)(at ^ data[i - 1] ^ i);
						since[at] = 1;
					} else {
						assert(p[b] == model[at]);
					}
				}
			}
			assert(at == off + len);
			break;
		}
		case 2:
			fake_store_complete(&fs, 1 + data[i - 1] % 4);
			break;
		case 3:
			assert(roce_odp_invalidate(reg, off, len) >= 0);
			break;
		case 4:
			assert(roce_odp_prefetch(reg, off, len, 0) >= 0);
			break;
		case 5: {
			unsigned p = off / ROCE_ODP_PAGE_SIZE;
			if (pins[p] < 3 && roce_odp_pin(reg, (uint64_t)p * ROCE_ODP_PAGE_SIZE, 1, 0) == 0)
				pins[p]++;
			break;
		}
		case 6: {
			unsigned p = off / ROCE_ODP_PAGE_SIZE;
			if (pins[p]) {
				roce_odp_unpin(reg, (uint64_t)p * ROCE_ODP_PAGE_SIZE, 1);
				pins[p]--;
			}
			break;
		}
		case 7:
			if (!flushing && roce_odp_flush(reg, on_flush, NULL) == 0) {
				flushing = true;
				memcpy(snap, model, SIZE);
				memset(since, 0, SIZE);
			}
			break;
		case 8:
			fs.busy = data[i - 1] % 3;
			break;
		case 9:
			/* a failed command: a page-in becomes an error, a write-back keeps the page dirty */
			if (fs.nq) {
				if (fs.q[0]->op == ROCE_ODP_IO_READ)
					failed_read = true;
				if (fs.q[0]->op == ROCE_ODP_IO_WRITE)
					failed_write = true;
				fs.fail_complete = -EIO;
				fake_store_complete(&fs, 1);
			}
			break;
		case 10:
			roce_odp_poll(odp, 0);
			break;
		case 11: {  /* destroy and re-create: what was written must come back from the store */
			if (failed_write)
				break;
			unpin_all();
			assert(roce_odp_region_destroy(reg) == 0);  /* reg may be freed: not touched again */
			drain_all();
			assert(roce_odp_resident(odp) == 0);
			assert(memcmp(fs.disk, model, SIZE) == 0);
			flushing = false;
			failed_read = false;
			if (roce_odp_region_create(odp, "f", &fs.store, SIZE, &reg))
				abort();
			break;
		}
		}
		assert(roce_odp_resident(odp) <= FRAMES);
	}
	unpin_all();
	assert(roce_odp_pinned(odp) == 0);
	assert(roce_odp_region_destroy(reg) == 0);
	drain_all();
	assert(roce_odp_resident(odp) == 0);
	if (!failed_write)
		assert(memcmp(fs.disk, model, SIZE) == 0);
	assert(roce_odp_fini(odp) == 0);
	fake_store_fini(&fs);
	return 0;
}
