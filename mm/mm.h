/*
 * mm.h - the face of mm/: physical pages, the heap, object pools and DMA addresses.
 *
 * The appliance runs identity-mapped (virtual == physical), so a page allocation is
 * usable both as a pointer and, through dma_addr_host(), as a device address.
 */
#ifndef MM_MM_H
#define MM_MM_H

#include <stddef.h>
#include <stdint.h>
#include "page_alloc.h"
#include "pool.h"
#include "dma.h"

/* Build the page allocator over the given free ranges; its metadata is carved from the
 * first range that can hold it. Returns 0 or a negative errno. */
int mm_init(const struct page_range *ranges, unsigned n);

/* Add more free ranges later (e.g. firmware boot-services memory once it is no longer in
 * use); metadata comes from the allocator. Returns 0 or the first error. */
int mm_add_ranges(const struct page_range *ranges, unsigned n);

/* Give newlib's malloc a contiguous arena of `bytes` bytes. Returns 0 or -ENOMEM. */
int mm_heap_init(uint64_t bytes);

/* Allocate npages contiguous zeroed pages aligned to align_pages; NULL when none fit. */
void *mm_alloc_pages(uint64_t npages, uint64_t align_pages);

/* Free pages from mm_alloc_pages(). Returns 0 or -EINVAL (bad or double free). */
int mm_free_pages(void *p, uint64_t npages);

/* The appliance's page allocator (read-only use: counters for the console). */
const struct page_allocator *mm_page_allocator(void);

#endif
