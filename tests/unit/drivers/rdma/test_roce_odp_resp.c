// sources: drivers/rdma/roce_resp.c drivers/rdma/roce_resp_tx.c drivers/rdma/roce_wire.c drivers/rdma/roce_dev.c drivers/rdma/roce_mr.c drivers/rdma/roce_odp.c drivers/rdma/roce_odp_mr.c drivers/rdma/roce_cq.c drivers/rdma/roce_qp.c drivers/rdma/roce_req.c drivers/rdma/roce_comp.c drivers/nic/netdev.c mm/pool.c mm/dma.c lib/log.c tests/unit/drivers/rdma/fake_odp_store.c
/*
 * The responder and requester over an on-demand paged MR backed by the fake store: a
 * remote WRITE, READ or atomic that touches an absent page is answered with an RNR NAK
 * (ePSN kept, the packets behind it dropped without a sequence NAK), and the retry after
 * the page-in succeeds; a multi-packet WRITE faulting in its middle resumes there; READ
 * responses wait for a page invalidated under them; a deregistered MR fails an owed READ;
 * a local SEND from an ODP MR waits in the send queue. Pools back to zero after each test.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>
#include "drivers/rdma/roce_internal.h"
#include "drivers/rdma/roce_odp_mr.h"
#include "drivers/rdma/roce_req.h"
#include "drivers/rdma/roce_resp.h"
#include "lib/clock.h"
#include "tests/unit/drivers/rdma/fake_odp_store.h"
#include "tests/unit/unit_support.h"
#include "tests/unit/drivers/rdma/roce_qp_up.h"

#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

#define PG ROCE_ODP_PAGE_SIZE
#define IOVA 0x40000000ull

static struct roce_dev *dev;
static struct roce_pd *pd;
static struct roce_cq *cq;
static struct roce_qp *qp;
static struct roce_mr *mr;
static struct roce_odp *odp;
static struct roce_odp_region *reg;
static struct fake_store fs;

static void setup(void)
{
	struct roce_qp_init_attr init = { .qp_type = ROCE_QPT_RC,
					  .cap = { .max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 2, .max_recv_sge = 2 } };
	struct roce_qp_attr a = { .qp_state = ROCE_QPS_INIT, .port_num = 1, .qp_access_flags = ROCE_ACCESS_ALL,
				  .path_mtu = ROCE_MTU_1024, .dest_qp_num = 0x77, .rq_psn = 100, .min_rnr_timer = 14,
				  .sq_psn = 5, .timeout = 14, .retry_cnt = 7, .rnr_retry = 7, .max_dest_rd_atomic = 4,
				  .max_rd_atomic = 4 };

	unit_pools_begin();
	fake_clock_install();
	cr_assert_eq(netbuf_pool_init(16), 0);
	cr_assert_eq(roce_dev_init(&dev, "odp"), 0);
	roce_dev_set_addr(dev, 0x0a0a000a, 1500);
	cr_assert_eq(roce_alloc_pd(dev, &pd), 0);
	cr_assert_eq(roce_create_cq(dev, 32, NULL, NULL, &cq), 0);
	init.send_cq = init.recv_cq = cq;
	cr_assert_eq(roce_create_qp(pd, &init, &qp), 0);
	roce_test_qp_rts(qp, &a, 0x0a0a0002);
	fake_store_init(&fs, 16 * PG);
	cr_assert_eq(roce_odp_init(&odp, 8), 0);
	cr_assert_eq(roce_odp_region_create(odp, "r", &fs.store, 16 * PG, &reg), 0);
	cr_assert_eq(roce_reg_mr_odp(pd, IOVA, reg, ROCE_ACCESS_ALL, &mr), 0);
	cr_assert_eq(roce_mr_odp(mr), reg);
}

static void teardown(void)
{
	if (mr)
		roce_dereg_mr(mr);
	if (roce_odp_region_destroy(reg))
		abort();
	fake_store_complete(&fs, 0);
	roce_destroy_qp(qp);
	roce_destroy_cq(cq);
	roce_dealloc_pd(pd);
	if (roce_odp_fini(odp) || roce_dev_destroy(dev) || netbuf_pool_destroy())
		abort();
	fake_store_fini(&fs);
	unit_pools_end();
}

TestSuite(roce_odp_resp, .init = setup, .fini = teardown);

struct req {
	uint8_t opcode;
	uint32_t psn;
	uint32_t len;
	uint8_t fill;
	uint64_t va;
	uint32_t dmalen;
	uint64_t swap_add, compare;
};

#define MAX_TX 16
static struct roce_tx sent[MAX_TX];
static unsigned nsent;

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

/* One request packet through the responder; returns how many packets it owed. */
static unsigned rx(struct req q)
{
	struct roce_pkt p = { .opcode = q.opcode, .flags = roce_opcode_flags(q.opcode), .psn = q.psn,
			      .ackreq = q.opcode != ROCE_RC_WRITE_FIRST && q.opcode != ROCE_RC_WRITE_MIDDLE,
			      .payload_len = q.len, .va = q.va, .rkey = roce_mr_rkey(mr), .dmalen = q.dmalen,
			      .destqp = roce_qp_num(qp), .pkey = 0xffff, .swap_add = q.swap_add, .compare = q.compare };
	struct netbuf *nb = netbuf_alloc(NETBUF_HEADROOM);

	p.hdr_len = (uint16_t)roce_hdr_len(q.opcode);
	cr_assert_not_null(nb);
	uint8_t *b = netbuf_put(nb, p.hdr_len + q.len);
	cr_assert_not_null(b);
	memset(b, 0, p.hdr_len);
	for (uint32_t i = 0; i < q.len; i++)
		b[p.hdr_len + i] = (uint8_t)(q.fill + i);
	roce_resp_rx(qp, &p, nb);
	netbuf_free(nb);
	return drain();
}

static void expect_rnr(uint32_t psn)
{
	cr_assert_eq(nsent, 1);
	cr_assert_eq(sent[0].pkt.opcode, ROCE_RC_ACK);
	cr_assert_eq(sent[0].pkt.syndrome, AETH_TYPE_RNR_NAK | 14, "syndrome %#x", sent[0].pkt.syndrome);
	cr_assert_eq(sent[0].pkt.psn, psn);
}

static void expect_ack(uint32_t psn)
{
	cr_assert_eq(nsent, 1);
	cr_assert_eq(sent[0].pkt.opcode, ROCE_RC_ACK);
	cr_assert_eq(sent[0].pkt.syndrome & AETH_SYNDROME_TYPE_MASK, AETH_TYPE_ACK, "syndrome %#x",
		     sent[0].pkt.syndrome);
	cr_assert_eq(sent[0].pkt.psn, psn);
}

/* The region's bytes through the ODP core (faulting them in as needed). */
static void region_read(uint64_t off, uint8_t *buf, uint32_t len)
{
	dma_addr_t mem[4];
	uint32_t pl[4];
	unsigned n;
	int rc;
	while ((rc = roce_odp_access(reg, off, len, false, 0, mem, pl, 4, &n)) == -EAGAIN)
		fake_store_complete(&fs, 0);
	cr_assert_eq(rc, 0);
	for (unsigned i = 0, d = 0; i < n; d += pl[i], i++)
		memcpy(buf + d, (void *)(uintptr_t)mem[i].bus, pl[i]);
}

Test(roce_odp_resp, a_write_to_an_absent_page_is_rnr_naked_and_the_retry_lands)
{
	uint8_t b[600];

	rx((struct req){ ROCE_RC_WRITE_ONLY, 100, 600, 0x10, IOVA + PG - 300, 600 });
	expect_rnr(100);
	cr_assert_eq(qp->resp.epsn, 100, "ePSN kept for the retry");
	cr_assert_eq(fs.nq, 2, "both pages the packet touches are paged in");
	cr_assert_eq(roce_odp_stats(odp)->rnr_naks, 1);
	/* the packets behind it are dropped quietly: no PSN-sequence NAK */
	cr_assert_eq(rx((struct req){ ROCE_RC_WRITE_ONLY, 101, 8, 0, IOVA, 8 }), 0);
	/* a retry before the page-in completes: RNR again, no second page-in */
	rx((struct req){ ROCE_RC_WRITE_ONLY, 100, 600, 0x10, IOVA + PG - 300, 600 });
	expect_rnr(100);
	cr_assert_eq(fs.nq, 2);
	fake_store_complete(&fs, 0);
	rx((struct req){ ROCE_RC_WRITE_ONLY, 100, 600, 0x10, IOVA + PG - 300, 600 });
	expect_ack(100);
	cr_assert_eq(qp->resp.epsn, 101);
	region_read(PG - 300, b, 600);
	for (unsigned i = 0; i < 600; i++)
		cr_assert_eq(b[i], (uint8_t)(0x10 + i));
	cr_assert_eq(roce_odp_region_dirty(reg), 2);
	cr_assert_eq(qp->state, ROCE_QPS_RTS);
}

Test(roce_odp_resp, a_multi_packet_write_faulting_in_its_middle_resumes_there)
{
	uint8_t b[PG];

	/* page 0 resident, page 1 not: the FIRST packet lands, the MIDDLE one faults */
	region_read(0, b, 8);
	cr_assert_eq(rx((struct req){ ROCE_RC_WRITE_FIRST, 100, 1024, 1, IOVA + 3 * 1024, 3072 }), 0);
	rx((struct req){ ROCE_RC_WRITE_MIDDLE, 101, 1024, 2 });
	expect_rnr(101);
	cr_assert_eq(rx((struct req){ ROCE_RC_WRITE_LAST, 102, 1024, 3 }), 0, "dropped behind the RNR NAK");
	fake_store_complete(&fs, 0);
	/* the requester goes back to its oldest unacknowledged PSN: 100 is a duplicate */
	cr_assert_eq(rx((struct req){ ROCE_RC_WRITE_FIRST, 100, 1024, 1, IOVA + 3 * 1024, 3072 }), 1);
	cr_assert_eq(rx((struct req){ ROCE_RC_WRITE_MIDDLE, 101, 1024, 2 }), 0);
	rx((struct req){ ROCE_RC_WRITE_LAST, 102, 1024, 3 });
	expect_ack(102);
	region_read(3 * 1024, b, 1024);
	cr_assert_eq(b[0], 1);
	region_read(4 * 1024, b, 2048);
	cr_assert_eq(b[0], 2);
	cr_assert_eq(b[1024], 3);
	cr_assert_eq(b[2047], (uint8_t)(3 + 1023));
}

Test(roce_odp_resp, a_read_of_absent_pages_is_rnr_naked_then_answered_from_the_store)
{
	uint32_t off = 2 * PG - 1000;

	rx((struct req){ ROCE_RC_READ_REQUEST, 100, 0, 0, IOVA + off, 3000 });
	expect_rnr(100);
	cr_assert_eq(qp->resp.epsn, 100);
	fake_store_complete(&fs, 0);
	cr_assert_eq(rx((struct req){ ROCE_RC_READ_REQUEST, 100, 0, 0, IOVA + off, 3000 }), 3);
	cr_assert_eq(qp->resp.epsn, 103);
	uint32_t at = off;
	for (unsigned k = 0; k < 3; k++) {
		const struct roce_tx *t = &sent[k];
		cr_assert_eq(t->pkt.psn, 100 + k);
		cr_assert_eq(t->len, k < 2 ? 1024 : 952);
		for (unsigned s = 0; s < t->nseg; s++)
			for (uint32_t i = 0; i < t->seg[s].len; i++, at++)
				cr_assert_eq(((uint8_t *)(uintptr_t)t->seg[s].mem.bus)[i], fake_store_pattern(at));
	}
	cr_assert_eq(at, off + 3000);
	cr_assert_eq(sent[0].nseg, 2, "the response crossing the page boundary gathers two frames");
	cr_assert_eq(sent[1].nseg, 1);
}

Test(roce_odp_resp, read_responses_wait_for_a_page_invalidated_under_them)
{
	rx((struct req){ ROCE_RC_READ_REQUEST, 100, 0, 0, IOVA, 2048 });
	fake_store_complete(&fs, 0);
	/* accept the READ, then drop the page before its responses go */
	struct roce_pkt p = { .opcode = ROCE_RC_READ_REQUEST, .flags = roce_opcode_flags(ROCE_RC_READ_REQUEST),
			      .psn = 100, .va = IOVA, .rkey = roce_mr_rkey(mr), .dmalen = 2048,
			      .destqp = roce_qp_num(qp), .pkey = 0xffff };
	struct netbuf *nb = netbuf_alloc(NETBUF_HEADROOM);
	cr_assert_not_null(netbuf_put(nb, (size_t)roce_hdr_len(p.opcode)));
	p.hdr_len = (uint16_t)roce_hdr_len(p.opcode);
	roce_resp_rx(qp, &p, nb);
	netbuf_free(nb);
	cr_assert_eq(qp->resp.epsn, 102);
	cr_assert_eq(roce_odp_invalidate(reg, 0, PG), 1);
	cr_assert_eq(drain(), 0, "the response waits for the page");
	cr_assert_eq(fs.nq, 1);
	fake_store_complete(&fs, 0);
	cr_assert_eq(drain(), 2);
	cr_assert_eq(sent[0].pkt.opcode, ROCE_RC_READ_RESP_FIRST);
	cr_assert_eq(sent[1].pkt.opcode, ROCE_RC_READ_RESP_LAST);
	cr_assert_eq(qp->state, ROCE_QPS_RTS);
}

Test(roce_odp_resp, deregistering_the_mr_fails_an_owed_read_cleanly)
{
	struct roce_pkt p = { .opcode = ROCE_RC_READ_REQUEST, .flags = roce_opcode_flags(ROCE_RC_READ_REQUEST),
			      .psn = 100, .va = IOVA, .rkey = roce_mr_rkey(mr), .dmalen = 2048,
			      .destqp = roce_qp_num(qp), .pkey = 0xffff };
	struct netbuf *nb = netbuf_alloc(NETBUF_HEADROOM);

	region_read(0, (uint8_t[8]){ 0 }, 8);
	cr_assert_not_null(netbuf_put(nb, (size_t)roce_hdr_len(p.opcode)));
	p.hdr_len = (uint16_t)roce_hdr_len(p.opcode);
	roce_resp_rx(qp, &p, nb);
	netbuf_free(nb);
	cr_assert_eq(roce_odp_region_destroy(reg), -EBUSY, "the MR holds the region");
	roce_dereg_mr(mr);
	mr = NULL;
	cr_assert_eq(drain(), 1);
	cr_assert_eq(sent[0].pkt.syndrome, AETH_TYPE_NAK | AETH_NAK_REMOTE_ACCESS);
	cr_assert_eq(qp->state, ROCE_QPS_ERR);
}

Test(roce_odp_resp, atomics_on_absent_pages_are_rnr_naked_then_run_once)
{
	uint64_t orig, now;

	memcpy(&orig, fs.disk + 5 * PG + 64, 8);
	rx((struct req){ ROCE_RC_FETCH_ADD, 100, 0, 0, IOVA + 5 * PG + 64, 8, 5 });
	expect_rnr(100);
	cr_assert_eq(qp->resp.atomics, 0);
	fake_store_complete(&fs, 0);
	cr_assert_eq(rx((struct req){ ROCE_RC_FETCH_ADD, 100, 0, 0, IOVA + 5 * PG + 64, 8, 5 }), 1);
	cr_assert_eq(sent[0].pkt.opcode, ROCE_RC_ATOMIC_ACK);
	cr_assert_eq(sent[0].pkt.orig, orig);
	region_read(5 * PG + 64, (uint8_t *)&now, 8);
	cr_assert_eq(now, orig + 5);
	/* compare & swap on another absent page */
	memcpy(&orig, fs.disk + 9 * PG, 8);
	rx((struct req){ ROCE_RC_CMP_SWAP, 101, 0, 0, IOVA + 9 * PG, 8, 0x1234, orig });
	expect_rnr(101);
	fake_store_complete(&fs, 0);
	cr_assert_eq(rx((struct req){ ROCE_RC_CMP_SWAP, 101, 0, 0, IOVA + 9 * PG, 8, 0x1234, orig }), 1);
	cr_assert_eq(sent[0].pkt.orig, orig);
	region_read(9 * PG, (uint8_t *)&now, 8);
	cr_assert_eq(now, 0x1234);
	cr_assert_eq(qp->resp.atomics, 2);
	cr_assert_eq(roce_odp_stats(odp)->rnr_naks, 2);
}

Test(roce_odp_resp, a_failed_page_in_is_a_remote_operational_error)
{
	rx((struct req){ ROCE_RC_WRITE_ONLY, 100, 8, 0, IOVA, 8 });
	expect_rnr(100);
	fs.fail_complete = -EIO;
	fake_store_complete(&fs, 0);
	rx((struct req){ ROCE_RC_WRITE_ONLY, 100, 8, 0, IOVA, 8 });
	cr_assert_eq(sent[0].pkt.syndrome, AETH_TYPE_NAK | AETH_NAK_REMOTE_OP);
	cr_assert_eq(qp->state, ROCE_QPS_ERR);
}

Test(roce_odp_resp, a_local_send_from_an_odp_mr_waits_in_the_send_queue)
{
	struct roce_send_wr wr = { .wr_id = 7, .opcode = ROCE_WR_SEND, .send_flags = ROCE_SEND_SIGNALED, .num_sge = 1,
				   .sg_list = { { IOVA + 3 * PG + 100, 200, roce_mr_lkey(mr) } } };
	struct roce_tx tx;

	cr_assert_eq(roce_post_send(qp, &wr), 0);
	cr_assert(!roce_req_tx_next(qp, 0, &tx), "the page is not resident: nothing to send yet");
	cr_assert_eq(roce_qp_sq_count(qp), 1);
	cr_assert_eq(qp->state, ROCE_QPS_RTS);
	cr_assert_eq(roce_odp_stats(odp)->local_waits, 1);
	fake_store_complete(&fs, 0);
	cr_assert(roce_req_tx_next(qp, 0, &tx));
	cr_assert_eq(tx.pkt.opcode, ROCE_RC_SEND_ONLY);
	cr_assert_eq(tx.len, 200);
	cr_assert_eq(((uint8_t *)(uintptr_t)tx.seg[0].mem.bus)[0], fake_store_pattern(3 * PG + 100));
	/* a local access that wants contiguous memory (a receive buffer) is refused */
	struct roce_recv_wr rw = { .wr_id = 8, .num_sge = 1, .sg_list = { { IOVA, 64, roce_mr_lkey(mr) } } };
	cr_assert_eq(roce_post_recv(qp, &rw), 0);
	dma_addr_t m;
	cr_assert_eq(roce_mr_check(dev, pd, roce_mr_lkey(mr), false, ROCE_ACCESS_LOCAL_WRITE, IOVA, 64, &m), -EPERM);
	roce_req_tx_done(qp, 0, &tx);
}
