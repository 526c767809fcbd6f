/*
 * tcp_admit.c - who gets a socket: limits per source, a bounded SYN cache and eviction
 * when the table is full, so that strangers cannot hold every connection (issue 13).
 *
 * - Half-open connections (SYN_RECEIVED children of a listener) live at most
 *   TCP_SYNACK_RETRIES SYN-ACK retransmissions (about 15 s), are at most
 *   TCP_HALF_OPEN_MAX in all (a bounded SYN cache) and TCP_HALF_OPEN_PER_SOURCE per
 *   source address. A SYN beyond its source's share is dropped (the source retransmits
 *   it; its handshakes under way stay intact). A full cache (or a listener's full
 *   backlog) drops its oldest entry for the new SYN, as BSD's syncache does, so a stale
 *   flood entry from other sources never blocks a host.
 * - One source address holds at most TCP_CONN_PER_SOURCE sockets.
 * - Listener backlogs together stay within TCP_BACKLOG_TOTAL (half the socket table).
 * - When the table is full, a new connection takes the slot of, in order: the oldest
 *   TIME_WAIT socket, the oldest half-open one, the oldest passively opened connection
 *   that its user never marked authorised (tcp_set_authorised(): for NVMe/TCP, once
 *   Connect succeeded). The last one is reset and its user sees TCP_EV_CLOSED with
 *   -ECONNABORTED; the slot is free once the user has called tcp_close().
 */
#include <errno.h>
#include "../../lib/clock.h"
#include "tcp_internal.h"

static bool half_open(const struct tcp_sock *s)
{
	return s->state == TCP_SYN_RECEIVED && s->listener;
}

/* Sockets (half_only: half-open ones) whose peer is addr. */
static unsigned from_source(uint32_t addr, bool half_only)
{
	struct list_node *it;
	unsigned n = 0;
	list_for_each(&tcp_socks, it) {
		const struct tcp_sock *s = container_of(it, struct tcp_sock, node);
		if (s->state == TCP_LISTEN || s->raddr != addr)
			continue;
		if (!half_only || half_open(s))
			n++;
	}
	return n;
}

static unsigned half_open_total(void)
{
	struct list_node *it;
	unsigned n = 0;
	list_for_each(&tcp_socks, it)
		n += half_open(container_of(it, struct tcp_sock, node));
	return n;
}

/* The oldest socket that pick() accepts, or NULL. */
static struct tcp_sock *oldest(bool (*pick)(const struct tcp_sock *s, const void *arg), const void *arg)
{
	struct tcp_sock *best = NULL;
	struct list_node *it;
	list_for_each(&tcp_socks, it) {
		struct tcp_sock *s = container_of(it, struct tcp_sock, node);
		if (pick(s, arg) && (!best || s->born_ns < best->born_ns))
			best = s;
	}
	return best;
}

static bool pick_half_open(const struct tcp_sock *s, const void *arg)
{
	(void)arg;
	return half_open(s);
}

static bool pick_half_open_of(const struct tcp_sock *s, const void *l)
{
	return half_open(s) && s->listener == l;
}

static bool pick_time_wait(const struct tcp_sock *s, const void *arg)
{
	(void)arg;
	return s->state == TCP_TIME_WAIT;
}

static bool pick_unauthorised(const struct tcp_sock *s, const void *arg)
{
	(void)arg;
	return s->passive && !s->authorised && !half_open(s) && s->state != TCP_CLOSED &&
	       s->state != TCP_LISTEN && s->state != TCP_TIME_WAIT && !s->user_closed;
}

static bool evict_half_open(struct tcp_sock *victim)
{
	if (!victim)
		return false;
	tcp_counters.syn_evicted++;
	tcp_sock_free(victim); /* no RST: its source may be spoofed */
	return true;
}

/* Admission of a SYN from src to listener l: true when a socket may be created (room
 * made by evicting the oldest half-open entry where a limit is reached). */
bool tcp_admit_syn(struct tcp_sock *l, uint32_t src)
{
	if (from_source(src, false) >= TCP_CONN_PER_SOURCE) {
		tcp_counters.conn_per_source_drops++;
		return false;
	}
	if (from_source(src, true) >= TCP_HALF_OPEN_PER_SOURCE) {
		/* Dropped, not traded for its own oldest entry: that handshake's ACK would
		 * meet no socket and be reset, while this SYN comes back by retransmission. */
		tcp_counters.syn_per_source_drops++;
		return false;
	}
	if (l->n_children >= l->backlog && !evict_half_open(oldest(pick_half_open_of, l))) {
		tcp_counters.syn_backlog_drops++;
		return false;
	}
	if (half_open_total() >= TCP_HALF_OPEN_MAX)
		evict_half_open(oldest(pick_half_open, NULL));
	return true;
}

/* The table is full: free a slot for a new connection (see the top). true when one was
 * freed at once. */
bool tcp_admit_evict(void)
{
	struct tcp_sock *s = oldest(pick_time_wait, NULL);
	if (s) {
		tcp_counters.evicted++;
		tcp_sock_free(s);
		return true;
	}
	if (evict_half_open(oldest(pick_half_open, NULL)))
		return true;
	if (!(s = oldest(pick_unauthorised, NULL)))
		return false;
	tcp_counters.evicted++;
	tcp_send_ctl(s, s->snd_nxt, TCP_RST | TCP_ACK);
	if (s->listener) {
		tcp_sock_free(s); /* still in the accept queue: the stack owns it */
		return true;
	}
	tcp_sock_closed(s, -ECONNABORTED); /* the user frees it with tcp_close() */
	return tcp_sock_free_slots() > 0;
}

void tcp_set_authorised(struct tcp_sock *s)
{
	s->authorised = true;
}

/* The backlog a new listener may have: what is left of TCP_BACKLOG_TOTAL, at most the
 * one asked for. */
unsigned tcp_admit_backlog(unsigned want)
{
	struct list_node *it;
	unsigned used = 0;
	list_for_each(&tcp_socks, it) {
		const struct tcp_sock *s = container_of(it, struct tcp_sock, node);
		if (s->state == TCP_LISTEN)
			used += s->backlog;
	}
	if (used >= TCP_BACKLOG_TOTAL)
		return 0;
	return want < TCP_BACKLOG_TOTAL - used ? want : TCP_BACKLOG_TOTAL - used;
}
