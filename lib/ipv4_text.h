/*
 * ipv4_text.h - IPv4 addresses as text (dotted quads), for settings and consoles.
 */
#ifndef LIB_IPV4_TEXT_H
#define LIB_IPV4_TEXT_H

#include <stdint.h>

/* Parse a strict dotted quad ("10.10.0.10": four decimal parts 0..255, 1-3 digits each,
 * nothing after) into *out in host order. Returns 0 or -EINVAL. */
int ipv4_parse(const char *text, uint32_t *out);

#endif
