// sources: drivers/nvme/target/nvmet_tcp_pdu.c lib/crc32.c lib/clock.c
/*
 * libFuzzer harness: NVMe/TCP PDU headers as a controller receives them, under every
 * digest/alignment setting (chosen by the first byte). Invariants: a refused header names
 * a defined Fatal Error Status; an accepted one describes data that lies inside PLEN,
 * after the header, and within the negotiated limits. The fixed-shape builders write what
 * the general ones do (their fields taken from the input).
 */
#include <assert.h>
#include <stdint.h>
#include <string.h>
#include "drivers/nvme/target/nvmet_tcp_pdu.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	struct nvme_tcp_params p = {
		.hdgst = data[0] & 1, .ddgst = data[0] & 2, .cpda = (data[0] >> 2) & 7,
		.hpda = 0, .maxh2cdata = 65536, .max_icd = 8192,
	};
	const uint8_t *hdr = data + 1;
	size_t len = size - 1;
	if (len >= 16) {
		/* the fixed-shape builders write what the general ones do without header digests
		 * or alignment (fields and flags from the input) */
		struct nvme_tcp_params plain = p;
		plain.hdgst = false;
		uint8_t a[NVME_TCP_DATA_HLEN + 8], b[sizeof(a)];
		memset(a, 0x5c, sizeof(a));
		memset(b, 0x5c, sizeof(b));
		uint16_t cccid = (uint16_t)(hdr[0] | hdr[1] << 8);
		uint32_t datao, datal;
		memcpy(&datao, hdr + 2, 4);
		memcpy(&datal, hdr + 6, 4);
		bool last = hdr[10] & 1, success = hdr[10] & 2;
		nvme_tcp_build_c2h_data(a, &plain, cccid, datao, datal, last, success);
		nvme_tcp_build_c2h_data_plain(b, plain.ddgst, cccid, datao, datal, last, success);
		assert(!memcmp(a, b, sizeof(a)));
		nvme_tcp_build_capsule_resp(a, &plain, hdr); /* (the CQE: the input's first 16 bytes) */
		nvme_tcp_build_capsule_resp_plain(b, hdr);
		assert(!memcmp(a, b, sizeof(a)));
	}
	struct nvme_tcp_error err;
	struct nvme_tcp_pdu pdu;

	int need = nvme_tcp_header_size(hdr, len, &p, &err);
	if (need < 0) {
		assert(err.fes >= NVME_TCP_FES_INVALID_HEADER_FIELD && err.fes <= NVME_TCP_FES_UNSUPPORTED_PARAMETER);
		return 0;
	}
	if (need == 0 || (size_t)need > len)
		return 0;
	assert(need <= NVME_TCP_MAX_HEADER);
	{
		/* the framer's parse (its CapsuleCmd fast path included) decides as the full one:
		 * the same answer, the same FES and FEI, the same fields (the SQE apart) */
		struct nvme_tcp_pdu a, b;
		struct nvme_tcp_error ea = { 0 }, eb = { 0 };
		int ra = nvme_tcp_pdu_parse_sized(hdr, (size_t)need, need, &p, &a, &ea);
		int rb = nvme_tcp_pdu_parse_framed(hdr, (size_t)need, need, &p, &b, &eb);
		assert(ra == rb);
		if (ra < 0) {
			assert(ea.fes == eb.fes && ea.fei == eb.fei);
		} else {
			if (a.type == NVME_TCP_CAPSULE_CMD)
				memset(&a.u, 0, sizeof(a.u));
			assert(a.type == b.type && a.flags == b.flags && a.hlen == b.hlen && a.pdo == b.pdo &&
			       a.plen == b.plen && a.hdr_bytes == b.hdr_bytes && a.data_off == b.data_off &&
			       a.data_len == b.data_len && a.has_ddgst == b.has_ddgst &&
			       !memcmp(&a.u, &b.u, sizeof(a.u)));
		}
	}
	if (nvme_tcp_pdu_parse(hdr, (size_t)need, &p, &pdu, &err) < 0) {
		assert(err.fes >= NVME_TCP_FES_INVALID_HEADER_FIELD && err.fes <= NVME_TCP_FES_UNSUPPORTED_PARAMETER);
		assert(err.what);
		return 0;
	}
	assert(pdu.hdr_bytes == (uint32_t)need && pdu.hdr_bytes <= pdu.plen);
	if (pdu.data_len) {
		assert(pdu.data_off >= pdu.hlen);
		assert(pdu.data_off <= pdu.plen && pdu.data_len <= pdu.plen - pdu.data_off);
		if (pdu.type == NVME_TCP_CAPSULE_CMD)
			assert(pdu.data_len <= p.max_icd);
		if (pdu.type == NVME_TCP_H2C_DATA)
			assert(pdu.data_len <= p.maxh2cdata && pdu.u.data.length == pdu.data_len);
	}
	/* a header the parser accepted can be quoted in a termination request */
	uint8_t term[NVME_TCP_TERM_HLEN + NVME_TCP_TERM_MAX_DATA];
	size_t n = nvme_tcp_build_c2h_term_req(term, NVME_TCP_FES_PDU_SEQUENCE_ERROR, 0, hdr, (size_t)need);
	assert(n <= sizeof(term));
	return 0;
}
