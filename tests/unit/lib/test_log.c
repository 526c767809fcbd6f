// sources: lib/log.c
/*
 * Logging: per-module levels through the linker set, level names, the sink, the ring
 * buffer (oldest first, newest kept when short), truncation.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>
#include "lib/log.h"
#include "tests/unit/unit_support.h"

LOG_MODULE_DEFINE(unit_a);

static char sunk[4096];
static void sink(const char *text, size_t len)
{
	size_t n = strlen(sunk);
	if (n + len < sizeof(sunk)) {
		memcpy(sunk + n, text, len);
		sunk[n + len] = '\0';
	}
}

static void setup(void)
{
	sunk[0] = '\0';
	fake_clock_install();
	log_set_sink(sink);
	log_set_level("all", LOG_INFO);
}

TestSuite(log, .init = setup);

Test(log, levels_filter_per_module)
{
	fake_clock_set(1234567000ull);
	log_info("hello %d", 42);
	cr_assert_str_eq(sunk, "[    1.234567] unit_a: hello 42\n");
	sunk[0] = '\0';
	log_debug("hidden");
	cr_assert_str_eq(sunk, "", "debug is below the default level");
	cr_assert_eq(log_set_level("unit_a", LOG_DEBUG), 0);
	log_debug("shown");
	cr_assert_not_null(strstr(sunk, "unit_a: shown"));
	cr_assert_eq(log_set_level("nope", LOG_DEBUG), -ENOENT);
	log_err("bad %s", "thing");
	cr_assert_not_null(strstr(sunk, "ERROR unit_a: bad thing\n"));
}

Test(log, level_names_round_trip)
{
	for (int l = LOG_ERR; l <= LOG_DEBUG; l++)
		cr_assert_eq(log_parse_level(log_level_name(l)), l);
	cr_assert_eq(log_parse_level("verbose"), -EINVAL);
	cr_assert_str_eq(log_level_name(9), "?");
}

Test(log, ring_keeps_the_newest_and_long_lines_are_cut)
{
	char big[400], out[64];
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	log_info("%s", big);
	cr_assert_lt(strlen(sunk), 300, "a line is bounded");
	cr_assert_eq(sunk[strlen(sunk) - 1], '\n', "a cut line still ends the line");
	log_info("last line");
	size_t n = log_ring_read(out, sizeof(out) - 1);
	out[n] = '\0';
	cr_assert_eq(n, sizeof(out) - 1);
	cr_assert_not_null(strstr(out, "unit_a: last line\n"), "the newest bytes are kept: %s", out);
	unsigned long before = log_count(LOG_INFO);
	log_info("count me");
	cr_assert_eq(log_count(LOG_INFO), before + 1);
}
