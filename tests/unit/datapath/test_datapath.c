// sources: tests/unit/datapath/datapath.c drivers/nic/netdev.c net/net.c lib/ipv4_text.c net/arp.c net/ipv4.c net/udp.c net/tcp/tcp.c net/tcp/tcp_in.c net/tcp/tcp_admit.c net/tcp/tcp_pools.c net/tcp/tcp_isn.c tests/unit/net/fake_entropy.c net/tcp/tcp_hdr.c net/tcp/tcp_out.c net/tcp/tcp_budget.c net/tcp/tcp_sack.c net/tcp/tcp_service.c tests/unit/net/fake_netdev.c mm/pool.c mm/dma.c lib/timer.c lib/log.c drivers/nvme/target/nvmet_tcp.c drivers/nvme/target/nvmet_dram_reason.c drivers/nvme/target/nvmet_tcp_buf.c drivers/nvme/target/nvmet_tcp_rx.c drivers/nvme/target/nvmet_tcp_pdu.c drivers/nvme/target/nvmet_core.c drivers/nvme/target/nvmet_fabrics.c drivers/nvme/target/nvmet_auth.c drivers/nvme/target/nvmet_auth_msg.c drivers/nvme/target/nvmet_auth_key.c lib/crypto.c drivers/nvme/target/nvmet_admin.c drivers/nvme/target/nvmet_ana.c drivers/nvme/target/nvmet_referral.c drivers/nvme/target/nvmet_io.c drivers/nvme/target/nvmet_config.c drivers/nvme/target/nvmet_bdev_nvme.c drivers/nvme/target/nvmet_bdev_ram.c drivers/nvme/nvme.c drivers/nvme/nvme_shutdown.c lib/shutdown.c drivers/nvme/nvme_reset.c drivers/nvme/nvme_prp.c drivers/nvme/nvme_queue.c drivers/nvme/nvme_cmb.c drivers/nvme/nvme_status.c lib/crc32.c tests/unit/drivers/nvme/fake_nvme.c tests/unit/drivers/nvme/target/fake_nvmet_transport.c tests/unit/drivers/nvme/target/nvme_tcp_host.c
// libs: -lmbedcrypto
/*
 * The executable data path (tests/unit/datapath/datapath.h, docs/architecture.md): a
 * host's ICReq, Connect, 4 KiB (in-capsule) and 128 KiB (R2T + H2CData) writes and
 * reads through the real net/ stack, the real NVMe/TCP target and the real NVMe host
 * driver over the fake NIC and the fake drive. The bytes are checked on the fake drive's
 * media and back on the wire; after each test every connection, queue and controller is
 * freed, every NIC buffer is back and every pool is empty. The DRAM mode (e1000e's plain
 * receive, nvmet.p2p = off) runs Linux's queue depth against a slow drive.
 */
#include <criterion/criterion.h>
#include <string.h>
#include "drivers/nvme/target/nvmet.h"
#include "drivers/nvme/target/nvmet_tcp.h"
#include "drivers/nvme/target/nvmet_tcp_pdu.h"
#include "lib/clock.h"
#include "mm/dma.h"
#include "net/tcp/tcp.h"
#include "tests/unit/drivers/nvme/target/nvme_tcp_host.h"
#include "tests/unit/unit_support.h"
#include "datapath.h"

static struct dp d;
static uint8_t wbuf[128 * 1024], rbuf[128 * 1024];
static uint8_t burst[8 * 128 * 1024]; /* the whole fake drive (FAKE_NSZE) */

static void fill(uint8_t *b, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)(i * 131 + seed + (i >> 9));
}

static void up(bool ddgst)
{
	unit_pools_begin();
	cr_assert_eq(dp_start(&d, ddgst), 0, "%s", d.why);
}

static void down(void)
{
	cr_assert_eq(dp_stop(&d), 0, "%s", d.why);
	unit_pools_end();
}

/* Write len bytes at slba, check the drive's media, read them back over the wire. */
static void write_then_read(uint16_t cid, uint64_t slba, uint32_t len, unsigned seed)
{
	uint16_t status = 0xffff;
	fill(wbuf, len, seed);
	cr_assert_eq(dp_write(&d, cid, slba, wbuf, len, &status), 0, "%s", d.why);
	cr_assert_eq(status, 0, "write status 0x%x", status);
	cr_assert_eq(memcmp(d.drive.media + slba * 512, wbuf, len), 0, "the bytes on the drive");
	memset(rbuf, 0, len);
	cr_assert_eq(dp_read(&d, (uint16_t)(cid + 1), slba, rbuf, len, &status), 0, "%s", d.why);
	cr_assert_eq(status, 0, "read status 0x%x", status);
	cr_assert_eq(memcmp(rbuf, wbuf, len), 0, "the bytes back on the wire");
}

Test(datapath, write_and_read_4k_in_capsule_and_128k_through_r2t)
{
	up(false);
	const struct nvmet_tcp_stats *st = nvmet_tcp_stats();
	write_then_read(10, 8, 4096, 1);
	cr_assert_eq(st->r2ts, 0, "4 KiB goes in the capsule");
	write_then_read(20, 256, 128 * 1024, 2);
	cr_assert_eq(st->r2ts, 1, "128 KiB after an R2T");
	cr_assert_eq(st->h2c_pdus, 1, "one H2CData PDU (MAXH2CDATA 128 KiB)");
	cr_assert_eq(st->p2p_writes, 2, "both writes read by the drive where the NIC put them");
	cr_assert_eq(st->gathers, 0, "no write copied");
	cr_assert_eq(st->dram_cmds[NVMET_TCP_DRAM_NO_CMB], 2, "reads through DRAM: no device memory in the harness");
	cr_assert_eq(d.drive.io_commands, 4, "one NVMe command per host I/O");
	/* the fuzzer's liveness check: a new controller on two fresh connections is served */
	cr_assert_eq(dp_liveness(&d), 0, "%s", d.why);
	cr_assert_eq(d.drive.io_commands, 6, "its Write and Read reached the drive");
	down();
}

/* The CMB mode's reads (dp_opts.cmb_reads): the drive writes the data into its CMB, the NIC
 * gathers it from there, the bytes come back right and the device memory is freed. */
Test(datapath, reads_with_their_data_in_the_drives_cmb)
{
	struct dp_opts o = { .nic_features = NETDEV_F_RX_SPLIT | NETDEV_F_TX_GATHER_DEV, .cmb_reads = true };
	unit_pools_begin();
	cr_assert_eq(dp_start_opts(&d, &o), 0, "%s", d.why);
	const struct nvmet_tcp_stats *st = nvmet_tcp_stats();
	cr_assert(d.drive.cmse, "the drive's CMB is enabled for data");
	write_then_read(10, 8, 4096, 1);
	write_then_read(20, 256, 128 * 1024, 2);
	cr_assert_eq(st->p2p_reads, 2, "both reads through device memory");
	cr_assert_eq(st->p2p_read_bytes, 4096 + 128 * 1024);
	cr_assert_eq(st->dram_cmds[NVMET_TCP_DRAM_NO_CMB], 0);
	cr_assert_eq(dp_cmb_allocs, 2);
	cr_assert_eq(d.drive.cmb_silent_drops, 0);
	down(); /* (dp_stop fails while a piece of the CMB is still handed out) */
}

Test(datapath, data_digests)
{
	up(true);
	write_then_read(30, 0, 4096, 3);
	write_then_read(40, 1024, 128 * 1024, 4);
	cr_assert_eq(nvmet_tcp_stats()->ddgst_errors, 0);
	down();
}

Test(datapath, deterministic)
{
	uint64_t passes, in, out;
	up(false);
	write_then_read(50, 64, 128 * 1024, 5);
	passes = d.passes, in = d.frames_in, out = d.frames_out;
	down();
	up(false);
	write_then_read(50, 64, 128 * 1024, 5);
	cr_assert_eq(d.passes, passes, "the same poll-loop passes");
	cr_assert_eq(d.frames_in, in, "the same frames in");
	cr_assert_eq(d.frames_out, out, "the same frames out");
	cr_assert_gt(in, 128 * 1024 / DP_MSS, "the write went through the NIC in MSS segments");
	cr_log_info("128 KiB write + read: %llu poll-loop passes, %llu frames in, %llu frames out",
		    (unsigned long long)passes, (unsigned long long)in, (unsigned long long)out);
	down();
}

/* The DRAM mode (nic.rx_mode = plain, nvmet.p2p = off) with Linux's queue depth: every
 * frame's payload is copied into host memory by the stack and held by the target from the
 * R2T to the drive's completion. 32 x 128 KiB writes queued at once (twice) must all complete (a
 * receive window the buffers cannot hold, or a pool that runs dry with nothing coming
 * back, stalls them: "R2T data did not come in time"), the bytes on the drive, every
 * buffer back at the end. */
Test(datapath, dram_mode_128k_writes_at_queue_depth_32)
{
	uint16_t status[32];
	unit_pools_begin();
	struct dp_opts o = { .nic_features = FAKE_NETDEV_PLAIN, .wscale = true, .mdts = 6 /* 256 KiB */ };
	cr_assert_eq(dp_start_opts(&d, &o), 0, "%s", d.why);
	nvmet_tcp_set_p2p(false);
	dp_drive_period(&d, 5);
	fill(burst, sizeof(burst), 7);
	const struct tcp_stats *ts = tcp_stats();
	uint64_t host0 = ts->rx_payload_host;
	for (unsigned round = 0; round < 2; round++) {
		cr_assert_eq(dp_write_burst(&d, (uint16_t)(100 + 32 * round), 32, 8, 0, burst, 128 * 1024, status), 0, "round %u: %s", round,
			     d.why);
		for (unsigned i = 0; i < 32; i++)
			cr_assert_eq(status[i], 0, "write %u: status 0x%x", i, status[i]);
		cr_assert_eq(memcmp(d.drive.media, burst, sizeof(burst)), 0, "the bytes on the drive");
	}
	const struct nvmet_tcp_stats *st = nvmet_tcp_stats();
	cr_assert_eq(st->p2p_writes, 0, "nothing in device memory");
	cr_assert_eq(ts->rx_payload_device, 0, "plain mode: every payload copied by the stack");
	cr_assert_eq(ts->chunk_share_denied, 0, "the windows promised only what the chunks hold");
	cr_assert_eq(ts->rx_payload_host - host0, 2 * 32 * (72 + 24 + 128 * 1024), "nothing sent twice");
	cr_assert_eq(st->dram_cmds[NVMET_TCP_DRAM_OFF] + st->dram_cmds[NVMET_TCP_DRAM_NIC_DRAM], 64, "all in DRAM");
	/* MDTS-sized writes (256 KiB: more segments than one socket's share of chunks) */
	fill(burst, sizeof(burst), 9);
	cr_assert_eq(dp_write_burst(&d, 300, 16, 4, 0, burst, 256 * 1024, status), 0, "256 KiB: %s", d.why);
	for (unsigned i = 0; i < 16; i++)
		cr_assert_eq(status[i], 0, "256 KiB write %u: status 0x%x", i, status[i]);
	cr_assert_eq(memcmp(d.drive.media, burst, sizeof(burst)), 0, "the bytes on the drive");
	uint16_t rs;
	cr_assert_eq(dp_read(&d, 200, 7 * 256, rbuf, 128 * 1024, &rs), 0, "%s", d.why);
	cr_assert_eq(memcmp(rbuf, burst + 7 * 128 * 1024, 128 * 1024), 0, "the last slot read back");
	nvmet_tcp_set_p2p(true);
	down();
}


static void rxq_of_io(const struct tcp_sock *s, void *ctx)
{
	struct tcp_info ti;
	tcp_get_info(s, &ti);
	if (ti.lport == DP_PORT && ti.rport == d.io.sport)
		*(size_t *)ctx = ti.rxq_bytes;
}

/* The segments before a PDU's last byte (its first too: the common header is looked at
 * where it lies, nvme_tcp_rx_peek_len) stay in the socket while
 * TCP's advertised window already takes the rest of the PDU (no poll-loop pass takes them,
 * nvmet_tcp's rx_waits); the segment that completes the PDU runs the command, and the bytes
 * are right on the drive. Then a 128 KiB write and read whose H2CData waits the same way. */
Test(datapath, the_rest_of_a_pdu_waits_in_the_socket_within_the_window)
{
	static uint8_t capsule[NTH_CAPSULE_MAX];
	struct nvme_sqe sqe = nth_rw_sqe(true, 7, 1, 16, 8, 4096);
	struct nth_pdu p;
	size_t rxq = 0;

	up(false);
	fill(wbuf, 4096, 3);
	size_t n = nth_capsule(capsule, sizeof(capsule), false, false, &sqe, wbuf, 4096);
	cr_assert_gt(n, 2 * DP_MSS, "a capsule of three segments");
	uint64_t waits = nvmet_tcp_stats()->rx_waits;
	cr_assert_eq(dp_send_raw(&d, capsule, 2 * DP_MSS), 0, "%s", d.why); /* header + data, more data */
	/* the first segment too: the PDU's length comes from its common header where it lies
	 * (one receive batch: one data event for both, net/tcp/tcp.h tcp_rx_flush) */
	cr_assert_eq(nvmet_tcp_stats()->rx_waits, waits + 1, "both segments wait in the socket");
	tcp_foreach(rxq_of_io, &rxq);
	cr_assert_eq(rxq, 2 * DP_MSS, "their bytes are still queued on the socket");
	cr_assert_eq(d.io.len, 0, "no response yet");
	cr_assert_eq(dp_send_raw(&d, capsule + 2 * DP_MSS, n - 2 * DP_MSS), 0, "%s", d.why);
	rxq = 1;
	tcp_foreach(rxq_of_io, &rxq);
	cr_assert_eq(rxq, 0, "the last segment took the whole PDU");
	cr_assert_eq(nth_parse(d.io.stream, d.io.len, &p), 1, "the CapsuleResp came");
	struct nth_resp r = { 0 };
	cr_assert_eq(nth_resp_feed(&r, &p), 1);
	cr_assert_eq(r.status, 0);
	memmove(d.io.stream, d.io.stream + p.plen, d.io.len - p.plen);
	d.io.len -= p.plen;
	cr_assert_eq(memcmp(d.drive.media + 16 * 512, wbuf, 4096), 0, "the bytes on the drive");
	waits = nvmet_tcp_stats()->rx_waits;
	write_then_read(20, 256, 128 * 1024, 9);
	cr_assert_gt(nvmet_tcp_stats()->rx_waits, waits, "H2CData segments waited in the socket too");
	down();
}

/* An H2CData PDU larger than the advertised window (128 KiB against 64 KiB: the host does
 * not scale its view of our window here) still waits in the socket for most of its
 * segments: the socket is taken only when it holds as much as the peer may still send
 * (half the window used), not per segment until the window takes all the rest. The host
 * never waits for a window (its send_bytes would step the clock), the bytes are right on
 * the drive and back. Before: the first half of every such PDU cost a pass per segment
 * (~45 of ~90 segments waited). */
Test(datapath, a_pdu_larger_than_the_window_waits_in_the_socket_until_half_the_window_is_used)
{
	/* a receive batch per segment: each one asks whether the PDU's rest may wait */
	struct dp_opts o = { .nic_features = NETDEV_F_RX_SPLIT, .seg_batches = true };
	unit_pools_begin();
	cr_assert_eq(dp_start_opts(&d, &o), 0, "%s", d.why);
	uint64_t waits = nvmet_tcp_stats()->rx_waits, t0 = clock_now_ns();
	write_then_read(30, 512, 128 * 1024, 11);
	uint64_t n = nvmet_tcp_stats()->rx_waits - waits;
	cr_assert_geq(n, 80, "segments of the 128 KiB H2CData that waited in the socket: %llu", (unsigned long long)n);
	cr_assert_eq(clock_now_ns(), t0, "the host never waited for the window (no clock step)");
	down();
}

/* A host that stalls in the middle of an H2CData PDU whose rest waits in the socket (no
 * pass takes its segments) is still timed out: the connection is closed by a deadline
 * (the R2T data deadline, or KATO first), every buffer it held comes back, and meanwhile
 * another host's connections, controller and I/O go on as if nothing happened. */
Test(datapath, a_host_stalled_inside_a_waiting_pdu_is_timed_out_and_blocks_nobody)
{
	static uint8_t pdu[NTH_CAPSULE_MAX + 128 * 1024 + 64];
	struct nvme_sqe sqe = nth_rw_sqe(true, 41, 1, 768, 256, 128 * 1024);
	struct nth_pdu p;
	uint16_t cccid, ttag;
	uint32_t r2to, r2tl;

	up(false);
	size_t n = nth_capsule(pdu, sizeof(pdu), false, false, &sqe, NULL, 0);
	cr_assert_eq(dp_send_raw(&d, pdu, n), 0, "%s", d.why);
	cr_assert_eq(nth_parse(d.io.stream, d.io.len, &p), 1, "the R2T came");
	cr_assert_eq(nth_r2t(&p, &cccid, &ttag, &r2to, &r2tl), 0);
	cr_assert_eq(r2tl, 128 * 1024);
	memmove(d.io.stream, d.io.stream + p.plen, d.io.len - p.plen);
	d.io.len -= p.plen;
	fill(wbuf, 128 * 1024, 5);
	n = nth_h2c(pdu, sizeof(pdu), false, false, cccid, ttag, 0, wbuf, 128 * 1024, true);
	uint64_t waits = nvmet_tcp_stats()->rx_waits, closed = nvmet_tcp_stats()->closed;
	cr_assert_eq(dp_send_raw(&d, pdu, 80 * 1024), 0, "%s", d.why); /* ... and nothing more */
	/* (its segments' data events: one per receive batch, net/tcp/tcp.h tcp_rx_flush) */
	cr_assert_gt(nvmet_tcp_stats()->rx_waits, waits, "its segments wait in the socket");
	cr_assert_eq(nvmet_tcp_stats()->closed, closed);
	/* another host goes on meanwhile */
	cr_assert_eq(dp_liveness(&d), 0, "%s", d.why);
	closed = nvmet_tcp_stats()->closed;
	unsigned conns = nvmet_tcp_conn_count();
	for (unsigned s = 0; s < 40 && nvmet_tcp_stats()->closed == closed; s++) {
		fake_clock_advance(NSEC_PER_SEC);
		for (unsigned i = 0; i < 4; i++)
			dp_pass(&d);
	}
	cr_assert_gt(nvmet_tcp_stats()->closed, closed, "the stalled connection was closed by a deadline");
	cr_assert_lt(nvmet_tcp_conn_count(), conns);
	down();
}

/* --- the ACK of a request held for its answer (net/tcp/tcp.h tcp_ack_hold) --- */

static void up_opts(const struct dp_opts *o)
{
	unit_pools_begin();
	cr_assert_eq(dp_start_opts(&d, o), 0, "%s", d.why);
}

/* n in-capsule 4 KiB writes, one at a time: the frames the appliance sent per write. */
static double frames_out_per_write(unsigned n)
{
	uint64_t out = d.frames_out;
	for (unsigned i = 0; i < n; i++) {
		uint16_t status = 0xffff;
		fill(wbuf, 4096, i);
		cr_assert_eq(dp_write(&d, (uint16_t)(30 + i), 8 * i, wbuf, 4096, &status), 0, "%s", d.why);
		cr_assert_eq(status, 0);
		cr_assert_eq(memcmp(d.drive.media + 8 * i * 512, wbuf, 4096), 0, "the bytes on the drive");
	}
	return (double)(d.frames_out - out) / n;
}

/* A 4 KiB write's three segments come in one receive batch (the NIC's burst); the batch's
 * ACK rides on the CapsuleResp: one frame per write instead of two. With a drive that
 * answers in the pass the command reached it (the harness's), the response goes before the
 * batch's end (the command ran inside the batch's data event: conn_rx_at_once), so no hold
 * is needed, even with net.tcp_ack_hold_us = 0; with a slower drive the batch ACK is held
 * for the response (tcp_ack_hold) while net.tcp_ack_hold_us lasts, else a bare ACK goes at
 * the batch's end, then the response. */
Test(datapath, the_ack_of_a_write_rides_on_its_response)
{
	struct dp_opts o = { .nic_features = NETDEV_F_RX_SPLIT };
	up_opts(&o);
	uint64_t held = tcp_stats()->ack_holds, expired = tcp_stats()->ack_hold_expired;
	/* one of the first writes' ACKs goes alone: the host used the window's first 16
	 * segments, it doubles (tcp_rcv_cap_grow), and an ACK that opens the window is not held */
	cr_assert_leq(frames_out_per_write(8), 9.0 / 8, "the CapsuleResp carries the ACK");
	cr_assert_eq(frames_out_per_write(8), 1.0, "the CapsuleResp carries the ACK");
	tcp_set_ack_hold_us(0);
	cr_assert_eq(frames_out_per_write(8), 1.0, "the response goes before the batch's end, with its ACK");
	cr_assert_eq(tcp_stats()->ack_holds, held, "nothing to hold: the response came first");
	/* a drive that answers 2 ms later, within a 40 ms hold: each batch ACK held */
	dp_drive_period(&d, 2);
	tcp_set_ack_hold_us(TCP_ACK_HOLD_US_MAX);
	cr_assert_eq(frames_out_per_write(8), 1.0, "the CapsuleResp carries the ACK");
	cr_assert_eq(tcp_stats()->ack_holds - held, 8, "each write's batch ACK held");
	cr_assert_eq(tcp_stats()->ack_hold_expired, expired, "none ran out");
	/* net.tcp_ack_hold_us = 0: a bare ACK at the batch's end, then the response */
	tcp_set_ack_hold_us(0);
	cr_assert_eq(frames_out_per_write(8), 2.0, "a bare ACK before each response");
	tcp_set_ack_hold_us(TCP_ACK_HOLD_US_DEFAULT);
	dp_drive_period(&d, 0);
	down();
}

/* The instruction count's drive (tests/bench/insn_datapath.c): one that runs what a pass
 * rang at the start of the next, as QEMU's and a real drive answer long after the pass
 * that rang them. The command still runs inside its data's event, but its response can
 * no longer go before the batch's end: the batch ACK is held for it, and the response
 * carries it. */
Test(datapath, a_drive_that_answers_a_pass_later_gets_each_write_s_ack_held)
{
	struct dp_opts o = { .nic_features = NETDEV_F_RX_SPLIT, .drive_later = true };
	up_opts(&o);
	cr_assert_leq(frames_out_per_write(8), 9.0 / 8, "the CapsuleResp carries the ACK");
	uint64_t held = tcp_stats()->ack_holds, commands = d.drive.io_commands, passes = d.passes;
	cr_assert_eq(frames_out_per_write(8), 1.0, "the CapsuleResp carries the ACK");
	cr_assert_eq(tcp_stats()->ack_holds - held, 8, "each write's batch ACK held for its response");
	cr_assert_eq(d.drive.io_commands - commands, 8);
	cr_assert_geq(d.passes - passes, 2 * 8, "a pass to submit, a later one to complete");
	down();
}

/* The harness's other mode: every segment a receive batch of its own (the batch ACK goes
 * after the 2nd of the capsule's 3 segments, before the capsule is whole: nothing to hold
 * it for). Writes and reads are served the same. */
Test(datapath, one_segment_per_receive_batch)
{
	struct dp_opts o = { .nic_features = NETDEV_F_RX_SPLIT, .seg_batches = true };
	up_opts(&o);
	write_then_read(10, 8, 4096, 1);
	write_then_read(20, 256, 128 * 1024, 2);
	cr_assert_eq(frames_out_per_write(4), 2.0, "the ACK after the 2nd segment, then the response");
	down();
}

/* A slow drive: no answer within net.tcp_ack_hold_us, the held ACK goes alone when it runs
 * out, long before the response. */
Test(datapath, a_held_ack_goes_alone_when_no_answer_comes)
{
	struct dp_opts o = { .nic_features = NETDEV_F_RX_SPLIT };
	up_opts(&o);
	dp_drive_period(&d, 5);
	uint64_t expired = tcp_stats()->ack_hold_expired;
	cr_assert_eq(frames_out_per_write(2), 2.0, "the ACK on the timer, then the response");
	cr_assert_eq(tcp_stats()->ack_hold_expired - expired, 2, "both holds ran out");
	dp_drive_period(&d, 0);
	down();
}

/* Liveness: a host whose congestion window is full after one write waits for the ACK before
 * it sends the next command. With a slow drive (5 ms) the held ACK goes after
 * net.tcp_ack_hold_us (the next 1 ms step of the harness's clock), not with the response: the
 * second write reaches the drive while the first runs, and the pair takes what one slow
 * command takes, not two. */
Test(datapath, ack_hold_sender_waits)
{
	uint16_t status[2];
	uint32_t capsule = NVME_TCP_CMD_HLEN + 4096;
	struct dp_opts o = { .nic_features = NETDEV_F_RX_SPLIT, .host_cwnd = capsule };
	up_opts(&o);
	dp_drive_period(&d, 5);
	fill(burst, 2 * 4096, 7);
	uint64_t steps = d.steps;
	cr_assert_eq(dp_write_capsules(&d, 40, 2, 64, burst, 4096, status), 0, "%s", d.why);
	cr_assert_eq(status[0] | status[1], 0);
	cr_assert_eq(memcmp(d.drive.media + 64 * 512, burst, 2 * 4096), 0, "the bytes on the drive");
	cr_assert_leq(d.steps - steps, 7, "the pair took %llu ms: the 2nd waited for the 1st's response",
		      (unsigned long long)(d.steps - steps));
	cr_assert_geq(tcp_stats()->ack_hold_expired, 1, "the held ACK went on its timer");
	dp_drive_period(&d, 0);
	down();
}

/* Reads at queue depth as fio drives Linux's host, against a host that acknowledges as
 * Linux's does (every second full segment, else 40 ms after the first unacknowledged byte)
 * and advertises what its buffer has free: total reads of len bytes at queue depth qd
 * over the whole drive, a new one as each completes, a Keep Alive every 16 reads; every
 * byte checked, and no read may take more than a bound of clock time (a stall caught
 * short of the harness's 2 s: something left to wait on a timer). */
static void read_stream(struct dp_opts *o, unsigned qd, uint32_t len, unsigned total, unsigned drive_ms)
{
	unsigned max_ms;
	o->host_ack_bytes = 2 * DP_MSS;
	unit_pools_begin();
	cr_assert_eq(dp_start_opts(&d, o), 0, "%s", d.why);
	dp_drive_period(&d, drive_ms);
	fill(d.drive.media, (size_t)FAKE_NSZE * 512, 11);
	cr_assert_eq(dp_read_stream(&d, qd, total, FAKE_NSZE * 512 / len, len, 16, &max_ms), 0, "%s", d.why);
	cr_log_info("QD %u x %u B reads: %u in %llu ms of clock, slowest %u ms", qd, len, total,
		    (unsigned long long)d.steps, max_ms);
	cr_assert_lt(max_ms, 200, "a read took %u ms of clock", max_ms);
	down();
}

/* 128 KiB reads at queue depth 16 (the judge's job), the NIC's bursts as receive batches. */
Test(datapath, reads_at_queue_depth_16_with_delayed_acks_and_keep_alives)
{
	struct dp_opts o = { .nic_features = NETDEV_F_RX_SPLIT, .wscale = true };
	read_stream(&o, 16, 128 * 1024, 200, 0);
}

/* The same against a drive that completes once a millisecond. */
Test(datapath, reads_at_queue_depth_16_slow_drive)
{
	struct dp_opts o = { .nic_features = NETDEV_F_RX_SPLIT, .wscale = true };
	read_stream(&o, 16, 128 * 1024, 200, 1);
}

/* Every segment a receive batch of its own. */
Test(datapath, reads_at_queue_depth_16_one_segment_per_batch)
{
	struct dp_opts o = { .nic_features = NETDEV_F_RX_SPLIT, .wscale = true, .seg_batches = true };
	read_stream(&o, 16, 128 * 1024, 200, 0);
}

/* A host whose congestion window keeps the target's sends short, no window scaling. */
Test(datapath, reads_at_queue_depth_16_small_windows)
{
	struct dp_opts o = { .nic_features = NETDEV_F_RX_SPLIT, .host_cwnd = 8 * DP_MSS };
	read_stream(&o, 16, 64 * 1024, 200, 0);
}

/* 128 KiB reads at queue depth 16 with their data in the drive's CMB (the CMB mode). */
Test(datapath, reads_at_queue_depth_16_from_the_cmb)
{
	struct dp_opts o = { .nic_features = NETDEV_F_RX_SPLIT | NETDEV_F_TX_GATHER_DEV, .wscale = true,
			     .cmb_reads = true };
	read_stream(&o, 16, 128 * 1024, 200, 0);
	cr_assert_geq(dp_cmb_allocs, 200, "every read through device memory");
}

/* 4 KiB reads at queue depth 16. */
Test(datapath, reads_4k_at_queue_depth_16)
{
	struct dp_opts o = { .nic_features = NETDEV_F_RX_SPLIT, .wscale = true };
	read_stream(&o, 16, 4096, 400, 0);
}
