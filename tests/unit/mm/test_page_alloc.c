// sources: mm/page_alloc.c
/*
 * Page allocator: contiguous aligned runs, exhaustion, fragmentation, and exact
 * detection of double, partial and foreign frees.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include "mm/page_alloc.h"

#define BASE 0x100000ull

static struct page_allocator pa;
static void *meta[4];

static void setup_one(uint64_t npages)
{
	pa_init(&pa);
	meta[0] = malloc(pa_region_meta_bytes(npages));
	cr_assert_eq(pa_add_region(&pa, BASE, npages, meta[0]), 0);
}

static void teardown(void)
{
	for (int i = 0; i < 4; i++) {
		free(meta[i]);
		meta[i] = NULL;
	}
}

TestSuite(page_alloc, .fini = teardown);

Test(page_alloc, alloc_free_restores_counters)
{
	uint64_t a, b;
	setup_one(100);
	cr_assert_eq(pa_alloc(&pa, 1, 0, &a), 0);
	cr_assert_eq(pa_alloc(&pa, 10, 0, &b), 0);
	cr_assert_eq(a, BASE);
	cr_assert_eq(b, BASE + PAGE_SIZE);
	cr_assert_eq(pa.free_pages, 89);
	cr_assert_eq(pa_free(&pa, b, 10), 0);
	cr_assert_eq(pa_free(&pa, a, 1), 0);
	cr_assert_eq(pa.free_pages, 100);
	cr_assert_eq(pa.allocs, 2);
	cr_assert_eq(pa.frees, 2);
	cr_assert_eq(pa_largest_free_run(&pa), 100);
}

Test(page_alloc, alignment_is_physical)
{
	uint64_t a, b;
	setup_one(512);
	cr_assert_eq(pa_alloc(&pa, 1, 0, &a), 0);
	/* 64 KiB alignment = 16 pages, measured on the physical address, not the index */
	cr_assert_eq(pa_alloc(&pa, 4, 16, &b), 0);
	cr_assert_eq(b % (16 * PAGE_SIZE), 0);
	cr_assert_gt(b, a);
	cr_assert_eq(pa_alloc(&pa, 1, 3, &b), -EINVAL, "alignment must be a power of two");
	cr_assert_eq(pa_alloc(&pa, 0, 0, &b), -EINVAL);
}

Test(page_alloc, exhaustion_fails_cleanly_and_counts)
{
	uint64_t a, b;
	setup_one(8);
	cr_assert_eq(pa_alloc(&pa, 8, 0, &a), 0);
	cr_assert_eq(pa_alloc(&pa, 1, 0, &b), -ENOMEM);
	cr_assert_eq(pa.failures, 1);
	cr_assert_eq(pa.free_pages, 0);
	cr_assert_eq(pa_free(&pa, a, 8), 0);
	cr_assert_eq(pa_alloc(&pa, 9, 0, &b), -ENOMEM, "larger than the region");
	cr_assert_eq(pa_alloc(&pa, 8, 0, &b), 0);
}

Test(page_alloc, fragmentation_refuses_a_run_that_does_not_exist)
{
	uint64_t p[16];
	setup_one(16);
	for (int i = 0; i < 16; i++)
		cr_assert_eq(pa_alloc(&pa, 1, 0, &p[i]), 0);
	/* free every other page: 8 pages free, but no two adjacent */
	for (int i = 0; i < 16; i += 2)
		cr_assert_eq(pa_free(&pa, p[i], 1), 0);
	cr_assert_eq(pa.free_pages, 8);
	cr_assert_eq(pa_largest_free_run(&pa), 1);
	uint64_t r;
	cr_assert_eq(pa_alloc(&pa, 2, 0, &r), -ENOMEM);
	/* freeing a neighbour joins a run of three */
	cr_assert_eq(pa_free(&pa, p[1], 1), 0);
	cr_assert_eq(pa_largest_free_run(&pa), 3);
	cr_assert_eq(pa_alloc(&pa, 3, 0, &r), 0);
	cr_assert_eq(r, p[0]);
}

Test(page_alloc, double_free_detected_and_harmless)
{
	uint64_t a, b;
	setup_one(16);
	cr_assert_eq(pa_alloc(&pa, 4, 0, &a), 0);
	cr_assert_eq(pa_alloc(&pa, 4, 0, &b), 0);
	cr_assert_eq(pa_free(&pa, a, 4), 0);
	cr_assert_eq(pa_free(&pa, a, 4), -EINVAL, "double free must be refused");
	cr_assert_eq(pa.bad_frees, 1);
	cr_assert_eq(pa.free_pages, 12, "a refused free changes nothing");
	/* b is intact: it can still be freed exactly once */
	cr_assert_eq(pa_free(&pa, b, 4), 0);
	cr_assert_eq(pa_free(&pa, b, 4), -EINVAL);
}

Test(page_alloc, partial_and_overlong_frees_refused)
{
	uint64_t a, b;
	setup_one(16);
	cr_assert_eq(pa_alloc(&pa, 4, 0, &a), 0);
	cr_assert_eq(pa_alloc(&pa, 4, 0, &b), 0);
	cr_assert_eq(pa_free(&pa, a, 3), -EINVAL, "shorter than the allocation");
	cr_assert_eq(pa_free(&pa, a, 5), -EINVAL, "runs into the next allocation");
	cr_assert_eq(pa_free(&pa, a + PAGE_SIZE, 1), -EINVAL, "not the first page");
	cr_assert_eq(pa_free(&pa, a + PAGE_SIZE, 3), -EINVAL, "the tail of an allocation, up to its end");
	cr_assert_eq(pa_free(&pa, a, 8), -EINVAL, "two allocations at once");
	cr_assert_eq(pa_free(&pa, a + 1, 4), -EINVAL, "unaligned");
	cr_assert_eq(pa_free(&pa, BASE + 100 * PAGE_SIZE, 1), -EINVAL, "outside every region");
	cr_assert_eq(pa.bad_frees, 7);
	cr_assert_eq(pa_free(&pa, a, 4), 0);
	cr_assert_eq(pa_free(&pa, b, 4), 0);
	cr_assert_eq(pa.free_pages, 16);
}

Test(page_alloc, several_regions_and_reserve)
{
	uint64_t a;
	pa_init(&pa);
	meta[0] = malloc(pa_region_meta_bytes(4));
	meta[1] = malloc(pa_region_meta_bytes(64));
	cr_assert_eq(pa_add_region(&pa, BASE, 4, meta[0]), 0);
	cr_assert_eq(pa_add_region(&pa, 0x40000000ull, 64, meta[1]), 0);
	meta[2] = malloc(pa_region_meta_bytes(8));
	cr_assert_eq(pa_add_region(&pa, BASE + 2 * PAGE_SIZE, 8, meta[2]), -EINVAL, "overlap refused");
	cr_assert_eq(pa_add_region(&pa, BASE + 1, 8, meta[2]), -EINVAL, "unaligned refused");
	/* 8 pages do not fit the first region: the allocation comes from the second */
	cr_assert_eq(pa_alloc(&pa, 8, 0, &a), 0);
	cr_assert_eq(a, 0x40000000ull);
	cr_assert_eq(pa_reserve(&pa, 0x40000000ull + 8 * PAGE_SIZE, 2), 0);
	cr_assert_eq(pa_reserve(&pa, 0x40000000ull + 9 * PAGE_SIZE, 2), -EBUSY);
	cr_assert_eq(pa_free(&pa, 0x40000000ull + 8 * PAGE_SIZE, 2), 0, "a reservation frees like an allocation");
	cr_assert_eq(pa_free(&pa, a, 8), 0);
	cr_assert_eq(pa.free_pages, 68);
}

Test(page_alloc, region_table_bounded)
{
	pa_init(&pa);
	static uint64_t m[PAGE_ALLOC_MAX_REGIONS + 1][2];
	for (int i = 0; i < PAGE_ALLOC_MAX_REGIONS; i++)
		cr_assert_eq(pa_add_region(&pa, BASE + (uint64_t)i * 2 * PAGE_SIZE, 1, m[i]), 0);
	cr_assert_eq(pa_add_region(&pa, 0x80000000ull, 1, m[PAGE_ALLOC_MAX_REGIONS]), -ENOSPC);
}
