/*
 * stats.h - sections of the console's `stats` output, registered by their owners.
 *
 *   static void nvme_stats_show(void) { printf(...); }
 *   STATS_SECTION(nvme, nvme_stats_show);
 */
#ifndef LIB_STATS_H
#define LIB_STATS_H

#include "linker_set.h"

struct stats_section {
	const char *name;
	void (*show)(void);
};
LINKER_SET_DECLARE(stats_sections, struct stats_section);

#define STATS_SECTION(id, fn) \
	LINKER_SET_ENTRY(stats_sections, struct stats_section, stats_section_##id) = { #id, fn }

#endif
