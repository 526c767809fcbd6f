// sources: lib/ipv4_text.c
/*
 * Dotted-quad parsing: good addresses, and every malformed shape refused.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include "lib/ipv4_text.h"

Test(ipv4_text, good)
{
	uint32_t a;
	cr_assert_eq(ipv4_parse("10.10.0.10", &a), 0);
	cr_assert_eq(a, 0x0a0a000au);
	cr_assert_eq(ipv4_parse("0.0.0.0", &a), 0);
	cr_assert_eq(a, 0);
	cr_assert_eq(ipv4_parse("255.255.255.255", &a), 0);
	cr_assert_eq(a, 0xffffffffu);
	cr_assert_eq(ipv4_parse("010.1.1.1", &a), 0, "leading zeros are decimal");
	cr_assert_eq(a >> 24, 10);
}

Test(ipv4_text, bad)
{
	static const char *const bad[] = { "", "1.2.3", "1.2.3.4.5", "1.2.3.256", "1..3.4", "1.2.3.4 ", " 1.2.3.4",
					   "1.2.3.0004", "a.b.c.d", "1.2.3.-4", "1.2.3.4x", "1,2,3,4" };
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		uint32_t a = 0x12345678;
		cr_assert_eq(ipv4_parse(bad[i], &a), -EINVAL, "'%s' accepted", bad[i]);
		cr_assert_eq(a, 0x12345678, "nothing written on error");
	}
}
