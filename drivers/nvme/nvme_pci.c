/*
 * nvme_pci.c - the thin PCI attach of the NVMe host driver: match class 01:08:02, enable
 * memory decode and bus mastering, hand the core BAR0 register access (uncached, mapped by
 * enumeration), page-allocator DMA memory and the BARs; once the core has enabled the CMB
 * (CMBMSC.CMSE verified), publish the whole CMB as a peer-to-peer provider (pci/ maps it
 * write-combining) and take the core's CMB list areas from that provider.
 * A poller drains every I/O queue that has commands outstanding and runs each controller's
 * health check (CSTS.CFS, surprise removal, resets). During a controller reset the CMB
 * provider is withdrawn from allocation and published again when the controller is live
 * with the same CMB layout; a removed or failed controller's provider stays withdrawn.
 * Hot-plug (pci/hotplug.c): a removed drive's controller stays registered in state removed
 * (the target's namespaces keep pointing at it) and its CMB provider is taken away; a drive
 * hot-added at the same PCI address takes the same controller (same name) back.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../../arch/cpu_ops.h"
#include "../../lib/clock.h"
#include "../../lib/log.h"
#include "../../lib/poller.h"
#include "../../mm/mm.h"
#include "../../pci/pci.h"
#include "nvme.h"

LOG_MODULE_USE(nvme);

struct nvme_pci {
	struct nvme_ctrl ctrl;
	struct nvme_bus bus;
	struct pci_dev *pdev;
	volatile uint8_t *regs;
	struct p2p_provider *cmb;
	struct pci_irq irq;      /* MSI-X entry 0: completions wake the idle CPU */
	bool parked;             /* hot-removed: waits for a card at pdev's address */
};

static unsigned nvme_pci_count;
static unsigned nvme_pci_irqs; /* controllers whose completions raise an interrupt */

static uint32_t pci_rd32(void *ctx, uint32_t off)
{
	struct nvme_pci *np = ctx;
	uint32_t v = *(volatile uint32_t *)(np->regs + off);
	arch_mmio_read_barrier();
	return v;
}

/* 64-bit registers as two 32-bit reads, low then high (CAP, CMBMSC: stable values). */
static uint64_t pci_rd64(void *ctx, uint32_t off)
{
	return (uint64_t)pci_rd32(ctx, off) | ((uint64_t)pci_rd32(ctx, off + 4) << 32);
}

static void pci_wr32(void *ctx, uint32_t off, uint32_t v)
{
	struct nvme_pci *np = ctx;
	arch_mmio_write_barrier(); /* SQ entries in memory before the doorbell */
	*(volatile uint32_t *)(np->regs + off) = v;
}

static void pci_wr64(void *ctx, uint32_t off, uint64_t v)
{
	pci_wr32(ctx, off, (uint32_t)v);
	pci_wr32(ctx, off + 4, (uint32_t)(v >> 32));
}

static void *pci_dma_alloc(void *ctx, size_t bytes, dma_addr_t *addr)
{
	(void)ctx;
	void *p = mm_alloc_pages((bytes + 4095) / 4096, 1);
	if (p)
		*addr = dma_addr_host(p);
	return p;
}

static void pci_dma_free(void *ctx, void *cpu, size_t bytes)
{
	(void)ctx;
	mm_free_pages(cpu, (bytes + 4095) / 4096);
}

static int pci_cmb_alloc(void *ctx, size_t bytes, dma_addr_t *addr, void **cpu)
{
	struct nvme_pci *np = ctx;
	if (!np->cmb)
		return -ENODEV;
	return p2p_alloc(np->cmb, bytes, addr, cpu);
}

static void pci_cmb_free(void *ctx, dma_addr_t addr, size_t bytes)
{
	struct nvme_pci *np = ctx;
	if (np->cmb)
		p2p_free(np->cmb, addr, bytes);
}

static void pci_delay(void *ctx, uint64_t ns)
{
	(void)ctx;
	uint64_t end = clock_now_ns() + ns;
	while (clock_now_ns() < end)
		arch_cpu_relax();
}

/* The core resets or lost the controller: keep new P2P allocations away from its CMB
 * while it is not live (rc -EINPROGRESS: reset starting; 0: live again; else failed/gone). */
static void nvme_pci_on_reset(struct nvme_ctrl *c, int rc)
{
	struct nvme_pci *np = c->attach;
	if (!np || !np->cmb)
		return;
	p2p_provider_publish(np->cmb, rc == 0);
	if (rc == 0)
		log_info("%s: CMB provider published again after the reset", c->name);
	else if (rc != -EINPROGRESS)
		log_warn("%s: CMB provider withdrawn (%d)", c->name, rc);
}

/* The provider that publishes c's CMB (NULL when none). */
struct p2p_provider *nvme_pci_cmb_provider(struct nvme_ctrl *c)
{
	struct nvme_pci *np = c->attach;
	return np ? np->cmb : NULL;
}

/* The PCI function of c. */
struct pci_dev *nvme_pci_dev(struct nvme_ctrl *c)
{
	struct nvme_pci *np = c->attach;
	return np ? np->pdev : NULL;
}

static bool bar0_usable(const struct pci_dev *d)
{
	const struct pci_bar *b0 = &d->bars[0];
	return d->nbars && b0->addr && b0->size >= 0x2000 && b0->state != PCI_BAR_BAD &&
	       (b0->kind == PCI_BAR_KIND_MEM32 || b0->kind == PCI_BAR_KIND_MEM64);
}

/* Registers and BARs of d for the core. */
static void bus_setup(struct nvme_pci *np, struct pci_dev *d)
{
	np->pdev = d;
	np->regs = (volatile uint8_t *)(uintptr_t)d->bars[0].addr;
	np->bus = (struct nvme_bus){
		.read32 = pci_rd32, .read64 = pci_rd64, .write32 = pci_wr32, .write64 = pci_wr64,
		.dma_alloc = pci_dma_alloc, .dma_free = pci_dma_free, .cmb_alloc = pci_cmb_alloc,
		.cmb_free = pci_cmb_free, .delay = pci_delay, .ctx = np,
	};
	for (unsigned i = 0; i < d->nbars && i < 6; i++) {
		struct pci_bar *b = &d->bars[i];
		if (!b->addr || !b->size || b->state == PCI_BAR_BAD || b->state == PCI_BAR_OUTSIDE_WINDOW ||
		    b->kind == PCI_BAR_KIND_IO)
			continue;
		np->bus.bar_bus[i] = b->addr;
		np->bus.bar_size[i] = b->size;
		np->bus.bar_cpu[i] = (void *)(uintptr_t)b->addr; /* identity-mapped */
	}
	pci_enable(d, true);
	/* completions (every CQ on MSI-X entry 0) end the poll loop's idle halts */
	char bdf[8];
	bool had = np->irq.on;
	int rc = pci_msix_wake(d, 0, "nvme", &np->irq);
	np->bus.cq_irq = rc == 0;
	if (rc && rc != -ENOTSUP)
		log_warn("%s: no MSI-X wake-up (%d): completions wait for the idle timer", pci_bdf_str(d->bdf, bdf), rc);
	if (np->bus.cq_irq && !had)
		nvme_pci_irqs++;
}

/* Publish the CMB past the SQs the core carved at its start. */
static void cmb_publish(struct nvme_pci *np, struct pci_dev *d)
{
	struct nvme_cmb *m = &np->ctrl.cmb;
	if (!m->usable)
		return;
	np->cmb = p2p_provider_add(d, m->info.bir, m->info.offset + m->reserved, m->size - m->reserved, 0);
	if (np->cmb)
		p2p_provider_publish(np->cmb, true);
	else
		log_warn("%s: CMB not published as P2P memory (pci/ refused it)", np->ctrl.name);
}

/* The hot-removed controller that waits for a card at d's address, or NULL. */
static struct nvme_pci *parked_for(const struct pci_dev *d)
{
	for (unsigned i = 0; i < nvme_count(); i++) {
		struct nvme_ctrl *c = nvme_at(i);
		struct nvme_pci *np = c->on_reset == nvme_pci_on_reset ? c->attach : NULL;
		if (np && np->parked && np->pdev == d)
			return np;
	}
	return NULL;
}

/* A card hot-added where a removed drive was: the same controller (name, registry slot,
 * counters) comes back. */
static int reattach(struct nvme_pci *np, struct pci_dev *d)
{
	char name[sizeof(np->ctrl.name)], bdf[8];
	struct nvme_recovery_stats rec = np->ctrl.rec;
	int rc;

	snprintf(name, sizeof(name), "%s", np->ctrl.name);
	bus_setup(np, d);
	rc = nvme_ctrl_init(&np->ctrl, name, &np->bus, 1);
	np->ctrl.attach = np; /* init zeroed the struct */
	np->ctrl.on_reset = nvme_pci_on_reset;
	np->ctrl.rec = rec;
	if (rc) {
		log_err("%s: hot-added at %s but its bring-up failed (%d): stays removed", name,
			pci_bdf_str(d->bdf, bdf), rc);
		nvme_ctrl_detach(&np->ctrl, true);
		return rc;
	}
	cmb_publish(np, d);
	np->parked = false;
	d->driver_data = np;
	log_info("%s: %s hot-added: live again with %u namespace(s)%s", name, pci_bdf_str(d->bdf, bdf),
		 np->ctrl.nns, np->cmb ? ", CMB published" : "");
	return 0;
}

static int nvme_pci_probe(struct pci_dev *d, const struct pci_device_id *id)
{
	char bdf[8], name[16];
	struct nvme_pci *np;
	int rc;

	(void)id;
	if (!bar0_usable(d))
		return -ENODEV;
	if ((np = parked_for(d)))
		return reattach(np, d);
	if (!(np = calloc(1, sizeof(*np))))
		return -ENOMEM;
	bus_setup(np, d);
	snprintf(name, sizeof(name), "nvme%u", nvme_pci_count);
	np->ctrl.attach = np;
	if ((rc = nvme_ctrl_init(&np->ctrl, name, &np->bus, 1)))
		goto fail;
	np->ctrl.attach = np; /* init zeroed the struct */
	np->ctrl.on_reset = nvme_pci_on_reset;
	cmb_publish(np, d);
	if ((rc = nvme_register(&np->ctrl)))
		goto fail_provider;
	d->driver_data = np;
	nvme_pci_count++;
	log_info("%s: %s attached%s", name, pci_bdf_str(d->bdf, bdf), np->cmb ? ", CMB published" : "");
	return 0;

fail_provider:
	if (np->cmb)
		p2p_provider_remove(np->cmb);
fail:
	nvme_ctrl_fini(&np->ctrl);
	if (np->irq.on) {
		pci_msix_disable(d, &np->irq);
		nvme_pci_irqs--;
	}
	free(np);
	return rc;
}

/* The device is going away (hot-plug) or the appliance unbinds it. */
static void nvme_pci_remove(struct pci_dev *d)
{
	struct nvme_pci *np = d->driver_data;
	if (!np)
		return;
	bool present = pci_read(d, PCI_VENDOR_ID, 2) != 0xffff;
	nvme_ctrl_detach(&np->ctrl, present);
	if (np->irq.on) {
		if (present)
			pci_msix_disable(d, &np->irq);
		np->irq.on = false;
		nvme_pci_irqs--;
	}
	if (np->cmb) {
		p2p_provider_publish(np->cmb, false);
		uint64_t used = np->cmb->bytes_in_use;
		if (p2p_provider_remove(np->cmb))
			log_warn("%s: %llu B of its CMB still allocated: the slot stays powered until they are freed",
				 np->ctrl.name, (unsigned long long)used);
		np->cmb = NULL;
	}
	np->parked = true;
	d->driver_data = NULL;
}

static const struct pci_device_id nvme_pci_ids[] = {
	PCI_DEVICE_CLASS(0x010802, 0xffffff), /* mass storage, NVM, NVMe */
	PCI_ID_END,
};
PCI_DRIVER(nvme, nvme_pci_ids, nvme_pci_probe, nvme_pci_remove);

/* Drain the I/O queues that have work outstanding (asynchronous users). */
static int nvme_poll(unsigned budget)
{
	int work = 0;
	uint64_t now = clock_now_ns();
	for (unsigned i = 0; i < nvme_count(); i++) {
		struct nvme_ctrl *c = nvme_at(i);
		work += nvme_ctrl_check(c, now); /* CFS, removal, a reset a timeout asked for */
		if (c->state != NVME_CTRL_LIVE)
			continue;
		for (unsigned q = 0; q < c->nio; q++)
			if (c->io[q].outstanding) {
				int n = nvme_qpair_poll(&c->io[q], budget);
				if (n > 0)
					work += n;
			}
		if (c->admin.outstanding) {
			int n = nvme_qpair_poll(&c->admin, budget);
			if (n > 0)
				work += n;
		}
	}
	return work;
}

/* Completions raise MSI-X (entry 0 unmasked) while the loop sleeps on interrupts; masked
 * (the Pending Bit keeps what came) while it polls under load. */
static int nvme_arm(bool on)
{
	if (!nvme_pci_irqs)
		return -ENOTSUP;
	for (unsigned i = 0; i < nvme_count(); i++) {
		struct nvme_ctrl *c = nvme_at(i);
		struct nvme_pci *np = c->on_reset == nvme_pci_on_reset ? c->attach : NULL;
		if (np && np->irq.on && !np->parked && np->irq.masked == on)
			pci_msix_mask(np->pdev, &np->irq, !on);
	}
	return 0;
}
POLLER_WAKE(nvme, nvme_poll, nvme_arm);
