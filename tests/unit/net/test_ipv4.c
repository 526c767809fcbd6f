// sources: drivers/nic/netdev.c net/net.c lib/ipv4_text.c net/arp.c net/ipv4.c net/udp.c net/tcp/tcp.c net/tcp/tcp_in.c net/tcp/tcp_isn.c net/tcp/tcp_pools.c net/tcp/tcp_admit.c tests/unit/net/fake_entropy.c net/tcp/tcp_hdr.c net/tcp/tcp_out.c net/tcp/tcp_budget.c net/tcp/tcp_sack.c net/tcp/tcp_service.c mm/pool.c mm/dma.c lib/timer.c lib/log.c tests/unit/net/fake_netdev.c
/*
 * IPv4, ICMP echo and UDP: header checks, checksums, fragments dropped and counted,
 * echo replies from split frames (payload read through the counted accessor), UDP bind,
 * receive with device-memory fragments, copy and zero-copy send with offload.
 */
#include "tests/unit/net/net_test.h"

TestSuite(ipv4, .init = net_setup, .fini = net_teardown);

static size_t echo_request(uint8_t *out, size_t payload, uint16_t seq)
{
	uint8_t icmp[2048];
	icmp[0] = 8;
	icmp[1] = 0;
	icmp[2] = icmp[3] = 0;
	icmp[4] = 0x12;
	icmp[5] = 0x34;
	icmp[6] = (uint8_t)(seq >> 8);
	icmp[7] = (uint8_t)seq;
	for (size_t i = 0; i < payload; i++)
		icmp[8 + i] = (uint8_t)(i * 7);
	uint16_t c = (uint16_t)~fake_csum(icmp, 8 + payload, 0);
	icmp[2] = (uint8_t)(c >> 8);
	icmp[3] = (uint8_t)c;
	return fake_build_ipv4(out, PEER, US, 1, icmp, 8 + payload, 0);
}

Test(ipv4, echo_reply_small_and_split)
{
	size_t sizes[] = { 0, 56, 1000, 1472 };
	for (unsigned k = 0; k < 4; k++) {
		fake_netdev_clear(&fnd);
		size_t n = echo_request(frame, sizes[k], (uint16_t)k);
		cr_assert_eq(fake_netdev_inject(&fnd, frame, n), 0);
		cr_assert_eq(fnd.ntx, 1, "reply for %zu bytes", sizes[k]);
		const uint8_t *r = fnd.tx[0].b;
		cr_assert_eq(memcmp(r, fake_peer_mac, 6), 0);
		cr_assert_eq(fake_csum(r + 14, 20, 0), 0xffff, "IP header checksum");
		cr_assert_eq(r[34], 0, "echo reply");
		cr_assert_eq(fake_csum(r + 34, 8 + sizes[k], 0), 0xffff, "ICMP checksum");
		cr_assert_eq(memcmp(r + 34 + 4, frame + 34 + 4, 4 + sizes[k]), 0, "id, seq and data echoed");
		cr_assert_eq(r[30], 10);
		cr_assert_eq(r[33], 1, "to the peer");
	}
	cr_assert_eq(net_stats()->icmp_echo_replies_tx, 4);
	cr_assert_gt(dma_counters()->cpu_bytes[MEM_CLASS_DEVICE], 0, "ICMP data read from device memory is counted");
}

Test(ipv4, bad_headers_dropped)
{
	size_t n = echo_request(frame, 8, 1);
	frame[14 + 10] ^= 1; /* header checksum */
	fake_netdev_inject(&fnd, frame, n);
	cr_assert_eq(net_stats()->ip_bad_checksum, 1);
	n = echo_request(frame, 8, 1);
	frame[14] = 0x44; /* IHL 4 */
	fake_netdev_inject(&fnd, frame, n);
	n = echo_request(frame, 8, 1);
	frame[14 + 2] = 0x10; /* total length beyond the frame */
	fake_netdev_inject(&fnd, frame, n);
	n = echo_request(frame, 8, 1);
	frame[14] = 0x65; /* version 6 */
	fake_netdev_inject(&fnd, frame, n);
	cr_assert_eq(net_stats()->ip_bad_header, 3);
	n = echo_request(frame, 8, 1);
	frame[14 + 19] = 99; /* someone else */
	frame[14 + 10] = frame[14 + 11] = 0;
	uint16_t c = (uint16_t)~fake_csum(frame + 14, 20, 0);
	frame[24] = (uint8_t)(c >> 8);
	frame[25] = (uint8_t)c;
	fake_netdev_inject(&fnd, frame, n);
	cr_assert_eq(net_stats()->ip_not_for_us, 1);
	n = echo_request(frame, 8, 1);
	frame[14 + 34 - 14] ^= 0; /* fine */
	frame[34 + 2] ^= 0xff;    /* ICMP checksum */
	fake_netdev_inject(&fnd, frame, n);
	cr_assert_eq(net_stats()->icmp_bad, 1);
	fake_netdev_inject(&fnd, frame, 20); /* runt */
	cr_assert_eq(fnd.ntx, 0);
}

Test(ipv4, fragments_dropped_and_counted)
{
	uint8_t l4[64] = { 8, 0 };
	size_t n = fake_build_ipv4(frame, PEER, US, 1, l4, sizeof(l4), 0x2000);         /* MF */
	fake_netdev_inject(&fnd, frame, n);
	n = fake_build_ipv4(frame, PEER, US, 1, l4, sizeof(l4), 181);                   /* offset */
	fake_netdev_inject(&fnd, frame, n);
	n = fake_build_ipv4(frame, PEER, US, 6, l4, sizeof(l4), 0x4000 | 0x2000);       /* QEMU 7.2 TSO: DF+MF */
	fake_netdev_inject(&fnd, frame, n);
	cr_assert_eq(net_stats()->ip_frag_dropped, 3);
	cr_assert_eq(fnd.ntx, 0);
}

Test(ipv4, unknown_protocol_and_ethertype)
{
	uint8_t l4[8] = { 0 };
	size_t n = fake_build_ipv4(frame, PEER, US, 47, l4, sizeof(l4), 0);
	fake_netdev_inject(&fnd, frame, n);
	cr_assert_eq(net_stats()->ip_unknown_proto, 1);
	frame[12] = 0x86;
	frame[13] = 0xdd;
	fake_netdev_inject(&fnd, frame, n);
	cr_assert_eq(net_stats()->eth_unknown_type, 1);
	frame[0] = 0x04; /* someone else's MAC */
	fake_netdev_inject(&fnd, frame, n);
	cr_assert_eq(net_stats()->eth_not_for_us, 1);
}

static struct {
	unsigned n;
	size_t len;
	uint8_t data[2048];
	struct udp_meta m;
	unsigned device_frags;
} got;

static void udp_cb(struct udp_sock *s, void *ctx, const struct udp_meta *m, struct netbuf *nb)
{
	(void)s;
	(void)ctx;
	got.n++;
	got.m = *m;
	got.len = netbuf_host_len(nb) + netbuf_frag_len(nb);
	for (unsigned i = 0; i < nb->nfrags; i++)
		got.device_frags += nb->frags[i].addr.cls == MEM_CLASS_DEVICE;
	netbuf_copy_out(nb, 0, got.data, got.len);
}

Test(ipv4, udp_bind_receive_send)
{
	struct udp_sock *s, *s2;
	uint8_t data[1200];
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i ^ 0x5a);
	cr_assert_eq(udp_bind(4791, udp_cb, NULL, &s), 0);
	cr_assert_eq(udp_bind(4791, udp_cb, NULL, &s2), -EADDRINUSE);
	size_t n = fake_build_udp(frame, PEER, US, 5000, 4791, data, sizeof(data));
	cr_assert_eq(fake_netdev_inject(&fnd, frame, n), 0);
	cr_assert_eq(got.n, 1);
	cr_assert_eq(got.len, sizeof(data));
	cr_assert_eq(memcmp(got.data, data, sizeof(data)), 0);
	cr_assert_eq(got.m.src_port, 5000);
	cr_assert_gt(got.device_frags, 0, "payload arrived in device memory");
	/* Bad checksum, no port. */
	frame[14 + 20 + 6] ^= 1;
	fake_netdev_inject(&fnd, frame, n);
	cr_assert_eq(net_stats()->udp_bad_checksum, 1);
	n = fake_build_udp(frame, PEER, US, 5000, 4792, data, 10);
	fake_netdev_inject(&fnd, frame, n);
	cr_assert_eq(net_stats()->udp_no_port, 1);
	cr_assert_eq(got.n, 1);
	/* Send: copy. */
	cr_assert_eq(udp_sendto(s, PEER, 5000, data, 100), 0);
	cr_assert_eq(fnd.ntx, 1);
	const uint8_t *r = fnd.tx[0].b;
	cr_assert_eq(r[23], 17);
	cr_assert_eq(r[34] << 8 | r[35], 4791);
	cr_assert_eq(r[38] << 8 | r[39], 108);
	uint32_t ps = 0x0a0a + 0x000a + 0x0a0a + 0x0001 + 17 + 108;
	cr_assert_eq(fake_csum(r + 34, 108, ps), 0xffff, "UDP checksum");
	cr_assert_eq(memcmp(r + 42, data, 100), 0);
	/* Send: zero copy from a fragment. */
	struct netdev_frag f = { .addr = dma_addr_host(data), .len = 500 };
	cr_assert_eq(udp_sendto_frags(s, PEER, 5000, "HDR", 3, &f, 1), 0);
	cr_assert_eq(fnd.ntx, 2);
	cr_assert_eq(memcmp(fnd.tx[1].b + 42, "HDR", 3), 0);
	cr_assert_eq(memcmp(fnd.tx[1].b + 45, data, 500), 0);
	cr_assert_eq(fake_csum(fnd.tx[1].b + 34, 511, 0x0a0a + 0x000a + 0x0a0a + 0x0001 + 17 + 511), 0xffff);
	udp_close(s);
}

static void offload_setup(void)
{
	net_test_start(NETDEV_F_RX_SPLIT | NETDEV_F_TX_CSUM | NETDEV_F_RX_CSUM);
}

TestSuite(ipv4_offload, .init = offload_setup, .fini = net_teardown);

Test(ipv4_offload, udp_checksum_offload)
{
	struct udp_sock *s;
	uint8_t data[300] = { 1, 2, 3 };
	cr_assert_eq(udp_bind(0, udp_cb, NULL, &s), 0);
	cr_assert_geq(udp_local_port(s), 49152);
	cr_assert_eq(udp_sendto(s, PEER, 7, data, sizeof(data)), 0);
	cr_assert_eq(fnd.dev.stats.tx_csum_offload, 1);
	cr_assert_eq(fake_csum(fnd.tx[0].b + 34, 308, 0x0a0a + 0x000a + 0x0a0a + 0x0001 + 17 + 308), 0xffff,
		     "the device completed the pseudo-header sum");
	/* RX offload: the stack does not touch device memory for the checksum. */
	uint64_t before = dma_counters()->cpu_bytes[MEM_CLASS_DEVICE];
	size_t n = fake_build_udp(frame, PEER, US, 7, udp_local_port(s), data, sizeof(data));
	fake_netdev_inject(&fnd, frame, n);
	cr_assert_eq(got.n, 1);
	cr_assert_eq(dma_counters()->cpu_bytes[MEM_CLASS_DEVICE] - before, sizeof(data), "only the test's copy-out");
	udp_close(s);
}

Test(ipv4, configure_rejects_bad_values)
{
	struct net_config c;
	net_config_default(&c);
	c.netmask = 0xff00ff00;
	cr_assert_eq(net_configure(&c), -EINVAL);
	net_config_default(&c);
	c.addr = 0x0a0a00ff; /* broadcast of its /24 */
	cr_assert_eq(net_configure(&c), -EINVAL);
	net_config_default(&c);
	c.gateway = 0x0b000001; /* off-subnet */
	cr_assert_eq(net_configure(&c), -EINVAL);
	uint32_t a;
	cr_assert_eq(net_parse_ipv4("10.10.0.10", &a), 0);
	cr_assert_eq(a, 0x0a0a000a);
	cr_assert_eq(net_parse_ipv4("10.10.0", &a), -EINVAL);
	cr_assert_eq(net_parse_ipv4("10.10.0.256", &a), -EINVAL);
	cr_assert_eq(net_parse_ipv4("10.10.0.1x", &a), -EINVAL);
	cr_assert_eq(net_parse_ipv4("1234.1.1.1", &a), -EINVAL);
}

/* RFC 1122 3.2.1.3 / RFC 1812 5.3.7: a datagram whose source is a broadcast, multicast,
 * loopback, reserved or our own address, or 0.0.0.0 outside of a UDP broadcast (DHCP's
 * case), is dropped unanswered: answering would reflect to a whole subnet or to us. */
Test(ipv4, martian_sources_dropped)
{
	static const uint32_t bad[] = { 0xffffffffu, 0x0a0a00ffu /* subnet broadcast of 10.10.0.0/24 */, 0xe0000001u,
					0xefffffffu, 0xf0000001u, 0x7f000001u, 0x00000000u, 0x00000005u, US };
	for (unsigned k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		struct fake_tcp t = { .src = bad[k], .dst = US, .sport = 40000, .dport = 5555, .seq = 1,
				      .flags = 0x02, .wnd = 1000 };
		fake_netdev_clear(&fnd);
		size_t n = fake_build_tcp(frame, &t);
		cr_assert_eq(fake_netdev_inject(&fnd, frame, n), 0);
		cr_assert_eq(fnd.ntx, 0, "no RST (nor ARP) for a SYN from %08x", bad[k]);
		cr_assert_eq(net_stats()->ip_bad_src, 2 * k + 1);
		n = echo_request(frame, 8, 1);
		frame[14 + 12] = (uint8_t)(bad[k] >> 24), frame[14 + 13] = (uint8_t)(bad[k] >> 16);
		frame[14 + 14] = (uint8_t)(bad[k] >> 8), frame[14 + 15] = (uint8_t)bad[k];
		frame[14 + 10] = frame[14 + 11] = 0;
		uint16_t c = (uint16_t)~fake_csum(frame + 14, 20, 0);
		frame[14 + 10] = (uint8_t)(c >> 8), frame[14 + 11] = (uint8_t)c;
		cr_assert_eq(fake_netdev_inject(&fnd, frame, n), 0);
		cr_assert_eq(fnd.ntx, 0, "no echo reply to %08x", bad[k]);
		cr_assert_eq(net_stats()->ip_bad_src, 2 * k + 2);
	}
	/* A normal peer still gets its RST. */
	struct fake_tcp t = { .src = PEER, .dst = US, .sport = 40000, .dport = 5555, .seq = 1, .flags = 0x02, .wnd = 1 };
	size_t n = fake_build_tcp(frame, &t);
	cr_assert_eq(fake_netdev_inject(&fnd, frame, n), 0);
	cr_assert_eq(fnd.ntx, 1);
}

/* ipv4_rx's common case (the NIC verified the header checksum): a TCP or UDP datagram to us
 * without options or fragmentation goes straight through, from a source ipv4_rx_slow found
 * good last time; everything else takes the slow path with its counters. */
static void fast_setup(void)
{
	net_test_start(NETDEV_F_RX_SPLIT | NETDEV_F_RX_CSUM);
}

TestSuite(ipv4_fast, .init = fast_setup, .fini = net_teardown);

/* A SYN to the closed port 5555 from src: answered (a RST, or an ARP request for src) when
 * the datagram is accepted. */
static size_t syn_from(uint32_t src, uint32_t dst)
{
	struct fake_tcp t = { .src = src, .dst = dst, .sport = 40000, .dport = 5555, .seq = 1, .flags = 0x02,
			      .wnd = 1000 };
	return fake_build_tcp(frame, &t);
}

/* ip asks for us by ARP (with the peer's MAC): we learn it, so a RST to it leaves at once
 * (none waits in the ARP queue). */
static void learn(uint32_t ip)
{
	size_t n = fake_build_arp(frame, 1, fake_peer_mac, ip, (const uint8_t[6]){ 0 }, US,
				  (const uint8_t[6]){ 0xff, 0xff, 0xff, 0xff, 0xff, 0xff });
	cr_assert_eq(fake_netdev_inject(&fnd, frame, n), 0);
	fake_netdev_clear(&fnd);
}

static unsigned answers(size_t n)
{
	fake_netdev_clear(&fnd);
	cr_assert_eq(fake_netdev_inject(&fnd, frame, n), 0);
	return fnd.ntx;
}

/* Set the IPv4 header checksum of frame again after a change. */
static void ip_csum_fix(void)
{
	size_t ihl = (size_t)(frame[14] & 15) * 4;
	frame[24] = frame[25] = 0;
	uint16_t c = (uint16_t)~fake_csum(frame + 14, ihl, 0);
	frame[24] = (uint8_t)(c >> 8);
	frame[25] = (uint8_t)c;
}

Test(ipv4_fast, sources_checked_then_remembered)
{
	static const uint32_t bad[] = { 0xffffffffu, 0x0a0a00ffu, 0xe0000001u, 0xefffffffu, 0xf0000001u,
					0x7f000001u, 0x00000000u, 0x00000005u, US };
	cr_assert_eq(net_if0.rx_src_ok, NET_RX_SRC_NONE);
	cr_assert_eq(answers(syn_from(PEER, US)), 1, "RST");
	cr_assert_eq(net_if0.rx_src_ok, PEER, "the good source is remembered");
	for (unsigned k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		cr_assert_eq(answers(syn_from(bad[k], US)), 0, "nothing for a SYN from %08x", bad[k]);
		cr_assert_eq(net_stats()->ip_bad_src, k + 1);
		cr_assert_eq(net_if0.rx_src_ok, PEER, "a bad source is not remembered");
		cr_assert_eq(answers(syn_from(PEER, US)), 1, "the remembered source still passes");
	}
	/* A second good source replaces the first; the first is checked again and passes. */
	learn(0x0a0a0063u);
	cr_assert_eq(answers(syn_from(0x0a0a0063u, US)), 1, "RST to 10.10.0.99");
	cr_assert_eq(net_if0.rx_src_ok, 0x0a0a0063u);
	cr_assert_eq(answers(syn_from(PEER, US)), 1);
	cr_assert_eq(net_if0.rx_src_ok, PEER);
	cr_assert_eq(net_stats()->ip_bad_src, sizeof(bad) / sizeof(bad[0]));
}

/* The verdict on a source depends on our address and netmask: a change forgets it. */
Test(ipv4_fast, reconfiguration_forgets_the_source)
{
	struct net_config c;
	const uint32_t s = 0x0a0a007fu; /* 10.10.0.127: a host in /24, the broadcast of 10.10.0.0/25 */
	learn(s);
	cr_assert_eq(answers(syn_from(s, US)), 1);
	cr_assert_eq(net_if0.rx_src_ok, s);
	net_config_default(&c);
	c.netmask = 0xffffff80u;
	cr_assert_eq(net_configure(&c), 0);
	cr_assert_eq(net_if0.rx_src_ok, NET_RX_SRC_NONE);
	cr_assert_eq(answers(syn_from(s, US)), 0, "now our subnet's broadcast");
	cr_assert_eq(net_stats()->ip_bad_src, 1);
	/* Our address moves onto the remembered source: it is us now. */
	net_config_default(&c);
	cr_assert_eq(net_configure(&c), 0);
	learn(0x0a0a0042u);
	cr_assert_eq(answers(syn_from(0x0a0a0042u, US)), 1);
	cr_assert_eq(net_if0.rx_src_ok, 0x0a0a0042u);
	c.addr = 0x0a0a0042u;
	cr_assert_eq(net_configure(&c), 0);
	cr_assert_eq(answers(syn_from(0x0a0a0042u, 0x0a0a0042u)), 0, "from ourselves");
	cr_assert_eq(net_stats()->ip_bad_src, 2);
	cr_assert_eq(answers(syn_from(PEER, 0x0a0a0042u)), 1, "the peer reaches the new address");
}

/* Ethernet padding cut wherever it lies (the split's fragment, the host part, behind a
 * payload byte); a total length beyond the frame or below the header is counted. */
Test(ipv4_fast, padding_and_lengths)
{
	uint64_t before = net_stats()->ip_bad_header;
	size_t n = syn_from(PEER, US);
	cr_assert_eq(n, 60, "54 bytes padded");
	cr_assert_eq(answers(n), 1, "padding in a fragment");
	fnd.split = false;
	cr_assert_eq(answers(n), 1, "padding in the host part");
	fnd.split = true;
	uint8_t one = 0x5a;
	struct fake_tcp t = { .src = PEER, .dst = US, .sport = 40000, .dport = 5555, .seq = 1, .flags = 0x02,
			      .wnd = 1000, .payload = &one, .len = 1 };
	n = fake_build_tcp(frame, &t);
	cr_assert_eq(answers(n), 1, "1 payload byte in a fragment with the padding");
	n = syn_from(PEER, US);
	be16_store(frame + 16, 60); /* 20 bytes beyond the frame */
	ip_csum_fix();
	cr_assert_eq(answers(n), 0);
	cr_assert_eq(net_stats()->ip_bad_header, before + 1);
	be16_store(frame + 16, 19); /* shorter than the header */
	ip_csum_fix();
	cr_assert_eq(answers(n), 0);
	cr_assert_eq(net_stats()->ip_bad_header, before + 2);
}

/* What the fast path leaves to ipv4_rx_slow: the NIC's bad verdict, fragments, a broadcast
 * destination, options (accepted there), another host's address. */
Test(ipv4_fast, the_rest_takes_the_slow_path)
{
	size_t n = syn_from(PEER, US);
	frame[14 + 10] ^= 1;
	cr_assert_eq(answers(n), 0);
	cr_assert_eq(net_stats()->ip_bad_checksum, 1, "the NIC's verdict");
	n = syn_from(PEER, US);
	be16_store(frame + 20, 0x2000); /* MF */
	ip_csum_fix();
	cr_assert_eq(answers(n), 0);
	cr_assert_eq(net_stats()->ip_frag_dropped, 1);
	cr_assert_eq(answers(syn_from(PEER, 0x0a0a00ffu)), 0, "no RST to a broadcast");
	cr_assert_eq(answers(syn_from(PEER, 0x0a0a000bu)), 0);
	cr_assert_eq(net_stats()->ip_not_for_us, 1);
	/* Four bytes of NOP options: the header is 24 bytes, the TCP segment moves. */
	n = syn_from(PEER, US);
	memmove(frame + 38, frame + 34, 20);
	memset(frame + 34, 1, 4);
	frame[14] = 0x46;
	be16_store(frame + 16, 44);
	ip_csum_fix();
	cr_assert_eq(answers(n), 1, "RST for a SYN with IP options");
}

/* The limited broadcast is never a good source, also before any source was found good
 * (net_if0.rx_src_ok is NET_RX_SRC_NONE then, the same value). */
Test(ipv4_fast, broadcast_source_refused_with_none_remembered)
{
	cr_assert_eq(net_if0.rx_src_ok, NET_RX_SRC_NONE);
	cr_assert_eq(answers(syn_from(0xffffffffu, US)), 0);
	cr_assert_eq(net_stats()->ip_bad_src, 1);
	cr_assert_eq(net_if0.rx_src_ok, NET_RX_SRC_NONE);
}

/* net_stack_rx's common case counts each frame it takes in eth_rx and ip_rx as the layers
 * do (net_stats() brings them up to date), whichever path a frame takes. */
Test(ipv4_fast, counters_of_both_paths)
{
	const struct net_stats *st = net_stats();
	uint64_t eth = st->eth_rx, ip = st->ip_rx;
	cr_assert_eq(answers(syn_from(PEER, US)), 1, "slow: a new source");
	cr_assert_eq(answers(syn_from(PEER, US)), 1, "fast: padded, trimmed");
	uint8_t pay[100];
	memset(pay, 7, sizeof(pay));
	struct fake_tcp t = { .src = PEER, .dst = US, .sport = 40000, .dport = 5555, .seq = 1, .flags = 0x02,
			      .wnd = 1000, .payload = pay, .len = sizeof(pay) };
	cr_assert_eq(answers(fake_build_tcp(frame, &t)), 1, "fast: payload in a fragment");
	fnd.split = false;
	cr_assert_eq(answers(fake_build_tcp(frame, &t)), 1, "fast: all in the host part");
	fnd.split = true;
	st = net_stats();
	cr_assert_eq(st->eth_rx, eth + 4);
	cr_assert_eq(st->ip_rx, ip + 4);
	cr_assert_eq(st->ip_bad_src + st->ip_bad_header + st->eth_not_for_us, 0);
}

/* A frame to another MAC, or on a device that is not the interface's, is refused and
 * counted as before (the slow path). */
Test(ipv4_fast, other_mac_and_device_refused)
{
	size_t n = syn_from(PEER, US);
	cr_assert_eq(answers(n), 1);
	n = syn_from(PEER, US);
	frame[5] ^= 0x40;
	cr_assert_eq(answers(n), 0);
	cr_assert_eq(net_stats()->eth_not_for_us, 1);
	struct fake_netdev other;
	fake_netdev_setup(&other, NETDEV_F_RX_SPLIT | NETDEV_F_RX_CSUM);
	n = syn_from(PEER, US);
	cr_assert_eq(fake_netdev_inject(&other, frame, n), 0);
	cr_assert_eq(other.dev.stats.rx_dropped, 1);
	cr_assert_eq(other.ntx + fnd.ntx, 0);
	cr_assert_eq(fake_netdev_teardown(&other), 0, "every buffer back");
}
