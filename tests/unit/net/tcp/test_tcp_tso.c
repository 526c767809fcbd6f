// sources: drivers/nic/netdev.c net/net.c lib/ipv4_text.c net/arp.c net/ipv4.c net/udp.c net/tcp/tcp.c net/tcp/tcp_in.c net/tcp/tcp_isn.c net/tcp/tcp_pools.c net/tcp/tcp_admit.c tests/unit/net/fake_entropy.c net/tcp/tcp_hdr.c net/tcp/tcp_out.c net/tcp/tcp_budget.c net/tcp/tcp_sack.c net/tcp/tcp_service.c mm/pool.c mm/dma.c lib/timer.c lib/log.c tests/unit/net/fake_netdev.c
/*
 * TCP segmentation offload: with NETDEV_F_TSO the stack hands the NIC one frame of whole
 * MSS segments (up to tso_max, cut at the device-gather limits like any segment) and the
 * fake netdev cuts it the way the 82574L does, so every assertion is about the segments on
 * the wire: lengths, sequence numbers, checksums (which only verify when the stack left
 * the pseudo-header sum without the length in the field), PSH on the last, IPv4
 * identifications. Without the feature nothing changes; retransmissions stay one MSS.
 */
#include "tests/unit/net/tcp/tcp_test.h"

static void tso_setup(void)
{
	net_test_start(NETDEV_F_RX_SPLIT | NETDEV_F_TX_CSUM | NETDEV_F_TSO);
}

TestSuite(tcp_tso, .init = tso_setup, .fini = net_teardown);
TestSuite(tcp_no_tso, .init = net_setup, .fini = net_teardown);

static uint8_t src[65536];

static void fill(void)
{
	for (size_t i = 0; i < sizeof(src); i++)
		src[i] = (uint8_t)(i * 11 + (i >> 10));
}

static struct netdev_frag host_frag(size_t off, uint32_t len)
{
	struct netdev_frag f;
	memset(&f, 0, sizeof(f));
	f.addr = dma_addr_host(src + off);
	f.offset = off;
	f.len = len;
	return f;
}

static struct netdev_frag dev_frag(size_t off, uint32_t len)
{
	struct netdev_frag f = host_frag(off, len);
	f.addr = dma_addr_device((uint64_t)(uintptr_t)(src + off));
	f.provider = 1;
	return f;
}

static uint16_t ip_id(unsigned i)
{
	return (uint16_t)(fnd.tx[i].b[18] << 8 | fnd.tx[i].b[19]);
}

/* Check captured frames [from, to) are back-to-back segments of src starting at seq/off;
 * returns the bytes they carry. */
static size_t check_run(unsigned from, unsigned to, uint32_t seq, size_t off, size_t mss)
{
	size_t n = 0;
	for (unsigned i = from; i < to; i++) {
		struct fake_parsed_tcp *p = txseg(i);
		cr_assert_eq(p->seq, seq + n, "frame %u: seq %u, want %u", i, p->seq, seq + (uint32_t)n);
		cr_assert_leq(p->len, mss, "frame %u: %zu bytes over the MSS", i, p->len);
		cr_assert_eq(memcmp(p->payload, src + off + n, p->len), 0, "frame %u payload", i);
		n += p->len;
	}
	return n;
}

static struct tcp_sock *listener;

/* Accept a connection from a peer with window wnd and MSS 1460, and queue len bytes of src
 * (one host fragment) on it; *iss gets our ISS. */
static struct tcp_sock *send_dram(uint16_t wnd, uint32_t len, uint32_t *iss)
{
	fill();
	*iss = open_passive(&listener, 1000, wnd, opt_mss1460, 4);
	struct netdev_frag f = host_frag(0, len);
	cr_assert_eq(tcp_send_frags(accepted, &f, 1), 0);
	return accepted;
}

static void finish(struct tcp_sock *s)
{
	tcp_abort(s);
	close_listener(listener);
}

Test(tcp_tso, a_window_of_dram_data_leaves_as_one_tso_frame_of_whole_segments)
{
	uint32_t iss;
	struct tcp_sock *s = send_dram(65535, 20000, &iss);
	/* cwnd 3 x 1460: one frame to the NIC, three segments on the wire. */
	cr_assert_eq(fnd.tso_frames, 1);
	cr_assert_eq(fnd.ntx, 3);
	cr_assert_eq(check_run(0, 3, iss + 1, 0, 1460), 4380);
	for (unsigned i = 0; i < 3; i++) {
		cr_assert_eq(txseg(i)->len, 1460);
		cr_assert_eq(seg.flags, TCP_ACK, "no PSH: more data waits");
		cr_assert_eq(ip_id(i), (uint16_t)(ip_id(0) + i), "the NIC numbers each segment");
	}
	cr_assert_eq(tcp_stats()->tso_frames, 1);
	cr_assert_eq(fnd.dev.stats.tx_tso, 1);
	cr_assert_eq(fnd.dev.stats.tx_tso_segs, 3);
	cr_assert_eq(s->segs_out, 3 + 1, "SYN-ACK + three segments");
	/* ACK it all: slow start opens the window, the rest leaves in TSO frames too. */
	uint16_t next_id = (uint16_t)(ip_id(2) + 1);
	size_t sent = 4380;
	fake_netdev_clear(&fnd);
	peer_seg(TCP_ACK, 1001, iss + 1 + 4380, 65535, NULL, 0, NULL, 0);
	cr_assert_gt(fnd.tso_frames, 1);
	cr_assert_eq(ip_id(0), next_id, "identifications go on after the last segment");
	while (sent < 20000) {
		unsigned n = fnd.ntx;
		cr_assert_gt(n, 0, "stalled at %zu", sent);
		sent += check_run(0, n, iss + 1 + (uint32_t)sent, sent, 1460);
		struct fake_parsed_tcp *p = txseg(n - 1);
		cr_assert_eq(!!(p->flags & TCP_PSH), sent == 20000, "PSH on the last segment of the data only");
		fake_netdev_clear(&fnd);
		peer_seg(TCP_ACK, 1001, iss + 1 + (uint32_t)sent, 65535, NULL, 0, NULL, 0);
	}
	cr_assert_eq(sent, 20000);
	finish(s);
}

/* A TSO frame the device refuses (transmit ring full) did not go out: TCP counts it (a TSO
 * frame, its payload bytes) only when it is sent again and taken, so `tcp` agrees with `nic`. */
Test(tcp_tso, a_refused_tso_frame_and_its_payload_are_counted_once_when_it_goes)
{
	fill();
	uint32_t iss = open_passive(&listener, 1000, 65535, opt_mss1460, 4);
	struct tcp_sock *s = accepted;
	struct netdev_frag f = host_frag(0, 20000);
	fnd.tx_refuse = 1;
	cr_assert_eq(tcp_send_frags(s, &f, 1), 0);
	cr_assert_eq(fnd.tx_refused, 1);
	cr_assert_eq(fnd.ntx, 0);
	cr_assert_eq(tcp_stats()->tso_frames, 0, "a refused frame is not a TSO frame sent");
	cr_assert_eq(tcp_stats()->tx_payload_host, 0, "nor its payload");
	netdev_tx_wake(&fnd.dev);
	poll_pass(); /* its turn */
	cr_assert_eq(fnd.tso_frames, 1);
	cr_assert_eq(check_run(0, fnd.ntx, iss + 1, 0, 1460), 4380);
	cr_assert_eq(tcp_stats()->tx_payload_host, 4380, "the payload counted once, when it went");
	cr_assert_eq(tcp_stats()->tso_frames, fnd.dev.stats.tx_tso);
	finish(s);
}

Test(tcp_tso, device_fragments_are_cut_at_the_gather_limit_then_segmented)
{
	fill();
	fnd.dev.tx_dev_frags = 1;
	fnd.dev.tx_dev_bytes = 4096;
	uint32_t iss = open_passive(&listener, 1000, 65535, opt_mss1460, 4);
	struct tcp_sock *s = accepted;
	struct netdev_frag f[3] = { dev_frag(0, 4096), dev_frag(4096, 4096), dev_frag(8192, 4096) };
	cr_assert_eq(tcp_send_frags(s, f, 3), 0);
	/* 4380 of window, but one device piece of <= 4 KiB per frame: 1460 + 1460 + 1176. */
	cr_assert_eq(fnd.tso_frames, 1);
	cr_assert_eq(fnd.ntx, 3);
	cr_assert_eq(check_run(0, 3, iss + 1, 0, 1460), 4096);
	cr_assert_eq(txseg(2)->len, 1176);
	cr_assert_eq(fnd.tx_over_limit, 0, "no frame needs the DRAM bounce");
	fake_netdev_clear(&fnd);
	peer_seg(TCP_ACK, 1001, iss + 1 + 4096, 65535, NULL, 0, NULL, 0);
	size_t sent = 4096;
	while (sent < 12288) {
		unsigned n = fnd.ntx;
		cr_assert_gt(n, 0, "stalled at %zu", sent);
		sent += check_run(0, n, iss + 1 + (uint32_t)sent, sent, 1460);
		fake_netdev_clear(&fnd);
		peer_seg(TCP_ACK, 1001, iss + 1 + (uint32_t)sent, 65535, NULL, 0, NULL, 0);
	}
	cr_assert_eq(fnd.tx_over_limit, 0);
	cr_assert_eq(fnd.dev.stats.tx_tso, fnd.tso_frames);
	cr_assert_eq(fnd.tso_frames, 3, "one TSO frame per device piece");
	finish(s);
}

Test(tcp_tso, retransmissions_are_one_mss_then_slow_start_brings_tso_back)
{
	uint32_t iss;
	struct tcp_sock *s = send_dram(65535, 8000, &iss);
	cr_assert_eq(fnd.tso_frames, 1);
	/* Three duplicate ACKs: the fast retransmission is one MSS, not a TSO frame. */
	fake_netdev_clear(&fnd);
	for (int k = 0; k < 3; k++)
		peer_seg(TCP_ACK, 1001, iss + 1, 65535, NULL, 0, NULL, 0);
	cr_assert_eq(tcp_stats()->fast_retransmits, 1);
	cr_assert_geq(fnd.ntx, 1);
	cr_assert_eq(txseg(0)->seq, iss + 1);
	cr_assert_eq(seg.len, 1460);
	/* What follows it (fast recovery's inflated window) is new data, not the rest of a
	 * retransmitted TSO frame. */
	if (fnd.ntx > 1)
		cr_assert_eq(txseg(1)->seq, iss + 1 + 4380);
	/* The timeout: cwnd 1 MSS, one segment again without TSO. */
	fake_netdev_clear(&fnd);
	uint64_t tso_before = fnd.tso_frames;
	advance(2 * TCP_RTO_INITIAL_NS);
	cr_assert_geq(tcp_stats()->timeouts, 1);
	cr_assert_eq(txseg(0)->seq, iss + 1);
	cr_assert_eq(seg.len, 1460);
	cr_assert_eq(fnd.tso_frames, tso_before, "a one-MSS window sends no TSO frame");
	/* Everything acknowledged step by step: slow start grows the window back into TSO. */
	size_t acked = 1460;
	fake_netdev_clear(&fnd);
	peer_seg(TCP_ACK, 1001, iss + 1 + (uint32_t)acked, 65535, NULL, 0, NULL, 0);
	cr_assert_gt(fnd.tso_frames, tso_before, "two MSS of window: a TSO frame of two segments");
	cr_assert_eq(check_run(0, fnd.ntx, iss + 1 + 1460, 1460, 1460), 2920);
	peer_seg(TCP_ACK, 1001, iss + 1 + 8000, 65535, NULL, 0, NULL, 0);
	finish(s);
}

Test(tcp_tso, a_window_short_of_whole_segments_holds_the_tail_back)
{
	/* The peer's window is 3000 bytes: two whole segments go, the 80 left wait (SWS). */
	uint32_t iss;
	struct tcp_sock *s = send_dram(3000, 10000, &iss);
	cr_assert_eq(fnd.tso_frames, 1);
	cr_assert_eq(fnd.ntx, 2);
	cr_assert_eq(check_run(0, 2, iss + 1, 0, 1460), 2920);
	peer_seg(TCP_ACK, 1001, iss + 1 + 2920, 65535, NULL, 0, NULL, 0);
	finish(s);
}

Test(tcp_no_tso, without_the_feature_every_frame_is_one_segment)
{
	uint32_t iss;
	struct tcp_sock *s = send_dram(65535, 20000, &iss);
	cr_assert_eq(fnd.ntx, 3);
	cr_assert_eq(check_run(0, 3, iss + 1, 0, 1460), 4380);
	cr_assert_eq(fnd.tso_frames, 0);
	cr_assert_eq(tcp_stats()->tso_frames, 0);
	cr_assert_eq(fnd.dev.stats.tx_tso, 0);
	peer_seg(TCP_ACK, 1001, iss + 1 + 4380, 65535, NULL, 0, NULL, 0);
	finish(s);
}

/* A hand-made TSO frame: TCP header (20 B) + payload bytes in a host fragment. */
static struct netbuf *tso_frame(uint32_t payload, uint16_t gso)
{
	struct netbuf *nb = netbuf_alloc(NETBUF_HEADROOM);
	cr_assert_not_null(nb);
	uint8_t *th = netbuf_put(nb, 20);
	memset(th, 0, 20);
	th[12] = 5 << 4;
	th[13] = TCP_ACK;
	struct netdev_frag f = host_frag(0, payload);
	cr_assert_eq(netbuf_add_frag(nb, &f), 0);
	nb->flags |= NETBUF_TX_CSUM_PARTIAL | NETBUF_TX_TSO;
	nb->csum_start = 0;
	nb->csum_offset = 16;
	nb->gso_size = gso;
	return nb;
}

Test(tcp_tso, ipv4_refuses_segments_over_the_mtu_and_datagrams_over_64k)
{
	cr_assert_eq(ipv4_output(tso_frame(8000, 1461), US, PEER, IP_PROTO_TCP), -EMSGSIZE,
		     "20 + 20 + 1461 > MTU 1500");
	cr_assert_eq(ipv4_output(tso_frame(65500, 1460), US, PEER, IP_PROTO_TCP), -EMSGSIZE, "over 64 KiB");
	struct netbuf *nb = tso_frame(8000, 1460);
	nb->data[12] = 4 << 4; /* a TCP header shorter than 20 bytes */
	cr_assert_eq(ipv4_output(nb, US, PEER, IP_PROTO_TCP), -EMSGSIZE);
	cr_assert_eq(ipv4_output(tso_frame(8000, 1460), US, PEER, IP_PROTO_TCP), 0);
	cr_assert_eq(fnd.tso_frames, 1);
	cr_assert_eq(fnd.ntx, 6, "8000 bytes in 1460-byte segments");
}

Test(tcp_no_tso, the_netdev_refuses_tso_frames_the_device_cannot_segment)
{
	struct netbuf *nb = tso_frame(8000, 1460);
	cr_assert_eq(netdev_tx(&fnd.dev, nb), -EINVAL, "no NETDEV_F_TSO");
	fnd.dev.features |= NETDEV_F_TSO | NETDEV_F_TX_CSUM;
	fnd.dev.tso_max = 4096;
	cr_assert_eq(netdev_tx(&fnd.dev, nb), -EINVAL, "8000 > tso_max");
	fnd.dev.tso_max = 65280;
	nb->flags &= ~NETBUF_TX_CSUM_PARTIAL;
	cr_assert_eq(netdev_tx(&fnd.dev, nb), -EINVAL, "no checksum offload");
	nb->flags |= NETBUF_TX_CSUM_PARTIAL;
	nb->gso_size = 0;
	cr_assert_eq(netdev_tx(&fnd.dev, nb), -EINVAL, "gso_size 0");
	cr_assert_eq(fnd.dev.stats.tx_errors, 4);
	netbuf_free(nb);
	cr_assert_eq(fnd.ntx, 0);
}

/* A segment to us from the peer's port sport. */
static void peer_seg_from(uint16_t sport, uint8_t flags, uint32_t seq, uint32_t ack)
{
	struct fake_tcp t = { .src = PEER, .dst = US, .sport = sport, .dport = SRV_PORT, .seq = seq, .ack = ack,
			      .flags = flags, .wnd = 65535, .opts = flags & TCP_SYN ? opt_mss1460 : NULL,
			      .optlen = flags & TCP_SYN ? 4 : 0 };
	size_t n = fake_build_tcp(frame, &t);
	cr_assert_eq(fake_netdev_inject(&fnd, frame, n), 0);
}

/* 8 host fragments of 1460 bytes from src + off: one TSO frame needs 10 descriptors
 * (context, headers, 8 pieces). */
static void queue_pieces(struct tcp_sock *s, size_t off)
{
	struct netdev_frag f[8];
	for (unsigned i = 0; i < 8; i++)
		f[i] = host_frag(off + i * 1460, 1460);
	cr_assert_eq(tcp_send_frags(s, f, 8), 0);
	tcp_flush(s); /* done queueing: the frame goes now */
}

/* Issue 18: under load a TSO frame (10 descriptors here) lost the ring to small frames
 * (3 descriptors) and went out cut into ordinary segments. Now, once the ring refuses it,
 * the frame waits whole for room, and another socket's small frame that would fit in what
 * is left does not jump the line: after the reclaim the TSO frame goes first, then the
 * small one (turns in the order of refusal). */
Test(tcp_tso, a_refused_tso_frame_waits_whole_for_room_and_small_frames_do_not_jump_it)
{
	fill();
	uint32_t iss = open_passive(&listener, 1000, 65535, opt_mss1460, 4);
	struct tcp_sock *a = accepted;
	a->cwnd = 64 * 1460;
	peer_seg_from(PEER_PORT + 1, TCP_SYN, 5000, 0);
	uint32_t iss_b = txseg(0)->seq;
	peer_seg_from(PEER_PORT + 1, TCP_ACK, 5001, iss_b + 1);
	struct tcp_sock *b = accepted;
	cr_assert_neq(a, b);
	fake_netdev_clear(&fnd);

	fnd.tx_ring = 16;
	queue_pieces(a, 0); /* 10 of 16 descriptors */
	cr_assert_eq(fnd.tso_frames, 1);
	cr_assert_eq(fnd.ntx, 8);
	queue_pieces(a, 8 * 1460); /* 10 more do not fit in 6: refused, a waits */
	cr_assert_eq(fnd.tx_refused, 1);
	cr_assert(fnd.dev.tx_stopped);
	cr_assert_eq(tcp_send_copy(b, src, 200), 200); /* 3 descriptors would fit: b waits behind a */
	tcp_flush(b);
	cr_assert_eq(fnd.ntx, 8, "nothing jumped the line");
	cr_assert_eq(fnd.tx_refused, 1);
	fake_netdev_tx_reclaim(&fnd, 1);
	cr_assert_eq(poll_pass(), 2, "two turns: a, then b");
	cr_assert_eq(fnd.tso_frames, 2, "a's frame went whole, as one TSO frame");
	cr_assert_eq(fnd.ntx, 8 + 8 + 1);
	cr_assert_eq(check_run(0, 16, iss + 1, 0, 1460), 16 * 1460, "a's 16 segments in order, first");
	cr_assert_eq(txseg(16)->dport, PEER_PORT + 1);
	cr_assert_eq(seg.seq, iss_b + 1);
	cr_assert_eq(seg.len, 200);
	cr_assert_eq(tcp_stats()->tx_ring_retries, 2);
	cr_assert_eq(tcp_stats()->tx_cut_dev, 0, "nothing cut");
	fake_netdev_tx_reclaim(&fnd, fnd.nlate);
	tcp_abort(b);
	tcp_abort(a);
	fake_netdev_tx_complete(&fnd);
	close_listener(listener);
}

/* A user queueing in small pieces (chargen: 74-byte lines) with the window open: with TSO the
 * data waits for tcp_flush (or the end of the pass) and leaves as one TSO frame, instead of one
 * MSS frame each time the tail fills a segment (issue 18: 2,979 frames for 8 MiB at load 9). */
Test(tcp_tso, small_writes_leave_as_one_tso_frame_at_the_flush)
{
	fill();
	uint32_t iss = open_passive(&listener, 1000, 65535, opt_mss1460, 4);
	struct tcp_sock *s = accepted;
	s->cwnd = 64 * 1460;
	uint64_t frames0 = fnd.dev.stats.tx_frames;
	for (unsigned i = 0; i < 200; i++)
		cr_assert_eq(tcp_send_copy(s, src + i * 74, 74), 74);
	cr_assert_eq(fnd.ntx, 0, "nothing before the user is done queueing");
	tcp_flush(s);
	cr_assert_eq(fnd.tso_frames, 1);
	cr_assert_eq(fnd.dev.stats.tx_frames - frames0, 1, "one frame to the NIC");
	cr_assert_eq(check_run(0, fnd.ntx, iss + 1, 0, 1460), 200 * 74);
	cr_assert_eq(fnd.ntx, 11);
	finish(s);
}
