/*
 * roce_resp.h - the RC responder (IBTA vol. 1 9.7.5; the role of Linux rxe_resp.c): checks
 * each request packet's PSN against ePSN (24-bit serial arithmetic), the opcode sequence,
 * lengths against the path MTU, keys and bounds through the MR checks, places SEND
 * payloads in the posted receive WR's buffers and RDMA WRITE payloads at the RETH's
 * address, completes receive WRs, and says what to answer: an ACK (when the requester
 * asked for one, or for a duplicate), a NAK (PSN sequence error, invalid request, remote
 * access error, remote operational error) or an RNR NAK. Sending the answer is the
 * caller's: the responder is a pure function of the QP's state and the packet, so it runs
 * the same under the unit tests' fake wire and under the poll loop.
 */
#ifndef DRIVERS_RDMA_ROCE_RESP_H
#define DRIVERS_RDMA_ROCE_RESP_H

#include <stdint.h>
#include "../nic/netdev.h"
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

/* What the responder answers with. */
enum roce_resp_answer {
	ROCE_ANSWER_NONE,            /* nothing (an ACK is not due yet, or the packet is dropped silently) */
	ROCE_ANSWER_ACK,             /* ACK: AETH syndrome credits, psn = the acknowledged PSN */
	ROCE_ANSWER_NAK,             /* AETH syndrome NAK | code */
	ROCE_ANSWER_RNR,             /* AETH syndrome RNR NAK | the QP's min RNR timer */
};

struct roce_resp_out {
	enum roce_resp_answer answer;
	uint8_t syndrome;            /* the AETH syndrome to send */
	uint32_t psn;                /* BTH.PSN of the answer */
	uint32_t msn;                /* AETH.MSN */
};

/* Handle one request packet p for RC QP qp (RTR, RTS or SQD), whose payload
 * (p->payload_len bytes) starts p->hdr_len bytes into nb. Fills *out with the answer.
 * A fatal error (remote access, invalid request, operational) moves the QP to ERR after
 * its NAK is decided; completions go to the QP's receive CQ. */
void roce_resp_rx(struct roce_qp *qp, const struct roce_pkt *p, const struct netbuf *nb, struct roce_resp_out *out);

#endif
