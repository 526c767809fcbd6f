/*
 * net.c - the stack's setup, configuration, checksums and Ethernet layer.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "../lib/ipv4_text.h"
#include "../lib/log.h"
#include "net_internal.h"

LOG_MODULE_DEFINE(net);

#define NET_NETBUFS 1024

struct net_if net_if0 = { NULL, NET_DEFAULT_ADDR, NET_DEFAULT_NETMASK, NET_DEFAULT_GATEWAY, 1, NET_RX_SRC_NONE };
struct net_stats net_counters;
static bool net_ready;

/* --- Ethernet receive ---------------------------------------------------------------- */

static const uint8_t eth_broadcast[ETH_ALEN] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };

/* Is the 6-byte address at a equal to b? (Two loads each: no library call per frame.) */
static inline bool eth_addr_eq(const uint8_t *a, const uint8_t *b)
{
	uint32_t a4, b4;
	uint16_t a2, b2;
	memcpy(&a4, a, 4);
	memcpy(&b4, b, 4);
	memcpy(&a2, a + 4, 2);
	memcpy(&b2, b + 4, 2);
	return a4 == b4 && a2 == b2;
}

/* A frame from the device (net_stack_rx's only callee: inline there). Consumes nb. */
static inline void eth_rx(struct netdev *dev, struct netbuf *nb)
{
	const uint8_t *eh = nb->data;
	uint16_t type;

	net_counters.eth_rx++;
	if (netbuf_host_len(nb) < sizeof(struct eth_hdr)) {
		net_counters.eth_short++;
		goto drop;
	}
	/* Parsed where it lies (the host part holds it, checked above): destination, type. */
	if (!eth_addr_eq(eh + offsetof(struct eth_hdr, dst), dev->mac) &&
	    !eth_addr_eq(eh + offsetof(struct eth_hdr, dst), eth_broadcast)) {
		net_counters.eth_not_for_us++;
		goto drop;
	}
	type = be16_load(eh + offsetof(struct eth_hdr, type));
	nb->data += sizeof(struct eth_hdr);
	switch (type) {
	case ETH_TYPE_IPV4:
		ipv4_rx(nb);
		return;
	case ETH_TYPE_ARP:
		arp_rx(nb);
		return;
	default:
		net_counters.eth_unknown_type++;
		break;
	}
drop:
	netbuf_free(nb);
}

/* Frames net_stack_rx took straight to tcp_rx: each counts in eth_rx and ip_rx, which
 * net_stats() brings up to date (one addition per frame instead of two). */
uint64_t net_rx_fast_frames;

/* net_stack_rx for what its common case leaves: the device adopted or refused, then the
 * Ethernet layer (eth_rx) and IPv4 (ipv4_rx) from the start, every check and counter as
 * they always were. Consumes nb. */
static __attribute__((noinline)) void net_stack_rx_slow(struct netdev *dev, struct netbuf *nb)
{
	if (!net_if0.dev) {
		net_if0.dev = dev;
		net_route_changed();
	}
	if (dev != net_if0.dev) {
		dev->stats.rx_dropped++;
		netbuf_free(nb);
		return;
	}
	eth_rx(dev, nb);
}

/* net_stack_rx's common case with Ethernet padding behind the datagram (every frame shorter
 * than the 60-byte minimum: a pure ACK): the datagram (total bytes from nb's data, at the
 * IPv4 header) is all in the host part; the padding is its tail or, split off, its
 * fragments, released here. Out of line, so that the common case calls nothing but
 * tcp_rx, last. Consumes nb. */
static __attribute__((noinline)) void net_rx_trim(struct netbuf *nb, uint32_t src, uint32_t dst, size_t total)
{
	unsigned n = nb->nfrags;

	nb->tail = nb->data + total;
	nb->data += IPV4_HLEN_MIN;
	nb->nfrags = 0;
	net_rx_fast_frames++;
	/* (the slots past nfrags, 0 now, are never read: released as they are) */
	if (n == 1) { /* the split's one data buffer: every short frame's */
		struct netdev_frag_owner *o = nb->frags[0].owner;
		if (o)
			o->release(o, nb->frags[0].token);
	} else {
		for (unsigned i = 0; i < n; i++) {
			struct netdev_frag_owner *o = nb->frags[i].owner;
			if (o)
				o->release(o, nb->frags[i].token);
		}
	}
	tcp_rx(nb, src, dst, total - IPV4_HLEN_MIN);
}

/* The bytes of an Ethernet + IPv4 header net_stack_rx's common case reads, loaded as
 * little-endian words from the frame's start: word 1 (bytes 8..15) holds the source MAC's
 * last 4 bytes, the EtherType (bytes 12-13) and the IPv4 version/IHL and TOS (14-15);
 * word 2 (bytes 16..23) the total length (16-17), the identification (18-19), the
 * flags/fragment offset (20-21), the TTL (22) and the protocol (23). */
#define NET_RX_W1_MASK (0xffffull << 32 | 0xffull << 48)           /* type, version/IHL */
#define NET_RX_W1_WANT (0x0008ull << 32 | 0x45ull << 48)           /* 0x0800 big-endian, 0x45 */
#define NET_RX_W2_MASK (0x3full << 32 | 0xffull << 40 | 0xffull << 56) /* MF, fragment offset, protocol */
#define NET_RX_W2_WANT ((uint64_t)IP_PROTO_TCP << 56)

/* A frame from the device. The common case, an Ethernet frame to our MAC carrying an IPv4
 * TCP datagram to our address (no options, not a fragment, the header checksum verified
 * by the NIC: NETBUF_RX_L3_CSUM_OK and not _BAD) from the source ipv4_rx last found good
 * (net_if0.rx_src_ok; NET_RX_SRC_NONE, the limited broadcast, never passes), its total
 * length the frame's or, Ethernet padding behind it, within the host part: eth_rx's and
 * ipv4_rx's checks made here on locals loaded once, the padding cut, and straight to
 * tcp_rx (a tail call) with the counters eth_rx and ip_rx take. Anything else, a refusal included, goes to net_stack_rx_slow, which looks again
 * from the start and counts what it drops. TCP's own checks (the header, its checksum
 * verdict) stay tcp_rx's. Consumes nb. */
void net_stack_rx_ip(struct netdev *dev, struct netbuf *nb)
{
	const uint8_t *h = nb->data;
	size_t host = netbuf_host_len(nb), total;
	uint64_t w1, w2;
	uint32_t src, dst;

	if (__builtin_expect(dev != net_if0.dev || host < ETH_HLEN + IPV4_HLEN_MIN ||
				     (nb->flags & (NETBUF_RX_L3_CSUM_OK | NETBUF_RX_L3_CSUM_BAD)) != NETBUF_RX_L3_CSUM_OK,
			     0))
		goto slow;
	w1 = le64_load(h + 8);
	w2 = le64_load(h + 16);
	src = be32_load(h + ETH_HLEN + offsetof(struct ipv4_hdr, src));
	dst = be32_load(h + ETH_HLEN + offsetof(struct ipv4_hdr, dst));
	if (!eth_addr_eq(h + offsetof(struct eth_hdr, dst), dev->mac) || (w1 & NET_RX_W1_MASK) != NET_RX_W1_WANT ||
	    (w2 & NET_RX_W2_MASK) != NET_RX_W2_WANT || dst != net_if0.addr || src != net_if0.rx_src_ok ||
	    src == NET_RX_SRC_NONE)
		goto slow;
	total = (size_t)__builtin_bswap16((uint16_t)w2);
	host -= ETH_HLEN;
	if (total != host || nb->nfrags) {
		/* The datagram runs into one fragment exactly (a split data segment), or is all
		 * in the host part with Ethernet padding behind it (a short frame: the padding
		 * is the host part's tail or, split off, its fragments: cut out of line).
		 * Anything else (more fragments, a length past the frame or below the header)
		 * is the slow path's. */
		if (total <= host) {
			if (total < IPV4_HLEN_MIN)
				goto slow;
			nb->data = (uint8_t *)h + ETH_HLEN;
			return net_rx_trim(nb, src, dst, total);
		}
		if (nb->nfrags != 1 || total - host != nb->frags[0].len)
			goto slow;
	}
	net_rx_fast_frames++;
	nb->data = (uint8_t *)h + ETH_HLEN + IPV4_HLEN_MIN;
	return tcp_rx(nb, src, dst, total - IPV4_HLEN_MIN);
slow:
	net_stack_rx_slow(dev, nb);
}

/* A frame from the device. While a TCP connection receives (a batch gathers its segments,
 * or its segment was the last), TCP's flow match first: a data segment to tcp_rx_flow (while
 * a batch gathers: it tests the frame's shape itself and passes any other to
 * net_stack_rx_flow) or, while none gathers, to tcp_rx_flow_first (likewise): there a data
 * segment that fails their tests goes to tcp_rx_flow_any, a segment without data (a pure
 * ACK) of the last segment's connection to tcp_rx_flow_bare, each taking it past every
 * layer's checks in one go or passing it on to net_stack_rx_ip, which takes every other
 * frame. (Each a jump.) Consumes nb. */
static inline __attribute__((always_inline)) void stack_rx_flow(struct netdev *dev, struct netbuf *nb)
{
	int shape = tcp_rx_flow_shape(nb);
	if (shape == 1)
		return tcp_rx_flow_any(dev, nb);
	if (shape == 2 && tcp_rx_last)
		return tcp_rx_flow_bare(dev, nb);
	net_stack_rx_ip(dev, nb);
}

/* net_stack_rx's dispatch by the frame's shape (net_internal.h). */
void net_stack_rx_flow(struct netdev *dev, struct netbuf *nb)
{
	stack_rx_flow(dev, nb);
}

static void net_stack_rx(struct netdev *dev, struct netbuf *nb)
{
	if (tcp_rx_gro)
		return tcp_rx_flow(dev, nb); /* (tests the frame's shape itself) */
	if (tcp_rx_last)
		return tcp_rx_flow_first(dev, nb); /* (the same, for a batch's first frame) */
	net_stack_rx_ip(dev, nb);
}

/* The end of a device's receive batch: TCP hands over what it gathered (tcp_rx_flush). */
static void net_stack_rx_end(struct netdev *dev)
{
	(void)dev;
	tcp_rx_flush();
}

/* Pools, then attach. */
int net_init(void)
{
	int rc;

	if (net_ready)
		return 0;
	memset(&net_counters, 0, sizeof(net_counters));
	net_rx_fast_frames = 0;
	if ((rc = netbuf_pool_init(NET_NETBUFS)))
		return rc;
	if ((rc = arp_init()))
		goto err_netbuf;
	if ((rc = udp_init()))
		goto err_arp;
	if ((rc = tcp_init()))
		goto err_udp;
	net_if0.dev = netdev_first();
	net_route_changed();
	netdev_set_stack_rx(net_stack_rx);
	netdev_set_stack_rx_end(net_stack_rx_end);
	net_ready = true;
	return 0;

err_udp:
	udp_shutdown();
err_arp:
	arp_shutdown();
err_netbuf:
	netbuf_pool_destroy();
	return rc;
}

/* Tear down (tests). */
int net_shutdown(void)
{
	int rc;
	if (!net_ready)
		return 0;
	netdev_set_stack_rx(NULL);
	netdev_set_stack_rx_end(NULL);
	if ((rc = tcp_shutdown()) || (rc = udp_shutdown()))
		return rc;
	arp_shutdown();
	if ((rc = netbuf_pool_destroy()))
		return rc;
	net_if0.dev = NULL;
	net_if0.addr = NET_DEFAULT_ADDR;
	net_if0.netmask = NET_DEFAULT_NETMASK;
	net_if0.gateway = NET_DEFAULT_GATEWAY;
	net_route_changed();
	net_ready = false;
	return 0;
}

/* Defaults. */
void net_config_default(struct net_config *c)
{
	c->addr = NET_DEFAULT_ADDR;
	c->netmask = NET_DEFAULT_NETMASK;
	c->gateway = NET_DEFAULT_GATEWAY;
	c->mtu = 0;
}

/* A netmask is contiguous ones from the top. */
static bool netmask_ok(uint32_t m)
{
	return m != 0 && ((~m + 1) & ~m) == 0;
}

/* Apply. */
int net_configure(const struct net_config *c)
{
	char a[16], m[16], g[16];
	int rc;

	if (!netmask_ok(c->netmask) || c->addr == 0 || (c->addr & ~c->netmask) == 0 ||
	    (c->addr | c->netmask) == 0xffffffffu || (c->addr >> 24) == 127 || (c->addr >> 28) >= 14)
		return -EINVAL;
	if (c->gateway && (c->gateway & c->netmask) != (c->addr & c->netmask))
		return -EINVAL;
	if (c->mtu && net_if0.dev && (rc = netdev_set_mtu(net_if0.dev, c->mtu)))
		return rc;
	net_if0.addr = c->addr;
	net_if0.netmask = c->netmask;
	net_if0.gateway = c->gateway;
	net_route_changed(); /* connections rebuild their routes */
	log_info("address %s netmask %s gateway %s", net_format_ipv4(c->addr, a), net_format_ipv4(c->netmask, m),
		 c->gateway ? net_format_ipv4(c->gateway, g) : "none");
	return 0;
}

/* Read back. */
void net_config_get(struct net_config *c)
{
	c->addr = net_if0.addr;
	c->netmask = net_if0.netmask;
	c->gateway = net_if0.gateway;
	c->mtu = net_if0.dev ? net_if0.dev->mtu : 0;
}

/* Dotted quad: the one parser in lib/. */
int net_parse_ipv4(const char *text, uint32_t *out)
{
	return ipv4_parse(text, out);
}

char *net_format_ipv4(uint32_t addr, char *buf)
{
	snprintf(buf, 16, "%u.%u.%u.%u", addr >> 24, (addr >> 16) & 255, (addr >> 8) & 255, addr & 255);
	return buf;
}

const struct net_stats *net_stats(void)
{
	net_counters.eth_rx += net_rx_fast_frames;
	net_counters.ip_rx += net_rx_fast_frames;
	net_rx_fast_frames = 0;
	return &net_counters;
}

/* --- checksums (RFC 1071) ---------------------------------------------------------- */

uint32_t net_csum_add(uint32_t sum, const void *p, size_t len, bool odd)
{
	const uint8_t *b = p;
	uint64_t acc = 0;
	size_t i = 0;

	if (odd && len) {
		acc += b[0];
		i = 1;
	}
	/* Four bytes at a time: w1 * 2^16 + w2 is w1 + w2 modulo 0xffff, which is all a
	 * ones' complement sum keeps (the folds below). */
	for (; i + 3 < len; i += 4)
		acc += be32_load(b + i);
	for (; i + 1 < len; i += 2)
		acc += (uint32_t)b[i] << 8 | b[i + 1];
	if (i < len)
		acc += (uint32_t)b[i] << 8;
	while (acc >> 16)
		acc = (acc & 0xffff) + (acc >> 16);
	acc += sum;
	while (acc >> 16)
		acc = (acc & 0xffff) + (acc >> 16);
	return (uint32_t)acc;
}

int net_csum_netbuf(const struct netbuf *nb, size_t off, size_t len, uint32_t *sum)
{
	uint8_t chunk[256];
	size_t done = 0;
	int rc;

	while (done < len) {
		size_t n = len - done < sizeof(chunk) ? len - done : sizeof(chunk);
		if ((rc = netbuf_copy_out(nb, off + done, chunk, n)))
			return rc;
		*sum = net_csum_add(*sum, chunk, n, done & 1);
		done += n;
	}
	net_counters.l4_sw_csum_bytes += len;
	return 0;
}

int net_l4_csum_tx_sw(struct netbuf *nb, uint32_t src, uint32_t dst, uint8_t proto, size_t len, uint16_t field_off)
{
	uint32_t sum = net_csum_pseudo(src, dst, proto, (uint32_t)len);
	uint8_t *field = nb->data + field_off;
	int rc;

	field[0] = field[1] = 0;
	if ((rc = net_csum_netbuf(nb, 0, len, &sum)))
		return rc;
	uint16_t c = (uint16_t)~net_csum_fold(sum);
	if (c == 0 && proto == IP_PROTO_UDP)
		c = 0xffff;
	field[0] = (uint8_t)(c >> 8);
	field[1] = (uint8_t)c;
	return 0;
}

bool net_l4_csum_rx_sw(const struct netbuf *nb, uint32_t src, uint32_t dst, uint8_t proto, size_t len)
{
	uint32_t sum;

	sum = net_csum_pseudo(src, dst, proto, (uint32_t)len);
	if (net_csum_netbuf(nb, 0, len, &sum))
		return false;
	return net_csum_fold(sum) == 0xffff;
}

/* --- Ethernet send -------------------------------------------------------------------- */

int eth_output(struct netbuf *nb, const uint8_t dst_mac[ETH_ALEN], uint16_t type)
{
	struct netdev *dev = net_if0.dev;
	struct eth_hdr *eh;
	int rc;

	if (!dev)
		return -ENETDOWN;
	if (!(eh = netbuf_push(nb, sizeof(*eh))))
		return -ENOSPC;
	memcpy(eh->dst, dst_mac, ETH_ALEN);
	memcpy(eh->src, dev->mac, ETH_ALEN);
	eh->type = be16_make(type);
	if ((rc = netdev_tx(dev, nb)))
		return rc;
	net_counters.eth_tx++;
	return 0;
}
