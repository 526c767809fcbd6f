/*
 * fault.h - the faults the console's `fault` command raises (fault_command.c): the two
 * every architecture shares and the table each architecture fills (ARCH/faults.c).
 */
#ifndef ARCH_FAULT_H
#define ARCH_FAULT_H

struct arch_fault {
	const char *name;  /* the command's argument: pf, gp, ... */
	void (*fn)(void);  /* raises the fault; does not return */
	const char *what;  /* what it does and what the CPU reports */
};

/* The architecture's faults, "pf" first (the default), and how many (ARCH/faults.c). */
extern const struct arch_fault arch_faults[];
extern const unsigned arch_nfaults;

/* Store to address 0: page 0 is never mapped. */
void arch_fault_null_write(void);

/* Recurse until the guard page below the kernel stack faults. */
void arch_fault_stack_overflow(void);

#endif
