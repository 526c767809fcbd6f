// sources: drivers/nvme/target/nvmet_tcp.c drivers/nvme/target/nvmet_dram_reason.c drivers/nvme/target/nvmet_tcp_buf.c drivers/nvme/target/nvmet_tcp_rx.c drivers/nvme/target/nvmet_tcp_pdu.c drivers/nvme/target/nvmet_core.c drivers/nvme/target/nvmet_fabrics.c drivers/nvme/target/nvmet_auth.c drivers/nvme/target/nvmet_auth_msg.c drivers/nvme/target/nvmet_auth_key.c lib/crypto.c tests/unit/net/fake_entropy.c drivers/nvme/target/nvmet_admin.c drivers/nvme/target/nvmet_ana.c drivers/nvme/target/nvmet_referral.c drivers/nvme/target/nvmet_io.c drivers/nvme/target/nvmet_bdev_ram.c drivers/nvme/target/nvmet_config.c drivers/nic/netdev.c lib/crc32.c lib/ipv4_text.c mm/pool.c mm/dma.c lib/timer.c lib/log.c tests/unit/drivers/nvme/target/fake_nvmet_transport.c tests/unit/drivers/nvme/target/fake_tcp.c tests/unit/drivers/nvme/target/nvme_tcp_host.c
// libs: -lmbedcrypto
/*
 * A hostile host against the real NVMe/TCP transport and target core (the fake TCP
 * layer, RAM disk): malformed PDUs (bad HLEN/PLEN/PDO, types a host may not send, unknown
 * types), a bad data digest, R2T violations (data beyond the R2T, wrong TTAG, DATAO
 * out of order, H2CData larger than MAXH2CDATA), in-capsule data beyond IOCCSZ, ICReq
 * with bad fields, more commands than the queue holds, unknown opcodes and SGL types,
 * bad fabrics commands. Every case must end in a clean NVMe status (the connection
 * lives on) or a C2HTermReq / close (the connection goes): never a crash, and after
 * each test every fragment is released exactly once, every connection, queue and
 * controller freed and every pool back to zero.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>
#include "drivers/nvme/target/nvmet.h"
#include "drivers/nvme/target/nvmet_priv.h"
#include "drivers/nvme/target/nvmet_wire.h"
#include "drivers/nvme/target/nvmet_tcp.h"
#include "drivers/nvme/target/nvmet_tcp_pdu.h"
#include "lib/clock.h"
#include "lib/crc32.h"
#include "lib/timer.h"
#include "net/tcp/tcp.h"
#include "fake_nvmet_transport.h"
#include "fake_tcp.h"
#include "nvme_tcp_host.h"
#include "tests/unit/unit_support.h"

#define HOST "nqn.2014-08.org.nvmexpress:uuid:aaaaaaaa-0000-4000-8000-000000000001"
#define VOL0 "nqn.2026-11.org.p2pstore:vol0"

static const char *const config_json =
	"{ \"hosts\": [],\n"
	"  \"ports\": [ { \"portid\": 1, \"addr\": { \"trtype\": \"tcp\", \"adrfam\": \"ipv4\", \"traddr\": \"10.0.0.1\","
	" \"trsvcid\": \"4420\" }, \"subsystems\": [ \"" VOL0 "\" ] } ],\n"
	"  \"subsystems\": [ { \"nqn\": \"" VOL0 "\", \"attr\": { \"allow_any_host\": \"1\" },\n"
	"      \"namespaces\": [ { \"nsid\": 1, \"enable\": 1, \"device\": { \"path\": \"/dev/nvme0n1\" } } ] } ] }\n";

static struct nvmet_config cfg;

static void setup(void)
{
	char err[200];
	unit_pools_begin();
	fake_clock_install();
	cr_assert_eq(ftcp_start(config_json, &cfg, ft_ram_open, NULL, err, sizeof(err)), 0, "%s", err);
}

static void teardown(void)
{
	char why[120];
	cr_assert_eq(ftcp_stop(why, sizeof(why)), 0, "%s", why);
	unit_pools_end();
}

TestSuite(tcp_hostile, .init = setup, .fini = teardown);

/* --- the host's side --- */

/* The next PDU the transport sent on s (a valid one), or NULL. */
static const uint8_t *next_pdu(struct tcp_sock *s)
{
	struct nth_pdu p;
	int rc = ftcp_next_pdu(s, &p);
	cr_assert_geq(rc, 0, "the transport sent a malformed PDU");
	return rc == 1 ? p.hdr : NULL;
}

/* What the transport answered, in order: a response status, an R2T, a termination. */
struct answer {
	uint8_t type;
	uint16_t status;    /* CapsuleResp: SCT << 8 | SC */
	uint16_t fes;       /* C2HTermReq */
	uint32_t fei;
	uint16_t ttag;      /* R2T */
	uint32_t r2to, r2tl;
};

static bool next(struct tcp_sock *s, struct answer *a)
{
	const uint8_t *p;
	while ((p = next_pdu(s))) {
		memset(a, 0, sizeof(*a));
		a->type = p[0];
		if (p[0] == NVME_TCP_C2H_DATA || p[0] == NVME_TCP_ICRESP)
			continue;
		if (p[0] == NVME_TCP_CAPSULE_RESP)
			a->status = (uint16_t)((p[8 + 14] | p[8 + 15] << 8) >> 1 & 0x7ff);
		else if (p[0] == NVME_TCP_C2H_TERM_REQ) {
			a->fes = (uint16_t)(p[8] | p[9] << 8);
			a->fei = le32_load(p + 10);
		} else if (p[0] == NVME_TCP_R2T) {
			a->ttag = (uint16_t)(p[10] | p[11] << 8);
			a->r2to = le32_load(p + 12);
			a->r2tl = le32_load(p + 16);
		}
		return true;
	}
	return false;
}

/* Sockets the transport still has open (each with its queue in these tests). */
static unsigned open_socks(void)
{
	unsigned n = 0;
	for (unsigned i = 0; i < FTCP_CONNS; i++)
		n += ftcp_conns[i].accepted && ftcp_open(&ftcp_conns[i]);
	return n;
}

/* The connection must be gone: a C2HTermReq with fes (0: any), or a close without one
 * when term is false; its queue destroyed, its memory freed by the next poll. */
static void expect_gone(struct tcp_sock *s, bool term, uint16_t fes)
{
	struct answer a;
	bool got_term = false;
	while (next(s, &a)) {
		cr_assert_neq(a.type, NVME_TCP_CAPSULE_RESP, "no response after a protocol error (status 0x%x)", a.status);
		if (a.type == NVME_TCP_C2H_TERM_REQ) {
			got_term = true;
			if (fes)
				cr_assert_eq(a.fes, fes, "FES %u, expected %u (FEI %u)", a.fes, fes, a.fei);
		}
	}
	cr_assert_eq(got_term, term, "C2HTermReq %s", term ? "missing" : "unexpected");
	cr_assert_not(ftcp_open(s), "the connection is closed");
	nvmet_tcp_poll(64);
	cr_assert_eq(nvmet_tcp_conn_count(), open_socks(), "the closed connection freed");
	cr_assert_eq(nvmet_queue_count(), open_socks(), "its queue destroyed");
}

/* A clean NVMe status on a connection that stays up. */
static void expect_status(struct tcp_sock *s, uint16_t status)
{
	struct answer a;
	cr_assert(next(s, &a), "an answer");
	cr_assert_eq(a.type, NVME_TCP_CAPSULE_RESP, "a CapsuleResp, got PDU type %u (FES %u FEI %u)", a.type, a.fes,
		     a.fei);
	cr_assert_eq(a.status, status, "status 0x%x, expected 0x%x", a.status, status);
	cr_assert(ftcp_open(s), "the connection lives on");
}

static struct tcp_sock *established(unsigned i, size_t frag, uint8_t dgst)
{
	struct tcp_sock *s = ftcp_connect(i, frag);
	const uint8_t *p;
	ftcp_icreq(s, 0, 0, dgst);
	cr_assert((p = next_pdu(s)));
	cr_assert_eq(p[0], NVME_TCP_ICRESP);
	return s;
}

/* Admin queue connected and the controller enabled: returns the cntlid. */
static uint16_t admin_up(struct tcp_sock *s, bool dg)
{
	uint8_t cd[1024];
	struct nvme_sqe sqe = ft_connect_sqe(0, 31, 0);
	ft_connect_data(cd, HOST, VOL0, 0xffff);
	ftcp_capsule(s, dg, dg, &sqe, cd, sizeof(cd));
	const uint8_t *p;
	cr_assert((p = next_pdu(s)));
	cr_assert_eq(p[0], NVME_TCP_CAPSULE_RESP);
	cr_assert_eq((p[8 + 14] | p[8 + 15] << 8) >> 1, 0, "Connect");
	uint16_t cntlid = (uint16_t)(p[8] | p[9] << 8);
	sqe = ft_prop_sqe(true, false, NVMF_PROP_CC, NVME_CC_EN | (6u << NVME_CC_IOSQES_SHIFT) | (4u << NVME_CC_IOCQES_SHIFT));
	ftcp_capsule(s, dg, dg, &sqe, NULL, 0);
	expect_status(s, 0);
	return cntlid;
}

/* An I/O queue (qid 1) of a fresh controller on connection 1; the admin queue on 0. */
static struct tcp_sock *io_up(struct tcp_sock **admin, uint8_t dgst)
{
	*admin = established(0, 4096, 0);
	uint16_t cntlid = admin_up(*admin, false);
	struct tcp_sock *s = established(1, 4096, dgst);
	uint8_t cd[1024];
	struct nvme_sqe sqe = ft_connect_sqe(1, 31, 0);
	ft_connect_data(cd, HOST, VOL0, cntlid);
	bool hd = dgst & NVME_TCP_DGST_HDGST_ENABLE, dd = dgst & NVME_TCP_DGST_DDGST_ENABLE;
	ftcp_capsule(s, hd, dd, &sqe, cd, sizeof(cd));
	expect_status(s, 0);
	return s;
}

static struct nvme_sqe write_sqe(uint16_t cid, uint64_t slba, uint32_t nlb, uint32_t len)
{
	struct nvme_sqe sqe = ft_sqe(NVME_CMD_WRITE, cid, 1, len);
	sqe.cdw10 = le32_make((uint32_t)slba);
	sqe.cdw11 = le32_make((uint32_t)(slba >> 32));
	sqe.cdw12 = le32_make(nlb - 1);
	return sqe;
}

/* Both connections of io_up closed by the host. */
static void host_leaves(struct tcp_sock *a, struct tcp_sock *q)
{
	ftcp_eof(q);
	ftcp_eof(a);
	nvmet_tcp_poll(64);
	cr_assert_eq(nvmet_tcp_conn_count(), 0);
	cr_assert_eq(nvmet_ctrl_count(), 0);
}

static struct answer write_r2t(struct tcp_sock *s, uint16_t cid, uint32_t len);

/* --- malformed headers --- */

Test(tcp_hostile, capsule_with_wrong_hlen_terminates)
{
	struct tcp_sock *s = established(0, 4096, 0);
	uint8_t b[80] = { NVME_TCP_CAPSULE_CMD, 0, 80, 0 };
	le32_store(b + 4, 80);
	ftcp_send(s, b, sizeof(b));
	expect_gone(s, true, NVME_TCP_FES_INVALID_HEADER_FIELD);
}

Test(tcp_hostile, plen_shorter_than_hlen_terminates)
{
	struct tcp_sock *s = established(0, 4096, 0);
	uint8_t b[72] = { NVME_TCP_CAPSULE_CMD, 0, 72, 0 };
	le32_store(b + 4, 40);
	ftcp_send(s, b, sizeof(b));
	expect_gone(s, true, NVME_TCP_FES_INVALID_HEADER_FIELD);
}

Test(tcp_hostile, huge_plen_terminates)
{
	struct tcp_sock *s = established(0, 4096, 0);
	uint8_t b[72] = { NVME_TCP_CAPSULE_CMD, 0, 72, 72 };
	le32_store(b + 4, 0xfffffff0u);
	ftcp_send(s, b, sizeof(b));
	expect_gone(s, true, 0);
}

Test(tcp_hostile, pdo_inside_the_header_terminates)
{
	struct tcp_sock *s = established(0, 4096, 0);
	uint8_t b[72 + 16] = { NVME_TCP_CAPSULE_CMD, 0, 72, 8 };
	le32_store(b + 4, sizeof(b));
	ftcp_send(s, b, sizeof(b));
	expect_gone(s, true, NVME_TCP_FES_INVALID_HEADER_FIELD);
}

Test(tcp_hostile, unknown_pdu_type_terminates)
{
	static const uint8_t types[] = { 0x08, 0x0a, 0x0b, 0x7f, 0xff };
	for (unsigned i = 0; i < sizeof(types); i++) {
		struct tcp_sock *s = established(0, 4096, 0);
		uint8_t b[24] = { types[i], 0, 24, 0 };
		le32_store(b + 4, 24);
		ftcp_send(s, b, sizeof(b));
		expect_gone(s, true, 0);
	}
}

Test(tcp_hostile, controller_to_host_pdus_from_the_host_terminate)
{
	static const uint8_t types[] = { NVME_TCP_ICRESP, NVME_TCP_CAPSULE_RESP, NVME_TCP_C2H_DATA, NVME_TCP_R2T,
					 NVME_TCP_C2H_TERM_REQ };
	static const uint8_t hlen[] = { 128, 24, 24, 24, 24 };
	for (unsigned i = 0; i < sizeof(types); i++) {
		struct tcp_sock *s = established(0, 4096, 0);
		uint8_t b[128] = { types[i], 0, hlen[i], 0 };
		le32_store(b + 4, hlen[i]);
		ftcp_send(s, b, hlen[i]);
		expect_gone(s, true, 0);
	}
}

Test(tcp_hostile, icreq_with_bad_fields_terminates)
{
	/* PLEN 256 for an ICReq (HLEN = PLEN = 128) */
	struct tcp_sock *s = ftcp_connect(0, 4096);
	uint8_t b[256] = { NVME_TCP_ICREQ, 0, 128, 0 };
	le32_store(b + 4, 256);
	ftcp_send(s, b, sizeof(b));
	expect_gone(s, true, 0);
	/* HPDA 32 (at most 31) */
	s = ftcp_connect(0, 4096);
	uint8_t c[128] = { NVME_TCP_ICREQ, 0, 128, 0 };
	le32_store(c + 4, 128);
	c[10] = 32;
	ftcp_send(s, c, sizeof(c));
	expect_gone(s, true, 0);
}

/* MAXR2T at its largest (0's based 0xffffffff) and HPDA 31: accepted; the target still
 * issues one R2T at a time, each within MAXH2CDATA. */
Test(tcp_hostile, icreq_with_the_largest_maxr2t_and_hpda)
{
	static uint8_t data[65536];
	struct tcp_sock *a = established(0, 4096, 0);
	uint16_t cntlid = admin_up(a, false);
	struct tcp_sock *s = ftcp_connect(1, 4096);
	uint8_t b[128] = { NVME_TCP_ICREQ, 0, 128, 0 };
	const uint8_t *p;
	le32_store(b + 4, 128);
	b[10] = 31;
	le32_store(b + 12, 0xffffffffu);
	ftcp_send(s, b, sizeof(b));
	cr_assert((p = next_pdu(s)));
	cr_assert_eq(p[0], NVME_TCP_ICRESP);
	cr_assert_leq(le32_load(p + 12), NVMET_TCP_MAXH2CDATA, "MAXH2CDATA");
	uint8_t cd[1024];
	struct nvme_sqe sqe = ft_connect_sqe(1, 31, 0);
	ft_connect_data(cd, HOST, VOL0, cntlid);
	ftcp_capsule(s, false, false, &sqe, cd, sizeof(cd));
	expect_status(s, 0);
	/* two writes: one R2T each, none beyond MAXH2CDATA */
	struct answer r1 = write_r2t(s, 20, 65536), r2;
	sqe = write_sqe(21, 256, 128, 65536);
	ftcp_capsule(s, false, false, &sqe, NULL, 0);
	ftcp_h2c(s, false, false, 20, r1.ttag, 0, data, sizeof(data), true);
	unsigned r2ts = 0, ok = 0;
	while (next(s, &r2)) {
		if (r2.type == NVME_TCP_R2T) {
			r2ts++;
			cr_assert_leq(r2.r2tl, NVMET_TCP_MAXH2CDATA);
			ftcp_h2c(s, false, false, 21, r2.ttag, r2.r2to, data, r2.r2tl, r2.r2to + r2.r2tl == 65536);
		} else {
			cr_assert_eq(r2.type, NVME_TCP_CAPSULE_RESP);
			cr_assert_eq(r2.status, 0);
			ok++;
		}
	}
	cr_assert_eq(ok, 2, "both writes completed");
	cr_assert_geq(r2ts, 1);
	host_leaves(a, s);
}

Test(tcp_hostile, garbage_then_fin_frees_everything)
{
	struct tcp_sock *s = established(0, 5, 0);
	uint8_t b[40];
	for (unsigned i = 0; i < sizeof(b); i++)
		b[i] = (uint8_t)(i * 37 + 11);
	ftcp_send(s, b, 7); /* a partial header: nothing to say yet */
	cr_assert(ftcp_open(s));
	ftcp_eof(s);
	cr_assert_not(ftcp_open(s));
	nvmet_tcp_poll(64);
	cr_assert_eq(nvmet_tcp_conn_count(), 0);
}

/* --- digests --- */

Test(tcp_hostile, bad_data_digest_ends_the_connection)
{
	struct tcp_sock *a, *s = io_up(&a, NVME_TCP_DGST_DDGST_ENABLE);
	static uint8_t data[4096], b[72 + 4096 + 4];
	struct nvme_sqe sqe = write_sqe(5, 0, 8, 4096);
	memset(b, 0, sizeof(b));
	b[0] = NVME_TCP_CAPSULE_CMD;
	b[1] = NVME_TCP_F_DDGSTF;
	b[2] = 72;
	b[3] = 72;
	le32_store(b + 4, sizeof(b));
	memcpy(b + 8, &sqe, 64);
	memcpy(b + 72, data, sizeof(data));
	le32_store(b + 72 + 4096, crc32c(0, data, sizeof(data)) ^ 1);
	ftcp_send(s, b, sizeof(b));
	/* never a success: a Transient Transport Error status, or the connection goes */
	struct answer ans;
	while (next(s, &ans))
		cr_assert(ans.type != NVME_TCP_CAPSULE_RESP || ans.status != 0, "a write with a bad digest succeeded");
	cr_assert_eq(nvmet_tcp_stats()->ddgst_errors, 1);
	host_leaves(a, s);
}

Test(tcp_hostile, missing_header_digest_terminates)
{
	struct tcp_sock *a, *s = io_up(&a, NVME_TCP_DGST_HDGST_ENABLE);
	struct nvme_sqe sqe = ft_sqe(NVME_CMD_FLUSH, 3, 1, 0);
	ftcp_capsule(s, false, false, &sqe, NULL, 0);
	expect_gone(s, true, 0);
	ftcp_eof(a);
	nvmet_tcp_poll(64);
}

Test(tcp_hostile, corrupt_header_digest_terminates)
{
	struct tcp_sock *a, *s = io_up(&a, NVME_TCP_DGST_HDGST_ENABLE);
	uint8_t b[76] = { NVME_TCP_CAPSULE_CMD, NVME_TCP_F_HDGSTF, 72, 0 };
	struct nvme_sqe sqe = ft_sqe(NVME_CMD_FLUSH, 3, 1, 0);
	le32_store(b + 4, 76);
	memcpy(b + 8, &sqe, 64);
	le32_store(b + 72, crc32c(0, b, 72) + 1);
	ftcp_send(s, b, sizeof(b));
	expect_gone(s, true, NVME_TCP_FES_HEADER_DIGEST_ERROR);
	ftcp_eof(a);
	nvmet_tcp_poll(64);
}

/* --- R2T / H2CData violations: a 64 KiB write (too large for in-capsule data) --- */

static struct answer write_r2t(struct tcp_sock *s, uint16_t cid, uint32_t len)
{
	struct nvme_sqe sqe = write_sqe(cid, 16, len / 512, len);
	ftcp_capsule(s, false, false, &sqe, NULL, 0);
	struct answer a;
	cr_assert(next(s, &a));
	cr_assert_eq(a.type, NVME_TCP_R2T, "an R2T, got type %u status 0x%x", a.type, a.status);
	cr_assert_eq(a.r2to, 0);
	cr_assert_eq(a.r2tl, len);
	return a;
}

Test(tcp_hostile, h2c_beyond_the_r2t_terminates)
{
	static uint8_t data[65536 + 512];
	struct tcp_sock *a, *s = io_up(&a, 0);
	struct answer r = write_r2t(s, 9, 65536);
	ftcp_h2c(s, false, false, 9, r.ttag, 0, data, sizeof(data), true);
	expect_gone(s, true, NVME_TCP_FES_DATA_OUT_OF_RANGE);
	ftcp_eof(a);
	nvmet_tcp_poll(64);
}

Test(tcp_hostile, h2c_with_a_wrong_ttag_terminates)
{
	static uint8_t data[4096];
	struct tcp_sock *a, *s = io_up(&a, 0);
	struct answer r = write_r2t(s, 9, 65536);
	ftcp_h2c(s, false, false, 9, (uint16_t)(r.ttag + 1), 0, data, sizeof(data), false);
	expect_gone(s, true, NVME_TCP_FES_INVALID_HEADER_FIELD);
	ftcp_eof(a);
	nvmet_tcp_poll(64);
}

Test(tcp_hostile, h2c_with_a_wrong_cccid_terminates)
{
	static uint8_t data[4096];
	struct tcp_sock *a, *s = io_up(&a, 0);
	struct answer r = write_r2t(s, 9, 65536);
	ftcp_h2c(s, false, false, 10, r.ttag, 0, data, sizeof(data), false);
	expect_gone(s, true, NVME_TCP_FES_INVALID_HEADER_FIELD);
	ftcp_eof(a);
	nvmet_tcp_poll(64);
}

Test(tcp_hostile, h2c_datao_gap_terminates)
{
	static uint8_t data[4096];
	struct tcp_sock *a, *s = io_up(&a, 0);
	struct answer r = write_r2t(s, 9, 65536);
	ftcp_h2c(s, false, false, 9, r.ttag, 0, data, sizeof(data), false);
	ftcp_h2c(s, false, false, 9, r.ttag, 8192, data, sizeof(data), false); /* 4096..8191 skipped */
	expect_gone(s, true, NVME_TCP_FES_DATA_OUT_OF_RANGE);
	ftcp_eof(a);
	nvmet_tcp_poll(64);
}

Test(tcp_hostile, h2c_larger_than_maxh2cdata_terminates)
{
	static uint8_t data[NVMET_TCP_MAXH2CDATA + 4096];
	struct tcp_sock *a, *s = io_up(&a, 0);
	struct answer r = write_r2t(s, 9, 256 * 1024);
	ftcp_h2c(s, false, false, 9, r.ttag, 0, data, sizeof(data), false);
	expect_gone(s, true, 0);
	ftcp_eof(a);
	nvmet_tcp_poll(64);
}

Test(tcp_hostile, write_dropped_halfway_frees_its_buffers)
{
	static uint8_t data[8192];
	struct tcp_sock *a, *s = io_up(&a, 0);
	struct answer r = write_r2t(s, 9, 65536);
	ftcp_h2c(s, false, false, 9, r.ttag, 0, data, sizeof(data), false);
	host_leaves(a, s); /* the rest never comes */
}

/* Bytes of a 128 KiB H2CData PDU (131,096 with its header) that the transport takes rather
 * than wait for the rest (conn_rx_may_wait): more than the peer's window (the fake's 65,535),
 * which with them falls short of completing the PDU. */
#define HALF_H2C 65550

/* Half an H2CData PDU in (its data placed straight behind the request's segments, where the
 * framer puts an R2T's data) when the host leaves: the request is put while the framer still
 * places there, the fragments move out first and go back with the framer's (no pool left
 * holding anything, ASan sees no use after free). */
Test(tcp_hostile, h2c_data_placed_halfway_when_the_host_leaves)
{
	static uint8_t data[131072], pdu[131072 + 256];
	struct tcp_sock *a, *s = io_up(&a, 0);
	struct answer r = write_r2t(s, 9, sizeof(data));
	size_t n = nth_h2c(pdu, sizeof(pdu), false, false, 9, r.ttag, 0, data, sizeof(data), true);
	cr_assert_gt(n, HALF_H2C);
	ftcp_send(s, pdu, HALF_H2C); /* the header and part of the data: taken, not waited for */
	cr_assert(ftcp_open(s));
	cr_assert_eq(s->rx_off, s->rx_len, "the framer has it (%zu of %zu taken)", s->rx_off, s->rx_len);
	host_leaves(a, s);
}

/* The same with the R2T's deadline passing while its data is half in: the connection ends
 * (late R2T data), the placed fragments go back. */
Test(tcp_hostile, h2c_data_placed_halfway_when_the_r2t_times_out)
{
	static uint8_t data[131072], pdu[131072 + 256];
	struct tcp_sock *a, *s = io_up(&a, 0);
	struct answer r = write_r2t(s, 9, sizeof(data));
	size_t n = nth_h2c(pdu, sizeof(pdu), false, false, 9, r.ttag, 0, data, sizeof(data), true);
	cr_assert_gt(n, HALF_H2C);
	ftcp_send(s, pdu, HALF_H2C);
	cr_assert(ftcp_open(s));
	cr_assert_eq(s->rx_off, s->rx_len, "the framer has it (%zu of %zu taken)", s->rx_off, s->rx_len);
	fake_clock_advance((NVMET_TCP_R2T_TIMEOUT_MS + 200) * NSEC_PER_MSEC);
	ftcp_pass();
	cr_assert_not(ftcp_open(s), "closed: the rest never came");
	ftcp_eof(a);
	nvmet_tcp_poll(64);
	cr_assert_eq(nvmet_tcp_conn_count(), 0);
}

/* --- capsules --- */

Test(tcp_hostile, in_capsule_data_beyond_ioccsz_is_refused)
{
	static uint8_t data[NVMET_TCP_IN_CAPSULE + 4096];
	struct tcp_sock *a, *s = io_up(&a, 0);
	struct nvme_sqe sqe = write_sqe(4, 0, sizeof(data) / 512, sizeof(data));
	ftcp_capsule(s, false, false, &sqe, data, sizeof(data));
	/* either a clean status or the end of the connection: never a success */
	struct answer ans;
	while (next(s, &ans))
		cr_assert(ans.type != NVME_TCP_CAPSULE_RESP || ans.status != 0, "accepted %zu B in-capsule", sizeof(data));
	host_leaves(a, s);
}

Test(tcp_hostile, in_capsule_length_mismatch_is_refused)
{
	static uint8_t data[4096];
	struct tcp_sock *a, *s = io_up(&a, 0);
	struct nvme_sqe sqe = write_sqe(4, 0, 16, 8192); /* SGL says 8 KiB, 4 KiB follow */
	ftcp_capsule(s, false, false, &sqe, data, sizeof(data));
	struct answer ans;
	while (next(s, &ans))
		cr_assert(ans.type != NVME_TCP_CAPSULE_RESP || ans.status != 0, "a short in-capsule write succeeded");
	host_leaves(a, s);
}

Test(tcp_hostile, unknown_opcodes_get_invalid_opcode)
{
	struct tcp_sock *a, *s = io_up(&a, 0);
	struct nvme_sqe sqe = ft_sqe(0x7e, 1, 1, 0);
	ftcp_capsule(s, false, false, &sqe, NULL, 0);
	expect_status(s, NVMET_SC_INVALID_OPCODE);
	sqe = ft_sqe(0xc3, 2, 0, 0);
	ftcp_capsule(a, false, false, &sqe, NULL, 0);
	expect_status(a, NVMET_SC_INVALID_OPCODE);
	/* an unknown fabrics command type */
	sqe = ft_sqe(NVMF_OPC_FABRICS, 3, 0, 0);
	struct nvmf_cmd f = nvmf_cmd_of(&sqe);
	f.fctype = 0x3f;
	sqe = nvmf_cmd_sqe(&f);
	ftcp_capsule(a, false, false, &sqe, NULL, 0);
	expect_status(a, NVMET_SC_INVALID_OPCODE);
	/* and the queues still work */
	sqe = ft_sqe(NVME_CMD_FLUSH, 4, 1, 0);
	ftcp_capsule(s, false, false, &sqe, NULL, 0);
	expect_status(s, 0);
	host_leaves(a, s);
}

Test(tcp_hostile, bad_sgl_types_and_prps_are_refused)
{
	static uint8_t data[4096];
	struct tcp_sock *a, *s = io_up(&a, 0);
	struct answer ans;
	/* a Last Segment descriptor as SGL1 (a fabrics command has one data block): SGL
	 * Descriptor Type Invalid, no R2T */
	struct nvme_sqe sqe = write_sqe(6, 0, 8, 4096);
	sqe.dptr.sgl1.id = NVME_SGL_ID(NVME_SGL_TYPE_LAST_SEGMENT);
	ftcp_capsule(s, false, false, &sqe, NULL, 0);
	expect_status(s, NVMET_SC_SGL_TYPE_INVALID);
	/* a keyed SGL data block (RDMA's) on TCP: never a success (the data may be fetched first) */
	sqe = write_sqe(7, 0, 8, 4096);
	sqe.dptr.sgl1.id = 0x40;
	ftcp_capsule(s, false, false, &sqe, NULL, 0);
	cr_assert(next(s, &ans));
	if (ans.type == NVME_TCP_R2T) {
		ftcp_h2c(s, false, false, 7, ans.ttag, 0, data, sizeof(data), true);
		cr_assert(next(s, &ans));
	}
	cr_assert_eq(ans.type, NVME_TCP_CAPSULE_RESP);
	cr_assert_eq(ans.status, NVMET_SC_SGL_TYPE_INVALID);
	/* PRPs (PSDT 0) on a fabrics queue */
	sqe = write_sqe(8, 0, 8, 4096);
	sqe.flags &= (uint8_t)~NVME_SQE_PSDT_MASK;
	ftcp_capsule(s, false, false, &sqe, NULL, 0);
	expect_status(s, NVMET_SC_INVALID_FIELD);
	/* the transport's own descriptor works */
	sqe = write_sqe(9, 0, 8, 4096);
	sqe.dptr.sgl1.id = NVMF_SGL_ID_TRANSPORT;
	ftcp_capsule(s, false, false, &sqe, NULL, 0);
	cr_assert(next(s, &ans));
	cr_assert_eq(ans.type, NVME_TCP_R2T);
	ftcp_h2c(s, false, false, 9, ans.ttag, 0, data, sizeof(data), true);
	expect_status(s, 0);
	host_leaves(a, s);
}

Test(tcp_hostile, write_larger_than_mdts_is_refused)
{
	struct tcp_sock *a, *s = io_up(&a, 0);
	uint32_t len = NVMET_TCP_MAX_XFER * 2;
	struct nvme_sqe sqe = write_sqe(8, 0, len / 512, len);
	ftcp_capsule(s, false, false, &sqe, NULL, 0);
	struct answer ans;
	cr_assert(next(s, &ans));
	cr_assert(ans.type != NVME_TCP_R2T, "an R2T for %u bytes beyond MDTS", len);
	cr_assert(ans.type == NVME_TCP_C2H_TERM_REQ || (ans.type == NVME_TCP_CAPSULE_RESP && ans.status != 0));
	host_leaves(a, s);
}

Test(tcp_hostile, bad_fabrics_commands_get_clean_statuses)
{
	struct tcp_sock *s = established(0, 4096, 0);
	uint8_t cd[1024];
	/* commands before Connect: sequence error */
	struct nvme_sqe sqe = ft_sqe(NVME_ADM_KEEP_ALIVE, 1, 0, 0);
	ftcp_capsule(s, false, false, &sqe, NULL, 0);
	expect_status(s, NVMET_SC_CMD_SEQ_ERROR);
	/* Connect with a short data block */
	sqe = ft_connect_sqe(0, 31, 0);
	ft_connect_data(cd, HOST, VOL0, 0xffff);
	ftcp_capsule(s, false, false, &sqe, cd, 512);
	struct answer ans;
	cr_assert(next(s, &ans));
	cr_assert(ans.type == NVME_TCP_C2H_TERM_REQ || (ans.type == NVME_TCP_CAPSULE_RESP && ans.status != 0));
	if (ans.type == NVME_TCP_CAPSULE_RESP) {
		/* an unknown subsystem */
		ft_connect_data(cd, HOST, "nqn.2026-11.org.p2pstore:nope", 0xffff);
		ftcp_capsule(s, false, false, &sqe, cd, sizeof(cd));
		expect_status(s, NVMET_SC_CONNECT_INVALID_PARAM);
		/* an I/O queue for a controller that does not exist */
		sqe = ft_connect_sqe(1, 31, 0);
		ft_connect_data(cd, HOST, VOL0, 77);
		ftcp_capsule(s, false, false, &sqe, cd, sizeof(cd));
		expect_status(s, NVMET_SC_CONNECT_INVALID_PARAM);
		/* sqsize 0 */
		sqe = ft_connect_sqe(0, 0, 0);
		ft_connect_data(cd, HOST, VOL0, 0xffff);
		ftcp_capsule(s, false, false, &sqe, cd, sizeof(cd));
		expect_status(s, NVMET_SC_CONNECT_INVALID_PARAM);
		/* now a good one, then a second Connect on the same queue */
		admin_up(s, false);
		sqe = ft_connect_sqe(0, 31, 0);
		ftcp_capsule(s, false, false, &sqe, cd, sizeof(cd));
		expect_status(s, NVMET_SC_CMD_SEQ_ERROR);
		/* Property Set of CAP (read-only), Property Get of an unknown offset */
		sqe = ft_prop_sqe(true, true, NVMF_PROP_CAP, 0);
		ftcp_capsule(s, false, false, &sqe, NULL, 0);
		expect_status(s, NVMET_SC_INVALID_FIELD);
		sqe = ft_prop_sqe(false, false, 0x1000, 0);
		ftcp_capsule(s, false, false, &sqe, NULL, 0);
		expect_status(s, NVMET_SC_INVALID_FIELD);
	}
	ftcp_eof(s);
	nvmet_tcp_poll(64);
}

/* The host sends more commands than its queue holds while the target cannot answer
 * (no send space): the transport stops or terminates, holds a bounded amount, and frees
 * everything when the host goes. */
Test(tcp_hostile, more_commands_than_the_queue_holds)
{
	struct tcp_sock *a, *s = io_up(&a, 0);
	s->space = 0;
	for (unsigned i = 0; i < 3 * NVMET_TCP_QUEUE_DEPTH; i++) {
		struct nvme_sqe sqe = ft_sqe(NVME_CMD_FLUSH, (uint16_t)i, 1, 0);
		ftcp_capsule(s, false, false, &sqe, NULL, 0);
	}
	cr_assert_leq(nvmet_tcp_conn_count(), 2);
	ftcp_ack(s);
	unsigned ok = 0;
	struct answer ans;
	while (next(s, &ans))
		ok += ans.type == NVME_TCP_CAPSULE_RESP && ans.status == 0;
	cr_assert_leq(ok, 3 * NVMET_TCP_QUEUE_DEPTH);
	host_leaves(a, s);
}

/* Keep-alive expiry with commands at the transport: the connections close from the
 * poll loop, nothing leaks. */
Test(tcp_hostile, keep_alive_expiry_with_a_write_waiting_for_data)
{
	static uint8_t data[4096];
	struct tcp_sock *a = established(0, 4096, 0);
	uint8_t cd[1024];
	struct nvme_sqe sqe = ft_connect_sqe(0, 31, 1000);
	ft_connect_data(cd, HOST, VOL0, 0xffff);
	ftcp_capsule(a, false, false, &sqe, cd, sizeof(cd));
	const uint8_t *p;
	cr_assert((p = next_pdu(a)));
	uint16_t cntlid = (uint16_t)(p[8] | p[9] << 8);
	sqe = ft_prop_sqe(true, false, NVMF_PROP_CC, NVME_CC_EN | (6u << NVME_CC_IOSQES_SHIFT) | (4u << NVME_CC_IOCQES_SHIFT));
	ftcp_capsule(a, false, false, &sqe, NULL, 0);
	expect_status(a, 0);
	struct tcp_sock *s = established(1, 4096, 0);
	sqe = ft_connect_sqe(1, 31, 0);
	ft_connect_data(cd, HOST, VOL0, cntlid);
	ftcp_capsule(s, false, false, &sqe, cd, sizeof(cd));
	expect_status(s, 0);
	struct answer r = write_r2t(s, 9, 65536);
	ftcp_h2c(s, false, false, 9, r.ttag, 0, data, sizeof(data), false);
	/* traffic based keep-alive: the commands after Connect count as traffic for the
	 * first KATO, so the controller expires one KATO later */
	fake_clock_advance(1100 * NSEC_PER_MSEC);
	timer_queue_run(&timer_default_queue, clock_now_ns());
	cr_assert_eq(nvmet_stats()->kato_expired, 0);
	fake_clock_advance(1100 * NSEC_PER_MSEC);
	timer_queue_run(&timer_default_queue, clock_now_ns());
	cr_assert_eq(nvmet_stats()->kato_expired, 1);
	for (int i = 0; i < 4; i++)
		nvmet_tcp_poll(64);
	timer_queue_run(&timer_default_queue, clock_now_ns());
	cr_assert_not(ftcp_open(a));
	cr_assert_not(ftcp_open(s));
	cr_assert_eq(nvmet_tcp_conn_count(), 0);
	cr_assert_eq(nvmet_ctrl_count(), 0);
}

/* The console's view: each queue knows the host's address and port. */
Test(tcp_hostile, queues_know_their_peer)
{
	struct tcp_sock *a, *s = io_up(&a, 0);
	struct list_node *it;
	unsigned seen = 0;
	cr_assert_eq(nvmet_queue_count(), 2);
	list_for_each(&nvmet_tgt.queues, it) {
		const struct nvmet_queue *q = container_of(it, struct nvmet_queue, node);
		cr_assert_eq(q->peer_addr, FTCP_PEER_ADDR);
		cr_assert_eq(q->peer_port, 40000 + q->qid, "qid %u came from connection %u", q->qid, q->qid);
		seen++;
	}
	cr_assert_eq(seen, 2);
	host_leaves(a, s);
}

/* --- admission: connections and controllers per host address, eviction, keep-alive --- */

#define PEER(n) (0x0b000000u + (n)) /* 11.0.0.n: hosts other than FTCP_PEER_ADDR */

/* Connection i from host address raddr, through its ICReq (not Connected). */
static struct tcp_sock *icreq_from(unsigned i, uint32_t raddr)
{
	struct tcp_sock *s = ftcp_arrive_from(i, 4096, raddr);
	const uint8_t *p;
	cr_assert(s->accepted && ftcp_open(s), "connection %u taken", i);
	ftcp_icreq(s, 0, 0, 0);
	cr_assert((p = next_pdu(s)));
	cr_assert_eq(p[0], NVME_TCP_ICRESP);
	return s;
}

/* Admin Connect to subnqn with kato on s: the Connect's status (SCT << 8 | SC); *cntlid
 * gets the controller ID. */
static uint16_t connect_admin_to(struct tcp_sock *s, const char *subnqn, uint32_t kato, uint16_t *cntlid)
{
	uint8_t cd[1024];
	struct nvme_sqe sqe = ft_connect_sqe(0, 31, kato);
	struct nth_resp r = { 0 };
	ft_connect_data(cd, HOST, subnqn, 0xffff);
	ftcp_capsule(s, false, false, &sqe, cd, sizeof(cd));
	cr_assert_eq(ftcp_resp(s, &r), 1, "the Connect is answered");
	if (cntlid)
		*cntlid = (uint16_t)le32_get(r.cqe.dw0);
	return r.status;
}

/* I/O queue qid of controller cntlid on s: the Connect's status. */
static uint16_t connect_io_to(struct tcp_sock *s, uint16_t cntlid, uint16_t qid)
{
	uint8_t cd[1024];
	struct nvme_sqe sqe = ft_connect_sqe(qid, 31, 0);
	struct nth_resp r = { 0 };
	ft_connect_data(cd, HOST, VOL0, cntlid);
	ftcp_capsule(s, false, false, &sqe, cd, sizeof(cd));
	cr_assert_eq(ftcp_resp(s, &r), 1, "the Connect is answered");
	return r.status;
}

/* Every connection closed by its host, everything freed (the teardown checks the rest). */
static void all_leave(unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		if (ftcp_conns[i].accepted && ftcp_open(&ftcp_conns[i]))
			ftcp_eof(&ftcp_conns[i]);
	nvmet_tcp_poll(64);
	timer_queue_run(&timer_default_queue, clock_now_ns());
	cr_assert_eq(nvmet_tcp_conn_count(), 0);
	cr_assert_eq(nvmet_ctrl_count(), 0);
}

/* Issue 13.5: a full connection pool evicts the oldest connection that never completed
 * Connect instead of refusing a newcomer; a Connected one is never evicted, and TCP is
 * told so (tcp_set_authorised). Every connection gets TCP keep-alive. */
Test(tcp_hostile, a_full_pool_evicts_the_oldest_connection_that_never_connected)
{
	struct tcp_sock *a = icreq_from(0, FTCP_PEER_ADDR);
	cr_assert_not(a->authorised, "not before Connect");
	cr_assert_eq(a->keepalive_idle_ns, NVMET_TCP_KEEPALIVE_IDLE_MS * NSEC_PER_MSEC);
	cr_assert_eq(connect_admin_to(a, VOL0, 0, NULL), 0);
	cr_assert(a->authorised, "told TCP once Connect succeeded");
	/* idle ICReqs from many hosts fill the pool */
	for (unsigned i = 1; i < NVMET_TCP_MAX_CONNS; i++)
		icreq_from(i, PEER(i));
	cr_assert_eq(nvmet_tcp_conn_count(), NVMET_TCP_MAX_CONNS);
	/* a newcomer: the oldest unconnected (connection 1) goes, not the Connected one */
	struct tcp_sock *n = icreq_from(NVMET_TCP_MAX_CONNS, PEER(200));
	cr_assert(ftcp_conns[1].aborted, "the oldest connection without Connect evicted");
	cr_assert(ftcp_open(a), "the Connected connection stays");
	cr_assert(ftcp_open(&ftcp_conns[2]));
	cr_assert_eq(nvmet_tcp_stats()->evicted, 1);
	cr_assert_eq(nvmet_tcp_conn_count(), NVMET_TCP_MAX_CONNS);
	cr_assert_eq(nvmet_queue_count(), NVMET_TCP_MAX_CONNS);
	/* and the newcomer works */
	cr_assert_eq(connect_admin_to(n, VOL0, 0, NULL), 0);
	all_leave(NVMET_TCP_MAX_CONNS + 1);
}

/* Issue 13.5: one host address holds at most NVMET_TCP_CONNS_PER_PEER connections: beyond
 * it its own oldest unconnected one is evicted (never another host's), and when all of
 * its connections are Connected the newcomer is refused. */
Test(tcp_hostile, one_host_address_holds_at_most_its_share_of_connections)
{
	struct tcp_sock *other = icreq_from(0, PEER(1));
	for (unsigned i = 1; i <= NVMET_TCP_CONNS_PER_PEER; i++)
		icreq_from(i, PEER(2));
	cr_assert_eq(nvmet_tcp_stats()->evicted, 0);
	icreq_from(NVMET_TCP_CONNS_PER_PEER + 1, PEER(2));
	cr_assert_eq(nvmet_tcp_stats()->evicted, 1);
	cr_assert(ftcp_conns[1].aborted, "the host's own oldest goes");
	cr_assert(ftcp_open(other), "never another host's");
	cr_assert_eq(nvmet_tcp_conn_count(), NVMET_TCP_CONNS_PER_PEER + 1);
	all_leave(NVMET_TCP_CONNS_PER_PEER + 2);

	/* all Connected: 3 controllers, I/O queues up to the share; one more is refused */
	unsigned i = 0, q = 0;
	uint16_t cntlid = 0;
	while (i < NVMET_TCP_CONNS_PER_PEER) {
		struct tcp_sock *s = icreq_from(i++, PEER(3));
		if (q == 0 || q == NVMET_MAX_IO_QUEUES) {
			cr_assert_eq(connect_admin_to(s, VOL0, 0, &cntlid), 0);
			struct nvme_sqe sqe = ft_prop_sqe(true, false, NVMF_PROP_CC,
							  NVME_CC_EN | (6u << NVME_CC_IOSQES_SHIFT) |
								  (4u << NVME_CC_IOCQES_SHIFT));
			ftcp_capsule(s, false, false, &sqe, NULL, 0);
			expect_status(s, 0);
			q = 1;
			continue;
		}
		cr_assert_eq(connect_io_to(s, cntlid, (uint16_t)q++), 0, "I/O queue %u", q - 1);
	}
	struct tcp_sock *late = ftcp_arrive_from(i, 4096, PEER(3));
	cr_assert(late->aborted, "refused: every connection of that host is Connected");
	cr_assert_eq(nvmet_tcp_stats()->peer_refused, 1);
	cr_assert_eq(nvmet_tcp_stats()->evicted, 1, "nothing evicted");
	struct tcp_sock *b = icreq_from(i + 1, PEER(4));
	cr_assert_eq(connect_admin_to(b, VOL0, 0, NULL), 0, "another host still gets in");
	all_leave(i + 2);
}

/* Issue 13.5: controllers per host address are bounded (a peer cannot fill the
 * controller pool with discovery controllers); another host still gets one. */
Test(tcp_hostile, one_host_address_holds_at_most_its_share_of_controllers)
{
	unsigned i;
	for (i = 0; i < NVMET_CTRLS_PER_PEER; i++)
		cr_assert_eq(connect_admin_to(icreq_from(i, PEER(5)), NVMET_DISCOVERY_NQN, 0, NULL), 0);
	struct tcp_sock *s = icreq_from(i++, PEER(5));
	cr_assert_eq(connect_admin_to(s, NVMET_DISCOVERY_NQN, 0, NULL), NVMET_SC_CONNECT_CTRL_BUSY);
	cr_assert_eq(connect_admin_to(s, VOL0, 0, NULL), NVMET_SC_CONNECT_CTRL_BUSY, "any subsystem");
	cr_assert_eq(nvmet_stats()->peer_ctrl_limit, 2);
	cr_assert_eq(connect_admin_to(icreq_from(i++, PEER(6)), NVMET_DISCOVERY_NQN, 0, NULL), 0);
	cr_assert_eq(nvmet_ctrl_count(), NVMET_CTRLS_PER_PEER + 1);
	/* a discovery controller goes with its connection */
	ftcp_eof(&ftcp_conns[0]);
	cr_assert_eq(nvmet_ctrl_count(), NVMET_CTRLS_PER_PEER);
	cr_assert_eq(connect_admin_to(s, NVMET_DISCOVERY_NQN, 0, NULL), 0, "room again for that host");
	all_leave(i);
}

/* Issue 13.5: a discovery controller connected with KATO 0 is reaped after
 * NVMET_DISC_KATO_MS without commands (as Linux nvmet), its connection closed. */
Test(tcp_hostile, an_idle_discovery_controller_with_kato_0_is_reaped)
{
	struct tcp_sock *s = icreq_from(0, PEER(7));
	cr_assert_eq(connect_admin_to(s, NVMET_DISCOVERY_NQN, 0, NULL), 0);
	fake_clock_advance((NVMET_DISC_KATO_MS - 1000) * NSEC_PER_MSEC);
	timer_queue_run(&timer_default_queue, clock_now_ns());
	nvmet_tcp_poll(64);
	cr_assert(ftcp_open(s));
	fake_clock_advance(2000 * NSEC_PER_MSEC);
	timer_queue_run(&timer_default_queue, clock_now_ns());
	nvmet_tcp_poll(64);
	nvmet_tcp_poll(64);
	timer_queue_run(&timer_default_queue, clock_now_ns());
	cr_assert_not(ftcp_open(s), "closed after %u ms idle", NVMET_DISC_KATO_MS);
	cr_assert_eq(nvmet_stats()->kato_expired, 1);
	cr_assert_eq(nvmet_ctrl_count(), 0);
	cr_assert_eq(nvmet_tcp_conn_count(), 0);
}

/* Keep-alive is traffic based, as Linux nvmet's (CTRATT.TBKAS): commands other than Keep
 * Alive keep a controller alive; without any command it expires within 2 x KATO. */
Test(tcp_hostile, keep_alive_is_traffic_based)
{
	struct tcp_sock *s = icreq_from(0, PEER(8));
	cr_assert_eq(connect_admin_to(s, VOL0, 1000, NULL), 0);
	for (int i = 0; i < 10; i++) {
		struct nvme_sqe sqe = ft_prop_sqe(false, false, NVMF_PROP_CSTS, 0);
		ftcp_capsule(s, false, false, &sqe, NULL, 0);
		expect_status(s, 0);
		fake_clock_advance(600 * NSEC_PER_MSEC);
		timer_queue_run(&timer_default_queue, clock_now_ns());
	}
	nvmet_tcp_poll(64);
	cr_assert(ftcp_open(s), "6 s of Property Gets, no Keep Alive: alive");
	cr_assert_eq(nvmet_stats()->kato_expired, 0);
	fake_clock_advance(2000 * NSEC_PER_MSEC);
	timer_queue_run(&timer_default_queue, clock_now_ns());
	cr_assert_eq(nvmet_stats()->kato_expired, 1, "silent for 2 x KATO: expired");
	all_leave(1);
}

/* Issue 13.7: a host with more commands outstanding than its queue's SQSIZE + 1 entries
 * gets Command Sequence Error for the extra ones (nothing run, nothing placed); the
 * queue goes on once its answers are out. */
Test(tcp_hostile, commands_beyond_sqsize_are_refused)
{
	struct tcp_sock *a = established(0, 4096, 0);
	uint16_t cntlid = admin_up(a, false);
	struct tcp_sock *s = established(1, 4096, 0);
	uint8_t cd[1024];
	struct nvme_sqe sqe = ft_connect_sqe(1, 3, 0); /* SQSIZE 3: 4 entries */
	ft_connect_data(cd, HOST, VOL0, cntlid);
	ftcp_capsule(s, false, false, &sqe, cd, sizeof(cd));
	expect_status(s, 0);
	s->space = 0; /* the answers cannot go out: the commands stay outstanding */
	for (unsigned i = 0; i < 6; i++) {
		sqe = ft_sqe(NVME_CMD_FLUSH, (uint16_t)(100 + i), 1, 0);
		ftcp_capsule(s, false, false, &sqe, NULL, 0);
	}
	cr_assert_eq(nvmet_tcp_stats()->sq_overflows, 2);
	cr_assert_eq(nvmet_stats()->sq_overflows, 2);
	ftcp_ack(s);
	unsigned ok = 0, seq = 0;
	struct answer ans;
	while (next(s, &ans)) {
		cr_assert_eq(ans.type, NVME_TCP_CAPSULE_RESP);
		ok += ans.status == 0;
		seq += ans.status == NVMET_SC_CMD_SEQ_ERROR;
	}
	cr_assert_eq(ok, 4, "SQSIZE + 1 commands run");
	cr_assert_eq(seq, 2, "the rest refused");
	sqe = ft_sqe(NVME_CMD_FLUSH, 200, 1, 0);
	ftcp_capsule(s, false, false, &sqe, NULL, 0);
	expect_status(s, 0);
	host_leaves(a, s);
}

/* One peer cannot starve another (issue 13, 4 on the target's pools): a host that never
 * reads its socket fills its share of the DRAM data buffers with unacknowledged reads
 * (more wait on its own connection), and another host still connects a new controller
 * and gets a Write and a Read through (before the shares, the reads took every chunk
 * and the other host's Read waited forever). */
Test(tcp_hostile, a_peer_that_never_reads_cannot_starve_another_host)
{
	char why[160];
	struct tcp_sock *a, *s = io_up(&a, 0);
	const uint32_t len = NVMET_TCP_MAX_XFER;
	nvmet_tcp_set_p2p(false); /* every read's data in DRAM chunks */
	s->space = 0;
	for (unsigned k = 0; k < NVMET_TCP_BUFS / (len / NVMET_TCP_BUF_SIZE) + 4; k++) {
		struct nvme_sqe sqe = ft_sqe(NVME_CMD_READ, (uint16_t)(10 + k), 1, len);
		sqe.cdw12 = le32_make(len / 512 - 1);
		ftcp_capsule(s, false, false, &sqe, NULL, 0);
	}
	cr_assert_gt(nvmet_tcp_waiting(), 0, "the hostile host's own reads wait");
	cr_assert_eq(ftcp_liveness(HOST, VOL0, why, sizeof(why)), 0, "%s", why);
	cr_assert_gt(nvmet_tcp_stats()->host_share, 0);
	nvmet_tcp_set_p2p(true);
	host_leaves(a, s);
}

/* An I/O queue (qid 1) of a fresh controller of host address raddr on connection i + 1,
 * its admin queue (enabled) on i. */
static struct tcp_sock *io_up_from(unsigned i, uint32_t raddr, struct tcp_sock **admin)
{
	uint16_t cntlid;
	*admin = icreq_from(i, raddr);
	cr_assert_eq(connect_admin_to(*admin, VOL0, 0, &cntlid), 0);
	struct nvme_sqe sqe = ft_prop_sqe(true, false, NVMF_PROP_CC,
					  NVME_CC_EN | (6u << NVME_CC_IOSQES_SHIFT) | (4u << NVME_CC_IOCQES_SHIFT));
	ftcp_capsule(*admin, false, false, &sqe, NULL, 0);
	expect_status(*admin, 0);
	struct tcp_sock *s = icreq_from(i + 1, raddr);
	cr_assert_eq(connect_io_to(s, cntlid, 1), 0);
	return s;
}

/* The R2T of a 128 KiB write, due on s: true and its TTAG when it came. */
static bool r2t_next(struct tcp_sock *s, uint16_t *ttag)
{
	struct answer a;
	if (!next(s, &a))
		return false;
	cr_assert_eq(a.type, NVME_TCP_R2T, "an R2T, got type %u status 0x%x", a.type, a.status);
	cr_assert_eq(a.r2tl, 131072);
	*ttag = a.ttag;
	return true;
}

/* The data of the 128 KiB write cid (R2T ttag) in one H2CData; its status must be 0. */
static void write_data(struct tcp_sock *s, uint16_t cid, uint16_t ttag)
{
	static uint8_t w[131072];
	ftcp_h2c(s, false, false, cid, ttag, 0, w, sizeof(w), true);
	expect_status(s, 0);
	nvmet_tcp_poll(64);
}

/* The write budget is work-conserving (NVMET_TCP_HOST_SHARE): host A alone takes all of it
 * (512 KiB here: four 128 KiB writes, twice its share; its fifth waits for the budget). Host B arrives
 * with two writes, which wait. From then on A gets no more until it is back within its
 * share: as A's writes complete, B's get their R2Ts first, and A's fifth only once A holds
 * less than its share again. Before, A alone had only its share (two writes); with a
 * budget lent whatever waits, A's fifth took the budget A's first write gave back. */
Test(tcp_hostile, the_write_budget_is_lent_to_a_host_alone_and_given_back_to_a_newcomer)
{
	const uint32_t len = 131072, n = 4;
	struct tcp_sock *aa, *a = io_up_from(0, PEER(20), &aa), *ba, *b;
	uint16_t ta[8], tb[2];
	nvmet_tcp_set_write_budget(n * len); /* 512 KiB: A's share is two writes */
	for (uint16_t k = 0; k <= n; k++) {
		struct nvme_sqe sqe = write_sqe((uint16_t)(10 + k), k * 256u, 256, len);
		ftcp_capsule(a, false, false, &sqe, NULL, 0);
	}
	for (unsigned k = 0; k < n; k++)
		cr_assert(r2t_next(a, &ta[k]), "A alone: R2T %u of %u", k + 1, n);
	cr_assert_not(r2t_next(a, &ta[4]), "A's fifth write waits for the budget");
	cr_assert_eq(nvmet_tcp_stats()->write_lent, n / 2, "two writes beyond A's share");

	b = io_up_from(2, PEER(21), &ba);
	for (uint16_t k = 0; k < 2; k++) {
		struct nvme_sqe sqe = write_sqe((uint16_t)(60 + k), 1024u + k * 256u, 256, len);
		ftcp_capsule(b, false, false, &sqe, NULL, 0);
	}
	nvmet_tcp_poll(64);
	cr_assert_not(r2t_next(b, &tb[0]), "the budget is A's: B waits");
	cr_assert_eq(nvmet_tcp_waiting(), 3);

	write_data(a, 10, ta[0]); /* A holds 3 of 4 */
	cr_assert(r2t_next(b, &tb[0]), "B's first write got the budget A gave back");
	cr_assert_not(r2t_next(a, &ta[4]), "A, beyond its share while B waits, gets no more");
	cr_assert_gt(nvmet_tcp_stats()->host_share, 0);

	write_data(a, 11, ta[1]); /* A holds 2 of 4: its share */
	cr_assert(r2t_next(b, &tb[1]), "B's second write");
	cr_assert_not(r2t_next(a, &ta[4]), "A at its share while B waited: no more");
	cr_assert_eq(nvmet_tcp_waiting(), 1);

	write_data(a, 12, ta[2]); /* A holds 1: within its share again */
	cr_assert(r2t_next(a, &ta[4]), "A back within its share gets its fifth write through");
	cr_assert_eq(nvmet_tcp_waiting(), 0);

	write_data(b, 60, tb[0]);
	write_data(b, 61, tb[1]);
	write_data(a, 13, ta[3]);
	write_data(a, 14, ta[4]);
	nvmet_tcp_set_write_budget(NVMET_TCP_WRITE_HELD_MAX);
	all_leave(4);
}

/* A capsule without data on s: its status (SCT << 8 | SC), DW0 in *dw0. */
static uint16_t status_of(struct tcp_sock *s, const struct nvme_sqe *sqe, uint32_t *dw0)
{
	struct nth_resp r = { 0 };
	ftcp_capsule(s, false, false, sqe, NULL, 0);
	cr_assert_eq(ftcp_resp(s, &r), 1, "answered");
	if (dw0)
		*dw0 = le32_get(r.cqe.dw0);
	return r.status;
}

/* Set Features Keep Alive Timer 0 on a discovery controller keeps NVMET_DISC_KATO_MS, as
 * at Connect: a discovery session cannot make itself unbounded. */
Test(tcp_hostile, a_discovery_controller_cannot_switch_its_keep_alive_off)
{
	struct tcp_sock *s = icreq_from(0, PEER(9));
	uint32_t kato = 0;
	cr_assert_eq(connect_admin_to(s, NVMET_DISCOVERY_NQN, 30000, NULL), 0);
	struct nvme_sqe sqe = ft_prop_sqe(true, false, NVMF_PROP_CC,
					  NVME_CC_EN | (6u << NVME_CC_IOSQES_SHIFT) | (4u << NVME_CC_IOCQES_SHIFT));
	cr_assert_eq(status_of(s, &sqe, NULL), 0);
	sqe = ft_sqe(NVME_ADM_SET_FEATURES, 30, 0, 0);
	sqe.cdw10 = le32_make(NVME_FEAT_KATO);
	sqe.cdw11 = le32_make(0);
	cr_assert_eq(status_of(s, &sqe, NULL), 0);
	sqe = ft_sqe(NVME_ADM_GET_FEATURES, 31, 0, 0);
	sqe.cdw10 = le32_make(NVME_FEAT_KATO);
	cr_assert_eq(status_of(s, &sqe, &kato), 0);
	cr_assert_eq(kato, NVMET_DISC_KATO_MS);
	for (int i = 0; i < 3; i++) {
		fake_clock_advance(NVMET_DISC_KATO_MS * NSEC_PER_MSEC);
		timer_queue_run(&timer_default_queue, clock_now_ns());
	}
	cr_assert_eq(nvmet_stats()->kato_expired, 1, "reaped when idle");
	all_leave(1);
}
