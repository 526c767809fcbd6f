// sources: drivers/nic/netdev.c net/net.c lib/ipv4_text.c net/arp.c net/ipv4.c net/udp.c net/tcp/tcp.c net/tcp/tcp_in.c net/tcp/tcp_isn.c net/tcp/tcp_pools.c net/tcp/tcp_admit.c tests/unit/net/fake_entropy.c net/tcp/tcp_hdr.c net/tcp/tcp_out.c net/tcp/tcp_budget.c net/tcp/tcp_sack.c net/tcp/tcp_service.c mm/pool.c mm/dma.c lib/timer.c lib/log.c tests/unit/net/fake_netdev.c
/*
 * TCP frame trains (netdev.h NETBUF_TX_TRAIN): a long run's full segments go to a device
 * with NETDEV_F_TX_TRAIN several to a netbuf, and the wire sees exactly the frames the
 * lone-frame path sends, payload in host or device memory; a train the device has no room
 * for is refused whole and sent later, in order; one completion releases every reference
 * of a train.
 */
#include "lib/poller.h"
#include "tests/unit/net/tcp/tcp_test.h"

#define TRAIN_FEATURES (NETDEV_F_RX_SPLIT | NETDEV_F_TX_CSUM)

static void train_setup(void)
{
	net_test_start(TRAIN_FEATURES);
}

TestSuite(tcp_train, .init = train_setup, .fini = net_teardown);

static uint8_t pattern[65536];
static struct fake_frame got[2][FAKE_TX_MAX];
static unsigned ngot[2];
static struct netdev_frag_owner counting_owner = { "test", frag_count_release };

static void fill(void)
{
	for (size_t i = 0; i < sizeof(pattern); i++)
		pattern[i] = (uint8_t)(i * 31 + (i >> 8));
}

/* Queue len bytes of pattern as one host-memory fragment (owner counting_owner) on an
 * open connection whose windows allow 40 segments, and send them all (tcp_flush). */
static void send_pattern(struct tcp_sock *s, size_t len)
{
	struct netdev_frag f = { .addr = dma_addr_host(pattern), .len = (uint32_t)len, .owner = &counting_owner };

	s->cwnd = 40 * 1460;
	cr_assert_eq(tcp_send_frags(s, &f, 1), 0);
	tcp_flush(s);
}

/* The end of a capture: the frames sent in got[run] (none in a train when train is off),
 * all len bytes acknowledged, each of the nfrags fragments' references released once, the
 * connection and its listener l closed. */
static void capture_end(unsigned run, bool train, struct tcp_sock *l, uint32_t iss, size_t len, unsigned nfrags)
{
	ngot[run] = fnd.ntx;
	memcpy(got[run], fnd.tx, fnd.ntx * sizeof(fnd.tx[0]));
	if (!train)
		cr_assert_eq(fnd.tx_trains, 0);
	peer_seg(TCP_ACK, 1001, iss + 1 + (uint32_t)len, 65535, NULL, 0, NULL, 0);
	cr_assert_eq(frags_released, nfrags, "each fragment's reference released once");
	tcp_abort(accepted);
	close_listener(l);
}

/* On a fresh stack (trains on or off), len bytes in one pass: the frames captured in
 * got[run]; then everything acknowledged and the connection closed. */
static void capture_run(unsigned run, size_t len, bool train)
{
	struct tcp_sock *l;

	if (!train)
		fnd.dev.features &= ~NETDEV_F_TX_TRAIN;
	fnd.tx_trains = 0;
	frags_released = 0;
	uint32_t iss = open_passive(&l, 1000, 65535, opt_mss1460, 4);
	send_pattern(accepted, len);
	capture_end(run, train, l, iss, len, 1);
}

/* Frames of both runs equal byte for byte but for the IPv4 identification and header
 * checksum (the counter runs on across the two stacks), the identification stepping from
 * frame to frame as it does alone. */
static void assert_same_frames(size_t len)
{
	cr_assert_eq(ngot[0], ngot[1], "%zu bytes: %u frames alone, %u in trains", len, ngot[0], ngot[1]);
	for (unsigned i = 1; i < ngot[0]; i++) {
		const uint8_t *p = got[0][i].b, *q = got[0][i - 1].b, *pt = got[1][i].b, *qt = got[1][i - 1].b;
		cr_assert_eq((uint16_t)((p[18] << 8 | p[19]) - (q[18] << 8 | q[19])),
			     (uint16_t)((pt[18] << 8 | pt[19]) - (qt[18] << 8 | qt[19])),
			     "%zu bytes: frame %u's identification steps as alone", len, i);
	}
	for (unsigned i = 0; i < ngot[0]; i++) {
		struct fake_frame *a = &got[0][i], *b = &got[1][i];
		cr_assert_eq(a->len, b->len, "%zu bytes: frame %u's length", len, i);
		memset(a->b + 18, 0, 2);
		memset(b->b + 18, 0, 2);
		memset(a->b + 24, 0, 2);
		memset(b->b + 24, 0, 2);
		cr_assert_eq(memcmp(a->b, b->b, a->len), 0, "%zu bytes: frame %u differs", len, i);
	}
}

/* Runs of 1 to 2 trains and a frame (the run's first frame goes alone, then trains of
 * FAKE_TX_TRAIN_MAX), whole segments and with a short last one: the same frames. */
Test(tcp_train, frames_on_the_wire_are_the_lone_frames_path)
{
	fill();
	for (unsigned segs = 1; segs <= 2 + 2 * FAKE_TX_TRAIN_MAX; segs++) {
		for (unsigned tail = 0; tail < 2; tail++) {
			size_t len = segs * 1460 + tail * 700;
			capture_run(0, len, false);
			net_teardown();
			net_test_start(TRAIN_FEATURES);
			capture_run(1, len, true);
			if (segs >= 5)
				cr_assert_gt(fnd.tx_trains, 0, "%zu bytes went in trains", len);
			assert_same_frames(len);
			net_teardown();
			net_test_start(TRAIN_FEATURES);
		}
	}
}

/* Queue len bytes of pattern as three fragments, the middle one [a, b) in device memory
 * (the NIC gathers it by bus address: a pointer here, at most dev_max bytes a frame), on a
 * fresh stack (trains on or off), and send them all: the frames in got[run], the payload
 * bytes TCP counted by class in dev_bytes[run]; then everything acknowledged and the
 * connection closed. */
static uint64_t dev_bytes[2], host_bytes[2];
static void capture_mixed(unsigned run, size_t len, size_t a, size_t b, bool train, unsigned dev_max)
{
	struct tcp_sock *l;
	struct netdev_frag f[3] = {
		{ .addr = dma_addr_host(pattern), .len = (uint32_t)a, .owner = &counting_owner },
		{ .addr = dma_addr_device((uint64_t)(uintptr_t)(pattern + a)), .len = (uint32_t)(b - a),
		  .owner = &counting_owner, .provider = 2 },
		{ .addr = dma_addr_host(pattern + b), .len = (uint32_t)(len - b), .owner = &counting_owner },
	};

	if (!train)
		fnd.dev.features &= ~NETDEV_F_TX_TRAIN;
	fnd.dev.features |= NETDEV_F_TX_GATHER_DEV;
	fnd.dev.tx_dev_frags = 1;
	fnd.dev.tx_dev_bytes = dev_max;
	fnd.tx_trains = fnd.tx_train_dev_frames = 0;
	frags_released = 0;
	uint64_t dev0 = tcp_stats()->tx_payload_device, host0 = tcp_stats()->tx_payload_host;
	uint32_t iss = open_passive(&l, 1000, 65535, opt_mss1460, 4);
	accepted->cwnd = 40 * 1460;
	cr_assert_eq(tcp_send_frags(accepted, f, 3), 0);
	tcp_flush(accepted);
	while (accepted->snd_nxt != iss + 1 + (uint32_t)len && poll_pass()) /* (frames cut short: pass by pass) */
		;
	dev_bytes[run] = tcp_stats()->tx_payload_device - dev0;
	host_bytes[run] = tcp_stats()->tx_payload_host - host0;
	cr_assert_eq(fnd.tx_over_limit, 0, "no frame beyond the device's gather limits");
	capture_end(run, train, l, iss, len, 3);
}

/* Device-memory payload (the CMB mode's read data) goes in trains too, within the device's
 * tx_dev_bytes (one device piece a frame): a run with host memory before and after it, the
 * class boundaries anywhere in a segment, gives the lone-frame path's frames byte for byte,
 * and TCP counts every byte in its class as that path does. */
Test(tcp_train, device_memory_payload_goes_in_trains_with_the_lone_frames_bytes)
{
	static const size_t cuts[][2] = { { 1460, 1460 + 20 * 1460 }, { 3000, 3000 + 17 * 1460 + 333 },
					  { 100, 30000 }, { 2920, 2920 + 9 * 1460 } };
	fill();
	for (unsigned c = 0; c < sizeof(cuts) / sizeof(cuts[0]); c++) {
		size_t a = cuts[c][0], b = cuts[c][1], len = b + 5 * 1460 + 99;
		capture_mixed(0, len, a, b, false, 4096);
		net_teardown();
		net_test_start(TRAIN_FEATURES);
		capture_mixed(1, len, a, b, true, 4096);
		/* all but the device part's first frame (alone after the train before it: a
		 * train's payload is of one class) and the one it shares with host memory */
		cr_assert_geq(fnd.tx_train_dev_frames, (b - a) / 1460 - 2, "cut %u: %llu device frames in trains", c,
			      (unsigned long long)fnd.tx_train_dev_frames);
		assert_same_frames(len);
		cr_assert_eq(dev_bytes[1], b - a, "cut %u: device bytes counted %llu", c,
			     (unsigned long long)dev_bytes[1]);
		cr_assert_eq(dev_bytes[0], dev_bytes[1]);
		cr_assert_eq(host_bytes[0], host_bytes[1]);
		net_teardown();
		net_test_start(TRAIN_FEATURES);
	}
}

/* Nor does a train carry a device piece longer than tx_dev_bytes: with a limit under the
 * MSS, device-memory segments go alone, cut to it, as on the lone-frame path. */
Test(tcp_train, no_train_of_device_pieces_past_the_devices_limit)
{
	fill();
	size_t a = 1460, b = 1460 + 20 * 1460, len = b + 5 * 1460;
	capture_mixed(0, len, a, b, false, 1000);
	net_teardown();
	net_test_start(TRAIN_FEATURES);
	capture_mixed(1, len, a, b, true, 1000); /* (no frame past the limit: asserted there) */
	cr_assert_eq(fnd.tx_train_dev_frames, 0, "no device piece in a train");
	assert_same_frames(len);
	cr_assert_eq(dev_bytes[1], b - a);
}

/* A train the ring has no room for is refused whole: none of its frames goes out, SND.NXT
 * stays before it, the device is stopped and the socket waits for its turn; after the
 * reclaim's wake the rest goes, in order, and nothing counts as sent twice. */
Test(tcp_train, a_train_without_ring_room_is_refused_whole)
{
	struct tcp_sock *l;
	struct tcp_info i;

	fill();
	uint32_t iss = open_passive(&l, 1000, 65535, opt_mss1460, 4);
	struct tcp_sock *s = accepted;
	/* the first frame (a context, its headers, its piece) and one train of
	 * FAKE_TX_TRAIN_MAX frames fit, the next train is one descriptor short */
	fnd.tx_ring = 3 + (1 + 2 * FAKE_TX_TRAIN_MAX) + 2 * FAKE_TX_TRAIN_MAX;
	send_pattern(s, (2 + 2 * FAKE_TX_TRAIN_MAX) * 1460);
	cr_assert_eq(fnd.tx_refused, 1);
	cr_assert_eq(fnd.tx_trains, 1);
	cr_assert_eq(fnd.ntx, 1 + FAKE_TX_TRAIN_MAX, "no frame of the refused train went out");
	cr_assert(fnd.dev.tx_stopped);
	cr_assert_eq(tcp_stats()->tx_refused, 1);
	tcp_get_info(s, &i);
	cr_assert_eq(i.snd_nxt, iss + 1 + (1 + FAKE_TX_TRAIN_MAX) * 1460, "SND.NXT before the refused train");
	cr_assert_eq(poll_pass(), 0, "no turn while the device is stopped");
	fake_netdev_tx_reclaim(&fnd, fnd.nlate);
	cr_assert_gt(poll_pass(), 0);
	while (fnd.nlate) { /* the ring refuses again as it fills: reclaim and take turns */
		fake_netdev_tx_reclaim(&fnd, fnd.nlate);
		poll_pass();
	}
	sent_in_order_acked(s, iss, 2 + 2 * FAKE_TX_TRAIN_MAX, pattern);
	cr_assert_eq(frags_released, 1);
	tcp_abort(s);
	close_listener(l);
	fake_netdev_tx_reclaim(&fnd, fnd.nlate); /* (the reset) */
}

/* A train holds one reference on the send entry its frames' pieces come from until its one
 * completion: the data acknowledged before the device is done stays referenced; the
 * completion of each netbuf (lone frames, two trains: one netbuf for several frames) gives
 * every reference back once, and the pools end empty (net_teardown). */
Test(tcp_train, one_completion_releases_every_reference_of_a_train)
{
	struct tcp_sock *l;
	size_t in_use0, cap;
	uint64_t fail;

	fill();
	frags_released = 0;
	uint32_t iss = open_passive(&l, 1000, 65535, opt_mss1460, 4);
	struct tcp_sock *s = accepted;
	fnd.tx_late = true;
	netbuf_pool_stats(&in_use0, &cap, &fail);
	send_pattern(s, (1 + 2 * FAKE_TX_TRAIN_MAX) * 1460);
	cr_assert_eq(fnd.ntx, 1 + 2 * FAKE_TX_TRAIN_MAX);
	cr_assert_eq(fnd.tx_trains, 2);
	size_t in_use;
	netbuf_pool_stats(&in_use, &cap, &fail);
	cr_assert_eq(in_use - in_use0, fnd.nlate, "a netbuf a lone frame or train held");
	struct tcp_sndent *e = container_of(s->sndq.next, struct tcp_sndent, node);
	cr_assert_eq(e->inflight, fnd.nlate, "one reference on the entry a netbuf (%u), not one a frame",
		     e->inflight);
	cr_assert_leq(fnd.nlate, fnd.ntx - (FAKE_TX_TRAIN_MAX - 1u), "%u netbufs for %u frames", fnd.nlate, fnd.ntx);
	peer_seg(TCP_ACK, 1001, iss + 1 + (1 + 2 * FAKE_TX_TRAIN_MAX) * 1460, 65535, NULL, 0, NULL, 0);
	cr_assert_eq(frags_released, 0, "the device still reads the data");
	fake_netdev_tx_complete(&fnd);
	cr_assert_eq(frags_released, 1, "frags_released once, after the last completion");
	netbuf_pool_stats(&in_use, &cap, &fail);
	cr_assert_eq(in_use, in_use0);
	fnd.tx_late = false;
	tcp_abort(s);
	close_listener(l);
}

/* How the direct flushes' cases queue what they send: one segment or less (tcp_flush's
 * tcp_output_one) as bytes placed in an entry of their own (a response), copied into a
 * chunk, a user fragment; up to three (tcp_output_short) as a PDU: a 24-byte header placed,
 * its data a user fragment in host or device memory (the device taking one device piece
 * of at most 4 KiB a frame, as QEMU's e1000e), a 24-byte response placed. */
enum one_kind { ONE_PLACED, ONE_COPIED, ONE_FRAG, ONE_PDU, ONE_PDU_DEV };

/* Queue kind's bytes (len: the tail's, or the PDU's data) on s; returns the bytes queued. */
static size_t queue_one(struct tcp_sock *s, enum one_kind kind, size_t len)
{
	struct netdev_frag f = { .addr = dma_addr_host(pattern + 3), .len = (uint32_t)len, .owner = &counting_owner };

	if (kind == ONE_COPIED) {
		cr_assert_eq(tcp_send_copy(s, pattern + 3, len), (long)len);
		return len;
	}
	if (kind == ONE_FRAG) {
		cr_assert_eq(tcp_send_frags(s, &f, 1), 0);
		return len;
	}
	size_t hl = kind == ONE_PLACED ? len : 24;
	uint8_t *p = tcp_send_place_frags(s, hl, kind == ONE_PLACED ? 0 : len + 24, 1);
	cr_assert_not_null(p);
	memcpy(p, pattern + 9, hl);
	if (kind == ONE_PLACED) {
		tcp_send_placed(s, hl);
		return len;
	}
	if (kind == ONE_PDU_DEV) {
		fnd.dev.tx_dev_frags = 1;
		fnd.dev.tx_dev_bytes = 4096;
		f.addr = dma_addr_device((uint64_t)(uintptr_t)(pattern + 3));
		f.provider = 1;
	}
	tcp_send_placed_frags(s, hl, &f, 1);
	p = tcp_send_place(s, 24, 0);
	cr_assert_not_null(p);
	memcpy(p, pattern + 50, 24);
	tcp_send_placed(s, 24);
	return len + 48;
}

/* On a fresh stack, after the peer's request of req bytes (owing its ACK), with a first
 * tail already acknowledged when again, and behind a response placed, sent and not yet
 * acknowledged when behind (queue depth: the last PDU's response still in the send queue),
 * a tail of len bytes (kind) queued and pushed by tcp_flush (one_step) or by
 * tcp_output_work's pass (what tcp_flush called before): the frames captured in got[run];
 * the socket's sequence and timing state and the counters checked equal across the two
 * runs by the caller through *info and *stats. A placed header or response behind the sent
 * response takes an entry of its own, no chunk. */
static void capture_one(unsigned run, enum one_kind kind, size_t len, size_t req, bool again, bool behind,
			bool one_step, struct tcp_info *info, struct tcp_stats *stats, uint64_t *dev_host)
{
	struct tcp_sock *l;

	fnd.tx_trains_mixed = 0;
	uint32_t iss = open_passive(&l, 1000, 65535, opt_mss1460, 4);
	struct tcp_sock *s = accepted;
	uint32_t una = iss + 1, rcv = 1001;

	if (again) { /* (a socket that sent and was acknowledged before: cursor, timer, RTT) */
		cr_assert_eq(tcp_send_copy(s, pattern + 7, 24), 24);
		tcp_flush(s);
		una += 24;
		peer_seg(TCP_ACK, rcv, una, 65535, NULL, 0, NULL, 0);
	}
	size_t before = 0;
	if (behind) { /* (a response: placed in an entry of its own, sent, unacknowledged) */
		uint8_t *p = tcp_send_place(s, 24, 0);
		cr_assert_not_null(p);
		memcpy(p, pattern + 60, 24);
		tcp_send_placed_flush(s, 24);
		cr_assert_eq(tcp_output_idle(s), true, "the response went");
		before = 24;
	}
	if (req) { /* (one segment: its ACK delayed, owed; the tail carries it) */
		peer_seg(TCP_ACK | TCP_PSH, rcv, una, 65535, pattern + 100, req, NULL, 0);
		rcv += (uint32_t)req;
		uint8_t sink[64];
		while (tcp_recv_copy(s, sink, sizeof(sink)))
			;
		cr_assert(s->ack_delayed, "an ACK owed");
	}
	fake_netdev_clear(&fnd);
	size_t total = queue_one(s, kind, len);
	if (kind != ONE_COPIED)
		cr_assert_eq(s->chunks_tx, 0, "kind %u, %zu bytes: no chunk for what is placed", kind, len);
	uint64_t host0 = fnd.dev.stats.tx_bytes_host;
	if (one_step)
		tcp_flush(s);
	else if (!tcp_output_idle(s))
		tcp_output_work(s, false);
	*dev_host = fnd.dev.stats.tx_bytes_host - host0;
	ngot[run] = fnd.ntx;
	memcpy(got[run], fnd.tx, fnd.ntx * sizeof(fnd.tx[0]));
	tcp_get_info(s, info);
	*stats = *tcp_stats();
	cr_assert(s->t_rexmit.armed, "the retransmission timer runs");
	cr_assert(s->timing, "the segment is timed");
	cr_assert(!s->ack_now && !s->ack_delayed && !s->ack_pass_end, "its ACK went with it");
	peer_seg(TCP_ACK, rcv, una + (uint32_t)(before + total), 65535, NULL, 0, NULL, 0);
	tcp_abort(s);
	close_listener(l);
}

/* The direct flushes (tcp_output_one, tcp_output_short) send the frames tcp_output_work's
 * pass sends for the same queue, byte for byte (identification and IPv4 checksum apart, as
 * above), with the same bookkeeping (SND.NXT, the counters) and the same ACK (RCV.NXT, the
 * window): a response placed in its entry (copied into the frame), bytes in a chunk and a
 * user fragment (one piece), short and MSS-sized; PDUs of two and three segments, their
 * data in host or device memory (frames cut to the device's limits: the pass sends the
 * rest); with and without an ACK owed, on a fresh socket and one that sent before, behind a
 * response sent and not yet acknowledged (queue depth: the PDU's header still in an entry of
 * its own, its train found from the queue's end); with trains and with segmentation offload (the pass then sends the PDU as one TSO frame). A
 * PDU of two or three segments goes from tcp_output_short as one mixed train (netdev.h
 * NETBUF_TX_TRAIN_MIXED) on a device with trains, as lone frames without: both the pass's
 * frames. */
Test(tcp_train, frames_on_the_wire_are_the_one_step_path)
{
	static const size_t lens[] = { 1, 24, 700, 1460, 2000, 2896, 4096 };
	static struct fake_frame pass[FAKE_TX_MAX]; /* (the pass's frames, compared twice) */
	uint32_t feats[2] = { TRAIN_FEATURES, TRAIN_FEATURES | NETDEV_F_TSO };

	fill();
	for (unsigned f = 0; f < 2; f++)
		for (unsigned k = ONE_PLACED; k <= ONE_PDU_DEV; k++)
			for (unsigned i = 0; i < sizeof(lens) / sizeof(lens[0]); i++)
				for (unsigned v = 0; v < 8; v++) {
					size_t len = lens[i], req = (v & 1) ? 200 : 0;
					bool again = v & 2, behind = v & 4;
					struct tcp_info info[2];
					struct tcp_stats st[2];
					uint64_t host[2];
					if ((k == ONE_PLACED && len > 32) || (k < ONE_PDU && len > 1460) ||
					    (k >= ONE_PDU && len < 700))
						continue; /* (a placed PDU is small; larger ones are chunks, as copied) */
					net_teardown();
					net_test_start(feats[f]);
					capture_one(0, (enum one_kind)k, len, req, again, behind, false, &info[0], &st[0], &host[0]);
					memcpy(pass, got[0], ngot[0] * sizeof(got[0][0]));
					for (unsigned t = 0; t < 2; t++) { /* (the one-step path without trains, with) */
					memcpy(got[0], pass, ngot[0] * sizeof(got[0][0])); /* (assert_same_frames clears) */
					net_teardown();
					net_test_start(feats[f]);
					if (!t)
						fnd.dev.features &= ~NETDEV_F_TX_TRAIN;
					capture_one(1, (enum one_kind)k, len, req, again, behind, true, &info[1], &st[1], &host[1]);
					bool mixed = t && f == 0 && k >= ONE_PDU && len + 48 > 1460;
					cr_assert_eq(fnd.tx_trains_mixed, mixed ? 1u : 0u, "kind %u, %zu bytes: %s", k, len,
						     mixed ? "one mixed train" : "no mixed train");
					cr_assert_geq(ngot[0], 1, "kind %u, %zu bytes: sent", k, len);
					assert_same_frames(len);
					cr_assert_eq(info[0].snd_nxt, info[1].snd_nxt);
					cr_assert_eq(info[0].snd_una, info[1].snd_una);
					cr_assert_eq(info[0].rto_ns, info[1].rto_ns);
					cr_assert_eq(info[0].rcv_wnd, info[1].rcv_wnd);
					cr_assert_eq(info[0].segs_out, info[1].segs_out);
					cr_assert_eq(st[0].tx_payload_host, st[1].tx_payload_host);
					cr_assert_eq(st[0].segs_out, st[1].segs_out);
					cr_assert_eq(host[0], host[1], "the device's host bytes");
					}
				}
}
