// sources: drivers/nvme/target/nvmet_core.c drivers/nvme/target/nvmet_fabrics.c drivers/nvme/target/nvmet_auth.c drivers/nvme/target/nvmet_auth_msg.c drivers/nvme/target/nvmet_auth_key.c lib/crypto.c lib/crc32.c tests/unit/net/fake_entropy.c drivers/nvme/target/nvmet_admin.c drivers/nvme/target/nvmet_ana.c drivers/nvme/target/nvmet_referral.c drivers/nvme/target/nvmet_io.c drivers/nvme/target/nvmet_bdev_nvme.c drivers/nvme/target/nvmet_bdev_ram.c drivers/nvme/target/nvmet_config.c drivers/nvme/nvme.c drivers/nvme/nvme_reset.c drivers/nvme/nvme_shutdown.c drivers/nvme/nvme_prp.c drivers/nvme/nvme_queue.c drivers/nvme/nvme_cmb.c drivers/nvme/nvme_status.c mm/dma.c lib/ipv4_text.c mm/pool.c lib/timer.c lib/log.c lib/shutdown.c tests/unit/drivers/nvme/fake_nvme.c tests/unit/drivers/nvme/target/fake_nvmet_transport.c
// libs: -lmbedcrypto
/*
 * What an acknowledged write means, end to end: a host on the fake transport, the target
 * core, the NVMe backend, the host driver and a fake drive with a volatile write cache that
 * loses unflushed blocks at a simulated power cut and records every command it receives.
 * FUA reaches the drive (Read FUA too) and survives the cut; a host Flush is sent to the
 * drive after the writes the host saw complete and completes only after the drive's Flush;
 * a drive without a cache gets no Flush; Identify VWC and Get/Set Features tell the truth;
 * CC.SHN flushes what the controller wrote before CSTS.SHST says complete (also when the
 * host disconnects at once); detaching a namespace flushes it. Drive faults (issue 22): a
 * media error reaches the host as the same status with its LBA in the Error log; a drive
 * that stops answering is reset and the host's command fails retryable; a removed drive
 * answers Namespace Not Ready; a hot-removed drive and its return are Namespace Attribute
 * Changed notices to the hosts. Pools back to zero after every test.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "drivers/nvme/nvme.h"
#include "drivers/nvme/target/nvmet.h"
#include "drivers/nvme/target/nvmet_wire.h"
#include "lib/byteorder.h"
#include "lib/clock.h"
#include "lib/timer.h"
#include "fake_nvmet_transport.h"
#include "tests/unit/drivers/nvme/fake_nvme.h"
#include "tests/unit/unit_support.h"

#define HOST "nqn.2014-08.org.nvmexpress:uuid:aaaaaaaa-0000-4000-8000-000000000001"
#define VOL "nqn.2026-11.org.p2pstore:vol0"

static const char *const config_json =
	"{ \"hosts\": [ { \"nqn\": \"" HOST "\" } ],\n"
	"  \"ports\": [ { \"portid\": 1, \"addr\": { \"trtype\": \"tcp\", \"adrfam\": \"ipv4\", \"traddr\": \"10.0.0.1\", \"trsvcid\": \"4420\" },\n"
	"      \"subsystems\": [ \"" VOL "\" ] } ],\n"
	"  \"subsystems\": [ { \"nqn\": \"" VOL "\", \"attr\": { \"allow_any_host\": \"1\" },\n"
	"      \"namespaces\": [ { \"nsid\": 1, \"enable\": 1, \"device\": { \"path\": \"/dev/nvme0n1\" } } ] } ] }\n";

static struct nvmet_config cfg;
static struct fake_nvme f;
static struct nvme_ctrl dc;
static struct ft_conn a, q;
static uint8_t data[4096];

static void start(bool vwc)
{
	char err[200];
	f.vwc = vwc;
	cr_assert_eq(nvme_ctrl_init(&dc, "nvme0", &f.bus, 1), 0);
	cr_assert_eq(nvme_register(&dc), 0);
	cr_assert_eq(nvmet_config_parse(config_json, strlen(config_json), &cfg, err, sizeof(err), NULL, NULL), 0, "%s",
		     err);
	cr_assert_eq(nvmet_init(&cfg, nvmet_bdev_nvme_open, NULL), 0);
	ft_open(&a, 0);
	int cntlid = ft_connect_admin(&a, HOST, VOL, 0);
	cr_assert_geq(cntlid, 1);
	cr_assert_eq(ft_enable(&a), 0);
	ft_open(&q, 0);
	cr_assert_eq(ft_connect_io(&q, 1, (uint16_t)cntlid, HOST, VOL), 0);
}

static void setup(void)
{
	unit_pools_begin();
	fake_clock_install();
	timer_queue_init(&timer_default_queue);
	fake_nvme_init(&f);
	memset(&dc, 0, sizeof(dc));
	for (unsigned i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 31 + 5);
}

static void teardown(void)
{
	if (a.q)
		ft_close(&a);
	if (q.q)
		ft_close(&q);
	nvmet_fini();
	nvme_unregister(&dc);
	nvme_ctrl_fini(&dc);
	cr_expect_eq(f.dma_live, 0);
	fake_nvme_fini(&f);
	unit_pools_end();
}

TestSuite(durable, .init = setup, .fini = teardown);

/* The driver's poller: completions at the drive reach the target. */
static void poll_drive(unsigned rounds)
{
	for (unsigned i = 0; i < rounds; i++) {
		nvme_qpair_poll(&dc.io[0], 64);
		nvme_qpair_poll(&dc.admin, 32);
		fake_clock_advance(NSEC_PER_MSEC);
	}
}

static struct nvme_sqe io_sqe(uint8_t opc, uint16_t cid, uint64_t slba, uint32_t nlb, uint32_t flags, uint32_t len)
{
	struct nvme_sqe s = ft_sqe(opc, cid, 1, len);
	s.cdw10 = le32_make((uint32_t)slba);
	s.cdw11 = le32_make((uint32_t)(slba >> 32));
	s.cdw12 = le32_make((nlb - 1) | flags);
	return s;
}

/* Run a command on the I/O queue to its completion; returns SCT << 8 | SC. */
static uint16_t run(uint8_t opc, uint64_t slba, uint32_t nlb, uint32_t flags, const void *w, uint32_t len,
		    struct nvme_cqe *cqe)
{
	struct nvme_sqe s = io_sqe(opc, 0x21, slba, nlb, flags, len);
	struct ft_cmd *cmd = ft_submit(&q, 0, &s, w, len);
	for (unsigned i = 0; i < 20000 && !cmd->completions; i++)
		poll_drive(1);
	cr_assert_eq(cmd->completions, 1);
	if (cqe)
		*cqe = cmd->req.cqe;
	return (uint16_t)((le16_get(cmd->req.cqe.status) >> 1) & 0x7ff);
}

static bool durable_at(uint64_t slba, uint32_t len)
{
	return memcmp(f.durable + slba * 512, data, len) == 0;
}

static uint16_t admin(uint8_t opc, uint32_t cdw10, uint32_t cdw11, void *rbuf, uint32_t len, struct nvme_cqe *cqe)
{
	struct nvme_sqe s = ft_sqe(opc, 7, 0, len);
	s.cdw10 = le32_make(cdw10);
	s.cdw11 = le32_make(cdw11);
	return ft_exec(&a, &s, NULL, len, rbuf, cqe);
}

Test(durable, a_host_fua_write_reaches_the_drive_with_fua_and_survives_a_power_cut)
{
	start(true);
	cr_assert_eq(run(NVME_CMD_WRITE, 200, 8, NVME_RW_FUA, data, 4096, NULL), 0);
	int w = fake_nvme_find(&f, -1, NVME_CMD_WRITE, 0);
	cr_assert_geq(w, 0);
	cr_assert(f.rec[w].cdw12 & NVME_RW_FUA, "CDW12.FUA forwarded");
	cr_assert_eq(nvmet_stats()->fua_writes, 1);
	/* Read FUA passes through as well */
	cr_assert_eq(run(NVME_CMD_READ, 200, 8, NVME_RW_FUA, NULL, 4096, NULL), 0);
	int r = fake_nvme_find(&f, -1, NVME_CMD_READ, 0);
	cr_assert(r >= 0 && (f.rec[r].cdw12 & NVME_RW_FUA));
	cr_assert_eq(nvmet_stats()->rw_direct, 2, "both straight to the drive (ops->rw, no nvmet_bio)");
	cr_assert_eq(nvmet_stats()->fua_emulated, 0);
	fake_nvme_power_cut(&f);
	cr_assert(durable_at(200, 4096), "an acknowledged FUA write survives the power cut");
}

Test(durable, a_write_is_durable_after_the_host_flush_which_completes_after_the_drive_flush)
{
	start(true);
	cr_assert_eq(run(NVME_CMD_WRITE, 64, 8, 0, data, 4096, NULL), 0);
	cr_assert(!durable_at(64, 4096), "acknowledged without FUA: still in the drive's cache");
	struct nvme_sqe s = io_sqe(NVME_CMD_FLUSH, 0x30, 0, 1, 0, 0);
	s.cdw10 = s.cdw11 = s.cdw12 = le32_make(0);
	struct ft_cmd *fl = ft_submit(&q, 1, &s, NULL, 0);
	cr_assert_eq(fl->completions, 0, "not complete before the drive's Flush completion is reaped");
	int w = fake_nvme_find(&f, -1, NVME_CMD_WRITE, 0), d = fake_nvme_find(&f, -1, NVME_CMD_FLUSH, 0);
	cr_assert(w >= 0 && d > w, "the drive got the Flush after the write completed (%d, %d)", w, d);
	poll_drive(1);
	cr_assert_eq(fl->completions, 1);
	cr_assert_eq(le16_get(fl->req.cqe.status) >> 1, 0);
	fake_nvme_power_cut(&f);
	cr_assert(durable_at(64, 4096));
}

Test(durable, a_plain_write_without_flush_is_lost_at_the_cut)
{
	start(true);
	cr_assert_eq(run(NVME_CMD_WRITE, 64, 8, 0, data, 4096, NULL), 0);
	fake_nvme_power_cut(&f);
	cr_assert(!durable_at(64, 4096), "the contract: without FUA or Flush nothing is promised");
}

Test(durable, flush_on_a_drive_without_a_volatile_cache_completes_at_once)
{
	start(false);
	cr_assert_eq(run(NVME_CMD_WRITE, 8, 8, 0, data, 4096, NULL), 0);
	struct nvme_sqe s = io_sqe(NVME_CMD_FLUSH, 0x31, 0, 1, 0, 0);
	s.cdw10 = s.cdw11 = s.cdw12 = le32_make(0);
	struct ft_cmd *fl = ft_submit(&q, 1, &s, NULL, 0);
	cr_assert_eq(fl->completions, 1, "completed inside exec");
	cr_assert_eq(fake_nvme_find(&f, -1, NVME_CMD_FLUSH, 0), -1, "no Flush sent to the drive");
	cr_assert_eq(nvmet_stats()->flushes_skipped, 1);
	fake_nvme_power_cut(&f);
	cr_assert(durable_at(8, 4096));
}

Test(durable, identify_and_features_report_the_drives_volatile_cache)
{
	static uint8_t id[4096];
	struct nvme_cqe cqe;
	start(true);
	cr_assert_eq(admin(NVME_ADM_IDENTIFY, NVME_ID_CNS_CTRL, 0, id, 4096, NULL), 0);
	cr_assert_eq(id[NVME_IDC_VWC], 0x5, "present; broadcast Flush not supported");
	cr_assert_eq(admin(NVME_ADM_GET_FEATURES, 0x06, 0, NULL, 0, &cqe), 0);
	cr_assert_eq(le32_get(cqe.dw0), 1, "WCE");
	cr_assert_eq(admin(NVME_ADM_SET_FEATURES, 0x06, 0, NULL, 0, &cqe), NVMET_SC_FEAT_NOT_CHANGEABLE);
	cr_assert(le16_get(cqe.status) & NVME_STATUS_DNR);
	/* a broadcast Flush is refused as Identify says */
	struct nvme_sqe s = io_sqe(NVME_CMD_FLUSH, 0x32, 0, 1, 0, 0);
	s.nsid = le32_make(0xffffffffu);
	s.cdw10 = s.cdw11 = s.cdw12 = le32_make(0);
	cr_assert_eq(le16_get(ft_submit(&q, 1, &s, NULL, 0)->req.cqe.status) >> 1 & 0x7ff, NVMET_SC_INVALID_NS);
}

Test(durable, without_a_volatile_cache_identify_says_so_and_the_feature_is_absent)
{
	static uint8_t id[4096];
	start(false);
	cr_assert_eq(admin(NVME_ADM_IDENTIFY, NVME_ID_CNS_CTRL, 0, id, 4096, NULL), 0);
	cr_assert_eq(id[NVME_IDC_VWC], 0);
	cr_assert_eq(admin(NVME_ADM_GET_FEATURES, 0x06, 0, NULL, 0, NULL), NVMET_SC_INVALID_FIELD);
	cr_assert_eq(admin(NVME_ADM_SET_FEATURES, 0x06, 1, NULL, 0, NULL), NVMET_SC_INVALID_FIELD);
}

static uint32_t csts(void)
{
	struct nvme_cqe cqe;
	struct nvme_sqe s = ft_prop_sqe(false, false, NVMF_PROP_CSTS, 0);
	cr_assert_eq(ft_exec(&a, &s, NULL, 0, NULL, &cqe), 0);
	return le32_get(cqe.dw0);
}

static void set_shn(void)
{
	uint32_t cc = NVME_CC_EN | (6u << NVME_CC_IOSQES_SHIFT) | (4u << NVME_CC_IOCQES_SHIFT) | (1u << NVME_CC_SHN_SHIFT);
	struct nvme_sqe s = ft_prop_sqe(true, false, NVMF_PROP_CC, cc);
	cr_assert_eq(ft_exec(&a, &s, NULL, 0, NULL, NULL), 0);
}

Test(durable, cc_shn_flushes_what_the_controller_wrote_before_shst_says_complete)
{
	start(true);
	cr_assert_eq(run(NVME_CMD_WRITE, 300, 8, 0, data, 4096, NULL), 0);
	set_shn();
	cr_assert_eq(NVME_GET(csts(), NVME_CSTS_SHST), NVME_CSTS_SHST_OCCURRING, "Flush still at the drive");
	int w = fake_nvme_find(&f, -1, NVME_CMD_WRITE, 0), d = fake_nvme_find(&f, -1, NVME_CMD_FLUSH, 0);
	cr_assert(w >= 0 && d > w);
	poll_drive(1);
	cr_assert_eq(NVME_GET(csts(), NVME_CSTS_SHST), NVME_CSTS_SHST_COMPLETE);
	cr_assert_eq(nvmet_stats()->shn_flushes, 1);
	fake_nvme_power_cut(&f);
	cr_assert(durable_at(300, 4096));
}

Test(durable, cc_shn_without_writes_completes_at_once_and_sends_nothing)
{
	start(true);
	set_shn();
	cr_assert_eq(NVME_GET(csts(), NVME_CSTS_SHST), NVME_CSTS_SHST_COMPLETE);
	cr_assert_eq(fake_nvme_find(&f, -1, NVME_CMD_FLUSH, 0), -1);
}

Test(durable, a_host_that_disconnects_right_after_cc_shn_still_gets_its_data_flushed)
{
	start(true);
	cr_assert_eq(run(NVME_CMD_WRITE, 40, 8, 0, data, 4096, NULL), 0);
	set_shn();
	ft_close(&q);
	ft_close(&a);
	cr_assert_eq(nvmet_ctrl_count(), 1, "kept until its shutdown Flush is back");
	poll_drive(1);
	cr_assert_eq(nvmet_ctrl_count(), 0);
	fake_nvme_power_cut(&f);
	cr_assert(durable_at(40, 4096));
}

Test(durable, detaching_a_namespace_flushes_its_drive)
{
	start(true);
	cr_assert_eq(run(NVME_CMD_WRITE, 500, 8, 0, data, 4096, NULL), 0);
	cr_assert_eq(nvmet_ns_set_enabled(VOL, 1, false), 0);
	cr_assert_geq(fake_nvme_find(&f, -1, NVME_CMD_FLUSH, 0), 0);
	fake_nvme_power_cut(&f);
	cr_assert(durable_at(500, 4096));
}

/* --- issue 22: drive faults as NVMe status --- */

Test(durable, a_media_error_reaches_the_host_as_the_same_status_with_its_lba_logged)
{
	static uint8_t page[128];
	struct nvme_cqe cqe;
	start(true);
	f.err_status = (uint16_t)((2u << 9) | (0x81u << 1)); /* Media Errors: Unrecovered Read Error */
	f.err_slba = 100;
	f.err_nlb = 1;
	cr_assert_eq(run(NVME_CMD_READ, 98, 4, 0, NULL, 2048, &cqe), NVME_SC(2, 0x81));
	cr_assert_eq(run(NVME_CMD_READ, 0, 4, 0, NULL, 2048, NULL), 0, "other LBAs fine");
	cr_assert_eq(nvmet_stats()->backend_errors, 1);
	cr_assert_eq(admin(NVME_ADM_GET_LOG_PAGE, NVME_LOG_ERROR | (31u << 16), 0, page, 128, NULL), 0);
	cr_assert_eq(le64_load(page + 0), 1, "one error");
	cr_assert_eq(le16_load(page + 12), le16_get(cqe.status));
	cr_assert_eq(le64_load(page + 16), 98, "LBA of the failed command");
	cr_assert_eq(le32_load(page + 24), 1, "NSID");
}

Test(durable, a_drive_that_stops_answering_is_reset_and_the_host_gets_a_retryable_status)
{
	struct nvme_cqe cqe;
	start(true);
	f.drop_opc = NVME_CMD_READ;
	f.drop_aborts = true;
	cr_assert_eq(run(NVME_CMD_READ, 0, 1, 0, NULL, 512, &cqe), NVMET_SC_INTERNAL);
	cr_assert_eq(le16_get(cqe.status) & NVME_STATUS_DNR, 0, "retryable");
	cr_assert_eq(dc.rec.resets, 1);
	f.drop_opc = -1;
	cr_assert_eq(run(NVME_CMD_WRITE, 0, 8, 0, data, 4096, NULL), 0, "served again after the reset");
}

/* A Read/Write the drive refuses at submission (every command ID of its queue taken) is
 * answered at once with a retryable status, through the driver's refusal callback (the
 * core's call to the backend is its last): not counted as a drive's error, and the next
 * command is served. */
Test(durable, a_full_drive_queue_answers_at_once_with_a_retryable_status)
{
	start(true);
	cr_assert_eq(run(NVME_CMD_WRITE, 0, 8, 0, data, 4096, NULL), 0);
	uint64_t errors = nvmet_stats()->backend_errors;
	unsigned nfree = dc.io[0].nfree;
	dc.io[0].nfree = 0; /* every command ID taken */
	for (uint8_t opc = NVME_CMD_WRITE; opc <= NVME_CMD_READ; opc++) {
		struct nvme_sqe s = io_sqe(opc, 0x22, 0, 8, 0, 4096);
		struct ft_cmd *cmd = ft_submit(&q, 0, &s, opc == NVME_CMD_WRITE ? data : NULL, 4096);
		cr_assert_eq(cmd->completions, 1, "answered at once: nothing waits for the drive");
		cr_assert_eq((le16_get(cmd->req.cqe.status) >> 1) & 0x7ff, NVMET_SC_CMD_INTERRUPTED);
		cr_assert_eq(le16_get(cmd->req.cqe.status) & NVME_STATUS_DNR, 0, "retryable");
	}
	cr_assert_eq(nvmet_stats()->backend_errors, errors, "a refusal is not the drive's error");
	dc.io[0].nfree = nfree;
	cr_assert_eq(run(NVME_CMD_READ, 0, 8, 0, NULL, 4096, NULL), 0, "served again");
}

Test(durable, a_removed_drive_answers_namespace_not_ready)
{
	struct nvme_cqe cqe;
	start(true);
	f.removed = true;
	poll_drive(1);
	nvme_ctrl_check(&dc, clock_now_ns());
	cr_assert_eq(dc.state, NVME_CTRL_REMOVED);
	cr_assert_eq(run(NVME_CMD_READ, 0, 1, 0, NULL, 512, &cqe), NVMET_SC_NS_NOT_READY);
	cr_assert_eq(le16_get(cqe.status) & NVME_STATUS_DNR, 0);
	f.removed = false;
	f.cc = 0;
	f.csts = 0;
}

/* The target's namespace check runs on the timer queue every NVMET_NS_CHECK_MS. */
static void run_timers_for(uint64_t ms)
{
	for (uint64_t i = 0; i < ms; i++) {
		fake_clock_advance(NSEC_PER_MSEC);
		timer_queue_run(&timer_default_queue, clock_now_ns());
	}
}

/* Identify with the NSID in the command: CNS 0 (the namespace) or CNS 2 (active list). */
static uint16_t identify(uint8_t cns, uint32_t nsid, uint8_t *out)
{
	struct nvme_sqe s = ft_sqe(NVME_ADM_IDENTIFY, 8, nsid, NVME_ID_LEN);
	s.cdw10 = le32_make(cns);
	return ft_exec(&a, &s, NULL, NVME_ID_LEN, out, NULL);
}

Test(durable, a_hot_removed_drive_leaves_the_active_list_and_its_return_rejoins_it_with_notices)
{
	static uint8_t log[4096], id[NVME_ID_LEN];
	start(true);
	cr_assert_eq(identify(NVME_ID_CNS_NS_ACTIVE_LIST, 0, id), 0);
	cr_assert_eq(le32_load(id), 1, "nsid 1 active");
	cr_assert_eq(admin(NVME_ADM_SET_FEATURES, NVME_FEAT_ASYNC_EVENT, NVME_AEC_NS_ATTR, NULL, 0, NULL), 0);
	struct nvme_sqe s = ft_sqe(NVME_ADM_AER, 40, 0, 0);
	struct ft_cmd *aer = ft_submit(&a, 0, &s, NULL, 0);
	run_timers_for(NVMET_NS_CHECK_MS);
	cr_assert_eq(aer->completions, 0, "nothing changed yet");

	nvme_ctrl_detach(&dc, true); /* removal on request: flushed, CC.SHN, then removed */
	cr_assert_eq(dc.state, NVME_CTRL_REMOVED);
	run_timers_for(NVMET_NS_CHECK_MS);
	cr_assert_eq(aer->completions, 1, "Namespace Attribute Changed within %u ms", NVMET_NS_CHECK_MS);
	cr_assert_eq(le32_get(aer->req.cqe.dw0), NVME_AER_RESULT(NVME_AER_TYPE_NOTICE, NVME_AER_NOTICE_NS_CHANGED, NVME_LOG_CHANGED_NS));
	cr_assert_eq(admin(NVME_ADM_GET_LOG_PAGE, NVME_LOG_CHANGED_NS | (1023u << 16), 0, log, 4096, NULL), 0);
	cr_assert_eq(le32_load(log), 1);
	cr_assert_eq(le32_load(log + 4), 0);
	/* what a host's rescan finds: no longer in the active list (Linux removes the block
	 * device), Identify reads zeroes as for any inactive NSID, I/O is refused like I/O to a
	 * detached namespace */
	cr_assert_eq(identify(NVME_ID_CNS_NS_ACTIVE_LIST, 0, id), 0);
	cr_assert_eq(le32_load(id), 0, "the gone namespace left the active list");
	cr_assert_eq(identify(NVME_ID_CNS_NS, 1, id), 0);
	cr_assert_eq(le64_load(id + NVME_IDNS_NCAP), 0, "inactive: Identify Namespace is zeroes");
	struct nvme_cqe cqe;
	cr_assert_eq(run(NVME_CMD_READ, 0, 1, 0, NULL, 512, &cqe), NVMET_SC_INVALID_NS);
	cr_assert_neq(le16_get(cqe.status) & NVME_STATUS_DNR, 0, "not retried: the namespace is not attached");
	cr_assert_eq(nvmet_stats()->ns_gone, 1);

	/* a drive hot-added in its place: the same controller struct comes up again */
	s = ft_sqe(NVME_ADM_AER, 41, 0, 0);
	struct ft_cmd *aer2 = ft_submit(&a, 1, &s, NULL, 0);
	cr_assert_eq(nvme_ctrl_init(&dc, "nvme0", &f.bus, 1), 0);
	run_timers_for(NVMET_NS_CHECK_MS);
	cr_assert_eq(aer2->completions, 1, "back: a second notice");
	cr_assert_eq(admin(NVME_ADM_GET_LOG_PAGE, NVME_LOG_CHANGED_NS | (1023u << 16), 0, log, 4096, NULL), 0);
	cr_assert_eq(le32_load(log), 1);
	cr_assert_eq(identify(NVME_ID_CNS_NS_ACTIVE_LIST, 0, id), 0);
	cr_assert_eq(le32_load(id), 1, "back in the active list");
	cr_assert_eq(identify(NVME_ID_CNS_NS, 1, id), 0);
	cr_assert_neq(le64_load(id + NVME_IDNS_NCAP), 0);
	cr_assert_eq(run(NVME_CMD_WRITE, 0, 8, 0, data, 4096, NULL), 0, "served again");
	cr_assert_eq(run(NVME_CMD_READ, 0, 8, 0, NULL, 4096, NULL), 0);
}

/* The backend remembers the drive namespace its last command found (no walk of the
 * namespace list per command): a different drive hot-added in the old one's place, with
 * another size, must still be refused, not written to as if it were the old one. */
Test(durable, another_drive_in_its_place_after_commands_is_refused)
{
	start(false);
	cr_assert_eq(run(NVME_CMD_WRITE, 0, 8, 0, data, 4096, NULL), 0);
	cr_assert_eq(run(NVME_CMD_WRITE, 8, 8, 0, data, 4096, NULL), 0, "served from the remembered namespace");
	nvme_ctrl_detach(&dc, true);
	cr_assert_eq(dc.state, NVME_CTRL_REMOVED);
	f.id_nsze = FAKE_NSZE / 2; /* a smaller drive comes up in the same controller struct */
	cr_assert_eq(nvme_ctrl_init(&dc, "nvme0", &f.bus, 1), 0);
	unsigned before = f.io_commands;
	struct nvme_cqe cqe;
	cr_assert_eq(run(NVME_CMD_WRITE, 0, 8, 0, data, 4096, &cqe), NVMET_SC_NS_NOT_READY);
	cr_assert_eq(f.io_commands, before, "nothing reached the other drive");
	f.id_nsze = 0;
	cr_assert_eq(nvme_ctrl_init(&dc, "nvme0", &f.bus, 1), 0); /* the right drive again */
	cr_assert_eq(run(NVME_CMD_WRITE, 0, 8, 0, data, 4096, NULL), 0, "served again");
}

/* MDTS is the smallest limit of the opened namespaces' drives, kept per subsystem as
 * namespaces open (not walked per command): a command beyond the drive's MDTS (the fake's
 * 128 KiB) is refused with Invalid Field, also after the namespace was detached and attached
 * again, and one within it runs. */
Test(durable, a_command_beyond_the_drives_mdts_is_refused_before_and_after_a_reattach)
{
	start(false);
	cr_assert_eq(dc.max_xfer, 128u * 1024);
	cr_assert_eq(run(NVME_CMD_READ, 0, 512, 0, NULL, 0, NULL), NVMET_SC_INVALID_FIELD, "256 KiB > 128 KiB");
	cr_assert_eq(nvmet_ns_set_enabled(VOL, 1, false), 0);
	cr_assert_eq(nvmet_ns_set_enabled(VOL, 1, true), 0);
	cr_assert_eq(run(NVME_CMD_READ, 0, 512, 0, NULL, 0, NULL), NVMET_SC_INVALID_FIELD, "still after a reattach");
	cr_assert_eq(run(NVME_CMD_READ, 0, 8, 0, NULL, 4096, NULL), 0);
}

/* --- a backend with a volatile cache that cannot honour FUA: the core adds the Flush --- */

static uint8_t ops_seen[8];
static unsigned nops;
static struct nvmet_bio *cache_held;
static int cache_submit(struct nvmet_bdev *b, struct nvmet_bio *bio)
{
	(void)b;
	if (nops < 8)
		ops_seen[nops] = bio->op;
	nops++;
	cache_held = bio; /* completes when the test says so */
	return 0;
}
static void cache_close(struct nvmet_bdev *b)
{
	(void)b;
}
/* ops->rw of a backend that cannot honour FUA: the core must not use it for a FUA write
 * behind a volatile cache; elsewhere it completes at once. */
static unsigned rw_calls;
static int cache_rw(struct nvmet_bdev *b, struct nvmet_req *req, bool write, uint64_t slba, uint32_t nlb, bool fua)
{
	(void)b;
	(void)write;
	(void)slba;
	(void)nlb;
	(void)fua;
	rw_calls++;
	nvmet_rw_done(req, 0, NULL);
	return 0;
}
static const struct nvmet_bdev_ops cache_ops = { .submit = cache_submit, .close = cache_close };
static const struct nvmet_bdev_ops cache_rw_ops = { .submit = cache_submit, .close = cache_close, .rw = cache_rw };
static bool cache_with_rw, cache_vwc = true;
static int cache_open(void *ctx, unsigned si, const struct nvmet_cfg_ns *ns, struct nvmet_bdev *out)
{
	(void)ctx;
	(void)si;
	(void)ns;
	memset(out, 0, sizeof(*out));
	out->ops = cache_with_rw ? &cache_rw_ops : &cache_ops;
	out->nblocks = 1024;
	out->lba_shift = 9;
	out->vwc = cache_vwc;
	out->fua = false;
	return 0;
}

/* The target over the cache backend (cache_open, as the cache_* switches say), an admin
 * queue enabled and I/O queue 1 connected. */
static void cache_ctrl_start(void)
{
	char err[200];
	cr_assert_eq(nvmet_config_parse(config_json, strlen(config_json), &cfg, err, sizeof(err), NULL, NULL), 0);
	cr_assert_eq(nvmet_init(&cfg, cache_open, NULL), 0);
	ft_open(&a, 0);
	int cntlid = ft_connect_admin(&a, HOST, VOL, 0);
	cr_assert_eq(ft_enable(&a), 0);
	ft_open(&q, 0);
	cr_assert_eq(ft_connect_io(&q, 1, (uint16_t)cntlid, HOST, VOL), 0);
}

Test(durable, fua_on_a_backend_that_cannot_honour_it_completes_after_a_flush)
{
	cache_ctrl_start();
	nops = 0;
	struct nvme_sqe s = io_sqe(NVME_CMD_WRITE, 0x40, 0, 8, NVME_RW_FUA, 4096);
	struct ft_cmd *cmd = ft_submit(&q, 0, &s, data, 4096);
	cr_assert_eq(nops, 1);
	cr_assert_eq(ops_seen[0], NVMET_BIO_WRITE);
	cache_held->done(cache_held, 0);
	cr_assert_eq(cmd->completions, 0, "the write is only in the cache: not acknowledged yet");
	cr_assert_eq(nops, 2);
	cr_assert_eq(ops_seen[1], NVMET_BIO_FLUSH, "a Flush after the write completed");
	cache_held->done(cache_held, 0);
	cr_assert_eq(cmd->completions, 1);
	cr_assert_eq(le16_get(cmd->req.cqe.status) >> 1, 0);
	cr_assert_eq(nvmet_stats()->fua_emulated, 1);
	/* a failing Flush fails the FUA write: the data may not be durable */
	s = io_sqe(NVME_CMD_WRITE, 0x41, 8, 8, NVME_RW_FUA, 4096);
	cmd = ft_submit(&q, 0, &s, data, 4096);
	cache_held->done(cache_held, 0);
	cache_held->done(cache_held, -EIO);
	cr_assert_eq(cmd->completions, 1);
	cr_assert_neq(le16_get(cmd->req.cqe.status) >> 1, 0);
}

/* A backend with ops->rw whose volatile cache cannot honour FUA: Reads and Writes take the
 * bio path (ops->submit) and FUA is emulated with a Flush as without ops->rw; with the
 * cache off (nothing volatile) they go to ops->rw and complete through nvmet_rw_done. */
Test(durable, a_backend_rw_op_is_not_used_where_fua_needs_the_flush)
{
	cache_with_rw = true;
	cache_ctrl_start();
	nops = 0;
	rw_calls = 0;
	struct nvme_sqe s = io_sqe(NVME_CMD_WRITE, 0x40, 0, 8, NVME_RW_FUA, 4096);
	struct ft_cmd *cmd = ft_submit(&q, 0, &s, data, 4096);
	cr_assert_eq(nops, 1, "the bio path");
	cr_assert_eq(rw_calls, 0);
	cache_held->done(cache_held, 0);
	cr_assert_eq(cmd->completions, 0, "the write is only in the cache: not acknowledged yet");
	cr_assert_eq(ops_seen[1], NVMET_BIO_FLUSH, "a Flush after the write completed");
	cache_held->done(cache_held, 0);
	cr_assert_eq(cmd->completions, 1);
	cr_assert_eq(nvmet_stats()->fua_emulated, 1);
	cr_assert_eq(nvmet_stats()->rw_direct, 0);
	cache_with_rw = false;
}

/* The same backend without a volatile cache (nothing for FUA to emulate): a FUA write goes
 * to ops->rw and completes through nvmet_rw_done, no bio. */
Test(durable, a_backend_rw_op_is_used_where_nothing_is_volatile)
{
	cache_vwc = false;
	cache_with_rw = true;
	cache_ctrl_start();
	nops = 0;
	rw_calls = 0;
	/* nothing volatile: ops->rw, completed by nvmet_rw_done */
	struct nvme_sqe s = io_sqe(NVME_CMD_WRITE, 0x41, 8, 8, NVME_RW_FUA, 4096);
	struct ft_cmd *cmd = ft_submit(&q, 0, &s, data, 4096);
	cr_assert_eq(rw_calls, 1, "ops->rw");
	cr_assert_eq(nops, 0, "no bio");
	cr_assert_eq(cmd->completions, 1);
	cr_assert_eq(le16_get(cmd->req.cqe.status) >> 1, 0);
	cr_assert_eq(nvmet_stats()->rw_direct, 1);
	cache_with_rw = false;
	cache_vwc = true;
}

static unsigned rr_done;

static void rr_bio_done(struct nvmet_bio *bio, int rc)
{
	(void)bio;
	cr_expect_eq(rc, 0);
	rr_done++;
}

/* Round robin over the controller's I/O queues is per namespace (the namespace route's next_q), not
 * one counter for the file: each namespace starts at queue 0 and alternates on its own,
 * whatever another namespace submitted meanwhile. */
Test(durable, io_queue_round_robin_is_per_namespace)
{
	static uint8_t buf[4][4096];
	struct nvmet_cfg_ns ns = { .nsid = 1, .enable = true, .ctrl = 0, .ctrl_nsid = 1 };
	struct nvmet_bdev x, y;
	struct nvmet_bio bio[4];
	struct nvme_sg sg[4];

	cr_assert_eq(nvme_ctrl_init(&dc, "nvme0", &f.bus, 2), 0);
	cr_assert_eq(nvme_register(&dc), 0);
	cr_assert_eq(dc.nio, 2);
	cr_assert_eq(nvmet_bdev_nvme_open(NULL, 0, &ns, &x), 0);
	cr_assert_eq(nvmet_bdev_nvme_open(NULL, 0, &ns, &y), 0);
	struct nvmet_bdev *order[4] = { &x, &x, &y, &x };
	for (unsigned i = 0; i < 4; i++) {
		sg[i] = (struct nvme_sg){ .addr = dma_addr_host(buf[i]), .len = 4096 };
		bio[i] = (struct nvmet_bio){ .op = NVMET_BIO_READ, .slba = 8 * i, .nlb = 8, .sg = &sg[i], .nsg = 1,
					     .done = rr_bio_done };
		cr_assert_eq(order[i]->ops->submit(order[i], &bio[i]), 0);
	}
	/* x: queues 0, 1, 0; y: queue 0 (a shared counter would have given y queue 0 and x 1, 0, 1) */
	cr_expect_eq(dc.io[0].st.submitted, 3);
	cr_expect_eq(dc.io[1].st.submitted, 1);
	for (unsigned i = 0; i < 100 && rr_done < 4; i++) {
		nvme_qpair_poll(&dc.io[0], 64);
		nvme_qpair_poll(&dc.io[1], 64);
		fake_clock_advance(NSEC_PER_MSEC);
	}
	cr_expect_eq(rr_done, 4);
	x.ops->close(&x);
	y.ops->close(&y);
}
