/*
 * unit_support.c - shared helpers for host unit tests (see unit_support.h).
 * Linked into every unit test binary; pools are referenced weakly so tests that do not
 * link mm/pool.c still build.
 */
#include <criterion/criterion.h>
#include <stddef.h>
#include "lib/clock.h"
#include "unit_support.h"

static uint64_t fake_now;

static uint64_t fake_clock(void)
{
	return fake_now;
}

void fake_clock_install(void)
{
	fake_now = 0;
	clock_set_source(fake_clock);
}

void fake_clock_set(uint64_t ns)
{
	fake_now = ns;
}

void fake_clock_advance(uint64_t ns)
{
	fake_now += ns;
}

size_t mm_pool_total_in_use(void) __attribute__((weak));
static size_t pools_at_start;

void unit_pools_begin(void)
{
	pools_at_start = mm_pool_total_in_use ? mm_pool_total_in_use() : 0;
}

void unit_pools_end(void)
{
	if (mm_pool_total_in_use)
		cr_assert_eq(mm_pool_total_in_use(), pools_at_start, "objects still in use: %zu (started with %zu)",
			     mm_pool_total_in_use(), pools_at_start);
}
