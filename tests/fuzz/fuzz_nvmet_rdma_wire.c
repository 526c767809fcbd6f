// sources: drivers/nvme/target/nvmet_rdma_wire.c
/*
 * libFuzzer harness: the NVMe/RDMA CM REQ private data and a capsule's SGL1 as a
 * controller receives them. Input: byte 0 chooses the limits and the direction, bytes
 * 1-4 the in-capsule data length, then a 64-byte SQE, then the private data. Invariants:
 * an accepted REQ lies within the limits; an accepted SGL describes data inside the
 * capsule (in-capsule) or within the per-command limit (keyed), and a refused one
 * describes none.
 */
#include <assert.h>
#include <stdint.h>
#include <string.h>
#include "drivers/nvme/target/nvmet_rdma_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t sqe[64];
	struct nvmet_rdma_cm_limits lim = { .max_qid = 1u + (data[0] & 15), .admin_depth = 32, .io_depth = 64,
					    .max_hrqsize = 128 };
	struct nvmet_rdma_cm_params p;
	struct nvmet_rdma_sgl s;

	if (size < 5 + sizeof(sqe))
		return 0;
	uint32_t icd = le32_load(data + 1) % 8192;
	bool to_dev = data[0] & 0x80;
	uint32_t max = 4096u << ((data[0] >> 4) & 7);
	memcpy(sqe, data + 5, sizeof(sqe));
	enum nvmet_rdma_sgl_err e = nvmet_rdma_sgl_parse(sqe, icd, to_dev, max, &s);
	if (e != NVMET_RDMA_SGL_OK) {
		assert(s.kind == NVMET_RDMA_SGL_NONE && s.len == 0);
	} else if (s.kind == NVMET_RDMA_SGL_INLINE) {
		assert(to_dev && s.len && s.off <= icd && s.len <= icd - s.off);
	} else if (s.kind == NVMET_RDMA_SGL_KEYED) {
		assert(s.len && s.len <= max && s.len <= NVME_KEYED_SGL_MAX_LEN);
	}

	const uint8_t *priv = data + 5 + sizeof(sqe);
	size_t plen = size - 5 - sizeof(sqe);
	enum nvme_rdma_cm_status st = nvmet_rdma_cm_parse_req(priv, plen, &lim, &p);
	if (st == NVME_RDMA_CM_OK) {
		assert(p.qid <= lim.max_qid);
		assert(p.depth >= 2 && p.depth <= (p.qid ? lim.io_depth : lim.admin_depth));
		assert(p.hrqsize >= 1 && p.hrqsize <= lim.max_hrqsize);
		uint8_t rep[NVME_RDMA_CM_REP_LEN];
		assert(nvmet_rdma_cm_build_rep(rep, sizeof(rep), (uint16_t)p.depth) == sizeof(rep));
	} else {
		uint8_t rej[NVME_RDMA_CM_REJ_LEN];
		assert(st >= NVME_RDMA_CM_INVALID_LEN && st <= NVME_RDMA_CM_INVALID_HRQSIZE);
		assert(nvmet_rdma_cm_build_rej(rej, sizeof(rej), st) == sizeof(rej));
		assert(nvme_rdma_cm_status_name(st)[0] != '?');
	}
	return 0;
}
