/*
 * nvmet_command.c - the `nvmet` console command: ports, subsystems with their namespaces
 * and allowed hosts, controllers (connected hosts) with their queues and per-queue
 * counters, the target's counters (TCP's and RDMA's transport parts); `nvmet ns <subnqn> <nsid> on|off` changes a
 * namespace at run time (hosts get a namespace attribute notice).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../../../lib/command.h"
#include "nvmet_priv.h"
#include "nvmet_rdma.h"
#include "nvmet_tcp.h"

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
			printf("  ns %u: %s %s%s", ns->nsid, ns->opened ? ns->bdev.name : "-",
			       ns->enabled ? "enabled" : "disabled", ns->gone ? ", device gone (inactive)" : "");
			if (ns->opened)
				printf(", %llu blocks of %u B", (unsigned long long)ns->bdev.nblocks, 1u << ns->bdev.lba_shift);
			printf("\n");
		}
		printf("  read %llu cmds %llu B, write %llu cmds %llu B\n", (unsigned long long)s->read_cmds,
		       (unsigned long long)s->read_bytes, (unsigned long long)s->write_cmds,
		       (unsigned long long)s->write_bytes);
	}
}

/* "a.b.c.d:port" of the host's end of q's connection, "-" when the transport did not say. */
static const char *peer_text(const struct nvmet_queue *q, char *buf, size_t n, bool with_port)
{
	uint32_t a = q->peer_addr;
	if (!a)
		return "-";
	if (with_port)
		snprintf(buf, n, "%u.%u.%u.%u:%u", (a >> 24) & 0xff, (a >> 16) & 0xff, (a >> 8) & 0xff, a & 0xff,
			 q->peer_port);
	else
		snprintf(buf, n, "%u.%u.%u.%u", (a >> 24) & 0xff, (a >> 16) & 0xff, (a >> 8) & 0xff, a & 0xff);
	return buf;
}

static void show_queue(const struct nvmet_queue *q)
{
	char peer[24];
	printf("    qid %u (%s, %u entries, sqhd %u, %u in flight) %s: cmds %llu done %llu errors %llu read %llu B "
	       "write %llu B\n",
	       q->qid, qstate_names[q->state], q->size, q->sqhd, q->inflight, peer_text(q, peer, sizeof(peer), true),
	       (unsigned long long)q->st.cmds,
	       (unsigned long long)q->st.completions, (unsigned long long)q->st.errors,
	       (unsigned long long)q->st.read_bytes, (unsigned long long)q->st.write_bytes);
}

static void show_ctrls(void)
{
	struct list_node *it;
	unsigned unbound = 0;

	list_for_each(&nvmet_tgt.ctrls, it) {
		const struct nvmet_ctrl *c = container_of(it, struct nvmet_ctrl, node);
		char peer[24];
		printf("ctrl %u on %s (port %u): host %s, from %s, %s, kato %u ms, %u queues, %u AERs held, "
		       "%llu errors\n",
		       c->cntlid, c->subsys->cfg->nqn, nvmet_tgt.cfg.ports[c->port].portid, c->hostnqn,
		       c->queues[0] ? peer_text(c->queues[0], peer, sizeof(peer), false) : "-",
		       nvmet_ctrl_state_name(c->state), c->kato_ms, c->nqueues, c->naers,
		       (unsigned long long)c->err_count);
		for (unsigned i = 0; i <= NVMET_MAX_IO_QUEUES; i++)
			if (c->queues[i])
				show_queue(c->queues[i]);
	}
	list_for_each(&nvmet_tgt.queues, it)
		unbound += container_of(it, struct nvmet_queue, node)->ctrl == NULL;
	printf("%u controllers, %u queues (%u not connected)\n", nvmet_tgt.nctrls, nvmet_tgt.nqueues, unbound);
}

/* The NVMe/TCP transport: connections, PDUs, protocol errors, and where payloads went
 * through host DRAM instead of device memory (and why). */
static void show_tcp(void)
{
	const struct nvmet_tcp_stats *t = nvmet_tcp_stats();
	printf("tcp: %u connections (accepted %llu refused %llu), ICReq %llu, capsules %llu responses %llu, "
	       "R2T %llu H2CData %llu (%llu B), C2HData %llu (%llu B)\n",
	       nvmet_tcp_conn_count(), (unsigned long long)t->accepted, (unsigned long long)t->refused,
	       (unsigned long long)t->icreqs, (unsigned long long)t->capsules, (unsigned long long)t->responses,
	       (unsigned long long)t->r2ts, (unsigned long long)t->h2c_pdus, (unsigned long long)t->h2c_bytes,
	       (unsigned long long)t->c2h_pdus, (unsigned long long)t->c2h_bytes);
	printf("tcp errors: termination requests sent %llu received %llu, data digest errors %llu, "
	       "controller kills %llu\n",
	       (unsigned long long)t->term_sent, (unsigned long long)t->term_recv,
	       (unsigned long long)t->ddgst_errors, (unsigned long long)t->kills);
	printf("payload: p2p %s, device memory reads %llu (%llu B) writes %llu (%llu B)\n",
	       nvmet_tcp_p2p() ? "auto" : "off", (unsigned long long)t->p2p_reads,
	       (unsigned long long)t->p2p_read_bytes, (unsigned long long)t->p2p_writes,
	       (unsigned long long)t->p2p_write_bytes);
	printf("dram fallback:");
	for (int r = 0; r < NVMET_TCP_DRAM_REASON_COUNT; r++)
		printf(" %s %llu (%llu B)", nvmet_tcp_dram_reason_name((enum nvmet_tcp_dram_reason)r),
		       (unsigned long long)t->dram_cmds[r], (unsigned long long)t->dram_bytes[r]);
	printf("; gathered %llu, buffer waits %llu, data dropped %llu\n", (unsigned long long)t->gathers,
	       (unsigned long long)t->waits, (unsigned long long)t->data_dropped);
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
	printf("connects %llu refused %llu (%llu: the host address held %u controllers), controllers created %llu "
	       "freed %llu, keep-alive expiries %llu\n",
	       (unsigned long long)st->connects, (unsigned long long)st->connect_refused,
	       (unsigned long long)st->peer_ctrl_limit, NVMET_CTRLS_PER_PEER, (unsigned long long)st->ctrls_created,
	       (unsigned long long)st->ctrls_freed, (unsigned long long)st->kato_expired);
	printf("commands %llu completions %llu errors %llu async events %llu\n", (unsigned long long)st->cmds,
	       (unsigned long long)st->completions, (unsigned long long)st->errors, (unsigned long long)st->aens);
	printf("durability: fua writes %llu (emulated %llu) flushes %llu (no cache: %llu) shutdown flushes %llu "
	       "(failed %llu), backend errors %llu, devices gone %llu\n",
	       (unsigned long long)st->fua_writes, (unsigned long long)st->fua_emulated,
	       (unsigned long long)st->flushes, (unsigned long long)st->flushes_skipped,
	       (unsigned long long)st->shn_flushes, (unsigned long long)st->shn_flush_failures,
	       (unsigned long long)st->backend_errors, (unsigned long long)st->ns_gone);
	printf("authentication: %llu queues authenticated, %llu failed\n", (unsigned long long)st->auth_ok,
	       (unsigned long long)st->auth_failures);
	show_tcp();
	if (nvmet_rdma_boot())
		nvmet_rdma_show(nvmet_rdma_boot()); /* the RDMA queues: QPs, credits, commands, bytes */
	return 0;
}
CONSOLE_COMMAND(nvmet, "[ns <subnqn> <nsid> on|off]", "NVMe-oF target: ports, subsystems, controllers, queues",
		cmd_nvmet);
