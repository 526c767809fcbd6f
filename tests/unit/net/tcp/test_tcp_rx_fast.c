// sources: drivers/nic/netdev.c net/net.c lib/ipv4_text.c net/arp.c net/ipv4.c net/udp.c net/tcp/tcp.c net/tcp/tcp_in.c net/tcp/tcp_isn.c net/tcp/tcp_pools.c net/tcp/tcp_admit.c tests/unit/net/fake_entropy.c net/tcp/tcp_hdr.c net/tcp/tcp_out.c net/tcp/tcp_budget.c net/tcp/tcp_sack.c net/tcp/tcp_service.c mm/pool.c mm/dma.c lib/timer.c lib/log.c tests/unit/net/fake_netdev.c
/*
 * tcp_rx's header prediction part (tcp_in.c): a 20-byte header read into locals, the
 * last segment's connection, the checksum verified once; everything else goes to the full
 * parser (tcp_rx_full) with the same checks and counters.
 */
#include "tests/unit/net/tcp/tcp_test.h"

TestSuite(tcp_rx_fast, .init = net_setup, .fini = net_teardown);

static uint8_t data[4096];

/* A data segment from the peer with the given ports, options and checksum. */
static void peer_data(uint16_t sport, uint16_t dport, uint32_t seq, uint32_t ack, size_t len, const uint8_t *opts,
		      size_t optlen, bool bad_csum)
{
	struct fake_tcp t = { .src = PEER, .dst = US, .sport = sport, .dport = dport, .seq = seq, .ack = ack,
			      .flags = TCP_ACK, .wnd = 65535, .opts = opts, .optlen = optlen, .payload = data,
			      .len = len, .bad_csum = bad_csum };
	size_t n = fake_build_tcp(frame, &t);
	cr_assert_eq(fake_netdev_inject(&fnd, frame, n), 0);
}

/* Give the received fragments back and abort s (the pools' counters back to zero). */
static void drain_abort(struct tcp_sock *s)
{
	struct netdev_frag f[16];
	int n;
	while ((n = tcp_recv_frags(s, f, 16, SIZE_MAX)) > 0)
		for (int i = 0; i < n; i++)
			netdev_frag_release(&f[i]);
	tcp_abort(s);
}

Test(tcp_rx_fast, bad_checksum_counted_once_and_dropped)
{
	struct tcp_sock *l;
	uint32_t iss = open_passive(&l, 1000, 65535, opt_mss1460, 4);
	struct tcp_sock *s = accepted;
	uint64_t bad = tcp_stats()->bad_checksum, segs = tcp_stats()->segs_in;
	peer_data(PEER_PORT, SRV_PORT, 1001, iss + 1, 1000, NULL, 0, true);
	cr_assert_eq(tcp_stats()->bad_checksum, bad + 1);
	cr_assert_eq(tcp_stats()->segs_in, segs + 1);
	cr_assert_eq(tcp_recv_avail(s), 0);
	peer_data(PEER_PORT, SRV_PORT, 1001, iss + 1, 1000, NULL, 0, false);
	cr_assert_eq(tcp_recv_avail(s), 1000, "the good copy is taken");
	cr_assert_eq(tcp_stats()->bad_checksum, bad + 1);
	drain_abort(s);
	close_listener(l);
}

Test(tcp_rx_fast, zero_port_is_a_bad_header)
{
	struct tcp_sock *l;
	uint32_t iss = open_passive(&l, 1000, 65535, opt_mss1460, 4);
	uint64_t bad = tcp_stats()->bad_header;
	peer_data(0, SRV_PORT, 1001, iss + 1, 100, NULL, 0, false);
	peer_data(PEER_PORT, 0, 1001, iss + 1, 100, NULL, 0, false);
	cr_assert_eq(tcp_stats()->bad_header, bad + 2);
	cr_assert_eq(tcp_recv_avail(accepted), 0);
	cr_assert_eq(fnd.ntx, 0, "no reply to a bad header");
	drain_abort(accepted);
	close_listener(l);
}

Test(tcp_rx_fast, segments_with_options_take_the_full_parser)
{
	static const uint8_t nops[] = { 1, 1, 1, 1 };
	struct tcp_sock *l;
	uint32_t iss = open_passive(&l, 1000, 65535, opt_mss1460, 4);
	struct tcp_sock *s = accepted;
	peer_data(PEER_PORT, SRV_PORT, 1001, iss + 1, 500, nops, sizeof(nops), false);
	cr_assert_eq(tcp_recv_avail(s), 500);
	peer_data(PEER_PORT, SRV_PORT, 1501, iss + 1, 500, NULL, 0, false);
	cr_assert_eq(tcp_recv_avail(s), 1000);
	peer_data(PEER_PORT, SRV_PORT, 2001, iss + 1, 500, nops, sizeof(nops), true);
	cr_assert_eq(tcp_recv_avail(s), 1000, "a bad checksum after options: dropped");
	cr_assert_eq(tcp_stats()->bad_checksum, 1);
	drain_abort(s);
	close_listener(l);
}

Test(tcp_rx_fast, another_connections_segment_between)
{
	struct tcp_sock *l;
	uint32_t iss = open_passive(&l, 1000, 65535, opt_mss1460, 4);
	struct tcp_sock *a = accepted;
	/* a second connection from another port of the peer */
	struct fake_tcp t = { .src = PEER, .dst = US, .sport = PEER_PORT + 1, .dport = SRV_PORT, .seq = 5000,
			      .flags = TCP_SYN, .wnd = 65535, .opts = opt_mss1460, .optlen = 4 };
	size_t n = fake_build_tcp(frame, &t);
	cr_assert_eq(fake_netdev_inject(&fnd, frame, n), 0);
	uint32_t iss2 = lastseg()->seq;
	t.flags = TCP_ACK;
	t.seq = 5001;
	t.ack = iss2 + 1;
	t.opts = NULL;
	t.optlen = 0;
	n = fake_build_tcp(frame, &t);
	cr_assert_eq(fake_netdev_inject(&fnd, frame, n), 0);
	struct tcp_sock *b = accepted;
	cr_assert_neq(a, b);
	for (unsigned i = 0; i < 4; i++) {
		peer_data(PEER_PORT, SRV_PORT, 1001 + i * 100, iss + 1, 100, NULL, 0, false);
		peer_data(PEER_PORT + 1, SRV_PORT, 5001 + i * 200, iss2 + 1, 200, NULL, 0, false);
	}
	cr_assert_eq(tcp_recv_avail(a), 400);
	cr_assert_eq(tcp_recv_avail(b), 800);
	/* a segment for a port nobody listens on still gets its reset */
	fake_netdev_clear(&fnd);
	peer_data(PEER_PORT, SRV_PORT + 1, 1, 1, 10, NULL, 0, false);
	cr_assert_eq(lastseg()->flags & TCP_RST, TCP_RST);
	drain_abort(a);
	drain_abort(b);
	close_listener(l);
}
