// sources: drivers/nic/netdev.c net/net.c lib/ipv4_text.c net/arp.c net/ipv4.c net/udp.c net/tcp/tcp.c net/tcp/tcp_in.c net/tcp/tcp_isn.c net/tcp/tcp_pools.c net/tcp/tcp_admit.c tests/unit/net/fake_entropy.c net/tcp/tcp_hdr.c net/tcp/tcp_out.c net/tcp/tcp_budget.c net/tcp/tcp_sack.c net/tcp/tcp_service.c mm/pool.c mm/dma.c lib/timer.c lib/log.c lib/clock.c tests/unit/net/fake_netdev.c
/*
 * libFuzzer harness: the whole receive path (Ethernet, ARP, IPv4, ICMP, UDP, TCP) fed
 * through the fake netdev, split like e1000e, on a fresh stack per input that has the
 * discard/echo/chargen services, a UDP port (4791) and one established connection
 * (peer 10.10.0.1:40000 -> us:5000, peer ISS 1000, our ISS deterministic).
 *
 * Input: byte 0 = mode (bit 0: NIC split on, bit 1: NIC vouches for checksums, so
 * mutated frames reach TCP without valid checksums, bit 2: the scripted peer's SYN offers
 * SACK-permitted and window scale 2, bit 3: the NIC has QEMU 7.2's gather limits, one
 * device piece of <= 4 KiB per frame, bit 4: the NIC offloads checksums and segmentation,
 * so sends leave as TSO frames the fake NIC cuts), then records of
 * [len hi][len lo][clock advance in 10 ms][frame bytes]. After the last record the clock
 * runs 200 s (every timer path), then the stack is torn down.
 * Invariants: no crash/UB/leak (sanitizers); after abort of everything every pool is
 * empty and every receive buffer went back to the fake NIC.
 */
#include <assert.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "lib/clock.h"
#include "lib/timer.h"
#include "mm/pool.h"
#include "net/net_internal.h"
#include "net/tcp/tcp.h"
#include "tests/unit/net/fake_netdev.h"

static struct fake_netdev fnd;
static uint64_t now_ns;
static uint64_t fake_now(void) { return now_ns; }

static void udp_sink(struct udp_sock *s, void *ctx, const struct udp_meta *m, struct netbuf *nb)
{
	uint8_t b[16];
	(void)ctx;
	(void)m;
	if (netbuf_copy_out(nb, 0, b, 4) == 0 && b[0] == 'E')
		udp_sendto(s, m->src_addr, m->src_port, b, 4);
	if (nb->nfrags && b[1] == 'T') {
		struct netdev_frag f;
		netbuf_take_frag(nb, 0, &f);
		netdev_frag_release(&f);
	}
}

static struct tcp_sock *conn;
static void conn_event(struct tcp_sock *s, void *ctx, unsigned ev)
{
	struct netdev_frag f[8];
	uint8_t hdr[8];
	(void)ctx;
	if (ev & TCP_EV_CLOSED)
		return;
	/* Act like a PDU parser: peek a header, take fragments, echo some. */
	if (tcp_peek(s, 0, hdr, sizeof(hdr)) == 0 && hdr[0] == 'X') {
		int n = tcp_recv_frags(s, f, 8, hdr[1] * 16u + 1);
		if (n > 0 && tcp_send_frags(s, f, (unsigned)n))
			return;
	} else {
		uint8_t buf[512];
		tcp_recv_copy(s, buf, sizeof(buf));
	}
	if (tcp_recv_eof(s))
		tcp_shutdown_send(s);
}
static const struct tcp_ops conn_ops = { conn_event };

static void listen_event(struct tcp_sock *l, void *ctx, unsigned ev)
{
	struct tcp_sock *c;
	(void)ctx;
	if (!(ev & TCP_EV_ACCEPT))
		return;
	while ((c = tcp_accept(l))) {
		if (!conn) {
			conn = c;
			tcp_set_ops(c, &conn_ops, NULL);
			tcp_set_keepalive(c, 20 * NSEC_PER_SEC, NSEC_PER_SEC, 3);
		} else {
			tcp_abort(c);
		}
	}
}
static const struct tcp_ops listen_ops = { listen_event };

static uint8_t frame[FAKE_FRAME_MAX];

static void run_for(uint64_t ns)
{
	while (ns) {
		uint64_t step = ns < 50 * NSEC_PER_MSEC ? ns : 50 * NSEC_PER_MSEC;
		now_ns += step;
		ns -= step;
		timer_queue_run(&timer_default_queue, now_ns);
	}
}

static struct tcp_sock *listener;
static struct udp_sock *udp;

/* A fresh stack with the services, UDP 4791 and one established connection. */
static void setup(uint8_t mode)
{
	struct net_config c;

	now_ns = 1000 * NSEC_PER_SEC;
	clock_set_source(fake_now);
	timer_queue_init(&timer_default_queue);
	fake_netdev_setup(&fnd, ((mode & 1) ? NETDEV_F_RX_SPLIT : 0) |
				      ((mode & 16) ? NETDEV_F_TX_CSUM | NETDEV_F_TSO : 0));
	fnd.rx_csum_trust = (mode & 2) != 0;
	if (mode & 8) {
		fnd.dev.tx_dev_frags = 1;
		fnd.dev.tx_dev_bytes = 4096;
	}
	assert(net_init() == 0);
	net_config_default(&c);
	c.gateway = 0x0a0a0001;
	assert(net_configure(&c) == 0);
	assert(tcp_services_start() == 0);
	assert(udp_bind(4791, udp_sink, NULL, &udp) == 0);
	assert(tcp_listen(5000, 4, &listen_ops, NULL, &listener) == 0);
	conn = NULL;
	/* Scripted peer: ARP, then a handshake to port 5000. */
	size_t n = fake_build_arp(frame, 2, fake_peer_mac, 0x0a0a0001, fake_our_mac, 0x0a0a000a, fake_our_mac);
	fake_netdev_inject(&fnd, frame, n);
	static const uint8_t sack_ws[] = { 2, 4, 0x05, 0xb4, 1, 1, 4, 2, 1, 3, 3, 2 };
	struct fake_tcp t = { .src = 0x0a0a0001, .dst = 0x0a0a000a, .sport = 40000, .dport = 5000, .seq = 1000,
			      .flags = 0x02, .wnd = 65535 };
	if (mode & 4) {
		t.opts = sack_ws;
		t.optlen = sizeof(sack_ws);
	}
	fake_netdev_inject(&fnd, frame, fake_build_tcp(frame, &t));
	t.opts = NULL;
	t.optlen = 0;
	struct fake_parsed_tcp p;
	if (fnd.ntx && fake_parse_tcp(&fnd.tx[fnd.ntx - 1], &p)) {
		t.seq = 1001;
		t.ack = p.seq + 1;
		t.flags = 0x10;
		fake_netdev_inject(&fnd, frame, fake_build_tcp(frame, &t));
	}
}

/* Run every timer path, tear down, check that everything came back. */
static void teardown(void)
{
	run_for(200 * NSEC_PER_SEC);
	fnd.ntx = 0;
	udp_close(udp);
	tcp_services_stop();
	int rc = net_shutdown();
	assert(rc == 0);
	assert(mm_pool_total_in_use() == 0);
	assert(fake_netdev_teardown(&fnd) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t off = 1;

	if (size < 1)
		return 0;
	setup(data[0]);
	while (size - off >= 3) {
		size_t len = (size_t)data[off] << 8 | data[off + 1];
		uint8_t adv = data[off + 2];
		off += 3;
		if (len > size - off)
			len = size - off;
		if (len > FAKE_FRAME_MAX)
			len = FAKE_FRAME_MAX;
		run_for(adv * 10 * NSEC_PER_MSEC);
		fnd.ntx = 0;
		fake_netdev_inject(&fnd, data + off, len);
		off += len;
	}
	teardown();
	return 0;
}
