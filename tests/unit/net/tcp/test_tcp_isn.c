// sources: net/tcp/tcp_isn.c arch/x86_64/entropy.c lib/log.c
/*
 * Initial sequence numbers (net/tcp/tcp_isn.c, RFC 6528) and the CPU entropy behind
 * them (arch/x86_64/entropy.c): SipHash-2-4 against the reference vector, ISNs that
 * differ per 4-tuple and per key yet advance with the 4 us clock, and two entropy reads
 * that differ.
 */
#include <criterion/criterion.h>
#include <string.h>
#include "arch/entropy.h"
#include "lib/clock.h"
#include "net/tcp/tcp_internal.h"
#include "lib/log.h"
#include "tests/unit/unit_support.h"

LOG_MODULE_DEFINE(tcp); /* tcp.c, which defines it, is not linked */

Test(tcp_isn, siphash_reference_vector)
{
	/* The SipHash paper's appendix A: key 00..0f, message 00..0e. */
	uint8_t kb[16], m[15];
	uint64_t k[2];
	for (int i = 0; i < 16; i++)
		kb[i] = (uint8_t)i;
	for (int i = 0; i < 15; i++)
		m[i] = (uint8_t)i;
	memcpy(k, kb, 16);
	cr_assert_eq(tcp_siphash(k, m, sizeof(m)), 0xa129ca6149be45e5ull);
}

Test(tcp_isn, per_tuple_and_clock)
{
	fake_clock_install();
	fake_clock_set(1000 * NSEC_PER_SEC);
	tcp_isn_init();
	uint32_t a = tcp_new_iss(0x0a0a000a, 0x0a0a0001, 4420, 40000);
	uint32_t b = tcp_new_iss(0x0a0a000a, 0x0a0a0001, 4420, 40001);
	uint32_t c = tcp_new_iss(0x0a0a000a, 0x0a0a0002, 4420, 40000);
	cr_assert_neq(a, b, "another port, another offset");
	cr_assert_neq(a, c);
	/* The offset of b over a is not the port difference plus a counter (as a clock-based
	 * ISN with a connection counter would give). */
	cr_assert_gt((uint32_t)(b - a), 1000000u);
	fake_clock_advance(4000 * 250);
	cr_assert_eq(tcp_new_iss(0x0a0a000a, 0x0a0a0001, 4420, 40000), a + 250, "M: one per 4 us");
	tcp_isn_init();
	fake_clock_set(1000 * NSEC_PER_SEC);
	cr_assert_neq(tcp_new_iss(0x0a0a000a, 0x0a0a0001, 4420, 40000), a, "a new key, another ISN");
	uint32_t r1 = tcp_random_u32(), r2 = tcp_random_u32();
	cr_assert_neq(r1, r2);
}

Test(tcp_isn, entropy_reads_differ)
{
	uint64_t x[2], y[2];
	enum arch_entropy_source s = arch_entropy(x, sizeof(x));
	arch_entropy(y, sizeof(y));
	cr_assert(memcmp(x, y, sizeof(x)) != 0, "two reads from %s differ", arch_entropy_source_name(s));
	cr_assert(x[0] != 0 || x[1] != 0);
}
