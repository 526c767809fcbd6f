// sources: drivers/nvme/target/nvmet_tcp.c drivers/nvme/target/nvmet_dram_reason.c drivers/nvme/target/nvmet_tcp_buf.c drivers/nvme/target/nvmet_tcp_rx.c drivers/nvme/target/nvmet_tcp_pdu.c drivers/nvme/target/nvmet_core.c drivers/nvme/target/nvmet_fabrics.c drivers/nvme/target/nvmet_auth.c drivers/nvme/target/nvmet_auth_msg.c drivers/nvme/target/nvmet_auth_key.c lib/crypto.c tests/unit/net/fake_entropy.c drivers/nvme/target/nvmet_admin.c drivers/nvme/target/nvmet_ana.c drivers/nvme/target/nvmet_referral.c drivers/nvme/target/nvmet_io.c drivers/nvme/target/nvmet_bdev_ram.c drivers/nvme/target/nvmet_config.c drivers/nic/netdev.c lib/crc32.c lib/ipv4_text.c mm/pool.c mm/dma.c lib/timer.c lib/log.c tests/unit/drivers/nvme/target/fake_nvmet_transport.c tests/unit/drivers/nvme/target/fake_tcp.c tests/unit/drivers/nvme/target/fake_cmb.c tests/unit/drivers/nvme/target/nvme_tcp_host.c
// libs: -lmbedcrypto
/*
 * NVMe/TCP transport over the fake TCP layer (fake_tcp.c, linked instead of net/tcp), the real framing and the real target core
 * with RAM disks: ICReq/ICResp negotiation (digests included), the termination rules
 * (PDU before ICReq, second ICReq, invalid header, H2CTermReq), Connect/Property/Identify
 * over CapsuleCmd with in-capsule data cut into small fragments, C2HData + CapsuleResp,
 * the TX backlog waiting for send space, keep-alive expiry closing the connections from
 * the poll loop, I/O write (in-capsule) and read round trips. Every received fragment is
 * released exactly once and every pool is back to zero after each test.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>
#include "drivers/nvme/target/nvmet.h"
#include "drivers/nvme/target/nvmet_wire.h"
#include "drivers/nvme/target/nvmet_tcp.h"
#include "drivers/nvme/target/nvmet_tcp_pdu.h"
#include "lib/clock.h"
#include "lib/crc32.h"
#include "lib/timer.h"
#include "mm/pool.h"
#include "net/tcp/tcp.h"
#include "fake_cmb.h"
#include "fake_nvmet_transport.h"
#include "fake_tcp.h"
#include "nvme_tcp_host.h"
#include "tests/unit/unit_support.h"

/* What one host address may hold (NVMET_TCP_HOST_SHARE): the tests' connections all
 * come from FTCP_PEER_ADDR. The write budget has no share while no other host waits. */
#define HOST_BUFS (NVMET_TCP_BUFS / NVMET_TCP_HOST_SHARE)
#define HOST "nqn.2014-08.org.nvmexpress:uuid:aaaaaaaa-0000-4000-8000-000000000001"
#define VOL0 "nqn.2026-11.org.p2pstore:vol0"

static const char *const config_json =
	"{ \"hosts\": [],\n"
	"  \"ports\": [\n"
	"    { \"portid\": 1, \"addr\": { \"trtype\": \"tcp\", \"adrfam\": \"ipv4\", \"traddr\": \"10.0.0.1\", \"trsvcid\": \"4420\" },\n"
	"      \"subsystems\": [ \"" VOL0 "\" ] } ],\n"
	"  \"subsystems\": [\n"
	"    { \"nqn\": \"" VOL0 "\", \"attr\": { \"allow_any_host\": \"1\", \"serial\": \"SER0\" },\n"
	"      \"namespaces\": [ { \"nsid\": 1, \"enable\": 1, \"device\": { \"path\": \"/dev/nvme0n1\" } } ] } ] }\n";

/* --- the host (fake_tcp.h, nvme_tcp_host.h) --- */

/* The next PDU the target sent on s (a valid one); false when none is there. */
static bool host_next(struct tcp_sock *s, struct nth_pdu *p)
{
	int rc = ftcp_next_pdu(s, p);
	cr_assert_geq(rc, 0, "the target sent a malformed PDU or a bad digest");
	return rc == 1;
}

/* The CapsuleResp of a command (after any C2HData, copied to rbuf): status >> 1. */
static uint16_t host_resp(struct tcp_sock *s, struct nvme_cqe *cqe, void *rbuf, uint32_t *rlen)
{
	struct nth_resp r = { .rbuf = rbuf, .rcap = rbuf ? UINT32_MAX : 0 };
	int rc = ftcp_resp(s, &r);
	cr_assert_eq(rc, 1, "a CapsuleResp (%d)", rc);
	if (cqe)
		*cqe = r.cqe;
	if (rlen)
		*rlen = r.got;
	return r.status;
}

/* --- fixture --- */

static struct nvmet_config cfg;

/* The RAM disk, watched: bios submitted and the segments of the last one (one NVMe
 * command per host I/O gathering all of its fragments). */
static const struct nvmet_bdev_ops *ram_ops;
static unsigned bios, last_nsg, last_op;
static enum mem_class last_cls;
static bool last_checked;

/* A Read/Write's segments the transport vouched for (nvmet_data.checked, the bio in its
 * request's bio_space): summed to the length, none empty, one memory class. */
static void vouched_segments_hold(const struct nvmet_bio *bio)
{
	const struct nvmet_req *req = container_of((const void *)bio, struct nvmet_req, bio_space);
	const struct nvmet_data *d = &req->data;
	last_checked = d->checked;
	if (!d->checked)
		return;
	cr_assert(d->summed, "checked only where summed");
	uint64_t sum = 0;
	for (unsigned i = 0; i < d->nsg; i++) {
		cr_assert_gt(d->sg[i].len, 0, "segment %u of %u is empty", i, d->nsg);
		cr_assert_eq(d->sg[i].addr.cls, d->sg[0].addr.cls);
		sum += d->sg[i].len;
	}
	cr_assert_eq(sum, d->len);
}

static int watch_submit(struct nvmet_bdev *b, struct nvmet_bio *bio)
{
	bios++;
	last_nsg = bio->nsg;
	last_op = bio->op;
	last_cls = bio->nsg ? bio->sg[0].addr.cls : MEM_CLASS_HOST;
	for (unsigned i = 1; i < bio->nsg; i++)
		cr_assert_eq(bio->sg[i].addr.cls, last_cls, "one command never mixes memories");
	if (bio->op == NVMET_BIO_READ || bio->op == NVMET_BIO_WRITE)
		vouched_segments_hold(bio);
	return ram_ops->submit(b, bio);
}

static void watch_close(struct nvmet_bdev *b)
{
	ram_ops->close(b);
}

static const struct nvmet_bdev_ops watch_ops = { .submit = watch_submit, .close = watch_close };

static int ram_open(void *ctx, unsigned si, const struct nvmet_cfg_ns *ns, struct nvmet_bdev *out)
{
	(void)ctx;
	(void)si;
	(void)ns;
	int rc = nvmet_bdev_ram_open(out, 4096, 9);
	if (rc == 0) {
		ram_ops = out->ops;
		out->ops = &watch_ops;
	}
	return rc;
}

static void setup(void)
{
	char err[200];
	unit_pools_begin();
	fake_clock_install();
	fcmb_reset();
	cr_assert_eq(ftcp_start(config_json, &cfg, ram_open, &fcmb_ops, err, sizeof(err)), 0, "%s", err);
	cr_assert(ftcp_listener.listener);
	cr_assert_eq(ftcp_listener.port, 4420);
}

static void teardown(void)
{
	char why[120];
	cr_assert_eq(ftcp_stop(why, sizeof(why)), 0, "%s", why);
	cr_assert_eq(fcmb_in_use, 0, "every device-memory buffer freed");
	unit_pools_end();
}

TestSuite(nvmet_tcp, .init = setup, .fini = teardown);

/* ICReq answered; digests as requested. */
static void establish(struct tcp_sock *s, uint8_t dgst)
{
	struct nth_pdu p;
	ftcp_icreq(s, 0, 0, dgst);
	cr_assert(host_next(s, &p));
	cr_assert_eq(p.type, NVME_TCP_ICRESP);
	cr_assert_eq(p.plen, 128);
	cr_assert_eq(p.hdr[8] | p.hdr[9] << 8, 0, "PFV 0");
	cr_assert_eq(p.hdr[10], 0, "CPDA 0");
	cr_assert_eq(p.hdr[11], dgst, "digests as requested");
	cr_assert_eq(le32_load(p.hdr + 12), NVMET_TCP_MAXH2CDATA);
}

static uint16_t cmd(struct tcp_sock *s, bool dg, const struct nvme_sqe *sqe, const void *data, uint32_t len,
		    struct nvme_cqe *cqe, void *rbuf, uint32_t *rlen)
{
	ftcp_capsule(s, dg, dg, sqe, data, len);
	return host_resp(s, cqe, rbuf, rlen);
}

/* Connect the admin queue and enable the controller: returns the cntlid. */
static int admin_connect(struct tcp_sock *s, bool dg, uint32_t kato)
{
	uint8_t cd[1024];
	struct nvme_cqe cqe;
	struct nvme_sqe sqe = ft_connect_sqe(0, 31, kato);
	ft_connect_data(cd, HOST, VOL0, 0xffff);
	cr_assert_eq(cmd(s, dg, &sqe, cd, sizeof(cd), &cqe, NULL, NULL), 0, "Connect");
	int cntlid = (int)(le32_get(cqe.dw0) & 0xffff);
	sqe = ft_prop_sqe(true, false, NVMF_PROP_CC,
			  NVME_CC_EN | (6u << NVME_CC_IOSQES_SHIFT) | (4u << NVME_CC_IOCQES_SHIFT));
	cr_assert_eq(cmd(s, dg, &sqe, NULL, 0, NULL, NULL, NULL), 0, "CC.EN");
	return cntlid;
}

Test(nvmet_tcp, icreq_then_peer_close)
{
	struct tcp_sock *s = ftcp_connect(0, 4096);
	cr_assert_eq(nvmet_tcp_conn_count_state(NVMET_TCP_WAIT_ICREQ), 1);
	cr_assert_eq(nvmet_queue_count(), 0, "the queue comes with the ICReq");
	establish(s, 0);
	cr_assert_eq(nvmet_tcp_conn_count_state(NVMET_TCP_ESTABLISHED), 1);
	cr_assert_eq(nvmet_queue_count(), 1);
	s->eof = true;
	s->ops->event(s, s->ctx, TCP_EV_RECV);
	cr_assert_not(s->closed, "the event only marks the connection: the poll loop receives");
	cr_assert_gt(nvmet_tcp_poll(8), 0);
	cr_assert(s->closed, "graceful close on the peer's FIN");
	cr_assert_eq(nvmet_tcp_conn_count_state(NVMET_TCP_CLOSING), 1);
	cr_assert_eq(nvmet_queue_count(), 0, "queue destroyed at close");
	cr_assert_gt(nvmet_tcp_poll(8), 0);
	cr_assert_eq(nvmet_tcp_conn_count(), 0);
}

/* Receive runs from the poll loop under a budget: a pass takes at most
 * NVMET_TCP_RX_BATCHES batches of NVMET_TCP_RX_BATCH fragments from a connection. */
Test(nvmet_tcp, receive_drained_by_the_poll_loop_under_a_budget)
{
	const size_t per_pass = NVMET_TCP_RX_BATCHES * NVMET_TCP_RX_BATCH;
	struct tcp_sock *s = ftcp_connect(0, 1); /* one byte per fragment */
	struct nth_pdu p;
	s->rx_len = nth_icreq(s->rx, FTCP_RX_MAX, 0, 0, 0, 0);
	cr_assert_gt(s->rx_len, per_pass, "the ICReq takes more than one pass");
	s->ops->event(s, s->ctx, TCP_EV_RECV);
	cr_assert_eq(s->rx_off, 0, "nothing received inside the event");
	cr_assert_gt(nvmet_tcp_poll(64), 0);
	cr_assert_eq(s->rx_off, per_pass, "one pass: the budget");
	cr_assert_not(host_next(s, &p), "no ICResp before the whole ICReq");
	while (s->rx_off < s->rx_len)
		cr_assert_gt(nvmet_tcp_poll(64), 0);
	cr_assert(host_next(s, &p));
	cr_assert_eq(p.type, NVME_TCP_ICRESP);
	cr_assert_eq(nvmet_tcp_poll(64), 0, "idle once drained");
	ftcp_eof(s);
}

static void expect_term(struct tcp_sock *s, uint16_t fes)
{
	struct nth_pdu p;
	cr_assert(host_next(s, &p));
	cr_assert_eq(p.type, NVME_TCP_C2H_TERM_REQ);
	cr_assert_eq(p.hdr[8] | p.hdr[9] << 8, fes, "FES");
	cr_assert(s->closed, "closed after the C2HTermReq");
	cr_assert_eq(nvmet_tcp_conn_count_state(NVMET_TCP_FAILED), 1);
	cr_assert_eq(nvmet_queue_count(), 0);
	nvmet_tcp_poll(8);
	cr_assert_eq(nvmet_tcp_conn_count(), 0);
}

Test(nvmet_tcp, pdu_before_icreq_is_a_sequence_error)
{
	struct tcp_sock *s = ftcp_connect(0, 7);
	struct nvme_sqe sqe = ft_sqe(NVME_ADM_KEEP_ALIVE, 1, 0, 0);
	ftcp_capsule(s, false, false, &sqe, NULL, 0);
	expect_term(s, NVME_TCP_FES_PDU_SEQUENCE_ERROR);
	cr_assert_eq(nvmet_tcp_stats()->term_sent, 1);
}

Test(nvmet_tcp, second_icreq_is_a_sequence_error)
{
	struct tcp_sock *s = ftcp_connect(0, 13);
	establish(s, 0);
	ftcp_icreq(s, 0, 0, 0);
	expect_term(s, NVME_TCP_FES_PDU_SEQUENCE_ERROR);
}

Test(nvmet_tcp, icreq_bad_pfv_terminates)
{
	struct tcp_sock *s = ftcp_connect(0, 4096);
	ftcp_icreq(s, 1, 0, 0);
	expect_term(s, NVME_TCP_FES_UNSUPPORTED_PARAMETER);
}

Test(nvmet_tcp, bad_header_digest_terminates)
{
	struct tcp_sock *s = ftcp_connect(0, 4096);
	establish(s, NVME_TCP_DGST_HDGST_ENABLE);
	struct nvme_sqe sqe = ft_sqe(NVME_ADM_KEEP_ALIVE, 1, 0, 0);
	ftcp_capsule(s, false, false, &sqe, NULL, 0); /* no digest although negotiated */
	struct nth_pdu p;
	cr_assert(host_next(s, &p));
	cr_assert_eq(p.type, NVME_TCP_C2H_TERM_REQ);
	cr_assert(s->closed);
	nvmet_tcp_poll(8);
	cr_assert_eq(nvmet_tcp_conn_count(), 0);
}

/* A CapsuleCmd whole in one fragment whose PDO lies inside its header: not taken in one step;
 * the framer refuses it as ever (C2HTermReq, Invalid Header Field, FEI the PDO's offset). */
Test(nvmet_tcp, a_whole_capsule_with_a_bad_pdo_gets_the_framers_term_req)
{
	struct tcp_sock *s = ftcp_connect(0, 4096);
	establish(s, 0);
	uint8_t pdu[NVME_TCP_CMD_HLEN + 64] = { NVME_TCP_CAPSULE_CMD, 0, NVME_TCP_CMD_HLEN, 64 };
	le32_store(pdu + 4, sizeof(pdu) - 8); /* PDO 64 < HLEN, PLEN past it */
	uint64_t whole = nvmet_tcp_stats()->whole_capsules;
	ftcp_send(s, pdu, sizeof(pdu) - 8);
	struct nth_pdu p;
	cr_assert(host_next(s, &p));
	cr_assert_eq(p.type, NVME_TCP_C2H_TERM_REQ);
	cr_assert_eq(p.hdr[8] | p.hdr[9] << 8, NVME_TCP_FES_INVALID_HEADER_FIELD, "FES");
	cr_assert_eq(le32_load(p.hdr + 10), offsetof(struct nvme_tcp_ch, pdo), "FEI");
	cr_assert_eq(nvmet_tcp_stats()->whole_capsules, whole);
	cr_assert(s->closed);
	nvmet_tcp_poll(8);
	cr_assert_eq(nvmet_tcp_conn_count(), 0);
}

Test(nvmet_tcp, h2c_term_req_closes)
{
	struct tcp_sock *s = ftcp_connect(0, 4096);
	establish(s, 0);
	uint8_t t[24] = { NVME_TCP_H2C_TERM_REQ, 0, 24, 0 };
	le32_store(t + 4, 24);
	t[8] = NVME_TCP_FES_INVALID_HEADER_FIELD;
	ftcp_send(s, t, sizeof(t));
	cr_assert(s->closed);
	cr_assert_eq(s->tx_read, s->tx_len, "nothing sent back");
	cr_assert_eq(nvmet_tcp_conn_count_state(NVMET_TCP_CLOSING), 1);
	cr_assert_eq(nvmet_tcp_stats()->term_recv, 1);
	nvmet_tcp_poll(8);
	cr_assert_eq(nvmet_tcp_conn_count(), 0);
}

static void admin_session(bool dg, size_t frag)
{
	struct tcp_sock *s = ftcp_connect(0, frag);
	establish(s, dg ? NVME_TCP_DGST_HDGST_ENABLE | NVME_TCP_DGST_DDGST_ENABLE : 0);
	int cntlid = admin_connect(s, dg, 0);
	cr_assert_geq(cntlid, 1);
	/* Property Get CSTS: ready */
	struct nvme_cqe cqe;
	struct nvme_sqe sqe = ft_prop_sqe(false, false, NVMF_PROP_CSTS, 0);
	cr_assert_eq(cmd(s, dg, &sqe, NULL, 0, &cqe, NULL, NULL), 0);
	cr_assert(le32_get(cqe.dw0) & NVME_CSTS_RDY);
	/* Identify Controller: 4 KiB of C2HData then the CapsuleResp */
	uint8_t id[4096];
	uint32_t got;
	sqe = ft_sqe(NVME_ADM_IDENTIFY, 5, 0, sizeof(id));
	sqe.cdw10 = le32_make(1);
	cr_assert_eq(cmd(s, dg, &sqe, NULL, 0, &cqe, id, &got), 0);
	cr_assert_eq(got, sizeof(id));
	cr_assert_eq(le16_get(cqe.cid), 5);
	cr_assert_eq(memcmp(id + 4, "SER0", 4), 0, "SN");
	cr_assert_eq(le32_load(id + 78) & 0xffff, (uint32_t)cntlid, "CNTLID");
	/* Keep Alive */
	sqe = ft_sqe(NVME_ADM_KEEP_ALIVE, 6, 0, 0);
	cr_assert_eq(cmd(s, dg, &sqe, NULL, 0, NULL, NULL, NULL), 0);
	cr_assert_eq(nvmet_ctrl_count(), 1);
	ftcp_eof(s);
	nvmet_tcp_poll(8);
	cr_assert_eq(nvmet_ctrl_count(), 0);
	cr_assert_eq(nvmet_tcp_conn_count(), 0);
}

/* 9-byte fragments: headers split everywhere, the 1 KiB of Connect data in 114
 * fragments (the framing's limit per PDU is NVME_TCP_RX_MAX_FRAGS) */
Test(nvmet_tcp, admin_commands_small_fragments)
{
	admin_session(false, 9);
	cr_assert_eq(nvmet_tcp_stats()->gathers, 0, "Connect data in 114 fragments, in a segment table");
}

Test(nvmet_tcp, admin_commands_with_digests)
{
	admin_session(true, 100);
}

/* An admin queue whose Identify (CNS 1: 4 KiB of data) found less send space than a
 * C2HData header and its data: tcp_send_place refused it. *before: what was sent until then. */
static struct tcp_sock *identify_refused_by_tcp(uint16_t cid, size_t *before)
{
	struct tcp_sock *s = ftcp_connect(0, 4096);
	establish(s, 0);
	admin_connect(s, false, 0);
	struct nvme_sqe sqe = ft_sqe(NVME_ADM_IDENTIFY, cid, 0, 4096);
	sqe.cdw10 = le32_make(1);
	s->space = 100;
	*before = s->tx_len;
	ftcp_capsule(s, false, false, &sqe, NULL, 0);
	return s;
}

Test(nvmet_tcp, tx_backlog_waits_for_send_space)
{
	size_t before;
	struct tcp_sock *s = identify_refused_by_tcp(5, &before);
	cr_assert_eq(s->tx_len, before, "nothing sent without space");
	cr_assert_gt(nvmet_tcp_stats()->tx_waits, 0);
	nvmet_tcp_poll(8);
	cr_assert_eq(s->tx_len, before, "still waiting");
	s->space = TCP_SND_BUF;
	s->ops->event(s, s->ctx, TCP_EV_SENT);
	uint8_t id[4096];
	uint32_t got;
	cr_assert_eq(host_resp(s, NULL, id, &got), 0);
	cr_assert_eq(got, 4096);
}

Test(nvmet_tcp, keep_alive_expiry_closes_from_the_poll_loop)
{
	struct tcp_sock *a = ftcp_connect(0, 4096);
	establish(a, 0);
	int cntlid = admin_connect(a, false, 1000);
	struct tcp_sock *q = ftcp_connect(1, 4096);
	establish(q, 0);
	uint8_t cd[1024];
	struct nvme_sqe sqe = ft_connect_sqe(1, 31, 0);
	ft_connect_data(cd, HOST, VOL0, (uint16_t)cntlid);
	cr_assert_eq(cmd(q, false, &sqe, cd, sizeof(cd), NULL, NULL, NULL), 0, "I/O queue Connect");
	/* an AER is held at the core and must come back when the queue goes */
	sqe = ft_sqe(NVME_ADM_AER, 9, 0, 0);
	ftcp_capsule(a, false, false, &sqe, NULL, 0);
	/* traffic based keep-alive (as Linux): a command came within the first KATO, so
	 * the timer restarts once, then expires */
	fake_clock_advance(1100 * NSEC_PER_MSEC);
	timer_queue_run(&timer_default_queue, clock_now_ns());
	cr_assert_eq(nvmet_tcp_stats()->kills, 0, "traffic came in the first KATO");
	fake_clock_advance(1100 * NSEC_PER_MSEC);
	timer_queue_run(&timer_default_queue, clock_now_ns());
	cr_assert_eq(nvmet_tcp_stats()->kills, 2);
	cr_assert_not(a->closed, "not closed inside queue_kill");
	cr_assert_gt(nvmet_tcp_poll(8), 0);
	cr_assert(a->closed && q->closed);
	nvmet_tcp_poll(8);
	cr_assert_eq(nvmet_tcp_conn_count(), 0);
	cr_assert_eq(nvmet_ctrl_count(), 1, "freed from the poll loop's timers, not inside the close");
	timer_queue_run(&timer_default_queue, clock_now_ns());
	cr_assert_eq(nvmet_ctrl_count(), 0);
}

/* An I/O queue of a connected, enabled controller: frag_size decides how the target sees
 * the host's bytes (one fragment per frag_size bytes). Data digests on. */
/* An I/O queue as io_queue(), with or without data digests, fragments handed out as
 * device memory (the NIC's CMB) or DRAM, SQ flow control disabled at Connect or not. */
static struct tcp_sock *io_queue_with(size_t frag_size, bool ddgst, bool dev_frags, bool sqflow_off)
{
	struct tcp_sock *a = ftcp_connect(0, 4096);
	establish(a, 0);
	int cntlid = admin_connect(a, false, 0);
	struct tcp_sock *q = ftcp_connect(1, frag_size);
	establish(q, ddgst ? NVME_TCP_DGST_DDGST_ENABLE : 0);
	uint8_t cd[1024];
	struct nvme_sqe sqe = ft_connect_sqe(1, 63, 0);
	if (sqflow_off) {
		struct nvmf_cmd f = nvmf_cmd_of(&sqe);
		f.connect.cattr |= NVMF_CATTR_DISABLE_SQFLOW;
		sqe = nvmf_cmd_sqe(&f);
	}
	ft_connect_data(cd, HOST, VOL0, (uint16_t)cntlid);
	ftcp_capsule(q, false, ddgst, &sqe, cd, sizeof(cd));
	cr_assert_eq(host_resp(q, NULL, NULL, NULL), 0);
	q->dev_frags = dev_frags;
	return q;
}

static struct tcp_sock *io_queue(size_t frag_size)
{
	return io_queue_with(frag_size, true, false, false);
}

/* A 4 KiB write in capsule at LBA slba then a read of it on q (data digests: ddgst): the data
 * comes back, and every NIC buffer with the completions. */
static void write_then_read(struct tcp_sock *q, bool ddgst, uint16_t cid, uint32_t slba, unsigned seed)
{
	static uint8_t wbuf[4096], rbuf[4096];
	for (size_t i = 0; i < sizeof(wbuf); i++)
		wbuf[i] = (uint8_t)(i * 31 + seed);
	struct nvme_sqe sqe = ft_sqe(NVME_CMD_WRITE, cid, 1, sizeof(wbuf));
	sqe.cdw10 = le32_make(slba);
	sqe.cdw12 = le32_make(7); /* 8 blocks of 512 */
	ftcp_capsule(q, false, ddgst, &sqe, wbuf, sizeof(wbuf));
	cr_assert_eq(host_resp(q, NULL, NULL, NULL), 0, "write");
	cr_assert_eq(ftcp_released, ftcp_handed, "the NIC buffers came back with the completion");
	sqe = ft_sqe(NVME_CMD_READ, (uint16_t)(cid + 1), 1, sizeof(rbuf));
	sqe.cdw10 = le32_make(slba);
	sqe.cdw12 = le32_make(7);
	uint32_t got;
	ftcp_capsule(q, false, ddgst, &sqe, NULL, 0);
	cr_assert_eq(host_resp(q, NULL, rbuf, &got), 0, "read");
	cr_assert_eq(got, sizeof(rbuf));
	cr_assert_eq(memcmp(rbuf, wbuf, sizeof(rbuf)), 0);
}

Test(nvmet_tcp, io_write_in_capsule_then_read)
{
	write_then_read(io_queue(1000), true, 20, 8, 7);
}

/* A CapsuleCmd whose bytes are all in one receive batch, on a connection without digests, is
 * taken in one step (nvmet_tcp_stats.whole_capsules): an in-capsule write and a read, and two
 * capsules that arrive in one fragment (the first ends inside it); one whose header is cut
 * across fragments goes through the framer, and so does every capsule of a connection with
 * digests. The commands complete the same either way. */
Test(nvmet_tcp, capsules_whole_in_a_batch_are_taken_in_one_step)
{
	struct tcp_sock *q = io_queue_with(1000, false, false, false);
	uint64_t whole = nvmet_tcp_stats()->whole_capsules;
	write_then_read(q, false, 10, 0, 1);
	cr_assert_eq(nvmet_tcp_stats()->whole_capsules, whole + 2);

	/* a write of 512 bytes and a read of them, in one send of one fragment */
	static uint8_t two[2 * NVME_TCP_CMD_HLEN + 512], wbuf[512], rbuf[512];
	for (size_t i = 0; i < sizeof(wbuf); i++)
		wbuf[i] = (uint8_t)(i * 7 + 3);
	struct nvme_sqe w = ft_sqe(NVME_CMD_WRITE, 30, 1, sizeof(wbuf)), r = ft_sqe(NVME_CMD_READ, 31, 1, sizeof(rbuf));
	w.cdw10 = r.cdw10 = le32_make(16);
	size_t n = nth_capsule(two, sizeof(two), false, false, &w, wbuf, sizeof(wbuf));
	n += nth_capsule(two + n, sizeof(two) - n, false, false, &r, NULL, 0);
	cr_assert_eq(n, sizeof(two));
	q->frag_size = sizeof(two);
	ftcp_send(q, two, n);
	cr_assert_eq(host_resp(q, NULL, NULL, NULL), 0, "write");
	uint32_t got;
	cr_assert_eq(host_resp(q, NULL, rbuf, &got), 0, "read");
	cr_assert_eq(got, sizeof(rbuf));
	cr_assert_eq(memcmp(rbuf, wbuf, sizeof(rbuf)), 0);
	cr_assert_eq(nvmet_tcp_stats()->whole_capsules, whole + 4);
	cr_assert_eq(ftcp_released, ftcp_handed);

	/* the header across fragments: the framer */
	q->frag_size = 50;
	write_then_read(q, false, 40, 0, 2);
	cr_assert_eq(nvmet_tcp_stats()->whole_capsules, whole + 4);
}

/* A connected queue's received data is taken inside its TCP_EV_RECV (conn_rx_at_once): the
 * read runs and its answer is queued before any poll pass; the connection is not left
 * queued for a pass. Before Connect (the ICReq, the Connect itself) data waits for the pass,
 * as it always did. */
Test(nvmet_tcp, a_connected_queue_takes_its_data_inside_the_event)
{
	struct tcp_sock *q = io_queue_with(1000, false, false, false);
	ftcp_pass(); /* (the Connect's turn queued it again: a pass that finds nothing to do) */
	uint64_t at_once = nvmet_tcp_stats()->rx_at_once;
	static uint8_t pdu[NVME_TCP_CMD_HLEN];
	struct nvme_sqe r = ft_sqe(NVME_CMD_READ, 50, 1, 512);
	size_t n = nth_capsule(pdu, sizeof(pdu), false, false, &r, NULL, 0);
	memcpy(q->rx + q->rx_len, pdu, n);
	q->rx_len += n;
	q->ops->event(q, q->ctx, TCP_EV_RECV);
	cr_assert_eq(q->rx_off, q->rx_len, "taken inside the event");
	cr_assert_eq(nvmet_tcp_stats()->rx_at_once, at_once + 1);
	cr_assert_eq(nvmet_tcp_poll(64), 0, "nothing left for a pass");
	uint8_t rbuf[512];
	uint32_t got;
	cr_assert_eq(host_resp(q, NULL, rbuf, &got), 0, "the read's answer");
	cr_assert_eq(got, sizeof(rbuf));

	/* before the ICReq: the event only marks the connection */
	struct tcp_sock *s = ftcp_connect(2, 4096);
	s->rx_len = nth_icreq(s->rx, FTCP_RX_MAX, 0, 0, 0, 0);
	at_once = nvmet_tcp_stats()->rx_at_once;
	s->ops->event(s, s->ctx, TCP_EV_RECV);
	cr_assert_eq(s->rx_off, 0, "nothing received inside the event");
	cr_assert_gt(nvmet_tcp_poll(64), 0);
	cr_assert_eq(s->rx_off, s->rx_len, "the pass took it");
	cr_assert_eq(nvmet_tcp_stats()->rx_at_once, at_once);
	cr_assert_eq(ftcp_released, ftcp_handed);
}

Test(nvmet_tcp, capsules_with_digests_go_through_the_framer)
{
	struct tcp_sock *q = io_queue(1000); /* data digests */
	uint64_t whole = nvmet_tcp_stats()->whole_capsules;
	write_then_read(q, true, 20, 0, 3);
	cr_assert_eq(nvmet_tcp_stats()->whole_capsules, whole);
}

/* A response refused by tcp_send_place (which records the refusal, so TCP owes
 * TCP_EV_SENT) waits for that event: the poll passes in between leave the connection
 * alone instead of retrying it each time; the event sends it. */
Test(nvmet_tcp, tx_refused_by_tcp_waits_for_sent_event_not_every_pass)
{
	size_t before;
	struct tcp_sock *s = identify_refused_by_tcp(6, &before);
	uint64_t waits = nvmet_tcp_stats()->tx_waits;
	cr_assert_gt(waits, 0, "refused once");
	for (int i = 0; i < 5; i++)
		nvmet_tcp_poll(8);
	cr_assert_eq(nvmet_tcp_stats()->tx_waits, waits, "no retry per pass: TCP_EV_SENT is owed");
	cr_assert_eq(s->tx_len, before, "still waiting");
	s->space = TCP_SND_BUF;
	s->ops->event(s, s->ctx, TCP_EV_SENT);
	uint8_t id[4096];
	uint32_t got;
	cr_assert_eq(host_resp(s, NULL, id, &got), 0, "the event sends it");
	cr_assert_eq(got, 4096);
}

/* A connection takes TCP_EV_SENT only when owed (tcp_set_sent_when_owed): it waits for the
 * event only after a refusal (the test above), so ACKs that no refusal preceded need not
 * wake it. */
Test(nvmet_tcp, connections_take_sent_events_only_when_owed)
{
	struct tcp_sock *q = io_queue(4096);
	cr_assert(q->sent_when_owed);
}

/* An I/O queue whose 64 KiB read (128 blocks of 512: 4 DRAM chunks of 16 KiB) finds fewer
 * send entries than a header chunk and 4 data fragments. *before: what was sent until then. */
static struct tcp_sock *read_short_of_send_entries(uint16_t cid, size_t *before)
{
	struct tcp_sock *q = io_queue(4096);
	struct nvme_sqe sqe = ft_sqe(NVME_CMD_READ, cid, 1, 65536);
	sqe.cdw10 = le32_make(0);
	sqe.cdw12 = le32_make(127);
	q->frag_room = 3;
	*before = q->tx_len;
	ftcp_capsule(q, false, true, &sqe, NULL, 0);
	return q;
}

/* Refused for want of send entries: tcp_send_place_frags asks for them with the header's
 * bytes and records the refusal as tcp_send_place does, so TCP owes TCP_EV_SENT and the
 * poll passes in between leave the connection alone (before, the target's own
 * tcp_send_frags_room() check, of which TCP knew nothing, had every pass retry it); the
 * event sends the read once room is back. */
Test(nvmet_tcp, tx_refused_for_send_entries_waits_for_sent_event_not_every_pass)
{
	static uint8_t rbuf[65536];
	size_t before;
	struct tcp_sock *q = read_short_of_send_entries(51, &before);
	nvmet_tcp_poll(8);
	cr_assert_eq(q->tx_len, before, "waiting for send entries");
	uint64_t waits = nvmet_tcp_stats()->tx_waits;
	for (int i = 0; i < 5; i++)
		nvmet_tcp_poll(8);
	cr_assert_eq(nvmet_tcp_stats()->tx_waits, waits, "no retry per pass: TCP_EV_SENT is owed");
	cr_assert_eq(q->tx_len, before, "still waiting");
	q->frag_room = 0;
	q->ops->event(q, q->ctx, TCP_EV_SENT);
	uint32_t got;
	cr_assert_eq(host_resp(q, NULL, rbuf, &got), 0, "read");
	cr_assert_eq(got, sizeof(rbuf));
}

/* Send entries short while bytes are plenty (the socket's share of the stack's fragments
 * taken by unacknowledged sends): a C2HData PDU waits whole, its header not queued ahead of
 * data that could not follow, and the connection lives; room back, the read completes. */
Test(nvmet_tcp, c2h_data_waits_for_send_entries_not_only_bytes)
{
	static uint8_t rbuf[65536];
	size_t before;
	uint64_t waits = nvmet_tcp_stats()->tx_waits;
	struct tcp_sock *q = read_short_of_send_entries(50, &before);
	nvmet_tcp_poll(8);
	cr_assert(ftcp_open(q), "the connection lives");
	cr_assert_eq(q->tx_len, before, "no header without room for its data");
	cr_assert_gt(nvmet_tcp_stats()->tx_waits, waits);
	q->frag_room = 0;
	q->ops->event(q, q->ctx, TCP_EV_SENT);
	uint32_t got;
	cr_assert_eq(host_resp(q, NULL, rbuf, &got), 0, "read");
	cr_assert_eq(got, sizeof(rbuf));
}

/* A 4 KiB read's C2HData and its CapsuleResp take one room check (tcp_send_place_frags_tail):
 * with room for the C2HData PDU but not for the response behind it, neither is queued (before,
 * the C2HData went and the response waited alone); the refusal is recorded (TCP owes
 * TCP_EV_SENT), the poll passes leave the connection alone, and the event sends both. */
Test(nvmet_tcp, a_read_and_its_response_wait_whole_for_room_for_both)
{
	static uint8_t rbuf[4096];
	struct tcp_sock *q = io_queue_with(4096, false, false, false); /* (no data digest) */
	struct nvme_sqe sqe = ft_sqe(NVME_CMD_READ, 52, 1, sizeof(rbuf));
	sqe.cdw10 = le32_make(0);
	sqe.cdw12 = le32_make(7);
	size_t before = q->tx_len;
	uint64_t waits = nvmet_tcp_stats()->tx_waits, resps = nvmet_tcp_stats()->responses;
	q->space = NVME_TCP_DATA_HLEN + sizeof(rbuf) + NVME_TCP_RESP_HLEN - 1;
	ftcp_capsule(q, false, false, &sqe, NULL, 0);
	nvmet_tcp_poll(8);
	cr_assert(ftcp_open(q), "the connection lives");
	cr_assert_eq(q->tx_len, before, "no C2HData without room for its response");
	cr_assert_eq(nvmet_tcp_stats()->tx_waits, waits + 1, "one refusal");
	for (int i = 0; i < 5; i++)
		nvmet_tcp_poll(8);
	cr_assert_eq(nvmet_tcp_stats()->tx_waits, waits + 1, "no retry per pass: TCP_EV_SENT is owed");
	q->space = TCP_SND_BUF;
	q->ops->event(q, q->ctx, TCP_EV_SENT);
	cr_assert_eq(q->tx_len - before, NVME_TCP_DATA_HLEN + sizeof(rbuf) + NVME_TCP_RESP_HLEN, "both at once");
	cr_assert_eq(nvmet_tcp_stats()->responses, resps + 1);
	uint32_t got;
	cr_assert_eq(host_resp(q, NULL, rbuf, &got), 0, "read");
	cr_assert_eq(got, sizeof(rbuf));
}

/* A read of len bytes at LBA 0 on q (SQ flow control on): every PDU the target sends for it
 * is byte for byte what the general builders make for it on a connection without digests
 * or header alignment (nvme_tcp_build_c2h_data, nvme_tcp_build_capsule_resp around the CQE
 * sent), C2HData in order up to len, then the CapsuleResp. */
static void read_matches_the_general_builders(struct tcp_sock *q, uint16_t cid, uint32_t len)
{
	const struct nvme_tcp_params plain = { .maxh2cdata = NVMET_TCP_MAXH2CDATA, .max_icd = NVMET_TCP_IN_CAPSULE };
	struct nvme_sqe sqe = ft_sqe(NVME_CMD_READ, cid, 1, len);
	sqe.cdw10 = le32_make(0);
	sqe.cdw12 = le32_make(len / 512 - 1);
	ftcp_capsule(q, false, false, &sqe, NULL, 0);
	uint8_t want[NVME_TCP_DATA_HLEN];
	struct nth_pdu p;
	uint32_t got = 0;
	while (got < len) {
		cr_assert(host_next(q, &p), "C2HData at %u", got);
		cr_assert_eq(p.type, NVME_TCP_C2H_DATA);
		cr_assert_eq(nvme_tcp_build_c2h_data(want, &plain, cid, got, p.datal, got + p.datal == len, false),
			     NVME_TCP_DATA_HLEN);
		cr_assert_eq(memcmp(p.hdr, want, NVME_TCP_DATA_HLEN), 0, "C2HData header at %u", got);
		got += p.datal;
	}
	cr_assert(host_next(q, &p), "the CapsuleResp");
	cr_assert_eq(p.type, NVME_TCP_CAPSULE_RESP);
	cr_assert_eq(nvme_tcp_build_capsule_resp(want, &plain, p.hdr + NVME_TCP_CH_LEN), NVME_TCP_RESP_HLEN);
	cr_assert_eq(memcmp(p.hdr, want, NVME_TCP_RESP_HLEN), 0, "CapsuleResp");
	cr_assert_eq(le16_load(p.hdr + NVME_TCP_CH_LEN + 12), cid);
	cr_assert_eq(le16_load(p.hdr + NVME_TCP_CH_LEN + 14) >> 1, 0, "success");
}

/* On a connection without digests the common read (all of its data in one piece of its
 * buffer) goes in one step (conn_send_read_whole) and a larger read's last PDU with its
 * response in one (conn_send_c2h_resp), their headers written in fixed stores: the bytes
 * are the general builders' (4 KiB: one step; 20 KiB: one PDU over two chunks; 128 KiB:
 * two PDUs of four fragments), for DRAM and device-memory buffers alike. */
static void plain_reads_match_the_general_builders(bool dev)
{
	struct tcp_sock *q = io_queue_with(4096, false, dev, false);
	read_matches_the_general_builders(q, 70, 4096);
	read_matches_the_general_builders(q, 71, 20480);
	read_matches_the_general_builders(q, 72, 131072);
	ftcp_ack(q);
}

Test(nvmet_tcp, plain_read_pdus_match_the_general_builders)
{
	plain_reads_match_the_general_builders(false);
}

Test(nvmet_tcp, plain_read_pdus_match_the_general_builders_from_device_memory)
{
	plain_reads_match_the_general_builders(true);
}

/* A 64 KiB write through R2T + two H2CData PDUs, then read back. */
static void write_through_r2t(size_t frag_size)
{
	struct tcp_sock *q = io_queue(frag_size);
	static uint8_t wbuf[65536], rbuf[65536];
	for (size_t i = 0; i < sizeof(wbuf); i++)
		wbuf[i] = (uint8_t)(i * 131 + frag_size);
	struct nvme_sqe sqe = ft_sqe(NVME_CMD_WRITE, 40, 1, sizeof(wbuf));
	sqe.cdw10 = le32_make(256);
	sqe.cdw12 = le32_make(127); /* 128 blocks of 512 */
	ftcp_capsule(q, false, true, &sqe, NULL, 0);
	struct nth_pdu p;
	cr_assert(host_next(q, &p), "an R2T");
	cr_assert_eq(p.type, NVME_TCP_R2T);
	uint16_t cccid, ttag;
	memcpy(&cccid, p.hdr + 8, 2);
	memcpy(&ttag, p.hdr + 10, 2);
	cr_assert_eq(cccid, 40);
	cr_assert_eq(le32_load(p.hdr + 12), 0, "R2TO");
	cr_assert_eq(le32_load(p.hdr + 16), sizeof(wbuf), "R2TL: all of it");
	ftcp_h2c(q, false, true, cccid, ttag, 0, wbuf, 32768, false);
	cr_assert_not(host_next(q, &p), "nothing before the last H2CData");
	ftcp_h2c(q, false, true, cccid, ttag, 32768, wbuf + 32768, 32768, true);
	cr_assert_eq(host_resp(q, NULL, NULL, NULL), 0, "write");
	cr_assert_eq(ftcp_released, ftcp_handed, "every NIC buffer came back");
	const struct nvmet_tcp_stats *st = nvmet_tcp_stats();
	cr_assert_eq(st->r2ts, 1);
	cr_assert_eq(st->h2c_pdus, 2);
	cr_assert_eq(st->h2c_bytes, sizeof(wbuf));
	/* 1000-byte fragments: 67 per 64 KiB, all in one command */
	cr_assert_eq(st->gathers, 0);
	unsigned least = (unsigned)((sizeof(wbuf) + frag_size - 1) / frag_size);
	cr_assert(last_nsg >= least && last_nsg <= least + 4, "one command gathers every fragment (%u)", last_nsg);

	sqe = ft_sqe(NVME_CMD_READ, 41, 1, sizeof(rbuf));
	sqe.cdw10 = le32_make(256);
	sqe.cdw12 = le32_make(127);
	uint32_t got;
	ftcp_capsule(q, false, true, &sqe, NULL, 0);
	cr_assert_eq(host_resp(q, NULL, rbuf, &got), 0, "read");
	cr_assert_eq(got, sizeof(rbuf));
	cr_assert_eq(memcmp(rbuf, wbuf, sizeof(rbuf)), 0);
}

Test(nvmet_tcp, write_through_r2t_keeps_the_nic_fragments)
{
	write_through_r2t(4096);
}

Test(nvmet_tcp, write_through_r2t_gathers_many_small_fragments)
{
	write_through_r2t(1000);
}

Test(nvmet_tcp, h2c_data_out_of_order_terminates)
{
	struct tcp_sock *q = io_queue(4096);
	static uint8_t wbuf[8192];
	struct nvme_sqe sqe = ft_sqe(NVME_CMD_WRITE, 50, 1, sizeof(wbuf));
	sqe.cdw12 = le32_make(15);
	ftcp_capsule(q, false, true, &sqe, NULL, 0);
	struct nth_pdu p;
	cr_assert(host_next(q, &p));
	cr_assert_eq(p.type, NVME_TCP_R2T);
	uint16_t ttag;
	memcpy(&ttag, p.hdr + 10, 2);
	ftcp_h2c(q, false, true, 50, ttag, 4096, wbuf, 4096, true); /* DATAO 4096 before 0 */
	cr_assert(host_next(q, &p));
	cr_assert_eq(p.type, NVME_TCP_C2H_TERM_REQ);
	cr_assert_eq(p.hdr[8], NVME_TCP_FES_DATA_OUT_OF_RANGE);
	cr_assert_eq(le32_load(p.hdr + 10), 12, "FEI: DATAO");
	nvmet_tcp_poll(8);
	cr_assert_eq(ftcp_released, ftcp_handed);
}

Test(nvmet_tcp, h2c_data_without_r2t_terminates)
{
	struct tcp_sock *q = io_queue(4096);
	static uint8_t wbuf[512];
	ftcp_h2c(q, false, true, 7, 5, 0, wbuf, sizeof(wbuf), true);
	struct nth_pdu p;
	cr_assert(host_next(q, &p));
	cr_assert_eq(p.type, NVME_TCP_C2H_TERM_REQ);
	cr_assert_eq(p.hdr[8], NVME_TCP_FES_INVALID_HEADER_FIELD);
	cr_assert_eq(le32_load(p.hdr + 10), 10, "FEI: TTAG");
	nvmet_tcp_poll(8);
	cr_assert_eq(ftcp_released, ftcp_handed);
}

/* --- the data path: one command per I/O, reads from device memory, waiting, fallbacks --- */

static uint8_t pattern(size_t i, unsigned seed)
{
	return (uint8_t)(i * 131 + seed + (i >> 11));
}

/* Send a write of len bytes at slba through R2T, its data in H2CData PDUs of pdu bytes
 * (no digest). Returns the R2T's transfer tag. */
static void host_write_r2t(struct tcp_sock *q, uint16_t cid, uint32_t slba, const uint8_t *data, uint32_t len,
			   uint32_t pdu)
{
	struct nvme_sqe sqe = ft_sqe(NVME_CMD_WRITE, cid, 1, len);
	sqe.cdw10 = le32_make(slba);
	sqe.cdw12 = le32_make(len / 512 - 1);
	ftcp_capsule(q, false, false, &sqe, NULL, 0);
	struct nth_pdu p;
	cr_assert(host_next(q, &p), "an R2T");
	cr_assert_eq(p.type, NVME_TCP_R2T);
	uint16_t ttag;
	memcpy(&ttag, p.hdr + 10, 2);
	cr_assert_eq(le32_load(p.hdr + 16), len);
	for (uint32_t off = 0; off < len; off += pdu)
		ftcp_h2c(q, false, false, cid, ttag, off, data + off, len - off < pdu ? len - off : pdu, off + pdu >= len);
}

/* Read len bytes at slba; returns the status, data into buf, *success whether the read
 * ended with C2HData SUCCESS (no CapsuleResp). */
static uint16_t host_read(struct tcp_sock *q, uint16_t cid, uint32_t slba, uint8_t *buf, uint32_t len, bool *success)
{
	struct nvme_sqe sqe = ft_sqe(NVME_CMD_READ, cid, 1, len);
	sqe.cdw10 = le32_make(slba);
	sqe.cdw12 = le32_make(len / 512 - 1);
	ftcp_capsule(q, false, false, &sqe, NULL, 0);
	struct nth_pdu p;
	uint32_t got = 0;
	*success = false;
	while (host_next(q, &p)) {
		if (p.type == NVME_TCP_C2H_DATA) {
			cr_assert_eq(le32_load(p.hdr + 12), got, "C2HData in order");
			cr_assert_eq(p.hdr[8] | p.hdr[9] << 8, cid, "CCCID");
			cr_assert_leq(got + p.datal, len);
			memcpy(buf + got, p.data, p.datal);
			got += p.datal;
			if (p.flags & NVME_TCP_F_SUCCESS) {
				cr_assert(p.flags & NVME_TCP_F_LAST_PDU, "SUCCESS only on the last PDU");
				cr_assert_eq(got, len);
				*success = true;
				return 0;
			}
			continue;
		}
		cr_assert_eq(p.type, NVME_TCP_CAPSULE_RESP);
		struct nvme_cqe c;
		memcpy(&c, p.hdr + 8, 16);
		cr_assert_eq(le16_get(c.cid), cid);
		uint16_t st = (uint16_t)((le16_get(c.status) >> 1) & 0x7ff);
		if (st == 0)
			cr_assert_eq(got, len, "all the data before the response");
		return st;
	}
	cr_assert_fail("no response to the read");
	return 0xffff;
}

/* A 128 KiB write in 1448-byte fragments (91: MTU 1500's MSS) and one H2CData PDU: one
 * NVMe command gathers them all from device memory, nothing copied to DRAM. */
Test(nvmet_tcp, write_128k_in_91_fragments_is_one_p2p_command)
{
	struct tcp_sock *q = io_queue_with(1448, false, true, false);
	static uint8_t w[131072], r[131072];
	for (size_t i = 0; i < sizeof(w); i++)
		w[i] = pattern(i, 1);
	unsigned b0 = bios;
	uint64_t cpu_host0 = dma_counters()->cpu_bytes[MEM_CLASS_HOST];
	host_write_r2t(q, 60, 512, w, sizeof(w), 131072);
	cr_assert_eq(host_resp(q, NULL, NULL, NULL), 0, "write");
	cr_assert_eq(bios - b0, 1, "one backend command");
	cr_assert(last_nsg >= 91 && last_nsg <= 93, "all the fragments in it (%u)", last_nsg);
	cr_assert_eq(last_cls, MEM_CLASS_DEVICE, "straight from device memory");
	const struct nvmet_tcp_stats *st = nvmet_tcp_stats();
	cr_assert_eq(st->p2p_writes, 1);
	cr_assert_eq(st->p2p_write_bytes, sizeof(w));
	cr_assert_eq(st->gathers, 0);
	for (int k = 0; k < NVMET_TCP_DRAM_REASON_COUNT; k++)
		cr_assert_eq(st->dram_cmds[k], 0, "no DRAM fallback (%s)", nvmet_tcp_dram_reason_name(k));
	/* the CPU touched only PDU headers and responses in DRAM, no payload */
	cr_assert_lt(dma_counters()->cpu_bytes[MEM_CLASS_HOST] - cpu_host0, 1024);
	cr_assert_eq(ftcp_released, ftcp_handed, "the NIC buffers came back with the completion");
	bool success;
	cr_assert_eq(host_read(q, 61, 512, r, sizeof(r), &success), 0);
	cr_assert_eq(memcmp(r, w, sizeof(r)), 0);
}

/* The memory of a write's fragments is noted as they are taken (over several H2CData PDUs,
 * past the inline segments into a table): fragments of two providers, or in device memory
 * and DRAM, are copied to DRAM with the P2P refusal counted, the bytes on the drive the
 * host's; fragments all of one provider go to the drive where they are. */
Test(nvmet_tcp, write_fragments_of_two_providers_or_memories_go_through_dram)
{
	struct tcp_sock *q = io_queue_with(1448, false, true, false);
	static uint8_t w[65536], r[65536];
	const struct nvmet_tcp_stats *st = nvmet_tcp_stats();
	bool success;
	for (size_t i = 0; i < sizeof(w); i++)
		w[i] = pattern(i, 9);
	for (unsigned mix = 1; mix <= 2; mix++) {
		q->dev_mix = mix;
		host_write_r2t(q, (uint16_t)(70 + mix), 256 * mix, w, sizeof(w), 16384);
		cr_assert_eq(host_resp(q, NULL, NULL, NULL), 0);
		cr_assert_eq(st->dram_cmds[NVMET_TCP_DRAM_P2P_REFUSED], mix);
		cr_assert_eq(last_cls, MEM_CLASS_HOST, "copied to DRAM");
		q->dev_mix = 0;
		cr_assert_eq(host_read(q, (uint16_t)(80 + mix), 256 * mix, r, sizeof(r), &success), 0);
		cr_assert_eq(memcmp(r, w, sizeof(r)), 0);
	}
	host_write_r2t(q, 90, 0, w, sizeof(w), 16384);
	cr_assert_eq(host_resp(q, NULL, NULL, NULL), 0);
	cr_assert_eq(last_cls, MEM_CLASS_DEVICE, "one provider: straight from device memory");
	cr_assert_eq(st->dram_cmds[NVMET_TCP_DRAM_P2P_REFUSED], 2);
	cr_assert_eq(host_read(q, 91, 0, r, sizeof(r), &success), 0);
	cr_assert_eq(memcmp(r, w, sizeof(r)), 0);
	ftcp_ack(q);
	cr_assert_eq(ftcp_released, ftcp_handed);
}

/* An in-capsule write taken in one step (nvmet_tcp_req_take_batch) whose fragments, in one
 * receive batch, mix providers (dev_mix 1) or device memory and DRAM (dev_mix 2; 3: the DRAM
 * ones marked with the device ones' provider id, so only the class tells them apart), the first
 * fragment's memory unlike some later one's: the drive never gets them where they are (the
 * P2P refusal counted, the data copied to DRAM), as over H2CData; all of one provider, the
 * drive reads them in place. */
Test(nvmet_tcp, whole_capsule_write_of_mixed_fragments_goes_through_dram)
{
	struct tcp_sock *q = io_queue_with(1448, false, true, false);
	const struct nvmet_tcp_stats *st = nvmet_tcp_stats();
	static uint8_t w[4096], r[4096];
	bool success;
	for (size_t i = 0; i < sizeof(w); i++)
		w[i] = pattern(i, 5);
	for (unsigned mix = 1; mix <= 3; mix++) {
		uint64_t whole = st->whole_capsules, refused = st->dram_cmds[NVMET_TCP_DRAM_P2P_REFUSED];
		q->dev_mix = mix;
		struct nvme_sqe sqe = ft_sqe(NVME_CMD_WRITE, (uint16_t)(100 + mix), 1, sizeof(w));
		sqe.cdw10 = le32_make(32 * mix);
		sqe.cdw12 = le32_make(7); /* 8 blocks of 512 */
		ftcp_capsule(q, false, false, &sqe, w, sizeof(w));
		cr_assert_eq(host_resp(q, NULL, NULL, NULL), 0, "write");
		cr_assert_eq(st->whole_capsules, whole + 1, "taken in one step");
		cr_assert_eq(st->dram_cmds[NVMET_TCP_DRAM_P2P_REFUSED], refused + 1, "mix %u refused", mix);
		cr_assert_eq(last_cls, MEM_CLASS_HOST, "copied to DRAM (mix %u)", mix);
		q->dev_mix = 0;
		cr_assert_eq(host_read(q, (uint16_t)(110 + mix), 32 * mix, r, sizeof(r), &success), 0);
		cr_assert_eq(memcmp(r, w, sizeof(r)), 0);
	}
	struct nvme_sqe sqe = ft_sqe(NVME_CMD_WRITE, 120, 1, sizeof(w));
	sqe.cdw12 = le32_make(7);
	ftcp_capsule(q, false, false, &sqe, w, sizeof(w));
	cr_assert_eq(host_resp(q, NULL, NULL, NULL), 0, "write");
	cr_assert_eq(last_cls, MEM_CLASS_DEVICE, "one provider: straight from device memory");
	cr_assert_eq(host_read(q, 121, 0, r, sizeof(r), &success), 0);
	cr_assert_eq(memcmp(r, w, sizeof(r)), 0);
	ftcp_ack(q);
	cr_assert_eq(ftcp_released, ftcp_handed);
}

/* More fragments than one PDU may arrive in (128): a 128 KiB write in two H2CData PDUs of
 * ~100 fragments each, still one command with ~200 segments. */
Test(nvmet_tcp, write_in_200_fragments_over_two_pdus_is_one_command)
{
	struct tcp_sock *q = io_queue_with(656, false, true, false);
	static uint8_t w[131072], r[131072];
	for (size_t i = 0; i < sizeof(w); i++)
		w[i] = pattern(i, 2);
	unsigned b0 = bios;
	host_write_r2t(q, 62, 1024, w, sizeof(w), 65536);
	cr_assert_eq(host_resp(q, NULL, NULL, NULL), 0, "write");
	cr_assert_eq(bios - b0, 1);
	cr_assert(last_nsg > 128 && last_nsg >= 200, "one command, every fragment (%u)", last_nsg);
	cr_assert_eq(last_cls, MEM_CLASS_DEVICE);
	cr_assert(last_checked, "the fragments vouched for (nvmet_data.checked)");
	cr_assert_eq(nvmet_tcp_stats()->p2p_writes, 1);
	bool success;
	cr_assert_eq(host_read(q, 63, 1024, r, sizeof(r), &success), 0);
	cr_assert_eq(memcmp(r, w, sizeof(r)), 0);
}

/* More fragments than a segment table holds (256): the write continues into DRAM,
 * counted under "fragments", and the data is still right. */
Test(nvmet_tcp, write_in_more_fragments_than_a_table_is_gathered)
{
	struct tcp_sock *q = io_queue_with(400, false, true, false);
	static uint8_t w[131072], r[131072];
	for (size_t i = 0; i < sizeof(w); i++)
		w[i] = pattern(i, 3);
	host_write_r2t(q, 64, 0, w, sizeof(w), 32768); /* ~82 fragments per PDU, 328 in all */
	cr_assert_eq(host_resp(q, NULL, NULL, NULL), 0, "write");
	const struct nvmet_tcp_stats *st = nvmet_tcp_stats();
	cr_assert_eq(st->gathers, 1);
	cr_assert_eq(st->dram_cmds[NVMET_TCP_DRAM_FRAGMENTS], 1);
	cr_assert_eq(st->dram_bytes[NVMET_TCP_DRAM_FRAGMENTS], sizeof(w));
	cr_assert_eq(last_cls, MEM_CLASS_HOST);
	cr_assert_eq(ftcp_released, ftcp_handed);
	bool success;
	cr_assert_eq(host_read(q, 65, 0, r, sizeof(r), &success), 0);
	cr_assert_eq(memcmp(r, w, sizeof(r)), 0);
}

/* A read: the backend reads into device memory, C2HData goes out zero-copy from there,
 * the memory is held until the peer acknowledged it, then freed. */
Test(nvmet_tcp, read_from_device_memory_released_on_ack)
{
	struct tcp_sock *q = io_queue_with(4096, false, true, false);
	static uint8_t w[131072], r[131072];
	for (size_t i = 0; i < sizeof(w); i++)
		w[i] = pattern(i, 4);
	host_write_r2t(q, 1, 2048, w, sizeof(w), 65536);
	cr_assert_eq(host_resp(q, NULL, NULL, NULL), 0);
	bool success;
	cr_assert_eq(host_read(q, 2, 2048, r, sizeof(r), &success), 0);
	cr_assert_not(success, "SQ flow control on: a CapsuleResp");
	cr_assert_eq(memcmp(r, w, sizeof(r)), 0);
	cr_assert_eq(last_op, NVMET_BIO_READ);
	cr_assert_eq(last_cls, MEM_CLASS_DEVICE, "the backend read into device memory");
	cr_assert_eq(q->frag_bytes[MEM_CLASS_DEVICE], sizeof(r), "sent zero-copy from device memory");
	cr_assert_eq(q->frag_bytes[MEM_CLASS_HOST], 0);
	const struct nvmet_tcp_stats *st = nvmet_tcp_stats();
	cr_assert_eq(st->p2p_reads, 1);
	cr_assert_eq(st->c2h_pdus, sizeof(r) / NVMET_TCP_C2H_MAX);
	cr_assert_gt(fcmb_in_use, 0, "held by TCP until acknowledged");
	ftcp_ack(q);
	cr_assert_eq(fcmb_in_use, 0, "freed on the acknowledgement");
}

/* The common read's one step hands the request's own reference on its buffer to the data
 * fragment TCP holds: the buffer (device memory here) stays until TCP gives the fragment
 * back on the acknowledgement, and goes then; again and again, nothing left over. */
Test(nvmet_tcp, a_one_step_read_s_buffer_lives_until_the_ack)
{
	struct tcp_sock *q = io_queue_with(4096, false, true, false);
	static uint8_t r[4096];
	for (uint16_t i = 0; i < 4; i++) {
		bool success;
		cr_assert_eq(host_read(q, (uint16_t)(100 + i), 8 * i, r, sizeof(r), &success), 0);
		cr_assert_not(success);
		cr_assert_eq(q->frag_bytes[MEM_CLASS_DEVICE], (i + 1) * sizeof(r), "sent from device memory");
		cr_assert_gt(fcmb_in_use, 0, "held by TCP until acknowledged");
		ftcp_ack(q);
		cr_assert_eq(fcmb_in_use, 0, "freed on the acknowledgement");
	}
	cr_assert_eq(ftcp_released, ftcp_handed);
}

/* SQ flow control disabled at Connect: a successful read ends with C2HData SUCCESS and
 * no CapsuleResp; a failed one still gets its CapsuleResp. */
Test(nvmet_tcp, read_success_flag_without_sq_flow_control)
{
	struct tcp_sock *q = io_queue_with(4096, false, true, true);
	static uint8_t r[8192];
	bool success;
	uint64_t responses = nvmet_tcp_stats()->responses;
	cr_assert_eq(host_read(q, 3, 0, r, sizeof(r), &success), 0);
	cr_assert(success, "C2HData SUCCESS");
	cr_assert_eq(nvmet_tcp_stats()->success_flags, 1);
	cr_assert_eq(nvmet_tcp_stats()->responses, responses, "no CapsuleResp");
	cr_assert_eq(q->tx_read, q->tx_len, "no CapsuleResp after it");
	/* past the end of the namespace: an error status comes in a CapsuleResp */
	cr_assert_eq(host_read(q, 4, 4095, r, sizeof(r), &success), NVMET_SC_LBA_RANGE);
	cr_assert_not(success);
	ftcp_ack(q);
}

/* Writes hold NIC buffers from R2T to completion: a host alone has all of
 * NVMET_TCP_WRITE_HELD_MAX (beyond its share: nobody else waits), the next write waits for
 * its R2T and gets it when an earlier write completes. */
Test(nvmet_tcp, write_waits_for_the_write_budget_and_resumes)
{
	struct tcp_sock *q = io_queue_with(8192, false, true, false);
	static uint8_t w[131072];
	const unsigned n = NVMET_TCP_WRITE_HELD_MAX / sizeof(w);
	struct nth_pdu p;
	uint16_t ttag[32];
	for (size_t i = 0; i < sizeof(w); i++)
		w[i] = pattern(i, 5);
	cr_assert_leq(n + 1, 32);
	for (unsigned k = 0; k <= n; k++) {
		struct nvme_sqe sqe = ft_sqe(NVME_CMD_WRITE, (uint16_t)(10 + k), 1, sizeof(w));
		sqe.cdw10 = le32_make((k % 8) * 256); /* inside the 4096-block namespace */
		sqe.cdw12 = le32_make(255);
		ftcp_capsule(q, false, false, &sqe, NULL, 0);
	}
	for (unsigned k = 0; k < n; k++) {
		cr_assert(host_next(q, &p), "R2T %u of %u: a host alone has the whole write budget", k + 1, n);
		cr_assert_eq(p.type, NVME_TCP_R2T);
		memcpy(&ttag[k], p.hdr + 10, 2);
	}
	cr_assert_not(host_next(q, &p), "the last write waits");
	cr_assert_eq(nvmet_tcp_waiting(), 1);
	cr_assert_eq(nvmet_tcp_stats()->waits, 1);
	cr_assert_eq(nvmet_tcp_stats()->write_lent, n - n / NVMET_TCP_HOST_SHARE, "the writes beyond the share");
	cr_assert_eq(nvmet_tcp_stats()->host_share, 0, "the budget, not the share, held it back");
	ftcp_h2c(q, false, false, 10, ttag[0], 0, w, 65536, false);
	ftcp_h2c(q, false, false, 10, ttag[0], 65536, w + 65536, 65536, true);
	cr_assert_eq(host_resp(q, NULL, NULL, NULL), 0, "first write");
	cr_assert_eq(nvmet_tcp_waiting(), 0, "resumed after the socket event");
	cr_assert(host_next(q, &p));
	cr_assert_eq(p.type, NVME_TCP_R2T, "the waiting write got its R2T");
	memcpy(&ttag[n], p.hdr + 10, 2);
	cr_assert_eq(nvmet_tcp_stats()->resumed, 1);
	for (unsigned k = 1; k <= n; k++) {
		ftcp_h2c(q, false, false, (uint16_t)(10 + k), ttag[k], 0, w, 65536, false);
		ftcp_h2c(q, false, false, (uint16_t)(10 + k), ttag[k], 65536, w + 65536, 65536, true);
		cr_assert_eq(host_resp(q, NULL, NULL, NULL), 0);
	}
	cr_assert_eq(ftcp_released, ftcp_handed);
}

/* nvmet.write_budget_kib: 1 MiB lets a host alone have eight 128 KiB writes between R2T
 * and completion, the ninth waits until one completes; the setting is clamped to
 * 128 KiB..NVMET_TCP_WRITE_HELD_LIMIT (128 KiB: one write at a time, the one a host with
 * nothing held may always take). */
Test(nvmet_tcp, the_write_budget_setting_bounds_the_writes_in_flight)
{
	struct tcp_sock *q = io_queue_with(8192, false, true, false);
	static uint8_t w[131072];
	const unsigned n = 1024u * 1024 / sizeof(w);
	struct nth_pdu p;
	uint16_t ttag[9];
	nvmet_tcp_set_write_budget(1024u * 1024);
	for (unsigned k = 0; k <= n; k++) {
		struct nvme_sqe sqe = ft_sqe(NVME_CMD_WRITE, (uint16_t)(40 + k), 1, sizeof(w));
		sqe.cdw10 = le32_make((k % 8) * 256);
		sqe.cdw12 = le32_make(255);
		ftcp_capsule(q, false, false, &sqe, NULL, 0);
	}
	for (unsigned k = 0; k < n; k++) {
		cr_assert(host_next(q, &p));
		cr_assert_eq(p.type, NVME_TCP_R2T);
		memcpy(&ttag[k], p.hdr + 10, 2);
	}
	cr_assert_not(host_next(q, &p), "the ninth write waits for the budget");
	cr_assert_eq(nvmet_tcp_waiting(), 1);
	ftcp_h2c(q, false, false, 40, ttag[0], 0, w, 131072, true);
	cr_assert_eq(host_resp(q, NULL, NULL, NULL), 0);
	cr_assert(host_next(q, &p));
	cr_assert_eq(p.type, NVME_TCP_R2T, "the waiting write got its R2T");
	memcpy(&ttag[0], p.hdr + 10, 2);
	for (unsigned k = 1; k <= n; k++) {
		ftcp_h2c(q, false, false, (uint16_t)(40 + k), ttag[k % n], 0, w, 131072, true);
		cr_assert_eq(host_resp(q, NULL, NULL, NULL), 0);
	}
	nvmet_tcp_set_write_budget(0); /* clamped: 128 KiB */
	struct nvme_sqe a = ft_sqe(NVME_CMD_WRITE, 50, 1, sizeof(w)), b = ft_sqe(NVME_CMD_WRITE, 51, 1, sizeof(w));
	a.cdw12 = b.cdw12 = le32_make(255);
	ftcp_capsule(q, false, false, &a, NULL, 0);
	ftcp_capsule(q, false, false, &b, NULL, 0);
	cr_assert(host_next(q, &p));
	cr_assert_eq(p.type, NVME_TCP_R2T);
	memcpy(&ttag[0], p.hdr + 10, 2);
	cr_assert_not(host_next(q, &p), "128 KiB: one write at a time");
	ftcp_h2c(q, false, false, 50, ttag[0], 0, w, 131072, true);
	cr_assert_eq(host_resp(q, NULL, NULL, NULL), 0);
	cr_assert(host_next(q, &p));
	cr_assert_eq(p.type, NVME_TCP_R2T);
	memcpy(&ttag[1], p.hdr + 10, 2);
	ftcp_h2c(q, false, false, 51, ttag[1], 0, w, 131072, true);
	cr_assert_eq(host_resp(q, NULL, NULL, NULL), 0);
	nvmet_tcp_set_write_budget(NVMET_TCP_WRITE_HELD_MAX);
	ftcp_ack(q);
	cr_assert_eq(ftcp_released, ftcp_handed);
}

/* Reads whose data waits for acknowledgement hold DRAM chunks (nvmet.p2p = off): when
 * the host's share of them is taken the next read waits, and runs when an
 * acknowledgement frees some. */
Test(nvmet_tcp, read_waits_for_buffers_and_resumes_on_ack)
{
	struct tcp_sock *q = io_queue_with(8192, false, true, false);
	const uint32_t len = NVMET_TCP_MAX_XFER;
	const unsigned fit = HOST_BUFS / (len / NVMET_TCP_BUF_SIZE);
	nvmet_tcp_set_p2p(false);
	for (unsigned k = 0; k <= fit; k++) {
		struct nvme_sqe sqe = ft_sqe(NVME_CMD_READ, (uint16_t)(20 + k), 1, len);
		sqe.cdw10 = le32_make(0);
		sqe.cdw12 = le32_make(len / 512 - 1);
		ftcp_capsule(q, false, false, &sqe, NULL, 0);
	}
	cr_assert_eq(nvmet_tcp_waiting(), 1, "the read past the host's DRAM chunks waits");
	cr_assert_eq(nvmet_tcp_stats()->dram_cmds[NVMET_TCP_DRAM_OFF], fit);
	/* the peer acknowledges as data arrives: every read completes, the waiting one too */
	unsigned responses = 0;
	for (int round = 0; round < 64 && responses <= fit; round++) {
		struct nth_pdu p;
		while (host_next(q, &p))
			responses += p.type == NVME_TCP_CAPSULE_RESP;
		ftcp_ack(q);
		nvmet_tcp_poll(64);
	}
	cr_assert_eq(responses, fit + 1, "every read answered");
	cr_assert_eq(nvmet_tcp_waiting(), 0);
	cr_assert_eq(nvmet_tcp_stats()->resumed, 1);
	cr_assert_eq(nvmet_tcp_stats()->dram_cmds[NVMET_TCP_DRAM_OFF], fit + 1);
	nvmet_tcp_set_p2p(true);
}

/* Each DRAM fallback reason, counted with its bytes. */
Test(nvmet_tcp, dram_fallback_reasons)
{
	struct tcp_sock *q = io_queue_with(4096, false, true, false);
	static uint8_t w[16384], r[16384];
	const struct nvmet_tcp_stats *st = nvmet_tcp_stats();
	bool success;
	for (size_t i = 0; i < sizeof(w); i++)
		w[i] = pattern(i, 6);

	/* P2P refused between the drive and the NIC's provider: the write is copied to DRAM */
	fcmb_reach_rc = -EXDEV;
	host_write_r2t(q, 30, 0, w, sizeof(w), sizeof(w));
	cr_assert_eq(host_resp(q, NULL, NULL, NULL), 0);
	cr_assert_eq(st->dram_cmds[NVMET_TCP_DRAM_P2P_REFUSED], 1);
	cr_assert_eq(st->dram_bytes[NVMET_TCP_DRAM_P2P_REFUSED], sizeof(w));
	cr_assert_eq(last_cls, MEM_CLASS_HOST);
	fcmb_reach_rc = 0;
	/* ... and for reads: no provider both reach */
	fcmb_alloc_rc = -EXDEV;
	cr_assert_eq(host_read(q, 31, 0, r, sizeof(r), &success), 0);
	cr_assert_eq(memcmp(r, w, sizeof(r)), 0);
	cr_assert_eq(st->dram_cmds[NVMET_TCP_DRAM_P2P_REFUSED], 2);
	/* no CMB configured */
	fcmb_alloc_rc = -ENODEV;
	cr_assert_eq(host_read(q, 32, 0, r, sizeof(r), &success), 0);
	cr_assert_eq(st->dram_cmds[NVMET_TCP_DRAM_NO_CMB], 1);
	/* device memory full */
	fcmb_alloc_rc = -ENOMEM;
	cr_assert_eq(host_read(q, 33, 0, r, sizeof(r), &success), 0);
	cr_assert_eq(st->dram_cmds[NVMET_TCP_DRAM_ALLOC], 1);
	fcmb_alloc_rc = 0;
	/* nvmet.p2p = off: both directions */
	nvmet_tcp_set_p2p(false);
	host_write_r2t(q, 34, 64, w, sizeof(w), sizeof(w));
	cr_assert_eq(host_resp(q, NULL, NULL, NULL), 0);
	cr_assert_eq(host_read(q, 35, 64, r, sizeof(r), &success), 0);
	cr_assert_eq(memcmp(r, w, sizeof(r)), 0);
	cr_assert_eq(st->dram_cmds[NVMET_TCP_DRAM_OFF], 2);
	cr_assert_eq(last_cls, MEM_CLASS_HOST);
	nvmet_tcp_set_p2p(true);
	/* the NIC put the data in DRAM (nic.rx_mode = plain) */
	q->dev_frags = false;
	host_write_r2t(q, 36, 128, w, sizeof(w), sizeof(w));
	cr_assert_eq(host_resp(q, NULL, NULL, NULL), 0);
	cr_assert_eq(st->dram_cmds[NVMET_TCP_DRAM_NIC_DRAM], 1);
	cr_assert_eq(st->gathers, 2, "P2P refused and p2p off copied; plain-mode DRAM data used in place");
	cr_assert_eq(st->p2p_reads + st->p2p_writes, 0);
	ftcp_ack(q);
}

/* A data digest on reads needs the CPU to read the payload: DRAM, counted. */
Test(nvmet_tcp, dram_fallback_for_read_data_digest)
{
	struct tcp_sock *q = io_queue_with(4096, true, true, false);
	static uint8_t r[8192];
	struct nvme_sqe sqe = ft_sqe(NVME_CMD_READ, 40, 1, sizeof(r));
	sqe.cdw12 = le32_make(sizeof(r) / 512 - 1);
	ftcp_capsule(q, false, true, &sqe, NULL, 0);
	uint32_t got;
	cr_assert_eq(host_resp(q, NULL, r, &got), 0);
	cr_assert_eq(got, sizeof(r));
	cr_assert_eq(nvmet_tcp_stats()->dram_cmds[NVMET_TCP_DRAM_DIGEST], 1);
	cr_assert_eq(q->frag_bytes[MEM_CLASS_DEVICE], 0);
	ftcp_ack(q);
}

/* A connection to an address that is not the port's traddr is refused. */
Test(nvmet_tcp, connection_to_another_address_is_refused)
{
	struct tcp_sock *s = ftcp_arrive(0, 4096, 0x0a000002u);
	cr_assert(s->aborted, "refused");
	cr_assert_eq(nvmet_tcp_stats()->wrong_addr, 1);
	cr_assert_eq(nvmet_tcp_conn_count(), 0);
}

/* A configuration whose traddr is not one of the appliance's addresses does not start. */
Test(nvmet_tcp, traddr_not_local_refuses_to_start)
{
	static const char *const bad =
		"{ \"hosts\": [], \"ports\": [ { \"portid\": 1, \"addr\": { \"trtype\": \"tcp\", \"adrfam\": \"ipv4\","
		" \"traddr\": \"192.168.7.7\", \"trsvcid\": \"4420\" }, \"subsystems\": [] } ], \"subsystems\": [] }";
	static struct nvmet_config c2;
	char err[200];
	nvmet_tcp_stop();
	nvmet_fini();
	cr_assert_eq(nvmet_config_parse(bad, strlen(bad), &c2, err, sizeof(err), NULL, NULL), 0, "%s", err);
	cr_assert_eq(nvmet_init(&c2, ram_open, NULL), 0);
	cr_assert_eq(nvmet_tcp_start(&fcmb_ops), -EADDRNOTAVAIL);
	cr_assert_not(ftcp_listener.listener, "nothing listens");
	nvmet_fini();
	cr_assert_eq(nvmet_init(&cfg, ram_open, NULL), 0);
	cr_assert_eq(nvmet_tcp_start(&fcmb_ops), 0, "0.0.0.0 or a local address starts");
}

/* A write whose data is all in but must be copied to DRAM (nvmet.p2p = off) while every
 * DRAM chunk is held by reads waiting for their acknowledgement: it waits holding the
 * NIC's fragments, and completes with the right data once an acknowledgement frees chunks. */
Test(nvmet_tcp, write_waits_for_dram_to_gather_into)
{
	struct tcp_sock *q = io_queue_with(8192, false, true, false);
	const uint32_t len = NVMET_TCP_MAX_XFER;
	const unsigned fit = HOST_BUFS / (len / NVMET_TCP_BUF_SIZE);
	static uint8_t w[16384], r[16384];
	struct nth_pdu p;
	for (size_t i = 0; i < sizeof(w); i++)
		w[i] = pattern(i, 7);
	nvmet_tcp_set_p2p(false);
	q->space = 0; /* nothing goes out: the reads keep their chunks */
	for (unsigned k = 0; k < fit; k++) {
		struct nvme_sqe sqe = ft_sqe(NVME_CMD_READ, (uint16_t)(20 + k), 1, len);
		sqe.cdw12 = le32_make(len / 512 - 1);
		ftcp_capsule(q, false, false, &sqe, NULL, 0);
	}
	cr_assert_eq(nvmet_tcp_waiting(), 0, "the reads hold the host's share of the chunks");
	/* the write's R2T cannot go out either (no space): give room for the R2T only */
	struct nvme_sqe sqe = ft_sqe(NVME_CMD_WRITE, 50, 1, sizeof(w));
	sqe.cdw10 = le32_make(3000);
	sqe.cdw12 = le32_make(sizeof(w) / 512 - 1);
	q->space = 24;
	ftcp_capsule(q, false, false, &sqe, NULL, 0);
	cr_assert(host_next(q, &p));
	cr_assert_eq(p.type, NVME_TCP_R2T);
	uint16_t ttag;
	memcpy(&ttag, p.hdr + 10, 2);
	unsigned held0 = ftcp_handed - ftcp_released;
	ftcp_h2c(q, false, false, 50, ttag, 0, w, sizeof(w), true);
	cr_assert_eq(nvmet_tcp_waiting(), 1, "the write waits for DRAM to gather into");
	cr_assert_gt(ftcp_handed - ftcp_released, held0, "holding the NIC's fragments meanwhile");
	unsigned bios0 = bios;
	/* acknowledgements: the reads go out and free their chunks; the write resumes */
	for (int round = 0; round < 64 && nvmet_tcp_waiting(); round++) {
		while (host_next(q, &p))
			;
		ftcp_ack(q);
		nvmet_tcp_poll(64);
	}
	cr_assert_eq(nvmet_tcp_waiting(), 0);
	cr_assert_gt(bios, bios0);
	cr_assert_eq(nvmet_tcp_stats()->dram_cmds[NVMET_TCP_DRAM_OFF], fit + 1);
	for (int round = 0; round < 64; round++) {
		while (host_next(q, &p))
			;
		ftcp_ack(q);
		nvmet_tcp_poll(64);
	}
	nvmet_tcp_set_p2p(true);
	bool success;
	cr_assert_eq(host_read(q, 51, 3000, r, sizeof(r), &success), 0);
	cr_assert_eq(memcmp(r, w, sizeof(r)), 0, "the gathered write is on the disk");
	ftcp_ack(q);
}

/* An in-capsule write whose SGL asks for more than the capsule carries, on each placement
 * (the NIC's fragments in place, and gathered into DRAM because P2P is refused): refused
 * with SGL Length Invalid, nothing written (issue 13, 1: the gather path wrote the
 * uninitialised rest of its DRAM chunks to the namespace). */
Test(nvmet_tcp, in_capsule_write_shorter_than_its_sgl_is_refused_on_every_placement)
{
	struct tcp_sock *q = io_queue_with(512, false, true, false);
	static uint8_t w[4096], r[8192], zero[8192];
	bool success;
	for (size_t i = 0; i < sizeof(w); i++)
		w[i] = pattern(i, 9);
	for (int refused = 0; refused < 2; refused++) {
		fcmb_reach_rc = refused ? -EXDEV : 0;
		struct nvme_sqe sqe = ft_sqe(NVME_CMD_WRITE, (uint16_t)(60 + refused), 1, sizeof(r)); /* SGL: 8 KiB */
		sqe.cdw10 = le32_make(100);
		sqe.cdw12 = le32_make(15);                                                  /* 16 blocks: 8 KiB */
		ftcp_capsule(q, false, false, &sqe, w, sizeof(w));               /* carries 4 KiB */
		cr_assert_eq(host_resp(q, NULL, NULL, NULL), NVMET_SC_SGL_LENGTH_INVALID,
			     "refused (P2P %s)", refused ? "refused" : "allowed");
		cr_assert_eq(host_read(q, (uint16_t)(70 + refused), 100, r, sizeof(r), &success), 0);
		cr_assert_eq(memcmp(r, zero, sizeof(r)), 0, "nothing written");
	}
	fcmb_reach_rc = 0;
	ftcp_ack(q);
}

/* A read larger than a command may move is refused at once with a status, not parked
 * forever at the head of the waiters (issue 13, 2). */
Test(nvmet_tcp, read_beyond_mdts_is_refused_at_once)
{
	struct tcp_sock *q = io_queue_with(8192, false, false, false);
	const uint32_t len = 2 * NVMET_TCP_MAX_XFER;
	struct nvme_sqe sqe = ft_sqe(NVME_CMD_READ, 5, 1, len);
	sqe.cdw12 = le32_make(len / 512 - 1);
	ftcp_capsule(q, false, false, &sqe, NULL, 0);
	cr_assert_eq(nvmet_tcp_waiting(), 0, "nothing waits");
	cr_assert_eq(host_resp(q, NULL, NULL, NULL), NVMET_SC_SGL_LENGTH_INVALID, "refused with a status");
}

/* A second I/O queue (qid 2) of the controller on connection i. */
static struct tcp_sock *second_io_queue(unsigned i, uint16_t cntlid)
{
	struct tcp_sock *q = ftcp_connect(i, 8192);
	uint8_t cd[1024];
	struct nvme_sqe sqe = ft_connect_sqe(2, 63, 0);
	establish(q, 0);
	ft_connect_data(cd, HOST, VOL0, cntlid);
	ftcp_capsule(q, false, false, &sqe, cd, sizeof(cd));
	cr_assert_eq(host_resp(q, NULL, NULL, NULL), 0, "Connect qid 2");
	return q;
}

/* Waiting is per connection: a large read that cannot get its DRAM yet does not hold back
 * a small read of another connection that can (issue 13, 2: one global FIFO did). */
Test(nvmet_tcp, waiting_is_per_connection)
{
	struct tcp_sock *q = io_queue_with(8192, false, false, false);
	struct tcp_sock *q2 = second_io_queue(2, 1);
	const uint32_t big = NVMET_TCP_MAX_XFER, chunk = NVMET_TCP_BUF_SIZE;
	const unsigned fit = HOST_BUFS / (big / chunk);
	struct nth_pdu p;
	nvmet_tcp_set_p2p(false);
	/* q holds its host's share of the DRAM chunks but half a command's worth (reads not
	 * acknowledged) */
	for (unsigned k = 0; k < fit; k++) {
		uint32_t len = k + 1 < fit ? big : big / 2;
		struct nvme_sqe sqe = ft_sqe(NVME_CMD_READ, (uint16_t)(10 + k), 1, len);
		sqe.cdw12 = le32_make(len / 512 - 1);
		ftcp_capsule(q, false, false, &sqe, NULL, 0);
	}
	/* one more large read on q: it waits for chunks */
	struct nvme_sqe sqe = ft_sqe(NVME_CMD_READ, 40, 1, big);
	sqe.cdw12 = le32_make(big / 512 - 1);
	ftcp_capsule(q, false, false, &sqe, NULL, 0);
	cr_assert_eq(nvmet_tcp_waiting(), 1);
	/* a 16 KiB read on the other connection fits in what is left: it runs now */
	uint8_t r[16384];
	sqe = ft_sqe(NVME_CMD_READ, 41, 1, sizeof(r));
	sqe.cdw12 = le32_make(sizeof(r) / 512 - 1);
	ftcp_capsule(q2, false, false, &sqe, NULL, 0);
	cr_assert_eq(nvmet_tcp_waiting(), 1, "only the large read waits");
	cr_assert_eq(host_resp(q2, NULL, r, NULL), 0, "the other connection's read completed");
	/* the host acknowledges: the large read gets its chunks */
	unsigned responses = 0;
	for (int round = 0; round < 64 && responses <= fit; round++) {
		while (host_next(q, &p))
			responses += p.type == NVME_TCP_CAPSULE_RESP;
		ftcp_ack(q);
		nvmet_tcp_poll(64);
	}
	cr_assert_eq(responses, fit + 1, "every read of q answered");
	cr_assert_eq(nvmet_tcp_waiting(), 0);
	nvmet_tcp_set_p2p(true);
	ftcp_ack(q2);
}

/* Nothing is committed before Connect: a write gets no R2T and no write budget, a read
 * no buffer; both are answered Command Sequence Error (issue 13, 3). */
Test(nvmet_tcp, nothing_committed_before_connect)
{
	struct tcp_sock *s = ftcp_connect(1, 4096);
	struct nth_pdu p;
	establish(s, 0);
	struct nvme_sqe sqe = ft_sqe(NVME_CMD_WRITE, 7, 1, 131072);
	sqe.cdw12 = le32_make(255);
	ftcp_capsule(s, false, false, &sqe, NULL, 0);
	cr_assert(host_next(s, &p));
	cr_assert_eq(p.type, NVME_TCP_CAPSULE_RESP, "no R2T before Connect (got type %u)", p.type);
	cr_assert_eq(nvmet_tcp_stats()->r2ts, 0);
	s->tx_read -= p.plen;
	cr_assert_eq(host_resp(s, NULL, NULL, NULL), NVMET_SC_CMD_SEQ_ERROR);
	sqe = ft_sqe(NVME_CMD_READ, 8, 1, 131072);
	sqe.cdw12 = le32_make(255);
	ftcp_capsule(s, false, false, &sqe, NULL, 0);
	cr_assert_eq(host_resp(s, NULL, NULL, NULL), NVMET_SC_CMD_SEQ_ERROR);
	cr_assert_eq(nvmet_tcp_stats()->dram_cmds[NVMET_TCP_DRAM_NO_CMB] + nvmet_tcp_stats()->p2p_reads, 0,
		     "no buffer for the read");
	ftcp_eof(s);
}

/* A connection that sends no ICReq, or no Connect after it, is closed after
 * NVMET_TCP_CONNECT_TIMEOUT_MS (issue 13, 3). */
Test(nvmet_tcp, icreq_and_connect_time_out)
{
	struct tcp_sock *silent = ftcp_connect(0, 4096);
	struct tcp_sock *no_connect = ftcp_connect(1, 4096);
	establish(no_connect, 0);
	fake_clock_advance((NVMET_TCP_CONNECT_TIMEOUT_MS - 1) * NSEC_PER_MSEC);
	ftcp_pass();
	cr_assert(ftcp_open(silent) && ftcp_open(no_connect), "not yet");
	fake_clock_advance(2 * NSEC_PER_MSEC);
	ftcp_pass();
	cr_assert_not(ftcp_open(silent), "no ICReq: closed");
	cr_assert_not(ftcp_open(no_connect), "no Connect: closed");
	cr_assert_eq(nvmet_tcp_stats()->timeouts, 2);
	ftcp_pass();
	cr_assert_eq(nvmet_tcp_conn_count(), 0);
	cr_assert_eq(nvmet_queue_count(), 0);
}

/* An R2T whose data never comes ends the connection after NVMET_TCP_R2T_TIMEOUT_MS, and
 * the write budget it held comes back (issue 13, 3). */
Test(nvmet_tcp, r2t_data_that_never_comes_times_out)
{
	struct tcp_sock *q = io_queue_with(8192, false, false, false);
	struct nth_pdu p;
	struct nvme_sqe sqe = ft_sqe(NVME_CMD_WRITE, 9, 1, 131072);
	sqe.cdw12 = le32_make(255);
	ftcp_capsule(q, false, false, &sqe, NULL, 0);
	cr_assert(host_next(q, &p));
	cr_assert_eq(p.type, NVME_TCP_R2T);
	fake_clock_advance((NVMET_TCP_R2T_TIMEOUT_MS - 1) * NSEC_PER_MSEC);
	ftcp_pass();
	cr_assert(ftcp_open(q), "not yet");
	fake_clock_advance(200 * NSEC_PER_MSEC);
	ftcp_pass();
	cr_assert_not(ftcp_open(q), "closed: the data never came");
	cr_assert_eq(nvmet_tcp_stats()->timeouts, 1);
	ftcp_pass();
	cr_assert_eq(nvmet_tcp_conn_count(), 1, "the admin connection stays");
}

/* Device memory for read data is shared per host address too: a host whose unacknowledged
 * reads hold NVMET_TCP_HOST_DEVICE_MAX of it gets its next read through DRAM (counted as
 * cmb-full), the rest of the device memory stays for other hosts. */
Test(nvmet_tcp, a_host_holds_at_most_its_share_of_device_memory)
{
	struct tcp_sock *q = io_queue_with(8192, false, false, false);
	struct tcp_sock *q2 = second_io_queue(2, 1);
	const uint32_t len = NVMET_TCP_MAX_XFER;
	const unsigned fit = NVMET_TCP_HOST_DEVICE_MAX / len;
	struct nth_pdu p;
	cr_assert_leq(fit, NVMET_TCP_QUEUE_DEPTH);
	q->space = 0; /* the reads stay unacknowledged, their device memory held */
	for (unsigned k = 0; k < fit; k++) {
		struct nvme_sqe sqe = ft_sqe(NVME_CMD_READ, (uint16_t)(10 + k), 1, len);
		sqe.cdw12 = le32_make(len / 512 - 1);
		ftcp_capsule(q, false, false, &sqe, NULL, 0);
	}
	cr_assert_eq(nvmet_tcp_stats()->p2p_reads, fit);
	cr_assert_eq(fcmb_in_use, NVMET_TCP_HOST_DEVICE_MAX / FCMB_GRANULE);
	uint8_t r[4096];
	struct nvme_sqe sqe = ft_sqe(NVME_CMD_READ, 99, 1, sizeof(r));
	sqe.cdw12 = le32_make(sizeof(r) / 512 - 1);
	ftcp_capsule(q2, false, false, &sqe, NULL, 0);
	cr_assert_eq(host_resp(q2, NULL, r, NULL), 0, "served, through DRAM");
	cr_assert_eq(nvmet_tcp_stats()->dram_cmds[NVMET_TCP_DRAM_ALLOC], 1, "the host's share is used up");
	cr_assert_eq(nvmet_tcp_stats()->p2p_reads, fit);
	for (int round = 0; round < 1024 && fcmb_in_use; round++) {
		while (host_next(q, &p))
			;
		ftcp_tx_drop(q); /* (read: the fake's TX buffer is not the stack's, keep it short) */
		ftcp_ack(q);
		nvmet_tcp_poll(64);
	}
	cr_assert_eq(fcmb_in_use, 0);
	cr_assert(ftcp_open(q), "the connection lives");
	ftcp_ack(q2);
}

/* A read of one DRAM chunk while the host is within its shares takes the one-check path
 * of nvmet_tcp_dbuf_get (counted dbuf_fast) and its C2HData PDU one fragment
 * (nvmet_tcp_dbuf_frag1); a read of several chunks takes the general path and PDUs that
 * span chunks the fragment loop; once the host holds its share of the chunks, a one-chunk
 * read is refused by the general check (host_share counted) and waits, and runs when the
 * peer acknowledges. The same bytes on every path, every buffer back. */
Test(nvmet_tcp, a_one_chunk_read_takes_one_check_and_falls_back_at_the_share)
{
	struct tcp_sock *q = io_queue_with(8192, false, true, false);
	static uint8_t w[NVMET_TCP_MAX_XFER], r[NVMET_TCP_MAX_XFER];
	const uint32_t len = NVMET_TCP_MAX_XFER;
	for (size_t i = 0; i < sizeof(w); i++)
		w[i] = pattern(i, 9);
	host_write_r2t(q, 1, 0, w, sizeof(w), 65536);
	cr_assert_eq(host_resp(q, NULL, NULL, NULL), 0);
	nvmet_tcp_set_p2p(false);
	const struct nvmet_tcp_stats *st = nvmet_tcp_stats();

	/* one chunk: the fast path, one fragment */
	uint64_t fast = st->dbuf_fast, pdus = st->c2h_pdus;
	bool success;
	cr_assert_eq(host_read(q, 2, 0, r, 4096, &success), 0);
	cr_assert_eq(memcmp(r, w, 4096), 0);
	cr_assert_eq(st->dbuf_fast, fast + 1, "the one-chunk read took the one-check path");
	cr_assert_eq(st->c2h_pdus, pdus + 1);
	ftcp_ack(q);

	/* several chunks: the general path, a PDU over two chunks (the fragment loop) */
	fast = st->dbuf_fast;
	cr_assert_eq(host_read(q, 3, 0, r, 2 * NVMET_TCP_BUF_SIZE, &success), 0);
	cr_assert_eq(memcmp(r, w, 2 * NVMET_TCP_BUF_SIZE), 0);
	cr_assert_eq(st->dbuf_fast, fast, "a read of several chunks takes the general path");
	ftcp_ack(q);

	/* the host's share of chunks held by unacknowledged reads: a one-chunk read waits */
	const unsigned fit = HOST_BUFS / (len / NVMET_TCP_BUF_SIZE);
	for (unsigned k = 0; k < fit; k++) {
		struct nvme_sqe sqe = ft_sqe(NVME_CMD_READ, (uint16_t)(20 + k), 1, len);
		sqe.cdw10 = le32_make(0);
		sqe.cdw12 = le32_make(len / 512 - 1);
		ftcp_capsule(q, false, false, &sqe, NULL, 0);
	}
	uint64_t share = st->host_share;
	fast = st->dbuf_fast;
	struct nvme_sqe sqe = ft_sqe(NVME_CMD_READ, 60, 1, 4096);
	sqe.cdw10 = le32_make(0);
	sqe.cdw12 = le32_make(4096 / 512 - 1);
	ftcp_capsule(q, false, false, &sqe, NULL, 0);
	cr_assert_eq(nvmet_tcp_waiting(), 1, "the one-chunk read past the host's share waits");
	cr_assert_gt(st->host_share, share, "refused by the general check");
	cr_assert_eq(st->dbuf_fast, fast);
	unsigned responses = 0;
	for (int round = 0; round < 64 && responses <= fit; round++) {
		struct nth_pdu p;
		while (host_next(q, &p))
			responses += p.type == NVME_TCP_CAPSULE_RESP;
		ftcp_ack(q);
		nvmet_tcp_poll(64);
	}
	cr_assert_eq(responses, fit + 1, "every read answered, the waiting one too");
	cr_assert_eq(nvmet_tcp_waiting(), 0);
	nvmet_tcp_set_p2p(true);
}

static void find_dbuf_pool(const struct mm_pool *p, void *arg)
{
	if (!strcmp(p->name, "nvmet_tcp_dbuf"))
		*(const struct mm_pool **)arg = p;
}

/* The last reference on a one-chunk read's buffer keeps it with its chunk as a spare: the
 * next one-chunk read takes it instead of a take of each pool (two frees and two takes
 * per read before); the bytes are the next read's own. A read of several chunks still
 * takes the pools; at stop the spares go back (the pools at zero: the fixture's check). */
Test(nvmet_tcp, a_one_chunk_read_takes_the_last_ones_buffer_with_its_chunk)
{
	struct tcp_sock *q = io_queue_with(8192, false, true, false);
	static uint8_t w[2 * NVMET_TCP_BUF_SIZE], r[2 * NVMET_TCP_BUF_SIZE];
	const struct mm_pool *dbufs = NULL;
	bool success;

	for (size_t i = 0; i < sizeof(w); i++)
		w[i] = pattern(i, 11);
	host_write_r2t(q, 1, 0, w, sizeof(w), 65536);
	cr_assert_eq(host_resp(q, NULL, NULL, NULL), 0);
	nvmet_tcp_set_p2p(false);
	mm_pool_foreach(find_dbuf_pool, &dbufs);
	cr_assert_not_null(dbufs);

	cr_assert_eq(host_read(q, 2, 0, r, 4096, &success), 0);
	ftcp_ack(q);
	uint64_t allocs = dbufs->allocs;
	size_t in_use = dbufs->in_use;
	cr_assert_eq(host_read(q, 3, 8, r, 4096, &success), 0);
	cr_assert_eq(memcmp(r, w + 4096, 4096), 0, "the next read's own bytes");
	ftcp_ack(q);
	cr_assert_eq(dbufs->allocs, allocs, "the second read took the first one's buffer, no pool");
	cr_assert_eq(dbufs->in_use, in_use, "kept, not leaked");

	cr_assert_eq(host_read(q, 4, 0, r, sizeof(r), &success), 0);
	cr_assert_eq(memcmp(r, w, sizeof(r)), 0);
	ftcp_ack(q);
	cr_assert_eq(dbufs->allocs, allocs + 1, "several chunks: the general path takes the pools");
	nvmet_tcp_set_p2p(true);
}

static unsigned clock_reads;

static uint64_t counting_clock(void)
{
	clock_reads++;
	return 0;
}

/* A pass with nothing to do reads no clock: the timeouts (Connect, late R2T data) come by
 * a timer of the loop's queue, not by a look at the clock on every pass (~18 instructions
 * per I/O, a call into the emulator per pass under QEMU). */
Test(nvmet_tcp, an_idle_pass_reads_no_clock)
{
	struct tcp_sock *q = io_queue_with(8192, false, false, false);
	clock_source_fn fake = clock_source_now;

	cr_assert(ftcp_open(q));
	nvmet_tcp_poll(64); /* whatever the connections brought */
	clock_reads = 0;
	clock_set_source(counting_clock);
	for (int i = 0; i < 8; i++)
		cr_assert_eq(nvmet_tcp_poll(64), 0, "nothing to do");
	clock_set_source(fake);
	cr_assert_eq(clock_reads, 0, "%u clock reads in 8 idle passes", clock_reads);
}
