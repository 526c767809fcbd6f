/*
 * tcp.h - TCP (RFC 9293) sockets whose payload stays in device memory.
 *
 * Receive: the socket queues payload as fragments (provider, bus address, offset,
 * length, token) in sequence order; the stack never dereferences them. A consumer takes
 * fragments with tcp_recv_frags() and gives each back with netdev_frag_release() when
 * done (that returns the NIC's buffer), or peeks/copies small amounts (PDU headers,
 * control-plane bytes) through the counted accessor.
 * Send: tcp_send_frags() queues fragments without copying; the stack holds them until
 * the peer has acknowledged every byte and the NIC has finished every transmission that
 * referred to them, then releases them to their owner. tcp_send_copy() copies
 * host bytes into stack chunks for control-plane use.
 *
 * Events are delivered through one callback (tcp_ops.event) from the poll loop. A socket
 * belongs to its user from tcp_connect()/tcp_accept() until tcp_close(); after that the
 * stack finishes the close and frees it.
 *
 * Implemented: three-way handshake (active, passive, simultaneous), MSS and window
 * scale options (RFC 7323), sequence comparisons modulo 2^32, RFC 6298 RTO with Karn's
 * rule and exponential backoff, fast retransmit on 3 duplicate ACKs with Reno recovery,
 * slow start / congestion avoidance (RFC 5681), delayed ACK (every second full segment
 * or TCP_DELACK_NS), receiver and sender silly-window avoidance, zero-window probes,
 * FIN/RST, TIME_WAIT (2 MSL), RFC 5961 challenge ACKs for in-window RST and any SYN in a
 * synchronized state and its ACK-range check, listen backlog limits, keepalive, the
 * receiver side of SACK (RFC 2018: SACK-permitted, blocks for the out-of-order queue,
 * most recent first; RFC 2883 D-SACK for duplicates below RCV.NXT).
 * Not implemented: SACK-based sender recovery (NewReno only), timestamps (so no PAWS),
 * urgent data, ECN.
 *
 * Receive buffer budget (tcp_budget.c): payload fragments hold the NIC's receive buffers
 * (netdev rx_bufs) until every user let go of them. The stack keeps the buffers that all
 * sockets hold (queued, out of order, in send queues, with their users) plus the buffers
 * that their advertised windows may still bring in within rx_bufs minus a reserve, so
 * the ring always has buffers for header-only frames (ACKs, SYNs, FINs) that free held
 * ones. A connection starts with a window of TCP_RCV_CAP_INIT segments that doubles
 * each time its peer uses most of it (an idle connection keeps a small promise), and
 * gets at most a fair share of what is free; when it gets less than that it advertises
 * the smaller (even zero) window and sends a window update once buffers come back. Transmit: segments are cut at the netdev's device-gather
 * limits (tx_dev_frags, tx_dev_bytes) so that the NIC never has to copy them to DRAM.
 */
#ifndef NET_TCP_TCP_H
#define NET_TCP_TCP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "../../drivers/nic/netdev.h"

/* Timing (ns) and limits; tests use them to advance the fake clock. */
#define TCP_RTO_INITIAL_NS (1000ull * 1000 * 1000)   /* RFC 6298 2.1 */
#define TCP_RTO_MIN_NS (200ull * 1000 * 1000)        /* below RFC 6298's 1 s, as Linux: a LAN appliance */
#define TCP_RTO_MAX_NS (60ull * 1000 * 1000 * 1000)
#define TCP_DELACK_NS (40ull * 1000 * 1000)
#define TCP_ACK_EVERY_DEFAULT 32u /* net.tcp_ack_every (tcp_rx_batch_end) */
#define TCP_ACK_HOLD_US_DEFAULT 200u /* net.tcp_ack_hold_us (tcp_ack_hold) */
#define TCP_ACK_HOLD_US_MAX 40000u   /* never longer than our delayed ACK (TCP_DELACK_NS) */
#define TCP_MSL_NS (30ull * 1000 * 1000 * 1000)
#define TCP_FIN_WAIT_2_NS (60ull * 1000 * 1000 * 1000)
#define TCP_SYN_RETRIES 5                            /* our SYN (active open) */
#define TCP_SYNACK_RETRIES 3                         /* a half-open connection: 1+2+4+8 = 15 s */
#define TCP_DATA_RETRIES 12
#define TCP_PERSIST_MAX_NS (60ull * 1000 * 1000 * 1000) /* zero-window probing before the abort */
/* Keep-alive values for connections that may sit idle (the NVMe/TCP listener's, the test
 * services'): the first probe after 30 s without a segment from the peer, then one every
 * 5 s; the 4th unanswered probe resets the connection, at most 50 s after the peer's last
 * segment. Off unless a user sets them (RFC 9293 3.8.4). */
#define TCP_KEEPALIVE_IDLE_NS (30ull * 1000 * 1000 * 1000)
#define TCP_KEEPALIVE_INTVL_NS (5ull * 1000 * 1000 * 1000)
#define TCP_KEEPALIVE_PROBES 4
#define TCP_RCV_BUF (256u * 1024)                    /* receive window bytes per socket */
#define TCP_RCV_WSCALE 3                             /* our shift when the peer offers WS */
#define TCP_SND_BUF (256u * 1024)                    /* queued send bytes per socket */
#define TCP_RXQ_FRAGS_MAX 512                        /* fragments queued per socket (in order + out of order) */
#define TCP_OOO_FRAGS_MAX TCP_RXQ_FRAGS_MAX          /* backstop: out of order fragments are bounded by the
							* segments the window spans (tcp_in.c) */
#define TCP_RX_RESERVE_MIN 32                        /* device RX buffers kept for header-only frames */
#define TCP_BUDGET_KICK_NS (2ull * 1000 * 1000)      /* re-check windows held small for want of buffers */
#define TCP_TX_RETRY_NS (1ull * 1000 * 1000)         /* data the device refused, nothing in flight: again */
#define TCP_BUDGET_MIN_SHARES 2                      /* one socket's window: at most half the pool */
#define TCP_RCV_CAP_INIT 16                          /* receive window of a new connection, in segments */
#define TCP_RCV_CAP_PERIOD_NS (1000ull * 1000 * 1000) /* a peer that sends a whole window within this is
							* a bulk sender: its window doubles (tcp_budget.c) */
#define TCP_SACK_BLOCKS_MAX 4                        /* RFC 2018: 4 blocks fill 36 of the 40 option bytes */
#define TCP_SACK_RECENT 8                            /* recently received out-of-order segments remembered */
#define TCP_SOCKETS 160

/* Who gets a socket (tcp_admit.c). */
#define TCP_HALF_OPEN_MAX 32                         /* SYN_RECEIVED in all (the SYN cache) */
#define TCP_HALF_OPEN_PER_SOURCE 8
#define TCP_CONN_PER_SOURCE 64                       /* sockets per peer address (a 63-queue host) */
#define TCP_BACKLOG_TOTAL (TCP_SOCKETS / 2)          /* sum of listener backlogs */

/* Host-memory pools with a share per socket (tcp_pools.c): a reserve each socket's
 * sending can always use, and a shared rest of which one socket borrows at most 1/8. */
#define TCP_CHUNK_SIZE 2048                          /* host-memory chunk for copied bytes */
#define TCP_CHUNKS 4096                              /* 8 MiB: in copy mode (e1000e's plain
							* receive) the received payload too */
#define TCP_CHUNK_RESERVE 4                          /* 8 KiB of copied PDUs per socket, always */
#define TCP_CHUNK_SHARED (TCP_CHUNKS - TCP_SOCKETS * TCP_CHUNK_RESERVE)
#define TCP_CHUNK_BORROW_MAX (TCP_CHUNK_SHARED / 8)  /* 432 chunks: a full TCP_SND_BUF and more, or
							* 630 KB of received MSS segments */
#define TCP_RXENTS 8192                              /* queued received fragments, all sockets */
#define TCP_RXENT_RESERVE 16                         /* ... of which each socket can always get 16 */
#define TCP_SNDENTS 8192                             /* queued send fragments, all sockets */
#define TCP_SNDENT_RESERVE 16
#define TCP_SNDENT_SHARED (TCP_SNDENTS - TCP_SOCKETS * TCP_SNDENT_RESERVE)
#define TCP_SNDENT_BORROW_MAX (TCP_SNDENT_SHARED / 8)
#define TCP_CHALLENGE_ACKS_PER_SEC 100               /* RFC 5961 section 7: per socket, randomised +-50 % */

enum tcp_state {
	TCP_CLOSED = 0,
	TCP_LISTEN,
	TCP_SYN_SENT,
	TCP_SYN_RECEIVED,
	TCP_ESTABLISHED,
	TCP_FIN_WAIT_1,
	TCP_FIN_WAIT_2,
	TCP_CLOSE_WAIT,
	TCP_CLOSING,
	TCP_LAST_ACK,
	TCP_TIME_WAIT,
	TCP_STATE_COUNT
};

/* events */
#define TCP_EV_ACCEPT (1u << 0)     /* listener: a connection is ready for tcp_accept() */
#define TCP_EV_CONNECTED (1u << 1)  /* tcp_connect() completed */
#define TCP_EV_RECV (1u << 2)       /* data (or the peer's FIN) is readable */
#define TCP_EV_SENT (1u << 3)       /* bytes were acknowledged: send space grew */
#define TCP_EV_CLOSED (1u << 4)     /* reset, timeout or closed: see tcp_error() */

struct tcp_sock;

struct tcp_ops {
	void (*event)(struct tcp_sock *s, void *ctx, unsigned events);
};

/* Listen on port with at most backlog connections half-open or waiting for accept
 * (clamped so that all listeners' backlogs stay within TCP_BACKLOG_TOTAL; when full
 * of half-open ones, a new SYN replaces the oldest). 0, -EADDRINUSE, -ENOMEM, -ENOSPC
 * (the backlogs already add up to TCP_BACKLOG_TOTAL). */
int tcp_listen(uint16_t port, unsigned backlog, const struct tcp_ops *ops, void *ctx, struct tcp_sock **out);

/* The next established connection of a listener, or NULL. Its events wait until the
 * user calls tcp_set_ops (first TCP_EV_SENT, plus TCP_EV_RECV when data or a FIN arrived
 * before accept); the callback may close it, so do not touch it after tcp_set_ops. */
struct tcp_sock *tcp_accept(struct tcp_sock *listener);

/* Open a connection to addr:port (active open). 0 or negative errno; completion is
 * TCP_EV_CONNECTED or TCP_EV_CLOSED. */
int tcp_connect(uint32_t addr, uint16_t port, const struct tcp_ops *ops, void *ctx, struct tcp_sock **out);

void tcp_set_ops(struct tcp_sock *s, const struct tcp_ops *ops, void *ctx);

/* Mark a passively opened connection as authorised by its user (NVMe/TCP: its Connect
 * succeeded). When the socket table is full, a new connection evicts the oldest one
 * that is not (reset; its user sees TCP_EV_CLOSED with -ECONNABORTED), never this one.
 * Limits per source (TCP_CONN_PER_SOURCE, TCP_HALF_OPEN_PER_SOURCE) apply to both. */
void tcp_set_authorised(struct tcp_sock *s);

/* Keep-alive (RFC 9293 3.8.4, off by default): once ESTABLISHED, probe after idle_ns without
 * a segment from the peer, then every intvl_ns; after count unanswered probes the
 * connection is reset (TCP_EV_CLOSED, -ETIMEDOUT). On a listener, the values are those of
 * every connection it accepts from then on, armed as the handshake completes (so a peer
 * that never sends a byte is probed too). idle_ns 0 disables. The TCP_KEEPALIVE_* values
 * suit connections that may sit idle (e.g. controllers with KATO 0). */
void tcp_set_keepalive(struct tcp_sock *s, uint64_t idle_ns, uint64_t intvl_ns, unsigned count);

/* Bytes readable in order. */
size_t tcp_recv_avail(const struct tcp_sock *s);

/* true once the peer's FIN has been received and every byte before it read. */
bool tcp_recv_eof(const struct tcp_sock *s);

/* Take up to max fragments totalling at most max_bytes in sequence order; the last one
 * is split when needed (netdev_frag_split: both parts hold a reference on the buffer).
 * Returns the number of fragments; the caller releases each with netdev_frag_release. */
int tcp_recv_frags(struct tcp_sock *s, struct netdev_frag *out, unsigned max, size_t max_bytes);

/* tcp_recv_frags that also says the bytes the fragments hold (*took; 0 when none taken). */
int tcp_recv_frags_len(struct tcp_sock *s, struct netdev_frag *out, unsigned max, size_t max_bytes, size_t *took);
/*
 * Contract of tcp_recv_frags and tcp_recv_frags_len: no fragment they return is empty
 * (len 0). The NVMe/TCP target relies on it (a write's fragments become the drive's SGL
 * entries, which it then need not test for empty ones: nvmet_data.checked). It holds
 * because every entry of the receive queue has bytes: each way in skips or frees an empty
 * one (rxq_append's callers, ooo_drain, rx_queue_frags; rx_queue_one only for a payload
 * of more than 0 bytes), tcp_recv_copy leaves an entry it did not empty with the rest of
 * its bytes, and the front cut for max_bytes is a netdev_frag_split inside the entry (at
 * 0 < at < len, which gives both parts bytes). tests/unit/net/tcp/test_tcp_recv_contract.c
 * checks it.
 */

/* Copy up to len in-order bytes to buf and consume them (counted CPU reads). Returns
 * the number of bytes (0: nothing available). */
size_t tcp_recv_copy(struct tcp_sock *s, void *buf, size_t len);

/* Copy len bytes at off from the front of the in-order queue without consuming them.
 * 0 or -EAGAIN when fewer bytes are queued. */
int tcp_peek(const struct tcp_sock *s, size_t off, void *buf, size_t len);
/* tcp_peek of the first 8 bytes (a length-prefixed protocol's common header), read in one
 * load when the first received fragment holds them. 0 or -EAGAIN. */
int tcp_peek8(const struct tcp_sock *s, uint8_t buf[8]);

/*
 * Back-pressure. Send queues draw on pools shared by all sockets (tcp_pools.c): each
 * socket has a reserve (TCP_CHUNK_RESERVE chunks = 8 KiB of copied bytes,
 * TCP_SNDENT_RESERVE fragments) that nobody else can take, and may borrow from the
 * shared rest up to TCP_*_BORROW_MAX. When a send does not fit, -ENOBUFS (or a short
 * count from tcp_send_copy) is NOT a failure of the connection: nothing (or only the
 * count returned) was queued, and the caller waits for TCP_EV_SENT, which comes when the
 * peer acknowledges queued bytes. A socket with nothing queued always has its reserve,
 * so a caller that keeps each send within tcp_send_space() (and, for fragments, within
 * tcp_send_frags_room()) always gets either progress or a TCP_EV_SENT to wait for.
 * Any refused send is followed by a TCP_EV_SENT: the ACK of what is in flight, the
 * return of entries a device held past their ACK, or, with nothing of the socket's
 * queued, a retry every TCP_TX_RETRY_NS while it stays refused (tcp_send_refused).
 * A peer that never opens its window is aborted after TCP_PERSIST_MAX_NS (-ETIMEDOUT).
 */

/* Bytes that may be queued for sending now: the free part of TCP_SND_BUF, bounded by the
 * socket's share of chunks (tcp_send_copy). A send within it succeeds in full. */
size_t tcp_send_space(const struct tcp_sock *s);

/* Fragments tcp_send_frags() can queue now (the socket's share of send entries); at
 * least TCP_SNDENT_RESERVE while nothing is queued. */
unsigned tcp_send_frags_room(const struct tcp_sock *s);

/* Queue n fragments for sending without copying (a short last segment waits for
 * tcp_flush, see there); the stack takes the references (and releases them on error too). 0, -ENOBUFS (more bytes than the free part of
 * TCP_SND_BUF or more fragments than tcp_send_frags_room: nothing queued, wait for
 * TCP_EV_SENT), -ENOTCONN, -EPIPE. */
int tcp_send_frags(struct tcp_sock *s, const struct netdev_frag *frags, unsigned n);

/* Copy up to len bytes into the send queue (a short last segment waits for tcp_flush);
 * returns bytes queued (fewer than len when
 * the socket's share ran out: wait for TCP_EV_SENT and send the rest), -ENOBUFS when none
 * could be, or -ENOTCONN / -EPIPE. */
long tcp_send_copy(struct tcp_sock *s, const void *buf, size_t len);

/* Build len (1..TCP_CHUNK_SIZE) bytes in place at the end of the send queue, as
 * tcp_send_copy would have copied them: tcp_send_place returns where to write them (NULL:
 * they and the `more` bytes the caller queues right after them, e.g. zero-copy data, do not
 * fit tcp_send_space, as tcp_send_copy's -ENOBUFS: wait for TCP_EV_SENT; or the socket
 * cannot send), and tcp_send_placed(s, len) queues them; nothing else may touch s in between. */
void *tcp_send_place(struct tcp_sock *s, size_t len, size_t more);
void tcp_send_placed(struct tcp_sock *s, size_t len);
/* tcp_send_placed then tcp_flush (the same segments), for a user done queueing. */
void tcp_send_placed_flush(struct tcp_sock *s, size_t len);
/* The common PDU in one room check: a header of len bytes built in place, then `entries`
 * send entries of zero-copy fragments (and anything else queued right after, e.g. a
 * digest) holding `more` bytes. tcp_send_place_frags is tcp_send_place that also asks
 * for 1 + entries send entries (tcp_send_frags_room); NULL when any of it does not fit,
 * recorded as tcp_send_place's refusal (back-pressure: TCP_EV_SENT follows), or when the
 * socket cannot send. tcp_send_placed_frags(s, len, frags, n) then queues the header and
 * the n fragments (n <= entries; the stack takes their references, an empty one is
 * released) with no second check: nothing else may touch s in between. Neither flushes. */
void *tcp_send_place_frags(struct tcp_sock *s, size_t len, size_t more, unsigned entries);
void tcp_send_placed_frags(struct tcp_sock *s, size_t len, const struct netdev_frag *frags, unsigned n);
/* A PDU with zero-copy data and the short PDU right behind it (NVMe/TCP: a read's C2HData
 * header, its data and its CapsuleResp) in one room check: tcp_send_place_frags that also
 * asks room for tail_len (1..TCP_SEND_TAIL_MAX) more bytes in one more send entry, and
 * returns in *tail where to build them. NULL when any of it does not fit, recorded as
 * tcp_send_place's refusal (back-pressure: TCP_EV_SENT follows; nothing queued), or when
 * the socket cannot send. tcp_send_placed_frags_tail(s, len, frags, n, tail, tail_len) then
 * queues the header and the n fragments as tcp_send_placed_frags does and the tail behind
 * them as tcp_send_placed would (the same send entries, the same segments as those calls:
 * the fragments hold bytes), with no second check: nothing else may touch s in between.
 * Neither flushes. */
#define TCP_SEND_TAIL_MAX 32
void *tcp_send_place_frags_tail(struct tcp_sock *s, size_t len, size_t more, unsigned entries, size_t tail_len,
				void **tail);
void tcp_send_placed_frags_tail(struct tcp_sock *s, size_t len, const struct netdev_frag *frags, unsigned n,
				void *tail, size_t tail_len);
/* tcp_send_placed_frags_tail then tcp_flush (the same segments), for a user done queueing. */
void tcp_send_placed_frags_tail_flush(struct tcp_sock *s, size_t len, const struct netdev_frag *frags, unsigned n,
				      void *tail, size_t tail_len);

/* Send what can be sent now. tcp_send_frags and tcp_send_copy send full segments at
 * once but keep a last segment shorter than the MSS back, so that what the user queues
 * next (a PDU's data after its header, a response after the data) rides in it; what is
 * queued behind a tail held back waits with it, to go in one pass: call tcp_flush once
 * done queueing. A tail nobody flushes goes when the next segment from the
 * peer is processed or at the end of the poll pass (the tcp_tx poller), whichever is
 * first. */
void tcp_flush(struct tcp_sock *s);

/* The end of a receive batch: send the ACKs its segments owe and the tails held back.
 * In-order full-sized segments are acknowledged every net.tcp_ack_every (32) segments,
 * and those of one batch, from the second on, by one ACK at its end. The poll loop ends
 * every pass with this (the tcp_tx poller); whoever hands frames to netdev_rx outside the
 * loop calls it after each batch. Returns how many sockets it pushed. */
int tcp_rx_batch_end(void);

/* The end of a device's receive batch (netdev_rx_end): the data event of the socket whose
 * in-order segments the batch brought (TCP_EV_RECV, gathered across them: one per batch
 * and socket instead of one per segment) goes to its user now, before the pollers that
 * take the data run and before tcp_rx_batch_end decides the batch's ACK. Events that
 * must not wait (FIN, RST, acknowledged bytes, anything of a segment header prediction
 * does not take) go at once, and a segment for another socket ends the gathering first.
 * tcp_rx_batch_end calls it too (for whoever ends no batch). */
void tcp_rx_flush(void);

/* net.tcp_ack_every (2..64): see tcp_rx_batch_end. */
void tcp_set_ack_every(unsigned segs);

/*
 * The user has taken every byte received so far and an answer to them is coming soon
 * (NVMe/TCP: a command it received whole runs, its response follows): the ACK the
 * current receive batch owes at its end (tcp_rx_batch_end) may ride on that answer
 * instead of going out alone, for at most net.tcp_ack_hold_us (0: never held). Any
 * segment that goes out meanwhile carries it; the hold covers only the bytes taken when
 * this was called (data that comes after it, not yet taken, is ACKed as usual). Never
 * held: an ACK due at once (out-of-order data or a hole filled, a duplicate, a FIN, a
 * window probe, net.tcp_ack_every segments), SACK blocks to report, a window update
 * that opens a window left under half of what the queues allow or held small for want
 * of buffers. RFC 5681 4.2 / RFC 9293 3.8.6.3: the ACK is still sent within 500 ms
 * (the hold is at most 40 ms, default 200 us), but the "ACK at least every second
 * full-sized segment" SHOULD is relaxed for the segments of one request, as the batch
 * ACK already does (docs/performance.md). s NULL: nothing.
 */
void tcp_ack_hold(struct tcp_sock *s);

/* net.tcp_ack_hold_us (0..TCP_ACK_HOLD_US_MAX): see tcp_ack_hold. */
void tcp_set_ack_hold_us(unsigned us);

/* No more sends: FIN after the queued data. */
int tcp_shutdown_send(struct tcp_sock *s);

/* The user is done with s: graceful close (RST when unread data remains). */
void tcp_close(struct tcp_sock *s);

/* Reset the connection and free s. */
void tcp_abort(struct tcp_sock *s);

enum tcp_state tcp_state(const struct tcp_sock *s);
const char *tcp_state_name(enum tcp_state st);
int tcp_error(const struct tcp_sock *s);

struct tcp_info {
	enum tcp_state state;
	uint32_t laddr, raddr;
	uint16_t lport, rport;
	uint32_t snd_una, snd_nxt, snd_wnd, rcv_nxt, rcv_wnd, cwnd, ssthresh;
	uint16_t mss;
	uint8_t snd_wscale, rcv_wscale;
	uint64_t rto_ns, srtt_ns;
	uint64_t retransmits, fast_retransmits, timeouts, segs_in, segs_out, dup_segs, ooo_segs;
	bool sack_ok;
	size_t rxq_bytes, sndq_bytes;
	unsigned rxq_frags, ooo_frags;
};
void tcp_get_info(const struct tcp_sock *s, struct tcp_info *out);
/* The state, with *rcv_wnd the window the peer may still fill (the advertised edge minus
 * RCV.NXT, 0 when none): tcp_get_info's two fields a receiver deciding per segment whether
 * to wait for more needs, without copying the rest. */
enum tcp_state tcp_rcv_room(const struct tcp_sock *s, uint32_t *rcv_wnd);

struct tcp_stats {
	uint64_t segs_in, segs_out, bad_checksum, bad_header, no_socket, resets_in, resets_out;
	uint64_t challenge_acks, challenge_acks_limited, syn_backlog_drops, syn_no_socket;
	uint64_t retransmits, fast_retransmits, timeouts, dup_segs, ooo_segs, ooo_drops, rx_nobufs;
	uint64_t zero_window_probes, keepalive_probes, delayed_acks, accepted, connected;
	uint64_t sack_blocks_out, dsack_out, rx_budget_drops, window_starved, window_kicks, tx_cut_dev;
	uint64_t tso_frames;  /* data frames handed to the NIC for segmentation (NETBUF_TX_TSO) */
	uint64_t tx_refused;  /* data frames the device refused (ring full): not sent, sent again later */
	uint64_t tx_nobuf;    /* segments with no netbuf free (the pool empty): not sent, sent again later */
	uint64_t send_refused; /* sends refused for want of room (tcp_send_*): the user told again (TCP_EV_SENT) */
	uint64_t tx_ring_retries;     /* turns given to sockets waiting for transmit ring space (tcp_out.c) */
	uint64_t chunk_share_denied;  /* a chunk refused: the socket's share or the shared part used up */
	uint64_t ooo_pruned;          /* out-of-order fragments dropped to free buffers (tcp_prune_ooo) */
	uint64_t persist_aborts;      /* connections aborted after TCP_PERSIST_MAX_NS of zero window */
	uint64_t ack_holds;           /* batch ACKs held for a promised answer (tcp_ack_hold) */
	uint64_t ack_hold_expired;    /* ... of which net.tcp_ack_hold_us passed before an answer */
	uint64_t syn_evicted, syn_per_source_drops, conn_per_source_drops, evicted, table_full;
	uint64_t rx_payload_host, rx_payload_device, tx_payload_host, tx_payload_device;
};
const struct tcp_stats *tcp_stats(void);

/* Device receive buffers the stack keeps free for header-only frames (see above). */
unsigned tcp_rx_reserve(const struct netdev *dev);

/* Visit every socket (console). */
void tcp_foreach(void (*fn)(const struct tcp_sock *s, void *ctx), void *ctx);

/* Start the discard (9), echo (7) and chargen (19) services. 0 or errno. */
int tcp_services_start(void);
void tcp_services_stop(void);

/* From now on s raises TCP_EV_SENT only when it is owed: after a refused send (each is
 * followed by one, as above: the ACK of what is in flight, entries coming back, or the
 * retry) and the first one that tcp_set_ops delivers after tcp_accept. An ACK of new bytes
 * with no refusal since the last TCP_EV_SENT raises none. For a user that waits for send
 * space only after a refusal (the default, every ACK of new bytes, suits one that watches
 * the space grow). */
void tcp_set_sent_when_owed(struct tcp_sock *s);

#endif
