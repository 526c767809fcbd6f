/*
 * config.c - settings file parser (see config.h).
 */
#include <stdio.h>
#include <string.h>
#include "config.h"

static struct config global_config;

static int is_key_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
}

static int is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r';
}

static void report(config_error_fn err, void *ctx, unsigned line, const char *msg)
{
	if (err)
		err(ctx, line, msg);
}

/* Parse one line [s, e); returns 0 or 1 error. */
static unsigned parse_line(struct config *c, const char *s, const char *e, unsigned lineno,
			   config_error_fn err, void *ctx)
{
	while (s < e && is_space(*s))
		s++;
	while (e > s && is_space(e[-1]))
		e--;
	if (s == e || *s == '#')
		return 0;
	if (memchr(s, '\0', (size_t)(e - s))) {
		report(err, ctx, lineno, "NUL byte in line");
		return 1;
	}
	const char *eq = memchr(s, '=', (size_t)(e - s));
	if (!eq) {
		report(err, ctx, lineno, "expected 'key = value'");
		return 1;
	}
	const char *ke = eq;
	while (ke > s && is_space(ke[-1]))
		ke--;
	if (ke == s) {
		report(err, ctx, lineno, "empty key");
		return 1;
	}
	for (const char *k = s; k < ke; k++) {
		if (!is_key_char(*k)) {
			report(err, ctx, lineno, "key may only hold a-z 0-9 _ . -");
			return 1;
		}
	}
	if ((size_t)(ke - s) >= CONFIG_KEY_MAX) {
		report(err, ctx, lineno, "key too long");
		return 1;
	}
	const char *v = eq + 1;
	while (v < e && is_space(*v))
		v++;
	const char *ve = e;
	if (ve - v >= 2 && *v == '"' && ve[-1] == '"') {
		v++;
		ve--;
	} else if (v < ve && *v == '"') {
		report(err, ctx, lineno, "unterminated quote");
		return 1;
	}
	if ((size_t)(ve - v) >= CONFIG_VALUE_MAX) {
		report(err, ctx, lineno, "value too long");
		return 1;
	}
	struct config_entry *ent = NULL;
	for (unsigned i = 0; i < c->n; i++) {
		if (strlen(c->entries[i].key) == (size_t)(ke - s) && memcmp(c->entries[i].key, s, (size_t)(ke - s)) == 0) {
			report(err, ctx, lineno, "key repeated: the later value wins");
			ent = &c->entries[i];
			break;
		}
	}
	if (!ent) {
		if (c->n == CONFIG_MAX_ENTRIES) {
			report(err, ctx, lineno, "too many settings");
			return 1;
		}
		ent = &c->entries[c->n++];
		memcpy(ent->key, s, (size_t)(ke - s));
		ent->key[ke - s] = '\0';
	}
	memcpy(ent->value, v, (size_t)(ve - v));
	ent->value[ve - v] = '\0';
	ent->line = lineno;
	return 0;
}

/* Parse a whole file. */
unsigned config_parse(struct config *c, const char *text, size_t len, config_error_fn err, void *ctx)
{
	const char *p = text, *end = text + len;
	unsigned lineno = 0;

	memset(c, 0, sizeof(*c));
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *e = nl ? nl : end;
		c->errors += parse_line(c, p, e, ++lineno, err, ctx);
		p = nl ? nl + 1 : end;
	}
	return c->errors;
}

/* Look up a key. */
const char *config_get(const struct config *c, const char *key)
{
	for (unsigned i = 0; i < c->n; i++) {
		if (strcmp(c->entries[i].key, key) == 0) {
			return c->entries[i].value;
		}
	}
	return NULL;
}

/* The appliance's settings. */
struct config *config_global(void)
{
	return &global_config;
}
