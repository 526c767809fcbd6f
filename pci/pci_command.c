/*
 * pci_command.c - the console's `lspci` (tree, -v details) and `p2p` (providers, policy,
 * distance matrix with reasons, provider choice, allocation).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../lib/command.h"
#include "pci_internal.h"

static const char *const cache_names[] = { "write-back", "write-combining", "uncached" };

static void size_str(uint64_t size, char *buf, size_t cap)
{
	if (size >= (1ull << 30) && !(size & ((1ull << 30) - 1)))
		snprintf(buf, cap, "%lluG", (unsigned long long)(size >> 30));
	else if (size >= (1ull << 20) && !(size & ((1ull << 20) - 1)))
		snprintf(buf, cap, "%lluM", (unsigned long long)(size >> 20));
	else if (size >= 1024 && !(size & 1023))
		snprintf(buf, cap, "%lluK", (unsigned long long)(size >> 10));
	else
		snprintf(buf, cap, "%llu", (unsigned long long)size);
}

static void print_line(const struct pci_dev *d)
{
	char bdf[8];
	for (unsigned i = 1; i < d->depth; i++)
		printf("|  ");
	if (d->depth)
		printf("+- ");
	printf("%s %04x:%04x %s", pci_bdf_str(d->bdf, bdf), d->vendor, d->device, pci_class_name(d->class));
	if (d->exp_off)
		printf(" [%s]", pci_exp_type_name(d->exp_type));
	if (pci_is_bridge(d))
		printf(" buses %02x-%02x", d->secondary, d->subordinate);
	if (d->link_width) {
		unsigned s = pci_link_speed_x10(d->link_speed);
		printf(" x%u %u.%uGT/s", d->link_width, s / 10, s % 10);
	}
	if (d->acs_off)
		printf(" acs:%s", pci_acs_decision_name(d->acs_decision));
	if (d->driver)
		printf(" driver:%s", d->driver->name);
	if (d->anomalies)
		printf(" (%u anomalies)", d->anomalies);
	printf("\n");
}

static void print_window(const char *name, const struct pci_window *w)
{
	if (w->base <= w->limit)
		printf(" %s 0x%llx-0x%llx", name, (unsigned long long)w->base, (unsigned long long)w->limit);
	else
		printf(" %s closed", name);
}

static void print_details(const struct pci_dev *d)
{
	char s[40], t[40];
	printf("    class %06x rev %02x header %u%s command 0x%04x\n", d->class, d->revision, d->hdr_type,
	       d->multifunction ? " multi-function" : "", (unsigned)pci_read(d, PCI_COMMAND, 2));
	for (unsigned i = 0; i < d->nbars; i++) {
		const struct pci_bar *b = &d->bars[i];
		if (!b->size && b->state != PCI_BAR_BAD)
			continue;
		if (b->state == PCI_BAR_BAD) {
			printf("    BAR%u invalid (sizing returned garbage)\n", i);
			continue;
		}
		size_str(b->size, s, sizeof(s));
		printf("    BAR%u %s%s 0x%llx size %s (0x%llx)", i,
		       b->kind == PCI_BAR_KIND_IO ? "io" : b->kind == PCI_BAR_KIND_MEM64 ? "mem64" : "mem32",
		       b->prefetch ? " prefetchable" : "", (unsigned long long)b->addr, s, (unsigned long long)b->size);
		if (b->cache >= 0 && b->cache <= 2)
			printf(" [%s]", cache_names[(int)b->cache]);
		if (b->state == PCI_BAR_PLACED)
			printf(" [assigned here]");
		if (b->state == PCI_BAR_UNASSIGNED)
			printf(" [UNASSIGNED]");
		if (b->state == PCI_BAR_OUTSIDE_WINDOW)
			printf(" [OUTSIDE BRIDGE WINDOW]");
		printf("\n");
	}
	if (pci_is_bridge(d)) {
		printf("    windows:");
		print_window("io", &d->io_win);
		print_window("mem", &d->mem_win);
		print_window(d->pref64 ? "pref64" : "pref", &d->pref_win);
		printf("\n");
	}
	if (d->ncaps) {
		printf("    caps:");
		for (unsigned i = 0; i < d->ncaps; i++)
			printf(" %s@0x%x", pci_cap_name(d->caps[i].id, d->caps[i].ext), d->caps[i].off);
		printf("\n");
	}
	if (d->link_max_width) {
		unsigned a = pci_link_speed_x10(d->link_speed), m = pci_link_speed_x10(d->link_max_speed);
		printf("    link: x%u %u.%uGT/s (capable x%u %u.%uGT/s)\n", d->link_width, a / 10, a % 10,
		       d->link_max_width, m / 10, m % 10);
	}
	if (d->acs_off) {
		uint16_t live = (uint16_t)pci_read(d, (uint16_t)(d->acs_off + PCI_ACS_CTRL), 2);
		printf("    ACS@0x%x: cap 0x%04x (%s) ctrl 0x%04x (%s) firmware 0x%04x policy %s %s\n", d->acs_off,
		       d->acs_cap, pci_acs_bits_str(d->acs_cap, s, sizeof(s)), live,
		       pci_acs_bits_str(live, t, sizeof(t)), d->acs_ctrl_found, pci_acs_decision_name(d->acs_decision),
		       d->acs_verified && live == d->acs_ctrl ? "verified" : "NOT VERIFIED");
	}
}

static int lspci_command(int argc, char **argv)
{
	struct pci_topo *t = pci_system();
	int verbose = 0, only = -1;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "-v") == 0)
			verbose = 1;
		else if ((only = pci_parse_bdf(argv[i])) < 0)
			return -EINVAL;
	}
	if (!t) {
		printf("lspci: no PCI segment (no MCFG)\n");
		return -ENODEV;
	}
	for (unsigned i = 0; i < t->ndevs; i++) {
		const struct pci_dev *d = &t->devs[i];
		if ((only >= 0 && d->bdf != only) || d->removed)
			continue;
		print_line(d);
		if (verbose || only >= 0)
			print_details(d);
	}
	if (only >= 0 && !pci_find(t, (uint16_t)only)) {
		printf("lspci: no function %s\n", argv[argc - 1]);
		return -ENOENT;
	}
	if (only < 0)
		printf("%u functions, segment %04x buses %02x-%02x, enumerated in %llu us, %u anomalies\n", t->ndevs,
		       t->cfg.segment, t->cfg.bus_start, t->cfg.bus_end, (unsigned long long)(t->enum_ns / 1000),
		       t->anomalies);
	return 0;
}
CONSOLE_COMMAND(lspci, "[-v] [BB:DD.F]", "PCI tree; -v: BARs, windows, capabilities, link, ACS", lspci_command);

static void p2p_overview(struct pci_topo *t)
{
	struct pci_dev *c[PCI_MAX_DEVS];
	struct pci_dev *h = pci_host_bridge(t);
	unsigned n = 0;
	char a[8], b[8], why[200];

	printf("policy: pci.acs=%s; host bridge", pci_acs_mode_name(t->policy.acs_mode));
	if (h)
		printf(" %s %04x:%04x %s", pci_bdf_str(h->bdf, a), h->vendor, h->device,
		       pci_host_bridge_allowed(t) ? "allowlisted" : "not allowlisted");
	else
		printf(" none");
	printf(" (p2p.host_bridge_allowlist)\n");
	printf("providers: %u\n", p2p_provider_count());
	for (unsigned i = 0; i < p2p_provider_count(); i++) {
		struct p2p_provider *p = p2p_provider_at(i);
		printf("  %s BAR%u [0x%llx-0x%llx] size %llu KiB free %llu KiB granule %llu allocs %llu frees %llu "
		       "failures %llu %s\n",
		       pci_bdf_str(p->dev->bdf, a), p->bar, (unsigned long long)p->bus_base,
		       (unsigned long long)(p->bus_base + p->size - 1), (unsigned long long)(p->size >> 10),
		       (unsigned long long)(p2p_provider_free_bytes(p) >> 10), (unsigned long long)p->granule,
		       (unsigned long long)p->allocs, (unsigned long long)p->frees, (unsigned long long)p->failures,
		       p->published ? "published" : "private");
	}
	for (unsigned i = 0; i < t->ndevs; i++)
		if (p2p_candidate(&t->devs[i]) && !t->devs[i].removed)
			c[n++] = &t->devs[i];
	printf("distance (provider row -> client column; - refused, hN through the host bridge):\n%-9s", "");
	for (unsigned j = 0; j < n; j++)
		printf(" %-8s", pci_bdf_str(c[j]->bdf, a));
	printf("\n");
	for (unsigned i = 0; i < n; i++) {
		printf("%-9s", pci_bdf_str(c[i]->bdf, a));
		for (unsigned j = 0; j < n; j++) {
			struct p2p_verdict v;
			int d = p2p_dev_distance(c[i], c[j], &v);
			char cell[12];
			if (d < 0)
				snprintf(cell, sizeof(cell), "-");
			else if (v.map == P2P_MAP_THRU_HOST_BRIDGE)
				snprintf(cell, sizeof(cell), "h%d", d);
			else
				snprintf(cell, sizeof(cell), "%d", d);
			printf(" %-8s", cell);
		}
		printf("\n");
	}
	for (unsigned i = 0; i < n; i++)
		for (unsigned j = 0; j < n; j++) {
			struct p2p_verdict v, back;
			if (i == j)
				continue;
			int d = p2p_dev_distance(c[i], c[j], &v);
			/* print each pair once, and the reverse direction only when it differs */
			if (j < i && p2p_dev_distance(c[j], c[i], &back) == d && back.reason == v.reason)
				continue;
			p2p_verdict_str(&v, why, sizeof(why));
			if (d < 0)
				printf("  %s -> %s: %s\n", pci_bdf_str(c[i]->bdf, a), pci_bdf_str(c[j]->bdf, b), why);
			else
				printf("  %s -> %s: distance %d, %s\n", pci_bdf_str(c[i]->bdf, a),
				       pci_bdf_str(c[j]->bdf, b), d, why);
		}
}

static struct pci_dev *arg_dev(struct pci_topo *t, const char *s)
{
	int bdf = pci_parse_bdf(s);
	struct pci_dev *d = bdf < 0 ? NULL : pci_find(t, (uint16_t)bdf);
	if (!d)
		printf("p2p: no function '%s'\n", s);
	return d;
}

static struct p2p_provider *provider_of(struct pci_dev *d)
{
	for (unsigned i = 0; i < p2p_provider_count(); i++)
		if (p2p_provider_at(i)->dev == d)
			return p2p_provider_at(i);
	printf("p2p: no provider on that function\n");
	return NULL;
}

static int p2p_command(int argc, char **argv)
{
	struct pci_topo *t = pci_system();
	char a[8], why[200];

	if (!t) {
		printf("p2p: no PCI segment\n");
		return -ENODEV;
	}
	if (argc == 1) {
		p2p_overview(t);
		return 0;
	}
	if (strcmp(argv[1], "publish") == 0 && (argc == 4 || argc == 5)) {
		struct pci_dev *d = arg_dev(t, argv[2]);
		if (!d)
			return -ENOENT;
		unsigned bar = (unsigned)strtoul(argv[3], NULL, 0);
		uint64_t size = argc == 5 ? strtoull(argv[4], NULL, 0) : (bar < d->nbars ? d->bars[bar].size : 0);
		struct p2p_provider *p = p2p_provider_add(d, bar, 0, size, 0);
		if (!p) {
			printf("p2p: BAR%u of %s cannot be published\n", bar, argv[2]);
			return -EINVAL;
		}
		p2p_provider_publish(p, true);
		printf("published %s BAR%u [0x%llx size 0x%llx] mapped %s\n", pci_bdf_str(d->bdf, a), bar,
		       (unsigned long long)p->bus_base, (unsigned long long)p->size,
		       d->bars[bar].cache >= 0 && d->bars[bar].cache <= 2 ? cache_names[(int)d->bars[bar].cache] : "?");
		return 0;
	}
	if (strcmp(argv[1], "find") == 0 && argc >= 3) {
		struct pci_dev *cl[16];
		unsigned n = 0;
		for (int i = 2; i < argc && n < 16; i++)
			if (!(cl[n++] = arg_dev(t, argv[i])))
				return -ENOENT;
		struct p2p_verdict v;
		struct p2p_provider *p = p2p_find(cl, n, &v);
		if (!p) {
			printf("no compatible provider: %s\n", p2p_verdict_str(&v, why, sizeof(why)));
			return 0;
		}
		printf("nearest provider %s BAR%u total distance %d (%s)\n", pci_bdf_str(p->dev->bdf, a), p->bar,
		       v.distance, p2p_verdict_str(&v, why, sizeof(why)));
		return 0;
	}
	if (strcmp(argv[1], "alloc") == 0 && argc == 4) {
		struct pci_dev *d = arg_dev(t, argv[2]);
		struct p2p_provider *p = d ? provider_of(d) : NULL;
		dma_addr_t addr;
		if (!p)
			return -ENOENT;
		int rc = p2p_alloc(p, strtoull(argv[3], NULL, 0), &addr, NULL);
		if (rc)
			return rc;
		printf("allocated 0x%llx class %s\n", (unsigned long long)addr.bus, mem_class_name(addr.cls));
		return 0;
	}
	if (strcmp(argv[1], "free") == 0 && argc == 5) {
		struct pci_dev *d = arg_dev(t, argv[2]);
		struct p2p_provider *p = d ? provider_of(d) : NULL;
		if (!p)
			return -ENOENT;
		return p2p_free(p, dma_addr_device(strtoull(argv[3], NULL, 0)), strtoull(argv[4], NULL, 0));
	}
	return -EINVAL;
}
CONSOLE_COMMAND(p2p, "[publish BDF BAR [SIZE] | find BDF... | alloc BDF SIZE | free BDF ADDR SIZE]",
		"peer-to-peer: providers, ACS policy, distance matrix with reasons", p2p_command);
