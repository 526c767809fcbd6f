/*
 * nvmet.h - the face of the NVMe over Fabrics target core: subsystems, ports, the
 * discovery subsystem, controllers with dynamic IDs, queues bound by Connect, the
 * fabrics/admin/I/O command set, keep-alive, asynchronous events. Transport-independent:
 * TCP (and later RDMA) plug in through struct nvmet_transport_ops and nvmet_exec().
 *
 * The transport contract, in one place:
 *  - A transport owns connections. For each new queue-level connection on a port it
 *    calls nvmet_queue_create(); Connect (the first command) binds the queue to a
 *    controller. When the connection goes away it calls nvmet_queue_destroy().
 *  - For each capsule it owns a struct nvmet_req (one per outstanding command, bounded
 *    by its queue depth) and calls nvmet_exec() with the 64-byte SQE and the data
 *    location: a list of dma_addr_t segments (host memory or CMB fragments) holding the
 *    write data (received in full: in-capsule or after R2T/H2CData) or receiving the
 *    read data, and the SGL1 length from the SQE it resolved (`len`).
 *    nvmet_req_data_len() tells how many bytes a command moves before data is fetched,
 *    nvmet_req_dir() the direction, and nvmet_req_needs_host_mem() whether the core will
 *    touch the data with the CPU (fabrics and admin commands, DSM ranges): those segments
 *    must then be in CPU-addressable memory (host DRAM, or identity-mapped device memory).
 *  - The core completes every command exactly once by calling the done callback with
 *    req->cqe filled (status, SQ head, SQ id, command ID, DW0/DW1) and req->xfer_len the
 *    bytes of data it produced for the host (read, identify, log page, ...): the
 *    transport sends that data (C2HData / RDMA Write) then the CQE. done may run inside
 *    nvmet_exec() (RAM disk, admin commands) or later from the poll loop (NVMe backend,
 *    held AERs). The request is the transport's again when done runs. done may call
 *    nvmet_exec() for the next capsule, but must not destroy the queue: defer that to
 *    the transport's poller.
 *  - When a controller dies (keep-alive timeout, fatal CC handling, admin Disconnect),
 *    the core calls ops->queue_kill() for each of its queues: the transport closes the
 *    connection soon (not from inside the call) and then calls nvmet_queue_destroy().
 *  - nvmet_queue_destroy() completes held AERs with SQ-deletion status (done runs inside
 *    it) and detaches the queue; commands still at the backend complete later through
 *    done as usual, after which the queue memory is released.
 *
 * Errors are negative errno values; NVMe status codes exist only in CQEs, produced by
 * nvmet_errno_status() from a backend's errno and by the command checks.
 */
#ifndef DRIVERS_NVME_TARGET_NVMET_H
#define DRIVERS_NVME_TARGET_NVMET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "../../../mm/dma.h"
#include "../nvme.h"
#include "nvmet_config.h"

/* On the definition of a per-command function a transport calls from its hot path: the
 * link-time optimizer (LTO=1) puts its body into the caller across files (its call,
 * prologue and epilogue gone), the definition stays external for every other caller. */
#define NVMET_HOT_INLINE inline __attribute__((always_inline))

#define NVMET_MAX_PORTS NVMET_CFG_MAX_PORTS
#define NVMET_MAX_SUBSYS NVMET_CFG_MAX_SUBSYS
#define NVMET_MAX_NS NVMET_CFG_MAX_NS
#define NVMET_MAX_NSID 1024u         /* Identify Controller NN */
#define NVMET_MAX_CTRLS 64u          /* live controllers, all subsystems */
#define NVMET_CTRLS_PER_PEER 8u      /* controllers one host address may hold (admin Connects) */
#define NVMET_DISC_KATO_MS 120000u   /* keep-alive of a discovery controller connected with KATO 0
				      * (as Linux nvmet): a stale discovery session is reaped */
#define NVMET_MAX_QUEUES 256u        /* queues, bound or not */
#define NVMET_MAX_IO_QUEUES 16u      /* per controller */
#define NVMET_MAX_QUEUE_SIZE 128u    /* entries per queue (CAP.MQES + 1) */
#define NVMET_AERL 4u                /* AERs held per controller */
#define NVMET_MAX_CHANGED_NS 64u     /* changed namespace list entries kept */
#define NVMET_MAX_DATA_SEGS 512u     /* segments per command the core accepts (NVME_MAX_SG) */
#define NVMET_MAX_XFER (1u << 20)    /* bytes per command (MDTS bound) */
#define NVMET_KAS_100MS 10u          /* keep-alive granularity reported in KAS: 1 s */

struct nvmet_queue;
struct nvmet_ctrl;
struct nvmet_req;

/* --- what a transport implements --- */
struct nvmet_transport_ops {
	const char *name;                /* "tcp", "rdma", "fake" */
	uint8_t trtype;                  /* enum nvmet_trtype (discovery log TRTYPE) */
	uint16_t max_queue_size;         /* entries per queue it can hold (<= NVMET_MAX_QUEUE_SIZE) */
	uint32_t in_capsule_data;        /* bytes of in-capsule data on I/O queues (IOCCSZ) */
	uint8_t msdbd;                   /* SGL data block descriptors per command (1 for TCP) */
	uint32_t sgls_extra;             /* Identify SGLS bits beyond "supported": offset, keyed */
	uint32_t max_xfer;               /* bytes per command it can move (0: NVMET_MAX_XFER) */
	/* The controller owning this queue died: close the connection soon (not inside this
	 * call), then call nvmet_queue_destroy(). reason is a negative errno for the log. */
	void (*queue_kill)(void *tctx, int reason);
};

/* The data of one command: segments in command order. */
struct nvmet_data {
	const struct nvme_sg *sg;
	unsigned nsg;
	uint32_t len;                    /* SGL1 length from the SQE (total the host described) */
	/* The transport's nvmet_req_shape() answer for this command (NULL: none): a hint that
	 * spares the core a second namespace lookup on a Read/Write. Checked, never trusted. */
	const struct nvmet_bdev *bdev;
	/* The transport counted the segments as it took them: their lengths add up to len (the
	 * core's Read/Write fast path then skips its own walk over them; false: it walks). */
	bool summed;
	/* summed, and (when len is not 0) no segment is empty and all are of one memory class:
	 * a backend's driver need not walk them for those checks (nvme_request.checked) */
	bool checked;
};

typedef void (*nvmet_done_fn)(struct nvmet_req *req, void *arg);

/* One command, owned by the transport; the core fills cqe and xfer_len. */
/* Where a command is at the core. */
enum nvmet_req_state {
	NVMET_REQ_IDLE = 0,              /* not started, or completed */
	NVMET_REQ_EXEC,                  /* in nvmet_exec() .. nvmet_req_complete() */
	NVMET_REQ_HELD,                  /* an AER held until an event (or its queue goes) */
};

struct nvmet_req {
	struct nvme_sqe sqe;             /* a private copy */
	struct nvmet_data data;
	struct nvme_cqe cqe;
	uint32_t xfer_len;               /* data bytes produced for the host */
	nvmet_done_fn done;
	void *done_arg;
	/* core private */
	struct nvmet_queue *q;
	struct nvmet_req *next_aer;
	uint64_t bio_space[12];          /* the backend I/O of this command */
	uint16_t status;                 /* NVMe status (no phase bit) on completion */
	enum nvmet_req_state state;
	uint8_t dir;                     /* enum dma_dir of the data */
};

/* --- namespace backends --- */
enum nvmet_bio_op {
	NVMET_BIO_READ = 0,
	NVMET_BIO_WRITE,
	NVMET_BIO_FLUSH,
	NVMET_BIO_WRITE_ZEROES,
	NVMET_BIO_DSM,                   /* ranges (struct nvme_dsm_range) are in sg */
};

struct nvmet_bio;
typedef void (*nvmet_bio_done_fn)(struct nvmet_bio *bio, int rc);

/* One backend request: rc 0 or a negative errno (-ERANGE past the end, -EOPNOTSUPP,
 * -EIO, -EBUSY when the backend queue is full, -ENODEV namespace gone). */
struct nvmet_bio {
	uint8_t op;                      /* enum nvmet_bio_op */
	bool fua;                        /* Force Unit Access (Read, Write, Write Zeroes) */
	bool fua_flush;                  /* core: the Flush that completes an emulated FUA write */
	uint16_t status;                 /* backend: the device's NVMe status (SCT << 8 | SC) when
					  * it failed the command, 0 when it has none */
	uint64_t slba;
	uint32_t nlb;                    /* blocks (not 0's based); DSM: ranges */
	uint32_t attr;                   /* DSM CDW11 attributes; write-zeroes DEAC */
	const struct nvme_sg *sg;
	unsigned nsg;
	nvmet_bio_done_fn done;
	void *arg;
	struct nvmet_bdev *bdev;         /* core: where it was submitted */
};
_Static_assert(sizeof(struct nvmet_bio) <= sizeof(((struct nvmet_req *)0)->bio_space), "bio fits");

struct nvmet_bdev;
#define NVMET_NS_CHECK_MS 100 /* backend readiness poll period (ops->ready) */

struct nvmet_bdev_ops {
	/* Start bio; done runs exactly once (possibly inside submit) when submit returned 0.
	 * A negative return means not started (done is not called). */
	int (*submit)(struct nvmet_bdev *b, struct nvmet_bio *bio);
	void (*close)(struct nvmet_bdev *b);
	/* Optional: write the volatile cache to media now, polling (namespace detach from the
	 * console). 0 or a negative errno. */
	int (*flush_sync)(struct nvmet_bdev *b);
	/* Optional: false while the device is gone (hot-removed). The core polls it every
	 * NVMET_NS_CHECK_MS; a change is a namespace attribute change notice to the hosts. */
	bool (*ready)(const struct nvmet_bdev *b);
	/* Optional: a Read (write false) or Write of req at slba, nlb blocks, FUA as asked, its
	 * data req->data.sg/nsg (req->data.len bytes, checked against nlb by the core), submitted
	 * to the device with nvmet_rw_done(req, rc, cqe) as its completion (no nvmet_bio). The
	 * core uses it only where FUA needs no emulation (fua, or no volatile cache). A refusal
	 * (submit's errno) is completed by the backend itself, through nvmet_rw_refused(req, rc,
	 * NULL), before it returns rc: the core's call is its last (a tail call). */
	int (*rw)(struct nvmet_bdev *b, struct nvmet_req *req, bool write, uint64_t slba, uint32_t nlb, bool fua);
	/* Optional, with rw: what rw calls, on b->route, with cdw12 the command's NLB - 1 and
	 * FUA (NVMe: nvme_submit_rw(), the route's check included): the core may call it itself,
	 * without rw's layer. */
	int (*rw_route)(struct nvme_rw_route *rt, uint64_t slba, uint32_t cdw12, struct nvme_rw_data d, void *arg);
};

/* The completion of a Read/Write a backend submitted through ops->rw (an nvme_done_fn, arg
 * the request): a device status in cqe stays the host's status (rc and cqe as the NVMe
 * driver hands them: rc != 0 with a cqe, the drive failed it). */
void nvmet_rw_done(void *req, int rc, const struct nvme_cqe *cqe);

/* A Read/Write that ops->rw could not submit (rc its errno; cqe unused, NULL): completed with
 * Namespace Not Ready for -ENODEV, else the errno's status (an nvme_done_fn, as
 * nvme_rw_route.refused). */
void nvmet_rw_refused(void *req, int rc, const struct nvme_cqe *cqe);

struct nvmet_bdev {
	const struct nvmet_bdev_ops *ops;
	uint64_t nblocks;
	unsigned lba_shift;              /* log2 of the block size */
	uint32_t max_xfer;               /* bytes per command (0: no limit of its own) */
	bool write_zeroes, dsm;          /* supported */
	/* Durability (README "Durability"): vwc = a completed write may sit in a volatile
	 * cache until a Flush; fua = the backend honours FUA itself (else the core follows a
	 * FUA write with a Flush before completing it). */
	bool vwc, fua;
	bool has_nguid, has_uuid;
	uint8_t nguid[16], uuid[16];
	void *priv;                      /* the backend's own */
	uint32_t priv_id;
	const void *priv_hint;           /* the backend's own (NVMe: the namespace it last found) */
	uint32_t priv_gen;               /* the backend's own (NVMe: the controller's gen when the
					  * namespace and the I/O queues were last found usable) */
	char name[24];
	/* the backend's own (NVMe: the controller, namespace and queue rotation of its
	 * Reads/Writes, set at open, its c cleared at close) */
	struct nvme_rw_route route;
};

/* Open the backend of config namespace ns of subsystem si: fills *out, 0 or negative errno. */
typedef int (*nvmet_bdev_open_fn)(void *ctx, unsigned si, const struct nvmet_cfg_ns *ns, struct nvmet_bdev *out);

/* RAM disk (nvmet_bdev_ram.c): nblocks of 2^lba_shift bytes from the heap. */
int nvmet_bdev_ram_open(struct nvmet_bdev *b, uint64_t nblocks, unsigned lba_shift);
/* The local NVMe host driver (nvmet_bdev_nvme.c): /dev/nvme<ctrl>n<ctrl_nsid>. */
int nvmet_bdev_nvme_open(void *ctx, unsigned si, const struct nvmet_cfg_ns *ns, struct nvmet_bdev *out);
/* The local controller behind an NVMe backend, NULL for another kind of backend. */
struct nvme_ctrl *nvmet_bdev_nvme_ctrl(const struct nvmet_bdev *b);

/* --- the target --- */

/* Build ports, subsystems and namespaces from cfg (copied), opening each enabled
 * namespace through open_fn. Returns 0, -EBUSY when already running, -EINVAL (logged)
 * for a config the core cannot serve, or the backend's error. On failure nothing stays. */
int nvmet_init(const struct nvmet_config *cfg, nvmet_bdev_open_fn open_fn, void *ctx);

/* Tear everything down: kill and free controllers and queues, close backends. Queues
 * still owned by transports are freed too: call after the transports stopped. */
void nvmet_fini(void);

bool nvmet_running(void);

/* Port by index (0..n-1) or NULL; its portid, trtype, address for the transports. */
unsigned nvmet_port_count(void);
const struct nvmet_cfg_port *nvmet_port_at(unsigned i);

/* A new queue on port index port (the transport connection), not yet connected.
 * tctx is passed back to ops. Returns 0 or -ENOMEM/-EINVAL/-ENODEV. */
int nvmet_queue_create(unsigned port, const struct nvmet_transport_ops *ops, void *tctx,
		       struct nvmet_queue **out);

/* The connection is gone: see the contract above. */
void nvmet_queue_destroy(struct nvmet_queue *q);

/* The host's address of this queue's connection (IPv4 host order, transport port), for
 * the console; the transport sets it once it knows (optional). */
void nvmet_queue_set_peer(struct nvmet_queue *q, uint32_t addr, uint16_t port);

/* The appliance's address the host connected to (IPv4 host order): what the discovery
 * log gives as TRADDR for a port listening on any address (0.0.0.0), as Linux nvmet. */
void nvmet_queue_set_local(struct nvmet_queue *q, uint32_t addr);

/* Queue ID (0 admin) and controller ID of a connected queue, -1 when not connected. */
int nvmet_queue_qid(const struct nvmet_queue *q);
int nvmet_queue_cntlid(const struct nvmet_queue *q);
/* Entries of a connected queue (SQSIZE + 1 from its Connect): the most commands the host
 * may have outstanding on it; 0 when not connected. */
unsigned nvmet_queue_size(const struct nvmet_queue *q);

/* Execute one command: see the contract above. Always completes through done. sqe is
 * copied into req->sqe, unless it is req->sqe (a transport that received the command
 * there saves the copy). */
void nvmet_exec(struct nvmet_queue *q, struct nvmet_req *req, const struct nvme_sqe *sqe,
		const struct nvmet_data *data, nvmet_done_fn done, void *arg);

/* A command the host sent while it already had nvmet_queue_size() commands outstanding
 * on q (the transport counts them): completed through done with Command Sequence Error
 * without running it (as nvmet_exec() otherwise). */
void nvmet_exec_sq_overflow(struct nvmet_queue *q, struct nvmet_req *req, const struct nvme_sqe *sqe,
			    nvmet_done_fn done, void *arg);

/* Bytes of data the command in sqe moves as the host described it (SGL1 length) and
 * its direction (DMA_TO_DEVICE: host to target). */
uint32_t nvmet_req_data_len(const struct nvme_sqe *sqe);
enum dma_dir nvmet_req_dir(const struct nvmet_queue *q, const struct nvme_sqe *sqe);
bool nvmet_req_needs_host_mem(const struct nvmet_queue *q, const struct nvme_sqe *sqe);
/* The backend serving an I/O Read/Write on a live I/O queue, NULL for other commands
 * (nvmet_io.c: the transport chooses payload memory the backend's drive can reach). */
const struct nvmet_bdev *nvmet_req_bdev(const struct nvmet_queue *q, const struct nvme_sqe *sqe);
/* What a transport asks of every command it receives, in one call: nvmet_req_data_len,
 * nvmet_req_dir, nvmet_req_bdev, nvmet_queue_qid and nvmet_queue_size (q not NULL). */
struct nvmet_req_shape {
	uint32_t len;
	enum dma_dir dir;
	int qid;
	unsigned qsize;
	const struct nvmet_bdev *bdev;
};
void nvmet_req_shape(const struct nvmet_queue *q, const struct nvme_sqe *sqe, struct nvmet_req_shape *out);
/* Did the host disable SQ flow control at Connect (CATTR)? Then C2HData SUCCESS may
 * replace the response capsule (NVMe/TCP 3.3.6). */
bool nvmet_queue_sqflow_disabled(const struct nvmet_queue *q);

/* Enable or disable namespace nsid of the subsystem with this NQN (hot change): raises
 * the namespace attribute notice on its controllers. 0, -ENOENT, -EINVAL. */
int nvmet_ns_set_enabled(const char *subnqn, uint32_t nsid, bool enabled);

/* The one errno -> NVMe status conversion (status without the phase bit). */
uint16_t nvmet_errno_status(int rc);

/* Controller states. */
enum nvmet_ctrl_state {
	NVMET_CTRL_NEW = 0,      /* allocated by an admin Connect, not yet answered */
	NVMET_CTRL_CONNECTED,    /* admin queue connected, CC.EN = 0 */
	NVMET_CTRL_ENABLED,      /* CC.EN = 1, CSTS.RDY = 1: I/O queues may connect */
	NVMET_CTRL_SHUTDOWN,     /* CC.SHN written, CSTS.SHST = complete */
	NVMET_CTRL_FAILED,       /* dead (keep-alive, CSTS.CFS, disconnect): queues being killed */
	NVMET_CTRL_STATE_COUNT
};
const char *nvmet_ctrl_state_name(enum nvmet_ctrl_state s);

/* Counters for the console and tests. */
struct nvmet_stats {
	uint64_t connects, connect_refused, ctrls_created, ctrls_freed, kato_expired;
	uint64_t peer_ctrl_limit;     /* admin Connects refused: the host address holds NVMET_CTRLS_PER_PEER */
	uint64_t sq_overflows;        /* commands beyond the queue's SQSIZE + 1 (Command Sequence Error) */
	uint64_t cmds, completions, errors, aens;
	/* durability and backend faults */
	uint64_t fua_writes, fua_emulated, flushes, flushes_skipped, shn_flushes, shn_flush_failures;
	uint64_t rw_direct;                /* Reads/Writes sent to the backend's ops->rw (no nvmet_bio) */
	uint64_t backend_errors;      /* commands the backend failed (status passed through) */
	uint64_t ns_gone;             /* namespaces whose backend device went away */
	uint64_t auth_ok, auth_failures; /* DH-HMAC-CHAP transactions per queue (nvmet_auth.c) */
	uint64_t rw_fast;             /* Reads/Writes checked against their queue's cached descriptor */
};
const struct nvmet_stats *nvmet_stats(void);
unsigned nvmet_ctrl_count(void);
unsigned nvmet_queue_count(void);

#endif
