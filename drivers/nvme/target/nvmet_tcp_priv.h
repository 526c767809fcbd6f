/*
 * nvmet_tcp_priv.h - layouts shared by the NVMe/TCP transport's files: nvmet_tcp.c (the
 * connections: sockets, PDUs, sending, closing, listeners, the poll loop) and
 * nvmet_tcp_buf.c (requests and data buffers, and where a command's payload is placed:
 * the NIC's device-memory fragments, device memory for reads, or host DRAM). Not for
 * anything outside the transport.
 */
#ifndef DRIVERS_NVME_TARGET_NVMET_TCP_PRIV_H
#define DRIVERS_NVME_TARGET_NVMET_TCP_PRIV_H

#include <stdbool.h>
#include <stdint.h>
#include "../../../lib/list.h"
#include "../../../lib/timer.h"
#include "../../../mm/pool.h"
#include "nvmet.h"
#include "nvmet_tcp.h"
#include "nvmet_tcp_rx.h"

enum nvmet_tcp_req_state {
	NVMET_TCP_REQ_FREE = 0,
	NVMET_TCP_REQ_WAIT,      /* waiting for a buffer (in its connection's waitq): see enum nvmet_tcp_wait */
	NVMET_TCP_REQ_R2T,       /* a write waiting for its data: R2T (to be) sent, H2CData coming */
	NVMET_TCP_REQ_EXEC,      /* at the core (nvmet_exec .. done) */
	NVMET_TCP_REQ_TX,        /* completed, waiting in the TX backlog */
};

/* What a waiting request needs before it can go on. */
enum nvmet_tcp_wait {
	NVMET_TCP_WAIT_NONE = 0,
	NVMET_TCP_WAIT_R2T,                /* a segment table and room in the write budget, then the R2T */
	NVMET_TCP_WAIT_READ,               /* memory for the data the command produces */
	NVMET_TCP_WAIT_GATHER,             /* write data in, DRAM chunks to gather it into */
};

/* A payload in device memory (or not a payload): no reason for DRAM. */
#define NVMET_TCP_REASON_NONE NVMET_TCP_DRAM_REASON_COUNT

struct nvmet_tcp_conn;

/* The shared pools a host address holds a share of (nvmet_tcp_buf.c: host_may). */
enum nvmet_tcp_host_pool {
	NVMET_TCP_HOST_DBUFS,            /* data buffers */
	NVMET_TCP_HOST_CHUNKS,           /* DRAM chunks */
	NVMET_TCP_HOST_TABLES,           /* segment tables */
	NVMET_TCP_HOST_WRITE,            /* write budget bytes (R2T to completion) */
	NVMET_TCP_HOST_DEVICE,           /* device memory bytes of read data */
	NVMET_TCP_HOST_POOLS
};

/* What the connections of one host address hold, kept as they take and give back, so
 * that a share check costs the same however many connections there are. */
struct nvmet_tcp_host {
	uint32_t raddr;
	unsigned nconns;                 /* its connections (any state, until freed); 0: entry free */
	uint64_t held[NVMET_TCP_HOST_POOLS];
	unsigned write_waiting;          /* its writes waiting for their R2T */
};

/* The segments of a command that gathers more fragments than a request holds inline. */
struct nvmet_tcp_table {
	struct netdev_frag frags[NVMET_TCP_REQ_SEGS];
	struct nvme_sg sg[NVMET_TCP_REQ_SEGS];
};

/*
 * A data buffer: the read data of a command (one device-memory allocation, or DRAM
 * chunks) or write data gathered into DRAM. It lives until the request dropped its
 * reference and TCP released every fragment sent from it (the peer acknowledged them).
 */
struct nvmet_tcp_dbuf {
	unsigned refs;
	struct nvmet_tcp_conn *conn;     /* charged to (kept until its last buffer is back) */
	bool device;                     /* mem: a device-memory allocation from mops->alloc */
	struct netdev_frag mem;
	uint32_t len;
	unsigned nchunks;                /* else: DRAM chunks of NVMET_TCP_BUF_SIZE */
	void *chunks[NVMET_TCP_CHUNKS_PER_CMD];
};

/* One-chunk data buffers kept with their chunk for the next common read, at most (a queue
 * depth's worth of 4 KiB reads: 16 of the NVMET_TCP_BUFS chunks). */
#define NVMET_TCP_DBUF_SPARES 16

/* nvmet_tcp_req.place */
#define NVMET_TCP_PLACE_DEV 0x1          /* a fragment in device memory */
#define NVMET_TCP_PLACE_HOST 0x2         /* a fragment in DRAM */
#define NVMET_TCP_PLACE_TWO 0x4          /* device-memory fragments of two providers */

/* One command of a connection. */
struct nvmet_tcp_req {
	struct nvmet_req req;            /* first: the core's view; req.sqe holds the command from
					  * its capsule on (while it waits or its data comes) */
	struct nvmet_tcp_conn *conn;
	enum nvmet_tcp_req_state state;
	enum nvmet_tcp_wait wait;        /* while WAIT: what it waits for */
	enum nvmet_tcp_dram_reason reason; /* why the payload went through DRAM, NVMET_TCP_REASON_NONE */
	uint16_t cccid;
	uint32_t len;                    /* data bytes the host described (SGL1) */
	uint8_t dir;                     /* enum dma_dir */
	uint8_t slot;                    /* its index in conn->reqs: its bit in the masks, its R2T's
					  * TTAG (set with the connection, never changes) */
	const struct nvmet_bdev *bdev;   /* the backend of an I/O read/write, else NULL */
	unsigned cap;                    /* segments frags/sg hold */
	struct nvmet_tcp_table *table;   /* NULL: the inline arrays */
	struct netdev_frag *frags;       /* received data fragments held (writes) */
	struct nvme_sg *sg;
	unsigned nfrags;
	/* where the held fragments are (kept as they are taken, so the placement of a write
	 * needs no walk over them): NVMET_TCP_PLACE_* bits, and the provider of the last one
	 * in device memory */
	uint8_t place;
	uint16_t place_provider;
	uint32_t taken;                  /* bytes in the held fragments (summed as they are taken) */
	struct nvmet_tcp_dbuf *dbuf;     /* read data, or gathered write data */
	uint32_t tx_off;                 /* data bytes already queued as C2HData */
	uint32_t r2t_len, h2c_rcvd;      /* R2T: bytes asked for, bytes received (in order) */
	bool r2t_sent;                   /* R2T: the R2T PDU is out */
	uint64_t r2t_deadline_ns;        /* R2T sent: its data must be in by then */
	bool held;                       /* counted in nvmet_tcp.write_held */
	bool dropped;                    /* write data lost (no DRAM to gather into): fail it */
	struct list_node tx_node;        /* in conn->tx_backlog while TX */
	struct list_node wait_node;      /* in conn->waitq while WAIT */
	struct netdev_frag ifrags[NVMET_TCP_INLINE_SEGS];
	struct nvme_sg isg[NVMET_TCP_INLINE_SEGS];
};

_Static_assert(NVMET_TCP_QUEUE_DEPTH <= 64, "a connection's requests fit the bit masks");

struct nvmet_tcp_conn {
	struct list_node node;           /* in nvmet_tcp.conns */
	struct nvmet_tcp_host *host;     /* its host address's holdings */
	enum nvmet_tcp_conn_state state;
	unsigned port;                   /* nvmet port index */
	uint32_t raddr;                  /* the host's address (per-peer limits) */
	uint64_t seq;                    /* accept order: the oldest is evicted first */
	bool authorised;                 /* Connect succeeded: told TCP (tcp_set_authorised) */
	bool sqflow_off;                 /* the host disabled SQ flow control at that Connect (read
					  * once then: C2HData SUCCESS may replace a response) */
	struct tcp_sock *sock;           /* NULL once closed */
	struct nvmet_queue *q;           /* NULL before ICReq and once destroyed */
	struct nvme_tcp_params params;
	struct nvme_tcp_rx rx;
	bool kill_pending;               /* the core asked for a close */
	int kill_reason;
	bool in_rx;                      /* inside conn_recv (no re-entry) */
	bool rx_ready;                   /* TCP_EV_RECV came: the poll loop drains the socket */
	bool on_ready;                   /* in nvmet_tcp.ready (ready_node) */
	struct list_node ready_node;     /* in nvmet_tcp.ready: the poll loop has work for it */
	bool r2t_due;                    /* a request may wait for its R2T PDU: conn_send_r2ts looks */
	bool tx_sent_owed;               /* the backlog's head stopped at a tcp_send_place refusal:
					  * TCP owes TCP_EV_SENT (tcp_send_refused), whose conn_tx
					  * goes on; the poll loop does not retry it every pass
					  * (conn_tx_refused) */
	uint32_t rx_wait_max;            /* the rest of the PDU may wait in the socket while it holds
					  * fewer bytes than this (conn_rx_may_wait); 0: look again */
	bool rx_wait_whole;              /* rx_wait_max is the PDU's bytes left: once the socket holds
					  * them, the PDU is complete (no second look) */
	uint32_t rx_peek_len;            /* PLEN of the PDU at the front of the socket, from its
					  * common header looked at in place (conn_rx_may_wait);
					  * 0: not looked at since conn_recv last took bytes */
	uint64_t connect_deadline_ns;    /* ICReq and Connect must be done by then */
	uint64_t next_r2t_check_ns;      /* when the poll loop looks for late R2T data again */
	unsigned inflight;               /* requests in EXEC */
	/* what it holds of the shared pools (its host may hold NVMET_TCP_HOST_SHARE of each) */
	unsigned ndbufs;                 /* data buffers alive (also those only TCP still holds:
					  * the connection is freed after the last) */
	unsigned nchunks;                /* DRAM chunks of those buffers */
	unsigned ntables;                /* segment tables */
	uint32_t write_held;             /* bytes of its writes between R2T and completion */
	uint32_t dev_bytes;              /* device memory of its read data buffers */
	unsigned nfree;
	uint64_t free_mask;              /* bit i: reqs[i] is free (the lowest is taken first) */
	uint64_t r2t_mask;               /* bit i: reqs[i] is in R2T with its R2T PDU not sent */
	struct list_node tx_backlog;     /* requests in TX, completion order */
	struct list_node waitq;          /* its requests waiting for buffers, FIFO */
	unsigned nwaiting;
	unsigned write_waiting;          /* ... of them writes waiting for their R2T (NVMET_TCP_WAIT_R2T):
					  * while any host has one, no other host holds more than
					  * its share of the write budget */
	struct nvmet_tcp_req reqs[NVMET_TCP_QUEUE_DEPTH];
};

struct nvmet_tcp_listener {
	struct tcp_sock *sock;
	unsigned port;                   /* nvmet port index */
	uint16_t tcp_port;
};

struct nvmet_tcp_state {
	bool running;
	bool p2p_off;                    /* nvmet.p2p = off */
	bool live;                       /* started, pools alive (until the last buffer of a stop came back) */
	const struct nvmet_tcp_mem_ops *mops;
	struct mm_pool conn_pool;
	struct mm_pool buf_pool;
	struct mm_pool table_pool;
	struct mm_pool dbuf_pool;
	struct list_node conns;
	unsigned nconns;
	struct list_node ready;          /* connections with work for the poll loop (received data,
					  * a kill, responses to send), in turn; the others cost a
					  * pass nothing */
	unsigned nready;
	bool reap_due;                   /* a connection closed: conns_reap looks until none is left */
	struct timer timeouts_timer;     /* fires when a connection's timeout (Connect, late R2T
					  * data) may be due: sets timeouts_due */
	bool timeouts_due;               /* the next pass looks at the timeouts (conns_timeouts);
					  * set by the timer and by an accept or a start */
	unsigned nlisteners;
	uint64_t accept_seq;             /* accept order of connections */
	bool in_poll;                    /* inside nvmet_tcp_poll (walking conns: free nothing) */
	struct nvmet_tcp_listener listeners[NVMET_TCP_MAX_LISTENERS];
	unsigned nwaiting;               /* requests waiting for buffers, all connections */
	unsigned write_waiting;          /* ... of them writes waiting for their R2T */
	struct nvmet_tcp_host hosts[NVMET_TCP_MAX_CONNS]; /* one per host address with connections */
	unsigned resume_turn;            /* the connection resume_waiters() starts with, round robin */
	bool freed;                      /* buffers came back since the last resume */
	struct nvmet_tcp_dbuf *spares[NVMET_TCP_DBUF_SPARES]; /* one-chunk buffers with their chunk,
					  * charged to no one, for the next common read (given back
					  * to the pools when a take fails and at stop) */
	unsigned nspares;
	uint32_t write_held;             /* bytes of writes between R2T and completion */
	uint32_t write_budget;           /* ... at most (nvmet.write_budget_kib; 0: NVMET_TCP_WRITE_HELD_MAX) */
	bool reason_logged[2][NVMET_TCP_DRAM_REASON_COUNT]; /* [write?][reason] */
	struct nvmet_tcp_stats st;
	bool pass_due;                   /* a pass has work besides ready connections and waiters:
					  * live and (reap_due, timeouts_due or stopped); kept by
					  * every writer of those four (nvmet_tcp.c, pass_due_note) */
};

extern struct nvmet_tcp_state nvmet_tcp;

/* nvmet_tcp.c */
/* Run r at the core with nsg segments of r->sg (0: none). */
void nvmet_tcp_req_exec(struct nvmet_tcp_req *r, unsigned nsg, bool summed);
/* Run r so that the core completes it with SGL Length Invalid without touching data. */
void nvmet_tcp_req_refuse(struct nvmet_tcp_req *r);

/* nvmet_tcp_buf.c */
/* A payload goes through DRAM for reason why: count it, log why once per direction. */
void nvmet_tcp_dram_fallback(struct nvmet_tcp_req *r, enum nvmet_tcp_dram_reason why, const char *detail);
/* Give every spare one-chunk buffer back to the pools; how many. */
unsigned nvmet_tcp_dbuf_spares_drain(void);
/* Drop a reference on b; the last one frees its memory (device allocation or chunks; a
 * one-chunk buffer may be kept as a spare for the next). */
void nvmet_tcp_dbuf_unref(struct nvmet_tcp_dbuf *b);
/* A data buffer of len bytes for connection c in DRAM chunks (dev NULL) or over the
 * device allocation dev (the buffer owns it from then on), charged to c. NULL when the
 * pools are empty or c's host holds its share of them. */
struct nvmet_tcp_dbuf *nvmet_tcp_dbuf_get(struct nvmet_tcp_conn *c, uint32_t len, const struct netdev_frag *dev);
/* Fragments for [off, off + len) of b into out, each holding a reference on b that TCP
 * gives back when the peer acknowledged it; how many (at most
 * NVMET_TCP_C2H_MAX / NVMET_TCP_BUF_SIZE + 1). */
unsigned nvmet_tcp_dbuf_frags(struct nvmet_tcp_dbuf *b, uint32_t off, uint32_t len, struct netdev_frag *out);
/* How many fragments nvmet_tcp_dbuf_frags() makes for [off, off + len) (len > 0), taking
 * no reference: what a send must find room for before it commits a header. */
unsigned nvmet_tcp_dbuf_nfrags(const struct nvmet_tcp_dbuf *b, uint32_t off, uint32_t len);
/* The owner of the fragments nvmet_tcp_dbuf_frags() makes (their release drops a reference). */
extern struct netdev_frag_owner nvmet_tcp_dbuf_owner;
/* Does [off, off + len) of b lie in one piece (device memory, or inside one DRAM chunk)?
 * Then nvmet_tcp_dbuf_frag1() makes its one fragment (the common C2HData PDU). */
static inline bool nvmet_tcp_dbuf_one(const struct nvmet_tcp_dbuf *b, uint32_t off, uint32_t len)
{
	return b->device || off % NVMET_TCP_BUF_SIZE + len <= NVMET_TCP_BUF_SIZE;
}
/* The one fragment for [off, off + len) of b (nvmet_tcp_dbuf_one() said so), taking no
 * reference: the caller hands it one it holds (a request's own, which it then drops). */
static inline void nvmet_tcp_dbuf_frag1_own(struct nvmet_tcp_dbuf *b, uint32_t off, uint32_t len, struct netdev_frag *out)
{
	if (b->device) {
		*out = b->mem;
		out->addr = dma_addr_add(b->mem.addr, off);
		out->offset = b->mem.offset + off;
	} else {
		*out = (struct netdev_frag){ .addr = dma_addr_host((uint8_t *)b->chunks[off / NVMET_TCP_BUF_SIZE] +
								   off % NVMET_TCP_BUF_SIZE),
					     .provider = NETDEV_PROVIDER_HOST };
	}
	out->len = len;
	out->owner = &nvmet_tcp_dbuf_owner;
	out->token = (uint64_t)(uintptr_t)b;
}
/* The one fragment for [off, off + len) of b (nvmet_tcp_dbuf_one() said so), holding a
 * reference on b: what nvmet_tcp_dbuf_frags() makes for it, without its loop. */
static inline void nvmet_tcp_dbuf_frag1(struct nvmet_tcp_dbuf *b, uint32_t off, uint32_t len, struct netdev_frag *out)
{
	nvmet_tcp_dbuf_frag1_own(b, off, len, out);
	b->refs++;
}
/* Copy the n fragments f into b's chunks at byte off (counted CPU reads). 0, -EINVAL past
 * b's end, or the fragment read's error. The fragments stay the caller's. */
int nvmet_tcp_dbuf_copy_in(struct nvmet_tcp_dbuf *b, uint32_t off, const struct netdev_frag *f, unsigned n);
/* A free request of c, reset; NULL when all are in use. */
struct nvmet_tcp_req *nvmet_tcp_req_get(struct nvmet_tcp_conn *c);
/* Release the received fragments r holds to their owner (the NIC). (inline: twice per
 * command, from req_done and nvmet_tcp_req_put, the second with nothing left to release) */
static inline void nvmet_tcp_req_release_frags(struct nvmet_tcp_req *r)
{
	/* netdev_frag_release without clearing each entry: nfrags 0 below, nothing reads them.
	 * The array and its count in locals: an owner's release never touches r (otherwise
	 * every call would make the compiler load both again). */
	const struct netdev_frag *f = r->frags;
	const unsigned n = r->nfrags;
	for (unsigned i = 0; i < n; i++) {
		struct netdev_frag_owner *o = f[i].owner;
		if (o)
			o->release(o, f[i].token);
	}
	r->nfrags = 0;
	r->place = 0;
	r->taken = 0;
}
/* Give r's share of the write budget back. */
void nvmet_tcp_req_unhold(struct nvmet_tcp_req *r);
/* Give back everything r holds and make it free. */
void nvmet_tcp_req_put(struct nvmet_tcp_req *r);
/* nvmet_tcp_req_put of a request in TX, whose received fragments and write budget its
 * completion gave back already (req_done). */
void nvmet_tcp_req_put_sent(struct nvmet_tcp_req *r);
/* r waits for buffers (FIFO) for the reason w. */
void nvmet_tcp_req_wait(struct nvmet_tcp_req *r, enum nvmet_tcp_wait w);
/* Take the waiting r out of its connection's FIFO (r->state is the caller's to set);
 * returns what it waited for. */
enum nvmet_tcp_wait nvmet_tcp_req_unwait(struct nvmet_tcp_req *r);
/* The n (at most NVMET_TCP_INLINE_SEGS) data fragments of a whole PDU, where they lie in the
 * receive batch (src), copied into r->frags of a request fresh from nvmet_tcp_req_get and made
 * its segments, as nvmet_tcp_req_add_data would make them, in one pass. */
void nvmet_tcp_req_take_batch(struct nvmet_tcp_req *r, const struct netdev_frag *src, unsigned n);
/* Release a PDU's data fragments to their owner. Consumes pdu's fragments. */
void nvmet_tcp_pdu_release(struct nvme_tcp_rx_pdu *pdu);
/* The data of a PDU for r at byte off of the command's data: kept in the NIC's fragments,
 * or continued in DRAM when more than a command gathers, or dropped (r->dropped) without
 * DRAM. Consumes pdu's fragments, on success and on failure. */
void nvmet_tcp_req_add_data(struct nvmet_tcp_req *r, struct nvme_tcp_rx_pdu *pdu, uint32_t off);
/* Copy r's held fragments into a DRAM buffer and release them. 0, -ENOMEM (nothing
 * changed), or a copy error (the fragments are released, r->dbuf set). */
int nvmet_tcp_req_gather(struct nvmet_tcp_req *r);
/* All of a write's data is in: decide where the drive reads it from and run it; waits
 * (NVMET_TCP_WAIT_GATHER) when a DRAM copy is needed and no DRAM is free. */
void nvmet_tcp_write_go(struct nvmet_tcp_req *r);
/* Memory for the data a command produces (device memory where the P2P rules allow, else
 * DRAM chunks) and run it. 0, or -ENOMEM (nothing held: the caller waits). */
int nvmet_tcp_read_go(struct nvmet_tcp_req *r);
/* A write whose data comes after an R2T: a segment table and room in the write budget.
 * 0 (r is in R2T), or -ENOMEM (wait). */
int nvmet_tcp_r2t_go(struct nvmet_tcp_req *r);

#endif
