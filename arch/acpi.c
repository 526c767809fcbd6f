/*
 * acpi.c - finding ACPI tables from the RSDP (ACPI 6.x, 5.2.5 and 5.2.7/5.2.8).
 *
 * Tables are only read, and each is checked (signature, length, checksum) before it is
 * handed out. Shared by both architectures: the x86 PM timer (FADT), PCIe ECAM (MCFG)
 * for pci/, and on arm64 the generic timer (GTDT) and the GIC (MADT).
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include "acpi.h"

struct __attribute__((packed)) acpi_rsdp {
	char signature[8];     /* "RSD PTR " */
	uint8_t checksum;      /* first 20 bytes sum to 0 */
	char oem_id[6];
	uint8_t revision;      /* 0: ACPI 1.0 (RSDT only), 2: XSDT present */
	uint32_t rsdt_address;
	uint32_t length;
	uint64_t xsdt_address;
	uint8_t extended_checksum;
	uint8_t reserved[3];
};

struct __attribute__((packed)) acpi_header {
	char signature[4];
	uint32_t length;
	uint8_t revision;
	uint8_t checksum;
	char oem_id[6];
	char oem_table_id[8];
	uint32_t oem_revision;
	uint32_t creator_id;
	uint32_t creator_revision;
};

#define ACPI_TABLE_MAX_LEN (16u << 20)

static const struct acpi_header *root_table;
static int root_is_xsdt;

static int checksum_ok(const void *p, size_t len)
{
	const uint8_t *b = p;
	uint8_t sum = 0;
	for (size_t i = 0; i < len; i++)
		sum += b[i];
	return sum == 0;
}

static int table_ok(const struct acpi_header *h)
{
	return h && h->length >= sizeof(*h) && h->length <= ACPI_TABLE_MAX_LEN && checksum_ok(h, h->length);
}

/* Validate the RSDP and pick the XSDT (or the RSDT on ACPI 1.0). */
int acpi_init(uint64_t rsdp_phys)
{
	const struct acpi_rsdp *rsdp = (const struct acpi_rsdp *)(uintptr_t)rsdp_phys;

	if (!rsdp || memcmp(rsdp->signature, "RSD PTR ", 8) || !checksum_ok(rsdp, 20))
		return -EINVAL;
	if (rsdp->revision >= 2 && rsdp->xsdt_address && checksum_ok(rsdp, rsdp->length < sizeof(*rsdp) ? sizeof(*rsdp) : rsdp->length)) {
		root_table = (const struct acpi_header *)(uintptr_t)rsdp->xsdt_address;
		root_is_xsdt = 1;
	} else {
		root_table = (const struct acpi_header *)(uintptr_t)rsdp->rsdt_address;
		root_is_xsdt = 0;
	}
	if (!table_ok(root_table)) {
		root_table = NULL;
		return -EINVAL;
	}
	return 0;
}

/* Find a table by signature. */
const void *acpi_find_table(const char sig[4])
{
	if (!root_table)
		return NULL;
	size_t entry = root_is_xsdt ? 8 : 4;
	size_t count = (root_table->length - sizeof(*root_table)) / entry;
	const uint8_t *entries = (const uint8_t *)(root_table + 1);
	for (size_t i = 0; i < count; i++) {
		uint64_t addr = 0;
		memcpy(&addr, entries + i * entry, entry);
		const struct acpi_header *h = (const struct acpi_header *)(uintptr_t)addr;
		if (h && memcmp(h->signature, sig, 4) == 0 && table_ok(h))
			return h;
	}
	return NULL;
}
