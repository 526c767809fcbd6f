// sources: drivers/nic/netdev.c net/net.c lib/ipv4_text.c net/arp.c net/ipv4.c net/udp.c net/tcp/tcp.c net/tcp/tcp_in.c net/tcp/tcp_isn.c net/tcp/tcp_pools.c net/tcp/tcp_admit.c tests/unit/net/fake_entropy.c net/tcp/tcp_hdr.c net/tcp/tcp_out.c net/tcp/tcp_budget.c net/tcp/tcp_sack.c net/tcp/tcp_service.c mm/pool.c mm/dma.c lib/timer.c lib/log.c tests/unit/net/fake_netdev.c
/*
 * One receive batch's in-order segments of a socket (tcp_in.c rx_gro, tcp.h tcp_rx_flush):
 * their data event (TCP_EV_RECV) goes once, at the batch's end (netdev_rx_end, or
 * tcp_rx_batch_end for a batch nobody ended), before its ACK is decided; what must not
 * wait (acknowledged bytes, a FIN, a RST, another socket's segment) goes at once, after
 * the data event gathered so far.
 */
#include "tests/unit/net/tcp/tcp_test.h"

TestSuite(tcp_gro, .init = net_setup, .fini = net_teardown);

static uint8_t data[8192];

/* The events in the order they came: socket and bits. */
static struct {
	struct tcp_sock *s;
	unsigned ev;
	size_t avail; /* tcp_recv_avail when it came */
} evlog[64];
static unsigned nlog;

static void log_ev(struct tcp_sock *s, void *ctx, unsigned ev)
{
	(void)ctx;
	if (nlog < 64)
		evlog[nlog++] = (typeof(evlog[0])){ s, ev, tcp_recv_avail(s) };
}
static const struct tcp_ops log_ops = { log_ev };

static unsigned count_ev(struct tcp_sock *s, unsigned bit)
{
	unsigned n = 0;
	for (unsigned i = 0; i < nlog; i++)
		if ((!s || evlog[i].s == s) && (evlog[i].ev & bit))
			n++;
	return n;
}

/* A segment from the peer's port sport. */
static void seg_from(uint16_t sport, uint8_t flags, uint32_t seq, uint32_t ack, size_t len)
{
	struct fake_tcp t = { .src = PEER, .dst = US, .sport = sport, .dport = SRV_PORT, .seq = seq, .ack = ack,
			      .flags = flags, .wnd = 65535, .payload = data, .len = len };
	size_t n = fake_build_tcp(frame, &t);
	cr_assert_eq(fake_netdev_inject(&fnd, frame, n), 0);
}

/* A connection from the peer's port sport to the listener (SRV_PORT) with our ISS in
 * *iss (peer ISS 1000), its events logged. */
static struct tcp_sock *open_from(uint16_t sport, uint32_t *iss)
{
	struct fake_tcp t = { .src = PEER, .dst = US, .sport = sport, .dport = SRV_PORT, .seq = 1000,
			      .flags = TCP_SYN, .wnd = 65535, .opts = opt_mss1460, .optlen = 4 };
	size_t n = fake_build_tcp(frame, &t);
	accepted = NULL;
	fake_netdev_clear(&fnd);
	cr_assert_eq(fake_netdev_inject(&fnd, frame, n), 0);
	*iss = lastseg()->seq;
	seg_from(sport, TCP_ACK, 1001, *iss + 1, 0);
	cr_assert_not_null(accepted);
	tcp_set_ops(accepted, &log_ops, NULL);
	fake_netdev_clear(&fnd);
	return accepted;
}

static void drain(struct tcp_sock *s)
{
	struct netdev_frag f[16];
	int n;
	while ((n = tcp_recv_frags(s, f, 16, SIZE_MAX)) > 0)
		for (int i = 0; i < n; i++)
			netdev_frag_release(&f[i]);
}

static struct tcp_sock *up(struct tcp_sock **l, uint32_t *iss)
{
	nlog = 0;
	cr_assert_eq(tcp_listen(SRV_PORT, 8, &listen_ops, NULL, l), 0);
	struct tcp_sock *s = open_from(PEER_PORT, iss);
	fnd.rx_batch = true;
	return s;
}

static void down(struct tcp_sock *l, struct tcp_sock *s)
{
	fnd.rx_batch = false;
	if (s) {
		drain(s);
		tcp_abort(s);
	}
	close_listener(l);
}

/* N in-order segments in one batch: one data event, after the last, with all their bytes;
 * none before the batch ends; then the batch's one ACK. */
static void one_data_event_per_batch_of_in_order_segments(void)
{
	struct tcp_sock *l;
	uint32_t iss;
	struct tcp_sock *s = up(&l, &iss);
	uint32_t seq = 1001;
	for (int i = 0; i < 8; i++, seq += 1460)
		seg_from(PEER_PORT, i == 7 ? TCP_ACK | TCP_PSH : TCP_ACK, seq, iss + 1, 1460);
	cr_assert_eq(nlog, 0, "no event inside the batch");
	cr_assert_eq(tcp_recv_avail(s), 8 * 1460, "every segment queued");
	fake_netdev_rx_end(&fnd);
	cr_assert_eq(nlog, 1, "one event for the batch");
	cr_assert_eq(evlog[0].ev, TCP_EV_RECV);
	cr_assert_eq(evlog[0].avail, 8 * 1460, "it comes with every byte of the batch");
	cr_assert_eq(fnd.ntx, 0, "the ACK is decided at tcp_rx_batch_end");
	tcp_rx_batch_end();
	cr_assert_eq(count_tcp(TCP_ACK), 1, "one ACK for the batch");
	cr_assert_eq(lastseg()->ack, seq);
	cr_assert_eq(nlog, 1, "no second event");

	/* the next batch: its own event */
	seg_from(PEER_PORT, TCP_ACK, seq, iss + 1, 1000);
	seq += 1000;
	seg_from(PEER_PORT, TCP_ACK, seq, iss + 1, 1000);
	fake_netdev_rx_end(&fnd);
	cr_assert_eq(nlog, 2);
	cr_assert_eq(evlog[1].avail, 8 * 1460 + 2000);
	tcp_rx_batch_end();
	down(l, s);
}

/* A batch nobody ended (no netdev_rx_end): tcp_rx_batch_end delivers the event before it
 * decides the ACK, and the poll loop's end-of-pass poller calls it. */
static void the_event_is_not_delayed_past_the_batch_end(void)
{
	struct tcp_sock *l;
	uint32_t iss;
	struct tcp_sock *s = up(&l, &iss);
	seg_from(PEER_PORT, TCP_ACK, 1001, iss + 1, 1460);
	seg_from(PEER_PORT, TCP_ACK, 2461, iss + 1, 1460);
	cr_assert_eq(nlog, 0);
	tcp_rx_batch_end();
	cr_assert_eq(nlog, 1, "tcp_rx_batch_end delivered it");
	cr_assert_eq(evlog[0].avail, 2920);
	cr_assert_eq(count_tcp(TCP_ACK), 1);

	seg_from(PEER_PORT, TCP_ACK, 3921, iss + 1, 1460);
	cr_assert_eq(nlog, 1);
	poll_pass();
	cr_assert_eq(nlog, 2, "the end-of-pass poller delivered it");
	down(l, s);
}

/* Acknowledged bytes (TCP_EV_SENT) go at once; the data event waits for the batch's end. */
static void sent_goes_at_once_recv_at_the_end(void)
{
	struct tcp_sock *l;
	uint32_t iss;
	struct tcp_sock *s = up(&l, &iss);
	cr_assert_eq(tcp_send_copy(s, data, 100), 100);
	tcp_flush(s);
	cr_assert_eq(count_tcp(0), 1);
	seg_from(PEER_PORT, TCP_ACK, 1001, iss + 101, 1460); /* acknowledges our 100 bytes */
	cr_assert_eq(nlog, 1, "SENT at once");
	cr_assert_eq(evlog[0].ev, TCP_EV_SENT);
	seg_from(PEER_PORT, TCP_ACK, 2461, iss + 101, 1460);
	cr_assert_eq(nlog, 1);
	fake_netdev_rx_end(&fnd);
	cr_assert_eq(nlog, 2);
	cr_assert_eq(evlog[1].ev, TCP_EV_RECV);
	cr_assert_eq(evlog[1].avail, 2920);
	tcp_rx_batch_end();
	down(l, s);
}

/* A FIN in mid-batch: the data gathered before it is announced first, then the FIN's
 * event at once (CLOSE_WAIT); nothing is left for the batch's end. */
static void fin_in_mid_batch(void)
{
	struct tcp_sock *l;
	uint32_t iss;
	struct tcp_sock *s = up(&l, &iss);
	seg_from(PEER_PORT, TCP_ACK, 1001, iss + 1, 1460);
	seg_from(PEER_PORT, TCP_ACK, 2461, iss + 1, 1460);
	seg_from(PEER_PORT, TCP_ACK | TCP_FIN, 3921, iss + 1, 100);
	cr_assert_eq(nlog, 2, "the gathered data event, then the FIN's");
	cr_assert_eq(evlog[0].ev, TCP_EV_RECV);
	cr_assert_eq(evlog[0].avail, 2920);
	cr_assert(evlog[1].ev & TCP_EV_RECV);
	cr_assert_eq(evlog[1].avail, 3020);
	cr_assert_eq(tcp_state(s), TCP_CLOSE_WAIT);
	cr_assert_eq(count_tcp(TCP_ACK), 1, "the FIN is acknowledged at once");
	cr_assert_eq(lastseg()->ack, 3921 + 101);
	fake_netdev_rx_end(&fnd);
	tcp_rx_batch_end();
	cr_assert_eq(nlog, 2, "nothing more at the end");
	drain(s);
	cr_assert(tcp_recv_eof(s));
	down(l, s);
}

/* A RST in mid-batch: the data event first, then CLOSED; the socket freed by the user in
 * its callback leaves nothing behind for the batch's end. */
static void rst_in_mid_batch(void)
{
	struct tcp_sock *l;
	uint32_t iss;
	struct tcp_sock *s = up(&l, &iss);
	seg_from(PEER_PORT, TCP_ACK, 1001, iss + 1, 1460);
	seg_from(PEER_PORT, TCP_ACK, 2461, iss + 1, 1460);
	seg_from(PEER_PORT, TCP_RST, 3921, 0, 0);
	cr_assert_eq(nlog, 2);
	cr_assert_eq(evlog[0].ev, TCP_EV_RECV);
	cr_assert_eq(evlog[1].ev, TCP_EV_CLOSED);
	cr_assert_eq(tcp_error(s), -ECONNRESET);
	drain(s);
	tcp_close(s);
	fake_netdev_rx_end(&fnd);
	tcp_rx_batch_end();
	cr_assert_eq(nlog, 2);
	down(l, NULL);
}

/* Two connections' segments interleaved in one batch: a segment of the other one ends
 * the gathering (its event goes first), and each gets its data event; segments of one
 * socket in a row share one. */
static void another_socket_ends_the_gathering(void)
{
	struct tcp_sock *l;
	uint32_t iss, iss2;
	struct tcp_sock *a = up(&l, &iss);
	fnd.rx_batch = false;
	struct tcp_sock *b = open_from(PEER_PORT + 1, &iss2);
	fnd.rx_batch = true;
	seg_from(PEER_PORT, TCP_ACK, 1001, iss + 1, 1000);
	seg_from(PEER_PORT, TCP_ACK, 2001, iss + 1, 1000);
	cr_assert_eq(nlog, 0);
	seg_from(PEER_PORT + 1, TCP_ACK, 1001, iss2 + 1, 500);
	cr_assert_eq(nlog, 1, "a's event when b's segment came");
	cr_assert_eq(evlog[0].s, a);
	cr_assert_eq(evlog[0].avail, 2000);
	seg_from(PEER_PORT, TCP_ACK, 3001, iss + 1, 1000);
	cr_assert_eq(nlog, 2);
	cr_assert_eq(evlog[1].s, b);
	fake_netdev_rx_end(&fnd);
	cr_assert_eq(nlog, 3);
	cr_assert_eq(evlog[2].s, a);
	cr_assert_eq(evlog[2].avail, 3000);
	tcp_rx_batch_end();
	cr_assert_eq(count_ev(a, TCP_EV_RECV), 2);
	cr_assert_eq(count_ev(b, TCP_EV_RECV), 1);
	drain(b);
	tcp_abort(b);
	down(l, a);
}

/* The batch's segments after the first take the short path (rx_gro) only while nothing
 * changes: a segment with a new ACK or a new window, one out of order, one the window
 * does not hold go the whole way, and every byte ends where it belongs. */
static void what_the_short_path_leaves_to_the_whole_one(void)
{
	struct tcp_sock *l;
	uint32_t iss;
	struct tcp_sock *s = up(&l, &iss);
	cr_assert_eq(tcp_send_copy(s, data, 300), 300);
	tcp_flush(s);
	seg_from(PEER_PORT, TCP_ACK, 1001, iss + 1, 1000);
	seg_from(PEER_PORT, TCP_ACK, 2001, iss + 101, 1000); /* a new ACK */
	cr_assert_eq(count_ev(s, TCP_EV_SENT), 1);
	seg_from(PEER_PORT, TCP_ACK, 4001, iss + 101, 1000); /* out of order: the gathered event first */
	cr_assert_eq(count_ev(s, TCP_EV_RECV), 1);
	cr_assert_eq(evlog[nlog - 1].avail, 2000);
	seg_from(PEER_PORT, TCP_ACK, 3001, iss + 101, 1000); /* fills the hole */
	cr_assert_eq(tcp_recv_avail(s), 4000);
	seg_from(PEER_PORT, TCP_ACK, 5001, iss + 301, 1000);
	seg_from(PEER_PORT, TCP_ACK, 6001, iss + 301, 1000);
	cr_assert_eq(tcp_recv_avail(s), 6000);
	fake_netdev_rx_end(&fnd);
	tcp_rx_batch_end();
	cr_assert_eq(evlog[nlog - 1].avail, 6000, "the last event with every byte");
	cr_assert_eq(lastseg()->ack, 7001);
	down(l, s);
}

/* tcp_recv_frags takes whole entries from the head in one splice, at most max of them,
 * and the front of the next one when max_bytes ends inside it; the sums follow. */
static void recv_frags_takes_whole_entries_then_a_front(void)
{
	struct tcp_sock *l;
	uint32_t iss;
	struct tcp_sock *s = up(&l, &iss);
	for (int i = 0; i < 5; i++)
		seg_from(PEER_PORT, TCP_ACK, 1001 + 1000 * (uint32_t)i, iss + 1, 1000);
	fake_netdev_rx_end(&fnd);
	tcp_rx_batch_end();
	cr_assert_eq(tcp_recv_avail(s), 5000);
	struct netdev_frag f[8];
	cr_assert_eq(tcp_recv_frags(s, f, 2, SIZE_MAX), 2, "max entries");
	cr_assert_eq(f[0].len + f[1].len, 2000);
	cr_assert_eq(tcp_recv_avail(s), 3000);
	netdev_frag_release(&f[0]);
	netdev_frag_release(&f[1]);
	cr_assert_eq(tcp_recv_frags(s, f, 8, 1500), 2, "one whole entry and 500 bytes of the next");
	cr_assert_eq(f[0].len, 1000);
	cr_assert_eq(f[1].len, 500);
	cr_assert_eq(tcp_recv_avail(s), 1500);
	netdev_frag_release(&f[0]);
	netdev_frag_release(&f[1]);
	cr_assert_eq(tcp_recv_frags(s, f, 8, 0), 0, "nothing for no bytes");
	cr_assert_eq(tcp_recv_frags(s, f, 8, SIZE_MAX), 2, "the rest of the split entry and the last");
	cr_assert_eq(f[0].len, 500);
	cr_assert_eq(f[1].len, 1000);
	cr_assert_eq(tcp_recv_avail(s), 0);
	netdev_frag_release(&f[0]);
	netdev_frag_release(&f[1]);
	cr_assert_eq(tcp_recv_frags(s, f, 8, SIZE_MAX), 0, "empty");
	/* the five entries given back wait in the cache, still the pool's in use */
	cr_assert_eq(tcp_rxent_cached, 5);
	cr_assert_eq(tcp_rxent_pool.in_use, 5);
	/* the queue still works after the splices, and the next segment takes a cached entry */
	seg_from(PEER_PORT, TCP_ACK, 6001, iss + 1, 700);
	fake_netdev_rx_end(&fnd);
	cr_assert_eq(tcp_rxent_cached, 4);
	cr_assert_eq(tcp_rxent_pool.in_use, 5, "no entry of the pool's taken");
	cr_assert_eq(tcp_recv_frags(s, f, 8, SIZE_MAX), 1);
	cr_assert_eq(f[0].len, 700);
	netdev_frag_release(&f[0]);
	tcp_rx_batch_end();
	down(l, s);
	/* a socket freed gives the cache back to the pool */
	cr_assert_eq(tcp_rxent_cached, 0);
	cr_assert_eq(tcp_rxent_pool.in_use, 0);
}

/* A segment with a bad checksum in mid-batch is dropped and counted once, whichever path
 * it meets; the gathering goes on with the good copy. */
static void bad_checksum_in_mid_batch(void)
{
	struct tcp_sock *l;
	uint32_t iss;
	struct tcp_sock *s = up(&l, &iss);
	uint64_t bad = tcp_stats()->bad_checksum;
	seg_from(PEER_PORT, TCP_ACK, 1001, iss + 1, 1000);
	struct fake_tcp t = { .src = PEER, .dst = US, .sport = PEER_PORT, .dport = SRV_PORT, .seq = 2001,
			      .ack = iss + 1, .flags = TCP_ACK, .wnd = 65535, .payload = data, .len = 1000,
			      .bad_csum = true };
	size_t n = fake_build_tcp(frame, &t);
	cr_assert_eq(fake_netdev_inject(&fnd, frame, n), 0);
	cr_assert_eq(tcp_stats()->bad_checksum, bad + 1);
	cr_assert_eq(tcp_recv_avail(s), 1000);
	seg_from(PEER_PORT, TCP_ACK, 2001, iss + 1, 1000);
	cr_assert_eq(tcp_recv_avail(s), 2000);
	cr_assert_eq(nlog, 0);
	fake_netdev_rx_end(&fnd);
	cr_assert_eq(nlog, 1);
	cr_assert_eq(evlog[0].avail, 2000);
	tcp_rx_batch_end();
	down(l, s);
}

/* Each case twice: without the NIC's checksum verdicts (every segment through the stack's
 * layers and tcp_rx_gathering) and with them (tcp_rx_flow takes the data segments of the
 * receiving connection past the layers, net/net.c net_stack_rx): the same events, ACKs and
 * bytes. */
static void csum_setup(void)
{
	net_test_start(NETDEV_F_RX_SPLIT | NETDEV_F_RX_CSUM);
}
TestSuite(tcp_gro_flow, .init = csum_setup, .fini = net_teardown);
Test(tcp_gro, one_data_event_per_batch_of_in_order_segments) { one_data_event_per_batch_of_in_order_segments(); }
Test(tcp_gro_flow, one_data_event_per_batch_of_in_order_segments) { one_data_event_per_batch_of_in_order_segments(); }
Test(tcp_gro, the_event_is_not_delayed_past_the_batch_end) { the_event_is_not_delayed_past_the_batch_end(); }
Test(tcp_gro_flow, the_event_is_not_delayed_past_the_batch_end) { the_event_is_not_delayed_past_the_batch_end(); }
Test(tcp_gro, sent_goes_at_once_recv_at_the_end) { sent_goes_at_once_recv_at_the_end(); }
Test(tcp_gro_flow, sent_goes_at_once_recv_at_the_end) { sent_goes_at_once_recv_at_the_end(); }
Test(tcp_gro, fin_in_mid_batch) { fin_in_mid_batch(); }
Test(tcp_gro_flow, fin_in_mid_batch) { fin_in_mid_batch(); }
Test(tcp_gro, rst_in_mid_batch) { rst_in_mid_batch(); }
Test(tcp_gro_flow, rst_in_mid_batch) { rst_in_mid_batch(); }
Test(tcp_gro, another_socket_ends_the_gathering) { another_socket_ends_the_gathering(); }
Test(tcp_gro_flow, another_socket_ends_the_gathering) { another_socket_ends_the_gathering(); }
Test(tcp_gro, what_the_short_path_leaves_to_the_whole_one) { what_the_short_path_leaves_to_the_whole_one(); }
Test(tcp_gro_flow, what_the_short_path_leaves_to_the_whole_one) { what_the_short_path_leaves_to_the_whole_one(); }
Test(tcp_gro, recv_frags_takes_whole_entries_then_a_front) { recv_frags_takes_whole_entries_then_a_front(); }
Test(tcp_gro_flow, recv_frags_takes_whole_entries_then_a_front) { recv_frags_takes_whole_entries_then_a_front(); }
Test(tcp_gro, bad_checksum_in_mid_batch) { bad_checksum_in_mid_batch(); }
Test(tcp_gro_flow, bad_checksum_in_mid_batch) { bad_checksum_in_mid_batch(); }

/* tcp_rx_flow counts what the layers it passes would (Ethernet and IPv4 frames, TCP
 * segments); after a route change (an address, an ARP entry) the socket's header image is
 * stale and the segments go through the layers again (ipv4_rx finding the source good
 * anew), gathered all the same, until a batch's first segment builds it again. */
Test(tcp_gro_flow, counters_and_a_route_change_mid_batch)
{
	struct tcp_sock *l;
	uint32_t iss;
	struct tcp_sock *s = up(&l, &iss);
	uint64_t eth = net_stats()->eth_rx, ip = net_stats()->ip_rx, segs = tcp_stats()->segs_in;
	uint32_t seq = 1001;
	for (int i = 0; i < 4; i++, seq += 1000)
		seg_from(PEER_PORT, TCP_ACK, seq, iss + 1, 1000);
	cr_assert_eq(net_stats()->eth_rx - eth, 4);
	cr_assert_eq(net_stats()->ip_rx - ip, 4);
	cr_assert_eq(tcp_stats()->segs_in - segs, 4);
	fake_netdev_rx_end(&fnd);
	tcp_rx_batch_end();
	cr_assert_eq(nlog, 1);
	cr_assert_eq(evlog[0].avail, 4000);

	seg_from(PEER_PORT, TCP_ACK, seq, iss + 1, 1000);
	seq += 1000;
	net_route_changed();
	seg_from(PEER_PORT, TCP_ACK, seq, iss + 1, 1000);
	seq += 1000;
	seg_from(PEER_PORT, TCP_ACK, seq, iss + 1, 1000);
	seq += 1000;
	cr_assert_eq(nlog, 1, "still one batch");
	cr_assert_eq(tcp_recv_avail(s), 7000);
	cr_assert_eq(net_stats()->eth_rx - eth, 7);
	cr_assert_eq(net_stats()->ip_rx - ip, 7);
	cr_assert_eq(tcp_stats()->segs_in - segs, 7);
	fake_netdev_rx_end(&fnd);
	tcp_rx_batch_end();
	cr_assert_eq(nlog, 2);
	cr_assert_eq(evlog[1].avail, 7000);
	cr_assert_eq(lastseg()->ack, seq);

	/* a new window in mid-batch: the whole way, the bytes where they belong */
	drain(s);
	seg_from(PEER_PORT, TCP_ACK, seq, iss + 1, 1000);
	seq += 1000;
	struct fake_tcp t = { .src = PEER, .dst = US, .sport = PEER_PORT, .dport = SRV_PORT, .seq = seq,
			      .ack = iss + 1, .flags = TCP_ACK, .wnd = 30000, .payload = data, .len = 1000 };
	size_t n = fake_build_tcp(frame, &t);
	cr_assert_eq(fake_netdev_inject(&fnd, frame, n), 0);
	seq += 1000;
	seg_from(PEER_PORT, TCP_ACK, seq, iss + 1, 1000); /* (the window changed again: 65535) */
	seq += 1000;
	cr_assert_eq(tcp_recv_avail(s), 3000);
	struct tcp_info i;
	tcp_get_info(s, &i);
	cr_assert_eq(i.snd_wnd, 65535);
	fake_netdev_rx_end(&fnd);
	tcp_rx_batch_end();
	cr_assert_eq(lastseg()->ack, seq);

	/* pure ACKs (tcp_rx_flow_bare): of our data, then a duplicate, then one with a new
	 * window; the padding's buffer goes back */
	drain(s);
	fnd.rx_batch = false;
	nlog = 0;
	cr_assert_eq(tcp_send_copy(s, data, 300), 300);
	tcp_flush(s);
	eth = net_stats()->eth_rx;
	segs = tcp_stats()->segs_in;
	seg_from(PEER_PORT, TCP_ACK, seq, iss + 201, 0);
	cr_assert_eq(count_ev(s, TCP_EV_SENT), 1);
	tcp_get_info(s, &i);
	cr_assert_eq(i.snd_una, iss + 201);
	seg_from(PEER_PORT, TCP_ACK, seq, iss + 201, 0);
	tcp_get_info(s, &i);
	cr_assert_eq(i.snd_una, iss + 201);
	t = (struct fake_tcp){ .src = PEER, .dst = US, .sport = PEER_PORT, .dport = SRV_PORT, .seq = seq,
			       .ack = iss + 301, .flags = TCP_ACK, .wnd = 20000 };
	n = fake_build_tcp(frame, &t);
	cr_assert_eq(fake_netdev_inject(&fnd, frame, n), 0);
	tcp_get_info(s, &i);
	cr_assert_eq(i.snd_una, iss + 301);
	cr_assert_eq(i.snd_wnd, 20000);
	cr_assert_eq(i.sndq_bytes, 0);
	cr_assert_eq(count_ev(s, TCP_EV_SENT), 2);
	cr_assert_eq(net_stats()->eth_rx - eth, 3);
	cr_assert_eq(tcp_stats()->segs_in - segs, 3);
	cr_assert_eq(fnd.data_out, 0, "every receive buffer back (the padding's too)");
	fnd.rx_batch = true;
	down(l, s);
}

/* Every node of from moved to the tail of to. */
static void list_move_all(struct list_node *to, struct list_node *from)
{
	while (!list_empty(from)) {
		struct list_node *n = from->next;
		list_del(n);
		list_add_tail(to, n);
	}
}

/* Four segments of 1000 bytes from seq in one receive batch, from an empty receive queue:
 * all queued, one data event with all of them, the batch's ACK. Returns the next seq. */
static uint32_t four_segments_taken(struct tcp_sock *s, uint32_t iss, uint32_t seq)
{
	unsigned events = nlog;
	for (int i = 0; i < 4; i++, seq += 1000)
		seg_from(PEER_PORT, TCP_ACK, seq, iss + 1, 1000);
	cr_assert_eq(tcp_recv_avail(s), 4000, "every segment queued");
	fake_netdev_rx_end(&fnd);
	tcp_rx_batch_end();
	cr_assert_eq(nlog, events + 1, "one data event");
	cr_assert_eq(evlog[events].avail, 4000);
	cr_assert_eq(lastseg()->ack, seq, "the batch's ACK");
	return seq;
}

/* tcp_rx_flow's tests in any order, a frame failing one to tcp_rx_flow_any unchanged: with
 * no cached receive entry (the pool's then) and with more than half the device's buffers
 * lent (the admission's exact test then), the batch's segments are queued all the same,
 * one data event and one ACK. */
Test(tcp_gro_flow, the_flow_paths_fallbacks_take_the_segments_alike)
{
	struct tcp_sock *l;
	uint32_t iss;
	struct tcp_sock *s = up(&l, &iss);
	uint32_t seq = 1001;
	struct list_node held;
	unsigned cached = tcp_rxent_cached;

	/* the cache emptied (its entries kept aside): every entry from the pool */
	list_init(&held);
	list_move_all(&held, &tcp_rxent_cache);
	tcp_rxent_cached = 0;
	seq = four_segments_taken(s, iss, seq);
	drain(s);
	list_move_all(&tcp_rxent_cache, &held);
	tcp_rxent_cached += cached;

	/* more than half the device's buffers lent, within its reserve: the last ones */
	const unsigned lent = FAKE_DATA_BUFS / 2 + 8;
	for (unsigned i = FAKE_DATA_BUFS - lent; i < FAKE_DATA_BUFS; i++)
		fnd.data_used[i] = true;
	fnd.data_out += lent;
	seq = four_segments_taken(s, iss, seq);
	cr_assert_gt(fnd.dev.rx_bufs_out, fnd.dev.rx_bufs / 2, "still more than half lent");
	for (unsigned i = FAKE_DATA_BUFS - lent; i < FAKE_DATA_BUFS; i++)
		fnd.data_used[i] = false;
	fnd.data_out -= lent;
	fnd.dev.rx_bufs_out = fnd.data_out;
	down(l, s);
}

/* A connection (up) after a batch of four segments the user took (its receive entries
 * cached for the next ones), the event log cleared; the next seq in *seq. */
static struct tcp_sock *up_after_a_batch(struct tcp_sock **l, uint32_t *iss, uint32_t *seq)
{
	struct tcp_sock *s = up(l, iss);
	*seq = four_segments_taken(s, *iss, 1001);
	drain(s);
	nlog = 0;
	return s;
}

/* A receive batch's first data segment of the last segment's connection (no batch
 * gathering yet: tcp_rx_gro NULL) begins the gathering on the one-step path
 * (tcp_rx_flow_first), not through tcp_rx_flow_any: the segment before it, the batch's
 * end, left the header image built. The events as before: none until the batch ends, then
 * one data event with every byte of it, then its one ACK. */
Test(tcp_gro_flow, a_batchs_first_segment_takes_the_one_step_path)
{
	struct tcp_sock *l;
	uint32_t iss, seq;
	struct tcp_sock *s = up_after_a_batch(&l, &iss, &seq);
	uint64_t any = tcp_rx_flow_any_frames, fast = net_rx_fast_frames;

	seg_from(PEER_PORT, TCP_ACK, seq, iss + 1, 1000);
	seq += 1000;
	cr_assert_eq(tcp_rx_flow_any_frames, any, "the batch's first frame past tcp_rx_flow_any");
	cr_assert_eq(net_rx_fast_frames, fast + 1, "taken past the layers");
	cr_assert_eq(tcp_rx_gro, s, "the gathering begun");
	cr_assert_eq(nlog, 0, "its data event held");
	seg_from(PEER_PORT, TCP_ACK, seq, iss + 1, 1000);
	seq += 1000;
	cr_assert_eq(nlog, 0);
	cr_assert_eq(tcp_recv_avail(s), 2000);
	fake_netdev_rx_end(&fnd);
	tcp_rx_batch_end();
	cr_assert_eq(nlog, 1, "one data event for the batch");
	cr_assert_eq(evlog[0].ev, TCP_EV_RECV);
	cr_assert_eq(evlog[0].avail, 2000);
	cr_assert_eq(lastseg()->ack, seq, "the batch's ACK");

	/* a FIN as a batch's first frame: the general path, the data and the FIN at once */
	any = tcp_rx_flow_any_frames;
	seg_from(PEER_PORT, TCP_ACK | TCP_FIN, seq, iss + 1, 1000);
	cr_assert_eq(tcp_rx_gro, NULL);
	cr_assert_eq(tcp_rx_flow_any_frames, any + 1, "a FIN: the general path");
	cr_assert_eq(nlog, 2);
	cr_assert(evlog[1].ev & TCP_EV_RECV);
	cr_assert_eq(evlog[1].avail, 3000);
	fake_netdev_rx_end(&fnd);
	tcp_rx_batch_end();
	cr_assert_eq(lastseg()->ack, seq + 1001, "the FIN acknowledged");
	down(l, s);
}

/* A batch's first data segment that acknowledges everything we sent (a host's next command
 * with the ACK of our responses) goes from tcp_rx_flow_first to rx_ack_all_data, not
 * through tcp_rx_flow_any: the acknowledged bytes' event at once, the data event at the
 * batch's end, with the segment after it gathered. */
Test(tcp_gro_flow, a_batchs_first_segment_acknowledging_all_takes_the_one_step_path)
{
	struct tcp_sock *l;
	uint32_t iss, seq;
	struct tcp_sock *s = up_after_a_batch(&l, &iss, &seq);
	cr_assert_eq(tcp_send_copy(s, data, 200), 200);
	tcp_flush(s);
	uint64_t any = tcp_rx_flow_any_frames;

	seg_from(PEER_PORT, TCP_ACK, seq, iss + 201, 1000);
	seq += 1000;
	cr_assert_eq(tcp_rx_flow_any_frames, any, "the batch's first frame past tcp_rx_flow_any");
	cr_assert_eq(nlog, 1, "the acknowledged bytes' event at once");
	cr_assert_eq(evlog[0].ev, TCP_EV_SENT);
	seg_from(PEER_PORT, TCP_ACK, seq, iss + 201, 1000);
	seq += 1000;
	cr_assert_eq(nlog, 1, "the data event held");
	struct tcp_info i;
	tcp_get_info(s, &i);
	cr_assert_eq(i.snd_una, iss + 201);
	cr_assert_eq(i.sndq_bytes, 0);
	fake_netdev_rx_end(&fnd);
	tcp_rx_batch_end();
	cr_assert_eq(nlog, 2);
	cr_assert_eq(evlog[1].ev, TCP_EV_RECV);
	cr_assert_eq(evlog[1].avail, 2000);
	cr_assert_eq(lastseg()->ack, seq, "the batch's ACK");
	down(l, s);
}
