/*
 * kernel.h - what kmain() learned at boot, for the commands that report it.
 */
#ifndef CORE_KERNEL_H
#define CORE_KERNEL_H

#include <stdint.h>
#include "../boot/boot_info.h"

/* The boot hand-off (read-only after boot). */
const struct boot_info *kernel_boot_info(void);

/* Nanoseconds from efi_main to the first console prompt. */
uint64_t kernel_boot_ns(void);

#endif
