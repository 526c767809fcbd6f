/*
 * clock.c - the TSC as the appliance's clock, calibrated against a fixed-rate timer.
 *
 * The reference is the ACPI PM timer (3.579545 MHz, its I/O port from the FADT), or the
 * PIT's channel 2 (1.193182 MHz) on machines without one. Nanoseconds are derived with
 * a 32.32 fixed-point multiplier, so reading the clock never divides.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include "../../lib/clock.h"
#include "../acpi.h"
#include "arch.h"
#include "cpu.h"

#define PM_TIMER_HZ 3579545ull
#define PIT_HZ 1193182ull
#define CALIBRATE_MS 50ull

/* FADT offsets (ACPI 6.x, 5.2.9). */
#define FADT_PM_TMR_BLK 76
#define FADT_FLAGS 112
#define FADT_X_PM_TMR_BLK 208
#define FADT_FLAG_TMR_VAL_EXT (1u << 8)  /* 32-bit PM timer (else 24-bit) */
#define GAS_SPACE_IO 1

static uint64_t tsc_hz;
static uint64_t tsc_epoch;
static uint64_t ns_mult; /* ns per TSC tick, 32.32 fixed point */
static uint64_t tsc_mult; /* TSC ticks per ns, 32.32 fixed point */
static const char *reference = "none";

static uint64_t tsc_clock_ns(void)
{
	uint64_t ticks = rdtsc() - tsc_epoch;
	return (uint64_t)(((unsigned __int128)ticks * ns_mult) >> 32);
}

/* PM timer port from the FADT (X_PM_TMR_BLK when it is an I/O address), or 0. */
static uint16_t pm_timer_port(uint32_t *mask)
{
	const uint8_t *fadt = acpi_find_table("FACP");
	uint32_t len, port = 0, flags = 0;

	if (!fadt)
		return 0;
	memcpy(&len, fadt + 4, 4);
	if (len >= FADT_X_PM_TMR_BLK + 12 && fadt[FADT_X_PM_TMR_BLK] == GAS_SPACE_IO) {
		uint64_t addr;
		memcpy(&addr, fadt + FADT_X_PM_TMR_BLK + 4, 8);
		port = (uint32_t)addr;
	}
	if (!port && len >= FADT_PM_TMR_BLK + 4)
		memcpy(&port, fadt + FADT_PM_TMR_BLK, 4);
	if (len >= FADT_FLAGS + 4)
		memcpy(&flags, fadt + FADT_FLAGS, 4);
	*mask = (flags & FADT_FLAG_TMR_VAL_EXT) ? 0xffffffffu : 0xffffffu;
	return port <= 0xffff ? (uint16_t)port : 0;
}

/* TSC ticks over CALIBRATE_MS of the PM timer; 0 if the timer does not move. */
static uint64_t calibrate_pm(uint16_t port, uint32_t mask)
{
	const uint64_t want = PM_TIMER_HZ * CALIBRATE_MS / 1000;
	uint32_t start = inl(port) & mask;
	uint64_t t0 = rdtsc(), elapsed = 0;
	unsigned stuck = 0;
	uint32_t prev = start;

	while (elapsed < want) {
		uint32_t now = inl(port) & mask;
		if (now == prev && ++stuck > 10000000)
			return 0;
		prev = now;
		elapsed = (now - start) & mask;
	}
	uint64_t t1 = rdtsc();
	return (t1 - t0) * PM_TIMER_HZ / elapsed;
}

/* TSC frequency from a PIT channel 2 one-shot of CALIBRATE_MS; 0 on failure. */
static uint64_t calibrate_pit(void)
{
	const uint32_t count = (uint32_t)(PIT_HZ * CALIBRATE_MS / 1000);
	uint8_t ctl = inb(0x61);

	outb(0x61, (ctl & ~0x02) | 0x01); /* gate channel 2 on, speaker off */
	outb(0x43, 0xb0);                 /* channel 2, lobyte/hibyte, mode 0 */
	outb(0x42, count & 0xff);
	outb(0x42, count >> 8);
	uint64_t t0 = rdtsc();
	unsigned long spin = 0;
	while (!(inb(0x61) & 0x20)) {     /* OUT2 rises at terminal count */
		if (++spin > 100000000ul)
			return 0;
	}
	uint64_t t1 = rdtsc();
	outb(0x61, ctl);
	return (t1 - t0) * 1000 / CALIBRATE_MS;
}

/* Calibrate and install the clock. */
int arch_clock_init(uint64_t epoch_tsc)
{
	uint32_t mask = 0;
	uint16_t port = pm_timer_port(&mask);

	if (port && (tsc_hz = calibrate_pm(port, mask)) != 0) {
		reference = "ACPI PM timer";
	} else if ((tsc_hz = calibrate_pit()) != 0) {
		reference = "PIT channel 2";
	} else {
		return -EIO;
	}
	tsc_epoch = epoch_tsc;
	ns_mult = (uint64_t)((NSEC_PER_SEC << 32) / tsc_hz);
	tsc_mult = (uint64_t)(((unsigned __int128)tsc_hz << 32) / NSEC_PER_SEC);
	clock_set_source(tsc_clock_ns);
	return 0;
}

/* Counter (TSC) frequency. */
uint64_t arch_counter_hz(void)
{
	return tsc_hz;
}

/* The TSC value for a clock reading. */
uint64_t arch_ns_to_tsc(uint64_t ns)
{
	return tsc_epoch + (uint64_t)(((unsigned __int128)ns * tsc_mult) >> 32);
}

/* Calibration reference. */
const char *arch_clock_reference(void)
{
	return reference;
}
