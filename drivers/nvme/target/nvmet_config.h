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
#define NVMET_CFG_MAX_ANA_GRPS 8     /* ANA groups configured per port (README "ANA") */
#define NVMET_ANA_GRPMAX 32          /* ANA group IDs 1..32 (Identify ANAGRPMAX, NANAGRPID) */
#define NVMET_CFG_MAX_REFERRALS 8    /* discovery referrals per port */

enum nvmet_trtype {
	NVMET_TRTYPE_TCP = 3,  /* NVMe-oF TRTYPE values (Discovery Log Page Entry) */
	NVMET_TRTYPE_RDMA = 1,
};

/* ANA states (NVMe Base 2.0, 8.20.3; the ANA log page's ANAS values). */
enum nvmet_ana_state {
	NVMET_ANA_OPTIMIZED = 0x1,
	NVMET_ANA_NON_OPTIMIZED = 0x2,
	NVMET_ANA_INACCESSIBLE = 0x3,
	NVMET_ANA_PERSISTENT_LOSS = 0x4,
	NVMET_ANA_CHANGE = 0xf,
};

/* One ANA group's state on a port (nvmetcli `ana_groups[]`: grpid, ana.state). */
struct nvmet_cfg_ana_grp {
	uint32_t grpid;              /* 1..NVMET_ANA_GRPMAX */
	enum nvmet_ana_state state;
};

/* A discovery referral (nvmetcli `referrals[]`): another discovery service the host is
 * sent to, listed in this port's discovery log with subtype "referral". */
struct nvmet_cfg_referral {
	char name[32];
	bool enable;
	uint16_t portid;             /* its PORTID in the log entry */
	enum nvmet_trtype trtype;
	uint32_t traddr;             /* IPv4, host order */
	uint16_t trsvcid;
	uint8_t treq;                /* TREQ secure channel bits (0 not specified, 1 required, 2 not required) */
};

struct nvmet_cfg_port {
	uint16_t portid;
	enum nvmet_trtype trtype;
	uint32_t traddr;             /* IPv4, host order */
	uint16_t trsvcid;            /* TCP port (4420) */
	unsigned nsubsys;
	uint8_t subsys[NVMET_CFG_MAX_SUBSYS]; /* indices into nvmet_config.subsys */
	unsigned nana;               /* groups listed; not listed: group 1 optimized, others inaccessible
				      * (as Linux nvmet) */
	struct nvmet_cfg_ana_grp ana[NVMET_CFG_MAX_ANA_GRPS];
	unsigned nreferrals;
	struct nvmet_cfg_referral referrals[NVMET_CFG_MAX_REFERRALS];
};

struct nvmet_cfg_ns {
	uint32_t nsid;
	bool enable;
	unsigned ctrl;               /* local NVMe controller index (X of /dev/nvmeXnY) */
	uint32_t ctrl_nsid;          /* its namespace (Y) */
	uint32_t anagrpid;           /* ANA group (nvmetcli `ana_grpid`), 1 when not given */
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

/* A host's DH-HMAC-CHAP settings (Linux nvmet's host attributes; nvmet_auth.h). */
#define NVMET_CFG_DHCHAP_SECRET_MAX 104 /* "DHHC-1:03:" + 92 base64 characters + ":" + NUL */
struct nvmet_cfg_host_auth {
	char dhchap_key[NVMET_CFG_DHCHAP_SECRET_MAX];      /* the host's secret, "" none */
	char dhchap_ctrl_key[NVMET_CFG_DHCHAP_SECRET_MAX]; /* the controller's (bidirectional), "" none */
	uint8_t dhchap_hash;         /* HashID: 1 hmac(sha256) (default), 2 hmac(sha384), 3 hmac(sha512) */
	uint8_t dhchap_dhgroup;      /* DH group ID: 0 null (default), 1..5 ffdhe2048..ffdhe8192 */
};

struct nvmet_config {
	unsigned nports, nsubsys, nhosts;
	struct nvmet_cfg_port ports[NVMET_CFG_MAX_PORTS];
	struct nvmet_cfg_subsys subsys[NVMET_CFG_MAX_SUBSYS];
	char hosts[NVMET_CFG_MAX_HOSTS][NVMET_NQN_MAX + 1];
	struct nvmet_cfg_host_auth host_auth[NVMET_CFG_MAX_HOSTS]; /* of hosts[i] */
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

/* "optimized", "non-optimized", "inaccessible", "persistent-loss", "change" (the names
 * Linux nvmet's configfs and nvmetcli use): 0 and *out, or -EINVAL. */
int nvmet_ana_state_parse(const char *name, enum nvmet_ana_state *out);
const char *nvmet_ana_state_name(enum nvmet_ana_state s);

/* Index of the subsystem with this NQN, or -1. */
int nvmet_config_find_subsys(const struct nvmet_config *cfg, const char *nqn);

#endif
