// sources: mm/pool.c
/*
 * Object pools: counters, exhaustion, double and foreign frees, zeroing.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>
#include "mm/pool.h"
#include "tests/unit/unit_support.h"

TestSuite(pool, .init = unit_pools_begin, .fini = unit_pools_end);

Test(pool, counters_back_to_zero)
{
	struct mm_pool p;
	void *obj[4];
	cr_assert_eq(mm_pool_init(&p, "t", 24, 4), 0);
	cr_assert_eq(p.obj_size, 32, "rounded up to 16 bytes");
	for (int i = 0; i < 4; i++)
		cr_assert_not_null(obj[i] = mm_pool_alloc(&p));
	cr_assert_eq(p.in_use, 4);
	cr_assert_eq(p.high_water, 4);
	cr_assert_null(mm_pool_alloc(&p), "exhausted");
	cr_assert_eq(p.failures, 1);
	for (int i = 0; i < 4; i++)
		cr_assert_eq(mm_pool_free(&p, obj[i]), 0);
	cr_assert_eq(p.in_use, 0);
	cr_assert_eq(p.high_water, 4);
	cr_assert_eq(p.allocs, 4);
	cr_assert_eq(mm_pool_destroy(&p), 0);
}

Test(pool, objects_are_distinct_and_usable)
{
	struct mm_pool p;
	unsigned char *a, *b;
	cr_assert_eq(mm_pool_init(&p, "t", 100, 2), 0);
	a = mm_pool_alloc(&p);
	b = mm_pool_alloc(&p);
	memset(a, 0xaa, 100);
	memset(b, 0xbb, 100);
	for (int i = 0; i < 100; i++)
		cr_assert_eq(a[i], 0xaa, "writing b must not touch a");
	cr_assert_eq(mm_pool_free(&p, a), 0);
	a = mm_pool_zalloc(&p);
	for (int i = 0; i < 100; i++)
		cr_assert_eq(a[i], 0);
	mm_pool_free(&p, a);
	mm_pool_free(&p, b);
	cr_assert_eq(mm_pool_destroy(&p), 0);
}

Test(pool, double_and_foreign_frees_refused)
{
	struct mm_pool p, q;
	cr_assert_eq(mm_pool_init(&p, "p", 32, 4), 0);
	cr_assert_eq(mm_pool_init(&q, "q", 32, 4), 0);
	char *a = mm_pool_alloc(&p);
	char *b = mm_pool_alloc(&q);
	cr_assert_eq(mm_pool_free(&p, a), 0);
	cr_assert_eq(mm_pool_free(&p, a), -EINVAL, "double free");
	cr_assert_eq(mm_pool_free(&p, b), -EINVAL, "object of another pool");
	char *c = mm_pool_alloc(&p);
	cr_assert_eq(mm_pool_free(&p, c + 1), -EINVAL, "not the start of an object");
	cr_assert_eq(p.bad_frees, 3);
	cr_assert_eq(p.in_use, 1, "refused frees change nothing");
	cr_assert_eq(mm_pool_destroy(&p), -EBUSY, "cannot destroy a pool in use");
	cr_assert_eq(mm_pool_free(&p, c), 0);
	cr_assert_eq(mm_pool_free(&q, b), 0);
	cr_assert_eq(mm_pool_destroy(&p), 0);
	cr_assert_eq(mm_pool_destroy(&q), 0);
}

Test(pool, bad_parameters)
{
	struct mm_pool p;
	cr_assert_eq(mm_pool_init(&p, "t", 0, 4), -EINVAL);
	cr_assert_eq(mm_pool_init(&p, "t", 8, 0), -EINVAL);
	cr_assert_eq(mm_pool_init(&p, "t", SIZE_MAX / 2, 4), -EINVAL);
}

static void count_pool(const struct mm_pool *p, void *arg)
{
	(void)p;
	(*(int *)arg)++;
}

Test(pool, listed_while_alive)
{
	struct mm_pool p;
	int n0 = 0, n1 = 0, n2 = 0;
	mm_pool_foreach(count_pool, &n0);
	cr_assert_eq(mm_pool_init(&p, "listed", 8, 1), 0);
	mm_pool_foreach(count_pool, &n1);
	cr_assert_eq(mm_pool_destroy(&p), 0);
	mm_pool_foreach(count_pool, &n2);
	cr_assert_eq(n1, n0 + 1);
	cr_assert_eq(n2, n0);
}

/* The end-of-test guard relies on this total: it must see a leaked object. */
Test(pool, total_in_use_sees_every_live_object)
{
	struct mm_pool p;
	size_t start = mm_pool_total_in_use();
	cr_assert_eq(mm_pool_init(&p, "leaky", 8, 2), 0);
	void *a = mm_pool_alloc(&p);
	cr_assert_eq(mm_pool_total_in_use(), start + 1);
	cr_assert_eq(mm_pool_free(&p, a), 0);
	cr_assert_eq(mm_pool_total_in_use(), start);
	cr_assert_eq(mm_pool_destroy(&p), 0);
}

/* The free path checks a pointer with one index computation (a pointer below the pool
 * wraps to an index far past its end): below, past the end and inside an object are all
 * refused, and the counters stay as they were. */
Test(pool, pointers_around_the_pool_refused)
{
	struct mm_pool p;
	cr_assert_eq(mm_pool_init(&p, "around", 48, 3), 0);
	unsigned char *a = mm_pool_alloc(&p);
	cr_assert_not_null(a);
	cr_assert_eq(mm_pool_free(&p, p.mem - p.obj_size), -EINVAL, "one object below the pool");
	cr_assert_eq(mm_pool_free(&p, p.mem - 1), -EINVAL, "one byte below the pool");
	cr_assert_eq(mm_pool_free(&p, p.mem + p.obj_size * p.capacity), -EINVAL, "just past the end");
	cr_assert_eq(mm_pool_free(&p, a + p.obj_size - 1), -EINVAL, "the last byte of an object");
	cr_assert_eq(mm_pool_free(&p, p.mem + p.obj_size * 2), -EINVAL, "a free object");
	cr_assert_eq(p.bad_frees, 5);
	cr_assert_eq(p.in_use, 1);
	cr_assert_eq(p.free_top, 2);
	cr_assert_eq(mm_pool_free(&p, a), 0);
	cr_assert_eq(p.allocs, 1);
	cr_assert_eq(p.high_water, 1);
	cr_assert_eq(mm_pool_destroy(&p), 0);
}

/* The two-step forms (mm_pool_has_free + mm_pool_take, mm_pool_live + mm_pool_put) keep the
 * same counters as mm_pool_alloc / mm_pool_free; a pool never initialised has nothing free. */
Test(pool, two_step_forms)
{
	struct mm_pool p, none;
	void *a, *b;
	size_t idx;
	memset(&none, 0, sizeof(none));
	cr_assert(!mm_pool_has_free(&none));
	cr_assert_eq(mm_pool_init(&p, "t", 32, 2), 0);
	cr_assert(mm_pool_has_free(&p));
	a = mm_pool_take(&p);
	b = mm_pool_alloc(&p);
	cr_assert(!mm_pool_has_free(&p));
	cr_assert_eq(p.in_use, 2);
	cr_assert_eq(p.allocs, 2);
	cr_assert_eq(p.high_water, 2);
	cr_assert(mm_pool_live(&p, a, &idx));
	cr_assert_eq(idx, 0);
	mm_pool_put(&p, a, idx);
	cr_assert(!mm_pool_live(&p, a, &idx), "freed");
	cr_assert(!mm_pool_live(&p, (char *)b + 1, &idx), "inside an object");
	cr_assert(!mm_pool_live(&p, (char *)b + 64, &idx), "past the pool");
	cr_assert(!mm_pool_live(&p, (char *)a - 32, &idx), "below the pool");
	cr_assert_eq(p.in_use, 1);
	cr_assert_eq(mm_pool_free(&p, b), 0);
	cr_assert_eq(p.in_use, 0);
	cr_assert_eq(p.bad_frees, 0, "mm_pool_live only looks");
	cr_assert_eq(mm_pool_destroy(&p), 0);
}
