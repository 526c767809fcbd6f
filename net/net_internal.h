/*
 * net_internal.h - what the files of net/ and net/tcp/ share (not a public face).
 */
#ifndef NET_NET_INTERNAL_H
#define NET_NET_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "../drivers/nic/netdev.h"
#include "net.h"
#include "wire.h"

/* The one interface the stack runs on. route_gen: bumped by net_route_changed() whenever
 * what a cached route (struct net_route) was built from may have changed. rx_src_ok: the
 * last source address ipv4_rx found good for a datagram to our address (RFC 1122 3.2.1.3:
 * a unicast, not ours, not our subnet's broadcast), so that the next datagram from it is
 * let through with one compare; NET_RX_SRC_NONE (never a good source): none. The verdict
 * depends on addr and netmask only, and every change of those calls net_route_changed(),
 * which forgets it. */
#define NET_RX_SRC_NONE 0xffffffffu
struct net_if {
	struct netdev *dev;
	uint32_t addr, netmask, gateway;
	uint32_t route_gen;
	uint32_t rx_src_ok;
};
extern struct net_if net_if0;
extern struct net_stats net_counters;

/* Receive entry points: each takes ownership of nb (data at its header). */
void arp_rx(struct netbuf *nb);
void ipv4_rx(struct netbuf *nb);
void icmp_rx(struct netbuf *nb, uint32_t src, uint32_t dst);
void udp_rx(struct netbuf *nb, uint32_t src, uint32_t dst);
/* tcp_rx: src, dst and len (the segment's bytes, host part and fragments, Ethernet padding
 * cut) as ipv4_rx parsed them, so that nothing is parsed or measured twice; by value, so
 * that ipv4_rx ends in a tail call. */
void tcp_rx(struct netbuf *nb, uint32_t src, uint32_t dst, size_t len);

/* Send nb (data at the Ethernet payload) to the next hop dst_mac. Takes ownership on 0. */
int eth_output(struct netbuf *nb, const uint8_t dst_mac[ETH_ALEN], uint16_t type);

/* Resolve next_hop and send nb (data at the IPv4 header), queueing it while ARP runs.
 * Takes ownership always (the frame is counted and dropped on failure). */
int arp_output(struct netbuf *nb, uint32_t next_hop);

/* ARP state: init/flush, and the table for the console. */
int arp_init(void);
void arp_shutdown(void);
void arp_show(void);
/* Look up a resolved entry (tests, console). true when found. */
bool arp_lookup(uint32_t ip, uint8_t mac[ETH_ALEN]);

/* Prepend an IPv4 header to nb (data at the L4 header) and send it. Always takes
 * ownership of nb. 0 or negative errno. */
int ipv4_output(struct netbuf *nb, uint32_t src, uint32_t dst, uint8_t proto);

/* A cached route, kept by a connection for the frames it sends to one destination: the
 * Ethernet and IPv4 headers they all share (next hop's MAC, ours, addresses, protocol,
 * DF, TTL), prepended as one block, so a frame pays neither the routing decision, the
 * ARP lookup nor the header built field by field. Valid while gen equals
 * net_if0.route_gen: an ARP entry resolving, changing or expiring, a new address,
 * netmask, gateway or device bump it (net_route_changed), and the next frame rebuilds
 * the route or, unresolved, takes ipv4_output (which asks ARP as before). Zeroed: none. */
struct net_route {
	uint32_t gen;                         /* net_if0.route_gen when built; 0: never valid */
	uint32_t src, dst;                    /* what it was built for */
	uint32_t ip_sum;                      /* RFC 1071 sum of the template's IPv4 header words */
	uint8_t hdr[ETH_HLEN + IPV4_HLEN_MIN]; /* the template: total length, identification
					       * and checksum zero */
	uint8_t proto;
};

/* Something a cached route depends on changed (ARP entry, address, device): every
 * connection rebuilds its route at its next frame. */
static inline void net_route_changed(void)
{
	if (++net_if0.route_gen == 0)
		net_if0.route_gen = 1; /* 0 is a route never built */
	net_if0.rx_src_ok = NET_RX_SRC_NONE;
}

/* The receive flow (net/tcp/tcp_in.c tcp_rx_flow): a frame for the socket whose segments the
 * receive batch gathers (tcp_rx_gro) or, while none does, the last segment's (tcp_rx_last),
 * matched against that socket's header image in one go (tcp_rx_flow_bare: a segment without
 * data, of the last segment's connection); what does not match goes on to net_stack_rx_ip,
 * the stack's common path (net.c), as if they had not looked. All consume nb. net_rx_fast_frames: frames taken past eth_rx and ipv4_rx (counted in
 * eth_rx and ip_rx by net_stats). */
struct tcp_sock;
extern struct tcp_sock *tcp_rx_gro, *tcp_rx_last;
void tcp_rx_flow(struct netdev *dev, struct netbuf *nb);
void tcp_rx_flow_any(struct netdev *dev, struct netbuf *nb);
void tcp_rx_flow_first(struct netdev *dev, struct netbuf *nb);
void tcp_rx_flow_bare(struct netdev *dev, struct netbuf *nb);
void net_stack_rx_ip(struct netdev *dev, struct netbuf *nb);
/* net_stack_rx's dispatch of a frame while a connection receives, by its shape
 * (tcp_rx_flow_shape): 1 to tcp_rx_flow_any, 2 to tcp_rx_flow_bare, else net_stack_rx_ip;
 * for tcp_rx_flow and tcp_rx_flow_first, which test the shape themselves, the way back for
 * any other frame. */
void net_stack_rx_flow(struct netdev *dev, struct netbuf *nb);
extern uint64_t net_rx_fast_frames;
/* The shape of the frames tcp_rx_flow (1) and tcp_rx_flow_bare (2) take, tested before the
 * call (any other frame, 0, goes to net_stack_rx_ip at once): the host part exactly the
 * Ethernet, IPv4 and TCP headers without options, and either one fragment with the IPv4
 * total length both headers and that fragment (a data segment), or at most one fragment
 * with the total length both headers alone (a segment without data, the fragment, if any,
 * the Ethernet padding the NIC split off). No side effect. */
static inline int tcp_rx_flow_shape(const struct netbuf *nb)
{
	uint32_t total;

	if (netbuf_host_len(nb) != ETH_HLEN + IPV4_HLEN_MIN + TCP_HLEN_MIN)
		return 0;
	total = be16_load(nb->data + ETH_HLEN + 2);
	if (nb->nfrags == 1 && total == IPV4_HLEN_MIN + TCP_HLEN_MIN + nb->frags[0].len)
		return 1;
	return total == IPV4_HLEN_MIN + TCP_HLEN_MIN && nb->nfrags <= 1 ? 2 : 0;
}

/* UDP init/shutdown (pool). */
int udp_init(void);
int udp_shutdown(void);
int tcp_init(void);
int tcp_shutdown(void);
/* The end of a device's receive batch (net/tcp/tcp.h). */
void tcp_rx_flush(void);

/* Internet checksum (RFC 1071): add len bytes at p to a 32-bit running sum, where the
 * bytes start at an even (odd = false) or odd offset of the summed stream. */
uint32_t net_csum_add(uint32_t sum, const void *p, size_t len, bool odd);
/* Fold to 16 bits (not inverted). */
static inline uint16_t net_csum_fold(uint32_t sum)
{
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)sum;
}

/* ipv4_output_route when the route is stale or the frame is not the plain case (ipv4.c):
 * rebuilds the route or takes ipv4_output. Same contract. */
int ipv4_output_route_slow(struct netbuf *nb, size_t len, struct net_route *rt, uint32_t src, uint32_t dst,
			   uint8_t proto);

/* The IPv4 identification counter (ipv4.c): the next datagram's. */
extern uint16_t ipv4_ident;

/* The route's template into h, with the datagram's length (len: its payload), identification
 * and header checksum: the frame's Ethernet and IPv4 headers. */
static inline __attribute__((always_inline)) void ipv4_route_fill(const struct net_route *rt, uint8_t *h, size_t len,
								  uint16_t ident)
{
	uint16_t total = (uint16_t)(len + IPV4_HLEN_MIN);
	uint16_t c = (uint16_t)~net_csum_fold(rt->ip_sum + total + ident);

	memcpy(h, rt->hdr, sizeof(rt->hdr));
	be16_store(h + ETH_HLEN + offsetof(struct ipv4_hdr, total_length), total);
	be16_store(h + ETH_HLEN + offsetof(struct ipv4_hdr, identification), ident);
	be16_store(h + ETH_HLEN + offsetof(struct ipv4_hdr, header_checksum), c);
}

/* The end of both route paths: the template into the h that nb's data now starts at, the
 * datagram's length, identification and header checksum stored, the frame to the device.
 * Takes ownership of nb; 0 or the device's negative errno. ipv4_route_send_inl is the
 * same, always inline: for tcp_xmit_fast, where gcc kept ipv4_route_send out of line
 * (ipv4_route_send.lto_priv: the call, register saves and restores ~14 instructions a
 * frame); the other callers keep the call (inline there, it grew them more than it saved). */
static inline __attribute__((always_inline)) int ipv4_route_send_inl(struct netdev *dev, struct netbuf *nb, const struct net_route *rt, uint8_t *h,
				  size_t len, uint16_t ident)
{
	int rc;

	ipv4_route_fill(rt, h, len, ident);
	net_counters.ip_tx++;
	if ((rc = netdev_tx(dev, nb))) {
		netbuf_free(nb);
		return rc;
	}
	net_counters.eth_tx++;
	return 0;
}

static inline int ipv4_route_send(struct netdev *dev, struct netbuf *nb, const struct net_route *rt, uint8_t *h,
				  size_t len, uint16_t ident)
{
	return ipv4_route_send_inl(dev, nb, rt, h, len, ident);
}

/* ipv4_output through the route rt caches (rebuilt when stale, ipv4_output itself when
 * the next hop is not resolved): the same frame, the same counters, the same errors.
 * len: nb's bytes (host part and fragments), which the caller knows. Always takes
 * ownership of nb. 0 or negative errno. Inline: a frame that is not a TSO frame, on a
 * fresh route, fits the MTU and has the headroom (every TCP frame but a TSO one) is
 * finished here, the call into ipv4.c costing as much as the work (~40 instructions a
 * frame); everything else takes ipv4_output_route_slow. */
static inline int ipv4_output_route(struct netbuf *nb, size_t len, struct net_route *rt, uint32_t src, uint32_t dst,
				    uint8_t proto)
{
	struct netdev *dev = net_if0.dev;
	uint8_t *h = nb->data - sizeof(rt->hdr);

	if (rt->gen != net_if0.route_gen || rt->dst != dst || rt->src != src || rt->proto != proto ||
	    (nb->flags & NETBUF_TX_TSO) || len + IPV4_HLEN_MIN > dev->mtu || nb->data - nb->head < (ptrdiff_t)sizeof(rt->hdr))
		return ipv4_output_route_slow(nb, len, rt, src, dst, proto);
	/* (a valid route implies a device: net_if0.dev changing bumps route_gen) */
	nb->data = h;
	if (nb->flags & NETBUF_TX_CSUM_PARTIAL)
		nb->csum_start = (uint16_t)(nb->csum_start + sizeof(rt->hdr));
	return ipv4_route_send(dev, nb, rt, h, len, ipv4_ident++);
}
/* IPv4 pseudo-header sum (folded to 16 bits). Inline: every frame sent and every
 * software-checked frame received adds one. */
static inline uint32_t net_csum_pseudo(uint32_t src, uint32_t dst, uint8_t proto, uint32_t len)
{
	uint64_t s = (uint64_t)(src >> 16) + (src & 0xffff) + (dst >> 16) + (dst & 0xffff) + proto + len;
	s = (s & 0xffff) + (s >> 16); /* < 2^19 before: at most 0xffff + 7 after */
	return (uint32_t)((s & 0xffff) + (s >> 16));
}
/* Sum len bytes of nb from off (host part, then fragments read through the counted
 * accessor) into sum. -EINVAL when short. */
int net_csum_netbuf(const struct netbuf *nb, size_t off, size_t len, uint32_t *sum);

/* net_l4_csum_tx without offload: the CPU sums the segment. */
int net_l4_csum_tx_sw(struct netbuf *nb, uint32_t src, uint32_t dst, uint8_t proto, size_t len, uint16_t field_off);

/* L4 checksum for an outgoing nb (data at the L4 header, length len): offloaded when the
 * device can (the pseudo-header sum in the field, NETBUF_TX_CSUM_PARTIAL: inline, every
 * frame takes this path), in software otherwise. field_off is the checksum field's offset. */
static inline int net_l4_csum_tx(struct netbuf *nb, struct netdev *dev, uint32_t src, uint32_t dst, uint8_t proto,
				 size_t len, uint16_t field_off)
{
	if (dev && (dev->features & NETDEV_F_TX_CSUM)) {
		uint32_t sum = net_csum_pseudo(src, dst, proto, (uint32_t)len);
		uint8_t *field = nb->data + field_off;
		field[0] = (uint8_t)(sum >> 8);
		field[1] = (uint8_t)sum;
		nb->flags |= NETBUF_TX_CSUM_PARTIAL;
		nb->csum_start = 0;
		nb->csum_offset = field_off;
		return 0;
	}
	return net_l4_csum_tx_sw(nb, src, dst, proto, len, field_off);
}

/* net_l4_csum_rx_ok without the NIC's verdict: the CPU sums the segment. */
bool net_l4_csum_rx_sw(const struct netbuf *nb, uint32_t src, uint32_t dst, uint8_t proto, size_t len);

/* Verify an incoming L4 checksum (data at the L4 header, len bytes): the NIC's verdict
 * when it gave one, software otherwise. true when good. Inline: every segment asks. */
static inline bool net_l4_csum_rx_ok(const struct netbuf *nb, uint32_t src, uint32_t dst, uint8_t proto, size_t len)
{
	if (nb->flags & NETBUF_RX_L4_CSUM_BAD)
		return false;
	if (nb->flags & NETBUF_RX_L4_CSUM_OK)
		return true;
	return net_l4_csum_rx_sw(nb, src, dst, proto, len);
}

/* Is addr one of ours (or a broadcast we accept)? Inline: every frame asks. */
static inline bool net_addr_is_broadcast(uint32_t addr)
{
	return addr == 0xffffffffu || addr == (net_if0.addr | ~net_if0.netmask);
}

static inline bool net_addr_is_local(uint32_t addr)
{
	return addr == net_if0.addr;
}

#endif
