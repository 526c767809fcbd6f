/*
 * p2pdma.c - peer-to-peer DMA: which pairs of functions may exchange DMA directly, how far
 * apart they are, and device memory (e.g. an NVMe CMB) published by drivers as providers.
 *
 * The rules are Linux's (drivers/pci/p2pdma.c, Documentation/driver-api/pci/p2pdma.rst):
 * - a function to itself: distance 0;
 * - two functions that share an upstream bridge (a switch, a port, or one multi-function
 *   device): the hops from each up to the nearest common bridge, e.g. 2 for two functions
 *   of one device, 4 for two devices on different downstream ports of one switch;
 * - any function on that path (the common bridge counted on the provider's side) with ACS
 *   Request/Completion Redirect or Egress Control enabled sends the traffic up to the root
 *   complex; so does the absence of any common upstream bridge (different root ports, the
 *   root bus). Such a path is allowed only when the host bridge is on the allowlist
 *   (`p2p.host_bridge_allowlist`), otherwise it is refused with the reason.
 * One deliberate difference: when choosing a provider, routes below a common bridge rank
 * before routes through the host bridge, and ties go to the lowest BDF rather than to a
 * random pick, so runs are reproducible.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../lib/log.h"
#include "../mm/pool.h"
#include "pci_internal.h"

LOG_MODULE_USE(pci);

#define P2P_DEFAULT_GRANULE 4096u
#define P2P_MIN_GRANULE 64u

static struct mm_pool provider_pool;
static bool provider_pool_ready;
static struct p2p_provider *providers[P2P_MAX_PROVIDERS];
static unsigned nproviders;

static void note_acs(struct p2p_verdict *v, struct pci_dev *d)
{
	if (pci_acs_redirects(d) && v->nacs < P2P_MAX_ACS_BRIDGES)
		v->acs[v->nacs++] = d;
}

/* Distance between two functions (Linux's rules, see the top of this file). */
int p2p_dev_distance(struct pci_dev *provider, struct pci_dev *client, struct p2p_verdict *v)
{
	struct p2p_verdict local;
	int da, db;

	if (!v)
		v = &local;
	memset(v, 0, sizeof(*v));
	v->client = client;
	v->distance = -1;
	if (!provider || !client || provider->topo != client->topo) {
		v->reason = P2P_REFUSED_NO_CLIENT;
		return -1;
	}
	if (provider == client) {
		v->map = P2P_MAP_BUS_ADDR;
		v->reason = P2P_SAME_FUNCTION;
		v->distance = 0;
		return 0;
	}
	struct pci_dev *common = p2p_common_upstream(provider, client, &da, &db);
	bool allowed = pci_host_bridge_allowed(provider->topo);
	v->common = common;
	if (!common) {
		v->map = allowed ? P2P_MAP_THRU_HOST_BRIDGE : P2P_MAP_NOT_SUPPORTED;
		v->reason = allowed ? P2P_HOST_BRIDGE_ALLOWED : P2P_REFUSED_NO_COMMON;
		v->distance = allowed ? da + db : -1;
		return v->distance;
	}
	for (struct pci_dev *x = provider;; x = pci_upstream(x)) {
		note_acs(v, x);
		if (x == common)
			break;
	}
	for (struct pci_dev *x = client; x != common; x = pci_upstream(x))
		note_acs(v, x);
	if (v->nacs == 0) {
		v->map = P2P_MAP_BUS_ADDR;
		v->reason = PCI_BDF_BUS(provider->bdf) == PCI_BDF_BUS(client->bdf) &&
					    PCI_BDF_DEV(provider->bdf) == PCI_BDF_DEV(client->bdf)
				    ? P2P_SAME_DEVICE
				    : P2P_COMMON_UPSTREAM;
		v->distance = da + db;
		return v->distance;
	}
	v->map = allowed ? P2P_MAP_THRU_HOST_BRIDGE : P2P_MAP_NOT_SUPPORTED;
	v->reason = allowed ? P2P_ACS_HOST_BRIDGE_ALLOWED : P2P_REFUSED_ACS;
	v->distance = allowed ? da + db : -1;
	return v->distance;
}

/* Sum of distances to every client. */
int p2p_distance(struct pci_dev *provider, struct pci_dev *const clients[], unsigned n, struct p2p_verdict *v)
{
	struct p2p_verdict one, worst;
	int total = 0;

	memset(&worst, 0, sizeof(worst));
	worst.reason = P2P_REFUSED_NO_CLIENT;
	worst.distance = -1;
	if (n == 0 || !clients) {
		if (v)
			*v = worst;
		return -1;
	}
	for (unsigned i = 0; i < n; i++) {
		int d = p2p_dev_distance(provider, clients[i], &one);
		if (d < 0) {
			if (v)
				*v = one;
			return -1;
		}
		total += d;
		/* report the route that goes furthest: through the host bridge over a switch */
		if (i == 0 || one.map == P2P_MAP_THRU_HOST_BRIDGE || (worst.map != P2P_MAP_THRU_HOST_BRIDGE && d > worst.distance))
			worst = one;
	}
	worst.distance = total;
	if (v)
		*v = worst;
	return total;
}

static const char *port_kind(const struct pci_dev *d)
{
	if (d->exp_off && pci_is_bridge(d))
		return pci_exp_type_name(d->exp_type);
	return pci_is_bridge(d) ? "bridge" : "function";
}

/* Explain a verdict. */
char *p2p_verdict_str(const struct p2p_verdict *v, char *buf, size_t cap)
{
	char a[8], hb[48] = "no host bridge found";
	char acs[8 * P2P_MAX_ACS_BRIDGES + 1] = "";
	struct pci_dev *h = NULL;

	if (v->client)
		h = pci_host_bridge(v->client->topo);
	if (h)
		snprintf(hb, sizeof(hb), "host bridge %s (%04x:%04x)", pci_bdf_str(h->bdf, a), h->vendor, h->device);
	for (unsigned i = 0; i < v->nacs; i++) {
		size_t l = strlen(acs);
		snprintf(acs + l, sizeof(acs) - l, "%s%s", i ? "," : "", pci_bdf_str(v->acs[i]->bdf, a));
	}
	switch (v->reason) {
	case P2P_SAME_FUNCTION:
		snprintf(buf, cap, "same function");
		break;
	case P2P_SAME_DEVICE:
		snprintf(buf, cap, "functions of one device, below %s", v->common ? pci_bdf_str(v->common->bdf, a) : "?");
		break;
	case P2P_COMMON_UPSTREAM:
		snprintf(buf, cap, "below common upstream %s %s", port_kind(v->common), pci_bdf_str(v->common->bdf, a));
		break;
	case P2P_HOST_BRIDGE_ALLOWED:
		snprintf(buf, cap, "no common upstream bridge: through %s, allowlisted", hb);
		break;
	case P2P_ACS_HOST_BRIDGE_ALLOWED:
		snprintf(buf, cap, "ACS redirect at %s: through %s, allowlisted", acs, hb);
		break;
	case P2P_REFUSED_NO_COMMON:
		snprintf(buf, cap, "refused: no common upstream bridge and %s is not on p2p.host_bridge_allowlist", hb);
		break;
	case P2P_REFUSED_ACS:
		snprintf(buf, cap, "refused: ACS redirect set at %s forces it up to the root complex and %s is not allowlisted",
			 acs, hb);
		break;
	default:
		snprintf(buf, cap, "refused: no client");
		break;
	}
	return buf;
}

/* --- providers --- */

static int provider_pool_init(void)
{
	if (provider_pool_ready)
		return 0;
	int rc = mm_pool_init(&provider_pool, "p2p-providers", sizeof(struct p2p_provider), P2P_MAX_PROVIDERS);
	if (rc == 0)
		provider_pool_ready = true;
	return rc;
}

struct p2p_provider *p2p_provider_add(struct pci_dev *dev, unsigned bar, uint64_t offset, uint64_t size,
				      uint64_t granule)
{
	char b[8];

	if (!dev || bar >= dev->nbars)
		return NULL;
	struct pci_bar *r = &dev->bars[bar];
	if (!r->size || r->state == PCI_BAR_BAD || !r->addr || r->state == PCI_BAR_OUTSIDE_WINDOW ||
	    r->kind == PCI_BAR_KIND_IO || offset > r->size || size > r->size - offset || size == 0)
		return NULL;
	if (!granule)
		granule = P2P_DEFAULT_GRANULE;
	if (granule < P2P_MIN_GRANULE || (granule & (granule - 1)) || size < granule)
		return NULL;
	for (unsigned i = 0; i < nproviders; i++) {
		struct p2p_provider *o = providers[i];
		if (r->addr + offset < o->bus_base + o->size && o->bus_base < r->addr + offset + size) {
			log_warn("%s: BAR%u range overlaps an existing provider", pci_bdf_str(dev->bdf, b), bar);
			return NULL;
		}
	}
	if (nproviders >= P2P_MAX_PROVIDERS || provider_pool_init())
		return NULL;
	struct p2p_provider *p = mm_pool_zalloc(&provider_pool);
	if (!p)
		return NULL;
	p->dev = dev;
	p->bar = bar;
	p->bus_base = r->addr + offset;
	p->granule = granule;
	p->nchunks = size / granule;
	p->size = p->nchunks * granule;
	p->bitmap = calloc((p->nchunks + 63) / 64, sizeof(uint64_t));
	if (!p->bitmap) {
		mm_pool_free(&provider_pool, p);
		return NULL;
	}
	/* Device memory with no read side effects: write-combining for CPU stores (arch WC = 1). */
	if (!r->prefetch)
		log_warn("%s: BAR%u is not prefetchable: P2P memory stays uncached", pci_bdf_str(dev->bdf, b), bar);
	else if (pci_bar_map(dev, bar, 1) < 0)
		log_warn("%s: could not map BAR%u write-combining", pci_bdf_str(dev->bdf, b), bar);
	providers[nproviders++] = p;
	log_info("%s: P2P memory [0x%llx-0x%llx] (%llu KiB, granule %llu) from BAR%u", pci_bdf_str(dev->bdf, b),
		 (unsigned long long)p->bus_base, (unsigned long long)(p->bus_base + p->size - 1),
		 (unsigned long long)(p->size >> 10), (unsigned long long)granule, bar);
	return p;
}

void p2p_provider_publish(struct p2p_provider *p, bool publish)
{
	if (p)
		p->published = publish;
}

int p2p_provider_remove(struct p2p_provider *p)
{
	unsigned i;
	for (i = 0; i < nproviders && providers[i] != p; i++)
		;
	if (i == nproviders)
		return -EINVAL;
	if (p->bytes_in_use)
		return -EBUSY;
	for (; i + 1 < nproviders; i++)
		providers[i] = providers[i + 1];
	nproviders--;
	free(p->bitmap);
	mm_pool_free(&provider_pool, p);
	return 0;
}

int p2p_provider_remove_all(void)
{
	int busy = 0;
	for (unsigned i = nproviders; i-- > 0;)
		if (p2p_provider_remove(providers[i]) < 0)
			busy++;
	return busy;
}

unsigned p2p_provider_count(void)
{
	return nproviders;
}

struct p2p_provider *p2p_provider_at(unsigned i)
{
	return i < nproviders ? providers[i] : NULL;
}

struct p2p_provider *p2p_find(struct pci_dev *const clients[], unsigned n, struct p2p_verdict *v)
{
	struct p2p_provider *best = NULL;
	struct p2p_verdict bv, cur;
	int best_d = -1;

	memset(&bv, 0, sizeof(bv));
	bv.distance = -1;
	bv.reason = P2P_REFUSED_NO_CLIENT;
	for (unsigned i = 0; i < nproviders; i++) {
		struct p2p_provider *p = providers[i];
		if (!p->published)
			continue;
		int d = p2p_distance(p->dev, clients, n, &cur);
		if (d < 0) {
			if (!best)
				bv = cur; /* explain the refusal when nothing fits */
			continue;
		}
		bool better = !best ||
			      (cur.map == P2P_MAP_BUS_ADDR && bv.map != P2P_MAP_BUS_ADDR) ||
			      (cur.map == bv.map && (d < best_d || (d == best_d && p->dev->bdf < best->dev->bdf)));
		if (better) {
			best = p;
			best_d = d;
			bv = cur;
		}
	}
	if (v)
		*v = bv;
	return best;
}

static bool chunk_used(const struct p2p_provider *p, uint64_t i)
{
	return (p->bitmap[i / 64] >> (i % 64)) & 1;
}

static void chunks_set(struct p2p_provider *p, uint64_t first, uint64_t n, bool used)
{
	for (uint64_t i = first; i < first + n; i++) {
		if (used)
			p->bitmap[i / 64] |= 1ull << (i % 64);
		else
			p->bitmap[i / 64] &= ~(1ull << (i % 64));
	}
}

int p2p_alloc(struct p2p_provider *p, uint64_t size, dma_addr_t *addr, void **cpu)
{
	if (!p || size == 0 || size > p->size) {
		if (p)
			p->failures++;
		return -ENOMEM;
	}
	uint64_t need = (size + p->granule - 1) / p->granule, run = 0;
	for (uint64_t i = 0; i < p->nchunks; i++) {
		if (chunk_used(p, i)) {
			run = 0;
			continue;
		}
		if (++run == need) {
			uint64_t first = i + 1 - need;
			chunks_set(p, first, need, true);
			p->allocs++;
			p->bytes_in_use += need * p->granule;
			if (p->bytes_in_use > p->high_water)
				p->high_water = p->bytes_in_use;
			*addr = dma_addr_device(p->bus_base + first * p->granule);
			if (cpu)
				*cpu = (void *)(uintptr_t)addr->bus; /* identity-mapped; bus == CPU physical (pci.h) */
			return 0;
		}
	}
	p->failures++;
	return -ENOMEM;
}

int p2p_free(struct p2p_provider *p, dma_addr_t addr, uint64_t size)
{
	if (!p || addr.cls != MEM_CLASS_DEVICE || addr.bus < p->bus_base || size == 0 ||
	    addr.bus - p->bus_base >= p->size || (addr.bus - p->bus_base) % p->granule) {
		if (p)
			p->bad_frees++;
		return -EINVAL;
	}
	uint64_t first = (addr.bus - p->bus_base) / p->granule;
	uint64_t n = (size + p->granule - 1) / p->granule;
	if (n > p->nchunks - first) {
		p->bad_frees++;
		return -EINVAL;
	}
	for (uint64_t i = first; i < first + n; i++) {
		if (!chunk_used(p, i)) {
			p->bad_frees++;
			return -EINVAL;
		}
	}
	chunks_set(p, first, n, false);
	p->frees++;
	p->bytes_in_use -= n * p->granule;
	return 0;
}

uint64_t p2p_provider_free_bytes(const struct p2p_provider *p)
{
	return p->size - p->bytes_in_use;
}

enum mem_class p2p_addr_class(uint64_t bus)
{
	for (unsigned i = 0; i < nproviders; i++)
		if (bus >= providers[i]->bus_base && bus - providers[i]->bus_base < providers[i]->size)
			return MEM_CLASS_DEVICE;
	return MEM_CLASS_HOST;
}
