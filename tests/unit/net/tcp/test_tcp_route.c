// sources: drivers/nic/netdev.c net/net.c lib/ipv4_text.c net/arp.c net/ipv4.c net/udp.c net/tcp/tcp.c net/tcp/tcp_in.c net/tcp/tcp_isn.c net/tcp/tcp_pools.c net/tcp/tcp_admit.c tests/unit/net/fake_entropy.c net/tcp/tcp_hdr.c net/tcp/tcp_out.c net/tcp/tcp_budget.c net/tcp/tcp_sack.c net/tcp/tcp_service.c mm/pool.c mm/dma.c lib/timer.c lib/log.c tests/unit/net/fake_netdev.c
/*
 * A connection's cached route (struct net_route, ipv4_output_route): its frames carry
 * the headers ipv4_output would write (byte for byte but for the length, identification
 * and checksum, which move on as before), and the route follows every change it was
 * built from: the next hop's MAC moving, its ARP entry expiring (the frame waits for ARP
 * again), the netmask and gateway changing the next hop.
 */
#include "tests/unit/net/tcp/tcp_test.h"

TestSuite(tcp_route, .init = net_setup, .fini = net_teardown);

static const uint8_t mac2[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x22 };
static const uint8_t mac3[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x33 };
static const uint8_t gw_mac[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x99 };

/* Send n bytes on s and have the peer acknowledge them; the frame is fnd.tx[first]. */
static uint32_t send_acked(struct tcp_sock *s, uint32_t piss, uint32_t snd_nxt, size_t n)
{
	static const uint8_t data[64] = { 1, 2, 3 };
	cr_assert_eq(tcp_send_copy(s, data, n), (long)n);
	tcp_flush(s);
	peer_seg(TCP_ACK, piss + 1, snd_nxt + (uint32_t)n, 65535, NULL, 0, NULL, 0);
	return snd_nxt + (uint32_t)n;
}

static uint16_t ip_ident(const struct fake_frame *f)
{
	return (uint16_t)(f->b[14 + 4] << 8 | f->b[14 + 5]);
}

static bool is_arp_request_for(const struct fake_frame *f, uint32_t ip)
{
	return f->len >= 42 && f->b[12] == 0x08 && f->b[13] == 0x06 && f->b[21] == 1 &&
	       (uint32_t)(f->b[38] << 24 | f->b[39] << 16 | f->b[40] << 8 | f->b[41]) == ip;
}

Test(tcp_route, cached_headers_are_ipv4_outputs)
{
	struct tcp_sock *l;
	uint32_t iss = open_passive(&l, 1000, 65535, opt_mss1460, sizeof(opt_mss1460));
	uint32_t nxt = iss + 1;

	/* The first frame after a change takes ipv4_output (and builds the route), the second
	 * the route: same headers, the identification one further, both checksums good. */
	net_route_changed();
	nxt = send_acked(accepted, 1000, nxt, 10);
	nxt = send_acked(accepted, 1000, nxt, 10);
	cr_assert_eq(fnd.ntx, 2);
	struct fake_frame *a = &fnd.tx[0], *b = &fnd.tx[1];
	cr_assert_eq(a->len, b->len);
	cr_assert_eq(memcmp(a->b, b->b, 14 + 2), 0, "Ethernet header, IPv4 version, IHL, TOS");
	cr_assert_eq(memcmp(a->b + 14 + 6, b->b + 14 + 6, 4), 0, "flags (DF), TTL, protocol");
	cr_assert_eq(memcmp(a->b + 14 + 12, b->b + 14 + 12, 8), 0, "addresses");
	cr_assert_eq(ip_ident(b), (uint16_t)(ip_ident(a) + 1));
	cr_assert_eq(fake_csum(a->b + 14, 20, 0), 0xffff);
	cr_assert_eq(fake_csum(b->b + 14, 20, 0), 0xffff);
	cr_assert_eq(memcmp(b->b, fake_peer_mac, 6), 0);
	cr_assert_eq(txseg(1)->len, 10);
	tcp_abort(accepted);
	close_listener(l);
}

Test(tcp_route, follows_the_peer_to_a_new_mac)
{
	struct tcp_sock *l;
	uint32_t iss = open_passive(&l, 1000, 65535, opt_mss1460, sizeof(opt_mss1460));
	uint32_t nxt = send_acked(accepted, 1000, iss + 1, 5);
	cr_assert_eq(memcmp(fnd.tx[0].b, fake_peer_mac, 6), 0);

	/* The peer moves (a failover, a new NIC): its gratuitous reply updates the table. */
	size_t n = fake_build_arp(frame, 2, mac2, PEER, fake_our_mac, US, fake_our_mac);
	cr_assert_eq(fake_netdev_inject(&fnd, frame, n), 0);
	fake_netdev_clear(&fnd);
	nxt = send_acked(accepted, 1000, nxt, 5);
	cr_assert_eq(fnd.ntx, 1);
	cr_assert_eq(memcmp(fnd.tx[0].b, mac2, 6), 0, "to the new MAC at once");
	cr_assert_eq(txseg(0)->len, 5);
	tcp_abort(accepted);
	close_listener(l);
}

Test(tcp_route, expired_entry_asks_arp_again)
{
	struct tcp_sock *l;
	uint32_t iss = open_passive(&l, 1000, 65535, opt_mss1460, sizeof(opt_mss1460));
	uint32_t nxt = send_acked(accepted, 1000, iss + 1, 5);
	uint64_t asked = net_stats()->arp_requests_tx;

	/* The entry expires (60 s without a word from the peer): the next frame waits for
	 * ARP as it did without a route cache, and goes to whoever answers. */
	advance(61 * NSEC_PER_SEC);
	cr_assert_eq(net_stats()->arp_expired, 1);
	fake_netdev_clear(&fnd);
	cr_assert_eq(tcp_send_copy(accepted, "abcde", 5), 5);
	tcp_flush(accepted);
	cr_assert_eq(fnd.ntx, 1);
	cr_assert(is_arp_request_for(&fnd.tx[0], PEER), "an ARP request, the segment queued");
	cr_assert_eq(net_stats()->arp_requests_tx, asked + 1);
	size_t n = fake_build_arp(frame, 2, mac3, PEER, fake_our_mac, US, fake_our_mac);
	cr_assert_eq(fake_netdev_inject(&fnd, frame, n), 0);
	cr_assert_eq(fnd.ntx, 2);
	cr_assert_eq(memcmp(fnd.tx[1].b, mac3, 6), 0, "the queued segment to the answer's MAC");
	cr_assert_eq(txseg(1)->len, 5);
	peer_seg(TCP_ACK, 1001, nxt + 5, 65535, NULL, 0, NULL, 0);
	nxt += 5;
	fake_netdev_clear(&fnd);
	nxt = send_acked(accepted, 1000, nxt, 7);
	cr_assert_eq(memcmp(fnd.tx[0].b, mac3, 6), 0, "and the route rebuilt from it");
	tcp_abort(accepted);
	close_listener(l);
}

Test(tcp_route, new_netmask_and_gateway_change_the_next_hop)
{
	struct tcp_sock *l;
	uint32_t iss = open_passive(&l, 1000, 65535, opt_mss1460, sizeof(opt_mss1460));
	uint32_t nxt = send_acked(accepted, 1000, iss + 1, 5);

	/* Netmask 255.255.255.248 puts the peer (10.10.0.1) off our subnet (10.10.0.8/29):
	 * the next frame goes through the gateway 10.10.0.9, which ARP has to find first. */
	struct net_config c = { .addr = US, .netmask = 0xfffffff8u, .gateway = 0x0a0a0009u };
	cr_assert_eq(net_configure(&c), 0);
	fake_netdev_clear(&fnd);
	cr_assert_eq(tcp_send_copy(accepted, "abcde", 5), 5);
	tcp_flush(accepted);
	cr_assert_eq(fnd.ntx, 1);
	cr_assert(is_arp_request_for(&fnd.tx[0], 0x0a0a0009u), "the gateway is asked for, not the peer");
	size_t n = fake_build_arp(frame, 2, gw_mac, 0x0a0a0009u, fake_our_mac, US, fake_our_mac);
	cr_assert_eq(fake_netdev_inject(&fnd, frame, n), 0);
	cr_assert_eq(fnd.ntx, 2);
	cr_assert_eq(memcmp(fnd.tx[1].b, gw_mac, 6), 0, "through the gateway");
	peer_seg(TCP_ACK, 1001, nxt + 5, 65535, NULL, 0, NULL, 0);
	nxt += 5;

	/* Back on one subnet: straight to the peer again. */
	net_config_default(&c);
	cr_assert_eq(net_configure(&c), 0);
	fake_netdev_clear(&fnd);
	nxt = send_acked(accepted, 1000, nxt, 3);
	cr_assert_eq(memcmp(fnd.tx[0].b, fake_peer_mac, 6), 0, "to the peer's MAC");
	tcp_abort(accepted);
	close_listener(l);
}

/* With transmit checksum offload the data frames of a tcp_output pass come from the route's
 * template and the connection's fixed header part (tcp_xmit_fast): each frame is what
 * tcp_xmit would build (the same Ethernet and IPv4 bytes but for the length,
 * identification and checksum, both checksums good, the window, the ACK, PSH on the last),
 * the identification one further each frame; after a route change the first frame rebuilds
 * the route (tcp_xmit) and the next ones take it; a refused frame is sent again in order. */
static void offload_setup(void)
{
	net_test_start(NETDEV_F_RX_SPLIT | NETDEV_F_TX_CSUM);
}

TestSuite(tcp_route_offload, .init = offload_setup, .fini = net_teardown);

static uint8_t pat[8 * 1460];

static void check_pass(unsigned first, unsigned n, uint32_t seq, size_t off, size_t last_len)
{
	struct fake_frame *a = &fnd.tx[first];
	for (unsigned k = first; k < first + n; k++) {
		struct fake_frame *b = &fnd.tx[k];
		struct fake_parsed_tcp *t = txseg(k);
		size_t len = k + 1 == first + n ? last_len : 1460;
		cr_assert_eq(t->seq, seq + (uint32_t)((k - first) * 1460), "frame %u in order", k);
		cr_assert_eq(t->ack, 1001);
		cr_assert_eq(t->flags, k + 1 == first + n ? TCP_ACK | TCP_PSH : TCP_ACK);
		cr_assert_eq(t->hlen, 20, "no options");
		cr_assert_eq(t->len, len);
		cr_assert_eq(memcmp(t->payload, pat + off + (k - first) * 1460, len), 0);
		cr_assert_eq(memcmp(a->b, b->b, 14 + 2), 0, "Ethernet header, IPv4 version, IHL, TOS");
		cr_assert_eq(memcmp(a->b + 14 + 6, b->b + 14 + 6, 4), 0, "flags (DF), TTL, protocol");
		cr_assert_eq(memcmp(a->b + 14 + 12, b->b + 14 + 12, 8), 0, "addresses");
		cr_assert_eq(ip_ident(b), (uint16_t)(ip_ident(a) + (k - first)));
		cr_assert_eq((size_t)(b->b[14 + 2] << 8 | b->b[14 + 3]), 40 + len, "IPv4 total length");
		cr_assert_eq(fake_csum(b->b + 14, 20, 0), 0xffff);
	}
}

Test(tcp_route_offload, a_pass_of_frames_from_the_template)
{
	struct tcp_sock *l;
	for (size_t i = 0; i < sizeof(pat); i++)
		pat[i] = (uint8_t)(i * 7 + (i >> 9));
	uint32_t iss = open_passive(&l, 1000, 65535, opt_mss1460, sizeof(opt_mss1460));
	struct tcp_sock *s = accepted;
	s->cwnd = 16 * 1460; /* (past the initial window) */
	fake_netdev_clear(&fnd);

	cr_assert_eq(tcp_send_copy(s, pat, 3 * 1460 + 100), 3 * 1460 + 100);
	tcp_flush(s);
	cr_assert_eq(fnd.ntx, 4);
	check_pass(0, 4, iss + 1, 0, 100);
	uint16_t wnd = txseg(0)->wnd;
	tcp_send_ack_now(s); /* tcp_xmit's frame */
	cr_assert_eq(fnd.ntx, 5);
	cr_assert_eq(txseg(4)->wnd, wnd, "the window tcp_xmit gives");
	cr_assert_eq(txseg(4)->seq, iss + 1 + 3 * 1460 + 100);
	cr_assert_eq(memcmp(fnd.tx[0].b, fnd.tx[4].b, 14 + 2), 0);
	cr_assert_eq(memcmp(fnd.tx[0].b + 14 + 6, fnd.tx[4].b + 14 + 6, 4), 0, "the same IPv4 header");
	cr_assert_eq(memcmp(fnd.tx[0].b + 14 + 12, fnd.tx[4].b + 14 + 12, 8), 0);
	cr_assert_eq(tcp_stats()->tx_payload_host, 3 * 1460 + 100);
	peer_seg(TCP_ACK, 1001, iss + 1 + 3 * 1460 + 100, 65535, NULL, 0, NULL, 0);

	/* a route change: the first frame rebuilds it, the others take it */
	fake_netdev_clear(&fnd);
	net_route_changed();
	cr_assert_eq(tcp_send_copy(s, pat + 4480, 2 * 1460 + 10), 2 * 1460 + 10);
	tcp_flush(s);
	cr_assert_eq(fnd.ntx, 3);
	check_pass(0, 3, iss + 1 + 4480, 4480, 10);
	peer_seg(TCP_ACK, 1001, iss + 1 + 4480 + 2930, 65535, NULL, 0, NULL, 0);

	/* a refused frame: the pass stops there, the rest goes at the turn, in order */
	fake_netdev_clear(&fnd);
	fnd.tx_refuse = 1;
	cr_assert_eq(tcp_send_copy(s, pat, 2 * 1460), 2 * 1460);
	tcp_flush(s);
	cr_assert_eq(fnd.ntx, 0);
	cr_assert_eq(tcp_stats()->tx_refused, 1);
	netdev_tx_wake(&fnd.dev);
	cr_assert_gt(poll_pass(), 0);
	cr_assert_eq(fnd.ntx, 2);
	check_pass(0, 2, iss + 1 + 7410, 0, 1460);
	peer_seg(TCP_ACK, 1001, iss + 1 + 7410 + 2920, 65535, NULL, 0, NULL, 0);
	struct tcp_info i;
	tcp_get_info(s, &i);
	cr_assert_eq(i.sndq_bytes, 0);
	cr_assert_eq(i.retransmits, 0);
	tcp_abort(s);
	close_listener(l);
}

/* A pass's frames after a full segment go as a run (tcp_output_run): the run stops where the
 * loop's own decisions begin, and the loop then makes them as before. A window-limited tail
 * shorter than the MSS waits (sender SWS avoidance); a refusal in the middle stops the
 * pass with SND.NXT after the last frame taken; the last frame carries the FIN of a shut
 * down socket; with the user still queueing (tcp_send_copy alone) the short tail is held
 * for the flush. SND.NXT, SND.MAX, the segments counted and the RTT sample follow the run's
 * frames. */
Test(tcp_route_offload, a_run_of_frames_stops_where_the_loop_decides)
{
	struct tcp_sock *l;
	struct tcp_info i;
	for (size_t k = 0; k < sizeof(pat); k++)
		pat[k] = (uint8_t)(k * 7 + (k >> 9));
	uint32_t iss = open_passive(&l, 1000, 65535, opt_mss1460, sizeof(opt_mss1460));
	struct tcp_sock *s = accepted;
	uint32_t nxt = iss + 1;
	s->cwnd = 16 * 1460;
	fake_netdev_clear(&fnd);

	/* the peer's window: 3 segments and 500 bytes; 4 segments queued */
	peer_seg(TCP_ACK, 1001, nxt, 3 * 1460 + 500, NULL, 0, NULL, 0);
	uint64_t segs = tcp_stats()->segs_out;
	cr_assert_eq(tcp_send_copy(s, pat, 4 * 1460), 4 * 1460);
	tcp_flush(s);
	cr_assert_eq(fnd.ntx, 3, "the 500 bytes the window leaves wait (SWS avoidance)");
	for (unsigned k = 0; k < 3; k++) {
		cr_assert_eq(txseg(k)->seq, nxt + k * 1460);
		cr_assert_eq(txseg(k)->len, 1460);
		cr_assert_eq(txseg(k)->flags, TCP_ACK);
		cr_assert_eq(memcmp(txseg(k)->payload, pat + k * 1460, 1460), 0);
	}
	cr_assert_eq(tcp_stats()->segs_out - segs, 3);
	tcp_get_info(s, &i);
	cr_assert_eq(i.snd_nxt, nxt + 3 * 1460);
	cr_assert_eq(i.segs_out, 3 + 1, "the SYN-ACK and the run's frames");
	advance(50 * NSEC_PER_MSEC);
	peer_seg(TCP_ACK, 1001, nxt + 3 * 1460, 65535, NULL, 0, NULL, 0);
	tcp_get_info(s, &i);
	cr_assert_eq(i.srtt_ns, 50 * NSEC_PER_MSEC, "timed from the pass's first frame");
	cr_assert_eq(fnd.ntx, 4, "the rest goes at the ACK");
	cr_assert_eq(txseg(3)->seq, nxt + 3 * 1460);
	cr_assert_eq(txseg(3)->flags, TCP_ACK | TCP_PSH);
	nxt += 4 * 1460;
	peer_seg(TCP_ACK, 1001, nxt, 65535, NULL, 0, NULL, 0);

	/* a ring with room for two frames (a context descriptor, the header, the pieces: the
	 * first frame's bytes in one chunk, the second's across two): the third is refused */
	fake_netdev_clear(&fnd);
	struct netdev_stats d0 = fnd.dev.stats;
	struct net_stats n0 = *net_stats();
	struct tcp_stats t0 = *tcp_stats();
	tcp_get_info(s, &i);
	uint64_t s0 = i.segs_out;
	fnd.tx_ring = 7;
	cr_assert_eq(tcp_send_copy(s, pat, 4 * 1460 + 7), 4 * 1460 + 7);
	tcp_flush(s);
	cr_assert_eq(fnd.ntx, 2);
	cr_assert_eq(fnd.tx_refused, 1);
	tcp_get_info(s, &i);
	cr_assert_eq(i.snd_nxt, nxt + 2 * 1460, "SND.NXT after the frames taken");
	cr_assert_eq(fake_netdev_tx_complete(&fnd), 2); /* (room again: the device wakes) */
	fnd.tx_ring = 0;
	cr_assert_gt(poll_pass(), 0);
	cr_assert_eq(fnd.ntx, 5);
	for (unsigned k = 0; k < 2; k++) {
		cr_assert_eq(txseg(k)->seq, nxt + k * 1460);
		cr_assert_eq(txseg(k)->flags, TCP_ACK);
		cr_assert_eq(memcmp(txseg(k)->payload, pat + k * 1460, 1460), 0);
	}
	check_pass(2, 3, nxt + 2 * 1460, 2 * 1460, 7); /* (the refused frame took an identification) */
	/* the counters as every frame counted itself: 5 frames taken, 1 refused */
	cr_assert_eq(fnd.dev.stats.tx_frames - d0.tx_frames, 5);
	cr_assert_eq(fnd.dev.stats.tx_bytes_host - d0.tx_bytes_host, 5 * 54 + 4 * 1460 + 7);
	cr_assert_eq(fnd.dev.stats.tx_bytes_device - d0.tx_bytes_device, 0);
	cr_assert_eq(fnd.dev.stats.tx_csum_offload - d0.tx_csum_offload, 6, "the refused frame's too, as netdev_tx");
	cr_assert_eq(fnd.dev.stats.tx_errors - d0.tx_errors, 1);
	cr_assert_eq(net_stats()->ip_tx - n0.ip_tx, 6);
	cr_assert_eq(net_stats()->eth_tx - n0.eth_tx, 5);
	cr_assert_eq(tcp_stats()->segs_out - t0.segs_out, 5);
	cr_assert_eq(tcp_stats()->tx_payload_host - t0.tx_payload_host, 4 * 1460 + 7);
	cr_assert_eq(tcp_stats()->tx_payload_device - t0.tx_payload_device, 0);
	cr_assert_eq(tcp_stats()->tx_refused - t0.tx_refused, 1);
	tcp_get_info(s, &i);
	cr_assert_eq(i.segs_out - s0, 5);
	nxt += 4 * 1460 + 7;
	peer_seg(TCP_ACK, 1001, nxt, 65535, NULL, 0, NULL, 0);

	/* queued without a flush: the full segments go, the short tail is held for the flush */
	fake_netdev_clear(&fnd);
	cr_assert_eq(tcp_send_copy(s, pat, 3 * 1460 + 30), 3 * 1460 + 30);
	cr_assert_eq(fnd.ntx, 3);
	cr_assert_eq(txseg(2)->flags, TCP_ACK);
	tcp_flush(s);
	cr_assert_eq(fnd.ntx, 4);
	check_pass(0, 4, nxt, 0, 30);
	nxt += 3 * 1460 + 30;
	peer_seg(TCP_ACK, 1001, nxt, 65535, NULL, 0, NULL, 0);

	/* shut down with data queued: the last frame carries the FIN */
	fake_netdev_clear(&fnd);
	peer_seg(TCP_ACK, 1001, nxt, 0, NULL, 0, NULL, 0); /* (closed: the data queues) */
	cr_assert_eq(tcp_send_copy(s, pat, 2 * 1460 + 40), 2 * 1460 + 40);
	cr_assert_eq(tcp_shutdown_send(s), 0);
	cr_assert_eq(fnd.ntx, 0);
	peer_seg(TCP_ACK, 1001, nxt, 65535, NULL, 0, NULL, 0);
	cr_assert_eq(fnd.ntx, 3);
	cr_assert_eq(txseg(1)->flags, TCP_ACK);
	cr_assert_eq(txseg(2)->seq, nxt + 2 * 1460);
	cr_assert_eq(txseg(2)->len, 40);
	cr_assert_eq(txseg(2)->flags, TCP_ACK | TCP_PSH | TCP_FIN);
	tcp_get_info(s, &i);
	cr_assert_eq(i.snd_nxt, nxt + 2 * 1460 + 40 + 1);
	tcp_abort(s);
	close_listener(l);
}

/* A pass's first frame goes as a run too (tcp_output_run): as the loop's frame did, it
 * carries the ACK owed for the peer's data and clears it (no ACK of its own follows), arms
 * the retransmission timer, and when the device refuses it the ACK stays owed (delayed)
 * and the data goes at the turn, in order. */
Test(tcp_route_offload, a_pass_first_frame_as_a_run_carries_the_ack)
{
	static const uint8_t data[100] = { 9, 8, 7 };
	struct tcp_sock *l;
	uint32_t iss = open_passive(&l, 1000, 65535, opt_mss1460, sizeof(opt_mss1460));
	struct tcp_sock *s = accepted;
	uint32_t nxt = iss + 1;

	/* the peer's request, our answer (a short segment, then three) */
	peer_seg(TCP_ACK | TCP_PSH, 1001, nxt, 65535, data, sizeof(data), NULL, 0);
	unsigned n0 = fnd.ntx;
	cr_assert_eq(tcp_send_copy(s, pat, 30), 30);
	tcp_flush(s);
	cr_assert_eq(fnd.ntx, n0 + 1);
	cr_assert_eq(lastseg()->seq, nxt);
	cr_assert_eq(lastseg()->ack, 1001 + 100, "the answer carries the ACK");
	cr_assert_eq(lastseg()->flags, TCP_ACK | TCP_PSH);
	cr_assert(s->t_rexmit.armed);
	cr_assert(!s->ack_now && !s->ack_delayed && !s->ack_pass_end && !s->ack_held && s->segs_unacked == 0);
	advance(TCP_DELACK_NS);
	poll_pass();
	cr_assert_eq(fnd.ntx, n0 + 1, "no ACK of its own");
	nxt += 30;
	peer_seg(TCP_ACK, 1101, nxt, 65535, NULL, 0, NULL, 0);
	cr_assert(!s->t_rexmit.armed);

	/* the answer refused: the ACK is owed (delayed ACK), the data goes at the turn */
	peer_seg(TCP_ACK | TCP_PSH, 1101, nxt, 65535, data, sizeof(data), NULL, 0);
	fake_netdev_clear(&fnd);
	fnd.tx_refuse = 1;
	cr_assert_eq(tcp_send_copy(s, pat, 3 * 1460), 3 * 1460);
	tcp_flush(s);
	cr_assert_eq(fnd.ntx, 0);
	cr_assert(s->ack_delayed, "the ACK the refused frame carried is owed");
	cr_assert(s->t_delack.armed);
	cr_assert_eq(s->snd_nxt, nxt);
	netdev_tx_wake(&fnd.dev);
	cr_assert_gt(poll_pass(), 0);
	cr_assert_eq(fnd.ntx, 3);
	for (unsigned k = 0; k < 3; k++) {
		cr_assert_eq(txseg(k)->seq, nxt + k * 1460);
		cr_assert_eq(txseg(k)->ack, 1201);
		cr_assert_eq(txseg(k)->flags, k == 2 ? TCP_ACK | TCP_PSH : TCP_ACK);
		cr_assert_eq(memcmp(txseg(k)->payload, pat + k * 1460, 1460), 0);
	}
	cr_assert(!s->ack_delayed);
	nxt += 3 * 1460;
	peer_seg(TCP_ACK, 1201, nxt, 65535, NULL, 0, NULL, 0);
	tcp_abort(s);
	close_listener(l);
}
