/*
 * nvme_tcp_host.c - the host side of NVMe/TCP for tests and fuzzers (nvme_tcp_host.h).
 */
#include "nvme_tcp_host.h"
#include <errno.h>
#include <string.h>
#include "drivers/nvme/target/nvmet_tcp_pdu.h"
#include "lib/crc32.h"
#include "fake_nvmet_transport.h"

/* The common header: type, flags, HLEN, PDO, PLEN. */
static void ch(uint8_t *out, uint8_t type, uint8_t flags, uint8_t hlen, uint8_t pdo, uint32_t plen)
{
	out[0] = type;
	out[1] = flags;
	out[2] = hlen;
	out[3] = pdo;
	le32_store(out + 4, plen);
}

size_t nth_icreq(uint8_t *out, size_t cap, uint16_t pfv, uint8_t hpda, uint8_t dgst, uint32_t maxr2t)
{
	if (cap < NVME_TCP_IC_LEN)
		return 0;
	memset(out, 0, NVME_TCP_IC_LEN);
	ch(out, NVME_TCP_ICREQ, 0, NVME_TCP_IC_LEN, 0, NVME_TCP_IC_LEN);
	le16_store(out + 8, pfv);
	out[10] = hpda;
	out[11] = dgst;
	le32_store(out + 12, maxr2t);
	return NVME_TCP_IC_LEN;
}

size_t nth_capsule(uint8_t *out, size_t cap, bool hdgst, bool ddgst, const struct nvme_sqe *sqe, const void *data,
		   uint32_t len)
{
	uint32_t hl = NVME_TCP_CMD_HLEN + (hdgst ? NVME_TCP_DIGEST_LEN : 0);
	bool dd = len && ddgst;
	size_t plen = (size_t)hl + len + (dd ? NVME_TCP_DIGEST_LEN : 0);

	if (plen > cap)
		return 0;
	memset(out, 0, hl);
	ch(out, NVME_TCP_CAPSULE_CMD, (uint8_t)((hdgst ? NVME_TCP_F_HDGSTF : 0) | (dd ? NVME_TCP_F_DDGSTF : 0)),
	   NVME_TCP_CMD_HLEN, len ? (uint8_t)hl : 0, (uint32_t)plen);
	memcpy(out + NVME_TCP_CH_LEN, sqe, sizeof(*sqe));
	if (hdgst)
		le32_store(out + NVME_TCP_CMD_HLEN, crc32c(0, out, NVME_TCP_CMD_HLEN));
	if (len)
		memcpy(out + hl, data, len);
	if (dd)
		le32_store(out + hl + len, crc32c(0, data, len));
	return plen;
}

size_t nth_h2c(uint8_t *out, size_t cap, bool hdgst, bool ddgst, uint16_t cccid, uint16_t ttag, uint32_t datao,
	       const void *data, uint32_t len, bool last)
{
	uint32_t hl = NTH_H2C_HDR + (hdgst ? NVME_TCP_DIGEST_LEN : 0);
	size_t plen = (size_t)hl + len + (ddgst ? NVME_TCP_DIGEST_LEN : 0);
	uint8_t flags = (uint8_t)((hdgst ? NVME_TCP_F_HDGSTF : 0) | (ddgst ? NVME_TCP_F_DDGSTF : 0) |
				  (last ? NVME_TCP_F_LAST_PDU : 0));

	if (plen > cap)
		return 0;
	memset(out, 0, hl);
	ch(out, NVME_TCP_H2C_DATA, flags, NTH_H2C_HDR, (uint8_t)hl, (uint32_t)plen);
	le16_store(out + 8, cccid);
	le16_store(out + 10, ttag);
	le32_store(out + 12, datao);
	le32_store(out + 16, len);
	if (hdgst)
		le32_store(out + NTH_H2C_HDR, crc32c(0, out, NTH_H2C_HDR));
	memcpy(out + hl, data, len);
	if (ddgst)
		le32_store(out + hl + len, crc32c(0, data, len));
	return plen;
}

size_t nth_h2c_term(uint8_t *out, size_t cap, uint16_t fes)
{
	if (cap < NVME_TCP_TERM_HLEN)
		return 0;
	memset(out, 0, NVME_TCP_TERM_HLEN);
	ch(out, NVME_TCP_H2C_TERM_REQ, 0, NVME_TCP_TERM_HLEN, 0, NVME_TCP_TERM_HLEN);
	le16_store(out + 8, fes);
	return NVME_TCP_TERM_HLEN;
}

struct nvme_sqe nth_rw_sqe(bool write, uint16_t cid, uint32_t nsid, uint64_t slba, uint32_t nlb, uint32_t len)
{
	struct nvme_sqe s = ft_sqe(write ? NVME_CMD_WRITE : NVME_CMD_READ, cid, nsid, len);
	s.cdw10 = le32_make((uint32_t)slba);
	s.cdw11 = le32_make((uint32_t)(slba >> 32));
	s.cdw12 = le32_make(nlb - 1);
	return s;
}

int nth_parse(const uint8_t *buf, size_t len, struct nth_pdu *p)
{
	if (len < NVME_TCP_CH_LEN)
		return 0;
	struct nth_pdu q = { .type = buf[0], .flags = buf[1], .hlen = buf[2], .pdo = buf[3], .plen = le32_load(buf + 4),
			     .hdr = buf };
	uint32_t hd = (q.flags & NVME_TCP_F_HDGSTF) ? NVME_TCP_DIGEST_LEN : 0;
	uint32_t dd = (q.flags & NVME_TCP_F_DDGSTF) ? NVME_TCP_DIGEST_LEN : 0;

	if (q.hlen < NVME_TCP_CH_LEN || q.plen < (uint32_t)q.hlen + hd)
		return -EBADMSG;
	if (q.pdo && (q.pdo < q.hlen + hd || q.plen - q.pdo < dd))
		return -EBADMSG;
	if (q.plen > len)
		return 0;
	if (hd && le32_load(buf + q.hlen) != crc32c(0, buf, q.hlen))
		return -EBADMSG;
	if (q.pdo) {
		q.data = buf + q.pdo;
		q.datal = q.plen - q.pdo - dd;
		if (dd && le32_load(q.data + q.datal) != crc32c(0, q.data, q.datal))
			return -EBADMSG;
	}
	*p = q;
	return 1;
}

int nth_resp_feed(struct nth_resp *r, const struct nth_pdu *p)
{
	if (p->type == NVME_TCP_C2H_DATA) {
		if (p->hlen != NVME_TCP_DATA_HLEN || le32_load(p->hdr + 12) != r->got || le32_load(p->hdr + 16) != p->datal)
			return -EPROTO; /* DATAO in order, DATAL = the data carried */
		if (p->datal > r->rcap - r->got && r->rbuf)
			return -EPROTO;
		if (r->rbuf)
			memcpy((uint8_t *)r->rbuf + r->got, p->data, p->datal);
		r->got += p->datal;
		if (p->flags & NVME_TCP_F_SUCCESS) {
			memset(&r->cqe, 0, sizeof(r->cqe));
			r->cqe.cid = le16_make(le16_load(p->hdr + 8));
			r->status = 0;
			r->success_flag = r->done = true;
			return 1;
		}
		return 0;
	}
	if (p->type != NVME_TCP_CAPSULE_RESP || p->hlen != NVME_TCP_RESP_HLEN)
		return -EPROTO;
	memcpy(&r->cqe, p->hdr + NVME_TCP_CH_LEN, sizeof(r->cqe));
	r->status = (uint16_t)((le16_get(r->cqe.status) >> 1) & 0x7ff);
	r->done = true;
	return 1;
}

int nth_r2t(const struct nth_pdu *p, uint16_t *cccid, uint16_t *ttag, uint32_t *r2to, uint32_t *r2tl)
{
	if (p->type != NVME_TCP_R2T || p->hlen != NVME_TCP_DATA_HLEN)
		return -EPROTO;
	*cccid = le16_load(p->hdr + 8);
	*ttag = le16_load(p->hdr + 10);
	*r2to = le32_load(p->hdr + 12);
	*r2tl = le32_load(p->hdr + 16);
	return 0;
}
