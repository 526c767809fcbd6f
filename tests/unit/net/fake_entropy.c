/*
 * fake_entropy.c - arch_entropy() for host tests and fuzzers, linked instead of
 * arch/x86_64/entropy.c: a fixed byte pattern, so that sequence numbers (and so a
 * fuzzer's mutated ACK numbers) are the same in every run.
 */
#include <stdint.h>
#include "arch/entropy.h"

enum arch_entropy_source arch_entropy(void *buf, size_t len)
{
	uint8_t *o = buf;
	for (size_t i = 0; i < len; i++)
		o[i] = (uint8_t)(0x5a + 17 * i);
	return ARCH_ENTROPY_JITTER;
}

const char *arch_entropy_source_name(enum arch_entropy_source s)
{
	(void)s;
	return "fake";
}
