/*
 * roce_internal.h - the layouts the files of drivers/rdma share (not a public face):
 * the device with its handle tables and pools, and the verbs objects.
 */
#ifndef DRIVERS_RDMA_ROCE_INTERNAL_H
#define DRIVERS_RDMA_ROCE_INTERNAL_H

#include "roce_verbs.h"

struct roce_pd {
	struct roce_dev *dev;
	unsigned index;
	unsigned users;              /* MRs, SRQs and QPs on it */
};

struct roce_mr {
	struct roce_dev *dev;
	struct roce_pd *pd;
	uint32_t key;                /* lkey == rkey: index << 8 | key byte */
	uint64_t iova, length;
	dma_addr_t mem;              /* where iova lives */
	unsigned access;
};

struct roce_cq {
	struct roce_dev *dev;
	unsigned index;
	unsigned cqe;                /* capacity */
	unsigned head, count;        /* oldest entry, entries held */
	bool armed, overflow;
	unsigned users;              /* QPs on it */
	roce_comp_fn fn;
	void *ctx;
	uint64_t pushed, overflows;
	struct roce_wc ring[ROCE_MAX_CQE];
};

/* A queue of work requests (send queue, receive queue, SRQ): a ring of `size` slots. */
struct roce_wq {
	unsigned size, head, count;
	unsigned max_sge;
};

struct roce_srq {
	struct roce_dev *dev;
	struct roce_pd *pd;
	unsigned index;
	unsigned users;
	struct roce_wq wq;
	struct roce_recv_wr ring[ROCE_MAX_WR];
};

/* The responder's side of an RC QP (IBTA 9.7.5; rxe_resp.c's role). */
enum roce_resp_msg { ROCE_RESP_IDLE, ROCE_RESP_SEND, ROCE_RESP_WRITE };

/* A responder resource (9.7.5.1.1, 9.7.5.2.1): one RDMA READ or atomic the responder has
 * executed, kept so that its responses can be sent under a budget and re-sent (READ:
 * executed again from the duplicate's PSN; atomic: the saved result, never executed twice)
 * when the requester retries. A ring of max_dest_rd_atomic slots, the oldest reused. */
enum roce_res_type { ROCE_RES_NONE, ROCE_RES_READ, ROCE_RES_ATOMIC };

struct roce_resp_res {
	enum roce_res_type type;
	uint32_t psn_first, psn_last; /* the PSNs the request took (a READ: one per response packet) */
	uint32_t msn;                /* AETH.MSN of its responses */
	uint64_t orig;               /* atomic: Original Remote Data */
	bool pending;                /* responses still to send */
	bool first;                  /* the next response starts the (re-)execution */
	uint32_t psn;                /* PSN of the next response */
	uint64_t va;                 /* READ: the next byte to send */
	uint32_t rkey, remaining;    /* READ: the RETH's R_Key, bytes still to send */
};

/* The ACK/NAK to send (one slot: a newer one covers an older, 9.7.5.1.4). */
struct roce_resp_ack {
	bool valid;
	uint8_t syndrome;            /* AETH type; an ACK's credits are filled in when it is sent */
	uint32_t psn, msn;
};

struct roce_resp_state {
	uint32_t epsn;               /* ePSN: the next PSN expected */
	uint32_t msn;                /* MSN: messages completed (24 bits) */
	bool nak_seq_sent;           /* a PSN sequence error NAK is out for epsn (9.7.5.1.2: one only) */
	enum roce_resp_msg msg;      /* the multi-packet message in progress */
	bool has_wqe;                /* wqe holds the receive WR of the SEND in progress */
	struct roce_recv_wr wqe;
	uint32_t offset;             /* bytes of the message placed so far */
	uint64_t va;                 /* RDMA WRITE: where the next byte goes */
	uint32_t rkey, remaining;    /* RDMA WRITE: the RETH's R_Key, bytes still to come */
	struct roce_resp_ack ack;
	struct roce_resp_res res[ROCE_MAX_RD_ATOMIC];
	unsigned res_next;           /* the slot the next READ/atomic takes */
	uint64_t acks, naks_seq, naks_inv, naks_access, naks_op, naks_rnr, dups;
	uint64_t reads, read_resps, atomics, replays;
};

struct roce_qp {
	struct roce_dev *dev;
	struct roce_pd *pd;
	unsigned index;
	uint32_t qpn;
	enum roce_qp_type type;
	enum roce_qp_state state;
	struct roce_qp_attr attr;    /* the values in force (state fields aside) */
	struct roce_qp_init_attr init;
	struct roce_wq sq, rq;
	struct roce_send_wr sq_ring[ROCE_MAX_WR];
	struct roce_recv_wr rq_ring[ROCE_MAX_WR];
	uint64_t flushed;            /* WRs completed with FLUSH_ERR */
	struct roce_resp_state resp;
};

struct roce_dev {
	char name[16];
	uint32_t addr;               /* IPv4, host order; 0: none yet */
	unsigned mtu;                /* the interface's */
	struct roce_port_attr port;
	struct mm_pool pd_pool, mr_pool, cq_pool, srq_pool, qp_pool;
	struct roce_pd *pds[ROCE_MAX_PD];
	struct roce_mr *mrs[ROCE_MAX_MR];
	uint8_t mr_keygen[ROCE_MAX_MR];  /* the key byte the slot's next MR gets */
	struct roce_cq *cqs[ROCE_MAX_CQ];
	struct roce_srq *srqs[ROCE_MAX_SRQ];
	struct roce_qp *qps[ROCE_MAX_QP];
	uint32_t qp_gen;             /* QPN generation: qpn = gen << 8 | index (gen >= 1) */
};

/* A free slot of a handle table, or -1. */
int roce_table_slot(void *const *tab, unsigned n);

#endif
