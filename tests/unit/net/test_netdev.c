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
	netdev_stats_sync(&fnd.dev);
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

/* netdev_rx's counters by class and flag, with none, one and several fragments; netdev_tx's
 * inline common case (up to two fragments), its slow path (three) and a refusal taken back. */
Test(netdev, counters_by_path)
{
	netdev_stats_sync(&fnd.dev);
	struct netdev_stats s0 = fnd.dev.stats;
	static uint8_t hdr[64];
	struct netbuf *nb = netbuf_alloc_rx(hdr, sizeof(hdr), 20, NULL, 0);
	cr_assert_not_null(nb);
	nb->flags = NETBUF_RX_SPLIT | NETBUF_RX_L4_CSUM_OK;
	for (int i = 0; i < 3; i++) {
		struct netdev_frag f = { .addr = i == 1 ? dma_addr_host(devmem[i]) : dma_addr_device((uint64_t)(uintptr_t)devmem[i]),
					 .len = 10u * (unsigned)(i + 1), .token = (uint64_t)i, .owner = &owner };
		cr_assert_eq(netbuf_add_frag(nb, &f), 0);
	}
	netdev_rx(&fnd.dev, nb); /* 20 bytes of host part: not even Ethernet; dropped and freed */
	netdev_stats_sync(&fnd.dev);
	cr_assert_eq(fnd.dev.stats.rx_frames - s0.rx_frames, 1);
	cr_assert_eq(fnd.dev.stats.rx_bytes_host - s0.rx_bytes_host, 20 + 20);
	cr_assert_eq(fnd.dev.stats.rx_bytes_device - s0.rx_bytes_device, 10 + 30);
	cr_assert_eq(fnd.dev.stats.rx_split - s0.rx_split, 1);
	cr_assert_eq(fnd.dev.stats.rx_csum_ok - s0.rx_csum_ok, 1);
	cr_assert_eq(fnd.dev.stats.rx_csum_bad - s0.rx_csum_bad, 0);
	cr_assert_eq(released[0] + released[1] + released[2], 3, "every fragment back");
	nb = netbuf_alloc_rx(hdr, sizeof(hdr), 30, NULL, 0);
	nb->flags = NETBUF_RX_L3_CSUM_BAD;
	netdev_rx(&fnd.dev, nb);
	netdev_stats_sync(&fnd.dev);
	cr_assert_eq(fnd.dev.stats.rx_frames - s0.rx_frames, 2);
	cr_assert_eq(fnd.dev.stats.rx_csum_ok - s0.rx_csum_ok, 1);
	cr_assert_eq(fnd.dev.stats.rx_bytes_host - s0.rx_bytes_host, 20 + 20 + 30);
	cr_assert_eq(fnd.dev.stats.rx_split - s0.rx_split, 1);
	cr_assert_eq(fnd.dev.stats.rx_csum_bad - s0.rx_csum_bad, 1);

	for (unsigned k = 0; k <= 3; k++) {
		struct netdev_stats t0 = fnd.dev.stats;
		unsigned dev_bytes = 0, host_bytes = 14;
		nb = netbuf_alloc(NETBUF_HEADROOM);
		memset(netbuf_put(nb, 14), 0, 14);
		for (unsigned i = 0; i < k; i++) {
			struct netdev_frag f = { .addr = i == 1 ? dma_addr_host(devmem[i]) : dma_addr_device((uint64_t)(uintptr_t)devmem[i]),
						 .len = 5u + i, .token = i, .owner = &owner };
			cr_assert_eq(netbuf_add_frag(nb, &f), 0);
			if (i == 1)
				host_bytes += 5 + i;
			else
				dev_bytes += 5 + i;
		}
		if (k == 2) { /* refused: counted as an error, the counters taken back, the caller keeps nb */
			fnd.tx_refuse = 1;
			cr_assert_eq(netdev_tx(&fnd.dev, nb), -ENOBUFS);
			cr_assert_eq(fnd.dev.stats.tx_frames, t0.tx_frames);
			cr_assert_eq(fnd.dev.stats.tx_bytes_host, t0.tx_bytes_host);
			cr_assert_eq(fnd.dev.stats.tx_bytes_device, t0.tx_bytes_device);
			cr_assert_eq(fnd.dev.stats.tx_errors - t0.tx_errors, 1);
			netdev_tx_wake(&fnd.dev);
		}
		cr_assert_eq(netdev_tx(&fnd.dev, nb), 0, "%u fragments", k);
		cr_assert_eq(fnd.dev.stats.tx_frames - t0.tx_frames, 1);
		cr_assert_eq(fnd.dev.stats.tx_bytes_host - t0.tx_bytes_host, host_bytes, "%u fragments", k);
		cr_assert_eq(fnd.dev.stats.tx_bytes_device - t0.tx_bytes_device, dev_bytes, "%u fragments", k);
		cr_assert_eq(fnd.dev.stats.tx_csum_offload, t0.tx_csum_offload);
	}
}

static void find_netbuf_pool(const struct mm_pool *p, void *arg)
{
	if (!strcmp(p->name, "netbuf"))
		*(const struct mm_pool **)arg = p;
}

/* The netbuf pool: exhaustion counted (and an allocator's NULL), a refused free counted with
 * the header buffer given back all the same, frames with one fragment, several, and a
 * header buffer freed by every path. */
Test(netdev, netbuf_round_trips)
{
	static uint8_t hdr[64];
	struct netbuf *all[1024 + 1];
	size_t in_use, cap;
	uint64_t fail0, fail;
	unsigned n = 0;

	netbuf_pool_stats(&in_use, &cap, &fail0);
	while ((all[n] = n % 2 ? netbuf_alloc(0) : netbuf_alloc_rx(hdr, sizeof(hdr), 0, NULL, 0)) != NULL)
		n++;
	netbuf_pool_stats(&in_use, &cap, &fail);
	cr_assert_eq(n, cap - (in_use - n), "every free netbuf taken");
	cr_assert_eq(fail - fail0, 1, "the exhausted pool counted once");
	cr_assert_null(netbuf_alloc_rx(hdr, sizeof(hdr), 0, NULL, 0));
	netbuf_pool_stats(&in_use, &cap, &fail);
	cr_assert_eq(fail - fail0, 2);
	cr_assert_null(netbuf_alloc_rx(hdr, 10, 11, NULL, 0), "len beyond the buffer");
	for (unsigned i = 0; i < n; i++)
		netbuf_free(all[i]);

	/* Header buffer and fragments back through every free path. */
	memset(released, 0, sizeof(released));
	for (unsigned k = 0; k < 4; k++) {
		struct netbuf *nb = k % 2 ? netbuf_alloc_rx(hdr, sizeof(hdr), 0, &owner, 3) : netbuf_alloc(0);
		for (unsigned i = 0; i < k; i++) {
			struct netdev_frag f = { .addr = dma_addr_host(devmem[i]), .len = 1, .token = i, .owner = &owner };
			netbuf_add_frag(nb, &f);
		}
		if (k == 2)
			netbuf_tx_done(nb);
		else
			netbuf_free(nb);
	}
	cr_assert_eq(released[3], 2, "header buffers");
	cr_assert_eq(released[0], 3);
	cr_assert_eq(released[1], 2);
	cr_assert_eq(released[2], 1);

	/* A foreign pointer: the pool refuses it (counted), the header buffer still goes back. */
	const struct mm_pool *pool = NULL;
	mm_pool_foreach(find_netbuf_pool, &pool);
	cr_assert_not_null(pool);
	uint64_t bad0 = pool->bad_frees;
	struct netbuf fake;
	memset(&fake, 0, sizeof(fake));
	list_init(&fake.node);
	fake.hdr_owner = &owner;
	fake.hdr_token = 3;
	netbuf_free(&fake);
	cr_assert_eq(released[3], 3);
	struct netdev_frag f = { .addr = dma_addr_host(devmem[0]), .len = 1, .token = 0, .owner = &owner };
	fake.hdr_owner = NULL;
	netbuf_add_frag(&fake, &f);
	netbuf_free(&fake);
	cr_assert_eq(released[0], 4, "the fragment of a refused one-fragment netbuf too");
	cr_assert_eq(pool->bad_frees - bad0, 2);
}

/* own (netbuf_rx_owned_init) lent for a frame of len bytes, with a 6-byte fragment of
 * devmem[token] released to released[token]. */
static struct netbuf *lent_with_fragment(struct netbuf *own, size_t len, uint64_t token)
{
	struct netbuf *nb = netbuf_rx_owned_get(own, len);
	cr_assert_not_null(nb);
	struct netdev_frag f = { .addr = dma_addr_device((uint64_t)(uintptr_t)devmem[token]), .len = 6,
				 .token = token, .owner = &owner };
	cr_assert_eq(netbuf_add_frag(nb, &f), 0);
	return nb;
}

/* A driver's own RX netbuf (netbuf_rx_owned_init): lent with its header buffer, back with
 * it; nothing from the pool; freed twice or lent twice: refused and counted, nothing
 * released twice; with fragments still on it, each goes back first; sent and completed
 * (netbuf_tx_done), it comes back as from netbuf_free. */
Test(netdev, owned_rx_netbuf_lifecycle)
{
	static _Alignas(16) uint8_t mem[sizeof(struct netbuf)];
	static uint8_t hbuf[64];
	struct netbuf *own = (struct netbuf *)mem, *nb;
	const struct mm_pool *pool = NULL;
	size_t in_use, cap;
	uint64_t fails;

	memset(released, 0, sizeof(released));
	mm_pool_foreach(find_netbuf_pool, &pool);
	cr_assert_not_null(pool);
	netbuf_pool_stats(&in_use, &cap, &fails);
	uint64_t bad0 = pool->bad_frees, allocs0 = pool->allocs;
	netbuf_rx_owned_init(own, hbuf, sizeof(hbuf), &owner, 3);
	cr_assert_eq(own->origin, NETBUF_ORIGIN_OWNED_IDLE);
	cr_assert_null(netbuf_rx_owned_get(own, sizeof(hbuf) + 1), "longer than the buffer");
	nb = netbuf_rx_owned_get(own, 20);
	cr_assert_eq(nb, own);
	cr_assert_eq(nb->data, hbuf);
	cr_assert_eq(netbuf_host_len(nb), 20);
	cr_assert_eq(nb->end, hbuf + sizeof(hbuf));
	cr_assert_eq(nb->nfrags, 0);
	cr_assert_eq(nb->flags, 0);
	cr_assert_null(nb->tx_done);
	cr_assert_null(netbuf_rx_owned_get(own, 20), "still lent");
	cr_assert_eq(pool->bad_frees - bad0, 1);
	nb->data += 14; /* the stack moves through it */
	netbuf_free(nb);
	cr_assert_eq(released[3], 1, "the header buffer back");
	cr_assert_eq(own->origin, NETBUF_ORIGIN_OWNED_IDLE);
	netbuf_free(own);
	cr_assert_eq(released[3], 1, "a second free releases nothing");
	cr_assert_eq(pool->bad_frees - bad0, 2);
	/* again, with a fragment left on it: the fragment first, then the header */
	nb = lent_with_fragment(own, 30, 0);
	cr_assert_eq(nb->data, hbuf, "data back at the buffer's start");
	netbuf_free(nb);
	cr_assert_eq(released[0], 1);
	cr_assert_eq(released[3], 2);
	cr_assert_eq(own->nfrags, 0);
	/* sent and completed */
	nb = netbuf_rx_owned_get(own, 30);
	netbuf_tx_done(nb);
	cr_assert_eq(released[3], 3);
	cr_assert_eq(own->origin, NETBUF_ORIGIN_OWNED_IDLE);
	cr_assert_eq(pool->allocs, allocs0, "nothing from the pool");
	cr_assert_eq(pool->bad_frees - bad0, 2);
	size_t in_use2;
	netbuf_pool_stats(&in_use2, &cap, &fails);
	cr_assert_eq(in_use2, in_use);
}

/* Lent again, a driver's RX netbuf is as netbuf_rx_owned_get always gave it, whatever the
 * stack did with it before: sent with a completion callback, checksum offload and TSO
 * fields set, put on a list, flags and a split point, fragments (netbuf_free), or its
 * payload taken (netbuf_rx_consumed). */
static void tx_done_nothing(struct netbuf *nb, void *ctx)
{
	(void)nb;
	(void)ctx;
}
static void assert_lent_clean(struct netbuf *nb, const uint8_t *buf, size_t len)
{
	cr_assert_eq(nb->data, buf);
	cr_assert_eq(netbuf_host_len(nb), len);
	cr_assert_eq(nb->origin, NETBUF_ORIGIN_OWNED_LENT);
	cr_assert_null(nb->dev);
	cr_assert_eq(nb->flags, 0);
	cr_assert_eq(nb->hdr_len, 0);
	cr_assert_eq(nb->nfrags, 0);
	cr_assert_eq(nb->csum_start, 0);
	cr_assert_eq(nb->csum_offset, 0);
	cr_assert_eq(nb->gso_size, 0);
	cr_assert_null(nb->tx_done);
	cr_assert_null(nb->tx_ctx);
	cr_assert_eq(nb->node.next, &nb->node, "on no list");
	cr_assert_eq(nb->node.prev, &nb->node);
}
Test(netdev, owned_rx_netbuf_lent_again_is_clean)
{
	static _Alignas(16) uint8_t mem[sizeof(struct netbuf)];
	static uint8_t hbuf[64];
	struct netbuf *own = (struct netbuf *)mem, *nb;
	struct list_node q;

	memset(released, 0, sizeof(released));
	netbuf_rx_owned_init(own, hbuf, sizeof(hbuf), &owner, 3);
	nb = lent_with_fragment(own, 40, 0);
	/* used for sending, listed, then freed with its fragment */
	list_init(&q);
	list_add_tail(&q, &nb->node);
	nb->flags = NETBUF_RX_SPLIT | NETBUF_TX_CSUM_PARTIAL;
	nb->hdr_len = 34;
	nb->csum_start = 34;
	nb->csum_offset = 16;
	nb->gso_size = 1460;
	nb->tx_done = tx_done_nothing;
	nb->tx_ctx = &q;
	nb->dev = &fnd.dev;
	netbuf_free(nb);
	cr_assert(list_empty(&q), "unlinked");
	cr_assert_eq(released[0], 1);
	cr_assert_eq(released[3], 1);
	assert_lent_clean(netbuf_rx_owned_get(own, 20), hbuf, 20);
	/* its payload taken by the stack, then back */
	nb = own;
	nb->dev = &fnd.dev;
	nb->flags = NETBUF_RX_L4_CSUM_OK;
	nb->hdr_len = 54;
	nb->data += 54;
	netbuf_rx_consumed(nb);
	cr_assert_eq(released[3], 2);
	assert_lent_clean(netbuf_rx_owned_get(own, 30), hbuf, 30);
	netbuf_free(own);
	cr_assert_eq(released[3], 3);
}

/* The fake NIC in both modes (its header buffers' netbufs, the pool's): the same frames
 * reach TCP, every buffer comes back. */
Test(netdev, owned_and_pool_rx_alike)
{
	for (int mode = 0; mode < 2; mode++) {
		fnd.rx_pool = mode == 1;
		struct fake_tcp t = { .src = PEER, .dst = US, .sport = 40000, .dport = 5555, .seq = 1, .flags = 0x02,
				      .wnd = 1000 };
		size_t n = fake_build_tcp(frame, &t);
		fake_netdev_clear(&fnd);
		cr_assert_eq(fake_netdev_inject(&fnd, frame, n), 0);
		cr_assert_eq(fnd.ntx, 1, "RST (mode %d)", mode);
		cr_assert_eq(fnd.hdr_out + fnd.data_out, 0, "every buffer back (mode %d)", mode);
	}
	fnd.rx_pool = false;
}

/* A transmitted frame's two fragments (a PDU header and a piece of payload) go back to
 * their owners after the netbuf, refused by the pool (a foreign netbuf) or not. */
Test(netdev, two_fragment_free)
{
	const struct mm_pool *pool = NULL;
	mm_pool_foreach(find_netbuf_pool, &pool);
	cr_assert_not_null(pool);
	memset(released, 0, sizeof(released));
	size_t in_use0 = pool->in_use;
	uint64_t bad0 = pool->bad_frees;
	struct netbuf *nb = netbuf_alloc(NETBUF_HEADROOM);
	cr_assert_not_null(nb);
	for (unsigned i = 0; i < 2; i++) {
		struct netdev_frag f = { .addr = dma_addr_host(devmem[i]), .len = 10, .token = i, .owner = &owner };
		cr_assert_eq(netbuf_add_frag(nb, &f), 0);
	}
	cr_assert_eq(pool->in_use, in_use0 + 1);
	netbuf_tx_done(nb);
	cr_assert_eq(released[0] + released[1], 2);
	cr_assert_eq(pool->in_use, in_use0);
	cr_assert_eq(pool->bad_frees, bad0);
	struct netbuf fake;
	memset(&fake, 0, sizeof(fake));
	list_init(&fake.node);
	for (unsigned i = 0; i < 2; i++) {
		struct netdev_frag f = { .addr = dma_addr_host(devmem[i]), .len = 10, .token = i, .owner = &owner };
		cr_assert_eq(netbuf_add_frag(&fake, &f), 0);
	}
	netbuf_free(&fake);
	cr_assert_eq(released[0] + released[1], 4, "both back all the same");
	cr_assert_eq(pool->bad_frees, bad0 + 1);
}

/* netbuf_rx_consumed: a driver's lent RX netbuf without fragments, on no list, goes back
 * with its header buffer and is the driver's again; a second one (not lent) is refused and
 * counted as netbuf_free counts it; one with a fragment left, one on a list and a pool
 * netbuf take netbuf_free's way: fragments first, unlinked, the pool's object back. */
Test(netdev, rx_consumed_as_free)
{
	static _Alignas(16) uint8_t mem[sizeof(struct netbuf)];
	static uint8_t hbuf[64];
	struct netbuf *own = (struct netbuf *)mem, *nb;
	const struct mm_pool *pool = NULL;
	struct list_node queue;

	memset(released, 0, sizeof(released));
	mm_pool_foreach(find_netbuf_pool, &pool);
	cr_assert_not_null(pool);
	size_t in_use0 = pool->in_use;
	uint64_t bad0 = pool->bad_frees;
	netbuf_rx_owned_init(own, hbuf, sizeof(hbuf), &owner, 3);
	nb = netbuf_rx_owned_get(own, 54);
	cr_assert_not_null(nb);
	netbuf_rx_consumed(nb);
	cr_assert_eq(released[3], 1, "the header buffer back");
	cr_assert_eq(own->origin, NETBUF_ORIGIN_OWNED_IDLE);
	netbuf_rx_consumed(own);
	cr_assert_eq(released[3], 1, "not lent: nothing released twice");
	cr_assert_eq(pool->bad_frees - bad0, 1, "counted as a refused free");
	/* a fragment left on it: the fragment first, then the header buffer */
	nb = lent_with_fragment(own, 54, 0);
	netbuf_rx_consumed(nb);
	cr_assert_eq(released[0], 1);
	cr_assert_eq(released[3], 2);
	cr_assert_eq(own->nfrags, 0);
	cr_assert_eq(own->origin, NETBUF_ORIGIN_OWNED_IDLE);
	/* on a list: unlinked first */
	list_init(&queue);
	nb = netbuf_rx_owned_get(own, 54);
	list_add_tail(&queue, &nb->node);
	netbuf_rx_consumed(nb);
	cr_assert(list_empty(&queue), "unlinked");
	cr_assert_eq(released[3], 3);
	/* a pool netbuf with its fragment */
	nb = netbuf_alloc(NETBUF_HEADROOM);
	cr_assert_not_null(nb);
	struct netdev_frag f = { .addr = dma_addr_device((uint64_t)(uintptr_t)devmem[1]), .len = 6, .token = 1,
				 .owner = &owner };
	netbuf_add_frag(nb, &f);
	netbuf_rx_consumed(nb);
	cr_assert_eq(released[1], 1);
	cr_assert_eq(pool->in_use, in_use0, "back in the pool");
	cr_assert_eq(pool->bad_frees - bad0, 1);
}

static struct netbuf *rx_owned_got;
static void rx_owned_catch(struct netdev *dev, struct netbuf *nb)
{
	(void)dev;
	rx_owned_got = nb;
}

/* netdev_rx_owned is netbuf_rx_owned_get, netbuf_add_frag and netdev_rx in one call: the
 * stack gets the driver's netbuf lent with the flags, split point, host part and the one
 * fragment, counted by the driver's netdev_rx_count as netdev_rx counts it; without a
 * fragment, none. Still lent or longer than its buffer: dropped and counted (rx_dropped, the
 * pool's refused free, the driver's count taken back), nothing handed up, the fragment and
 * the header buffer back to their owners. */
Test(netdev, rx_owned_hands_over_in_one_call_and_refuses_as_get)
{
	static _Alignas(16) uint8_t mem[sizeof(struct netbuf)];
	static uint8_t hbuf[64];
	struct netbuf *own = (struct netbuf *)mem;
	const struct mm_pool *pool = NULL;
	void (*stack_rx)(struct netdev *, struct netbuf *) = fnd.dev.rx_handler;
	const uint32_t flags = NETBUF_RX_SPLIT | NETBUF_RX_L3_CSUM_OK | NETBUF_RX_L4_CSUM_OK;
	struct netdev_frag f = { .addr = dma_addr_device((uint64_t)(uintptr_t)devmem[0]), .offset = 7, .len = 100,
				 .provider = 1, .token = 0, .owner = &owner };

	memset(released, 0, sizeof(released));
	mm_pool_foreach(find_netbuf_pool, &pool);
	cr_assert_not_null(pool);
	uint64_t bad0 = pool->bad_frees;
	netdev_stats_sync(&fnd.dev);
	struct netdev_stats st0 = fnd.dev.stats;
	netbuf_rx_owned_init(own, hbuf, sizeof(hbuf), &owner, 3);
	fnd.dev.rx_handler = rx_owned_catch;
	rx_owned_got = NULL;
	netdev_rx_count(&fnd.dev, 54, flags, &f);
	netdev_rx_owned(&fnd.dev, own, 54, flags, 54, &f);
	cr_assert_eq(rx_owned_got, own);
	cr_assert_eq(own->origin, NETBUF_ORIGIN_OWNED_LENT);
	cr_assert_eq(own->dev, &fnd.dev);
	cr_assert_eq(own->flags, flags);
	cr_assert_eq(own->hdr_len, 54);
	cr_assert_eq(own->data, hbuf);
	cr_assert_eq(netbuf_host_len(own), 54);
	cr_assert_eq(own->nfrags, 1);
	cr_assert_eq(memcmp(&own->frags[0], &f, sizeof(f)), 0);
	cr_assert_null(own->tx_done);
	netdev_stats_sync(&fnd.dev);
	cr_assert_eq(fnd.dev.stats.rx_frames - st0.rx_frames, 1);
	cr_assert_eq(fnd.dev.stats.rx_split - st0.rx_split, 1);
	cr_assert_eq(fnd.dev.stats.rx_csum_ok - st0.rx_csum_ok, 1);
	cr_assert_eq(fnd.dev.stats.rx_bytes_host - st0.rx_bytes_host, 54);
	cr_assert_eq(fnd.dev.stats.rx_bytes_device - st0.rx_bytes_device, 100);
	/* still lent: refused, the second frame's fragment and header buffer given back */
	f.token = 1;
	rx_owned_got = NULL;
	netdev_rx_count(&fnd.dev, 54, flags, &f);
	netdev_rx_owned(&fnd.dev, own, 54, flags, 54, &f);
	cr_assert_null(rx_owned_got);
	cr_assert_eq(fnd.dev.stats.rx_dropped - st0.rx_dropped, 1);
	netdev_stats_sync(&fnd.dev);
	cr_assert_eq(fnd.dev.stats.rx_frames - st0.rx_frames, 1, "the refused frame's count taken back");
	cr_assert_eq(fnd.dev.stats.rx_bytes_host - st0.rx_bytes_host, 54);
	cr_assert_eq(fnd.dev.stats.rx_bytes_device - st0.rx_bytes_device, 100);
	cr_assert_eq(pool->bad_frees - bad0, 1);
	cr_assert_eq(released[1], 1);
	cr_assert_eq(released[3], 1);
	cr_assert_eq(own->frags[0].token, 0, "the lent frame untouched");
	netbuf_free(own);
	cr_assert_eq(released[0], 1);
	cr_assert_eq(released[3], 2);
	/* longer than the buffer: refused, the header buffer back, the netbuf idle */
	netdev_rx_count(&fnd.dev, sizeof(hbuf) + 1, flags, NULL);
	netdev_rx_owned(&fnd.dev, own, sizeof(hbuf) + 1, flags, 0, NULL);
	cr_assert_null(rx_owned_got);
	cr_assert_eq(fnd.dev.stats.rx_dropped - st0.rx_dropped, 2);
	cr_assert_eq(released[3], 3);
	cr_assert_eq(own->origin, NETBUF_ORIGIN_OWNED_IDLE);
	netdev_stats_sync(&fnd.dev);
	cr_assert_eq(fnd.dev.stats.rx_frames - st0.rx_frames, 1);
	cr_assert_eq(fnd.dev.stats.rx_bytes_host - st0.rx_bytes_host, 54);
	/* no fragment */
	netdev_rx_count(&fnd.dev, 42, 0, NULL);
	netdev_rx_owned(&fnd.dev, own, 42, 0, 0, NULL);
	cr_assert_eq(rx_owned_got, own);
	cr_assert_eq(own->nfrags, 0);
	cr_assert_eq(netbuf_host_len(own), 42);
	cr_assert_eq(own->flags, 0);
	netbuf_rx_consumed(own);
	cr_assert_eq(released[3], 4);
	cr_assert_eq(own->origin, NETBUF_ORIGIN_OWNED_IDLE);
	fnd.dev.rx_handler = stack_rx;
}

/* The two tests below: a driver's netbuf over a 64-byte header buffer (owner token 3), the
 * stack's receive function replaced by rx_owned_catch (put back by owned_catch_end), the
 * releases cleared and the counters as they stand in *st0. */
static void (*owned_catch_saved)(struct netdev *, struct netbuf *);
static struct netbuf *owned_catch_begin(struct netdev_stats *st0)
{
	static _Alignas(16) uint8_t mem[sizeof(struct netbuf)];
	static uint8_t hbuf[64];
	struct netbuf *own = (struct netbuf *)mem;

	memset(released, 0, sizeof(released));
	netdev_stats_sync(&fnd.dev);
	*st0 = fnd.dev.stats;
	netbuf_rx_owned_init(own, hbuf, sizeof(hbuf), &owner, 3);
	owned_catch_saved = fnd.dev.rx_handler;
	fnd.dev.rx_handler = rx_owned_catch;
	rx_owned_got = NULL;
	return own;
}

static void owned_catch_end(void)
{
	fnd.dev.rx_handler = owned_catch_saved;
}

/* A driver counts the frames it hands over with netdev_rx_owned (netdev_rx_count: the bytes
 * by class and the frame by flags, where the e1000e had counted its bytes a second time):
 * netdev_rx_owned itself counts nothing. */
Test(netdev, rx_owned_counts_nothing_the_driver_counts_once)
{
	const uint32_t flags = NETBUF_RX_SPLIT | NETBUF_RX_L4_CSUM_OK;
	struct netdev_frag f = { .addr = dma_addr_device((uint64_t)(uintptr_t)devmem[0]), .len = 100, .token = 0,
				 .owner = &owner };
	struct netdev_stats st0;
	struct netbuf *own = owned_catch_begin(&st0);

	netdev_rx_owned(&fnd.dev, own, 54, flags, 54, &f);
	cr_assert_eq(rx_owned_got, own);
	netdev_stats_sync(&fnd.dev);
	cr_assert_eq(fnd.dev.stats.rx_frames, st0.rx_frames, "not counted without the driver's count");
	cr_assert_eq(fnd.dev.stats.rx_bytes_host, st0.rx_bytes_host);
	cr_assert_eq(fnd.dev.stats.rx_bytes_device, st0.rx_bytes_device);
	netbuf_free(own);
	netdev_rx_count(&fnd.dev, 54, flags, &f);
	f.token = 1;
	netdev_rx_owned(&fnd.dev, own, 54, flags, 54, &f);
	netdev_stats_sync(&fnd.dev);
	cr_assert_eq(fnd.dev.stats.rx_frames - st0.rx_frames, 1, "counted once");
	cr_assert_eq(fnd.dev.stats.rx_split - st0.rx_split, 1);
	cr_assert_eq(fnd.dev.stats.rx_csum_ok - st0.rx_csum_ok, 1);
	cr_assert_eq(fnd.dev.stats.rx_bytes_host - st0.rx_bytes_host, 54);
	cr_assert_eq(fnd.dev.stats.rx_bytes_device - st0.rx_bytes_device, 100);
	netbuf_free(own);
	cr_assert_eq(released[0], 1);
	cr_assert_eq(released[1], 1);
	cr_assert_eq(released[3], 2);
	owned_catch_end();
}

/* netdev_rx_owned_slot: the driver writes the frame's fragment into its idle netbuf's slot
 * (netbuf_rx_owned_slot), the stack gets it there, uncopied; the slot is refused (NULL) while
 * the netbuf is lent; a frame longer than the buffer is refused with the slot's fragment and
 * the header buffer given back, its count taken back. */
Test(netdev, rx_owned_slot_hands_over_the_fragment_written_in_place)
{
	const uint32_t flags = NETBUF_RX_SPLIT | NETBUF_RX_L4_CSUM_OK;
	struct netdev_frag *slot;
	struct netdev_stats st0;
	struct netbuf *own = owned_catch_begin(&st0);

	slot = netbuf_rx_owned_slot(own);
	cr_assert_eq(slot, &own->frags[0]);
	*slot = (struct netdev_frag){ .addr = dma_addr_device((uint64_t)(uintptr_t)devmem[0]), .offset = 9, .len = 100,
				      .provider = 1, .token = 0, .owner = &owner };
	netdev_rx_count(&fnd.dev, 54, flags, slot);
	netdev_rx_owned_slot(&fnd.dev, own, 54, flags, 54);
	cr_assert_eq(rx_owned_got, own);
	cr_assert_eq(own->origin, NETBUF_ORIGIN_OWNED_LENT);
	cr_assert_eq(own->nfrags, 1);
	cr_assert_eq(own->frags[0].len, 100);
	cr_assert_eq(own->frags[0].offset, 9);
	cr_assert_eq(own->frags[0].owner, &owner);
	cr_assert_eq(own->hdr_len, 54);
	cr_assert_eq(own->flags, flags);
	cr_assert_eq(netbuf_host_len(own), 54);
	cr_assert_null(netbuf_rx_owned_slot(own), "the slot is the stack's while lent");
	netdev_stats_sync(&fnd.dev);
	cr_assert_eq(fnd.dev.stats.rx_frames - st0.rx_frames, 1);
	cr_assert_eq(fnd.dev.stats.rx_bytes_device - st0.rx_bytes_device, 100);
	netbuf_free(own);
	cr_assert_eq(released[0], 1);
	cr_assert_eq(released[3], 1);
	/* longer than the buffer: refused, both given back, the count taken back */
	rx_owned_got = NULL;
	slot = netbuf_rx_owned_slot(own);
	cr_assert_not_null(slot);
	*slot = (struct netdev_frag){ .addr = dma_addr_device((uint64_t)(uintptr_t)devmem[1]), .len = 50, .token = 1,
				      .owner = &owner };
	netdev_rx_count(&fnd.dev, 64 + 1, flags, slot);
	netdev_rx_owned_slot(&fnd.dev, own, 64 + 1, flags, 54);
	cr_assert_null(rx_owned_got);
	cr_assert_eq(released[1], 1);
	cr_assert_eq(released[3], 2);
	cr_assert_eq(own->origin, NETBUF_ORIGIN_OWNED_IDLE);
	cr_assert_eq(own->nfrags, 0);
	netdev_stats_sync(&fnd.dev);
	cr_assert_eq(fnd.dev.stats.rx_frames - st0.rx_frames, 1);
	cr_assert_eq(fnd.dev.stats.rx_bytes_device - st0.rx_bytes_device, 100);
	cr_assert_eq(fnd.dev.stats.rx_dropped - st0.rx_dropped, 1);
	owned_catch_end();
}
