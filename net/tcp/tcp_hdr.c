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
void tcp_hdr_options(const uint8_t *p, size_t len, struct tcp_opts *o)
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

/* The parser itself is tcp_hdr_read (tcp_internal.h, inline in tcp_rx); this is its
 * out-of-line face for the tests and the fuzzer. */
int tcp_hdr_parse(const uint8_t *b, size_t avail, size_t seg_len, struct tcp_seg *g)
{
	return tcp_hdr_read(b, avail, seg_len, g);
}
