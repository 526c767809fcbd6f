/*
 * roce_cm.h - the passive side of the InfiniBand communication manager (IBTA vol. 1
 * chapter 12) over the GSI QP, as Linux rdma_cm speaks it over RoCE v2: listeners by
 * ServiceID (rdma_cm's port space 0x0106 | port for TCP-like RC), REQ -> the listener
 * accepts with a QP (moved INIT -> RTR -> RTS with the REQ's path, depths and retry counts;
 * the send queue starts at the REQ's Starting PSN, the receive queue at the one our REP
 * announces) -> REP (retransmitted until the RTU or the first request, up to the REQ's Max
 * CM Retries, then REJ timeout) -> established; DREQ -> DREP with the QP to ERR and a
 * time-wait that answers retransmitted DREQs; REJ; MRA extends the REP's wait; our own
 * disconnect sends DREQ (retried, bounded) and waits for the DREP. A duplicate REQ gets
 * the REP again. Connections are bounded in total and per peer address; every wait has a
 * timeout.
 *
 * The active side (roce_cm_connect): a REQ with rdma_cm's private-data header (retransmitted
 * every ROCE_CM_ACTIVE_RTO_NS up to ROCE_CM_REQ_RETRIES times, longer after an MRA) -> the
 * peer's REP takes the QP INIT -> RTR -> RTS (its QPN, the PSNs each side announced, the
 * depths both agree on) -> RTU -> established; a duplicate REP gets the RTU again; a REJ or
 * the last timeout ends it (reported disconnected, with the reason in rej_reason).
 */
#ifndef DRIVERS_RDMA_ROCE_CM_H
#define DRIVERS_RDMA_ROCE_CM_H

#include <stdbool.h>
#include <stdint.h>
#include "roce_mad.h"
#include "roce_verbs.h"

#define ROCE_CM_MAX_CONN 32
#define ROCE_CM_MAX_PER_PEER 8
#define ROCE_CM_MAX_LISTEN 8
#define ROCE_CM_TIMEWAIT_NS 1000000000ull    /* a closed connection answers DREQs this long */
#define ROCE_CM_RTO_MIN_NS 100000000ull      /* bounds on a REP/DREQ retransmission wait */
#define ROCE_CM_RTO_MAX_NS 4000000000ull
#define ROCE_CM_DREQ_RETRIES 3
#define ROCE_CM_PS_TCP_SID(port) (0x0000000001060000ull | (uint16_t)(port))  /* rdma_cm RDMA_PS_TCP */
#define ROCE_CM_REQ_RETRIES 5                /* the active side's REQ retransmissions */
#define ROCE_CM_ACTIVE_TIMEOUT 20            /* our CM response timeout: 4.096 us * 2^20 = 4.3 s (Linux's) */
#define ROCE_CM_ACTIVE_RTO_NS 2000000000ull  /* the REQ's retransmission wait */

struct roce_net;
struct roce_cm_conn;

enum roce_cm_state {
	ROCE_CM_FREE,
	ROCE_CM_REQ_RCVD,            /* the listener is deciding */
	ROCE_CM_REP_SENT,            /* waiting for the RTU (or the first request) */
	ROCE_CM_ESTABLISHED,
	ROCE_CM_DREQ_SENT,           /* our disconnect: waiting for the DREP */
	ROCE_CM_TIMEWAIT,            /* closed; still answers DREQs */
	ROCE_CM_REQ_SENT,            /* active side: waiting for the REP */
};

enum roce_cm_event {
	ROCE_CM_EV_ESTABLISHED,      /* the QP may send */
	ROCE_CM_EV_DISCONNECTED,     /* DREQ/DREP/REJ/timeout: the QP is in ERR; the owner may destroy it */
};

/* A REQ for the listener's ServiceID: accept with roce_cm_accept (then return 0), or return
 * a REJ reason (CM_REJ_*). */
typedef int (*roce_cm_req_fn)(struct roce_cm_conn *c, const struct roce_cm_req *req, uint32_t peer_ip, void *ctx);
typedef void (*roce_cm_event_fn)(struct roce_cm_conn *c, enum roce_cm_event ev, void *ctx);

struct roce_cm_listener {
	bool used;
	uint64_t service_id;
	roce_cm_req_fn req;
	roce_cm_event_fn event;
	void *ctx;
	uint64_t reqs;
};

struct roce_cm_conn {
	enum roce_cm_state state;
	struct roce_net *rn;
	struct roce_cm_listener *l;
	uint32_t peer;               /* IPv4, host order */
	uint32_t local_id, remote_id;  /* Communication IDs */
	uint64_t tid;                /* TransactionID of the REQ (REP, RTU) or of our DREQ */
	struct roce_cm_req req;
	struct roce_qp *qp;
	uint32_t rq_psn;             /* the PSN our REP announced: the peer's first request */
	uint8_t mad[ROCE_MAD_LEN];   /* the REP or DREQ, for retransmission */
	uint64_t deadline, rto;
	unsigned retries_left;
	void *user;                  /* the listener's per-connection context */
	roce_cm_event_fn event;      /* active side: the owner's callback (no listener) */
	void *ctx;
	bool active;                 /* we sent the REQ */
	uint16_t rej_reason;         /* why it ended: the peer's REJ reason, or CM_REJ_TIMEOUT */
	uint8_t rej_len;             /* REJ private data kept in mad by roce_cm_reject_data */
};

struct roce_cm_stats {
	uint64_t req, rep_tx, rep_retx, rtu, rej_tx, rej_rx, dreq_rx, drep_tx, dreq_tx, drep_rx, mra, dup_req,
		timeouts, no_listener, no_room, unknown;
	uint64_t req_tx, req_retx, rep_rx, rtu_tx, dup_rep;  /* active side */
};

/* What roce_cm_connect needs besides the QP. */
struct roce_cm_connect_param {
	uint32_t peer;               /* IPv4, host order */
	uint16_t port;               /* the peer's rdma_cm port (RDMA_PS_TCP) */
	uint16_t src_port;           /* ours, for rdma_cm's header */
	uint8_t responder_resources; /* READs/atomics we take at once */
	uint8_t initiator_depth;     /* READs/atomics we send at once */
	const void *priv;            /* private data after rdma_cm's header */
	size_t len;                  /* at most CM_REQ_PRIVATE_LEN - CM_RDMA_CM_HDR_LEN */
	roce_cm_event_fn event;      /* ESTABLISHED once the REP is taken, DISCONNECTED at the end */
	void *ctx;
};

struct roce_cm {
	struct roce_cm_listener ls[ROCE_CM_MAX_LISTEN];
	struct roce_cm_conn conns[ROCE_CM_MAX_CONN];
	uint32_t next_id;
	struct roce_cm_stats st;
};

/* Listen on service_id. 0, -EEXIST, -ENOSPC. */
int roce_cm_listen(struct roce_net *rn, uint64_t service_id, roce_cm_req_fn req, roce_cm_event_fn event, void *ctx);
void roce_cm_unlisten(struct roce_net *rn, uint64_t service_id);

/* Accept the REQ of c (from its listener's callback) with qp, an RC QP in INIT on rn's
 * device: the QP goes to RTR and RTS with the REQ's attributes, and the REP (with len bytes
 * of private data, at most CM_REP_PRIVATE_LEN) goes out. 0 or -EINVAL. */
int roce_cm_accept(struct roce_cm_conn *c, struct roce_qp *qp, const void *priv, size_t len);

/* The active side: connect qp (an RC QP in INIT on rn's device) to p->peer's rdma_cm port.
 * The REQ goes out now; p->event reports the outcome. 0, -EINVAL (QP state, no address,
 * private data too long), -EBUSY (qp belongs to another connection), -ENOSPC (connections in
 * use: in total or towards that peer). */
int roce_cm_connect(struct roce_net *rn, struct roce_qp *qp, const struct roce_cm_connect_param *p,
		    struct roce_cm_conn **out);

/* From the listener's REQ callback, before it returns a REJ reason: len bytes (at most
 * the REJ's 148) of private data for that REJ (an NVMe/RDMA reject status, say). */
void roce_cm_reject_data(struct roce_cm_conn *c, const void *priv, size_t len);

/* Disconnect an established connection: QP to ERR, DREQ sent (retried), DREP awaited. */
int roce_cm_disconnect(struct roce_cm_conn *c);

/* The owner lets go of c: its QP is no longer touched and no more events come (call before
 * destroying the QP of a connection that has not been reported disconnected). */
void roce_cm_detach(struct roce_cm_conn *c);

/* A CM MAD from peer_ip (the GSI's receive path; mad: the 256 bytes, m: parsed). */
void roce_cm_rx(struct roce_net *rn, uint32_t peer_ip, const uint8_t *mad, const struct roce_mad *m);

/* The CM's timers at now: REP/DREQ retransmissions, give-ups, time-waits ending, and the
 * first request on a QP whose RTU was lost. Returns how many events happened. */
int roce_cm_poll(struct roce_net *rn, uint64_t now);

const char *roce_cm_state_name(enum roce_cm_state s);

#endif
