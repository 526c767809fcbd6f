/*
 * net_command.c - console commands `ip`, `tcp` and `ping`, and the `stats` section.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../lib/clock.h"
#include "../lib/command.h"
#include "../lib/stats.h"
#include "../lib/timer.h"
#include "dhcp.h"
#include "net_internal.h"
#include "tcp/tcp.h"

#define U(x) ((unsigned long long)(x))

static void show_dev(struct netdev *d, void *ctx)
{
	(void)ctx;
	netdev_stats_sync(d);
	printf("%s: mac %02x:%02x:%02x:%02x:%02x:%02x mtu %u link %s features 0x%x%s\n", d->name, d->mac[0],
	       d->mac[1], d->mac[2], d->mac[3], d->mac[4], d->mac[5], d->mtu, d->link_up ? "up" : "down",
	       d->features, d == net_if0.dev ? " (stack)" : "");
	printf("  rx frames %llu split %llu dropped %llu csum-ok %llu csum-bad %llu; bytes host-dram %llu device %llu\n",
	       U(d->stats.rx_frames), U(d->stats.rx_split), U(d->stats.rx_dropped), U(d->stats.rx_csum_ok),
	       U(d->stats.rx_csum_bad), U(d->stats.rx_bytes_host), U(d->stats.rx_bytes_device));
	printf("  tx frames %llu errors %llu csum-offload %llu; bytes host-dram %llu device %llu\n",
	       U(d->stats.tx_frames), U(d->stats.tx_errors), U(d->stats.tx_csum_offload), U(d->stats.tx_bytes_host),
	       U(d->stats.tx_bytes_device));
}

static void ip_show_counters(void)
{
	const struct net_stats *c = net_stats(); /* (brings the fast path's eth/ip rx counts in) */
	size_t in_use, cap;
	uint64_t fail;
	printf("eth: rx %llu tx %llu short %llu not-for-us %llu unknown-type %llu\n", U(c->eth_rx), U(c->eth_tx),
	       U(c->eth_short), U(c->eth_not_for_us), U(c->eth_unknown_type));
	printf("arp: rx %llu bad %llu req-rx %llu rep-rx %llu req-tx %llu rep-tx %llu queued %llu queue-full %llu "
	       "failed %llu expired %llu table-full %llu\n",
	       U(c->arp_rx), U(c->arp_bad), U(c->arp_requests_rx), U(c->arp_replies_rx), U(c->arp_requests_tx),
	       U(c->arp_replies_tx), U(c->arp_queued), U(c->arp_queue_full), U(c->arp_resolve_failed),
	       U(c->arp_expired), U(c->arp_table_full));
	printf("ip: rx %llu tx %llu bad-header %llu bad-csum %llu not-for-us %llu bad-src %llu frag-dropped %llu "
	       "unknown-proto %llu no-route %llu no-buf %llu\n",
	       U(c->ip_rx), U(c->ip_tx), U(c->ip_bad_header), U(c->ip_bad_checksum), U(c->ip_not_for_us),
	       U(c->ip_bad_src), U(c->ip_frag_dropped), U(c->ip_unknown_proto), U(c->ip_no_route), U(c->ip_tx_nobuf));
	printf("icmp: rx %llu bad %llu echo-req %llu echo-rep-tx %llu echo-rep-rx %llu\n", U(c->icmp_rx),
	       U(c->icmp_bad), U(c->icmp_echo_requests), U(c->icmp_echo_replies_tx), U(c->icmp_echo_replies_rx));
	printf("udp: rx %llu tx %llu bad %llu bad-csum %llu no-port %llu; software checksum bytes %llu\n",
	       U(c->udp_rx), U(c->udp_tx), U(c->udp_bad), U(c->udp_bad_checksum), U(c->udp_no_port),
	       U(c->l4_sw_csum_bytes));
	netbuf_pool_stats(&in_use, &cap, &fail);
	printf("netbufs: %zu of %zu in use, %llu allocation failures\n", in_use, cap, U(fail));
}

static int cmd_ip(int argc, char **argv)
{
	char a[16], m[16], g[16];
	(void)argv;
	printf("address %s netmask %s gateway %s\n", net_format_ipv4(net_if0.addr, a),
	       net_format_ipv4(net_if0.netmask, m), net_if0.gateway ? net_format_ipv4(net_if0.gateway, g) : "none");
	dhcp_show();
	if (!netdev_first())
		printf("no network device\n");
	netdev_foreach(show_dev, NULL);
	arp_show();
	if (argc < 2 || strcmp(argv[1], "-q"))
		ip_show_counters();
	return 0;
}
CONSOLE_COMMAND(ip, "[-q]", "addresses, devices, ARP table and counters", cmd_ip);

static void show_sock(const struct tcp_sock *s, void *ctx)
{
	struct tcp_info i;
	char l[16], r[16];
	(void)ctx;
	tcp_get_info(s, &i);
	printf("  %-15s:%-5u %-15s:%-5u %-12s snd una %u nxt %u wnd %u cwnd %u | rcv nxt %u wnd %u | mss %u ws %u/%u "
	       "rto %llu ms srtt %llu us | rexmit %llu fast %llu timeouts %llu | in %llu out %llu dup %llu ooo %llu | "
	       "rxq %zu B/%u frags ooo %u sndq %zu B (unsent %zu)%s\n",
	       net_format_ipv4(i.laddr, l), i.lport, net_format_ipv4(i.raddr, r), i.rport, tcp_state_name(i.state),
	       i.snd_una, i.snd_nxt, i.snd_wnd, i.cwnd, i.rcv_nxt, i.rcv_wnd, i.mss, i.snd_wscale, i.rcv_wscale,
	       U(i.rto_ns / 1000000), U(i.srtt_ns / 1000), U(i.retransmits), U(i.fast_retransmits), U(i.timeouts),
	       U(i.segs_in), U(i.segs_out), U(i.dup_segs), U(i.ooo_segs), i.rxq_bytes, i.rxq_frags, i.ooo_frags,
	       i.sndq_bytes, i.sndq_bytes - (size_t)(i.snd_nxt - i.snd_una) <= i.sndq_bytes ?
	       i.sndq_bytes - (size_t)(i.snd_nxt - i.snd_una) : (size_t)0, i.sack_ok ? " sack" : "");
}

static int cmd_tcp(int argc, char **argv)
{
	const struct tcp_stats *t = tcp_stats();
	(void)argc;
	(void)argv;
	printf("connections:\n");
	tcp_foreach(show_sock, NULL);
	printf("segs in %llu out %llu bad-csum %llu bad-header %llu no-socket %llu rst in %llu out %llu\n",
	       U(t->segs_in), U(t->segs_out), U(t->bad_checksum), U(t->bad_header), U(t->no_socket),
	       U(t->resets_in), U(t->resets_out));
	printf("challenge-acks %llu (limited %llu) backlog-drops %llu no-socket-for-syn %llu accepted %llu connected %llu\n",
	       U(t->challenge_acks), U(t->challenge_acks_limited), U(t->syn_backlog_drops), U(t->syn_no_socket),
	       U(t->accepted), U(t->connected));
	printf("retransmits %llu fast %llu timeouts %llu dup %llu ooo %llu ooo-drops %llu rx-nobufs %llu zwp %llu "
	       "keepalives %llu delayed-acks %llu acks-held %llu (expired %llu)\n",
	       U(t->retransmits), U(t->fast_retransmits), U(t->timeouts), U(t->dup_segs), U(t->ooo_segs),
	       U(t->ooo_drops), U(t->rx_nobufs), U(t->zero_window_probes), U(t->keepalive_probes),
	       U(t->delayed_acks), U(t->ack_holds), U(t->ack_hold_expired));
	printf("payload rx host-dram %llu device %llu; tx host-dram %llu device %llu\n", U(t->rx_payload_host),
	       U(t->rx_payload_device), U(t->tx_payload_host), U(t->tx_payload_device));
	printf("sack blocks-out %llu dsack-out %llu; rx budget: starved %llu window-kicks %llu budget-drops %llu; "
	       "tx segments cut at device-gather limits %llu; tso frames %llu; refused by the device (ring full) %llu; tx retries on ring space %llu; "
	       "no netbuf to send %llu; sends refused for room %llu\n",
	       U(t->sack_blocks_out), U(t->dsack_out), U(t->window_starved), U(t->window_kicks),
	       U(t->rx_budget_drops), U(t->tx_cut_dev), U(t->tso_frames), U(t->tx_refused), U(t->tx_ring_retries),
	       U(t->tx_nobuf), U(t->send_refused));
	printf("hostile peers: syn-evicted %llu syn-per-source-drops %llu conn-per-source-drops %llu evicted %llu "
	       "table-full %llu chunk-share-denied %llu ooo-pruned %llu persist-aborts %llu\n",
	       U(t->syn_evicted), U(t->syn_per_source_drops), U(t->conn_per_source_drops), U(t->evicted),
	       U(t->table_full), U(t->chunk_share_denied), U(t->ooo_pruned), U(t->persist_aborts));
	if (net_if0.dev && net_if0.dev->rx_bufs)
		printf("rx buffers: %u lent of %u (reserve %u for header-only frames)\n", net_if0.dev->rx_bufs_out,
		       net_if0.dev->rx_bufs, tcp_rx_reserve(net_if0.dev));
	return 0;
}
CONSOLE_COMMAND(tcp, "", "TCP connections (state, windows, retransmits) and counters", cmd_tcp);

/* ping runs from timers: the console command only starts it. */
static struct {
	struct timer t;
	uint32_t dst;
	unsigned count, sent, received;
	uint64_t sent_ns[16];
	bool active;
} ping;

static void ping_reply(uint32_t src, uint16_t id, uint16_t seq, size_t len)
{
	char a[16];
	if (!ping.active || id != 0x7070 || src != ping.dst || seq >= ping.sent)
		return;
	ping.received++;
	uint64_t us = (clock_now_ns() - ping.sent_ns[seq % 16]) / 1000;
	printf("%zu bytes from %s: icmp_seq=%u time=%llu.%03llu ms\n", len, net_format_ipv4(src, a), seq, U(us / 1000),
	       U(us % 1000));
}

static void ping_tick(struct timer *t, void *arg)
{
	char a[16];
	int rc;
	(void)arg;
	if (ping.sent >= ping.count) {
		printf("ping %s: %u sent, %u received\n", net_format_ipv4(ping.dst, a), ping.sent, ping.received);
		ping.active = false;
		return;
	}
	ping.sent_ns[ping.sent % 16] = clock_now_ns();
	if ((rc = icmp_send_echo(ping.dst, 0x7070, (uint16_t)ping.sent, 56)))
		printf("ping: %s\n", strerror(-rc));
	ping.sent++;
	timer_arm(&timer_default_queue, t, clock_now_ns() + NSEC_PER_SEC);
}

static int cmd_ping(int argc, char **argv)
{
	uint32_t dst;
	unsigned count = 4;
	if (argc < 2 || net_parse_ipv4(argv[1], &dst))
		return -EINVAL;
	if (argc > 2)
		count = (unsigned)strtoul(argv[2], NULL, 0);
	if (count == 0 || count > 1000)
		return -EINVAL;
	if (ping.active)
		return -EBUSY;
	ping.dst = dst;
	ping.count = count;
	ping.sent = ping.received = 0;
	ping.active = true;
	icmp_set_echo_reply_hook(ping_reply);
	timer_init(&ping.t, "ping", ping_tick, NULL);
	ping_tick(&ping.t, NULL);
	return 0;
}
CONSOLE_COMMAND(ping, "ADDRESS [count]", "ICMP echo, one per second (replies print as they arrive)", cmd_ping);

static void net_stats_show(void)
{
	const struct tcp_stats *t = tcp_stats();
	printf("  tcp payload rx: host-dram %llu B device %llu B; tx: host-dram %llu B device %llu B\n",
	       U(t->rx_payload_host), U(t->rx_payload_device), U(t->tx_payload_host), U(t->tx_payload_device));
}
STATS_SECTION(net, net_stats_show);
