/*
 * roce_pingpong.h - the server side of ibv_rc_pingpong (rdma-core's libibverbs example) on
 * rxe0: the client opens TCP port 18515 and sends "LID:QPN:PSN:GID" (hex, 51 characters and
 * a NUL); we create an RC QP, take it to RTR/RTS towards the client's QPN/PSN/GID, answer
 * with ours, and close the TCP connection after the client's "done". Then every message the
 * client SENDs is answered with a SEND of the same length (the ping-pong), until the client
 * goes away (its QP gone: our SENDs fail after the retries) or the session is idle.
 * Sessions are bounded (ROCE_PP_MAX), messages to ROCE_PP_MAX_SIZE bytes.
 */
#ifndef DRIVERS_RDMA_ROCE_PINGPONG_H
#define DRIVERS_RDMA_ROCE_PINGPONG_H

#include <stdbool.h>
#include <stdint.h>
#include "roce_app.h"
#include "roce_verbs.h"

#define ROCE_PP_PORT 18515
#define ROCE_PP_MAX 2
#define ROCE_PP_MAX_SIZE 8192
#define ROCE_PP_RECVS 16             /* receive WRs kept posted */
#define ROCE_PP_MSG_LEN 52           /* sizeof "0000:000000:000000:" + 32 hex digits + NUL */
#define ROCE_PP_IDLE_NS (10ull * 1000000000ull)

struct tcp_sock;
struct roce_net;

/* One side's address as ibv_rc_pingpong exchanges it. */
struct roce_pp_dest {
	uint16_t lid;
	uint32_t qpn, psn;
	struct roce_gid gid;
};

/* Parse a message (len bytes): 0, or -EINVAL when it is not "%04x:%06x:%06x:" + 32 hex digits. */
int roce_pp_parse(const char *msg, size_t len, struct roce_pp_dest *out);

/* Format d into out[ROCE_PP_MSG_LEN] (NUL-terminated, as the example writes it). */
void roce_pp_format(const struct roce_pp_dest *d, char out[ROCE_PP_MSG_LEN]);

enum roce_pp_state { ROCE_PP_FREE, ROCE_PP_EXCHANGE, ROCE_PP_RUNNING };

struct roce_pp_session {
	enum roce_pp_state state;
	struct roce_pp *pp;
	struct tcp_sock *sock;       /* during the exchange */
	struct roce_conn_res r;       /* CQ, QP, MR and buffers */
	uint64_t last, msgs;
};

/* A client of TCP 18515 that is not ibv_rc_pingpong's (perftest's default port is the
 * same): given the socket, with its first bytes received and unread. 0 when taken. */
typedef int (*roce_pp_other_fn)(struct tcp_sock *sock, void *ctx);

struct roce_pp {
	struct roce_net *rn;
	roce_pp_other_fn other;
	void *other_ctx;
	struct roce_pd *pd;
	struct tcp_sock *listener;
	struct roce_pp_session s[ROCE_PP_MAX];
	uint64_t sessions, msgs, errors, handed_over;
};

/* Listen on TCP ROCE_PP_PORT. 0 or errno. */
int roce_pp_start(struct roce_pp *pp, struct roce_net *rn);
void roce_pp_stop(struct roce_pp *pp);

/* Hand the clients whose first message is not ours ("LLLL:" with the ':' at byte 4) to fn
 * (the perftest server), instead of waiting for a pingpong message that never comes. */
void roce_pp_set_other(struct roce_pp *pp, roce_pp_other_fn fn, void *ctx);

/* Drive the sessions (completions, idle limit). Returns the work done. */
int roce_pp_poll(struct roce_pp *pp, uint64_t now);

#endif
