/*
 * route.c - the route a peer-to-peer request takes through the PCI tree, the facts that
 * both the ACS policy (acs.c) and the P2P distance rules (p2pdma.c) decide on: the nearest
 * common upstream bridge of two functions (Linux's walk), the host bridge and its
 * allowlist, which endpoints take part in P2P, and whether a port redirects upstream now.
 * It calls neither of them: acs.c and p2pdma.c both sit above it, so neither calls the other.
 */
#include "pci_internal.h"

/* Does this function have ACS redirection (RR, CR or EC) enabled now? Read live. */
bool pci_acs_redirects(const struct pci_dev *d)
{
	if (!d->acs_off)
		return false;
	uint32_t ctrl = pci_read(d, (uint16_t)(d->acs_off + PCI_ACS_CTRL), 2);
	return ctrl != 0xffff && (ctrl & PCI_ACS_REDIR);
}

/* Is `up` d or one of d's upstream bridges? Counts hops into *dist. */
static bool reaches(struct pci_dev *d, struct pci_dev *up, int *dist)
{
	int n = 0;
	for (; d; d = pci_upstream(d), n++) {
		if (d == up) {
			*dist = n;
			return true;
		}
		if (n > 256)
			break; /* a parent loop cannot happen after enumeration; stay bounded anyway */
	}
	*dist = n;
	return false;
}

/* The nearest function that is a or above a and also b or above b (see pci_internal.h). */
struct pci_dev *p2p_common_upstream(struct pci_dev *a, struct pci_dev *b, int *dist_a, int *dist_b)
{
	int da = 0, db = 0;
	for (struct pci_dev *x = a; x && da <= 256; x = pci_upstream(x), da++) {
		if (reaches(b, x, &db)) {
			*dist_a = da;
			*dist_b = db;
			return x;
		}
	}
	*dist_a = da;
	*dist_b = db;
	return NULL;
}

/* The topology's host bridge (function 0 of device 0 on the root bus, class 06/00), or NULL. */
struct pci_dev *pci_host_bridge(struct pci_topo *t)
{
	struct pci_dev *h = pci_find(t, PCI_BDF(t->cfg.bus_start, 0, 0));
	return h && (h->class >> 8) == 0x0600 ? h : NULL;
}

/* Is the topology's host bridge on the policy's allowlist? */
bool pci_host_bridge_allowed(struct pci_topo *t)
{
	struct pci_dev *h = pci_host_bridge(t);
	if (!h)
		return false;
	for (unsigned i = 0; i < t->policy.n_allow; i++)
		if (t->policy.host_bridge_allow[i] == ((uint32_t)h->vendor << 16 | h->device))
			return true;
	return false;
}

/* Is d an endpoint that takes part in P2P (storage, network, display, accelerator)? */
bool p2p_candidate(const struct pci_dev *d)
{
	unsigned base = d->class >> 16;
	return d->hdr_type == 0 && (base == 0x01 || base == 0x02 || base == 0x03 || base == 0x12);
}
