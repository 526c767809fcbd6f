/*
 * e1000e_pci.c - the thin PCI attach of the 82574L driver: match 8086:10d3, map BAR0,
 * enable the function, give the core its bus hooks (MMIO, DRAM pages, receive data
 * buffers from the nearest published P2P provider), and the poller that drives every
 * bound device.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "../../arch/cpu_ops.h"
#include "../../lib/clock.h"
#include "../../lib/config_key.h"
#include "../../lib/log.h"
#include "../../lib/poller.h"
#include "../../mm/mm.h"
#include "../../pci/pci.h"
#include "e1000e.h"
#include "e1000e_pci.h"

LOG_MODULE_USE(e1000e);

#define E1000E_PCI_MAX 2
#define E1000E_NETBUFS 512  /* the netbuf pool when no stack created one */

struct e1000e_pci {
	struct e1000e core;
	struct pci_dev *pdev;
	volatile uint8_t *mmio;
	struct p2p_provider *provider; /* of the receive data buffers, NULL: DRAM */
	struct pci_irq irq;            /* MSI-X entry 0: receive wakes the idle CPU */
	char why[160];
};

static struct e1000e_pci e1000e_devs[E1000E_PCI_MAX];
static unsigned e1000e_ndevs;
/* The settings for devices probed from now on (nic.*; the MTU is the interface's, net.mtu). */
enum e1000e_rx_ring_place {
	E1000E_RX_RING_WITH_DATA = 0, /* behind the receive data buffers (device memory when they are) */
	E1000E_RX_RING_DRAM = 1,
};

static struct e1000e_settings {
	enum e1000e_rx_mode mode;
	unsigned ps_units;
	unsigned tx_dev_max;
	enum e1000e_rx_ring_place rx_ring;
	enum e1000e_tso_mode tso;
} settings = { E1000E_RX_SPLIT, 2, E1000E_TX_DEV_MAX_QEMU, E1000E_RX_RING_WITH_DATA, E1000E_TSO_AUTO };

static const struct config_choice rx_mode_choices[] = {
	{ "split", E1000E_RX_SPLIT }, { "plain", E1000E_RX_PLAIN }, { NULL, 0 } };
CONFIG_ENUM(nic_rx_mode, "nic.rx_mode", &settings.mode, rx_mode_choices, "split", NULL,
	    "split: headers to DRAM, TCP/UDP payload to the nearest published CMB; plain: whole frames to DRAM");
CONFIG_UINT(nic_ps_units, "nic.ps_units", &settings.ps_units, 1, 2, "2", NULL,
	    "RDH/RDT units per packet-split descriptor (QEMU 7.2: 2, the 82574L datasheet: 1)");
static const struct config_choice rx_ring_choices[] = {
	{ "with-data", E1000E_RX_RING_WITH_DATA }, { "dram", E1000E_RX_RING_DRAM }, { NULL, 0 } };
CONFIG_ENUM(nic_rx_ring, "nic.rx_ring", &settings.rx_ring, rx_ring_choices, "with-data", NULL,
	    "the packet-split receive descriptor ring behind the data buffers (with-data) or in DRAM");
CONFIG_UINT(nic_tx_dev_max, "nic.tx_dev_max", &settings.tx_dev_max, 0, 1u << 20, "4096", NULL,
	    "device-memory bytes one frame may gather before a DRAM bounce (QEMU 7.2: 4096; 0: no limit)");
static const struct config_choice tso_choices[] = {
	{ "auto", E1000E_TSO_AUTO }, { "on", E1000E_TSO_ON }, { "off", E1000E_TSO_OFF }, { NULL, 0 } };
CONFIG_ENUM(nic_tso, "nic.tso", &settings.tso, tso_choices, "auto", NULL,
	    "TCP segmentation offload: auto when a MAC loopback probe shows real TCP segments; on forces it "
	    "(`nic tso` switches it at run time)");

static uint32_t mmio_read32(void *ctx, uint32_t off)
{
	struct e1000e_pci *p = ctx;
	uint32_t v = *(volatile uint32_t *)(p->mmio + off);
	arch_mmio_read_barrier(); /* a status read before the descriptors it announces */
	return v;
}

static void mmio_write32(void *ctx, uint32_t off, uint32_t val)
{
	struct e1000e_pci *p = ctx;
	arch_mmio_write_barrier(); /* descriptors in memory before the tail write */
	*(volatile uint32_t *)(p->mmio + off) = val;
}

static void *pages_alloc(void *ctx, size_t bytes, dma_addr_t *addr)
{
	(void)ctx;
	void *p = mm_alloc_pages((bytes + PAGE_SIZE - 1) / PAGE_SIZE, 1);
	if (p)
		*addr = dma_addr_host(p);
	return p;
}

static void pages_free(void *ctx, void *cpu, size_t bytes)
{
	(void)ctx;
	mm_free_pages(cpu, (bytes + PAGE_SIZE - 1) / PAGE_SIZE);
}

/* Receive data buffers: the nearest published provider that may reach the NIC. */
static int data_alloc(void *ctx, size_t bytes, dma_addr_t *addr, void **cpu, uint16_t *provider, uint64_t *offset,
		      const char **why)
{
	struct e1000e_pci *p = ctx;
	struct p2p_verdict v;
	struct p2p_provider *pv;
	char b[8], r[120];

	p->provider = NULL;
	pv = p2p_find(&p->pdev, 1, &v);
	if (!pv) {
		if (p2p_provider_count() == 0)
			snprintf(p->why, sizeof(p->why), "no P2P provider published");
		else
			snprintf(p->why, sizeof(p->why), "no compatible P2P provider: %s", p2p_verdict_str(&v, r, sizeof(r)));
		*why = p->why;
		return -ENODEV;
	}
	if (!(pci_read(pv->dev, PCI_COMMAND, 2) & PCI_COMMAND_MEMORY)) {
		/* docs/platform.md: DMA into a BAR whose decode is off completes and drops the data */
		snprintf(p->why, sizeof(p->why), "provider %s has memory decode off", pci_bdf_str(pv->dev->bdf, b));
		*why = p->why;
		return -ENODEV;
	}
	if (p2p_alloc(pv, bytes, addr, cpu)) {
		snprintf(p->why, sizeof(p->why), "provider %s: %llu bytes not available", pci_bdf_str(pv->dev->bdf, b),
			 (unsigned long long)bytes);
		*why = p->why;
		return -ENOMEM;
	}
	p->provider = pv;
	*provider = p2p_provider_id(pv);
	*offset = addr->bus - pv->bus_base;
	snprintf(p->why, sizeof(p->why), "%s BAR%u, distance %d (%s)", pci_bdf_str(pv->dev->bdf, b), pv->bar,
		 v.distance, p2p_verdict_str(&v, r, sizeof(r)));
	return 0;
}

static void data_free(void *ctx, dma_addr_t addr, void *cpu, size_t bytes)
{
	struct e1000e_pci *p = ctx;
	(void)cpu;
	if (p->provider && p2p_free(p->provider, addr, bytes))
		log_err("p2p_free of receive buffers failed");
	p->provider = NULL;
}

static void spin_delay(void *ctx, uint64_t ns)
{
	(void)ctx;
	uint64_t end = clock_now_ns() + ns;
	while (clock_now_ns() < end)
		arch_cpu_relax();
}

static int e1000e_pci_probe(struct pci_dev *d, const struct pci_device_id *id)
{
	struct e1000e_pci *p;
	int rc;
	(void)id;

	if (e1000e_ndevs >= E1000E_PCI_MAX)
		return -ENOSPC;
	if (d->nbars < 1 || d->bars[0].size < 0x20000 || d->bars[0].kind == PCI_BAR_KIND_IO)
		return -ENODEV;
	p = &e1000e_devs[e1000e_ndevs];
	memset(p, 0, sizeof(*p));
	if ((rc = pci_bar_map(d, 0, 2 /* uncached: registers */)))
		return rc;
	pci_enable(d, true);
	p->pdev = d;
	p->mmio = (volatile uint8_t *)(uintptr_t)d->bars[0].addr;
	p->core.bus = (struct e1000e_bus){ mmio_read32, mmio_write32, pages_alloc, pages_free, data_alloc,
					   data_free, spin_delay, p };
	pci_bdf_str(d->bdf, p->core.where);
	snprintf(p->core.ndev.name, sizeof(p->core.ndev.name), "eth%u", e1000e_ndevs);
	p->core.ndev.pdev = d; /* P2P placement asks which function the netdev is */
	p->core.mode_wanted = settings.mode;
	p->core.ps_units = settings.ps_units;
	p->core.tx_dev_max = settings.tx_dev_max;
	p->core.ring_with_data = settings.rx_ring == E1000E_RX_RING_WITH_DATA;
	if ((rc = e1000e_init(&p->core, NETDEV_MTU_MIN))) {
		log_err("%s: bring-up failed (%d)", p->core.where, rc);
		return rc;
	}
	d->driver_data = p;
	e1000e_ndevs++;
	/* received frames end the poll loop's idle halts (MSI-X entry 0) */
	if ((rc = pci_msix_wake(d, 0, "e1000e", &p->irq)) == 0)
		e1000e_irq_setup(&p->core, 0);
	else if (rc != -ENOTSUP)
		log_warn("%s: no MSI-X wake-up (%d): frames wait for the idle timer", p->core.where, rc);
	if (settings.tso == E1000E_TSO_OFF || e1000e_netbufs_ready() == 0)
		e1000e_tso_setup(&p->core, settings.tso, clock_now_ns());
	else
		e1000e_tso_set(&p->core, false, "off (no netbufs for the probe)");
	log_info("%s: %s %02x:%02x:%02x:%02x:%02x:%02x mtu %u link %s", p->core.where, p->core.ndev.name,
		 p->core.ndev.mac[0], p->core.ndev.mac[1], p->core.ndev.mac[2], p->core.ndev.mac[3],
		 p->core.ndev.mac[4], p->core.ndev.mac[5], p->core.ndev.mtu, p->core.ndev.link_up ? "up" : "down");
	return 0;
}

static void e1000e_pci_remove(struct pci_dev *d)
{
	struct e1000e_pci *p = d->driver_data;
	if (p && e1000e_fini(&p->core))
		log_err("%s: receive buffers still held by the stack: left running", p->core.where);
	else if (p) {
		p->core.irq_on = false;
		pci_msix_disable(d, &p->irq);
	}
}

static const struct pci_device_id e1000e_ids[] = { PCI_DEVICE(0x8086, 0x10d3), PCI_ID_END };
PCI_DRIVER(e1000e, e1000e_ids, e1000e_pci_probe, e1000e_pci_remove);

/* The netbuf pool belongs to the stack; without one (no net/ yet) the driver makes it. */
int e1000e_netbufs_ready(void)
{
	static bool logged;
	size_t in_use, cap;
	uint64_t fails;
	int rc;

	netbuf_pool_stats(&in_use, &cap, &fails);
	if (cap)
		return 0;
	if ((rc = netbuf_pool_init(E1000E_NETBUFS)))
		return rc;
	if (!logged)
		log_info("no stack created the netbuf pool: %u netbufs made by the driver", E1000E_NETBUFS);
	logged = true;
	return 0;
}

static int e1000e_poll_all(unsigned budget)
{
	int work = 0;
	if (!e1000e_ndevs || e1000e_netbufs_ready())
		return 0;
	for (unsigned i = 0; i < e1000e_ndevs; i++) {
		struct e1000e *dev = &e1000e_devs[i].core;
		work += e1000e_poll(dev, budget, poller_now_ns()); /* now: its link check's period */
		if (dev->tso_probe_pending && dev->ndev.link_up)
			e1000e_tso_setup(dev, E1000E_TSO_AUTO, clock_now_ns());
	}
	return work;
}
/* Before an idle halt: every device's receive interrupt armed (0 when one is); masked when off. */
static int e1000e_arm_all(bool on)
{
	int rc = -ENOTSUP;
	for (unsigned i = 0; i < e1000e_ndevs; i++)
		if (e1000e_irq_arm(&e1000e_devs[i].core, on) == 0)
			rc = 0;
	return rc;
}
POLLER_WAKE(e1000e, e1000e_poll_all, e1000e_arm_all);

/* Bound devices. */
unsigned e1000e_count(void)
{
	return e1000e_ndevs;
}

struct e1000e *e1000e_at(unsigned i)
{
	return i < e1000e_ndevs ? &e1000e_devs[i].core : NULL;
}

struct pci_dev *e1000e_pci_dev(struct e1000e *dev)
{
	return container_of(dev, struct e1000e_pci, core)->pdev;
}

struct p2p_provider *e1000e_rx_provider(struct e1000e *dev)
{
	return container_of(dev, struct e1000e_pci, core)->provider;
}

const char *e1000e_rx_where(struct e1000e *dev)
{
	return container_of(dev, struct e1000e_pci, core)->why;
}
