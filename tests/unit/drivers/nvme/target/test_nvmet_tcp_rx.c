// sources: drivers/nvme/target/nvmet_tcp_rx.c drivers/nvme/target/nvmet_tcp_pdu.c drivers/nic/netdev.c lib/crc32.c mm/pool.c mm/dma.c lib/log.c
/*
 * NVMe/TCP receive framing: a stream of PDUs cut into fragments at every size from 1 byte
 * to whole comes out as the same PDUs, with the data handed on as fragments whose bytes
 * are exactly the data, every buffer released exactly once, digests checked, and hostile
 * streams ending in the right termination status.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "drivers/nvme/target/nvmet_tcp_rx.h"
#include "lib/byteorder.h"
#include "lib/crc32.h"
#include "tests/unit/unit_support.h"

#define STREAM_MAX 20000
#define MAX_CHUNKS 20000

static uint8_t stream[STREAM_MAX];
static size_t stream_len;
static unsigned released[MAX_CHUNKS];

static void owner_release(struct netdev_frag_owner *o, uint64_t token)
{
	(void)o;
	cr_assert_lt(token, MAX_CHUNKS);
	released[token]++;
}
static struct netdev_frag_owner owner = { "test", owner_release };

/* What the consumer saw. */
static unsigned npdus;
static uint8_t types[64];
static uint8_t data[64][8192];
static size_t data_len[64];
static bool ddgst_ok[64];

static int consume(void *ctx, struct nvme_tcp_rx_pdu *pdu)
{
	(void)ctx;
	cr_assert_lt(npdus, 64);
	types[npdus] = pdu->hdr.type;
	ddgst_ok[npdus] = pdu->ddgst_ok;
	size_t off = 0;
	for (unsigned i = 0; i < pdu->nfrags; i++) {
		cr_assert_leq(off + pdu->frags[i].len, sizeof(data[0]));
		cr_assert_eq(netdev_frag_read(&pdu->frags[i], 0, data[npdus] + off, pdu->frags[i].len), 0);
		off += pdu->frags[i].len;
		netdev_frag_release(&pdu->frags[i]); /* the consumer owns them */
	}
	data_len[npdus++] = off;
	return 0;
}

static void put(const void *p, size_t n)
{
	cr_assert_leq(stream_len + n, sizeof(stream));
	memcpy(stream + stream_len, p, n);
	stream_len += n;
}

static void put32(uint32_t v)
{
	uint8_t b[4];
	le32_store(b, v);
	put(b, 4);
}

static uint8_t payload_a[4096], payload_b[3000];
static size_t len_a, len_b;

/* CapsuleCmd with a bytes of in-capsule data, then H2CData of b bytes (LAST_PDU), with
 * header and data digests and PDO aligned to 8 bytes (cpda 1). */
static void build_stream(struct nvme_tcp_params *p, size_t a, size_t b)
{
	len_a = a;
	len_b = b;
	stream_len = 0;
	for (size_t i = 0; i < sizeof(payload_a); i++)
		payload_a[i] = (uint8_t)(i * 13 + 1);
	for (size_t i = 0; i < sizeof(payload_b); i++)
		payload_b[i] = (uint8_t)(i * 7 + 5);
	uint8_t h[80] = { 0 };
	/* CapsuleCmd: HLEN 72, HDGST -> 76, PDO 80 (8-aligned), data 4096, DDGST */
	h[0] = NVME_TCP_CAPSULE_CMD;
	h[1] = NVME_TCP_F_HDGSTF | NVME_TCP_F_DDGSTF;
	h[2] = 72;
	h[3] = 80;
	uint32_t plen = (uint32_t)(80 + a + 4);
	memcpy(h + 4, &plen, 4);
	h[8] = 0x01; /* write */
	put(h, 72);
	put32(crc32c(0, h, 72));
	uint8_t pad[4] = { 0 };
	put(pad, 4);
	put(payload_a, a);
	put32(crc32c(0, payload_a, a));
	/* H2CData: HLEN 24, HDGST -> 28, PDO 32 */
	uint8_t d[24] = { 0 };
	d[0] = NVME_TCP_H2C_DATA;
	d[1] = NVME_TCP_F_HDGSTF | NVME_TCP_F_DDGSTF | NVME_TCP_F_LAST_PDU;
	d[2] = 24;
	d[3] = 32;
	plen = (uint32_t)(32 + b + 4);
	memcpy(d + 4, &plen, 4);
	uint32_t datal = (uint32_t)b;
	memcpy(d + 16, &datal, 4);
	put(d, 24);
	put32(crc32c(0, d, 24));
	put(pad, 4);
	put(payload_b, b);
	put32(crc32c(0, payload_b, b));
	*p = (struct nvme_tcp_params){ .hdgst = true, .ddgst = true, .cpda = 1, .maxh2cdata = 32768, .max_icd = 8192 };
}

/* Before every chunk that starts a PDU, look at its common header in place as the
 * transport does (nvme_tcp_rx_peek_len: the framer keeps it). */
static bool prime;

/* Feed the stream in chunks of `chunk` bytes; returns the feed's first error (0 if none)
 * and the number of chunks. */
static int feed(struct nvme_tcp_rx *rx, size_t chunk, unsigned *nchunks)
{
	int first = 0;
	unsigned n = 0;
	for (size_t off = 0; off < stream_len; off += chunk, n++) {
		if (prime && nvme_tcp_rx_at_pdu_start(rx) && stream_len - off >= NVME_TCP_CH_LEN)
			(void)nvme_tcp_rx_peek_len(rx, stream + off);
		struct netdev_frag f = { 0 };
		size_t len = stream_len - off < chunk ? stream_len - off : chunk;
		f.addr = dma_addr_host(stream + off);
		f.offset = off;
		f.len = (uint32_t)len;
		f.token = n;
		f.owner = &owner;
		int rc = nvme_tcp_rx_feed(rx, &f, consume, NULL);
		if (rc && !first)
			first = rc;
	}
	*nchunks = n;
	return first;
}

static void setup(void)
{
	unit_pools_begin();
	cr_assert_eq(netbuf_pool_init(8), 0);
	prime = false;
	npdus = 0;
	memset(released, 0, sizeof(released));
}

static void teardown(void)
{
	cr_assert_eq(netbuf_pool_destroy(), 0);
	unit_pools_end();
}

TestSuite(tcp_rx, .init = setup, .fini = teardown);

static void check_sizes(const size_t *chunks, size_t nc, size_t a, size_t b)
{
	struct nvme_tcp_params p;
	build_stream(&p, a, b);
	for (size_t c = 0; c < nc; c++) {
		struct nvme_tcp_rx rx;
		unsigned n;
		npdus = 0;
		memset(released, 0, sizeof(released));
		nvme_tcp_rx_init(&rx, &p);
		cr_assert_eq(feed(&rx, chunks[c], &n), 0, "chunk %zu: %s", chunks[c], rx.err.what ? rx.err.what : "");
		cr_assert_eq(npdus, 2, "chunk %zu", chunks[c]);
		cr_assert_eq(types[0], NVME_TCP_CAPSULE_CMD);
		cr_assert_eq(types[1], NVME_TCP_H2C_DATA);
		cr_assert_eq(data_len[0], a);
		cr_assert_eq(data_len[1], b);
		cr_assert_arr_eq(data[0], payload_a, a, "chunk %zu", chunks[c]);
		cr_assert_arr_eq(data[1], payload_b, b, "chunk %zu", chunks[c]);
		cr_assert(ddgst_ok[0] && ddgst_ok[1]);
		for (unsigned k = 0; k < n; k++)
			cr_assert_eq(released[k], 1, "chunk %zu: buffer %u released %u times", chunks[c], k, released[k]);
		cr_assert_eq(rx.st.data_bytes, a + b);
		cr_assert_eq(rx.st.header_bytes, 76 + 28);
		cr_assert_eq(rx.st.pad_bytes, 8);
		cr_assert_eq(rx.st.digest_bytes, 8);
		cr_assert_eq(rx.state, NVME_TCP_RX_HEADER);
	}
}

Test(tcp_rx, headers_split_across_tiny_fragments)
{
	static const size_t chunks[] = { 1, 2, 3, 5, 7, 8, 13 };
	check_sizes(chunks, sizeof(chunks) / sizeof(chunks[0]), 100, 60);
}

Test(tcp_rx, segment_sized_fragments_hand_on_data_without_copying)
{
	static const size_t chunks[] = { 64, 100, 1447, 1448, 4096, 9000, STREAM_MAX };
	check_sizes(chunks, sizeof(chunks) / sizeof(chunks[0]), sizeof(payload_a), sizeof(payload_b));
}

/* A common header the transport looked at in place (and the framer kept) is passed over,
 * not read again: the same PDUs, bytes and counts at every fragment size. */
Test(tcp_rx, a_common_header_kept_from_a_peek_is_passed_over)
{
	static const size_t tiny[] = { 1, 3, 8, 13 }, large[] = { 100, 1448, STREAM_MAX };
	prime = true;
	check_sizes(tiny, sizeof(tiny) / sizeof(tiny[0]), 100, 60);
	check_sizes(large, sizeof(large) / sizeof(large[0]), sizeof(payload_a), sizeof(payload_b));
}

/* Without digests (cpda 0): CapsuleCmd of a bytes in-capsule, then H2CData of b bytes. */
static uint8_t payload_c[4400];

static void build_plain_stream(struct nvme_tcp_params *p, size_t a, size_t b)
{
	stream_len = 0;
	for (size_t i = 0; i < sizeof(payload_c); i++)
		payload_c[i] = (uint8_t)(i * 11 + 3);
	for (size_t i = 0; i < sizeof(payload_b); i++)
		payload_b[i] = (uint8_t)(i * 5 + 9);
	uint8_t h[72] = { 0 };
	h[0] = NVME_TCP_CAPSULE_CMD;
	h[2] = 72;
	h[3] = 72;
	le32_store(h + 4, (uint32_t)(72 + a));
	h[8] = 0x01;
	put(h, 72);
	put(payload_c, a);
	uint8_t d[24] = { 0 };
	d[0] = NVME_TCP_H2C_DATA;
	d[1] = NVME_TCP_F_LAST_PDU;
	d[2] = 24;
	d[3] = 24;
	le32_store(d + 4, (uint32_t)(24 + b));
	le32_store(d + 16, (uint32_t)b);
	put(d, 24);
	put(payload_b, b);
	*p = (struct nvme_tcp_params){ .cpda = 0, .maxh2cdata = 32768, .max_icd = 8192 };
}

static int fail_first(void *ctx, struct nvme_tcp_rx_pdu *pdu)
{
	consume(ctx, pdu);
	return -ECONNRESET;
}

/* A PDU without a data digest whose last data fragment comes on its own (segment-sized
 * fragments ending where the PDU ends: the inline path delivers it) comes out whole, each
 * buffer released once; the consumer's error comes back from that delivery too. */
Test(tcp_rx, last_data_fragment_delivers_inline)
{
	static const size_t chunks[] = { 100, 1448, 4096, STREAM_MAX };
	struct nvme_tcp_params p;
	/* 72 + 4272 = 3 x 1448: the capsule's third segment ends with it */
	size_t a = 4272, b = 2000;
	build_plain_stream(&p, a, b);
	for (size_t c = 0; c < sizeof(chunks) / sizeof(chunks[0]); c++) {
		struct nvme_tcp_rx rx;
		unsigned n;
		npdus = 0;
		memset(released, 0, sizeof(released));
		nvme_tcp_rx_init(&rx, &p);
		cr_assert_eq(feed(&rx, chunks[c], &n), 0, "chunk %zu: %s", chunks[c], rx.err.what ? rx.err.what : "");
		cr_assert_eq(npdus, 2, "chunk %zu", chunks[c]);
		cr_assert_eq(data_len[0], a);
		cr_assert_eq(data_len[1], b);
		cr_assert_arr_eq(data[0], payload_c, a, "chunk %zu", chunks[c]);
		cr_assert_arr_eq(data[1], payload_b, b, "chunk %zu", chunks[c]);
		for (unsigned k = 0; k < n; k++)
			cr_assert_eq(released[k], 1, "chunk %zu: buffer %u released %u times", chunks[c], k, released[k]);
		cr_assert_eq(rx.st.data_bytes, a + b);
		cr_assert_eq(rx.state, NVME_TCP_RX_HEADER);
	}
	/* the consumer refuses the capsule: its error is the feed's, from the last fragment */
	struct nvme_tcp_rx rx;
	nvme_tcp_rx_init(&rx, &p);
	npdus = 0;
	struct netdev_frag f[3];
	int rc = 0;
	for (unsigned i = 0; i < 3; i++) {
		f[i] = (struct netdev_frag){ .addr = dma_addr_host(stream + 1448 * i), .offset = 1448 * i, .len = 1448,
					     .token = i, .owner = &owner };
		rc = nvme_tcp_rx_feed(&rx, &f[i], fail_first, NULL);
		if (i < 2)
			cr_assert_eq(rc, 0);
	}
	cr_assert_eq(rc, -ECONNRESET);
	cr_assert_eq(npdus, 1);
	nvme_tcp_rx_reset(&rx);
}

Test(tcp_rx, data_digest_mismatch_is_reported_not_fatal)
{
	struct nvme_tcp_params p;
	struct nvme_tcp_rx rx;
	unsigned n;
	build_stream(&p, sizeof(payload_a), sizeof(payload_b));
	stream[80 + 100] ^= 0x40; /* one bit of the capsule's data */
	nvme_tcp_rx_init(&rx, &p);
	cr_assert_eq(feed(&rx, 1448, &n), 0);
	cr_assert_eq(npdus, 2);
	cr_assert_not(ddgst_ok[0]);
	cr_assert(ddgst_ok[1]);
	cr_assert_eq(rx.st.ddgst_errors, 1);
}

Test(tcp_rx, bad_header_fails_with_its_fes_and_releases_everything)
{
	struct nvme_tcp_params p;
	struct nvme_tcp_rx rx;
	unsigned n;
	build_stream(&p, sizeof(payload_a), sizeof(payload_b));
	stream[72] ^= 1; /* the capsule's header digest */
	nvme_tcp_rx_init(&rx, &p);
	cr_assert_eq(feed(&rx, 100, &n), -EPROTO);
	cr_assert_eq(rx.state, NVME_TCP_RX_FAILED);
	cr_assert_eq(rx.err.fes, NVME_TCP_FES_HEADER_DIGEST_ERROR);
	cr_assert_eq(npdus, 0);
	for (unsigned k = 0; k < n; k++)
		cr_assert_eq(released[k], 1, "buffer %u released %u times", k, released[k]);
}

Test(tcp_rx, too_many_fragments_for_one_pdu)
{
	struct nvme_tcp_params p;
	struct nvme_tcp_rx rx;
	unsigned n;
	build_stream(&p, sizeof(payload_a), sizeof(payload_b));
	nvme_tcp_rx_init(&rx, &p);
	/* 1-byte fragments: 4096 B of in-capsule data would need 4096 table entries */
	cr_assert_eq(feed(&rx, 1, &n), -E2BIG);
	cr_assert_eq(rx.state, NVME_TCP_RX_FAILED);
	cr_assert_eq(rx.err.fes, NVME_TCP_FES_DATA_LIMIT_EXCEEDED);
	cr_assert_eq(npdus, 0);
	for (unsigned k = 0; k < n; k++)
		cr_assert_eq(released[k], 1, "buffer %u released %u times", k, released[k]);
}

Test(tcp_rx, reset_releases_a_half_received_pdu)
{
	struct nvme_tcp_params p;
	struct nvme_tcp_rx rx;
	unsigned n;
	build_stream(&p, sizeof(payload_a), sizeof(payload_b));
	stream_len = 80 + 2000; /* the capsule's header and half its data */
	nvme_tcp_rx_init(&rx, &p);
	cr_assert_eq(feed(&rx, 500, &n), 0);
	cr_assert_eq(npdus, 0);
	cr_assert_eq(rx.state, NVME_TCP_RX_DATA);
	nvme_tcp_rx_reset(&rx);
	for (unsigned k = 0; k < n; k++)
		cr_assert_eq(released[k], 1, "buffer %u released %u times", k, released[k]);
}

Test(tcp_rx, peek_len_trusts_only_a_data_pdu_header_the_framer_would_take)
{
	struct nvme_tcp_params p;
	struct nvme_tcp_rx rx;
	uint8_t ch[NVME_TCP_CH_LEN];

	build_stream(&p, 4096, 3000);
	nvme_tcp_rx_init(&rx, &p);
	cr_assert(nvme_tcp_rx_at_pdu_start(&rx));
	/* a length: the framer keeps the common header (no longer at a PDU's start) */
	memcpy(ch, stream, sizeof(ch));
	cr_assert_eq(nvme_tcp_rx_peek_len(&rx, ch), 80 + 4096 + 4);
	cr_assert(!nvme_tcp_rx_at_pdu_start(&rx));
	cr_assert_eq(rx.skip, NVME_TCP_CH_LEN);
	nvme_tcp_rx_reset(&rx);
	cr_assert(nvme_tcp_rx_at_pdu_start(&rx));
	cr_assert_eq(rx.skip, 0);
	/* the CapsuleCmd and the H2CData of the stream: their PLEN */
	memcpy(ch, stream + 80 + 4096 + 4, sizeof(ch));
	cr_assert_eq(nvme_tcp_rx_peek_len(&rx, ch), 32 + 3000 + 4);
	nvme_tcp_rx_reset(&rx);
	/* a header the framer refuses, a PDU without data, a PLEN beyond what it takes: 0 */
	memcpy(ch, stream, sizeof(ch));
	ch[2] = 24; /* HLEN wrong for a CapsuleCmd */
	cr_assert_eq(nvme_tcp_rx_peek_len(&rx, ch), 0);
	memcpy(ch, stream, sizeof(ch));
	ch[1] &= (uint8_t)~NVME_TCP_F_HDGSTF; /* header digest negotiated but not flagged */
	cr_assert_eq(nvme_tcp_rx_peek_len(&rx, ch), 0);
	memcpy(ch, stream, sizeof(ch));
	ch[0] = NVME_TCP_ICREQ;
	cr_assert_eq(nvme_tcp_rx_peek_len(&rx, ch), 0);
	memcpy(ch, stream, sizeof(ch));
	le32_store(ch + 4, 76 + 32768 + NVME_TCP_MAX_HEADER + 4 + 1); /* past MAXH2CDATA and any pad */
	cr_assert_eq(nvme_tcp_rx_peek_len(&rx, ch), 0);
	le32_store(ch + 4, 0xffffffffu);
	cr_assert_eq(nvme_tcp_rx_peek_len(&rx, ch), 0);
	le32_store(ch + 4, 70); /* shorter than the header */
	cr_assert_eq(nvme_tcp_rx_peek_len(&rx, ch), 0);
	/* none of those kept anything */
	cr_assert_eq(rx.skip, 0);
	cr_assert(nvme_tcp_rx_at_pdu_start(&rx));
}

/* Feed the stream in chunks of `chunk` bytes, `batch` fragments at a time as the transport
 * takes them from its socket (conn_recv): the batch's leading run inside a PDU's data
 * through nvme_tcp_rx_feed_data_run, the rest one by one. Returns the first error. */
static int feed_batched(struct nvme_tcp_rx *rx, size_t chunk, unsigned batch, unsigned *nchunks, unsigned *run)
{
	struct netdev_frag f[64];
	int first = 0;
	unsigned n = 0;
	*run = 0;
	cr_assert_leq(batch, 64);
	for (size_t off = 0; off < stream_len;) {
		unsigned k = 0;
		for (; k < batch && off < stream_len; k++, n++) {
			size_t len = stream_len - off < chunk ? stream_len - off : chunk;
			f[k] = (struct netdev_frag){ .addr = dma_addr_host(stream + off), .offset = off, .len = (uint32_t)len,
						     .token = n, .owner = &owner };
			off += len;
		}
		unsigned i = nvme_tcp_rx_feed_data_run(rx, f, k);
		*run += i;
		for (; i < k; i++) {
			int rc = nvme_tcp_rx_feed(rx, &f[i], consume, NULL);
			if (rc && !first)
				first = rc;
		}
	}
	*nchunks = n;
	return first;
}

/* A run of fragments inside a PDU's data taken in one loop gives the same PDUs, bytes,
 * counts and releases as one by one; it never takes the fragment that ends a PDU (the
 * feed delivers it), nothing with a data digest, nothing past the fragment limit. */
Test(tcp_rx, a_run_of_data_fragments_is_taken_at_once)
{
	static const size_t chunks[] = { 100, 1448 };
	static const unsigned batches[] = { 16, 2 };
	struct nvme_tcp_params p;
	size_t a = 4272, b = 3000;
	build_plain_stream(&p, a, b);
	for (size_t c = 0; c < sizeof(chunks) / sizeof(chunks[0]); c++) {
		struct nvme_tcp_rx rx;
		unsigned n, run;
		npdus = 0;
		memset(released, 0, sizeof(released));
		nvme_tcp_rx_init(&rx, &p);
		cr_assert_eq(feed_batched(&rx, chunks[c], batches[c], &n, &run), 0);
		cr_assert_gt(run, 0, "chunk %zu: no run taken", chunks[c]);
		cr_assert_eq(npdus, 2);
		cr_assert_eq(data_len[0], a);
		cr_assert_eq(data_len[1], b);
		cr_assert_arr_eq(data[0], payload_c, a);
		cr_assert_arr_eq(data[1], payload_b, b);
		for (unsigned k = 0; k < n; k++)
			cr_assert_eq(released[k], 1, "chunk %zu: buffer %u released %u times", chunks[c], k, released[k]);
		cr_assert_eq(rx.st.data_bytes, a + b);
		cr_assert_eq(rx.state, NVME_TCP_RX_HEADER);
	}
	/* with data digests: never a run (the digest needs each fragment's bytes) */
	build_stream(&p, sizeof(payload_a), sizeof(payload_b));
	struct nvme_tcp_rx rx;
	unsigned n, run;
	npdus = 0;
	memset(released, 0, sizeof(released));
	nvme_tcp_rx_init(&rx, &p);
	cr_assert_eq(feed_batched(&rx, 100, 16, &n, &run), 0);
	cr_assert_eq(run, 0);
	cr_assert_eq(npdus, 2);
	cr_assert(ddgst_ok[0] && ddgst_ok[1]);
	for (unsigned k = 0; k < n; k++)
		cr_assert_eq(released[k], 1);
	/* a PDU data in 1-byte fragments: the run stops at the fragment limit, the feed then
	 * fails the PDU with Data Transfer Limit Exceeded */
	build_plain_stream(&p, 300, 10);
	npdus = 0;
	memset(released, 0, sizeof(released));
	nvme_tcp_rx_init(&rx, &p);
	cr_assert_eq(feed_batched(&rx, 1, 64, &n, &run), -E2BIG);
	cr_assert_eq(rx.err.fes, NVME_TCP_FES_DATA_LIMIT_EXCEEDED);
	cr_assert(run > 0 && run < NVME_TCP_RX_MAX_FRAGS);
	cr_assert_eq(npdus, 0);
	nvme_tcp_rx_reset(&rx);
	for (unsigned k = 0; k < n; k++)
		cr_assert_eq(released[k], 1, "buffer %u released %u times", k, released[k]);
}

/* A CapsuleCmd without digests: CH (PDO pdo when there is data), the SQE (its first byte
 * opc), len bytes of data (payload_a) after the pad. */
static void put_capsule(uint8_t opc, uint8_t pdo, size_t len)
{
	uint8_t h[NVME_TCP_CMD_HLEN] = { NVME_TCP_CAPSULE_CMD, 0, NVME_TCP_CMD_HLEN, len ? pdo : 0 };
	le32_store(h + 4, (uint32_t)(len ? pdo + len : NVME_TCP_CMD_HLEN));
	h[8] = opc;
	for (unsigned i = 9; i < sizeof(h); i++)
		h[i] = (uint8_t)(i + opc);
	put(h, sizeof(h));
	static const uint8_t zero[64];
	if (len) {
		put(zero, pdo - NVME_TCP_CMD_HLEN);
		put(payload_a, len);
	}
}

/* The stream in fragments of chunk bytes, tokens from 0. */
static unsigned cut_stream(struct netdev_frag *f, unsigned max, size_t chunk)
{
	unsigned n = 0;
	for (size_t off = 0; off < stream_len && n < max; off += chunk, n++)
		f[n] = (struct netdev_frag){ .addr = dma_addr_host(stream + off), .offset = off, .token = n,
					     .owner = &owner,
					     .len = (uint32_t)(stream_len - off < chunk ? stream_len - off : chunk) };
	return n;
}

/* The stream of the whole-capsule tests: a CapsuleCmd with 300 bytes of data after an 8-byte
 * pad, one without data, and, with third, one with 1000 bytes; their parameters. */
static struct nvme_tcp_params whole_capsules_stream(bool third)
{
	for (size_t i = 0; i < sizeof(payload_a); i++)
		payload_a[i] = (uint8_t)(i * 13 + 1);
	stream_len = 0;
	put_capsule(0x01, 80, 300);
	put_capsule(0x02, 0, 0);
	if (third)
		put_capsule(0x01, 72, 1000);
	return (struct nvme_tcp_params){ .cpda = 1, .maxh2cdata = 32768, .max_icd = 8192 };
}

/* Two framers that took the same stream: the same counts and state. */
static void assert_same_framing(const struct nvme_tcp_rx *a, const struct nvme_tcp_rx *b)
{
	cr_assert_eq(a->st.pdus, b->st.pdus);
	cr_assert_eq(a->st.header_bytes, b->st.header_bytes);
	cr_assert_eq(a->st.pad_bytes, b->st.pad_bytes);
	cr_assert_eq(a->st.data_bytes, b->st.data_bytes);
	cr_assert_eq(a->st.splits, b->st.splits);
	cr_assert_eq(a->state, b->state);
	cr_assert_eq(a->have, b->have);
}

/* Two CapsuleCmds (300 bytes of data after an 8-byte pad, then none) and a third cut short,
 * in fragments of 200 bytes: the first is taken in one step (its SQE, its data in two
 * fragments, the second fragment cut where the data ends), the second lies in the rest of
 * that fragment and the next (taken whole too), the third is not whole in the batch (left to
 * the framer, its common header kept); the counts are those of the framer alone. */
Test(tcp_rx, a_whole_capsule_is_taken_in_one_step_as_the_framer_takes_it)
{
	struct nvme_tcp_params p = whole_capsules_stream(true);
	stream_len -= 500; /* the third PDU goes on past the batch */
	struct netdev_frag f[16], out[16];
	unsigned n = cut_stream(f, 16, 200), nd;
	struct nvme_tcp_rx rx, ref;
	struct nvme_tcp_rx_whole w;
	uint8_t sqe[64];
	nvme_tcp_rx_init(&rx, &p);

	cr_assert(nvme_tcp_rx_at_whole_start(&rx));
	cr_assert(nvme_tcp_rx_whole_capsule(&rx, f, n, &w));
	cr_assert_eq(w.hdr_end, 80);
	cr_assert_eq(w.data_len, 300);
	cr_assert_eq(w.nents, 2);
	cr_assert_eq(w.last_len, 180);
	cr_assert_eq(nvme_tcp_rx_whole_take(&rx, f, &w, sqe, out, &nd), 1);
	cr_assert_eq(sqe[0], 0x01);
	cr_assert_arr_eq(sqe, stream + NVME_TCP_CH_LEN, sizeof(sqe));
	cr_assert_eq(nd, 2);
	cr_assert_eq(out[0].len, 120);
	cr_assert_eq(out[1].len, 180);
	cr_assert_arr_eq((const void *)(uintptr_t)out[0].addr.bus, payload_a, 120);
	cr_assert_arr_eq((const void *)(uintptr_t)out[1].addr.bus, payload_a + 120, 180);
	cr_assert_eq(f[1].len, 20, "the rest of the cut fragment stays in the batch");
	netdev_frag_release(&out[0]);
	netdev_frag_release(&out[1]);

	/* the second: 20 bytes in f[1], 52 in f[2]: its header is not in one fragment */
	cr_assert(nvme_tcp_rx_at_whole_start(&rx));
	cr_assert_not(nvme_tcp_rx_whole_capsule(&rx, f + 1, n - 1, &w));
	for (unsigned i = 1; i < n; i++)
		cr_assert_eq(nvme_tcp_rx_feed(&rx, &f[i], consume, NULL), 0);
	cr_assert_eq(npdus, 1);
	cr_assert_eq(types[0], NVME_TCP_CAPSULE_CMD);

	/* the same stream through the framer alone: the same counts */
	unsigned m = cut_stream(f, 16, 200);
	nvme_tcp_rx_init(&ref, &p);
	for (unsigned i = 0; i < m; i++)
		cr_assert_eq(nvme_tcp_rx_feed(&ref, &f[i], consume, NULL), 0);
	cr_assert_eq(npdus, 3);
	assert_same_framing(&rx, &ref);
	nvme_tcp_rx_reset(&rx);
	nvme_tcp_rx_reset(&ref);
	for (unsigned k = 0; k < n; k++)
		cr_assert_eq(released[k], 2, "buffer %u (once per feed)", k);
}

/* The in-place take (nvme_tcp_rx_whole_take_at, the transport's) leaves the same PDU where
 * nvme_tcp_rx_whole_take moves it: the data fragments in the batch from *first on (the cut
 * entry holding the PDU's part), the rest of that entry apart until the caller puts it back
 * (then the batch is the one the moving take leaves), the framer's state and counts the same. */
Test(tcp_rx, a_whole_capsule_taken_in_place_is_the_one_moved_out)
{
	struct nvme_tcp_params p = whole_capsules_stream(false);
	struct netdev_frag f[16], g[16], out[16], rest;
	unsigned n = cut_stream(f, 16, 200), m = cut_stream(g, 16, 200), nd, first, ng;
	struct nvme_tcp_rx rx, ry;
	struct nvme_tcp_rx_whole w, v;
	uint8_t sqe[64], sqf[64];
	nvme_tcp_rx_init(&rx, &p);
	nvme_tcp_rx_init(&ry, &p);
	cr_assert_eq(n, m);

	/* the first: data 120 + 180 bytes in f[0] and f[1], f[1] cut */
	cr_assert(nvme_tcp_rx_whole_capsule(&rx, f, n, &w));
	cr_assert(nvme_tcp_rx_whole_capsule(&ry, g, m, &v));
	int k = nvme_tcp_rx_whole_take(&rx, f, &w, sqe, out, &nd);
	int j = nvme_tcp_rx_whole_take_at(&ry, g, &v, sqf, &first, &ng, &rest);
	cr_assert_eq(k, 1);
	cr_assert_eq(j, k);
	cr_assert_arr_eq(sqf, sqe, sizeof(sqe));
	cr_assert_eq(ng, nd);
	cr_assert_eq(first, 0);
	for (unsigned i = 0; i < nd; i++) {
		cr_assert_eq(g[first + i].addr.bus, out[i].addr.bus, "fragment %u", i);
		cr_assert_eq(g[first + i].len, out[i].len, "fragment %u", i);
		cr_assert_eq(g[first + i].owner, out[i].owner, "fragment %u (a split: each its own reference)", i);
	}
	cr_assert_eq(rest.len, 20, "the rest of the cut entry");
	cr_assert_eq(rest.addr.bus, f[1].addr.bus);
	for (unsigned i = 0; i < nd; i++) {
		netdev_frag_release(&out[i]);
		netdev_frag_release(&g[first + i]);
	}
	g[j] = rest;

	/* the second (20 bytes in the rest of f[1], its header not in one fragment): neither takes it */
	cr_assert_not(nvme_tcp_rx_whole_capsule(&rx, f + 1, n - 1, &w));
	cr_assert_not(nvme_tcp_rx_whole_capsule(&ry, g + 1, m - 1, &v));
	cr_assert_eq(g[1].len, f[1].len);
	cr_assert_eq(g[1].addr.bus, f[1].addr.bus);
	assert_same_framing(&rx, &ry);
	for (unsigned i = 1; i < n; i++) {
		netdev_frag_release(&f[i]);
		netdev_frag_release(&g[i]);
	}
	nvme_tcp_rx_reset(&rx);
	nvme_tcp_rx_reset(&ry);
}

/* What the one-step path leaves to the framer: digests, a header not in the first fragment, a
 * PDU not whole in the batch (its common header kept: not read twice), a header the framer
 * refuses (which the framer then reports with its FES and FEI), another PDU type. */
Test(tcp_rx, the_one_step_path_leaves_everything_else_to_the_framer)
{
	struct nvme_tcp_params p = { .maxh2cdata = 32768, .max_icd = 8192 };
	struct nvme_tcp_rx rx;
	struct nvme_tcp_rx_whole w;
	struct netdev_frag f[16];
	unsigned n;
	stream_len = 0;
	put_capsule(0x01, 72, 1000);

	p.ddgst = true;
	nvme_tcp_rx_init(&rx, &p);
	n = cut_stream(f, 16, 4096);
	cr_assert_not(nvme_tcp_rx_whole_capsule(&rx, f, n, &w), "data digests");
	p.ddgst = false;
	nvme_tcp_rx_init(&rx, &p);
	n = cut_stream(f, 16, 71);
	cr_assert_not(nvme_tcp_rx_whole_capsule(&rx, f, n, &w), "the header in two fragments");
	n = cut_stream(f, 3, 200);
	cr_assert_not(nvme_tcp_rx_whole_capsule(&rx, f, n, &w), "not whole in the batch");
	cr_assert_eq(rx.skip, NVME_TCP_CH_LEN, "the common header kept");
	cr_assert_eq(rx.have, NVME_TCP_CH_LEN);
	cr_assert(nvme_tcp_rx_at_whole_start(&rx));
	for (unsigned i = 0; i < n; i++)
		cr_assert_eq(nvme_tcp_rx_feed(&rx, &f[i], consume, NULL), 0);
	cr_assert_eq(rx.st.header_bytes, NVME_TCP_CMD_HLEN, "the header counted once");
	nvme_tcp_rx_reset(&rx);

	stream[3] = 76; /* PDO not a multiple of 8 (CPDA 1) */
	p.cpda = 1;
	nvme_tcp_rx_init(&rx, &p);
	n = cut_stream(f, 16, 4096);
	cr_assert_not(nvme_tcp_rx_whole_capsule(&rx, f, n, &w));
	cr_assert_eq(nvme_tcp_rx_feed(&rx, &f[0], consume, NULL), -EPROTO);
	cr_assert_eq(rx.err.fes, NVME_TCP_FES_INVALID_HEADER_FIELD);
	cr_assert_eq(rx.err.fei, offsetof(struct nvme_tcp_ch, pdo));
	nvme_tcp_rx_reset(&rx);

	stream[0] = NVME_TCP_H2C_DATA;
	nvme_tcp_rx_init(&rx, &p);
	n = cut_stream(f, 16, 4096);
	cr_assert_not(nvme_tcp_rx_whole_capsule(&rx, f, n, &w), "an H2CData PDU");
	netdev_frag_release(&f[0]);
	nvme_tcp_rx_reset(&rx);
}

/* Two one-step answers for the same PDU: the same layout. */
static void assert_same_whole(const struct nvme_tcp_rx_whole *w, const struct nvme_tcp_rx_whole *v)
{
	cr_assert_eq(w->hdr_end, v->hdr_end);
	cr_assert_eq(w->data_len, v->data_len);
	cr_assert_eq(w->nents, v->nents);
	cr_assert_eq(w->last_len, v->last_len);
}

/* A common header kept from a peek (nvme_tcp_rx_peek_len, whose verdict the one-step path
 * reads instead of checking the header again) gives nvme_tcp_rx_whole_capsule the answer and
 * layout that reading it in place gives: a CapsuleCmd it takes, one with a PDO the framer
 * refuses, a CapsuleCmd with digests, an H2CData PDU. */
Test(tcp_rx, a_peeked_header_gives_the_one_step_path_the_answer_read_in_place_gives)
{
	struct nvme_tcp_params p = { .cpda = 1, .maxh2cdata = 32768, .max_icd = 8192 };
	struct nvme_tcp_rx rx, ry;
	struct nvme_tcp_rx_whole w, v;
	struct netdev_frag f[16];
	const struct { uint8_t type, pdo, hdgst; bool whole; } cases[] = {
		{ NVME_TCP_CAPSULE_CMD, 80, 0, true },
		{ NVME_TCP_CAPSULE_CMD, 76, 0, false },
		{ NVME_TCP_CAPSULE_CMD, 80, NVME_TCP_F_HDGSTF, false },
		{ NVME_TCP_H2C_DATA, 80, 0, false },
	};
	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		stream_len = 0;
		put_capsule(0x01, 80, 1000);
		stream[0] = cases[i].type;
		stream[1] = cases[i].hdgst;
		stream[3] = cases[i].pdo;
		unsigned n = cut_stream(f, 16, 4096);
		nvme_tcp_rx_init(&rx, &p);
		nvme_tcp_rx_init(&ry, &p);
		(void)nvme_tcp_rx_peek_len(&rx, stream);
		bool peeked = nvme_tcp_rx_whole_capsule(&rx, f, n, &w);
		bool in_place = nvme_tcp_rx_whole_capsule(&ry, f, n, &v);
		cr_assert_eq(peeked, cases[i].whole, "case %u", i);
		cr_assert_eq(in_place, cases[i].whole, "case %u", i);
		if (peeked)
			assert_same_whole(&w, &v);
		for (unsigned k = 0; k < n; k++)
			netdev_frag_release(&f[k]);
		nvme_tcp_rx_reset(&rx);
		nvme_tcp_rx_reset(&ry);
	}
}

/* Feed f[0..n) to rx (the framer), stopping at the first error; returns it (0: none). */
static int feed_all(struct nvme_tcp_rx *rx, struct netdev_frag *f, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		int rc = nvme_tcp_rx_feed(rx, &f[i], consume, NULL);
		if (rc) {
			while (++i < n)
				netdev_frag_release(&f[i]);
			return rc;
		}
	}
	return 0;
}

/* A common header kept unchecked (nvme_tcp_rx_keep_unchecked, when the socket holds all of its
 * PDU whatever it says) is checked by the one-step path: the answer and layout of a header read
 * in place, and, for one it does not take, the framer then gives what it gives a stream it was
 * never kept from (the same PDUs, errors and counters): a CapsuleCmd it takes, one with a PDO
 * the framer refuses, with HDGSTF, with a wrong HLEN, an H2CData PDU, an ICReq, and a CapsuleCmd
 * whose first fragment is shorter than its header. */
Test(tcp_rx, a_header_kept_unchecked_is_checked_by_the_step_that_takes_it)
{
	struct nvme_tcp_params p = { .cpda = 1, .maxh2cdata = 32768, .max_icd = 8192 };
	const struct { uint8_t type, hlen, pdo, flags; size_t cut; bool whole; } cases[] = {
		{ NVME_TCP_CAPSULE_CMD, 72, 80, 0, 4096, true },
		{ NVME_TCP_CAPSULE_CMD, 72, 76, 0, 4096, false },
		{ NVME_TCP_CAPSULE_CMD, 72, 80, NVME_TCP_F_HDGSTF, 4096, false },
		{ NVME_TCP_CAPSULE_CMD, 24, 80, 0, 4096, false },
		{ NVME_TCP_H2C_DATA, 24, 80, 0, 4096, false },
		{ NVME_TCP_ICREQ, 128, 0, 0, 4096, false },
		{ NVME_TCP_CAPSULE_CMD, 72, 80, 0, 40, false },
	};
	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct nvme_tcp_rx rx, ry;
		struct nvme_tcp_rx_whole w, v;
		struct netdev_frag f[64], g[64];
		stream_len = 0;
		put_capsule(0x01, 80, 1000);
		stream[0] = cases[i].type;
		stream[1] = cases[i].flags;
		stream[2] = cases[i].hlen;
		stream[3] = cases[i].pdo;
		unsigned n = cut_stream(f, 64, cases[i].cut), m = cut_stream(g, 64, cases[i].cut);
		nvme_tcp_rx_init(&rx, &p);
		nvme_tcp_rx_init(&ry, &p);
		npdus = 0;

		nvme_tcp_rx_keep_unchecked(&rx, stream);
		cr_assert(nvme_tcp_rx_at_whole_start(&rx), "case %u", i);
		bool kept = nvme_tcp_rx_whole_capsule(&rx, f, n, &w);
		bool in_place = nvme_tcp_rx_whole_capsule(&ry, g, m, &v);
		cr_assert_eq(kept, cases[i].whole, "case %u", i);
		cr_assert_eq(in_place, cases[i].whole, "case %u", i);
		if (kept) {
			assert_same_whole(&w, &v);
			for (unsigned k = 0; k < n; k++) {
				netdev_frag_release(&f[k]);
				netdev_frag_release(&g[k]);
			}
		} else {
			cr_assert_neq(rx.kept_end, NVME_TCP_RX_UNCHECKED, "case %u: settled for the framer", i);
			int a = feed_all(&rx, f, n), b = feed_all(&ry, g, m);
			cr_assert_eq(a, b, "case %u", i);
			cr_assert_eq(rx.err.fes, ry.err.fes, "case %u", i);
			cr_assert_eq(rx.err.fei, ry.err.fei, "case %u", i);
			cr_assert_eq(npdus, a ? 0 : 2, "case %u", i);
			assert_same_framing(&rx, &ry);
		}
		nvme_tcp_rx_reset(&rx);
		nvme_tcp_rx_reset(&ry);
	}
}
