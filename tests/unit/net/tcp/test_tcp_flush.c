// sources: drivers/nic/netdev.c net/net.c lib/ipv4_text.c net/arp.c net/ipv4.c net/udp.c net/tcp/tcp.c net/tcp/tcp_in.c net/tcp/tcp_isn.c net/tcp/tcp_pools.c net/tcp/tcp_admit.c tests/unit/net/fake_entropy.c net/tcp/tcp_hdr.c net/tcp/tcp_out.c net/tcp/tcp_budget.c net/tcp/tcp_sack.c net/tcp/tcp_service.c mm/pool.c mm/dma.c lib/timer.c lib/log.c tests/unit/net/fake_netdev.c
/*
 * tcp_flush in one step (tcp_out.c tcp_output_one): a tail of one segment or less goes from
 * the queue straight into a frame built from the run template, with the pass's
 * bookkeeping; bytes a send entry holds itself are copied into the frame, which then refers
 * to no entry; a frame the device refuses waits for its turn as any refused frame.
 * (Its frames equal the pass's: test_tcp_train.c frames_on_the_wire_are_the_one_step_path.)
 */
#include "tests/unit/net/tcp/tcp_test.h"

#define FLUSH_FEATURES (NETDEV_F_RX_SPLIT | NETDEV_F_TX_CSUM)

static void flush_setup(void)
{
	net_test_start(FLUSH_FEATURES);
}

TestSuite(tcp_flush, .init = flush_setup, .fini = net_teardown);

static struct tcp_sock *lsn;
static uint32_t iss;

/* An established connection from the peer (its listener in lsn, our ISS in iss). */
static struct tcp_sock *open_conn(void)
{
	iss = open_passive(&lsn, 1000, 65535, opt_mss1460, 4);
	return accepted;
}

/* Reset s and close its listener. */
static void close_conn(struct tcp_sock *s)
{
	tcp_abort(s);
	close_listener(lsn);
}

static const uint8_t resp[24] = { 5, 0, 24, 0, 24, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };

/* A 24-byte response built in place (tcp_send_place, tcp_send_placed). */
static void place_resp(struct tcp_sock *s)
{
	uint8_t *p = tcp_send_place(s, sizeof(resp), 0);
	cr_assert_not_null(p);
	memcpy(p, resp, sizeof(resp));
	tcp_send_placed(s, sizeof(resp));
}

/* ... held back for tcp_flush, and flushed. */
static void send_resp(struct tcp_sock *s)
{
	place_resp(s);
	cr_assert_eq(fnd.ntx, 0, "held back for tcp_flush");
	tcp_flush(s);
}

/* Captured frame i is the response alone at seq, pushed (PSH). */
static void assert_resp_frame(unsigned i, uint32_t seq)
{
	struct fake_parsed_tcp *g = txseg(i);
	cr_assert_eq(g->flags, TCP_ACK | TCP_PSH);
	cr_assert_eq(g->seq, seq);
	cr_assert_eq(g->len, sizeof(resp));
	cr_assert_eq(memcmp(g->payload, resp, sizeof(resp)), 0);
}

/* The response's bytes go in the frame's host part: the netbuf the device still holds
 * carries no fragment, holds no reference on the send entry, so the peer's ACK frees the
 * entry before the device completes the frame (it waited for the completion before). */
Test(tcp_flush, a_placed_response_is_copied_into_its_frame)
{
	struct tcp_sock *s = open_conn();

	fnd.tx_late = true;
	send_resp(s);
	cr_assert_eq(fnd.ntx, 1);
	assert_resp_frame(0, iss + 1);
	cr_assert_eq(fnd.nlate, 1);
	cr_assert_eq(fnd.late[0]->nfrags, 0, "no fragment: the bytes are in the host part");
	struct tcp_sndent *e = container_of(s->sndq.next, struct tcp_sndent, node);
	cr_assert_eq(e->inflight, 0, "no reference on the entry");
	cr_assert(list_empty(&s->held_node), "off the held list");
	peer_seg(TCP_ACK, 1001, iss + 1 + sizeof(resp), 65535, NULL, 0, NULL, 0);
	cr_assert_eq(s->sndents, 0, "the entry freed at the ACK, the frame still in the device");
	fake_netdev_tx_complete(&fnd);
	fnd.tx_late = false;
	cr_assert_eq(poll_pass(), 0, "nothing left to send");
	cr_assert_eq(fnd.ntx, 1);
	close_conn(s);
}

/* Refused by a full ring, the one-step frame is not sent: SND.NXT stays, the ACK it would
 * have carried is owed, the socket waits for its turn, which sends the same frame once the
 * device has room again; nothing counted twice. */
Test(tcp_flush, a_refused_one_step_frame_waits_its_turn)
{
	struct tcp_sock *s = open_conn();
	struct tcp_info i, i0;

	tcp_get_info(s, &i0);
	fnd.tx_refuse = 1;
	send_resp(s);
	cr_assert_eq(fnd.ntx, 0);
	cr_assert_eq(fnd.tx_refused, 1);
	cr_assert_eq(tcp_stats()->tx_refused, 1);
	tcp_get_info(s, &i);
	cr_assert_eq(i.snd_nxt, iss + 1, "nothing counted as sent");
	cr_assert_eq(i.segs_out, i0.segs_out);
	cr_assert(s->ack_delayed, "its ACK owed");
	cr_assert(s->t_rexmit.armed, "the backstop");
	cr_assert_eq(poll_pass(), 0, "no turn while the device is stopped");
	netdev_tx_wake(&fnd.dev);
	cr_assert_gt(poll_pass(), 0);
	cr_assert_eq(fnd.ntx, 1);
	assert_resp_frame(0, iss + 1);
	tcp_get_info(s, &i);
	cr_assert_eq(i.segs_out, i0.segs_out + 1);
	cr_assert_eq(tcp_stats()->tx_payload_host, sizeof(resp));
	peer_seg(TCP_ACK, 1001, iss + 1 + sizeof(resp), 65535, NULL, 0, NULL, 0);
	tcp_get_info(s, &i);
	cr_assert_eq(i.sndq_bytes, 0);
	close_conn(s);
}

/* What the one step does not take goes by the pass as before: a window that does not
 * take the response (the peer's 10 bytes: sender SWS avoidance waits), then the window
 * opening sends it whole. */
Test(tcp_flush, a_tail_the_window_does_not_take_waits_as_before)
{
	struct tcp_sock *s = open_conn();

	peer_seg(TCP_ACK, 1001, iss + 1, 10, NULL, 0, NULL, 0);
	place_resp(s);
	tcp_flush(s);
	unsigned sent = fnd.ntx;
	cr_assert_leq(sent, 1);
	if (sent)
		cr_assert_eq(txseg(0)->len, 10, "the pass's choice: what the window takes");
	peer_seg(TCP_ACK, 1001, iss + 1 + (sent ? 10 : 0), 65535, NULL, 0, NULL, 0);
	poll_pass();
	cr_assert_eq(fnd.ntx, sent + 1);
	struct fake_parsed_tcp *g = lastseg();
	cr_assert_eq(g->seq + g->len, iss + 1 + sizeof(resp), "the rest of the response");
	peer_seg(TCP_ACK, 1001, iss + 1 + sizeof(resp), 65535, NULL, 0, NULL, 0);
	close_conn(s);
}

/* A 4 KiB read's PDU (C2HData header placed, its data a user fragment, the response placed),
 * flushed as a short run (tcp_output_short), on a device with frame trains (train) or
 * without: the header is copied into the first frame's host part (one fragment: the data's),
 * so its entry has no reference while the device holds the frames; the response rides as
 * the last frame's second piece; the frames carry the stream in order, the last with PSH.
 * With trains the three frames are one mixed train (netdev.h NETBUF_TX_TRAIN_MIXED): one
 * netbuf, frame 0's host bytes the headers and the PDU header, a data piece a frame, the
 * last frame's second piece the response; one reference on the data's entry. */
static void pdu_header_copied(bool train)
{
	static uint8_t data[4096];
	static struct netdev_frag_owner counting = { "test", frag_count_release };
	struct tcp_sock *s = open_conn();
	struct netdev_frag f = { .addr = dma_addr_host(data), .len = sizeof(data), .owner = &counting };

	if (!train)
		fnd.dev.features &= ~NETDEV_F_TX_TRAIN;
	for (size_t k = 0; k < sizeof(data); k++)
		data[k] = (uint8_t)(k * 13);
	frags_released = 0;
	fnd.tx_late = true;
	uint8_t *h = tcp_send_place_frags(s, sizeof(resp), sizeof(data) + sizeof(resp), 1);
	cr_assert_not_null(h);
	memcpy(h, resp, sizeof(resp));
	tcp_send_placed_frags(s, sizeof(resp), &f, 1);
	place_resp(s);
	cr_assert_eq(fnd.ntx, 0, "held back for tcp_flush");
	tcp_flush(s);
	cr_assert_eq(fnd.ntx, 3);
	if (train) {
		const struct netbuf *nb = fnd.late[0];
		cr_assert_eq(fnd.nlate, 1, "one netbuf for the three frames");
		cr_assert_eq(fnd.tx_trains_mixed, 1);
		cr_assert_eq(nb->flags & (NETBUF_TX_TRAIN | NETBUF_TX_TRAIN_MIXED), NETBUF_TX_TRAIN | NETBUF_TX_TRAIN_MIXED);
		cr_assert_eq(nb->train_frames, 3);
		cr_assert_eq(nb->train_hlen[0], 54 + sizeof(resp), "the header in frame 0's host bytes");
		cr_assert_eq(nb->train_hlen[1], 54);
		cr_assert_eq(nb->train_hlen[2], 54);
		cr_assert_eq(nb->train_nfrags[0], 1);
		cr_assert_eq(nb->train_nfrags[1], 1);
		cr_assert_eq(nb->train_nfrags[2], 2, "the data's end, then the response");
		cr_assert_eq(nb->nfrags, 4);
		struct tcp_sndent *d = container_of(s->sndq.next->next, struct tcp_sndent, node);
		cr_assert_eq(d->inflight, 1, "one reference on the data's entry for the train");
		struct tcp_sndent *r = container_of(s->sndq.prev, struct tcp_sndent, node);
		cr_assert_eq(r->inflight, 0, "the response copied into the netbuf: no reference");
		cr_assert_eq(nb->frags[3].owner, NULL);
	} else {
		cr_assert_eq(fnd.tx_trains, 0);
		cr_assert_eq(fnd.late[0]->nfrags, 1, "the header in the host part, the data a fragment");
		cr_assert_eq(fnd.late[2]->nfrags, 2, "the data's end, then the response");
	}
	struct tcp_sndent *e = container_of(s->sndq.next, struct tcp_sndent, node);
	cr_assert_eq(e->inflight, 0, "no reference on the header's entry");
	struct fake_parsed_tcp *g = txseg(0);
	cr_assert_eq(g->flags, TCP_ACK);
	cr_assert_eq(memcmp(g->payload, resp, sizeof(resp)), 0);
	cr_assert_eq(memcmp(g->payload + sizeof(resp), data, g->len - sizeof(resp)), 0);
	size_t at = g->len - sizeof(resp);
	g = txseg(1);
	cr_assert_eq(g->flags, TCP_ACK);
	cr_assert_eq(memcmp(g->payload, data + at, g->len), 0);
	at += g->len;
	g = txseg(2);
	cr_assert_eq(g->flags, TCP_ACK | TCP_PSH);
	cr_assert_eq(g->len, sizeof(data) - at + sizeof(resp));
	cr_assert_eq(memcmp(g->payload, data + at, sizeof(data) - at), 0);
	cr_assert_eq(memcmp(g->payload + sizeof(data) - at, resp, sizeof(resp)), 0);
	peer_seg(TCP_ACK, 1001, iss + 1 + sizeof(data) + 2 * sizeof(resp), 65535, NULL, 0, NULL, 0);
	cr_assert_eq(frags_released, 0, "the device still reads the data");
	fake_netdev_tx_complete(&fnd);
	fnd.tx_late = false;
	cr_assert_eq(frags_released, 1);
	close_conn(s);
}

Test(tcp_flush, a_pdu_header_is_copied_into_the_first_frame)
{
	pdu_header_copied(false);
}

Test(tcp_flush, a_pdus_three_frames_go_as_one_mixed_train)
{
	pdu_header_copied(true);
}

/* A short run's train the device has no room for is refused whole: no frame of it went
 * out, SND.NXT stays, the refusal counted once, the socket waits its turn (the device
 * stopped); once the ring has room again, its turn sends the same three frames. */
Test(tcp_flush, a_refused_mixed_train_leaves_tcp_as_a_refused_frame)
{
	static uint8_t data[4096];
	struct tcp_sock *s = open_conn();
	struct netdev_frag f = { .addr = dma_addr_host(data), .len = sizeof(data) };

	for (size_t k = 0; k < sizeof(data); k++)
		data[k] = (uint8_t)(k * 7);
	uint8_t *h = tcp_send_place_frags(s, sizeof(resp), sizeof(data) + sizeof(resp), 1);
	cr_assert_not_null(h);
	memcpy(h, resp, sizeof(resp));
	tcp_send_placed_frags(s, sizeof(resp), &f, 1);
	place_resp(s);
	fnd.tx_refuse = 1;
	tcp_flush(s);
	cr_assert_eq(fnd.tx_refused, 1);
	cr_assert_eq(fnd.ntx, 0, "no frame of the refused train went out");
	cr_assert_eq(tcp_stats()->tx_refused, 1);
	cr_assert(fnd.dev.tx_stopped);
	struct tcp_info i;
	tcp_get_info(s, &i);
	cr_assert_eq(i.snd_nxt, iss + 1, "SND.NXT where it was");
	cr_assert(s->t_rexmit.armed, "the retry's backstop");
	cr_assert_eq(poll_pass(), 0, "no turn while the device is stopped");
	netdev_tx_wake(&fnd.dev);
	cr_assert_gt(poll_pass(), 0);
	cr_assert_eq(fnd.ntx, 3, "sent on its turn");
	struct fake_parsed_tcp *g = txseg(2);
	cr_assert_eq(g->seq + g->len, iss + 1 + sizeof(data) + 2 * sizeof(resp));
	peer_seg(TCP_ACK, 1001, iss + 1 + sizeof(data) + 2 * sizeof(resp), 65535, NULL, 0, NULL, 0);
	close_conn(s);
}
