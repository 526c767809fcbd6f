/*
 * nvmet_config.h - the NVMe-oF target's configuration, read from a JSON file in the
 * schema of Linux's nvmetcli (`nvmetcli save` output: ports, subsystems with namespaces
 * and allowed hosts, hosts), so an administrator can carry a Linux target over.
 *
 * Parsing is strict about what the appliance needs and tolerant of what it does not:
 * a missing or malformed required field is an error naming its JSON path
 * ("subsystems[0].namespaces[1].device.path: ..."), and the whole file is refused;
 * attributes the appliance does not use are reported as warnings and ignored. Namespace
 * devices name local NVMe namespaces as "/dev/nvmeXnY" (controller X in enumeration
 * order, namespace Y), the names Linux would give them.
 */
#ifndef DRIVERS_NVME_TARGET_NVMET_CONFIG_H
#define DRIVERS_NVME_TARGET_NVMET_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define NVMET_NQN_MAX 223            /* NVMe Base 2.0, 4.5: NQN is at most 223 bytes */
#define NVMET_CFG_MAX_PORTS 8
#define NVMET_CFG_MAX_SUBSYS 16
#define NVMET_CFG_MAX_NS 16          /* per subsystem */
#define NVMET_CFG_MAX_HOSTS 32
#define NVMET_CFG_MAX_TOKENS 4096    /* JSON tokens in one file */
#define NVMET_DISCOVERY_NQN "nqn.2014-08.org.nvmexpress.discovery"

enum nvmet_trtype {
	NVMET_TRTYPE_TCP = 3,  /* NVMe-oF TRTYPE values (Discovery Log Page Entry) */
	NVMET_TRTYPE_RDMA = 1,
};

struct nvmet_cfg_port {
	uint16_t portid;
	enum nvmet_trtype trtype;
	uint32_t traddr;             /* IPv4, host order */
	uint16_t trsvcid;            /* TCP port (4420) */
	unsigned nsubsys;
	uint8_t subsys[NVMET_CFG_MAX_SUBSYS]; /* indices into nvmet_config.subsys */
};

struct nvmet_cfg_ns {
	uint32_t nsid;
	bool enable;
	unsigned ctrl;               /* local NVMe controller index (X of /dev/nvmeXnY) */
	uint32_t ctrl_nsid;          /* its namespace (Y) */
	bool has_nguid, has_uuid;
	uint8_t nguid[16];
	uint8_t uuid[16];
};

struct nvmet_cfg_subsys {
	char nqn[NVMET_NQN_MAX + 1];
	bool allow_any_host;
	char serial[21];             /* Identify Controller SN: 20 ASCII bytes */
	char model[41];              /* MN: 40 ASCII bytes */
	uint16_t cntlid_min, cntlid_max;
	unsigned nhosts;
	uint8_t hosts[NVMET_CFG_MAX_HOSTS]; /* indices into nvmet_config.hosts */
	unsigned nns;
	struct nvmet_cfg_ns ns[NVMET_CFG_MAX_NS];
};

struct nvmet_config {
	unsigned nports, nsubsys, nhosts;
	struct nvmet_cfg_port ports[NVMET_CFG_MAX_PORTS];
	struct nvmet_cfg_subsys subsys[NVMET_CFG_MAX_SUBSYS];
	char hosts[NVMET_CFG_MAX_HOSTS][NVMET_NQN_MAX + 1];
	unsigned warnings;
};

typedef void (*nvmet_config_warn_fn)(void *ctx, const char *message);

/*
 * Parse json (len bytes) into cfg. Returns 0, or -EINVAL with a one-line reason in err
 * (errlen bytes, always NUL-terminated) and cfg zeroed. Attributes that are ignored are
 * reported through warn (may be NULL) and counted in cfg->warnings.
 */
int nvmet_config_parse(const char *json, size_t len, struct nvmet_config *cfg, char *err, size_t errlen,
		       nvmet_config_warn_fn warn, void *ctx);

/* Index of the subsystem with this NQN, or -1. */
int nvmet_config_find_subsys(const struct nvmet_config *cfg, const char *nqn);

#endif
