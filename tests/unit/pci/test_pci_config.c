// sources: core/pci_config.c core/config.c pci/enum.c pci/ecam.c lib/log.c
/*
 * The settings file's pci.* and p2p.* keys turned into a pci_policy (core/pci_config.c):
 * defaults, every mode, lists, and bad values reported without stopping the boot.
 */
#include <criterion/criterion.h>
#include <string.h>
#include "core/config.h"
#include "lib/log.h"
#include "lib/poller.h"
#include "pci/pci.h"

LOG_MODULE_DEFINE(kernel);

static struct pci_policy got;
static int configured;

/* pci_configure() lives in pci/pci_init.c (image only): capture what it is given. */
void pci_configure(const struct pci_policy *p)
{
	got = *p;
	configured++;
}

static void apply(const char *text)
{
	const struct initcall *ic;
	config_parse(config_global(), text, strlen(text), NULL, NULL);
	configured = 0;
	LINKER_SET_FOREACH(initcalls, ic)
		if (strcmp(ic->name, "pci_config") == 0) {
			cr_assert_eq(ic->level, INIT_LEVEL_EARLY, "before enumeration (INIT_LEVEL_BUS)");
			cr_assert_eq(ic->fn(), 0);
		}
	cr_assert_eq(configured, 1);
}

Test(pci_config, defaults)
{
	apply("");
	cr_assert_eq(got.acs_mode, PCI_ACS_MODE_AUTO);
	cr_assert_eq(got.n_allow, 0);
	cr_assert_eq(got.n_isolate, 0);
	cr_assert(got.assign_bars);
}

Test(pci_config, every_key)
{
	apply("pci.acs = isolate\npci.acs.isolate = 00:1c.0, 02:01.0\n"
	      "p2p.host_bridge_allowlist = 8086:29c0 8086:3c00\npci.assign = off\n");
	cr_assert_eq(got.acs_mode, PCI_ACS_MODE_ISOLATE);
	cr_assert_eq(got.n_isolate, 2);
	cr_assert_eq(got.isolate[0], PCI_BDF(0, 0x1c, 0));
	cr_assert_eq(got.isolate[1], PCI_BDF(2, 1, 0));
	cr_assert_eq(got.n_allow, 2);
	cr_assert_eq(got.host_bridge_allow[0], 0x808629c0u);
	cr_assert_eq(got.host_bridge_allow[1], 0x80863c00u);
	cr_assert(!got.assign_bars);
	apply("pci.acs = open\n");
	cr_assert_eq(got.acs_mode, PCI_ACS_MODE_OPEN);
	apply("pci.acs = firmware\n");
	cr_assert_eq(got.acs_mode, PCI_ACS_MODE_FIRMWARE);
}

Test(pci_config, bad_values_are_reported_and_skipped)
{
	unsigned long errs = log_count(LOG_ERR);
	apply("pci.acs = loose\npci.acs.isolate = 00:1c.0 zz:00.0 00:40.0\n"
	      "p2p.host_bridge_allowlist = 8086-29c0, 8086:29c0, 123456:1\npci.assign = maybe\n");
	cr_assert_eq(got.acs_mode, PCI_ACS_MODE_AUTO);
	cr_assert_eq(got.n_isolate, 1);
	cr_assert_eq(got.n_allow, 1);
	cr_assert_eq(got.host_bridge_allow[0], 0x808629c0u);
	cr_assert(got.assign_bars);
	cr_assert_eq(log_count(LOG_ERR) - errs, 6);
}

Test(pci_config, lists_are_bounded)
{
	apply("pci.acs.isolate = 0:0.0 0:1.0 0:2.0 0:3.0 0:4.0 0:5.0 0:6.0 0:7.0 0:8.0 0:9.0\n");
	cr_assert_eq(got.n_isolate, PCI_POLICY_MAX_LIST);
}
