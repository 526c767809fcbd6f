/*
 * pool.h - fixed-size object pools with counters.
 *
 * Every bounded resource of the appliance (connections, commands, buffers) comes from a
 * pool with a fixed capacity, so exhaustion is a counted, reported event rather than a
 * heap failure. Each pool counts objects in use, the high-water mark, allocation
 * failures and refused frees (double free, foreign pointer); the console's `mem` lists
 * every pool. Tests assert that in_use is back to zero when they end.
 */
#ifndef MM_POOL_H
#define MM_POOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "../lib/list.h"

struct mm_pool {
	const char *name;
	size_t obj_size;      /* rounded up to 16 bytes */
	size_t capacity;
	unsigned char *mem;   /* capacity * obj_size bytes */
	uint32_t *free_stack; /* indices of free objects */
	size_t free_top;
	uint8_t *in_use_map;  /* byte per object, 1: allocated */
	size_t in_use;
	size_t high_water;
	uint64_t allocs;
	uint64_t failures;
	uint64_t bad_frees;
	struct list_node node; /* in the list of all pools */
};

/* Create a pool of `capacity` objects of obj_size bytes (storage from the heap) and add
 * it to the list of pools. Returns 0, -EINVAL or -ENOMEM. */
int mm_pool_init(struct mm_pool *p, const char *name, size_t obj_size, size_t capacity);

/* Release the pool's storage and unlist it. Returns 0, or -EBUSY (and does nothing)
 * while objects are still in use. */
int mm_pool_destroy(struct mm_pool *p);

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define MM_POOL_POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define MM_POOL_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define MM_POOL_POISON(p, n) ((void)(p), (void)(n))
#define MM_POOL_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

/* The slow ends of mm_pool_alloc and mm_pool_free (pool.c): an exhausted pool (counted,
 * NULL), a refused free (counted, -EINVAL). */
void *mm_pool_alloc_empty(struct mm_pool *p);
int mm_pool_free_bad(struct mm_pool *p);

/* mm_pool_alloc in two steps, for a caller that ends in a call of its own when the pool is
 * exhausted (mm_pool_alloc_empty then, so that the failure is counted): is an object left?
 * (A pool never initialised, or destroyed, is zero: none.) */
static inline bool mm_pool_has_free(const struct mm_pool *p)
{
	return p->free_top != 0;
}

/* Take one object (contents undefined) from a pool that has one (mm_pool_has_free). */
static inline void *mm_pool_take(struct mm_pool *p)
{
	size_t top = p->free_top - 1;
	uint32_t idx = p->free_stack[top];
	p->free_top = top;
	p->in_use_map[idx] = 1;
	size_t n = ++p->in_use;
	p->allocs++;
	if (n > p->high_water)
		p->high_water = n;
	void *obj = p->mem + (size_t)idx * p->obj_size;
	MM_POOL_UNPOISON(obj, p->obj_size);
	return obj;
}

/* Take one object (contents undefined), or NULL when the pool is exhausted. Inline: every
 * frame, segment and command of the data path takes and gives back objects, and the call
 * cost as much as the work. */
static inline void *mm_pool_alloc(struct mm_pool *p)
{
	if (__builtin_expect(!mm_pool_has_free(p), 0))
		return mm_pool_alloc_empty(p);
	return mm_pool_take(p);
}

/* Take one zero-filled object, or NULL. */
void *mm_pool_zalloc(struct mm_pool *p);

/* mm_pool_free in two steps, for a caller that ends in a call of its own when the free is
 * refused (mm_pool_free_bad then, so that it is counted): is obj a live object of p? Its
 * index in *idx when it is. One index check: a pointer below the pool's memory wraps to an
 * offset far above it, since capacity * obj_size <= SIZE_MAX / 2 (mm_pool_init). */
static inline bool mm_pool_live(const struct mm_pool *p, const void *obj, size_t *idx)
{
	uintptr_t off = (uintptr_t)obj - (uintptr_t)p->mem;
	size_t i = off / p->obj_size;

	*idx = i;
	return i < p->capacity && off % p->obj_size == 0 && p->in_use_map[i];
}

/* Give back obj, a live object of p at index idx (mm_pool_live). */
static inline void mm_pool_put(struct mm_pool *p, void *obj, size_t idx)
{
	p->in_use_map[idx] = 0;
	p->free_stack[p->free_top++] = (uint32_t)idx;
	p->in_use--;
	MM_POOL_POISON(obj, p->obj_size);
}

/* Return an object. Returns 0, or -EINVAL for a pointer that is not a live object of p
 * (mm_pool_live). Inline, as mm_pool_alloc. */
static inline int mm_pool_free(struct mm_pool *p, void *obj)
{
	size_t idx;

	if (__builtin_expect(!mm_pool_live(p, obj, &idx), 0))
		return mm_pool_free_bad(p);
	mm_pool_put(p, obj, idx);
	return 0;
}

/* Call fn for every initialised pool. */
void mm_pool_foreach(void (*fn)(const struct mm_pool *p, void *arg), void *arg);

/* Sum of in_use over every pool (tests assert it returns to its starting value). */
size_t mm_pool_total_in_use(void);

#endif
