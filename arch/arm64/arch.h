/*
 * arch.h - the face of arch/arm64: exception vectors, page tables, the generic timer as
 * the clock, GICv3 wake-ups, the PL011 console and PSCI power control. Included through
 * ../arch.h; it declares the same arch_* interface as arch/x86_64/arch.h.
 */
#ifndef ARCH_ARM64_ARCH_H
#define ARCH_ARM64_ARCH_H

#include <stddef.h>
#include <stdint.h>

/* The frame vectors.S builds for arch_exception(). */
struct arch_regs {
	uint64_t x[31];   /* x0-x30 (x29 = frame pointer, x30 = link register) */
	uint64_t sp;      /* the interrupted stack pointer */
	uint64_t elr;     /* ELR_EL1: where the exception was taken */
	uint64_t spsr;    /* SPSR_EL1 */
	uint64_t esr;     /* ESR_EL1: the syndrome */
	uint64_t far;     /* FAR_EL1: the faulting address (aborts) */
	uint64_t vector;  /* vector table entry 0-15 */
	uint64_t pad;
};

/* --- exception.c --- */

/* Install the exception vectors (VBAR_EL1). */
void arch_descriptors_init(void);

enum arch_fault_action {
	ARCH_FAULT_HALT = 0,     /* print the diagnosis and halt (a person reads the console) */
	ARCH_FAULT_EXIT = 1,     /* print it and exit QEMU through semihosting (tests) */
	ARCH_FAULT_REBOOT = 2,   /* print it and reset the machine (appliance in production) */
};

/* Tell the diagnosis where the image and the kernel stack are, and what to do after. */
void arch_exception_setup(uint64_t image_base, uint64_t image_size, uint64_t stack_lo,
			  uint64_t stack_hi, enum arch_fault_action action);

/* Called by vectors.S for every exception. */
void arch_exception(struct arch_regs *regs);

/* Name of an exception class (ESR_EL1.EC), e.g. "Data Abort (same EL)". */
const char *arch_vector_name(uint64_t ec);

/* --- paging.c --- */

enum arch_cache {
	ARCH_CACHE_WB = 0, /* Normal write-back: DRAM */
	ARCH_CACHE_WC = 1, /* Normal non-cacheable: prefetchable device memory (CMB) */
	ARCH_CACHE_UC = 2, /* Device-nGnRE: registers */
};

struct arch_map_range {
	uint64_t base;
	uint64_t size;
	enum arch_cache cache;
};

typedef void *(*arch_page_alloc_fn)(void); /* a zeroed, 4 KiB aligned page or NULL */

/* Add the appliance's memory types to MAIR_EL1 (attributes 4-7, the firmware's 0-3 kept),
 * build identity tables for the `n` ranges and the devices arch/ itself drives, page 0
 * and the guard page unmapped, and switch TTBR0_EL1 to them. Returns 0, -ENOMEM, or
 * -ENOTSUP when the firmware's translation regime is not 4 KiB pages at EL1. */
int arch_paging_init(const struct arch_map_range *ranges, unsigned n, uint64_t guard_page,
		     arch_page_alloc_fn alloc_page);

/* Identity-map [phys, phys + size) with the given type (device BARs).
 * Returns 0, -EINVAL or -ENOMEM. */
int arch_map(uint64_t phys, uint64_t size, enum arch_cache cache);

struct arch_walk {
	int present;
	uint64_t pte;        /* the leaf descriptor */
	unsigned level;      /* 1 = 4 KiB page, 2 = 2 MiB block */
	enum arch_cache cache;
	uint64_t phys;
};

/* Walk the page tables for virt (console `vm`, tests). Returns 0 or -ENOENT. */
int arch_walk(uint64_t virt, struct arch_walk *w);

/* The memory-attribute register as programmed at boot: MAIR_EL1. */
#define ARCH_MEMATTR_NAME "MAIR"

/* loop.halt_us's default: no device wakes the CPU yet (no ITS), so every halt ends on the timer
 * and the quantum sets the idle cost; 250 us halts kept an idle TCG vCPU at 22 % of a host core. */
#define ARCH_LOOP_HALT_US_DEFAULT "1000"
uint64_t arch_memattr_value(void);

/* Name of a memory type. */
const char *arch_cache_name(enum arch_cache cache);

/* --- clock.c --- */

/* Install the generic timer's virtual count as lib/'s clock, with `epoch` as time zero.
 * Returns 0 or -EIO (CNTFRQ_EL0 not set by the firmware). */
int arch_clock_init(uint64_t epoch);

/* Counter frequency in Hz (CNTFRQ_EL0). */
uint64_t arch_counter_hz(void);

/* The counter value at which the clock reads ns. */
uint64_t arch_ns_to_counter(uint64_t ns);

/* Where the frequency comes from. */
const char *arch_clock_reference(void);

/* --- gic.c: idle halts --- */

/* Route the virtual timer's interrupt through the GICv3 (MADT, GTDT) so that WFI wakes
 * on it. Returns 0, or -ENODEV / -EIO (then arch_idle() returns at once and the loop
 * spins). */
int arch_idle_init(void);

/* Wait for an interrupt until until_ns on the clock (or sooner); returns the nanoseconds
 * spent waiting. */
uint64_t arch_idle(uint64_t until_ns);

/* Waits so far, time waited, and the wake-up mechanism in use. */
void arch_idle_stats(uint64_t *halts, uint64_t *ns_halted, const char **mode);

/* The GIC's register frames (mapped by arch_paging_init). */
void arm64_gic_regions(uint64_t *gicd, uint64_t *gicr, uint64_t *gicr_size);

/* --- pl011.c: the serial console --- */

/* Find the console UART in ACPI's SPCR (a PL011 or SBSA UART) and use it as the firmware
 * left it programmed. Returns 0, or -ENODEV without one. */
int arch_console_init(void);

/* Send len bytes (bounded waits). */
void arch_console_write(const char *buf, size_t len);

/* A received byte, or -1 when none is waiting. */
int arch_console_getc(void);

/* A received byte as an idle wake-up: not on arm64 yet (the PL011's interrupt through the
 * GIC); returns -ENOTSUP and the console is polled, bounding halts to loop.halt_us. */
int arch_console_wake(void);

/* Interrupts the console's received bytes raised so far: none on arm64. */
uint64_t arch_console_wakes(void);

/* The console UART's registers (mapped by arch_paging_init), 0 when none. */
uint64_t arm64_console_base(void);

/* --- power.c --- */

/* Register the firmware's reset service (boot/ provides it). */
void arch_power_setup(void (*firmware_reset)(int kind));

/* Turn the machine off (firmware, then PSCI SYSTEM_OFF); never returns. */
void arch_poweroff(void) __attribute__((noreturn));

/* Reset the machine (firmware, then PSCI SYSTEM_RESET); never returns. */
void arch_reboot(void) __attribute__((noreturn));

/* Exit QEMU with a status (tests): semihosting SYS_EXIT, QEMU's status is (code << 1) | 1
 * as with x86's isa-debug-exit. Needs QEMU's -semihosting (tools/qemu-run). */
void arch_qemu_exit(uint32_t code) __attribute__((noreturn));

/* Stop this CPU for good. */
void arch_halt(void) __attribute__((noreturn));

#endif
