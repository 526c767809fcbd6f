/*
 * entropy.h - unpredictable bits from the CPU, for secrets (TCP's ISN key, RFC 6528).
 */
#ifndef ARCH_X86_64_ENTROPY_H
#define ARCH_X86_64_ENTROPY_H

#include <stddef.h>

enum arch_entropy_source {
	ARCH_ENTROPY_RDSEED = 0,  /* the CPU's conditioned entropy source (CPUID.7.0:EBX[18]) */
	ARCH_ENTROPY_RDRAND = 1,  /* its DRBG (CPUID.1:ECX[30]) */
	ARCH_ENTROPY_JITTER = 2,  /* neither, or both failing: TSC jitter around timed work */
};

/* Fill buf with len bytes of entropy from the best source the CPU has (RDSEED, RDRAND,
 * else TSC jitter, each read retried a bounded number of times). Returns the source used. */
enum arch_entropy_source arch_entropy(void *buf, size_t len);

/* "rdseed", "rdrand" or "tsc-jitter". */
const char *arch_entropy_source_name(enum arch_entropy_source s);

#endif
