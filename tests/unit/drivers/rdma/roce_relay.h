/*
 * roce_relay.h - the wire of the RC tests: every RoCE frame the device sends to the peer
 * address is parsed (its ICRC checked), put through a policy (pass, drop, hold back behind
 * the next one) and injected again as coming from the peer, a few per round from a FIFO
 * so the answers they cause fit the fake NIC's capture. MADs (UD to QP 1) are not turned
 * around but kept for the test (the peer's CM is the test). When nothing moves and the
 * test's idle() says work is outstanding, the clock runs so the timers fire.
 * Include after net_test.h; the test defines `rn` (its struct roce_net) before.
 */
#ifndef TESTS_UNIT_DRIVERS_RDMA_ROCE_RELAY_H
#define TESTS_UNIT_DRIVERS_RDMA_ROCE_RELAY_H

#include "drivers/rdma/roce_icrc.h"
#include "drivers/rdma/roce_mad.h"
#include "drivers/rdma/roce_net.h"

static struct roce_net rn;

/* The relay's policy for the n-th RC packet: 0 pass, 1 drop, 2 hold back behind the next. */
static int (*policy)(unsigned n, const struct roce_pkt *p);
static unsigned relayed, dropped;
static void (*relay_extra_poll)(void);  /* an application polled with the device (may be NULL) */

static inline int pass_all(unsigned n, const struct roce_pkt *p)
{
	(void)n;
	(void)p;
	return 0;
}

/* Drop the last packet of every relay_period (set it before using the policy). */
static unsigned relay_period;
static inline int drop_periodic(unsigned n, const struct roce_pkt *p)
{
	(void)p;
	return n % relay_period == relay_period - 1;
}

#define RELAY_MADS 16
static uint8_t relay_mads[RELAY_MADS][ROCE_MAD_LEN];
static unsigned relay_nmads;

static void inject_from_peer(const uint8_t *pkt, size_t len)
{
	static uint8_t buf[FAKE_FRAME_MAX];
	memcpy(buf, pkt, len);
	size_t fl = fake_build_udp(frame, PEER, US, 0xc123, ROCE_UDP_PORT, buf, len);
	roce_icrc_put(buf + len - 4, roce_icrc_packet((const struct ipv4_hdr *)(frame + 14),
						      (const struct udp_hdr *)(frame + 34), buf, len));
	fl = fake_build_udp(frame, PEER, US, 0xc123, ROCE_UDP_PORT, buf, len);
	cr_assert_eq(fake_netdev_inject(&fnd, frame, fl), 0);
}

#define RELAY_Q 2048
static uint8_t relay_q[RELAY_Q][1400];
static size_t relay_len[RELAY_Q];

/* Move the captured frames into the FIFO (MADs aside). Returns how many RC packets came. */
static unsigned relay_collect(unsigned head, unsigned *count)
{
	unsigned got = 0;
	for (unsigned i = 0; i < fnd.ntx; i++) {
		struct udp_hdr uh;
		struct roce_pkt p;
		const struct fake_frame *f = &fnd.tx[i];
		if ((f->b[12] << 8 | f->b[13]) != 0x0800)
			continue;  /* ARP */
		memcpy(&uh, f->b + 34, sizeof(uh));
		cr_assert_eq(be16_get(uh.dst_port), ROCE_UDP_PORT);
		size_t len = be16_get(uh.length) - 8;
		const uint8_t *pkt = f->b + 42;
		cr_assert_eq(roce_parse(pkt, len, len, &p), ROCE_PARSE_OK);
		cr_assert_eq(roce_icrc_get(pkt + len - 4),
			     roce_icrc_packet((const struct ipv4_hdr *)(f->b + 14), &uh, pkt, len));
		if (p.flags & ROCE_F_UD) {
			cr_assert_lt(relay_nmads, RELAY_MADS);
			cr_assert_eq(p.payload_len, ROCE_MAD_LEN);
			memcpy(relay_mads[relay_nmads++], pkt + p.hdr_len, ROCE_MAD_LEN);
			continue;
		}
		cr_assert_lt(*count, RELAY_Q);
		cr_assert_leq(len, sizeof(relay_q[0]));
		unsigned t = (head + (*count)++) % RELAY_Q;
		memcpy(relay_q[t], pkt, len);
		relay_len[t] = len;
		got++;
	}
	fake_netdev_clear(&fnd);
	return got;
}

/* Relay until nothing moves and idle() holds. */
static void pump(bool (*idle)(void))
{
	static uint8_t held[1400];
	size_t held_len = 0;
	unsigned head = 0, count = 0;

	for (int round = 0; round < 20000; round++) {
		roce_net_poll(&rn, 32);
		if (relay_extra_poll)
			relay_extra_poll();
		cr_assert_eq(fnd.tx_dropped, 0);
		relay_collect(head, &count);
		if (!count) {
			if (held_len) {
				inject_from_peer(held, held_len);
				held_len = 0;
				continue;
			}
			if (idle())
				return;
			advance(20 * NSEC_PER_MSEC);
			continue;
		}
		for (unsigned k = 0; k < 4 && count; k++) {
			const uint8_t *pkt = relay_q[head];
			size_t len = relay_len[head];
			struct roce_pkt p;
			head = (head + 1) % RELAY_Q;
			count--;
			cr_assert_eq(roce_parse(pkt, len, len, &p), ROCE_PARSE_OK);
			int what = policy(relayed++, &p);
			if (what == 1) {
				dropped++;
				continue;
			}
			if (what == 2 && !held_len) {
				memcpy(held, pkt, len);
				held_len = len;
				continue;
			}
			inject_from_peer(pkt, len);
			if (held_len) {
				inject_from_peer(held, held_len);
				held_len = 0;
			}
		}
	}
	cr_assert_fail("the relay never settled");
}

/* A MAD from the peer's QP 1 to ours (UD SEND, GSI Q_Key). */
static inline void relay_inject_mad(const uint8_t mad[ROCE_MAD_LEN])
{
	struct roce_pkt p = { .opcode = ROCE_UD_SEND_ONLY, .pkey = 0xffff, .destqp = 1, .psn = 3,
			      .qkey = ROCE_GSI_QKEY, .srcqp = 1, .payload_len = ROCE_MAD_LEN };
	uint8_t pkt[512];
	int h = roce_build(&p, pkt, sizeof(pkt));
	memcpy(pkt + h, mad, ROCE_MAD_LEN);
	inject_from_peer(pkt, (size_t)h + ROCE_MAD_LEN + 4);
}

/* The MADs the device sent since the last call, into relay_mads; returns how many. */
static inline unsigned relay_sent_mads(void)
{
	unsigned head = 0, count = 0;
	relay_nmads = 0;
	relay_collect(head, &count);
	return relay_nmads;
}

/* The AttributeID of relay_mads[i]. */
static inline uint16_t relay_mad_attr(unsigned i)
{
	return be16_get(((const struct roce_mad_hdr *)relay_mads[i])->attr_id);
}

/* An RC QP in INIT on cq, open to every access (a test's peer QP). */
static inline struct roce_qp *relay_rc_qp(struct roce_pd *pd, struct roce_cq *cq, unsigned depth)
{
	struct roce_qp_init_attr init = { .qp_type = ROCE_QPT_RC, .send_cq = cq, .recv_cq = cq,
					  .cap = { .max_send_wr = depth, .max_recv_wr = depth, .max_send_sge = 1,
						   .max_recv_sge = 1 } };
	struct roce_qp_attr a = { .qp_state = ROCE_QPS_INIT, .port_num = 1, .qp_access_flags = ROCE_ACCESS_ALL };
	struct roce_qp *qp;
	cr_assert_eq(roce_create_qp(pd, &init, &qp), 0);
	cr_assert_eq(roce_modify_qp(qp, &a, ROCE_QP_STATE | ROCE_QP_PKEY_INDEX | ROCE_QP_PORT | ROCE_QP_ACCESS_FLAGS), 0);
	return qp;
}

/* A test QP from INIT to RTS towards the peer address's QP dest_qpn (path MTU 1024, timeout
 * 14, retries 7, rd_atomic depth `depth` each way): it receives from rq_psn, sends from sq_psn. */
static inline void relay_connect_qp(struct roce_qp *qp, uint32_t dest_qpn, uint32_t rq_psn, uint32_t sq_psn,
				    uint8_t depth)
{
	struct roce_qp_attr a;
	memset(&a, 0, sizeof(a));
	a.qp_state = ROCE_QPS_RTR;
	roce_gid_from_ipv4(PEER, &a.ah_attr.dgid);
	a.path_mtu = ROCE_MTU_1024;
	a.dest_qp_num = dest_qpn;
	a.rq_psn = rq_psn;
	a.max_dest_rd_atomic = depth;
	a.min_rnr_timer = 1;
	cr_assert_eq(roce_modify_qp(qp, &a, ROCE_QP_STATE | ROCE_QP_AV | ROCE_QP_PATH_MTU | ROCE_QP_DEST_QPN |
						  ROCE_QP_RQ_PSN | ROCE_QP_MAX_DEST_RD_ATOMIC | ROCE_QP_MIN_RNR_TIMER), 0);
	a.qp_state = ROCE_QPS_RTS;
	a.sq_psn = sq_psn;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = depth;
	cr_assert_eq(roce_modify_qp(qp, &a, ROCE_QP_STATE | ROCE_QP_SQ_PSN | ROCE_QP_TIMEOUT | ROCE_QP_RETRY_CNT |
						  ROCE_QP_RNR_RETRY | ROCE_QP_MAX_QP_RD_ATOMIC), 0);
}

/* The REQ MAD the peer's CM sends (transaction ID tid) for service_id from its QP qpn: Starting
 * PSN psn, rd_atomic depth `depth` each way, path MTU 1024, 7 retries and RNR retries, ACK
 * timeout 14, the GIDs of PEER and US; len bytes of private data (none when priv is NULL). */
static inline void relay_cm_req(uint8_t mad[ROCE_MAD_LEN], uint64_t tid, uint32_t comm_id, uint64_t service_id,
				uint32_t qpn, uint32_t psn, uint8_t depth, const uint8_t *priv, size_t len)
{
	struct roce_cm_req_msg r;

	cr_assert_leq(len, sizeof(r.private_data));
	roce_cm_build_hdr(mad, CM_ATTR_REQ, tid);
	memset(&r, 0, sizeof(r));
	r.local_comm_id = be32_make(comm_id);
	r.service_id = be64_make(service_id);
	r.local_qpn = be24_make(qpn);
	r.responder_resources = depth;
	r.initiator_depth = depth;
	r.starting_psn = be24_make(psn);
	r.lto_retry = 20 << 3 | 7;
	r.mtu_rdc_rnr = ROCE_MTU_1024 << 4 | 7;
	r.maxcm_srq_ext = 15 << 4;
	roce_gid_from_ipv4(PEER, (struct roce_gid *)r.primary_local_gid);
	roce_gid_from_ipv4(US, (struct roce_gid *)r.primary_remote_gid);
	r.primary_ack_timeout = 14 << 3;
	if (priv)
		memcpy(r.private_data, priv, len);
	memcpy(mad + ROCE_MAD_HDR_LEN, &r, sizeof(r));
}

/* The peer's CM sends a REQ for service_id naming qp (Starting PSN psn, rd_atomic depth
 * `depth` each way); returns the answer's AttributeID (REP or REJ). For a REP: *server_id is
 * its Local Communication ID, its private data goes to priv (when not NULL,
 * CM_REP_PRIVATE_LEN bytes), qp is connected (RTR, RTS: it sends from the REP's Starting PSN,
 * as Linux's CM does) and the RTU sent. */
static inline uint16_t relay_cm_connect_psn(struct roce_qp *qp, uint64_t service_id, uint32_t comm_id,
					    uint32_t psn, uint8_t depth, uint32_t *server_id, uint8_t *priv)
{
	uint8_t mad[ROCE_MAD_LEN];
	struct roce_cm_rep_msg rep;
	unsigned head = 0, count = 0;
	uint16_t attr;

	relay_cm_req(mad, comm_id, comm_id, service_id, roce_qp_num(qp), psn, depth, NULL, 0);
	relay_nmads = 0;
	relay_inject_mad(mad);
	relay_collect(head, &count);
	cr_assert_eq(relay_nmads, 1);
	relay_nmads = 0;
	attr = relay_mad_attr(0);
	if (attr != CM_ATTR_REP)
		return attr;
	memcpy(&rep, relay_mads[0] + ROCE_MAD_HDR_LEN, sizeof(rep));
	*server_id = be32_get(rep.local_comm_id);
	if (priv)
		memcpy(priv, rep.private_data, sizeof(rep.private_data));
	relay_connect_qp(qp, be24_get(rep.local_qpn), psn, be24_get(rep.starting_psn), depth);
	roce_cm_build_ids(mad, CM_ATTR_RTU, comm_id, comm_id, *server_id);
	relay_inject_mad(mad);
	return attr;
}

/* relay_cm_connect_psn() with Starting PSN 0x123456 and depth 4. */
static inline uint16_t relay_cm_connect(struct roce_qp *qp, uint64_t service_id, uint32_t comm_id,
					uint32_t *server_id, uint8_t *priv)
{
	return relay_cm_connect_psn(qp, service_id, comm_id, 0x123456, 4, server_id, priv);
}

/* A test QP to ERR, its completions drained from cq, destroyed. */
static inline void relay_qp_destroy(struct roce_qp *qp, struct roce_cq *cq)
{
	struct roce_qp_attr e = { .qp_state = ROCE_QPS_ERR };
	struct roce_wc wc[16];
	roce_modify_qp(qp, &e, ROCE_QP_STATE);
	while (roce_poll_cq(cq, 16, wc) > 0)
		;
	roce_destroy_qp(qp);
}

#endif
