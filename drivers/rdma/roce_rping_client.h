/*
 * roce_rping_client.h - the client side of librdmacm's rping on rxe0, so that the
 * appliance's CM active side and requester run against Linux's `rping -s`: connect to the
 * server's rdma_cm port (REQ, REP, RTU), then per round fill the start buffer with rping's
 * "rdma-ping-N: " line, SEND its address, R_Key and size; the server RDMA READs it and SENDs
 * "go"; SEND the sink buffer's; the server RDMA WRITEs into it and SENDs "go"; the sink must
 * equal the start buffer (rping's -V). After the last round: DREQ. One run at a time, buffers
 * up to ROCE_RPING_MAX_SIZE, every wait bounded (ROCE_RPING_CLIENT_IDLE_NS without progress
 * ends the run).
 */
#ifndef DRIVERS_RDMA_ROCE_RPING_CLIENT_H
#define DRIVERS_RDMA_ROCE_RPING_CLIENT_H

#include <stdint.h>
#include "roce_app.h"
#include "roce_cm.h"
#include "roce_rping.h"

#define ROCE_RPING_CLIENT_MIN_SIZE 32  /* the "rdma-ping-N: " line and some of the pattern */
#define ROCE_RPING_CLIENT_MAX_COUNT 100000
#define ROCE_RPING_CLIENT_IDLE_NS (30ull * 1000000000ull)

enum roce_rping_client_state {
	ROCE_RPC_IDLE,               /* no run (the last one's result is kept) */
	ROCE_RPC_CONNECTING,         /* REQ sent */
	ROCE_RPC_WAIT_READ,          /* our start buffer advertised: waiting for "go" */
	ROCE_RPC_WAIT_WRITE,         /* our sink buffer advertised: waiting for "go" */
	ROCE_RPC_CLOSING,            /* DREQ sent after the last round or an error */
};

struct roce_rping_client {
	enum roce_rping_client_state state;
	struct roce_net *rn;
	struct roce_pd *pd;
	struct roce_cm_conn *conn;
	struct roce_conn_res r;      /* CQ, QP, MR over the buffers */
	uint32_t peer;
	uint16_t port;
	uint32_t size;
	unsigned count, rounds;      /* rounds verified */
	uint64_t last;               /* the last progress (ns) */
	int result;                  /* of the last run: 0, or -errno (ECONNREFUSED: REJ, ETIMEDOUT, EIO, EBADMSG: data differ) */
	uint16_t rej_reason;
	uint64_t runs, failures;
};

/* Start a run against peer:port (rdma_cm), count rounds of size bytes. 0, -EBUSY (a run is
 * on), -EINVAL (size, count), -ENOMEM, or the CM's error. */
int roce_rping_client_start(struct roce_rping_client *c, struct roce_net *rn, uint32_t peer, uint16_t port,
			    unsigned count, uint32_t size);

/* Drive the run (completions, idle limit). Returns the work done. */
int roce_rping_client_poll(struct roce_rping_client *c, uint64_t now);

/* End any run and release everything. */
void roce_rping_client_stop(struct roce_rping_client *c);

const char *roce_rping_client_state_name(enum roce_rping_client_state s);

#endif
