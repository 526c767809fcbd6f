// sources: core/config.c core/config_keys.c lib/ipv4_text.c
/*
 * libFuzzer harness: the settings file parser (text from the ESP is untrusted).
 * Checks invariants on every input: bounded entries, NUL-terminated keys and values
 * within their limits, only key characters in keys, lookups of every key succeed; then
 * the entries checked against declared keys of every type: stored values stay in range.
 */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "core/config.h"

static struct config cfg;

/* One key of each type, as a subsystem declares them. */
enum fz_mode { FZ_A = 0, FZ_B = 1 };
static bool fz_flag;
static unsigned fz_count;
static enum fz_mode fz_mode;
static uint32_t fz_addr;
static const struct config_choice fz_modes[] = { { "a", FZ_A }, { "b", FZ_B }, { NULL, 0 } };
CONFIG_BOOL(fz_flag, "a", &fz_flag, "on", NULL, "a boolean");
CONFIG_UINT(fz_count, "n", &fz_count, 1, 9, "1", NULL, "a number");
CONFIG_ENUM(fz_mode, "m", &fz_mode, fz_modes, "a", NULL, "an enum");
CONFIG_IPV4(fz_addr, "ip", &fz_addr, "", NULL, "an address");

static int fz_parse(const struct config_key *k, const char *name, const char *text, char *why, size_t n)
{
	(void)k;
	if (strlen(text) <= 3)
		return 0;
	snprintf(why, n, "%s: longer than 3", name);
	return -EINVAL;
}
CONFIG_CUSTOM(fz_any, "x.*", fz_parse, "up to 3 characters", "", NULL, "a pattern");

static void ignore(void *ctx, unsigned line, const char *msg)
{
	(void)ctx;
	(void)line;
	assert(msg && msg[0]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned errors = config_parse(&cfg, (const char *)data, size, ignore, NULL);
	assert(errors == cfg.errors);
	assert(cfg.n <= CONFIG_MAX_ENTRIES);
	for (unsigned i = 0; i < cfg.n; i++) {
		size_t kl = strnlen(cfg.entries[i].key, CONFIG_KEY_MAX);
		assert(kl > 0 && kl < CONFIG_KEY_MAX);
		assert(strnlen(cfg.entries[i].value, CONFIG_VALUE_MAX) < CONFIG_VALUE_MAX);
		for (size_t k = 0; k < kl; k++)
			assert(strchr("abcdefghijklmnopqrstuvwxyz0123456789_.-", cfg.entries[i].key[k]));
		assert(config_get(&cfg, cfg.entries[i].key) != NULL);
	}
	/* every line checked against the declarations below: stored, or refused with its line */
	unsigned before = config_keys_defaults(NULL, NULL);
	assert(before == 0);
	(void)config_keys_apply(&cfg, ignore, NULL);
	assert(fz_count >= 1 && fz_count <= 9);
	assert(fz_mode == FZ_A || fz_mode == FZ_B);
	return 0;
}
