/*
 * unit_support.h - shared helpers for host unit tests: a fake clock the test advances
 * by hand, and a check that every object pool is back to its starting use.
 */
#ifndef TESTS_UNIT_SUPPORT_H
#define TESTS_UNIT_SUPPORT_H

#include <stdint.h>

/* Install the fake clock at t = 0 ns. */
void fake_clock_install(void);

/* Set / advance the fake clock. */
void fake_clock_set(uint64_t ns);
void fake_clock_advance(uint64_t ns);

/* Criterion init/fini pair: remembers pool use at start and aborts the test (a crash in
 * Criterion's report) when it is not the same at the end: use as .init = unit_pools_begin,
 * .fini = unit_pools_end. */
void unit_pools_begin(void);
void unit_pools_end(void);

#endif
