/*
 * nvmet_boot.c - starts the NVMe-oF target from \p2pstore\nvmet.json on the ESP (the
 * nvmetcli schema, drivers/nvme/target/nvmet_config.h) once the drivers and the network
 * are up. A missing file means no target; a bad one is reported on the console with the
 * reason and the appliance carries on without a target.
 *
 * It also gives the NVMe/TCP transport its payload memory under the P2P rules: write
 * data stays in the NIC's receive fragments when the namespace's drive may reach their
 * provider; read data goes to the drive's own CMB when the NIC may gather from it, else
 * to the provider nearest to both, else DRAM with the verdict as the reason. The
 * placement decisions are pci/p2p_placement.c's; nvmet.p2p is the transport's own key
 * (drivers/nvme/target/nvmet_tcp_settings.c). The NVMe/RDMA transport gets the same ops.
 *
 *   nvmet.peer_sgl = off|on  may a drive read write data in place from ANOTHER device's CMB
 *                          (the NIC's) with byte-granular SGLs? off (default): QEMU 7.2's nvme
 *                          corrupts such reads (measured); the data then goes through DRAM
 *                          counted as p2p-refused. The drive's own CMB is always read in place.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "../drivers/nvme/nvme.h"
#include "../drivers/nvme/target/nvmet.h"
#include "../drivers/nvme/target/nvmet_config.h"
#include "../drivers/nvme/target/nvmet_default.h"
#include "../drivers/nvme/target/nvmet_rdma_boot.h"
#include "../drivers/nvme/target/nvmet_tcp.h"
#include "../lib/config_key.h"
#include "../lib/log.h"
#include "../lib/poller.h"
#include "../net/net.h"
#include "../pci/pci.h"
#include "kernel.h"

LOG_MODULE_USE(kernel);

#define NVMET_CONFIG_FILE "nvmet.json"

static struct nvmet_config nvmet_boot_cfg;

/* --- payload memory under the P2P rules --- */

static char mem_why[160];

static bool peer_sgl; /* a drive may read write data from another device's CMB */

CONFIG_BOOL(nvmet_peer_sgl, "nvmet.peer_sgl", &peer_sgl, "off", CONFIG_RUNTIME,
	    "may a drive read write data in place from another device's CMB with byte-granular SGLs "
	    "(QEMU 7.2's nvme corrupts such reads)");

/* The NIC the stack runs on (its PCI function, set by the driver's attach). */
static struct pci_dev *nic_dev(void)
{
	struct netdev *nd = netdev_first();
	return nd ? nd->pdev : NULL;
}

/* The PCI function of the drive behind b, or NULL. */
static struct pci_dev *drive_dev(const struct nvmet_bdev *b)
{
	struct nvme_ctrl *c = nvmet_bdev_nvme_ctrl(b);
	return c ? nvme_pci_dev(c) : NULL;
}

/* May the drive behind b read (or write) the memory of provider id in place? Another
 * device's memory only with nvmet.peer_sgl: QEMU 7.2's nvme, reading write data from
 * another device's CMB through an SGL of the NIC's odd-length fragments, wrote wrong data
 * after the first fragment (measured in the lab, tests/lab/nvmet_p2p_tests.py; a single
 * aligned block, as in `nvme copy`, is fine). */
static int mem_reach(const struct nvmet_bdev *b, uint16_t id, const char **why)
{
	int rc = p2p_place_reach(drive_dev(b), id, peer_sgl ? P2P_PLACE_ANY : P2P_PLACE_OWN_ONLY, mem_why,
				 sizeof(mem_why));
	*why = rc ? mem_why : NULL;
	return rc;
}

/* Device memory for read data that the drive behind b writes and the NIC gathers. */
static int mem_alloc(const struct nvmet_bdev *b, uint32_t len, struct netdev_frag *out, const char **why)
{
	struct p2p_place pl;
	int rc = p2p_place_alloc(drive_dev(b), nic_dev(), len, &pl, mem_why, sizeof(mem_why));

	*why = rc ? mem_why : NULL;
	memset(out, 0, sizeof(*out));
	if (rc)
		return rc;
	out->addr = pl.addr;
	out->offset = pl.offset;
	out->len = pl.len;
	out->provider = pl.provider;
	return 0;
}

static void mem_free(const struct netdev_frag *f)
{
	const struct p2p_place pl = { .addr = f->addr, .offset = f->offset, .len = f->len, .provider = f->provider };
	if (p2p_place_free(&pl))
		log_err("nvmet: device memory 0x%llx (%u B) not freed", (unsigned long long)f->addr.bus, f->len);
}

static const struct nvmet_tcp_mem_ops nvmet_boot_mem_ops = {
	.reach = mem_reach, .alloc = mem_alloc, .free = mem_free,
};

static void nvmet_boot_warn(void *ctx, const char *message)
{
	(void)ctx;
	log_warn("%s: %s", NVMET_CONFIG_FILE, message);
}

/* Start the target from nvmet_boot_cfg. */
static void nvmet_boot_start(const char *source)
{
	int rc;

	if ((rc = nvmet_init(&nvmet_boot_cfg, nvmet_bdev_nvme_open, NULL))) {
		log_err("nvmet: cannot start the target from %s (%d); running without a target", source, rc);
		return;
	}
	if (!nvmet_tcp_p2p())
		log_info("nvmet: nvmet.p2p = off: every NVMe/TCP payload goes through host DRAM");
	if ((rc = nvmet_tcp_start(&nvmet_boot_mem_ops))) {
		log_err("nvmet: NVMe/TCP transport not started (%d); running without a target", rc);
		nvmet_fini();
		return;
	}
	if ((rc = nvmet_rdma_boot_start(&nvmet_boot_mem_ops))) {
		log_err("nvmet: NVMe/RDMA transport not started (%d); running without a target", rc);
		nvmet_tcp_stop();
		nvmet_fini();
		return;
	}
	log_info("nvmet: target started from %s: %u ports, %u subsystems", source, nvmet_boot_cfg.nports,
		 nvmet_boot_cfg.nsubsys);
}

/* No nvmet.json: serve every local namespace on addr:4420 and say how to reach it. */
static void nvmet_boot_default(uint32_t addr)
{
	const struct nvmet_cfg_subsys *s = &nvmet_boot_cfg.subsys[0];
	char a[16];

	if (nvmet_default_config(addr, &nvmet_boot_cfg)) {
		log_info("nvmet: no %s and no local namespace: target not started", NVMET_CONFIG_FILE);
		return;
	}
	if (nvmet_boot_cfg.warnings)
		log_warn("nvmet: default configuration: only the first %u namespaces are exported", NVMET_CFG_MAX_NS);
	nvmet_boot_start("the default configuration (no nvmet.json)");
	if (!nvmet_running())
		return;
	net_format_ipv4(addr, a);
	log_info("nvmet: serving %u namespaces as %s on %s:%u", s->nns, s->nqn, a, NVMET_DEFAULT_PORT);
	log_info("nvmet:   nvme discover -t tcp -a %s -s %u", a, NVMET_DEFAULT_PORT);
	log_info("nvmet:   nvme connect -t tcp -a %s -s %u -n %s", a, NVMET_DEFAULT_PORT, s->nqn);
	log_warn("nvmet: ANY host may connect and read or write these drives: put a \\p2pstore\\%s on the ESP "
		 "(allowed_hosts) to restrict it", NVMET_CONFIG_FILE);
}

enum nvmet_boot_pending { NVMET_BOOT_NONE = 0, NVMET_BOOT_FILE, NVMET_BOOT_DEFAULT };
static enum nvmet_boot_pending nvmet_boot_pending;

/* Start what is pending once the interface has an address. */
static int nvmet_boot_poll(unsigned budget)
{
	struct net_config nc;
	enum nvmet_boot_pending what = nvmet_boot_pending;
	(void)budget;

	if (what == NVMET_BOOT_NONE)
		return 0;
	net_config_get(&nc);
	if (nc.addr == 0)
		return 0;
	nvmet_boot_pending = NVMET_BOOT_NONE;
	if (what == NVMET_BOOT_FILE)
		nvmet_boot_start(NVMET_CONFIG_FILE);
	else
		nvmet_boot_default(nc.addr);
	return 1;
}
POLLER(nvmet_boot, nvmet_boot_poll);

static int nvmet_boot(void)
{
	const struct boot_info *bi = kernel_boot_info();
	const struct boot_file *f = NULL;
	char err[160];

	for (uint32_t i = 0; bi && i < bi->nfiles; i++)
		if (strcmp(bi->files[i].name, NVMET_CONFIG_FILE) == 0)
			f = &bi->files[i];
	if (!f) {
		nvmet_boot_pending = NVMET_BOOT_DEFAULT;
	} else if (nvmet_config_parse(f->data, (size_t)f->size, &nvmet_boot_cfg, err, sizeof(err), nvmet_boot_warn,
				      NULL)) {
		log_err("nvmet: %s refused: %s; running without a target", NVMET_CONFIG_FILE, err);
		return 0;
	} else {
		nvmet_boot_pending = NVMET_BOOT_FILE;
	}
	/* A static address starts the target now; DHCP's when it binds or falls back. */
	nvmet_boot_poll(0);
	if (nvmet_boot_pending)
		log_info("nvmet: the target starts once the interface has an address (DHCP)");
	return 0;
}
INITCALL(nvmet_boot, INIT_LEVEL_SERVICE, nvmet_boot);
