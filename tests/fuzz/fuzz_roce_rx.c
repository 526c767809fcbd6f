// sources: drivers/nic/netdev.c net/net.c lib/ipv4_text.c net/arp.c net/ipv4.c net/udp.c net/tcp/tcp.c net/tcp/tcp_in.c net/tcp/tcp_admit.c net/tcp/tcp_pools.c net/tcp/tcp_isn.c tests/unit/net/fake_entropy.c net/tcp/tcp_hdr.c net/tcp/tcp_out.c net/tcp/tcp_budget.c net/tcp/tcp_sack.c net/tcp/tcp_service.c mm/pool.c mm/dma.c lib/timer.c lib/log.c lib/clock.c lib/crc32.c tests/unit/net/fake_netdev.c drivers/rdma/roce_wire.c drivers/rdma/roce_icrc.c drivers/rdma/roce_mad.c drivers/rdma/roce_net.c drivers/rdma/roce_resp.c drivers/rdma/roce_dev.c drivers/rdma/roce_mr.c drivers/rdma/roce_cq.c drivers/rdma/roce_qp.c
/*
 * libFuzzer harness: the RoCE v2 receive path (UDP 4791 -> parse -> ICRC -> QP 1 -> MAD
 * -> CM) through the fake e1000e, on a fresh stack and device per input.
 * Input: byte 0 = mode (bit 0: NIC split on, so the BTH onwards is a payload fragment;
 * bit 1: write the correct ICRC into the last 4 bytes before sending, so mutated headers
 * and MADs get past the ICRC into the GSI/CM code), then one or more records
 * [len hi][len lo][UDP payload bytes]. Invariants: no crash/UB/leak; every packet is
 * counted exactly once as good or under one parse reason; every answer is a REJ with a
 * valid ICRC; every pool and receive buffer comes back.
 */
#include <assert.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "lib/clock.h"
#include "lib/timer.h"
#include "mm/pool.h"
#include "net/net_internal.h"
#include "drivers/rdma/roce_icrc.h"
#include "drivers/rdma/roce_net.h"
#include "tests/unit/net/fake_netdev.h"

static struct fake_netdev fnd;
static uint64_t now_ns;
static uint64_t fake_now(void) { return now_ns; }
static uint8_t frame[FAKE_FRAME_MAX];

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
		assert(p.opcode == ROCE_UD_SEND_ONLY && p.payload_len == ROCE_MAD_LEN);
		assert(roce_icrc_get(pkt + len - 4) == roce_icrc_packet(&ip, &uh, pkt, len));
	}
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
	fnd.ntx = 0;

	while (size - off >= 2) {
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
	}
	uint64_t counted = rn.st.rx_no_ip_hdr;
	for (int i = 0; i <= ROCE_PARSE_PAD; i++)
		counted += rn.st.rx_parse[i];
	assert(rn.st.rx_pkts == sent && counted == sent);
	assert(rn.st.cm_rej_tx <= rn.st.cm_req);

	roce_net_stop(&rn);
	assert(roce_dev_destroy(dev) == 0);
	assert(net_shutdown() == 0);
	assert(mm_pool_total_in_use() == 0);
	assert(fake_netdev_teardown(&fnd) == 0);
	return 0;
}
