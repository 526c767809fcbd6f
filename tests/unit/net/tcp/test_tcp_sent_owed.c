// sources: drivers/nic/netdev.c net/net.c lib/ipv4_text.c net/arp.c net/ipv4.c net/udp.c net/tcp/tcp.c net/tcp/tcp_in.c net/tcp/tcp_isn.c net/tcp/tcp_pools.c net/tcp/tcp_admit.c tests/unit/net/fake_entropy.c net/tcp/tcp_hdr.c net/tcp/tcp_out.c net/tcp/tcp_budget.c net/tcp/tcp_sack.c net/tcp/tcp_service.c mm/pool.c mm/dma.c lib/timer.c lib/log.c tests/unit/net/fake_netdev.c
/*
 * TCP_EV_SENT only when owed (tcp_set_sent_when_owed): a socket whose user opted in gets the
 * first TCP_EV_SENT (tcp_set_ops after tcp_accept) and one after each refused send (the
 * ACK of what is in flight, or t_sendwake with nothing in flight), and none for ACKs of
 * new bytes with no refusal since the last one, on every ACK path: the ACK of everything
 * sent (rx_ack_all), data carrying it (rx_ack_all_data), header prediction and the general
 * path (process_ack_core). A socket that did not opt in keeps an event per such ACK.
 */
#include "tests/unit/net/tcp/tcp_test.h"

static uint8_t data[2048];

/* The NIC's checksum verdicts on: tcp_rx_flow_bare takes the ACKs (rx_ack_all,
 * rx_ack_all_data), not the stack's layers and header prediction. */
static void flow_setup(void)
{
	net_test_start(NETDEV_F_RX_SPLIT | NETDEV_F_RX_CSUM);
}

/* 1024 bytes queued and flushed: one segment. */
static void send_pdu(struct tcp_sock *s)
{
	cr_assert_eq(tcp_send_copy(s, data, 1024), 1024);
	tcp_flush(s);
}

/* A send refused for want of room: more bytes than the socket may queue (a fragment of
 * no owner: nothing to give back). */
static void send_refused(struct tcp_sock *s)
{
	struct netdev_frag f = { .addr = dma_addr_host(data), .len = TCP_SND_BUF + 1 };
	uint64_t refused = tcp_stats()->send_refused;
	cr_assert_eq(tcp_send_frags(s, &f, 1), -ENOBUFS);
	cr_assert_eq(tcp_stats()->send_refused, refused + 1, "the refusal recorded");
}

/* The listener's accept: the connection opts in before its events start (tcp_set_ops). */
static void owed_listen_ev(struct tcp_sock *l, void *ctx, unsigned ev)
{
	(void)ctx;
	if (!(ev & TCP_EV_ACCEPT))
		return;
	struct tcp_sock *c = tcp_accept(l);
	if (c) {
		accepted = c;
		tcp_set_sent_when_owed(c);
		tcp_set_ops(c, &rec_ops, NULL);
	}
}
static const struct tcp_ops owed_listen_ops = { owed_listen_ev };

/* Each case's connection: its listener, our ISS, the peer's next sequence number, and the
 * TCP_EV_SENT delivered once it was open (open_owed). */
static struct tcp_sock *lis;
static uint32_t iss, peer_seq;
static unsigned sent0;

/* The peer acknowledges the first n bytes we sent (window wnd), with len bytes of data. */
static void peer_ack(uint32_t n, uint16_t wnd, size_t len)
{
	peer_seg(len ? TCP_ACK | TCP_PSH : TCP_ACK, peer_seq, iss + 1 + n, wnd, len ? data : NULL, len, NULL, 0);
	peer_seq += (uint32_t)len;
}

/* A passive open whose connection opted in, with the first TCP_EV_SENT delivered, then a
 * 100-byte request from the peer that the user read (the connection's header image built:
 * tcp_rx_flow_bare takes its ACKs). Returns the socket. */
static struct tcp_sock *open_owed(void)
{
	uint8_t buf[100];
	sent0 = ev_count[3];

	cr_assert_eq(tcp_listen(SRV_PORT, 8, &owed_listen_ops, NULL, &lis), 0);
	peer_seg(TCP_SYN, 1000, 0, 65535, NULL, 0, opt_mss1460, 4);
	cr_assert_eq(txseg(0)->flags, TCP_SYN | TCP_ACK);
	iss = txseg(0)->seq;
	peer_seq = 1001;
	peer_ack(0, 65535, 0);
	cr_assert_not_null(accepted);
	cr_assert_eq(tcp_state(accepted), TCP_ESTABLISHED);
	cr_assert_eq(ev_count[3], sent0 + 1, "the first TCP_EV_SENT (tcp_set_ops)");
	peer_ack(0, 65535, sizeof(buf));
	cr_assert_eq(tcp_recv_copy(accepted, buf, sizeof(buf)), (long)sizeof(buf));
	fake_netdev_clear(&fnd);
	sent0 = ev_count[3];
	return accepted;
}

/* The end of every case: the connection and the listener closed. */
static void close_owed(struct tcp_sock *s)
{
	tcp_abort(s);
	tcp_close(lis);
}

/* With no refusal, no ACK path raises TCP_EV_SENT: the ACK of everything sent (pure, then
 * with data), and partial ACKs (header prediction, the general path with a new window). */
static void acks_without_a_refusal_raise_no_sent_event(void)
{
	struct tcp_sock *s = open_owed();
	unsigned recv0 = ev_count[2];

	send_pdu(s);
	peer_ack(1024, 65535, 0);
	cr_assert_eq(s->snd_una, iss + 1 + 1024, "acknowledged");
	cr_assert_eq(ev_count[3], sent0, "no TCP_EV_SENT for the ACK of everything sent");
	send_pdu(s);
	peer_ack(2048, 65535, 100);
	cr_assert_eq(s->snd_una, iss + 1 + 2048);
	cr_assert_eq(ev_count[2], recv0 + 1, "the data's TCP_EV_RECV");
	cr_assert_eq(ev_count[3], sent0, "no TCP_EV_SENT with the data");
	send_pdu(s);
	send_pdu(s);
	peer_ack(3072, 65535, 0);
	cr_assert_eq(s->snd_una, iss + 1 + 3072);
	peer_ack(4096, 30000, 0);
	cr_assert_eq(s->snd_una, iss + 1 + 4096);
	cr_assert_eq(s->snd_wnd, 30000);
	cr_assert_eq(ev_count[3], sent0, "none for partial ACKs either");
	close_owed(s);
}

/* A refused send with something in flight: the ACK of it brings one TCP_EV_SENT (partial,
 * or of everything sent), the ACKs after it none until the next refusal. */
static void a_refused_send_gets_its_sent_event_from_the_ack(void)
{
	struct tcp_sock *s = open_owed();

	send_pdu(s);
	send_pdu(s);
	send_refused(s);
	cr_assert_eq(ev_count[3], sent0, "not yet");
	peer_ack(1024, 65535, 0);
	cr_assert_eq(ev_count[3], sent0 + 1, "the ACK brings the event owed");
	cr_assert_eq(ev_last, TCP_EV_SENT);
	peer_ack(2048, 65535, 0);
	cr_assert_eq(ev_count[3], sent0 + 1, "one only");
	send_pdu(s);
	send_refused(s);
	peer_ack(3072, 65535, 0);
	cr_assert_eq(ev_count[3], sent0 + 2, "the ACK of everything sent brings the next one owed");
	send_pdu(s);
	peer_ack(4096, 65535, 0);
	cr_assert_eq(ev_count[3], sent0 + 2, "none after it");
	advance(10 * TCP_TX_RETRY_NS);
	cr_assert_eq(ev_count[3], sent0 + 2, "nor from t_sendwake");
	close_owed(s);
}

/* A refused send with nothing in flight: t_sendwake brings the event, and an ACK after it
 * raises none. */
static void a_refused_send_with_nothing_in_flight_gets_its_sent_event_from_the_timer(void)
{
	struct tcp_sock *s = open_owed();

	send_refused(s);
	advance(TCP_TX_RETRY_NS);
	cr_assert_eq(ev_count[3], sent0 + 1, "the retry's event");
	send_pdu(s);
	peer_ack(1024, 65535, 0);
	cr_assert_eq(ev_count[3], sent0 + 1, "none for the ACK after it");
	close_owed(s);
}

/* A socket that did not opt in: TCP_EV_SENT for every ACK of new bytes (the default). */
static void by_default_every_ack_raises_a_sent_event(void)
{
	iss = open_passive(&lis, 1000, 65535, opt_mss1460, 4);
	peer_seq = 1001;
	struct tcp_sock *s = accepted;
	sent0 = ev_count[3];

	send_pdu(s);
	send_pdu(s);
	peer_ack(1024, 65535, 0);
	peer_ack(2048, 65535, 0);
	cr_assert_eq(ev_count[3], sent0 + 2, "one per ACK");
	close_owed(s);
}

/* Each case on both paths: without the NIC's checksum verdicts and with them (flow_setup). */
#define ON_BOTH_PATHS(name)                  \
	Test(tcp_sent_owed, name)            \
	{                                    \
		name();                      \
	}                                    \
	Test(tcp_sent_owed_flow, name)       \
	{                                    \
		name();                      \
	}
TestSuite(tcp_sent_owed, .init = net_setup, .fini = net_teardown);
TestSuite(tcp_sent_owed_flow, .init = flow_setup, .fini = net_teardown);
ON_BOTH_PATHS(acks_without_a_refusal_raise_no_sent_event)
ON_BOTH_PATHS(a_refused_send_gets_its_sent_event_from_the_ack)
ON_BOTH_PATHS(a_refused_send_with_nothing_in_flight_gets_its_sent_event_from_the_timer)
ON_BOTH_PATHS(by_default_every_ack_raises_a_sent_event)
