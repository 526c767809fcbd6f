// sources: drivers/nic/netdev.c net/net.c lib/ipv4_text.c net/arp.c net/ipv4.c net/udp.c net/tcp/tcp.c net/tcp/tcp_in.c net/tcp/tcp_admit.c net/tcp/tcp_pools.c net/tcp/tcp_isn.c tests/unit/net/fake_entropy.c net/tcp/tcp_hdr.c net/tcp/tcp_out.c net/tcp/tcp_budget.c net/tcp/tcp_sack.c net/tcp/tcp_service.c mm/pool.c mm/dma.c lib/timer.c lib/log.c lib/crc32.c tests/unit/net/fake_netdev.c drivers/rdma/roce_wire.c drivers/rdma/roce_icrc.c drivers/rdma/roce_mad.c drivers/rdma/roce_cm.c drivers/rdma/roce_net.c drivers/rdma/roce_resp.c drivers/rdma/roce_resp_tx.c drivers/rdma/roce_dev.c drivers/rdma/roce_mr.c drivers/rdma/roce_odp.c drivers/rdma/roce_odp_mr.c drivers/rdma/roce_cq.c drivers/rdma/roce_qp.c drivers/rdma/roce_req.c drivers/rdma/roce_comp.c
/*
 * RC end to end through the stack and the fake e1000e: QP A's requester talks to QP B's
 * responder on the same device, every frame the device sends to the peer address is
 * turned around by the test (rebuilt as coming from the peer, ICRC recomputed) and
 * injected again, so each packet crosses the real send path, the wire, the receive path,
 * the ICRC check and the dispatch. The relay can drop and reorder packets. Proven: SEND
 * (across the PSN wrap, into two SGEs), WRITE with immediate, READ, Compare&Swap and
 * Fetch&Add complete in order with the data where it belongs; with every third packet
 * lost, or neighbours swapped, everything still completes intact through retransmission;
 * RNR NAKs are retried after the responder's timer and fail after rnr_retry; a silent
 * peer fails the WR after retry_cnt timeouts; remote access and local protection errors
 * complete with their status and take the QP to ERR. An MR with a sink gets READ responses
 * as the NIC's receive buffers (in order, once each, also under loss), refused pieces copied.
 * The retry count limits retries without progress: a READ, SEND or WRITE that gets further
 * on every try completes after more retries than retry_cnt; one stuck at a PSN fails with
 * RETRY_EXC_ERR after retry_cnt retries.
 */
#include "tests/unit/net/net_test.h"
#include "drivers/rdma/roce_icrc.h"
#include "drivers/rdma/roce_internal.h"
#include "drivers/rdma/roce_net.h"
#include "drivers/rdma/roce_req.h"
#include "tests/unit/drivers/rdma/roce_relay.h"
#include "tests/unit/drivers/rdma/roce_qp_up.h"

static struct roce_dev *dev;
static struct roce_pd *pd;
static struct roce_cq *cqa, *cqb;
static struct roce_qp *qa, *qb;
static struct roce_mr *mra, *mrb;
static uint8_t mema[65536], memb[65536];

#define IOVA_A 0x10000000ull
#define IOVA_B 0x20000000ull

static void qp_up(struct roce_qp *qp, uint32_t dest, uint32_t sq_psn, uint32_t rq_psn)
{
	struct roce_qp_attr a = { .qp_state = ROCE_QPS_INIT, .port_num = 1, .qp_access_flags = ROCE_ACCESS_ALL,
				  .path_mtu = ROCE_MTU_1024, .dest_qp_num = dest, .rq_psn = rq_psn, .min_rnr_timer = 1,
				  .sq_psn = sq_psn, .timeout = 14, .retry_cnt = 3, .rnr_retry = 2,
				  .max_dest_rd_atomic = 4, .max_rd_atomic = 4 };
	roce_test_qp_rts(qp, &a, PEER);
}

static void setup(void)
{
	struct roce_qp_init_attr init = { .qp_type = ROCE_QPT_RC,
					  .cap = { .max_send_wr = 32, .max_recv_wr = 32, .max_send_sge = 2, .max_recv_sge = 2 } };
	net_test_start(NETDEV_F_RX_SPLIT);
	cr_assert_eq(roce_dev_init(&dev, "rxe_rc"), 0);
	roce_dev_set_addr(dev, US, 1500);
	cr_assert_eq(roce_net_start(&rn, dev), 0);
	cr_assert_eq(roce_alloc_pd(dev, &pd), 0);
	cr_assert_eq(roce_create_cq(dev, 128, NULL, NULL, &cqa), 0);
	cr_assert_eq(roce_create_cq(dev, 128, NULL, NULL, &cqb), 0);
	init.send_cq = init.recv_cq = cqa;
	cr_assert_eq(roce_create_qp(pd, &init, &qa), 0);
	init.send_cq = init.recv_cq = cqb;
	cr_assert_eq(roce_create_qp(pd, &init, &qb), 0);
	qp_up(qa, roce_qp_num(qb), 0xfffff0, 0x100);
	qp_up(qb, roce_qp_num(qa), 0x100, 0xfffff0);
	for (size_t i = 0; i < sizeof(mema); i++) {
		mema[i] = (uint8_t)(i * 7 + 1);
		memb[i] = (uint8_t)(i * 13 + 5);
	}
	cr_assert_eq(roce_reg_mr(pd, IOVA_A, sizeof(mema), dma_addr_host(mema), ROCE_ACCESS_ALL, &mra), 0);
	cr_assert_eq(roce_reg_mr(pd, IOVA_B, sizeof(memb), dma_addr_host(memb), ROCE_ACCESS_ALL, &mrb), 0);
}

static void teardown(void)
{
	struct roce_qp_attr e = { .qp_state = ROCE_QPS_ERR };
	struct roce_wc wc[64];
	roce_modify_qp(qa, &e, ROCE_QP_STATE);
	roce_modify_qp(qb, &e, ROCE_QP_STATE);
	while (roce_poll_cq(cqa, 64, wc) > 0 || roce_poll_cq(cqb, 64, wc) > 0)
		;
	roce_dereg_mr(mra);
	roce_dereg_mr(mrb);
	roce_destroy_qp(qa);
	roce_destroy_qp(qb);
	roce_destroy_cq(cqa);
	roce_destroy_cq(cqb);
	roce_dealloc_pd(pd);
	roce_net_stop(&rn);
	if (roce_dev_destroy(dev))
		abort();
	net_teardown();
}

TestSuite(roce_rc, .init = setup, .fini = teardown);

static bool rc_idle(void)
{
	return !qa->sq.count && !qb->sq.count;
}

static void post_send(uint64_t id, enum roce_wr_opcode op, uint64_t la, uint32_t len, uint64_t ra)
{
	struct roce_send_wr w = { .wr_id = id, .opcode = op, .send_flags = ROCE_SEND_SIGNALED, .num_sge = 1,
				  .sg_list = { { la, len, roce_mr_lkey(mra) } }, .remote_addr = ra,
				  .rkey = roce_mr_rkey(mrb), .imm_data = 0x1234 };
	cr_assert_eq(roce_post_send(qa, &w), 0);
}

static void post_recv_b(uint64_t id, uint64_t a, uint32_t len)
{
	struct roce_recv_wr w = { .wr_id = id, .num_sge = 1, .sg_list = { { a, len, roce_mr_lkey(mrb) } } };
	cr_assert_eq(roce_post_recv(qb, &w), 0);
}

static void expect_wc(struct roce_cq *cq, uint64_t id, enum roce_wc_status st, enum roce_wc_opcode op,
		      uint32_t len)
{
	struct roce_wc wc;
	cr_assert_eq(roce_poll_cq(cq, 1, &wc), 1, "completion %llu missing", (unsigned long long)id);
	cr_assert_eq(wc.wr_id, id, "wr_id %llu, want %llu", (unsigned long long)wc.wr_id, (unsigned long long)id);
	cr_assert_eq(wc.status, st, "wr %llu status %d want %d", (unsigned long long)id, wc.status, st);
	if (st == ROCE_WC_SUCCESS) {
		cr_assert_eq(wc.opcode, op);
		cr_assert_eq(wc.byte_len, len);
	}
}

/* The five kinds of work, and what they leave. */
static void all_ops(uint32_t big)
{
	uint64_t *cell = (uint64_t *)(memb + 0x8000);
	*cell = 40;
	post_recv_b(100, IOVA_B, big);
	post_recv_b(101, IOVA_B + 0xc000, 16);
	post_send(1, ROCE_WR_SEND, IOVA_A, big, 0);
	post_send(2, ROCE_WR_RDMA_WRITE_WITH_IMM, IOVA_A + 0x4000, big, IOVA_B + 0x4000);
	post_send(3, ROCE_WR_RDMA_READ, IOVA_A + 0x8000, big, IOVA_B + 0x9000);
	struct roce_send_wr cas = { .wr_id = 4, .opcode = ROCE_WR_ATOMIC_CMP_AND_SWP, .send_flags = ROCE_SEND_SIGNALED,
				    .num_sge = 1, .sg_list = { { IOVA_A + 0xf000, 8, roce_mr_lkey(mra) } },
				    .remote_addr = IOVA_B + 0x8000, .rkey = roce_mr_rkey(mrb), .compare_add = 40,
				    .swap = 50 };
	cr_assert_eq(roce_post_send(qa, &cas), 0);
	struct roce_send_wr faa = cas;
	faa.wr_id = 5;
	faa.opcode = ROCE_WR_ATOMIC_FETCH_AND_ADD;
	faa.compare_add = 7;
	faa.sg_list[0].addr = IOVA_A + 0xf008;
	cr_assert_eq(roce_post_send(qa, &faa), 0);
	/* what memory must hold afterwards */
	static uint8_t want_b[65536], want_a[65536];
	memcpy(want_b, memb, sizeof(memb));
	memcpy(want_a, mema, sizeof(mema));
	memcpy(want_b, mema, big);
	memcpy(want_b + 0x4000, mema + 0x4000, big);
	memcpy(want_a + 0x8000, memb + 0x9000, big);

	pump(rc_idle);

	expect_wc(cqa, 1, ROCE_WC_SUCCESS, ROCE_WC_SEND, big);
	expect_wc(cqa, 2, ROCE_WC_SUCCESS, ROCE_WC_RDMA_WRITE, big);
	expect_wc(cqa, 3, ROCE_WC_SUCCESS, ROCE_WC_RDMA_READ, big);
	expect_wc(cqa, 4, ROCE_WC_SUCCESS, ROCE_WC_COMP_SWAP, 8);
	expect_wc(cqa, 5, ROCE_WC_SUCCESS, ROCE_WC_FETCH_ADD, 8);
	expect_wc(cqb, 100, ROCE_WC_SUCCESS, ROCE_WC_RECV, big);
	expect_wc(cqb, 101, ROCE_WC_SUCCESS, ROCE_WC_RECV_RDMA_WITH_IMM, big);
	cr_assert_eq(memcmp(memb, want_b, 0x8000), 0, "SEND and WRITE data");
	cr_assert_eq(memcmp(mema + 0x8000, want_a + 0x8000, big), 0, "READ data");
	uint64_t o1, o2;
	memcpy(&o1, mema + 0xf000, 8);
	memcpy(&o2, mema + 0xf008, 8);
	cr_assert_eq(o1, 40, "CAS original");
	cr_assert_eq(o2, 50, "FAA original");
	cr_assert_eq(*cell, 57, "executed once each: 40 -> 50 -> 57 (%llu)", (unsigned long long)*cell);
	cr_assert_eq(roce_qp_state(qa), ROCE_QPS_RTS);
	cr_assert_eq(roce_qp_state(qb), ROCE_QPS_RTS);
	cr_assert_eq(qa->sq.count, 0);
}

Test(roce_rc, send_write_read_atomics_complete_in_order)
{
	policy = pass_all;
	all_ops(3000);
	cr_assert_eq(qa->req.n.retransmits, 0);
	cr_assert_eq(qa->req.n.timeouts, 0);
}

Test(roce_rc, every_third_packet_lost_still_completes_intact)
{
	policy = drop_periodic;
	relay_period = 3;
	all_ops(8192);
	cr_assert_gt(dropped, 0);
	cr_assert_gt(qa->req.n.retransmits, 0);
}

static int swap_pairs(unsigned n, const struct roce_pkt *p)
{
	(void)p;
	return n % 2 == 0 ? 2 : 0;
}

Test(roce_rc, neighbours_swapped_still_completes_intact)
{
	policy = swap_pairs;
	all_ops(8192);
	cr_assert_gt(qa->req.n.retransmits, 0, "reordering costs retries");
}

Test(roce_rc, rnr_retry_after_the_timer_then_success)
{
	policy = pass_all;
	post_send(1, ROCE_WR_SEND, IOVA_A, 100, 0);
	roce_net_poll(&rn, 16);
	/* the SEND met no receive WR: RNR NAK; post one, and the retry after the timer lands */
	for (int i = 0; i < 3 && !qa->req.n.rnr_naks; i++) {
		unsigned n = fnd.ntx;
		static struct fake_frame out[4];
		cr_assert_leq(n, 4);
		memcpy(out, fnd.tx, n * sizeof(out[0]));
		fake_netdev_clear(&fnd);
		for (unsigned k = 0; k < n; k++) {
			struct udp_hdr uh;
			memcpy(&uh, out[k].b + 34, sizeof(uh));
			inject_from_peer(out[k].b + 42, be16_get(uh.length) - 8u);
		}
	}
	cr_assert_eq(qa->req.n.rnr_naks, 1);
	post_recv_b(7, IOVA_B, 128);
	pump(rc_idle);
	expect_wc(cqa, 1, ROCE_WC_SUCCESS, ROCE_WC_SEND, 100);
	expect_wc(cqb, 7, ROCE_WC_SUCCESS, ROCE_WC_RECV, 100);
	cr_assert_eq(memcmp(memb, mema, 100), 0);
}

Test(roce_rc, rnr_retry_exhausted_fails_the_wr)
{
	policy = pass_all;
	post_send(1, ROCE_WR_SEND, IOVA_A, 100, 0);
	pump(rc_idle);
	expect_wc(cqa, 1, ROCE_WC_RNR_RETRY_EXC_ERR, ROCE_WC_SEND, 0);
	cr_assert_eq(qa->req.n.rnr_naks, 3, "the first try and rnr_retry (2) retries");
	cr_assert_eq(roce_qp_state(qa), ROCE_QPS_ERR);
}

static int drop_all(unsigned n, const struct roce_pkt *p)
{
	(void)n;
	(void)p;
	return 1;
}

Test(roce_rc, a_silent_peer_fails_the_wr_after_retry_cnt_timeouts)
{
	policy = drop_all;
	post_send(1, ROCE_WR_RDMA_WRITE, IOVA_A, 100, IOVA_B);
	post_send(2, ROCE_WR_RDMA_WRITE, IOVA_A, 100, IOVA_B);
	pump(rc_idle);
	expect_wc(cqa, 1, ROCE_WC_RETRY_EXC_ERR, ROCE_WC_RDMA_WRITE, 0);
	expect_wc(cqa, 2, ROCE_WC_WR_FLUSH_ERR, ROCE_WC_RDMA_WRITE, 0);
	cr_assert_eq(qa->req.n.timeouts, 4, "the first try and retry_cnt (3) retries");
	cr_assert_eq(relayed, 8, "each try sends both WRITEs");
}

Test(roce_rc, remote_access_error_completes_with_its_status)
{
	policy = pass_all;
	struct roce_send_wr w = { .wr_id = 9, .opcode = ROCE_WR_RDMA_WRITE, .num_sge = 1,
				  .sg_list = { { IOVA_A, 64, roce_mr_lkey(mra) } }, .remote_addr = IOVA_B + sizeof(memb) - 8,
				  .rkey = roce_mr_rkey(mrb) };
	cr_assert_eq(roce_post_send(qa, &w), 0);
	pump(rc_idle);
	expect_wc(cqa, 9, ROCE_WC_REM_ACCESS_ERR, ROCE_WC_RDMA_WRITE, 0);
	cr_assert_eq(roce_qp_state(qa), ROCE_QPS_ERR);
	cr_assert_eq(roce_qp_state(qb), ROCE_QPS_ERR);
}

Test(roce_rc, a_bad_lkey_is_a_local_protection_error)
{
	policy = pass_all;
	struct roce_send_wr w = { .wr_id = 3, .opcode = ROCE_WR_SEND, .num_sge = 1,
				  .sg_list = { { IOVA_A, 64, roce_mr_lkey(mra) ^ 1 } } };
	cr_assert_eq(roce_post_send(qa, &w), 0);
	pump(rc_idle);
	expect_wc(cqa, 3, ROCE_WC_LOC_PROT_ERR, ROCE_WC_SEND, 0);
	cr_assert_eq(relayed, 0, "nothing was sent");
	cr_assert_eq(roce_qp_state(qa), ROCE_QPS_ERR);
}

/* --- an MR with a sink: READ responses handed over where the NIC put them --------------- */

#define SINK_MAX 64
static struct netdev_frag sink_f[SINK_MAX];
static uint64_t sink_off[SINK_MAX];
static unsigned sink_n, sink_calls;
static bool sink_refuse_odd;

static int sink_take(void *ctx, uint64_t off, struct netdev_frag *f)
{
	cr_assert_eq(ctx, &sink_n);
	if (sink_refuse_odd && (sink_calls++ & 1))
		return -ENOSPC;
	cr_assert_lt(sink_n, SINK_MAX);
	sink_off[sink_n] = off;
	sink_f[sink_n++] = *f;
	return 0;
}

static void sink_release_all(void)
{
	for (unsigned i = 0; i < sink_n; i++)
		netdev_frag_release(&sink_f[i]);
	sink_n = sink_calls = 0;
}

/* READ 8 KiB + 100 B into a sink MR over `into` (zeroed); the pieces held must be the bytes. */
static void read_into_sink(uint8_t *into, size_t cap)
{
	struct roce_mr *ms;
	memset(into, 0, cap);
	cr_assert_eq(roce_reg_mr(pd, 0x30000000ull, cap, dma_addr_host(into), ROCE_ACCESS_LOCAL_WRITE, &ms), 0);
	cr_assert_eq(roce_mr_set_sink(ms, sink_take, &sink_n), 0);
	struct roce_send_wr w = { .wr_id = 9, .opcode = ROCE_WR_RDMA_READ, .send_flags = ROCE_SEND_SIGNALED, .num_sge = 1,
				  .sg_list = { { 0x30000000ull, 8292, roce_mr_lkey(ms) } }, .remote_addr = IOVA_B + 0x100,
				  .rkey = roce_mr_rkey(mrb) };
	cr_assert_eq(roce_post_send(qa, &w), 0);
	pump(rc_idle);
	expect_wc(cqa, 9, ROCE_WC_SUCCESS, ROCE_WC_RDMA_READ, 8292);
	roce_dereg_mr(ms);
}

Test(roce_rc, read_responses_handed_to_an_mr_sink_without_a_copy)
{
	static uint8_t into[16384];
	struct roce_mr *strided;

	policy = pass_all;
	dma_counters_reset();
	read_into_sink(into, sizeof(into));
	/* 9 responses at path MTU 1024: each payload a piece of the NIC's receive buffer, in order */
	cr_assert_eq(sink_n, 9);
	uint64_t off = 0;
	for (unsigned i = 0; i < sink_n; i++) {
		cr_assert_eq(sink_off[i], off, "piece %u at %llu", i, (unsigned long long)sink_off[i]);
		cr_assert_eq(sink_f[i].addr.cls, MEM_CLASS_DEVICE, "in the NIC's (device-memory) buffer");
		cr_assert_not_null(sink_f[i].owner);
		cr_assert_eq(sink_f[i].len, i < 8 ? 1024u : 100u);
		cr_assert_eq(memcmp((const void *)(uintptr_t)sink_f[i].addr.bus, memb + 0x100 + off, sink_f[i].len), 0);
		off += sink_f[i].len;
	}
	for (size_t i = 0; i < sizeof(into); i++)
		cr_assert_eq(into[i], 0, "the MR's memory is not written (byte %zu)", i);
	cr_assert_eq(qa->req.n.rx_frags, 9);
	cr_assert_eq(qa->req.n.rx_frag_bytes, 8292);
	cr_assert_eq(fnd.data_out, 9, "the NIC's buffers are held by the sink");
	sink_release_all();
	cr_assert_eq(fnd.data_out, 0, "and back when it lets go");

	/* the sink refuses every other piece: those bytes are copied into the memory */
	sink_refuse_odd = true;
	read_into_sink(into, sizeof(into));
	sink_refuse_odd = false;
	cr_assert_eq(sink_n, 5);
	for (unsigned i = 0; i < 9; i++) {
		uint32_t o = i * 1024, n = i < 8 ? 1024 : 100;
		if (i & 1)
			cr_assert_eq(memcmp(into + o, memb + 0x100 + o, n), 0, "refused piece %u copied", i);
		else
			cr_assert_eq(into[o], 0, "taken piece %u not copied", i);
	}
	cr_assert_eq(fnd.data_out, 5);
	sink_release_all();
	cr_assert_eq(fnd.data_out, 0);

	/* without a sink: copied as always */
	memset(mema + 0x8000, 0, 8292);
	post_send(10, ROCE_WR_RDMA_READ, IOVA_A + 0x8000, 8292, IOVA_B + 0x100);
	pump(rc_idle);
	expect_wc(cqa, 10, ROCE_WC_SUCCESS, ROCE_WC_RDMA_READ, 8292);
	cr_assert_eq(memcmp(mema + 0x8000, memb + 0x100, 8292), 0);
	cr_assert_eq(qa->req.n.rx_frags, 9 + 5);
	cr_assert_eq(fnd.data_out, 0);
	/* not for a strided MR */
	cr_assert_eq(roce_reg_mr_strided(pd, 0x40000000ull, 4096, dma_addr_host(into), ROCE_ACCESS_LOCAL_WRITE, 1024, 8,
					 &strided), 0);
	cr_assert_eq(roce_mr_set_sink(strided, sink_take, &sink_n), -EINVAL);
	roce_dereg_mr(strided);
}

Test(roce_rc, sink_pieces_survive_loss_in_order_and_once)
{
	static uint8_t into[16384];
	policy = drop_periodic;
	relay_period = 7;
	read_into_sink(into, sizeof(into));
	cr_assert_gt(dropped, 0);
	cr_assert_gt(qa->req.n.retransmits, 0, "the READ was asked again from the first byte not placed");
	uint64_t off = 0;
	for (unsigned i = 0; i < sink_n; i++) {
		cr_assert_eq(sink_off[i], off, "piece %u at %llu: in order, none twice", i,
			     (unsigned long long)sink_off[i]);
		cr_assert_eq(memcmp((const void *)(uintptr_t)sink_f[i].addr.bus, memb + 0x100 + off, sink_f[i].len), 0);
		off += sink_f[i].len;
	}
	cr_assert_eq(off, 8292);
	sink_release_all();
	cr_assert_eq(fnd.data_out, 0);
}

Test(roce_rc, send_payload_handed_to_a_receive_mr_sink)
{
	static uint8_t into[8192];
	struct roce_mr *ms;
	policy = pass_all;
	memset(into, 0, sizeof(into));
	cr_assert_eq(roce_reg_mr(pd, 0x50000000ull, sizeof(into), dma_addr_host(into), ROCE_ACCESS_LOCAL_WRITE, &ms), 0);
	cr_assert_eq(roce_mr_set_sink(ms, sink_take, &sink_n), 0);
	/* qb's receive WR points into the sink MR at 256; a 3000-byte SEND: 3 packets */
	struct roce_recv_wr rw = { .wr_id = 77, .num_sge = 1, .sg_list = { { 0x50000000ull + 256, 4096, roce_mr_lkey(ms) } } };
	cr_assert_eq(roce_post_recv(qb, &rw), 0);
	post_send(11, ROCE_WR_SEND, IOVA_A + 0x100, 3000, 0);
	pump(rc_idle);
	expect_wc(cqa, 11, ROCE_WC_SUCCESS, ROCE_WC_SEND, 3000);
	expect_wc(cqb, 77, ROCE_WC_SUCCESS, ROCE_WC_RECV, 3000);
	cr_assert_eq(sink_n, 3);
	uint64_t off = 256;
	for (unsigned i = 0; i < sink_n; i++) {
		cr_assert_eq(sink_off[i], off);
		cr_assert_eq(memcmp((const void *)(uintptr_t)sink_f[i].addr.bus, mema + 0x100 + off - 256, sink_f[i].len), 0);
		off += sink_f[i].len;
	}
	cr_assert_eq(off, 256 + 3000);
	cr_assert_eq(qb->resp.rx_frags, 3);
	cr_assert_eq(qb->resp.rx_frag_bytes, 3000);
	for (size_t i = 0; i < sizeof(into); i++)
		cr_assert_eq(into[i], 0, "the receive buffer is not written (byte %zu)", i);
	cr_assert_eq(fnd.data_out, 3);
	sink_release_all();
	cr_assert_eq(fnd.data_out, 0);
	roce_dereg_mr(ms);
}

/* --- retries and forward progress (IBTA vol. 1 9.7.6.1.3) --------------------------------
 * The retry counter is spent by a retry and starts again with forward progress: any valid,
 * in-order response that moves the acknowledged PSN (a middle READ response, an ACK or a
 * PSN-sequence NAK that acknowledges part of a multi-packet message), not only a completed
 * WR. So loss that lets every try get further never exhausts it; loss that stops every try
 * at the same PSN does, after retry_cnt retries. */

static unsigned try_idx, try_lost_at, stuck_psn, stuck_seen;
static bool try_seen;
static uint32_t try_last_psn;

/* READ: the try_lost_at-th response after each READ request is lost (each try gets
 * try_lost_at - 1 responses further). */
static int lose_nth_read_response_of_each_try(unsigned n, const struct roce_pkt *p)
{
	(void)n;
	if (p->opcode == ROCE_RC_READ_REQUEST) {
		try_idx = 0;
		return 0;
	}
	return (p->flags & ROCE_F_READ_RESP) && ++try_idx == try_lost_at;
}

/* SEND/WRITE: the try_lost_at-th request packet of each try is lost; a try starts where the
 * requester goes back (a PSN not after the one before it). */
static int lose_nth_request_of_each_try(unsigned n, const struct roce_pkt *p)
{
	(void)n;
	if (p->opcode > ROCE_RC_WRITE_ONLY_IMM)
		return 0;  /* ACKs and NAKs from B pass */
	if (!try_seen || roce_psn_diff(p->psn, try_last_psn) <= 0)
		try_idx = 0;
	try_last_psn = p->psn;
	try_seen = true;
	return ++try_idx == try_lost_at;
}

/* Every SEND/WRITE packet or READ response at stuck_psn is lost: no try gets past it (B's
 * ACKs and NAKs pass). */
static int lose_every_packet_at_stuck_psn(unsigned n, const struct roce_pkt *p)
{
	(void)n;
	if (p->psn != stuck_psn || (p->opcode > ROCE_RC_WRITE_ONLY_IMM && !(p->flags & ROCE_F_READ_RESP)))
		return 0;
	stuck_seen++;
	return 1;
}

static unsigned read_requests_seen;
static int count_read_requests(unsigned n, const struct roce_pkt *p)
{
	if (p->opcode == ROCE_RC_READ_REQUEST)
		read_requests_seen++;
	return lose_every_packet_at_stuck_psn(n, p);
}

Test(roce_rc, a_read_that_gets_further_each_try_completes_past_retry_cnt)
{
	/* 9 responses; the 3rd of each try lost: tries get responses 0-1, 2-3, 4-5, 6-7, 8 */
	policy = lose_nth_read_response_of_each_try;
	try_lost_at = 3;
	memset(mema + 0x8000, 0, 8292);
	post_send(12, ROCE_WR_RDMA_READ, IOVA_A + 0x8000, 8292, IOVA_B + 0x100);
	pump(rc_idle);
	expect_wc(cqa, 12, ROCE_WC_SUCCESS, ROCE_WC_RDMA_READ, 8292);
	cr_assert_eq(memcmp(mema + 0x8000, memb + 0x100, 8292), 0, "READ data byte-exact");
	cr_assert_eq(qa->req.n.retransmits, 4, "4 retries (retry_cnt 3), each after progress (%llu)",
		     (unsigned long long)qa->req.n.retransmits);
	cr_assert_eq(dropped, 4);
	cr_assert_eq(roce_qp_state(qa), ROCE_QPS_RTS);
}

Test(roce_rc, a_read_into_a_sink_that_gets_further_each_try_completes)
{
	static uint8_t into[16384];
	policy = lose_nth_read_response_of_each_try;
	try_lost_at = 3;
	read_into_sink(into, sizeof(into));
	cr_assert_eq(qa->req.n.retransmits, 4);
	uint64_t off = 0;
	for (unsigned i = 0; i < sink_n; i++) {
		cr_assert_eq(sink_off[i], off, "piece %u in order, once", i);
		cr_assert_eq(memcmp((const void *)(uintptr_t)sink_f[i].addr.bus, memb + 0x100 + off, sink_f[i].len), 0);
		off += sink_f[i].len;
	}
	cr_assert_eq(off, 8292);
	sink_release_all();
	cr_assert_eq(fnd.data_out, 0);
}

Test(roce_rc, a_read_stuck_at_one_psn_fails_after_retry_cnt_retries)
{
	/* the 3rd response's PSN never arrives: the first try places 2, no retry gets further */
	stuck_psn = roce_psn_add(qa->req.psn, 2);
	policy = count_read_requests;
	memset(mema + 0x8000, 0, 8292);
	post_send(13, ROCE_WR_RDMA_READ, IOVA_A + 0x8000, 8292, IOVA_B + 0x100);
	pump(rc_idle);
	expect_wc(cqa, 13, ROCE_WC_RETRY_EXC_ERR, ROCE_WC_RDMA_READ, 0);
	cr_assert_eq(read_requests_seen, 4, "the first try and retry_cnt (3) retries (%u)", read_requests_seen);
	cr_assert_eq(qa->req.n.retransmits, 3);
	cr_assert_eq(stuck_seen, 4);
	cr_assert_eq(memcmp(mema + 0x8000, memb + 0x100, 2048), 0, "the two responses before it placed");
	cr_assert_eq(roce_qp_state(qa), ROCE_QPS_ERR);
}

Test(roce_rc, a_read_with_every_third_packet_lost_makes_no_progress_and_fails)
{
	/* the relay counts requests and responses: each retry (a request and 8 responses) is 9
	 * packets, so period 3 loses the same first response of every retry; nothing is placed
	 * after the first try, which is a retry without progress each time */
	policy = drop_periodic;
	relay_period = 3;
	post_send(14, ROCE_WR_RDMA_READ, IOVA_A + 0x8000, 8292, IOVA_B + 0x100);
	pump(rc_idle);
	expect_wc(cqa, 14, ROCE_WC_RETRY_EXC_ERR, ROCE_WC_RDMA_READ, 0);
	cr_assert_eq(qa->req.n.retransmits, 3);
}

Test(roce_rc, a_send_that_gets_further_each_try_completes_past_retry_cnt)
{
	/* 10 packets; the 3rd of each try lost: B's PSN-sequence NAK acknowledges the two before
	 * it each time (progress), so 4 retries pass with retry_cnt 3 */
	policy = lose_nth_request_of_each_try;
	try_lost_at = 3;
	post_recv_b(100, IOVA_B, 10240);
	post_send(15, ROCE_WR_SEND, IOVA_A, 10240, 0);
	pump(rc_idle);
	expect_wc(cqa, 15, ROCE_WC_SUCCESS, ROCE_WC_SEND, 10240);
	expect_wc(cqb, 100, ROCE_WC_SUCCESS, ROCE_WC_RECV, 10240);
	cr_assert_eq(memcmp(memb, mema, 10240), 0, "SEND data byte-exact");
	cr_assert_eq(dropped, 4);
	cr_assert_eq(qa->req.n.retransmits, 4, "4 retries (%llu)", (unsigned long long)qa->req.n.retransmits);
	cr_assert_eq(roce_qp_state(qa), ROCE_QPS_RTS);
}

Test(roce_rc, a_write_that_gets_further_each_try_completes_past_retry_cnt)
{
	static uint8_t want[10240];
	policy = lose_nth_request_of_each_try;
	try_lost_at = 3;
	memcpy(want, mema + 0x100, sizeof(want));
	post_send(16, ROCE_WR_RDMA_WRITE, IOVA_A + 0x100, 10240, IOVA_B + 0x2000);
	pump(rc_idle);
	expect_wc(cqa, 16, ROCE_WC_SUCCESS, ROCE_WC_RDMA_WRITE, 10240);
	cr_assert_eq(memcmp(memb + 0x2000, want, sizeof(want)), 0, "WRITE data byte-exact");
	cr_assert_eq(qa->req.n.retransmits, 4);
}

Test(roce_rc, a_write_stuck_at_one_psn_fails_after_retry_cnt_retries)
{
	/* the 3rd packet's PSN never arrives: B NAKs once per gap, then the timer; no progress */
	stuck_psn = roce_psn_add(qa->req.psn, 2);
	policy = lose_every_packet_at_stuck_psn;
	post_send(17, ROCE_WR_RDMA_WRITE, IOVA_A, 10240, IOVA_B);
	pump(rc_idle);
	expect_wc(cqa, 17, ROCE_WC_RETRY_EXC_ERR, ROCE_WC_RDMA_WRITE, 0);
	cr_assert_eq(stuck_seen, 4, "the first try and retry_cnt (3) retries (%u)", stuck_seen);
	cr_assert_eq(qa->req.n.retransmits, 3);
	cr_assert_eq(roce_qp_state(qa), ROCE_QPS_ERR);
}
