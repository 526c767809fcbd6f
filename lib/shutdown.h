/*
 * shutdown.h - work that must happen before the machine powers off or resets: flushing
 * drive caches, sending NVMe shutdown notifications. Each owner registers a hook with
 * SHUTDOWN_HOOK (a linker set, placed by linker.ld); the architecture's power code calls
 * shutdown_run_hooks() first thing in its power-off and reset paths, so `poweroff`,
 * `reboot` and a panic with `panic = reboot` all run them.
 *
 * Hooks run in ascending `order` (services before drivers: a target stops taking I/O
 * before its drives are shut down), each once per shutdown. A second call while hooks run
 * (a fault inside a hook ends in a reset) runs nothing: the machine resets without them.
 */
#ifndef LIB_SHUTDOWN_H
#define LIB_SHUTDOWN_H

#include "linker_set.h"

enum shutdown_reason {
	SHUTDOWN_POWEROFF = 0,
	SHUTDOWN_REBOOT,        /* console `reboot`, and a panic with `panic = reboot` */
	SHUTDOWN_REASON_COUNT
};

enum shutdown_order {
	SHUTDOWN_ORDER_SERVICE = 10,  /* targets and services: stop taking new work */
	SHUTDOWN_ORDER_DRIVER = 20,   /* device drivers: flush caches, notify devices */
};

struct shutdown_hook {
	const char *name;
	int order;                              /* enum shutdown_order */
	void (*run)(enum shutdown_reason why);
};
LINKER_SET_DECLARE(shutdown_hooks, struct shutdown_hook);

#define SHUTDOWN_HOOK(id, ord, fn) \
	LINKER_SET_ENTRY(shutdown_hooks, struct shutdown_hook, shutdown_hook_##id) = { #id, ord, fn }

/* Run every hook in order, once (re-entry runs nothing). Returns how many hooks ran. */
unsigned shutdown_run_hooks(enum shutdown_reason why);

/* "poweroff", "reboot". */
const char *shutdown_reason_name(enum shutdown_reason why);

#endif
