/*
 * config_keys.c - settings checked against their declarations (lib/config_key.h) and
 * stored where the declaring code reads them; see config.h.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../lib/ipv4_text.h"
#include "config.h"

static const char *const bool_yes[] = { "1", "yes", "on", "true" };
static const char *const bool_no[] = { "0", "no", "off", "false" };

/* Does declaration k cover key name? */
static bool key_matches(const struct config_key *k, const char *name)
{
	size_t n = strlen(k->name);
	if (n >= 2 && k->name[n - 1] == '*' && k->name[n - 2] == '.')
		return strncmp(k->name, name, n - 1) == 0 && name[n - 1] != '\0';
	return strcmp(k->name, name) == 0;
}

/* The declaration of a key (exact names before ".*" patterns). */
const struct config_key *config_key_find(const char *name)
{
	const struct config_key *k, *pattern = NULL;
	LINKER_SET_FOREACH(config_keys, k) {
		if (strcmp(k->name, name) == 0)
			return k;
		if (!pattern && key_matches(k, name))
			pattern = k;
	}
	return pattern;
}

static int parse_bool(const char *text, bool *out)
{
	for (unsigned i = 0; i < sizeof(bool_yes) / sizeof(bool_yes[0]); i++) {
		if (strcmp(text, bool_yes[i]) == 0) {
			*out = true;
			return 0;
		}
		if (strcmp(text, bool_no[i]) == 0) {
			*out = false;
			return 0;
		}
	}
	return -EINVAL;
}

static int parse_uint(const char *text, unsigned lo, unsigned hi, unsigned *out)
{
	char *end;
	if (*text < '0' || *text > '9')
		return -EINVAL;
	errno = 0;
	unsigned long long n = strtoull(text, &end, 0);
	if (*end || errno || n < lo || n > hi)
		return -EINVAL;
	*out = (unsigned)n;
	return 0;
}

/* Check text against k and store it in k's variable; the reason in why on -EINVAL. */
static int key_store(const struct config_key *k, const char *name, const char *text, char *why, size_t whylen)
{
	char values[160];
	bool b;
	unsigned u;
	uint32_t a;

	switch (k->type) {
	case CONFIG_TYPE_BOOL:
		if (parse_bool(text, &b))
			break;
		*(bool *)k->target = b;
		return 0;
	case CONFIG_TYPE_UINT:
		if (parse_uint(text, k->min, k->max, &u))
			break;
		*(unsigned *)k->target = u;
		return 0;
	case CONFIG_TYPE_ENUM:
		for (const struct config_choice *c = k->choices; c && c->name; c++) {
			if (strcmp(text, c->name) == 0) {
				*(int *)k->target = c->value;
				return 0;
			}
		}
		break;
	case CONFIG_TYPE_IPV4:
		if (*text == '\0' && *k->def == '\0') {
			*(uint32_t *)k->target = 0;
			return 0;
		}
		if (ipv4_parse(text, &a))
			break;
		*(uint32_t *)k->target = a;
		return 0;
	case CONFIG_TYPE_CUSTOM:
		why[0] = '\0';
		if (k->parse(k, name, text, why, whylen) == 0)
			return 0;
		if (why[0])
			return -EINVAL;
		break;
	}
	config_key_values(k, values, sizeof(values));
	snprintf(why, whylen, "%s '%s' is not %s", name, text, values);
	return -EINVAL;
}

/* Remember where the value of k came from. A ".*" key keeps "name=value" of each key it
 * stored (as many as fit), so `config` shows them. */
static void key_record(const struct config_key *k, const char *name, const char *text, enum config_origin o,
		       unsigned line)
{
	struct config_key_state *s = k->state;
	size_t n = strlen(k->name);

	s->origin = o;
	s->line = line;
	if (strcmp(k->name, name) == 0) {
		snprintf(s->text, sizeof(s->text), "%s", text);
		return;
	}
	if (o == CONFIG_ORIGIN_DEFAULT)
		return;
	size_t used = strlen(s->text);
	snprintf(s->text + used, sizeof(s->text) - used, "%s%s=%s", used ? " " : "", name + n - 1, text);
}

/* Store every default. */
unsigned config_keys_defaults(config_error_fn err, void *ctx)
{
	const struct config_key *k;
	unsigned errors = 0;
	char why[200];

	LINKER_SET_FOREACH(config_keys, k) {
		k->state->text[0] = '\0';
		/* a ".*" key's default is each covered key's own (the log module's level) */
		if (k->type == CONFIG_TYPE_CUSTOM && strcmp(k->name + strlen(k->name) - 1, "*") == 0) {
			k->state->origin = CONFIG_ORIGIN_DEFAULT;
			k->state->line = 0;
			continue;
		}
		if (key_store(k, k->name, k->def, why, sizeof(why))) {
			if (err)
				err(ctx, 0, why);
			errors++;
		}
		key_record(k, k->name, k->def, CONFIG_ORIGIN_DEFAULT, 0);
	}
	return errors;
}

/* Apply one pass of the file: exact names (pass 0) or ".*" keys (pass 1). */
static unsigned apply_pass(const struct config *c, int pass, config_error_fn err, void *ctx)
{
	unsigned errors = 0;
	char why[CONFIG_VALUE_MAX + 160];

	for (unsigned i = 0; i < c->n; i++) {
		const struct config_entry *e = &c->entries[i];
		const struct config_key *k = config_key_find(e->key);
		if (!k) {
			if (pass == 0) {
				snprintf(why, sizeof(why), "unknown setting '%s' (ignored; `config` lists them)", e->key);
				if (err)
					err(ctx, e->line, why);
				errors++;
			}
			continue;
		}
		if ((strcmp(k->name, e->key) != 0) != pass)
			continue;
		if (key_store(k, e->key, e->value, why, sizeof(why))) {
			size_t n = strlen(why);
			snprintf(why + n, sizeof(why) - n, " (%s)", pass ? "ignored"
				 : k->state->origin == CONFIG_ORIGIN_DEFAULT ? "default kept" : "previous value kept");
			if (err)
				err(ctx, e->line, why);
			errors++;
			continue;
		}
		key_record(k, e->key, e->value, CONFIG_ORIGIN_FILE, e->line);
	}
	return errors;
}

/* Store the file's settings: exact keys first, so that log.level comes before log.MODULE. */
unsigned config_keys_apply(const struct config *c, config_error_fn err, void *ctx)
{
	return apply_pass(c, 0, err, ctx) + apply_pass(c, 1, err, ctx);
}

/* The console's `config KEY VALUE`. */
int config_key_set(const char *name, const char *text, char *why, size_t whylen)
{
	const struct config_key *k = config_key_find(name);
	struct config_key_state old;
	int rc;

	why[0] = '\0';
	if (!k) {
		snprintf(why, whylen, "no setting '%s'", name);
		return -ENOENT;
	}
	if (!k->apply) {
		snprintf(why, whylen, "%s is read at boot only: set it in p2pstore.cfg", name);
		return -EPERM;
	}
	old = *k->state;
	if ((rc = key_store(k, name, text, why, whylen)))
		return rc;
	key_record(k, name, text, CONFIG_ORIGIN_CONSOLE, 0);
	if ((rc = k->apply())) {
		char ignored[8];
		snprintf(why, whylen, "%s: the subsystem refused '%s' (%s): previous value restored", name, text,
			 strerror(-rc));
		if (strcmp(k->name, name) == 0)
			(void)key_store(k, name, old.text, ignored, sizeof(ignored));
		*k->state = old;
		(void)k->apply();
		return rc;
	}
	return 0;
}

/* Allowed values in words. */
void config_key_values(const struct config_key *k, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = '\0';
	switch (k->type) {
	case CONFIG_TYPE_BOOL:
		snprintf(buf, len, "on|off");
		break;
	case CONFIG_TYPE_UINT:
		snprintf(buf, len, "%u..%u", k->min, k->max);
		break;
	case CONFIG_TYPE_ENUM:
		for (const struct config_choice *c = k->choices; c && c->name && n < len; c++)
			n += (size_t)snprintf(buf + n, len - n, "%s%s", c == k->choices ? "" : "|", c->name);
		break;
	case CONFIG_TYPE_IPV4:
		snprintf(buf, len, "%s", *k->def ? "an IPv4 address" : "an IPv4 address or empty");
		break;
	case CONFIG_TYPE_CUSTOM:
		snprintf(buf, len, "%s", k->values ? k->values : "see help");
		break;
	}
}

/* Origin names. */
const char *config_origin_name(enum config_origin o)
{
	switch (o) {
	case CONFIG_ORIGIN_DEFAULT:
		return "default";
	case CONFIG_ORIGIN_FILE:
		return "file";
	case CONFIG_ORIGIN_CONSOLE:
		return "console";
	}
	return "?";
}
