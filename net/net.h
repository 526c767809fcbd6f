/*
 * net.h - the face of net/: an IPv4 host stack on one netdev (Ethernet, ARP, IPv4,
 * ICMP echo, UDP; TCP in net/tcp/tcp.h).
 *
 * Addresses are host-order uint32_t (10.10.0.10 is 0x0a0a000a). The stack runs in the
 * poll loop: frames arrive through the netdev's receive handler, timers (ARP expiry,
 * TCP retransmission...) run from lib/timer.h's timer_default_queue.
 *
 * IPv4 fragments are dropped and counted (ip.frag_dropped), not reassembled: the data
 * path never needs them (NVMe/TCP rides on MSS-sized segments, RoCE v2 on PMTU-sized
 * datagrams with DF), reassembly would need host memory for payloads that belong in
 * device memory, and the one source seen in the lab, QEMU 7.2's e1000e TSO emitting
 * fragments with DF and MF both set (docs/platform.md), is fixed by turning TSO off on the
 * peer; a counter makes the trap visible instead of a silent stall.
 */
#ifndef NET_NET_H
#define NET_NET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "../drivers/nic/netdev.h"

#define NET_DEFAULT_ADDR 0x0a0a000au    /* 10.10.0.10 */
#define NET_DEFAULT_NETMASK 0xffffff00u /* /24 */
#define NET_DEFAULT_GATEWAY 0u          /* none */

struct net_config {
	uint32_t addr;
	uint32_t netmask;
	uint32_t gateway;  /* 0: none (only the local subnet is reachable) */
	unsigned mtu;      /* 0: keep the device's */
};

/* Create the stack's pools and attach to every netdev (now and later). 0 or errno. */
int net_init(void);

/* Abort every connection, flush caches and destroy the pools (host tests). 0 or -EBUSY. */
int net_shutdown(void);

/* The defaults: 10.10.0.10/24, no gateway, device MTU. */
void net_config_default(struct net_config *c);

/* Apply an address configuration. -EINVAL for a bad address/netmask, or the MTU error. */
int net_configure(const struct net_config *c);

/* The configuration in use. */
void net_config_get(struct net_config *c);

/* Parse dotted-quad text; 0 or -EINVAL. */
int net_parse_ipv4(const char *text, uint32_t *out);

/* Format an address into buf (at least 16 bytes); returns buf. */
char *net_format_ipv4(uint32_t addr, char *buf);

/* --- UDP (RoCE v2 rides on it) --------------------------------------------------------- */

struct udp_sock;

struct udp_meta {
	uint32_t src_addr, dst_addr;
	uint16_t src_port, dst_port;
};

/* A datagram for a bound port: nb->data is the first payload byte (the host part may be
 * empty with the payload in nb->frags, in device memory). The callee may take fragments
 * with netbuf_take_frag(); the stack frees nb when the callback returns. */
typedef void (*udp_recv_fn)(struct udp_sock *s, void *ctx, const struct udp_meta *m, struct netbuf *nb);

/* Bind a local port (0: pick an ephemeral one). 0, -EADDRINUSE or -ENOMEM. */
int udp_bind(uint16_t port, udp_recv_fn fn, void *ctx, struct udp_sock **out);

/* The local port of s. */
uint16_t udp_local_port(const struct udp_sock *s);

/* Unbind and free s. */
void udp_close(struct udp_sock *s);

/* Send len bytes from host memory (copied) to dst:dport. 0 or negative errno. */
int udp_sendto(struct udp_sock *s, uint32_t dst, uint16_t dport, const void *data, size_t len);

/* Send a datagram whose payload is hdr (host, copied) followed by n fragments (zero
 * copy: the netbuf takes the references and releases them when the device is done, on
 * success and on failure). 0 or negative errno. */
int udp_sendto_frags(struct udp_sock *s, uint32_t dst, uint16_t dport, const void *hdr, size_t hdr_len,
		     const struct netdev_frag *frags, unsigned n);

/* The IPv4 identification the next datagram sent gets: the RoCE v2 ICRC covers it, so
 * drivers/rdma reads it right before udp_sendto (one poll loop: nothing sends between). */
uint16_t ipv4_next_ident(void);

/* --- ICMP ---------------------------------------------------------------------------- */

/* Send one echo request (identifier, sequence, len payload bytes). 0 or errno. */
int icmp_send_echo(uint32_t dst, uint16_t id, uint16_t seq, size_t len);

/* Called for every echo reply received (one hook, NULL to remove): the ping command. */
void icmp_set_echo_reply_hook(void (*fn)(uint32_t src, uint16_t id, uint16_t seq, size_t len));

/* --- counters ------------------------------------------------------------------------ */

struct net_stats {
	uint64_t eth_rx, eth_tx, eth_short, eth_not_for_us, eth_unknown_type;
	uint64_t arp_rx, arp_bad, arp_requests_rx, arp_replies_rx, arp_requests_tx, arp_replies_tx;
	uint64_t arp_queued, arp_queue_full, arp_resolve_failed, arp_expired, arp_table_full;
	uint64_t ip_rx, ip_tx, ip_bad_header, ip_bad_checksum, ip_not_for_us, ip_frag_dropped;
	uint64_t ip_bad_src;  /* broadcast, multicast, loopback, reserved, 0.0.0.0 or our own source: dropped */
	uint64_t ip_unknown_proto, ip_no_route, ip_tx_nobuf;
	uint64_t icmp_rx, icmp_bad, icmp_echo_requests, icmp_echo_replies_tx, icmp_echo_replies_rx;
	uint64_t udp_rx, udp_bad, udp_bad_checksum, udp_no_port, udp_tx;
	uint64_t l4_sw_csum_bytes;  /* bytes summed by the CPU for lack of checksum offload */
};

/* The counters. */
const struct net_stats *net_stats(void);

#endif
