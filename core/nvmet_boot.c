/*
 * nvmet_boot.c - starts the NVMe-oF target from \p2pstore\nvmet.json on the ESP (the
 * nvmetcli schema, drivers/nvme/target/nvmet_config.h) once the drivers and the network
 * are up. A missing file means no target; a bad one is reported on the console with the
 * reason and the appliance carries on without a target.
 *
 * It also gives the NVMe/TCP transport its payload memory under the P2P rules: write
 * data stays in the NIC's receive fragments when the namespace's drive may reach their
 * provider; read data goes to the drive's own CMB when the NIC may gather from it, else
 * to the provider nearest to both (p2p_find), else DRAM with the verdict as the reason.
 *
 *   nvmet.p2p = auto|off   device memory where the P2P rules allow it (auto), or every
 *                          NVMe/TCP payload through host DRAM (off: benchmarks, diagnosis)
 *   nvmet.peer_sgl = off|on  may a drive read write data in place from ANOTHER device's CMB
 *                          (the NIC's) with byte-granular SGLs? off (default): QEMU 7.2's nvme
 *                          corrupts such reads (measured); the data then goes through DRAM
 *                          counted as p2p-refused. The drive's own CMB is always read in place.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "../drivers/nic/e1000e_pci.h"
#include "../drivers/nvme/nvme.h"
#include "../drivers/nvme/target/nvmet.h"
#include "../drivers/nvme/target/nvmet_config.h"
#include "../drivers/nvme/target/nvmet_default.h"
#include "../drivers/nvme/target/nvmet_tcp.h"
#include "../lib/log.h"
#include "../lib/poller.h"
#include "../net/net.h"
#include "../net/tcp/tcp.h"
#include "../pci/pci.h"
#include "../lib/config_key.h"
#include "kernel.h"

LOG_MODULE_USE(kernel);

#define NVMET_CONFIG_FILE "nvmet.json"

static struct nvmet_config nvmet_boot_cfg;

static uint32_t sock_local_addr(const struct tcp_sock *s)
{
	struct tcp_info ti;
	tcp_get_info(s, &ti);
	return ti.laddr;
}

static void sock_peer_addr(const struct tcp_sock *s, uint32_t *addr, uint16_t *port)
{
	struct tcp_info ti;
	tcp_get_info(s, &ti);
	*addr = ti.raddr;
	*port = ti.rport;
}

static bool addr_is_local(uint32_t addr)
{
	struct net_config nc;
	net_config_get(&nc);
	return addr == nc.addr;
}

/* The NVMe/TCP transport over the real socket layer (host tests put a fake one there). */
static const struct nvmet_tcp_sock_ops nvmet_boot_sock_ops = {
	.listen = tcp_listen, .accept = tcp_accept, .set_ops = tcp_set_ops, .recv_frags = tcp_recv_frags,
	.recv_eof = tcp_recv_eof, .send_space = tcp_send_space, .send_copy = tcp_send_copy,
	.send_frags = tcp_send_frags, .flush = tcp_flush, .close = tcp_close, .abort = tcp_abort,
	.local_addr = sock_local_addr, .addr_is_local = addr_is_local, .peer_addr = sock_peer_addr,
};

/* --- payload memory under the P2P rules --- */

static char mem_why[160];

enum nvmet_boot_p2p_mode {
	NVMET_BOOT_P2P_AUTO = 0, /* device memory where the P2P rules allow it */
	NVMET_BOOT_P2P_OFF = 1,  /* every payload through host DRAM */
};
static enum nvmet_boot_p2p_mode p2p_mode;
static bool peer_sgl; /* a drive may read write data from another device's CMB */

static int p2p_mode_apply(void)
{
	nvmet_tcp_set_p2p(p2p_mode == NVMET_BOOT_P2P_AUTO);
	return 0;
}
static const struct config_choice p2p_choices[] = {
	{ "auto", NVMET_BOOT_P2P_AUTO }, { "off", NVMET_BOOT_P2P_OFF }, { NULL, 0 } };
CONFIG_ENUM(nvmet_p2p, "nvmet.p2p", &p2p_mode, p2p_choices, "auto", p2p_mode_apply,
	    "NVMe/TCP payloads in device memory where the P2P rules allow it (auto), or all through host DRAM (off)");
CONFIG_BOOL(nvmet_peer_sgl, "nvmet.peer_sgl", &peer_sgl, "off", CONFIG_RUNTIME,
	    "may a drive read write data in place from another device's CMB with byte-granular SGLs "
	    "(QEMU 7.2's nvme corrupts such reads)");

static struct p2p_provider *provider_of(uint16_t id)
{
	return id != NETDEV_PROVIDER_HOST && id <= p2p_provider_count() ? p2p_provider_at(id - 1u) : NULL;
}

static uint16_t provider_id(const struct p2p_provider *p)
{
	for (unsigned i = 0; i < p2p_provider_count(); i++)
		if (p2p_provider_at(i) == p)
			return (uint16_t)(i + 1);
	return NETDEV_PROVIDER_HOST;
}

static struct pci_dev *nic_dev(void)
{
	return e1000e_count() ? e1000e_pci_dev(e1000e_at(0)) : NULL;
}

/* May the drive behind b reach the memory of provider id? */
static int mem_reach(const struct nvmet_bdev *b, uint16_t id, const char **why)
{
	struct nvme_ctrl *c = nvmet_bdev_nvme_ctrl(b);
	struct pci_dev *drive = c ? nvme_pci_dev(c) : NULL;
	struct p2p_provider *p = provider_of(id);
	struct p2p_verdict v;
	char r[120], bdf[8];

	*why = NULL;
	if (!drive || !p) {
		*why = !drive ? "the namespace is not on a local PCI drive" : "unknown P2P provider";
		return -ENODEV;
	}
	if (p2p_dev_distance(p->dev, drive, &v) < 0) {
		snprintf(mem_why, sizeof(mem_why), "%s cannot reach provider %s: %s", c->name, pci_bdf_str(p->dev->bdf, bdf),
			 p2p_verdict_str(&v, r, sizeof(r)));
		*why = mem_why;
		return -EXDEV;
	}
	if (p != nvme_pci_cmb_provider(c) && !peer_sgl) {
		/* QEMU 7.2's nvme, reading write data from another device's CMB through an SGL of
		 * the NIC's odd-length fragments, wrote wrong data after the first fragment
		 * (measured in the lab, tests/lab/nvmet_p2p_tests.py; a single aligned block, as
		 * in `nvme copy`, is fine): only the drive's own CMB is read in place */
		snprintf(mem_why, sizeof(mem_why), "%s reading peer memory of %s with byte-granular SGLs is off (nvmet.peer_sgl)",
			 c->name, pci_bdf_str(p->dev->bdf, bdf));
		*why = mem_why;
		return -EXDEV;
	}
	return 0;
}

/* Device memory for read data of the drive behind b that the NIC may gather from. */
static int mem_alloc(const struct nvmet_bdev *b, uint32_t len, struct netdev_frag *out, const char **why)
{
	struct nvme_ctrl *c = nvmet_bdev_nvme_ctrl(b);
	struct pci_dev *drive = c ? nvme_pci_dev(c) : NULL, *nic = nic_dev();
	struct p2p_provider *p = c ? nvme_pci_cmb_provider(c) : NULL;
	struct p2p_verdict v;
	dma_addr_t addr;
	char r[120];

	*why = NULL;
	if (!drive || !nic || p2p_provider_count() == 0) {
		*why = !drive ? "the namespace is not on a local PCI drive" : !nic ? "no NIC" : "no P2P provider published";
		return -ENODEV;
	}
	/* the drive's own CMB first (the drive writes it without a bus transfer), when the NIC may read it */
	if (!p || p2p_dev_distance(p->dev, nic, &v) < 0) {
		struct pci_dev *const clients[2] = { drive, nic };
		if (!(p = p2p_find(clients, 2, &v))) {
			snprintf(mem_why, sizeof(mem_why), "no provider both %s and the NIC reach: %s", c->name,
				 p2p_verdict_str(&v, r, sizeof(r)));
			*why = mem_why;
			return -EXDEV;
		}
	}
	if (p2p_alloc(p, len, &addr, NULL)) {
		*why = "device memory exhausted";
		return -ENOMEM;
	}
	memset(out, 0, sizeof(*out));
	out->addr = addr;
	out->offset = addr.bus - p->bus_base;
	out->len = len;
	out->provider = provider_id(p);
	return 0;
}

static void mem_free(const struct netdev_frag *f)
{
	struct p2p_provider *p = provider_of(f->provider);
	if (!p || p2p_free(p, f->addr, f->len))
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
	p2p_mode_apply();
	if (p2p_mode == NVMET_BOOT_P2P_OFF)
		log_info("nvmet: nvmet.p2p = off: every NVMe/TCP payload goes through host DRAM");
	if ((rc = nvmet_tcp_start(&nvmet_boot_sock_ops, &nvmet_boot_mem_ops))) {
		log_err("nvmet: NVMe/TCP transport not started (%d); running without a target", rc);
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
