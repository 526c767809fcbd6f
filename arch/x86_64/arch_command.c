/*
 * arch_command.c - the console's `cpu` (processor, clock, PAT) and `vm` (page walk).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../../lib/command.h"
#include "arch.h"
#include "cpu.h"

static int cpu_command(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	uint32_t r[4];
	char vendor[13];
	char brand[49] = "";

	cpuid(0, 0, r);
	memcpy(vendor, &r[1], 4);
	memcpy(vendor + 4, &r[3], 4);
	memcpy(vendor + 8, &r[2], 4);
	vendor[12] = 0;
	cpuid(0x80000000u, 0, r);
	if (r[0] >= 0x80000004u) {
		for (unsigned i = 0; i < 3; i++) {
			cpuid(0x80000002u + i, 0, r);
			memcpy(brand + 16 * i, r, 16);
		}
		brand[48] = 0;
	}
	cpuid(1, 0, r);
	printf("cpu: %s \"%s\" family %u model %u%s\n", vendor, brand, (r[0] >> 8) & 0xf,
	       ((r[0] >> 4) & 0xf) | ((r[0] >> 12) & 0xf0), (r[2] >> 31) ? " (hypervisor)" : "");
	printf("tsc: %llu Hz, calibrated against the %s\n", (unsigned long long)arch_counter_hz(),
	       arch_clock_reference());
	printf("pat: 0x%016llx (PA0 WB, PA1 WC, PA2 UC-, PA3 UC)\n", (unsigned long long)arch_memattr_value());
	printf("cr0 0x%llx cr3 0x%llx cr4 0x%llx\n", (unsigned long long)read_cr0(),
	       (unsigned long long)read_cr3(), (unsigned long long)read_cr4());
	return 0;
}
CONSOLE_COMMAND(cpu, "", "processor, TSC frequency, PAT and control registers", cpu_command);

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
