/*
 * roce_mad.h - management datagrams (IBTA vol. 1 chapter 13.4) as the GSI QP (QP 1)
 * carries them, and the communication manager's messages (chapter 12.6) this endpoint
 * reads and writes. A MAD is 256 bytes: a 24-byte common header and 232 bytes of class
 * data. Parsed into locals with length checks; built into zeroed buffers, so a MAD
 * handed to a peer carries no stale bytes.
 */
#ifndef DRIVERS_RDMA_ROCE_MAD_H
#define DRIVERS_RDMA_ROCE_MAD_H

#include <stdbool.h>
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
#define CM_REJ_NO_QP 1               /* no QP available */
#define CM_REJ_NO_RESOURCES 3        /* no resources (the connection table, or the peer's share of it) */
#define CM_REJ_TIMEOUT 4             /* the RTU never came */
#define CM_REJ_UNSUPPORTED 5         /* unsupported request (not RC, not RoCE v2 IPv4) */
#define CM_REJ_INVALID_SERVICE_ID 8  /* no listener for the REQ's service ID */
#define CM_REJ_CONSUMER 28           /* the listener refused */
#define CM_REJ_MSG_REQ 0             /* MessageRejected: the REQ */
#define CM_REJ_MSG_REP 1             /* MessageRejected: the REP */

#define CM_REQ_PRIVATE_LEN 92
#define CM_REP_PRIVATE_LEN 196
#define CM_DREQ_PRIVATE_LEN 220
#define CM_DREP_PRIVATE_LEN 224

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

/* REQ (12.6.5), as Linux sends it for RoCE v2 (table 99's offsets in the class data). */
struct roce_cm_req_msg {
	be32_t local_comm_id;        /* Local Communication ID */
	be32_t resv4;
	be64_t service_id;           /* ServiceID */
	be64_t local_ca_guid;        /* Local CA GUID */
	be32_t resv24;
	be32_t local_qkey;           /* Local Q_Key */
	be24_t local_qpn;            /* Local QPN */
	uint8_t responder_resources; /* Responder Resources */
	be24_t local_eecn;
	uint8_t initiator_depth;     /* Initiator Depth */
	be24_t remote_eecn;
	uint8_t rto_tst_e2e;         /* Remote CM Response Timeout (7:3) | Transport Service Type (2:1) | E2E flow control (0) */
	be24_t starting_psn;         /* Starting PSN */
	uint8_t lto_retry;           /* Local CM Response Timeout (7:3) | Retry Count (2:0) */
	be16_t pkey;                 /* Partition Key */
	uint8_t mtu_rdc_rnr;         /* Path Packet Payload MTU (7:4) | RDC Exists (3) | RNR Retry Count (2:0) */
	uint8_t maxcm_srq_ext;       /* Max CM Retries (7:4) | SRQ (3) | Extended Transport Type (2:0) */
	be16_t primary_local_lid, primary_remote_lid;
	uint8_t primary_local_gid[16];   /* the active side's GID */
	uint8_t primary_remote_gid[16];  /* ours */
	be32_t primary_flow;         /* Flow Label (31:12) | resv | Packet Rate (5:0) */
	uint8_t primary_traffic_class;
	uint8_t primary_hop_limit;
	uint8_t primary_sl;          /* SL (7:4) | Subnet Local (3) */
	uint8_t primary_ack_timeout; /* Local ACK Timeout (7:3) */
	uint8_t alternate[44];
	uint8_t private_data[CM_REQ_PRIVATE_LEN];
} __attribute__((packed));
_Static_assert(sizeof(struct roce_cm_req_msg) == ROCE_MAD_LEN - ROCE_MAD_HDR_LEN, "req");

/* REP (12.6.8). */
struct roce_cm_rep_msg {
	be32_t local_comm_id;
	be32_t remote_comm_id;
	be32_t local_qkey;
	be24_t local_qpn;
	uint8_t resv15;
	be24_t local_eecn;
	uint8_t resv19;
	be24_t starting_psn;
	uint8_t resv23;
	uint8_t responder_resources;
	uint8_t initiator_depth;
	uint8_t tad_fo_e2e;          /* Target ACK Delay (7:3) | Failover Accepted (2:1) | E2E flow control (0) */
	uint8_t rnr_srq;             /* RNR Retry Count (7:5) | SRQ (4) */
	be64_t local_ca_guid;
	uint8_t private_data[CM_REP_PRIVATE_LEN];
} __attribute__((packed));
_Static_assert(sizeof(struct roce_cm_rep_msg) == ROCE_MAD_LEN - ROCE_MAD_HDR_LEN, "rep");

/* RTU, DREQ, DREP, MRA (12.6.9-12.6.11, 12.6.6): the two Communication IDs lead. */
struct roce_cm_ids {
	be32_t local_comm_id;
	be32_t remote_comm_id;
} __attribute__((packed));

struct roce_cm_dreq_msg {
	be32_t local_comm_id;
	be32_t remote_comm_id;
	be24_t remote_qpn;           /* Remote QPN/EECN: the receiver's QP */
	uint8_t resv;
	uint8_t private_data[CM_DREQ_PRIVATE_LEN];
} __attribute__((packed));
_Static_assert(sizeof(struct roce_cm_dreq_msg) == ROCE_MAD_LEN - ROCE_MAD_HDR_LEN, "dreq");

/* A CM REQ in host order. */
struct roce_cm_req {
	uint32_t local_comm_id, local_qpn, starting_psn, local_qkey;
	uint64_t service_id, local_ca_guid;
	uint8_t responder_resources, initiator_depth;
	uint8_t remote_cm_timeout, local_cm_timeout, transport, retry_cnt, rnr_retry, max_cm_retries;
	uint8_t path_mtu, ack_timeout, hop_limit, traffic_class;
	bool srq;
	uint16_t pkey;
	uint8_t local_gid[16], remote_gid[16];
	uint8_t private_data[CM_REQ_PRIVATE_LEN];
};

/* A CM REP in host order (what the active side takes from it). */
struct roce_cm_rep {
	uint32_t local_comm_id, remote_comm_id, local_qpn, starting_psn;
	uint8_t responder_resources, initiator_depth, target_ack_delay, rnr_retry;
	bool srq;
};

/* rdma_cm's header at the start of a REQ's private data (RDMA_PS_TCP over IPv4): CMA version
 * 0, IP version 4 in the high nibble, the active side's port, then source and destination
 * addresses as 16-byte fields with the IPv4 address in the last 4 bytes. */
#define CM_RDMA_CM_HDR_LEN 36

/* A received MAD in host order. */
struct roce_mad {
	uint8_t mgmt_class, class_version, method;
	uint16_t status, attr_id;
	uint64_t tid;
	uint32_t attr_mod;
	/* CM REQ */
	uint32_t req_local_comm_id;
	uint64_t req_service_id;
	/* every CM message but REQ: the Communication IDs (REJ, MRA, REP, RTU, DREQ, DREP) */
	uint32_t local_comm_id, remote_comm_id;
	uint16_t rej_reason;         /* REJ */
	uint32_t dreq_remote_qpn;    /* DREQ */
};

enum roce_mad_err {
	ROCE_MAD_OK = 0,
	ROCE_MAD_SHORT,              /* not 256 bytes */
	ROCE_MAD_VERSION,            /* BaseVersion not 1, or a CM MAD not of class version 2 */
};

/* Parse a MAD of len bytes (the UD payload). Fills *out, returns ROCE_MAD_OK or why not. */
enum roce_mad_err roce_mad_parse(const uint8_t *buf, size_t len, struct roce_mad *out);

/* Parse a CM REQ MAD (256 bytes, already checked by roce_mad_parse) into *out. */
void roce_cm_parse_req(const uint8_t mad[ROCE_MAD_LEN], struct roce_cm_req *out);

/* Build the REJ answering a REQ with no listener into out[ROCE_MAD_LEN]: the REQ's
 * TransactionID, Remote Communication ID = the REQ's Local Communication ID, the reason. */
void roce_cm_build_rej(uint8_t out[ROCE_MAD_LEN], const struct roce_mad *req, uint16_t reason);

/* The CM message headers and bodies this endpoint sends, into zeroed out[ROCE_MAD_LEN]
 * (private data: len bytes, at most the message's room, the rest zero). */
void roce_cm_build_hdr(uint8_t out[ROCE_MAD_LEN], uint16_t attr_id, uint64_t tid);
void roce_cm_build_rep(uint8_t out[ROCE_MAD_LEN], uint64_t tid, const struct roce_cm_rep_msg *rep);
void roce_cm_build_req(uint8_t out[ROCE_MAD_LEN], uint64_t tid, const struct roce_cm_req_msg *req);

/* Parse a CM REP MAD (256 bytes, already checked by roce_mad_parse) into *out. */
void roce_cm_parse_rep(const uint8_t mad[ROCE_MAD_LEN], struct roce_cm_rep *out);

/* rdma_cm's private-data header (CM_RDMA_CM_HDR_LEN bytes) for a connection from src:port to
 * dst (IPv4, host order). */
void roce_cm_rdma_cm_hdr(uint8_t out[CM_RDMA_CM_HDR_LEN], uint16_t src_port, uint32_t src, uint32_t dst);
void roce_cm_build_ids(uint8_t out[ROCE_MAD_LEN], uint16_t attr_id, uint64_t tid, uint32_t local_comm_id,
		       uint32_t remote_comm_id);
void roce_cm_build_rej_ids(uint8_t out[ROCE_MAD_LEN], uint64_t tid, uint32_t local_comm_id, uint32_t remote_comm_id,
			   uint8_t msg_rejected, uint16_t reason);
void roce_cm_build_dreq(uint8_t out[ROCE_MAD_LEN], uint64_t tid, uint32_t local_comm_id, uint32_t remote_comm_id,
			uint32_t remote_qpn);

#endif
