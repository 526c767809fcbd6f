// sources: drivers/nvme/target/nvmet_tcp.c drivers/nvme/target/nvmet_dram_reason.c drivers/nvme/target/nvmet_tcp_buf.c drivers/nvme/target/nvmet_tcp_rx.c drivers/nvme/target/nvmet_tcp_pdu.c drivers/nvme/target/nvmet_core.c drivers/nvme/target/nvmet_fabrics.c drivers/nvme/target/nvmet_auth.c drivers/nvme/target/nvmet_auth_msg.c drivers/nvme/target/nvmet_auth_key.c lib/crypto.c tests/unit/net/fake_entropy.c drivers/nvme/target/nvmet_admin.c drivers/nvme/target/nvmet_ana.c drivers/nvme/target/nvmet_referral.c drivers/nvme/target/nvmet_io.c drivers/nvme/target/nvmet_bdev_ram.c drivers/nvme/target/nvmet_config.c drivers/nic/netdev.c lib/crc32.c lib/ipv4_text.c mm/pool.c mm/dma.c lib/timer.c lib/log.c lib/clock.c tests/unit/drivers/nvme/target/fake_nvmet_transport.c tests/unit/drivers/nvme/target/fake_tcp.c tests/unit/drivers/nvme/target/fake_cmb.c tests/unit/drivers/nvme/target/nvme_tcp_host.c
// libs: -lmbedcrypto
/*
 * libFuzzer harness: the NVMe/TCP transport (nvmet_tcp.c) with the real framing and target core
 * over the fake TCP layer (fake_tcp.c), the host side driven by the input. A fixed prologue connects
 * an admin queue (connection 0) and an I/O queue (connection 1); then the input is a list
 * of operations on the I/O connection: raw host bytes, well-formed Write/Read capsules,
 * H2CData for the R2Ts the target sent, acknowledgements (zero-copy data released), send
 * space changes, polls, a peer close or reset. The first two bytes choose the fragment
 * size, device or DRAM fragments, nvmet.p2p, the fake device memory's answers (ok, full,
 * P2P refused, none), digests and SQ flow control.
 * Invariants: no crash or sanitizer report; at the end, with this connection still
 * holding whatever the input left it, another host connects a fresh controller and
 * queue and a Write and a Read complete there (ftcp_liveness); after stop every NIC
 * fragment was released exactly once, every device-memory allocation freed and every
 * pool is back to zero.
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
#include "tests/unit/drivers/nvme/target/fake_cmb.h"
#include "tests/unit/drivers/nvme/target/fake_nvmet_transport.h"
#include "tests/unit/drivers/nvme/target/fake_tcp.h"
#include "tests/unit/drivers/nvme/target/nvme_tcp_host.h"

#define HOST "nqn.2014-08.org.nvmexpress:uuid:aaaaaaaa-0000-4000-8000-000000000001"
#define VOL0 "nqn.2026-11.org.p2pstore:vol0"
static const char *const json =
	"{ \"hosts\": [], \"ports\": [ { \"portid\": 1, \"addr\": { \"trtype\": \"tcp\", \"adrfam\": \"ipv4\","
	" \"traddr\": \"0.0.0.0\", \"trsvcid\": \"4420\" }, \"subsystems\": [ \"" VOL0 "\" ] } ],"
	" \"subsystems\": [ { \"nqn\": \"" VOL0 "\", \"attr\": { \"allow_any_host\": \"1\" },"
	" \"namespaces\": [ { \"nsid\": 1, \"enable\": 1, \"device\": { \"path\": \"/dev/nvme0n1\" } } ] } ] }";

static bool hd, dd;   /* digests on the I/O connection */

/* The R2Ts the target sent on the I/O connection: scanned from its output. */
struct r2t {
	uint16_t cccid, ttag;
	uint32_t len, sent;
};
static struct r2t r2ts[64];
static unsigned nr2t;

static void scan_r2ts(struct tcp_sock *s)
{
	struct nth_pdu p;
	struct r2t r;
	uint32_t r2to;

	while (ftcp_next_pdu(s, &p) == 1) {
		if (nr2t < 64 && nth_r2t(&p, &r.cccid, &r.ttag, &r2to, &r.len) == 0) {
			r.sent = 0;
			r2ts[nr2t++] = r;
		}
	}
}

/* H2CData for an R2T: len bytes of a pattern at off. */
static void h2c(struct tcp_sock *s, uint16_t cccid, uint16_t ttag, uint32_t off, uint32_t len, bool last)
{
	static uint8_t b[65536];
	if (len > sizeof(b))
		len = sizeof(b);
	for (uint32_t i = 0; i < len; i++)
		b[i] = (uint8_t)(off + i);
	ftcp_h2c(s, hd, dd, cccid, ttag, off, b, len, last);
}

static void rw_sqe(struct nvme_sqe *sqe, bool write, uint16_t cid, uint32_t slba, uint32_t nlb)
{
	*sqe = ft_sqe(write ? NVME_CMD_WRITE : NVME_CMD_READ, cid, 1, nlb * 512);
	sqe->cdw10 = le32_make(slba);
	sqe->cdw12 = le32_make(nlb - 1);
}

static uint64_t now;
static uint64_t fuzz_clock(void)
{
	return now;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const size_t frag_sizes[8] = { 1, 7, 64, 437, 1448, 4096, 8948, 65536 };
	static struct nvmet_config cfg;
	static uint8_t cd[1024];
	char err[200];
	size_t p = 2;

	if (size < 2)
		return 0;
	clock_set_source(fuzz_clock);
	size_t frag_size = frag_sizes[data[0] & 7];
	bool dev_frags = data[0] & 8;
	nvmet_tcp_set_p2p(!(data[0] & 16));
	static const int rcs[4] = { 0, -ENOMEM, -EXDEV, -ENODEV };
	fcmb_reset();
	fcmb_alloc_rc = rcs[(data[0] >> 5) & 3];
	fcmb_reach_rc = data[0] & 0x80 ? -EXDEV : 0;
	hd = data[1] & 1;
	dd = data[1] & 2;
	bool sqflow_off = data[1] & 4;
	now = 0;
	nr2t = 0;
	if (ftcp_start(json, &cfg, ft_ram_open, &fcmb_ops, err, sizeof(err)))
		abort();

	/* prologue: admin queue connected and enabled, an I/O queue connected */
	struct nvme_sqe sqe = ft_connect_sqe(0, 31, 0);
	struct tcp_sock *adm = ftcp_connect(0, frag_size);
	ftcp_icreq(adm, 0, 0, 0);
	ft_connect_data(cd, HOST, VOL0, 0xffff);
	ftcp_capsule(adm, false, false, &sqe, cd, sizeof(cd));
	sqe = ft_prop_sqe(true, false, NVMF_PROP_CC, NVME_CC_EN | (6u << NVME_CC_IOSQES_SHIFT) | (4u << NVME_CC_IOCQES_SHIFT));
	ftcp_capsule(adm, false, false, &sqe, NULL, 0);
	struct tcp_sock *q = ftcp_connect(1, frag_size);
	q->dev_frags = dev_frags;
	ftcp_icreq(q, 0, 0, (uint8_t)((hd ? NVME_TCP_DGST_HDGST_ENABLE : 0) | (dd ? NVME_TCP_DGST_DDGST_ENABLE : 0)));
	sqe = ft_connect_sqe(1, 63, 0);
	if (sqflow_off) {
		struct nvmf_cmd f = nvmf_cmd_of(&sqe);
		f.connect.cattr |= NVMF_CATTR_DISABLE_SQFLOW;
		sqe = nvmf_cmd_sqe(&f);
	}
	ft_connect_data(cd, HOST, VOL0, 1);
	ftcp_capsule(q, hd, dd, &sqe, cd, sizeof(cd));
	scan_r2ts(q);
	nr2t = 0;

	while (p < size && ftcp_open(q)) {
		uint8_t op = data[p++];
		uint8_t a = p < size ? data[p++] : 0;
		uint8_t b = p < size ? data[p++] : 0;
		if (q->tx_len > FTCP_TX_MAX / 2) {
			scan_r2ts(q); /* long runs: forget what was read */
			ftcp_tx_drop(q);
		}
		switch (op & 7) {
		case 0: { /* raw host bytes */
			size_t n = (size_t)a + 1;
			if (n > size - p)
				n = size - p;
			ftcp_send(q, data + p, n);
			p += n;
			break;
		}
		case 1: { /* a write: in-capsule when small, else through an R2T */
			uint32_t nlb = 1 + (uint32_t)(b % 64) * (a & 0x80 ? 8 : 1);
			rw_sqe(&sqe, true, (uint16_t)(a & 0x7f), (uint32_t)b * 7, nlb);
			if (nlb * 512 <= 8192 && (a & 0x40)) {
				static uint8_t w[8192];
				memset(w, b, sizeof(w));
				ftcp_capsule(q, hd, dd, &sqe, w, nlb * 512);
			} else {
				ftcp_capsule(q, hd, dd, &sqe, NULL, 0);
			}
			break;
		}
		case 2: /* a read */
			rw_sqe(&sqe, false, (uint16_t)(a & 0x7f), (uint32_t)b * 5, 1 + (uint32_t)(a % 128) * 4);
			ftcp_capsule(q, hd, dd, &sqe, NULL, 0);
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
			ftcp_ack(q);
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
				ftcp_eof(q);
			} else {
				q->ops->event(q, q->ctx, TCP_EV_CLOSED);
			}
			break;
		}
	}

	/* liveness: whatever this connection holds, another host is still served */
	if (ftcp_liveness(HOST, VOL0, err, sizeof(err)))
		ftcp_violation(err);
	if (ftcp_stop(err, sizeof(err)))
		ftcp_violation(err);
	assert(fcmb_in_use == 0);
	assert(mm_pool_total_in_use() == 0);
	return 0;
}
