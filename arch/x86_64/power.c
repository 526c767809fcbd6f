/*
 * power.c - power off, reset, halt, and QEMU's isa-debug-exit. Power-off and reset run the
 * shutdown hooks first (lib/shutdown.h); halt and isa-debug-exit do not.
 */
#include "arch.h"
#include "cpu.h"
#include "../../lib/shutdown.h"

#define ISA_DEBUG_EXIT_PORT 0xf4
#define BOOT_RESET_COLD 0
#define BOOT_RESET_SHUTDOWN 2
#define KBC_STATUS 0x64
#define KBC_PULSE_RESET 0xfe

static void (*firmware_reset)(int kind);

/* Register the firmware's reset service. */
void arch_power_setup(void (*fn)(int kind))
{
	firmware_reset = fn;
}

/* Stop for good. */
void arch_halt(void)
{
	for (;;)
		__asm__ volatile("cli; hlt");
}

/* Exit QEMU with status (code << 1) | 1, or halt when not under QEMU. */
void arch_qemu_exit(uint32_t code)
{
	outl(ISA_DEBUG_EXIT_PORT, code);
	arch_halt();
}

/* Power off: UEFI ResetSystem(EfiResetShutdown); QEMU exits with status 0. */
void arch_poweroff(void)
{
	shutdown_run_hooks(SHUTDOWN_POWEROFF); /* drive caches flushed, CC.SHN sent */
	if (firmware_reset)
		firmware_reset(BOOT_RESET_SHUTDOWN);
	arch_qemu_exit(0);
}

/* Reset: UEFI ResetSystem(EfiResetCold), then the keyboard controller's reset line. */
void arch_reboot(void)
{
	shutdown_run_hooks(SHUTDOWN_REBOOT); /* also reached by a panic with panic = reboot */
	if (firmware_reset)
		firmware_reset(BOOT_RESET_COLD);
	outb(KBC_STATUS, KBC_PULSE_RESET);
	arch_halt();
}
