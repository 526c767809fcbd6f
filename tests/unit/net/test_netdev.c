// sources: drivers/nic/netdev.c net/net.c lib/ipv4_text.c net/arp.c net/ipv4.c net/udp.c net/tcp/tcp.c net/tcp/tcp_in.c net/tcp/tcp_isn.c net/tcp/tcp_pools.c net/tcp/tcp_admit.c tests/unit/net/fake_entropy.c net/tcp/tcp_hdr.c net/tcp/tcp_out.c net/tcp/tcp_budget.c net/tcp/tcp_sack.c net/tcp/tcp_service.c mm/pool.c mm/dma.c lib/timer.c lib/log.c tests/unit/net/fake_netdev.c
/*
 * The netdev interface: registration rules, MTU limits, link state, netbuf operations
 * across the host part and fragments, fragment split references, the counted accessor,
 * per-class byte counters, and TCP's MSS following a jumbo MTU.
 */
#include "tests/unit/net/net_test.h"

TestSuite(netdev, .init = net_setup, .fini = net_teardown);

static unsigned released[4];
static void rel(struct netdev_frag_owner *o, uint64_t token)
{
	(void)o;
	released[token]++;
}
static struct netdev_frag_owner owner = { "test", rel };
static uint8_t devmem[3][100];

static struct netbuf *three_part_buffer(void)
{
	struct netbuf *nb = netbuf_alloc(NETBUF_HEADROOM);
	memcpy(netbuf_put(nb, 10), "0123456789", 10);
	for (int i = 0; i < 3; i++) {
		memset(devmem[i], 'a' + i, sizeof(devmem[i]));
		struct netdev_frag f = { .addr = dma_addr_device((uint64_t)(uintptr_t)devmem[i]), .len = 100,
					 .token = (uint64_t)i, .owner = &owner };
		cr_assert_eq(netbuf_add_frag(nb, &f), 0);
	}
	return nb;
}

Test(netdev, register_rules)
{
	struct netdev d = { .name = "x", .mtu = 1400, .ops = fnd.dev.ops };
	cr_assert_eq(netdev_register(&d), -EINVAL, "MTU below 1500");
	d.mtu = 9001;
	cr_assert_eq(netdev_register(&d), -EINVAL, "MTU above 9000");
	cr_assert_eq(netdev_register(&fnd.dev), -EEXIST);
	cr_assert_eq(netdev_set_mtu(&fnd.dev, 9000), 0);
	cr_assert_eq(fnd.dev.mtu, 9000);
	cr_assert_eq(netdev_set_mtu(&fnd.dev, 9100), -EINVAL);
	cr_assert_eq(netdev_first(), &fnd.dev);
}

Test(netdev, link_down_refuses_tx)
{
	netdev_set_link(&fnd.dev, false);
	cr_assert_eq(icmp_send_echo(PEER, 1, 1, 8), -ENETDOWN);
	cr_assert_eq(fnd.dev.stats.tx_errors, 1);
	netdev_set_link(&fnd.dev, true);
	cr_assert_eq(icmp_send_echo(PEER, 1, 1, 8), 0);
}

Test(netdev, pull_trim_copy_across_fragments)
{
	struct netbuf *nb = three_part_buffer();
	uint8_t b[300];
	cr_assert_eq(netbuf_frag_len(nb), 300);
	cr_assert_eq(netbuf_copy_out(nb, 5, b, 10), 0);
	cr_assert_eq(memcmp(b, "56789aaaaa", 10), 0);
	cr_assert_eq(dma_counters()->cpu_bytes[MEM_CLASS_DEVICE], 5, "device bytes read are counted");
	cr_assert_eq(netbuf_copy_out(nb, 300, b, 11), -EINVAL, "past the end");
	cr_assert_eq(netbuf_pull(nb, 150), 0);
	cr_assert_eq(netbuf_host_len(nb), 0);
	cr_assert_eq(nb->nfrags, 2);
	cr_assert_eq(released[0], 1, "a fragment pulled away is released");
	cr_assert_eq(nb->frags[0].len, 60);
	netbuf_trim(nb, 30);
	cr_assert_eq(nb->nfrags, 1);
	cr_assert_eq(released[2], 1, "a fragment trimmed away is released");
	cr_assert_eq(netbuf_copy_out(nb, 0, b, 30), 0);
	cr_assert_eq(b[0], 'b');
	netbuf_free(nb);
	cr_assert_eq(released[1], 1);
	cr_assert_eq(netbuf_pull(nb = three_part_buffer(), 311), -EINVAL);
	netbuf_free(nb);
}

Test(netdev, split_references)
{
	struct netdev_frag f = { .addr = dma_addr_device(0x1000), .offset = 0x40, .len = 100, .token = 3, .owner = &owner };
	struct netdev_frag t1, t2;
	cr_assert_eq(netdev_frag_split(&f, 0, &t1), -EINVAL);
	cr_assert_eq(netdev_frag_split(&f, 100, &t1), -EINVAL);
	cr_assert_eq(netdev_frag_split(&f, 30, &t1), 0);
	cr_assert_eq(f.len, 30);
	cr_assert_eq(t1.len, 70);
	cr_assert_eq(t1.addr.bus, 0x1000 + 30);
	cr_assert_eq(t1.addr.cls, MEM_CLASS_DEVICE);
	cr_assert_eq(t1.offset, 0x40 + 30);
	cr_assert_eq(netdev_frag_split(&t1, 20, &t2), 0);
	netdev_frag_release(&f);
	netdev_frag_release(&t2);
	cr_assert_eq(released[3], 0, "still one part out");
	netdev_frag_release(&t1);
	cr_assert_eq(released[3], 1, "the buffer goes back once, after the last part");
	netdev_frag_release(&t1);
	cr_assert_eq(released[3], 1, "releasing twice is harmless");
}

Test(netdev, rx_tx_byte_counters_by_class)
{
	uint8_t payload[1000] = { 0 };
	struct udp_sock *u;
	cr_assert_eq(udp_bind(9999, NULL, NULL, &u), 0);
	uint64_t host0 = fnd.dev.stats.rx_bytes_host; /* the setup's ARP frame */
	size_t n = fake_build_udp(frame, PEER, US, 1, 2, payload, sizeof(payload));
	fake_netdev_inject(&fnd, frame, n);
	cr_assert_eq(fnd.dev.stats.rx_split, 1);
	cr_assert_eq(fnd.dev.stats.rx_bytes_host - host0, 42, "headers only in host memory");
	cr_assert_eq(fnd.dev.stats.rx_bytes_device, 1000, "payload in device memory");
	uint64_t txhost0 = fnd.dev.stats.tx_bytes_host; /* the setup's ARP reply */
	struct netdev_frag f = { .addr = dma_addr_device((uint64_t)(uintptr_t)devmem[0]), .len = 100 };
	cr_assert_eq(udp_sendto_frags(u, PEER, 2, NULL, 0, &f, 1), 0);
	cr_assert_eq(fnd.dev.stats.tx_bytes_device, 100);
	cr_assert_eq(fnd.dev.stats.tx_bytes_host - txhost0, 42);
	udp_close(u);
}

Test(netdev, jumbo_mtu_sets_mss)
{
	struct net_config c;
	struct tcp_sock *s;
	net_config_default(&c);
	c.mtu = 9000;
	cr_assert_eq(net_configure(&c), 0);
	cr_assert_eq(tcp_connect(PEER, 80, NULL, NULL, &s), 0);
	struct fake_parsed_tcp p;
	cr_assert(fake_parse_tcp(&fnd.tx[0], &p));
	cr_assert_eq(p.mss, 8960);
	tcp_abort(s);
}
