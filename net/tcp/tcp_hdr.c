/*
 * tcp_hdr.c - the TCP header parser (RFC 9293 section 3.1, options of RFC 9293 3.2,
 * RFC 7323 2 and RFC 2018): received header bytes become a struct tcp_seg of host-order
 * locals, checked before anything else looks at them. No socket state is touched here,
 * so the parser is tested and fuzzed on its own (tests/unit/net/tcp/test_tcp_hdr.c,
 * tests/fuzz/fuzz_net_tcp_hdr.c) and through the whole receive path (fuzz_net).
 */
#include <errno.h>
#include <string.h>
#include "../../lib/byteorder.h"
#include "tcp_internal.h"

/* Options (RFC 9293 3.2): malformed ones end parsing, unknown ones are skipped. */
static void parse_options(const uint8_t *p, size_t len, struct tcp_opts *o)
{
	size_t i = 0;
	while (i < len) { /* o zeroed by the caller */
		uint8_t kind = p[i];
		if (kind == TCP_OPT_EOL)
			break;
		if (kind == TCP_OPT_NOP) {
			i++;
			continue;
		}
		if (len - i < 2 || p[i + 1] < 2 || p[i + 1] > len - i)
			break;
		uint8_t olen = p[i + 1];
		if (kind == TCP_OPT_MSS && olen == 4) {
			o->has_mss = true;
			o->mss = be16_load(p + i + 2);
		} else if (kind == TCP_OPT_WS && olen == 3) {
			o->has_ws = true;
			o->ws = p[i + 2] > 14 ? 14 : p[i + 2]; /* RFC 7323 2.3 */
		} else if (kind == TCP_OPT_SACK_PERM && olen == 2) {
			o->sack_perm = true;
		} else if (kind == TCP_OPT_SACK && olen >= 10 && (olen - 2) % 8 == 0 && !o->has_sack) {
			/* RFC 2018 3: only the first block matters here (D-SACK, RFC 2883). */
			o->has_sack = true;
			o->sack_left = be32_load(p + i + 2);
			o->sack_right = be32_load(p + i + 6);
		}
		i += olen;
	}
}

/* Parse the header at the front of a segment of seg_len bytes, of which the first avail
 * (at most TCP_HLEN_MIN + TCP_OPT_SPACE) are in b. Returns 0 or -EINVAL (data offset
 * below 5 words or beyond the segment, header not in b, port 0). */
int tcp_hdr_parse(const uint8_t *b, size_t avail, size_t seg_len, struct tcp_seg *g)
{
	struct tcp_hdr th;
	size_t hlen;

	memset(g, 0, sizeof(*g));
	if (avail > seg_len || avail < sizeof(th))
		return -EINVAL;
	memcpy(&th, b, sizeof(th));
	hlen = (size_t)(th.data_offset >> 4) * 4;
	if (hlen < TCP_HLEN_MIN || hlen > avail)
		return -EINVAL;
	g->sport = be16_get(th.src_port);
	g->dport = be16_get(th.dst_port);
	if (g->sport == 0 || g->dport == 0)
		return -EINVAL;
	g->hlen = (uint8_t)hlen;
	g->seq = be32_get(th.seq);
	g->ack = be32_get(th.ack);
	g->flags = th.flags;
	g->wnd = be16_get(th.window);
	g->len = (uint32_t)(seg_len - hlen);
	if (hlen > sizeof(th)) /* most segments carry none */
		parse_options(b + sizeof(th), hlen - sizeof(th), &g->opts);
	return 0;
}
