/*
 * arch_command.c - the console's `cpu`: processor, clock, PAT and control registers.
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
