// sources: drivers/nvme/target/nvmet_core.c drivers/nvme/target/nvmet_fabrics.c drivers/nvme/target/nvmet_auth.c drivers/nvme/target/nvmet_auth_msg.c drivers/nvme/target/nvmet_auth_key.c lib/crypto.c lib/crc32.c tests/unit/net/fake_entropy.c drivers/nvme/target/nvmet_admin.c drivers/nvme/target/nvmet_ana.c drivers/nvme/target/nvmet_referral.c drivers/nvme/target/nvmet_io.c drivers/nvme/target/nvmet_bdev_ram.c drivers/nvme/target/nvmet_config.c lib/ipv4_text.c mm/pool.c lib/timer.c lib/log.c lib/clock.c tests/unit/drivers/nvme/target/fake_nvmet_transport.c
// libs: -lmbedcrypto
/*
 * libFuzzer harness: the NVMe-oF target core fed arbitrary commands (SQE + data, Connect
 * data included) on four fake-transport connections, with shortcuts to a well-formed
 * Connect / enable so that the admin and I/O command sets are reached, clock jumps
 * (keep-alive expiry), namespace changes and connection closes in between.
 * Invariants: no crash or sanitizer report; every command completes exactly once (a
 * held AER at the latest when its queue goes); every pool is back to zero afterwards.
 * Each input runs twice, the queues' Read/Write fast path (struct nvmet_rw_fast) off and
 * on, the transport summing its segments as nvmet-tcp does: every command's CQE, data
 * length and data read must be the same bytes in both runs.
 *
 * Input: records of [action byte][...]:
 *   action & 7 == 0: exec   [conn/slot byte][64-byte SQE][len lo][len hi][len data bytes]
 *                   (SGL1's identifier byte: see below)
 *   1: close and reopen conn (port from the byte)     2: clock += byte * 100 ms, run timers
 *   3: toggle a namespace                             4: Connect admin (host, subsystem, kato from bytes)
 *   5: enable (CC.EN=1) on conn                       6: Connect I/O queue to conn 0's controller
 *   7: ANA: port (bit 2) group (bits 4:3, 1..4) state (bits 7:5, the five states and bad ones);
 *      with action bit 3: referral add (arg bit 7) or remove, port (bit 2), name (bits 4:3)
 */
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "drivers/nvme/target/nvmet_priv.h"
#include "drivers/nvme/target/nvmet_ana.h"
#include "drivers/nvme/target/nvmet_referral.h"
#include "drivers/nvme/target/nvmet_wire.h"
#include "lib/clock.h"
#include "lib/timer.h"
#include "mm/pool.h"
#include "tests/unit/drivers/nvme/target/fake_nvmet_transport.h"

#define NCONN 4
#define HOST_A "nqn.2014-08.org.nvmexpress:uuid:aaaaaaaa-0000-4000-8000-000000000001"
#define HOST_B "nqn.2014-08.org.nvmexpress:uuid:bbbbbbbb-0000-4000-8000-000000000002"
#define VOL0 "nqn.2026-11.org.p2pstore:vol0"
#define VOL1 "nqn.2026-11.org.p2pstore:vol1"

static const char *const json =
	"{ \"hosts\": [ { \"nqn\": \"" HOST_A "\" }, { \"nqn\": \"" HOST_B "\" } ],"
	"  \"ports\": ["
	"    { \"portid\": 1, \"addr\": { \"trtype\": \"tcp\", \"adrfam\": \"ipv4\", \"traddr\": \"10.0.0.1\", \"trsvcid\": \"4420\" },"
	"      \"referrals\": [ { \"name\": \"a\", \"addr\": { \"trtype\": \"tcp\", \"adrfam\": \"ipv4\","
	"        \"traddr\": \"10.0.0.9\", \"trsvcid\": \"8009\" } } ],"
	"      \"subsystems\": [ \"" VOL0 "\", \"" VOL1 "\" ] },"
	"    { \"portid\": 2, \"addr\": { \"trtype\": \"tcp\", \"adrfam\": \"ipv4\", \"traddr\": \"10.0.0.2\", \"trsvcid\": \"4421\" },"
	"      \"ana_groups\": [ { \"grpid\": 1, \"ana\": { \"state\": \"inaccessible\" } },"
	"                      { \"grpid\": 2, \"ana\": { \"state\": \"optimized\" } } ],"
	"      \"subsystems\": [ \"" VOL1 "\" ] } ],"
	"  \"subsystems\": ["
	"    { \"nqn\": \"" VOL0 "\", \"allowed_hosts\": [ \"" HOST_A "\" ],"
	"      \"attr\": { \"allow_any_host\": \"0\", \"cntlid_min\": \"10\", \"cntlid_max\": \"12\" },"
	"      \"namespaces\": [ { \"nsid\": 1, \"enable\": 1, \"device\": { \"path\": \"/dev/nvme0n1\" } },"
	"        { \"nsid\": 2, \"enable\": 0, \"ana_grpid\": 2, \"device\": { \"path\": \"/dev/nvme0n2\" } } ] },"
	"    { \"nqn\": \"" VOL1 "\", \"attr\": { \"allow_any_host\": \"1\" },"
	"      \"namespaces\": [ { \"nsid\": 1, \"enable\": 1, \"device\": { \"path\": \"/dev/nvme1n1\" } } ] } ] }";

static struct nvmet_config cfg;
static struct ft_conn conns[NCONN];
static uint64_t now;

static uint64_t fuzz_clock(void)
{
	return now;
}

static int ram_open(void *ctx, unsigned si, const struct nvmet_cfg_ns *ns, struct nvmet_bdev *out)
{
	(void)ctx;
	(void)si;
	return ns->ctrl == 0 ? nvmet_bdev_ram_open(out, 64, 9) : nvmet_bdev_ram_open(out, 16, 12);
}

/* A command that completed must have completed once; one still held must be an AER. */
static void check_slot(const struct ft_conn *c, const struct ft_cmd *cmd)
{
	assert(cmd->completions <= 1);
	if (cmd->completions == 0)
		assert(cmd->req.sqe.opc == NVME_ADM_AER && c->q);
}

/* FNV-1a of n bytes into *h. */
static void hash_bytes(uint64_t *h, const void *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		*h = (*h ^ ((const uint8_t *)p)[i]) * 0x100000001b3ull;
}

/* What a slot's command answered: its completions, CQE, data length and the data. */
static void hash_slot(uint64_t *h, const struct ft_cmd *cmd)
{
	uint32_t n = cmd->req.xfer_len <= FT_BUF ? cmd->req.xfer_len : FT_BUF;
	hash_bytes(h, &cmd->completions, sizeof(cmd->completions));
	hash_bytes(h, &cmd->req.cqe, sizeof(cmd->req.cqe));
	hash_bytes(h, &cmd->req.xfer_len, sizeof(cmd->req.xfer_len));
	hash_bytes(h, cmd->buf, n);
}

static void hash_conn(uint64_t *h, const struct ft_conn *c)
{
	for (unsigned k = 0; k < FT_MAX_CMDS; k++)
		hash_slot(h, &c->cmds[k]);
}

/* One run of the input; the hash of every answer the host saw. */
static uint64_t run(const uint8_t *data, size_t size, bool fast)
{
	uint64_t h = 0xcbf29ce484222325ull;
	size_t p = 0;

	now = 0;
	timer_queue_init(&timer_default_queue);
	if (nvmet_init(&cfg, ram_open, NULL))
		abort();
	nvmet_tgt.rw_fast_off = !fast;
	for (unsigned i = 0; i < NCONN; i++)
		ft_open(&conns[i], i & 1 ? 1 : 0);

	while (p < size) {
		uint8_t act = data[p++];
		uint8_t arg = p < size ? data[p++] : 0;
		struct ft_conn *c = &conns[arg % NCONN];
		switch (act & 7) {
		case 0: {
			struct nvme_sqe sqe;
			uint32_t len;
			unsigned slot = (arg >> 2) % FT_MAX_CMDS;
			if (size - p < sizeof(sqe) + 2)
				goto out;
			memcpy(&sqe, data + p, sizeof(sqe));
			p += sizeof(sqe);
			/* SGL1's identifier (DPTR byte 15): kept as given when its low nibble is 0xf
			 * (SGL Descriptor Type Invalid and friends), else one a fabrics host uses, so
			 * that random SQEs reach the command sets */
			uint8_t *sgl_id = &sqe.dptr.sgl1.id;
			if ((*sgl_id & 0x0f) != 0x0f)
				*sgl_id = (*sgl_id & 0x10) ? NVMF_SGL_ID_TRANSPORT : NVMF_SGL_ID_OFFSET;
			len = (uint32_t)(data[p] | data[p + 1] << 8) % (FT_BUF + 1);
			p += 2;
			if (len > size - p)
				len = (uint32_t)(size - p);
			for (unsigned k = 0; k < FT_MAX_CMDS && c->cmds[slot].busy; k++)
				slot = (slot + 1) % FT_MAX_CMDS;
			if (c->cmds[slot].busy)
				break; /* all held */
			struct ft_cmd *cmd = ft_submit(c, slot, &sqe, data + p, len);
			p += len;
			check_slot(c, cmd);
			hash_slot(&h, cmd);
			break;
		}
		case 1:
			ft_close(c);
			hash_conn(&h, c);
			for (unsigned k = 0; k < FT_MAX_CMDS; k++)
				assert(!c->cmds[k].busy && c->cmds[k].completions <= 1);
			ft_open(c, (arg >> 2) & 1);
			break;
		case 2:
			now += (uint64_t)arg * 100 * NSEC_PER_MSEC;
			timer_queue_run(&timer_default_queue, now);
			break;
		case 3:
			nvmet_ns_set_enabled(arg & 4 ? VOL1 : VOL0, 1 + ((arg >> 3) & 1), (arg >> 4) & 1);
			break;
		case 4:
			ft_connect_admin(c, arg & 4 ? HOST_B : HOST_A,
					 (arg & 8) ? "nqn.2014-08.org.nvmexpress.discovery" : (arg & 16) ? VOL1 : VOL0,
					 (arg >> 5) * 1000u);
			break;
		case 5:
			ft_enable(c);
			break;
		case 6: {
			int cntlid = conns[0].q ? nvmet_queue_cntlid(conns[0].q) : -1;
			if (cntlid > 0)
				ft_connect_io(c, (uint16_t)(1 + (arg >> 2) % 4), (uint16_t)cntlid, arg & 32 ? HOST_B : HOST_A,
					      arg & 64 ? VOL1 : VOL0);
			break;
		}
		case 7: {
			if (act & 8) {
				struct nvmet_cfg_referral r = { .name = { (char)('a' + ((arg >> 3) & 3)) }, .enable = true,
								.trtype = NVMET_TRTYPE_TCP, .traddr = 0x0a000009,
								.trsvcid = 4420, .treq = 2 };
				uint16_t portid = (uint16_t)(1 + ((arg >> 2) & 1));
				if (arg & 0x80)
					nvmet_referral_add(portid, &r);
				else
					nvmet_referral_del(portid, r.name);
				break;
			}
			static const uint8_t states[8] = { NVMET_ANA_OPTIMIZED, NVMET_ANA_NON_OPTIMIZED,
							   NVMET_ANA_INACCESSIBLE, NVMET_ANA_PERSISTENT_LOSS,
							   NVMET_ANA_CHANGE, 0, 5, 0xff };
			nvmet_ana_set_state((uint16_t)(1 + ((arg >> 2) & 1)), 1 + ((arg >> 3) & 3),
					    (enum nvmet_ana_state)states[arg >> 5]);
			break;
		}
		default:
			break;
		}
	}
out:
	for (unsigned i = 0; i < NCONN; i++) {
		ft_close(&conns[i]);
		hash_conn(&h, &conns[i]);
		for (unsigned k = 0; k < FT_MAX_CMDS; k++)
			assert(!conns[i].cmds[k].busy && conns[i].cmds[k].completions <= 1);
	}
	assert(nvmet_ctrl_count() == 0 && nvmet_queue_count() == 0);
	nvmet_fini();
	assert(mm_pool_total_in_use() == 0);
	return h;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool parsed;
	char err[200];

	if (!parsed) {
		int rc = nvmet_config_parse(json, strlen(json), &cfg, err, sizeof(err), NULL, NULL);
		assert(rc == 0);
		clock_set_source(fuzz_clock);
		parsed = true;
	}
	ft_hint = FT_HINT_SHAPE;
	ft_summed = true;
	uint64_t general = run(data, size, false);
	uint64_t fast = run(data, size, true);
	assert(general == fast);
	return 0;
}
