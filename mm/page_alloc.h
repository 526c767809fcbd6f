/*
 * page_alloc.h - physical page-frame allocator (bus-independent, host-testable).
 *
 * Free memory is a set of regions (from the UEFI memory map); each region has a "used"
 * bitmap and a "head" bitmap that marks the first page of every allocation, so a free
 * is checked exactly: freeing pages that are free (double free), a range that is not
 * one whole allocation, or an address outside every region fails with -EINVAL and
 * changes nothing. Allocations are contiguous runs with a power-of-two alignment (for
 * DMA rings and buffers). The allocator never touches the memory it manages, only its
 * metadata, which the caller provides.
 */
#ifndef MM_PAGE_ALLOC_H
#define MM_PAGE_ALLOC_H

#include <stddef.h>
#include <stdint.h>

#define PAGE_SHIFT 12
#define PAGE_SIZE (1ull << PAGE_SHIFT)
#define PAGE_ALLOC_MAX_REGIONS 64

struct page_range {
	uint64_t base;    /* physical, page aligned */
	uint64_t npages;
};

struct page_region {
	uint64_t base;
	uint64_t npages;
	uint64_t nfree;
	uint64_t *used;   /* bit set: page allocated */
	uint64_t *head;   /* bit set: first page of an allocation */
};

struct page_allocator {
	struct page_region regions[PAGE_ALLOC_MAX_REGIONS];
	unsigned nregions;
	uint64_t total_pages;
	uint64_t free_pages;
	uint64_t allocs;      /* successful allocations */
	uint64_t frees;       /* successful frees */
	uint64_t failures;    /* allocations refused for lack of a fitting run */
	uint64_t bad_frees;   /* frees refused (double, partial, foreign) */
};

/* Bytes of metadata a region of npages pages needs. */
size_t pa_region_meta_bytes(uint64_t npages);

/* Start with no regions. */
void pa_init(struct page_allocator *pa);

/* Add the free pages [base, base + npages pages) with pa_region_meta_bytes(npages) bytes of
 * metadata at meta (outside the region). Returns 0, -EINVAL (unaligned, overlapping,
 * empty) or -ENOSPC (too many regions). */
int pa_add_region(struct page_allocator *pa, uint64_t base, uint64_t npages, void *meta);

/* Allocate npages contiguous pages aligned to align_pages (a power of two, 0 or 1 for none);
 * stores the physical base in *out. Returns 0, -EINVAL or -ENOMEM. */
int pa_alloc(struct page_allocator *pa, uint64_t npages, uint64_t align_pages, uint64_t *out);

/* Free exactly one earlier allocation (base, npages). Returns 0 or -EINVAL. */
int pa_free(struct page_allocator *pa, uint64_t base, uint64_t npages);

/* Mark [base, base + npages) allocated, as one allocation (e.g. memory in use before the
 * allocator existed). Returns 0, -EINVAL (outside the regions) or -EBUSY (already used). */
int pa_reserve(struct page_allocator *pa, uint64_t base, uint64_t npages);

/* Length in pages of the longest free run (fragmentation indicator). */
uint64_t pa_largest_free_run(const struct page_allocator *pa);

#endif
