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

/* tcp_advertise's general computation, as tcp_rcv_window_advertise must match it: the
 * window (at most what WINDOW can say), the edge never back and moved only by an MSS or
 * from RCV.NXT, the note when it moved. Returns the window advertised. */
static uint32_t advertise_reference(struct tcp_sock *s)
{
	uint32_t win = tcp_rcv_window(s), lim = (uint32_t)0xffff << s->rcv_wscale, adv0 = s->rcv_adv, edge;

	if (win > lim)
		win = lim;
	edge = s->rcv_nxt + win;
	if (SEQ_LT(s->rcv_adv, s->rcv_nxt))
		s->rcv_adv = s->rcv_nxt;
	if (SEQ_GT(edge, s->rcv_adv) && (edge - s->rcv_adv >= s->mss || s->rcv_adv == s->rcv_nxt))
		s->rcv_adv = edge;
	if (s->rcv_adv != adv0)
		tcp_budget_note(s);
	s->win_nxt = s->rcv_nxt;
	return s->rcv_adv - s->rcv_nxt;
}

/* What the two computations leave behind. */
struct adv_outcome {
	uint32_t ret, rcv_adv, win_nxt, bud_nxt;
	unsigned bud_promised;
	bool bud_receiving, starved, pending;
};

static struct adv_outcome adv_outcome_of(const struct tcp_sock *s, uint32_t ret)
{
	return (struct adv_outcome){ ret, s->rcv_adv, s->win_nxt, s->bud_nxt, s->bud_promised, s->bud_receiving,
				     s->rwnd_starved, tcp_budget_pending == s };
}

/* One case, from s's state set up by the caller (rcv_adv, state, wscale, pending note,
 * device buffers out): the reference first, then the state put back (the sums with it:
 * a note after the edge is restored) and tcp_rcv_window_advertise, then the same outcome
 * asked for. Returns whether the steady case answered. */
static bool adv_case(struct tcp_sock *s, bool pending)
{
	uint32_t adv = s->rcv_adv, wnxt = s->win_nxt;

	tcp_budget_note(s);
	if (pending)
		tcp_budget_note_later(s);
	struct adv_outcome ref = adv_outcome_of(s, advertise_reference(s));

	s->rcv_adv = adv;
	s->win_nxt = wnxt;
	tcp_budget_note(s);
	if (pending)
		tcp_budget_note_later(s);
	uint32_t win = 0, got = tcp_rcv_window_advertise(s, &win);
	if (!got) {
		cr_assert_eq(s->rcv_adv, adv, "nothing moved when the steady case does not hold");
		cr_assert_eq(win, tcp_rcv_window(s), "the window for the general path");
		s->rcv_adv = adv;
		s->win_nxt = wnxt;
		tcp_budget_note(s);
		return false;
	}
	struct adv_outcome now = adv_outcome_of(s, got);
	cr_assert_eq(now.ret, ref.ret, "window %u, computed %u", now.ret, ref.ret);
	cr_assert_eq(now.rcv_adv, ref.rcv_adv);
	cr_assert_eq(now.win_nxt, ref.win_nxt);
	cr_assert_eq(now.bud_promised, ref.bud_promised, "promised %u, computed %u", now.bud_promised,
		     ref.bud_promised);
	cr_assert_eq(now.bud_receiving, ref.bud_receiving);
	cr_assert_eq(now.bud_nxt, ref.bud_nxt);
	cr_assert_eq(now.starved, ref.starved);
	cr_assert_eq(now.pending, ref.pending, "the socket's own waiting note made when the edge moved");
	s->rcv_adv = adv;
	s->win_nxt = wnxt;
	tcp_budget_note(s);
	return true;
}

/* tcp_advertise's steady case (tcp_rcv_window_advertise: window, edge and budget note in
 * one call) against the full computation, in every case these can make: the edge ahead,
 * at or behind RCV.NXT by less or more than an MSS, the window above WINDOW's limit
 * (no scale, the limit grown) or not (scale 7, or the first limit), a socket that still receives or not (CLOSE_WAIT), its own
 * note waiting or not, and the device's buffers lent out so that the steady case does
 * not hold (then nothing moves and the general path's window is handed back). */
Test(tcp_win_known, the_steady_edge_is_the_full_computations)
{
	struct tcp_sock *l;
	uint32_t iss, seq;
	struct tcp_sock *s = up(&l, &iss, &seq);
	const int32_t offs[] = { -3000, -1, 0, 1, 100, 1459, 1460, 1461, 3000, (int32_t)w0 - 1460, (int32_t)w0 - 1,
				 (int32_t)w0, (int32_t)w0 + 1460, 70000 };
	const uint8_t scales[] = { 0, 7 };
	const enum tcp_state states[] = { TCP_ESTABLISHED, TCP_CLOSE_WAIT };
	uint32_t nxt = s->rcv_nxt, adv = s->rcv_adv;
	uint8_t wscale = s->rcv_wscale;
	enum tcp_state state = s->state;
	unsigned out = fnd.dev.rx_bufs_out, steady = 0, general = 0;

	for (unsigned grown = 0; grown < 2; grown++)
	for (unsigned lent = 0; lent < 2; lent++)
		for (unsigned si = 0; si < 2; si++)
			for (unsigned wi = 0; wi < 2; wi++)
				for (unsigned oi = 0; oi < sizeof(offs) / sizeof(offs[0]); oi++)
					for (unsigned pi = 0; pi < 2; pi++) {
						while (grown && s->rcv_cap * tcp_rcv_bpb() <= 0xffff)
							limit_doubles(s); /* win_full above WINDOW's unscaled limit */
						fnd.dev.rx_bufs_out = lent ? fnd.dev.rx_bufs - 1 : out;
						s->state = states[si];
						s->rcv_wscale = scales[wi];
						s->rcv_nxt = nxt + 5000;
						s->rcv_adv = s->rcv_nxt + (uint32_t)offs[oi];
						if (adv_case(s, pi))
							steady++;
						else
							general++;
					}
	cr_assert_gt(s->win_full, 0xffff, "a window above the unscaled limit was tried");
	cr_assert_gt(steady, 0, "the steady case was tried");
	cr_assert_gt(general, 0, "the general one too");
	fnd.dev.rx_bufs_out = out;
	s->state = state;
	s->rcv_wscale = wscale;
	s->rcv_nxt = nxt;
	s->rcv_adv = adv;
	tcp_budget_note(s);
	down(s, l);
}
