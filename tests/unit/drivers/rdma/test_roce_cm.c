// sources: drivers/nic/netdev.c net/net.c lib/ipv4_text.c net/arp.c net/ipv4.c net/udp.c net/tcp/tcp.c net/tcp/tcp_in.c net/tcp/tcp_admit.c net/tcp/tcp_pools.c net/tcp/tcp_isn.c tests/unit/net/fake_entropy.c net/tcp/tcp_hdr.c net/tcp/tcp_out.c net/tcp/tcp_budget.c net/tcp/tcp_sack.c net/tcp/tcp_service.c mm/pool.c mm/dma.c lib/timer.c lib/log.c lib/crc32.c tests/unit/net/fake_netdev.c drivers/rdma/roce_wire.c drivers/rdma/roce_icrc.c drivers/rdma/roce_mad.c drivers/rdma/roce_cm.c drivers/rdma/roce_net.c drivers/rdma/roce_resp.c drivers/rdma/roce_resp_tx.c drivers/rdma/roce_dev.c drivers/rdma/roce_mr.c drivers/rdma/roce_odp.c drivers/rdma/roce_odp_mr.c drivers/rdma/roce_cq.c drivers/rdma/roce_qp.c drivers/rdma/roce_req.c drivers/rdma/roce_comp.c
/*
 * The communication manager's passive side through the stack and the fake e1000e, with
 * the peer's MADs crafted as Linux rdma_cm sends them (and Linux rxe's captured REQ):
 * REQ -> listener accepts -> REP with the REQ's IDs, our QPN and PSN, the depths agreed,
 * the QP in RTS with the REQ's path; RTU -> established; DREQ -> DREP, QP in ERR,
 * disconnected, time-wait answering a repeated DREQ, then the slot is free; a duplicate
 * REQ gets the same REP; an unanswered REP is sent Max CM Retries more times, then REJ
 * (timeout); no listener -> REJ 8, a refusing listener -> REJ 28, the ninth connection
 * of one peer -> REJ 3; our disconnect sends DREQ and completes on the DREP; with the RTU
 * lost, the peer's first SEND (at the PSN our REP announced) establishes the connection.
 */
#include "tests/unit/net/net_test.h"
#include "drivers/rdma/roce_icrc.h"
#include "drivers/rdma/roce_internal.h"
#include "drivers/rdma/roce_net.h"
#include "tests/unit/drivers/rdma/roce_vectors.h"

static struct roce_dev *dev;
static struct roce_net rn;
static struct roce_pd *pd;
static struct roce_cq *cq;
static struct roce_qp *qps[ROCE_CM_MAX_CONN];
static unsigned nqps, established, disconnected;
static struct roce_cm_conn *last_conn;
static int refuse;
static uint32_t last_peer;

#define SID ROCE_CM_PS_TCP_SID(7174)

static int on_req(struct roce_cm_conn *c, const struct roce_cm_req *req, uint32_t peer, void *ctx)
{
	struct roce_qp_init_attr init = { .qp_type = ROCE_QPT_RC, .send_cq = cq, .recv_cq = cq,
					  .cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 } };
	struct roce_qp_attr a = { .qp_state = ROCE_QPS_INIT, .port_num = 1, .qp_access_flags = ROCE_ACCESS_ALL };
	struct roce_qp *qp;
	(void)req;
	(void)ctx;
	last_peer = peer;
	if (refuse)
		return refuse;
	cr_assert_eq(roce_create_qp(pd, &init, &qp), 0);
	cr_assert_eq(roce_modify_qp(qp, &a, ROCE_QP_STATE | ROCE_QP_PKEY_INDEX | ROCE_QP_PORT | ROCE_QP_ACCESS_FLAGS), 0);
	qps[nqps++] = qp;
	last_conn = c;
	cr_assert_eq(roce_cm_accept(c, qp, "hi", 2), 0);
	return 0;
}

static void on_event(struct roce_cm_conn *c, enum roce_cm_event ev, void *ctx)
{
	(void)c;
	(void)ctx;
	if (ev == ROCE_CM_EV_ESTABLISHED)
		established++;
	else
		disconnected++;
}

static void setup(void)
{
	net_test_start(NETDEV_F_RX_SPLIT);
	cr_assert_eq(roce_dev_init(&dev, "rxe_cm"), 0);
	roce_dev_set_addr(dev, US, 1500);
	cr_assert_eq(roce_net_start(&rn, dev), 0);
	cr_assert_eq(roce_alloc_pd(dev, &pd), 0);
	cr_assert_eq(roce_create_cq(dev, 64, NULL, NULL, &cq), 0);
	nqps = established = disconnected = 0;
	refuse = 0;
	cr_assert_eq(roce_cm_listen(&rn, SID, on_req, on_event, NULL), 0);
	cr_assert_eq(roce_cm_listen(&rn, SID, on_req, on_event, NULL), -EEXIST);
}

static void teardown(void)
{
	struct roce_wc wc[16];
	for (unsigned i = 0; i < nqps; i++) {
		struct roce_qp_attr e = { .qp_state = ROCE_QPS_ERR };
		roce_modify_qp(qps[i], &e, ROCE_QP_STATE);
		while (roce_poll_cq(cq, 16, wc) > 0)
			;
		roce_destroy_qp(qps[i]);
	}
	roce_destroy_cq(cq);
	roce_dealloc_pd(pd);
	roce_net_stop(&rn);
	if (roce_dev_destroy(dev))
		abort();
	net_teardown();
}

TestSuite(roce_cm, .init = setup, .fini = teardown);

/* A REQ as Linux rdma_cm sends it for RoCE v2 from PEER. */
static void req_mad(uint8_t mad[ROCE_MAD_LEN], uint64_t tid, uint32_t comm_id, uint64_t sid)
{
	struct roce_cm_req_msg r;
	roce_cm_build_hdr(mad, CM_ATTR_REQ, tid);
	memset(&r, 0, sizeof(r));
	r.local_comm_id = be32_make(comm_id);
	r.service_id = be64_make(sid);
	r.local_qpn = be24_make(0x11);
	r.responder_resources = 2;
	r.initiator_depth = 3;
	r.rto_tst_e2e = 20 << 3;
	r.starting_psn = be24_make(0x796285);
	r.lto_retry = 20 << 3 | 7;
	r.pkey = be16_make(0xffff);
	r.mtu_rdc_rnr = ROCE_MTU_1024 << 4 | 6;
	r.maxcm_srq_ext = 2 << 4;
	roce_gid_from_ipv4(PEER, (struct roce_gid *)r.primary_local_gid);
	roce_gid_from_ipv4(US, (struct roce_gid *)r.primary_remote_gid);
	r.primary_hop_limit = 64;
	r.primary_ack_timeout = 19 << 3;
	memcpy(mad + ROCE_MAD_HDR_LEN, &r, sizeof(r));
}

/* A packet from PEER: headers from p, len payload bytes, pad, ICRC. */
static void inject_pkt(struct roce_pkt *p, const void *payload, uint32_t len)
{
	uint8_t pkt[512];
	p->payload_len = len;
	int h = roce_build(p, pkt, sizeof(pkt));
	size_t n = (size_t)h + len + roce_pad(len) + 4;
	memset(pkt + h, 0, n - (size_t)h);
	memcpy(pkt + h, payload, len);
	size_t fl = fake_build_udp(frame, PEER, US, 0xe000, ROCE_UDP_PORT, pkt, n);
	roce_icrc_put(pkt + n - 4, roce_icrc_packet((const struct ipv4_hdr *)(frame + 14),
						    (const struct udp_hdr *)(frame + 34), pkt, n));
	fl = fake_build_udp(frame, PEER, US, 0xe000, ROCE_UDP_PORT, pkt, n);
	cr_assert_eq(fake_netdev_inject(&fnd, frame, fl), 0);
}

static void inject_mad(const uint8_t mad[ROCE_MAD_LEN])
{
	struct roce_pkt p = { .opcode = ROCE_UD_SEND_ONLY, .pkey = 0xffff, .destqp = 1, .psn = 3,
			      .qkey = ROCE_GSI_QKEY, .srcqp = 1 };
	inject_pkt(&p, mad, ROCE_MAD_LEN);
}

/* The MAD of the i-th frame sent (a UD SEND to QP 1 with a valid ICRC). */
static const uint8_t *sent_mad(unsigned i, uint16_t attr)
{
	static uint8_t mad[ROCE_MAD_LEN];
	struct ipv4_hdr ip;
	struct udp_hdr uh;
	struct roce_pkt p;
	cr_assert_lt(i, fnd.ntx);
	memcpy(&ip, fnd.tx[i].b + 14, sizeof(ip));
	memcpy(&uh, fnd.tx[i].b + 34, sizeof(uh));
	size_t len = be16_get(uh.length) - 8;
	const uint8_t *pkt = fnd.tx[i].b + 42;
	cr_assert_eq(roce_parse(pkt, len, len, &p), ROCE_PARSE_OK);
	cr_assert_eq(p.opcode, ROCE_UD_SEND_ONLY);
	cr_assert_eq(p.destqp, 1);
	cr_assert_eq(p.qkey, ROCE_GSI_QKEY);
	cr_assert_eq(roce_icrc_get(pkt + len - 4), roce_icrc_packet(&ip, &uh, pkt, len));
	memcpy(mad, pkt + p.hdr_len, ROCE_MAD_LEN);
	struct roce_mad m;
	cr_assert_eq(roce_mad_parse(mad, ROCE_MAD_LEN, &m), ROCE_MAD_OK);
	cr_assert_eq(m.attr_id, attr, "attr %#x want %#x", m.attr_id, attr);
	return mad;
}

static void expect_rej(uint16_t reason)
{
	const uint8_t *mad = sent_mad(0, CM_ATTR_REJ);
	struct roce_mad m;
	roce_mad_parse(mad, ROCE_MAD_LEN, &m);
	cr_assert_eq(m.rej_reason, reason, "reason %u", m.rej_reason);
	fake_netdev_clear(&fnd);
}

static void ids_mad(uint8_t mad[ROCE_MAD_LEN], uint16_t attr, uint64_t tid, uint32_t local, uint32_t remote)
{
	roce_cm_build_ids(mad, attr, tid, local, remote);
}

Test(roce_cm, connect_established_disconnect_by_the_peer)
{
	uint8_t mad[ROCE_MAD_LEN];
	struct roce_cm_rep_msg rep;
	struct roce_qp_attr a;

	req_mad(mad, 0x1234, 0xc0ffee, SID);
	inject_mad(mad);
	cr_assert_eq(nqps, 1);
	cr_assert_eq(fnd.ntx, 1);
	memcpy(&rep, sent_mad(0, CM_ATTR_REP) + ROCE_MAD_HDR_LEN, sizeof(rep));
	cr_assert_eq(be64_get(((const struct roce_mad_hdr *)sent_mad(0, CM_ATTR_REP))->tid), 0x1234);
	cr_assert_eq(be32_get(rep.remote_comm_id), 0xc0ffee);
	uint32_t our_id = be32_get(rep.local_comm_id);
	cr_assert_neq(our_id, 0);
	cr_assert_eq(be24_get(rep.local_qpn), roce_qp_num(qps[0]));
	cr_assert_eq(rep.responder_resources, 3, "the REQ's initiator depth");
	cr_assert_eq(rep.initiator_depth, 2, "the REQ's responder resources");
	cr_assert_eq(memcmp(rep.private_data, "hi", 2), 0);
	roce_query_qp(qps[0], &a, NULL);
	cr_assert_eq(a.qp_state, ROCE_QPS_RTS);
	cr_assert_eq(a.dest_qp_num, 0x11);
	cr_assert_eq(a.sq_psn, 0x796285, "the REQ's Starting PSN is what the peer expects");
	cr_assert_eq(a.rq_psn, be24_get(rep.starting_psn), "the REP's is what we expect");
	cr_assert_eq(a.path_mtu, ROCE_MTU_1024);
	cr_assert_eq(a.timeout, 19);
	cr_assert_eq(a.retry_cnt, 7);
	cr_assert_eq(a.rnr_retry, 6);
	cr_assert_eq(a.max_dest_rd_atomic, 3);
	cr_assert_eq(a.max_rd_atomic, 2);
	fake_netdev_clear(&fnd);
	cr_assert_eq(established, 0);

	ids_mad(mad, CM_ATTR_RTU, 0x1234, 0xc0ffee, our_id);
	inject_mad(mad);
	cr_assert_eq(established, 1);
	cr_assert_eq(last_conn->state, ROCE_CM_ESTABLISHED);

	ids_mad(mad, CM_ATTR_DREQ, 0x99, 0xc0ffee, our_id);
	inject_mad(mad);
	const uint8_t *drep = sent_mad(0, CM_ATTR_DREP);
	struct roce_mad m;
	roce_mad_parse(drep, ROCE_MAD_LEN, &m);
	cr_assert_eq(m.tid, 0x99);
	cr_assert_eq(m.local_comm_id, our_id);
	cr_assert_eq(m.remote_comm_id, 0xc0ffee);
	cr_assert_eq(disconnected, 1);
	cr_assert_eq(roce_qp_state(qps[0]), ROCE_QPS_ERR);
	fake_netdev_clear(&fnd);
	/* the DREP was lost: the repeated DREQ is answered from the time-wait */
	inject_mad(mad);
	sent_mad(0, CM_ATTR_DREP);
	cr_assert_eq(disconnected, 1);
	fake_netdev_clear(&fnd);
	advance(ROCE_CM_TIMEWAIT_NS + NSEC_PER_MSEC);
	roce_net_poll(&rn, 16);
	cr_assert_eq(last_conn->state, ROCE_CM_FREE);
}

Test(roce_cm, linux_rxe_req_is_accepted)
{
	const struct roce_vector *v = &roce_vectors[sizeof(roce_vectors) / sizeof(roce_vectors[0]) - 1];
	uint8_t f[512];
	cr_assert_str_eq(v->name, "rxe_cm_req");
	/* 10.10.0.2 (the capture's peer) is known by ARP first */
	size_t n = fake_build_arp(frame, 2, fake_peer_mac, 0x0a0a0002, fake_our_mac, US, fake_our_mac);
	cr_assert_eq(fake_netdev_inject(&fnd, frame, n), 0);
	fake_netdev_clear(&fnd);
	roce_cm_unlisten(&rn, SID);
	cr_assert_eq(roce_cm_listen(&rn, ROCE_CM_PS_TCP_SID(7174), on_req, on_event, NULL), 0);
	memcpy(f, fake_our_mac, 6);
	memcpy(f + 6, fake_peer_mac, 6);
	f[12] = 0x08;
	f[13] = 0x00;
	memcpy(f + 14, v->bytes, v->len);
	cr_assert_eq(fake_netdev_inject(&fnd, f, 14 + v->len), 0);
	cr_assert_eq(nqps, 1);
	cr_assert_eq(last_peer, 0x0a0a0002);
	struct roce_cm_rep_msg rep;
	memcpy(&rep, sent_mad(0, CM_ATTR_REP) + ROCE_MAD_HDR_LEN, sizeof(rep));
	cr_assert_eq(be32_get(rep.remote_comm_id), 0x9a0239fb);
	cr_assert_eq(roce_qp_state(qps[0]), ROCE_QPS_RTS);
	struct roce_cm_req q;
	roce_cm_parse_req(v->bytes + 48, &q);
	cr_assert_eq(q.service_id, ROCE_CM_PS_TCP_SID(7174));
	cr_assert_eq(q.local_qpn, 0x11);
	cr_assert_eq(q.starting_psn, 0x796285);
	cr_assert_eq(q.path_mtu, ROCE_MTU_1024);
	cr_assert_eq(q.retry_cnt, 7);
	cr_assert_eq(q.rnr_retry, 7);
	cr_assert_eq(q.max_cm_retries, 15);
	cr_assert_eq(q.ack_timeout, 19);
	cr_assert_eq(q.local_cm_timeout, 20);
	cr_assert_eq(q.transport, 0);
	uint32_t ip;
	cr_assert_eq(roce_gid_to_ipv4((const struct roce_gid *)q.local_gid, &ip), 0);
	cr_assert_eq(ip, 0x0a0a0002);
	cr_assert_eq(q.private_data[1], 0x40, "rdma_cm header: IPv4");
}

Test(roce_cm, duplicate_req_gets_the_same_rep_and_an_unanswered_rep_gives_up)
{
	uint8_t mad[ROCE_MAD_LEN], rep1[ROCE_MAD_LEN];
	req_mad(mad, 0x77, 0xabc, SID);
	inject_mad(mad);
	memcpy(rep1, sent_mad(0, CM_ATTR_REP), ROCE_MAD_LEN);
	fake_netdev_clear(&fnd);
	inject_mad(mad);
	cr_assert_eq(nqps, 1, "no second connection");
	cr_assert_eq(memcmp(sent_mad(0, CM_ATTR_REP), rep1, ROCE_MAD_LEN), 0);
	fake_netdev_clear(&fnd);
	/* Max CM Retries 2: two more REPs, then REJ timeout and the QP to ERR; the wait is the
	 * REQ's Local CM Response Timeout (20: 4.3 s) doubled, bounded to 4 s */
	for (int i = 0; i < 40; i++) {
		advance(500 * NSEC_PER_MSEC);
		roce_net_poll(&rn, 16);
	}
	cr_assert_eq(fnd.ntx, 3);
	cr_assert_eq(memcmp(sent_mad(0, CM_ATTR_REP), rep1, ROCE_MAD_LEN), 0);
	sent_mad(1, CM_ATTR_REP);
	struct roce_mad m;
	roce_mad_parse(sent_mad(2, CM_ATTR_REJ), ROCE_MAD_LEN, &m);
	cr_assert_eq(m.rej_reason, CM_REJ_TIMEOUT);
	cr_assert_eq(disconnected, 1);
	cr_assert_eq(established, 0);
	cr_assert_eq(roce_qp_state(qps[0]), ROCE_QPS_ERR);
}

Test(roce_cm, no_listener_refusal_and_the_per_peer_bound_are_rejected)
{
	uint8_t mad[ROCE_MAD_LEN];
	req_mad(mad, 1, 0x100, ROCE_CM_PS_TCP_SID(9999));
	inject_mad(mad);
	expect_rej(CM_REJ_INVALID_SERVICE_ID);
	refuse = CM_REJ_CONSUMER;
	req_mad(mad, 2, 0x101, SID);
	inject_mad(mad);
	expect_rej(CM_REJ_CONSUMER);
	refuse = 0;
	for (uint32_t i = 0; i < ROCE_CM_MAX_PER_PEER; i++) {
		req_mad(mad, 10 + i, 0x200 + i, SID);
		inject_mad(mad);
		sent_mad(0, CM_ATTR_REP);
		fake_netdev_clear(&fnd);
	}
	req_mad(mad, 99, 0x300, SID);
	inject_mad(mad);
	expect_rej(CM_REJ_NO_RESOURCES);
	cr_assert_eq(nqps, ROCE_CM_MAX_PER_PEER);
	cr_assert_eq(rn.cm.st.no_room, 1);
}

Test(roce_cm, our_disconnect_sends_dreq_and_ends_on_the_drep)
{
	uint8_t mad[ROCE_MAD_LEN];
	req_mad(mad, 5, 0x55, SID);
	inject_mad(mad);
	uint32_t our_id = be32_get(((const struct roce_cm_ids *)(sent_mad(0, CM_ATTR_REP) + ROCE_MAD_HDR_LEN))->local_comm_id);
	fake_netdev_clear(&fnd);
	ids_mad(mad, CM_ATTR_RTU, 5, 0x55, our_id);
	inject_mad(mad);
	cr_assert_eq(roce_cm_disconnect(last_conn), 0);
	cr_assert_eq(roce_qp_state(qps[0]), ROCE_QPS_ERR);
	struct roce_mad m;
	roce_mad_parse(sent_mad(0, CM_ATTR_DREQ), ROCE_MAD_LEN, &m);
	cr_assert_eq(m.local_comm_id, our_id);
	cr_assert_eq(m.remote_comm_id, 0x55);
	cr_assert_eq(m.dreq_remote_qpn, 0x11);
	fake_netdev_clear(&fnd);
	ids_mad(mad, CM_ATTR_DREP, m.tid, 0x55, our_id);
	inject_mad(mad);
	cr_assert_eq(disconnected, 1);
	cr_assert_eq(last_conn->state, ROCE_CM_TIMEWAIT);
}

Test(roce_cm, the_first_request_establishes_when_the_rtu_is_lost)
{
	uint8_t mad[ROCE_MAD_LEN];
	static uint8_t buf[64];
	struct roce_cm_rep_msg rep;
	struct roce_mr *mr;

	req_mad(mad, 7, 0x77, SID);
	inject_mad(mad);
	memcpy(&rep, sent_mad(0, CM_ATTR_REP) + ROCE_MAD_HDR_LEN, sizeof(rep));
	fake_netdev_clear(&fnd);
	cr_assert_eq(roce_reg_mr(pd, 0, sizeof(buf), dma_addr_host(buf), ROCE_ACCESS_LOCAL_WRITE, &mr), 0);
	struct roce_recv_wr w = { .wr_id = 1, .num_sge = 1, .sg_list = { { 0, sizeof(buf), roce_mr_lkey(mr) } } };
	cr_assert_eq(roce_post_recv(qps[0], &w), 0);
	roce_net_poll(&rn, 16);
	cr_assert_eq(established, 0);
	/* no RTU: the peer's first SEND, at the PSN our REP announced */
	struct roce_pkt p = { .opcode = ROCE_RC_SEND_ONLY, .pkey = 0xffff, .destqp = be24_get(rep.local_qpn),
			      .psn = be24_get(rep.starting_psn), .ackreq = true };
	inject_pkt(&p, "12345678", 8);
	cr_assert_eq(memcmp(buf, "12345678", 8), 0);
	roce_net_poll(&rn, 16);
	cr_assert_eq(established, 1);
	cr_assert_eq(last_conn->state, ROCE_CM_ESTABLISHED);
	roce_dereg_mr(mr);
}
