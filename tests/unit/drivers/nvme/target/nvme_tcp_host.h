/*
 * nvme_tcp_host.h - the host side of NVMe/TCP for host tests and fuzzers: builders for
 * the PDUs a host sends (ICReq, CapsuleCmd, H2CData, H2CTermReq) and for the commands it
 * carries (I/O reads and writes, Connect, properties: fake_nvmet_transport.h's ft_*),
 * and a parser for what the target sends back (whole PDUs, digests checked) with a
 * collector that follows one command's C2HData to its CapsuleResp.
 *
 * Everything works on byte buffers, so the same helpers drive the fake TCP layer
 * (fake_tcp.h), the real TCP stack over the fake NIC (tests/unit/datapath) and the
 * fuzzers. Builders return the PDU's length, 0 when it does not fit in cap. The parser
 * never trusts the bytes: errors come back as negative errno.
 */
#ifndef TESTS_UNIT_DRIVERS_NVME_TARGET_NVME_TCP_HOST_H
#define TESTS_UNIT_DRIVERS_NVME_TARGET_NVME_TCP_HOST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "drivers/nvme/nvme_regs.h"
#include "lib/byteorder.h" /* le16/32_load/_store for the PDU bytes */

#define NTH_HOSTNQN "nqn.2014-08.org.nvmexpress:uuid:aaaaaaaa-0000-4000-8000-000000000001"
#define NTH_CAPSULE_MAX (72u + 4 + 8192 + 4)   /* CapsuleCmd with the largest in-capsule data */
#define NTH_H2C_HDR 24u

/* ICReq (128 bytes): PFV, HPDA, digests asked for (NVME_TCP_DGST_*), MAXR2T. */
size_t nth_icreq(uint8_t *out, size_t cap, uint16_t pfv, uint8_t hpda, uint8_t dgst, uint32_t maxr2t);

/* CapsuleCmd carrying sqe and len bytes of in-capsule data, with a header digest when
 * hdgst and a data digest (when there is data) when ddgst. */
size_t nth_capsule(uint8_t *out, size_t cap, bool hdgst, bool ddgst, const struct nvme_sqe *sqe, const void *data,
		   uint32_t len);

/* H2CData: len bytes at DATAO datao for the R2T (cccid, ttag), digests as negotiated;
 * LAST_PDU when last. */
size_t nth_h2c(uint8_t *out, size_t cap, bool hdgst, bool ddgst, uint16_t cccid, uint16_t ttag, uint32_t datao,
	       const void *data, uint32_t len, bool last);

/* H2CTermReq with FES fes (24 bytes, no data). */
size_t nth_h2c_term(uint8_t *out, size_t cap, uint16_t fes);

/* An NVM Read or Write of nlb blocks (0's based in the SQE) at slba, len data bytes
 * described by a transport SGL. */
struct nvme_sqe nth_rw_sqe(bool write, uint16_t cid, uint32_t nsid, uint64_t slba, uint32_t nlb, uint32_t len);

/* One PDU the target sent, as parsed (pointers into the caller's buffer). */
struct nth_pdu {
	uint8_t type, flags, hlen, pdo;
	uint32_t plen;
	const uint8_t *hdr;
	const uint8_t *data;     /* PDO > 0: the data (datal bytes), else NULL */
	uint32_t datal;
};

/* Parse the PDU at the front of buf (len bytes): 1 with *p set when it is whole, 0 when
 * more bytes are needed, -EBADMSG when PLEN/HLEN/PDO are inconsistent or a digest the
 * flags announce is wrong. */
int nth_parse(const uint8_t *buf, size_t len, struct nth_pdu *p);

/* Follow one command: C2HData in order into rbuf (when set), then its CapsuleResp (or a
 * C2HData with SUCCESS). */
struct nth_resp {
	void *rbuf;
	uint32_t rcap;            /* rbuf's size */
	uint32_t got;             /* data bytes received */
	bool done;
	bool success_flag;        /* completed by C2HData SUCCESS, no CapsuleResp */
	struct nvme_cqe cqe;
	uint16_t status;          /* (CQE status >> 1) & 0x7ff: SCT << 8 | SC */
};

/* Feed one PDU to r: 1 when the command completed, 0 when more PDUs belong to it,
 * -EPROTO for a PDU that does not (termination request, R2T, out-of-order data). */
int nth_resp_feed(struct nth_resp *r, const struct nth_pdu *p);

/* R2T fields: CCCID, TTAG, R2TO, R2TL. -EPROTO when p is not an R2T. */
int nth_r2t(const struct nth_pdu *p, uint16_t *cccid, uint16_t *ttag, uint32_t *r2to, uint32_t *r2tl);

#endif
