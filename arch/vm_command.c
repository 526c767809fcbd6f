/*
 * vm_command.c - the console's `vm`: walk the appliance's page tables for an address
 * (either architecture's arch_walk()).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include "../lib/command.h"
#include "arch.h"

static int vm_command(int argc, char **argv)
{
	struct arch_walk w;
	char *end;

	if (argc != 2)
		return -EINVAL;
	uint64_t addr = strtoull(argv[1], &end, 0);
	if (*end)
		return -EINVAL;
	if (arch_walk(addr, &w)) {
		printf("vm: 0x%llx not mapped\n", (unsigned long long)addr);
		return 0;
	}
	printf("vm: 0x%llx -> phys 0x%llx, %s page, %s, pte 0x%llx\n", (unsigned long long)addr,
	       (unsigned long long)w.phys, w.level == 1 ? "4 KiB" : "2 MiB", arch_cache_name(w.cache),
	       (unsigned long long)w.pte);
	return 0;
}
CONSOLE_COMMAND(vm, "ADDRESS", "walk the page tables for an address", vm_command);
