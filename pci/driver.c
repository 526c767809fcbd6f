/*
 * driver.c - the PCI driver model: drivers register through the pci_drivers linker set
 * (PCI_DRIVER in pci.h) with an id/class match table; every enumerated function is offered
 * to the drivers whose tables match it, the most specific match first (vendor/device before
 * class, link order only among equals, so the result does not depend on how files were
 * linked); the first whose probe returns 0 owns the function until remove.
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

/* How specific a matching entry is: an exact vendor/device beats a class match, a longer
 * class mask beats a shorter one. */
static unsigned specificity(const struct pci_device_id *id)
{
	unsigned s = (unsigned)__builtin_popcount(id->class_mask & 0xffffff);
	if (id->vendor != PCI_ANY_ID)
		s += 32;
	if (id->device != PCI_ANY_ID)
		s += 32;
	return s;
}

#define PCI_MAX_CANDIDATES 16

int pci_probe_all(struct pci_topo *t)
{
	const struct pci_driver *drv;
	int bound = 0;

	for (unsigned i = 0; i < t->ndevs; i++) {
		struct pci_dev *d = &t->devs[i];
		const struct pci_driver *cand[PCI_MAX_CANDIDATES];
		const struct pci_device_id *cid[PCI_MAX_CANDIDATES];
		unsigned n = 0;
		char bdf[8];

		if (d->driver)
			continue;
		LINKER_SET_FOREACH(pci_drivers, drv) {
			const struct pci_device_id *id = pci_match(drv->ids, d);
			if (!id || n == PCI_MAX_CANDIDATES)
				continue;
			/* insertion sort: most specific first, link order among equals */
			unsigned j = n++;
			for (; j > 0 && specificity(cid[j - 1]) < specificity(id); j--) {
				cand[j] = cand[j - 1];
				cid[j] = cid[j - 1];
			}
			cand[j] = drv;
			cid[j] = id;
		}
		for (unsigned k = 0; k < n; k++) {
			d->driver = cand[k];
			int rc = cand[k]->probe ? cand[k]->probe(d, cid[k]) : 0;
			if (rc == 0) {
				log_debug("%s: bound to %s", pci_bdf_str(d->bdf, bdf), cand[k]->name);
				bound++;
				break;
			}
			d->driver = NULL;
			d->driver_data = NULL;
			log_warn("%s: %s probe failed (%d)", pci_bdf_str(d->bdf, bdf), cand[k]->name, rc);
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
