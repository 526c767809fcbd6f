/*
 * tcp.c - TCP sockets and segment arrival (RFC 9293 section 3.10.7), see tcp.h.
 *
 * Received payload never becomes a host pointer: the bytes after the TCP header are the
 * netbuf's fragments (device memory, moved into the socket's queues as they are) plus,
 * for frames the NIC did not split, bytes in the host part, which are copied into a
 * stack chunk (counted) because the host part goes back to the NIC with the headers.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "../../lib/clock.h"
#include "../../lib/log.h"
#include "../../mm/pool.h"
#include "tcp_internal.h"

LOG_MODULE_DEFINE(tcp);

#define TCP_RXENTS 8192
#define TCP_SNDENTS 8192
#define TCP_CHUNKS 1024
#define TCP_EPHEMERAL_FIRST 49152

struct tcp_stats tcp_counters;
struct list_node tcp_socks = LIST_HEAD_INIT(tcp_socks);
static struct mm_pool tcp_sock_pool, tcp_rxent_pool, tcp_chunk_pool;
struct mm_pool tcp_sndent_pool;
static bool tcp_ready;
static uint16_t tcp_next_port = TCP_EPHEMERAL_FIRST;
static uint32_t tcp_iss_counter;
static uint64_t tcp_iss_secret;  /* per boot: the clock at init, mixed */

static const char *const state_names[TCP_STATE_COUNT] = {
	"CLOSED", "LISTEN", "SYN_SENT", "SYN_RECEIVED", "ESTABLISHED", "FIN_WAIT_1",
	"FIN_WAIT_2", "CLOSE_WAIT", "CLOSING", "LAST_ACK", "TIME_WAIT",
};

const char *tcp_state_name(enum tcp_state st)
{
	return st < TCP_STATE_COUNT ? state_names[st] : "?";
}

/* --- stack chunks (host memory for copied bytes) ------------------------------------ */

static void chunk_release(struct netdev_frag_owner *o, uint64_t token)
{
	(void)o;
	mm_pool_free(&tcp_chunk_pool, (void *)(uintptr_t)token);
}
static struct netdev_frag_owner tcp_chunk_owner = { "tcp-chunk", chunk_release };

/* A chunk holding a copy of len (<= TCP_CHUNK_SIZE) host bytes, as a host fragment. */
static int chunk_frag(const void *src, size_t len, struct netdev_frag *f)
{
	uint8_t *c = mm_pool_alloc(&tcp_chunk_pool);
	if (!c)
		return -ENOMEM;
	memcpy(c, src, len);
	dma_account_cpu(MEM_CLASS_HOST, len);
	memset(f, 0, sizeof(*f));
	f->addr = dma_addr_host(c);
	f->len = (uint32_t)len;
	f->provider = NETDEV_PROVIDER_HOST;
	f->token = (uint64_t)(uintptr_t)c;
	f->owner = &tcp_chunk_owner;
	return 0;
}

/* --- lifecycle --------------------------------------------------------------------- */

int tcp_init(void)
{
	int rc;
	memset(&tcp_counters, 0, sizeof(tcp_counters));
	list_init(&tcp_socks);
	tcp_next_port = TCP_EPHEMERAL_FIRST;
	tcp_iss_counter = 0;
	tcp_iss_secret = clock_now_ns() * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull;
	if ((rc = mm_pool_init(&tcp_sock_pool, "tcp_sock", sizeof(struct tcp_sock), TCP_SOCKETS)))
		return rc;
	if ((rc = mm_pool_init(&tcp_rxent_pool, "tcp_rxent", sizeof(struct tcp_rxent), TCP_RXENTS)))
		goto err_sock;
	if ((rc = mm_pool_init(&tcp_sndent_pool, "tcp_sndent", sizeof(struct tcp_sndent), TCP_SNDENTS)))
		goto err_rx;
	if ((rc = mm_pool_init(&tcp_chunk_pool, "tcp_chunk", TCP_CHUNK_SIZE, TCP_CHUNKS)))
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

static void tcp_sock_free(struct tcp_sock *s);

int tcp_shutdown(void)
{
	if (!tcp_ready)
		return 0;
	while (!list_empty(&tcp_socks))
		tcp_sock_free(container_of(tcp_socks.next, struct tcp_sock, node));
	tcp_budget_fini();
	if (tcp_sock_pool.in_use || tcp_rxent_pool.in_use || tcp_sndent_pool.in_use || tcp_chunk_pool.in_use)
		return -EBUSY;
	mm_pool_destroy(&tcp_chunk_pool);
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
}

void tcp_notify(struct tcp_sock *s, unsigned events)
{
	if (!s->user_closed && s->ops && s->ops->event && !s->listener)
		s->ops->event(s, s->ctx, events);
}

static void keep_timer(struct timer *t, void *arg);
static void delack_timer(struct timer *t, void *arg);

static struct tcp_sock *tcp_sock_new(void)
{
	struct tcp_sock *s;
	if (!tcp_ready || !(s = mm_pool_zalloc(&tcp_sock_pool)))
		return NULL;
	list_init(&s->children);
	list_init(&s->child_node);
	list_init(&s->sndq);
	list_init(&s->rxq);
	list_init(&s->ooo);
	timer_init(&s->t_rexmit, "tcp-rexmit", tcp_rexmit_timer, s);
	timer_init(&s->t_delack, "tcp-delack", delack_timer, s);
	timer_init(&s->t_keep, "tcp-keep", keep_timer, s);
	s->rto_ns = TCP_RTO_INITIAL_NS;
	s->mss = TCP_MSS_DEFAULT;
	s->rcv_cap = TCP_RCV_CAP_INIT;
	s->ssthresh = 0xffffffffu;
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
}

/* Free everything a socket holds (children of a listener too). */
static void tcp_sock_free(struct tcp_sock *s)
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
	rx_list_free(&s->rxq);
	rx_list_free(&s->ooo);
	sndq_drop(s);
	list_del(&s->node);
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
	sndq_drop(s);
	if (s->user_closed || s->listener) {
		tcp_sock_free(s);
		return;
	}
	tcp_notify(s, TCP_EV_CLOSED);
}

static void enter_time_wait(struct tcp_sock *s)
{
	tcp_set_state(s, TCP_TIME_WAIT);
	timer_cancel(&timer_default_queue, &s->t_rexmit);
	timer_arm(&timer_default_queue, &s->t_keep, clock_now_ns() + 2 * TCP_MSL_NS);
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
		timer_arm(&timer_default_queue, &s->t_keep, s->last_rx_ns + s->keep_idle_ns);
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
	(void)t;
	if (s->ack_delayed) {
		tcp_counters.delayed_acks++;
		tcp_send_ack_now(s);
	}
}

/* RFC 6528-style initial sequence number: a clock plus a hash of the connection. */
static uint32_t tcp_new_iss(uint32_t laddr, uint32_t raddr, uint16_t lport, uint16_t rport)
{
	uint64_t h = tcp_iss_secret ^ ((uint64_t)laddr << 32 | raddr) ^ ((uint64_t)lport << 16 | rport);
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ull;
	h ^= h >> 33;
	tcp_iss_counter += 64000;
	return (uint32_t)h + (uint32_t)(clock_now_ns() / 4000) + tcp_iss_counter;
}

static struct tcp_sock *tcp_lookup(uint32_t laddr, uint16_t lport, uint32_t raddr, uint16_t rport)
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

/* --- options ----------------------------------------------------------------------- */

struct tcp_opts {
	bool has_mss, has_ws, sack_perm;
	bool has_sack;                  /* a SACK option: its first block in sack_left/right */
	uint32_t sack_left, sack_right;
	uint16_t mss;
	uint8_t ws;
};

/* Parse options from a local copy of the header (RFC 9293 3.2, RFC 7323 2). Malformed
 * options end parsing; unknown ones are skipped. */
static void parse_options(const uint8_t *p, size_t len, struct tcp_opts *o)
{
	size_t i = 0;
	memset(o, 0, sizeof(*o));
	while (i < len) {
		uint8_t kind = p[i];
		if (kind == TCP_OPT_EOL)
			break;
		if (kind == TCP_OPT_NOP) {
			i++;
			continue;
		}
		if (len - i < 2 || p[i + 1] < 2 || p[i + 1] > len - i)
			break;
		uint8_t olen = p[i + 1];
		if (kind == TCP_OPT_MSS && olen == 4) {
			o->has_mss = true;
			o->mss = (uint16_t)(p[i + 2] << 8 | p[i + 3]);
		} else if (kind == TCP_OPT_WS && olen == 3) {
			o->has_ws = true;
			o->ws = p[i + 2] > 14 ? 14 : p[i + 2]; /* RFC 7323 2.3 */
		} else if (kind == TCP_OPT_SACK_PERM && olen == 2) {
			o->sack_perm = true;
		} else if (kind == TCP_OPT_SACK && olen >= 10 && (olen - 2) % 8 == 0 && !o->has_sack) {
			/* RFC 2018 3: only the first block matters here (D-SACK, RFC 2883). */
			o->has_sack = true;
			o->sack_left = (uint32_t)p[i + 2] << 24 | (uint32_t)p[i + 3] << 16 | (uint32_t)p[i + 4] << 8 | p[i + 5];
			o->sack_right = (uint32_t)p[i + 6] << 24 | (uint32_t)p[i + 7] << 16 | (uint32_t)p[i + 8] << 8 | p[i + 9];
		}
		i += olen;
	}
}

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
static int payload_take(struct netbuf *nb, uint32_t seq, struct seg_payload *p)
{
	size_t host = netbuf_host_len(nb);
	size_t off = 0;

	p->n = 0;
	while (off < host) {
		size_t n = host - off < TCP_CHUNK_SIZE ? host - off : TCP_CHUNK_SIZE;
		if (p->n >= 8 || chunk_frag(nb->data + off, n, &p->f[p->n]))
			return -ENOMEM;
		p->seq[p->n++] = seq;
		tcp_counters.rx_payload_host += n;
		seq += (uint32_t)n;
		off += n;
	}
	nb->data = nb->tail;
	while (nb->nfrags) {
		netbuf_take_frag(nb, 0, &p->f[p->n]);
		if (p->f[p->n].len == 0) {
			netdev_frag_release(&p->f[p->n]);
			continue;
		}
		if (p->f[p->n].addr.cls == MEM_CLASS_DEVICE)
			tcp_counters.rx_payload_device += p->f[p->n].len;
		else
			tcp_counters.rx_payload_host += p->f[p->n].len;
		p->seq[p->n] = seq;
		seq += p->f[p->n].len;
		p->n++;
	}
	return 0;
}

static struct tcp_rxent *rxent_new(uint32_t seq, struct netdev_frag *f)
{
	struct tcp_rxent *r = mm_pool_alloc(&tcp_rxent_pool);
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
	struct tcp_rxent *r = rxent_new(seq, f);
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
	if (s->ooo_frags >= TCP_OOO_FRAGS_MAX) {
		tcp_counters.ooo_drops++;
		netdev_frag_release(f);
		return;
	}
	struct tcp_rxent *r = rxent_new(seq, f);
	if (!r) {
		netdev_frag_release(f);
		return;
	}
	list_insert_between(&r->node, after, after->next);
	s->ooo_frags++;
}

/* --- segment arrival --------------------------------------------------------------- */

struct seg {
	uint32_t seq, ack, len;  /* len: payload bytes (SYN/FIN not counted) */
	uint32_t wnd;            /* unscaled */
	uint8_t flags;
	struct tcp_opts opts;
};

static void update_rtt(struct tcp_sock *s, uint64_t r)
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

/* Drop acknowledged bytes from the send queue. */
static void sndq_ack(struct tcp_sock *s, uint32_t ack)
{
	struct list_node *it, *tmp;
	list_for_each_safe(&s->sndq, it, tmp) {
		struct tcp_sndent *e = container_of(it, struct tcp_sndent, node);
		uint32_t end = e->seq + e->frag.len;
		if (SEQ_GT(end, ack))
			break;
		list_del(it);
		s->sndq_bytes -= e->frag.len;
		e->done = true;
		tcp_sndent_put(e);
	}
}

/* Process an acceptable ACK (RFC 9293 3.10.7.4 fifth check, RFC 5681). Returns false
 * when the segment must be dropped. */
static bool process_ack(struct tcp_sock *s, const struct seg *g)
{
	uint32_t wnd = g->wnd << s->snd_wscale;

	/* RFC 5961 5.2: acceptable ACKs lie in [SND.UNA - MAX.SND.WND, SND.NXT]. */
	if (SEQ_GT(g->ack, s->snd_max)) {
		tcp_send_challenge_ack(s);
		return false;
	}
	if (SEQ_LT(g->ack, s->snd_una - s->max_snd_wnd)) {
		tcp_send_challenge_ack(s);
		return false;
	}
	if (SEQ_GT(g->ack, s->snd_una)) {
		uint32_t acked = g->ack - s->snd_una;
		if (s->timing && SEQ_GEQ(g->ack, s->rtt_seq)) {
			s->timing = false;
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
		} else if (s->cwnd < s->ssthresh) {
			s->cwnd += acked < s->mss ? acked : s->mss;
		} else {
			uint32_t inc = (uint32_t)((uint64_t)s->mss * s->mss / (s->cwnd ? s->cwnd : 1));
			s->cwnd += inc ? inc : 1;
		}
		s->dupacks = 0;
		s->snd_una = g->ack;
		if (SEQ_LT(s->snd_nxt, s->snd_una))
			s->snd_nxt = s->snd_una;
		sndq_ack(s, g->ack);
		if (s->snd_una == s->snd_max) {
			timer_cancel(&timer_default_queue, &s->t_rexmit);
			s->persist = false;
		} else {
			tcp_arm_rexmit(s);
		}
		s->pending_events |= TCP_EV_SENT;
	} else if (g->ack == s->snd_una && g->len == 0 && !(g->flags & (TCP_SYN | TCP_FIN)) &&
		   s->snd_max != s->snd_una && wnd == s->snd_wnd &&
		   !(g->opts.has_sack && SEQ_LEQ(g->opts.sack_right, g->ack))) {
		/* RFC 5681 2: a duplicate ACK; not one that reports, with a D-SACK block below
		 * the cumulative ACK, that the peer got something twice (RFC 2883 5): counting
		 * those turns one spurious retransmission into a cascade. */
		s->dupacks++;
		if (s->dupacks == 3 && !s->in_recovery) {
			uint32_t flight = s->snd_max - s->snd_una;
			s->ssthresh = flight / 2 > 2u * s->mss ? flight / 2 : 2u * s->mss;
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

/* FIN state changes once our FIN is acknowledged. */
static bool our_fin_acked(const struct tcp_sock *s)
{
	return s->fin_queued && SEQ_GT(s->snd_una, s->snd_end);
}

static void schedule_ack(struct tcp_sock *s, bool now)
{
	if (now) {
		s->ack_now = true;
		return;
	}
	/* RFC 9293 3.8.6.3 / RFC 1122: ACK at least every second full-sized segment. */
	if (++s->segs_unacked >= 2) {
		s->ack_now = true;
		return;
	}
	s->ack_delayed = true;
	if (!s->t_delack.armed)
		timer_arm(&timer_default_queue, &s->t_delack, clock_now_ns() + TCP_DELACK_NS);
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
			enter_time_wait(s);
		else
			tcp_set_state(s, TCP_CLOSING);
		break;
	case TCP_FIN_WAIT_2:
		enter_time_wait(s);
		break;
	default:
		break;
	}
}

/* Segment text and FIN in a synchronized state (RFC 9293 3.10.7.4 seventh/eighth). */
static void process_text(struct tcp_sock *s, struct seg *g, struct seg_payload *p)
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
		if (f->owner != &tcp_chunk_owner && !tcp_rx_buf_admit()) {
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
static void rx_listen(struct tcp_sock *l, struct seg *g, uint32_t src, uint32_t dst, uint16_t sport)
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
	if (l->n_children >= l->backlog) {
		tcp_counters.syn_backlog_drops++;
		return;
	}
	if (!(c = tcp_sock_new())) {
		tcp_counters.syn_no_socket++;
		return;
	}
	c->listener = l;
	l->n_children++;
	c->laddr = dst;
	c->raddr = src;
	c->lport = l->lport;
	c->rport = sport;
	c->ops = l->ops;
	c->ctx = l->ctx;
	c->irs = g->seq;
	c->rcv_nxt = g->seq + 1;
	c->rcv_adv = c->rcv_nxt; /* the SYN-ACK advertises what the buffer budget allows */
	c->rcv_cap_seq = c->rcv_nxt;
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
static void rx_syn_sent(struct tcp_sock *s, struct seg *g)
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
	s->rcv_cap_seq = s->rcv_nxt;
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
static void rx_sync(struct tcp_sock *s, struct seg *g, struct seg_payload *p)
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
			enter_time_wait(s);
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

static void deliver_events(struct tcp_sock *s)
{
	unsigned ev = s->pending_events;
	s->pending_events = 0;
	if (ev && s->state != TCP_CLOSED)
		tcp_notify(s, ev);
}

void tcp_rx(struct netbuf *nb, uint32_t src, uint32_t dst)
{
	size_t len = netbuf_host_len(nb) + netbuf_frag_len(nb);
	struct tcp_hdr th;
	uint8_t opts[40];
	struct seg g;
	struct seg_payload p;
	struct tcp_sock *s;
	size_t hlen;
	uint16_t sport, dport;

	p.n = 0;
	tcp_counters.segs_in++;
	if (netbuf_copy_out(nb, 0, &th, sizeof(th))) {
		tcp_counters.bad_header++;
		goto drop;
	}
	hlen = (size_t)(th.data_offset >> 4) * 4;
	if (hlen < TCP_HLEN_MIN || hlen > len || netbuf_copy_out(nb, sizeof(th), opts, hlen - sizeof(th))) {
		tcp_counters.bad_header++;
		goto drop;
	}
	if (!net_l4_csum_rx_ok(nb, src, dst, IP_PROTO_TCP, len)) {
		tcp_counters.bad_checksum++;
		goto drop;
	}
	sport = be16_get(th.src_port);
	dport = be16_get(th.dst_port);
	g.seq = be32_get(th.seq);
	g.ack = be32_get(th.ack);
	g.flags = th.flags;
	g.wnd = be16_get(th.window);
	g.len = (uint32_t)(len - hlen);
	parse_options(opts, hlen - sizeof(th), &g.opts);
	if (sport == 0 || dport == 0) {
		tcp_counters.bad_header++;
		goto drop;
	}
	s = tcp_lookup(dst, dport, src, sport);
	if (!s) {
		/* CLOSED (RFC 9293 3.10.7.1). */
		tcp_counters.no_socket++;
		if (!(g.flags & TCP_RST)) {
			if (g.flags & TCP_ACK)
				tcp_send_reset(dst, src, dport, sport, g.ack, 0, TCP_RST);
			else
				tcp_send_reset(dst, src, dport, sport, 0,
					       g.seq + g.len + ((g.flags & TCP_SYN) ? 1 : 0) + ((g.flags & TCP_FIN) ? 1 : 0),
					       TCP_RST | TCP_ACK);
		}
		goto drop;
	}
	if (s->state == TCP_LISTEN) {
		rx_listen(s, &g, src, dst, sport);
		goto drop;
	}
	s->segs_in++;
	s->last_rx_ns = clock_now_ns();
	s->keep_probes = 0;
	if (s->keep_idle_ns && (s->state == TCP_ESTABLISHED || s->state == TCP_CLOSE_WAIT))
		timer_arm(&timer_default_queue, &s->t_keep, s->last_rx_ns + s->keep_idle_ns);
	if (s->state == TCP_SYN_SENT) {
		rx_syn_sent(s, &g);
		if (s->state != TCP_CLOSED)
			deliver_events(s);
		goto drop;
	}
	netbuf_pull(nb, hlen);
	if (payload_take(nb, g.seq + ((g.flags & TCP_SYN) ? 1 : 0), &p)) {
		tcp_counters.rx_nobufs++;
		payload_release(&p);
		g.len = 0;
		g.flags &= (uint8_t)~TCP_FIN;
	}
	/* rx_sync may free s (reset, LAST_ACK done) but never a listener, and calls no user
	 * code: events go out afterwards, to the listener first, then to s if it still
	 * exists (looked up again: a callback may close it). */
	uint32_t laddr = s->laddr, raddr = s->raddr;
	uint16_t lport = s->lport, rport = s->rport;
	struct tcp_sock *l = s->listener;
	rx_sync(s, &g, &p);
	payload_release(&p);
	if (l && l->pending_events) {
		unsigned ev = l->pending_events;
		l->pending_events = 0;
		if (l->ops && l->ops->event)
			l->ops->event(l, l->ctx, ev);
	}
	s = tcp_lookup(laddr, lport, raddr, rport);
	if (s && s->state != TCP_LISTEN && s->rport == rport)
		deliver_events(s);
drop:
	netbuf_free(nb);
}

/* --- user API ---------------------------------------------------------------------- */

int tcp_listen(uint16_t port, unsigned backlog, const struct tcp_ops *ops, void *ctx, struct tcp_sock **out)
{
	struct list_node *it;
	struct tcp_sock *s;

	if (port == 0 || backlog == 0)
		return -EINVAL;
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
		deliver_events(s);
}

void tcp_set_keepalive(struct tcp_sock *s, uint64_t idle_ns, uint64_t intvl_ns, unsigned count)
{
	s->keep_idle_ns = idle_ns;
	s->keep_intvl_ns = intvl_ns ? intvl_ns : NSEC_PER_SEC;
	s->keep_count = count ? count : 1;
	s->keep_probes = 0;
	if (idle_ns)
		timer_arm(&timer_default_queue, &s->t_keep, s->last_rx_ns + idle_ns);
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

/* After the user consumed bytes: announce a window that opened by enough beyond the
 * one advertised (receiver silly-window avoidance, RFC 9293 3.8.6.2.2). */
static void window_update(struct tcp_sock *s)
{
	uint32_t now, adv;
	if (s->state != TCP_ESTABLISHED && s->state != TCP_FIN_WAIT_1 && s->state != TCP_FIN_WAIT_2)
		return;
	now = tcp_rcv_window(s);
	if (now > (uint32_t)0xffff << s->rcv_wscale)
		now = (uint32_t)0xffff << s->rcv_wscale; /* the most the header can say */
	adv = SEQ_GT(s->rcv_adv, s->rcv_nxt) ? s->rcv_adv - s->rcv_nxt : 0;
	if (now <= adv)
		return;
	if (now - adv >= 2u * s->mss || (adv < s->mss && now >= s->mss) || now >= TCP_RCV_BUF / 2 + adv)
		tcp_send_ack_now(s);
}

int tcp_recv_frags(struct tcp_sock *s, struct netdev_frag *out, unsigned max, size_t max_bytes)
{
	unsigned n = 0;

	while (n < max && max_bytes && !list_empty(&s->rxq)) {
		struct tcp_rxent *r = container_of(s->rxq.next, struct tcp_rxent, node);
		if (r->frag.len > max_bytes) {
			struct netdev_frag tail;
			if (netdev_frag_split(&r->frag, max_bytes, &tail))
				break;
			out[n++] = r->frag;
			s->rxq_bytes -= r->frag.len;
			r->frag = tail;
			r->seq += (uint32_t)max_bytes;
			max_bytes = 0;
			break;
		}
		list_del(&r->node);
		out[n++] = r->frag;
		s->rxq_bytes -= r->frag.len;
		s->rxq_frags--;
		max_bytes -= r->frag.len;
		mm_pool_free(&tcp_rxent_pool, r);
	}
	if (n)
		window_update(s);
	return (int)n;
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
	if (done)
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

static bool can_send(const struct tcp_sock *s)
{
	return !s->fin_queued && (s->state == TCP_ESTABLISHED || s->state == TCP_CLOSE_WAIT ||
				  s->state == TCP_SYN_SENT || s->state == TCP_SYN_RECEIVED);
}

size_t tcp_send_space(const struct tcp_sock *s)
{
	if (!can_send(s))
		return 0;
	return s->sndq_bytes < TCP_SND_BUF ? TCP_SND_BUF - s->sndq_bytes : 0;
}

static int sndq_add(struct tcp_sock *s, const struct netdev_frag *f, bool chunk)
{
	struct tcp_sndent *e = mm_pool_zalloc(&tcp_sndent_pool);
	if (!e)
		return -ENOBUFS;
	list_init(&e->node);
	e->seq = s->snd_end;
	e->frag = *f;
	e->chunk = chunk;
	list_add_tail(&s->sndq, &e->node);
	s->snd_end += f->len;
	s->sndq_bytes += f->len;
	return 0;
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
	else if (total > tcp_send_space(s) || tcp_sndent_pool.capacity - tcp_sndent_pool.in_use < n)
		rc = -ENOBUFS;
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
		sndq_add(s, &frags[i], false);
	}
	tcp_output(s);
	return 0;
}

long tcp_send_copy(struct tcp_sock *s, const void *buf, size_t len)
{
	const uint8_t *src = buf;
	size_t space, done = 0;

	if (!can_send(s))
		return s->fin_queued ? -EPIPE : -ENOTCONN;
	space = tcp_send_space(s);
	if (len > space)
		len = space;
	/* Fill the last chunk if it has room and nothing of its tail was sent. */
	if (len && !list_empty(&s->sndq)) {
		struct tcp_sndent *e = container_of(s->sndq.prev, struct tcp_sndent, node);
		if (e->chunk && e->frag.len < TCP_CHUNK_SIZE) {
			size_t n = TCP_CHUNK_SIZE - e->frag.len < len ? TCP_CHUNK_SIZE - e->frag.len : len;
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
		if (chunk_frag(src + done, n, &f))
			break;
		if (sndq_add(s, &f, true)) {
			netdev_frag_release(&f);
			break;
		}
		done += n;
	}
	if (done)
		tcp_output(s);
	return done ? (long)done : (len ? -ENOBUFS : 0);
}

void tcp_flush(struct tcp_sock *s)
{
	tcp_output(s);
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
	memset(o, 0, sizeof(*o));
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
