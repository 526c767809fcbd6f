/*
 * nvmet_boot.c - starts the NVMe-oF target from \p2pstore\nvmet.json on the ESP (the
 * nvmetcli schema, drivers/nvme/target/nvmet_config.h) once the drivers and the network
 * are up. A missing file means no target; a bad one is reported on the console with the
 * reason and the appliance carries on without a target.
 */
#include <string.h>
#include "../drivers/nvme/target/nvmet.h"
#include "../drivers/nvme/target/nvmet_config.h"
#include "../drivers/nvme/target/tcp.h"
#include "../lib/log.h"
#include "../lib/poller.h"
#include "../net/tcp/tcp.h"
#include "kernel.h"

LOG_MODULE_USE(kernel);

#define NVMET_CONFIG_FILE "nvmet.json"

static struct nvmet_config nvmet_boot_cfg;

/* The NVMe/TCP transport over the real socket layer (host tests put a fake one there). */
static const struct nvmet_tcp_sock_ops nvmet_boot_sock_ops = {
	.listen = tcp_listen, .accept = tcp_accept, .set_ops = tcp_set_ops, .recv_frags = tcp_recv_frags,
	.recv_eof = tcp_recv_eof, .send_space = tcp_send_space, .send_copy = tcp_send_copy, .flush = tcp_flush,
	.close = tcp_close, .abort = tcp_abort,
};

static void nvmet_boot_warn(void *ctx, const char *message)
{
	(void)ctx;
	log_warn("%s: %s", NVMET_CONFIG_FILE, message);
}

static int nvmet_boot(void)
{
	const struct boot_info *bi = kernel_boot_info();
	const struct boot_file *f = NULL;
	char err[160];
	int rc;

	for (uint32_t i = 0; bi && i < bi->nfiles; i++)
		if (strcmp(bi->files[i].name, NVMET_CONFIG_FILE) == 0)
			f = &bi->files[i];
	if (!f) {
		log_info("nvmet: no %s, target not started", NVMET_CONFIG_FILE);
		return 0;
	}
	if (nvmet_config_parse(f->data, (size_t)f->size, &nvmet_boot_cfg, err, sizeof(err), nvmet_boot_warn, NULL)) {
		log_err("nvmet: %s refused: %s; running without a target", NVMET_CONFIG_FILE, err);
		return 0;
	}
	if ((rc = nvmet_init(&nvmet_boot_cfg, nvmet_bdev_nvme_open, NULL))) {
		log_err("nvmet: cannot start the target from %s (%d); running without a target", NVMET_CONFIG_FILE, rc);
		return 0;
	}
	if ((rc = nvmet_tcp_start(&nvmet_boot_sock_ops))) {
		log_err("nvmet: NVMe/TCP transport not started (%d); running without a target", rc);
		nvmet_fini();
		return 0;
	}
	log_info("nvmet: target started from %s: %u ports, %u subsystems", NVMET_CONFIG_FILE, nvmet_boot_cfg.nports,
		 nvmet_boot_cfg.nsubsys);
	return 0;
}
INITCALL(nvmet_boot, INIT_LEVEL_SERVICE, nvmet_boot);
