/*
 * entropy.h - unpredictable bits from the CPU, for secrets (TCP's ISN key, RFC 6528).
 * Each architecture implements arch_entropy() in its folder (x86_64/entropy.c); host
 * tests link tests/unit/net/fake_entropy.c instead.
 */
#ifndef ARCH_ENTROPY_H
#define ARCH_ENTROPY_H

#include <stddef.h>

enum arch_entropy_source {
	ARCH_ENTROPY_SEED = 0,    /* the CPU's conditioned entropy source (x86_64 RDSEED) */
	ARCH_ENTROPY_DRBG = 1,    /* its random bit generator (x86_64 RDRAND) */
	ARCH_ENTROPY_JITTER = 2,  /* neither, or both failing: cycle-counter jitter around timed work */
};

/* Fill buf with len bytes of entropy from the best source the CPU has (x86_64: RDSEED,
 * RDRAND, else TSC jitter, each read retried a bounded number of times). Returns the
 * source used. */
enum arch_entropy_source arch_entropy(void *buf, size_t len);

/* The name of a source for the log ("rdseed", "rdrand", "tsc-jitter" on x86_64). */
const char *arch_entropy_source_name(enum arch_entropy_source s);

#endif
