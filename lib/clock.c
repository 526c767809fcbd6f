/*
 * clock.c - the injected monotonic clock (see clock.h).
 */
#include "clock.h"

static clock_source_fn clock_source;

/* Install the monotonic time source. */
void clock_set_source(clock_source_fn fn)
{
	clock_source = fn;
}

/* Monotonic nanoseconds; 0 until a source is installed. */
uint64_t clock_now_ns(void)
{
	return clock_source ? clock_source() : 0;
}
