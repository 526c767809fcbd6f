// sources: net/tcp/tcp_hdr.c
/*
 * libFuzzer harness: the TCP header parser alone (net/tcp/tcp_hdr.c). Input: byte 0 =
 * payload bytes after the given header bytes (the segment length is the rest of the
 * input plus it), then the header bytes. Invariants: no crash/UB (sanitizers); an
 * accepted header lies inside the bytes given, its ports are not 0, its payload length
 * is the segment minus the header, and its options are within their ranges.
 */
#include <assert.h>
#include <stddef.h>
#include <stdint.h>
#include "net/tcp/tcp_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tcp_seg g;
	size_t avail, seg_len;

	if (size < 1)
		return 0;
	avail = size - 1;
	if (avail > TCP_HLEN_MIN + TCP_OPT_SPACE)
		avail = TCP_HLEN_MIN + TCP_OPT_SPACE;
	seg_len = avail + data[0];
	if (tcp_hdr_parse(data + 1, avail, seg_len, &g))
		return 0;
	assert(g.hlen >= TCP_HLEN_MIN && g.hlen <= avail && g.hlen % 4 == 0);
	assert(g.sport && g.dport);
	assert(g.len == seg_len - g.hlen);
	assert(!g.opts.has_ws || g.opts.ws <= 14);
	return 0;
}
