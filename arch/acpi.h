/*
 * acpi.h - ACPI tables from the RSDP the firmware handed over (acpi.c): the FADT for the
 * x86 PM timer, MCFG for PCIe ECAM, GTDT/MADT for arm64's timer and interrupt controller.
 */
#ifndef ARCH_ACPI_H
#define ARCH_ACPI_H

#include <stdint.h>

/* Remember the RSDP and validate it. Returns 0 or -EINVAL. */
int acpi_init(uint64_t rsdp_phys);

/* The ACPI table with this signature (checksum verified), or NULL. */
const void *acpi_find_table(const char sig[4]);

#endif
