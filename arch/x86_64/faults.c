/*
 * faults.c - the faults x86_64 raises for the console's `fault` (../fault_command.c).
 */
#include <stdint.h>
#include "../fault.h"

static volatile uint64_t fault_noncanonical = 0x8000000000000000ull;
static volatile uint32_t fault_zero;

static __attribute__((noinline)) void fault_general_protection(void)
{
	(void)*(volatile uint64_t *)(uintptr_t)fault_noncanonical;
}

static __attribute__((noinline)) void fault_divide(void)
{
	uint32_t zero = fault_zero;
	__asm__ volatile("xor %%edx, %%edx\n\tmov $1, %%eax\n\tdivl %0" : : "r"(zero) : "eax", "edx");
}

static __attribute__((noinline)) void fault_invalid_opcode(void)
{
	__asm__ volatile("ud2");
}

const struct arch_fault arch_faults[] = {
	{ "pf", arch_fault_null_write, "write to address 0 (#PF, vector 14)" },
	{ "gp", fault_general_protection, "load from a non-canonical address (#GP, vector 13)" },
	{ "de", fault_divide, "divide by zero (#DE, vector 0)" },
	{ "ud", fault_invalid_opcode, "ud2 (#UD, vector 6)" },
	/* the #PF cannot be delivered on the full stack: the CPU raises #DF on its IST stack */
	{ "stack", arch_fault_stack_overflow, "overflow the kernel stack into its guard page (#DF, vector 8)" },
};
const unsigned arch_nfaults = sizeof(arch_faults) / sizeof(arch_faults[0]);
