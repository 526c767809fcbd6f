// sources: drivers/nvme/target/nvmet_core.c drivers/nvme/target/nvmet_fabrics.c drivers/nvme/target/nvmet_auth.c drivers/nvme/target/nvmet_auth_msg.c drivers/nvme/target/nvmet_auth_key.c lib/crypto.c lib/crc32.c tests/unit/net/fake_entropy.c drivers/nvme/target/nvmet_admin.c drivers/nvme/target/nvmet_ana.c drivers/nvme/target/nvmet_referral.c drivers/nvme/target/nvmet_io.c drivers/nvme/target/nvmet_bdev_ram.c drivers/nvme/target/nvmet_config.c lib/ipv4_text.c mm/pool.c lib/timer.c lib/log.c tests/unit/drivers/nvme/target/fake_nvmet_transport.c
// libs: -lmbedcrypto
/*
 * Asymmetric Namespace Access over the fake transport: the Identify fields Linux's
 * multipath checks, the ANA log page per port (groups, NSIDs, states, change counts) with
 * and without RGO, the path status of I/O in every state (DNR clear), ANA change notices
 * (enabled, masked until the log is read with RAE clear, only on the changed port) and the
 * run-time state change's errors. Pools return to zero after every test.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>
#include "drivers/nvme/target/nvmet_ana.h"
#include "drivers/nvme/target/nvmet.h"
#include "drivers/nvme/target/nvmet_wire.h"
#include "lib/byteorder.h"
#include "lib/clock.h"
#include "fake_nvmet_transport.h"
#include "tests/unit/unit_support.h"

#define HOST "nqn.2014-08.org.nvmexpress:uuid:aaaaaaaa-0000-4000-8000-000000000001"
#define VOL "nqn.2026-11.org.p2pstore:shared"

/* Port 1 (index 0): group 1 optimized, 2 non-optimized, 3 inaccessible, 4 persistent loss,
 * 5 change. Port 2 (index 1) lists group 1 inaccessible and nothing else (the rest:
 * inaccessible, as Linux). Namespaces: 1 and 6 in group 1, 2 and 7 in group 2 (7 disabled),
 * 3 in 3, 4 in 4, 5 in 5. */
static const char *const config_json =
	"{ \"ports\": [\n"
	"    { \"portid\": 1, \"addr\": { \"trtype\": \"tcp\", \"adrfam\": \"ipv4\", \"traddr\": \"10.0.0.1\", \"trsvcid\": \"4420\" },\n"
	"      \"ana_groups\": [ { \"grpid\": 1, \"ana\": { \"state\": \"optimized\" } },\n"
	"                      { \"grpid\": 2, \"ana\": { \"state\": \"non-optimized\" } },\n"
	"                      { \"grpid\": 3, \"ana\": { \"state\": \"inaccessible\" } },\n"
	"                      { \"grpid\": 4, \"ana\": { \"state\": \"persistent-loss\" } },\n"
	"                      { \"grpid\": 5, \"ana\": { \"state\": \"change\" } } ],\n"
	"      \"subsystems\": [ \"" VOL "\" ] },\n"
	"    { \"portid\": 2, \"addr\": { \"trtype\": \"tcp\", \"adrfam\": \"ipv4\", \"traddr\": \"10.0.0.2\", \"trsvcid\": \"4420\" },\n"
	"      \"ana_groups\": [ { \"grpid\": 1, \"ana\": { \"state\": \"inaccessible\" } } ],\n"
	"      \"subsystems\": [ \"" VOL "\" ] } ],\n"
	"  \"subsystems\": [ { \"nqn\": \"" VOL "\", \"attr\": { \"allow_any_host\": \"1\" },\n"
	"      \"namespaces\": [\n"
	"        { \"nsid\": 6, \"ana_grpid\": 1, \"device\": { \"path\": \"/dev/nvme0n6\" } },\n"
	"        { \"nsid\": 1, \"device\": { \"path\": \"/dev/nvme0n1\" } },\n"
	"        { \"nsid\": 7, \"enable\": 0, \"ana_grpid\": 2, \"device\": { \"path\": \"/dev/nvme0n7\" } },\n"
	"        { \"nsid\": 2, \"ana_grpid\": 2, \"device\": { \"path\": \"/dev/nvme0n2\" } },\n"
	"        { \"nsid\": 3, \"ana_grpid\": 3, \"device\": { \"path\": \"/dev/nvme0n3\" } },\n"
	"        { \"nsid\": 4, \"ana_grpid\": 4, \"device\": { \"path\": \"/dev/nvme0n4\" } },\n"
	"        { \"nsid\": 5, \"ana_grpid\": 5, \"device\": { \"path\": \"/dev/nvme0n5\" } } ] } ] }\n";

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

TestSuite(nvmet_ana, .init = setup, .fini = teardown);

static uint16_t admin(struct ft_conn *c, uint8_t opc, uint32_t nsid, uint32_t cdw10, uint32_t cdw11, void *rbuf,
		      uint32_t len)
{
	struct nvme_sqe s = ft_sqe(opc, 7, nsid, len);
	s.cdw10 = le32_make(cdw10);
	s.cdw11 = le32_make(cdw11);
	return ft_exec(c, &s, NULL, len, rbuf, NULL);
}

/* Get Log Page ANA, len bytes (a multiple of 4), LSP and RAE as given. */
static uint16_t ana_log(struct ft_conn *c, uint8_t *buf, uint32_t len, uint8_t lsp, bool rae)
{
	return admin(c, NVME_ADM_GET_LOG_PAGE, 0xffffffffu,
		     NVME_LOG_ANA | ((uint32_t)lsp << 8) | (rae ? NVME_LOG_RAE : 0) | ((len / 4 - 1) << 16), 0, buf, len);
}

/* An admin queue (enabled) and I/O queue 1 on port index port. */
static void connect_port(struct ft_conn *a, struct ft_conn *io, unsigned port)
{
	ft_open(a, port);
	int cntlid = ft_connect_admin(a, HOST, VOL, 0);
	cr_assert_geq(cntlid, 1, "connect status 0x%x", -cntlid);
	cr_assert_eq(ft_enable(a), 0);
	if (io) {
		ft_open(io, port);
		cr_assert_eq(ft_connect_io(io, 1, (uint16_t)cntlid, HOST, VOL), 0);
	}
}

/* Descriptor at *off: checks group, state, NSIDs (count n), advances *off. */
static void check_desc(const uint8_t *log, uint32_t *off, uint32_t grpid, uint8_t state, const uint32_t *nsids,
		       unsigned n)
{
	const uint8_t *d = log + *off;
	cr_assert_eq(le32_load(d + NVME_ANA_DESC_GRPID), grpid);
	cr_assert_eq(le32_load(d + NVME_ANA_DESC_NNSIDS), n, "group %u", grpid);
	cr_assert_eq(d[NVME_ANA_DESC_ANAS], state, "group %u", grpid);
	for (unsigned i = 0; i < 15; i++)
		cr_assert_eq(d[NVME_ANA_DESC_ANAS + 1 + i], 0, "reserved bytes are zero");
	for (unsigned i = 0; i < n; i++)
		cr_assert_eq(le32_load(d + NVME_ANA_DESC_LEN + 4 * i), nsids[i], "group %u nsid %u", grpid, i);
	*off += NVME_ANA_DESC_LEN + 4 * n;
}

Test(nvmet_ana, identify_fields)
{
	struct ft_conn a;
	static uint8_t id[4096];

	connect_port(&a, NULL, 0);
	cr_assert_eq(admin(&a, NVME_ADM_IDENTIFY, 0, NVME_ID_CNS_CTRL, 0, id, 4096), 0);
	cr_assert_eq(id[NVME_IDC_CMIC] & NVME_CMIC_ANA, NVME_CMIC_ANA);
	cr_assert_eq(id[NVME_IDC_CMIC] & 0x2, 0x2, "several controllers");
	cr_assert_eq(id[NVME_IDC_ANATT], NVMET_ANATT_S);
	cr_assert_eq(id[NVME_IDC_ANACAP], 0x5f, "all five states, ANAGRPID static");
	cr_assert_eq(le32_load(id + NVME_IDC_ANAGRPMAX), NVMET_ANA_GRPMAX);
	cr_assert_eq(le32_load(id + NVME_IDC_NANAGRPID), NVMET_ANA_GRPMAX);
	/* Linux refuses ANA when MNAN is 0 or above NN */
	cr_assert_eq(le32_load(id + NVME_IDC_MNAN), le32_load(id + 516));
	cr_assert_eq(le32_load(id + NVME_IDC_OAES), NVME_OAES_NS_ATTR | NVME_OAES_ANA_CHANGE);
	cr_assert_eq(admin(&a, NVME_ADM_IDENTIFY, 4, NVME_ID_CNS_NS, 0, id, 4096), 0);
	cr_assert_eq(le32_load(id + NVME_IDNS_ANAGRPID), 4);
	cr_assert_eq(admin(&a, NVME_ADM_IDENTIFY, 1, NVME_ID_CNS_NS, 0, id, 4096), 0);
	cr_assert_eq(le32_load(id + NVME_IDNS_ANAGRPID), 1, "default group");
	ft_close(&a);
}

Test(nvmet_ana, log_page_per_port_with_and_without_rgo)
{
	struct ft_conn a, b;
	static uint8_t log[8192];
	uint32_t off = NVME_ANA_HDR_LEN;

	connect_port(&a, NULL, 0);
	/* the size Linux reads: header + NANAGRPID descriptors + MNAN NSIDs (beyond: zeroes) */
	uint32_t linux_len = NVME_ANA_HDR_LEN + NVMET_ANA_GRPMAX * NVME_ANA_DESC_LEN + 1024 * 4;
	memset(log, 0xa5, sizeof(log));
	cr_assert_eq(ana_log(&a, log, linux_len, 0, false), 0);
	cr_assert_eq(le64_load(log + NVME_ANA_OFF_CHGCNT), 0);
	cr_assert_eq(le16_load(log + NVME_ANA_OFF_NGRPS), 5, "group 2 counts (nsid 2), nsid 7 is disabled");
	check_desc(log, &off, 1, NVMET_ANA_OPTIMIZED, (const uint32_t[]){ 1, 6 }, 2);
	check_desc(log, &off, 2, NVMET_ANA_NON_OPTIMIZED, (const uint32_t[]){ 2 }, 1);
	check_desc(log, &off, 3, NVMET_ANA_INACCESSIBLE, (const uint32_t[]){ 3 }, 1);
	check_desc(log, &off, 4, NVMET_ANA_PERSISTENT_LOSS, (const uint32_t[]){ 4 }, 1);
	check_desc(log, &off, 5, NVMET_ANA_CHANGE, (const uint32_t[]){ 5 }, 1);
	for (uint32_t i = off; i < linux_len; i++)
		cr_assert_eq(log[i], 0, "byte %u past the page", i);

	/* RGO: the descriptors alone */
	memset(log, 0xa5, sizeof(log));
	cr_assert_eq(ana_log(&a, log, 512, NVME_ANA_LSP_RGO, false), 0);
	cr_assert_eq(le16_load(log + NVME_ANA_OFF_NGRPS), 5);
	off = NVME_ANA_HDR_LEN;
	for (uint32_t g = 1; g <= 5; g++)
		check_desc(log, &off, g, (uint8_t)(g == 5 ? NVMET_ANA_CHANGE : g), NULL, 0);
	cr_assert_eq(off, NVME_ANA_HDR_LEN + 5 * NVME_ANA_DESC_LEN);
	cr_assert_eq(log[off], 0);

	/* a window (offset 16: the first descriptor) */
	struct nvme_sqe s = ft_sqe(NVME_ADM_GET_LOG_PAGE, 8, 0xffffffffu, 40);
	s.cdw10 = le32_make(NVME_LOG_ANA | ((40 / 4 - 1) << 16));
	s.cdw12 = le32_make(NVME_ANA_HDR_LEN);
	cr_assert_eq(ft_exec(&a, &s, NULL, 40, log, NULL), 0);
	cr_assert_eq(le32_load(log), 1);
	cr_assert_eq(le32_load(log + NVME_ANA_DESC_LEN), 1, "first NSID");
	cr_assert_eq(le32_load(log + NVME_ANA_DESC_LEN + 4), 6);

	/* port 2: the same namespaces, its own states */
	connect_port(&b, NULL, 1);
	cr_assert_eq(ana_log(&b, log, 512, 0, false), 0);
	off = NVME_ANA_HDR_LEN;
	check_desc(log, &off, 1, NVMET_ANA_INACCESSIBLE, (const uint32_t[]){ 1, 6 }, 2);
	for (uint32_t g = 2; g <= 5; g++)
		check_desc(log, &off, g, NVMET_ANA_INACCESSIBLE, (const uint32_t[]){ g }, 1);
	ft_close(&b);
	ft_close(&a);
}

Test(nvmet_ana, io_status_per_state)
{
	struct ft_conn a, q, a2, q2;
	static uint8_t buf[512];
	static const uint16_t want[] = { 0, 0, 0, NVMET_SC_ANA_INACCESSIBLE, NVMET_SC_ANA_PERSISTENT_LOSS,
					 NVMET_SC_ANA_TRANSITION };

	connect_port(&a, &q, 0);
	for (uint32_t nsid = 1; nsid <= 5; nsid++) {
		for (int write = 0; write <= 1; write++) {
			struct nvme_sqe s = ft_sqe(write ? NVME_CMD_WRITE : NVME_CMD_READ, 9, nsid, 512);
			struct nvme_cqe cqe;
			uint16_t st = ft_exec(&q, &s, write ? buf : NULL, 512, write ? NULL : buf, &cqe);
			cr_assert_eq(st, want[nsid], "nsid %u write %d: 0x%x", nsid, write, st);
			/* DNR clear: Linux fails over only a retryable path error */
			cr_assert_eq(le16_get(cqe.status) & NVME_STATUS_DNR, 0);
		}
		struct nvme_sqe f = ft_sqe(NVME_CMD_FLUSH, 10, nsid, 0);
		cr_assert_eq(ft_exec(&q, &f, NULL, 0, NULL, NULL), want[nsid], "flush nsid %u", nsid);
	}
	/* the same namespace through port 2: inaccessible */
	connect_port(&a2, &q2, 1);
	struct nvme_sqe s = ft_sqe(NVME_CMD_READ, 9, 1, 512);
	cr_assert_eq(ft_exec(&q2, &s, NULL, 512, buf, NULL), NVMET_SC_ANA_INACCESSIBLE);
	/* failover: port 2's group 1 becomes optimized, I/O goes through */
	cr_assert_eq(nvmet_ana_set_state(2, 1, NVMET_ANA_OPTIMIZED), 0);
	cr_assert_eq(ft_exec(&q2, &s, NULL, 512, buf, NULL), 0);
	cr_assert_eq(nvmet_ana_set_state(1, 1, NVMET_ANA_INACCESSIBLE), 0);
	cr_assert_eq(ft_exec(&q, &s, NULL, 512, buf, NULL), NVMET_SC_ANA_INACCESSIBLE);
	ft_close(&q2);
	ft_close(&a2);
	ft_close(&q);
	ft_close(&a);
}

Test(nvmet_ana, change_notice_masked_until_the_log_is_read)
{
	struct ft_conn a, b;
	static uint8_t log[512];

	connect_port(&a, NULL, 0);
	connect_port(&b, NULL, 1);
	/* b does not enable the notice; a does (Linux sets every bit OAES reports) */
	cr_assert_eq(admin(&a, NVME_ADM_SET_FEATURES, 0, NVME_FEAT_ASYNC_EVENT, 0xffffffffu, NULL, 0), 0);
	cr_assert_eq(admin(&a, NVME_ADM_GET_FEATURES, 0, NVME_FEAT_ASYNC_EVENT, 0, NULL, 0), 0);
	struct nvme_sqe s = ft_sqe(NVME_ADM_AER, 20, 0, 0);
	struct ft_cmd *aer = ft_submit(&a, 0, &s, NULL, 0);
	struct ft_cmd *aer_b = ft_submit(&b, 0, &s, NULL, 0);
	cr_assert_eq(aer->completions + aer_b->completions, 0, "held");

	/* a change on port 2 does not concern a (port 1); b has the notice off */
	cr_assert_eq(nvmet_ana_set_state(2, 3, NVMET_ANA_OPTIMIZED), 0);
	cr_assert_eq(aer->completions + aer_b->completions, 0);
	/* the same state again is no change */
	cr_assert_eq(nvmet_ana_set_state(1, 3, NVMET_ANA_INACCESSIBLE), 0);
	cr_assert_eq(aer->completions, 0);

	cr_assert_eq(nvmet_ana_set_state(1, 3, NVMET_ANA_CHANGE), 0);
	cr_assert_eq(aer->completions, 1);
	cr_assert_eq(le16_get(aer->req.cqe.status), 0);
	cr_assert_eq(le32_get(aer->req.cqe.dw0), 0x000c0302u, "notice, ANA change, log page 0Ch");
	aer = ft_submit(&a, 0, &s, NULL, 0);
	/* masked: a second change waits for the log page */
	cr_assert_eq(nvmet_ana_set_state(1, 3, NVMET_ANA_OPTIMIZED), 0);
	cr_assert_eq(aer->completions, 0);
	cr_assert_eq(ana_log(&a, log, 512, 0, true), 0, "RAE set: stays masked");
	cr_assert_eq(aer->completions, 0);
	cr_assert_eq(le64_load(log + NVME_ANA_OFF_CHGCNT), 2);
	cr_assert_eq(le64_load(log + NVME_ANA_HDR_LEN + 2 * NVME_ANA_DESC_LEN + 2 * 4 + 4 + NVME_ANA_DESC_CHGCNT), 2,
		     "group 3's change count");
	cr_assert_eq(log[NVME_ANA_HDR_LEN + 2 * NVME_ANA_DESC_LEN + 2 * 4 + 4 + NVME_ANA_DESC_ANAS], NVMET_ANA_OPTIMIZED);
	cr_assert_eq(ana_log(&a, log, 512, 0, false), 0);
	cr_assert_eq(aer->completions, 1, "unmasked: the pending change is reported");
	cr_assert_eq(le32_get(aer->req.cqe.dw0), 0x000c0302u);
	cr_assert_eq(aer_b->completions, 0);
	cr_assert_eq(nvmet_stats()->aens, 2);
	ft_close(&b);
	ft_close(&a);
	cr_assert_eq(aer_b->completions, 1, "aborted with its queue");
}

Test(nvmet_ana, set_state_errors)
{
	cr_assert_eq(nvmet_ana_set_state(9, 1, NVMET_ANA_OPTIMIZED), -ENOENT);
	cr_assert_eq(nvmet_ana_set_state(1, 0, NVMET_ANA_OPTIMIZED), -EINVAL);
	cr_assert_eq(nvmet_ana_set_state(1, NVMET_ANA_GRPMAX + 1, NVMET_ANA_OPTIMIZED), -EINVAL);
	cr_assert_eq(nvmet_ana_set_state(1, 1, (enum nvmet_ana_state)0), -EINVAL);
	cr_assert_eq(nvmet_ana_set_state(1, 1, (enum nvmet_ana_state)5), -EINVAL);
	cr_assert_eq(nvmet_ana_set_state(1, NVMET_ANA_GRPMAX, NVMET_ANA_NON_OPTIMIZED), 0, "a group no namespace uses");
	cr_assert_eq(nvmet_ana_state(0, NVMET_ANA_GRPMAX), NVMET_ANA_NON_OPTIMIZED);
	cr_assert_eq(nvmet_ana_state(1, 7), NVMET_ANA_INACCESSIBLE, "not listed on port 2");
	nvmet_fini();
	cr_assert_eq(nvmet_ana_set_state(1, 1, NVMET_ANA_OPTIMIZED), -ENOENT, "no target");
}
