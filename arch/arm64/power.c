/*
 * power.c - power off, reset and halt through PSCI, and exiting QEMU through semihosting.
 *
 * PSCI (Arm DEN 0022) is reached with SMC or HVC as ACPI's FADT says (ARM_BOOT_ARCH:
 * PSCI_COMPLIANT, PSCI_USE_HVC); the firmware's ResetSystem is tried first, as on x86.
 * Power-off and reset run the shutdown hooks first (lib/shutdown.h); halt and the
 * semihosting exit do not.
 */
#include <stdint.h>
#include <string.h>
#include "../acpi.h"
#include "../cpu_ops.h"
#include "arch.h"
#include "../../lib/shutdown.h"

#define BOOT_RESET_COLD 0
#define BOOT_RESET_SHUTDOWN 2

#define PSCI_SYSTEM_OFF 0x84000008u
#define PSCI_SYSTEM_RESET 0x84000009u
#define FADT_ARM_BOOT_ARCH 129          /* 2 bytes, ACPI 5.1+ */
#define ARM_BOOT_ARCH_PSCI_COMPLIANT 1u
#define ARM_BOOT_ARCH_PSCI_USE_HVC 2u

/* Arm semihosting (Semihosting for AArch32 and AArch64, 2.0): SYS_EXIT with a parameter
 * block {reason, subcode}; QEMU exits with the subcode for ADP_Stopped_ApplicationExit. */
#define SEMIHOSTING_SYS_EXIT 0x18
#define ADP_STOPPED_APPLICATION_EXIT 0x20026

static void (*firmware_reset)(int kind);

/* Register the firmware's reset service. */
void arch_power_setup(void (*fn)(int kind))
{
	firmware_reset = fn;
}

/* Stop for good. */
void arch_halt(void)
{
	arch_cpu_stop();
}

/* A PSCI call through the conduit the FADT names; returns when PSCI is absent or fails. */
static void psci_call(uint32_t fn)
{
	const uint8_t *fadt = acpi_find_table("FACP");
	uint32_t len = 0;
	uint16_t flags = 0;

	if (!fadt)
		return;
	memcpy(&len, fadt + 4, 4);
	if (len < FADT_ARM_BOOT_ARCH + 2)
		return;
	memcpy(&flags, fadt + FADT_ARM_BOOT_ARCH, 2);
	if (!(flags & ARM_BOOT_ARCH_PSCI_COMPLIANT))
		return;
	register uint64_t x0 __asm__("x0") = fn;
	if (flags & ARM_BOOT_ARCH_PSCI_USE_HVC)
		__asm__ volatile("hvc #0" : "+r"(x0) : : "x1", "x2", "x3", "memory");
	else
		__asm__ volatile("smc #0" : "+r"(x0) : : "x1", "x2", "x3", "memory");
}

/* Exit QEMU with status (code << 1) | 1. */
void arch_qemu_exit(uint32_t code)
{
	static volatile uint64_t block[2];
	block[0] = ADP_STOPPED_APPLICATION_EXIT;
	block[1] = ((uint64_t)code << 1) | 1;
	register uint64_t x0 __asm__("x0") = SEMIHOSTING_SYS_EXIT;
	register uint64_t x1 __asm__("x1") = (uint64_t)(uintptr_t)block;
	__asm__ volatile("hlt #0xf000" : "+r"(x0) : "r"(x1) : "memory");
	arch_halt();
}

/* Power off: UEFI ResetSystem(EfiResetShutdown), then PSCI SYSTEM_OFF (QEMU exits 0). */
void arch_poweroff(void)
{
	shutdown_run_hooks(SHUTDOWN_POWEROFF); /* drive caches flushed, CC.SHN sent */
	if (firmware_reset)
		firmware_reset(BOOT_RESET_SHUTDOWN);
	psci_call(PSCI_SYSTEM_OFF);
	arch_halt();
}

/* Reset: UEFI ResetSystem(EfiResetCold), then PSCI SYSTEM_RESET. */
void arch_reboot(void)
{
	shutdown_run_hooks(SHUTDOWN_REBOOT); /* also reached by a panic with panic = reboot */
	if (firmware_reset)
		firmware_reset(BOOT_RESET_COLD);
	psci_call(PSCI_SYSTEM_RESET);
	arch_halt();
}
