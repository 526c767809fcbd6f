/*
 * config_key.h - settings declared where they are used.
 *
 * A file that reads a setting declares it once, next to the variable that holds it:
 *
 *   static bool sq_in_cmb = true;
 *   CONFIG_BOOL(nvme_sq_in_cmb, "nvme.sq_in_cmb", &sq_in_cmb, "on", NULL,
 *               "I/O submission queues in the drive's CMB when CMBSZ.SQS allows");
 *
 *   static const struct config_choice tso_choices[] = {
 *           { "auto", E1000E_TSO_AUTO }, { "on", E1000E_TSO_ON }, { "off", E1000E_TSO_OFF }, { 0 } };
 *   CONFIG_ENUM(nic_tso, "nic.tso", &settings.tso, tso_choices, "auto", NULL, "TCP segmentation offload");
 *
 *   CONFIG_UINT(nic_ps_units, "nic.ps_units", &settings.ps_units, 1, 2, "2", NULL, "RDH/RDT units ...");
 *   CONFIG_IPV4(net_gateway, "net.gateway", &gateway, "", NULL, "default route (empty: none)");
 *   CONFIG_CUSTOM(pci_acs_isolate, "pci.acs.isolate", parse_isolate, "BDF[,BDF...]", "", NULL, "...");
 *
 * The descriptor lives in lib/ so that every layer can declare keys without including
 * core/, which owns the settings file, the validation and the `config` console command.
 * Before any initcall runs, core stores each key's default, then the file's value when
 * the file sets it (a bad value is reported with its line and the default kept), into
 * the variable; the subsystem reads the variable when it starts. The value's origin
 * (default, file, console) is kept for `config`.
 *
 * apply: NULL for a boot-time key (read once when its subsystem starts). Non-NULL marks
 * a key that `config KEY VALUE` may change at run time: the console stores the new value
 * in the variable, then calls apply() so the subsystem acts on it (0 or -errno; on an
 * error the previous value is restored). apply is not called at boot. CONFIG_RUNTIME is
 * the apply of a key whose variable is read at each use, so storing it is enough.
 *
 * A name ending in ".*" (only with CONFIG_CUSTOM) covers every key with that prefix
 * (log.* for the per-module log levels); the parse function gets the full key.
 */
#ifndef LIB_CONFIG_KEY_H
#define LIB_CONFIG_KEY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "linker_set.h"

#define CONFIG_VALUE_MAX 256

enum config_type {
	CONFIG_TYPE_BOOL = 0, /* bool: 1/0, yes/no, on/off, true/false */
	CONFIG_TYPE_UINT,     /* unsigned: decimal or 0x hex, within [min, max] */
	CONFIG_TYPE_ENUM,     /* int-sized enum: one of the choice names */
	CONFIG_TYPE_IPV4,     /* uint32_t, host order: a dotted quad ("" = 0 when the default is "") */
	CONFIG_TYPE_CUSTOM,   /* the key's parse function checks the text and stores it */
};

enum config_origin {
	CONFIG_ORIGIN_DEFAULT = 0, /* the declaration's default */
	CONFIG_ORIGIN_FILE,        /* p2pstore.cfg (state.line says where) */
	CONFIG_ORIGIN_CONSOLE,     /* `config KEY VALUE` */
};

/* One allowed value of an enum key; a table ends with { NULL, 0 }. */
struct config_choice {
	const char *name;
	int value;
};

struct config_key;

/* Check text for key `name` (the full name for a ".*" key) and store it; on an error
 * write the reason to why and return -EINVAL without storing anything. */
typedef int (*config_parse_fn)(const struct config_key *k, const char *name, const char *text, char *why,
			       size_t whylen);

/* Where a key's value came from and its text (the mutable part of a declaration). */
struct config_key_state {
	enum config_origin origin;
	unsigned line; /* the file's line for CONFIG_ORIGIN_FILE */
	char text[CONFIG_VALUE_MAX];
};

struct config_key {
	const char *name;
	enum config_type type;
	void *target;                        /* bool *, unsigned *, int *, uint32_t *; NULL for CUSTOM */
	const struct config_choice *choices; /* CONFIG_TYPE_ENUM */
	unsigned min, max;                   /* CONFIG_TYPE_UINT, inclusive */
	config_parse_fn parse;               /* CONFIG_TYPE_CUSTOM */
	const char *values;                  /* allowed values in words (CUSTOM; others derive theirs) */
	const char *def;                     /* the default, spelt as in the file ("" = none) */
	int (*apply)(void);                  /* non-NULL: may change at run time (see above) */
	const char *help;                    /* one line */
	struct config_key_state *state;
	const char *file;                    /* the declaring source file */
};
LINKER_SET_DECLARE(config_keys, struct config_key);

/* apply of a run-time key that needs nothing more than its stored value. */
static inline int config_apply_stored(void)
{
	return 0;
}
#define CONFIG_RUNTIME config_apply_stored

#define CONFIG_KEY_ENTRY_(id, ...)                                                         \
	static struct config_key_state config_key_state_##id;                              \
	LINKER_SET_ENTRY(config_keys, struct config_key, config_key_##id) = {              \
		__VA_ARGS__, .state = &config_key_state_##id, .file = __FILE__ }

/* A boolean key stored in *(bool *)ptr. */
#define CONFIG_BOOL(id, key, ptr, def_text, apply_fn, help_text)                          \
	CONFIG_KEY_ENTRY_(id, .name = key, .type = CONFIG_TYPE_BOOL,                      \
			  .target = _Generic((ptr), bool *: (ptr)), .def = def_text,       \
			  .apply = apply_fn, .help = help_text)

/* An unsigned key within [lo, hi] stored in *(unsigned *)ptr. */
#define CONFIG_UINT(id, key, ptr, lo, hi, def_text, apply_fn, help_text)                  \
	CONFIG_KEY_ENTRY_(id, .name = key, .type = CONFIG_TYPE_UINT,                      \
			  .target = _Generic((ptr), unsigned *: (ptr)), .min = (lo), .max = (hi), \
			  .def = def_text, .apply = apply_fn, .help = help_text)

/* An enum key: one of choices' names, its value stored in *ptr (an int-sized enum). */
#define CONFIG_ENUM(id, key, ptr, choice_table, def_text, apply_fn, help_text)            \
	_Static_assert(sizeof(*(ptr)) == sizeof(int), key " must be stored in an int-sized enum"); \
	CONFIG_KEY_ENTRY_(id, .name = key, .type = CONFIG_TYPE_ENUM, .target = (void *)(ptr), \
			  .choices = choice_table, .def = def_text, .apply = apply_fn,     \
			  .help = help_text)

/* A dotted-quad IPv4 address stored in *(uint32_t *)ptr in host order. */
#define CONFIG_IPV4(id, key, ptr, def_text, apply_fn, help_text)                          \
	CONFIG_KEY_ENTRY_(id, .name = key, .type = CONFIG_TYPE_IPV4,                      \
			  .target = _Generic((ptr), uint32_t *: (ptr)), .def = def_text,   \
			  .apply = apply_fn, .help = help_text)

/* A key whose text parse_fn checks and stores; values_text says what it accepts. */
#define CONFIG_CUSTOM(id, key, parse_fn, values_text, def_text, apply_fn, help_text)      \
	CONFIG_KEY_ENTRY_(id, .name = key, .type = CONFIG_TYPE_CUSTOM, .parse = parse_fn, \
			  .values = values_text, .def = def_text, .apply = apply_fn,       \
			  .help = help_text)

#endif
