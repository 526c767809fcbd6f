/*
 * clock.c - the injected monotonic clock (see clock.h).
 */
#include "clock.h"

clock_source_fn clock_source_now;

/* Install the monotonic time source. */
void clock_set_source(clock_source_fn fn)
{
	clock_source_now = fn;
}
