/*
 * wire.h - wire formats of Ethernet, ARP, IPv4, ICMP, UDP and TCP: packed structs with
 * explicit big-endian field types (be16_t, be32_t of lib/byteorder.h), no bitfields. Field
 * names follow the RFCs. Received headers are copied into locals of these types before any field is read
 * ("Untrusted bytes" in docs/architecture.md); nothing is converted in place.
 */
#ifndef NET_WIRE_H
#define NET_WIRE_H

#include <stdint.h>
#include "../lib/byteorder.h"

#define ETH_ALEN 6
#define ETH_HLEN 14
#define ETH_TYPE_IPV4 0x0800
#define ETH_TYPE_ARP 0x0806

struct eth_hdr {
	uint8_t dst[ETH_ALEN];
	uint8_t src[ETH_ALEN];
	be16_t type;                 /* EtherType */
} __attribute__((packed));

/* RFC 826 for Ethernet/IPv4 */
#define ARP_HTYPE_ETHER 1
#define ARP_OP_REQUEST 1
#define ARP_OP_REPLY 2
struct arp_pkt {
	be16_t htype;                /* hardware type: 1 Ethernet */
	be16_t ptype;                /* protocol type: 0x0800 */
	uint8_t hlen;                /* 6 */
	uint8_t plen;                /* 4 */
	be16_t oper;                 /* 1 request, 2 reply */
	uint8_t sha[ETH_ALEN];       /* sender hardware address */
	be32_t spa;                  /* sender protocol address */
	uint8_t tha[ETH_ALEN];       /* target hardware address */
	be32_t tpa;                  /* target protocol address */
} __attribute__((packed));

/* RFC 791 */
#define IP_PROTO_ICMP 1
#define IP_PROTO_TCP 6
#define IP_PROTO_UDP 17
#define IPV4_HLEN_MIN 20
#define IPV4_FLAG_DF 0x4000          /* don't fragment */
#define IPV4_FLAG_MF 0x2000          /* more fragments */
#define IPV4_FRAG_OFFSET_MASK 0x1fff /* in 8-byte units */
struct ipv4_hdr {
	uint8_t ver_ihl;             /* version (high nibble, 4) | IHL in 32-bit words (low nibble) */
	uint8_t tos;                 /* DSCP | ECN */
	be16_t total_length;
	be16_t identification;
	be16_t flags_fragoff;        /* bit 14 DF, bit 13 MF, bits 0-12 fragment offset */
	uint8_t ttl;
	uint8_t protocol;
	be16_t header_checksum;
	be32_t src;
	be32_t dst;
} __attribute__((packed));

/* RFC 792 */
#define ICMP_ECHO_REPLY 0
#define ICMP_ECHO_REQUEST 8
struct icmp_echo {
	uint8_t type;
	uint8_t code;
	be16_t checksum;
	be16_t identifier;
	be16_t sequence;
} __attribute__((packed));

/* RFC 768 */
struct udp_hdr {
	be16_t src_port;
	be16_t dst_port;
	be16_t length;               /* header + data */
	be16_t checksum;             /* 0: none (IPv4) */
} __attribute__((packed));

/* RFC 9293 section 3.1 */
#define TCP_HLEN_MIN 20
#define TCP_FIN 0x01
#define TCP_SYN 0x02
#define TCP_RST 0x04
#define TCP_PSH 0x08
#define TCP_ACK 0x10
#define TCP_URG 0x20
#define TCP_ECE 0x40
#define TCP_CWR 0x80
#define TCP_OPT_EOL 0
#define TCP_OPT_NOP 1
#define TCP_OPT_MSS 2                /* RFC 9293 3.2: length 4 */
#define TCP_OPT_WS 3                 /* RFC 7323 2.2: length 3, shift count <= 14 */
#define TCP_OPT_SACK_PERM 4          /* RFC 2018 2: SACK-permitted, length 2, SYN only */
#define TCP_OPT_SACK 5               /* RFC 2018 3: length 2 + 8 per block (left, right edge) */
#define TCP_OPT_SPACE 40             /* option bytes a header can carry (data offset 15) */
struct tcp_hdr {
	be16_t src_port;
	be16_t dst_port;
	be32_t seq;                  /* SEG.SEQ */
	be32_t ack;                  /* SEG.ACK */
	uint8_t data_offset;         /* high nibble: header length in 32-bit words; low: reserved */
	uint8_t flags;               /* CWR ECE URG ACK PSH RST SYN FIN (bits 7..0) */
	be16_t window;               /* SEG.WND (scaled after the handshake) */
	be16_t checksum;
	be16_t urgent;               /* urgent pointer (ignored) */
} __attribute__((packed));

_Static_assert(sizeof(struct eth_hdr) == 14, "eth");
_Static_assert(sizeof(struct arp_pkt) == 28, "arp");
_Static_assert(sizeof(struct ipv4_hdr) == 20, "ipv4");
_Static_assert(sizeof(struct icmp_echo) == 8, "icmp");
_Static_assert(sizeof(struct udp_hdr) == 8, "udp");
_Static_assert(sizeof(struct tcp_hdr) == 20, "tcp");

#endif
