/*
 * prof.c - the sampling profiler (../prof.h) on arm64: not yet. The generic timer's
 * virtual timer (gic.c's idle wake-up) in periodic use, recording ELR_EL1 from its
 * interrupt, is how it will come; until then `prof start` says so.
 */
#include <errno.h>
#include "../prof.h"

struct arch_prof arch_prof;

/* Not on arm64 yet. */
int arch_prof_start(unsigned hz, uint64_t *ring)
{
	(void)hz;
	(void)ring;
	return -ENOTSUP;
}

/* Nothing runs. */
void arch_prof_stop(void)
{
}
