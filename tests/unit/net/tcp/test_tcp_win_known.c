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
/* A new connection's window (no window scale: opt_mss1460). */
static const uint32_t w0 = TCP_RCV_CAP_INIT * 1460u;

/* A small segment of len bytes at *seq, taken by the user, then its delayed ACK. Returns
 * the window that ACK advertises (no window scale: opt_mss1460). */
static uint32_t small_then_ack(struct tcp_sock *s, uint32_t *seq, uint32_t iss, uint32_t len)
{
	fake_netdev_clear(&fnd);
	peer_seg(TCP_ACK | TCP_PSH, *seq, iss + 1, 65535, pattern, len, NULL, 0);
	*seq += len;
	cr_assert_eq(drain_frags(s), len);
	advance(TCP_DELACK_NS);
	cr_assert_eq(fnd.ntx, 1, "the delayed ACK");
	cr_assert_eq(lastseg()->ack, *seq);
	return lastseg()->wnd;
}

/* A connection (no window scale) whose first small segment was acknowledged with what
 * is left of a new connection's window (the edge stays: less than a segment came). */
static struct tcp_sock *up(struct tcp_sock **l, uint32_t *iss, uint32_t *seq)
{
	*iss = open_passive(l, 1000, 65535, opt_mss1460, 4);
	*seq = 1001;
	cr_assert_eq(small_then_ack(accepted, seq, *iss, 100), w0 - 100);
	return accepted;
}

/* tcp_rcv_cap_grow (a writer of rcv_cap) with a whole window received within the rate
 * period: the limit doubles. */
static void limit_doubles(struct tcp_sock *s)
{
	uint32_t cap = s->rcv_cap;
	s->rcv_rate_ns = s->last_rx_ns;
	s->rcv_rate_seq = s->rcv_nxt - s->rcv_cap * tcp_rcv_bpb();
	tcp_rcv_cap_grow(s);
	cr_assert_eq(s->rcv_cap, 2 * cap);
}

/* The end of a test: the fake's settings back, the sockets gone. */
static void down(struct tcp_sock *s, struct tcp_sock *l)
{
	fnd.rx_batch = false;
	fnd.dev.mtu = 1500;
	tcp_abort(s);
	close_listener(l);
}

/* The window limit doubles (tcp_rcv_cap_grow, a writer of rcv_cap: it zeroes win_full)
 * between two windows less than a segment apart: tcp_advertise's test sees the larger
 * bound and the next ACK opens the window; with win_full left as it was, the bound
 * would be the old window and the edge would stay. */
Test(tcp_win_known, the_window_grows_after_its_limit_does)
{
	struct tcp_sock *l;
	uint32_t iss, seq;
	struct tcp_sock *s = up(&l, &iss, &seq);

	cr_assert_eq(s->win_full, w0, "win_full known");
	cr_assert_eq(small_then_ack(s, &seq, iss, 100), w0 - 200);
	limit_doubles(s);
	cr_assert_eq(small_then_ack(s, &seq, iss, 100), 2 * w0, "the next ACK opens the window to the new limit");
	down(s, l);
}

/* The interface's MTU grows (its bytes per buffer with it: win_bpb no longer matches):
 * the bound is computed again for the new MTU, rcv_cap buffers hold more, and the next ACK
 * opens the window; win_full of the old MTU would leave the edge where it is. */
Test(tcp_win_known, an_mtu_change_is_seen)
{
	struct tcp_sock *l;
	uint32_t iss, seq;
	struct tcp_sock *s = up(&l, &iss, &seq);

	uint32_t bpb0 = s->win_bpb;
	fnd.dev.mtu = 9000; /* more bytes per buffer: a larger bound */
	uint32_t w1 = small_then_ack(s, &seq, iss, 100);
	cr_assert_gt(w1, w0, "the bound of the new MTU opens the window (win_full of the old one would not)");
	cr_assert_neq(s->win_bpb, bpb0, "win_full computed again for the new MTU");
	down(s, l);
}

/* The ACK a promise holds is not held when it opens the window: after the limit doubled
 * (win_full zeroed), half of the new bound is more than what is left of the advertised
 * window, so the batch's ACK goes at its end; win_full left as it was would call the
 * window more than half open and hold it. */
Test(tcp_win_known, a_hold_sees_the_grown_limit)
{
	struct tcp_sock *l;
	uint32_t iss, seq;
	struct tcp_sock *s = up(&l, &iss, &seq);

	fake_netdev_clear(&fnd);
	fnd.rx_batch = true;
	/* a third of the window in one batch: more than half of it is left */
	for (int i = 0; i < 5; i++, seq += 1460)
		peer_seg(TCP_ACK | TCP_PSH, seq, iss + 1, 65535, pattern, 1460, NULL, 0);
	cr_assert_eq(drain_frags(s), 5 * 1460);
	cr_assert_gt(s->rcv_adv - s->rcv_nxt, w0 / 2);
	cr_assert_lt(s->rcv_adv - s->rcv_nxt, w0);
	limit_doubles(s);
	uint64_t holds = tcp_stats()->ack_holds;
	tcp_ack_hold(s);
	tcp_rx_batch_end();
	cr_assert_eq(tcp_stats()->ack_holds, holds, "not held: the ACK opens the window");
	cr_assert_eq(fnd.ntx, 1);
	cr_assert_eq(lastseg()->ack, seq);
	cr_assert_gt(lastseg()->wnd, w0, "to the new limit");
	down(s, l);
}
