/*
 * lapic.c - halting the CPU while the appliance is idle, woken by the local APIC timer.
 *
 * The appliance polls; nothing raises interrupts. Spinning an idle poll loop burns a
 * whole core (under emulation, a whole host core), so when the loop has been idle for a
 * while it calls arch_idle(): arm the LAPIC timer (TSC-deadline mode when the CPU has it,
 * otherwise one-shot with a count calibrated against the TSC), then `sti; hlt`. The
 * timer's interrupt only ends the halt: its handler writes EOI and returns. Interrupts
 * are enabled only inside that one instruction window, the legacy 8259 PICs are masked
 * and LINT0 is masked, so no other interrupt can arrive.
 *
 * The sampling profiler (../prof.h, `prof` on the console) borrows the same timer: while
 * it runs, the timer interrupts periodically (TSC-deadline mode: re-armed by the stub;
 * one-shot mode: switched to periodic), isr.S records the interrupted RIP, interrupts
 * stay enabled, and an idle halt is a plain `hlt` that the next sample ends.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include "../../lib/clock.h"
#include "../prof.h"
#include "arch.h"
#include "cpu.h"

#define MSR_IA32_APIC_BASE 0x1b
#define MSR_IA32_TSC_DEADLINE 0x6e0
#define APIC_BASE_ENABLE (1ull << 11)     /* xAPIC global enable */
#define APIC_BASE_ADDR_MASK 0x000ffffffffff000ull

/* Local APIC registers (Intel SDM vol. 3, 10.4.1). */
#define LAPIC_EOI 0x0b0
#define LAPIC_SVR 0x0f0                    /* spurious-interrupt vector register */
#define LAPIC_LVT_TIMER 0x320
#define LAPIC_LVT_LINT0 0x350
#define LAPIC_LVT_ERROR 0x370
#define LAPIC_TIMER_INITIAL 0x380
#define LAPIC_TIMER_CURRENT 0x390
#define LAPIC_TIMER_DIVIDE 0x3e0

#define SVR_APIC_ENABLE (1u << 8)
#define LVT_MASKED (1u << 16)
#define LVT_TIMER_ONESHOT (0u << 17)
#define LVT_TIMER_PERIODIC (1u << 17)
#define LVT_TIMER_TSC_DEADLINE (2u << 17)
#define TIMER_DIVIDE_BY_16 0x3
#define CPUID1_ECX_TSC_DEADLINE (1u << 24)

#define PIC1_DATA 0x21
#define PIC2_DATA 0xa1
#define CALIBRATE_NS (10 * NSEC_PER_MSEC)

/* Used by isr.S's timer stub to acknowledge the interrupt. */
__attribute__((visibility("hidden"))) volatile uint32_t *arch_lapic_eoi_register;

static volatile uint32_t *lapic;
static int tsc_deadline_mode;
static uint64_t timer_hz; /* one-shot mode: LAPIC timer ticks per second */
static uint64_t halts;
static uint64_t halted_ns;

static inline uint32_t lapic_read(unsigned reg)
{
	return lapic[reg / 4];
}

static inline void lapic_write(unsigned reg, uint32_t v)
{
	lapic[reg / 4] = v;
}

/* Set up the LAPIC for idle halts. */
int arch_idle_init(void)
{
	uint32_t id[4];
	uint64_t base;

	cpuid(1, 0, id);
	if (!(id[3] & (1u << 9)) || !arch_counter_hz())
		return -ENODEV; /* no APIC, or no calibrated clock to program it with */
	outb(PIC1_DATA, 0xff); /* mask every legacy PIC line */
	outb(PIC2_DATA, 0xff);
	base = rdmsr(MSR_IA32_APIC_BASE);
	if (!(base & APIC_BASE_ENABLE))
		wrmsr(MSR_IA32_APIC_BASE, base | APIC_BASE_ENABLE);
	if (arch_map(base & APIC_BASE_ADDR_MASK, 4096, ARCH_CACHE_UC))
		return -ENOMEM;
	lapic = (volatile uint32_t *)(uintptr_t)(base & APIC_BASE_ADDR_MASK);
	arch_lapic_eoi_register = &lapic[LAPIC_EOI / 4];
	lapic_write(LAPIC_SVR, SVR_APIC_ENABLE | ARCH_VECTOR_SPURIOUS);
	lapic_write(LAPIC_LVT_LINT0, LVT_MASKED);
	lapic_write(LAPIC_LVT_ERROR, LVT_MASKED);
	tsc_deadline_mode = !!(id[2] & CPUID1_ECX_TSC_DEADLINE);
	if (tsc_deadline_mode) {
		lapic_write(LAPIC_LVT_TIMER, LVT_TIMER_TSC_DEADLINE | ARCH_VECTOR_TIMER);
		return 0;
	}
	/* One-shot mode: count how fast the timer runs against the TSC. */
	lapic_write(LAPIC_TIMER_DIVIDE, TIMER_DIVIDE_BY_16);
	lapic_write(LAPIC_LVT_TIMER, LVT_MASKED | LVT_TIMER_ONESHOT | ARCH_VECTOR_TIMER);
	lapic_write(LAPIC_TIMER_INITIAL, 0xffffffffu);
	uint64_t t0 = clock_now_ns();
	while (clock_now_ns() - t0 < CALIBRATE_NS)
		cpu_relax();
	uint32_t elapsed = 0xffffffffu - lapic_read(LAPIC_TIMER_CURRENT);
	lapic_write(LAPIC_TIMER_INITIAL, 0);
	timer_hz = (uint64_t)elapsed * NSEC_PER_SEC / CALIBRATE_NS;
	if (!timer_hz)
		return -EIO;
	lapic_write(LAPIC_LVT_TIMER, LVT_TIMER_ONESHOT | ARCH_VECTOR_TIMER);
	return 0;
}

/* Halt until until_ns (or sooner); returns the nanoseconds spent halted. */
uint64_t arch_idle(uint64_t until_ns)
{
	uint64_t now = clock_now_ns();

	if (!lapic || until_ns <= now)
		return 0;
	if (arch_prof.on) {
		/* sampling: the timer is the profiler's, interrupts are on; the next sample
		 * (at most one period away) ends the halt */
		__asm__ volatile("hlt" ::: "memory");
		uint64_t slept = clock_now_ns() - now;
		halts++;
		halted_ns += slept;
		return slept;
	}
	__asm__ volatile("cli");
	if (tsc_deadline_mode) {
		wrmsr(MSR_IA32_TSC_DEADLINE, arch_ns_to_tsc(until_ns));
	} else {
		uint64_t ticks = (until_ns - now) * timer_hz / NSEC_PER_SEC;
		lapic_write(LAPIC_TIMER_INITIAL, ticks ? (ticks > 0xffffffffu ? 0xffffffffu : (uint32_t)ticks) : 1);
	}
	/* sti's one-instruction shadow makes "sti; hlt" atomic: a timer that already
	 * fired is taken after hlt starts, so the halt cannot miss its wake-up. */
	__asm__ volatile("sti; hlt; cli" ::: "memory");
	if (tsc_deadline_mode)
		wrmsr(MSR_IA32_TSC_DEADLINE, 0);
	uint64_t slept = clock_now_ns() - now;
	halts++;
	halted_ns += slept;
	return slept;
}

/* Idle statistics. */
void arch_idle_stats(uint64_t *n_halts, uint64_t *ns_halted, const char **mode)
{
	*n_halts = halts;
	*ns_halted = halted_ns;
	*mode = !lapic ? "off (spinning)" : tsc_deadline_mode ? "LAPIC TSC-deadline" : "LAPIC one-shot";
}

/* --- the sampling profiler's timer (../prof.h) --- */

struct arch_prof arch_prof;
_Static_assert(offsetof(struct arch_prof, on) == ARCH_PROF_OFF_ON, "isr.S offsets");
_Static_assert(offsetof(struct arch_prof, head) == ARCH_PROF_OFF_HEAD, "isr.S offsets");
_Static_assert(offsetof(struct arch_prof, period) == ARCH_PROF_OFF_PERIOD, "isr.S offsets");
_Static_assert(offsetof(struct arch_prof, ring) == ARCH_PROF_OFF_RING, "isr.S offsets");

/* Start sampling into ring: the timer periodic at hz, interrupts on. */
int arch_prof_start(unsigned hz, uint64_t *ring)
{
	if (hz < ARCH_PROF_HZ_MIN || hz > ARCH_PROF_HZ_MAX || !ring)
		return -EINVAL;
	if (arch_prof.on)
		return -EBUSY;
	if (!lapic)
		return -ENODEV;
	__asm__ volatile("cli");
	arch_prof.head = 0;
	arch_prof.ring = ring;
	arch_prof.hz = hz;
	arch_prof.start_ns = clock_now_ns();
	arch_prof.stop_ns = 0;
	if (tsc_deadline_mode) {
		arch_prof.period = arch_counter_hz() / hz;
		arch_prof.on = 1;
		wrmsr(MSR_IA32_TSC_DEADLINE, rdtsc() + arch_prof.period);
	} else {
		uint64_t ticks = timer_hz / hz;
		arch_prof.period = 0;
		arch_prof.on = 1;
		lapic_write(LAPIC_LVT_TIMER, LVT_TIMER_PERIODIC | ARCH_VECTOR_TIMER);
		lapic_write(LAPIC_TIMER_INITIAL, ticks > 0xffffffffu ? 0xffffffffu : ticks ? (uint32_t)ticks : 1);
	}
	__asm__ volatile("sti" ::: "memory");
	return 0;
}

/* Stop sampling: interrupts off, the timer disarmed and back in its idle mode. */
void arch_prof_stop(void)
{
	if (!arch_prof.on)
		return;
	__asm__ volatile("cli" ::: "memory");
	arch_prof.on = 0;
	if (tsc_deadline_mode) {
		wrmsr(MSR_IA32_TSC_DEADLINE, 0);
	} else {
		lapic_write(LAPIC_TIMER_INITIAL, 0);
		lapic_write(LAPIC_LVT_TIMER, LVT_TIMER_ONESHOT | ARCH_VECTOR_TIMER);
	}
	arch_prof.ring = NULL;
	arch_prof.stop_ns = clock_now_ns();
}
