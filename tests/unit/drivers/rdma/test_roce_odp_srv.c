// sources: drivers/nic/netdev.c net/net.c lib/ipv4_text.c net/arp.c net/ipv4.c net/udp.c net/tcp/tcp.c net/tcp/tcp_in.c net/tcp/tcp_admit.c net/tcp/tcp_pools.c net/tcp/tcp_isn.c tests/unit/net/fake_entropy.c net/tcp/tcp_hdr.c net/tcp/tcp_out.c net/tcp/tcp_budget.c net/tcp/tcp_sack.c net/tcp/tcp_service.c mm/pool.c mm/dma.c lib/timer.c lib/log.c lib/crc32.c tests/unit/net/fake_netdev.c drivers/rdma/roce_wire.c drivers/rdma/roce_icrc.c drivers/rdma/roce_mad.c drivers/rdma/roce_cm.c drivers/rdma/roce_net.c drivers/rdma/roce_resp.c drivers/rdma/roce_resp_tx.c drivers/rdma/roce_dev.c drivers/rdma/roce_mr.c drivers/rdma/roce_odp.c drivers/rdma/roce_odp_mr.c drivers/rdma/roce_cq.c drivers/rdma/roce_qp.c drivers/rdma/roce_req.c drivers/rdma/roce_comp.c drivers/rdma/roce_app.c drivers/rdma/roce_odp_srv.c tests/unit/drivers/rdma/fake_odp_store.c lib/shutdown.c
/*
 * The ODP service over its rdma_cm listener (port 7180) with the fake store in place of the
 * NVMe namespace: a client connects, learns the region from the REP's private data and
 * WRITEs to it through a fault; a session whose responder ePSN does not advance for
 * ROCE_ODP_IDLE_NS is disconnected (a DREQ goes out) and its QP and CQ freed, while one that
 * keeps making progress stays; the shutdown hook (power-off, reboot) writes the dirty pages
 * back and flushes the store. Pools back to zero after each test.
 */
#include "tests/unit/net/net_test.h"
#include "drivers/rdma/roce_cm.h"
#include "drivers/rdma/roce_internal.h"
#include "drivers/rdma/roce_odp_srv.h"
#include "lib/shutdown.h"
#include "tests/unit/drivers/rdma/fake_odp_store.h"
#include "tests/unit/drivers/rdma/roce_relay.h"

#define REGION (16u * ROCE_ODP_PAGE_SIZE)
#define IOVA 0x40000000ull

static struct roce_dev *dev;
static struct roce_odp_srv sv;
static struct fake_store fs;
static struct roce_pd *pd;
static struct roce_cq *cq;
static struct roce_qp *cqp;
static struct roce_mr *mr;
static uint8_t mem[ROCE_ODP_PAGE_SIZE];

/* The NVMe store of the service, replaced by the fake one. */
int roce_odp_nvme_open(struct roce_odp_nvme *s, unsigned ctrl_index, uint32_t nsid, uint64_t offset, uint64_t length,
		       struct roce_odp_store *store)
{
	(void)s;
	(void)ctrl_index;
	(void)nsid;
	(void)offset;
	cr_assert_leq(length, fs.size);
	*store = fs.store;
	return 0;
}

static bool stall;  /* the drive answers nothing (its poll does not complete commands) */

int roce_odp_nvme_poll(struct roce_odp_nvme *s)
{
	(void)s;
	if (stall) {
		advance(NSEC_PER_SEC);  /* time passes while we wait */
		return 0;
	}
	return (int)fake_store_complete(&fs, 0);
}

/* The loop's share of the service: its poller, the store's completions (an instant drive). */
static void srv_poll(void)
{
	fake_store_complete(&fs, 0);
	roce_odp_srv_poll(&sv, clock_now_ns());
}

static void setup(void)
{
	char *reg[] = { "odp", "reg", "nvme2n1", "64K" };
	net_test_start(NETDEV_F_RX_SPLIT);
	fake_store_init(&fs, REGION);
	cr_assert_eq(roce_dev_init(&dev, "rxe_odp"), 0);
	roce_dev_set_addr(dev, US, 1500);
	cr_assert_eq(roce_net_start(&rn, dev), 0);
	cr_assert_eq(roce_odp_srv_start(&sv, &rn), 0);
	cr_assert_eq(roce_odp_srv_command(&sv, 4, reg), 0);
	cr_assert_eq(roce_alloc_pd(dev, &pd), 0);
	cr_assert_eq(roce_create_cq(dev, 16, NULL, NULL, &cq), 0);
	cqp = relay_rc_qp(pd, cq, 4);
	memset(mem, 0x5A, sizeof(mem));
	cr_assert_eq(roce_reg_mr(pd, IOVA, sizeof(mem), dma_addr_host(mem), ROCE_ACCESS_ALL, &mr), 0);
	relay_extra_poll = srv_poll;
	relay_nmads = 0;
	policy = pass_all;
}

static void teardown(void)
{
	char *dereg[] = { "odp", "dereg" };
	relay_qp_destroy(cqp, cq);
	roce_dereg_mr(mr);
	roce_destroy_cq(cq);
	roce_dealloc_pd(pd);
	cr_assert_eq(roce_odp_srv_command(&sv, 2, dereg), 0);
	fake_store_complete(&fs, 0);
	roce_odp_poll(sv.odp, clock_now_ns());
	cr_assert_eq(roce_odp_fini(sv.odp), 0);
	roce_dealloc_pd(sv.pd);
	roce_net_stop(&rn);
	if (roce_dev_destroy(dev))
		abort();
	fake_store_fini(&fs);
	net_teardown();
}

TestSuite(roce_odp_srv, .init = setup, .fini = teardown);

/* The peer asks for us again (its ARP entry would expire after a minute of fake time). */
static void peer_arp(void)
{
	size_t n = fake_build_arp(frame, 1, fake_peer_mac, PEER, (const uint8_t[6]){ 0 }, US,
				  (const uint8_t[6]){ 0xff, 0xff, 0xff, 0xff, 0xff, 0xff });
	cr_assert_eq(fake_netdev_inject(&fnd, frame, n), 0);
	fake_netdev_clear(&fnd);
}

static bool client_idle(void)
{
	return !cqp->sq.count;
}

/* The client's RDMA WRITE of one page to the region's page pg; returns its completion status. */
static enum roce_wc_status write_page(uint64_t addr, uint32_t rkey, unsigned pg)
{
	struct roce_send_wr w = { .wr_id = pg, .opcode = ROCE_WR_RDMA_WRITE, .send_flags = ROCE_SEND_SIGNALED,
				  .num_sge = 1, .sg_list = { { IOVA, ROCE_ODP_PAGE_SIZE, roce_mr_lkey(mr) } },
				  .remote_addr = addr + (uint64_t)pg * ROCE_ODP_PAGE_SIZE, .rkey = rkey };
	struct roce_wc wc;
	cr_assert_eq(roce_post_send(cqp, &w), 0);
	pump(client_idle);
	cr_assert_eq(roce_poll_cq(cq, 1, &wc), 1);
	return wc.status;
}

/* Connect; the region's address and rkey from the REP. */
static void odp_connect(uint32_t comm_id, uint64_t *addr, uint32_t *rkey)
{
	uint8_t priv[CM_REP_PRIVATE_LEN];
	struct roce_odp_rep_priv p;
	uint32_t sid;
	cr_assert_eq(relay_cm_connect(cqp, ROCE_CM_PS_TCP_SID(ROCE_ODP_PORT), comm_id, &sid, priv), CM_ATTR_REP);
	memcpy(&p, priv, sizeof(p));
	cr_assert_eq(memcmp(p.magic, ROCE_ODP_MAGIC, 4), 0);
	cr_assert_eq(be64_get(p.length), REGION);
	*addr = be64_get(p.addr);
	*rkey = be32_get(p.rkey);
	srv_poll();  /* the RTU */
	cr_assert(sv.s[0].used);
}

Test(roce_odp_srv, a_session_that_makes_progress_stays_and_an_idle_one_is_closed)
{
	uint64_t addr;
	uint32_t rkey;
	unsigned qps = dev->qp_pool.in_use;

	odp_connect(0x0D01, &addr, &rkey);
	cr_assert_eq(dev->qp_pool.in_use, qps + 1);
	cr_assert_eq(write_page(addr, rkey, 3), ROCE_WC_SUCCESS, "a WRITE through a fault");
	cr_assert_geq(roce_odp_stats(sv.odp)->rnr_naks, 1);
	/* progress every 20 s keeps it: 60 s in all, more than the limit */
	for (unsigned i = 0; i < 3; i++) {
		advance(20 * NSEC_PER_SEC);
		srv_poll();
		cr_assert(sv.s[0].used, "closed although it made progress");
		peer_arp();
		cr_assert_eq(write_page(addr, rkey, i), ROCE_WC_SUCCESS);
	}
	/* a poll whose time was read before the last progress is not idleness */
	roce_odp_srv_poll(&sv, clock_now_ns() - 1000);
	cr_assert(sv.s[0].used);
	advance(ROCE_ODP_IDLE_NS - NSEC_PER_SEC);
	srv_poll();
	cr_assert(sv.s[0].used, "not yet idle");
	cr_assert_eq(sv.idle_closed, 0);
	peer_arp();
	relay_nmads = 0;
	advance(2 * NSEC_PER_SEC);
	srv_poll();
	cr_assert_not(sv.s[0].used, "idle past the limit");
	cr_assert_eq(sv.idle_closed, 1);
	cr_assert_eq(dev->qp_pool.in_use, qps, "its QP freed");
	cr_assert_eq(relay_sent_mads(), 1);
	cr_assert_eq(relay_mad_attr(0), CM_ATTR_DREQ, "the peer is told");
}

Test(roce_odp_srv, a_session_that_never_sends_is_closed_too)
{
	uint64_t addr;
	uint32_t rkey;
	odp_connect(0x0D01, &addr, &rkey);
	advance(ROCE_ODP_IDLE_NS + NSEC_PER_SEC);
	srv_poll();
	cr_assert_not(sv.s[0].used);
	cr_assert_eq(sv.idle_closed, 1);
	cr_assert_eq(relay_sent_mads(), 1);
	cr_assert_eq(relay_mad_attr(0), CM_ATTR_DREQ);
	/* a new session is accepted afterwards */
	relay_qp_destroy(cqp, cq);
	cqp = relay_rc_qp(pd, cq, 4);
	odp_connect(0x0D02, &addr, &rkey);
	cr_assert_eq(write_page(addr, rkey, 0), ROCE_WC_SUCCESS);
}

Test(roce_odp_srv, poweroff_writes_the_dirty_pages_back_and_flushes_before_the_drives_go)
{
	uint64_t addr;
	uint32_t rkey;
	const uint8_t *page3 = fs.durable + 3 * ROCE_ODP_PAGE_SIZE;

	odp_connect(0x0D03, &addr, &rkey);
	cr_assert_eq(write_page(addr, rkey, 3), ROCE_WC_SUCCESS);
	cr_assert_eq(write_page(addr, rkey, 9), ROCE_WC_SUCCESS);
	cr_assert_eq(roce_odp_region_dirty(sv.reg), 2, "two pages written, nothing flushed");
	cr_assert_neq(page3[0], 0x5A);
	cr_assert_eq(fs.flushes, 0);
	cr_assert_eq(shutdown_run_hooks(SHUTDOWN_POWEROFF), 1);
	cr_assert_eq(roce_odp_region_dirty(sv.reg), 0);
	cr_assert_eq(fs.flushes, 1, "the store's Flush after the write-backs");
	for (unsigned i = 0; i < ROCE_ODP_PAGE_SIZE; i++) {
		cr_assert_eq(page3[i], 0x5A, "durable byte %u of page 3", i);
		cr_assert_eq(fs.durable[9 * ROCE_ODP_PAGE_SIZE + i], 0x5A, "durable byte %u of page 9", i);
	}
	cr_assert_eq(sv.shutdown_rc, 0);
}

Test(roce_odp_srv, the_shutdown_write_back_is_bounded_when_the_drive_never_answers)
{
	uint64_t addr;
	uint32_t rkey;
	odp_connect(0x0D04, &addr, &rkey);
	cr_assert_eq(write_page(addr, rkey, 1), ROCE_WC_SUCCESS);
	stall = true;
	cr_assert_eq(roce_odp_srv_shutdown(&sv), -ETIMEDOUT);
	stall = false;
}
