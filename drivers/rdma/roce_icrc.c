/*
 * roce_icrc.c - the RoCE v2 ICRC: masking of the variant fields and the CRC-32 itself
 * (lib/crc32.c's crc32_ieee). See roce_icrc.h for what is covered.
 */
#include <string.h>
#include "../../lib/byteorder.h"
#include "../../lib/crc32.h"
#include "roce_icrc.h"
#include "roce_wire.h"

uint32_t roce_icrc_start(const struct ipv4_hdr *ip, const struct udp_hdr *uh, const uint8_t bth[12])
{
	struct {
		uint8_t lrh[8];
		struct ipv4_hdr ip;
		struct udp_hdr uh;
		struct roce_bth bth;
	} __attribute__((packed)) ps;

	_Static_assert(sizeof(ps) == 48, "pseudo header");
	memset(ps.lrh, 0xff, sizeof(ps.lrh));
	ps.ip = *ip;
	ps.ip.tos = 0xff;
	ps.ip.ttl = 0xff;
	ps.ip.header_checksum = be16_make(0xffff);
	ps.uh = *uh;
	ps.uh.checksum = be16_make(0xffff);
	memcpy(&ps.bth, bth, sizeof(ps.bth));
	ps.bth.resv8a = 0xff;
	return crc32_ieee(0, &ps, sizeof(ps));
}

uint32_t roce_icrc_update(uint32_t crc, const void *p, size_t len)
{
	return crc32_ieee(crc, p, len);
}

void roce_icrc_put(uint8_t out[4], uint32_t icrc)
{
	le32_store(out, icrc);
}

uint32_t roce_icrc_get(const uint8_t in[4])
{
	return le32_load(in);
}

uint32_t roce_icrc_packet(const struct ipv4_hdr *ip, const struct udp_hdr *uh, const uint8_t *pkt, size_t pkt_len)
{
	uint32_t crc = roce_icrc_start(ip, uh, pkt);
	return roce_icrc_update(crc, pkt + sizeof(struct roce_bth),
				pkt_len - sizeof(struct roce_bth) - ROCE_ICRC_LEN);
}
