/*
 * nvmet_rdma_priv.h - what the NVMe/RDMA transport's files share (nvmet_rdma.c: the CM,
 * queues and the poller; nvmet_rdma_cmd.c: commands, data buffers, responses). Nothing
 * outside the transport includes it.
 */
#ifndef DRIVERS_NVME_TARGET_NVMET_RDMA_PRIV_H
#define DRIVERS_NVME_TARGET_NVMET_RDMA_PRIV_H

#include "nvmet_rdma.h"

/* Work request IDs: the kind in the upper half, the capsule or rsp index in the lower. */
enum nvmet_rdma_wr_kind { NVMET_RDMA_WR_RECV = 1, NVMET_RDMA_WR_READ, NVMET_RDMA_WR_WRITE, NVMET_RDMA_WR_SEND };
#define NVMET_RDMA_WR_ID(kind, idx) ((uint64_t)(kind) << 32 | (uint32_t)(idx))

extern const struct nvmet_transport_ops nvmet_rdma_ops;

/* Post receive buffer i of rq. 0 or errno. */
int nvmet_rdma_post_recv(struct nvmet_rdma_queue *rq, unsigned i);

/* A capsule of len bytes arrived in receive buffer i: run it (or keep it pending until a
 * rsp is free). */
void nvmet_rdma_capsule(struct nvmet_rdma_queue *rq, unsigned i, uint32_t len);

/* A send-queue completion of rq (READ, WRITE or SEND of a rsp). */
void nvmet_rdma_send_done(struct nvmet_rdma_queue *rq, const struct roce_wc *wc);

/* Retry the waiting rsps of rq: those waiting for send room in order until one still finds
 * none, then those waiting for a buffer in order until one still finds none. Returns how
 * many went. */
int nvmet_rdma_resume(struct nvmet_rdma_queue *rq);

/* Free the rsps of rq whose device buffers the NIC no longer reads (TX_HELD, no frame left).
 * Returns how many. */
int nvmet_rdma_tx_reap(struct nvmet_rdma_queue *rq);
/* Set up t's transmit owner (nvmet_rdma_start). */
void nvmet_rdma_tx_owner_init(struct nvmet_rdma *t);

/* The queue is closing: rsps waiting for buffers or send room are freed. */
void nvmet_rdma_drop_waiting(struct nvmet_rdma_queue *rq);

/* Close rq (QP to ERR, flushed completions drained, nvmet queue destroyed); why for the log. */
void nvmet_rdma_queue_close(struct nvmet_rdma_queue *rq, const char *why);

/* Data buffer pools (DRAM). */
int nvmet_rdma_pools_init(struct nvmet_rdma *t);
void nvmet_rdma_pools_fini(struct nvmet_rdma *t);
/* The host addresses competing for a pool, rq's own included: those with a queue that holds
 * some of it (held(queue, arg) nonzero) or has a command waiting for a buffer; at least
 * NVMET_RDMA_HOST_SHARE. Each holds at most that part of the pool, so a host that starts
 * waiting gets its part as soon as the others' commands done give theirs back, however
 * many others keep theirs busy. */
unsigned nvmet_rdma_hosts_competing(const struct nvmet_rdma_queue *rq,
				    unsigned (*held)(const struct nvmet_rdma_queue *, unsigned), unsigned arg);
/* A DRAM pool slot of at least len bytes for rq within its host's share. 0 or -ENOMEM. */
int nvmet_rdma_buf_get(struct nvmet_rdma_queue *rq, uint32_t len, struct nvmet_rdma_buf *b);
/* Give back b (a pool slot or device memory); b is zeroed. */
void nvmet_rdma_buf_put(struct nvmet_rdma_queue *rq, struct nvmet_rdma_buf *b);

/* The data buffer of r's keyed payload (nvmet_rdma_place.c): device memory for namespace
 * I/O when the P2P rules allow it, else a DRAM pool slot with the reason counted (and
 * logged once per direction). 0, or -ENOMEM when no DRAM slot is free (the caller waits). */
int nvmet_rdma_place(struct nvmet_rdma_rsp *r);
/* Give back device memory held by b (its MR deregistered), and the NIC receive buffers it
 * still holds. */
void nvmet_rdma_place_put(struct nvmet_rdma_queue *rq, struct nvmet_rdma_buf *b);
/* r's RDMA READ completed: where the drive reads the write data from. The NIC's receive
 * buffers in place (r->buf.sgt/nsg: one segment per held fragment) when every byte came as a
 * fragment in device memory the drive may read in place (mops->reach: its own CMB, or another
 * device's with nvmet.peer_sgl on); else the fragments are copied into r's device buffer and
 * given back (the copy counted per reason, logged once), nsg 0: the one buffer. */
void nvmet_rdma_place_write_ready(struct nvmet_rdma_rsp *r);
/* The NVMe Write of b's data completed (or b goes): its NIC receive buffers go back to the
 * NIC and their reservation to the budget. */
void nvmet_rdma_place_release_frags(struct nvmet_rdma_queue *rq, struct nvmet_rdma_buf *b);

/* The sink of rq's capsule MR (roce_mr_set_sink): keeps a piece of capsule data in the NIC's
 * receive buffer when it continues the capsule's held bytes, the capsule carries data beyond
 * its command, and the capsules' budget has room. */
int nvmet_rdma_capsule_frag_take(void *ctx, uint64_t off, struct netdev_frag *f);
/* Capsule i of rq no longer needs the NIC's buffers: they go back. */
void nvmet_rdma_capsule_release(struct nvmet_rdma_queue *rq, unsigned i);
/* Capsule i of rq (len bytes) arrived in the NIC's buffers: the first copy_len bytes go into
 * its DRAM buffer (the command, or everything when the data cannot stay), the rest stays. */
void nvmet_rdma_capsule_copy(struct nvmet_rdma_queue *rq, unsigned i, uint32_t copy_len);
/* r's in-capsule data (capsule bytes [off, off + len)): the NIC's buffers where the drive may
 * read them in place (r->isg/nisg, counted), else copied into the capsule's DRAM buffer and
 * given back (counted when it is namespace I/O that could have stayed). */
void nvmet_rdma_capsule_place(struct nvmet_rdma_rsp *r, uint32_t off, uint32_t len);

#endif
