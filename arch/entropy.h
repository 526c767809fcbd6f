/*
 * entropy.h - unpredictable bits from the CPU, for secrets (TCP's ISN key, RFC 6528).
 * Each architecture's entropy.c implements arch_entropy(); entropy_jitter.c is the
 * fallback both share.
 */
#ifndef ARCH_ENTROPY_H
#define ARCH_ENTROPY_H

#include <stddef.h>
#include <stdint.h>

enum arch_entropy_source {
	ARCH_ENTROPY_SEED = 0,    /* the CPU's conditioned entropy source (x86 RDSEED, arm64 RNDRRS) */
	ARCH_ENTROPY_DRBG = 1,    /* its DRBG (x86 RDRAND, arm64 RNDR) */
	ARCH_ENTROPY_JITTER = 2,  /* neither, or both failing: counter jitter around timed work */
};

/* Fill buf with len bytes of entropy from the best source the CPU has (seed, DRBG, else
 * counter jitter, each read retried a bounded number of times). Returns the source used. */
enum arch_entropy_source arch_entropy(void *buf, size_t len);

/* The source's instruction name ("rdseed", "rndr", ...) or "...-jitter". */
const char *arch_entropy_source_name(enum arch_entropy_source s);

/* One word of cycle-counter jitter (entropy_jitter.c). */
uint64_t arch_entropy_jitter64(void);

#endif
