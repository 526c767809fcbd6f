// sources: drivers/nvme/target/nvmet_tcp.c drivers/nvme/target/nvmet_tcp_buf.c drivers/nvme/target/nvmet_tcp_rx.c drivers/nvme/target/nvmet_tcp_pdu.c drivers/nvme/target/nvmet_core.c drivers/nvme/target/nvmet_fabrics.c drivers/nvme/target/nvmet_admin.c drivers/nvme/target/nvmet_io.c drivers/nvme/target/nvmet_bdev_ram.c drivers/nvme/target/nvmet_config.c drivers/nic/netdev.c lib/crc32.c lib/ipv4_text.c mm/pool.c mm/dma.c lib/timer.c lib/log.c tests/unit/drivers/nvme/target/fake_nvmet_transport.c
/*
 * NVMe/TCP transport over a fake socket layer, the real framing and the real target core
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
#include "net/tcp/tcp.h"
#include "fake_nvmet_transport.h"
#include "tests/unit/unit_support.h"

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

/* --- the fake socket layer --- */

#define FS_RX_MAX (1024 * 1024)
#define FS_TX_MAX (6 * 1024 * 1024)
#define FS_TOKENS 8192
#define FS_HELD 512
#define LOCAL_ADDR 0x0a000001u   /* 10.0.0.1: the port's traddr */

struct tcp_sock {
	bool listener, closed, aborted, eof, accepted;
	uint16_t port;
	uint32_t laddr;           /* the local address the host connected to */
	const struct tcp_ops *ops;
	void *ctx;
	uint8_t rx[FS_RX_MAX];    /* the byte stream from the host */
	size_t rx_len, rx_off;    /* queued, handed out */
	size_t frag_size;         /* cut into fragments of this size */
	bool dev_frags;           /* hand them out as device memory (a CMB) of provider 1 */
	uint8_t tx[FS_TX_MAX];    /* what the target sent */
	size_t tx_len, tx_read;
	size_t space;             /* send space left */
	unsigned flushes;
	struct netdev_frag held[FS_HELD]; /* zero-copy sends not yet acknowledged */
	unsigned nheld;
	uint64_t frag_bytes[MEM_CLASS_COUNT]; /* zero-copy bytes sent, by memory class */
};

static struct tcp_sock fs_listener;
static struct tcp_sock fs_conns[4];
static unsigned fs_pending;      /* index of the next connection to accept, +1; 0 none */
static unsigned fs_handed, fs_released;
static unsigned fs_release_count[FS_TOKENS];

static void fs_release(struct netdev_frag_owner *o, uint64_t token)
{
	(void)o;
	cr_assert_lt(token, FS_TOKENS);
	fs_release_count[token]++;
	cr_assert_eq(fs_release_count[token], 1, "fragment %lu released twice", (unsigned long)token);
	fs_released++;
}
static struct netdev_frag_owner fs_owner = { "fake-socket", fs_release };

static int fs_listen(uint16_t port, unsigned backlog, const struct tcp_ops *ops, void *ctx, struct tcp_sock **out)
{
	(void)backlog;
	cr_assert_not(fs_listener.listener, "one listener");
	fs_listener.listener = true;
	fs_listener.port = port;
	fs_listener.ops = ops;
	fs_listener.ctx = ctx;
	*out = &fs_listener;
	return 0;
}

static struct tcp_sock *fs_accept(struct tcp_sock *l)
{
	cr_assert_eq(l, &fs_listener);
	if (!fs_pending)
		return NULL;
	struct tcp_sock *s = &fs_conns[fs_pending - 1];
	fs_pending = 0;
	s->accepted = true;
	return s;
}

static void fs_set_ops(struct tcp_sock *s, const struct tcp_ops *ops, void *ctx)
{
	s->ops = ops;
	s->ctx = ctx;
}

static int fs_recv_frags(struct tcp_sock *s, struct netdev_frag *out, unsigned max, size_t max_bytes)
{
	unsigned n = 0;
	cr_assert_not(s->closed || s->aborted, "recv on a closed socket");
	while (n < max && s->rx_off < s->rx_len && max_bytes) {
		size_t len = s->rx_len - s->rx_off;
		if (len > s->frag_size)
			len = s->frag_size;
		if (len > max_bytes)
			len = max_bytes;
		cr_assert_lt(fs_handed, FS_TOKENS);
		out[n] = (struct netdev_frag){ .addr = dma_addr_host(s->rx + s->rx_off), .offset = s->rx_off,
					       .len = (uint32_t)len, .token = fs_handed++, .owner = &fs_owner };
		if (s->dev_frags) {
			out[n].addr.cls = MEM_CLASS_DEVICE;
			out[n].provider = 1;
		}
		s->rx_off += len;
		max_bytes -= len;
		n++;
	}
	return (int)n;
}

static bool fs_recv_eof(const struct tcp_sock *s)
{
	return s->eof && s->rx_off == s->rx_len;
}

static size_t fs_send_space(const struct tcp_sock *s)
{
	return s->space;
}

static long fs_send_copy(struct tcp_sock *s, const void *buf, size_t len)
{
	cr_assert_not(s->closed || s->aborted, "send on a closed socket");
	if (len > s->space)
		len = s->space;
	cr_assert_leq(s->tx_len + len, sizeof(s->tx));
	memcpy(s->tx + s->tx_len, buf, len);
	s->tx_len += len;
	s->space -= len;
	return (long)len;
}

/* Zero copy: the bytes go on the wire (copied here for the test to read), the fragments
 * stay held until fs_ack(). */
static int fs_send_frags(struct tcp_sock *s, const struct netdev_frag *frags, unsigned n)
{
	size_t total = 0;
	cr_assert_not(s->closed || s->aborted, "send on a closed socket");
	for (unsigned i = 0; i < n; i++)
		total += frags[i].len;
	if (total > s->space || s->nheld + n > FS_HELD) {
		for (unsigned i = 0; i < n; i++) {
			struct netdev_frag f = frags[i];
			netdev_frag_release(&f);
		}
		return -ENOBUFS;
	}
	for (unsigned i = 0; i < n; i++) {
		cr_assert_leq(s->tx_len + frags[i].len, sizeof(s->tx));
		memcpy(s->tx + s->tx_len, (const void *)(uintptr_t)frags[i].addr.bus, frags[i].len);
		s->tx_len += frags[i].len;
		s->frag_bytes[frags[i].addr.cls] += frags[i].len;
		s->held[s->nheld++] = frags[i];
	}
	s->space -= total;
	return 0;
}

/* The peer acknowledged everything: held fragments go back to their owner, the send
 * space is whole again (TCP_EV_SENT). */
static void fs_release_held(struct tcp_sock *s)
{
	for (unsigned i = 0; i < s->nheld; i++)
		netdev_frag_release(&s->held[i]);
	s->nheld = 0;
}

static void fs_ack(struct tcp_sock *s)
{
	fs_release_held(s);
	s->space = TCP_SND_BUF;
	s->ops->event(s, s->ctx, TCP_EV_SENT);
}

static void fs_flush(struct tcp_sock *s)
{
	s->flushes++;
}

static void fs_close(struct tcp_sock *s)
{
	if (s == &fs_listener) {
		s->listener = false;
		return;
	}
	cr_assert_not(s->closed || s->aborted, "closed twice");
	s->closed = true;
	fs_release_held(s); /* as the stack does once the data is delivered or the socket dies */
}

static void fs_abort(struct tcp_sock *s)
{
	cr_assert_not(s->closed || s->aborted, "closed twice");
	s->aborted = true;
	fs_release_held(s);
}

static uint32_t fs_local_addr(const struct tcp_sock *s)
{
	return s->laddr;
}

static bool fs_addr_is_local(uint32_t a)
{
	return a == LOCAL_ADDR;
}

static const struct nvmet_tcp_sock_ops fs_ops = {
	.listen = fs_listen, .accept = fs_accept, .set_ops = fs_set_ops, .recv_frags = fs_recv_frags,
	.recv_eof = fs_recv_eof, .send_space = fs_send_space, .send_copy = fs_send_copy,
	.send_frags = fs_send_frags, .flush = fs_flush, .close = fs_close, .abort = fs_abort,
	.local_addr = fs_local_addr, .addr_is_local = fs_addr_is_local,
};

/* --- fake device memory: a "CMB" in host memory (tests dereference it), provider 1 --- */

#define CMB_SIZE (2u * 1024 * 1024)
#define CMB_GRANULE 4096u
static uint8_t cmb[CMB_SIZE] __attribute__((aligned(4096)));
static bool cmb_used[CMB_SIZE / CMB_GRANULE];
static unsigned cmb_in_use, cmb_allocs;
static int mem_reach_rc, mem_alloc_rc;   /* forced results (0: the real answer) */

static int mem_reach(const struct nvmet_bdev *b, uint16_t provider, const char **why)
{
	(void)b;
	*why = mem_reach_rc ? "forced by the test" : NULL;
	if (mem_reach_rc)
		return mem_reach_rc;
	return provider == 1 ? 0 : -ENODEV;
}

static int mem_alloc(const struct nvmet_bdev *b, uint32_t len, struct netdev_frag *out, const char **why)
{
	unsigned need = (len + CMB_GRANULE - 1) / CMB_GRANULE, run = 0;
	(void)b;
	*why = mem_alloc_rc ? "forced by the test" : NULL;
	if (mem_alloc_rc)
		return mem_alloc_rc;
	for (unsigned i = 0; i < CMB_SIZE / CMB_GRANULE; i++) {
		run = cmb_used[i] ? 0 : run + 1;
		if (run < need)
			continue;
		unsigned first = i + 1 - need;
		for (unsigned k = first; k <= i; k++)
			cmb_used[k] = true;
		cmb_in_use += need;
		cmb_allocs++;
		memset(out, 0, sizeof(*out));
		out->addr = (dma_addr_t){ (uint64_t)(uintptr_t)(cmb + first * CMB_GRANULE), MEM_CLASS_DEVICE };
		out->offset = first * CMB_GRANULE;
		out->len = len;
		out->provider = 1;
		return 0;
	}
	*why = "fake CMB full";
	return -ENOMEM;
}

static void mem_free(const struct netdev_frag *f)
{
	unsigned first = (unsigned)(f->offset / CMB_GRANULE), n = (f->len + CMB_GRANULE - 1) / CMB_GRANULE;
	cr_assert_eq(f->addr.cls, MEM_CLASS_DEVICE);
	for (unsigned k = first; k < first + n; k++) {
		cr_assert(cmb_used[k], "CMB granule %u freed twice", k);
		cmb_used[k] = false;
	}
	cmb_in_use -= n;
}

static const struct nvmet_tcp_mem_ops mem_ops = { .reach = mem_reach, .alloc = mem_alloc, .free = mem_free };

/* A new connection i through the listener. */
static struct tcp_sock *fs_connect(unsigned i, size_t frag_size)
{
	struct tcp_sock *s = &fs_conns[i];
	memset(s, 0, sizeof(*s));
	s->frag_size = frag_size;
	s->laddr = LOCAL_ADDR;
	s->space = TCP_SND_BUF;
	fs_pending = i + 1;
	fs_listener.ops->event(&fs_listener, fs_listener.ctx, TCP_EV_ACCEPT);
	cr_assert(s->accepted);
	cr_assert_not_null(s->ops, "the transport took the socket");
	return s;
}

/* The host sends bytes (delivered with TCP_EV_RECV). */
static void host_send(struct tcp_sock *s, const void *buf, size_t len)
{
	cr_assert_leq(s->rx_len + len, sizeof(s->rx));
	memcpy(s->rx + s->rx_len, buf, len);
	s->rx_len += len;
	s->ops->event(s, s->ctx, TCP_EV_RECV);
}

static void st32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

static uint32_t ld32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return v;
}

static void host_icreq(struct tcp_sock *s, uint16_t pfv, uint8_t hpda, uint8_t dgst)
{
	uint8_t b[128] = { NVME_TCP_ICREQ, 0, 128, 0 };
	st32(b + 4, 128);
	memcpy(b + 8, &pfv, 2);
	b[10] = hpda;
	b[11] = dgst;
	st32(b + 12, 3); /* MAXR2T */
	host_send(s, b, sizeof(b));
}

/* A CapsuleCmd with len bytes of in-capsule data (digests as negotiated). */
static void host_capsule(struct tcp_sock *s, bool hdgst, bool ddgst, const struct nvme_sqe *sqe, const void *data,
			 uint32_t len)
{
	static uint8_t b[72 + 4 + 8192 + 4];
	uint32_t hl = 72 + (hdgst ? 4 : 0);
	uint32_t plen = hl + len + (len && ddgst ? 4 : 0);
	memset(b, 0, hl);
	b[0] = NVME_TCP_CAPSULE_CMD;
	b[1] = (uint8_t)((hdgst ? NVME_TCP_F_HDGSTF : 0) | (len && ddgst ? NVME_TCP_F_DDGSTF : 0));
	b[2] = 72;
	b[3] = len ? (uint8_t)hl : 0;
	st32(b + 4, plen);
	memcpy(b + 8, sqe, 64);
	if (hdgst)
		st32(b + 72, crc32c(0, b, 72));
	if (len)
		memcpy(b + hl, data, len);
	if (len && ddgst)
		st32(b + hl + len, crc32c(0, data, len));
	host_send(s, b, plen);
}

/* The next PDU the target sent: its header fields; data (C2HData) copied to data. */
struct rx_pdu {
	uint8_t type, flags, hlen, pdo;
	uint32_t plen;
	const uint8_t *hdr;
	const uint8_t *data;
	uint32_t datal;
};

static bool host_next(struct tcp_sock *s, struct rx_pdu *p)
{
	if (s->tx_read == s->tx_len)
		return false;
	cr_assert_geq(s->tx_len - s->tx_read, 8);
	const uint8_t *h = s->tx + s->tx_read;
	p->type = h[0];
	p->flags = h[1];
	p->hlen = h[2];
	p->pdo = h[3];
	p->plen = ld32(h + 4);
	p->hdr = h;
	cr_assert_leq(p->plen, s->tx_len - s->tx_read, "a whole PDU");
	if (p->flags & NVME_TCP_F_HDGSTF)
		cr_assert_eq(ld32(h + p->hlen), crc32c(0, h, p->hlen), "header digest");
	p->data = p->pdo ? h + p->pdo : NULL;
	p->datal = p->pdo ? p->plen - p->pdo - ((p->flags & NVME_TCP_F_DDGSTF) ? 4 : 0) : 0;
	if (p->datal && (p->flags & NVME_TCP_F_DDGSTF))
		cr_assert_eq(ld32(p->data + p->datal), crc32c(0, p->data, p->datal), "data digest");
	s->tx_read += p->plen;
	return true;
}

/* The CapsuleResp of a command (after any C2HData, copied to rbuf): status >> 1. */
static uint16_t host_resp(struct tcp_sock *s, struct nvme_cqe *cqe, void *rbuf, uint32_t *rlen)
{
	struct rx_pdu p;
	uint32_t got = 0;
	while (host_next(s, &p)) {
		if (p.type == NVME_TCP_C2H_DATA) {
			uint32_t datao = ld32(p.hdr + 12);
			cr_assert_eq(datao, got, "C2HData in order");
			cr_assert_eq(ld32(p.hdr + 16), p.datal);
			if (rbuf)
				memcpy((uint8_t *)rbuf + got, p.data, p.datal);
			got += p.datal;
			continue;
		}
		cr_assert_eq(p.type, NVME_TCP_CAPSULE_RESP, "got PDU type %u FES %u FEI %u", p.type, p.hdr[8], ld32(p.hdr + 10));
		struct nvme_cqe c;
		memcpy(&c, p.hdr + 8, 16);
		if (cqe)
			*cqe = c;
		if (rlen)
			*rlen = got;
		return (uint16_t)((c.status >> 1) & 0x7ff);
	}
	cr_assert_fail("no CapsuleResp");
	return 0xffff;
}

/* --- fixture --- */

static struct nvmet_config cfg;

/* The RAM disk, watched: bios submitted and the segments of the last one (one NVMe
 * command per host I/O gathering all of its fragments). */
static const struct nvmet_bdev_ops *ram_ops;
static unsigned bios, last_nsg, last_op;
static enum mem_class last_cls;

static int watch_submit(struct nvmet_bdev *b, struct nvmet_bio *bio)
{
	bios++;
	last_nsg = bio->nsg;
	last_op = bio->op;
	last_cls = bio->nsg ? bio->sg[0].addr.cls : MEM_CLASS_HOST;
	for (unsigned i = 1; i < bio->nsg; i++)
		cr_assert_eq(bio->sg[i].addr.cls, last_cls, "one command never mixes memories");
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
	timer_queue_init(&timer_default_queue);
	memset(&fs_listener, 0, sizeof(fs_listener));
	memset(fs_release_count, 0, sizeof(fs_release_count));
	fs_handed = fs_released = 0;
	cr_assert_eq(netbuf_pool_init(16), 0);
	cr_assert_eq(nvmet_config_parse(config_json, strlen(config_json), &cfg, err, sizeof(err), NULL, NULL), 0, "%s",
		     err);
	cr_assert_eq(nvmet_init(&cfg, ram_open, NULL), 0);
	memset(cmb_used, 0, sizeof(cmb_used));
	cmb_in_use = cmb_allocs = 0;
	mem_reach_rc = mem_alloc_rc = 0;
	cr_assert_eq(nvmet_tcp_start(&fs_ops, &mem_ops), 0);
	cr_assert(fs_listener.listener);
	cr_assert_eq(fs_listener.port, 4420);
}

static void teardown(void)
{
	nvmet_tcp_stop();
	for (int i = 0; i < 10 && nvmet_tcp_conn_count(); i++)
		nvmet_tcp_poll(64);
	cr_assert_eq(nvmet_tcp_conn_count(), 0);
	cr_assert_not(fs_listener.listener, "listener closed");
	cr_assert_eq(nvmet_queue_count(), 0);
	nvmet_fini();
	cr_assert_eq(fs_released, fs_handed, "every fragment released (%u of %u)", fs_released, fs_handed);
	cr_assert_eq(cmb_in_use, 0, "every device-memory buffer freed");
	cr_assert_eq(netbuf_pool_destroy(), 0);
	unit_pools_end();
}

TestSuite(nvmet_tcp, .init = setup, .fini = teardown);

/* ICReq answered; digests as requested. */
static void establish(struct tcp_sock *s, uint8_t dgst)
{
	struct rx_pdu p;
	host_icreq(s, 0, 0, dgst);
	cr_assert(host_next(s, &p));
	cr_assert_eq(p.type, NVME_TCP_ICRESP);
	cr_assert_eq(p.plen, 128);
	cr_assert_eq(p.hdr[8] | p.hdr[9] << 8, 0, "PFV 0");
	cr_assert_eq(p.hdr[10], 0, "CPDA 0");
	cr_assert_eq(p.hdr[11], dgst, "digests as requested");
	cr_assert_eq(ld32(p.hdr + 12), NVMET_TCP_MAXH2CDATA);
}

static uint16_t cmd(struct tcp_sock *s, bool dg, const struct nvme_sqe *sqe, const void *data, uint32_t len,
		    struct nvme_cqe *cqe, void *rbuf, uint32_t *rlen)
{
	host_capsule(s, dg, dg, sqe, data, len);
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
	int cntlid = (int)(cqe.dw0 & 0xffff);
	sqe = ft_prop_sqe(true, false, NVMF_PROP_CC,
			  NVME_CC_EN | (6u << NVME_CC_IOSQES_SHIFT) | (4u << NVME_CC_IOCQES_SHIFT));
	cr_assert_eq(cmd(s, dg, &sqe, NULL, 0, NULL, NULL, NULL), 0, "CC.EN");
	return cntlid;
}

Test(nvmet_tcp, icreq_then_peer_close)
{
	struct tcp_sock *s = fs_connect(0, 4096);
	cr_assert_eq(nvmet_tcp_conn_count_state(NVMET_TCP_WAIT_ICREQ), 1);
	cr_assert_eq(nvmet_queue_count(), 0, "the queue comes with the ICReq");
	establish(s, 0);
	cr_assert_eq(nvmet_tcp_conn_count_state(NVMET_TCP_ESTABLISHED), 1);
	cr_assert_eq(nvmet_queue_count(), 1);
	s->eof = true;
	s->ops->event(s, s->ctx, TCP_EV_RECV);
	cr_assert(s->closed, "graceful close on the peer's FIN");
	cr_assert_eq(nvmet_tcp_conn_count_state(NVMET_TCP_CLOSING), 1);
	cr_assert_eq(nvmet_queue_count(), 0, "queue destroyed at close");
	cr_assert_gt(nvmet_tcp_poll(8), 0);
	cr_assert_eq(nvmet_tcp_conn_count(), 0);
}

static void expect_term(struct tcp_sock *s, uint16_t fes)
{
	struct rx_pdu p;
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
	struct tcp_sock *s = fs_connect(0, 7);
	struct nvme_sqe sqe = ft_sqe(NVME_ADM_KEEP_ALIVE, 1, 0, 0);
	host_capsule(s, false, false, &sqe, NULL, 0);
	expect_term(s, NVME_TCP_FES_PDU_SEQUENCE_ERROR);
	cr_assert_eq(nvmet_tcp_stats()->term_sent, 1);
}

Test(nvmet_tcp, second_icreq_is_a_sequence_error)
{
	struct tcp_sock *s = fs_connect(0, 13);
	establish(s, 0);
	host_icreq(s, 0, 0, 0);
	expect_term(s, NVME_TCP_FES_PDU_SEQUENCE_ERROR);
}

Test(nvmet_tcp, icreq_bad_pfv_terminates)
{
	struct tcp_sock *s = fs_connect(0, 4096);
	host_icreq(s, 1, 0, 0);
	expect_term(s, NVME_TCP_FES_UNSUPPORTED_PARAMETER);
}

Test(nvmet_tcp, bad_header_digest_terminates)
{
	struct tcp_sock *s = fs_connect(0, 4096);
	establish(s, NVME_TCP_DGST_HDGST_ENABLE);
	struct nvme_sqe sqe = ft_sqe(NVME_ADM_KEEP_ALIVE, 1, 0, 0);
	host_capsule(s, false, false, &sqe, NULL, 0); /* no digest although negotiated */
	struct rx_pdu p;
	cr_assert(host_next(s, &p));
	cr_assert_eq(p.type, NVME_TCP_C2H_TERM_REQ);
	cr_assert(s->closed);
	nvmet_tcp_poll(8);
	cr_assert_eq(nvmet_tcp_conn_count(), 0);
}

Test(nvmet_tcp, h2c_term_req_closes)
{
	struct tcp_sock *s = fs_connect(0, 4096);
	establish(s, 0);
	uint8_t t[24] = { NVME_TCP_H2C_TERM_REQ, 0, 24, 0 };
	st32(t + 4, 24);
	t[8] = NVME_TCP_FES_INVALID_HEADER_FIELD;
	host_send(s, t, sizeof(t));
	cr_assert(s->closed);
	cr_assert_eq(s->tx_read, s->tx_len, "nothing sent back");
	cr_assert_eq(nvmet_tcp_conn_count_state(NVMET_TCP_CLOSING), 1);
	cr_assert_eq(nvmet_tcp_stats()->term_recv, 1);
	nvmet_tcp_poll(8);
	cr_assert_eq(nvmet_tcp_conn_count(), 0);
}

static void admin_session(bool dg, size_t frag)
{
	struct tcp_sock *s = fs_connect(0, frag);
	establish(s, dg ? NVME_TCP_DGST_HDGST_ENABLE | NVME_TCP_DGST_DDGST_ENABLE : 0);
	int cntlid = admin_connect(s, dg, 0);
	cr_assert_geq(cntlid, 1);
	/* Property Get CSTS: ready */
	struct nvme_cqe cqe;
	struct nvme_sqe sqe = ft_prop_sqe(false, false, NVMF_PROP_CSTS, 0);
	cr_assert_eq(cmd(s, dg, &sqe, NULL, 0, &cqe, NULL, NULL), 0);
	cr_assert(cqe.dw0 & NVME_CSTS_RDY);
	/* Identify Controller: 4 KiB of C2HData then the CapsuleResp */
	uint8_t id[4096];
	uint32_t got;
	sqe = ft_sqe(NVME_ADM_IDENTIFY, 5, 0, sizeof(id));
	sqe.cdw10 = 1;
	cr_assert_eq(cmd(s, dg, &sqe, NULL, 0, &cqe, id, &got), 0);
	cr_assert_eq(got, sizeof(id));
	cr_assert_eq(cqe.cid, 5);
	cr_assert_eq(memcmp(id + 4, "SER0", 4), 0, "SN");
	cr_assert_eq(ld32(id + 78) & 0xffff, (uint32_t)cntlid, "CNTLID");
	/* Keep Alive */
	sqe = ft_sqe(NVME_ADM_KEEP_ALIVE, 6, 0, 0);
	cr_assert_eq(cmd(s, dg, &sqe, NULL, 0, NULL, NULL, NULL), 0);
	cr_assert_eq(nvmet_ctrl_count(), 1);
	s->eof = true;
	s->ops->event(s, s->ctx, TCP_EV_RECV);
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

Test(nvmet_tcp, tx_backlog_waits_for_send_space)
{
	struct tcp_sock *s = fs_connect(0, 4096);
	establish(s, 0);
	admin_connect(s, false, 0);
	struct nvme_sqe sqe = ft_sqe(NVME_ADM_IDENTIFY, 5, 0, 4096);
	sqe.cdw10 = 1;
	s->space = 100; /* less than C2HData header + 4 KiB */
	size_t before = s->tx_len;
	host_capsule(s, false, false, &sqe, NULL, 0);
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
	struct tcp_sock *a = fs_connect(0, 4096);
	establish(a, 0);
	int cntlid = admin_connect(a, false, 1000);
	struct tcp_sock *q = fs_connect(1, 4096);
	establish(q, 0);
	uint8_t cd[1024];
	struct nvme_sqe sqe = ft_connect_sqe(1, 31, 0);
	ft_connect_data(cd, HOST, VOL0, (uint16_t)cntlid);
	cr_assert_eq(cmd(q, false, &sqe, cd, sizeof(cd), NULL, NULL, NULL), 0, "I/O queue Connect");
	/* an AER is held at the core and must come back when the queue goes */
	sqe = ft_sqe(NVME_ADM_AER, 9, 0, 0);
	host_capsule(a, false, false, &sqe, NULL, 0);
	fake_clock_advance(1100 * NSEC_PER_MSEC);
	timer_queue_run(&timer_default_queue, clock_now_ns());
	cr_assert_eq(nvmet_tcp_stats()->kills, 2);
	cr_assert_not(a->closed, "not closed inside queue_kill");
	cr_assert_gt(nvmet_tcp_poll(8), 0);
	cr_assert(a->closed && q->closed);
	nvmet_tcp_poll(8);
	cr_assert_eq(nvmet_tcp_conn_count(), 0);
	cr_assert_eq(nvmet_ctrl_count(), 0);
}

/* An I/O queue of a connected, enabled controller: frag_size decides how the target sees
 * the host's bytes (one fragment per frag_size bytes). Data digests on. */
/* An I/O queue as io_queue(), with or without data digests, fragments handed out as
 * device memory (the NIC's CMB) or DRAM, SQ flow control disabled at Connect or not. */
static struct tcp_sock *io_queue_with(size_t frag_size, bool ddgst, bool dev_frags, bool sqflow_off)
{
	struct tcp_sock *a = fs_connect(0, 4096);
	establish(a, 0);
	int cntlid = admin_connect(a, false, 0);
	struct tcp_sock *q = fs_connect(1, frag_size);
	establish(q, ddgst ? NVME_TCP_DGST_DDGST_ENABLE : 0);
	uint8_t cd[1024];
	struct nvme_sqe sqe = ft_connect_sqe(1, 63, 0);
	if (sqflow_off)
		((uint8_t *)&sqe)[NVMF_CONNECT_OFF_CATTR] |= NVMF_CATTR_DISABLE_SQFLOW;
	ft_connect_data(cd, HOST, VOL0, (uint16_t)cntlid);
	host_capsule(q, false, ddgst, &sqe, cd, sizeof(cd));
	cr_assert_eq(host_resp(q, NULL, NULL, NULL), 0);
	q->dev_frags = dev_frags;
	return q;
}

static struct tcp_sock *io_queue(size_t frag_size)
{
	return io_queue_with(frag_size, true, false, false);
}

Test(nvmet_tcp, io_write_in_capsule_then_read)
{
	struct tcp_sock *q = io_queue(1000);
	struct nvme_sqe sqe;
	static uint8_t wbuf[4096], rbuf[4096];
	for (size_t i = 0; i < sizeof(wbuf); i++)
		wbuf[i] = (uint8_t)(i * 31 + 7);
	sqe = ft_sqe(NVME_CMD_WRITE, 20, 1, sizeof(wbuf));
	sqe.cdw10 = 8;
	sqe.cdw12 = 7; /* 8 blocks of 512 */
	host_capsule(q, false, true, &sqe, wbuf, sizeof(wbuf));
	cr_assert_eq(host_resp(q, NULL, NULL, NULL), 0, "write");
	cr_assert_eq(fs_released, fs_handed, "the NIC buffers came back with the completion");

	sqe = ft_sqe(NVME_CMD_READ, 21, 1, sizeof(rbuf));
	sqe.cdw10 = 8;
	sqe.cdw12 = 7;
	uint32_t got;
	host_capsule(q, false, true, &sqe, NULL, 0);
	cr_assert_eq(host_resp(q, NULL, rbuf, &got), 0, "read");
	cr_assert_eq(got, sizeof(rbuf));
	cr_assert_eq(memcmp(rbuf, wbuf, sizeof(rbuf)), 0);
}

/* H2CData carrying len bytes at datao for the R2T (cccid, ttag), with a data digest when dd. */
static void host_h2c(struct tcp_sock *s, bool dd, uint16_t cccid, uint16_t ttag, uint32_t datao, const void *data,
		     uint32_t len, bool last)
{
	static uint8_t b[24 + 131072 + 4];
	cr_assert_leq(len, 131072);
	memset(b, 0, 24);
	b[0] = NVME_TCP_H2C_DATA;
	b[1] = (uint8_t)((dd ? NVME_TCP_F_DDGSTF : 0) | (last ? NVME_TCP_F_LAST_PDU : 0));
	b[2] = 24;
	b[3] = 24;
	st32(b + 4, 24 + len + (dd ? 4 : 0));
	memcpy(b + 8, &cccid, 2);
	memcpy(b + 10, &ttag, 2);
	st32(b + 12, datao);
	st32(b + 16, len);
	memcpy(b + 24, data, len);
	if (dd)
		st32(b + 24 + len, crc32c(0, data, len));
	host_send(s, b, 24 + len + (dd ? 4 : 0));
}

/* A 64 KiB write through R2T + two H2CData PDUs, then read back. */
static void write_through_r2t(size_t frag_size)
{
	struct tcp_sock *q = io_queue(frag_size);
	static uint8_t wbuf[65536], rbuf[65536];
	for (size_t i = 0; i < sizeof(wbuf); i++)
		wbuf[i] = (uint8_t)(i * 131 + frag_size);
	struct nvme_sqe sqe = ft_sqe(NVME_CMD_WRITE, 40, 1, sizeof(wbuf));
	sqe.cdw10 = 256;
	sqe.cdw12 = 127; /* 128 blocks of 512 */
	host_capsule(q, false, true, &sqe, NULL, 0);
	struct rx_pdu p;
	cr_assert(host_next(q, &p), "an R2T");
	cr_assert_eq(p.type, NVME_TCP_R2T);
	uint16_t cccid, ttag;
	memcpy(&cccid, p.hdr + 8, 2);
	memcpy(&ttag, p.hdr + 10, 2);
	cr_assert_eq(cccid, 40);
	cr_assert_eq(ld32(p.hdr + 12), 0, "R2TO");
	cr_assert_eq(ld32(p.hdr + 16), sizeof(wbuf), "R2TL: all of it");
	host_h2c(q, true, cccid, ttag, 0, wbuf, 32768, false);
	cr_assert_not(host_next(q, &p), "nothing before the last H2CData");
	host_h2c(q, true, cccid, ttag, 32768, wbuf + 32768, 32768, true);
	cr_assert_eq(host_resp(q, NULL, NULL, NULL), 0, "write");
	cr_assert_eq(fs_released, fs_handed, "every NIC buffer came back");
	const struct nvmet_tcp_stats *st = nvmet_tcp_stats();
	cr_assert_eq(st->r2ts, 1);
	cr_assert_eq(st->h2c_pdus, 2);
	cr_assert_eq(st->h2c_bytes, sizeof(wbuf));
	/* 1000-byte fragments: 67 per 64 KiB, all in one command */
	cr_assert_eq(st->gathers, 0);
	unsigned least = (unsigned)((sizeof(wbuf) + frag_size - 1) / frag_size);
	cr_assert(last_nsg >= least && last_nsg <= least + 4, "one command gathers every fragment (%u)", last_nsg);

	sqe = ft_sqe(NVME_CMD_READ, 41, 1, sizeof(rbuf));
	sqe.cdw10 = 256;
	sqe.cdw12 = 127;
	uint32_t got;
	host_capsule(q, false, true, &sqe, NULL, 0);
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
	sqe.cdw12 = 15;
	host_capsule(q, false, true, &sqe, NULL, 0);
	struct rx_pdu p;
	cr_assert(host_next(q, &p));
	cr_assert_eq(p.type, NVME_TCP_R2T);
	uint16_t ttag;
	memcpy(&ttag, p.hdr + 10, 2);
	host_h2c(q, true, 50, ttag, 4096, wbuf, 4096, true); /* DATAO 4096 before 0 */
	cr_assert(host_next(q, &p));
	cr_assert_eq(p.type, NVME_TCP_C2H_TERM_REQ);
	cr_assert_eq(p.hdr[8], NVME_TCP_FES_DATA_OUT_OF_RANGE);
	cr_assert_eq(ld32(p.hdr + 10), 12, "FEI: DATAO");
	nvmet_tcp_poll(8);
	cr_assert_eq(fs_released, fs_handed);
}

Test(nvmet_tcp, h2c_data_without_r2t_terminates)
{
	struct tcp_sock *q = io_queue(4096);
	static uint8_t wbuf[512];
	host_h2c(q, true, 7, 5, 0, wbuf, sizeof(wbuf), true);
	struct rx_pdu p;
	cr_assert(host_next(q, &p));
	cr_assert_eq(p.type, NVME_TCP_C2H_TERM_REQ);
	cr_assert_eq(p.hdr[8], NVME_TCP_FES_INVALID_HEADER_FIELD);
	cr_assert_eq(ld32(p.hdr + 10), 10, "FEI: TTAG");
	nvmet_tcp_poll(8);
	cr_assert_eq(fs_released, fs_handed);
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
	sqe.cdw10 = slba;
	sqe.cdw12 = len / 512 - 1;
	host_capsule(q, false, false, &sqe, NULL, 0);
	struct rx_pdu p;
	cr_assert(host_next(q, &p), "an R2T");
	cr_assert_eq(p.type, NVME_TCP_R2T);
	uint16_t ttag;
	memcpy(&ttag, p.hdr + 10, 2);
	cr_assert_eq(ld32(p.hdr + 16), len);
	for (uint32_t off = 0; off < len; off += pdu)
		host_h2c(q, false, cid, ttag, off, data + off, len - off < pdu ? len - off : pdu, off + pdu >= len);
}

/* Read len bytes at slba; returns the status, data into buf, *success whether the read
 * ended with C2HData SUCCESS (no CapsuleResp). */
static uint16_t host_read(struct tcp_sock *q, uint16_t cid, uint32_t slba, uint8_t *buf, uint32_t len, bool *success)
{
	struct nvme_sqe sqe = ft_sqe(NVME_CMD_READ, cid, 1, len);
	sqe.cdw10 = slba;
	sqe.cdw12 = len / 512 - 1;
	host_capsule(q, false, false, &sqe, NULL, 0);
	struct rx_pdu p;
	uint32_t got = 0;
	*success = false;
	while (host_next(q, &p)) {
		if (p.type == NVME_TCP_C2H_DATA) {
			cr_assert_eq(ld32(p.hdr + 12), got, "C2HData in order");
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
		cr_assert_eq(c.cid, cid);
		uint16_t st = (uint16_t)((c.status >> 1) & 0x7ff);
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
	cr_assert_eq(fs_released, fs_handed, "the NIC buffers came back with the completion");
	bool success;
	cr_assert_eq(host_read(q, 61, 512, r, sizeof(r), &success), 0);
	cr_assert_eq(memcmp(r, w, sizeof(r)), 0);
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
	cr_assert_eq(fs_released, fs_handed);
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
	cr_assert_gt(cmb_in_use, 0, "held by TCP until acknowledged");
	fs_ack(q);
	cr_assert_eq(cmb_in_use, 0, "freed on the acknowledgement");
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
	fs_ack(q);
}

/* Writes hold NIC buffers from R2T to completion: past NVMET_TCP_WRITE_HELD_MAX the next
 * write waits for its R2T and gets it when an earlier write completes. */
Test(nvmet_tcp, write_waits_for_the_write_budget_and_resumes)
{
	struct tcp_sock *q = io_queue_with(8192, false, true, false);
	static uint8_t w[131072];
	const unsigned n = NVMET_TCP_WRITE_HELD_MAX / sizeof(w);
	struct rx_pdu p;
	uint16_t ttag[8];
	for (size_t i = 0; i < sizeof(w); i++)
		w[i] = pattern(i, 5);
	cr_assert_leq(n + 1, 8);
	for (unsigned k = 0; k <= n; k++) {
		struct nvme_sqe sqe = ft_sqe(NVME_CMD_WRITE, (uint16_t)(10 + k), 1, sizeof(w));
		sqe.cdw10 = k * 256;
		sqe.cdw12 = 255;
		host_capsule(q, false, false, &sqe, NULL, 0);
	}
	for (unsigned k = 0; k < n; k++) {
		cr_assert(host_next(q, &p));
		cr_assert_eq(p.type, NVME_TCP_R2T);
		memcpy(&ttag[k], p.hdr + 10, 2);
	}
	cr_assert_not(host_next(q, &p), "the last write waits");
	cr_assert_eq(nvmet_tcp_waiting(), 1);
	cr_assert_eq(nvmet_tcp_stats()->waits, 1);
	host_h2c(q, false, 10, ttag[0], 0, w, 65536, false);
	host_h2c(q, false, 10, ttag[0], 65536, w + 65536, 65536, true);
	cr_assert_eq(host_resp(q, NULL, NULL, NULL), 0, "first write");
	cr_assert_eq(nvmet_tcp_waiting(), 0, "resumed after the socket event");
	cr_assert(host_next(q, &p));
	cr_assert_eq(p.type, NVME_TCP_R2T, "the waiting write got its R2T");
	memcpy(&ttag[n], p.hdr + 10, 2);
	cr_assert_eq(nvmet_tcp_stats()->resumed, 1);
	for (unsigned k = 1; k <= n; k++) {
		host_h2c(q, false, (uint16_t)(10 + k), ttag[k], 0, w, 65536, false);
		host_h2c(q, false, (uint16_t)(10 + k), ttag[k], 65536, w + 65536, 65536, true);
		cr_assert_eq(host_resp(q, NULL, NULL, NULL), 0);
	}
	cr_assert_eq(fs_released, fs_handed);
}

/* Reads whose data waits for acknowledgement hold DRAM chunks (nvmet.p2p = off): when
 * they are all taken the next read waits, and runs when an acknowledgement frees some. */
Test(nvmet_tcp, read_waits_for_buffers_and_resumes_on_ack)
{
	struct tcp_sock *q = io_queue_with(8192, false, true, false);
	const uint32_t len = NVMET_TCP_MAX_XFER;
	const unsigned fit = NVMET_TCP_BUFS / (len / NVMET_TCP_BUF_SIZE);
	nvmet_tcp_set_p2p(false);
	for (unsigned k = 0; k <= fit; k++) {
		struct nvme_sqe sqe = ft_sqe(NVME_CMD_READ, (uint16_t)(20 + k), 1, len);
		sqe.cdw10 = 0;
		sqe.cdw12 = len / 512 - 1;
		host_capsule(q, false, false, &sqe, NULL, 0);
	}
	cr_assert_eq(nvmet_tcp_waiting(), 1, "the read past the DRAM chunks waits");
	cr_assert_eq(nvmet_tcp_stats()->dram_cmds[NVMET_TCP_DRAM_OFF], fit);
	/* the peer acknowledges as data arrives: every read completes, the waiting one too */
	unsigned responses = 0;
	for (int round = 0; round < 64 && responses <= fit; round++) {
		struct rx_pdu p;
		while (host_next(q, &p))
			responses += p.type == NVME_TCP_CAPSULE_RESP;
		fs_ack(q);
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
	mem_reach_rc = -EXDEV;
	host_write_r2t(q, 30, 0, w, sizeof(w), sizeof(w));
	cr_assert_eq(host_resp(q, NULL, NULL, NULL), 0);
	cr_assert_eq(st->dram_cmds[NVMET_TCP_DRAM_P2P_REFUSED], 1);
	cr_assert_eq(st->dram_bytes[NVMET_TCP_DRAM_P2P_REFUSED], sizeof(w));
	cr_assert_eq(last_cls, MEM_CLASS_HOST);
	mem_reach_rc = 0;
	/* ... and for reads: no provider both reach */
	mem_alloc_rc = -EXDEV;
	cr_assert_eq(host_read(q, 31, 0, r, sizeof(r), &success), 0);
	cr_assert_eq(memcmp(r, w, sizeof(r)), 0);
	cr_assert_eq(st->dram_cmds[NVMET_TCP_DRAM_P2P_REFUSED], 2);
	/* no CMB configured */
	mem_alloc_rc = -ENODEV;
	cr_assert_eq(host_read(q, 32, 0, r, sizeof(r), &success), 0);
	cr_assert_eq(st->dram_cmds[NVMET_TCP_DRAM_NO_CMB], 1);
	/* device memory full */
	mem_alloc_rc = -ENOMEM;
	cr_assert_eq(host_read(q, 33, 0, r, sizeof(r), &success), 0);
	cr_assert_eq(st->dram_cmds[NVMET_TCP_DRAM_ALLOC], 1);
	mem_alloc_rc = 0;
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
	fs_ack(q);
}

/* A data digest on reads needs the CPU to read the payload: DRAM, counted. */
Test(nvmet_tcp, dram_fallback_for_read_data_digest)
{
	struct tcp_sock *q = io_queue_with(4096, true, true, false);
	static uint8_t r[8192];
	struct nvme_sqe sqe = ft_sqe(NVME_CMD_READ, 40, 1, sizeof(r));
	sqe.cdw12 = sizeof(r) / 512 - 1;
	host_capsule(q, false, true, &sqe, NULL, 0);
	uint32_t got;
	cr_assert_eq(host_resp(q, NULL, r, &got), 0);
	cr_assert_eq(got, sizeof(r));
	cr_assert_eq(nvmet_tcp_stats()->dram_cmds[NVMET_TCP_DRAM_DIGEST], 1);
	cr_assert_eq(q->frag_bytes[MEM_CLASS_DEVICE], 0);
	fs_ack(q);
}

/* A connection to an address that is not the port's traddr is refused. */
Test(nvmet_tcp, connection_to_another_address_is_refused)
{
	struct tcp_sock *s = &fs_conns[0];
	memset(s, 0, sizeof(*s));
	s->frag_size = 4096;
	s->space = TCP_SND_BUF;
	s->laddr = 0x0a000002u;
	fs_pending = 1;
	fs_listener.ops->event(&fs_listener, fs_listener.ctx, TCP_EV_ACCEPT);
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
	cr_assert_eq(nvmet_tcp_start(&fs_ops, &mem_ops), -EADDRNOTAVAIL);
	cr_assert_not(fs_listener.listener, "nothing listens");
	nvmet_fini();
	cr_assert_eq(nvmet_init(&cfg, ram_open, NULL), 0);
	cr_assert_eq(nvmet_tcp_start(&fs_ops, &mem_ops), 0, "0.0.0.0 or a local address starts");
}

/* A write whose data is all in but must be copied to DRAM (nvmet.p2p = off) while every
 * DRAM chunk is held by reads waiting for their acknowledgement: it waits holding the
 * NIC's fragments, and completes with the right data once an acknowledgement frees chunks. */
Test(nvmet_tcp, write_waits_for_dram_to_gather_into)
{
	struct tcp_sock *q = io_queue_with(8192, false, true, false);
	const uint32_t len = NVMET_TCP_MAX_XFER;
	const unsigned fit = NVMET_TCP_BUFS / (len / NVMET_TCP_BUF_SIZE);
	static uint8_t w[16384], r[16384];
	struct rx_pdu p;
	for (size_t i = 0; i < sizeof(w); i++)
		w[i] = pattern(i, 7);
	nvmet_tcp_set_p2p(false);
	q->space = 0; /* nothing goes out: the reads keep their chunks */
	for (unsigned k = 0; k < fit; k++) {
		struct nvme_sqe sqe = ft_sqe(NVME_CMD_READ, (uint16_t)(20 + k), 1, len);
		sqe.cdw12 = len / 512 - 1;
		host_capsule(q, false, false, &sqe, NULL, 0);
	}
	cr_assert_eq(nvmet_tcp_waiting(), 0, "the reads hold every chunk");
	/* the write's R2T cannot go out either (no space): give room for the R2T only */
	struct nvme_sqe sqe = ft_sqe(NVME_CMD_WRITE, 50, 1, sizeof(w));
	sqe.cdw10 = 3000;
	sqe.cdw12 = sizeof(w) / 512 - 1;
	q->space = 24;
	host_capsule(q, false, false, &sqe, NULL, 0);
	cr_assert(host_next(q, &p));
	cr_assert_eq(p.type, NVME_TCP_R2T);
	uint16_t ttag;
	memcpy(&ttag, p.hdr + 10, 2);
	unsigned held0 = fs_handed - fs_released;
	host_h2c(q, false, 50, ttag, 0, w, sizeof(w), true);
	cr_assert_eq(nvmet_tcp_waiting(), 1, "the write waits for DRAM to gather into");
	cr_assert_gt(fs_handed - fs_released, held0, "holding the NIC's fragments meanwhile");
	unsigned bios0 = bios;
	/* acknowledgements: the reads go out and free their chunks; the write resumes */
	for (int round = 0; round < 64 && nvmet_tcp_waiting(); round++) {
		while (host_next(q, &p))
			;
		fs_ack(q);
		nvmet_tcp_poll(64);
	}
	cr_assert_eq(nvmet_tcp_waiting(), 0);
	cr_assert_gt(bios, bios0);
	cr_assert_eq(nvmet_tcp_stats()->dram_cmds[NVMET_TCP_DRAM_OFF], fit + 1);
	for (int round = 0; round < 64; round++) {
		while (host_next(q, &p))
			;
		fs_ack(q);
		nvmet_tcp_poll(64);
	}
	nvmet_tcp_set_p2p(true);
	bool success;
	cr_assert_eq(host_read(q, 51, 3000, r, sizeof(r), &success), 0);
	cr_assert_eq(memcmp(r, w, sizeof(r)), 0, "the gathered write is on the disk");
	fs_ack(q);
}
