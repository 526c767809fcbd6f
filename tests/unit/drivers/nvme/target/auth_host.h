/*
 * auth_host.h - the host side of DH-HMAC-CHAP for the target's tests and fuzzer: the
 * AUTH_Send / AUTH_Receive SQE and an AUTH_Negotiate offering what Linux offers.
 */
#ifndef TESTS_AUTH_HOST_H
#define TESTS_AUTH_HOST_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include "drivers/nvme/target/nvmet_auth_wire.h"
#include "lib/byteorder.h"
#include "fake_nvmet_transport.h"

/* AUTH_Send (send) or AUTH_Receive with TL/AL len and an SGL of len bytes. */
static inline struct nvme_sqe auth_sqe(bool send, uint32_t len)
{
	struct nvme_sqe s = ft_sqe(NVMF_OPC_FABRICS, 3, 0, len);
	uint8_t *b = (uint8_t *)&s;
	b[4] = send ? NVMF_FCTYPE_AUTH_SEND : NVMF_FCTYPE_AUTH_RECV;
	b[NVMF_AUTH_OFF_SECP] = NVMF_AUTH_SECP_DHCHAP;
	b[NVMF_AUTH_OFF_SPSP0] = NVMF_AUTH_SPSP;
	b[NVMF_AUTH_OFF_SPSP1] = NVMF_AUTH_SPSP;
	le32_store(b + NVMF_AUTH_OFF_TL, len);
	return s;
}

/* AUTH_Negotiate into b (72 bytes) offering SHA-256/384/512 and null..ffdhe8192; its length. */
static inline uint32_t negotiate(uint8_t *b, uint16_t tid, uint8_t sc_c)
{
	memset(b, 0, AUTH_NEG_HDR_LEN + AUTH_DESC_LEN);
	b[AUTH_OFF_TYPE] = AUTH_TYPE_COMMON;
	b[AUTH_OFF_ID] = AUTH_ID_NEGOTIATE;
	le16_store(b + AUTH_OFF_TID, tid);
	b[AUTH_NEG_OFF_SC_C] = sc_c;
	b[AUTH_NEG_OFF_NAPD] = 1;
	b[8 + AUTH_DESC_OFF_AUTHID] = AUTH_AUTHID_DHCHAP;
	b[8 + AUTH_DESC_OFF_HALEN] = 3;
	b[8 + AUTH_DESC_OFF_DHLEN] = 6;
	for (int i = 0; i < 3; i++)
		b[8 + AUTH_DESC_OFF_IDLIST + i] = (uint8_t)(AUTH_HASH_SHA256 + i);
	for (int i = 0; i < 6; i++)
		b[8 + AUTH_DESC_OFF_IDLIST + AUTH_DESC_DH_OFF + i] = (uint8_t)(AUTH_DHGROUP_NULL + i);
	return AUTH_NEG_HDR_LEN + AUTH_DESC_LEN;
}

#endif
