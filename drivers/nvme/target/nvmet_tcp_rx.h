/*
 * nvmet_tcp_rx.h - receive framing of an NVMe/TCP connection: whole PDUs out of the stream of
 * payload fragments a TCP socket hands over (tcp_recv_frags), without copying PDU data.
 *
 * The NIC put the TCP payload in device memory (an NVMe CMB). This layer reads only what
 * the CPU must see: each PDU header (at most 132 bytes, through netdev_frag_read, so the
 * bytes are counted) and, when data digests are on, the data to check its CRC32C. PDU
 * data is handed on as fragments: a fragment that holds the end of one PDU and the start
 * of the next is split (netdev_frag_split), and the consumer becomes the owner of the data
 * fragments it receives: it releases them once the NVMe command that used them is done,
 * which returns the buffers to the NIC's ring. Pad bytes and digests are consumed here.
 */
#ifndef DRIVERS_NVME_TARGET_NVMET_TCP_RX_H
#define DRIVERS_NVME_TARGET_NVMET_TCP_RX_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include "../../nic/netdev.h"
#include "nvmet_tcp_pdu.h"

/* Data fragments one PDU may arrive in; more (a peer sending tiny segments) ends the
 * connection with Data Transfer Limit Exceeded rather than growing without bound. */
#define NVME_TCP_RX_MAX_FRAGS 128

enum nvme_tcp_rx_state {
	NVME_TCP_RX_HEADER = 0, /* collecting the common header, then the whole header */
	NVME_TCP_RX_PAD,        /* skipping bytes between the header digest and PDO */
	NVME_TCP_RX_DATA,       /* passing data fragments on */
	NVME_TCP_RX_DDGST,      /* collecting the data digest */
	NVME_TCP_RX_FAILED,     /* a fatal error was reported: feed nothing more */
};

/* One received PDU, as handed to the consumer. */
struct nvme_tcp_rx_pdu {
	struct nvme_tcp_pdu hdr;    /* the parsed header */
	const uint8_t *raw;         /* its bytes (hdr.hdr_bytes), e.g. to quote in a C2HTermReq */
	bool ddgst_ok;              /* the data digest matched (true when digests are off) */
	unsigned nfrags;
	struct netdev_frag *frags;  /* the data, in order: the consumer owns them. In own[], or
				     * where the consumer's place hook said (its cap entries) */
	unsigned cap;               /* entries frags has room for */
	struct netdev_frag own[NVME_TCP_RX_MAX_FRAGS];
};

/* The consumer. Consumes pdu->frags on every call, on success and on failure. Returns
 * 0, or a negative errno that stops feeding (passed up by nvme_tcp_rx_feed). */
typedef int (*nvme_tcp_rx_fn)(void *ctx, struct nvme_tcp_rx_pdu *pdu);

/*
 * Where the data fragments of an H2CData PDU whose header just parsed go (the data a
 * controller asked for with an R2T, whose header names the command): an array of the
 * consumer's (*cap entries, at most NVME_TCP_RX_MAX_FRAGS are used), so that they arrive
 * where the consumer keeps them and it copies none (it sees pdu->frags pointing there);
 * NULL: the framer's own array. Only a hint: the framer moves what it placed to its own
 * array when the PDU needs more than *cap, or when the consumer calls nvme_tcp_rx_unplace
 * because that memory is about to change hands; the PDU is delivered as ever.
 */
typedef struct netdev_frag *(*nvme_tcp_rx_place_fn)(void *ctx, const struct nvme_tcp_pdu *hdr, unsigned *cap);

struct nvme_tcp_rx_stats {
	uint64_t pdus;
	uint64_t header_bytes;   /* read by the CPU (headers, header digests) */
	uint64_t data_bytes;     /* handed on without copying */
	uint64_t pad_bytes;      /* skipped */
	uint64_t digest_bytes;   /* data digests read */
	uint64_t ddgst_errors;
	uint64_t splits;         /* fragments cut at a PDU boundary */
};

struct nvme_tcp_rx {
	enum nvme_tcp_rx_state state;
	const struct nvme_tcp_params *params; /* the connection's (they change after ICReq) */
	uint8_t hdr[NVME_TCP_MAX_HEADER];
	size_t have, need;
	uint32_t skip;              /* stream bytes already in hdr (nvme_tcp_rx_peek_len): passed over */
	uint32_t kept_end;          /* while skip: the kept common header's hdr_end when it is a
				     * CapsuleCmd's the one-step path takes (nvme_tcp_rx_whole_capsule
				     * does not check it again), NVME_TCP_RX_UNCHECKED when kept
				     * unchecked (nvme_tcp_rx_keep_unchecked: the one-step path checks
				     * it, or settles it before the framer sees it), else 0; written
				     * with skip by nvme_tcp_rx_peek_len and nvme_tcp_rx_keep_unchecked
				     * (its writers), cleared when the params it was checked against
				     * change (ICReq) */
	uint32_t pad_left, data_left, ddgst_have;
	uint8_t ddgst[NVME_TCP_DIGEST_LEN];
	uint32_t crc;               /* running data digest */
	struct nvme_tcp_rx_pdu cur;
	nvme_tcp_rx_place_fn place; /* NULL: every PDU's data in cur.own */
	void *place_ctx;
	struct nvme_tcp_error err;  /* why, once FAILED */
	struct nvme_tcp_rx_stats st;
};

/* Start framing with the connection's parameters (read at every PDU). */
void nvme_tcp_rx_init(struct nvme_tcp_rx *rx, const struct nvme_tcp_params *p);

/* Ask fn where the data of each PDU goes (see nvme_tcp_rx_place_fn). */
void nvme_tcp_rx_set_place(struct nvme_tcp_rx *rx, nvme_tcp_rx_place_fn fn, void *ctx);

/* The data fragments of the PDU being received move to the framer's own array if they are
 * in [lo, hi) (memory the consumer is about to free or reuse). */
void nvme_tcp_rx_unplace(struct nvme_tcp_rx *rx, const void *lo, const void *hi);

/* Is the data of the PDU being received placed outside the framer's own array? */
static inline bool nvme_tcp_rx_placed(const struct nvme_tcp_rx *rx)
{
	return rx->cur.frags != rx->cur.own;
}

/*
 * Feed the next fragment of the byte stream. Consumes f (every byte is either
 * read here and the buffer released, or passed on inside a PDU). Calls fn for each PDU
 * completed. Returns 0; -EPROTO when the stream is not valid NVMe/TCP (rx->err holds the
 * FES/FEI for the C2HTermReq; the state is FAILED); -E2BIG for a PDU in too many
 * fragments (FES Data Transfer Limit Exceeded, FAILED); or the consumer's error.
 */
int nvme_tcp_rx_feed_any(struct nvme_tcp_rx *rx, struct netdev_frag *f, nvme_tcp_rx_fn fn, void *ctx);

/* nvme_tcp_rx_feed for every case; nvme_tcp_rx_feed itself takes the most common one inline:
 * a fragment wholly inside the data of a PDU without a data digest, not its first (the
 * middle segments of a large H2CData PDU, which only move on, and its last, which then
 * delivers the PDU). */
/* The PDU's last data fragment came in (no digest follows): hand the PDU to fn, as
 * nvme_tcp_rx_feed_any does (for nvme_tcp_rx_feed's inline path). */
int nvme_tcp_rx_deliver(struct nvme_tcp_rx *rx, nvme_tcp_rx_fn fn, void *ctx);

static inline int nvme_tcp_rx_feed(struct nvme_tcp_rx *rx, struct netdev_frag *f, nvme_tcp_rx_fn fn, void *ctx)
{
	if (rx->state == NVME_TCP_RX_DATA && f->len && f->len <= rx->data_left && !rx->cur.hdr.has_ddgst &&
	    rx->cur.nfrags < rx->cur.cap) {
		rx->cur.frags[rx->cur.nfrags++] = *f;
		rx->data_left -= f->len;
		rx->st.data_bytes += f->len;
		f->len = 0;
		return rx->data_left ? 0 : nvme_tcp_rx_deliver(rx, fn, ctx);
	}
	return nvme_tcp_rx_feed_any(rx, f, fn, ctx);
}

/*
 * The leading fragments of f[0..n) that lie wholly inside the data of the PDU being
 * received, short of its last byte, with no data digest: moved into the PDU, as
 * nvme_tcp_rx_feed moves each of them, in one loop (the middle segments of a large H2CData
 * PDU). Returns how many were taken (they belong to the PDU now: the caller goes on at
 * f[returned]); 0 when the framer is not in such data. The fragment that ends the PDU, and
 * anything else, is left to nvme_tcp_rx_feed.
 */
static inline unsigned nvme_tcp_rx_feed_data_run(struct nvme_tcp_rx *rx, const struct netdev_frag *f, unsigned n)
{
	if (rx->state != NVME_TCP_RX_DATA || rx->cur.hdr.has_ddgst)
		return 0;
	unsigned room = rx->cur.cap - rx->cur.nfrags, k = 0;
	uint32_t left = rx->data_left;
	struct netdev_frag *out = &rx->cur.frags[rx->cur.nfrags];
	if (n > room)
		n = room;
	while (k < n && f[k].len && f[k].len < left) {
		out[k] = f[k];
		left -= f[k].len;
		k++;
	}
	rx->cur.nfrags += k;
	rx->st.data_bytes += rx->data_left - left;
	rx->data_left = left;
	return k;
}

/*
 * Where the next data fragments of the PDU being received may go straight from the socket
 * (tcp_recv_frags into the returned slots, no batch in between): inside the data of a PDU
 * without a data digest with a free slot. *room: the slots there, *left: the data bytes
 * still to come (take no more). NULL otherwise (the caller feeds a batch as ever).
 */
static inline struct netdev_frag *nvme_tcp_rx_direct(const struct nvme_tcp_rx *rx, unsigned *room, uint32_t *left)
{
	if (rx->state != NVME_TCP_RX_DATA || rx->cur.hdr.has_ddgst || rx->cur.nfrags >= rx->cur.cap)
		return NULL;
	*room = rx->cur.cap - rx->cur.nfrags;
	*left = rx->data_left;
	return &rx->cur.frags[rx->cur.nfrags];
}

/*
 * n non-empty fragments holding bytes in all (at most the *left nvme_tcp_rx_direct said)
 * were put in the slots it returned: they are the PDU's now, as nvme_tcp_rx_feed would have
 * made them. Delivers the PDU to fn when they complete it. Returns 0 or fn's error.
 */
static inline int nvme_tcp_rx_direct_took(struct nvme_tcp_rx *rx, unsigned n, uint32_t bytes, nvme_tcp_rx_fn fn,
					  void *ctx)
{
	rx->cur.nfrags += n;
	rx->data_left -= bytes;
	rx->st.data_bytes += bytes;
	return rx->data_left ? 0 : nvme_tcp_rx_deliver(rx, fn, ctx);
}

/* Release whatever a half-received PDU holds (connection teardown). */
void nvme_tcp_rx_reset(struct nvme_tcp_rx *rx);

/* Stream bytes still to be fed before the PDU being received is complete, once its
 * header has been parsed (pad, data, data digest); 0 while no parsed header says so
 * (between PDUs, inside a header, after a failure). */
static inline uint32_t nvme_tcp_rx_pdu_left(const struct nvme_tcp_rx *rx)
{
	uint32_t dgst = rx->cur.hdr.has_ddgst ? NVME_TCP_DIGEST_LEN : 0;
	switch (rx->state) {
	case NVME_TCP_RX_PAD:
		return rx->pad_left + rx->data_left + dgst;
	case NVME_TCP_RX_DATA:
		return rx->data_left + dgst;
	case NVME_TCP_RX_DDGST:
		return NVME_TCP_DIGEST_LEN - rx->ddgst_have;
	default:
		return 0;
	}
}

/* Is the framer between PDUs (the next stream byte starts a header, none of it read)? */
static inline bool nvme_tcp_rx_at_pdu_start(const struct nvme_tcp_rx *rx)
{
	return rx->state == NVME_TCP_RX_HEADER && rx->have == 0;
}

/*
 * The length (PLEN) of the PDU that starts with the common header ch (NVME_TCP_CH_LEN bytes
 * looked at where they lie, at the front of the stream, while nvme_tcp_rx_at_pdu_start):
 * only for a data-carrying PDU a host sends (CapsuleCmd, H2CData) whose common header
 * passes the checks the framer makes of it and whose PLEN is within what the framer would
 * take (a header, a pad, the larger of MAXH2CDATA and the in-capsule data, a digest).
 * 0 otherwise: the caller then feeds the stream as it is and the framer decides.
 * With a length, the framer keeps the common header: the stream's next NVME_TCP_CH_LEN
 * bytes are passed over when fed, not read again (so they must be those of ch).
 */
uint32_t nvme_tcp_rx_peek_len(struct nvme_tcp_rx *rx, const uint8_t *ch);

/* rx->kept_end of a common header kept unchecked (no header's hdr_end: PDO is one byte). */
#define NVME_TCP_RX_UNCHECKED UINT32_MAX

/*
 * Keep the common header ch (the stream's next NVME_TCP_CH_LEN bytes, looked at where they lie
 * while nvme_tcp_rx_at_pdu_start) without checking it: for a caller that knows the whole PDU is
 * in the socket whatever the header says (its PLEN, unchecked, within what the socket holds), so
 * that only the step that takes it checks it. Only on a connection past ICReq without digests,
 * whose next batch goes to nvme_tcp_rx_whole_head first (which checks it, and settles it for the
 * framer when it does not take the PDU: kept as nvme_tcp_rx_peek_len keeps it, or given back to
 * the stream); the framer is never fed while a header is kept unchecked.
 */
void nvme_tcp_rx_keep_unchecked(struct nvme_tcp_rx *rx, const uint8_t ch[NVME_TCP_CH_LEN]);

/*
 * The one-step path for the common PDU: a CapsuleCmd that lies whole in a batch of fragments
 * taken from the socket, taken without stepping the framer through each fragment or going
 * through struct nvme_tcp_rx_pdu (nvme_tcp_rx_whole_capsule, then nvme_tcp_rx_whole_take).
 * The framer stays for everything else, and both give the same result for the same stream:
 * the same PDU (its header bytes, its data fragments), the same framer state and counters;
 * anything the one-step path does not take (digests, another type, a header that fails a
 * check, a PDU not whole in the batch or whose header and pad are not in its first fragment)
 * goes to the framer untouched, which decides as ever (tests/fuzz/fuzz_nvme_tcp_rx.c checks
 * both against each other).
 */
struct nvme_tcp_rx_whole {
	uint32_t hdr_end;            /* stream bytes before the data: the header and its pad (PDO),
				      * or the whole PDU (PLEN) when it carries no data */
	uint32_t data_len;           /* in-capsule data bytes (0: none) */
	unsigned nents;              /* batch entries the PDU reaches into */
	uint32_t last_len;           /* its bytes in the last of them (which may hold more) */
};

/* Is the framer where a PDU starts at the front of the next fragment (nothing of it read, or
 * only its common header kept by nvme_tcp_rx_peek_len)? (nvme_tcp_rx_whole_capsule's first
 * condition, inline: the caller looks before every fragment it feeds.) */
static inline bool nvme_tcp_rx_at_whole_start(const struct nvme_tcp_rx *rx)
{
	return rx->state == NVME_TCP_RX_HEADER && rx->have == rx->skip;
}

/*
 * Does a CapsuleCmd start at the front of the batch f[0..n) (nvme_tcp_rx_at_whole_start) that
 * the one-step path takes: no digests negotiated, a common header that passes every check the
 * framer makes of a CapsuleCmd's header (nvme_tcp_header_size, nvme_tcp_pdu_parse), its
 * header and pad in f[0] and all its bytes in the batch? Then true and *w its layout. The
 * common header is read from f[0] unless nvme_tcp_rx_peek_len kept it; one left to the framer
 * is kept when nvme_tcp_rx_peek_len would keep it (so it is not read twice). Only for a
 * connection past ICReq.
 */
bool nvme_tcp_rx_whole_capsule(struct nvme_tcp_rx *rx, const struct netdev_frag *f, unsigned n,
			       struct nvme_tcp_rx_whole *w);

/*
 * nvme_tcp_rx_whole_capsule's checks of the header alone (then nvme_tcp_rx_whole_ends, or for a
 * PDU without data, all in f[0], nvme_tcp_rx_whole_head_take straight away): true
 * and w->hdr_end, w->data_len (w->nents and w->last_len: nvme_tcp_rx_whole_ends) when the
 * one-step path takes a CapsuleCmd with this header whose header and pad lie in f[0]. The
 * common header is read into rx->hdr unless nvme_tcp_rx_peek_len kept it; false leaves it
 * to the framer as nvme_tcp_rx_whole_capsule does.
 */
bool nvme_tcp_rx_whole_head(struct nvme_tcp_rx *rx, const struct netdev_frag *f, unsigned n,
			    struct nvme_tcp_rx_whole *w);

/* The caller of nvme_tcp_rx_whole_head leaves the PDU to the framer (no request for it): its
 * common header kept as nvme_tcp_rx_peek_len keeps it (not read from the stream again). */
void nvme_tcp_rx_whole_refused(struct nvme_tcp_rx *rx);

/* After nvme_tcp_rx_whole_head: true when all of the PDU's bytes are in the batch f[0..n),
 * with w->nents and w->last_len (nvme_tcp_rx_whole_capsule's answer); false leaves it to the
 * framer (nvme_tcp_rx_whole_refused). */
bool nvme_tcp_rx_whole_ends(struct nvme_tcp_rx *rx, const struct netdev_frag *f, unsigned n,
			    struct nvme_tcp_rx_whole *w);

/* Drop the first n bytes of f (they were read or skipped); release it when empty (the framer's
 * step, inline here for nvme_tcp_rx_whole_head_take). */
static inline void nvme_tcp_rx_frag_consume(struct netdev_frag *f, uint32_t n)
{
	f->addr = dma_addr_add(f->addr, n);
	f->offset += n;
	f->len -= n;
	if (f->len == 0)
		netdev_frag_release(f);
}

/* The framer between PDUs: the next stream byte starts a common header. */
static inline void nvme_tcp_rx_start_header(struct nvme_tcp_rx *rx)
{
	rx->state = NVME_TCP_RX_HEADER;
	rx->have = 0;
	rx->need = NVME_TCP_CH_LEN;
}

/*
 * The header part of taking a whole CapsuleCmd (nvme_tcp_rx_whole_head said yes and all its
 * bytes are in the batch, the entry it ends inside already cut there when cut): its SQE read
 * into sqe from f0 (the batch's first entry, the header at its front), the header and pad
 * consumed from f0 (released when nothing is left: a PDU without data, or data that starts in
 * the next entry), the framer between PDUs again with its counters as if it had framed the
 * PDU. (Inline: the transport's two shapes, with data and without, each fold it.)
 */
static inline __attribute__((always_inline)) void nvme_tcp_rx_whole_head_take(struct nvme_tcp_rx *rx,
									      struct netdev_frag *f0,
									      const struct nvme_tcp_rx_whole *w,
									      uint8_t sqe[64], bool cut)
{
	netdev_frag_read(f0, NVME_TCP_CH_LEN, sqe, NVME_TCP_CMD_HLEN - NVME_TCP_CH_LEN);
	nvme_tcp_rx_frag_consume(f0, w->hdr_end); /* the header and pad */
	rx->st.pdus++;
	rx->st.header_bytes += NVME_TCP_CMD_HLEN;
	rx->st.pad_bytes += w->data_len ? w->hdr_end - NVME_TCP_CMD_HLEN : 0;
	rx->st.data_bytes += w->data_len;
	rx->st.splits += cut;
	nvme_tcp_rx_start_header(rx);
	rx->skip = 0;
}

/*
 * The first step of taking the whole CapsuleCmd nvme_tcp_rx_whole_capsule (or _head and _ends)
 * found at the front of f: the entry it ends inside cut where it ends (netdev_frag_split, as
 * the framer cuts it; the rest in *rest, else rest->len 0). 1 when cut, 0 when nothing was to
 * cut (a PDU without data lies in f[0], whose header bytes are consumed in place), -ENOMEM
 * when no split reference is left (nothing changed). The one step of the take that can fail.
 */
static inline int nvme_tcp_rx_whole_cut(struct netdev_frag *f, const struct nvme_tcp_rx_whole *w,
					struct netdev_frag *rest)
{
	struct netdev_frag *last = &f[w->nents - 1];
	rest->len = 0;
	if (!w->data_len || w->last_len >= last->len)
		return 0;
	return netdev_frag_split(last, w->last_len, rest) ? -ENOMEM : 1;
}

/* The batch entries a whole CapsuleCmd taken from the front of f used up (nvme_tcp_rx_whole_cut
 * said cut, then nvme_tcp_rx_whole_head_take ran): the caller goes on at f[returned], where the
 * rest of a cut entry goes, or f[0] when it holds the next PDU's bytes. */
static inline unsigned nvme_tcp_rx_whole_used(const struct netdev_frag *f, const struct nvme_tcp_rx_whole *w, bool cut)
{
	if (cut)
		return w->nents - 1;
	return w->data_len || !f[0].len ? w->nents : 0;
}

/*
 * Take the PDU nvme_tcp_rx_whole_capsule found at the front of f: its SQE (64 bytes) read into
 * sqe, its header and pad consumed, its data fragments moved to out (at most w->nents) and
 * their number in *nout; an entry with more bytes than the PDU keeps the rest (where the data
 * ends it is cut, netdev_frag_split, counted as the framer counts it). The framer is between
 * PDUs again, its counters as if it had framed the PDU. Returns the batch entries used up (the
 * caller goes on at f[returned], the rest of the entry the PDU ended inside), or -ENOMEM when
 * no split reference is left: then nothing changed (the framer, fed the batch as ever,
 * reports it).
 */
int nvme_tcp_rx_whole_take(struct nvme_tcp_rx *rx, struct netdev_frag *f, const struct nvme_tcp_rx_whole *w,
			   uint8_t sqe[64], struct netdev_frag *out, unsigned *nout);

/*
 * nvme_tcp_rx_whole_take without moving the data: its fragments are f[*first .. *first +
 * *nout) as they lie in the batch, the entry the PDU ends inside cut there (f[] keeps the
 * PDU's part) and the rest of it in *rest (len 0 when nothing is left of it), which the
 * caller puts at f[returned] once it has taken the data. For a caller that walks the data
 * fragments anyway (the transport's, one pass that copies them and makes its segments).
 */
int nvme_tcp_rx_whole_take_at(struct nvme_tcp_rx *rx, struct netdev_frag *f, const struct nvme_tcp_rx_whole *w,
			      uint8_t sqe[64], unsigned *first, unsigned *nout, struct netdev_frag *rest);

#endif
