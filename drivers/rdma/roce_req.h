/*
 * roce_req.h - the RC requester and completer (IBTA vol. 1 9.7.4 and 9.7.6; the roles of
 * Linux rxe_req.c and rxe_comp.c). The requester turns the send queue's work requests into
 * packets: SEND and RDMA WRITE segmented by the path MTU (with immediate, with
 * invalidate), RDMA READ requests (one PSN per expected response packet) and atomics, at
 * most max_rd_atomic READs/atomics outstanding; it gathers payload from registered memory
 * (lkeys checked when touched) and asks for an ACK at each message's end. The completer
 * takes the responses: cumulative ACKs, READ responses (placed into the WR's scatter list
 * in order), atomic ACKs (the original value written to the WR's 8-byte SGE), NAKs; it
 * retransmits from the oldest unacknowledged PSN on a PSN-sequence NAK, on a missing READ
 * response (an ACK or response beyond an unanswered READ), and when the retransmit timer
 * (4.096 us * 2^timeout) fires, up to retry_cnt times; after an RNR NAK it waits the
 * timer the responder named and retries up to rnr_retry times (7: without limit). WRs
 * complete in order on the send CQ (signaled ones, and every error); a fatal error takes
 * the QP to ERR, which flushes the rest.
 *
 * As the responder, the requester does not send (roce_rc.h): roce_req_tx_next offers the
 * next packet and roce_req_tx_done says it went out; time comes in as an argument.
 */
#ifndef DRIVERS_RDMA_ROCE_REQ_H
#define DRIVERS_RDMA_ROCE_REQ_H

#include <stdbool.h>
#include <stdint.h>
#include "../nic/netdev.h"
#include "roce_rc.h"

/* Reset the requester for a QP entering RTS (sq_psn, retry counters), or leaving the
 * send side (RESET, ERR: everything outstanding is forgotten; the queue is flushed by the
 * QP). */
void roce_req_reset(struct roce_qp *qp);

/* The next request packet of qp at time now (ns). true with *tx filled; the same packet
 * is offered until roce_req_tx_done. A local protection error (an lkey that does not
 * cover an SGE) fails the WR, which completes with ROCE_WC_LOC_PROT_ERR in its turn. */
bool roce_req_tx_next(struct roce_qp *qp, uint64_t now, struct roce_tx *tx);

/* The packet roce_req_tx_next offered went out at now. */
void roce_req_tx_done(struct roce_qp *qp, uint64_t now, const struct roce_tx *tx);

/* The retransmit and RNR timers at now: a fired retransmit timer rewinds to the oldest
 * unacknowledged PSN (or fails the WR with ROCE_WC_RETRY_EXC_ERR when retry_cnt is
 * spent). Returns true when something changed. */
bool roce_req_tick(struct roce_qp *qp, uint64_t now);

/* A response packet (ACK, atomic ACK, READ response) for qp, whose payload starts
 * p->hdr_len bytes into nb. Responses outside RTS/SQD, or for nothing outstanding, are
 * dropped. Does not free nb, but a READ response's payload fragments may leave it (handed to
 * an MR's sink, roce_mr_set_sink): the caller reads nothing of nb after. */
void roce_comp_rx(struct roce_qp *qp, const struct roce_pkt *p, struct netbuf *nb, uint64_t now);

/* The retransmit timeout of a QP's timeout attribute, in ns (0 is taken as 31: a bound). */
uint64_t roce_req_timeout_ns(uint8_t timeout);

/* The RNR NAK timer code's wait (9.7.5.2.8, table 45), in ns. */
uint64_t roce_rnr_timer_ns(uint8_t code);

/* Shared by the requester and the completer. */
struct roce_req_wqe *roce_req_wqe_at(struct roce_qp *qp, unsigned k);
const struct roce_send_wr *roce_req_wr_at(const struct roce_qp *qp, unsigned k);
void roce_req_rewind(struct roce_qp *qp);
void roce_req_complete(struct roce_qp *qp);
uint32_t roce_req_psns(const struct roce_qp *qp, const struct roce_send_wr *wr, uint32_t len);

#endif
