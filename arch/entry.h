/*
 * entry.h - the switch from the firmware's stack to the appliance's.
 */
#ifndef ARCH_ENTRY_H
#define ARCH_ENTRY_H

#include <stdint.h>

struct boot_info;

/* Switch to the stack at stack_top, clear the frame pointer (ending frame-pointer
 * backtraces) and call fn(bi); each architecture's entry.S implements it. */
void arch_enter_kernel(uint64_t stack_top, void (*fn)(struct boot_info *), struct boot_info *bi)
	__attribute__((noreturn));

#endif
