/*
 * nvme_config.c - the NVMe host driver's settings from p2pstore.cfg, applied before PCI
 * drivers bind (core/ reads the configuration so that drivers/ never calls up into it).
 *
 *   nvme.sq_in_cmb = on|off   I/O submission queues in the CMB when CMBSZ.SQS allows (on)
 */
#include <stdbool.h>
#include "../drivers/nvme/nvme.h"
#include "../lib/log.h"
#include "../lib/poller.h"
#include "config.h"

LOG_MODULE_USE(kernel);

static int nvme_config_apply(void)
{
	bool on = true;
	if (config_get_bool(config_global(), "nvme.sq_in_cmb", true, &on))
		log_err("config: nvme.sq_in_cmb must be on or off");
	nvme_set_sq_in_cmb(on);
	return 0;
}
INITCALL(nvme_config, INIT_LEVEL_EARLY, nvme_config_apply);
