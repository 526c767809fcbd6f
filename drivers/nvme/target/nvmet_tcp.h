/*
 * nvmet_tcp.h - the NVMe/TCP transport of the NVMe-oF target (NVMe over TCP Transport
 * Specification 1.0): listeners on the TCP ports of the configuration, one connection
 * per NVMe queue, ICReq/ICResp negotiation, CapsuleCmd -> nvmet_exec() -> C2HData +
 * CapsuleResp, termination requests on protocol errors.
 *
 * It glues three layers: the socket API (net/tcp/tcp.h, called directly; host tests
 * link a fake TCP layer in its place), the receive
 * framing (nvmet_tcp_rx.h, whole PDUs whose data stays in the NIC's fragments) and the core
 * (nvmet.h, the transport contract in its header comment).
 *
 * Admission: at most NVMET_TCP_MAX_CONNS connections, NVMET_TCP_CONNS_PER_PEER from one
 * host address. A connection that completed Connect is authorised (tcp_set_authorised:
 * TCP never evicts it for a newcomer); when a limit is reached, the oldest connection
 * that did not (of that host, or of any host when the pool is full) is evicted before
 * a new one is refused. Every connection has TCP keep-alive (a vanished host's queue
 * goes even when its controller has no keep-alive timeout).
 *
 * Connection states (one set_state(), transitions logged at debug level):
 *   WAIT_ICREQ   accepted; the only PDU allowed is an ICReq. A valid ICReq creates the
 *                nvmet queue, sets the digests/alignment and sends the ICResp. ICReq and
 *                Connect must both come within NVMET_TCP_CONNECT_TIMEOUT_MS of the accept,
 *                and before Connect nothing is committed to a command (no R2T, no buffer).
 *   ESTABLISHED  CapsuleCmd and H2CData PDUs run commands; completions go out
 *                as C2HData + CapsuleResp through a per-connection TX backlog that waits
 *                for send space (TCP_EV_SENT). The data of an R2T must be in within
 *                NVMET_TCP_R2T_TIMEOUT_MS, else the connection is closed.
 *   FAILED       a protocol error: the C2HTermReq (FES/FEI) was queued, the socket is
 *                closed, the queue destroyed; waits for commands still at the backend.
 *   CLOSING      closed without a protocol error (peer FIN/RST, H2CTermReq, controller
 *                killed by the core, stop); waits like FAILED.
 * A FAILED or CLOSING connection with no command left and no data buffer still held by
 * TCP is freed by nvmet_tcp_poll().
 */
#ifndef DRIVERS_NVME_TARGET_NVMET_TCP_H
#define DRIVERS_NVME_TARGET_NVMET_TCP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "../../nic/netdev.h"

#define NVMET_TCP_MAX_LISTENERS 8        /* TCP ports listened on */
#define NVMET_TCP_MAX_CONNS 96           /* connections (NVMe queues), all ports */
#define NVMET_TCP_CONNS_PER_PEER 40      /* ... from one host address: two controllers of 16 I/O
					  * queues and discovery; beyond it (and when the pool is
					  * full) the oldest connection that never completed Connect
					  * is evicted, else the new one is refused */
#define NVMET_TCP_LISTEN_BACKLOG 16
#define NVMET_TCP_QUEUE_DEPTH 64         /* commands per connection (CAP.MQES + 1) */
#define NVMET_TCP_INLINE_SEGS 16         /* data segments a request holds without a table */
#define NVMET_TCP_REQ_SEGS 256           /* data segments per command (a segment table): the
					  * NIC fragments of one write, gathered by one NVMe command */
#define NVMET_TCP_SEG_TABLES 96          /* segment tables, all connections */
#define NVMET_TCP_IN_CAPSULE 8192        /* in-capsule data bytes on I/O queues */
#define NVMET_TCP_MAXH2CDATA (128u * 1024) /* largest H2CData PDU we accept */
#define NVMET_TCP_C2H_MAX (64u * 1024)   /* data bytes per C2HData PDU we send */
#define NVMET_TCP_BUF_SIZE (16u * 1024)  /* DRAM data buffer chunk */
#define NVMET_TCP_BUFS 256               /* DRAM data buffer chunks, all connections */
#define NVMET_TCP_MAX_XFER (256u * 1024) /* bytes per command (MDTS) */
#define NVMET_TCP_CHUNKS_PER_CMD (NVMET_TCP_MAX_XFER / NVMET_TCP_BUF_SIZE)
#define NVMET_TCP_DBUFS 256              /* data buffers (read data, gathered writes) alive, all connections */
#define NVMET_TCP_WRITE_HELD_MAX (2048u * 1024) /* write bytes between R2T and completion, all
					  * connections: bounds the NIC receive buffers writes hold
					  * (the default of nvmet.write_budget_kib) */
#define NVMET_TCP_WRITE_HELD_LIMIT (2048u * 1024) /* ... the most nvmet.write_budget_kib may say */
#define NVMET_TCP_HOST_SHARE 2           /* one host address holds at most 1/2 of the data
					  * buffers, DRAM chunks and segment tables (each share
					  * still fits the largest command): another host always
					  * finds the other half; of the write budget too, but
					  * only while another host's write waits for it */
#define NVMET_TCP_HOST_DEVICE_MAX (16u << 20) /* device memory (read data) one host address
					  * holds at most; beyond it its reads go through DRAM */
#define NVMET_TCP_RX_BATCH 16            /* fragments taken from the socket per call */
#define NVMET_TCP_RX_BATCHES 4           /* batches per connection per poll pass (receive budget) */
#define NVMET_TCP_PEEK_MIN 76            /* a socket holding more than a CapsuleCmd header and
					  * its digest has its PDU's common header looked at where
					  * it lies (conn_rx_may_wait); fewer bytes are taken */
#define NVMET_TCP_CONNECT_TIMEOUT_MS 10000 /* from accept to a Connected queue (ICReq + Connect) */
#define NVMET_TCP_R2T_TIMEOUT_MS 30000   /* from an R2T to the last byte of its data */
#define NVMET_TCP_KEEPALIVE_IDLE_MS 30000 /* TCP keep-alive on every connection: probes after 30 s */
#define NVMET_TCP_KEEPALIVE_INTVL_MS 5000 /* idle, every 5 s, the connection closed after */
#define NVMET_TCP_KEEPALIVE_PROBES 4     /* 4 unanswered (a vanished host found in ~50 s) */

struct nvmet_bdev;

/*
 * Where payloads may live: the P2P rules between the drive serving a namespace, the NIC
 * and the device memory (NVMe CMBs), reached through ops so that host tests can fake them
 * (core/nvmet_boot.c passes the real ones: pci/p2pdma over the NVMe drives and the NIC).
 */
struct nvmet_tcp_mem_ops {
	/* May the drive behind b move data to/from the memory of P2P provider `provider`
	 * (netdev_frag.provider, never NETDEV_PROVIDER_HOST)? 0, or -EXDEV when the P2P rules
	 * refuse the path, -ENODEV when b is not a drive; *why says why in one line. */
	int (*reach)(const struct nvmet_bdev *b, uint16_t provider, const char **why);
	/* Device memory for len bytes of read data that the drive behind b may write and the
	 * NIC may gather from. 0 with out->addr/provider/len set (no owner), -ENODEV when no
	 * provider is configured, -EXDEV when the P2P rules refuse every one, -ENOMEM when
	 * full; *why says why. */
	int (*alloc)(const struct nvmet_bdev *b, uint32_t len, struct netdev_frag *out, const char **why);
	/* Give back an allocation made by alloc (the fragment as alloc filled it). */
	void (*free)(const struct netdev_frag *f);
};

/* Why a command's payload went through host DRAM instead of device memory. */
enum nvmet_tcp_dram_reason {
	NVMET_TCP_DRAM_P2P_REFUSED = 0, /* the P2P rules refuse the drive <-> memory (or NIC) path */
	NVMET_TCP_DRAM_DIGEST,          /* data digest on a read: the CPU reads the payload */
	NVMET_TCP_DRAM_NO_CMB,          /* no device memory configured for the drive and the NIC */
	NVMET_TCP_DRAM_ALLOC,           /* device memory exhausted */
	NVMET_TCP_DRAM_OFF,             /* nvmet.p2p = off */
	NVMET_TCP_DRAM_NIC_DRAM,        /* the NIC received the write into DRAM (nic.rx_mode = plain, no provider) */
	NVMET_TCP_DRAM_FRAGMENTS,       /* a write in more fragments than a command gathers */
	NVMET_TCP_DRAM_REASON_COUNT
};
const char *nvmet_tcp_dram_reason_name(enum nvmet_tcp_dram_reason r);

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
	uint64_t peer_refused;                /* refused: the host address holds its share */
	uint64_t evicted;                     /* closed for a newcomer before completing Connect */
	uint64_t sq_overflows;                /* commands beyond the queue's SQSIZE + 1 */
	uint64_t wrong_addr;                  /* connections to an address that is not the port's traddr */
	uint64_t icreqs, term_sent, term_recv;
	uint64_t capsules, responses, c2h_pdus, c2h_bytes;
	uint64_t whole_capsules;              /* of capsules: taken in one step, whole in a receive batch */
	uint64_t success_flags;               /* reads completed by C2HData SUCCESS (no CapsuleResp) */
	uint64_t tx_waits;                    /* a completion waited for send space */
	uint64_t rx_waits;                    /* received segments left in the socket without a pass:
					       * TCP's window already took the rest of their PDU */
	uint64_t no_bufs;                     /* DRAM data buffers exhausted */
	uint64_t dbuf_fast;                   /* data buffers of one DRAM chunk taken in one check (the host
					       * within its shares) */
	uint64_t host_share;                  /* a buffer refused: the host holds its share (the command waits) */
	uint64_t write_lent;                  /* R2Ts beyond the host's share of the write budget, while no
					       * other host's write waited */
	uint64_t gathers;                     /* write data copied from NIC fragments into DRAM */
	uint64_t r2ts, h2c_pdus, h2c_bytes;   /* writes whose data came after an R2T */
	uint64_t ddgst_errors;                /* data digest mismatches (the connection is closed) */
	uint64_t kills;                       /* queue_kill from the core */
	uint64_t timeouts;                    /* closed: no ICReq/Connect in time, or R2T data that never came */
	uint64_t closed, freed;
	/* payload placement (I/O reads and writes served by a drive) */
	uint64_t p2p_reads, p2p_read_bytes;   /* read into device memory, sent from there */
	uint64_t p2p_writes, p2p_write_bytes; /* written from the NIC's device-memory fragments */
	uint64_t dram_cmds[NVMET_TCP_DRAM_REASON_COUNT];  /* payloads through DRAM, by reason */
	uint64_t dram_bytes[NVMET_TCP_DRAM_REASON_COUNT];
	uint64_t waits, resumed;              /* commands that waited for buffers, and resumed */
	uint64_t waiting_high;                /* most commands waiting at once */
	uint64_t data_dropped;                /* write data lost for want of DRAM (command failed) */
	uint64_t rx_at_once;                  /* received data taken inside its TCP_EV_RECV (no pass:
					       * conn_rx_at_once) */
};

/*
 * Listen on every TCP port of the running target (nvmet_port_at) with net/tcp's sockets;
 * payload memory through mops (kept;
 * NULL: no device memory, every payload in DRAM). A port accepts connections made to its
 * traddr only (0.0.0.0: any address). Returns 0 (also when no port is TCP), -EBUSY when
 * started, -EADDRNOTAVAIL (logged) when a traddr is not one of the appliance's addresses,
 * -ENOMEM, or the first listen error (nothing stays).
 */
int nvmet_tcp_start(const struct nvmet_tcp_mem_ops *mops);

/* Close the listeners and every connection (their queues are destroyed); connections
 * with commands still at the backend are freed by later polls. Call before nvmet_fini. */
void nvmet_tcp_stop(void);

/* Poll-loop work, at most about budget units: free closed connections whose commands
 * are done, drain the receive of connections TCP marked readable (up to
 * NVMET_TCP_RX_BATCHES batches of NVMET_TCP_RX_BATCH fragments each, one unit per batch),
 * close connections the core killed, retry the TX backlog, resume commands waiting for
 * buffers. >0 progress, 0 idle. */
int nvmet_tcp_poll(unsigned budget);

/* Connections allocated (any state), and in a given state. */
unsigned nvmet_tcp_conn_count(void);
unsigned nvmet_tcp_conn_count_state(enum nvmet_tcp_conn_state s);
const struct nvmet_tcp_stats *nvmet_tcp_stats(void);

/* nvmet.p2p: true (auto: device memory where the P2P rules allow it) or false (off: every
 * payload through host DRAM). Applies to commands from now on. */
void nvmet_tcp_set_p2p(bool on);
bool nvmet_tcp_p2p(void);

/* nvmet.write_budget_kib: the write bytes all connections may hold between R2T and
 * completion (NIC receive buffers), clamped to 128 KiB..NVMET_TCP_WRITE_HELD_LIMIT.
 * Applies to R2Ts from now on. */
void nvmet_tcp_set_write_budget(uint32_t bytes);

/* Commands waiting for a buffer right now (all connections). */
unsigned nvmet_tcp_waiting(void);

#endif
