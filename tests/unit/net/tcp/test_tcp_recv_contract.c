// sources: drivers/nic/netdev.c net/net.c lib/ipv4_text.c net/arp.c net/ipv4.c net/udp.c net/tcp/tcp.c net/tcp/tcp_in.c net/tcp/tcp_isn.c net/tcp/tcp_pools.c net/tcp/tcp_admit.c tests/unit/net/fake_entropy.c net/tcp/tcp_hdr.c net/tcp/tcp_out.c net/tcp/tcp_budget.c net/tcp/tcp_sack.c net/tcp/tcp_service.c mm/pool.c mm/dma.c lib/timer.c lib/log.c tests/unit/net/fake_netdev.c
/*
 * The contract of tcp_recv_frags and tcp_recv_frags_len (tcp.h) that the NVMe/TCP target
 * relies on: no fragment they return is empty, whatever way the bytes came in (in order,
 * pure ACKs between, out of order and overlapping, retransmitted over what is in, the
 * front of the queue read by tcp_recv_copy) and however the taking cuts them (max
 * fragments, max_bytes inside an entry or at its end); and the bytes are the stream's.
 */
#include "tests/unit/net/tcp/tcp_test.h"

TestSuite(tcp_recv_contract, .init = net_setup, .fini = net_teardown);

static uint8_t stream[8192];
static uint8_t got[8192];
static size_t ngot;

/* The peer's bytes [from, to) of the stream (peer ISS 1000: byte 0 is sequence 1001). */
static void peer_bytes(uint32_t iss, size_t from, size_t to)
{
	peer_seg(TCP_ACK, 1001 + (uint32_t)from, iss + 1, 65535, stream + from, to - from, NULL, 0);
}

/* Take with tcp_recv_frags (or _len): every fragment has bytes, and they follow the stream.
 * Returns the bytes taken. */
static size_t take(struct tcp_sock *s, unsigned max, size_t max_bytes, bool with_len)
{
	struct netdev_frag f[16];
	size_t took = 0, sum = 0;
	int n = with_len ? tcp_recv_frags_len(s, f, max, max_bytes, &took) : tcp_recv_frags(s, f, max, max_bytes);
	cr_assert_geq(n, 0);
	for (int i = 0; i < n; i++) {
		cr_assert_gt(f[i].len, 0, "fragment %d of %d is empty", i, n);
		cr_assert_leq(ngot + f[i].len, sizeof(got));
		cr_assert_eq(netdev_frag_read(&f[i], 0, got + ngot, f[i].len), 0);
		ngot += f[i].len;
		sum += f[i].len;
		netdev_frag_release(&f[i]);
	}
	cr_assert_leq(sum, max_bytes);
	if (with_len)
		cr_assert_eq(took, sum);
	return sum;
}

Test(tcp_recv_contract, no_fragment_taken_is_empty_however_the_bytes_came_and_are_cut)
{
	struct tcp_sock *l;
	for (size_t i = 0; i < sizeof(stream); i++)
		stream[i] = (uint8_t)(i * 37 + (i >> 8));
	uint32_t iss = open_passive(&l, 1000, 65535, opt_mss1460, 4);
	struct tcp_sock *s = accepted;
	ngot = 0;

	/* in order, with pure ACKs (no payload) between */
	peer_bytes(iss, 0, 1000);
	peer_seg(TCP_ACK, 2001, iss + 1, 65535, NULL, 0, NULL, 0);
	peer_bytes(iss, 1000, 1400);
	/* out of order and overlapping, then a retransmission over what is in that fills the
	 * hole: the queued entries are trimmed where they overlap, a covered one dropped */
	peer_bytes(iss, 3000, 4000);
	peer_bytes(iss, 2500, 3500);
	peer_bytes(iss, 2600, 3000); /* inside what is out of order already */
	peer_bytes(iss, 0, 1400);    /* all of it in already */
	peer_bytes(iss, 1200, 2600); /* from inside what is in to past the hole's end */
	peer_bytes(iss, 4000, 4000 + 1448);
	fake_netdev_rx_end(&fnd);
	tcp_rx_batch_end();
	cr_assert_eq(tcp_recv_avail(s), 5448);

	/* tcp_recv_copy takes the front of the first entry */
	cr_assert_eq(tcp_recv_copy(s, got, 300), 300);
	ngot = 300;
	/* cuts: max_bytes inside an entry, at an entry's end, one fragment, then the rest */
	cr_assert_eq(take(s, 16, 1, false), 1);
	cr_assert_eq(take(s, 16, 699, true), 699, "to the first entry's end");
	cr_assert_eq(take(s, 1, SIZE_MAX, false), 400, "one entry");
	cr_assert_eq(take(s, 16, 1000, true), 1000);
	cr_assert_eq(take(s, 2, 5000, false) > 0, true);
	while (take(s, 16, SIZE_MAX, (ngot & 1) != 0))
		;
	cr_assert_eq(ngot, 5448);
	cr_assert_eq(memcmp(got, stream, ngot), 0, "the stream's bytes in order");
	cr_assert_eq(tcp_recv_frags(s, (struct netdev_frag[1]){ 0 }, 1, SIZE_MAX), 0, "nothing left");
	tcp_abort(s);
	close_listener(l);
}
