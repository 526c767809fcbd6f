/*
 * entropy.c - CPU entropy for secrets on x86_64 (see arch/entropy.h).
 *
 * RDSEED and RDRAND set CF when they deliver a value; Intel's guidance is to retry a
 * few times (RDRAND 10 times) before calling the source failed. Without either (QEMU's
 * default qemu64 model has neither), the fallback samples the TSC around a short loop
 * whose length depends on the previous sample: the low bits of each delta vary with
 * caches, interrupts and emulation, and 64 deltas are folded into each word. Weak but
 * not predictable from off the wire, which is what the ISN key needs.
 */
#include <stdint.h>
#include <string.h>
#include "cpu.h"
#include "../entropy.h"

#define RETRIES 10

static int has_rdseed(void)
{
	uint32_t r[4];
	cpuid(0, 0, r);
	if (r[0] < 7)
		return 0;
	cpuid(7, 0, r);
	return (r[1] >> 18) & 1;
}

static int has_rdrand(void)
{
	uint32_t r[4];
	cpuid(1, 0, r);
	return (r[2] >> 30) & 1;
}

static int rdseed64(uint64_t *v)
{
	for (int i = 0; i < RETRIES; i++) {
		uint8_t ok;
		__asm__ volatile("rdseed %0; setc %1" : "=r"(*v), "=qm"(ok) : : "cc");
		if (ok)
			return 0;
		cpu_relax();
	}
	return -1;
}

static int rdrand64(uint64_t *v)
{
	for (int i = 0; i < RETRIES; i++) {
		uint8_t ok;
		__asm__ volatile("rdrand %0; setc %1" : "=r"(*v), "=qm"(ok) : : "cc");
		if (ok)
			return 0;
	}
	return -1;
}

/* 64 TSC deltas around data-dependent work, mixed (xorshift-multiply) into one word. */
static uint64_t jitter64(void)
{
	uint64_t acc = rdtsc(), prev = acc;
	volatile uint64_t sink = 0;
	for (int i = 0; i < 64; i++) {
		unsigned spin = 16 + (unsigned)(prev & 63);
		for (unsigned k = 0; k < spin; k++)
			sink += k ^ prev;
		uint64_t t = rdtsc();
		acc ^= t - prev;
		acc *= 0x9e3779b97f4a7c15ull;
		acc ^= acc >> 29;
		prev = t;
	}
	return acc ^ sink;
}

enum arch_entropy_source arch_entropy(void *buf, size_t len)
{
	enum arch_entropy_source src = has_rdseed() ? ARCH_ENTROPY_SEED
				     : has_rdrand() ? ARCH_ENTROPY_DRBG : ARCH_ENTROPY_JITTER;
	uint8_t *o = buf;

	while (len) {
		uint64_t v;
		size_t n = len < sizeof(v) ? len : sizeof(v);
		if (src == ARCH_ENTROPY_SEED && rdseed64(&v))
			src = has_rdrand() ? ARCH_ENTROPY_DRBG : ARCH_ENTROPY_JITTER;
		if (src == ARCH_ENTROPY_DRBG && rdrand64(&v))
			src = ARCH_ENTROPY_JITTER;
		if (src == ARCH_ENTROPY_JITTER)
			v = jitter64();
		memcpy(o, &v, n);
		o += n;
		len -= n;
	}
	return src;
}

const char *arch_entropy_source_name(enum arch_entropy_source s)
{
	switch (s) {
	case ARCH_ENTROPY_SEED:
		return "rdseed";
	case ARCH_ENTROPY_DRBG:
		return "rdrand";
	default:
		return "tsc-jitter";
	}
}
