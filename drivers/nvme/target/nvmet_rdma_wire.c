/*
 * nvmet_rdma_wire.c - NVMe/RDMA CM private data and capsule SGLs (nvmet_rdma_wire.h).
 */
#include <string.h>
#include "nvmet_rdma_wire.h"

static const char *const cm_status_names[] = {
	[NVME_RDMA_CM_OK] = "ok",
	[NVME_RDMA_CM_INVALID_LEN] = "invalid length",
	[NVME_RDMA_CM_INVALID_RECFMT] = "invalid record format",
	[NVME_RDMA_CM_INVALID_QID] = "invalid queue ID",
	[NVME_RDMA_CM_INVALID_HSQSIZE] = "invalid host SQ size",
	[NVME_RDMA_CM_INVALID_HRQSIZE] = "invalid host RQ size",
	[NVME_RDMA_CM_NO_RSC] = "resource not found",
	[NVME_RDMA_CM_INVALID_IRD] = "invalid IRD",
	[NVME_RDMA_CM_INVALID_ORD] = "invalid ORD",
	[NVME_RDMA_CM_INVALID_CNTLID] = "invalid controller ID",
};

const char *nvme_rdma_cm_status_name(enum nvme_rdma_cm_status s)
{
	return (unsigned)s < sizeof(cm_status_names) / sizeof(cm_status_names[0]) && cm_status_names[s]
		       ? cm_status_names[s]
		       : "?";
}

enum nvme_rdma_cm_status nvmet_rdma_cm_parse_req(const uint8_t *priv, size_t len,
						 const struct nvmet_rdma_cm_limits *lim,
						 struct nvmet_rdma_cm_params *out)
{
	struct nvme_rdma_cm_req_wire w;

	memset(out, 0, sizeof(*out));
	if (!priv || len < sizeof(w))
		return NVME_RDMA_CM_INVALID_LEN;
	memcpy(&w, priv, sizeof(w));
	if (le16_get(w.recfmt) != NVME_RDMA_CM_FMT_1_0)
		return NVME_RDMA_CM_INVALID_RECFMT;
	out->qid = le16_get(w.qid);
	out->hrqsize = le16_get(w.hrqsize);
	out->hsqsize = le16_get(w.hsqsize);
	out->cntlid = le16_get(w.cntlid);
	out->depth = (unsigned)out->hsqsize + 1;
	if (out->qid > lim->max_qid)
		return NVME_RDMA_CM_INVALID_QID;
	/* HSQSIZE is the NVMe SQSIZE: 0's based, at least 2 entries (1) */
	if (out->hsqsize == 0 || out->depth > (out->qid ? lim->io_depth : lim->admin_depth))
		return NVME_RDMA_CM_INVALID_HSQSIZE;
	/* the host must be able to take a response for every command it may send */
	if (out->hrqsize == 0 || out->hrqsize > lim->max_hrqsize)
		return NVME_RDMA_CM_INVALID_HRQSIZE;
	return NVME_RDMA_CM_OK;
}

size_t nvmet_rdma_cm_build_rep(uint8_t *out, size_t room, uint16_t crqsize)
{
	struct nvme_rdma_cm_rep_wire w;

	if (room < sizeof(w))
		return 0;
	memset(&w, 0, sizeof(w));
	w.recfmt = le16_make(NVME_RDMA_CM_FMT_1_0);
	w.crqsize = le16_make(crqsize);
	memcpy(out, &w, sizeof(w));
	return sizeof(w);
}

size_t nvmet_rdma_cm_build_rej(uint8_t *out, size_t room, enum nvme_rdma_cm_status sts)
{
	struct nvme_rdma_cm_rej_wire w;

	if (room < sizeof(w))
		return 0;
	w.recfmt = le16_make(NVME_RDMA_CM_FMT_1_0);
	w.sts = le16_make((uint16_t)sts);
	memcpy(out, &w, sizeof(w));
	return sizeof(w);
}

/* SGL1 starts at SQE byte 24 (DPTR); its identifier is its byte 15. */
#define SGL1 24

enum nvmet_rdma_sgl_err nvmet_rdma_sgl_parse(const uint8_t sqe[64], uint32_t icd, bool to_device, uint32_t max_len,
					     struct nvmet_rdma_sgl *out)
{
	const uint8_t *d = sqe + SGL1;
	uint8_t type = d[15] >> 4, sub = d[15] & 0xf;
	uint64_t addr = le64_load(d);

	memset(out, 0, sizeof(*out));
	if (type == 0x4 && (sub == NVME_SGL_KEYED_SUB_ADDRESS || sub == NVME_SGL_KEYED_SUB_INVALIDATE)) {
		/* Keyed SGL Data Block: Address (8), Length (3), Key (4) */
		uint32_t len = (uint32_t)d[8] | (uint32_t)d[9] << 8 | (uint32_t)d[10] << 16;
		if (len > max_len)
			return NVMET_RDMA_SGL_TOO_LONG;
		out->addr = addr;
		out->len = len;
		out->key = le32_load(d + 11);
		out->invalidate = sub == NVME_SGL_KEYED_SUB_INVALIDATE;
		out->kind = len ? NVMET_RDMA_SGL_KEYED : NVMET_RDMA_SGL_NONE;
		return NVMET_RDMA_SGL_OK;
	}
	if (type == 0x0 && sub == 0x1) {
		/* Data Block, sub type Offset: in-capsule data at Address after the SQE */
		uint32_t len = le32_load(d + 8);
		if (len && !to_device)
			return NVMET_RDMA_SGL_BAD_DIR;
		if (addr > icd || len > icd - addr)
			return NVMET_RDMA_SGL_BAD_OFFSET;
		out->off = (uint32_t)addr;
		out->len = len;
		out->kind = len ? NVMET_RDMA_SGL_INLINE : NVMET_RDMA_SGL_NONE;
		return NVMET_RDMA_SGL_OK;
	}
	return NVMET_RDMA_SGL_BAD_TYPE;
}
