/*
 * roce_resp.h - the RC responder (IBTA vol. 1 9.7.5; the role of Linux rxe_resp.c): checks
 * each request packet's PSN against ePSN (24-bit serial arithmetic), the opcode sequence,
 * lengths against the path MTU, keys and bounds through the MR checks; places SEND
 * payloads in the posted receive WR's buffers and RDMA WRITE payloads at the RETH's
 * address, completes receive WRs; executes RDMA READ (responses segmented by the path
 * MTU) and the atomics Compare&Swap and Fetch&Add, keeping each as a responder resource so
 * a retried READ is executed again from the retry's PSN and a retried atomic is answered
 * with its saved result, never executed twice.
 *
 * The responder does not send (roce_rc.h): roce_resp_rx updates the QP's responder state, and the
 * packets it owes (READ responses, atomic ACKs, the coalesced ACK or a NAK / RNR NAK)
 * are taken one at a time with roce_resp_tx_next / roce_resp_tx_done in PSN order, so the
 * caller sends them under its budget, and a packet the NIC refused is offered again. It
 * runs the same under the unit tests and the poll loop.
 */
#ifndef DRIVERS_RDMA_ROCE_RESP_H
#define DRIVERS_RDMA_ROCE_RESP_H

#include <stdint.h>
#include "../nic/netdev.h"
#include "roce_verbs.h"
#include "roce_rc.h"
#include "roce_wire.h"

/* Handle one request packet p for RC QP qp, whose payload (p->payload_len bytes) starts
 * p->hdr_len bytes into nb. Requests outside RTR/RTS/SQD are dropped silently (10.3.1).
 * A fatal error (remote access, invalid request, operational) queues its NAK, completes
 * the receive WR in progress with an error and moves the QP to ERR (flushing the rest);
 * completions go to the QP's receive CQ. Does not free nb, but a SEND's payload fragments
 * may leave it (handed to an MR's sink, roce_mr_set_sink): the caller reads nothing of nb after. */
void roce_resp_rx(struct roce_qp *qp, const struct roce_pkt *p, struct netbuf *nb);

/* The next packet the responder owes, in PSN order (READ responses and atomic ACKs before
 * an ACK that covers them). true with *tx filled; the same packet is offered until
 * roce_resp_tx_done says it went out. A READ whose MR went away since the request becomes
 * a remote access NAK (and the QP goes to ERR). */
bool roce_resp_tx_next(struct roce_qp *qp, struct roce_tx *tx);

/* The packet roce_resp_tx_next offered was sent. */
void roce_resp_tx_done(struct roce_qp *qp, const struct roce_tx *tx);

/* The AETH credit count code (9.7.7.2.5, table 45) for `avail` posted receive WRs: the
 * largest code whose count is <= avail (0 for none). */
uint8_t roce_resp_credit_code(unsigned avail);

#endif
