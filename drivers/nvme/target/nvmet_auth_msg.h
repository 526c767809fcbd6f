/*
 * nvmet_auth_msg.h - the DH-HMAC-CHAP messages of NVMe in-band authentication (TP 8006)
 * parsed into locals and built, apart from the state machine (nvmet_auth.c). Parsers take
 * untrusted bytes and never read past len; the slices they return point into the caller's
 * buffer. Builders write whole messages, reserved bytes zeroed.
 */
#ifndef DRIVERS_NVME_TARGET_NVMET_AUTH_MSG_H
#define DRIVERS_NVME_TARGET_NVMET_AUTH_MSG_H

#include <stddef.h>
#include <stdint.h>
#include "nvmet_auth_wire.h"

/* The header every message starts with. */
struct nvmet_auth_hdr {
	uint8_t type;                /* AUTH_TYPE */
	uint8_t id;                  /* AUTH_ID */
	uint16_t tid;                /* T_ID */
};

/* AUTH_Negotiate: the DH-HMAC-CHAP descriptor's lists (other protocols' descriptors skipped). */
struct nvmet_auth_negotiate {
	uint16_t tid;
	uint8_t sc_c;                /* SC_C */
	uint8_t nhash, ndh;          /* HALEN, DHLEN */
	uint8_t hash[AUTH_DESC_IDS_MAX];
	uint8_t dh[AUTH_DESC_IDS_MAX];
};

/* DH-HMAC-CHAP_Reply. */
struct nvmet_auth_reply {
	uint16_t tid;
	uint8_t hl;                  /* HL */
	uint8_t cvalid;              /* CVALID bit 0 */
	uint16_t dhvlen;             /* DHVLEN */
	uint32_t seqnum;             /* S2 */
	const uint8_t *rval;         /* HL bytes: the host's response */
	const uint8_t *c2;           /* HL bytes: the host's challenge to the controller */
	const uint8_t *dhv;          /* DHVLEN bytes: the host's DH public value */
};

/* AUTH_Failure2 (and Failure1, parsed the same way). */
struct nvmet_auth_failure {
	uint16_t tid;
	uint8_t rc, rce;             /* Reason Code, Reason Code Explanation */
};

/* Each parser: 0, or a Reason Code Explanation (AUTH_RCE_*) saying what is wrong. */
int nvmet_auth_parse_hdr(const uint8_t *b, size_t len, struct nvmet_auth_hdr *out);
int nvmet_auth_parse_negotiate(const uint8_t *b, size_t len, struct nvmet_auth_negotiate *out);
int nvmet_auth_parse_reply(const uint8_t *b, size_t len, struct nvmet_auth_reply *out);
int nvmet_auth_parse_success2(const uint8_t *b, size_t len, uint16_t *tid);
int nvmet_auth_parse_failure(const uint8_t *b, size_t len, struct nvmet_auth_failure *out);

/* Challenge: C1 of hl bytes, S1, and the controller's DH value (dhvlen bytes, 0 for the
 * null group). Returns the message length, or -ENOSPC when cap is too small. */
int nvmet_auth_build_challenge(uint8_t *b, size_t cap, uint16_t tid, uint8_t hashid, uint8_t hl, const uint8_t *c1,
			       uint32_t s1, uint8_t dhgid, const uint8_t *dhv, uint16_t dhvlen);
/* Success1: RVAL (hl bytes) when rval is non-NULL (bidirectional), RVALID 0 otherwise. */
int nvmet_auth_build_success1(uint8_t *b, size_t cap, uint16_t tid, uint8_t hl, const uint8_t *rval);
/* Failure1 with Reason Code 01h and the explanation rce. */
int nvmet_auth_build_failure1(uint8_t *b, size_t cap, uint16_t tid, uint8_t rce);

#endif
