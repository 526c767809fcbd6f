// sources: drivers/rdma/roce_dev.c drivers/rdma/roce_mr.c drivers/rdma/roce_odp.c drivers/rdma/roce_odp_mr.c drivers/rdma/roce_cq.c drivers/rdma/roce_qp.c drivers/rdma/roce_req.c mm/pool.c lib/log.c drivers/nic/netdev.c mm/dma.c
/*
 * RoCE verbs objects: the port (GID from the IPv4 address, path MTU from the interface
 * MTU), PD/MR keys with a generation and the key/PD/rights/bounds check, CQ order,
 * overflow and the one-shot callback, SRQ, and the QP state machine: every required
 * attribute, nothing beyond the optional ones, range checks, flush on ERR, posting rules,
 * QPNs never reused at once. Every test destroys what it made: pools back to zero.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>
#include "drivers/rdma/roce_odp_mr.h"
#include "drivers/rdma/roce_rc.h"
#include "drivers/rdma/roce_verbs.h"
#include "tests/unit/unit_support.h"

TestSuite(roce_verbs, .init = unit_pools_begin, .fini = unit_pools_end);

struct fixture {
	struct roce_dev *dev;
	struct roce_pd *pd;
	struct roce_cq *scq, *rcq;
};

static void fx_up(struct fixture *f)
{
	cr_assert_eq(roce_dev_init(&f->dev, "rxe_test"), 0);
	roce_dev_set_addr(f->dev, 0x0a0a000a, 1500);
	cr_assert_eq(roce_alloc_pd(f->dev, &f->pd), 0);
	cr_assert_eq(roce_create_cq(f->dev, 16, NULL, NULL, &f->scq), 0);
	cr_assert_eq(roce_create_cq(f->dev, 16, NULL, NULL, &f->rcq), 0);
}

static void fx_down(struct fixture *f)
{
	cr_assert_eq(roce_destroy_cq(f->scq), 0);
	cr_assert_eq(roce_destroy_cq(f->rcq), 0);
	cr_assert_eq(roce_dealloc_pd(f->pd), 0);
	cr_assert_eq(roce_dev_destroy(f->dev), 0);
}

static struct roce_qp *fx_qp(struct fixture *f, enum roce_qp_type t)
{
	struct roce_qp_init_attr init = { .qp_type = t, .send_cq = f->scq, .recv_cq = f->rcq,
					  .cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 2, .max_recv_sge = 2 } };
	struct roce_qp *qp;
	cr_assert_eq(roce_create_qp(f->pd, &init, &qp), 0);
	cr_assert_eq(roce_qp_state(qp), ROCE_QPS_RESET);
	return qp;
}

#define INIT_MASK (ROCE_QP_STATE | ROCE_QP_PKEY_INDEX | ROCE_QP_PORT | ROCE_QP_ACCESS_FLAGS)
#define RTR_MASK (ROCE_QP_STATE | ROCE_QP_AV | ROCE_QP_PATH_MTU | ROCE_QP_DEST_QPN | ROCE_QP_RQ_PSN | \
		  ROCE_QP_MAX_DEST_RD_ATOMIC | ROCE_QP_MIN_RNR_TIMER)
#define RTS_MASK (ROCE_QP_STATE | ROCE_QP_SQ_PSN | ROCE_QP_TIMEOUT | ROCE_QP_RETRY_CNT | ROCE_QP_RNR_RETRY | \
		  ROCE_QP_MAX_QP_RD_ATOMIC)

static struct roce_qp_attr rc_attr(enum roce_qp_state s)
{
	struct roce_qp_attr a = { .qp_state = s, .port_num = 1, .qp_access_flags = ROCE_ACCESS_ALL,
				  .path_mtu = ROCE_MTU_1024, .dest_qp_num = 0x123, .rq_psn = 0xfffffe,
				  .max_dest_rd_atomic = 4, .min_rnr_timer = 12, .sq_psn = 0x10, .timeout = 14,
				  .retry_cnt = 7, .rnr_retry = 7, .max_rd_atomic = 4 };
	roce_gid_from_ipv4(0x0a0a0002, &a.ah_attr.dgid);
	return a;
}

static void to_rts(struct roce_qp *qp)
{
	struct roce_qp_attr a = rc_attr(ROCE_QPS_INIT);
	cr_assert_eq(roce_modify_qp(qp, &a, INIT_MASK), 0);
	a.qp_state = ROCE_QPS_RTR;
	cr_assert_eq(roce_modify_qp(qp, &a, RTR_MASK), 0);
	a.qp_state = ROCE_QPS_RTS;
	cr_assert_eq(roce_modify_qp(qp, &a, RTS_MASK), 0);
	cr_assert_eq(roce_qp_state(qp), ROCE_QPS_RTS);
}

Test(roce_verbs, port_gid_and_path_mtu)
{
	struct roce_dev *dev;
	struct roce_gid g;
	struct roce_port_attr pa;
	uint32_t ip;
	static const uint8_t want[16] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 10, 0, 10 };

	cr_assert_eq(roce_dev_init(&dev, "rxe0"), 0);
	cr_assert_eq(roce_query_gid(dev, 0, &g), -EINVAL, "no address yet");
	roce_dev_set_addr(dev, 0x0a0a000a, 1500);
	cr_assert_eq(roce_query_gid(dev, 0, &g), 0);
	cr_assert_eq(memcmp(g.raw, want, 16), 0);
	cr_assert_eq(roce_query_gid(dev, 1, &g), -EINVAL);
	cr_assert_eq(roce_gid_to_ipv4(&g, &ip), 0);
	cr_assert_eq(ip, 0x0a0a000a);
	g.raw[10] = 0;
	cr_assert_eq(roce_gid_to_ipv4(&g, &ip), -EINVAL);
	roce_query_port(dev, &pa);
	cr_assert_eq(pa.active_mtu, ROCE_MTU_1024);  /* as Linux rxe on a 1500 B netdev */
	cr_assert_eq(pa.pkey, 0xffff);
	roce_dev_set_addr(dev, 0x0a0a000a, 9000);
	roce_query_port(dev, &pa);
	cr_assert_eq(pa.active_mtu, ROCE_MTU_4096);
	roce_dev_set_addr(dev, 0x0a0a000a, 576);
	roce_query_port(dev, &pa);
	cr_assert_eq(pa.active_mtu, ROCE_MTU_512);
	roce_dev_set_addr(dev, 0x0a0a000a, 575);
	roce_query_port(dev, &pa);
	cr_assert_eq(pa.active_mtu, ROCE_MTU_256);
	cr_assert_eq(roce_mtu_bytes(ROCE_MTU_4096), 4096);
	cr_assert_eq(roce_mtu_bytes((enum roce_mtu)0), 0);
	cr_assert_eq(roce_mtu_bytes((enum roce_mtu)6), 0);
	cr_assert_eq(roce_dev_destroy(dev), 0);
}

Test(roce_verbs, mr_keys_rights_and_bounds)
{
	struct fixture f;
	struct roce_pd *pd2;
	struct roce_mr *mr, *mr2, *dmr;
	static uint8_t buf[4096];
	dma_addr_t m;

	fx_up(&f);
	cr_assert_eq(roce_alloc_pd(f.dev, &pd2), 0);
	/* remote write / atomic without local write: refused (11.2.8.1) */
	cr_assert_eq(roce_reg_mr(f.pd, 0x1000, 4096, dma_addr_host(buf), ROCE_ACCESS_REMOTE_WRITE, &mr), -EINVAL);
	cr_assert_eq(roce_reg_mr(f.pd, 0x1000, 4096, dma_addr_host(buf), ROCE_ACCESS_REMOTE_ATOMIC, &mr), -EINVAL);
	cr_assert_eq(roce_reg_mr(f.pd, 0x1000, 4096, dma_addr_host(buf), 0x10, &mr), -EINVAL);
	cr_assert_eq(roce_reg_mr(f.pd, 0x1000, 0, dma_addr_host(buf), 0, &mr), -EINVAL);
	cr_assert_eq(roce_reg_mr(f.pd, UINT64_MAX - 10, 4096, dma_addr_host(buf), 0, &mr), -EINVAL);

	cr_assert_eq(roce_reg_mr(f.pd, 0x1000, 4096, dma_addr_host(buf),
				 ROCE_ACCESS_LOCAL_WRITE | ROCE_ACCESS_REMOTE_READ, &mr), 0);
	uint32_t key = roce_mr_rkey(mr);
	cr_assert_eq(key, roce_mr_lkey(mr));
	/* local read/write inside, exact end */
	cr_assert_eq(roce_mr_check(f.dev, f.pd, key, false, ROCE_ACCESS_LOCAL_WRITE, 0x1000, 4096, &m), 0);
	cr_assert_eq(m.bus, (uint64_t)(uintptr_t)buf);
	cr_assert_eq(m.cls, MEM_CLASS_HOST);
	cr_assert_eq(roce_mr_check(f.dev, f.pd, key, false, 0, 0x1ff0, 16, &m), 0);
	cr_assert_eq(m.bus, (uint64_t)(uintptr_t)buf + 0xff0);
	cr_assert_eq(roce_mr_check(f.dev, f.pd, key, false, 0, 0x2000, 0, &m), 0, "zero length at the end");
	/* bounds */
	cr_assert_eq(roce_mr_check(f.dev, f.pd, key, false, 0, 0x1ff0, 17, &m), -ERANGE);
	cr_assert_eq(roce_mr_check(f.dev, f.pd, key, false, 0, 0xfff, 1, &m), -ERANGE);
	cr_assert_eq(roce_mr_check(f.dev, f.pd, key, false, 0, 0x2001, 0, &m), -ERANGE);
	cr_assert_eq(roce_mr_check(f.dev, f.pd, key, false, 0, 0x1001, UINT64_MAX, &m), -ERANGE);
	/* rights: remote read yes, remote write no, remote access with no remote right no */
	cr_assert_eq(roce_mr_check(f.dev, f.pd, key, true, ROCE_ACCESS_REMOTE_READ, 0x1000, 8, &m), 0);
	cr_assert_eq(roce_mr_check(f.dev, f.pd, key, true, ROCE_ACCESS_REMOTE_WRITE, 0x1000, 8, &m), -EPERM);
	cr_assert_eq(roce_mr_check(f.dev, f.pd, key, true, 0, 0x1000, 8, &m), -EPERM);
	/* another PD, an unknown key, a key of the right slot with the wrong key byte */
	cr_assert_eq(roce_mr_check(f.dev, pd2, key, false, 0, 0x1000, 8, &m), -EPERM);
	cr_assert_eq(roce_mr_check(f.dev, f.pd, key ^ 0x100, false, 0, 0x1000, 8, &m), -ENOENT);
	cr_assert_eq(roce_mr_check(f.dev, f.pd, key ^ 0x1, false, 0, 0x1000, 8, &m), -ENOENT);
	cr_assert_eq(roce_mr_check(f.dev, f.pd, 0xffffffff, false, 0, 0x1000, 8, &m), -ENOENT);
	/* the PD is busy while the MR lives */
	cr_assert_eq(roce_dealloc_pd(f.pd), -EBUSY);
	/* a stale key never names the next MR of the same slot */
	cr_assert_eq(roce_dereg_mr(mr), 0);
	cr_assert_eq(roce_mr_check(f.dev, f.pd, key, false, 0, 0x1000, 8, &m), -ENOENT);
	cr_assert_eq(roce_reg_mr(f.pd, 0x1000, 4096, dma_addr_host(buf), ROCE_ACCESS_LOCAL_WRITE, &mr2), 0);
	cr_assert_eq(roce_mr_lkey(mr2) >> 8, key >> 8, "same slot");
	cr_assert_neq(roce_mr_lkey(mr2), key);
	cr_assert_eq(roce_mr_check(f.dev, f.pd, key, false, 0, 0x1000, 8, &m), -ENOENT);
	/* an MR over device memory keeps its class */
	cr_assert_eq(roce_reg_mr(f.pd, 0, 1 << 20, dma_addr_device(0xe040000000ull), ROCE_ACCESS_ALL, &dmr), 0);
	cr_assert_eq(roce_mr_check(f.dev, f.pd, roce_mr_rkey(dmr), true, ROCE_ACCESS_REMOTE_ATOMIC, 0x800, 8, &m), 0);
	cr_assert_eq(m.cls, MEM_CLASS_DEVICE);
	cr_assert_eq(m.bus, 0xe040000800ull);
	cr_assert_eq(roce_dereg_mr(dmr), 0);
	cr_assert_eq(roce_dereg_mr(mr2), 0);
	cr_assert_eq(roce_dealloc_pd(pd2), 0);
	fx_down(&f);
}

/* A strided MR: chunks of iova laid out with a gap behind each; a piece that ends at its
 * chunk's end has the gap as room (the sender's pad and ICRC), a local check stays inside
 * one chunk, and it takes no remote rights. */
Test(roce_verbs, strided_mr_maps_chunks_with_room)
{
	struct fixture f;
	struct roce_mr *mr;
	struct roce_tx_seg seg[ROCE_MAX_SGE];
	const dma_addr_t base = dma_addr_device(0xe040000000ull);
	unsigned n;
	dma_addr_t m;

	fx_up(&f);
	cr_assert_eq(roce_reg_mr_strided(f.pd, 0x10000, 4096, base, ROCE_ACCESS_REMOTE_READ, 1024, 8, &mr), -EINVAL);
	cr_assert_eq(roce_reg_mr_strided(f.pd, 0x10000, 4096, base, ROCE_ACCESS_LOCAL_WRITE, 0, 8, &mr), -EINVAL);
	cr_assert_eq(roce_reg_mr_strided(f.pd, 0x10000, 2500, base, ROCE_ACCESS_LOCAL_WRITE, 1024, 8, &mr), 0);
	uint32_t key = roce_mr_lkey(mr);
	/* a whole chunk: one piece, the gap as room */
	cr_assert_eq(roce_mr_map(f.dev, f.pd, key, false, 0, 0x10400, 1024, seg, ROCE_MAX_SGE, &n), 0);
	cr_assert_eq(n, 1);
	cr_assert_eq(seg[0].mem.bus, base.bus + 1032);
	cr_assert_eq(seg[0].len, 1024);
	cr_assert_eq(seg[0].room, 8);
	cr_assert_eq(seg[0].mem.cls, MEM_CLASS_DEVICE);
	/* across chunks: a piece per chunk, room only where a piece ends at its chunk's end */
	cr_assert_eq(roce_mr_map(f.dev, f.pd, key, false, 0, 0x10200, 1900, seg, ROCE_MAX_SGE, &n), 0);
	cr_assert_eq(n, 3);
	cr_assert_eq(seg[0].mem.bus, base.bus + 0x200);
	cr_assert_eq(seg[0].len, 512);
	cr_assert_eq(seg[0].room, 8);
	cr_assert_eq(seg[1].mem.bus, base.bus + 1032);
	cr_assert_eq(seg[1].len, 1024);
	cr_assert_eq(seg[1].room, 8);
	cr_assert_eq(seg[2].mem.bus, base.bus + 2064);
	cr_assert_eq(seg[2].len, 364);
	cr_assert_eq(seg[2].room, 0);
	cr_assert_eq(roce_mr_map(f.dev, f.pd, key, false, 0, 0x10000, 2500, seg, 2, &n), -E2BIG);
	cr_assert_eq(roce_mr_map(f.dev, f.pd, key, false, 0, 0x10000, 2501, seg, ROCE_MAX_SGE, &n), -ERANGE);
	/* local checks inside one chunk only; no remote access */
	cr_assert_eq(roce_mr_check(f.dev, f.pd, key, false, 0, 0x10800, 452, &m), 0);
	cr_assert_eq(m.bus, base.bus + 2064);
	cr_assert_eq(roce_mr_check(f.dev, f.pd, key, false, 0, 0x103ff, 2, &m), -ERANGE);
	cr_assert_eq(roce_mr_check(f.dev, f.pd, key, true, ROCE_ACCESS_REMOTE_READ, 0x10000, 8, &m), -EPERM);
	/* a plain MR's pieces have no room */
	struct roce_mr *plain;
	cr_assert_eq(roce_reg_mr(f.pd, 0x20000, 4096, base, ROCE_ACCESS_LOCAL_WRITE, &plain), 0);
	seg[0].room = 77;
	cr_assert_eq(roce_mr_map(f.dev, f.pd, roce_mr_lkey(plain), false, 0, 0x20000, 1024, seg, ROCE_MAX_SGE, &n), 0);
	cr_assert_eq(seg[0].room, 0);
	cr_assert_eq(roce_dereg_mr(plain), 0);
	cr_assert_eq(roce_dereg_mr(mr), 0);
	fx_down(&f);
}

Test(roce_verbs, mr_table_is_bounded)
{
	struct fixture f;
	static struct roce_mr *mrs[ROCE_MAX_MR];
	static uint8_t buf[64];
	struct roce_mr *extra;

	fx_up(&f);
	for (unsigned i = 0; i < ROCE_MAX_MR; i++)
		cr_assert_eq(roce_reg_mr(f.pd, 0, sizeof(buf), dma_addr_host(buf), 0, &mrs[i]), 0);
	cr_assert_eq(roce_reg_mr(f.pd, 0, sizeof(buf), dma_addr_host(buf), 0, &extra), -ENOMEM);
	for (unsigned i = 0; i < ROCE_MAX_MR; i++)
		roce_dereg_mr(mrs[i]);
	fx_down(&f);
}

static unsigned cb_calls;
static void cb(struct roce_cq *cq, void *ctx)
{
	(void)cq;
	cr_assert_eq(ctx, &cb_calls);
	cb_calls++;
}

Test(roce_verbs, cq_order_wrap_overflow_and_callback)
{
	struct roce_dev *dev;
	struct roce_cq *cq;
	struct roce_wc wc[8];

	cr_assert_eq(roce_dev_init(&dev, "rxe0"), 0);
	cr_assert_eq(roce_create_cq(dev, 0, NULL, NULL, &cq), -EINVAL);
	cr_assert_eq(roce_create_cq(dev, ROCE_MAX_CQE + 1, NULL, NULL, &cq), -EINVAL);
	cr_assert_eq(roce_create_cq(dev, 4, cb, &cb_calls, &cq), 0);
	cb_calls = 0;
	for (uint64_t round = 0; round < 3; round++) {
		for (uint64_t i = 0; i < 3; i++) {
			struct roce_wc w = { .wr_id = round * 10 + i };
			cr_assert_eq(roce_cq_push(cq, &w), 0);
		}
		cr_assert_eq(roce_poll_cq(cq, 2, wc), 2);
		cr_assert_eq(wc[0].wr_id, round * 10);
		cr_assert_eq(wc[1].wr_id, round * 10 + 1);
		cr_assert_eq(roce_poll_cq(cq, 8, wc), 1);
		cr_assert_eq(wc[0].wr_id, round * 10 + 2);
	}
	cr_assert_eq(cb_calls, 0, "not armed");
	roce_req_notify_cq(cq);
	struct roce_wc w = { .wr_id = 100 };
	cr_assert_eq(roce_cq_push(cq, &w), 0);
	cr_assert_eq(roce_cq_push(cq, &w), 0);
	cr_assert_eq(cb_calls, 1, "one shot");
	cr_assert_eq(roce_cq_push(cq, &w), 0);
	cr_assert_eq(roce_cq_push(cq, &w), 0);
	cr_assert_eq(roce_cq_push(cq, &w), -EOVERFLOW);
	cr_assert_eq(cb_calls, 2, "an overflow is reported");
	cr_assert_eq(roce_poll_cq(cq, 8, wc), 4, "what it held stays");
	cr_assert_eq(roce_poll_cq(cq, 8, wc), -EIO);
	cr_assert_eq(roce_destroy_cq(cq), 0);
	cr_assert_eq(roce_dev_destroy(dev), 0);
}

Test(roce_verbs, rc_qp_walk_and_attribute_rules)
{
	struct fixture f;
	struct roce_qp *qp;
	struct roce_qp_attr a, q;

	fx_up(&f);
	qp = fx_qp(&f, ROCE_QPT_RC);
	cr_assert_geq(roce_qp_num(qp), 0x100u, "QPNs below 0x100 are never handed out");
	cr_assert_eq(roce_qp_lookup(f.dev, roce_qp_num(qp)), qp);

	a = rc_attr(ROCE_QPS_INIT);
	/* RESET -> RTR/RTS: not transitions */
	a.qp_state = ROCE_QPS_RTR;
	cr_assert_eq(roce_modify_qp(qp, &a, RTR_MASK), -EINVAL);
	a.qp_state = ROCE_QPS_RTS;
	cr_assert_eq(roce_modify_qp(qp, &a, RTS_MASK), -EINVAL);
	a.qp_state = ROCE_QPS_ERR;
	cr_assert_eq(roce_modify_qp(qp, &a, ROCE_QP_STATE), -EINVAL);
	/* RESET -> INIT: each required attribute missing, then one not allowed */
	a.qp_state = ROCE_QPS_INIT;
	for (unsigned bit = 1; bit < 32; bit++) {
		unsigned m = 1u << bit;
		if (INIT_MASK & m)
			cr_assert_eq(roce_modify_qp(qp, &a, INIT_MASK & ~m), -EINVAL, "missing %#x", m);
		else
			cr_assert_eq(roce_modify_qp(qp, &a, INIT_MASK | m), -EINVAL, "extra %#x", m);
		cr_assert_eq(roce_qp_state(qp), ROCE_QPS_RESET);
	}
	/* values out of range */
	a.port_num = 2;
	cr_assert_eq(roce_modify_qp(qp, &a, INIT_MASK), -EINVAL);
	a.port_num = 1;
	a.pkey_index = 1;
	cr_assert_eq(roce_modify_qp(qp, &a, INIT_MASK), -EINVAL);
	a.pkey_index = 0;
	a.qp_access_flags = 0x20;
	cr_assert_eq(roce_modify_qp(qp, &a, INIT_MASK), -EINVAL);
	a.qp_access_flags = ROCE_ACCESS_ALL;
	cr_assert_eq(roce_modify_qp(qp, &a, INIT_MASK), 0);
	cr_assert_eq(roce_modify_qp(qp, &a, ROCE_QP_STATE), 0, "INIT -> INIT with nothing");

	/* INIT -> RTR */
	a.qp_state = ROCE_QPS_RTR;
	for (unsigned bit = 1; bit < 32; bit++) {
		unsigned m = 1u << bit;
		if (RTR_MASK & m)
			cr_assert_eq(roce_modify_qp(qp, &a, RTR_MASK & ~m), -EINVAL, "missing %#x", m);
	}
	cr_assert_eq(roce_modify_qp(qp, &a, RTR_MASK | ROCE_QP_SQ_PSN), -EINVAL);
	a.path_mtu = ROCE_MTU_2048;  /* above the port's 1024 */
	cr_assert_eq(roce_modify_qp(qp, &a, RTR_MASK), -EINVAL);
	a.path_mtu = ROCE_MTU_1024;
	a.rq_psn = 0x1000000;
	cr_assert_eq(roce_modify_qp(qp, &a, RTR_MASK), -EINVAL);
	a.rq_psn = 0xfffffe;
	a.dest_qp_num = 0x1000000;
	cr_assert_eq(roce_modify_qp(qp, &a, RTR_MASK), -EINVAL);
	a.dest_qp_num = 0x123;
	a.max_dest_rd_atomic = ROCE_MAX_RD_ATOMIC + 1;
	cr_assert_eq(roce_modify_qp(qp, &a, RTR_MASK), -EINVAL);
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = 32;
	cr_assert_eq(roce_modify_qp(qp, &a, RTR_MASK), -EINVAL);
	a.min_rnr_timer = 12;
	a.ah_attr.dgid.raw[10] = 0;  /* not IPv4-mapped: RoCE v2 over IPv4 only */
	cr_assert_eq(roce_modify_qp(qp, &a, RTR_MASK), -EINVAL);
	roce_gid_from_ipv4(0, &a.ah_attr.dgid);
	cr_assert_eq(roce_modify_qp(qp, &a, RTR_MASK), -EINVAL);
	roce_gid_from_ipv4(0x0a0a0002, &a.ah_attr.dgid);
	cr_assert_eq(roce_qp_state(qp), ROCE_QPS_INIT);
	cr_assert_eq(roce_modify_qp(qp, &a, RTR_MASK), 0);

	/* RTR -> RTS */
	a.qp_state = ROCE_QPS_RTS;
	a.retry_cnt = 8;
	cr_assert_eq(roce_modify_qp(qp, &a, RTS_MASK), -EINVAL);
	a.retry_cnt = 7;
	a.rnr_retry = 8;
	cr_assert_eq(roce_modify_qp(qp, &a, RTS_MASK), -EINVAL);
	a.rnr_retry = 7;
	a.timeout = 32;
	cr_assert_eq(roce_modify_qp(qp, &a, RTS_MASK), -EINVAL);
	a.timeout = 14;
	a.cur_qp_state = ROCE_QPS_INIT;  /* wrong current state named */
	cr_assert_eq(roce_modify_qp(qp, &a, RTS_MASK | ROCE_QP_CUR_STATE), -EINVAL);
	a.cur_qp_state = ROCE_QPS_RTR;
	cr_assert_eq(roce_modify_qp(qp, &a, RTS_MASK | ROCE_QP_CUR_STATE), 0);

	roce_query_qp(qp, &q, NULL);
	cr_assert_eq(q.qp_state, ROCE_QPS_RTS);
	cr_assert_eq(q.rq_psn, 0xfffffe);
	cr_assert_eq(q.sq_psn, 0x10);
	cr_assert_eq(q.dest_qp_num, 0x123);
	cr_assert_eq(q.path_mtu, ROCE_MTU_1024);
	cr_assert_eq(q.max_rd_atomic, 4);
	cr_assert_eq(q.cap.max_send_wr, 4);

	/* RTS -> RTS (min RNR timer), RTS -> SQD -> RTS, no SQE for RC, no way back to INIT */
	a.qp_state = ROCE_QPS_RTS;
	a.min_rnr_timer = 3;
	cr_assert_eq(roce_modify_qp(qp, &a, ROCE_QP_STATE | ROCE_QP_MIN_RNR_TIMER), 0);
	cr_assert_eq(roce_modify_qp(qp, &a, ROCE_QP_STATE | ROCE_QP_SQ_PSN), -EINVAL);
	a.qp_state = ROCE_QPS_SQD;
	cr_assert_eq(roce_modify_qp(qp, &a, ROCE_QP_STATE), 0);
	a.qp_state = ROCE_QPS_RTS;
	cr_assert_eq(roce_modify_qp(qp, &a, ROCE_QP_STATE), 0);
	a.qp_state = ROCE_QPS_SQE;
	cr_assert_eq(roce_modify_qp(qp, &a, ROCE_QP_STATE), -EINVAL);
	a.qp_state = ROCE_QPS_INIT;
	cr_assert_eq(roce_modify_qp(qp, &a, ROCE_QP_STATE), -EINVAL);
	a.qp_state = (enum roce_qp_state)7;
	cr_assert_eq(roce_modify_qp(qp, &a, ROCE_QP_STATE), -EINVAL);
	cr_assert_eq(roce_qp_state(qp), ROCE_QPS_RTS);
	/* ERR, then RESET, then the walk again */
	a.qp_state = ROCE_QPS_ERR;
	cr_assert_eq(roce_modify_qp(qp, &a, ROCE_QP_STATE), 0);
	a.qp_state = ROCE_QPS_RTS;
	cr_assert_eq(roce_modify_qp(qp, &a, RTS_MASK), -EINVAL);
	a.qp_state = ROCE_QPS_RESET;
	cr_assert_eq(roce_modify_qp(qp, &a, ROCE_QP_STATE), 0);
	to_rts(qp);
	cr_assert_eq(roce_destroy_qp(qp), 0);
	fx_down(&f);
}

Test(roce_verbs, ud_qp_walk_and_gsi)
{
	struct fixture f;
	struct roce_qp *qp, *gsi, *gsi2;
	struct roce_qp_init_attr init = { .qp_type = ROCE_QPT_UD, .send_cq = f.scq, .recv_cq = f.rcq,
					  .cap = { .max_send_wr = 2, .max_recv_wr = 2, .max_send_sge = 1, .max_recv_sge = 1 } };
	struct roce_qp_attr a = { .qp_state = ROCE_QPS_INIT, .port_num = 1, .qkey = 0x11111111 };

	fx_up(&f);
	init.send_cq = f.scq;
	init.recv_cq = f.rcq;
	qp = fx_qp(&f, ROCE_QPT_UD);
	cr_assert_eq(roce_modify_qp(qp, &a, ROCE_QP_STATE | ROCE_QP_PKEY_INDEX | ROCE_QP_PORT), -EINVAL, "Q_Key needed");
	cr_assert_eq(roce_modify_qp(qp, &a, INIT_MASK), -EINVAL, "no access flags on UD");
	cr_assert_eq(roce_modify_qp(qp, &a, ROCE_QP_STATE | ROCE_QP_PKEY_INDEX | ROCE_QP_PORT | ROCE_QP_QKEY), 0);
	a.qp_state = ROCE_QPS_RTR;
	cr_assert_eq(roce_modify_qp(qp, &a, ROCE_QP_STATE | ROCE_QP_DEST_QPN), -EINVAL);
	cr_assert_eq(roce_modify_qp(qp, &a, ROCE_QP_STATE), 0);
	a.qp_state = ROCE_QPS_RTS;
	cr_assert_eq(roce_modify_qp(qp, &a, ROCE_QP_STATE), -EINVAL, "SQ PSN needed");
	cr_assert_eq(roce_modify_qp(qp, &a, ROCE_QP_STATE | ROCE_QP_SQ_PSN), 0);
	/* UD takes SEND only, one PMTU at most */
	struct roce_send_wr wr = { .opcode = ROCE_WR_RDMA_WRITE, .num_sge = 1, .sg_list = { { .length = 8 } } };
	cr_assert_eq(roce_post_send(qp, &wr), -EINVAL);
	wr.opcode = ROCE_WR_SEND;
	wr.sg_list[0].length = 1025;
	cr_assert_eq(roce_post_send(qp, &wr), -EINVAL);
	wr.sg_list[0].length = 1024;
	cr_assert_eq(roce_post_send(qp, &wr), 0);
	/* SQE (a UD send error) -> RTS */
	a.qp_state = ROCE_QPS_ERR;
	cr_assert_eq(roce_modify_qp(qp, &a, ROCE_QP_STATE), 0);

	/* QP1: one, number 1, UD only */
	init.qp_type = ROCE_QPT_RC;
	cr_assert_eq(roce_create_gsi_qp(f.pd, &init, &gsi), -EINVAL);
	init.qp_type = ROCE_QPT_UD;
	cr_assert_eq(roce_create_gsi_qp(f.pd, &init, &gsi), 0);
	cr_assert_eq(roce_qp_num(gsi), ROCE_GSI_QPN);
	cr_assert_eq(roce_qp_lookup(f.dev, 1), gsi);
	cr_assert_eq(roce_create_gsi_qp(f.pd, &init, &gsi2), -EEXIST);
	cr_assert_eq(roce_destroy_qp(gsi), 0);
	cr_assert_null(roce_qp_lookup(f.dev, 1));
	cr_assert_eq(roce_destroy_qp(qp), 0);
	struct roce_wc wc[4];
	cr_assert_eq(roce_poll_cq(f.scq, 4, wc), 1, "the send flushed on ERR");
	cr_assert_eq(wc[0].status, ROCE_WC_WR_FLUSH_ERR);
	fx_down(&f);
}

Test(roce_verbs, posting_rules_and_flush_on_err)
{
	struct fixture f;
	struct roce_qp *qp;
	struct roce_wc wc[16];
	struct roce_send_wr s = { .wr_id = 1, .opcode = ROCE_WR_SEND, .num_sge = 1, .sg_list = { { .length = 100 } } };
	struct roce_recv_wr r = { .wr_id = 100, .num_sge = 1, .sg_list = { { .length = 100 } } };

	fx_up(&f);
	qp = fx_qp(&f, ROCE_QPT_RC);
	cr_assert_eq(roce_post_recv(qp, &r), -EINVAL, "receives not in RESET");
	cr_assert_eq(roce_post_send(qp, &s), -EINVAL, "sends not before RTS");
	struct roce_qp_attr a = rc_attr(ROCE_QPS_INIT);
	cr_assert_eq(roce_modify_qp(qp, &a, INIT_MASK), 0);
	cr_assert_eq(roce_post_send(qp, &s), -EINVAL);
	for (unsigned i = 0; i < 4; i++) {
		r.wr_id = 100 + i;
		cr_assert_eq(roce_post_recv(qp, &r), 0, "receives from INIT on");
	}
	cr_assert_eq(roce_post_recv(qp, &r), -ENOMEM, "queue full");
	r.num_sge = 3;
	cr_assert_eq(roce_post_recv(qp, &r), -EINVAL, "more SGEs than the cap");
	a.qp_state = ROCE_QPS_RTR;
	cr_assert_eq(roce_modify_qp(qp, &a, RTR_MASK), 0);
	a.qp_state = ROCE_QPS_RTS;
	cr_assert_eq(roce_modify_qp(qp, &a, RTS_MASK), 0);
	/* atomics: one 8-byte SGE, an aligned remote address */
	struct roce_send_wr at = { .wr_id = 9, .opcode = ROCE_WR_ATOMIC_FETCH_AND_ADD, .num_sge = 1,
				   .sg_list = { { .length = 8 } }, .remote_addr = 0x1000 };
	cr_assert_eq(roce_post_send(qp, &at), 0);
	at.remote_addr = 0x1004;
	cr_assert_eq(roce_post_send(qp, &at), -EINVAL);
	at.remote_addr = 0x1000;
	at.sg_list[0].length = 4;
	cr_assert_eq(roce_post_send(qp, &at), -EINVAL);
	s.opcode = (enum roce_wr_opcode)7;
	cr_assert_eq(roce_post_send(qp, &s), -EINVAL, "unknown opcode");
	s.opcode = ROCE_WR_SEND;
	for (unsigned i = 0; i < 3; i++) {
		s.wr_id = 1 + i;
		cr_assert_eq(roce_post_send(qp, &s), 0);
	}
	cr_assert_eq(roce_post_send(qp, &s), -ENOMEM);
	cr_assert_eq(roce_qp_sq_count(qp), 4);
	cr_assert_eq(roce_qp_rq_count(qp), 4);
	/* ERR: every WR completes with a flush error, in order, on its own CQ */
	a.qp_state = ROCE_QPS_ERR;
	cr_assert_eq(roce_modify_qp(qp, &a, ROCE_QP_STATE), 0);
	cr_assert_eq(roce_qp_sq_count(qp) + roce_qp_rq_count(qp), 0);
	cr_assert_eq(roce_poll_cq(f.scq, 16, wc), 4);
	cr_assert_eq(wc[0].wr_id, 9);
	cr_assert_eq(wc[0].opcode, ROCE_WC_SEND);
	for (unsigned i = 0; i < 4; i++) {
		cr_assert_eq(wc[i].status, ROCE_WC_WR_FLUSH_ERR);
		cr_assert_eq(wc[i].qp_num, roce_qp_num(qp));
	}
	cr_assert_eq(wc[3].wr_id, 3);
	cr_assert_eq(roce_poll_cq(f.rcq, 16, wc), 4);
	cr_assert_eq(wc[0].wr_id, 100);
	cr_assert_eq(wc[3].wr_id, 103);
	cr_assert_eq(wc[3].opcode, ROCE_WC_RECV);
	/* posting in ERR completes at once with a flush error */
	r.num_sge = 1;
	r.wr_id = 555;
	cr_assert_eq(roce_post_recv(qp, &r), 0);
	s.wr_id = 556;
	cr_assert_eq(roce_post_send(qp, &s), 0);
	cr_assert_eq(roce_poll_cq(f.rcq, 16, wc), 1);
	cr_assert_eq(wc[0].wr_id, 555);
	cr_assert_eq(roce_poll_cq(f.scq, 16, wc), 1);
	cr_assert_eq(wc[0].wr_id, 556);
	cr_assert_eq(wc[0].status, ROCE_WC_WR_FLUSH_ERR);
	/* RESET drops nothing left and takes no completions */
	a.qp_state = ROCE_QPS_RESET;
	cr_assert_eq(roce_modify_qp(qp, &a, ROCE_QP_STATE), 0);
	cr_assert_eq(roce_poll_cq(f.scq, 16, wc), 0);
	cr_assert_eq(roce_destroy_cq(f.scq), -EBUSY, "the QP uses it");
	cr_assert_eq(roce_destroy_qp(qp), 0);
	fx_down(&f);
}

Test(roce_verbs, qpns_unique_and_not_reused_at_once_srq_rules)
{
	struct fixture f;
	struct roce_qp *qp[ROCE_MAX_QP], *extra;
	struct roce_srq *srq;
	struct roce_pd *pd2;

	fx_up(&f);
	for (unsigned i = 0; i < ROCE_MAX_QP; i++)
		qp[i] = fx_qp(&f, ROCE_QPT_RC);
	struct roce_qp_init_attr init = { .qp_type = ROCE_QPT_RC, .send_cq = f.scq, .recv_cq = f.rcq,
					  .cap = { .max_send_wr = 1, .max_recv_wr = 1 } };
	cr_assert_eq(roce_create_qp(f.pd, &init, &extra), -ENOMEM);
	for (unsigned i = 0; i < ROCE_MAX_QP; i++)
		for (unsigned j = i + 1; j < ROCE_MAX_QP; j++)
			cr_assert_neq(roce_qp_num(qp[i]), roce_qp_num(qp[j]));
	uint32_t old = roce_qp_num(qp[5]);
	cr_assert_eq(roce_destroy_qp(qp[5]), 0);
	cr_assert_null(roce_qp_lookup(f.dev, old));
	qp[5] = fx_qp(&f, ROCE_QPT_RC);
	cr_assert_neq(roce_qp_num(qp[5]), old, "a new QP in the same slot has a new number");
	cr_assert_null(roce_qp_lookup(f.dev, old));
	cr_assert_null(roce_qp_lookup(f.dev, 0));
	cr_assert_null(roce_qp_lookup(f.dev, 0xffffff));
	for (unsigned i = 0; i < ROCE_MAX_QP; i++)
		cr_assert_eq(roce_destroy_qp(qp[i]), 0);

	/* caps */
	init.cap.max_send_wr = ROCE_MAX_WR + 1;
	cr_assert_eq(roce_create_qp(f.pd, &init, &extra), -EINVAL);
	init.cap.max_send_wr = 1;
	init.cap.max_recv_sge = ROCE_MAX_SGE + 1;
	cr_assert_eq(roce_create_qp(f.pd, &init, &extra), -EINVAL);
	init.cap.max_recv_sge = 1;
	init.send_cq = NULL;
	cr_assert_eq(roce_create_qp(f.pd, &init, &extra), -EINVAL);
	init.send_cq = f.scq;
	init.qp_type = (enum roce_qp_type)3;
	cr_assert_eq(roce_create_qp(f.pd, &init, &extra), -EINVAL);
	init.qp_type = ROCE_QPT_RC;

	/* SRQ: of the QP's PD, receives go there, not to the QP */
	cr_assert_eq(roce_create_srq(f.pd, 0, 1, &srq), -EINVAL);
	cr_assert_eq(roce_create_srq(f.pd, 2, 1, &srq), 0);
	cr_assert_eq(roce_alloc_pd(f.dev, &pd2), 0);
	init.srq = srq;
	cr_assert_eq(roce_create_qp(pd2, &init, &extra), -EINVAL);
	init.cap.max_recv_wr = 0;
	cr_assert_eq(roce_create_qp(f.pd, &init, &extra), 0);
	struct roce_recv_wr r = { .wr_id = 1, .num_sge = 1 };
	cr_assert_eq(roce_post_recv(extra, &r), -EINVAL);
	cr_assert_eq(roce_post_srq_recv(srq, &r), 0);
	cr_assert_eq(roce_post_srq_recv(srq, &r), 0);
	cr_assert_eq(roce_post_srq_recv(srq, &r), -ENOMEM);
	r.num_sge = 2;
	cr_assert_eq(roce_post_srq_recv(srq, &r), -EINVAL);
	cr_assert_eq(roce_destroy_srq(srq), -EBUSY);
	cr_assert_eq(roce_destroy_qp(extra), 0);
	cr_assert_eq(roce_destroy_srq(srq), 0);
	cr_assert_eq(roce_dealloc_pd(pd2), 0);
	fx_down(&f);
}
