// sources: drivers/nic/netdev.c net/net.c lib/ipv4_text.c net/arp.c net/ipv4.c net/udp.c net/tcp/tcp.c net/tcp/tcp_in.c net/tcp/tcp_isn.c net/tcp/tcp_pools.c net/tcp/tcp_admit.c tests/unit/net/fake_entropy.c net/tcp/tcp_hdr.c net/tcp/tcp_out.c net/tcp/tcp_budget.c net/tcp/tcp_sack.c net/tcp/tcp_service.c mm/pool.c mm/dma.c lib/timer.c lib/log.c tests/unit/net/fake_netdev.c
/*
 * Hostile peers (issue 13): well-formed peers that are patient rather than malformed.
 * Zero-window peers of chargen cannot take the chunk pool from other sockets; 1-byte
 * out-of-order floods cannot pin the NIC's receive buffers; persist probes to a closed
 * window give up; SYN floods, per-source limits, half-open lifetime, listener backlogs
 * and a full table (eviction of connections the user never authorised).
 */
#include "tests/unit/net/tcp/tcp_test.h"

TestSuite(tcp_hostile, .init = net_setup, .fini = net_teardown);

static uint8_t pattern[4096];

/* Teach the stack host ip's MAC (the fake peer's) so answers to it go out at once. */
static void arp_for(uint32_t ip)
{
	size_t n = fake_build_arp(frame, 2, fake_peer_mac, ip, fake_our_mac, US, fake_our_mac);
	cr_assert_eq(fake_netdev_inject(&fnd, frame, n), 0);
}

static void seg_ip(uint32_t ip, uint16_t sport, uint16_t dport, uint8_t flags, uint32_t seq, uint32_t ack,
		   uint16_t wnd, const void *d, size_t len)
{
	struct fake_tcp t = { .src = ip, .dst = US, .sport = sport, .dport = dport, .seq = seq, .ack = ack,
			      .flags = flags, .wnd = wnd, .opts = (flags & TCP_SYN) ? opt_mss1460 : NULL,
			      .optlen = (flags & TCP_SYN) ? 4 : 0, .payload = d, .len = len };
	size_t n = fake_build_tcp(frame, &t);
	cr_assert_eq(fake_netdev_inject(&fnd, frame, n), 0);
}

/* Handshake from ip:sport to dport with window wnd (peer ISS 1000); our ISS or 0 when no
 * SYN-ACK came. */
static uint32_t handshake(uint32_t ip, uint16_t sport, uint16_t dport, uint16_t wnd)
{
	fake_netdev_clear(&fnd);
	seg_ip(ip, sport, dport, TCP_SYN, 1000, 0, wnd, NULL, 0);
	struct fake_parsed_tcp p;
	for (unsigned i = fnd.ntx; i-- > 0;)
		if (fake_parse_tcp(&fnd.tx[i], &p) && p.flags == (TCP_SYN | TCP_ACK) && p.dport == sport) {
			seg_ip(ip, sport, dport, TCP_ACK, 1001, p.seq + 1, wnd, NULL, 0);
			return p.seq;
		}
	return 0;
}

static unsigned count_state(enum tcp_state st)
{
	struct list_node *it;
	unsigned n = 0;
	list_for_each(&tcp_socks, it)
		n += container_of(it, struct tcp_sock, node)->state == st;
	return n;
}

/* Reset every connection (the services' ones have no user to close them). */
static void abort_all(void)
{
	while (!list_empty(&tcp_socks))
		tcp_abort(container_of(tcp_socks.next, struct tcp_sock, node));
}

/* Item 4: twelve peers connect to chargen and never open their window. Before the
 * per-socket shares, eight of them (256 KiB send queues of 2 KiB chunks) emptied the
 * 1024-chunk pool and every other socket's tcp_send_copy failed with -ENOBUFS. */
Test(tcp_hostile, zero_window_chargen_peers_leave_chunks_for_others)
{
	struct tcp_sock *l;
	cr_assert_eq(tcp_services_start(), 0);
	for (unsigned k = 0; k < 12; k++)
		cr_assert_neq(handshake(PEER, (uint16_t)(41000 + k), 19, 0), 0);
	cr_assert_leq(tcp_chunks_borrowed, TCP_CHUNK_SHARED);
	struct list_node *it;
	size_t queued = 0;
	list_for_each(&tcp_socks, it) {
		struct tcp_sock *s = container_of(it, struct tcp_sock, node);
		cr_assert_leq(s->chunks_tx, TCP_CHUNK_RESERVE + TCP_CHUNK_BORROW_MAX, "one socket's share is bounded");
		queued += s->sndq_bytes;
	}
	cr_assert_geq(queued, (size_t)7 * TCP_SND_BUF, "the first peers still got full send queues (%zu)", queued);
	/* A connection that arrives now still sends its PDUs. */
	cr_assert_eq(tcp_listen(SRV_PORT, 8, &listen_ops, NULL, &l), 0);
	uint32_t iss = handshake(PEER, PEER_PORT, SRV_PORT, 65535);
	cr_assert_neq(iss, 0);
	cr_assert_geq(tcp_send_space(accepted), 4096, "its reserve: %zu", tcp_send_space(accepted));
	cr_assert_eq(tcp_send_copy(accepted, pattern, 4096), 4096);
	/* Back-pressure, not failure: a full share reports no space and -ENOBUFS. */
	tcp_services_stop();
	abort_all();
}

/* Item 4: 1-byte segments, each beyond a hole, from a peer that never fills the hole.
 * Before the cap, one socket kept up to 512 of them, each pinning a NIC receive buffer:
 * the budget then refused every other connection's payload. Now a socket keeps as many
 * out-of-order fragments as its window has segments. */
Test(tcp_hostile, one_byte_out_of_order_flood_pins_few_buffers)
{
	struct tcp_sock *l;
	static uint8_t data[1000];
	cr_assert_eq(tcp_listen(SRV_PORT, 8, &listen_ops, NULL, &l), 0);
	uint32_t iss_a = handshake(PEER, PEER_PORT, SRV_PORT, 65535);
	struct tcp_sock *a = accepted;
	for (unsigned k = 0; k < 2000; k++)
		seg_ip(PEER, PEER_PORT, SRV_PORT, TCP_ACK, 1001 + 2 + 2 * k, iss_a + 1, 65535, "x", 1);
	struct tcp_info ia;
	tcp_get_info(a, &ia);
	cr_assert_leq(ia.ooo_frags, TCP_RCV_CAP_INIT + 1, "ooo fragments held: %u", ia.ooo_frags);
	cr_assert_leq(fnd.data_out, TCP_RCV_CAP_INIT + 1, "receive buffers pinned: %u", fnd.data_out);
	cr_assert_gt(tcp_stats()->ooo_drops + tcp_stats()->ooo_pruned, 0);
	/* Another connection still gets its data in. */
	uint32_t iss_b = handshake(PEER, PEER_PORT + 1, SRV_PORT, 65535);
	struct tcp_sock *b = accepted;
	uint64_t drops = tcp_stats()->rx_budget_drops;
	for (unsigned k = 0; k < 12; k++)
		seg_ip(PEER, PEER_PORT + 1, SRV_PORT, TCP_ACK, 1001 + 1000 * k, iss_b + 1, 65535, data, sizeof(data));
	cr_assert_eq(tcp_recv_avail(b), 12000);
	cr_assert_eq(tcp_stats()->rx_budget_drops, drops);
	/* The hole filled: the kept fragments are delivered in order. */
	seg_ip(PEER, PEER_PORT, SRV_PORT, TCP_ACK, 1001, iss_a + 1, 65535, "yy", 2);
	cr_assert_eq(tcp_recv_avail(a), 3);
	tcp_abort(a);
	tcp_abort(b);
	close_listener(l);
}

/* Item 4: a peer that keeps its window shut and ACKs every probe held its connection
 * (and 256 KiB of chunks) for ever. Now probing ends after TCP_PERSIST_MAX_NS. */
Test(tcp_hostile, zero_window_probes_give_up)
{
	cr_assert_eq(tcp_services_start(), 0);
	uint32_t iss = handshake(PEER, PEER_PORT, 19, 0);
	cr_assert_neq(iss, 0);
	cr_assert_eq(count_state(TCP_ESTABLISHED), 1);
	uint64_t t = 0;
	while (count_state(TCP_ESTABLISHED) && t < 10 * TCP_PERSIST_MAX_NS) {
		fake_netdev_clear(&fnd);
		advance_long(NSEC_PER_SEC);
		t += NSEC_PER_SEC;
		if (count_tcp(TCP_ACK) || count_tcp(TCP_ACK | TCP_PSH))
			seg_ip(PEER, PEER_PORT, 19, TCP_ACK, 1001, iss + 1, 0, NULL, 0); /* ACK the probe, window 0 */
	}
	cr_assert_eq(count_state(TCP_ESTABLISHED), 0, "still established after %llu s",
		     (unsigned long long)(t / NSEC_PER_SEC));
	cr_assert_eq(tcp_stats()->persist_aborts, 1);
	cr_assert_leq(t, TCP_PERSIST_MAX_NS + 2 * TCP_RTO_MAX_NS, "gave up after %llu s",
		      (unsigned long long)(t / NSEC_PER_SEC));
	cr_assert_geq(t, TCP_PERSIST_MAX_NS);
	tcp_services_stop();
	abort_all();
}

#define ATK 0x0a0a0042u /* 10.10.0.66: the attacker */

static unsigned half_open_from(uint32_t ip)
{
	struct list_node *it;
	unsigned n = 0;
	list_for_each(&tcp_socks, it) {
		const struct tcp_sock *s = container_of(it, struct tcp_sock, node);
		n += s->state == TCP_SYN_RECEIVED && s->raddr == ip;
	}
	return n;
}

/* Item 5: 200 SYNs from one host that never completes a handshake. Before, the
 * listener's backlog (16) filled and the next host's SYN was dropped for a minute. */
Test(tcp_hostile, syn_flood_leaves_room_for_a_host)
{
	struct tcp_sock *l;
	cr_assert_eq(tcp_listen(SRV_PORT, 16, &listen_ops, NULL, &l), 0);
	arp_for(ATK);
	for (unsigned k = 0; k < 200; k++)
		seg_ip(ATK, (uint16_t)(20000 + k), SRV_PORT, TCP_SYN, 7000, 0, 65535, NULL, 0);
	cr_assert_leq(half_open_from(ATK), TCP_HALF_OPEN_PER_SOURCE);
	cr_assert_leq(count_state(TCP_SYN_RECEIVED), TCP_HALF_OPEN_MAX);
	cr_assert_neq(handshake(PEER, PEER_PORT, SRV_PORT, 65535), 0, "the host gets its SYN-ACK");
	cr_assert_not_null(accepted, "and its connection");
	cr_assert_eq(tcp_state(accepted), TCP_ESTABLISHED);
	tcp_abort(accepted);
	close_listener(l);
}

/* Item 5: one host opening many connections at once (100 socat clients in the lab's
 * net_concurrent) must not lose the handshakes already under way: its SYN beyond its
 * half-open share is dropped (it retransmits it), not traded for its own oldest
 * half-open entry, whose ACK would then meet no socket and get a RST. */
Test(tcp_hostile, a_hosts_burst_of_syns_keeps_its_handshakes)
{
	struct tcp_sock *l;
	cr_assert_eq(tcp_listen(SRV_PORT, 16, &listen_ops, NULL, &l), 0);
	arp_for(PEER);
	for (unsigned k = 0; k < TCP_HALF_OPEN_PER_SOURCE; k++)
		seg_ip(PEER, (uint16_t)(30000 + k), SRV_PORT, TCP_SYN, 1000, 0, 65535, NULL, 0);
	cr_assert_eq(half_open_from(PEER), TCP_HALF_OPEN_PER_SOURCE);
	cr_assert_eq(handshake(PEER, 31000, SRV_PORT, 65535), 0, "the SYN beyond the share is dropped");
	cr_assert_eq(half_open_from(PEER), TCP_HALF_OPEN_PER_SOURCE, "no handshake under way was lost");
	cr_assert_eq(tcp_stats()->syn_evicted, 0);
	cr_assert_eq(tcp_stats()->syn_per_source_drops, 1);
	close_listener(l);
}

/* Item 5: a half-open connection lives about 15 s (3 SYN-ACK retransmissions), not a
 * minute. */
Test(tcp_hostile, half_open_lifetime_is_short)
{
	struct tcp_sock *l;
	cr_assert_eq(tcp_listen(SRV_PORT, 4, &listen_ops, NULL, &l), 0);
	arp_for(ATK);
	seg_ip(ATK, 20000, SRV_PORT, TCP_SYN, 7000, 0, 65535, NULL, 0);
	cr_assert_eq(count_state(TCP_SYN_RECEIVED), 1);
	advance_long(14 * NSEC_PER_SEC);
	cr_assert_eq(count_state(TCP_SYN_RECEIVED), 1);
	arp_for(ATK);
	advance_long(3 * NSEC_PER_SEC);
	cr_assert_eq(count_state(TCP_SYN_RECEIVED), 0, "gone after 1+2+4+8 s of SYN-ACKs");
	close_listener(l);
}

/* Item 5: one host opens 100 connections: it gets TCP_CONN_PER_SOURCE, another host
 * still connects. */
Test(tcp_hostile, connections_per_source_bounded)
{
	struct tcp_sock *l;
	cr_assert_eq(tcp_listen(SRV_PORT, 16, &listen_ops, NULL, &l), 0);
	arp_for(ATK);
	unsigned got = 0;
	for (unsigned k = 0; k < 100; k++)
		got += handshake(ATK, (uint16_t)(20000 + k), SRV_PORT, 65535) != 0;
	cr_assert_eq(got, TCP_CONN_PER_SOURCE);
	cr_assert_eq(tcp_stats()->conn_per_source_drops, 100 - TCP_CONN_PER_SOURCE);
	cr_assert_neq(handshake(PEER, PEER_PORT, SRV_PORT, 65535), 0);
	close_listener(l);
	abort_all();
}

/* A user that closes what the stack reports closed (as the NVMe/TCP target does). */
static unsigned closed_aborted;
static void close_on_closed(struct tcp_sock *s, void *ctx, unsigned ev)
{
	(void)ctx;
	if (ev & TCP_EV_CLOSED) {
		closed_aborted += tcp_error(s) == -ECONNABORTED;
		tcp_close(s);
	}
}
static const struct tcp_ops close_ops = { close_on_closed };
static struct tcp_sock *last_conn;
static void accept_closing(struct tcp_sock *l, void *ctx, unsigned ev)
{
	struct tcp_sock *c;
	(void)ctx;
	if (ev & TCP_EV_ACCEPT)
		while ((c = tcp_accept(l))) {
			last_conn = c;
			tcp_set_ops(c, &close_ops, NULL);
		}
}
static const struct tcp_ops accept_closing_ops = { accept_closing };

/* Item 5: a full table. A new connection takes the slot of the oldest connection its
 * user never authorised, never an authorised one. Before, it was refused. */
Test(tcp_hostile, full_table_evicts_the_oldest_unauthorised)
{
	struct tcp_sock *l;
	closed_aborted = 0;
	cr_assert_eq(tcp_listen(SRV_PORT, 16, &accept_closing_ops, NULL, &l), 0);
	cr_assert_neq(handshake(PEER, PEER_PORT, SRV_PORT, 65535), 0);
	struct tcp_sock *mine = last_conn;
	tcp_set_authorised(mine);
	unsigned k = 0;
	while (tcp_sock_free_slots() > 0) {
		uint32_t ip = ATK + k / 50;
		if (k % 50 == 0)
			arp_for(ip);
		advance(NSEC_PER_MSEC);
		cr_assert_neq(handshake(ip, (uint16_t)(20000 + k), SRV_PORT, 65535), 0, "connection %u", k);
		k++;
	}
	struct tcp_sock *first_stranger = NULL;
	struct list_node *it;
	list_for_each(&tcp_socks, it) {
		struct tcp_sock *s = container_of(it, struct tcp_sock, node);
		if (s->raddr == ATK && s->rport == 20000)
			first_stranger = s;
	}
	cr_assert_not_null(first_stranger);
	cr_assert_neq(handshake(PEER, PEER_PORT + 1, SRV_PORT, 65535), 0, "a new connection in a full table");
	cr_assert_eq(closed_aborted, 1, "the oldest stranger was reset");
	cr_assert_eq(tcp_stats()->evicted, 1);
	cr_assert_eq(tcp_state(mine), TCP_ESTABLISHED, "the authorised one stays");
	list_for_each(&tcp_socks, it) {
		struct tcp_sock *s = container_of(it, struct tcp_sock, node);
		cr_assert(!(s->raddr == ATK && s->rport == 20000), "the oldest stranger is gone");
	}
	close_listener(l);
	abort_all();
}

/* Item 5: listener backlogs add up to at most TCP_BACKLOG_TOTAL. */
Test(tcp_hostile, backlogs_fit_the_table)
{
	struct tcp_sock *a, *b, *c;
	cr_assert_eq(tcp_listen(1000, 1000, &listen_ops, NULL, &a), 0);
	cr_assert_eq(a->backlog, TCP_BACKLOG_TOTAL);
	cr_assert_eq(tcp_listen(1001, 1, &listen_ops, NULL, &b), -ENOSPC);
	tcp_close(a);
	cr_assert_eq(tcp_listen(1001, 16, &listen_ops, NULL, &b), 0);
	cr_assert_eq(tcp_listen(1002, TCP_BACKLOG_TOTAL, &listen_ops, NULL, &c), 0);
	cr_assert_eq(b->backlog + c->backlog, TCP_BACKLOG_TOTAL);
	tcp_close(b);
	tcp_close(c);
}

/* Keep-alive probes (segments at SND.NXT - 1, no data) sent to sport's connection. */
static unsigned probes_to(uint16_t sport, uint32_t iss)
{
	struct fake_parsed_tcp p;
	unsigned n = 0;
	for (unsigned i = 0; i < fnd.ntx; i++)
		n += fake_parse_tcp(&fnd.tx[i], &p) && p.dport == sport && p.flags == TCP_ACK && p.seq == iss &&
		     p.len == 0;
	return n;
}

/* Item 5: keep-alive on idle connections. The listener's values reach every connection
 * it accepts, armed when the handshake completes: a peer that sent nothing after its ACK
 * and vanished gets TCP_KEEPALIVE_PROBES probes from TCP_KEEPALIVE_IDLE_NS on and a reset
 * 50 s after its last segment; a peer whose kernel answers the probes stays. Before, no
 * listener had keep-alive and such a connection (a KATO 0 controller's) lived for ever. */
Test(tcp_hostile, keepalive_resets_a_vanished_idle_peer)
{
	struct tcp_sock *l;
	closed_aborted = 0;
	cr_assert_eq(tcp_listen(SRV_PORT, 16, &accept_closing_ops, NULL, &l), 0);
	tcp_set_keepalive(l, TCP_KEEPALIVE_IDLE_NS, TCP_KEEPALIVE_INTVL_NS, TCP_KEEPALIVE_PROBES);
	uint32_t iss_gone = handshake(PEER, PEER_PORT, SRV_PORT, 65535);
	struct tcp_sock *gone = last_conn;
	uint32_t iss_live = handshake(PEER, PEER_PORT + 1, SRV_PORT, 65535);
	struct tcp_sock *live = last_conn;
	cr_assert(iss_gone && iss_live && gone != live);
	fake_netdev_clear(&fnd);
	uint64_t probes0 = tcp_stats()->keepalive_probes;
	/* 120 s, 1 s at a time: the live peer answers each probe, the other never. */
	unsigned answered = 0, rst_at = 0;
	for (unsigned t = 1; t <= 120; t++) {
		unsigned before = probes_to(PEER_PORT + 1, iss_live);
		advance_long(NSEC_PER_SEC);
		if (probes_to(PEER_PORT + 1, iss_live) > before) {
			seg_ip(PEER, PEER_PORT + 1, SRV_PORT, TCP_ACK, 1001, iss_live + 1, 65535, NULL, 0);
			answered++;
		}
		if (!rst_at && count_tcp(TCP_RST | TCP_ACK))
			rst_at = t;
		if (t == TCP_KEEPALIVE_IDLE_NS / NSEC_PER_SEC - 1)
			cr_assert_eq(probes_to(PEER_PORT, iss_gone), 0, "no probe before the idle time");
	}
	cr_assert_eq(probes_to(PEER_PORT, iss_gone), TCP_KEEPALIVE_PROBES);
	cr_assert_eq(rst_at, (TCP_KEEPALIVE_IDLE_NS + TCP_KEEPALIVE_PROBES * TCP_KEEPALIVE_INTVL_NS) / NSEC_PER_SEC,
		     "reset %u s after the last segment", rst_at);
	cr_assert_geq(answered, 3, "the live peer was probed every idle period (%u)", answered);
	cr_assert_eq(tcp_stats()->keepalive_probes - probes0, TCP_KEEPALIVE_PROBES + answered);
	cr_assert_eq(tcp_state(live), TCP_ESTABLISHED);
	cr_assert_eq(count_state(TCP_ESTABLISHED), 1, "the vanished peer's connection is gone");
	tcp_abort(live);
	close_listener(l);
}
