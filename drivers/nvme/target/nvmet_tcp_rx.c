/*
 * nvmet_tcp_rx.c - NVMe/TCP receive framing (see nvmet_tcp_rx.h).
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include "../../../lib/byteorder.h"
#include "../../../lib/crc32.h"
#include "nvmet_tcp_rx.h"

#define frag_consume nvme_tcp_rx_frag_consume

static void release_cur(struct nvme_tcp_rx *rx)
{
	for (unsigned i = 0; i < rx->cur.nfrags; i++)
		netdev_frag_release(&rx->cur.frags[i]);
	rx->cur.nfrags = 0;
}

/* The PDU's data in the framer's own array (what was placed elsewhere moves there). */
static void own_frags(struct nvme_tcp_rx *rx)
{
	if (rx->cur.frags != rx->cur.own) {
		memcpy(rx->cur.own, rx->cur.frags, rx->cur.nfrags * sizeof(rx->cur.own[0]));
		rx->cur.frags = rx->cur.own;
	}
	rx->cur.cap = NVME_TCP_RX_MAX_FRAGS;
}

void nvme_tcp_rx_set_place(struct nvme_tcp_rx *rx, nvme_tcp_rx_place_fn fn, void *ctx)
{
	rx->place = fn;
	rx->place_ctx = ctx;
}

void nvme_tcp_rx_unplace(struct nvme_tcp_rx *rx, const void *lo, const void *hi)
{
	const void *p = rx->cur.frags;
	if (p != rx->cur.own && (uintptr_t)p >= (uintptr_t)lo && (uintptr_t)p < (uintptr_t)hi)
		own_frags(rx);
}

static int fail(struct nvme_tcp_rx *rx, uint16_t fes, uint32_t fei, const char *what, int rc)
{
	rx->err.fes = fes;
	rx->err.fei = fei;
	rx->err.what = what;
	rx->state = NVME_TCP_RX_FAILED;
	release_cur(rx);
	return rc;
}

#define start_header nvme_tcp_rx_start_header

/* Initialise. */
void nvme_tcp_rx_init(struct nvme_tcp_rx *rx, const struct nvme_tcp_params *p)
{
	memset(rx, 0, sizeof(*rx));
	rx->params = p;
	rx->cur.frags = rx->cur.own;
	rx->cur.cap = NVME_TCP_RX_MAX_FRAGS;
	start_header(rx);
}

/* Give up a half-received PDU. */
void nvme_tcp_rx_reset(struct nvme_tcp_rx *rx)
{
	release_cur(rx);
	own_frags(rx);
	start_header(rx);
	rx->skip = 0; /* (a kept common header is passed over before its PDU can end) */
}

/* Hand the current PDU to the consumer and go back to reading headers. */
static int deliver(struct nvme_tcp_rx *rx, nvme_tcp_rx_fn fn, void *ctx)
{
	rx->cur.raw = rx->hdr;
	rx->st.pdus++;
	start_header(rx);
	int rc = fn(ctx, &rx->cur);
	rx->cur.nfrags = 0; /* the consumer owns them now */
	rx->cur.frags = rx->cur.own;
	rx->cur.cap = NVME_TCP_RX_MAX_FRAGS;
	return rc;
}

int nvme_tcp_rx_deliver(struct nvme_tcp_rx *rx, nvme_tcp_rx_fn fn, void *ctx)
{
	return deliver(rx, fn, ctx);
}

/* The whole header is in: parse it and plan the rest of the PDU. */
static int header_done(struct nvme_tcp_rx *rx, nvme_tcp_rx_fn fn, void *ctx)
{
	struct nvme_tcp_pdu *h = &rx->cur.hdr;
	/* the common header was checked as it came in (rx->need is its size) */
	if (nvme_tcp_pdu_parse_framed(rx->hdr, rx->have, (int)rx->need, rx->params, h, &rx->err) < 0)
		return fail(rx, rx->err.fes, rx->err.fei, rx->err.what, -EPROTO);
	rx->cur.nfrags = 0;
	rx->cur.ddgst_ok = true;
	rx->crc = 0;
	rx->ddgst_have = 0;
	rx->data_left = h->data_len;
	rx->pad_left = h->data_len ? h->data_off - h->hdr_bytes : 0;
	if (!h->data_len)
		return deliver(rx, fn, ctx);
	if (h->type == NVME_TCP_H2C_DATA && rx->place) {
		/* the data straight where the consumer keeps it (cur.frags is own[] here) */
		unsigned cap = 0;
		struct netdev_frag *dst = rx->place(rx->place_ctx, h, &cap);
		if (dst && cap) {
			rx->cur.frags = dst;
			rx->cur.cap = cap < NVME_TCP_RX_MAX_FRAGS ? cap : NVME_TCP_RX_MAX_FRAGS;
		}
	}
	rx->state = rx->pad_left ? NVME_TCP_RX_PAD : NVME_TCP_RX_DATA;
	return 0;
}

/* CRC32C of len bytes of f from its start, read by the CPU (counted). */
static uint32_t crc_frag(uint32_t crc, const struct netdev_frag *f, uint32_t len)
{
	uint8_t buf[256];
	for (uint32_t off = 0; off < len;) {
		uint32_t n = len - off < sizeof(buf) ? len - off : (uint32_t)sizeof(buf);
		netdev_frag_read(f, off, buf, n);
		crc = crc32c(crc, buf, n);
		off += n;
	}
	return crc;
}

/* Feed one fragment (any case; nvme_tcp_rx_feed takes the common one inline). */
int nvme_tcp_rx_feed_any(struct nvme_tcp_rx *rx, struct netdev_frag *f, nvme_tcp_rx_fn fn, void *ctx)
{
	int rc;

	if (rx->state == NVME_TCP_RX_FAILED) {
		netdev_frag_release(f);
		return -EPROTO;
	}
	while (f->len) {
		uint32_t avail = f->len, n;
		switch (rx->state) {
		case NVME_TCP_RX_HEADER:
			if (rx->skip) {
				/* the common header nvme_tcp_rx_peek_len kept (checked, its size in
				 * rx->need, always more than it): passed over, not read again */
				n = rx->skip < avail ? rx->skip : avail;
				rx->skip -= n;
				rx->st.header_bytes += n;
				frag_consume(f, n);
				break;
			}
			n = (uint32_t)(rx->need - rx->have) < avail ? (uint32_t)(rx->need - rx->have) : avail;
			if (!rx->have && avail > NVME_TCP_CH_LEN) {
				/* a PDU starts at the front of f and goes on past its common header
				 * (the common case): the common header checked as below (a refusal
				 * quotes it alone: rx->have is its size), then the rest of the header
				 * that f holds read behind it in the same pass; no byte past the header
				 * is read (a data payload may lie in device memory) */
				netdev_frag_read(f, 0, rx->hdr, NVME_TCP_CH_LEN);
				rx->have = NVME_TCP_CH_LEN;
				int size = nvme_tcp_header_size(rx->hdr, rx->have, rx->params, &rx->err);
				if (size < 0) {
					rx->st.header_bytes += NVME_TCP_CH_LEN;
					rc = fail(rx, rx->err.fes, rx->err.fei, rx->err.what, -EPROTO);
					goto release;
				}
				rx->need = (size_t)size;
				n = (uint32_t)size < avail ? (uint32_t)size : avail; /* > NVME_TCP_CH_LEN */
				if (n == NVME_TCP_CMD_HLEN) /* a CapsuleCmd's: its SQE in one fixed-size copy */
					netdev_frag_read(f, NVME_TCP_CH_LEN, rx->hdr + NVME_TCP_CH_LEN,
							 NVME_TCP_CMD_HLEN - NVME_TCP_CH_LEN);
				else
					netdev_frag_read(f, NVME_TCP_CH_LEN, rx->hdr + NVME_TCP_CH_LEN, n - NVME_TCP_CH_LEN);
				rx->have = 0;
			} else if (rx->have == NVME_TCP_CH_LEN && n == NVME_TCP_CMD_HLEN - NVME_TCP_CH_LEN) {
				/* a CapsuleCmd's SQE behind the common header looked at in place */
				netdev_frag_read(f, 0, rx->hdr + NVME_TCP_CH_LEN, NVME_TCP_CMD_HLEN - NVME_TCP_CH_LEN);
			} else {
				netdev_frag_read(f, 0, rx->hdr + rx->have, n);
			}
			rx->have += n;
			rx->st.header_bytes += n;
			frag_consume(f, n);
			if (rx->have < rx->need)
				break;
			if (rx->need == NVME_TCP_CH_LEN) {
				int size = nvme_tcp_header_size(rx->hdr, rx->have, rx->params, &rx->err);
				if (size < 0) {
					rc = fail(rx, rx->err.fes, rx->err.fei, rx->err.what, -EPROTO);
					goto release;
				}
				rx->need = (size_t)size;
				if (rx->have < rx->need)
					break;
			}
			if ((rc = header_done(rx, fn, ctx)))
				goto release;
			break;
		case NVME_TCP_RX_PAD:
			n = rx->pad_left < avail ? rx->pad_left : avail;
			rx->pad_left -= n;
			rx->st.pad_bytes += n;
			frag_consume(f, n);
			if (!rx->pad_left)
				rx->state = NVME_TCP_RX_DATA;
			break;
		case NVME_TCP_RX_DATA:
			if (rx->cur.nfrags == rx->cur.cap && rx->cur.cap < NVME_TCP_RX_MAX_FRAGS)
				own_frags(rx); /* more than the consumer's array holds */
			if (rx->cur.nfrags == NVME_TCP_RX_MAX_FRAGS) {
				rc = fail(rx, NVME_TCP_FES_DATA_LIMIT_EXCEEDED, 4, "PDU data in too many fragments", -E2BIG);
				goto release;
			}
			n = rx->data_left < avail ? rx->data_left : avail;
			struct netdev_frag *out = &rx->cur.frags[rx->cur.nfrags];
			if (n == avail) {
				*out = *f;          /* the whole fragment moves on */
				f->len = 0;
			} else {
				*out = *f;
				if (netdev_frag_split(out, n, f)) { /* out keeps n bytes, f the rest */
					*out = (struct netdev_frag){ 0 };
					rc = fail(rx, NVME_TCP_FES_DATA_LIMIT_EXCEEDED, 4, "no split reference left", -ENOMEM);
					goto release;
				}
				rx->st.splits++;
			}
			rx->cur.nfrags++;
			if (rx->cur.hdr.has_ddgst)
				rx->crc = crc_frag(rx->crc, out, n);
			rx->data_left -= n;
			rx->st.data_bytes += n;
			if (rx->data_left)
				break;
			if (rx->cur.hdr.has_ddgst) {
				rx->state = NVME_TCP_RX_DDGST;
				break;
			}
			if ((rc = deliver(rx, fn, ctx)))
				goto release;
			break;
		case NVME_TCP_RX_DDGST:
			n = NVME_TCP_DIGEST_LEN - rx->ddgst_have < avail ? NVME_TCP_DIGEST_LEN - rx->ddgst_have : avail;
			netdev_frag_read(f, 0, rx->ddgst + rx->ddgst_have, n);
			rx->ddgst_have += n;
			rx->st.digest_bytes += n;
			frag_consume(f, n);
			if (rx->ddgst_have < NVME_TCP_DIGEST_LEN)
				break;
			uint32_t want = le32_load(rx->ddgst);
			rx->cur.ddgst_ok = want == rx->crc;
			if (!rx->cur.ddgst_ok)
				rx->st.ddgst_errors++;
			if ((rc = deliver(rx, fn, ctx)))
				goto release;
			break;
		default:
			rc = -EPROTO;
			goto release;
		}
	}
	return 0;
release:
	if (f->len)
		netdev_frag_release(f);
	return rc;
}


/*
 * Is the common header ch that of a CapsuleCmd the framer takes, on a connection without
 * digests (the caller checked)? Exactly the checks nvme_tcp_header_size and
 * nvme_tcp_pdu_parse make of it then (type, HLEN, HDGSTF and DDGSTF clear, PLEN at
 * least HLEN; without data PDO 0, with data PDO past the header, aligned to CPDA, inside PLEN,
 * and the data within the in-capsule limit), as one expression: the framer reports whichever
 * fails, this only says yes or no. *hdr_end: the bytes before the data (PDO), or PLEN when
 * there is none.
 */
static inline bool plain_capsule(const uint8_t *ch, const struct nvme_tcp_params *p, uint32_t *plen,
				 uint32_t *hdr_end)
{
	const uint32_t len = le32_load(ch + offsetof(struct nvme_tcp_ch, plen)), pdo = ch[offsetof(struct nvme_tcp_ch, pdo)];
	if (ch[0] != NVME_TCP_CAPSULE_CMD || ch[offsetof(struct nvme_tcp_ch, hlen)] != NVME_TCP_CMD_HLEN ||
	    (ch[offsetof(struct nvme_tcp_ch, flags)] & (NVME_TCP_F_HDGSTF | NVME_TCP_F_DDGSTF)))
		return false;
	*plen = len;
	*hdr_end = len == NVME_TCP_CMD_HLEN ? NVME_TCP_CMD_HLEN : pdo;
	if (len == NVME_TCP_CMD_HLEN)
		return pdo == 0;
	return len > NVME_TCP_CMD_HLEN && pdo >= NVME_TCP_CMD_HLEN && pdo < len && pdo % (((uint32_t)p->cpda + 1) * 4) == 0 &&
	       len - pdo <= p->max_icd;
}

/* nvme_tcp_rx_peek_len's body: inline in it (its one caller, conn_rx_may_wait, keeps it inline)
 * and in keep_common_header. */
static inline __attribute__((always_inline)) uint32_t peek_len(struct nvme_tcp_rx *rx, const uint8_t *ch)
{
	const struct nvme_tcp_params *p = rx->params;
	struct nvme_tcp_error err;
	uint32_t plen, hdr_end = 0;
	int hdr = NVME_TCP_CMD_HLEN;

	/* the common PDU (a CapsuleCmd the framer takes, no digests): one expression, its PLEN
	 * within what the checks below allow (PDO and the in-capsule data bounded) */
	if (p->hdgst || p->ddgst || !plain_capsule(ch, p, &plen, &hdr_end)) {
		hdr_end = 0; /* (plain_capsule may have written it) */
		if (ch[0] != NVME_TCP_CAPSULE_CMD && ch[0] != NVME_TCP_H2C_DATA)
			return 0;
		hdr = nvme_tcp_header_size(ch, NVME_TCP_CH_LEN, p, &err);
		if (hdr <= 0)
			return 0;
		uint32_t data_max = p->maxh2cdata > p->max_icd ? p->maxh2cdata : p->max_icd;
		plen = le32_load(ch + offsetof(struct nvme_tcp_ch, plen));
		/* untrusted PLEN against the largest PDU taken, in subtraction form */
		if (plen - (uint32_t)hdr > data_max + NVME_TCP_MAX_HEADER + NVME_TCP_DIGEST_LEN)
			return 0;
	}
	/* the framer goes on from here when the stream is fed (rx->skip) */
	if (ch != rx->hdr) /* (nvme_tcp_rx_whole_head read it there already) */
		memcpy(rx->hdr, ch, NVME_TCP_CH_LEN);
	rx->have = NVME_TCP_CH_LEN;
	rx->need = (size_t)hdr;
	rx->skip = NVME_TCP_CH_LEN;
	rx->kept_end = hdr_end;
	return plen;
}

/* The PDU length from a common header at the front of the stream (see the header). */
uint32_t nvme_tcp_rx_peek_len(struct nvme_tcp_rx *rx, const uint8_t *ch)
{
	return peek_len(rx, ch);
}

/* A common header the one-step path read and leaves to the framer: kept where
 * nvme_tcp_rx_peek_len keeps it, not read again (out of line: not the common case). */
static __attribute__((noinline)) void keep_common_header(struct nvme_tcp_rx *rx, const uint8_t *ch)
{
	(void)peek_len(rx, ch);
}

/* The common header nvme_tcp_rx_keep_unchecked kept, checked now that the framer is to take
 * it: kept as nvme_tcp_rx_peek_len keeps it, or, when it would not keep it, given back to the
 * stream (the framer reads it and decides). Out of line: not the common case. */
static __attribute__((noinline)) void settle_unchecked(struct nvme_tcp_rx *rx)
{
	if (!peek_len(rx, rx->hdr)) {
		rx->have = 0;
		rx->skip = 0;
	}
	rx->kept_end = rx->skip ? rx->kept_end : 0;
}

/* Keep the common header at the front of the stream unchecked (see the header). */
void nvme_tcp_rx_keep_unchecked(struct nvme_tcp_rx *rx, const uint8_t ch[NVME_TCP_CH_LEN])
{
	memcpy(rx->hdr, ch, NVME_TCP_CH_LEN);
	rx->have = NVME_TCP_CH_LEN;
	rx->skip = NVME_TCP_CH_LEN;
	rx->kept_end = NVME_TCP_RX_UNCHECKED;
}

/* The header of a whole CapsuleCmd at the front of a batch (see the header). */
bool nvme_tcp_rx_whole_head(struct nvme_tcp_rx *rx, const struct netdev_frag *f, unsigned n,
			    struct nvme_tcp_rx_whole *w)
{
	const struct nvme_tcp_params *p = rx->params;
	const uint8_t *ch = rx->hdr; /* kept by nvme_tcp_rx_peek_len (rx->skip), or read there */
	uint32_t plen;
	bool plain;

	if (p->hdgst || p->ddgst || !n || f[0].len < NVME_TCP_CMD_HLEN) {
		if (rx->skip && rx->kept_end == NVME_TCP_RX_UNCHECKED)
			settle_unchecked(rx);
		return false;
	}
	if (rx->skip && rx->kept_end != NVME_TCP_RX_UNCHECKED) {
		/* nvme_tcp_rx_peek_len checked it (rx->kept_end): not again */
		plen = le32_load(ch + offsetof(struct nvme_tcp_ch, plen));
		w->hdr_end = rx->kept_end;
		plain = rx->kept_end != 0;
	} else {
		if (!rx->skip) /* (kept unchecked: in rx->hdr already) */
			netdev_frag_read(&f[0], 0, rx->hdr, NVME_TCP_CH_LEN); /* where it lies */
		plain = plain_capsule(ch, p, &plen, &w->hdr_end);
	}
	if (plain && f[0].len >= w->hdr_end) {
		w->data_len = plen == NVME_TCP_CMD_HLEN ? 0 : plen - w->hdr_end;
		return true;
	}
	nvme_tcp_rx_whole_refused(rx);
	return false;
}

/* The one-step path leaves the PDU nvme_tcp_rx_whole_head looked at to the framer (see the header). */
void nvme_tcp_rx_whole_refused(struct nvme_tcp_rx *rx)
{
	if (!rx->skip)
		keep_common_header(rx, rx->hdr); /* the framer keeps what it can: not read twice */
	else if (rx->kept_end == NVME_TCP_RX_UNCHECKED)
		settle_unchecked(rx);
}

/* Where a whole CapsuleCmd nvme_tcp_rx_whole_head took ends in the batch (see the header). */
bool nvme_tcp_rx_whole_ends(struct nvme_tcp_rx *rx, const struct netdev_frag *f, unsigned n,
			    struct nvme_tcp_rx_whole *w)
{
	/* the entries that hold its PLEN bytes (plain_capsule bounded PLEN) */
	uint32_t plen = w->hdr_end + w->data_len, before = 0;
	unsigned k = 0;

	while (k < n && f[k].len < plen - before)
		before += f[k++].len;
	if (k < n) {
		w->nents = k + 1;
		w->last_len = plen - before;
		return true;
	}
	nvme_tcp_rx_whole_refused(rx);
	return false;
}

/* A whole CapsuleCmd at the front of a batch (see the header). */
bool nvme_tcp_rx_whole_capsule(struct nvme_tcp_rx *rx, const struct netdev_frag *f, unsigned n,
			       struct nvme_tcp_rx_whole *w)
{
	return nvme_tcp_rx_whole_head(rx, f, n, w) && nvme_tcp_rx_whole_ends(rx, f, n, w);
}

/* Take the PDU nvme_tcp_rx_whole_capsule found, its data left where it lies (see the header). */
int nvme_tcp_rx_whole_take_at(struct nvme_tcp_rx *rx, struct netdev_frag *f, const struct nvme_tcp_rx_whole *w,
			      uint8_t sqe[64], unsigned *first, unsigned *nout, struct netdev_frag *rest)
{
	int cut = nvme_tcp_rx_whole_cut(f, w, rest);
	if (cut < 0)
		return cut;
	nvme_tcp_rx_whole_head_take(rx, &f[0], w, sqe, cut);
	*first = f[0].len ? 0 : 1;
	*nout = w->data_len ? w->nents - *first : 0;
	return (int)nvme_tcp_rx_whole_used(f, w, cut);
}

/* nvme_tcp_rx_whole_take_at with the data fragments moved to out (see the header). */
int nvme_tcp_rx_whole_take(struct nvme_tcp_rx *rx, struct netdev_frag *f, const struct nvme_tcp_rx_whole *w,
			   uint8_t sqe[64], struct netdev_frag *out, unsigned *nout)
{
	struct netdev_frag rest;
	unsigned first;
	int k = nvme_tcp_rx_whole_take_at(rx, f, w, sqe, &first, nout, &rest);
	if (k < 0)
		return k;
	for (unsigned i = 0; i < *nout; i++)
		out[i] = f[first + i];
	if (rest.len)
		f[k] = rest;
	return k;
}
