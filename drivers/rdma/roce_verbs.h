/*
 * roce_verbs.h - the verbs of the software RoCE v2 device (IBTA vol. 1 chapter 11,
 * shaped as libibverbs is): device and port attributes, protection domains, memory
 * regions with lkey/rkey, completion queues, shared receive queues and RC/UD queue pairs
 * with the queue-pair state machine of 10.3.1 and the attribute rules of 11.2.5.
 *
 * Everything lives in one struct roce_dev, owned by one poll loop: bounded handle tables
 * (fixed capacities below, objects from mm pools), no file-scope state, no locks. Work
 * requests are checked when posted for their shape (opcode against the QP type, SGE
 * count, queue room); keys and bounds are checked when the transport touches memory,
 * and a failure there becomes an error completion, as on a hardware HCA.
 *
 * Numbering: enums and flags take libibverbs' values (IBV_QPS_*, IBV_ACCESS_*,
 * IBV_QP_* attribute mask bits, IBV_WC_* status), so the console and logs read like the
 * Linux tools and the NVMe-oF RDMA transport maps one to one.
 */
#ifndef DRIVERS_RDMA_ROCE_VERBS_H
#define DRIVERS_RDMA_ROCE_VERBS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "../../mm/dma.h"
#include "../../mm/pool.h"

#define ROCE_MAX_PD 32
#define ROCE_MAX_MR 256              /* the key's index part is 8 bits wide: lkey = index << 8 | key */
#define ROCE_MAX_CQ 32
#define ROCE_MAX_SRQ 8
#define ROCE_MAX_QP 32
#define ROCE_MAX_WR 128              /* work requests per send/receive queue and per SRQ */
#define ROCE_MAX_SGE 4               /* scatter/gather elements per work request */
#define ROCE_MAX_CQE 512
#define ROCE_MAX_RD_ATOMIC 16        /* outstanding RDMA READ/atomic per QP, each direction */
#define ROCE_GSI_QPN 1

/* Memory access rights (IBV_ACCESS_*). */
#define ROCE_ACCESS_LOCAL_WRITE 0x1
#define ROCE_ACCESS_REMOTE_WRITE 0x2
#define ROCE_ACCESS_REMOTE_READ 0x4
#define ROCE_ACCESS_REMOTE_ATOMIC 0x8
#define ROCE_ACCESS_ALL 0xf

enum roce_qp_type { ROCE_QPT_RC = 2, ROCE_QPT_UD = 4 };

enum roce_qp_state {
	ROCE_QPS_RESET, ROCE_QPS_INIT, ROCE_QPS_RTR, ROCE_QPS_RTS, ROCE_QPS_SQD, ROCE_QPS_SQE, ROCE_QPS_ERR,
	ROCE_QPS_COUNT
};

/* Path MTU codes (IBV_MTU_*): bytes = 128 << code. */
enum roce_mtu { ROCE_MTU_256 = 1, ROCE_MTU_512, ROCE_MTU_1024, ROCE_MTU_2048, ROCE_MTU_4096 };

/* Modify-QP attribute mask bits (IBV_QP_*). */
#define ROCE_QP_STATE (1u << 0)
#define ROCE_QP_CUR_STATE (1u << 1)
#define ROCE_QP_EN_SQD_ASYNC_NOTIFY (1u << 2)
#define ROCE_QP_ACCESS_FLAGS (1u << 3)
#define ROCE_QP_PKEY_INDEX (1u << 4)
#define ROCE_QP_PORT (1u << 5)
#define ROCE_QP_QKEY (1u << 6)
#define ROCE_QP_AV (1u << 7)
#define ROCE_QP_PATH_MTU (1u << 8)
#define ROCE_QP_TIMEOUT (1u << 9)
#define ROCE_QP_RETRY_CNT (1u << 10)
#define ROCE_QP_RNR_RETRY (1u << 11)
#define ROCE_QP_RQ_PSN (1u << 12)
#define ROCE_QP_MAX_QP_RD_ATOMIC (1u << 13)
#define ROCE_QP_ALT_PATH (1u << 14)
#define ROCE_QP_MIN_RNR_TIMER (1u << 15)
#define ROCE_QP_SQ_PSN (1u << 16)
#define ROCE_QP_MAX_DEST_RD_ATOMIC (1u << 17)
#define ROCE_QP_PATH_MIG_STATE (1u << 18)
#define ROCE_QP_CAP (1u << 19)
#define ROCE_QP_DEST_QPN (1u << 20)

/* Work request opcodes (IBV_WR_*). */
enum roce_wr_opcode {
	ROCE_WR_RDMA_WRITE = 0, ROCE_WR_RDMA_WRITE_WITH_IMM = 1, ROCE_WR_SEND = 2, ROCE_WR_SEND_WITH_IMM = 3,
	ROCE_WR_RDMA_READ = 4, ROCE_WR_ATOMIC_CMP_AND_SWP = 5, ROCE_WR_ATOMIC_FETCH_AND_ADD = 6,
	ROCE_WR_SEND_WITH_INV = 9,
};
#define ROCE_SEND_SIGNALED 0x2       /* IBV_SEND_SIGNALED */
#define ROCE_SEND_SOLICITED 0x4      /* IBV_SEND_SOLICITED */

/* Completion status (IBV_WC_*). */
enum roce_wc_status {
	ROCE_WC_SUCCESS = 0, ROCE_WC_LOC_LEN_ERR = 1, ROCE_WC_LOC_QP_OP_ERR = 2, ROCE_WC_LOC_PROT_ERR = 4,
	ROCE_WC_WR_FLUSH_ERR = 5, ROCE_WC_MW_BIND_ERR = 6, ROCE_WC_BAD_RESP_ERR = 7, ROCE_WC_LOC_ACCESS_ERR = 8,
	ROCE_WC_REM_INV_REQ_ERR = 9, ROCE_WC_REM_ACCESS_ERR = 10, ROCE_WC_REM_OP_ERR = 11,
	ROCE_WC_RETRY_EXC_ERR = 12, ROCE_WC_RNR_RETRY_EXC_ERR = 13, ROCE_WC_REM_ABORT_ERR = 17,
	ROCE_WC_GENERAL_ERR = 21,
};

/* Completion opcodes (IBV_WC_*). */
enum roce_wc_opcode {
	ROCE_WC_SEND = 0, ROCE_WC_RDMA_WRITE = 1, ROCE_WC_RDMA_READ = 2, ROCE_WC_COMP_SWAP = 3,
	ROCE_WC_FETCH_ADD = 4, ROCE_WC_RECV = 128, ROCE_WC_RECV_RDMA_WITH_IMM = 129,
};
#define ROCE_WC_WITH_IMM 0x2         /* wc_flags: IBV_WC_WITH_IMM */
#define ROCE_WC_WITH_INV 0x8         /* wc_flags: IBV_WC_WITH_INV */

/* A GID: RoCE v2 over IPv4 uses the IPv4-mapped IPv6 address ::ffff:a.b.c.d. */
struct roce_gid {
	uint8_t raw[16];
};

struct roce_port_attr {
	enum roce_mtu max_mtu, active_mtu;  /* active: the largest path MTU the netdev MTU carries */
	uint16_t pkey;                      /* the one P_Key (index 0): 0xffff */
	struct roce_gid gid;                /* the one GID (index 0) */
	bool gid_valid;                     /* false until the interface has an address */
};

struct roce_dev_attr {
	unsigned max_qp, max_qp_wr, max_sge, max_cq, max_cqe, max_mr, max_pd, max_srq;
	unsigned max_qp_rd_atom, max_qp_init_rd_atom;
	uint64_t max_mr_size;
};

struct roce_dev;
struct roce_pd;
struct roce_mr;
struct roce_cq;
struct roce_srq;
struct roce_qp;

struct roce_sge {
	uint64_t addr;               /* iova inside the MR of lkey */
	uint32_t length;
	uint32_t lkey;
};

struct roce_ah {                     /* address vector of a UD send, or an RC QP's path */
	uint32_t dst_ip;             /* IPv4, host order */
	struct roce_gid dgid;
	uint8_t hop_limit, traffic_class;
	uint8_t sgid_index;
};

struct roce_send_wr {
	uint64_t wr_id;
	enum roce_wr_opcode opcode;
	unsigned send_flags;
	unsigned num_sge;
	struct roce_sge sg_list[ROCE_MAX_SGE];
	uint32_t imm_data;           /* host order */
	uint32_t invalidate_rkey;
	uint64_t remote_addr;        /* RDMA and atomics */
	uint32_t rkey;
	uint64_t compare_add, swap;  /* atomics */
	struct roce_ah ah;           /* UD */
	uint32_t remote_qpn, remote_qkey;  /* UD */
};

struct roce_recv_wr {
	uint64_t wr_id;
	unsigned num_sge;
	struct roce_sge sg_list[ROCE_MAX_SGE];
};

struct roce_wc {
	uint64_t wr_id;
	enum roce_wc_status status;
	enum roce_wc_opcode opcode;
	uint32_t byte_len;
	uint32_t imm_data;           /* host order; also the invalidated rkey with WITH_INV */
	uint32_t qp_num, src_qp;
	unsigned wc_flags;
};

struct roce_qp_cap {
	unsigned max_send_wr, max_recv_wr, max_send_sge, max_recv_sge;
};

struct roce_qp_init_attr {
	enum roce_qp_type qp_type;
	struct roce_cq *send_cq, *recv_cq;
	struct roce_srq *srq;        /* NULL: the QP's own receive queue */
	struct roce_qp_cap cap;
	bool sq_sig_all;
	void *qp_context;
};

struct roce_qp_attr {
	enum roce_qp_state qp_state, cur_qp_state;
	enum roce_mtu path_mtu;
	uint32_t qkey, rq_psn, sq_psn, dest_qp_num;
	unsigned qp_access_flags;
	struct roce_qp_cap cap;
	struct roce_ah ah_attr;
	uint16_t pkey_index;
	bool en_sqd_async_notify;
	uint8_t max_rd_atomic, max_dest_rd_atomic, min_rnr_timer, port_num, timeout, retry_cnt, rnr_retry;
};

/* Called from the poll loop when a CQE is added to an armed CQ (one shot, re-arm with
 * roce_req_notify_cq), or when the CQ overflows (then status says so). */
typedef void (*roce_comp_fn)(struct roce_cq *cq, void *ctx);

/* --- device ----------------------------------------------------------------------- */

/* Create a device (heap) with the attributes above and its object pools, named name
 * (the pools' names carry it). The GID follows the address set with roce_dev_set_addr.
 * 0, -ENOMEM. */
int roce_dev_init(struct roce_dev **out, const char *name);

/* Destroy the device: -EBUSY while any object still exists. */
int roce_dev_destroy(struct roce_dev *dev);

/* Set the interface's IPv4 address (host order; 0: none) and MTU: GID index 0 becomes
 * ::ffff:addr and the port's active path MTU the largest that fits in mtu - IPv4 - UDP -
 * the RoCE headers and ICRC. */
void roce_dev_set_addr(struct roce_dev *dev, uint32_t addr, unsigned mtu);

void roce_query_device(const struct roce_dev *dev, struct roce_dev_attr *out);
void roce_query_port(const struct roce_dev *dev, struct roce_port_attr *out);

/* GID index: 0 (the only one). -EINVAL for another index or before the address is set. */
int roce_query_gid(const struct roce_dev *dev, unsigned index, struct roce_gid *out);

/* ::ffff:a.b.c.d from a host-order IPv4 address, and back (-EINVAL when not v4-mapped). */
void roce_gid_from_ipv4(uint32_t addr, struct roce_gid *out);
int roce_gid_to_ipv4(const struct roce_gid *gid, uint32_t *out);

/* Path MTU code -> bytes (0 for an invalid code). */
unsigned roce_mtu_bytes(enum roce_mtu m);

/* --- PD, MR --------------------------------------------------------------------------- */

/* 0, -ENOMEM (table full). */
int roce_alloc_pd(struct roce_dev *dev, struct roce_pd **out);
/* 0, -EBUSY while an MR or QP uses it. */
int roce_dealloc_pd(struct roce_pd *pd);

/* Register length bytes at iova, backed by memory at `mem` (host DRAM or published
 * device memory; the appliance is identity-mapped, so mem.bus is also the CPU address),
 * with access (ROCE_ACCESS_*; remote write or atomic need local write, as 11.2.8.1
 * says). lkey = rkey = index << 8 | a key byte that changes on every registration of the
 * slot, so a stale key of a freed MR never matches. 0, -EINVAL, -ENOMEM. */
int roce_reg_mr(struct roce_pd *pd, uint64_t iova, uint64_t length, dma_addr_t mem, unsigned access,
		struct roce_mr **out);
/* A strided MR for local reads (the gather of SENDs and RDMA WRITEs, ROCE_ACCESS_LOCAL_WRITE
 * at most): length bytes of iova, chunk bytes at a time, chunk k at mem + k * (chunk + gap)
 * with gap bytes of scratch after it that the device may overwrite. A packet whose payload
 * is one whole chunk then carries its pad and ICRC right behind it, in the same memory (a
 * NIC gathers it as one piece). A local check across a chunk boundary fails (-ERANGE).
 * 0, -EINVAL (rights, chunk 0, sizes), -ENOMEM. */
int roce_reg_mr_strided(struct roce_pd *pd, uint64_t iova, uint64_t length, dma_addr_t mem, unsigned access,
			uint32_t chunk, uint32_t gap, struct roce_mr **out);

/* Receive fragments into an MR instead of copies (see roce_mr_set_sink). off: the piece's
 * offset from the MR's iova; f: the piece, a reference to a NIC receive buffer narrowed to
 * the payload bytes. 0: taken (Consumes f: the sink releases it with netdev_frag_release
 * when done); negative: refused (f stays the caller's, which copies its bytes into the MR's
 * memory and releases it). */
struct netdev_frag;
typedef int (*roce_mr_sink_fn)(void *ctx, uint64_t off, struct netdev_frag *f);

/* Hand received payload over in place: when the RC completer places RDMA READ response
 * payload into mr, or the responder a SEND's payload into a receive WR's scatter element in
 * mr, and the payload lies in the NIC's receive buffers (fragments with an owner, as header
 * split leaves them), each piece is offered to fn(ctx, off, f) instead of being copied into
 * mr's memory; bytes fn refuses, and bytes the NIC left in the frame's host part, are copied
 * as without a sink. Pieces come in message order (a retry re-sends only what was not
 * placed, so no byte is offered twice), each before the completion of its WR; the memory
 * behind a taken piece is not written. Every other verbs user sees no difference (an MR without a sink is copied
 * into as always). fn NULL removes the sink. 0, or -EINVAL for an on-demand paged or
 * strided MR. */
int roce_mr_set_sink(struct roce_mr *mr, roce_mr_sink_fn fn, void *ctx);

/* Who keeps an MR's memory alive while the NIC still reads frames gathered from it. A packet
 * whose payload the NIC gathers where it is (no copy: device memory, or a DRAM payload larger
 * than a copied datagram) is read by the NIC after roce_net sent it, possibly after its WR
 * completed (a transmit ring that completes late, a retransmission still queued when the
 * original's ACK came). For an MR with a transmit owner, each such piece calls hold(o, token)
 * before it goes to the NIC and carries (&o->owner, token) as its fragment owner, released
 * once when the NIC is done with the frame (descriptor done) or dropped it. */
struct netdev_frag_owner;
struct roce_mr_tx_owner {
	struct netdev_frag_owner *owner;  /* its release(owner, token): one piece is done */
	void (*hold)(struct roce_mr_tx_owner *o, uint64_t token);  /* one more piece goes to the NIC */
};

/* Give mr a transmit owner (NULL: none, the memory must outlive the WR's completion only).
 * 0, or -EINVAL for an on-demand paged MR. */
int roce_mr_set_tx_owner(struct roce_mr *mr, struct roce_mr_tx_owner *o, uint64_t token);

/* 0 (its keys are dead from now on). */
int roce_dereg_mr(struct roce_mr *mr);

uint32_t roce_mr_lkey(const struct roce_mr *mr);
uint32_t roce_mr_rkey(const struct roce_mr *mr);

/* The checks of every access (9.4, 10.6.3): the key names a live MR (rkey for remote,
 * lkey for local), of the QP's PD, with the access rights needed, and [va, va + len)
 * lies inside it (no wrap). Fills *mem with the memory behind va. 0, -ENOENT (no such
 * key), -EPERM (PD or rights), -ERANGE (bounds). An on-demand paged MR (roce_odp_mr.h)
 * passes a remote check with *mem null (its bytes are reached page by page through
 * roce_mr_map) and fails a local one with -EPERM. */
int roce_mr_check(struct roce_dev *dev, const struct roce_pd *pd, uint32_t key, bool remote, unsigned access,
		  uint64_t va, uint64_t len, dma_addr_t *mem);

/* --- CQ, SRQ ------------------------------------------------------------------------- */

/* cqe entries (1..ROCE_MAX_CQE); fn/ctx: the completion callback (may be NULL). */
int roce_create_cq(struct roce_dev *dev, unsigned cqe, roce_comp_fn fn, void *ctx, struct roce_cq **out);
/* -EBUSY while a QP uses it. */
int roce_destroy_cq(struct roce_cq *cq);

/* Take up to n completions, oldest first. Returns how many, or -EIO after an overflow
 * (the CQ is in error: entries were lost). */
int roce_poll_cq(struct roce_cq *cq, unsigned n, struct roce_wc *wc);

/* Arm the CQ: the next completion calls the callback once. */
void roce_req_notify_cq(struct roce_cq *cq);

/* Transport side: add a completion (calls the callback when armed). -EOVERFLOW when
 * full (the CQ enters its error state). */
int roce_cq_push(struct roce_cq *cq, const struct roce_wc *wc);

int roce_create_srq(struct roce_pd *pd, unsigned max_wr, unsigned max_sge, struct roce_srq **out);
int roce_destroy_srq(struct roce_srq *srq);
int roce_post_srq_recv(struct roce_srq *srq, const struct roce_recv_wr *wr);

/* --- QP ---------------------------------------------------------------------------- */

/* A new QP in RESET with a QPN unique among the live ones (and not reused soon: its
 * upper bits are a generation). UD QP 1 is the GSI QP (roce_create_gsi_qp). 0,
 * -EINVAL (caps, CQs, SRQ of another PD), -ENOMEM. */
int roce_create_qp(struct roce_pd *pd, const struct roce_qp_init_attr *init, struct roce_qp **out);
int roce_create_gsi_qp(struct roce_pd *pd, const struct roce_qp_init_attr *init, struct roce_qp **out);
/* Outstanding work requests are dropped without completions (the QP should be in ERR
 * and drained first, as with ibv_destroy_qp). */
int roce_destroy_qp(struct roce_qp *qp);

/* Modify a QP (11.2.5.2): the transition cur -> attr->qp_state must be one of 10.3.1's,
 * mask must hold its required attributes and nothing beyond its optional ones, and each
 * value must be in range. Entering ERR flushes every outstanding WR with
 * ROCE_WC_WR_FLUSH_ERR. 0 or -EINVAL (the QP is unchanged). */
int roce_modify_qp(struct roce_qp *qp, const struct roce_qp_attr *attr, unsigned mask);
int roce_query_qp(const struct roce_qp *qp, struct roce_qp_attr *attr, struct roce_qp_init_attr *init);

uint32_t roce_qp_num(const struct roce_qp *qp);
enum roce_qp_state roce_qp_state(const struct roce_qp *qp);
const char *roce_qp_state_name(enum roce_qp_state s);

/* Find a live QP by number (the receive path). NULL when none. */
struct roce_qp *roce_qp_lookup(struct roce_dev *dev, uint32_t qpn);

/* Post one work request. -EINVAL (state, opcode for the QP type, SGE count, inline length),
 * -ENOMEM (queue full). In ERR a WR completes at once with ROCE_WC_WR_FLUSH_ERR. */
int roce_post_send(struct roce_qp *qp, const struct roce_send_wr *wr);
int roce_post_recv(struct roce_qp *qp, const struct roce_recv_wr *wr);

/* Work requests queued on a QP's send / receive queue (not yet completed). */
unsigned roce_qp_sq_count(const struct roce_qp *qp);
unsigned roce_qp_rq_count(const struct roce_qp *qp);

#endif
