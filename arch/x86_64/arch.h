/*
 * arch.h - the face of arch/x86_64: CPU tables, exceptions, page tables, the clock,
 * the serial console and power control. Included through ../arch.h; arch/arm64/arch.h
 * declares the same arch_* interface.
 */
#ifndef ARCH_X86_64_ARCH_H
#define ARCH_X86_64_ARCH_H

#include <stddef.h>
#include <stdint.h>

/* The frame isr.S builds for arch_exception(). */
struct arch_regs {
	uint64_t r15, r14, r13, r12, r11, r10, r9, r8;
	uint64_t rbp, rdi, rsi, rdx, rcx, rbx, rax;
	uint64_t vector, error;
	uint64_t rip, cs, rflags, rsp, ss; /* pushed by the CPU */
};

/* --- descriptors.c / exception.c --- */

/* Install the appliance's GDT, TSS and IDT. */
void arch_descriptors_init(void);

/* Bounds of the double-fault stack. */
void arch_ist_stack_bounds(uint64_t *lo, uint64_t *hi);

enum arch_fault_action {
	ARCH_FAULT_HALT = 0,     /* print the diagnosis and halt (a person reads the console) */
	ARCH_FAULT_EXIT = 1,     /* print it and exit QEMU through isa-debug-exit (tests) */
	ARCH_FAULT_REBOOT = 2,   /* print it and reset the machine (appliance in production) */
};

/* Tell the diagnosis where the image and the kernel stack are, and what to do after. */
void arch_exception_setup(uint64_t image_base, uint64_t image_size, uint64_t stack_lo,
			  uint64_t stack_hi, enum arch_fault_action action);

/* Called by isr.S for every exception and unexpected interrupt. */
void arch_exception(struct arch_regs *regs);

/* Name of an exception vector ("#PF Page Fault"), or "unexpected interrupt". */
const char *arch_vector_name(uint64_t vector);

/* --- paging.c --- */

enum arch_cache {
	ARCH_CACHE_WB = 0, /* write-back: DRAM */
	ARCH_CACHE_WC = 1, /* write-combining: prefetchable device memory (CMB) */
	ARCH_CACHE_UC = 2, /* uncached: registers */
};

struct arch_map_range {
	uint64_t base;
	uint64_t size;
	enum arch_cache cache;
};

typedef void *(*arch_page_alloc_fn)(void); /* a zeroed, 4 KiB aligned page or NULL */

/* Program PAT (WB, WC, UC- , UC in entries 0-3), build identity page tables: [0, 4 GiB)
 * uncached, then `n` ranges with their cache types, page 0 and the guard page unmapped;
 * load them. Returns 0 or -ENOMEM. */
int arch_paging_init(const struct arch_map_range *ranges, unsigned n, uint64_t guard_page,
		     arch_page_alloc_fn alloc_page);

/* Identity-map [phys, phys + size) with the given cache type (device BARs).
 * Returns 0, -EINVAL or -ENOMEM. */
int arch_map(uint64_t phys, uint64_t size, enum arch_cache cache);

struct arch_walk {
	int present;
	uint64_t pte;        /* the leaf entry */
	unsigned level;      /* 1 = 4 KiB, 2 = 2 MiB */
	enum arch_cache cache;
	uint64_t phys;
};

/* Walk the page tables for virt (console `vm`, tests). Returns 0 or -ENOENT. */
int arch_walk(uint64_t virt, struct arch_walk *w);

/* The memory-type register as programmed at boot: IA32_PAT. */
#define ARCH_MEMATTR_NAME "PAT"

/* loop.halt_us's default: devices end halts by MSI-X, so the quantum only bounds polling under
 * load, where a lone command waits up to one quantum per step (docs/performance.md). */
#define ARCH_LOOP_HALT_US_DEFAULT "250"
uint64_t arch_memattr_value(void);

/* Name of a cache type. */
const char *arch_cache_name(enum arch_cache cache);

/* --- clock.c --- */

/* Calibrate the TSC against the ACPI PM timer (or the PIT without one) and install it as
 * lib/'s clock with `epoch_tsc` as time zero. Returns 0 or -EIO. */
int arch_clock_init(uint64_t epoch_tsc);

/* Counter (TSC) frequency in Hz. */
uint64_t arch_counter_hz(void);

/* The TSC value at which the clock reads ns. */
uint64_t arch_ns_to_tsc(uint64_t ns);

/* Which timer the TSC was calibrated against. */
const char *arch_clock_reference(void);

/* --- lapic.c: idle halts --- */

#define ARCH_VECTOR_TIMER 0x20     /* LAPIC timer: wakes an idle halt */
#define ARCH_VECTOR_SPURIOUS 0xff  /* LAPIC spurious interrupts: ignored */
#define ARCH_VECTOR_DEVICE_FIRST 0x30 /* device MSIs (irq.c, ../irq.h): ARCH_IRQ_MAX vectors from here */

/* Mask the legacy PICs and set up the LAPIC timer to end idle halts. Returns 0,
 * or -ENODEV / -EIO (then arch_idle() returns at once and the loop spins). */
int arch_idle_init(void);

/* Halt the CPU until until_ns on the clock (or an earlier interrupt); returns the
 * nanoseconds spent halted. */
uint64_t arch_idle(uint64_t until_ns);

/* Halts so far, time halted, and the wake-up mechanism in use. */
void arch_idle_stats(uint64_t *halts, uint64_t *ns_halted, const char **mode);

/* --- uart16550.c: the serial console --- */

/* Set up the console UART (COM1, 115200 8N1). Returns 0 or -ENODEV. */
int arch_console_init(void);

/* Send len bytes (bounded waits). */
void arch_console_write(const char *buf, size_t len);

/* A received byte, or -1 when none is waiting. */
int arch_console_getc(void);

/* Make a received byte raise an interrupt that ends an idle halt (COM1's IRQ 4 through
 * the I/O APIC, a device vector of ../irq.h named "uart"); once set up it stays. 0, or
 * -ENODEV / -ENOSPC / -ENOMEM (then the console is polled only). */
int arch_console_wake(void);

/* Interrupts the console's received bytes raised so far (typing is no load). */
uint64_t arch_console_wakes(void);

/* --- ioapic.c --- */

/* Route ISA interrupt isa_irq (ACPI MADT overrides applied) to vector on this CPU.
 * 0, -ENODEV (no MADT, no I/O APIC for it) or -ENOMEM. */
int arch_ioapic_route_isa(unsigned isa_irq, unsigned vector);

/* --- power.c --- */

typedef void (*arch_firmware_reset_fn)(int kind);

/* Register the firmware's reset service (boot/ provides it). */
void arch_power_setup(void (*firmware_reset)(int kind));

/* Turn the machine off (firmware, then QEMU's isa-debug-exit); never returns. */
void arch_poweroff(void) __attribute__((noreturn));

/* Reset the machine; never returns. */
void arch_reboot(void) __attribute__((noreturn));

/* Exit QEMU with a status (tests): isa-debug-exit on port 0xf4, QEMU's status is
 * (code << 1) | 1. Halts when the device is absent. */
void arch_qemu_exit(uint32_t code) __attribute__((noreturn));

/* Stop this CPU for good. */
void arch_halt(void) __attribute__((noreturn));

#endif
