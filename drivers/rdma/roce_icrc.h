/*
 * roce_icrc.h - the RoCE v2 invariant CRC (IBTA Annex A17.3.3 with 9.8.2): CRC-32 (the
 * IEEE 802.3 polynomial, as lib/crc32.h's crc32_ieee) over
 *   8 bytes of 0xff (the stand-in for the LRH a RoCE v2 packet does not have),
 *   the IPv4 header with TOS, TTL and header checksum set to all ones,
 *   the UDP header with its checksum set to all ones,
 *   the BTH with its resv8a byte (FECN, BECN, Resv6a) set to all ones,
 *   the rest of the packet up to, not including, the ICRC (extension headers, payload, pad).
 * The result is carried in the packet's last 4 bytes least significant byte first, as
 * Linux rdma_rxe writes it (it stores the CPU-order value of a little-endian host).
 */
#ifndef DRIVERS_RDMA_ROCE_ICRC_H
#define DRIVERS_RDMA_ROCE_ICRC_H

#include <stddef.h>
#include <stdint.h>
#include "../../net/wire.h"

/* The running ICRC after the masked pseudo-LRH, IPv4 header (20 bytes, no options), UDP
 * header and BTH (12 bytes). Continue with roce_icrc_update over the rest. */
uint32_t roce_icrc_start(const struct ipv4_hdr *ip, const struct udp_hdr *uh, const uint8_t bth[12]);

/* Continue the running ICRC over len more bytes. */
uint32_t roce_icrc_update(uint32_t crc, const void *p, size_t len);

/* The ICRC field as the wire carries it (little-endian) and back. */
void roce_icrc_put(uint8_t out[4], uint32_t icrc);
uint32_t roce_icrc_get(const uint8_t in[4]);

/* The ICRC of a whole packet in one host buffer: ip and uh as sent/received, pkt the UDP
 * payload of pkt_len bytes (BTH first; the trailing 4 ICRC bytes excluded from the sum).
 * pkt_len must be at least 12 + 4. */
uint32_t roce_icrc_packet(const struct ipv4_hdr *ip, const struct udp_hdr *uh, const uint8_t *pkt, size_t pkt_len);

#endif
