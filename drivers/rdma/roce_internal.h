/*
 * roce_internal.h - the layouts the files of drivers/rdma share (not a public face):
 * the device with its handle tables and pools, and the verbs objects.
 */
#ifndef DRIVERS_RDMA_ROCE_INTERNAL_H
#define DRIVERS_RDMA_ROCE_INTERNAL_H

#include "roce_verbs.h"

struct roce_odp_region;

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
	struct roce_odp_region *odp; /* on-demand paged (roce_odp_mr.c): mem unused, see roce_mr_map */
	uint32_t chunk, gap;         /* strided (roce_reg_mr_strided): chunk bytes of iova, then gap bytes
				      * of scratch in memory; 0: contiguous */
	roce_mr_sink_fn sink;        /* received payload handed over in place (roce_mr_set_sink), NULL: copied */
	void *sink_ctx;
	struct roce_mr_tx_owner *txo; /* holds the memory for frames the NIC still reads (roce_mr_set_tx_owner) */
	uint64_t tx_token;
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
	bool unacked;                /* requests taken since the last ACK/NAK/response went out */
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
	uint64_t rx_frags, rx_frag_bytes;  /* SEND pieces handed to an MR's sink (no copy) */
};

/* The requester's record of one send WR (by its slot in the send queue ring). */
struct roce_req_wqe {
	uint32_t psn_first, psn_last; /* the PSNs it takes (assigned when it starts; a retry reuses them) */
	uint32_t len;                /* message length (the SGEs' sum) */
	uint32_t read_got;           /* READ: response bytes placed so far */
	bool done;                   /* acknowledged (or failed): completes when it reaches the head */
	enum roce_wc_status status;
};

/* The requester and completer of an RC QP (IBTA 9.7.4, 9.7.6; rxe_req.c, rxe_comp.c). */
struct roce_req_state {
	uint32_t psn;                /* the next PSN to send */
	uint32_t una;                /* the oldest PSN not acknowledged */
	uint32_t psn_hi;             /* one past the highest PSN sent (a retry goes back, this does not) */
	unsigned cur;                /* the WR being sent: its distance from the send queue's head */
	uint32_t cur_off;            /* bytes of it sent */
	unsigned started;            /* WRs from the head that have been started */
	bool halted;                 /* a local error: nothing more is sent */
	bool retrying;               /* a retry is under way: more evidence of the same loss is ignored */
	uint64_t deadline;           /* retransmit timer (ns; 0: not running) */
	uint64_t rnr_until;          /* after an RNR NAK: nothing is sent before (ns) */
	uint8_t retry_left, rnr_left;
	struct roce_req_wqe wqe[ROCE_MAX_WR];
	struct roce_req_counters {
		uint64_t pkts, retransmits, timeouts, seq_naks, rnr_naks, implied_naks, dup_resps, completions;
		uint64_t rx_frags, rx_frag_bytes;  /* READ response pieces handed to an MR's sink (no copy) */
	} n;                         /* kept across resets */
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
	struct roce_req_state req;
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

/* roce_mr_check's key, PD, rights and bounds checks, giving the MR itself. */
/* roce_mr_map for a strided MR (roce_mr.c): one piece per chunk the range touches, each
 * ending at its chunk's end with the gap as its room. Same returns as roce_mr_map. */
struct roce_tx_seg;
int roce_mr_map_strided(const struct roce_mr *mr, uint64_t va, uint64_t len, struct roce_tx_seg *seg, unsigned max,
			unsigned *n);

int roce_mr_find(struct roce_dev *dev, const struct roce_pd *pd, uint32_t key, bool remote, unsigned access,
		 uint64_t va, uint64_t len, struct roce_mr **out);

/* Place len received bytes, starting src_off bytes into nb, at byte off of the scatter list sg
 * (nsge elements, lkeys checked): copied into the MRs' memory (counted by class), or, where an
 * MR has a sink (roce_mr_set_sink) and the NIC left the bytes in its receive buffers, offered
 * to the sink as references to those buffers; the fragments then leave nb, which must not be
 * read again. *kept and *kept_bytes count the pieces a sink took. 0, -EACCES (an lkey check),
 * -EMSGSIZE (longer than the list), -EINVAL (nb shorter than it said). */
struct netbuf;
int roce_scatter(struct roce_dev *dev, const struct roce_pd *pd, const struct roce_sge *sg, unsigned nsge, uint32_t off,
		 struct netbuf *nb, size_t src_off, uint32_t len, uint64_t *kept, uint64_t *kept_bytes);

/* A free slot of a handle table, or -1. */
int roce_table_slot(void *const *tab, unsigned n);

#endif
