/*
 * arch_command.c - the console's `cpu`: processor identity, the generic timer, MAIR and
 * the translation registers.
 */
#include <stdio.h>
#include "../../lib/command.h"
#include "../cpu_ops.h"
#include "arch.h"

static int cpu_command(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	uint64_t midr = ARCH_READ_SYSREG(midr_el1);

	printf("cpu: MIDR_EL1 0x%08llx (implementer 0x%02llx part 0x%03llx r%llup%llu), MPIDR_EL1 0x%llx, EL%llu\n",
	       (unsigned long long)midr, (unsigned long long)(midr >> 24) & 0xff,
	       (unsigned long long)(midr >> 4) & 0xfff, (unsigned long long)(midr >> 20) & 0xf,
	       (unsigned long long)midr & 0xf, (unsigned long long)ARCH_READ_SYSREG(mpidr_el1),
	       (unsigned long long)(ARCH_READ_SYSREG(currentel) >> 2) & 3);
	printf("counter: %llu Hz (%s)\n", (unsigned long long)arch_counter_hz(), arch_clock_reference());
	printf("mair: 0x%016llx (Attr4 normal WB, Attr5 normal NC, Attr6 device-nGnRE; 0-3 the firmware's)\n",
	       (unsigned long long)arch_memattr_value());
	printf("sctlr 0x%llx tcr 0x%llx ttbr0 0x%llx isar0 0x%llx\n",
	       (unsigned long long)ARCH_READ_SYSREG(sctlr_el1), (unsigned long long)ARCH_READ_SYSREG(tcr_el1),
	       (unsigned long long)ARCH_READ_SYSREG(ttbr0_el1),
	       (unsigned long long)ARCH_READ_SYSREG(id_aa64isar0_el1));
	return 0;
}
CONSOLE_COMMAND(cpu, "", "processor, counter frequency, MAIR and translation registers", cpu_command);
