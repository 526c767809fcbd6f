/*
 * fake_auth_entropy.c - arch_entropy() for the authentication tests: a byte stream that
 * gen_auth_vectors.py replays (byte k = 73 k + 41 + 7 (k >> 8), mod 256), so the controller's
 * S1, DH exponent and C1 are known to the known-answer vectors, and two draws differ.
 */
#include <stdint.h>
#include "arch/entropy.h"
#include "fake_auth_entropy.h"

static uint64_t k;

void fake_auth_entropy_reset(void)
{
	k = 0;
}

enum arch_entropy_source arch_entropy(void *buf, size_t len)
{
	uint8_t *o = buf;
	for (size_t i = 0; i < len; i++, k++)
		o[i] = (uint8_t)(73 * k + 41 + 7 * (k >> 8));
	return ARCH_ENTROPY_JITTER;
}

const char *arch_entropy_source_name(enum arch_entropy_source s)
{
	(void)s;
	return "fake-stream";
}
