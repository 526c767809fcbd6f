/*
 * nvmet_tcp_pdu.h - NVMe/TCP PDUs (NVMe over TCP Transport Specification 1.0): the wire
 * formats, a validating header parser and header builders.
 *
 * The headers are the packed structs below (struct nvme_tcp_ch and one per PDU kind, fields
 * in lib/byteorder.h's le*_t types and the specification's names). The transport reads a
 * PDU in two steps: the 8-byte common header tells how many header bytes follow
 * (nvme_tcp_header_size); the whole header (HLEN bytes plus the header digest when
 * negotiated) is then copied, once its length is checked, into a local of its struct and
 * parsed into a struct nvme_tcp_pdu of host-order values (nvme_tcp_pdu_parse). The PDU data that follows stays where the NIC put it (device
 * memory fragments); the parser only tells where it starts (PDO) and how long it is.
 * Every rule broken yields the Fatal Error Status and Field Error Information that the
 * controller puts in its C2HTermReq, so a hostile PDU ends in a termination request,
 * never in a crash.
 */
#ifndef DRIVERS_NVME_TARGET_NVMET_TCP_PDU_H
#define DRIVERS_NVME_TARGET_NVMET_TCP_PDU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "../../../lib/byteorder.h"

/* PDU-Type (common header byte 0). */
enum nvme_tcp_pdu_type {
	NVME_TCP_ICREQ = 0x00,
	NVME_TCP_ICRESP = 0x01,
	NVME_TCP_H2C_TERM_REQ = 0x02,
	NVME_TCP_C2H_TERM_REQ = 0x03,
	NVME_TCP_CAPSULE_CMD = 0x04,
	NVME_TCP_CAPSULE_RESP = 0x05,
	NVME_TCP_H2C_DATA = 0x06,
	NVME_TCP_C2H_DATA = 0x07,
	NVME_TCP_R2T = 0x09,
};

/* FLAGS (common header byte 1). */
#define NVME_TCP_F_HDGSTF 0x01   /* a header digest follows the header */
#define NVME_TCP_F_DDGSTF 0x02   /* a data digest follows the data */
#define NVME_TCP_F_LAST_PDU 0x04 /* H2CData/C2HData: last PDU of the transfer */
#define NVME_TCP_F_SUCCESS 0x08  /* C2HData: the command completed; no CapsuleResp follows */

/* ICReq/ICResp DGST field. */
#define NVME_TCP_DGST_HDGST_ENABLE 0x01
#define NVME_TCP_DGST_DDGST_ENABLE 0x02

/* Fatal Error Status of a termination request. */
enum nvme_tcp_fes {
	NVME_TCP_FES_INVALID_HEADER_FIELD = 0x01,
	NVME_TCP_FES_PDU_SEQUENCE_ERROR = 0x02,
	NVME_TCP_FES_HEADER_DIGEST_ERROR = 0x03,
	NVME_TCP_FES_DATA_OUT_OF_RANGE = 0x04,
	NVME_TCP_FES_DATA_LIMIT_EXCEEDED = 0x05, /* also: R2T limit exceeded */
	NVME_TCP_FES_UNSUPPORTED_PARAMETER = 0x06,
};

#define NVME_TCP_CH_LEN 8            /* common header */
#define NVME_TCP_DIGEST_LEN 4
#define NVME_TCP_IC_LEN 128          /* ICReq / ICResp: HLEN = PLEN */
#define NVME_TCP_CMD_HLEN 72         /* CapsuleCmd: CH + SQE */
#define NVME_TCP_RESP_HLEN 24        /* CapsuleResp: CH + CQE */
#define NVME_TCP_DATA_HLEN 24        /* H2CData, C2HData, R2T */
#define NVME_TCP_TERM_HLEN 24        /* H2CTermReq, C2HTermReq */
#define NVME_TCP_TERM_MAX_DATA 128   /* a termination request quotes at most 128 header bytes */
#define NVME_TCP_MAX_HEADER (NVME_TCP_IC_LEN + NVME_TCP_DIGEST_LEN)
#define NVME_TCP_PFV_1_0 0
#define NVME_TCP_MAX_HPDA 31

/* --- the wire formats (NVMe/TCP 1.0, 3.6.2); packed, any alignment --- */

struct nvme_tcp_ch {            /* PDU Common Header */
	uint8_t pdu_type;           /* PDU-Type */
	uint8_t flags;              /* FLAGS */
	uint8_t hlen;               /* Header Length */
	uint8_t pdo;                /* PDU Data Offset */
	le32_t plen;                /* PDU Length */
} __attribute__((packed));

struct nvme_tcp_ic_pdu {        /* ICReq, ICResp */
	struct nvme_tcp_ch ch;
	le16_t pfv;                 /* PDU Format Version */
	uint8_t pda;                /* ICReq HPDA, ICResp CPDA */
	uint8_t dgst;               /* HDGST_ENABLE, DDGST_ENABLE */
	le32_t maxr2t;              /* ICReq MAXR2T (0's based), ICResp MAXH2CDATA */
	uint8_t rsvd[112];
} __attribute__((packed));

struct nvme_tcp_term_pdu {      /* H2CTermReq, C2HTermReq; the quoted header follows */
	struct nvme_tcp_ch ch;
	le16_t fes;                 /* Fatal Error Status */
	le32_t fei;                 /* Fatal Error Information */
	uint8_t rsvd[10];
} __attribute__((packed));

struct nvme_tcp_cmd_pdu {       /* CapsuleCmd; in-capsule data at PDO */
	struct nvme_tcp_ch ch;
	uint8_t sqe[64];            /* struct nvme_sqe */
} __attribute__((packed));

struct nvme_tcp_resp_pdu {      /* CapsuleResp */
	struct nvme_tcp_ch ch;
	uint8_t cqe[16];            /* struct nvme_cqe */
} __attribute__((packed));

struct nvme_tcp_data_pdu {      /* H2CData, C2HData, R2T */
	struct nvme_tcp_ch ch;
	le16_t cccid;               /* Command Capsule CID */
	le16_t ttag;                /* Transfer Tag (H2CData, R2T) */
	le32_t datao;               /* DATAO; R2TO in an R2T */
	le32_t datal;               /* DATAL; R2TL in an R2T */
	uint8_t rsvd[4];
} __attribute__((packed));

_Static_assert(sizeof(struct nvme_tcp_ch) == NVME_TCP_CH_LEN, "common header");
_Static_assert(sizeof(struct nvme_tcp_ic_pdu) == NVME_TCP_IC_LEN, "ICReq/ICResp");
_Static_assert(sizeof(struct nvme_tcp_term_pdu) == NVME_TCP_TERM_HLEN, "termination request header");
_Static_assert(sizeof(struct nvme_tcp_cmd_pdu) == NVME_TCP_CMD_HLEN, "CapsuleCmd header");
_Static_assert(sizeof(struct nvme_tcp_resp_pdu) == NVME_TCP_RESP_HLEN, "CapsuleResp header");
_Static_assert(sizeof(struct nvme_tcp_data_pdu) == NVME_TCP_DATA_HLEN, "H2CData/C2HData/R2T header");

/* What the connection negotiated (from ICReq/ICResp); before that, all zero. */
struct nvme_tcp_params {
	bool hdgst;             /* header digests on every PDU after ICReq/ICResp */
	bool ddgst;             /* data digests on every PDU that carries data */
	uint8_t cpda;           /* controller PDU data alignment (0's based dwords) we asked for */
	uint8_t hpda;           /* host PDU data alignment the host asked for in its ICReq */
	uint32_t maxh2cdata;    /* largest H2CData data we accept */
	uint32_t max_icd;       /* largest in-capsule data we accept (IOCCSZ*16 - 64) */
};

/* A parsed header in host order. */
struct nvme_tcp_pdu {
	uint8_t type, flags, hlen, pdo;
	uint32_t plen;
	uint32_t hdr_bytes;     /* HLEN plus the header digest when present */
	uint32_t data_off;      /* where the data starts (PDO), 0 without data */
	uint32_t data_len;      /* bytes of PDU data (without pad or digest) */
	bool has_ddgst;
	union {
		struct {            /* ICReq, ICResp */
			uint16_t pfv;
			uint8_t pda;     /* HPDA (ICReq) or CPDA (ICResp) */
			uint8_t dgst;
			uint32_t maxr2t_or_maxh2cdata; /* ICReq MAXR2T (0's based), ICResp MAXH2CDATA */
		} ic;
		struct {            /* CapsuleCmd: the SQE, CapsuleResp: the CQE, as on the wire */
			uint8_t sqe[64];
		} cmd;
		struct {            /* H2CData, C2HData, R2T */
			uint16_t cccid;
			uint16_t ttag;
			uint32_t offset; /* DATAO / R2TO */
			uint32_t length; /* DATAL / R2TL */
		} data;
		struct {            /* H2CTermReq, C2HTermReq */
			uint16_t fes;
			uint32_t fei;
		} term;
	} u;
};

/* Why a header was refused: what goes in the C2HTermReq. */
struct nvme_tcp_error {
	uint16_t fes;
	uint32_t fei;            /* byte offset of the offending field in the header */
	const char *what;        /* for the log */
};

/*
 * From the 8-byte common header in ch (avail bytes present), the number of header bytes
 * to read before nvme_tcp_pdu_parse() can run (HLEN + header digest). Returns that
 * number (> 0), 0 when fewer than 8 bytes are available, or -EPROTO with *err set.
 */
int nvme_tcp_header_size(const uint8_t *ch, size_t avail, const struct nvme_tcp_params *p,
			 struct nvme_tcp_error *err);

/*
 * Parse and validate a whole PDU header (len bytes = the value nvme_tcp_header_size()
 * returned) as the controller receiving it from a host: lengths, PDO, digests flags,
 * data limits, the header digest. Returns 0, or -EPROTO with *err set (the connection
 * must then be terminated with a C2HTermReq carrying err->fes and err->fei).
 */
int nvme_tcp_pdu_parse(const uint8_t *hdr, size_t len, const struct nvme_tcp_params *p,
		       struct nvme_tcp_pdu *out, struct nvme_tcp_error *err);

/* nvme_tcp_pdu_parse() for a header whose size nvme_tcp_header_size() returned for the
 * same bytes and parameters (a framing that checked the common header as it came in):
 * the common header is not checked twice. size < 0 (that call's error) is returned. */
int nvme_tcp_pdu_parse_sized(const uint8_t *hdr, size_t len, int size, const struct nvme_tcp_params *p,
			     struct nvme_tcp_pdu *out, struct nvme_tcp_error *err);

/* nvme_tcp_pdu_parse_sized() for the framer: a CapsuleCmd's SQE is not copied into
 * out->u.cmd (it stays zero); the consumer copies it once, from the header bytes at
 * offsetof(struct nvme_tcp_cmd_pdu, sqe), to where it keeps the command. */
int nvme_tcp_pdu_parse_framed(const uint8_t *hdr, size_t len, int size, const struct nvme_tcp_params *p,
			      struct nvme_tcp_pdu *out, struct nvme_tcp_error *err);

/* Build an ICResp (128 bytes) into buf. Returns its length. */
size_t nvme_tcp_build_icresp(uint8_t *buf, uint8_t cpda, uint8_t dgst, uint32_t maxh2cdata);

/* Build a CapsuleResp header around the 16-byte CQE (with a header digest when
 * negotiated). Returns the header length (the whole PDU: no data). */
size_t nvme_tcp_build_capsule_resp(uint8_t *buf, const struct nvme_tcp_params *p, const uint8_t cqe[16]);

/* The length nvme_tcp_build_capsule_resp() builds (to make room for it first). */
static inline size_t nvme_tcp_capsule_resp_len(const struct nvme_tcp_params *p)
{
	return NVME_TCP_RESP_HLEN + (p->hdgst ? NVME_TCP_DIGEST_LEN : 0);
}

/* Build a C2HData header for datal bytes at offset datao of command cccid; the data
 * (and its digest, when negotiated) follow. Returns the header length including the
 * header digest and padding up to PDO. */
size_t nvme_tcp_build_c2h_data(uint8_t *buf, const struct nvme_tcp_params *p, uint16_t cccid,
			       uint32_t datao, uint32_t datal, bool last, bool success);

/* The length nvme_tcp_build_c2h_data() builds (header, header digest, pad up to PDO). */
static inline size_t nvme_tcp_c2h_data_hdr_len(const struct nvme_tcp_params *p)
{
	if (!p->hdgst && !p->hpda)
		return NVME_TCP_DATA_HLEN; /* no digest, no alignment: the header alone (no division) */
	size_t hdr = NVME_TCP_DATA_HLEN + (p->hdgst ? NVME_TCP_DIGEST_LEN : 0);
	size_t align = ((size_t)p->hpda + 1) * 4;
	return (hdr + align - 1) / align * align;
}

/* What nvme_tcp_build_c2h_data() and nvme_tcp_build_capsule_resp() build on a connection
 * without header digests and header alignment (nvme_tcp_params hdgst and hpda 0), for
 * callers that know that: the fixed shape in whole-word stores (NVME_TCP_DATA_HLEN and
 * NVME_TCP_RESP_HLEN bytes). ddgst says whether a data digest follows the data (its flag,
 * PLEN). */
void nvme_tcp_build_c2h_data_plain(uint8_t *buf, bool ddgst, uint16_t cccid, uint32_t datao, uint32_t datal,
				   bool last, bool success);
void nvme_tcp_build_capsule_resp_plain(uint8_t *buf, const uint8_t cqe[16]);

/* Build an R2T asking for r2tl bytes at r2to of command cccid with transfer tag ttag. */
size_t nvme_tcp_build_r2t(uint8_t *buf, const struct nvme_tcp_params *p, uint16_t cccid, uint16_t ttag,
			  uint32_t r2to, uint32_t r2tl);

/* The length nvme_tcp_build_r2t() builds. */
static inline size_t nvme_tcp_r2t_len(const struct nvme_tcp_params *p)
{
	return NVME_TCP_DATA_HLEN + (p->hdgst ? NVME_TCP_DIGEST_LEN : 0);
}

/* Build a C2HTermReq quoting up to 128 bytes of the offending header. Returns its length. */
size_t nvme_tcp_build_c2h_term_req(uint8_t *buf, uint16_t fes, uint32_t fei, const uint8_t *hdr,
				   size_t hdr_len);

/* Name of a PDU type, for logs and the console. */
const char *nvme_tcp_pdu_type_name(uint8_t type);

#endif
