// sources: drivers/nvme/target/nvmet_tcp_rx.c drivers/nvme/target/nvmet_tcp_pdu.c drivers/nic/netdev.c lib/crc32.c mm/pool.c mm/dma.c lib/log.c lib/clock.c
/*
 * libFuzzer harness: NVMe/TCP receive framing over an arbitrary byte stream cut into
 * fragments of arbitrary sizes. The first byte picks digests/alignment and whether each
 * fragment that starts a PDU has its common header looked at in place first (as the
 * transport does: nvme_tcp_rx_peek_len, the framer keeps it) and whether a fragment inside a
 * PDU's data goes through the run path (nvme_tcp_rx_feed_data_run), the second the fragment size. Invariant: however the stream ends (PDUs, a fatal error, a half PDU
 * reset at teardown), every fragment buffer is released exactly once and every pool is
 * empty; and the PDU length the transport reads from a common header in place
 * (nvme_tcp_rx_peek_len) is, for every PDU the framer accepts, 0 or its PLEN.
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

static int consume(void *ctx, struct nvme_tcp_rx_pdu *pdu)
{
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
	static struct nvme_tcp_rx rx;
	unsigned n = 0;
	nvme_tcp_rx_init(&rx, &p);
	memset(released, 0, sizeof(released));
	bool prime = data[0] & 16;
	bool runs = data[0] & 32; /* a fragment inside a PDU's data may go through the run path
				   * (nvme_tcp_rx_feed_data_run, as conn_recv takes a batch) */
	for (size_t off = 2; off < size && n < MAX_CHUNKS; off += chunk, n++) {
		struct netdev_frag f = { 0 };
		if (prime && nvme_tcp_rx_at_pdu_start(&rx) && size - off >= NVME_TCP_CH_LEN)
			(void)nvme_tcp_rx_peek_len(&rx, data + off);
		f.addr = dma_addr_host(data + off);
		f.len = (uint32_t)(size - off < chunk ? size - off : chunk);
		f.token = n;
		f.owner = &owner;
		if (runs && nvme_tcp_rx_feed_data_run(&rx, &f, 1) == 1)
			continue; /* the PDU holds it now */
		(void)nvme_tcp_rx_feed(&rx, &f, consume, &rx);
	}
	nvme_tcp_rx_reset(&rx);
	for (unsigned k = 0; k < n; k++)
		assert(released[k] == 1);
	assert(mm_pool_total_in_use() == 0);
	return 0;
}
