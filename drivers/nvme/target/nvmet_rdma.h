/*
 * nvmet_rdma.h - the NVMe/RDMA transport of the NVMe-oF target (NVM Express RDMA
 * Transport Specification 1.0) over the appliance's software RoCE v2 (drivers/rdma):
 * one RC queue pair per NVMe queue, set up by the RDMA CM on the port's service ID
 * (rdma_cm's TCP port space, trsvcid 4420) with the NVMe/RDMA private data; command
 * capsules arrive by SEND into receive buffers posted for the whole queue (SQE + in-capsule
 * data), host write data is fetched with RDMA READ, read data delivered with RDMA WRITE,
 * every response goes back by SEND (SEND with Invalidate when the host's keyed SGL asked
 * for it). Commands run at the transport-independent core (nvmet.h) exactly as TCP's do.
 *
 * Credits: the host may have HSQSIZE + 1 capsules outstanding; exactly that many receive
 * buffers are posted, and a buffer is posted again only when its command's response is
 * queued, so a host that sends more gets RNR NAKs from the RC layer, never our memory. A
 * response goes only when the send queue has room for it (and its RDMA WRITE); until then
 * it waits in its queue's FIFO.
 *
 * Queue states (one set_state(), logged at debug level):
 *   CONNECTING  the REQ was accepted (REP sent); capsules may already come (the RTU can be
 *               lost); Connect must complete within NVMET_RDMA_CONNECT_TIMEOUT_MS.
 *   LIVE        the CM reported the connection established.
 *   CLOSING     disconnected (DREQ from the host, our DREQ after the core killed the
 *               controller, a work completion in error, a timeout, no send completion for
 *               NVMET_RDMA_SEND_STALL_MS while some are outstanding, stop): the QP is in ERR,
 *               its work requests flushed, the nvmet queue destroyed; the queue is freed
 *               once no command of it is left at the core.
 * A host that reconnects gets new queues (Linux's error recovery reconnects a controller).
 *
 * Bounded: NVMET_RDMA_MAX_QUEUES queues, NVMET_RDMA_QUEUES_PER_PEER per host address; data
 * buffers from two pools (small and large), of which one host address holds at most half
 * (NVMET_RDMA_HOST_SHARE), 1/n while n > 2 host addresses hold some or wait for one (so a
 * third host is not kept out by two that keep their halves busy); the NIC receive buffer
 * budget of write data left in place is shared the same way; a command that finds none
 * waits in its queue's buffer FIFO
 * (bounded by the queue depth) and is retried from every poll pass. Commands waiting for
 * send room wait in a FIFO of their own: they hold the buffers the buffer FIFO waits for,
 * so they never wait behind it.
 */
#ifndef DRIVERS_NVME_TARGET_NVMET_RDMA_H
#define DRIVERS_NVME_TARGET_NVMET_RDMA_H

#include <stdbool.h>
#include <stdint.h>
#include "../../../lib/list.h"
#include "../../rdma/roce_cm.h"
#include "../../rdma/roce_verbs.h"
#include "nvmet.h"
#include "nvmet_rdma_wire.h"
#include "nvmet_tcp.h"                   /* the payload memory ops and DRAM reasons both transports share */

#define NVMET_RDMA_MAX_QUEUES 24         /* NVMe queues (RC QPs), all hosts */
#define NVMET_RDMA_QUEUES_PER_PEER 20    /* ... from one host address: discovery, admin, 16 I/O, spare */
#define NVMET_RDMA_QUEUE_DEPTH 64        /* I/O queue entries (CAP.MQES + 1): responses and their
					  * RDMA WRITEs fill the QP's ROCE_MAX_WR send entries */
#define NVMET_RDMA_IN_CAPSULE 4096       /* in-capsule data bytes on I/O queues (IOCCSZ) */
#define NVMET_RDMA_MAX_XFER (128u * 1024) /* bytes per command (MDTS) */
#define NVMET_RDMA_SMALL_SIZE 8192u      /* data buffer classes: small ... */
#define NVMET_RDMA_SMALL_BUFS 128
#define NVMET_RDMA_LARGE_SIZE NVMET_RDMA_MAX_XFER /* ... and large */
#define NVMET_RDMA_LARGE_BUFS 24
#define NVMET_RDMA_HOST_SHARE 2          /* one host address holds at most 1/2 of each class (1/n
					  * while n > 2 host addresses compete for it) */
#define NVMET_RDMA_SG_TABLES 32          /* strided read buffers alive (their NVMe segment tables) */
#define NVMET_RDMA_SG_MAX (NVMET_RDMA_MAX_XFER / 1024) /* segments per table: one per 1 KiB path-MTU chunk */
#define NVMET_RDMA_CHUNK_GAP 8           /* scratch behind each chunk of a strided read buffer (pad + ICRC) */
#define NVMET_RDMA_HOST_DEVICE_MAX (16u << 20) /* device memory one host address holds at most;
					  * beyond it its payloads go through DRAM (cmb-full) */
#define NVMET_RDMA_RX_HOLD_DIV 4         /* write data left in place holds at most 1/4 of the NIC's
					  * receive buffers (netdev rx_bufs), a host address half of
					  * that (or one command when it holds none) */
#define NVMET_RDMA_RX_CAPSULE_DIV 8      /* capsules' in-capsule data left in place holds at most 1/8
					  * of them (a budget of its own), a host address half of that */
#define NVMET_RDMA_CAPSULE_FRAGS 8       /* NIC receive buffers one capsule's SEND stays in at most
					  * (SQE + 4 KiB: 5 at path MTU 1024, 2 at 4096) */
#define NVMET_RDMA_CONNECT_TIMEOUT_MS 10000 /* from the REP to a Connected queue */
#define NVMET_RDMA_SEND_STALL_MS 30000   /* send work requests outstanding and none completed for
					  * that long: the host stopped taking them (RNR NAKs for
					  * ever: its REQ's rnr_retry 7 is infinite; or an ACK
					  * timeout beyond any retry budget): the queue closes */
#define NVMET_RDMA_CMA_HDR_LEN 36        /* rdma_cm's header in front of the REQ private data
					  * (version, IP version, port, source and destination) */
#define NVMET_RDMA_MAX_LISTEN 4          /* RDMA ports */

enum nvmet_rdma_queue_state {
	NVMET_RDMA_Q_CONNECTING = 0,
	NVMET_RDMA_Q_LIVE,
	NVMET_RDMA_Q_CLOSING,
	NVMET_RDMA_Q_STATE_COUNT
};
const char *nvmet_rdma_queue_state_name(enum nvmet_rdma_queue_state s);

enum nvmet_rdma_rsp_state {
	NVMET_RDMA_RSP_FREE = 0,
	NVMET_RDMA_RSP_WAIT_BUF,         /* waiting for a data buffer (in the queue's bufq) */
	NVMET_RDMA_RSP_WAIT_READ,        /* ... for send queue room for its RDMA READ (waitq) */
	NVMET_RDMA_RSP_READING,          /* RDMA READ of the host's write data posted */
	NVMET_RDMA_RSP_EXEC,             /* at the core */
	NVMET_RDMA_RSP_WAIT_SQ,          /* response waiting for send queue room (waitq) */
	NVMET_RDMA_RSP_SENDING,          /* RDMA WRITE + SEND posted */
	NVMET_RDMA_RSP_TX_HELD,          /* done, but the NIC still reads frames gathered from its
					  * device buffer: freed when the last one is done */
};

struct nvmet_rdma;
struct nvmet_rdma_queue;

/* A data buffer: a slot of one of the two DRAM pools (registered once, one MR per pool),
 * or device memory from the placement ops (nvmet_rdma_place.c: its own MR, dev set). */
struct nvmet_rdma_buf {
	uint8_t *p;                      /* CPU address (identity-mapped), NULL: no buffer */
	dma_addr_t addr;                 /* what the drive is given: DRAM or device memory */
	uint32_t size;
	uint32_t lkey;
	uint8_t cls;                     /* 0 small, 1 large (DRAM) */
	uint16_t slot;
	bool device;                     /* device memory: mr and dev below */
	struct roce_mr *mr;
	struct netdev_frag dev;          /* as the placement ops' alloc filled it */
	struct nvme_sg *sgt;             /* strided read data: one segment per path-MTU chunk; write data
					  * in place: one per held fragment; NULL (or nsg 0): one */
	unsigned nsg;
	int sgt_slot;
	/* write data left in place (nvmet_rdma_place.c): the RDMA READ responses' payloads the
	 * completer handed over (the MR's sink) in the NIC's receive buffers, in order from
	 * byte 0, each holding its buffer until the NVMe Write completed */
	struct netdev_frag *frags;       /* the segment table's fragment table, NULL: not in place */
	unsigned nfrags;
	uint32_t frag_bytes;
	unsigned rx_reserved;            /* NIC receive buffers reserved for them (the holds' budget) */
	uint8_t copy_reason;             /* why the write data is copied when frags is NULL (DRAM reason) */
	bool sink_on;                    /* the MR hands the READ responses over (roce_mr_set_sink) */
};

/* A capsule's SEND left in the NIC's receive buffers (the capsule MR's sink): its pieces in
 * order from byte 0, each holding its buffer, until the command completed. */
struct nvmet_rdma_cfrags {
	struct netdev_frag f[NVMET_RDMA_CAPSULE_FRAGS];
	unsigned n;
	uint32_t bytes;
};

/* One command in flight, from its capsule to its response's completion. */
struct nvmet_rdma_rsp {
	enum nvmet_rdma_rsp_state state;
	struct nvmet_rdma_queue *rq;
	unsigned idx;
	unsigned capsule;                /* receive buffer holding the capsule */
	uint32_t capsule_len;            /* bytes received */
	struct nvme_sqe sqe;
	struct nvmet_rdma_sgl sgl;
	struct nvmet_req req;
	struct nvme_sg sg;
	struct nvmet_rdma_buf buf;       /* buf.p NULL: none */
	struct nvme_sg isg[NVMET_RDMA_CAPSULE_FRAGS]; /* in-capsule data in the NIC's buffers: a segment per piece */
	unsigned nisg;                   /* 0: r->sg (or the buffer's table) */
	uint32_t len;                    /* data length the core is told (SGL1's) */
	uint8_t dir;                     /* enum dma_dir */
	unsigned wr_pending;             /* posted work requests not completed yet */
	unsigned tx_refs;                /* frames the NIC still reads from its device buffer */
	struct list_node wait_node;
};

struct nvmet_rdma_queue {
	enum nvmet_rdma_queue_state state;
	struct list_node node;
	struct nvmet_rdma *t;
	struct roce_cm_conn *cm;
	struct roce_cq *cq;
	struct roce_qp *qp;
	struct roce_mr *mr;              /* over mem: capsules, then responses */
	uint8_t *mem;
	struct nvmet_queue *q;
	unsigned port;                   /* nvmet port index */
	uint32_t peer;                   /* host IPv4, host order */
	uint16_t host_qid;               /* the QID of the REQ */
	unsigned depth;                  /* receive buffers: HSQSIZE + 1 */
	unsigned capsule_size;           /* bytes per receive buffer: SQE + in-capsule data */
	unsigned nrsp;
	struct nvmet_rdma_rsp *rsps;
	unsigned sq_used, sq_max;        /* send work requests outstanding, and the QP's room */
	unsigned pending[NVMET_RDMA_QUEUE_DEPTH]; /* capsules received while no rsp was free */
	uint32_t pending_len[NVMET_RDMA_QUEUE_DEPTH];
	unsigned npending;
	struct list_node waitq;          /* rsps waiting for send room (a READ, a response), in order */
	struct list_node bufq;           /* rsps waiting for a data buffer, in order: never in front of
					  * waitq, whose rsps hold the buffers bufq's wait for */
	unsigned busy;                   /* rsps not FREE */
	unsigned at_core;                /* rsps in EXEC */
	unsigned bufs[2];                /* data buffers held, by class */
	unsigned rx_reserved;            /* NIC receive buffers reserved for write data in place */
	struct nvmet_rdma_cfrags *cfr;   /* per receive buffer: the capsule's SEND in the NIC's buffers */
	unsigned tx_refs;                /* frames the NIC still reads from its rsps' device buffers */
	unsigned tx_held;                /* rsps in TX_HELD */
	unsigned rx_capsule;             /* NIC receive buffers its capsules hold */
	uint32_t dev_bytes;              /* device memory held */
	uint64_t deadline;               /* CONNECTING: Connect must be done by then (ns) */
	unsigned sq_done, sq_seen;       /* send completions, and their count when last looked at */
	uint64_t sq_stamp;               /* when the poller last saw the send queue empty or moving */
	bool kill_pending, destroyed;
	int kill_reason;
	/* counters (console) */
	uint64_t capsules, rdma_reads, read_bytes, rdma_writes, write_bytes, sends, send_invs;
	uint64_t p2p_bytes, dram_bytes;  /* keyed payload bytes placed in device memory / in DRAM */
};

struct nvmet_rdma_stats {
	uint64_t reqs, accepted, rejected, rej_status[NVME_RDMA_CM_INVALID_CNTLID + 1];
	uint64_t peer_refused, no_queue;      /* REQs refused: the host's share, the table */
	uint64_t established, disconnects, kills, timeouts, wc_errors, closed, freed;
	uint64_t sq_stalls;                   /* queues closed: no send completion for NVMET_RDMA_SEND_STALL_MS */
	uint64_t capsules, short_capsules, responses, send_invs;
	uint64_t rdma_reads, read_bytes, rdma_writes, write_bytes, inline_writes, inline_bytes;
	uint64_t sgl_refused;                 /* commands whose SGL1 the transport could not serve */
	uint64_t buf_waits, sq_waits, resumed, host_share;
	/* placement: payloads in device memory (reads: the host reads, the drive writes into
	 * it; writes: the host writes, the drive reads from it), and through DRAM per reason */
	uint64_t p2p_reads, p2p_read_bytes, p2p_writes, p2p_write_bytes;
	uint64_t p2p_strided;                 /* reads into a strided buffer (a chunk per packet) */
	/* writes whose NVMe Write gathered the RDMA READ responses where the NIC put them, and
	 * writes whose data was copied out of the NIC's buffers into their device buffer instead,
	 * per reason (p2p-refused: the drive may not read the NIC's memory in place, nvmet.peer_sgl;
	 * nic-dram: not received into device memory; fragments: more pieces than a table holds) */
	uint64_t inplace_writes, inplace_bytes;
	uint64_t copy_cmds[NVMET_TCP_DRAM_REASON_COUNT], copy_bytes[NVMET_TCP_DRAM_REASON_COUNT];
	uint64_t rx_waits;                    /* writes that waited for the NIC receive buffer budget */
	uint64_t inline_inplace, inline_inplace_bytes; /* in-capsule writes the drive read in the NIC's buffers */
	uint64_t capsule_copied;              /* capsules copied out of the NIC's buffers into their DRAM buffer */
	uint64_t tx_deferred;                 /* commands done while the NIC still read their device buffer */
	uint64_t rx_held, rx_held_peak;       /* NIC receive buffers held by write data now, and at most */
	uint64_t dram_cmds[NVMET_TCP_DRAM_REASON_COUNT], dram_bytes[NVMET_TCP_DRAM_REASON_COUNT];
};

struct nvmet_rdma {
	struct roce_net *rn;
	struct roce_dev *dev;
	struct roce_pd *pd;
	uint16_t listen[NVMET_RDMA_MAX_LISTEN]; /* rdma_cm ports listened on */
	unsigned nlisten;
	struct list_node queues;
	unsigned nqueues;
	/* data buffer pools */
	uint8_t *pool_mem[2];
	struct roce_mr *pool_mr[2];
	uint32_t pool_size[2];
	unsigned pool_count[2], pool_used[2];
	uint8_t pool_map[2][NVMET_RDMA_SMALL_BUFS];  /* slot in use */
	/* where payloads go (nvmet_rdma_place.c): the P2P rules, NULL: always DRAM (no-cmb) */
	const struct nvmet_tcp_mem_ops *mops;
	bool p2p_off;                    /* nvmet.p2p = off */
	struct nvme_sg (*sgt)[NVMET_RDMA_SG_MAX]; /* NVMET_RDMA_SG_TABLES segment tables (heap) */
	uint8_t sgt_used[NVMET_RDMA_SG_TABLES];
	struct netdev_frag (*fragt)[NVMET_RDMA_SG_MAX]; /* a fragment table beside each segment table (heap) */
	unsigned rx_reserved;            /* NIC receive buffers reserved for write data in place, all hosts */
	unsigned rx_capsule;             /* NIC receive buffers capsules hold, all hosts */
	/* read data's device buffers held by the frames the NIC gathers from them (their MRs'
	 * transmit owner, roce_mr_set_tx_owner; the token is the rsp) */
	struct roce_mr_tx_owner txo;
	struct netdev_frag_owner tx_owner;
	bool copy_logged[NVMET_TCP_DRAM_REASON_COUNT]; /* write data copied out of the NIC's buffers, once */
	bool reason_logged[2][NVMET_TCP_DRAM_REASON_COUNT]; /* by direction (write), once */
	struct nvmet_rdma_stats st;
	bool started;
};

/*
 * Listen on every RDMA port of the running target (nvmet_port_at, trtype rdma) through
 * rn's CM, and allocate the PD and data buffer pools on rn's device. Returns 0 (also when
 * no port is RDMA: nothing is allocated then), -EBUSY when started, -ENODEV without a
 * device, -ENOMEM, or the first listen error (nothing stays).
 */
int nvmet_rdma_start(struct nvmet_rdma *t, struct roce_net *rn);

/* Where the payloads of namespace I/O go from now on: device memory through mops (the
 * same P2P placement the NVMe/TCP transport uses; NULL: DRAM), unless p2p is false
 * (nvmet.p2p = off). Call after nvmet_rdma_start (which starts with DRAM only). */
void nvmet_rdma_set_placement(struct nvmet_rdma *t, const struct nvmet_tcp_mem_ops *mops, bool p2p);

/* Disconnect every queue (DREQ), destroy them, stop listening, free the pools. Queues
 * with commands still at the core are freed by later polls; call before nvmet_fini. */
void nvmet_rdma_stop(struct nvmet_rdma *t);

/* Poll-loop work, about budget completions: each queue's completions (capsules, RDMA READ
 * done, responses sent), waiting commands resumed, killed or timed-out queues closed,
 * closed queues freed once nothing of them is at the core. >0 progress, 0 idle. A zeroed
 * instance that was never started polls as idle. */
int nvmet_rdma_poll(struct nvmet_rdma *t, unsigned budget);

/* Queues allocated (any state) and in a state. */
unsigned nvmet_rdma_queue_count(const struct nvmet_rdma *t);
unsigned nvmet_rdma_queue_count_state(const struct nvmet_rdma *t, enum nvmet_rdma_queue_state s);

/* Print the queues (QPN, peer, QID, state, credits, commands, bytes) and the counters. */
void nvmet_rdma_show(const struct nvmet_rdma *t);

/* The appliance's instance (nvmet_rdma_boot.c), NULL before it was started. */
const struct nvmet_rdma *nvmet_rdma_boot(void);

#endif
