// sources: core/config.c
/*
 * libFuzzer harness: the settings file parser (text from the ESP is untrusted).
 * Checks invariants on every input: bounded entries, NUL-terminated keys and values
 * within their limits, only key characters in keys, lookups of every key succeed.
 */
#include <assert.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "core/config.h"

static struct config cfg;

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
	uint64_t u;
	bool b;
	(void)config_get_u64(&cfg, "a", 0, &u);
	(void)config_get_bool(&cfg, "a", false, &b);
	return 0;
}
