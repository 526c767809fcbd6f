/*
 * tcp.h - the NVMe/TCP transport of the NVMe-oF target (NVMe over TCP Transport
 * Specification 1.0): listeners on the TCP ports of the configuration, one connection
 * per NVMe queue, ICReq/ICResp negotiation, CapsuleCmd -> nvmet_exec() -> C2HData +
 * CapsuleResp, termination requests on protocol errors.
 *
 * It glues three layers: the socket API (net/tcp/tcp.h, reached through struct
 * nvmet_tcp_sock_ops so host tests can put a fake socket layer underneath), the receive
 * framing (tcp_rx.h, whole PDUs whose data stays in the NIC's fragments) and the core
 * (nvmet.h, the transport contract in its header comment).
 *
 * Connection states (one set_state(), transitions logged at debug level):
 *   WAIT_ICREQ   accepted; the only PDU allowed is an ICReq. A valid ICReq creates the
 *                nvmet queue, sets the digests/alignment and sends the ICResp.
 *   ESTABLISHED  CapsuleCmd (and, later, H2CData) PDUs run commands; completions go out
 *                as C2HData + CapsuleResp through a per-connection TX backlog that waits
 *                for send space (TCP_EV_SENT).
 *   FAILED       a protocol error: the C2HTermReq (FES/FEI) was queued, the socket is
 *                closed, the queue destroyed; waits for commands still at the backend.
 *   CLOSING      closed without a protocol error (peer FIN/RST, H2CTermReq, controller
 *                killed by the core, stop); waits like FAILED.
 * A FAILED or CLOSING connection with no command left is freed by nvmet_tcp_poll().
 */
#ifndef DRIVERS_NVME_TARGET_TCP_H
#define DRIVERS_NVME_TARGET_TCP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "../../nic/netdev.h"

#define NVMET_TCP_MAX_LISTENERS 8        /* TCP ports listened on */
#define NVMET_TCP_MAX_CONNS 32           /* connections (NVMe queues), all ports */
#define NVMET_TCP_LISTEN_BACKLOG 16
#define NVMET_TCP_QUEUE_DEPTH 64         /* commands per connection (CAP.MQES + 1) */
#define NVMET_TCP_REQ_SEGS 32            /* data segments per command */
#define NVMET_TCP_IN_CAPSULE 8192        /* in-capsule data bytes on I/O queues */
#define NVMET_TCP_MAXH2CDATA (128u * 1024) /* largest H2CData PDU we accept */
#define NVMET_TCP_BUF_SIZE (16u * 1024)  /* DRAM data buffer chunk */
#define NVMET_TCP_BUFS 256               /* DRAM data buffer chunks, all connections */
#define NVMET_TCP_MAX_XFER (NVMET_TCP_REQ_SEGS * NVMET_TCP_BUF_SIZE)
#define NVMET_TCP_RX_BATCH 16            /* fragments taken from the socket per call */

struct tcp_sock;
struct tcp_ops;

/* The socket calls the transport makes (net/tcp/tcp.h semantics). */
struct nvmet_tcp_sock_ops {
	int (*listen)(uint16_t port, unsigned backlog, const struct tcp_ops *ops, void *ctx, struct tcp_sock **out);
	struct tcp_sock *(*accept)(struct tcp_sock *listener);
	void (*set_ops)(struct tcp_sock *s, const struct tcp_ops *ops, void *ctx);
	int (*recv_frags)(struct tcp_sock *s, struct netdev_frag *out, unsigned max, size_t max_bytes);
	bool (*recv_eof)(const struct tcp_sock *s);
	size_t (*send_space)(const struct tcp_sock *s);
	long (*send_copy)(struct tcp_sock *s, const void *buf, size_t len);
	void (*flush)(struct tcp_sock *s);
	void (*close)(struct tcp_sock *s);
	void (*abort)(struct tcp_sock *s);
};

enum nvmet_tcp_conn_state {
	NVMET_TCP_WAIT_ICREQ = 0,
	NVMET_TCP_ESTABLISHED,
	NVMET_TCP_FAILED,
	NVMET_TCP_CLOSING,
	NVMET_TCP_CONN_STATE_COUNT
};
const char *nvmet_tcp_conn_state_name(enum nvmet_tcp_conn_state s);

struct nvmet_tcp_stats {
	uint64_t accepted, refused;           /* refused: connection pool exhausted */
	uint64_t icreqs, term_sent, term_recv;
	uint64_t capsules, responses, c2h_pdus, c2h_bytes;
	uint64_t tx_waits;                    /* a completion waited for send space */
	uint64_t no_bufs;                     /* DRAM data buffers exhausted */
	uint64_t gathers;                     /* data in too many fragments, copied to DRAM */
	uint64_t r2ts, h2c_pdus, h2c_bytes;   /* writes whose data came after an R2T */
	uint64_t ddgst_errors;                /* data digest mismatches (the connection is closed) */
	uint64_t kills;                       /* queue_kill from the core */
	uint64_t closed, freed;
};

/*
 * Listen on every TCP port of the running target (nvmet_port_at) through sops (kept;
 * core/nvmet_boot.c passes the real socket layer). Returns 0 (also when no port is
 * TCP), -EBUSY when started, -ENOMEM, or the first listen error (nothing stays).
 */
int nvmet_tcp_start(const struct nvmet_tcp_sock_ops *sops);

/* Close the listeners and every connection (their queues are destroyed); connections
 * with commands still at the backend are freed by later polls. Call before nvmet_fini. */
void nvmet_tcp_stop(void);

/* Poll-loop work: close connections the core killed, retry the TX backlog, free
 * closed connections whose commands are done. >0 progress, 0 idle. */
int nvmet_tcp_poll(unsigned budget);

/* Connections allocated (any state), and in a given state. */
unsigned nvmet_tcp_conn_count(void);
unsigned nvmet_tcp_conn_count_state(enum nvmet_tcp_conn_state s);
const struct nvmet_tcp_stats *nvmet_tcp_stats(void);

#endif
