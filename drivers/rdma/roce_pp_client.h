/*
 * roce_pp_client.h - the client side of ibv_rc_pingpong (rdma-core's example) on rxe0, so
 * that the appliance's requester runs against Linux's `ibv_rc_pingpong -g N` server: TCP to
 * the server's port 18515, our "LID:QPN:PSN:GID" out, the server's in, "done"; our RC QP to
 * RTR/RTS towards the server's; then the ping-pong as the example plays it: we SEND first,
 * and each further SEND goes once our previous one completed and the server's answer came,
 * COUNT messages each way of SIZE bytes. One run at a time; every wait bounded.
 */
#ifndef DRIVERS_RDMA_ROCE_PP_CLIENT_H
#define DRIVERS_RDMA_ROCE_PP_CLIENT_H

#include <stdbool.h>
#include <stdint.h>
#include "roce_app.h"
#include "roce_pingpong.h"

#define ROCE_PPC_RECVS 8
#define ROCE_PPC_MAX_COUNT 100000
#define ROCE_PPC_IDLE_NS (30ull * 1000000000ull)

enum roce_ppc_state {
	ROCE_PPC_IDLE,               /* no run (the last one's result is kept) */
	ROCE_PPC_CONNECTING,         /* TCP connecting */
	ROCE_PPC_EXCHANGE,           /* our address sent, the server's awaited */
	ROCE_PPC_RUNNING,            /* the ping-pong */
};

struct roce_ppc {
	enum roce_ppc_state state;
	struct roce_net *rn;
	struct roce_pd *pd;
	struct tcp_sock *sock;
	struct roce_conn_res r;      /* CQ, QP, MR over SIZE x (ROCE_PPC_RECVS + 1) */
	struct roce_pp_dest ours;
	uint32_t peer, size;
	unsigned count, sent, received;
	bool send_out, recv_seen;    /* the example's "pending" bits */
	uint64_t started, last, elapsed_ns;
	int result;                  /* of the last run: 0 or -errno */
	uint64_t runs, failures;
};

/* Start a run against peer's ibv_rc_pingpong server: count messages of size bytes each way.
 * 0, -EBUSY, -EINVAL, -ENOMEM, or TCP's error. */
int roce_ppc_start(struct roce_ppc *c, struct roce_net *rn, uint32_t peer, unsigned count, uint32_t size);

/* Drive the run. Returns the work done. */
int roce_ppc_poll(struct roce_ppc *c, uint64_t now);

/* End any run and release everything. */
void roce_ppc_stop(struct roce_ppc *c);

const char *roce_ppc_state_name(enum roce_ppc_state s);

#endif
