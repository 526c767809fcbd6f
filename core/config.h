/*
 * config.h - the appliance's settings file (\p2pstore\p2pstore.cfg on the ESP).
 *
 * Format: one `key = value` per line; keys are [a-z0-9_.-], values are trimmed and may
 * be "double-quoted"; lines starting with '#' and blank lines are ignored. A bad line is
 * reported with its number and skipped, so a typo never stops the appliance from
 * reaching its console. Keys nobody asked for are reported after boot (likely typos).
 */
#ifndef CORE_CONFIG_H
#define CORE_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CONFIG_MAX_ENTRIES 128
#define CONFIG_KEY_MAX 64
#define CONFIG_VALUE_MAX 256

struct config_entry {
	char key[CONFIG_KEY_MAX];
	char value[CONFIG_VALUE_MAX];
	unsigned line;
	bool used;  /* somebody looked it up */
};

typedef void (*config_error_fn)(void *ctx, unsigned line, const char *message);

struct config {
	struct config_entry entries[CONFIG_MAX_ENTRIES];
	unsigned n;
	unsigned errors;
};

/* Parse text (len bytes, need not be NUL-terminated) into c, replacing its contents;
 * each bad line is reported through err (may be NULL). Returns the number of errors. */
unsigned config_parse(struct config *c, const char *text, size_t len, config_error_fn err, void *ctx);

/* The value of key, or NULL. Marks the entry used. */
const char *config_get(struct config *c, const char *key);

/* key as an unsigned number (decimal or 0x hex): def when absent, -EINVAL when malformed. */
int config_get_u64(struct config *c, const char *key, uint64_t def, uint64_t *out);

/* key as a boolean (1/0, yes/no, on/off, true/false): def when absent, -EINVAL when malformed. */
int config_get_bool(struct config *c, const char *key, bool def, bool *out);

/* The appliance's settings. */
struct config *config_global(void);

#endif
