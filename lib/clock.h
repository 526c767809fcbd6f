/*
 * clock.h - the appliance's monotonic clock in nanoseconds since boot.
 *
 * lib/ depends on nothing, so the time source is injected: arch/ registers the
 * calibrated TSC at boot, host tests register a fake clock they advance by hand.
 */
#ifndef LIB_CLOCK_H
#define LIB_CLOCK_H

#include <stdint.h>

#define NSEC_PER_USEC 1000ull
#define NSEC_PER_MSEC 1000000ull
#define NSEC_PER_SEC 1000000000ull

typedef uint64_t (*clock_source_fn)(void);

/* Install the function that returns monotonic nanoseconds (NULL: time stands at 0). */
void clock_set_source(clock_source_fn fn);

/* The installed source (clock.c); NULL until one is. */
extern clock_source_fn clock_source_now;

/* Monotonic nanoseconds since the source's epoch (boot); 0 until a source is installed.
 * Inline: the data path asks a dozen times per I/O. */
static inline uint64_t clock_now_ns(void)
{
	return clock_source_now ? clock_source_now() : 0;
}

#endif
