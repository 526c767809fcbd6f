/*
 * roce_pp_msg.c - ibv_rc_pingpong's address message, parsed and formatted (roce_pingpong.h).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "roce_pingpong.h"

static int roce_pp_hex(const char *p, unsigned n, uint32_t *out)
{
	uint32_t v = 0;
	for (unsigned i = 0; i < n; i++) {
		char c = p[i];
		unsigned d;
		if (c >= '0' && c <= '9')
			d = (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			d = (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			d = (unsigned)(c - 'A' + 10);
		else
			return -EINVAL;
		v = v << 4 | d;
	}
	*out = v;
	return 0;
}

int roce_pp_parse(const char *msg, size_t len, struct roce_pp_dest *out)
{
	struct roce_pp_dest d;
	uint32_t v;

	/* "LLLL:QQQQQQ:PPPPPP:" then the GID's 16 bytes as 32 hex digits */
	if (len < ROCE_PP_MSG_LEN - 1 || msg[4] != ':' || msg[11] != ':' || msg[18] != ':')
		return -EINVAL;
	memset(&d, 0, sizeof(d));
	if (roce_pp_hex(msg, 4, &v))
		return -EINVAL;
	d.lid = (uint16_t)v;
	if (roce_pp_hex(msg + 5, 6, &d.qpn) || roce_pp_hex(msg + 12, 6, &d.psn))
		return -EINVAL;
	for (unsigned i = 0; i < 16; i++) {
		if (roce_pp_hex(msg + 19 + 2 * i, 2, &v))
			return -EINVAL;
		d.gid.raw[i] = (uint8_t)v;
	}
	*out = d;
	return 0;
}

void roce_pp_format(const struct roce_pp_dest *d, char out[ROCE_PP_MSG_LEN])
{
	int n = snprintf(out, ROCE_PP_MSG_LEN, "%04x:%06x:%06x:", d->lid, (unsigned)(d->qpn & 0xffffff),
			 (unsigned)(d->psn & 0xffffff));
	for (unsigned i = 0; i < 16 && n > 0; i++)
		snprintf(out + n + 2 * i, ROCE_PP_MSG_LEN - (size_t)n - 2 * i, "%02x", d->gid.raw[i]);
}
