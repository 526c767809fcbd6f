// sources: lib/string_fast.c
/*
 * memcpy/memmove/memset of the image, both engines, every small size and alignment,
 * overlaps both ways, compared against a byte-by-byte reference.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include "lib/clock.h"
#include "lib/string_fast.h"
#include "tests/unit/unit_support.h"

#define BUF 600

static void fill(unsigned char *b, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		b[i] = (unsigned char)(seed * 131 + i * 7 + (i >> 8));
}

static void ref_memmove(unsigned char *d, const unsigned char *s, size_t n)
{
	unsigned char tmp[BUF];
	for (size_t i = 0; i < n; i++)
		tmp[i] = s[i];
	for (size_t i = 0; i < n; i++)
		d[i] = tmp[i];
}

static void check_engine(enum string_copy_mode mode)
{
	static unsigned char a[BUF], b[BUF], ra[BUF], rb[BUF];
	string_set_copy_mode(mode);
	for (size_t n = 0; n <= 300; n += (n < 70 ? 1 : 13)) {
		for (size_t so = 0; so < 9; so++) {
			for (size_t doff = 0; doff < 9; doff++) {
				fill(a, BUF, (unsigned)(n + so));
				fill(b, BUF, (unsigned)(n + doff + 1));
				memcpy(ra, a, BUF);
				memcpy(rb, b, BUF);
				cr_assert_eq(lib_memcpy(b + doff, a + so, n), b + doff);
				ref_memmove(rb + doff, ra + so, n);
				cr_assert_arr_eq(b, rb, BUF, "memcpy n=%zu so=%zu do=%zu", n, so, doff);
				/* overlapping moves in both directions inside one buffer */
				memcpy(a, ra, BUF);
				lib_memmove(a + doff, a + so, n);
				ref_memmove(ra + doff, ra + so, n);
				cr_assert_arr_eq(a, ra, BUF, "memmove n=%zu from %zu to %zu", n, so, doff);
				lib_memset(b + so, (int)(n & 0xff) | 0x100, n);
				for (size_t i = 0; i < n; i++)
					rb[so + i] = (unsigned char)n; /* b == rb before: compare all */
				cr_assert_arr_eq(b, rb, BUF, "memset n=%zu off=%zu", n, so);
			}
		}
	}
}

Test(string_fast, words_engine_matches_reference)
{
	check_engine(STRING_COPY_WORDS);
}

Test(string_fast, rep_movsb_engine_matches_reference)
{
	check_engine(STRING_COPY_CPU);
	string_set_copy_mode(STRING_COPY_WORDS);
}

Test(string_fast, memmove_overlap_large)
{
	unsigned char *buf = malloc(70000), *ref = malloc(70000);
	fill(buf, 70000, 3);
	memcpy(ref, buf, 70000);
	lib_memmove(buf + 1, buf, 65536);
	memmove(ref + 1, ref, 65536);
	cr_assert_arr_eq(buf, ref, 70000);
	lib_memmove(buf, buf + 4095, 65536);
	memmove(ref, ref + 4095, 65536);
	cr_assert_arr_eq(buf, ref, 70000);
	free(buf);
	free(ref);
}

static uint64_t ticking_now;
static uint64_t ticking_clock(void)
{
	return ticking_now += 7;
}

Test(string_fast, calibrate_picks_an_engine_and_reports_times)
{
	uint64_t ns[2] = { 0, 0 };
	unsigned char *scratch = malloc(8192);
	fill(scratch, 8192, 1);
	clock_set_source(ticking_clock);
	enum string_copy_mode m = string_calibrate(scratch, 4096, ns);
	cr_assert(m == STRING_COPY_WORDS || m == STRING_COPY_CPU);
	cr_assert_eq(string_copy_mode(), m);
	cr_assert_gt(ns[0], 0);
	cr_assert_gt(ns[1], 0);
	cr_assert_eq(m == STRING_COPY_CPU, ns[1] < ns[0], "the faster engine wins");
	cr_assert_str_eq(string_copy_mode_name(STRING_COPY_WORDS), "8-byte-loop");
	string_set_copy_mode(STRING_COPY_WORDS);
	free(scratch);
}
