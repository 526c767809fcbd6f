/*
 * pool.c - fixed-size object pools (see pool.h).
 *
 * Free objects are kept as a stack of indices apart from the objects, so a stray write
 * into a freed object cannot corrupt the pool, and an in-use map makes double frees
 * detectable. The map has a byte per object, not a bit: a take or a give back then costs a
 * store and a load instead of a shift, a mask and a read-modify-write (every frame and
 * every segment of the data path takes and gives back objects). Under AddressSanitizer
 * (host tests) free objects are poisoned.
 */
#include <errno.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include "pool.h"

#define POOL_POISON MM_POOL_POISON
#define POOL_UNPOISON MM_POOL_UNPOISON

#define POOL_ALIGN 16
#define POOL_MAX_OBJECTS (1u << 24)

static struct list_node pool_list = LIST_HEAD_INIT(pool_list);

/* Create a pool. */
int mm_pool_init(struct mm_pool *p, const char *name, size_t obj_size, size_t capacity)
{
	memset(p, 0, sizeof(*p));
	if (obj_size == 0 || capacity == 0 || capacity > POOL_MAX_OBJECTS ||
	    obj_size > (SIZE_MAX / 2) / capacity)
		return -EINVAL;
	p->name = name;
	p->obj_size = (obj_size + POOL_ALIGN - 1) & ~(size_t)(POOL_ALIGN - 1);
	p->capacity = capacity;
	p->mem = memalign(POOL_ALIGN, p->obj_size * capacity);
	p->free_stack = calloc(capacity, sizeof(*p->free_stack));
	p->in_use_map = calloc(capacity, sizeof(*p->in_use_map));
	if (!p->mem || !p->free_stack || !p->in_use_map)
		goto err_free;
	/* Hand out low indices first: object 0 on top of the stack. */
	for (size_t i = 0; i < capacity; i++)
		p->free_stack[i] = (uint32_t)(capacity - 1 - i);
	p->free_top = capacity;
	POOL_POISON(p->mem, p->obj_size * capacity);
	list_add_tail(&pool_list, &p->node);
	return 0;

err_free:
	free(p->in_use_map);
	free(p->free_stack);
	free(p->mem);
	memset(p, 0, sizeof(*p));
	return -ENOMEM;
}

/* Destroy an idle pool. */
int mm_pool_destroy(struct mm_pool *p)
{
	if (p->in_use)
		return -EBUSY;
	list_del(&p->node);
	POOL_UNPOISON(p->mem, p->obj_size * p->capacity);
	free(p->in_use_map);
	free(p->free_stack);
	free(p->mem);
	memset(p, 0, sizeof(*p));
	return 0;
}

/* An exhausted pool: counted. */
void *mm_pool_alloc_empty(struct mm_pool *p)
{
	p->failures++;
	return NULL;
}

/* Take a zeroed object. */
void *mm_pool_zalloc(struct mm_pool *p)
{
	void *obj = mm_pool_alloc(p);
	if (obj)
		memset(obj, 0, p->obj_size);
	return obj;
}

/* A refused free (double free, foreign pointer): counted. */
int mm_pool_free_bad(struct mm_pool *p)
{
	p->bad_frees++;
	return -EINVAL;
}

/* Visit every pool. */
void mm_pool_foreach(void (*fn)(const struct mm_pool *p, void *arg), void *arg)
{
	struct list_node *it;
	list_for_each(&pool_list, it)
		fn(container_of(it, struct mm_pool, node), arg);
}

/* Objects in use across all pools. */
size_t mm_pool_total_in_use(void)
{
	size_t total = 0;
	struct list_node *it;
	list_for_each(&pool_list, it)
		total += container_of(it, struct mm_pool, node)->in_use;
	return total;
}
