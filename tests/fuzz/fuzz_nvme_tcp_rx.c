// sources: drivers/nvme/target/nvmet_tcp_rx.c drivers/nvme/target/nvmet_tcp_pdu.c drivers/nic/netdev.c lib/crc32.c mm/pool.c mm/dma.c lib/log.c lib/clock.c
/*
 * libFuzzer harness: NVMe/TCP receive framing over an arbitrary byte stream cut into
 * fragments of arbitrary sizes. The first byte picks digests/alignment and whether each
 * fragment that starts a PDU has its common header looked at in place first (as the
 * transport does: nvme_tcp_rx_peek_len, the framer keeps it) and whether a fragment inside a
 * PDU's data goes through the run path (nvme_tcp_rx_feed_data_run), the second the fragment size. Invariant: however the stream ends (PDUs, a fatal error, a half PDU
 * reset at teardown), every fragment buffer is released exactly once and every pool is
 * empty; the PDU length the transport reads from a common header in place
 * (nvme_tcp_rx_peek_len) is, for every PDU the framer accepts, 0 or its PLEN; and the same
 * stream fed again with every fragment that starts a PDU cut after its first NVME_TCP_CH_LEN
 * bytes (so the framer never reads a common header and the rest of the header in one pass)
 * gives the same PDUs, the same error with the same quoted header bytes and the same counts.
 * With bit 6 of the first byte, the stream is instead fed as the transport's conn_recv feeds
 * it: in batches of fragments (16, or 3 with bit 7), a whole CapsuleCmd at the front of a batch
 * taken in one step (nvme_tcp_rx_whole_capsule, nvme_tcp_rx_whole_take), a run of data fragments
 * in one loop, the rest fragment by fragment; checked against the framer alone on the same
 * fragments: the same PDUs (header bytes and data bytes), the same state, error and counts.
 */
#include <assert.h>
#include <stdint.h>
#include <string.h>
#include "drivers/nvme/target/nvmet_tcp_rx.h"
#include "mm/pool.h"

#define MAX_CHUNKS 4096
static unsigned released[MAX_CHUNKS];

static void owner_release(struct netdev_frag_owner *o, uint64_t token)
{
	(void)o;
	assert(token < MAX_CHUNKS);
	released[token]++;
}
static struct netdev_frag_owner owner = { "fuzz", owner_release };

/* What a feed of the stream produced, for the cross-check. */
struct outcome {
	uint64_t pdus, sum; /* the PDUs delivered, and a running hash of their headers */
	uint64_t data;      /* a running hash of their data bytes */
};
static struct outcome *outcome;

/* A PDU with header h (its bytes raw) and data in the n fragments f. */
static void note(const struct nvme_tcp_pdu *h, const uint8_t *raw, const struct netdev_frag *f, unsigned n,
		 bool ddgst_ok)
{
	uint64_t v[] = { h->type, h->plen, h->data_len, h->data_off, h->hdr_bytes, n, ddgst_ok };
	outcome->pdus++;
	for (unsigned i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		outcome->sum = outcome->sum * 1000003u + v[i];
	for (unsigned i = 0; i < h->hdr_bytes && i < NVME_TCP_MAX_HEADER; i++)
		outcome->sum = outcome->sum * 31u + raw[i];
	for (unsigned i = 0; i < n; i++)
		for (uint32_t k = 0; k < f[i].len; k++)
			outcome->data = outcome->data * 131u + ((const uint8_t *)(uintptr_t)f[i].addr.bus)[k];
}

static void note_pdu(const struct nvme_tcp_rx_pdu *pdu)
{
	note(&pdu->hdr, pdu->raw, pdu->frags, pdu->nfrags, pdu->ddgst_ok);
}

static int consume(void *ctx, struct nvme_tcp_rx_pdu *pdu)
{
	note_pdu(pdu);
	/* a look at this PDU's common header, on a framer of its own (a look keeps it) */
	static struct nvme_tcp_rx probe;
	nvme_tcp_rx_init(&probe, ((const struct nvme_tcp_rx *)ctx)->params);
	uint32_t peek = nvme_tcp_rx_peek_len(&probe, pdu->raw);
	assert(peek == 0 || peek == pdu->hdr.plen);
	uint32_t total = 0;
	for (unsigned i = 0; i < pdu->nfrags; i++) {
		total += pdu->frags[i].len;
		netdev_frag_release(&pdu->frags[i]);
	}
	assert(total == pdu->hdr.data_len || pdu->hdr.type == NVME_TCP_H2C_TERM_REQ ||
	       pdu->hdr.type == NVME_TCP_C2H_TERM_REQ);
	return 0;
}

/* Feed data[2..size) in fragments of chunk bytes to rx (see the header); with cut_ch, a
 * fragment that starts a PDU gives its first NVME_TCP_CH_LEN bytes as a fragment of their
 * own. Tokens from *next on; returns the fragments made. */
static unsigned feed_stream(struct nvme_tcp_rx *rx, const uint8_t *data, size_t size, size_t chunk, bool prime,
			    bool runs, bool cut_ch, unsigned next)
{
	unsigned n = next;
	for (size_t off = 2; off < size && n < MAX_CHUNKS; off += chunk) {
		struct netdev_frag f = { 0 };
		if (prime && nvme_tcp_rx_at_pdu_start(rx) && size - off >= NVME_TCP_CH_LEN)
			(void)nvme_tcp_rx_peek_len(rx, data + off);
		uint32_t len = (uint32_t)(size - off < chunk ? size - off : chunk);
		if (cut_ch && nvme_tcp_rx_at_pdu_start(rx) && !rx->skip && len > NVME_TCP_CH_LEN && n + 1 < MAX_CHUNKS) {
			struct netdev_frag ch = { .addr = dma_addr_host(data + off), .len = NVME_TCP_CH_LEN,
						  .token = n++, .owner = &owner };
			(void)nvme_tcp_rx_feed(rx, &ch, consume, rx);
			f.addr = dma_addr_host(data + off + NVME_TCP_CH_LEN);
			f.len = len - NVME_TCP_CH_LEN;
		} else {
			f.addr = dma_addr_host(data + off);
			f.len = len;
		}
		f.token = n++;
		f.owner = &owner;
		if (runs && nvme_tcp_rx_feed_data_run(rx, &f, 1) == 1)
			continue; /* the PDU holds it now */
		(void)nvme_tcp_rx_feed(rx, &f, consume, rx);
	}
	return n;
}

/* Two feeds of the same stream gave the same answer: PDUs, state, the error and the header bytes
 * it quotes, the counts; all: also the PDUs' data bytes, where the framer stands and every count. */
static void assert_same(const struct nvme_tcp_rx *rx, const struct nvme_tcp_rx *ref, const struct outcome *got,
			const struct outcome *want, bool all)
{
	assert(got->pdus == want->pdus && got->sum == want->sum);
	assert(rx->state == ref->state && rx->have == ref->have && rx->need == ref->need);
	assert(memcmp(rx->hdr, ref->hdr, rx->have) == 0);
	if (rx->state == NVME_TCP_RX_FAILED)
		assert(rx->err.fes == ref->err.fes && rx->err.fei == ref->err.fei && rx->err.what == ref->err.what);
	assert(rx->st.header_bytes == ref->st.header_bytes && rx->st.data_bytes == ref->st.data_bytes &&
	       rx->st.pdus == ref->st.pdus);
	if (all)
		assert(got->data == want->data && rx->skip == ref->skip && rx->st.pad_bytes == ref->st.pad_bytes &&
		       rx->st.splits == ref->st.splits && rx->st.digest_bytes == ref->st.digest_bytes &&
		       rx->st.ddgst_errors == ref->st.ddgst_errors);
}

/* The end of two feeds (the reference only when it ran: m > n tokens): what they hold is
 * released, every buffer came back once, every pool is empty. */
static void end_feeds(struct nvme_tcp_rx *rx, struct nvme_tcp_rx *ref, unsigned n, unsigned m)
{
	nvme_tcp_rx_reset(rx);
	if (m > n)
		nvme_tcp_rx_reset(ref);
	for (unsigned k = 0; k < m; k++)
		assert(released[k] == 1);
	assert(mm_pool_total_in_use() == 0);
}

/* A whole CapsuleCmd at the front of f[0..n), if the one-step path takes it: taken, noted as the
 * framer would deliver it, its data released. Returns whether it took one; *used as
 * nvme_tcp_rx_whole_take returns. */
static bool take_whole(struct nvme_tcp_rx *rx, struct netdev_frag *f, unsigned n, unsigned *used)
{
	struct nvme_tcp_rx_whole w;
	struct netdev_frag out[16];
	uint8_t raw[NVME_TCP_CMD_HLEN];
	unsigned nd;

	if (!nvme_tcp_rx_at_whole_start(rx) || !nvme_tcp_rx_whole_capsule(rx, f, n, &w))
		return false;
	assert(w.nents <= n && w.last_len > 0 && w.last_len <= f[w.nents - 1].len);
	memcpy(raw, (const void *)(uintptr_t)f[0].addr.bus, NVME_TCP_CH_LEN); /* (the test reads it freely) */
	int k = nvme_tcp_rx_whole_take(rx, f, &w, raw + NVME_TCP_CH_LEN, out, &nd);
	if (k < 0)
		return false; /* no split reference: the framer takes it */
	struct nvme_tcp_pdu h = { .type = NVME_TCP_CAPSULE_CMD, .flags = raw[1], .hlen = raw[2], .pdo = raw[3],
				  .hdr_bytes = NVME_TCP_CMD_HLEN, .data_len = w.data_len };
	memcpy(&h.plen, raw + 4, 4);
	h.data_off = w.data_len ? h.pdo : 0;
	uint32_t total = 0;
	for (unsigned i = 0; i < nd; i++)
		total += out[i].len;
	assert(total == w.data_len && (nd == 0) == (w.data_len == 0));
	note(&h, raw, out, nd, true);
	for (unsigned i = 0; i < nd; i++)
		netdev_frag_release(&out[i]);
	*used = (unsigned)k;
	return true;
}

/* Feed data[2..size) in fragments of chunk bytes, batch of them at a time, as conn_recv feeds a
 * socket's batches (see the header). Tokens from next on; returns the fragments made. */
static unsigned feed_batches(struct nvme_tcp_rx *rx, const uint8_t *data, size_t size, size_t chunk, unsigned batch,
			     bool prime, unsigned next)
{
	unsigned t = next;
	size_t off = 2;
	while (off < size && t < MAX_CHUNKS) {
		struct netdev_frag f[16];
		unsigned n = 0, i = 0, used;
		for (; n < batch && off < size && t < MAX_CHUNKS; off += chunk, n++) {
			uint32_t len = (uint32_t)(size - off < chunk ? size - off : chunk);
			f[n] = (struct netdev_frag){ .addr = dma_addr_host(data + off), .len = len, .token = t++,
						     .owner = &owner };
		}
		while (i < n) {
			/* the look the transport takes at a PDU's common header, where feed_stream takes it
			 * (before a fragment as cut, not before the rest of one split at a PDU's end) */
			const uint8_t *at = (const uint8_t *)(uintptr_t)f[i].addr.bus;
			if (prime && (size_t)(at - (data + 2)) % chunk == 0 && nvme_tcp_rx_at_pdu_start(rx) &&
			    (size_t)(data + size - at) >= NVME_TCP_CH_LEN)
				(void)nvme_tcp_rx_peek_len(rx, at);
			if (rx->state == NVME_TCP_RX_DATA) {
				if (n - i > 3 && !rx->cur.hdr.has_ddgst && (i += nvme_tcp_rx_feed_data_run(rx, &f[i], n - i)) == n)
					break;
			} else if (take_whole(rx, &f[i], n - i, &used)) {
				i += used;
				continue;
			}
			(void)nvme_tcp_rx_feed(rx, &f[i++], consume, rx);
		}
	}
	return t;
}

/* The stream as conn_recv feeds it (feed_batches) against the framer alone (feed_stream) on
 * the same fragments: the same outcome (see the header). */
static void cross_check_batches(const uint8_t *data, size_t size, const struct nvme_tcp_params *p, size_t chunk,
				bool prime)
{
	static struct nvme_tcp_rx rx, ref;
	struct outcome got = { 0 }, want = { 0 };
	unsigned batch = data[0] & 128 ? 3 : 16;
	nvme_tcp_rx_init(&rx, p);
	outcome = &got;
	unsigned n = feed_batches(&rx, data, size, chunk, batch, prime, 0);
	bool whole = n < MAX_CHUNKS / 2;
	unsigned m = n;
	if (whole) {
		nvme_tcp_rx_init(&ref, p);
		outcome = &want;
		m = feed_stream(&ref, data, size, chunk, prime, false, false, n);
		whole = m < MAX_CHUNKS && m - n == n;
	}
	if (whole)
		assert_same(&rx, &ref, &got, &want, true);
	end_feeds(&rx, &ref, n, m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool ready;
	if (!ready) {
		assert(netbuf_pool_init(8) == 0);
		ready = true;
	}
	if (size < 2)
		return 0;
	struct nvme_tcp_params p = { .hdgst = data[0] & 1, .ddgst = data[0] & 2, .cpda = (data[0] >> 2) & 3,
				     .maxh2cdata = 65536, .max_icd = 8192 };
	size_t chunk = (size_t)data[1] + 1;
	static struct nvme_tcp_rx rx, ref;
	struct outcome got = { 0 }, want = { 0 };
	memset(released, 0, sizeof(released));
	bool prime = data[0] & 16;
	bool runs = data[0] & 32; /* a fragment inside a PDU's data may go through the run path
				   * (nvme_tcp_rx_feed_data_run, as conn_recv takes a batch) */
	if (data[0] & 64) {
		cross_check_batches(data, size, &p, chunk, prime);
		return 0;
	}
	nvme_tcp_rx_init(&rx, &p);
	outcome = &got;
	unsigned n = feed_stream(&rx, data, size, chunk, prime, runs, false, 0);
	bool whole = n < MAX_CHUNKS / 2; /* the reference feed has room for its tokens */
	unsigned m = n;
	if (whole) {
		nvme_tcp_rx_init(&ref, &p);
		outcome = &want;
		m = feed_stream(&ref, data, size, chunk, prime, runs, true, n);
		whole = m < MAX_CHUNKS;
	}
	if (whole)
		assert_same(&rx, &ref, &got, &want, false);
	end_feeds(&rx, &ref, n, m);
	return 0;
}
