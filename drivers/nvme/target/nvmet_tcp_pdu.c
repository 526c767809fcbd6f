/*
 * nvmet_tcp_pdu.c - NVMe/TCP PDU parsing and building (see nvmet_tcp_pdu.h).
 *
 * Received bytes are untrusted: every length is checked in subtraction form before it is
 * used, a header is copied into a local of its struct (nvmet_tcp_pdu.h) only once enough
 * bytes are known to be there, its le*_t fields become host-order values through le*_get,
 * and the received header is never modified in place.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include "../../../lib/byteorder.h"
#include "../../../lib/crc32.h"
#include "nvmet_tcp_pdu.h"

/* Byte offsets of header fields, for the FEI of a termination request. */
#define CH_TYPE offsetof(struct nvme_tcp_ch, pdu_type)
#define CH_FLAGS offsetof(struct nvme_tcp_ch, flags)
#define CH_HLEN offsetof(struct nvme_tcp_ch, hlen)
#define CH_PDO offsetof(struct nvme_tcp_ch, pdo)
#define CH_PLEN offsetof(struct nvme_tcp_ch, plen)
#define IC_PFV offsetof(struct nvme_tcp_ic_pdu, pfv)
#define IC_PDA offsetof(struct nvme_tcp_ic_pdu, pda)
#define IC_DGST offsetof(struct nvme_tcp_ic_pdu, dgst)
#define DATA_DATAO offsetof(struct nvme_tcp_data_pdu, datao)
#define DATA_DATAL offsetof(struct nvme_tcp_data_pdu, datal)

static int fail(struct nvme_tcp_error *err, uint16_t fes, uint32_t fei, const char *what)
{
	err->fes = fes;
	err->fei = fei;
	err->what = what;
	return -EPROTO;
}

/* The header length each type must have; 0 for a type a controller never receives
 * or that does not exist. */
static unsigned expected_hlen(uint8_t type)
{
	switch (type) {
	case NVME_TCP_ICREQ:
	case NVME_TCP_ICRESP:
		return NVME_TCP_IC_LEN;
	case NVME_TCP_H2C_TERM_REQ:
	case NVME_TCP_C2H_TERM_REQ:
		return NVME_TCP_TERM_HLEN;
	case NVME_TCP_CAPSULE_CMD:
		return NVME_TCP_CMD_HLEN;
	case NVME_TCP_CAPSULE_RESP:
		return NVME_TCP_RESP_HLEN;
	case NVME_TCP_H2C_DATA:
	case NVME_TCP_C2H_DATA:
	case NVME_TCP_R2T:
		return NVME_TCP_DATA_HLEN;
	default:
		return 0;
	}
}

/* Connection set-up and termination PDUs never carry digests. */
static bool digests_apply(uint8_t type)
{
	return type != NVME_TCP_ICREQ && type != NVME_TCP_ICRESP && type != NVME_TCP_H2C_TERM_REQ &&
	       type != NVME_TCP_C2H_TERM_REQ;
}

/* Header bytes to read, from the common header. */
int nvme_tcp_header_size(const uint8_t *ch, size_t avail, const struct nvme_tcp_params *p,
			 struct nvme_tcp_error *err)
{
	struct nvme_tcp_ch c;

	if (avail < sizeof(c))
		return 0;
	memcpy(&c, ch, sizeof(c));
	uint8_t type = c.pdu_type, flags = c.flags, hlen = c.hlen;
	uint32_t plen = le32_get(c.plen);
	unsigned want = expected_hlen(type);

	if (!want)
		return fail(err, NVME_TCP_FES_INVALID_HEADER_FIELD, CH_TYPE, "unknown PDU type");
	if (hlen != want)
		return fail(err, NVME_TCP_FES_INVALID_HEADER_FIELD, CH_HLEN, "HLEN wrong for the PDU type");
	unsigned hdr = hlen;
	if (digests_apply(type)) {
		if (!!(flags & NVME_TCP_F_HDGSTF) != p->hdgst)
			return fail(err, NVME_TCP_FES_INVALID_HEADER_FIELD, CH_FLAGS,
				    "HDGSTF does not match the negotiated header digest");
		if (p->hdgst)
			hdr += NVME_TCP_DIGEST_LEN;
	} else if (flags & (NVME_TCP_F_HDGSTF | NVME_TCP_F_DDGSTF)) {
		return fail(err, NVME_TCP_FES_INVALID_HEADER_FIELD, CH_FLAGS, "digest flag on a PDU without digests");
	}
	if (plen < hdr)
		return fail(err, NVME_TCP_FES_INVALID_HEADER_FIELD, CH_PLEN, "PLEN shorter than the header");
	return (int)hdr;
}

/* Validate PDO and the data length of a data-carrying PDU. */
static int parse_data_layout(const struct nvme_tcp_params *p, struct nvme_tcp_pdu *out, struct nvme_tcp_error *err)
{
	uint32_t ddgst = p->ddgst ? NVME_TCP_DIGEST_LEN : 0;
	uint32_t align = ((uint32_t)p->cpda + 1) * 4;

	if (out->plen == out->hdr_bytes) {
		if (out->pdo != 0)
			return fail(err, NVME_TCP_FES_INVALID_HEADER_FIELD, CH_PDO, "PDO set on a PDU without data");
		if (out->flags & NVME_TCP_F_DDGSTF)
			return fail(err, NVME_TCP_FES_INVALID_HEADER_FIELD, CH_FLAGS, "DDGSTF set on a PDU without data");
		return 0;
	}
	if (!!(out->flags & NVME_TCP_F_DDGSTF) != p->ddgst)
		return fail(err, NVME_TCP_FES_INVALID_HEADER_FIELD, CH_FLAGS,
			    "DDGSTF does not match the negotiated data digest");
	if (out->pdo < out->hdr_bytes || out->pdo % align)
		return fail(err, NVME_TCP_FES_INVALID_HEADER_FIELD, CH_PDO, "PDO inside the header or misaligned");
	if (out->pdo > out->plen)
		return fail(err, NVME_TCP_FES_INVALID_HEADER_FIELD, CH_PDO, "PDO beyond PLEN");
	if (out->plen - out->pdo <= ddgst)
		return fail(err, NVME_TCP_FES_INVALID_HEADER_FIELD, CH_PLEN, "PLEN leaves no data after PDO");
	out->data_off = out->pdo;
	out->data_len = out->plen - out->pdo - ddgst;
	out->has_ddgst = p->ddgst;
	return 0;
}

/* Parse a whole header. */
int nvme_tcp_pdu_parse(const uint8_t *hdr, size_t len, const struct nvme_tcp_params *p,
		       struct nvme_tcp_pdu *out, struct nvme_tcp_error *err)
{
	return nvme_tcp_pdu_parse_sized(hdr, len, nvme_tcp_header_size(hdr, len, p, err), p, out, err);
}

/* Parse a whole header whose common header nvme_tcp_header_size() already checked; sqe:
 * copy a CapsuleCmd's SQE into out->u.cmd (else it stays zero: the caller reads it from hdr). */
static inline __attribute__((always_inline)) int parse_sized(const uint8_t *hdr, size_t len, int size,
							     const struct nvme_tcp_params *p,
		       struct nvme_tcp_pdu *out, struct nvme_tcp_error *err, bool sqe)
{
	union {                 /* the header, copied once its length is checked */
		struct nvme_tcp_ch ch;
		struct nvme_tcp_ic_pdu ic;
		struct nvme_tcp_term_pdu term;
		struct nvme_tcp_cmd_pdu cmd;
		struct nvme_tcp_resp_pdu resp;
		struct nvme_tcp_data_pdu data;
	} h;
	int rc;

	if (size < 0)
		return size;
	if (size == 0 || len < (size_t)size)
		return fail(err, NVME_TCP_FES_INVALID_HEADER_FIELD, CH_HLEN, "header shorter than HLEN");
	/* HLEN is the size of the type's struct (nvme_tcp_header_size): each case below
	 * copies that struct whole */
	memcpy(&h.ch, hdr, sizeof(h.ch));
	memset(out, 0, sizeof(*out));
	out->type = h.ch.pdu_type;
	out->flags = h.ch.flags;
	out->hlen = h.ch.hlen;
	out->pdo = h.ch.pdo;
	out->plen = le32_get(h.ch.plen);
	out->hdr_bytes = (uint32_t)size;

	if (digests_apply(out->type) && p->hdgst) {
		uint32_t want = crc32c(0, hdr, out->hlen);
		if (le32_load(hdr + out->hlen) != want)
			return fail(err, NVME_TCP_FES_HEADER_DIGEST_ERROR, 0, "header digest mismatch");
	}

	switch (out->type) {
	case NVME_TCP_ICREQ:
	case NVME_TCP_ICRESP:
		if (out->plen != NVME_TCP_IC_LEN)
			return fail(err, NVME_TCP_FES_INVALID_HEADER_FIELD, CH_PLEN, "PLEN of ICReq/ICResp is not 128");
		if (out->pdo)
			return fail(err, NVME_TCP_FES_INVALID_HEADER_FIELD, CH_PDO, "PDO set on ICReq/ICResp");
		if (out->flags)
			return fail(err, NVME_TCP_FES_INVALID_HEADER_FIELD, CH_FLAGS, "flags set on ICReq/ICResp");
		memcpy(&h.ic, hdr, sizeof(h.ic));
		out->u.ic.pfv = le16_get(h.ic.pfv);
		out->u.ic.pda = h.ic.pda;
		out->u.ic.dgst = h.ic.dgst;
		out->u.ic.maxr2t_or_maxh2cdata = le32_get(h.ic.maxr2t);
		if (out->u.ic.pfv != NVME_TCP_PFV_1_0)
			return fail(err, NVME_TCP_FES_UNSUPPORTED_PARAMETER, IC_PFV, "unsupported PDU format version");
		if (out->u.ic.pda > NVME_TCP_MAX_HPDA)
			return fail(err, NVME_TCP_FES_UNSUPPORTED_PARAMETER, IC_PDA, "PDU data alignment above 31");
		if (out->u.ic.dgst & ~(NVME_TCP_DGST_HDGST_ENABLE | NVME_TCP_DGST_DDGST_ENABLE))
			return fail(err, NVME_TCP_FES_UNSUPPORTED_PARAMETER, IC_DGST, "reserved DGST bits set");
		return 0;
	case NVME_TCP_H2C_TERM_REQ:
	case NVME_TCP_C2H_TERM_REQ:
		if (out->plen - out->hlen > NVME_TCP_TERM_MAX_DATA)
			return fail(err, NVME_TCP_FES_INVALID_HEADER_FIELD, CH_PLEN, "termination request too long");
		memcpy(&h.term, hdr, sizeof(h.term));
		out->u.term.fes = le16_get(h.term.fes);
		out->u.term.fei = le32_get(h.term.fei);
		out->data_off = out->hlen;
		out->data_len = out->plen - out->hlen;
		return 0;
	case NVME_TCP_CAPSULE_RESP:
	case NVME_TCP_R2T:
		if (out->plen != out->hdr_bytes || out->pdo)
			return fail(err, NVME_TCP_FES_INVALID_HEADER_FIELD, CH_PLEN, "data on a PDU that carries none");
		if (out->flags & NVME_TCP_F_DDGSTF)
			return fail(err, NVME_TCP_FES_INVALID_HEADER_FIELD, CH_FLAGS, "DDGSTF set on a PDU without data");
		if (out->type == NVME_TCP_CAPSULE_RESP) {
			memcpy(out->u.cmd.sqe, hdr + offsetof(struct nvme_tcp_resp_pdu, cqe), sizeof(h.resp.cqe));
		} else {
			memcpy(&h.data, hdr, sizeof(h.data));
			out->u.data.cccid = le16_get(h.data.cccid);
			out->u.data.ttag = le16_get(h.data.ttag);
			out->u.data.offset = le32_get(h.data.datao);
			out->u.data.length = le32_get(h.data.datal);
		}
		return 0;
	default:
		break;
	}

	/* CapsuleCmd, H2CData, C2HData */
	if ((rc = parse_data_layout(p, out, err)))
		return rc;
	if (out->type == NVME_TCP_CAPSULE_CMD) {
		if (sqe) /* the SQE bytes as sent */
			memcpy(out->u.cmd.sqe, hdr + offsetof(struct nvme_tcp_cmd_pdu, sqe), sizeof(h.cmd.sqe));
		if (out->data_len > p->max_icd)
			return fail(err, NVME_TCP_FES_DATA_LIMIT_EXCEEDED, CH_PLEN, "in-capsule data above the limit");
		return 0;
	}
	memcpy(&h.data, hdr, sizeof(h.data));
	out->u.data.cccid = le16_get(h.data.cccid);
	out->u.data.ttag = le16_get(h.data.ttag);
	out->u.data.offset = le32_get(h.data.datao);
	out->u.data.length = le32_get(h.data.datal);
	if (out->u.data.length == 0 || out->u.data.length != out->data_len)
		return fail(err, NVME_TCP_FES_INVALID_HEADER_FIELD, DATA_DATAL, "DATAL does not match PLEN and PDO");
	if (out->type == NVME_TCP_H2C_DATA && out->u.data.length > p->maxh2cdata)
		return fail(err, NVME_TCP_FES_DATA_LIMIT_EXCEEDED, DATA_DATAL, "H2CData above MAXH2CDATA");
	if (out->u.data.offset > UINT32_MAX - out->u.data.length)
		return fail(err, NVME_TCP_FES_DATA_OUT_OF_RANGE, DATA_DATAO, "DATAO + DATAL overflows");
	return 0;
}

static struct nvme_tcp_ch make_ch(uint8_t type, uint8_t flags, uint8_t hlen, uint8_t pdo, uint32_t plen)
{
	return (struct nvme_tcp_ch){ .pdu_type = type, .flags = flags, .hlen = hlen, .pdo = pdo, .plen = le32_make(plen) };
}

/* Append the header digest when negotiated; returns the header bytes. */
static size_t finish_header(uint8_t *buf, const struct nvme_tcp_params *p, size_t hlen)
{
	if (!p->hdgst)
		return hlen;
	le32_store(buf + hlen, crc32c(0, buf, hlen));
	return hlen + NVME_TCP_DIGEST_LEN;
}

/* ICResp. */
size_t nvme_tcp_build_icresp(uint8_t *buf, uint8_t cpda, uint8_t dgst, uint32_t maxh2cdata)
{
	struct nvme_tcp_ic_pdu *h = (struct nvme_tcp_ic_pdu *)buf;

	memset(h, 0, sizeof(*h));
	h->ch = make_ch(NVME_TCP_ICRESP, 0, NVME_TCP_IC_LEN, 0, NVME_TCP_IC_LEN);
	h->pfv = le16_make(NVME_TCP_PFV_1_0);
	h->pda = cpda;
	h->dgst = dgst;
	h->maxr2t = le32_make(maxh2cdata); /* MAXH2CDATA */
	return sizeof(*h);
}

/* CapsuleResp. */
size_t nvme_tcp_build_capsule_resp(uint8_t *buf, const struct nvme_tcp_params *p, const uint8_t cqe[16])
{
	struct nvme_tcp_resp_pdu *h = (struct nvme_tcp_resp_pdu *)buf;
	size_t plen = sizeof(*h) + (p->hdgst ? NVME_TCP_DIGEST_LEN : 0);

	h->ch = make_ch(NVME_TCP_CAPSULE_RESP, p->hdgst ? NVME_TCP_F_HDGSTF : 0, sizeof(*h), 0, (uint32_t)plen);
	memcpy(h->cqe, cqe, sizeof(h->cqe));
	return finish_header(buf, p, sizeof(*h));
}

/* C2HData header (+ digest + padding up to PDO). */
size_t nvme_tcp_build_c2h_data(uint8_t *buf, const struct nvme_tcp_params *p, uint16_t cccid,
			       uint32_t datao, uint32_t datal, bool last, bool success)
{
	struct nvme_tcp_data_pdu *h = (struct nvme_tcp_data_pdu *)buf;
	size_t pdo = nvme_tcp_c2h_data_hdr_len(p);
	uint8_t flags = (p->hdgst ? NVME_TCP_F_HDGSTF : 0) | (p->ddgst ? NVME_TCP_F_DDGSTF : 0) |
			(last ? NVME_TCP_F_LAST_PDU : 0) | (last && success ? NVME_TCP_F_SUCCESS : 0);

	/* the header in fixed-size stores (reserved bytes zero); the digest and pad after it,
	 * when there are any, zeroed apart */
	*h = (struct nvme_tcp_data_pdu){
		.ch = make_ch(NVME_TCP_C2H_DATA, flags, sizeof(*h), (uint8_t)pdo,
			      (uint32_t)(pdo + datal + (p->ddgst ? NVME_TCP_DIGEST_LEN : 0))),
		.cccid = le16_make(cccid),
		.datao = le32_make(datao),
		.datal = le32_make(datal),
	};
	if (pdo > sizeof(*h))
		memset(buf + sizeof(*h), 0, pdo - sizeof(*h));
	finish_header(buf, p, sizeof(*h));
	return pdo;
}

/* A C2HData header without header digest or pad (nvme_tcp_build_c2h_data_plain, the header):
 * the common header, CCCID and DATAO, DATAL and the reserved bytes as three 8-byte stores. */
void nvme_tcp_build_c2h_data_plain(uint8_t *buf, bool ddgst, uint16_t cccid, uint32_t datao, uint32_t datal,
				   bool last, bool success)
{
	uint64_t flags = (ddgst ? NVME_TCP_F_DDGSTF : 0) | (last ? NVME_TCP_F_LAST_PDU : 0) |
			 (last && success ? NVME_TCP_F_SUCCESS : 0);
	uint64_t plen = (uint64_t)NVME_TCP_DATA_HLEN + datal + (ddgst ? NVME_TCP_DIGEST_LEN : 0);
	_Static_assert(offsetof(struct nvme_tcp_data_pdu, cccid) == 8 && offsetof(struct nvme_tcp_data_pdu, datao) == 12 &&
			       offsetof(struct nvme_tcp_data_pdu, datal) == 16,
		       "C2HData fields where the stores put them");
	le64_store(buf, NVME_TCP_C2H_DATA | flags << 8 | (uint64_t)NVME_TCP_DATA_HLEN << 16 |
				(uint64_t)NVME_TCP_DATA_HLEN << 24 | plen << 32);
	le64_store(buf + 8, cccid | (uint64_t)datao << 32); /* TTAG reserved in C2HData: 0 */
	le64_store(buf + 16, datal);                          /* and the reserved bytes */
}

/* A CapsuleResp without header digest (nvme_tcp_build_capsule_resp_plain, the header). */
void nvme_tcp_build_capsule_resp_plain(uint8_t *buf, const uint8_t cqe[16])
{
	le64_store(buf, NVME_TCP_CAPSULE_RESP | (uint64_t)NVME_TCP_RESP_HLEN << 16 | (uint64_t)NVME_TCP_RESP_HLEN << 32);
	memcpy(buf + NVME_TCP_CH_LEN, cqe, 16);
}

/* R2T. */
size_t nvme_tcp_build_r2t(uint8_t *buf, const struct nvme_tcp_params *p, uint16_t cccid, uint16_t ttag,
			  uint32_t r2to, uint32_t r2tl)
{
	struct nvme_tcp_data_pdu *h = (struct nvme_tcp_data_pdu *)buf;
	size_t plen = sizeof(*h) + (p->hdgst ? NVME_TCP_DIGEST_LEN : 0);

	memset(h, 0, sizeof(*h));
	h->ch = make_ch(NVME_TCP_R2T, p->hdgst ? NVME_TCP_F_HDGSTF : 0, sizeof(*h), 0, (uint32_t)plen);
	h->cccid = le16_make(cccid);
	h->ttag = le16_make(ttag);
	h->datao = le32_make(r2to); /* R2TO */
	h->datal = le32_make(r2tl); /* R2TL */
	return finish_header(buf, p, sizeof(*h));
}

/* C2HTermReq. */
size_t nvme_tcp_build_c2h_term_req(uint8_t *buf, uint16_t fes, uint32_t fei, const uint8_t *hdr, size_t hdr_len)
{
	struct nvme_tcp_term_pdu *h = (struct nvme_tcp_term_pdu *)buf;
	size_t quote = hdr_len < NVME_TCP_TERM_MAX_DATA ? hdr_len : NVME_TCP_TERM_MAX_DATA;

	memset(h, 0, sizeof(*h));
	h->ch = make_ch(NVME_TCP_C2H_TERM_REQ, 0, sizeof(*h), 0, (uint32_t)(sizeof(*h) + quote));
	h->fes = le16_make(fes);
	h->fei = le32_make(fei);
	if (quote)
		memcpy(buf + sizeof(*h), hdr, quote);
	return sizeof(*h) + quote;
}

/* Type name. */
const char *nvme_tcp_pdu_type_name(uint8_t type)
{
	static const char *const names[] = { "ICReq", "ICResp", "H2CTermReq", "C2HTermReq", "CapsuleCmd",
					     "CapsuleResp", "H2CData", "C2HData", "?", "R2T" };
	return type < sizeof(names) / sizeof(names[0]) ? names[type] : "?";
}

int nvme_tcp_pdu_parse_sized(const uint8_t *hdr, size_t len, int size, const struct nvme_tcp_params *p,
			     struct nvme_tcp_pdu *out, struct nvme_tcp_error *err)
{
	return parse_sized(hdr, len, size, p, out, err, true);
}

/*
 * A CapsuleCmd without a header digest, whose common header nvme_tcp_header_size() checked
 * (type, HLEN 72, HDGSTF clear, PLEN >= 72): the checks and the result of parse_sized() for
 * it, in the order it makes them (the same FES and FEI for the first field that is wrong),
 * without the type switch, the digest tests or the union of header copies.
 */
static int parse_capsule_cmd(const uint8_t *hdr, const struct nvme_tcp_params *p, struct nvme_tcp_pdu *out,
			     struct nvme_tcp_error *err)
{
	struct nvme_tcp_ch ch;
	memcpy(&ch, hdr, sizeof(ch));
	const uint32_t plen = le32_get(ch.plen), pdo = ch.pdo;
	memset(out, 0, sizeof(*out));
	out->type = NVME_TCP_CAPSULE_CMD;
	out->flags = ch.flags;
	out->hlen = ch.hlen;
	out->pdo = ch.pdo;
	out->plen = plen;
	out->hdr_bytes = NVME_TCP_CMD_HLEN;
	if (plen == NVME_TCP_CMD_HLEN) { /* no in-capsule data */
		if (pdo != 0)
			return fail(err, NVME_TCP_FES_INVALID_HEADER_FIELD, CH_PDO, "PDO set on a PDU without data");
		if (ch.flags & NVME_TCP_F_DDGSTF)
			return fail(err, NVME_TCP_FES_INVALID_HEADER_FIELD, CH_FLAGS, "DDGSTF set on a PDU without data");
		return 0;
	}
	const uint32_t ddgst = p->ddgst ? NVME_TCP_DIGEST_LEN : 0;
	if (!!(ch.flags & NVME_TCP_F_DDGSTF) != p->ddgst)
		return fail(err, NVME_TCP_FES_INVALID_HEADER_FIELD, CH_FLAGS,
			    "DDGSTF does not match the negotiated data digest");
	if (pdo < NVME_TCP_CMD_HLEN || pdo % (((uint32_t)p->cpda + 1) * 4))
		return fail(err, NVME_TCP_FES_INVALID_HEADER_FIELD, CH_PDO, "PDO inside the header or misaligned");
	if (pdo > plen)
		return fail(err, NVME_TCP_FES_INVALID_HEADER_FIELD, CH_PDO, "PDO beyond PLEN");
	if (plen - pdo <= ddgst)
		return fail(err, NVME_TCP_FES_INVALID_HEADER_FIELD, CH_PLEN, "PLEN leaves no data after PDO");
	out->data_off = pdo;
	out->data_len = plen - pdo - ddgst;
	out->has_ddgst = p->ddgst;
	if (out->data_len > p->max_icd)
		return fail(err, NVME_TCP_FES_DATA_LIMIT_EXCEEDED, CH_PLEN, "in-capsule data above the limit");
	return 0;
}

/* nvme_tcp_pdu_parse_sized() without the copy of a CapsuleCmd's SQE (see the header). */
int nvme_tcp_pdu_parse_framed(const uint8_t *hdr, size_t len, int size, const struct nvme_tcp_params *p,
			      struct nvme_tcp_pdu *out, struct nvme_tcp_error *err)
{
	/* the commands (size is the checked HLEN, 72 only for a CapsuleCmd without header
	 * digest: ICReq/ICResp are 128, the others shorter) */
	if (size == NVME_TCP_CMD_HLEN && len >= NVME_TCP_CMD_HLEN && hdr[0] == NVME_TCP_CAPSULE_CMD && !p->hdgst)
		return parse_capsule_cmd(hdr, p, out, err);
	return parse_sized(hdr, len, size, p, out, err, false);
}
