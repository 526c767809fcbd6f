// sources: net/tcp/tcp_hdr.c
/*
 * The TCP header parser (net/tcp/tcp_hdr.c): fields in host order, data offset checked
 * against the bytes given and the segment, port 0 refused, options parsed and bounded.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>
#include "net/tcp/tcp_internal.h"

static size_t build(uint8_t *b, uint8_t doff_words, const uint8_t *opts, size_t optlen)
{
	memset(b, 0, 60);
	b[0] = 0x9c, b[1] = 0x40;                      /* sport 40000 */
	b[2] = 0x00, b[3] = 0x07;                      /* dport 7 */
	b[4] = 0x01, b[5] = 0x02, b[6] = 0x03, b[7] = 0x04;
	b[8] = 0xff, b[9] = 0xfe, b[10] = 0xfd, b[11] = 0xfc;
	b[12] = (uint8_t)(doff_words << 4);
	b[13] = TCP_SYN | TCP_ACK;
	b[14] = 0x12, b[15] = 0x34;
	if (optlen)
		memcpy(b + 20, opts, optlen);
	return 20 + optlen;
}

Test(tcp_hdr, fields_and_options)
{
	static const uint8_t o[] = { 2, 4, 0x05, 0xb4, 1, 3, 3, 20, 4, 2, 5, 10, 0, 0, 0, 1, 0, 0, 0, 9, 0, 0 };
	uint8_t b[60];
	struct tcp_seg g;
	size_t n = build(b, 10, o, 20);
	cr_assert_eq(tcp_hdr_parse(b, n, n + 100, &g), 0);
	cr_assert_eq(g.sport, 40000);
	cr_assert_eq(g.dport, 7);
	cr_assert_eq(g.seq, 0x01020304u);
	cr_assert_eq(g.ack, 0xfffefdfcu);
	cr_assert_eq(g.flags, TCP_SYN | TCP_ACK);
	cr_assert_eq(g.wnd, 0x1234);
	cr_assert_eq(g.hlen, 40);
	cr_assert_eq(g.len, 100);
	cr_assert(g.opts.has_mss && g.opts.mss == 1460);
	cr_assert(g.opts.has_ws && g.opts.ws == 14, "shift clamped to 14 (RFC 7323 2.3)");
	cr_assert(g.opts.sack_perm);
	cr_assert(g.opts.has_sack && g.opts.sack_left == 1 && g.opts.sack_right == 9);
}

Test(tcp_hdr, bad_offsets_and_ports)
{
	uint8_t b[60];
	struct tcp_seg g;
	size_t n = build(b, 4, NULL, 0);
	cr_assert_eq(tcp_hdr_parse(b, n, n, &g), -EINVAL, "data offset below 5 words");
	n = build(b, 6, NULL, 0);
	cr_assert_eq(tcp_hdr_parse(b, n, n, &g), -EINVAL, "data offset beyond the segment");
	cr_assert_eq(tcp_hdr_parse(b, 24, 24, &g), 0);
	cr_assert_eq(tcp_hdr_parse(b, 19, 19, &g), -EINVAL, "shorter than a header");
	cr_assert_eq(tcp_hdr_parse(b, 24, 20, &g), -EINVAL, "more bytes given than the segment has");
	b[0] = b[1] = 0;
	cr_assert_eq(tcp_hdr_parse(b, 24, 24, &g), -EINVAL, "source port 0");
}

Test(tcp_hdr, malformed_options_end_parsing)
{
	/* A length byte that runs past the header, then a length below 2. */
	static const uint8_t o1[] = { 1, 2, 9, 0 };
	static const uint8_t o2[] = { 3, 1, 2, 4 };
	uint8_t b[60];
	struct tcp_seg g;
	size_t n = build(b, 6, o1, sizeof(o1));
	cr_assert_eq(tcp_hdr_parse(b, n, n, &g), 0);
	cr_assert(!g.opts.has_mss);
	n = build(b, 6, o2, sizeof(o2));
	cr_assert_eq(tcp_hdr_parse(b, n, n, &g), 0);
	cr_assert(!g.opts.has_ws && !g.opts.has_mss);
}
