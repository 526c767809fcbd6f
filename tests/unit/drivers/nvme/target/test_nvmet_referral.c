// sources: drivers/nvme/target/nvmet_core.c drivers/nvme/target/nvmet_fabrics.c drivers/nvme/target/nvmet_auth.c drivers/nvme/target/nvmet_auth_msg.c drivers/nvme/target/nvmet_auth_key.c lib/crypto.c lib/crc32.c tests/unit/net/fake_entropy.c drivers/nvme/target/nvmet_admin.c drivers/nvme/target/nvmet_ana.c drivers/nvme/target/nvmet_referral.c drivers/nvme/target/nvmet_io.c drivers/nvme/target/nvmet_bdev_ram.c drivers/nvme/target/nvmet_config.c lib/ipv4_text.c mm/pool.c lib/timer.c lib/log.c tests/unit/drivers/nvme/target/fake_nvmet_transport.c
// libs: -lmbedcrypto
/*
 * Discovery referrals over the fake transport: the referral entries after a port's
 * subsystems (subtype referral, the discovery NQN, address, PORTID, TREQ, RDMA TSAS),
 * disabled ones left out, only on their own port; run-time add and remove with a new
 * generation counter and a Discovery Log Page Change notice to that port's discovery
 * controllers (masked until the log is read with RAE clear); the errors. Pools return to
 * zero after every test.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>
#include "drivers/nvme/target/nvmet.h"
#include "drivers/nvme/target/nvmet_referral.h"
#include "drivers/nvme/target/nvmet_wire.h"
#include "lib/byteorder.h"
#include "lib/clock.h"
#include "fake_nvmet_transport.h"
#include "tests/unit/unit_support.h"

#define HOST "nqn.2014-08.org.nvmexpress:uuid:aaaaaaaa-0000-4000-8000-000000000001"
#define VOL "nqn.2026-11.org.p2pstore:a"
#define DISC "nqn.2014-08.org.nvmexpress.discovery"

static const char *const config_json =
	"{ \"ports\": [\n"
	"    { \"portid\": 1, \"addr\": { \"trtype\": \"tcp\", \"adrfam\": \"ipv4\", \"traddr\": \"10.0.2.15\", \"trsvcid\": \"4420\" },\n"
	"      \"referrals\": [\n"
	"        { \"name\": \"b\", \"addr\": { \"trtype\": \"tcp\", \"adrfam\": \"ipv4\", \"traddr\": \"10.0.2.16\",\n"
	"          \"trsvcid\": \"8009\", \"treq\": \"not specified\", \"portid\": \"7\" } },\n"
	"        { \"name\": \"off\", \"enable\": 0, \"addr\": { \"trtype\": \"tcp\", \"adrfam\": \"ipv4\",\n"
	"          \"traddr\": \"10.0.2.99\", \"trsvcid\": \"4420\" } },\n"
	"        { \"name\": \"r\", \"addr\": { \"trtype\": \"rdma\", \"adrfam\": \"ipv4\", \"traddr\": \"10.0.3.1\",\n"
	"          \"trsvcid\": \"4420\", \"treq\": \"required\" } } ],\n"
	"      \"subsystems\": [ \"" VOL "\" ] },\n"
	"    { \"portid\": 2, \"addr\": { \"trtype\": \"tcp\", \"adrfam\": \"ipv4\", \"traddr\": \"10.0.2.15\", \"trsvcid\": \"4421\" },\n"
	"      \"subsystems\": [ \"" VOL "\" ] } ],\n"
	"  \"subsystems\": [ { \"nqn\": \"" VOL "\", \"attr\": { \"allow_any_host\": \"1\" },\n"
	"      \"namespaces\": [ { \"nsid\": 1, \"device\": { \"path\": \"/dev/nvme0n1\" } } ] } ] }\n";

static struct nvmet_config cfg;

static void setup(void)
{
	char err[200];
	unit_pools_begin();
	fake_clock_install();
	cr_assert_eq(ft_target_start(config_json, &cfg, ft_ram_open, err, sizeof(err)), 0, "%s", err);
}

static void teardown(void)
{
	nvmet_fini();
	unit_pools_end();
}

TestSuite(nvmet_referral, .init = setup, .fini = teardown);

static uint16_t admin(struct ft_conn *c, uint8_t opc, uint32_t cdw10, uint32_t cdw11, void *rbuf, uint32_t len)
{
	struct nvme_sqe s = ft_sqe(opc, 7, 0, len);
	s.cdw10 = le32_make(cdw10);
	s.cdw11 = le32_make(cdw11);
	return ft_exec(c, &s, NULL, len, rbuf, NULL);
}

static void connect(struct ft_conn *a, unsigned port, const char *nqn)
{
	ft_open(a, port);
	cr_assert_geq(ft_connect_admin(a, HOST, nqn, 0), 1);
	cr_assert_eq(ft_enable(a), 0);
}

static uint16_t disc_log(struct ft_conn *a, uint8_t *log, uint32_t len, bool rae)
{
	memset(log, 0xa5, len);
	return admin(a, NVME_ADM_GET_LOG_PAGE, NVME_LOG_DISCOVERY | (rae ? NVME_LOG_RAE : 0) | ((len / 4 - 1) << 16), 0,
		     log, len);
}

static void check_referral(const uint8_t *e, uint8_t trtype, uint16_t portid, uint8_t treq, const char *traddr,
			   const char *trsvcid)
{
	cr_assert_eq(e[NVMF_DE_TRTYPE], trtype);
	cr_assert_eq(e[NVMF_DE_ADRFAM], NVMF_ADRFAM_IPV4);
	cr_assert_eq(e[NVMF_DE_SUBTYPE], NVMF_SUBTYPE_REFERRAL);
	cr_assert_eq(e[NVMF_DE_TREQ], treq);
	cr_assert_eq(le16_load(e + NVMF_DE_PORTID), portid);
	cr_assert_eq(le16_load(e + NVMF_DE_CNTLID), 0xffff);
	cr_assert_str_eq((const char *)e + NVMF_DE_SUBNQN, DISC);
	cr_assert_str_eq((const char *)e + NVMF_DE_TRADDR, traddr);
	cr_assert_str_eq((const char *)e + NVMF_DE_TRSVCID, trsvcid);
	for (unsigned i = NVMF_DE_TRSVCID + strlen(trsvcid); i < NVMF_DE_SUBNQN; i++)
		cr_assert_eq(e[i], 0, "byte %u initialised", i);
}

Test(nvmet_referral, entries_after_the_subsystems)
{
	struct ft_conn a;
	static uint8_t log[5 * 1024];
	static uint8_t id[4096];

	connect(&a, 0, DISC);
	cr_assert_eq(admin(&a, NVME_ADM_IDENTIFY, NVME_ID_CNS_CTRL, 0, id, 4096), 0);
	cr_assert_eq(le32_load(id + NVME_IDC_OAES), NVME_OAES_DISC_CHANGE);
	cr_assert_eq(disc_log(&a, log, sizeof(log), false), 0);
	cr_assert_eq(le64_load(log + NVMF_DISC_OFF_NUMREC), 3, "one subsystem, two enabled referrals");
	cr_assert_eq(log[1024 + NVMF_DE_SUBTYPE], NVMF_SUBTYPE_NVME);
	/* TREQ "not specified" (as Linux nvmet): libnvme takes "not required" for TLS on offer */
	cr_assert_eq(log[1024 + NVMF_DE_TREQ], 0);
	cr_assert_str_eq((const char *)log + 1024 + NVMF_DE_SUBNQN, VOL);
	check_referral(log + 2048, NVMET_TRTYPE_TCP, 7, 0, "10.0.2.16", "8009");
	cr_assert_eq(log[2048 + NVMF_DE_TSAS], 0, "TCP: no security");
	check_referral(log + 3072, NVMET_TRTYPE_RDMA, 0, 1, "10.0.3.1", "4420");
	cr_assert_eq(log[3072 + NVMF_DE_TSAS + NVMF_TSAS_RDMA_QPTYPE], 1);
	cr_assert_eq(log[3072 + NVMF_DE_TSAS + NVMF_TSAS_RDMA_CMS], 1);
	cr_assert_eq(log[3072 + NVMF_DE_TSAS + NVMF_TSAS_RDMA_PRTYPE], 1, "RDMA_PRTYPE not specified");
	for (unsigned i = 4096; i < sizeof(log); i++)
		cr_assert_eq(log[i], 0, "past the records");
	/* one referral by offset */
	struct nvme_sqe s = ft_sqe(NVME_ADM_GET_LOG_PAGE, 5, 0, 1024);
	s.cdw10 = le32_make(NVME_LOG_DISCOVERY | (255u << 16));
	s.cdw12 = le32_make(3072);
	cr_assert_eq(ft_exec(&a, &s, NULL, 1024, log, NULL), 0);
	check_referral(log, NVMET_TRTYPE_RDMA, 0, 1, "10.0.3.1", "4420");
	ft_close(&a);

	/* port 2 has no referrals */
	connect(&a, 1, DISC);
	cr_assert_eq(disc_log(&a, log, 4096, false), 0);
	cr_assert_eq(le64_load(log + NVMF_DISC_OFF_NUMREC), 1);
	ft_close(&a);
}

Test(nvmet_referral, run_time_change_notice)
{
	struct ft_conn d, d2, io;
	static uint8_t log[4096];
	struct nvmet_cfg_referral r = { .name = "c", .enable = true, .portid = 3, .trtype = NVMET_TRTYPE_TCP,
					.traddr = 0x0a000211, .trsvcid = 4420, .treq = 2 };

	connect(&d, 0, DISC);
	connect(&d2, 1, DISC);
	connect(&io, 0, VOL);
	/* the discovery controllers enable the notice; an I/O controller cannot */
	cr_assert_eq(admin(&d, NVME_ADM_SET_FEATURES, NVME_FEAT_ASYNC_EVENT, 0xffffffffu, NULL, 0), 0);
	cr_assert_eq(admin(&d2, NVME_ADM_SET_FEATURES, NVME_FEAT_ASYNC_EVENT, 0xffffffffu, NULL, 0), 0);
	cr_assert_eq(admin(&io, NVME_ADM_SET_FEATURES, NVME_FEAT_ASYNC_EVENT, 0xffffffffu, NULL, 0), 0);
	struct nvme_sqe s = ft_sqe(NVME_ADM_GET_FEATURES, 8, 0, 0);
	s.cdw10 = le32_make(NVME_FEAT_ASYNC_EVENT);
	struct nvme_cqe cqe;
	cr_assert_eq(ft_exec(&d, &s, NULL, 0, NULL, &cqe), 0);
	cr_assert_eq(le32_get(cqe.dw0), NVME_AEC_DISC_CHANGE);
	cr_assert_eq(ft_exec(&io, &s, NULL, 0, NULL, &cqe), 0);
	cr_assert_eq(le32_get(cqe.dw0) & NVME_AEC_DISC_CHANGE, 0);
	s = ft_sqe(NVME_ADM_AER, 20, 0, 0);
	struct ft_cmd *aer = ft_submit(&d, 0, &s, NULL, 0);
	struct ft_cmd *aer2 = ft_submit(&d2, 0, &s, NULL, 0);
	struct ft_cmd *aer_io = ft_submit(&io, 0, &s, NULL, 0);

	cr_assert_eq(disc_log(&d, log, 1024, true), 0);
	uint64_t gen = le64_load(log + NVMF_DISC_OFF_GENCTR);
	cr_assert_eq(nvmet_referral_add(1, &r), 0);
	cr_assert_eq(aer->completions, 1);
	cr_assert_eq(le32_get(aer->req.cqe.dw0), 0x0070f002u, "notice, discovery log change, log page 70h");
	cr_assert_eq(aer2->completions + aer_io->completions, 0, "other port, I/O controller");
	cr_assert_eq(disc_log(&d, log, 4096, true), 0);
	cr_assert_eq(le64_load(log + NVMF_DISC_OFF_GENCTR), gen + 1);
	cr_assert_eq(le64_load(log + NVMF_DISC_OFF_NUMREC), 4);
	check_referral(log + 4096 - 1024 + 0, NVMET_TRTYPE_RDMA, 0, 1, "10.0.3.1", "4420");
	/* masked (read with RAE set): the removal waits */
	aer = ft_submit(&d, 0, &s, NULL, 0);
	cr_assert_eq(nvmet_referral_del(1, "b"), 0);
	cr_assert_eq(aer->completions, 0);
	cr_assert_eq(disc_log(&d, log, 4096, false), 0);
	cr_assert_eq(aer->completions, 1, "unmasked by the read: the pending change is reported");
	cr_assert_eq(le64_load(log + NVMF_DISC_OFF_GENCTR), gen + 2);
	cr_assert_eq(le64_load(log + NVMF_DISC_OFF_NUMREC), 3);
	check_referral(log + 2048, NVMET_TRTYPE_RDMA, 0, 1, "10.0.3.1", "4420");
	check_referral(log + 3072, NVMET_TRTYPE_TCP, 3, 2, "10.0.2.17", "4420");

	/* a disabled referral changes nothing the host sees */
	aer = ft_submit(&d, 0, &s, NULL, 0);
	cr_assert_eq(nvmet_referral_del(1, "off"), 0);
	cr_assert_eq(aer->completions, 0);
	cr_assert_eq(disc_log(&d, log, 1024, false), 0);
	cr_assert_eq(le64_load(log + NVMF_DISC_OFF_GENCTR), gen + 2);

	/* errors */
	cr_assert_eq(nvmet_referral_add(1, &r), -EEXIST);
	cr_assert_eq(nvmet_referral_add(9, &r), -ENOENT);
	cr_assert_eq(nvmet_referral_del(1, "nope"), -ENOENT);
	cr_assert_eq(nvmet_referral_del(9, "c"), -ENOENT);
	for (unsigned i = 0; i < NVMET_CFG_MAX_REFERRALS - 2; i++) {
		r.name[0] = (char)('k' + i);
		cr_assert_eq(nvmet_referral_add(2, &r), 0);
	}
	r.name[0] = 'z';
	cr_assert_eq(nvmet_referral_add(2, &r), 0);
	cr_assert_eq(nvmet_referral_add(2, &(struct nvmet_cfg_referral){ .name = "y" }), 0);
	cr_assert_eq(nvmet_referral_add(2, &(struct nvmet_cfg_referral){ .name = "x" }), -ENOSPC);
	cr_assert_eq(aer2->completions, 1, "port 2's discovery controller got its notice");
	ft_close(&io);
	ft_close(&d2);
	ft_close(&d);
	cr_assert_eq(aer_io->completions, 1, "aborted with its queue");
	nvmet_fini();
	cr_assert_eq(nvmet_referral_add(1, &r), -ENOENT, "no target");
}
