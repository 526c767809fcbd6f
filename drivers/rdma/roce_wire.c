/*
 * roce_wire.c - the RoCE v2 opcode table, the header parser and the header builder.
 * See roce_wire.h; table 38 of the IBTA specification names the opcodes and which
 * extension headers each carries, in the fixed order DETH, RETH|AtomicETH, AETH,
 * AtomicAckETH, ImmDt, IETH.
 */
#include <errno.h>
#include <string.h>
#include "roce_wire.h"

#define P ROCE_F_PAYLOAD
#define RQ ROCE_F_REQUEST

struct roce_opcode_row {
	uint32_t flags;
	const char *name;
};

static const struct roce_opcode_row roce_rc_ops[0x18] = {
	[ROCE_RC_SEND_FIRST] = { RQ | P | ROCE_F_SEND | ROCE_F_FIRST, "RC_SEND_FIRST" },
	[ROCE_RC_SEND_MIDDLE] = { RQ | P | ROCE_F_SEND | ROCE_F_MIDDLE, "RC_SEND_MIDDLE" },
	[ROCE_RC_SEND_LAST] = { RQ | P | ROCE_F_SEND | ROCE_F_LAST, "RC_SEND_LAST" },
	[ROCE_RC_SEND_LAST_IMM] = { RQ | P | ROCE_F_SEND | ROCE_F_LAST | ROCE_F_IMMDT, "RC_SEND_LAST_IMM" },
	[ROCE_RC_SEND_ONLY] = { RQ | P | ROCE_F_SEND | ROCE_F_ONLY, "RC_SEND_ONLY" },
	[ROCE_RC_SEND_ONLY_IMM] = { RQ | P | ROCE_F_SEND | ROCE_F_ONLY | ROCE_F_IMMDT, "RC_SEND_ONLY_IMM" },
	[ROCE_RC_WRITE_FIRST] = { RQ | P | ROCE_F_WRITE | ROCE_F_FIRST | ROCE_F_RETH, "RC_WRITE_FIRST" },
	[ROCE_RC_WRITE_MIDDLE] = { RQ | P | ROCE_F_WRITE | ROCE_F_MIDDLE, "RC_WRITE_MIDDLE" },
	[ROCE_RC_WRITE_LAST] = { RQ | P | ROCE_F_WRITE | ROCE_F_LAST, "RC_WRITE_LAST" },
	/* the immediate consumes a receive WQE, as a SEND does */
	[ROCE_RC_WRITE_LAST_IMM] = { RQ | P | ROCE_F_WRITE | ROCE_F_SEND | ROCE_F_LAST | ROCE_F_IMMDT,
				     "RC_WRITE_LAST_IMM" },
	[ROCE_RC_WRITE_ONLY] = { RQ | P | ROCE_F_WRITE | ROCE_F_ONLY | ROCE_F_RETH, "RC_WRITE_ONLY" },
	[ROCE_RC_WRITE_ONLY_IMM] = { RQ | P | ROCE_F_WRITE | ROCE_F_SEND | ROCE_F_ONLY | ROCE_F_RETH | ROCE_F_IMMDT,
				     "RC_WRITE_ONLY_IMM" },
	[ROCE_RC_READ_REQUEST] = { RQ | ROCE_F_READ_REQ | ROCE_F_ONLY | ROCE_F_RETH, "RC_READ_REQUEST" },
	[ROCE_RC_READ_RESP_FIRST] = { P | ROCE_F_READ_RESP | ROCE_F_FIRST | ROCE_F_AETH, "RC_READ_RESP_FIRST" },
	[ROCE_RC_READ_RESP_MIDDLE] = { P | ROCE_F_READ_RESP | ROCE_F_MIDDLE, "RC_READ_RESP_MIDDLE" },
	[ROCE_RC_READ_RESP_LAST] = { P | ROCE_F_READ_RESP | ROCE_F_LAST | ROCE_F_AETH, "RC_READ_RESP_LAST" },
	[ROCE_RC_READ_RESP_ONLY] = { P | ROCE_F_READ_RESP | ROCE_F_ONLY | ROCE_F_AETH, "RC_READ_RESP_ONLY" },
	[ROCE_RC_ACK] = { ROCE_F_ACK | ROCE_F_ONLY | ROCE_F_AETH, "RC_ACK" },
	[ROCE_RC_ATOMIC_ACK] = { ROCE_F_ACK | ROCE_F_ONLY | ROCE_F_AETH | ROCE_F_ATOMICACKETH, "RC_ATOMIC_ACK" },
	[ROCE_RC_CMP_SWAP] = { RQ | ROCE_F_ATOMIC | ROCE_F_ONLY | ROCE_F_ATOMICETH, "RC_CMP_SWAP" },
	[ROCE_RC_FETCH_ADD] = { RQ | ROCE_F_ATOMIC | ROCE_F_ONLY | ROCE_F_ATOMICETH, "RC_FETCH_ADD" },
	[ROCE_RC_SEND_LAST_INV] = { RQ | P | ROCE_F_SEND | ROCE_F_LAST | ROCE_F_IETH, "RC_SEND_LAST_INV" },
	[ROCE_RC_SEND_ONLY_INV] = { RQ | P | ROCE_F_SEND | ROCE_F_ONLY | ROCE_F_IETH, "RC_SEND_ONLY_INV" },
};

static const struct roce_opcode_row roce_ud_ops[2] = {
	{ RQ | P | ROCE_F_SEND | ROCE_F_ONLY | ROCE_F_UD | ROCE_F_DETH, "UD_SEND_ONLY" },
	{ RQ | P | ROCE_F_SEND | ROCE_F_ONLY | ROCE_F_UD | ROCE_F_DETH | ROCE_F_IMMDT, "UD_SEND_ONLY_IMM" },
};

static const struct roce_opcode_row *roce_row(uint8_t opcode)
{
	if (opcode < sizeof(roce_rc_ops) / sizeof(roce_rc_ops[0]))
		return roce_rc_ops[opcode].flags ? &roce_rc_ops[opcode] : NULL;
	if (opcode == ROCE_UD_SEND_ONLY || opcode == ROCE_UD_SEND_ONLY_IMM)
		return &roce_ud_ops[opcode - ROCE_UD_SEND_ONLY];
	return NULL;
}

uint32_t roce_opcode_flags(uint8_t opcode)
{
	const struct roce_opcode_row *r = roce_row(opcode);
	return r ? r->flags : 0;
}

const char *roce_opcode_name(uint8_t opcode)
{
	const struct roce_opcode_row *r = roce_row(opcode);
	return r ? r->name : "?";
}

static size_t roce_flags_hdr_len(uint32_t f)
{
	size_t n = sizeof(struct roce_bth);
	if (f & ROCE_F_DETH)
		n += sizeof(struct roce_deth);
	if (f & ROCE_F_RETH)
		n += sizeof(struct roce_reth);
	if (f & ROCE_F_ATOMICETH)
		n += sizeof(struct roce_atomiceth);
	if (f & ROCE_F_AETH)
		n += sizeof(struct roce_aeth);
	if (f & ROCE_F_ATOMICACKETH)
		n += sizeof(struct roce_atomicacketh);
	if (f & ROCE_F_IMMDT)
		n += sizeof(struct roce_immdt);
	if (f & ROCE_F_IETH)
		n += sizeof(struct roce_ieth);
	return n;
}

size_t roce_hdr_len(uint8_t opcode)
{
	uint32_t f = roce_opcode_flags(opcode);
	return f ? roce_flags_hdr_len(f) : 0;
}

const char *roce_parse_err_name(enum roce_parse_err e)
{
	switch (e) {
	case ROCE_PARSE_OK: return "ok";
	case ROCE_PARSE_SHORT: return "short";
	case ROCE_PARSE_OPCODE: return "opcode";
	case ROCE_PARSE_TVER: return "tver";
	case ROCE_PARSE_PAD: return "pad";
	}
	return "?";
}

enum roce_parse_err roce_parse(const uint8_t *hdr, size_t hdr_avail, size_t pkt_len, struct roce_pkt *out)
{
	struct roce_bth bth;
	struct roce_pkt p;
	size_t off, hlen, rest;

	memset(out, 0, sizeof(*out));
	if (hdr_avail > pkt_len)
		hdr_avail = pkt_len;
	if (hdr_avail < sizeof(bth))
		return ROCE_PARSE_SHORT;
	memcpy(&bth, hdr, sizeof(bth));
	memset(&p, 0, sizeof(p));
	p.opcode = bth.opcode;
	if (!(p.flags = roce_opcode_flags(p.opcode)))
		return ROCE_PARSE_OPCODE;
	if (bth.flags & BTH_TVER_MASK)
		return ROCE_PARSE_TVER;
	hlen = roce_flags_hdr_len(p.flags);
	/* headers, then ICRC, inside the packet and inside what the caller could read */
	if (hlen > hdr_avail || ROCE_ICRC_LEN > pkt_len - hlen)
		return ROCE_PARSE_SHORT;
	p.se = bth.flags & BTH_SE;
	p.migreq = bth.flags & BTH_MIGREQ;
	p.padcnt = (uint8_t)((bth.flags & BTH_PADCNT_MASK) >> BTH_PADCNT_SHIFT);
	p.pkey = be16_get(bth.pkey);
	p.fecn = bth.resv8a & BTH_FECN;
	p.becn = bth.resv8a & BTH_BECN;
	p.destqp = be24_get(bth.destqp);
	p.ackreq = bth.ackreq & BTH_ACKREQ;
	p.psn = be24_get(bth.psn);
	off = sizeof(bth);
	if (p.flags & ROCE_F_DETH) {
		struct roce_deth d;
		memcpy(&d, hdr + off, sizeof(d));
		p.qkey = be32_get(d.qkey);
		p.srcqp = be24_get(d.srcqp);
		off += sizeof(d);
	}
	if (p.flags & ROCE_F_RETH) {
		struct roce_reth r;
		memcpy(&r, hdr + off, sizeof(r));
		p.va = be64_get(r.va);
		p.rkey = be32_get(r.rkey);
		p.dmalen = be32_get(r.dmalen);
		off += sizeof(r);
	}
	if (p.flags & ROCE_F_ATOMICETH) {
		struct roce_atomiceth a;
		memcpy(&a, hdr + off, sizeof(a));
		p.va = be64_get(a.va);
		p.rkey = be32_get(a.rkey);
		p.swap_add = be64_get(a.swap_add);
		p.compare = be64_get(a.compare);
		off += sizeof(a);
	}
	if (p.flags & ROCE_F_AETH) {
		struct roce_aeth a;
		memcpy(&a, hdr + off, sizeof(a));
		p.syndrome = a.syndrome;
		p.msn = be24_get(a.msn);
		off += sizeof(a);
	}
	if (p.flags & ROCE_F_ATOMICACKETH) {
		struct roce_atomicacketh a;
		memcpy(&a, hdr + off, sizeof(a));
		p.orig = be64_get(a.orig);
		off += sizeof(a);
	}
	if (p.flags & ROCE_F_IMMDT) {
		struct roce_immdt i;
		memcpy(&i, hdr + off, sizeof(i));
		p.imm = be32_get(i.imm);
		off += sizeof(i);
	}
	if (p.flags & ROCE_F_IETH) {
		struct roce_ieth i;
		memcpy(&i, hdr + off, sizeof(i));
		p.inv_rkey = be32_get(i.rkey);
		off += sizeof(i);
	}
	p.hdr_len = (uint16_t)off;
	/* payload + pad: whole 32-bit words (9.2.2), pad only where payload may be */
	rest = pkt_len - hlen - ROCE_ICRC_LEN;
	if (!(p.flags & ROCE_F_PAYLOAD) && (rest || p.padcnt))
		return ROCE_PARSE_PAD;
	if ((rest & 3) || p.padcnt > rest)
		return ROCE_PARSE_PAD;
	if (rest > UINT32_MAX)
		return ROCE_PARSE_SHORT;
	p.payload_len = (uint32_t)(rest - p.padcnt);
	*out = p;
	return ROCE_PARSE_OK;
}

int roce_build(const struct roce_pkt *p, uint8_t *out, size_t cap)
{
	uint32_t f = roce_opcode_flags(p->opcode);
	struct roce_bth bth;
	size_t off, hlen;
	uint8_t pad;

	if (!f || (p->payload_len && !(f & ROCE_F_PAYLOAD)))
		return -EINVAL;
	hlen = roce_flags_hdr_len(f);
	if (hlen > cap)
		return -ENOSPC;
	pad = roce_pad(p->payload_len);
	bth.opcode = p->opcode;
	bth.flags = (uint8_t)((p->se ? BTH_SE : 0) | (p->migreq ? BTH_MIGREQ : 0) | pad << BTH_PADCNT_SHIFT);
	bth.pkey = be16_make(p->pkey);
	bth.resv8a = (uint8_t)((p->fecn ? BTH_FECN : 0) | (p->becn ? BTH_BECN : 0));
	bth.destqp = be24_make(p->destqp & ROCE_QPN_MASK);
	bth.ackreq = p->ackreq ? BTH_ACKREQ : 0;
	bth.psn = be24_make(p->psn & ROCE_PSN_MASK);
	memcpy(out, &bth, sizeof(bth));
	off = sizeof(bth);
	if (f & ROCE_F_DETH) {
		struct roce_deth d = { .qkey = be32_make(p->qkey), .resv8 = 0 };
		d.srcqp = be24_make(p->srcqp & ROCE_QPN_MASK);
		memcpy(out + off, &d, sizeof(d));
		off += sizeof(d);
	}
	if (f & ROCE_F_RETH) {
		struct roce_reth r = { .va = be64_make(p->va), .rkey = be32_make(p->rkey),
				       .dmalen = be32_make(p->dmalen) };
		memcpy(out + off, &r, sizeof(r));
		off += sizeof(r);
	}
	if (f & ROCE_F_ATOMICETH) {
		struct roce_atomiceth a = { .va = be64_make(p->va), .rkey = be32_make(p->rkey),
					    .swap_add = be64_make(p->swap_add), .compare = be64_make(p->compare) };
		memcpy(out + off, &a, sizeof(a));
		off += sizeof(a);
	}
	if (f & ROCE_F_AETH) {
		struct roce_aeth a = { .syndrome = p->syndrome };
		a.msn = be24_make(p->msn & 0xffffffu);
		memcpy(out + off, &a, sizeof(a));
		off += sizeof(a);
	}
	if (f & ROCE_F_ATOMICACKETH) {
		struct roce_atomicacketh a = { .orig = be64_make(p->orig) };
		memcpy(out + off, &a, sizeof(a));
		off += sizeof(a);
	}
	if (f & ROCE_F_IMMDT) {
		struct roce_immdt i = { .imm = be32_make(p->imm) };
		memcpy(out + off, &i, sizeof(i));
		off += sizeof(i);
	}
	if (f & ROCE_F_IETH) {
		struct roce_ieth i = { .rkey = be32_make(p->inv_rkey) };
		memcpy(out + off, &i, sizeof(i));
		off += sizeof(i);
	}
	return (int)off;
}
