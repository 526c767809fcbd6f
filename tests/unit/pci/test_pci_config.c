// sources: pci/pci_settings.c core/config.c core/config_keys.c pci/enum.c pci/ecam.c lib/log.c lib/ipv4_text.c
/*
 * The pci.* and p2p.* settings declared in pci/pci_settings.c: defaults, every mode,
 * lists, bad values reported with their line and the default kept, bounded lists.
 */
#include <criterion/criterion.h>
#include <string.h>
#include "core/config.h"
#include "lib/log.h"
#include "pci/pci.h"

static struct config cfg;
static unsigned errors;

static const struct pci_policy *apply(const char *text)
{
	config_keys_defaults(NULL, NULL);
	config_parse(&cfg, text, strlen(text), NULL, NULL);
	errors = config_keys_apply(&cfg, NULL, NULL);
	return pci_policy_current();
}

Test(pci_config, defaults)
{
	const struct pci_policy *p = apply("");
	cr_assert_eq(p->acs_mode, PCI_ACS_MODE_AUTO);
	cr_assert_eq(p->n_allow, 0);
	cr_assert_eq(p->n_isolate, 0);
	cr_assert(p->assign_bars);
}

Test(pci_config, every_key)
{
	const struct pci_policy *p = apply("pci.acs = isolate\npci.acs.isolate = 00:1c.0, 02:01.0\n"
					   "p2p.host_bridge_allowlist = 8086:29c0 8086:3c00\npci.assign = off\n");
	cr_assert_eq(errors, 0);
	cr_assert_eq(p->acs_mode, PCI_ACS_MODE_ISOLATE);
	cr_assert_eq(p->n_isolate, 2);
	cr_assert_eq(p->isolate[0], PCI_BDF(0, 0x1c, 0));
	cr_assert_eq(p->isolate[1], PCI_BDF(2, 1, 0));
	cr_assert_eq(p->n_allow, 2);
	cr_assert_eq(p->host_bridge_allow[0], 0x808629c0u);
	cr_assert_eq(p->host_bridge_allow[1], 0x80863c00u);
	cr_assert(!p->assign_bars);
	cr_assert_eq(apply("pci.acs = open\n")->acs_mode, PCI_ACS_MODE_OPEN);
	cr_assert_eq(apply("pci.acs = firmware\n")->acs_mode, PCI_ACS_MODE_FIRMWARE);
	cr_assert_eq(apply("")->n_isolate, 0, "back to the default: lists emptied");
}

Test(pci_config, bad_values_are_refused_whole)
{
	const struct pci_policy *p = apply("pci.acs = loose\npci.acs.isolate = 00:1c.0 zz:00.0 00:40.0\n"
					   "p2p.host_bridge_allowlist = 8086:29c0, 123456:1\npci.assign = maybe\n");
	cr_assert_eq(errors, 4);
	cr_assert_eq(p->acs_mode, PCI_ACS_MODE_AUTO);
	cr_assert_eq(p->n_isolate, 0, "a list with a bad item is refused, not half applied");
	cr_assert_eq(p->n_allow, 0);
	cr_assert(p->assign_bars);
}

Test(pci_config, lists_are_bounded)
{
	const struct pci_policy *p = apply("pci.acs.isolate = 0:0.0 0:1.0 0:2.0 0:3.0 0:4.0 0:5.0 0:6.0 0:7.0\n");
	cr_assert_eq(errors, 0);
	cr_assert_eq(p->n_isolate, PCI_POLICY_MAX_LIST);
	p = apply("pci.acs.isolate = 0:0.0 0:1.0 0:2.0 0:3.0 0:4.0 0:5.0 0:6.0 0:7.0 0:8.0\n");
	cr_assert_eq(errors, 1);
	cr_assert_eq(p->n_isolate, 0);
}
