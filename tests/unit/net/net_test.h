/*
 * net_test.h - setup shared by the net/ unit tests: the fake clock, a fresh timer
 * queue, the stack on a fake netdev at 10.10.0.10/24 with the peer 10.10.0.1 already in
 * the ARP table; teardown checks every pool and every lent RX buffer came back.
 */
#ifndef TESTS_UNIT_NET_NET_TEST_H
#define TESTS_UNIT_NET_NET_TEST_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mm/pool.h"
#include "lib/clock.h"
#include "lib/timer.h"
#include "mm/dma.h"
#include <errno.h>
#include "net/net_internal.h"
#include "net/tcp/tcp.h"
#include "tests/unit/net/fake_netdev.h"
#include "tests/unit/unit_support.h"

#define US 0x0a0a000au
#define PEER 0x0a0a0001u

#define NET_SOURCES_NOTE "see the // sources: line"

static struct fake_netdev fnd;
static uint8_t frame[FAKE_FRAME_MAX];

static inline void run_timers(void)
{
	timer_queue_run(&timer_default_queue, clock_now_ns());
}

static inline void advance(uint64_t ns)
{
	/* Step in small increments so timers fire in order with a realistic clock. */
	while (ns) {
		uint64_t step = ns < 10 * NSEC_PER_MSEC ? ns : 10 * NSEC_PER_MSEC;
		fake_clock_advance(step);
		ns -= step;
		run_timers();
	}
}

static inline void net_test_start(uint32_t features)
{
	struct net_config c;
	unit_pools_begin();
	fake_clock_install();
	fake_clock_set(1000 * NSEC_PER_SEC);
	timer_queue_init(&timer_default_queue);
	dma_counters_reset();
	fake_netdev_setup(&fnd, features);
	cr_assert_eq(net_init(), 0);
	net_config_default(&c);
	cr_assert_eq(net_configure(&c), 0);
	/* The peer asks for us: we learn its MAC and answer. */
	size_t n = fake_build_arp(frame, 1, fake_peer_mac, PEER, (const uint8_t[6]){ 0 }, US,
				  (const uint8_t[6]){ 0xff, 0xff, 0xff, 0xff, 0xff, 0xff });
	cr_assert_eq(fake_netdev_inject(&fnd, frame, n), 0);
	cr_assert_eq(fnd.ntx, 1, "ARP reply");
	fake_netdev_clear(&fnd);
}

static inline void net_setup(void)
{
	net_test_start(NETDEV_F_RX_SPLIT);
}

static inline void net_teardown(void)
{
	unsigned lent;
	size_t in_use = mm_pool_total_in_use();
	/* An assertion in a Criterion .fini does not fail the test: abort instead, which
	 * Criterion reports as a crash. */
	if (in_use) {
		fprintf(stderr, "net test leaked %zu pool objects\n", in_use);
		abort();
	}
	unit_pools_end();
	cr_assert_eq(net_shutdown(), 0);
	lent = fake_netdev_teardown(&fnd);
	cr_assert_eq(lent, 0, "%u receive buffers never returned", lent);
}

#endif
