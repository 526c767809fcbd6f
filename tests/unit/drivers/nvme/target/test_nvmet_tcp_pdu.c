// sources: drivers/nvme/target/nvmet_tcp_pdu.c lib/crc32.c
/*
 * NVMe/TCP PDU headers: every validation rule yields the right Fatal Error Status and
 * Field Error Information; builders round-trip through the parser, digests included.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>
#include "drivers/nvme/target/nvmet_tcp_pdu.h"
#include "lib/byteorder.h"
#include "lib/crc32.h"

static struct nvme_tcp_params params(bool hdgst, bool ddgst)
{
	struct nvme_tcp_params p = { .hdgst = hdgst, .ddgst = ddgst, .cpda = 0, .hpda = 0,
				     .maxh2cdata = 32768, .max_icd = 8192 };
	return p;
}

static void ch(uint8_t *b, uint8_t type, uint8_t flags, uint8_t hlen, uint8_t pdo, uint32_t plen)
{
	b[0] = type;
	b[1] = flags;
	b[2] = hlen;
	b[3] = pdo;
	b[4] = (uint8_t)plen;
	b[5] = (uint8_t)(plen >> 8);
	b[6] = (uint8_t)(plen >> 16);
	b[7] = (uint8_t)(plen >> 24);
}

/* Parse and expect a failure with this FES/FEI. */
static void expect_fail(const uint8_t *hdr, size_t len, struct nvme_tcp_params p, uint16_t fes, uint32_t fei)
{
	struct nvme_tcp_pdu pdu;
	struct nvme_tcp_error err = { 0 };
	cr_assert_eq(nvme_tcp_pdu_parse(hdr, len, &p, &pdu, &err), -EPROTO);
	cr_assert_eq(err.fes, fes, "fes %u want %u (%s)", err.fes, fes, err.what);
	cr_assert_eq(err.fei, fei, "fei %u want %u (%s)", err.fei, fei, err.what);
	cr_assert_not_null(err.what);
}

static void icreq(uint8_t *b, uint16_t pfv, uint8_t hpda, uint8_t dgst)
{
	memset(b, 0, 128);
	ch(b, NVME_TCP_ICREQ, 0, 128, 0, 128);
	b[8] = (uint8_t)pfv;
	b[9] = (uint8_t)(pfv >> 8);
	b[10] = hpda;
	b[11] = dgst;
	le32_store(b + 12, 3);
}

Test(tcp_pdu, icreq_valid_and_each_bad_field)
{
	uint8_t b[128];
	struct nvme_tcp_pdu pdu;
	struct nvme_tcp_error err;
	struct nvme_tcp_params p = params(false, false);

	icreq(b, 0, 2, NVME_TCP_DGST_HDGST_ENABLE | NVME_TCP_DGST_DDGST_ENABLE);
	cr_assert_eq(nvme_tcp_header_size(b, 8, &p, &err), 128);
	cr_assert_eq(nvme_tcp_pdu_parse(b, 128, &p, &pdu, &err), 0);
	cr_assert_eq(pdu.u.ic.pda, 2);
	cr_assert_eq(pdu.u.ic.dgst, 3);
	cr_assert_eq(pdu.u.ic.maxr2t_or_maxh2cdata, 3);
	cr_assert_eq(pdu.data_len, 0);

	icreq(b, 1, 0, 0);
	expect_fail(b, 128, p, NVME_TCP_FES_UNSUPPORTED_PARAMETER, 8);
	icreq(b, 0, 32, 0);
	expect_fail(b, 128, p, NVME_TCP_FES_UNSUPPORTED_PARAMETER, 10);
	icreq(b, 0, 0, 0x04);
	expect_fail(b, 128, p, NVME_TCP_FES_UNSUPPORTED_PARAMETER, 11);
	icreq(b, 0, 0, 0);
	le32_store(b + 4, 129);
	expect_fail(b, 129, p, NVME_TCP_FES_INVALID_HEADER_FIELD, 4);
	icreq(b, 0, 0, 0);
	b[1] = NVME_TCP_F_HDGSTF;
	expect_fail(b, 128, p, NVME_TCP_FES_INVALID_HEADER_FIELD, 1);
	/* ICReq never carries digests, even once they are negotiated */
	icreq(b, 0, 0, 0);
	cr_assert_eq(nvme_tcp_pdu_parse(b, 128, &(struct nvme_tcp_params){ .hdgst = true, .ddgst = true }, &pdu, &err), 0);
}

Test(tcp_pdu, common_header_checks)
{
	uint8_t b[128] = { 0 };
	struct nvme_tcp_error err;
	struct nvme_tcp_params p = params(false, false);

	cr_assert_eq(nvme_tcp_header_size(b, 7, &p, &err), 0, "need 8 bytes first");
	ch(b, 0x08, 0, 24, 0, 24);
	cr_assert_eq(nvme_tcp_header_size(b, 8, &p, &err), -EPROTO);
	cr_assert_eq(err.fes, NVME_TCP_FES_INVALID_HEADER_FIELD);
	cr_assert_eq(err.fei, 0);
	ch(b, NVME_TCP_CAPSULE_CMD, 0, 71, 0, 72);
	cr_assert_eq(nvme_tcp_header_size(b, 8, &p, &err), -EPROTO);
	cr_assert_eq(err.fei, 2, "HLEN");
	ch(b, NVME_TCP_CAPSULE_CMD, 0, 72, 0, 71);
	cr_assert_eq(nvme_tcp_header_size(b, 8, &p, &err), -EPROTO);
	cr_assert_eq(err.fei, 4, "PLEN < HLEN");
	struct nvme_tcp_params ph = params(true, false);
	ch(b, NVME_TCP_CAPSULE_CMD, 0, 72, 0, 76);
	cr_assert_eq(nvme_tcp_header_size(b, 8, &ph, &err), -EPROTO, "header digest negotiated, HDGSTF missing");
	cr_assert_eq(err.fei, 1);
	ch(b, NVME_TCP_CAPSULE_CMD, NVME_TCP_F_HDGSTF, 72, 0, 76);
	cr_assert_eq(nvme_tcp_header_size(b, 8, &ph, &err), 76);
	cr_assert_eq(nvme_tcp_header_size(b, 8, &p, &err), -EPROTO, "HDGSTF without negotiation");
}

Test(tcp_pdu, framed_parse_leaves_the_sqe_in_the_header)
{
	uint8_t b[128] = { 0 };
	struct nvme_tcp_pdu pdu;
	struct nvme_tcp_error err;
	struct nvme_tcp_params p = params(false, false);

	ch(b, NVME_TCP_CAPSULE_CMD, 0, 72, 72, 72 + 512);
	memset(b + 8, 0xa5, 64);
	cr_assert_eq(nvme_tcp_pdu_parse_framed(b, 72, 72, &p, &pdu, &err), 0);
	cr_assert_eq(pdu.type, NVME_TCP_CAPSULE_CMD);
	cr_assert_eq(pdu.data_len, 512);
	for (unsigned i = 0; i < sizeof(pdu.u.cmd.sqe); i++)
		cr_assert_eq(pdu.u.cmd.sqe[i], 0, "byte %u copied", i);
	cr_assert_eq(nvme_tcp_pdu_parse_sized(b, 72, 72, &p, &pdu, &err), 0);
	cr_assert_eq(pdu.u.cmd.sqe[63], 0xa5);
	/* the same checks: in-capsule data above the limit */
	ch(b, NVME_TCP_CAPSULE_CMD, 0, 72, 72, 72 + 8192 + 1);
	cr_assert_eq(nvme_tcp_pdu_parse_framed(b, 72, 72, &p, &pdu, &err), -EPROTO);
	cr_assert_eq(err.fes, NVME_TCP_FES_DATA_LIMIT_EXCEEDED);
}

Test(tcp_pdu, capsule_cmd_with_and_without_in_capsule_data)
{
	uint8_t b[128] = { 0 };
	struct nvme_tcp_pdu pdu;
	struct nvme_tcp_error err;
	struct nvme_tcp_params p = params(false, false);

	ch(b, NVME_TCP_CAPSULE_CMD, 0, 72, 0, 72);
	b[8] = 0x01; /* SQE opcode: write */
	cr_assert_eq(nvme_tcp_pdu_parse(b, 72, &p, &pdu, &err), 0);
	cr_assert_eq(pdu.data_len, 0);
	cr_assert_eq(pdu.u.cmd.sqe[0], 0x01);

	ch(b, NVME_TCP_CAPSULE_CMD, 0, 72, 72, 72 + 4096);
	cr_assert_eq(nvme_tcp_pdu_parse(b, 72, &p, &pdu, &err), 0);
	cr_assert_eq(pdu.data_off, 72);
	cr_assert_eq(pdu.data_len, 4096);
	cr_assert_not(pdu.has_ddgst);

	ch(b, NVME_TCP_CAPSULE_CMD, 0, 72, 0, 72 + 16);
	expect_fail(b, 72, p, NVME_TCP_FES_INVALID_HEADER_FIELD, 3); /* data but PDO 0 */
	ch(b, NVME_TCP_CAPSULE_CMD, 0, 72, 72, 72 + 8193);
	expect_fail(b, 72, p, NVME_TCP_FES_DATA_LIMIT_EXCEEDED, 4);
	ch(b, NVME_TCP_CAPSULE_CMD, 0, 72, 76, 72);
	expect_fail(b, 72, p, NVME_TCP_FES_INVALID_HEADER_FIELD, 3); /* PDO without data */
	ch(b, NVME_TCP_CAPSULE_CMD, NVME_TCP_F_DDGSTF, 72, 72, 72 + 16);
	expect_fail(b, 72, p, NVME_TCP_FES_INVALID_HEADER_FIELD, 1); /* data digest not negotiated */
	struct nvme_tcp_params pa = params(false, false);
	pa.cpda = 1; /* 8-byte aligned data */
	ch(b, NVME_TCP_CAPSULE_CMD, 0, 72, 76, 76 + 16);
	expect_fail(b, 72, pa, NVME_TCP_FES_INVALID_HEADER_FIELD, 3);
	ch(b, NVME_TCP_CAPSULE_CMD, 0, 72, 80, 80 + 16);
	cr_assert_eq(nvme_tcp_pdu_parse(b, 72, &pa, &pdu, &err), 0);
	cr_assert_eq(pdu.data_len, 16);
}

Test(tcp_pdu, digests_are_checked)
{
	uint8_t b[128] = { 0 };
	struct nvme_tcp_pdu pdu;
	struct nvme_tcp_error err;
	struct nvme_tcp_params p = params(true, true);

	ch(b, NVME_TCP_CAPSULE_CMD, NVME_TCP_F_HDGSTF | NVME_TCP_F_DDGSTF, 72, 76, 76 + 512 + 4);
	b[8] = 0x02;
	le32_store(b + 72, crc32c(0, b, 72));
	cr_assert_eq(nvme_tcp_pdu_parse(b, 76, &p, &pdu, &err), 0);
	cr_assert_eq(pdu.data_len, 512);
	cr_assert(pdu.has_ddgst);
	b[20] ^= 1; /* a flipped bit in the SQE */
	expect_fail(b, 76, p, NVME_TCP_FES_HEADER_DIGEST_ERROR, 0);
	b[20] ^= 1;
	ch(b, NVME_TCP_CAPSULE_CMD, NVME_TCP_F_HDGSTF, 72, 76, 76 + 512 + 4);
	le32_store(b + 72, crc32c(0, b, 72));
	expect_fail(b, 76, p, NVME_TCP_FES_INVALID_HEADER_FIELD, 1); /* data digest negotiated, DDGSTF missing */
	ch(b, NVME_TCP_CAPSULE_CMD, NVME_TCP_F_HDGSTF | NVME_TCP_F_DDGSTF, 72, 76, 76 + 4);
	le32_store(b + 72, crc32c(0, b, 72));
	expect_fail(b, 76, p, NVME_TCP_FES_INVALID_HEADER_FIELD, 4); /* only a digest, no data */
}

static void h2c(uint8_t *b, uint8_t flags, uint32_t plen, uint8_t pdo, uint32_t datao, uint32_t datal)
{
	memset(b, 0, 24);
	ch(b, NVME_TCP_H2C_DATA, flags, 24, pdo, plen);
	b[8] = 7;    /* CCCID */
	b[10] = 9;   /* TTAG */
	le32_store(b + 12, datao);
	le32_store(b + 16, datal);
}

Test(tcp_pdu, h2c_data_limits)
{
	uint8_t b[32];
	struct nvme_tcp_pdu pdu;
	struct nvme_tcp_error err;
	struct nvme_tcp_params p = params(false, false);

	h2c(b, NVME_TCP_F_LAST_PDU, 24 + 8192, 24, 4096, 8192);
	cr_assert_eq(nvme_tcp_pdu_parse(b, 24, &p, &pdu, &err), 0);
	cr_assert_eq(pdu.u.data.cccid, 7);
	cr_assert_eq(pdu.u.data.ttag, 9);
	cr_assert_eq(pdu.u.data.offset, 4096);
	cr_assert_eq(pdu.data_len, 8192);
	cr_assert(pdu.flags & NVME_TCP_F_LAST_PDU);

	h2c(b, 0, 24 + 100, 24, 0, 99);
	expect_fail(b, 24, p, NVME_TCP_FES_INVALID_HEADER_FIELD, 16);
	h2c(b, 0, 24, 0, 0, 0);
	expect_fail(b, 24, p, NVME_TCP_FES_INVALID_HEADER_FIELD, 16);
	h2c(b, 0, 24 + 32772, 24, 0, 32772);
	expect_fail(b, 24, p, NVME_TCP_FES_DATA_LIMIT_EXCEEDED, 16);
	h2c(b, 0, 24 + 16, 24, 0xfffffff8u, 16);
	expect_fail(b, 24, p, NVME_TCP_FES_DATA_OUT_OF_RANGE, 12);
}

/* C2HData without digests or alignment: the 24-byte header alone, its reserved bytes zero
 * whatever the buffer held, nothing written past it. */
Test(tcp_pdu, c2h_data_plain_is_the_header_alone)
{
	uint8_t b[64];
	struct nvme_tcp_pdu pdu;
	struct nvme_tcp_error err;
	struct nvme_tcp_params p = params(false, false);
	memset(b, 0xff, sizeof(b));
	cr_assert_eq(nvme_tcp_c2h_data_hdr_len(&p), 24);
	size_t n = nvme_tcp_build_c2h_data(b, &p, 7, 4096, 512, true, false);
	cr_assert_eq(n, 24);
	cr_assert_eq(nvme_tcp_pdu_parse(b, n, &p, &pdu, &err), 0, "%s", err.what);
	cr_assert_eq(pdu.plen, 24 + 512);
	cr_assert_eq(pdu.data_off, 24);
	cr_assert_eq(pdu.u.data.cccid, 7);
	cr_assert_eq(pdu.u.data.offset, 4096);
	cr_assert_eq(pdu.u.data.length, 512);
	cr_assert_eq(pdu.flags, NVME_TCP_F_LAST_PDU);
	cr_assert_eq(b[10] | b[11], 0, "TTAG reserved in a C2HData");
	for (size_t i = 20; i < 24; i++)
		cr_assert_eq(b[i], 0, "reserved byte %zu", i);
	for (size_t i = 24; i < sizeof(b); i++)
		cr_assert_eq(b[i], 0xff, "byte %zu past the header untouched", i);
}

/* The fixed-shape builders (nvme_tcp_build_c2h_data_plain, nvme_tcp_build_capsule_resp_plain)
 * write what the general ones write on a connection without header digests or alignment,
 * byte for byte, for every flag combination, and nothing past the header. */
Test(tcp_pdu, plain_builders_match_the_general_ones)
{
	static const uint32_t lens[] = { 1, 512, 4096, 65536, 0xfffffff0u };
	uint8_t a[64], b[64];
	for (int ddgst = 0; ddgst < 2; ddgst++) {
		struct nvme_tcp_params p = params(false, ddgst);
		for (unsigned i = 0; i < sizeof(lens) / sizeof(lens[0]); i++)
			for (int flags = 0; flags < 4; flags++) {
				uint16_t cccid = (uint16_t)(0x1234 + i * 0x1111u);
				uint32_t datao = lens[(i + 1) % 5] - 1;
				memset(a, 0xee, sizeof(a));
				memset(b, 0xee, sizeof(b));
				cr_assert_eq(nvme_tcp_build_c2h_data(a, &p, cccid, datao, lens[i], flags & 1, flags & 2), 24);
				nvme_tcp_build_c2h_data_plain(b, ddgst, cccid, datao, lens[i], flags & 1, flags & 2);
				cr_assert_eq(memcmp(a, b, sizeof(a)), 0, "ddgst %d len %u flags %d", ddgst, lens[i], flags);
			}
	}
	struct nvme_tcp_params p = params(false, false);
	uint8_t cqe[16];
	for (int i = 0; i < 16; i++)
		cqe[i] = (uint8_t)(0xc0 ^ (i * 37));
	memset(a, 0xee, sizeof(a));
	memset(b, 0xee, sizeof(b));
	cr_assert_eq(nvme_tcp_build_capsule_resp(a, &p, cqe), 24);
	nvme_tcp_build_capsule_resp_plain(b, cqe);
	cr_assert_eq(memcmp(a, b, sizeof(a)), 0, "CapsuleResp");
}

Test(tcp_pdu, builders_round_trip)
{
	uint8_t b[256];
	struct nvme_tcp_pdu pdu;
	struct nvme_tcp_error err;
	struct nvme_tcp_params p = params(true, true);
	p.hpda = 3; /* the host wants 16-byte aligned data */

	size_t n = nvme_tcp_build_c2h_data(b, &p, 0x1234, 65536, 4096, true, true);
	cr_assert_eq(n, 32, "24 + 4 digest, padded to 16");
	struct nvme_tcp_params rx = p;
	rx.cpda = p.hpda; /* parse it as its receiver would */
	cr_assert_eq(nvme_tcp_header_size(b, 8, &rx, &err), 28);
	cr_assert_eq(nvme_tcp_pdu_parse(b, 28, &rx, &pdu, &err), 0, "%s", err.what);
	cr_assert_eq(pdu.type, NVME_TCP_C2H_DATA);
	cr_assert_eq(pdu.plen, 32 + 4096 + 4);
	cr_assert_eq(pdu.data_off, 32);
	cr_assert_eq(pdu.u.data.cccid, 0x1234);
	cr_assert_eq(pdu.u.data.offset, 65536);
	cr_assert_eq(pdu.flags, NVME_TCP_F_HDGSTF | NVME_TCP_F_DDGSTF | NVME_TCP_F_LAST_PDU | NVME_TCP_F_SUCCESS);
	for (size_t i = 28; i < 32; i++)
		cr_assert_eq(b[i], 0, "padding is zero");
	n = nvme_tcp_build_c2h_data(b, &p, 1, 0, 100, false, true);
	cr_assert_eq(b[1] & NVME_TCP_F_SUCCESS, 0, "SUCCESS only with LAST_PDU");

	n = nvme_tcp_build_r2t(b, &p, 5, 6, 8192, 16384);
	cr_assert_eq(n, 28);
	cr_assert_eq(nvme_tcp_pdu_parse(b, n, &p, &pdu, &err), 0, "%s", err.what);
	cr_assert_eq(pdu.u.data.ttag, 6);
	cr_assert_eq(pdu.u.data.length, 16384);

	uint8_t cqe[16];
	for (int i = 0; i < 16; i++)
		cqe[i] = (uint8_t)(0xa0 + i);
	n = nvme_tcp_build_capsule_resp(b, &p, cqe);
	cr_assert_eq(n, 28);
	cr_assert_eq(nvme_tcp_pdu_parse(b, n, &p, &pdu, &err), 0, "%s", err.what);
	cr_assert_arr_eq(pdu.u.cmd.sqe, cqe, 16);

	n = nvme_tcp_build_icresp(b, 0, NVME_TCP_DGST_HDGST_ENABLE, 131072);
	cr_assert_eq(n, 128);
	cr_assert_eq(nvme_tcp_pdu_parse(b, n, &p, &pdu, &err), 0, "%s", err.what);
	cr_assert_eq(pdu.u.ic.maxr2t_or_maxh2cdata, 131072);

	uint8_t bad[200];
	memset(bad, 0x5a, sizeof(bad));
	n = nvme_tcp_build_c2h_term_req(b, NVME_TCP_FES_HEADER_DIGEST_ERROR, 0, bad, sizeof(bad));
	cr_assert_eq(n, 24 + 128, "the quote is cut at 128 bytes");
	cr_assert_eq(nvme_tcp_pdu_parse(b, 24, &p, &pdu, &err), 0, "%s", err.what);
	cr_assert_eq(pdu.u.term.fes, NVME_TCP_FES_HEADER_DIGEST_ERROR);
	cr_assert_eq(pdu.data_len, 128);
	cr_assert_str_eq(nvme_tcp_pdu_type_name(NVME_TCP_R2T), "R2T");
	cr_assert_str_eq(nvme_tcp_pdu_type_name(0x42), "?");
}

Test(tcp_pdu, term_req_too_long_and_resp_with_data)
{
	uint8_t b[32] = { 0 };
	struct nvme_tcp_params p = params(false, false);
	ch(b, NVME_TCP_H2C_TERM_REQ, 0, 24, 0, 24 + 129);
	expect_fail(b, 24, p, NVME_TCP_FES_INVALID_HEADER_FIELD, 4);
	ch(b, NVME_TCP_CAPSULE_RESP, 0, 24, 0, 28);
	expect_fail(b, 24, p, NVME_TCP_FES_INVALID_HEADER_FIELD, 4);
}

/* PDO beyond PLEN must not wrap into a huge data length (issue 13, 7). */
Test(tcp_pdu, pdo_beyond_plen_is_refused)
{
	uint8_t b[72] = { 0 };
	ch(b, NVME_TCP_CAPSULE_CMD, 0, 72, 200, 80); /* PLEN 80: 8 bytes after the header, PDO 200 */
	expect_fail(b, sizeof(b), params(false, false), NVME_TCP_FES_INVALID_HEADER_FIELD, 3);
}
