/*
 * roce_mad.h - management datagrams (IBTA vol. 1 chapter 13.4) as the GSI QP (QP 1)
 * carries them, and the communication manager's messages (chapter 12.6) this endpoint
 * reads and writes. A MAD is 256 bytes: a 24-byte common header and 232 bytes of class
 * data. Parsed into locals with length checks; built into zeroed buffers, so a MAD
 * handed to a peer carries no stale bytes.
 */
#ifndef DRIVERS_RDMA_ROCE_MAD_H
#define DRIVERS_RDMA_ROCE_MAD_H

#include <stddef.h>
#include <stdint.h>
#include "roce_wire.h"

#define ROCE_MAD_LEN 256
#define ROCE_MAD_HDR_LEN 24
#define ROCE_GSI_QKEY 0x80010000u    /* the well-known Q_Key of QP 1 */
#define MAD_BASE_VERSION 1
#define MAD_CLASS_CM 0x07            /* communication management */
#define MAD_CM_CLASS_VERSION 2
#define MAD_METHOD_SEND 0x03
#define MAD_METHOD_RESPONSE 0x80     /* R bit of the method byte */

/* CM attribute IDs (table 98). */
#define CM_ATTR_REQ 0x0010
#define CM_ATTR_MRA 0x0011
#define CM_ATTR_REJ 0x0012
#define CM_ATTR_REP 0x0013
#define CM_ATTR_RTU 0x0014
#define CM_ATTR_DREQ 0x0015
#define CM_ATTR_DREP 0x0016

/* REJ reasons (table 112) this endpoint sends. */
#define CM_REJ_INVALID_SERVICE_ID 8  /* no listener for the REQ's service ID */
#define CM_REJ_MSG_REQ 0             /* MessageRejected: the REQ */

/* The MAD common header (13.4.2). */
struct roce_mad_hdr {
	uint8_t base_version;        /* BaseVersion: 1 */
	uint8_t mgmt_class;          /* MgmtClass */
	uint8_t class_version;       /* ClassVersion */
	uint8_t method;              /* R (bit 7) | Method */
	be16_t status;
	be16_t class_specific;
	be64_t tid;                  /* TransactionID */
	be16_t attr_id;              /* AttributeID */
	be16_t resv;
	be32_t attr_mod;             /* AttributeModifier */
} __attribute__((packed));
_Static_assert(sizeof(struct roce_mad_hdr) == ROCE_MAD_HDR_LEN, "mad header");

/* The first fields of a CM REQ (12.6.5) the passive side needs to answer it. */
struct roce_cm_req_head {
	be32_t local_comm_id;        /* Local Communication ID */
	be32_t resv;
	be64_t service_id;           /* ServiceID: for rdma_cm, 0x0000000001 PS PORT */
} __attribute__((packed));

/* REJ (12.6.7): 232 bytes of class data. */
struct roce_cm_rej {
	be32_t local_comm_id;        /* Local Communication ID (the rejecter's, 0 without state) */
	be32_t remote_comm_id;       /* Remote Communication ID: the REQ's local one */
	uint8_t msg_rejected;        /* bits 7:6 MessageRejected: 0 REQ, 1 REP, 2 other */
	uint8_t rej_info_len;        /* bits 7:1 RejectInfoLength */
	be16_t reason;               /* Reason */
	uint8_t ari[72];             /* Additional Rejection Information */
	uint8_t private_data[148];
} __attribute__((packed));
_Static_assert(sizeof(struct roce_cm_rej) == ROCE_MAD_LEN - ROCE_MAD_HDR_LEN, "rej");

/* A received MAD in host order. */
struct roce_mad {
	uint8_t mgmt_class, class_version, method;
	uint16_t status, attr_id;
	uint64_t tid;
	uint32_t attr_mod;
	/* CM REQ */
	uint32_t req_local_comm_id;
	uint64_t req_service_id;
};

enum roce_mad_err {
	ROCE_MAD_OK = 0,
	ROCE_MAD_SHORT,              /* not 256 bytes */
	ROCE_MAD_VERSION,            /* BaseVersion not 1, or a CM MAD not of class version 2 */
};

/* Parse a MAD of len bytes (the UD payload). Fills *out, returns ROCE_MAD_OK or why not. */
enum roce_mad_err roce_mad_parse(const uint8_t *buf, size_t len, struct roce_mad *out);

/* Build the REJ answering a REQ with no listener into out[ROCE_MAD_LEN]: the REQ's
 * TransactionID, Remote Communication ID = the REQ's Local Communication ID, the reason. */
void roce_cm_build_rej(uint8_t out[ROCE_MAD_LEN], const struct roce_mad *req, uint16_t reason);

#endif
