/*
 * unit_support.c - shared helpers for host unit tests (see unit_support.h).
 * Linked into every unit test binary; pools are referenced weakly so tests that do not
 * link mm/pool.c still build.
 */
#include <criterion/criterion.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
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

/* Criterion ignores a failed assertion in a .fini function: the test would still pass.
 * A leak therefore aborts the test process, which Criterion reports as a crash. */
void unit_pools_end(void)
{
	if (mm_pool_total_in_use && mm_pool_total_in_use() != pools_at_start) {
		fprintf(stderr, "pool leak: %zu objects still in use (started with %zu)\n", mm_pool_total_in_use(),
			pools_at_start);
		abort();
	}
}
