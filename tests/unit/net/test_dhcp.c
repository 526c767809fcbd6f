// sources: drivers/nic/netdev.c net/net.c lib/ipv4_text.c net/arp.c net/ipv4.c net/udp.c net/dhcp.c net/tcp/tcp.c net/tcp/tcp_in.c net/tcp/tcp_admit.c net/tcp/tcp_pools.c net/tcp/tcp_isn.c tests/unit/net/fake_entropy.c net/tcp/tcp_hdr.c net/tcp/tcp_out.c net/tcp/tcp_budget.c net/tcp/tcp_sack.c net/tcp/tcp_service.c mm/pool.c mm/dma.c lib/timer.c lib/log.c tests/unit/net/fake_netdev.c
/*
 * DHCP client (net/dhcp.c) against a scripted server on the fake netdev with the fake
 * clock: the DISCOVER/OFFER/REQUEST/ACK exchange and what goes on the wire (0.0.0.0 ->
 * 255.255.255.255, BROADCAST flag, xid, chaddr, options 50/54), replies of other
 * transactions ignored, lost offers retransmitted with backoff and jitter, NAK, renewal
 * unicast at T1, rebinding broadcast at T2, expiry, the static fallback, the MTU option,
 * the leased router and MTU used on the wire (next hop off the subnet, the SYN's MSS),
 * and the parser's length checks.
 */
#include "lib/byteorder.h"
#include "net/dhcp.h"
#include "tests/unit/net/net_test.h"

#define SERVER 0x0a000202u   /* 10.0.2.2 */
#define SERVER2 0x0a000203u  /* 10.0.2.3 */
#define LEASED 0x0a00020fu   /* 10.0.2.15 */
#define STATIC_ADDR 0x0a0a000au

static struct dhcp_client cl;

/* The stack as the other net/ tests have it; dhcp_start() then drops its static address. */
static void dhcp_setup(void)
{
	net_test_start(NETDEV_F_RX_SPLIT);
}

static void dhcp_teardown(void)
{
	dhcp_stop(&cl);
	net_teardown();
}

TestSuite(dhcp, .init = dhcp_setup, .fini = dhcp_teardown);

static void start(uint64_t timeout_s)
{
	struct dhcp_params p;
	memset(&p, 0, sizeof(p));
	net_config_default(&p.fallback);
	p.timeout_ns = timeout_s * NSEC_PER_SEC;
	cr_assert_eq(dhcp_start(&cl, &p), 0);
}

/* A captured client message. */
struct sent {
	uint32_t src, dst;
	uint16_t sport, dport;
	struct dhcp_msg m;
	uint32_t requested_ip;  /* option 50, 0 when absent */
	const uint8_t *raw;
	size_t len;
};

/* Answer the ARP requests among the captured frames (the server's MAC), then return the
 * DHCP messages sent, in order. */
static unsigned sent_msgs(struct sent *out, unsigned max)
{
	unsigned n = 0;
	for (unsigned i = 0; i < fnd.ntx; i++) {
		const uint8_t *f = fnd.tx[i].b;
		if (f[12] == 0x08 && f[13] == 0x06 && f[21] == 1) {
			uint8_t arp[64];
			size_t k = fake_build_arp(arp, 2, fake_peer_mac, be32_load(f + 38), fake_our_mac, be32_load(f + 28),
						  fake_our_mac);
			cr_assert_eq(fake_netdev_inject(&fnd, arp, k), 0);
			continue;
		}
		if (f[12] != 0x08 || f[13] != 0x00 || f[23] != 17 || n == max)
			continue;
		struct sent *s = &out[n++];
		memset(s, 0, sizeof(*s));
		s->src = be32_load(f + 26);
		s->dst = be32_load(f + 30);
		s->sport = (uint16_t)(f[34] << 8 | f[35]);
		s->dport = (uint16_t)(f[36] << 8 | f[37]);
		s->raw = f + 42;
		s->len = fnd.tx[i].len - 42;
		cr_assert_eq(dhcp_parse(s->raw, s->len, &s->m), 0, "our own message parses");
		for (size_t o = 240; o + 1 < s->len && s->raw[o] != 255; o += 2 + s->raw[o + 1])
			if (s->raw[o] == 50 && s->raw[o + 1] == 4)
				s->requested_ip = be32_load(s->raw + o + 2);
	}
	return n;
}

/* The one DHCP message sent since the last clear (ARP answered on the way). */
static struct sent one_sent(void)
{
	struct sent s[4];
	unsigned n = sent_msgs(s, 4);
	if (n == 0 && fnd.ntx) {
		/* the message waited for the ARP reply just injected */
		unsigned had = fnd.ntx;
		n = sent_msgs(s, 4);
		cr_assert_gt(fnd.ntx, had - 1);
	}
	cr_assert_eq(n, 1, "one DHCP message, got %u", n);
	fake_netdev_clear(&fnd);
	return s[0];
}

struct reply {
	uint8_t type;
	uint32_t xid, yiaddr, server;
	bool wrong_mac, no_lease;
	uint32_t lease, t1, t2, mask, router, dns;
	uint16_t mtu;
};

static uint8_t *opt32(uint8_t *o, uint8_t code, uint32_t v)
{
	o[0] = code;
	o[1] = 4;
	be32_store(o + 2, v);
	return o + 6;
}

/* The server's reply, broadcast to 255.255.255.255. */
static void server_says(const struct reply *r)
{
	uint8_t msg[548], *o;
	memset(msg, 0, sizeof(msg));
	msg[0] = 2;
	msg[1] = 1;
	msg[2] = 6;
	be32_store(msg + 4, r->xid);
	be32_store(msg + 16, r->yiaddr);
	be32_store(msg + 20, r->server);
	memcpy(msg + 28, fake_our_mac, 6);
	if (r->wrong_mac)
		msg[33] ^= 1;
	be32_store(msg + 236, DHCP_MAGIC);
	o = msg + 240;
	*o++ = 53;
	*o++ = 1;
	*o++ = r->type;
	o = opt32(o, 54, r->server);
	if (r->type != DHCPNAK) {
		o = opt32(o, 1, r->mask ? r->mask : 0xffffff00u);
		o = opt32(o, 3, r->router ? r->router : SERVER);
		o = opt32(o, 6, r->dns ? r->dns : 0x0a000203u);
		if (!r->no_lease)
			o = opt32(o, 51, r->lease ? r->lease : 86400);
		if (r->t1)
			o = opt32(o, 58, r->t1);
		if (r->t2)
			o = opt32(o, 59, r->t2);
		if (r->mtu) {
			*o++ = 26;
			*o++ = 2;
			*o++ = (uint8_t)(r->mtu >> 8);
			*o++ = (uint8_t)r->mtu;
		}
	}
	*o++ = 255;
	size_t n = fake_build_udp(frame, r->server, 0xffffffffu, 67, 68, msg, sizeof(msg));
	cr_assert_eq(fake_netdev_inject(&fnd, frame, n), 0);
}

/* DISCOVER -> OFFER of LEASED by SERVER; returns the REQUEST that follows. */
static struct sent offer_taken(void)
{
	struct sent d = one_sent();
	cr_assert_eq(d.m.msg_type, DHCPDISCOVER);
	server_says(&(struct reply){ .type = DHCPOFFER, .xid = d.m.xid, .yiaddr = LEASED, .server = SERVER });
	struct sent r = one_sent();
	cr_assert_eq(r.m.msg_type, DHCPREQUEST);
	return r;
}

/* DISCOVER -> OFFER -> REQUEST -> ACK with lease seconds. Returns the REQUEST's xid. */
static uint32_t get_lease(uint32_t lease, uint32_t t1, uint32_t t2)
{
	struct sent r = offer_taken();
	server_says(&(struct reply){ .type = DHCPACK, .xid = r.m.xid, .yiaddr = LEASED, .server = SERVER,
				     .lease = lease, .t1 = t1, .t2 = t2 });
	cr_assert_eq(cl.state, DHCP_BOUND);
	return r.m.xid;
}

Test(dhcp, discover_offer_request_ack_on_the_wire)
{
	struct net_config nc;
	start(0);
	net_config_get(&nc);
	cr_assert_eq(nc.addr, 0, "no address until bound");
	cr_assert_eq(fnd.ntx, 1);
	cr_assert_eq(memcmp(fnd.tx[0].b, "\xff\xff\xff\xff\xff\xff", 6), 0, "Ethernet broadcast");
	struct sent d = one_sent();
	cr_assert_eq(cl.state, DHCP_SELECTING);
	cr_assert_eq(d.m.msg_type, DHCPDISCOVER);
	cr_assert_eq(d.src, 0, "from 0.0.0.0");
	cr_assert_eq(d.dst, 0xffffffffu, "to 255.255.255.255");
	cr_assert_eq(d.sport, 68);
	cr_assert_eq(d.dport, 67);
	cr_assert_eq(d.m.op, DHCP_BOOTREQUEST);
	cr_assert_eq(d.m.flags, 0x8000, "BROADCAST flag: answer before we have an address");
	cr_assert_eq(memcmp(d.m.chaddr, fake_our_mac, 6), 0);
	cr_assert_geq(d.len, 300, "BOOTP minimum");

	server_says(&(struct reply){ .type = DHCPOFFER, .xid = d.m.xid, .yiaddr = LEASED, .server = SERVER });
	struct sent r = one_sent();
	cr_assert_eq(cl.state, DHCP_REQUESTING);
	cr_assert_eq(r.m.msg_type, DHCPREQUEST);
	cr_assert_eq(r.m.xid, d.m.xid, "same transaction");
	cr_assert_eq(r.requested_ip, LEASED, "option 50");
	cr_assert_eq(r.m.server_id, SERVER, "option 54");
	cr_assert_eq(r.m.ciaddr, 0);
	cr_assert_eq(r.dst, 0xffffffffu);

	server_says(&(struct reply){ .type = DHCPACK, .xid = r.m.xid, .yiaddr = LEASED, .server = SERVER,
				     .lease = 3600, .dns = 0x08080808u });
	cr_assert_eq(cl.state, DHCP_BOUND);
	net_config_get(&nc);
	cr_assert_eq(nc.addr, LEASED);
	cr_assert_eq(nc.netmask, 0xffffff00u);
	cr_assert_eq(nc.gateway, SERVER);
	cr_assert_eq(cl.lease.t1_s, 1800, "T1 defaults to half the lease");
	cr_assert_eq(cl.lease.t2_s, 3150, "T2 defaults to 7/8");
	cr_assert_eq(cl.lease.ndns, 1);
	cr_assert_eq(cl.lease.dns[0], 0x08080808u);
	cr_assert_eq(cl.st.acks, 1);
	dhcp_show();
}

Test(dhcp, replies_of_other_transactions_are_ignored)
{
	start(0);
	struct sent d = one_sent();
	server_says(&(struct reply){ .type = DHCPOFFER, .xid = d.m.xid + 1, .yiaddr = LEASED, .server = SERVER });
	server_says(&(struct reply){ .type = DHCPOFFER, .xid = d.m.xid, .yiaddr = LEASED, .server = SERVER,
				     .wrong_mac = true });
	server_says(&(struct reply){ .type = DHCPACK, .xid = d.m.xid, .yiaddr = LEASED, .server = SERVER });
	cr_assert_eq(cl.state, DHCP_SELECTING);
	cr_assert_eq(cl.st.rx_ignored, 3);
	cr_assert_eq(fnd.ntx, 0, "nothing answered");
	/* in REQUESTING, only the chosen server's answer counts */
	server_says(&(struct reply){ .type = DHCPOFFER, .xid = d.m.xid, .yiaddr = LEASED, .server = SERVER });
	struct sent r = one_sent();
	server_says(&(struct reply){ .type = DHCPACK, .xid = r.m.xid, .yiaddr = LEASED, .server = SERVER2 });
	server_says(&(struct reply){ .type = DHCPNAK, .xid = r.m.xid, .server = SERVER2 });
	cr_assert_eq(cl.state, DHCP_REQUESTING);
	/* an ACK without a lease time is unusable */
	server_says(&(struct reply){ .type = DHCPACK, .xid = r.m.xid, .yiaddr = LEASED, .server = SERVER,
				     .no_lease = true });
	cr_assert_neq(cl.state, DHCP_BOUND);
}

Test(dhcp, lost_offers_are_retransmitted_with_backoff_and_jitter)
{
	start(0);
	struct sent d = one_sent();
	uint64_t t0 = clock_now_ns(), last = t0;
	const uint64_t expect_s[] = { 4, 8, 16, 32, 64, 64 };
	for (unsigned i = 0; i < 6; i++) {
		while (fnd.ntx == 0)
			advance(100 * NSEC_PER_MSEC);
		uint64_t gap = clock_now_ns() - last;
		last = clock_now_ns();
		cr_assert_geq(gap, (expect_s[i] - 1) * NSEC_PER_SEC - 100 * NSEC_PER_MSEC, "try %u after %llu ms", i,
			      (unsigned long long)(gap / NSEC_PER_MSEC));
		cr_assert_leq(gap, (expect_s[i] + 1) * NSEC_PER_SEC + 100 * NSEC_PER_MSEC, "try %u", i);
		struct sent s = one_sent();
		cr_assert_eq(s.m.msg_type, DHCPDISCOVER);
		cr_assert_eq(s.m.xid, d.m.xid, "a retransmission keeps its xid");
		cr_assert_geq(s.m.secs, (last - t0) / NSEC_PER_SEC - 1, "secs counts from the first DISCOVER");
	}
	cr_assert_eq(cl.st.retransmits, 6);
	/* an offer after the losses is still taken */
	server_says(&(struct reply){ .type = DHCPOFFER, .xid = d.m.xid, .yiaddr = LEASED, .server = SERVER });
	cr_assert_eq(cl.state, DHCP_REQUESTING);
	fake_netdev_clear(&fnd);
}

Test(dhcp, nak_restarts_discovery_with_a_new_xid)
{
	start(0);
	struct sent r = offer_taken();
	uint32_t xid = r.m.xid;
	server_says(&(struct reply){ .type = DHCPNAK, .xid = r.m.xid, .server = SERVER });
	cr_assert_eq(cl.state, DHCP_INIT);
	cr_assert_eq(cl.st.naks, 1);
	advance(1 * NSEC_PER_SEC);
	cr_assert_eq(fnd.ntx, 0, "a pause after a NAK");
	advance(1 * NSEC_PER_SEC);
	struct sent d2 = one_sent();
	cr_assert_eq(d2.m.msg_type, DHCPDISCOVER);
	cr_assert_neq(d2.m.xid, xid);
	cr_assert_eq(cl.state, DHCP_SELECTING);
}

Test(dhcp, request_unanswered_goes_back_to_init)
{
	start(0);
	offer_taken();
	unsigned requests = 1;
	for (unsigned i = 0; i < 200 && cl.state == DHCP_REQUESTING; i++) {
		advance(1 * NSEC_PER_SEC);
		struct sent s[4];
		unsigned n = sent_msgs(s, 4);
		for (unsigned k = 0; k < n; k++)
			requests += s[k].m.msg_type == DHCPREQUEST;
		fake_netdev_clear(&fnd);
	}
	cr_assert_eq(requests, 4, "4 REQUESTs, then a new DISCOVER");
	cr_assert_eq(cl.state, DHCP_SELECTING);
}

Test(dhcp, renewal_at_t1_is_unicast_to_the_server)
{
	start(0);
	get_lease(100, 0, 0);
	advance(49 * NSEC_PER_SEC);
	cr_assert_eq(fnd.ntx, 0, "nothing before T1");
	advance(1 * NSEC_PER_SEC + 20 * NSEC_PER_MSEC);
	struct sent r = one_sent();
	cr_assert_eq(cl.state, DHCP_RENEWING);
	cr_assert_eq(r.m.msg_type, DHCPREQUEST);
	cr_assert_eq(r.dst, SERVER, "unicast to the leasing server");
	cr_assert_eq(r.src, LEASED);
	cr_assert_eq(r.m.ciaddr, LEASED, "ciaddr filled");
	cr_assert_eq(r.m.flags, 0, "no BROADCAST flag once bound");
	cr_assert_eq(r.requested_ip, 0, "no option 50 when renewing");
	cr_assert_eq(r.m.has_server_id, false, "no option 54 when renewing");
	advance(10 * NSEC_PER_SEC);
	server_says(&(struct reply){ .type = DHCPACK, .xid = r.m.xid, .yiaddr = LEASED, .server = SERVER, .lease = 100 });
	cr_assert_eq(cl.state, DHCP_BOUND);
	cr_assert_eq(cl.st.renewals, 1);
	/* the new lease counts from the REQUEST: T1 again 50 s after it */
	advance(39 * NSEC_PER_SEC);
	cr_assert_eq(fnd.ntx, 0);
	advance(2 * NSEC_PER_SEC);
	cr_assert_eq(cl.state, DHCP_RENEWING);
	fake_netdev_clear(&fnd);
}

Test(dhcp, rebinding_at_t2_is_broadcast_and_any_server_may_answer)
{
	start(0);
	get_lease(100, 50, 80);
	advance(50 * NSEC_PER_SEC + 20 * NSEC_PER_MSEC);
	one_sent();  /* renewal, unanswered */
	advance(29 * NSEC_PER_SEC);
	cr_assert_eq(cl.state, DHCP_RENEWING);
	cr_assert_eq(fnd.ntx, 0, "renewal retransmits no sooner than 60 s (or T2)");
	advance(1 * NSEC_PER_SEC);
	struct sent r = one_sent();
	cr_assert_eq(cl.state, DHCP_REBINDING);
	cr_assert_eq(r.dst, 0xffffffffu, "broadcast");
	cr_assert_eq(r.m.ciaddr, LEASED);
	cr_assert_eq(cl.st.rebinds, 1);
	server_says(&(struct reply){ .type = DHCPACK, .xid = r.m.xid, .yiaddr = LEASED, .server = SERVER2, .lease = 100 });
	cr_assert_eq(cl.state, DHCP_BOUND);
	cr_assert_eq(cl.lease.server_id, SERVER2, "the new server renews from now on");
}

Test(dhcp, expiry_drops_the_address_and_discovers_again)
{
	struct net_config nc;
	start(0);
	get_lease(100, 0, 0);
	advance(100 * NSEC_PER_SEC + 20 * NSEC_PER_MSEC);
	cr_assert_eq(cl.st.expiries, 1);
	net_config_get(&nc);
	cr_assert_eq(nc.addr, 0, "the address is gone with the lease");
	cr_assert_eq(cl.state, DHCP_SELECTING);
	struct sent s[8];
	unsigned n = sent_msgs(s, 8);
	cr_assert_geq(n, 2);
	cr_assert_eq(s[n - 1].m.msg_type, DHCPDISCOVER);
	cr_assert_eq(s[n - 1].src, 0);
	fake_netdev_clear(&fnd);
}

Test(dhcp, nak_while_renewing_drops_the_address)
{
	struct net_config nc;
	start(0);
	get_lease(100, 0, 0);
	advance(50 * NSEC_PER_SEC + 20 * NSEC_PER_MSEC);
	struct sent r = one_sent();
	server_says(&(struct reply){ .type = DHCPNAK, .xid = r.m.xid, .server = SERVER });
	net_config_get(&nc);
	cr_assert_eq(nc.addr, 0);
	cr_assert_eq(cl.state, DHCP_INIT);
}

Test(dhcp, no_server_falls_back_to_the_static_settings)
{
	struct net_config nc;
	start(10);
	one_sent();
	advance(9 * NSEC_PER_SEC);
	net_config_get(&nc);
	cr_assert_eq(nc.addr, 0);
	fake_netdev_clear(&fnd);
	advance(1 * NSEC_PER_SEC + 20 * NSEC_PER_MSEC);
	cr_assert_eq(cl.state, DHCP_FALLBACK);
	net_config_get(&nc);
	cr_assert_eq(nc.addr, STATIC_ADDR);
	cr_assert_eq(cl.st.fallbacks, 1);
	fake_netdev_clear(&fnd);
	advance(200 * NSEC_PER_SEC);
	cr_assert_eq(fnd.ntx, 0, "DHCP is silent after the fallback");
	/* a late offer does not move the address */
	server_says(&(struct reply){ .type = DHCPOFFER, .xid = cl.xid, .yiaddr = LEASED, .server = SERVER });
	cr_assert_eq(fnd.ntx, 0);
	cr_assert_eq(cl.state, DHCP_FALLBACK);
}

Test(dhcp, a_lease_before_the_timeout_cancels_the_fallback)
{
	struct net_config nc;
	start(10);
	get_lease(86400, 0, 0);
	advance(20 * NSEC_PER_SEC);
	net_config_get(&nc);
	cr_assert_eq(nc.addr, LEASED);
	cr_assert_eq(cl.st.fallbacks, 0);
}

Test(dhcp, mtu_option_within_the_nic_range)
{
	struct net_config nc;
	start(0);
	struct sent r = offer_taken();
	server_says(&(struct reply){ .type = DHCPACK, .xid = r.m.xid, .yiaddr = LEASED, .server = SERVER, .mtu = 9000 });
	net_config_get(&nc);
	cr_assert_eq(nc.mtu, 9000);
	cr_assert_eq(cl.lease.mtu, 9000);
	/* below the NIC's minimum: not applied */
	advance(43200 * NSEC_PER_SEC + 20 * NSEC_PER_MSEC);
	r = one_sent();
	server_says(&(struct reply){ .type = DHCPACK, .xid = r.m.xid, .yiaddr = LEASED, .server = SERVER, .mtu = 576 });
	net_config_get(&nc);
	cr_assert_eq(nc.mtu, 9000, "576 is below what the NIC supports");
	cr_assert_eq(cl.lease.mtu, 0);
}

Test(dhcp, router_off_the_subnet_is_ignored)
{
	struct net_config nc;
	start(0);
	struct sent r = offer_taken();
	server_says(&(struct reply){ .type = DHCPACK, .xid = r.m.xid, .yiaddr = LEASED, .server = SERVER,
				     .router = 0xc0a80101u });
	cr_assert_eq(cl.state, DHCP_BOUND);
	net_config_get(&nc);
	cr_assert_eq(nc.gateway, 0);
}

static void no_tcp_event(struct tcp_sock *s, void *ctx, unsigned events)
{
	(void)s;
	(void)ctx;
	(void)events;
}

/* The ARP request among the captured frames: the address it asks for, 0 if none. */
static uint32_t arp_asked(void)
{
	for (unsigned i = 0; i < fnd.ntx; i++) {
		const uint8_t *f = fnd.tx[i].b;
		if (f[12] == 0x08 && f[13] == 0x06 && f[21] == 1)
			return be32_load(f + 38);
	}
	return 0;
}

/* Where the lease's router and MTU matter: traffic off the subnet goes to the router's MAC,
 * traffic on it straight to its destination, and a connection's SYN announces the MSS of
 * the leased MTU (9000 - 40), not of the NIC's 1500. */
Test(dhcp, leased_router_and_mtu_are_used_on_the_wire)
{
	const uint32_t router = 0x0a000201u, far = 0x08080808u, near = 0x0a000207u;
	static const struct tcp_ops ops = { no_tcp_event };
	struct udp_sock *u;
	struct tcp_sock *t;
	struct fake_parsed_tcp syn;
	start(0);
	struct sent r = offer_taken();
	server_says(&(struct reply){ .type = DHCPACK, .xid = r.m.xid, .yiaddr = LEASED, .server = SERVER,
				     .router = router, .mtu = 9000 });
	cr_assert_eq(cl.state, DHCP_BOUND);
	cr_assert_eq(fnd.dev.mtu, 9000, "option 26 set on the NIC");
	fake_netdev_clear(&fnd);

	cr_assert_eq(udp_bind(4000, NULL, NULL, &u), 0);
	cr_assert_eq(udp_sendto(u, near, 9, "x", 1), 0);
	cr_assert_eq(arp_asked(), near, "on the leased subnet: no router");
	fake_netdev_clear(&fnd);
	size_t n = fake_build_arp(frame, 2, fake_peer_mac, near, fake_our_mac, LEASED, fake_our_mac);
	cr_assert_eq(fake_netdev_inject(&fnd, frame, n), 0);
	cr_assert_eq(fnd.ntx, 1, "the datagram that waited for the neighbour's MAC");
	fake_netdev_clear(&fnd);

	cr_assert_eq(tcp_connect(far, 4420, &ops, NULL, &t), 0);
	cr_assert_eq(arp_asked(), router, "off the subnet: the leased router is the next hop");
	fake_netdev_clear(&fnd);
	n = fake_build_arp(frame, 2, fake_peer_mac, router, fake_our_mac, LEASED, fake_our_mac);
	cr_assert_eq(fake_netdev_inject(&fnd, frame, n), 0);
	cr_assert_eq(fnd.ntx, 1, "the SYN that waited for the router's MAC");
	cr_assert(fake_parse_tcp(&fnd.tx[0], &syn));
	cr_assert_eq(memcmp(fnd.tx[0].b, fake_peer_mac, 6), 0, "sent to the router's MAC");
	cr_assert_eq(syn.dst, far);
	cr_assert_eq(syn.mss, 9000 - 40, "MSS of the leased MTU");
	tcp_abort(t);
	udp_close(u);
	fake_netdev_clear(&fnd);
}

/* --- parser ------------------------------------------------------------------------- */

static size_t base_msg(uint8_t *m)
{
	memset(m, 0, 300);
	m[0] = 2;
	be32_store(m + 236, DHCP_MAGIC);
	return 240;
}

Test(dhcp_parse, lengths_are_checked)
{
	uint8_t m[600];
	struct dhcp_msg out;
	size_t n = base_msg(m);
	cr_assert_eq(dhcp_parse(m, 239, &out), -EINVAL, "short");
	cr_assert_eq(dhcp_parse(m, n, &out), 0, "no options at all");
	m[236] = 0;
	cr_assert_eq(dhcp_parse(m, n, &out), -EINVAL, "bad cookie");
	n = base_msg(m);
	m[n] = 51;
	m[n + 1] = 4;
	cr_assert_eq(dhcp_parse(m, n + 5, &out), -EINVAL, "value past the end");
	cr_assert_eq(dhcp_parse(m, n + 1, &out), -EINVAL, "no length byte");
	cr_assert_eq(dhcp_parse(m, n + 6, &out), 0);
	cr_assert(out.has_lease);
	m[n + 1] = 3;
	m[n + 5] = 255;
	cr_assert_eq(dhcp_parse(m, n + 6, &out), -EINVAL, "lease of 3 bytes");
	n = base_msg(m);
	const uint8_t bad[][3] = { { 1, 3, 0 }, { 3, 5, 0 }, { 6, 0, 0 }, { 26, 1, 0 }, { 53, 2, 0 }, { 54, 8, 0 },
				   { 52, 1, 9 } };
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(m + n, 0, 20);
		memcpy(m + n, bad[i], 3);
		cr_assert_eq(dhcp_parse(m, n + 20, &out), -EINVAL, "option %u length %u", bad[i][0], bad[i][1]);
	}
}

Test(dhcp_parse, dns_list_router_list_and_first_value_wins)
{
	uint8_t m[600];
	struct dhcp_msg out;
	size_t n = base_msg(m);
	uint8_t opts[] = { 6, 16, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 3, 8, 10, 0, 0, 1, 10, 0, 0, 9,
			   53, 1, 2, 53, 1, 5, 0, 0, 255 };
	memcpy(m + n, opts, sizeof(opts));
	cr_assert_eq(dhcp_parse(m, n + sizeof(opts), &out), 0);
	cr_assert_eq(out.ndns, 3, "the first three DNS servers");
	cr_assert_eq(out.dns[2], 0x03030303u);
	cr_assert_eq(out.router, 0x0a000001u, "the first router");
	cr_assert_eq(out.msg_type, DHCPOFFER, "a repeated option keeps its first value");
}

Test(dhcp_parse, overloaded_file_and_sname_carry_options)
{
	uint8_t m[600];
	struct dhcp_msg out;
	size_t n = base_msg(m);
	m[n] = 52;
	m[n + 1] = 1;
	m[n + 2] = 3;
	m[n + 3] = 255;
	/* file (offset 108) carries the message type, sname (44) the server id */
	memcpy(m + 108, (const uint8_t[]){ 53, 1, 5, 255 }, 4);
	memcpy(m + 44, (const uint8_t[]){ 54, 4, 10, 0, 2, 2, 255 }, 7);
	cr_assert_eq(dhcp_parse(m, n + 4, &out), 0);
	cr_assert_eq(out.msg_type, DHCPACK);
	cr_assert_eq(out.server_id, SERVER);
	/* an option running past the end of sname is refused */
	memcpy(m + 44 + 60, (const uint8_t[]){ 51, 8 }, 2);
	memset(m + 44, 0, 7);
	cr_assert_eq(dhcp_parse(m, n + 4, &out), -EINVAL);
}
