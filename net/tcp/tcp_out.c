/*
 * tcp_out.c - TCP segment output, retransmission and probe timers.
 *
 * A segment is a netbuf whose host part holds the TCP header and whose fragments point
 * into the send queue's entries (never copied). Each fragment is a reference on its
 * entry (owner tcp_tx_owner, token = the entry): the entry is freed only when it is
 * acknowledged and no netbuf that the NIC may still read refers to it.
 */
#include <errno.h>
#include <string.h>
#include "../../lib/clock.h"
#include "../../lib/log.h"
#include "../../lib/poller.h"
#include "../../mm/pool.h"
#include "tcp_internal.h"

LOG_MODULE_USE(tcp);

static void tx_ref_release(struct netdev_frag_owner *o, uint64_t token)
{
	struct tcp_sndent *e = (struct tcp_sndent *)(uintptr_t)token;
	(void)o;
	e->inflight--;
	tcp_sndent_put(e);
}

static struct netdev_frag_owner tcp_tx_owner = { "tcp-tx", tx_ref_release };

/* A segment carrying our ACK went out: nothing owed, held or delayed any more, no segment
 * left unacknowledged (t_delack stays as it is: see tcp_xmit). */
static inline __attribute__((always_inline)) void ack_went(struct tcp_sock *s)
{
	s->ack_now = false;
	s->ack_delayed = false;
	s->ack_pass_end = false;
	s->ack_hold = false;
	s->ack_held = false;
	s->segs_unacked = 0;
}

/* Would a window of at most most bytes (scaled as WINDOW can say) leave the advertised
 * edge where it is (tcp_advertise: it moves by an MSS or more)? No side effect. */
static inline __attribute__((always_inline)) bool adv_edge_stays(const struct tcp_sock *s, uint32_t most)
{
	uint32_t lim = (uint32_t)0xffff << s->rcv_wscale, edge_max = s->rcv_nxt + (most < lim ? most : lim);

	return !SEQ_GT(edge_max, s->rcv_adv) || edge_max - s->rcv_adv < s->mss;
}

static uint32_t advertise_window(struct tcp_sock *s, bool syn);

/* The right edge to advertise: never shrinks (RFC 9293 3.8.6.2.2); moved only by at
 * least min(RCV.BUFF/2, MSS) (receiver silly-window avoidance). The window computed only
 * when the edge may move (advertise_window, out of line: the tests before it, taken on
 * most calls, save no register for it). */
static uint32_t tcp_advertise(struct tcp_sock *s, bool syn)
{
	/* Within one tcp_output pass RCV.NXT and the queues stay put: the first segment's
	 * window is every segment's (computed ~90 instructions per frame before). */
	if (s->adv_fresh && s->out_pass && !syn)
		return s->rcv_adv - s->rcv_nxt;
	if (s->ack_held && s->ack_held_edge && s->rcv_nxt == s->ack_hold_seq && !syn) {
		/* A held ACK going out with the answer its user promised (a write's response):
		 * the edge stays, as tcp_ack_held decided (ack_held_edge), with no window
		 * computed. */
		s->adv_fresh = s->out_pass;
		return s->rcv_adv - s->rcv_nxt;
	}
	if (!syn && s->rcv_nxt - s->win_nxt < s->mss && SEQ_GT(s->rcv_adv, s->rcv_nxt)) {
		/* Less than a segment received since the last window (an ACK-clocked sender's
		 * every pass, a command capsule; after bulk data the edge moves and the test
		 * would only cost). The edge moves only by an MSS or more: when even the
		 * window's upper bound (queues and limit, no buffer budget) would not move it
		 * that far, the budget's sums need not be walked. That bound is first taken
		 * from win_full (tcp_rcv_window_max_known: exact with the queues empty, the common
		 * case, at least it otherwise): when even that would not move the edge, the exact
		 * bound would not either, and the answer is the same without computing it. */
		uint32_t known = tcp_rcv_window_max_known(s);
		if ((known && adv_edge_stays(s, known)) || adv_edge_stays(s, tcp_rcv_window_max(s))) {
			s->adv_fresh = s->out_pass;
			return s->rcv_adv - s->rcv_nxt;
		}
	}
	return advertise_window(s, syn);
}

/* tcp_advertise's window computed, the edge moved as it says. */
static __attribute__((noinline)) uint32_t advertise_window(struct tcp_sock *s, bool syn)
{
	uint32_t win = 0; /* (set by both calls below; initialised for the compiler) */
	if (syn)
		win = tcp_rcv_window(s);
	else {
		/* The steady window (queues empty, the budget lets s promise it): its edge
		 * and budget note are settled with the window, in one call. */
		uint32_t adv_wnd = tcp_rcv_window_advertise(s, &win);
		if (adv_wnd) {
			s->adv_fresh = s->out_pass;
			return adv_wnd;
		}
	}
	s->win_nxt = s->rcv_nxt;
	uint32_t max = syn ? 0xffff : (uint32_t)0xffff << s->rcv_wscale; /* a SYN's window is never scaled */
	uint32_t edge, adv = s->rcv_adv;

	if (win > max)
		win = max;
	edge = s->rcv_nxt + win;
	if (SEQ_LT(s->rcv_adv, s->rcv_nxt))
		s->rcv_adv = s->rcv_nxt;
	if (SEQ_GT(edge, s->rcv_adv)) {
		uint32_t grow = edge - s->rcv_adv;
		uint32_t thresh = s->mss; /* min(RCV.BUFF / 2, MSS): the MSS is always smaller */
		if (grow >= thresh || s->rcv_adv == s->rcv_nxt)
			s->rcv_adv = edge;
	}
	if (s->rcv_adv != adv)
		tcp_budget_note(s);
	s->adv_fresh = s->out_pass && !syn;
	return s->rcv_adv - s->rcv_nxt;
}

/* A SYN's options: MSS, SACK-permitted (RFC 2018 2: in a SYN-ACK only when the peer's
 * SYN had it), window scale. */
static void put_options(uint8_t *p, size_t *len, struct tcp_sock *s, bool ws, bool sack_perm)
{
	uint16_t mss = (uint16_t)(net_if0.dev ? net_if0.dev->mtu - 40 : 1460);
	size_t n = 4;
	p[0] = TCP_OPT_MSS;
	p[1] = 4;
	p[2] = (uint8_t)(mss >> 8);
	p[3] = (uint8_t)mss;
	if (sack_perm) {
		p[n++] = TCP_OPT_NOP;
		p[n++] = TCP_OPT_NOP;
		p[n++] = TCP_OPT_SACK_PERM;
		p[n++] = 2;
	}
	if (ws) {
		p[n++] = TCP_OPT_NOP;
		p[n++] = TCP_OPT_WS;
		p[n++] = 3;
		p[n++] = s->rcv_wscale;
	}
	*len = n;
}

/* The first entry of s's send queue that holds a byte at or after seq (&s->sndq when
 * none): from the cursor when it is not beyond seq, else from the head (a
 * retransmission). A 128 KiB read queues ~40 entries: walking them from the head for
 * every frame cost more than building the frame. */
static struct list_node *sndq_at(struct tcp_sock *s, uint32_t seq)
{
	struct list_node *it = s->snd_cursor && SEQ_LEQ(s->snd_cursor->seq, seq) ? &s->snd_cursor->node : s->sndq.next;
	for (; it != &s->sndq; it = it->next) {
		struct tcp_sndent *e = container_of(it, struct tcp_sndent, node);
		if (SEQ_GT(e->seq + e->frag.len, seq)) {
			s->snd_cursor = e;
			break;
		}
	}
	return it;
}

/* How much of [seq, seq + len) one frame can carry so that the NIC gathers it in place:
 * at most the device's tx_dev_frags device-memory pieces of at most tx_dev_bytes each
 * (docs/platform.md: QEMU 7.2's e1000e takes one of <= 4 KiB) and NETBUF_MAX_FRAGS pieces in
 * all. Never 0 when len is not: the first piece always fits (cut to tx_dev_bytes).
 * tcp_seg_cut without counting the cut. */
static uint32_t seg_cut(struct tcp_sock *s, uint32_t seq, uint32_t len)
{
	const struct netdev *d = net_if0.dev;
	unsigned dev_max = d ? d->tx_dev_frags : 0, bytes_max = d ? d->tx_dev_bytes : 0;
	unsigned pieces = 0, ndev = 0;
	uint32_t done = 0;
	struct list_node *it;

	it = sndq_at(s, seq);
	if (it != &s->sndq) {
		/* One entry holding the whole range (a PDU's chunk, a data buffer): one piece,
		 * which always fits, cut only to tx_dev_bytes (the loop below finds the same). */
		const struct tcp_sndent *e = container_of(it, struct tcp_sndent, node);
		if (SEQ_LEQ(e->seq, seq) && len <= e->seq + e->frag.len - seq &&
		    (e->frag.addr.cls != MEM_CLASS_DEVICE || !bytes_max || len <= bytes_max))
			return len;
	}
	for (; it != &s->sndq; it = it->next) {
		const struct tcp_sndent *e = container_of(it, struct tcp_sndent, node);
		uint32_t end = e->seq + e->frag.len;
		if (done >= len)
			break;
		if (SEQ_LEQ(end, seq + done))
			continue;
		uint32_t n = end - (seq + done);
		if (n > len - done)
			n = len - done;
		if (pieces == NETBUF_MAX_FRAGS)
			break;
		if (e->frag.addr.cls == MEM_CLASS_DEVICE) {
			if (dev_max && ndev == dev_max)
				break;
			if (bytes_max && n > bytes_max)
				n = bytes_max;
			ndev++;
		}
		pieces++;
		done += n;
		if (n < end - (seq + done - n))
			break; /* the piece was cut: the frame ends here */
	}
	return done ? done : len;
}

uint32_t tcp_seg_cut(struct tcp_sock *s, uint32_t seq, uint32_t len)
{
	uint32_t n = seg_cut(s, seq, len);
	if (n < len)
		tcp_counters.tx_cut_dev++;
	return n;
}

/* Payload bytes one frame may carry: the MSS, or with segmentation offload (NETDEV_F_TSO
 * beside TX checksum offload) up to the device's tso_max, the device cutting MSS segments. */
uint32_t tcp_frame_max(const struct tcp_sock *s)
{
	const struct netdev *d = net_if0.dev;
	if (d && (d->features & (NETDEV_F_TSO | NETDEV_F_TX_CSUM)) == (NETDEV_F_TSO | NETDEV_F_TX_CSUM) &&
	    d->tso_max > s->mss)
		return d->tso_max;
	return s->mss;
}

/* Sockets whose data the device refused for want of transmit ring room, in the order of
 * their refusals. While any waits, data goes out only in turns (tcp_txwait_turns): a
 * refused socket does not try again at its next ACK or user call, and no other socket
 * jumps the queue, so the room the NIC's reclaim frees goes to the waiters first, a large
 * TSO frame included, instead of to whoever calls first with a small frame. */
static struct list_node tcp_txwait = LIST_HEAD_INIT(tcp_txwait);
static bool tcp_txwait_turn; /* a waiter's turn is running: it may send */
/* While sockets wait, this mark is on tcp_held (below): the end-of-pass poller's one test
 * of tcp_held covers both lists (a second test cost ~4 instructions a pass, ~620 per
 * 128 KiB write), and the turns run first (tcp_rx_batch_end). */
static struct list_node tcp_txwait_mark = LIST_HEAD_INIT(tcp_txwait_mark);
/* Sockets whose last, short segment waits for tcp_flush or the end of the pass (and
 * tcp_txwait_mark while sockets wait for ring room). */
static struct list_node tcp_held = LIST_HEAD_INIT(tcp_held);

/* s waits for its turn (at the back of the line). */
static void tcp_txwait_join(struct tcp_sock *s)
{
	if (list_empty(&s->txwait_node))
		list_add_tail(&tcp_txwait, &s->txwait_node);
	if (list_empty(&tcp_txwait_mark))
		list_add_head(&tcp_held, &tcp_txwait_mark);
}

/* The options a segment carries besides none (out of line: most carry none): a SYN's, or
 * the SACK blocks an ACK owes, as many as fit beside the payload (*sack_short when not all
 * did). Returns their length in opts (TCP_OPT_SPACE bytes). */
static __attribute__((noinline)) size_t tcp_xmit_opts(struct tcp_sock *s, uint32_t seq, uint32_t len,
						      uint8_t flags, uint8_t *opts, bool *sack_short)
{
	size_t optlen = 0;

	if (flags & TCP_SYN) {
		put_options(opts, &optlen, s, s->state == TCP_SYN_SENT || s->rcv_wscale || s->snd_wscale,
			    s->state == TCP_SYN_SENT || s->sack_ok);
		return optlen;
	}
	/* The MSS counts payload and options together (RFC 6691). A data segment takes the
	 * blocks that fit beside its payload rather than being cut short (which would leave
	 * a tiny segment behind it); one without all of them leaves the ACK owed, so a pure
	 * ACK with the blocks follows (tcp_output). */
	uint32_t cut = len ? seg_cut(s, seq, len) : 0; /* what the gather takes */
	size_t room = cut >= s->mss ? 0 : s->mss - cut;
	*sack_short = room < TCP_OPT_SPACE;
	return tcp_sack_option(s, opts, *sack_short ? room : TCP_OPT_SPACE);
}

/* One piece of entry e, from off, n bytes, as nb's fragment i, its last (nb->nfrags: i + 1):
 * the entry's reference (netbuf_add_frag, written in place). i is nb->nfrags, which the
 * callers with a new netbuf (no fragments: every frame's payload is gathered right after
 * its allocation) give as a constant, so that the slot's address is one too (gcc reloaded
 * the count a store of the new netbuf's fields had just written: ~4 instructions a piece).
 * Always inline: with tcp_xmit_fast in three places of tcp_output_work gcc left it out of
 * line (~28 instructions a frame more). */
static inline __attribute__((always_inline)) void tcp_xmit_piece(struct netbuf *nb, unsigned i, struct tcp_sndent *e,
								  uint32_t off, uint32_t n)
{
	struct netdev_frag *f = &nb->frags[i];

	nb->nfrags = (uint8_t)(i + 1);

	/* field by field: a copy of the whole entry then four fields again cost ~13 a piece */
	f->addr.bus = e->frag.addr.bus + off; /* (dma_addr_add, its fields apart) */
	f->addr.cls = e->frag.addr.cls;
	f->offset = e->frag.offset + off;
	f->len = n;
	f->provider = e->frag.provider;
	f->pad = e->frag.pad;
	f->token = (uint64_t)(uintptr_t)e;
	f->owner = &tcp_tx_owner;
	e->inflight++;
}

/* The n bytes an entry holds itself (TCP_SNDENT_INLINE: a PDU header, a response) copied
 * behind nb's headers, at its tail: the frame then refers to no entry for them (no
 * reference, nothing to release at its completion; one descriptor less for the e1000e).
 * A fixed-size copy of the whole buf: what lies past n lies past the tail, never sent. */
static inline __attribute__((always_inline)) void tcp_xmit_copy_inline(struct netbuf *nb, const struct tcp_sndent *e,
									uint32_t n)
{
	memcpy(nb->tail, e->buf, TCP_SNDENT_INLINE);
	nb->tail += n;
	dma_account_cpu(MEM_CLASS_HOST, n);
}

/* What tcp_xmit_gather gathered: the bytes, of which host and device memory's. Returned by
 * value (in registers), so that its callers' payload counters never have their address
 * taken and stay in registers (a pointer to them made gcc keep them, and reload the
 * netbuf's fields after each of their stores, in memory: ~6 instructions a frame). */
struct tcp_gathered {
	uint32_t len, pay[2];
};

/* Gather [seq, seq + len) from the send queue (from it, sndq_at's answer) into nb's
 * fragments, cut where tcp_seg_cut would cut it (the device's gather limits: a frame ends
 * after a piece cut short, tcp_output_work sends the rest next). Returns the bytes
 * gathered (len, or fewer when cut) and the host / device bytes among them.
 * Out of line: a frame within one entry (most) takes tcp_xmit's own path. */
static __attribute__((noinline)) struct tcp_gathered tcp_xmit_gather(struct tcp_sock *s, struct netbuf *nb,
								      struct list_node *it, uint32_t seq, uint32_t len)
{
	struct tcp_gathered g = { 0, { 0, 0 } };
	const struct netdev *d = net_if0.dev;
	unsigned dev_max = d ? d->tx_dev_frags : 0, bytes_max = d ? d->tx_dev_bytes : 0, ndev = 0;
	uint32_t want = seq, left = len;

	for (; it != &s->sndq; it = it->next) {
		struct tcp_sndent *e = container_of(it, struct tcp_sndent, node);
		uint32_t end = e->seq + e->frag.len;
		if (SEQ_LEQ(end, want))
			continue;
		uint32_t off = want - e->seq;
		uint32_t n = e->frag.len - off < left ? e->frag.len - off : left;
		bool cut = false, dev = e->frag.addr.cls == MEM_CLASS_DEVICE;
		if (dev) {
			if (dev_max && ndev == dev_max)
				break;
			if (bytes_max && n > bytes_max) {
				n = bytes_max;
				cut = true;
			}
			ndev++;
		}
		if (nb->nfrags >= NETBUF_MAX_FRAGS)
			break; /* out of gather slots: send what we have */
		tcp_xmit_piece(nb, nb->nfrags, e, off, n);
		g.pay[dev] += n;
		want += n;
		left -= n;
		if (!left || cut)
			break;
	}
	if (left && left < len)
		tcp_counters.tx_cut_dev++;
	g.len = len - left;
	return g;
}

/* Gather [seq, seq + len) from the send queue into nb's fragments (tcp_xmit_gather's
 * rules), nb a new netbuf (no fragments yet). Returns the bytes gathered; pay[0] / pay[1] += the host / device bytes. The
 * common frames take the straight paths: one entry holding the whole range (a data buffer,
 * a PDU's chunk), unless the device takes fewer device-memory bytes at a time; two
 * host-memory entries (a PDU header in its entry, then the start of its data: every 4 KiB
 * read's first frame, ~180 instructions cheaper than the general gather). */
static inline __attribute__((always_inline)) uint32_t tcp_xmit_payload_as(struct tcp_sock *s, struct netbuf *nb,
									uint32_t seq, uint32_t len, uint32_t *pay,
									bool any_class)
{
	const struct netdev *d = net_if0.dev;
	struct tcp_sndent *e = s->snd_cursor;
	uint32_t off;

	if (!e && !list_empty(&s->sndq)) /* (no cursor: the queue's head, at or before any byte) */
		s->snd_cursor = e = container_of(s->sndq.next, struct tcp_sndent, node);

	/* The cursor's entry holds seq (the frame after the last one, most often): sndq_at's
	 * answer without its walk, and the one-entry case's tests in two compares. */
	if (__builtin_expect(e != NULL, 1) && (off = seq - e->seq) < e->frag.len) {
		uint32_t avail = e->frag.len - off;
		if (len <= avail) {
			if (e->frag.addr.cls != MEM_CLASS_DEVICE) {
				tcp_xmit_piece(nb, 0, e, off, len);
				pay[0] += len;
				return len;
			}
			if (!d || !d->tx_dev_bytes || len <= d->tx_dev_bytes) {
				tcp_xmit_piece(nb, 0, e, off, len);
				pay[1] += len;
				return len;
			}
		} else if (any_class && e->node.next != &s->sndq) {
			/* two entries, the frame ending in the second, in host or device memory as
			 * tcp_seg_cut's rules take them uncut (a device piece within tx_dev_bytes,
			 * two only when tx_dev_frags allows two): a read's last frame in the CMB
			 * mode, its data then its response, which took tcp_xmit_gather's walk.
			 * The cursor moves to the second (at or before the next byte to send). */
			struct tcp_sndent *e2 = container_of(e->node.next, struct tcp_sndent, node);
			uint32_t rest = len - avail;
			bool dev = e->frag.addr.cls == MEM_CLASS_DEVICE, dev2 = e2->frag.addr.cls == MEM_CLASS_DEVICE;
			if (rest <= e2->frag.len && (!dev || !d->tx_dev_bytes || avail <= d->tx_dev_bytes) &&
			    (!dev2 || !d->tx_dev_bytes || rest <= d->tx_dev_bytes) && !(dev && dev2 && d->tx_dev_frags == 1)) {
				tcp_xmit_piece(nb, 0, e, off, avail);
				tcp_xmit_piece(nb, 1, e2, 0, rest);
				pay[0] += (dev ? 0 : avail) + (dev2 ? 0 : rest);
				pay[1] += (dev ? avail : 0) + (dev2 ? rest : 0);
				s->snd_cursor = e2;
				return len;
			}
		} else if (e->frag.addr.cls != MEM_CLASS_DEVICE && e->node.next != &s->sndq) {
			/* two host-memory entries (below), the frame ending in the second: the
			 * cursor moves to it (at or before the next byte to send) */
			struct tcp_sndent *e2 = container_of(e->node.next, struct tcp_sndent, node);
			if (e2->frag.addr.cls != MEM_CLASS_DEVICE && len - avail <= e2->frag.len) {
				tcp_xmit_piece(nb, 0, e, off, avail);
				tcp_xmit_piece(nb, 1, e2, 0, len - avail);
				pay[0] += len;
				s->snd_cursor = e2;
				return len;
			}
		}
	}

	struct list_node *it = sndq_at(s, seq);
	e = container_of(it, struct tcp_sndent, node);
	if (it != &s->sndq && SEQ_LEQ(e->seq, seq) && len <= e->seq + e->frag.len - seq &&
	    (e->frag.addr.cls != MEM_CLASS_DEVICE || !d || !d->tx_dev_bytes || len <= d->tx_dev_bytes)) {
		bool device = e->frag.addr.cls == MEM_CLASS_DEVICE; /* (read before the piece's stores) */
		tcp_xmit_piece(nb, 0, e, seq - e->seq, len);
		pay[0] += device ? 0 : len; /* (constant indices: pay stays in registers) */
		pay[1] += device ? len : 0;
		return len;
	}
	if (it != &s->sndq && it->next != &s->sndq && SEQ_LEQ(e->seq, seq) && e->frag.addr.cls != MEM_CLASS_DEVICE &&
	    container_of(it->next, struct tcp_sndent, node)->frag.addr.cls != MEM_CLASS_DEVICE &&
	    len - (e->seq + e->frag.len - seq) <= container_of(it->next, struct tcp_sndent, node)->frag.len) {
		struct tcp_sndent *e2 = container_of(it->next, struct tcp_sndent, node);
		uint32_t first = e->seq + e->frag.len - seq;
		tcp_xmit_piece(nb, 0, e, seq - e->seq, first);
		tcp_xmit_piece(nb, 1, e2, 0, len - first);
		pay[0] += len;
		return len;
	}
	struct tcp_gathered g = tcp_xmit_gather(s, nb, it, seq, len);
	pay[0] += g.pay[0];
	pay[1] += g.pay[1];
	return g.len;
}

/* tcp_xmit_payload_as for every frame but a short run's (tcp_output_short): two entries in
 * host memory only take the straight path (device memory there costs the long runs more
 * tests than it saves them). */
static inline __attribute__((always_inline)) uint32_t tcp_xmit_payload(struct tcp_sock *s, struct netbuf *nb,
								     uint32_t seq, uint32_t len, uint32_t *pay)
{
	return tcp_xmit_payload_as(s, nb, seq, len, pay, false);
}

/* Data the device refused for want of transmit ring room (tcp_xmit, rc -ENOBUFS): not sent,
 * sent again later. segs: the segments it counted. Out of line: rare. */
static __attribute__((noinline)) void tcp_xmit_refused(struct tcp_sock *s, uint8_t flags, uint32_t segs, bool tso)
{
	tcp_counters.tx_refused++;
	s->segs_out -= segs;
	tcp_counters.segs_out -= segs;
	if (tso)
		tcp_counters.tso_frames--; /* counted again when it goes */
	if ((flags & TCP_ACK) && !s->ack_delayed) {
		s->ack_delayed = true; /* not at once: the ring has no room for it either */
		s->ack_due_ns = clock_now_ns() + TCP_DELACK_NS;
		if (!s->t_delack.armed) /* (else due sooner: it re-arms itself, tcp.c delack_timer) */
			timer_arm(&timer_default_queue, &s->t_delack, s->ack_due_ns);
	}
	if (!s->t_rexmit.armed) /* nothing in flight: the backstop if no turn comes */
		timer_arm(&timer_default_queue, &s->t_rexmit, clock_now_ns() + TCP_TX_RETRY_NS);
	if (net_if0.dev && net_if0.dev->tx_stopped)
		tcp_txwait_join(s);
}

/* No netbuf for a segment: the pool is empty (other users hold it, or a device keeps
 * completed frames' netbufs until its poll; the e1000e parks at most E1000E_TX_PARKED_MAX
 * since the stall below, when its poll gave them back only after the receive batch whose
 * ACKs call tcp_output). Nothing went out and, had the ACKs of everything in flight come
 * already, nothing would call tcp_output again: the connection sat with its send queue full and nothing in flight until the peer
 * gave up (a 128 KiB read job stalled 17 s: the host's I/O timeout, then its reconnect).
 * Like a refusal by the device: data and a FIN go again after TCP_TX_RETRY_NS (the
 * retransmission timer, which only sends when nothing is in flight), or at the next ACK;
 * an ACK it carried is owed (delayed ACK). Returns -ENOBUFS. Out of line: rare. */
static __attribute__((noinline)) int tcp_xmit_nobuf(struct tcp_sock *s, uint32_t len, uint8_t flags)
{
	net_counters.ip_tx_nobuf++;
	tcp_counters.tx_nobuf++;
	if ((flags & TCP_ACK) && !s->ack_delayed) {
		s->ack_delayed = true;
		s->ack_due_ns = clock_now_ns() + TCP_DELACK_NS;
		if (!s->t_delack.armed)
			timer_arm(&timer_default_queue, &s->t_delack, s->ack_due_ns);
	}
	if ((len || (flags & (TCP_SYN | TCP_FIN))) && !s->t_rexmit.armed)
		timer_arm(&timer_default_queue, &s->t_rexmit, clock_now_ns() + TCP_TX_RETRY_NS);
	return -ENOBUFS;
}

/* A data segment's WINDOW field, scaled: tcp_advertise's first test made here, as every
 * segment of a pass but the first takes the field the first one computed (adv_fresh is
 * only ever set inside a pass). */
static inline __attribute__((always_inline)) uint32_t tcp_window_field(struct tcp_sock *s)
{
	if (s->adv_fresh)
		return s->adv_field;
	uint32_t win = tcp_advertise(s, false) >> s->rcv_wscale;
	if (win > 0xffff)
		win = 0xffff;
	s->adv_field = (uint16_t)win;
	return win;
}

/* Build and send one segment: [seq, seq + len) from the send queue, with flags. A data
 * segment longer than the MSS goes to the device as one TSO frame (tcp_frame_max). The
 * common frame (no options, its payload within one send entry, checksum offload) takes
 * the straight path; options, a gather over several entries, a refusal are out of line. */
static int tcp_xmit(struct tcp_sock *s, uint32_t seq, uint32_t len, uint8_t flags)
{
	struct netbuf *nb = netbuf_alloc(NETBUF_HEADROOM);
	struct tcp_hdr *th;
	uint8_t opts[TCP_OPT_SPACE];
	size_t optlen = 0, hlen;
	bool sack_short = false, tso;
	uint32_t win, segs = 1;
	uint32_t pay[2] = { 0, 0 }; /* payload by memory class (host, device), counted once the device took it */
	int rc;

	if (!nb)
		return tcp_xmit_nobuf(s, len, flags);
	if ((flags & TCP_SYN) ||
	    ((flags & (TCP_ACK | TCP_RST)) == TCP_ACK && s->sack_ok && (s->dsack || !list_empty(&s->ooo))))
		optlen = tcp_xmit_opts(s, seq, len, flags, opts, &sack_short);
	hlen = sizeof(*th) + optlen;
	th = netbuf_put(nb, hlen);
	if (optlen)
		memcpy((uint8_t *)th + sizeof(*th), opts, optlen);
	if (len) {
		uint32_t n = tcp_xmit_payload(s, nb, seq, len, pay);
		if (n < len) {
			len = n;
			flags &= (uint8_t)~(TCP_FIN | TCP_PSH);
		}
	}
	if (flags & TCP_SYN) {
		win = tcp_advertise(s, true);
		if (!(flags & TCP_ACK))
			s->syn_wnd = win;
	} else {
		win = tcp_window_field(s);
	}
	if (win > 0xffff)
		win = 0xffff;
	if (!s->tx_tmpl) {
		s->tx_ports = (uint32_t)s->lport << 16 | s->rport;
		s->tx_psum = net_csum_pseudo(s->laddr, s->raddr, IP_PROTO_TCP, 0);
		s->tx_tmpl = true;
	}
	be32_store(th, s->tx_ports); /* SRC.PORT, DST.PORT */
	th->seq = be32_make(seq);
	th->ack = be32_make((flags & TCP_ACK) ? s->rcv_nxt : 0);
	th->data_offset = (uint8_t)((hlen / 4) << 4);
	th->flags = flags;
	th->window = be16_make((uint16_t)win);
	th->urgent = be16_make(0);
	/* TSO: no options beside a payload over the MSS (see above), so every segment the
	 * device cuts carries exactly MSS bytes; the checksum field holds the pseudo-header sum
	 * without the length, which the device adds per segment (netdev.h). */
	tso = len > s->mss && !(flags & (TCP_SYN | TCP_RST)) && optlen == 0;
	if (net_if0.dev && (net_if0.dev->features & NETDEV_F_TX_CSUM)) {
		/* net_l4_csum_tx's offload case from the kept pseudo-header sum: the length (none
		 * for TSO) added and folded once (both are at most 0xffff, the sum never 0) */
		uint32_t sum = s->tx_psum + (tso ? 0 : (uint32_t)(hlen + len));
		be16_store(&th->checksum, (uint16_t)((sum & 0xffff) + (sum >> 16)));
		nb->flags |= NETBUF_TX_CSUM_PARTIAL;
		nb->csum_start = 0;
		nb->csum_offset = offsetof(struct tcp_hdr, checksum);
	} else if ((rc = net_l4_csum_tx_sw(nb, s->laddr, s->raddr, IP_PROTO_TCP, hlen + len,
					   offsetof(struct tcp_hdr, checksum)))) {
		netbuf_free(nb);
		return rc;
	}
	if (tso) {
		nb->flags |= NETBUF_TX_TSO;
		nb->gso_size = (uint16_t)s->mss;
		segs = (len + s->mss - 1) / s->mss;
		tcp_counters.tso_frames++;
	}
	if (sack_short) {
		s->ack_now = true; /* the blocks did not fit beside the payload */
	} else if (flags & TCP_ACK) {
		ack_went(s); /* (a held answer too: tcp_ack_hold) */
		/* t_delack stays armed: the next delayed ACK takes it as it is, and when it fires
		 * with nothing owed it does nothing (tcp.c delack_timer). A cancel and an arm per
		 * ACK cost ~50 instructions. */
	}
	s->segs_out += segs;
	tcp_counters.segs_out += segs;
	if (flags & TCP_RST)
		tcp_counters.resets_out++;
	/* A frame lost here (no route, ARP queue full) is like one lost on the wire: the
	 * retransmission timer covers it. But data the device refused for want of room in
	 * its transmit ring did not go out, and a burst larger than the ring is the usual
	 * case (e1000e: 256 descriptors, 2-4 per frame from the CMB; a 64-segment
	 * tcp_output pass): counted as sent it became a hole, recovered by fast retransmit
	 * or a 200 ms timeout with cwnd back to one segment (measured 2026-11-28: 7 holes
	 * and 2 timeouts in 10 s of 128 KiB reads). So -ENOBUFS for data returns the error:
	 * tcp_output stops there and sends the rest when the next ACK comes (the refused
	 * frames' predecessors are in flight), or, with nothing in flight, after
	 * TCP_TX_RETRY_NS (the retransmission timer, which then only sends: nothing was
	 * lost); the ACK this frame carried is owed (delayed ACK). */
	/* Now, when the device says its ring is full (netdev_tx_stop), s waits on tcp_txwait
	 * for its turn, which comes when the device has room again (tcp_tx_poll); the next ACK
	 * no longer retries, and the timer stays as a backstop. Other refusals (the netbuf pool,
	 * ARP's queue for an unresolved peer) are retried as before: a turn in every pass would
	 * spin on them. */
	rc = ipv4_output_route(nb, hlen + len, &s->route, s->laddr, s->raddr, IP_PROTO_TCP);
	if (rc == -ENOBUFS && len && !(flags & (TCP_SYN | TCP_FIN | TCP_RST))) {
		tcp_xmit_refused(s, flags, segs, tso);
		return rc;
	}
	tcp_counters.tx_payload_host += pay[0];
	tcp_counters.tx_payload_device += pay[1];
	return (int)len;
}

/* Can this tcp_output pass's data frames take tcp_xmit_fast? The device offloads the
 * checksum, the header's fixed part was computed (tx_tmpl), the route was built for this
 * connection, an MSS frame fits the MTU and no SACK blocks are owed (no options). Asked
 * once a pass: none of this changes while the pass sends (the route's freshness, which a
 * refused or slow frame may renew, is asked per frame). */
static inline __attribute__((always_inline)) bool tcp_pass_fast(const struct tcp_sock *s, const struct netdev *dev)
{
	return dev && (dev->features & NETDEV_F_TX_CSUM) && s->tx_tmpl && s->route.dst == s->raddr &&
	       s->route.src == s->laddr && s->route.proto == IP_PROTO_TCP && s->mss + 40u <= dev->mtu &&
	       !(s->sack_ok && (s->dsack || !list_empty(&s->ooo)));
}

_Static_assert(NETBUF_HEADROOM >= sizeof(((struct net_route *)0)->hdr), "tcp_xmit_fast: room for the route's headers");

/* The counters of a run's frames (tcp_output_run), added once when it ends
 * (tcp_run_count): the segments the device took and their payload bytes by memory class
 * (host, device). */
struct tcp_run_sums {
	uint32_t segs;
	uint32_t pay[2];
};

/* The frame headers tcp_xmit_fast puts in the host part: Ethernet, IPv4, TCP, no options. */
#define TCP_RUN_HDR_BYTES (ETH_HLEN + IPV4_HLEN_MIN + TCP_HLEN_MIN)

/* What netdev_tx, ipv4_route_send and tcp_xmit_fast count for each frame of a run, for its
 * sums, once: the socket's and TCP's segments and payload, IPv4's and Ethernet's frames, the
 * device's frames, bytes (host part and fragments by class) and checksum offloads. */
static inline __attribute__((always_inline)) void tcp_run_count(struct tcp_sock *s, struct netdev *dev,
								 const struct tcp_run_sums *r)
{
	s->segs_out += r->segs;
	tcp_counters.segs_out += r->segs;
	tcp_counters.tx_payload_host += r->pay[0];
	tcp_counters.tx_payload_device += r->pay[1];
	net_counters.ip_tx += r->segs;
	net_counters.eth_tx += r->segs;
	netdev_tx_count_burst(dev, r->segs, (uint64_t)r->segs * TCP_RUN_HDR_BYTES + r->pay[0], r->pay[1], r->segs);
}

/* tcp_xmit_fast's answer for a frame handed to the route (rc its answer): a refusal of data
 * (-ENOBUFS) waits as tcp_xmit_refused says; anything else counts its payload as sent (a
 * frame lost on the wire is recovered as one). Returns rc or len. */
static inline __attribute__((always_inline)) int tcp_xmit_answer(struct tcp_sock *s, int rc, uint32_t len,
								  uint8_t flags, const uint32_t *pay)
{
	if (rc == -ENOBUFS && len && !(flags & TCP_FIN)) {
		tcp_xmit_refused(s, flags, 1, false);
		return rc;
	}
	tcp_counters.tx_payload_host += pay[0];
	tcp_counters.tx_payload_device += pay[1];
	return (int)len;
}

/* A run's frame the device did not take (netdev_tx_burst_one counted the device's part):
 * what tcp_xmit_fast and ipv4_route_send count for it, and their answer: the netbuf freed,
 * a refusal of data (-ENOBUFS) waiting as tcp_xmit_refused says, any other error a frame
 * lost on the wire (sent, its payload counted). Consumes nb. Out of line: rare. */
static __attribute__((noinline)) int tcp_run_refused(struct tcp_sock *s, struct netbuf *nb, int rc, uint32_t len,
						    uint8_t flags, uint32_t host, uint32_t device)
{
	netbuf_free(nb);
	net_counters.ip_tx++;
	s->segs_out++;
	tcp_counters.segs_out++;
	const uint32_t pay[2] = { host, device }; /* (by value: the caller's stay in registers) */
	return tcp_xmit_answer(s, rc, len, flags, pay);
}

/* tcp_xmit for a data frame of a pass that tcp_pass_fast allowed, with flags TCP_ACK (and
 * PSH, FIN), len at most the MSS (no TSO) and s's route fresh: the same frame, counters and
 * answer, with what the pass settled left out (options, SYN and RST, the software checksum,
 * the route's tests: the IPv4 and Ethernet headers go straight from the route's template,
 * ipv4_route_send). Inline into tcp_output_work: ~60 instructions a frame less. (A run's
 * frames take tcp_run_xmit.) */
static inline __attribute__((always_inline)) int tcp_xmit_fast(struct tcp_sock *s, struct netdev *dev, uint32_t seq,
							      uint32_t len, uint8_t flags)
{
	/* (a new netbuf: no fragments; the route's headers in front of NETBUF_HEADROOM, TCP's
	 * behind it) */
	struct netbuf *nb = netbuf_alloc_tx_span(sizeof(s->route.hdr), offsetof(struct tcp_hdr, checksum),
						 sizeof(s->route.hdr), sizeof(struct tcp_hdr));
	uint32_t pay[2] = { 0, 0 };
	struct tcp_hdr *th;
	uint32_t win, sum;
	uint8_t *h;
	int rc;

	if (!nb)
		return tcp_xmit_nobuf(s, len, flags);
	h = nb->data;
	th = (struct tcp_hdr *)(h + sizeof(s->route.hdr));
	if (len) {
		uint32_t n = tcp_xmit_payload(s, nb, seq, len, pay);
		if (n < len) {
			len = n;
			flags &= (uint8_t)~(TCP_FIN | TCP_PSH);
		}
	}
	win = tcp_window_field(s);
	be32_store(th, s->tx_ports); /* SRC.PORT, DST.PORT */
	th->seq = be32_make(seq);
	th->ack = be32_make(s->rcv_nxt);
	th->data_offset = (uint8_t)((sizeof(*th) / 4) << 4);
	th->flags = flags;
	th->window = be16_make((uint16_t)win);
	th->urgent = be16_make(0);
	sum = s->tx_psum + (uint32_t)sizeof(*th) + len; /* (tcp_xmit's offload case) */
	be16_store(&th->checksum, (uint16_t)((sum & 0xffff) + (sum >> 16)));
	ack_went(s); /* (flags has TCP_ACK: tcp_xmit's bookkeeping) */
	s->segs_out++;
	tcp_counters.segs_out++;
	rc = ipv4_route_send_inl(dev, nb, &s->route, h, sizeof(*th) + len, ipv4_ident++);
	return tcp_xmit_answer(s, rc, len, flags, pay);
}

/* A control segment (no data) at seq. */
int tcp_send_ctl(struct tcp_sock *s, uint32_t seq, uint8_t flags)
{
	return tcp_xmit(s, seq, 0, flags);
}

/* A pure ACK now: tcp_xmit_fast's frame when tcp_pass_fast allows it and the route is
 * fresh (the same frame, counters and bookkeeping as tcp_xmit's without options: no SACK
 * blocks are owed then), tcp_xmit's otherwise. */
void tcp_send_ack_now(struct tcp_sock *s)
{
	struct netdev *dev = net_if0.dev;

	if (tcp_pass_fast(s, dev) && s->route.gen == net_if0.route_gen) {
		tcp_xmit_fast(s, dev, s->snd_nxt, 0, TCP_ACK);
		return;
	}
	tcp_xmit(s, s->snd_nxt, 0, TCP_ACK);
}

/* RFC 5961 section 3.2/4.2/5.2 challenge ACK, rate limited per socket (section 7) to a
 * limit drawn at random for each one-second window, between half and one and a half
 * times TCP_CHALLENGE_ACKS_PER_SEC. One global counter (what section 7 suggests) lets an
 * off-path host learn, from how many challenge ACKs its own connection gets, whether
 * its guesses hit another connection (CVE-2016-5696); per socket and randomised, the
 * count says nothing about other connections nor, exactly, about this one. */
void tcp_send_challenge_ack(struct tcp_sock *s)
{
	uint64_t now = clock_now_ns();

	if (!s->chack_limit || now - s->chack_start_ns >= NSEC_PER_SEC) {
		s->chack_start_ns = now;
		s->chack_sent = 0;
		s->chack_limit = TCP_CHALLENGE_ACKS_PER_SEC / 2 + tcp_random_u32() % (TCP_CHALLENGE_ACKS_PER_SEC + 1);
	}
	if (s->chack_sent >= s->chack_limit) {
		tcp_counters.challenge_acks_limited++;
		return;
	}
	s->chack_sent++;
	tcp_counters.challenge_acks++;
	tcp_send_ack_now(s);
}

/* A reset for a segment that has no connection (RFC 9293 3.10.7.1). */
void tcp_send_reset(uint32_t laddr, uint32_t raddr, uint16_t lport, uint16_t rport, uint32_t seq, uint32_t ack,
		    uint8_t flags)
{
	struct tcp_sock tmp;

	memset(&tmp, 0, sizeof(tmp));
	tmp.laddr = laddr;
	tmp.raddr = raddr;
	tmp.lport = lport;
	tmp.rport = rport;
	tmp.rcv_nxt = ack;
	tmp.mss = TCP_MSS_DEFAULT;
	list_init(&tmp.sndq);
	timer_init(&tmp.t_delack, "tcp-delack", NULL, NULL);
	tcp_xmit(&tmp, seq, 0, flags);
}

void tcp_arm_rexmit(struct tcp_sock *s)
{
	timer_arm(&timer_default_queue, &s->t_rexmit, clock_now_ns() + s->rto_ns);
}

/* Bytes of FIN-free data not yet sent. */
static uint32_t unsent(const struct tcp_sock *s)
{
	return SEQ_LT(s->snd_nxt, s->snd_end) ? s->snd_end - s->snd_nxt : 0;
}

void tcp_output_hold(struct tcp_sock *s)
{
	if (list_empty(&s->held_node))
		list_add_tail(&tcp_held, &s->held_node);
}

/* The state of a run (tcp_output_run) between its frames: the next frame's sequence
 * number, room and unsent bytes after it, the end of what it may send, its sums, its
 * answer. */
struct tcp_run {
	uint32_t seq, room, pending, end;
	struct tcp_run_sums sums;
	int ret;
	/* The run's own send-queue cursor (tcp_run_payload): the host-memory entry e holds the
	 * next frame's first byte at off, left bytes from there to its end (0: not known). */
	struct tcp_sndent *e;
	uint32_t off, left;
	bool stale; /* s->snd_cursor moved since e was taken from it */
	/* The frame train being built (tcp_run_train_add; NULL: none), for a device with
	 * NETDEV_F_TX_TRAIN (train): its first frame's sequence number (its frames are the
	 * run's bytes from there to seq). */
	struct netbuf *nb;
	uint32_t t_seq;
	unsigned t_max; /* frames a train carries (dev->tx_train_max) */
	bool train;
	bool t_dev; /* the train's payload is in device memory (a train's is of one class) */
	struct tcp_sndent *t_e; /* the entry of its last piece, on which it holds a reference */
};

_Static_assert(sizeof(((struct tcp_sock *)0)->tx_hdr) == TCP_RUN_HDR_BYTES, "tcp_run_first: the socket's template");

/* The IPv4 total length and TCP checksum field (offload: the pseudo-header sum with the
 * length) of a frame carrying len payload bytes, and the route's IPv4 sum plus that total. */
static inline __attribute__((always_inline)) uint32_t tcp_run_len_fields(const struct tcp_sock *s, uint8_t *h,
									 uint32_t len)
{
	uint16_t total = (uint16_t)(IPV4_HLEN_MIN + TCP_HLEN_MIN + len);
	uint32_t sum = s->tx_psum + (uint32_t)TCP_HLEN_MIN + len;

	be16_store(h + ETH_HLEN + offsetof(struct ipv4_hdr, total_length), total);
	be16_store(h + ETH_HLEN + IPV4_HLEN_MIN + offsetof(struct tcp_hdr, checksum),
		   (uint16_t)((sum & 0xffff) + (sum >> 16)));
	return s->route.ip_sum + total;
}

/* s's run template (tx_hdr, struct tcp_sock) built for its route and MSS: the route's
 * headers with an MSS frame's total length, TCP with the ports, ACK alone, a data offset of
 * five words and the checksum field's pseudo-header sum (offload: the device adds the rest);
 * SEG.SEQ, SEG.ACK, WINDOW, the identification and the IPv4 checksum zero (each run's first
 * frame stores SEG.ACK and WINDOW, each frame the others). Out of line: once per connection
 * and route generation. */
static __attribute__((noinline)) void tcp_run_tmpl(struct tcp_sock *s)
{
	uint8_t *t = s->tx_hdr;
	struct tcp_hdr *th = (struct tcp_hdr *)(t + sizeof(s->route.hdr));

	memset(t, 0, sizeof(s->tx_hdr));
	memcpy(t, s->route.hdr, sizeof(s->route.hdr)); /* (total length, identification, checksum zero) */
	be32_store(th, s->tx_ports); /* SRC.PORT, DST.PORT */
	th->data_offset = (uint8_t)((sizeof(*th) / 4) << 4);
	th->flags = TCP_ACK;
	s->tx_hdr_ipbase = tcp_run_len_fields(s, t, s->mss);
	s->tx_hdr_gen = s->route.gen;
	s->tx_hdr_mss = s->mss;
}

/* A run's first frame (tcp_run_xmit, clear): s's run template (tcp_run_tmpl, rebuilt when
 * its route or MSS is not the one it was built for) takes the window the pass advertises
 * (tcp_window_field: the first frame of a pass computes it, the others take it) and SEG.ACK
 * (RCV.NXT), neither of which changes while the pass sends (nothing it calls receives); the
 * frame and the run's later ones are copies of it patched per frame. Kept across passes
 * (valid for one route generation): the first frame no longer writes its headers field by
 * field and the route's part apart (~40 instructions a pass). */
static inline __attribute__((always_inline)) void tcp_run_first(struct tcp_sock *s)
{
	struct tcp_hdr *th = (struct tcp_hdr *)(s->tx_hdr + sizeof(s->route.hdr));
	uint32_t win = tcp_window_field(s);

	if (__builtin_expect(s->tx_hdr_gen != s->route.gen || s->tx_hdr_mss != s->mss, 0))
		tcp_run_tmpl(s);
	th->ack = be32_make(s->rcv_nxt);
	th->window = be16_make((uint16_t)win);
}

/* The run's own send-queue cursor (r->e, r->off, r->left) for a frame of len bytes at
 * r->seq: taken from the socket's (s->snd_cursor, at or before the next byte) when the frame
 * needs it after tcp_xmit_payload may have moved that one (stale), and only when two frames
 * or more may use it. It stays valid while the run sends: nothing the run calls
 * acknowledges, frees, appends or cuts entries (an entry at or after SND.NXT is not
 * acknowledged, so no completion frees it), and s->snd_cursor stays on the entry it holds,
 * at or before the next byte, for tcp_xmit_payload and later passes. */
/* May a long run's cursor hold e, an entry in device memory? Only in a train run whose full
 * segments are one device piece the device takes (tx_dev_bytes, netdev.h: a train is never
 * copied through DRAM), and not while a train of host-memory payload is being built (a
 * train's payload is of one class, r->t_dev; host_train): e's first frame then goes alone
 * after that train (tcp_run_frame) and the next frame takes e. Out of line: once a device
 * entry (values, not the run: the run stays in registers). */
static __attribute__((noinline)) bool tcp_run_dev_ok(const struct tcp_sock *s, bool train, bool host_train)
{
	const struct netdev *d = net_if0.dev;
	return train && !host_train && d && (!d->tx_dev_bytes || s->mss <= d->tx_dev_bytes);
}

static inline __attribute__((always_inline)) void tcp_run_cursor(struct tcp_sock *s, struct tcp_run *r, uint32_t len)
{
	if (__builtin_expect(len > r->left, 0) && r->stale && r->room > 2 * len) {
		/* (taken only when it can serve two frames or more: a 4 KiB read's second
		 * frame would pay more for it than it saves) */
		struct tcp_sndent *e = s->snd_cursor;
		uint32_t seq = r->seq;
		r->stale = false;
		if (e && SEQ_LEQ(e->seq, seq) && seq - e->seq < e->frag.len &&
		    (e->frag.addr.cls != MEM_CLASS_DEVICE || tcp_run_dev_ok(s, r->train, r->nb && !r->t_dev))) {
			r->e = e;
			r->off = seq - e->seq;
			r->left = e->frag.len - r->off;
		}
	}
}

/* tcp_xmit_payload for a long run's frame of len bytes at r->seq (tcp_output_run): within
 * the entry the run's cursor holds (tcp_run_cursor; host memory: one piece, no gather
 * limit), the piece straight from it, as tcp_xmit_payload's first case makes it; otherwise
 * tcp_xmit_payload. (A device-memory entry is the cursor's only in a train run, whose
 * frames within it go to the train, tcp_run_frame: here len is then past r->left, as the
 * cursor was taken, or looked at and left, by tcp_run_frame just before.) Returns the
 * bytes gathered. */
static inline __attribute__((always_inline)) uint32_t tcp_run_payload(struct tcp_sock *s, struct tcp_run *r,
								      struct netbuf *nb, uint32_t len, uint32_t *pay)
{
	tcp_run_cursor(s, r, len);
	if (__builtin_expect(len <= r->left, 1)) {
		tcp_xmit_piece(nb, 0, r->e, r->off, len);
		pay[0] += len;
		r->off += len;
		r->left -= len;
		return len;
	}
	r->left = 0;
	r->stale = true;
	return tcp_xmit_payload(s, nb, r->seq, len, pay);
}

/* tcp_run_xmit's frames of a short run (tcp_output_short): its first, the others. */
#define TCP_SHORT_FIRST 1u
#define TCP_SHORT_NEXT 2u

/* The entry a short run starts in (tcp_short_head, tcp_short_lay), when the run has their
 * shape: a PDU header's entry at SND.NXT, then its data's, then perhaps a response's, the
 * last (the run is all that is unsent, up to SND.END): the entry before the data's is the
 * third or the second from the queue's end. Found from the end, not from the socket's cursor
 * (at or before SND.NXT): under queue depth the cursor was dropped with an acknowledged
 * entry, or stays on the last run's response, and the queue's head is an older PDU still
 * unacknowledged. Otherwise any entry (the callers test that it starts at SND.NXT and has
 * one after it). */
static inline __attribute__((always_inline)) struct tcp_sndent *tcp_short_entry(const struct tcp_sock *s)
{
	const struct list_node *n = s->sndq.prev->prev, *m; /* (tcp_flush: the queue is not empty) */

	if (n == &s->sndq)
		return container_of(s->sndq.next, struct tcp_sndent, node); /* (one entry) */
	m = n->prev; /* (with a response: the header's, the third from the end) */
	if (m != &s->sndq && container_of(m, struct tcp_sndent, node)->seq == s->snd_nxt)
		return container_of(m, struct tcp_sndent, node);
	return container_of(n, struct tcp_sndent, node);
}

/* tcp_output_short's first frame's payload (tcp_run_xmit, TCP_SHORT_FIRST): a PDU header its entry
 * holds itself (TCP_SNDENT_INLINE: a C2HData header), whole at SND.NXT, is copied behind the
 * TCP header (tcp_xmit_copy_inline) and the rest of the frame is one piece of the next
 * entry, its data, in host memory or in device memory the device gathers in place (within
 * tx_dev_bytes: one device piece, as tcp_seg_cut's rules take it), the cursor moved to it;
 * anything else takes tcp_xmit_payload_as (device memory in its two-entry path). Returns
 * the bytes gathered; pay[] += them by memory class. */
static inline __attribute__((always_inline)) uint32_t tcp_short_head(struct tcp_sock *s, struct netbuf *nb,
								     uint32_t len, uint32_t *pay)
{
	const struct netdev *d = net_if0.dev;
	struct tcp_sndent *e = tcp_short_entry(s);
	uint32_t seq = s->snd_nxt;

	if (e->seq != seq || e->cap != TCP_SNDENT_INLINE || e->frag.len >= len || e->node.next == &s->sndq)
		return tcp_xmit_payload_as(s, nb, seq, len, pay, true);
	struct tcp_sndent *e2 = container_of(e->node.next, struct tcp_sndent, node);
	uint32_t head = e->frag.len, rest = len - head;
	bool dev2 = e2->frag.addr.cls == MEM_CLASS_DEVICE;
	if (rest > e2->frag.len || (dev2 && d->tx_dev_bytes && rest > d->tx_dev_bytes))
		return tcp_xmit_payload_as(s, nb, seq, len, pay, true);
	tcp_xmit_copy_inline(nb, e, head);
	tcp_xmit_piece(nb, 0, e2, 0, rest);
	pay[0] += dev2 ? head : len;
	pay[1] += dev2 ? rest : 0;
	s->snd_cursor = e2;
	return len;
}

/* tcp_xmit_fast for a frame of a run (tcp_run_frame): the same frame, counters and answer,
 * its headers a copy of the run's template (tcp_run_tmpl; the first frame builds it)
 * patched with SEG.SEQ, the identification and the IPv4 header checksum, and, for a frame
 * other than a full segment with ACK alone (the run's last, PSH; one cut to the device's
 * gather limits), its flags, total length and TCP checksum field: ~30 instructions a frame
 * less than the field-by-field headers. Its payload: through the run's cursor (cursor), or
 * for a short run's frames (short_run: TCP_SHORT_FIRST, TCP_SHORT_NEXT) tcp_short_head's
 * and tcp_xmit_payload_as's with device memory in its two-entry path, or tcp_xmit_payload's. */
static inline __attribute__((always_inline)) int tcp_run_xmit(struct tcp_sock *s, struct netdev *dev,
							     struct tcp_run *r, uint32_t len, uint8_t flags, bool clear,
							     bool cursor, unsigned short_run)
{
	/* (a new netbuf: no fragments; the route's headers in front of NETBUF_HEADROOM, TCP's
	 * behind it) */
	struct netbuf *nb = netbuf_alloc_tx_span(sizeof(s->route.hdr), offsetof(struct tcp_hdr, checksum),
						 sizeof(s->route.hdr), TCP_HLEN_MIN);
	uint32_t pay[2] = { 0, 0 }, base;
	uint16_t ident;
	uint8_t *h;
	int rc;

	if (!nb)
		return tcp_xmit_nobuf(s, len, flags);
	h = nb->data;
	bool full = flags == TCP_ACK; /* (a full segment: tcp_run_frame's frames but the last, PSH) */
	if (len) {
		uint32_t n = cursor ? tcp_run_payload(s, r, nb, len, pay)
			     : short_run == TCP_SHORT_FIRST ? tcp_short_head(s, nb, len, pay)
						       : tcp_xmit_payload_as(s, nb, r->seq, len, pay, short_run != 0);
		if (n < len) {
			len = n;
			flags &= (uint8_t)~(TCP_FIN | TCP_PSH);
			full = false;
		}
	}
	if (clear) {
		tcp_run_first(s);
		ack_went(s); /* (flags has TCP_ACK: tcp_xmit's bookkeeping) */
	}
	memcpy(h, s->tx_hdr, TCP_RUN_HDR_BYTES);
	be32_store(h + ETH_HLEN + IPV4_HLEN_MIN + offsetof(struct tcp_hdr, seq), r->seq);
	base = s->tx_hdr_ipbase;
	if (__builtin_expect(!full, 0)) {
		h[ETH_HLEN + IPV4_HLEN_MIN + offsetof(struct tcp_hdr, flags)] = flags;
		base = tcp_run_len_fields(s, h, len);
	}
	ident = ipv4_ident++;
	be16_store(h + ETH_HLEN + offsetof(struct ipv4_hdr, identification), ident);
	be16_store(h + ETH_HLEN + offsetof(struct ipv4_hdr, header_checksum), (uint16_t)~net_csum_fold(base + ident));
	if (__builtin_expect(nb->nfrags <= 2, 1)) { /* (the link is up: the run's first frame asked) */
		/* netdev_tx's common case, every counter in the run's sums (tcp_output_run) */
		if (__builtin_expect((rc = netdev_tx_burst_one(dev, nb)) != 0, 0))
			return tcp_run_refused(s, nb, rc, len, flags, pay[0], pay[1]);
		r->sums.segs++;
		r->sums.pay[0] += pay[0];
		r->sums.pay[1] += pay[1];
		return (int)len;
	}
	s->segs_out++;
	tcp_counters.segs_out++;
	net_counters.ip_tx++;
	if ((rc = netdev_tx(dev, nb)))
		netbuf_free(nb);
	else
		net_counters.eth_tx++;
	return tcp_xmit_answer(s, rc, len, flags, pay);
}

_Static_assert(NETBUF_MAX_FRAGS * TCP_RUN_HDR_BYTES + NETBUF_HEADROOM <= NETBUF_HOST_SIZE,
	       "tcp_run_train_add: a train's headers fit the host part");

/* The device refused a train of frames carrying bytes of payload (rc; it keeps nothing of
 * it, netdev.h): the netbuf freed; for want of ring room (-ENOBUFS) the caller takes the run
 * back to the train's first frame (SND.NXT goes there), which ends as after a refused frame
 * (tcp_xmit_refused: its ACK owed, the retry timer, the wait for ring room); another error
 * loses the frames as on the wire (counted sent, the retransmission timer recovers them).
 * Returns -1 (refused) or 0. Out of line: rare. */
static __attribute__((noinline)) int tcp_run_train_refused(struct tcp_sock *s, struct netbuf *nb, int rc,
							   uint32_t bytes, uint32_t dev_bytes)
{
	unsigned frames = nb->nfrags;

	netbuf_free(nb);
	net_counters.ip_tx++;
	if (rc == -ENOBUFS) {
		tcp_xmit_refused(s, TCP_ACK, 0, false);
		return -1;
	}
	net_counters.ip_tx += frames - 1;
	s->segs_out += frames;
	tcp_counters.segs_out += frames;
	tcp_counters.tx_payload_host += bytes - dev_bytes;
	tcp_counters.tx_payload_device += dev_bytes;
	return 0;
}

/* RTT timing for a train the device took, its frames [seq, end): as tcp_run_frame times a
 * frame, the first of them that is new data (SEQ >= the SND.MAX the pass began the run
 * with), when none is timed. Its frames are full segments but the last, so that frame
 * starts a whole number of MSS after the first. Out of line: once a round trip. */
static __attribute__((noinline)) void tcp_run_train_time(struct tcp_sock *s, uint32_t seq, uint32_t end)
{
	if (SEQ_LT(seq, s->snd_max))
		seq += (s->snd_max - seq + s->mss - 1) / s->mss * s->mss;
	if (SEQ_LT(seq, end)) {
		s->timing = true;
		s->rtt_seq = seq;
		s->rtt_start_ns = clock_now_ns();
	}
}

/* Hand r's train, its frames [r->t_seq, r->seq), to the device (netdev_tx_train): taken, its
 * frames and payload go to the run's sums and RTT timing may start (tcp_run_train_time);
 * refused (tcp_run_train_refused), for want of ring room the run goes back to the train's
 * first frame and ends (r->ret -1). Returns 0 or -1 (refused: the run ends). */
static inline __attribute__((always_inline)) int tcp_run_train_send(struct tcp_sock *s, struct netdev *dev,
								    struct tcp_run *r)
{
	struct netbuf *nb = r->nb;
	unsigned frames = nb->nfrags;
	uint32_t bytes = r->seq - r->t_seq;
	int rc;

	r->nb = NULL;
	if (__builtin_expect((rc = netdev_tx_train(dev, nb)) != 0, 0)) {
		if (!tcp_run_train_refused(s, nb, rc, bytes, r->t_dev ? bytes : 0))
			return 0;
		r->room += bytes;
		r->pending += bytes;
		r->seq = r->t_seq;
		r->ret = -1;
		return -1;
	}
	r->sums.segs += frames;
	r->sums.pay[0] += r->t_dev ? 0 : bytes; /* (constant indices: the sums stay in registers) */
	r->sums.pay[1] += r->t_dev ? bytes : 0;
	if (!s->timing)
		tcp_run_train_time(s, r->t_seq, r->seq);
	return 0;
}

/* A piece of entry e, from off, n bytes, as nb's next fragment, for a train that already
 * holds a reference on e (an earlier piece's, tcp_xmit_piece): no owner, so no reference of
 * its own. The train's fragments all go back at once (its one completion, netbuf_free), so
 * the first piece's reference keeps e for every piece of it: one release a train and entry
 * instead of one a frame. */
static inline __attribute__((always_inline)) void tcp_run_train_piece(struct netbuf *nb, const struct tcp_sndent *e,
								      uint32_t off, uint32_t n)
{
	struct netdev_frag *f = &nb->frags[nb->nfrags++];

	f->addr.bus = e->frag.addr.bus + off;
	f->addr.cls = e->frag.addr.cls;
	f->offset = e->frag.offset + off;
	f->len = n;
	f->provider = e->frag.provider;
	f->pad = e->frag.pad;
	f->token = 0;
	f->owner = NULL;
}

/* tcp_run_xmit for a frame of a long run whose payload is one piece of the run's cursor entry
 * (len <= r->left, host memory): the same headers (a copy of the run's template patched as
 * tcp_run_xmit patches it) and the same piece, put side by side with the frames before it in
 * r's train (netdev.h NETBUF_TX_TRAIN), which goes to the device (tcp_run_frame) when it
 * holds r->t_max frames (the device's tx_train_max), at the run's end, or before a frame
 * sent alone (the order on the wire is the run's). The frame's counters wait for the
 * train's (tcp_run_train_send), and so does the RTT timing it may start. Returns len, or
 * -ENOBUFS when no netbuf was free. */
static inline __attribute__((always_inline)) int tcp_run_train_add(struct tcp_sock *s, struct tcp_run *r,
								   uint32_t len, uint8_t flags)
{
	struct netbuf *nb = r->nb;
	uint32_t base;
	uint16_t ident;
	uint8_t *h;

	if (!nb) {
		nb = netbuf_alloc_tx_span(sizeof(s->route.hdr), offsetof(struct tcp_hdr, checksum),
					  sizeof(s->route.hdr), TCP_HLEN_MIN);
		if (!nb)
			return tcp_xmit_nobuf(s, len, flags);
		nb->flags = NETBUF_TX_CSUM_PARTIAL | NETBUF_TX_TRAIN;
		nb->hdr_len = TCP_RUN_HDR_BYTES;
		r->nb = nb;
		r->t_seq = r->seq;
		r->t_e = NULL;
		r->t_dev = r->e->frag.addr.cls == MEM_CLASS_DEVICE;
		h = nb->data;
	} else {
		h = nb->tail;
		nb->tail += TCP_RUN_HDR_BYTES;
	}
	if (__builtin_expect(r->e == r->t_e, 1))
		tcp_run_train_piece(nb, r->e, r->off, len);
	else
		tcp_xmit_piece(nb, nb->nfrags, r->t_e = r->e, r->off, len);
	r->off += len;
	r->left -= len;
	memcpy(h, s->tx_hdr, TCP_RUN_HDR_BYTES);
	be32_store(h + ETH_HLEN + IPV4_HLEN_MIN + offsetof(struct tcp_hdr, seq), r->seq);
	base = s->tx_hdr_ipbase;
	if (__builtin_expect(flags != TCP_ACK, 0)) {
		h[ETH_HLEN + IPV4_HLEN_MIN + offsetof(struct tcp_hdr, flags)] = flags;
		base = tcp_run_len_fields(s, h, len);
	}
	ident = ipv4_ident++;
	be16_store(h + ETH_HLEN + offsetof(struct ipv4_hdr, identification), ident);
	be16_store(h + ETH_HLEN + offsetof(struct ipv4_hdr, header_checksum), (uint16_t)~net_csum_fold(base + ident));
	return (int)len;
}

/* One frame of a run (clear: its first, a constant at each call, see tcp_output_run).
 * Returns true when the run goes on. */
static inline __attribute__((always_inline)) bool tcp_run_frame(struct tcp_sock *s, struct netdev *dev,
								 unsigned *budget, struct tcp_run *r, bool hold,
								 bool clear, bool cursor)
{
	uint32_t mss = s->mss, len = mss;
	uint8_t flags = TCP_ACK;

	if (!*budget || !r->room || (clear && (s->route.gen != net_if0.route_gen || !dev->link_up)))
		return false; /* (the route and the link: once a run, see tcp_output_run) */
	if (r->room <= mss) {
		if (r->room != r->pending || hold || s->fin_queued)
			return false; /* the loop's: SWS avoidance, hold, FIN */
		len = r->room;
		flags = TCP_ACK | TCP_PSH;
	}
	(*budget)--;
	int n;
	if (cursor && r->train)
		tcp_run_cursor(s, r, len);
	if (cursor && r->train && len <= r->left) {
		/* a frame of the train (its RTT timing with the train's, tcp_run_train_send) */
		if ((n = tcp_run_train_add(s, r, len, flags)) < 0) {
			r->ret = -1;
			return false;
		}
	} else {
		if (cursor && r->nb && tcp_run_train_send(s, dev, r))
			return false; /* (the frames before this one first) */
		n = tcp_run_xmit(s, dev, r, len, flags, clear, cursor, 0);
		if (n < 0) {
			r->ret = -1;
			return false;
		}
		uint64_t now = 0; /* (one clock reading for both: the timing's start and the timer's) */
		if (!s->timing && n > 0 && SEQ_GEQ(r->seq, s->snd_max)) {
			s->timing = true;
			s->rtt_seq = r->seq;
			s->rtt_start_ns = now = clock_now_ns();
		}
		if (clear && (!s->t_rexmit.armed || s->persist)) {
			/* the pass's first frame: the loop's timer bookkeeping after it */
			s->persist = false;
			timer_arm(&timer_default_queue, &s->t_rexmit, (now ? now : clock_now_ns()) + s->rto_ns);
		}
	}
	r->seq += (uint32_t)n;
	if ((uint32_t)n < len)
		return false; /* cut: the loop sends the rest */
	r->room -= len;
	r->pending -= len;
	if (cursor && r->nb && r->nb->nfrags == r->t_max && tcp_run_train_send(s, dev, r))
		return false; /* (a full train goes; refused, the run ends before it) */
	if (!r->room) {
		r->ret = r->seq == r->end && !r->pending;
		return false;
	}
	return true;
}

/* The frames of a long run after its first (tcp_output_run): through the run's own
 * send-queue cursor and, for a device with NETDEV_F_TX_TRAIN, in trains of up to its
 * tx_train_max frames (tcp_run_train_add), the last train sent when the run ends. Out of
 * line: once a long run, and the short runs' path (a 4 KiB read's) keeps its registers. */
static __attribute__((noinline)) void tcp_output_run_long(struct tcp_sock *s, struct netdev *dev, unsigned *budget,
							  struct tcp_run *run, bool hold)
{
	struct tcp_run r = *run; /* (in registers: its address goes nowhere) */
	unsigned left = *budget;

	r.e = NULL; /* (read only while left is not 0) */
	r.off = r.left = 0;
	r.stale = true;
	r.nb = NULL;
	r.train = (dev->features & NETDEV_F_TX_TRAIN) && dev->tx_train_max;
	r.t_max = dev->tx_train_max < NETBUF_MAX_FRAGS ? dev->tx_train_max : NETBUF_MAX_FRAGS;
	while (tcp_run_frame(s, dev, &left, &r, hold, false, true))
		;
	if (r.nb) /* the last train (refused: r.ret -1) */
		tcp_run_train_send(s, dev, &r);
	*budget = left;
	*run = r;
}

/* A tcp_output_work pass's frames while the loop's decisions are fixed ones, from the
 * pass's first frame on or after any frame the loop sent, without TSO (the frame limit is
 * the MSS) and with tcp_pass_fast: each takes the loop's decisions without the loop, from
 * what the pass keeps fixed (SND.WND, cwnd, SND.UNA, the MSS, hold and the FIN queued do
 * not change while it sends; nothing it calls receives or runs user code). room =
 * min(unsent, usable): while it is more than an MSS, the next frame is a full segment with
 * no PSH, no FIN, nothing to hold and nothing for sender SWS avoidance to refuse, which is
 * exactly what the loop would send. The last frame, room at most an MSS, is sent here too
 * when it is all that is unsent (room == unsent) and the loop would neither hold it (hold,
 * the user still queueing) nor end it with a FIN (fin_queued): then it carries PSH, and
 * the loop, with nothing left, would send nothing more. Anything else (a window-limited
 * tail, hold, a FIN, a frame cut to the device's gather limits, a stale route or the link
 * down, a refusal) goes back to the loop with SND.NXT where the run left it (having sent
 * nothing, when its first frame is one of those). The route and the link are asked at the
 * run's first frame only: nothing a run calls receives, resolves a neighbour or polls the
 * link, so neither changes until it ends (~4 instructions a frame). The loop's bookkeeping: the run's first frame
 * clears the ACK state as the loop's frame does (tcp_xmit_fast, clear: once it has a
 * netbuf, before it is sent) and arms the retransmission timer after it as the loop does
 * (persist cleared); its later frames leave both (nothing set the ACK state since, nothing
 * disarms the timer); SND.NXT and SND.MAX are written once at the end (the frames read
 * neither: the sequence number is a local). The counters of its frames (the socket's,
 * TCP's, IPv4's, Ethernet's, the device's) are summed and added once at its end
 * (tcp_run_sums: nothing reads them in between). RTT timing: a frame starts it, as the
 * loop does, when it is new data (SEQ.NXT >= the SND.MAX the pass began the run with: the
 * frames before it in the run only moved SND.MAX up to its own start). Costs the loop's
 * ~70 instructions per frame less (read-128k's 90 frames, a 4 KiB read's three, a 4 KiB
 * write's response). Returns 1 when the pass has nothing left to send, -1 when a frame was
 * refused (the loop stops, as after a refusal), 0 otherwise; *budget is the pass's, one per
 * frame. */
static inline __attribute__((always_inline)) int tcp_output_run(struct tcp_sock *s, struct netdev *dev,
								  unsigned *budget, uint32_t pending, uint32_t usable,
								  bool hold)
{
	struct tcp_run r;

	r.seq = s->snd_nxt;
	r.room = pending < usable ? pending : usable;
	r.pending = pending;
	r.end = r.seq + r.room;
	r.sums = (struct tcp_run_sums){ 0, { 0, 0 } };
	r.ret = 0;
	if (tcp_run_frame(s, dev, budget, &r, hold, true, false)) {
		/* A long run's frames after the first take their payload through the run's own
		 * cursor (tcp_run_payload: read-128k ~380 instructions an I/O less) and go in
		 * trains (tcp_output_run_long: ~2,000 less); a short run's (a 4 KiB read's) pay
		 * nothing for either. */
		if (r.room > 3u * s->mss) {
			struct tcp_run l = r; /* (a copy's address taken, not r's: r stays in registers) */
			tcp_output_run_long(s, dev, budget, &l, hold);
			r = l;
		} else {
			while (tcp_run_frame(s, dev, budget, &r, hold, false, false))
				;
		}
	}
	s->snd_nxt = r.seq;
	if (SEQ_GT(r.seq, s->snd_max))
		s->snd_max = r.seq;
	if (r.sums.segs) /* (none: nothing to add; a first run that sent nothing) */
		tcp_run_count(s, dev, &r.sums);
	return r.ret;
}

/* Send what the windows allow (RFC 9293 3.8.6.2.1 sender SWS avoidance, no Nagle:
 * storage PDUs want latency), then a pending ACK if nothing carried it. hold (the user
 * is still queueing, tcp_send_*): a last segment shorter than the MSS, with no ACK or FIN
 * due, stays queued until tcp_flush, the next segment from the peer or the end of the
 * poll pass (tcp_tx_poll), so that what the user queues next rides in it: an NVMe/TCP
 * C2HData header, its data and the CapsuleResp are queued by three calls, and went out
 * as five frames for a 4 KiB read, three now. */
void tcp_output_work(struct tcp_sock *s, bool hold)
{
	unsigned budget = TCP_OUTPUT_BUDGET;

	/* Called only when not tcp_output_idle: most calls (after a segment that needs no
	 * reply) find nothing to do, and tcp_output tells so without calling in here. */
	if (!hold && !s->ack_pass_end && !list_empty(&s->held_node))
		list_del(&s->held_node); /* pushed now: off the list (kept while the receive
					  * batch's ACK is owed: a pass that sends nothing, a
					  * zero window, leaves it to tcp_rx_batch_end) */

	if (__builtin_expect(s->state != TCP_ESTABLISHED, 0) &&
	    (s->state == TCP_SYN_SENT || s->state == TCP_SYN_RECEIVED)) {
		if (s->snd_nxt == s->iss) {
			tcp_xmit(s, s->iss, 0, s->state == TCP_SYN_SENT ? TCP_SYN : TCP_SYN | TCP_ACK);
			s->snd_nxt = s->iss + 1;
			if (SEQ_GT(s->snd_nxt, s->snd_max))
				s->snd_max = s->snd_nxt;
			if (!s->t_rexmit.armed)
				tcp_arm_rexmit(s);
		}
		if (s->ack_now && s->state == TCP_SYN_RECEIVED)
			tcp_xmit(s, s->iss, 0, TCP_SYN | TCP_ACK);
		return;
	}
	if (__builtin_expect(s->state != TCP_ESTABLISHED, 0) &&
	    (s->state == TCP_CLOSED || s->state == TCP_LISTEN || s->state == TCP_TIME_WAIT)) {
		if (s->ack_now && s->state == TCP_TIME_WAIT)
			tcp_send_ack_now(s);
		return;
	}
	if (!list_empty(&tcp_txwait) && !tcp_txwait_turn) {
		/* Sockets wait for transmit ring room: data only in turns (see tcp_txwait); an
		 * ACK owed still goes. */
		if (SEQ_LT(s->snd_nxt, s->snd_end) || s->fin_queued)
			tcp_txwait_join(s);
		if (s->ack_now)
			tcp_send_ack_now(s);
		return;
	}
	struct netdev *dev = net_if0.dev;
	bool fast = tcp_pass_fast(s, dev);
	uint32_t frame_max = tcp_frame_max(s); /* the device and the MSS do not change in here */
	s->out_pass = true; /* one window for every segment of this pass (tcp_advertise) */
	bool runs = fast && frame_max == s->mss;
	for (;;) {
		uint32_t left;
		if (runs && (left = unsent(s)) != 0) {
			/* What the loop would send while its decisions are fixed ones (a full
			 * segment with more behind it, or all that is unsent in one segment with
			 * neither hold nor a FIN) goes as a run (tcp_output_run), the pass's first
			 * frame too; it stops, having sent nothing more, where the loop decides (a
			 * window-limited or held tail, a FIN, a stale route, a cut frame), and the
			 * loop's next frame goes from where it left SND.NXT. */
			uint32_t wnd = s->snd_wnd < s->cwnd ? s->snd_wnd : s->cwnd;
			uint32_t flight = s->snd_nxt - s->snd_una;
			if (tcp_output_run(s, dev, &budget, left, wnd > flight ? wnd - flight : 0, hold))
				break; /* all sent, or a refusal (the loop stops there) */
		}
		if (!budget)
			break;
		budget--;
		uint32_t wnd = s->snd_wnd < s->cwnd ? s->snd_wnd : s->cwnd;
		uint32_t flight = s->snd_nxt - s->snd_una;
		uint32_t usable = wnd > flight ? wnd - flight : 0;
		uint32_t pending = unsent(s);
		uint32_t len = pending < usable ? pending : usable;
		bool can_fin = s->fin_queued && SEQ_LEQ(s->snd_nxt, s->snd_end) &&
			       (s->state == TCP_FIN_WAIT_1 || s->state == TCP_CLOSING || s->state == TCP_LAST_ACK);
		uint8_t flags = TCP_ACK;
		int n;

		if (len > frame_max)
			len = frame_max;
		if (hold && len == pending && !s->ack_now && !can_fin && (len % s->mss || len < frame_max)) {
			/* the short tail waits for what the user queues next (see above); with TSO
			 * everything short of a full frame does: a user queueing in small pieces
			 * (chargen: 74 B) otherwise sends one MSS frame each time the tail fills one,
			 * measured 2,979 frames for 8 MiB (527 TSO) at load 9, DRAM overhead 0.0139 */
			if (len < s->mss || len < frame_max) {
				tcp_output_hold(s);
				break;
			}
			len -= len % s->mss;
		}
		if (len > s->mss && len < pending)
			len -= len % s->mss; /* whole segments in a TSO frame; the rest goes next */
		if (len < pending && len < s->mss && len < s->max_snd_wnd / 2)
			len = 0; /* sender SWS avoidance: wait for a useful window */
		/* (tcp_xmit cuts the frame to what the NIC gathers in place, tcp_seg_cut's rules,
		 * and drops PSH and FIN from a frame it cut) */
		if (len && len == pending)
			flags |= TCP_PSH;
		if (can_fin && s->snd_nxt + len == s->snd_end)
			flags |= TCP_FIN;
		if (len == 0 && !(flags & TCP_FIN))
			break;
		bool sent_fast = fast && len <= s->mss && s->route.gen == net_if0.route_gen;
		if (sent_fast)
			n = tcp_xmit_fast(s, dev, s->snd_nxt, len, flags);
		else
			n = tcp_xmit(s, s->snd_nxt, len, flags);
		if (n < 0)
			break;
		if ((uint32_t)n < len)
			flags &= (uint8_t)~TCP_FIN;
		/* Time one new segment per round trip; never a retransmitted one (Karn). */
		if (!s->timing && n > 0 && SEQ_GEQ(s->snd_nxt, s->snd_max)) {
			s->timing = true;
			s->rtt_seq = s->snd_nxt;
			s->rtt_start_ns = clock_now_ns();
		}
		s->snd_nxt += (uint32_t)n + ((flags & TCP_FIN) ? 1 : 0);
		if (SEQ_GT(s->snd_nxt, s->snd_max))
			s->snd_max = s->snd_nxt;
		if (!s->t_rexmit.armed || s->persist) {
			s->persist = false;
			tcp_arm_rexmit(s);
		}
	}
	/* Zero window with data waiting and nothing in flight: probe (RFC 9293 3.8.6.1). */
	if (unsent(s) && s->snd_wnd == 0 && s->snd_una == s->snd_max && !s->t_rexmit.armed) {
		s->persist = true;
		tcp_arm_rexmit(s);
	}
	if (s->ack_now)
		tcp_send_ack_now(s);
	s->out_pass = false;
	s->adv_fresh = false;
}

/* tcp_flush's direct paths (tcp_output_one, tcp_output_short) may send the len bytes unsent
 * as tcp_output_work's pass would, without its decisions: ESTABLISHED, no FIN queued, the
 * windows take them all, nobody waiting for ring room (tcp_txwait, turns), the pass's fast
 * frames allowed (tcp_pass_fast: checksum offload, no SACK blocks owed), the link up and
 * the route fresh (the run's first frame's tests). */
static inline __attribute__((always_inline)) bool tcp_flush_direct(const struct tcp_sock *s, const struct netdev *dev,
								   uint32_t len)
{
	uint32_t wnd = s->snd_wnd < s->cwnd ? s->snd_wnd : s->cwnd, flight = s->snd_nxt - s->snd_una;

	return s->state == TCP_ESTABLISHED && !s->fin_queued && wnd > flight && len <= wnd - flight &&
	       list_empty(&tcp_txwait) && tcp_pass_fast(s, dev) && dev->link_up && s->route.gen == net_if0.route_gen;
}

/* The bookkeeping after a direct flush's frames [seq, end) went (tcp_output_one's one frame,
 * tcp_short_train's several: full segments but the last): RTT timing started, when none
 * runs, at the first frame that is new data (SEQ >= SND.MAX; after the first frame,
 * tcp_run_train_time), the retransmission timer armed (persist cleared) as tcp_run_frame
 * arms it, one clock reading for both; SND.NXT and SND.MAX moved to end. */
static inline __attribute__((always_inline)) void tcp_direct_sent(struct tcp_sock *s, uint32_t seq, uint32_t end,
								   bool several)
{
	uint64_t now = 0;

	if (!s->timing && SEQ_GEQ(seq, s->snd_max)) {
		s->timing = true;
		s->rtt_seq = seq;
		s->rtt_start_ns = now = clock_now_ns();
	} else if (several && !s->timing) {
		tcp_run_train_time(s, seq, end);
	}
	if (!s->t_rexmit.armed || s->persist) {
		s->persist = false;
		timer_arm(&timer_default_queue, &s->t_rexmit, (now ? now : clock_now_ns()) + s->rto_ns);
	}
	s->snd_nxt = end;
	if (SEQ_GT(end, s->snd_max))
		s->snd_max = end;
}

/* tcp_output_one's frame (tcp_output_one, tcp_flush_one): len bytes from seq, SND.NXT, all
 * that is unsent, the end of e (device: in device memory), built from the run template and
 * handed to the device, with the pass's bookkeeping for it (see tcp_output_one). */
static inline __attribute__((always_inline)) void tcp_one_frame(struct tcp_sock *s, struct netdev *dev,
								 struct tcp_sndent *e, uint32_t seq, uint32_t len,
								 bool device)
{
	const uint8_t flags = TCP_ACK | TCP_PSH;
	struct netbuf *nb = netbuf_alloc_tx_span(sizeof(s->route.hdr), offsetof(struct tcp_hdr, checksum),
						 sizeof(s->route.hdr), TCP_HLEN_MIN);
	uint8_t *h = nb->data;
	if (e->cap == TCP_SNDENT_INLINE && len == e->frag.len)
		tcp_xmit_copy_inline(nb, e, len);
	else
		tcp_xmit_piece(nb, 0, e, e->frag.len - len, len);
	tcp_run_first(s);
	ack_went(s);
	memcpy(h, s->tx_hdr, TCP_RUN_HDR_BYTES);
	be32_store(h + ETH_HLEN + IPV4_HLEN_MIN + offsetof(struct tcp_hdr, seq), seq);
	h[ETH_HLEN + IPV4_HLEN_MIN + offsetof(struct tcp_hdr, flags)] = flags;
	uint32_t base = tcp_run_len_fields(s, h, len);
	uint16_t ident = ipv4_ident++;
	be16_store(h + ETH_HLEN + offsetof(struct ipv4_hdr, identification), ident);
	be16_store(h + ETH_HLEN + offsetof(struct ipv4_hdr, header_checksum), (uint16_t)~net_csum_fold(base + ident));
	int rc = netdev_tx_burst_one(dev, nb);
	if (__builtin_expect(rc != 0, 0)) {
		if (tcp_run_refused(s, nb, rc, len, flags, device ? 0 : len, device ? len : 0) < 0) {
			if (s->ack_now)
				tcp_send_ack_now(s); /* (the pass's last check) */
			return;
		}
	} else {
		const struct tcp_run_sums sums = { 1, { device ? 0 : len, device ? len : 0 } };
		tcp_run_count(s, dev, &sums);
	}
	tcp_direct_sent(s, seq, s->snd_end, false);
}

/*
 * tcp_flush in one step (issue 18): all that is unsent is one segment at the end of the send
 * queue's last entry (a response, an R2T, placed and held back by tcp_output_more), the
 * windows take it, and nothing of tcp_output_work's pass would decide otherwise: ESTABLISHED,
 * no FIN queued, nobody waiting for ring room (tcp_txwait), the pass's fast frames allowed
 * (tcp_pass_fast: checksum offload, no SACK blocks owed), the route fresh, the link up and a
 * netbuf free. Then the frame that pass would send (its run's one frame, tcp_run_xmit's;
 * with TSO the loop's tcp_xmit_fast frame, the same bytes) is built here from the run
 * template (tcp_run_first) and handed to the device, with the pass's bookkeeping for it:
 * the ACK it carries (RCV.NXT, tcp_window_field's window, ack_went), RTT timing, the
 * retransmission timer (persist cleared), SND.NXT and SND.MAX, the counters; refused, it
 * ends as a refused run frame (tcp_run_refused), then the pure ACK owed as the pass sends
 * it. The entry stays queued for retransmission; bytes it holds itself (TCP_SNDENT_INLINE)
 * are copied behind the headers (tcp_xmit_copy_inline). What it leaves out: the
 * pass's setup and last checks (held list, states, turns, TSO, budget, the run's and the
 * loop's decisions, tcp_xmit_payload's search, the probe and ACK checks): ~140 instructions
 * a 4 KiB write's response. Anything else takes tcp_output_work.
 */
static __attribute__((noinline)) void tcp_output_one(struct tcp_sock *s)
{
	struct netdev *dev = net_if0.dev;
	uint32_t seq = s->snd_nxt, len = s->snd_end - seq; /* (1 .. MSS: tcp_flush) */

	if (!tcp_flush_direct(s, dev, len) || !mm_pool_has_free(&netdev_netbuf_pool))
		return tcp_output_work(s, false);
	struct tcp_sndent *e = container_of(s->sndq.prev, struct tcp_sndent, node);
	bool device = e->frag.addr.cls == MEM_CLASS_DEVICE;
	if (len > e->frag.len || (device && dev->tx_dev_bytes && len > dev->tx_dev_bytes))
		return tcp_output_work(s, false); /* (over two entries: tcp_xmit_payload's gather) */

	if (!s->ack_pass_end && !list_empty(&s->held_node))
		list_del(&s->held_node); /* (as tcp_output_work) */
	tcp_one_frame(s, dev, e, seq, len, device);
}

/*
 * tcp_flush for a response just placed alone (tcp.c, tcp_send_placed_flush: a 4 KiB write's
 * CapsuleResp, an R2T): the frame tcp_output_one sends, without the steps between that
 * decide nothing for it (tcp_send_placed_flush's tcp_output_would_hold, tcp_flush's
 * tcp_output_idle and dispatch, tcp_output_one's entry tests). Taken when all that is unsent
 * is the last entry's bytes, held in the entry itself (TCP_SNDENT_INLINE), shorter than the
 * MSS, no ACK owed at once or at the batch's end, s not held (then tcp_output_would_hold is
 * true: tcp_send_placed_flush would skip tcp_output_more), and tcp_output_one's direct path
 * applies (tcp_flush_direct, a netbuf free): the same frame byte for byte, the same
 * bookkeeping. Returns false, nothing changed, for anything else: then the general path.
 */
__attribute__((noinline)) bool tcp_flush_one(struct tcp_sock *s)
{
	struct netdev *dev = net_if0.dev;
	struct tcp_sndent *e = container_of(s->sndq.prev, struct tcp_sndent, node);
	uint32_t seq = s->snd_nxt, len = s->snd_end - seq;

	if (s->ack_now || s->ack_pass_end || !list_empty(&s->held_node) || e->cap != TCP_SNDENT_INLINE ||
	    len != e->frag.len || !len || len >= s->mss || !tcp_flush_direct(s, dev, len) ||
	    !mm_pool_has_free(&netdev_netbuf_pool))
		return false;
	tcp_one_frame(s, dev, e, seq, len, false);
	return true;
}

/* n bytes copied into nb's own storage at c as nb's next fragment (host memory, nothing to
 * release): field by field, as tcp_run_train_piece writes one (a compound literal zeroed the
 * whole fragment, then stored two fields again). */
static inline __attribute__((always_inline)) void tcp_short_copied_piece(struct netbuf *nb, const uint8_t *c,
									  uint32_t n)
{
	struct netdev_frag *f = &nb->frags[nb->nfrags++];

	f->addr = dma_addr_host(c);
	f->offset = 0;
	f->len = n;
	f->provider = NETDEV_PROVIDER_HOST;
	f->pad = 0;
	f->token = 0;
	f->owner = NULL;
}

_Static_assert(NETBUF_HEADROOM + NETBUF_MAX_FRAGS * TCP_RUN_HDR_BYTES + 2 * TCP_SNDENT_INLINE <= NETBUF_HOST_SIZE,
	       "tcp_short_lay: a response copied to the storage's end lies past the host part");

/* The short run's frames as one mixed train, laid into nb (a new netbuf, frame 0's headers
 * reserved), left bytes from SND.NXT in frames of an MSS (the last: what is left), when the
 * run is a PDU's: an entry holding its bytes itself (TCP_SNDENT_INLINE: a C2HData header)
 * at SND.NXT, shorter than an MSS, copied behind frame 0's headers (as tcp_short_head copies
 * it); the next entry's data, one piece a frame, in host memory or in device memory within
 * tx_dev_bytes; the last frame may end in the entry after it (a response), its second
 * piece, unless both are device pieces and the device takes one a frame (tx_dev_frags); a
 * response the entry holds itself, whole, is copied to the end of nb's storage and sent from
 * there (no reference on its entry, one release less at the completion). At
 * most tx_train_max pieces (netdev.h NETBUF_TX_TRAIN_MIXED). One reference an entry (the
 * data's pieces after its first: tcp_run_train_piece). Returns the entry of the last byte
 * (NULL: another shape, for the lone frames; nb to be freed), the frames in *frames, the
 * payload bytes by memory class in pay[], the bytes copied in *copied. */
static inline __attribute__((always_inline)) struct tcp_sndent *tcp_short_lay(struct tcp_sock *s, struct netbuf *nb,
									      const struct netdev *dev, uint32_t left,
									      unsigned *frames, uint32_t *pay,
									      uint32_t *copied)
{
	uint32_t mss = s->mss, dev_bytes = dev->tx_dev_bytes, head, off, k = 1;
	struct tcp_sndent *e = tcp_short_entry(s);

	if (e->seq != s->snd_nxt || e->cap != TCP_SNDENT_INLINE || (head = e->frag.len) >= mss ||
	    e->node.next == &s->sndq || dev->tx_train_max < (left + mss - 1) / mss + 1)
		return NULL; /* (tcp_short_head's shape; room for a piece a frame and one more) */
	struct tcp_sndent *d = container_of(e->node.next, struct tcp_sndent, node);
	bool dd = d->frag.addr.cls == MEM_CLASS_DEVICE;
	if (d->frag.len < mss - head || (dd && dev_bytes && mss > dev_bytes))
		return NULL;
	memcpy(nb->tail, e->buf, TCP_SNDENT_INLINE); /* (tcp_xmit_copy_inline's) */
	nb->tail += head;
	*copied = head;
	tcp_xmit_piece(nb, 0, d, 0, mss - head);
	nb->train_hlen[0] = (uint16_t)(TCP_RUN_HDR_BYTES + head);
	nb->train_nfrags[0] = 1;
	off = mss - head;
	left -= mss;
	pay[0] += head;
	for (; left; k++) {
		uint32_t len = left < mss ? left : mss, in = d->frag.len - off < len ? d->frag.len - off : len;
		unsigned nf = 0;
		nb->tail += TCP_RUN_HDR_BYTES;
		if (in) {
			tcp_run_train_piece(nb, d, off, in);
			off += in;
			nf = 1;
		}
		if (in < len) { /* the last frame ends in the entry after the data's */
			struct tcp_sndent *r = container_of(d->node.next, struct tcp_sndent, node);
			uint32_t rest = len - in;
			bool rd = r->frag.addr.cls == MEM_CLASS_DEVICE;
			if (len != left || d->node.next == &s->sndq || rest > r->frag.len ||
			    (rd && ((dev_bytes && rest > dev_bytes) || (in && dd && dev->tx_dev_frags == 1))))
				return NULL;
			if (r->cap == TCP_SNDENT_INLINE && rest == r->frag.len) {
				/* (a response: its bytes copied to the end of nb's storage, past the
				 * host part, and sent from there: no reference, nothing to release) */
				uint8_t *c = nb->end - TCP_SNDENT_INLINE;
				memcpy(c, r->buf, TCP_SNDENT_INLINE);
				tcp_short_copied_piece(nb, c, rest);
				*copied += rest;
			} else {
				tcp_xmit_piece(nb, nb->nfrags, r, 0, rest);
			}
			pay[rd] += rest;
			d = r;
			nf++;
		}
		nb->train_hlen[k] = TCP_RUN_HDR_BYTES;
		nb->train_nfrags[k] = (uint8_t)nf;
		left -= len;
	}
	pay[dd] += off; /* (the data entry's bytes, read before d moved on: off is its end) */
	*frames = k;
	return d;
}

/* A short train's frame header at h (tcp_short_train, tcp_flush_pdu): the run template
 * (tcp_run_first) with SEG.SEQ seq and the next IPv4 identification; the last frame
 * (last_len: its payload bytes, all that is left; 0 for a full segment) with PSH and its
 * length fields (tcp_output_short's). */
static inline __attribute__((always_inline)) void tcp_short_hdr(struct tcp_sock *s, uint8_t *h, uint32_t seq,
								 uint32_t last_len)
{
	uint32_t base = s->tx_hdr_ipbase;

	memcpy(h, s->tx_hdr, TCP_RUN_HDR_BYTES);
	be32_store(h + ETH_HLEN + IPV4_HLEN_MIN + offsetof(struct tcp_hdr, seq), seq);
	if (last_len) {
		h[ETH_HLEN + IPV4_HLEN_MIN + offsetof(struct tcp_hdr, flags)] = TCP_ACK | TCP_PSH;
		base = tcp_run_len_fields(s, h, last_len);
	}
	uint16_t ident = ipv4_ident++;
	be16_store(h + ETH_HLEN + offsetof(struct ipv4_hdr, identification), ident);
	be16_store(h + ETH_HLEN + offsetof(struct ipv4_hdr, header_checksum), (uint16_t)~net_csum_fold(base + ident));
}

/* A short train laid and headed (tcp_short_train, tcp_flush_pdu), left bytes from seq, its
 * payload by memory class in pay[]: handed to the device, then the counters (tcp_run_count)
 * or the refusal (tcp_run_train_refused, then the pure ACK owed as the pass sends it), RTT
 * timing, the retransmission timer, SND.NXT and SND.MAX (tcp_direct_sent). */
static inline __attribute__((always_inline)) void tcp_short_train_go(struct tcp_sock *s, struct netdev *dev,
								      struct netbuf *nb, uint32_t seq, uint32_t left,
								      const uint32_t *pay)
{
	unsigned frames = nb->train_frames;
	int rc = netdev_tx_train(dev, nb);

	if (__builtin_expect(rc != 0, 0)) {
		if (tcp_run_train_refused(s, nb, rc, left, pay[1]) < 0) {
			if (s->ack_now)
				tcp_send_ack_now(s); /* (the pass's last check after a refusal) */
			return;
		}
	} else {
		const struct tcp_run_sums sums = { frames, { pay[0], pay[1] } };
		tcp_run_count(s, dev, &sums);
	}
	tcp_direct_sent(s, seq, seq + left, true);
}

/*
 * tcp_output_short's run as one train (netdev.h NETBUF_TX_TRAIN_MIXED), for a device with
 * NETDEV_F_TX_TRAIN: the frames tcp_run_xmit sends one netbuf each (full segments, then the
 * rest with PSH: the same bytes), side by side in one netbuf (tcp_short_lay), one transmit
 * call, one completion. Their headers are the run template's (tcp_run_first, which takes the
 * ACK state, ack_went) patched as tcp_run_xmit patches them. Taken: RTT timing and the
 * retransmission timer as tcp_output_short's frames start them (tcp_run_train_time for a
 * frame after the first), SND.NXT, SND.MAX and the counters (tcp_run_count); refused for
 * want of ring room, nothing went (tcp_run_train_refused: as a refused first frame, its ACK
 * owed, the retry timer, the wait for ring room) and the pure ACK owed goes as the pass sends
 * it. A run that is not one train (a piece the device's limits would cut, more pieces than
 * tx_train_max) or no netbuf: false, nothing changed, the lone frames' path then.
 */
static inline __attribute__((always_inline)) bool tcp_short_train(struct tcp_sock *s, struct netdev *dev,
								   uint32_t left)
{
	struct netbuf *nb = netbuf_alloc_tx_span(sizeof(s->route.hdr), offsetof(struct tcp_hdr, checksum),
						 sizeof(s->route.hdr), TCP_HLEN_MIN);
	uint32_t pay[2] = { 0, 0 }, copied, seq = s->snd_nxt, end = seq + left;
	unsigned frames;
	struct tcp_sndent *last;

	if (!nb)
		return false;
	if (!(last = tcp_short_lay(s, nb, dev, left, &frames, pay, &copied))) {
		netbuf_free(nb); /* (its references back) */
		return false;
	}
	dma_account_cpu(MEM_CLASS_HOST, copied); /* (the copies') */
	s->snd_cursor = last;
	nb->flags = NETBUF_TX_CSUM_PARTIAL | NETBUF_TX_TRAIN | NETBUF_TX_TRAIN_MIXED;
	nb->train_frames = (uint8_t)frames;
	tcp_run_first(s);
	ack_went(s); /* (flags have TCP_ACK: tcp_xmit's bookkeeping) */
	uint8_t *h = nb->data;
	for (unsigned k = 0; k < frames; k++) {
		uint32_t fseq = seq + k * s->mss;
		tcp_short_hdr(s, h, fseq, k + 1 == frames ? end - fseq : 0);
		h += nb->train_hlen[k];
	}
	tcp_short_train_go(s, dev, nb, seq, left, pay);
	return true;
}

/*
 * tcp_flush for a short run: two or three segments unsent (a 4 KiB read's C2HData header,
 * data and response), no segmentation offload (tcp_frame_max is the MSS: the pass sends runs
 * then), tcp_flush_direct. The pass's run (tcp_output_run) without the pass around it (its
 * setup, turns, budget, decisions per frame, last checks): full segments then the rest with
 * PSH, each tcp_run_xmit's frame from the run template (the first builds it and takes the
 * ACK state, ack_went), RTT timing and the retransmission timer after the first frame as
 * tcp_run_frame, SND.NXT, SND.MAX and the counters once at the end (tcp_run_count). A frame
 * cut to the device's gather limits leaves the rest to tcp_output_work (as the run leaves it
 * to the pass's loop); a refusal or no netbuf ends it as it ends the pass (the pure ACK
 * owed).
 */
static __attribute__((noinline)) void tcp_output_short(struct tcp_sock *s)
{
	struct netdev *dev = net_if0.dev;
	uint32_t left = s->snd_end - s->snd_nxt, mss = s->mss, len = mss;
	struct tcp_run r;
	bool more = false;

	if (!tcp_flush_direct(s, dev, left) || tcp_frame_max(s) != mss)
		return tcp_output_work(s, false);
	if (!s->ack_pass_end && !list_empty(&s->held_node))
		list_del(&s->held_node); /* (as tcp_output_work) */
	if ((dev->features & NETDEV_F_TX_TRAIN) && tcp_short_train(s, dev, left))
		return; /* (one train: read-4k ~N instructions less) */
	r.seq = s->snd_nxt;
	r.sums = (struct tcp_run_sums){ 0, { 0, 0 } };
	int n = tcp_run_xmit(s, dev, &r, len, TCP_ACK, true, false, TCP_SHORT_FIRST); /* (left > mss: tcp_flush) */
	if (n >= 0) {
		uint64_t now = 0;
		if (!s->timing && n > 0 && SEQ_GEQ(r.seq, s->snd_max)) {
			s->timing = true;
			s->rtt_seq = r.seq;
			s->rtt_start_ns = now = clock_now_ns();
		}
		if (!s->t_rexmit.armed || s->persist) {
			s->persist = false;
			timer_arm(&timer_default_queue, &s->t_rexmit, (now ? now : clock_now_ns()) + s->rto_ns);
		}
		r.seq += (uint32_t)n;
		left -= (uint32_t)n;
		more = (uint32_t)n < len;
		while (!more && left) {
			len = left < mss ? left : mss;
			n = tcp_run_xmit(s, dev, &r, len, len == left ? TCP_ACK | TCP_PSH : TCP_ACK, false, false,
					 TCP_SHORT_NEXT);
			if (n < 0)
				break;
			if (!s->timing && n > 0 && SEQ_GEQ(r.seq, s->snd_max)) {
				s->timing = true;
				s->rtt_seq = r.seq;
				s->rtt_start_ns = clock_now_ns();
			}
			r.seq += (uint32_t)n;
			left -= (uint32_t)n;
			more = (uint32_t)n < len;
		}
	}
	s->snd_nxt = r.seq;
	if (SEQ_GT(r.seq, s->snd_max))
		s->snd_max = r.seq;
	if (r.sums.segs)
		tcp_run_count(s, dev, &r.sums);
	if (more)
		tcp_output_work(s, false); /* (the rest of a cut frame, and what follows it) */
	else if (n < 0 && s->ack_now)
		tcp_send_ack_now(s); /* (the pass's last check after a refusal) */
}

/*
 * tcp_flush for a PDU just queued whole behind nothing unsent (tcp.c,
 * tcp_send_placed_frags_tail_flush: a 4 KiB read's C2HData header, data and response),
 * t its tail's entry, the last: the train tcp_output_short would send (tcp_short_train),
 * built from the three entries the caller queued instead of found again (tcp_flush's
 * dispatch, tcp_output_short's, tcp_short_entry's search and tcp_short_lay's shape checks
 * per frame and piece). Taken when the run is tcp_output_short's (two or three segments,
 * no segmentation offload, tcp_flush_direct), the device takes it as one train
 * (NETDEV_F_TX_TRAIN, tx_train_max, tx_dev_bytes for data in device memory) and it has
 * tcp_short_lay's shape: the header an entry holding its bytes itself, shorter than an MSS,
 * at SND.NXT, then the data's one entry, then the tail's (TCP_SNDENT_INLINE), whole in the
 * last frame. The same frames, references, copies and bookkeeping as tcp_short_train: the
 * header copied behind frame 0's headers, the data one piece a frame (one reference: the
 * first piece's), the tail copied to the end of the netbuf's storage. s is not held (the
 * caller's tcp_output_would_hold). Returns false, nothing changed, for anything else (or
 * no netbuf): then tcp_flush.
 */
__attribute__((noinline)) bool tcp_flush_pdu(struct tcp_sock *s, struct tcp_sndent *t)
{
	struct netdev *dev = net_if0.dev;
	struct tcp_sndent *d = container_of(t->node.prev, struct tcp_sndent, node);
	struct tcp_sndent *e = container_of(d->node.prev, struct tcp_sndent, node);
	uint32_t mss = s->mss, seq = s->snd_nxt, left = s->snd_end - seq, head = e->frag.len, tl = t->frag.len;
	uint32_t dlen = d->frag.len, frames = left > 2 * mss ? 3 : 2, off = mss - head, k;
	bool dd = d->frag.addr.cls == MEM_CLASS_DEVICE;

	if (left <= mss || left > 3 * mss || e->seq != seq || e->cap != TCP_SNDENT_INLINE || head >= mss ||
	    head + dlen + tl != left || head + dlen < (frames - 1) * mss || !(dev->features & NETDEV_F_TX_TRAIN) ||
	    dev->tx_train_max < frames + 1 || (dd && dev->tx_dev_bytes && mss > dev->tx_dev_bytes) ||
	    tcp_frame_max(s) != mss || !tcp_flush_direct(s, dev, left))
		return false;
	struct netbuf *nb = netbuf_alloc_tx_span(sizeof(s->route.hdr), offsetof(struct tcp_hdr, checksum),
						 sizeof(s->route.hdr), TCP_HLEN_MIN);
	if (!nb)
		return false;
	tcp_run_first(s);
	ack_went(s); /* (flags have TCP_ACK: tcp_xmit's bookkeeping) */
	/* frame 0: the header's bytes copied behind its headers, then the data's first piece */
	tcp_short_hdr(s, nb->data, seq, 0);
	memcpy(nb->tail, e->buf, TCP_SNDENT_INLINE); /* (tcp_xmit_copy_inline's) */
	nb->tail += head;
	tcp_xmit_piece(nb, 0, d, 0, off);
	nb->train_hlen[0] = (uint16_t)(TCP_RUN_HDR_BYTES + head);
	nb->train_nfrags[0] = 1;
	for (k = 1; k + 1 < frames; k++, off += mss) { /* full segments of data */
		tcp_short_hdr(s, nb->tail, seq + k * mss, 0);
		nb->tail += TCP_RUN_HDR_BYTES;
		tcp_run_train_piece(nb, d, off, mss);
		nb->train_hlen[k] = TCP_RUN_HDR_BYTES;
		nb->train_nfrags[k] = 1;
	}
	/* the last: the data's rest (if any), then the tail copied to the storage's end */
	uint32_t in = dlen - off;
	uint8_t *c = nb->end - TCP_SNDENT_INLINE;
	tcp_short_hdr(s, nb->tail, seq + k * mss, in + tl);
	nb->tail += TCP_RUN_HDR_BYTES;
	if (in)
		tcp_run_train_piece(nb, d, off, in);
	memcpy(c, t->buf, TCP_SNDENT_INLINE);
	tcp_short_copied_piece(nb, c, tl);
	nb->train_hlen[k] = TCP_RUN_HDR_BYTES;
	nb->train_nfrags[k] = (uint8_t)(in ? 2 : 1);
	dma_account_cpu(MEM_CLASS_HOST, head + tl); /* (the copies') */
	s->snd_cursor = t;
	nb->flags = NETBUF_TX_CSUM_PARTIAL | NETBUF_TX_TRAIN | NETBUF_TX_TRAIN_MIXED;
	nb->train_frames = (uint8_t)frames;
	const uint32_t pay[2] = { head + tl + (dd ? 0 : dlen), dd ? dlen : 0 };
	tcp_short_train_go(s, dev, nb, seq, left, pay);
	return true;
}

/* tcp.h. One segment or less unsent (a response, an R2T): tcp_output_one, in one step; up
 * to three: tcp_output_short, the pass's run alone; anything else, or what they leave:
 * tcp_output_work's pass. */
void tcp_flush(struct tcp_sock *s)
{
	uint32_t unsent_1;

	if (tcp_output_idle(s))
		return;
	unsent_1 = s->snd_end - s->snd_nxt - 1; /* (0xffffffff: none, an ACK or a FIN owed) */
	if (unsent_1 < s->mss)
		tcp_output_one(s);
	else if (unsent_1 < 3u * s->mss)
		tcp_output_short(s);
	else
		tcp_output_work(s, false);
}

static int tcp_txwait_turns(void);

/*
 * The batch ACK s owes may wait for the answer its user promised (tcp_ack_hold, tcp.h):
 * then t_delack is armed net.tcp_ack_hold_us after the batch's clock (last_rx_ns, when its
 * last segment came: no clock is read, and the bound runs from the data's arrival, as the
 * delayed ACK's does) or kept when due sooner, and true is returned; any segment sent
 * before carries the ACK and cancels it. The promise covers
 * the bytes its user had taken: data that came after (RCV.NXT moved on) voids it. Never
 * for an ACK owed at once (ack_now: out of order, a hole filled, a duplicate, a FIN,
 * tcp_ack_every segments), SACK or D-SACK blocks to report, outside ESTABLISHED, nor when
 * the ACK opens the window: less than half of what the queues allow (tcp_rcv_window_max,
 * an upper bound) is left of the advertised one, or it is held small for want of buffers.
 *
 * RFC 5681 4.2 and RFC 9293 3.8.6.3 (MUST: an ACK within 500 ms; SHOULD: one for at
 * least every second full-sized segment): the bound is at most TCP_ACK_HOLD_US_MAX
 * (40 ms), 200 us by default; the segments held are those of one request the peer sent
 * as a burst and now waits on the answer for (a 4 KiB NVMe/TCP write is three), at most
 * tcp_ack_every, so the second SHOULD is relaxed as the batch ACK relaxes it. The answer
 * comes within the bound in most cases: the bare ACK before it cost ~960 instructions and
 * ~74 host-DRAM bytes per 4 KiB write. A sender whose window or cwnd waits on the ACK
 * waits at most the bound (tests/unit/datapath: ack_hold_sender_waits).
 */
static bool tcp_ack_held(struct tcp_sock *s)
{
	if (!s->ack_hold || s->ack_hold_seq != s->rcv_nxt || s->ack_now || !tcp_ack_hold_ns ||
	    s->state != TCP_ESTABLISHED || !list_empty(&s->ooo) || s->dsack || s->rwnd_starved)
		return false;
	uint32_t left = SEQ_GT(s->rcv_adv, s->rcv_nxt) ? s->rcv_adv - s->rcv_nxt : 0;
	/* (the user took every byte: RCV.NXT is where it was promised, so the receive queue
	 * holds no byte; with no fragment in either queue either, win_full is the bound) */
	uint32_t most = (s->rxq_frags | s->ooo_frags) ? 0 : tcp_rcv_window_max_known(s);
	uint32_t lim = (uint32_t)0xffff << s->rcv_wscale;
	if (!most)
		most = tcp_rcv_window_max(s);
	if (most > lim)
		most = lim;
	if (left < most / 2)
		return false; /* a window update the peer may be waiting for */
	/* The answer's ACK may leave the edge where it is while three quarters of the largest
	 * window is left (tcp_advertise): it carries no window update the peer waits for, and
	 * moving the edge by the request's bytes is the full window computation's work (~150
	 * instructions a 4 KiB write: the budget's sums and note). RFC 9293 3.8.6.2.2 (RFC 1122
	 * 4.2.3.3): the receiver keeps the edge until it can move by at least min(RCV.BUFF / 2,
	 * MSS); keeping it longer never shrinks the window, and an edge left in place promises
	 * no buffer the budget has not counted. The quarter's margin leaves the next request's
	 * hold half of the window (up to a quarter of it in one batch: 16 4 KiB writes of a
	 * 256 KiB window), so no hold is refused for it. Valid while ack_held and RCV.NXT is
	 * ack_hold_seq (tcp_advertise tests both): data after moves RCV.NXT, any segment we send
	 * ends the hold (ack_went) and is the only writer of the edge meanwhile; a change of the
	 * budget or of win_full meanwhile voids nothing (an edge left in place is always
	 * allowed, and win_full changes only with data, rcv_cap or the MSS). */
	s->ack_held_edge = left >= most - most / 4;
	uint64_t due = s->last_rx_ns + tcp_ack_hold_ns;
	s->ack_pass_end = false;
	if (!s->ack_delayed || s->ack_due_ns > due)
		s->ack_due_ns = due;
	s->ack_delayed = true;
	s->ack_held = true;
	if (!s->t_delack.armed || s->t_delack.deadline_ns > due)
		timer_arm(&timer_default_queue, &s->t_delack, due);
	tcp_counters.ack_holds++;
	return true;
}

/* The end of a receive batch or poll pass: the turns of the sockets waiting for ring room
 * (tcp_txwait_mark first on the list), the batch's ACKs and every tail held back (a tail
 * queued by a poller that runs later in the pass goes in the next pass). */
int tcp_rx_batch_end(void)
{
	int n = 0;
	bool turned = false;
	if (tcp_rx_gro)
		tcp_rx_flush(); /* the gathered data event first: its user may promise an answer */
	while (!list_empty(&tcp_held)) {
		struct list_node *it = tcp_held.next;
		list_del(it);
		if (it == &tcp_txwait_mark) {
			if (!turned) /* once a pass (a held socket may join the line after them) */
				n += tcp_txwait_turns();
			turned = true;
			continue;
		}
		struct tcp_sock *s = container_of(it, struct tcp_sock, held_node);
		if (s->ack_pass_end && !tcp_ack_held(s))
			s->ack_now = true; /* the receive batch's ACK (tcp_in.c schedule_ack) */
		tcp_output(s);
		n++;
	}
	if (!list_empty(&tcp_txwait)) /* still waiting (the device stopped again): next pass */
		list_add_head(&tcp_held, &tcp_txwait_mark);
	return n;
}

/* Turns for the sockets waiting for transmit ring room (tcp_txwait), in their order, once
 * the device has room (netdev_tx_wake): each gets one tcp_output (at most 64 frames), at
 * most one turn each per pass. A socket refused again goes to the back of the line; when
 * the device stops again, those not yet served keep their places at the front. Returns
 * the turns given. */
static int tcp_txwait_turns(void)
{
	const struct netdev *d = net_if0.dev;
	unsigned n = 0, waiting = 0;
	struct list_node *it;

	list_for_each(&tcp_txwait, it)
		waiting++;
	while (n < waiting && !list_empty(&tcp_txwait) && !(d && d->tx_stopped)) {
		struct tcp_sock *s = container_of(tcp_txwait.next, struct tcp_sock, txwait_node);
		list_del(&s->txwait_node);
		n++;
		tcp_counters.tx_ring_retries++;
		tcp_txwait_turn = true;
		tcp_output(s);
		tcp_txwait_turn = false;
	}
	return (int)n;
}

/* s's turn now, whatever the device says (the retransmission timer's backstop for data
 * refused with nothing in flight). */
static void tcp_txwait_force(struct tcp_sock *s)
{
	list_del(&s->txwait_node);
	tcp_txwait_turn = true;
	tcp_output(s);
	tcp_txwait_turn = false;
}

/* Every pass pays only the tests: sockets held (tcp_held, with tcp_txwait_mark while
 * sockets wait for ring room) or a receive batch nobody ended (tcp_rx_gro: tested here,
 * once a pass, instead of a mark put on tcp_held and taken off again every batch). */
static int tcp_tx_poll(unsigned budget)
{
	(void)budget;
	return list_empty(&tcp_held) && !tcp_rx_gro ? 0 : tcp_rx_batch_end();
}
POLLER(tcp_tx, tcp_tx_poll);

/* s is freed or closed: off the held and waiting lists. */
void tcp_output_forget(struct tcp_sock *s)
{
	list_del(&s->held_node);
	list_del(&s->txwait_node);
}

/* Retransmit one segment at SND.UNA (fast retransmit). */
void tcp_retransmit_una(struct tcp_sock *s)
{
	uint32_t len = SEQ_LT(s->snd_una, s->snd_end) ? s->snd_end - s->snd_una : 0;
	uint8_t flags = TCP_ACK;

	if (len > s->mss)
		len = s->mss;
	if (len)
		len = tcp_seg_cut(s, s->snd_una, len);
	if (s->fin_queued && s->snd_una + len == s->snd_end && SEQ_GT(s->snd_max, s->snd_end))
		flags |= TCP_FIN;
	s->timing = false; /* Karn */
	s->retransmits++;
	tcp_counters.retransmits++;
	tcp_xmit(s, s->snd_una, len, flags);
}

/* The retransmission timer (RFC 6298 5.4-5.7) doubling as the persist timer. */
void tcp_rexmit_timer(struct timer *t, void *arg)
{
	struct tcp_sock *s = arg;
	uint32_t flight;
	(void)t;

	if (s->persist) {
		/* Zero-window probe: one byte beyond the closed window, backed off. */
		tcp_counters.zero_window_probes++;
		if (s->snd_wnd == 0 && unsent(s)) {
			/* A peer that keeps its window shut holds our send queue: give up after
			 * TCP_PERSIST_MAX_NS of probing, however it answers (it may ACK every probe). */
			uint64_t now = clock_now_ns();
			if (!s->zwnd_since_ns) {
				s->zwnd_since_ns = now;
			} else if (now - s->zwnd_since_ns >= TCP_PERSIST_MAX_NS) {
				tcp_counters.persist_aborts++;
				tcp_send_ctl(s, s->snd_nxt, TCP_RST | TCP_ACK);
				tcp_sock_closed(s, -ETIMEDOUT);
				return;
			}
			int n = tcp_xmit(s, s->snd_una, 1, TCP_ACK);
			if (n > 0 && s->snd_nxt == s->snd_una) {
				s->snd_nxt = s->snd_una + 1;
				if (SEQ_GT(s->snd_nxt, s->snd_max))
					s->snd_max = s->snd_nxt;
			}
			if (s->backoff < 16)
				s->backoff++;
			uint64_t d = s->rto_ns << (s->backoff < 6 ? s->backoff : 6);
			timer_arm(&timer_default_queue, &s->t_rexmit, clock_now_ns() + (d > TCP_RTO_MAX_NS ? TCP_RTO_MAX_NS : d));
			return;
		}
		s->persist = false;
		tcp_output(s);
		return;
	}
	if (s->snd_una == s->snd_max) {
		if (!tcp_output_idle(s))
			tcp_txwait_force(s); /* the device refused it or no netbuf was free (tcp_xmit):
					      * no loss, no backoff; a FIN too */
		return;
	}
	s->timeouts++;
	tcp_counters.timeouts++;
	s->backoff++;
	if (s->backoff > (s->state == TCP_SYN_RECEIVED && s->listener ? TCP_SYNACK_RETRIES
			  : s->state == TCP_SYN_SENT || s->state == TCP_SYN_RECEIVED ? TCP_SYN_RETRIES
										      : TCP_DATA_RETRIES)) {
		tcp_send_ctl(s, s->snd_nxt, TCP_RST | TCP_ACK);
		tcp_sock_closed(s, -ETIMEDOUT);
		return;
	}
	s->rto_ns *= 2;
	if (s->rto_ns > TCP_RTO_MAX_NS)
		s->rto_ns = TCP_RTO_MAX_NS;
	/* RFC 5681 (4): ssthresh = max(FlightSize / 2, 2 * SMSS), cwnd = 1 SMSS. */
	flight = s->snd_max - s->snd_una;
	s->ssthresh = flight / 2 > 2u * s->mss ? flight / 2 : 2u * s->mss;
	s->cwnd = s->mss;
	s->cwnd_acked = 0;
	s->dupacks = 0;
	s->in_recovery = false;
	s->timing = false; /* Karn: no sample from a retransmitted segment */
	s->retransmits++;
	tcp_counters.retransmits++;
	/* Go back to SND.UNA and send again from there. */
	s->snd_nxt = s->snd_una;
	if (s->state == TCP_SYN_SENT || s->state == TCP_SYN_RECEIVED) {
		s->snd_nxt = s->iss;
		tcp_output(s);
		return;
	}
	tcp_arm_rexmit(s);
	tcp_output(s);
}
