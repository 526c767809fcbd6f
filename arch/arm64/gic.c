/*
 * gic.c - waiting for an interrupt while the appliance is idle, woken by the generic
 * timer through a GICv3.
 *
 * The appliance polls and keeps interrupts masked (PSTATE.I) for good. WFI still ends
 * when an interrupt is pending at the CPU interface, masked or not (ARM ARM D1.16.2), so
 * an idle wait is: program the virtual timer's compare value (CNTV_CVAL_EL0) for the
 * deadline, enable it, WFI, disable it. The interrupt is never acknowledged: disabling the
 * timer drops its level and with it the pending state. For the timer's PPI to reach the
 * CPU, this file enables it in the redistributor (group 1, a priority above the PMR) and
 * the CPU interface's group 1. The GIC's frames come from ACPI's MADT, the timer's
 * interrupt ID from the GTDT.
 */
#include <errno.h>
#include <string.h>
#include "../../lib/clock.h"
#include "../acpi.h"
#include "../cpu_ops.h"
#include "arch.h"

/* MADT (ACPI 6.x, 5.2.12) interrupt controller structures. */
#define MADT_FIRST_ENTRY 44
#define MADT_GICD 0x0c               /* GIC Distributor: base at 8, version at 20 */
#define MADT_GICR 0x0e               /* GIC Redistributor: discovery range base at 4, length at 12 */
#define MADT_GICD_BASE 8
#define MADT_GICD_VERSION 20
#define MADT_GICR_BASE 4
#define MADT_GICR_LENGTH 12
#define GTDT_VIRTUAL_TIMER_GSIV 64   /* GTDT (5.2.24): Virtual EL1 Timer GSIV */
#define TIMER_PPI_DEFAULT 27         /* the SBSA's virtual timer PPI */

/* GICv3 registers (GIC architecture spec IHI 0069, 12.8-12.11). */
#define GICD_CTLR 0x0000
#define GICD_CTLR_RWP (1u << 31)      /* register write pending */
#define GICD_CTLR_ARE (1u << 4)       /* affinity routing (ARE_NS in the non-secure view) */
#define GICD_CTLR_GRP1 (3u << 0)      /* EnableGrp1 / EnableGrp1NS, whichever view this is */
#define GICR_FRAME_SIZE 0x20000       /* RD_base + SGI_base, 64 KiB each */
#define GICR_TYPER 0x0008
#define GICR_TYPER_LAST (1ull << 4)
#define GICR_WAKER 0x0014
#define GICR_WAKER_PROCESSOR_SLEEP (1u << 1)
#define GICR_WAKER_CHILDREN_ASLEEP (1u << 2)
#define GICR_SGI_BASE 0x10000
#define GICR_IGROUPR0 0x0080
#define GICR_ISENABLER0 0x0100
#define GICR_IPRIORITYR 0x0400
#define TIMER_PRIORITY 0x80
#define GIC_SPIN 1000000

/* CNTV_CTL_EL0 bits. */
#define CNTV_CTL_ENABLE (1u << 0)
#define CNTV_CTL_IMASK (1u << 1)

static uint64_t gicd_base, gicr_range, gicr_range_size;
static int madt_parsed;
static volatile uint8_t *gicr_rd;   /* this CPU's redistributor, once set up */
static unsigned timer_intid;
static uint64_t halts, halted_ns;

static inline uint32_t rd32(volatile uint8_t *base, unsigned off)
{
	return *(volatile uint32_t *)(base + off);
}

static inline void wr32(volatile uint8_t *base, unsigned off, uint32_t v)
{
	*(volatile uint32_t *)(base + off) = v;
}

static void madt_parse(void)
{
	const uint8_t *madt = acpi_find_table("APIC");
	uint32_t len;

	madt_parsed = 1;
	if (!madt)
		return;
	memcpy(&len, madt + 4, 4);
	for (uint32_t off = MADT_FIRST_ENTRY; off + 2 <= len;) {
		uint8_t type = madt[off], elen = madt[off + 1];
		if (elen < 2 || elen > len - off)
			break;
		if (type == MADT_GICD && elen >= MADT_GICD_VERSION + 1) {
			memcpy(&gicd_base, madt + off + MADT_GICD_BASE, 8);
			if (madt[off + MADT_GICD_VERSION] != 0 && madt[off + MADT_GICD_VERSION] < 3)
				gicd_base = 0; /* a GICv2: no redistributors, not driven here */
		} else if (type == MADT_GICR && elen >= MADT_GICR_LENGTH + 4) {
			uint32_t rlen;
			memcpy(&gicr_range, madt + off + MADT_GICR_BASE, 8);
			memcpy(&rlen, madt + off + MADT_GICR_LENGTH, 4);
			gicr_range_size = rlen;
		}
		off += elen;
	}
}

/* The GIC's frames from the MADT (0 when absent). */
void arm64_gic_regions(uint64_t *gicd, uint64_t *gicr, uint64_t *gicr_size)
{
	if (!madt_parsed)
		madt_parse();
	*gicd = gicd_base;
	*gicr = gicd_base ? gicr_range : 0;
	*gicr_size = gicd_base ? gicr_range_size : 0;
}

/* This CPU's redistributor: the frame whose GICR_TYPER affinity matches MPIDR_EL1. */
static volatile uint8_t *find_redistributor(void)
{
	uint64_t mpidr = ARCH_READ_SYSREG(mpidr_el1);
	uint32_t aff = (uint32_t)(((mpidr >> 32) & 0xff) << 24 | (mpidr & 0xffffff));

	for (uint64_t off = 0; off + GICR_FRAME_SIZE <= gicr_range_size; off += GICR_FRAME_SIZE) {
		volatile uint8_t *rd = (volatile uint8_t *)(uintptr_t)(gicr_range + off);
		uint64_t typer = *(volatile uint64_t *)(rd + GICR_TYPER);
		if ((uint32_t)(typer >> 32) == aff)
			return rd;
		if (typer & GICR_TYPER_LAST)
			break;
	}
	return NULL;
}

/* Set up the GIC for idle waits. */
int arch_idle_init(void)
{
	uint64_t gicd, gicr, size;
	const uint8_t *gtdt = acpi_find_table("GTDT");
	volatile uint8_t *dist, *rd, *sgi;
	unsigned spin;

	arm64_gic_regions(&gicd, &gicr, &size);
	if (!gicd || !gicr || !size || !arch_counter_hz())
		return -ENODEV;
	timer_intid = TIMER_PPI_DEFAULT;
	if (gtdt) {
		uint32_t len, gsiv;
		memcpy(&len, gtdt + 4, 4);
		if (len >= GTDT_VIRTUAL_TIMER_GSIV + 4) {
			memcpy(&gsiv, gtdt + GTDT_VIRTUAL_TIMER_GSIV, 4);
			if (gsiv >= 16 && gsiv < 32)
				timer_intid = gsiv;
		}
	}
	dist = (volatile uint8_t *)(uintptr_t)gicd;
	rd = find_redistributor();
	if (!rd)
		return -ENODEV;
	sgi = rd + GICR_SGI_BASE;

	/* the CPU's redistributor awake, the timer's PPI in group 1, enabled */
	wr32(rd, GICR_WAKER, rd32(rd, GICR_WAKER) & ~GICR_WAKER_PROCESSOR_SLEEP);
	for (spin = 0; (rd32(rd, GICR_WAKER) & GICR_WAKER_CHILDREN_ASLEEP) && spin < GIC_SPIN; spin++)
		arch_cpu_relax();
	if (spin == GIC_SPIN)
		return -EIO;
	wr32(sgi, GICR_IGROUPR0, rd32(sgi, GICR_IGROUPR0) | (1u << timer_intid));
	sgi[GICR_IPRIORITYR + timer_intid] = TIMER_PRIORITY;
	wr32(sgi, GICR_ISENABLER0, 1u << timer_intid);
	/* the distributor forwarding group 1 with affinity routing */
	wr32(dist, GICD_CTLR, rd32(dist, GICD_CTLR) | GICD_CTLR_ARE | GICD_CTLR_GRP1);
	for (spin = 0; (rd32(dist, GICD_CTLR) & GICD_CTLR_RWP) && spin < GIC_SPIN; spin++)
		arch_cpu_relax();
	/* the CPU interface through system registers: SRE, every priority, group 1 on */
	ARCH_WRITE_SYSREG(S3_0_C12_C12_5, ARCH_READ_SYSREG(S3_0_C12_C12_5) | 1); /* ICC_SRE_EL1.SRE */
	__asm__ volatile("isb");
	ARCH_WRITE_SYSREG(S3_0_C4_C6_0, 0xff);  /* ICC_PMR_EL1 */
	ARCH_WRITE_SYSREG(S3_0_C12_C12_7, 1);   /* ICC_IGRPEN1_EL1 */
	__asm__ volatile("isb");
	ARCH_WRITE_SYSREG(cntv_ctl_el0, CNTV_CTL_IMASK);
	gicr_rd = rd;
	return 0;
}

/* Wait until until_ns (or sooner); returns the nanoseconds spent waiting. */
uint64_t arch_idle(uint64_t until_ns)
{
	uint64_t now = clock_now_ns();

	if (!gicr_rd || until_ns <= now)
		return 0;
	ARCH_WRITE_SYSREG(cntv_cval_el0, arch_ns_to_counter(until_ns));
	ARCH_WRITE_SYSREG(cntv_ctl_el0, CNTV_CTL_ENABLE);
	__asm__ volatile("isb; wfi" ::: "memory");
	ARCH_WRITE_SYSREG(cntv_ctl_el0, CNTV_CTL_IMASK);
	__asm__ volatile("isb" ::: "memory");
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
	*mode = gicr_rd ? "GICv3 virtual-timer WFI" : "off (spinning)";
}
