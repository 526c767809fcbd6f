/*
 * acs.c - Access Control Services policy (PCIe 5.0 6.12, 7.7.8).
 *
 * ACS decides whether a port may route a peer-to-peer request sideways (to a sibling
 * below the same switch or root complex) or must redirect it upstream, where an IOMMU
 * (or nothing) sees it. The appliance wants exactly the peer-to-peer paths it will use
 * to stay below their common bridge, and everything else isolated:
 *
 * - mode auto (default): a function with ACS is "on a wanted path" when it lies on the
 *   route (Linux's walk, see route.c) between two peer-to-peer candidates (storage,
 *   network, display, accelerator endpoints) whose route is allowed: below a common
 *   bridge, or through an allowlisted host bridge. On such functions Request Redirect,
 *   Completion Redirect and Egress Control are cleared and Source Validation is turned
 *   on; on every other function SV, RR, CR and UF are turned on where implemented.
 *   Ports listed in `pci.acs.isolate` are never opened.
 * - isolate: every ACS function isolated; open: RR/CR/EC cleared everywhere (SV on);
 *   firmware: nothing written.
 * Translation Blocking and Direct Translated P2P are left as found (they concern
 * address translation, which this identity-mapped appliance does not use).
 * Every write is read back; a mismatch is logged as an error and counted.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "../lib/log.h"
#include "pci_internal.h"

LOG_MODULE_USE(pci);

#define ACS_ISOLATE_BITS (PCI_ACS_SV | PCI_ACS_RR | PCI_ACS_CR | PCI_ACS_UF)

const char *pci_acs_mode_name(enum pci_acs_mode m)
{
	switch (m) {
	case PCI_ACS_MODE_AUTO: return "auto";
	case PCI_ACS_MODE_ISOLATE: return "isolate";
	case PCI_ACS_MODE_OPEN: return "open";
	case PCI_ACS_MODE_FIRMWARE: return "firmware";
	default: return "?";
	}
}

const char *pci_acs_decision_name(enum pci_acs_decision d)
{
	switch (d) {
	case PCI_ACS_P2P: return "p2p-path";
	case PCI_ACS_ISOLATED: return "isolated";
	case PCI_ACS_FIRMWARE: return "firmware";
	default: return "none";
	}
}

char *pci_acs_bits_str(uint16_t bits, char *buf, size_t cap)
{
	static const char *const names[] = { "SV", "TB", "RR", "CR", "UF", "EC", "DT" };
	size_t l = 0;
	buf[0] = 0;
	for (unsigned i = 0; i < 7; i++)
		if (bits & (1u << i))
			l += (size_t)snprintf(buf + l, l < cap ? cap - l : 0, "%s%s", l ? " " : "", names[i]);
	if (!l)
		snprintf(buf, cap, "-");
	return buf;
}

static bool listed_isolated(const struct pci_topo *t, uint16_t bdf)
{
	for (unsigned i = 0; i < t->policy.n_isolate; i++)
		if (t->policy.isolate[i] == bdf)
			return true;
	return false;
}

/* Mark every function on the route between each pair of allowed candidates. */
static void mark_wanted(struct pci_topo *t, bool *wanted)
{
	bool host_ok = pci_host_bridge_allowed(t);

	for (unsigned i = 0; i < t->ndevs; i++) {
		struct pci_dev *a = &t->devs[i];
		if (!p2p_candidate(a))
			continue;
		for (unsigned j = 0; j < t->ndevs; j++) {
			struct pci_dev *b = &t->devs[j];
			int da, db;
			if (i == j || !p2p_candidate(b))
				continue;
			struct pci_dev *c = p2p_common_upstream(a, b, &da, &db);
			if (!c && !host_ok)
				continue;
			for (struct pci_dev *x = a; x; x = pci_upstream(x)) {
				wanted[x - t->devs] = true;
				if (x == c)
					break;
			}
			for (struct pci_dev *x = b; x && x != c; x = pci_upstream(x))
				wanted[x - t->devs] = true;
		}
	}
}

int pci_acs_apply(struct pci_topo *t)
{
	bool wanted[PCI_MAX_DEVS];
	int failed = 0;

	memset(wanted, 0, sizeof(wanted));
	if (t->policy.acs_mode == PCI_ACS_MODE_AUTO)
		mark_wanted(t, wanted);
	for (unsigned i = 0; i < t->ndevs; i++) {
		struct pci_dev *d = &t->devs[i];
		char bdf[8], from[32], to[32];
		if (!d->acs_off) {
			d->acs_decision = PCI_ACS_NONE;
			continue;
		}
		uint16_t off = (uint16_t)(d->acs_off + PCI_ACS_CTRL);
		uint16_t ctrl = (uint16_t)pci_read(d, off, 2), want;
		switch (t->policy.acs_mode) {
		case PCI_ACS_MODE_FIRMWARE:
			d->acs_decision = PCI_ACS_FIRMWARE;
			break;
		case PCI_ACS_MODE_OPEN:
			d->acs_decision = listed_isolated(t, d->bdf) ? PCI_ACS_ISOLATED : PCI_ACS_P2P;
			break;
		case PCI_ACS_MODE_ISOLATE:
			d->acs_decision = PCI_ACS_ISOLATED;
			break;
		default:
			d->acs_decision = wanted[i] && !listed_isolated(t, d->bdf) ? PCI_ACS_P2P : PCI_ACS_ISOLATED;
			break;
		}
		if (d->acs_decision == PCI_ACS_FIRMWARE) {
			d->acs_ctrl = ctrl;
			d->acs_verified = true;
			continue;
		}
		if (d->acs_decision == PCI_ACS_P2P)
			want = (uint16_t)((ctrl & ~PCI_ACS_REDIR) | (d->acs_cap & PCI_ACS_SV));
		else
			want = (uint16_t)(ctrl | (d->acs_cap & ACS_ISOLATE_BITS));
		/* controls that are not implemented must stay 0; bits above DT are preserved */
		want = (uint16_t)((want & ~PCI_ACS_ALL) | (want & d->acs_cap & PCI_ACS_ALL));
		pci_write(d, off, 2, want);
		uint16_t rb = (uint16_t)pci_read(d, off, 2);
		d->acs_ctrl = rb;
		d->acs_verified = rb == want;
		pci_bdf_str(d->bdf, bdf);
		if (!d->acs_verified) {
			failed++;
			t->anomalies++;
			log_err("%s: ACS control write 0x%04x read back 0x%04x (%s policy not in force)", bdf, want, rb,
				pci_acs_decision_name(d->acs_decision));
		} else {
			log_info("%s: ACS %s: control %s -> %s, read back", bdf, pci_acs_decision_name(d->acs_decision),
				 pci_acs_bits_str(ctrl, from, sizeof(from)), pci_acs_bits_str(rb, to, sizeof(to)));
		}
	}
	return failed;
}
