/*
 * msix.c - MSI-X as a wake-up source: one table entry of a function made to raise a CPU
 * vector that arch/ hands out (arch/irq.h). The appliance polls; the interrupt only ends
 * the poll loop's idle halt, so a driver asks for one entry, programs its device to
 * signal through it (NVMe: completion queues' IV; e1000e: IVAR) and is done.
 *
 * MSI-X (PCIe base spec 7.7.2): the capability's Message Control holds the table size,
 * Function Mask and Enable; the Table Offset/BIR dword says which BAR holds the table of
 * 16-byte entries (Message Address, Message Data, Vector Control with its Mask Bit).
 * Every entry but the one asked for stays masked; INTx is turned off.
 */
#include <errno.h>
#include <stdint.h>
#include "../arch/irq.h"
#include "../lib/config_key.h"
#include "pci.h"
#include "pci_regs.h"

#define PCI_CACHE_UC 2 /* arch_cache: uncached (registers) */

static bool msix_wake = true;
CONFIG_BOOL(pci_msix_wake, "pci.msix_wake", &msix_wake, "on", NULL,
	    "device interrupts (MSI-X) end the poll loop's idle halts; off: every device polled, halts bounded by "
	    "loop.halt_us (drivers probed from then on)");

static volatile uint32_t *msix_table(struct pci_dev *d, unsigned *size)
{
	uint16_t ctrl = (uint16_t)pci_read(d, d->msix_off + PCI_MSIX_FLAGS, 2);
	uint32_t tbl = pci_read(d, d->msix_off + PCI_MSIX_TABLE, 4);
	unsigned bir = tbl & PCI_MSIX_BIR;
	uint64_t off = tbl & ~(uint64_t)PCI_MSIX_BIR;
	struct pci_bar *b;

	*size = (ctrl & PCI_MSIX_FLAGS_QSIZE) + 1u;
	if (ctrl == 0xffff || bir >= d->nbars)
		return NULL;
	b = &d->bars[bir];
	if (!b->size || off > b->size || (uint64_t)*size * PCI_MSIX_ENTRY_SIZE > b->size - off)
		return NULL;
	/* the table wants uncached, ordered stores: map the BAR so unless it already is, and
	 * never change a BAR mapped otherwise (a CMB's write-combining mapping) */
	if (b->cache < 0 && pci_bar_map(d, bir, PCI_CACHE_UC))
		return NULL;
	if (b->cache != PCI_CACHE_UC && d->topo->map)
		return NULL;
	return (volatile uint32_t *)(uintptr_t)(b->addr + off);
}

/* Entry `entry` of d's MSI-X table raises a CPU wake-up vector. */
int pci_msix_wake(struct pci_dev *d, unsigned entry, const char *owner, struct pci_irq *irq)
{
	volatile uint32_t *t;
	unsigned size;
	uint16_t ctrl;
	int rc;

	if (!msix_wake)
		return -ENOTSUP;
	if (!d->msix_off)
		return -ENODEV;
	if (!(t = msix_table(d, &size)))
		return -EINVAL;
	if (entry >= size)
		return -ENODEV;
	if (!irq->vector) {
		struct arch_irq_msg m;
		if ((rc = arch_irq_alloc(owner, &m)))
			return rc;
		irq->vector = m.vector;
		irq->addr = m.addr;
		irq->data = m.data;
	}
	/* enabled with the whole function masked while the table is written */
	ctrl = (uint16_t)pci_read(d, d->msix_off + PCI_MSIX_FLAGS, 2);
	pci_write(d, d->msix_off + PCI_MSIX_FLAGS, 2, ctrl | PCI_MSIX_FLAGS_ENABLE | PCI_MSIX_FLAGS_MASKALL);
	for (unsigned i = 0; i < size; i++) {
		volatile uint32_t *e = t + i * PCI_MSIX_ENTRY_SIZE / 4;
		e[PCI_MSIX_ENTRY_CTRL / 4] = PCI_MSIX_ENTRY_CTRL_MASK;
	}
	volatile uint32_t *e = t + entry * PCI_MSIX_ENTRY_SIZE / 4;
	e[PCI_MSIX_ENTRY_ADDR_LO / 4] = (uint32_t)irq->addr;
	e[PCI_MSIX_ENTRY_ADDR_HI / 4] = (uint32_t)(irq->addr >> 32);
	e[PCI_MSIX_ENTRY_DATA / 4] = irq->data;
	e[PCI_MSIX_ENTRY_CTRL / 4] = 0;
	d->command |= PCI_COMMAND_INTX_DISABLE;
	pci_write(d, PCI_COMMAND, 2, d->command);
	pci_write(d, d->msix_off + PCI_MSIX_FLAGS, 2, (ctrl | PCI_MSIX_FLAGS_ENABLE) & ~PCI_MSIX_FLAGS_MASKALL);
	ctrl = (uint16_t)pci_read(d, d->msix_off + PCI_MSIX_FLAGS, 2);
	if (!(ctrl & PCI_MSIX_FLAGS_ENABLE) || (ctrl & PCI_MSIX_FLAGS_MASKALL))
		return -EIO;
	irq->entry = entry;
	irq->on = true;
	irq->masked = false;
	irq->table_entry = e;
	return 0;
}

/* Mask or unmask irq's entry. */
void pci_msix_mask(struct pci_dev *d, struct pci_irq *irq, bool masked)
{
	(void)d;
	if (!irq->on || !irq->table_entry)
		return;
	irq->table_entry[PCI_MSIX_ENTRY_CTRL / 4] = masked ? PCI_MSIX_ENTRY_CTRL_MASK : 0;
	irq->masked = masked;
}

/* MSI-X off on d. */
void pci_msix_disable(struct pci_dev *d, struct pci_irq *irq)
{
	if (!d->msix_off || !irq->on)
		return;
	uint16_t ctrl = (uint16_t)pci_read(d, d->msix_off + PCI_MSIX_FLAGS, 2);
	pci_write(d, d->msix_off + PCI_MSIX_FLAGS, 2, ctrl & ~PCI_MSIX_FLAGS_ENABLE);
	irq->on = false;
}
