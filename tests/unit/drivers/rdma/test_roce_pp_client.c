// sources: drivers/nic/netdev.c net/net.c lib/ipv4_text.c net/arp.c net/ipv4.c net/udp.c net/tcp/tcp.c net/tcp/tcp_in.c net/tcp/tcp_admit.c net/tcp/tcp_pools.c net/tcp/tcp_isn.c tests/unit/net/fake_entropy.c net/tcp/tcp_hdr.c net/tcp/tcp_out.c net/tcp/tcp_budget.c net/tcp/tcp_sack.c net/tcp/tcp_service.c mm/pool.c mm/dma.c lib/timer.c lib/log.c lib/crc32.c tests/unit/net/fake_netdev.c drivers/rdma/roce_wire.c drivers/rdma/roce_icrc.c drivers/rdma/roce_mad.c drivers/rdma/roce_cm.c drivers/rdma/roce_net.c drivers/rdma/roce_resp.c drivers/rdma/roce_resp_tx.c drivers/rdma/roce_dev.c drivers/rdma/roce_mr.c drivers/rdma/roce_cq.c drivers/rdma/roce_qp.c drivers/rdma/roce_req.c drivers/rdma/roce_comp.c drivers/rdma/roce_odp.c drivers/rdma/roce_odp_mr.c drivers/rdma/roce_pp_client.c drivers/rdma/roce_pp_msg.c drivers/rdma/roce_app.c
/*
 * The ibv_rc_pingpong client against a server played by the test as rdma-core's example
 * does it: the TCP connection to port 18515 (the test answers the SYN), the client's
 * "LID:QPN:PSN:GID" read from its segment, the server's sent back, "done"; then the
 * ping-pong over RC: every SEND of the client answered by a SEND of the test's QP, the
 * client sending the next only once its last completed and the answer came, COUNT each way;
 * the run ends with result 0 and everything freed. A server that names no RoCE v2 GID of
 * its own address is refused.
 */
#include "tests/unit/net/net_test.h"
#include "drivers/rdma/roce_internal.h"
#include "drivers/rdma/roce_pp_client.h"
#include "net/tcp/tcp.h"
#include "tests/unit/drivers/rdma/roce_relay.h"

static struct roce_dev *dev;
static struct roce_pd *pd;
static struct roce_cq *cq;
static struct roce_qp *qs;           /* the test's server QP */
static struct roce_mr *mr;
static uint8_t mem[16384];
static struct roce_ppc pc;
static unsigned answered;

#define IOVA 0x70000000ull
#define SIZE 1500u

static unsigned owed;                /* SENDs received, not yet answered */

/* The test's server: each SEND received is answered by one of the same length, a few relay
 * rounds later (so that the client's SEND completes well before the answer comes). */
static void server_poll(void)
{
	static unsigned rounds;
	struct roce_wc wc[8];
	int n;
	roce_ppc_poll(&pc, clock_now_ns());
	while ((n = roce_poll_cq(cq, 8, wc)) > 0)
		for (int i = 0; i < n; i++) {
			cr_assert_eq(wc[i].status, ROCE_WC_SUCCESS);
			if (wc[i].opcode != ROCE_WC_RECV)
				continue;
			cr_assert_eq(wc[i].byte_len, SIZE);
			cr_assert_eq(owed, 0, "the client waits for each answer before its next SEND");
			owed++;
			rounds = 0;
		}
	if (owed && ++rounds > 3) {
		struct roce_recv_wr r = { .wr_id = 1, .num_sge = 1, .sg_list = { { IOVA, SIZE, roce_mr_lkey(mr) } } };
		struct roce_send_wr s = { .wr_id = 2, .opcode = ROCE_WR_SEND, .send_flags = ROCE_SEND_SIGNALED,
					  .num_sge = 1, .sg_list = { { IOVA + 4096, SIZE, roce_mr_lkey(mr) } } };
		cr_assert_eq(roce_post_recv(qs, &r), 0);
		cr_assert_eq(roce_post_send(qs, &s), 0);
		owed--;
		answered++;
	}
}

static void setup(void)
{
	net_test_start(NETDEV_F_RX_SPLIT);
	cr_assert_eq(roce_dev_init(&dev, "rxe_ppc"), 0);
	roce_dev_set_addr(dev, US, 1500);
	cr_assert_eq(roce_net_start(&rn, dev), 0);
	cr_assert_eq(roce_alloc_pd(dev, &pd), 0);
	cr_assert_eq(roce_create_cq(dev, 32, NULL, NULL, &cq), 0);
	qs = relay_rc_qp(pd, cq, 8);
	cr_assert_eq(roce_reg_mr(pd, IOVA, sizeof(mem), dma_addr_host(mem), ROCE_ACCESS_ALL, &mr), 0);
	memset(&pc, 0, sizeof(pc));
	answered = owed = 0;
	relay_extra_poll = server_poll;
	policy = pass_all;
}

static void teardown(void)
{
	roce_ppc_stop(&pc);
	relay_qp_destroy(qs, cq);
	roce_dereg_mr(mr);
	roce_destroy_cq(cq);
	roce_dealloc_pd(pd);
	roce_net_stop(&rn);
	if (roce_dev_destroy(dev))
		abort();
	net_teardown();
}

TestSuite(roce_pp_client, .init = setup, .fini = teardown);

/* The last TCP segment the stack sent to the server port (parsed into *p); with data: the last
 * one that carries some. */
static bool client_seg_of(struct fake_parsed_tcp *p, bool data)
{
	for (unsigned i = fnd.ntx; i-- > 0;)
		if (fake_parse_tcp(&fnd.tx[i], p) && p->dport == ROCE_PP_PORT && (!data || p->len))
			return true;
	return false;
}

static bool client_seg(struct fake_parsed_tcp *p)
{
	return client_seg_of(p, false);
}

static uint16_t cport;
static uint32_t cseq, sseq = 7000;   /* the client's next sequence number, the server's */

static void server_seg(uint8_t flags, const void *data, size_t len)
{
	struct fake_tcp t = { .src = PEER, .dst = US, .sport = ROCE_PP_PORT, .dport = cport, .seq = sseq, .ack = cseq,
			      .flags = flags, .wnd = 65535, .payload = data, .len = len };
	size_t n = fake_build_tcp(frame, &t);
	cr_assert_eq(fake_netdev_inject(&fnd, frame, n), 0);
	sseq += (uint32_t)len + ((flags & (TCP_SYN | TCP_FIN)) ? 1 : 0);
}

/* The TCP connection and the address exchange, the server naming gid. Returns the client's address. */
static struct roce_pp_dest exchange(uint32_t gid_ip)
{
	struct fake_parsed_tcp p;
	struct roce_pp_dest cl, srv = { .qpn = roce_qp_num(qs), .psn = 0x222 };
	char msg[ROCE_PP_MSG_LEN];

	cr_assert_eq(roce_ppc_start(&pc, &rn, PEER, 3, SIZE), 0);
	cr_assert_eq(roce_ppc_start(&pc, &rn, PEER, 3, SIZE), -EBUSY);
	cr_assert(client_seg(&p), "the SYN");
	cr_assert_eq(p.flags, TCP_SYN);
	cport = p.sport;
	cseq = p.seq + 1;
	fake_netdev_clear(&fnd);
	server_seg(TCP_SYN | TCP_ACK, NULL, 0);
	cr_assert_eq(pc.state, ROCE_PPC_EXCHANGE);
	cr_assert(client_seg_of(&p, true), "the client's address");
	cr_assert_eq(p.len, ROCE_PP_MSG_LEN);
	cr_assert_eq(roce_pp_parse((const char *)p.payload, p.len, &cl), 0);
	cseq += (uint32_t)p.len;
	fake_netdev_clear(&fnd);
	cr_assert_eq(cl.qpn, roce_qp_num(pc.r.qp));
	roce_gid_from_ipv4(gid_ip, &srv.gid);
	relay_connect_qp(qs, cl.qpn, cl.psn, 0x222, 1);  /* the server receives from the client's PSN */
	for (unsigned i = 0; i < 4; i++) {
		struct roce_recv_wr r = { .wr_id = 1, .num_sge = 1, .sg_list = { { IOVA, SIZE, roce_mr_lkey(mr) } } };
		cr_assert_eq(roce_post_recv(qs, &r), 0);
	}
	roce_pp_format(&srv, msg);
	server_seg(TCP_ACK | TCP_PSH, msg, sizeof(msg));
	return cl;
}

static bool done(void)
{
	return pc.state == ROCE_PPC_IDLE && !qs->sq.count && !owed;
}

Test(roce_pp_client, the_exchange_then_the_ping_pong)
{
	struct fake_parsed_tcp p;
	exchange(PEER);
	cr_assert_eq(pc.state, ROCE_PPC_RUNNING);
	cr_assert(client_seg_of(&p, true), "done");
	cr_assert(p.len == 5 && !memcmp(p.payload, "done", 5), "\"done\" and its NUL");
	cseq = p.seq + 5;
	if (client_seg(&p) && (p.flags & TCP_FIN))
		cseq = p.seq + p.len + 1;
	fake_netdev_clear(&fnd);
	server_seg(TCP_RST, NULL, 0);  /* the example's server closes its socket */
	fake_netdev_clear(&fnd);
	pump(done);
	cr_assert_eq(pc.result, 0, "result %d, sent %u received %u answered %u", pc.result, pc.sent, pc.received, answered);
	cr_assert_eq(pc.sent, 3);
	cr_assert_eq(pc.received, 3);
	cr_assert_eq(answered, 3);
	cr_assert_eq(dev->qp_pool.in_use, 2, "the GSI QP and the test's");
	cr_assert_eq(dev->pd_pool.in_use, 2);
}

Test(roce_pp_client, a_server_without_its_roce_v2_gid_is_refused)
{
	exchange(PEER + 1);
	cr_assert_eq(pc.state, ROCE_PPC_IDLE);
	cr_assert_eq(pc.result, -EINVAL);
	cr_assert_eq(pc.failures, 1);
	cr_assert_eq(dev->qp_pool.in_use, 2);
}
