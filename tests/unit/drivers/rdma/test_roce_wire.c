// sources: drivers/rdma/roce_wire.c drivers/rdma/roce_icrc.c lib/crc32.c
/*
 * RoCE v2 wire: the parser against packets built independently in Python
 * (gen_roce_vectors.py: IBTA layout with struct, ICRC with zlib.crc32), the ICRC against
 * the same vectors (masking of TOS/TTL/IP checksum/UDP checksum/BTH resv8a, little-endian
 * storage), build(parse(x)) == x for every vector, and every refusal of the parser.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>
#include "drivers/rdma/roce_icrc.h"
#include "lib/crc32.h"
#include "drivers/rdma/roce_wire.h"
#include "tests/unit/drivers/rdma/roce_vectors.h"

#define NV (sizeof(roce_vectors) / sizeof(roce_vectors[0]))
#define L3L4 (sizeof(struct ipv4_hdr) + sizeof(struct udp_hdr))

static void split(const struct roce_vector *v, struct ipv4_hdr *ip, struct udp_hdr *uh, const uint8_t **pkt,
		  size_t *len)
{
	memcpy(ip, v->bytes, sizeof(*ip));
	memcpy(uh, v->bytes + sizeof(*ip), sizeof(*uh));
	*pkt = v->bytes + L3L4;
	*len = v->len - L3L4;
}

Test(roce_wire, parser_reads_every_vector_field)
{
	for (size_t i = 0; i < NV; i++) {
		const struct roce_vector *v = &roce_vectors[i];
		struct ipv4_hdr ip;
		struct udp_hdr uh;
		const uint8_t *pkt;
		size_t len;
		struct roce_pkt p;

		split(v, &ip, &uh, &pkt, &len);
		cr_assert_eq(roce_parse(pkt, len, len, &p), ROCE_PARSE_OK, "%s", v->name);
		cr_assert_eq(p.opcode, v->opcode, "%s", v->name);
		cr_assert_eq(p.hdr_len, v->hdr_len, "%s", v->name);
		cr_assert_eq(p.payload_len, v->payload_len, "%s", v->name);
		cr_assert_eq(p.padcnt, v->padcnt, "%s", v->name);
		cr_assert_eq(p.destqp, v->destqp, "%s", v->name);
		cr_assert_eq(p.psn, v->psn, "%s", v->name);
		cr_assert_eq(p.pkey, ROCE_PKEY_DEFAULT);
		cr_assert_eq(p.va, v->va, "%s", v->name);
		cr_assert_eq(p.rkey, v->rkey, "%s", v->name);
		cr_assert_eq(p.dmalen, v->dmalen, "%s", v->name);
		cr_assert_eq(p.imm, v->imm, "%s", v->name);
		cr_assert_eq(p.qkey, v->qkey, "%s", v->name);
		cr_assert_eq(p.srcqp, v->srcqp, "%s", v->name);
		cr_assert_eq(p.syndrome, v->syndrome, "%s", v->name);
		cr_assert_eq(p.msn, v->msn, "%s", v->name);
		cr_assert_eq(p.inv_rkey, v->inv_rkey, "%s", v->name);
		cr_assert_eq(p.swap_add, v->swap_add, "%s", v->name);
		cr_assert_eq(p.compare, v->compare, "%s", v->name);
		cr_assert_eq(p.orig, v->orig, "%s", v->name);
		cr_assert_eq(p.hdr_len, roce_hdr_len(p.opcode));
		cr_assert_str_neq(roce_opcode_name(p.opcode), "?");
	}
}

Test(roce_wire, flags_of_the_first_vectors)
{
	struct roce_pkt p;
	const struct roce_vector *v = &roce_vectors[0]; /* SEND_ONLY, SE, AckReq */
	cr_assert_eq(roce_parse(v->bytes + L3L4, v->len - L3L4, v->len - L3L4, &p), ROCE_PARSE_OK);
	cr_assert(p.se && p.ackreq && !p.fecn && !p.becn && !p.migreq);
	cr_assert_eq(p.flags & (ROCE_F_SEND | ROCE_F_ONLY | ROCE_F_REQUEST), ROCE_F_SEND | ROCE_F_ONLY | ROCE_F_REQUEST);
	v = &roce_vectors[1]; /* WRITE_ONLY_IMM with FECN */
	cr_assert_eq(roce_parse(v->bytes + L3L4, v->len - L3L4, v->len - L3L4, &p), ROCE_PARSE_OK);
	cr_assert(p.fecn && !p.se);
	cr_assert(p.flags & ROCE_F_WRITE && p.flags & ROCE_F_SEND && p.flags & ROCE_F_IMMDT);
}

Test(roce_wire, icrc_matches_zlib_vectors)
{
	/* 0xdebb20e3, Linux rxe's starting value, is the CRC state after 8 bytes of 0xff */
	uint8_t ff[8];
	memset(ff, 0xff, sizeof(ff));
	cr_assert_eq(crc32_ieee(0, ff, sizeof(ff)), ~0xdebb20e3u);
	for (size_t i = 0; i < NV; i++) {
		const struct roce_vector *v = &roce_vectors[i];
		struct ipv4_hdr ip;
		struct udp_hdr uh;
		const uint8_t *pkt;
		size_t len;

		split(v, &ip, &uh, &pkt, &len);
		cr_assert_eq(roce_icrc_packet(&ip, &uh, pkt, len), v->icrc, "%s", v->name);
		cr_assert_eq(roce_icrc_get(pkt + len - 4), v->icrc, "%s: stored little-endian", v->name);
		/* incremental over any split equals one shot */
		for (size_t cut = 0; cut + 16 <= len; cut += 7) {
			uint32_t crc = roce_icrc_start(&ip, &uh, pkt);
			crc = roce_icrc_update(crc, pkt + 12, cut);
			crc = roce_icrc_update(crc, pkt + 12 + cut, len - 16 - cut);
			cr_assert_eq(crc, v->icrc);
		}
	}
}

Test(roce_wire, icrc_ignores_masked_fields_and_covers_the_rest)
{
	const struct roce_vector *v = &roce_vectors[1];
	uint8_t buf[256];
	struct ipv4_hdr ip;
	struct udp_hdr uh;
	size_t len = v->len - L3L4;

	cr_assert(v->len <= sizeof(buf));
	/* masked: TOS, TTL, IP checksum, UDP checksum, BTH resv8a (FECN/BECN) */
	static const size_t masked[] = { 1, 8, 10, 11, 26, 27, 28 + 4 };
	for (size_t m = 0; m < sizeof(masked) / sizeof(masked[0]); m++) {
		memcpy(buf, v->bytes, v->len);
		buf[masked[m]] ^= 0x5a;
		memcpy(&ip, buf, sizeof(ip));
		memcpy(&uh, buf + sizeof(ip), sizeof(uh));
		cr_assert_eq(roce_icrc_packet(&ip, &uh, buf + L3L4, len), v->icrc, "byte %zu", masked[m]);
	}
	/* every other byte before the ICRC is covered */
	for (size_t b = 0; b < v->len - 4; b++) {
		bool is_masked = false;
		for (size_t m = 0; m < sizeof(masked) / sizeof(masked[0]); m++)
			is_masked |= masked[m] == b;
		if (is_masked)
			continue;
		memcpy(buf, v->bytes, v->len);
		buf[b] ^= 0x01;
		memcpy(&ip, buf, sizeof(ip));
		memcpy(&uh, buf + sizeof(ip), sizeof(uh));
		cr_assert_neq(roce_icrc_packet(&ip, &uh, buf + L3L4, len), v->icrc, "byte %zu", b);
	}
}

Test(roce_wire, build_of_parse_gives_the_same_headers)
{
	for (size_t i = 0; i < NV; i++) {
		const struct roce_vector *v = &roce_vectors[i];
		const uint8_t *pkt = v->bytes + L3L4;
		size_t len = v->len - L3L4;
		struct roce_pkt p;
		uint8_t out[ROCE_HDR_MAX];

		cr_assert_eq(roce_parse(pkt, len, len, &p), ROCE_PARSE_OK);
		int n = roce_build(&p, out, sizeof(out));
		cr_assert_eq(n, v->hdr_len, "%s", v->name);
		cr_assert_eq(memcmp(out, pkt, (size_t)n), 0, "%s", v->name);
		cr_assert_eq(roce_build(&p, out, (size_t)n - 1), -ENOSPC);
	}
}

Test(roce_wire, build_refuses_unknown_opcode_and_payload_without_room)
{
	struct roce_pkt p = { .opcode = 0x15 };
	uint8_t out[ROCE_HDR_MAX];
	cr_assert_eq(roce_build(&p, out, sizeof(out)), -EINVAL);
	p.opcode = ROCE_RC_ACK;
	p.payload_len = 4;
	cr_assert_eq(roce_build(&p, out, sizeof(out)), -EINVAL);
	p.opcode = ROCE_RC_SEND_ONLY;
	p.payload_len = 6;
	cr_assert_eq(roce_build(&p, out, sizeof(out)), 12);
	cr_assert_eq((out[1] & BTH_PADCNT_MASK) >> BTH_PADCNT_SHIFT, 2);
}

static enum roce_parse_err parse_mod(const struct roce_vector *v, size_t byte, uint8_t val, size_t len_delta)
{
	uint8_t buf[2048];
	struct roce_pkt p;
	size_t len = v->len - L3L4;
	memset(buf, 0, sizeof(buf));
	memcpy(buf, v->bytes + L3L4, len);
	if (byte < len)
		buf[byte] = val;
	return roce_parse(buf, len - len_delta, len - len_delta, &p);
}

Test(roce_wire, parser_refusals)
{
	const struct roce_vector *send = &roce_vectors[0];  /* 5 B payload, pad 3 */
	const struct roce_vector *rd = &roce_vectors[2];    /* READ REQUEST: no payload */
	const struct roce_vector *cas = &roce_vectors[4];   /* 40 B of headers */
	struct roce_pkt p;

	/* unknown opcodes: UC, RD, reserved RC 0x15, UD other than SEND */
	static const uint8_t bad_ops[] = { 0x15, 0x18, 0x1f, 0x20, 0x24, 0x40, 0x60, 0x66, 0x80, 0xff };
	for (size_t i = 0; i < sizeof(bad_ops); i++)
		cr_assert_eq(parse_mod(send, 0, bad_ops[i], 0), ROCE_PARSE_OPCODE, "0x%02x", bad_ops[i]);
	/* TVer */
	cr_assert_eq(parse_mod(send, 1, 0xb1, 0), ROCE_PARSE_TVER);
	/* short: less than a BTH, a header cut, no room for the ICRC */
	cr_assert_eq(roce_parse(send->bytes + L3L4, 11, 11, &p), ROCE_PARSE_SHORT);
	cr_assert_eq(parse_mod(cas, 99, 0, 5), ROCE_PARSE_SHORT);
	cr_assert_eq(parse_mod(cas, 99, 0, 1), ROCE_PARSE_SHORT);
	/* the caller gave fewer header bytes than the opcode needs */
	cr_assert_eq(roce_parse(cas->bytes + L3L4, 39, cas->len - L3L4, &p), ROCE_PARSE_SHORT);
	cr_assert_eq(roce_parse(cas->bytes + L3L4, 40, cas->len - L3L4, &p), ROCE_PARSE_OK);
	/* pad: on a packet without payload, larger than the payload area, not word aligned */
	cr_assert_eq(parse_mod(rd, 1, 0x10, 0), ROCE_PARSE_PAD);
	cr_assert_eq(parse_mod(rd, 99, 0, (size_t)-4), ROCE_PARSE_PAD);  /* 4 stray bytes */
	cr_assert_eq(parse_mod(send, 99, 0, 1), ROCE_PARSE_PAD);
	cr_assert_eq(parse_mod(send, 99, 0, 8), ROCE_PARSE_PAD);          /* BTH + ICRC only, PadCnt 3 */
	cr_assert_eq(parse_mod(send, 99, 0, 9), ROCE_PARSE_SHORT);        /* no room for the ICRC */
	/* pad 3 with 4 bytes of payload area is fine; pad with no payload area is not */
	cr_assert_eq(parse_mod(send, 1, 0x30, 0), ROCE_PARSE_OK);
	cr_assert_eq(parse_mod(send, 1, 0x30, 8) == ROCE_PARSE_OK, false);
	/* an empty SEND (no payload, pad 0) is fine */
	{
		uint8_t b[16] = { ROCE_RC_SEND_ONLY, 0, 0xff, 0xff, 0, 0, 0, 1, 0, 0, 0, 2 };
		cr_assert_eq(roce_parse(b, sizeof(b), sizeof(b), &p), ROCE_PARSE_OK);
		cr_assert_eq(p.payload_len, 0);
		b[1] = 0x10;
		cr_assert_eq(roce_parse(b, sizeof(b), sizeof(b), &p), ROCE_PARSE_PAD);
	}
	for (int e = ROCE_PARSE_OK; e <= ROCE_PARSE_PAD; e++)
		cr_assert_str_neq(roce_parse_err_name((enum roce_parse_err)e), "?");
}
