/*
 * tcp_test.h - a scripted TCP peer (10.10.0.1:PEER_PORT) for the TCP unit tests: send
 * crafted segments through the fake netdev, read back what the stack sent.
 */
#ifndef TESTS_UNIT_NET_TCP_TCP_TEST_H
#define TESTS_UNIT_NET_TCP_TCP_TEST_H

#include "tests/unit/net/net_test.h"
#include "net/tcp/tcp_internal.h"
#include "lib/poller.h"

#define PEER_PORT 40000
#define SRV_PORT 5000

static struct fake_parsed_tcp seg;  /* the last parsed segment */
static unsigned ev_count[8];
static unsigned ev_last;
static struct tcp_sock *accepted;
static const uint8_t opt_mss1460[] = { 2, 4, 0x05, 0xb4 };
static const uint8_t opt_mss1460_ws2[] = { 2, 4, 0x05, 0xb4, 1, 3, 3, 2 };
static const uint8_t opt_mss536[] = { 2, 4, 0x02, 0x18 };

static void ev_record(struct tcp_sock *s, void *ctx, unsigned ev)
{
	(void)s;
	(void)ctx;
	ev_last = ev;
	for (int i = 0; i < 8; i++)
		if (ev & (1u << i))
			ev_count[i]++;
}
static const struct tcp_ops rec_ops = { ev_record };

static void listen_ev(struct tcp_sock *l, void *ctx, unsigned ev)
{
	(void)ctx;
	if (ev & TCP_EV_ACCEPT) {
		ev_count[0]++;
		struct tcp_sock *c = tcp_accept(l);
		if (c) {
			accepted = c;
			tcp_set_ops(c, &rec_ops, NULL);
		}
	}
}
static const struct tcp_ops listen_ops = { listen_ev };

/* Releases a zero-copy send's fragments got back (a fragment owner's release that counts:
 * frag_count_release). */
static unsigned frags_released;
static inline void frag_count_release(struct netdev_frag_owner *o, uint64_t token)
{
	(void)o;
	(void)token;
	frags_released++;
}

/* Send a segment from the peer. */
static inline void peer_seg(uint8_t flags, uint32_t seq, uint32_t ack, uint16_t wnd, const void *data, size_t len,
			    const uint8_t *opts, size_t optlen)
{
	struct fake_tcp t = { .src = PEER, .dst = US, .sport = PEER_PORT, .dport = SRV_PORT, .seq = seq, .ack = ack,
			      .flags = flags, .wnd = wnd, .opts = opts, .optlen = optlen, .payload = data, .len = len };
	size_t n = fake_build_tcp(frame, &t);
	cr_assert_eq(fake_netdev_inject(&fnd, frame, n), 0);
}

/* The peer announces itself again (keeps its ARP entry fresh in long tests). */
static inline void peer_arp(void)
{
	size_t n = fake_build_arp(frame, 2, fake_peer_mac, PEER, fake_our_mac, US, fake_our_mac);
	cr_assert_eq(fake_netdev_inject(&fnd, frame, n), 0);
}

/* Advance the clock by ns, refreshing the peer's ARP entry every 30 s. */
static inline void advance_long(uint64_t ns)
{
	while (ns) {
		uint64_t step = ns < 30 * NSEC_PER_SEC ? ns : 30 * NSEC_PER_SEC;
		peer_arp();
		advance(step);
		ns -= step;
	}
}

/* Parse captured frame i into seg. */
static inline struct fake_parsed_tcp *txseg(unsigned i)
{
	cr_assert_lt(i, fnd.ntx, "frame %u not sent (%u sent)", i, fnd.ntx);
	cr_assert(fake_parse_tcp(&fnd.tx[i], &seg), "frame %u is valid TCP with good checksums", i);
	return &seg;
}

/* The last TCP frame sent (ARP requests may follow it when an entry expired). */
static inline struct fake_parsed_tcp *lastseg(void)
{
	for (unsigned i = fnd.ntx; i-- > 0;)
		if (fake_parse_tcp(&fnd.tx[i], &seg))
			return &seg;
	cr_assert_fail("no TCP frame sent");
	return NULL;
}

/* How many captured frames are TCP with the given flags (0: any). */
static inline unsigned count_tcp(uint8_t flags)
{
	struct fake_parsed_tcp p;
	unsigned n = 0;
	for (unsigned i = 0; i < fnd.ntx; i++)
		if (fake_parse_tcp(&fnd.tx[i], &p) && (!flags || p.flags == flags))
			n++;
	return n;
}

/* The n frames captured are the full segments of data (1460 bytes each) from iss + 1 on, in
 * order; the peer acknowledges them all: nothing stays queued, nothing went twice. */
static inline void sent_in_order_acked(struct tcp_sock *s, uint32_t iss, unsigned n, const uint8_t *data)
{
	struct tcp_info i;

	cr_assert_eq(fnd.ntx, n);
	for (unsigned k = 0; k < n; k++) {
		cr_assert_eq(txseg(k)->seq, iss + 1 + k * 1460, "segment %u in order", k);
		cr_assert_eq(memcmp(txseg(k)->payload, data + k * 1460, 1460), 0);
	}
	peer_seg(TCP_ACK, 1001, iss + 1 + n * 1460, 65535, NULL, 0, NULL, 0);
	tcp_get_info(s, &i);
	cr_assert_eq(i.sndq_bytes, 0);
	cr_assert_eq(i.retransmits, 0, "nothing sent twice");
}

/* Take every queued byte of s as the NVMe/TCP target does (its fragments, released).
 * Returns the bytes taken. */
static inline size_t drain_frags(struct tcp_sock *s)
{
	struct netdev_frag f[64];
	size_t total = 0;
	int n;
	while ((n = tcp_recv_frags(s, f, 64, SIZE_MAX)) > 0)
		for (int i = 0; i < n; i++) {
			total += f[i].len;
			netdev_frag_release(&f[i]);
		}
	return total;
}

/* Passive open on SRV_PORT from a peer with initial sequence piss. Returns our ISS. */
static inline uint32_t open_passive(struct tcp_sock **l, uint32_t piss, uint16_t wnd, const uint8_t *opts,
				    size_t optlen)
{
	cr_assert_eq(tcp_listen(SRV_PORT, 8, &listen_ops, NULL, l), 0);
	peer_seg(TCP_SYN, piss, 0, wnd, NULL, 0, opts, optlen);
	cr_assert_eq(fnd.ntx, 1);
	struct fake_parsed_tcp *s = txseg(0);
	cr_assert_eq(s->flags, TCP_SYN | TCP_ACK);
	cr_assert_eq(s->ack, piss + 1);
	uint32_t iss = s->seq;
	peer_seg(TCP_ACK, piss + 1, iss + 1, wnd, NULL, 0, NULL, 0);
	cr_assert_not_null(accepted);
	cr_assert_eq(tcp_state(accepted), TCP_ESTABLISHED);
	fake_netdev_clear(&fnd);
	return iss;
}

/* One pass of the poll loop's pollers (tcp_tx: turns for the sockets waiting for transmit
 * ring room, held tails). Returns the progress they report. */
static inline unsigned poll_pass(void)
{
	const struct poller *p;
	unsigned progress = 0;
	LINKER_SET_FOREACH(pollers, p) {
		int rc = p->poll(64);
		progress += rc > 0 ? (unsigned)rc : 0;
	}
	return progress;
}

static inline void close_listener(struct tcp_sock *l)
{
	tcp_close(l);
}

#endif
