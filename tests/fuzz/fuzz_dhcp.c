// sources: drivers/nic/netdev.c net/net.c lib/ipv4_text.c net/arp.c net/ipv4.c net/udp.c net/dhcp.c net/tcp/tcp.c net/tcp/tcp_in.c net/tcp/tcp_admit.c net/tcp/tcp_pools.c net/tcp/tcp_isn.c tests/unit/net/fake_entropy.c net/tcp/tcp_hdr.c net/tcp/tcp_out.c net/tcp/tcp_budget.c net/tcp/tcp_sack.c net/tcp/tcp_service.c mm/pool.c mm/dma.c lib/timer.c lib/log.c lib/clock.c tests/unit/net/fake_netdev.c
/*
 * libFuzzer harness: the DHCP client's parser (dhcp_parse) and the client itself.
 *
 * Input: byte 0 = how far the scripted exchange gets before the fuzzed message arrives
 * (0: SELECTING, 1: REQUESTING, 2: BOUND then RENEWING at T1, 3: REBINDING at T2), then
 * the UDP payload of a server message. The parser runs on it alone (invariants: a parsed
 * message has at most DHCP_MAX_DNS servers; a refused one leaves the output zeroed); then
 * the message, with its xid and chaddr set to the client's so that it gets past the
 * transaction checks, is broadcast from port 67 to a client on a fresh stack, and the
 * clock runs 2 days (every timer path: retransmissions, T1, T2, expiry, fallback).
 * Invariants: no crash/UB/leak; the interface has an address exactly in the states that
 * hold one; every pool empty and every receive buffer back after teardown.
 */
#include <assert.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "lib/byteorder.h"
#include "lib/clock.h"
#include "lib/timer.h"
#include "mm/pool.h"
#include "net/dhcp.h"
#include "net/net_internal.h"
#include "tests/unit/net/fake_netdev.h"

#define SERVER 0x0a000202u
#define LEASED 0x0a00020fu

static struct fake_netdev fnd;
static struct dhcp_client cl;
static uint64_t now_ns;
static uint8_t frame[FAKE_FRAME_MAX];
static uint64_t fake_now(void) { return now_ns; }

static void run_for(uint64_t ns)
{
	uint64_t end = now_ns + ns;
	while (now_ns < end) {
		uint64_t next = timer_queue_next_deadline(&timer_default_queue);
		now_ns = next > now_ns && next < end ? next : next <= now_ns ? now_ns + NSEC_PER_MSEC : end;
		timer_queue_run(&timer_default_queue, now_ns);
		fnd.ntx = 0;
	}
}

/* A well-formed server message of type t to the client's transaction. */
static void scripted(uint8_t t)
{
	uint8_t m[300];
	memset(m, 0, sizeof(m));
	m[0] = 2;
	m[1] = 1;
	m[2] = 6;
	be32_store(m + 4, cl.xid);
	be32_store(m + 16, LEASED);
	memcpy(m + 28, fake_our_mac, 6);
	be32_store(m + 236, DHCP_MAGIC);
	const uint8_t opts[] = { 53, 1, t, 54, 4, 10, 0, 2, 2, 1, 4, 255, 255, 255, 0, 51, 4, 0, 0, 0, 100, 255 };
	memcpy(m + 240, opts, sizeof(opts));
	fake_netdev_inject(&fnd, frame, fake_build_udp(frame, SERVER, 0xffffffffu, 67, 68, m, sizeof(m)));
	fnd.ntx = 0;
}

static void deliver(const uint8_t *data, size_t size)
{
	static uint8_t m[DHCP_MSG_MAX];
	if (size > sizeof(m))
		size = sizeof(m);
	memcpy(m, data, size);
	if (size >= 34) {
		be32_store(m + 4, cl.xid);
		memcpy(m + 28, fake_our_mac, 6);
	}
	fake_netdev_inject(&fnd, frame, fake_build_udp(frame, SERVER, 0xffffffffu, 67, 68, m, size));
	fnd.ntx = 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dhcp_msg msg;
	struct dhcp_params p;
	struct net_config nc;

	if (size < 1)
		return 0;
	if (dhcp_parse(data + 1, size - 1, &msg) == 0) {
		assert(msg.ndns <= DHCP_MAX_DNS);
	} else {
		static const struct dhcp_msg zero;
		assert(memcmp(&msg, &zero, sizeof(msg)) == 0);
	}

	now_ns = 1000 * NSEC_PER_SEC;
	clock_set_source(fake_now);
	timer_queue_init(&timer_default_queue);
	fake_netdev_setup(&fnd, NETDEV_F_RX_SPLIT);
	assert(net_init() == 0);
	memset(&p, 0, sizeof(p));
	net_config_default(&p.fallback);
	p.timeout_ns = (data[0] & 4) ? 30 * NSEC_PER_SEC : 0;
	assert(dhcp_start(&cl, &p) == 0);
	fnd.ntx = 0;
	unsigned stage = data[0] & 3;
	if (stage >= 1)
		scripted(DHCPOFFER);
	if (stage >= 2) {
		scripted(DHCPACK);
		assert(cl.state == DHCP_BOUND);
		run_for(50 * NSEC_PER_SEC + NSEC_PER_MSEC);
		assert(cl.state == DHCP_RENEWING);
	}
	if (stage >= 3) {
		run_for(38 * NSEC_PER_SEC);
		assert(cl.state == DHCP_REBINDING);
	}
	deliver(data + 1, size - 1);
	net_config_get(&nc);
	bool holds = cl.state == DHCP_BOUND || cl.state == DHCP_RENEWING || cl.state == DHCP_REBINDING ||
		     cl.state == DHCP_FALLBACK;
	assert(holds == (nc.addr != 0));
	run_for(2 * 86400 * NSEC_PER_SEC);
	net_config_get(&nc);
	holds = cl.state == DHCP_BOUND || cl.state == DHCP_RENEWING || cl.state == DHCP_REBINDING ||
		cl.state == DHCP_FALLBACK;
	assert(holds == (nc.addr != 0));
	dhcp_stop(&cl);
	assert(net_shutdown() == 0);
	assert(mm_pool_total_in_use() == 0);
	assert(fake_netdev_teardown(&fnd) == 0);
	return 0;
}
