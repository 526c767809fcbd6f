/*
 * nvmet_default.c - the default target configuration (nvmet_default.h).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "../nvme.h"
#include "nvmet_default.h"

#define FNV64_OFFSET 0xcbf29ce484222325ull
#define FNV64_PRIME 0x100000001b3ull

/* FNV-1a over a serial without its padding (the SN field is space-padded ASCII). */
static uint64_t fnv_serial(uint64_t h, const char *s)
{
	size_t n = strnlen(s, 20);
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\0'))
		n--;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (uint8_t)s[i]) * FNV64_PRIME;
	return (h ^ 0xff) * FNV64_PRIME;  /* separator: "ab"+"c" differs from "a"+"bc" */
}

static void put64(uint8_t *p, uint64_t v)
{
	for (unsigned i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (56 - 8 * i));
}

/* Build from a list. */
int nvmet_default_build(const struct nvmet_default_ns *ns, unsigned n, uint32_t traddr, struct nvmet_config *cfg)
{
	struct nvmet_cfg_subsys *s = &cfg->subsys[0];
	struct nvmet_cfg_port *p = &cfg->ports[0];
	uint64_t h = FNV64_OFFSET;

	memset(cfg, 0, sizeof(*cfg));
	if (n == 0)
		return -ENODEV;
	for (unsigned i = 0; i < n; i++)
		h = fnv_serial(h, ns[i].serial);
	cfg->nports = 1;
	cfg->nsubsys = 1;
	p->portid = 1;
	p->trtype = NVMET_TRTYPE_TCP;
	p->traddr = traddr;
	p->trsvcid = NVMET_DEFAULT_PORT;
	p->nsubsys = 1;
	p->subsys[0] = 0;
	snprintf(s->nqn, sizeof(s->nqn), "%s%016llx", NVMET_DEFAULT_NQN_PREFIX, (unsigned long long)h);
	snprintf(s->serial, sizeof(s->serial), "%016llx", (unsigned long long)h);
	snprintf(s->model, sizeof(s->model), "p2pstore");
	s->allow_any_host = true;
	s->cntlid_min = 1;
	s->cntlid_max = 0xffef;
	for (unsigned i = 0; i < n; i++) {
		struct nvmet_cfg_ns *o;
		uint64_t g;
		if (s->nns == NVMET_CFG_MAX_NS) {
			cfg->warnings++;
			continue;
		}
		o = &s->ns[s->nns++];
		o->nsid = s->nns;
		o->enable = true;
		o->ctrl = ns[i].ctrl;
		o->ctrl_nsid = ns[i].nsid;
		g = fnv_serial(FNV64_OFFSET, ns[i].serial);
		g = (g ^ ns[i].nsid) * FNV64_PRIME;
		o->has_nguid = true;
		put64(o->nguid, g);
		put64(o->nguid + 8, (g ^ 0x5032507374726eull) * FNV64_PRIME);
	}
	return 0;
}

/* Build from the live controllers. */
int nvmet_default_config(uint32_t traddr, struct nvmet_config *cfg)
{
	struct nvmet_default_ns list[NVMET_CFG_MAX_NS + 1];
	unsigned n = 0;

	for (unsigned i = 0; i < nvme_count() && n < NVMET_CFG_MAX_NS + 1; i++) {
		struct nvme_ctrl *c = nvme_at(i);
		if (!c || c->state != NVME_CTRL_LIVE)
			continue;
		for (unsigned k = 0; k < c->nns && n < NVMET_CFG_MAX_NS + 1; k++) {
			if (!c->ns[k].active)
				continue;
			list[n].ctrl = i;
			list[n].serial = c->sn;
			list[n].nsid = c->ns[k].nsid;
			n++;
		}
	}
	return nvmet_default_build(list, n, traddr, cfg);
}
