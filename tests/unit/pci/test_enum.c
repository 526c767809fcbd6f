// sources: pci/enum.c pci/ecam.c pci/acs.c pci/route.c pci/p2pdma.c pci/driver.c lib/log.c mm/pool.c tests/unit/pci/fake_cfg.c
/*
 * Enumeration on synthetic segments: the tree, capabilities, links, BAR sizing with decode
 * off and restored, windows, validation, placement of unassigned BARs, mapping, and config
 * spaces that lie (capability loops, garbage sizing, bus numbers outside the ECAM window,
 * two bridges claiming one bus) handled without hangs or out-of-bounds access.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>
#include "tests/unit/pci/fake_cfg.h"
#include "tests/unit/unit_support.h"

TestSuite(pci_enum, .init = unit_pools_begin, .fini = unit_pools_end);

static struct fake f;

struct map_call {
	uint64_t phys, size;
	int cache;
};
static struct map_call maps[64];
static unsigned nmaps;

static int record_map(uint64_t phys, uint64_t size, int cache)
{
	if (nmaps < 64)
		maps[nmaps++] = (struct map_call){ phys, size, cache };
	return 0;
}

Test(pci_enum, reference_tree_in_depth_first_order)
{
	fake_init(&f, 0, 8);
	fake_reference(&f);
	cr_assert_eq(pci_enumerate(f.topo), 12);
	static const uint16_t order[] = { BDF(0, 0, 0), BDF(0, 0x1c, 0), BDF(1, 0, 0), BDF(2, 0, 0), BDF(3, 0, 0),
					  BDF(2, 1, 0), BDF(4, 0, 0), BDF(2, 2, 0), BDF(5, 0, 0), BDF(5, 0, 1),
					  BDF(0, 0x1d, 0) };
	for (unsigned i = 0; i < sizeof(order) / sizeof(order[0]); i++)
		cr_assert_eq(f.topo->devs[i].bdf, order[i], "entry %u", i);
	struct pci_dev *nic1 = pci_find(f.topo, BDF(5, 0, 1));
	cr_assert_not_null(nic1, "function 1 of a multi-function device is found");
	cr_assert_eq(nic1->parent->bdf, BDF(2, 2, 0));
	cr_assert_eq(nic1->depth, 3);
	cr_assert_eq(pci_find(f.topo, BDF(1, 0, 0))->parent->bdf, BDF(0, 0x1c, 0));
	cr_assert_null(pci_find(f.topo, BDF(0, 0x1c, 0))->parent, "root ports sit on the root bus");
	cr_assert_eq(f.topo->anomalies, 0);
	fake_free(&f);
}

Test(pci_enum, capabilities_link_and_acs)
{
	fake_init(&f, 0, 8);
	fake_reference(&f);
	pci_enumerate(f.topo);
	struct pci_dev *rp = pci_find(f.topo, BDF(0, 0x1c, 0));
	cr_assert_eq(rp->exp_off, FAKE_PCIE_CAP);
	cr_assert_eq(rp->exp_type, PCI_EXP_TYPE_ROOT_PORT);
	cr_assert_eq(rp->link_width, 4);
	cr_assert_eq(pci_link_speed_x10(rp->link_speed), 80);
	cr_assert_eq(rp->acs_off, FAKE_ACS_CAP);
	cr_assert_eq(rp->acs_cap, 0x5f);
	cr_assert_eq(pci_find_cap(rp, PCI_EXT_CAP_ID_ACS, true), FAKE_ACS_CAP);
	cr_assert_eq(pci_find(f.topo, BDF(1, 0, 0))->acs_off, 0, "the upstream port has no ACS");
	cr_assert_eq(pci_find(f.topo, BDF(2, 0, 0))->exp_type, PCI_EXP_TYPE_DOWNSTREAM);
	fake_free(&f);
}

Test(pci_enum, bars_sized_with_decode_off_and_restored)
{
	fake_init(&f, 0, 8);
	fake_reference(&f);
	uint16_t nvme = BDF(3, 0, 0);
	uint32_t bar2_lo = fake_r32(&f, nvme, 0x18), bar2_hi = fake_r32(&f, nvme, 0x1c);
	f.topo->map = record_map;
	nmaps = 0;
	pci_enumerate(f.topo);
	struct pci_dev *d = pci_find(f.topo, nvme);
	cr_assert_eq(d->bars[0].kind, PCI_BAR_KIND_MEM64);
	cr_assert_eq(d->bars[0].size, 0x4000);
	cr_assert_eq(d->bars[0].addr, 0xc0000000);
	cr_assert_eq(d->bars[1].size, 0, "the upper half of BAR0 is not a BAR");
	cr_assert_eq(d->bars[2].size, 64 << 20);
	cr_assert(d->bars[2].prefetch);
	cr_assert_eq(d->bars[2].addr, 0xe000000000ull);
	cr_assert_eq(fake_r32(&f, nvme, 0x18), bar2_lo, "BAR restored");
	cr_assert_eq(fake_r32(&f, nvme, 0x1c), bar2_hi);
	cr_assert_eq(fake_r16(&f, nvme, PCI_COMMAND), PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER, "command restored");
	/* every memory BAR mapped uncached (2) */
	int found = 0;
	for (unsigned i = 0; i < nmaps; i++) {
		cr_assert_eq(maps[i].cache, 2);
		if (maps[i].phys == 0xe000000000ull && maps[i].size == 64 << 20)
			found = 1;
	}
	cr_assert(found, "the CMB BAR was mapped");
	cr_assert_eq(d->bars[2].cache, 2);
	fake_free(&f);
}

/* A config accessor that records the command register value at each BAR write. */
static struct fake *spy_f;
static int decode_on_during_sizing;
static int spy_read(void *ctx, uint16_t bdf, uint16_t off, unsigned w, uint32_t *v)
{
	return pci_ecam_ops.read(&((struct fake *)ctx)->ecam, bdf, off, w, v);
}
static const struct pci_cfg_ops *inner;
static int spy_write(void *ctx, uint16_t bdf, uint16_t off, unsigned w, uint32_t v)
{
	if (w == 4 && v == 0xffffffffu && off >= PCI_BAR0 && off < PCI_BAR0 + 24 &&
	    (fake_r16(spy_f, bdf, PCI_COMMAND) & (PCI_COMMAND_MEMORY | PCI_COMMAND_IO)))
		decode_on_during_sizing++;
	return inner->write(ctx, bdf, off, w, v);
}

Test(pci_enum, decode_is_off_while_a_bar_holds_all_ones)
{
	static struct pci_cfg_ops spy = { spy_read, spy_write };
	fake_init(&f, 0, 8);
	fake_reference(&f);
	spy_f = &f;
	inner = f.topo->cfg.ops;
	f.topo->cfg.ops = &spy;
	decode_on_during_sizing = 0;
	pci_enumerate(f.topo);
	cr_assert_eq(decode_on_during_sizing, 0);
	cr_assert_eq(fake_r16(&f, BDF(4, 0, 0), PCI_COMMAND), PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER);
	fake_free(&f);
}

Test(pci_enum, bar_outside_the_bridge_window_is_flagged_and_not_mapped)
{
	fake_init(&f, 0, 8);
	fake_reference(&f);
	fake_bar(&f, BDF(4, 0, 0), 0, 0x4000, 0, 1, 0, 0xd0000000); /* not in 02:01.0's c0200000-c03fffff */
	f.topo->map = record_map;
	nmaps = 0;
	pci_enumerate(f.topo);
	struct pci_dev *d = pci_find(f.topo, BDF(4, 0, 0));
	cr_assert(d->bars[0].state == PCI_BAR_OUTSIDE_WINDOW);
	cr_assert_eq(d->anomalies, 1);
	for (unsigned i = 0; i < nmaps; i++)
		cr_assert_neq(maps[i].phys, 0xd0000000ull);
	cr_assert_eq(pci_bar_map(d, 0, 1), -EINVAL);
	fake_free(&f);
}

Test(pci_enum, unassigned_bars_are_placed_in_the_window)
{
	fake_init(&f, 0, 8);
	fake_reference(&f);
	/* NVMe B: registers and CMB left at 0 by "firmware" */
	fake_bar(&f, BDF(4, 0, 0), 0, 0x4000, 0, 1, 0, 0);
	fake_bar(&f, BDF(4, 0, 0), 2, 64 << 20, 0, 1, 1, 0);
	fake_w16(&f, BDF(4, 0, 0), PCI_COMMAND, 0);
	pci_enumerate(f.topo);
	struct pci_dev *d = pci_find(f.topo, BDF(4, 0, 0));
	cr_assert(d->bars[0].state == PCI_BAR_PLACED);
	cr_assert_eq(d->bars[0].addr, 0xc0200000);
	cr_assert_eq(d->bars[2].addr, 0xe040000000ull, "64-bit prefetchable goes to the prefetchable window");
	cr_assert_eq(fake_r32(&f, BDF(4, 0, 0), 0x18) & ~0xfu, 0x40000000u);
	cr_assert_eq(fake_r32(&f, BDF(4, 0, 0), 0x1c), 0xe0);
	cr_assert(fake_r16(&f, BDF(4, 0, 0), PCI_COMMAND) & PCI_COMMAND_MEMORY, "decode enabled after placement");
	fake_free(&f);
}

Test(pci_enum, placement_avoids_siblings_and_reports_when_full)
{
	fake_init(&f, 0, 8);
	fake_reference(&f);
	/* NIC function 1 loses its BAR: it must not land on function 0's [c0400000, +128K) */
	fake_bar(&f, BDF(5, 0, 1), 0, 0x20000, 0, 0, 0, 0);
	/* and asks for a second one larger than the 2 MiB window */
	fake_bar(&f, BDF(5, 0, 1), 1, 4 << 20, 0, 0, 0, 0);
	pci_enumerate(f.topo);
	struct pci_dev *d = pci_find(f.topo, BDF(5, 0, 1));
	cr_assert_eq(d->bars[0].addr, 0xc0420000);
	cr_assert(d->bars[1].state == PCI_BAR_UNASSIGNED);
	cr_assert_eq(d->bars[1].addr, 0);
	cr_assert_geq(d->anomalies, 1);
	fake_free(&f);
}

Test(pci_enum, assignment_can_be_turned_off)
{
	fake_init(&f, 0, 8);
	fake_reference(&f);
	fake_bar(&f, BDF(4, 0, 0), 0, 0x4000, 0, 1, 0, 0);
	f.topo->policy.assign_bars = false;
	pci_enumerate(f.topo);
	cr_assert(pci_find(f.topo, BDF(4, 0, 0))->bars[0].state == PCI_BAR_UNASSIGNED);
	fake_free(&f);
}

Test(pci_enum, garbage_bar_sizing_is_ignored)
{
	fake_init(&f, 0, 8);
	fake_reference(&f);
	struct fake_bar *b = fake_bar(&f, BDF(3, 0, 0), 4, 0x1000, 0, 0, 0, 0xc0100000);
	b->garbage = 0x12345670; /* not a mask of the form 1..10..0 */
	pci_enumerate(f.topo);
	struct pci_dev *d = pci_find(f.topo, BDF(3, 0, 0));
	cr_assert(d->bars[4].state == PCI_BAR_BAD);
	cr_assert_eq(d->bars[4].size, 0);
	cr_assert_eq(d->anomalies, 1);
	cr_assert_eq(d->bars[2].size, 64 << 20, "other BARs unaffected");
	fake_free(&f);
}

Test(pci_enum, sixty_four_bit_bar_in_the_last_slot)
{
	fake_init(&f, 0, 8);
	fake_reference(&f);
	fake_w32(&f, BDF(6, 0, 0), PCI_BAR0 + 20, PCI_BAR_MEM_TYPE_64);
	f.bars[f.nbars++] = (struct fake_bar){ BDF(6, 0, 0), 5, 0x1000, PCI_BAR_MEM_TYPE_64, 0 };
	pci_enumerate(f.topo);
	cr_assert(pci_find(f.topo, BDF(6, 0, 0))->bars[5].state == PCI_BAR_BAD);
	fake_free(&f);
}

Test(pci_enum, capability_loop_is_cut)
{
	fake_init(&f, 0, 8);
	fake_reference(&f);
	uint16_t nvme = BDF(3, 0, 0);
	/* 0x40 -> 0x50 -> 0x40 ... */
	fake_w8(&f, nvme, FAKE_PCIE_CAP + 1, 0x50);
	fake_w8(&f, nvme, 0x50, PCI_CAP_ID_MSIX);
	fake_w8(&f, nvme, 0x51, 0x40);
	pci_enumerate(f.topo);
	struct pci_dev *d = pci_find(f.topo, nvme);
	cr_assert_eq(d->msix_off, 0x50);
	cr_assert_eq(d->anomalies, 1);
	fake_free(&f);
}

Test(pci_enum, capability_pointer_into_the_header)
{
	fake_init(&f, 0, 8);
	fake_reference(&f);
	fake_w8(&f, BDF(3, 0, 0), FAKE_PCIE_CAP + 1, 0x10);
	pci_enumerate(f.topo);
	cr_assert_eq(pci_find(f.topo, BDF(3, 0, 0))->anomalies, 1);
	fake_free(&f);
}

Test(pci_enum, extended_capability_loop_and_bad_pointer)
{
	fake_init(&f, 0, 8);
	fake_reference(&f);
	uint16_t rp = BDF(0, 0x1c, 0);
	/* ACS at 0x100 -> AER at 0x200 -> back to 0x100 */
	fake_w32(&f, rp, 0x100, PCI_EXT_CAP_ID_ACS | 1u << 16 | 0x200u << 20);
	fake_w32(&f, rp, 0x200, PCI_EXT_CAP_ID_AER | 1u << 16 | 0x100u << 20);
	uint16_t far = BDF(6, 0, 0);
	fake_w32(&f, far, 0x100, PCI_EXT_CAP_ID_DSN | 1u << 16 | 0x080u << 20);
	pci_enumerate(f.topo);
	struct pci_dev *d = pci_find(f.topo, rp);
	cr_assert_eq(d->acs_off, 0x100);
	cr_assert_eq(pci_find_cap(d, PCI_EXT_CAP_ID_AER, true), 0x200);
	cr_assert_eq(d->anomalies, 1);
	cr_assert_eq(pci_find(f.topo, far)->anomalies, 1);
	fake_free(&f);
}

Test(pci_enum, secondary_bus_outside_the_ecam_window)
{
	fake_init(&f, 0, 8); /* buses 0-7 */
	fake_reference(&f);
	fake_w8(&f, BDF(0, 0x1d, 0), PCI_SECONDARY_BUS, 9);
	fake_w8(&f, BDF(0, 0x1d, 0), PCI_SUBORDINATE_BUS, 9);
	cr_assert_eq(pci_enumerate(f.topo), 11, "the far NVMe is not reachable");
	cr_assert_eq(pci_find(f.topo, BDF(0, 0x1d, 0))->anomalies, 1);
	fake_free(&f);
}

Test(pci_enum, two_bridges_claiming_one_bus_do_not_loop)
{
	fake_init(&f, 0, 8);
	fake_reference(&f);
	/* the far root port claims bus 3 too (already scanned below 02:00.0) */
	fake_w8(&f, BDF(0, 0x1d, 0), PCI_SECONDARY_BUS, 3);
	fake_w8(&f, BDF(0, 0x1d, 0), PCI_SUBORDINATE_BUS, 3);
	int n = pci_enumerate(f.topo);
	cr_assert_eq(n, 11);
	cr_assert_geq(pci_find(f.topo, BDF(0, 0x1d, 0))->anomalies, 1);
	fake_free(&f);
}

Test(pci_enum, bridge_pointing_back_up_is_not_followed)
{
	fake_init(&f, 0, 8);
	fake_reference(&f);
	fake_w8(&f, BDF(2, 0, 0), PCI_SECONDARY_BUS, 1); /* below its own bus */
	int n = pci_enumerate(f.topo);
	cr_assert_eq(n, 11);
	cr_assert_eq(pci_find(f.topo, BDF(2, 0, 0))->anomalies, 1);
	fake_free(&f);
}

Test(pci_enum, every_function_present_is_bounded_by_the_table)
{
	/* a bus full of multi-function devices: 256 functions > PCI_MAX_DEVS */
	fake_init(&f, 0, 1);
	for (unsigned dev = 0; dev < 32; dev++)
		for (unsigned fn = 0; fn < 8; fn++)
			fake_endpoint(&f, BDF(0, dev, fn), 0x1234, 0x5678, 0x020000, 1, 0);
	cr_assert_eq(pci_enumerate(f.topo), PCI_MAX_DEVS);
	cr_assert_eq(f.topo->truncated, 256 - PCI_MAX_DEVS);
	fake_free(&f);
}

Test(pci_enum, bdf_parse_and_print)
{
	char b[8];
	cr_assert_eq(pci_parse_bdf("05:00.1"), BDF(5, 0, 1));
	cr_assert_eq(pci_parse_bdf("ff:1f.7"), BDF(255, 31, 7));
	cr_assert_eq(pci_parse_bdf("05:20.0"), -EINVAL);
	cr_assert_eq(pci_parse_bdf("05:00.8"), -EINVAL);
	cr_assert_eq(pci_parse_bdf("05:00.0x"), -EINVAL);
	cr_assert_eq(pci_parse_bdf("nonsense"), -EINVAL);
	cr_assert_str_eq(pci_bdf_str(BDF(0x1a, 0x1f, 3), b), "1a:1f.3");
}
