// sources: drivers/rdma/roce_resp.c drivers/rdma/roce_resp_tx.c drivers/rdma/roce_wire.c drivers/rdma/roce_dev.c drivers/rdma/roce_mr.c drivers/rdma/roce_odp.c drivers/rdma/roce_odp_mr.c drivers/rdma/roce_cq.c drivers/rdma/roce_qp.c drivers/rdma/roce_req.c drivers/rdma/roce_comp.c drivers/nic/netdev.c mm/pool.c mm/dma.c lib/log.c
/*
 * The RC responder, packet by packet: PSN serial arithmetic across the 24-bit wrap, a
 * multi-packet SEND across the wrap into two SGEs, duplicates re-ACKed and not executed
 * again, one PSN-sequence NAK per gap, RNR NAK without a receive WR and success after
 * one is posted, RDMA WRITE (and with immediate) placement, every fatal NAK (remote
 * access, invalid request: opcode sequence, length against the path MTU, message longer
 * than the WR, READ/atomic not served yet) taking the QP to ERR with flushed WRs.
 */
#include <criterion/criterion.h>
#include <string.h>
#include "drivers/rdma/roce_internal.h"
#include "drivers/rdma/roce_resp.h"
#include "drivers/rdma/roce_verbs.h"
#include "tests/unit/unit_support.h"
#include "tests/unit/drivers/rdma/roce_qp_up.h"

/* struct req literals name only the fields a packet needs */
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

static struct roce_dev *dev;
static struct roce_pd *pd;
static struct roce_cq *scq, *rcq;
static struct roce_qp *qp;
static struct roce_mr *mr;
static uint8_t mem[16384];

static void setup(void)
{
	struct roce_qp_init_attr init = { .qp_type = ROCE_QPT_RC,
					  .cap = { .max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 2, .max_recv_sge = 2 } };
	struct roce_qp_attr a = { .qp_state = ROCE_QPS_INIT, .port_num = 1,
				  .qp_access_flags = ROCE_ACCESS_ALL,
				  .path_mtu = ROCE_MTU_1024, .dest_qp_num = 0x77, .rq_psn = 0xfffffe, .min_rnr_timer = 12,
				  .sq_psn = 5, .timeout = 14, .retry_cnt = 7, .rnr_retry = 7, .max_dest_rd_atomic = 4,
				  .max_rd_atomic = 1 };

	unit_pools_begin();
	cr_assert_eq(netbuf_pool_init(16), 0);
	cr_assert_eq(roce_dev_init(&dev, "resp"), 0);
	roce_dev_set_addr(dev, 0x0a0a000a, 1500);
	cr_assert_eq(roce_alloc_pd(dev, &pd), 0);
	cr_assert_eq(roce_create_cq(dev, 32, NULL, NULL, &scq), 0);
	cr_assert_eq(roce_create_cq(dev, 32, NULL, NULL, &rcq), 0);
	init.send_cq = scq;
	init.recv_cq = rcq;
	cr_assert_eq(roce_create_qp(pd, &init, &qp), 0);
	roce_test_qp_rts(qp, &a, 0x0a0a0002);
	memset(mem, 0, sizeof(mem));
	cr_assert_eq(roce_reg_mr(pd, 0x100000, sizeof(mem), dma_addr_host(mem),
				 ROCE_ACCESS_ALL, &mr), 0);
}

static void teardown(void)
{
	if (mr)
		roce_dereg_mr(mr);
	roce_destroy_qp(qp);
	roce_destroy_cq(scq);
	roce_destroy_cq(rcq);
	roce_dealloc_pd(pd);
	if (roce_dev_destroy(dev) || netbuf_pool_destroy())
		abort();
	unit_pools_end();
}

TestSuite(roce_resp, .init = setup, .fini = teardown);

struct req {
	uint8_t opcode;
	uint32_t psn;
	bool ackreq;
	uint32_t len;
	uint8_t fill;
	uint64_t va;
	uint32_t rkey, dmalen, imm;
	uint64_t swap_add, compare;
};

enum answer { ANSWER_NONE, ANSWER_ACK, ANSWER_NAK, ANSWER_RNR, ANSWER_OTHER };

/* The first packet the responder owed after a request, decoded (the rest are drained). */
struct out {
	enum answer answer;
	uint8_t syndrome;
	uint32_t psn, msn;
	unsigned n;                  /* packets owed */
};

#define MAX_TX 64
static struct roce_tx sent[MAX_TX];
static unsigned nsent;

/* Take every packet the responder owes, as the caller's send loop does. */
static unsigned drain(void)
{
	struct roce_tx tx;
	nsent = 0;
	while (roce_resp_tx_next(qp, &tx)) {
		cr_assert_lt(nsent, MAX_TX);
		sent[nsent++] = tx;
		roce_resp_tx_done(qp, &tx);
	}
	return nsent;
}

static struct out decode(const struct roce_tx *tx)
{
	struct out o = { .syndrome = tx->pkt.syndrome, .psn = tx->pkt.psn, .msn = tx->pkt.msn };
	cr_assert_eq(tx->pkt.destqp, 0x77);
	if (tx->pkt.opcode != ROCE_RC_ACK)
		o.answer = ANSWER_OTHER;
	else if ((o.syndrome & AETH_SYNDROME_TYPE_MASK) == AETH_TYPE_ACK)
		o.answer = ANSWER_ACK;
	else if ((o.syndrome & AETH_SYNDROME_TYPE_MASK) == AETH_TYPE_NAK)
		o.answer = ANSWER_NAK;
	else
		o.answer = ANSWER_RNR;
	return o;
}

/* Run one request packet through the responder; returns the first packet it owes. */
static struct out rx(struct req q)
{
	struct roce_pkt p = { .opcode = q.opcode, .flags = roce_opcode_flags(q.opcode), .psn = q.psn,
			      .ackreq = q.ackreq, .payload_len = q.len, .va = q.va, .rkey = q.rkey, .dmalen = q.dmalen,
			      .imm = q.imm, .destqp = roce_qp_num(qp), .pkey = 0xffff, .swap_add = q.swap_add,
			      .compare = q.compare };
	struct out o = { .answer = ANSWER_NONE };
	struct netbuf *nb = netbuf_alloc(NETBUF_HEADROOM);

	cr_assert(p.flags);
	p.hdr_len = (uint16_t)roce_hdr_len(q.opcode);
	cr_assert_not_null(nb);
	uint8_t *b = netbuf_put(nb, p.hdr_len + q.len);
	cr_assert_not_null(b);
	memset(b, 0, p.hdr_len);
	for (uint32_t i = 0; i < q.len; i++)
		b[p.hdr_len + i] = (uint8_t)(q.fill + i);
	roce_resp_rx(qp, &p, nb);
	netbuf_free(nb);
	if (drain())
		o = decode(&sent[0]);
	o.n = nsent;
	return o;
}

static void post_recv(uint64_t id, uint64_t a0, uint32_t l0, uint64_t a1, uint32_t l1)
{
	struct roce_recv_wr w = { .wr_id = id, .num_sge = l1 ? 2 : 1,
				  .sg_list = { { a0, l0, roce_mr_lkey(mr) }, { a1, l1, roce_mr_lkey(mr) } } };
	cr_assert_eq(roce_post_recv(qp, &w), 0);
}

static void expect_ack(struct out o, uint32_t psn, uint32_t msn)
{
	cr_assert_eq(o.answer, ANSWER_ACK);
	cr_assert_eq(o.syndrome & AETH_SYNDROME_TYPE_MASK, AETH_TYPE_ACK);
	cr_assert_eq(o.psn, psn, "ack psn %#x want %#x", o.psn, psn);
	cr_assert_eq(o.msn, msn);
}

static void expect_nak(struct out o, uint8_t code, uint32_t psn)
{
	cr_assert_eq(o.answer, ANSWER_NAK);
	cr_assert_eq(o.syndrome, AETH_TYPE_NAK | code, "syndrome %#x", o.syndrome);
	cr_assert_eq(o.psn, psn);
}

Test(roce_resp, psn_serial_arithmetic_across_the_wrap)
{
	cr_assert_eq(roce_psn_diff(0, 0xffffff), 1);
	cr_assert_eq(roce_psn_diff(0xffffff, 0), -1);
	cr_assert_eq(roce_psn_diff(5, 0xfffffb), 10);
	cr_assert_eq(roce_psn_diff(0x7fffff, 0), 0x7fffff);
	cr_assert_eq(roce_psn_diff(0x800000, 0), -0x800000);
	cr_assert_eq(roce_psn_add(0xffffff, 2), 1);
	cr_assert_eq(roce_psn_add(0xfffffe, 0xffffff), 0xfffffd);
}

Test(roce_resp, send_across_the_wrap_into_two_sges_then_a_duplicate)
{
	struct roce_wc wc[4];
	post_recv(1, 0x100000, 1000, 0x101000, 2000);
	/* no ACK asked on first/middle: coalesced */
	cr_assert_eq(rx((struct req){ ROCE_RC_SEND_FIRST, 0xfffffe, false, 1024, 0 }).answer, ANSWER_NONE);
	cr_assert_eq(rx((struct req){ ROCE_RC_SEND_MIDDLE, 0xffffff, false, 1024, 0 }).answer, ANSWER_NONE);
	expect_ack(rx((struct req){ ROCE_RC_SEND_LAST, 0x000000, true, 100, 0 }), 0, 1);
	cr_assert_eq(roce_poll_cq(rcq, 4, wc), 1);
	cr_assert_eq(wc[0].wr_id, 1);
	cr_assert_eq(wc[0].status, ROCE_WC_SUCCESS);
	cr_assert_eq(wc[0].opcode, ROCE_WC_RECV);
	cr_assert_eq(wc[0].byte_len, 2148);
	cr_assert_eq(wc[0].src_qp, 0x77);
	/* bytes 0..999 in SGE 0, 1000..2147 at the start of SGE 1: the byte at message offset
	 * k is (fill + k % packet offset) */
	cr_assert_eq(mem[0], 0);
	cr_assert_eq(mem[999], (uint8_t)999);
	cr_assert_eq(mem[0x1000], (uint8_t)1000);      /* offset 1000 of packet 1 */
	cr_assert_eq(mem[0x1000 + 24], 0);             /* offset 1024 = byte 0 of packet 2 */
	cr_assert_eq(mem[0x1000 + 1148 - 1], (uint8_t)99);
	cr_assert_eq(mem[0x1000 + 1148], 0, "nothing beyond the message");
	/* the requester lost our ACK and resends the last packet: re-ACKed, not executed */
	expect_ack(rx((struct req){ ROCE_RC_SEND_LAST, 0x000000, true, 100, 0x55 }), 0, 1);
	expect_ack(rx((struct req){ ROCE_RC_SEND_FIRST, 0xfffffe, false, 1024, 0x55 }), 0, 1);
	cr_assert_eq(roce_poll_cq(rcq, 4, wc), 0);
	cr_assert_eq(mem[0], 0, "a duplicate wrote nothing");
	cr_assert_eq(roce_qp_state(qp), ROCE_QPS_RTS);
}

Test(roce_resp, psn_gap_one_nak_until_the_expected_packet)
{
	post_recv(1, 0x100000, 4096, 0, 0);
	expect_nak(rx((struct req){ ROCE_RC_SEND_ONLY, 0x000001, true, 10, 0 }), AETH_NAK_PSN_SEQ, 0xfffffe);
	cr_assert_eq(rx((struct req){ ROCE_RC_SEND_ONLY, 0x000002, true, 10, 0 }).answer, ANSWER_NONE,
		     "one NAK per gap");
	expect_ack(rx((struct req){ ROCE_RC_SEND_ONLY, 0xfffffe, true, 10, 0 }), 0xfffffe, 1);
	/* a new gap gets a new NAK */
	expect_nak(rx((struct req){ ROCE_RC_SEND_ONLY, 0x000005, true, 10, 0 }), AETH_NAK_PSN_SEQ, 0xffffff);
	cr_assert_eq(roce_qp_state(qp), ROCE_QPS_RTS, "a sequence error is not fatal");
}

/* Run one request packet through the responder without taking what it owes (the NIC full). */
static void rx_held(struct req q)
{
	struct roce_pkt p = { .opcode = q.opcode, .flags = roce_opcode_flags(q.opcode), .psn = q.psn,
			      .ackreq = q.ackreq, .payload_len = q.len, .destqp = roce_qp_num(qp), .pkey = 0xffff,
			      .hdr_len = (uint16_t)roce_hdr_len(q.opcode) };
	struct netbuf *nb = netbuf_alloc(NETBUF_HEADROOM);
	cr_assert_not_null(nb);
	uint8_t *b = netbuf_put(nb, p.hdr_len + q.len);
	cr_assert_not_null(b);
	memset(b, q.fill, p.hdr_len + q.len);
	roce_resp_rx(qp, &p, nb);
	netbuf_free(nb);
}

/* Netem reorders two capsules while the NIC is full: N+1 (dropped, a NAK owed), then N
 * (placed, its ACK owed). The NAK must not be lost under N's ACK, nor under the ACK of a
 * duplicate: it goes out at the new ePSN, so N+1 is sent again at once. */
Test(roce_resp, an_unsent_sequence_nak_survives_a_later_ack)
{
	struct roce_wc wc[3];
	post_recv(1, 0x100000, 64, 0, 0);
	post_recv(2, 0x100100, 64, 0, 0);
	rx_held((struct req){ ROCE_RC_SEND_ONLY, 0xffffff, true, 10, 1 });
	rx_held((struct req){ ROCE_RC_SEND_ONLY, 0xfffffe, true, 10, 2 });
	cr_assert_eq(drain(), 2, "N's ACK, then the NAK");
	expect_ack(decode(&sent[0]), 0xfffffe, 1);
	expect_nak(decode(&sent[1]), AETH_NAK_PSN_SEQ, 0xffffff);
	cr_assert_eq(roce_poll_cq(rcq, 3, wc), 1, "N placed once");
	cr_assert_eq(wc[0].wr_id, 1);
	/* again with a duplicate of N arriving behind a gap */
	rx_held((struct req){ ROCE_RC_SEND_ONLY, 0x000001, true, 10, 3 });
	rx_held((struct req){ ROCE_RC_SEND_ONLY, 0xfffffe, true, 10, 2 });
	cr_assert_eq(drain(), 1);
	expect_nak(decode(&sent[0]), AETH_NAK_PSN_SEQ, 0xffffff);
	/* the retransmission is taken and ACKed; no receive was consumed meanwhile */
	expect_ack(rx((struct req){ ROCE_RC_SEND_ONLY, 0xffffff, true, 10, 1 }), 0xffffff, 2);
	cr_assert_eq(roce_poll_cq(rcq, 3, wc), 1);
	cr_assert_eq(wc[0].wr_id, 2);
}

/* The pattern of lab nvmet_rdma under netem, in Linux's retransmission after its timer: packet
 * N is taken in order (no AckReq: a middle packet), N+1 is lost and N+6 overtakes it. The
 * sequence NAK at N+1 acknowledges N implicitly, but Linux rxe's completer, still in that retry,
 * ignores a NAK until an ACK ends the retry (and then waits 2 s for its timer): an ACK of N goes
 * out first. Without new requests since the last answer the NAK goes alone. */
Test(roce_resp, a_sequence_nak_after_unacknowledged_requests_follows_their_ack)
{
	struct roce_wc wc[2];
	post_recv(1, 0x100000, 4096, 0, 0);
	cr_assert_eq(rx((struct req){ ROCE_RC_SEND_FIRST, 0xfffffe, false, 1024, 0 }).answer, ANSWER_NONE);
	struct out o = rx((struct req){ ROCE_RC_SEND_LAST, 0x000004, true, 10, 0 });
	cr_assert_eq(o.n, 2, "an ACK, then the NAK");
	expect_ack(o, 0xfffffe, 0);
	expect_nak(decode(&sent[1]), AETH_NAK_PSN_SEQ, 0xffffff);
	cr_assert_eq(rx((struct req){ ROCE_RC_SEND_LAST, 0x000005, true, 10, 0 }).answer, ANSWER_NONE, "one NAK per gap");
	/* the retransmission: N again (a duplicate, ACKed), then N+1 */
	expect_ack(rx((struct req){ ROCE_RC_SEND_FIRST, 0xfffffe, false, 1024, 0 }), 0xfffffe, 0);
	expect_ack(rx((struct req){ ROCE_RC_SEND_LAST, 0xffffff, true, 10, 0 }), 0xffffff, 1);
	cr_assert_eq(roce_poll_cq(rcq, 2, wc), 1);
	cr_assert_eq(wc[0].byte_len, 1034);
	/* a gap right after an answer went out: the NAK alone */
	o = rx((struct req){ ROCE_RC_SEND_ONLY, 0x000002, true, 10, 0 });
	cr_assert_eq(o.n, 1);
	expect_nak(o, AETH_NAK_PSN_SEQ, 0x000000);
}

Test(roce_resp, rnr_nak_without_a_receive_wr)
{
	struct roce_wc wc[2];
	struct out o = rx((struct req){ ROCE_RC_SEND_ONLY, 0xfffffe, true, 10, 0 });
	cr_assert_eq(o.answer, ANSWER_RNR);
	cr_assert_eq(o.syndrome, AETH_TYPE_RNR_NAK | 12);
	cr_assert_eq(o.psn, 0xfffffe);
	/* still expected: the retry after the RNR timer succeeds once a WR is posted */
	post_recv(9, 0x100000, 64, 0, 0);
	expect_ack(rx((struct req){ ROCE_RC_SEND_ONLY, 0xfffffe, true, 10, 0 }), 0xfffffe, 1);
	cr_assert_eq(roce_poll_cq(rcq, 2, wc), 1);
	cr_assert_eq(wc[0].wr_id, 9);
	cr_assert_eq(wc[0].byte_len, 10);
}

Test(roce_resp, rdma_write_and_write_with_immediate)
{
	struct roce_wc wc[2];
	uint32_t rkey = roce_mr_rkey(mr);
	cr_assert_eq(rx((struct req){ ROCE_RC_WRITE_FIRST, 0xfffffe, false, 1024, 1, 0x100010, rkey, 1500 }).answer,
		     ANSWER_NONE);
	expect_ack(rx((struct req){ ROCE_RC_WRITE_LAST, 0xffffff, true, 476, 2 }), 0xffffff, 1);
	cr_assert_eq(mem[0x10], 1);
	cr_assert_eq(mem[0x10 + 1023], (uint8_t)(1 + 1023));
	cr_assert_eq(mem[0x10 + 1024], 2);
	cr_assert_eq(mem[0x10 + 1499], (uint8_t)(2 + 475));
	cr_assert_eq(mem[0x10 + 1500], 0);
	cr_assert_eq(roce_poll_cq(rcq, 2, wc), 0, "a plain WRITE consumes no receive WR");
	/* with immediate: a receive WR is needed (RNR first), then completes with the immediate */
	struct out o = rx((struct req){ ROCE_RC_WRITE_ONLY_IMM, 0, true, 8, 3, 0x102000, rkey, 8, 0xabcd });
	cr_assert_eq(o.answer, ANSWER_RNR);
	post_recv(4, 0x100000, 0, 0, 0);
	expect_ack(rx((struct req){ ROCE_RC_WRITE_ONLY_IMM, 0, true, 8, 3, 0x102000, rkey, 8, 0xabcd }), 0, 2);
	cr_assert_eq(mem[0x2000], 3);
	cr_assert_eq(roce_poll_cq(rcq, 2, wc), 1);
	cr_assert_eq(wc[0].opcode, ROCE_WC_RECV_RDMA_WITH_IMM);
	cr_assert_eq(wc[0].wc_flags, ROCE_WC_WITH_IMM);
	cr_assert_eq(wc[0].imm_data, 0xabcd);
	cr_assert_eq(wc[0].byte_len, 8);
}

static void expect_fatal(struct req q, uint8_t code, enum roce_wc_status recv_status)
{
	struct roce_wc wc[4];
	expect_nak(rx(q), code, q.psn);
	cr_assert_eq(roce_qp_state(qp), ROCE_QPS_ERR);
	int n = roce_poll_cq(rcq, 4, wc);
	cr_assert_geq(n, 1);
	cr_assert_eq(wc[0].status, recv_status, "status %d", wc[0].status);
}

Test(roce_resp, write_with_a_bad_rkey_or_out_of_bounds_is_a_remote_access_error)
{
	post_recv(1, 0x100000, 64, 0, 0);
	expect_fatal((struct req){ ROCE_RC_WRITE_ONLY, 0xfffffe, true, 8, 0, 0x100000, roce_mr_rkey(mr) ^ 1, 8 },
		     AETH_NAK_REMOTE_ACCESS, ROCE_WC_WR_FLUSH_ERR);
}

Test(roce_resp, write_beyond_the_mr_is_a_remote_access_error)
{
	post_recv(1, 0x100000, 64, 0, 0);
	expect_fatal((struct req){ ROCE_RC_WRITE_ONLY, 0xfffffe, true, 8, 0, 0x100000 + sizeof(mem) - 4,
				   roce_mr_rkey(mr), 8 },
		     AETH_NAK_REMOTE_ACCESS, ROCE_WC_WR_FLUSH_ERR);
}

Test(roce_resp, middle_without_first_is_an_invalid_request)
{
	post_recv(1, 0x100000, 64, 0, 0);
	expect_fatal((struct req){ ROCE_RC_SEND_MIDDLE, 0xfffffe, true, 1024 }, AETH_NAK_INVALID_REQ,
		     ROCE_WC_WR_FLUSH_ERR);
}

Test(roce_resp, a_short_first_packet_is_an_invalid_request)
{
	post_recv(1, 0x100000, 4096, 0, 0);
	expect_fatal((struct req){ ROCE_RC_SEND_FIRST, 0xfffffe, true, 1000 }, AETH_NAK_INVALID_REQ,
		     ROCE_WC_WR_FLUSH_ERR);
}

Test(roce_resp, a_send_longer_than_the_wr_completes_with_a_length_error)
{
	post_recv(1, 0x100000, 16, 0, 0);
	expect_fatal((struct req){ ROCE_RC_SEND_ONLY, 0xfffffe, true, 17 }, AETH_NAK_INVALID_REQ, ROCE_WC_LOC_LEN_ERR);
}

Test(roce_resp, a_send_into_a_bad_lkey_is_a_remote_operational_error)
{
	struct roce_recv_wr w = { .wr_id = 3, .num_sge = 1, .sg_list = { { 0x100000, 64, 0xdead00 } } };
	cr_assert_eq(roce_post_recv(qp, &w), 0);
	expect_fatal((struct req){ ROCE_RC_SEND_ONLY, 0xfffffe, true, 8 }, AETH_NAK_REMOTE_OP, ROCE_WC_LOC_PROT_ERR);
}

/* Feed a request without taking what the responder owes. */
static void rx_only(struct req q)
{
	struct roce_pkt p = { .opcode = q.opcode, .flags = roce_opcode_flags(q.opcode), .psn = q.psn,
			      .ackreq = q.ackreq, .va = q.va, .rkey = q.rkey, .dmalen = q.dmalen,
			      .destqp = roce_qp_num(qp), .pkey = 0xffff, .hdr_len = (uint16_t)roce_hdr_len(q.opcode) };
	struct netbuf *nb = netbuf_alloc(NETBUF_HEADROOM);
	cr_assert_not_null(nb);
	cr_assert_eq(q.len, 0);
	roce_resp_rx(qp, &p, nb);
	netbuf_free(nb);
}

static void expect_read_resp(unsigned i, uint8_t opcode, uint32_t psn, uint32_t msn, uint64_t off, uint32_t len)
{
	const struct roce_tx *t = &sent[i];
	cr_assert_eq(t->pkt.opcode, opcode, "packet %u: %s", i, roce_opcode_name(t->pkt.opcode));
	cr_assert_eq(t->pkt.psn, psn, "packet %u psn %#x want %#x", i, t->pkt.psn, psn);
	cr_assert_eq(t->len, len);
	cr_assert_eq(t->pkt.payload_len, len);
	if (len) {
		cr_assert_eq(t->nseg, 1);
		cr_assert_eq(t->seg[0].mem.bus, (uintptr_t)mem + off);
		cr_assert_eq(t->seg[0].len, len);
	}
	if (opcode != ROCE_RC_READ_RESP_MIDDLE) {
		cr_assert_eq(t->pkt.msn, msn);
		cr_assert_eq(t->pkt.syndrome & AETH_SYNDROME_TYPE_MASK, AETH_TYPE_ACK);
	}
}

Test(roce_resp, read_is_segmented_by_the_path_mtu_and_executed_again_from_a_retry)
{
	uint32_t rkey = roce_mr_rkey(mr);
	struct out o = rx((struct req){ ROCE_RC_READ_REQUEST, 0xfffffe, true, 0, 0, 0x100200, rkey, 2500 });
	cr_assert_eq(o.n, 3);
	expect_read_resp(0, ROCE_RC_READ_RESP_FIRST, 0xfffffe, 1, 0x200, 1024);
	expect_read_resp(1, ROCE_RC_READ_RESP_MIDDLE, 0xffffff, 1, 0x200 + 1024, 1024);
	expect_read_resp(2, ROCE_RC_READ_RESP_LAST, 0x000000, 1, 0x200 + 2048, 452);
	/* the READ took three PSNs: the next request is PSN 1 */
	post_recv(1, 0x101000, 64, 0, 0);
	expect_ack(rx((struct req){ ROCE_RC_SEND_ONLY, 0x000001, true, 8 }), 1, 2);
	/* the requester lost the last two responses and asks again from the middle */
	o = rx((struct req){ ROCE_RC_READ_REQUEST, 0xffffff, true, 0, 0, 0x100200 + 1024, rkey, 1476 });
	cr_assert_eq(o.n, 2);
	expect_read_resp(0, ROCE_RC_READ_RESP_FIRST, 0xffffff, 1, 0x200 + 1024, 1024);
	expect_read_resp(1, ROCE_RC_READ_RESP_LAST, 0x000000, 1, 0x200 + 2048, 452);
	/* a retry reaching beyond the READ's PSNs, or older than every resource, is dropped */
	cr_assert_eq(rx((struct req){ ROCE_RC_READ_REQUEST, 0xffffff, true, 0, 0, 0x100200, rkey, 4000 }).n, 0);
	cr_assert_eq(rx((struct req){ ROCE_RC_READ_REQUEST, 0xfffff0, true, 0, 0, 0x100200, rkey, 8 }).n, 0);
	cr_assert_eq(qp->resp.replays, 1);
	cr_assert_eq(roce_qp_state(qp), ROCE_QPS_RTS);
}

Test(roce_resp, zero_length_read_is_one_response_without_a_key_check)
{
	struct out o = rx((struct req){ ROCE_RC_READ_REQUEST, 0xfffffe, true, 0, 0, 0, 0xdeadbe, 0 });
	cr_assert_eq(o.n, 1);
	cr_assert_eq(sent[0].pkt.opcode, ROCE_RC_READ_RESP_ONLY);
	cr_assert_eq(sent[0].len, 0);
	cr_assert_eq(qp->resp.epsn, 0xffffff);
}

Test(roce_resp, responses_go_out_in_psn_order_before_a_later_ack)
{
	uint32_t rkey = roce_mr_rkey(mr);
	post_recv(1, 0x101000, 64, 0, 0);
	post_recv(2, 0x101000, 64, 0, 0);
	/* SEND (ACK wanted), READ of 2 packets, SEND: nothing taken in between */
	struct roce_pkt p = { .opcode = ROCE_RC_SEND_ONLY, .flags = roce_opcode_flags(ROCE_RC_SEND_ONLY),
			      .psn = 0xfffffe, .ackreq = true, .hdr_len = 12, .payload_len = 4 };
	struct netbuf *nb = netbuf_alloc(NETBUF_HEADROOM);
	cr_assert_not_null(netbuf_put(nb, 16));
	roce_resp_rx(qp, &p, nb);
	rx_only((struct req){ ROCE_RC_READ_REQUEST, 0xffffff, false, 0, 0, 0x100000, rkey, 1100 });
	p.psn = 0x000001;
	roce_resp_rx(qp, &p, nb);
	netbuf_free(nb);
	cr_assert_eq(drain(), 3, "the first ACK was covered by the later one: %u", nsent);
	expect_read_resp(0, ROCE_RC_READ_RESP_FIRST, 0xffffff, 2, 0, 1024);
	expect_read_resp(1, ROCE_RC_READ_RESP_LAST, 0x000000, 2, 1024, 76);
	expect_ack(decode(&sent[2]), 0x000001, 3);
}

Test(roce_resp, more_reads_outstanding_than_max_dest_rd_atomic_is_an_invalid_request)
{
	uint32_t rkey = roce_mr_rkey(mr);
	/* max_dest_rd_atomic is 4: four READs owe responses, the fifth is one too many */
	for (uint32_t i = 0; i < 4; i++)
		rx_only((struct req){ ROCE_RC_READ_REQUEST, roce_psn_add(0xfffffe, i), false, 0, 0, 0x100000, rkey, 8 });
	cr_assert_eq(roce_qp_state(qp), ROCE_QPS_RTS);
	rx_only((struct req){ ROCE_RC_READ_REQUEST, 2, false, 0, 0, 0x100000, rkey, 8 });
	cr_assert_eq(roce_qp_state(qp), ROCE_QPS_ERR);
	cr_assert_eq(drain(), 1, "the READs in the ERR QP are not answered, the NAK is");
	expect_nak(decode(&sent[0]), AETH_NAK_INVALID_REQ, 2);
}

Test(roce_resp, read_with_a_bad_rkey_is_a_remote_access_error)
{
	post_recv(1, 0x100000, 64, 0, 0);
	expect_fatal((struct req){ ROCE_RC_READ_REQUEST, 0xfffffe, true, 0, 0, 0x100000, roce_mr_rkey(mr) + 1, 8 },
		     AETH_NAK_REMOTE_ACCESS, ROCE_WC_WR_FLUSH_ERR);
}

Test(roce_resp, read_of_an_mr_deregistered_midway_is_a_remote_access_nak)
{
	struct roce_tx tx;
	rx_only((struct req){ ROCE_RC_READ_REQUEST, 0xfffffe, true, 0, 0, 0x100000, roce_mr_rkey(mr), 3000 });
	cr_assert(roce_resp_tx_next(qp, &tx));
	cr_assert_eq(tx.pkt.opcode, ROCE_RC_READ_RESP_FIRST);
	roce_resp_tx_done(qp, &tx);
	roce_dereg_mr(mr);
	mr = NULL;
	cr_assert_eq(drain(), 1);
	expect_nak(decode(&sent[0]), AETH_NAK_REMOTE_ACCESS, 0xffffff);
	cr_assert_eq(roce_qp_state(qp), ROCE_QPS_ERR);
}

Test(roce_resp, atomics_execute_once_and_a_retry_gets_the_saved_result)
{
	uint32_t rkey = roce_mr_rkey(mr);
	uint64_t *cell = (uint64_t *)(mem + 0x800);
	*cell = 5;
	struct out o = rx((struct req){ .opcode = ROCE_RC_CMP_SWAP, .psn = 0xfffffe, .ackreq = true, .va = 0x100800,
					.rkey = rkey, .compare = 5, .swap_add = 9 });
	cr_assert_eq(o.n, 1);
	cr_assert_eq(sent[0].pkt.opcode, ROCE_RC_ATOMIC_ACK);
	cr_assert_eq(sent[0].pkt.orig, 5);
	cr_assert_eq(sent[0].pkt.psn, 0xfffffe);
	cr_assert_eq(sent[0].pkt.msn, 1);
	cr_assert_eq(*cell, 9);
	/* a compare that does not match leaves the cell */
	rx((struct req){ .opcode = ROCE_RC_CMP_SWAP, .psn = 0xffffff, .ackreq = true, .va = 0x100800, .rkey = rkey,
			 .compare = 5, .swap_add = 77 });
	cr_assert_eq(sent[0].pkt.orig, 9);
	cr_assert_eq(*cell, 9);
	rx((struct req){ .opcode = ROCE_RC_FETCH_ADD, .psn = 0, .ackreq = true, .va = 0x100800, .rkey = rkey,
			 .swap_add = 3 });
	cr_assert_eq(sent[0].pkt.orig, 9);
	cr_assert_eq(*cell, 12);
	/* the requester lost the first ACK: the same answer, not executed again */
	o = rx((struct req){ .opcode = ROCE_RC_CMP_SWAP, .psn = 0xfffffe, .ackreq = true, .va = 0x100800,
			     .rkey = rkey, .compare = 12, .swap_add = 1000 });
	cr_assert_eq(o.n, 1);
	cr_assert_eq(sent[0].pkt.opcode, ROCE_RC_ATOMIC_ACK);
	cr_assert_eq(sent[0].pkt.orig, 5);
	cr_assert_eq(sent[0].pkt.psn, 0xfffffe);
	cr_assert_eq(*cell, 12);
	cr_assert_eq(qp->resp.atomics, 3);
	cr_assert_eq(qp->resp.replays, 1);
}

Test(roce_resp, misaligned_atomic_is_an_invalid_request)
{
	post_recv(1, 0x100000, 64, 0, 0);
	expect_fatal((struct req){ .opcode = ROCE_RC_FETCH_ADD, .psn = 0xfffffe, .ackreq = true, .va = 0x100804,
				   .rkey = roce_mr_rkey(mr), .swap_add = 1 },
		     AETH_NAK_INVALID_REQ, ROCE_WC_WR_FLUSH_ERR);
}

Test(roce_resp, ack_credits_follow_the_receive_queue)
{
	cr_assert_eq(roce_resp_credit_code(0), 0);
	cr_assert_eq(roce_resp_credit_code(1), 1);
	cr_assert_eq(roce_resp_credit_code(5), 4);
	cr_assert_eq(roce_resp_credit_code(6), 5);
	cr_assert_eq(roce_resp_credit_code(128), 14);
	cr_assert_eq(roce_resp_credit_code(200), 15);
	cr_assert_eq(roce_resp_credit_code(40000), 30);
	for (int i = 0; i < 4; i++)
		post_recv((uint64_t)i, 0x101000, 64, 0, 0);
	struct out o = rx((struct req){ ROCE_RC_SEND_ONLY, 0xfffffe, true, 8 });
	cr_assert_eq(o.syndrome, AETH_TYPE_ACK | 3, "3 WRs left: code 3 (%#x)", o.syndrome);
}

Test(roce_resp, requests_are_dropped_silently_outside_rtr_rts)
{
	struct roce_qp_attr a = { .qp_state = ROCE_QPS_ERR };
	cr_assert_eq(roce_modify_qp(qp, &a, ROCE_QP_STATE), 0);
	cr_assert_eq(rx((struct req){ ROCE_RC_SEND_ONLY, 0xfffffe, true, 8 }).answer, ANSWER_NONE);
	cr_assert_eq(rx((struct req){ ROCE_RC_SEND_ONLY, 0x000009, true, 8 }).answer, ANSWER_NONE);
}
