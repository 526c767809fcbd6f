/*
 * tcp_budget.c - receive windows within the NIC's receive buffer pool (see tcp.h).
 *
 * Every received payload fragment holds one of the device's receive buffers (netdev
 * rx_bufs) until the last holder releases it: the socket's queues, a user that took the
 * fragments, an echo send queue waiting for its ACK. Every byte a socket's advertised
 * window still allows will arrive in buffers too. The invariant kept here:
 *
 *     buffers lent out (rx_bufs_out)  +  buffers the open windows may still bring in
 *         <=  rx_bufs - reserve
 *
 * so the ring always has `reserve` buffers for header-only frames: the ACKs that free
 * held data, SYNs and FINs. A window is counted in full segments of the receive MSS (one
 * buffer each); out-of-order data already inside a window is counted once, as lent.
 * Counting small segments by their average size instead would make the large window of
 * a connection that carried a few small PDUs (an NVMe/TCP admin queue) look like
 * thousands of buffers and starve every other connection.
 * An idle connection keeps its promise until data uses it (a window is never shrunk), so
 * windows start small (TCP_RCV_CAP_INIT segments) and double each time the peer uses
 * most of one, like a receive-side slow start: a bulk transfer opens its window within a
 * few round trips, an idle admin queue or a chatty control connection stays small and
 * leaves room for the connections that come next. A socket may take at most its fair
 * share of what is free: usable / receiving sockets, at most usable /
 * TCP_BUDGET_MIN_SHARES. One or two bulk connections run at full window, 100 get a few
 * segments each. A socket held
 * below its share is marked starved; a timer hands it buffers as they come back and
 * announces the grown window (a window update), so no peer waits on its zero-window
 * probes' backoff. Should a peer send more buffers than promised (segments smaller than
 * the MSS), tcp_rx_buf_admit() refuses payload that would eat the reserve: the segment is
 * dropped like a lost one and retransmitted later.
 *
 * A device that neither lends buffers nor splits (rx_bufs 0 without NETDEV_F_RX_SPLIT:
 * e1000e's plain mode, the whole frame in a host buffer the driver gets back at once) has
 * the stack copy every payload into chunks
 * (tcp_pools.c), and those are what a window promises: each socket may borrow at most
 * TCP_CHUNK_BORROW_MAX of them, all sockets TCP_CHUNK_SHARED, and a user holding
 * received fragments (an NVMe/TCP write between its data and the drive's completion)
 * keeps them borrowed. The same invariant holds over chunks:
 *
 *     chunks s may still borrow  +  its out-of-order chunks  >=  chunks its window may bring
 *
 * with the other sockets' promises taken from the shared part first, and a chunk counted
 * as 7/8 of a segment (the last segment of a PDU is short but takes a whole chunk). Should
 * the chunks still run short (tiny segments), the segment at RCV.NXT takes them back from
 * the socket's out-of-order data (tcp_in.c): the data that fills the hole always fits. Otherwise a peer
 * that fills a 256 KiB window while the user holds earlier data finds its segments
 * dropped, the out-of-order ones pinning the last chunks, and the retransmission of the
 * missing one never finds a chunk: the connection stalls until its user gives up.
 */
#include "../../lib/clock.h"
#include "../../lib/log.h"
#include "tcp_internal.h"

LOG_MODULE_USE(tcp);

/* Unit builds (sanitizers on) check the incremental sums against a walk of every socket
 * at each window computed. */
#if defined(__SANITIZE_ADDRESS__)
#define TCP_BUDGET_CHECK 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TCP_BUDGET_CHECK 1
#endif
#endif

static struct timer tcp_budget_timer;

/* What the other sockets promise, kept as it changes rather than walked for every window
 * (tcp_budget_note): the sum of every listed socket's promised() and how many sockets are
 * receiving, and the bytes per buffer they were computed with (an MTU change recomputes). */
static unsigned long budget_promised;
static unsigned budget_receivers;
static uint32_t budget_bpb;

/* Device buffers kept free for header-only frames: an eighth of the pool, at least
 * TCP_RX_RESERVE_MIN, at most half. */
unsigned tcp_rx_reserve(const struct netdev *dev)
{
	return tcp_rx_reserve_of(dev->rx_bufs);
}

/* States in which the peer may still send us data (a window is open). */
static bool receiving(const struct tcp_sock *s)
{
	return s->state == TCP_SYN_RECEIVED || s->state == TCP_ESTABLISHED || s->state == TCP_FIN_WAIT_1 ||
	       s->state == TCP_FIN_WAIT_2;
}

/* After in-order data: double the window limit when the peer used most of the window
 * and sent at least half a window since the last growth, or when it sent a whole window
 * within TCP_RCV_CAP_PERIOD_NS. The second test is for the usual bulk transfer: the user
 * takes the data as it comes (an NVMe/TCP write's H2CData), every second segment's ACK
 * moves the window's edge on, so the window never looks used, yet it is what holds the
 * peer back (a Linux sender's congestion window does not grow past a receive window it
 * is limited by): measured 2026-11-28, a 16-segment window for good, 128 KiB writes at
 * half of Linux nvmet-tcp's rate. A peer that sends a few PDUs now and then (an admin
 * queue) never sends a window's worth within the period and stays small. */
void tcp_rcv_cap_grow(struct tcp_sock *s)
{
	if (s->rcv_cap >= TCP_RXQ_FRAGS_MAX)
		return; /* (header prediction tests this before the call: tcp_in.c rx_fast) */
	uint32_t cap = s->rcv_cap * tcp_rcv_bpb();
	uint32_t left = SEQ_GT(s->rcv_adv, s->rcv_nxt) ? s->rcv_adv - s->rcv_nxt : 0;
	uint64_t now = s->last_rx_ns;
	if (now - s->rcv_rate_ns > TCP_RCV_CAP_PERIOD_NS) {
		s->rcv_rate_ns = now; /* a new rate period */
		s->rcv_rate_seq = s->rcv_nxt;
	}
	if ((left < cap / 2 && s->rcv_nxt - s->rcv_cap_seq >= cap / 2) || s->rcv_nxt - s->rcv_rate_seq >= cap) {
		s->rcv_cap *= 2;
		s->win_full = 0; /* (a writer of rcv_cap: see tcp_internal.h) */
		s->rcv_cap_seq = s->rcv_nxt;
		s->rcv_rate_seq = s->rcv_nxt;
		s->rcv_rate_ns = now;
	}
}

/* Buffers s's advertised window may still bring in (out-of-order data already held
 * inside it is counted as lent, not here). */
static inline __attribute__((always_inline)) unsigned promised(const struct tcp_sock *s)
{
	uint32_t span, b = tcp_rcv_bpb();
	unsigned n;
	if (!receiving(s) || !SEQ_GT(s->rcv_adv, s->rcv_nxt))
		return 0;
	span = s->rcv_adv - s->rcv_nxt;
	n = (unsigned)((span + b - 1) / b);
	return n > s->ooo_frags ? n - s->ooo_frags : 0;
}

struct tcp_sock *tcp_budget_pending;

/* Recompute the sums from every socket (at an MTU change). */
static void budget_resum(void)
{
	struct list_node *it;
	tcp_budget_pending = NULL; /* every socket is noted below */
	budget_promised = 0;
	budget_receivers = 0;
	budget_bpb = tcp_rcv_bpb();
	list_for_each(&tcp_socks, it) {
		struct tcp_sock *o = container_of(it, struct tcp_sock, node);
		if (!o->bud_listed)
			continue;
		o->bud_promised = promised(o);
		o->bud_receiving = receiving(o);
		o->bud_nxt = o->rcv_nxt;
		budget_promised += o->bud_promised;
		budget_receivers += o->bud_receiving;
	}
}

/* s's window, state or out-of-order queue changed: bring its share of the sums up to date. */
void tcp_budget_note(struct tcp_sock *s)
{
	unsigned p;
	bool r;

	if (tcp_budget_pending == s)
		tcp_budget_pending = NULL; /* (the note that waited: made now) */
	if (!s->bud_listed)
		return; /* not in the table (tcp_send_reset's template) */
	if (budget_bpb != tcp_rcv_bpb()) {
		budget_resum();
		return;
	}
	p = promised(s);
	r = receiving(s);
	s->bud_nxt = s->rcv_nxt;
	budget_promised = budget_promised - s->bud_promised + p;
	budget_receivers = budget_receivers - s->bud_receiving + r;
	s->bud_promised = p;
	s->bud_receiving = r;
}

/* The note that waits (tcp_budget_note_later), made now. */
void tcp_budget_note_pending(void)
{
	if (tcp_budget_pending)
		tcp_budget_note(tcp_budget_pending);
}

/* s leaves the table: take its share out of the sums (what they count for it, noted or
 * not). */
void tcp_budget_forget(struct tcp_sock *s)
{
	if (tcp_budget_pending == s)
		tcp_budget_pending = NULL;
	if (!s->bud_listed)
		return;
	budget_promised -= s->bud_promised;
	budget_receivers -= s->bud_receiving;
	s->bud_promised = 0;
	s->bud_receiving = false;
	s->bud_listed = false;
}

/* The other sockets' promised buffers and how many of them receive (s not counted:
 * whatever the sums hold for s is taken out, so s need not be noted first). */
static inline __attribute__((always_inline)) void budget_others(struct tcp_sock *s, unsigned *others,
							  unsigned *receivers)
{
	/* The note that waited (tcp_budget_note_later), unless it is s's own: s's share is
	 * taken out below whatever it holds, so noting s first would only cost (the window's
	 * caller notes s when its advertised edge moves). */
	if (tcp_budget_pending && tcp_budget_pending != s)
		tcp_budget_note(tcp_budget_pending);
	if (budget_bpb != tcp_rcv_bpb())
		budget_resum();
	*others = (unsigned)(budget_promised - s->bud_promised);
	*receivers = budget_receivers - s->bud_receiving;
#ifdef TCP_BUDGET_CHECK
	unsigned walk_others = 0, walk_n = 0;
	struct list_node *it;
	list_for_each(&tcp_socks, it) {
		const struct tcp_sock *o = container_of(it, struct tcp_sock, node);
		if (o == s || !receiving(o))
			continue;
		walk_n++;
		walk_others += promised(o);
	}
	if (s->bud_listed && (walk_others != *others || walk_n != *receivers)) {
		log_err("budget sums drifted: promised %u (walk %u), receivers %u (walk %u)", *others, walk_others,
			  *receivers, walk_n);
		__builtin_trap();
	}
#endif
}


static void budget_kick(struct timer *t, void *arg);

/* Chunks one full segment's payload takes (copy mode). */
static unsigned chunks_per_seg(void)
{
	return (unsigned)((tcp_rcv_bpb() + TCP_CHUNK_SIZE - 1) / TCP_CHUNK_SIZE);
}

/* Copy mode (see the top of this file): the segments the chunks s may still borrow hold,
 * after the other sockets' promises, plus its out-of-order ones; *share: what it would
 * have were nothing held but the promises. */
static unsigned copy_budget(struct tcp_sock *s, unsigned *share)
{
	unsigned cps = chunks_per_seg(), others, receivers, room = tcp_chunk_rx_room(s), pool;

	budget_others(s, &others, &receivers);
	others *= cps;
	pool = TCP_CHUNK_SHARED > tcp_chunks_borrowed + others ? TCP_CHUNK_SHARED - tcp_chunks_borrowed - others : 0;
	if (room > pool)
		room = pool;
	*share = TCP_CHUNK_BORROW_MAX / cps;
	return room / cps + s->ooo_frags / cps;
}

/* tcp_rcv_window's end when the budget holds s below what its queue allows: the window
 * the budget gives, s marked starved when held below its fair share (and the kick armed).
 * Out of line: a bulk receiver's every window passes the budget. */
static __attribute__((noinline)) uint32_t rcv_window_held(struct tcp_sock *s, size_t by_budget, size_t space,
							   unsigned avail, unsigned share, size_t per)
{
	/* Starved: held below its fair share for want of free buffers, by a segment or by
	 * more than half (a socket at its share has nothing to wait for). */
	size_t fair = (size_t)(share + s->ooo_frags) * per;
	if (fair > space)
		fair = space;
	bool was = s->rwnd_starved;
	s->rwnd_starved = avail < share && (by_budget < s->mss || by_budget < fair / 2);
	if (s->rwnd_starved) {
		if (!was)
			tcp_counters.window_starved++;
		if (!tcp_budget_timer.armed)
			timer_arm(&timer_default_queue, &tcp_budget_timer, clock_now_ns() + TCP_BUDGET_KICK_NS);
	}
	return (uint32_t)by_budget;
}

/* tcp_rcv_window in copy mode (the device lends no buffers: chunks). */
static __attribute__((noinline)) uint32_t rcv_window_copy(struct tcp_sock *s, size_t space)
{
	unsigned share, bufs = copy_budget(s, &share);
	size_t per = tcp_rcv_bpb();
	per -= per / 8; /* a PDU's last segment is short but takes a whole chunk */
	size_t by_budget = (size_t)bufs * per;
	if (by_budget >= space) {
		s->rwnd_starved = false;
		return (uint32_t)space;
	}
	return rcv_window_held(s, by_budget, space, bufs, share, per); /* starved below its share for want of chunks */
}

/* s's win_full, win_full_bufs and win_bpb for bpb bytes per buffer (tcp_internal.h):
 * tcp_rcv_space's bounds with the queues empty. Out of line: only after a writer of rcv_cap
 * or mss invalidated them, or the MTU changed. */
static __attribute__((noinline)) void win_full_set(struct tcp_sock *s, uint32_t bpb)
{
	size_t w = TCP_RCV_BUF, by_frags = (size_t)TCP_RXQ_FRAGS_MAX * s->mss, by_cap = (size_t)s->rcv_cap * bpb;

	if (by_frags < w)
		w = by_frags;
	if (by_cap < w)
		w = by_cap;
	s->win_full = (uint32_t)w;
	s->win_full_bufs = (uint32_t)((w + bpb - 1) / bpb);
	s->win_bpb = bpb;
}

/* tcp_rcv_window's steady case: the user took everything (both queues empty), the device
 * lends buffers, no other socket's note waits and the sums are of this MTU. The window is
 * then tcp_rcv_space's, win_full, as long as the budget lets s promise its win_full_bufs
 * buffers: those on top of the buffers lent and every other socket's promise stay within
 * the usable part of the pool, and within s's fair share. That is two comparisons with
 * the sums, no division by the bytes per buffer and no note made; the full computation
 * (rcv_window_full) gives the same window whenever they hold (checked in unit builds).
 * Returns 0 when they do not (win_full is never 0): the full computation follows. */
static inline __attribute__((always_inline)) uint32_t rcv_window_steady(struct tcp_sock *s,
									 const struct netdev *d)
{
	uint32_t bpb, usable, n;

	if (s->rxq_bytes || (s->rxq_frags | s->ooo_frags) || !d || !d->rx_bufs ||
	    (tcp_budget_pending && tcp_budget_pending != s))
		return 0;
	bpb = d->mtu > 40 ? d->mtu - 40 : TCP_MSS_DEFAULT; /* (tcp_rcv_bpb) */
	if (bpb != budget_bpb)
		return 0; /* the sums are recomputed first (budget_others) */
	if (__builtin_expect(!s->win_full || s->win_bpb != bpb, 0))
		win_full_set(s, bpb);
	usable = d->rx_bufs - tcp_rx_reserve_of(d->rx_bufs);
	n = budget_receivers - s->bud_receiving + 1; /* (budget_others' receivers, s itself) */
	if ((uint64_t)d->rx_bufs_out + (budget_promised - s->bud_promised) + s->win_full_bufs > usable ||
	    usable / (n > TCP_BUDGET_MIN_SHARES ? n : TCP_BUDGET_MIN_SHARES) < s->win_full_bufs)
		return 0;
	s->rwnd_starved = false;
	return s->win_full;
}

/* The window we can offer: free queue bytes, bounded by free fragment slots and by the
 * device's buffer budget, or in copy mode by the chunks (see the top of this file).
 * Marks s starved when the budget held it below what its queue allows. Every case. Out of line: tcp_rcv_window's steady case saves no register for it. */
static __attribute__((noinline)) uint32_t rcv_window_full(struct tcp_sock *s)
{
	const struct netdev *d = net_if0.dev;
	unsigned usable, others, n, avail, share, bufs;
	bool budgeted;
	size_t space = tcp_rcv_space(s, &budgeted);

	if (!budgeted)
		return (uint32_t)space;
	if (!d->rx_bufs)
		return rcv_window_copy(s, space);
	size_t per = tcp_rcv_bpb();
	usable = d->rx_bufs - tcp_rx_reserve(d);
	budget_others(s, &others, &n);
	n++; /* s itself */
	avail = d->rx_bufs_out + others < usable ? usable - d->rx_bufs_out - others : 0;
	share = usable / (n > TCP_BUDGET_MIN_SHARES ? n : TCP_BUDGET_MIN_SHARES);
	bufs = (avail < share ? avail : share) + s->ooo_frags;
	size_t by_budget = (size_t)bufs * per;
	if (by_budget >= space) {
		s->rwnd_starved = false;
		return (uint32_t)space;
	}
	return rcv_window_held(s, by_budget, space, avail, share, per);
}

/* In unit builds: the steady window w is the full computation's (rwnd_starved left false). */
static inline __attribute__((always_inline)) void steady_check(struct tcp_sock *s, uint32_t w)
{
#ifdef TCP_BUDGET_CHECK
	uint32_t full = rcv_window_full(s);
	if (full != w || s->rwnd_starved) {
		log_err("steady receive window %u, computed %u", w, full);
		__builtin_trap();
	}
#else
	(void)s;
	(void)w;
#endif
}

/* The window we can offer (tcp_internal.h): rcv_window_steady's, else rcv_window_full's. */
uint32_t tcp_rcv_window(struct tcp_sock *s)
{
	uint32_t w = rcv_window_steady(s, net_if0.dev);

	if (!w)
		return rcv_window_full(s);
	steady_check(s, w);
	return w;
}

/* s's share of the sums after its edge moved to RCV.NXT + win, win the steady window
 * (win_full) or the WINDOW field's limit below it: promised() is then ceil(win / win_bpb)
 * (the queues are empty: no out-of-order buffer to take off), win_full_bufs for win_full,
 * when receiving, else 0. tcp_budget_note's tests of the MTU are not made again
 * (rcv_window_steady compared budget_bpb and win_bpb with it). Checked against promised()
 * in unit builds. */
static inline __attribute__((always_inline)) void note_steady_edge(struct tcp_sock *s, uint32_t win)
{
	bool r;
	unsigned p;

	if (tcp_budget_pending == s)
		tcp_budget_pending = NULL; /* (the note that waited: made now) */
	if (!s->bud_listed)
		return;
	r = receiving(s);
	p = !r ? 0 : win == s->win_full ? s->win_full_bufs : (win + s->win_bpb - 1) / s->win_bpb;
#ifdef TCP_BUDGET_CHECK
	if (p != promised(s)) {
		log_err("steady edge promises %u, computed %u", p, promised(s));
		__builtin_trap();
	}
#endif
	s->bud_nxt = s->rcv_nxt;
	budget_promised = budget_promised - s->bud_promised + p;
	budget_receivers = budget_receivers - s->bud_receiving + r;
	s->bud_promised = p;
	s->bud_receiving = r;
}

/* tcp_advertise's window and, when it is the steady one, its edge (tcp_internal.h). With
 * the steady window (win_full, at most the WINDOW field's limit) RFC 9293's rules are
 * tcp_advertise's: the edge never goes back (an edge behind RCV.NXT is first brought to
 * it), and moves to RCV.NXT + the window only by an MSS or more, or from RCV.NXT itself
 * (receiver SWS avoidance). Moved there, the note is note_steady_edge's. */
uint32_t tcp_rcv_window_advertise(struct tcp_sock *s, uint32_t *win)
{
	uint32_t w = rcv_window_steady(s, net_if0.dev), lim = (uint32_t)0xffff << s->rcv_wscale, adv, edge;

	if (!w) {
		*win = rcv_window_full(s);
		return 0;
	}
	steady_check(s, w);
	if (w > lim)
		w = lim;
	s->win_nxt = s->rcv_nxt;
	adv = SEQ_LT(s->rcv_adv, s->rcv_nxt) ? s->rcv_nxt : s->rcv_adv;
	edge = s->rcv_nxt + w;
	if (SEQ_GT(edge, adv) && (edge - adv >= s->mss || adv == s->rcv_nxt))
		adv = edge;
	if (adv != s->rcv_adv) {
		s->rcv_adv = adv;
		if (adv == edge)
			note_steady_edge(s, w);
		else
			tcp_budget_note(s);
	}
	return adv - s->rcv_nxt;
}

/* Buffers came back (or not yet): give starved sockets their window and tell their
 * peers, at most one update per socket per run. Re-armed while any stays starved. */
static void budget_kick(struct timer *t, void *arg)
{
	struct list_node *it;
	bool again = false;
	(void)t;
	(void)arg;

	list_for_each(&tcp_socks, it) {
		struct tcp_sock *s = container_of(it, struct tcp_sock, node);
		if (!s->rwnd_starved)
			continue;
		if (!receiving(s) || s->fin_rcvd) {
			s->rwnd_starved = false;
			continue;
		}
		uint32_t adv = SEQ_GT(s->rcv_adv, s->rcv_nxt) ? s->rcv_adv - s->rcv_nxt : 0;
		uint32_t now = tcp_rcv_window(s);
		if (now > (uint32_t)0xffff << s->rcv_wscale)
			now = (uint32_t)0xffff << s->rcv_wscale;
		if (now >= adv + s->mss || (adv < s->mss && now >= s->mss) || (adv == 0 && now > 0)) {
			tcp_counters.window_kicks++;
			tcp_send_ack_now(s);
		}
		again |= s->rwnd_starved;
	}
	if (again)
		timer_arm(&timer_default_queue, &tcp_budget_timer, clock_now_ns() + TCP_BUDGET_KICK_NS);
}

void tcp_budget_init(void)
{
	tcp_budget_pending = NULL;
	budget_promised = 0;
	budget_receivers = 0;
	budget_bpb = tcp_rcv_bpb();
	timer_init(&tcp_budget_timer, "tcp-budget", budget_kick, NULL);
}

void tcp_budget_fini(void)
{
	tcp_budget_pending = NULL;
	timer_cancel(&timer_default_queue, &tcp_budget_timer);
}
