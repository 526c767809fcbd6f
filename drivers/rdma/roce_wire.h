/*
 * roce_wire.h - RoCE v2 wire formats (IBTA Architecture Specification vol. 1, chapter 9
 * base and extended transport headers; Annex A17 RoCE v2 over UDP/IPv4): packed structs
 * with explicit big-endian field types, the opcode table, and a parser that reads the
 * headers of one received packet into locals (struct roce_pkt) with every length
 * checked before it is read. The parser knows nothing of queue pairs: PSN windows,
 * PMTU and keys are the transport's business (roce_req/roce_resp/roce_comp).
 *
 * Packet layout after the UDP header (destination port 4791):
 *   BTH | [DETH] | [RETH | AtomicETH] | [AETH] | [AtomicAckETH] | [ImmDt] | [IETH] |
 *   payload | pad (BTH.PadCnt bytes, 0..3) | ICRC (4 bytes)
 */
#ifndef DRIVERS_RDMA_ROCE_WIRE_H
#define DRIVERS_RDMA_ROCE_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "../../net/wire.h"

#define ROCE_UDP_PORT 4791           /* IANA: RoCE v2 */
#define ROCE_ICRC_LEN 4
#define ROCE_PKEY_DEFAULT 0xffff
#define ROCE_QPN_MASK 0x00ffffffu    /* QPNs and PSNs are 24 bits */
#define ROCE_PSN_MASK 0x00ffffffu
#define ROCE_HDR_MAX 40              /* BTH + AtomicETH: the longest header run */

/* Base Transport Header (9.2), 12 bytes. */
#define BTH_SE 0x80                  /* flags: solicited event */
#define BTH_MIGREQ 0x40              /* flags: migration request (M) */
#define BTH_PADCNT_SHIFT 4           /* flags bits 5:4: pad bytes after the payload */
#define BTH_PADCNT_MASK 0x30
#define BTH_TVER_MASK 0x0f           /* flags bits 3:0: transport header version, 0 */
#define BTH_FECN 0x80                /* resv8a: forward congestion notification */
#define BTH_BECN 0x40                /* resv8a: backward congestion notification */
#define BTH_ACKREQ 0x80              /* ackreq_psn byte 0: acknowledge request (A) */
struct roce_bth {
	uint8_t opcode;              /* transport (bits 7:5) | operation (bits 4:0) */
	uint8_t flags;               /* SE | M | PadCnt | TVer */
	be16_t pkey;                 /* P_Key */
	uint8_t resv8a;              /* FECN | BECN | Resv6a: masked to 0xff in the ICRC */
	be24_t destqp;               /* DestQP */
	uint8_t ackreq;              /* A | Resv7 */
	be24_t psn;                  /* PSN */
} __attribute__((packed));

/* Datagram Extended Transport Header (9.3.3), UD only. */
struct roce_deth {
	be32_t qkey;                 /* Q_Key */
	uint8_t resv8;
	be24_t srcqp;                /* SrcQP */
} __attribute__((packed));

/* RDMA Extended Transport Header (9.3.4). */
struct roce_reth {
	be64_t va;                   /* VA: virtual address */
	be32_t rkey;                 /* R_Key */
	be32_t dmalen;               /* DMA Length */
} __attribute__((packed));

/* Atomic Extended Transport Header (9.3.5). */
struct roce_atomiceth {
	be64_t va;
	be32_t rkey;
	be64_t swap_add;             /* Swap (CmpSwap) or Add (FetchAdd) Data */
	be64_t compare;              /* Compare Data */
} __attribute__((packed));

/* ACK Extended Transport Header (9.3.6). */
#define AETH_SYNDROME_TYPE_MASK 0x60 /* bits 6:5 */
#define AETH_TYPE_ACK 0x00           /* bits 4:0: credit count */
#define AETH_TYPE_RNR_NAK 0x20       /* bits 4:0: RNR timer code */
#define AETH_TYPE_NAK 0x60           /* bits 4:0: NAK code */
#define AETH_NAK_PSN_SEQ 0           /* PSN sequence error */
#define AETH_NAK_INVALID_REQ 1       /* invalid request */
#define AETH_NAK_REMOTE_ACCESS 2     /* remote access error */
#define AETH_NAK_REMOTE_OP 3         /* remote operational error */
#define AETH_NAK_INVALID_RD_REQ 4    /* invalid RD request */
#define AETH_CREDIT_INVALID 0x1f     /* no end-to-end credits advertised */
struct roce_aeth {
	uint8_t syndrome;            /* bit 7 reserved | type (6:5) | value (4:0) */
	be24_t msn;                  /* MSN: message sequence number */
} __attribute__((packed));

/* Atomic Acknowledge Extended Transport Header (9.3.7). */
struct roce_atomicacketh {
	be64_t orig;                 /* Original Remote Data */
} __attribute__((packed));

/* Immediate Data (9.3.8) and Invalidate (9.3.9) Extended Transport Headers. */
struct roce_immdt {
	be32_t imm;
} __attribute__((packed));

struct roce_ieth {
	be32_t rkey;                 /* the R_Key to invalidate */
} __attribute__((packed));

_Static_assert(sizeof(struct roce_bth) == 12, "bth");
_Static_assert(sizeof(struct roce_deth) == 8, "deth");
_Static_assert(sizeof(struct roce_reth) == 16, "reth");
_Static_assert(sizeof(struct roce_atomiceth) == 28, "atomiceth");
_Static_assert(sizeof(struct roce_aeth) == 4, "aeth");
_Static_assert(sizeof(struct roce_atomicacketh) == 8, "atomicacketh");

/* Store x in a be24_t field (be24_t and its be24_get/be24_make are lib/byteorder.h's). */
#define be24_put(field, x) ((field) = be24_make(x))

/* BTH opcodes (table 38): transport in bits 7:5 (RC 000, UC 001, RD 010, UD 011). */
enum roce_opcode {
	ROCE_RC_SEND_FIRST = 0x00,
	ROCE_RC_SEND_MIDDLE = 0x01,
	ROCE_RC_SEND_LAST = 0x02,
	ROCE_RC_SEND_LAST_IMM = 0x03,
	ROCE_RC_SEND_ONLY = 0x04,
	ROCE_RC_SEND_ONLY_IMM = 0x05,
	ROCE_RC_WRITE_FIRST = 0x06,
	ROCE_RC_WRITE_MIDDLE = 0x07,
	ROCE_RC_WRITE_LAST = 0x08,
	ROCE_RC_WRITE_LAST_IMM = 0x09,
	ROCE_RC_WRITE_ONLY = 0x0a,
	ROCE_RC_WRITE_ONLY_IMM = 0x0b,
	ROCE_RC_READ_REQUEST = 0x0c,
	ROCE_RC_READ_RESP_FIRST = 0x0d,
	ROCE_RC_READ_RESP_MIDDLE = 0x0e,
	ROCE_RC_READ_RESP_LAST = 0x0f,
	ROCE_RC_READ_RESP_ONLY = 0x10,
	ROCE_RC_ACK = 0x11,
	ROCE_RC_ATOMIC_ACK = 0x12,
	ROCE_RC_CMP_SWAP = 0x13,
	ROCE_RC_FETCH_ADD = 0x14,
	ROCE_RC_SEND_LAST_INV = 0x16,
	ROCE_RC_SEND_ONLY_INV = 0x17,
	ROCE_UD_SEND_ONLY = 0x64,
	ROCE_UD_SEND_ONLY_IMM = 0x65,
};

/* What an opcode carries and means (the opcode table's row). */
#define ROCE_F_DETH     (1u << 0)
#define ROCE_F_RETH     (1u << 1)
#define ROCE_F_ATOMICETH (1u << 2)
#define ROCE_F_AETH     (1u << 3)
#define ROCE_F_ATOMICACKETH (1u << 4)
#define ROCE_F_IMMDT    (1u << 5)
#define ROCE_F_IETH     (1u << 6)
#define ROCE_F_PAYLOAD  (1u << 7)    /* may carry payload */
#define ROCE_F_FIRST    (1u << 8)    /* first packet of a message */
#define ROCE_F_MIDDLE   (1u << 9)
#define ROCE_F_LAST     (1u << 10)
#define ROCE_F_ONLY     (ROCE_F_FIRST | ROCE_F_LAST)
#define ROCE_F_SEND     (1u << 11)   /* consumes a receive WQE */
#define ROCE_F_WRITE    (1u << 12)
#define ROCE_F_READ_REQ (1u << 13)
#define ROCE_F_READ_RESP (1u << 14)
#define ROCE_F_ATOMIC   (1u << 15)
#define ROCE_F_ACK      (1u << 16)   /* ACK or atomic ACK */
#define ROCE_F_REQUEST  (1u << 17)   /* requester -> responder */
#define ROCE_F_UD       (1u << 18)

/* The flags of an opcode, 0 for an opcode this endpoint does not know (UC, RD, reserved). */
uint32_t roce_opcode_flags(uint8_t opcode);

/* The opcode's name for logs and the console ("RC_SEND_ONLY"), "?" when unknown. */
const char *roce_opcode_name(uint8_t opcode);

/* One received packet's headers in host order. */
struct roce_pkt {
	uint8_t opcode;
	uint32_t flags;              /* roce_opcode_flags(opcode) */
	bool se, migreq, fecn, becn, ackreq;
	uint8_t padcnt;
	uint16_t pkey;
	uint32_t destqp, psn;
	uint32_t qkey, srcqp;        /* DETH */
	uint64_t va;                 /* RETH / AtomicETH */
	uint32_t rkey;               /* RETH / AtomicETH */
	uint32_t dmalen;             /* RETH */
	uint64_t swap_add, compare;  /* AtomicETH */
	uint8_t syndrome;            /* AETH */
	uint32_t msn;                /* AETH */
	uint64_t orig;               /* AtomicAckETH */
	uint32_t imm;                /* ImmDt */
	uint32_t inv_rkey;           /* IETH */
	uint16_t hdr_len;            /* BTH and extension headers */
	uint32_t payload_len;        /* after the headers, before the pad */
};

/* Why a packet was refused (counted per reason by the receive path). */
enum roce_parse_err {
	ROCE_PARSE_OK = 0,
	ROCE_PARSE_SHORT,            /* shorter than BTH + its extension headers + pad + ICRC */
	ROCE_PARSE_OPCODE,           /* an opcode this endpoint does not serve */
	ROCE_PARSE_TVER,             /* BTH.TVer not 0 */
	ROCE_PARSE_PAD,              /* PadCnt on a packet without payload, or payload + pad not a multiple of 4 */
};

/* Parse the transport headers of one packet of pkt_len bytes (BTH to ICRC included),
 * whose first hdr_avail bytes are in hdr (at least min(pkt_len, ROCE_HDR_MAX) of them).
 * Fills *out and returns ROCE_PARSE_OK, or a reason. Never reads beyond hdr_avail. */
enum roce_parse_err roce_parse(const uint8_t *hdr, size_t hdr_avail, size_t pkt_len, struct roce_pkt *out);

/* Name of a parse error for logs and counters. */
const char *roce_parse_err_name(enum roce_parse_err e);

/* Header bytes an opcode needs (BTH + extension headers), 0 when unknown. */
size_t roce_hdr_len(uint8_t opcode);

/* Write the headers p describes (opcode, BTH fields, the extension headers its opcode
 * carries, the pad count for payload_len) into out (cap bytes). Returns the header length,
 * or -EINVAL for an unknown opcode / payload on an opcode without one, -ENOSPC when cap is
 * short. BTH.resv8a is written as FECN/BECN, the rest 0; TVer 0. */
int roce_build(const struct roce_pkt *p, uint8_t *out, size_t cap);

/* Pad bytes after a payload of len bytes. */
static inline uint8_t roce_pad(uint32_t len)
{
	return (uint8_t)((4 - (len & 3)) & 3);
}

#endif
