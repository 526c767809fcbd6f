// sources: drivers/nvme/target/nvmet_core.c drivers/nvme/target/nvmet_fabrics.c drivers/nvme/target/nvmet_auth.c drivers/nvme/target/nvmet_auth_msg.c drivers/nvme/target/nvmet_auth_key.c lib/crypto.c lib/crc32.c drivers/nvme/target/nvmet_admin.c drivers/nvme/target/nvmet_ana.c drivers/nvme/target/nvmet_referral.c drivers/nvme/target/nvmet_io.c drivers/nvme/target/nvmet_bdev_ram.c drivers/nvme/target/nvmet_config.c lib/ipv4_text.c mm/pool.c lib/timer.c lib/log.c lib/clock.c tests/unit/drivers/nvme/target/fake_nvmet_transport.c tests/unit/drivers/nvme/target/fake_auth_entropy.c
// libs: -lmbedcrypto
/*
 * libFuzzer harness: DH-HMAC-CHAP messages (AUTH_Send / AUTH_Receive) on an admin queue and
 * an I/O queue of a host that must authenticate (SHA-256, ffdhe2048, bidirectional keys from
 * test vector 2, whose replayed Challenge and Reply are available as shortcuts so that the
 * verification and Success paths are reached), with the message parsers also run directly
 * on each message. Invariants: no crash or sanitizer report, every command completes once,
 * every pool is back to zero after each input.
 *
 * Input: records of [op][len lo][len hi][len bytes]:
 *   op % 8 == 0: AUTH_Send of the bytes on queue (op >> 3) & 1   1: AUTH_Receive, AL = len
 *   2: the vector's Negotiate / Reply / Success2 (by len % 3)    3: clock += len * 10 ms
 *   4: Property Get VS (gated)   5: reconnect the queue   6: SQE fields: AUTH_Send with
 *   SECP/SPSP/TL taken from the bytes   7: Connect the I/O queue
 */
#include <assert.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "drivers/nvme/target/nvmet.h"
#include "drivers/nvme/target/nvmet_auth_msg.h"
#include "drivers/nvme/target/nvmet_wire.h"
#include "lib/byteorder.h"
#include "lib/clock.h"
#include "lib/timer.h"
#include "mm/pool.h"
#include "tests/unit/drivers/nvme/target/auth_host.h"
#include "tests/unit/drivers/nvme/target/auth_vectors.h"
#include "tests/unit/drivers/nvme/target/fake_auth_entropy.h"
#include "tests/unit/drivers/nvme/target/fake_nvmet_transport.h"

static const struct auth_vector *v = &auth_vectors[2];
static struct nvmet_config cfg;
static struct ft_conn conns[2];
static uint64_t now;
static uint16_t cntlid;

static uint64_t fuzz_clock(void)
{
	return now;
}

static void parsers(const uint8_t *b, size_t len)
{
	struct nvmet_auth_hdr h;
	struct nvmet_auth_negotiate n;
	struct nvmet_auth_reply r;
	struct nvmet_auth_failure f;
	uint16_t tid;
	volatile uint8_t sink = 0;

	(void)nvmet_auth_parse_hdr(b, len, &h);
	if (!nvmet_auth_parse_negotiate(b, len, &n))
		assert(n.nhash <= AUTH_DESC_IDS_MAX && n.ndh <= AUTH_DESC_IDS_MAX);
	if (!nvmet_auth_parse_reply(b, len, &r)) {
		/* every slice lies inside the message */
		assert(r.dhv + r.dhvlen <= b + len);
		for (unsigned i = 0; i < r.hl; i++)
			sink ^= r.rval[i] ^ r.c2[i];
		for (unsigned i = 0; i < r.dhvlen; i++)
			sink ^= r.dhv[i];
	}
	(void)nvmet_auth_parse_success2(b, len, &tid);
	(void)nvmet_auth_parse_failure(b, len, &f);
	(void)sink;
}

static void connect(struct ft_conn *c, uint16_t qid)
{
	uint8_t cd[1024];
	struct nvme_cqe cqe;
	struct nvme_sqe s = ft_connect_sqe(qid, 31, 0);
	ft_connect_data(cd, AV_HOSTNQN, AV_SUBNQN, qid ? cntlid : 0xffff);
	if (ft_exec(c, &s, cd, sizeof(cd), NULL, &cqe) == 0 && qid == 0)
		cntlid = (uint16_t)le32_get(cqe.dw0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool parsed;
	static char json[4096];
	static uint8_t rbuf[FT_BUF];
	char err[200];
	size_t p = 0;

	if (!parsed) {
		snprintf(json, sizeof(json),
			 "{ \"hosts\": [ { \"nqn\": \"" AV_HOSTNQN "\", \"dhchap_key\": \"%s\", \"dhchap_ctrl_key\": \"%s\","
			 " \"dhchap_hash\": \"%s\", \"dhchap_dhgroup\": \"%s\" } ],"
			 "  \"ports\": [ { \"portid\": 1, \"addr\": { \"trtype\": \"tcp\", \"adrfam\": \"ipv4\","
			 " \"traddr\": \"10.0.0.1\", \"trsvcid\": \"4420\" }, \"subsystems\": [ \"" AV_SUBNQN "\" ] } ],"
			 "  \"subsystems\": [ { \"nqn\": \"" AV_SUBNQN "\", \"allowed_hosts\": [ \"" AV_HOSTNQN "\" ],"
			 "   \"attr\": { \"allow_any_host\": \"0\" },"
			 "   \"namespaces\": [ { \"nsid\": 1, \"enable\": 1, \"device\": { \"path\": \"/dev/nvme0n1\" } } ] } ] }",
			 v->key, v->ctrl_key, v->hash, v->dhgroup);
		assert(nvmet_config_parse(json, strlen(json), &cfg, err, sizeof(err), NULL, NULL) == 0);
		clock_set_source(fuzz_clock);
		parsed = true;
	}
	now = 0;
	cntlid = 0;
	fake_auth_entropy_reset();
	timer_queue_init(&timer_default_queue);
	if (nvmet_init(&cfg, ft_ram_open, NULL))
		abort();
	memset(conns, 0, sizeof(conns));
	ft_open(&conns[0], 0);
	ft_open(&conns[1], 0);
	connect(&conns[0], 0);

	while (size - p >= 3) {
		uint8_t op = data[p];
		uint32_t len = le16_load(data + p + 1);
		struct ft_conn *c = &conns[(op >> 3) & 1];
		struct nvme_sqe s;
		p += 3;
		if (len > size - p)
			len = (uint32_t)(size - p);
		const uint8_t *b = data + p;
		p += len;
		switch (op & 7) {
		case 0:
			parsers(b, len);
			s = auth_sqe(true, len);
			ft_exec(c, &s, b, len, NULL, NULL);
			break;
		case 1:
			s = auth_sqe(false, len % FT_BUF);
			ft_exec(c, &s, NULL, len % FT_BUF, rbuf, NULL);
			break;
		case 2: {
			uint8_t m[128];
			memset(m, 0, sizeof(m));
			if (len % 3 == 0) { /* Negotiate: everything Linux offers */
				s = auth_sqe(true, negotiate(m, v->tid, 0));
				ft_exec(c, &s, m, 72, NULL, NULL);
			} else if (len % 3 == 1) {
				s = auth_sqe(true, v->reply_len);
				ft_exec(c, &s, v->reply, v->reply_len, NULL, NULL);
			} else {
				m[0] = AUTH_TYPE_DHCHAP;
				m[1] = AUTH_ID_SUCCESS2;
				le16_store(m + AUTH_OFF_TID, v->tid);
				s = auth_sqe(true, 16);
				ft_exec(c, &s, m, 16, NULL, NULL);
			}
			break;
		}
		case 3:
			now += (uint64_t)len * 10000000u;
			timer_queue_run(&timer_default_queue, now);
			break;
		case 4:
			s = ft_prop_sqe(false, false, NVMF_PROP_VS, 0);
			ft_exec(c, &s, NULL, 0, NULL, NULL);
			break;
		case 5:
			ft_close(c);
			timer_queue_run(&timer_default_queue, now);
			ft_open(c, 0);
			connect(c, c == &conns[0] ? 0 : 1);
			break;
		case 6:
			s = auth_sqe(true, len);
			if (len >= 6) {
				uint8_t *sb = (uint8_t *)&s;
				sb[NVMF_AUTH_OFF_SECP] = b[0];
				sb[NVMF_AUTH_OFF_SPSP0] = b[1];
				sb[NVMF_AUTH_OFF_SPSP1] = b[2];
				sb[4] = (b[3] & 1) ? NVMF_FCTYPE_AUTH_RECV : NVMF_FCTYPE_AUTH_SEND;
				le16_store(sb + NVMF_AUTH_OFF_TL, le16_load(b + 4));
			}
			ft_exec(c, &s, b, len, rbuf, NULL);
			break;
		case 7:
			connect(&conns[1], 1);
			break;
		}
	}
	ft_close(&conns[0]);
	ft_close(&conns[1]);
	now += 1000000000ull * 100;
	timer_queue_run(&timer_default_queue, now);
	nvmet_fini();
	assert(mm_pool_total_in_use() == 0);
	return 0;
}
