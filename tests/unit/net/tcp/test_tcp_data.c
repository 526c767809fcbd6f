// sources: drivers/nic/netdev.c net/net.c lib/ipv4_text.c net/arp.c net/ipv4.c net/udp.c net/tcp/tcp.c net/tcp/tcp_in.c net/tcp/tcp_isn.c net/tcp/tcp_pools.c net/tcp/tcp_admit.c tests/unit/net/fake_entropy.c net/tcp/tcp_hdr.c net/tcp/tcp_out.c net/tcp/tcp_budget.c net/tcp/tcp_sack.c net/tcp/tcp_service.c mm/pool.c mm/dma.c lib/timer.c lib/log.c tests/unit/net/fake_netdev.c
/*
 * TCP data: payload fragments in device memory in sequence order, delayed ACK,
 * out-of-order and duplicate segments, window edges, sequence wraparound, zero-copy
 * send with references held until ACKed, RTO with Karn and backoff, fast retransmit,
 * zero-window probes, keepalive, the discard/echo services.
 */
#include "lib/poller.h"
#include "tests/unit/net/tcp/tcp_test.h"

TestSuite(tcp_data, .init = net_setup, .fini = net_teardown);

static uint8_t pattern[65536];

static void fill(void)
{
	for (size_t i = 0; i < sizeof(pattern); i++)
		pattern[i] = (uint8_t)(i * 31 + (i >> 8));
}

/* Drain the receive queue with recv_frags, check bytes against pattern[off..]. */
static size_t drain_check(struct tcp_sock *s, size_t off)
{
	struct netdev_frag f[64];
	size_t total = 0;
	int n;
	while ((n = tcp_recv_frags(s, f, 64, SIZE_MAX)) > 0) {
		for (int i = 0; i < n; i++) {
			uint8_t buf[FAKE_DATA_SIZE];
			cr_assert_leq(f[i].len, sizeof(buf));
			cr_assert_eq(netdev_frag_read(&f[i], 0, buf, f[i].len), 0);
			cr_assert_eq(memcmp(buf, pattern + off + total, f[i].len), 0, "bytes at %zu", off + total);
			total += f[i].len;
			netdev_frag_release(&f[i]);
		}
	}
	return total;
}

/* The end of a send test: nothing of s's left in its send queue; s and l closed. */
static void close_with_nothing_queued(struct tcp_sock *s, struct tcp_sock *l)
{
	struct tcp_info i;
	tcp_get_info(s, &i);
	cr_assert_eq(i.sndq_bytes, 0);
	tcp_abort(s);
	close_listener(l);
}

Test(tcp_data, in_order_payload_stays_in_device_memory)
{
	struct tcp_sock *l;
	fill();
	uint32_t iss = open_passive(&l, 1000, 65535, opt_mss1460, 4);
	struct tcp_sock *s = accepted;
	peer_seg(TCP_ACK | TCP_PSH, 1001, iss + 1, 65535, pattern, 1000, NULL, 0);
	cr_assert_eq(tcp_recv_avail(s), 1000);
	cr_assert(ev_last & TCP_EV_RECV);
	cr_assert_eq(fnd.ntx, 0, "ACK delayed");
	struct netdev_frag f[4];
	cr_assert_eq(tcp_peek(s, 0, (uint8_t[8]){ 0 }, 8), 0);
	int n = tcp_recv_frags(s, f, 4, SIZE_MAX);
	cr_assert_eq(n, 1);
	cr_assert_eq(f[0].addr.cls, MEM_CLASS_DEVICE, "payload fragment points into device memory");
	cr_assert_eq(f[0].len, 1000);
	cr_assert_eq(fnd.data_out, 1, "the NIC buffer is still lent");
	netdev_frag_release(&f[0]);
	cr_assert_eq(fnd.data_out, 0, "released back to the ring");
	advance(TCP_DELACK_NS);
	cr_assert_eq(fnd.ntx, 1, "delayed ACK fired");
	cr_assert_eq(lastseg()->ack, 2001);
	cr_assert_eq(tcp_stats()->delayed_acks, 1);
	/* Two full segments: ACK at once (every second segment). */
	fake_netdev_clear(&fnd);
	peer_seg(TCP_ACK, 2001, iss + 1, 65535, pattern + 1000, 1460, NULL, 0);
	cr_assert_eq(fnd.ntx, 0);
	peer_seg(TCP_ACK, 3461, iss + 1, 65535, pattern + 2460, 1460, NULL, 0);
	cr_assert_eq(fnd.ntx, 1);
	cr_assert_eq(lastseg()->ack, 4921);
	cr_assert_eq(drain_check(s, 1000), 2920);
	/* Only headers were in host memory: payload bytes were never read by the stack
	 * (the reads above are the test's own, 8 + 1000... counted by class). */
	cr_assert_eq(tcp_stats()->rx_payload_host, 0);
	cr_assert_eq(tcp_stats()->rx_payload_device, 3920);
	tcp_abort(s);
	close_listener(l);
}

Test(tcp_data, out_of_order_held_and_merged)
{
	struct tcp_sock *l;
	fill();
	uint32_t iss = open_passive(&l, 1000, 65535, opt_mss1460, 4);
	struct tcp_sock *s = accepted;
	/* Segments 3, 2 then 1. */
	peer_seg(TCP_ACK, 1001 + 2000, iss + 1, 65535, pattern + 2000, 1000, NULL, 0);
	cr_assert_eq(tcp_recv_avail(s), 0);
	cr_assert_eq(fnd.ntx, 1, "immediate duplicate ACK for a hole");
	cr_assert_eq(lastseg()->ack, 1001);
	peer_seg(TCP_ACK, 1001 + 1000, iss + 1, 65535, pattern + 1000, 1000, NULL, 0);
	cr_assert_eq(lastseg()->ack, 1001);
	struct tcp_info i;
	tcp_get_info(s, &i);
	cr_assert_eq(i.ooo_frags, 2);
	peer_seg(TCP_ACK, 1001, iss + 1, 65535, pattern, 1000, NULL, 0);
	cr_assert_eq(lastseg()->ack, 4001, "the hole filled: everything acknowledged at once");
	cr_assert_eq(tcp_recv_avail(s), 3000);
	tcp_get_info(s, &i);
	cr_assert_eq(i.ooo_frags, 0);
	cr_assert_eq(drain_check(s, 0), 3000);
	tcp_abort(s);
	close_listener(l);
}

Test(tcp_data, overlapping_and_duplicate_segments_trimmed)
{
	struct tcp_sock *l;
	fill();
	uint32_t iss = open_passive(&l, 1000, 65535, opt_mss1460, 4);
	struct tcp_sock *s = accepted;
	peer_seg(TCP_ACK, 1001, iss + 1, 65535, pattern, 1000, NULL, 0);
	/* Exact duplicate: ACKed, not queued twice. */
	peer_seg(TCP_ACK, 1001, iss + 1, 65535, pattern, 1000, NULL, 0);
	cr_assert_eq(tcp_recv_avail(s), 1000);
	cr_assert_eq(lastseg()->ack, 2001);
	cr_assert_eq(tcp_stats()->dup_segs, 1);
	/* Overlap: bytes 500..1999, half old, half new. */
	peer_seg(TCP_ACK, 1501, iss + 1, 65535, pattern + 500, 1500, NULL, 0);
	cr_assert_eq(tcp_recv_avail(s), 2000);
	/* Out-of-order overlaps: 3000..3999, then 2500..3499 (front new, tail old), then 2000..4999. */
	peer_seg(TCP_ACK, 1001 + 3000, iss + 1, 65535, pattern + 3000, 1000, NULL, 0);
	peer_seg(TCP_ACK, 1001 + 2500, iss + 1, 65535, pattern + 2500, 1000, NULL, 0);
	peer_seg(TCP_ACK, 1001 + 2000, iss + 1, 65535, pattern + 2000, 3000, NULL, 0);
	cr_assert_eq(tcp_recv_avail(s), 5000);
	cr_assert_eq(lastseg()->ack, 6001);
	cr_assert_eq(drain_check(s, 0), 5000);
	tcp_abort(s);
	close_listener(l);
}

Test(tcp_data, sequence_wraparound)
{
	struct tcp_sock *l;
	fill();
	uint32_t piss = 0xfffffa00u; /* data crosses 2^32 after 1535 bytes */
	uint32_t iss = open_passive(&l, piss, 65535, opt_mss1460, 4);
	struct tcp_sock *s = accepted;
	uint32_t seq = piss + 1;
	/* Second segment first: it lies entirely beyond the wrap. */
	peer_seg(TCP_ACK, seq + 1400, iss + 1, 65535, pattern + 1400, 1400, NULL, 0);
	peer_seg(TCP_ACK, seq, iss + 1, 65535, pattern, 1400, NULL, 0);
	cr_assert_eq(tcp_recv_avail(s), 2800);
	cr_assert_eq(lastseg()->ack, seq + 2800);
	cr_assert_lt(lastseg()->ack, 0x1000u, "ACK number wrapped");
	/* An old segment from before the wrap is a duplicate, not new data. */
	peer_seg(TCP_ACK, seq, iss + 1, 65535, pattern, 100, NULL, 0);
	cr_assert_eq(tcp_recv_avail(s), 2800);
	cr_assert_eq(drain_check(s, 0), 2800);
	peer_seg(TCP_FIN | TCP_ACK, seq + 2800, iss + 1, 65535, NULL, 0, NULL, 0);
	cr_assert(tcp_recv_eof(s));
	tcp_close(s);
	peer_seg(TCP_ACK, seq + 2801, iss + 2, 65535, NULL, 0, NULL, 0);
	close_listener(l);
}

Test(tcp_data, window_edges)
{
	struct tcp_sock *l;
	fill();
	uint32_t iss = open_passive(&l, 1000, 65535, opt_mss1460, 4);
	struct tcp_sock *s = accepted;
	/* No window scale (not offered): we advertised 65535 in the SYN-ACK. Fill it up to
	 * the edge with the window that our ACKs advertise. */
	peer_seg(TCP_ACK, 1001, iss + 1, 65535, pattern, 1000, NULL, 0);
	advance(TCP_DELACK_NS);
	uint32_t wnd = lastseg()->wnd;
	uint32_t edge = 2001 + wnd;
	cr_assert_gt(wnd, 0);
	/* A segment straddling the right edge: only the part inside is taken. */
	peer_seg(TCP_ACK, edge - 100, iss + 1, 65535, pattern, 300, NULL, 0);
	struct tcp_info i;
	tcp_get_info(s, &i);
	cr_assert_eq(i.ooo_frags, 1);
	/* Entirely beyond the edge: not acceptable, ACKed, dropped. */
	unsigned before = fnd.ntx;
	peer_seg(TCP_ACK, edge + 10, iss + 1, 65535, pattern, 100, NULL, 0);
	cr_assert_eq(fnd.ntx, before + 1);
	tcp_get_info(s, &i);
	cr_assert_eq(i.ooo_frags, 1);
	cr_assert_eq(fnd.data_out, 2, "dropped payload buffers went back at once");
	tcp_abort(s);
	close_listener(l);
}

/* A device-memory "NVMe CMB" for zero-copy sends, with a release counter. */
static uint8_t cmb[16384];
static struct netdev_frag_owner cmb_owner = { "cmb", frag_count_release };

static struct netdev_frag cmb_frag(size_t off, size_t len, uint64_t token)
{
	struct netdev_frag f = { .addr = dma_addr_device((uint64_t)(uintptr_t)(cmb + off)), .offset = off,
				 .len = (uint32_t)len, .provider = 1, .token = token, .owner = &cmb_owner };
	return f;
}

Test(tcp_data, zero_copy_send_held_until_acked)
{
	struct tcp_sock *l;
	for (size_t i = 0; i < sizeof(cmb); i++)
		cmb[i] = (uint8_t)(i * 13);
	uint32_t iss = open_passive(&l, 1000, 65535, opt_mss1460, 4);
	struct tcp_sock *s = accepted;
	struct netdev_frag f[2] = { cmb_frag(0, 2000, 1), cmb_frag(2000, 1000, 2) };
	cr_assert_eq(tcp_send_frags(s, f, 2), 0);
	tcp_flush(s); /* done queueing: the short tail goes now */
	/* Initial window 3 segments of 1460: 1460 + 1460 + 80. */
	cr_assert_eq(fnd.ntx, 3);
	cr_assert_eq(txseg(0)->len, 1460);
	cr_assert_eq(memcmp(txseg(0)->payload, cmb, 1460), 0);
	cr_assert_eq(txseg(1)->seq, iss + 1 + 1460);
	cr_assert_eq(memcmp(txseg(1)->payload, cmb + 1460, 1460), 0, "gathered across two fragments");
	cr_assert_eq(txseg(2)->len, 80);
	cr_assert_eq(txseg(2)->flags, TCP_ACK | TCP_PSH);
	cr_assert_eq(fnd.dev.stats.tx_bytes_device, 3000, "payload counted as device bytes");
	cr_assert_eq(tcp_stats()->tx_payload_device, 3000);
	cr_assert_eq(frags_released, 0);
	peer_seg(TCP_ACK, 1001, iss + 1 + 1460, 65535, NULL, 0, NULL, 0);
	cr_assert_eq(frags_released, 0, "first fragment only partly acknowledged");
	peer_seg(TCP_ACK, 1001, iss + 1 + 2000, 65535, NULL, 0, NULL, 0);
	cr_assert_eq(frags_released, 1);
	peer_seg(TCP_ACK, 1001, iss + 1 + 3000, 65535, NULL, 0, NULL, 0);
	cr_assert_eq(frags_released, 2);
	cr_assert(ev_count[3] >= 1, "TCP_EV_SENT");
	tcp_abort(s);
	close_listener(l);
}

Test(tcp_data, copy_send_segments_and_rtt)
{
	struct tcp_sock *l;
	fill();
	uint32_t iss = open_passive(&l, 1000, 65535, opt_mss536, 4);
	struct tcp_sock *s = accepted;
	cr_assert_eq(tcp_send_copy(s, pattern, 1000), 1000);
	tcp_flush(s); /* done queueing: the short tail goes now */
	cr_assert_eq(fnd.ntx, 2, "MSS 536");
	cr_assert_eq(txseg(0)->len, 536);
	cr_assert_eq(txseg(1)->len, 464);
	cr_assert_eq(memcmp(txseg(1)->payload, pattern + 536, 464), 0);
	advance(100 * NSEC_PER_MSEC);
	peer_seg(TCP_ACK, 1001, iss + 1001, 65535, NULL, 0, NULL, 0);
	struct tcp_info i;
	tcp_get_info(s, &i);
	cr_assert_eq(i.srtt_ns, 100 * NSEC_PER_MSEC, "first sample: SRTT = R");
	cr_assert_eq(i.rto_ns, 300 * NSEC_PER_MSEC, "RTO = SRTT + 4 * R/2");
	cr_assert_eq(i.sndq_bytes, 0);
	tcp_abort(s);
	close_listener(l);
}

/* What an NVMe/TCP read queues: a C2HData header (copied), its data (zero copy) and the
 * CapsuleResp (copied), by three calls, then tcp_flush. The short header waits for what
 * comes next, and what comes behind it waits with it: the flush sends it all in one pass,
 * the response riding in the data's last segment: 2 frames for 24 + 2000 + 24 bytes, not
 * 4. (Data queued with nothing held still goes at once: full segments.) */
Test(tcp_data, short_tail_waits_for_the_next_send_and_the_flush)
{
	struct tcp_sock *l;
	fill();
	for (size_t i = 0; i < sizeof(cmb); i++)
		cmb[i] = (uint8_t)(i * 13);
	uint32_t iss = open_passive(&l, 1000, 65535, opt_mss1460, 4);
	struct tcp_sock *s = accepted;
	cr_assert_eq(tcp_send_copy(s, pattern, 24), 24);
	cr_assert_eq(fnd.ntx, 0, "a lone 24-byte header waits");
	struct netdev_frag f = cmb_frag(0, 2000, 1);
	cr_assert_eq(tcp_send_frags(s, &f, 1), 0);
	cr_assert_eq(fnd.ntx, 0, "behind the held header the data waits too: one pass sends it all");
	cr_assert_eq(tcp_send_copy(s, pattern + 100, 24), 24);
	cr_assert_eq(fnd.ntx, 0, "and the response");
	tcp_flush(s);
	cr_assert_eq(fnd.ntx, 2);
	cr_assert_eq(txseg(0)->seq, iss + 1);
	cr_assert_eq(txseg(0)->len, 1460);
	cr_assert_eq(txseg(0)->flags, TCP_ACK, "no PSH: more is queued");
	cr_assert_eq(memcmp(txseg(0)->payload, pattern, 24), 0);
	cr_assert_eq(memcmp(txseg(0)->payload + 24, cmb, 1436), 0);
	cr_assert_eq(txseg(1)->seq, iss + 1 + 1460);
	cr_assert_eq(txseg(1)->len, 588, "the data's tail and the response in one segment");
	cr_assert_eq(txseg(1)->flags, TCP_ACK | TCP_PSH);
	cr_assert_eq(memcmp(txseg(1)->payload, cmb + 1436, 564), 0);
	cr_assert_eq(memcmp(txseg(1)->payload + 564, pattern + 100, 24), 0);
	tcp_flush(s);
	cr_assert_eq(fnd.ntx, 2, "nothing left");
	peer_seg(TCP_ACK, 1001, iss + 1 + 2048, 65535, NULL, 0, NULL, 0);
	cr_assert_eq(frags_released, 1);
	f = cmb_frag(0, 2000, 2);
	cr_assert_eq(tcp_send_frags(s, &f, 1), 0);
	cr_assert_eq(fnd.ntx, 3, "nothing held: the full segment goes at once");
	cr_assert_eq(txseg(2)->len, 1460);
	tcp_flush(s);
	cr_assert_eq(fnd.ntx, 4);
	cr_assert_eq(txseg(3)->len, 540);
	tcp_abort(s);
	close_listener(l);
}

/* Behind a held tail, more than one pass can send (TCP_OUTPUT_BUDGET segments) does not
 * wait for the flush: its full segments go at once, as with nothing held, so that the
 * pass's budget never leaves what the windows allow waiting for the peer's next ACK. */
Test(tcp_data, more_than_a_pass_behind_a_held_tail_goes_at_once)
{
	struct tcp_sock *l;
	fill();
	frags_released = 0;
	uint32_t iss = open_passive(&l, 1000, 65535, opt_mss1460, 4);
	struct tcp_sock *s = accepted;
	s->cwnd = 128 * 1460;
	cr_assert_eq(tcp_send_copy(s, pattern, 24), 24);
	struct netdev_frag f = cmb_frag(0, 8000, 1);
	cr_assert_eq(tcp_send_frags(s, &f, 1), 0);
	cr_assert_eq(fnd.ntx, 0, "a pass's worth behind the held header waits");
	struct netdev_frag g[12];
	for (unsigned k = 0; k < 12; k++)
		g[k] = cmb_frag(0, 8000, 2 + k);
	cr_assert_eq(tcp_send_frags(s, g, 12), 0);
	cr_assert_eq(fnd.ntx, 65535 / 1460, "beyond a pass's worth: what the window allows, at once");
	cr_assert_eq(txseg(0)->seq, iss + 1);
	cr_assert_eq(memcmp(txseg(0)->payload, pattern, 24), 0);
	tcp_abort(s);
	close_listener(l);
}

/* Bytes built in place (tcp_send_place / tcp_send_placed) go out as tcp_send_copy's would:
 * appended to the last chunk, or in a new one after zero-copy data; a size that does not fit
 * the send space gets NULL and queues nothing; the chunks come back once acknowledged. */
Test(tcp_data, bytes_built_in_place_go_out_as_copied_ones)
{
	struct tcp_sock *l;
	fill();
	for (size_t i = 0; i < sizeof(cmb); i++)
		cmb[i] = (uint8_t)(i * 13);
	uint32_t iss = open_passive(&l, 1000, 65535, opt_mss1460, 4);
	struct tcp_sock *s = accepted;
	cr_assert_null(tcp_send_place(s, 0, 0));
	cr_assert_null(tcp_send_place(s, tcp_send_space(s) + 1, 0), "beyond the send space");
	cr_assert_null(tcp_send_place(s, 24, tcp_send_space(s) - 23), "with what follows, beyond it");
	uint8_t *p = tcp_send_place(s, 24, 0);
	cr_assert_not_null(p);
	memcpy(p, pattern, 24);
	tcp_send_placed(s, 24);
	cr_assert_eq(fnd.ntx, 0, "a lone 24-byte header waits");
	p = tcp_send_place(s, 8, 0);
	memcpy(p, pattern + 24, 8);
	tcp_send_placed(s, 8); /* into the same chunk */
	struct netdev_frag f = cmb_frag(0, 2000, 1);
	cr_assert_eq(tcp_send_frags(s, &f, 1), 0);
	cr_assert_eq(fnd.ntx, 0, "behind the held header: waits for the flush");
	p = tcp_send_place(s, 24, 0); /* a new entry behind the zero-copy data */
	cr_assert_not_null(p);
	memcpy(p, pattern + 100, 24);
	tcp_send_placed(s, 24);
	tcp_flush(s);
	cr_assert_eq(fnd.ntx, 2);
	cr_assert_eq(memcmp(txseg(0)->payload, pattern, 32), 0);
	cr_assert_eq(memcmp(txseg(0)->payload + 32, cmb, 1428), 0);
	cr_assert_eq(txseg(1)->seq, iss + 1 + 1460);
	cr_assert_eq(txseg(1)->len, 572 + 24);
	cr_assert_eq(memcmp(txseg(1)->payload, cmb + 1428, 572), 0);
	cr_assert_eq(memcmp(txseg(1)->payload + 572, pattern + 100, 24), 0);
	struct tcp_info i;
	tcp_get_info(s, &i);
	cr_assert_eq(i.sndq_bytes, 32 + 2000 + 24);
	peer_seg(TCP_ACK, 1001, iss + 1 + 2056, 65535, NULL, 0, NULL, 0);
	cr_assert_eq(frags_released, 1);
	close_with_nothing_queued(s, l);
}

/* A PDU header or response (<= TCP_SNDENT_INLINE bytes) placed or copied behind a user
 * fragment or into an empty queue is held in its send entry itself: no chunk is taken. A
 * digest copied behind the data and the response placed after it share that entry; the
 * next one, with the entry full, goes into a chunk that the ones after it fill. The bytes go
 * out as before and everything comes back once acknowledged. */
Test(tcp_data, small_pdus_are_held_in_their_send_entries)
{
	struct tcp_sock *l;
	fill();
	for (size_t i = 0; i < sizeof(cmb); i++)
		cmb[i] = (uint8_t)(i * 13);
	frags_released = 0;
	uint32_t iss = open_passive(&l, 1000, 65535, opt_mss1460, 4);
	struct tcp_sock *s = accepted;
	unsigned ents0 = s->sndents;
	uint8_t *p = tcp_send_place(s, 24, 1000 + 4);
	cr_assert_not_null(p);
	memcpy(p, pattern, 24);
	tcp_send_placed(s, 24);
	cr_assert_eq(s->chunks_tx, 0, "a header takes no chunk");
	cr_assert_not(tcp_pools_busy(), "the chunk pool untouched");
	struct tcp_sndent *e = container_of(s->sndq.prev, struct tcp_sndent, node);
	cr_assert_eq((uintptr_t)p, (uintptr_t)e->buf, "in the entry itself");
	cr_assert_eq(e->cap, TCP_SNDENT_INLINE);
	struct netdev_frag f = cmb_frag(0, 1000, 1);
	cr_assert_eq(tcp_send_frags(s, &f, 1), 0);
	cr_assert_eq(tcp_send_copy(s, pattern + 24, 4), 4, "a digest");
	cr_assert_eq(s->chunks_tx, 0, "behind the data: in an entry itself");
	e = container_of(s->sndq.prev, struct tcp_sndent, node);
	p = tcp_send_place(s, 24, 0);
	cr_assert_eq((uintptr_t)p, (uintptr_t)e->buf + 4, "the response appended to the digest's entry");
	memcpy(p, pattern + 28, 24);
	tcp_send_placed(s, 24);
	p = tcp_send_place(s, 24, 0);
	cr_assert_not_null(p);
	cr_assert_eq(s->chunks_tx, 1, "the entry full: a chunk");
	memcpy(p, pattern + 52, 24);
	tcp_send_placed(s, 24);
	p = tcp_send_place(s, 24, 0);
	cr_assert_eq(s->chunks_tx, 1, "the next one fills the chunk");
	memcpy(p, pattern + 76, 24);
	tcp_send_placed(s, 24);
	cr_assert_eq(s->sndents - ents0, 4, "header, data, digest and response, chunk");
	tcp_flush(s);
	cr_assert_eq(fnd.ntx, 1, "24 + 1000 + 4 + 24 + 48 bytes: one frame");
	cr_assert_eq(txseg(0)->len, 24 + 1000 + 4 + 72);
	cr_assert_eq(memcmp(txseg(0)->payload, pattern, 24), 0);
	cr_assert_eq(memcmp(txseg(0)->payload + 24, cmb, 1000), 0);
	cr_assert_eq(memcmp(txseg(0)->payload + 1024, pattern + 24, 76), 0);
	peer_seg(TCP_ACK, 1001, iss + 1 + 1100, 65535, NULL, 0, NULL, 0);
	cr_assert_eq(frags_released, 1);
	cr_assert_eq(s->sndents, ents0, "every entry back");
	cr_assert_eq(s->chunks_tx, 0);
	cr_assert_not(tcp_pools_busy());
	tcp_abort(s);
	close_listener(l);
}

/* An ACK takes the acknowledged entries off the send queue at once; those the device still
 * reads (its frames not done) are freed when it is done with them, the others at the ACK.
 * A partial ACK leaves the rest queued and sent; the queue stays usable throughout. */
Test(tcp_data, acked_entries_in_frames_the_device_holds_go_when_it_is_done)
{
	struct tcp_sock *l;
	fill();
	frags_released = 0;
	uint32_t iss = open_passive(&l, 1000, 65535, opt_mss1460, 4);
	struct tcp_sock *s = accepted;
	unsigned ents0 = s->sndents;
	fnd.tx_late = true;
	uint8_t *p = tcp_send_place(s, 24, 2000);
	memcpy(p, pattern, 24);
	tcp_send_placed(s, 24);
	struct netdev_frag f[2] = { cmb_frag(0, 1000, 1), cmb_frag(1000, 1000, 2) };
	cr_assert_eq(tcp_send_frags(s, f, 2), 0);
	tcp_flush(s);
	cr_assert_eq(fnd.ntx, 2);
	cr_assert_eq(s->sndents - ents0, 3);
	/* the header and the first fragment acknowledged, their frame still in the device */
	peer_seg(TCP_ACK, 1001, iss + 1 + 1024, 65535, NULL, 0, NULL, 0);
	struct tcp_info i;
	tcp_get_info(s, &i);
	cr_assert_eq(i.sndq_bytes, 1000);
	cr_assert_eq(frags_released, 0, "the device still reads them");
	cr_assert_eq(s->sndents - ents0, 3);
	cr_assert_eq(fake_netdev_tx_complete(&fnd), 2);
	cr_assert_eq(frags_released, 1, "done: the acknowledged fragment goes back");
	cr_assert_eq(s->sndents - ents0, 1);
	/* more queued behind the rest, then all acknowledged with the device done: freed at the ACK */
	p = tcp_send_place(s, 24, 0);
	memcpy(p, pattern + 24, 24);
	tcp_send_placed(s, 24);
	tcp_flush(s);
	cr_assert_eq(fnd.ntx, 3);
	cr_assert_eq(txseg(2)->len, 24);
	cr_assert_eq(fake_netdev_tx_complete(&fnd), 1);
	peer_seg(TCP_ACK, 1001, iss + 1 + 2048, 65535, NULL, 0, NULL, 0);
	cr_assert_eq(frags_released, 2);
	cr_assert_eq(s->sndents, ents0, "every entry back");
	tcp_get_info(s, &i);
	cr_assert_eq(i.sndq_bytes, 0);
	fnd.tx_late = false;
	tcp_abort(s);
	close_listener(l);
}

/* A user refused for want of send entries (its share: the shared part held by other
 * sockets) while its own acknowledged entries are still in frames the device holds: the
 * ACK's TCP_EV_SENT came before they were back and, with nothing in flight, no other ACK
 * comes. When the device is done with them the user gets TCP_EV_SENT, and the send fits. */
Test(tcp_data, a_send_refused_while_its_acked_entries_wait_for_the_device_is_woken)
{
	struct tcp_sock *l;
	struct netdev_frag f[TCP_SNDENT_RESERVE];
	fill();
	frags_released = 0;
	uint32_t iss = open_passive(&l, 1000, 65535, opt_mss1460, 4);
	struct tcp_sock *s = accepted;
	unsigned borrowed0 = tcp_sndents_borrowed, ents0 = s->sndents;
	tcp_sndents_borrowed = TCP_SNDENT_SHARED; /* other sockets hold the shared part */
	fnd.tx_late = true;
	for (unsigned i = 0; i < 4; i++)
		f[i] = cmb_frag(i * 100, 100, 1 + i);
	cr_assert_eq(tcp_send_frags(s, f, 4), 0);
	tcp_flush(s);
	cr_assert_eq(fnd.ntx, 1);
	peer_seg(TCP_ACK, 1001, iss + 1 + 400, 65535, NULL, 0, NULL, 0);
	cr_assert_eq(s->sndents - ents0, 4, "acknowledged, the device still reads them");
	struct tcp_info i;
	tcp_get_info(s, &i);
	cr_assert_eq(i.snd_una, i.snd_nxt, "nothing in flight");
	unsigned n = tcp_send_frags_room(s) + 1;
	cr_assert_leq(n + 4, TCP_SNDENT_RESERVE - ents0 + 1);
	for (unsigned k = 0; k < n; k++)
		f[k] = cmb_frag(400 + k * 10, 10, 10 + k);
	cr_assert_eq(tcp_send_frags(s, f, n), -ENOBUFS, "more than the room left");
	memset(ev_count, 0, sizeof(ev_count));
	cr_assert_eq(fake_netdev_tx_complete(&fnd), 1);
	cr_assert_eq(s->sndents, ents0, "the device gave them back");
	advance(1);
	cr_assert_geq(ev_count[3], 1, "the refused user is told: TCP_EV_SENT");
	for (unsigned k = 0; k < n; k++)
		f[k] = cmb_frag(400 + k * 10, 10, 10 + k);
	cr_assert_eq(tcp_send_frags(s, f, n), 0, "and its send fits now");
	tcp_flush(s);
	fake_netdev_tx_complete(&fnd);
	peer_seg(TCP_ACK, 1001, iss + 1 + 400 + n * 10, 65535, NULL, 0, NULL, 0);
	cr_assert_eq(s->sndents, ents0);
	fnd.tx_late = false;
	tcp_sndents_borrowed = borrowed0;
	tcp_abort(s);
	close_listener(l);
}

/* A user refused with nothing of its own queued or in a frame (it asked for more than its
 * reserve while other sockets hold the shared part): no ACK and no entry of its own will
 * come back, so no TCP_EV_SENT would ever come; it is told again every TCP_TX_RETRY_NS
 * while it stays refused, and its send goes once the shared part has room. */
Test(tcp_data, a_send_refused_with_nothing_of_its_own_queued_is_retried)
{
	struct tcp_sock *l;
	struct netdev_frag f[TCP_SNDENT_RESERVE + 1];
	fill();
	frags_released = 0;
	uint32_t iss = open_passive(&l, 1000, 65535, opt_mss1460, 4);
	struct tcp_sock *s = accepted;
	unsigned borrowed0 = tcp_sndents_borrowed, ents0 = s->sndents;
	tcp_sndents_borrowed = TCP_SNDENT_SHARED; /* other sockets hold the shared part */
	unsigned n = tcp_send_frags_room(s) + 1;
	cr_assert_leq(n, TCP_SNDENT_RESERVE + 1);
	for (unsigned k = 0; k < n; k++)
		f[k] = cmb_frag(k * 10, 10, 1 + k);
	cr_assert_eq(tcp_send_frags(s, f, n), -ENOBUFS);
	memset(ev_count, 0, sizeof(ev_count));
	advance(TCP_TX_RETRY_NS);
	cr_assert_geq(ev_count[3], 1, "told to try again while nothing of its own can tell it");
	for (unsigned k = 0; k < n; k++)
		f[k] = cmb_frag(k * 10, 10, 1 + k);
	cr_assert_eq(tcp_send_frags(s, f, n), -ENOBUFS, "still no room");
	tcp_sndents_borrowed = borrowed0; /* the other sockets' entries came back */
	memset(ev_count, 0, sizeof(ev_count));
	advance(TCP_TX_RETRY_NS);
	cr_assert_geq(ev_count[3], 1);
	for (unsigned k = 0; k < n; k++)
		f[k] = cmb_frag(k * 10, 10, 1 + k);
	cr_assert_eq(tcp_send_frags(s, f, n), 0, "the send goes");
	tcp_flush(s);
	peer_seg(TCP_ACK, 1001, iss + 1 + n * 10, 65535, NULL, 0, NULL, 0);
	cr_assert_eq(s->sndents, ents0);
	memset(ev_count, 0, sizeof(ev_count));
	advance(4 * TCP_TX_RETRY_NS);
	cr_assert_eq(ev_count[3], 0, "no more wake-ups once it was not refused");
	tcp_abort(s);
	close_listener(l);
}

/* A zero-copy piece of a send entry carries the entry's memory from the piece's offset
 * on (bus address and provider offset moved by it, the memory class and provider kept)
 * with the send queue's own reference (owner, token), whatever entry it came from. */
Test(tcp_data, zero_copy_pieces_carry_the_entrys_memory_from_their_offset)
{
	struct tcp_sock *l;
	frags_released = 0;
	(void)open_passive(&l, 1000, 65535, opt_mss1460, 4);
	struct tcp_sock *s = accepted;
	fnd.tx_late = true;
	struct netdev_frag f[1] = { cmb_frag(100, 3000, 7) };
	f[0].provider = 3;
	cr_assert_eq(tcp_send_frags(s, f, 1), 0);
	tcp_flush(s);
	cr_assert_eq(fnd.ntx, 3);
	cr_assert_eq(fnd.nlate, 3);
	const uint32_t lens[3] = { 1460, 1460, 80 };
	uint64_t token0 = 0;
	for (unsigned i = 0; i < 3; i++) {
		const struct netbuf *nb = fnd.late[i];
		cr_assert_eq(nb->nfrags, 1);
		const struct netdev_frag *g = &nb->frags[0];
		cr_assert_eq(g->addr.bus, (uint64_t)(uintptr_t)(cmb + 100 + 1460 * i));
		cr_assert_eq(g->addr.cls, MEM_CLASS_DEVICE);
		cr_assert_eq(g->offset, 100 + 1460 * i);
		cr_assert_eq(g->len, lens[i]);
		cr_assert_eq(g->provider, 3);
		cr_assert_not_null(g->owner);
		cr_assert_neq(g->owner, &cmb_owner, "the send queue's reference, not the user's");
		if (i == 0)
			token0 = g->token;
		cr_assert_eq(g->token, token0, "one entry");
	}
	cr_assert_eq(fake_netdev_tx_complete(&fnd), 3);
	cr_assert_eq(frags_released, 0, "not acknowledged yet");
	fnd.tx_late = false;
	tcp_abort(s);
	cr_assert_eq(frags_released, 1);
	close_listener(l);
}

/* A frame over two host-memory entries (a PDU header placed in its chunk, then host data:
 * every 4 KiB read's first frame) takes tcp_xmit's two-piece path; over three entries, the
 * general gather. The bytes, the pieces' references and the host payload count as before. */
static uint8_t hostbuf[4096];
static struct netdev_frag host_frag(size_t off, size_t len, uint64_t token)
{
	struct netdev_frag f = { .addr = dma_addr_host(hostbuf + off), .offset = off, .len = (uint32_t)len,
				 .provider = 1, .token = token, .owner = &cmb_owner };
	return f;
}

/* A connection accepted on port 1000 (MSS 1460) with pattern[] and hostbuf[] filled
 * (hostbuf[i] = i * 7 + seed) and no user fragment released yet; *iss its ISS. */
static struct tcp_sock *open_with_host_data(struct tcp_sock **l, uint8_t seed, uint32_t *iss)
{
	fill();
	for (size_t i = 0; i < sizeof(hostbuf); i++)
		hostbuf[i] = (uint8_t)(i * 7 + seed);
	frags_released = 0;
	*iss = open_passive(l, 1000, 65535, opt_mss1460, 4);
	return accepted;
}

Test(tcp_data, header_and_host_data_share_a_frame)
{
	struct tcp_sock *l;
	uint32_t iss;
	struct tcp_sock *s = open_with_host_data(&l, 1, &iss);
	uint64_t host0 = tcp_stats()->tx_payload_host;
	uint8_t *p = tcp_send_place(s, 24, 4096);
	cr_assert_not_null(p);
	memcpy(p, pattern, 24);
	tcp_send_placed(s, 24);
	struct netdev_frag f = host_frag(0, 4096, 1);
	cr_assert_eq(tcp_send_frags(s, &f, 1), 0);
	tcp_flush(s);
	cr_assert_eq(fnd.ntx, 3, "24 + 4096 bytes: 1460 + 1460 + 1200");
	cr_assert_eq(txseg(0)->len, 1460);
	cr_assert_eq(memcmp(txseg(0)->payload, pattern, 24), 0);
	cr_assert_eq(memcmp(txseg(0)->payload + 24, hostbuf, 1436), 0, "the second piece from the data's start");
	cr_assert_eq(txseg(1)->seq, iss + 1 + 1460);
	cr_assert_eq(memcmp(txseg(1)->payload, hostbuf + 1436, 1460), 0);
	cr_assert_eq(txseg(2)->len, 1200);
	cr_assert_eq(txseg(2)->flags, TCP_ACK | TCP_PSH);
	cr_assert_eq(tcp_stats()->tx_payload_host - host0, 24 + 4096);
	peer_seg(TCP_ACK, 1001, iss + 1 + 24 + 4096, 65535, NULL, 0, NULL, 0);
	cr_assert_eq(frags_released, 1, "released once acknowledged and no frame refers to it");

	/* three entries in one frame: header, 100 bytes, 2000 bytes */
	p = tcp_send_place(s, 24, 2100);
	memcpy(p, pattern + 24, 24);
	tcp_send_placed(s, 24);
	struct netdev_frag g[2] = { host_frag(0, 100, 2), host_frag(100, 2000, 3) };
	cr_assert_eq(tcp_send_frags(s, g, 2), 0);
	tcp_flush(s);
	cr_assert_eq(fnd.ntx, 5);
	cr_assert_eq(txseg(3)->len, 1460);
	cr_assert_eq(memcmp(txseg(3)->payload, pattern + 24, 24), 0);
	cr_assert_eq(memcmp(txseg(3)->payload + 24, hostbuf, 1436), 0, "gathered across three entries");
	cr_assert_eq(txseg(4)->len, 24 + 2100 - 1460);
	cr_assert_eq(memcmp(txseg(4)->payload, hostbuf + 1436, 664), 0);
	peer_seg(TCP_ACK, 1001, iss + 1 + 4120 + 2124, 65535, NULL, 0, NULL, 0);
	cr_assert_eq(frags_released, 3);
	close_with_nothing_queued(s, l);
}

/* A long run (more than three segments) takes its frames' payload through the run's own
 * cursor (tcp_out.c tcp_run_payload): frames within one entry straight from it, frames over
 * two entries (a PDU header, then data; one data entry into the next) through the general
 * path, after which the cursor is taken again. The stream on the wire is the queue's bytes
 * in order, MSS segments, the last with PSH, and every entry goes back once acknowledged. */
Test(tcp_data, a_long_run_gathers_each_frame_from_its_entry)
{
	struct tcp_sock *l;
	static uint8_t stream[24 + 4096 + 24 + 4000];
	uint32_t iss;
	struct tcp_sock *s = open_with_host_data(&l, 3, &iss);
	uint8_t *p = tcp_send_place(s, 24, 4096);
	memcpy(p, pattern, 24);
	tcp_send_placed(s, 24);
	struct netdev_frag f[2] = { host_frag(0, 3000, 1), host_frag(3000, 1096, 2) };
	cr_assert_eq(tcp_send_frags(s, f, 2), 0);
	p = tcp_send_place(s, 24, 4000);
	memcpy(p, pattern + 24, 24);
	tcp_send_placed(s, 24);
	struct netdev_frag g = host_frag(0, 4000, 3);
	cr_assert_eq(tcp_send_frags(s, &g, 1), 0);
	memcpy(stream, pattern, 24);
	memcpy(stream + 24, hostbuf, 4096);
	memcpy(stream + 4120, pattern + 24, 24);
	memcpy(stream + 4144, hostbuf, 4000);
	s->cwnd = 16 * 1460; /* (past the initial window: one run) */
	tcp_flush(s);
	const size_t total = sizeof(stream);
	cr_assert_eq(fnd.ntx, (total + 1459) / 1460, "MSS segments");
	for (unsigned i = 0; i < fnd.ntx; i++) {
		size_t at = (size_t)i * 1460, len = total - at < 1460 ? total - at : 1460;
		cr_assert_eq(txseg(i)->seq, iss + 1 + (uint32_t)at);
		cr_assert_eq(txseg(i)->len, len, "segment %u", i);
		cr_assert_eq(memcmp(txseg(i)->payload, stream + at, len), 0, "segment %u's bytes", i);
		cr_assert_eq(txseg(i)->flags, i + 1 == fnd.ntx ? TCP_ACK | TCP_PSH : TCP_ACK);
	}
	peer_seg(TCP_ACK, 1001, iss + 1 + (uint32_t)total, 65535, NULL, 0, NULL, 0);
	cr_assert_eq(frags_released, 3, "every entry back once acknowledged");
	close_with_nothing_queued(s, l);
}

/* Send entries within the socket's reserve take tcp_sndent_alloc's inline path; beyond it
 * they are borrowed from the shared part (the slow path), and all come back when acknowledged. */
Test(tcp_data, send_entries_beyond_the_reserve_are_borrowed_and_returned)
{
	struct tcp_sock *l;
	fill();
	frags_released = 0;
	uint32_t iss = open_passive(&l, 1000, 65535, opt_mss1460, 4);
	struct tcp_sock *s = accepted;
	unsigned room = tcp_send_frags_room(s), borrowed = tcp_sndents_borrowed;
	for (unsigned i = 0; i < TCP_SNDENT_RESERVE + 4; i++) {
		struct netdev_frag f = host_frag(i * 10, 10, i);
		cr_assert_eq(tcp_send_frags(s, &f, 1), 0);
		cr_assert_eq(s->sndents, i + 1);
		cr_assert_eq(tcp_sndents_borrowed - borrowed, i + 1 > TCP_SNDENT_RESERVE ? i + 1 - TCP_SNDENT_RESERVE : 0);
	}
	cr_assert_eq(tcp_send_frags_room(s), room - TCP_SNDENT_RESERVE - 4);
	tcp_flush(s);
	uint32_t sent = 0;
	for (unsigned i = 0; i < fnd.ntx; i++)
		sent += txseg(i)->len;
	cr_assert_eq(sent, (TCP_SNDENT_RESERVE + 4) * 10);
	cr_assert_eq(memcmp(txseg(0)->payload, hostbuf, txseg(0)->len), 0);
	peer_seg(TCP_ACK, 1001, iss + 1 + sent, 65535, NULL, 0, NULL, 0);
	cr_assert_eq(frags_released, TCP_SNDENT_RESERVE + 4);
	cr_assert_eq(s->sndents, 0);
	cr_assert_eq(tcp_sndents_borrowed, borrowed);
	cr_assert_eq(tcp_send_frags_room(s), room);
	tcp_abort(s);
	close_listener(l);
}

/* Segments that come in one receive batch (the e1000e hands a ring's worth to one poll)
 * share one ACK at its end, at most net.tcp_ack_every full-sized segments apart, as
 * Linux's GRO makes one ACK of a batch: 45 ACKs per 128 KiB H2CData cost the saturated
 * initiator (measured: 52.7 -> 12-16 segments out per 128 KiB write, +13-38 % MB/s). A
 * reply queued during the batch carries the ACK. */
Test(tcp_data, one_ack_per_receive_batch)
{
	struct tcp_sock *l;
	fill();
	uint32_t iss = open_passive(&l, 1000, 65535, opt_mss1460, 4);
	struct tcp_sock *s = accepted;
	uint32_t seq = 1001;

	fnd.rx_batch = true;
	for (int i = 0; i < 10; i++, seq += 1460)
		peer_seg(TCP_ACK, seq, iss + 1, 65535, pattern + (seq - 1001), 1460, NULL, 0);
	cr_assert_eq(fnd.ntx, 0, "no ACK before the batch ends");
	cr_assert_gt(tcp_rx_batch_end(), 0);
	cr_assert_eq(fnd.ntx, 1, "one ACK for the batch");
	cr_assert_eq(lastseg()->ack, seq);
	cr_assert_eq(tcp_rx_batch_end(), 0, "nothing owed after it");

	/* a batch longer than tcp_ack_every: an ACK at the limit, one at the end */
	fake_netdev_clear(&fnd);
	cr_assert_eq(drain_check(s, 0), 14600);
	for (unsigned i = 0; i < TCP_ACK_EVERY_DEFAULT + 3; i++, seq += 1460)
		peer_seg(TCP_ACK, seq, iss + 1, 65535, pattern + (seq - 1001) % 32768, 1460, NULL, 0);
	cr_assert_eq(fnd.ntx, 1, "the limit sends one at once");
	cr_assert_eq(lastseg()->ack, seq - 3 * 1460);
	tcp_rx_batch_end();
	cr_assert_eq(fnd.ntx, 2);
	cr_assert_eq(lastseg()->ack, seq);
	struct netdev_frag f[64];
	int n;
	while ((n = tcp_recv_frags(s, f, 64, SIZE_MAX)) > 0)
		for (int i = 0; i < n; i++)
			netdev_frag_release(&f[i]);

	/* a reply queued in the batch carries its ACK: one frame */
	fake_netdev_clear(&fnd);
	peer_seg(TCP_ACK, seq, iss + 1, 65535, pattern, 1460, NULL, 0);
	seq += 1460;
	peer_seg(TCP_ACK, seq, iss + 1, 65535, pattern, 1460, NULL, 0);
	seq += 1460;
	cr_assert_eq(tcp_send_copy(s, pattern, 24), 24);
	cr_assert_eq(fnd.ntx, 0);
	tcp_rx_batch_end();
	cr_assert_eq(fnd.ntx, 1);
	cr_assert_eq(txseg(0)->len, 24);
	cr_assert_eq(txseg(0)->ack, seq);

	/* net.tcp_ack_every = 2: every second segment at once, as before */
	fake_netdev_clear(&fnd);
	tcp_set_ack_every(2);
	for (int i = 0; i < 4; i++, seq += 1460)
		peer_seg(TCP_ACK, seq, iss + 1, 65535, pattern, 1460, NULL, 0);
	cr_assert_eq(fnd.ntx, 2);
	tcp_set_ack_every(TCP_ACK_EVERY_DEFAULT);
	fnd.rx_batch = false;
	while ((n = tcp_recv_frags(s, f, 64, SIZE_MAX)) > 0)
		for (int i = 0; i < n; i++)
			netdev_frag_release(&f[i]);
	tcp_abort(s);
	close_listener(l);
}

/* A user that never calls tcp_flush: the tail goes at the end of the poll pass. */
Test(tcp_data, short_tail_goes_at_the_end_of_the_poll_pass)
{
	struct tcp_sock *l;
	const struct poller *p;
	fill();
	uint32_t iss = open_passive(&l, 1000, 65535, opt_mss1460, 4);
	struct tcp_sock *s = accepted;
	cr_assert_eq(tcp_send_copy(s, pattern, 100), 100);
	cr_assert_eq(fnd.ntx, 0);
	unsigned progress = 0;
	LINKER_SET_FOREACH(pollers, p) {
		int rc = p->poll(64);
		progress += rc > 0 ? (unsigned)rc : 0;
	}
	cr_assert_gt(progress, 0, "the pass made progress (the loop does not halt on it)");
	cr_assert_eq(fnd.ntx, 1);
	cr_assert_eq(txseg(0)->len, 100);
	cr_assert_eq(txseg(0)->flags, TCP_ACK | TCP_PSH);
	LINKER_SET_FOREACH(pollers, p)
		cr_assert_leq(p->poll(64), 0, "idle once sent");
	peer_seg(TCP_ACK, 1001, iss + 101, 65535, NULL, 0, NULL, 0);
	tcp_abort(s);
	close_listener(l);
}

/* A waiting tail goes when a segment from the peer arrives, with the ACK it owes. */
Test(tcp_data, short_tail_rides_with_the_ack_of_the_next_segment)
{
	struct tcp_sock *l;
	fill();
	uint32_t iss = open_passive(&l, 1000, 65535, opt_mss1460, 4);
	struct tcp_sock *s = accepted;
	cr_assert_eq(tcp_send_copy(s, pattern, 100), 100);
	cr_assert_eq(fnd.ntx, 0);
	peer_seg(TCP_ACK | TCP_PSH, 1001, iss + 1, 65535, pattern, 1000, NULL, 0);
	cr_assert_eq(fnd.ntx, 1, "one frame: the data carries the ACK");
	cr_assert_eq(txseg(0)->len, 100);
	cr_assert_eq(txseg(0)->ack, 2001);
	advance(TCP_DELACK_NS);
	cr_assert_eq(fnd.ntx, 1, "no delayed ACK after it");
	cr_assert_eq(drain_check(s, 0), 1000);
	peer_seg(TCP_ACK, 2001, iss + 101, 65535, NULL, 0, NULL, 0);
	tcp_abort(s);
	close_listener(l);
}

Test(tcp_data, retransmission_timeout_karn_backoff)
{
	struct tcp_sock *l;
	fill();
	uint32_t iss = open_passive(&l, 1000, 65535, opt_mss1460, 4);
	struct tcp_sock *s = accepted;
	cr_assert_eq(tcp_send_copy(s, pattern, 3000), 3000);
	tcp_flush(s); /* done queueing: the short tail goes now */
	cr_assert_eq(fnd.ntx, 3);
	fake_netdev_clear(&fnd);
	advance(TCP_RTO_INITIAL_NS);
	cr_assert_eq(fnd.ntx, 1, "one segment (cwnd = 1 MSS after a timeout)");
	cr_assert_eq(txseg(0)->seq, iss + 1);
	cr_assert_eq(txseg(0)->len, 1460);
	advance(TCP_RTO_INITIAL_NS);
	cr_assert_eq(fnd.ntx, 1, "backed off: next after 2 s");
	advance(TCP_RTO_INITIAL_NS);
	cr_assert_eq(fnd.ntx, 2);
	/* ACK of the retransmitted segment: no RTT sample (Karn), RTO stays backed off... */
	peer_seg(TCP_ACK, 1001, iss + 1 + 1460, 65535, NULL, 0, NULL, 0);
	struct tcp_info i;
	tcp_get_info(s, &i);
	cr_assert_eq(i.srtt_ns, 0, "no sample from a retransmission");
	cr_assert_eq(i.rto_ns, 4 * TCP_RTO_INITIAL_NS, "rto %llu", (unsigned long long)i.rto_ns);
	cr_assert_eq(i.timeouts, 2);
	/* ... and the rest goes out (go-back-N from SND.UNA). */
	cr_assert_gt(fnd.ntx, 2);
	peer_seg(TCP_ACK, 1001, iss + 3001, 65535, NULL, 0, NULL, 0);
	close_with_nothing_queued(s, l);
}

Test(tcp_data, fast_retransmit_on_three_dup_acks)
{
	struct tcp_sock *l;
	fill();
	uint32_t iss = open_passive(&l, 1000, 65535, opt_mss536, 4);
	struct tcp_sock *s = accepted;
	cr_assert_eq(tcp_send_copy(s, pattern, 536 * 4), 536 * 4);
	cr_assert_eq(fnd.ntx, 4, "initial window 4 * 536");
	fake_netdev_clear(&fnd);
	for (int k = 0; k < 2; k++)
		peer_seg(TCP_ACK, 1001, iss + 1, 65535, NULL, 0, NULL, 0);
	cr_assert_eq(fnd.ntx, 0);
	peer_seg(TCP_ACK, 1001, iss + 1, 65535, NULL, 0, NULL, 0);
	cr_assert_eq(fnd.ntx, 1, "third duplicate ACK: fast retransmit");
	cr_assert_eq(txseg(0)->seq, iss + 1);
	cr_assert_eq(txseg(0)->len, 536);
	cr_assert_eq(tcp_stats()->fast_retransmits, 1);
	peer_seg(TCP_ACK, 1001, iss + 1 + 536 * 4, 65535, NULL, 0, NULL, 0);
	struct tcp_info i;
	tcp_get_info(s, &i);
	cr_assert_eq(i.sndq_bytes, 0);
	cr_assert_eq(i.cwnd, i.ssthresh, "deflated after recovery");
	tcp_abort(s);
	close_listener(l);
}

/* From the initial window (RFC 5681) with SND.UNA at una, 20 segments to send: 3 go, one ACK
 * of the 3 opens cwnd by the bytes it covers (RFC 3465) and 6 more go. */
static void slow_start_from_the_initial_window(struct tcp_sock *s, uint32_t una)
{
	struct tcp_info i;
	tcp_get_info(s, &i);
	cr_assert_eq(i.cwnd, 3 * 1460, "RFC 5681 initial window: cwnd %u", i.cwnd);
	fake_netdev_clear(&fnd);
	cr_assert_eq(tcp_send_copy(s, pattern, 20 * 1460), 20 * 1460);
	cr_assert_eq(fnd.ntx, 3, "the window limits");
	fake_netdev_clear(&fnd);
	peer_seg(TCP_ACK, 1001, una + 3 * 1460, 65535, NULL, 0, NULL, 0);
	tcp_get_info(s, &i);
	cr_assert_eq(i.cwnd, 6 * 1460, "one ACK for 3 segments: cwnd %u", i.cwnd);
	cr_assert_eq(fnd.ntx, 6);
}

/* Slow start counts the bytes an ACK covers (RFC 3465), not the ACKs: a peer that ACKs a
 * whole flight at once (a TCG guest coalescing 45 segments, measured 2026-11-28) must not
 * hold the window to one SMSS more per round trip. */
Test(tcp_data, slow_start_counts_bytes_of_a_stretch_ack)
{
	struct tcp_sock *l;
	fill();
	uint32_t iss = open_passive(&l, 1000, 65535, opt_mss1460, 4);
	slow_start_from_the_initial_window(accepted, iss + 1);
	tcp_abort(accepted);
	close_listener(l);
}

/* A sender limited by its application (one small answer at a time) does not grow cwnd
 * (RFC 7661 4.1): 50 answers of 1,000 bytes, each ACKed, leave the initial window; once the
 * application fills the window, slow start grows it again. Before, each ACK added its bytes
 * and cwnd grew without bound (146 MB seen on a 4 KiB read connection). */
Test(tcp_data, an_application_limited_sender_does_not_grow_cwnd)
{
	struct tcp_sock *l;
	fill();
	uint32_t una = open_passive(&l, 1000, 65535, opt_mss1460, 4) + 1;
	struct tcp_sock *s = accepted;
	for (unsigned k = 0; k < 50; k++) {
		cr_assert_eq(tcp_send_copy(s, pattern, 1000), 1000);
		tcp_flush(s);
		cr_assert_eq(fnd.ntx, 1);
		una += 1000;
		peer_seg(TCP_ACK, 1001, una, 65535, NULL, 0, NULL, 0);
		cr_assert_eq(s->snd_una, una);
		fake_netdev_clear(&fnd);
	}
	/* application-limited: still the initial window; then filled, it grows */
	slow_start_from_the_initial_window(s, una);
	tcp_abort(s);
	close_listener(l);
}

/* Congestion avoidance grows by one SMSS per cwnd of bytes acknowledged, however few ACKs
 * carry them (RFC 5681 3.1, RFC 3465 2.1): SMSS^2 / cwnd per ACK held 128 KiB reads at
 * an 84 KiB cwnd under stretch ACKs. */
Test(tcp_data, congestion_avoidance_counts_bytes_of_stretch_acks)
{
	struct tcp_sock *l;
	fill();
	uint32_t iss = open_passive(&l, 1000, 65535, opt_mss1460, 4);
	struct tcp_sock *s = accepted;
	struct tcp_info i;
	s->cwnd = s->ssthresh = 10 * 1460; /* as after a loss */
	cr_assert_eq(tcp_send_copy(s, pattern, 40 * 1460), 40 * 1460);
	cr_assert_eq(fnd.ntx, 10);
	uint32_t acked = 0;
	for (unsigned r = 0; r < 2; r++) {
		tcp_get_info(s, &i);
		acked += i.cwnd; /* the whole flight, in one ACK */
		peer_seg(TCP_ACK, 1001, iss + 1 + acked, 65535, NULL, 0, NULL, 0);
	}
	tcp_get_info(s, &i);
	cr_assert_eq(i.cwnd, 12 * 1460, "two round trips of one ACK each: cwnd %u", i.cwnd);
	tcp_abort(s);
	close_listener(l);
}

/* Data the device refuses for want of room in its transmit ring did not go out: TCP stops
 * there and sends it, in order, at its turn once the device has room again (its wake, then
 * the end of the poll pass), instead of counting it as sent (a hole
 * the peer reports only by duplicate ACKs or a retransmission timeout; measured 2026-11-28
 * under 128 KiB reads: 7 holes and 2 timeouts of 200 ms in 10 s). The next ACK no longer
 * retries it. */
Test(tcp_data, data_the_device_refuses_goes_later_in_order)
{
	struct tcp_sock *l;
	fill();
	uint32_t iss = open_passive(&l, 1000, 65535, opt_mss1460, 4);
	struct tcp_sock *s = accepted;
	fnd.tx_refuse = 2; /* the ring is full for the next two frames */
	cr_assert_eq(tcp_send_copy(s, pattern, 3 * 1460), 3 * 1460);
	cr_assert_eq(fnd.tx_refused, 1, "the first refusal stops the burst");
	cr_assert_eq(fnd.ntx, 0);
	cr_assert_eq(tcp_stats()->tx_refused, 1);
	struct tcp_info i;
	tcp_get_info(s, &i);
	cr_assert_eq(i.snd_nxt, iss + 1, "nothing counted as sent");
	fnd.tx_refuse = 0;
	peer_seg(TCP_ACK, 1001, iss + 1, 65535, NULL, 0, NULL, 0);
	cr_assert_eq(fnd.ntx, 0, "the ACK does not retry: the socket waits for its turn");
	cr_assert_eq(poll_pass(), 0, "no turn while the device is stopped");
	netdev_tx_wake(&fnd.dev);
	cr_assert_gt(poll_pass(), 0);
	cr_assert_eq(tcp_stats()->tx_ring_retries, 1);
	sent_in_order_acked(s, iss, 3, pattern);
	tcp_get_info(s, &i);
	/* Refused with nothing in flight: no ACK will come; sent again after TCP_TX_RETRY_NS,
	 * as it was (no timeout counted, cwnd kept). */
	fake_netdev_clear(&fnd);
	uint32_t cwnd = i.cwnd;
	fnd.tx_refuse = 1;
	cr_assert_eq(tcp_send_copy(s, pattern, 1460), 1460);
	cr_assert_eq(fnd.ntx, 0);
	advance(TCP_TX_RETRY_NS);
	cr_assert_eq(fnd.ntx, 1, "sent again by the timer");
	cr_assert_eq(txseg(0)->seq, iss + 1 + 3 * 1460);
	tcp_get_info(s, &i);
	cr_assert_eq(i.timeouts, 0);
	cr_assert_eq(i.cwnd, cwnd);
	tcp_abort(s);
	close_listener(l);
}

/* No netbuf free for a segment (the pool empty: the device's finished frames wait for its
 * poll): nothing goes out, and when the ACK of everything in flight comes while the pool
 * is still empty, nothing else would send the rest. The data goes after TCP_TX_RETRY_NS,
 * in order, once the pool has netbufs again; nothing counted as sent or lost. */
Test(tcp_data, data_with_no_netbuf_free_goes_later)
{
	static struct netbuf *held[4096];
	unsigned n = 0;
	struct tcp_sock *l;
	fill();
	uint32_t iss = open_passive(&l, 1000, 65535, opt_mss1460, 4);
	struct tcp_sock *s = accepted;
	cr_assert_eq(tcp_send_copy(s, pattern, 1460), 1460);
	cr_assert_eq(fnd.ntx, 1, "the first segment goes");
	peer_seg(TCP_ACK, 1001, iss + 1 + 1460, 65535, NULL, 0, NULL, 0);
	fake_netdev_clear(&fnd);
	while (n < 4096 && (held[n] = netbuf_alloc(NETBUF_HEADROOM)) != NULL)
		n++;
	cr_assert_lt(n, 4096, "the pool ran dry");
	uint64_t nobuf = tcp_stats()->tx_nobuf;
	cr_assert_eq(tcp_send_copy(s, pattern + 1460, 2 * 1460), 2 * 1460);
	tcp_flush(s);
	poll_pass();
	cr_assert_eq(fnd.ntx, 0, "no netbuf: nothing sent");
	cr_assert_gt(tcp_stats()->tx_nobuf, nobuf);
	struct tcp_info i;
	tcp_get_info(s, &i);
	cr_assert_eq(i.snd_nxt, i.snd_una, "nothing in flight");
	cr_assert_eq(i.sndq_bytes, 2 * 1460, "the rest waits");
	while (n)
		netbuf_free(held[--n]);
	advance(TCP_TX_RETRY_NS);
	cr_assert_eq(fnd.ntx, 2, "sent by the retry");
	for (unsigned k = 0; k < 2; k++) {
		cr_assert_eq(txseg(k)->seq, iss + 1 + (k + 1) * 1460, "segment %u in order", k);
		cr_assert_eq(memcmp(txseg(k)->payload, pattern + (k + 1) * 1460, 1460), 0);
	}
	tcp_get_info(s, &i);
	cr_assert_eq(i.timeouts, 0, "no loss counted");
	cr_assert_eq(i.retransmits, 0);
	peer_seg(TCP_ACK, 1001, iss + 1 + 3 * 1460, 65535, NULL, 0, NULL, 0);
	tcp_abort(s);
	close_listener(l);
}

Test(tcp_data, zero_window_probe)
{
	struct tcp_sock *l;
	fill();
	uint32_t iss = open_passive(&l, 1000, 0, opt_mss1460, 4);
	struct tcp_sock *s = accepted;
	cr_assert_eq(tcp_send_copy(s, pattern, 100), 100);
	cr_assert_eq(fnd.ntx, 0, "the window is closed");
	advance(TCP_RTO_INITIAL_NS);
	cr_assert_eq(fnd.ntx, 1, "probe");
	cr_assert_eq(txseg(0)->len, 1);
	cr_assert_eq(txseg(0)->seq, iss + 1);
	peer_seg(TCP_ACK, 1001, iss + 1, 0, NULL, 0, NULL, 0);
	advance(2 * TCP_RTO_INITIAL_NS);
	cr_assert_eq(fnd.ntx, 2, "probes back off");
	cr_assert_eq(tcp_stats()->zero_window_probes, 2);
	/* The window opens: everything goes. */
	peer_seg(TCP_ACK, 1001, iss + 1, 1000, NULL, 0, NULL, 0);
	struct fake_parsed_tcp *p = lastseg();
	cr_assert_eq(p->seq + p->len, iss + 101);
	peer_seg(TCP_ACK, 1001, iss + 101, 1000, NULL, 0, NULL, 0);
	close_with_nothing_queued(s, l);
}

Test(tcp_data, receive_window_closes_and_reopens)
{
	struct tcp_sock *l;
	fill();
	/* The socket's own buffer limit, not the NIC's pool (tcp_budget.c, test_tcp_budget):
	 * a device that does not say how many buffers it lends is not budgeted. */
	fnd.dev.rx_bufs = 0;
	uint32_t iss = open_passive(&l, 1000, 65535, opt_mss1460_ws2, sizeof(opt_mss1460_ws2));
	struct tcp_sock *s = accepted;
	/* Fill the receive buffer without reading: the right edge stays put, the window
	 * shrinks to nothing. */
	uint32_t seq = 1001;
	for (int k = 0; k < 180; k++) {
		peer_seg(TCP_ACK, seq, iss + 1, 65535, pattern, 1456, NULL, 0);
		seq += 1456;
	}
	advance(TCP_DELACK_NS);
	cr_assert_eq(lastseg()->ack, seq);
	cr_assert_leq(lastseg()->wnd, (TCP_RCV_BUF - 180 * 1456) >> TCP_RCV_WSCALE);
	/* Straddling the last bytes of the window: only those are taken; then the window
	 * is zero and a further segment is refused. */
	peer_seg(TCP_ACK, seq, iss + 1, 65535, pattern, 1456, NULL, 0);
	cr_assert_eq(tcp_recv_avail(s), TCP_RCV_BUF);
	advance(TCP_DELACK_NS);
	cr_assert_eq(lastseg()->wnd, 0);
	peer_seg(TCP_ACK, 1001 + TCP_RCV_BUF, iss + 1, 65535, pattern, 1456, NULL, 0);
	cr_assert_eq(tcp_recv_avail(s), TCP_RCV_BUF);
	cr_assert_eq(lastseg()->ack, 1001 + TCP_RCV_BUF);
	/* Reading everything reopens the window with an update. */
	unsigned before = fnd.ntx;
	struct netdev_frag f[64];
	int n;
	size_t got = 0;
	while ((n = tcp_recv_frags(s, f, 64, SIZE_MAX)) > 0)
		for (int k = 0; k < n; k++) {
			got += f[k].len;
			netdev_frag_release(&f[k]);
		}
	cr_assert_eq(got, TCP_RCV_BUF);
	cr_assert_gt(fnd.ntx, before, "window update sent");
	cr_assert_eq(lastseg()->wnd, TCP_RCV_BUF >> TCP_RCV_WSCALE);
	tcp_abort(s);
	close_listener(l);
}

Test(tcp_data, keepalive_probes_then_reset)
{
	struct tcp_sock *l;
	uint32_t iss = open_passive(&l, 1000, 65535, opt_mss1460, 4);
	struct tcp_sock *s = accepted;
	tcp_set_keepalive(s, 10 * NSEC_PER_SEC, NSEC_PER_SEC, 3);
	advance(10 * NSEC_PER_SEC);
	cr_assert_eq(fnd.ntx, 1);
	cr_assert_eq(txseg(0)->seq, iss, "probe at SND.NXT - 1");
	/* An answer resets the count. */
	peer_seg(TCP_ACK, 1001, iss + 1, 65535, NULL, 0, NULL, 0);
	advance(10 * NSEC_PER_SEC);
	cr_assert_eq(fnd.ntx, 2);
	advance(3 * NSEC_PER_SEC);
	cr_assert_eq(tcp_state(s), TCP_CLOSED);
	cr_assert_eq(tcp_error(s), -ETIMEDOUT);
	cr_assert_eq(lastseg()->flags & TCP_RST, TCP_RST);
	cr_assert_eq(tcp_stats()->keepalive_probes, 4, "one answered, three not");
	tcp_close(s);
	close_listener(l);
}

/* Keep-alive is armed lazily (tcp_rx re-arms only an unarmed timer; one that comes due
 * early re-arms itself from the last segment): the first probe still comes keep_idle
 * after the peer's last segment, not after the first. */
Test(tcp_data, keepalive_counts_from_the_last_segment)
{
	struct tcp_sock *l;
	uint32_t iss = open_passive(&l, 1000, 65535, opt_mss1460, 4);
	struct tcp_sock *s = accepted;
	tcp_set_keepalive(s, 10 * NSEC_PER_SEC, NSEC_PER_SEC, 3);
	advance(6 * NSEC_PER_SEC);
	peer_seg(TCP_ACK, 1001, iss + 1, 65535, NULL, 0, NULL, 0);
	advance(6 * NSEC_PER_SEC);
	cr_assert_eq(fnd.ntx, 0, "12 s after the handshake, 6 s after the last segment: no probe");
	advance(4 * NSEC_PER_SEC);
	cr_assert_eq(fnd.ntx, 1, "10 s after the last segment: the probe");
	cr_assert_eq(txseg(0)->seq, iss);
	cr_assert_eq(tcp_stats()->keepalive_probes, 1);
	tcp_abort(s);
	close_listener(l);
}

Test(tcp_data, recv_frags_split_and_copy_api)
{
	struct tcp_sock *l;
	fill();
	uint32_t iss = open_passive(&l, 1000, 65535, opt_mss1460, 4);
	struct tcp_sock *s = accepted;
	peer_seg(TCP_ACK, 1001, iss + 1, 65535, pattern, 1400, NULL, 0);
	struct netdev_frag f[2];
	cr_assert_eq(tcp_recv_frags(s, f, 2, 72), 1, "a PDU header's worth");
	cr_assert_eq(f[0].len, 72);
	cr_assert_eq(tcp_recv_avail(s), 1328);
	uint8_t buf[1400];
	uint64_t dev0 = dma_counters()->cpu_bytes[MEM_CLASS_DEVICE];
	cr_assert_eq(tcp_recv_copy(s, buf, 1000), 1000);
	cr_assert_eq(memcmp(buf, pattern + 72, 1000), 0);
	cr_assert_eq(fnd.data_out, 1, "the split part still holds the buffer");
	netdev_frag_release(&f[0]);
	cr_assert_eq(fnd.data_out, 1, "the queue's part still holds it");
	cr_assert_eq(tcp_recv_copy(s, buf, sizeof(buf)), 328);
	cr_assert_eq(fnd.data_out, 0, "both parts released: buffer back to the ring");
	cr_assert_eq(dma_counters()->cpu_bytes[MEM_CLASS_DEVICE] - dev0, 1328, "copy-out reads counted");
	tcp_abort(s);
	close_listener(l);
}

Test(tcp_data, unread_data_at_close_resets)
{
	struct tcp_sock *l;
	uint32_t iss = open_passive(&l, 1000, 65535, opt_mss1460, 4);
	peer_seg(TCP_ACK, 1001, iss + 1, 65535, "data", 4, NULL, 0);
	tcp_close(accepted);
	cr_assert_eq(lastseg()->flags, TCP_RST | TCP_ACK);
	close_listener(l);
}

/* Services: the peer talks to echo (7) and discard (9). */
static void svc_open(uint16_t port, uint32_t *iss)
{
	struct fake_tcp t = { .src = PEER, .dst = US, .sport = PEER_PORT, .dport = port, .seq = 100,
			      .flags = TCP_SYN, .wnd = 65535, .opts = opt_mss1460, .optlen = 4 };
	fake_netdev_inject(&fnd, frame, fake_build_tcp(frame, &t));
	*iss = lastseg()->seq;
	t.seq = 101;
	t.ack = *iss + 1;
	t.flags = TCP_ACK;
	t.optlen = 0;
	fake_netdev_inject(&fnd, frame, fake_build_tcp(frame, &t));
	fake_netdev_clear(&fnd);
}

static void svc_seg(uint16_t port, uint8_t flags, uint32_t seq, uint32_t ack, const void *d, size_t len)
{
	struct fake_tcp t = { .src = PEER, .dst = US, .sport = PEER_PORT, .dport = port, .seq = seq, .ack = ack,
			      .flags = flags, .wnd = 65535, .payload = d, .len = len };
	fake_netdev_inject(&fnd, frame, fake_build_tcp(frame, &t));
}

Test(tcp_data, echo_and_discard_services)
{
	uint32_t iss;
	fill();
	cr_assert_eq(tcp_services_start(), 0);
	svc_open(7, &iss);
	svc_seg(7, TCP_ACK | TCP_PSH, 101, iss + 1, pattern, 1200);
	struct fake_parsed_tcp *p = lastseg();
	cr_assert_eq(p->len, 1200, "echoed");
	cr_assert_eq(p->ack, 1301, "with the ACK piggybacked");
	cr_assert_eq(memcmp(p->payload, pattern, 1200), 0);
	cr_assert_eq(fnd.data_out, 1, "echo holds the received buffer until ACKed (zero copy)");
	svc_seg(7, TCP_ACK, 1301, iss + 1201, NULL, 0);
	cr_assert_eq(fnd.data_out, 0);
	svc_seg(7, TCP_ACK | TCP_FIN, 1301, iss + 1201, NULL, 0);
	p = lastseg();
	cr_assert_eq(p->flags & TCP_FIN, TCP_FIN, "echo closes after the peer");
	svc_seg(7, TCP_ACK, 1302, iss + 1202, NULL, 0);
	fake_netdev_clear(&fnd);
	svc_open(9, &iss);
	svc_seg(9, TCP_ACK, 101, iss + 1, pattern, 1460);
	svc_seg(9, TCP_ACK, 1561, iss + 1, pattern, 1460);
	cr_assert_eq(fnd.data_out, 0, "discard released the buffers unread");
	cr_assert_eq(lastseg()->ack, 3021);
	svc_seg(9, TCP_ACK | TCP_FIN, 3021, iss + 1, NULL, 0);
	svc_seg(9, TCP_ACK, 3022, iss + 2, NULL, 0);
	tcp_services_stop();
}

/* Frames the NIC did not split: payload bytes in the host part are copied once. */
static void nosplit_setup(void)
{
	net_test_start(0);
}
TestSuite(tcp_nosplit, .init = nosplit_setup, .fini = net_teardown);

Test(tcp_nosplit, host_payload_copied_to_chunks)
{
	struct tcp_sock *l;
	fill();
	uint32_t iss = open_passive(&l, 1000, 65535, opt_mss1460, 4);
	peer_seg(TCP_ACK, 1001, iss + 1, 65535, pattern, 1400, NULL, 0);
	cr_assert_eq(tcp_recv_avail(accepted), 1400);
	cr_assert_eq(fnd.hdr_out, 0, "the header buffer went back at once");
	cr_assert_eq(drain_check(accepted, 0), 1400);
	cr_assert_gt(tcp_stats()->rx_payload_host, 0);
	tcp_abort(accepted);
	close_listener(l);
}

/* A transmit ring that fills and frees (issue 18): the segment the full ring refused leaves
 * when the device's reclaim frees room (its wake, then the socket's turn at the end of the
 * poll pass), with the clock standing still: not after TCP_TX_RETRY_NS, not at the next
 * ACK (which finds the ring still full and sends nothing, not even a retry to refuse). */
Test(tcp_data, refused_data_leaves_at_the_reclaim_not_at_the_ack_or_the_timer)
{
	struct tcp_sock *l;
	fill();
	uint32_t iss = open_passive(&l, 1000, 65535, opt_mss1460, 4);
	struct tcp_sock *s = accepted;
	s->cwnd = 16 * 1460; /* the window is not what limits here */
	fnd.tx_ring = 12;
	cr_assert_eq(tcp_send_copy(s, pattern, 6 * 1460), 6 * 1460);
	unsigned went = fnd.ntx;
	cr_assert_gt(went, 0);
	cr_assert_lt(went, 6, "the ring holds only part of the burst");
	cr_assert_eq(fnd.tx_refused, 1, "one refusal stops the burst");
	cr_assert(fnd.dev.tx_stopped);
	struct tcp_info i;
	tcp_get_info(s, &i);
	cr_assert_eq(i.snd_nxt, iss + 1 + went * 1460, "only what the ring took counts as sent");
	/* The peer ACKs the first segment: the ring is still full, so nothing is tried. */
	peer_seg(TCP_ACK, 1001, iss + 1 + 1460, 65535, NULL, 0, NULL, 0);
	cr_assert_eq(fnd.ntx, went);
	cr_assert_eq(fnd.tx_refused, 1, "no retry into a full ring at the ACK");
	cr_assert_eq(poll_pass(), 0, "no turn while the device is stopped");
	cr_assert_eq(fnd.ntx, went);
	/* The NIC is done with its oldest frames: room again, the waiting data goes in order. */
	fake_netdev_tx_reclaim(&fnd, fnd.nlate);
	cr_assert_not(fnd.dev.tx_stopped);
	cr_assert_eq(fnd.dev.stats.tx_wakes, 1);
	cr_assert_gt(poll_pass(), 0);
	cr_assert_eq(tcp_stats()->tx_ring_retries, 1);
	cr_assert_gt(fnd.ntx, went, "the refused segment left at the reclaim");
	cr_assert_eq(txseg(went)->seq, iss + 1 + went * 1460);
	cr_assert_eq(memcmp(txseg(went)->payload, pattern + went * 1460, 1460), 0);
	while (fnd.ntx < 6) { /* a ring of 12 takes a few at a time: each reclaim lets more go */
		unsigned n = fnd.ntx;
		fake_netdev_tx_reclaim(&fnd, fnd.nlate);
		poll_pass();
		cr_assert_gt(fnd.ntx, n, "stalled at %u segments", n);
	}
	for (unsigned k = 0; k < 6; k++)
		cr_assert_eq(txseg(k)->seq, iss + 1 + k * 1460, "segment %u in order", k);
	tcp_get_info(s, &i);
	cr_assert_eq(i.retransmits, 0, "nothing sent twice");
	cr_assert_eq(i.timeouts, 0);
	fake_netdev_tx_reclaim(&fnd, fnd.nlate);
	peer_seg(TCP_ACK, 1001, iss + 1 + 6 * 1460, 65535, NULL, 0, NULL, 0);
	tcp_abort(s);
	fake_netdev_tx_complete(&fnd); /* the reset */
	close_listener(l);
}

/* The delayed-ACK timer is left armed when an ACK goes out: it fires at the older
 * segment's deadline while a younger ACK is owed, and re-arms for that one's own instead
 * of sending it early (tcp.c delack_timer). */
Test(tcp_data, delack_timer_left_armed_rearms_for_younger_ack)
{
	struct tcp_sock *l;
	fill();
	uint32_t iss = open_passive(&l, 1000, 65535, opt_mss1460, 4);
	struct tcp_sock *s = accepted;
	uint64_t ms = 1000 * 1000;
	peer_seg(TCP_ACK, 1001, iss + 1, 65535, pattern, 1000, NULL, 0);
	cr_assert_eq(fnd.ntx, 0, "ACK delayed");
	cr_assert(s->t_delack.armed);
	advance(20 * ms);
	peer_seg(TCP_ACK, 2001, iss + 1, 65535, pattern + 1000, 1460, NULL, 0);
	cr_assert_eq(fnd.ntx, 1, "every second segment ACKed");
	cr_assert_eq(lastseg()->ack, 3461);
	cr_assert(s->t_delack.armed, "left armed after the ACK");
	advance(10 * ms); /* 30 ms: a new delayed ACK, due at 70 ms */
	peer_seg(TCP_ACK, 3461, iss + 1, 65535, pattern + 2460, 500, NULL, 0);
	cr_assert_eq(fnd.ntx, 1);
	advance(10 * ms + 1); /* past the first segment's deadline (40 ms) */
	cr_assert_eq(fnd.ntx, 1, "not sent before its own deadline");
	cr_assert(s->t_delack.armed, "re-armed for the younger ACK");
	cr_assert_eq(tcp_stats()->delayed_acks, 0);
	advance(30 * ms - 2);
	cr_assert_eq(fnd.ntx, 1, "still not due");
	advance(1);
	cr_assert_eq(fnd.ntx, 2, "sent at its own deadline");
	cr_assert_eq(lastseg()->ack, 3961);
	cr_assert_eq(tcp_stats()->delayed_acks, 1);
	/* nothing owed: the timer fires and sends nothing */
	peer_seg(TCP_ACK, 3961, iss + 1, 65535, pattern + 2960, 1460, NULL, 0);
	peer_seg(TCP_ACK, 5421, iss + 1, 65535, pattern + 4420, 1460, NULL, 0);
	cr_assert_eq(fnd.ntx, 3);
	advance(TCP_DELACK_NS);
	cr_assert_eq(fnd.ntx, 3, "no ACK owed, none sent");
	cr_assert_eq(tcp_stats()->delayed_acks, 1);
	cr_assert_eq(drain_check(s, 0), 5880);
	tcp_abort(s);
	close_listener(l);
}

/* The n segments sent from index a and those from index b: the same lengths, flags and bytes. */
static void same_segments(unsigned a, unsigned b, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		cr_assert_eq(txseg(a + i)->len, txseg(b + i)->len, "segment %u", i);
		cr_assert_eq(txseg(a + i)->flags, txseg(b + i)->flags, "segment %u", i);
		cr_assert_eq(memcmp(txseg(a + i)->payload, txseg(b + i)->payload, txseg(a + i)->len), 0, "segment %u", i);
	}
}

/* tcp_send_place_frags / tcp_send_placed_frags (a PDU header built in place, its data as
 * fragments, one room check) put on the wire the segments tcp_send_place, tcp_send_placed
 * and tcp_send_frags put there, a response placed behind them riding in the same pass;
 * every entry goes back once acknowledged and the send queue ends empty. */
Test(tcp_data, a_header_and_its_fragments_in_one_call_go_out_as_in_three)
{
	struct tcp_sock *l;
	uint32_t iss;
	struct tcp_sock *s = open_with_host_data(&l, 5, &iss);
	unsigned ents0 = s->sndents, borrowed0 = tcp_sndents_borrowed;
	for (unsigned round = 0; round < 2; round++) {
		uint8_t *p = round ? tcp_send_place_frags(s, 24, 2100, 2) : tcp_send_place(s, 24, 2100);
		cr_assert_not_null(p);
		memcpy(p, pattern, 24);
		struct netdev_frag g[2] = { host_frag(0, 100, 1), host_frag(100, 2000, 2) };
		if (round) {
			tcp_send_placed_frags(s, 24, g, 2);
		} else {
			tcp_send_placed(s, 24);
			cr_assert_eq(tcp_send_frags(s, g, 2), 0);
		}
		p = tcp_send_place(s, 24, 0); /* the response behind them */
		memcpy(p, pattern + 100, 24);
		tcp_send_placed(s, 24);
		tcp_flush(s);
		cr_assert_eq(fnd.ntx, 2 * (round + 1), "24 + 2100 + 24 bytes: 1460 + 688");
		peer_seg(TCP_ACK, 1001, iss + 1 + (round + 1) * 2148, 65535, NULL, 0, NULL, 0);
	}
	same_segments(0, 2, 2);
	cr_assert_eq(memcmp(txseg(2)->payload + 24, hostbuf, 1436), 0);
	cr_assert_eq(frags_released, 4, "every fragment back once acknowledged");
	cr_assert_eq(s->sndents, ents0);
	cr_assert_eq(tcp_sndents_borrowed, borrowed0);
	close_with_nothing_queued(s, l);
}

/* tcp_send_place_frags refused for want of send entries (the header's and the caller's)
 * records the refusal as tcp_send_place does: nothing queued, and TCP_EV_SENT follows
 * (here, with nothing of the socket's queued, the retry timer); once there is room the
 * PDU goes and the entries come back. */
Test(tcp_data, a_header_and_fragments_refused_for_entries_get_tcp_ev_sent)
{
	struct tcp_sock *l;
	uint32_t iss;
	struct tcp_sock *s = open_with_host_data(&l, 6, &iss);
	unsigned ents0 = s->sndents, borrowed0 = tcp_sndents_borrowed;
	uint64_t refused0 = tcp_counters.send_refused;
	tcp_sndents_borrowed = TCP_SNDENT_SHARED; /* other sockets hold the shared part */
	unsigned room = tcp_send_frags_room(s);
	cr_assert_null(tcp_send_place_frags(s, 24, 100, room), "1 + room entries: one too many");
	cr_assert_eq(tcp_counters.send_refused - refused0, 1, "recorded as a refusal");
	cr_assert_eq(s->sndents, ents0, "nothing queued");
	memset(ev_count, 0, sizeof(ev_count));
	advance(TCP_TX_RETRY_NS);
	cr_assert_geq(ev_count[3], 1, "TCP_EV_SENT follows");
	tcp_sndents_borrowed = borrowed0;
	uint8_t *p = tcp_send_place_frags(s, 24, 100, room - 1);
	cr_assert_not_null(p, "within the room");
	memcpy(p, pattern, 24);
	struct netdev_frag f = host_frag(0, 100, 1);
	tcp_send_placed_frags(s, 24, &f, 1);
	tcp_flush(s);
	cr_assert_eq(fnd.ntx, 1);
	cr_assert_eq(txseg(0)->len, 124);
	peer_seg(TCP_ACK, 1001, iss + 1 + 124, 65535, NULL, 0, NULL, 0);
	cr_assert_eq(frags_released, 1);
	cr_assert_eq(s->sndents, ents0);
	tcp_abort(s);
	close_listener(l);
}
