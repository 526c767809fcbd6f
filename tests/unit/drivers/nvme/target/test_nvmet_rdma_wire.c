// sources: drivers/nvme/target/nvmet_rdma_wire.c
/*
 * NVMe/RDMA wire formats: the CM REQ private data parser gives every reject status for
 * its rule (length, record format, queue ID, HSQSIZE for admin and I/O queues, HRQSIZE),
 * REP/REJ builders write the spec's layout, SGL1 parsing of keyed data blocks (address
 * and invalidate sub types, 24-bit length, key) and in-capsule data (offset and length
 * inside what the capsule carried, direction), and the discovery TSAS bytes.
 */
#include <criterion/criterion.h>
#include <string.h>
#include "drivers/nvme/target/nvmet_rdma_wire.h"

static const struct nvmet_rdma_cm_limits lim = { .max_qid = 16, .admin_depth = 32, .io_depth = 64,
						 .max_hrqsize = 1024 };

static void req(uint8_t *p, uint16_t recfmt, uint16_t qid, uint16_t hrq, uint16_t hsq, uint16_t cntlid)
{
	memset(p, 0xee, 40);
	le16_store(p + 0, recfmt);
	le16_store(p + 2, qid);
	le16_store(p + 4, hrq);
	le16_store(p + 6, hsq);
	le16_store(p + 8, cntlid);
}

Test(nvmet_rdma_wire, cm_req_accepted)
{
	uint8_t p[40];
	struct nvmet_rdma_cm_params o;

	req(p, 0, 0, 32, 31, 0xffff);
	cr_assert_eq(nvmet_rdma_cm_parse_req(p, 32, &lim, &o), NVME_RDMA_CM_OK);
	cr_assert_eq(o.qid, 0);
	cr_assert_eq(o.depth, 32);
	cr_assert_eq(o.hrqsize, 32);
	cr_assert_eq(o.cntlid, 0xffff);
	req(p, 0, 16, 64, 63, 1);
	cr_assert_eq(nvmet_rdma_cm_parse_req(p, 40, &lim, &o), NVME_RDMA_CM_OK, "longer private data is fine");
	cr_assert_eq(o.qid, 16);
	cr_assert_eq(o.depth, 64);
}

Test(nvmet_rdma_wire, cm_req_rejects)
{
	uint8_t p[40];
	struct nvmet_rdma_cm_params o;

	req(p, 0, 0, 32, 31, 0);
	cr_assert_eq(nvmet_rdma_cm_parse_req(p, 31, &lim, &o), NVME_RDMA_CM_INVALID_LEN);
	cr_assert_eq(nvmet_rdma_cm_parse_req(NULL, 0, &lim, &o), NVME_RDMA_CM_INVALID_LEN);
	req(p, 1, 0, 32, 31, 0);
	cr_assert_eq(nvmet_rdma_cm_parse_req(p, 32, &lim, &o), NVME_RDMA_CM_INVALID_RECFMT);
	req(p, 0, 17, 32, 31, 0);
	cr_assert_eq(nvmet_rdma_cm_parse_req(p, 32, &lim, &o), NVME_RDMA_CM_INVALID_QID);
	req(p, 0, 0, 33, 32, 0);
	cr_assert_eq(nvmet_rdma_cm_parse_req(p, 32, &lim, &o), NVME_RDMA_CM_INVALID_HSQSIZE, "admin: 33 entries");
	req(p, 0, 1, 65, 64, 0);
	cr_assert_eq(nvmet_rdma_cm_parse_req(p, 32, &lim, &o), NVME_RDMA_CM_INVALID_HSQSIZE, "I/O: 65 entries");
	req(p, 0, 1, 65, 0, 0);
	cr_assert_eq(nvmet_rdma_cm_parse_req(p, 32, &lim, &o), NVME_RDMA_CM_INVALID_HSQSIZE, "one entry");
	req(p, 0, 1, 0, 63, 0);
	cr_assert_eq(nvmet_rdma_cm_parse_req(p, 32, &lim, &o), NVME_RDMA_CM_INVALID_HRQSIZE);
	req(p, 0, 1, 1025, 63, 0);
	cr_assert_eq(nvmet_rdma_cm_parse_req(p, 32, &lim, &o), NVME_RDMA_CM_INVALID_HRQSIZE);
	cr_assert_str_eq(nvme_rdma_cm_status_name(NVME_RDMA_CM_INVALID_HRQSIZE), "invalid host RQ size");
	cr_assert_str_eq(nvme_rdma_cm_status_name(200), "?");
}

Test(nvmet_rdma_wire, cm_rep_rej_layout)
{
	uint8_t b[40];
	memset(b, 0xaa, sizeof(b));
	cr_assert_eq(nvmet_rdma_cm_build_rep(b, 31, 64), 0);
	cr_assert_eq(nvmet_rdma_cm_build_rep(b, sizeof(b), 64), 32);
	cr_assert_eq(le16_load(b), 0);
	cr_assert_eq(le16_load(b + 2), 64);
	for (unsigned i = 4; i < 32; i++)
		cr_assert_eq(b[i], 0, "reserved byte %u zero", i);
	cr_assert_eq(b[32], 0xaa, "nothing past the record");
	cr_assert_eq(nvmet_rdma_cm_build_rej(b, 3, NVME_RDMA_CM_NO_RSC), 0);
	cr_assert_eq(nvmet_rdma_cm_build_rej(b, 4, NVME_RDMA_CM_NO_RSC), 4);
	cr_assert_eq(le16_load(b), 0);
	cr_assert_eq(le16_load(b + 2), NVME_RDMA_CM_NO_RSC);
}

static void keyed(uint8_t *sqe, uint64_t addr, uint32_t len, uint32_t key, uint8_t sub)
{
	memset(sqe, 0, 64);
	le64_store(sqe + 24, addr);
	sqe[32] = (uint8_t)len;
	sqe[33] = (uint8_t)(len >> 8);
	sqe[34] = (uint8_t)(len >> 16);
	le32_store(sqe + 35, key);
	sqe[39] = (uint8_t)(0x40 | sub);
}

static void inline_sgl(uint8_t *sqe, uint64_t off, uint32_t len)
{
	memset(sqe, 0, 64);
	le64_store(sqe + 24, off);
	le32_store(sqe + 32, len);
	sqe[39] = 0x01;
}

Test(nvmet_rdma_wire, keyed_sgl)
{
	uint8_t sqe[64];
	struct nvmet_rdma_sgl s;

	keyed(sqe, 0x1122334455667788ull, 0x020000, 0xdeadbeef, 0x0);
	cr_assert_eq(nvmet_rdma_sgl_parse(sqe, 0, false, 1u << 20, &s), NVMET_RDMA_SGL_OK);
	cr_assert_eq(s.kind, NVMET_RDMA_SGL_KEYED);
	cr_assert_eq(s.addr, 0x1122334455667788ull);
	cr_assert_eq(s.len, 0x020000);
	cr_assert_eq(s.key, 0xdeadbeef);
	cr_assert(!s.invalidate);
	keyed(sqe, 0x1000, 4096, 0x1234, 0xf);
	cr_assert_eq(nvmet_rdma_sgl_parse(sqe, 4096, true, 1u << 20, &s), NVMET_RDMA_SGL_OK);
	cr_assert(s.invalidate, "sub type F: Invalidate Key");
	keyed(sqe, 0x1000, 0xffffff, 0x1234, 0x0);
	cr_assert_eq(nvmet_rdma_sgl_parse(sqe, 0, true, 1u << 20, &s), NVMET_RDMA_SGL_TOO_LONG);
	cr_assert_eq(s.kind, NVMET_RDMA_SGL_NONE);
	keyed(sqe, 0x1000, 0, 0x1234, 0x0);
	cr_assert_eq(nvmet_rdma_sgl_parse(sqe, 0, true, 1u << 20, &s), NVMET_RDMA_SGL_OK);
	cr_assert_eq(s.kind, NVMET_RDMA_SGL_NONE, "length 0: no data");
	keyed(sqe, 0x1000, 512, 0x1234, 0x1);
	cr_assert_eq(nvmet_rdma_sgl_parse(sqe, 0, true, 1u << 20, &s), NVMET_RDMA_SGL_BAD_TYPE, "keyed sub type 1");
	keyed(sqe, 0x1000, 512, 0x1234, 0x0);
	sqe[39] = 0x5a;
	cr_assert_eq(nvmet_rdma_sgl_parse(sqe, 0, true, 1u << 20, &s), NVMET_RDMA_SGL_BAD_TYPE, "TCP's descriptor");
}

Test(nvmet_rdma_wire, in_capsule_sgl)
{
	uint8_t sqe[64];
	struct nvmet_rdma_sgl s;

	inline_sgl(sqe, 0, 4096);
	cr_assert_eq(nvmet_rdma_sgl_parse(sqe, 4096, true, 1u << 20, &s), NVMET_RDMA_SGL_OK);
	cr_assert_eq(s.kind, NVMET_RDMA_SGL_INLINE);
	cr_assert_eq(s.off, 0);
	cr_assert_eq(s.len, 4096);
	inline_sgl(sqe, 16, 1024);
	cr_assert_eq(nvmet_rdma_sgl_parse(sqe, 1040, true, 1u << 20, &s), NVMET_RDMA_SGL_OK);
	cr_assert_eq(s.off, 16);
	cr_assert_eq(nvmet_rdma_sgl_parse(sqe, 1039, true, 1u << 20, &s), NVMET_RDMA_SGL_BAD_OFFSET, "one byte short");
	inline_sgl(sqe, 0xffffffffffffff00ull, 0x200);
	cr_assert_eq(nvmet_rdma_sgl_parse(sqe, 4096, true, 1u << 20, &s), NVMET_RDMA_SGL_BAD_OFFSET, "no wrap");
	inline_sgl(sqe, 0, 512);
	cr_assert_eq(nvmet_rdma_sgl_parse(sqe, 512, false, 1u << 20, &s), NVMET_RDMA_SGL_BAD_DIR, "a read with data");
	inline_sgl(sqe, 0, 0);
	cr_assert_eq(nvmet_rdma_sgl_parse(sqe, 0, false, 1u << 20, &s), NVMET_RDMA_SGL_OK);
	cr_assert_eq(s.kind, NVMET_RDMA_SGL_NONE);
	sqe[39] = 0x00;
	cr_assert_eq(nvmet_rdma_sgl_parse(sqe, 0, false, 1u << 20, &s), NVMET_RDMA_SGL_BAD_TYPE, "data block, address");
}

Test(nvmet_rdma_wire, tsas)
{
	uint8_t t[256];
	memset(t, 0xff, sizeof(t));
	nvmet_rdma_tsas(t);
	cr_assert_eq(t[0], 1, "RDMA_QPTYPE reliable connected");
	cr_assert_eq(t[1], 1, "RDMA_PRTYPE not specified");
	cr_assert_eq(t[2], 1, "RDMA_CMS rdma_cm");
	for (unsigned i = 3; i < 256; i++)
		cr_assert_eq(t[i], 0);
}
