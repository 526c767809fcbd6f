/*
 * config_command.c - `config`: every declared setting with its value, where the value
 * came from (default, file line, console), its default, the values it accepts and its
 * help; `config KEY VALUE` changes a run-time setting.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../lib/command.h"
#include "config.h"

#define CONFIG_LIST_MAX 256

static int compare_keys(const void *a, const void *b)
{
	const struct config_key *const *x = a, *const *y = b;
	return strcmp((*x)->name, (*y)->name);
}

/* One key: "name = value  (origin, default D, values[, run time])" and its help. */
static void show_key(const struct config_key *k)
{
	const struct config_key_state *s = k->state;
	char values[160], origin[24];

	config_key_values(k, values, sizeof(values));
	if (s->origin == CONFIG_ORIGIN_FILE && s->line)
		snprintf(origin, sizeof(origin), "file line %u", s->line);
	else
		snprintf(origin, sizeof(origin), "%s", config_origin_name(s->origin));
	printf("%-26s = %-16s (%s; default %s; %s%s)\n    %s\n", k->name,
	       s->text[0] ? s->text : "\"\"", origin, k->def[0] ? k->def : "none", values,
	       k->apply ? "; run time" : "", k->help);
}

static int config_command(int argc, char **argv)
{
	const struct config_key *k, *sorted[CONFIG_LIST_MAX];
	size_t n = 0, shown = 0;
	char why[CONFIG_VALUE_MAX + 160], value[CONFIG_VALUE_MAX];
	int rc;

	if (argc >= 3) {
		/* the value may be a list typed with spaces: join the words back */
		size_t used = 0;
		value[0] = '\0';
		for (int i = 2; i < argc; i++) {
			int w = snprintf(value + used, sizeof(value) - used, "%s%s", i > 2 ? " " : "", argv[i]);
			if (w < 0 || (size_t)w >= sizeof(value) - used) {
				printf("config: value too long\n");
				return -EINVAL;
			}
			used += (size_t)w;
		}
		if ((rc = config_key_set(argv[1], value, why, sizeof(why)))) {
			printf("config: %s\n", why);
			return rc;
		}
		show_key(config_key_find(argv[1]));
		return 0;
	}
	LINKER_SET_FOREACH(config_keys, k)
		if (n < CONFIG_LIST_MAX)
			sorted[n++] = k;
	qsort(sorted, n, sizeof(sorted[0]), compare_keys);
	for (size_t i = 0; i < n; i++) {
		/* `config KEY` or `config PREFIX` (e.g. `config nic`) */
		if (argc == 2 && strncmp(sorted[i]->name, argv[1], strlen(argv[1])) != 0)
			continue;
		show_key(sorted[i]);
		shown++;
	}
	if (argc == 2 && !shown) {
		printf("config: no setting '%s'\n", argv[1]);
		return -ENOENT;
	}
	if (argc == 1)
		printf("%zu settings; `config KEY VALUE` changes those marked run time, the others are read "
		       "from p2pstore.cfg at boot\n", n);
	return 0;
}
CONSOLE_COMMAND(config, "[KEY|PREFIX [VALUE]]", "settings: value, origin, default, allowed values, help; set one",
		config_command);
