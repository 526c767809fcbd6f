/*
 * nvmet_default.h - the target's configuration when the ESP has no nvmet.json: every
 * active namespace of every live local NVMe controller, in one subsystem any host may
 * connect to, on one NVMe/TCP port (4420) of the interface's address (the discovery
 * service is on every port).
 *
 * The subsystem's NQN and serial derive from the drives' serial numbers (FNV-1a over the
 * serials in enumeration order), so the same drives give the same NQN on every boot and
 * another set of drives a different one; each namespace's NGUID derives from its drive's
 * serial and namespace ID.
 */
#ifndef DRIVERS_NVME_TARGET_NVMET_DEFAULT_H
#define DRIVERS_NVME_TARGET_NVMET_DEFAULT_H

#include <stddef.h>
#include <stdint.h>
#include "nvmet_config.h"

#define NVMET_DEFAULT_PORT 4420
#define NVMET_DEFAULT_NQN_PREFIX "nqn.2026-11.org.p2pstore:default-"

/* One local namespace to export: its controller's index and serial, and its NSID. */
struct nvmet_default_ns {
	unsigned ctrl;
	const char *serial;  /* Identify Controller SN as the driver keeps it (may be space-padded) */
	uint32_t nsid;
};

/*
 * Build cfg from n local namespaces (in the order given, exported as NSIDs 1..n; beyond
 * NVMET_CFG_MAX_NS they are left out and counted in cfg->warnings) on traddr:4420.
 * 0, or -ENODEV when n is 0.
 */
int nvmet_default_build(const struct nvmet_default_ns *ns, unsigned n, uint32_t traddr, struct nvmet_config *cfg);

/*
 * The same from the live local NVMe controllers (drivers/nvme). 0 or -ENODEV when no
 * controller has an active namespace.
 */
int nvmet_default_config(uint32_t traddr, struct nvmet_config *cfg);

#endif
