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
};
static struct outcome *outcome;

static void note_pdu(const struct nvme_tcp_rx_pdu *pdu)
{
	const struct nvme_tcp_pdu *h = &pdu->hdr;
	uint64_t v[] = { h->type, h->plen, h->data_len, h->data_off, h->hdr_bytes, pdu->nfrags, pdu->ddgst_ok };
	outcome->pdus++;
	for (unsigned i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		outcome->sum = outcome->sum * 1000003u + v[i];
	for (unsigned i = 0; i < h->hdr_bytes && i < NVME_TCP_MAX_HEADER; i++)
		outcome->sum = outcome->sum * 31u + pdu->raw[i];
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
	if (whole) {
		/* the same answer either way: PDUs, the error and the header bytes it quotes */
		assert(got.pdus == want.pdus && got.sum == want.sum);
		assert(rx.state == ref.state && rx.have == ref.have && rx.need == ref.need);
		assert(memcmp(rx.hdr, ref.hdr, rx.have) == 0);
		if (rx.state == NVME_TCP_RX_FAILED)
			assert(rx.err.fes == ref.err.fes && rx.err.fei == ref.err.fei && rx.err.what == ref.err.what);
		assert(rx.st.header_bytes == ref.st.header_bytes && rx.st.data_bytes == ref.st.data_bytes &&
		       rx.st.pdus == ref.st.pdus);
	}
	nvme_tcp_rx_reset(&rx);
	if (m > n)
		nvme_tcp_rx_reset(&ref);
	for (unsigned k = 0; k < m; k++)
		assert(released[k] == 1);
	assert(mm_pool_total_in_use() == 0);
	return 0;
}
