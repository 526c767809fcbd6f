/*
 * driver.c - the PCI driver model: drivers register through the pci_drivers linker set
 * (PCI_DRIVER in pci.h) with an id/class match table; every enumerated function is offered
 * to them in link order; the first driver whose table matches and whose probe returns 0
 * owns the function until remove.
 */
#include <errno.h>
#include <stdio.h>
#include "../lib/log.h"
#include "pci.h"

LOG_MODULE_USE(pci);

const struct pci_device_id *pci_match(const struct pci_device_id *ids, const struct pci_dev *d)
{
	if (!ids)
		return NULL;
	for (; ids->vendor || ids->device || ids->class_mask; ids++) {
		if (ids->vendor != PCI_ANY_ID && ids->vendor != d->vendor)
			continue;
		if (ids->device != PCI_ANY_ID && ids->device != d->device)
			continue;
		if ((ids->class & ids->class_mask) != (d->class & ids->class_mask))
			continue;
		return ids;
	}
	return NULL;
}

int pci_probe_all(struct pci_topo *t)
{
	const struct pci_driver *drv;
	int bound = 0;

	for (unsigned i = 0; i < t->ndevs; i++) {
		struct pci_dev *d = &t->devs[i];
		char bdf[8];
		if (d->driver)
			continue;
		LINKER_SET_FOREACH(pci_drivers, drv) {
			const struct pci_device_id *id = pci_match(drv->ids, d);
			if (!id)
				continue;
			d->driver = drv;
			int rc = drv->probe ? drv->probe(d, id) : 0;
			if (rc == 0) {
				log_debug("%s: bound to %s", pci_bdf_str(d->bdf, bdf), drv->name);
				bound++;
				break;
			}
			d->driver = NULL;
			d->driver_data = NULL;
			log_warn("%s: %s probe failed (%d)", pci_bdf_str(d->bdf, bdf), drv->name, rc);
		}
	}
	return bound;
}

void pci_remove(struct pci_dev *d)
{
	if (!d->driver)
		return;
	if (d->driver->remove)
		d->driver->remove(d);
	d->driver = NULL;
	d->driver_data = NULL;
}

void pci_remove_all(struct pci_topo *t)
{
	for (unsigned i = t->ndevs; i-- > 0;)
		pci_remove(&t->devs[i]);
}
