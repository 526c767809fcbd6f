/*
 * tcp_isn.c - initial sequence numbers (RFC 6528) and the stack's other unpredictable
 * numbers, from one per-boot secret.
 *
 * ISN = M + F(local address, local port, remote address, remote port, key) where M is a
 * 4 microsecond clock and F is SipHash-2-4 (Aumasson and Bernstein, 2012) keyed with 128
 * bits from the CPU (arch_entropy: the CPU's seed or DRBG instruction, else counter jitter). An off-path attacker
 * who does not know the key cannot predict the ISN of a connection, nor learn it from
 * the ISNs of its own connections (RFC 6528 section 3). tcp_random_u32() gives the
 * per-socket randomised limits (challenge ACKs, RFC 5961 section 7) from the same key
 * and a counter.
 */
#include <string.h>
#include "../../arch/entropy.h"
#include "../../lib/byteorder.h"
#include "../../lib/clock.h"
#include "../../lib/log.h"
#include "tcp_internal.h"

LOG_MODULE_USE(tcp);

static uint64_t isn_key[2];
static uint64_t rand_counter;

#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))

static void sip_round(uint64_t v[4])
{
	v[0] += v[1];
	v[1] = ROTL(v[1], 13);
	v[1] ^= v[0];
	v[0] = ROTL(v[0], 32);
	v[2] += v[3];
	v[3] = ROTL(v[3], 16);
	v[3] ^= v[2];
	v[0] += v[3];
	v[3] = ROTL(v[3], 21);
	v[3] ^= v[0];
	v[2] += v[1];
	v[1] = ROTL(v[1], 17);
	v[1] ^= v[2];
	v[2] = ROTL(v[2], 32);
}

/* SipHash-2-4 of len bytes at m under the 128-bit key k (k[0]: bytes 0-7, little-endian). */
uint64_t tcp_siphash(const uint64_t k[2], const void *m, size_t len)
{
	const uint8_t *p = m;
	uint64_t v[4] = { k[0] ^ 0x736f6d6570736575ull, k[1] ^ 0x646f72616e646f6dull, k[0] ^ 0x6c7967656e657261ull,
			  k[1] ^ 0x7465646279746573ull };
	uint64_t b = (uint64_t)len << 56;
	size_t i;

	for (i = 0; len - i >= 8; i += 8) {
		uint64_t w = le64_load(p + i);
		v[3] ^= w;
		sip_round(v);
		sip_round(v);
		v[0] ^= w;
	}
	for (size_t j = 0; i + j < len; j++)
		b |= (uint64_t)p[i + j] << (8 * j);
	v[3] ^= b;
	sip_round(v);
	sip_round(v);
	v[0] ^= b;
	v[2] ^= 0xff;
	for (int r = 0; r < 4; r++)
		sip_round(v);
	return v[0] ^ v[1] ^ v[2] ^ v[3];
}

/* Draw the per-boot key (at tcp_init). */
void tcp_isn_init(void)
{
	enum arch_entropy_source src = arch_entropy(isn_key, sizeof(isn_key));
	rand_counter = 0;
	log_info("TCP sequence number key from %s", arch_entropy_source_name(src));
}

uint32_t tcp_new_iss(uint32_t laddr, uint32_t raddr, uint16_t lport, uint16_t rport)
{
	uint8_t m[12];
	memcpy(m, &laddr, 4);
	memcpy(m + 4, &raddr, 4);
	memcpy(m + 8, &lport, 2);
	memcpy(m + 10, &rport, 2);
	return (uint32_t)tcp_siphash(isn_key, m, sizeof(m)) + (uint32_t)(clock_now_ns() / 4000);
}

uint32_t tcp_random_u32(void)
{
	uint64_t c = ++rand_counter;
	return (uint32_t)(tcp_siphash(isn_key, &c, sizeof(c)) >> 16);
}
