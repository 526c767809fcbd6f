/*
 * log.h - leveled logging with one level per module.
 *
 * A module is declared once with LOG_MODULE_DEFINE(name) in the file that owns it and
 * used from its other files with LOG_MODULE_USE(name); both make log_err()..log_debug()
 * available. Modules are gathered in a linker set so the console can list and change
 * their levels. Lines go to a sink installed at boot (the serial console) and to a
 * ring buffer that the console can replay.
 */
#ifndef LIB_LOG_H
#define LIB_LOG_H

#include <stddef.h>
#include "linker_set.h"

enum log_level {
	LOG_ERR = 0,
	LOG_WARN = 1,
	LOG_INFO = 2,
	LOG_DEBUG = 3,
};

struct log_module {
	const char *name;
	int *level;
};
LINKER_SET_DECLARE(log_modules, struct log_module);

#define LOG_MODULE_USE(mod)                                                               \
	extern int log_level_##mod;                                                       \
	static int *const log_self_level __attribute__((unused)) = &log_level_##mod;      \
	static const char log_self_name[] __attribute__((unused)) = #mod

#define LOG_MODULE_DEFINE(mod)                                                            \
	int log_level_##mod = LOG_INFO;                                                   \
	LINKER_SET_ENTRY(log_modules, struct log_module, log_module_##mod) = {            \
		#mod, &log_level_##mod };                                                 \
	LOG_MODULE_USE(mod)

#define log_at(lvl, ...)                                                                  \
	do {                                                                              \
		if ((lvl) <= *log_self_level)                                             \
			log_emit(log_self_name, (lvl), __VA_ARGS__);                      \
	} while (0)
#define log_err(...) log_at(LOG_ERR, __VA_ARGS__)
#define log_warn(...) log_at(LOG_WARN, __VA_ARGS__)
#define log_info(...) log_at(LOG_INFO, __VA_ARGS__)
#define log_debug(...) log_at(LOG_DEBUG, __VA_ARGS__)

typedef void (*log_sink_fn)(const char *text, size_t len);

/* Format one line "[seconds.micros] module: text" and send it to the sink and the ring. */
void log_emit(const char *module, enum log_level level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Install the sink that receives every formatted line (NULL: ring buffer only). */
void log_set_sink(log_sink_fn sink);

/* Set the level of one module by name, or of every module when name is "all". 0 or -ENOENT. */
int log_set_level(const char *name, enum log_level level);

/* Parse "err", "warn", "info" or "debug"; returns the level or -EINVAL. */
int log_parse_level(const char *text);

/* The name of a level ("err".."debug"). */
const char *log_level_name(int level);

/* Copy the retained log (oldest first) to out; returns the number of bytes written. */
size_t log_ring_read(char *out, size_t cap);

/* Count of lines emitted at or above each level since boot (index by enum log_level). */
unsigned long log_count(enum log_level level);

#endif
