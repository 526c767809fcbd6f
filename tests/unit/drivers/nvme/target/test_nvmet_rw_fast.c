// sources: drivers/nvme/target/nvmet_core.c drivers/nvme/target/nvmet_fabrics.c drivers/nvme/target/nvmet_auth.c drivers/nvme/target/nvmet_auth_msg.c drivers/nvme/target/nvmet_auth_key.c lib/crypto.c lib/crc32.c tests/unit/net/fake_entropy.c drivers/nvme/target/nvmet_admin.c drivers/nvme/target/nvmet_ana.c drivers/nvme/target/nvmet_referral.c drivers/nvme/target/nvmet_io.c drivers/nvme/target/nvmet_bdev_ram.c drivers/nvme/target/nvmet_config.c lib/ipv4_text.c mm/pool.c lib/timer.c lib/log.c tests/unit/drivers/nvme/target/fake_nvmet_transport.c
// libs: -lmbedcrypto
/*
 * The queue's Read/Write fast path (struct nvmet_rw_fast) answers every command as the
 * general path does: a table of Read/Write SQEs, well-formed, malformed and at the edges,
 * each sent after a good Read built the queue's descriptor and after an event that must
 * drop it (namespace detached, its device gone, ANA state changed, controller disabled or
 * shut down, queue disconnected), runs once with the fast path off and once with it on; the CQEs, the data
 * read and the disk's contents afterwards must be the same bytes, and the fast path must
 * have served the good commands. Pools return to zero after every test.
 */
#include <criterion/criterion.h>
#include <string.h>
#include "drivers/nvme/target/nvmet_priv.h"
#include "drivers/nvme/target/nvmet_wire.h"
#include "lib/byteorder.h"
#include "lib/clock.h"
#include "lib/timer.h"
#include "fake_nvmet_transport.h"
#include "tests/unit/unit_support.h"

#define HOST "nqn.2014-08.org.nvmexpress:uuid:aaaaaaaa-0000-4000-8000-000000000001"
#define VOL "nqn.2026-11.org.p2pstore:fast"

/* Namespaces 1 (ANA group 1) and 2 (group 2), RAM disks of 4096 blocks of 512 bytes. */
static const char *const config_json =
	"{ \"ports\": [\n"
	"    { \"portid\": 1, \"addr\": { \"trtype\": \"tcp\", \"adrfam\": \"ipv4\", \"traddr\": \"10.0.0.1\", \"trsvcid\": \"4420\" },\n"
	"      \"ana_groups\": [ { \"grpid\": 1, \"ana\": { \"state\": \"optimized\" } },\n"
	"                      { \"grpid\": 2, \"ana\": { \"state\": \"optimized\" } } ],\n"
	"      \"subsystems\": [ \"" VOL "\" ] } ],\n"
	"  \"subsystems\": [ { \"nqn\": \"" VOL "\", \"attr\": { \"allow_any_host\": \"1\" },\n"
	"      \"namespaces\": [\n"
	"        { \"nsid\": 1, \"ana_grpid\": 1, \"device\": { \"path\": \"/dev/nvme0n1\" } },\n"
	"        { \"nsid\": 2, \"ana_grpid\": 2, \"device\": { \"path\": \"/dev/nvme0n2\" } } ] } ] }\n";

static struct nvmet_config cfg;

/* Namespace 1's device can go away (ops->ready, polled by the core every NVMET_NS_CHECK_MS). */
static struct nvmet_bdev_ops ops_with_ready;
static const struct nvmet_bdev *ns1_bdev;
static bool ns1_gone;

static bool ns1_ready(const struct nvmet_bdev *b)
{
	return !(b == ns1_bdev && ns1_gone);
}

static int open_with_ready(void *ctx, unsigned si, const struct nvmet_cfg_ns *ns, struct nvmet_bdev *out)
{
	int rc = ft_ram_open(ctx, si, ns, out);
	if (rc)
		return rc;
	ops_with_ready = *out->ops;
	ops_with_ready.ready = ns1_ready;
	out->ops = &ops_with_ready;
	if (ns->nsid == 1)
		ns1_bdev = out;
	return 0;
}

/* The core's readiness poll runs (the poll loop after NVMET_NS_CHECK_MS). */
static void ns_poll(bool gone)
{
	ns1_gone = gone;
	fake_clock_advance((uint64_t)NVMET_NS_CHECK_MS * NSEC_PER_MSEC);
	timer_queue_run(&timer_default_queue, clock_now_ns());
}

static void start(void)
{
	char err[200];
	ns1_gone = false;
	cr_assert_eq(ft_target_start(config_json, &cfg, open_with_ready, err, sizeof(err)), 0, "%s", err);
}

static void setup(void)
{
	unit_pools_begin();
	fake_clock_install();
}

static void teardown(void)
{
	nvmet_fini();
	ft_hint = FT_HINT_NONE;
	ft_summed = false;
	unit_pools_end();
}

TestSuite(nvmet_rw_fast, .init = setup, .fini = teardown);

/* What happens between the descriptor's build and the command. */
enum event {
	EV_NONE = 0,
	EV_NS_DETACHED,     /* namespace 1 disabled */
	EV_NS_REATTACHED,   /* disabled and enabled again */
	EV_NS_GONE,         /* namespace 1's device went away (the readiness poll saw it) */
	EV_NS_BACK,         /* gone, then back */
	EV_ANA_INACCESSIBLE,
	EV_ANA_CHANGE,
	EV_ANA_BACK,        /* inaccessible, then optimized again */
	EV_OTHER_NS,        /* a Read of namespace 2 rebuilt the descriptor for it */
	EV_CC_DISABLED,     /* CC.EN = 0 */
	EV_CC_SHUTDOWN,     /* CC.SHN normal */
	EV_IO_DISCONNECT,   /* Disconnect on the I/O queue */
};

struct fast_case {
	const char *name;
	enum event ev;
	uint8_t opc;
	uint32_t nsid;
	uint64_t slba;
	uint32_t nlb;       /* blocks, not 0's based */
	uint32_t len;       /* SGL1 length and data bytes */
	uint32_t cdw12_or;  /* FUA, LR, PRINFO, ... */
	uint8_t flags_xor;  /* PSDT, FUSE, reserved bits */
	uint8_t sgl_id;     /* 0: in-capsule (Offset) */
	uint32_t cdw13;     /* DSM hints, reserved */
	bool fast;          /* the fast path serves it (when on) */
};

#define RD NVME_CMD_READ
#define WR NVME_CMD_WRITE
static const struct fast_case cases[] = {
	{ "read", EV_NONE, RD, 1, 10, 8, 4096, 0, 0, 0, 0, true },
	{ "write", EV_NONE, WR, 1, 10, 8, 4096, 0, 0, 0, 0, true },
	{ "write, transport data block", EV_NONE, WR, 1, 20, 1, 512, 0, 0, NVMF_SGL_ID_TRANSPORT, 0, true },
	{ "write, last block", EV_NONE, WR, 1, 4095, 1, 512, 0, 0, 0, 0, true },
	{ "read, nsid absent", EV_NONE, RD, 9, 0, 1, 512, 0, 0, 0, 0, false },
	{ "read, nsid 0", EV_NONE, RD, 0, 0, 1, 512, 0, 0, 0, 0, false },
	{ "read, nsid broadcast", EV_NONE, RD, 0xffffffffu, 0, 1, 512, 0, 0, 0, 0, false },
	{ "write, one block past the end", EV_NONE, WR, 1, 4095, 2, 1024, 0, 0, 0, 0, true },
	{ "read, slba past the end", EV_NONE, RD, 1, 4096, 1, 512, 0, 0, 0, 0, true },
	{ "read, slba wraps", EV_NONE, RD, 1, 0xffffffffffffff00ull, 1, 512, 0, 0, 0, 0, true },
	{ "read, nlb over mdts", EV_NONE, RD, 1, 0, 4096, 512, 0, 0, 0, 0, true },
	{ "write, nlb not the sgl length", EV_NONE, WR, 1, 0, 2, 512, 0, 0, 0, 0, true },
	{ "read, sgl longer than nlb", EV_NONE, RD, 1, 0, 1, 1024, 0, 0, 0, 0, true },
	{ "write, no data", EV_NONE, WR, 1, 0, 1, 0, 0, 0, 0, 0, false },
	{ "write fua", EV_NONE, WR, 1, 30, 2, 1024, NVME_RW_FUA, 0, 0, 0, true },
	{ "read fua", EV_NONE, RD, 1, 30, 2, 1024, NVME_RW_FUA, 0, 0, 0, true },
	{ "write, limited retry", EV_NONE, WR, 1, 32, 1, 512, 1u << 31, 0, 0, 0, true },
	{ "write, prinfo bits", EV_NONE, WR, 1, 33, 1, 512, 0xfu << 26, 0, 0, 0, true },
	{ "read, dsm hints", EV_NONE, RD, 1, 33, 1, 512, 0, 0, 0, 0x7, true },
	{ "read, reserved flag bits", EV_NONE, RD, 1, 33, 1, 512, 0, 0x3c, 0, 0, true },
	{ "read, prps", EV_NONE, RD, 1, 0, 1, 512, 0, NVME_SQE_PSDT_SGL, 0, 0, false },
	{ "read, sgl with segment mptr", EV_NONE, RD, 1, 0, 1, 512, 0, 0xc0, 0, 0, false },
	{ "write, fused first", EV_NONE, WR, 1, 0, 1, 512, 0, 1, 0, 0, false },
	{ "write, fused second", EV_NONE, WR, 1, 0, 1, 512, 0, 2, 0, 0, false },
	{ "read, fuse reserved", EV_NONE, RD, 1, 0, 1, 512, 0, 3, 0, 0, false },
	{ "read, segment descriptor", EV_NONE, RD, 1, 0, 1, 512, 0, 0, 0x30, 0, false },
	{ "read, keyed data block", EV_NONE, RD, 1, 0, 1, 512, 0, 0, 0x40, 0, false },
	{ "read, bit bucket", EV_NONE, RD, 1, 0, 1, 512, 0, 0, 0x10, 0, false },
	{ "flush", EV_NONE, NVME_CMD_FLUSH, 1, 0, 1, 0, 0, 0, 0, 0, false },
	{ "compare", EV_NONE, 0x05, 1, 0, 1, 512, 0, 0, 0, 0, false },
	{ "write zeroes", EV_NONE, NVME_CMD_WRITE_ZEROES, 1, 40, 2, 0, 0, 0, 0, 0, false },
	{ "read, namespace detached", EV_NS_DETACHED, RD, 1, 0, 1, 512, 0, 0, 0, 0, false },
	{ "write, namespace detached", EV_NS_DETACHED, WR, 1, 0, 1, 512, 0, 0, 0, 0, false },
	{ "read, namespace reattached", EV_NS_REATTACHED, RD, 1, 10, 8, 4096, 0, 0, 0, 0, false },
	{ "read, device gone", EV_NS_GONE, RD, 1, 0, 1, 512, 0, 0, 0, 0, false },
	{ "write, device gone", EV_NS_GONE, WR, 1, 0, 1, 512, 0, 0, 0, 0, false },
	{ "read, device back", EV_NS_BACK, RD, 1, 10, 8, 4096, 0, 0, 0, 0, false },
	{ "read, ana inaccessible", EV_ANA_INACCESSIBLE, RD, 1, 0, 1, 512, 0, 0, 0, 0, false },
	{ "write, ana change", EV_ANA_CHANGE, WR, 1, 0, 1, 512, 0, 0, 0, 0, false },
	{ "read, ana back", EV_ANA_BACK, RD, 1, 10, 8, 4096, 0, 0, 0, 0, false },
	{ "read, other namespace cached", EV_OTHER_NS, RD, 1, 10, 8, 4096, 0, 0, 0, 0, false },
	{ "read ns 2, other namespace cached", EV_OTHER_NS, RD, 2, 10, 8, 4096, 0, 0, 0, 0, true },
	{ "write, controller disabled", EV_CC_DISABLED, WR, 1, 0, 1, 512, 0, 0, 0, 0, false },
	{ "read, controller shut down", EV_CC_SHUTDOWN, RD, 1, 0, 1, 512, 0, 0, 0, 0, false },
	{ "write, queue disconnected", EV_IO_DISCONNECT, WR, 1, 0, 1, 512, 0, 0, 0, 0, false },
};
#define NCASES (sizeof(cases) / sizeof(cases[0]))

/* What one case produced. */
struct fast_result {
	struct nvme_cqe cqe;
	uint32_t xfer_len;
	uint8_t data[4096];
	uint64_t fast;      /* commands the fast path served during the case's command */
};

static struct nvme_sqe case_sqe(const struct fast_case *c)
{
	struct nvme_sqe s = ft_sqe(c->opc, 0x1234, c->nsid, c->len);
	s.cdw10 = le32_make((uint32_t)c->slba);
	s.cdw11 = le32_make((uint32_t)(c->slba >> 32));
	s.cdw12 = le32_make(((c->nlb - 1) & 0xffff) | c->cdw12_or);
	s.cdw13 = le32_make(c->cdw13);
	s.flags ^= c->flags_xor;
	if (c->sgl_id)
		s.dptr.sgl1.id = c->sgl_id;
	return s;
}

/* An admin queue, connected and enabled, and I/O queue 1 of its controller. */
static void connect_both(struct ft_conn *a, struct ft_conn *q)
{
	ft_open(a, 0);
	int cntlid = ft_connect_admin(a, HOST, VOL, 0);
	cr_assert_geq(cntlid, 1, "connect status 0x%x", -cntlid);
	cr_assert_eq(ft_enable(a), 0);
	ft_open(q, 0);
	cr_assert_eq(ft_connect_io(q, 1, (uint16_t)cntlid, HOST, VOL), 0);
}

static void prop_set_cc(struct ft_conn *a, uint32_t cc)
{
	struct nvme_sqe s = ft_prop_sqe(true, false, NVMF_PROP_CC, cc);
	cr_assert_eq(ft_exec(a, &s, NULL, 0, NULL, NULL), 0);
}

static void event(enum event ev, struct ft_conn *a, struct ft_conn *q)
{
	static uint8_t buf[4096];
	uint32_t cc = NVME_CC_EN | (6u << NVME_CC_IOSQES_SHIFT) | (4u << NVME_CC_IOCQES_SHIFT);
	struct nvme_sqe s;

	switch (ev) {
	case EV_NONE:
		break;
	case EV_NS_DETACHED:
		cr_assert_eq(nvmet_ns_set_enabled(VOL, 1, false), 0);
		break;
	case EV_NS_REATTACHED:
		cr_assert_eq(nvmet_ns_set_enabled(VOL, 1, false), 0);
		cr_assert_eq(nvmet_ns_set_enabled(VOL, 1, true), 0);
		break;
	case EV_NS_GONE:
		ns_poll(true);
		break;
	case EV_NS_BACK:
		ns_poll(true);
		ns_poll(false);
		break;
	case EV_ANA_INACCESSIBLE:
		cr_assert_eq(nvmet_ana_set_state(1, 1, NVMET_ANA_INACCESSIBLE), 0);
		break;
	case EV_ANA_CHANGE:
		cr_assert_eq(nvmet_ana_set_state(1, 1, NVMET_ANA_CHANGE), 0);
		break;
	case EV_ANA_BACK:
		cr_assert_eq(nvmet_ana_set_state(1, 1, NVMET_ANA_INACCESSIBLE), 0);
		cr_assert_eq(nvmet_ana_set_state(1, 1, NVMET_ANA_OPTIMIZED), 0);
		break;
	case EV_OTHER_NS:
		s = ft_sqe(RD, 1, 2, 512);
		cr_assert_eq(ft_exec(q, &s, NULL, 512, buf, NULL), 0);
		break;
	case EV_CC_DISABLED:
		prop_set_cc(a, cc & ~NVME_CC_EN);
		break;
	case EV_CC_SHUTDOWN:
		prop_set_cc(a, cc | (NVME_CC_SHN_NORMAL << NVME_CC_SHN_SHIFT));
		break;
	case EV_IO_DISCONNECT: {
		s = ft_sqe(NVMF_OPC_FABRICS, 11, 0, 0);
		struct nvmf_cmd f = nvmf_cmd_of(&s);
		f.fctype = NVMF_FCTYPE_DISCONNECT;
		s = nvmf_cmd_sqe(&f);
		cr_assert_eq(ft_exec(q, &s, NULL, 0, NULL, NULL), 0);
		break;
	}
	}
}

/* Undo what event() changed on the target (the queues are closed after each case). */
static void restore(enum event ev)
{
	if (ev == EV_NS_DETACHED)
		cr_assert_eq(nvmet_ns_set_enabled(VOL, 1, true), 0);
	if (ev == EV_NS_GONE)
		ns_poll(false);
	if (ev == EV_ANA_INACCESSIBLE || ev == EV_ANA_CHANGE)
		cr_assert_eq(nvmet_ana_set_state(1, 1, NVMET_ANA_OPTIMIZED), 0);
}

/* Every case on a fresh association of a target started anew: a good Read of namespace 1
 * first (it builds the descriptor when the fast path is on), the event, the case's command.
 * Then both disks read back in full into disks. */
static void run_all(bool fast_on, struct fast_result *out, uint8_t (*disks)[2][64 * 512])
{
	static uint8_t wbuf[4096], rbuf[4096];

	start();
	nvmet_tgt.rw_fast_off = !fast_on;
	for (unsigned i = 0; i < sizeof(wbuf); i++)
		wbuf[i] = (uint8_t)(i * 13 + 5);
	for (unsigned k = 0; k < NCASES; k++) {
		const struct fast_case *c = &cases[k];
		struct ft_conn a, q;
		connect_both(&a, &q);
		struct nvme_sqe warm = ft_sqe(RD, 1, 1, 512);
		cr_assert_eq(ft_exec(&q, &warm, NULL, 512, rbuf, NULL), 0, "%s: the warming read", c->name);
		event(c->ev, &a, &q);
		struct nvme_sqe s = case_sqe(c);
		uint64_t before = nvmet_stats()->rw_fast;
		memset(rbuf, 0, sizeof(rbuf));
		wbuf[0] = (uint8_t)k;
		struct nvme_cqe cqe;
		ft_exec(&q, &s, c->opc == WR ? wbuf : NULL, c->len, rbuf, &cqe);
		out[k].cqe = cqe;
		out[k].xfer_len = q.cmds[FT_MAX_CMDS - 1].req.xfer_len;
		memcpy(out[k].data, rbuf, sizeof(rbuf));
		out[k].fast = nvmet_stats()->rw_fast - before;
		ft_close(&q);
		ft_close(&a);
		restore(c->ev);
	}
	/* the disks, 8 blocks a Read */
	struct ft_conn a, q;
	connect_both(&a, &q);
	for (uint32_t nsid = 1; nsid <= 2; nsid++)
		for (uint32_t b = 0; b < 4096; b += 64) {
			struct nvme_sqe s = ft_sqe(RD, 2, nsid, 4096);
			s.cdw10 = le32_make(b);
			s.cdw12 = le32_make(7);
			cr_assert_eq(ft_exec(&q, &s, NULL, 4096, rbuf, NULL), 0);
			memcpy((*disks)[nsid - 1] + b / 64 * 512, rbuf, 512); /* the first block of each 64 */
		}
	ft_close(&q);
	ft_close(&a);
	nvmet_fini();
}

static void same_answers(enum ft_hint hint)
{
	static struct fast_result off[NCASES], on[NCASES];
	static uint8_t disks_off[2][64 * 512], disks_on[2][64 * 512];

	ft_hint = hint;
	ft_summed = true; /* as nvmet-tcp: the segments counted as they were taken */
	run_all(false, off, &disks_off);
	run_all(true, on, &disks_on);
	for (unsigned k = 0; k < NCASES; k++) {
		const char *n = cases[k].name;
		cr_assert_eq(memcmp(&off[k].cqe, &on[k].cqe, sizeof(on[k].cqe)), 0,
			     "%s: CQE status 0x%x (fast path off) vs 0x%x (on)", n, le16_get(off[k].cqe.status),
			     le16_get(on[k].cqe.status));
		cr_assert_eq(off[k].xfer_len, on[k].xfer_len, "%s", n);
		cr_assert_eq(memcmp(off[k].data, on[k].data, sizeof(on[k].data)), 0, "%s: data read", n);
		cr_assert_eq(off[k].fast, 0, "%s: off means off", n);
		cr_assert_eq(on[k].fast, cases[k].fast ? 1u : 0u, "%s: the fast path %s", n,
			     cases[k].fast ? "serves it" : "leaves it to the general path");
	}
	cr_assert_eq(memcmp(disks_off, disks_on, sizeof(disks_on)), 0, "the disks hold the same bytes");
}

/* The TCP transport's way: the namespace hint of nvmet_req_shape() with every command. */
Test(nvmet_rw_fast, malformed_and_edge_commands_get_the_general_paths_answers_with_the_shape_hint)
{
	same_answers(FT_HINT_SHAPE);
}

/* Without the hint (as RDMA): the descriptor built by the general path serves the next. */
Test(nvmet_rw_fast, malformed_and_edge_commands_get_the_general_paths_answers_without_a_hint)
{
	same_answers(FT_HINT_NONE);
}

/* A namespace disabled while a queue's descriptor names it: the next Read is refused
 * (Invalid Namespace) and the shape hint is the general answer (none). */
Test(nvmet_rw_fast, a_detach_drops_the_descriptor)
{
	static uint8_t buf[512];
	struct ft_conn a, q;

	start();
	ft_summed = true;
	connect_both(&a, &q);
	struct nvme_sqe s = ft_sqe(RD, 1, 1, 512);
	cr_assert_eq(ft_exec(&q, &s, NULL, 512, buf, NULL), 0);
	uint64_t before = nvmet_stats()->rw_fast;
	cr_assert_eq(ft_exec(&q, &s, NULL, 512, buf, NULL), 0);
	cr_assert_eq(nvmet_stats()->rw_fast, before + 1, "the second Read took the fast path");
	cr_assert_eq(nvmet_ns_set_enabled(VOL, 1, false), 0);
	struct nvmet_req_shape sh;
	nvmet_req_shape(q.q, &s, &sh);
	cr_assert_null(sh.bdev, "no backend for a disabled namespace, as before");
	cr_assert_eq(ft_exec(&q, &s, NULL, 512, buf, NULL), NVMET_SC_INVALID_NS);
	cr_assert_eq(nvmet_stats()->rw_fast, before + 1);
	ft_close(&q);
	ft_close(&a);
}
