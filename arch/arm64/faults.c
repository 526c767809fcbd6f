/*
 * faults.c - the faults arm64 raises for the console's `fault` (../fault_command.c).
 */
#include <stdint.h>
#include "../fault.h"

static volatile uint64_t fault_unmapped = 0x0000f00000000000ull;

static __attribute__((noinline)) void fault_unmapped_read(void)
{
	(void)*(volatile uint64_t *)(uintptr_t)fault_unmapped;
}

static __attribute__((noinline)) void fault_undefined(void)
{
	__asm__ volatile("udf #0");
}

static __attribute__((noinline)) void fault_breakpoint(void)
{
	__asm__ volatile("brk #0x7f");
}

const struct arch_fault arch_faults[] = {
	{ "pf", arch_fault_null_write, "write to address 0 (Data Abort, translation fault)" },
	{ "gp", fault_unmapped_read, "load from beyond the identity map (Data Abort, translation fault)" },
	{ "ud", fault_undefined, "udf #0 (Unknown reason, EC 0x00)" },
	{ "bp", fault_breakpoint, "brk #0x7f (BRK instruction, EC 0x3c)" },
	/* the abort is taken on the exception stack (entry.S), so it is still diagnosed */
	{ "stack", arch_fault_stack_overflow,
	  "overflow the kernel stack into its guard page (Data Abort on the exception stack)" },
};
const unsigned arch_nfaults = sizeof(arch_faults) / sizeof(arch_faults[0]);
