// sources: pci/enum.c pci/ecam.c pci/acs.c pci/route.c pci/p2pdma.c pci/driver.c lib/log.c mm/pool.c tests/unit/pci/fake_cfg.c lib/clock.c
/*
 * libFuzzer harness: firmware tables and config spaces are input the appliance did not
 * write. The input's first byte gives the length of an MCFG table that follows (parsed by
 * pci_mcfg_parse); the rest is a list of 4-byte pokes (function, offset low, offset high,
 * value) into the reference topology's config spaces, after which enumeration, the ACS
 * policy and every P2P distance run. Invariants: bounded tables, no crash, no leak, and
 * every distance verdict is a defined one.
 */
#include <assert.h>
#include <stdint.h>
#include <string.h>
#include "pci/pci.h"
#include "tests/unit/pci/fake_cfg.h"

static const uint16_t targets[] = {
	PCI_BDF(0, 0, 0), PCI_BDF(0, 0x1c, 0), PCI_BDF(1, 0, 0), PCI_BDF(2, 0, 0), PCI_BDF(2, 1, 0),
	PCI_BDF(2, 2, 0), PCI_BDF(3, 0, 0), PCI_BDF(4, 0, 0), PCI_BDF(5, 0, 0), PCI_BDF(5, 0, 1),
	PCI_BDF(0, 0x1d, 0), PCI_BDF(6, 0, 0),
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pci_mcfg_alloc alloc[8];
	struct fake f;

	if (size < 1)
		return 0;
	size_t mlen = data[0];
	if (mlen > size - 1)
		mlen = size - 1;
	int n = pci_mcfg_parse(data + 1, mlen, alloc, 8);
	assert(n < 0 || n <= 8);
	for (int i = 0; i < n; i++)
		assert(alloc[i].bus_start <= alloc[i].bus_end);

	fake_init(&f, 0, 8);
	fake_reference(&f);
	for (size_t i = 1 + mlen; i + 4 <= size; i += 4) {
		uint16_t bdf = targets[data[i] % (sizeof(targets) / sizeof(targets[0]))];
		unsigned off = ((unsigned)data[i + 1] | (unsigned)(data[i + 2] & 0x0f) << 8);
		fake_w8(&f, bdf, off, data[i + 3]);
	}
	struct pci_policy pol;
	pci_policy_default(&pol);
	f.topo->policy = pol;
	int ndev = pci_enumerate(f.topo);
	assert(ndev <= (int)PCI_MAX_DEVS);
	(void)pci_acs_apply(f.topo);
	for (unsigned a = 0; a < f.topo->ndevs; a++) {
		for (unsigned b = 0; b < f.topo->ndevs; b++) {
			struct p2p_verdict v;
			int d = p2p_dev_distance(&f.topo->devs[a], &f.topo->devs[b], &v);
			assert(d >= -1 && v.reason <= P2P_REFUSED_NO_CLIENT);
			assert((d < 0) == (v.map == P2P_MAP_NOT_SUPPORTED));
		}
	}
	fake_free(&f);
	return 0;
}
