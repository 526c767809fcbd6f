// sources: drivers/nic/netdev.c net/net.c lib/ipv4_text.c net/arp.c net/ipv4.c net/udp.c net/tcp/tcp.c net/tcp/tcp_in.c net/tcp/tcp_isn.c net/tcp/tcp_pools.c net/tcp/tcp_admit.c tests/unit/net/fake_entropy.c net/tcp/tcp_hdr.c net/tcp/tcp_out.c net/tcp/tcp_budget.c net/tcp/tcp_sack.c net/tcp/tcp_service.c mm/pool.c mm/dma.c lib/timer.c lib/log.c tests/unit/net/fake_netdev.c
/*
 * ARP: replies to requests for us, learning, resolution with a pending queue (bounded),
 * retries and failure, expiry, malformed packets.
 */
#include "tests/unit/net/net_test.h"

TestSuite(arp, .init = net_setup, .fini = net_teardown);

static const uint8_t bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
static const uint8_t zero[6];

Test(arp, replies_to_request_and_learns)
{
	uint8_t mac[6];
	size_t n = fake_build_arp(frame, 1, (const uint8_t[6]){ 2, 0, 0, 0, 0, 2 }, 0x0a0a0002, zero, US, bcast);
	cr_assert_eq(fake_netdev_inject(&fnd, frame, n), 0);
	cr_assert_eq(fnd.ntx, 1);
	const uint8_t *r = fnd.tx[0].b;
	cr_assert_eq(fnd.tx[0].len, 60);
	cr_assert_eq(memcmp(r, (const uint8_t[6]){ 2, 0, 0, 0, 0, 2 }, 6), 0, "unicast to the asker");
	cr_assert_eq(r[12], 0x08);
	cr_assert_eq(r[13], 0x06);
	cr_assert_eq(r[21], 2, "reply");
	cr_assert_eq(memcmp(r + 22, fake_our_mac, 6), 0);
	cr_assert(arp_lookup(0x0a0a0002, mac));
	cr_assert_eq(mac[5], 2);
}

Test(arp, ignores_requests_for_others_and_bad_packets)
{
	size_t n = fake_build_arp(frame, 1, (const uint8_t[6]){ 2, 0, 0, 0, 0, 3 }, 0x0a0a0003, zero, 0x0a0a0063, bcast);
	fake_netdev_inject(&fnd, frame, n);
	cr_assert_eq(fnd.ntx, 0);
	uint8_t mac[6];
	cr_assert(!arp_lookup(0x0a0a0003, mac), "not learnt from a request for someone else");
	frame[14 + 4] = 8; /* hlen */
	n = fake_build_arp(frame, 1, (const uint8_t[6]){ 2, 0, 0, 0, 0, 3 }, 0x0a0a0003, zero, US, bcast);
	frame[14 + 4] = 8;
	fake_netdev_inject(&fnd, frame, n);
	cr_assert_eq(fnd.ntx, 0);
	cr_assert_eq(net_stats()->arp_bad, 1);
	/* Truncated: 20 bytes of ARP. */
	n = fake_build_arp(frame, 1, (const uint8_t[6]){ 2, 0, 0, 0, 0, 3 }, 0x0a0a0003, zero, US, bcast);
	fake_netdev_inject(&fnd, frame, 14 + 20);
	cr_assert_eq(net_stats()->arp_bad, 2);
}

Test(arp, resolves_with_pending_queue_and_limit)
{
	/* Ping 10.10.0.5: unknown, so a request goes out and the echo waits. */
	for (int i = 0; i < 10; i++)
		icmp_send_echo(0x0a0a0005, 1, (uint16_t)i, 8);
	cr_assert_eq(fnd.ntx, 1, "one ARP request");
	cr_assert_eq(memcmp(fnd.tx[0].b, bcast, 6), 0);
	cr_assert_eq(fnd.tx[0].b[21], 1);
	cr_assert_eq(net_stats()->arp_queued, 8);
	cr_assert_eq(net_stats()->arp_queue_full, 2);
	fake_netdev_clear(&fnd);
	size_t n = fake_build_arp(frame, 2, (const uint8_t[6]){ 2, 0, 0, 0, 0, 5 }, 0x0a0a0005, fake_our_mac, US,
				  fake_our_mac);
	fake_netdev_inject(&fnd, frame, n);
	cr_assert_eq(fnd.ntx, 8, "the queue drains on the reply");
	for (int i = 0; i < 8; i++) {
		cr_assert_eq(fnd.tx[i].b[5], 5);
		cr_assert_eq(fnd.tx[i].b[23], 1, "ICMP");
	}
}

Test(arp, retries_then_fails_and_frees_queue)
{
	icmp_send_echo(0x0a0a0006, 1, 1, 8);
	cr_assert_eq(fnd.ntx, 1);
	advance(NSEC_PER_SEC);
	cr_assert_eq(fnd.ntx, 2, "retry after 1 s");
	advance(NSEC_PER_SEC);
	cr_assert_eq(fnd.ntx, 3);
	advance(NSEC_PER_SEC);
	cr_assert_eq(fnd.ntx, 3, "gave up after 3 requests");
	cr_assert_eq(net_stats()->arp_resolve_failed, 1);
}

Test(arp, entries_expire)
{
	uint8_t mac[6];
	cr_assert(arp_lookup(PEER, mac));
	advance(61 * NSEC_PER_SEC);
	cr_assert(!arp_lookup(PEER, mac));
	cr_assert_eq(net_stats()->arp_expired, 1);
}

Test(arp, off_subnet_goes_to_gateway_or_fails)
{
	cr_assert_eq(icmp_send_echo(0x08080808, 1, 1, 8), -ENETUNREACH);
	struct net_config c;
	net_config_default(&c);
	c.gateway = PEER;
	cr_assert_eq(net_configure(&c), 0);
	cr_assert_eq(icmp_send_echo(0x08080808, 1, 1, 8), 0);
	cr_assert_eq(fnd.ntx, 1);
	cr_assert_eq(memcmp(fnd.tx[0].b, fake_peer_mac, 6), 0, "to the gateway's MAC");
	cr_assert_eq(fnd.tx[0].b[33], 8, "IP destination unchanged");
}
