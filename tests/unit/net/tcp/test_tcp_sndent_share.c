// sources: drivers/nic/netdev.c net/net.c lib/ipv4_text.c net/arp.c net/ipv4.c net/udp.c net/tcp/tcp.c net/tcp/tcp_in.c net/tcp/tcp_isn.c net/tcp/tcp_pools.c net/tcp/tcp_admit.c tests/unit/net/fake_entropy.c net/tcp/tcp_hdr.c net/tcp/tcp_out.c net/tcp/tcp_budget.c net/tcp/tcp_sack.c net/tcp/tcp_service.c mm/pool.c mm/dma.c lib/timer.c lib/log.c tests/unit/net/fake_netdev.c
/*
 * A socket's share of send entries (tcp.h, tcp_pools.c): tcp_sndent_alloc gives exactly
 * what tcp_sndent_room counts, no more and no less: the reserve, then at most
 * TCP_SNDENT_BORROW_MAX borrowed while the shared part (TCP_SNDENT_SHARED, summed over every
 * socket in tcp_sndents_borrowed) lasts; every entry given back uncounts what it counted.
 */
#include "lib/poller.h"
#include "tests/unit/net/tcp/tcp_test.h"

TestSuite(tcp_sndent_share, .init = net_setup, .fini = net_teardown);

#define MOST (TCP_SNDENT_RESERVE + TCP_SNDENT_BORROW_MAX)

static struct tcp_sndent *taken[MOST + 1];

/* Take entries for s into taken[first..] until refused, checking at each step that an entry
 * is given exactly when tcp_sndent_room says there is room, and what it counts. */
static unsigned take_all(struct tcp_sock *s, unsigned first)
{
	unsigned n = 0, borrowed0 = tcp_sndents_borrowed, held0 = s->sndents;

	for (;;) {
		unsigned room = tcp_sndent_room(s);
		struct tcp_sndent *e = first + n <= MOST ? tcp_sndent_alloc(s) : NULL;
		if (!e) {
			cr_assert_eq(room, 0, "refused with room %u after %u", room, n);
			cr_assert_eq(s->sndents, held0 + n);
			cr_assert_eq(tcp_sndents_borrowed, borrowed0 + tcp_pool_over(held0 + n, TCP_SNDENT_RESERVE) -
								   tcp_pool_over(held0, TCP_SNDENT_RESERVE));
			return n;
		}
		cr_assert_gt(room, 0, "an entry given past the share (entry %u)", n);
		cr_assert_leq(first + n, MOST);
		memset(&e->frag, 0, sizeof(e->frag));
		taken[first + n++] = e;
		cr_assert_eq(tcp_sndent_room(s), room - 1);
	}
}

static struct tcp_sock *lsn;

/* An established socket with nothing queued (its listener in lsn). */
static struct tcp_sock *sock_open(void)
{
	open_passive(&lsn, 1000, 65535, opt_mss1460, 4);
	cr_assert_eq(accepted->sndents, 0);
	return accepted;
}

static void sock_close(struct tcp_sock *s)
{
	tcp_abort(s);
	close_listener(lsn);
}

static void give_all(struct tcp_sock *s, unsigned n, unsigned borrowed0)
{
	while (n)
		tcp_sndent_free_own(s, taken[--n]);
	cr_assert_eq(s->sndents, 0);
	cr_assert_eq(tcp_sndents_borrowed, borrowed0);
}

/* The per-socket bound: the reserve and TCP_SNDENT_BORROW_MAX more, exactly. */
Test(tcp_sndent_share, a_socket_takes_its_reserve_and_borrow_max_exactly)
{
	struct tcp_sock *s = sock_open();
	unsigned borrowed0 = tcp_sndents_borrowed;
	cr_assert_eq(tcp_sndent_room(s), MOST);
	unsigned n = take_all(s, 0);
	cr_assert_eq(n, MOST);
	cr_assert_eq(tcp_sndents_borrowed - borrowed0, TCP_SNDENT_BORROW_MAX);
	give_all(s, n, borrowed0);
	cr_assert_eq(tcp_sndent_room(s), MOST);
	sock_close(s);
}

/* The shared bound: with other sockets holding all of the shared part but k entries, a
 * socket gets its reserve and k more, exactly; with all of it held, its reserve alone. */
Test(tcp_sndent_share, the_shared_part_bounds_what_a_socket_borrows)
{
	struct tcp_sock *s = sock_open();
	unsigned borrowed0 = tcp_sndents_borrowed;
	static const unsigned left[] = { 0, 1, 2, 7, TCP_SNDENT_BORROW_MAX - 1 };
	for (unsigned i = 0; i < sizeof(left) / sizeof(left[0]); i++) {
		unsigned others = TCP_SNDENT_SHARED - left[i]; /* the other sockets' borrowed entries */
		tcp_sndents_borrowed = others;
		unsigned n = take_all(s, 0);
		cr_assert_eq(n, TCP_SNDENT_RESERVE + left[i], "%u left in the shared part: %u taken", left[i], n);
		cr_assert_eq(tcp_sndents_borrowed, TCP_SNDENT_SHARED);
		give_all(s, n, others);
	}
	tcp_sndents_borrowed = borrowed0;
	sock_close(s);
}

/* Entries taken past the reserve, some given back and taken again: the counts follow, and
 * the bound holds from any point (not only from an empty queue). */
Test(tcp_sndent_share, borrowing_again_after_giving_back_keeps_the_bound)
{
	struct tcp_sock *s = sock_open();
	unsigned borrowed0 = tcp_sndents_borrowed;
	unsigned n = take_all(s, 0);
	cr_assert_eq(n, MOST);
	for (unsigned k = 0; k < 40; k++) /* 40 back: 40 can be taken again, not one more */
		tcp_sndent_free_own(s, taken[--n]);
	cr_assert_eq(tcp_sndents_borrowed - borrowed0, TCP_SNDENT_BORROW_MAX - 40);
	unsigned more = take_all(s, n);
	cr_assert_eq(more, 40);
	n += more;
	/* back below the reserve, then up to the bound again */
	while (n > TCP_SNDENT_RESERVE - 3)
		tcp_sndent_free_own(s, taken[--n]);
	cr_assert_eq(tcp_sndents_borrowed, borrowed0);
	n += take_all(s, n);
	cr_assert_eq(n, MOST);
	give_all(s, n, borrowed0);
	sock_close(s);
}

/* Entries of its reserve a socket gives back stay its own for its next ones (no pool round
 * trip: the pool's takes do not move while it reuses them), borrowed ones go back to the
 * pool; what it holds and keeps together never exceed the reserve, so the pool's objects out
 * for it are at most what they were (the reserve, or what it holds past it); the shared
 * bound holds as before; and the kept entries go back to the pool when the socket goes. */
Test(tcp_sndent_share, a_socket_keeps_the_entries_of_its_reserve_for_its_next_ones)
{
	uint64_t in_use0 = tcp_sndent_pool.in_use;
	struct tcp_sock *s = sock_open();
	unsigned borrowed0 = tcp_sndents_borrowed;

	struct tcp_sndent *e = tcp_sndent_alloc(s);
	cr_assert_not_null(e);
	memset(&e->frag, 0, sizeof(e->frag));
	e->inflight = 2;
	e->done = true;
	e->cap = TCP_SNDENT_INLINE;
	tcp_sndent_free_own(s, e);
	cr_assert_eq(s->sndents, 0);
	uint64_t allocs = tcp_sndent_pool.allocs;
	struct tcp_sndent *again = tcp_sndent_alloc(s);
	cr_assert_eq(again, e, "the entry given back is the next one");
	cr_assert_eq(tcp_sndent_pool.allocs, allocs, "not from the pool");
	cr_assert(again->inflight == 0 && !again->done && again->cap == 0 && again->sock == s &&
		  again->sock_id == s->id && again->slot == s->slot, "as tcp_sndent_init leaves an entry");
	memset(&again->frag, 0, sizeof(again->frag));
	tcp_sndent_free_own(s, again);

	for (unsigned round = 0; round < 3; round++) {
		unsigned n = take_all(s, 0);
		cr_assert_eq(n, MOST, "round %u: the reserve and the borrowing bound, exactly", round);
		cr_assert_eq(tcp_sndent_pool.in_use - in_use0, MOST, "round %u: nothing out of the pool past them", round);
		give_all(s, n, borrowed0);
		cr_assert_eq(tcp_sndent_pool.in_use - in_use0, TCP_SNDENT_RESERVE,
			     "round %u: the reserve kept, every borrowed entry back in the pool", round);
		cr_assert_eq(tcp_sndent_room(s), MOST);
	}
	/* held and kept together within the reserve, from any point */
	unsigned n = take_all(s, 0);
	while (n > TCP_SNDENT_RESERVE + 5)
		tcp_sndent_free_own(s, taken[--n]);
	while (n > 3)
		tcp_sndent_free_own(s, taken[--n]);
	cr_assert_eq(tcp_sndent_pool.in_use - in_use0, TCP_SNDENT_RESERVE);
	n += take_all(s, n);
	cr_assert_eq(n, MOST);
	cr_assert_eq(tcp_sndent_pool.in_use - in_use0, MOST);
	give_all(s, n, borrowed0);
	sock_close(s);
	cr_assert_eq(tcp_sndent_pool.in_use, in_use0, "the kept entries back with the socket");
}
