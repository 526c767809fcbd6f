/*
 * roce_boot.c - the appliance's RoCE v2 device rxe0: created when the services start
 * (INIT_LEVEL_SERVICE, after the stack has its address), the console's `rdma` command
 * and the `stats rdma` section. The one file-scope instance is the boot device; all its
 * state lives in its context structs (roce_dev, roce_net).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../../lib/command.h"
#include "../../lib/config_key.h"
#include "../../lib/log.h"
#include "../../lib/poller.h"
#include "../../lib/stats.h"
#include "roce_internal.h"
#include "roce_net.h"
#include "roce_odp_srv.h"
#include "roce_perftest.h"
#include "roce_pingpong.h"
#include "roce_rping.h"
#include "roce_pp_client.h"
#include "roce_rping_client.h"
#include "../../lib/clock.h"

LOG_MODULE_USE(rdma);

#define U(x) ((unsigned long long)(x))

static struct roce_net roce_boot_net;
static struct roce_dev *roce_boot_dev;
static struct roce_rping roce_boot_rping;
static struct roce_pp roce_boot_pp;
static struct roce_odp_srv roce_boot_odp;
static struct roce_pt roce_boot_pt;
static struct roce_rping_client roce_boot_rpc;
static struct roce_ppc roce_boot_ppc;

static int roce_boot_pt_adopt(struct tcp_sock *sock, void *ctx)
{
	return roce_pt_adopt(ctx, sock);
}

static bool roce_boot_interop = true;   /* rdma.interop_servers */
static bool roce_boot_servers_on;

/* The interop servers Linux's tools talk to: rping, ibv_rc_pingpong, perftest. */
static void roce_boot_servers_start(void)
{
	int rc;
	if (roce_boot_servers_on || !roce_boot_dev)
		return;
	if ((rc = roce_rping_start(&roce_boot_rping, &roce_boot_net)))
		log_err("rxe0: rping server on rdma_cm port %u failed to start (%d)", ROCE_RPING_PORT, rc);
	if ((rc = roce_pp_start(&roce_boot_pp, &roce_boot_net)))
		log_err("rxe0: ibv_rc_pingpong server on TCP %u failed to start (%d)", ROCE_PP_PORT, rc);
	if ((rc = roce_pt_start(&roce_boot_pt, &roce_boot_net)))
		log_err("rxe0: perftest server on rdma_cm port %u failed to start (%d)", ROCE_PT_PORT, rc);
	else
		roce_pp_set_other(&roce_boot_pp, roce_boot_pt_adopt, &roce_boot_pt);
	roce_boot_servers_on = true;
	log_info("rxe0: interop servers: rping on rdma_cm port %u, ibv_rc_pingpong and perftest on TCP %u "
		 "(perftest also on rdma_cm port %u)", ROCE_RPING_PORT, ROCE_PP_PORT, ROCE_PT_PORT);
}

static void roce_boot_servers_stop(void)
{
	if (!roce_boot_servers_on)
		return;
	roce_pt_stop(&roce_boot_pt);
	roce_pp_stop(&roce_boot_pp);
	roce_rping_stop(&roce_boot_rping);
	roce_boot_servers_on = false;
	log_info("rxe0: interop servers stopped");
}

static int roce_boot_interop_apply(void)
{
	if (roce_boot_interop)
		roce_boot_servers_start();
	else
		roce_boot_servers_stop();
	return 0;
}
CONFIG_BOOL(rdma_interop_servers, "rdma.interop_servers", &roce_boot_interop, "on", roce_boot_interop_apply,
	    "the rping (rdma_cm 7174), ibv_rc_pingpong and perftest (TCP and rdma_cm 18515) servers of rxe0");

struct roce_net *roce_boot_net_get(void)
{
	return roce_boot_dev ? &roce_boot_net : NULL;
}

static int roce_boot(void)
{
	struct net_config cfg;
	int rc;

	if ((rc = roce_dev_init(&roce_boot_dev, "rxe0")))
		return rc;
	net_config_get(&cfg);
	roce_dev_set_addr(roce_boot_dev, cfg.addr, cfg.mtu ? cfg.mtu : 1500);
	if ((rc = roce_net_start(&roce_boot_net, roce_boot_dev))) {
		log_err("rxe0: RoCE v2 on UDP %u failed to start (%d)", ROCE_UDP_PORT, rc);
		roce_dev_destroy(roce_boot_dev);
		roce_boot_dev = NULL;
		return rc;
	}
	log_info("rxe0: RoCE v2 on UDP %u, GSI QP 1", ROCE_UDP_PORT);
	if (roce_boot_interop)
		roce_boot_servers_start();
	(void)roce_odp_srv_start(&roce_boot_odp, &roce_boot_net);  /* on-demand paging: logs its own outcome */
	return 0;
}
INITCALL(roce_boot, INIT_LEVEL_SERVICE, roce_boot);

static int roce_boot_poll(unsigned budget)
{
	int n;
	if (!roce_boot_dev)
		return 0;
	n = roce_net_poll(&roce_boot_net, budget);
	uint64_t now = n ? clock_now_ns() : poller_now_ns();
	n += roce_odp_srv_poll(&roce_boot_odp, now);
	n += roce_rping_client_poll(&roce_boot_rpc, now);
	n += roce_ppc_poll(&roce_boot_ppc, now);
	if (!roce_boot_servers_on)
		return n;
	n += roce_rping_poll(&roce_boot_rping, now);
	n += roce_pt_poll(&roce_boot_pt, now);
	return n + roce_pp_poll(&roce_boot_pp, now);
}
POLLER(rdma, roce_boot_poll);

static void roce_show_counters(const struct roce_net_stats *s)
{
	printf("rx: packets %llu bytes %llu good %llu short %llu bad-opcode %llu bad-tver %llu bad-pad %llu "
	       "icrc-bad %llu no-ip-hdr %llu bad-pkey %llu bad-qkey %llu no-qp %llu rc-dropped (no RC transport yet) %llu\n",
	       U(s->rx_pkts), U(s->rx_bytes), U(s->rx_parse[ROCE_PARSE_OK]), U(s->rx_parse[ROCE_PARSE_SHORT]),
	       U(s->rx_parse[ROCE_PARSE_OPCODE]), U(s->rx_parse[ROCE_PARSE_TVER]), U(s->rx_parse[ROCE_PARSE_PAD]),
	       U(s->rx_icrc_bad), U(s->rx_no_ip_hdr), U(s->rx_bad_pkey), U(s->rx_bad_qkey), U(s->rx_no_qp),
	       U(s->rx_no_transport));
	printf("tx: packets %llu bytes %llu errors %llu\n", U(s->tx_pkts), U(s->tx_bytes), U(s->tx_errors));
	printf("tx zero-copy from device memory: packets %llu payload %llu B (ICRC behind the payload %llu), "
	       "copied (no trailer slot) %llu; large DRAM packets gathered %llu\n", U(s->tx_zc), U(s->tx_zc_bytes),
	       U(s->tx_zc_inline), U(s->tx_zc_no_trailer), U(s->tx_gathered));
	printf("rc: requester packets sent %llu, responder packets sent %llu, from a stranger %llu\n", U(s->req_tx),
	       U(s->resp_tx), U(s->rx_bad_src));
	printf("gsi: mads %llu bad %llu; cm: req %llu other %llu rej-tx %llu\n", U(s->gsi_rx), U(s->gsi_bad_mad),
	       U(s->cm_req), U(s->cm_other), U(s->cm_rej_tx));
}

static void roce_show_cm(const struct roce_cm *cm, const struct roce_rping *rp, const struct roce_pp *pp)
{
	const struct roce_cm_stats *c = &cm->st;
	char a[16];
	printf("cm: req %llu rep %llu (retx %llu) rtu %llu rej tx %llu rx %llu dreq rx %llu tx %llu drep tx %llu rx %llu "
	       "mra %llu dup-req %llu timeouts %llu no-listener %llu no-room %llu unknown %llu\n",
	       U(c->req), U(c->rep_tx), U(c->rep_retx), U(c->rtu), U(c->rej_tx), U(c->rej_rx), U(c->dreq_rx),
	       U(c->dreq_tx), U(c->drep_tx), U(c->drep_rx), U(c->mra), U(c->dup_req), U(c->timeouts),
	       U(c->no_listener), U(c->no_room), U(c->unknown));
	printf("cm active: req-tx %llu req-retx %llu rep-rx %llu rtu-tx %llu dup-rep %llu\n", U(c->req_tx),
	       U(c->req_retx), U(c->rep_rx), U(c->rtu_tx), U(c->dup_rep));
	for (unsigned i = 0; i < ROCE_CM_MAX_LISTEN; i++)
		if (cm->ls[i].used)
			printf("  listen service id %#llx: %llu REQs\n", U(cm->ls[i].service_id), U(cm->ls[i].reqs));
	for (unsigned i = 0; i < ROCE_CM_MAX_CONN; i++) {
		const struct roce_cm_conn *x = &cm->conns[i];
		if (x->state != ROCE_CM_FREE)
			printf("  conn %#x <-> %s comm id %#x qpn %#x: %s\n", x->local_id, net_format_ipv4(x->peer, a),
			       x->remote_id, x->req.local_qpn, roce_cm_state_name(x->state));
	}
	printf("rping server (port %u): sessions %llu rounds %llu errors %llu\n", ROCE_RPING_PORT, U(rp->sessions),
	       U(rp->rounds), U(rp->errors));
	printf("ibv_rc_pingpong server (TCP %u): sessions %llu messages %llu errors %llu handed-over %llu\n", ROCE_PP_PORT,
	       U(pp->sessions), U(pp->msgs), U(pp->errors), U(pp->handed_over));
}

static void roce_show_pt(const struct roce_pt *pt)
{
	const struct roce_pt_stats *st = &pt->st;
	char a[16];
	if (!roce_boot_servers_on)
		printf("interop servers: off (rdma.interop_servers)\n");
	printf("perftest server (TCP and rdma_cm %u): sessions %llu (tcp %llu rdma_cm %llu data-conns %llu) refused %llu "
	       "errors %llu; ended sessions' data QPs: messages %llu recvs %llu recv-bytes %llu reads %llu atomics %llu\n",
	       ROCE_PT_PORT, U(st->sessions), U(st->tcp), U(st->cm), U(st->data_conns), U(st->refused), U(st->errors),
	       U(st->messages), U(st->recvs), U(st->recv_bytes), U(st->reads), U(st->atomics));
	for (unsigned i = 0; i < ROCE_PT_MAX; i++) {
		const struct roce_pt_session *s = &pt->s[i];
		if (s->state != ROCE_PT_FREE)
			printf("  perftest %u: %s %s over %s, keys %u, qpn %#x, recvs %llu bytes %llu\n", i,
			       net_format_ipv4(s->peer, a), roce_pt_state_name(s->state),
			       s->x.wire == ROCE_PT_WIRE_TCP ? "tcp" : "rdma_cm", s->x.keys, s->ours.dest.qpn,
			       U(s->recvs), U(s->recv_bytes));
	}
}

static void roce_show_clients(const struct roce_rping_client *c)
{
	char a[16];
	printf("rping client: %s", roce_rping_client_state_name(c->state));
	if (c->runs)
		printf(", last run %s:%u %u/%u rounds of %u bytes verified, result %d (REJ reason %u)",
		       net_format_ipv4(c->peer, a), c->port, c->rounds, c->count, c->size, c->result, c->rej_reason);
	printf("; runs %llu failures %llu\n", U(c->runs), U(c->failures));
	printf("pingpong client: %s", roce_ppc_state_name(roce_boot_ppc.state));
	if (roce_boot_ppc.runs)
		printf(", last run %s %u/%u sent %u received of %u bytes in %llu us, result %d",
		       net_format_ipv4(roce_boot_ppc.peer, a), roce_boot_ppc.sent, roce_boot_ppc.count, roce_boot_ppc.received,
		       roce_boot_ppc.size, U(roce_boot_ppc.elapsed_ns / 1000), roce_boot_ppc.result);
	printf("; runs %llu failures %llu\n", U(roce_boot_ppc.runs), U(roce_boot_ppc.failures));
}

/* rdma pingpong ADDRESS [COUNT [SIZE]]: the ibv_rc_pingpong client against a server's TCP 18515. */
static int cmd_rdma_pingpong(int argc, char **argv)
{
	uint32_t peer;
	unsigned count = 100, size = 4096;
	char a[16];
	int rc;

	if (argc < 3 || net_parse_ipv4(argv[2], &peer))
		return -EINVAL;
	if (argc > 3)
		count = (unsigned)strtoul(argv[3], NULL, 0);
	if (argc > 4)
		size = (unsigned)strtoul(argv[4], NULL, 0);
	if ((rc = roce_ppc_start(&roce_boot_ppc, &roce_boot_net, peer, count, size))) {
		printf("pingpong client: %s\n", strerror(-rc));
		return rc;
	}
	printf("pingpong client: connecting to %s port %u, %u messages of %u bytes each way (the result goes to the log)\n",
	       net_format_ipv4(peer, a), ROCE_PP_PORT, count, size);
	return 0;
}

/* rdma rping ADDRESS [PORT [COUNT [SIZE]]]: the rping client against a server's rdma_cm port. */
static int cmd_rdma_rping(int argc, char **argv)
{
	uint32_t peer;
	unsigned port = ROCE_RPING_PORT, count = 5, size = 4000;
	char a[16];
	int rc;

	if (argc < 3 || net_parse_ipv4(argv[2], &peer))
		return -EINVAL;
	if (argc > 3)
		port = (unsigned)strtoul(argv[3], NULL, 0);
	if (argc > 4)
		count = (unsigned)strtoul(argv[4], NULL, 0);
	if (argc > 5)
		size = (unsigned)strtoul(argv[5], NULL, 0);
	if (!port || port > 65535)
		return -EINVAL;
	if ((rc = roce_rping_client_start(&roce_boot_rpc, &roce_boot_net, peer, (uint16_t)port, count, size))) {
		printf("rping client: %s\n", strerror(-rc));
		return rc;
	}
	printf("rping client: connecting to %s port %u, %u rounds of %u bytes (the result goes to the log)\n",
	       net_format_ipv4(peer, a), port, count, size);
	return 0;
}

static int cmd_rdma(int argc, char **argv)
{
	struct roce_dev *dev = roce_boot_dev;
	struct roce_port_attr pa;
	char a[16];
	if (!dev) {
		printf("rdma: no device (start failed: see the log)\n");
		return -ENODEV;
	}
	if (argc > 1 && !strcmp(argv[1], "odp"))
		return roce_odp_srv_command(&roce_boot_odp, argc - 1, argv + 1);
	if (argc > 1 && !strcmp(argv[1], "rping"))
		return cmd_rdma_rping(argc, argv);
	if (argc > 1 && !strcmp(argv[1], "pingpong"))
		return cmd_rdma_pingpong(argc, argv);
	if (argc > 1)
		return -EINVAL;
	roce_query_port(dev, &pa);
	printf("%s: RoCE v2 over UDP %u, port 1 active, path MTU %u (max %u), P_Key 0x%04x\n", dev->name,
	       ROCE_UDP_PORT, roce_mtu_bytes(pa.active_mtu), roce_mtu_bytes(pa.max_mtu), pa.pkey);
	printf("  GID[0] ::ffff:%s%s\n", net_format_ipv4(dev->addr, a), pa.gid_valid ? "" : " (no address)");
	printf("  objects: pd %zu/%u mr %zu/%u cq %zu/%u srq %zu/%u qp %zu/%u\n", dev->pd_pool.in_use, ROCE_MAX_PD,
	       dev->mr_pool.in_use, ROCE_MAX_MR, dev->cq_pool.in_use, ROCE_MAX_CQ, dev->srq_pool.in_use, ROCE_MAX_SRQ,
	       dev->qp_pool.in_use, ROCE_MAX_QP);
	printf("  qps:\n");
	for (unsigned i = 0; i < ROCE_MAX_QP; i++) {
		const struct roce_qp *qp = dev->qps[i];
		if (!qp)
			continue;
		printf("    qpn %#x %s %s sq-psn %#x epsn %#x msn %u dest-qpn %#x mtu %u sq %u/%u rq %u/%u flushed %llu\n",
		       qp->qpn, qp->type == ROCE_QPT_RC ? "RC" : "UD", roce_qp_state_name(qp->state), qp->attr.sq_psn,
		       qp->resp.epsn, qp->resp.msn, qp->attr.dest_qp_num, roce_mtu_bytes(qp->attr.path_mtu),
		       qp->sq.count, qp->sq.size, qp->rq.count, qp->rq.size, U(qp->flushed));
		printf("      requester: psn %#x una %#x wr %u/%u packets %llu retransmits %llu timeouts %llu "
		       "naks seq %llu rnr %llu implied %llu dup-resps %llu completions %llu rx-frags-kept %llu (%llu B)\n",
		       qp->req.psn, qp->req.una, qp->req.started, qp->sq.count, U(qp->req.n.pkts), U(qp->req.n.retransmits),
		       U(qp->req.n.timeouts), U(qp->req.n.seq_naks), U(qp->req.n.rnr_naks), U(qp->req.n.implied_naks),
		       U(qp->req.n.dup_resps), U(qp->req.n.completions), U(qp->req.n.rx_frags), U(qp->req.n.rx_frag_bytes));
		printf("      responder: acks %llu dups %llu replays %llu reads %llu (responses %llu) atomics %llu "
		       "naks seq %llu inv %llu access %llu op %llu rnr %llu rx-frags-kept %llu (%llu B)\n",
		       U(qp->resp.acks), U(qp->resp.dups), U(qp->resp.replays), U(qp->resp.reads),
		       U(qp->resp.read_resps), U(qp->resp.atomics), U(qp->resp.naks_seq), U(qp->resp.naks_inv),
		       U(qp->resp.naks_access), U(qp->resp.naks_op), U(qp->resp.naks_rnr), U(qp->resp.rx_frags),
		       U(qp->resp.rx_frag_bytes));
	}
	printf("  mrs:%s\n", dev->mr_pool.in_use ? "" : " none");
	for (unsigned i = 0; i < ROCE_MAX_MR; i++) {
		const struct roce_mr *mr = dev->mrs[i];
		if (!mr)
			continue;
		printf("    lkey/rkey %#x iova %#llx len %llu access %#x %s\n", mr->key, U(mr->iova), U(mr->length),
		       mr->access, mr->mem.cls == MEM_CLASS_DEVICE ? "device memory" : "host DRAM");
	}
	roce_show_counters(&roce_boot_net.st);
	roce_show_cm(&roce_boot_net.cm, &roce_boot_rping, &roce_boot_pp);
	roce_show_pt(&roce_boot_pt);
	roce_show_clients(&roce_boot_rpc);
	return 0;
}
CONSOLE_COMMAND(rdma, "[odp ... | rping ADDRESS [PORT [COUNT [SIZE]]] | pingpong ADDRESS [COUNT [SIZE]]]",
		"RoCE v2 device: port, GID, QPs (state, PSNs), MRs (keys, memory), counters; rping: the rping client "
		"against a server's rdma_cm port (default 7174, 5 rounds of 4000 bytes, each verified); pingpong: the "
		"ibv_rc_pingpong client against a server's TCP 18515 (default 100 x 4096 bytes)", cmd_rdma);

static void roce_stats_show(void)
{
	if (!roce_boot_dev)
		return;
	roce_show_counters(&roce_boot_net.st);
	roce_show_cm(&roce_boot_net.cm, &roce_boot_rping, &roce_boot_pp);
	roce_odp_srv_stats(&roce_boot_odp);
	roce_show_pt(&roce_boot_pt);
	roce_show_clients(&roce_boot_rpc);
}
STATS_SECTION(rdma, roce_stats_show);
