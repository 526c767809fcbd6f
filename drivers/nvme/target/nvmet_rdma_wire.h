/*
 * nvmet_rdma_wire.h - the wire formats of the NVMe/RDMA transport (NVM Express RDMA
 * Transport Specification 1.0, with NVMe over Fabrics): the private data of the RDMA CM
 * messages that set up one NVMe queue per RC queue pair (REQ: RECFMT, QID, HRQSIZE,
 * HSQSIZE, CNTLID; REP: RECFMT, CRQSIZE; REJ: RECFMT, STS with the NVMe/RDMA reject
 * status), the SGL descriptors a command capsule may carry (Keyed SGL Data Block with
 * sub type Address or Invalidate Key, Data Block with sub type Offset for in-capsule
 * data) and the discovery log's RDMA transport specific address subtype (TSAS).
 *
 * Everything the host sends is parsed into locals with subtraction-form length checks;
 * the builders write into zeroed buffers, so no stale byte reaches a peer.
 */
#ifndef DRIVERS_NVME_TARGET_NVMET_RDMA_WIRE_H
#define DRIVERS_NVME_TARGET_NVMET_RDMA_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "../../../lib/byteorder.h"

#define NVME_RDMA_CM_FMT_1_0 0x0     /* RECFMT: the only record format */
#define NVME_RDMA_CM_REQ_LEN 32      /* bytes of NVMe/RDMA private data in a REQ */
#define NVME_RDMA_CM_REP_LEN 32
#define NVME_RDMA_CM_REJ_LEN 4
#define NVME_RDMA_AQ_DEPTH 32        /* the most admin queue entries a host may ask for */

/* RDMA_CM_REJECT status values (STS of the REJ private data). */
enum nvme_rdma_cm_status {
	NVME_RDMA_CM_OK = 0,
	NVME_RDMA_CM_INVALID_LEN = 0x01,      /* private data shorter than the REQ record */
	NVME_RDMA_CM_INVALID_RECFMT = 0x02,   /* record format not 0 */
	NVME_RDMA_CM_INVALID_QID = 0x03,      /* queue ID beyond what the target serves */
	NVME_RDMA_CM_INVALID_HSQSIZE = 0x04,  /* host send queue size (SQ entries) out of range */
	NVME_RDMA_CM_INVALID_HRQSIZE = 0x05,  /* host receive queue size out of range */
	NVME_RDMA_CM_NO_RSC = 0x06,           /* no resources for the queue */
	NVME_RDMA_CM_INVALID_IRD = 0x07,      /* RDMA READ depth the host asks for is invalid */
	NVME_RDMA_CM_INVALID_ORD = 0x08,
	NVME_RDMA_CM_INVALID_CNTLID = 0x09,
};

/* REQ private data. */
struct nvme_rdma_cm_req_wire {
	le16_t recfmt;               /* Record Format */
	le16_t qid;                  /* Queue ID: 0 admin */
	le16_t hrqsize;              /* Host Receive Queue Size: responses the host can take */
	le16_t hsqsize;              /* Host Send Queue Size: the NVMe SQSIZE, 0's based */
	le16_t cntlid;               /* Controller ID (RDMA 1.0b; 0 from older hosts) */
	uint8_t rsvd[22];
} __attribute__((packed));
_Static_assert(sizeof(struct nvme_rdma_cm_req_wire) == NVME_RDMA_CM_REQ_LEN, "cm req");

/* REP private data. */
struct nvme_rdma_cm_rep_wire {
	le16_t recfmt;
	le16_t crqsize;              /* Controller Receive Queue Size: capsules we took room for */
	uint8_t rsvd[28];
} __attribute__((packed));
_Static_assert(sizeof(struct nvme_rdma_cm_rep_wire) == NVME_RDMA_CM_REP_LEN, "cm rep");

/* REJ private data. */
struct nvme_rdma_cm_rej_wire {
	le16_t recfmt;
	le16_t sts;                  /* enum nvme_rdma_cm_status */
} __attribute__((packed));
_Static_assert(sizeof(struct nvme_rdma_cm_rej_wire) == NVME_RDMA_CM_REJ_LEN, "cm rej");

/* What the target accepts in a REQ. */
struct nvmet_rdma_cm_limits {
	unsigned max_qid;            /* I/O queues per controller */
	unsigned admin_depth;        /* admin queue entries (HSQSIZE + 1), at most */
	unsigned io_depth;           /* I/O queue entries, at most */
	unsigned max_hrqsize;
};

/* A REQ's private data in host order. */
struct nvmet_rdma_cm_params {
	uint16_t qid, hrqsize, hsqsize, cntlid;
	unsigned depth;              /* HSQSIZE + 1: capsules the host may have outstanding */
};

/* Parse len bytes of REQ private data against lim into *out. Returns NVME_RDMA_CM_OK or
 * the reject status to send (out is then partly filled: qid is valid from INVALID_QID on). */
enum nvme_rdma_cm_status nvmet_rdma_cm_parse_req(const uint8_t *priv, size_t len,
						 const struct nvmet_rdma_cm_limits *lim,
						 struct nvmet_rdma_cm_params *out);

/* Build the REP private data (crqsize capsules) into out[room]: NVME_RDMA_CM_REP_LEN bytes
 * written, 0 when room is short. */
size_t nvmet_rdma_cm_build_rep(uint8_t *out, size_t room, uint16_t crqsize);

/* Build the REJ private data into out[room]: NVME_RDMA_CM_REJ_LEN, or 0 when short. */
size_t nvmet_rdma_cm_build_rej(uint8_t *out, size_t room, enum nvme_rdma_cm_status sts);

/* Name of a reject status for logs. */
const char *nvme_rdma_cm_status_name(enum nvme_rdma_cm_status s);

/* --- SGL1 of a command capsule --- */

#define NVME_SGL_KEYED_SUB_ADDRESS 0x0   /* Keyed SGL Data Block: sub type Address */
#define NVME_SGL_KEYED_SUB_INVALIDATE 0xf /* ... sub type Invalidate Key: SEND with Invalidate asked */
#define NVME_KEYED_SGL_MAX_LEN 0xffffffu /* the Length field is 3 bytes */

enum nvmet_rdma_sgl_kind {
	NVMET_RDMA_SGL_NONE = 0,     /* no data (keyed with length 0, or an empty in-capsule block) */
	NVMET_RDMA_SGL_KEYED,        /* in host memory: RDMA READ (write data) or WRITE (read data) */
	NVMET_RDMA_SGL_INLINE,       /* in the capsule after the SQE */
};

/* Why SGL1 cannot be served. */
enum nvmet_rdma_sgl_err {
	NVMET_RDMA_SGL_OK = 0,
	NVMET_RDMA_SGL_BAD_TYPE,     /* neither of the two descriptors above (the core answers
				      * SGL Descriptor Type Invalid) */
	NVMET_RDMA_SGL_BAD_OFFSET,   /* in-capsule data beyond what the capsule carried */
	NVMET_RDMA_SGL_BAD_DIR,      /* in-capsule data for a command that moves no data to us */
	NVMET_RDMA_SGL_TOO_LONG,     /* more than the transport moves per command */
};

struct nvmet_rdma_sgl {
	enum nvmet_rdma_sgl_kind kind;
	uint64_t addr;               /* keyed: the host's virtual address */
	uint32_t len;                /* bytes described */
	uint32_t key;                /* keyed: the host's R_Key */
	bool invalidate;             /* keyed, sub type Invalidate Key: answer with SEND with Invalidate */
	uint32_t off;                /* in-capsule: offset after the SQE (ICDOFF is 0) */
};

/*
 * Parse SGL1 of the 64-byte SQE at sqe. icd: bytes of in-capsule data that came after the
 * SQE in this capsule; to_device: the command moves data host -> controller; max_len:
 * bytes per command. Fills *out (kind NONE on error) and returns why not.
 */
enum nvmet_rdma_sgl_err nvmet_rdma_sgl_parse(const uint8_t sqe[64], uint32_t icd, bool to_device, uint32_t max_len,
					     struct nvmet_rdma_sgl *out);

/* --- discovery: TSAS of an RDMA port (Transport Specific Address Subtype) --- */
#define NVMF_RDMA_QPTYPE_CONNECTED 1     /* RDMA_QPTYPE: reliable connected */
#define NVMF_RDMA_PRTYPE_NOT_SPECIFIED 1 /* RDMA_PRTYPE: no provider type given */
#define NVMF_RDMA_CMS_RDMA_CM 1          /* RDMA_CMS: the RDMA CM */
#define NVMF_RDMA_TSAS_QPTYPE 0
#define NVMF_RDMA_TSAS_PRTYPE 1
#define NVMF_RDMA_TSAS_CMS 2
#define NVMF_RDMA_TSAS_PKEY 8            /* RDMA_PKEY (2): 0 none */

/* Fill the 256-byte TSAS of a discovery log entry for an RDMA port (Linux nvmet's
 * defaults, which nvme-cli prints as "rdma_prtype: not specified, rdma_qptype: connected,
 * rdma_cms: rdma-cm, rdma_pkey: 0x0000"). Header-only: the core's discovery log uses it. */
static inline void nvmet_rdma_tsas(uint8_t tsas[256])
{
	memset(tsas, 0, 256);
	tsas[NVMF_RDMA_TSAS_QPTYPE] = NVMF_RDMA_QPTYPE_CONNECTED;
	tsas[NVMF_RDMA_TSAS_PRTYPE] = NVMF_RDMA_PRTYPE_NOT_SPECIFIED;
	tsas[NVMF_RDMA_TSAS_CMS] = NVMF_RDMA_CMS_RDMA_CM;
}

#endif
