// sources: drivers/nic/netdev.c net/net.c lib/ipv4_text.c net/arp.c net/ipv4.c net/udp.c net/tcp/tcp.c net/tcp/tcp_in.c net/tcp/tcp_isn.c net/tcp/tcp_pools.c net/tcp/tcp_admit.c tests/unit/net/fake_entropy.c net/tcp/tcp_hdr.c net/tcp/tcp_out.c net/tcp/tcp_budget.c net/tcp/tcp_sack.c net/tcp/tcp_service.c mm/pool.c mm/dma.c lib/timer.c lib/log.c tests/unit/net/fake_netdev.c
/*
 * TCP selective acknowledgment, receiver side (RFC 2018, RFC 2883): SACK-permitted in
 * the handshake, the blocks of the out-of-order queue in ACKs (content, most recent
 * first, no more than fit), D-SACK for duplicates, payload shortened by the option.
 */
#include "tests/unit/net/tcp/tcp_test.h"

TestSuite(tcp_sack, .init = net_setup, .fini = net_teardown);

static uint8_t pattern[65536];
/* MSS 1460, SACK-permitted, window scale 2: what Linux sends (without timestamps). */
static const uint8_t opt_sack[] = { 2, 4, 0x05, 0xb4, 1, 1, 4, 2, 1, 3, 3, 2 };

#define SEG(k) (1001 + 1000 * (k)) /* the peer's k-th 1000-byte segment (ISS 1000) */

static void data(struct tcp_sock *s, uint32_t iss, unsigned k)
{
	(void)s;
	peer_seg(TCP_ACK, SEG(k), iss + 1, 65535, pattern + 1000 * k, 1000, NULL, 0);
}

static void expect_blocks(const struct fake_parsed_tcp *p, unsigned n, const uint32_t (*want)[2])
{
	cr_assert_eq(p->nsack, n, "%u SACK blocks, want %u", p->nsack, n);
	for (unsigned i = 0; i < n; i++) {
		cr_assert_eq(p->sack[i][0], want[i][0], "block %u left %u want %u", i, p->sack[i][0], want[i][0]);
		cr_assert_eq(p->sack[i][1], want[i][1], "block %u right %u want %u", i, p->sack[i][1], want[i][1]);
	}
}

Test(tcp_sack, permitted_only_when_offered)
{
	struct tcp_sock *l, *c;
	cr_assert_eq(tcp_listen(SRV_PORT, 8, &listen_ops, NULL, &l), 0);
	peer_seg(TCP_SYN, 1000, 0, 65535, NULL, 0, opt_sack, sizeof(opt_sack));
	cr_assert(txseg(0)->sack_perm, "SYN-ACK answers SACK-permitted");
	cr_assert_eq(seg.mss, 1460);
	cr_assert_eq(seg.ws, TCP_RCV_WSCALE);
	tcp_close(l);
	fake_netdev_clear(&fnd);
	/* A peer without SACK gets none. */
	cr_assert_eq(tcp_listen(SRV_PORT, 8, &listen_ops, NULL, &l), 0);
	peer_seg(TCP_SYN, 1000, 0, 65535, NULL, 0, opt_mss1460_ws2, sizeof(opt_mss1460_ws2));
	cr_assert_not(txseg(0)->sack_perm);
	tcp_close(l);
	fake_netdev_clear(&fnd);
	/* Our own SYN offers it. */
	cr_assert_eq(tcp_connect(PEER, PEER_PORT, &rec_ops, NULL, &c), 0);
	cr_assert(lastseg()->sack_perm);
	cr_assert_eq(seg.flags, TCP_SYN);
	tcp_abort(c);
}

Test(tcp_sack, blocks_most_recent_first_then_merged_then_gone)
{
	struct tcp_sock *l;
	uint32_t iss = open_passive(&l, 1000, 65535, opt_sack, sizeof(opt_sack));
	struct tcp_sock *s = accepted;
	struct tcp_info i;
	tcp_get_info(s, &i);
	cr_assert(i.sack_ok);
	/* Segment 0 lost; 2, 4, 6 arrive (holes at 1, 3, 5). */
	data(s, iss, 2);
	expect_blocks(lastseg(), 1, (const uint32_t[][2]){ { SEG(2), SEG(3) } });
	cr_assert_eq(seg.ack, SEG(0));
	data(s, iss, 4);
	expect_blocks(lastseg(), 2, (const uint32_t[][2]){ { SEG(4), SEG(5) }, { SEG(2), SEG(3) } });
	data(s, iss, 6);
	expect_blocks(lastseg(), 3,
		      (const uint32_t[][2]){ { SEG(6), SEG(7) }, { SEG(4), SEG(5) }, { SEG(2), SEG(3) } });
	/* 3 fills a hole between 2 and 4: one block [2, 5), reported first (it holds 3). */
	data(s, iss, 3);
	expect_blocks(lastseg(), 2, (const uint32_t[][2]){ { SEG(2), SEG(5) }, { SEG(6), SEG(7) } });
	/* An older block re-received moves to the front. */
	data(s, iss, 6);
	expect_blocks(lastseg(), 2, (const uint32_t[][2]){ { SEG(6), SEG(7) }, { SEG(2), SEG(5) } });
	/* 0 and 1 arrive: [0, 5) is delivered, only [6, 7) remains out of order. */
	data(s, iss, 0);
	data(s, iss, 1);
	cr_assert_eq(lastseg()->ack, SEG(5));
	expect_blocks(&seg, 1, (const uint32_t[][2]){ { SEG(6), SEG(7) } });
	data(s, iss, 5);
	cr_assert_eq(lastseg()->ack, SEG(7));
	cr_assert_eq(seg.nsack, 0, "nothing out of order: no SACK option");
	cr_assert_eq(seg.hlen, 20);
	cr_assert_eq(tcp_recv_avail(s), 7000);
	cr_assert_geq(tcp_stats()->sack_blocks_out, 9);
	tcp_abort(s);
	close_listener(l);
}

Test(tcp_sack, at_most_four_blocks_newest_first)
{
	struct tcp_sock *l;
	uint32_t iss = open_passive(&l, 1000, 65535, opt_sack, sizeof(opt_sack));
	struct tcp_sock *s = accepted;
	/* Six islands: 2, 4, 6, 8, 10, 12. */
	for (unsigned k = 2; k <= 12; k += 2)
		data(s, iss, k);
	struct fake_parsed_tcp *p = lastseg();
	cr_assert_eq(p->hlen, 20 + 36, "NOP NOP SACK(2 + 4 x 8): the 40 option bytes hold four blocks");
	expect_blocks(p, 4, (const uint32_t[][2]){ { SEG(12), SEG(13) }, { SEG(10), SEG(11) }, { SEG(8), SEG(9) },
						   { SEG(6), SEG(7) } });
	/* Filling the hole at 11 merges 10..12: first block [10, 13), then the older ones. */
	data(s, iss, 11);
	expect_blocks(lastseg(), 4, (const uint32_t[][2]){ { SEG(10), SEG(13) }, { SEG(8), SEG(9) },
							     { SEG(6), SEG(7) }, { SEG(4), SEG(5) } });
	tcp_abort(s);
	close_listener(l);
}

Test(tcp_sack, dsack_reports_a_duplicate_once)
{
	struct tcp_sock *l;
	uint32_t iss = open_passive(&l, 1000, 65535, opt_sack, sizeof(opt_sack));
	struct tcp_sock *s = accepted;
	data(s, iss, 0);
	data(s, iss, 1);
	cr_assert_eq(lastseg()->ack, SEG(2));
	fake_netdev_clear(&fnd);
	data(s, iss, 0); /* a duplicate: below RCV.NXT */
	cr_assert_eq(fnd.ntx, 1, "a duplicate is acknowledged at once");
	expect_blocks(lastseg(), 1, (const uint32_t[][2]){ { SEG(0), SEG(1) } });
	cr_assert_eq(tcp_stats()->dsack_out, 1);
	/* With out-of-order data the D-SACK block comes first. */
	data(s, iss, 4);
	expect_blocks(lastseg(), 1, (const uint32_t[][2]){ { SEG(4), SEG(5) } });
	data(s, iss, 1);
	expect_blocks(lastseg(), 2, (const uint32_t[][2]){ { SEG(1), SEG(2) }, { SEG(4), SEG(5) } });
	data(s, iss, 2);
	expect_blocks(lastseg(), 1, (const uint32_t[][2]){ { SEG(4), SEG(5) } });
	cr_assert_eq(tcp_stats()->dsack_out, 2);
	tcp_abort(s);
	close_listener(l);
}

Test(tcp_sack, no_blocks_without_permission)
{
	struct tcp_sock *l;
	uint32_t iss = open_passive(&l, 1000, 65535, opt_mss1460_ws2, sizeof(opt_mss1460_ws2));
	struct tcp_sock *s = accepted;
	data(s, iss, 2);
	cr_assert_eq(lastseg()->ack, SEG(0));
	cr_assert_eq(seg.nsack, 0);
	cr_assert_eq(seg.hlen, 20);
	data(s, iss, 0);
	cr_assert_eq(lastseg()->nsack, 0, "no D-SACK either");
	tcp_abort(s);
	close_listener(l);
}

Test(tcp_sack, data_segments_keep_their_size_and_a_pure_ack_carries_the_blocks)
{
	struct tcp_sock *l;
	uint32_t iss = open_passive(&l, 1000, 65535, opt_sack, sizeof(opt_sack));
	struct tcp_sock *s = accepted;
	data(s, iss, 3); /* a hole */
	fake_netdev_clear(&fnd);
	/* A full segment has no room for the option (the MSS counts payload and options, RFC
	 * 6691): it goes out whole, without blocks, and a pure ACK with them follows. */
	cr_assert_eq(tcp_send_copy(s, pattern, 1460), 1460);
	tcp_flush(s); /* done queueing: the short tail goes now */
	cr_assert_eq(fnd.ntx, 2);
	struct fake_parsed_tcp *p = txseg(0);
	cr_assert_eq(p->len, 1460);
	cr_assert_eq(p->nsack, 0);
	cr_assert_eq(fnd.tx[0].len, 14 + 20 + 20 + 1460, "the frame stays within the MTU");
	cr_assert_eq(memcmp(p->payload, pattern, p->len), 0);
	p = txseg(1);
	cr_assert_eq(p->len, 0);
	cr_assert_eq(p->flags, TCP_ACK);
	expect_blocks(p, 1, (const uint32_t[][2]){ { SEG(3), SEG(4) } });
	/* A short segment carries the blocks that fit beside it, and also leaves the pure ACK. */
	fake_netdev_clear(&fnd);
	data(s, iss, 5);
	fake_netdev_clear(&fnd);
	cr_assert_eq(tcp_send_copy(s, pattern, 1448), 1448);
	tcp_flush(s); /* done queueing: the short tail goes now */
	p = txseg(0);
	cr_assert_eq(p->len, 1448, "room for 12 option bytes: one block");
	expect_blocks(p, 1, (const uint32_t[][2]){ { SEG(5), SEG(6) } });
	cr_assert_eq(fnd.tx[0].len, 14 + 20 + 20 + 1460);
	expect_blocks(txseg(1), 2, (const uint32_t[][2]){ { SEG(5), SEG(6) }, { SEG(3), SEG(4) } });
	/* With nothing out of order data segments carry no option and no extra ACK follows. */
	data(s, iss, 0);
	data(s, iss, 1);
	data(s, iss, 2);
	data(s, iss, 4);
	cr_assert_eq(lastseg()->ack, SEG(6));
	fake_netdev_clear(&fnd);
	cr_assert_eq(tcp_send_copy(s, pattern, 100), 100);
	tcp_flush(s); /* done queueing: the short tail goes now */
	cr_assert_eq(fnd.ntx, 1);
	cr_assert_eq(txseg(0)->hlen, 20);
	tcp_abort(s);
	close_listener(l);
}

Test(tcp_sack, dsack_duplicate_acks_do_not_trigger_fast_retransmit)
{
	struct tcp_sock *l;
	uint32_t iss = open_passive(&l, 1000, 65535, opt_sack, sizeof(opt_sack));
	struct tcp_sock *s = accepted;
	cr_assert_eq(tcp_send_copy(s, pattern, 4000), 4000);
	tcp_flush(s); /* done queueing: the short tail goes now */
	peer_seg(TCP_ACK, 1001, iss + 1001, 65535, NULL, 0, NULL, 0);
	/* Three ACKs at SND.UNA that each report a duplicate below it (D-SACK): the peer got a
	 * segment twice, nothing is lost. */
	uint8_t dsack[12] = { 1, 1, 5, 10 };
	uint32_t l0 = iss + 1, r0 = iss + 1001;
	for (int k = 0; k < 4; k++) {
		dsack[4 + k] = (uint8_t)(l0 >> (24 - 8 * k));
		dsack[8 + k] = (uint8_t)(r0 >> (24 - 8 * k));
	}
	for (int k = 0; k < 3; k++)
		peer_seg(TCP_ACK, 1001, iss + 1001, 65535, NULL, 0, dsack, sizeof(dsack));
	cr_assert_eq(tcp_stats()->fast_retransmits, 0);
	/* Plain duplicate ACKs (or ones with SACK blocks above the ACK) still count. */
	uint8_t sack[12] = { 1, 1, 5, 10 };
	uint32_t l1 = iss + 2001, r1 = iss + 3001;
	for (int k = 0; k < 4; k++) {
		sack[4 + k] = (uint8_t)(l1 >> (24 - 8 * k));
		sack[8 + k] = (uint8_t)(r1 >> (24 - 8 * k));
	}
	peer_seg(TCP_ACK, 1001, iss + 1001, 65535, NULL, 0, sack, sizeof(sack));
	peer_seg(TCP_ACK, 1001, iss + 1001, 65535, NULL, 0, NULL, 0);
	peer_seg(TCP_ACK, 1001, iss + 1001, 65535, NULL, 0, sack, sizeof(sack));
	cr_assert_eq(tcp_stats()->fast_retransmits, 1);
	peer_seg(TCP_ACK, 1001, iss + 4001, 65535, NULL, 0, NULL, 0);
	tcp_abort(s);
	close_listener(l);
}
