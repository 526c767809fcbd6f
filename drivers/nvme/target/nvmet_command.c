/*
 * nvmet_command.c - the `nvmet` console command: ports, subsystems with their namespaces
 * and allowed hosts, controllers (connected hosts) with their queues and per-queue
 * counters, the target's counters; `nvmet ns <subnqn> <nsid> on|off` changes a
 * namespace at run time (hosts get a namespace attribute notice).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../../../lib/command.h"
#include "nvmet_priv.h"

static const char *const qstate_names[] = { "new", "live", "dead", "destroyed" };

static void show_ports(void)
{
	for (unsigned i = 0; i < nvmet_tgt.cfg.nports; i++) {
		const struct nvmet_cfg_port *p = &nvmet_tgt.cfg.ports[i];
		printf("port %u: %s %u.%u.%u.%u:%u, %u subsystems\n", p->portid,
		       p->trtype == NVMET_TRTYPE_TCP ? "tcp" : "rdma", (p->traddr >> 24) & 0xff,
		       (p->traddr >> 16) & 0xff, (p->traddr >> 8) & 0xff, p->traddr & 0xff, p->trsvcid, p->nsubsys);
	}
}

static void show_subsystems(void)
{
	for (unsigned i = 0; i < nvmet_tgt.nsubsys; i++) {
		const struct nvmet_subsys *s = &nvmet_tgt.subsys[i];
		printf("subsystem %s: sn \"%s\" mn \"%s\" cntlid %u..%u, %u controllers, hosts: %s", s->cfg->nqn,
		       s->cfg->serial, s->cfg->model, s->cfg->cntlid_min, s->cfg->cntlid_max, s->nctrls,
		       s->cfg->allow_any_host ? "any" : "");
		for (unsigned h = 0; !s->cfg->allow_any_host && h < s->cfg->nhosts; h++)
			printf("%s%s", h ? ", " : "", nvmet_tgt.cfg.hosts[s->cfg->hosts[h]]);
		printf("\n");
		for (unsigned k = 0; k < s->nns; k++) {
			const struct nvmet_ns *ns = &s->ns[k];
			printf("  ns %u: %s %s", ns->nsid, ns->opened ? ns->bdev.name : "-",
			       ns->enabled ? "enabled" : "disabled");
			if (ns->opened)
				printf(", %llu blocks of %u B", (unsigned long long)ns->bdev.nblocks, 1u << ns->bdev.lba_shift);
			printf("\n");
		}
		printf("  read %llu cmds %llu B, write %llu cmds %llu B\n", (unsigned long long)s->read_cmds,
		       (unsigned long long)s->read_bytes, (unsigned long long)s->write_cmds,
		       (unsigned long long)s->write_bytes);
	}
}

static void show_queue(const struct nvmet_queue *q)
{
	printf("    qid %u (%s, %u entries, sqhd %u, %u in flight): cmds %llu done %llu errors %llu read %llu B "
	       "write %llu B\n",
	       q->qid, qstate_names[q->state], q->size, q->sqhd, q->inflight, (unsigned long long)q->st.cmds,
	       (unsigned long long)q->st.completions, (unsigned long long)q->st.errors,
	       (unsigned long long)q->st.read_bytes, (unsigned long long)q->st.write_bytes);
}

static void show_ctrls(void)
{
	struct list_node *it;
	unsigned unbound = 0;

	list_for_each(&nvmet_tgt.ctrls, it) {
		const struct nvmet_ctrl *c = container_of(it, struct nvmet_ctrl, node);
		printf("ctrl %u on %s (port %u): host %s, %s, kato %u ms, %u queues, %u AERs held\n", c->cntlid,
		       c->subsys->cfg->nqn, nvmet_tgt.cfg.ports[c->port].portid, c->hostnqn,
		       nvmet_ctrl_state_name(c->state), c->kato_ms, c->nqueues, c->naers);
		for (unsigned i = 0; i <= NVMET_MAX_IO_QUEUES; i++)
			if (c->queues[i])
				show_queue(c->queues[i]);
	}
	list_for_each(&nvmet_tgt.queues, it)
		unbound += container_of(it, struct nvmet_queue, node)->ctrl == NULL;
	printf("%u controllers, %u queues (%u not connected)\n", nvmet_tgt.nctrls, nvmet_tgt.nqueues, unbound);
}

static int cmd_nvmet(int argc, char **argv)
{
	const struct nvmet_stats *st = nvmet_stats();

	if (!nvmet_running()) {
		printf("nvmet: no target (no valid \\p2pstore\\nvmet.json)\n");
		return 0;
	}
	if (argc == 5 && strcmp(argv[1], "ns") == 0) {
		bool on = strcmp(argv[4], "on") == 0;
		if (!on && strcmp(argv[4], "off") != 0)
			return -EINVAL;
		return nvmet_ns_set_enabled(argv[2], (uint32_t)strtoul(argv[3], NULL, 0), on);
	}
	if (argc != 1)
		return -EINVAL;
	show_ports();
	show_subsystems();
	show_ctrls();
	printf("connects %llu refused %llu, controllers created %llu freed %llu, keep-alive expiries %llu\n",
	       (unsigned long long)st->connects, (unsigned long long)st->connect_refused,
	       (unsigned long long)st->ctrls_created, (unsigned long long)st->ctrls_freed,
	       (unsigned long long)st->kato_expired);
	printf("commands %llu completions %llu errors %llu async events %llu\n", (unsigned long long)st->cmds,
	       (unsigned long long)st->completions, (unsigned long long)st->errors, (unsigned long long)st->aens);
	return 0;
}
CONSOLE_COMMAND(nvmet, "[ns <subnqn> <nsid> on|off]", "NVMe-oF target: ports, subsystems, controllers, queues",
		cmd_nvmet);
