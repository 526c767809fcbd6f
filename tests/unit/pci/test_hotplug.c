// sources: pci/hotplug.c pci/enum.c pci/ecam.c pci/acs.c pci/route.c pci/p2pdma.c pci/p2p_placement.c pci/driver.c lib/log.c mm/pool.c tests/unit/pci/fake_cfg.c
/*
 * PCIe native hot-plug on the reference topology with the far NVMe's root port (00:1d.0) made
 * a hot-plug slot that behaves like QEMU's pcie-root-port: the attention button detaches the
 * driver, the slot is powered off only once the card's P2P memory is free (bounded), which
 * drops the card; a card put back is powered on, waited for (link + 100 ms), recorded in the
 * same table entry, its BARs placed in the port's windows and bound; presence lost without a
 * request detaches at once.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "tests/unit/pci/fake_cfg.h"
#include "tests/unit/unit_support.h"

#define MS 1000000ull
#define PORT BDF(0, 0x1d, 0)
#define CARD BDF(6, 0, 0)

static struct fake f;
static unsigned probes, removes;

static int hp_probe(struct pci_dev *d, const struct pci_device_id *id)
{
	(void)d;
	(void)id;
	probes++;
	return 0;
}
static void hp_remove(struct pci_dev *d)
{
	(void)d;
	removes++;
}
static const struct pci_device_id hp_ids[] = { PCI_DEVICE(0x1b36, 0x0010), PCI_ID_END };
PCI_DRIVER(test_hp_nvme, hp_ids, hp_probe, hp_remove);

static uint64_t now;

static int poll_for(uint64_t ns)
{
	int work = 0;
	for (uint64_t end = now + ns; now < end; now += 10 * MS)
		work += pci_hotplug_poll(now);
	return work;
}

static void setup(void)
{
	unit_pools_begin();
	fake_init(&f, 0, 8);
	fake_reference(&f);
	fake_slot(&f, PORT, CARD);
	cr_assert_eq(pci_enumerate(f.topo), 12);
	pci_probe_all(f.topo);
	probes = removes = 0;
	now = 1000 * MS;
	cr_assert_eq(pci_hotplug_init(f.topo), 1, "one hot-plug slot");
}

static void teardown(void)
{
	cr_assert_eq(p2p_provider_remove_all(), 0, "providers idle at the end");
	pci_remove_all(f.topo);
	fake_free(&f);
	unit_pools_end();
}

TestSuite(hotplug, .init = setup, .fini = teardown);

static void card_back(void)
{
	fake_endpoint(&f, CARD, 0x1b36, 0x0010, 0x010802, 0, 0);
	fake_bar(&f, CARD, 0, 0x4000, 0, 1, 0, 0);
	fake_bar(&f, CARD, 2, 16 << 20, 0, 1, 1, 0);
	fake_slot_event(&f, PCI_EXP_SLTSTA_PDC | PCI_EXP_SLTSTA_ABP, 1);
}

Test(hotplug, quiet_slot_is_idle)
{
	cr_assert_eq(poll_for(500 * MS), 0);
	cr_assert_eq(removes, 0);
	cr_assert_eq(f.slot_unplugs, 0);
}

Test(hotplug, attention_button_detaches_then_powers_off_and_a_card_put_back_is_bound_again)
{
	struct pci_dev *d = pci_find(f.topo, CARD);
	cr_assert_not_null(d);
	cr_assert_not_null(d->driver);

	fake_slot_event(&f, PCI_EXP_SLTSTA_ABP, 1);
	cr_assert_gt(poll_for(200 * MS), 0);
	cr_assert_eq(removes, 1, "driver detached");
	cr_assert(d->removed);
	cr_assert_null(pci_find(f.topo, CARD), "a removed function is not found");
	cr_assert_eq(f.slot_unplugs, 1, "slot powered off with indicators off: the card went");
	cr_assert_eq(fake_r16(&f, PORT, FAKE_PCIE_CAP + PCI_EXP_SLTSTA) & PCI_EXP_SLTSTA_EVENTS, 0,
		     "events acknowledged");

	card_back();
	poll_for(50 * MS);
	cr_assert_eq(fake_r16(&f, PORT, FAKE_PCIE_CAP + PCI_EXP_SLTCTL) & PCI_EXP_SLTCTL_PCC, 0, "powered on");
	cr_assert_eq(probes, 0, "not before the settle time");
	poll_for(200 * MS);
	cr_assert_eq(probes, 1, "bound again");
	struct pci_dev *d2 = pci_find(f.topo, CARD);
	cr_assert_eq(d2, d, "the same table entry");
	cr_assert_eq(f.topo->ndevs, 12);
	cr_assert_eq(d2->bars[0].addr, 0xc0800000, "BAR0 placed in the port's memory window");
	cr_assert_eq(d2->bars[2].addr, 0xe100000000, "the CMB BAR in the prefetchable window");
	cr_assert_eq(d2->bars[0].state, PCI_BAR_PLACED);
	cr_assert(fake_r16(&f, CARD, PCI_COMMAND) & PCI_COMMAND_MEMORY);
}

Test(hotplug, power_stays_on_while_the_cards_p2p_memory_is_in_use)
{
	struct pci_dev *d = pci_find(f.topo, CARD);
	struct p2p_provider *p = p2p_provider_add(d, 2, 0, 16 << 20, 0);
	cr_assert_not_null(p);
	p2p_provider_publish(p, true);
	dma_addr_t addr;
	void *cpu;
	cr_assert_eq(p2p_alloc(p, 4096, &addr, &cpu), 0);

	fake_slot_event(&f, PCI_EXP_SLTSTA_ABP, 1);
	poll_for(1000 * MS);
	cr_assert_eq(removes, 1);
	cr_assert_eq(f.slot_unplugs, 0, "a fragment is still in the card's memory");
	cr_assert_eq(p2p_provider_count(), 1);
	cr_assert_eq(p2p_free(p, addr, 4096), 0);
	poll_for(100 * MS);
	cr_assert_eq(f.slot_unplugs, 1, "freed: provider removed, slot off");
	cr_assert_eq(p2p_provider_count(), 0);
}

Test(hotplug, p2p_memory_never_freed_gives_up_after_the_bound)
{
	struct pci_dev *d = pci_find(f.topo, CARD);
	struct p2p_provider *p = p2p_provider_add(d, 2, 0, 16 << 20, 0);
	dma_addr_t addr;
	void *cpu;
	p2p_provider_publish(p, true);
	cr_assert_eq(p2p_alloc(p, 4096, &addr, &cpu), 0);
	fake_slot_event(&f, PCI_EXP_SLTSTA_ABP, 1);
	poll_for(4900 * MS);
	cr_assert_eq(f.slot_unplugs, 0);
	poll_for(300 * MS);
	cr_assert_eq(f.slot_unplugs, 1, "powered off after 5 s anyway");
	cr_assert_eq(p2p_free(p, addr, 4096), 0);
}

Test(hotplug, surprise_removal_detaches_at_once)
{
	memset(fake_space(&f, CARD), 0xff, PCI_CFG_SIZE);
	fake_slot_event(&f, PCI_EXP_SLTSTA_PDC | PCI_EXP_SLTSTA_DLLSC, 0);
	poll_for(60 * MS);
	cr_assert_eq(removes, 1);
	cr_assert_null(pci_find(f.topo, CARD));
	card_back();
	poll_for(300 * MS);
	cr_assert_eq(probes, 1, "and a card put back comes back");
}

Test(hotplug, a_card_that_never_brings_its_link_up_is_powered_off_again)
{
	fake_slot_event(&f, PCI_EXP_SLTSTA_ABP, 1);
	poll_for(100 * MS);
	cr_assert_eq(f.slot_unplugs, 1);
	/* present, but no link and no config space */
	fake_slot_event(&f, PCI_EXP_SLTSTA_PDC, 1);
	uint16_t lnk = fake_r16(&f, PORT, FAKE_PCIE_CAP + PCI_EXP_LNKSTA);
	fake_w16(&f, PORT, FAKE_PCIE_CAP + PCI_EXP_LNKSTA, lnk & ~PCI_EXP_LNKSTA_DLLLA);
	poll_for(1200 * MS);
	cr_assert_eq(probes, 0);
	cr_assert(fake_r16(&f, PORT, FAKE_PCIE_CAP + PCI_EXP_SLTCTL) & PCI_EXP_SLTCTL_PCC, "powered off again");
}
