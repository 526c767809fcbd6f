// sources: pci/enum.c pci/ecam.c pci/acs.c pci/route.c pci/p2pdma.c pci/driver.c lib/log.c mm/pool.c tests/unit/pci/fake_cfg.c
/*
 * Peer-to-peer distance with Linux's outcomes on synthetic topologies: same function, same
 * (multi-function) device, behind one switch, across root ports with and without the host
 * bridge on the allowlist, ACS redirect on a switch port; many clients; provider choice;
 * provider allocators, counters and memory-class tags.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>
#include "tests/unit/pci/fake_cfg.h"
#include "tests/unit/unit_support.h"

static struct fake f;

static void setup(void)
{
	unit_pools_begin();
	fake_init(&f, 0, 8);
	fake_reference(&f);
	cr_assert_eq(pci_enumerate(f.topo), 12);
}

static void teardown(void)
{
	cr_assert_eq(p2p_provider_remove_all(), 0, "providers idle at the end");
	fake_free(&f);
	unit_pools_end();
}

TestSuite(p2pdma, .init = setup, .fini = teardown);

static struct pci_dev *dev(unsigned bus, unsigned d, unsigned fn)
{
	struct pci_dev *x = pci_find(f.topo, BDF(bus, d, fn));
	cr_assert_not_null(x);
	return x;
}

static void allow_q35(void)
{
	f.topo->policy.host_bridge_allow[f.topo->policy.n_allow++] = 0x808629c0;
}

static void set_acs_ctrl(uint16_t bdf, uint16_t v)
{
	fake_w16(&f, bdf, FAKE_ACS_CAP + PCI_ACS_CTRL, v);
}

Test(p2pdma, same_function_is_distance_zero)
{
	struct p2p_verdict v;
	cr_assert_eq(p2p_dev_distance(dev(3, 0, 0), dev(3, 0, 0), &v), 0);
	cr_assert_eq(v.map, P2P_MAP_BUS_ADDR);
	cr_assert_eq(v.reason, P2P_SAME_FUNCTION);
}

Test(p2pdma, functions_of_one_device_are_distance_two)
{
	struct p2p_verdict v;
	cr_assert_eq(p2p_dev_distance(dev(5, 0, 0), dev(5, 0, 1), &v), 2);
	cr_assert_eq(v.reason, P2P_SAME_DEVICE);
	cr_assert_eq(v.common, dev(2, 2, 0));
}

Test(p2pdma, behind_one_switch_is_distance_four)
{
	struct p2p_verdict v;
	char why[200];
	cr_assert_eq(p2p_dev_distance(dev(3, 0, 0), dev(4, 0, 0), &v), 4);
	cr_assert_eq(v.map, P2P_MAP_BUS_ADDR);
	cr_assert_eq(v.reason, P2P_COMMON_UPSTREAM);
	cr_assert_eq(v.common, dev(1, 0, 0));
	cr_assert_str_eq(p2p_verdict_str(&v, why, sizeof(why)), "below common upstream switch upstream port 01:00.0");
	cr_assert_eq(p2p_dev_distance(dev(3, 0, 0), dev(5, 0, 1), NULL), 4);
}

Test(p2pdma, different_root_ports_refused_without_allowlist)
{
	struct p2p_verdict v;
	char why[200];
	cr_assert_eq(p2p_dev_distance(dev(3, 0, 0), dev(6, 0, 0), &v), -1);
	cr_assert_eq(v.map, P2P_MAP_NOT_SUPPORTED);
	cr_assert_eq(v.reason, P2P_REFUSED_NO_COMMON);
	cr_assert_null(v.common);
	p2p_verdict_str(&v, why, sizeof(why));
	cr_assert(strstr(why, "no common upstream bridge") && strstr(why, "8086:29c0"), "%s", why);
}

Test(p2pdma, different_root_ports_through_an_allowlisted_host_bridge)
{
	struct p2p_verdict v;
	allow_q35();
	/* 03:00.0 -> 02:00.0 -> 01:00.0 -> 00:1c.0 -> (root) = 4 hops; 06:00.0 -> 00:1d.0 -> (root) = 2 */
	cr_assert_eq(p2p_dev_distance(dev(3, 0, 0), dev(6, 0, 0), &v), 6);
	cr_assert_eq(v.map, P2P_MAP_THRU_HOST_BRIDGE);
	cr_assert_eq(v.reason, P2P_HOST_BRIDGE_ALLOWED);
}

Test(p2pdma, another_host_bridge_id_is_not_allowed)
{
	f.topo->policy.host_bridge_allow[f.topo->policy.n_allow++] = 0x80863c00;
	cr_assert_eq(p2p_dev_distance(dev(3, 0, 0), dev(6, 0, 0), NULL), -1);
}

Test(p2pdma, acs_redirect_on_a_switch_port_refuses)
{
	struct p2p_verdict v;
	char why[200];
	set_acs_ctrl(BDF(2, 1, 0), PCI_ACS_SV | PCI_ACS_RR);
	cr_assert_eq(p2p_dev_distance(dev(3, 0, 0), dev(4, 0, 0), &v), -1);
	cr_assert_eq(v.reason, P2P_REFUSED_ACS);
	cr_assert_eq(v.nacs, 1);
	cr_assert_eq(v.acs[0], dev(2, 1, 0));
	p2p_verdict_str(&v, why, sizeof(why));
	cr_assert(strstr(why, "ACS redirect set at 02:01.0"), "%s", why);
	/* the other side of the switch is unaffected */
	cr_assert_eq(p2p_dev_distance(dev(3, 0, 0), dev(5, 0, 0), NULL), 4);
	/* Egress Control alone also redirects; SV alone does not */
	set_acs_ctrl(BDF(2, 1, 0), PCI_ACS_EC);
	cr_assert_eq(p2p_dev_distance(dev(4, 0, 0), dev(3, 0, 0), NULL), -1);
	set_acs_ctrl(BDF(2, 1, 0), PCI_ACS_SV);
	cr_assert_eq(p2p_dev_distance(dev(4, 0, 0), dev(3, 0, 0), NULL), 4);
}

Test(p2pdma, acs_redirect_with_allowlist_goes_through_the_host_bridge)
{
	struct p2p_verdict v;
	allow_q35();
	set_acs_ctrl(BDF(2, 0, 0), PCI_ACS_CR);
	cr_assert_eq(p2p_dev_distance(dev(3, 0, 0), dev(4, 0, 0), &v), 4);
	cr_assert_eq(v.map, P2P_MAP_THRU_HOST_BRIDGE);
	cr_assert_eq(v.reason, P2P_ACS_HOST_BRIDGE_ALLOWED);
}

Test(p2pdma, acs_above_the_common_bridge_does_not_matter)
{
	/* the root port is above the switch: not on the path between switch-local devices */
	set_acs_ctrl(BDF(0, 0x1c, 0), PCI_ACS_SV | PCI_ACS_RR | PCI_ACS_CR);
	cr_assert_eq(p2p_dev_distance(dev(3, 0, 0), dev(4, 0, 0), NULL), 4);
}

Test(p2pdma, common_bridge_counts_on_the_provider_side_like_linux)
{
	/* two functions below 02:02.0: Linux counts the common bridge's own ACS */
	set_acs_ctrl(BDF(2, 2, 0), PCI_ACS_RR);
	struct p2p_verdict v;
	cr_assert_eq(p2p_dev_distance(dev(5, 0, 0), dev(5, 0, 1), &v), -1);
	cr_assert_eq(v.reason, P2P_REFUSED_ACS);
}

Test(p2pdma, multi_function_device_with_its_own_acs)
{
	/* give NIC function 1 an ACS capability with Request Redirect on */
	fake_w32(&f, BDF(5, 0, 1), FAKE_ACS_CAP, PCI_EXT_CAP_ID_ACS | 1u << 16);
	fake_w16(&f, BDF(5, 0, 1), FAKE_ACS_CAP + PCI_ACS_CAP, PCI_ACS_RR | PCI_ACS_CR | PCI_ACS_SV);
	fake_w16(&f, BDF(5, 0, 1), FAKE_ACS_CAP + PCI_ACS_CTRL, PCI_ACS_RR);
	pci_enumerate(f.topo);
	cr_assert_eq(p2p_dev_distance(dev(5, 0, 0), dev(5, 0, 1), NULL), -1);
	cr_assert_eq(p2p_dev_distance(dev(5, 0, 0), dev(3, 0, 0), NULL), 4, "function 0's routes unaffected");
}

Test(p2pdma, many_clients_sum_and_any_refusal_refuses)
{
	struct pci_dev *clients[] = { dev(4, 0, 0), dev(5, 0, 0), dev(3, 0, 0) };
	struct p2p_verdict v;
	cr_assert_eq(p2p_distance(dev(3, 0, 0), clients, 3, &v), 8);
	struct pci_dev *with_far[] = { dev(4, 0, 0), dev(6, 0, 0) };
	cr_assert_eq(p2p_distance(dev(3, 0, 0), with_far, 2, &v), -1);
	cr_assert_eq(v.client, dev(6, 0, 0));
	cr_assert_eq(v.reason, P2P_REFUSED_NO_COMMON);
	cr_assert_eq(p2p_distance(dev(3, 0, 0), clients, 0, &v), -1);
	cr_assert_eq(v.reason, P2P_REFUSED_NO_CLIENT);
}

Test(p2pdma, nearest_provider_is_chosen)
{
	struct p2p_provider *a = p2p_provider_add(dev(3, 0, 0), 2, 0, 64 << 20, 0);
	struct p2p_provider *b = p2p_provider_add(dev(4, 0, 0), 2, 0, 64 << 20, 0);
	struct p2p_provider *far = p2p_provider_add(dev(6, 0, 0), 2, 0, 16 << 20, 0);
	cr_assert(a && b && far);
	p2p_provider_publish(a, true);
	p2p_provider_publish(b, true);
	p2p_provider_publish(far, true);
	struct p2p_verdict v;
	/* clients: NVMe B and the NIC: B itself is distance 0 + 4 */
	struct pci_dev *c1[] = { dev(4, 0, 0), dev(5, 0, 0) };
	cr_assert_eq(p2p_find(c1, 2, &v), b);
	cr_assert_eq(v.distance, 4);
	/* the NIC alone: A and B tie at 4, the lower BDF wins */
	struct pci_dev *c2[] = { dev(5, 0, 0) };
	cr_assert_eq(p2p_find(c2, 1, &v), a);
	/* the far NVMe alone: only itself */
	struct pci_dev *c3[] = { dev(6, 0, 0) };
	cr_assert_eq(p2p_find(c3, 1, &v), far);
	/* far + NIC: nothing is compatible without the allowlist */
	struct pci_dev *c4[] = { dev(6, 0, 0), dev(5, 0, 0) };
	cr_assert_null(p2p_find(c4, 2, &v));
	cr_assert_eq(v.map, P2P_MAP_NOT_SUPPORTED);
	/* with it, a switch-local provider through the host bridge */
	allow_q35();
	cr_assert_not_null(p2p_find(c4, 2, &v));
	cr_assert_eq(v.map, P2P_MAP_THRU_HOST_BRIDGE);
	/* unpublished providers are not offered */
	p2p_provider_publish(b, false);
	cr_assert_eq(p2p_find(c1, 2, &v), a);
}

Test(p2pdma, bus_route_preferred_over_host_bridge_route)
{
	allow_q35();
	struct p2p_provider *far = p2p_provider_add(dev(6, 0, 0), 2, 0, 16 << 20, 0);
	struct p2p_provider *a = p2p_provider_add(dev(3, 0, 0), 2, 0, 64 << 20, 0);
	p2p_provider_publish(far, true);
	p2p_provider_publish(a, true);
	/* client 00:1d.0's child 06:00.0 -> far is 0; but for client 05:00.0, a (4 via switch) beats
	 * far (through the host bridge) */
	struct pci_dev *c[] = { dev(5, 0, 0) };
	struct p2p_verdict v;
	cr_assert_eq(p2p_find(c, 1, &v), a);
	cr_assert_eq(v.map, P2P_MAP_BUS_ADDR);
}

Test(p2pdma, allocator_counters_and_class_tags)
{
	struct p2p_provider *p = p2p_provider_add(dev(3, 0, 0), 2, 0x100000, 0x10000, 0x1000);
	cr_assert_not_null(p);
	cr_assert_eq(p->bus_base, 0xe000100000ull);
	cr_assert_eq(p2p_provider_free_bytes(p), 0x10000);
	dma_addr_t x, y, z;
	void *cpu;
	cr_assert_eq(p2p_alloc(p, 100, &x, &cpu), 0);
	cr_assert_eq(x.cls, MEM_CLASS_DEVICE);
	cr_assert_eq(x.bus, 0xe000100000ull);
	cr_assert_eq((uint64_t)(uintptr_t)cpu, x.bus);
	cr_assert_eq(p2p_alloc(p, 0x3000, &y, NULL), 0);
	cr_assert_eq(y.bus, 0xe000101000ull);
	cr_assert_eq(p->bytes_in_use, 0x4000);
	cr_assert_eq(p2p_addr_class(y.bus + 5), MEM_CLASS_DEVICE);
	cr_assert_eq(p2p_addr_class(0x1000000), MEM_CLASS_HOST);
	cr_assert_eq(p2p_alloc(p, 0x10000, &z, NULL), -ENOMEM, "no contiguous room");
	cr_assert_eq(p->failures, 1);
	cr_assert_eq(p2p_provider_remove(p), -EBUSY);
	cr_assert_eq(p2p_free(p, x, 100), 0);
	cr_assert_eq(p2p_free(p, x, 100), -EINVAL, "double free");
	cr_assert_eq(p2p_free(p, dma_addr_host((void *)(uintptr_t)y.bus), 0x3000), -EINVAL, "wrong class");
	cr_assert_eq(p2p_free(p, dma_addr_add(y, 8), 0x3000), -EINVAL, "not a chunk start");
	cr_assert_eq(p->bad_frees, 3);
	/* the freed first chunk is reused first */
	cr_assert_eq(p2p_alloc(p, 0x1000, &z, NULL), 0);
	cr_assert_eq(z.bus, x.bus);
	cr_assert_eq(p2p_free(p, z, 0x1000), 0);
	cr_assert_eq(p2p_free(p, y, 0x3000), 0);
	cr_assert_eq(p->bytes_in_use, 0);
	cr_assert_eq(p->high_water, 0x4000);
	cr_assert_eq(p->allocs, 3);
	cr_assert_eq(p->frees, 3);
}

Test(p2pdma, provider_needs_a_real_memory_bar)
{
	cr_assert_null(p2p_provider_add(dev(3, 0, 0), 1, 0, 0x1000, 0), "upper half of BAR0");
	cr_assert_null(p2p_provider_add(dev(3, 0, 0), 2, 0, 128 << 20, 0), "larger than the BAR");
	cr_assert_null(p2p_provider_add(dev(3, 0, 0), 2, 64 << 20, 1, 0), "offset past the end");
	cr_assert_null(p2p_provider_add(dev(3, 0, 0), 2, 0, 0x1000, 100), "granule not a power of two");
	cr_assert_null(p2p_provider_add(dev(3, 0, 0), 7, 0, 0x1000, 0));
	cr_assert_eq(p2p_provider_count(), 0);
	cr_assert_not_null(p2p_provider_add(dev(3, 0, 0), 2, 0x2000, 0x2000, 0));
	cr_assert_null(p2p_provider_add(dev(3, 0, 0), 2, 0x3000, 0x2000, 0), "overlaps the first");
	cr_assert_not_null(p2p_provider_add(dev(3, 0, 0), 2, 0x4000, 0x1000, 0), "adjacent is fine");
}

Test(p2pdma, provider_table_is_bounded)
{
	for (unsigned i = 0; i < P2P_MAX_PROVIDERS; i++)
		cr_assert_not_null(p2p_provider_add(dev(3, 0, 0), 2, (uint64_t)i << 20, 1 << 20, 0));
	cr_assert_null(p2p_provider_add(dev(4, 0, 0), 2, 0, 1 << 20, 0));
	cr_assert_eq(p2p_provider_count(), P2P_MAX_PROVIDERS);
}
