// sources: drivers/nic/netdev.c net/net.c lib/ipv4_text.c net/arp.c net/ipv4.c net/udp.c net/tcp/tcp.c net/tcp/tcp_in.c net/tcp/tcp_isn.c net/tcp/tcp_pools.c net/tcp/tcp_admit.c tests/unit/net/fake_entropy.c net/tcp/tcp_hdr.c net/tcp/tcp_out.c net/tcp/tcp_budget.c net/tcp/tcp_sack.c net/tcp/tcp_service.c mm/pool.c mm/dma.c lib/timer.c lib/log.c tests/unit/net/fake_netdev.c
/*
 * Segments cut to the netdev's device-gather limits (tx_dev_frags, tx_dev_bytes): a
 * segment never gathers two device-memory pieces, nor more than tx_dev_bytes of one,
 * so the NIC never has to copy it through DRAM (QEMU 7.2's e1000e: one piece of at most
 * 4 KiB). Host chunks are not limited; retransmissions are cut the same way.
 */
#include "tests/unit/net/tcp/tcp_test.h"

TestSuite(tcp_segcut, .init = net_setup, .fini = net_teardown);

static uint8_t pattern[65536];
static uint8_t devmem[65536]; /* stands for a CMB: fragments tagged as device memory */
static const uint8_t opt_mss8960[] = { 2, 4, 0x23, 0x00 };

static void fill(void)
{
	for (size_t i = 0; i < sizeof(devmem); i++)
		devmem[i] = (uint8_t)(i * 7 + (i >> 9));
}

static struct netdev_frag dev_frag(size_t off, uint32_t len)
{
	struct netdev_frag f;
	memset(&f, 0, sizeof(f));
	f.addr = dma_addr_device((uint64_t)(uintptr_t)(devmem + off));
	f.offset = off;
	f.len = len;
	f.provider = 1;
	return f;
}

static void qemu_limits(void)
{
	fnd.dev.tx_dev_frags = 1;
	fnd.dev.tx_dev_bytes = 4096;
}

Test(tcp_segcut, one_device_fragment_per_segment)
{
	struct tcp_sock *l;
	fill();
	qemu_limits();
	uint32_t iss = open_passive(&l, 1000, 65535, opt_mss1460, 4);
	struct tcp_sock *s = accepted;
	/* Three received-size fragments, not aligned to the MSS: 1000 + 1000 + 1000. */
	struct netdev_frag f[3] = { dev_frag(0, 1000), dev_frag(1000, 1000), dev_frag(2000, 1000) };
	cr_assert_eq(tcp_send_frags(s, f, 3), 0);
	tcp_flush(s); /* done queueing: the short tail goes now */
	cr_assert_eq(fnd.ntx, 3, "three segments, one per fragment (cwnd 3 x MSS)");
	for (unsigned i = 0; i < 3; i++) {
		struct fake_parsed_tcp *p = txseg(i);
		cr_assert_eq(p->len, 1000, "segment %u: %zu bytes", i, p->len);
		cr_assert_eq(p->seq, iss + 1 + 1000 * i);
		cr_assert_eq(memcmp(p->payload, devmem + 1000 * i, 1000), 0);
	}
	cr_assert_eq(fnd.tx_over_limit, 0, "no frame needs a DRAM bounce");
	cr_assert_eq(tcp_stats()->tx_cut_dev, 2);
	peer_seg(TCP_ACK, 1001, iss + 3001, 65535, NULL, 0, NULL, 0);
	tcp_abort(s);
	close_listener(l);
}

/* tcp_xmit cuts a frame while it gathers it: a frame it cut carries neither PSH nor FIN
 * (they belong to the queue's last byte), the last one both. */
Test(tcp_segcut, cut_frames_carry_neither_psh_nor_fin)
{
	struct tcp_sock *l;
	fill();
	qemu_limits();
	uint32_t iss = open_passive(&l, 1000, 65535, opt_mss1460, 4);
	struct tcp_sock *s = accepted;
	struct netdev_frag f[3] = { dev_frag(0, 1000), dev_frag(1000, 1000), dev_frag(2000, 1000) };
	cr_assert_eq(tcp_send_frags(s, f, 3), 0);
	cr_assert_eq(tcp_shutdown_send(s), 0);
	cr_assert_eq(fnd.ntx, 3);
	for (unsigned i = 0; i < 3; i++) {
		struct fake_parsed_tcp *p = txseg(i);
		cr_assert_eq(p->len, 1000, "segment %u: %zu bytes", i, p->len);
		cr_assert_eq(p->flags, i < 2 ? TCP_ACK : (TCP_ACK | TCP_PSH | TCP_FIN), "segment %u: flags 0x%x", i,
			     p->flags);
	}
	cr_assert_eq(tcp_stats()->tx_cut_dev, 2);
	peer_seg(TCP_ACK, 1001, iss + 3002, 65535, NULL, 0, NULL, 0);
	cr_assert_eq(tcp_state(s), TCP_FIN_WAIT_2);
	tcp_abort(s);
	close_listener(l);
}

Test(tcp_segcut, without_limits_segments_fill_the_mss)
{
	struct tcp_sock *l;
	fill();
	uint32_t iss = open_passive(&l, 1000, 65535, opt_mss1460, 4);
	struct tcp_sock *s = accepted;
	struct netdev_frag f[3] = { dev_frag(0, 1000), dev_frag(1000, 1000), dev_frag(2000, 1000) };
	cr_assert_eq(tcp_send_frags(s, f, 3), 0);
	tcp_flush(s); /* done queueing: the short tail goes now */
	cr_assert_eq(txseg(0)->len, 1460, "two pieces gathered in one segment");
	cr_assert_eq(txseg(1)->len, 1460);
	cr_assert_eq(txseg(2)->len, 80);
	cr_assert_eq(tcp_stats()->tx_cut_dev, 0);
	/* The same frames with the QEMU limits would have needed the bounce. */
	peer_seg(TCP_ACK, 1001, iss + 3001, 65535, NULL, 0, NULL, 0);
	tcp_abort(s);
	close_listener(l);
}

Test(tcp_segcut, device_byte_limit_at_jumbo_mtu)
{
	struct tcp_sock *l;
	fill();
	qemu_limits();
	fnd.dev.mtu = 9000;
	uint32_t iss = open_passive(&l, 1000, 65535, opt_mss8960, 4);
	struct tcp_sock *s = accepted;
	struct tcp_info i;
	tcp_get_info(s, &i);
	cr_assert_eq(i.mss, 8960);
	/* One jumbo received fragment of 8960 bytes goes out as 4096 + 4096 + 768. */
	struct netdev_frag f = dev_frag(0, 8960);
	cr_assert_eq(tcp_send_frags(s, &f, 1), 0);
	tcp_flush(s); /* done queueing: the short tail goes now */
	cr_assert_eq(fnd.ntx, 3);
	const size_t want[3] = { 4096, 4096, 768 };
	size_t off = 0;
	for (unsigned k = 0; k < 3; k++) {
		struct fake_parsed_tcp *p = txseg(k);
		cr_assert_eq(p->len, want[k], "segment %u: %zu bytes", k, p->len);
		cr_assert_eq(memcmp(p->payload, devmem + off, p->len), 0);
		off += p->len;
	}
	cr_assert_eq(fnd.tx_over_limit, 0);
	peer_seg(TCP_ACK, 1001, iss + 1 + 8960, 65535, NULL, 0, NULL, 0);
	tcp_abort(s);
	close_listener(l);
}

Test(tcp_segcut, host_chunks_are_not_limited)
{
	struct tcp_sock *l;
	qemu_limits();
	uint32_t iss = open_passive(&l, 1000, 65535, opt_mss1460, 4);
	struct tcp_sock *s = accepted;
	/* Host memory next to a device piece: one device piece per frame still holds. */
	cr_assert_eq(tcp_send_copy(s, pattern, 1000), 1000);
	tcp_flush(s); /* done queueing: the short tail goes now */
	struct netdev_frag f[2] = { dev_frag(0, 1000), dev_frag(1000, 1000) };
	cr_assert_eq(tcp_send_frags(s, f, 2), 0);
	tcp_flush(s); /* done queueing: the short tail goes now */
	/* 1000 host bytes went out alone (sent before the fragments were queued), then
	 * device pieces one per segment. */
	cr_assert_eq(txseg(0)->len, 1000);
	cr_assert_eq(txseg(1)->len, 1000);
	cr_assert_eq(txseg(2)->len, 1000);
	cr_assert_eq(fnd.tx_over_limit, 0);
	/* A retransmission after the timeout: host chunk + the first device piece fits. */
	fake_netdev_clear(&fnd);
	advance(TCP_RTO_INITIAL_NS);
	struct fake_parsed_tcp *p = txseg(0);
	cr_assert_eq(p->seq, iss + 1);
	cr_assert_eq(p->len, 1460, "1000 host + 460 of one device piece: %zu", p->len);
	cr_assert_eq(memcmp(p->payload, pattern, 1000), 0);
	cr_assert_eq(memcmp(p->payload + 1000, devmem, 460), 0);
	cr_assert_eq(fnd.tx_over_limit, 0);
	peer_seg(TCP_ACK, 1001, iss + 3001, 65535, NULL, 0, NULL, 0);
	tcp_abort(s);
	close_listener(l);
}

Test(tcp_segcut, retransmission_cut_at_the_fragment_boundary)
{
	struct tcp_sock *l;
	fill();
	qemu_limits();
	uint32_t iss = open_passive(&l, 1000, 65535, opt_mss1460, 4);
	struct tcp_sock *s = accepted;
	struct netdev_frag f[3] = { dev_frag(0, 700), dev_frag(700, 1400), dev_frag(2100, 900) };
	cr_assert_eq(tcp_send_frags(s, f, 3), 0);
	tcp_flush(s); /* done queueing: the short tail goes now */
	cr_assert_eq(txseg(0)->len, 700);
	/* Three duplicate ACKs: the fast retransmission at SND.UNA is cut the same way. */
	fake_netdev_clear(&fnd);
	for (int k = 0; k < 3; k++)
		peer_seg(TCP_ACK, 1001, iss + 1, 65535, NULL, 0, NULL, 0);
	cr_assert_eq(tcp_stats()->fast_retransmits, 1);
	struct fake_parsed_tcp *p = txseg(0);
	cr_assert_eq(p->seq, iss + 1);
	cr_assert_eq(p->len, 700);
	cr_assert_eq(fnd.tx_over_limit, 0);
	peer_seg(TCP_ACK, 1001, iss + 3001, 65535, NULL, 0, NULL, 0);
	tcp_abort(s);
	close_listener(l);
}
