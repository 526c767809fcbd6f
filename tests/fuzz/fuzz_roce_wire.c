// sources: drivers/rdma/roce_wire.c drivers/rdma/roce_icrc.c lib/crc32.c lib/clock.c
/*
 * libFuzzer harness: RoCE v2 packets (BTH to ICRC) as they arrive on UDP 4791, given to
 * the parser with the whole packet or only its first ROCE_HDR_MAX bytes readable (the
 * first input byte picks). Invariants: an accepted packet's headers, payload, pad and
 * ICRC add up to its length exactly; the builder writes the headers the parser read
 * back to the same fields (build, parse, build again gives the same bytes); the ICRC
 * runs over any accepted packet.
 */
#include <assert.h>
#include <stdint.h>
#include <string.h>
#include "drivers/rdma/roce_icrc.h"
#include "drivers/rdma/roce_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct roce_pkt p, q;
	uint8_t h1[ROCE_HDR_MAX], h2[ROCE_HDR_MAX], buf[ROCE_HDR_MAX + 8];
	size_t avail;

	if (size < 1)
		return 0;
	avail = (data[0] & 1) ? (size - 1 < ROCE_HDR_MAX ? size - 1 : ROCE_HDR_MAX) : size - 1;
	data++;
	size--;
	if (roce_parse(data, avail, size, &p) != ROCE_PARSE_OK)
		return 0;
	assert(p.hdr_len >= sizeof(struct roce_bth) && p.hdr_len <= ROCE_HDR_MAX && p.hdr_len <= avail);
	assert((size_t)p.hdr_len + p.payload_len + p.padcnt + ROCE_ICRC_LEN == size);
	assert(p.padcnt <= 3 && ((p.payload_len + p.padcnt) & 3) == 0);
	assert(p.payload_len == 0 || (p.flags & ROCE_F_PAYLOAD));
	assert(p.hdr_len == roce_hdr_len(p.opcode));

	int n = roce_build(&p, h1, sizeof(h1));
	assert(n == p.hdr_len);
	/* the rebuilt headers, a payload area of the same size (up to 8 bytes) and an ICRC */
	size_t rest = p.payload_len + p.padcnt;
	if (rest <= 8 - ROCE_ICRC_LEN) {
		memcpy(buf, h1, (size_t)n);
		memset(buf + n, 0, rest + ROCE_ICRC_LEN);
		assert(roce_parse(buf, (size_t)n + rest + ROCE_ICRC_LEN, (size_t)n + rest + ROCE_ICRC_LEN, &q) ==
		       ROCE_PARSE_OK);
		assert(q.payload_len == p.payload_len && q.padcnt == p.padcnt && q.psn == p.psn && q.destqp == p.destqp);
		assert(roce_build(&q, h2, sizeof(h2)) == n && memcmp(h1, h2, (size_t)n) == 0);
	}
	if (avail == size) {
		struct ipv4_hdr ip = { .ver_ihl = 0x45, .protocol = IP_PROTO_UDP };
		struct udp_hdr uh = { .dst_port = be16_make(ROCE_UDP_PORT) };
		(void)roce_icrc_packet(&ip, &uh, data, size);
	}
	return 0;
}
