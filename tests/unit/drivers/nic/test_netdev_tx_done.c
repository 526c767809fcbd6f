// sources: drivers/nic/netdev.c net/net.c lib/ipv4_text.c net/arp.c net/ipv4.c net/udp.c net/tcp/tcp.c net/tcp/tcp_in.c net/tcp/tcp_isn.c net/tcp/tcp_pools.c net/tcp/tcp_admit.c tests/unit/net/fake_entropy.c net/tcp/tcp_hdr.c net/tcp/tcp_out.c net/tcp/tcp_budget.c net/tcp/tcp_sack.c net/tcp/tcp_service.c mm/pool.c mm/dma.c lib/timer.c lib/log.c tests/unit/net/fake_netdev.c
/*
 * The completion of transmitted netbufs with three fragments or more (frame trains,
 * netdev.h NETBUF_TX_TRAIN): every owned fragment goes back exactly once, in order, and the
 * header buffer last; a train whose only owned fragment is its first (a train of one send
 * entry's pieces) goes back as a one-fragment frame does, the netbuf first.
 */
#include "tests/unit/net/net_test.h"

TestSuite(netdev_tx_done, .init = net_setup, .fini = net_teardown);

#define MAXF NETBUF_MAX_FRAGS

static uint8_t mem[MAXF][16];
static uint64_t order[MAXF + 1];     /* tokens in the order released */
static size_t in_use_seen[MAXF + 1]; /* netbufs in use at each release */
static unsigned nrel;

static size_t netbufs_in_use(void)
{
	size_t in_use, cap;
	uint64_t fails;
	netbuf_pool_stats(&in_use, &cap, &fails);
	return in_use;
}

static void rel(struct netdev_frag_owner *o, uint64_t token)
{
	(void)o;
	cr_assert_lt(nrel, MAXF + 1);
	order[nrel] = token;
	in_use_seen[nrel++] = netbufs_in_use();
}
static struct netdev_frag_owner owner = { "test", rel };

/* A pool netbuf with n fragments, those whose bit is set in owned with an owner (token:
 * its index). */
static struct netbuf *train(unsigned n, unsigned owned)
{
	struct netbuf *nb = netbuf_alloc(NETBUF_HEADROOM);
	cr_assert_not_null(nb);
	for (unsigned i = 0; i < n; i++) {
		struct netdev_frag f = { .addr = dma_addr_host(mem[i]), .len = 10, .token = i,
					 .owner = owned & (1u << i) ? &owner : NULL };
		cr_assert_eq(netbuf_add_frag(nb, &f), 0);
	}
	nrel = 0;
	return nb;
}

/* Only the first fragment owned, 3 .. 8 fragments, completed or freed: one release, after
 * the netbuf went back to the pool (the old walk released it first). */
Test(netdev_tx_done, a_train_owned_by_its_first_fragment_goes_back_netbuf_first)
{
	size_t in_use0 = netbufs_in_use();
	for (unsigned n = 3; n <= MAXF; n++) {
		for (int how = 0; how < 2; how++) {
			struct netbuf *nb = train(n, 1);
			cr_assert_eq(netbufs_in_use(), in_use0 + 1);
			if (how)
				netbuf_free(nb);
			else
				netbuf_tx_done(nb);
			cr_assert_eq(nrel, 1, "n %u", n);
			cr_assert_eq(order[0], 0);
			cr_assert_eq(in_use_seen[0], in_use0, "the netbuf back before the release (n %u)", n);
			cr_assert_eq(netbufs_in_use(), in_use0);
		}
	}
}

/* Every pattern of owned fragments of 3 .. 8: each owned one back once, in order, nothing
 * else; the pool back where it was. */
Test(netdev_tx_done, every_owned_fragment_goes_back_once_in_order)
{
	size_t in_use0 = netbufs_in_use();
	for (unsigned n = 3; n <= MAXF; n++) {
		for (unsigned owned = 0; owned < (1u << n); owned++) {
			struct netbuf *nb = train(n, owned);
			netbuf_tx_done(nb);
			unsigned k = 0;
			for (unsigned i = 0; i < n; i++) {
				if (!(owned & (1u << i)))
					continue;
				cr_assert_lt(k, nrel, "n %u owned %#x: fragment %u not released", n, owned, i);
				cr_assert_eq(order[k], i, "n %u owned %#x: release %u", n, owned, k);
				k++;
			}
			cr_assert_eq(nrel, k, "n %u owned %#x: %u released, %u owned", n, owned, nrel, k);
			cr_assert_eq(netbufs_in_use(), in_use0);
		}
	}
}

/* With a header buffer to give back, the fragments first, in order, then the header buffer,
 * even when only the first fragment is owned. */
Test(netdev_tx_done, a_header_buffer_goes_back_last)
{
	size_t in_use0 = netbufs_in_use();
	static const unsigned owned[] = { 1, 0x81, 0xff, 0 };
	for (unsigned j = 0; j < sizeof(owned) / sizeof(owned[0]); j++) {
		struct netbuf *nb = train(MAXF, owned[j]);
		nb->hdr_owner = &owner;
		nb->hdr_token = 100;
		netbuf_tx_done(nb);
		unsigned want = (unsigned)__builtin_popcount(owned[j]);
		cr_assert_eq(nrel, want + 1);
		cr_assert_eq(order[want], 100, "the header buffer last (owned %#x)", owned[j]);
		for (unsigned k = 1; k < want; k++)
			cr_assert_gt(order[k], order[k - 1]);
		cr_assert_eq(netbufs_in_use(), in_use0);
	}
}
