// sources: core/cmdline.c
/*
 * Console argument splitting: blanks, quotes, escapes, limits, errors.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>
#include "core/cmdline.h"

static int split(const char *text, char *buf, char **argv, int max)
{
	strcpy(buf, text);
	return cmdline_split(buf, argv, max);
}

Test(cmdline, words_and_blanks)
{
	char buf[128], *argv[8];
	cr_assert_eq(split("  nvme   read\t0  8 ", buf, argv, 8), 4);
	cr_assert_str_eq(argv[0], "nvme");
	cr_assert_str_eq(argv[1], "read");
	cr_assert_str_eq(argv[2], "0");
	cr_assert_str_eq(argv[3], "8");
	cr_assert_null(argv[4]);
	cr_assert_eq(split("", buf, argv, 8), 0);
	cr_assert_eq(split("   \t ", buf, argv, 8), 0);
	cr_assert_null(argv[0]);
}

Test(cmdline, quotes_and_escapes)
{
	char buf[128], *argv[8];
	cr_assert_eq(split("echo \"a b\" 'c \"d\"' e\\ f \"x\\\"y\" ''", buf, argv, 8), 6);
	cr_assert_str_eq(argv[1], "a b");
	cr_assert_str_eq(argv[2], "c \"d\"");
	cr_assert_str_eq(argv[3], "e f");
	cr_assert_str_eq(argv[4], "x\"y");
	cr_assert_str_eq(argv[5], "", "an empty quoted argument is an argument");
	cr_assert_eq(split("a\"b c\"d", buf, argv, 8), 1);
	cr_assert_str_eq(argv[0], "ab cd");
	cr_assert_eq(split("'a\\b'", buf, argv, 8), 1);
	cr_assert_str_eq(argv[0], "a\\b", "no escapes inside single quotes");
}

Test(cmdline, errors)
{
	char buf[128], *argv[4];
	cr_assert_eq(split("a \"b", buf, argv, 4), -EINVAL);
	cr_assert_eq(split("a 'b", buf, argv, 4), -EINVAL);
	cr_assert_eq(split("a b\\", buf, argv, 4), -EINVAL);
	cr_assert_eq(split("a b c", buf, argv, 4), 3);
	cr_assert_eq(split("a b c d", buf, argv, 4), -E2BIG, "argv needs room for NULL");
	cr_assert_eq(cmdline_split(buf, argv, 0), -E2BIG);
}
