/*
 * nvmet_tcp_buf.c - the NVMe/TCP transport's requests and data buffers, and where a
 * command's payload is placed (see nvmet_tcp.c for the data path and the ownership of
 * fragments and buffers): a write's data in the NIC's fragments when the drive may reach
 * them, a read's data in device memory the drive may write and the NIC may gather from,
 * host DRAM otherwise (counted per reason, each reason logged once).
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include "../../../lib/log.h"
#include "../../../mm/pool.h"
#include "../../../net/tcp/tcp.h"
#include "nvmet_tcp_priv.h"

LOG_MODULE_USE(nvmet);

/* Copy mode (nic.rx_mode = plain): the write whose data is coming in holds one of TCP's
 * chunks per segment until the drive's completion (written data drains as the drive
 * completes, the one coming in cannot until its last byte), and the windows of its socket
 * promise 7/8 of that socket's share of chunks (net/tcp/tcp_budget.c): the largest write
 * must fit in that, or it waits forever for chunks it holds itself. */
_Static_assert(NVMET_TCP_MAX_XFER / 1460 + 2 <= TCP_CHUNK_BORROW_MAX * 7 / 8,
	       "the largest write fits in one socket's share of TCP chunks");

/* A payload goes through DRAM: count it, say why once. */
void nvmet_tcp_dram_fallback(struct nvmet_tcp_req *r, enum nvmet_tcp_dram_reason why, const char *detail)
{
	r->reason = why;
	nvmet_tcp.st.dram_cmds[why]++;
	nvmet_tcp.st.dram_bytes[why] += r->len;
	bool *logged = &nvmet_tcp.reason_logged[r->dir == DMA_TO_DEVICE][why];
	if (!*logged) {
		*logged = true; /* once per direction and reason; the counters say how often */
		log_info("tcp: %s payloads through host DRAM: %s%s%s", r->dir == DMA_TO_DEVICE ? "write" : "read",
			 nvmet_tcp_dram_reason_name(why), detail ? ": " : "", detail ? detail : "");
	}
}

/* --- shares per host address --- */

enum host_pool {
	HOST_DBUFS = NVMET_TCP_HOST_DBUFS,
	HOST_CHUNKS = NVMET_TCP_HOST_CHUNKS,
	HOST_TABLES = NVMET_TCP_HOST_TABLES,
	HOST_WRITE = NVMET_TCP_HOST_WRITE,
	HOST_DEVICE = NVMET_TCP_HOST_DEVICE,
};

/* May the host of c take n more of pool k? Every host address holds at most
 * 1/NVMET_TCP_HOST_SHARE of each pool, so that one peer (whatever its connections do:
 * zero window, unacknowledged read data) cannot starve another. The write budget is
 * work-conserving: a host may go beyond its share of it while no other host has a write
 * waiting for its R2T (the budget comes back as the drive completes the writes, or at the
 * latest when R2T data fails to come in NVMET_TCP_R2T_TIMEOUT_MS), and once one waits it
 * gets no more until it is back within its share; a host with nothing held takes one
 * command of any size. Read data buffers, DRAM chunks and device memory stay strict: a
 * peer that never acknowledges holds them as long as it likes. Device memory for read
 * data has no pool size here (the providers' allocator has its own): a host holds at
 * most NVMET_TCP_HOST_DEVICE_MAX bytes of it, its further reads go through DRAM. */
static uint32_t write_budget(void)
{
	return nvmet_tcp.write_budget ? nvmet_tcp.write_budget : NVMET_TCP_WRITE_HELD_MAX;
}

/* The size of pool k (the one a share is taken of). */
static inline uint32_t host_pool_size(enum host_pool k)
{
	switch (k) {
	case HOST_DBUFS:
		return NVMET_TCP_DBUFS;
	case HOST_CHUNKS:
		return NVMET_TCP_BUFS;
	case HOST_TABLES:
		return NVMET_TCP_SEG_TABLES;
	case HOST_WRITE:
		return write_budget();
	default:
		return NVMET_TCP_HOST_DEVICE_MAX * NVMET_TCP_HOST_SHARE;
	}
}

/* The rest of host_may: the host is at or past its share of pool k. */
static __attribute__((noinline)) bool host_may_slow(const struct nvmet_tcp_conn *c, enum host_pool k, uint32_t n)
{
	uint64_t held = c->host->held[k];

	if (held + n <= host_pool_size(k) / NVMET_TCP_HOST_SHARE)
		return true;
	bool others_wait = nvmet_tcp.write_waiting > c->host->write_waiting;
	if (k == HOST_WRITE && held == 0)
		return true;
	if (k == HOST_WRITE && !others_wait) {
		nvmet_tcp.st.write_lent++;
		return true;
	}
	nvmet_tcp.st.host_share++;
	return false;
}

/* The common case (within the share: one compare) inline, the rest in host_may_slow. */
static inline bool host_may(const struct nvmet_tcp_conn *c, enum host_pool k, uint32_t n)
{
	/* what the host's connections hold, and whether another host has a write waiting
	 * for its R2T: kept per host address (no walk over the connections) */
	if (c->host->held[k] + n <= host_pool_size(k) / NVMET_TCP_HOST_SHARE)
		return true;
	return host_may_slow(c, k, n);
}

/* --- data buffers --- */

static void chunks_free(void **chunks, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		mm_pool_free(&nvmet_tcp.buf_pool, chunks[i]);
}

/* A one-chunk buffer and its chunk back to their pools. */
static void dbuf_free_one(struct nvmet_tcp_dbuf *b)
{
	mm_pool_free(&nvmet_tcp.buf_pool, b->chunks[0]);
	mm_pool_free(&nvmet_tcp.dbuf_pool, b);
}

/* n DRAM chunks into chunks, all or none. */
static int chunks_alloc(void **chunks, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		if (!(chunks[i] = mm_pool_alloc(&nvmet_tcp.buf_pool))) {
			chunks_free(chunks, i);
			nvmet_tcp.st.no_bufs++;
			return -ENOMEM;
		}
	}
	return 0;
}

/* Give every spare (one-chunk buffer kept with its chunk, see nvmet_tcp_dbuf_unref) back
 * to the pools: when a take fails (the spares must not starve a larger buffer) and at stop
 * (the pools then drain to zero). Returns how many. */
unsigned nvmet_tcp_dbuf_spares_drain(void)
{
	unsigned n = nvmet_tcp.nspares;

	for (unsigned i = 0; i < n; i++)
		dbuf_free_one(nvmet_tcp.spares[i]);
	nvmet_tcp.nspares = 0;
	return n;
}

NVMET_HOT_INLINE void nvmet_tcp_dbuf_unref(struct nvmet_tcp_dbuf *b)
{
	if (--b->refs)
		return;
	/* the connection and host read once (the stores below cannot move them) */
	struct nvmet_tcp_conn *c = b->conn;
	struct nvmet_tcp_host *h = c->host;
	unsigned n = b->nchunks;
	c->ndbufs--;
	c->nchunks -= n;
	h->held[HOST_DBUFS]--;
	h->held[HOST_CHUNKS] -= n;
	nvmet_tcp.freed = true;
	if (b->device) {
		if (nvmet_tcp.mops)
			nvmet_tcp.mops->free(&b->mem);
		c->dev_bytes -= b->len;
		h->held[HOST_DEVICE] -= b->len;
		mm_pool_free(&nvmet_tcp.dbuf_pool, b);
	} else if (n == 1) {
		/* the common read's buffer: kept with its chunk for the next one (a spare, at most
		 * NVMET_TCP_DBUF_SPARES, none once stopped), instead of two pool frees now and two
		 * takes then */
		if (nvmet_tcp.nspares < NVMET_TCP_DBUF_SPARES && nvmet_tcp.running)
			nvmet_tcp.spares[nvmet_tcp.nspares++] = b;
		else
			dbuf_free_one(b);
	} else {
		chunks_free(b->chunks, n);
		mm_pool_free(&nvmet_tcp.dbuf_pool, b);
	}
}

/* TCP is done with a C2HData fragment (the peer acknowledged it, or the socket died). */
static void dbuf_frag_release(struct netdev_frag_owner *o, uint64_t token)
{
	(void)o;
	nvmet_tcp_dbuf_unref((struct nvmet_tcp_dbuf *)(uintptr_t)token);
}
struct netdev_frag_owner nvmet_tcp_dbuf_owner = { "nvmet-tcp-data", dbuf_frag_release };

/* A data buffer of len bytes in DRAM chunks (dev NULL) or over a device allocation. */
NVMET_HOT_INLINE struct nvmet_tcp_dbuf *nvmet_tcp_dbuf_get(struct nvmet_tcp_conn *c, uint32_t len, const struct netdev_frag *dev)
{
	unsigned n = dev ? 0 : (len + NVMET_TCP_BUF_SIZE - 1) / NVMET_TCP_BUF_SIZE;
	struct nvmet_tcp_host *h = c->host;
	struct nvmet_tcp_dbuf *b;

	/* the common read (one DRAM chunk, the host within both shares): one check, one take
	 * of each pool; anything else the general path below */
	if (n == 1 && h->held[HOST_DBUFS] < NVMET_TCP_DBUFS / NVMET_TCP_HOST_SHARE &&
	    h->held[HOST_CHUNKS] < NVMET_TCP_BUFS / NVMET_TCP_HOST_SHARE) {
		if (nvmet_tcp.nspares) {
			/* a spare: device, mem and nchunks as set when it was first taken */
			b = nvmet_tcp.spares[--nvmet_tcp.nspares];
		} else {
			if (!(b = mm_pool_alloc(&nvmet_tcp.dbuf_pool)))
				goto no_bufs;
			if (!(b->chunks[0] = mm_pool_alloc(&nvmet_tcp.buf_pool))) {
				mm_pool_free(&nvmet_tcp.dbuf_pool, b);
				goto no_bufs;
			}
			b->device = false;
			b->mem = (struct netdev_frag){ 0 };
			b->nchunks = 1;
		}
		nvmet_tcp.st.dbuf_fast++;
		b->refs = 1;
		b->len = len;
		b->conn = c;
		c->ndbufs++;
		c->nchunks++;
		h->held[HOST_DBUFS]++;
		h->held[HOST_CHUNKS]++;
		return b;
	}
	if (n > NVMET_TCP_CHUNKS_PER_CMD || !host_may(c, HOST_DBUFS, 1) || (n && !host_may(c, HOST_CHUNKS, n)))
		return NULL;
	/* the spares give way to a buffer the pools cannot give otherwise */
	if (nvmet_tcp.nspares && (!mm_pool_has_free(&nvmet_tcp.dbuf_pool) || nvmet_tcp.buf_pool.free_top < n))
		nvmet_tcp_dbuf_spares_drain();
	if (!(b = mm_pool_alloc(&nvmet_tcp.dbuf_pool))) {
no_bufs:
		nvmet_tcp.st.no_bufs++;
		return NULL;
	}
	/* every field set here (not the whole struct zeroed: chunks[] past nchunks is never
	 * read) */
	b->refs = 1;
	b->len = len;
	b->conn = c;
	b->device = dev != NULL;
	if (dev) {
		b->mem = *dev;
		c->dev_bytes += len;
		c->host->held[HOST_DEVICE] += len;
	} else {
		b->mem = (struct netdev_frag){ 0 };
		if (chunks_alloc(b->chunks, n)) {
			mm_pool_free(&nvmet_tcp.dbuf_pool, b);
			return NULL;
		}
	}
	b->nchunks = n;
	c->ndbufs++;
	c->nchunks += n;
	c->host->held[HOST_DBUFS]++;
	c->host->held[HOST_CHUNKS] += n;
	return b;
}

/* The segments of a data buffer for the core (at most NVMET_TCP_CHUNKS_PER_CMD). */
static unsigned dbuf_segments(const struct nvmet_tcp_dbuf *b, struct nvme_sg *sg)
{
	if (b->device) {
		sg[0].addr = b->mem.addr;
		sg[0].len = b->len;
		return 1;
	}
	for (unsigned i = 0; i < b->nchunks; i++) {
		uint32_t left = b->len - i * NVMET_TCP_BUF_SIZE;
		sg[i].addr = dma_addr_host(b->chunks[i]);
		sg[i].len = left < NVMET_TCP_BUF_SIZE ? left : NVMET_TCP_BUF_SIZE;
	}
	return b->nchunks;
}

/* Run r on b's segments: they add up to b->len, which is the command's length when the
 * buffer was sized for it (nvmet_data.summed). */
static inline __attribute__((always_inline)) void dbuf_exec(struct nvmet_tcp_req *r, const struct nvmet_tcp_dbuf *b)
{
	nvmet_tcp_req_exec(r, dbuf_segments(b, r->sg), b->len == r->len);
}

/* Fragments for [off, off + len) of b, each holding a reference on b: at most
 * NVMET_TCP_C2H_MAX / NVMET_TCP_BUF_SIZE + 1 of them. */
unsigned nvmet_tcp_dbuf_frags(struct nvmet_tcp_dbuf *b, uint32_t off, uint32_t len, struct netdev_frag *out)
{
	unsigned n = 0;
	if (b->device) {
		out[0] = b->mem;
		out[0].addr = dma_addr_add(b->mem.addr, off);
		out[0].offset = b->mem.offset + off;
		out[0].len = len;
		out[0].owner = &nvmet_tcp_dbuf_owner;
		out[0].token = (uint64_t)(uintptr_t)b;
		b->refs++;
		return 1;
	}
	while (len) {
		unsigned c = off / NVMET_TCP_BUF_SIZE;
		uint32_t in = off % NVMET_TCP_BUF_SIZE, k = NVMET_TCP_BUF_SIZE - in;
		if (k > len)
			k = len;
		out[n] = (struct netdev_frag){ .addr = dma_addr_host((uint8_t *)b->chunks[c] + in), .len = k,
					       .provider = NETDEV_PROVIDER_HOST, .owner = &nvmet_tcp_dbuf_owner,
					       .token = (uint64_t)(uintptr_t)b };
		n++;
		off += k;
		len -= k;
	}
	b->refs += n; /* one reference per fragment */
	return n;
}

unsigned nvmet_tcp_dbuf_nfrags(const struct nvmet_tcp_dbuf *b, uint32_t off, uint32_t len)
{
	if (b->device)
		return 1;
	return (off + len - 1) / NVMET_TCP_BUF_SIZE - off / NVMET_TCP_BUF_SIZE + 1;
}

/* Copy fragments into b's chunks at byte off (counted CPU reads). */
int nvmet_tcp_dbuf_copy_in(struct nvmet_tcp_dbuf *b, uint32_t off, const struct netdev_frag *f, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		for (uint32_t done = 0; done < f[i].len;) {
			uint32_t in = off % NVMET_TCP_BUF_SIZE, k = NVMET_TCP_BUF_SIZE - in;
			if (k > f[i].len - done)
				k = f[i].len - done;
			if (off / NVMET_TCP_BUF_SIZE >= b->nchunks)
				return -EINVAL;
			int rc = netdev_frag_read(&f[i], done, (uint8_t *)b->chunks[off / NVMET_TCP_BUF_SIZE] + in, k);
			if (rc)
				return rc;
			dma_account_cpu(MEM_CLASS_HOST, k); /* the store into the chunk */
			done += k;
			off += k;
		}
	}
	return 0;
}

/* --- requests --- */

NVMET_HOT_INLINE struct nvmet_tcp_req *nvmet_tcp_req_get(struct nvmet_tcp_conn *c)
{
	if (!c->free_mask)
		return NULL;
	/* the lowest free slot, as a walk from the first would find it, without the walk */
	unsigned i = (unsigned)__builtin_ctzll(c->free_mask);
	struct nvmet_tcp_req *r = &c->reqs[i];
	c->free_mask &= ~(1ull << i);
	r->nfrags = 0;
	r->place = 0;
	r->taken = 0;
	r->cap = NVMET_TCP_INLINE_SEGS;
	/* table NULL, frags and sg the inline arrays, dbuf NULL: as every free request holds
	 * them (req_put_rest, the one writer of NVMET_TCP_REQ_FREE, leaves them so, and the
	 * connection's creation sets them) */
	r->bdev = NULL;
	r->tx_off = 0;
	r->len = 0;
	r->r2t_len = r->h2c_rcvd = 0;
	r->r2t_sent = r->held = r->dropped = false;
	r->wait = NVMET_TCP_WAIT_NONE;
	r->reason = NVMET_TCP_REASON_NONE;
	c->nfree--;
	return r;
}

/* Give r a segment table (keeping the segments it holds). -ENOMEM when none is free. */
static int req_table(struct nvmet_tcp_req *r)
{
	struct nvmet_tcp_table *t;
	if (r->table)
		return 0;
	if (!host_may(r->conn, HOST_TABLES, 1))
		return -ENOMEM;
	if (!(t = mm_pool_alloc(&nvmet_tcp.table_pool))) {
		nvmet_tcp.st.no_bufs++;
		return -ENOMEM;
	}
	r->conn->ntables++;
	r->conn->host->held[HOST_TABLES]++;
	memcpy(t->frags, r->frags, r->nfrags * sizeof(*t->frags));
	memcpy(t->sg, r->sg, r->nfrags * sizeof(*t->sg)); /* written as they were taken */
	r->table = t;
	r->frags = t->frags;
	r->sg = t->sg;
	r->cap = NVMET_TCP_REQ_SEGS;
	return 0;
}

void nvmet_tcp_req_unhold(struct nvmet_tcp_req *r)
{
	if (r->held) {
		nvmet_tcp.write_held -= r->r2t_len;
		r->conn->write_held -= r->r2t_len;
		r->conn->host->held[HOST_WRITE] -= r->r2t_len;
		r->held = false;
		nvmet_tcp.freed = true;
	}
}

/* The framer places an H2CData PDU's data somewhere: out of r's segments, which go back. */
static __attribute__((noinline)) void req_unplace(struct nvmet_tcp_req *r)
{
	nvme_tcp_rx_unplace(&r->conn->rx, r->ifrags, r->ifrags + NVMET_TCP_INLINE_SEGS);
	if (r->table)
		nvme_tcp_rx_unplace(&r->conn->rx, r->table->frags, r->table->frags + NVMET_TCP_REQ_SEGS);
}

/* What nvmet_tcp_req_put gives back after the received fragments and the write budget (its
 * table, its data buffer), and r made free. */
static inline __attribute__((always_inline)) void req_put_rest(struct nvmet_tcp_req *r)
{
	if (r->table) {
		mm_pool_free(&nvmet_tcp.table_pool, r->table);
		r->conn->ntables--;
		r->conn->host->held[HOST_TABLES]--;
		r->table = NULL;
		nvmet_tcp.freed = true;
	}
	if (r->dbuf) {
		nvmet_tcp_dbuf_unref(r->dbuf);
		r->dbuf = NULL;
	}
	r->frags = r->ifrags;
	r->sg = r->isg;
	struct nvmet_tcp_conn *c = r->conn; /* (read once: the stores below cannot move it) */
	uint64_t bit = 1ull << r->slot;
	c->r2t_mask &= ~bit;
	r->state = NVMET_TCP_REQ_FREE;
	c->free_mask |= bit;
	c->nfree++;
}

/* Give back everything r holds and make it free. */
NVMET_HOT_INLINE void nvmet_tcp_req_put(struct nvmet_tcp_req *r)
{
	/* a PDU the framer is placing where r keeps its fragments (conn_place) moves out first */
	if (__builtin_expect(nvme_tcp_rx_placed(&r->conn->rx), 0))
		req_unplace(r);
	if (r->state == NVMET_TCP_REQ_WAIT)
		nvmet_tcp_req_unwait(r);
	nvmet_tcp_req_release_frags(r);
	nvmet_tcp_req_unhold(r);
	req_put_rest(r);
}

/* nvmet_tcp_req_put of a request sent (TX): req_done gave back its received fragments and its
 * write budget, and nothing gives it either again (data is placed only for a request in R2T,
 * conn_place; the budget is taken in R2T), so only the rest is left. */
NVMET_HOT_INLINE void nvmet_tcp_req_put_sent(struct nvmet_tcp_req *r)
{
	if (__builtin_expect(nvme_tcp_rx_placed(&r->conn->rx), 0))
		req_unplace(r); /* (as nvmet_tcp_req_put) */
	req_put_rest(r);
}

/* r waits for buffers, last in its connection's FIFO; the poll loop retries it when some
 * came back. */
void nvmet_tcp_req_wait(struct nvmet_tcp_req *r, enum nvmet_tcp_wait w)
{
	r->state = NVMET_TCP_REQ_WAIT;
	r->wait = w;
	list_add_tail(&r->conn->waitq, &r->wait_node);
	r->conn->nwaiting++;
	if (w == NVMET_TCP_WAIT_R2T) {
		r->conn->write_waiting++;
		r->conn->host->write_waiting++;
		nvmet_tcp.write_waiting++;
	}
	nvmet_tcp.nwaiting++;
	nvmet_tcp.st.waits++;
	if (nvmet_tcp.nwaiting > nvmet_tcp.st.waiting_high)
		nvmet_tcp.st.waiting_high = nvmet_tcp.nwaiting;
}

/* r leaves its connection's FIFO (put, or retried): what it waited for. */
enum nvmet_tcp_wait nvmet_tcp_req_unwait(struct nvmet_tcp_req *r)
{
	enum nvmet_tcp_wait w = r->wait;
	list_del(&r->wait_node);
	r->conn->nwaiting--;
	if (w == NVMET_TCP_WAIT_R2T) {
		r->conn->write_waiting--;
		r->conn->host->write_waiting--;
		nvmet_tcp.write_waiting--;
	}
	nvmet_tcp.nwaiting--;
	r->wait = NVMET_TCP_WAIT_NONE;
	return w;
}

/* req_take_frags' walk over the n fragments now at dst (copied there from src unless the
 * framer placed them there: in_place, a constant in each copy of this loop). */
static inline __attribute__((always_inline)) void take_walk(struct nvmet_tcp_req *r, struct netdev_frag *dst,
							    const struct netdev_frag *src, unsigned n, bool in_place)
{
	struct nvme_sg *sg = r->sg + r->nfrags;
	unsigned place = r->place;
	uint16_t provider = r->place_provider;
	uint32_t taken = 0; /* < 4 GiB: at most NVMET_TCP_REQ_SEGS fragments of a frame each */
	for (unsigned i = 0; i < n; i++) {
		const struct netdev_frag *f = &src[i];
		if (!in_place)
			dst[i] = *f;
		sg[i].addr = f->addr;
		sg[i].len = f->len;
		taken += f->len;
		if (f->addr.cls == MEM_CLASS_DEVICE) {
			if (f->provider != provider) { /* (the common run: one provider, no store) */
				if (place & NVMET_TCP_PLACE_DEV)
					place |= NVMET_TCP_PLACE_TWO;
				provider = f->provider;
			}
			place |= NVMET_TCP_PLACE_DEV;
		} else {
			place |= NVMET_TCP_PLACE_HOST;
		}
	}
	r->place = (uint8_t)place;
	r->place_provider = provider;
	r->taken += taken;
}

/* Try to move a PDU's data fragments into r (after those it holds), with a table when
 * the inline segments are short. Not a sink: -ENOSPC when they do not fit, and then pdu
 * still holds them (nvmet_tcp_req_add_data copies them). The same loop writes them as
 * the command's segments and notes where they are (r->place, write_placement). H2CData
 * the framer placed behind r's segments already (conn_place) is not copied. */
static int req_take_frags(struct nvmet_tcp_req *r, struct nvme_tcp_rx_pdu *pdu)
{
	unsigned n = pdu->nfrags, have = r->nfrags;
	if (have + n > r->cap && (have + n > NVMET_TCP_REQ_SEGS || req_table(r)))
		return -ENOSPC;
	struct netdev_frag *dst = r->frags + have;
	if (pdu->frags == dst)
		take_walk(r, dst, dst, n, true);
	else
		take_walk(r, dst, pdu->frags, n, false);
	r->nfrags = have + n;
	pdu->nfrags = 0;
	return 0;
}

/* The n data fragments of a whole PDU, where they lie in the receive batch (src), become r's
 * (a request fresh from nvmet_tcp_req_get: from its first segment on): copied and noted as
 * req_take_frags notes them, in one pass. */
void nvmet_tcp_req_take_batch(struct nvmet_tcp_req *r, const struct netdev_frag *src, unsigned n)
{
	take_walk(r, r->frags, src, n, false);
	r->nfrags = n;
}

/* Release a PDU's data fragments to their owner (the NIC). */
void nvmet_tcp_pdu_release(struct nvme_tcp_rx_pdu *pdu)
{
	for (unsigned i = 0; i < pdu->nfrags; i++)
		netdev_frag_release(&pdu->frags[i]);
	pdu->nfrags = 0;
}

/*
 * The data of a PDU for r, at byte off of the command's data. Consumes pdu's fragments,
 * on success and on failure: they stay where the NIC put them (r holds them until the
 * command completed), or, when r holds more than a command gathers, the write continues
 * in DRAM (the fragments so far move there first, counted as NVMET_TCP_DRAM_FRAGMENTS).
 * Without DRAM, or on a copy error, the data is dropped and r->dropped set (the command
 * then fails with SGL Length Invalid).
 */
void nvmet_tcp_req_add_data(struct nvmet_tcp_req *r, struct nvme_tcp_rx_pdu *pdu, uint32_t off)
{
	if (!r->dropped && !r->dbuf && req_take_frags(r, pdu) == 0)
		return; /* kept where the NIC put them */
	if (!r->dropped && !r->dbuf) {
		if (nvmet_tcp_req_gather(r)) {
			r->dropped = true;
			nvmet_tcp.st.data_dropped++;
			nvmet_tcp_req_release_frags(r);
		} else if (r->bdev) {
			nvmet_tcp_dram_fallback(r, NVMET_TCP_DRAM_FRAGMENTS, NULL);
		}
	}
	if (!r->dropped && r->dbuf && nvmet_tcp_dbuf_copy_in(r->dbuf, off, pdu->frags, pdu->nfrags))
		r->dropped = true;
	nvmet_tcp_pdu_release(pdu);
}

/* The held fragments as the command's segments. */
static unsigned req_frag_segments(struct nvmet_tcp_req *r)
{
	for (unsigned i = 0; i < r->nfrags; i++) {
		r->sg[i].addr = r->frags[i].addr;
		r->sg[i].len = r->frags[i].len;
	}
	return r->nfrags;
}

/*
 * Where the drive reads the write data from: the NIC's fragments where they are (device
 * memory the drive may reach, or DRAM when the NIC put them there), else a DRAM copy.
 * Returns NVMET_TCP_REASON_NONE for the fragments as they are in device memory, or the reason
 * for DRAM (NVMET_TCP_DRAM_NIC_DRAM: the fragments are already in DRAM). No walk: the
 * fragments became the command's segments, and their memory was noted, as they were taken
 * (req_take_frags); the segments are used unless the answer is a DRAM copy.
 */
static enum nvmet_tcp_dram_reason write_placement(struct nvmet_tcp_req *r, const char **why)
{
	/* the segments and where the fragments are: noted as they were taken (req_take_frags) */
	unsigned place = r->place;
	uint16_t provider = r->place_provider;
	*why = NULL;
	if (place & NVMET_TCP_PLACE_TWO) {
		*why = "fragments in two providers";
		return NVMET_TCP_DRAM_P2P_REFUSED;
	}
	if (!(place & NVMET_TCP_PLACE_DEV))
		return NVMET_TCP_DRAM_NIC_DRAM;
	if (place & NVMET_TCP_PLACE_HOST) {
		*why = "fragments in device memory and DRAM";
		return NVMET_TCP_DRAM_P2P_REFUSED; /* one command never mixes memories */
	}
	if (nvmet_tcp.p2p_off)
		return NVMET_TCP_DRAM_OFF;
	if (!nvmet_tcp.mops)
		return NVMET_TCP_DRAM_NO_CMB;
	int rc = nvmet_tcp.mops->reach(r->bdev, provider, why);
	if (rc == -EXDEV)
		return NVMET_TCP_DRAM_P2P_REFUSED;
	if (rc)
		return NVMET_TCP_DRAM_NO_CMB;
	return NVMET_TCP_REASON_NONE;
}

/* Copy the held fragments into a DRAM buffer and release them. 0, or -ENOMEM (nothing
 * changed: the caller waits). */
int nvmet_tcp_req_gather(struct nvmet_tcp_req *r)
{
	struct nvmet_tcp_dbuf *b = nvmet_tcp_dbuf_get(r->conn, r->len, NULL);
	if (!b)
		return -ENOMEM;
	int rc = nvmet_tcp_dbuf_copy_in(b, 0, r->frags, r->nfrags);
	nvmet_tcp_req_release_frags(r);
	r->dbuf = b;
	nvmet_tcp.st.gathers++;
	return rc;
}

/*
 * All the write data of r is in (held fragments, or gathered already): decide where the
 * drive reads it from and run it. Waits (NVMET_TCP_WAIT_GATHER) when a DRAM copy is needed and no
 * DRAM is free.
 */
void nvmet_tcp_write_go(struct nvmet_tcp_req *r)
{
	const char *why = NULL;
	if (r->dropped)
		return nvmet_tcp_req_refuse(r);
	if (r->dbuf)
		return dbuf_exec(r, r->dbuf); /* gathered on the way in */
	if (!r->bdev)
		return nvmet_tcp_req_exec(r, req_frag_segments(r), false); /* fabrics/admin data: the core reads it */
	enum nvmet_tcp_dram_reason reason = write_placement(r, &why); /* the segments too */
	if (reason == NVMET_TCP_REASON_NONE) {
		nvmet_tcp.st.p2p_writes++;
		nvmet_tcp.st.p2p_write_bytes += r->len;
		return nvmet_tcp_req_exec(r, r->nfrags, r->taken == r->len);
	}
	if (reason == NVMET_TCP_DRAM_NIC_DRAM) {
		nvmet_tcp_dram_fallback(r, NVMET_TCP_DRAM_NIC_DRAM, "nic.rx_mode = plain or no provider for the NIC");
		return nvmet_tcp_req_exec(r, r->nfrags, r->taken == r->len);
	}
	if (nvmet_tcp_req_gather(r)) {
		if (r->state != NVMET_TCP_REQ_WAIT)
			nvmet_tcp_req_wait(r, NVMET_TCP_WAIT_GATHER);
		return;
	}
	nvmet_tcp_dram_fallback(r, reason, why);
	dbuf_exec(r, r->dbuf);
}

/*
 * Memory for the data a command produces: device memory the drive may write and the NIC
 * gather from (I/O reads on a drive), else DRAM chunks. 0 and r runs, or -ENOMEM
 * (nothing held: the caller waits).
 */
int nvmet_tcp_read_go(struct nvmet_tcp_req *r)
{
	struct netdev_frag mem;
	const char *why = NULL;
	enum nvmet_tcp_dram_reason reason = NVMET_TCP_REASON_NONE;

	if (!r->bdev)
		reason = NVMET_TCP_REASON_NONE; /* not payload: identify data, log pages */
	else if (nvmet_tcp.p2p_off)
		reason = NVMET_TCP_DRAM_OFF;
	else if (r->conn->params.ddgst)
		reason = NVMET_TCP_DRAM_DIGEST;
	else if (!nvmet_tcp.mops)
		reason = NVMET_TCP_DRAM_NO_CMB;
	else if (!host_may(r->conn, HOST_DEVICE, r->len))
		reason = NVMET_TCP_DRAM_ALLOC, why = "the host holds its share of device memory";
	else {
		int rc = nvmet_tcp.mops->alloc(r->bdev, r->len, &mem, &why);
		if (rc == 0) {
			struct nvmet_tcp_dbuf *b = nvmet_tcp_dbuf_get(r->conn, r->len, &mem);
			if (!b) {
				nvmet_tcp.mops->free(&mem);
				return -ENOMEM;
			}
			r->dbuf = b;
			nvmet_tcp.st.p2p_reads++;
			nvmet_tcp.st.p2p_read_bytes += r->len;
			dbuf_exec(r, b);
			return 0;
		}
		reason = rc == -ENOMEM ? NVMET_TCP_DRAM_ALLOC : rc == -EXDEV ? NVMET_TCP_DRAM_P2P_REFUSED
									 : NVMET_TCP_DRAM_NO_CMB;
	}
	if (!(r->dbuf = nvmet_tcp_dbuf_get(r->conn, r->len, NULL)))
		return -ENOMEM;
	if (reason != NVMET_TCP_REASON_NONE)
		nvmet_tcp_dram_fallback(r, reason, why);
	dbuf_exec(r, r->dbuf);
	return 0;
}

/* A write whose data comes after an R2T: a segment table for its fragments and room in
 * the write budget (NIC buffers it will hold), then the R2T. -ENOMEM: wait. */
int nvmet_tcp_r2t_go(struct nvmet_tcp_req *r)
{
	if (r->len > NVMET_TCP_IN_CAPSULE && req_table(r))
		return -ENOMEM;
	if (nvmet_tcp.write_held && nvmet_tcp.write_held + r->len > write_budget())
		return -ENOMEM;
	if (!host_may(r->conn, HOST_WRITE, r->len))
		return -ENOMEM;
	nvmet_tcp.write_held += r->len;
	r->conn->write_held += r->len;
	r->conn->host->held[HOST_WRITE] += r->len;
	r->held = true;
	r->r2t_len = r->len;
	r->state = NVMET_TCP_REQ_R2T;
	r->conn->r2t_mask |= 1ull << r->slot;
	r->conn->r2t_due = true;
	nvmet_tcp.st.r2ts++;
	return 0;
}
