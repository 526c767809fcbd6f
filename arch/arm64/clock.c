/*
 * clock.c - the generic timer's virtual count as the appliance's clock.
 *
 * CNTFRQ_EL0 holds the count's frequency, set by the firmware (ARM ARM D11.1.2): nothing
 * to calibrate. Nanoseconds are derived with a 32.32 fixed-point multiplier, so reading
 * the clock never divides.
 */
#include <errno.h>
#include <stdint.h>
#include "../../lib/clock.h"
#include "../cpu_ops.h"
#include "arch.h"

static uint64_t counter_hz;
static uint64_t counter_epoch;
static uint64_t ns_mult;      /* ns per tick, 32.32 fixed point */
static uint64_t counter_mult; /* ticks per ns, 32.32 fixed point */

static uint64_t counter_clock_ns(void)
{
	uint64_t ticks = arch_counter_read() - counter_epoch;
	return (uint64_t)(((unsigned __int128)ticks * ns_mult) >> 32);
}

/* Install the clock. */
int arch_clock_init(uint64_t epoch)
{
	counter_hz = ARCH_READ_SYSREG(cntfrq_el0) & 0xffffffffu;
	if (!counter_hz)
		return -EIO;
	counter_epoch = epoch;
	ns_mult = (uint64_t)((NSEC_PER_SEC << 32) / counter_hz);
	counter_mult = (uint64_t)(((unsigned __int128)counter_hz << 32) / NSEC_PER_SEC);
	clock_set_source(counter_clock_ns);
	return 0;
}

/* Counter frequency. */
uint64_t arch_counter_hz(void)
{
	return counter_hz;
}

/* The count for a clock reading. */
uint64_t arch_ns_to_counter(uint64_t ns)
{
	return counter_epoch + (uint64_t)(((unsigned __int128)ns * counter_mult) >> 32);
}

/* Frequency source. */
const char *arch_clock_reference(void)
{
	return "CNTFRQ_EL0";
}
