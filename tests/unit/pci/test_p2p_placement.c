// sources: pci/p2p_placement.c pci/enum.c pci/ecam.c pci/acs.c pci/route.c pci/p2pdma.c pci/driver.c lib/log.c mm/pool.c tests/unit/pci/fake_cfg.c
/*
 * Peer-to-peer placement (pci/p2p_placement.c) on the reference topology of fake_cfg.h:
 * provider ids, whether a drive may use a NIC fragment's memory in place (own memory
 * only, or any reachable peer), which memory a drive and a NIC both reach (the drive's
 * own CMB first, else the nearest to both, else refused with the reason), decode-off
 * and exhausted providers, and frees that give every byte back.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>
#include "tests/unit/pci/fake_cfg.h"
#include "tests/unit/unit_support.h"

static struct fake f;
static struct p2p_provider *cmb_a, *cmb_b, *cmb_far;

static struct pci_dev *dev(unsigned bus, unsigned d, unsigned fn)
{
	struct pci_dev *x = pci_find(f.topo, BDF(bus, d, fn));
	cr_assert_not_null(x);
	return x;
}

static struct p2p_provider *provider(unsigned bus, uint64_t size)
{
	fake_w16(&f, BDF(bus, 0, 0), PCI_COMMAND, PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER);
	struct p2p_provider *p = p2p_provider_add(dev(bus, 0, 0), 2, 0, size, 0);
	cr_assert_not_null(p);
	p2p_provider_publish(p, true);
	return p;
}

static void setup(void)
{
	unit_pools_begin();
	fake_init(&f, 0, 8);
	fake_reference(&f);
	cr_assert_eq(pci_enumerate(f.topo), 12);
	cmb_a = provider(3, 64 << 20);
	cmb_b = provider(4, 64 << 20);
	cmb_far = provider(6, 16 << 20);
}

static void teardown(void)
{
	for (unsigned i = 0; i < p2p_provider_count(); i++)
		cr_assert_eq(p2p_provider_at(i)->bytes_in_use, 0, "every placement freed");
	cr_assert_eq(p2p_provider_remove_all(), 0);
	fake_free(&f);
	unit_pools_end();
}

TestSuite(p2p_placement, .init = setup, .fini = teardown);

Test(p2p_placement, provider_ids)
{
	cr_assert_eq(p2p_provider_id(cmb_a), 1);
	cr_assert_eq(p2p_provider_id(cmb_far), 3);
	cr_assert_eq(p2p_provider_id(NULL), P2P_PROVIDER_ID_HOST);
	cr_assert_eq(p2p_provider_by_id(2), cmb_b);
	cr_assert_null(p2p_provider_by_id(P2P_PROVIDER_ID_HOST));
	cr_assert_null(p2p_provider_by_id(4));
	cr_assert_eq(p2p_provider_of_dev(dev(4, 0, 0)), cmb_b);
	cr_assert_null(p2p_provider_of_dev(dev(5, 0, 0)), "the NIC has no memory of its own");
	cr_assert_null(p2p_provider_of_dev(NULL));
}

Test(p2p_placement, a_drive_reads_its_own_memory_and_peers_only_when_allowed)
{
	char why[200];
	/* NVMe B reading a fragment the NIC put in B's own CMB */
	cr_assert_eq(p2p_place_reach(dev(4, 0, 0), 2, P2P_PLACE_OWN_ONLY, why, sizeof(why)), 0);
	/* ... in A's CMB, behind the same switch: a peer */
	cr_assert_eq(p2p_place_reach(dev(4, 0, 0), 1, P2P_PLACE_OWN_ONLY, why, sizeof(why)), -EXDEV);
	cr_assert_str_eq(why, "04:00.0 may use only its own memory in place, not 03:00.0's");
	cr_assert_eq(p2p_place_reach(dev(4, 0, 0), 1, P2P_PLACE_ANY, why, sizeof(why)), 0);
	/* the far drive under the other root port: refused by the distance rules */
	cr_assert_eq(p2p_place_reach(dev(6, 0, 0), 1, P2P_PLACE_ANY, why, sizeof(why)), -EXDEV);
	cr_assert(strstr(why, "06:00.0 cannot reach provider 03:00.0: "), "%s", why);
	cr_assert_eq(p2p_place_reach(NULL, 1, P2P_PLACE_ANY, why, sizeof(why)), -ENODEV);
	cr_assert_eq(p2p_place_reach(dev(4, 0, 0), P2P_PROVIDER_ID_HOST, P2P_PLACE_ANY, why, sizeof(why)), -ENODEV);
	cr_assert_str_eq(why, "unknown P2P provider");
}

Test(p2p_placement, read_data_goes_to_the_drives_own_memory_first)
{
	struct p2p_place pl;
	char why[200];
	cr_assert_eq(p2p_place_alloc(dev(4, 0, 0), dev(5, 0, 0), 5000, &pl, why, sizeof(why)), 0, "%s", why);
	cr_assert_eq(pl.provider, 2);
	cr_assert_eq(pl.addr.cls, MEM_CLASS_DEVICE);
	cr_assert_eq(pl.offset, pl.addr.bus - cmb_b->bus_base);
	cr_assert_eq(pl.len, 5000);
	cr_assert_eq(cmb_b->bytes_in_use, 8192, "rounded up to the granule");
	cr_assert_eq(p2p_place_free(&pl), 0);
	cr_assert_eq(p2p_place_free(&pl), -EINVAL, "a second free is refused");
	pl.provider = 9;
	cr_assert_eq(p2p_place_free(&pl), -EINVAL);
}

Test(p2p_placement, else_the_nearest_to_both_else_refused_with_the_reason)
{
	struct p2p_place pl;
	char why[200];
	/* a drive without a CMB of its own behind the switch: the NIC's function 1 stands in */
	cr_assert_eq(p2p_place_alloc(dev(5, 0, 1), dev(5, 0, 0), 4096, &pl, why, sizeof(why)), 0, "%s", why);
	cr_assert_eq(pl.provider, 1, "A and B tie at the same distance: the lower BDF");
	cr_assert_eq(p2p_place_free(&pl), 0);
	/* the far drive's own CMB cannot be reached by the NIC, nor any other memory both reach */
	cr_assert_eq(p2p_place_alloc(dev(6, 0, 0), dev(5, 0, 0), 4096, &pl, why, sizeof(why)), -EXDEV);
	cr_assert(strstr(why, "no provider both 06:00.0 and 05:00.0 reach: "), "%s", why);
	cr_assert_eq(pl.len, 0, "nothing handed out on failure");
	/* through an allowlisted host bridge the far CMB is fine */
	f.topo->policy.host_bridge_allow[f.topo->policy.n_allow++] = 0x808629c0;
	cr_assert_eq(p2p_place_alloc(dev(6, 0, 0), dev(5, 0, 0), 4096, &pl, why, sizeof(why)), 0, "%s", why);
	cr_assert_eq(pl.provider, 3);
	cr_assert_eq(p2p_place_free(&pl), 0);
	cr_assert_eq(p2p_place_alloc(NULL, dev(5, 0, 0), 4096, &pl, why, sizeof(why)), -ENODEV);
	cr_assert_eq(p2p_place_alloc(dev(4, 0, 0), NULL, 4096, &pl, why, sizeof(why)), -ENODEV);
	cr_assert_str_eq(why, "no peer device");
}

Test(p2p_placement, decode_off_and_exhausted_providers_are_refused)
{
	struct p2p_place pl, big;
	char why[200];
	fake_w16(&f, BDF(4, 0, 0), PCI_COMMAND, PCI_COMMAND_MASTER);
	cr_assert_eq(p2p_place_alloc(dev(4, 0, 0), dev(5, 0, 0), 4096, &pl, why, sizeof(why)), -EIO);
	cr_assert_str_eq(why, "provider 04:00.0 has memory decode off");
	fake_w16(&f, BDF(4, 0, 0), PCI_COMMAND, PCI_COMMAND_MEMORY);
	cr_assert_eq(p2p_place_alloc(dev(4, 0, 0), dev(5, 0, 0), 64 << 20, &big, why, sizeof(why)), 0, "%s", why);
	cr_assert_eq(p2p_place_alloc(dev(4, 0, 0), dev(5, 0, 0), 4096, &pl, why, sizeof(why)), -ENOMEM);
	cr_assert_str_eq(why, "device memory of 04:00.0 exhausted");
	cr_assert_eq(p2p_place_free(&big), 0);
}
