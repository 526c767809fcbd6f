/*
 * pci_internal.h - what the files of pci/ share with each other and nobody else. The route
 * facts below are route.c's; acs.c and p2pdma.c both use them and never call each other.
 */
#ifndef PCI_PCI_INTERNAL_H
#define PCI_PCI_INTERNAL_H

#include "pci.h"

/* The upstream bridge of d (NULL on the root bus). */
static inline struct pci_dev *pci_upstream(const struct pci_dev *d)
{
	return d->parent;
}

/* Linux's walk: the nearest function that is a or an upstream bridge of a and also b or an
 * upstream bridge of b; NULL when they meet only at the host bridge. *dist_a / *dist_b get
 * the hops from a and b up to it (to the top of their trees when NULL). */
struct pci_dev *p2p_common_upstream(struct pci_dev *a, struct pci_dev *b, int *dist_a, int *dist_b);

/* The host bridge of the topology (function 0 of device 0 on the root bus, class 06/00),
 * or NULL. */
struct pci_dev *pci_host_bridge(struct pci_topo *t);

/* Is the topology's host bridge on the policy's allowlist? */
bool pci_host_bridge_allowed(struct pci_topo *t);

/* Is d an endpoint that takes part in peer-to-peer (storage, network, display, accelerator)? */
bool p2p_candidate(const struct pci_dev *d);

#endif
