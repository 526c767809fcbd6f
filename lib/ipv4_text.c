/*
 * ipv4_text.c - dotted-quad parsing (see ipv4_text.h).
 */
#include <errno.h>
#include "ipv4_text.h"

/* Parse a dotted quad. */
int ipv4_parse(const char *text, uint32_t *out)
{
	uint32_t v = 0;

	for (int part = 0; part < 4; part++) {
		unsigned n = 0, digits = 0;
		while (*text >= '0' && *text <= '9' && digits < 4) {
			n = n * 10 + (unsigned)(*text++ - '0');
			digits++;
		}
		if (digits == 0 || digits > 3 || n > 255)
			return -EINVAL;
		v = v << 8 | n;
		if (part < 3 && *text++ != '.')
			return -EINVAL;
	}
	if (*text)
		return -EINVAL;
	*out = v;
	return 0;
}
