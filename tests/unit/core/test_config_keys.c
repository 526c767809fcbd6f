// sources: core/config.c core/config_keys.c core/config_command.c lib/ipv4_text.c
/*
 * Settings declared where they are used (lib/config_key.h): defaults stored, the file's
 * values checked against their declarations (unknown keys and bad values reported with
 * their line, nothing changed), origins recorded, run-time changes through `config KEY
 * VALUE` (boot-time keys refused, a failing apply rolled back), ".*" keys, and what the
 * `config` command prints.
 */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "core/config.h"
#include "lib/command.h"

enum test_color { TEST_RED = 0, TEST_GREEN = 5, TEST_BLUE = 9 };

static bool t_flag;
static unsigned t_count;
static enum test_color t_color;
static uint32_t t_addr, t_gw;
static char t_custom[32];
static unsigned t_applied;
static int t_apply_rc;
static char t_modules[64];

static int t_apply(void)
{
	t_applied++;
	return t_apply_rc;
}

CONFIG_BOOL(t_flag, "t.flag", &t_flag, "on", NULL, "a boolean");
CONFIG_UINT(t_count, "t.count", &t_count, 2, 10, "4", t_apply, "a number");
static const struct config_choice t_colors[] = {
	{ "red", TEST_RED }, { "green", TEST_GREEN }, { "blue", TEST_BLUE }, { NULL, 0 } };
CONFIG_ENUM(t_color, "t.color", &t_color, t_colors, "green", CONFIG_RUNTIME, "a color");
CONFIG_IPV4(t_addr, "t.addr", &t_addr, "10.0.0.1", NULL, "an address");
CONFIG_IPV4(t_gw, "t.gw", &t_gw, "", NULL, "an optional address");

static int t_parse_custom(const struct config_key *k, const char *name, const char *text, char *why, size_t n)
{
	(void)k;
	if (strchr(text, '!')) {
		snprintf(why, n, "%s: no '!' please", name);
		return -EINVAL;
	}
	if (strlen(text) >= sizeof(t_custom))
		return -EINVAL;
	strcpy(t_custom, text);
	return 0;
}
CONFIG_CUSTOM(t_custom, "t.custom", t_parse_custom, "words without '!'", "x", NULL, "a custom key");

static int t_parse_module(const struct config_key *k, const char *name, const char *text, char *why, size_t n)
{
	(void)k;
	(void)why;
	(void)n;
	if (strcmp(text, "yes") != 0)
		return -EINVAL;
	size_t used = strlen(t_modules);
	snprintf(t_modules + used, sizeof(t_modules) - used, "%s;", name);
	return 0;
}
CONFIG_CUSTOM(t_mod, "t.mod.*", t_parse_module, "yes", "yes", CONFIG_RUNTIME, "per-module key");

static struct config cfg;
static char errors[2048];

static void collect(void *ctx, unsigned line, const char *msg)
{
	(void)ctx;
	size_t n = strlen(errors);
	snprintf(errors + n, sizeof(errors) - n, "%u:%s;", line, msg);
}

/* Defaults, then the file text; returns the errors of both. */
static unsigned load(const char *text)
{
	errors[0] = '\0';
	t_modules[0] = '\0';
	t_applied = 0;
	t_apply_rc = 0;
	unsigned e = config_keys_defaults(collect, NULL);
	e += config_parse(&cfg, text, strlen(text), collect, NULL);
	return e + config_keys_apply(&cfg, collect, NULL);
}

static const struct config_key_state *state(const char *name)
{
	const struct config_key *k = config_key_find(name);
	cr_assert_not_null(k, "%s declared", name);
	return k->state;
}

Test(config_keys, defaults_are_stored_with_their_origin)
{
	t_flag = false;
	t_count = 0;
	cr_assert_eq(load(""), 0, "%s", errors);
	cr_assert(t_flag);
	cr_assert_eq(t_count, 4);
	cr_assert_eq(t_color, TEST_GREEN);
	cr_assert_eq(t_addr, 0x0a000001u);
	cr_assert_eq(t_gw, 0);
	cr_assert_str_eq(t_custom, "x");
	cr_assert_eq(state("t.count")->origin, CONFIG_ORIGIN_DEFAULT);
	cr_assert_str_eq(state("t.count")->text, "4");
	cr_assert_eq(t_applied, 0, "apply is for run-time changes, not boot");
}

Test(config_keys, file_values_are_stored_with_their_line)
{
	cr_assert_eq(load("# x\nt.flag = off\nt.count = 0x0a\nt.color = blue\nt.addr = 192.168.1.2\n"
			  "t.gw = 192.168.1.1\nt.custom = \"two words\"\n"), 0, "%s", errors);
	cr_assert_not(t_flag);
	cr_assert_eq(t_count, 10);
	cr_assert_eq(t_color, TEST_BLUE);
	cr_assert_eq(t_addr, 0xc0a80102u);
	cr_assert_eq(t_gw, 0xc0a80101u);
	cr_assert_str_eq(t_custom, "two words");
	cr_assert_eq(state("t.color")->origin, CONFIG_ORIGIN_FILE);
	cr_assert_eq(state("t.color")->line, 4);
	cr_assert_str_eq(state("t.color")->text, "blue");
	cr_assert_eq(state("t.flag")->origin, CONFIG_ORIGIN_FILE);
	cr_assert_eq(state("t.gw")->line, 6);
}

Test(config_keys, bad_values_and_unknown_keys_are_reported_with_their_line)
{
	unsigned e = load("t.count = 11\nt.flag = maybe\nt.color = Green\nt.addr = 10.0.0.256\nt.gw = 1.2.3\n"
			  "t.custom = hi!\nt.nothing = 1\nt.mod. = yes\n");
	cr_assert_eq(e, 8, "%s", errors);
	cr_assert_str_eq(errors,
			 "1:t.count '11' is not 2..10 (default kept);"
			 "2:t.flag 'maybe' is not on|off (default kept);"
			 "3:t.color 'Green' is not red|green|blue (default kept);"
			 "4:t.addr '10.0.0.256' is not an IPv4 address (default kept);"
			 "5:t.gw '1.2.3' is not an IPv4 address or empty (default kept);"
			 "6:t.custom: no '!' please (default kept);"
			 "7:unknown setting 't.nothing' (ignored; `config` lists them);"
			 "8:unknown setting 't.mod.' (ignored; `config` lists them);");
	cr_assert_eq(load("t.count = 1\nt.addr =\nt.flag = 1\n"), 2, "%s", errors);
	cr_assert_str_eq(errors, "1:t.count '1' is not 2..10 (default kept);"
			 "2:t.addr '' is not an IPv4 address (default kept);");
	cr_assert(t_flag);
	cr_assert_eq(load("t.count = 3\nt.count = 5x\n"), 1, "%s", errors);
	cr_assert_str_eq(errors, "2:key repeated: the later value wins;2:t.count '5x' is not 2..10 (default kept);",
			 "a repeated key: only the later value counts");
	cr_assert_eq(load("t.count = 11\nt.flag = maybe\nt.color = Green\nt.addr = 10.0.0.256\nt.custom = hi!\n"), 5);
	cr_assert_eq(t_count, 4, "refused values change nothing");
	cr_assert(t_flag);
	cr_assert_eq(t_color, TEST_GREEN);
	cr_assert_eq(t_addr, 0x0a000001u);
	cr_assert_str_eq(t_custom, "x");
	cr_assert_eq(state("t.count")->origin, CONFIG_ORIGIN_DEFAULT);
}

Test(config_keys, pattern_keys_come_after_exact_ones_and_list_what_they_set)
{
	cr_assert_eq(load("t.mod.b = yes\nt.count = 3\nt.mod.a = yes\nt.mod.c = no\n"), 1, "%s", errors);
	cr_assert_str_eq(t_modules, "t.mod.b;t.mod.a;");
	cr_assert_str_eq(errors, "4:t.mod.c 'no' is not yes (ignored);");
	cr_assert_str_eq(state("t.mod.x")->text, "b=yes a=yes");
	cr_assert_eq(state("t.mod.x")->origin, CONFIG_ORIGIN_FILE);
	cr_assert_eq(config_key_find("t.mod"), NULL);
}

Test(config_keys, console_sets_run_time_keys_only)
{
	char why[300];
	cr_assert_eq(load("t.count = 3\n"), 0);
	cr_assert_eq(config_key_set("t.count", "7", why, sizeof(why)), 0, "%s", why);
	cr_assert_eq(t_count, 7);
	cr_assert_eq(t_applied, 1);
	cr_assert_eq(state("t.count")->origin, CONFIG_ORIGIN_CONSOLE);
	cr_assert_str_eq(state("t.count")->text, "7");
	cr_assert_eq(config_key_set("t.count", "70", why, sizeof(why)), -EINVAL);
	cr_assert_str_eq(why, "t.count '70' is not 2..10");
	cr_assert_eq(t_count, 7);
	cr_assert_eq(config_key_set("t.flag", "off", why, sizeof(why)), -EPERM);
	cr_assert_str_eq(why, "t.flag is read at boot only: set it in p2pstore.cfg");
	cr_assert(t_flag);
	cr_assert_eq(config_key_set("t.none", "1", why, sizeof(why)), -ENOENT);
	cr_assert_eq(config_key_set("t.color", "red", why, sizeof(why)), 0);
	cr_assert_eq(t_color, TEST_RED);
	cr_assert_eq(config_key_set("t.mod.z", "yes", why, sizeof(why)), 0);
	cr_assert_str_eq(t_modules, "t.mod.z;");
}

Test(config_keys, a_refused_apply_restores_the_previous_value)
{
	char why[300];
	cr_assert_eq(load("t.count = 3\n"), 0);
	t_apply_rc = -EBUSY;
	cr_assert_eq(config_key_set("t.count", "9", why, sizeof(why)), -EBUSY);
	cr_assert_eq(t_count, 3);
	cr_assert_eq(state("t.count")->origin, CONFIG_ORIGIN_FILE);
	cr_assert_str_eq(state("t.count")->text, "3");
	cr_assert_eq(t_applied, 2, "applied with the new value, then again with the old one");
	cr_assert(strstr(why, "previous value restored"), "%s", why);
}

static int run_config(int argc, char **argv)
{
	const struct console_command *c;
	LINKER_SET_FOREACH(console_commands, c)
		if (strcmp(c->name, "config") == 0)
			return c->run(argc, argv);
	cr_assert_fail("no config command");
	return -1;
}

Test(config_keys, the_command_lists_and_sets, .init = cr_redirect_stdout)
{
	char *list[] = { "config" }, *one[] = { "config", "t.c" }, *set[] = { "config", "t.count", "8" };
	char *bad[] = { "config", "t.zzz" };
	cr_assert_eq(load("t.color = blue\n"), 0);
	cr_assert_eq(run_config(1, list), 0);
	cr_assert_eq(run_config(2, one), 0);
	cr_assert_eq(run_config(3, set), 0);
	cr_assert_eq(run_config(2, bad), -ENOENT);
	fflush(stdout);
	cr_assert_stdout_eq_str(
		"t.addr                     = 10.0.0.1         (default; default 10.0.0.1; an IPv4 address)\n"
		"    an address\n"
		"t.color                    = blue             (file line 1; default green; red|green|blue; run time)\n"
		"    a color\n"
		"t.count                    = 4                (default; default 4; 2..10; run time)\n"
		"    a number\n"
		"t.custom                   = x                (default; default x; words without '!')\n"
		"    a custom key\n"
		"t.flag                     = on               (default; default on; on|off)\n"
		"    a boolean\n"
		"t.gw                       = \"\"               (default; default none; an IPv4 address or empty)\n"
		"    an optional address\n"
		"t.mod.*                    = \"\"               (default; default yes; yes; run time)\n"
		"    per-module key\n"
		"7 settings; `config KEY VALUE` changes those marked run time, the others are read from "
		"p2pstore.cfg at boot\n"
		"t.color                    = blue             (file line 1; default green; red|green|blue; run time)\n"
		"    a color\n"
		"t.count                    = 4                (default; default 4; 2..10; run time)\n"
		"    a number\n"
		"t.custom                   = x                (default; default x; words without '!')\n"
		"    a custom key\n"
		"t.count                    = 8                (console; default 4; 2..10; run time)\n"
		"    a number\n"
		"config: no setting 't.zzz'\n");
}
