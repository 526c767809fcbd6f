/*
 * nvmet_ana_command.c - the `ana` console command: each port's ANA group states and the
 * namespaces in each group; `ana <portid> <grpid> <state>` changes a group's state at run
 * time (the failover operator command: the hosts get an ANA change notice).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include "../../../lib/command.h"
#include "nvmet_ana_hb.h"
#include "nvmet_priv.h"

/* Is group g used by a namespace of a subsystem on port p, or listed in its config? */
static bool group_shown(const struct nvmet_cfg_port *cp, uint32_t g)
{
	for (unsigned k = 0; k < cp->nana; k++)
		if (cp->ana[k].grpid == g)
			return true;
	for (unsigned k = 0; k < cp->nsubsys; k++) {
		const struct nvmet_subsys *s = &nvmet_tgt.subsys[cp->subsys[k]];
		for (unsigned i = 0; i < s->nns; i++)
			if (nvmet_ana_ns_grpid(&s->ns[i]) == g)
				return true;
	}
	return false;
}

static void show(void)
{
	for (unsigned p = 0; p < nvmet_tgt.cfg.nports; p++) {
		const struct nvmet_cfg_port *cp = &nvmet_tgt.cfg.ports[p];
		printf("port %u: ANA change count %llu\n", cp->portid, (unsigned long long)nvmet_tgt.ana.port[p].chgcnt);
		for (uint32_t g = 1; g <= NVMET_ANA_GRPMAX; g++) {
			if (!group_shown(cp, g))
				continue;
			printf("  group %u: %s, namespaces:", g, nvmet_ana_state_name(nvmet_ana_state(p, g)));
			for (unsigned k = 0; k < cp->nsubsys; k++) {
				const struct nvmet_subsys *s = &nvmet_tgt.subsys[cp->subsys[k]];
				for (unsigned i = 0; i < s->nns; i++)
					if (nvmet_ana_ns_grpid(&s->ns[i]) == g)
						printf(" %s/%u%s", s->cfg->nqn, s->ns[i].nsid, s->ns[i].enabled ? "" : " (off)");
			}
			printf("\n");
		}
	}
	printf("ANA state changes %llu\n", (unsigned long long)nvmet_tgt.ana.changes);
	nvmet_ana_hb_show();
}

static int cmd_ana(int argc, char **argv)
{
	enum nvmet_ana_state st;
	char *end;

	if (!nvmet_running()) {
		printf("ana: no target\n");
		return 0;
	}
	if (argc == 1) {
		show();
		return 0;
	}
	if (argc != 4)
		return -EINVAL;
	unsigned long portid = strtoul(argv[1], &end, 0);
	if (*end || portid > 0xffff)
		return -EINVAL;
	unsigned long grpid = strtoul(argv[2], &end, 0);
	if (*end || nvmet_ana_state_parse(argv[3], &st)) {
		printf("ana: states are optimized, non-optimized, inaccessible, persistent-loss, change\n");
		return -EINVAL;
	}
	int rc = nvmet_ana_set_state((uint16_t)portid, grpid > 0xffffffffu ? 0 : (uint32_t)grpid, st);
	if (rc == 0)
		printf("port %lu group %lu: %s\n", portid, grpid, argv[3]);
	return rc;
}
CONSOLE_COMMAND(ana, "[<portid> <grpid> optimized|non-optimized|inaccessible|persistent-loss|change]",
		"ANA group states per port; set one (failover)", cmd_ana);
