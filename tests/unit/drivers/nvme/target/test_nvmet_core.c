// sources: drivers/nvme/target/nvmet_core.c drivers/nvme/target/nvmet_fabrics.c drivers/nvme/target/nvmet_auth.c drivers/nvme/target/nvmet_auth_msg.c drivers/nvme/target/nvmet_auth_key.c lib/crypto.c lib/crc32.c tests/unit/net/fake_entropy.c drivers/nvme/target/nvmet_admin.c drivers/nvme/target/nvmet_ana.c drivers/nvme/target/nvmet_referral.c drivers/nvme/target/nvmet_io.c drivers/nvme/target/nvmet_bdev_ram.c drivers/nvme/target/nvmet_config.c lib/ipv4_text.c mm/pool.c lib/timer.c lib/log.c tests/unit/drivers/nvme/target/fake_nvmet_transport.c
// libs: -lmbedcrypto
/*
 * NVMe-oF target core over a fake transport and RAM disks: Connect (admin then I/O
 * queues, refusals with their IATTR/IPO), properties and the enable/shutdown sequence,
 * Identify fields, the discovery log for 2 ports x 2 subsystems with an allowlist, I/O
 * round trips and their error statuses, keep-alive expiry on the fake clock, AER on a
 * namespace change, disconnect cleanup. Pools return to zero after every test.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "drivers/nvme/target/nvmet.h"
#include "drivers/nvme/target/nvmet_wire.h"
#include "lib/byteorder.h"
#include "lib/clock.h"
#include "lib/timer.h"
#include "fake_nvmet_transport.h"
#include "tests/unit/unit_support.h"

#define HOST_A "nqn.2014-08.org.nvmexpress:uuid:aaaaaaaa-0000-4000-8000-000000000001"
#define HOST_B "nqn.2014-08.org.nvmexpress:uuid:bbbbbbbb-0000-4000-8000-000000000002"
#define VOL0 "nqn.2026-11.org.p2pstore:vol0"
#define VOL1 "nqn.2026-11.org.p2pstore:vol1"
#define DISC "nqn.2014-08.org.nvmexpress.discovery"

static const char *const config_json =
	"{ \"hosts\": [ { \"nqn\": \"" HOST_A "\" }, { \"nqn\": \"" HOST_B "\" } ],\n"
	"  \"ports\": [\n"
	"    { \"portid\": 1, \"addr\": { \"trtype\": \"tcp\", \"adrfam\": \"ipv4\", \"traddr\": \"10.0.0.1\", \"trsvcid\": \"4420\" },\n"
	"      \"subsystems\": [ \"" VOL0 "\", \"" VOL1 "\" ] },\n"
	"    { \"portid\": 2, \"addr\": { \"trtype\": \"tcp\", \"adrfam\": \"ipv4\", \"traddr\": \"10.0.0.2\", \"trsvcid\": \"4421\" },\n"
	"      \"subsystems\": [ \"" VOL1 "\" ] },\n"
	"    { \"portid\": 3, \"addr\": { \"trtype\": \"tcp\", \"adrfam\": \"ipv4\", \"traddr\": \"0.0.0.0\", \"trsvcid\": \"4422\" },\n"
	"      \"subsystems\": [ \"" VOL1 "\" ] } ],\n"
	"  \"subsystems\": [\n"
	"    { \"nqn\": \"" VOL0 "\", \"allowed_hosts\": [ \"" HOST_A "\" ],\n"
	"      \"attr\": { \"allow_any_host\": \"0\", \"serial\": \"SER0\", \"model\": \"MODEL0\", \"cntlid_min\": \"10\", \"cntlid_max\": \"11\" },\n"
	"      \"namespaces\": [\n"
	"        { \"nsid\": 1, \"enable\": 1, \"device\": { \"path\": \"/dev/nvme0n1\", \"nguid\": \"00112233-4455-6677-8899-aabbccddeeff\" } },\n"
	"        { \"nsid\": 3, \"enable\": 1, \"device\": { \"path\": \"/dev/nvme0n2\" } },\n"
	"        { \"nsid\": 5, \"enable\": 0, \"device\": { \"path\": \"/dev/nvme0n3\" } } ] },\n"
	"    { \"nqn\": \"" VOL1 "\", \"attr\": { \"allow_any_host\": \"1\" },\n"
	"      \"namespaces\": [ { \"nsid\": 1, \"enable\": 1, \"device\": { \"path\": \"/dev/nvme1n1\" } } ] } ] }\n";

static struct nvmet_config cfg;
static unsigned opens;

/* RAM disks: controller 0 -> 2048 x 512 B, controller 1 -> 256 x 4 KiB. */
static int ram_open(void *ctx, unsigned si, const struct nvmet_cfg_ns *ns, struct nvmet_bdev *out)
{
	(void)ctx;
	(void)si;
	int rc = ns->ctrl == 0 ? nvmet_bdev_ram_open(out, 2048, 9) : nvmet_bdev_ram_open(out, 256, 12);
	if (!rc) {
		opens++;
		out->has_nguid = ns->has_nguid;
		memcpy(out->nguid, ns->nguid, 16);
	}
	return rc;
}

static void setup(void)
{
	char err[200];
	unit_pools_begin();
	fake_clock_install();
	ft_hint = FT_HINT_NONE;
	cr_assert_eq(ft_target_start(config_json, &cfg, ram_open, err, sizeof(err)), 0, "%s", err);
}

static void teardown(void)
{
	nvmet_fini();
	unit_pools_end();
}

TestSuite(nvmet, .init = setup, .fini = teardown);

static uint16_t admin(struct ft_conn *c, uint8_t opc, uint32_t nsid, uint32_t cdw10, uint32_t cdw11, void *rbuf,
		      uint32_t len, struct nvme_cqe *cqe)
{
	struct nvme_sqe s = ft_sqe(opc, 7, nsid, len);
	s.cdw10 = le32_make(cdw10);
	s.cdw11 = le32_make(cdw11);
	return ft_exec(c, &s, NULL, len, rbuf, cqe);
}

static uint16_t rw(struct ft_conn *c, bool write, uint32_t nsid, uint64_t slba, uint32_t nlb, void *buf, uint32_t len)
{
	struct nvme_sqe s = ft_sqe(write ? NVME_CMD_WRITE : NVME_CMD_READ, 9, nsid, len);
	s.cdw10 = le32_make((uint32_t)slba);
	s.cdw11 = le32_make((uint32_t)(slba >> 32));
	s.cdw12 = le32_make(nlb - 1);
	return ft_exec(c, &s, write ? buf : NULL, len, write ? NULL : buf, NULL);
}

/* Admin queue connected and enabled, plus I/O queue 1. */
static int connect_all(struct ft_conn *a, struct ft_conn *io, const char *host, const char *sub, uint32_t kato)
{
	ft_open(a, 0);
	int cntlid = ft_connect_admin(a, host, sub, kato);
	cr_assert_geq(cntlid, 1, "connect status 0x%x", -cntlid);
	cr_assert_eq(ft_enable(a), 0);
	if (io) {
		ft_open(io, 0);
		cr_assert_eq(ft_connect_io(io, 1, (uint16_t)cntlid, host, sub), 0);
	}
	return cntlid;
}

Test(nvmet, connect_admin_then_io_queues)
{
	struct ft_conn a, q1, q2, q1b;
	struct nvme_cqe cqe;
	uint8_t cd[1024];

	ft_open(&a, 0);
	int cntlid = ft_connect_admin(&a, HOST_A, VOL0, 0);
	cr_assert_eq(cntlid, 10, "first controller ID is cntlid_min");
	cr_assert_eq(nvmet_ctrl_count(), 1);
	cr_assert_eq(nvmet_queue_qid(a.q), 0);

	/* an I/O queue before CC.EN: command sequence error */
	ft_open(&q1, 0);
	cr_assert_eq(ft_connect_io(&q1, 1, 10, HOST_A, VOL0), NVMET_SC_CMD_SEQ_ERROR);
	cr_assert_eq(ft_enable(&a), 0);
	/* still unconnected (the failed Connect left it new): now it works */
	cr_assert_eq(ft_connect_io(&q1, 1, 10, HOST_A, VOL0), 0);
	cr_assert_eq(nvmet_queue_qid(q1.q), 1);
	cr_assert_eq(nvmet_queue_cntlid(q1.q), 10);

	/* the same qid twice */
	ft_open(&q1b, 0);
	cr_assert_eq(ft_connect_io(&q1b, 1, 10, HOST_A, VOL0), NVMET_SC_CMD_SEQ_ERROR);
	/* a controller that does not exist: Connect Invalid Parameters, IPO = cntlid in the data */
	struct nvme_sqe s = ft_connect_sqe(2, 63, 0);
	ft_connect_data(cd, HOST_A, VOL0, 99);
	cr_assert_eq(ft_exec(&q1b, &s, cd, 1024, NULL, &cqe), NVMET_SC_CONNECT_INVALID_PARAM);
	cr_assert_eq(le32_get(cqe.dw0), NVMF_IATTR_DATA | NVMF_CD_OFF_CNTLID);
	cr_assert(le16_get(cqe.status) & NVME_STATUS_DNR);
	/* a different host naming our controller */
	ft_connect_data(cd, HOST_B, VOL0, 10);
	cr_assert_neq(ft_exec(&q1b, &s, cd, 1024, NULL, NULL), 0);
	/* sqsize 0 and too big: IPO = SQSIZE in the SQE */
	s = ft_connect_sqe(2, 0, 0);
	ft_connect_data(cd, HOST_A, VOL0, 10);
	cr_assert_eq(ft_exec(&q1b, &s, cd, 1024, NULL, &cqe), NVMET_SC_CONNECT_INVALID_PARAM);
	cr_assert_eq(le32_get(cqe.dw0), NVMF_CONNECT_OFF_SQSIZE);
	s = ft_connect_sqe(2, 4000, 0);
	cr_assert_eq(ft_exec(&q1b, &s, cd, 1024, NULL, &cqe), NVMET_SC_CONNECT_INVALID_PARAM);
	/* qid 2 right */
	ft_open(&q2, 0);
	cr_assert_eq(ft_connect_io(&q2, 2, 10, HOST_A, VOL0), 0);
	/* Connect data of the wrong length */
	s = ft_connect_sqe(3, 63, 0);
	cr_assert_eq(ft_exec(&q1b, &s, cd, 512, NULL, NULL), NVMET_SC_SGL_LENGTH_INVALID);
	/* a command other than Connect on an unconnected queue */
	s = ft_sqe(NVME_CMD_READ, 3, 1, 512);
	cr_assert_eq(ft_exec(&q1b, &s, NULL, 512, NULL, NULL), NVMET_SC_CMD_SEQ_ERROR);

	/* second controller gets 11, a third finds the range (10..11) full */
	struct ft_conn a2, a3;
	ft_open(&a2, 0);
	cr_assert_eq(ft_connect_admin(&a2, HOST_A, VOL0, 0), 11);
	ft_open(&a3, 0);
	cr_assert_eq(ft_connect_admin(&a3, HOST_A, VOL0, 0), -(int)NVMET_SC_CONNECT_CTRL_BUSY);
	cr_assert_eq(le16_get(cqe.sqid), 0);

	ft_close(&q1b);
	ft_close(&a3);
	ft_close(&a2);
	ft_close(&q2);
	ft_close(&q1);
	ft_close(&a);
	cr_assert_eq(nvmet_ctrl_count(), 0);
	cr_assert_eq(nvmet_queue_count(), 0);
	cr_assert_eq(cntlid, 10);
}

Test(nvmet, refused_hosts_and_subsystems)
{
	struct ft_conn a;
	struct nvme_cqe cqe;
	uint8_t cd[1024];
	struct nvme_sqe s = ft_connect_sqe(0, 31, 0);

	ft_open(&a, 0);
	/* host B is not on vol0's allowlist */
	ft_connect_data(cd, HOST_B, VOL0, 0xffff);
	cr_assert_eq(ft_exec(&a, &s, cd, 1024, NULL, &cqe), NVMET_SC_CONNECT_INVALID_HOST);
	cr_assert_eq(le32_get(cqe.dw0), NVMF_IATTR_DATA | NVMF_CD_OFF_HOSTNQN);
	/* an unknown subsystem */
	ft_connect_data(cd, HOST_A, "nqn.2026-11.org.p2pstore:nope", 0xffff);
	cr_assert_eq(ft_exec(&a, &s, cd, 1024, NULL, &cqe), NVMET_SC_CONNECT_INVALID_PARAM);
	cr_assert_eq(le32_get(cqe.dw0), NVMF_IATTR_DATA | NVMF_CD_OFF_SUBNQN);
	/* a static controller ID */
	ft_connect_data(cd, HOST_A, VOL0, 10);
	cr_assert_eq(ft_exec(&a, &s, cd, 1024, NULL, &cqe), NVMET_SC_CONNECT_INVALID_PARAM);
	cr_assert_eq(le32_get(cqe.dw0), NVMF_IATTR_DATA | NVMF_CD_OFF_CNTLID);
	/* record format */
	s = ft_connect_sqe(0, 31, 0);
	struct nvmf_cmd f = nvmf_cmd_of(&s);
	f.connect.recfmt = le16_make(1);
	s = nvmf_cmd_sqe(&f);
	ft_connect_data(cd, HOST_A, VOL0, 0xffff);
	cr_assert_eq(ft_exec(&a, &s, cd, 1024, NULL, NULL), NVMET_SC_CONNECT_FORMAT);
	ft_close(&a);

	/* vol0 is not exported on port 2 */
	ft_open(&a, 1);
	cr_assert_eq(ft_connect_admin(&a, HOST_A, VOL0, 0), -(int)NVMET_SC_CONNECT_INVALID_PARAM);
	/* vol1 (any host) is */
	cr_assert_geq(ft_connect_admin(&a, HOST_B, VOL1, 0), 1);
	ft_close(&a);
	cr_assert_eq(nvmet_stats()->connect_refused, 5);
}

Test(nvmet, properties_enable_shutdown)
{
	struct ft_conn a;
	struct nvme_cqe cqe;
	struct nvme_sqe s;

	ft_open(&a, 0);
	cr_assert_geq(ft_connect_admin(&a, HOST_A, VOL0, 0), 1);
	s = ft_prop_sqe(false, true, NVMF_PROP_CAP, 0);
	cr_assert_eq(ft_exec(&a, &s, NULL, 0, NULL, &cqe), 0);
	uint64_t cap = le32_get(cqe.dw0) | (uint64_t)le32_get(cqe.dw1) << 32;
	cr_assert_eq(NVME_GET(cap, NVME_CAP_MQES), 127);
	cr_assert_eq(NVME_GET(cap, NVME_CAP_CSS) & 1, 1);
	cr_assert_neq(NVME_GET(cap, NVME_CAP_TO), 0);
	s = ft_prop_sqe(false, false, NVMF_PROP_VS, 0);
	cr_assert_eq(ft_exec(&a, &s, NULL, 0, NULL, &cqe), 0);
	cr_assert_eq(le32_get(cqe.dw0), 0x10300);
	/* CAP read with 4 bytes, an unknown offset, writing CSTS: invalid field */
	s = ft_prop_sqe(false, false, NVMF_PROP_CAP, 0);
	cr_assert_eq(ft_exec(&a, &s, NULL, 0, NULL, NULL), NVMET_SC_INVALID_FIELD);
	s = ft_prop_sqe(false, false, 0x24, 0);
	cr_assert_eq(ft_exec(&a, &s, NULL, 0, NULL, NULL), NVMET_SC_INVALID_FIELD);
	s = ft_prop_sqe(true, false, NVMF_PROP_CSTS, 1);
	cr_assert_eq(ft_exec(&a, &s, NULL, 0, NULL, NULL), NVMET_SC_INVALID_FIELD);
	/* admin commands before enable: command sequence error */
	cr_assert_eq(admin(&a, NVME_ADM_KEEP_ALIVE, 0, 0, 0, NULL, 0, NULL), NVMET_SC_CMD_SEQ_ERROR);

	s = ft_prop_sqe(false, false, NVMF_PROP_CSTS, 0);
	cr_assert_eq(ft_exec(&a, &s, NULL, 0, NULL, &cqe), 0);
	cr_assert_eq(le32_get(cqe.dw0) & NVME_CSTS_RDY, 0);
	cr_assert_eq(ft_enable(&a), 0);
	cr_assert_eq(ft_exec(&a, &s, NULL, 0, NULL, &cqe), 0);
	cr_assert_eq(le32_get(cqe.dw0), NVME_CSTS_RDY);
	s = ft_prop_sqe(false, false, NVMF_PROP_CC, 0);
	cr_assert_eq(ft_exec(&a, &s, NULL, 0, NULL, &cqe), 0);
	cr_assert(le32_get(cqe.dw0) & NVME_CC_EN);
	cr_assert_eq(admin(&a, NVME_ADM_KEEP_ALIVE, 0, 0, 0, NULL, 0, NULL), 0);

	/* shutdown: CSTS.SHST = complete */
	uint32_t cc = NVME_CC_EN | (6u << NVME_CC_IOSQES_SHIFT) | (4u << NVME_CC_IOCQES_SHIFT) | (1u << NVME_CC_SHN_SHIFT);
	s = ft_prop_sqe(true, false, NVMF_PROP_CC, cc);
	cr_assert_eq(ft_exec(&a, &s, NULL, 0, NULL, NULL), 0);
	s = ft_prop_sqe(false, false, NVMF_PROP_CSTS, 0);
	cr_assert_eq(ft_exec(&a, &s, NULL, 0, NULL, &cqe), 0);
	cr_assert_eq(NVME_GET(le32_get(cqe.dw0), NVME_CSTS_SHST), NVME_CSTS_SHST_COMPLETE);
	cr_assert_eq(le32_get(cqe.dw0) & NVME_CSTS_RDY, 0);
	/* CC.EN = 0 then enable again */
	s = ft_prop_sqe(true, false, NVMF_PROP_CC, 0);
	cr_assert_eq(ft_exec(&a, &s, NULL, 0, NULL, NULL), 0);
	cr_assert_eq(ft_enable(&a), 0);
	s = ft_prop_sqe(false, false, NVMF_PROP_CSTS, 0);
	cr_assert_eq(ft_exec(&a, &s, NULL, 0, NULL, &cqe), 0);
	cr_assert_eq(le32_get(cqe.dw0), NVME_CSTS_RDY);
	ft_close(&a);

	/* bad entry sizes on enable: CSTS.CFS and the controller dies */
	ft_open(&a, 0);
	cr_assert_geq(ft_connect_admin(&a, HOST_A, VOL0, 0), 1);
	s = ft_prop_sqe(true, false, NVMF_PROP_CC, NVME_CC_EN);
	cr_assert_eq(ft_exec(&a, &s, NULL, 0, NULL, NULL), 0);
	cr_assert(a.killed);
	s = ft_prop_sqe(false, false, NVMF_PROP_CSTS, 0);
	cr_assert_eq(ft_exec(&a, &s, NULL, 0, NULL, NULL), NVMET_SC_ABORT_SQ_DELETED);
	ft_close(&a);
}

Test(nvmet, identify_fields)
{
	struct ft_conn a;
	static uint8_t id[4096];
	struct nvme_cqe cqe;

	int cntlid = connect_all(&a, NULL, HOST_A, VOL0, 0);
	cr_assert_eq(admin(&a, NVME_ADM_IDENTIFY, 0, NVME_ID_CNS_CTRL, 0, id, 4096, &cqe), 0);
	cr_assert_eq(memcmp(id + NVME_IDC_SN, "SER0                ", 20), 0);
	cr_assert_eq(memcmp(id + NVME_IDC_MN, "MODEL0 ", 7), 0);
	cr_assert_eq(le16_load(id + NVME_IDC_CNTLID), cntlid);
	cr_assert_eq(le32_load(id + NVME_IDC_VER), 0x10300);
	cr_assert_eq(id[NVME_IDC_CNTRLTYPE], NVME_CNTRLTYPE_IO);
	cr_assert_str_eq((const char *)id + NVME_IDC_SUBNQN, VOL0);
	cr_assert_eq(le32_load(id + NVME_IDC_IOCCSZ), (64 + 8192) / 16);
	cr_assert_eq(le32_load(id + NVME_IDC_IORCSZ), 1);
	cr_assert_eq(le16_load(id + NVME_IDC_ICDOFF), 0);
	cr_assert_eq(id[NVME_IDC_MSDBD], 1);
	cr_assert_eq(le32_load(id + NVME_IDC_SGLS), 1u | NVME_SGLS_OFFSET);
	cr_assert_eq(le32_load(id + NVME_IDC_CTRATT), NVME_CTRATT_HID128 | NVME_CTRATT_TBKAS,
		     "only the 128-bit host ID exists; keep-alive is traffic based");
	cr_assert_eq(id[NVME_IDC_ELPE], 15, "16 error log entries");
	cr_assert_eq(le32_load(id + NVME_IDC_NN), NVMET_MAX_NSID);
	cr_assert_eq(id[NVME_IDC_SQES], 0x66);
	cr_assert_eq(id[NVME_IDC_CQES], 0x44);
	cr_assert_eq(le16_load(id + NVME_IDC_MAXCMD), 128);
	cr_assert_eq(le16_load(id + NVME_IDC_KAS), NVMET_KAS_100MS);
	cr_assert_eq(id[NVME_IDC_MDTS], 8, "1 MiB / 4 KiB = 2^8");
	cr_assert(le32_load(id + NVME_IDC_OAES) & NVME_OAES_NS_ATTR);
	cr_assert_eq(le16_load(id + NVME_IDC_ONCS), NVME_ONCS_DSM | NVME_ONCS_WRITE_ZEROES);

	/* namespace 1: 2048 x 512 B, NGUID from the config */
	cr_assert_eq(admin(&a, NVME_ADM_IDENTIFY, 1, NVME_ID_CNS_NS, 0, id, 4096, NULL), 0);
	cr_assert_eq(le64_load(id + NVME_IDNS_NSZE), 2048);
	cr_assert_eq(le64_load(id + NVME_IDNS_NCAP), 2048);
	cr_assert_eq((le32_load(id + NVME_IDNS_LBAF) >> 16) & 0xff, 9);
	cr_assert_eq(id[NVME_IDNS_NGUID], 0x00);
	cr_assert_eq(id[NVME_IDNS_NGUID + 15], 0xff);
	/* an inactive NSID reads as zeroes; 0 and broadcast are invalid */
	cr_assert_eq(admin(&a, NVME_ADM_IDENTIFY, 5, NVME_ID_CNS_NS, 0, id, 4096, NULL), 0);
	cr_assert_eq(le64_load(id + NVME_IDNS_NSZE), 0);
	cr_assert_eq(admin(&a, NVME_ADM_IDENTIFY, 0, NVME_ID_CNS_NS, 0, id, 4096, NULL), NVMET_SC_INVALID_NS);
	cr_assert_eq(admin(&a, NVME_ADM_IDENTIFY, 0xffffffff, NVME_ID_CNS_NS, 0, id, 4096, NULL), NVMET_SC_INVALID_NS);
	/* active list: 1, 3 (5 disabled); after 1: only 3 */
	cr_assert_eq(admin(&a, NVME_ADM_IDENTIFY, 0, NVME_ID_CNS_NS_ACTIVE_LIST, 0, id, 4096, NULL), 0);
	cr_assert_eq(le32_load(id), 1);
	cr_assert_eq(le32_load(id + 4), 3);
	cr_assert_eq(le32_load(id + 8), 0);
	cr_assert_eq(admin(&a, NVME_ADM_IDENTIFY, 1, NVME_ID_CNS_NS_ACTIVE_LIST, 0, id, 4096, NULL), 0);
	cr_assert_eq(le32_load(id), 3);
	cr_assert_eq(le32_load(id + 4), 0);
	/* descriptors: NGUID of ns 1 from the config; ns 3 gets a generated stable one */
	cr_assert_eq(admin(&a, NVME_ADM_IDENTIFY, 1, NVME_ID_CNS_NS_DESC_LIST, 0, id, 4096, NULL), 0);
	cr_assert_eq(id[0], NVME_NIDT_NGUID);
	cr_assert_eq(id[1], 16);
	cr_assert_eq(id[4], 0x00);
	cr_assert_eq(id[5], 0x11);
	cr_assert_eq(admin(&a, NVME_ADM_IDENTIFY, 3, NVME_ID_CNS_NS_DESC_LIST, 0, id, 4096, NULL), 0);
	uint8_t z[16] = { 0 };
	cr_assert_neq(memcmp(id + 4, z, 16), 0);
	cr_assert_eq(admin(&a, NVME_ADM_IDENTIFY, 5, NVME_ID_CNS_NS_DESC_LIST, 0, id, 4096, NULL), NVMET_SC_INVALID_NS);
	/* unknown CNS, wrong length */
	cr_assert_eq(admin(&a, NVME_ADM_IDENTIFY, 0, 0x1f, 0, id, 4096, NULL), NVMET_SC_INVALID_FIELD);
	cr_assert_eq(admin(&a, NVME_ADM_IDENTIFY, 0, NVME_ID_CNS_CTRL, 0, id, 1024, NULL), NVMET_SC_SGL_LENGTH_INVALID);
	/* unknown admin opcode */
	cr_assert_eq(admin(&a, 0x7e, 0, 0, 0, NULL, 0, NULL), NVMET_SC_INVALID_OPCODE);
	ft_close(&a);
}

/* Get the discovery log page (whole, len bytes) from a discovery controller for host,
 * connected on port index port. */
static void get_disc_log(const char *host, unsigned port, uint8_t *log, uint32_t len)
{
	struct ft_conn a;
	static uint8_t id[4096];
	ft_open(&a, port);
	nvmet_queue_set_local(a.q, 0x0a090807); /* 10.9.8.7: the address the host connected to */
	cr_assert_geq(ft_connect_admin(&a, host, DISC, 0), 1);
	cr_assert_eq(ft_enable(&a), 0);
	cr_assert_eq(admin(&a, NVME_ADM_IDENTIFY, 0, NVME_ID_CNS_CTRL, 0, id, 4096, NULL), 0);
	cr_assert_eq(id[NVME_IDC_CNTRLTYPE], NVME_CNTRLTYPE_DISCOVERY);
	cr_assert_str_eq((const char *)id + NVME_IDC_SUBNQN, DISC);
	cr_assert_eq(le32_load(id + NVME_IDC_NN), 0);
	uint32_t numd = len / 4 - 1;
	cr_assert_eq(admin(&a, NVME_ADM_GET_LOG_PAGE, 0, NVME_LOG_DISCOVERY | (numd << 16), 0, log, len, NULL), 0);
	/* I/O-only commands and queues are refused */
	cr_assert_eq(admin(&a, NVME_ADM_IDENTIFY, 1, NVME_ID_CNS_NS, 0, id, 4096, NULL), NVMET_SC_INVALID_FIELD);
	cr_assert_eq(admin(&a, NVME_ADM_GET_LOG_PAGE, 0, NVME_LOG_SMART | (127u << 16), 0, id, 512, NULL),
		     NVMET_SC_INVALID_FIELD);
	ft_close(&a);
}

static void check_entry(const uint8_t *e, uint16_t portid, const char *traddr, const char *trsvcid, const char *nqn)
{
	cr_assert_eq(e[NVMF_DE_TRTYPE], NVMET_TRTYPE_TCP);
	cr_assert_eq(e[NVMF_DE_ADRFAM], NVMF_ADRFAM_IPV4);
	cr_assert_eq(e[NVMF_DE_SUBTYPE], NVMF_SUBTYPE_NVME);
	cr_assert_eq(le16_load(e + NVMF_DE_PORTID), portid);
	cr_assert_eq(le16_load(e + NVMF_DE_CNTLID), 0xffff);
	cr_assert_str_eq((const char *)e + NVMF_DE_TRADDR, traddr);
	cr_assert_str_eq((const char *)e + NVMF_DE_TRSVCID, trsvcid);
	cr_assert_str_eq((const char *)e + NVMF_DE_SUBNQN, nqn);
}

Test(nvmet, discovery_log_with_allowlist)
{
	static uint8_t log[5 * 1024];

	/* only the port the discovery controller is on is listed (issue 13.7, as Linux nvmet) */
	memset(log, 0, sizeof(log));
	get_disc_log(HOST_A, 0, log, sizeof(log));
	cr_assert_eq(le64_load(log + NVMF_DISC_OFF_GENCTR), 1);
	cr_assert_eq(le64_load(log + NVMF_DISC_OFF_NUMREC), 2, "host A sees vol0@1, vol1@1 on port 1");
	check_entry(log + 1024, 1, "10.0.0.1", "4420", VOL0);
	check_entry(log + 2048, 1, "10.0.0.1", "4420", VOL1);
	cr_assert_eq(log[3072], 0, "nothing past the records: port 2 is not listed");

	memset(log, 0, sizeof(log));
	get_disc_log(HOST_A, 1, log, sizeof(log));
	cr_assert_eq(le64_load(log + NVMF_DISC_OFF_NUMREC), 1, "on port 2: vol1@2 only");
	check_entry(log + 1024, 2, "10.0.0.2", "4421", VOL1);
	cr_assert_eq(log[2048], 0);

	/* a port on any address (0.0.0.0): TRADDR is the address the host reached (as Linux) */
	memset(log, 0, sizeof(log));
	get_disc_log(HOST_A, 2, log, sizeof(log));
	cr_assert_eq(le64_load(log + NVMF_DISC_OFF_NUMREC), 1);
	check_entry(log + 1024, 3, "10.9.8.7", "4422", VOL1);

	get_disc_log(HOST_B, 0, log, sizeof(log));
	cr_assert_eq(le64_load(log + NVMF_DISC_OFF_NUMREC), 1, "host B is not allowed on vol0");
	check_entry(log + 1024, 1, "10.0.0.1", "4420", VOL1);

	/* the header alone, then one record by offset (how hosts read it) */
	struct ft_conn a;
	static uint8_t part[1024];
	connect_all(&a, NULL, HOST_A, DISC, 0);
	struct nvme_sqe s = ft_sqe(NVME_ADM_GET_LOG_PAGE, 5, 0, 16);
	s.cdw10 = le32_make(NVME_LOG_DISCOVERY | (3u << 16));
	cr_assert_eq(ft_exec(&a, &s, NULL, 16, part, NULL), 0);
	cr_assert_eq(le64_load(part + 8), 2);
	s = ft_sqe(NVME_ADM_GET_LOG_PAGE, 5, 0, 1024);
	s.cdw10 = le32_make(NVME_LOG_DISCOVERY | (255u << 16));
	s.cdw12 = le32_make(2048);
	cr_assert_eq(ft_exec(&a, &s, NULL, 1024, part, NULL), 0);
	check_entry(part, 1, "10.0.0.1", "4420", VOL1);
	/* misaligned offset */
	s.cdw12 = le32_make(3);
	cr_assert_eq(ft_exec(&a, &s, NULL, 1024, part, NULL), NVMET_SC_INVALID_FIELD);
	/* an I/O queue on the discovery controller */
	struct ft_conn q;
	ft_open(&q, 0);
	cr_assert_eq(ft_connect_io(&q, 1, (uint16_t)nvmet_queue_cntlid(a.q), HOST_A, DISC), NVMET_SC_CONNECT_INVALID_PARAM);
	ft_close(&q);
	ft_close(&a);
}

static void io_round_trip(void);

Test(nvmet, io_round_trip_and_errors)
{
	io_round_trip();
}

/* The transport's namespace hint (nvmet_data.bdev, as nvmet-tcp passes it): Reads and
 * Writes go straight to the namespace, everything else, and every Read/Write a check
 * refuses, the general way: the same answers and bytes as without the hint. */
Test(nvmet, io_round_trip_and_errors_with_the_shape_hint)
{
	ft_hint = FT_HINT_SHAPE;
	io_round_trip();
}

/* ... and with the transport's word that the segments add up to the length
 * (nvmet_data.summed: the fast path takes it instead of its walk): the same again. */
Test(nvmet, io_round_trip_and_errors_with_the_shape_hint_and_summed_segments)
{
	ft_hint = FT_HINT_SHAPE;
	ft_summed = true;
	io_round_trip();
}

/* A hint that does not fit the command (another namespace's, one of another subsystem,
 * a disabled namespace's, a command the fast path does not take) is checked, never
 * trusted: the answer is the general path's. */
Test(nvmet, a_wrong_or_stale_namespace_hint_changes_nothing)
{
	struct ft_conn a, q, a1, q1;
	static uint8_t wbuf[4096], rbuf[4096];
	connect_all(&a, &q, HOST_A, VOL0, 0);
	connect_all(&a1, &q1, HOST_B, VOL1, 0);
	for (unsigned i = 0; i < sizeof(wbuf); i++)
		wbuf[i] = (uint8_t)(i * 5 + 1);
	struct nvme_sqe s1 = ft_sqe(NVME_CMD_READ, 9, 1, 512), s3 = ft_sqe(NVME_CMD_READ, 9, 3, 512);
	struct nvmet_req_shape sh1, sh3, shv1;
	nvmet_req_shape(q.q, &s1, &sh1);
	nvmet_req_shape(q.q, &s3, &sh3);
	nvmet_req_shape(q1.q, &s1, &shv1);
	cr_assert(sh1.bdev && sh3.bdev && shv1.bdev && sh1.bdev != sh3.bdev && sh1.bdev != shv1.bdev);
	/* namespace 3's hint on a write to namespace 1: the write lands on namespace 1 */
	ft_hint = FT_HINT_FORCED;
	ft_hint_bdev = sh3.bdev;
	cr_assert_eq(rw(&q, true, 1, 10, 8, wbuf, 4096), 0);
	ft_hint_bdev = shv1.bdev; /* another subsystem's namespace */
	memset(rbuf, 0, sizeof(rbuf));
	cr_assert_eq(rw(&q, false, 1, 10, 8, rbuf, 4096), 0);
	cr_assert_eq(memcmp(rbuf, wbuf, 4096), 0);
	ft_hint = FT_HINT_NONE;
	memset(rbuf, 0, sizeof(rbuf));
	cr_assert_eq(rw(&q, false, 3, 10, 8, rbuf, 4096), 0);
	cr_assert_eq(rbuf[0], 0, "namespace 3 untouched");
	/* a hint to an absent namespace's command, and to a disabled namespace */
	ft_hint = FT_HINT_FORCED;
	ft_hint_bdev = sh1.bdev;
	cr_assert_eq(rw(&q, false, 2, 0, 1, rbuf, 512), NVMET_SC_INVALID_NS);
	cr_assert_eq(nvmet_ns_set_enabled(VOL0, 1, false), 0);
	cr_assert_eq(rw(&q, false, 1, 0, 1, rbuf, 512), NVMET_SC_INVALID_NS);
	cr_assert_eq(nvmet_ns_set_enabled(VOL0, 1, true), 0);
	cr_assert_eq(rw(&q, false, 1, 10, 8, rbuf, 4096), 0);
	/* the checks before the namespace's, with a right hint: fused, PRPs, a length that is
	 * not the SGL's, an unknown SGL type, Flush with a hint */
	struct nvme_sqe s = ft_sqe(NVME_CMD_WRITE, 9, 1, 512);
	s.cdw12 = le32_make(0);
	s.flags |= 1; /* FUSE: first of a fused operation */
	cr_assert_eq(ft_exec(&q, &s, wbuf, 512, NULL, NULL), NVMET_SC_INVALID_FIELD);
	s = ft_sqe(NVME_CMD_READ, 9, 1, 512);
	s.flags &= (uint8_t)~NVME_SQE_PSDT_MASK;
	cr_assert_eq(ft_exec(&q, &s, NULL, 512, rbuf, NULL), NVMET_SC_INVALID_FIELD);
	s = ft_sqe(NVME_CMD_READ, 9, 1, 512);
	s.dptr.sgl1.id = 0x30; /* a Segment descriptor: not for fabrics SGL1 here */
	uint16_t want = NVMET_SC_SGL_TYPE_INVALID;
	cr_assert_eq(ft_exec(&q, &s, NULL, 512, rbuf, NULL), want);
	s = ft_sqe(NVME_CMD_FLUSH, 9, 1, 0);
	cr_assert_eq(ft_exec(&q, &s, NULL, 0, NULL, NULL), 0);
	/* an admin queue command with a hint */
	ft_hint_bdev = sh1.bdev;
	struct nvme_cqe cqe;
	static uint8_t id[4096];
	cr_assert_eq(admin(&a, NVME_ADM_IDENTIFY, 1, NVME_ID_CNS_NS, 0, id, 4096, &cqe), 0);
	ft_hint = FT_HINT_NONE;
	ft_close(&q1);
	ft_close(&a1);
	ft_close(&q);
	ft_close(&a);
}

static void io_round_trip(void)
{
	struct ft_conn a, q;
	static uint8_t wbuf[4096], rbuf[4096];

	connect_all(&a, &q, HOST_A, VOL0, 0);
	for (unsigned i = 0; i < sizeof(wbuf); i++)
		wbuf[i] = (uint8_t)(i * 7 + 3);
	cr_assert_eq(rw(&q, true, 1, 100, 8, wbuf, 4096), 0);
	memset(rbuf, 0, sizeof(rbuf));
	cr_assert_eq(rw(&q, false, 1, 100, 8, rbuf, 4096), 0);
	cr_assert_eq(memcmp(wbuf, rbuf, 4096), 0);
	/* namespace 3 is a different disk */
	cr_assert_eq(rw(&q, false, 3, 100, 8, rbuf, 4096), 0);
	cr_assert_eq(rbuf[0], 0);
	/* last block OK, one past the end out of range, huge SLBA too */
	cr_assert_eq(rw(&q, true, 1, 2047, 1, wbuf, 512), 0);
	cr_assert_eq(rw(&q, true, 1, 2047, 2, wbuf, 1024), NVMET_SC_LBA_RANGE);
	cr_assert_eq(rw(&q, false, 1, 0xffffffffffffff00ull, 1, rbuf, 512), NVMET_SC_LBA_RANGE);
	/* namespaces: disabled, absent, zero */
	cr_assert_eq(rw(&q, false, 5, 0, 1, rbuf, 512), NVMET_SC_INVALID_NS);
	cr_assert_eq(rw(&q, false, 2, 0, 1, rbuf, 512), NVMET_SC_INVALID_NS);
	cr_assert_eq(rw(&q, false, 0, 0, 1, rbuf, 512), NVMET_SC_INVALID_NS);
	/* SGL length that does not match NLB */
	cr_assert_eq(rw(&q, false, 1, 0, 2, rbuf, 512), NVMET_SC_SGL_LENGTH_INVALID);
	/* unknown opcode, PRP instead of SGL */
	struct nvme_sqe s = ft_sqe(0x7c, 4, 1, 0);
	cr_assert_eq(ft_exec(&q, &s, NULL, 0, NULL, NULL), NVMET_SC_INVALID_OPCODE);
	s = ft_sqe(NVME_CMD_FLUSH, 4, 1, 0);
	s.flags &= (uint8_t)~NVME_SQE_PSDT_MASK;
	cr_assert_eq(ft_exec(&q, &s, NULL, 0, NULL, NULL), NVMET_SC_INVALID_FIELD);
	/* flush, write zeroes, deallocate */
	s = ft_sqe(NVME_CMD_FLUSH, 4, 1, 0);
	cr_assert_eq(ft_exec(&q, &s, NULL, 0, NULL, NULL), 0);
	s = ft_sqe(NVME_CMD_WRITE_ZEROES, 4, 1, 0);
	s.cdw10 = le32_make(100);
	s.cdw12 = le32_make(3); /* 4 blocks */
	cr_assert_eq(ft_exec(&q, &s, NULL, 0, NULL, NULL), 0);
	cr_assert_eq(rw(&q, false, 1, 100, 8, rbuf, 4096), 0);
	for (unsigned i = 0; i < 2048; i++)
		cr_assert_eq(rbuf[i], 0);
	cr_assert_eq(memcmp(rbuf + 2048, wbuf + 2048, 2048), 0);
	s.cdw10 = le32_make(2046);
	cr_assert_eq(ft_exec(&q, &s, NULL, 0, NULL, NULL), NVMET_SC_LBA_RANGE);
	uint8_t ranges[32] = { 0 };
	le32_store(ranges + 4, 2);      /* range 0: 2 blocks at 104 */
	le64_store(ranges + 8, 104);
	le32_store(ranges + 16 + 4, 1); /* range 1: 1 block at 107 */
	le64_store(ranges + 16 + 8, 107);
	s = ft_sqe(NVME_CMD_DSM, 4, 1, 32);
	s.cdw10 = le32_make(1);
	s.cdw11 = le32_make(NVME_DSM_AD);
	cr_assert_eq(ft_exec(&q, &s, ranges, 32, NULL, NULL), 0);
	cr_assert_eq(rw(&q, false, 1, 104, 4, rbuf, 2048), 0);
	cr_assert_eq(rbuf[0], 0);
	cr_assert_eq(rbuf[1023], 0);
	cr_assert_eq(rbuf[1024], wbuf[3072]);
	cr_assert_eq(rbuf[1536], 0);
	le64_store(ranges + 8, 2047);   /* 2 blocks at 2047: out of range */
	cr_assert_eq(ft_exec(&q, &s, ranges, 32, NULL, NULL), NVMET_SC_LBA_RANGE);
	/* 4 KiB blocks on vol1 */
	struct ft_conn a1, q1;
	connect_all(&a1, &q1, HOST_B, VOL1, 0);
	cr_assert_eq(rw(&q1, true, 1, 255, 1, wbuf, 4096), 0);
	cr_assert_eq(rw(&q1, false, 1, 255, 1, rbuf, 4096), 0);
	cr_assert_eq(memcmp(wbuf, rbuf, 4096), 0);
	cr_assert_eq(rw(&q1, false, 1, 256, 1, rbuf, 4096), NVMET_SC_LBA_RANGE);

	/* SMART counts what went through */
	static uint8_t smart[512];
	cr_assert_eq(admin(&a, NVME_ADM_GET_LOG_PAGE, 0xffffffff, NVME_LOG_SMART | (127u << 16), 0, smart, 512, NULL), 0);
	cr_assert_geq(le64_load(smart + 80), 2, "host write commands");
	ft_close(&q1);
	ft_close(&a1);
	ft_close(&q);
	ft_close(&a);
}

Test(nvmet, features_and_queues)
{
	struct ft_conn a;
	struct nvme_cqe cqe;

	connect_all(&a, NULL, HOST_A, VOL0, 5000);
	cr_assert_eq(admin(&a, NVME_ADM_GET_FEATURES, 0, NVME_FEAT_NUM_QUEUES, 0, NULL, 0, &cqe), 0);
	cr_assert_eq(le32_get(cqe.dw0), ((NVMET_MAX_IO_QUEUES - 1) << 16) | (NVMET_MAX_IO_QUEUES - 1), "all, until set");
	cr_assert_eq(admin(&a, NVME_ADM_SET_FEATURES, 0, NVME_FEAT_NUM_QUEUES, (3u << 16) | 3u, NULL, 0, &cqe), 0);
	cr_assert_eq(le32_get(cqe.dw0), (3u << 16) | 3u, "4 granted as asked");
	cr_assert_eq(admin(&a, NVME_ADM_SET_FEATURES, 0, NVME_FEAT_NUM_QUEUES, (99u << 16) | 5u, NULL, 0, &cqe), 0);
	cr_assert_eq(le32_get(cqe.dw0), (5u << 16) | 5u, "the fewer of SQs and CQs");
	cr_assert_eq(admin(&a, NVME_ADM_SET_FEATURES, 0, NVME_FEAT_NUM_QUEUES, (99u << 16) | 99u, NULL, 0, &cqe), 0);
	cr_assert_eq(le32_get(cqe.dw0), ((NVMET_MAX_IO_QUEUES - 1) << 16) | (NVMET_MAX_IO_QUEUES - 1), "at most the maximum");
	cr_assert_eq(admin(&a, NVME_ADM_GET_FEATURES, 0, NVME_FEAT_KATO, 0, NULL, 0, &cqe), 0);
	cr_assert_eq(le32_get(cqe.dw0), 5000);
	cr_assert_eq(admin(&a, NVME_ADM_SET_FEATURES, 0, NVME_FEAT_KATO, 7000, NULL, 0, NULL), 0);
	cr_assert_eq(admin(&a, NVME_ADM_GET_FEATURES, 0, NVME_FEAT_KATO, 0, NULL, 0, &cqe), 0);
	cr_assert_eq(le32_get(cqe.dw0), 7000);
	cr_assert_eq(admin(&a, NVME_ADM_SET_FEATURES, 0, NVME_FEAT_ASYNC_EVENT, NVME_AEC_NS_ATTR | 0xff, NULL, 0, NULL), 0);
	cr_assert_eq(admin(&a, NVME_ADM_GET_FEATURES, 0, NVME_FEAT_ASYNC_EVENT, 0, NULL, 0, &cqe), 0);
	cr_assert_eq(le32_get(cqe.dw0), NVME_AEC_NS_ATTR);
	cr_assert_eq(admin(&a, NVME_ADM_SET_FEATURES, 0, NVME_FEAT_KATO | (1u << 31), 1, NULL, 0, NULL),
		     NVMET_SC_FEAT_NOT_SAVEABLE);
	cr_assert_eq(admin(&a, NVME_ADM_SET_FEATURES, 0, 0x55, 1, NULL, 0, NULL), NVMET_SC_INVALID_FIELD);
	static uint8_t hostid[16];
	cr_assert_eq(admin(&a, NVME_ADM_GET_FEATURES, 0, NVME_FEAT_HOST_ID, 1, hostid, 16, NULL), 0);
	cr_assert_eq(hostid[0], 0xa0);
	cr_assert_eq(hostid[15], 0xaf);
	/* the error log page reads (empty) */
	static uint8_t errlog[64];
	cr_assert_eq(admin(&a, NVME_ADM_GET_LOG_PAGE, 0, NVME_LOG_ERROR | (15u << 16), 0, errlog, 64, NULL), 0);
	cr_assert_eq(admin(&a, NVME_ADM_GET_LOG_PAGE, 0, 0xc5 | (15u << 16), 0, errlog, 64, NULL), NVMET_SC_INVALID_LOG_PAGE);
	ft_close(&a);
}

Test(nvmet, keep_alive_expiry)
{
	struct ft_conn a, q;

	connect_all(&a, &q, HOST_A, VOL0, 2000);
	fake_clock_advance(1500 * NSEC_PER_MSEC);
	timer_queue_run(&timer_default_queue, clock_now_ns());
	cr_assert_not(a.killed);
	cr_assert_eq(admin(&a, NVME_ADM_KEEP_ALIVE, 0, 0, 0, NULL, 0, NULL), 0);
	fake_clock_advance(1500 * NSEC_PER_MSEC);
	timer_queue_run(&timer_default_queue, clock_now_ns());
	cr_assert_not(a.killed, "the keep alive restarted the timer");
	fake_clock_advance(600 * NSEC_PER_MSEC);
	timer_queue_run(&timer_default_queue, clock_now_ns());
	cr_assert(a.killed, "2 s without keep alive");
	cr_assert(q.killed, "every queue of the controller is closed");
	cr_assert_eq(a.kill_reason, -ETIMEDOUT);
	cr_assert_eq(nvmet_stats()->kato_expired, 1);
	/* commands on a dead queue are aborted, the controller cannot take new I/O queues */
	cr_assert_eq(rw(&q, false, 1, 0, 1, NULL, 512), NVMET_SC_ABORT_SQ_DELETED);
	struct ft_conn q2;
	ft_open(&q2, 0);
	cr_assert_eq(ft_connect_io(&q2, 2, (uint16_t)nvmet_queue_cntlid(a.q), HOST_A, VOL0), NVMET_SC_CONNECT_INVALID_PARAM);
	ft_close(&q2);
	/* the transport closes: the controller goes */
	ft_close(&q);
	cr_assert_eq(nvmet_ctrl_count(), 1);
	ft_close(&a);
	cr_assert_eq(nvmet_ctrl_count(), 0);
	cr_assert_eq(nvmet_queue_count(), 0);
}

Test(nvmet, aer_on_namespace_change)
{
	struct ft_conn a, q;
	struct nvme_sqe s;
	static uint8_t log[4096];

	connect_all(&a, &q, HOST_A, VOL0, 0);
	cr_assert_eq(admin(&a, NVME_ADM_SET_FEATURES, 0, NVME_FEAT_ASYNC_EVENT, NVME_AEC_NS_ATTR, NULL, 0, NULL), 0);
	s = ft_sqe(NVME_ADM_AER, 20, 0, 0);
	struct ft_cmd *aer = ft_submit(&a, 0, &s, NULL, 0);
	cr_assert_eq(aer->completions, 0, "held");
	s.cid = le16_make(21);
	struct ft_cmd *aer2 = ft_submit(&a, 1, &s, NULL, 0);
	cr_assert_eq(aer2->completions, 0);

	cr_assert_eq(nvmet_ns_set_enabled(VOL0, 5, true), 0);
	cr_assert_eq(aer->completions + aer2->completions, 1, "one AER completes");
	struct ft_cmd *got = aer->completions ? aer : aer2;
	struct ft_cmd *left = aer->completions ? aer2 : aer;
	cr_assert_eq(le16_get(got->req.cqe.status), 0);
	cr_assert_eq(le32_get(got->req.cqe.dw0), NVME_AER_RESULT(NVME_AER_TYPE_NOTICE, NVME_AER_NOTICE_NS_CHANGED, NVME_LOG_CHANGED_NS));
	/* namespace 5 now answers */
	static uint8_t buf[512];
	cr_assert_eq(rw(&q, false, 5, 0, 1, buf, 512), 0);
	/* a second change is masked until the log is read */
	cr_assert_eq(nvmet_ns_set_enabled(VOL0, 3, false), 0);
	cr_assert_eq(left->completions, 0);
	cr_assert_eq(rw(&q, false, 3, 0, 1, buf, 512), NVMET_SC_INVALID_NS);
	cr_assert_eq(admin(&a, NVME_ADM_GET_LOG_PAGE, 0, NVME_LOG_CHANGED_NS | (1023u << 16), 0, log, 4096, NULL), 0);
	cr_assert_eq(le32_load(log), 5);
	cr_assert_eq(le32_load(log + 4), 3);
	cr_assert_eq(le32_load(log + 8), 0);
	/* reading the log unmasks: the pending notice completes the other AER */
	cr_assert_eq(left->completions, 1);
	cr_assert_eq(admin(&a, NVME_ADM_GET_LOG_PAGE, 0, NVME_LOG_CHANGED_NS | (1023u << 16), 0, log, 4096, NULL), 0);
	cr_assert_eq(le32_load(log), 0, "cleared by the previous read");
	/* AER limit, then held AERs abort when the admin queue goes */
	for (unsigned i = 0; i < NVMET_AERL; i++) {
		s.cid = le16_make((uint16_t)(30u + i));
		ft_submit(&a, i, &s, NULL, 0);
	}
	cr_assert_eq(ft_exec(&a, &s, NULL, 0, NULL, NULL), NVMET_SC_AER_LIMIT);
	cr_assert_eq(nvmet_ns_set_enabled(VOL0, 9, true), -ENOENT);
	ft_close(&q);
	ft_close(&a);
	for (unsigned i = 0; i < NVMET_AERL; i++) {
		cr_assert_eq(a.cmds[i].completions, 1);
		cr_assert_eq((le16_get(a.cmds[i].req.cqe.status) >> 1) & 0x7ff, NVMET_SC_ABORT_SQ_DELETED);
	}
}

Test(nvmet, disconnect_cleanup)
{
	struct ft_conn a, q;
	struct nvme_sqe s;

	connect_all(&a, &q, HOST_A, VOL0, 0);
	/* Disconnect on the I/O queue: that queue only */
	s = ft_sqe(NVMF_OPC_FABRICS, 11, 0, 0);
	struct nvmf_cmd f = nvmf_cmd_of(&s);
	f.fctype = NVMF_FCTYPE_DISCONNECT;
	s = nvmf_cmd_sqe(&f);
	cr_assert_eq(ft_exec(&q, &s, NULL, 0, NULL, NULL), 0);
	cr_assert(q.killed);
	cr_assert_not(a.killed);
	ft_close(&q);
	cr_assert_eq(admin(&a, NVME_ADM_KEEP_ALIVE, 0, 0, 0, NULL, 0, NULL), 0);
	/* the qid is free again */
	ft_open(&q, 0);
	cr_assert_eq(ft_connect_io(&q, 1, (uint16_t)nvmet_queue_cntlid(a.q), HOST_A, VOL0), 0);
	/* property commands on an I/O queue are refused */
	struct nvme_sqe p = ft_prop_sqe(false, false, NVMF_PROP_CSTS, 0);
	cr_assert_eq(ft_exec(&q, &p, NULL, 0, NULL, NULL), NVMET_SC_INVALID_OPCODE);
	/* Disconnect on the admin queue: the association */
	cr_assert_eq(ft_exec(&a, &s, NULL, 0, NULL, NULL), 0);
	cr_assert(a.killed);
	cr_assert(q.killed);
	ft_close(&a);
	ft_close(&q);
	cr_assert_eq(nvmet_ctrl_count(), 0);
	cr_assert_eq(nvmet_queue_count(), 0);
	cr_assert_eq(nvmet_stats()->ctrls_created, nvmet_stats()->ctrls_freed);
}

Test(nvmet, admin_queue_loss_kills_io_queues)
{
	struct ft_conn a, q;
	connect_all(&a, &q, HOST_A, VOL0, 0);
	ft_close(&a);
	cr_assert(q.killed);
	cr_assert_eq(nvmet_ctrl_count(), 1, "alive until its last queue goes");
	ft_close(&q);
	cr_assert_eq(nvmet_ctrl_count(), 0);
}

Test(nvmet, init_refuses_and_fini_frees_live_state)
{
	struct ft_conn a, q;
	connect_all(&a, &q, HOST_A, VOL0, 1000);
	cr_assert_eq(nvmet_init(&cfg, ram_open, NULL), -EBUSY);
	nvmet_fini();
	cr_assert_not(nvmet_running());
	struct nvmet_queue *nq;
	cr_assert_eq(nvmet_queue_create(0, &ft_ops, NULL, &nq), -ENODEV);
	/* a config with an NSID beyond NN is refused and leaves nothing */
	struct nvmet_config bad = cfg;
	bad.subsys[1].ns[0].nsid = NVMET_MAX_NSID + 1;
	cr_assert_eq(nvmet_init(&bad, ram_open, NULL), -EINVAL);
	cr_assert_not(nvmet_running());
	cr_assert_eq(nvmet_init(&cfg, ram_open, NULL), 0);
}

/* A backend that holds its I/O until the test completes it (like the NVMe backend). */
static struct nvmet_bio *held_bio;
static int slow_submit(struct nvmet_bdev *b, struct nvmet_bio *bio)
{
	(void)b;
	if (held_bio)
		return -EBUSY;
	held_bio = bio;
	return 0;
}
static void slow_close(struct nvmet_bdev *b)
{
	(void)b;
}
static const struct nvmet_bdev_ops slow_ops = { .submit = slow_submit, .close = slow_close };
static int slow_open(void *ctx, unsigned si, const struct nvmet_cfg_ns *ns, struct nvmet_bdev *out)
{
	(void)ctx;
	(void)si;
	(void)ns;
	memset(out, 0, sizeof(*out));
	out->ops = &slow_ops;
	out->nblocks = 100;
	out->lba_shift = 9;
	return 0;
}

Test(nvmet, queue_destroyed_with_io_in_flight)
{
	struct ft_conn a, q;
	struct nvme_sqe s = ft_sqe(NVME_CMD_READ, 40, 1, 512);

	nvmet_fini();
	cr_assert_eq(nvmet_init(&cfg, slow_open, NULL), 0);
	held_bio = NULL;
	connect_all(&a, &q, HOST_A, VOL0, 0);
	struct ft_cmd *cmd = ft_submit(&q, 0, &s, NULL, 512);
	cr_assert_eq(cmd->completions, 0, "at the backend");
	cr_assert_not_null(held_bio);
	/* a second one while the backend is busy: retryable status, no DNR */
	s.cid = le16_make(41);
	struct ft_cmd *busy = ft_submit(&q, 1, &s, NULL, 512);
	cr_assert_eq(busy->completions, 1);
	cr_assert_eq((le16_get(busy->req.cqe.status) >> 1) & 0x7ff, NVMET_SC_CMD_INTERRUPTED);
	cr_assert_eq(le16_get(busy->req.cqe.status) & NVME_STATUS_DNR, 0);
	/* the connection goes; the queue stays until its command is back */
	ft_close(&q);
	ft_close(&a);
	cr_assert_eq(nvmet_ctrl_count(), 0);
	cr_assert_eq(nvmet_queue_count(), 1);
	struct nvmet_bio *b = held_bio;
	held_bio = NULL;
	b->done(b, 0);
	cr_assert_eq(cmd->completions, 1);
	cr_assert_eq(le16_get(cmd->req.cqe.cid), 40);
	cr_assert_eq(nvmet_queue_count(), 0);
}

/* The Error Information log (Get Log Page 01h) records failed commands newest first:
 * error count, SQID, CID, the CQE's status field, LBA and NSID; the SMART page counts
 * them; 20 errors keep the newest 16 (ELPE + 1). */
Test(nvmet, error_log_records_failures)
{
	struct ft_conn a, q;
	static uint8_t page[1024], smart[512];
	struct nvme_cqe cqe;
	uint8_t buf[512];

	connect_all(&a, &q, HOST_A, VOL0, 0);
	/* nothing failed yet: every entry is zero */
	cr_assert_eq(admin(&a, NVME_ADM_GET_LOG_PAGE, 0, NVME_LOG_ERROR | (255u << 16), 0, page, 1024, NULL), 0);
	for (unsigned i = 0; i < sizeof(page); i++)
		cr_assert_eq(page[i], 0);
	/* a read past the end of nsid 1 (2048 blocks): LBA Out of Range, DNR */
	struct nvme_sqe s = ft_sqe(NVME_CMD_READ, 0x1234, 1, 512);
	s.cdw10 = le32_make(2048);
	cr_assert_eq(ft_exec(&q, &s, NULL, 512, buf, &cqe), NVMET_SC_LBA_RANGE);
	/* an unknown admin opcode */
	cr_assert_eq(admin(&a, 0xc3, 0, 0, 0, NULL, 0, NULL), NVMET_SC_INVALID_OPCODE);
	cr_assert_eq(admin(&a, NVME_ADM_GET_LOG_PAGE, 0, NVME_LOG_ERROR | (255u << 16), 0, page, 1024, NULL), 0);
	/* newest first: the admin opcode error (count 2, SQID 0, CID 7), then the read */
	cr_assert_eq(le64_load(page + 0), 2);
	cr_assert_eq(le16_load(page + 8), 0);
	cr_assert_eq(le16_load(page + 10), 7);
	cr_assert_eq(le16_load(page + 12) >> 1 & 0x7ff, NVMET_SC_INVALID_OPCODE);
	cr_assert_eq(le64_load(page + 64), 1);
	cr_assert_eq(le16_load(page + 64 + 8), 1, "SQID of the I/O queue");
	cr_assert_eq(le16_load(page + 64 + 10), 0x1234);
	cr_assert_eq(le16_load(page + 64 + 12), le16_get(cqe.status), "the CQE's status field, DNR included");
	cr_assert(le16_load(page + 64 + 12) & NVME_STATUS_DNR);
	cr_assert_eq(le16_load(page + 64 + 14), 0xffff);
	cr_assert_eq(le64_load(page + 64 + 16), 2048, "LBA");
	cr_assert_eq(le32_load(page + 64 + 24), 1, "NSID");
	cr_assert_eq(page[64 + 29], ft_ops.trtype);
	cr_assert_eq(le64_load(page + 128), 0, "no third error");
	cr_assert_eq(admin(&a, NVME_ADM_GET_LOG_PAGE, 0, NVME_LOG_SMART | (127u << 16), 0, smart, 512, NULL), 0);
	cr_assert_eq(le64_load(smart + 176), 2, "SMART: Number of Error Information Log Entries");
	/* 18 more: the ring keeps the newest 16, counts 20..5 */
	for (unsigned i = 0; i < 18; i++)
		cr_assert_eq(admin(&a, 0xc3, 0, 0, 0, NULL, 0, NULL), NVMET_SC_INVALID_OPCODE);
	cr_assert_eq(admin(&a, NVME_ADM_GET_LOG_PAGE, 0, NVME_LOG_ERROR | (255u << 16), 0, page, 1024, NULL), 0);
	for (unsigned i = 0; i < 16; i++)
		cr_assert_eq(le64_load(page + 64 * i), 20 - i);
	ft_close(&q);
	ft_close(&a);
}

/* Hostile field values in admin and I/O commands end in their NVMe status (never a
 * transfer, never a crash), and each failure is one Error Information entry. */
Test(nvmet, hostile_admin_and_io_fields)
{
	struct ft_conn a, q;
	static uint8_t buf[4096];
	unsigned failures = 0;
	struct nvme_sqe s;

#define EXPECT_FAIL(expr, sc)                                                                                  \
	do {                                                                                                   \
		cr_assert_eq((expr), (sc));                                                                    \
		failures++;                                                                                    \
	} while (0)

	connect_all(&a, &q, HOST_A, VOL0, 0);
	/* Get Log Page: 2 MiB (beyond MDTS), an offset that is not a dword multiple, a buffer
	 * shorter than NUMD, the discovery log on an I/O controller */
	EXPECT_FAIL(admin(&a, NVME_ADM_GET_LOG_PAGE, 0, NVME_LOG_SMART | (0xffffu << 16), 7, NULL, 0, NULL),
		    NVMET_SC_INVALID_FIELD);
	s = ft_sqe(NVME_ADM_GET_LOG_PAGE, 7, 0, 512);
	s.cdw10 = le32_make(NVME_LOG_SMART | (127u << 16));
	s.cdw12 = le32_make(2);
	EXPECT_FAIL(ft_exec(&a, &s, NULL, 512, buf, NULL), NVMET_SC_INVALID_FIELD);
	EXPECT_FAIL(admin(&a, NVME_ADM_GET_LOG_PAGE, 0, NVME_LOG_SMART | (127u << 16), 0, buf, 256, NULL),
		    NVMET_SC_SGL_LENGTH_INVALID);
	EXPECT_FAIL(admin(&a, NVME_ADM_GET_LOG_PAGE, 0, NVME_LOG_DISCOVERY | (255u << 16), 0, buf, 1024, NULL),
		    NVMET_SC_INVALID_FIELD);
	/* Identify: CNS 06h (reserved at VS 1.3), NSID 0 and broadcast for a namespace */
	EXPECT_FAIL(admin(&a, NVME_ADM_IDENTIFY, 0, 0x06, 0, buf, 4096, NULL), NVMET_SC_INVALID_FIELD);
	EXPECT_FAIL(admin(&a, NVME_ADM_IDENTIFY, 0, NVME_ID_CNS_NS, 0, buf, 4096, NULL), NVMET_SC_INVALID_NS);
	EXPECT_FAIL(admin(&a, NVME_ADM_IDENTIFY, 0xffffffffu, NVME_ID_CNS_NS, 0, buf, 4096, NULL), NVMET_SC_INVALID_NS);
	/* features: unknown FID, Host ID without EXHID, Number of Queues 0xffff; Keep Alive with data */
	EXPECT_FAIL(admin(&a, NVME_ADM_GET_FEATURES, 0, 0x7f, 0, NULL, 0, NULL), NVMET_SC_INVALID_FIELD);
	EXPECT_FAIL(admin(&a, NVME_ADM_GET_FEATURES, 0, NVME_FEAT_HOST_ID, 0, buf, 16, NULL), NVMET_SC_INVALID_FIELD);
	EXPECT_FAIL(admin(&a, NVME_ADM_SET_FEATURES, 0, NVME_FEAT_NUM_QUEUES, 0xffffu, NULL, 0, NULL),
		    NVMET_SC_INVALID_FIELD);
	EXPECT_FAIL(admin(&a, NVME_ADM_KEEP_ALIVE, 0, 0, 0, buf, 16, NULL), NVMET_SC_SGL_LENGTH_INVALID);
	/* I/O: an inactive namespace, an opcode the NVM command set does not define, a fused
	 * command, PRPs, a Last Segment descriptor and a keyed data block as SGL1 */
	EXPECT_FAIL(rw(&q, false, 9, 0, 1, buf, 512), NVMET_SC_INVALID_NS);
	s = ft_sqe(0x06, 11, 1, 0);
	EXPECT_FAIL(ft_exec(&q, &s, NULL, 0, NULL, NULL), NVMET_SC_INVALID_OPCODE);
	s = ft_sqe(NVME_CMD_FLUSH, 12, 1, 0);
	s.flags |= 1u; /* FUSE: first command of a fused operation */
	EXPECT_FAIL(ft_exec(&q, &s, NULL, 0, NULL, NULL), NVMET_SC_INVALID_FIELD);
	s = ft_sqe(NVME_CMD_FLUSH, 13, 1, 0);
	s.flags &= (uint8_t)~NVME_SQE_PSDT_MASK;
	EXPECT_FAIL(ft_exec(&q, &s, NULL, 0, NULL, NULL), NVMET_SC_INVALID_FIELD);
	s = ft_sqe(NVME_CMD_READ, 14, 1, 512);
	s.dptr.sgl1.id = NVME_SGL_ID(NVME_SGL_TYPE_LAST_SEGMENT);
	cr_assert_eq(nvmet_req_data_len(&s), 0, "nothing to fetch for an SGL1 the target refuses");
	EXPECT_FAIL(ft_exec(&q, &s, NULL, 0, NULL, NULL), NVMET_SC_SGL_TYPE_INVALID);
	s = ft_sqe(NVME_CMD_READ, 15, 1, 512);
	s.dptr.sgl1.id = 0x40; /* keyed: the fake transport does not advertise it */
	EXPECT_FAIL(ft_exec(&q, &s, NULL, 512, buf, NULL), NVMET_SC_SGL_TYPE_INVALID);
	/* the transport data block (TCP's, 5Ah) is fine */
	s = ft_sqe(NVME_CMD_READ, 16, 1, 512);
	s.dptr.sgl1.id = NVMF_SGL_ID_TRANSPORT;
	cr_assert_eq(ft_exec(&q, &s, NULL, 512, buf, NULL), 0);
#undef EXPECT_FAIL

	/* every failure is in the error log: its newest entry counts them */
	cr_assert_eq(admin(&a, NVME_ADM_GET_LOG_PAGE, 0, NVME_LOG_ERROR | (15u << 16), 0, buf, 64, NULL), 0);
	cr_assert_eq(le64_load(buf), failures, "%lu errors logged, %u failures", (unsigned long)le64_load(buf), failures);
	ft_close(&q);
	ft_close(&a);
}

/* nvmet_req_shape gives what the five calls it replaces on the transport's path give, for
 * an unconnected queue, the admin queue and an I/O queue (read, write, flush, an absent
 * namespace, an SGL1 the target refuses). */
static void shape_matches(const struct nvmet_queue *q, const struct nvme_sqe *s)
{
	struct nvmet_req_shape sh;
	memset(&sh, 0xa5, sizeof(sh));
	nvmet_req_shape(q, s, &sh);
	cr_assert_eq(sh.len, nvmet_req_data_len(s));
	cr_assert_eq(sh.dir, nvmet_req_dir(q, s));
	cr_assert_eq(sh.bdev, nvmet_req_bdev(q, s));
	cr_assert_eq(sh.qid, nvmet_queue_qid(q));
	cr_assert_eq(sh.qsize, nvmet_queue_size(q));
}

Test(nvmet, req_shape_is_the_five_answers_in_one)
{
	struct ft_conn a, q, fresh;
	ft_open(&fresh, 0);
	connect_all(&a, &q, HOST_A, VOL0, 0);
	struct nvme_sqe rd = ft_sqe(NVME_CMD_READ, 1, 1, 4096), wr = ft_sqe(NVME_CMD_WRITE, 2, 3, 512),
			fl = ft_sqe(NVME_CMD_FLUSH, 3, 1, 0), absent = ft_sqe(NVME_CMD_READ, 4, 9, 512),
			bad = ft_sqe(NVME_CMD_READ, 5, 1, 512);
	bad.dptr.sgl1.id = NVME_SGL_ID(NVME_SGL_TYPE_LAST_SEGMENT);
	const struct nvme_sqe *all[] = { &rd, &wr, &fl, &absent, &bad };
	for (unsigned i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
		shape_matches(fresh.q, all[i]);
		shape_matches(a.q, all[i]);
		shape_matches(q.q, all[i]);
	}
	struct nvmet_req_shape sh;
	nvmet_req_shape(q.q, &rd, &sh);
	cr_assert_eq(sh.qid, 1);
	cr_assert_eq(sh.len, 4096);
	cr_assert_eq(sh.dir, DMA_FROM_DEVICE);
	cr_assert_not_null(sh.bdev, "a Read of an open namespace names its backend");
	nvmet_req_shape(fresh.q, &rd, &sh);
	cr_assert_eq(sh.qid, -1);
	cr_assert_null(sh.bdev);
	ft_close(&q);
	ft_close(&a);
	ft_close(&fresh);
}

/* Issue 13.7: an I/O queue Connect names a controller of the port it arrives on, and a
 * qid within the Number of Queues granted; Number of Queues cannot change once an I/O
 * queue exists. */
Test(nvmet, io_queue_connect_checks_the_port_and_the_queues_granted)
{
	struct ft_conn a, q, other, q3;
	struct nvme_cqe cqe;
	int cntlid = connect_all(&a, NULL, HOST_A, VOL1, 0);
	cr_assert_eq(admin(&a, NVME_ADM_SET_FEATURES, 0, NVME_FEAT_NUM_QUEUES, (1u << 16) | 1u, NULL, 0, &cqe), 0);
	cr_assert_eq(le32_get(cqe.dw0), (1u << 16) | 1u, "2 I/O queues granted");
	/* VOL1 is on both ports: the controller lives on port index 0 */
	ft_open(&other, 1);
	cr_assert_eq(ft_connect_io(&other, 1, (uint16_t)cntlid, HOST_A, VOL1), NVMET_SC_CONNECT_INVALID_PARAM,
		     "a queue on another port");
	ft_open(&q3, 0);
	cr_assert_eq(ft_connect_io(&q3, 3, (uint16_t)cntlid, HOST_A, VOL1), NVMET_SC_CONNECT_INVALID_PARAM,
		     "qid 3 beyond the 2 granted");
	ft_open(&q, 0);
	cr_assert_eq(ft_connect_io(&q, 2, (uint16_t)cntlid, HOST_A, VOL1), 0, "qid 2 is granted");
	cr_assert_eq(admin(&a, NVME_ADM_SET_FEATURES, 0, NVME_FEAT_NUM_QUEUES, (7u << 16) | 7u, NULL, 0, NULL),
		     NVMET_SC_CMD_SEQ_ERROR, "not once an I/O queue exists");
	cr_assert_eq(nvmet_stats()->connect_refused, 2);
	ft_close(&q3);
	ft_close(&other);
	ft_close(&q);
	ft_close(&a);
	cr_assert_eq(nvmet_ctrl_count(), 0);
	cr_assert_eq(nvmet_queue_count(), 0);
}

/* Issue 13.7: the transport destroys the admin queue from inside the completion of a
 * held AER while the controller is being killed (keep-alive expiry): the controller is
 * not freed under nvmet_ctrl_kill() (use after free before the fix), but from the poll
 * loop's timers afterwards. */
Test(nvmet, teardown_from_inside_a_completion_is_deferred)
{
	struct ft_conn a;
	connect_all(&a, NULL, HOST_A, VOL0, 1000);
	struct nvme_sqe aer = ft_sqe(NVME_ADM_AER, 20, 0, 0);
	ft_submit(&a, 1, &aer, NULL, 0);
	aer = ft_sqe(NVME_ADM_AER, 21, 0, 0);
	ft_submit(&a, 2, &aer, NULL, 0);
	cr_assert(a.cmds[1].busy && a.cmds[2].busy, "both AERs held");
	a.close_in_done = true;
	/* traffic based keep-alive: expiry after two KATOs without a command */
	fake_clock_advance(1100 * NSEC_PER_MSEC);
	timer_queue_run(&timer_default_queue, clock_now_ns());
	fake_clock_advance(1100 * NSEC_PER_MSEC);
	timer_queue_run(&timer_default_queue, clock_now_ns());
	cr_assert_eq(nvmet_stats()->kato_expired, 1);
	timer_queue_run(&timer_default_queue, clock_now_ns()); /* the next pass of the poll loop */
	cr_assert_eq(a.cmds[1].completions, 1);
	cr_assert_eq(a.cmds[2].completions, 1);
	cr_assert_null(a.q, "the transport destroyed the queue inside the completion");
	cr_assert_eq(nvmet_ctrl_count(), 0, "freed from the timer, after the kill returned");
	cr_assert_eq(nvmet_queue_count(), 0);
}
