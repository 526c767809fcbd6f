// sources: pci/ecam.c
/*
 * ECAM accessor bounds (bus outside the MCFG range, offsets past 4 KiB, misalignment) and
 * MCFG parsing (good tables, short tables, lengths that lie, unusable entries).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "pci/pci.h"

static struct pci_ecam e;

static void setup(void)
{
	memset(&e, 0, sizeof(e));
	e.bus_start = 4;
	e.bus_end = 5;
	e.size = 2u << 20;
	e.base = calloc(1, e.size);
}

static void teardown(void)
{
	free((void *)e.base);
}

TestSuite(ecam, .init = setup, .fini = teardown);

Test(ecam, address_layout)
{
	uint32_t v;
	cr_assert_eq(pci_ecam_ops.write(&e, PCI_BDF(5, 3, 2), 0x104, 4, 0xdeadbeef), 0);
	uint8_t *p = (uint8_t *)e.base + (1u << 20) + (3u << 15) + (2u << 12) + 0x104;
	cr_assert_eq(*(uint32_t *)p, 0xdeadbeef);
	cr_assert_eq(pci_ecam_ops.read(&e, PCI_BDF(5, 3, 2), 0x106, 2, &v), 0);
	cr_assert_eq(v, 0xdead);
	cr_assert_eq(pci_ecam_ops.read(&e, PCI_BDF(5, 3, 2), 0x107, 1, &v), 0);
	cr_assert_eq(v, 0xde);
}

Test(ecam, bounds)
{
	uint32_t v = 0;
	cr_assert_eq(pci_ecam_ops.read(&e, PCI_BDF(3, 0, 0), 0, 4, &v), -ERANGE, "bus below the window");
	cr_assert_eq(v, 0xffffffffu);
	cr_assert_eq(pci_ecam_ops.read(&e, PCI_BDF(6, 0, 0), 0, 4, &v), -ERANGE, "bus above the window");
	cr_assert_eq(pci_ecam_ops.write(&e, PCI_BDF(255, 31, 7), 0xffc, 4, 1), -ERANGE);
	cr_assert_eq(pci_ecam_ops.read(&e, PCI_BDF(4, 0, 0), 0x1000, 1, &v), -EINVAL, "past 4 KiB");
	cr_assert_eq(pci_ecam_ops.read(&e, PCI_BDF(4, 0, 0), 0xffe, 4, &v), -EINVAL, "straddles the end");
	cr_assert_eq(pci_ecam_ops.read(&e, PCI_BDF(4, 0, 0), 0x2, 4, &v), -EINVAL, "misaligned");
	cr_assert_eq(pci_ecam_ops.read(&e, PCI_BDF(4, 0, 0), 0x0, 3, &v), -EINVAL, "odd width");
	cr_assert_eq(pci_ecam_ops.read(&e, PCI_BDF(5, 31, 7), 0xffc, 4, &v), 0, "last dword is fine");
	cr_assert_eq(e.rejected, 7);
}

Test(ecam, window_smaller_than_its_bus_range)
{
	uint32_t v;
	e.size = 1u << 20; /* claims buses 4-5 but maps only bus 4 */
	cr_assert_eq(pci_ecam_ops.read(&e, PCI_BDF(5, 0, 0), 0, 4, &v), -ERANGE);
}

static size_t mcfg(uint8_t *t, unsigned entries, uint32_t claimed_len)
{
	size_t len = 44 + 16 * entries;
	memset(t, 0, len);
	memcpy(t, "MCFG", 4);
	uint32_t l = claimed_len ? claimed_len : (uint32_t)len;
	memcpy(t + 4, &l, 4);
	for (unsigned i = 0; i < entries; i++) {
		uint64_t base = 0xb0000000ull + ((uint64_t)i << 28);
		memcpy(t + 44 + 16 * i, &base, 8);
		t[44 + 16 * i + 8] = (uint8_t)i;  /* segment */
		t[44 + 16 * i + 10] = 0;          /* start bus */
		t[44 + 16 * i + 11] = 0xff;       /* end bus */
	}
	return len;
}

Test(ecam, mcfg_parse)
{
	uint8_t t[256];
	struct pci_mcfg_alloc a[4];
	size_t len = mcfg(t, 2, 0);
	cr_assert_eq(pci_mcfg_parse(t, len, a, 4), 2);
	cr_assert_eq(a[0].base, 0xb0000000ull);
	cr_assert_eq(a[0].bus_end, 255);
	cr_assert_eq(a[1].segment, 1);
	cr_assert_eq(pci_mcfg_parse(t, len, a, 1), 1, "bounded by max");
}

Test(ecam, mcfg_lies)
{
	uint8_t t[256];
	struct pci_mcfg_alloc a[4];
	size_t len = mcfg(t, 2, 0);
	cr_assert_eq(pci_mcfg_parse(t, 40, a, 4), -EINVAL, "shorter than the header");
	cr_assert_eq(pci_mcfg_parse(t, len - 1, a, 4), -EINVAL, "length field longer than the table");
	mcfg(t, 2, 44 + 16 + 8);
	cr_assert_eq(pci_mcfg_parse(t, len, a, 4), 1, "a partial trailing entry is ignored");
	mcfg(t, 2, 0);
	t[44 + 10] = 9; /* start bus > end bus? no: end is 0xff; make end < start */
	t[44 + 11] = 3;
	memset(t + 44 + 16, 0, 8); /* second entry: zero base */
	cr_assert_eq(pci_mcfg_parse(t, len, a, 4), 0);
	memcpy(t, "APIC", 4);
	cr_assert_eq(pci_mcfg_parse(t, len, a, 4), -EINVAL);
	cr_assert_eq(pci_mcfg_parse(NULL, len, a, 4), -EINVAL);
}
