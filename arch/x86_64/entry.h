/*
 * entry.h - the switch from the firmware's stack to the appliance's.
 */
#ifndef ARCH_X86_64_ENTRY_H
#define ARCH_X86_64_ENTRY_H

#include <stdint.h>

struct boot_info;

/* Load rsp = stack_top, clear rbp (ending frame-pointer backtraces) and call fn(bi). */
void arch_enter_kernel(uint64_t stack_top, void (*fn)(struct boot_info *), struct boot_info *bi)
	__attribute__((noreturn));

#endif
