/*
 * nvmet_auth_msg.c - DH-HMAC-CHAP message parsers and builders (see nvmet_auth_msg.h).
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include "../../../lib/byteorder.h"
#include "nvmet_auth_msg.h"

int nvmet_auth_parse_hdr(const uint8_t *b, size_t len, struct nvmet_auth_hdr *out)
{
	if (len < AUTH_FAIL_LEN) /* the shortest message */
		return AUTH_RCE_INCORRECT_PAYLOAD;
	out->type = b[AUTH_OFF_TYPE];
	out->id = b[AUTH_OFF_ID];
	out->tid = le16_load(b + AUTH_OFF_TID);
	return 0;
}

int nvmet_auth_parse_negotiate(const uint8_t *b, size_t len, struct nvmet_auth_negotiate *out)
{
	unsigned napd;
	bool found = false;

	if (len < AUTH_NEG_HDR_LEN)
		return AUTH_RCE_INCORRECT_PAYLOAD;
	if (b[AUTH_OFF_TYPE] != AUTH_TYPE_COMMON || b[AUTH_OFF_ID] != AUTH_ID_NEGOTIATE)
		return AUTH_RCE_INCORRECT_PROTOCOL;
	memset(out, 0, sizeof(*out));
	out->tid = le16_load(b + AUTH_OFF_TID);
	out->sc_c = b[AUTH_NEG_OFF_SC_C];
	napd = b[AUTH_NEG_OFF_NAPD];
	if (napd == 0 || napd > (len - AUTH_NEG_HDR_LEN) / AUTH_DESC_LEN)
		return AUTH_RCE_INCORRECT_PAYLOAD;
	for (unsigned i = 0; i < napd; i++) {
		const uint8_t *d = b + AUTH_NEG_HDR_LEN + (size_t)i * AUTH_DESC_LEN;
		uint8_t halen = d[AUTH_DESC_OFF_HALEN], dhlen = d[AUTH_DESC_OFF_DHLEN];

		if (d[AUTH_DESC_OFF_AUTHID] != AUTH_AUTHID_DHCHAP)
			continue; /* another protocol: not ours */
		if (found)
			return AUTH_RCE_INCORRECT_PAYLOAD; /* two DH-HMAC-CHAP descriptors */
		if (halen == 0 || halen > AUTH_DESC_IDS_MAX || dhlen == 0 || dhlen > AUTH_DESC_IDS_MAX)
			return AUTH_RCE_INCORRECT_PAYLOAD;
		found = true;
		out->nhash = halen;
		out->ndh = dhlen;
		memcpy(out->hash, d + AUTH_DESC_OFF_IDLIST, halen);
		memcpy(out->dh, d + AUTH_DESC_OFF_IDLIST + AUTH_DESC_DH_OFF, dhlen);
	}
	return found ? 0 : AUTH_RCE_PROTOCOL_UNUSABLE;
}

int nvmet_auth_parse_reply(const uint8_t *b, size_t len, struct nvmet_auth_reply *out)
{
	size_t need;

	if (len < AUTH_REPLY_HDR_LEN)
		return AUTH_RCE_INCORRECT_PAYLOAD;
	if (b[AUTH_OFF_TYPE] != AUTH_TYPE_DHCHAP || b[AUTH_OFF_ID] != AUTH_ID_REPLY)
		return AUTH_RCE_INCORRECT_PROTOCOL;
	memset(out, 0, sizeof(*out));
	out->tid = le16_load(b + AUTH_OFF_TID);
	out->hl = b[AUTH_REPLY_OFF_HL];
	out->cvalid = b[AUTH_REPLY_OFF_CVALID] & 1;
	out->dhvlen = le16_load(b + AUTH_REPLY_OFF_DHVLEN);
	out->seqnum = le32_load(b + AUTH_REPLY_OFF_SEQNUM);
	if (out->hl == 0 || out->hl > AUTH_HL_MAX)
		return AUTH_RCE_INCORRECT_PAYLOAD;
	/* RVAL and C2 are always there (C2 zeroed when CVALID is 0), then DHV */
	need = 2u * out->hl + out->dhvlen;
	if (need > len - AUTH_REPLY_HDR_LEN)
		return AUTH_RCE_INCORRECT_PAYLOAD;
	out->rval = b + AUTH_REPLY_HDR_LEN;
	out->c2 = out->rval + out->hl;
	out->dhv = out->c2 + out->hl;
	return 0;
}

int nvmet_auth_parse_success2(const uint8_t *b, size_t len, uint16_t *tid)
{
	if (len < AUTH_S2_LEN)
		return AUTH_RCE_INCORRECT_PAYLOAD;
	if (b[AUTH_OFF_TYPE] != AUTH_TYPE_DHCHAP || b[AUTH_OFF_ID] != AUTH_ID_SUCCESS2)
		return AUTH_RCE_INCORRECT_PROTOCOL;
	*tid = le16_load(b + AUTH_OFF_TID);
	return 0;
}

int nvmet_auth_parse_failure(const uint8_t *b, size_t len, struct nvmet_auth_failure *out)
{
	if (len < AUTH_FAIL_LEN)
		return AUTH_RCE_INCORRECT_PAYLOAD;
	if (b[AUTH_OFF_TYPE] != AUTH_TYPE_COMMON ||
	    (b[AUTH_OFF_ID] != AUTH_ID_FAILURE2 && b[AUTH_OFF_ID] != AUTH_ID_FAILURE1))
		return AUTH_RCE_INCORRECT_PROTOCOL;
	out->tid = le16_load(b + AUTH_OFF_TID);
	out->rc = b[AUTH_FAIL_OFF_RC];
	out->rce = b[AUTH_FAIL_OFF_RCE];
	return 0;
}

int nvmet_auth_build_challenge(uint8_t *b, size_t cap, uint16_t tid, uint8_t hashid, uint8_t hl, const uint8_t *c1,
			       uint32_t s1, uint8_t dhgid, const uint8_t *dhv, uint16_t dhvlen)
{
	size_t len = AUTH_CHAL_HDR_LEN + (size_t)hl + dhvlen;

	if (len > cap)
		return -ENOSPC;
	memset(b, 0, AUTH_CHAL_HDR_LEN);
	b[AUTH_OFF_TYPE] = AUTH_TYPE_DHCHAP;
	b[AUTH_OFF_ID] = AUTH_ID_CHALLENGE;
	le16_store(b + AUTH_OFF_TID, tid);
	b[AUTH_CHAL_OFF_HL] = hl;
	b[AUTH_CHAL_OFF_HASHID] = hashid;
	b[AUTH_CHAL_OFF_DHGID] = dhgid;
	le16_store(b + AUTH_CHAL_OFF_DHVLEN, dhvlen);
	le32_store(b + AUTH_CHAL_OFF_SEQNUM, s1);
	memcpy(b + AUTH_CHAL_HDR_LEN, c1, hl);
	if (dhvlen)
		memcpy(b + AUTH_CHAL_HDR_LEN + hl, dhv, dhvlen);
	return (int)len;
}

int nvmet_auth_build_success1(uint8_t *b, size_t cap, uint16_t tid, uint8_t hl, const uint8_t *rval)
{
	size_t len = AUTH_S1_HDR_LEN + (rval ? hl : 0u);

	if (len > cap)
		return -ENOSPC;
	memset(b, 0, AUTH_S1_HDR_LEN);
	b[AUTH_OFF_TYPE] = AUTH_TYPE_DHCHAP;
	b[AUTH_OFF_ID] = AUTH_ID_SUCCESS1;
	le16_store(b + AUTH_OFF_TID, tid);
	b[AUTH_S1_OFF_HL] = hl;
	if (rval) {
		b[AUTH_S1_OFF_RVALID] = 1;
		memcpy(b + AUTH_S1_HDR_LEN, rval, hl);
	}
	return (int)len;
}

int nvmet_auth_build_failure1(uint8_t *b, size_t cap, uint16_t tid, uint8_t rce)
{
	if (cap < AUTH_FAIL_LEN)
		return -ENOSPC;
	memset(b, 0, AUTH_FAIL_LEN);
	b[AUTH_OFF_TYPE] = AUTH_TYPE_COMMON;
	b[AUTH_OFF_ID] = AUTH_ID_FAILURE1;
	le16_store(b + AUTH_OFF_TID, tid);
	b[AUTH_FAIL_OFF_RC] = AUTH_FAIL_RC_FAILED;
	b[AUTH_FAIL_OFF_RCE] = rce;
	return AUTH_FAIL_LEN;
}
