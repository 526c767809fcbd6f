// sources: drivers/nvme/target/nvmet_config.c lib/ipv4_text.c
/*
 * libFuzzer harness: the nvmetcli JSON configuration file (untrusted input from the ESP).
 * Invariants: refused files leave nothing loaded and a message; accepted ones respect
 * every bound and every cross-reference points inside the tables.
 */
#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include "drivers/nvme/target/nvmet_config.h"

static struct nvmet_config cfg;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[200];
	int rc = nvmet_config_parse((const char *)data, size, &cfg, err, sizeof(err), NULL, NULL);
	if (rc) {
		assert(rc == -EINVAL && err[0] && strlen(err) < sizeof(err));
		assert(cfg.nports == 0 && cfg.nsubsys == 0 && cfg.nhosts == 0);
		return 0;
	}
	assert(cfg.nports <= NVMET_CFG_MAX_PORTS && cfg.nsubsys <= NVMET_CFG_MAX_SUBSYS && cfg.nhosts <= NVMET_CFG_MAX_HOSTS);
	for (unsigned i = 0; i < cfg.nports; i++)
		for (unsigned k = 0; k < cfg.ports[i].nsubsys; k++)
			assert(cfg.ports[i].subsys[k] < cfg.nsubsys);
	for (unsigned i = 0; i < cfg.nsubsys; i++) {
		const struct nvmet_cfg_subsys *s = &cfg.subsys[i];
		assert(strlen(s->nqn) <= NVMET_NQN_MAX && s->nns <= NVMET_CFG_MAX_NS);
		for (unsigned k = 0; k < s->nhosts; k++)
			assert(s->hosts[k] < cfg.nhosts);
		for (unsigned k = 0; k < s->nns; k++)
			assert(s->ns[k].nsid >= 1 && s->ns[k].ctrl_nsid >= 1);
	}
	return 0;
}
