// sources: drivers/nic/netdev.c net/net.c lib/ipv4_text.c net/arp.c net/ipv4.c net/udp.c net/tcp/tcp.c net/tcp/tcp_in.c net/tcp/tcp_admit.c net/tcp/tcp_pools.c net/tcp/tcp_isn.c tests/unit/net/fake_entropy.c net/tcp/tcp_hdr.c net/tcp/tcp_out.c net/tcp/tcp_budget.c net/tcp/tcp_sack.c net/tcp/tcp_service.c mm/pool.c mm/dma.c lib/timer.c lib/log.c lib/crc32.c tests/unit/net/fake_netdev.c drivers/rdma/roce_wire.c drivers/rdma/roce_icrc.c drivers/rdma/roce_mad.c drivers/rdma/roce_cm.c drivers/rdma/roce_net.c drivers/rdma/roce_resp.c drivers/rdma/roce_resp_tx.c drivers/rdma/roce_dev.c drivers/rdma/roce_mr.c drivers/rdma/roce_odp.c drivers/rdma/roce_odp_mr.c drivers/rdma/roce_cq.c drivers/rdma/roce_qp.c drivers/rdma/roce_req.c drivers/rdma/roce_comp.c drivers/rdma/roce_rping.c drivers/rdma/roce_app.c
/*
 * The rping server against a client played by the test as librdmacm's rping does it: the
 * CM handshake (REQ crafted, REP read, RTU), then rounds of SEND start buffer -> the
 * server READs it and SENDs go -> SEND sink buffer -> the server WRITEs the data back and
 * SENDs go; the sink must equal the start buffer. The client's QP is on the same device,
 * its packets turned around by the relay (roce_relay.h), once clean and once with every
 * fifth packet lost; then the client's DREQ closes the session and frees everything.
 */
#include "tests/unit/net/net_test.h"
#include "drivers/rdma/roce_internal.h"
#include "drivers/rdma/roce_rping.h"
#include "tests/unit/drivers/rdma/roce_relay.h"

static struct roce_dev *dev;
static struct roce_rping rp;
static struct roce_pd *pd;
static struct roce_cq *cq;
static struct roce_qp *qc;
static struct roce_mr *mr;
static uint8_t mem[16384];

#define IOVA 0x40000000ull
#define START 0x1000
#define SINK 0x2000
#define SIZE 3000u

static void rping_poll(void)
{
	roce_rping_poll(&rp, clock_now_ns());
}

static void setup(void)
{
	struct roce_qp_init_attr init = { .qp_type = ROCE_QPT_RC,
					  .cap = { .max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 1 } };
	struct roce_qp_attr a = { .qp_state = ROCE_QPS_INIT, .port_num = 1, .qp_access_flags = ROCE_ACCESS_ALL };
	net_test_start(NETDEV_F_RX_SPLIT);
	cr_assert_eq(roce_dev_init(&dev, "rxe_rping"), 0);
	roce_dev_set_addr(dev, US, 1500);
	cr_assert_eq(roce_net_start(&rn, dev), 0);
	cr_assert_eq(roce_rping_start(&rp, &rn), 0);
	cr_assert_eq(roce_alloc_pd(dev, &pd), 0);
	cr_assert_eq(roce_create_cq(dev, 32, NULL, NULL, &cq), 0);
	init.send_cq = init.recv_cq = cq;
	cr_assert_eq(roce_create_qp(pd, &init, &qc), 0);
	cr_assert_eq(roce_modify_qp(qc, &a, ROCE_QP_STATE | ROCE_QP_PKEY_INDEX | ROCE_QP_PORT | ROCE_QP_ACCESS_FLAGS), 0);
	for (unsigned i = 0; i < sizeof(mem); i++)
		mem[i] = (uint8_t)(i * 31 + 7);
	cr_assert_eq(roce_reg_mr(pd, IOVA, sizeof(mem), dma_addr_host(mem), ROCE_ACCESS_ALL, &mr), 0);
	relay_extra_poll = rping_poll;
	relay_nmads = 0;
}

static void teardown(void)
{
	struct roce_qp_attr e = { .qp_state = ROCE_QPS_ERR };
	struct roce_wc wc[16];
	roce_modify_qp(qc, &e, ROCE_QP_STATE);
	while (roce_poll_cq(cq, 16, wc) > 0)
		;
	roce_destroy_qp(qc);
	roce_dereg_mr(mr);
	roce_destroy_cq(cq);
	roce_dealloc_pd(pd);
	roce_rping_stop(&rp);
	roce_net_stop(&rn);
	if (roce_dev_destroy(dev))
		abort();
	net_teardown();
}

TestSuite(roce_rping, .init = setup, .fini = teardown);

static uint32_t our_id;

/* rdma_connect as rping does it: REQ, REP, RTU; the client QP in RTS (its receive PSN close
 * to the wrap: 0xfffffa). */
static void connect(void)
{
	cr_assert_eq(relay_cm_connect_psn(qc, ROCE_CM_PS_TCP_SID(ROCE_RPING_PORT), 0x1111, 0xfffffa, 1, &our_id, NULL),
		     CM_ATTR_REP);
	cr_assert_eq(rp.s[0].state, ROCE_RPING_WAIT_START);
}

static bool client_idle(void)
{
	/* our SEND acknowledged, the server's go received, the server's send queue empty */
	return !qc->sq.count && !qc->rq.count && (!rp.s[0].r.qp || !rp.s[0].r.qp->sq.count);
}

/* SEND an advertisement of [off, off + len) and wait for the server's "go". */
static void advertise(uint64_t wr_id, uint32_t off, uint32_t len)
{
	struct roce_rping_info info = { .buf = be64_make(IOVA + off), .rkey = be32_make(roce_mr_rkey(mr)),
					.size = be32_make(len) };
	struct roce_recv_wr rw = { .wr_id = 100 + wr_id, .num_sge = 1, .sg_list = { { IOVA + 0x3000, 16, roce_mr_lkey(mr) } } };
	struct roce_send_wr sw = { .wr_id = wr_id, .opcode = ROCE_WR_SEND, .send_flags = ROCE_SEND_SIGNALED,
				   .num_sge = 1, .sg_list = { { IOVA + 0x3100, 16, roce_mr_lkey(mr) } } };
	struct roce_wc wc[4];
	memcpy(mem + 0x3100, &info, sizeof(info));
	cr_assert_eq(roce_post_recv(qc, &rw), 0);
	cr_assert_eq(roce_post_send(qc, &sw), 0);
	pump(client_idle);
	cr_assert_eq(roce_poll_cq(cq, 4, wc), 2);
	cr_assert_eq(wc[0].status, ROCE_WC_SUCCESS);
	cr_assert_eq(wc[1].status, ROCE_WC_SUCCESS);
	cr_assert_eq(wc[0].wr_id + wc[1].wr_id, 100 + 2 * wr_id, "the SEND and the server's go");
}

static void rounds(unsigned n)
{
	connect();
	for (unsigned i = 0; i < n; i++) {
		mem[START] = (uint8_t)i;  /* each round's data differs */
		memset(mem + SINK, 0, SIZE);
		advertise(1, START, SIZE);
		cr_assert_eq(rp.s[0].state, ROCE_RPING_WAIT_SINK);
		advertise(2, SINK, SIZE);
		for (unsigned k = 0; k < SIZE; k++) cr_assert_eq(mem[SINK + k], mem[START + k], "round %u: byte %u differs: %u vs %u", i, k, mem[SINK + k], mem[START + k]);
	}
	cr_assert_eq(rp.rounds, n);
	cr_assert_eq(rp.errors, 0);
}

static void disconnect(void)
{
	uint8_t mad[ROCE_MAD_LEN];
	unsigned head = 0, count = 0;
	roce_cm_build_ids(mad, CM_ATTR_DREQ, 0x43, 0x1111, our_id);
	relay_inject_mad(mad);
	relay_collect(head, &count);
	cr_assert_eq(relay_nmads, 1);
	cr_assert_eq(be16_get(((const struct roce_mad_hdr *)relay_mads[0])->attr_id), CM_ATTR_DREP);
	cr_assert_eq(rp.s[0].state, ROCE_RPING_FREE, "the session is gone with its QP, CQ and MR");
	cr_assert_eq(dev->qp_pool.in_use, 2, "the GSI QP and the client's");
}

Test(roce_rping, rounds_echo_the_start_buffer)
{
	policy = pass_all;
	rounds(3);
	disconnect();
}

Test(roce_rping, rounds_survive_loss)
{
	policy = drop_periodic;
	relay_period = 5;
	rounds(3);
	cr_assert_gt(dropped, 0);
	disconnect();
}
