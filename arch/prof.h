/*
 * prof.h - the sampling profiler's ring: a periodic timer interrupt records the program
 * counter it interrupted, the console's `prof` command (core/prof_command.c) shows where
 * the time went. The architecture owns the timer (x86_64: the LAPIC timer, lapic.c; an
 * architecture without one returns -ENOTSUP from arch_prof_start) and its interrupt stub
 * writes the ring; this header is the layout both sides share, the assembly stub
 * included (isr.S: the ARCH_PROF_OFF_* offsets, checked against the struct in lapic.c).
 * The ring itself is the caller's (the console command allocates it at `prof start` and
 * frees it at `prof stop`), so an image that never profiles carries no sample storage.
 *
 * While sampling the CPU runs with interrupts enabled and an idle halt is woken by every
 * sample: `prof` itself changes the idle behaviour it measures by at most one wake-up per
 * sample period.
 */
#ifndef ARCH_PROF_H
#define ARCH_PROF_H

#define ARCH_PROF_RING 16384u         /* samples kept (a power of two): the last ones win */
#define ARCH_PROF_HZ_MIN 10u
#define ARCH_PROF_HZ_MAX 20000u

#define ARCH_PROF_OFF_ON 0            /* offsets of struct arch_prof, for the stubs */
#define ARCH_PROF_OFF_HEAD 8
#define ARCH_PROF_OFF_PERIOD 16
#define ARCH_PROF_OFF_RING 24

#ifndef __ASSEMBLER__
#include <stdint.h>

/* One CPU's profiler. The interrupt stub writes ring[head % ARCH_PROF_RING] and bumps head. */
struct arch_prof {
	uint32_t on;                  /* the stub records while non-zero */
	uint32_t hz;                  /* samples per second asked for */
	uint64_t head;                /* samples recorded since the last start */
	uint64_t period;              /* TSC-deadline style timers: counter ticks to the next sample, else 0 */
	uint64_t *ring;               /* ARCH_PROF_RING interrupted program counters (the caller's) */
	uint64_t start_ns, stop_ns;   /* clock at start and at stop (0 while running) */
};

/* The profiler of the (one) CPU. */
extern struct arch_prof arch_prof __attribute__((visibility("hidden")));

/* Start sampling at hz (ARCH_PROF_HZ_MIN..MAX) from now on into ring (ARCH_PROF_RING
 * entries, the caller's until arch_prof_stop returns): the timer interrupts periodically
 * and interrupts stay enabled until arch_prof_stop. 0, -EINVAL, -EBUSY (already
 * sampling), -ENODEV (no timer set up) or -ENOTSUP (not on this architecture yet). */
int arch_prof_start(unsigned hz, uint64_t *ring);

/* Stop sampling (interrupts disabled again, the timer back to idle wake-ups only). From
 * its return the stub writes the ring no more: the caller may read and free it. */
void arch_prof_stop(void);

#endif
#endif
