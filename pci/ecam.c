/*
 * ecam.c - PCIe enhanced configuration access (ECAM) and the ACPI MCFG table that
 * describes it (PCIe 5.0 7.2.2, PCI Firmware 3.2 4.1.2).
 *
 * Every access is bounds-checked before an address is formed: the bus must be one the
 * window decodes, the offset inside the function's 4 KiB and naturally aligned. A
 * refused access reads as all ones (what an absent function returns) and is counted.
 */
#include <errno.h>
#include <string.h>
#include "../lib/byteorder.h"
#include "pci.h"

#define MCFG_HEADER_LEN 44u /* ACPI header (36) + 8 reserved bytes */
#define ACPI_HDR_LENGTH 4u  /* ACPI table header: Length (4), the whole table in bytes */

/* MCFG configuration space base address allocation (PCI Firmware Specification 3.2,
 * table 4-3). */
struct mcfg_entry {
	le64_t base;         /* Base Address of the enhanced configuration mechanism */
	le16_t segment;      /* PCI Segment Group Number */
	uint8_t bus_start;   /* Start Bus Number */
	uint8_t bus_end;     /* End Bus Number */
	uint8_t rsvd[4];
} __attribute__((packed));
_Static_assert(sizeof(struct mcfg_entry) == 16, "MCFG allocation entry is 16 bytes");
#define MCFG_ENTRY_LEN ((uint32_t)sizeof(struct mcfg_entry))
#define ECAM_BUS_SHIFT 20
#define ECAM_DEVFN_SHIFT 12

/* The byte offset of (bdf, off) inside the window, or -errno. */
static int64_t ecam_offset(struct pci_ecam *e, uint16_t bdf, uint16_t off, unsigned width)
{
	unsigned bus = PCI_BDF_BUS(bdf);

	if ((width != 1 && width != 2 && width != 4) || (off & (width - 1)) || off > PCI_CFG_SIZE - width) {
		e->rejected++;
		return -EINVAL;
	}
	if (bus < e->bus_start || bus > e->bus_end) {
		e->rejected++;
		return -ERANGE;
	}
	uint64_t o = ((uint64_t)(bus - e->bus_start) << ECAM_BUS_SHIFT) |
		     ((uint64_t)(bdf & 0xff) << ECAM_DEVFN_SHIFT) | off;
	if (o > e->size - width) {
		e->rejected++;
		return -ERANGE;
	}
	return (int64_t)o;
}

static int ecam_read(void *ctx, uint16_t bdf, uint16_t off, unsigned width, uint32_t *val)
{
	struct pci_ecam *e = ctx;
	int64_t o = ecam_offset(e, bdf, off, width);

	if (o < 0) {
		*val = 0xffffffffu;
		return (int)o;
	}
	volatile uint8_t *p = e->base + o;
	switch (width) {
	case 1:
		*val = *p;
		break;
	case 2:
		*val = *(volatile uint16_t *)p;
		break;
	default:
		*val = *(volatile uint32_t *)p;
		break;
	}
	return 0;
}

static int ecam_write(void *ctx, uint16_t bdf, uint16_t off, unsigned width, uint32_t val)
{
	struct pci_ecam *e = ctx;
	int64_t o = ecam_offset(e, bdf, off, width);

	if (o < 0)
		return (int)o;
	volatile uint8_t *p = e->base + o;
	switch (width) {
	case 1:
		*p = (uint8_t)val;
		break;
	case 2:
		*(volatile uint16_t *)p = (uint16_t)val;
		break;
	default:
		*(volatile uint32_t *)p = val;
		break;
	}
	return 0;
}

const struct pci_cfg_ops pci_ecam_ops = { ecam_read, ecam_write };

/* Point a cfg at an ECAM window. */
void pci_ecam_cfg(struct pci_cfg *cfg, struct pci_ecam *ecam)
{
	cfg->ops = &pci_ecam_ops;
	cfg->ctx = ecam;
	cfg->segment = ecam->segment;
	cfg->bus_start = ecam->bus_start;
	cfg->bus_end = ecam->bus_end;
}

/* Parse MCFG. */
int pci_mcfg_parse(const void *table, size_t len, struct pci_mcfg_alloc *out, unsigned max)
{
	const uint8_t *t = table;
	uint32_t tlen;
	unsigned n = 0;

	if (!t || len < MCFG_HEADER_LEN || memcmp(t, "MCFG", 4) != 0)
		return -EINVAL;
	tlen = le32_load(t + ACPI_HDR_LENGTH);
	if (tlen < MCFG_HEADER_LEN || tlen > len)
		return -EINVAL;
	for (size_t off = MCFG_HEADER_LEN; tlen - off >= MCFG_ENTRY_LEN && n < max; off += MCFG_ENTRY_LEN) {
		struct mcfg_entry e;
		memcpy(&e, t + off, sizeof(e));
		struct pci_mcfg_alloc a = {
			.base = le64_get(e.base),
			.segment = le16_get(e.segment),
			.bus_start = e.bus_start,
			.bus_end = e.bus_end,
		};
		if (a.base == 0 || a.bus_end < a.bus_start)
			continue;
		out[n++] = a;
	}
	return (int)n;
}
