// sources: drivers/nic/netdev.c net/net.c lib/ipv4_text.c net/arp.c net/ipv4.c net/udp.c net/tcp/tcp.c net/tcp/tcp_in.c net/tcp/tcp_isn.c net/tcp/tcp_pools.c net/tcp/tcp_admit.c tests/unit/net/fake_entropy.c net/tcp/tcp_hdr.c net/tcp/tcp_out.c net/tcp/tcp_budget.c net/tcp/tcp_sack.c net/tcp/tcp_service.c mm/pool.c mm/dma.c lib/timer.c lib/log.c tests/unit/net/fake_netdev.c
/*
 * The ACK of everything sent (tcp_in.c rx_ack_all): a pure ACK of SND.MAX on a connection
 * with nothing else to do takes a path of its own past header prediction. It must leave
 * the connection as header prediction would: the send queue freed (entries the device
 * still holds when their frame completes), SND.UNA moved, the RTT sampled, the congestion
 * window grown (slow start and congestion avoidance), the retransmission timer stopped,
 * the peer's clock taken, and one TCP_EV_SENT.
 */
#include "tests/unit/net/tcp/tcp_test.h"


static struct netdev_frag_owner counting_owner = { "count", frag_count_release };

/* A zero-copy fragment of n bytes (host memory, counted when released). */
static struct netdev_frag zc_frag(const uint8_t *p, uint32_t n)
{
	struct netdev_frag f;
	memset(&f, 0, sizeof(f));
	f.addr = dma_addr_host((void *)p);
	f.len = n;
	f.owner = &counting_owner;
	return f;
}

/* Queue a 24-byte copy (a PDU header) and n zero-copy bytes, flushed: one segment. */
static void send_pdu(struct tcp_sock *s, const uint8_t *data, uint32_t n)
{
	struct netdev_frag f = zc_frag(data, n);
	cr_assert_eq(tcp_send_copy(s, data, 24), 24);
	cr_assert_eq(tcp_send_frags(s, &f, 1), 0);
	tcp_flush(s);
}

static uint8_t data[2048];

/* A connection (the listener in *l, our ISS in *iss) whose peer sent 100 bytes (its
 * first data segment: the connection's header image is built, tcp_rx_flow_bare matches
 * its ACKs from now on) that the user read. Returns the socket; *seq: the peer's next
 * sequence number. */
static struct tcp_sock *open_with_request(struct tcp_sock **l, uint32_t *iss, uint32_t *seq)
{
	uint8_t buf[100];
	*iss = open_passive(l, 1000, 65535, opt_mss1460, 4);
	peer_seg(TCP_ACK | TCP_PSH, 1001, *iss + 1, 65535, data, sizeof(buf), NULL, 0);
	cr_assert_eq(tcp_recv_copy(accepted, buf, sizeof(buf)), (long)sizeof(buf));
	*seq = 1001 + (uint32_t)sizeof(buf);
	return accepted;
}

/* The end of every case: the connection and the listener closed. */
static void close_both(struct tcp_sock *s, struct tcp_sock *l)
{
	tcp_abort(s);
	close_listener(l);
}

/* What an ACK of everything sent (una, 1024 bytes timed 3 ms before) leaves, whichever path
 * took it: the queue freed, its one zero-copy fragment released (rel0 before), no timer,
 * the RTT sampled, slow start by the bytes acknowledged (cwnd before), the peer's clock. */
static void assert_all_acked(const struct tcp_sock *s, uint32_t una, unsigned rel0, uint32_t cwnd)
{
	cr_assert_eq(s->snd_una, una);
	cr_assert_eq(s->sndq_bytes, 0);
	cr_assert(list_empty(&s->sndq));
	cr_assert_null(s->snd_cursor);
	cr_assert_eq(s->sndents, 0, "every entry back to the pool");
	cr_assert_eq(frags_released, rel0 + 1, "the zero-copy fragment back to its owner once");
	cr_assert_not(s->t_rexmit.armed, "nothing in flight: no retransmission timer");
	cr_assert(s->rtt_valid && !s->timing, "the RTT sampled");
	cr_assert_eq(s->srtt_ns, 3 * NSEC_PER_MSEC);
	cr_assert_eq(s->cwnd, cwnd + 1024, "slow start by the bytes acknowledged");
	cr_assert_eq(s->last_rx_ns, clock_now_ns(), "the peer's clock");
	cr_assert_eq(s->snd_wl2, una);
}

static void ack_of_everything_sent_frees_the_queue_with_one_sent_event(void)
{
	struct tcp_sock *l;
	uint32_t iss, seq;
	struct tcp_sock *s = open_with_request(&l, &iss, &seq);
	s->cwnd = 2 * 1024; /* (the 1,024 bytes in flight use the window: it grows, RFC 7661) */
	uint32_t cwnd = s->cwnd, sent0 = ev_count[3], rel0 = frags_released;
	uint64_t segs = tcp_stats()->segs_in, own = s->segs_in;

	fake_netdev_clear(&fnd);
	send_pdu(s, data, 1000);
	cr_assert_eq(fnd.ntx, 1, "one segment");
	cr_assert_eq(txseg(0)->ack, seq, "carrying the request's ACK");
	cr_assert_eq(s->snd_max, iss + 1 + 1024);
	cr_assert(s->t_rexmit.armed);
	cr_assert(s->timing, "the segment is timed");
	advance(3 * NSEC_PER_MSEC);
	peer_seg(TCP_ACK, seq, iss + 1 + 1024, 65535, NULL, 0, NULL, 0);
	assert_all_acked(s, iss + 1 + 1024, rel0, cwnd);
	cr_assert_eq(ev_count[3], sent0 + 1, "one TCP_EV_SENT");
	cr_assert_eq(ev_last, TCP_EV_SENT);
	cr_assert_eq(tcp_stats()->segs_in, segs + 1);
	cr_assert_eq(s->segs_in, own + 1);
	cr_assert_eq(fnd.ntx, 1, "nothing sent in answer");
	/* a second ACK of the same number (the general path): no event */
	peer_seg(TCP_ACK, seq, iss + 1 + 1024, 65535, NULL, 0, NULL, 0);
	cr_assert_eq(ev_count[3], sent0 + 1);
	cr_assert_eq(s->dupacks, 0, "nothing in flight: not a duplicate ACK (RFC 5681)");
	close_both(s, l);
}

/* An entry whose frame the device still holds when the ACK comes is freed when the frame
 * completes, its fragment released then, once. */
static void entries_the_device_holds_go_when_their_frame_completes(void)
{
	struct tcp_sock *l;
	uint32_t iss, seq;
	struct tcp_sock *s = open_with_request(&l, &iss, &seq);
	uint32_t rel0 = frags_released, sent0 = ev_count[3];

	fnd.tx_late = true;
	send_pdu(s, data, 1000);
	peer_seg(TCP_ACK, seq, iss + 1 + 1024, 65535, NULL, 0, NULL, 0);
	cr_assert_eq(ev_count[3], sent0 + 1);
	cr_assert(list_empty(&s->sndq));
	cr_assert_eq(s->sndq_bytes, 0);
	cr_assert_eq(frags_released, rel0, "the device still holds the fragment");
	cr_assert_gt(s->sndents, 0, "entries still referred to by the frame");
	cr_assert_eq(fake_netdev_tx_complete(&fnd), 1);
	cr_assert_eq(frags_released, rel0 + 1);
	cr_assert_eq(s->sndents, 0);
	fnd.tx_late = false;
	close_both(s, l);
}

/* Past ssthresh the window grows by one MSS per window of bytes acknowledged. */
static void congestion_avoidance_counts_the_bytes_acknowledged(void)
{
	struct tcp_sock *l;
	uint32_t iss, seq;
	struct tcp_sock *s = open_with_request(&l, &iss, &seq);
	uint32_t una = iss + 1;

	s->ssthresh = s->cwnd = 2 * 1024; /* (congestion avoidance from here, the window in use) */
	uint32_t cwnd = s->cwnd;
	for (unsigned k = 0; k * 1024 < cwnd; k++) {
		cr_assert_eq(s->cwnd, cwnd, "not before a window's worth (%u)", k);
		send_pdu(s, data, 1000);
		una += 1024;
		peer_seg(TCP_ACK, seq, una, 65535, NULL, 0, NULL, 0);
		cr_assert_eq(s->snd_una, una);
	}
	cr_assert_eq(s->cwnd, cwnd + 1460, "one MSS after a window's worth of bytes");
	cr_assert_lt(s->cwnd_acked, cwnd);
	close_both(s, l);
}

/* A data segment at RCV.NXT that acknowledges everything sent (a host's next command
 * carrying the ACK of our last response: rx_ack_all_data with the NIC's verdicts): the send
 * queue freed, SND.UNA moved, the RTT sampled, the window grown, the retransmission timer
 * stopped, TCP_EV_SENT at once, and the data queued with TCP_EV_RECV at the batch's end and
 * its ACK delayed, as header prediction leaves it. */
static void data_with_the_ack_of_everything_sent_does_both(void)
{
	struct tcp_sock *l;
	uint32_t iss, seq;
	struct tcp_sock *s = open_with_request(&l, &iss, &seq);
	s->cwnd = 2 * 1024; /* (the window in use: it grows) */
	uint32_t cwnd = s->cwnd, sent0 = ev_count[3], recv0 = ev_count[2], rel0 = frags_released;
	uint64_t segs = tcp_stats()->segs_in, own = s->segs_in;
	uint8_t got[300];

	fake_netdev_clear(&fnd);
	send_pdu(s, data, 1000);
	cr_assert_eq(fnd.ntx, 1, "one segment");
	cr_assert(s->timing, "the segment is timed");
	advance(3 * NSEC_PER_MSEC);
	peer_seg(TCP_ACK | TCP_PSH, seq, iss + 1 + 1024, 65535, data + 7, 300, NULL, 0);
	assert_all_acked(s, iss + 1 + 1024, rel0, cwnd);
	cr_assert_eq(s->snd_wl1, seq);
	cr_assert_eq(s->rcv_nxt, seq + 300, "the data queued");
	cr_assert_eq(s->segs_unacked, 1, "its ACK delayed");
	cr_assert(s->t_delack.armed);
	cr_assert_eq(ev_count[3], sent0 + 1, "one TCP_EV_SENT");
	cr_assert_eq(ev_count[2], recv0 + 1, "one TCP_EV_RECV");
	cr_assert_eq(ev_last, TCP_EV_RECV, "the data event last, at the batch's end");
	cr_assert_null(tcp_rx_gro, "the batch ended");
	cr_assert_eq(tcp_stats()->segs_in, segs + 1);
	cr_assert_eq(s->segs_in, own + 1);
	cr_assert_eq(fnd.ntx, 1, "nothing sent in answer yet");
	cr_assert_eq(tcp_recv_copy(s, got, sizeof(got)), (long)sizeof(got));
	cr_assert_arr_eq(got, data + 7, sizeof(got));
	/* the next one, full-sized, with the same ACK (header prediction's data path) */
	peer_seg(TCP_ACK, seq + 300, iss + 1 + 1024, 65535, data, 1460, NULL, 0);
	cr_assert_eq(s->rcv_nxt, seq + 1760);
	cr_assert_eq(ev_count[3], sent0 + 1, "no second TCP_EV_SENT");
	close_both(s, l);
}

/* Data that acknowledges everything sent while the window changes, or while part of what
 * was sent stays unacknowledged, is header prediction's (or the full path's): the same
 * state as before, one TCP_EV_SENT each. */
static void data_with_another_new_ack_takes_the_general_path(void)
{
	struct tcp_sock *l;
	uint32_t iss, seq;
	struct tcp_sock *s = open_with_request(&l, &iss, &seq);
	uint32_t sent0 = ev_count[3];

	send_pdu(s, data, 1000);
	send_pdu(s, data, 1000);
	/* half of it */
	peer_seg(TCP_ACK, seq, iss + 1 + 1024, 65535, data, 100, NULL, 0);
	cr_assert_eq(s->snd_una, iss + 1 + 1024);
	cr_assert_eq(s->sndq_bytes, 1024, "the second PDU stays queued");
	cr_assert(s->t_rexmit.armed, "the rest in flight");
	cr_assert_eq(ev_count[3], sent0 + 1);
	cr_assert_eq(s->rcv_nxt, seq + 100);
	/* the rest with a smaller window */
	peer_seg(TCP_ACK, seq + 100, iss + 1 + 2048, 30000, data, 100, NULL, 0);
	cr_assert_eq(s->snd_una, iss + 1 + 2048);
	cr_assert_eq(s->snd_wnd, 30000);
	cr_assert_eq(s->sndq_bytes, 0);
	cr_assert_not(s->t_rexmit.armed);
	cr_assert_eq(ev_count[3], sent0 + 2);
	cr_assert_eq(s->rcv_nxt, seq + 200);
	close_both(s, l);
}

/* In a receive batch: a data segment, then one that also acknowledges everything sent (the
 * batch gathers for the connection already): TCP_EV_SENT at once, the RTT sampled on the
 * second segment's clock, both segments' data with one TCP_EV_RECV at the batch's end. */
static void data_with_the_ack_of_everything_sent_within_a_batch(void)
{
	struct tcp_sock *l;
	uint32_t iss, seq;
	struct tcp_sock *s = open_with_request(&l, &iss, &seq);
	uint32_t sent0 = ev_count[3], recv0 = ev_count[2];

	send_pdu(s, data, 1000);
	fnd.rx_batch = true;
	advance(2 * NSEC_PER_MSEC);
	peer_seg(TCP_ACK, seq, iss + 1, 65535, data, 1460, NULL, 0);
	cr_assert_eq(tcp_rx_gro, s, "the batch gathers for s");
	advance(1 * NSEC_PER_MSEC);
	peer_seg(TCP_ACK | TCP_PSH, seq + 1460, iss + 1 + 1024, 65535, data, 200, NULL, 0);
	cr_assert_eq(ev_count[3], sent0 + 1, "TCP_EV_SENT at once");
	cr_assert_eq(ev_count[2], recv0, "the data event waits for the batch's end");
	cr_assert_eq(s->snd_una, iss + 1 + 1024);
	cr_assert_eq(s->sndents, 0);
	cr_assert_not(s->t_rexmit.armed);
	cr_assert_eq(s->srtt_ns, 3 * NSEC_PER_MSEC, "sampled on this segment's clock");
	cr_assert_eq(s->last_rx_ns, clock_now_ns());
	cr_assert_eq(s->rcv_nxt, seq + 1660);
	cr_assert_eq(s->segs_unacked, 2);
	fake_netdev_rx_end(&fnd);
	fnd.rx_batch = false;
	cr_assert_eq(ev_count[2], recv0 + 1, "one TCP_EV_RECV for both");
	cr_assert_null(tcp_rx_gro);
	cr_assert_eq(tcp_recv_avail(s), 1660);
	close_both(s, l);
}

/* Each case twice: without the NIC's checksum verdicts (the ACK through the stack's layers
 * and header prediction) and with them (tcp_rx_flow_bare takes it, rx_ack_all): the same
 * state, events and releases. */
static void csum_setup(void)
{
	net_test_start(NETDEV_F_RX_SPLIT | NETDEV_F_RX_CSUM);
}
TestSuite(tcp_ack_all, .init = net_setup, .fini = net_teardown);
TestSuite(tcp_ack_all_flow, .init = csum_setup, .fini = net_teardown);
Test(tcp_ack_all, ack_of_everything_sent_frees_the_queue_with_one_sent_event)
{
	ack_of_everything_sent_frees_the_queue_with_one_sent_event();
}
Test(tcp_ack_all_flow, ack_of_everything_sent_frees_the_queue_with_one_sent_event)
{
	ack_of_everything_sent_frees_the_queue_with_one_sent_event();
}
Test(tcp_ack_all, entries_the_device_holds_go_when_their_frame_completes)
{
	entries_the_device_holds_go_when_their_frame_completes();
}
Test(tcp_ack_all_flow, entries_the_device_holds_go_when_their_frame_completes)
{
	entries_the_device_holds_go_when_their_frame_completes();
}
Test(tcp_ack_all, congestion_avoidance_counts_the_bytes_acknowledged)
{
	congestion_avoidance_counts_the_bytes_acknowledged();
}
Test(tcp_ack_all_flow, congestion_avoidance_counts_the_bytes_acknowledged)
{
	congestion_avoidance_counts_the_bytes_acknowledged();
}
Test(tcp_ack_all, data_with_the_ack_of_everything_sent_does_both)
{
	data_with_the_ack_of_everything_sent_does_both();
}
Test(tcp_ack_all_flow, data_with_the_ack_of_everything_sent_does_both)
{
	data_with_the_ack_of_everything_sent_does_both();
}
Test(tcp_ack_all, data_with_another_new_ack_takes_the_general_path)
{
	data_with_another_new_ack_takes_the_general_path();
}
Test(tcp_ack_all_flow, data_with_another_new_ack_takes_the_general_path)
{
	data_with_another_new_ack_takes_the_general_path();
}
Test(tcp_ack_all, data_with_the_ack_of_everything_sent_within_a_batch)
{
	data_with_the_ack_of_everything_sent_within_a_batch();
}
Test(tcp_ack_all_flow, data_with_the_ack_of_everything_sent_within_a_batch)
{
	data_with_the_ack_of_everything_sent_within_a_batch();
}
