// sources: drivers/nic/netdev.c net/net.c lib/ipv4_text.c net/arp.c net/ipv4.c net/udp.c net/tcp/tcp.c net/tcp/tcp_in.c net/tcp/tcp_isn.c net/tcp/tcp_pools.c net/tcp/tcp_admit.c tests/unit/net/fake_entropy.c net/tcp/tcp_hdr.c net/tcp/tcp_out.c net/tcp/tcp_budget.c net/tcp/tcp_sack.c net/tcp/tcp_service.c mm/pool.c mm/dma.c lib/timer.c lib/log.c tests/unit/net/fake_netdev.c
/*
 * TCP state machine (RFC 9293 3.10.7): every transition of the open and close paths,
 * resets (RFC 5961 validation and challenge ACKs), listen backlog, handshake
 * retransmission and its limits.
 */
#include "tests/unit/net/tcp/tcp_test.h"

TestSuite(tcp_state, .init = net_setup, .fini = net_teardown);

Test(tcp_state, passive_open_options)
{
	struct tcp_sock *l;
	cr_assert_eq(tcp_listen(SRV_PORT, 4, &listen_ops, NULL, &l), 0);
	struct tcp_sock *l2;
	cr_assert_eq(tcp_listen(SRV_PORT, 4, &listen_ops, NULL, &l2), -EADDRINUSE);
	peer_seg(TCP_SYN, 1000, 0, 29200, NULL, 0, opt_mss1460_ws2, sizeof(opt_mss1460_ws2));
	struct fake_parsed_tcp *s = txseg(0);
	cr_assert_eq(s->flags, TCP_SYN | TCP_ACK);
	cr_assert_eq(s->ack, 1001);
	cr_assert_eq(s->mss, 1460);
	cr_assert_eq(s->ws, TCP_RCV_WSCALE, "window scale answered because offered");
	cr_assert_eq(s->sport, SRV_PORT);
	uint32_t iss = s->seq;
	cr_assert_null(accepted);
	peer_seg(TCP_ACK, 1001, iss + 1, 1000, NULL, 0, NULL, 0);
	cr_assert_not_null(accepted);
	cr_assert_eq(tcp_state(accepted), TCP_ESTABLISHED);
	struct tcp_info i;
	tcp_get_info(accepted, &i);
	cr_assert_eq(i.snd_wnd, 4000, "window scaled by 2^2 after the handshake");
	cr_assert_eq(i.mss, 1460);
	cr_assert_eq(i.rcv_nxt, 1001);
	tcp_abort(accepted);
	close_listener(l);
}

Test(tcp_state, passive_open_without_ws)
{
	struct tcp_sock *l;
	cr_assert_eq(tcp_listen(SRV_PORT, 4, &listen_ops, NULL, &l), 0);
	peer_seg(TCP_SYN, 1000, 0, 8192, NULL, 0, NULL, 0);
	struct fake_parsed_tcp *s = txseg(0);
	cr_assert_eq(s->ws, -1, "no WS option unless the peer offered one");
	cr_assert_eq(s->mss, 1460);
	peer_seg(TCP_ACK, 1001, s->seq + 1, 8192, NULL, 0, NULL, 0);
	struct tcp_info i;
	tcp_get_info(accepted, &i);
	cr_assert_eq(i.mss, 536, "RFC 9293 default MSS without the option");
	cr_assert_eq(i.snd_wnd, 8192);
	tcp_abort(accepted);
	close_listener(l);
}

Test(tcp_state, active_open_and_active_close_to_time_wait)
{
	struct tcp_sock *s;
	cr_assert_eq(tcp_connect(PEER, PEER_PORT, &rec_ops, NULL, &s), 0);
	cr_assert_eq(tcp_state(s), TCP_SYN_SENT);
	struct fake_parsed_tcp *p = txseg(0);
	cr_assert_eq(p->flags, TCP_SYN);
	cr_assert_eq(p->mss, 1460);
	cr_assert_eq(p->ws, TCP_RCV_WSCALE);
	uint32_t iss = p->seq;
	uint16_t lport = p->sport;
	/* SYN-ACK from the peer (src port PEER_PORT, to our ephemeral port). */
	struct fake_tcp t = { .src = PEER, .dst = US, .sport = PEER_PORT, .dport = lport, .seq = 7000, .ack = iss + 1,
			      .flags = TCP_SYN | TCP_ACK, .wnd = 5000, .opts = opt_mss1460, .optlen = 4 };
	fake_netdev_inject(&fnd, frame, fake_build_tcp(frame, &t));
	cr_assert_eq(tcp_state(s), TCP_ESTABLISHED);
	cr_assert_eq(ev_count[1], 1, "TCP_EV_CONNECTED");
	p = lastseg();
	cr_assert_eq(p->flags, TCP_ACK);
	cr_assert_eq(p->ack, 7001);
	cr_assert_eq(p->seq, iss + 1);
	/* Close: FIN_WAIT_1. */
	tcp_close(s);
	p = lastseg();
	cr_assert_eq(p->flags, TCP_FIN | TCP_ACK);
	cr_assert_eq(p->seq, iss + 1);
	cr_assert_eq(tcp_state(s), TCP_FIN_WAIT_1);
	/* ACK of our FIN: FIN_WAIT_2. */
	t.flags = TCP_ACK;
	t.seq = 7001;
	t.ack = iss + 2;
	t.optlen = 0;
	fake_netdev_inject(&fnd, frame, fake_build_tcp(frame, &t));
	cr_assert_eq(tcp_state(s), TCP_FIN_WAIT_2);
	/* Peer's FIN: TIME_WAIT, ACKed at once. */
	unsigned before = fnd.ntx;
	t.flags = TCP_FIN | TCP_ACK;
	fake_netdev_inject(&fnd, frame, fake_build_tcp(frame, &t));
	cr_assert_eq(tcp_state(s), TCP_TIME_WAIT);
	cr_assert_eq(fnd.ntx, before + 1);
	cr_assert_eq(lastseg()->ack, 7002);
	/* A retransmitted FIN in TIME_WAIT is ACKed again. */
	fake_netdev_inject(&fnd, frame, fake_build_tcp(frame, &t));
	cr_assert_eq(fnd.ntx, before + 2);
	cr_assert_eq(lastseg()->ack, 7002);
	/* 2 MSL later the socket is gone (the pool check in teardown proves it). */
	advance(2 * TCP_MSL_NS + NSEC_PER_SEC);
}

Test(tcp_state, passive_close_close_wait_last_ack)
{
	struct tcp_sock *l;
	uint32_t iss = open_passive(&l, 500, 8192, opt_mss1460, 4);
	struct tcp_sock *s = accepted;
	peer_seg(TCP_FIN | TCP_ACK, 501, iss + 1, 8192, NULL, 0, NULL, 0);
	cr_assert_eq(tcp_state(s), TCP_CLOSE_WAIT);
	cr_assert(tcp_recv_eof(s));
	cr_assert(ev_last & TCP_EV_RECV);
	cr_assert_eq(lastseg()->ack, 502, "FIN acknowledged at once");
	tcp_close(s);
	cr_assert_eq(tcp_state(s), TCP_LAST_ACK);
	struct fake_parsed_tcp *p = lastseg();
	cr_assert_eq(p->flags, TCP_FIN | TCP_ACK);
	cr_assert_eq(p->seq, iss + 1);
	peer_seg(TCP_ACK, 502, iss + 2, 8192, NULL, 0, NULL, 0);
	/* freed: the teardown's pool check proves it */
	close_listener(l);
}

Test(tcp_state, simultaneous_close_closing)
{
	struct tcp_sock *l;
	uint32_t iss = open_passive(&l, 500, 8192, opt_mss1460, 4);
	struct tcp_sock *s = accepted;
	tcp_shutdown_send(s);
	cr_assert_eq(tcp_state(s), TCP_FIN_WAIT_1);
	/* The peer's FIN crosses ours: it does not ACK our FIN. */
	peer_seg(TCP_FIN | TCP_ACK, 501, iss + 1, 8192, NULL, 0, NULL, 0);
	cr_assert_eq(tcp_state(s), TCP_CLOSING);
	peer_seg(TCP_ACK, 502, iss + 2, 8192, NULL, 0, NULL, 0);
	cr_assert_eq(tcp_state(s), TCP_TIME_WAIT);
	tcp_close(s);
	advance(2 * TCP_MSL_NS + NSEC_PER_SEC);
	close_listener(l);
}

Test(tcp_state, fin_wait_1_fin_ack_to_time_wait)
{
	struct tcp_sock *l;
	uint32_t iss = open_passive(&l, 500, 8192, opt_mss1460, 4);
	struct tcp_sock *s = accepted;
	tcp_close(s);
	peer_seg(TCP_FIN | TCP_ACK, 501, iss + 2, 8192, NULL, 0, NULL, 0);
	cr_assert_eq(tcp_state(s), TCP_TIME_WAIT);
	advance(2 * TCP_MSL_NS + NSEC_PER_SEC);
	close_listener(l);
}

Test(tcp_state, fin_wait_2_times_out_when_closed)
{
	struct tcp_sock *l;
	uint32_t iss = open_passive(&l, 500, 8192, opt_mss1460, 4);
	tcp_close(accepted);
	peer_seg(TCP_ACK, 501, iss + 2, 8192, NULL, 0, NULL, 0);
	cr_assert_eq(tcp_state(accepted), TCP_FIN_WAIT_2);
	advance(TCP_FIN_WAIT_2_NS + NSEC_PER_SEC);
	close_listener(l);
}

Test(tcp_state, closed_port_answers_rst)
{
	peer_seg(TCP_SYN, 100, 0, 1000, NULL, 0, NULL, 0);
	struct fake_parsed_tcp *p = txseg(0);
	cr_assert_eq(p->flags, TCP_RST | TCP_ACK);
	cr_assert_eq(p->seq, 0);
	cr_assert_eq(p->ack, 101);
	peer_seg(TCP_ACK, 100, 5555, 1000, "abc", 3, NULL, 0);
	p = txseg(1);
	cr_assert_eq(p->flags, TCP_RST);
	cr_assert_eq(p->seq, 5555);
	peer_seg(TCP_RST, 100, 0, 1000, NULL, 0, NULL, 0);
	cr_assert_eq(fnd.ntx, 2, "never answer a RST");
	cr_assert_eq(tcp_stats()->no_socket, 3);
}

Test(tcp_state, rst_validation_rfc5961)
{
	struct tcp_sock *l;
	uint32_t iss = open_passive(&l, 500, 8192, opt_mss1460, 4);
	struct tcp_sock *s = accepted;
	/* Out of window: ignored silently. */
	peer_seg(TCP_RST, 500 + 0x10000000, 0, 0, NULL, 0, NULL, 0);
	cr_assert_eq(tcp_state(s), TCP_ESTABLISHED);
	cr_assert_eq(fnd.ntx, 0);
	/* In window but not RCV.NXT: challenge ACK, connection kept. */
	peer_seg(TCP_RST, 600, 0, 0, NULL, 0, NULL, 0);
	cr_assert_eq(tcp_state(s), TCP_ESTABLISHED);
	cr_assert_eq(fnd.ntx, 1);
	struct fake_parsed_tcp *p = lastseg();
	cr_assert_eq(p->flags, TCP_ACK);
	cr_assert_eq(p->ack, 501);
	cr_assert_eq(p->seq, iss + 1);
	cr_assert_eq(tcp_stats()->challenge_acks, 1);
	/* SYN on an established connection: challenge ACK too (RFC 5961 4.2). */
	peer_seg(TCP_SYN, 700, 0, 1000, NULL, 0, NULL, 0);
	cr_assert_eq(tcp_state(s), TCP_ESTABLISHED);
	cr_assert_eq(tcp_stats()->challenge_acks, 2);
	/* Exactly RCV.NXT: reset. */
	peer_seg(TCP_RST, 501, 0, 0, NULL, 0, NULL, 0);
	cr_assert_eq(tcp_state(s), TCP_CLOSED);
	cr_assert_eq(tcp_error(s), -ECONNRESET);
	cr_assert(ev_last & TCP_EV_CLOSED);
	tcp_close(s);
	close_listener(l);
}

Test(tcp_state, ack_of_unsent_data_is_answered_and_dropped)
{
	struct tcp_sock *l;
	uint32_t iss = open_passive(&l, 500, 8192, opt_mss1460, 4);
	peer_seg(TCP_ACK, 501, iss + 100, 8192, "zz", 2, NULL, 0);
	cr_assert_eq(fnd.ntx, 1);
	cr_assert_eq(lastseg()->ack, 501, "the data was dropped with the bad ACK");
	cr_assert_eq(tcp_recv_avail(accepted), 0);
	/* Too old an ACK (before SND.UNA - MAX.SND.WND): challenge ACK. */
	peer_seg(TCP_ACK, 501, iss - 100000, 8192, NULL, 0, NULL, 0);
	cr_assert_eq(tcp_stats()->challenge_acks, 2);
	tcp_abort(accepted);
	close_listener(l);
}

Test(tcp_state, listen_backlog_limit)
{
	struct tcp_sock *l;
	cr_assert_eq(tcp_listen(SRV_PORT, 2, &rec_ops, NULL, &l), 0);
	for (int i = 0; i < 3; i++) {
		struct fake_tcp t = { .src = PEER, .dst = US, .sport = (uint16_t)(PEER_PORT + i), .dport = SRV_PORT,
				      .seq = 100, .flags = TCP_SYN, .wnd = 1000 };
		fake_netdev_inject(&fnd, frame, fake_build_tcp(frame, &t));
	}
	/* The third SYN takes the place of the oldest half-open one (a bounded SYN cache). */
	cr_assert_eq(fnd.ntx, 3, "three SYN-ACKs");
	cr_assert_eq(tcp_stats()->syn_evicted, 1);
	cr_assert_eq(tcp_stats()->syn_backlog_drops, 0);
	struct fake_tcp t = { .src = PEER, .dst = US, .sport = PEER_PORT, .dport = SRV_PORT, .seq = 101,
			      .ack = txseg(0)->seq + 1, .flags = TCP_ACK, .wnd = 1000 };
	fake_netdev_inject(&fnd, frame, fake_build_tcp(frame, &t));
	cr_assert_eq(lastseg()->flags, TCP_RST, "the evicted one is gone: its ACK gets a reset");
	/* Closing the listener resets its half-open children. */
	close_listener(l);
}

Test(tcp_state, syn_received_rst_frees_child)
{
	struct tcp_sock *l;
	cr_assert_eq(tcp_listen(SRV_PORT, 2, &listen_ops, NULL, &l), 0);
	peer_seg(TCP_SYN, 100, 0, 1000, NULL, 0, NULL, 0);
	peer_seg(TCP_RST, 101, 0, 0, NULL, 0, NULL, 0);
	cr_assert_null(accepted);
	/* A retransmitted SYN gets the SYN-ACK again... from a fresh child. */
	peer_seg(TCP_SYN, 100, 0, 1000, NULL, 0, NULL, 0);
	cr_assert_eq(lastseg()->flags, TCP_SYN | TCP_ACK);
	close_listener(l);
}

Test(tcp_state, syn_ack_retransmitted_then_given_up)
{
	struct tcp_sock *l;
	cr_assert_eq(tcp_listen(SRV_PORT, 2, &listen_ops, NULL, &l), 0);
	peer_seg(TCP_SYN, 100, 0, 1000, NULL, 0, NULL, 0);
	uint32_t iss = txseg(0)->seq;
	advance(TCP_RTO_INITIAL_NS);
	cr_assert_eq(fnd.ntx, 2);
	cr_assert_eq(txseg(1)->seq, iss);
	cr_assert_eq(txseg(1)->flags, TCP_SYN | TCP_ACK);
	advance(2 * TCP_RTO_INITIAL_NS);
	cr_assert_eq(fnd.ntx, 3, "backed off to 2 s");
	/* A duplicate SYN gets the SYN-ACK repeated. */
	peer_seg(TCP_SYN, 100, 0, 1000, NULL, 0, NULL, 0);
	cr_assert_eq(fnd.ntx, 4);
	advance_long(200 * NSEC_PER_SEC);
	cr_assert_eq(lastseg()->flags & TCP_RST, TCP_RST, "gave up with a reset");
	cr_assert_null(accepted);
	close_listener(l);
}

Test(tcp_state, connect_refused_and_timeout)
{
	struct tcp_sock *s;
	cr_assert_eq(tcp_connect(PEER, PEER_PORT, &rec_ops, NULL, &s), 0);
	struct fake_parsed_tcp *p = txseg(0);
	struct fake_tcp t = { .src = PEER, .dst = US, .sport = PEER_PORT, .dport = p->sport, .seq = 0,
			      .ack = p->seq + 1, .flags = TCP_RST | TCP_ACK };
	fake_netdev_inject(&fnd, frame, fake_build_tcp(frame, &t));
	cr_assert_eq(tcp_state(s), TCP_CLOSED);
	cr_assert_eq(tcp_error(s), -ECONNREFUSED);
	tcp_close(s);
	fake_netdev_clear(&fnd);
	cr_assert_eq(tcp_connect(PEER, PEER_PORT, &rec_ops, NULL, &s), 0);
	uint64_t t0 = clock_now_ns();
	while (tcp_state(s) != TCP_CLOSED && clock_now_ns() - t0 < 300 * NSEC_PER_SEC) {
		if ((clock_now_ns() - t0) % (30 * NSEC_PER_SEC) == 0)
			peer_arp();
		advance(NSEC_PER_SEC / 10);
	}
	cr_assert_eq(tcp_state(s), TCP_CLOSED);
	cr_assert_eq(tcp_error(s), -ETIMEDOUT);
	/* SYNs at 0, 1, 3, 7, 15, 31 s: 1 + TCP_SYN_RETRIES. */
	cr_assert_eq(count_tcp(TCP_SYN), 1 + TCP_SYN_RETRIES);
	tcp_close(s);
}

Test(tcp_state, simultaneous_open)
{
	struct tcp_sock *s;
	cr_assert_eq(tcp_connect(PEER, PEER_PORT, &rec_ops, NULL, &s), 0);
	struct fake_parsed_tcp *p = txseg(0);
	uint32_t iss = p->seq;
	struct fake_tcp t = { .src = PEER, .dst = US, .sport = PEER_PORT, .dport = p->sport, .seq = 9000,
			      .flags = TCP_SYN, .wnd = 4000, .opts = opt_mss1460, .optlen = 4 };
	fake_netdev_inject(&fnd, frame, fake_build_tcp(frame, &t));
	cr_assert_eq(tcp_state(s), TCP_SYN_RECEIVED);
	p = lastseg();
	cr_assert_eq(p->flags, TCP_SYN | TCP_ACK);
	cr_assert_eq(p->seq, iss);
	cr_assert_eq(p->ack, 9001);
	t.seq = 9001;
	t.ack = iss + 1;
	t.flags = TCP_ACK;
	t.optlen = 0;
	fake_netdev_inject(&fnd, frame, fake_build_tcp(frame, &t));
	cr_assert_eq(tcp_state(s), TCP_ESTABLISHED);
	cr_assert_eq(ev_count[1], 1);
	tcp_abort(s);
}

static void close_on_accept(struct tcp_sock *l, void *ctx, unsigned ev)
{
	struct tcp_sock *c;
	(void)ctx;
	if (ev & TCP_EV_ACCEPT)
		while ((c = tcp_accept(l)))
			tcp_close(c);
}
static const struct tcp_ops close_on_accept_ops = { close_on_accept };

Test(tcp_state, accept_handler_may_close_the_child)
{
	struct tcp_sock *l;
	cr_assert_eq(tcp_listen(SRV_PORT, 2, &close_on_accept_ops, NULL, &l), 0);
	peer_seg(TCP_SYN, 100, 0, 1000, NULL, 0, NULL, 0);
	uint32_t iss = txseg(0)->seq;
	/* The handshake ACK carries data: the child is closed in the accept handler while
	 * data is queued, so it is reset. */
	peer_seg(TCP_ACK, 101, iss + 1, 1000, "hello", 5, NULL, 0);
	cr_assert_eq(lastseg()->flags & TCP_RST, TCP_RST);
	/* Without data: a graceful FIN. */
	fake_netdev_clear(&fnd);
	struct fake_tcp t = { .src = PEER, .dst = US, .sport = PEER_PORT + 1, .dport = SRV_PORT, .seq = 100,
			      .flags = TCP_SYN, .wnd = 1000 };
	fake_netdev_inject(&fnd, frame, fake_build_tcp(frame, &t));
	iss = txseg(0)->seq;
	t.seq = 101;
	t.ack = iss + 1;
	t.flags = TCP_ACK;
	fake_netdev_inject(&fnd, frame, fake_build_tcp(frame, &t));
	cr_assert_eq(lastseg()->flags, TCP_FIN | TCP_ACK);
	t.flags = TCP_FIN | TCP_ACK;
	t.ack = iss + 2;
	fake_netdev_inject(&fnd, frame, fake_build_tcp(frame, &t));
	advance(2 * TCP_MSL_NS + NSEC_PER_SEC);
	close_listener(l);
}

Test(tcp_state, data_and_fin_before_accept_are_announced)
{
	struct tcp_sock *l, *c;
	cr_assert_eq(tcp_listen(SRV_PORT, 2, &rec_ops, NULL, &l), 0);
	peer_seg(TCP_SYN, 100, 0, 1000, NULL, 0, NULL, 0);
	uint32_t iss = txseg(0)->seq;
	peer_seg(TCP_ACK, 101, iss + 1, 1000, NULL, 0, NULL, 0);
	peer_seg(TCP_ACK | TCP_FIN, 101, iss + 1, 1000, "abc", 3, NULL, 0);
	cr_assert_eq(ev_count[0], 1, "the listener heard TCP_EV_ACCEPT once, %u", ev_count[0]);
	cr_assert_eq(ev_count[2], 0, "nothing for the child before accept");
	c = tcp_accept(l);
	cr_assert_not_null(c);
	cr_assert_null(tcp_accept(l));
	cr_assert_eq(tcp_state(c), TCP_CLOSE_WAIT);
	ev_last = 0;
	tcp_set_ops(c, &rec_ops, NULL);
	cr_assert(ev_last & TCP_EV_RECV);
	cr_assert(ev_last & TCP_EV_SENT);
	uint8_t b[8];
	cr_assert_eq(tcp_recv_copy(c, b, sizeof(b)), 3);
	cr_assert(tcp_recv_eof(c));
	tcp_close(c);
	peer_seg(TCP_ACK, 105, iss + 2, 1000, NULL, 0, NULL, 0);
	close_listener(l);
}

static void seg_port(uint16_t sport, uint8_t flags, uint32_t seq, uint32_t ack)
{
	struct fake_tcp t = { .src = PEER, .dst = US, .sport = sport, .dport = SRV_PORT, .seq = seq, .ack = ack,
			      .flags = flags, .wnd = 8192 };
	size_t n = fake_build_tcp(frame, &t);
	cr_assert_eq(fake_netdev_inject(&fnd, frame, n), 0);
}

/* RFC 5961 section 7 / CVE-2016-5696: the challenge-ACK limit is per socket and drawn at
 * random per window: exhausting it on one connection leaves another's untouched, and the
 * count a host sees is not the constant 100. */
Test(tcp_state, challenge_ack_limit_per_socket_randomised)
{
	struct tcp_sock *l;
	open_passive(&l, 500, 8192, opt_mss1460, 4);
	struct tcp_sock *a = accepted;
	seg_port(PEER_PORT + 1, TCP_SYN, 9000, 0);
	uint32_t iss_b = lastseg()->seq;
	seg_port(PEER_PORT + 1, TCP_ACK, 9001, iss_b + 1);
	struct tcp_sock *b = accepted;
	cr_assert_neq(a, b);
	unsigned seen[2];
	for (unsigned w = 0; w < 2; w++) {
		fake_netdev_clear(&fnd);
		for (unsigned i = 0; i < 3 * TCP_CHALLENGE_ACKS_PER_SEC; i++)
			peer_seg(TCP_RST, 600 + i, 0, 0, NULL, 0, NULL, 0); /* in window, not RCV.NXT */
		seen[w] = fnd.ntx;
		cr_assert_geq(seen[w], TCP_CHALLENGE_ACKS_PER_SEC / 2);
		cr_assert_leq(seen[w], TCP_CHALLENGE_ACKS_PER_SEC * 3 / 2);
		/* The other connection still gets its challenge ACK in the same second. */
		fake_netdev_clear(&fnd);
		seg_port(PEER_PORT + 1, TCP_RST, 9100, 0);
		cr_assert_eq(fnd.ntx, 1, "b's challenge ACK is not limited by a's flood");
		cr_assert_eq(tcp_state(b), TCP_ESTABLISHED);
		advance(NSEC_PER_SEC);
	}
	cr_assert(seen[0] != TCP_CHALLENGE_ACKS_PER_SEC || seen[1] != TCP_CHALLENGE_ACKS_PER_SEC,
		  "limits %u and %u: not randomised", seen[0], seen[1]);
	cr_assert_eq(tcp_state(a), TCP_ESTABLISHED);
	tcp_abort(a);
	tcp_abort(b);
	close_listener(l);
}
