// sources: drivers/nvme/target/nvmet_tcp.c drivers/nvme/target/nvmet_tcp_buf.c drivers/nvme/target/nvmet_tcp_rx.c drivers/nvme/target/nvmet_tcp_pdu.c drivers/nvme/target/nvmet_core.c drivers/nvme/target/nvmet_fabrics.c drivers/nvme/target/nvmet_admin.c drivers/nvme/target/nvmet_io.c drivers/nvme/target/nvmet_bdev_ram.c drivers/nvme/target/nvmet_config.c drivers/nic/netdev.c lib/crc32.c lib/ipv4_text.c mm/pool.c mm/dma.c lib/timer.c lib/log.c lib/clock.c tests/unit/drivers/nvme/target/fake_nvmet_transport.c
/*
 * libFuzzer harness: the NVMe/TCP transport (nvmet_tcp.c) with the real framing and target core
 * over a fake socket layer, the host side driven by the input. A fixed prologue connects
 * an admin queue (connection 0) and an I/O queue (connection 1); then the input is a list
 * of operations on the I/O connection: raw host bytes, well-formed Write/Read capsules,
 * H2CData for the R2Ts the target sent, acknowledgements (zero-copy data released), send
 * space changes, polls, a peer close or reset. The first two bytes choose the fragment
 * size, device or DRAM fragments, nvmet.p2p, the fake device memory's answers (ok, full,
 * P2P refused, none), digests and SQ flow control.
 * Invariants: no crash or sanitizer report; after stop every NIC fragment was released
 * exactly once, every device-memory allocation freed and every pool is back to zero.
 */
#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
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
#include "tests/unit/drivers/nvme/target/fake_nvmet_transport.h"

#define HOST "nqn.2014-08.org.nvmexpress:uuid:aaaaaaaa-0000-4000-8000-000000000001"
#define VOL0 "nqn.2026-11.org.p2pstore:vol0"
#define RX_MAX (1u << 20)
#define TX_MAX (1u << 20)
#define TOKENS 65536
#define HELD 1024

static const char *const json =
	"{ \"hosts\": [], \"ports\": [ { \"portid\": 1, \"addr\": { \"trtype\": \"tcp\", \"adrfam\": \"ipv4\","
	" \"traddr\": \"0.0.0.0\", \"trsvcid\": \"4420\" }, \"subsystems\": [ \"" VOL0 "\" ] } ],"
	" \"subsystems\": [ { \"nqn\": \"" VOL0 "\", \"attr\": { \"allow_any_host\": \"1\" },"
	" \"namespaces\": [ { \"nsid\": 1, \"enable\": 1, \"device\": { \"path\": \"/dev/nvme0n1\" } } ] } ] }";

struct tcp_sock {
	bool listener, open, accepted, eof;
	const struct tcp_ops *ops;
	void *ctx;
	uint8_t rx[RX_MAX];
	size_t rx_len, rx_off;
	uint8_t tx[TX_MAX];
	size_t tx_len;
	size_t space;
	struct netdev_frag held[HELD];
	unsigned nheld;
};

static struct tcp_sock listener, socks[2];
static unsigned pending, handed, released;
static uint8_t release_count[TOKENS];
static size_t frag_size;
static bool dev_frags;

static void frag_release(struct netdev_frag_owner *o, uint64_t token)
{
	(void)o;
	assert(token < TOKENS && release_count[token] == 0);
	release_count[token] = 1;
	released++;
}
static struct netdev_frag_owner owner = { "fuzz-socket", frag_release };

static int s_listen(uint16_t port, unsigned backlog, const struct tcp_ops *ops, void *ctx, struct tcp_sock **out)
{
	(void)port;
	(void)backlog;
	listener.listener = true;
	listener.ops = ops;
	listener.ctx = ctx;
	*out = &listener;
	return 0;
}

static struct tcp_sock *s_accept(struct tcp_sock *l)
{
	(void)l;
	if (!pending)
		return NULL;
	struct tcp_sock *s = &socks[pending - 1];
	pending = 0;
	s->accepted = true;
	return s;
}

static void s_set_ops(struct tcp_sock *s, const struct tcp_ops *ops, void *ctx)
{
	s->ops = ops;
	s->ctx = ctx;
}

static int s_recv_frags(struct tcp_sock *s, struct netdev_frag *out, unsigned max, size_t max_bytes)
{
	unsigned n = 0;
	assert(s->open);
	while (n < max && s->rx_off < s->rx_len && max_bytes && handed < TOKENS) {
		size_t len = s->rx_len - s->rx_off;
		if (len > frag_size)
			len = frag_size;
		if (len > max_bytes)
			len = max_bytes;
		out[n] = (struct netdev_frag){ .addr = dma_addr_host(s->rx + s->rx_off), .offset = s->rx_off,
					       .len = (uint32_t)len, .token = handed++, .owner = &owner };
		if (dev_frags) {
			out[n].addr.cls = MEM_CLASS_DEVICE;
			out[n].provider = 1;
		}
		s->rx_off += len;
		max_bytes -= len;
		n++;
	}
	return (int)n;
}

static bool s_recv_eof(const struct tcp_sock *s)
{
	return s->eof && s->rx_off == s->rx_len;
}

static size_t s_send_space(const struct tcp_sock *s)
{
	return s->space;
}

static long s_send_copy(struct tcp_sock *s, const void *buf, size_t len)
{
	assert(s->open);
	if (len > s->space)
		len = s->space;
	if (len > TX_MAX - s->tx_len)
		s->tx_len = 0; /* the host read it long ago */
	memcpy(s->tx + s->tx_len, buf, len);
	s->tx_len += len;
	s->space -= len;
	return (long)len;
}

static int s_send_frags(struct tcp_sock *s, const struct netdev_frag *f, unsigned n)
{
	size_t total = 0;
	assert(s->open);
	for (unsigned i = 0; i < n; i++)
		total += f[i].len;
	if (total > s->space || s->nheld + n > HELD) {
		for (unsigned i = 0; i < n; i++) {
			struct netdev_frag c = f[i];
			netdev_frag_release(&c);
		}
		return -ENOBUFS;
	}
	for (unsigned i = 0; i < n; i++) {
		if (f[i].len > TX_MAX - s->tx_len)
			s->tx_len = 0;
		memcpy(s->tx + s->tx_len, (const void *)(uintptr_t)f[i].addr.bus, f[i].len);
		s->tx_len += f[i].len;
		s->held[s->nheld++] = f[i];
	}
	s->space -= total;
	return 0;
}

static void s_release_held(struct tcp_sock *s)
{
	for (unsigned i = 0; i < s->nheld; i++)
		netdev_frag_release(&s->held[i]);
	s->nheld = 0;
}

static void s_flush(struct tcp_sock *s)
{
	(void)s;
}

static void s_close(struct tcp_sock *s)
{
	if (s == &listener) {
		listener.listener = false;
		return;
	}
	assert(s->open);
	s->open = false;
	s_release_held(s);
}

static uint32_t s_local_addr(const struct tcp_sock *s)
{
	(void)s;
	return 0x0a000001u;
}

static const struct nvmet_tcp_sock_ops sops = {
	.listen = s_listen, .accept = s_accept, .set_ops = s_set_ops, .recv_frags = s_recv_frags,
	.recv_eof = s_recv_eof, .send_space = s_send_space, .send_copy = s_send_copy, .send_frags = s_send_frags,
	.flush = s_flush, .close = s_close, .abort = s_close, .local_addr = s_local_addr,
};

/* --- fake device memory: 4 KiB granules of a static array, provider 1 --- */
#define CMB_SIZE (1u << 20)
static uint8_t cmb[CMB_SIZE];
static bool cmb_used[CMB_SIZE / 4096];
static unsigned cmb_in_use;
static int alloc_rc, reach_rc;

static int m_reach(const struct nvmet_bdev *b, uint16_t provider, const char **why)
{
	(void)b;
	*why = "fuzz";
	return reach_rc ? reach_rc : provider == 1 ? 0 : -ENODEV;
}

static int m_alloc(const struct nvmet_bdev *b, uint32_t len, struct netdev_frag *out, const char **why)
{
	unsigned need = (len + 4095) / 4096, run = 0;
	(void)b;
	*why = "fuzz";
	if (alloc_rc)
		return alloc_rc;
	for (unsigned i = 0; i < CMB_SIZE / 4096; i++) {
		run = cmb_used[i] ? 0 : run + 1;
		if (run < need)
			continue;
		for (unsigned k = i + 1 - need; k <= i; k++)
			cmb_used[k] = true;
		cmb_in_use += need;
		memset(out, 0, sizeof(*out));
		out->addr = (dma_addr_t){ (uint64_t)(uintptr_t)(cmb + (i + 1 - need) * 4096), MEM_CLASS_DEVICE };
		out->offset = (i + 1 - need) * 4096;
		out->len = len;
		out->provider = 1;
		return 0;
	}
	return -ENOMEM;
}

static void m_free(const struct netdev_frag *f)
{
	unsigned first = (unsigned)(f->offset / 4096), n = (f->len + 4095) / 4096;
	for (unsigned k = first; k < first + n; k++) {
		assert(cmb_used[k]);
		cmb_used[k] = false;
	}
	cmb_in_use -= n;
}

static const struct nvmet_tcp_mem_ops mops = { .reach = m_reach, .alloc = m_alloc, .free = m_free };

/* --- the host --- */

static void host_send(struct tcp_sock *s, const void *buf, size_t len)
{
	if (!s->open || len > RX_MAX - s->rx_len)
		return;
	memcpy(s->rx + s->rx_len, buf, len);
	s->rx_len += len;
	s->ops->event(s, s->ctx, TCP_EV_RECV);
}

static void st32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

static void connect_sock(unsigned i)
{
	struct tcp_sock *s = &socks[i];
	memset(s, 0, sizeof(*s));
	s->open = true;
	s->space = TCP_SND_BUF;
	pending = i + 1;
	listener.ops->event(&listener, listener.ctx, TCP_EV_ACCEPT);
}

static void icreq(struct tcp_sock *s, uint8_t dgst)
{
	uint8_t b[128] = { NVME_TCP_ICREQ, 0, 128, 0 };
	st32(b + 4, 128);
	b[11] = dgst;
	host_send(s, b, sizeof(b));
}

static bool hd, dd;   /* digests on the I/O connection */

static void capsule(struct tcp_sock *s, bool h, bool d, const struct nvme_sqe *sqe, const void *data, uint32_t len)
{
	static uint8_t b[76 + 8192 + 4];
	uint32_t hl = 72 + (h ? 4 : 0);
	if (len > 8192)
		len = 8192;
	memset(b, 0, hl);
	b[0] = NVME_TCP_CAPSULE_CMD;
	b[1] = (uint8_t)((h ? NVME_TCP_F_HDGSTF : 0) | (len && d ? NVME_TCP_F_DDGSTF : 0));
	b[2] = 72;
	b[3] = len ? (uint8_t)hl : 0;
	st32(b + 4, hl + len + (len && d ? 4 : 0));
	memcpy(b + 8, sqe, 64);
	if (h)
		st32(b + 72, crc32c(0, b, 72));
	if (len)
		memcpy(b + hl, data, len);
	if (len && d)
		st32(b + hl + len, crc32c(0, data, len));
	host_send(s, b, hl + len + (len && d ? 4 : 0));
}

static void h2c(struct tcp_sock *s, uint16_t cccid, uint16_t ttag, uint32_t off, uint32_t len, bool last)
{
	static uint8_t b[28 + 65536 + 4];
	uint32_t hl = 24 + (hd ? 4 : 0);
	if (len > 65536)
		len = 65536;
	memset(b, 0, hl);
	b[0] = NVME_TCP_H2C_DATA;
	b[1] = (uint8_t)((hd ? NVME_TCP_F_HDGSTF : 0) | (dd ? NVME_TCP_F_DDGSTF : 0) | (last ? NVME_TCP_F_LAST_PDU : 0));
	b[2] = 24;
	b[3] = (uint8_t)hl;
	st32(b + 4, hl + len + (dd ? 4 : 0));
	memcpy(b + 8, &cccid, 2);
	memcpy(b + 10, &ttag, 2);
	st32(b + 12, off);
	st32(b + 16, len);
	if (hd)
		st32(b + 24, crc32c(0, b, 24));
	for (uint32_t i = 0; i < len; i++)
		b[hl + i] = (uint8_t)(off + i);
	if (dd)
		st32(b + hl + len, crc32c(0, b + hl, len));
	host_send(s, b, hl + len + (dd ? 4 : 0));
}

/* The R2Ts the target sent on the I/O connection: scanned from its output. */
struct r2t {
	uint16_t cccid, ttag;
	uint32_t len, sent;
};
static struct r2t r2ts[64];
static unsigned nr2t;
static size_t scanned;

static void scan_r2ts(struct tcp_sock *s)
{
	if (scanned > s->tx_len)
		scanned = 0; /* the buffer wrapped: the header stream is lost, start over */
	while (s->tx_len - scanned >= 8) {
		const uint8_t *h = s->tx + scanned;
		uint32_t plen;
		memcpy(&plen, h + 4, 4);
		if (plen < 8 || plen > s->tx_len - scanned)
			break;
		if (h[0] == NVME_TCP_R2T && plen >= 24 && nr2t < 64) {
			struct r2t *r = &r2ts[nr2t++];
			memcpy(&r->cccid, h + 8, 2);
			memcpy(&r->ttag, h + 10, 2);
			memcpy(&r->len, h + 20 - 4, 4);
			r->sent = 0;
		}
		scanned += plen;
	}
}

static void rw_sqe(struct nvme_sqe *sqe, bool write, uint16_t cid, uint32_t slba, uint32_t nlb)
{
	*sqe = ft_sqe(write ? NVME_CMD_WRITE : NVME_CMD_READ, cid, 1, nlb * 512);
	sqe->cdw10 = slba;
	sqe->cdw12 = nlb - 1;
}

static uint64_t now;
static uint64_t fuzz_clock(void)
{
	return now;
}

static int ram_open(void *ctx, unsigned si, const struct nvmet_cfg_ns *ns, struct nvmet_bdev *out)
{
	(void)ctx;
	(void)si;
	(void)ns;
	return nvmet_bdev_ram_open(out, 4096, 9);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const size_t frag_sizes[8] = { 1, 7, 64, 437, 1448, 4096, 8948, 65536 };
	static struct nvmet_config cfg;
	static bool parsed;
	static uint8_t cd[1024];
	char err[200];
	size_t p = 2;

	if (size < 2)
		return 0;
	if (!parsed) {
		int rc = nvmet_config_parse(json, strlen(json), &cfg, err, sizeof(err), NULL, NULL);
		assert(rc == 0);
		clock_set_source(fuzz_clock);
		parsed = true;
	}
	frag_size = frag_sizes[data[0] & 7];
	dev_frags = data[0] & 8;
	nvmet_tcp_set_p2p(!(data[0] & 16));
	static const int rcs[4] = { 0, -ENOMEM, -EXDEV, -ENODEV };
	alloc_rc = rcs[(data[0] >> 5) & 3];
	reach_rc = data[0] & 0x80 ? -EXDEV : 0;
	hd = data[1] & 1;
	dd = data[1] & 2;
	bool sqflow_off = data[1] & 4;
	now = 0;
	handed = released = 0;
	memset(release_count, 0, sizeof(release_count));
	nr2t = 0;
	scanned = 0;
	timer_queue_init(&timer_default_queue);
	if (netbuf_pool_init(64) || nvmet_init(&cfg, ram_open, NULL) || nvmet_tcp_start(&sops, &mops))
		abort();

	/* prologue: admin queue connected and enabled, an I/O queue connected */
	struct nvme_sqe sqe = ft_connect_sqe(0, 31, 0);
	connect_sock(0);
	icreq(&socks[0], 0);
	ft_connect_data(cd, HOST, VOL0, 0xffff);
	capsule(&socks[0], false, false, &sqe, cd, sizeof(cd));
	sqe = ft_prop_sqe(true, false, NVMF_PROP_CC, NVME_CC_EN | (6u << NVME_CC_IOSQES_SHIFT) | (4u << NVME_CC_IOCQES_SHIFT));
	capsule(&socks[0], false, false, &sqe, NULL, 0);
	connect_sock(1);
	struct tcp_sock *q = &socks[1];
	icreq(q, (uint8_t)((hd ? NVME_TCP_DGST_HDGST_ENABLE : 0) | (dd ? NVME_TCP_DGST_DDGST_ENABLE : 0)));
	sqe = ft_connect_sqe(1, 63, 0);
	if (sqflow_off)
		((uint8_t *)&sqe)[NVMF_CONNECT_OFF_CATTR] |= NVMF_CATTR_DISABLE_SQFLOW;
	ft_connect_data(cd, HOST, VOL0, 1);
	capsule(q, hd, dd, &sqe, cd, sizeof(cd));
	scan_r2ts(q);
	scanned = q->tx_len;

	while (p < size && q->open) {
		uint8_t op = data[p++];
		uint8_t a = p < size ? data[p++] : 0;
		uint8_t b = p < size ? data[p++] : 0;
		switch (op & 7) {
		case 0: { /* raw host bytes */
			size_t n = (size_t)a + 1;
			if (n > size - p)
				n = size - p;
			host_send(q, data + p, n);
			p += n;
			break;
		}
		case 1: { /* a write: in-capsule when small, else through an R2T */
			uint32_t nlb = 1 + (uint32_t)(b % 64) * (a & 0x80 ? 8 : 1);
			rw_sqe(&sqe, true, (uint16_t)(a & 0x7f), (uint32_t)b * 7, nlb);
			if (nlb * 512 <= 8192 && (a & 0x40)) {
				static uint8_t w[8192];
				memset(w, b, sizeof(w));
				capsule(q, hd, dd, &sqe, w, nlb * 512);
			} else {
				capsule(q, hd, dd, &sqe, NULL, 0);
			}
			break;
		}
		case 2: /* a read */
			rw_sqe(&sqe, false, (uint16_t)(a & 0x7f), (uint32_t)b * 5, 1 + (uint32_t)(a % 128) * 4);
			capsule(q, hd, dd, &sqe, NULL, 0);
			break;
		case 3: { /* H2CData for an R2T the target sent */
			scan_r2ts(q);
			if (!nr2t)
				break;
			struct r2t *r = &r2ts[a % nr2t];
			uint32_t n = (uint32_t)(b + 1) * 512;
			if (n > r->len - r->sent || (b & 0x80))
				n = r->len - r->sent;
			h2c(q, r->cccid, r->ttag, r->sent, n, r->sent + n == r->len);
			r->sent += n;
			if (r->sent >= r->len)
				*r = r2ts[--nr2t];
			break;
		}
		case 4: /* the peer acknowledged everything */
			s_release_held(q);
			q->space = TCP_SND_BUF;
			q->ops->event(q, q->ctx, TCP_EV_SENT);
			break;
		case 5:
			q->space = (size_t)a * 1024;
			break;
		case 6:
			now += (uint64_t)a * NSEC_PER_MSEC;
			timer_queue_run(&timer_default_queue, now);
			nvmet_tcp_poll(64);
			break;
		default: /* the peer closes (FIN) or resets */
			if (a & 1) {
				q->eof = true;
				q->ops->event(q, q->ctx, TCP_EV_RECV);
			} else {
				q->ops->event(q, q->ctx, TCP_EV_CLOSED);
			}
			break;
		}
	}

	nvmet_tcp_stop();
	for (int i = 0; i < 16 && nvmet_tcp_conn_count(); i++)
		nvmet_tcp_poll(64);
	assert(nvmet_tcp_conn_count() == 0);
	assert(nvmet_queue_count() == 0);
	nvmet_fini();
	assert(released == handed);
	assert(cmb_in_use == 0);
	assert(netbuf_pool_destroy() == 0);
	assert(mm_pool_total_in_use() == 0);
	return 0;
}
