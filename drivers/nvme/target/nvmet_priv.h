/*
 * nvmet_priv.h - layouts shared by the target core's files (nvmet_core.c: objects,
 * dispatch, keep-alive, events; nvmet_fabrics.c: Connect, properties, Disconnect;
 * nvmet_admin.c: Identify, logs,
 * features; nvmet_io.c: NVM commands; nvmet_command.c: the console). Not for transports.
 */
#ifndef DRIVERS_NVME_TARGET_NVMET_PRIV_H
#define DRIVERS_NVME_TARGET_NVMET_PRIV_H

#include "../../../lib/list.h"
#include "../../../lib/timer.h"
#include "nvmet.h"
#include "nvmet_ana.h"
#include "nvmet_auth.h"
#include "nvmet_wire.h"

#define NVMET_ERR_LOG_ENTRIES 16u /* Error Information log entries kept per controller (ELPE + 1) */

struct nvmet_ns {
	uint32_t nsid;
	bool enabled;          /* attached by configuration (console, nvmet.json) */
	bool opened;           /* bdev valid */
	bool gone;             /* the backend's device went away: out of the active list */
	struct nvmet_bdev bdev;
	const struct nvmet_cfg_ns *cfg;
};

/* Active (in the active namespace list, visible and accepting I/O): enabled and its
 * device present. */
static inline bool nvmet_ns_active(const struct nvmet_ns *ns)
{
	return ns->enabled && !ns->gone;
}

struct nvmet_subsys {
	const struct nvmet_cfg_subsys *cfg;
	bool discovery;
	unsigned nns;
	struct nvmet_ns ns[NVMET_MAX_NS];
	uint32_t ns_max_xfer;  /* smallest max_xfer of the opened namespaces' backends (0: none
				* limits): kept by nvmet_subsys_ns_opened(), so that a command's
				* MDTS check does not walk the namespaces */
	uint16_t next_cntlid;
	unsigned nctrls;
	uint64_t read_bytes, write_bytes, read_cmds, write_cmds; /* SMART / Health */
};

/* One Error Information log entry (Get Log Page 01h), kept compact; the page is built
 * from these newest first. */
struct nvmet_err_entry {
	uint64_t count;        /* Error Count: this controller's error number, from 1 */
	uint64_t lba;          /* first LBA of an NVM command, else 0 */
	uint32_t nsid;
	uint16_t sqid, cid;
	uint16_t status;       /* the CQE's status field (DNR included, phase bit 0) */
};

/*
 * The Read/Write fast path of one I/O queue: what the checks of nvmet_exec() and
 * nvmet_exec_io() found for the last Read/Write that passed them up to the namespace's own
 * (LBA range, MDTS, length), kept so that the next Read/Write to the same NSID skips them.
 * Built by nvmet_rw_fast_build() (nvmet_io.c) for a command on a live I/O queue of an
 * enabled controller, to an active and opened namespace whose ANA group is accessible
 * through the controller's port. Valid while gen equals nvmet_tgt.rw_gen: every writer of a
 * fact it caches calls nvmet_rw_fast_invalidate(), which drops the descriptor of every queue.
 * The facts and their writers (the audit):
 *  - the queue's state, qid, controller (q->state, q->qid, q->ctrl): nvmet_queue_create,
 *    queue_unbind, nvmet_queue_destroy, nvmet_ctrl_kill (nvmet_core.c), Connect and
 *    Disconnect (nvmet_fabrics.c), the failed authentication (nvmet_auth.c);
 *  - the controller's state (ENABLED: CC.EN, CC.SHN, kill, fini) and its subsystem, port,
 *    transport: nvmet_ctrl_set_state (the one place states change), nvmet_ctrl_alloc;
 *  - the namespace's attachment (enabled, opened, gone: nvmet_ns_set_enabled, ns_check,
 *    close_namespaces, nvmet_init), its backend's fields (filled by the open, before opened)
 *    and the subsystem's ns_max_xfer (nvmet_subsys_ns_opened): MDTS;
 *  - the ANA state of the namespace's group on the port (nvmet_ana_init, nvmet_ana_set_state);
 *  - nvmet_init and nvmet_fini (everything).
 * There is no reservation or write-protect state in this target. The backend's own state
 * (an NVMe drive reset, its namespace going) is the backend's check at submission, as on
 * the general path. What differs per command stays checked per command (nvmet_exec):
 * opcode, NSID, PSDT, FUSE, SGL1 type, the transport's segments (summed only), the queue's
 * authentication; then LBA range, MDTS and length as on the general path (exec_rw).
 */
struct nvmet_rw_fast {
	uint64_t gen;          /* nvmet_tgt.rw_gen when built (0: never; rw_gen is never 0) */
	uint32_t nsid;
	struct nvmet_ns *ns;
	uint32_t mdts;         /* nvmet_ctrl_mdts_inline() of the queue's controller */
	uint32_t ns_bit;       /* the namespace's bit in nvmet_ctrl.ns_written */
	bool direct;           /* the backend's ops->rw serves it (FUA honoured or nothing volatile) */
	struct nvme_rw_route *route; /* direct, and the backend has ops->rw_route: its route (the core
				      * makes ops->rw's call itself), else NULL */
	int (*rw_route)(struct nvme_rw_route *rt, uint64_t slba, uint32_t cdw12, struct nvme_rw_data d,
			void *arg);  /* the backend's ops->rw_route, with route */
};

struct nvmet_queue_stats {
	uint64_t cmds, completions, errors, read_bytes, write_bytes;
};

enum nvmet_queue_state {
	NVMET_Q_NEW = 0,       /* waiting for Connect */
	NVMET_Q_LIVE,          /* bound to a controller */
	NVMET_Q_DEAD,          /* controller died, waiting for the transport to destroy */
	NVMET_Q_DESTROYED,     /* transport gone; freed when the last command completes */
};

struct nvmet_queue {
	enum nvmet_queue_state state;
	unsigned port;
	const struct nvmet_transport_ops *ops;
	void *tctx;
	struct nvmet_ctrl *ctrl;
	uint16_t qid;
	uint16_t size;         /* entries (SQSIZE + 1) */
	uint16_t sqhd;
	bool sqflow_off;
	bool destroying;       /* inside nvmet_queue_destroy() */
	uint32_t peer_addr;    /* the host's IPv4 address (host order), 0 unknown */
	uint16_t peer_port;    /* its transport port (TCP source port) */
	uint32_t local_addr;   /* the appliance's address it was made to, 0 unknown */
	unsigned inflight;     /* commands started and not yet completed (held AERs included) */
	struct nvmet_queue_stats st;
	struct nvmet_auth_queue auth; /* DH-HMAC-CHAP (nvmet_auth.c) */
	struct list_node node; /* all queues */
	struct nvmet_rw_fast rw_fast; /* the Read/Write fast path of this queue (above) */
};

/* An asynchronous event kind of a controller: raised and waiting for an AER (pending),
 * reported and masked until the host reads its log page with RAE clear (masked). */
struct nvmet_aen {
	bool pending, masked;
};

struct nvmet_ctrl {
	enum nvmet_ctrl_state state;
	struct nvmet_subsys *subsys;
	unsigned port;
	uint16_t cntlid;
	char hostnqn[NVMF_NQN_FIELD_LEN];
	uint8_t hostid[16];
	const struct nvmet_transport_ops *ops;
	uint32_t cc, csts;
	uint32_t kato_ms;      /* keep-alive timeout in force (0: none) */
	bool traffic;          /* a command came since the keep-alive timer was (re)started:
				* traffic based keep-alive (CTRATT.TBKAS), checked when it fires */
	uint32_t peer_addr;    /* the host address of the admin queue (NVMET_CTRLS_PER_PEER) */
	uint32_t local_addr;   /* the appliance's address the admin queue was made to */
	uint32_t aec;          /* Asynchronous Event Configuration */
	uint16_t nr_io_queues; /* allowed I/O queues (Set Features Number of Queues) */
	uint16_t sqsize_max;
	struct nvmet_queue *queues[NVMET_MAX_IO_QUEUES + 1];
	unsigned nqueues;      /* bound queues */
	struct nvmet_req *aers; /* held AERs, LIFO */
	unsigned naers;
	bool aen_ns_pending;   /* a namespace notice waits for an AER */
	bool aen_ns_masked;    /* reported, masked until the log page is read */
	uint32_t changed_ns[NVMET_MAX_CHANGED_NS];
	unsigned nchanged;
	bool changed_overflow;
	struct nvmet_aen aen_ana;   /* ANA change notice (nvmet_ana.c) */
	struct nvmet_aen aen_disc;  /* discovery log change notice (nvmet_referral.c) */
	uint64_t err_count;    /* errors so far (Error Count of the newest entry) */
	struct nvmet_err_entry errlog[NVMET_ERR_LOG_ENTRIES]; /* ring: entry n at (n - 1) % size */
	struct timer kato_timer;
	struct timer reap_timer; /* no queue left: freed from the poll loop, never inside a call
				  * that may still use it (a completion, nvmet_ctrl_kill) */
	bool reaping;
	struct list_node node;
	/* CC.SHN: Flush of every namespace this controller wrote to before CSTS.SHST = 10b */
	uint32_t ns_written;   /* bit i: subsys->ns[i] got a write from this controller */
	unsigned shn_pending;  /* Flushes in flight for the shutdown */
	bool shn_failed;
	bool free_deferred;    /* freed once the shutdown Flushes are back */
	struct nvmet_bio shn_bio[NVMET_MAX_NS];
	struct nvmet_auth_ctrl auth; /* the host's DH-HMAC-CHAP keys (nvmet_auth.c) */
};
_Static_assert(NVMET_MAX_NS <= 32, "ns_written is 32 bits");

struct nvmet_target {
	bool running;
	struct nvmet_config cfg;
	struct nvmet_subsys subsys[NVMET_MAX_SUBSYS];
	struct nvmet_subsys disc;
	struct nvmet_cfg_subsys disc_cfg;
	unsigned nsubsys;
	uint64_t genctr;
	struct list_node ctrls;
	struct list_node queues;
	unsigned nctrls, nqueues;
	struct nvmet_stats st;
	struct timer ns_check;  /* backend readiness poll, armed when a backend reports it */
	struct nvmet_ana ana;   /* ANA group states per port (nvmet_ana.c) */
	uint64_t rw_gen;        /* generation of every queue's rw_fast (from 1, 64 bits: never wraps) */
	bool rw_fast_off;       /* tests: build no rw_fast (every command the general way) */
};

extern struct nvmet_target nvmet_tgt;

/* A fact some queue's rw_fast may cache changed (see struct nvmet_rw_fast): drop them all. */
static inline void nvmet_rw_fast_invalidate(void)
{
	nvmet_tgt.rw_gen++;
}

/* nvmet_core.c */
void nvmet_req_complete(struct nvmet_req *req, uint16_t status);
bool nvmet_host_allowed(const struct nvmet_subsys *s, const char *hostnqn);
void nvmet_ctrl_kill(struct nvmet_ctrl *c, int reason);
struct nvmet_ns *nvmet_ns_find(struct nvmet_subsys *s, uint32_t nsid);
/* Copy len bytes between buf and the request data at offset off; bytes, or -EINVAL past the end. */
int nvmet_copy_to_req(struct nvmet_req *req, uint32_t off, const void *buf, uint32_t len);
int nvmet_copy_from_req(struct nvmet_req *req, uint32_t off, void *buf, uint32_t len);
uint32_t nvmet_ctrl_mdts_bytes(const struct nvmet_ctrl *c);
/* nvmet_ctrl_mdts_bytes inline (every Read and Write asks). */
static inline uint32_t nvmet_ctrl_mdts_inline(const struct nvmet_ctrl *c)
{
	uint32_t m = NVMET_MAX_XFER, ns = c->subsys->ns_max_xfer;
	if (c->ops->max_xfer && c->ops->max_xfer < m)
		m = c->ops->max_xfer;
	if (ns && ns < m)
		m = ns;
	return m;
}
/* A namespace of s was opened or closed: recompute s->ns_max_xfer. */
void nvmet_subsys_ns_opened(struct nvmet_subsys *s);

/* (Re)start the controller's keep-alive timer from now (none when KATO is 0). */
void nvmet_ctrl_keep_alive(struct nvmet_ctrl *c);
/* The one place controller states change (logged at debug level). */
void nvmet_ctrl_set_state(struct nvmet_ctrl *c, enum nvmet_ctrl_state s);
/* A zeroed controller from the pool, state NEW, keep-alive timer ready; NULL when the
 * pool is empty. The caller links it into nvmet_tgt.ctrls. */
struct nvmet_ctrl *nvmet_ctrl_alloc(void);
/* The subsystem (or the discovery subsystem) named nqn, or NULL. */
struct nvmet_subsys *nvmet_subsys_by_nqn(const char *nqn);

/* nvmet_fabrics.c */
/* Run a fabrics command (opcode 7Fh) on its queue: Connect, Property Get/Set, Disconnect. */
void nvmet_exec_fabrics(struct nvmet_req *req);

/* nvmet_io.c */
/* A Read or Write on an I/O queue whose checks up to the namespace passed (nvmet_exec's
 * fast path, with the namespace found): its ANA state, LBA range, MDTS, length, then the
 * backend. */
void nvmet_exec_rw(struct nvmet_req *req, struct nvmet_ns *ns);
/* A Read or Write whose checks nvmet_exec() made against its queue's valid rw_fast: its
 * LBA range, MDTS, length, then the backend, as nvmet_exec_rw(). */
void nvmet_exec_rw_fast(struct nvmet_req *req);

/* nvmet_admin.c */
void nvmet_exec_admin(struct nvmet_req *req);
void nvmet_ctrl_aen_check(struct nvmet_ctrl *c);
/* Raise event e of controller c (one of its nvmet_aen members): reported through a held
 * AER when its notice is enabled (Set Features AEC) and it is not masked. */
void nvmet_ctrl_aen_raise(struct nvmet_ctrl *c, struct nvmet_aen *e);

/* nvmet_io.c */
void nvmet_exec_io(struct nvmet_req *req);
/* CC.SHN written: CSTS.SHST = occurring, Flush every namespace c wrote to (volatile cache),
 * CSTS.SHST = complete when all are back (stays occurring when one failed). */
void nvmet_ctrl_shutdown_start(struct nvmet_ctrl *c);
/* Does any opened namespace of s have a volatile write cache? (Identify VWC) */
bool nvmet_subsys_vwc(const struct nvmet_subsys *s);

/* nvmet_core.c: free a controller whose free was deferred by shutdown Flushes */
void nvmet_ctrl_release(struct nvmet_ctrl *c);

#endif
