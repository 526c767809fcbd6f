/*
 * nvmet_auth_wire.h - NVMe in-band authentication on the wire (NVMe Base 2.0 section 8.13,
 * TP 8006): the AUTH_Send / AUTH_Receive fabrics commands and the DH-HMAC-CHAP messages
 * they carry. Offsets are byte offsets into the SQE or into the message; multi-byte fields
 * are little-endian and read with lib/byteorder.h's le16_load/le32_load.
 */
#ifndef DRIVERS_NVME_TARGET_NVMET_AUTH_WIRE_H
#define DRIVERS_NVME_TARGET_NVMET_AUTH_WIRE_H

/* --- AUTH_Send (fctype 05h) / AUTH_Receive (fctype 06h) SQE ---
 * CDW10 (bytes 40-43): bits 31:24 SECP, 23:16 SPSP1, 15:08 SPSP0, 07:00 reserved; little-endian,
 * so SECP is byte 43 (as Linux's struct nvmf_auth_send_command lays it out). */
#define NVMF_AUTH_OFF_SPSP0 41       /* SP Specific 0 (1): 01h */
#define NVMF_AUTH_OFF_SPSP1 42       /* SP Specific 1 (1): 01h */
#define NVMF_AUTH_OFF_SECP 43        /* Security Protocol (1): E9h, DH-HMAC-CHAP */
#define NVMF_AUTH_OFF_TL 44          /* AUTH_Send Transfer Length (4) / AUTH_Receive Allocation Length (4) */
#define NVMF_AUTH_SECP_DHCHAP 0xe9
#define NVMF_AUTH_SPSP 0x01

/* Connect response DW0 bits 17 and 18: AUTHREQ */
#define NVMF_CONNECT_AUTHREQ_ATR (1u << 17)  /* Authentication Transaction Required */
#define NVMF_CONNECT_AUTHREQ_ASCR (1u << 18) /* ... with secure channel concatenation (not offered) */

/* Status: Authentication Required (command specific, SCT 1, SC 91h) */
#define NVMET_SC_AUTH_REQUIRED NVME_SC(1, 0x91)

/* --- message header, common to every message --- */
#define AUTH_OFF_TYPE 0              /* AUTH_TYPE (1): 00h common, 01h DH-HMAC-CHAP */
#define AUTH_OFF_ID 1                /* AUTH_ID (1): the message */
#define AUTH_OFF_TID 4               /* T_ID (2): transaction identifier */
#define AUTH_TYPE_COMMON 0x00
#define AUTH_TYPE_DHCHAP 0x01
#define AUTH_ID_NEGOTIATE 0x00       /* AUTH_Negotiate (common) */
#define AUTH_ID_CHALLENGE 0x01       /* DH-HMAC-CHAP_Challenge */
#define AUTH_ID_REPLY 0x02           /* DH-HMAC-CHAP_Reply */
#define AUTH_ID_SUCCESS1 0x03        /* DH-HMAC-CHAP_Success1 */
#define AUTH_ID_SUCCESS2 0x04        /* DH-HMAC-CHAP_Success2 */
#define AUTH_ID_FAILURE2 0xf0        /* AUTH_Failure2 (common, host to controller) */
#define AUTH_ID_FAILURE1 0xf1        /* AUTH_Failure1 (common, controller to host) */

/* AUTH_Negotiate: header, then NAPD protocol descriptors of 64 bytes */
#define AUTH_NEG_OFF_SC_C 6          /* SC_C (1): secure channel concatenation, 00h none */
#define AUTH_NEG_OFF_NAPD 7          /* NAPD (1): number of protocol descriptors */
#define AUTH_NEG_HDR_LEN 8
#define AUTH_DESC_LEN 64
#define AUTH_DESC_OFF_AUTHID 0       /* AUTHID (1): 01h DH-HMAC-CHAP */
#define AUTH_DESC_OFF_HALEN 2        /* HALEN (1): hash identifiers in IDLIST[0..29] */
#define AUTH_DESC_OFF_DHLEN 3        /* DHLEN (1): DH group identifiers in IDLIST[30..59] */
#define AUTH_DESC_OFF_IDLIST 4
#define AUTH_DESC_DH_OFF 30          /* IDLIST index of the first DH group identifier */
#define AUTH_DESC_IDS_MAX 30
#define AUTH_AUTHID_DHCHAP 0x01

/* DH-HMAC-CHAP_Challenge (controller to host) */
#define AUTH_CHAL_OFF_HL 6           /* HL (1): hash length */
#define AUTH_CHAL_OFF_HASHID 8       /* HASHID (1) */
#define AUTH_CHAL_OFF_DHGID 9        /* DHGID (1) */
#define AUTH_CHAL_OFF_DHVLEN 10      /* DHVLEN (2) */
#define AUTH_CHAL_OFF_SEQNUM 12      /* SEQNUM (4): S1 */
#define AUTH_CHAL_HDR_LEN 16         /* then C1 (HL bytes), then DHV (DHVLEN bytes) */

/* DH-HMAC-CHAP_Reply (host to controller) */
#define AUTH_REPLY_OFF_HL 6          /* HL (1) */
#define AUTH_REPLY_OFF_CVALID 8      /* CVALID (1): bit 0, C2 is present */
#define AUTH_REPLY_OFF_DHVLEN 10     /* DHVLEN (2) */
#define AUTH_REPLY_OFF_SEQNUM 12     /* SEQNUM (4): S2, 0 without controller authentication */
#define AUTH_REPLY_HDR_LEN 16        /* then RVAL (HL), C2 (HL), DHV (DHVLEN) */

/* DH-HMAC-CHAP_Success1 (controller to host) */
#define AUTH_S1_OFF_HL 6             /* HL (1) */
#define AUTH_S1_OFF_RVALID 8         /* RVALID (1): bit 0, RVAL holds the controller's response */
#define AUTH_S1_HDR_LEN 16           /* then RVAL (HL) */

#define AUTH_S2_LEN 16               /* DH-HMAC-CHAP_Success2: header only */

/* AUTH_Failure1 / AUTH_Failure2 */
#define AUTH_FAIL_OFF_RC 6           /* Reason Code (1): 01h authentication failure */
#define AUTH_FAIL_OFF_RCE 7          /* Reason Code Explanation (1) */
#define AUTH_FAIL_LEN 8
#define AUTH_FAIL_RC_FAILED 0x01

/* Reason Code Explanations */
#define AUTH_RCE_FAILED 0x01           /* authentication failed */
#define AUTH_RCE_PROTOCOL_UNUSABLE 0x02 /* authentication protocol not usable */
#define AUTH_RCE_CONCAT_MISMATCH 0x03  /* secure channel concatenation mismatch */
#define AUTH_RCE_HASH_UNUSABLE 0x04    /* hash function not usable */
#define AUTH_RCE_DHGROUP_UNUSABLE 0x05 /* DH group not usable */
#define AUTH_RCE_INCORRECT_PAYLOAD 0x06
#define AUTH_RCE_INCORRECT_PROTOCOL 0x07 /* incorrect protocol message */

/* Hash function identifiers (HASHID, IDLIST) and DH group identifiers (DHGID, IDLIST) */
#define AUTH_HASH_SHA256 0x01
#define AUTH_HASH_SHA384 0x02
#define AUTH_HASH_SHA512 0x03
#define AUTH_DHGROUP_NULL 0x00
#define AUTH_DHGROUP_2048 0x01
#define AUTH_DHGROUP_3072 0x02
#define AUTH_DHGROUP_4096 0x03
#define AUTH_DHGROUP_6144 0x04
#define AUTH_DHGROUP_8192 0x05

#define AUTH_HL_MAX 64               /* SHA-512 */
#define AUTH_DHV_MAX 1024            /* ffdhe8192 */
/* The largest message either way: a Reply with C2 and an ffdhe8192 value */
#define AUTH_MSG_MAX (AUTH_REPLY_HDR_LEN + 2 * AUTH_HL_MAX + AUTH_DHV_MAX)

#endif
