/*
 * config.h - the appliance's settings file (\p2pstore\p2pstore.cfg on the ESP).
 *
 * Format: one `key = value` per line; keys are [a-z0-9_.-], values are trimmed and may
 * be "double-quoted"; lines starting with '#' and blank lines are ignored. A bad line is
 * reported with its number and skipped, so a typo never stops the appliance from
 * reaching its console.
 *
 * Every key is declared by the code that uses it (lib/config_key.h: CONFIG_BOOL, ...).
 * config_keys_defaults() stores each declaration's default, config_keys_apply() then
 * checks each line of the parsed file against its declaration and stores its value:
 * unknown keys and bad values are reported with their line number and change nothing.
 * config_key_set() is the console's `config KEY VALUE`.
 */
#ifndef CORE_CONFIG_H
#define CORE_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../lib/config_key.h"

#define CONFIG_MAX_ENTRIES 128
#define CONFIG_KEY_MAX 64

struct config_entry {
	char key[CONFIG_KEY_MAX];
	char value[CONFIG_VALUE_MAX];
	unsigned line;
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

/* The text of key as the file gave it, or NULL. */
const char *config_get(const struct config *c, const char *key);

/* The appliance's settings. */
struct config *config_global(void);

/* --- the declared keys (core/config_keys.c) --- */

/* The declaration of key name (a ".*" declaration covers its prefix), or NULL. */
const struct config_key *config_key_find(const char *name);

/* Store every declared key's default in its variable (origin: default). A default that
 * its own declaration refuses is reported through err with line 0. Returns the errors. */
unsigned config_keys_defaults(config_error_fn err, void *ctx);

/* Store every setting of the parsed file c in its declared variable (origin: file, with
 * the line). Unknown keys and values the declaration refuses are reported through err
 * with their line and leave the key as it was. Returns the errors. */
unsigned config_keys_apply(const struct config *c, config_error_fn err, void *ctx);

/* `config KEY VALUE`: store text in a run-time key and call its apply(); the previous
 * value comes back when apply fails. -ENOENT (no such key), -EPERM (boot-time key: set
 * it in the file), -EINVAL (refused: why says why), or apply's error. */
int config_key_set(const char *name, const char *text, char *why, size_t whylen);

/* The values k accepts, in words ("on|off", "1..9000", "auto|on|off"). */
void config_key_values(const struct config_key *k, char *buf, size_t len);

/* "default", "file" or "console". */
const char *config_origin_name(enum config_origin o);

#endif
