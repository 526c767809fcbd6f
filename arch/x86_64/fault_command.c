/*
 * fault_command.c - the console's `fault`: raise a CPU exception on purpose, to prove
 * that the diagnosis (exception.c) names the vector, RIP, registers and call chain.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "../../lib/command.h"
#include "arch.h"

static volatile uint64_t fault_null_address;             /* 0: page 0 is never mapped */
static volatile uint64_t fault_noncanonical = 0x8000000000000000ull;
static volatile unsigned fault_depth;

static __attribute__((noinline)) void fault_page(void)
{
	*(volatile uint64_t *)(uintptr_t)fault_null_address = 0xdead;
}

static __attribute__((noinline)) void fault_general_protection(void)
{
	(void)*(volatile uint64_t *)(uintptr_t)fault_noncanonical;
}

static __attribute__((noinline)) void fault_divide(void)
{
	uint32_t zero = (uint32_t)fault_null_address;
	__asm__ volatile("xor %%edx, %%edx\n\tmov $1, %%eax\n\tdivl %0" : : "r"(zero) : "eax", "edx");
}

static __attribute__((noinline)) void fault_invalid_opcode(void)
{
	__asm__ volatile("ud2");
}

/* Recurse until the guard page below the stack faults; the #PF cannot be delivered on
 * the full stack, so the CPU raises #DF on its own IST stack. */
static __attribute__((noinline)) unsigned fault_stack_overflow_depth(unsigned n)
{
	volatile char pad[512];
	pad[n % sizeof(pad)] = (char)n;
	if (fault_depth != ~0u) /* always true, but the compiler cannot know it */
		n += fault_stack_overflow_depth(n + 1);
	return n + (unsigned)pad[0];
}

static __attribute__((noinline)) void fault_stack_overflow(void)
{
	fault_depth = fault_stack_overflow_depth(0);
}

static const struct {
	const char *name;
	void (*fn)(void);
	const char *what;
} fault_kinds[] = {
	{ "pf", fault_page, "write to address 0 (#PF, vector 14)" },
	{ "gp", fault_general_protection, "load from a non-canonical address (#GP, vector 13)" },
	{ "de", fault_divide, "divide by zero (#DE, vector 0)" },
	{ "ud", fault_invalid_opcode, "ud2 (#UD, vector 6)" },
	{ "stack", fault_stack_overflow, "overflow the kernel stack into its guard page (#DF, vector 8)" },
};

static int fault_command(int argc, char **argv)
{
	const char *kind = argc > 1 ? argv[1] : "pf";
	for (size_t i = 0; i < sizeof(fault_kinds) / sizeof(fault_kinds[0]); i++) {
		if (strcmp(kind, fault_kinds[i].name) == 0) {
			printf("fault: %s\n", fault_kinds[i].what);
			fault_kinds[i].fn();
			return 0;
		}
	}
	printf("fault: unknown kind '%s'; one of:", kind);
	for (size_t i = 0; i < sizeof(fault_kinds) / sizeof(fault_kinds[0]); i++)
		printf(" %s", fault_kinds[i].name);
	printf("\n");
	return -EINVAL;
}
CONSOLE_COMMAND(fault, "[pf|gp|de|ud|stack]", "raise a CPU exception on purpose (diagnosis test)",
		fault_command);
