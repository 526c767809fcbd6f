// sources: drivers/nic/netdev.c net/net.c lib/ipv4_text.c net/arp.c net/ipv4.c net/udp.c net/tcp/tcp.c net/tcp/tcp_in.c net/tcp/tcp_admit.c net/tcp/tcp_pools.c net/tcp/tcp_isn.c tests/unit/net/fake_entropy.c net/tcp/tcp_hdr.c net/tcp/tcp_out.c net/tcp/tcp_budget.c net/tcp/tcp_sack.c net/tcp/tcp_service.c mm/pool.c mm/dma.c lib/timer.c lib/log.c lib/crc32.c tests/unit/net/fake_netdev.c drivers/rdma/roce_wire.c drivers/rdma/roce_icrc.c drivers/rdma/roce_mad.c drivers/rdma/roce_cm.c drivers/rdma/roce_net.c drivers/rdma/roce_resp.c drivers/rdma/roce_resp_tx.c drivers/rdma/roce_dev.c drivers/rdma/roce_mr.c drivers/rdma/roce_odp.c drivers/rdma/roce_odp_mr.c drivers/rdma/roce_cq.c drivers/rdma/roce_qp.c drivers/rdma/roce_req.c drivers/rdma/roce_comp.c
/*
 * RoCE v2 on the stack, through a fake e1000e (header split: the BTH and everything after
 * it arrive as a payload fragment; and plain): a CM REQ to QP 1 with no listener is
 * answered by a REJ (reason 8, the REQ's TransactionID and Communication ID, zeroed
 * private data) whose ICRC verifies over the IPv4/UDP headers the stack wrote; a frame
 * with one bit flipped anywhere after the UDP header, a bad Q_Key, an unknown QP, a bad
 * opcode and a truncated packet are each counted and dropped without an answer. The CM REQ
 * that Linux rxe sent in the lab (captured, in roce_vectors.h) passes the ICRC and is answered.
 */
#include "tests/unit/net/net_test.h"
#include "drivers/rdma/roce_icrc.h"
#include "drivers/rdma/roce_rc.h"
#include "drivers/rdma/roce_net.h"
#include "tests/unit/drivers/rdma/roce_vectors.h"
#include "tests/unit/drivers/rdma/roce_qp_up.h"

static struct roce_dev *dev;
static struct roce_net rn;

static void rdma_up(uint32_t features)
{
	net_test_start(features);
	cr_assert_eq(roce_dev_init(&dev, "rxe_t"), 0);
	roce_dev_set_addr(dev, US, 1500);
	cr_assert_eq(roce_net_start(&rn, dev), 0);
}

static void rdma_split(void)
{
	rdma_up(NETDEV_F_RX_SPLIT);
}

static void rdma_plain(void)
{
	rdma_up(0);
}

static void rdma_down(void)
{
	roce_net_stop(&rn);
	cr_assert_eq(roce_dev_destroy(dev), 0);
}

TestSuite(roce_net, .init = rdma_split, .fini = net_teardown);
TestSuite(roce_net_plain, .init = rdma_plain, .fini = net_teardown);

/* A CM REQ MAD (only the fields the passive side reads are set). */
static void cm_req(uint8_t mad[ROCE_MAD_LEN], uint64_t tid, uint32_t comm_id, uint64_t sid)
{
	memset(mad, 0, ROCE_MAD_LEN);
	mad[0] = 1;
	mad[1] = MAD_CLASS_CM;
	mad[2] = 2;
	mad[3] = MAD_METHOD_SEND;
	for (int i = 0; i < 8; i++)
		mad[8 + i] = (uint8_t)(tid >> (56 - 8 * i));
	mad[16] = 0x00;
	mad[17] = 0x10;
	for (int i = 0; i < 4; i++)
		mad[24 + i] = (uint8_t)(comm_id >> (24 - 8 * i));
	for (int i = 0; i < 8; i++)
		mad[32 + i] = (uint8_t)(sid >> (56 - 8 * i));
	for (int i = 40; i < ROCE_MAD_LEN; i++)
		mad[i] = (uint8_t)(i * 13);
}

/* An Ethernet frame from PEER carrying a UD SEND to qpn with payload, the ICRC computed
 * over the IPv4/UDP headers of the frame itself; flip: a byte offset from the BTH to
 * corrupt after the ICRC is computed (SIZE_MAX: none). Returns the frame length. */
static size_t ud_frame(uint8_t *out, uint32_t qpn, uint32_t qkey, const void *payload, size_t len, size_t flip)
{
	struct roce_pkt p = { .opcode = ROCE_UD_SEND_ONLY, .pkey = 0xffff, .destqp = qpn, .psn = 7,
			      .qkey = qkey, .srcqp = 1, .payload_len = (uint32_t)len };
	uint8_t pkt[2048];
	struct ipv4_hdr ip;
	struct udp_hdr uh;
	int h = roce_build(&p, pkt, sizeof(pkt));
	size_t n;

	cr_assert_gt(h, 0);
	memcpy(pkt + h, payload, len);
	n = (size_t)h + len;
	memset(pkt + n, 0, roce_pad((uint32_t)len) + ROCE_ICRC_LEN);
	n += roce_pad((uint32_t)len) + ROCE_ICRC_LEN;
	size_t fl = fake_build_udp(out, PEER, US, 0xd000, ROCE_UDP_PORT, pkt, n);
	memcpy(&ip, out + 14, sizeof(ip));
	memcpy(&uh, out + 34, sizeof(uh));
	roce_icrc_put(pkt + n - 4, roce_icrc_packet(&ip, &uh, pkt, n));
	if (flip < n)
		pkt[flip] ^= 0x01;
	fl = fake_build_udp(out, PEER, US, 0xd000, ROCE_UDP_PORT, pkt, n);
	return fl;
}

static void expect_rej(const struct fake_frame *f, uint64_t tid, uint32_t comm_id)
{
	struct ipv4_hdr ip;
	struct udp_hdr uh;
	struct roce_pkt p;
	struct roce_mad m;
	const uint8_t *pkt = f->b + 14 + 28;
	size_t len;

	memcpy(&ip, f->b + 14, sizeof(ip));
	memcpy(&uh, f->b + 34, sizeof(uh));
	cr_assert_eq(ip.protocol, IP_PROTO_UDP);
	cr_assert_eq(be32_get(ip.dst), PEER);
	cr_assert_eq(be16_get(uh.dst_port), ROCE_UDP_PORT);
	len = be16_get(uh.length) - 8;
	cr_assert_eq(len, 12 + 8 + 256 + 4);
	cr_assert_eq(roce_parse(pkt, len, len, &p), ROCE_PARSE_OK);
	cr_assert_eq(p.opcode, ROCE_UD_SEND_ONLY);
	cr_assert_eq(p.destqp, 1);
	cr_assert_eq(p.srcqp, 1);
	cr_assert_eq(p.qkey, ROCE_GSI_QKEY);
	cr_assert_eq(p.pkey, 0xffff);
	cr_assert_eq(p.payload_len, ROCE_MAD_LEN);
	cr_assert_eq(roce_icrc_get(pkt + len - 4), roce_icrc_packet(&ip, &uh, pkt, len), "ICRC of the REJ");
	const uint8_t *mad = pkt + p.hdr_len;
	cr_assert_eq(roce_mad_parse(mad, ROCE_MAD_LEN, &m), ROCE_MAD_OK);
	cr_assert_eq(m.mgmt_class, MAD_CLASS_CM);
	cr_assert_eq(m.class_version, 2);
	cr_assert_eq(m.method, MAD_METHOD_SEND);
	cr_assert_eq(m.attr_id, CM_ATTR_REJ);
	cr_assert_eq(m.tid, tid);
	cr_assert_eq(be32_get(*(const be32_t *)(mad + 24)), 0, "local comm id");
	cr_assert_eq(be32_get(*(const be32_t *)(mad + 28)), comm_id, "remote comm id");
	cr_assert_eq(mad[32] >> 6, CM_REJ_MSG_REQ);
	cr_assert_eq(mad[33], 0, "no ARI");
	cr_assert_eq(mad[34] << 8 | mad[35], CM_REJ_INVALID_SERVICE_ID);
	for (size_t i = 36; i < ROCE_MAD_LEN; i++)
		cr_assert_eq(mad[i], 0, "byte %zu of the REJ not zero", i);
}

static void req_gets_rej(void)
{
	uint8_t mad[ROCE_MAD_LEN];
	size_t n;

	cm_req(mad, 0x1122334455667788ull, 0xcafe0001, 0x0000000001060000ull | 7174);
	n = ud_frame(frame, 1, ROCE_GSI_QKEY, mad, sizeof(mad), SIZE_MAX);
	cr_assert_eq(fake_netdev_inject(&fnd, frame, n), 0);
	cr_assert_eq(fnd.ntx, 1, "one REJ");
	expect_rej(&fnd.tx[0], 0x1122334455667788ull, 0xcafe0001);
	cr_assert_eq(rn.st.cm_req, 1);
	cr_assert_eq(rn.st.cm_rej_tx, 1);
	cr_assert_eq(rn.st.rx_parse[ROCE_PARSE_OK], 1);
	cr_assert_eq(rn.st.rx_icrc_bad, 0);
	/* a second REQ (the peer's retry) gets its own REJ with the next PSN */
	fake_netdev_clear(&fnd);
	cm_req(mad, 0x99, 0xcafe0002, 1);
	n = ud_frame(frame, 1, ROCE_GSI_QKEY, mad, sizeof(mad), SIZE_MAX);
	cr_assert_eq(fake_netdev_inject(&fnd, frame, n), 0);
	cr_assert_eq(fnd.ntx, 1);
	expect_rej(&fnd.tx[0], 0x99, 0xcafe0002);
	fake_netdev_clear(&fnd);
}

Test(roce_net, cm_req_without_listener_gets_rej_with_valid_icrc)
{
	req_gets_rej();
	rdma_down();
}

Test(roce_net_plain, cm_req_without_listener_gets_rej_with_valid_icrc)
{
	req_gets_rej();
	rdma_down();
}

Test(roce_net, a_flipped_bit_anywhere_after_udp_fails_the_icrc)
{
	uint8_t mad[ROCE_MAD_LEN];
	uint64_t bad = 0;

	cm_req(mad, 1, 2, 3);
	/* every byte except BTH resv8a (offset 4, masked): BTH, DETH, MAD, ICRC */
	for (size_t at = 0; at < 12 + 8 + ROCE_MAD_LEN + 4; at++) {
		if (at == 4)
			continue;
		size_t n = ud_frame(frame, 1, ROCE_GSI_QKEY, mad, sizeof(mad), at);
		cr_assert_eq(fake_netdev_inject(&fnd, frame, n), 0);
		bad++;
		cr_assert_eq(fnd.ntx, 0, "answered a corrupt packet (byte %zu)", at);
	}
	/* a flip can also break the parse first (opcode, TVer, pad): either way, dropped */
	uint64_t parse_bad = rn.st.rx_parse[ROCE_PARSE_OPCODE] + rn.st.rx_parse[ROCE_PARSE_TVER] +
			     rn.st.rx_parse[ROCE_PARSE_PAD] + rn.st.rx_parse[ROCE_PARSE_SHORT];
	cr_assert_eq(rn.st.rx_icrc_bad + parse_bad, bad);
	cr_assert_gt(rn.st.rx_icrc_bad, 250);
	cr_assert_eq(rn.st.cm_req, 0);
	/* the masked byte (FECN/BECN) does not matter */
	size_t n = ud_frame(frame, 1, ROCE_GSI_QKEY, mad, sizeof(mad), 4);
	cr_assert_eq(fake_netdev_inject(&fnd, frame, n), 0);
	cr_assert_eq(fnd.ntx, 1);
	fake_netdev_clear(&fnd);
	rdma_down();
}

Test(roce_net, bad_qkey_unknown_qp_bad_opcode_short_are_dropped_and_counted)
{
	uint8_t mad[ROCE_MAD_LEN];
	size_t n;

	cm_req(mad, 1, 2, 3);
	n = ud_frame(frame, 1, 0x12345678, mad, sizeof(mad), SIZE_MAX);
	cr_assert_eq(fake_netdev_inject(&fnd, frame, n), 0);
	cr_assert_eq(rn.st.rx_bad_qkey, 1);
	n = ud_frame(frame, 0x4242, ROCE_GSI_QKEY, mad, sizeof(mad), SIZE_MAX);
	cr_assert_eq(fake_netdev_inject(&fnd, frame, n), 0);
	cr_assert_eq(rn.st.rx_no_qp, 1);
	/* a MAD of the wrong size on QP 1 */
	n = ud_frame(frame, 1, ROCE_GSI_QKEY, mad, 200, SIZE_MAX);
	cr_assert_eq(fake_netdev_inject(&fnd, frame, n), 0);
	cr_assert_eq(rn.st.gsi_bad_mad, 1);
	/* a non-CM MAD, a CM message that is not a REQ */
	mad[1] = 0x04;
	n = ud_frame(frame, 1, ROCE_GSI_QKEY, mad, sizeof(mad), SIZE_MAX);
	cr_assert_eq(fake_netdev_inject(&fnd, frame, n), 0);
	cr_assert_eq(rn.st.gsi_bad_mad, 2);
	mad[1] = MAD_CLASS_CM;
	mad[17] = 0x15;  /* DREQ */
	n = ud_frame(frame, 1, ROCE_GSI_QKEY, mad, sizeof(mad), SIZE_MAX);
	cr_assert_eq(fake_netdev_inject(&fnd, frame, n), 0);
	cr_assert_eq(rn.st.cm_other, 1);
	cr_assert_eq(fnd.ntx, 1, "a DREQ for no connection is still answered (DREP)");
	cr_assert_eq(rn.cm.st.drep_tx, 1);
	fake_netdev_clear(&fnd);
	/* bad opcode and short, straight as UDP payloads */
	uint8_t junk[16] = { 0x15, 0, 0xff, 0xff, 0, 0, 0, 1, 0, 0, 0, 0 };
	n = fake_build_udp(frame, PEER, US, 0xd000, ROCE_UDP_PORT, junk, sizeof(junk));
	cr_assert_eq(fake_netdev_inject(&fnd, frame, n), 0);
	cr_assert_eq(rn.st.rx_parse[ROCE_PARSE_OPCODE], 1);
	n = fake_build_udp(frame, PEER, US, 0xd000, ROCE_UDP_PORT, junk, 7);
	cr_assert_eq(fake_netdev_inject(&fnd, frame, n), 0);
	cr_assert_eq(rn.st.rx_parse[ROCE_PARSE_SHORT], 1);
	cr_assert_eq(fnd.ntx, 0, "nothing answered");
	cr_assert_eq(rn.st.rx_pkts, 7);
	rdma_down();
}

Test(roce_net, the_req_captured_from_linux_rxe_is_accepted_and_answered)
{
	const struct roce_vector *v = &roce_vectors[sizeof(roce_vectors) / sizeof(roce_vectors[0]) - 1];
	uint8_t f[512];

	cr_assert_str_eq(v->name, "rxe_cm_req");
	memcpy(f, fake_our_mac, 6);
	memcpy(f + 6, fake_peer_mac, 6);
	f[12] = 0x08;
	f[13] = 0x00;
	memcpy(f + 14, v->bytes, v->len);
	cr_assert_eq(fake_netdev_inject(&fnd, f, 14 + v->len), 0);
	cr_assert_eq(rn.st.rx_icrc_bad, 0);
	cr_assert_eq(rn.st.cm_req, 1);
	cr_assert_eq(rn.st.cm_rej_tx, 1);
	/* 10.10.0.2 is not in the ARP table yet: the REJ waits for ARP, which goes out */
	cr_assert_eq(fnd.ntx, 1);
	cr_assert_eq(fnd.tx[0].b[12] << 8 | fnd.tx[0].b[13], 0x0806);
	fake_netdev_clear(&fnd);
	/* the ARP reply releases the REJ, whose ICRC verifies */
	size_t n = fake_build_arp(frame, 2, fake_peer_mac, 0x0a0a0002, fake_our_mac, US, fake_our_mac);
	cr_assert_eq(fake_netdev_inject(&fnd, frame, n), 0);
	cr_assert_eq(fnd.ntx, 1);
	struct ipv4_hdr ip;
	memcpy(&ip, fnd.tx[0].b + 14, sizeof(ip));
	cr_assert_eq(be32_get(ip.dst), 0x0a0a0002);
	{
		const uint8_t *pkt = fnd.tx[0].b + 42;
		struct udp_hdr uh;
		memcpy(&uh, fnd.tx[0].b + 34, sizeof(uh));
		size_t len = be16_get(uh.length) - 8;
		cr_assert_eq(roce_icrc_get(pkt + len - 4), roce_icrc_packet(&ip, &uh, pkt, len));
		cr_assert_eq(memcmp(pkt + 20 + 24, (const uint8_t[4]){ 0 }, 4), 0, "REJ local comm id");
		cr_assert_eq(memcmp(pkt + 20 + 28, v->bytes + 48 + 24, 4), 0, "remote comm id = the REQ's local one");
		cr_assert_eq(memcmp(pkt + 20 + 8, v->bytes + 48 + 8, 8), 0, "the REQ's TransactionID");
	}
	fake_netdev_clear(&fnd);
	/* one bit off in the MAD: dropped */
	f[14 + 48 + 100] ^= 0x10;
	cr_assert_eq(fake_netdev_inject(&fnd, f, 14 + v->len), 0);
	cr_assert_eq(rn.st.rx_icrc_bad, 1);
	cr_assert_eq(rn.st.cm_req, 1);
	rdma_down();
}

Test(roce_net, rc_send_from_the_peer_is_placed_and_acked_on_the_wire)
{
	struct roce_pd *pd;
	struct roce_cq *cq;
	struct roce_qp *qp;
	struct roce_mr *mr;
	static uint8_t buf[256];
	struct roce_qp_init_attr init = { .qp_type = ROCE_QPT_RC,
					  .cap = { .max_send_wr = 2, .max_recv_wr = 2, .max_send_sge = 1, .max_recv_sge = 1 } };
	struct roce_qp_attr a = { .qp_state = ROCE_QPS_INIT, .port_num = 1, .qp_access_flags = ROCE_ACCESS_LOCAL_WRITE,
				  .path_mtu = ROCE_MTU_1024, .dest_qp_num = 0x55, .rq_psn = 0x100, .min_rnr_timer = 1,
				  .sq_psn = 0, .timeout = 14, .retry_cnt = 7, .rnr_retry = 7 };
	struct roce_wc wc;

	cr_assert_eq(roce_alloc_pd(dev, &pd), 0);
	cr_assert_eq(roce_create_cq(dev, 8, NULL, NULL, &cq), 0);
	init.send_cq = init.recv_cq = cq;
	cr_assert_eq(roce_create_qp(pd, &init, &qp), 0);
	roce_test_qp_rtr(qp, &a, PEER);
	memset(buf, 0, sizeof(buf));
	cr_assert_eq(roce_reg_mr(pd, 0, sizeof(buf), dma_addr_host(buf), ROCE_ACCESS_LOCAL_WRITE, &mr), 0);
	struct roce_recv_wr w = { .wr_id = 42, .num_sge = 1, .sg_list = { { 0, sizeof(buf), roce_mr_lkey(mr) } } };
	cr_assert_eq(roce_post_recv(qp, &w), 0);

	/* SEND only, AckReq, 13 bytes (pad 3) from the peer's QP 0x55 */
	struct roce_pkt p = { .opcode = ROCE_RC_SEND_ONLY, .pkey = 0xffff, .destqp = roce_qp_num(qp), .psn = 0x100,
			      .ackreq = true, .payload_len = 13 };
	uint8_t pkt[64], ipudp[28];
	int h = roce_build(&p, pkt, sizeof(pkt));
	memcpy(pkt + h, "hello, rdma!!", 13);
	size_t n = (size_t)h + 13 + 3 + 4;
	memset(pkt + h + 13, 0, 7);
	size_t fl = fake_build_udp(frame, PEER, US, 0xe000, ROCE_UDP_PORT, pkt, n);
	memcpy(ipudp, frame + 14, 28);
	roce_icrc_put(pkt + n - 4, roce_icrc_packet((const struct ipv4_hdr *)ipudp,
						    (const struct udp_hdr *)(ipudp + 20), pkt, n));
	fl = fake_build_udp(frame, PEER, US, 0xe000, ROCE_UDP_PORT, pkt, n);
	cr_assert_eq(fake_netdev_inject(&fnd, frame, fl), 0);

	cr_assert_eq(roce_poll_cq(cq, 1, &wc), 1);
	cr_assert_eq(wc.wr_id, 42);
	cr_assert_eq(wc.byte_len, 13);
	cr_assert_eq(memcmp(buf, "hello, rdma!!", 13), 0);
	cr_assert_eq(fnd.ntx, 1, "one ACK");
	const uint8_t *ack = fnd.tx[0].b + 42;
	struct udp_hdr uh;
	struct roce_pkt q;
	memcpy(&uh, fnd.tx[0].b + 34, sizeof(uh));
	size_t len = be16_get(uh.length) - 8;
	cr_assert_eq(roce_parse(ack, len, len, &q), ROCE_PARSE_OK);
	cr_assert_eq(q.opcode, ROCE_RC_ACK);
	cr_assert_eq(q.destqp, 0x55);
	cr_assert_eq(q.psn, 0x100);
	cr_assert_eq(q.syndrome, AETH_TYPE_ACK | 0, "its one receive WR used: no credits left");
	cr_assert_eq(q.msn, 1);
	cr_assert_eq(roce_icrc_get(ack + len - 4),
		     roce_icrc_packet((const struct ipv4_hdr *)(fnd.tx[0].b + 14), &uh, ack, len));
	cr_assert_eq(rn.st.resp_tx, 1);
	fake_netdev_clear(&fnd);

	roce_dereg_mr(mr);
	roce_destroy_qp(qp);
	roce_destroy_cq(cq);
	roce_dealloc_pd(pd);
	rdma_down();
}

Test(roce_net, rc_request_from_a_stranger_is_dropped)
{
	struct roce_pd *pd;
	struct roce_cq *cq;
	struct roce_qp *qp;
	struct roce_qp_init_attr init = { .qp_type = ROCE_QPT_RC,
					  .cap = { .max_send_wr = 2, .max_recv_wr = 2, .max_send_sge = 1, .max_recv_sge = 1 } };
	struct roce_qp_attr a = { .qp_state = ROCE_QPS_INIT, .port_num = 1, .path_mtu = ROCE_MTU_1024,
				  .dest_qp_num = 0x55, .rq_psn = 0x100 };

	cr_assert_eq(roce_alloc_pd(dev, &pd), 0);
	cr_assert_eq(roce_create_cq(dev, 8, NULL, NULL, &cq), 0);
	init.send_cq = init.recv_cq = cq;
	cr_assert_eq(roce_create_qp(pd, &init, &qp), 0);
	roce_test_qp_rtr(qp, &a, 0x0a0a0063); /* the QP's peer is 10.10.0.99, not PEER */
	struct roce_pkt p = { .opcode = ROCE_RC_SEND_ONLY, .pkey = 0xffff, .destqp = roce_qp_num(qp), .psn = 0x100,
			      .ackreq = true };
	uint8_t pkt[32];
	int h = roce_build(&p, pkt, sizeof(pkt));
	size_t n = (size_t)h + 4;
	size_t fl = fake_build_udp(frame, PEER, US, 0xe000, ROCE_UDP_PORT, pkt, n);
	roce_icrc_put(pkt + h, roce_icrc_packet((const struct ipv4_hdr *)(frame + 14),
						(const struct udp_hdr *)(frame + 34), pkt, n));
	fl = fake_build_udp(frame, PEER, US, 0xe000, ROCE_UDP_PORT, pkt, n);
	cr_assert_eq(fake_netdev_inject(&fnd, frame, fl), 0);
	cr_assert_eq(rn.st.rx_bad_src, 1);
	cr_assert_eq(fnd.ntx, 0);
	cr_assert_eq(roce_qp_rq_count(qp), 0);
	roce_destroy_qp(qp);
	roce_destroy_cq(cq);
	roce_dealloc_pd(pd);
	rdma_down();
}

/* Send one RDMA WRITE MIDDLE packet of len bytes from seg; the captured frame's RoCE part
 * (BTH onwards) is checked: its ICRC, and its payload equal to want. */
static void send_and_check(const struct roce_tx_seg *seg, unsigned nseg, uint32_t len, const uint8_t *want)
{
	struct roce_tx tx;
	memset(&tx, 0, sizeof(tx));
	tx.pkt.opcode = ROCE_RC_WRITE_MIDDLE;
	tx.pkt.flags = roce_opcode_flags(ROCE_RC_WRITE_MIDDLE);
	tx.pkt.pkey = ROCE_PKEY_DEFAULT;
	tx.pkt.destqp = 0x11;
	tx.pkt.psn = 5;
	tx.nseg = nseg;
	memcpy(tx.seg, seg, nseg * sizeof(*seg));
	fake_netdev_clear(&fnd);
	cr_assert_eq(roce_net_tx(&rn, PEER, &tx), 0);
	cr_assert_eq(fnd.ntx, 1);
	cr_assert_eq(fnd.tx_over_limit, 0, "one device piece within what the NIC gathers (%u B)", len);
	struct ipv4_hdr ip;
	struct udp_hdr uh;
	memcpy(&ip, fnd.tx[0].b + 14, sizeof(ip));
	memcpy(&uh, fnd.tx[0].b + 34, sizeof(uh));
	const uint8_t *pkt = fnd.tx[0].b + 42;
	size_t n = be16_get(uh.length) - 8;
	cr_assert_eq(n, sizeof(struct roce_bth) + len + 4);
	cr_assert_eq(roce_icrc_get(pkt + n - 4), roce_icrc_packet(&ip, &uh, pkt, n));
	cr_assert_eq(memcmp(pkt + sizeof(struct roce_bth), want, len), 0);
}

/* A payload in device memory goes without a copy: with room behind it (a strided MR's gap)
 * the pad and ICRC go there and the NIC gathers one piece; at 4096 bytes, beyond what the NIC
 * gathers at once with the ICRC, the first payload bytes go with the headers; without room a
 * trailer slot, given back when the NIC is done. Every frame's ICRC verifies. */
Test(roce_net, device_memory_payload_sent_without_a_copy)
{
	static uint8_t mem[2][4096 + 8];
	struct roce_tx_seg seg = { .mem = dma_addr_device((uint64_t)(uintptr_t)mem[0]), .len = 1024, .room = 8 };
	for (unsigned i = 0; i < sizeof(mem[0]); i++)
		mem[0][i] = (uint8_t)(i * 31 + 7);
	memcpy(mem[1], mem[0], sizeof(mem[1]));
	fnd.dev.features |= NETDEV_F_TX_GATHER_DEV;
	fnd.dev.tx_dev_frags = 1;
	fnd.dev.tx_dev_bytes = 4096;
	fnd.dev.mtu = 9000;
	send_and_check(&seg, 1, 1024, mem[1]);
	cr_assert_eq(rn.st.tx_zc_inline, 1);
	cr_assert_eq(rn.trailers_used, 0);
	cr_assert_eq(memcmp(mem[0], mem[1], 1024), 0, "the payload itself is never written");
	cr_assert_neq(memcmp(mem[0] + 1024, mem[1] + 1024, 4), 0, "the ICRC went into the room behind it");
	memcpy(mem[1], mem[0], sizeof(mem[1]));
	/* a full 4096-byte chunk: 4 bytes with the headers */
	seg.len = 4096;
	send_and_check(&seg, 1, 4096, mem[1]);
	cr_assert_eq(rn.st.tx_zc_inline, 2);
	memcpy(mem[1], mem[0], sizeof(mem[1]));
	/* no room: a trailer slot, back once the frame is sent */
	seg.len = 1000;
	seg.room = 0;
	send_and_check(&seg, 1, 1000, mem[1]);
	cr_assert_eq(rn.st.tx_zc, 3);
	cr_assert_eq(rn.st.tx_zc_inline, 2);
	cr_assert_eq(rn.trailers_used, 0, "the trailer slot came back");
	/* two pieces: copied as before */
	struct roce_tx_seg two[2] = { seg, seg };
	two[0].len = two[1].len = 500;
	two[1].mem = dma_addr_device((uint64_t)(uintptr_t)mem[0] + 500);
	send_and_check(two, 2, 1000, mem[1]);
	cr_assert_eq(rn.st.tx_zc, 3);
	cr_assert_eq(memcmp(mem[0], mem[1], sizeof(mem[1])), 0, "nothing written without room");
	rdma_down();
}

/* An RC QP in RTS whose peer is PEER's QP dest_qp, with a send queue of depth WRs. */
static struct roce_qp *rts_qp(struct roce_pd *pd, struct roce_cq *cq, uint32_t dest_qp, unsigned depth)
{
	struct roce_qp_init_attr init = { .qp_type = ROCE_QPT_RC, .send_cq = cq, .recv_cq = cq,
					  .cap = { .max_send_wr = depth, .max_recv_wr = 1, .max_send_sge = 1,
						   .max_recv_sge = 1 } };
	struct roce_qp_attr a = { .qp_state = ROCE_QPS_INIT, .port_num = 1, .path_mtu = ROCE_MTU_1024,
				  .dest_qp_num = dest_qp, .rq_psn = 0x100, .sq_psn = 0x200, .timeout = 14,
				  .retry_cnt = 7, .rnr_retry = 7, .max_rd_atomic = 1 };
	struct roce_qp *qp;

	cr_assert_eq(roce_create_qp(pd, &init, &qp), 0);
	roce_test_qp_rts(qp, &a, PEER);
	return qp;
}

/* The poller's budget is shared in turn: with two QPs that always have packets to send and
 * a budget of one packet per pass, the second QP's first packet goes on the second pass, not
 * after everything the first one has (the sends start after where the last budget ran out). */
Test(roce_net, the_poll_budget_goes_round_the_qps)
{
	enum { WRS = 4 };
	static uint8_t buf[64];
	struct roce_pd *pd;
	struct roce_cq *cq;
	struct roce_mr *mr;
	struct roce_qp *qp[2];
	uint32_t dest[2] = { 0x51, 0x52 }, seen[2 * WRS];

	cr_assert_eq(roce_alloc_pd(dev, &pd), 0);
	cr_assert_eq(roce_create_cq(dev, 4 * WRS, NULL, NULL, &cq), 0);
	cr_assert_eq(roce_reg_mr(pd, 0, sizeof(buf), dma_addr_host(buf), ROCE_ACCESS_LOCAL_WRITE, &mr), 0);
	for (unsigned q = 0; q < 2; q++) {
		qp[q] = rts_qp(pd, cq, dest[q], WRS);
		for (unsigned i = 0; i < WRS; i++) {
			struct roce_send_wr w = { .wr_id = q * 100 + i, .opcode = ROCE_WR_SEND, .num_sge = 1,
						  .sg_list = { { 0, 16, roce_mr_lkey(mr) } } };
			cr_assert_eq(roce_post_send(qp[q], &w), 0);
		}
	}
	fake_netdev_clear(&fnd);
	for (unsigned pass = 0; pass < 2 * WRS; pass++) {
		cr_assert_eq(roce_net_poll(&rn, 1), 1, "pass %u sends one packet", pass);
		cr_assert_eq(fnd.ntx, pass + 1);
		struct roce_pkt p;
		struct udp_hdr uh;
		memcpy(&uh, fnd.tx[pass].b + 34, sizeof(uh));
		size_t len = be16_get(uh.length) - 8;
		cr_assert_eq(roce_parse(fnd.tx[pass].b + 42, len, len, &p), ROCE_PARSE_OK);
		seen[pass] = p.destqp;
	}
	for (unsigned pass = 0; pass < 2 * WRS; pass++)
		cr_assert_eq(seen[pass], dest[pass % 2], "pass %u sent for QP %#x, not %#x", pass, seen[pass],
			     dest[pass % 2]);
	cr_assert_eq(roce_net_poll(&rn, 1), 0, "nothing left to send");
	fake_netdev_clear(&fnd);
	for (unsigned q = 0; q < 2; q++)
		roce_destroy_qp(qp[q]);
	roce_dereg_mr(mr);
	roce_destroy_cq(cq);
	roce_dealloc_pd(pd);
	rdma_down();
}
