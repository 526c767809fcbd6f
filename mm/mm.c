/*
 * mm.c - the appliance's page allocator instance and heap (see mm.h).
 */
#include <errno.h>
#include <string.h>
#include "../lib/libc_glue.h"
#include "../lib/log.h"
#include "mm.h"

LOG_MODULE_DEFINE(mm);

static struct page_allocator mm_pages;

/* Build the allocator; metadata is carved from the start of the first range large enough. */
int mm_init(const struct page_range *ranges, unsigned n)
{
	size_t meta_bytes = 0;
	int carve = -1;
	int rc;

	pa_init(&mm_pages);
	for (unsigned i = 0; i < n; i++)
		meta_bytes += pa_region_meta_bytes(ranges[i].npages);
	uint64_t meta_pages = (meta_bytes + PAGE_SIZE - 1) / PAGE_SIZE;
	for (unsigned i = 0; i < n && carve < 0; i++)
		if (ranges[i].npages > meta_pages)
			carve = (int)i;
	if (carve < 0)
		return -ENOMEM;

	unsigned char *meta = (unsigned char *)(uintptr_t)ranges[carve].base;
	for (unsigned i = 0; i < n; i++) {
		uint64_t base = ranges[i].base, npages = ranges[i].npages;
		if ((int)i == carve) {
			base += meta_pages * PAGE_SIZE;
			npages -= meta_pages;
		}
		rc = pa_add_region(&mm_pages, base, npages, meta);
		if (rc)
			return rc;
		meta += pa_region_meta_bytes(npages);
	}
	log_info("page allocator: %llu pages (%llu MiB) in %u regions, %llu metadata pages",
		 (unsigned long long)mm_pages.total_pages,
		 (unsigned long long)(mm_pages.total_pages * PAGE_SIZE >> 20), n,
		 (unsigned long long)meta_pages);
	return 0;
}

/* Add ranges with metadata allocated from the allocator itself. */
int mm_add_ranges(const struct page_range *ranges, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		uint64_t meta_pages = (pa_region_meta_bytes(ranges[i].npages) + PAGE_SIZE - 1) / PAGE_SIZE;
		uint64_t meta;
		int rc = pa_alloc(&mm_pages, meta_pages, 1, &meta);
		if (rc)
			return rc;
		rc = pa_add_region(&mm_pages, ranges[i].base, ranges[i].npages, (void *)(uintptr_t)meta);
		if (rc) {
			pa_free(&mm_pages, meta, meta_pages);
			return rc;
		}
	}
	return 0;
}

/* Hand newlib a heap arena. */
int mm_heap_init(uint64_t bytes)
{
	uint64_t npages = (bytes + PAGE_SIZE - 1) / PAGE_SIZE;
	uint64_t base;
	int rc = pa_alloc(&mm_pages, npages, 1, &base);
	if (rc)
		return rc;
	libc_heap_set((void *)(uintptr_t)base, npages * PAGE_SIZE);
	return 0;
}

/* Allocate zeroed pages. */
void *mm_alloc_pages(uint64_t npages, uint64_t align_pages)
{
	uint64_t base;
	if (pa_alloc(&mm_pages, npages, align_pages, &base))
		return NULL;
	void *p = (void *)(uintptr_t)base;
	memset(p, 0, npages * PAGE_SIZE);
	return p;
}

/* Free pages. */
int mm_free_pages(void *p, uint64_t npages)
{
	int rc = pa_free(&mm_pages, (uint64_t)(uintptr_t)p, npages);
	if (rc)
		log_err("refused free of %llu pages at %p: not one live allocation",
			(unsigned long long)npages, p);
	return rc;
}

/* Read-only view for the console. */
const struct page_allocator *mm_page_allocator(void)
{
	return &mm_pages;
}
