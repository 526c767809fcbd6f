// sources: core/config.c
/*
 * Settings file: good lines, comments, quoting, every error with its line number,
 * bounds (the declared keys: test_config_keys.c).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "core/config.h"

static struct config cfg;
static char errors[2048];

static void collect(void *ctx, unsigned line, const char *msg)
{
	(void)ctx;
	size_t n = strlen(errors);
	snprintf(errors + n, sizeof(errors) - n, "%u:%s;", line, msg);
}

static unsigned parse(const char *text)
{
	errors[0] = '\0';
	return config_parse(&cfg, text, strlen(text), collect, NULL);
}

Test(config, good_lines)
{
	cr_assert_eq(parse("# comment\n\npanic = exit\n  log.nvme=debug  \r\nname = \"a b # c\"\nempty =\n"), 0);
	cr_assert_eq(cfg.n, 4);
	cr_assert_str_eq(config_get(&cfg, "panic"), "exit");
	cr_assert_str_eq(config_get(&cfg, "log.nvme"), "debug", "spaces and CR trimmed");
	cr_assert_str_eq(config_get(&cfg, "name"), "a b # c", "quotes removed, inner text kept");
	cr_assert_str_eq(config_get(&cfg, "empty"), "");
	cr_assert_null(config_get(&cfg, "missing"));
}

Test(config, errors_name_their_line_and_the_rest_still_loads)
{
	const char *text = "a = 1\nno equals here\nBad = 2\n= 3\nq = \"open\nb = 2\n";
	cr_assert_eq(parse(text), 4);
	cr_assert_str_eq(errors, "2:expected 'key = value';3:key may only hold a-z 0-9 _ . -;4:empty key;5:unterminated quote;");
	cr_assert_str_eq(config_get(&cfg, "a"), "1");
	cr_assert_str_eq(config_get(&cfg, "b"), "2");
}

Test(config, repeated_key_later_wins_with_a_warning)
{
	cr_assert_eq(parse("k = 1\nk = 2\n"), 0);
	cr_assert_str_eq(config_get(&cfg, "k"), "2");
	cr_assert_eq(cfg.n, 1);
	cr_assert_str_eq(errors, "2:key repeated: the later value wins;");
}

Test(config, bounds)
{
	static char text[CONFIG_MAX_ENTRIES * 16 + 4096];
	size_t n = 0;
	for (int i = 0; i < CONFIG_MAX_ENTRIES + 1; i++)
		n += (size_t)sprintf(text + n, "k%d = %d\n", i, i);
	cr_assert_eq(parse(text), 1);
	cr_assert_eq(cfg.n, CONFIG_MAX_ENTRIES);
	char longkey[CONFIG_KEY_MAX + 8];
	memset(longkey, 'k', sizeof(longkey));
	sprintf(longkey + CONFIG_KEY_MAX, " = 1\n");
	cr_assert_eq(parse(longkey), 1);
	static char longval[CONFIG_VALUE_MAX + 16] = "v = ";
	memset(longval + 4, 'x', CONFIG_VALUE_MAX);
	cr_assert_eq(parse(longval), 1);
	cr_assert_str_eq(errors, "1:value too long;");
	/* a NUL inside the text is an error for its line, not the end of the file */
	cr_assert_eq(config_parse(&cfg, "a = 1\nb\0 = 2\nc = 3\n", 19, collect, NULL), 1);
	cr_assert_str_eq(config_get(&cfg, "c"), "3");
}
