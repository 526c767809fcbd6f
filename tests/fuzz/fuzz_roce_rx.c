// sources: drivers/nic/netdev.c net/net.c lib/ipv4_text.c net/arp.c net/ipv4.c net/udp.c net/tcp/tcp.c net/tcp/tcp_in.c net/tcp/tcp_admit.c net/tcp/tcp_pools.c net/tcp/tcp_isn.c tests/unit/net/fake_entropy.c net/tcp/tcp_hdr.c net/tcp/tcp_out.c net/tcp/tcp_budget.c net/tcp/tcp_sack.c net/tcp/tcp_service.c mm/pool.c mm/dma.c lib/timer.c lib/log.c lib/clock.c lib/crc32.c tests/unit/net/fake_netdev.c drivers/rdma/roce_wire.c drivers/rdma/roce_icrc.c drivers/rdma/roce_mad.c drivers/rdma/roce_cm.c drivers/rdma/roce_net.c drivers/rdma/roce_resp.c drivers/rdma/roce_resp_tx.c drivers/rdma/roce_dev.c drivers/rdma/roce_mr.c drivers/rdma/roce_odp.c drivers/rdma/roce_odp_mr.c drivers/rdma/roce_cq.c drivers/rdma/roce_qp.c drivers/rdma/roce_req.c drivers/rdma/roce_comp.c
/*
 * libFuzzer harness: the RoCE v2 receive path (UDP 4791 -> parse -> ICRC -> QP 1 -> MAD
 * -> CM, and -> RC QP 0x101 -> responder) through the fake e1000e, on a fresh stack and
 * device per input. QP 0x101 is an RC QP in RTS whose peer is the sender, with every
 * remote access to a 16 KiB MR at iova 0, receive WRs posted, and a SEND, a READ and an
 * atomic sent (so responses in the input reach the completer); the CM listens on rdma_cm
 * port 7174 and accepts every REQ with a new QP, and has sent a REQ of its own (the active
 * side, Communication ID 0x80000001, QP 0x202) that REPs, MRAs and REJs in the input answer.
 * Input: byte 0 = mode (bit 0: NIC split on, so the BTH onwards is a payload fragment;
 * bit 1: write the correct ICRC into the last 4 bytes before sending, so mutated headers
 * and MADs get past the ICRC into the GSI/CM code; bit 2: the clock moves 100 ms before
 * each packet, so retransmit timers fire; bit 3: the MR has a sink that keeps received pieces,
 * roce_mr_set_sink), then one or more records
 * [len hi][len lo][UDP payload bytes]. Invariants: no crash/UB/leak; every packet is
 * counted exactly once as good or under one parse reason; every answer is a MAD, or an
 * RC packet to QP 0x77 (or to the QP a REP named), with a valid ICRC and its payload within
 * the path MTU; every pool and receive buffer comes back.
 */
#include <assert.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "lib/clock.h"
#include "lib/timer.h"
#include "mm/pool.h"
#include "net/net_internal.h"
#include "drivers/rdma/roce_icrc.h"
#include "drivers/rdma/roce_net.h"
#include "drivers/rdma/roce_verbs.h"
#include "drivers/rdma/roce_internal.h"
#include "tests/unit/net/fake_netdev.h"

static struct fake_netdev fnd;
static uint64_t now_ns;
static uint64_t fake_now(void) { return now_ns; }
static uint8_t frame[FAKE_FRAME_MAX];

static struct roce_qp *act_qp;
static struct roce_cm_conn *act_conn;

static void check_answers(void)
{
	for (unsigned i = 0; i < fnd.ntx && i < FAKE_TX_MAX; i++) {
		const struct fake_frame *f = &fnd.tx[i];
		struct ipv4_hdr ip;
		struct udp_hdr uh;
		struct roce_pkt p;
		assert(f->len >= 14 + 28 + 16);
		memcpy(&ip, f->b + 14, sizeof(ip));
		memcpy(&uh, f->b + 34, sizeof(uh));
		if (ip.protocol != IP_PROTO_UDP)
			continue;  /* ARP and the like */
		size_t len = be16_get(uh.length) - 8;
		const uint8_t *pkt = f->b + 42;
		assert(roce_parse(pkt, len, len, &p) == ROCE_PARSE_OK);
		if (p.opcode == ROCE_UD_SEND_ONLY)
			assert(p.payload_len == ROCE_MAD_LEN);
		else
			assert((p.destqp == 0x77 || (act_qp && p.destqp == act_qp->attr.dest_qp_num)) &&
			       !(p.flags & ROCE_F_UD) && p.payload_len <= 1024);
		assert(roce_icrc_get(pkt + len - 4) == roce_icrc_packet(&ip, &uh, pkt, len));
	}
}

static struct roce_pd *rc_pd;
static struct roce_cq *rc_cq;
static struct roce_qp *rc_qp;
static struct roce_mr *rc_mr;
static uint8_t rc_mem[16384];

/* RC QP 0x101 in RTS (ePSN 0, path MTU 1024, peer QP 0x77 at the sender's address). */
static void rc_setup(struct roce_dev *dev)
{
	struct roce_qp_init_attr init = { .qp_type = ROCE_QPT_RC,
					  .cap = { .max_send_wr = 4, .max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 2 } };
	struct roce_qp_attr a = { .qp_state = ROCE_QPS_INIT, .port_num = 1, .qp_access_flags = ROCE_ACCESS_ALL,
				  .path_mtu = ROCE_MTU_1024, .dest_qp_num = 0x77, .rq_psn = 0, .min_rnr_timer = 1,
				  .sq_psn = 0, .timeout = 14, .retry_cnt = 7, .rnr_retry = 7, .max_dest_rd_atomic = 4,
				  .max_rd_atomic = 4 };
	assert(roce_alloc_pd(dev, &rc_pd) == 0);
	assert(roce_create_cq(dev, 64, NULL, NULL, &rc_cq) == 0);
	init.send_cq = init.recv_cq = rc_cq;
	assert(roce_create_qp(rc_pd, &init, &rc_qp) == 0);
	assert(roce_qp_num(rc_qp) == 0x101);
	roce_gid_from_ipv4(0x0a0a0001, &a.ah_attr.dgid);
	assert(roce_modify_qp(rc_qp, &a, ROCE_QP_STATE | ROCE_QP_PKEY_INDEX | ROCE_QP_PORT | ROCE_QP_ACCESS_FLAGS) == 0);
	a.qp_state = ROCE_QPS_RTR;
	assert(roce_modify_qp(rc_qp, &a, ROCE_QP_STATE | ROCE_QP_AV | ROCE_QP_PATH_MTU | ROCE_QP_DEST_QPN |
					   ROCE_QP_RQ_PSN | ROCE_QP_MAX_DEST_RD_ATOMIC | ROCE_QP_MIN_RNR_TIMER) == 0);
	a.qp_state = ROCE_QPS_RTS;
	assert(roce_modify_qp(rc_qp, &a, ROCE_QP_STATE | ROCE_QP_SQ_PSN | ROCE_QP_TIMEOUT | ROCE_QP_RETRY_CNT |
					   ROCE_QP_RNR_RETRY | ROCE_QP_MAX_QP_RD_ATOMIC) == 0);
	assert(roce_reg_mr(rc_pd, 0, sizeof(rc_mem), dma_addr_host(rc_mem), ROCE_ACCESS_ALL, &rc_mr) == 0);
	for (unsigned i = 0; i < 4; i++) {
		struct roce_recv_wr w = { .wr_id = i, .num_sge = 2,
					  .sg_list = { { 0, 3000, roce_mr_lkey(rc_mr) }, { 8192, 4096, roce_mr_lkey(rc_mr) } } };
		assert(roce_post_recv(rc_qp, &w) == 0);
	}
	/* the requester's side: a SEND of 3 packets (PSNs 0-2), a READ of 3 responses (3-5),
	 * a Compare&Swap (6), sent by the first poll; responses in the input reach the completer */
	struct roce_send_wr s = { .wr_id = 1, .opcode = ROCE_WR_SEND, .num_sge = 1, .send_flags = ROCE_SEND_SIGNALED,
				  .sg_list = { { 0, 2100, roce_mr_lkey(rc_mr) } } };
	assert(roce_post_send(rc_qp, &s) == 0);
	s.wr_id = 2;
	s.opcode = ROCE_WR_RDMA_READ;
	s.sg_list[0] = (struct roce_sge){ 4096, 2500, roce_mr_lkey(rc_mr) };
	s.remote_addr = 0x1000;
	s.rkey = 0x1234;
	assert(roce_post_send(rc_qp, &s) == 0);
	s.wr_id = 3;
	s.opcode = ROCE_WR_ATOMIC_CMP_AND_SWP;
	s.sg_list[0] = (struct roce_sge){ 8000, 8, roce_mr_lkey(rc_mr) };
	assert(roce_post_send(rc_qp, &s) == 0);
}

/* A listener on rdma_cm port 7174 that accepts every REQ with a new QP (the CM bounds them). */
static struct roce_qp *cm_qps[ROCE_CM_MAX_CONN];
static unsigned cm_nqps;

static int cm_on_req(struct roce_cm_conn *c, const struct roce_cm_req *req, uint32_t peer, void *ctx)
{
	struct roce_qp_init_attr init = { .qp_type = ROCE_QPT_RC, .send_cq = rc_cq, .recv_cq = rc_cq,
					  .cap = { .max_send_wr = 2, .max_recv_wr = 2, .max_send_sge = 1, .max_recv_sge = 1 } };
	struct roce_qp_attr a = { .qp_state = ROCE_QPS_INIT, .port_num = 1, .qp_access_flags = ROCE_ACCESS_ALL };
	struct roce_qp *qp;
	(void)req, (void)peer, (void)ctx;
	if (cm_nqps == ROCE_CM_MAX_CONN || roce_create_qp(rc_pd, &init, &qp))
		return CM_REJ_NO_QP;
	cm_qps[cm_nqps++] = qp;
	assert(roce_modify_qp(qp, &a, ROCE_QP_STATE | ROCE_QP_PKEY_INDEX | ROCE_QP_PORT | ROCE_QP_ACCESS_FLAGS) == 0);
	if (roce_cm_accept(c, qp, NULL, 0))
		return CM_REJ_CONSUMER;
	return 0;
}

/* data[0] bit 3: rc_mr has a sink that keeps received pieces (up to 32, refusing every third
 * offer: those are copied), given back at the end: the NIC's buffers must all come back. */
static struct netdev_frag kept[32];
static unsigned nkept, offers;

static int keep_piece(void *ctx, uint64_t off, struct netdev_frag *f)
{
	(void)ctx;
	assert(f->owner && f->len && off <= sizeof(rc_mem) && f->len <= sizeof(rc_mem) - off);
	if (++offers % 3 == 0 || nkept == sizeof(kept) / sizeof(kept[0]))
		return -ENOSPC;
	kept[nkept++] = *f;
	return 0;
}

static void rc_teardown(void)
{
	struct roce_wc wc[16];
	for (unsigned i = 0; i < nkept; i++)
		netdev_frag_release(&kept[i]);
	nkept = offers = 0;
	for (unsigned i = 0; i < cm_nqps; i++) {
		struct roce_qp_attr e = { .qp_state = ROCE_QPS_ERR };
		roce_modify_qp(cm_qps[i], &e, ROCE_QP_STATE);
		while (roce_poll_cq(rc_cq, 16, wc) > 0)
			;
		assert(roce_destroy_qp(cm_qps[i]) == 0);
	}
	cm_nqps = 0;
	roce_cm_detach(act_conn);
	struct roce_qp_attr e = { .qp_state = ROCE_QPS_ERR };
	roce_modify_qp(act_qp, &e, ROCE_QP_STATE);
	while (roce_poll_cq(rc_cq, 16, wc) > 0)
		;
	assert(roce_destroy_qp(act_qp) == 0);
	act_qp = NULL;
	struct roce_qp_attr a = { .qp_state = ROCE_QPS_ERR };
	roce_modify_qp(rc_qp, &a, ROCE_QP_STATE);
	while (roce_poll_cq(rc_cq, 16, wc) > 0)
		;
	roce_dereg_mr(rc_mr);
	assert(roce_destroy_qp(rc_qp) == 0);
	assert(roce_destroy_cq(rc_cq) == 0);
	assert(roce_dealloc_pd(rc_pd) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct roce_dev *dev;
	static struct roce_net rn;
	struct net_config c;
	uint64_t sent = 0;
	size_t off = 1;

	if (size < 1)
		return 0;
	now_ns = 1000 * NSEC_PER_SEC;
	clock_set_source(fake_now);
	timer_queue_init(&timer_default_queue);
	fake_netdev_setup(&fnd, (data[0] & 1) ? NETDEV_F_RX_SPLIT : 0);
	assert(net_init() == 0);
	net_config_default(&c);
	assert(net_configure(&c) == 0);
	size_t n = fake_build_arp(frame, 2, fake_peer_mac, 0x0a0a0001, fake_our_mac, 0x0a0a000a, fake_our_mac);
	fake_netdev_inject(&fnd, frame, n);
	assert(roce_dev_init(&dev, "rxe_fuzz") == 0);
	roce_dev_set_addr(dev, 0x0a0a000a, 1500);
	assert(roce_net_start(&rn, dev) == 0);
	rc_setup(dev);
	if (data[0] & 8)
		assert(roce_mr_set_sink(rc_mr, keep_piece, NULL) == 0);
	assert(roce_cm_listen(&rn, ROCE_CM_PS_TCP_SID(7174), cm_on_req, NULL, NULL) == 0);
	{
		struct roce_qp_init_attr init = { .qp_type = ROCE_QPT_RC, .send_cq = rc_cq, .recv_cq = rc_cq,
						  .cap = { .max_send_wr = 2, .max_recv_wr = 2, .max_send_sge = 1, .max_recv_sge = 1 } };
		struct roce_qp_attr a = { .qp_state = ROCE_QPS_INIT, .port_num = 1, .qp_access_flags = ROCE_ACCESS_ALL };
		struct roce_cm_connect_param p = { .peer = 0x0a0a0001, .port = 7180, .src_port = 0x8000, .responder_resources = 4,
						   .initiator_depth = 4 };
		assert(roce_create_qp(rc_pd, &init, &act_qp) == 0);
		assert(roce_qp_num(act_qp) == 0x202);
		assert(roce_modify_qp(act_qp, &a, ROCE_QP_STATE | ROCE_QP_PKEY_INDEX | ROCE_QP_PORT | ROCE_QP_ACCESS_FLAGS) == 0);
		assert(roce_cm_connect(&rn, act_qp, &p, &act_conn) == 0);
		assert(act_conn->local_id == 0x80000001);
		struct roce_recv_wr w = { .wr_id = 9, .num_sge = 1, .sg_list = { { 0, 1500, roce_mr_lkey(rc_mr) } } };
		assert(roce_post_recv(act_qp, &w) == 0);  /* for a SEND once a REP has connected it */
	}
	roce_net_poll(&rn, 64);
	check_answers();
	fnd.ntx = 0;

	while (size - off >= 2) {
		if (data[0] & 4)
			now_ns += 100 * NSEC_PER_MSEC;  /* let the retransmit timer fire between packets */
		size_t len = (size_t)data[off] << 8 | data[off + 1];
		uint8_t pkt[1400];
		off += 2;
		if (len > size - off)
			len = size - off;
		if (len > sizeof(pkt))
			len = sizeof(pkt);
		memcpy(pkt, data + off, len);
		off += len;
		n = fake_build_udp(frame, 0x0a0a0001, 0x0a0a000a, 0xc000, ROCE_UDP_PORT, pkt, len);
		if ((data[0] & 2) && len >= 16) {
			struct ipv4_hdr ip;
			struct udp_hdr uh;
			memcpy(&ip, frame + 14, sizeof(ip));
			memcpy(&uh, frame + 34, sizeof(uh));
			roce_icrc_put(pkt + len - 4, roce_icrc_packet(&ip, &uh, pkt, len));
			n = fake_build_udp(frame, 0x0a0a0001, 0x0a0a000a, 0xc000, ROCE_UDP_PORT, pkt, len);
		}
		fake_netdev_inject(&fnd, frame, n);
		sent++;
		check_answers();
		fnd.ntx = 0;
		roce_net_poll(&rn, 64);
		check_answers();
		fnd.ntx = 0;
	}
	uint64_t counted = rn.st.rx_no_ip_hdr;
	for (int i = 0; i <= ROCE_PARSE_PAD; i++)
		counted += rn.st.rx_parse[i];
	assert(rn.st.rx_pkts == sent && counted == sent);
	assert(rn.st.cm_rej_tx <= rn.st.cm_req);

	rc_teardown();
	roce_net_stop(&rn);
	assert(roce_dev_destroy(dev) == 0);
	assert(net_shutdown() == 0);
	assert(mm_pool_total_in_use() == 0);
	assert(fake_netdev_teardown(&fnd) == 0);
	return 0;
}
