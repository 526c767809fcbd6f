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
 * held data, SYNs and FINs. A window is counted in buffers by the socket's bytes per
 * buffer (a moving average of received payload per buffer: small segments cost a whole
 * buffer each); out-of-order data already inside a window is counted once, as lent.
 * A socket may take at most its fair share (usable / receiving sockets) of what is free;
 * one connection alone may use the whole pool, 100 get a few segments each. A socket held
 * below its want is marked starved; a timer hands it buffers as they come back and
 * announces the grown window (a window update), so no peer waits on its zero-window
 * probes' backoff. Should a peer still send more buffers than promised (segments smaller
 * than the average), tcp_rx_buf_admit() refuses payload that would eat the reserve: the
 * segment is dropped like a lost one and retransmitted later.
 */
#include "../../lib/clock.h"
#include "../../lib/log.h"
#include "tcp_internal.h"

LOG_MODULE_USE(tcp);

static struct timer tcp_budget_timer;

/* Device buffers kept free for header-only frames: an eighth of the pool, at least
 * TCP_RX_RESERVE_MIN, at most half. */
unsigned tcp_rx_reserve(const struct netdev *dev)
{
	unsigned r = dev->rx_bufs / 8;
	if (r < TCP_RX_RESERVE_MIN)
		r = TCP_RX_RESERVE_MIN;
	if (r > dev->rx_bufs / 2)
		r = dev->rx_bufs / 2;
	return r;
}

/* States in which the peer may still send us data (a window is open). */
static bool receiving(const struct tcp_sock *s)
{
	return s->state == TCP_SYN_RECEIVED || s->state == TCP_ESTABLISHED || s->state == TCP_FIN_WAIT_1 ||
	       s->state == TCP_FIN_WAIT_2;
}

static uint32_t bpb(const struct tcp_sock *s)
{
	if (s->rx_bpb)
		return s->rx_bpb;
	return net_if0.dev && net_if0.dev->mtu > 40 ? net_if0.dev->mtu - 40 : TCP_MSS_DEFAULT;
}

/* Account one received payload buffer of len bytes. */
void tcp_rx_bpb_sample(struct tcp_sock *s, uint32_t len)
{
	uint32_t b = bpb(s);
	s->rx_bpb = (7 * b + len + 7) / 8;
	if (s->rx_bpb == 0)
		s->rx_bpb = 1;
}

/* Buffers s's advertised window may still bring in (out-of-order data already held
 * inside it is counted as lent, not here). */
static unsigned promised(const struct tcp_sock *s)
{
	uint32_t span, b = bpb(s);
	unsigned n;
	if (!receiving(s) || !SEQ_GT(s->rcv_adv, s->rcv_nxt))
		return 0;
	span = s->rcv_adv - s->rcv_nxt;
	n = (unsigned)((span + b - 1) / b);
	return n > s->ooo_frags ? n - s->ooo_frags : 0;
}

/* May a received payload buffer be kept? Not when it came out of the reserve. */
bool tcp_rx_buf_admit(void)
{
	const struct netdev *d = net_if0.dev;
	if (!d || !d->rx_bufs)
		return true;
	return d->rx_bufs_out <= d->rx_bufs - tcp_rx_reserve(d);
}

static void budget_kick(struct timer *t, void *arg);

/* The window we can offer: free queue bytes, bounded by free fragment slots and by the
 * device's buffer budget (see the top of this file). Marks s starved when the budget
 * held it below what its queue allows. */
uint32_t tcp_rcv_window(struct tcp_sock *s)
{
	size_t space = TCP_RCV_BUF > s->rxq_bytes ? TCP_RCV_BUF - s->rxq_bytes : 0;
	unsigned frags = s->rxq_frags + s->ooo_frags;
	size_t by_frags = frags < TCP_RXQ_FRAGS_MAX ? (size_t)(TCP_RXQ_FRAGS_MAX - frags) * s->mss : 0;
	const struct netdev *d = net_if0.dev;
	struct list_node *it;
	unsigned usable, others = 0, n = 1, avail, share, bufs;
	size_t by_budget;

	if (by_frags < space)
		space = by_frags;
	if (!d || !d->rx_bufs)
		return (uint32_t)space;
	usable = d->rx_bufs - tcp_rx_reserve(d);
	list_for_each(&tcp_socks, it) {
		const struct tcp_sock *o = container_of(it, struct tcp_sock, node);
		if (o == s || !receiving(o))
			continue;
		n++;
		others += promised(o);
	}
	avail = d->rx_bufs_out + others < usable ? usable - d->rx_bufs_out - others : 0;
	share = usable / n;
	bufs = (avail < share ? avail : share) + s->ooo_frags;
	by_budget = (size_t)bufs * bpb(s);
	if (by_budget >= space) {
		s->rwnd_starved = false;
		return (uint32_t)space;
	}
	/* Starved: held below its fair share for want of free buffers, by a segment or by
	 * more than half (a socket at its share has nothing to wait for). */
	size_t fair = (size_t)(share + s->ooo_frags) * bpb(s);
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
	timer_init(&tcp_budget_timer, "tcp-budget", budget_kick, NULL);
}

void tcp_budget_fini(void)
{
	timer_cancel(&timer_default_queue, &tcp_budget_timer);
}
