/*
 * pci_settings.c - the PCI and P2P policy and the settings that choose it, read by
 * enumeration and ACS programming at INIT_LEVEL_BUS (core stores the file's values
 * before any initcall runs):
 *   pci.acs = auto | isolate | open | firmware    (default auto; see acs.c)
 *   pci.acs.isolate = BB:DD.F[, BB:DD.F...]       ports never opened for P2P
 *   p2p.host_bridge_allowlist = VVVV:DDDD[, ...]  host bridges that may route P2P between
 *                                                 root ports (default: none, as in Linux
 *                                                 for an unknown host bridge)
 *   pci.assign = on | off                         place BARs firmware left unassigned
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "../lib/config_key.h"
#include "pci.h"

static struct pci_policy policy = { .acs_mode = PCI_ACS_MODE_AUTO, .assign_bars = true };

/* Set the policy. */
void pci_configure(const struct pci_policy *p)
{
	policy = *p;
}

/* The policy in force. */
const struct pci_policy *pci_policy_current(void)
{
	return &policy;
}

static const struct config_choice acs_choices[] = {
	{ "auto", PCI_ACS_MODE_AUTO }, { "isolate", PCI_ACS_MODE_ISOLATE }, { "open", PCI_ACS_MODE_OPEN },
	{ "firmware", PCI_ACS_MODE_FIRMWARE }, { NULL, 0 } };
CONFIG_ENUM(pci_acs, "pci.acs", &policy.acs_mode, acs_choices, "auto", NULL,
	    "ACS: auto opens only ports on allowed P2P paths and isolates the rest; isolate; open; "
	    "firmware leaves ACS as found");
CONFIG_BOOL(pci_assign, "pci.assign", &policy.assign_bars, "on", NULL, "place BARs the firmware left at 0");

/* One item of a list: 0 and *out, or -EINVAL. */
typedef int (*list_item_fn)(const char *item, uint32_t *out);

/* Parse a comma/space separated list of at most PCI_POLICY_MAX_LIST items into out[];
 * all or nothing: a bad item refuses the whole value. Returns the count or -EINVAL. */
static int parse_list(const char *name, const char *text, list_item_fn fn, const char *form, uint32_t *out,
		      char *why, size_t whylen)
{
	char buf[CONFIG_VALUE_MAX];
	int n = 0;

	snprintf(buf, sizeof(buf), "%s", text);
	for (char *save = NULL, *tok = strtok_r(buf, ", \t", &save); tok; tok = strtok_r(NULL, ", \t", &save)) {
		if (n == PCI_POLICY_MAX_LIST) {
			snprintf(why, whylen, "%s: more than %d entries", name, PCI_POLICY_MAX_LIST);
			return -EINVAL;
		}
		if (fn(tok, &out[n])) {
			snprintf(why, whylen, "%s: '%s' is not %s", name, tok, form);
			return -EINVAL;
		}
		n++;
	}
	return n;
}

static int bdf_item(const char *item, uint32_t *out)
{
	int bdf = pci_parse_bdf(item);
	if (bdf < 0)
		return -EINVAL;
	*out = (uint32_t)bdf;
	return 0;
}

static int vendor_device_item(const char *item, uint32_t *out)
{
	unsigned v, d;
	char tail;
	if (sscanf(item, "%x:%x%c", &v, &d, &tail) != 2 || v > 0xffff || d > 0xffff)
		return -EINVAL;
	*out = v << 16 | d;
	return 0;
}

static int parse_isolate(const struct config_key *k, const char *name, const char *text, char *why,
			 size_t whylen)
{
	uint32_t items[PCI_POLICY_MAX_LIST];
	int n = parse_list(name, text, bdf_item, "BB:DD.F", items, why, whylen);

	(void)k;
	if (n < 0)
		return n;
	for (int i = 0; i < n; i++)
		policy.isolate[i] = (uint16_t)items[i];
	policy.n_isolate = (unsigned)n;
	return 0;
}
CONFIG_CUSTOM(pci_acs_isolate, "pci.acs.isolate", parse_isolate, "BB:DD.F[, BB:DD.F...] (at most 8)", "", NULL,
	      "ports never opened for P2P, whatever pci.acs says");

static int parse_allowlist(const struct config_key *k, const char *name, const char *text, char *why,
			   size_t whylen)
{
	uint32_t items[PCI_POLICY_MAX_LIST];
	int n = parse_list(name, text, vendor_device_item, "VVVV:DDDD", items, why, whylen);

	(void)k;
	if (n < 0)
		return n;
	memcpy(policy.host_bridge_allow, items, (size_t)n * sizeof(items[0]));
	policy.n_allow = (unsigned)n;
	return 0;
}
CONFIG_CUSTOM(p2p_host_bridge_allowlist, "p2p.host_bridge_allowlist", parse_allowlist,
	      "VVVV:DDDD[, VVVV:DDDD...] (at most 8)", "", NULL,
	      "host bridges (vendor:device) P2P may cross between root ports; none by default, as Linux");
