/*
 * fault_command.c - the console's `fault`: raise a CPU exception on purpose, to prove
 * that the diagnosis (exception.c) names the exception, PC, registers and call chain.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "../../lib/command.h"
#include "arch.h"

static volatile uint64_t fault_null_address;             /* 0: page 0 is never mapped */
static volatile uint64_t fault_unmapped = 0x0000f00000000000ull;
static volatile unsigned fault_depth;

static __attribute__((noinline)) void fault_page(void)
{
	*(volatile uint64_t *)(uintptr_t)fault_null_address = 0xdead;
}

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

/* Recurse until the guard page below the stack faults; the abort is taken on the
 * exception stack (entry.S), so it is still diagnosed. */
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
	{ "pf", fault_page, "write to address 0 (Data Abort, translation fault)" },
	{ "gp", fault_unmapped_read, "load from beyond the identity map (Data Abort, translation fault)" },
	{ "ud", fault_undefined, "udf #0 (Unknown reason, EC 0x00)" },
	{ "bp", fault_breakpoint, "brk #0x7f (BRK instruction, EC 0x3c)" },
	{ "stack", fault_stack_overflow, "overflow the kernel stack into its guard page (Data Abort on the exception stack)" },
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
CONSOLE_COMMAND(fault, "[pf|gp|ud|bp|stack]", "raise a CPU exception on purpose (diagnosis test)",
		fault_command);
