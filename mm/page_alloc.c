/*
 * page_alloc.c - physical page-frame allocator (see page_alloc.h).
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include "page_alloc.h"

static inline bool bit_test(const uint64_t *bm, uint64_t i)
{
	return (bm[i / 64] >> (i % 64)) & 1;
}

static inline void bit_set(uint64_t *bm, uint64_t i)
{
	bm[i / 64] |= 1ull << (i % 64);
}

static inline void bit_clear(uint64_t *bm, uint64_t i)
{
	bm[i / 64] &= ~(1ull << (i % 64));
}

static inline uint64_t bitmap_words(uint64_t npages)
{
	return (npages + 63) / 64;
}

/* Metadata size of one region: the used and head bitmaps. */
size_t pa_region_meta_bytes(uint64_t npages)
{
	return 2 * bitmap_words(npages) * sizeof(uint64_t);
}

/* Empty allocator. */
void pa_init(struct page_allocator *pa)
{
	memset(pa, 0, sizeof(*pa));
}

/* Add one region of free pages. */
int pa_add_region(struct page_allocator *pa, uint64_t base, uint64_t npages, void *meta)
{
	if (base % PAGE_SIZE || npages == 0 || npages > (UINT64_MAX - base) / PAGE_SIZE)
		return -EINVAL;
	for (unsigned j = 0; j < pa->nregions; j++) {
		const struct page_region *o = &pa->regions[j];
		if (base < o->base + o->npages * PAGE_SIZE && o->base < base + npages * PAGE_SIZE)
			return -EINVAL;
	}
	if (pa->nregions == PAGE_ALLOC_MAX_REGIONS)
		return -ENOSPC;
	memset(meta, 0, pa_region_meta_bytes(npages));
	struct page_region *g = &pa->regions[pa->nregions++];
	g->base = base;
	g->npages = npages;
	g->nfree = npages;
	g->used = meta;
	g->head = g->used + bitmap_words(npages);
	pa->total_pages += npages;
	pa->free_pages += npages;
	return 0;
}

/* First index >= i whose physical page number is a multiple of align. */
static uint64_t align_index(const struct page_region *g, uint64_t i, uint64_t align)
{
	uint64_t pfn = (g->base >> PAGE_SHIFT) + i;
	uint64_t aligned = (pfn + align - 1) & ~(align - 1);
	return i + (aligned - pfn);
}

/* First-fit search for npages free pages at the given alignment; UINT64_MAX if none. */
static uint64_t region_find_run(const struct page_region *g, uint64_t npages, uint64_t align)
{
	uint64_t i = align_index(g, 0, align);

	while (i < g->npages && npages <= g->npages - i) {
		if (i % 64 == 0 && g->used[i / 64] == ~0ull) {
			i = align_index(g, i + 64, align);
			continue;
		}
		uint64_t j = 0;
		while (j < npages && !bit_test(g->used, i + j))
			j++;
		if (j == npages)
			return i;
		i = align_index(g, i + j + 1, align);
	}
	return UINT64_MAX;
}

static void region_mark(struct page_region *g, uint64_t first, uint64_t npages)
{
	for (uint64_t k = 0; k < npages; k++)
		bit_set(g->used, first + k);
	bit_set(g->head, first);
	g->nfree -= npages;
}

/* Allocate a contiguous aligned run. */
int pa_alloc(struct page_allocator *pa, uint64_t npages, uint64_t align_pages, uint64_t *out)
{
	if (npages == 0 || (align_pages & (align_pages - 1)))
		return -EINVAL;
	if (align_pages == 0)
		align_pages = 1;
	for (unsigned r = 0; r < pa->nregions; r++) {
		struct page_region *g = &pa->regions[r];
		if (g->nfree < npages)
			continue;
		uint64_t first = region_find_run(g, npages, align_pages);
		if (first == UINT64_MAX)
			continue;
		region_mark(g, first, npages);
		pa->free_pages -= npages;
		pa->allocs++;
		*out = g->base + first * PAGE_SIZE;
		return 0;
	}
	pa->failures++;
	return -ENOMEM;
}

/* Region holding [base, base + npages pages), or NULL. */
static struct page_region *region_of(struct page_allocator *pa, uint64_t base, uint64_t npages)
{
	for (unsigned r = 0; r < pa->nregions; r++) {
		struct page_region *g = &pa->regions[r];
		if (base >= g->base && (base - g->base) / PAGE_SIZE < g->npages &&
		    npages <= g->npages - (base - g->base) / PAGE_SIZE)
			return g;
	}
	return NULL;
}

/* Free one whole allocation, after checking that it is exactly one. */
int pa_free(struct page_allocator *pa, uint64_t base, uint64_t npages)
{
	struct page_region *g;
	uint64_t first;

	if (npages == 0 || base % PAGE_SIZE || !(g = region_of(pa, base, npages)))
		goto bad;
	first = (base - g->base) / PAGE_SIZE;
	if (!bit_test(g->head, first))
		goto bad; /* not the start of an allocation, or already free */
	for (uint64_t k = 0; k < npages; k++) {
		if (!bit_test(g->used, first + k) || (k > 0 && bit_test(g->head, first + k)))
			goto bad; /* runs past the allocation into free pages or the next one */
	}
	if (first + npages < g->npages && bit_test(g->used, first + npages) &&
	    !bit_test(g->head, first + npages))
		goto bad; /* the allocation is longer than npages */
	for (uint64_t k = 0; k < npages; k++)
		bit_clear(g->used, first + k);
	bit_clear(g->head, first);
	g->nfree += npages;
	pa->free_pages += npages;
	pa->frees++;
	return 0;
bad:
	pa->bad_frees++;
	return -EINVAL;
}

/* Mark a range allocated. */
int pa_reserve(struct page_allocator *pa, uint64_t base, uint64_t npages)
{
	struct page_region *g;
	uint64_t first;

	if (npages == 0 || base % PAGE_SIZE || !(g = region_of(pa, base, npages)))
		return -EINVAL;
	first = (base - g->base) / PAGE_SIZE;
	for (uint64_t k = 0; k < npages; k++)
		if (bit_test(g->used, first + k))
			return -EBUSY;
	region_mark(g, first, npages);
	pa->free_pages -= npages;
	pa->allocs++;
	return 0;
}

/* Longest free run over all regions. */
uint64_t pa_largest_free_run(const struct page_allocator *pa)
{
	uint64_t best = 0;
	for (unsigned r = 0; r < pa->nregions; r++) {
		const struct page_region *g = &pa->regions[r];
		uint64_t run = 0;
		for (uint64_t i = 0; i < g->npages; i++) {
			if (i % 64 == 0 && g->used[i / 64] == ~0ull && i + 64 <= g->npages) {
				run = 0;
				i += 63;
				continue;
			}
			run = bit_test(g->used, i) ? 0 : run + 1;
			if (run > best)
				best = run;
		}
	}
	return best;
}
