/*
 * p2p_placement.c - where a payload goes when two devices move it peer to peer: the one
 * owner of the decisions "may this drive read that NIC fragment in place" and "which
 * device memory do a drive and a NIC both reach", under Linux's distance rules
 * (p2pdma.c). The NVMe/TCP target calls it today, the RDMA transport next.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "pci.h"

/* Provider id: index plus one. */
uint16_t p2p_provider_id(const struct p2p_provider *p)
{
	for (unsigned i = 0; p && i < p2p_provider_count(); i++)
		if (p2p_provider_at(i) == p)
			return (uint16_t)(i + 1);
	return P2P_PROVIDER_ID_HOST;
}

/* The provider of an id. */
struct p2p_provider *p2p_provider_by_id(uint16_t id)
{
	return id != P2P_PROVIDER_ID_HOST && id <= p2p_provider_count() ? p2p_provider_at(id - 1u) : NULL;
}

/* A function's own provider. */
struct p2p_provider *p2p_provider_of_dev(const struct pci_dev *dev)
{
	for (unsigned i = 0; dev && i < p2p_provider_count(); i++)
		if (p2p_provider_at(i)->dev == dev)
			return p2p_provider_at(i);
	return NULL;
}

/* May client use provider id's memory in place? */
int p2p_place_reach(struct pci_dev *client, uint16_t id, enum p2p_place_peer peer, char *why, size_t whylen)
{
	struct p2p_provider *p = p2p_provider_by_id(id);
	struct p2p_verdict v;
	char r[120], a[8], b[8];

	if (!client || !p) {
		snprintf(why, whylen, "%s", !client ? "not a local PCI device" : "unknown P2P provider");
		return -ENODEV;
	}
	if (p2p_dev_distance(p->dev, client, &v) < 0) {
		snprintf(why, whylen, "%s cannot reach provider %s: %s", pci_bdf_str(client->bdf, a),
			 pci_bdf_str(p->dev->bdf, b), p2p_verdict_str(&v, r, sizeof(r)));
		return -EXDEV;
	}
	if (peer == P2P_PLACE_OWN_ONLY && p->dev != client) {
		snprintf(why, whylen, "%s may use only its own memory in place, not %s's", pci_bdf_str(client->bdf, a),
			 pci_bdf_str(p->dev->bdf, b));
		return -EXDEV;
	}
	return 0;
}

/* Memory both owner and peer reach. */
int p2p_place_alloc(struct pci_dev *owner, struct pci_dev *peer, uint32_t len, struct p2p_place *out, char *why,
		    size_t whylen)
{
	struct p2p_provider *p = p2p_provider_of_dev(owner);
	struct p2p_verdict v;
	dma_addr_t addr;
	char r[120], a[8], b[8];

	memset(out, 0, sizeof(*out));
	if (!owner || !peer || p2p_provider_count() == 0) {
		snprintf(why, whylen, "%s", !owner ? "the owner is not a local PCI device"
					    : !peer ? "no peer device" : "no P2P provider published");
		return -ENODEV;
	}
	if (!p || p2p_dev_distance(p->dev, peer, &v) < 0) {
		struct pci_dev *const clients[2] = { owner, peer };
		if (!(p = p2p_find(clients, 2, &v))) {
			snprintf(why, whylen, "no provider both %s and %s reach: %s", pci_bdf_str(owner->bdf, a),
				 pci_bdf_str(peer->bdf, b), p2p_verdict_str(&v, r, sizeof(r)));
			return -EXDEV;
		}
	}
	if (!(pci_read(p->dev, PCI_COMMAND, 2) & PCI_COMMAND_MEMORY)) {
		/* a DMA into a BAR whose decode is off completes and drops the data */
		snprintf(why, whylen, "provider %s has memory decode off", pci_bdf_str(p->dev->bdf, a));
		return -EIO;
	}
	if (p2p_alloc(p, len, &addr, NULL)) {
		snprintf(why, whylen, "device memory of %s exhausted", pci_bdf_str(p->dev->bdf, a));
		return -ENOMEM;
	}
	out->addr = addr;
	out->offset = addr.bus - p->bus_base;
	out->len = len;
	out->provider = p2p_provider_id(p);
	return 0;
}

/* Free a placement. */
int p2p_place_free(const struct p2p_place *pl)
{
	struct p2p_provider *p = p2p_provider_by_id(pl->provider);
	return p ? p2p_free(p, pl->addr, pl->len) : -EINVAL;
}
