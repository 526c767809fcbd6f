// sources: drivers/nvme/target/nvmet_core.c drivers/nvme/target/nvmet_fabrics.c drivers/nvme/target/nvmet_auth.c drivers/nvme/target/nvmet_auth_msg.c drivers/nvme/target/nvmet_auth_key.c lib/crypto.c lib/crc32.c drivers/nvme/target/nvmet_admin.c drivers/nvme/target/nvmet_ana.c drivers/nvme/target/nvmet_referral.c drivers/nvme/target/nvmet_io.c drivers/nvme/target/nvmet_bdev_ram.c drivers/nvme/target/nvmet_config.c lib/ipv4_text.c mm/pool.c lib/timer.c lib/log.c tests/unit/drivers/nvme/target/fake_nvmet_transport.c tests/unit/drivers/nvme/target/fake_auth_entropy.c
// libs: -lmbedcrypto
/*
 * DH-HMAC-CHAP on the target over the fake transport, against transactions computed
 * independently (gen_auth_vectors.py: Python hashlib/hmac/pow): for SHA-256/384/512 and the
 * null and ffdhe2048..8192 groups, unidirectional and bidirectional, the Challenge and
 * Success1 bytes must be the expected ones and the host's Reply must be accepted. Then every
 * way to fail: wrong response, replayed Reply, bad T_ID, reflected C2, bad DH values, hash or
 * group not offered, secure channel asked, messages out of sequence, Failure2, timeout,
 * short AL, bad SECP; commands before authentication on admin and I/O queues; invalid keys
 * refused at Connect; secrets with wrong lengths or CRC. Pools back to zero after each test.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "drivers/nvme/target/nvmet.h"
#include "drivers/nvme/target/nvmet_auth.h"
#include "drivers/nvme/target/nvmet_auth_key.h"
#include "drivers/nvme/target/nvmet_auth_wire.h"
#include "drivers/nvme/target/nvmet_wire.h"
#include "lib/byteorder.h"
#include "lib/clock.h"
#include "lib/timer.h"
#include "auth_host.h"
#include "auth_vectors.h"
#include "fake_auth_entropy.h"
#include "fake_nvmet_transport.h"
#include "tests/unit/unit_support.h"

#define HOST_B "nqn.2014-08.org.nvmexpress:uuid:bbbbbbbb-0000-4000-8000-000000000002"
#define VOL1 "nqn.2026-11.org.p2pstore:vol1"

static struct nvmet_config cfg;
static char json[4096];

static void start(const char *key, const char *ctrl_key, const char *hash, const char *dhgroup)
{
	char err[200];
	snprintf(json, sizeof(json),
		 "{ \"hosts\": [ { \"nqn\": \"" AV_HOSTNQN "\", \"dhchap_key\": \"%s\", \"dhchap_ctrl_key\": \"%s\","
		 " \"dhchap_hash\": \"%s\", \"dhchap_dhgroup\": \"%s\" }, { \"nqn\": \"" HOST_B "\" } ],"
		 "  \"ports\": [ { \"portid\": 1, \"addr\": { \"trtype\": \"tcp\", \"adrfam\": \"ipv4\","
		 " \"traddr\": \"10.0.0.1\", \"trsvcid\": \"4420\" }, \"subsystems\": [ \"" AV_SUBNQN "\", \"" VOL1 "\" ] } ],"
		 "  \"subsystems\": [ { \"nqn\": \"" AV_SUBNQN "\", \"allowed_hosts\": [ \"" AV_HOSTNQN "\", \"" HOST_B "\" ],"
		 "   \"attr\": { \"allow_any_host\": \"0\" },"
		 "   \"namespaces\": [ { \"nsid\": 1, \"enable\": 1, \"device\": { \"path\": \"/dev/nvme0n1\" } } ] },"
		 "   { \"nqn\": \"" VOL1 "\", \"attr\": { \"allow_any_host\": \"1\" },"
		 "   \"namespaces\": [ { \"nsid\": 1, \"enable\": 1, \"device\": { \"path\": \"/dev/nvme1n1\" } } ] } ] }",
		 key, ctrl_key, hash, dhgroup);
	fake_auth_entropy_reset();
	cr_assert_eq(ft_target_start(json, &cfg, ft_ram_open, err, sizeof(err)), 0, "%s", err);
}

static void setup(void)
{
	unit_pools_begin();
	fake_clock_install();
}

static void teardown(void)
{
	nvmet_fini();
	unit_pools_end();
}

TestSuite(auth, .init = setup, .fini = teardown);

/* Connect queue qid of host to sub; returns the status, *dw0 the response's DW0. */
static uint16_t connect(struct ft_conn *c, uint16_t qid, uint16_t cntlid, const char *host, const char *sub,
			uint32_t *dw0)
{
	uint8_t cd[1024];
	struct nvme_cqe cqe;
	struct nvme_sqe s = ft_connect_sqe(qid, 31, 0);
	ft_connect_data(cd, host, sub, cntlid);
	uint16_t st = ft_exec(c, &s, cd, sizeof(cd), NULL, &cqe);
	*dw0 = le32_get(cqe.dw0);
	return st;
}

static uint16_t send_msg(struct ft_conn *c, const void *msg, uint32_t len)
{
	struct nvme_sqe s = auth_sqe(true, len);
	return ft_exec(c, &s, msg, len, NULL, NULL);
}

static uint16_t recv_msg(struct ft_conn *c, uint8_t *buf, uint32_t al)
{
	struct nvme_sqe s = auth_sqe(false, al);
	memset(buf, 0xee, al);
	return ft_exec(c, &s, NULL, al, buf, NULL);
}

static void start_vector(const struct auth_vector *v)
{
	start(v->key, v->ctrl_key, v->hash, v->dhgroup);
}

/* Start the target for v and connect the admin queue of its host (AUTHREQ.ATR asked). */
static void admin_up(struct ft_conn *a, const struct auth_vector *v)
{
	uint32_t dw0 = 0;
	start_vector(v);
	ft_open(a, 0);
	cr_assert_eq(connect(a, 0, 0xffff, AV_HOSTNQN, AV_SUBNQN, &dw0), 0);
	cr_assert(dw0 & NVMF_CONNECT_AUTHREQ_ATR, "Connect answers AUTHREQ.ATR");
}

static void expect_failure1(struct ft_conn *c, uint8_t rce)
{
	uint8_t buf[64];
	cr_assert_eq(recv_msg(c, buf, sizeof(buf)), 0);
	cr_assert_eq(buf[AUTH_OFF_TYPE], AUTH_TYPE_COMMON);
	cr_assert_eq(buf[AUTH_OFF_ID], AUTH_ID_FAILURE1);
	cr_assert_eq(buf[AUTH_FAIL_OFF_RC], AUTH_FAIL_RC_FAILED);
	cr_assert_eq(buf[AUTH_FAIL_OFF_RCE], rce, "explanation %u, expected %u", buf[AUTH_FAIL_OFF_RCE], rce);
	for (unsigned i = AUTH_FAIL_LEN; i < sizeof(buf); i++)
		cr_assert_eq(buf[i], 0, "AL beyond the message is zeroed");
	/* then the queue goes, after the grace period */
	cr_assert_not(c->killed);
	fake_clock_advance((uint64_t)NVMET_AUTH_FAILED_GRACE_MS * 1000000u);
	timer_queue_run(&timer_default_queue, clock_now_ns());
	cr_assert(c->killed);
}

/* Connect the admin queue and run vector v's transaction up to (not including) the
 * Reply. */
static uint16_t to_reply(struct ft_conn *a, const struct auth_vector *v)
{
	uint8_t b[2048];
	uint32_t dw0 = 0;
	ft_open(a, 0);
	cr_assert_eq(connect(a, 0, 0xffff, AV_HOSTNQN, AV_SUBNQN, &dw0), 0);
	cr_assert(dw0 & NVMF_CONNECT_AUTHREQ_ATR, "Connect answers AUTHREQ.ATR");
	cr_assert_eq(send_msg(a, b, negotiate(b, v->tid, 0)), 0);
	cr_assert_eq(recv_msg(a, b, v->challenge_len + 7), 0);
	cr_assert_arr_eq(b, v->challenge, v->challenge_len, "challenge bytes");
	for (unsigned i = 0; i < 7; i++)
		cr_assert_eq(b[v->challenge_len + i], 0);
	return (uint16_t)(dw0 & 0xffff);
}

Test(auth, known_answer_transactions_every_hash_and_group)
{
	for (size_t i = 0; i < sizeof(auth_vectors) / sizeof(auth_vectors[0]); i++) {
		const struct auth_vector *v = &auth_vectors[i];
		struct ft_conn a = { 0 };
		struct nvme_sqe pg = ft_prop_sqe(false, false, NVMF_PROP_VS, 0);
		uint8_t b[256];

		start_vector(v);
		to_reply(&a, v);
		cr_assert_eq(ft_exec(&a, &pg, NULL, 0, NULL, NULL), NVMET_SC_AUTH_REQUIRED, "vector %zu", i);
		cr_assert_eq(send_msg(&a, v->reply, v->reply_len), 0);
		cr_assert_eq(recv_msg(&a, b, v->success1_len), 0);
		cr_assert_arr_eq(b, v->success1, v->success1_len, "vector %zu success1", i);
		if (v->ctrl_key[0]) {
			cr_assert_eq(ft_exec(&a, &pg, NULL, 0, NULL, NULL), NVMET_SC_AUTH_REQUIRED);
			memset(b, 0, 16);
			b[0] = AUTH_TYPE_DHCHAP;
			b[1] = AUTH_ID_SUCCESS2;
			le16_store(b + AUTH_OFF_TID, v->tid);
			cr_assert_eq(send_msg(&a, b, 16), 0);
		}
		cr_assert_eq(ft_exec(&a, &pg, NULL, 0, NULL, NULL), 0, "vector %zu: authenticated", i);
		cr_assert_eq(ft_enable(&a), 0);
		cr_assert_eq(nvmet_stats()->auth_ok, 1);
		/* no timer left to kill it */
		fake_clock_advance((uint64_t)NVMET_AUTH_TIMEOUT_MS * 2000000u);
		timer_queue_run(&timer_default_queue, clock_now_ns());
		cr_assert_not(a.killed);
		ft_close(&a);
		nvmet_fini();
	}
	start("", "", "hmac(sha256)", "null"); /* for teardown */
}

Test(auth, wrong_response_is_refused)
{
	const struct auth_vector *v = &auth_vectors[0];
	struct ft_conn a = { 0 };
	uint8_t r[2048];
	start_vector(v);
	to_reply(&a, v);
	memcpy(r, v->reply, v->reply_len);
	r[AUTH_REPLY_HDR_LEN + 5] ^= 0x40; /* one bit of RVAL */
	cr_assert_eq(send_msg(&a, r, v->reply_len), 0);
	expect_failure1(&a, AUTH_RCE_FAILED);
	cr_assert_eq(nvmet_stats()->auth_failures, 1);
	ft_close(&a);
}

Test(auth, replayed_reply_in_a_new_transaction_is_refused)
{
	const struct auth_vector *v = &auth_vectors[1];
	struct ft_conn a = { 0 };
	uint8_t b[256];
	start_vector(v);
	to_reply(&a, v);
	cr_assert_eq(send_msg(&a, v->reply, v->reply_len), 0);
	cr_assert_eq(recv_msg(&a, b, v->success1_len), 0);
	memset(b, 0, 16);
	b[0] = AUTH_TYPE_DHCHAP;
	b[1] = AUTH_ID_SUCCESS2;
	le16_store(b + AUTH_OFF_TID, v->tid);
	cr_assert_eq(send_msg(&a, b, 16), 0);
	/* re-authentication with the same T_ID: a fresh C1 and S1, so the old Reply fails */
	cr_assert_eq(send_msg(&a, b, negotiate(b, v->tid, 0)), 0);
	cr_assert_eq(recv_msg(&a, b, sizeof(b)), 0);
	cr_assert_neq(memcmp(b + AUTH_CHAL_HDR_LEN, v->challenge + AUTH_CHAL_HDR_LEN, 48), 0, "C1 is fresh");
	cr_assert_neq(le32_load(b + AUTH_CHAL_OFF_SEQNUM), le32_load(v->challenge + AUTH_CHAL_OFF_SEQNUM), "S1 moved");
	cr_assert_eq(send_msg(&a, v->reply, v->reply_len), 0);
	expect_failure1(&a, AUTH_RCE_FAILED);
	ft_close(&a);
}

static void edit_tid(uint8_t *r)
{
	le16_store(r + AUTH_OFF_TID, (uint16_t)(le16_load(r + AUTH_OFF_TID) + 1));
}

static void edit_hl(uint8_t *r)
{
	r[AUTH_REPLY_OFF_HL] = 32;
}

static void edit_dhvlen(uint8_t *r)
{
	le16_store(r + AUTH_REPLY_OFF_DHVLEN, 1024);
}

/* Vector v's transaction with its Reply changed by edit and cut bytes shorter: the host
 * reads Failure1 with explanation rce, then the queue goes. */
static void reply_fails(const struct auth_vector *v, void (*edit)(uint8_t *r), uint32_t cut, uint8_t rce)
{
	struct ft_conn a = { 0 };
	uint8_t r[2048];
	start_vector(v);
	to_reply(&a, v);
	memcpy(r, v->reply, v->reply_len);
	edit(r);
	cr_assert_eq(send_msg(&a, r, v->reply_len - cut), 0);
	expect_failure1(&a, rce);
	ft_close(&a);
	nvmet_fini();
}

Test(auth, reply_of_another_transaction_or_shape)
{
	const struct auth_vector *v = &auth_vectors[2]; /* SHA-512, ffdhe2048, bidirectional */

	reply_fails(v, edit_tid, 0, AUTH_RCE_INCORRECT_PAYLOAD);
	/* a hash length that is not the negotiated one (and a shorter message) */
	reply_fails(v, edit_hl, 64, AUTH_RCE_INCORRECT_PAYLOAD);
	/* DHVLEN larger than the message */
	reply_fails(v, edit_dhvlen, 0, AUTH_RCE_INCORRECT_PAYLOAD);
	start("", "", "hmac(sha256)", "null");
}

Test(auth, bad_dh_values_are_refused)
{
	const struct auth_vector *v = &auth_vectors[2];
	size_t dhv = AUTH_REPLY_HDR_LEN + 2 * 64u;
	static const uint8_t tail[3] = { 0, 1, 0xff };
	uint8_t r[2048];

	for (int k = 0; k < 3; k++) {
		struct ft_conn a = { 0 };
		start_vector(v);
		to_reply(&a, v);
		memcpy(r, v->reply, v->reply_len);
		memset(r + dhv, k == 2 ? 0xff : 0, 256); /* 0, 1, beyond p */
		r[dhv + 255] = tail[k];
		cr_assert_eq(send_msg(&a, r, v->reply_len), 0);
		expect_failure1(&a, AUTH_RCE_DHGROUP_UNUSABLE);
		ft_close(&a);
		nvmet_fini();
	}
	start("", "", "hmac(sha256)", "null");
}

Test(auth, reflected_c2_is_refused)
{
	const struct auth_vector *v = &auth_vectors[1]; /* SHA-384, null group, bidirectional */
	struct ft_conn a = { 0 };
	uint8_t chal[256], r[2048];

	admin_up(&a, v);
	cr_assert_eq(send_msg(&a, r, negotiate(r, v->tid, 0)), 0);
	cr_assert_eq(recv_msg(&a, chal, v->challenge_len), 0);
	memcpy(r, v->reply, v->reply_len);
	memcpy(r + AUTH_REPLY_HDR_LEN + 48, chal + AUTH_CHAL_HDR_LEN, 48); /* C2 = C1 */
	cr_assert_eq(send_msg(&a, r, v->reply_len), 0);
	expect_failure1(&a, AUTH_RCE_FAILED);
	ft_close(&a);
}

Test(auth, negotiate_refusals)
{
	const struct auth_vector *v = &auth_vectors[0];
	uint8_t b[256];
	struct {
		uint8_t sc_c, halen_ids, dh_ids, authid;
		uint8_t rce;
	} cases[] = {
		{ 1, 3, 6, AUTH_AUTHID_DHCHAP, AUTH_RCE_CONCAT_MISMATCH },
		{ 0, 0, 6, AUTH_AUTHID_DHCHAP, AUTH_RCE_HASH_UNUSABLE },    /* SHA-256 not offered */
		{ 0, 3, 0, AUTH_AUTHID_DHCHAP, AUTH_RCE_DHGROUP_UNUSABLE }, /* null not offered */
		{ 0, 3, 6, 0x07, AUTH_RCE_PROTOCOL_UNUSABLE },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct ft_conn a = { 0 };
		admin_up(&a, v);
		uint32_t n = negotiate(b, 1, cases[i].sc_c);
		b[8 + AUTH_DESC_OFF_AUTHID] = cases[i].authid;
		if (!cases[i].halen_ids)
			b[8 + AUTH_DESC_OFF_IDLIST] = 2; /* only 384 and 512 */
		if (!cases[i].dh_ids)
			b[8 + AUTH_DESC_OFF_IDLIST + AUTH_DESC_DH_OFF] = 5; /* 8192 twice, no null */
		cr_assert_eq(send_msg(&a, b, n), 0);
		expect_failure1(&a, cases[i].rce);
		ft_close(&a);
		nvmet_fini();
	}
	start("", "", "hmac(sha256)", "null");
}

Test(auth, out_of_sequence_failure2_and_command_checks)
{
	const struct auth_vector *v = &auth_vectors[0];
	struct ft_conn a = { 0 };
	uint8_t b[256];

	/* a Reply before the Challenge was read */
	admin_up(&a, v);
	/* CDW10 as the spec and Linux lay it out: byte 40 reserved, SPSP0, SPSP1, SECP E9h */
	struct nvme_sqe s = auth_sqe(true, 72);
	const uint8_t cdw10[4] = { 0x00, 0x01, 0x01, 0xe9 };
	cr_assert_arr_eq((uint8_t *)&s + 40, cdw10, 4);
	/* command checks first: SECP, SPSP, TL 0, TL over the limit, SGL length */
	((uint8_t *)&s)[NVMF_AUTH_OFF_SECP] = 0xea;
	cr_assert_eq(ft_exec(&a, &s, b, 72, NULL, NULL), NVMET_SC_INVALID_FIELD);
	s = auth_sqe(true, 72);
	((uint8_t *)&s)[NVMF_AUTH_OFF_SPSP1] = 0;
	cr_assert_eq(ft_exec(&a, &s, b, 72, NULL, NULL), NVMET_SC_INVALID_FIELD);
	s = auth_sqe(true, 0);
	cr_assert_eq(ft_exec(&a, &s, NULL, 0, NULL, NULL), NVMET_SC_INVALID_FIELD);
	s = auth_sqe(true, 4096);
	cr_assert_eq(ft_exec(&a, &s, NULL, 4096, NULL, NULL), NVMET_SC_INVALID_FIELD);
	s = auth_sqe(true, 72);
	le32_store((uint8_t *)&s + NVMF_AUTH_OFF_TL, 80);
	cr_assert_eq(ft_exec(&a, &s, b, 72, NULL, NULL), NVMET_SC_SGL_LENGTH_INVALID);
	/* nothing changed: the transaction still starts; an AL too small for the Challenge is
	 * refused without consuming it */
	cr_assert_eq(send_msg(&a, b, negotiate(b, v->tid, 0)), 0);
	cr_assert_eq(recv_msg(&a, b, 20), NVMET_SC_INVALID_FIELD);
	cr_assert_eq(recv_msg(&a, b, v->challenge_len), 0);
	cr_assert_arr_eq(b, v->challenge, v->challenge_len);
	/* then a second Negotiate where the Reply belongs */
	cr_assert_eq(send_msg(&a, b, negotiate(b, v->tid, 0)), 0);
	expect_failure1(&a, AUTH_RCE_INCORRECT_PROTOCOL);
	/* the dead queue takes no more messages */
	cr_assert_eq(send_msg(&a, b, negotiate(b, v->tid, 0)), NVMET_SC_ABORT_SQ_DELETED);
	ft_close(&a);
	nvmet_fini();

	/* Failure2 from the host ends it */
	memset(&a, 0, sizeof(a));
	admin_up(&a, v);
	cr_assert_eq(send_msg(&a, b, negotiate(b, v->tid, 0)), 0);
	cr_assert_eq(recv_msg(&a, b, v->challenge_len), 0);
	memset(b, 0, 8);
	b[AUTH_OFF_ID] = AUTH_ID_FAILURE2;
	b[AUTH_FAIL_OFF_RC] = 1;
	b[AUTH_FAIL_OFF_RCE] = AUTH_RCE_FAILED;
	cr_assert_eq(send_msg(&a, b, 8), 0);
	cr_assert_eq(send_msg(&a, b, negotiate(b, v->tid, 0)), NVMET_SC_CMD_SEQ_ERROR, "failed: no new transaction");
	fake_clock_advance((uint64_t)NVMET_AUTH_FAILED_GRACE_MS * 1000000u);
	timer_queue_run(&timer_default_queue, clock_now_ns());
	cr_assert(a.killed);
	ft_close(&a);
	nvmet_fini();

	/* an AUTH_Receive where a Send belongs */
	memset(&a, 0, sizeof(a));
	admin_up(&a, v);
	expect_failure1(&a, AUTH_RCE_INCORRECT_PROTOCOL);
	ft_close(&a);
}

Test(auth, transaction_times_out)
{
	const struct auth_vector *v = &auth_vectors[0];
	struct ft_conn a = { 0 };
	uint8_t b[256];

	admin_up(&a, v);
	cr_assert_eq(send_msg(&a, b, negotiate(b, v->tid, 0)), 0);
	fake_clock_advance((uint64_t)NVMET_AUTH_TIMEOUT_MS * 1000000u - 1);
	timer_queue_run(&timer_default_queue, clock_now_ns());
	cr_assert_not(a.killed);
	fake_clock_advance(1);
	timer_queue_run(&timer_default_queue, clock_now_ns());
	cr_assert(a.killed, "the host did not finish in time: the association goes");
	ft_close(&a);
}

Test(auth, io_queue_authenticates_on_its_own)
{
	const struct auth_vector *v = &auth_vectors[0];
	struct ft_conn a = { 0 }, io = { 0 };
	uint8_t b[256], rd[512];
	uint32_t dw0;
	uint16_t cntlid;

	start_vector(v);
	cntlid = to_reply(&a, v);
	cr_assert_eq(send_msg(&a, v->reply, v->reply_len), 0);
	cr_assert_eq(recv_msg(&a, b, v->success1_len), 0);
	cr_assert_eq(ft_enable(&a), 0);
	ft_open(&io, 0);
	cr_assert_eq(connect(&io, 1, cntlid, AV_HOSTNQN, AV_SUBNQN, &dw0), 0);
	cr_assert(dw0 & NVMF_CONNECT_AUTHREQ_ATR);
	struct nvme_sqe rs = ft_sqe(NVME_CMD_READ, 9, 1, 512);
	cr_assert_eq(ft_exec(&io, &rs, NULL, 512, rd, NULL), NVMET_SC_AUTH_REQUIRED, "I/O before authentication");
	cr_assert_eq(send_msg(&io, b, negotiate(b, v->tid, 0)), 0);
	cr_assert_eq(recv_msg(&io, b, sizeof(b)), 0);
	cr_assert_eq(b[AUTH_OFF_ID], AUTH_ID_CHALLENGE);
	cr_assert_neq(memcmp(b + AUTH_CHAL_HDR_LEN, v->challenge + AUTH_CHAL_HDR_LEN, 32), 0, "its own C1");
	/* the admin queue's Reply is not this queue's */
	cr_assert_eq(send_msg(&io, v->reply, v->reply_len), 0);
	expect_failure1(&io, AUTH_RCE_FAILED);
	cr_assert_not(a.killed, "an I/O queue's failure takes only that queue");
	ft_close(&io);
	ft_close(&a);
}

Test(auth, hosts_without_keys_and_invalid_keys)
{
	struct ft_conn a = { 0 }, b = { 0 };
	uint32_t dw0;
	char bad[128];

	/* host B has no key: no authentication asked */
	start_vector(&auth_vectors[0]);
	ft_open(&b, 0);
	cr_assert_eq(connect(&b, 0, 0xffff, HOST_B, AV_SUBNQN, &dw0), 0);
	cr_assert_eq(dw0 & NVMF_CONNECT_AUTHREQ_ATR, 0);
	cr_assert_eq(ft_enable(&b), 0);
	uint8_t msg[128];
	cr_assert_eq(send_msg(&b, msg, negotiate(msg, 1, 0)), NVMET_SC_CMD_SEQ_ERROR);
	/* the discovery subsystem is never authenticated */
	ft_open(&a, 0);
	cr_assert_eq(connect(&a, 0, 0xffff, AV_HOSTNQN, NVMET_DISCOVERY_NQN, &dw0), 0);
	cr_assert_eq(dw0 & NVMF_CONNECT_AUTHREQ_ATR, 0);
	ft_close(&a);
	ft_close(&b);
	nvmet_fini();

	/* a key whose CRC does not match: the host's Connects are refused */
	snprintf(bad, sizeof(bad), "%s", auth_vectors[0].key);
	bad[12] = bad[12] == 'A' ? 'B' : 'A';
	start(bad, "", "hmac(sha256)", "null");
	memset(&a, 0, sizeof(a));
	ft_open(&a, 0);
	cr_assert_eq(connect(&a, 0, 0xffff, AV_HOSTNQN, AV_SUBNQN, &dw0), NVMET_SC_CONNECT_INVALID_HOST);
	ft_close(&a);
}

Test(auth, secrets_parse_lengths_and_crc)
{
	struct nvmet_auth_secret k;
	for (size_t i = 0; i < sizeof(auth_vectors) / sizeof(auth_vectors[0]); i++) {
		cr_assert_eq(nvmet_auth_secret_parse(auth_vectors[i].key, &k), 0);
		cr_assert(k.len == 32 || k.len == 48 || k.len == 64);
	}
	/* 20-byte key + CRC (32 base64 characters): a wrong length */
	cr_assert_eq(nvmet_auth_secret_parse("DHHC-1:00:AAECAwQFBgcICQoLDA0ODxAREhMUFRYX:", &k), -EINVAL);
	cr_assert_eq(nvmet_auth_secret_parse("DHHC-1:04:SCzgZmVL1qONO5urczdIjECzsgVl2R8lU38Q0XB2nZh7qPRf:", &k), -EINVAL);
	cr_assert_eq(nvmet_auth_secret_parse("DHHC-2:00:SCzgZmVL1qONO5urczdIjECzsgVl2R8lU38Q0XB2nZh7qPRf:", &k), -EINVAL);
	cr_assert_eq(nvmet_auth_secret_parse("DHHC-1:00:SCzgZmVL1qONO5urczdIjECzsgVl2R8lU38Q0XB2nZh7qPRe:", &k), -EBADMSG);
	cr_assert_eq(nvmet_auth_secret_parse("DHHC-1:00:SCzg*mVL1qONO5urczdIjECzsgVl2R8lU38Q0XB2nZh7qPRf:", &k), -EINVAL);
	cr_assert_eq(nvmet_auth_secret_parse("DHHC-1:00:SCzgZmVL1qONO5urczdIjECzsgVl2R8lU38Q0XB2nZh7qPRf", &k), 0);
	start("", "", "hmac(sha256)", "null");
}

/* nvmet.json: the host attributes with Linux's names and values, and clear errors. */
Test(auth, config_attributes)
{
	static struct nvmet_config c;
	char js[1024], err[200];
	struct {
		const char *attrs, *error; /* error: a piece of the message, NULL when accepted */
		uint8_t hash, group;
	} cases[] = {
		{ "\"dhchap_key\": \"%s\", \"dhchap_hash\": \"hmac(sha512)\", \"dhchap_dhgroup\": \"ffdhe8192\"", NULL, 3, 5 },
		{ "\"dhchap_key\": \"%s\", \"dhchap_hash\": \"sha384\"", NULL, 2, 0 },
		{ "\"dhchap_key\": \"%s\"", NULL, 1, 0 },
		{ "\"dhchap_key\": \"%s\", \"dhchap_hash\": \"md5\"", "hosts[0].dhchap_hash: 'md5' is not one of", 0, 0 },
		{ "\"dhchap_key\": \"%s\", \"dhchap_dhgroup\": \"ffdhe1024\"", "hosts[0].dhchap_dhgroup", 0, 0 },
		{ "\"dhchap_key\": \"DHHC-1:00:short:\"", "hosts[0].dhchap_key: not a DHHC-1 secret", 0, 0 },
		{ "\"dhchap_ctrl_key\": \"%s\"", "needs the host's dhchap_key", 0, 0 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char attrs[400];
		snprintf(attrs, sizeof(attrs), cases[i].attrs, auth_vectors[0].key);
		snprintf(js, sizeof(js), "{ \"hosts\": [ { \"nqn\": \"" AV_HOSTNQN "\", %s } ], \"ports\": [], \"subsystems\": [] }",
			 attrs);
		int rc = nvmet_config_parse(js, strlen(js), &c, err, sizeof(err), NULL, NULL);
		if (!cases[i].error) {
			cr_assert_eq(rc, 0, "case %zu: %s", i, err);
			cr_assert_eq(c.host_auth[0].dhchap_hash, cases[i].hash);
			cr_assert_eq(c.host_auth[0].dhchap_dhgroup, cases[i].group);
			cr_assert_str_eq(c.host_auth[0].dhchap_key, auth_vectors[0].key);
		} else {
			cr_assert_eq(rc, -EINVAL, "case %zu", i);
			cr_assert(strstr(err, cases[i].error), "case %zu: '%s'", i, err);
		}
	}
	start("", "", "hmac(sha256)", "null");
}
