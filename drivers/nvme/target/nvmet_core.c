/*
 * nvmet_core.c - the NVMe-oF target core: the objects (ports, subsystems with their
 * namespaces, the discovery subsystem, controllers, queues), the controller state
 * machine, command dispatch with completion accounting, keep-alive and namespace
 * change events. The fabrics command set (Connect, Property Get/Set, Disconnect) is in
 * nvmet_fabrics.c.
 *
 * Controllers follow the dynamic controller model: an admin-queue Connect with CNTLID
 * 0xFFFF creates one, with the lowest free ID of the subsystem's cntlid range at or after
 * the last one handed out; I/O-queue Connects name it. A controller lives while any of
 * its queues does: it dies (FAILED) on keep-alive expiry, CSTS.CFS or an admin
 * Disconnect, its transport is asked to close every queue, and it is freed after the
 * last queue is destroyed: from the poll loop (a zero-delay timer), never inside the
 * call that unbound the queue, since that may run inside a completion or inside
 * nvmet_ctrl_kill() walking the controller. Keep-alive is traffic based (CTRATT.TBKAS,
 * as Linux nvmet): the timer restarts on Keep Alive, and when it fires after any
 * command came in the meantime; a discovery controller connected with KATO 0 gets
 * NVMET_DISC_KATO_MS so that an idle discovery session cannot hold a controller.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../../../lib/clock.h"
#include "../../../lib/log.h"
#include "../../../mm/pool.h"
#include "nvmet_priv.h"

LOG_MODULE_DEFINE(nvmet);

struct nvmet_target nvmet_tgt;
static struct mm_pool ctrl_pool, queue_pool;
static nvmet_bdev_open_fn bdev_open;
static void *bdev_ctx;

static const char *const ctrl_state_names[NVMET_CTRL_STATE_COUNT] = {
	"new", "connected", "enabled", "shutdown", "failed",
};

const char *nvmet_ctrl_state_name(enum nvmet_ctrl_state s)
{
	return (unsigned)s < NVMET_CTRL_STATE_COUNT ? ctrl_state_names[s] : "?";
}

const struct nvmet_stats *nvmet_stats(void)
{
	return &nvmet_tgt.st;
}

bool nvmet_running(void)
{
	return nvmet_tgt.running;
}

unsigned nvmet_ctrl_count(void)
{
	return nvmet_tgt.nctrls;
}

unsigned nvmet_queue_count(void)
{
	return nvmet_tgt.nqueues;
}

unsigned nvmet_port_count(void)
{
	return nvmet_tgt.running ? nvmet_tgt.cfg.nports : 0;
}

const struct nvmet_cfg_port *nvmet_port_at(unsigned i)
{
	return i < nvmet_port_count() ? &nvmet_tgt.cfg.ports[i] : NULL;
}

/* The one place controller states change. */
void nvmet_ctrl_set_state(struct nvmet_ctrl *c, enum nvmet_ctrl_state s)
{
	if (c->state == s)
		return;
	log_debug("ctrl %u (%s): %s -> %s", c->cntlid, c->subsys->cfg->nqn, nvmet_ctrl_state_name(c->state),
		  nvmet_ctrl_state_name(s));
	c->state = s;
	nvmet_rw_fast_invalidate();
}

/* --- errno / status --- */

uint16_t nvmet_errno_status(int rc)
{
	switch (rc) {
	case 0:
		return NVMET_SC_SUCCESS;
	case -ERANGE:
		return NVMET_SC_LBA_RANGE;
	case -ENODEV:
		return NVMET_SC_INVALID_NS;
	case -EOPNOTSUPP:
		return NVMET_SC_INVALID_OPCODE;
	case -EINVAL:
		return NVMET_SC_INVALID_FIELD;
	case -ENOSPC:
		return NVMET_SC_CAPACITY_EXCEEDED;
	case -EBUSY:
	case -EAGAIN:
	case -ENOMEM:
		return NVMET_SC_CMD_INTERRUPTED;
	default:
		return NVMET_SC_INTERNAL;
	}
}

/* Statuses after which a retry may succeed: DNR stays clear. */
static bool status_retryable(uint16_t sc)
{
	return sc == NVMET_SC_CMD_INTERRUPTED || sc == NVMET_SC_INTERNAL || sc == NVMET_SC_NS_NOT_READY ||
	       sc == NVMET_SC_ABORT_SQ_DELETED || sc == NVMET_SC_CONNECT_CTRL_BUSY ||
	       (sc >> 8) == 3; /* Path Related (ANA): the host retries on another path */
}

/* --- data access: segments are CPU-addressable (identity map) when the core copies --- */

static int copy_req(struct nvmet_req *req, uint32_t off, void *buf, uint32_t len, bool to_req)
{
	const struct nvmet_data *d = &req->data;
	uint8_t *b = buf;
	uint32_t done = 0;

	if (off > d->len || len > d->len - off)
		return -EINVAL;
	for (unsigned i = 0; i < d->nsg && done < len; i++) {
		uint32_t seg = d->sg[i].len;
		if (off >= seg) {
			off -= seg;
			continue;
		}
		uint32_t n = seg - off < len - done ? seg - off : len - done;
		uint8_t *p = (uint8_t *)(uintptr_t)(d->sg[i].addr.bus + off);
		if (to_req)
			memcpy(p, b + done, n);
		else
			memcpy(b + done, p, n);
		done += n;
		off = 0;
	}
	return done == len ? (int)len : -EINVAL;
}

int nvmet_copy_to_req(struct nvmet_req *req, uint32_t off, const void *buf, uint32_t len)
{
	return copy_req(req, off, (void *)buf, len, true);
}

int nvmet_copy_from_req(struct nvmet_req *req, uint32_t off, void *buf, uint32_t len)
{
	return copy_req(req, off, buf, len, false);
}

/* --- objects --- */

struct nvmet_ns *nvmet_ns_find(struct nvmet_subsys *s, uint32_t nsid)
{
	for (unsigned i = 0; i < s->nns; i++)
		if (s->ns[i].nsid == nsid && nvmet_ns_active(&s->ns[i]))
			return &s->ns[i];
	return NULL;
}

bool nvmet_host_allowed(const struct nvmet_subsys *s, const char *hostnqn)
{
	if (s->discovery || s->cfg->allow_any_host)
		return true;
	for (unsigned i = 0; i < s->cfg->nhosts; i++)
		if (strcmp(nvmet_tgt.cfg.hosts[s->cfg->hosts[i]], hostnqn) == 0)
			return true;
	return false;
}

void nvmet_subsys_ns_opened(struct nvmet_subsys *s)
{
	uint32_t m = 0;
	for (unsigned i = 0; i < s->nns; i++) {
		const struct nvmet_ns *ns = &s->ns[i];
		if (ns->opened && ns->bdev.max_xfer && (!m || ns->bdev.max_xfer < m))
			m = ns->bdev.max_xfer;
	}
	s->ns_max_xfer = m;
	nvmet_rw_fast_invalidate(); /* every caller changed what a namespace's opened says */
}

/* MDTS in bytes: the target's, the transport's and every opened namespace's backend's
 * limit (the last kept per subsystem: nvmet_subsys_ns_opened). */
uint32_t nvmet_ctrl_mdts_bytes(const struct nvmet_ctrl *c)
{
	return nvmet_ctrl_mdts_inline(c);
}

static void kato_restart(struct nvmet_ctrl *c);

static void kato_expired(struct timer *t, void *arg)
{
	struct nvmet_ctrl *c = arg;
	(void)t;
	if (c->traffic) {
		/* traffic based keep-alive: a command came within the last KATO */
		kato_restart(c);
		return;
	}
	log_warn("ctrl %u (%s, host %s): keep-alive timeout (%u ms), tearing it down", c->cntlid,
		 c->subsys->cfg->nqn, c->hostnqn, c->kato_ms);
	nvmet_tgt.st.kato_expired++;
	c->csts |= NVME_CSTS_CFS; /* the controller stops: fatal status (NVMe Base 2.0, 3.9.4) */
	nvmet_ctrl_kill(c, -ETIMEDOUT);
}

/* (Re)start the keep-alive timer from now; none when KATO is 0. */
static void kato_restart(struct nvmet_ctrl *c)
{
	timer_cancel(&timer_default_queue, &c->kato_timer);
	c->traffic = false;
	if (c->kato_ms && c->state != NVMET_CTRL_FAILED)
		timer_arm(&timer_default_queue, &c->kato_timer,
			  clock_now_ns() + (uint64_t)c->kato_ms * NSEC_PER_MSEC);
}

/* Complete every held AER with SQ-deletion status. */
static void ctrl_abort_aers(struct nvmet_ctrl *c)
{
	while (c->aers) {
		struct nvmet_req *r = c->aers;
		c->aers = r->next_aer;
		r->next_aer = NULL;
		c->naers--;
		nvmet_req_complete(r, NVMET_SC_ABORT_SQ_DELETED);
	}
}

void nvmet_ctrl_kill(struct nvmet_ctrl *c, int reason)
{
	if (c->state == NVMET_CTRL_FAILED)
		return;
	log_info("ctrl %u (host %s): ends: %s", c->cntlid, c->hostnqn,
		 reason == -ECONNRESET ? "its admin queue closed" : reason == -ETIMEDOUT ? "keep-alive timeout" :
		 reason == -EACCES ? "authentication failed" : reason == 0 ? "host request" : "fatal error");
	nvmet_ctrl_set_state(c, NVMET_CTRL_FAILED);
	timer_cancel(&timer_default_queue, &c->kato_timer);
	ctrl_abort_aers(c);
	for (unsigned i = 0; i <= NVMET_MAX_IO_QUEUES; i++) {
		struct nvmet_queue *q = c->queues[i];
		if (q && q->state == NVMET_Q_LIVE) {
			q->state = NVMET_Q_DEAD;
			nvmet_rw_fast_invalidate();
			if (q->ops->queue_kill)
				q->ops->queue_kill(q->tctx, reason);
		}
	}
}

static void ctrl_reap(struct timer *t, void *arg);

struct nvmet_ctrl *nvmet_ctrl_alloc(void)
{
	struct nvmet_ctrl *c = mm_pool_zalloc(&ctrl_pool);

	if (!c)
		return NULL;
	c->state = NVMET_CTRL_NEW;
	nvmet_rw_fast_invalidate();
	timer_init(&c->kato_timer, "nvmet-kato", kato_expired, c);
	timer_init(&c->reap_timer, "nvmet-ctrl-reap", ctrl_reap, c);
	return c;
}

struct nvmet_subsys *nvmet_subsys_by_nqn(const char *nqn)
{
	if (strcmp(nqn, NVMET_DISCOVERY_NQN) == 0)
		return &nvmet_tgt.disc;
	for (unsigned i = 0; i < nvmet_tgt.nsubsys; i++)
		if (strcmp(nvmet_tgt.subsys[i].cfg->nqn, nqn) == 0)
			return &nvmet_tgt.subsys[i];
	return NULL;
}

/* The controller's last queue is gone (from the poll loop). */
static void ctrl_reap(struct timer *t, void *arg)
{
	struct nvmet_ctrl *c = arg;
	(void)t;
	if (c->nqueues) {
		c->reaping = false; /* cannot happen: a FAILED controller binds no queue */
		return;
	}
	if (c->shn_pending) {
		/* shutdown Flushes still at the drives point back here */
		c->free_deferred = true;
		return;
	}
	nvmet_ctrl_release(c);
}

/* The last queue went: free the controller from the poll loop, not inside this call. */
static void ctrl_free(struct nvmet_ctrl *c)
{
	if (c->reaping)
		return;
	c->reaping = true;
	timer_arm(&timer_default_queue, &c->reap_timer, clock_now_ns());
}

/* Free a controller (ctrl_free, or the last shutdown Flush of a deferred one). */
void nvmet_ctrl_release(struct nvmet_ctrl *c)
{
	timer_cancel(&timer_default_queue, &c->kato_timer);
	timer_cancel(&timer_default_queue, &c->reap_timer);
	nvmet_auth_ctrl_release(c);
	log_info("ctrl %u (%s, host %s) freed", c->cntlid, c->subsys->cfg->nqn, c->hostnqn);
	list_del(&c->node);
	c->subsys->nctrls--;
	nvmet_tgt.nctrls--;
	nvmet_tgt.st.ctrls_freed++;
	mm_pool_free(&ctrl_pool, c);
}

/* --- queues --- */

int nvmet_queue_create(unsigned port, const struct nvmet_transport_ops *ops, void *tctx, struct nvmet_queue **out)
{
	struct nvmet_queue *q;

	if (!nvmet_tgt.running)
		return -ENODEV;
	if (port >= nvmet_tgt.cfg.nports || !ops || !ops->max_queue_size)
		return -EINVAL;
	if (!(q = mm_pool_zalloc(&queue_pool)))
		return -ENOMEM;
	q->state = NVMET_Q_NEW; /* its rw_fast zeroed: never valid until built */
	q->port = port;
	q->ops = ops;
	q->tctx = tctx;
	list_add_tail(&nvmet_tgt.queues, &q->node);
	nvmet_tgt.nqueues++;
	*out = q;
	return 0;
}

static void queue_free(struct nvmet_queue *q)
{
	list_del(&q->node);
	nvmet_tgt.nqueues--;
	mm_pool_free(&queue_pool, q);
}

/* Unbind q from its controller; the controller dies with its admin queue and is freed
 * with its last queue. */
static void queue_unbind(struct nvmet_queue *q)
{
	struct nvmet_ctrl *c = q->ctrl;

	if (!c)
		return;
	nvmet_auth_queue_stop(q);
	if (q->qid == 0)
		nvmet_ctrl_kill(c, -ECONNRESET);
	c->queues[q->qid] = NULL;
	c->nqueues--;
	q->ctrl = NULL;
	nvmet_rw_fast_invalidate();
	if (c->nqueues == 0)
		ctrl_free(c);
}

void nvmet_queue_destroy(struct nvmet_queue *q)
{
	if (!q || q->destroying || q->state == NVMET_Q_DESTROYED)
		return;
	q->destroying = true;
	if (q->ctrl && q->qid == 0)
		ctrl_abort_aers(q->ctrl);
	q->state = NVMET_Q_DESTROYED;
	nvmet_rw_fast_invalidate();
	queue_unbind(q);
	q->destroying = false;
	if (q->inflight == 0)
		queue_free(q);
}

void nvmet_queue_set_peer(struct nvmet_queue *q, uint32_t addr, uint16_t port)
{
	q->peer_addr = addr;
	q->peer_port = port;
}

void nvmet_queue_set_local(struct nvmet_queue *q, uint32_t addr)
{
	q->local_addr = addr;
}

int nvmet_queue_qid(const struct nvmet_queue *q)
{
	return q->ctrl ? q->qid : -1;
}

int nvmet_queue_cntlid(const struct nvmet_queue *q)
{
	return q->ctrl ? q->ctrl->cntlid : -1;
}

unsigned nvmet_queue_size(const struct nvmet_queue *q)
{
	return q->ctrl ? q->size : 0;
}

/* --- completion --- */

/* NVM commands whose CDW10/11 hold the starting LBA (Error Information LBA field). */
static bool opc_has_slba(uint8_t opc)
{
	return opc == NVME_CMD_READ || opc == NVME_CMD_WRITE || opc == NVME_CMD_WRITE_ZEROES ||
	       opc == 0x05 /* Compare */;
}

/* Record a failed command in its controller's Error Information log. Aborts of held
 * AERs at teardown are not errors of the host's commands and stay out. */
static void ctrl_log_error(struct nvmet_ctrl *c, const struct nvmet_queue *q, const struct nvmet_req *req,
			   uint16_t status)
{
	struct nvmet_err_entry *e;
	uint8_t opc = req->sqe.opc;

	if (status == NVMET_SC_ABORT_SQ_DELETED)
		return;
	c->err_count++;
	e = &c->errlog[(c->err_count - 1) % NVMET_ERR_LOG_ENTRIES];
	memset(e, 0, sizeof(*e));
	e->count = c->err_count;
	e->sqid = q->qid;
	e->cid = le16_get(req->cqe.cid);
	e->status = le16_get(req->cqe.status);
	e->nsid = le32_get(req->sqe.nsid);
	if (q->qid && opc_has_slba(opc))
		e->lba = (uint64_t)le32_get(req->sqe.cdw11) << 32 | le32_get(req->sqe.cdw10);
}

void nvmet_req_complete(struct nvmet_req *req, uint16_t status)
{
	struct nvmet_queue *q = req->q;
	uint16_t cid = le16_get(req->sqe.cid);

	req->status = status;
	req->cqe.sqhd = le16_make(q->sqflow_off ? 0xffff : q->sqhd);
	req->cqe.sqid = le16_make(q->qid);
	req->cqe.cid = le16_make(cid);
	req->cqe.status = le16_make(nvmet_status_field(status, status && !status_retryable(status)));
	if (status)
		req->xfer_len = 0;
	req->state = NVMET_REQ_IDLE;
	q->inflight--;
	q->st.completions++;
	nvmet_tgt.st.completions++;
	if (status) {
		q->st.errors++;
		nvmet_tgt.st.errors++;
		if (q->ctrl)
			ctrl_log_error(q->ctrl, q, req, status);
	}
	if (q->state == NVMET_Q_DESTROYED && q->inflight == 0 && !q->destroying)
		queue_free(q);
	req->q = NULL;
	req->done(req, req->done_arg);
}

/* --- dispatch --- */

/* Is SGL1's identifier one a fabrics host may use: in-capsule data (Data Block with
 * Offset), the TCP transport's data block, or a keyed data block (RDMA)? */
static bool sgl1_known(uint8_t id)
{
	return id == NVMF_SGL_ID_OFFSET || id == NVMF_SGL_ID_TRANSPORT || (id >> 4) == NVMF_SGL_TYPE_KEYED;
}

/* Does this queue's transport take SGL1's identifier? Keyed data blocks only where the
 * transport advertises them (SGLS bit 2), the transport data block only where it does not. */
static bool sgl1_ok(const struct nvmet_queue *q, uint8_t id)
{
	bool keyed = (q->ops->sgls_extra & NVME_SGLS_KEYED) != 0;
	if (id == NVMF_SGL_ID_OFFSET)
		return true;
	return keyed ? (id >> 4) == NVMF_SGL_TYPE_KEYED : id == NVMF_SGL_ID_TRANSPORT;
}

static inline uint32_t req_data_len(const struct nvme_sqe *sqe)
{
	if ((sqe->flags & NVME_SQE_PSDT_MASK) != NVME_SQE_PSDT_SGL || !sgl1_known(sqe->dptr.sgl1.id))
		return 0; /* nvmet_exec() refuses it: nothing to fetch */
	if ((sqe->dptr.sgl1.id >> 4) == NVMF_SGL_TYPE_KEYED)
		return le32_get(sqe->dptr.sgl1.len) & 0xffffffu; /* a keyed block's Length is 3 bytes (the Key follows) */
	return le32_get(sqe->dptr.sgl1.len);
}

uint32_t nvmet_req_data_len(const struct nvme_sqe *sqe)
{
	return req_data_len(sqe);
}

static inline enum dma_dir req_dir(const struct nvmet_queue *q, const struct nvme_sqe *sqe)
{
	uint8_t opc = sqe->opc;
	if (opc == NVMF_OPC_FABRICS)
		/* FCTYPE bits 1:0 as an opcode's: Connect, AUTH_Send to the controller */
		return (nvmf_fctype(sqe) & 3) == 1 ? DMA_TO_DEVICE : DMA_FROM_DEVICE;
	if (q && q->qid == 0 && q->ctrl)
		return (opc == NVME_ADM_SET_FEATURES) ? DMA_TO_DEVICE : DMA_FROM_DEVICE;
	/* NVMe opcode bits 1:0: 01b host to controller, 10b controller to host */
	return (opc & 3) == 1 ? DMA_TO_DEVICE : DMA_FROM_DEVICE;
}

enum dma_dir nvmet_req_dir(const struct nvmet_queue *q, const struct nvme_sqe *sqe)
{
	return req_dir(q, sqe);
}

/* Is q's rw_fast valid and for this Read/Write's NSID (struct nvmet_rw_fast)? */
static inline bool rw_fast_for(const struct nvmet_queue *q, const struct nvme_sqe *sqe)
{
	return q->rw_fast.gen == nvmet_tgt.rw_gen && le32_get(sqe->nsid) == q->rw_fast.nsid &&
	       (sqe->opc == NVME_CMD_READ || sqe->opc == NVME_CMD_WRITE);
}

/* The backend of an I/O Read/Write on a live I/O queue (for the transport's choice of
 * payload memory), or NULL for any other command. */
static inline const struct nvmet_bdev *req_bdev(const struct nvmet_queue *q, const struct nvme_sqe *sqe)
{
	uint8_t opc = sqe->opc;
	struct nvmet_ns *ns;

	if (q && rw_fast_for(q, sqe)) /* an active (so opened) namespace of this live queue's */
		return &q->rw_fast.ns->bdev;
	if (!q || q->state != NVMET_Q_LIVE || q->qid == 0 || !q->ctrl || !q->ctrl->subsys)
		return NULL;
	if (opc != NVME_CMD_READ && opc != NVME_CMD_WRITE)
		return NULL;
	ns = nvmet_ns_find(q->ctrl->subsys, le32_get(sqe->nsid));
	return ns && ns->opened ? &ns->bdev : NULL;
}

const struct nvmet_bdev *nvmet_req_bdev(const struct nvmet_queue *q, const struct nvme_sqe *sqe)
{
	return req_bdev(q, sqe);
}

/* The four answers in one call (a transport asks them of every command). */
NVMET_HOT_INLINE void nvmet_req_shape(const struct nvmet_queue *q, const struct nvme_sqe *sqe, struct nvmet_req_shape *out)
{
	out->len = req_data_len(sqe);
	if (rw_fast_for(q, sqe)) {
		/* a Read/Write of the queue's valid rw_fast (a live I/O queue with a controller):
		 * req_dir and req_bdev's answers without their other tests */
		out->dir = sqe->opc == NVME_CMD_WRITE ? DMA_TO_DEVICE : DMA_FROM_DEVICE;
		out->bdev = &q->rw_fast.ns->bdev;
		out->qid = q->qid;
		out->qsize = q->size;
		return;
	}
	out->dir = req_dir(q, sqe);
	out->bdev = req_bdev(q, sqe);
	out->qid = q->ctrl ? q->qid : -1;
	out->qsize = q->ctrl ? q->size : 0;
}

bool nvmet_req_needs_host_mem(const struct nvmet_queue *q, const struct nvme_sqe *sqe)
{
	uint8_t opc = sqe->opc;
	return opc == NVMF_OPC_FABRICS || !q || !q->ctrl || q->qid == 0 || opc == NVME_CMD_DSM;
}

/* Take a command in: the request set up, counted, the SQ head moved, traffic noted for
 * the keep-alive. */
/* (inline: once per command) */
/* rw_fast: a Read/Write that rw_fast_hit() passed (a live I/O queue of an enabled controller:
 * struct nvmet_rw_fast), whose tests below then fold. */
static inline __attribute__((always_inline)) void exec_start(struct nvmet_queue *q, struct nvmet_req *req,
						       const struct nvme_sqe *sqe, const struct nvmet_data *data, nvmet_done_fn done, void *arg,
						       bool rw_fast)
{
	if (sqe != &req->sqe) /* a transport may have put it there already */
		memcpy(&req->sqe, sqe, sizeof(req->sqe));
	if (data)
		req->data = *data;
	else
		memset(&req->data, 0, sizeof(req->data));
	memset(&req->cqe, 0, sizeof(req->cqe));
	req->xfer_len = 0;
	req->done = done;
	req->done_arg = arg;
	req->q = q;
	req->next_aer = NULL;
	req->state = NVMET_REQ_EXEC;
	/* (rw_fast: an I/O queue's Read or Write: req_dir's answer from the opcode alone) */
	req->dir = (uint8_t)(rw_fast ? (sqe->opc == NVME_CMD_WRITE ? DMA_TO_DEVICE : DMA_FROM_DEVICE) : req_dir(q, sqe));
	q->inflight++;
	q->st.cmds++;
	nvmet_tgt.st.cmds++;
	if ((rw_fast || q->state == NVMET_Q_LIVE) && q->size)
		q->sqhd = (uint16_t)(q->sqhd + 1u < q->size ? q->sqhd + 1u : (q->sqhd + 1u) % q->size);
	if (rw_fast || (q->state == NVMET_Q_LIVE && q->ctrl))
		q->ctrl->traffic = true;
}

void nvmet_exec_sq_overflow(struct nvmet_queue *q, struct nvmet_req *req, const struct nvme_sqe *sqe,
			    nvmet_done_fn done, void *arg)
{
	exec_start(q, req, sqe, NULL, done, arg, false);
	nvmet_tgt.st.sq_overflows++;
	nvmet_req_complete(req, NVMET_SC_CMD_SEQ_ERROR);
}

/*
 * The namespace of a Read or Write that passes every check nvmet_exec() and nvmet_exec_io()
 * make before the namespace's own (live I/O queue of an enabled controller, segments that
 * sum to the SGL length, one SGL data block of a type the transport takes, no fused
 * operation, authenticated, an active namespace with that NSID), found from the
 * transport's hint bdev (nvmet_req_shape: namespace pointers stay valid, NSIDs are unique
 * in a subsystem, so the hint checked is what nvmet_ns_find() would return). NULL when
 * anything differs: the general path then answers the command as it always did.
 */
static inline __attribute__((always_inline)) struct nvmet_ns *rw_fast_ns(struct nvmet_queue *q, struct nvmet_req *req,
									const struct nvmet_bdev *bdev)
{
	uint8_t opc = req->sqe.opc;
	const struct nvmet_data *d = &req->data;
	struct nvmet_ctrl *c = q->ctrl;
	uint64_t total = 0;

	if ((opc != NVME_CMD_READ && opc != NVME_CMD_WRITE) || q->state != NVMET_Q_LIVE || q->qid == 0 || !c ||
	    c->state != NVMET_CTRL_ENABLED || !c->subsys)
		return NULL;
	if (d->nsg == 0 || d->nsg > NVMET_MAX_DATA_SEGS || !d->sg)
		return NULL;
	if (d->summed)
		total = d->len; /* the transport's count (nvmet_data.summed) */
	else
		for (unsigned i = 0; i < d->nsg; i++)
			total += d->sg[i].len;
	if (total != d->len || (req->sqe.flags & NVME_SQE_PSDT_MASK) != NVME_SQE_PSDT_SGL ||
	    (req->sqe.flags & NVME_SQE_FUSE_MASK) || !sgl1_ok(q, req->sqe.dptr.sgl1.id) || !nvmet_auth_queue_ok(q))
		return NULL;
	struct nvmet_subsys *s = c->subsys;
	struct nvmet_ns *ns = container_of(bdev, struct nvmet_ns, bdev);
	if ((uintptr_t)ns - (uintptr_t)s->ns >= (uintptr_t)s->nns * sizeof(*ns) || /* one of s's (wraps below) */
	    ns->nsid != le32_get(req->sqe.nsid) || !nvmet_ns_active(ns))
		return NULL;
	return ns;
}

/*
 * Does a Read/Write pass, against its queue's valid rw_fast, every check the general path
 * makes before the namespace's own LBA range, MDTS and length? The descriptor stands for the
 * queue's, the controller's, the namespace's and the ANA checks (struct nvmet_rw_fast); what
 * is the command's own is checked here as rw_fast_ns() checks it: the NSID, segments the
 * transport summed (an unsummed list goes the general way, which walks it), one SGL data
 * block of a type the transport takes, no fused operation, an authenticated queue.
 */
static inline __attribute__((always_inline)) bool rw_fast_hit(const struct nvmet_queue *q, const struct nvme_sqe *sqe,
								const struct nvmet_data *d)
{
	return d && rw_fast_for(q, sqe) && d->summed && d->nsg && d->nsg <= NVMET_MAX_DATA_SEGS && d->sg &&
	       (sqe->flags & (NVME_SQE_PSDT_MASK | NVME_SQE_FUSE_MASK)) == NVME_SQE_PSDT_SGL &&
	       sgl1_ok(q, sqe->dptr.sgl1.id) && nvmet_auth_queue_ok(q);
}

static void exec_general(struct nvmet_queue *q, struct nvmet_req *req);

NVMET_HOT_INLINE void nvmet_exec(struct nvmet_queue *q, struct nvmet_req *req, const struct nvme_sqe *sqe,
		const struct nvmet_data *data, nvmet_done_fn done, void *arg)
{
	struct nvmet_ns *ns;

	/* the common Read/Write of a queue: checked against what the last one found (the
	 * transport's SQE and segments, before they are the request's), then taken in with
	 * what that check says */
	if (rw_fast_hit(q, sqe, data)) {
		exec_start(q, req, sqe, data, done, arg, true);
		return nvmet_exec_rw_fast(req);
	}
	exec_start(q, req, sqe, data, done, arg, false);
	/* the common Read/Write: straight to its namespace, found once (by the transport) */
	if (req->data.bdev && (ns = rw_fast_ns(q, req, req->data.bdev)))
		return nvmet_exec_rw(req, ns);
	exec_general(q, req);
}

/* Every command's checks in the spec's order, then its handler (out of line: the common
 * Read/Write does not need it). */
static __attribute__((noinline)) void exec_general(struct nvmet_queue *q, struct nvmet_req *req)
{
	uint64_t total = 0;

	if (q->state == NVMET_Q_DEAD || q->state == NVMET_Q_DESTROYED)
		return nvmet_req_complete(req, NVMET_SC_ABORT_SQ_DELETED);
	/* the transport's segments must describe exactly what the host's SGL did */
	if (req->data.nsg > NVMET_MAX_DATA_SEGS || (req->data.nsg && !req->data.sg))
		return nvmet_req_complete(req, NVMET_SC_SGL_LENGTH_INVALID);
	for (unsigned i = 0; i < req->data.nsg; i++)
		total += req->data.sg[i].len;
	if (total != req->data.len)
		return nvmet_req_complete(req, NVMET_SC_SGL_LENGTH_INVALID);
	/* fabrics hosts use SGLs only, and this target does not fuse */
	if ((req->sqe.flags & NVME_SQE_PSDT_MASK) != NVME_SQE_PSDT_SGL || (req->sqe.flags & NVME_SQE_FUSE_MASK))
		return nvmet_req_complete(req, NVMET_SC_INVALID_FIELD);
	if (!sgl1_ok(q, req->sqe.dptr.sgl1.id))
		return nvmet_req_complete(req, NVMET_SC_SGL_TYPE_INVALID);

	if (req->sqe.opc == NVMF_OPC_FABRICS)
		return nvmet_exec_fabrics(req);
	if (q->state != NVMET_Q_LIVE)
		return nvmet_req_complete(req, NVMET_SC_CMD_SEQ_ERROR);
	if (!nvmet_auth_queue_ok(q))
		return nvmet_req_complete(req, NVMET_SC_AUTH_REQUIRED);
	if (q->qid == 0)
		return nvmet_exec_admin(req);
	if (q->ctrl->state != NVMET_CTRL_ENABLED)
		return nvmet_req_complete(req, NVMET_SC_CMD_SEQ_ERROR);
	nvmet_exec_io(req);
}

/* Keep Alive and Set Features KATO (nvmet_admin.c) restart the timer through this. */
void nvmet_ctrl_keep_alive(struct nvmet_ctrl *c)
{
	kato_restart(c);
}

/* --- namespace changes --- */

static void ctrl_ns_changed(struct nvmet_ctrl *c, uint32_t nsid)
{
	bool found = false;
	for (unsigned i = 0; i < c->nchanged; i++)
		found |= c->changed_ns[i] == nsid;
	if (!found) {
		if (c->nchanged < NVMET_MAX_CHANGED_NS)
			c->changed_ns[c->nchanged++] = nsid;
		else
			c->changed_overflow = true;
	}
	c->aen_ns_pending = true;
	nvmet_ctrl_aen_check(c);
}

int nvmet_ns_set_enabled(const char *subnqn, uint32_t nsid, bool enabled)
{
	struct nvmet_subsys *s = nvmet_tgt.running ? nvmet_subsys_by_nqn(subnqn) : NULL;
	struct nvmet_ns *ns = NULL;
	struct list_node *it;
	int rc;

	if (!s || s->discovery)
		return -ENOENT;
	for (unsigned i = 0; i < s->nns; i++)
		if (s->ns[i].nsid == nsid)
			ns = &s->ns[i];
	if (!ns)
		return -ENOENT;
	if (ns->enabled == enabled)
		return 0;
	if (enabled && !ns->opened) {
		if ((rc = bdev_open(bdev_ctx, (unsigned)(s - nvmet_tgt.subsys), ns->cfg, &ns->bdev))) {
			log_err("%s nsid %u: cannot open its device (%d)", s->cfg->nqn, nsid, rc);
			return rc;
		}
		ns->opened = true;
		nvmet_subsys_ns_opened(s);
	}
	if (!enabled && ns->opened && ns->bdev.vwc && ns->bdev.ops->flush_sync) {
		/* detached: what hosts wrote leaves the drive's volatile cache now */
		rc = ns->bdev.ops->flush_sync(&ns->bdev);
		if (rc)
			log_err("%s nsid %u: Flush of %s on detach failed (%d)", s->cfg->nqn, nsid, ns->bdev.name, rc);
		else
			log_info("%s nsid %u: %s flushed", s->cfg->nqn, nsid, ns->bdev.name);
	}
	ns->enabled = enabled;
	nvmet_rw_fast_invalidate();
	log_info("%s nsid %u %s", s->cfg->nqn, nsid, enabled ? "enabled" : "disabled");
	list_for_each(&nvmet_tgt.ctrls, it) {
		struct nvmet_ctrl *c = container_of(it, struct nvmet_ctrl, node);
		if (c->subsys == s)
			ctrl_ns_changed(c, nsid);
	}
	return 0;
}

/* A backend device went away or came back: the namespace leaves or rejoins the active
 * namespace list (as when it is disabled and enabled), and every controller of the
 * subsystem gets a Namespace Attribute Changed notice with it in the Changed Namespace
 * List, so that a host removes its block device and adds it again (Linux rescans). */
static void ns_check(struct timer *tm, void *arg)
{
	struct nvmet_target *t = arg;
	struct list_node *it;

	for (unsigned i = 0; i < t->nsubsys; i++) {
		struct nvmet_subsys *s = &t->subsys[i];
		for (unsigned k = 0; k < s->nns; k++) {
			struct nvmet_ns *ns = &s->ns[k];
			if (!ns->opened || !ns->bdev.ops->ready)
				continue;
			bool gone = !ns->bdev.ops->ready(&ns->bdev);
			if (gone == ns->gone)
				continue;
			ns->gone = gone;
			nvmet_rw_fast_invalidate();
			t->st.ns_gone += gone;
			log_warn("%s nsid %u: %s %s", s->cfg->nqn, ns->nsid, ns->bdev.name,
				 gone ? "is gone: out of the active namespace list" : "is back: in the active namespace list again");
			if (!ns->enabled)
				continue;
			list_for_each(&t->ctrls, it) {
				struct nvmet_ctrl *c = container_of(it, struct nvmet_ctrl, node);
				if (c->subsys == s)
					ctrl_ns_changed(c, ns->nsid);
			}
		}
	}
	timer_arm(&timer_default_queue, tm, clock_now_ns() + (uint64_t)NVMET_NS_CHECK_MS * NSEC_PER_MSEC);
}

/* --- init / fini --- */

static void close_namespaces(void)
{
	for (unsigned i = 0; i < nvmet_tgt.nsubsys; i++) {
		struct nvmet_subsys *s = &nvmet_tgt.subsys[i];
		for (unsigned k = 0; k < s->nns; k++) {
			if (s->ns[k].opened && s->ns[k].bdev.ops->close)
				s->ns[k].bdev.ops->close(&s->ns[k].bdev);
			s->ns[k].opened = false;
		}
		nvmet_subsys_ns_opened(s);
	}
}

int nvmet_init(const struct nvmet_config *cfg, nvmet_bdev_open_fn open_fn, void *ctx)
{
	struct nvmet_target *t = &nvmet_tgt;
	int rc;

	if (t->running)
		return -EBUSY;
	if (!cfg || !open_fn)
		return -EINVAL;
	memset(t, 0, sizeof(*t));
	t->rw_gen = 1; /* a queue's rw_fast.gen 0 never matches */
	memcpy(&t->cfg, cfg, sizeof(*cfg));
	list_init(&t->ctrls);
	list_init(&t->queues);
	bdev_open = open_fn;
	bdev_ctx = ctx;
	t->genctr = 1;
	t->nsubsys = cfg->nsubsys;
	nvmet_ana_init(t);

	snprintf(t->disc_cfg.nqn, sizeof(t->disc_cfg.nqn), "%s", NVMET_DISCOVERY_NQN);
	t->disc_cfg.allow_any_host = true;
	snprintf(t->disc_cfg.serial, sizeof(t->disc_cfg.serial), "p2pstore-discovery");
	snprintf(t->disc_cfg.model, sizeof(t->disc_cfg.model), "p2pstore discovery");
	t->disc_cfg.cntlid_min = 1;
	t->disc_cfg.cntlid_max = 0xffef;
	t->disc.cfg = &t->disc_cfg;
	t->disc.discovery = true;

	for (unsigned i = 0; i < t->nsubsys; i++) {
		struct nvmet_subsys *s = &t->subsys[i];
		s->cfg = &t->cfg.subsys[i];
		if (strcmp(s->cfg->nqn, NVMET_DISCOVERY_NQN) == 0) {
			log_err("subsystem %u: the discovery NQN is reserved", i);
			rc = -EINVAL;
			goto fail_ns;
		}
		for (unsigned k = 0; k < s->cfg->nns; k++) {
			const struct nvmet_cfg_ns *cn = &s->cfg->ns[k];
			struct nvmet_ns *ns = &s->ns[s->nns++];
			ns->nsid = cn->nsid;
			ns->cfg = cn;
			if (cn->nsid == 0 || cn->nsid > NVMET_MAX_NSID) {
				log_err("%s: nsid %u outside 1..%u", s->cfg->nqn, cn->nsid, NVMET_MAX_NSID);
				rc = -EINVAL;
				goto fail_ns;
			}
			if (!cn->enable)
				continue;
			if ((rc = open_fn(ctx, i, cn, &ns->bdev))) {
				log_err("%s nsid %u: cannot open /dev/nvme%un%u (%d)", s->cfg->nqn, cn->nsid, cn->ctrl,
					cn->ctrl_nsid, rc);
				goto fail_ns;
			}
			ns->opened = true;
			ns->enabled = true;
		}
		nvmet_subsys_ns_opened(s);
	}
	if ((rc = mm_pool_init(&ctrl_pool, "nvmet-ctrl", sizeof(struct nvmet_ctrl), NVMET_MAX_CTRLS)))
		goto fail_ns;
	if ((rc = mm_pool_init(&queue_pool, "nvmet-queue", sizeof(struct nvmet_queue), NVMET_MAX_QUEUES)))
		goto fail_ctrl_pool;
	t->running = true;
	timer_init(&t->ns_check, "nvmet-ns-check", ns_check, t);
	for (unsigned i = 0; i < t->nsubsys; i++)
		for (unsigned k = 0; k < t->subsys[i].nns; k++)
			if (t->subsys[i].ns[k].opened && t->subsys[i].ns[k].bdev.ops->ready && !t->ns_check.armed)
				timer_arm(&timer_default_queue, &t->ns_check,
					  clock_now_ns() + (uint64_t)NVMET_NS_CHECK_MS * NSEC_PER_MSEC);
	log_info("target: %u ports, %u subsystems", cfg->nports, cfg->nsubsys);
	return 0;

fail_ctrl_pool:
	mm_pool_destroy(&ctrl_pool);
fail_ns:
	close_namespaces();
	memset(t, 0, sizeof(*t));
	return rc;
}

void nvmet_fini(void)
{
	struct nvmet_target *t = &nvmet_tgt;
	struct list_node *it, *tmp;

	if (!t->running)
		return;
	timer_cancel(&timer_default_queue, &t->ns_check);
	/* transports are stopped: no queue_kill calls, just release everything */
	list_for_each_safe(&t->ctrls, it, tmp) {
		struct nvmet_ctrl *c = container_of(it, struct nvmet_ctrl, node);
		nvmet_ctrl_set_state(c, NVMET_CTRL_FAILED);
		timer_cancel(&timer_default_queue, &c->kato_timer);
		ctrl_abort_aers(c);
	}
	list_for_each_safe(&t->queues, it, tmp) {
		struct nvmet_queue *q = container_of(it, struct nvmet_queue, node);
		if (q->ctrl)
			queue_unbind(q);
	}
	list_for_each_safe(&t->queues, it, tmp)
		queue_free(container_of(it, struct nvmet_queue, node));
	list_for_each_safe(&t->ctrls, it, tmp) {
		struct nvmet_ctrl *c = container_of(it, struct nvmet_ctrl, node);
		if (c->reaping && !c->shn_pending)
			nvmet_ctrl_release(c); /* its reap timer had not run yet */
	}
	mm_pool_destroy(&queue_pool);
	mm_pool_destroy(&ctrl_pool);
	close_namespaces();
	memset(t, 0, sizeof(*t));
}
