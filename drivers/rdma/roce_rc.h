/*
 * roce_rc.h - what the RC roles (requester, responder, completer) share: 24-bit PSN serial
 * arithmetic and the description of one packet to send, headers plus a gather list of
 * payload pieces in registered memory, which the device's send path (roce_net) turns into
 * a frame with its ICRC. The roles never send themselves, so they run the same under the
 * unit tests and the poll loop, and a packet the NIC refused is simply offered again.
 */
#ifndef DRIVERS_RDMA_ROCE_RC_H
#define DRIVERS_RDMA_ROCE_RC_H

#include <stdint.h>
#include "roce_verbs.h"
#include "roce_wire.h"

/* Serial arithmetic on 24-bit PSNs: a - b as a signed distance in (-2^23, 2^23]. */
static inline int32_t roce_psn_diff(uint32_t a, uint32_t b)
{
	uint32_t d = (a - b) & ROCE_PSN_MASK;
	return d & 0x800000u ? (int32_t)d - 0x1000000 : (int32_t)d;
}

static inline uint32_t roce_psn_add(uint32_t psn, uint32_t n)
{
	return (psn + n) & ROCE_PSN_MASK;
}

/* One payload piece: len bytes at mem (host DRAM or device memory, identity-mapped). */
struct roce_tx_seg {
	dma_addr_t mem;
	uint32_t len;
	uint32_t room;               /* scratch bytes right after the piece the sender may write (a
				      * strided MR's gap at a chunk's end), 0: none */
	struct roce_mr_tx_owner *txo; /* the MR's transmit owner (roce_mr_set_tx_owner), NULL: none */
	uint64_t tx_token;
};

/* One packet to send: the headers in pkt (pkt.payload_len = len, the sum of the pieces). */
struct roce_tx {
	struct roce_pkt pkt;
	unsigned nseg;
	struct roce_tx_seg seg[ROCE_MAX_SGE];
	uint32_t len;
};

#endif
