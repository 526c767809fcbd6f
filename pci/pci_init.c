/*
 * pci_init.c - the appliance's own PCI segment: ECAM from ACPI MCFG, enumeration and ACS
 * at INIT_LEVEL_BUS, driver binding at INIT_LEVEL_DRIVER, BAR mapping through arch/.
 * (Host unit tests link the rest of pci/ without this file.)
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "../arch/arch.h"
#include "../lib/byteorder.h"
#include "../lib/clock.h"
#include "../lib/log.h"
#include "../lib/poller.h"
#include "../lib/stats.h"
#include "pci.h"

LOG_MODULE_USE(pci);

#define MCFG_MAX_ALLOCS 8

static struct pci_topo system_topo;
static struct pci_ecam system_ecam;
static bool system_ready;

struct pci_topo *pci_system(void)
{
	return system_ready ? &system_topo : NULL;
}

static int map_bar(uint64_t phys, uint64_t size, int cache)
{
	return arch_map(phys, size, (enum arch_cache)cache);
}

static int pci_init(void)
{
	struct pci_mcfg_alloc allocs[MCFG_MAX_ALLOCS];
	const uint8_t *mcfg = acpi_find_table("MCFG");
	int n, rc;

	if (!mcfg) {
		log_warn("no ACPI MCFG table: no PCIe configuration access, no devices");
		return -ENODEV;
	}
	uint32_t len = le32_load(mcfg + 4); /* the ACPI header's Length */
	n = pci_mcfg_parse(mcfg, len, allocs, MCFG_MAX_ALLOCS);
	if (n <= 0) {
		log_err("MCFG table unusable (%d)", n);
		return n < 0 ? n : -ENODEV;
	}
	for (int i = 1; i < n; i++)
		log_warn("MCFG: segment %u buses %u-%u at 0x%llx ignored (one segment supported)", allocs[i].segment,
			 allocs[i].bus_start, allocs[i].bus_end, (unsigned long long)allocs[i].base);
	system_ecam.segment = allocs[0].segment;
	system_ecam.bus_start = allocs[0].bus_start;
	system_ecam.bus_end = allocs[0].bus_end;
	uint64_t base = allocs[0].base + ((uint64_t)allocs[0].bus_start << 20);
	system_ecam.size = (uint64_t)(allocs[0].bus_end - allocs[0].bus_start + 1) << 20;
	system_ecam.base = (volatile uint8_t *)(uintptr_t)base;
	if ((rc = arch_map(base, system_ecam.size, ARCH_CACHE_UC))) {
		log_err("cannot map ECAM at 0x%llx: %d", (unsigned long long)base, rc);
		return rc;
	}
	pci_ecam_cfg(&system_topo.cfg, &system_ecam);
	system_topo.policy = *pci_policy_current();
	system_topo.map = map_bar;
	n = pci_enumerate(&system_topo);
	if (n < 0)
		return n;
	system_ready = true;
	log_info("ECAM 0x%llx segment %u buses %u-%u: %d functions in %llu us, %u anomalies", (unsigned long long)base,
		 system_ecam.segment, system_ecam.bus_start, system_ecam.bus_end, n,
		 (unsigned long long)(system_topo.enum_ns / NSEC_PER_USEC), system_topo.anomalies);
	rc = pci_acs_apply(&system_topo);
	log_info("ACS policy %s: %s", pci_acs_mode_name(system_topo.policy.acs_mode),
		 rc ? "some writes did not read back (see above)" : "every write read back");
	return 0;
}
INITCALL(pci_enum, INIT_LEVEL_BUS, pci_init);

static int pci_bind(void)
{
	if (!system_ready)
		return 0;
	int n = pci_probe_all(&system_topo);
	log_info("%d functions bound to drivers", n);
	n = pci_hotplug_init(&system_topo);
	if (n)
		log_info("%d hot-plug slot(s) watched", n);
	return 0;
}
INITCALL(pci_bind, INIT_LEVEL_DRIVER, pci_bind);

static int pci_hotplug_poller(unsigned budget)
{
	(void)budget;
	return system_ready ? pci_hotplug_poll(poller_now_ns()) : 0;
}
POLLER(pci_hotplug, pci_hotplug_poller);

/* The PCIe port "driver": claims root and switch ports so that `lspci` shows every
 * function the appliance owns; ACS on ports is bus policy (acs.c), not the driver's. */
static const struct pci_device_id port_ids[] = { PCI_DEVICE_CLASS(0x060400, 0xffff00), PCI_ID_END };

static int port_probe(struct pci_dev *d, const struct pci_device_id *id)
{
	(void)id;
	return d->exp_off ? 0 : -ENODEV;
}
PCI_DRIVER(pcieport, port_ids, port_probe, NULL);

static void pci_stats_show(void)
{
	if (!system_ready) {
		printf("  no PCI segment\n");
		return;
	}
	printf("  functions %u  anomalies %u  enumeration %llu us  ecam rejected accesses %llu\n", system_topo.ndevs,
	       system_topo.anomalies, (unsigned long long)(system_topo.enum_ns / NSEC_PER_USEC),
	       (unsigned long long)system_ecam.rejected);
	for (unsigned i = 0; i < p2p_provider_count(); i++) {
		struct p2p_provider *p = p2p_provider_at(i);
		char b[8];
		printf("  p2p %s BAR%u in-use %llu B high-water %llu B allocs %llu frees %llu failures %llu\n",
		       pci_bdf_str(p->dev->bdf, b), p->bar, (unsigned long long)p->bytes_in_use,
		       (unsigned long long)p->high_water, (unsigned long long)p->allocs, (unsigned long long)p->frees,
		       (unsigned long long)p->failures);
	}
}
STATS_SECTION(pci, pci_stats_show);
