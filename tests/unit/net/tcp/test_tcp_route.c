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
