// sources: drivers/nvme/target/nvmet_default.c
/*
 * The default target configuration (no nvmet.json): one TCP port 4420 on the given address,
 * one subsystem any host may connect to with every active namespace of every live
 * controller, its NQN and serial derived from the drives' serials (stable, padding
 * ignored, different drives -> a different NQN), NGUIDs per drive and namespace, the
 * NVMET_CFG_MAX_NS cap. The controllers come from a fake registry (nvme_registered, read by
 * the inline nvme_count()/nvme_at()) defined here instead of drivers/nvme/nvme.c's.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "drivers/nvme/nvme.h"
#include "drivers/nvme/target/nvmet_default.h"

static struct nvme_ctrl fake_ctrls[4];
struct nvme_ctrl *nvme_registered[NVME_MAX_CTRLS];
unsigned nvme_nregistered;
#define fake_n nvme_nregistered

static void add_ctrl(const char *sn, enum nvme_ctrl_state st, unsigned nns, bool all_active)
{
	struct nvme_ctrl *c = &fake_ctrls[fake_n];
	nvme_registered[fake_n++] = c;
	memset(c, 0, sizeof(*c));
	snprintf(c->sn, sizeof(c->sn), "%-20s", sn);  /* SN is space-padded */
	c->state = st;
	c->nns = nns;
	for (unsigned k = 0; k < nns; k++) {
		c->ns[k].nsid = k + 1;
		c->ns[k].active = all_active || k == 0;
	}
}

static struct nvmet_config cfg, cfg2;

Test(nvmet_default, every_live_namespace_in_one_open_subsystem)
{
	fake_n = 0;
	add_ctrl("p2pnvme0", NVME_CTRL_LIVE, 1, true);
	add_ctrl("p2pnvme1", NVME_CTRL_LIVE, 2, true);
	add_ctrl("dead", NVME_CTRL_FAILED, 1, true);
	add_ctrl("p2pnvme2", NVME_CTRL_LIVE, 3, false);  /* only its first namespace is active */
	cr_assert_eq(nvmet_default_config(0x0a00020fu, &cfg), 0);
	cr_assert_eq(cfg.nports, 1);
	cr_assert_eq(cfg.ports[0].trtype, NVMET_TRTYPE_TCP);
	cr_assert_eq(cfg.ports[0].traddr, 0x0a00020fu);
	cr_assert_eq(cfg.ports[0].trsvcid, 4420);
	cr_assert_eq(cfg.ports[0].nsubsys, 1);
	cr_assert_eq(cfg.nsubsys, 1);
	const struct nvmet_cfg_subsys *s = &cfg.subsys[0];
	cr_assert(s->allow_any_host);
	cr_assert_eq(s->nhosts, 0);
	cr_assert_eq(s->nns, 4);
	const unsigned ctrl[] = { 0, 1, 1, 3 }, nsid[] = { 1, 1, 2, 1 };
	for (unsigned i = 0; i < 4; i++) {
		cr_assert_eq(s->ns[i].nsid, i + 1);
		cr_assert(s->ns[i].enable);
		cr_assert_eq(s->ns[i].ctrl, ctrl[i], "ns %u on controller %u", i + 1, s->ns[i].ctrl);
		cr_assert_eq(s->ns[i].ctrl_nsid, nsid[i]);
		cr_assert(s->ns[i].has_nguid);
		for (unsigned k = 0; k < i; k++)
			cr_assert_neq(memcmp(s->ns[i].nguid, s->ns[k].nguid, 16), 0, "NGUIDs differ");
	}
	cr_assert_eq(strncmp(s->nqn, NVMET_DEFAULT_NQN_PREFIX, strlen(NVMET_DEFAULT_NQN_PREFIX)), 0, "%s", s->nqn);
	cr_assert_eq(strlen(s->nqn), strlen(NVMET_DEFAULT_NQN_PREFIX) + 16);
	cr_assert_eq(strcmp(s->serial, s->nqn + strlen(NVMET_DEFAULT_NQN_PREFIX)), 0);
	cr_assert_str_eq(s->model, "p2pstore");
	cr_assert_eq(s->cntlid_min, 1);
}

Test(nvmet_default, nqn_is_stable_and_follows_the_drives)
{
	struct nvmet_default_ns a[2] = { { 0, "SN-A", 1 }, { 1, "SN-B", 1 } };
	struct nvmet_default_ns padded[2] = { { 0, "SN-A      ", 1 }, { 1, "SN-B                ", 1 } };
	struct nvmet_default_ns other[2] = { { 0, "SN-A", 1 }, { 1, "SN-C", 1 } };
	struct nvmet_default_ns split[2] = { { 0, "SN-AS", 1 }, { 1, "N-B", 1 } };
	cr_assert_eq(nvmet_default_build(a, 2, 1, &cfg), 0);
	cr_assert_eq(nvmet_default_build(padded, 2, 2, &cfg2), 0);
	cr_assert_str_eq(cfg.subsys[0].nqn, cfg2.subsys[0].nqn, "the SN field's padding does not count");
	cr_assert_eq(memcmp(cfg.subsys[0].ns[1].nguid, cfg2.subsys[0].ns[1].nguid, 16), 0);
	cr_assert_eq(nvmet_default_build(other, 2, 1, &cfg2), 0);
	cr_assert_str_neq(cfg.subsys[0].nqn, cfg2.subsys[0].nqn, "another drive, another NQN");
	cr_assert_eq(nvmet_default_build(split, 2, 1, &cfg2), 0);
	cr_assert_str_neq(cfg.subsys[0].nqn, cfg2.subsys[0].nqn, "serials are separated, not concatenated");
}

Test(nvmet_default, no_namespace_and_the_cap)
{
	struct nvmet_default_ns many[NVMET_CFG_MAX_NS + 3] = { { 0, "SN", 1 } };
	cr_assert_eq(nvmet_default_build(many, 0, 1, &cfg), -ENODEV);
	cr_assert_eq(cfg.nsubsys, 0);
	fake_n = 0;
	add_ctrl("x", NVME_CTRL_FAILED, 1, true);
	cr_assert_eq(nvmet_default_config(1, &cfg), -ENODEV, "a failed drive exports nothing");
	for (unsigned i = 0; i < NVMET_CFG_MAX_NS + 3; i++)
		many[i] = (struct nvmet_default_ns){ i, "SN", 1 };
	cr_assert_eq(nvmet_default_build(many, NVMET_CFG_MAX_NS + 3, 1, &cfg), 0);
	cr_assert_eq(cfg.subsys[0].nns, NVMET_CFG_MAX_NS);
	cr_assert_eq(cfg.warnings, 3, "the namespaces left out are counted");
}
