// sources: drivers/nic/netdev.c net/net.c lib/ipv4_text.c net/arp.c net/ipv4.c net/udp.c net/tcp/tcp.c net/tcp/tcp_in.c net/tcp/tcp_admit.c net/tcp/tcp_pools.c net/tcp/tcp_isn.c tests/unit/net/fake_entropy.c net/tcp/tcp_hdr.c net/tcp/tcp_out.c net/tcp/tcp_budget.c net/tcp/tcp_sack.c net/tcp/tcp_service.c mm/pool.c mm/dma.c lib/timer.c lib/log.c lib/crc32.c tests/unit/net/fake_netdev.c drivers/rdma/roce_wire.c drivers/rdma/roce_icrc.c drivers/rdma/roce_mad.c drivers/rdma/roce_cm.c drivers/rdma/roce_net.c drivers/rdma/roce_resp.c drivers/rdma/roce_resp_tx.c drivers/rdma/roce_dev.c drivers/rdma/roce_mr.c drivers/rdma/roce_cq.c drivers/rdma/roce_qp.c drivers/rdma/roce_req.c drivers/rdma/roce_comp.c drivers/rdma/roce_odp.c drivers/rdma/roce_odp_mr.c
/*
 * The communication manager's active side, the passive side played by the test as Linux's
 * CM does it: our REQ (its fields as Linux rxe's own REQ has them, rdma_cm's private-data
 * header with both addresses and our port) -> the test's REP -> our QP in RTS towards the
 * REP's QPN with the PSNs each side announced, the RTU, established; SENDs then flow both
 * ways between our QP and the test's, every fourth packet lost (the relay of roce_relay.h
 * turns them around). A
 * duplicate REP gets the RTU again; an MRA extends the wait; a REJ ends it with its reason;
 * no answer: the REQ is sent ROCE_CM_REQ_RETRIES more times, then the connection ends
 * (timeout); our disconnect sends DREQ and completes on the DREP; the bound per peer.
 */
#include "tests/unit/net/net_test.h"
#include "drivers/rdma/roce_internal.h"
#include "tests/unit/drivers/rdma/roce_relay.h"

static struct roce_dev *dev;
static struct roce_pd *pd;
static struct roce_cq *cq;
static struct roce_qp *qa, *qp_peer;   /* ours (active), the test's passive one */
static struct roce_mr *mr;
static uint8_t mem[8192];
static unsigned established, disconnected;
static struct roce_cm_conn *conn;

#define IOVA 0x50000000ull
#define PORT 7180

static struct roce_qp *make_qp(void)
{
	return relay_rc_qp(pd, cq, 8);
}

static void on_event(struct roce_cm_conn *c, enum roce_cm_event ev, void *ctx)
{
	cr_assert_eq(c, conn);
	cr_assert_eq(ctx, &established);
	if (ev == ROCE_CM_EV_ESTABLISHED)
		established++;
	else
		disconnected++;
}

static void setup(void)
{
	net_test_start(NETDEV_F_RX_SPLIT);
	cr_assert_eq(roce_dev_init(&dev, "rxe_cma"), 0);
	roce_dev_set_addr(dev, US, 1500);
	cr_assert_eq(roce_net_start(&rn, dev), 0);
	cr_assert_eq(roce_alloc_pd(dev, &pd), 0);
	cr_assert_eq(roce_create_cq(dev, 64, NULL, NULL, &cq), 0);
	qa = make_qp();
	qp_peer = make_qp();
	cr_assert_eq(roce_reg_mr(pd, IOVA, sizeof(mem), dma_addr_host(mem), ROCE_ACCESS_ALL, &mr), 0);
	established = disconnected = 0;
	relay_nmads = 0;
	policy = pass_all;
}

static void teardown(void)
{
	relay_qp_destroy(qa, cq);
	relay_qp_destroy(qp_peer, cq);
	roce_dereg_mr(mr);
	roce_destroy_cq(cq);
	roce_dealloc_pd(pd);
	roce_net_stop(&rn);
	if (roce_dev_destroy(dev))
		abort();
	net_teardown();
}

TestSuite(roce_cm_active, .init = setup, .fini = teardown);

static struct roce_cm_req req;      /* our REQ as the test received it */
static uint64_t req_tid;

static void start(void)
{
	static const char priv[] = "abc";
	struct roce_cm_connect_param p = { .peer = PEER, .port = PORT, .src_port = 0xa453, .responder_resources = 2,
					   .initiator_depth = 3, .priv = priv, .len = sizeof(priv), .event = on_event,
					   .ctx = &established };
	cr_assert_eq(roce_cm_connect(&rn, qa, &p, &conn), 0);
	cr_assert_eq(conn->state, ROCE_CM_REQ_SENT);
	cr_assert_eq(relay_sent_mads(), 1);
	cr_assert_eq(relay_mad_attr(0), CM_ATTR_REQ);
	req_tid = be64_get(((const struct roce_mad_hdr *)relay_mads[0])->tid);
	roce_cm_parse_req(relay_mads[0], &req);
}

/* The test's REP (the passive side's QP qp_peer, its receive queue at psn). */
static void rep(uint32_t psn)
{
	uint8_t mad[ROCE_MAD_LEN];
	struct roce_cm_rep_msg r;
	memset(&r, 0, sizeof(r));
	r.local_comm_id = be32_make(0x7777);
	r.remote_comm_id = be32_make(req.local_comm_id);
	r.local_qpn = be24_make(roce_qp_num(qp_peer));
	r.starting_psn = be24_make(psn);
	r.responder_resources = 1;
	r.initiator_depth = 1;
	r.rnr_srq = 7 << 5;
	roce_cm_build_rep(mad, req_tid, &r);
	relay_inject_mad(mad);
}

Test(roce_cm_active, the_req_is_what_linux_sends)
{
	uint32_t ip;
	start();
	cr_assert_eq(req.service_id, 0x0000000001060000ull | PORT);
	cr_assert_eq(req.local_qpn, roce_qp_num(qa));
	cr_assert_eq(req.transport, 0, "RC");
	cr_assert_eq(req.responder_resources, 2);
	cr_assert_eq(req.initiator_depth, 3);
	cr_assert_eq(req.path_mtu, ROCE_MTU_1024);
	cr_assert_eq(req.pkey, 0xffff);
	cr_assert_eq(req.retry_cnt, 7);
	cr_assert_eq(req.rnr_retry, 7);
	cr_assert_eq(req.max_cm_retries, ROCE_CM_REQ_RETRIES);
	cr_assert_eq(req.local_cm_timeout, ROCE_CM_ACTIVE_TIMEOUT);
	cr_assert_eq(req.remote_cm_timeout, ROCE_CM_ACTIVE_TIMEOUT);
	cr_assert_eq(roce_gid_to_ipv4((const struct roce_gid *)req.local_gid, &ip), 0);
	cr_assert_eq(ip, US);
	cr_assert_eq(roce_gid_to_ipv4((const struct roce_gid *)req.remote_gid, &ip), 0);
	cr_assert_eq(ip, PEER);
	cr_assert_eq(req.hop_limit, 64);
	/* rdma_cm's header, as in Linux rxe's REQ: 00 40 port, ::ffff-less src and dst */
	static const uint8_t hdr[CM_RDMA_CM_HDR_LEN] = { 0x00, 0x40, 0xa4, 0x53, [16] = 10, 10, 0, 10, [32] = 10, 10, 0, 1 };
	cr_assert_eq(memcmp(req.private_data, hdr, sizeof(hdr)), 0);
	cr_assert_str_eq((const char *)req.private_data + CM_RDMA_CM_HDR_LEN, "abc");
	cr_assert_eq(established + disconnected, 0);
}

static bool quiet(void)
{
	return !qa->sq.count && !qp_peer->sq.count;
}

/* One SEND from a to b: b's receive completes with the bytes. */
static void send_one(struct roce_qp *a, struct roce_qp *b, uint32_t off, uint32_t len)
{
	struct roce_recv_wr rw = { .wr_id = 2, .num_sge = 1, .sg_list = { { IOVA + 4096 + off, len, roce_mr_lkey(mr) } } };
	struct roce_send_wr sw = { .wr_id = 1, .opcode = ROCE_WR_SEND, .send_flags = ROCE_SEND_SIGNALED, .num_sge = 1,
				   .sg_list = { { IOVA + off, len, roce_mr_lkey(mr) } } };
	struct roce_wc wc[4];
	for (uint32_t i = 0; i < len; i++)
		mem[off + i] = (uint8_t)(i * 7 + off);
	cr_assert_eq(roce_post_recv(b, &rw), 0);
	cr_assert_eq(roce_post_send(a, &sw), 0);
	pump(quiet);
	cr_assert_eq(roce_poll_cq(cq, 4, wc), 2);
	cr_assert_eq(wc[0].status, ROCE_WC_SUCCESS);
	cr_assert_eq(wc[1].status, ROCE_WC_SUCCESS);
	cr_assert_eq(memcmp(mem + 4096 + off, mem + off, len), 0);
}

/* The passive QP set up as Linux's CM does: it sends from the REQ's PSN, receives from its REP's. */
static void connect_peer_qp(uint32_t rep_psn)
{
	relay_connect_qp(qp_peer, roce_qp_num(qa), rep_psn, req.starting_psn, 1);
}

Test(roce_cm_active, rep_establishes_and_data_flows_both_ways)
{
	struct roce_qp_attr at;
	struct roce_qp_init_attr ini;

	start();
	connect_peer_qp(0xfffffe);
	rep(0xfffffe);  /* near the wrap */
	cr_assert_eq(relay_sent_mads(), 1);
	cr_assert_eq(relay_mad_attr(0), CM_ATTR_RTU);
	cr_assert_eq(be64_get(((const struct roce_mad_hdr *)relay_mads[0])->tid), req_tid, "the REQ's transaction");
	cr_assert_eq(conn->state, ROCE_CM_ESTABLISHED);
	cr_assert_eq(established, 1);
	cr_assert_eq(roce_query_qp(qa, &at, &ini), 0);
	cr_assert_eq(at.qp_state, ROCE_QPS_RTS);
	cr_assert_eq(at.dest_qp_num, roce_qp_num(qp_peer));
	cr_assert_eq(at.sq_psn, 0xfffffe, "we send from the PSN the REP announced");
	cr_assert_eq(at.rq_psn, req.starting_psn, "and receive from the one our REQ announced");
	cr_assert_eq(at.max_rd_atomic, 1, "the REP's responder resources bound our initiator depth");
	cr_assert_eq(at.max_dest_rd_atomic, 1);
	policy = drop_periodic;  /* every fourth packet lost */
	relay_period = 4;
	send_one(qa, qp_peer, 0, 3000);
	send_one(qp_peer, qa, 1000, 100);
	send_one(qa, qp_peer, 2000, 1);
	cr_assert_gt(dropped, 0);
	policy = pass_all;

	/* a duplicate REP (our RTU lost) gets the RTU again */
	rep(0xfffffe);
	cr_assert_eq(relay_sent_mads(), 1);
	cr_assert_eq(relay_mad_attr(0), CM_ATTR_RTU);
	cr_assert_eq(rn.cm.st.dup_rep, 1);

	/* our disconnect: DREQ naming the peer's QP, the DREP ends it */
	uint8_t mad[ROCE_MAD_LEN];
	cr_assert_eq(roce_cm_disconnect(conn), 0);
	cr_assert_eq(relay_sent_mads(), 1);
	cr_assert_eq(relay_mad_attr(0), CM_ATTR_DREQ);
	struct roce_cm_dreq_msg d;
	memcpy(&d, relay_mads[0] + ROCE_MAD_HDR_LEN, sizeof(d));
	cr_assert_eq(be24_get(d.remote_qpn), roce_qp_num(qp_peer));
	cr_assert_eq(be32_get(d.remote_comm_id), 0x7777);
	roce_cm_build_ids(mad, CM_ATTR_DREP, be64_get(((const struct roce_mad_hdr *)relay_mads[0])->tid), 0x7777,
			  conn->local_id);
	relay_inject_mad(mad);
	cr_assert_eq(conn->state, ROCE_CM_TIMEWAIT);
	cr_assert_eq(disconnected, 1);
	cr_assert_eq(roce_qp_state(qa), ROCE_QPS_ERR);
}

Test(roce_cm_active, unanswered_req_is_retried_then_times_out)
{
	start();
	for (unsigned i = 0; i < ROCE_CM_REQ_RETRIES; i++) {
		advance(ROCE_CM_ACTIVE_RTO_NS - NSEC_PER_MSEC);
		roce_cm_poll(&rn, clock_now_ns());
		cr_assert_eq(relay_sent_mads(), 0, "not before the wait");
		advance(2 * NSEC_PER_MSEC);
		roce_cm_poll(&rn, clock_now_ns());
		cr_assert_eq(relay_sent_mads(), 1);
		cr_assert_eq(relay_mad_attr(0), CM_ATTR_REQ);
	}
	cr_assert_eq(rn.cm.st.req_retx, ROCE_CM_REQ_RETRIES);
	advance(ROCE_CM_ACTIVE_RTO_NS + NSEC_PER_MSEC);
	roce_cm_poll(&rn, clock_now_ns());
	cr_assert_eq(conn->state, ROCE_CM_TIMEWAIT);
	cr_assert_eq(conn->rej_reason, CM_REJ_TIMEOUT);
	cr_assert_eq(disconnected, 1);
	cr_assert_eq(established, 0);
	cr_assert_eq(roce_qp_state(qa), ROCE_QPS_ERR);
	advance(ROCE_CM_TIMEWAIT_NS + NSEC_PER_MSEC);
	roce_cm_poll(&rn, clock_now_ns());
	cr_assert_eq(conn->state, ROCE_CM_FREE);
}

Test(roce_cm_active, mra_extends_the_wait_and_rej_ends_it)
{
	uint8_t mad[ROCE_MAD_LEN];
	start();
	/* MRA: Service Timeout 23 (34 s) */
	roce_cm_build_ids(mad, CM_ATTR_MRA, req_tid, 0x7777, req.local_comm_id);
	mad[ROCE_MAD_HDR_LEN + 8] = 0;      /* MessageMRAed: REQ */
	mad[ROCE_MAD_HDR_LEN + 9] = 23 << 3;
	relay_inject_mad(mad);
	cr_assert_eq(rn.cm.st.mra, 1);
	advance(ROCE_CM_ACTIVE_RTO_NS + NSEC_PER_MSEC);
	roce_cm_poll(&rn, clock_now_ns());
	cr_assert_eq(relay_sent_mads(), 0, "no REQ retransmission while the peer works on it");
	/* REJ: consumer reject */
	roce_cm_build_rej_ids(mad, req_tid, 0x7777, req.local_comm_id, CM_REJ_MSG_REQ, CM_REJ_CONSUMER);
	relay_inject_mad(mad);
	cr_assert_eq(conn->state, ROCE_CM_TIMEWAIT);
	cr_assert_eq(conn->rej_reason, CM_REJ_CONSUMER);
	cr_assert_eq(disconnected, 1);
	cr_assert_eq(established, 0);
	/* a REP after that is nobody's */
	rep(5);
	cr_assert_eq(relay_sent_mads(), 0);
	cr_assert_eq(established, 0);
}

Test(roce_cm_active, connections_are_bounded_and_checked)
{
	struct roce_cm_connect_param p = { .peer = PEER, .port = PORT, .event = on_event, .ctx = &established };
	struct roce_cm_conn *c;
	uint8_t big[CM_REQ_PRIVATE_LEN];
	struct roce_qp *more[ROCE_CM_MAX_PER_PEER];

	cr_assert_eq(roce_cm_connect(&rn, qp_peer, &(struct roce_cm_connect_param){ .peer = 0 }, &c), -EINVAL);
	p.priv = big;
	p.len = CM_REQ_PRIVATE_LEN - CM_RDMA_CM_HDR_LEN + 1;
	cr_assert_eq(roce_cm_connect(&rn, qa, &p, &c), -EINVAL, "private data beyond the REQ's room");
	p.len = 0;
	for (unsigned i = 0; i < ROCE_CM_MAX_PER_PEER; i++) {
		more[i] = make_qp();
		cr_assert_eq(roce_cm_connect(&rn, more[i], &p, &c), 0);
		cr_assert_eq(roce_cm_connect(&rn, more[i], &p, &c), -EBUSY, "the QP belongs to a connection already");
	}
	cr_assert_eq(roce_cm_connect(&rn, qa, &p, &c), -ENOSPC, "the peer's share is used up");
	for (unsigned i = 0; i < ROCE_CM_MAX_CONN; i++)
		if (rn.cm.conns[i].state != ROCE_CM_FREE)
			roce_cm_detach(&rn.cm.conns[i]);
	for (unsigned i = 0; i < ROCE_CM_MAX_PER_PEER; i++)
		relay_qp_destroy(more[i], cq);
}
