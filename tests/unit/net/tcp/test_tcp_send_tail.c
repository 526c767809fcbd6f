// sources: drivers/nic/netdev.c net/net.c lib/ipv4_text.c net/arp.c net/ipv4.c net/udp.c net/tcp/tcp.c net/tcp/tcp_in.c net/tcp/tcp_isn.c net/tcp/tcp_pools.c net/tcp/tcp_admit.c tests/unit/net/fake_entropy.c net/tcp/tcp_hdr.c net/tcp/tcp_out.c net/tcp/tcp_budget.c net/tcp/tcp_sack.c net/tcp/tcp_service.c mm/pool.c mm/dma.c lib/timer.c lib/log.c tests/unit/net/fake_netdev.c
/*
 * A PDU, its zero-copy data and the short PDU behind it in one room check
 * (tcp_send_place_frags_tail, tcp_send_placed_frags_tail: an NVMe/TCP read's C2HData header,
 * data and CapsuleResp), and a placed PDU flushed at once (tcp_send_placed_flush): the same send entries, frames, counters and state as the separate
 * calls (tcp_send_place_frags, tcp_send_placed_frags, tcp_send_place, tcp_send_placed) and
 * tcp_flush; one refusal for all of it when any of it does not fit, which TCP_EV_SENT follows.
 */
#include "tests/unit/net/tcp/tcp_test.h"

#define TAIL_FEATURES (NETDEV_F_RX_SPLIT | NETDEV_F_TX_CSUM)

static void tail_setup(void)
{
	net_test_start(TAIL_FEATURES);
}

TestSuite(tcp_send_tail, .init = tail_setup, .fini = net_teardown);

static uint8_t pattern[131072];
static struct netdev_frag_owner counting = { "test", frag_count_release };
static const uint8_t hdr[24] = { 7, 0, 24, 24, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };
static const uint8_t resp[28] = { 5, 0, 24, 0, 24, 0, 0, 0, 21, 22, 23, 24, 25, 26, 27, 28, 29,
				  30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40 };

/* What one run left after its flush: its frames, its send queue's entries (seq, bytes, cap,
 * memory), whether it is on the held list, state and counters. */
struct shape {
	unsigned nframes;
	struct fake_frame frames[FAKE_TX_MAX];
	unsigned nents;
	struct { uint32_t seq, len; uint16_t cap; uint16_t provider; } ents[16];
	struct tcp_info info;
	uint64_t send_refused, segs_out, tx_host, cpu_host;
	bool held, ack_owed;
};
static struct shape shapes[2];

/* The scenario: data of len bytes (0: a response alone) in nfrags user fragments behind a
 * header of hl bytes, then the tail (tl bytes); before it, prior: 0 nothing, 1 a response
 * sent and acknowledged, 2 a response queued and held (the header then goes into a chunk);
 * req: the peer's segment of that many bytes just taken (an ACK owed); wnd the peer's window. */
struct scenario {
	size_t len, hl, tl, req;
	unsigned nfrags, prior;
	uint16_t wnd;
};

/* How a run queues and flushes: the separate calls then tcp_flush (OLD), the one-check calls
 * then tcp_flush (ONE), the one-check calls that flush (ONE_FLUSH: tcp_send_placed_flush for
 * a response alone, tcp_send_placed_frags_tail_flush for the PDU with data). */
enum way { OLD, ONE, ONE_FLUSH };

/* Queue the scenario's PDU and tail (or its response alone) one way, and flush. */
static void queue_pdu(struct tcp_sock *s, const struct scenario *sc, enum way way)
{
	struct netdev_frag f[4];
	if (!sc->len) {
		uint8_t *p = tcp_send_place(s, sc->tl, 0);
		cr_assert_not_null(p);
		memcpy(p, resp, sc->tl);
		if (way == ONE_FLUSH) {
			tcp_send_placed_flush(s, sc->tl);
			return;
		}
		tcp_send_placed(s, sc->tl);
		tcp_flush(s);
		return;
	}
	size_t per = sc->len / sc->nfrags;
	for (unsigned i = 0; i < sc->nfrags; i++)
		f[i] = (struct netdev_frag){ .addr = dma_addr_host(pattern + i * per),
					     .len = (uint32_t)(i + 1 == sc->nfrags ? sc->len - i * per : per),
					     .provider = NETDEV_PROVIDER_HOST, .owner = &counting };
	if (way != OLD) {
		void *t = NULL;
		uint8_t *h = tcp_send_place_frags_tail(s, sc->hl, sc->len, sc->nfrags, sc->tl, &t);
		cr_assert_not_null(h);
		cr_assert_not_null(t);
		memcpy(h, hdr, sc->hl);
		memcpy(t, resp, sc->tl);
		if (way == ONE_FLUSH) {
			tcp_send_placed_frags_tail_flush(s, sc->hl, f, sc->nfrags, t, sc->tl);
			return;
		}
		tcp_send_placed_frags_tail(s, sc->hl, f, sc->nfrags, t, sc->tl);
		tcp_flush(s);
		return;
	}
	uint8_t *h = tcp_send_place_frags(s, sc->hl, sc->len, sc->nfrags);
	cr_assert_not_null(h);
	memcpy(h, hdr, sc->hl);
	tcp_send_placed_frags(s, sc->hl, f, sc->nfrags);
	uint8_t *p = tcp_send_place(s, sc->tl, 0);
	cr_assert_not_null(p);
	memcpy(p, resp, sc->tl);
	tcp_send_placed(s, sc->tl);
	tcp_flush(s);
}

/* One run of the scenario on a fresh stack, its shape in shapes[run]. */
static void run_scenario(unsigned run, const struct scenario *sc, enum way way)
{
	struct shape *o = &shapes[run];
	struct tcp_sock *l;

	net_teardown();
	net_test_start(TAIL_FEATURES);
	memset(o, 0, sizeof(*o));
	uint32_t iss = open_passive(&l, 1000, sc->wnd, opt_mss1460, 4);
	struct tcp_sock *s = accepted;
	uint32_t una = iss + 1, rcv = 1001;
	if (sc->prior) {
		uint8_t *p = tcp_send_place(s, 24, 0);
		cr_assert_not_null(p);
		memcpy(p, resp, 24);
		tcp_send_placed(s, 24);
		if (sc->prior == 1) {
			tcp_flush(s);
			una += 24;
			peer_seg(TCP_ACK, rcv, una, sc->wnd, NULL, 0, NULL, 0);
		}
	}
	for (size_t at = 0; at < sc->req;) { /* (its ACK owed: the PDU carries it; two full
					       * segments: the batch ACK owed, s held already) */
		uint8_t sink[64];
		size_t k = sc->req - at < 1460 ? sc->req - at : 1460;
		peer_seg(TCP_ACK | (at + k == sc->req ? TCP_PSH : 0), rcv, una, sc->wnd, pattern + 100 + at, k, NULL, 0);
		rcv += (uint32_t)k;
		at += k;
		while (tcp_recv_copy(s, sink, sizeof(sink)))
			;
	}
	fake_netdev_clear(&fnd);
	ipv4_ident = 0x4321; /* (every run's frames from the same identification) */
	uint64_t cpu0 = dma_counters()->cpu_bytes[MEM_CLASS_HOST];
	queue_pdu(s, sc, way);
	o->cpu_host = dma_counters()->cpu_bytes[MEM_CLASS_HOST] - cpu0;
	o->held = !list_empty(&s->held_node);
	o->ack_owed = s->ack_now || s->ack_delayed || s->ack_pass_end;
	struct list_node *it;
	list_for_each(&s->sndq, it) {
		struct tcp_sndent *e = container_of(it, struct tcp_sndent, node);
		cr_assert_lt(o->nents, 16);
		o->ents[o->nents].seq = e->seq - iss;
		o->ents[o->nents].len = e->frag.len;
		o->ents[o->nents].cap = e->cap;
		o->ents[o->nents].provider = e->frag.provider;
		o->nents++;
	}
	cr_assert_eq(s->sndents, o->nents, "every entry taken is queued");
	o->nframes = fnd.ntx;
	memcpy(o->frames, fnd.tx, fnd.ntx * sizeof(fnd.tx[0]));
	tcp_get_info(s, &o->info);
	o->send_refused = tcp_stats()->send_refused;
	o->segs_out = tcp_stats()->segs_out;
	o->tx_host = tcp_stats()->tx_payload_host;
	poll_pass(); /* (the end of the pass: what is held goes, as it would) */
	tcp_abort(s);
	close_listener(l);
}

static void assert_same_shape(const struct scenario *sc)
{
	struct shape *a = &shapes[0], *b = &shapes[1];
	cr_assert_eq(a->nents, b->nents, "%zu bytes, prior %u: %u entries, %u in one check", sc->len, sc->prior,
		     a->nents, b->nents);
	for (unsigned i = 0; i < a->nents; i++) {
		cr_assert_eq(a->ents[i].seq, b->ents[i].seq, "%zu bytes: entry %u's seq", sc->len, i);
		cr_assert_eq(a->ents[i].len, b->ents[i].len, "%zu bytes: entry %u's bytes", sc->len, i);
		cr_assert_eq(a->ents[i].cap, b->ents[i].cap, "%zu bytes: entry %u's kind", sc->len, i);
		cr_assert_eq(a->ents[i].provider, b->ents[i].provider);
	}
	cr_assert_eq(a->held, b->held, "%zu bytes, window %u, req %zu: held alike", sc->len, sc->wnd, sc->req);
	cr_assert_eq(a->ack_owed, b->ack_owed, "%zu bytes, req %zu: ACK owed alike", sc->len, sc->req);
	cr_assert_eq(a->cpu_host, b->cpu_host, "the bytes built in place, counted alike");
	cr_assert_eq(a->nframes, b->nframes, "%zu bytes, window %u: %u frames, %u in one check", sc->len, sc->wnd,
		     a->nframes, b->nframes);
	for (unsigned i = 0; i < a->nframes; i++) {
		cr_assert_eq(a->frames[i].len, b->frames[i].len, "%zu bytes: frame %u's length", sc->len, i);
		/* (the IPv4 identification counts on across runs, and its header checksum with it) */
		memset(a->frames[i].b + 18, 0, 2);
		memset(b->frames[i].b + 18, 0, 2);
		memset(a->frames[i].b + 24, 0, 2);
		memset(b->frames[i].b + 24, 0, 2);
		cr_assert_eq(memcmp(a->frames[i].b, b->frames[i].b, a->frames[i].len), 0, "%zu bytes: frame %u",
			     sc->len, i);
	}
	cr_assert_eq(a->info.snd_nxt, b->info.snd_nxt);
	cr_assert_eq(a->info.sndq_bytes, b->info.sndq_bytes);
	cr_assert_eq(a->info.segs_out, b->info.segs_out);
	cr_assert_eq(a->send_refused, b->send_refused);
	cr_assert_eq(a->segs_out, b->segs_out);
	cr_assert_eq(a->tx_host, b->tx_host);
}

/* Short and long data (held for tcp_flush, full segments at once, more than one pass
 * sends), one and two fragments, 24 and 28-byte tails (a header digest's), behind nothing,
 * an acknowledged response or one still queued (the header into a chunk), with and without
 * an ACK owed, windows that take it all or hold it back; queued and flushed by the one-check
 * calls (then tcp_flush, or tcp_send_placed_flush and tcp_send_placed_frags_tail_flush): the
 * same entries, frames, held state and counters as by the separate calls and tcp_flush. */
Test(tcp_send_tail, the_entries_and_frames_are_those_of_the_separate_calls)
{
	/* (100000: more than one pass sends, TCP_OUTPUT_BUDGET segments) */
	static const size_t lens[] = { 0, 1, 100, 1400, 1460, 4096, 9000, 100000 };
	static const uint16_t wnds[] = { 65535, 10, 3000 };

	for (size_t i = 0; i < sizeof(pattern); i++)
		pattern[i] = (uint8_t)(i * 29 + (i >> 7));
	for (unsigned li = 0; li < sizeof(lens) / sizeof(lens[0]); li++)
		for (unsigned nf = 1; nf <= 2; nf++)
			for (unsigned prior = 0; prior < 3; prior++)
				for (unsigned w = 0; w < sizeof(wnds) / sizeof(wnds[0]); w++)
					for (unsigned v = 0; v < 6; v++)
						for (unsigned way = ONE; way <= ONE_FLUSH; way++) {
							static const size_t reqs[] = { 0, 200, 2920 };
							struct scenario sc = { .len = lens[li], .hl = 24,
									       .tl = (v & 1) ? 28 : 24,
									       .req = reqs[v / 2], .nfrags = nf,
									       .prior = prior, .wnd = wnds[w] };
							if (nf > sc.len && sc.len)
								continue;
							run_scenario(0, &sc, OLD);
							run_scenario(1, &sc, (enum way)way);
							assert_same_shape(&sc);
						}
}

/* A PDU queued whole behind nothing unsent and flushed at once (tcp_send_placed_frags_tail_flush),
 * whose train tcp_flush_pdu builds from the three entries it queued (tcp_out.c), against the
 * same PDU queued without the flush, then tcp_flush (tcp_output_short, tcp_short_lay): the
 * same frames byte for byte, the IPv4 identification and checksum included (both runs from
 * the same identification), and the same entries, state and counters. Data putting the PDU
 * in two or three segments, ending inside a frame or on a frame's boundary (the last frame
 * the tail alone), or so that the tail straddles two frames, or four segments (both: the
 * general paths); 24 and 28-byte tails; with and without an ACK owed; windows that take it
 * all or not. */
Test(tcp_send_tail, a_pdu_flushed_at_once_is_the_general_paths_train_byte_for_byte)
{
	static const size_t lens[] = { 1000, 1435, 1436, 1437, 1500, 2895, 2896, 2897, 4096, 4328, 4332, 4333 };
	static const uint16_t wnds[] = { 65535, 3000 };
	static const size_t reqs[] = { 0, 200, 2920 };

	for (size_t i = 0; i < sizeof(pattern); i++)
		pattern[i] = (uint8_t)(i * 31 + (i >> 8));
	for (unsigned li = 0; li < sizeof(lens) / sizeof(lens[0]); li++)
		for (unsigned w = 0; w < sizeof(wnds) / sizeof(wnds[0]); w++)
			for (unsigned v = 0; v < 6; v++) {
				struct scenario sc = { .len = lens[li], .hl = 24, .tl = (v & 1) ? 28 : 24,
						       .req = reqs[v / 2], .nfrags = 1, .prior = 0, .wnd = wnds[w] };
				run_scenario(0, &sc, ONE);
				run_scenario(1, &sc, ONE_FLUSH);
				struct shape *a = &shapes[0], *b = &shapes[1];
				cr_assert_eq(a->nframes, b->nframes, "%zu bytes: %u frames, %u flushed at once", sc.len,
					     a->nframes, b->nframes);
				for (unsigned k = 0; k < a->nframes; k++) {
					cr_assert_eq(a->frames[k].len, b->frames[k].len, "%zu bytes: frame %u's length",
						     sc.len, k);
					cr_assert_eq(memcmp(a->frames[k].b, b->frames[k].b, a->frames[k].len), 0,
						     "%zu bytes, tail %zu, window %u, req %zu: frame %u", sc.len, sc.tl,
						     sc.wnd, sc.req, k);
				}
				assert_same_shape(&sc);
			}
}

/* Room for the header and its data (what tcp_send_place_frags asks) but not for the tail:
 * refused whole (nothing queued, no entry taken), counted as a refusal; the ACK of what is in
 * flight brings TCP_EV_SENT, and then all of it fits. */
Test(tcp_send_tail, no_room_for_the_tail_refuses_all_of_it_and_tcp_ev_sent_follows)
{
	static uint8_t big[65536];
	struct tcp_sock *l;
	uint32_t iss = open_passive(&l, 1000, 65535, opt_mss1460, 4);
	struct tcp_sock *s = accepted;
	struct netdev_frag f[4];

	for (unsigned i = 0; i < 4; i++)
		f[i] = (struct netdev_frag){ .addr = dma_addr_host(big), .len = sizeof(big),
					     .provider = NETDEV_PROVIDER_HOST, .owner = &counting };
	f[0].len = 2 * 1460; /* (acknowledged whole below: its room comes back) */
	f[3].len = TCP_SND_BUF - f[0].len - 2 * sizeof(big) - (24 + 4096 + 24 - 1); /* header and data fit, the tail not */
	frags_released = 0;
	cr_assert_eq(tcp_send_frags(s, f, 4), 0);
	tcp_flush(s);
	cr_assert_eq(tcp_send_space(s), 24 + 4096 + 24 - 1, "room for the header and data alone");
	uint64_t refused = tcp_stats()->send_refused;
	unsigned ents = s->sndents, sent_ev = ev_count[3];
	uint32_t end = s->snd_end;
	void *t = NULL;
	cr_assert_null(tcp_send_place_frags_tail(s, 24, 4096, 1, 24, &t));
	cr_assert_eq(tcp_stats()->send_refused, refused + 1, "a refusal recorded");
	cr_assert_eq(s->sndents, ents, "no entry taken");
	cr_assert_eq(s->snd_end, end, "nothing queued");
	cr_assert(s->send_refused, "TCP_EV_SENT owed");
	/* the peer acknowledges the first fragment: TCP_EV_SENT, and room for all of it */
	peer_seg(TCP_ACK, 1001, iss + 1 + 2 * 1460, 65535, NULL, 0, NULL, 0);
	cr_assert_gt(ev_count[3], sent_ev, "TCP_EV_SENT follows the refusal");
	cr_assert_eq(s->sndents, ents - 1, "the first fragment's entry back");
	uint8_t *h = tcp_send_place_frags_tail(s, 24, 4096, 1, 24, &t);
	cr_assert_not_null(h);
	memcpy(h, hdr, 24);
	memcpy(t, resp, 24);
	struct netdev_frag d = { .addr = dma_addr_host(pattern), .len = 4096, .provider = NETDEV_PROVIDER_HOST,
				 .owner = &counting };
	tcp_send_placed_frags_tail(s, 24, &d, 1, t, 24);
	cr_assert_eq(s->snd_end, end + 24 + 4096 + 24);
	cr_assert_eq(s->sndents, ents - 1 + 3, "header, data and tail entries");
	tcp_abort(s);
	close_listener(l);
	cr_assert_eq(frags_released, 5, "every fragment given back");
}

/* A tail longer than TCP_SEND_TAIL_MAX or empty is not what the call is for: NULL, nothing
 * taken, no refusal recorded. */
Test(tcp_send_tail, a_tail_past_its_limit_is_not_taken)
{
	struct tcp_sock *l;
	open_passive(&l, 1000, 65535, opt_mss1460, 4);
	struct tcp_sock *s = accepted;
	struct netdev_frag d = { .addr = dma_addr_host(pattern), .len = 100, .provider = NETDEV_PROVIDER_HOST };
	void *t = NULL;

	cr_assert_null(tcp_send_place_frags_tail(s, 24, 100, 1, TCP_SEND_TAIL_MAX + 1, &t));
	cr_assert_null(tcp_send_place_frags_tail(s, 24, 100, 1, 0, &t));
	cr_assert_eq(s->sndents, 0);
	cr_assert_eq(tcp_stats()->send_refused, 0);
	cr_assert_not_null(tcp_send_place_frags_tail(s, 24, 100, 1, TCP_SEND_TAIL_MAX, &t));
	tcp_send_placed_frags_tail(s, 24, &d, 1, t, TCP_SEND_TAIL_MAX);
	cr_assert_eq(s->sndq_bytes, 24 + 100 + TCP_SEND_TAIL_MAX);
	tcp_abort(s);
	close_listener(l);
}

/* A response placed alone and flushed at once (tcp_send_placed_flush), whose frame
 * tcp_flush_one sends (tcp_out.c), against the same response placed, then tcp_flush
 * (tcp_output_one or tcp_output_work): the same frames byte for byte, the IPv4
 * identification and checksum included (both runs from the same identification), and the
 * same entries, state and counters. 24 and 28-byte responses (a header digest's) behind
 * nothing, an acknowledged response or one still queued (not alone: the general path);
 * with and without an ACK owed (at once, or the batch's: s held); windows that take it or not. */
Test(tcp_send_tail, a_response_flushed_at_once_is_the_general_paths_frame_byte_for_byte)
{
	static const uint16_t wnds[] = { 65535, 3000, 10 };
	static const size_t reqs[] = { 0, 200, 2920 };

	for (unsigned prior = 0; prior < 3; prior++)
		for (unsigned w = 0; w < sizeof(wnds) / sizeof(wnds[0]); w++)
			for (unsigned v = 0; v < 6; v++) {
				struct scenario sc = { .len = 0, .hl = 24, .tl = (v & 1) ? 28 : 24, .req = reqs[v / 2],
						       .nfrags = 1, .prior = prior, .wnd = wnds[w] };
				run_scenario(0, &sc, ONE);
				run_scenario(1, &sc, ONE_FLUSH);
				struct shape *a = &shapes[0], *b = &shapes[1];
				cr_assert_eq(a->nframes, b->nframes, "prior %u, req %zu: %u frames, %u flushed at once",
					     prior, sc.req, a->nframes, b->nframes);
				for (unsigned k = 0; k < a->nframes; k++) {
					cr_assert_eq(a->frames[k].len, b->frames[k].len, "frame %u's length", k);
					cr_assert_eq(memcmp(a->frames[k].b, b->frames[k].b, a->frames[k].len), 0,
						     "tail %zu, window %u, req %zu, prior %u: frame %u", sc.tl, sc.wnd,
						     sc.req, prior, k);
				}
				assert_same_shape(&sc);
			}
}
