/*
 * tcp_in.c - TCP segment arrival (RFC 9293 section 3.10.7): tcp_rx() takes a segment
 * that IPv4 delivered, has tcp_hdr.c parse its header into locals, finds the socket and
 * runs the checks of the state it is in; the receive queues (in order and out of order)
 * live here too. Everything else of a socket (lifecycle, user API) is in tcp.c.
 *
 * Received payload never becomes a host pointer: the bytes after the TCP header are the
 * netbuf's fragments (device memory, moved into the socket's queues as they are) plus,
 * for frames the NIC did not split, bytes in the host part, which are copied into a
 * stack chunk (counted) because the host part goes back to the NIC with the headers.
 */
#include <errno.h>
#include <string.h>
#include "../../lib/clock.h"
#include "../../lib/log.h"
#include "../../mm/pool.h"
#include "tcp_internal.h"

LOG_MODULE_USE(tcp);

/* --- options ----------------------------------------------------------------------- */

/* Negotiated values from the peer's SYN. */
static void apply_syn_options(struct tcp_sock *s, const struct tcp_opts *o)
{
	unsigned our = net_if0.dev ? net_if0.dev->mtu - 40 : 1460;
	unsigned mss = o->has_mss ? o->mss : TCP_MSS_DEFAULT;
	if (mss > our)
		mss = our;
	if (mss < 64)
		mss = 64;
	s->mss = (uint16_t)mss;
	s->win_full = 0; /* (a writer of mss: see tcp_internal.h) */
	if (o->has_ws) {
		s->snd_wscale = o->ws;
		s->rcv_wscale = TCP_RCV_WSCALE;
	} else {
		s->snd_wscale = 0;
		s->rcv_wscale = 0;
	}
	s->sack_ok = o->sack_perm; /* ours goes in every SYN and in SYN-ACKs to peers that offer it */
	/* RFC 5681 3.1 initial window. */
	s->cwnd = mss > 2190 ? 2 * mss : mss > 1095 ? 3 * mss : 4 * mss;
}

/* --- receive queue ----------------------------------------------------------------- */

/* A segment's payload as a short list of fragments with sequence numbers. */
struct seg_payload {
	unsigned n;
	uint32_t seq[NETBUF_MAX_FRAGS + 8];
	struct netdev_frag f[NETBUF_MAX_FRAGS + 8];
};

static void payload_release(struct seg_payload *p)
{
	for (unsigned i = 0; i < p->n; i++)
		netdev_frag_release(&p->f[i]);
	p->n = 0;
}

/* Move the payload out of nb (data at the first payload byte). */
static int payload_take(struct tcp_sock *s, struct netbuf *nb, uint32_t seq, struct seg_payload *p)
{
	size_t host = netbuf_host_len(nb);
	size_t off = 0;

	p->n = 0;
	while (off < host) {
		size_t n = host - off < TCP_CHUNK_SIZE ? host - off : TCP_CHUNK_SIZE;
		if (p->n >= 8 || tcp_chunk_frag(s, true, nb->data + off, n, &p->f[p->n]))
			return -ENOMEM;
		p->seq[p->n++] = seq;
		tcp_counters.rx_payload_host += n;
		seq += (uint32_t)n;
		off += n;
	}
	nb->data = nb->tail;
	/* Every fragment moves, in order, in one pass (the netbuf keeps none). */
	for (unsigned i = 0; i < nb->nfrags; i++) {
		struct netdev_frag *f = &nb->frags[i];
		if (f->len == 0) {
			netdev_frag_release(f);
			continue;
		}
		if (f->addr.cls == MEM_CLASS_DEVICE)
			tcp_counters.rx_payload_device += f->len;
		else
			tcp_counters.rx_payload_host += f->len;
		p->f[p->n] = *f;
		p->seq[p->n] = seq;
		seq += f->len;
		p->n++;
	}
	nb->nfrags = 0;
	return 0;
}

/* A receive entry (contents undefined): the last one a user gave back (tcp_rxent_cache),
 * else the pool's, else NULL (counted by the pool). */
static inline __attribute__((always_inline)) struct tcp_rxent *rxent_get(void)
{
	struct list_node *c = tcp_rxent_cache.next;
	if (c != &tcp_rxent_cache) {
		struct list_node *n = c->next;
		tcp_rxent_cache.next = n;
		n->prev = &tcp_rxent_cache;
		tcp_rxent_cached--;
		return container_of(c, struct tcp_rxent, node);
	}
	return mm_pool_alloc(&tcp_rxent_pool);
}

/* Receive entries held by sockets' queues: the pool's in use but the cached ones. */
static inline __attribute__((always_inline)) size_t rxents_held(void)
{
	return tcp_rxent_pool.in_use - tcp_rxent_cached;
}

/* A receive entry for s: up to TCP_RXENT_RESERVE always (the pool keeps that many per
 * socket free), more while the pool's shared part lasts. */
static struct tcp_rxent *rxent_new(struct tcp_sock *s, uint32_t seq, struct netdev_frag *f)
{
	struct tcp_rxent *r = NULL;
	if (s->rxq_frags + s->ooo_frags < TCP_RXENT_RESERVE || rxents_held() < TCP_RXENTS - TCP_SOCKETS * TCP_RXENT_RESERVE)
		r = rxent_get();
	if (!r) {
		tcp_counters.rx_nobufs++;
		return NULL;
	}
	list_init(&r->node);
	r->seq = seq;
	r->frag = *f;
	f->owner = NULL;
	f->len = 0;
	return r;
}

/* Cut the front of a fragment so that it starts at seq `to`. */
static void frag_trim_front(uint32_t *seq, struct netdev_frag *f, uint32_t to)
{
	uint32_t cut = to - *seq;
	if (cut >= f->len) {
		netdev_frag_release(f);
		return;
	}
	f->addr = dma_addr_add(f->addr, cut);
	f->offset += cut;
	f->len -= cut;
	*seq = to;
}

/* Append an in-order fragment (seq == rcv_nxt) to the receive queue. */
static bool rxq_append(struct tcp_sock *s, uint32_t seq, struct netdev_frag *f)
{
	struct tcp_rxent *r = rxent_new(s, seq, f);
	if (!r)
		return false;
	list_add_tail(&s->rxq, &r->node);
	s->rxq_bytes += r->frag.len;
	s->rxq_frags++;
	s->rcv_nxt += r->frag.len;
	return true;
}

/* Move out-of-order fragments that have become in order; drop what is covered. */
static void ooo_drain(struct tcp_sock *s)
{
	struct list_node *it, *tmp;
	list_for_each_safe(&s->ooo, it, tmp) {
		struct tcp_rxent *r = container_of(it, struct tcp_rxent, node);
		if (SEQ_GT(r->seq, s->rcv_nxt))
			break;
		list_del(it);
		s->ooo_frags--;
		frag_trim_front(&r->seq, &r->frag, s->rcv_nxt);
		if (r->frag.len == 0) {
			mm_pool_free(&tcp_rxent_pool, r);
			continue;
		}
		list_add_tail(&s->rxq, &r->node);
		s->rxq_bytes += r->frag.len;
		s->rxq_frags++;
		s->rcv_nxt += r->frag.len;
	}
}

/* Out-of-order fragments s may hold: the segments its advertised window spans (what a
 * peer sending full segments needs, and what the buffer budget promised), at least 4,
 * at most TCP_OOO_FRAGS_MAX. */
static unsigned tcp_ooo_cap(const struct tcp_sock *s)
{
	uint32_t span = SEQ_GT(s->rcv_adv, s->rcv_nxt) ? s->rcv_adv - s->rcv_nxt : 0;
	unsigned n = (unsigned)((span + s->mss - 1) / (s->mss ? s->mss : 1));
	if (n < 4)
		n = 4;
	return n < TCP_OOO_FRAGS_MAX ? n : TCP_OOO_FRAGS_MAX;
}

/* Free the highest out-of-order fragment of s (the peer sends it again). */
static void ooo_drop_last(struct tcp_sock *s)
{
	struct tcp_rxent *r = container_of(s->ooo.prev, struct tcp_rxent, node);
	list_del(&r->node);
	s->ooo_frags--; /* RFC 2018 8: a receiver may renege; SACK blocks follow the queue */
	tcp_counters.ooo_pruned++;
	netdev_frag_release(&r->frag);
	mm_pool_free(&tcp_rxent_pool, r);
	tcp_budget_note(s); /* may be another socket than the one receiving (tcp_prune_ooo) */
}

/* Under buffer pressure (as Linux's tcp_prune_ofo_queue): take out-of-order fragments
 * back from the socket that holds the most, highest sequence first, until a received
 * buffer may be kept or no socket holds more than one. true when admission now passes. */
static bool tcp_prune_ooo(void)
{
	while (!tcp_rx_buf_admit()) {
		struct tcp_sock *worst = NULL;
		struct list_node *it;
		list_for_each(&tcp_socks, it) {
			struct tcp_sock *o = container_of(it, struct tcp_sock, node);
			if (o->ooo_frags > 1 && (!worst || o->ooo_frags > worst->ooo_frags))
				worst = o;
		}
		if (!worst)
			return false;
		ooo_drop_last(worst);
	}
	return true;
}

/* Hold a fragment beyond RCV.NXT, sorted and without overlap (bounded). */
static void ooo_insert(struct tcp_sock *s, uint32_t seq, struct netdev_frag *f)
{
	struct list_node *it, *tmp, *after = &s->ooo;
	uint32_t end = seq + f->len;

	list_for_each_safe(&s->ooo, it, tmp) {
		struct tcp_rxent *r = container_of(it, struct tcp_rxent, node);
		uint32_t rend = r->seq + r->frag.len;
		if (SEQ_LEQ(rend, seq)) {
			after = it;
			continue;
		}
		if (SEQ_LEQ(r->seq, seq)) {
			/* An earlier entry overlaps our front: keep its bytes, cut ours. */
			frag_trim_front(&seq, f, rend);
			after = it;
			if (f->len == 0)
				return;
			end = seq + f->len;
			continue;
		}
		if (SEQ_GEQ(r->seq, end))
			break;
		if (SEQ_LEQ(rend, end)) {
			/* Entirely covered by the new fragment: replace it. */
			list_del(it);
			s->ooo_frags--;
			netdev_frag_release(&r->frag);
			mm_pool_free(&tcp_rxent_pool, r);
			continue;
		}
		/* Overlaps our tail: cut ours. */
		f->len = r->seq - seq;
		end = r->seq;
		break;
	}
	if (f->len == 0)
		return;
	if (s->ooo_frags >= tcp_ooo_cap(s)) {
		/* As many fragments as the window has segments: tiny segments beyond that
		 * cannot pin buffers. Keep the data nearest RCV.NXT (what fills the hole). */
		struct tcp_rxent *last = container_of(s->ooo.prev, struct tcp_rxent, node);
		if (after == s->ooo.prev || SEQ_GT(seq, last->seq)) {
			tcp_counters.ooo_drops++;
			netdev_frag_release(f);
			return;
		}
		ooo_drop_last(s);
	}
	struct tcp_rxent *r = rxent_new(s, seq, f);
	if (!r) {
		netdev_frag_release(f);
		return;
	}
	list_insert_between(&r->node, after, after->next);
	s->ooo_frags++;
}

/* payload_take, and when the chunks for the segment at RCV.NXT are short while s holds
 * out-of-order chunks (copy mode), give those back (highest first, the peer sends them
 * again) until it fits: the data that fills the hole must always find room, or the
 * out-of-order data holding the last chunks would wait for it forever. */
static int payload_take_inorder(struct tcp_sock *s, struct netbuf *nb, uint32_t seq, struct seg_payload *p)
{
	int rc;
	size_t len = netbuf_host_len(nb);
	while ((rc = payload_take(s, nb, seq, p)) && SEQ_LEQ(seq, s->rcv_nxt) && SEQ_GT(seq + (uint32_t)len, s->rcv_nxt) &&
	       s->ooo_frags &&
	       container_of(s->ooo.prev, struct tcp_rxent, node)->frag.owner == tcp_chunk_owner_p) {
		payload_release(p);
		ooo_drop_last(s);
	}
	return rc;
}

/* --- segment arrival --------------------------------------------------------------- */

static inline __attribute__((always_inline)) void update_rtt_inl(struct tcp_sock *s, uint64_t r)
{
	/* RFC 6298 2.2 / 2.3 with alpha 1/8, beta 1/4, K 4, G ~ 0. */
	if (!s->rtt_valid) {
		s->srtt_ns = r;
		s->rttvar_ns = r / 2;
		s->rtt_valid = true;
	} else {
		uint64_t d = s->srtt_ns > r ? s->srtt_ns - r : r - s->srtt_ns;
		s->rttvar_ns = (3 * s->rttvar_ns + d) / 4;
		s->srtt_ns = (7 * s->srtt_ns + r) / 8;
	}
	s->rto_ns = s->srtt_ns + 4 * s->rttvar_ns;
	if (s->rto_ns < TCP_RTO_MIN_NS)
		s->rto_ns = TCP_RTO_MIN_NS;
	if (s->rto_ns > TCP_RTO_MAX_NS)
		s->rto_ns = TCP_RTO_MAX_NS;
}

/* update_rtt_inl out of line, for the full path's samples. */
static __attribute__((noinline)) void update_rtt(struct tcp_sock *s, uint64_t r)
{
	update_rtt_inl(s, r);
}

/* Drop acknowledged bytes from the send queue: the entries wholly acknowledged come off
 * the head in one unlink; each one no frame refers to any more (most: the device is done
 * with a frame before its ACK comes) is freed here as s's own (tcp_sndent_free_own), one
 * still in a frame when that frame is done (tx_ref_release). */
static inline __attribute__((always_inline)) void sndq_ack_inl(struct tcp_sock *s, uint32_t ack)
{
	struct list_node *it = s->sndq.next;

	while (it != &s->sndq) {
		struct tcp_sndent *e = container_of(it, struct tcp_sndent, node);
		if (SEQ_GT(e->seq + e->frag.len, ack))
			break;
		it = it->next;
		s->sndq_bytes -= e->frag.len;
		if (s->snd_cursor == e)
			s->snd_cursor = NULL;
		if (e->inflight == 0) {
			tcp_sndent_free_own(s, e);
		} else {
			e->done = true;
			list_init(&e->node);
		}
	}
	s->sndq.next = it;
	it->prev = &s->sndq;
}

/* The congestion window after a new ACK of acked bytes outside recovery (RFC 5681).
 * Slow start by the bytes acknowledged (RFC 3465 byte counting, as Linux): a peer that ACKs
 * a whole flight at once (a TCG guest coalescing 45 segments, measured 2026-11-28) must not
 * slow it to one SMSS per round trip; not past ssthresh. Congestion avoidance: one SMSS
 * per cwnd of bytes acknowledged (RFC 5681 3.1, RFC 3465 2.1), however many ACKs carried
 * them; SMSS^2 / cwnd per ACK grew by ~30 bytes per round trip under those stretch ACKs
 * (128 KiB reads held at an 84 KiB cwnd). Only while the window is in use (RFC 7661 4.1, as
 * Linux's tcp_is_cwnd_limited in slow start): the flight this ACK ends (SND.MAX - SND.UNA
 * before it) at least half of cwnd. A sender limited by its application (a request's answer
 * at a time) otherwise grew cwnd without bound (146 MB measured on a 4 KiB read connection,
 * 2026-11-29), so a burst after a quiet spell would have gone out with no congestion window
 * at all; now cwnd stays within twice what was last in flight, and grows again as soon as
 * the application fills it. */
static inline __attribute__((always_inline)) void cwnd_grow(struct tcp_sock *s, uint32_t acked)
{
	if (2 * (s->snd_max - s->snd_una) < s->cwnd)
		return;
	if (s->cwnd < s->ssthresh) {
		uint32_t room = s->ssthresh - s->cwnd;
		s->cwnd += acked < room ? acked : room;
	} else {
		s->cwnd_acked += acked;
		if (s->cwnd_acked >= s->cwnd) {
			s->cwnd_acked -= s->cwnd;
			s->cwnd += s->mss;
		}
	}
}

/* sndq_ack_inl out of line, for all but header prediction's new ACK. */
static __attribute__((noinline)) void sndq_ack(struct tcp_sock *s, uint32_t ack)
{
	sndq_ack_inl(s, ack);
}

/* An ACK of new bytes: TCP_EV_SENT goes to the user when every such ACK raises it (the
 * default) or one is owed (a refusal since the last one: tcp_set_sent_when_owed), and what
 * the next such ACK raises is set back (tcp_sock's ack_sent_ev). */
static inline __attribute__((always_inline)) void ack_sent_raise(struct tcp_sock *s)
{
	s->pending_events |= s->ack_sent_ev;
	s->ack_sent_ev = s->ack_sent_idle;
}

/* Process an acceptable ACK (RFC 9293 3.10.7.4 fifth check, RFC 5681). Returns false
 * when the segment must be dropped. predicted (a constant): header prediction took the
 * segment (rx_fast_ok), whose ACK lies in [SND.UNA, SND.MAX] (inside RFC 5961's range, as
 * MAX.SND.WND < 2^31) and which has no SYN, FIN or SACK option: the tests that follow from
 * that are left out of its copy. */
static inline __attribute__((always_inline)) bool process_ack_core(struct tcp_sock *s, const struct tcp_seg *g,
								   bool predicted)
{
	uint32_t wnd = g->wnd << s->snd_wscale;

	/* RFC 5961 5.2: acceptable ACKs lie in [SND.UNA - MAX.SND.WND, SND.NXT]. */
	if (!predicted && SEQ_GT(g->ack, s->snd_max)) {
		tcp_send_challenge_ack(s);
		return false;
	}
	if (!predicted && SEQ_LT(g->ack, s->snd_una - s->max_snd_wnd)) {
		tcp_send_challenge_ack(s);
		return false;
	}
	if (SEQ_GT(g->ack, s->snd_una)) {
		uint32_t acked = g->ack - s->snd_una;
		if (s->timing && SEQ_GEQ(g->ack, s->rtt_seq)) {
			s->timing = false;
			/* header prediction read the clock for this segment a moment ago
			 * (rx_predicted: last_rx_ns); the full path reads it here */
			if (predicted)
				update_rtt_inl(s, s->last_rx_ns - s->rtt_start_ns);
			else
				update_rtt(s, clock_now_ns() - s->rtt_start_ns);
		}
		s->backoff = 0;
		/* Congestion control: deflate after recovery, else grow. */
		if (s->in_recovery) {
			if (SEQ_GEQ(g->ack, s->recover)) {
				s->in_recovery = false;
				s->cwnd = s->ssthresh;
			} else {
				/* NewReno partial ACK: retransmit the next hole. */
				s->snd_una = g->ack;
				sndq_ack(s, g->ack);
				tcp_retransmit_una(s);
			}
		} else {
			cwnd_grow(s, acked);
		}
		s->dupacks = 0;
		s->snd_una = g->ack;
		if (SEQ_LT(s->snd_nxt, s->snd_una))
			s->snd_nxt = s->snd_una;
		if (predicted)
			sndq_ack_inl(s, g->ack); /* (every ACK of a request's answer: no call) */
		else
			sndq_ack(s, g->ack);
		/* RFC 6298 5.2 / 5.3. Stopped, the timer stays queued and the next send's arm
		 * (tcp_out.c, the first frame after this) costs a compare; restarted, it keeps its
		 * place when that is no later (timer.h: re-armed lazily, never late). The restart
		 * counts from this segment's arrival (header prediction read the clock for it). */
		if (s->snd_una == s->snd_max) {
			timer_stop(&timer_default_queue, &s->t_rexmit);
			s->persist = false;
		} else {
			timer_arm(&timer_default_queue, &s->t_rexmit,
				  (predicted ? s->last_rx_ns : clock_now_ns()) + s->rto_ns);
		}
		ack_sent_raise(s);
	} else if (g->ack == s->snd_una && g->len == 0 && (predicted || !(g->flags & (TCP_SYN | TCP_FIN))) &&
		   s->snd_max != s->snd_una && wnd == s->snd_wnd &&
		   (predicted || !(g->opts.has_sack && SEQ_LEQ(g->opts.sack_right, g->ack)))) {
		/* RFC 5681 2: a duplicate ACK; not one that reports, with a D-SACK block below
		 * the cumulative ACK, that the peer got something twice (RFC 2883 5): counting
		 * those turns one spurious retransmission into a cascade. */
		s->dupacks++;
		if (s->dupacks == 3 && !s->in_recovery) {
			uint32_t flight = s->snd_max - s->snd_una;
			s->ssthresh = flight / 2 > 2u * s->mss ? flight / 2 : 2u * s->mss;
			s->cwnd_acked = 0;
			s->recover = s->snd_max;
			s->in_recovery = true;
			s->fast_retransmits++;
			tcp_counters.fast_retransmits++;
			tcp_retransmit_una(s);
			s->cwnd = s->ssthresh + 3u * s->mss;
		} else if (s->dupacks > 3 && s->in_recovery) {
			s->cwnd += s->mss;
		}
	}
	/* Window update (SND.WL1/WL2 rule). */
	if (SEQ_LT(s->snd_wl1, g->seq) || (s->snd_wl1 == g->seq && SEQ_LEQ(s->snd_wl2, g->ack))) {
		bool opened = s->snd_wnd == 0 && wnd > 0;
		s->snd_wnd = wnd;
		if (wnd)
			s->zwnd_since_ns = 0;
		s->snd_wl1 = g->seq;
		s->snd_wl2 = g->ack;
		if (wnd > s->max_snd_wnd)
			s->max_snd_wnd = wnd;
		if (opened && s->persist) {
			s->persist = false;
			s->backoff = 0;
			timer_cancel(&timer_default_queue, &s->t_rexmit);
			if (s->snd_una != s->snd_max)
				tcp_arm_rexmit(s);
		}
	}
	return true;
}

/* process_ack_core for every segment rx_sync takes. */
static bool process_ack(struct tcp_sock *s, const struct tcp_seg *g)
{
	return process_ack_core(s, g, false);
}

/* FIN state changes once our FIN is acknowledged. */
static bool our_fin_acked(const struct tcp_sock *s)
{
	return s->fin_queued && SEQ_GT(s->snd_una, s->snd_end);
}

static inline __attribute__((always_inline)) void schedule_ack(struct tcp_sock *s, bool now)
{
	if (now) {
		s->ack_now = true;
		return;
	}
	/* RFC 9293 3.8.6.3 / RFC 1122: ACK at least every second full-sized segment; those
	 * that came in one receive batch (one poll pass) may share the ACK sent at its end
	 * (tcp_tx_poll), as after Linux's GRO, up to tcp_ack_every segments. */
	if (++s->segs_unacked >= 2) {
		if (s->segs_unacked >= tcp_ack_every) {
			s->ack_now = true;
			return;
		}
		s->ack_pass_end = true;
		if (list_empty(&s->held_node)) /* (tcp_output_hold's test, inline) */
			tcp_output_hold(s);
		return;
	}
	/* The timer is left armed after an ACK goes out (tcp_xmit): one armed then is due no
	 * later than this ACK (every deadline is at most TCP_DELACK_NS ahead) and, when it fires
	 * early, re-arms itself for ack_due_ns (delack_timer). last_rx_ns: this segment's clock. */
	if (!s->ack_delayed) {
		s->ack_delayed = true;
		s->ack_due_ns = s->last_rx_ns + TCP_DELACK_NS;
	}
	if (!s->t_delack.armed)
		timer_arm(&timer_default_queue, &s->t_delack, s->ack_due_ns);
}

/* Apply a FIN at rcv_nxt. */
static void process_fin(struct tcp_sock *s)
{
	s->rcv_nxt++;
	s->fin_rcvd = true;
	s->ooo_fin = false;
	s->ack_now = true;
	s->pending_events |= TCP_EV_RECV;
	switch (s->state) {
	case TCP_SYN_RECEIVED:
	case TCP_ESTABLISHED:
		tcp_set_state(s, TCP_CLOSE_WAIT);
		break;
	case TCP_FIN_WAIT_1:
		if (our_fin_acked(s))
			tcp_enter_time_wait(s);
		else
			tcp_set_state(s, TCP_CLOSING);
		break;
	case TCP_FIN_WAIT_2:
		tcp_enter_time_wait(s);
		break;
	default:
		break;
	}
}

/* Segment text and FIN in a synchronized state (RFC 9293 3.10.7.4 seventh/eighth). */
static void process_text(struct tcp_sock *s, struct tcp_seg *g, struct seg_payload *p)
{
	bool can_take = s->state == TCP_ESTABLISHED || s->state == TCP_FIN_WAIT_1 || s->state == TCP_FIN_WAIT_2;
	uint32_t right = s->rcv_adv;
	uint32_t before = s->rcv_nxt;
	bool was_ooo = false, had_ooo = !list_empty(&s->ooo);
	uint32_t ooo_first = 0;

	if (!can_take || s->fin_rcvd) {
		payload_release(p);
		if (g->len)
			s->ack_now = true;
		return;
	}
	for (unsigned i = 0; i < p->n; i++) {
		uint32_t seq = p->seq[i];
		struct netdev_frag *f = &p->f[i];
		/* Trim to the window [RCV.NXT, advertised right edge). */
		if (SEQ_LT(seq, s->rcv_nxt))
			frag_trim_front(&seq, f, s->rcv_nxt);
		if (f->len == 0)
			continue;
		if (SEQ_GEQ(seq, right)) {
			netdev_frag_release(f);
			continue;
		}
		if (SEQ_GT(seq + f->len, right))
			f->len = right - seq;
		if (f->owner != tcp_chunk_owner_p && !tcp_rx_buf_admit() && !tcp_prune_ooo()) {
			/* More buffers than the windows promised: keep the reserve for ACKs. */
			tcp_counters.rx_budget_drops++;
			netdev_frag_release(f);
			continue;
		}
		if (seq == s->rcv_nxt) {
			if (!rxq_append(s, seq, f))
				netdev_frag_release(f);
		} else {
			if (!was_ooo)
				ooo_first = seq;
			was_ooo = true;
			ooo_insert(s, seq, f);
		}
	}
	payload_release(p);
	if (had_ooo)
		ooo_drain(s);
	if (was_ooo) {
		s->ooo_segs++;
		tcp_counters.ooo_segs++;
		if (s->sack_ok)
			tcp_sack_note(s, ooo_first);
	}
	if (s->rcv_nxt != before) {
		s->pending_events |= TCP_EV_RECV;
		tcp_rcv_cap_grow(s);
	}
	/* FIN: only once every byte before it is here. */
	if (g->flags & TCP_FIN) {
		uint32_t fin_seq = g->seq + (g->flags & TCP_SYN ? 1 : 0) + g->len;
		if (fin_seq == s->rcv_nxt)
			process_fin(s);
		else if (SEQ_GT(fin_seq, s->rcv_nxt)) {
			s->ooo_fin = true;
			s->ooo_fin_seq = fin_seq;
		}
	} else if (s->ooo_fin && s->ooo_fin_seq == s->rcv_nxt) {
		process_fin(s);
	}
	if (g->len || (g->flags & TCP_FIN))
		schedule_ack(s, was_ooo || had_ooo || s->rcv_nxt == before || (g->flags & TCP_FIN));
}

/* LISTEN (RFC 9293 3.10.7.2). */
static void rx_listen(struct tcp_sock *l, struct tcp_seg *g, uint32_t src, uint32_t dst, uint16_t sport)
{
	struct tcp_sock *c;

	if (g->flags & TCP_RST)
		return;
	if (g->flags & TCP_ACK) {
		tcp_send_reset(dst, src, l->lport, sport, g->ack, 0, TCP_RST);
		return;
	}
	if (!(g->flags & TCP_SYN) || (g->flags & TCP_FIN))
		return;
	if (!tcp_admit_syn(l, src))
		return;
	if (!(c = tcp_sock_new()) && (!tcp_admit_evict() || !(c = tcp_sock_new()))) {
		tcp_counters.syn_no_socket++;
		tcp_counters.table_full++;
		return;
	}
	c->listener = l;
	c->passive = true;
	l->n_children++;
	c->laddr = dst;
	c->raddr = src;
	c->lport = l->lport;
	c->rport = sport;
	c->ops = l->ops;
	c->ctx = l->ctx;
	c->keep_idle_ns = l->keep_idle_ns; /* the listener's keep-alive, armed once ESTABLISHED */
	c->keep_intvl_ns = l->keep_intvl_ns;
	c->keep_count = l->keep_count;
	c->irs = g->seq;
	c->rcv_nxt = g->seq + 1;
	c->rcv_adv = c->rcv_nxt; /* the SYN-ACK advertises what the buffer budget allows */
	c->rcv_cap_seq = c->rcv_rate_seq = c->rcv_nxt;
	c->rcv_rate_ns = clock_now_ns();
	apply_syn_options(c, &g->opts);
	c->iss = tcp_new_iss(dst, src, l->lport, sport);
	c->snd_una = c->snd_nxt = c->snd_max = c->iss;
	c->snd_end = c->iss + 1;
	c->snd_wnd = g->wnd; /* never scaled in a SYN (RFC 7323 2.2) */
	c->max_snd_wnd = c->snd_wnd;
	c->snd_wl1 = g->seq;
	c->snd_wl2 = c->iss;
	c->last_rx_ns = clock_now_ns();
	tcp_set_state(c, TCP_SYN_RECEIVED);
	tcp_output(c);
}

/* SYN_SENT (RFC 9293 3.10.7.3). */
static void rx_syn_sent(struct tcp_sock *s, struct tcp_seg *g)
{
	if (g->flags & TCP_ACK) {
		if (SEQ_LEQ(g->ack, s->iss) || SEQ_GT(g->ack, s->snd_max)) {
			if (!(g->flags & TCP_RST))
				tcp_send_reset(s->laddr, s->raddr, s->lport, s->rport, g->ack, 0, TCP_RST);
			return;
		}
	}
	if (g->flags & TCP_RST) {
		if (g->flags & TCP_ACK) {
			tcp_counters.resets_in++;
			tcp_sock_closed(s, -ECONNREFUSED);
		}
		return;
	}
	if (!(g->flags & TCP_SYN))
		return;
	s->irs = g->seq;
	s->rcv_nxt = g->seq + 1;
	s->rcv_adv = s->rcv_nxt + s->syn_wnd; /* what our SYN offered */
	s->rcv_cap_seq = s->rcv_rate_seq = s->rcv_nxt;
	s->rcv_rate_ns = clock_now_ns();
	apply_syn_options(s, &g->opts);
	s->snd_wl1 = g->seq;
	if (g->flags & TCP_ACK) {
		s->snd_una = g->ack;
		s->snd_wnd = g->wnd; /* the SYN's window is never scaled */
		s->max_snd_wnd = s->snd_wnd;
		s->snd_wl2 = g->ack;
		s->backoff = 0;
		if (s->timing) {
			s->timing = false;
			update_rtt(s, clock_now_ns() - s->rtt_start_ns);
		}
		timer_cancel(&timer_default_queue, &s->t_rexmit);
		tcp_set_state(s, TCP_ESTABLISHED);
		tcp_keep_arm(s);
		tcp_counters.connected++;
		s->ack_now = true;
		s->pending_events |= TCP_EV_CONNECTED;
		tcp_output(s);
		return;
	}
	/* Simultaneous open. */
	s->snd_wnd = g->wnd;
	s->max_snd_wnd = s->snd_wnd;
	tcp_set_state(s, TCP_SYN_RECEIVED);
	s->ack_now = true;
	tcp_output(s);
}

/* Synchronized states and SYN_RECEIVED (RFC 9293 3.10.7.4). */
static void rx_sync(struct tcp_sock *s, struct tcp_seg *g, struct seg_payload *p)
{
	uint32_t seg_len = g->len + ((g->flags & TCP_SYN) ? 1 : 0) + ((g->flags & TCP_FIN) ? 1 : 0);
	uint32_t wnd = SEQ_GT(s->rcv_adv, s->rcv_nxt) ? s->rcv_adv - s->rcv_nxt : 0;
	bool ok;

	/* First: sequence acceptability (the four cases of 3.10.7.4). */
	if (seg_len == 0)
		ok = wnd == 0 ? g->seq == s->rcv_nxt
			      : SEQ_LEQ(s->rcv_nxt, g->seq) && SEQ_LT(g->seq, s->rcv_nxt + wnd);
	else
		ok = wnd != 0 && ((SEQ_LEQ(s->rcv_nxt, g->seq) && SEQ_LT(g->seq, s->rcv_nxt + wnd)) ||
				  (SEQ_LEQ(s->rcv_nxt, g->seq + seg_len - 1) &&
				   SEQ_LT(g->seq + seg_len - 1, s->rcv_nxt + wnd)));
	/* A zero window still takes ACKs, RSTs and a FIN/segment at exactly RCV.NXT. */
	if (!ok && wnd == 0 && g->seq == s->rcv_nxt)
		ok = true;
	if (!ok) {
		s->dup_segs++;
		tcp_counters.dup_segs++;
		payload_release(p);
		if (s->sack_ok && g->len && SEQ_LEQ(g->seq + g->len, s->rcv_nxt) && !(g->flags & TCP_SYN)) {
			/* RFC 2883: tell the sender it sent these bytes twice. */
			s->dsack = true;
			s->dsack_start = g->seq;
			s->dsack_end = g->seq + g->len;
		}
		if (!(g->flags & TCP_RST)) {
			s->ack_now = true;
			if (s->state == TCP_TIME_WAIT && (g->flags & TCP_FIN))
				timer_arm(&timer_default_queue, &s->t_keep, clock_now_ns() + 2 * TCP_MSL_NS);
		}
		goto out;
	}
	/* Second: RST (RFC 5961 3.2: exact match resets, otherwise a challenge ACK). */
	if (g->flags & TCP_RST) {
		payload_release(p);
		if (g->seq != s->rcv_nxt) {
			tcp_send_challenge_ack(s);
			return;
		}
		tcp_counters.resets_in++;
		if (s->state == TCP_SYN_RECEIVED && s->listener) {
			tcp_sock_free(s);
			return;
		}
		tcp_sock_closed(s, s->state == TCP_SYN_RECEIVED ? -ECONNREFUSED : -ECONNRESET);
		return;
	}
	/* Fourth: a SYN in a synchronized state: challenge ACK (RFC 5961 4.2). */
	if (g->flags & TCP_SYN) {
		payload_release(p);
		if (s->state == TCP_SYN_RECEIVED && g->seq == s->irs) {
			s->ack_now = true; /* a retransmitted SYN: repeat the SYN-ACK */
			goto out;
		}
		tcp_send_challenge_ack(s);
		return;
	}
	/* Fifth: ACK. */
	if (!(g->flags & TCP_ACK)) {
		payload_release(p);
		return;
	}
	if (s->state == TCP_SYN_RECEIVED) {
		if (SEQ_LEQ(g->ack, s->snd_una) || SEQ_GT(g->ack, s->snd_max)) {
			payload_release(p);
			tcp_send_reset(s->laddr, s->raddr, s->lport, s->rport, g->ack, 0, TCP_RST);
			return;
		}
		s->snd_una = g->ack;
		s->snd_wnd = g->wnd << s->snd_wscale;
		s->max_snd_wnd = s->snd_wnd;
		s->snd_wl1 = g->seq;
		s->snd_wl2 = g->ack;
		s->backoff = 0;
		timer_cancel(&timer_default_queue, &s->t_rexmit);
		tcp_set_state(s, TCP_ESTABLISHED);
		tcp_keep_arm(s);
		if (s->listener) {
			/* Announced by tcp_rx once this segment is fully processed: the
			 * user's accept handler may close the child. */
			list_add_tail(&s->listener->children, &s->child_node);
			tcp_counters.accepted++;
			s->listener->pending_events |= TCP_EV_ACCEPT;
		} else {
			s->pending_events |= TCP_EV_CONNECTED;
		}
	} else if (!process_ack(s, g)) {
		payload_release(p);
		return;
	}
	switch (s->state) {
	case TCP_FIN_WAIT_1:
		if (our_fin_acked(s)) {
			tcp_set_state(s, TCP_FIN_WAIT_2);
			if (s->user_closed)
				timer_arm(&timer_default_queue, &s->t_keep, clock_now_ns() + TCP_FIN_WAIT_2_NS);
		}
		break;
	case TCP_CLOSING:
		if (our_fin_acked(s))
			tcp_enter_time_wait(s);
		break;
	case TCP_LAST_ACK:
		if (our_fin_acked(s)) {
			payload_release(p);
			tcp_sock_closed(s, 0);
			return;
		}
		break;
	case TCP_TIME_WAIT:
		if (g->flags & TCP_FIN) {
			s->ack_now = true;
			timer_arm(&timer_default_queue, &s->t_keep, clock_now_ns() + 2 * TCP_MSL_NS);
		}
		break;
	default:
		break;
	}
	/* Seventh and eighth: text and FIN. */
	process_text(s, g, p);
out:
	tcp_output(s);
}


/* rx_buf_admit_fast's first test alone, for net_if0's device d (not NULL): at most half the
 * pool lent out (so within the reserve, which is at most half: tcp_rx_reserve_of). False
 * says nothing: the exact test is rx_buf_admit_fast's. */
static inline __attribute__((always_inline)) bool rx_buf_admit_half(const struct netdev *d)
{
	return d->rx_bufs_out <= d->rx_bufs / 2;
}

/* tcp_rx_buf_admit for the data path: the reserve is at most half the pool
 * (tcp_rx_reserve_of), so at most half lent out always passes; the exact test otherwise. */
static inline __attribute__((always_inline)) bool rx_buf_admit_fast(void)
{
	const struct netdev *d = net_if0.dev;
	return (d && rx_buf_admit_half(d)) || tcp_rx_buf_admit();
}

/* Header prediction (Van Jacobson's, for RFC 9293 3.10.7.4's commonest case): in
 * ESTABLISHED a segment with only ACK (and PSH) set, at RCV.NXT, inside the window, with
 * an ACK in [SND.UNA, SND.MAX] and no SACK block, while nothing is held out of order and
 * its payload (if any) is all in the NIC's fragments (nb's data at the TCP header, hlen
 * bytes of it in the host part). Every check of rx_sync such a segment would pass is
 * skipped. No side effect: tcp_rx tests this before it touches anything. */
static inline bool rx_fast_ok(const struct tcp_sock *s, const struct tcp_seg *g, const struct netbuf *nb)
{
	if (s->state != TCP_ESTABLISHED || (g->flags & (TCP_SYN | TCP_FIN | TCP_RST | TCP_ACK | TCP_URG)) != TCP_ACK ||
	    g->seq != s->rcv_nxt || g->opts.has_sack || s->listener || !list_empty(&s->ooo) || s->ooo_fin ||
	    SEQ_LT(g->ack, s->snd_una) || SEQ_GT(g->ack, s->snd_max))
		return false;
	/* (the window, RCV.ADV - RCV.NXT or 0, holds the payload: in signed form, as a
	 * segment's length is below 2^16) */
	return !g->len || ((int32_t)(s->rcv_adv - s->rcv_nxt) >= (int32_t)g->len && netbuf_host_len(nb) == g->hlen &&
			   rx_buf_admit_fast());
}

/* The pool's take of a receive entry, out of line: the data path takes cached entries
 * (tcp_rxent_cache) but when a user holds them all. */
static __attribute__((noinline)) struct tcp_rxent *rxent_pool_get(void)
{
	return mm_pool_alloc(&tcp_rxent_pool);
}

/* The cached receive entry c, the first of tcp_rxent_cache (not its head), taken off it. */
static inline __attribute__((always_inline)) struct tcp_rxent *rxent_cache_pop(struct list_node *c)
{
	struct list_node *n = c->next;
	tcp_rxent_cache.next = n;
	n->prev = &tcp_rxent_cache;
	tcp_rxent_cached--;
	return container_of(c, struct tcp_rxent, node);
}

/* A receive entry for header prediction: rxent_new's test and rxent_get, the cache's
 * pop inline (frags: s's queued fragments, in order and out of order, counted so far). */
static inline __attribute__((always_inline)) struct tcp_rxent *rxent_take(unsigned frags)
{
	if (frags < TCP_RXENT_RESERVE || rxents_held() < TCP_RXENTS - TCP_SOCKETS * TCP_RXENT_RESERVE) {
		struct list_node *c = tcp_rxent_cache.next;
		if (__builtin_expect(c == &tcp_rxent_cache, 0))
			return rxent_pool_get();
		struct list_node *n = c->next;
		tcp_rxent_cache.next = n;
		n->prev = &tcp_rxent_cache;
		tcp_rxent_cached--;
		return container_of(c, struct tcp_rxent, node);
	}
	return NULL;
}

/* nb's fragments (its payload, at seq == RCV.NXT) onto s's receive queue: rxq_append for
 * each, the socket's and the counters' sums written once; what a receive entry cannot be
 * had for is dropped (sent again). Returns the new RCV.NXT (unchanged: nothing queued). */
static inline __attribute__((always_inline)) uint32_t rx_queue_frags(struct tcp_sock *s, struct netbuf *nb,
								      uint32_t seq)
{
	uint32_t before = seq, nxt = seq;
	unsigned nf = nb->nfrags, frags = s->rxq_frags;
	uint64_t dev_bytes = 0, host_bytes = 0;

	for (struct netdev_frag *f = nb->frags, *end = nb->frags + nf; f < end; f++) {
		uint32_t n = f->len;
		struct tcp_rxent *r;
		if (f->addr.cls == MEM_CLASS_DEVICE)
			dev_bytes += n;
		else
			host_bytes += n;
		/* after a receive entry ran out, the rest is dropped (sent again) */
		if (n && seq == nxt && (r = rxent_take(frags + s->ooo_frags)) != NULL) {
			r->seq = seq;
			tcp_frag_copy(&r->frag, f);
			list_add_tail(&s->rxq, &r->node); /* (sets both links) */
			frags++;
			nxt += n;
		} else {
			if (n && seq == nxt)
				tcp_counters.rx_nobufs++;
			netdev_frag_release(f);
		}
		seq += n;
	}
	nb->nfrags = 0;
	tcp_counters.rx_payload_device += dev_bytes;
	tcp_counters.rx_payload_host += host_bytes;
	if (nxt != before) {
		s->rxq_bytes += nxt - before;
		s->rxq_frags = frags;
		s->rcv_nxt = nxt;
		s->pending_events |= TCP_EV_RECV; /* (gathered: tcp_rx_flush, with tcp_rcv_cap_grow) */
	}
	return nxt;
}

/* A segment rx_fast_ok passed: the ACK goes through process_ack as always, the payload
 * from the netbuf straight onto the receive queue. 1: done, RCV.NXT where it was; 2:
 * done, data queued. nb's data at the payload. */
static inline __attribute__((always_inline)) int rx_fast(struct tcp_sock *s, const struct tcp_seg *g,
							 struct netbuf *nb)
{
	uint32_t before = s->rcv_nxt, nxt;

	process_ack_core(s, g, true); /* (the ACK is in range: it never refuses one) */
	if (!g->len && !nb->nfrags)
		nxt = before; /* a pure ACK: nothing to queue, nothing to count */
	else
		nxt = rx_queue_frags(s, nb, g->seq); /* (g->seq is RCV.NXT) */
	if (g->len)
		schedule_ack(s, nxt == before);
	tcp_output(s); /* notes a new advertised edge in the budget itself (tcp_advertise) */
	return nxt != before ? 2 : 1;
}

/* tcp_deliver_events, inline for tcp_rx. */
static inline __attribute__((always_inline)) void deliver_events(struct tcp_sock *s)
{
	unsigned ev = s->pending_events;
	s->pending_events = 0;
	if (ev && s->state != TCP_CLOSED)
		tcp_notify(s, ev);
}

/* Hand the events gathered while a segment was processed to the user. */
void tcp_deliver_events(struct tcp_sock *s)
{
	deliver_events(s);
}

struct tcp_sock *tcp_rx_gro;

/* Would tcp_rcv_cap_grow change anything for s now? Only when the window limit may grow
 * (below TCP_RXQ_FRAGS_MAX: a bulk receiver's limit is there) and either its rate period
 * is over (by the batch's clock, last_rx_ns, which it reads) or RCV.NXT moved at least
 * half the limit's bytes past rcv_cap_seq, which both of its growth tests need (the rate
 * test a whole limit past rcv_rate_seq, never before rcv_cap_seq: both are set together
 * and rcv_rate_seq only moves on to RCV.NXT). Otherwise the call would neither start a
 * period nor grow the limit, and the batch of a request (a 4 KiB write's three segments,
 * a command capsule) skips it. No side effect. */
static inline __attribute__((always_inline)) bool rcv_cap_may_grow(const struct tcp_sock *s)
{
	return s->rcv_cap < TCP_RXQ_FRAGS_MAX &&
	       (s->last_rx_ns - s->rcv_rate_ns > TCP_RCV_CAP_PERIOD_NS ||
		s->rcv_nxt - s->rcv_cap_seq >= s->rcv_cap * tcp_rcv_bpb() / 2);
}

/* The end of the receive batch for the socket whose data events it gathered (tcp.h):
 * the receive window's limit grows by what the batch brought (tcp_rcv_cap_grow, once
 * for all its segments, when it may: rcv_cap_may_grow) and the event goes to the user. */
static __attribute__((noinline)) void rx_gro_end(struct tcp_sock *s)
{
	tcp_rx_gro = NULL;
	if (rcv_cap_may_grow(s))
		tcp_rcv_cap_grow(s);
	unsigned ev = s->pending_events; /* (tcp_deliver_events) */
	s->pending_events = 0;
	if (ev && s->state != TCP_CLOSED)
		tcp_notify(s, ev);
}

void tcp_rx_flush(void)
{
	struct tcp_sock *s = tcp_rx_gro;
	if (s) /* (none: a mark left by a socket freed meanwhile, tcp_rx_batch_end skips it) */
		rx_gro_end(s);
}

/* The end of a segment's processing (tcp_rx and tcp_rx_slow alike): the events it
 * gathered go to s's user, unless s is gone. s (its id and slot taken before any user code
 * ran) is still good when no socket was freed meanwhile (frees unchanged) or, when one
 * was, when its id is still at its slot: a callback may close it. tcp_deliver_events
 * leaves out one that is CLOSED. Consumes nb. */
static inline void rx_done(struct netbuf *nb, struct tcp_sock *s, uint16_t slot, uint64_t id, unsigned long frees)
{
	if (tcp_sock_frees == frees || tcp_sock_alive(slot, id))
		tcp_deliver_events(s);
	netbuf_free(nb);
}

/* A segment that header prediction does not take (tcp_rx): every state, every check.
 * s is tcp_lookup_rx's answer. Consumes nb. */
static __attribute__((noinline)) void tcp_rx_slow(struct netbuf *nb, struct tcp_seg *g, struct tcp_sock *s,
						   uint32_t src, uint32_t dst)
{
	struct seg_payload p;
	uint16_t sport = g->sport, dport = g->dport;

	p.n = 0;
	if (tcp_rx_gro)
		tcp_rx_flush(); /* the gathered event before anything this segment brings (a FIN, a RST) */
	if (!s) {
		/* CLOSED (RFC 9293 3.10.7.1). */
		tcp_counters.no_socket++;
		if (!(g->flags & TCP_RST)) {
			if (g->flags & TCP_ACK)
				tcp_send_reset(dst, src, dport, sport, g->ack, 0, TCP_RST);
			else
				tcp_send_reset(dst, src, dport, sport, 0,
					       g->seq + g->len + ((g->flags & TCP_SYN) ? 1 : 0) + ((g->flags & TCP_FIN) ? 1 : 0),
					       TCP_RST | TCP_ACK);
		}
		goto drop;
	}
	if (s->state == TCP_LISTEN) {
		rx_listen(s, g, src, dst, sport);
		goto drop;
	}
	s->segs_in++;
	s->last_rx_ns = clock_now_ns();
	s->keep_probes = 0;
	/* Keep-alive from the peer's last segment, lazily: an armed t_keep that comes due
	 * early re-arms itself from last_rx_ns (keep_timer), so only an unarmed one is armed
	 * here, not every segment's. */
	if (!s->t_keep.armed)
		tcp_keep_arm(s);
	if (s->state == TCP_SYN_SENT) {
		rx_syn_sent(s, g);
		if (s->state != TCP_CLOSED)
			tcp_deliver_events(s);
		goto drop;
	}
	netbuf_pull(nb, g->hlen);
	/* rx_sync may free s (reset, LAST_ACK done) but never a listener, and calls no user
	 * code: events go out afterwards, to the listener first, then to s if it still
	 * exists (rx_done: a callback may close it). */
	uint16_t slot = s->slot;
	uint64_t id = s->id;
	struct tcp_sock *l = s->listener;
	unsigned long frees = tcp_sock_frees;
	if (payload_take_inorder(s, nb, g->seq + ((g->flags & TCP_SYN) ? 1 : 0), &p)) {
		tcp_counters.rx_nobufs++;
		payload_release(&p);
		g->len = 0;
		g->flags &= (uint8_t)~TCP_FIN;
	}
	rx_sync(s, g, &p);
	payload_release(&p);
	/* The window budget's sums take s's new RCV.NXT and queues before any user code runs
	 * (a freed s left them in tcp_sock_free; one CLOSED promises nothing). */
	bool live = tcp_sock_frees == frees || tcp_sock_alive(slot, id);
	if (live)
		tcp_budget_note(s);
	if (l && l->pending_events) {
		unsigned ev = l->pending_events;
		l->pending_events = 0;
		if (l->ops && l->ops->event)
			l->ops->event(l, l->ctx, ev);
	}
	if (live) { /* (else s is gone: nothing to deliver) */
		rx_done(nb, s, slot, id, frees);
		return;
	}
drop:
	netbuf_free(nb);
}

/* What tcp_rx_slow does for a segment of a synchronized connection, header prediction's
 * part in the middle (no listener: rx_fast_ok asks for none). g passed rx_fast_ok for s.
 * Consumes nb. */
static inline __attribute__((always_inline)) void rx_predicted(struct netbuf *nb, const struct tcp_seg *g,
								struct tcp_sock *s)
{
	if (tcp_rx_gro && tcp_rx_gro != s)
		tcp_rx_flush(); /* another socket's gathering ends */
	s->segs_in++;
	s->last_rx_ns = clock_now_ns();
	s->keep_probes = 0;
	if (!s->t_keep.armed)
		tcp_keep_arm(s);
	netbuf_pull(nb, g->hlen);
	uint16_t slot = s->slot;
	uint64_t id = s->id;
	unsigned long frees = tcp_sock_frees;
	int fast = rx_fast(s, g, nb);
	/* 1: RCV.NXT, state and queues as they were; 2: data queued, and noted already when
	 * the ACK that went out moved the advertised edge (tcp_advertise notes then, after
	 * the data: header prediction changes nothing else the sums depend on). */
	if (tcp_sock_frees == frees && fast != 1 && s->bud_nxt != s->rcv_nxt)
		tcp_budget_note_later(s);
	/* The data event waits for the batch's end (tcp_rx_flush), gathered with that of the
	 * segments after this one (tcp_rx: rx_gro); acknowledged bytes (TCP_EV_SENT), which a
	 * sender may wait on, go at once. tcp_rx_gro is set first: a callback that frees s
	 * clears it (tcp_sock_free). */
	if (tcp_sock_frees == frees || tcp_sock_alive(slot, id)) {
		unsigned ev = s->pending_events;
		if (ev & TCP_EV_RECV) {
			tcp_rx_gro = s;
			if (ev != TCP_EV_RECV) {
				s->pending_events = TCP_EV_RECV;
				tcp_notify(s, ev & ~TCP_EV_RECV); /* (ESTABLISHED: rx_fast_ok) */
			}
		} else if (ev) {
			deliver_events(s);
		}
	}
	netbuf_rx_consumed(nb); /* (its fragments taken: nfrags 0) */
}

/* Queue nb's one payload fragment (len bytes at seq, RCV.NXT) in the receive entry r, taken
 * for it: the fragment moves to r (nb keeps none), counted, RCV.NXT advanced and the socket's
 * receive event noted. Returns the new RCV.NXT. (rx_gro and tcp_rx_flow.) */
static inline __attribute__((always_inline)) uint32_t rx_queue_one(struct tcp_sock *s, struct netbuf *nb,
								   struct tcp_rxent *r, uint32_t seq, uint32_t len)
{
	struct netdev_frag *f = nb->frags;

	r->seq = seq;
	tcp_frag_copy(&r->frag, f);
	list_add_tail(&s->rxq, &r->node);
	nb->nfrags = 0;
	if (f->addr.cls == MEM_CLASS_DEVICE)
		tcp_counters.rx_payload_device += len;
	else
		tcp_counters.rx_payload_host += len;
	s->rxq_bytes += len;
	s->rxq_frags++;
	s->rcv_nxt = seq + len;
	s->pending_events |= TCP_EV_RECV;
	return seq + len;
}

/* In-order data for tcp_rx_gro, the socket whose segment before this one in the receive
 * batch header prediction took (GRO at the TCP layer). What the segment before left
 * holds still, as no other segment and no user code of s ran since: ESTABLISHED, no
 * listener, nothing out of order, keep-alive armed and last_rx_ns this batch's, the data
 * event and the window limit's growth gathered. tcp_rx checked the rest: ACK (and PSH)
 * alone, no options, SEG.SEQ = RCV.NXT, SEG.ACK = SND.UNA and SEG.WND as SND.WND (no new
 * ACK, no window change: of RFC 9293 3.10.7.4's fifth check only SND.WL1/WL2 move),
 * payload within the window and all in fragments, a buffer admitted, nothing to send.
 * Consumes nb. */
static inline __attribute__((always_inline)) void rx_gro(struct tcp_sock *s, struct netbuf *nb, uint32_t seq,
							 uint32_t ack, uint32_t len)
{
	struct netdev_frag *f = nb->frags;
	struct tcp_rxent *r;
	uint32_t nxt;

	s->segs_in++;
	s->snd_wl1 = seq;
	s->snd_wl2 = ack;
	if (nb->nfrags == 1 && f->len == len && (r = rxent_take(s->rxq_frags)) != NULL) {
		/* the NIC's one buffer (rx_queue_frags' loop for it; nothing out of order) */
		nxt = rx_queue_one(s, nb, r, seq, len);
	} else {
		nxt = rx_queue_frags(s, nb, seq);
	}
	schedule_ack(s, nxt == seq);
	if (s->ack_now)
		tcp_output_work(s, false); /* (tcp_output: only an ACK owed can be new here) */
	if (nxt != seq && s->bud_nxt != nxt)
		tcp_budget_note_later(s);
	netbuf_rx_consumed(nb);
}

/* tcp_rx for every segment header prediction did not take at once: a header with
 * options or not whole in the host part (gathered and parsed here), or any segment that
 * fails rx_fast_ok. checked: the checksum was verified already (tcp_rx's fast part), so it
 * is neither verified nor counted again. Consumes nb. */
static __attribute__((noinline)) void tcp_rx_full(struct netbuf *nb, uint32_t src, uint32_t dst, size_t len,
						   bool checked)
{
	uint8_t hdr[TCP_HLEN_MIN + TCP_OPT_SPACE];
	const uint8_t *hp = nb->data;
	size_t host = netbuf_host_len(nb);
	size_t avail = host < sizeof(hdr) ? host : sizeof(hdr);
	struct tcp_seg g;
	struct tcp_sock *s;

	/* The parser reads the header where the NIC put it, in the host part (every split
	 * frame has it whole there); one that runs into the fragments is gathered first. */
	if (avail < TCP_HLEN_MIN || (size_t)(hp[12] >> 4) * 4 > avail) {
		avail = len < sizeof(hdr) ? len : sizeof(hdr);
		if (netbuf_copy_out(nb, 0, hdr, avail)) {
			tcp_counters.bad_header++;
			goto drop;
		}
		hp = hdr;
	}
	if (tcp_hdr_read(hp, avail, len, &g)) {
		tcp_counters.bad_header++;
		goto drop;
	}
	if (!checked && !net_l4_csum_rx_ok(nb, src, dst, IP_PROTO_TCP, len)) {
		tcp_counters.bad_checksum++;
		goto drop;
	}
	s = tcp_lookup_rx(dst, g.dport, src, g.sport);
	if (!s || !rx_fast_ok(s, &g, nb)) {
		tcp_rx_slow(nb, &g, s, src, dst);
		return;
	}
	rx_predicted(nb, &g, s);
	return;
drop:
	netbuf_free(nb);
}

/* tcp_rx for every segment rx_gro does not take: header prediction for a segment of the
 * last segment's connection with a 20-byte header, the full parser otherwise. Out of
 * line, with tcp_rx's arguments (a jump): tcp_rx's short path saves no registers for it. */
static __attribute__((noinline)) void tcp_rx_more(struct netbuf *nb, uint32_t src, uint32_t dst, size_t len)
{
	const uint8_t *hp = nb->data;
	size_t host = netbuf_host_len(nb);
	struct tcp_sock *s = tcp_rx_last;
	struct tcp_seg g;

	/* tcp_hdr_read's checks for a header without options: whole in the host part
	 * (min(host, 60) within the segment); both ports set follows from a socket's match
	 * (tcp_rx_full checks them otherwise) */
	if (host < TCP_HLEN_MIN || (hp[12] & 0xf0) != (TCP_HLEN_MIN / 4) << 4 ||
	    (host < TCP_HLEN_MIN + TCP_OPT_SPACE ? host : TCP_HLEN_MIN + TCP_OPT_SPACE) > len)
		goto full;
	uint32_t ports = be32_load(hp); /* SRC.PORT << 16 | DST.PORT */
	/* tcp_lookup_rx's first try, for a connection header prediction may take */
	if (!s || s->rport != ports >> 16 || s->lport != (uint16_t)ports || s->raddr != src || s->laddr != dst ||
	    s->state != TCP_ESTABLISHED)
		goto full;
	if (!net_l4_csum_rx_ok(nb, src, dst, IP_PROTO_TCP, len)) {
		tcp_counters.bad_checksum++;
		netbuf_free(nb);
		return;
	}
	g.sport = s->rport;
	g.dport = s->lport;
	g.hlen = TCP_HLEN_MIN;
	g.seq = be32_load(hp + 4);
	g.ack = be32_load(hp + 8);
	g.flags = hp[13];
	g.wnd = be16_load(hp + 14);
	g.len = (uint32_t)(len - TCP_HLEN_MIN);
	g.opts.has_sack = false; /* (no options: header prediction and process_ack read no other) */
	if (!rx_fast_ok(s, &g, nb)) {
		tcp_rx_full(nb, src, dst, len, true);
		return;
	}
	rx_predicted(nb, &g, s);
	return;
full:
	tcp_rx_full(nb, src, dst, len, false);
}

/* The batch's first segment for s: header prediction's tests that tcp_rx_gathering and
 * tcp_rx_flow leave to it (no listener, nothing out of order). */
static inline __attribute__((always_inline)) bool rx_gro_first_ok(const struct tcp_sock *s)
{
	return !s->listener && list_empty(&s->ooo) && !s->ooo_fin;
}

/* The gathering of the batch's segments for s begins: what rx_predicted does once per
 * batch (the peer's last segment's clock, keep-alive). A batch nobody ends (no
 * netdev_rx_end) the end-of-pass poller ends (tcp_out.c tcp_tx_poll tests tcp_rx_gro). */
static inline __attribute__((always_inline)) void rx_gro_begin(struct tcp_sock *s)
{
	s->last_rx_ns = clock_now_ns();
	s->keep_probes = 0;
	if (!s->t_keep.armed)
		tcp_keep_arm(s);
	tcp_rx_gro = s;
}

/* tcp_rx_flow's masks over the frame's first 48 bytes as six little-endian words: the
 * destination MAC (0-5); the EtherType (12-13) and IPv4 version/IHL (14); MF and the
 * fragment offset (20-21) and the protocol (23); the source address (26-29) and the
 * destination's first half (30-31); its second half (32-33) and the ports (34-37); the TCP
 * data offset (46) and flags but PSH (47). What they leave out is tcp_rx_flow's to test
 * (lengths, sequence numbers, window) or was never tested (source MAC, TOS, identification,
 * DF, TTL, checksums, which the NIC verified, the urgent pointer). */
static const uint64_t rx_flow_mask[6] = {
	0x0000ffffffffffffull, 0x00ffffff00000000ull, 0xff00ff3f00000000ull,
	0xffffffffffff0000ull, 0x0000ffffffffffffull, 0xf7ff000000000000ull,
};

/* rx_flow_mask as three vectors of two words, for rx_flow_match (gcc's vector extension:
 * SSE2 on x86_64, NEON on arm64). The words are little-endian (le64_load) on both. */
typedef uint64_t rx_v2 __attribute__((vector_size(16)));
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "rx_flow_match loads the header's words in host order");
static const rx_v2 rx_flow_vmask[3] = {
	{ 0x0000ffffffffffffull, 0x00ffffff00000000ull },
	{ 0xff00ff3f00000000ull, 0xffffffffffff0000ull },
	{ 0x0000ffffffffffffull, 0xf7ff000000000000ull },
};

/* 16 bytes at p (any alignment) as a vector of two host-order words. */
static inline __attribute__((always_inline)) rx_v2 rx_v2_load(const void *p)
{
	rx_v2 v;
	memcpy(&v, p, sizeof(v));
	return v;
}

/* Build s's header image (tcp_rx_flow) for the current route generation: our MAC and
 * address, the type, version and IHL, no fragment, TCP, the peer's address, the ports,
 * a 20-byte header with ACK. Only while s's local address is the interface's and its
 * peer's is the source ipv4_rx last found good (net_if0.rx_src_ok): what net_stack_rx's
 * common case asks of a frame, whose answers only an address, netmask, device or ARP
 * change can alter, and each bumps route_gen (net_route_changed). Otherwise none. */
static __attribute__((noinline)) void rx_flow_build(struct tcp_sock *s)
{
	uint8_t img[48];
	const struct netdev *d = net_if0.dev;

	if (!d || s->laddr != net_if0.addr || s->raddr != net_if0.rx_src_ok || s->raddr == NET_RX_SRC_NONE)
		return;
	memset(img, 0, sizeof(img));
	memcpy(img, d->mac, ETH_ALEN);
	be16_store(img + 12, ETH_TYPE_IPV4);
	img[14] = 0x45;
	img[23] = IP_PROTO_TCP;
	be32_store(img + 26, s->raddr);
	be32_store(img + 30, s->laddr);
	be16_store(img + 34, s->rport);
	be16_store(img + 36, s->lport);
	img[46] = (TCP_HLEN_MIN / 4) << 4;
	img[47] = TCP_ACK;
	for (unsigned i = 0; i < 6; i++)
		s->rx_flow_want[i] = le64_load(img + 8 * i) & rx_flow_mask[i];
	s->rx_flow_gen = net_if0.route_gen;
}

/* tcp_rx for a data segment of the socket gathering the batch's segments (tcp_rx_gro) or,
 * while none does, of the last segment's connection: rx_gro's tests (the connection, its
 * addresses and ports, a 20-byte header alone in the host part so the payload is all in
 * fragments, ACK and maybe PSH alone, at RCV.NXT and within the window, SEG.ACK =
 * SND.UNA, SEG.WND as before, a good checksum, nothing to send, a buffer admitted), and
 * for the batch's first segment header prediction's others (no listener, nothing out of
 * order) and what is done once per batch: the peer's last segment's clock, keep-alive,
 * the gathering begun. tcp_rx_more for a segment that fails one. Consumes nb. */
static __attribute__((noinline, flatten)) void tcp_rx_gathering(struct netbuf *nb, uint32_t src, uint32_t dst,
								 size_t len)
{
	const uint8_t *hp = nb->data;
	struct tcp_sock *gro = tcp_rx_gro, *s = gro ? gro : tcp_rx_last;

	if (netbuf_host_len(nb) == TCP_HLEN_MIN && len > TCP_HLEN_MIN && hp[12] == (TCP_HLEN_MIN / 4) << 4 &&
	    (hp[13] & (uint8_t)~TCP_PSH) == TCP_ACK && be32_load(hp) == ((uint32_t)s->rport << 16 | s->lport) &&
	    s->raddr == src && s->laddr == dst && s->state == TCP_ESTABLISHED) {
		uint32_t seq = be32_load(hp + 4), ack = be32_load(hp + 8), plen = (uint32_t)(len - TCP_HLEN_MIN);
		if (seq == s->rcv_nxt && ack == s->snd_una && (uint32_t)be16_load(hp + 14) << s->snd_wscale == s->snd_wnd &&
		    (int32_t)(s->rcv_adv - seq) >= (int32_t)plen && net_l4_csum_rx_ok(nb, src, dst, IP_PROTO_TCP, len) &&
		    tcp_output_idle(s) && rx_buf_admit_fast()) {
			if (!gro) {
				/* the batch's first: rx_fast_ok's other tests, rx_predicted's once */
				if (!rx_gro_first_ok(s))
					goto more;
				if (s->rx_flow_gen != net_if0.route_gen)
					rx_flow_build(s);
				rx_gro_begin(s);
			}
			rx_gro(s, nb, seq, ack, plen);
			return;
		}
	}
more:
	tcp_rx_more(nb, src, dst, len);
}

/* The tests tcp_rx_flow and tcp_rx_flow_bare share, for s (tcp_rx_gro, else tcp_rx_last)
 * and a frame of their shape (tcp_rx_flow_shape): s's image of this route generation, the
 * device, ESTABLISHED, both NIC checksum verdicts good, the six words of the header. No
 * side effect. */
static inline __attribute__((always_inline)) bool rx_flow_match(const struct netdev *dev, const struct netbuf *nb,
								const struct tcp_sock *s)
{
	const uint8_t *h = nb->data;

	if (s->rx_flow_gen != net_if0.route_gen || dev != net_if0.dev || s->state != TCP_ESTABLISHED ||
	    (nb->flags & (NETBUF_RX_L3_CSUM_OK | NETBUF_RX_L3_CSUM_BAD | NETBUF_RX_L4_CSUM_OK | NETBUF_RX_L4_CSUM_BAD)) !=
		    (NETBUF_RX_L3_CSUM_OK | NETBUF_RX_L4_CSUM_OK))
		return false;
	/* the six words as three 16-byte vectors (each a load, an exclusive or, an and) */
	rx_v2 d = ((rx_v2_load(h) ^ rx_v2_load(&s->rx_flow_want[0])) & rx_flow_vmask[0]) |
		  ((rx_v2_load(h + 16) ^ rx_v2_load(&s->rx_flow_want[2])) & rx_flow_vmask[1]) |
		  ((rx_v2_load(h + 32) ^ rx_v2_load(&s->rx_flow_want[4])) & rx_flow_vmask[2]);
	return !(d[0] | d[1]);
}

static void rx_ack_all_data(struct tcp_sock *s, struct netbuf *nb, uint32_t seq, uint32_t ack, uint32_t plen);

/* tcp_rx_flow's tests of s and a frame of tcp_rx_flow_shape's first shape but those of
 * segs_unacked, in its order, true when one fails: output idle but its state test
 * (rx_flow_match's ESTABLISHED is one of its two), the reserve's test of receive entries,
 * rx_flow_match, at most half the device's buffers lent (dev: net_if0's, an image needs
 * one). For tcp_rx_flow_first (tcp_rx_flow writes them out: with this, gcc gave it a
 * register move more per frame). No side effect. */
static inline __attribute__((always_inline)) bool rx_flow_busy_or_other(const struct netdev *dev,
									const struct netbuf *nb,
									const struct tcp_sock *s)
{
	return s->ack_now || s->fin_queued || SEQ_LT(s->snd_nxt, s->snd_end) ||
	       !(s->rxq_frags < TCP_RXENT_RESERVE || rxents_held() < TCP_RXENTS - TCP_SOCKETS * TCP_RXENT_RESERVE) ||
	       !rx_flow_match(dev, nb, s) || !rx_buf_admit_half(dev);
}


/* A frame from the device while a connection receives (net.c net_stack_rx): a data segment
 * of the socket gathering the batch's segments (tcp_rx_gro) or, while none does, of the
 * last segment's connection, the frame's header matched against the socket's image
 * (rx_flow_build) in six masked words, then straight to rx_gro. That is every test the
 * frame would pass on its way through net_stack_rx_ip's common case (the device, the
 * host part exactly the Ethernet, IPv4 and TCP headers, the NIC's IPv4 checksum verdict,
 * our MAC, IPv4 without options or fragments, TCP, to our address, from a good source,
 * the datagram's length that of the host part and its one fragment), tcp_rx and
 * tcp_rx_gathering (a 20-byte header with ACK and maybe PSH alone, the connection's
 * addresses and ports, ESTABLISHED, at RCV.NXT and within the window, SEG.ACK = SND.UNA,
 * SEG.WND as before, the NIC's TCP checksum verdict good, nothing to send, a buffer
 * admitted; for the batch's first, no listener and nothing out of order), made without the
 * walk through three functions, and the same counters (eth_rx and ip_rx by
 * net_rx_fast_frames, TCP's segs_in). A segment that passes all of them but SEG.ACK =
 * SND.UNA because it acknowledges everything sent (SEG.ACK = SND.MAX outside recovery: the
 * host's next command with the ACK of our responses) goes to rx_ack_all_data, which takes
 * it as header prediction would have. The source: the image is built only while the
 * peer's address is the source ipv4_rx last found good, and stays good until route_gen
 * moves (a frame from it after another source was found good went by ipv4_rx's slow path,
 * which let it through all the same; rx_src_ok, a cache, is left as it is). Anything else,
 * with nothing changed, goes on to net_stack_rx_ip as if this had not looked (which takes
 * tcp_rx_gathering and the rest). Consumes nb. */
uint64_t tcp_rx_flow_any_frames;

__attribute__((noinline)) void tcp_rx_flow_any(struct netdev *dev, struct netbuf *nb)
{
	struct tcp_sock *gro = tcp_rx_gro, *s = gro ? gro : tcp_rx_last;
	const uint8_t *h = nb->data;
	uint32_t plen, seq, ack;

	tcp_rx_flow_any_frames++;

	/* (net_stack_rx asked tcp_rx_flow_shape: 54 bytes in the host part, one fragment of
	 * plen bytes, the IPv4 total length 40 + plen) */
	if (!rx_flow_match(dev, nb, s))
		goto other;
	plen = nb->frags[0].len;
	seq = be32_load(h + ETH_HLEN + IPV4_HLEN_MIN + 4);
	ack = be32_load(h + ETH_HLEN + IPV4_HLEN_MIN + 8);
	if (plen == 0 || seq != s->rcv_nxt ||
	    (uint32_t)be16_load(h + ETH_HLEN + IPV4_HLEN_MIN + 14) << s->snd_wscale != s->snd_wnd ||
	    (int32_t)(s->rcv_adv - seq) < (int32_t)plen || !tcp_output_idle(s) || !rx_buf_admit_fast() ||
	    (!gro && !rx_gro_first_ok(s)))
		goto other;
	if (ack != s->snd_una) {
		/* a new ACK: of everything sent (output idle: every queued byte sent) outside
		 * recovery, rx_ack_all_data's; any other, header prediction's */
		if (ack != s->snd_max || s->in_recovery)
			goto other;
		return rx_ack_all_data(s, nb, seq, ack, plen);
	}
	if (!gro)
		rx_gro_begin(s);
	net_rx_fast_frames++;
	tcp_counters.segs_in++;
	nb->data = (uint8_t *)h + ETH_HLEN + IPV4_HLEN_MIN + TCP_HLEN_MIN;
	rx_gro(s, nb, seq, ack, plen);
	return;
other:
	net_stack_rx_ip(dev, nb);
}

/* rx_gro_begin's and rx_gro's work for the batch's first frame, nb, of s (tcp_rx_flow_first
 * passed it: seq at RCV.NXT, ack SND.UNA, plen bytes in its one fragment, c a cached receive
 * entry), in their order: the batch's clock and keep-alive, the gathering begun, the
 * counters, the fragment queued, the ACK scheduled (schedule_ack: neither owed now nor
 * sent here, as tcp_rx_flow_first asked segs_unacked + 1 < tcp_ack_every), the budget's
 * note left waiting. Out of line, a jump. Consumes nb. */
static __attribute__((noinline)) void rx_flow_start(struct tcp_sock *s, struct netbuf *nb, uint32_t seq,
						   uint32_t ack, uint32_t plen, struct list_node *c)
{
	rx_gro_begin(s);
	net_rx_fast_frames++;
	tcp_counters.segs_in++;
	nb->data += ETH_HLEN + IPV4_HLEN_MIN + TCP_HLEN_MIN;
	s->segs_in++;
	s->snd_wl1 = seq;
	s->snd_wl2 = ack;
	uint32_t nxt = rx_queue_one(s, nb, rxent_cache_pop(c), seq, plen); /* (rxent_take's pop) */
	schedule_ack(s, false);
	if (s->bud_nxt != nxt)
		tcp_budget_note_later(s);
	netbuf_rx_consumed(nb);
}

/* A frame from the device while no receive batch gathers and the last segment's connection
 * is known (net.c net_stack_rx; tcp_rx_gro NULL, tcp_rx_last set): net_stack_rx_flow's
 * dispatch by shape (a segment without data to tcp_rx_flow_bare, a frame of neither shape
 * to net_stack_rx_ip), then, for a data segment, the batch's first, tcp_rx_flow_any's tests
 * with rx_gro_first_ok's and tcp_rx_flow's (output idle, the reserve's test of receive
 * entries, the header image, at most half the device's buffers lent, a cached receive
 * entry; no side effect, in tcp_rx_flow's order) and one more: no ACK owed now after this
 * segment (segs_unacked + 1 < tcp_ack_every: rx_gro sends nothing). A segment that passes
 * them goes to rx_flow_start, which begins the gathering; one that also acknowledges
 * everything sent outside recovery to rx_ack_all_data, as from tcp_rx_flow_any; any other
 * (a FIN, a RST, out of order, another new ACK, an ACK owed now, no cached entry, ...),
 * nothing changed, to tcp_rx_flow_any. Consumes nb. */
__attribute__((noinline)) void tcp_rx_flow_first(struct netdev *dev, struct netbuf *nb)
{
	struct tcp_sock *s = tcp_rx_last;
	const uint8_t *h = nb->data;
	uint32_t plen, seq, ack;
	struct list_node *c;

	/* net_stack_rx_flow's dispatch (net_stack_rx calls while the last segment's connection is
	 * known, with no test of its own) */
	int shape = tcp_rx_flow_shape(nb);
	if (shape != 1)
		return shape == 2 ? tcp_rx_flow_bare(dev, nb) : net_stack_rx_ip(dev, nb);
	if (s->segs_unacked + 1 >= tcp_ack_every || rx_flow_busy_or_other(dev, nb, s) || !rx_gro_first_ok(s))
		return tcp_rx_flow_any(dev, nb);
	c = tcp_rxent_cache.next;
	plen = nb->frags[0].len;
	seq = be32_load(h + ETH_HLEN + IPV4_HLEN_MIN + 4);
	ack = be32_load(h + ETH_HLEN + IPV4_HLEN_MIN + 8);
	if (plen == 0 || seq != s->rcv_nxt ||
	    (uint32_t)be16_load(h + ETH_HLEN + IPV4_HLEN_MIN + 14) << s->snd_wscale != s->snd_wnd ||
	    (int32_t)(s->rcv_adv - seq) < (int32_t)plen)
		return tcp_rx_flow_any(dev, nb);
	if (ack != s->snd_una) {
		/* tcp_rx_flow_any's test of a new ACK (its others passed): one of everything
		 * sent outside recovery to rx_ack_all_data, any other to header prediction */
		if (ack != s->snd_max || s->in_recovery)
			return tcp_rx_flow_any(dev, nb);
		return rx_ack_all_data(s, nb, seq, ack, plen);
	}
	if (c == &tcp_rxent_cache)
		return tcp_rx_flow_any(dev, nb);
	rx_flow_start(s, nb, seq, ack, plen, c);
}

/* tcp_budget_note_later's work when another socket's note waits (made first, then s's left
 * waiting), then nb back: rx_flow_finish's rare case, out of line so that rx_flow_finish
 * keeps no register across a call. Consumes nb. */
static __attribute__((noinline, cold)) void rx_flow_note_other(struct tcp_sock *s, struct netbuf *nb)
{
	tcp_budget_note_pending();
	tcp_budget_pending = s;
	netbuf_rx_consumed(nb);
}

/* The end of tcp_rx_flow for a frame whose rx_gro work needs calls, made after that work
 * in schedule_ack's and the budget's order: the ACK held for the batch's end (the second
 * segment not acknowledged: held_node not linked yet), the budget's note left waiting for
 * s (another socket's made first). Out of line, a jump from tcp_rx_flow. Consumes nb. */
static __attribute__((noinline)) void rx_flow_finish(struct tcp_sock *s, struct netbuf *nb)
{
	if (list_empty(&s->held_node)) /* (schedule_ack's) */
		tcp_output_hold(s);
	if (s->bud_nxt != s->rcv_nxt && tcp_budget_pending != s) { /* (tcp_budget_note_later) */
		if (tcp_budget_pending)
			return rx_flow_note_other(s, nb);
		tcp_budget_pending = s;
	}
	netbuf_rx_consumed(nb);
}

/* A data frame of the socket gathering the batch's segments (tcp_rx_gro; net.c
 * net_stack_rx calls while one does): net_stack_rx's shape test, then tcp_rx_flow_any's
 * tests and rx_gro's work inline, when rx_gro would call nothing but schedule_ack's hold
 * and the budget's note: the socket's tests first (the reserve's test of receive entries,
 * the ACK not owed now and not delayed: 2 <= segs_unacked + 1 < tcp_ack_every, output
 * idle), then the header image's match, the buffer admission's first test (at most half
 * the device's buffers lent), the sequence numbers, the window and a cached receive entry.
 * The tests have no side effect, so their order is free: it is the one that leaves no
 * register to save, and the function calls nothing but its last jump. The hold and the
 * note go to rx_flow_finish, a jump; without them the frame's one call is
 * netbuf_rx_consumed's, a jump too. A frame not of tcp_rx_flow_shape's first shape goes to
 * net_stack_rx_flow, any other that fails a test to tcp_rx_flow_any (the batch's first
 * frame, the first segment not acknowledged, an ACK owed now, more than half the buffers
 * lent: its exact admission test, no cached entry: the pool's, ...), nothing changed,
 * which takes it as before. Consumes nb. */
__attribute__((noinline)) void tcp_rx_flow(struct netdev *dev, struct netbuf *nb)
{
	struct tcp_sock *s = tcp_rx_gro;
	const uint8_t *h = nb->data;
	uint32_t plen, seq, ack, unacked, nxt;
	struct list_node *c;

	/* net_stack_rx's shape test (it calls while a batch gathers, with no test of its own) */
	if (tcp_rx_flow_shape(nb) != 1)
		return net_stack_rx_flow(dev, nb);
	/* the socket's tests first: a frame that fails them costs tcp_rx_flow_any little */
	if (!s)
		return tcp_rx_flow_any(dev, nb);
	unacked = s->segs_unacked + 1;
	/* (tcp_output_idle but its state test: rx_flow_match's ESTABLISHED is one of its two) */
	if (unacked < 2 || unacked >= tcp_ack_every || s->ack_now || s->fin_queued || SEQ_LT(s->snd_nxt, s->snd_end) ||
	    !(s->rxq_frags < TCP_RXENT_RESERVE || rxents_held() < TCP_RXENTS - TCP_SOCKETS * TCP_RXENT_RESERVE) ||
	    !rx_flow_match(dev, nb, s) || !rx_buf_admit_half(dev)) /* (dev: net_if0's, an image needs one) */
		return tcp_rx_flow_any(dev, nb);
	plen = nb->frags[0].len;
	seq = be32_load(h + ETH_HLEN + IPV4_HLEN_MIN + 4);
	ack = be32_load(h + ETH_HLEN + IPV4_HLEN_MIN + 8);
	c = tcp_rxent_cache.next; /* (rxent_take: a cached entry, else tcp_rx_flow_any's take) */
	if (plen == 0 || seq != s->rcv_nxt ||
	    ack != s->snd_una || (uint32_t)be16_load(h + ETH_HLEN + IPV4_HLEN_MIN + 14) << s->snd_wscale != s->snd_wnd ||
	    (int32_t)(s->rcv_adv - seq) < (int32_t)plen || c == &tcp_rxent_cache)
		return tcp_rx_flow_any(dev, nb);
	/* tcp_rx_flow_any's and rx_gro's work for it, in their order (what the tests held
	 * in registers is read again where that is as cheap: fewer registers to save) */
	s->snd_wl2 = ack;
	s->snd_wl1 = seq;
	net_rx_fast_frames++;
	tcp_counters.segs_in++;
	nb->data += ETH_HLEN + IPV4_HLEN_MIN + TCP_HLEN_MIN;
	s->segs_in++;
	s->segs_unacked++; /* (schedule_ack's; the ACK's hold below or in rx_flow_finish) */
	s->ack_pass_end = true;
	struct list_node *n = c->next; /* (rxent_take: the cache's pop) */
	tcp_rxent_cache.next = n;
	n->prev = &tcp_rxent_cache;
	tcp_rxent_cached--;
	struct tcp_rxent *r = container_of(c, struct tcp_rxent, node);
	nxt = rx_queue_one(s, nb, r, seq, plen);
	if (list_empty(&s->held_node) || (tcp_budget_pending != s && s->bud_nxt != nxt))
		return rx_flow_finish(s, nb);
	netbuf_rx_consumed(nb);
}

/* rx_bare_trim's work but the moves of nb's data and tail: the frame counted as the fast
 * path's, the padding fragment, if any, released. For rx_ack_all, which gives nb back at
 * once (nothing reads its data or tail: netbuf_rx_consumed, or netbuf_free, resets them). */
static inline __attribute__((always_inline)) void rx_bare_release(struct netbuf *nb)
{
	net_rx_fast_frames++;
	if (nb->nfrags) {
		struct netdev_frag_owner *o = nb->frags[0].owner;
		nb->nfrags = 0;
		if (o)
			o->release(o, nb->frags[0].token);
	}
}

/* net_rx_trim's work for a segment without data that tcp_rx_flow_bare takes (nb's host
 * part the Ethernet, IPv4 and TCP headers, its fragment, if any, the Ethernet padding):
 * the data at the TCP header, the padding released, the frame counted as the fast path's. */
static inline __attribute__((always_inline)) void rx_bare_trim(struct netbuf *nb)
{
	uint8_t *th = nb->data + ETH_HLEN + IPV4_HLEN_MIN;

	nb->tail = th + TCP_HLEN_MIN;
	nb->data = th;
	rx_bare_release(nb);
}
/* Does a pure ACK at RCV.NXT (SEG.ACK ack, SEG.WND wnd unscaled) of s, which rx_flow_match
 * passed and no receive batch gathers for, acknowledge everything s sent while s has nothing
 * else to do: a new ACK of SND.MAX with the window unchanged, outside recovery, no listener,
 * nothing out of order, no ACK owed, no FIN, every queued byte sent (so every send entry is
 * acknowledged, and tcp_output would find nothing to send before and after it). The ACK of a
 * request's answer on an otherwise idle direction (rx_ack_all takes it). No side effect. */
static inline __attribute__((always_inline)) bool rx_ack_all_ok(const struct tcp_sock *s, uint32_t seq, uint32_t ack,
								 uint32_t wnd)
{
	return seq == s->rcv_nxt && ack == s->snd_max && ack != s->snd_una && wnd << s->snd_wscale == s->snd_wnd &&
	       !s->in_recovery && !s->listener && list_empty(&s->ooo) && !s->ooo_fin && !s->ack_now &&
	       !s->fin_queued && s->snd_nxt == s->snd_end;
}

/* process_ack_core's work for a new ACK of SND.MAX (ack) in a segment of SEG.SEQ seq with
 * the window unchanged, outside recovery, every queued byte sent (rx_ack_all_ok's and
 * rx_ack_all_data's conditions), now the segment's clock (s->last_rx_ns, set by the
 * caller): the RTT sample, congestion control, SND.UNA to SND.MAX, the whole send queue
 * freed (every entry acknowledged: no sequence test per entry), the retransmission timer
 * stopped, SND.WL1/WL2 (SND.WND and MAX.SND.WND stay). TCP_EV_SENT is the caller's. */
static inline __attribute__((always_inline)) void rx_ack_everything(struct tcp_sock *s, uint32_t seq, uint32_t ack,
								   uint64_t now)
{
	struct list_node *it = s->sndq.next;
	uint32_t acked = ack - s->snd_una;

	/* process_ack_core's new ACK */
	if (s->timing && SEQ_GEQ(ack, s->rtt_seq)) {
		s->timing = false;
		update_rtt_inl(s, now - s->rtt_start_ns);
	}
	s->backoff = 0;
	cwnd_grow(s, acked);
	s->dupacks = 0;
	s->snd_una = ack;
	if (SEQ_LT(s->snd_nxt, ack))
		s->snd_nxt = ack;
	/* sndq_ack_inl for an ACK of every queued byte (SND.END <= SND.NXT <= SND.MAX): the
	 * queue is emptied first, then its entries (still linked to each other, the last to
	 * the head) freed, so that what a fragment's release (its owner's code) might queue
	 * stays queued */
	list_init(&s->sndq);
	s->sndq_bytes = 0;
	s->snd_cursor = NULL;
	while (it != &s->sndq) {
		struct tcp_sndent *e = container_of(it, struct tcp_sndent, node);
		it = it->next;
		if (e->inflight == 0) {
			tcp_sndent_free_own(s, e);
		} else {
			e->done = true;
			list_init(&e->node);
		}
	}
	timer_stop(&timer_default_queue, &s->t_rexmit);
	s->persist = false;
	/* the window update rule (SND.WL1/WL2); SND.WND stays, as does MAX.SND.WND */
	if (SEQ_LT(s->snd_wl1, seq) || (s->snd_wl1 == seq && SEQ_LEQ(s->snd_wl2, ack))) {
		s->snd_wl1 = seq;
		s->snd_wl2 = ack;
		if (s->snd_wnd)
			s->zwnd_since_ns = 0;
	}
}

/* What header prediction (rx_predicted, rx_fast, process_ack_core) does for a segment that
 * rx_ack_all_ok passed, without the steps that cannot apply to it: the peer's clock and
 * keep-alive, the RTT sample, congestion control, SND.UNA to SND.MAX, the whole send queue
 * freed (every entry acknowledged: no sequence test per entry), the retransmission timer
 * stopped, SND.WL1/WL2 (the window, unchanged, needs no update), then TCP_EV_SENT. Nothing
 * to queue, no ACK to schedule, no budget note (RCV.NXT and the queues stay), no receive
 * batch begun, and tcp_output would send nothing (rx_ack_all_ok): none of those steps is
 * taken. nb (its padding released: rx_bare_release) goes back before the user's
 * callback, which is the last thing done (so that nothing here touches s after it). A
 * fragment's release (its owner's code) never frees a socket: sndq_ack_inl's walk relies on
 * that as this one does. Consumes nb. */
static __attribute__((noinline)) void rx_ack_all(struct tcp_sock *s, struct netbuf *nb, uint32_t seq, uint32_t ack)
{
	uint64_t now = clock_now_ns();

	rx_bare_release(nb);
	tcp_counters.segs_in++;
	s->segs_in++;
	s->last_rx_ns = now;
	s->keep_probes = 0;
	if (!s->t_keep.armed)
		tcp_keep_arm(s);
	rx_ack_everything(s, seq, ack, now);
	netbuf_rx_consumed(nb);
	ack_sent_raise(s);
	unsigned ev = s->pending_events; /* (deliver_events: ESTABLISHED) */
	s->pending_events = 0;
	if (ev) /* (none: a user that takes TCP_EV_SENT only when owed, none owed) */
		tcp_notify(s, ev);
}

/* tcp_rx_flow_any for an in-order data segment of s (tcp_rx_gro, or none gathers and it
 * is the batch's first) that acknowledges everything s sent: tcp_rx_flow_any's tests but
 * SEG.ACK = SND.UNA passed, SEG.ACK a new ACK of SND.MAX outside recovery, every queued
 * byte sent (tcp_output_idle), the window unchanged (what rx_ack_all_ok asks of a pure
 * ACK). A host's next command carrying the ACK of our last responses (queue depth > 1).
 * What header prediction (tcp_rx_more, rx_predicted, rx_fast) does for it, in its order,
 * without the walk through net_stack_rx_ip, tcp_rx, tcp_rx_gathering and tcp_rx_more: the
 * clock read for this segment and keep-alive (rx_gro_begin: the batch gathers for s, as
 * rx_predicted's data event makes it), the ACK (rx_ack_everything, TCP_EV_SENT), the
 * payload (rx_gro: queued, the ACK scheduled or sent, the budget's note, nb back), then the
 * events as rx_predicted gives them: the data event waits for the batch's end, the others
 * go now, the last thing done (nothing here touches s after the user's callback). Nothing
 * queued (no receive entry): no batch begun by this segment, the events delivered as
 * deliver_events does. Consumes nb. */
static __attribute__((noinline)) void rx_ack_all_data(struct tcp_sock *s, struct netbuf *nb, uint32_t seq,
						      uint32_t ack, uint32_t plen)
{
	bool first = !tcp_rx_gro;

	rx_gro_begin(s);
	net_rx_fast_frames++;
	tcp_counters.segs_in++;
	nb->data += ETH_HLEN + IPV4_HLEN_MIN + TCP_HLEN_MIN;
	rx_ack_everything(s, seq, ack, s->last_rx_ns);
	ack_sent_raise(s);
	rx_gro(s, nb, seq, ack, plen);
	unsigned ev = s->pending_events;
	if (__builtin_expect(!(ev & TCP_EV_RECV), 0)) {
		if (first)
			tcp_rx_gro = NULL;
		return deliver_events(s);
	}
	s->pending_events = TCP_EV_RECV;
	if (ev != TCP_EV_RECV) /* (only it: TCP_EV_SENT taken only when owed, none owed) */
		tcp_notify(s, ev & ~TCP_EV_RECV); /* (ESTABLISHED: rx_flow_match) */
}

/* tcp_rx_flow_bare's general part, for s (rx_flow_match passed) and a pure ACK of SEG.SEQ
 * seq, SEG.ACK ack that rx_ack_all does not take: what net_stack_rx_ip's common case
 * (net_rx_trim: the padding released, the datagram cut to its length), tcp_rx and
 * tcp_rx_more do for it when header prediction takes it (rx_fast_ok: at RCV.NXT, an ACK in
 * [SND.UNA, SND.MAX], no listener, nothing out of order; the flags and no options are the
 * image's), and rx_predicted as there. Anything else goes to net_stack_rx_ip, nothing
 * changed. Out of line: tcp_rx_flow_bare saves no register for it. Consumes nb. */
static __attribute__((noinline)) void rx_flow_bare_more(struct netdev *dev, struct netbuf *nb, struct tcp_sock *s,
							 uint32_t seq, uint32_t ack)
{
	const uint8_t *th = nb->data + ETH_HLEN + IPV4_HLEN_MIN;
	struct tcp_seg g;

	if (seq != s->rcv_nxt || s->listener || !list_empty(&s->ooo) || s->ooo_fin || SEQ_LT(ack, s->snd_una) ||
	    SEQ_GT(ack, s->snd_max))
		return net_stack_rx_ip(dev, nb);
	g.flags = th[13];
	g.wnd = be16_load(th + 14);
	rx_bare_trim(nb);
	/* tcp_rx's and tcp_rx_more's */
	tcp_counters.segs_in++;
	g.sport = s->rport;
	g.dport = s->lport;
	g.hlen = TCP_HLEN_MIN;
	g.seq = seq;
	g.ack = ack;
	g.len = 0;
	g.opts.has_sack = false;
	rx_predicted(nb, &g, s);
}

/* tcp_rx_flow for a segment without data (net_stack_rx: tcp_rx_flow_shape's second shape,
 * the fragment, if any, the Ethernet padding; a pure ACK), from the last segment's
 * connection s: rx_flow_match, then rx_ack_all for the ACK of everything s sent
 * (rx_ack_all_ok), rx_flow_bare_more for any other. A frame that does not match goes to
 * net_stack_rx_ip, nothing changed. Each a jump: this saves no register. Consumes nb. */
__attribute__((noinline)) void tcp_rx_flow_bare(struct netdev *dev, struct netbuf *nb)
{
	struct tcp_sock *s = tcp_rx_last;
	const uint8_t *th = nb->data + ETH_HLEN + IPV4_HLEN_MIN;
	uint32_t seq, ack;

	if ((tcp_rx_gro && tcp_rx_gro != s) || !rx_flow_match(dev, nb, s))
		return net_stack_rx_ip(dev, nb);
	seq = be32_load(th + 4);
	ack = be32_load(th + 8);
	if (!tcp_rx_gro && rx_ack_all_ok(s, seq, ack, be16_load(th + 14)))
		return rx_ack_all(s, nb, seq, ack);
	return rx_flow_bare_more(dev, nb, s, seq, ack);
}

/* A segment for us from IPv4 (nb's data at the TCP header, len bytes from src to dst).
 * Consumes nb. The receive batch's in-order data segments of the socket gathering them
 * take rx_gro here; the data segments and ACKs of an established connection (a 20-byte
 * header in the host part, the last segment's connection, header prediction's tests) are
 * read into locals and handled by tcp_rx_more; every other segment goes to tcp_rx_full
 * (the full parser, the table, tcp_rx_slow), which gives it the same checks in the same
 * order. */
void tcp_rx(struct netbuf *nb, uint32_t src, uint32_t dst, size_t len)
{
	tcp_counters.segs_in++;
	/* (both a jump: tcp_rx saves no register for either) */
	if (len > TCP_HLEN_MIN && (tcp_rx_gro || tcp_rx_last))
		tcp_rx_gathering(nb, src, dst, len);
	else
		tcp_rx_more(nb, src, dst, len);
}
