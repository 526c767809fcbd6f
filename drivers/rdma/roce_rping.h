/*
 * roce_rping.h - an rping server on rxe0 (the peer of librdmacm's `rping -c`): listens on
 * rdma_cm port 7174 and, per connection, plays rping's server loop: the client SENDs the
 * address, R_Key and size of its start buffer; we RDMA READ it, SEND "go"; the client
 * SENDs its sink buffer; we RDMA WRITE what we read into it, SEND "go"; again. Proves
 * the CM, the requester (READ, WRITE, SEND), the responder (SEND) and the completer
 * against Linux, with the client's -V checking every byte. Sessions are bounded
 * (ROCE_RPING_MAX, buffers up to ROCE_RPING_MAX_SIZE), every wait has a timeout.
 */
#ifndef DRIVERS_RDMA_ROCE_RPING_H
#define DRIVERS_RDMA_ROCE_RPING_H

#include <stdint.h>
#include "roce_app.h"
#include "roce_cm.h"

#define ROCE_RPING_PORT 7174
#define ROCE_RPING_MAX 4
#define ROCE_RPING_MAX_SIZE 65536
#define ROCE_RPING_IDLE_NS (30ull * 1000000000ull)  /* a session without progress this long is closed */

struct roce_net;

/* The 16-byte buffer advertisement rping SENDs (big-endian on the wire). */
struct roce_rping_info {
	be64_t buf;
	be32_t rkey;
	be32_t size;
} __attribute__((packed));

enum roce_rping_state {
	ROCE_RPING_FREE,
	ROCE_RPING_CONNECTING,       /* REP sent */
	ROCE_RPING_WAIT_START,       /* waiting for the client's start buffer */
	ROCE_RPING_READING,
	ROCE_RPING_WAIT_SINK,        /* "go" sent, waiting for the client's sink buffer */
	ROCE_RPING_WRITING,
	ROCE_RPING_CLOSING,
};

struct roce_rping_session {
	enum roce_rping_state state;
	struct roce_cm_conn *conn;
	struct roce_conn_res r;       /* CQ, QP, MR and buffers */
	uint32_t len;                /* bytes read from the client */
	uint64_t last;               /* the last progress (ns) */
	uint64_t rounds;
};

struct roce_rping {
	struct roce_net *rn;
	struct roce_pd *pd;
	struct roce_rping_session s[ROCE_RPING_MAX];
	uint64_t sessions, rounds, errors;
};

/* Create the PD and listen on rdma_cm port ROCE_RPING_PORT. 0 or errno. */
int roce_rping_start(struct roce_rping *rp, struct roce_net *rn);
void roce_rping_stop(struct roce_rping *rp);

/* Drive the sessions (completions, timeouts). Returns the work done. */
int roce_rping_poll(struct roce_rping *rp, uint64_t now);

#endif
