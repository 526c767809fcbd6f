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

/* Take one object (contents undefined), or NULL when the pool is exhausted. */
void *mm_pool_alloc(struct mm_pool *p);

/* Take one zero-filled object, or NULL. */
void *mm_pool_zalloc(struct mm_pool *p);

/* Return an object. Returns 0, or -EINVAL for a pointer that is not a live object of p. */
int mm_pool_free(struct mm_pool *p, void *obj);

/* Call fn for every initialised pool. */
void mm_pool_foreach(void (*fn)(const struct mm_pool *p, void *arg), void *arg);

/* Sum of in_use over every pool (tests assert it returns to its starting value). */
size_t mm_pool_total_in_use(void);

#endif
