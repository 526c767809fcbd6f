// sources: drivers/nic/netdev.c net/net.c lib/ipv4_text.c net/arp.c net/ipv4.c net/udp.c net/tcp/tcp.c net/tcp/tcp_in.c net/tcp/tcp_isn.c net/tcp/tcp_pools.c net/tcp/tcp_admit.c tests/unit/net/fake_entropy.c net/tcp/tcp_hdr.c net/tcp/tcp_out.c net/tcp/tcp_budget.c net/tcp/tcp_sack.c net/tcp/tcp_service.c mm/pool.c mm/dma.c lib/timer.c lib/log.c tests/unit/net/fake_netdev.c
/*
 * tcp.c's window_update (after the user takes bytes: announce a window that opened by
 * enough) rejects first with the window's upper bound read from win_full
 * (tcp_rcv_window_max_known) while that is valid. After each invalidation of win_full (a writer of rcv_cap, an MTU
 * change) the bound is computed again: the update goes as the computed bound says (a stale
 * win_full would call the window unchanged and send nothing).
 */
#include "tests/unit/net/tcp/tcp_test.h"

TestSuite(tcp_winupd_known, .init = net_setup, .fini = net_teardown);

static uint8_t pattern[100];
/* A new connection's window (no window scale: opt_mss1460). */
static const uint32_t w0 = TCP_RCV_CAP_INIT * 1460u;

/* A connection (no window scale) with win_full known and 100 bytes left in its receive
 * queue, acknowledged by the delayed ACK's timer with the edge where it was. */
static struct tcp_sock *up(struct tcp_sock **l)
{
	uint32_t iss = open_passive(l, 1000, 65535, opt_mss1460, 4);
	struct tcp_sock *s = accepted;

	cr_assert_eq(tcp_rcv_window(s), w0);
	cr_assert_eq(s->win_full, w0, "win_full known");
	peer_seg(TCP_ACK | TCP_PSH, 1001, iss + 1, 65535, pattern, 100, NULL, 0);
	advance(TCP_DELACK_NS);
	cr_assert_eq(tcp_recv_avail(s), 100);
	cr_assert_eq(s->rcv_adv - s->rcv_nxt, w0 - 100, "the edge stays where it was");
	fake_netdev_clear(&fnd);
	return s;
}

/* The user takes the 100 bytes: the update goes at once. Returns its window. */
static uint32_t taken_and_announced(struct tcp_sock *s)
{
	cr_assert_eq(drain_frags(s), 100);
	cr_assert_eq(fnd.ntx, 1, "the window announced when the user took the bytes");
	cr_assert_eq(lastseg()->ack, 1101);
	return lastseg()->wnd;
}

/* The end of a test: the fake's MTU back, the sockets gone. */
static void down(struct tcp_sock *s, struct tcp_sock *l)
{
	fnd.dev.mtu = 1500;
	tcp_abort(s);
	close_listener(l);
}

/* The user takes the 100 bytes it left: the window opens by 100 bytes, nothing to
 * announce (decided from win_full, valid throughout). */
Test(tcp_winupd_known, a_window_opened_by_little_is_not_announced)
{
	struct tcp_sock *l;
	struct tcp_sock *s = up(&l);

	cr_assert_eq(drain_frags(s), 100);
	cr_assert_eq(fnd.ntx, 0, "opened by 100 bytes: nothing to announce");
	cr_assert_eq(s->win_full, w0);
	down(s, l);
}

/* The window limit doubles (tcp_rcv_cap_grow zeroes win_full) while 100 bytes wait: when
 * the user takes them, the window opens by more than the limit grew and is announced at
 * once; win_full left as it was would say it opened by 100 bytes. */
Test(tcp_winupd_known, a_grown_limit_is_announced)
{
	struct tcp_sock *l;
	struct tcp_sock *s = up(&l);

	uint32_t cap = s->rcv_cap;
	s->rcv_rate_ns = s->last_rx_ns;
	s->rcv_rate_seq = s->rcv_nxt - s->rcv_cap * tcp_rcv_bpb();
	tcp_rcv_cap_grow(s);
	cr_assert_eq(s->rcv_cap, 2 * cap);
	cr_assert_eq(taken_and_announced(s), 2 * w0);
	down(s, l);
}

/* The MTU grows while 100 bytes wait (win_bpb no longer matches): the bound is computed
 * for the new MTU, whose rcv_cap buffers hold more, and the update goes when the user
 * takes the bytes; win_full of the old MTU would say the window opened by 100 bytes. */
Test(tcp_winupd_known, an_mtu_change_is_announced)
{
	struct tcp_sock *l;
	struct tcp_sock *s = up(&l);

	fnd.dev.mtu = 9000;
	cr_assert_gt(taken_and_announced(s), w0);
	down(s, l);
}
