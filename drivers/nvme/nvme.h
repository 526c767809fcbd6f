/*
 * nvme.h - the face of the NVMe host driver: a bus-independent core (nvme.c and the pure
 * helpers nvme_prp.c, nvme_queue.c, nvme_cmb.c, nvme_status.c) that reaches the controller
 * only through struct nvme_bus (BAR0 register access, DMA memory, a delay), plus a thin
 * PCI attach (nvme_pci.c) and console commands (nvme_command.c).
 *
 * Polling only: every queue is drained by nvme_qpair_poll() (the poll loop, or the
 * synchronous helpers which poll until their command is done or timed out). Every wait is
 * bounded: CSTS.RDY transitions by CAP.TO, commands by a per-command timeout after which
 * the driver sends Abort and, if the controller still does not answer, gives the command
 * up with -ETIMEDOUT and quarantines its command ID until the controller is reset.
 *
 * Buffers are passed as scatter lists of dma_addr_t (mm/dma.h), tagged with their memory
 * class. One command never mixes memory classes, and never mixes the controller's own CMB
 * with other memory (the spec forbids it; QEMU fails it with 0x4012): data in the CMB
 * means PRP/SGL lists in the CMB too.
 */
#ifndef DRIVERS_NVME_NVME_H
#define DRIVERS_NVME_NVME_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "../../mm/dma.h"
#include "nvme_regs.h"

#define NVME_PAGE_SIZE 4096u        /* CC.MPS = 0 */
#define NVME_ADMIN_DEPTH 32u        /* admin SQ/CQ entries */
#define NVME_IO_DEPTH 64u           /* I/O SQ/CQ entries (clamped to CAP.MQES + 1) */
#define NVME_MAX_QDEPTH 64u
#define NVME_MAX_IO_QUEUES 4u       /* one per poller */
#define NVME_MAX_NS 16u             /* namespaces tracked per controller */
#define NVME_MAX_CTRLS 8u
#define NVME_LIST_PAGES 2u          /* PRP/SGL list pages per command slot */
#define NVME_MAX_XFER (2u << 20)    /* driver limit per command, before MDTS */
#define NVME_MAX_SG 512u            /* scatter entries per command */
#define NVME_CMD_TIMEOUT_NS (5ull * 1000000000ull)
#define NVME_ABORT_TIMEOUT_NS (1ull * 1000000000ull)
/* Bound on CSTS.SHST after CC.SHN: RTD3E when the controller gives one, never less than
 * the floor (RTD3E is often 0 or optimistic) nor more than the cap. */
#define NVME_SHUTDOWN_FLOOR_NS (5ull * 1000000000ull)
#define NVME_SHUTDOWN_CAP_NS (60ull * 1000000000ull)

/* --- the bus interface: how the core reaches one controller --- */
struct nvme_bus {
	uint32_t (*read32)(void *ctx, uint32_t off);
	uint64_t (*read64)(void *ctx, uint32_t off);
	void (*write32)(void *ctx, uint32_t off, uint32_t val);
	void (*write64)(void *ctx, uint32_t off, uint64_t val);
	/* `bytes` of zeroed, 4 KiB aligned, physically contiguous host memory; *addr is its
	 * bus address (MEM_CLASS_HOST). NULL when out of memory. */
	void *(*dma_alloc)(void *ctx, size_t bytes, dma_addr_t *addr);
	void (*dma_free)(void *ctx, void *cpu, size_t bytes);
	/* Device memory in the controller's own CMB for PRP/SGL lists (may be NULL: the core then
	 * carves lists from the start of the CMB). Returns 0 or -ENOMEM. */
	int (*cmb_alloc)(void *ctx, size_t bytes, dma_addr_t *addr, void **cpu);
	void (*cmb_free)(void *ctx, dma_addr_t addr, size_t bytes);
	/* Let about ns nanoseconds pass between two polls of the hardware (may be NULL). */
	void (*delay)(void *ctx, uint64_t ns);
	void *ctx;
	/* The I/O completion queues signal MSI-X entry 0 (IEN = 1, IV = 0; the admin queue
	 * always does): the attach made that entry wake the idle CPU. false: IEN = 0. */
	bool cq_irq;
	/* Memory BARs of the function, for the CMB (bus address, size, CPU mapping). */
	uint64_t bar_bus[6];
	uint64_t bar_size[6];
	void *bar_cpu[6];
};

/* --- status (nvme_status.c) --- */

/* Readable text for a CQE status field (phase bit ignored). */
const char *nvme_status_str(uint16_t status);
/* 0 or a negative errno for a CQE status field: the one wire-status to errno mapping. */
int nvme_status_errno(uint16_t status);

/* --- CMB register decoding (nvme_cmb.c) --- */

enum nvme_cmb_scheme {
	NVME_CMB_NONE = 0,
	NVME_CMB_LEGACY,   /* CMBLOC/CMBSZ valid from reset, no CMBMSC (NVMe 1.2/1.3) */
	NVME_CMB_V14,      /* CAP.CMBS: CMBLOC/CMBSZ valid after CMBMSC.CRE, CMSE enables use */
};

struct nvme_cmb_info {
	uint32_t cmbloc, cmbsz;
	unsigned bir;          /* BAR holding the CMB */
	uint64_t unit;         /* bytes per CMBSZ.SZU unit */
	uint64_t offset;       /* bytes into the BAR */
	uint64_t size;         /* bytes */
	bool sqs, cqs, lists, rds, wds;
};

/* Decode CMBLOC/CMBSZ. Returns 0, -ENODEV when CMBSZ is 0 (no CMB or CRE not yet set) or
 * -EINVAL for a reserved SZU / BIR or a size that overflows. */
int nvme_cmb_decode(uint32_t cmbloc, uint32_t cmbsz, struct nvme_cmb_info *out);

/* "SQS LISTS RDS WDS" into buf; returns buf. */
char *nvme_cmb_uses_str(const struct nvme_cmb_info *ci, char *buf, size_t cap);

/* --- scatter lists, PRPs and SGLs (nvme_prp.c) --- */

struct nvme_sg {
	dma_addr_t addr;
	uint32_t len;
};

/* A contiguous area for one command's PRP or SGL list (NVME_LIST_PAGES pages). */
struct nvme_list_mem {
	void *cpu;
	dma_addr_t addr;
	size_t bytes;
};

/* Total bytes of sg; -EINVAL (as a negative int64) for an empty entry or overflow. */
int64_t nvme_sg_total(const struct nvme_sg *sg, unsigned n);

/* The memory class shared by all entries, or -EINVAL if they mix classes. */
int nvme_sg_class(const struct nvme_sg *sg, unsigned n);

/* Can sg be described by PRPs with pages of page_size (first entry may start mid-page,
 * others start on a page; all but the last end on a page; dword aligned)? */
bool nvme_prp_possible(const struct nvme_sg *sg, unsigned n, uint32_t page_size);

/* Build PRP1/PRP2 for sg, writing a PRP list (chained across list pages: the last entry of
 * a full page points to the next page) into list when more than two pages are touched.
 * *list_bytes gets the bytes of list written (0 without a list). Returns 0, -EINVAL (not
 * describable by PRPs) or -E2BIG (list area too small). */
int nvme_prp_build(const struct nvme_sg *sg, unsigned n, uint32_t page_size,
		   const struct nvme_list_mem *list, uint64_t *prp1, uint64_t *prp2,
		   size_t *list_bytes);

/* Build SGL1 for sg whose total must be exactly `total` bytes (NLB x block size; QEMU
 * fails 0x400f otherwise): one Data Block descriptor in the command for one entry, else a
 * (Last) Segment descriptor pointing into list, segments chained per list page. dword
 * set: the controller wants dword aligned addresses and lengths (SGLS 10b). Returns 0,
 * -EINVAL or -E2BIG. */
int nvme_sgl_build(const struct nvme_sg *sg, unsigned n, uint64_t total, uint32_t page_size,
		   bool dword, const struct nvme_list_mem *list, struct nvme_sgl_desc *sgl1,
		   size_t *list_bytes);

/* nvme_sgl_build for a scatter list the caller already checked (1..NVME_MAX_SG entries,
 * none empty) and whose sum it compared with the command's total: not summed again. */
int nvme_sgl_build_summed(const struct nvme_sg *sg, unsigned n, uint32_t page_size, bool dword,
			  const struct nvme_list_mem *list, struct nvme_sgl_desc *sgl1, size_t *list_bytes);

/* --- rings (nvme_queue.c): the submission/completion queue pair without the commands --- */

struct nvme_ring {
	volatile struct nvme_sqe *sq;
	volatile struct nvme_cqe *cq;
	uint16_t depth;      /* entries in each queue */
	uint16_t sq_tail;    /* next SQ slot the host fills */
	uint16_t sq_head;    /* controller's SQ head, from CQE.SQHD */
	uint16_t cq_head;    /* next CQ slot the host reads */
	uint8_t phase;       /* the Phase Tag value of new entries (starts at 1) */
};

void nvme_ring_init(struct nvme_ring *r, void *sq, void *cq, uint16_t depth);
/* Entries the host may still submit: one slot always stays empty so that full and empty
 * differ. */
static inline unsigned nvme_ring_space(const struct nvme_ring *r)
{
	/* tail and head are < depth: the distance without a division */
	unsigned used = r->sq_tail >= r->sq_head ? (unsigned)(r->sq_tail - r->sq_head)
						 : (unsigned)(r->sq_tail + r->depth - r->sq_head);
	return r->depth - 1 - used;
}

/* Copy sqe into the SQ at the tail and advance it; -EBUSY when full. */
static inline int nvme_ring_push(struct nvme_ring *r, const struct nvme_sqe *sqe)
{
	if (nvme_ring_space(r) == 0)
		return -EBUSY;
	volatile uint32_t *dst = (volatile uint32_t *)&r->sq[r->sq_tail];
	const uint32_t *src = (const uint32_t *)sqe;
	_Static_assert(sizeof(*sqe) == 64, "an SQE is 16 dwords");
	/* 4-byte stores: also right for an SQ in device memory; written out (a volatile
	 * loop is not unrolled: twice the instructions for the same 16 stores) */
	dst[0] = src[0], dst[1] = src[1], dst[2] = src[2], dst[3] = src[3];
	dst[4] = src[4], dst[5] = src[5], dst[6] = src[6], dst[7] = src[7];
	dst[8] = src[8], dst[9] = src[9], dst[10] = src[10], dst[11] = src[11];
	dst[12] = src[12], dst[13] = src[13], dst[14] = src[14], dst[15] = src[15];
	r->sq_tail = (uint16_t)(r->sq_tail + 1 == r->depth ? 0 : r->sq_tail + 1);
	return 0;
}

/* The tail's next position (the ring has room while it is not the head: nvme_ring_space). */
static inline uint16_t nvme_ring_next_tail(const struct nvme_ring *r)
{
	return (uint16_t)(r->sq_tail + 1 == r->depth ? 0 : r->sq_tail + 1);
}

/* The entry at the tail was written in place (its space checked): advance the tail. */
static inline void nvme_ring_advance(struct nvme_ring *r)
{
	r->sq_tail = (uint16_t)(r->sq_tail + 1 == r->depth ? 0 : r->sq_tail + 1);
}

/* The CQE at the head if its Phase Tag is current (a new completion), else NULL. */
static inline const volatile struct nvme_cqe *nvme_ring_peek(const struct nvme_ring *r)
{
	const volatile struct nvme_cqe *e = &r->cq[r->cq_head];
	if ((le16_get(e->status) & NVME_CQE_P) != r->phase)
		return NULL;
	__atomic_thread_fence(__ATOMIC_ACQUIRE); /* read the entry only after its phase */
	return e;
}

/* Consume the head CQE (after peek): advance the head, flip the phase on wrap, take SQHD.
 * Returns -EPROTO (the entry is consumed, its SQHD ignored) for an SQHD outside the queue. */
static inline int nvme_ring_pop_sqhd(struct nvme_ring *r, uint16_t sqhd);
static inline int nvme_ring_pop(struct nvme_ring *r)
{
	return nvme_ring_pop_sqhd(r, le16_get(r->cq[r->cq_head].sqhd));
}

/* nvme_ring_pop for a caller that already copied the head CQE out: sqhd is its SQHD
 * (host order), not read from the queue's memory again. */
static inline int nvme_ring_pop_sqhd(struct nvme_ring *r, uint16_t sqhd)
{
	if (++r->cq_head == r->depth) {
		r->cq_head = 0;
		r->phase ^= 1;
	}
	if (sqhd >= r->depth)
		return -EPROTO; /* consumed, but the SQ head is not believed */
	r->sq_head = sqhd;
	return 0;
}

/* Doorbell offsets for queue qid with stride CAP.DSTRD. */
uint32_t nvme_sq_doorbell(uint16_t qid, unsigned dstrd);
uint32_t nvme_cq_doorbell(uint16_t qid, unsigned dstrd);

/* --- the controller (nvme.c) --- */

struct nvme_ctrl;
struct nvme_qpair;

/* Completion callback: rc is 0 or a negative errno (nvme_status_errno, or -ETIMEDOUT,
 * -EIO after a fatal controller status); cqe is NULL when no completion arrived. */
typedef void (*nvme_done_fn)(void *arg, int rc, const struct nvme_cqe *cqe);

enum nvme_cmd_state {
	NVME_CMD_FREE = 0,
	NVME_CMD_ACTIVE,     /* submitted, waiting for its completion */
	NVME_CMD_ABORTING,   /* timed out; an Abort was sent */
	NVME_CMD_LOST,       /* no answer to the Abort either: quarantined (its owner not told, its
			      * buffers not released) until a late completion or the controller
			      * reset that it triggers has disabled the controller */
};

struct nvme_cmd {
	enum nvme_cmd_state state;
	uint8_t opc;
	uint16_t cid;
	uint64_t deadline_ns;
	nvme_done_fn done;
	void *arg;
	/* accounting, applied on success */
	uint64_t data_bytes;
	uint32_t list_bytes;
	uint8_t data_cls, list_cls, dir;
	/* its host list area (NULL, 0: none), the queue's host_lists at cid, kept here for the
	 * common command; the CMB one is derived when needed (nvme_qpair.cmb_list_area). 64
	 * bytes in all, so that a slot's address from its ID is one shift. */
	void *host_list_cpu;
	uint64_t host_list_bus;
};

struct nvme_qpair_stats {
	uint64_t submitted, completed, errors, timeouts, aborts_sent, spurious, lost, late;
};

struct nvme_qpair {
	struct nvme_ctrl *ctrl;
	uint16_t qid;
	struct nvme_ring ring;
	dma_addr_t sq_addr, cq_addr;
	uint32_t sq_db, cq_db;
	struct nvme_cmd cmds[NVME_MAX_QDEPTH];
	bool sq_in_cmb;          /* the SQ ring lives in the controller's CMB (CMBSZ.SQS) */
	bool cmb_lists;          /* the slots' CMB list areas are set up (on first CMB command) */
	struct nvme_list_mem host_lists;    /* slot cid's host list: NVME_LIST_PAGES pages at
					     * cid * bytes from here (cpu NULL: none) */
	struct nvme_list_mem cmb_list_area; /* the same in the CMB once cmb_lists (else cpu NULL) */
	bool sgl_lists;          /* an I/O queue whose slots' host lists are fit for SGL segments
				  * (map_data's fast shapes): set by qpair_alloc, fixed till freed */
	uint64_t lean_max;       /* nvme_submit_rw's lean ways take 1 to lean_max bytes: MDTS (or
				  * UINT64_MAX) when sgl_lists on a byte-granular SGL drive, else 0;
				  * set by qpair_alloc from SGLS and MDTS (read before the I/O queues
				  * at every bring-up), fixed till freed */
	dma_addr_t cmb_lists_addr;
	size_t cmb_lists_bytes;
	uint16_t free_cids[NVME_MAX_QDEPTH];
	unsigned nfree;
	unsigned outstanding;
	uint64_t next_timeout_ns;  /* no command's deadline is earlier: check_timeouts scans the
				    * slots only from then on */
	struct nvme_qpair_stats st;
};

struct nvme_ns {
	uint32_t nsid;
	bool active;
	uint64_t nsze, ncap, nuse;
	unsigned lba_shift;  /* log2 of the logical block size */
	uint16_t ms;         /* metadata bytes per block */
};

enum nvme_ctrl_state {
	NVME_CTRL_NEW = 0,
	NVME_CTRL_RESETTING,  /* CC.EN cleared, waiting for CSTS.RDY = 0 */
	NVME_CTRL_ENABLING,   /* admin queue programmed, CC.EN set, waiting for CSTS.RDY = 1 */
	NVME_CTRL_ADMIN,      /* admin queue live, identifying and creating I/O queues */
	NVME_CTRL_LIVE,       /* I/O queues live */
	NVME_CTRL_FAILED,     /* CSTS.CFS, a timeout during bring-up, or a bad register */
	NVME_CTRL_SHUTDOWN,   /* caches flushed, CC.SHN sent: no more I/O until re-initialised */
	NVME_CTRL_REMOVED,    /* registers read all-ones: the device is gone (surprise removal) */
	NVME_CTRL_STATE_COUNT
};

struct nvme_cmb {
	enum nvme_cmb_scheme scheme;
	struct nvme_cmb_info info;
	uint64_t bus;         /* bus address of the CMB's first byte */
	uint8_t *cpu;         /* CPU mapping (write-combining) */
	uint64_t size;
	bool usable;          /* data and lists may point here */
	const char *refused;  /* why not, when a CMB exists but is not usable */
	uint64_t reserved;    /* bytes at the start carved for I/O SQs (and for lists without
			       * bus->cmb_alloc); a P2P provider must start after them */
	unsigned sqs_in_cmb;  /* I/O submission queues placed in the CMB */
	uint64_t cmbmsc;      /* value written (v1.4) */
};

struct nvme_ctrl_stats {
	uint64_t payload_bytes[MEM_CLASS_COUNT]; /* data moved by completed commands, by class */
	uint64_t list_bytes[MEM_CLASS_COUNT];    /* PRP/SGL lists the controller read */
	uint64_t queue_bytes[MEM_CLASS_COUNT];   /* SQEs the controller fetched, CQEs it posted */
	uint64_t reads, writes, flushes, write_zeroes, dsms, failed;
	uint64_t fua;            /* commands submitted with CDW12.FUA (Write, Write Zeroes, Read) */
	uint64_t flushes_sent;   /* Flush commands submitted (synchronous and asynchronous) */
};

/* Recovery: controller resets (after an unanswered Abort or CSTS.CFS) and removal. */
struct nvme_recovery_stats {
	uint64_t resets;          /* resets completed (controller live again) */
	uint64_t reset_failures;  /* resets after which the controller stayed FAILED */
	uint64_t cfs;             /* CSTS.CFS seen */
	uint64_t removals;        /* all-ones register reads: surprise removal */
	uint64_t failed_back;     /* in-flight commands failed to their owners by a reset/removal */
	uint64_t last_reset_ns;   /* how long the last reset took */
	const char *last_reason;  /* why the last reset happened */
};

#define NVME_HEALTH_INTERVAL_NS (100ull * 1000000ull) /* CSTS check period while live */

struct nvme_ctrl {
	char name[16];
	const struct nvme_bus *bus;
	enum nvme_ctrl_state state;
	int error;               /* why FAILED */
	/* registers */
	uint64_t cap;
	uint32_t vs;
	unsigned dstrd;
	uint64_t rdy_timeout_ns; /* CAP.TO */
	uint64_t reset_ns;       /* how long the last reset + enable took */
	/* Identify Controller */
	uint8_t *idctrl;         /* 4 KiB, kept for `nvme id-ctrl` */
	dma_addr_t idctrl_addr;
	char sn[21], mn[41], fr[9];
	uint16_t cntlid, oncs, acl;
	uint32_t nn, sgls, ver;
	uint8_t mdts, vwc;
	uint32_t rtd3e;          /* RTD3 Entry Latency, microseconds (0: not reported) */
	/* the last shutdown notification (nvme_ctrl_shutdown) */
	int shutdown_rc;
	uint64_t shutdown_ns;
	uint32_t max_xfer;       /* bytes per command */
	/* queues */
	struct nvme_qpair admin;
	struct nvme_qpair io[NVME_MAX_IO_QUEUES];
	unsigned nio;            /* I/O queue pairs created */
	unsigned io_depth;
	/* namespaces */
	struct nvme_ns ns[NVME_MAX_NS];
	unsigned nns;
	uint32_t gen;            /* bumped whenever the I/O queues or the namespaces may change
				  * (bring-up, reset, scan, removal): what a user checked of them
				  * holds while gen is the same and the controller is LIVE */
	/* CMB */
	struct nvme_cmb cmb;
	/* timeouts */
	uint64_t cmd_timeout_ns, abort_timeout_ns;
	struct nvme_ctrl_stats st;
	void *attach;            /* the bus attach's own data (nvme_pci.c) */
	/* recovery (nvme_reset.c) */
	unsigned nio_wanted;     /* I/O queue pairs asked for at init (a reset asks again) */
	bool reset_needed;       /* set by timeouts / CSTS.CFS, acted on at the end of a poll */
	bool in_reset;
	const char *reset_reason;
	uint64_t next_health_ns;
	struct nvme_recovery_stats rec;
	uint16_t last_error_status;  /* SCT << 8 | SC of the last failed command */
	/* called after a reset re-initialised the controller (the attach republishes its CMB
	 * provider) or when it is removed; may be NULL */
	void (*on_reset)(struct nvme_ctrl *c, int rc);
};

/* Place I/O submission queues in the CMB when the controller allows it (CMBSZ.SQS):
 * the controller then fetches commands from its own memory, not from host DRAM.
 * On by default; applies to controllers initialised afterwards. */
void nvme_set_sq_in_cmb(bool on);

/* Bring a controller up: reset (CC.EN=0, bounded wait on CSTS.RDY=0 even if firmware left it
 * enabled), admin queue, enable (bounded wait on CSTS.RDY=1, CSTS.CFS checked), Identify
 * Controller, CMB setup, Set Features Number of Queues, nio I/O queue pairs, active
 * namespace list and Identify Namespace for each. Returns 0 or a negative errno (then the
 * controller is FAILED, disabled when possible, and nvme_ctrl_fini() still must be called). */
int nvme_ctrl_init(struct nvme_ctrl *c, const char *name, const struct nvme_bus *bus, unsigned nio);

/* Delete the I/O queues (best effort), disable the controller, free its memory. */
void nvme_ctrl_fini(struct nvme_ctrl *c);

/* CC.EN = 0 and a bounded wait for CSTS.RDY = 0 (CAP.TO). 0, -ETIMEDOUT or -EIO. */
int nvme_ctrl_disable(struct nvme_ctrl *c);

/* Does the controller have a volatile write cache (Identify Controller VWC bit 0)? Then a
 * completed Write without FUA may still be lost at a power cut until a Flush completes. */
bool nvme_ctrl_has_vwc(const struct nvme_ctrl *c);

/* Reset and re-initialise a controller: CC.EN = 0 and a bounded wait for CSTS.RDY = 0 (from
 * then on the controller moves no data, so buffers are safe), every command in flight failed
 * to its owner (-ETIMEDOUT for commands that timed out, -EAGAIN, retryable, for the others;
 * quarantined commands included), then the bring-up of nvme_ctrl_init() again (admin queue,
 * Identify, CMB with the same layout, I/O queues, SQs in the CMB, namespaces), keeping the
 * name, counters and attach. Returns 0 (LIVE again), -ENODEV (removed) or the bring-up's
 * error (then FAILED). Not re-entrant: a reset already running makes this return -EBUSY. */
int nvme_ctrl_reset(struct nvme_ctrl *c, const char *why);

/* Health check for the poll loop (at most every NVME_HEALTH_INTERVAL_NS): CSTS all-ones
 * marks the controller REMOVED (commands failed with -ENODEV); CSTS.CFS resets it; a reset
 * requested by a timeout is run. Returns 1 when it acted, else 0. */
int nvme_ctrl_check(struct nvme_ctrl *c, uint64_t now);

/* Orderly shutdown for power-off, reboot, a panic or a detach: Flush every active namespace
 * (when the controller has a volatile write cache), then CC.SHN = normal and a bounded wait
 * for CSTS.SHST = complete (RTD3E, at least NVME_SHUTDOWN_FLOOR_NS, at most _CAP_NS). Commands
 * still in flight are polled to completion first, within their own timeouts. The outcome is
 * logged; c->shutdown_rc and c->shutdown_ns keep it. The controller is SHUTDOWN afterwards
 * (no more I/O). Returns 0, -ETIMEDOUT (SHST never said complete), -EIO (a Flush failed; the
 * notification is still sent), -ENODEV (the device is gone), or 0 at once when already
 * shut down or never brought up. */
int nvme_ctrl_shutdown(struct nvme_ctrl *c);

/* Hot removal (nvme_reset.c): a device still present (removal on request) is flushed and sent
 * CC.SHN (or at least disabled); then every command left fails with -ENODEV, the namespaces
 * go not ready, the attach is told (-ENODEV) and the queue memory is freed. The controller
 * stays registered in state removed, so users holding it see a removed drive, not a
 * dangling pointer; a later nvme_ctrl_init() on the same struct brings it back. */
void nvme_ctrl_detach(struct nvme_ctrl *c, bool present);

/* nvme_ctrl_shutdown() for every registered controller (the shutdown hook runs this).
 * Returns how many failed. */
unsigned nvme_shutdown_all(void);

/* The namespace with this ID if present and active, else NULL. */
struct nvme_ns *nvme_ns_get(struct nvme_ctrl *c, uint32_t nsid);

const char *nvme_ctrl_state_name(enum nvme_ctrl_state s);

/* Is [bus, bus + len) inside this controller's own CMB? */
bool nvme_in_own_cmb(const struct nvme_ctrl *c, uint64_t bus, uint64_t len);

/* A command description for nvme_submit(): opcode, namespace, CDW10-15 and the data. */
struct nvme_request {
	uint8_t opc;
	uint32_t nsid;
	uint32_t cdw10, cdw11, cdw12, cdw13, cdw14, cdw15;
	const struct nvme_sg *sg; /* data, NULL for none */
	unsigned nsg;
	uint64_t sgl_total;       /* bytes an SGL must describe exactly (0: sum of sg) */
	enum dma_dir dir;         /* DMA_TO_DEVICE: the controller reads the data */
	bool force_prp;           /* never use SGLs (tests, admin commands) */
	bool count_payload;       /* data is I/O payload (read/write), counted per class */
	bool checked;             /* the caller vouches for sg: its entries add up to sgl_total
				   * (not 0), none is empty and all are of one memory class (the
				   * common gather then only writes the list; nvme_submit_rw) */
};

/* Submit on q; done(arg, rc, cqe) runs from nvme_qpair_poll() (never from here). Returns 0,
 * -EBUSY (queue full), -EINVAL (bad scatter list, memory mix, CMB not usable), -EIO
 * (controller failed). */
int nvme_submit(struct nvme_qpair *q, const struct nvme_request *rq, nvme_done_fn done, void *arg);

/* What one caller's Reads and Writes to one namespace share (the target's NVMe backend keeps
 * one per namespace): the controller and namespace, the block size, the I/O queue of the
 * next command (round robin), the completion and the refusal callbacks. */
struct nvme_rw_route {
	struct nvme_ctrl *c;
	uint32_t nsid;
	unsigned lba_shift;   /* log2 of the namespace's block size */
	unsigned next_q;      /* c->io[next_q] takes the next command (0 when past c->nio) */
	uint32_t gen;         /* c->gen when check last passed (check's to set) */
	nvme_done_fn done;    /* a submitted command's completion (from nvme_qpair_poll()) */
	nvme_done_fn refused; /* a command not submitted: refused(arg, rc, NULL) before
			       * nvme_submit_rw() returns rc (NULL: none) */
	/* The owner's check that the route still leads where it was opened (NULL: none): run
	 * before a command while c is NULL or not LIVE or its gen is not the route's; 0 (the
	 * command goes on, gen set) or the errno the command is refused with. */
	int (*check)(struct nvme_rw_route *rt);
};

/* A Read/Write's data for nvme_submit_rw() (16 bytes: passed in two registers). checked:
 * nvme_request.checked (true only when it holds: the answers are then the same). */
struct nvme_rw_data {
	const struct nvme_sg *sg;
	uint32_t nsg;
	bool write;           /* a Write (the controller reads sg), else a Read */
	bool checked;
};

/* A Read or Write at slba through rt on its next I/O queue: what nvme_submit() does for the
 * nvme_request {opc, nsid, cdw10/11 = slba, cdw12 (NLB - 1, FUA), sg/nsg, sgl_total = NLB <<
 * lba_shift, dir, count_payload, checked}, with the same checks and answers, built from the
 * arguments (the target's Read/Write on an NVMe namespace: no request struct of the
 * caller's), after rt->check when the controller changed since it last passed. A refusal
 * (nvme_submit()'s errno, or check's) also goes to rt->refused, so that a caller may end
 * with this call (the target's Read/Write is a chain of tail calls down to the doorbell). */
int nvme_submit_rw(struct nvme_rw_route *rt, uint64_t slba, uint32_t cdw12, struct nvme_rw_data d, void *arg);

/* Reap up to budget completions and handle timeouts (Abort, then give up). Returns the number
 * of completions handled, or -EIO when the controller reports a fatal status. */
int nvme_qpair_poll(struct nvme_qpair *q, unsigned budget);

/* Submit and poll until done or timed out (bounded). Returns 0 or a negative errno; *cqe_out
 * (may be NULL) gets the completion. */
int nvme_exec_sync(struct nvme_qpair *q, const struct nvme_request *rq, struct nvme_cqe *cqe_out);

/* Synchronous NVM commands on the first I/O queue. slba/nlb in logical blocks; the scatter
 * list must hold exactly nlb blocks. -ERANGE beyond the namespace end, -ENODEV for an absent
 * namespace, -EOPNOTSUPP when the controller lacks the command. */
int nvme_read(struct nvme_ctrl *c, uint32_t nsid, uint64_t slba, uint32_t nlb,
	      const struct nvme_sg *sg, unsigned nsg);
int nvme_write(struct nvme_ctrl *c, uint32_t nsid, uint64_t slba, uint32_t nlb,
	       const struct nvme_sg *sg, unsigned nsg);
/* A write with Force Unit Access: complete only once the data is on non-volatile media. */
int nvme_write_fua(struct nvme_ctrl *c, uint32_t nsid, uint64_t slba, uint32_t nlb,
		   const struct nvme_sg *sg, unsigned nsg);
int nvme_flush(struct nvme_ctrl *c, uint32_t nsid);
int nvme_write_zeroes(struct nvme_ctrl *c, uint32_t nsid, uint64_t slba, uint32_t nlb);
/* Deallocate one LBA range (Dataset Management, AD). */
int nvme_deallocate(struct nvme_ctrl *c, uint32_t nsid, uint64_t slba, uint32_t nlb);

/* Build the request of a read or write (checks the namespace and the range). */
int nvme_rw_request(struct nvme_ctrl *c, bool write, uint32_t nsid, uint64_t slba, uint32_t nlb,
		    const struct nvme_sg *sg, unsigned nsg, struct nvme_request *rq);

/* Controllers registered by attaches (console, copy). */
int nvme_register(struct nvme_ctrl *c);
void nvme_unregister(struct nvme_ctrl *c);
/* The registry itself (nvme.c); read it through nvme_count() and nvme_at(). */
extern struct nvme_ctrl *nvme_registered[NVME_MAX_CTRLS];
extern unsigned nvme_nregistered;

/* Registered controllers. Inline: the poller asks on every pass. */
static inline unsigned nvme_count(void)
{
	return nvme_nregistered;
}

/* The i-th registered controller, NULL past the last. */
static inline struct nvme_ctrl *nvme_at(unsigned i)
{
	return i < nvme_nregistered ? nvme_registered[i] : NULL;
}

/* --- the PCI attach (nvme_pci.c) --- */
struct p2p_provider;
struct pci_dev;
/* The P2P provider publishing c's CMB, or NULL. */
struct p2p_provider *nvme_pci_cmb_provider(struct nvme_ctrl *c);
/* The PCI function of c, or NULL. */
struct pci_dev *nvme_pci_dev(struct nvme_ctrl *c);

#endif
