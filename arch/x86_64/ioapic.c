/*
 * ioapic.c - one legacy (ISA) interrupt routed through the I/O APIC to a local APIC
 * vector: the serial console's receive interrupt as a wake-up for the idle loop.
 *
 * ACPI's MADT (ACPI 6.x, 5.2.12) lists the I/O APICs (type 1: address, first GSI) and the
 * Interrupt Source Overrides (type 2: an ISA IRQ wired to another GSI, with its polarity
 * and trigger mode). The I/O APIC's redirection entry for that GSI (82093AA datasheet,
 * 3.2.4: IOREDTBL) names the vector, fixed delivery to this CPU's APIC ID, and the pin's
 * polarity and trigger; ISA interrupts default to active-high, edge-triggered.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include "../acpi.h"
#include "arch.h"
#include "cpu.h"

#define MADT_FIRST_ENTRY 44
#define MADT_IOAPIC 1                 /* I/O APIC: id at 2, address at 4, GSI base at 8 */
#define MADT_ISO 2                    /* Interrupt Source Override: bus 2, source 3, GSI 4, flags 8 */
#define ISO_POLARITY_MASK 0x3u        /* MPS INTI flags: 01 high, 11 low, 00 bus default */
#define ISO_POLARITY_LOW 0x3u
#define ISO_TRIGGER_MASK 0xcu         /* 01 edge, 11 level, 00 bus default */
#define ISO_TRIGGER_LEVEL 0xcu

#define IOAPIC_REGSEL 0x00
#define IOAPIC_WIN 0x10
#define IOAPIC_VER 0x01               /* bits 23:16: maximum redirection entry */
#define IOAPIC_REDTBL(n) (0x10 + 2 * (n))
#define REDTBL_POLARITY_LOW (1u << 13)
#define REDTBL_TRIGGER_LEVEL (1u << 15)
#define REDTBL_MASKED (1u << 16)
#define REDTBL_DEST_SHIFT 24          /* in the high dword: destination APIC ID */

static uint32_t le32_at(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint32_t ioapic_read(volatile uint32_t *io, unsigned reg)
{
	io[IOAPIC_REGSEL / 4] = reg;
	return io[IOAPIC_WIN / 4];
}

static void ioapic_write(volatile uint32_t *io, unsigned reg, uint32_t v)
{
	io[IOAPIC_REGSEL / 4] = reg;
	io[IOAPIC_WIN / 4] = v;
}

/* Route ISA IRQ isa_irq to vector on this CPU. */
int arch_ioapic_route_isa(unsigned isa_irq, unsigned vector)
{
	const uint8_t *madt = acpi_find_table("APIC");
	uint32_t gsi = isa_irq, flags = 0, len;
	uint64_t io_addr = 0;
	uint32_t io_base = 0, id[4];
	bool found = false;

	if (!madt)
		return -ENODEV;
	len = le32_at(madt + 4);
	/* the override first: it decides which GSI (and so which I/O APIC) */
	for (uint32_t off = MADT_FIRST_ENTRY; off + 2 <= len && madt[off + 1] >= 2 && madt[off + 1] <= len - off;
	     off += madt[off + 1]) {
		const uint8_t *e = madt + off;
		if (e[0] == MADT_ISO && e[1] >= 10 && e[2] == 0 && e[3] == isa_irq) {
			gsi = le32_at(e + 4);
			flags = (uint32_t)e[8] | (uint32_t)e[9] << 8;
		}
	}
	for (uint32_t off = MADT_FIRST_ENTRY; off + 2 <= len && madt[off + 1] >= 2 && madt[off + 1] <= len - off;
	     off += madt[off + 1]) {
		const uint8_t *e = madt + off;
		if (e[0] != MADT_IOAPIC || e[1] < 12)
			continue;
		uint32_t base = le32_at(e + 8);
		if (gsi >= base && (!found || base > io_base)) {
			io_addr = le32_at(e + 4);
			io_base = base;
			found = true;
		}
	}
	if (!found)
		return -ENODEV;
	if (arch_map(io_addr, 4096, ARCH_CACHE_UC))
		return -ENOMEM;
	volatile uint32_t *io = (volatile uint32_t *)(uintptr_t)io_addr;
	unsigned pin = gsi - io_base;
	if (pin > (ioapic_read(io, IOAPIC_VER) >> 16 & 0xff))
		return -ENODEV;
	uint32_t lo = vector & 0xff;
	if ((flags & ISO_POLARITY_MASK) == ISO_POLARITY_LOW)
		lo |= REDTBL_POLARITY_LOW;
	if ((flags & ISO_TRIGGER_MASK) == ISO_TRIGGER_LEVEL)
		lo |= REDTBL_TRIGGER_LEVEL;
	cpuid(1, 0, id);
	ioapic_write(io, IOAPIC_REDTBL(pin), REDTBL_MASKED);
	ioapic_write(io, IOAPIC_REDTBL(pin) + 1, (id[1] >> 24) << REDTBL_DEST_SHIFT);
	ioapic_write(io, IOAPIC_REDTBL(pin), lo);
	return 0;
}
