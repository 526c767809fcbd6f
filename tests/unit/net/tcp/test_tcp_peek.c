// sources: drivers/nic/netdev.c net/net.c lib/ipv4_text.c net/arp.c net/ipv4.c net/udp.c net/tcp/tcp.c net/tcp/tcp_in.c net/tcp/tcp_isn.c net/tcp/tcp_pools.c net/tcp/tcp_admit.c tests/unit/net/fake_entropy.c net/tcp/tcp_hdr.c net/tcp/tcp_out.c net/tcp/tcp_budget.c net/tcp/tcp_sack.c net/tcp/tcp_service.c mm/pool.c mm/dma.c lib/timer.c lib/log.c tests/unit/net/fake_netdev.c
/*
 * tcp_peek8 (the NVMe/TCP target's look at a PDU's common header where it lies): the first
 * 8 queued bytes, read in place from the first fragment when it holds them (counted as a
 * CPU read of its memory class), across fragments as tcp_peek otherwise, -EAGAIN with
 * fewer than 8 queued; nothing is consumed.
 */
#include "tests/unit/net/tcp/tcp_test.h"

TestSuite(tcp_peek, .init = net_setup, .fini = net_teardown);

static uint8_t pattern[4096];

Test(tcp_peek, first_eight_bytes_in_place_or_across_fragments)
{
	struct tcp_sock *l;
	uint8_t b[8];
	for (size_t i = 0; i < sizeof(pattern); i++)
		pattern[i] = (uint8_t)(i * 29 + 7);
	uint32_t iss = open_passive(&l, 1000, 65535, opt_mss1460, 4);
	struct tcp_sock *s = accepted;
	cr_assert_eq(tcp_peek8(s, b), -EAGAIN, "nothing queued");
	/* 3 bytes, then 5 more in a second segment: across fragments */
	peer_seg(TCP_ACK | TCP_PSH, 1001, iss + 1, 65535, pattern, 3, NULL, 0);
	cr_assert_eq(tcp_peek8(s, b), -EAGAIN, "3 bytes queued");
	peer_seg(TCP_ACK | TCP_PSH, 1004, iss + 1, 65535, pattern + 3, 1000, NULL, 0);
	cr_assert_eq(tcp_peek8(s, b), 0);
	cr_assert_arr_eq(b, pattern, 8);
	cr_assert_eq(tcp_recv_avail(s), 1003, "nothing consumed");
	/* take the 3-byte fragment: the next 8 bytes lie in one fragment, read in place */
	struct netdev_frag f;
	cr_assert_eq(tcp_recv_frags(s, &f, 1, SIZE_MAX), 1);
	cr_assert_eq(f.len, 3);
	netdev_frag_release(&f);
	uint64_t cpu = dma_counters()->cpu_bytes[MEM_CLASS_DEVICE];
	cr_assert_eq(tcp_peek8(s, b), 0);
	cr_assert_arr_eq(b, pattern + 3, 8);
	cr_assert_eq(dma_counters()->cpu_bytes[MEM_CLASS_DEVICE], cpu + 8, "a counted read of device memory");
	cr_assert_eq(tcp_recv_avail(s), 1000);
	tcp_abort(s);
	close_listener(l);
}
