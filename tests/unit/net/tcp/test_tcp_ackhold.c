// sources: drivers/nic/netdev.c net/net.c lib/ipv4_text.c net/arp.c net/ipv4.c net/udp.c net/tcp/tcp.c net/tcp/tcp_in.c net/tcp/tcp_isn.c net/tcp/tcp_pools.c net/tcp/tcp_admit.c tests/unit/net/fake_entropy.c net/tcp/tcp_hdr.c net/tcp/tcp_out.c net/tcp/tcp_budget.c net/tcp/tcp_sack.c net/tcp/tcp_service.c mm/pool.c mm/dma.c lib/timer.c lib/log.c tests/unit/net/fake_netdev.c
/*
 * The ACK a receive batch owes, held for an answer its user promised (tcp_ack_hold,
 * net.tcp_ack_hold_us): held then carried by the reply, sent alone when the bound runs out,
 * never held for out-of-order data, a FIN, a window that must open, data the user has not
 * taken, nor with the setting at 0.
 */
#include "lib/poller.h"
#include "tests/unit/net/tcp/tcp_test.h"

TestSuite(tcp_ackhold, .init = net_setup, .fini = net_teardown);

static uint8_t pattern[16384];

/* Take every queued byte as the NVMe/TCP target does (fragments, released). */
static size_t drain(struct tcp_sock *s)
{
	return drain_frags(s);
}

/* A 4 KiB write capsule's three segments from seq in one receive batch (not ended). */
static uint32_t capsule(uint32_t seq, uint32_t ack)
{
	static const uint32_t lens[3] = { 1460, 1460, 1248 };
	for (int i = 0; i < 3; i++) {
		peer_seg(TCP_ACK | TCP_PSH, seq, ack, 65535, pattern, lens[i], NULL, 0);
		seq += lens[i];
	}
	return seq;
}

static struct tcp_sock *up(struct tcp_sock **l, uint32_t *iss)
{
	*iss = open_passive(l, 1000, 65535, opt_mss1460, 4);
	fnd.rx_batch = true;
	return accepted;
}

static void down(struct tcp_sock *s, struct tcp_sock *l)
{
	fnd.rx_batch = false;
	tcp_set_ack_hold_us(TCP_ACK_HOLD_US_DEFAULT);
	tcp_abort(s);
	close_listener(l);
}

Test(tcp_ackhold, held_then_carried_by_the_reply)
{
	struct tcp_sock *l;
	uint32_t iss;
	struct tcp_sock *s = up(&l, &iss);
	uint64_t holds = tcp_stats()->ack_holds;

	uint32_t end = capsule(1001, iss + 1);
	cr_assert_eq(drain(s), 4168);
	tcp_ack_hold(s);
	tcp_rx_batch_end();
	cr_assert_eq(fnd.ntx, 0, "the batch ACK waits for the answer");
	cr_assert_eq(tcp_stats()->ack_holds - holds, 1);
	advance(TCP_ACK_HOLD_US_DEFAULT * 1000ull / 2);
	cr_assert_eq(fnd.ntx, 0);
	cr_assert_eq(tcp_send_copy(s, pattern, 24), 24);
	tcp_flush(s);
	cr_assert_eq(fnd.ntx, 1, "one frame: the answer");
	cr_assert_eq(txseg(0)->len, 24);
	cr_assert_eq(txseg(0)->ack, end, "it carries the ACK");
	advance(TCP_DELACK_NS);
	cr_assert_eq(fnd.ntx, 1, "nothing more: the hold's timer went with it");
	cr_assert_eq(tcp_stats()->ack_hold_expired, 0);
	down(s, l);
}

Test(tcp_ackhold, sent_alone_when_no_answer_comes)
{
	struct tcp_sock *l;
	uint32_t iss;
	struct tcp_sock *s = up(&l, &iss);

	uint32_t end = capsule(1001, iss + 1);
	drain(s);
	tcp_ack_hold(s);
	tcp_rx_batch_end();
	advance(TCP_ACK_HOLD_US_DEFAULT * 1000ull - 1000);
	cr_assert_eq(fnd.ntx, 0, "held for net.tcp_ack_hold_us");
	advance(1000);
	cr_assert_eq(fnd.ntx, 1, "then sent alone");
	cr_assert_eq(lastseg()->len, 0);
	cr_assert_eq(lastseg()->ack, end);
	cr_assert_eq(tcp_stats()->ack_hold_expired, 1);
	cr_assert_eq(tcp_stats()->delayed_acks, 0);
	/* a shorter setting takes effect for the next hold */
	fake_netdev_clear(&fnd);
	tcp_set_ack_hold_us(50);
	end = capsule(end, iss + 1);
	drain(s);
	tcp_ack_hold(s);
	tcp_rx_batch_end();
	cr_assert_eq(fnd.ntx, 0);
	advance(50 * 1000);
	cr_assert_eq(fnd.ntx, 1);
	cr_assert_eq(lastseg()->ack, end);
	down(s, l);
}

Test(tcp_ackhold, not_held_without_a_promise_for_every_byte)
{
	struct tcp_sock *l;
	uint32_t iss;
	struct tcp_sock *s = up(&l, &iss);

	/* no promise: the ACK at the batch's end, as before */
	uint32_t end = capsule(1001, iss + 1);
	drain(s);
	tcp_rx_batch_end();
	cr_assert_eq(fnd.ntx, 1);
	cr_assert_eq(lastseg()->ack, end);
	/* a promise, then more data the user has not taken: the promise does not cover it */
	fake_netdev_clear(&fnd);
	end = capsule(end, iss + 1);
	drain(s);
	tcp_ack_hold(s);
	peer_seg(TCP_ACK | TCP_PSH, end, iss + 1, 65535, pattern, 1460, NULL, 0);
	peer_seg(TCP_ACK | TCP_PSH, end + 1460, iss + 1, 65535, pattern, 1460, NULL, 0);
	end += 2920;
	tcp_rx_batch_end();
	cr_assert_eq(fnd.ntx, 1, "ACKed at the batch's end");
	cr_assert_eq(lastseg()->ack, end);
	/* net.tcp_ack_hold_us = 0: never held */
	fake_netdev_clear(&fnd);
	drain(s);
	tcp_set_ack_hold_us(0);
	end = capsule(end, iss + 1);
	drain(s);
	tcp_ack_hold(s);
	tcp_rx_batch_end();
	cr_assert_eq(fnd.ntx, 1);
	cr_assert_eq(lastseg()->ack, end);
	cr_assert_eq(tcp_stats()->ack_holds, 0);
	down(s, l);
}

Test(tcp_ackhold, not_held_for_out_of_order_data_nor_a_fin)
{
	struct tcp_sock *l;
	uint32_t iss;
	struct tcp_sock *s = up(&l, &iss);

	/* a segment beyond a hole: a duplicate ACK at once, promise or not */
	uint32_t seq = 1001;
	peer_seg(TCP_ACK | TCP_PSH, seq + 1460, iss + 1, 65535, pattern, 1460, NULL, 0);
	tcp_ack_hold(s);
	cr_assert_eq(fnd.ntx, 1, "the duplicate ACK");
	cr_assert_eq(lastseg()->ack, seq);
	/* the hole filled: the ACK at once too */
	peer_seg(TCP_ACK | TCP_PSH, seq, iss + 1, 65535, pattern, 1460, NULL, 0);
	cr_assert_eq(fnd.ntx, 2);
	cr_assert_eq(lastseg()->ack, seq + 2920);
	drain(s);
	tcp_ack_hold(s);
	tcp_rx_batch_end();
	cr_assert_eq(fnd.ntx, 2, "nothing owed");
	/* a capsule ending with a FIN: acknowledged at once */
	fake_netdev_clear(&fnd);
	seq += 2920;
	peer_seg(TCP_ACK | TCP_PSH, seq, iss + 1, 65535, pattern, 1460, NULL, 0);
	peer_seg(TCP_ACK | TCP_PSH | TCP_FIN, seq + 1460, iss + 1, 65535, pattern, 1460, NULL, 0);
	drain(s);
	tcp_ack_hold(s);
	tcp_rx_batch_end();
	cr_assert_eq(fnd.ntx, 1);
	cr_assert_eq(lastseg()->ack, seq + 2920 + 1, "the FIN acknowledged");
	cr_assert_eq(tcp_stats()->ack_holds, 0);
	down(s, l);
}

Test(tcp_ackhold, not_held_when_the_window_must_open)
{
	struct tcp_sock *l;
	uint32_t iss;
	struct tcp_sock *s = up(&l, &iss);
	struct tcp_info ti;

	/* more than half the window used (a new connection's window: 16 segments): the ACK
	 * re-opens it, the peer may be waiting for it */
	tcp_get_info(s, &ti);
	uint32_t wnd = ti.rcv_wnd, seq = 1001;
	while (seq - 1001 <= wnd / 2) {
		peer_seg(TCP_ACK | TCP_PSH, seq, iss + 1, 65535, pattern, 1460, NULL, 0);
		seq += 1460;
	}
	cr_assert_eq(fnd.ntx, 0);
	drain(s);
	tcp_ack_hold(s);
	tcp_rx_batch_end();
	cr_assert_eq(fnd.ntx, 1, "the window update goes at the batch's end");
	cr_assert_eq(lastseg()->ack, seq);
	cr_assert_gt((uint32_t)lastseg()->wnd, wnd / 2, "and opens the window");
	cr_assert_eq(tcp_stats()->ack_holds, 0);
	down(s, l);
}

Test(tcp_ackhold, batch_ack_owed_survives_a_pass_that_sends_nothing)
{
	struct tcp_sock *l;
	uint32_t iss;
	struct tcp_sock *s = up(&l, &iss);

	/* the peer's window is closed: the answer cannot go, the batch's ACK must */
	peer_seg(TCP_ACK, 1001, iss + 1, 0, pattern, 1460, NULL, 0);
	peer_seg(TCP_ACK | TCP_PSH, 1001 + 1460, iss + 1, 0, pattern, 1460, NULL, 0);
	cr_assert_eq(drain(s), 2920);
	cr_assert_eq(tcp_send_copy(s, pattern, 24), 24);
	tcp_flush(s);
	cr_assert_eq(fnd.ntx, 0, "nothing fits a zero window");
	tcp_rx_batch_end();
	cr_assert_eq(fnd.ntx, 1, "the batch ACK goes at the batch's end, not 40 ms later");
	cr_assert_eq(txseg(0)->len, 0);
	cr_assert_eq(txseg(0)->ack, 1001 + 2920);
	down(s, l);
}

/* The hold's bound runs from the batch's clock (its last segment's arrival), not from the
 * batch's end: time spent between the two (the user's work, other pollers) counts. */
Test(tcp_ackhold, the_bound_runs_from_the_data_s_arrival)
{
	struct tcp_sock *l;
	uint32_t iss;
	struct tcp_sock *s = up(&l, &iss);
	const uint64_t hold = TCP_ACK_HOLD_US_DEFAULT * 1000ull, spent = hold / 4;

	uint32_t end = capsule(1001, iss + 1);
	advance(spent);
	drain(s);
	tcp_ack_hold(s);
	tcp_rx_batch_end();
	cr_assert_eq(fnd.ntx, 0, "held");
	advance(hold - spent - 1000);
	cr_assert_eq(fnd.ntx, 0);
	advance(1000);
	cr_assert_eq(fnd.ntx, 1, "sent alone net.tcp_ack_hold_us after the data came");
	cr_assert_eq(lastseg()->ack, end);
	cr_assert_eq(tcp_stats()->ack_hold_expired, 1);
	down(s, l);
}

/* s's window left to the peer (RCV.ADV - RCV.NXT); *unit: what one step of its WINDOW field is
 * (1 << rcv_wscale). */
static uint32_t window_left(const struct tcp_sock *s, uint32_t *unit)
{
	struct tcp_info ti;
	tcp_get_info(s, &ti);
	*unit = 1u << ti.rcv_wscale;
	return ti.rcv_wnd;
}

/* The right edge the last segment we sent advertised (its WINDOW field scaled back: the
 * field drops the low bits, so the edge may lie up to a step short of RCV.ADV). */
static uint32_t advertised_edge(const struct tcp_sock *s)
{
	uint32_t unit;
	window_left(s, &unit);
	return lastseg()->ack + lastseg()->wnd * unit;
}

/* A held ACK's answer leaves the edge where it was while three quarters of the window are
 * left (tcp_ack_held decides, tcp_advertise keeps it: no window computation), and moves it
 * as any ACK does once less is left; every hold still finds half of the window. */
Test(tcp_ackhold, the_answer_leaves_the_edge_while_three_quarters_are_left)
{
	struct tcp_sock *l;
	uint32_t iss, step, seq = 1001;
	struct tcp_sock *s = up(&l, &iss);
	uint32_t wnd = window_left(s, &step), edge = seq + wnd;
	unsigned n = 0;

	cr_assert_gt(wnd, 4u * 4168, "a window of more than four capsules");
	for (;;) {
		seq = capsule(seq, iss + 1);
		cr_assert_eq(drain(s), 4168);
		tcp_ack_hold(s);
		tcp_rx_batch_end();
		cr_assert_eq(fnd.ntx, n, "held");
		cr_assert_eq(tcp_send_copy(s, pattern, 24), 24);
		tcp_flush(s);
		cr_assert_eq(fnd.ntx, ++n, "one frame: the answer");
		cr_assert_eq(lastseg()->ack, seq);
		uint32_t e = advertised_edge(s);
		if (edge - seq < wnd - wnd / 4) {
			/* less than three quarters left at this hold: the edge moved on */
			cr_assert_geq(e, seq + wnd - step, "answer %u: the window computed again", n);
			break;
		}
		cr_assert(e <= edge && edge - e < step, "answer %u: edge %u kept (advertised %u)", n, edge, e);
	}
	cr_assert_geq(n, 2u);
	cr_assert_eq(tcp_stats()->ack_holds, n, "every ACK was held");
	down(s, l);
}
