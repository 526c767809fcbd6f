// sources: pci/enum.c pci/ecam.c pci/acs.c pci/route.c pci/p2pdma.c pci/driver.c lib/log.c mm/pool.c tests/unit/pci/fake_cfg.c
/*
 * ACS policy decisions on the reference topology: auto opens exactly the ports on allowed
 * P2P paths (RR/CR/EC cleared, SV on) and isolates the rest (SV RR CR UF), the allowlist
 * widens the paths to cross root ports, the isolate list and the other modes; every write
 * is read back and a control that does not stick is caught.
 */
#include <criterion/criterion.h>
#include <string.h>
#include "tests/unit/pci/fake_cfg.h"
#include "tests/unit/unit_support.h"

static struct fake f;
#define ISOLATED (PCI_ACS_SV | PCI_ACS_RR | PCI_ACS_CR | PCI_ACS_UF)

static void setup(void)
{
	unit_pools_begin();
	fake_init(&f, 0, 8);
	fake_reference(&f);
}

static void teardown(void)
{
	fake_free(&f);
	unit_pools_end();
}

TestSuite(acs, .init = setup, .fini = teardown);

static uint16_t ctrl(uint16_t bdf)
{
	return fake_r16(&f, bdf, FAKE_ACS_CAP + PCI_ACS_CTRL);
}

static uint8_t decision(uint16_t bdf)
{
	return pci_find(f.topo, bdf)->acs_decision;
}

Test(acs, auto_opens_switch_ports_and_isolates_root_ports)
{
	/* firmware left RR/EC set on a switch port: auto must clear them there */
	fake_w16(&f, BDF(2, 1, 0), FAKE_ACS_CAP + PCI_ACS_CTRL, PCI_ACS_RR | PCI_ACS_EC | PCI_ACS_TB);
	pci_enumerate(f.topo);
	cr_assert_eq(pci_acs_apply(f.topo), 0);
	for (unsigned d = 0; d < 3; d++) {
		cr_assert_eq(decision(BDF(2, d, 0)), PCI_ACS_P2P, "downstream port %u", d);
		cr_assert_eq(ctrl(BDF(2, d, 0)) & (PCI_ACS_REDIR | PCI_ACS_SV), PCI_ACS_SV);
	}
	cr_assert(ctrl(BDF(2, 1, 0)) & PCI_ACS_TB, "translation blocking left as found");
	/* root ports: not on any allowed path without the allowlist */
	cr_assert_eq(decision(BDF(0, 0x1c, 0)), PCI_ACS_ISOLATED);
	cr_assert_eq(ctrl(BDF(0, 0x1c, 0)), ISOLATED);
	cr_assert_eq(ctrl(BDF(0, 0x1d, 0)), ISOLATED);
	cr_assert(pci_find(f.topo, BDF(0, 0x1c, 0))->acs_verified);
	/* and the distances agree with the policy */
	cr_assert_eq(p2p_dev_distance(pci_find(f.topo, BDF(3, 0, 0)), pci_find(f.topo, BDF(4, 0, 0)), NULL), 4);
}

Test(acs, allowlist_opens_the_root_ports)
{
	f.topo->policy.host_bridge_allow[f.topo->policy.n_allow++] = 0x808629c0;
	pci_enumerate(f.topo);
	cr_assert_eq(pci_acs_apply(f.topo), 0);
	cr_assert_eq(decision(BDF(0, 0x1c, 0)), PCI_ACS_P2P);
	cr_assert_eq(ctrl(BDF(0, 0x1c, 0)), PCI_ACS_SV);
	cr_assert_eq(ctrl(BDF(0, 0x1d, 0)), PCI_ACS_SV);
}

Test(acs, a_port_with_no_peer_below_its_switch_stays_isolated)
{
	/* remove the NIC and NVMe B: NVMe A is alone below the switch */
	memset(fake_space(&f, BDF(4, 0, 0)), 0xff, PCI_CFG_SIZE);
	memset(fake_space(&f, BDF(5, 0, 0)), 0xff, PCI_CFG_SIZE);
	memset(fake_space(&f, BDF(5, 0, 1)), 0xff, PCI_CFG_SIZE);
	f.nbars = 0;
	pci_enumerate(f.topo);
	pci_acs_apply(f.topo);
	cr_assert_eq(decision(BDF(2, 0, 0)), PCI_ACS_ISOLATED);
	cr_assert_eq(decision(BDF(2, 1, 0)), PCI_ACS_ISOLATED, "empty port");
	cr_assert_eq(ctrl(BDF(2, 1, 0)), ISOLATED | 0);
}

Test(acs, isolate_list_wins)
{
	f.topo->policy.isolate[f.topo->policy.n_isolate++] = BDF(2, 1, 0);
	pci_enumerate(f.topo);
	pci_acs_apply(f.topo);
	cr_assert_eq(decision(BDF(2, 1, 0)), PCI_ACS_ISOLATED);
	cr_assert(ctrl(BDF(2, 1, 0)) & PCI_ACS_RR);
	cr_assert_eq(decision(BDF(2, 0, 0)), PCI_ACS_P2P);
	/* the isolated port now refuses P2P to NVMe B */
	struct p2p_verdict v;
	cr_assert_eq(p2p_dev_distance(pci_find(f.topo, BDF(3, 0, 0)), pci_find(f.topo, BDF(4, 0, 0)), &v), -1);
	cr_assert_eq(v.reason, P2P_REFUSED_ACS);
}

Test(acs, isolate_mode_and_open_mode)
{
	f.topo->policy.acs_mode = PCI_ACS_MODE_ISOLATE;
	pci_enumerate(f.topo);
	pci_acs_apply(f.topo);
	cr_assert_eq(ctrl(BDF(2, 0, 0)), ISOLATED, "EC is not set by isolation (no egress vector)");
	cr_assert_eq(decision(BDF(2, 0, 0)), PCI_ACS_ISOLATED);
	f.topo->policy.acs_mode = PCI_ACS_MODE_OPEN;
	pci_acs_apply(f.topo);
	cr_assert_eq(ctrl(BDF(2, 0, 0)), PCI_ACS_SV | PCI_ACS_UF, "open clears RR/CR/EC, keeps the rest");
	cr_assert_eq(ctrl(BDF(0, 0x1d, 0)), PCI_ACS_SV | PCI_ACS_UF);
}

Test(acs, firmware_mode_writes_nothing)
{
	fake_w16(&f, BDF(0, 0x1c, 0), FAKE_ACS_CAP + PCI_ACS_CTRL, PCI_ACS_RR);
	f.topo->policy.acs_mode = PCI_ACS_MODE_FIRMWARE;
	pci_enumerate(f.topo);
	unsigned before = f.writes;
	cr_assert_eq(pci_acs_apply(f.topo), 0);
	cr_assert_eq(f.writes, before);
	cr_assert_eq(ctrl(BDF(0, 0x1c, 0)), PCI_ACS_RR);
	cr_assert_eq(decision(BDF(0, 0x1c, 0)), PCI_ACS_FIRMWARE);
}

Test(acs, unimplemented_controls_are_never_set)
{
	fake_w16(&f, BDF(0, 0x1d, 0), FAKE_ACS_CAP + PCI_ACS_CAP, PCI_ACS_SV | PCI_ACS_RR);
	pci_enumerate(f.topo);
	pci_acs_apply(f.topo);
	cr_assert_eq(ctrl(BDF(0, 0x1d, 0)), PCI_ACS_SV | PCI_ACS_RR);
}

Test(acs, a_control_that_does_not_stick_is_reported)
{
	f.acs_stuck_bdf = BDF(0, 0x1d, 0);
	f.acs_stuck_bits = PCI_ACS_RR; /* the write of RR is lost */
	pci_enumerate(f.topo);
	cr_assert_eq(pci_acs_apply(f.topo), 1);
	struct pci_dev *d = pci_find(f.topo, BDF(0, 0x1d, 0));
	cr_assert(!d->acs_verified);
	cr_assert_eq(d->acs_ctrl & PCI_ACS_RR, 0, "what was read back is recorded");
	cr_assert(pci_find(f.topo, BDF(0, 0x1c, 0))->acs_verified);
}

Test(acs, bit_names)
{
	char b[40];
	cr_assert_str_eq(pci_acs_bits_str(0x5f, b, sizeof(b)), "SV TB RR CR UF DT");
	cr_assert_str_eq(pci_acs_bits_str(0, b, sizeof(b)), "-");
	cr_assert_str_eq(pci_acs_bits_str(0x7f, b, 8), "SV TB R", "truncated, terminated");
}
