// sources: drivers/nic/netdev.c net/net.c lib/ipv4_text.c net/arp.c net/ipv4.c net/udp.c net/tcp/tcp.c net/tcp/tcp_in.c net/tcp/tcp_admit.c net/tcp/tcp_pools.c net/tcp/tcp_isn.c tests/unit/net/fake_entropy.c net/tcp/tcp_hdr.c net/tcp/tcp_out.c net/tcp/tcp_budget.c net/tcp/tcp_sack.c net/tcp/tcp_service.c mm/pool.c mm/dma.c lib/timer.c lib/log.c lib/crc32.c tests/unit/net/fake_netdev.c drivers/rdma/roce_wire.c drivers/rdma/roce_icrc.c drivers/rdma/roce_mad.c drivers/rdma/roce_cm.c drivers/rdma/roce_net.c drivers/rdma/roce_resp.c drivers/rdma/roce_resp_tx.c drivers/rdma/roce_dev.c drivers/rdma/roce_mr.c drivers/rdma/roce_odp.c drivers/rdma/roce_odp_mr.c drivers/rdma/roce_cq.c drivers/rdma/roce_qp.c drivers/rdma/roce_req.c drivers/rdma/roce_comp.c drivers/rdma/roce_perftest.c drivers/rdma/roce_pt_msg.c
/*
 * The perftest server's sessions over their rdma_cm channel, against a client played by the
 * test as perftest 4.5 does it: the channel QP connected by the CM (REQ, REP, RTU), the
 * exchange as SENDs (version, cycle buffer, cache line, MTU, keys), then the data QP either
 * by rdma_cm (-R: the first keys name no QP, a second REQ from the same peer is the data
 * connection) or by the keys (-z). On the data QP the client WRITEs, READs back, adds with an
 * atomic and SENDs; its report fields after the run get zeros; its DREQ ends the session
 * and frees everything. The client's QPs are on the same device, their packets turned
 * around by the relay (roce_relay.h). Also: the bound per peer, and the idle limit.
 */
#include "tests/unit/net/net_test.h"
#include "drivers/rdma/roce_internal.h"
#include "drivers/rdma/roce_perftest.h"
#include "tests/unit/drivers/rdma/roce_relay.h"

static struct roce_dev *dev;
static struct roce_pt pt;
static struct roce_pd *pd;
static struct roce_cq *cq;
static struct roce_qp *qctl, *qdata;
static struct roce_mr *mr;
static uint8_t mem[16384];

#define IOVA 0x40000000ull
#define MSG_IN 0x0000                /* the client's channel buffers */
#define MSG_OUT 0x0100
#define DATA 0x1000

static void pt_poll(void)
{
	roce_pt_poll(&pt, clock_now_ns());
}

static struct roce_qp *client_qp(void)
{
	return relay_rc_qp(pd, cq, 16);
}

static void setup(void)
{
	net_test_start(NETDEV_F_RX_SPLIT);
	cr_assert_eq(roce_dev_init(&dev, "rxe_pt"), 0);
	roce_dev_set_addr(dev, US, 1500);
	cr_assert_eq(roce_net_start(&rn, dev), 0);
	cr_assert_eq(roce_pt_start(&pt, &rn), 0);
	cr_assert_eq(roce_alloc_pd(dev, &pd), 0);
	cr_assert_eq(roce_create_cq(dev, 64, NULL, NULL, &cq), 0);
	qctl = client_qp();
	qdata = client_qp();
	for (unsigned i = 0; i < sizeof(mem); i++)
		mem[i] = (uint8_t)(i * 31 + 7);
	cr_assert_eq(roce_reg_mr(pd, IOVA, sizeof(mem), dma_addr_host(mem), ROCE_ACCESS_ALL, &mr), 0);
	relay_extra_poll = pt_poll;
	relay_nmads = 0;
	policy = pass_all;
}

static void teardown(void)
{
	relay_qp_destroy(qctl, cq);
	relay_qp_destroy(qdata, cq);
	roce_dereg_mr(mr);
	roce_destroy_cq(cq);
	roce_dealloc_pd(pd);
	roce_pt_stop(&pt);
	roce_net_stop(&rn);
	if (roce_dev_destroy(dev))
		abort();
	net_teardown();
}

TestSuite(roce_perftest_server, .init = setup, .fini = teardown);

/* The CM's REQ for port 18515 naming qp (roce_relay.h). */
static uint16_t cm_connect(struct roce_qp *qp, uint32_t comm_id, uint32_t *server_id)
{
	return relay_cm_connect(qp, ROCE_CM_PS_TCP_SID(ROCE_PT_PORT), comm_id, server_id, NULL);
}

static bool client_idle(void)
{
	for (unsigned i = 0; i < ROCE_PT_MAX; i++) {
		struct roce_pt_session *s = &pt.s[i];
		if ((s->qp && s->qp->sq.count) || (s->ctl_qp && s->ctl_qp->sq.count))
			return false;
	}
	return !qctl->sq.count && !qdata->sq.count;
}

/* One channel message and the server's answer (returns its length). */
static uint32_t chan(const void *msg, uint32_t len, uint8_t *answer)
{
	struct roce_recv_wr rw = { .wr_id = 100, .num_sge = 1, .sg_list = { { IOVA + MSG_IN, 256, roce_mr_lkey(mr) } } };
	struct roce_send_wr sw = { .wr_id = 1, .opcode = ROCE_WR_SEND, .send_flags = ROCE_SEND_SIGNALED, .num_sge = 1,
				   .sg_list = { { IOVA + MSG_OUT, len, roce_mr_lkey(mr) } } };
	struct roce_wc wc[4];
	uint32_t n = 0;
	memcpy(mem + MSG_OUT, msg, len);
	cr_assert_eq(roce_post_recv(qctl, &rw), 0);
	cr_assert_eq(roce_post_send(qctl, &sw), 0);
	pump(client_idle);
	cr_assert_eq(roce_poll_cq(cq, 4, wc), 2, "our SEND and the server's answer");
	for (unsigned i = 0; i < 2; i++) {
		cr_assert_eq(wc[i].status, ROCE_WC_SUCCESS);
		if (wc[i].wr_id == 100)
			n = wc[i].byte_len;
	}
	memcpy(answer, mem + MSG_IN, n);
	return n;
}

/* Version, cycle buffer, cache line, MTU, checked against what perftest expects back. */
static void exchange_start(void)
{
	static const char version[ROCE_PT_VERSION_LEN] = "6.06";
	static const uint8_t cycle[4] = { 0, 0, 0x10, 0 }, line[4] = { 0, 0, 0, 64 };
	uint8_t a[256];
	cr_assert_eq(chan(version, sizeof(version), a), ROCE_PT_VERSION_LEN);
	cr_assert_str_eq((char *)a, "6.06");
	cr_assert_eq(chan(cycle, 4, a), 4);
	cr_assert_eq(be32_load(a), ROCE_PT_CYCLE_BUFFER);
	cr_assert_eq(chan(line, 4, a), 4);
	cr_assert_eq(be32_load(a), ROCE_PT_CACHE_LINE);
	cr_assert_eq(chan("3", 2, a), 2);
	cr_assert_eq(a[0], '3', "our path MTU code (1024 at MTU 1500)");
}

static struct roce_pt_dest keys(const struct roce_pt_dest *mine)
{
	uint8_t msg[ROCE_PT_KEYS_BIN_LEN], a[256];
	struct roce_pt_dest d;
	roce_pt_keys_format_bin(mine, msg);
	cr_assert_eq(chan(msg, sizeof(msg), a), ROCE_PT_KEYS_BIN_LEN);
	cr_assert_eq(roce_pt_keys_parse_bin(a, ROCE_PT_KEYS_BIN_LEN, &d), 0);
	return d;
}

/* The run: WRITE 3000 bytes, READ them back, Fetch&Add twice, three SENDs (these land at the
 * buffer's start, every receive posted there). */
static void run(const struct roce_pt_dest *srv, struct roce_pt_session *s)
{
	struct roce_send_wr w = { .wr_id = 10, .opcode = ROCE_WR_RDMA_WRITE, .send_flags = ROCE_SEND_SIGNALED, .num_sge = 1,
				  .sg_list = { { IOVA + DATA, 3000, roce_mr_lkey(mr) } }, .remote_addr = srv->vaddr + 16384,
				  .rkey = srv->rkey };
	struct roce_wc wc[16];
	int n, got = 0;

	cr_assert_eq(roce_post_send(qdata, &w), 0);
	w.wr_id = 11;
	w.opcode = ROCE_WR_RDMA_READ;
	w.sg_list[0].addr = IOVA + DATA + 4096;
	cr_assert_eq(roce_post_send(qdata, &w), 0);
	for (unsigned i = 0; i < 2; i++) {
		struct roce_send_wr f = { .wr_id = 12 + i, .opcode = ROCE_WR_ATOMIC_FETCH_AND_ADD,
					  .send_flags = ROCE_SEND_SIGNALED, .num_sge = 1,
					  .sg_list = { { IOVA + DATA + 8192 + 8 * i, 8, roce_mr_lkey(mr) } },
					  .remote_addr = srv->vaddr + 8192, .rkey = srv->rkey, .compare_add = 5 };
		cr_assert_eq(roce_post_send(qdata, &f), 0);
	}
	for (unsigned i = 0; i < 3; i++) {
		struct roce_send_wr snd = { .wr_id = 20 + i, .opcode = ROCE_WR_SEND, .send_flags = ROCE_SEND_SIGNALED,
					    .num_sge = 1, .sg_list = { { IOVA + DATA, 1000 + 1000 * i, roce_mr_lkey(mr) } } };
		cr_assert_eq(roce_post_send(qdata, &snd), 0);
	}
	pump(client_idle);
	while ((n = roce_poll_cq(cq, 16, wc)) > 0)
		for (int i = 0; i < n; i++, got++)
			cr_assert_eq(wc[i].status, ROCE_WC_SUCCESS, "WR %llu: status %d", (unsigned long long)wc[i].wr_id,
				     wc[i].status);
	cr_assert_eq(got, 7);
	cr_assert_eq(memcmp(s->mem + 16384, mem + DATA, 3000), 0, "the WRITE landed in the server's buffer");
	cr_assert_eq(memcmp(mem + DATA + 4096, mem + DATA, 3000), 0, "the READ brought it back");
	uint64_t v0, v1;
	memcpy(&v0, mem + DATA + 8192, 8);
	memcpy(&v1, mem + DATA + 8200, 8);
	cr_assert_eq(v0, 0, "the server's buffer starts zeroed");
	cr_assert_eq(v1, 5);
	cr_assert_eq(s->recvs, 3);
	cr_assert_eq(s->recv_bytes, 6000);
}

/* The client's DREQ on its channel ends the session: DREP, the data connection's DREQ, all freed. */
static void end(uint32_t comm_id, uint32_t server_id)
{
	uint8_t mad[ROCE_MAD_LEN];
	unsigned head = 0, count = 0;
	roce_cm_build_ids(mad, CM_ATTR_DREQ, 0x77, comm_id, server_id);
	relay_inject_mad(mad);
	relay_collect(head, &count);
	cr_assert_geq(relay_nmads, 1);
	cr_assert_eq(be16_get(((const struct roce_mad_hdr *)relay_mads[0])->attr_id), CM_ATTR_DREP);
	cr_assert_eq(pt.s[0].state, ROCE_PT_FREE);
	cr_assert_eq(dev->qp_pool.in_use, 3, "the GSI QP and the client's two");
	cr_assert_eq(dev->mr_pool.in_use, 1, "the client's, not %zu", dev->mr_pool.in_use);
	cr_assert_eq(dev->cq_pool.in_use, 2, "the GSI QP's and the client's, not %zu", dev->cq_pool.in_use);
}

static void dash_r(void)
{
	struct roce_pt_dest zero = { 0 }, srv;
	uint32_t ctl_id, data_id;
	uint8_t field[8] = { 0, 0, 0, 0, 0, 0, 0x0b, 0xb8 }, a[256];

	cr_assert_eq(cm_connect(qctl, 0x1111, &ctl_id), CM_ATTR_REP);
	exchange_start();
	srv = keys(&zero);
	cr_assert_eq(srv.qpn, 0, "no data QP yet");
	cr_assert_eq(srv.out_reads, ROCE_PT_OUT_READS);
	cr_assert_neq(srv.rkey, 0);
	cr_assert_eq(pt.s[0].state, ROCE_PT_WAIT_DATA_CONN);
	cr_assert_eq(cm_connect(qdata, 0x2222, &data_id), CM_ATTR_REP, "the same peer's second REQ");
	cr_assert_eq(pt.st.data_conns, 1);
	cr_assert_eq(pt.st.sessions, 1);
	cr_assert_eq(pt.s[0].state, ROCE_PT_RUNNING);
	srv = keys(&zero);
	cr_assert_eq(srv.qpn, roce_qp_num(pt.s[0].qp));
	run(&srv, &pt.s[0]);
	for (unsigned i = 0; i < 5; i++) {
		cr_assert_eq(chan(field, 8, a), 8, "a report field");
		cr_assert_eq(be64_load(a), 0);
	}
	keys(&zero);
	cr_assert_eq(pt.st.errors, 0);
	end(0x1111, ctl_id);
	cr_assert_eq(pt.st.recvs, 3);
	cr_assert_eq(pt.st.reads, 1);
	cr_assert_eq(pt.st.atomics, 2);
	cr_assert_eq(pt.st.messages, 7, "WRITE, READ, two atomics, three SENDs: %llu", (unsigned long long)pt.st.messages);
}

Test(roce_perftest_server, dash_R_connects_the_data_qp_by_rdma_cm)
{
	dash_r();
}

Test(roce_perftest_server, dash_R_survives_loss)
{
	policy = drop_periodic;
	relay_period = 7;
	dash_r();
	cr_assert_gt(dropped, 0);
}

Test(roce_perftest_server, dash_z_connects_the_data_qp_by_the_keys)
{
	struct roce_pt_dest mine = { .out_reads = 4, .qpn = roce_qp_num(qdata), .psn = 0x00abcd }, srv;
	uint32_t ctl_id;

	roce_gid_from_ipv4(PEER, &mine.gid);
	cr_assert_eq(cm_connect(qctl, 0x3333, &ctl_id), CM_ATTR_REP);
	exchange_start();
	srv = keys(&mine);
	cr_assert_eq(pt.s[0].state, ROCE_PT_RUNNING);
	cr_assert_eq(srv.qpn, roce_qp_num(pt.s[0].qp));
	/* perftest's ctx_connect with the server's keys (the relay turns ::ffff:US around as PEER) */
	relay_connect_qp(qdata, srv.qpn, srv.psn, mine.psn, 4);
	run(&srv, &pt.s[0]);
	cr_assert_eq(pt.st.errors, 0);
	end(0x3333, ctl_id);
}

Test(roce_perftest_server, sessions_are_bounded_per_peer)
{
	uint32_t id[3];
	struct roce_qp *extra = client_qp();

	cr_assert_eq(cm_connect(qctl, 0x4441, &id[0]), CM_ATTR_REP);
	cr_assert_eq(cm_connect(qdata, 0x4442, &id[1]), CM_ATTR_REP);
	cr_assert_eq(cm_connect(extra, 0x4443, &id[2]), CM_ATTR_REJ, "a third session from one address");
	cr_assert_eq(pt.st.refused, 1);
	cr_assert_eq(pt.st.sessions, 2);
	relay_qp_destroy(extra, cq);
	roce_pt_stop(&pt);
	cr_assert_eq(dev->qp_pool.in_use, 3);
	cr_assert_eq(roce_pt_start(&pt, &rn), 0);
}

Test(roce_perftest_server, a_silent_client_is_dropped_after_the_idle_limit)
{
	uint32_t ctl_id;
	cr_assert_eq(cm_connect(qctl, 0x5555, &ctl_id), CM_ATTR_REP);
	exchange_start();
	cr_assert_eq(pt.s[0].state, ROCE_PT_EXCHANGE, "alive after its messages");
	/* a poll whose time was read before the last message (the loop reads the clock once) */
	roce_pt_poll(&pt, clock_now_ns() - 1000);
	cr_assert_eq(pt.s[0].state, ROCE_PT_EXCHANGE, "a message newer than the poll's time is not idleness");
	advance(ROCE_PT_IDLE_NS - NSEC_PER_SEC);
	pt_poll();
	cr_assert_eq(pt.s[0].state, ROCE_PT_EXCHANGE, "not yet idle");
	advance(2 * NSEC_PER_SEC);
	pt_poll();
	cr_assert_eq(pt.s[0].state, ROCE_PT_FREE);
	cr_assert_eq(pt.st.errors, 1);
}
