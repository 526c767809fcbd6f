// sources: pci/enum.c pci/ecam.c pci/acs.c pci/route.c pci/p2pdma.c pci/driver.c lib/log.c mm/pool.c tests/unit/pci/fake_cfg.c
/*
 * The PCI driver model: drivers in the pci_drivers linker set, id and class match tables,
 * probe order, a failed probe falling through to the next driver, remove in reverse.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "tests/unit/pci/fake_cfg.h"
#include "tests/unit/unit_support.h"

static struct fake f;
static char log_buf[512];

static void note(const char *what, const struct pci_dev *d)
{
	char b[8], line[48];
	snprintf(line, sizeof(line), "%s %s;", what, pci_bdf_str(d->bdf, b));
	strncat(log_buf, line, sizeof(log_buf) - strlen(log_buf) - 1);
}

static int nvme_probe(struct pci_dev *d, const struct pci_device_id *id)
{
	note("nvme", d);
	d->driver_data = (void *)id->data;
	return 0;
}
static void nvme_remove(struct pci_dev *d)
{
	note("-nvme", d);
}
static const struct pci_device_id nvme_ids[] = { { PCI_ANY_ID, PCI_ANY_ID, 0x010802, 0xffffff, 42 }, PCI_ID_END };
PCI_DRIVER(test_nvme, nvme_ids, nvme_probe, nvme_remove);

/* matches the NIC by id, but refuses function 1 */
static int nic_probe(struct pci_dev *d, const struct pci_device_id *id)
{
	(void)id;
	if (PCI_BDF_FN(d->bdf) == 1)
		return -ENODEV;
	note("nic", d);
	return 0;
}
static const struct pci_device_id nic_ids[] = { PCI_DEVICE(0x8086, 0x10d3), PCI_ID_END };
PCI_DRIVER(test_nic, nic_ids, nic_probe, NULL);

/* a catch-all for network-class functions nobody else took */
static int net_probe(struct pci_dev *d, const struct pci_device_id *id)
{
	(void)id;
	note("net", d);
	return 0;
}
static const struct pci_device_id net_ids[] = { PCI_DEVICE_CLASS(0x020000, 0xff0000), PCI_ID_END };
PCI_DRIVER(test_net, net_ids, net_probe, NULL);

static void setup(void)
{
	unit_pools_begin();
	log_buf[0] = 0;
	fake_init(&f, 0, 8);
	fake_reference(&f);
	pci_enumerate(f.topo);
}

static void teardown(void)
{
	fake_free(&f);
	unit_pools_end();
}

TestSuite(pci_driver, .init = setup, .fini = teardown);

Test(pci_driver, entries_are_eight_byte_multiples)
{
	cr_assert_eq(sizeof(struct pci_driver) % 8, 0);
}

Test(pci_driver, match_tables)
{
	struct pci_dev *nvme = pci_find(f.topo, BDF(3, 0, 0));
	struct pci_dev *nic = pci_find(f.topo, BDF(5, 0, 0));
	cr_assert_eq(pci_match(nvme_ids, nvme), &nvme_ids[0]);
	cr_assert_null(pci_match(nvme_ids, nic));
	cr_assert_eq(pci_match(nic_ids, nic), &nic_ids[0]);
	cr_assert_eq(pci_match(net_ids, nic), &net_ids[0]);
	cr_assert_null(pci_match(NULL, nic));
}

Test(pci_driver, probe_all_binds_and_falls_through)
{
	int n = pci_probe_all(f.topo);
	cr_assert_eq(n, 5, "three NVMe, NIC fn0 by id, NIC fn1 by class: %s", log_buf);
	cr_assert_eq(pci_find(f.topo, BDF(3, 0, 0))->driver->name[5], 'n');
	cr_assert_str_eq(pci_find(f.topo, BDF(5, 0, 0))->driver->name, "test_nic");
	cr_assert_str_eq(pci_find(f.topo, BDF(5, 0, 1))->driver->name, "test_net", "fell through after -ENODEV");
	cr_assert_eq((uintptr_t)pci_find(f.topo, BDF(6, 0, 0))->driver_data, 42);
	cr_assert_null(pci_find(f.topo, BDF(0, 0x1c, 0))->driver);
	cr_assert_eq(pci_probe_all(f.topo), 0, "bound functions are not probed twice");
	log_buf[0] = 0;
	pci_remove_all(f.topo);
	cr_assert_str_eq(log_buf, "-nvme 06:00.0;-nvme 04:00.0;-nvme 03:00.0;");
	cr_assert_null(pci_find(f.topo, BDF(3, 0, 0))->driver);
}
