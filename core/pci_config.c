/*
 * pci_config.c - the settings file's PCI and P2P keys, handed to pci/ as a policy.
 *
 * pci/ does not include core/ (layering: core may call pci, not the reverse), so the
 * keys are read here, at INIT_LEVEL_EARLY, before enumeration runs at INIT_LEVEL_BUS:
 *   pci.acs = auto | isolate | open | firmware    (default auto; see pci/acs.c)
 *   pci.acs.isolate = BB:DD.F[, BB:DD.F...]       ports never opened for P2P
 *   p2p.host_bridge_allowlist = VVVV:DDDD[, ...]  host bridges that may route P2P between
 *                                                 root ports (default: none, as in Linux
 *                                                 for an unknown host bridge)
 *   pci.assign = on | off                         place BARs firmware left unassigned
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../lib/log.h"
#include "../lib/poller.h"
#include "../pci/pci.h"
#include "config.h"

LOG_MODULE_USE(kernel);

/* Split a comma/space separated list and call fn on each item; stops at max items. */
static void each_item(const char *list, void (*fn)(const char *item, void *ctx), void *ctx)
{
	char buf[CONFIG_VALUE_MAX];
	snprintf(buf, sizeof(buf), "%s", list);
	for (char *save = NULL, *tok = strtok_r(buf, ", \t", &save); tok; tok = strtok_r(NULL, ", \t", &save))
		fn(tok, ctx);
}

static void add_isolate(const char *item, void *ctx)
{
	struct pci_policy *p = ctx;
	int bdf = pci_parse_bdf(item);
	if (bdf < 0)
		log_err("config: pci.acs.isolate: '%s' is not BB:DD.F", item);
	else if (p->n_isolate >= PCI_POLICY_MAX_LIST)
		log_err("config: pci.acs.isolate: more than %d ports", PCI_POLICY_MAX_LIST);
	else
		p->isolate[p->n_isolate++] = (uint16_t)bdf;
}

static void add_allow(const char *item, void *ctx)
{
	struct pci_policy *p = ctx;
	unsigned v, d;
	char tail;
	if (sscanf(item, "%x:%x%c", &v, &d, &tail) != 2 || v > 0xffff || d > 0xffff)
		log_err("config: p2p.host_bridge_allowlist: '%s' is not VVVV:DDDD", item);
	else if (p->n_allow >= PCI_POLICY_MAX_LIST)
		log_err("config: p2p.host_bridge_allowlist: more than %d entries", PCI_POLICY_MAX_LIST);
	else
		p->host_bridge_allow[p->n_allow++] = v << 16 | d;
}

static int pci_config_apply(void)
{
	struct config *cfg = config_global();
	struct pci_policy p;
	const char *v;
	bool assign;

	pci_policy_default(&p);
	if ((v = config_get(cfg, "pci.acs"))) {
		if (strcmp(v, "auto") == 0)
			p.acs_mode = PCI_ACS_MODE_AUTO;
		else if (strcmp(v, "isolate") == 0)
			p.acs_mode = PCI_ACS_MODE_ISOLATE;
		else if (strcmp(v, "open") == 0)
			p.acs_mode = PCI_ACS_MODE_OPEN;
		else if (strcmp(v, "firmware") == 0)
			p.acs_mode = PCI_ACS_MODE_FIRMWARE;
		else
			log_err("config: pci.acs '%s' is not auto, isolate, open or firmware (auto used)", v);
	}
	if ((v = config_get(cfg, "pci.acs.isolate")))
		each_item(v, add_isolate, &p);
	if ((v = config_get(cfg, "p2p.host_bridge_allowlist")))
		each_item(v, add_allow, &p);
	if (config_get_bool(cfg, "pci.assign", true, &assign) < 0)
		log_err("config: pci.assign is not a boolean (on used)");
	else
		p.assign_bars = assign;
	pci_configure(&p);
	return 0;
}
INITCALL(pci_config, INIT_LEVEL_EARLY, pci_config_apply);
