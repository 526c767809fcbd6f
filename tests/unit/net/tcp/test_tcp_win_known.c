// sources: drivers/nic/netdev.c net/net.c lib/ipv4_text.c net/arp.c net/ipv4.c net/udp.c net/tcp/tcp.c net/tcp/tcp_in.c net/tcp/tcp_isn.c net/tcp/tcp_pools.c net/tcp/tcp_admit.c tests/unit/net/fake_entropy.c net/tcp/tcp_hdr.c net/tcp/tcp_out.c net/tcp/tcp_budget.c net/tcp/tcp_sack.c net/tcp/tcp_service.c mm/pool.c mm/dma.c lib/timer.c lib/log.c tests/unit/net/fake_netdev.c
/*
 * tcp_out.c's reads of win_full (rcv_window_max_known): tcp_advertise's test whether a
 * window could move the advertised edge and tcp_ack_held's whether the held ACK would
 * open the window take the window's upper bound from the socket's win_full while it is
 * valid. Its writers (tcp_rcv_cap_grow, apply_syn_options) zero it and an MTU change is
 * caught by win_bpb: after each, the bound is computed again, and the window grows or
 * the ACK goes as the computed bound says (a stale win_full would say otherwise).
 */
#include "tests/unit/net/tcp/tcp_test.h"

TestSuite(tcp_win_known, .init = net_setup, .fini = net_teardown);

static uint8_t pattern[4096];

/* Take every queued byte as the NVMe/TCP target does (fragments, released). */
static size_t drain(struct tcp_sock *s)
{
	struct netdev_frag f[64];
	size_t total = 0;
	int n;
	while ((n = tcp_recv_frags(s, f, 64, SIZE_MAX)) > 0)
		for (int i = 0; i < n; i++) {
			total += f[i].len;
			netdev_frag_release(&f[i]);
		}
	return total;
}

/* A small segment of len bytes at *seq, taken by the user, then its delayed ACK. Returns
 * the window that ACK advertises (no window scale: opt_mss1460). */
static uint32_t small_then_ack(struct tcp_sock *s, uint32_t *seq, uint32_t iss, uint32_t len)
{
	fake_netdev_clear(&fnd);
	peer_seg(TCP_ACK | TCP_PSH, *seq, iss + 1, 65535, pattern, len, NULL, 0);
	*seq += len;
	cr_assert_eq(drain(s), len);
	advance(TCP_DELACK_NS);
	cr_assert_eq(fnd.ntx, 1, "the delayed ACK");
	cr_assert_eq(lastseg()->ack, *seq);
	return lastseg()->wnd;
}

/* The window limit doubles (tcp_rcv_cap_grow, a writer of rcv_cap: it zeroes win_full)
 * between two windows less than a segment apart: tcp_advertise's test sees the larger
 * bound and the next ACK opens the window; with win_full left as it was, the bound
 * would be the old window and the edge would stay. */
Test(tcp_win_known, the_window_grows_after_its_limit_does)
{
	struct tcp_sock *l;
	uint32_t iss = open_passive(&l, 1000, 65535, opt_mss1460, 4);
	struct tcp_sock *s = accepted;
	uint32_t seq = 1001;

	const uint32_t w0 = TCP_RCV_CAP_INIT * 1460u; /* a new connection's window */
	cr_assert_eq(small_then_ack(s, &seq, iss, 100), w0 - 100, "less than a segment: the edge stays");
	cr_assert_eq(s->win_full, w0, "win_full known");
	cr_assert_eq(small_then_ack(s, &seq, iss, 100), w0 - 200);
	/* a whole window within the rate period: the limit doubles */
	s->rcv_rate_ns = s->last_rx_ns;
	s->rcv_rate_seq = s->rcv_nxt - s->rcv_cap * tcp_rcv_bpb();
	tcp_rcv_cap_grow(s);
	cr_assert_eq(s->rcv_cap, 2 * TCP_RCV_CAP_INIT);
	cr_assert_eq(small_then_ack(s, &seq, iss, 100), 2 * w0, "the next ACK opens the window to the new limit");
	tcp_abort(s);
	close_listener(l);
}

/* The interface's MTU shrinks (its bytes per buffer with it: win_bpb no longer matches):
 * the bound is computed again for the new MTU. A larger one would leave the window where
 * it is either way; a smaller one makes rcv_cap buffers hold less, so the bound is below
 * the advertised edge (never shrunk) and the ACK says what is left of it. */
Test(tcp_win_known, an_mtu_change_is_seen)
{
	struct tcp_sock *l;
	uint32_t iss = open_passive(&l, 1000, 65535, opt_mss1460, 4);
	struct tcp_sock *s = accepted;
	uint32_t seq = 1001;

	const uint32_t w0 = TCP_RCV_CAP_INIT * 1460u;
	cr_assert_eq(small_then_ack(s, &seq, iss, 100), w0 - 100);
	uint32_t bpb0 = s->win_bpb;
	fnd.dev.mtu = 9000; /* more bytes per buffer: a larger bound */
	uint32_t w1 = small_then_ack(s, &seq, iss, 100);
	cr_assert_gt(w1, w0, "the bound of the new MTU opens the window (win_full of the old one would not)");
	cr_assert_neq(s->win_bpb, bpb0, "win_full computed again for the new MTU");
	fnd.dev.mtu = 1500;
	tcp_abort(s);
	close_listener(l);
}

/* The ACK a promise holds is not held when it opens the window: after the limit doubled
 * (win_full zeroed), half of the new bound is more than what is left of the advertised
 * window, so the batch's ACK goes at its end; win_full left as it was would call the
 * window more than half open and hold it. */
Test(tcp_win_known, a_hold_sees_the_grown_limit)
{
	struct tcp_sock *l;
	uint32_t iss = open_passive(&l, 1000, 65535, opt_mss1460, 4);
	struct tcp_sock *s = accepted;
	uint32_t seq = 1001;

	const uint32_t w0 = TCP_RCV_CAP_INIT * 1460u;
	cr_assert_eq(small_then_ack(s, &seq, iss, 100), w0 - 100);
	fake_netdev_clear(&fnd);
	fnd.rx_batch = true;
	/* a third of the window in one batch: more than half of it is left */
	for (int i = 0; i < 5; i++, seq += 1460)
		peer_seg(TCP_ACK | TCP_PSH, seq, iss + 1, 65535, pattern, 1460, NULL, 0);
	cr_assert_eq(drain(s), 5 * 1460);
	cr_assert_gt(s->rcv_adv - s->rcv_nxt, w0 / 2);
	cr_assert_lt(s->rcv_adv - s->rcv_nxt, w0);
	s->rcv_rate_ns = s->last_rx_ns;
	s->rcv_rate_seq = s->rcv_nxt - s->rcv_cap * tcp_rcv_bpb();
	tcp_rcv_cap_grow(s);
	cr_assert_eq(s->rcv_cap, 2 * TCP_RCV_CAP_INIT);
	uint64_t holds = tcp_stats()->ack_holds;
	tcp_ack_hold(s);
	tcp_rx_batch_end();
	cr_assert_eq(tcp_stats()->ack_holds, holds, "not held: the ACK opens the window");
	cr_assert_eq(fnd.ntx, 1);
	cr_assert_eq(lastseg()->ack, seq);
	cr_assert_gt(lastseg()->wnd, w0, "to the new limit");
	fnd.rx_batch = false;
	tcp_abort(s);
	close_listener(l);
}
