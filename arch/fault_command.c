/*
 * fault_command.c - the console's `fault`: raise a CPU exception on purpose, to prove
 * that the diagnosis (ARCH/exception.c) names the exception, the faulting instruction's
 * address, the registers and the call chain. Which faults exist is the architecture's
 * table (ARCH/faults.c); the two every CPU has are here.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "../lib/command.h"
#include "fault.h"

static volatile uint64_t fault_null_address; /* 0: page 0 is never mapped */
static volatile unsigned fault_depth;

/* Store to address 0 (see fault.h). */
__attribute__((noinline)) void arch_fault_null_write(void)
{
	*(volatile uint64_t *)(uintptr_t)fault_null_address = 0xdead;
}

static __attribute__((noinline)) unsigned fault_stack_overflow_depth(unsigned n)
{
	volatile char pad[512];
	pad[n % sizeof(pad)] = (char)n;
	if (fault_depth != ~0u) /* always true, but the compiler cannot know it */
		n += fault_stack_overflow_depth(n + 1);
	return n + (unsigned)pad[0];
}

/* Overflow the kernel stack into its guard page (see fault.h). */
__attribute__((noinline)) void arch_fault_stack_overflow(void)
{
	fault_depth = fault_stack_overflow_depth(0);
}

static int fault_command(int argc, char **argv)
{
	const char *kind = argc > 1 ? argv[1] : arch_faults[0].name;
	for (unsigned i = 0; i < arch_nfaults; i++) {
		if (strcmp(kind, arch_faults[i].name) == 0) {
			printf("fault: %s\n", arch_faults[i].what);
			arch_faults[i].fn();
			return 0;
		}
	}
	printf("fault: unknown kind '%s'; one of:", kind);
	for (unsigned i = 0; i < arch_nfaults; i++)
		printf(" %s", arch_faults[i].name);
	printf("\n");
	return -EINVAL;
}
CONSOLE_COMMAND(fault, "[KIND]", "raise a CPU exception on purpose (diagnosis test); `fault ?` lists the kinds",
		fault_command);
