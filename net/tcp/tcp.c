/*
 * tcp.c - TCP sockets: pools, lifecycle, timers of a connection's end, and the user API
 * (see tcp.h). Segment arrival is tcp_in.c, output tcp_out.c.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "../../lib/clock.h"
#include "../../lib/log.h"
#include "../../mm/pool.h"
#include "tcp_internal.h"

LOG_MODULE_DEFINE(tcp);

unsigned tcp_ack_every = TCP_ACK_EVERY_DEFAULT;

/* net.tcp_ack_every. */
void tcp_set_ack_every(unsigned segs)
{
	tcp_ack_every = segs < 2 ? 2 : segs;
}

uint64_t tcp_ack_hold_ns = TCP_ACK_HOLD_US_DEFAULT * 1000ull;

/* net.tcp_ack_hold_us. */
void tcp_set_ack_hold_us(unsigned us)
{
	tcp_ack_hold_ns = (uint64_t)(us < TCP_ACK_HOLD_US_MAX ? us : TCP_ACK_HOLD_US_MAX) * 1000;
}

/* The user has taken the bytes before rcv_nxt - rxq_bytes and will answer them: see
 * tcp.h; tcp_rx_batch_end decides (tcp_out.c). */
void tcp_ack_hold(struct tcp_sock *s)
{
	if (!s)
		return;
	s->ack_hold = true;
	s->ack_hold_seq = s->rcv_nxt - (uint32_t)s->rxq_bytes;
}

#define TCP_EPHEMERAL_FIRST 49152

struct tcp_stats tcp_counters;
struct list_node tcp_socks = LIST_HEAD_INIT(tcp_socks);
static struct mm_pool tcp_sock_pool;
struct mm_pool tcp_sndent_pool, tcp_rxent_pool;
struct list_node tcp_rxent_cache = { &tcp_rxent_cache, &tcp_rxent_cache };
unsigned tcp_rxent_cached;

/* Every cached receive entry back to the pool (a socket freed, shutdown): a bounded walk
 * (at most TCP_RXENTS), so that a closed connection leaves the pool as it found it. */
void tcp_rxent_cache_drain(void)
{
	while (tcp_rxent_cache.next != &tcp_rxent_cache) {
		struct list_node *it = tcp_rxent_cache.next;
		list_del(it);
		mm_pool_free(&tcp_rxent_pool, container_of(it, struct tcp_rxent, node));
	}
	tcp_rxent_cached = 0;
}
static bool tcp_ready;
static uint16_t tcp_next_port = TCP_EPHEMERAL_FIRST;

static const char *const state_names[TCP_STATE_COUNT] = {
	"CLOSED", "LISTEN", "SYN_SENT", "SYN_RECEIVED", "ESTABLISHED", "FIN_WAIT_1",
	"FIN_WAIT_2", "CLOSE_WAIT", "CLOSING", "LAST_ACK", "TIME_WAIT",
};

const char *tcp_state_name(enum tcp_state st)
{
	return st < TCP_STATE_COUNT ? state_names[st] : "?";
}

/* --- lifecycle --------------------------------------------------------------------- */

int tcp_init(void)
{
	int rc;
	memset(&tcp_counters, 0, sizeof(tcp_counters));
	list_init(&tcp_socks);
	tcp_next_port = TCP_EPHEMERAL_FIRST;
	tcp_isn_init();
	list_init(&tcp_rxent_cache);
	tcp_rxent_cached = 0;
	if ((rc = mm_pool_init(&tcp_sock_pool, "tcp_sock", sizeof(struct tcp_sock), TCP_SOCKETS)))
		return rc;
	if ((rc = mm_pool_init(&tcp_rxent_pool, "tcp_rxent", sizeof(struct tcp_rxent), TCP_RXENTS)))
		goto err_sock;
	if ((rc = mm_pool_init(&tcp_sndent_pool, "tcp_sndent", sizeof(struct tcp_sndent), TCP_SNDENTS)))
		goto err_rx;
	if ((rc = tcp_pools_init()))
		goto err_snd;
	tcp_budget_init();
	tcp_ready = true;
	return 0;
err_snd:
	mm_pool_destroy(&tcp_sndent_pool);
err_rx:
	mm_pool_destroy(&tcp_rxent_pool);
err_sock:
	mm_pool_destroy(&tcp_sock_pool);
	return rc;
}

int tcp_shutdown(void)
{
	if (!tcp_ready)
		return 0;
	while (!list_empty(&tcp_socks))
		tcp_sock_free(container_of(tcp_socks.next, struct tcp_sock, node));
	tcp_budget_fini();
	tcp_rxent_cache_drain();
	if (tcp_sock_pool.in_use || tcp_rxent_pool.in_use || tcp_sndent_pool.in_use || tcp_pools_busy())
		return -EBUSY;
	tcp_pools_fini();
	mm_pool_destroy(&tcp_sndent_pool);
	mm_pool_destroy(&tcp_rxent_pool);
	mm_pool_destroy(&tcp_sock_pool);
	tcp_ready = false;
	return 0;
}

void tcp_set_state(struct tcp_sock *s, enum tcp_state st)
{
	if (s->state == st)
		return;
	log_debug("%u->%u: %s -> %s", s->lport, s->rport, tcp_state_name(s->state), tcp_state_name(st));
	s->state = st;
	tcp_budget_note(s);
}

void tcp_notify(struct tcp_sock *s, unsigned events)
{
	if (!s->user_closed && s->ops && s->ops->event && !s->listener)
		s->ops->event(s, s->ctx, events);
}

static void keep_timer(struct timer *t, void *arg);
static void delack_timer(struct timer *t, void *arg);

/* t_sendwake: the user whose send was refused is told TCP_EV_SENT, to try again (a
 * refusal again arms it again, tcp_send_refused). */
static void sendwake_timer(struct timer *t, void *arg)
{
	struct tcp_sock *s = arg;
	(void)t;
	if (!s->send_refused || s->state == TCP_CLOSED)
		return;
	s->send_refused = false;
	s->ack_sent_ev = s->ack_sent_idle; /* (the event owed: this one) */
	tcp_notify(s, TCP_EV_SENT);
}

/* A send of s refused for want of room. The user waits for TCP_EV_SENT: an ACK brings it
 * while something of s's is in flight, tcp_send_wake when entries a device held past
 * their ACK come back. With no entry of its own queued or held (it asked for more than its
 * reserve while other sockets hold the shared part of the pools), nothing of s's would
 * ever bring it: it is told again after TCP_TX_RETRY_NS, and again while it stays
 * refused, until what the other sockets hold comes back. */
void tcp_send_refused(struct tcp_sock *s)
{
	s->send_refused = true;
	s->ack_sent_ev = TCP_EV_SENT; /* (owed: the next ACK of new bytes raises it) */
	tcp_counters.send_refused++;
	if (s->sndents == 0 && !s->t_sendwake.armed)
		timer_arm(&timer_default_queue, &s->t_sendwake, clock_now_ns() + TCP_TX_RETRY_NS);
}

/* Entries of s held by a device past their ACK came back (tcp_sndent_free_unlocked) while
 * s's user waits after a refusal: the ACK's TCP_EV_SENT came before the room did, and with
 * nothing in flight no other ACK would come. TCP_EV_SENT from the next timer run: never
 * from inside the release (a device's completion, a socket being freed). */
void tcp_send_wake(struct tcp_sock *s)
{
	uint64_t now = clock_now_ns();
	if (!s->t_sendwake.armed || s->t_sendwake.deadline_ns > now)
		timer_arm(&timer_default_queue, &s->t_sendwake, now);
}

/* tcp_send_place's NULL for want of room (tcp_send_refused). Out of line: rare. */
static __attribute__((noinline, cold)) void *send_place_refused(struct tcp_sock *s)
{
	tcp_send_refused(s);
	return NULL;
}

/* A zeroed socket on the socket list, its timers ready; NULL when the table is full. */
struct tcp_sock *tcp_sock_new(void)
{
	struct tcp_sock *s;
	if (!tcp_ready || !(s = mm_pool_zalloc(&tcp_sock_pool)))
		return NULL;
	list_init(&s->children);
	list_init(&s->child_node);
	list_init(&s->sndq);
	list_init(&s->rxq);
	list_init(&s->ooo);
	list_init(&s->held_node);
	list_init(&s->txwait_node);
	timer_init(&s->t_rexmit, "tcp-rexmit", tcp_rexmit_timer, s);
	timer_init(&s->t_delack, "tcp-delack", delack_timer, s);
	timer_init(&s->t_keep, "tcp-keep", keep_timer, s);
	timer_init(&s->t_sendwake, "tcp-sendwake", sendwake_timer, s);
	s->ack_sent_ev = s->ack_sent_idle = TCP_EV_SENT; /* (every ACK of new bytes: the default) */
	s->rto_ns = TCP_RTO_INITIAL_NS;
	s->mss = TCP_MSS_DEFAULT;
	s->rcv_cap = TCP_RCV_CAP_INIT;
	s->ssthresh = 0xffffffffu;
	s->born_ns = clock_now_ns();
	s->bud_listed = true; /* CLOSED: nothing promised yet */
	tcp_pools_sock_new(s, (unsigned)(((uint8_t *)s - tcp_sock_pool.mem) / tcp_sock_pool.obj_size));
	list_add_tail(&tcp_socks, &s->node);
	return s;
}

static void rx_list_free(struct list_node *l)
{
	struct list_node *it, *tmp;
	list_for_each_safe(l, it, tmp) {
		struct tcp_rxent *r = container_of(it, struct tcp_rxent, node);
		list_del(it);
		netdev_frag_release(&r->frag);
		mm_pool_free(&tcp_rxent_pool, r);
	}
}

static void sndq_drop(struct tcp_sock *s)
{
	struct list_node *it, *tmp;
	list_for_each_safe(&s->sndq, it, tmp) {
		struct tcp_sndent *e = container_of(it, struct tcp_sndent, node);
		list_del(it);
		e->done = true;
		tcp_sndent_put(e);
	}
	s->sndq_bytes = 0;
	s->snd_cursor = NULL;
}

/* Free everything a socket holds (children of a listener too). */
void tcp_sock_free(struct tcp_sock *s)
{
	struct list_node *it, *tmp;

	list_for_each_safe(&s->children, it, tmp) {
		struct tcp_sock *c = container_of(it, struct tcp_sock, child_node);
		tcp_send_ctl(c, c->snd_nxt, TCP_RST | TCP_ACK);
		tcp_sock_free(c);
	}
	/* Half-open children are not on the accept queue: find them by listener. */
	list_for_each_safe(&tcp_socks, it, tmp) {
		struct tcp_sock *c = container_of(it, struct tcp_sock, node);
		if (c->listener == s)
			tcp_sock_free(c);
	}
	if (s->listener) {
		s->listener->n_children--;
		s->listener = NULL;
	}
	list_del(&s->child_node);
	timer_cancel(&timer_default_queue, &s->t_rexmit);
	timer_cancel(&timer_default_queue, &s->t_delack);
	timer_cancel(&timer_default_queue, &s->t_keep);
	s->send_refused = false; /* (so that sndq_drop's frees arm nothing) */
	timer_cancel(&timer_default_queue, &s->t_sendwake);
	rx_list_free(&s->rxq);
	rx_list_free(&s->ooo);
	sndq_drop(s);
	list_del(&s->node);
	tcp_output_forget(s);
	tcp_pools_sock_gone(s);
	if (tcp_rx_last == s)
		tcp_rx_last = NULL;
	if (tcp_rx_gro == s)
		tcp_rx_gro = NULL; /* (its gathered event goes nowhere now) */
	tcp_budget_forget(s);
	tcp_sock_frees++;
	tcp_rxent_cache_drain();
	mm_pool_free(&tcp_sock_pool, s);
}

/* The connection is over (reset, timeout, or done): free it if the user let go,
 * otherwise tell the user, who frees it with tcp_close(). */
void tcp_sock_closed(struct tcp_sock *s, int error)
{
	tcp_set_state(s, TCP_CLOSED);
	if (!s->error)
		s->error = error;
	timer_cancel(&timer_default_queue, &s->t_rexmit);
	timer_cancel(&timer_default_queue, &s->t_delack);
	timer_cancel(&timer_default_queue, &s->t_keep);
	s->send_refused = false; /* (so that sndq_drop's frees arm nothing) */
	timer_cancel(&timer_default_queue, &s->t_sendwake);
	sndq_drop(s);
	if (s->user_closed || s->listener) {
		tcp_sock_free(s);
		return;
	}
	tcp_notify(s, TCP_EV_CLOSED);
}

/* TIME_WAIT for 2 MSL. */
void tcp_enter_time_wait(struct tcp_sock *s)
{
	tcp_set_state(s, TCP_TIME_WAIT);
	timer_cancel(&timer_default_queue, &s->t_rexmit);
	timer_arm(&timer_default_queue, &s->t_keep, clock_now_ns() + 2 * TCP_MSL_NS);
}

/* (Re)arm the keep-alive timer from the peer's last segment: only with keep-alive on, in
 * ESTABLISHED or CLOSE_WAIT (t_keep serves TIME_WAIT and FIN_WAIT_2 otherwise). */
void tcp_keep_arm(struct tcp_sock *s)
{
	if (s->keep_idle_ns && (s->state == TCP_ESTABLISHED || s->state == TCP_CLOSE_WAIT))
		timer_arm(&timer_default_queue, &s->t_keep, s->last_rx_ns + s->keep_idle_ns);
}

/* t_keep: TIME_WAIT end, FIN_WAIT_2 timeout, or keepalive. */
static void keep_timer(struct timer *t, void *arg)
{
	struct tcp_sock *s = arg;
	uint64_t now = clock_now_ns();
	(void)t;

	if (s->state == TCP_TIME_WAIT) {
		tcp_sock_closed(s, 0);
		return;
	}
	if (s->state == TCP_FIN_WAIT_2 && s->user_closed) {
		tcp_sock_closed(s, -ETIMEDOUT);
		return;
	}
	if (!s->keep_idle_ns || (s->state != TCP_ESTABLISHED && s->state != TCP_CLOSE_WAIT))
		return;
	if (now - s->last_rx_ns < s->keep_idle_ns) {
		tcp_keep_arm(s);
		return;
	}
	if (s->snd_una != s->snd_end) {
		/* Data in flight or queued: retransmission and persist bound this wait. */
		timer_arm(&timer_default_queue, &s->t_keep, now + s->keep_idle_ns);
		return;
	}
	if (s->keep_probes >= s->keep_count) {
		tcp_send_ctl(s, s->snd_nxt, TCP_RST | TCP_ACK);
		tcp_sock_closed(s, -ETIMEDOUT);
		return;
	}
	/* RFC 9293 3.8.4: a segment with SEG.SEQ = SND.NXT - 1 and no data draws an ACK. */
	s->keep_probes++;
	tcp_counters.keepalive_probes++;
	tcp_send_ctl(s, s->snd_nxt - 1, TCP_ACK);
	timer_arm(&timer_default_queue, &s->t_keep, now + s->keep_intvl_ns);
}

static void delack_timer(struct timer *t, void *arg)
{
	struct tcp_sock *s = arg;
	if (s->ack_delayed) {
		/* Armed for an older ACK (left armed when that one went out, tcp_xmit): the clock
		 * is past t's deadline only, so wait for this one's own. */
		if (s->ack_due_ns > t->deadline_ns) {
			timer_arm(&timer_default_queue, t, s->ack_due_ns);
			return;
		}
		if (s->ack_held)
			tcp_counters.ack_hold_expired++; /* no answer within net.tcp_ack_hold_us */
		else
			tcp_counters.delayed_acks++;
		tcp_send_ack_now(s);
	}
}

/* Free entries of the socket table. */
unsigned tcp_sock_free_slots(void)
{
	return (unsigned)(tcp_sock_pool.capacity - tcp_sock_pool.in_use);
}

/* The connection the last segment went to (tcp_lookup_rx), NULL when it is freed. */
struct tcp_sock *tcp_rx_last;
/* Sockets freed since boot: a caller that holds a socket pointer across code that may
 * free sockets knows the pointer is still good while this has not moved. */
unsigned long tcp_sock_frees;

/* tcp_lookup for a received segment: a connection's segments come in runs, so the
 * socket of the last one is tried first. Only a connection (not a listener, not CLOSED)
 * is remembered, and at most one such socket has a given 4-tuple (a listener makes a
 * child only when there is none, tcp_connect picks a free one), so the answer is
 * tcp_lookup's. */
struct tcp_sock *tcp_lookup_rx_slow(uint32_t laddr, uint16_t lport, uint32_t raddr, uint16_t rport)
{
	struct tcp_sock *s = tcp_lookup(laddr, lport, raddr, rport);
	tcp_rx_last = s && s->state != TCP_LISTEN ? s : NULL;
	return s;
}

/* The connection for a 4-tuple, else the listener on lport, else NULL. */
struct tcp_sock *tcp_lookup(uint32_t laddr, uint16_t lport, uint32_t raddr, uint16_t rport)
{
	struct tcp_sock *listener = NULL;
	struct list_node *it;
	list_for_each(&tcp_socks, it) {
		struct tcp_sock *s = container_of(it, struct tcp_sock, node);
		if (s->lport != lport)
			continue;
		if (s->state == TCP_LISTEN) {
			listener = s;
			continue;
		}
		if (s->state != TCP_CLOSED && s->rport == rport && s->raddr == raddr && s->laddr == laddr)
			return s;
	}
	return listener;
}

/* --- user API ---------------------------------------------------------------------- */

int tcp_listen(uint16_t port, unsigned backlog, const struct tcp_ops *ops, void *ctx, struct tcp_sock **out)
{
	struct list_node *it;
	struct tcp_sock *s;

	if (port == 0 || backlog == 0)
		return -EINVAL;
	if (!(backlog = tcp_admit_backlog(backlog)))
		return -ENOSPC;
	list_for_each(&tcp_socks, it) {
		struct tcp_sock *o = container_of(it, struct tcp_sock, node);
		if (o->lport == port && o->state == TCP_LISTEN)
			return -EADDRINUSE;
	}
	if (!(s = tcp_sock_new()))
		return -ENOMEM;
	s->lport = port;
	s->backlog = backlog;
	s->ops = ops;
	s->ctx = ctx;
	tcp_set_state(s, TCP_LISTEN);
	*out = s;
	return 0;
}

struct tcp_sock *tcp_accept(struct tcp_sock *l)
{
	struct tcp_sock *c;
	if (l->state != TCP_LISTEN || list_empty(&l->children))
		return NULL;
	c = container_of(l->children.next, struct tcp_sock, child_node);
	list_del(&c->child_node);
	l->n_children--;
	c->listener = NULL;
	/* Announced by tcp_set_ops: send space, and anything that arrived before accept. */
	c->pending_events |= TCP_EV_SENT;
	if (c->rxq_bytes || c->fin_rcvd)
		c->pending_events |= TCP_EV_RECV;
	return c;
}

int tcp_connect(uint32_t addr, uint16_t port, const struct tcp_ops *ops, void *ctx, struct tcp_sock **out)
{
	struct tcp_sock *s;
	uint16_t lport = 0;

	if (!net_if0.dev)
		return -ENETDOWN;
	for (unsigned tries = 0; tries < 16384 && !lport; tries++) {
		uint16_t p = tcp_next_port++;
		if (tcp_next_port == 0)
			tcp_next_port = TCP_EPHEMERAL_FIRST;
		struct tcp_sock *o = tcp_lookup(net_if0.addr, p, addr, port);
		if (!o || o->state == TCP_LISTEN)
			lport = p;
	}
	if (!lport)
		return -EADDRINUSE;
	if (!(s = tcp_sock_new()))
		return -ENOMEM;
	s->laddr = net_if0.addr;
	s->raddr = addr;
	s->lport = lport;
	s->rport = port;
	s->ops = ops;
	s->ctx = ctx;
	s->iss = tcp_new_iss(s->laddr, addr, lport, port);
	s->snd_una = s->snd_nxt = s->snd_max = s->iss;
	s->snd_end = s->iss + 1;
	s->rcv_wscale = TCP_RCV_WSCALE;
	s->last_rx_ns = clock_now_ns();
	tcp_set_state(s, TCP_SYN_SENT);
	s->timing = true;
	s->rtt_seq = s->iss + 1;
	s->rtt_start_ns = clock_now_ns();
	tcp_output(s);
	*out = s;
	return 0;
}

void tcp_set_ops(struct tcp_sock *s, const struct tcp_ops *ops, void *ctx)
{
	s->ops = ops;
	s->ctx = ctx;
	if (s->pending_events)
		tcp_deliver_events(s);
}

void tcp_set_sent_when_owed(struct tcp_sock *s)
{
	s->ack_sent_idle = 0;
	if (!s->send_refused)
		s->ack_sent_ev = 0;
}

void tcp_set_keepalive(struct tcp_sock *s, uint64_t idle_ns, uint64_t intvl_ns, unsigned count)
{
	s->keep_idle_ns = idle_ns;
	s->keep_intvl_ns = intvl_ns ? intvl_ns : NSEC_PER_SEC;
	s->keep_count = count ? count : 1;
	s->keep_probes = 0;
	if (s->state == TCP_LISTEN)
		return; /* inherited by the connections it accepts */
	if (idle_ns)
		tcp_keep_arm(s);
	else if (s->state != TCP_TIME_WAIT && s->state != TCP_FIN_WAIT_2)
		timer_cancel(&timer_default_queue, &s->t_keep);
}

size_t tcp_recv_avail(const struct tcp_sock *s)
{
	return s->rxq_bytes;
}

bool tcp_recv_eof(const struct tcp_sock *s)
{
	return s->fin_rcvd && s->rxq_bytes == 0;
}

/* Would a window of now bytes (adv advertised) be announced? Monotone in now. */
static bool window_update_due(const struct tcp_sock *s, uint32_t now, uint32_t adv)
{
	if (now > (uint32_t)0xffff << s->rcv_wscale)
		now = (uint32_t)0xffff << s->rcv_wscale; /* the most the header can say */
	if (now <= adv)
		return false;
	return now - adv >= 2u * s->mss || (adv < s->mss && now >= s->mss) || now >= TCP_RCV_BUF / 2 + adv;
}

/* Might window_update announce anything for s? Not outside the states that receive, nor
 * while the receive batch's ACK, owed at its end, carries the window (tcp_rx_batch_end;
 * held for an answer only while the window is not small, tcp_out.c). No side effect. */
static inline __attribute__((always_inline)) bool window_update_may(const struct tcp_sock *s)
{
	return (s->state == TCP_ESTABLISHED || s->state == TCP_FIN_WAIT_1 || s->state == TCP_FIN_WAIT_2) &&
	       !(s->ack_pass_end && !list_empty(&s->held_node));
}

/* After the user consumed bytes, and window_update_may said yes: announce a window that
 * opened by enough beyond the one advertised (receiver silly-window avoidance, RFC 9293
 * 3.8.6.2.2). */
static __attribute__((noinline)) void window_update(struct tcp_sock *s)
{
	uint32_t adv;
	adv = SEQ_GT(s->rcv_adv, s->rcv_nxt) ? s->rcv_adv - s->rcv_nxt : 0;
	/* The test is monotone in the window: when even the bound without the buffer budget
	 * would not be announced, the budget's sums need not be walked (the usual case: a user
	 * that takes each segment as it comes leaves the window where it was). That bound is
	 * first taken from win_full (tcp_rcv_window_max_known: at least the bound whatever the
	 * queues hold) instead of tcp_rcv_space's sums: when even it is not announced, neither
	 * is the exact bound. */
	uint32_t known = tcp_rcv_window_max_known(s);
	if (known && !window_update_due(s, known, adv))
		return;
	if (!window_update_due(s, tcp_rcv_window_max(s), adv))
		return;
	if (window_update_due(s, tcp_rcv_window(s), adv))
		tcp_send_ack_now(s);
}

/* The fragments of s's whole entries from the head of its queue into out, at most max, all
 * of them fitting (the caller's max_bytes at least RXQ bytes): the count, *it the first entry
 * left (the queue's head when none is), *taken the bytes. The queue is left as it was. */
static inline __attribute__((always_inline)) unsigned rxq_copy_all(const struct tcp_sock *s, struct netdev_frag *out,
								  unsigned max, struct list_node **it, size_t *taken)
{
	struct list_node *i = s->rxq.next;
	size_t t = 0;
	unsigned n = 0;

	/* the count and the queue's end alone bound the walk */
	while (n < max && i != &s->rxq) {
		struct tcp_rxent *r = container_of(i, struct tcp_rxent, node);
		i = i->next;
		tcp_frag_copy(&out[n++], &r->frag);
		t += r->frag.len;
	}
	*it = i;
	*taken = t;
	return n;
}

/* The n (> 0) entries before it, taken bytes in all, from the head of s's queue to the
 * entry cache in one splice (tcp_rxent_cache: the next segments take them), the socket's
 * sums written once. */
static inline __attribute__((always_inline)) void rxq_drop_head(struct tcp_sock *s, struct list_node *it, unsigned n,
								 size_t taken)
{
	struct list_node *first = s->rxq.next, *last = it->prev, *c = tcp_rxent_cache.next;

	s->rxq.next = it;
	it->prev = &s->rxq;
	last->next = c;
	c->prev = last;
	tcp_rxent_cache.next = first;
	first->prev = &tcp_rxent_cache;
	tcp_rxent_cached += n;
	s->rxq_bytes -= taken;
	s->rxq_frags -= n;
}

/* tcp_recv_frags's general case and tcp_recv_frags_len in one body (the bytes taken are
 * summed anyway). */
static inline __attribute__((always_inline)) int recv_frags(struct tcp_sock *s, struct netdev_frag *out,
							    unsigned max, size_t max_bytes, size_t *took)
{
	struct list_node *it;
	size_t taken;
	unsigned n;

	/* Whole entries from the head, moved from the queue to the entry cache after the walk. */
	if (max_bytes >= s->rxq_bytes) {
		n = rxq_copy_all(s, out, max, &it, &taken); /* (every entry fits) */
	} else {
		it = s->rxq.next;
		taken = 0;
		n = 0;
		while (n < max && it != &s->rxq) {
			struct tcp_rxent *r = container_of(it, struct tcp_rxent, node);
			if (r->frag.len > max_bytes - taken)
				break;
			it = it->next;
			tcp_frag_copy(&out[n++], &r->frag);
			taken += r->frag.len;
		}
	}
	if (n)
		rxq_drop_head(s, it, n, taken);
	/* The front of an entry longer than what is left of max_bytes. */
	if (n < max && it != &s->rxq && max_bytes > taken) {
		struct tcp_rxent *r = container_of(it, struct tcp_rxent, node);
		struct netdev_frag tail;
		size_t want = max_bytes - taken;
		if (!netdev_frag_split(&r->frag, want, &tail)) {
			out[n++] = r->frag;
			s->rxq_bytes -= r->frag.len;
			taken += r->frag.len;
			r->frag = tail;
			r->seq += (uint32_t)want;
		}
	}
	/* window_update's first tests inline (the usual answer: the batch's held ACK carries the
	 * window), its call only past them */
	if (n && window_update_may(s))
		window_update(s);
	*took = taken;
	return (int)n;
}

/* recv_frags for a call that takes less than s holds (max_bytes < RXQ bytes: an entry may
 * be cut), out of line. */
static __attribute__((noinline)) int recv_frags_bounded(struct tcp_sock *s, struct netdev_frag *out, unsigned max,
							size_t max_bytes)
{
	size_t took;
	return recv_frags(s, out, max, max_bytes, &took);
}

/* window_update(s), then n: the tail of tcp_recv_frags, which keeps no register for n. */
static __attribute__((noinline)) int window_update_then(struct tcp_sock *s, int n)
{
	window_update(s);
	return n;
}

/* recv_frags when every entry fits max_bytes (the usual caller's SIZE_MAX: its first walk,
 * rxq_copy_all, and no entry cut, as the walk stops at the queue's end or at max), each call a
 * jump, so that it keeps no register: the general case to recv_frags_bounded, window_update
 * (when window_update_may) through window_update_then. */
int tcp_recv_frags(struct tcp_sock *s, struct netdev_frag *out, unsigned max, size_t max_bytes)
{
	struct list_node *it;
	size_t taken;
	unsigned n;

	if (__builtin_expect(max_bytes < s->rxq_bytes, 0))
		return recv_frags_bounded(s, out, max, max_bytes);
	n = rxq_copy_all(s, out, max, &it, &taken);
	if (!n)
		return 0;
	rxq_drop_head(s, it, n, taken);
	if (window_update_may(s))
		return window_update_then(s, (int)n);
	return (int)n;
}

int tcp_recv_frags_len(struct tcp_sock *s, struct netdev_frag *out, unsigned max, size_t max_bytes, size_t *took)
{
	return recv_frags(s, out, max, max_bytes, took);
}

size_t tcp_recv_copy(struct tcp_sock *s, void *buf, size_t len)
{
	uint8_t *o = buf;
	size_t done = 0;

	while (done < len && !list_empty(&s->rxq)) {
		struct tcp_rxent *r = container_of(s->rxq.next, struct tcp_rxent, node);
		size_t n = r->frag.len < len - done ? r->frag.len : len - done;
		netdev_frag_read(&r->frag, 0, o + done, n);
		done += n;
		s->rxq_bytes -= n;
		if (n == r->frag.len) {
			list_del(&r->node);
			s->rxq_frags--;
			netdev_frag_release(&r->frag);
			mm_pool_free(&tcp_rxent_pool, r);
		} else {
			r->frag.addr = dma_addr_add(r->frag.addr, n);
			r->frag.offset += n;
			r->frag.len -= (uint32_t)n;
			r->seq += (uint32_t)n;
		}
	}
	if (done && window_update_may(s))
		window_update(s);
	return done;
}

int tcp_peek(const struct tcp_sock *s, size_t off, void *buf, size_t len)
{
	struct list_node *it;
	uint8_t *o = buf;

	if (len > s->rxq_bytes || off > s->rxq_bytes - len)
		return -EAGAIN;
	list_for_each(&s->rxq, it) {
		const struct tcp_rxent *r = container_of(it, struct tcp_rxent, node);
		if (!len)
			break;
		if (off >= r->frag.len) {
			off -= r->frag.len;
			continue;
		}
		size_t n = r->frag.len - off < len ? r->frag.len - off : len;
		netdev_frag_read(&r->frag, off, o, n);
		o += n;
		len -= n;
		off = 0;
	}
	return 0;
}

int tcp_peek8(const struct tcp_sock *s, uint8_t buf[8])
{
	if (!list_empty(&s->rxq)) {
		const struct tcp_rxent *r = container_of(s->rxq.next, struct tcp_rxent, node);
		if (r->frag.len >= 8) {
			memcpy(buf, (const void *)(uintptr_t)r->frag.addr.bus, 8); /* as netdev_frag_read, counted */
			dma_account_cpu(r->frag.addr.cls, 8);
			return 0;
		}
	}
	return tcp_peek(s, 0, buf, 8);
}

static bool can_send(const struct tcp_sock *s)
{
	return !s->fin_queued && (s->state == TCP_ESTABLISHED || s->state == TCP_CLOSE_WAIT ||
				  s->state == TCP_SYN_SENT || s->state == TCP_SYN_RECEIVED);
}

/* tcp_send_space, inline for tcp_send_copy. */
static inline size_t send_space(const struct tcp_sock *s)
{
	size_t space, chunks;
	if (!can_send(s))
		return 0;
	space = s->sndq_bytes < TCP_SND_BUF ? TCP_SND_BUF - s->sndq_bytes : 0;
	/* What the socket's share of chunks can hold, with the room left in its last one. */
	chunks = tcp_chunk_space(s);
	if (!list_empty(&s->sndq)) {
		const struct tcp_sndent *e = container_of(s->sndq.prev, struct tcp_sndent, node);
		if (e->frag.len < e->cap)
			chunks += e->cap - e->frag.len;
	}
	if (!tcp_sndent_room(s))
		chunks = 0;
	return space < chunks ? space : chunks;
}

/* send_space(s) >= n, told from s's own reserves alone (no shared pool summed): an entry
 * left in its reserve, and n within both the send buffer's room and the chunks left in its
 * reserve (send_space counts at least those). false: ask send_space. */
static inline bool send_fits_own(const struct tcp_sock *s, size_t n)
{
	return s->sndents < TCP_SNDENT_RESERVE && s->chunks_tx < TCP_CHUNK_RESERVE && s->sndq_bytes <= TCP_SND_BUF &&
	       n <= TCP_SND_BUF - s->sndq_bytes && n <= (size_t)(TCP_CHUNK_RESERVE - s->chunks_tx) * TCP_CHUNK_SIZE;
}

size_t tcp_send_space(const struct tcp_sock *s)
{
	return send_space(s);
}

unsigned tcp_send_frags_room(const struct tcp_sock *s)
{
	return can_send(s) ? tcp_sndent_room(s) : 0;
}

/* Queue f (cap: what it may grow to, tcp_sndent) behind s's send queue. Inline: a
 * 4 KiB read queues three entries. */
static inline int sndq_add(struct tcp_sock *s, const struct netdev_frag *f, uint16_t cap)
{
	struct tcp_sndent *e = tcp_sndent_alloc(s);
	if (!e)
		return -ENOBUFS;
	e->seq = s->snd_end;
	e->frag = *f;
	e->cap = cap;
	list_add_tail(&s->sndq, &e->node);
	s->snd_end += f->len;
	s->sndq_bytes += f->len;
	return 0;
}

/* An empty entry holding its bytes in itself (buf, TCP_SNDENT_INLINE of them) behind s's
 * send queue: no chunk taken, nothing to release when it is freed. NULL: no entry. */
static inline struct tcp_sndent *sndq_add_inline(struct tcp_sock *s)
{
	struct tcp_sndent *e = tcp_sndent_alloc(s);
	if (!e)
		return NULL;
	e->seq = s->snd_end;
	memset(&e->frag, 0, sizeof(e->frag));
	e->frag.addr = dma_addr_host(e->buf);
	e->frag.provider = NETDEV_PROVIDER_HOST;
	e->cap = TCP_SNDENT_INLINE;
	list_add_tail(&s->sndq, &e->node);
	return e;
}

int tcp_send_frags(struct tcp_sock *s, const struct netdev_frag *frags, unsigned n)
{
	size_t total = 0;
	unsigned i;
	int rc = 0;

	for (i = 0; i < n; i++)
		total += frags[i].len;
	if (!can_send(s))
		rc = s->fin_queued ? -EPIPE : -ENOTCONN;
	else if (total > (s->sndq_bytes < TCP_SND_BUF ? TCP_SND_BUF - s->sndq_bytes : 0) || tcp_sndent_room(s) < n) {
		rc = -ENOBUFS;
		tcp_send_refused(s);
	}
	if (rc) {
		for (i = 0; i < n; i++) {
			struct netdev_frag f = frags[i];
			netdev_frag_release(&f);
		}
		return rc;
	}
	for (i = 0; i < n; i++) {
		if (frags[i].len == 0) {
			struct netdev_frag f = frags[i];
			netdev_frag_release(&f);
			continue;
		}
		sndq_add(s, &frags[i], 0);
	}
	tcp_output_more(s);
	return 0;
}

long tcp_send_copy(struct tcp_sock *s, const void *buf, size_t len)
{
	const uint8_t *src = buf;
	size_t space, done = 0;

	if (!can_send(s))
		return s->fin_queued ? -EPIPE : -ENOTCONN;
	space = send_space(s);
	if (len > space) {
		len = space;
		tcp_send_refused(s); /* the rest waits for TCP_EV_SENT */
	}
	/* Fill the last chunk (or entry holding its bytes) if it has room. */
	bool small = len <= TCP_SNDENT_INLINE; /* ... else into an entry's own bytes (below) */
	if (len && !list_empty(&s->sndq)) {
		struct tcp_sndent *e = container_of(s->sndq.prev, struct tcp_sndent, node);
		small = small && !e->cap;
		if (e->frag.len < e->cap) {
			size_t n = e->cap - e->frag.len < len ? e->cap - e->frag.len : len;
			memcpy((uint8_t *)(uintptr_t)e->frag.addr.bus + e->frag.len, src, n);
			dma_account_cpu(MEM_CLASS_HOST, n);
			e->frag.len += (uint32_t)n;
			s->snd_end += (uint32_t)n;
			s->sndq_bytes += n;
			done += n;
		}
	}
	while (done < len) {
		struct netdev_frag f;
		size_t n = len - done < TCP_CHUNK_SIZE ? len - done : TCP_CHUNK_SIZE;
		if (small) {
			/* a few bytes (a digest, a small PDU) behind a user fragment or alone: in
			 * the entry itself. Not behind a chunk or such an entry (small pieces
			 * queued one after the other fill a chunk: an entry each would cost a
			 * gather piece each) */
			struct tcp_sndent *e = sndq_add_inline(s);
			if (!e)
				break;
			memcpy(e->buf, src + done, n);
			dma_account_cpu(MEM_CLASS_HOST, n);
			e->frag.len = (uint32_t)n;
			s->snd_end += (uint32_t)n;
			s->sndq_bytes += n;
			done += n;
			continue;
		}
		if (tcp_chunk_frag(s, false, src + done, n, &f))
			break;
		if (sndq_add(s, &f, TCP_CHUNK_SIZE)) {
			netdev_frag_release(&f);
			break;
		}
		done += n;
	}
	if (__builtin_expect(done < len, 0))
		tcp_send_refused(s); /* (the pools short of what send_space counted on) */
	if (done)
		tcp_output_more(s);
	return done ? (long)done : (len ? -ENOBUFS : 0);
}

/* send_place_at's new chunk, empty until tcp_send_placed, at the end of the send queue: where
 * its bytes go, or NULL (the refusal recorded). Out of line: a small PDU's header or response
 * takes an entry of its own, and this path's locals cost register saves in every inlined
 * send_place_at. */
static __attribute__((noinline)) void *send_place_chunk(struct tcp_sock *s)
{
	static const uint8_t nothing;
	struct netdev_frag f;

	if (tcp_chunk_frag(s, false, &nothing, 0, &f))
		return send_place_refused(s);
	if (sndq_add(s, &f, TCP_CHUNK_SIZE)) {
		netdev_frag_release(&f);
		return send_place_refused(s);
	}
	return (void *)(uintptr_t)container_of(s->sndq.prev, struct tcp_sndent, node)->frag.addr.bus;
}

/* Where tcp_send_place builds len bytes, its room checked: in the last entry's room, in a new
 * entry holding them itself, or in a new chunk. NULL (the refusal recorded): no entry or chunk
 * left. Inline: tcp_send_place's body, shared with tcp_send_place_frags_tail. */
static inline __attribute__((always_inline)) void *send_place_at(struct tcp_sock *s, size_t len)
{
	struct tcp_sndent *e = NULL;

	if (!list_empty(&s->sndq))
		e = container_of(s->sndq.prev, struct tcp_sndent, node);
	if (!e || !e->cap || e->cap - e->frag.len < len) {
		if (len <= TCP_SNDENT_INLINE && (!e || !e->cap || s->snd_nxt == s->snd_end)) {
			/* a PDU header, a response behind a user fragment (data), alone or behind
			 * entries all sent (under queue depth, the last PDU's response still
			 * unacknowledged): in a new entry itself (no chunk). Behind a chunk or a
			 * full such entry still unsent (PDUs queued one after the other), a chunk
			 * that the next ones fill. */
			if (!(e = sndq_add_inline(s)))
				return send_place_refused(s);
			return e->buf;
		}
		return send_place_chunk(s);
	}
	return (uint8_t *)(uintptr_t)e->frag.addr.bus + e->frag.len;
}

/* (always inline: a response's or an R2T's, placed once per command; tcp_send_place_frags's) */
inline __attribute__((always_inline)) void *tcp_send_place(struct tcp_sock *s, size_t len, size_t more)
{
	if (!len || len > TCP_CHUNK_SIZE || more > TCP_SND_BUF || !can_send(s))
		return NULL;
	if (!send_fits_own(s, len + more) && len + more > send_space(s))
		return send_place_refused(s);
	return send_place_at(s, len);
}

/* tcp_send_placed without the output: the len bytes placed join the last entry. */
static inline void send_placed_bytes(struct tcp_sock *s, size_t len)
{
	struct tcp_sndent *e = container_of(s->sndq.prev, struct tcp_sndent, node);
	e->frag.len += (uint32_t)len;
	dma_account_cpu(MEM_CLASS_HOST, len);
	s->snd_end += (uint32_t)len;
	s->sndq_bytes += len;
}

void tcp_send_placed(struct tcp_sock *s, size_t len)
{
	send_placed_bytes(s, len);
	tcp_output_more(s);
}

void tcp_send_placed_flush(struct tcp_sock *s, size_t len)
{
	send_placed_bytes(s, len);
	/* a response alone unsent in an entry of its own, s idle otherwise: its frame at once */
	if (tcp_flush_one(s))
		return;
	/* tcp_send_placed's output would only hold the tail for this flush (tcp_output_would_hold:
	 * the flush takes it off the list first): the flush alone */
	if (s->ack_pass_end || !tcp_output_would_hold(s))
		tcp_output_more(s);
	tcp_flush(s);
}

void *tcp_send_place_frags(struct tcp_sock *s, size_t len, size_t more, unsigned entries)
{
	if (can_send(s) && tcp_sndent_room(s) <= entries)
		return send_place_refused(s); /* (the header's entry and the caller's) */
	return tcp_send_place(s, len, more);
}

/* The fragments of tcp_send_placed_frags queued behind the header (an empty one released),
 * without output. Inline: tcp_send_placed_frags's and tcp_send_placed_frags_tail's. */
static inline __attribute__((always_inline)) void send_placed_frags_data(struct tcp_sock *s,
									  const struct netdev_frag *frags, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		if (frags[i].len == 0) {
			struct netdev_frag f = frags[i];
			netdev_frag_release(&f);
			continue;
		}
		sndq_add(s, &frags[i], 0); /* (room for it: tcp_send_place_frags) */
	}
}

void tcp_send_placed_frags(struct tcp_sock *s, size_t len, const struct netdev_frag *frags, unsigned n)
{
	/* the header's output first, as tcp_send_placed's: a short tail held for tcp_flush
	 * keeps the fragments behind it waiting with it (one pass for the whole PDU and the
	 * response after it), the same segments as tcp_send_placed then tcp_send_frags */
	send_placed_bytes(s, len);
	tcp_output_more(s);
	send_placed_frags_data(s, frags, n);
	tcp_output_more(s);
}

_Static_assert(TCP_SEND_TAIL_MAX <= TCP_SNDENT_INLINE, "a tail fits the entry that holds its bytes itself");

void *tcp_send_place_frags_tail(struct tcp_sock *s, size_t len, size_t more, unsigned entries, size_t tail_len,
				void **tail)
{
	size_t all = len + more + tail_len;
	if (!len || len > TCP_CHUNK_SIZE || more > TCP_SND_BUF || !tail_len || tail_len > TCP_SEND_TAIL_MAX ||
	    !can_send(s))
		return NULL;
	/* the header's entry, the `entries` and the tail's: within s's own reserve of entries (one
	 * compare), else as tcp_send_place_frags counts them, and the bytes as tcp_send_place does */
	if (!(s->sndents + entries + 2 <= TCP_SNDENT_RESERVE && send_fits_own(s, all)) &&
	    (tcp_sndent_room(s) < entries + 2 || all > send_space(s)))
		return send_place_refused(s);
	/* the tail's entry first (linked by tcp_send_placed_frags_tail, behind the fragments):
	 * an entry holding its bytes itself, as tcp_send_place makes one behind a user fragment */
	struct tcp_sndent *t = tcp_sndent_alloc(s);
	if (!t)
		return send_place_refused(s);
	memset(&t->frag, 0, sizeof(t->frag));
	t->frag.addr = dma_addr_host(t->buf);
	t->frag.provider = NETDEV_PROVIDER_HOST;
	t->cap = TCP_SNDENT_INLINE;
	void *hdr = send_place_at(s, len);
	if (!hdr) {
		tcp_sndent_free_own(s, t); /* (owns nothing: its bytes are its own) */
		return NULL;
	}
	*tail = t->buf;
	return hdr;
}

/* The tail t of tcp_send_place_frags_tail queued behind what is queued (no output). */
static inline __attribute__((always_inline)) void send_placed_tail(struct tcp_sock *s, struct tcp_sndent *t,
								   size_t tail_len)
{
	t->seq = s->snd_end;
	t->frag.len = (uint32_t)tail_len;
	list_add_tail(&s->sndq, &t->node);
	dma_account_cpu(MEM_CLASS_HOST, tail_len);
	s->snd_end += (uint32_t)tail_len;
	s->sndq_bytes += tail_len;
}

/* tcp_send_placed_frags_tail after the header's bytes and output: the fragments, then the
 * tail, each with the output tcp_send_placed_frags and tcp_send_placed give it. */
static inline __attribute__((always_inline)) void send_placed_frags_tail_rest(struct tcp_sock *s,
									      const struct netdev_frag *frags,
									      unsigned n, struct tcp_sndent *t,
									      size_t tail_len)
{
	send_placed_frags_data(s, frags, n);
	/* the outputs of tcp_send_placed_frags and tcp_send_placed after it, unless the header's
	 * held the tail already: then both would return at once (tcp_output_held) */
	bool held = tcp_output_held(s, (uint32_t)tail_len);
	if (!held)
		tcp_output_more(s);
	/* then the tail, as tcp_send_placed queues a response built behind the data */
	send_placed_tail(s, t, tail_len);
	if (!held)
		tcp_output_more(s);
}

void tcp_send_placed_frags_tail(struct tcp_sock *s, size_t len, const struct netdev_frag *frags, unsigned n,
				void *tail, size_t tail_len)
{
	struct tcp_sndent *t = container_of(tail, struct tcp_sndent, buf);
	/* the header's output first, as tcp_send_placed_frags's */
	send_placed_bytes(s, len);
	tcp_output_more(s);
	send_placed_frags_tail_rest(s, frags, n, t, tail_len);
}

void tcp_send_placed_frags_tail_flush(struct tcp_sock *s, size_t len, const struct netdev_frag *frags, unsigned n,
				      void *tail, size_t tail_len)
{
	struct tcp_sndent *t = container_of(tail, struct tcp_sndent, buf);
	bool alone = s->snd_nxt == s->snd_end; /* (nothing unsent before it) */
	send_placed_bytes(s, len);
	if (s->ack_pass_end || !tcp_output_would_hold(s)) {
		tcp_output_more(s);
		send_placed_frags_tail_rest(s, frags, n, t, tail_len);
	} else {
		/* the header's output would only hold it (tcp_output_would_hold), and the
		 * fragments' and the tail's would return at once while all of it fits one pass
		 * (tcp_output_held): the flush alone, whose every path takes s off the held list
		 * first (!ack_pass_end), as tcp_send_placed_flush. Beyond one pass: held, then
		 * the outputs after the header's, as tcp_send_placed_frags_tail. */
		send_placed_frags_data(s, frags, n);
		if (s->snd_end + (uint32_t)tail_len - s->snd_nxt <= TCP_OUTPUT_BUDGET * (uint32_t)s->mss) {
			send_placed_tail(s, t, tail_len);
			/* the PDU alone unsent, in three entries: its train built from them */
			if (alone && n == 1 && frags[0].len && tcp_flush_pdu(s, t))
				return;
		} else {
			tcp_output_hold(s);
			tcp_output_more(s);
			send_placed_tail(s, t, tail_len);
			tcp_output_more(s);
		}
	}
	tcp_flush(s);
}

int tcp_shutdown_send(struct tcp_sock *s)
{
	switch (s->state) {
	case TCP_ESTABLISHED:
		tcp_set_state(s, TCP_FIN_WAIT_1);
		break;
	case TCP_CLOSE_WAIT:
		tcp_set_state(s, TCP_LAST_ACK);
		break;
	case TCP_SYN_RECEIVED:
		tcp_set_state(s, TCP_FIN_WAIT_1);
		break;
	default:
		return s->fin_queued ? 0 : -ENOTCONN;
	}
	s->fin_queued = true;
	tcp_output(s);
	return 0;
}

void tcp_close(struct tcp_sock *s)
{
	s->user_closed = true;
	s->ops = NULL;
	switch (s->state) {
	case TCP_CLOSED:
	case TCP_LISTEN:
	case TCP_SYN_SENT:
		tcp_sock_free(s);
		return;
	case TCP_ESTABLISHED:
	case TCP_CLOSE_WAIT:
	case TCP_SYN_RECEIVED:
		if (s->rxq_bytes || !list_empty(&s->ooo)) {
			/* RFC 9293 3.10.4 / RFC 2525: unread data is lost: tell the peer. */
			tcp_abort(s);
			return;
		}
		tcp_shutdown_send(s);
		return;
	case TCP_FIN_WAIT_2:
		timer_arm(&timer_default_queue, &s->t_keep, clock_now_ns() + TCP_FIN_WAIT_2_NS);
		return;
	default:
		return;
	}
}

void tcp_abort(struct tcp_sock *s)
{
	if (s->state != TCP_CLOSED && s->state != TCP_LISTEN && s->state != TCP_SYN_SENT &&
	    s->state != TCP_TIME_WAIT)
		tcp_send_ctl(s, s->snd_nxt, TCP_RST | TCP_ACK);
	tcp_sock_free(s);
}

enum tcp_state tcp_state(const struct tcp_sock *s)
{
	return s->state;
}

int tcp_error(const struct tcp_sock *s)
{
	return s->error;
}

void tcp_get_info(const struct tcp_sock *s, struct tcp_info *o)
{
	/* every field set below: no zeroing pass (the target asks for each PDU it waits on) */
	o->state = s->state;
	o->laddr = s->laddr;
	o->raddr = s->raddr;
	o->lport = s->lport;
	o->rport = s->rport;
	o->snd_una = s->snd_una;
	o->snd_nxt = s->snd_nxt;
	o->snd_wnd = s->snd_wnd;
	o->rcv_nxt = s->rcv_nxt;
	o->rcv_wnd = SEQ_GT(s->rcv_adv, s->rcv_nxt) ? s->rcv_adv - s->rcv_nxt : 0;
	o->cwnd = s->cwnd;
	o->ssthresh = s->ssthresh;
	o->mss = s->mss;
	o->snd_wscale = s->snd_wscale;
	o->rcv_wscale = s->rcv_wscale;
	o->rto_ns = s->rto_ns;
	o->srtt_ns = s->srtt_ns;
	o->retransmits = s->retransmits;
	o->fast_retransmits = s->fast_retransmits;
	o->timeouts = s->timeouts;
	o->segs_in = s->segs_in;
	o->segs_out = s->segs_out;
	o->dup_segs = s->dup_segs;
	o->ooo_segs = s->ooo_segs;
	o->rxq_bytes = s->rxq_bytes;
	o->sndq_bytes = s->sndq_bytes;
	o->rxq_frags = s->rxq_frags;
	o->ooo_frags = s->ooo_frags;
	o->sack_ok = s->sack_ok;
}

enum tcp_state tcp_rcv_room(const struct tcp_sock *s, uint32_t *rcv_wnd)
{
	*rcv_wnd = SEQ_GT(s->rcv_adv, s->rcv_nxt) ? s->rcv_adv - s->rcv_nxt : 0;
	return s->state;
}

const struct tcp_stats *tcp_stats(void)
{
	return &tcp_counters;
}

void tcp_foreach(void (*fn)(const struct tcp_sock *s, void *ctx), void *ctx)
{
	struct list_node *it;
	list_for_each(&tcp_socks, it)
		fn(container_of(it, struct tcp_sock, node), ctx);
}
