/*
 * shutdown.c - run the shutdown hooks (shutdown.h) in order, once.
 */
#include <stdbool.h>
#include <stddef.h>
#include "shutdown.h"

static bool running;

static const char *const reason_names[SHUTDOWN_REASON_COUNT] = {
	[SHUTDOWN_POWEROFF] = "poweroff",
	[SHUTDOWN_REBOOT] = "reboot",
};

/* Name of a shutdown reason. */
const char *shutdown_reason_name(enum shutdown_reason why)
{
	return (unsigned)why < SHUTDOWN_REASON_COUNT ? reason_names[why] : "?";
}

/* Run the hooks in ascending order; ties in link order. No allocation, no sorting
 * buffer: a selection pass per distinct order, as the set is a handful of entries. */
unsigned shutdown_run_hooks(enum shutdown_reason why)
{
	const struct shutdown_hook *h;
	unsigned ran = 0;
	int last = -2147483647 - 1;
	bool have_last = false;

	if (running)
		return 0;
	running = true;
	for (;;) {
		bool found = false;
		int next = 0;
		LINKER_SET_FOREACH(shutdown_hooks, h) {
			if (have_last && h->order <= last)
				continue;
			if (!found || h->order < next) {
				next = h->order;
				found = true;
			}
		}
		if (!found)
			break;
		LINKER_SET_FOREACH(shutdown_hooks, h) {
			if (h->order == next && h->run) {
				h->run(why);
				ran++;
			}
		}
		last = next;
		have_last = true;
	}
	return ran;
}
