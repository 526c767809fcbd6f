/*
 * tcp_internal.h - the transmission control block and what tcp.c and tcp_out.c share.
 * Names follow RFC 9293 section 3.3.1 (SND.UNA = snd_una, ...).
 */
#ifndef NET_TCP_TCP_INTERNAL_H
#define NET_TCP_TCP_INTERNAL_H

#include <errno.h>
#include <string.h>
#include "../../lib/byteorder.h"
#include "../../lib/timer.h"
#include "../../mm/pool.h"
#include "../net_internal.h"
#include "tcp.h"

/* Sequence comparisons modulo 2^32 (RFC 9293 3.4). */
#define SEQ_LT(a, b) ((int32_t)((uint32_t)(a) - (uint32_t)(b)) < 0)
#define SEQ_LEQ(a, b) ((int32_t)((uint32_t)(a) - (uint32_t)(b)) <= 0)
#define SEQ_GT(a, b) SEQ_LT(b, a)
#define SEQ_GEQ(a, b) SEQ_LEQ(b, a)

#define TCP_MSS_DEFAULT 536   /* RFC 9293 3.7.1 when the peer sends no MSS option */

/* Bytes a send entry holds in itself (buf): a PDU header or a response capsule (an
 * NVMe/TCP C2HData header, R2T or CapsuleResp is 24 bytes, 28 with a header digest) is
 * placed there instead of in a chunk, which cost a chunk's take and release (~130
 * instructions a PDU). */
#define TCP_SNDENT_INLINE 32

/* One run of queued send bytes: a user fragment (zero copy), a stack chunk, or bytes in
 * the entry itself (buf). */
struct tcp_sndent {
	struct list_node node;
	uint32_t seq;                /* sequence number of its first byte */
	struct netdev_frag frag;     /* the user's reference, released when done */
	unsigned inflight;           /* TX netbufs still referring to it */
	bool done;                   /* acknowledged or discarded: free when inflight == 0 */
	uint16_t cap;                /* bytes frag may grow to: a stack chunk (TCP_CHUNK_SIZE) or
				      * buf (TCP_SNDENT_INLINE), appended to by the copy API;
				      * 0: a user fragment */
	struct tcp_sock *sock;       /* whose share it counts in (valid while sock_id lives at slot) */
	uint64_t sock_id;
	uint16_t slot;
	uint8_t buf[TCP_SNDENT_INLINE] __attribute__((aligned(8))); /* frag's bytes when cap is TCP_SNDENT_INLINE */
};

/* One run of received bytes. */
struct tcp_rxent {
	struct list_node node;
	uint32_t seq;
	struct netdev_frag frag;
};

struct tcp_sock {
	struct list_node node;          /* all sockets */
	uint64_t id;                    /* unique per boot (tcp_pools.c) */
	uint16_t slot;                  /* index in the socket pool */
	unsigned chunks_tx, chunks_rx, sndents; /* pool shares held (tcp_pools.c) */
	struct list_node *snd_spare;    /* freed entries of its reserve kept for its next ones
					 * (tcp_sndent_give), their nodes linked by next; NULL: none */
	uint64_t born_ns;               /* creation: eviction takes the oldest (tcp_admit.c) */
	bool passive;                   /* opened by a peer's SYN to a listener */
	bool authorised;                /* tcp_set_authorised(): never evicted */
	enum tcp_state state;
	uint32_t laddr, raddr;
	uint16_t lport, rport;
	struct net_route route;         /* its frames' Ethernet and IPv4 headers (ipv4_output_route) */
	/* What tcp_xmit puts in every header from the addresses and ports, which never change
	 * once a socket sends (set before its first segment, tcp_connect and rx_listen):
	 * computed at its first segment (tx_tmpl). */
	bool tx_tmpl;
	uint32_t tx_ports;              /* SRC.PORT << 16 | DST.PORT: one big-endian word on the wire */
	uint32_t tx_psum;               /* the TCP pseudo-header sum without the length (RFC 9293 3.1) */
	/* The headers of its run frames (tcp_out.c tcp_run_first), kept across passes: Ethernet
	 * and IPv4 from the route's template with an MSS frame's total length, TCP with the
	 * ports, ACK alone and the pseudo-header sum; SEG.ACK and WINDOW as the last run's first
	 * frame left them, SEG.SEQ, the identification and the IPv4 checksum zero. Valid while
	 * tx_hdr_gen == route.gen (0: never built) and tx_hdr_mss == mss. tx_hdr_ipbase: the
	 * route's IPv4 sum plus that total length. */
	uint32_t tx_hdr_gen, tx_hdr_ipbase;
	uint16_t tx_hdr_mss;
	uint8_t tx_hdr[sizeof(((struct net_route *)0)->hdr) + TCP_HLEN_MIN] __attribute__((aligned(8)));

	/* The header image of its data segments as they arrive (tcp_in.c tcp_rx_flow): the
	 * Ethernet, IPv4 and TCP header bytes tcp_rx_flow's masks keep (destination MAC, type,
	 * version and IHL, no fragment, protocol, addresses, ports, data offset, ACK), as six
	 * little-endian words, built from the socket and the interface when rx_flow_gen was
	 * net_if0.route_gen (0: never). */
	uint32_t rx_flow_gen;
	uint64_t rx_flow_want[6];

	/* listener / child */
	struct tcp_sock *listener;      /* child not yet accepted */
	struct list_node children;      /* listener: accept queue (established children) */
	struct list_node child_node;
	unsigned backlog, n_children;   /* half-open + waiting for accept */

	/* send sequence space */
	uint32_t iss, snd_una, snd_nxt, snd_max, snd_wnd, snd_wl1, snd_wl2, max_snd_wnd;
	uint32_t snd_end;               /* sequence number after the last queued byte */
	uint8_t snd_wscale, rcv_wscale;
	uint16_t mss;                   /* send MSS */
	uint32_t cwnd, ssthresh, recover;
	uint32_t cwnd_acked;            /* bytes acknowledged towards the next congestion-avoidance step */
	unsigned dupacks;
	bool in_recovery;
	bool fin_queued;                /* the user shut down sending: FIN at snd_end */
	struct list_node sndq;
	size_t sndq_bytes;
	struct tcp_sndent *snd_cursor;  /* an entry of sndq at or before the next byte to send
					 * (NULL: none): frames gather from it, not from the head */

	/* receive sequence space */
	uint32_t irs, rcv_nxt, rcv_adv; /* rcv_adv: right edge of the window we advertised */
	uint32_t win_nxt;               /* RCV.NXT when tcp_advertise last computed the window */
	struct list_node rxq, ooo;
	size_t rxq_bytes;
	unsigned rxq_frags, ooo_frags;
	bool fin_rcvd;                  /* FIN processed (rcv_nxt covers it) */
	bool ooo_fin;                   /* FIN seen beyond a hole, at ooo_fin_seq */
	uint32_t ooo_fin_seq;
	bool ack_now, ack_delayed;
	bool ack_pass_end;            /* an ACK is owed at the end of this receive batch (tcp_ack_every) */
	bool ack_hold;                  /* the user promised an answer for the bytes up to ack_hold_seq */
	bool ack_held;                  /* t_delack is that hold's bound (tcp_ack_hold_ns) */
	bool ack_held_edge;             /* ... and its answer's ACK leaves the edge (tcp_ack_held) */
	uint64_t ack_due_ns;            /* while ack_delayed: when that ACK must go (t_delack may be
					 * armed sooner: it is left armed after an ACK went out, and
					 * re-arms itself for this when it fires early, tcp.c) */
	uint32_t ack_hold_seq;          /* (tcp_ack_hold) */
	unsigned segs_unacked;
	struct list_node held_node;     /* on tcp_out.c's list while a short tail waits */
	struct list_node txwait_node;   /* on tcp_out.c's list while waiting for transmit ring space */
	bool out_pass;                  /* inside tcp_output's loop: the window is computed once */
	bool adv_fresh;                 /* ... and rcv_adv already holds this pass's window */
	uint16_t adv_field;             /* ... its WINDOW field, scaled (valid while adv_fresh) */
	uint32_t syn_wnd;               /* window our SYN (active open) offered */

	/* receive buffer budget (tcp_budget.c) */
	uint32_t rcv_cap;               /* window limit in segments, grows while the peer uses it */
	uint32_t rcv_cap_seq;           /* RCV.NXT when rcv_cap last grew */
	uint32_t rcv_rate_seq;          /* RCV.NXT at rcv_rate_ns: the start of a rate period */
	uint64_t rcv_rate_ns;           /* (tcp_rcv_cap_grow: a whole window within TCP_RCV_CAP_PERIOD_NS) */
	bool rwnd_starved;              /* the window was held small for want of device buffers */
	bool bud_listed;                /* in the table: counted in the budget's sums */
	bool bud_receiving;             /* counted as receiving in the sums */
	unsigned bud_promised;          /* its promised buffers as counted in the sums */
	uint32_t bud_nxt;               /* RCV.NXT when last noted (tcp_budget_note) */
	/* The window with its queues empty (tcp_budget.c rcv_window_steady): tcp_rcv_space's
	 * bounds TCP_RCV_BUF, TCP_RXQ_FRAGS_MAX segments of mss and rcv_cap buffers of win_bpb
	 * bytes, the least, and the buffers it promises (ceil(win_full / win_bpb)). 0: not
	 * known. Invalidated (win_full = 0) by every writer of rcv_cap and mss after the
	 * socket's creation (which zeroes it): tcp_rcv_cap_grow, apply_syn_options (tcp_in.c);
	 * an MTU change is caught by win_bpb, compared with tcp_rcv_bpb() at each use. */
	uint32_t win_full, win_full_bufs, win_bpb;

	/* SACK, receiver side (RFC 2018, tcp_sack.c) */
	bool sack_ok;                   /* SACK-permitted sent and received */
	unsigned sack_nrecent;
	uint32_t sack_recent[TCP_SACK_RECENT]; /* a byte of recently received ooo segments, newest first */
	bool dsack;                     /* report [dsack_start, dsack_end) first in the next ACK (RFC 2883) */
	uint32_t dsack_start, dsack_end;

	/* timing (RFC 6298) */
	uint64_t srtt_ns, rttvar_ns, rto_ns;
	bool rtt_valid, timing;
	uint32_t rtt_seq;
	uint64_t rtt_start_ns;
	unsigned backoff;               /* consecutive timeouts */
	bool persist;                   /* t_rexmit is the zero-window probe timer */
	uint64_t zwnd_since_ns;         /* first zero-window probe of this closed window, 0: open */
	struct timer t_rexmit, t_delack, t_keep;
	uint64_t keep_idle_ns, keep_intvl_ns, last_rx_ns;
	unsigned keep_count, keep_probes;

	/* RFC 5961 section 7: challenge ACKs sent in the window that began at chack_start_ns */
	uint64_t chack_start_ns;
	unsigned chack_sent, chack_limit;

	/* user */
	const struct tcp_ops *ops;
	void *ctx;
	bool user_closed;
	unsigned pending_events;
	int error;
	/* A send was refused for want of room (tcp_send_frags, tcp_send_copy, tcp_send_place):
	 * the user waits for TCP_EV_SENT. An ACK brings it when something of s's is in flight;
	 * t_sendwake brings it when what frees the room is not an ACK (tcp_send_refused). */
	bool send_refused;
	struct timer t_sendwake;
	/* The TCP_EV_SENT (or 0) that the next ACK of new bytes raises, and what it is set back
	 * to after that ACK: both TCP_EV_SENT (every such ACK raises it, the default), or
	 * ack_sent_idle 0 on a socket whose user takes the event only when owed
	 * (tcp_set_sent_when_owed): then ack_sent_ev is TCP_EV_SENT from a refusal
	 * (tcp_send_refused) until the ACK or t_sendwake that delivers it. Writers: tcp_sock_new,
	 * tcp_set_sent_when_owed, tcp_send_refused, sendwake_timer, the ACK paths (tcp_in.c). */
	unsigned ack_sent_ev, ack_sent_idle;

	/* counters */
	uint64_t retransmits, fast_retransmits, timeouts, segs_in, segs_out, dup_segs, ooo_segs;
};

extern struct tcp_stats tcp_counters;
extern struct list_node tcp_socks;
/* In-order full-sized segments after which an ACK goes at once; from the second on, the ACK
 * owed waits for the end of the receive batch (tcp_rx_batch_end, tcp_set_ack_every). */
extern unsigned tcp_ack_every;
/* net.tcp_ack_hold_us in ns: the longest a batch ACK waits for a promised answer. */
extern uint64_t tcp_ack_hold_ns;

/* tcp_out.c */
#define TCP_OUTPUT_BUDGET 64 /* frames one tcp_output pass sends at most */
void tcp_output_work(struct tcp_sock *s, bool hold);
/* tcp_flush for a PDU queued whole behind nothing unsent, t its tail (tcp_out.c); false: not sent. */
bool tcp_flush_pdu(struct tcp_sock *s, struct tcp_sndent *t);
/* tcp_flush for a response placed alone in an entry of its own (tcp_out.c); false: not sent. */
bool tcp_flush_one(struct tcp_sock *s);

/* Nothing to send: no unsent byte, no FIN, no ACK owed, in a state where tcp_output_work
 * would send nothing (most calls, after a segment that needs no reply). */
static inline bool tcp_output_idle(const struct tcp_sock *s)
{
	return !s->ack_now && !s->fin_queued && !SEQ_LT(s->snd_nxt, s->snd_end) &&
	       (s->state == TCP_ESTABLISHED || s->state == TCP_CLOSE_WAIT);
}

/* Send what the windows allow, then an ACK owed (tcp_out.c). Inline: the idle test
 * costs less than the call. */
static inline void tcp_output(struct tcp_sock *s)
{
	if (!tcp_output_idle(s))
		tcp_output_work(s, false);
}

/* s keeps a short tail back: on the list tcp_flush's poller (tcp_tx_poll) empties. */
void tcp_output_hold(struct tcp_sock *s);

/* tcp_output_more's tests (see there; keep them its), for callers that queue several pieces
 * at once or flush right after (tcp.c: tcp_send_placed_frags_tail, tcp_send_placed_frags_tail_flush,
 * tcp_send_placed_flush).
 * tcp_output_held: a tail held already, with `more` bytes queued beyond what is queued now:
 * while it holds, tcp_output_more returns at once, now and after those bytes are queued
 * (nothing it reads changes in between but SND.END). tcp_output_would_hold: s not held, a
 * tail shorter than the MSS the windows let go now: tcp_output_more would only put s on
 * the held list for tcp_flush, whose every path takes it off first when no batch ACK is
 * owed at the pass's end (!ack_pass_end): a caller flushing right after may skip both. */
static inline bool tcp_output_held(const struct tcp_sock *s, uint32_t more)
{
	return !s->ack_now && !s->fin_queued && s->state == TCP_ESTABLISHED && !list_empty(&s->held_node) &&
	       s->snd_end + more - s->snd_nxt <= TCP_OUTPUT_BUDGET * (uint32_t)s->mss;
}
static inline bool tcp_output_would_hold(const struct tcp_sock *s)
{
	uint32_t wnd = s->snd_wnd < s->cwnd ? s->snd_wnd : s->cwnd, flight = s->snd_nxt - s->snd_una;
	uint32_t unsent = s->snd_end - s->snd_nxt;
	return !s->ack_now && !s->fin_queued && s->state == TCP_ESTABLISHED && list_empty(&s->held_node) &&
	       unsent < s->mss && SEQ_LT(s->snd_nxt, s->snd_end) && wnd > flight && unsent <= wnd - flight;
}

/* tcp_output from tcp_send_*: a last segment shorter than the MSS may wait for tcp_flush
 * or the end of the poll pass (see tcp_out.c). A tail alone (a PDU header, a response)
 * is held here without a pass over the windows: tcp_flush makes that pass once. And
 * what is queued behind a tail already held waits with it (the user is still queueing):
 * the pass that sends the tail sends it all, one pass for a whole 4 KiB NVMe/TCP read
 * (C2HData header, data, CapsuleResp: three calls, two passes before, ~240 instructions a
 * read more for the second pass's window, setup and last turn), as long as one pass
 * (TCP_OUTPUT_BUDGET frames) can send it: beyond, full segments go at once as before, so
 * that what the windows allow never waits for the peer's next ACK. */
static inline void tcp_output_more(struct tcp_sock *s)
{
	if (tcp_output_idle(s))
		return;
	if (!s->ack_now && !s->fin_queued && s->state == TCP_ESTABLISHED) {
		if (!list_empty(&s->held_node) && s->snd_end - s->snd_nxt <= TCP_OUTPUT_BUDGET * (uint32_t)s->mss)
			return; /* held already: tcp_flush or the end of the pass sends it all (what
				 * one pass can: more takes a pass now, as before) */
		if (s->snd_end - s->snd_nxt < s->mss && SEQ_LT(s->snd_nxt, s->snd_end)) {
			/* only a tail the windows would let go now: one they hold back takes the
			 * full pass (sender SWS avoidance, the zero-window probe) */
			uint32_t wnd = s->snd_wnd < s->cwnd ? s->snd_wnd : s->cwnd, flight = s->snd_nxt - s->snd_una;
			if (wnd > flight && s->snd_end - s->snd_nxt <= wnd - flight) {
				tcp_output_hold(s);
				return;
			}
		}
	}
	tcp_output_work(s, true);
}
/* s is freed: off the list of sockets holding a short segment back. */
void tcp_output_forget(struct tcp_sock *s);
int tcp_send_ctl(struct tcp_sock *s, uint32_t seq, uint8_t flags);
void tcp_send_reset(uint32_t laddr, uint32_t raddr, uint16_t lport, uint16_t rport, uint32_t seq, uint32_t ack,
		    uint8_t flags);
void tcp_send_ack_now(struct tcp_sock *s);
void tcp_send_challenge_ack(struct tcp_sock *s);
uint32_t tcp_seg_cut(struct tcp_sock *s, uint32_t seq, uint32_t len);

/* Payload bytes one frame may carry: the MSS, or the device's tso_max when it segments
 * TCP itself (NETDEV_F_TSO with NETDEV_F_TX_CSUM). */
uint32_t tcp_frame_max(const struct tcp_sock *s);

/* tcp_budget.c */
void tcp_budget_init(void);
void tcp_budget_fini(void);
uint32_t tcp_rcv_window(struct tcp_sock *s);
/* tcp_advertise's window (not a SYN's): when tcp_rcv_window's steady case holds (its
 * queues empty, win_full valid, the budget lets s promise win_full_bufs), s's advertised
 * edge is moved as tcp_advertise would for that window (at most the WINDOW field's limit)
 * and noted in the budget, and the window advertised is returned (rcv_adv - RCV.NXT, never
 * 0); else 0, with *win tcp_rcv_window's answer for tcp_advertise's general path. */
uint32_t tcp_rcv_window_advertise(struct tcp_sock *s, uint32_t *win);
/* Payload bytes one receive buffer holds at most: the MSS we announce. */
static inline uint32_t tcp_rcv_bpb(void)
{
	return net_if0.dev && net_if0.dev->mtu > 40 ? net_if0.dev->mtu - 40 : TCP_MSS_DEFAULT;
}

/* What s's queues and window limit allow, before the buffer budget: tcp_rcv_window's
 * first part, and never below what tcp_rcv_window returns. *budgeted: the device's buffers
 * (or the chunks) bound it further. Inline: every window computed and every read asks. */
static inline size_t tcp_rcv_space(const struct tcp_sock *s, bool *budgeted)
{
	size_t space = TCP_RCV_BUF > s->rxq_bytes ? TCP_RCV_BUF - s->rxq_bytes : 0;
	unsigned frags = s->rxq_frags + s->ooo_frags;
	size_t by_frags = frags < TCP_RXQ_FRAGS_MAX ? (size_t)(TCP_RXQ_FRAGS_MAX - frags) * s->mss : 0;
	const struct netdev *d = net_if0.dev;

	if (by_frags < space)
		space = by_frags;
	*budgeted = d && (d->rx_bufs || !(d->features & NETDEV_F_RX_SPLIT));
	if (!*budgeted)
		return space; /* a device that does not say what it lends is not budgeted */
	if (space > (size_t)s->rcv_cap * tcp_rcv_bpb())
		space = (size_t)s->rcv_cap * tcp_rcv_bpb();
	return space;
}

/* An upper bound of tcp_rcv_window(s) (queues and window limit, no budget): cheap. */
static inline uint32_t tcp_rcv_window_max(const struct tcp_sock *s)
{
	bool budgeted;
	return (uint32_t)tcp_rcv_space(s, &budgeted);
}
/* What tcp_rcv_window_max(s) is with both of s's queues empty, and an upper bound of it
 * whatever they hold, read from s's win_full (above) while that is valid: not 0
 * (every writer of rcv_cap and mss zeroes it), computed for the bytes per buffer of the
 * interface's MTU now (win_bpb), and the device lends buffers (tcp_rcv_space then bounds
 * by rcv_cap as win_full does); 0 when not known. Its callers (tcp_advertise,
 * tcp_ack_held, window_update) compute tcp_rcv_window_max(s) when it is 0. Two compares
 * with the device instead of tcp_rcv_space's sums and products. */
static inline __attribute__((always_inline)) uint32_t tcp_rcv_window_max_known(const struct tcp_sock *s)
{
	const struct netdev *d = net_if0.dev;

	if (!s->win_full || !d || !d->rx_bufs || d->mtu <= 40 || s->win_bpb != d->mtu - 40)
		return 0;
	return s->win_full;
}
/* s's state, RCV.NXT, advertised edge or out-of-order count changed: update the sums
 * every window is computed from (call after the change; cheap). */
void tcp_budget_note(struct tcp_sock *s);
/* The socket whose note waits, or NULL (tcp_budget.c). */
extern struct tcp_sock *tcp_budget_pending;
void tcp_budget_note_pending(void);
/* tcp_budget_note, later: header prediction moved s's RCV.NXT and queues, and the sums
 * need s's share only when a window is next computed (tcp_rcv_window notes a waiting
 * socket other than its own first; its own share it leaves out, and tcp_advertise notes s
 * when the edge moves), so the segments between two windows cost at most one note. One socket waits at
 * a time: another one's note is made first. Always inline: every data segment (gcc kept an
 * out-of-line copy, a call per segment). */
static inline __attribute__((always_inline)) void tcp_budget_note_later(struct tcp_sock *s)
{
	if (tcp_budget_pending != s) {
		if (tcp_budget_pending)
			tcp_budget_note_pending();
		tcp_budget_pending = s;
	}
}
/* s leaves the socket table. */
void tcp_budget_forget(struct tcp_sock *s);
/* tcp_rx_reserve of a device lending rx_bufs buffers: an eighth of the pool, at least
 * TCP_RX_RESERVE_MIN, at most half. */
static inline unsigned tcp_rx_reserve_of(unsigned rx_bufs)
{
	unsigned r = rx_bufs / 8;
	if (r < TCP_RX_RESERVE_MIN)
		r = TCP_RX_RESERVE_MIN;
	if (r > rx_bufs / 2)
		r = rx_bufs / 2;
	return r;
}

/* May a received payload buffer be kept? Not when it came out of the reserve. Inline:
 * every data segment asks. */
static inline bool tcp_rx_buf_admit(void)
{
	const struct netdev *d = net_if0.dev;
	if (!d || !d->rx_bufs)
		return true;
	return d->rx_bufs_out <= d->rx_bufs - tcp_rx_reserve_of(d->rx_bufs);
}
void tcp_rcv_cap_grow(struct tcp_sock *s);

/* tcp_sack.c */
void tcp_sack_note(struct tcp_sock *s, uint32_t seq);
size_t tcp_sack_option(struct tcp_sock *s, uint8_t *p, size_t room);
void tcp_rexmit_timer(struct timer *t, void *arg);
void tcp_arm_rexmit(struct tcp_sock *s);
void tcp_retransmit_una(struct tcp_sock *s);
void tcp_sndent_free_unlocked(struct tcp_sndent *e);
/* An entry is freed once done and unreferenced (tcp_sndent_free_unlocked, in
 * tcp_pools.c); its user fragment goes back then. */
static inline void tcp_sndent_put(struct tcp_sndent *e)
{
	if (e->done && e->inflight == 0)
		tcp_sndent_free_unlocked(e);
}

/* One received segment's header, parsed into host-order locals (tcp_hdr.c). */
struct tcp_opts {
	bool has_mss, has_ws, sack_perm;
	bool has_sack;                  /* a SACK option: its first block in sack_left/right */
	uint32_t sack_left, sack_right;
	uint16_t mss;
	uint8_t ws;
};
struct tcp_seg {
	uint16_t sport, dport;
	uint32_t seq, ack, len;  /* SEG.SEQ, SEG.ACK; len: payload bytes (SYN/FIN not counted) */
	uint32_t wnd;            /* SEG.WND, unscaled */
	uint8_t flags, hlen;     /* hlen: header bytes (data offset x 4) */
	struct tcp_opts opts;
};
/* The options after the fixed header (len bytes at p) into o (zeroed by the caller). */
void tcp_hdr_options(const uint8_t *p, size_t len, struct tcp_opts *o);

/* Parse the header at the front of a segment of seg_len bytes, of which the first avail
 * (at most TCP_HLEN_MIN + TCP_OPT_SPACE) are in b. Returns 0 or -EINVAL (data offset
 * below 5 words or beyond the segment, header not in b, port 0). Inline: every segment
 * takes it (tcp_hdr_parse is the same, out of line). */
static inline int tcp_hdr_read(const uint8_t *b, size_t avail, size_t seg_len, struct tcp_seg *g)
{
	struct tcp_hdr th;
	size_t hlen;

	if (avail > seg_len || avail < sizeof(th))
		return -EINVAL;
	memcpy(&th, b, sizeof(th));
	hlen = (size_t)(th.data_offset >> 4) * 4;
	if (hlen < TCP_HLEN_MIN || hlen > avail)
		return -EINVAL;
	g->sport = be16_get(th.src_port);
	g->dport = be16_get(th.dst_port);
	if (g->sport == 0 || g->dport == 0)
		return -EINVAL;
	g->hlen = (uint8_t)hlen;
	g->seq = be32_get(th.seq);
	g->ack = be32_get(th.ack);
	g->flags = th.flags;
	g->wnd = be16_get(th.window);
	g->len = (uint32_t)(seg_len - hlen);
	memset(&g->opts, 0, sizeof(g->opts));
	if (hlen > sizeof(th)) /* most segments carry none */
		tcp_hdr_options(b + sizeof(th), hlen - sizeof(th), &g->opts);
	return 0;
}
int tcp_hdr_parse(const uint8_t *b, size_t avail, size_t seg_len, struct tcp_seg *g);

/* tcp_pools.c */
extern unsigned tcp_chunks_borrowed, tcp_sndents_borrowed;
int tcp_pools_init(void);
bool tcp_pools_busy(void);
void tcp_pools_fini(void);
void tcp_pools_sock_new(struct tcp_sock *s, unsigned slot);
void tcp_pools_sock_gone(struct tcp_sock *s);
/* Is the socket that had id at slot (its s->id, s->slot) still alive? Never touches a freed
 * socket: a caller that kept a pointer across user code asks this before using it. */
bool tcp_sock_alive(uint16_t slot, uint64_t id);
/* A chunk with a copy of len (<= TCP_CHUNK_SIZE) bytes for s, as a host fragment, within
 * s's share (rx: received bytes, which never use the reserve). 0 or -ENOBUFS. */
int tcp_chunk_frag(struct tcp_sock *s, bool rx, const void *src, size_t len, struct netdev_frag *f);
/* Chunks s may still take for received bytes (its share and the shared part). */
unsigned tcp_chunk_rx_room(const struct tcp_sock *s);
static inline unsigned tcp_pool_over(unsigned held, unsigned reserve)
{
	return held > reserve ? held - reserve : 0;
}
/* Chunks s holds beyond its reserve. */
static inline unsigned tcp_chunk_borrowed(const struct tcp_sock *s)
{
	return tcp_pool_over(s->chunks_tx, TCP_CHUNK_RESERVE) + s->chunks_rx;
}
/* Bytes of new chunks s may still take for sending. Inline: every send asks. */
static inline size_t tcp_chunk_space(const struct tcp_sock *s)
{
	unsigned own = TCP_CHUNK_RESERVE > s->chunks_tx ? TCP_CHUNK_RESERVE - s->chunks_tx : 0;
	unsigned b = tcp_chunk_borrowed(s);
	unsigned mine = TCP_CHUNK_BORROW_MAX > b ? TCP_CHUNK_BORROW_MAX - b : 0;
	unsigned pool = TCP_CHUNK_SHARED > tcp_chunks_borrowed ? TCP_CHUNK_SHARED - tcp_chunks_borrowed : 0;
	return (size_t)(own + (mine < pool ? mine : pool)) * TCP_CHUNK_SIZE;
}
/* Send entries s may still take. Inline: every send asks. */
static inline unsigned tcp_sndent_room(const struct tcp_sock *s)
{
	unsigned own = TCP_SNDENT_RESERVE > s->sndents ? TCP_SNDENT_RESERVE - s->sndents : 0;
	unsigned b = tcp_pool_over(s->sndents, TCP_SNDENT_RESERVE);
	unsigned mine = TCP_SNDENT_BORROW_MAX > b ? TCP_SNDENT_BORROW_MAX - b : 0;
	unsigned pool = TCP_SNDENT_SHARED > tcp_sndents_borrowed ? TCP_SNDENT_SHARED - tcp_sndents_borrowed : 0;
	return own + (mine < pool ? mine : pool);
}
extern struct mm_pool tcp_sndent_pool;
/* A send entry just taken for s: not in flight, not done, not a chunk, s's. */
static inline void tcp_sndent_init(struct tcp_sndent *e, struct tcp_sock *s)
{
	e->inflight = 0;
	e->done = false;
	e->cap = 0;
	e->sock = s;
	e->sock_id = s->id;
	e->slot = s->slot;
}
/* tcp_sndent_alloc beyond s's reserve or with the pool empty (a borrowed entry, or NULL). */
struct tcp_sndent *tcp_sndent_alloc_slow(struct tcp_sock *s);
/* One send entry for s within its share (node, seq and frag for the caller to set), or
 * NULL. Inline: within the socket's reserve (every small PDU's entries) no share needs
 * summing, and the call into tcp_pools.c cost ~15 instructions an entry, ~50 a 4 KiB read.
 * An entry s gave back (tcp_sndent_give) first: no pool round trip, ~30 instructions an
 * entry less. */
static inline struct tcp_sndent *tcp_sndent_alloc(struct tcp_sock *s)
{
	if (__builtin_expect(s->snd_spare != NULL, 1)) { /* (s's own, kept: sock, sock_id, slot s's) */
		struct tcp_sndent *k = container_of(s->snd_spare, struct tcp_sndent, node);
		s->snd_spare = k->node.next;
		s->sndents++;
		k->inflight = 0;
		k->done = false;
		k->cap = 0;
		return k;
	}
	if (__builtin_expect(s->sndents >= TCP_SNDENT_RESERVE || !mm_pool_has_free(&tcp_sndent_pool), 0))
		return tcp_sndent_alloc_slow(s);
	struct tcp_sndent *e = mm_pool_take(&tcp_sndent_pool);
	s->sndents++;
	tcp_sndent_init(e, s);
	return e;
}

/* Give back e, an entry s holds (s alive, e unlinked, its fragment released): one of its
 * reserve is kept on s->snd_spare for its next entry (no pool round trip, sock, sock_id and
 * slot stay), a borrowed one goes back to the pool. Kept entries stay within the reserve:
 * s->sndents plus the entries kept never exceed TCP_SNDENT_RESERVE (one is kept only when
 * s held no borrowed entry, so that at most its reserve is out of the pool for s, as
 * before; tcp_sndent_alloc takes a kept one first), and tcp_pools_sock_gone gives them back
 * when s goes. */
static inline void tcp_sndent_give(struct tcp_sock *s, struct tcp_sndent *e)
{
	if (__builtin_expect(s->sndents-- <= TCP_SNDENT_RESERVE, 1)) {
		e->node.next = s->snd_spare;
		s->snd_spare = &e->node;
		return;
	}
	tcp_sndents_borrowed--;
	mm_pool_free(&tcp_sndent_pool, e);
}

/* Free e, an entry of s's send queue (s alive, e unlinked, no frame referring to it):
 * tcp_sndent_free_unlocked without the test whether its socket lives. Inline: every
 * acknowledged entry (sndq_ack). */
static inline void tcp_sndent_free_own(struct tcp_sock *s, struct tcp_sndent *e)
{
	if (e->frag.owner) /* (an entry holding its bytes itself has none) */
		netdev_frag_release(&e->frag);
	tcp_sndent_give(s, e);
}

/* tcp_admit.c */
bool tcp_admit_syn(struct tcp_sock *l, uint32_t src);
bool tcp_admit_evict(void);
unsigned tcp_admit_backlog(unsigned want);

/* tcp_isn.c */
void tcp_isn_init(void);
/* RFC 6528 ISN for a connection: keyed hash of the 4-tuple plus a 4 us clock. */
uint32_t tcp_new_iss(uint32_t laddr, uint32_t raddr, uint16_t lport, uint16_t rport);
/* 32 unpredictable bits (keyed hash of a counter). */
uint32_t tcp_random_u32(void);
uint64_t tcp_siphash(const uint64_t k[2], const void *m, size_t len);

/* *d = *f in three 16-byte moves: gcc makes the plain assignment or a memcpy of the
 * 48-byte struct a rep movs in tcp_in.c's receive paths (17 counted instructions), field by field
 * costs 12. */
typedef uint64_t frag_v2 __attribute__((vector_size(16), may_alias, aligned(8)));
static inline void tcp_frag_copy(struct netdev_frag *d, const struct netdev_frag *f)
{
	_Static_assert(sizeof(*d) == 3 * sizeof(frag_v2), "a fragment is three 16-byte words");
	const frag_v2 *a = (const frag_v2 *)f;
	frag_v2 *b = (frag_v2 *)d;
	frag_v2 x = a[0], y = a[1], z = a[2];
	b[0] = x;
	b[1] = y;
	b[2] = z;
}

/* tcp_in.c */
void tcp_deliver_events(struct tcp_sock *s);
/* The socket whose in-order data segments the current receive batch gathers (its
 * TCP_EV_RECV and receive-window growth wait for tcp_rx_flush), or NULL. */
extern struct tcp_sock *tcp_rx_gro;
/* Frames tcp_rx_flow_any looked at (the receive flow's general path). */
extern uint64_t tcp_rx_flow_any_frames;

/* tcp.c */
extern struct mm_pool tcp_rxent_pool;
/* Receive entries users gave back (tcp_recv_frags: one splice per call, not a pool free
 * per entry), taken first for the next segments (tcp_in.c rxent_get): still in use to
 * tcp_rxent_pool, tcp_rxent_cached of them, back to it when a socket is freed. */
extern struct list_node tcp_rxent_cache;
extern unsigned tcp_rxent_cached;
void tcp_rxent_cache_drain(void);
extern struct netdev_frag_owner *const tcp_chunk_owner_p;
extern struct mm_pool tcp_sndent_pool;
struct tcp_sock *tcp_sock_new(void);
unsigned tcp_sock_free_slots(void);
void tcp_sock_free(struct tcp_sock *s);
void tcp_enter_time_wait(struct tcp_sock *s);
/* (Re)arm keep-alive from the peer's last segment when it is on and the state has it. */
void tcp_keep_arm(struct tcp_sock *s);
struct tcp_sock *tcp_lookup(uint32_t laddr, uint16_t lport, uint32_t raddr, uint16_t rport);
extern struct tcp_sock *tcp_rx_last;
/* tcp_lookup_rx when the last segment's connection is not this one's (tcp.c). */
struct tcp_sock *tcp_lookup_rx_slow(uint32_t laddr, uint16_t lport, uint32_t raddr, uint16_t rport);
/* tcp_lookup with the last segment's connection tried first (tcp_rx; see tcp.c). */
static inline struct tcp_sock *tcp_lookup_rx(uint32_t laddr, uint16_t lport, uint32_t raddr, uint16_t rport)
{
	struct tcp_sock *s = tcp_rx_last;
	if (s && s->rport == rport && s->lport == lport && s->raddr == raddr && s->laddr == laddr &&
	    s->state != TCP_LISTEN && s->state != TCP_CLOSED)
		return s;
	return tcp_lookup_rx_slow(laddr, lport, raddr, rport);
}
/* Sockets freed so far (tcp_sock_free): unchanged means every socket pointer held is good. */
extern unsigned long tcp_sock_frees;
void tcp_set_state(struct tcp_sock *s, enum tcp_state st);
void tcp_notify(struct tcp_sock *s, unsigned events);
/* A send of s refused for want of room: see t_sendwake (tcp.c). Out of line: rare. */
void tcp_send_refused(struct tcp_sock *s);
/* Entries of s that a device held past their ACK came back while s's user waits after a
 * refusal: TCP_EV_SENT from the next timer run (never from inside the release). */
void tcp_send_wake(struct tcp_sock *s);
void tcp_sock_closed(struct tcp_sock *s, int error);

#endif
