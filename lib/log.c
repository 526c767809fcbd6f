/*
 * log.c - leveled logging (see log.h).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "clock.h"
#include "config_key.h"
#include "log.h"

#define LOG_LINE_MAX 256
#define LOG_RING_SIZE (32 * 1024)

static log_sink_fn log_sink;
static char log_ring[LOG_RING_SIZE];
static size_t log_ring_head;   /* next byte to write */
static size_t log_ring_used;   /* bytes retained, <= LOG_RING_SIZE */
static unsigned long log_counts[LOG_DEBUG + 1];

static const char *const log_names[] = { "err", "warn", "info", "debug" };

static void log_ring_append(const char *text, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		log_ring[log_ring_head] = text[i];
		log_ring_head = (log_ring_head + 1) % LOG_RING_SIZE;
	}
	log_ring_used = (log_ring_used + len > LOG_RING_SIZE) ? LOG_RING_SIZE : log_ring_used + len;
}

/* Format a line and hand it to the sink and the ring. */
void log_emit(const char *module, enum log_level level, const char *fmt, ...)
{
	char line[LOG_LINE_MAX];
	uint64_t now = clock_now_ns();
	int n = snprintf(line, sizeof(line), "[%5lu.%06lu] %s%s: ", (unsigned long)(now / NSEC_PER_SEC),
			 (unsigned long)((now % NSEC_PER_SEC) / NSEC_PER_USEC),
			 level <= LOG_WARN ? (level == LOG_ERR ? "ERROR " : "WARNING ") : "", module);
	if (n < 0)
		return;
	size_t len = (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1;
	va_list ap;
	va_start(ap, fmt);
	int m = vsnprintf(line + len, sizeof(line) - len, fmt, ap);
	va_end(ap);
	if (m > 0)
		len += ((size_t)m < sizeof(line) - len) ? (size_t)m : sizeof(line) - len - 1;
	if (len == sizeof(line) - 1)
		line[len - 1] = '\n'; /* truncated: still end the line */
	else if (len > 0 && line[len - 1] != '\n')
		line[len++] = '\n';
	if ((unsigned)level <= LOG_DEBUG)
		log_counts[level]++;
	log_ring_append(line, len);
	if (log_sink)
		log_sink(line, len);
}

/* Install the output sink. */
void log_set_sink(log_sink_fn sink)
{
	log_sink = sink;
}

/* Set one module's level, or all of them. */
int log_set_level(const char *name, enum log_level level)
{
	const struct log_module *m;
	int found = 0;
	LINKER_SET_FOREACH(log_modules, m) {
		if (strcmp(name, "all") == 0 || strcmp(name, m->name) == 0) {
			*m->level = level;
			found = 1;
		}
	}
	return found ? 0 : -ENOENT;
}

/* Parse a level name. */
int log_parse_level(const char *text)
{
	for (int i = 0; i <= LOG_DEBUG; i++)
		if (strcmp(text, log_names[i]) == 0)
			return i;
	return -EINVAL;
}

/* log.level and log.MODULE: a level for every module, or for one. */
static int log_config_parse(const struct config_key *k, const char *name, const char *text, char *why,
			    size_t whylen)
{
	const char *module = strcmp(k->name, name) == 0 ? "all" : name + strlen("log.");
	int level = log_parse_level(text);

	if (level < 0)
		return -EINVAL; /* the caller names the allowed values */
	if (log_set_level(module, level)) {
		snprintf(why, whylen, "%s: no log module '%s' (`log` lists them)", name, module);
		return -EINVAL;
	}
	return 0;
}

CONFIG_CUSTOM(log_level, "log.level", log_config_parse, "err|warn|info|debug", "info", CONFIG_RUNTIME,
	      "log level of every module (log.MODULE lines override it for one module)");
CONFIG_CUSTOM(log_module, "log.*", log_config_parse, "err|warn|info|debug", "info", CONFIG_RUNTIME,
	      "log.MODULE: the level of one module (`log` lists the modules and their levels)");

/* Name of a level. */
const char *log_level_name(int level)
{
	return (level >= 0 && level <= LOG_DEBUG) ? log_names[level] : "?";
}

/* Copy the retained ring, oldest byte first. */
size_t log_ring_read(char *out, size_t cap)
{
	size_t n = log_ring_used < cap ? log_ring_used : cap;
	size_t start = (log_ring_head + LOG_RING_SIZE - log_ring_used) % LOG_RING_SIZE;
	/* When cap is short, keep the newest bytes. */
	start = (start + (log_ring_used - n)) % LOG_RING_SIZE;
	for (size_t i = 0; i < n; i++)
		out[i] = log_ring[(start + i) % LOG_RING_SIZE];
	return n;
}

/* Lines emitted at a level. */
unsigned long log_count(enum log_level level)
{
	return ((unsigned)level <= LOG_DEBUG) ? log_counts[level] : 0;
}
