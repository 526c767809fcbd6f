// sources: drivers/nic/netdev.c net/net.c lib/ipv4_text.c net/arp.c net/ipv4.c net/udp.c net/tcp/tcp.c net/tcp/tcp_in.c net/tcp/tcp_admit.c net/tcp/tcp_pools.c net/tcp/tcp_isn.c tests/unit/net/fake_entropy.c net/tcp/tcp_hdr.c net/tcp/tcp_out.c net/tcp/tcp_budget.c net/tcp/tcp_sack.c net/tcp/tcp_service.c mm/pool.c mm/dma.c lib/timer.c lib/log.c lib/crc32.c tests/unit/net/fake_netdev.c drivers/rdma/roce_wire.c drivers/rdma/roce_icrc.c drivers/rdma/roce_mad.c drivers/rdma/roce_cm.c drivers/rdma/roce_net.c drivers/rdma/roce_resp.c drivers/rdma/roce_resp_tx.c drivers/rdma/roce_dev.c drivers/rdma/roce_mr.c drivers/rdma/roce_odp.c drivers/rdma/roce_odp_mr.c drivers/rdma/roce_cq.c drivers/rdma/roce_qp.c drivers/rdma/roce_req.c drivers/rdma/roce_comp.c drivers/nvme/target/nvmet_core.c drivers/nvme/target/nvmet_fabrics.c drivers/nvme/target/nvmet_admin.c drivers/nvme/target/nvmet_ana.c drivers/nvme/target/nvmet_referral.c drivers/nvme/target/nvmet_io.c drivers/nvme/target/nvmet_bdev_ram.c drivers/nvme/target/nvmet_config.c tests/unit/drivers/nvme/target/fake_nvmet_transport.c drivers/nvme/target/nvmet_rdma.c drivers/nvme/target/nvmet_rdma_cmd.c drivers/nvme/target/nvmet_rdma_place.c drivers/nvme/target/nvmet_dram_reason.c drivers/nvme/target/nvmet_rdma_wire.c tests/unit/drivers/nvme/target/fake_cmb.c drivers/nvme/target/nvmet_auth.c drivers/nvme/target/nvmet_auth_msg.c drivers/nvme/target/nvmet_auth_key.c lib/crypto.c
// libs: -lmbedcrypto
/*
 * The NVMe/RDMA transport over the real software RoCE, the real target core and RAM
 * disks, against a host played by the test as Linux's nvme-rdma does it: the CM REQ with
 * rdma_cm's header and the NVMe/RDMA private data (REP's CRQSIZE read back), the admin
 * Connect whose 1024 bytes the target fetches by RDMA READ (keyed SGL), Property Set,
 * Identify and the discovery log delivered by RDMA WRITE, an I/O queue with a 4 KiB write
 * in the capsule, 128 KiB written and read back through keyed SGLs with Invalidate Key
 * (the response comes as SEND with Invalidate), then the host's DREQ: everything freed.
 * Also: every reject status of a bad REQ in the REJ's private data, a host that sends
 * beyond its credits, a lossy wire, keep-alive expiry, reconnect after disconnect, and
 * payload placement in (fake) device memory with each DRAM fallback counted, and write data
 * left in the NIC's receive buffers (the NVMe Write gathers the RDMA READ responses where the
 * NIC put them), the buffers back after the write and on every error path.
 * The host's QPs are on the same device, their packets turned around by the relay.
 */
#include "tests/unit/net/net_test.h"
#include "drivers/rdma/roce_internal.h"
#include "drivers/nvme/target/nvmet_rdma.h"
#include "tests/unit/drivers/nvme/target/fake_cmb.h"
#include "tests/unit/drivers/nvme/target/fake_nvmet_transport.h"
#include "tests/unit/drivers/rdma/roce_relay.h"

#define HOST "nqn.2014-08.org.nvmexpress:uuid:aaaaaaaa-0000-4000-8000-000000000001"
#define OTHER "nqn.2014-08.org.nvmexpress:uuid:bbbbbbbb-0000-4000-8000-000000000002"
#define VOL "nqn.2026-11.org.p2pstore:vol0"
#define DISC "nqn.2014-08.org.nvmexpress.discovery"

static const char *const config_json =
	"{ \"hosts\": [ { \"nqn\": \"" HOST "\" } ],\n"
	"  \"ports\": [ { \"portid\": 7, \"addr\": { \"trtype\": \"rdma\", \"adrfam\": \"ipv4\", \"traddr\": \"10.10.0.10\","
	" \"trsvcid\": \"4420\" }, \"subsystems\": [ \"" VOL "\" ] } ],\n"
	"  \"subsystems\": [ { \"nqn\": \"" VOL "\", \"allowed_hosts\": [ \"" HOST "\" ],\n"
	"      \"attr\": { \"allow_any_host\": \"0\" },\n"
	"      \"namespaces\": [ { \"nsid\": 1, \"enable\": 1, \"device\": { \"path\": \"/dev/nvme0n1\" } } ] } ] }\n";

static struct roce_dev *dev;
static struct nvmet_rdma t;
static struct nvmet_config cfg;
static struct roce_pd *pd;
static struct roce_cq *cq;
static struct roce_mr *mr;
static uint8_t *hmem;                 /* the host's memory: capsules, responses, data */
#define HMEM (1u << 20)
#define IOVA 0x7f0000000000ull
#define H_CAPS 0x0                   /* capsules to send: 8 slots of 8 KiB */
#define H_RSP 0x10000                /* responses: 64 x 16 B */
#define H_DATA 0x20000               /* data */

struct hq {                           /* one host queue */
	struct roce_qp *qp;
	uint32_t comm_id, our_id;
	uint16_t qid;
	unsigned depth;
	uint16_t cid;
};

static void target_poll(void)
{
	nvmet_rdma_poll(&t, 64);
}

static void setup(void)
{
	char err[160];
	net_test_start(NETDEV_F_RX_SPLIT);
	cr_assert_eq(roce_dev_init(&dev, "rxe_nvmet"), 0);
	roce_dev_set_addr(dev, US, 1500);
	cr_assert_eq(roce_net_start(&rn, dev), 0);
	cr_assert_eq(nvmet_config_parse(config_json, strlen(config_json), &cfg, err, sizeof(err), NULL, NULL), 0, "%s",
		     err);
	cr_assert_eq(nvmet_init(&cfg, ft_ram_open, NULL), 0);
	cr_assert_eq(nvmet_rdma_start(&t, &rn), 0);
	cr_assert_eq(roce_alloc_pd(dev, &pd), 0);
	cr_assert_eq(roce_create_cq(dev, 256, NULL, NULL, &cq), 0);
	hmem = calloc(1, HMEM);
	cr_assert_eq(roce_reg_mr(pd, IOVA, HMEM, dma_addr_host(hmem), ROCE_ACCESS_ALL, &mr), 0);
	relay_extra_poll = target_poll;
	relay_nmads = 0;
	policy = pass_all;
}

static void host_qp_free(struct hq *h)
{
	struct roce_qp_attr e = { .qp_state = ROCE_QPS_ERR };
	struct roce_wc wc[16];
	if (!h->qp)
		return;
	roce_modify_qp(h->qp, &e, ROCE_QP_STATE);
	while (roce_poll_cq(cq, 16, wc) > 0)
		;
	roce_destroy_qp(h->qp);
	h->qp = NULL;
}

static struct hq hqs[4];

static void teardown(void)
{
	for (unsigned i = 0; i < 4; i++)
		host_qp_free(&hqs[i]);
	memset(hqs, 0, sizeof(hqs));
	nvmet_rdma_stop(&t);
	for (int i = 0; i < 4; i++)
		nvmet_rdma_poll(&t, 64);
	if (nvmet_rdma_queue_count(&t) || t.pd)
		abort();
	/* every NIC receive buffer write data held came back, and its reservation */
	if (t.st.rx_held || t.rx_reserved || fnd.data_out)
		abort();
	nvmet_fini();
	run_timers();
	roce_dereg_mr(mr);
	roce_destroy_cq(cq);
	roce_dealloc_pd(pd);
	free(hmem);
	roce_net_stop(&rn);
	if (roce_dev_destroy(dev))
		abort();
	net_teardown();
}

TestSuite(nvmet_rdma, .init = setup, .fini = teardown);

/* A REQ as Linux's rdma_cm sends it for nvme-rdma: rdma_cm's 36-byte header, then the
 * NVMe/RDMA private data (nvme: 32 bytes, or NULL for the standard one). Returns the MAD
 * the target answered with (REP or REJ), in relay_mads[0]. */
static uint16_t send_req(struct hq *h, uint16_t qid, uint16_t hsqsize, uint16_t hrqsize, const uint8_t *nvme)
{
	static uint32_t next_comm = 0x1000;
	uint8_t mad[ROCE_MAD_LEN];
	uint8_t priv[NVMET_RDMA_CMA_HDR_LEN + 32] = { 0 };
	unsigned head = 0, count = 0;

	h->comm_id = next_comm++;
	priv[1] = 4 << 4;  /* rdma_cm header: version 0, IPv4 */
	priv[2] = 4420 >> 8;
	priv[3] = 4420 & 0xff;
	if (nvme) {
		memcpy(priv + NVMET_RDMA_CMA_HDR_LEN, nvme, 32);
	} else {
		le16_store(priv + NVMET_RDMA_CMA_HDR_LEN + 2, qid);
		le16_store(priv + NVMET_RDMA_CMA_HDR_LEN + 4, hrqsize);
		le16_store(priv + NVMET_RDMA_CMA_HDR_LEN + 6, hsqsize);
		le16_store(priv + NVMET_RDMA_CMA_HDR_LEN + 8, 0xffff);
	}
	relay_cm_req(mad, 0x4200 + h->comm_id, h->comm_id, ROCE_CM_PS_TCP_SID(4420), roce_qp_num(h->qp), 0x123456, 4,
		     priv, sizeof(priv));
	relay_nmads = 0;
	relay_inject_mad(mad);
	relay_collect(head, &count);
	cr_assert_eq(relay_nmads, 1, "one answer to the REQ");
	return be16_get(((const struct roce_mad_hdr *)relay_mads[0])->attr_id);
}

static void host_qp_create(struct hq *h)
{
	struct roce_qp_init_attr init = { .qp_type = ROCE_QPT_RC, .send_cq = cq, .recv_cq = cq,
					  .cap = { .max_send_wr = 64, .max_recv_wr = 64, .max_send_sge = 1, .max_recv_sge = 1 } };
	struct roce_qp_attr a = { .qp_state = ROCE_QPS_INIT, .port_num = 1, .qp_access_flags = ROCE_ACCESS_ALL };
	cr_assert_eq(roce_create_qp(pd, &init, &h->qp), 0);
	cr_assert_eq(roce_modify_qp(h->qp, &a, ROCE_QP_STATE | ROCE_QP_PKEY_INDEX | ROCE_QP_PORT | ROCE_QP_ACCESS_FLAGS), 0);
}

static void post_rsp_recv(struct hq *h, unsigned slot)
{
	struct roce_recv_wr rw = { .wr_id = 1000 + slot, .num_sge = 1,
				   .sg_list = { { IOVA + H_RSP + slot * 16, 16, roce_mr_lkey(mr) } } };
	cr_assert_eq(roce_post_recv(h->qp, &rw), 0);
}

/* rdma_connect for queue qid: REQ, REP (CRQSIZE checked), RTU; the QP in RTS with
 * receives posted for the responses. */
static void host_connect(struct hq *h, uint16_t qid, unsigned depth)
{
	struct roce_cm_rep_msg rep;
	struct roce_qp_attr a;
	uint8_t mad[ROCE_MAD_LEN];

	host_qp_create(h);
	h->qid = qid;
	h->depth = depth;
	cr_assert_eq(send_req(h, qid, (uint16_t)(depth - 1), (uint16_t)depth, NULL), CM_ATTR_REP);
	memcpy(&rep, relay_mads[0] + ROCE_MAD_HDR_LEN, sizeof(rep));
	cr_assert_eq(le16_load(rep.private_data), 0, "REP RECFMT");
	cr_assert_eq(le16_load(rep.private_data + 2), depth, "REP CRQSIZE = HSQSIZE + 1");
	h->our_id = be32_get(rep.local_comm_id);
	memset(&a, 0, sizeof(a));
	a.qp_state = ROCE_QPS_RTR;
	roce_gid_from_ipv4(PEER, &a.ah_attr.dgid);
	a.path_mtu = ROCE_MTU_1024;
	a.dest_qp_num = be24_get(rep.local_qpn);
	a.rq_psn = 0x123456;
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = 1;
	cr_assert_eq(roce_modify_qp(h->qp, &a, ROCE_QP_STATE | ROCE_QP_AV | ROCE_QP_PATH_MTU | ROCE_QP_DEST_QPN |
						    ROCE_QP_RQ_PSN | ROCE_QP_MAX_DEST_RD_ATOMIC | ROCE_QP_MIN_RNR_TIMER), 0);
	a.qp_state = ROCE_QPS_RTS;
	a.sq_psn = be24_get(rep.starting_psn);
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 4;
	cr_assert_eq(roce_modify_qp(h->qp, &a, ROCE_QP_STATE | ROCE_QP_SQ_PSN | ROCE_QP_TIMEOUT | ROCE_QP_RETRY_CNT |
						    ROCE_QP_RNR_RETRY | ROCE_QP_MAX_QP_RD_ATOMIC), 0);
	roce_cm_build_ids(mad, CM_ATTR_RTU, 0x4200 + h->comm_id, h->comm_id, h->our_id);
	relay_inject_mad(mad);
	for (unsigned i = 0; i < 8; i++)
		post_rsp_recv(h, i);
}

static bool target_idle(void)
{
	struct list_node *it;
	for (unsigned i = 0; i < 4; i++)
		if (hqs[i].qp && hqs[i].qp->sq.count)
			return false;
	list_for_each(&t.queues, it) {
		const struct nvmet_rdma_queue *rq = container_of(it, struct nvmet_rdma_queue, node);
		/* a rsp whose buffer only waits for the NIC's late transmit completions is done */
		if (rq->busy > rq->tx_held || (rq->qp && rq->qp->sq.count))
			return false;
	}
	return true;
}

struct result {
	uint16_t status;             /* SCT << 8 | SC */
	uint32_t dw0;
	bool invalidated;
	uint32_t inv_rkey;
};

/* SEND one capsule (sqe + icd bytes of in-capsule data) on h and wait for its response. */
static struct result host_cmd(struct hq *h, struct nvme_sqe *sqe, const void *icd, uint32_t icd_len)
{
	struct roce_send_wr w = { .wr_id = 1, .opcode = ROCE_WR_SEND, .send_flags = ROCE_SEND_SIGNALED, .num_sge = 1 };
	struct roce_wc wc[8];
	struct result res = { 0 };
	bool got = false;
	uint16_t cid = ++h->cid;

	sqe->cid = le16_make(cid);
	memcpy(hmem + H_CAPS, sqe, 64);
	if (icd_len)
		memcpy(hmem + H_CAPS + 64, icd, icd_len);
	w.sg_list[0] = (struct roce_sge){ IOVA + H_CAPS, 64 + icd_len, roce_mr_lkey(mr) };
	cr_assert_eq(roce_post_send(h->qp, &w), 0);
	pump(target_idle);
	int n = roce_poll_cq(cq, 8, wc);
	for (int i = 0; i < n; i++) {
		cr_assert_eq(wc[i].status, ROCE_WC_SUCCESS, "host WR %llu status %d", (unsigned long long)wc[i].wr_id,
			     wc[i].status);
		if (wc[i].opcode != ROCE_WC_RECV)
			continue;
		struct nvme_cqe c;
		unsigned slot = (unsigned)wc[i].wr_id - 1000;
		memcpy(&c, hmem + H_RSP + slot * 16, 16);
		cr_assert_eq(wc[i].byte_len, 16);
		cr_assert_eq(le16_get(c.cid), cid);
		cr_assert_eq(le16_get(c.sqid), h->qid);
		res.status = (uint16_t)(le16_get(c.status) >> 1) & 0x7ff;
		res.dw0 = le32_get(c.dw0);
		res.invalidated = (wc[i].wc_flags & ROCE_WC_WITH_INV) != 0;
		res.inv_rkey = wc[i].imm_data;
		post_rsp_recv(h, slot);
		got = true;
	}
	cr_assert(got, "a response came");
	return res;
}

/* Keyed SGL1 over [off, off + len) of the host memory. */
static void sgl_keyed(struct nvme_sqe *s, uint32_t off, uint32_t len, bool inv)
{
	uint8_t *b = (uint8_t *)s;
	le64_store(b + 24, IOVA + off);
	b[32] = (uint8_t)len;
	b[33] = (uint8_t)(len >> 8);
	b[34] = (uint8_t)(len >> 16);
	le32_store(b + 35, roce_mr_rkey(mr));
	b[39] = (uint8_t)(0x40 | (inv ? 0xf : 0));
}

static struct result connect_q(struct hq *h, uint16_t qid, uint16_t cntlid, const char *host, const char *sub,
			       uint32_t kato)
{
	struct nvme_sqe s = ft_connect_sqe(qid, (uint16_t)(h->depth - 1), kato);
	ft_connect_data(hmem + H_DATA, host, sub, cntlid);
	sgl_keyed(&s, H_DATA, 1024, false);
	return host_cmd(h, &s, NULL, 0);
}

static uint16_t admin_up(struct hq *a, const char *sub, uint32_t kato)
{
	host_connect(a, 0, 32);
	struct result r = connect_q(a, 0, 0xffff, HOST, sub, kato);
	cr_assert_eq(r.status, 0, "admin Connect: status %#x", r.status);
	struct nvme_sqe s = ft_prop_sqe(true, false, NVMF_PROP_CC,
					NVME_CC_EN | (6u << NVME_CC_IOSQES_SHIFT) | (4u << NVME_CC_IOCQES_SHIFT));
	cr_assert_eq(host_cmd(a, &s, NULL, 0).status, 0);
	return (uint16_t)r.dw0;
}

/* An admin queue and controller on a, I/O queue 1 on io. */
static void ctrl_up(struct hq *a, struct hq *io)
{
	uint16_t cntlid = admin_up(a, VOL, 0);
	host_connect(io, 1, 64);
	cr_assert_eq(connect_q(io, 1, cntlid, HOST, VOL, 0).status, 0);
}

static void host_disconnect(struct hq *h)
{
	uint8_t mad[ROCE_MAD_LEN];
	unsigned head = 0, count = 0;
	relay_nmads = 0;
	roce_cm_build_ids(mad, CM_ATTR_DREQ, 0x4300 + h->comm_id, h->comm_id, h->our_id);
	relay_inject_mad(mad);
	relay_collect(head, &count);
	cr_assert_eq(relay_nmads, 1);
	cr_assert_eq(be16_get(((const struct roce_mad_hdr *)relay_mads[0])->attr_id), CM_ATTR_DREP);
	host_qp_free(h);
}

static struct nvme_sqe rw_sqe(uint8_t opc, uint64_t slba, uint32_t nblocks)
{
	struct nvme_sqe s = ft_sqe(opc, 0, 1, 0);
	s.cdw10 = le32_make((uint32_t)slba);
	s.cdw11 = le32_make((uint32_t)(slba >> 32));
	s.cdw12 = le32_make(nblocks - 1);
	return s;
}

Test(nvmet_rdma, connect_write_read_disconnect)
{
	struct hq *a = &hqs[0], *io = &hqs[1];
	uint16_t cntlid = admin_up(a, VOL, 0);

	/* Identify Controller: RDMA WRITE into the host's buffer, SEND with Invalidate */
	memset(hmem + H_DATA, 0, 4096);
	struct nvme_sqe s = ft_sqe(NVME_ADM_IDENTIFY, 0, 0, 0);
	s.cdw10 = le32_make(NVME_ID_CNS_CTRL);
	sgl_keyed(&s, H_DATA, 4096, true);
	struct result r = host_cmd(a, &s, NULL, 0);
	cr_assert_eq(r.status, 0);
	cr_assert(r.invalidated, "SEND with Invalidate for a keyed SGL with Invalidate Key");
	cr_assert_eq(r.inv_rkey, roce_mr_rkey(mr));
	cr_assert_str_eq((const char *)hmem + H_DATA + NVME_IDC_SUBNQN, VOL);
	cr_assert_eq(le32_load(hmem + H_DATA + NVME_IDC_IOCCSZ), (64 + NVMET_RDMA_IN_CAPSULE) / 16);
	cr_assert_eq(le32_load(hmem + H_DATA + NVME_IDC_SGLS) & (NVME_SGLS_KEYED | NVME_SGLS_OFFSET),
		     NVME_SGLS_KEYED | NVME_SGLS_OFFSET);

	/* an I/O queue; a 4 KiB write in the capsule */
	host_connect(io, 1, 64);
	cr_assert_eq(connect_q(io, 1, cntlid, HOST, VOL, 0).status, 0);
	uint8_t blk[4096];
	for (unsigned i = 0; i < sizeof(blk); i++)
		blk[i] = (uint8_t)(i * 7 + 1);
	s = rw_sqe(NVME_CMD_WRITE, 0, 8);
	s.dptr.sgl1.len = le32_make(sizeof(blk));
	s.dptr.sgl1.id = 0x01;
	cr_assert_eq(host_cmd(io, &s, blk, sizeof(blk)).status, 0);
	cr_assert_eq(t.st.inline_writes, 1);

	/* 128 KiB written through a keyed SGL (RDMA READ), read back (RDMA WRITE) */
	for (unsigned i = 0; i < 131072; i++)
		hmem[H_DATA + i] = (uint8_t)(i * 13 + 5);
	s = rw_sqe(NVME_CMD_WRITE, 8, 256);
	sgl_keyed(&s, H_DATA, 131072, true);
	r = host_cmd(io, &s, NULL, 0);
	cr_assert_eq(r.status, 0);
	cr_assert(r.invalidated);
	memset(hmem + H_DATA + 0x40000, 0, 131072 + 4096);
	s = rw_sqe(NVME_CMD_READ, 0, 8);
	sgl_keyed(&s, H_DATA + 0x40000, 4096, false);
	r = host_cmd(io, &s, NULL, 0);
	cr_assert_eq(r.status, 0);
	cr_assert(!r.invalidated, "no SEND with Invalidate unless asked");
	s = rw_sqe(NVME_CMD_READ, 8, 256);
	sgl_keyed(&s, H_DATA + 0x40000 + 4096, 131072, false);
	cr_assert_eq(host_cmd(io, &s, NULL, 0).status, 0);
	s = rw_sqe(NVME_CMD_READ, 0, 264);
	sgl_keyed(&s, H_DATA + 0x80000, 135168, false);
	cr_assert_eq(host_cmd(io, &s, NULL, 0).status, NVMET_SC_SGL_LENGTH_INVALID, "more than MDTS");
	cr_assert_eq(memcmp(hmem + H_DATA + 0x40000, blk, 4096), 0, "the in-capsule write reads back");
	for (unsigned i = 0; i < 131072; i++)
		cr_assert_eq(hmem[H_DATA + 0x40000 + 4096 + i], (uint8_t)(i * 13 + 5), "byte %u", i);
	cr_assert_eq(t.st.rdma_reads, 3, "admin Connect, I/O Connect, the 128 KiB write");
	cr_assert_eq(t.st.read_bytes, 1024 + 1024 + 131072);
	cr_assert_eq(t.st.write_bytes, 4096 + 4096 + 131072, "Identify, then the two reads");
	cr_assert_eq(t.pool_used[0] + t.pool_used[1], 0, "every data buffer back");

	host_disconnect(io);
	host_disconnect(a);
	for (int i = 0; i < 4; i++)
		nvmet_rdma_poll(&t, 64);
	run_timers();
	cr_assert_eq(nvmet_rdma_queue_count(&t), 0, "both queues freed");
	cr_assert_eq(nvmet_ctrl_count(), 0, "the controller went with its last queue");
	cr_assert_eq(dev->qp_pool.in_use, 1, "only the GSI QP is left");
}

Test(nvmet_rdma, discovery_log_has_rdma_tsas)
{
	struct hq *a = &hqs[0];
	admin_up(a, DISC, 0);
	memset(hmem + H_DATA, 0, 2048);
	struct nvme_sqe s = ft_sqe(NVME_ADM_GET_LOG_PAGE, 0, 0, 0);
	s.cdw10 = le32_make(NVME_LOG_DISCOVERY | ((2048u / 4 - 1) << 16));
	sgl_keyed(&s, H_DATA, 2048, false);
	cr_assert_eq(host_cmd(a, &s, NULL, 0).status, 0);
	const uint8_t *e = hmem + H_DATA + 1024;
	cr_assert_eq(le64_load(hmem + H_DATA + NVMF_DISC_OFF_NUMREC), 1);
	cr_assert_eq(e[NVMF_DE_TRTYPE], NVMET_TRTYPE_RDMA);
	cr_assert_str_eq((const char *)e + NVMF_DE_TRSVCID, "4420");
	cr_assert_str_eq((const char *)e + NVMF_DE_TRADDR, "10.10.0.10");
	cr_assert_eq(e[NVMF_DE_TSAS + 0], 1, "RDMA_QPTYPE connected");
	cr_assert_eq(e[NVMF_DE_TSAS + 1], 1, "RDMA_PRTYPE not specified");
	cr_assert_eq(e[NVMF_DE_TSAS + 2], 1, "RDMA_CMS rdma_cm");
	host_disconnect(a);
}

/* Every bad REQ is refused with its NVMe/RDMA status in the REJ's private data. */
Test(nvmet_rdma, bad_reqs_rejected_with_status)
{
	static const struct {
		uint16_t recfmt, qid, hrq, hsq;
		uint16_t sts;
	} cases[] = {
		{ 1, 0, 32, 31, NVME_RDMA_CM_INVALID_RECFMT },
		{ 0, 17, 64, 63, NVME_RDMA_CM_INVALID_QID },
		{ 0, 0, 64, 63, NVME_RDMA_CM_INVALID_HSQSIZE },
		{ 0, 1, 128, 127, NVME_RDMA_CM_INVALID_HSQSIZE },
		{ 0, 1, 0, 63, NVME_RDMA_CM_INVALID_HRQSIZE },
	};
	struct hq *h = &hqs[0];
	host_qp_create(h);
	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint8_t p[32] = { 0 };
		le16_store(p, cases[i].recfmt);
		le16_store(p + 2, cases[i].qid);
		le16_store(p + 4, cases[i].hrq);
		le16_store(p + 6, cases[i].hsq);
		cr_assert_eq(send_req(h, 0, 0, 0, p), CM_ATTR_REJ, "case %u", i);
		const struct roce_cm_rej *rej = (const struct roce_cm_rej *)(relay_mads[0] + ROCE_MAD_HDR_LEN);
		cr_assert_eq(be16_get(rej->reason), CM_REJ_CONSUMER);
		cr_assert_eq(le16_load(rej->private_data), 0, "REJ RECFMT");
		cr_assert_eq(le16_load(rej->private_data + 2), cases[i].sts, "case %u: STS", i);
	}
	cr_assert_eq(t.st.rejected, 5);
	cr_assert_eq(nvmet_rdma_queue_count(&t), 0);
	cr_assert_eq(dev->qp_pool.in_use, 2, "GSI and the host's: nothing held for a refused REQ");
}

Test(nvmet_rdma, refused_host_and_bad_sgl)
{
	struct hq *a = &hqs[0];
	host_connect(a, 0, 32);
	struct result r = connect_q(a, 0, 0xffff, OTHER, VOL, 0);
	cr_assert_eq(r.status, NVMET_SC_CONNECT_INVALID_HOST, "a host not on the allowlist");
	r = connect_q(a, 0, 0xffff, HOST, VOL, 0);
	cr_assert_eq(r.status, 0, "the right host on the same queue");
	/* in-capsule data beyond the capsule; a read with in-capsule data; keyed too long */
	struct nvme_sqe s = ft_sqe(NVME_ADM_IDENTIFY, 0, 0, 0);
	s.cdw10 = le32_make(NVME_ID_CNS_CTRL);
	s.dptr.sgl1.len = le32_make(4096);
	s.dptr.sgl1.id = 0x01;
	cr_assert_eq(host_cmd(a, &s, NULL, 0).status, NVMET_SC_SGL_LENGTH_INVALID);
	sgl_keyed(&s, H_DATA, 0x800000, false);
	cr_assert_eq(host_cmd(a, &s, NULL, 0).status, NVMET_SC_SGL_LENGTH_INVALID);
	((uint8_t *)&s)[39] = 0x41; /* keyed, an unknown sub type */
	cr_assert_neq(host_cmd(a, &s, NULL, 0).status, 0);
	cr_assert_eq(t.st.sgl_refused, 2);
	host_disconnect(a);
}

/* Write len bytes of a pattern (seeded) at slba through a keyed SGL with Invalidate Key, read
 * them back into another buffer (with Invalidate when inv_read), compare. */
static void write_read_back(struct hq *io, uint64_t slba, uint32_t len, uint8_t seed, bool inv_read)
{
	for (uint32_t i = 0; i < len; i++)
		hmem[H_DATA + i] = (uint8_t)(i * seed + seed);
	struct nvme_sqe s = rw_sqe(NVME_CMD_WRITE, slba, len / 512);
	sgl_keyed(&s, H_DATA, len, true);
	cr_assert_eq(host_cmd(io, &s, NULL, 0).status, 0);
	memset(hmem + H_DATA + 0x40000, 0, len);
	s = rw_sqe(NVME_CMD_READ, slba, len / 512);
	sgl_keyed(&s, H_DATA + 0x40000, len, inv_read);
	cr_assert_eq(host_cmd(io, &s, NULL, 0).status, 0);
	cr_assert_eq(memcmp(hmem + H_DATA, hmem + H_DATA + 0x40000, len), 0, "slba %llu", (unsigned long long)slba);
}

Test(nvmet_rdma, lossy_wire_loses_nothing)
{
	struct hq *a = &hqs[0], *io = &hqs[1];
	policy = drop_periodic;
	relay_period = 7;
	ctrl_up(a, io);
	for (unsigned round = 0; round < 3; round++) {
		write_read_back(io, 16 * round, 65536, (uint8_t)(3 + round), true);
	}
	cr_assert_gt(dropped, 0);
	host_disconnect(io);
	host_disconnect(a);
}

/* Hold back every 5th packet behind the next one (both directions). */
static int reorder_fifth(unsigned n, const struct roce_pkt *p)
{
	(void)p;
	return n % 5 == 4 ? 2 : 0;
}

Test(nvmet_rdma, reordering_loses_nothing)
{
	struct hq *a = &hqs[0], *io = &hqs[1];
	policy = reorder_fifth;
	ctrl_up(a, io);
	for (unsigned round = 0; round < 4; round++) {
		struct nvme_sqe s = ft_sqe(NVME_ADM_IDENTIFY, 0, 0, 0);
		s.cdw10 = le32_make(NVME_ID_CNS_CTRL);
		sgl_keyed(&s, H_DATA + 0x80000, 4096, true);
		cr_assert_eq(host_cmd(a, &s, NULL, 0).status, 0);
		write_read_back(io, 64 * round, 16384, (uint8_t)(5 + round), false);
	}
	host_disconnect(io);
	host_disconnect(a);
}

Test(nvmet_rdma, keep_alive_expiry_closes_and_reconnect_works)
{
	struct hq *a = &hqs[0];
	admin_up(a, VOL, 2000);
	cr_assert_eq(nvmet_ctrl_count(), 1);
	/* the host goes quiet: the controller dies, the target sends a DREQ */
	relay_nmads = 0;
	for (int i = 0; i < 60; i++) {
		advance(100 * NSEC_PER_MSEC);
		nvmet_rdma_poll(&t, 64);
		roce_net_poll(&rn, 32);
	}
	unsigned count = 0;
	relay_collect(0, &count);
	cr_assert_eq(t.st.kills, 1);
	cr_assert_geq(relay_nmads, 1);
	cr_assert_eq(be16_get(((const struct roce_mad_hdr *)relay_mads[0])->attr_id), CM_ATTR_DREQ);
	run_timers();
	cr_assert_eq(nvmet_rdma_queue_count(&t), 0);
	cr_assert_eq(nvmet_ctrl_count(), 0);
	host_qp_free(a);
	/* reconnect: a new admin queue and controller */
	admin_up(a, VOL, 0);
	cr_assert_eq(nvmet_ctrl_count(), 1);
	host_disconnect(a);
}

/* fake_cmb.c reports misuse through the fake TCP layer's hook, which this test does not link. */
void ftcp_violation(const char *what)
{
	fprintf(stderr, "%s\n", what);
	abort();
}

static uint64_t dram_total(void)
{
	uint64_t n = 0;
	for (int r = 0; r < NVMET_TCP_DRAM_REASON_COUNT; r++)
		n += t.st.dram_cmds[r];
	return n;
}

Test(nvmet_rdma, payloads_placed_in_device_memory)
{
	struct hq *a = &hqs[0], *io = &hqs[1];
	fcmb_reset();
	nvmet_rdma_set_placement(&t, &fcmb_ops, true);
	/* a NIC that gathers one device-memory piece of up to 4 KiB per frame */
	fnd.dev.features |= NETDEV_F_TX_GATHER_DEV;
	fnd.dev.tx_dev_frags = 1;
	fnd.dev.tx_dev_bytes = 4096;
	ctrl_up(a, io);
	write_read_back(io, 0, 131072, 9, true);
	/* the read's RDMA WRITE packets: payload and ICRC gathered from device memory as one
	 * piece (the host QP checked every ICRC) */
	cr_assert_geq(rn.st.tx_zc_inline, 128, "%llu", (unsigned long long)rn.st.tx_zc_inline);
	cr_assert_eq(rn.st.tx_zc, rn.st.tx_zc_inline);
	cr_assert_eq(fnd.tx_over_limit, 0);
	write_read_back(io, 512, 4096 + 8192, 11, false);
	cr_assert_eq(t.st.p2p_writes, 2);
	cr_assert_eq(t.st.p2p_write_bytes, 131072 + 12288);
	cr_assert_eq(t.st.p2p_reads, 2);
	cr_assert_eq(t.st.p2p_read_bytes, 131072 + 12288);
	cr_assert_eq(t.st.p2p_strided, 2, "read data in path-MTU chunks with room for the ICRC");
	cr_assert_eq(dram_total(), 0, "no payload through DRAM");
	cr_assert_eq(fcmb_allocs, 4);
	cr_assert_eq(fcmb_in_use, 0, "every device buffer back");
	for (unsigned i = 0; i < NVMET_RDMA_SG_TABLES; i++)
		cr_assert_eq(t.sgt_used[i], 0, "segment table %u back", i);
	cr_assert_eq(t.pool_used[0] + t.pool_used[1], 0);
	host_disconnect(io);
	host_disconnect(a);
}

Test(nvmet_rdma, dram_fallbacks_counted_per_reason)
{
	struct hq *a = &hqs[0], *io = &hqs[1];
	fcmb_reset();
	nvmet_rdma_set_placement(&t, &fcmb_ops, true);
	ctrl_up(a, io);
	/* the drive may not read the memory: writes through DRAM, reads still in place */
	fcmb_reach_rc = -EXDEV;
	write_read_back(io, 0, 65536, 5, true);
	cr_assert_eq(t.st.dram_cmds[NVMET_TCP_DRAM_P2P_REFUSED], 1);
	cr_assert_eq(t.st.dram_bytes[NVMET_TCP_DRAM_P2P_REFUSED], 65536);
	cr_assert_eq(t.st.p2p_reads, 1);
	cr_assert(t.reason_logged[1][NVMET_TCP_DRAM_P2P_REFUSED] && !t.reason_logged[0][NVMET_TCP_DRAM_P2P_REFUSED]);
	/* device memory full */
	fcmb_reach_rc = 0;
	fcmb_alloc_rc = -ENOMEM;
	write_read_back(io, 0, 65536, 6, true);
	cr_assert_eq(t.st.dram_cmds[NVMET_TCP_DRAM_ALLOC], 2);
	/* nvmet.p2p = off */
	fcmb_alloc_rc = 0;
	nvmet_rdma_set_placement(&t, &fcmb_ops, false);
	write_read_back(io, 0, 65536, 7, true);
	cr_assert_eq(t.st.dram_cmds[NVMET_TCP_DRAM_OFF], 2);
	/* no placement ops */
	nvmet_rdma_set_placement(&t, NULL, true);
	write_read_back(io, 0, 4096 * 3, 8, true);
	cr_assert_eq(t.st.dram_cmds[NVMET_TCP_DRAM_NO_CMB], 2);
	cr_assert_eq(t.st.p2p_writes, 0);
	cr_assert_eq(fcmb_in_use, 0);
	host_disconnect(io);
	host_disconnect(a);
}

/* --- write data left in the NIC's receive buffers ------------------------------------ */

static uint64_t copy_total(void)
{
	uint64_t n = 0;
	for (int r = 0; r < NVMET_TCP_DRAM_REASON_COUNT; r++)
		n += t.st.copy_bytes[r];
	return n;
}

/* The target's queue for host QID qid. */
static struct nvmet_rdma_queue *target_queue(uint16_t qid)
{
	struct list_node *it;
	list_for_each(&t.queues, it) {
		struct nvmet_rdma_queue *rq = container_of(it, struct nvmet_rdma_queue, node);
		if (rq->host_qid == qid)
			return rq;
	}
	return NULL;
}

/* Nothing held: NIC buffers, reservations, tables, device memory, data buffers. */
static void assert_all_back(const char *when)
{
	cr_assert_eq(t.st.rx_held, 0, "%s: NIC buffers still held", when);
	cr_assert_eq(t.rx_reserved, 0, "%s: NIC buffer reservation left", when);
	cr_assert_eq(fnd.data_out, 0, "%s: %u NIC receive buffers not back", when, fnd.data_out);
	cr_assert_eq(fcmb_in_use, 0, "%s: device memory not back", when);
	for (unsigned i = 0; i < NVMET_RDMA_SG_TABLES; i++)
		cr_assert_eq(t.sgt_used[i], 0, "%s: segment table %u not back", when, i);
	cr_assert_eq(t.pool_used[0] + t.pool_used[1], 0, "%s: data buffers not back", when);
}

static void fill(uint32_t off, uint32_t len, uint8_t seed)
{
	for (uint32_t i = 0; i < len; i++)
		hmem[H_DATA + off + i] = (uint8_t)(i * seed + (i >> 9) + seed);
}

static void read_back(struct hq *io, uint64_t slba, uint32_t off, uint32_t len)
{
	memset(hmem + H_DATA + 0x80000, 0, len);
	struct nvme_sqe s = rw_sqe(NVME_CMD_READ, slba, len / 512);
	sgl_keyed(&s, H_DATA + 0x80000, len, false);
	cr_assert_eq(host_cmd(io, &s, NULL, 0).status, 0);
	cr_assert_eq(memcmp(hmem + H_DATA + off, hmem + H_DATA + 0x80000, len), 0, "slba %llu", (unsigned long long)slba);
}

static void inplace_setup(struct hq *a, struct hq *io)
{
	fcmb_reset();
	nvmet_rdma_set_placement(&t, &fcmb_ops, true);
	ctrl_up(a, io);
}

Test(nvmet_rdma, write_data_left_in_nic_buffers)
{
	struct hq *a = &hqs[0], *io = &hqs[1];
	inplace_setup(a, io);
	struct nvmet_rdma_queue *rq = target_queue(1);
	cr_assert_not_null(rq);

	fill(0, 131072, 3);
	dma_counters_reset();
	struct nvme_sqe s = rw_sqe(NVME_CMD_WRITE, 0, 256);
	sgl_keyed(&s, H_DATA, 131072, true);
	cr_assert_eq(host_cmd(io, &s, NULL, 0).status, 0);
	/* the completer handed every response's payload over: 128 pieces of 1024 B, no copy */
	cr_assert_eq(rq->qp->req.n.rx_frags, 128);
	cr_assert_eq(rq->qp->req.n.rx_frag_bytes, 131072);
	cr_assert_eq(t.st.inplace_writes, 1);
	cr_assert_eq(t.st.inplace_bytes, 131072);
	cr_assert_eq(copy_total(), 0, "no write payload copied out of the NIC's buffers");
	/* device memory the CPU touched: one read of each packet for the UDP checksum (the
	 * relay fills it in) and one for the ICRC, and the headers; the copy this replaced added
	 * a read and a write of every payload byte (532,528 B before) */
	uint64_t dev_cpu = dma_counters()->cpu_bytes[MEM_CLASS_DEVICE];
	cr_assert_lt(dev_cpu, 2 * 131072 + 131072 / 8, "%llu B of device memory touched by the CPU",
		     (unsigned long long)dev_cpu);
	cr_assert_eq(t.st.rx_held_peak, 128, "one NIC buffer per response, held until the drive wrote them");
	assert_all_back("after the write");
	read_back(io, 0, 0, 131072);

	/* a short write, not a whole number of path-MTU packets */
	fill(0x20000, 4096 + 512, 7);
	s = rw_sqe(NVME_CMD_WRITE, 300, 9);
	sgl_keyed(&s, H_DATA + 0x20000, 4096 + 512, false);
	cr_assert_eq(host_cmd(io, &s, NULL, 0).status, 0);
	cr_assert_eq(t.st.inplace_writes, 2);
	read_back(io, 300, 0x20000, 4096 + 512);
	cr_assert_eq(copy_total(), 0);
	cr_assert_eq(dram_total(), 0);
	assert_all_back("after the second write");
	host_disconnect(io);
	host_disconnect(a);
}

Test(nvmet_rdma, write_from_another_devices_memory_copied_when_refused)
{
	struct hq *a = &hqs[0], *io = &hqs[1];
	inplace_setup(a, io);
	/* the drive's own CMB is provider 2; the NIC receives into provider 1's */
	fcmb_provider = 2;
	fcmb_peer_refused = true; /* nvmet.peer_sgl off */
	fill(0, 65536, 5);
	struct nvme_sqe s = rw_sqe(NVME_CMD_WRITE, 0, 128);
	sgl_keyed(&s, H_DATA, 65536, true);
	cr_assert_eq(host_cmd(io, &s, NULL, 0).status, 0);
	cr_assert_eq(t.st.inplace_writes, 0);
	cr_assert_eq(t.st.copy_cmds[NVMET_TCP_DRAM_P2P_REFUSED], 1);
	cr_assert_eq(t.st.copy_bytes[NVMET_TCP_DRAM_P2P_REFUSED], 65536);
	cr_assert(t.copy_logged[NVMET_TCP_DRAM_P2P_REFUSED]);
	cr_assert_eq(dram_total(), 0, "copied into the drive's own device memory, not DRAM");
	assert_all_back("after the copied write");
	read_back(io, 0, 0, 65536);
	/* nvmet.peer_sgl on: the drive reads the other device's memory in place */
	fcmb_peer_refused = false;
	fill(0, 65536, 9);
	s = rw_sqe(NVME_CMD_WRITE, 128, 128);
	sgl_keyed(&s, H_DATA, 65536, true);
	cr_assert_eq(host_cmd(io, &s, NULL, 0).status, 0);
	cr_assert_eq(t.st.inplace_writes, 1);
	cr_assert_eq(t.st.copy_cmds[NVMET_TCP_DRAM_P2P_REFUSED], 1);
	read_back(io, 128, 0, 65536);
	assert_all_back("after the write in place");
	host_disconnect(io);
	host_disconnect(a);
}

static bool responses_in(void)
{
	return target_idle();
}

Test(nvmet_rdma, nic_buffer_budget_bounds_held_writes)
{
	struct hq *a = &hqs[0], *io = &hqs[1];
	struct roce_wc wc[16];
	unsigned got = 0;
	inplace_setup(a, io);
	/* three 128 KiB writes at once: the budget (a quarter of the NIC's buffers, 128 here)
	 * holds one at a time, the others wait for it and still go in place */
	for (unsigned k = 0; k < 3; k++) {
		struct nvme_sqe s = rw_sqe(NVME_CMD_WRITE, 256 * k, 256);
		fill(0x20000 * k, 131072, (uint8_t)(11 + k));
		sgl_keyed(&s, H_DATA + 0x20000 * k, 131072, false);
		s.cid = le16_make((uint16_t)(100 + k));
		memcpy(hmem + H_CAPS + 0x1000 * k, &s, 64);
		struct roce_send_wr w = { .wr_id = 1, .opcode = ROCE_WR_SEND, .send_flags = ROCE_SEND_SIGNALED, .num_sge = 1 };
		w.sg_list[0] = (struct roce_sge){ IOVA + H_CAPS + 0x1000 * k, 64, roce_mr_lkey(mr) };
		cr_assert_eq(roce_post_send(io->qp, &w), 0);
	}
	pump(responses_in);
	int n = roce_poll_cq(cq, 16, wc);
	for (int i = 0; i < n; i++) {
		cr_assert_eq(wc[i].status, ROCE_WC_SUCCESS);
		if (wc[i].opcode != ROCE_WC_RECV)
			continue;
		struct nvme_cqe c;
		memcpy(&c, hmem + H_RSP + (wc[i].wr_id - 1000) * 16, 16);
		cr_assert_eq((le16_get(c.status) >> 1) & 0x7ff, 0);
		post_rsp_recv(io, (unsigned)(wc[i].wr_id - 1000));
		got++;
	}
	cr_assert_eq(got, 3);
	cr_assert_eq(t.st.inplace_writes, 3);
	cr_assert_geq(t.st.rx_waits, 1, "a write waited for the budget");
	cr_assert_leq(t.st.rx_held_peak, FAKE_DATA_BUFS / NVMET_RDMA_RX_HOLD_DIV);
	cr_assert_eq(copy_total(), 0);
	assert_all_back("after three writes");
	for (unsigned k = 0; k < 3; k++)
		read_back(io, 256 * k, 0x20000 * k, 131072);
	host_disconnect(io);
	host_disconnect(a);
}

/* Let the first 40 RDMA READ responses through, then drop every one (the rest as it likes). */
static unsigned resps_seen;
static bool drop_all_later;
static int cut_read_responses(unsigned n, const struct roce_pkt *p)
{
	(void)n;
	if (drop_all_later && resps_seen >= 40)
		return 1;
	if (!(p->flags & ROCE_F_READ_RESP))
		return 0;
	return ++resps_seen > 40;
}

static bool forty_held(void)
{
	return t.st.rx_held >= 40;
}

/* A 128 KiB write on io whose RDMA READ stops after 40 responses: 40 NIC buffers held. */
static void write_cut_short(struct hq *io)
{
	resps_seen = 0;
	policy = cut_read_responses;
	fill(0, 131072, 13);
	struct nvme_sqe s = rw_sqe(NVME_CMD_WRITE, 0, 256);
	sgl_keyed(&s, H_DATA, 131072, true);
	s.cid = le16_make(77);
	memcpy(hmem + H_CAPS, &s, 64);
	struct roce_send_wr w = { .wr_id = 1, .opcode = ROCE_WR_SEND, .send_flags = ROCE_SEND_SIGNALED, .num_sge = 1 };
	w.sg_list[0] = (struct roce_sge){ IOVA + H_CAPS, 64, roce_mr_lkey(mr) };
	cr_assert_eq(roce_post_send(io->qp, &w), 0);
	pump(forty_held);
	cr_assert_eq(t.st.rx_held, 40);
	cr_assert_eq(fnd.data_out, 40, "the NIC lent exactly the held buffers");
}

Test(nvmet_rdma, held_nic_buffers_back_on_disconnect)
{
	struct hq *a = &hqs[0], *io = &hqs[1];
	inplace_setup(a, io);
	write_cut_short(io);
	host_disconnect(io);
	for (int i = 0; i < 4; i++)
		nvmet_rdma_poll(&t, 64);
	cr_assert_null(target_queue(1), "the queue went");
	assert_all_back("after the host's DREQ mid-READ");
	cr_assert_eq(t.st.inplace_writes, 0);
	policy = pass_all;
	host_disconnect(a);
}

static bool queue_gone(void)
{
	return target_queue(1) == NULL;
}

Test(nvmet_rdma, held_nic_buffers_back_on_qp_error)
{
	struct hq *a = &hqs[0], *io = &hqs[1];
	inplace_setup(a, io);
	write_cut_short(io);
	/* the READ's retries are lost too: retry exhaustion, the WR fails, the queue closes */
	pump(queue_gone);
	cr_assert_geq(t.st.wc_errors, 1);
	assert_all_back("after the READ failed");
	policy = pass_all;
	host_disconnect(a);
}

Test(nvmet_rdma, held_nic_buffers_back_on_keep_alive_expiry)
{
	struct hq *a = &hqs[0], *io = &hqs[1];
	fcmb_reset();
	nvmet_rdma_set_placement(&t, &fcmb_ops, true);
	uint16_t cntlid = admin_up(a, VOL, 2000);
	host_connect(io, 1, 64);
	cr_assert_eq(connect_q(io, 1, cntlid, HOST, VOL, 0).status, 0);
	/* the READ's retransmit timer (4.096 us * 2^20 = 4.3 s) outlasts the 2 s KATO */
	target_queue(1)->qp->attr.timeout = 20;
	write_cut_short(io);
	cr_assert_eq(t.st.wc_errors, 0);
	/* the host goes silent: keep-alive expiry kills the controller, its queues close */
	drop_all_later = true;
	for (int i = 0; i < 60 && target_queue(1); i++) {
		advance(100 * NSEC_PER_MSEC);
		nvmet_rdma_poll(&t, 64);
		roce_net_poll(&rn, 32);
		unsigned count = 0;
		relay_nmads = 0;
		relay_collect(0, &count);
	}
	drop_all_later = false;
	cr_assert_geq(t.st.kills, 1, "kills %llu closed %llu wc errors %llu", (unsigned long long)t.st.kills,
		      (unsigned long long)t.st.closed, (unsigned long long)t.st.wc_errors);
	cr_assert_eq(t.st.wc_errors, 0, "closed by the keep-alive expiry, not by the READ failing");
	run_timers();
	for (int i = 0; i < 4; i++)
		nvmet_rdma_poll(&t, 64);
	cr_assert_eq(nvmet_rdma_queue_count(&t), 0);
	assert_all_back("after keep-alive expiry");
	policy = pass_all;
}

Test(nvmet_rdma, in_capsule_data_left_in_nic_buffers)
{
	struct hq *a = &hqs[0], *io = &hqs[1];
	static uint8_t blk[4096];
	inplace_setup(a, io);
	struct nvmet_rdma_queue *rq = target_queue(1);
	cr_assert_not_null(rq);
	for (unsigned i = 0; i < sizeof(blk); i++)
		blk[i] = (uint8_t)(i * 5 + 3);

	/* 4 KiB in the capsule: the SEND's 5 packets stay in the NIC's buffers, the NVMe Write
	 * gathers them there; only the 64-byte command is copied into host DRAM */
	dma_counters_reset();
	struct nvme_sqe s = rw_sqe(NVME_CMD_WRITE, 40, 8);
	s.dptr.sgl1.len = le32_make(sizeof(blk));
	s.dptr.sgl1.id = 0x01;
	cr_assert_eq(host_cmd(io, &s, blk, sizeof(blk)).status, 0);
	uint64_t host_cpu = dma_counters()->cpu_bytes[MEM_CLASS_HOST];
	cr_assert_eq(t.st.inline_writes, 1);
	cr_assert_eq(t.st.inline_inplace, 1);
	cr_assert_eq(t.st.inline_inplace_bytes, 4096);
	cr_assert_eq(t.st.capsule_copied, 0);
	cr_assert_eq(rq->qp->resp.rx_frags, 5, "the capsule's 5 packets handed over");
	/* host DRAM the CPU touched for it: the command, the host side's own buffers (the test's
	 * host is on the same device: its 4 KiB read for the SEND) and headers, not the data again */
	cr_assert_lt(host_cpu, 4096 + 2048, "%llu B of host DRAM touched by the CPU", (unsigned long long)host_cpu);
	assert_all_back("after the in-capsule write");
	memset(hmem + H_DATA + 0x80000, 0, 4096);
	s = rw_sqe(NVME_CMD_READ, 40, 8);
	sgl_keyed(&s, H_DATA + 0x80000, 4096, false);
	cr_assert_eq(host_cmd(io, &s, NULL, 0).status, 0);
	cr_assert_eq(memcmp(hmem + H_DATA + 0x80000, blk, 4096), 0);

	/* a command without data is not held: its 64 bytes are copied, the buffer goes back */
	uint64_t frags = rq->qp->resp.rx_frags;
	struct nvme_sqe f = rw_sqe(NVME_CMD_FLUSH, 0, 1);
	cr_assert_eq(host_cmd(io, &f, NULL, 0).status, 0);
	cr_assert_eq(rq->qp->resp.rx_frags, frags);

	/* the NIC's memory is another device's and peer_sgl is off: copied into the capsule's
	 * DRAM buffer, counted */
	fcmb_provider = 2;
	fcmb_peer_refused = true;
	blk[0] ^= 0xff;
	s = rw_sqe(NVME_CMD_WRITE, 48, 8);
	s.dptr.sgl1.len = le32_make(sizeof(blk));
	s.dptr.sgl1.id = 0x01;
	cr_assert_eq(host_cmd(io, &s, blk, sizeof(blk)).status, 0);
	cr_assert_eq(t.st.inline_inplace, 1);
	cr_assert_eq(t.st.capsule_copied, 1);
	cr_assert_eq(t.st.copy_cmds[NVMET_TCP_DRAM_P2P_REFUSED], 1);
	memset(hmem + H_DATA + 0x80000, 0, 4096);
	s = rw_sqe(NVME_CMD_READ, 48, 8);
	sgl_keyed(&s, H_DATA + 0x80000, 4096, false);
	cr_assert_eq(host_cmd(io, &s, NULL, 0).status, 0);
	cr_assert_eq(memcmp(hmem + H_DATA + 0x80000, blk, 4096), 0);

	/* nvmet.p2p = off: the responder copies into DRAM as it lands, nothing is held */
	fcmb_peer_refused = false;
	nvmet_rdma_set_placement(&t, &fcmb_ops, false);
	frags = rq->qp->resp.rx_frags;
	s = rw_sqe(NVME_CMD_WRITE, 56, 8);
	s.dptr.sgl1.len = le32_make(sizeof(blk));
	s.dptr.sgl1.id = 0x01;
	cr_assert_eq(host_cmd(io, &s, blk, sizeof(blk)).status, 0);
	cr_assert_eq(rq->qp->resp.rx_frags, frags);
	cr_assert_eq(t.st.capsule_copied, 1);
	assert_all_back("after the copied in-capsule writes");
	host_disconnect(io);
	host_disconnect(a);
}

/* Let the first 2 packets of every SEND of 4160 bytes through, then drop everything. */
static unsigned send_pkts;
static int cut_capsules(unsigned n, const struct roce_pkt *p)
{
	(void)n;
	if (send_pkts >= 2)
		return 1;
	if ((p->flags & ROCE_F_SEND) && (p->flags & ROCE_F_REQUEST) && p->payload_len == 1024)
		send_pkts++;
	return 0;
}

static bool capsule_half_held(void)
{
	return t.rx_capsule >= 2;
}

Test(nvmet_rdma, held_capsule_buffers_back_on_disconnect)
{
	struct hq *a = &hqs[0], *io = &hqs[1];
	static uint8_t blk[4096];
	inplace_setup(a, io);
	/* half a capsule arrives, then the wire goes dead and the host disconnects */
	send_pkts = 0;
	policy = cut_capsules;
	struct nvme_sqe s = rw_sqe(NVME_CMD_WRITE, 0, 8);
	s.dptr.sgl1.len = le32_make(sizeof(blk));
	s.dptr.sgl1.id = 0x01;
	s.cid = le16_make(5);
	memcpy(hmem + H_CAPS, &s, 64);
	memcpy(hmem + H_CAPS + 64, blk, sizeof(blk));
	struct roce_send_wr w = { .wr_id = 1, .opcode = ROCE_WR_SEND, .send_flags = ROCE_SEND_SIGNALED, .num_sge = 1 };
	w.sg_list[0] = (struct roce_sge){ IOVA + H_CAPS, 64 + sizeof(blk), roce_mr_lkey(mr) };
	cr_assert_eq(roce_post_send(io->qp, &w), 0);
	pump(capsule_half_held);
	cr_assert_eq(t.rx_capsule, 2, "two of the capsule's packets held");
	cr_assert_eq(fnd.data_out, 2);
	policy = pass_all;
	host_disconnect(io);
	for (int i = 0; i < 4; i++)
		nvmet_rdma_poll(&t, 64);
	assert_all_back("after a disconnect with half a capsule held");
	host_disconnect(a);
}

/* A transmit ring that completes late (a real NIC: descriptor done after the frame left, while
 * QEMU's e1000e sends in the doorbell write): the read's device buffer the RDMA WRITE's frames
 * are gathered from stays allocated until the NIC is done with them, past the command. */
Test(nvmet_rdma, read_buffer_held_until_the_nic_is_done_with_its_frames)
{
	struct hq *a = &hqs[0], *io = &hqs[1];
	inplace_setup(a, io);
	fnd.dev.features |= NETDEV_F_TX_GATHER_DEV;
	fnd.dev.tx_dev_frags = 1;
	fnd.dev.tx_dev_bytes = 4096;
	struct nvmet_rdma_queue *rq = target_queue(1);
	fill(0, 65536, 17);
	struct nvme_sqe s = rw_sqe(NVME_CMD_WRITE, 0, 128);
	sgl_keyed(&s, H_DATA, 65536, true);
	cr_assert_eq(host_cmd(io, &s, NULL, 0).status, 0);
	cr_assert_eq(fcmb_in_use, 0);

	fnd.tx_late = true;
	read_back(io, 0, 0, 65536);
	cr_assert_geq(rn.st.tx_held, 64, "every WRITE packet gathered from device memory held it");
	cr_assert_eq(t.st.tx_deferred, 1, "the command completed while the NIC still held its frames");
	cr_assert_gt(rq->tx_refs, 0);
	cr_assert_gt(fcmb_in_use, 0, "the read's device buffer is not freed under the NIC");
	cr_assert_eq(rq->tx_held, 1);
	fake_netdev_tx_complete(&fnd);
	cr_assert_eq(rq->tx_refs, 0);
	target_poll();
	cr_assert_eq(rq->tx_held, 0);
	cr_assert_eq(fcmb_in_use, 0, "freed once the NIC is done");

	/* the host goes while frames are still in the ring: the queue waits for them */
	read_back(io, 0, 0, 65536);
	cr_assert_eq(t.st.tx_deferred, 2);
	host_disconnect(io);
	for (int i = 0; i < 4; i++)
		target_poll();
	cr_assert_not_null(target_queue(1), "the closed queue is not freed under the NIC");
	cr_assert_gt(fcmb_in_use, 0);
	fake_netdev_tx_complete(&fnd);
	fnd.tx_late = false;
	for (int i = 0; i < 4; i++)
		target_poll();
	cr_assert_null(target_queue(1));
	assert_all_back("after the late transmit completions");
	host_disconnect(a);
	fake_netdev_tx_complete(&fnd);
}

/* Post n capsules on h at once (sqes[k] in capsule slot k), and receives for responses up
 * to slot recvs - 1 beyond the 8 host_connect posted. */
static void post_capsules(struct hq *h, struct nvme_sqe *sqes, unsigned n, unsigned recvs)
{
	for (unsigned k = 8; k < recvs; k++)
		post_rsp_recv(h, k);
	for (unsigned k = 0; k < n; k++) {
		sqes[k].cid = le16_make((uint16_t)(200 + k));
		memcpy(hmem + H_CAPS + 0x100 * k, &sqes[k], 64);
		struct roce_send_wr w = { .wr_id = 1, .opcode = ROCE_WR_SEND, .send_flags = ROCE_SEND_SIGNALED, .num_sge = 1 };
		w.sg_list[0] = (struct roce_sge){ IOVA + H_CAPS + 0x100 * k, 64, roce_mr_lkey(mr) };
		cr_assert_eq(roce_post_send(h->qp, &w), 0);
	}
}

/* Poll the host's CQ: every WR succeeded; returns the responses seen (each status 0). */
static unsigned host_responses(void)
{
	struct roce_wc wc[16];
	unsigned got = 0;
	int n;
	while ((n = roce_poll_cq(cq, 16, wc)) > 0)
		for (int i = 0; i < n; i++) {
			cr_assert_eq(wc[i].status, ROCE_WC_SUCCESS, "host WR %llu status %d",
				     (unsigned long long)wc[i].wr_id, wc[i].status);
			if (wc[i].opcode != ROCE_WC_RECV)
				continue;
			struct nvme_cqe c;
			memcpy(&c, hmem + H_RSP + (wc[i].wr_id - 1000) * 16, 16);
			cr_assert_eq((le16_get(c.status) >> 1) & 0x7ff, 0, "cid %u status %#x", le16_get(c.cid),
				     le16_get(c.status));
			got++;
		}
	return got;
}

/* More 128 KiB reads at once than the host's share of large DRAM buffers (12) and one more:
 * the buffers the first 12 give back go to the waiting ones in order, whose responses (the
 * RAM disk completes at once) then wait for send room; the one still waiting for a buffer
 * must not keep them from going, or nobody ever gives a buffer back. */
Test(nvmet_rdma, responses_never_wait_behind_a_command_waiting_for_a_buffer)
{
	struct hq *a = &hqs[0], *io = &hqs[1];
	struct nvme_sqe s[25];
	const unsigned n = 2 * (NVMET_RDMA_LARGE_BUFS / NVMET_RDMA_HOST_SHARE) + 1;
	cr_assert_leq(n, 25);
	ctrl_up(a, io);
	for (unsigned k = 0; k < n; k++) {
		s[k] = rw_sqe(NVME_CMD_READ, 0, 256);
		sgl_keyed(&s[k], H_DATA, 131072, false);
	}
	post_capsules(io, s, n, n);
	pump(responses_in);
	cr_assert_eq(host_responses(), n, "every read answered");
	cr_assert_geq(t.st.buf_waits, n - NVMET_RDMA_LARGE_BUFS / NVMET_RDMA_HOST_SHARE);
	assert_all_back("after the reads");
	host_disconnect(io);
	host_disconnect(a);
}

static unsigned rnr_naks;
static int count_rnr_naks(unsigned n, const struct roce_pkt *p)
{
	(void)n;
	if (!(p->flags & ROCE_F_REQUEST) && !(p->flags & ROCE_F_READ_RESP) &&
	    (p->syndrome & AETH_SYNDROME_TYPE_MASK) == AETH_TYPE_RNR_NAK)
		rnr_naks++;
	return 0;
}

/* The host stops taking our responses: it has 8 receives posted and never posts another, so
 * the ninth response's SEND is answered by RNR NAKs for ever (the REQ asked for rnr_retry 7,
 * infinite, as Linux's does). The queue must not hold its rsps, buffers and send room for
 * ever: with no send completion for NVMET_RDMA_SEND_STALL_MS it closes, everything back. */
Test(nvmet_rdma, a_host_that_never_takes_a_response_is_closed)
{
	struct hq *a = &hqs[0], *io = &hqs[1];
	struct nvme_sqe s[9];
	ctrl_up(a, io);
	for (unsigned k = 0; k < 9; k++) {
		s[k] = rw_sqe(NVME_CMD_READ, 0, 8);
		sgl_keyed(&s[k], H_DATA, 4096, false);
	}
	uint64_t t0 = clock_now_ns();
	rnr_naks = 0;
	policy = count_rnr_naks;
	post_capsules(io, s, 9, 8);
	pump(queue_gone);
	cr_assert_geq(clock_now_ns() - t0, (uint64_t)NVMET_RDMA_SEND_STALL_MS * NSEC_PER_MSEC, "not before the timeout");
	cr_assert_eq(t.st.sq_stalls, 1);
	cr_assert_geq(rnr_naks, 100, "the host's RNR NAKs went on until then");
	policy = pass_all;
	assert_all_back("after the stalled queue closed");
	host_qp_free(io);
	host_disconnect(a);
}

static uint64_t sends0[4];            /* responses each I/O queue sent before (its Connect's) */
static uint64_t others_when_third;     /* queues 1 and 2's responses when queue 3's went */
static void poll_watching_third(void)
{
	target_poll();
	if (others_when_third == UINT64_MAX && target_queue(3)->sends > sends0[3])
		others_when_third = target_queue(1)->sends - sends0[1] + target_queue(2)->sends - sends0[2];
}

/* Three hosts (three I/O queues, their target queues' addresses made three): two keep
 * every large DRAM buffer their share allows busy with 40 reads of 16 KiB each, then the
 * third sends one. Two halves are the whole pool: the third must not wait until the others'
 * backlogs are gone. Its read is answered while they still have most of theirs to go. */
Test(nvmet_rdma, a_third_host_gets_buffers_while_two_keep_theirs_busy)
{
	struct hq *a = &hqs[0], *h[3] = { &hqs[1], &hqs[2], &hqs[3] };
	struct nvme_sqe s[40];
	uint16_t cntlid = admin_up(a, VOL, 0);
	for (unsigned q = 0; q < 3; q++) {
		host_connect(h[q], (uint16_t)(q + 1), 64);
		cr_assert_eq(connect_q(h[q], (uint16_t)(q + 1), cntlid, HOST, VOL, 0).status, 0);
		target_queue((uint16_t)(q + 1))->peer = PEER + 1 + q;
	}
	for (unsigned k = 0; k < 40; k++) {
		s[k] = rw_sqe(NVME_CMD_READ, 0, 32);
		sgl_keyed(&s[k], H_DATA, 16384, false); /* large class, 16 packets */
	}
	for (unsigned q = 1; q <= 3; q++)
		sends0[q] = target_queue((uint16_t)q)->sends;
	post_capsules(h[0], s, 40, 40);
	post_capsules(h[1], s, 40, 40);
	post_capsules(h[2], s, 1, 1);
	others_when_third = UINT64_MAX;
	relay_extra_poll = poll_watching_third;
	pump(responses_in);
	relay_extra_poll = target_poll;
	cr_assert_eq(target_queue(3)->sends - sends0[3], 1, "the third host's read answered");
	cr_assert_lt(others_when_third, 40, "... while the other two still had %llu of their 80 reads left",
		     (unsigned long long)(80 - others_when_third));
	cr_assert_eq(host_responses(), 81);
	assert_all_back("after the three hosts' reads");
	for (unsigned q = 0; q < 3; q++)
		host_disconnect(h[q]);
	host_disconnect(a);
}

static int drop_acks(unsigned n, const struct roce_pkt *p)
{
	(void)n;
	return !(p->flags & ROCE_F_REQUEST);
}

static bool read_response_posted(void)
{
	return target_queue(1)->sends > sends0[1];
}

/* The CQ overruns while a read's RDMA WRITE and SEND wait for the host's ACK: the queue
 * closes, and the flush completions that would have given the rsp back are lost with the
 * CQ. Freeing the queue must still give its data buffer back to the pool. */
Test(nvmet_rdma, buffers_back_when_the_cq_overran)
{
	struct hq *a = &hqs[0], *io = &hqs[1];
	ctrl_up(a, io);
	struct nvmet_rdma_queue *rq = target_queue(1);
	sends0[1] = rq->sends;
	struct nvme_sqe s = rw_sqe(NVME_CMD_READ, 0, 256);
	sgl_keyed(&s, H_DATA, 131072, false);
	policy = drop_acks;
	post_capsules(io, &s, 1, 1);
	pump(read_response_posted);
	cr_assert_eq(rq->sq_used, 2, "the WRITE and the SEND wait for their ACK");
	cr_assert_eq(t.pool_used[1], 1);
	rq->cq->overflow = true;
	for (int i = 0; i < 4; i++)
		target_poll();
	cr_assert_null(target_queue(1), "the queue went");
	assert_all_back("after the CQ overran");
	unsigned head = 0, count = 0;
	relay_collect(head, &count); /* our DREQ for the queue: the host QP goes without answering */
	policy = pass_all;
	host_qp_free(io);
	host_disconnect(a);
}
