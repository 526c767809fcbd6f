/*
 * ipv4.c - IPv4 (RFC 791) receive and send, and ICMP echo (RFC 792).
 *
 * Receive checks, in order: version 4, IHL >= 5, header inside the frame, header
 * checksum (the NIC's verdict or software), total length inside the frame (trailing
 * Ethernet padding is cut), destination ours or broadcast, source a unicast address
 * that is not ours (ipv4_src_ok). Fragments (MF set or a
 * non-zero offset) are dropped and counted: see net.h for why. The common case (TCP or UDP
 * to us, no options, the NIC's checksum verdict, a source seen good before) runs the same
 * checks in ipv4_rx straight through; everything else, refusals too, in ipv4_rx_slow.
 * Send: DF set, TTL 64, one identification counter, the route is the local subnet or the
 * gateway.
 */
#include <errno.h>
#include <string.h>
#include "../lib/log.h"
#include "net_internal.h"

LOG_MODULE_USE(net);

#define IPV4_TTL 64
#define ICMP_ECHO_MAX (NETBUF_HOST_SIZE - NETBUF_HEADROOM - sizeof(struct icmp_echo))

uint16_t ipv4_ident;
static void (*echo_reply_hook)(uint32_t src, uint16_t id, uint16_t seq, size_t len);

/* RFC 1122 3.2.1.3 and RFC 1812 5.3.7: a source must name one other host. Broadcast
 * (limited or our subnet's), multicast (224/4), reserved (240/4), loopback (127/8), "this
 * network" (0/8) and our own address are spoofed or misconfigured: answering them (a RST,
 * an echo reply) would reflect to a subnet or to ourselves. 0.0.0.0 itself is allowed
 * only in a UDP broadcast (a host asking for its address, as in DHCP). */
static bool ipv4_src_ok(uint32_t src, uint32_t dst, uint8_t proto)
{
	uint8_t top = (uint8_t)(src >> 24);
	if (src == 0)
		return proto == IP_PROTO_UDP && net_addr_is_broadcast(dst);
	if (top == 0 || top == 127 || top >= 224)
		return false;
	return !net_addr_is_broadcast(src) && !net_addr_is_local(src);
}

/* Every datagram ipv4_rx's common case does not take: the checks in the order of the file's
 * comment, each refusal counted. Consumes nb (ip_rx already counted). */
static __attribute__((noinline)) void ipv4_rx_slow(struct netbuf *nb)
{
	struct ipv4_hdr ih;
	size_t host = netbuf_host_len(nb);
	size_t frame = nb->nfrags ? host + netbuf_frag_len(nb) : host;
	size_t hlen, total;
	uint32_t src, dst;
	uint16_t ff;
	int rc = 0;

	/* The header into a local: straight from the host part where the NIC put it (every
	 * split does), through the fragments otherwise. */
	if (host >= sizeof(ih))
		memcpy(&ih, nb->data, sizeof(ih));
	else
		rc = netbuf_copy_out(nb, 0, &ih, sizeof(ih));
	if (rc || (ih.ver_ihl >> 4) != 4) {
		net_counters.ip_bad_header++;
		goto drop;
	}
	hlen = (size_t)(ih.ver_ihl & 0x0f) * 4;
	total = be16_get(ih.total_length);
	if (hlen < IPV4_HLEN_MIN || hlen > frame || total < hlen || total > frame) {
		net_counters.ip_bad_header++;
		goto drop;
	}
	if (nb->flags & NETBUF_RX_L3_CSUM_BAD) {
		net_counters.ip_bad_checksum++;
		goto drop;
	}
	if (!(nb->flags & NETBUF_RX_L3_CSUM_OK)) {
		uint8_t hdr[60];
		if (netbuf_copy_out(nb, 0, hdr, hlen) || net_csum_fold(net_csum_add(0, hdr, hlen, false)) != 0xffff) {
			net_counters.ip_bad_checksum++;
			goto drop;
		}
	}
	src = be32_get(ih.src);
	dst = be32_get(ih.dst);
	if (!net_addr_is_local(dst) && !net_addr_is_broadcast(dst)) {
		net_counters.ip_not_for_us++;
		goto drop;
	}
	if (!ipv4_src_ok(src, dst, ih.protocol)) {
		net_counters.ip_bad_src++;
		goto drop;
	}
	if (dst == net_if0.addr && src != 0)
		net_if0.rx_src_ok = src; /* ipv4_rx lets it through from now on */
	ff = be16_get(ih.flags_fragoff);
	if ((ff & IPV4_FLAG_MF) || (ff & IPV4_FRAG_OFFSET_MASK)) {
		static uint32_t warned_src;
		net_counters.ip_frag_dropped++;
		if (src != warned_src) {
			/* Once per sender in a row: the console names the trap, the counter counts it. */
			char a[16];
			warned_src = src;
			log_warn("dropping IPv4 fragments from %s (not reassembled, ip frag-dropped counts them); a Linux "
				 "peer on QEMU before 8.0 with TSO on sends them: ethtool -K <dev> tso off there",
				 net_format_ipv4(src, a));
		}
		goto drop;
	}
	/* Cut Ethernet padding, then the header. A short frame's datagram is all in the host
	 * part (the NIC split it after the TCP header): the padding is its tail or, split
	 * off, its fragments. */
	if (total < frame) {
		if (total <= host) {
			nb->tail = nb->data + total;
			for (unsigned i = 0; i < nb->nfrags; i++)
				netdev_frag_release(&nb->frags[i]);
			nb->nfrags = 0;
		} else {
			netbuf_trim(nb, total);
		}
	}
	netbuf_pull(nb, hlen);
	switch (ih.protocol) {
	case IP_PROTO_TCP:
		if (net_addr_is_broadcast(dst))
			goto drop;
		tcp_rx(nb, src, dst, total - hlen);
		return;
	case IP_PROTO_UDP:
		udp_rx(nb, src, dst);
		return;
	case IP_PROTO_ICMP:
		icmp_rx(nb, src, dst);
		return;
	default:
		net_counters.ip_unknown_proto++;
		break;
	}
drop:
	netbuf_free(nb);
}

/* ipv4_rx's common case with Ethernet padding behind the datagram (every frame shorter than
 * the 60-byte minimum, a pure ACK): cut it, as ipv4_rx_slow does, and deliver. A short
 * frame's datagram is all in the host part (the NIC split it after the TCP header): the
 * padding is its tail or, split off, its fragments. Consumes nb. */
static __attribute__((noinline)) void ipv4_rx_trim(struct netbuf *nb, uint32_t src, uint32_t dst, size_t total,
						  uint8_t proto)
{
	if (total <= netbuf_host_len(nb)) {
		unsigned n = nb->nfrags;
		nb->tail = nb->data + total;
		nb->nfrags = 0;
		for (unsigned i = 0; i < n; i++) {
			struct netdev_frag_owner *o = nb->frags[i].owner;
			if (o)
				o->release(o, nb->frags[i].token);
		}
	} else {
		netbuf_trim(nb, total);
	}
	nb->data += IPV4_HLEN_MIN;
	if (proto == IP_PROTO_TCP)
		tcp_rx(nb, src, dst, total - IPV4_HLEN_MIN);
	else
		udp_rx(nb, src, dst);
}

/* ipv4_rx's 8 bytes from the header's start (version/IHL, TOS, total length,
 * identification, flags/fragment offset), loaded as little-endian: the bits that must be
 * 0x45 (version 4, IHL 5: no options) and 0 (MF, fragment offset; RFC 791's flags word is
 * big-endian: its high byte is byte 6, its low byte byte 7). */
#define IPV4_RX_FAST_MASK (0xffull | 0x3full << 48 | 0xffull << 56)
#define IPV4_RX_FAST_WANT 0x45ull

/* The common case straight through: a TCP or UDP datagram without options or fragmentation,
 * its header whole in the host part with a checksum the NIC verified (NETBUF_RX_L3_CSUM_OK
 * and not _BAD), to our address from a good source, its total length within the frame.
 * The fields are loaded from the host part into locals, each once, and checked as
 * ipv4_rx_slow checks them; anything else, a refusal included, goes to ipv4_rx_slow, which
 * looks again from the start and counts what it drops. No call but the last, so that
 * nothing is saved and restored around it.
 * - Our address is never a broadcast (net_configure refuses one that is its subnet's, which
 *   also rules out /31 and /32, and DHCP's 0.0.0.0/0 meanwhile is not one), so a datagram to
 *   it is unicast: TCP's broadcast test is passed.
 * - The source: the last one ipv4_rx_slow found good for a datagram to us
 *   (net_if0.rx_src_ok); a new one is ipv4_rx_slow's to check (and remember). */
void ipv4_rx(struct netbuf *nb)
{
	const uint8_t *h = nb->data;
	size_t host = netbuf_host_len(nb);

	net_counters.ip_rx++;
	if (__builtin_expect(host >= IPV4_HLEN_MIN, 1) &&
	    (nb->flags & (NETBUF_RX_L3_CSUM_OK | NETBUF_RX_L3_CSUM_BAD)) == NETBUF_RX_L3_CSUM_OK) {
		uint64_t w0 = le64_load(h);
		uint32_t src = be32_load(h + offsetof(struct ipv4_hdr, src));
		uint32_t dst = be32_load(h + offsetof(struct ipv4_hdr, dst));
		uint8_t proto = h[offsetof(struct ipv4_hdr, protocol)];
		size_t total = be16_load(h + offsetof(struct ipv4_hdr, total_length));

		if ((w0 & IPV4_RX_FAST_MASK) != IPV4_RX_FAST_WANT || dst != net_if0.addr ||
		    (proto != IP_PROTO_TCP && proto != IP_PROTO_UDP))
			goto slow;
		/* (NET_RX_SRC_NONE, the limited broadcast, is none: such a source is the slow
		 * path's to refuse) */
		if (__builtin_expect(src != net_if0.rx_src_ok || src == NET_RX_SRC_NONE, 0))
			goto slow;
		/* Exactly the frame; padding is cut out of line; a datagram longer than the frame
		 * (or shorter than its header) is ipv4_rx_slow's to count. */
		if (total > host) {
			size_t frame = host + (__builtin_expect(nb->nfrags == 1, 1) ? nb->frags[0].len : netbuf_frag_len(nb));
			if (total > frame)
				goto slow;
			if (total < frame)
				return ipv4_rx_trim(nb, src, dst, total, proto);
		} else if (total < host || nb->nfrags) {
			if (total < IPV4_HLEN_MIN)
				goto slow;
			return ipv4_rx_trim(nb, src, dst, total, proto);
		}
		nb->data += IPV4_HLEN_MIN;
		if (proto == IP_PROTO_TCP)
			return tcp_rx(nb, src, dst, total - IPV4_HLEN_MIN);
		return udp_rx(nb, src, dst);
	}
slow:
	ipv4_rx_slow(nb);
}

uint16_t ipv4_next_ident(void)
{
	return ipv4_ident;
}

/* The next hop towards dst: dst itself on the local subnet (or a broadcast), else the
 * gateway. -ENETUNREACH when there is none. */
static int ipv4_next_hop(uint32_t dst, uint32_t *next_hop)
{
	if (net_addr_is_broadcast(dst) || (dst & net_if0.netmask) == (net_if0.addr & net_if0.netmask)) {
		*next_hop = dst;
		return 0;
	}
	if (net_if0.gateway) {
		*next_hop = net_if0.gateway;
		return 0;
	}
	return -ENETUNREACH;
}

/* Does nb (data at the L4 header, len bytes) fit the device's MTU, per segment when the
 * device segments it? 0 or -EMSGSIZE. */
static inline int ipv4_fits(const struct netbuf *nb, const struct netdev *dev, size_t len)
{
	if (nb->flags & NETBUF_TX_TSO) {
		/* Segmentation offload: each segment (headers + gso_size) must fit the MTU, the
		 * whole frame an IPv4 datagram. */
		unsigned l4hdr = netbuf_tso_hdr_len(nb);
		if (!l4hdr || l4hdr + nb->gso_size + IPV4_HLEN_MIN > dev->mtu || len + IPV4_HLEN_MIN > 0xffff)
			return -EMSGSIZE;
	} else if (len + IPV4_HLEN_MIN > dev->mtu) {
		return -EMSGSIZE;
	}
	return 0;
}

/* The identification of nb's datagram; the counter moves on by the datagrams it
 * becomes (the device numbers each segment of a TSO frame). */
static inline uint16_t ipv4_take_ident(const struct netbuf *nb)
{
	uint16_t ident = ipv4_ident;
	ipv4_ident = (uint16_t)(ipv4_ident + (nb->flags & NETBUF_TX_TSO ? netbuf_tso_segs(nb) : 1));
	return ident;
}

int ipv4_output(struct netbuf *nb, uint32_t src, uint32_t dst, uint8_t proto)
{
	size_t len = netbuf_host_len(nb) + netbuf_frag_len(nb);
	struct ipv4_hdr *ih;
	uint32_t next_hop;
	uint16_t c;
	int rc;

	if (!net_if0.dev) {
		rc = -ENETDOWN;
		goto drop;
	}
	if ((rc = ipv4_fits(nb, net_if0.dev, len)))
		goto drop;
	if ((rc = ipv4_next_hop(dst, &next_hop))) {
		net_counters.ip_no_route++;
		goto drop;
	}
	if (!(ih = netbuf_push(nb, sizeof(*ih)))) {
		rc = -ENOSPC;
		goto drop;
	}
	uint16_t total = (uint16_t)(len + sizeof(*ih)), ident = ipv4_take_ident(nb);
	ih->ver_ihl = 0x45;
	ih->tos = 0;
	ih->total_length = be16_make(total);
	ih->identification = be16_make(ident);
	ih->flags_fragoff = be16_make(IPV4_FLAG_DF);
	ih->ttl = IPV4_TTL;
	ih->protocol = proto;
	ih->src = be32_make(src);
	ih->dst = be32_make(dst);
	/* RFC 1071 over the header's ten 16-bit words, from the values just written (the
	 * checksum word counts as 0): no pass over the bytes. */
	uint32_t sum = 0x4500u + total + ident + IPV4_FLAG_DF + ((uint32_t)IPV4_TTL << 8 | proto) + (src >> 16) +
		       (src & 0xffff) + (dst >> 16) + (dst & 0xffff);
	c = (uint16_t)~net_csum_fold(sum);
	ih->header_checksum = be16_make(c);
	net_counters.ip_tx++;
	return arp_output(nb, next_hop);

drop:
	netbuf_free(nb);
	return rc;
}

/* Build rt for src -> dst (proto): the headers ipv4_output and eth_output would write,
 * but for the length, identification and checksum. false when the next hop is not
 * resolved (or there is no route or device): the frame takes ipv4_output. */
static __attribute__((noinline)) bool ipv4_route_build(struct net_route *rt, uint32_t src, uint32_t dst,
							 uint8_t proto)
{
	const struct netdev *dev = net_if0.dev;
	uint8_t mac[ETH_ALEN];
	uint32_t next_hop;
	struct eth_hdr eh;
	struct ipv4_hdr ih;

	rt->gen = 0;
	if (!dev || net_addr_is_broadcast(dst) || ipv4_next_hop(dst, &next_hop) || !arp_lookup(next_hop, mac))
		return false;
	memcpy(eh.dst, mac, ETH_ALEN);
	memcpy(eh.src, dev->mac, ETH_ALEN);
	eh.type = be16_make(ETH_TYPE_IPV4);
	memset(&ih, 0, sizeof(ih));
	ih.ver_ihl = 0x45;
	ih.flags_fragoff = be16_make(IPV4_FLAG_DF);
	ih.ttl = IPV4_TTL;
	ih.protocol = proto;
	ih.src = be32_make(src);
	ih.dst = be32_make(dst);
	memcpy(rt->hdr, &eh, sizeof(eh));
	memcpy(rt->hdr + sizeof(eh), &ih, sizeof(ih));
	rt->ip_sum = 0x4500u + IPV4_FLAG_DF + ((uint32_t)IPV4_TTL << 8 | proto) + (src >> 16) + (src & 0xffff) +
		     (dst >> 16) + (dst & 0xffff);
	rt->src = src;
	rt->dst = dst;
	rt->proto = proto;
	rt->gen = net_if0.route_gen;
	return true;
}

int ipv4_output_route_slow(struct netbuf *nb, size_t len, struct net_route *rt, uint32_t src, uint32_t dst,
			   uint8_t proto)
{
	struct netdev *dev = net_if0.dev;
	uint8_t *h;
	int rc;

	if ((rt->gen != net_if0.route_gen || rt->dst != dst || rt->src != src || rt->proto != proto) &&
	    !ipv4_route_build(rt, src, dst, proto))
		return ipv4_output(nb, src, dst, proto);
	if ((rc = ipv4_fits(nb, dev, len)) || (rc = -ENOSPC, !(h = netbuf_push(nb, sizeof(rt->hdr))))) {
		netbuf_free(nb);
		return rc;
	}
	/* What ipv4_output, arp_output and eth_output write, from the template. */
	return ipv4_route_send(dev, nb, rt, h, len, ipv4_take_ident(nb));
}

/* --- ICMP -------------------------------------------------------------------------- */

void icmp_rx(struct netbuf *nb, uint32_t src, uint32_t dst)
{
	size_t len = netbuf_host_len(nb) + netbuf_frag_len(nb);
	struct icmp_echo eh;
	struct netbuf *reply = NULL;
	uint32_t sum = 0;

	net_counters.icmp_rx++;
	/* ICMP has no offloaded checksum: the CPU sums it (counted when in device memory). */
	if (netbuf_copy_out(nb, 0, &eh, sizeof(eh)) || net_csum_netbuf(nb, 0, len, &sum) ||
	    net_csum_fold(sum) != 0xffff) {
		net_counters.icmp_bad++;
		goto out;
	}
	if (eh.type == ICMP_ECHO_REPLY && eh.code == 0) {
		net_counters.icmp_echo_replies_rx++;
		if (echo_reply_hook)
			echo_reply_hook(src, be16_get(eh.identifier), be16_get(eh.sequence), len - sizeof(eh));
		goto out;
	}
	if (eh.type != ICMP_ECHO_REQUEST || eh.code != 0 || net_addr_is_broadcast(dst))
		goto out;
	net_counters.icmp_echo_requests++;
	if (len - sizeof(eh) > ICMP_ECHO_MAX || !(reply = netbuf_alloc(NETBUF_HEADROOM))) {
		net_counters.ip_tx_nobuf++;
		goto out;
	}
	uint8_t *p = netbuf_put(reply, len);
	if (netbuf_copy_out(nb, 0, p, len)) {
		netbuf_free(reply);
		goto out;
	}
	p[0] = ICMP_ECHO_REPLY;
	p[2] = p[3] = 0;
	uint16_t c = (uint16_t)~net_csum_fold(net_csum_add(0, p, len, false));
	p[2] = (uint8_t)(c >> 8);
	p[3] = (uint8_t)c;
	if (ipv4_output(reply, net_if0.addr, src, IP_PROTO_ICMP) == 0)
		net_counters.icmp_echo_replies_tx++;
out:
	netbuf_free(nb);
}

int icmp_send_echo(uint32_t dst, uint16_t id, uint16_t seq, size_t len)
{
	struct netbuf *nb;
	struct icmp_echo *eh;
	uint8_t *payload;

	if (len > ICMP_ECHO_MAX)
		return -EMSGSIZE;
	if (!(nb = netbuf_alloc(NETBUF_HEADROOM)))
		return -ENOBUFS;
	eh = netbuf_put(nb, sizeof(*eh));
	payload = netbuf_put(nb, len);
	for (size_t i = 0; i < len; i++)
		payload[i] = (uint8_t)('a' + i % 23);
	eh->type = ICMP_ECHO_REQUEST;
	eh->code = 0;
	eh->checksum = be16_make(0);
	eh->identifier = be16_make(id);
	eh->sequence = be16_make(seq);
	eh->checksum = be16_make((uint16_t)~net_csum_fold(net_csum_add(0, nb->data, sizeof(*eh) + len, false)));
	return ipv4_output(nb, net_if0.addr, dst, IP_PROTO_ICMP);
}

void icmp_set_echo_reply_hook(void (*fn)(uint32_t src, uint16_t id, uint16_t seq, size_t len))
{
	echo_reply_hook = fn;
}
