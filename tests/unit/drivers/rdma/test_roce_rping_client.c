// sources: drivers/nic/netdev.c net/net.c lib/ipv4_text.c net/arp.c net/ipv4.c net/udp.c net/tcp/tcp.c net/tcp/tcp_in.c net/tcp/tcp_admit.c net/tcp/tcp_pools.c net/tcp/tcp_isn.c tests/unit/net/fake_entropy.c net/tcp/tcp_hdr.c net/tcp/tcp_out.c net/tcp/tcp_budget.c net/tcp/tcp_sack.c net/tcp/tcp_service.c mm/pool.c mm/dma.c lib/timer.c lib/log.c lib/crc32.c tests/unit/net/fake_netdev.c drivers/rdma/roce_wire.c drivers/rdma/roce_icrc.c drivers/rdma/roce_mad.c drivers/rdma/roce_cm.c drivers/rdma/roce_net.c drivers/rdma/roce_resp.c drivers/rdma/roce_resp_tx.c drivers/rdma/roce_dev.c drivers/rdma/roce_mr.c drivers/rdma/roce_cq.c drivers/rdma/roce_qp.c drivers/rdma/roce_req.c drivers/rdma/roce_comp.c drivers/rdma/roce_odp.c drivers/rdma/roce_odp_mr.c drivers/rdma/roce_rping_client.c drivers/rdma/roce_app.c
/*
 * The rping client against a server played by the test as librdmacm's `rping -s` does it:
 * our REQ answered by the test's REP, then per round the client SENDs its start buffer's
 * address, the server READs it and SENDs "go", the client SENDs its sink's, the server
 * WRITEs what it read and SENDs "go", the client compares. Clean and with every fifth packet
 * lost; a server that writes other bytes fails the run (-EBADMSG); a REJ ends it
 * (-ECONNREFUSED); after the last round the client's DREQ goes out and everything is freed.
 */
#include "tests/unit/net/net_test.h"
#include "drivers/rdma/roce_internal.h"
#include "drivers/rdma/roce_rping_client.h"
#include "tests/unit/drivers/rdma/roce_relay.h"

static struct roce_dev *dev;
static struct roce_pd *pd;
static struct roce_cq *cq;
static struct roce_qp *qs;           /* the test's server QP */
static struct roce_mr *mr;
static uint8_t mem[16384];
static struct roce_rping_client rc;

#define IOVA 0x60000000ull
#define PORT 7180
#define SIZE 3000u

static void client_poll(void)
{
	roce_rping_client_poll(&rc, clock_now_ns());
}

static void setup(void)
{
	net_test_start(NETDEV_F_RX_SPLIT);
	cr_assert_eq(roce_dev_init(&dev, "rxe_rpc"), 0);
	roce_dev_set_addr(dev, US, 1500);
	cr_assert_eq(roce_net_start(&rn, dev), 0);
	cr_assert_eq(roce_alloc_pd(dev, &pd), 0);
	cr_assert_eq(roce_create_cq(dev, 32, NULL, NULL, &cq), 0);
	qs = relay_rc_qp(pd, cq, 8);
	cr_assert_eq(roce_reg_mr(pd, IOVA, sizeof(mem), dma_addr_host(mem), ROCE_ACCESS_ALL, &mr), 0);
	memset(&rc, 0, sizeof(rc));
	relay_extra_poll = client_poll;
	relay_nmads = 0;
	policy = pass_all;
}

static void teardown(void)
{
	roce_rping_client_stop(&rc);
	relay_qp_destroy(qs, cq);
	roce_dereg_mr(mr);
	roce_destroy_cq(cq);
	roce_dealloc_pd(pd);
	roce_net_stop(&rn);
	if (roce_dev_destroy(dev))
		abort();
	net_teardown();
}

TestSuite(roce_rping_client, .init = setup, .fini = teardown);

static struct roce_cm_req req;
static uint64_t req_tid;

/* The client's REQ, received. */
static void start(unsigned count)
{
	cr_assert_eq(roce_rping_client_start(&rc, &rn, PEER, PORT, count, SIZE), 0);
	cr_assert_eq(roce_rping_client_start(&rc, &rn, PEER, PORT, count, SIZE), -EBUSY);
	cr_assert_eq(relay_sent_mads(), 1);
	cr_assert_eq(relay_mad_attr(0), CM_ATTR_REQ);
	req_tid = be64_get(((const struct roce_mad_hdr *)relay_mads[0])->tid);
	roce_cm_parse_req(relay_mads[0], &req);
	cr_assert_eq(req.service_id, ROCE_CM_PS_TCP_SID(PORT));
}

/* rdma_accept: the server QP to RTS, the REP. */
static void accept(void)
{
	uint8_t mad[ROCE_MAD_LEN];
	struct roce_cm_rep_msg r;
	relay_connect_qp(qs, req.local_qpn, 0x345, req.starting_psn, 1);
	memset(&r, 0, sizeof(r));
	r.local_comm_id = be32_make(0x9999);
	r.remote_comm_id = be32_make(req.local_comm_id);
	r.local_qpn = be24_make(roce_qp_num(qs));
	r.starting_psn = be24_make(0x345);
	r.responder_resources = 1;
	r.initiator_depth = 1;
	r.rnr_srq = 7 << 5;
	roce_cm_build_rep(mad, req_tid, &r);
	relay_inject_mad(mad);
	cr_assert_eq(relay_sent_mads(), 1);
	cr_assert_eq(relay_mad_attr(0), CM_ATTR_RTU);
}

static bool quiet(void)
{
	return !qs->sq.count && (!rc.r.qp || !rc.r.qp->sq.count);
}

static unsigned infos, ops_done;    /* the client's advertisements received; our WRs completed */

/* The server's completions: its READ/WRITE and "go", and the client's advertisements (which
 * under loss may complete before our "go" is acknowledged). */
static void reap(void)
{
	struct roce_wc wc[8];
	int n;
	while ((n = roce_poll_cq(cq, 8, wc)) > 0)
		for (int i = 0; i < n; i++) {
			cr_assert_eq(wc[i].status, ROCE_WC_SUCCESS, "WR %llu", (unsigned long long)wc[i].wr_id);
			if (wc[i].opcode == ROCE_WC_RECV) {
				cr_assert_eq(wc[i].byte_len, sizeof(struct roce_rping_info));
				infos++;
			} else {
				ops_done++;
			}
		}
}

/* Wait for the client's advertisement (a receive completes on the server QP). */
static struct roce_rping_info take_info(void)
{
	struct roce_rping_info info;
	pump(quiet);
	reap();
	cr_assert_eq(infos, 1, "the client's advertisement");
	infos = 0;
	memcpy(&info, mem, sizeof(info));
	cr_assert_eq(be32_get(info.size), SIZE);
	return info;
}

static void post_recv(void)
{
	struct roce_recv_wr w = { .wr_id = 7, .num_sge = 1, .sg_list = { { IOVA, 16, roce_mr_lkey(mr) } } };
	cr_assert_eq(roce_post_recv(qs, &w), 0);
}

/* One RDMA op of the server against the client's buffer, then "go". */
static void op_then_go(enum roce_wr_opcode op, const struct roce_rping_info *info)
{
	struct roce_send_wr w = { .wr_id = 8, .opcode = op, .send_flags = ROCE_SEND_SIGNALED, .num_sge = 1,
				  .sg_list = { { IOVA + 4096, SIZE, roce_mr_lkey(mr) } },
				  .remote_addr = be64_get(info->buf), .rkey = be32_get(info->rkey) };
	struct roce_send_wr go = { .wr_id = 9, .opcode = ROCE_WR_SEND, .send_flags = ROCE_SEND_SIGNALED, .num_sge = 1,
				   .sg_list = { { IOVA + 64, 16, roce_mr_lkey(mr) } } };
	post_recv();
	ops_done = 0;
	cr_assert_eq(roce_post_send(qs, &w), 0);
	cr_assert_eq(roce_post_send(qs, &go), 0);
	pump(quiet);
	reap();
	cr_assert_eq(ops_done, 2, "the server's op and its go");
}

static void rounds(unsigned n, bool corrupt_last)
{
	infos = ops_done = 0;
	start(n);
	post_recv();
	accept();
	for (unsigned i = 0; i < n; i++) {
		struct roce_rping_info info = take_info();
		cr_assert_eq(rc.state, ROCE_RPC_WAIT_READ);
		op_then_go(ROCE_WR_RDMA_READ, &info);
		cr_assert_eq(memcmp(mem + 4096, "rdma-ping-", 10), 0, "rping's line");
		cr_assert_eq(mem[4096 + SIZE - 1], 0);
		if (i + 1 == n && corrupt_last)
			mem[4096 + 100] ^= 1;
		info = take_info();
		cr_assert_eq(rc.state, ROCE_RPC_WAIT_WRITE);
		op_then_go(ROCE_WR_RDMA_WRITE, &info);
	}
}

Test(roce_rping_client, rounds_are_verified_then_dreq)
{
	rounds(3, false);
	cr_assert_eq(rc.state, ROCE_RPC_IDLE);
	cr_assert_eq(rc.result, 0);
	cr_assert_eq(rc.rounds, 3);
	cr_assert_geq(relay_nmads, 1);
	cr_assert_eq(relay_mad_attr(relay_nmads - 1), CM_ATTR_DREQ);
	cr_assert_eq(dev->qp_pool.in_use, 2, "the GSI QP and the test's: the client's is gone");
	cr_assert_eq(dev->mr_pool.in_use, 1);
	cr_assert_eq(dev->pd_pool.in_use, 2);
}

Test(roce_rping_client, rounds_survive_loss)
{
	policy = drop_periodic;
	relay_period = 5;
	rounds(3, false);
	cr_assert_gt(dropped, 0);
	cr_assert_eq(rc.result, 0);
	cr_assert_eq(rc.rounds, 3);
}

Test(roce_rping_client, other_bytes_in_the_sink_fail_the_run)
{
	rounds(2, true);
	cr_assert_eq(rc.state, ROCE_RPC_IDLE);
	cr_assert_eq(rc.result, -EBADMSG);
	cr_assert_eq(rc.rounds, 1);
	cr_assert_eq(rc.failures, 1);
}

Test(roce_rping_client, a_rej_ends_the_run)
{
	uint8_t mad[ROCE_MAD_LEN];
	start(1);
	roce_cm_build_rej_ids(mad, req_tid, 0, req.local_comm_id, CM_REJ_MSG_REQ, CM_REJ_INVALID_SERVICE_ID);
	relay_inject_mad(mad);
	cr_assert_eq(rc.state, ROCE_RPC_IDLE);
	cr_assert_eq(rc.result, -ECONNREFUSED);
	cr_assert_eq(rc.rej_reason, CM_REJ_INVALID_SERVICE_ID);
	cr_assert_eq(dev->qp_pool.in_use, 2);
	cr_assert_eq(roce_rping_client_start(&rc, &rn, PEER, PORT, 1, 8), -EINVAL, "too small");
	cr_assert_eq(roce_rping_client_start(&rc, &rn, PEER, PORT, 0, SIZE), -EINVAL, "no rounds");
}
