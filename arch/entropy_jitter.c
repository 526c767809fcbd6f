/*
 * entropy_jitter.c - the entropy fallback of both architectures (see entropy.h): the cycle
 * counter sampled around a short loop whose length depends on the previous sample. The low
 * bits of each delta vary with caches, interrupts and emulation, and 64 deltas are folded
 * into each word. Weak but not predictable from off the wire, which is what the ISN key
 * needs.
 */
#include "cpu_ops.h"
#include "entropy.h"

/* 64 counter deltas around data-dependent work, mixed (xorshift-multiply) into one word. */
uint64_t arch_entropy_jitter64(void)
{
	uint64_t acc = arch_counter_read(), prev = acc;
	volatile uint64_t sink = 0;
	for (int i = 0; i < 64; i++) {
		unsigned spin = 16 + (unsigned)(prev & 63);
		for (unsigned k = 0; k < spin; k++)
			sink += k ^ prev;
		uint64_t t = arch_counter_read();
		acc ^= t - prev;
		acc *= 0x9e3779b97f4a7c15ull;
		acc ^= acc >> 29;
		prev = t;
	}
	return acc ^ sink;
}
