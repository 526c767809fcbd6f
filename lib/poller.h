/*
 * poller.h - work run by the poll loop, and boot-time initialisers.
 *
 * The appliance runs one run-to-completion loop: every pass calls each registered
 * poller with a budget; a poller returns >0 when it made progress, 0 when idle, and a
 * negative errno on a fatal error (the loop logs it and stops calling that poller).
 * Initialisers run once at boot in level order (INIT_LEVEL_*), before the loop starts.
 */
#ifndef LIB_POLLER_H
#define LIB_POLLER_H

#include <stdbool.h>
#include <stdint.h>
#include "linker_set.h"

struct poller_stats {
	uint64_t calls;
	uint64_t busy;      /* calls that made progress */
	uint64_t work;      /* sum of the progress values */
	uint64_t ns;        /* time spent in busy calls */
	int failed;         /* the poller returned an error and is stopped */
};

struct poller {
	const char *name;
	int (*poll)(unsigned budget);
	struct poller_stats *stats;
	/* Optional wake-up source. arm(true), before the loop halts the CPU while idle: make
	 * new work raise a device interrupt (arch/irq.h) that ends the halt, and return 0; or
	 * return a negative errno when it cannot (no interrupt: the halt stays bounded by
	 * loop.halt_us). The loop polls once more after arming, so arm may clear a pending
	 * cause. arm(false), when the loop goes over to polling under load: mask the
	 * interrupt (work then waits for the end of a halt, in batches). NULL: a poller
	 * without interrupts. */
	int (*arm)(bool on);
};
LINKER_SET_DECLARE(pollers, struct poller);

/* The clock as the loop's current pass last read it: at the start of the pass and again after
 * each poller that did work (core/loop.c sets it). Pollers whose deadlines are coarse (link
 * checks, protocol timers, the console's fallback read) take poller_now_ns() instead of reading
 * the clock themselves; it is behind the true time by at most the idle pollers run since that
 * reading. Under emulation every clock read is a call into the emulator, and an idle pass used
 * to make ~20 of them. */
extern uint64_t poller_pass_now_ns;

static inline uint64_t poller_now_ns(void)
{
	return poller_pass_now_ns;
}

#define POLLER(id, fn)                                                                  \
	static struct poller_stats poller_stats_##id;                                   \
	LINKER_SET_ENTRY(pollers, struct poller, poller_##id) = { #id, fn, &poller_stats_##id, NULL }

/* A poller whose device can wake the CPU: arm_fn as struct poller's arm. */
#define POLLER_WAKE(id, fn, arm_fn)                                                     \
	static struct poller_stats poller_stats_##id;                                   \
	LINKER_SET_ENTRY(pollers, struct poller, poller_##id) = { #id, fn, &poller_stats_##id, arm_fn }

enum init_level {
	INIT_LEVEL_EARLY = 0,   /* lib/ and mm/ services */
	INIT_LEVEL_BUS = 1,     /* pci/ enumeration */
	INIT_LEVEL_DRIVER = 2,  /* device drivers */
	INIT_LEVEL_NET = 3,     /* protocol stacks */
	INIT_LEVEL_SERVICE = 4, /* targets and services */
	INIT_LEVEL_LATE = 5,
	INIT_LEVEL_COUNT
};

struct initcall {
	const char *name;
	int level;
	int (*fn)(void);
};
LINKER_SET_DECLARE(initcalls, struct initcall);

#define INITCALL(id, lvl, f)                                                            \
	LINKER_SET_ENTRY(initcalls, struct initcall, initcall_##id) = { #id, lvl, f }

#endif
