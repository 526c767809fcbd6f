/*
 * roce_odp.h - on-demand paging for RDMA memory regions backed by a store (an NVMe
 * namespace range): a region is registered with no page resident; the transport asks for
 * the bytes an access touches, gets them when their pages are resident, and otherwise
 * starts the page-ins asynchronously and answers the peer with an RNR NAK, so that the
 * requester retries after its RNR timer (IBTA 9.7.5.2.8; what hardware ODP does).
 *
 * Pages are 4 KiB (ROCE_ODP_PAGE_SIZE): one page per NVMe command of 8 or 1 logical
 * blocks, one packet of any path MTU touches at most two of them, and a random 4 KiB
 * access moves 4 KiB to or from the drive rather than a huge page's worth. Resident pages
 * live in host DRAM frames of one bounded pool per device (struct roce_odp): the software
 * transport's CPU reads or writes every payload byte anyway (copy and ICRC), and a CPU
 * access to DRAM costs a fraction of one to a CMB behind PCIe (MMIO), while the drive
 * reaches DRAM by DMA just as well.
 *
 * Each frame has a state (free, reading, resident, writing), a dirty bit, a referenced
 * bit for the clock hand, and a pin count: a frame that the drive is reading or writing
 * (page-in, write-back) or that a caller pinned for DMA is never evicted. A fault takes a
 * free frame, else the clock hand's first clean, unreferenced, unpinned frame; dirty
 * frames it passes are written back first (the page stays readable while its write-back
 * runs; a write to it waits with RNR like a fault). Explicit flush writes back every
 * dirty page and then sends the store a Flush, so the region's contents are durable.
 *
 * Everything is owned by one poll loop: no locks, time is an argument, the store's
 * completions arrive from the poll loop (never from inside submit).
 */
#ifndef DRIVERS_RDMA_ROCE_ODP_H
#define DRIVERS_RDMA_ROCE_ODP_H

#include <stdbool.h>
#include <stdint.h>
#include "../../mm/dma.h"

#define ROCE_ODP_PAGE_SHIFT 12
#define ROCE_ODP_PAGE_SIZE (1u << ROCE_ODP_PAGE_SHIFT)
#define ROCE_ODP_MAX_REGIONS 8
#define ROCE_ODP_MAX_PAGES (1u << 20)      /* per region: 4 GiB; the page map costs 4 B a page */
#define ROCE_ODP_MAX_FRAMES 65536u         /* resident pool: 256 MiB at most */
#define ROCE_ODP_FAULT_BATCH 16u           /* page-ins one access may start */
#define ROCE_ODP_READAHEAD 8u              /* pages read ahead of a sequential fault */
#define ROCE_ODP_HIST 16                   /* fault service time buckets: [2^i, 2^(i+1)) us */

struct roce_odp;
struct roce_odp_region;

/* --- the store: where a region's pages live when they are not resident --- */

enum roce_odp_op { ROCE_ODP_IO_READ, ROCE_ODP_IO_WRITE, ROCE_ODP_IO_FLUSH };

/* One store command. The core fills op/offset/len/mem and done; the store runs it and
 * calls done(io, rc) later from the poll loop. */
struct roce_odp_io {
	enum roce_odp_op op;
	uint64_t offset;             /* bytes into the store (page aligned) */
	uint32_t len;                /* ROCE_ODP_PAGE_SIZE (0 for a flush) */
	dma_addr_t mem;              /* the frame (host DRAM) */
	void (*done)(struct roce_odp_io *io, int rc);
	void *owner;                 /* the core's: its frame or region */
};

struct roce_odp_store_ops {
	/* Start io: 0 (done() runs later, from the poll loop, never from here), -EBUSY (queue
	 * full: offered again on the next poll), another -errno (failed: not retried). */
	int (*submit)(void *ctx, struct roce_odp_io *io);
	/* Human-readable name of the backing (e.g. "nvme0n1 lba 0"), into buf. */
	void (*describe)(void *ctx, char *buf, unsigned cap);
};

struct roce_odp_store {
	const struct roce_odp_store_ops *ops;
	void *ctx;
	uint64_t size;               /* bytes available to the region */
};

/* --- counters --- */

struct roce_odp_stats {
	uint64_t faults;             /* page-ins started because an access found the page absent */
	uint64_t fault_waits;        /* accesses that found their page being read or written back */
	uint64_t no_frame;           /* faults put off: every frame pinned, in flight or being cleaned */
	uint64_t pageins, pageouts;  /* store reads / writes completed */
	uint64_t bytes_in, bytes_out;
	uint64_t evict_clean;        /* frames reclaimed without a write */
	uint64_t writebacks;         /* write-backs started (reclaim, flush, invalidate, dereg) */
	uint64_t rnr_naks;           /* RNR NAKs the responder sent for faults */
	uint64_t local_waits;        /* local work requests held in the send queue by a fault */
	uint64_t prefetches;         /* page-ins started by advise/prefetch */
	uint64_t invalidations;      /* pages dropped by invalidation */
	uint64_t flushes;            /* store flushes completed */
	uint64_t io_errors;          /* store commands that failed */
	uint64_t discarded;          /* page-ins whose page was invalidated while in flight */
	uint64_t hist[ROCE_ODP_HIST];/* fault service time: start of page-in to resident */
};

/* --- the per-device pool --- */

/* Set up a pool of nframes resident frames (1..ROCE_ODP_MAX_FRAMES) of host DRAM. 0,
 * -EINVAL, -ENOMEM. */
int roce_odp_init(struct roce_odp **out, unsigned nframes);
/* -EBUSY while a region exists (also a dying one with I/O in flight). */
int roce_odp_fini(struct roce_odp *o);

/* Background work: keep a few frames free (write back dirty pages ahead of need), offer
 * store commands the store refused for lack of room again, start flushes whose
 * write-backs are done. Returns >0 when it did something. */
int roce_odp_poll(struct roce_odp *o, uint64_t now);

const struct roce_odp_stats *roce_odp_stats(const struct roce_odp *o);
unsigned roce_odp_nframes(const struct roce_odp *o);
unsigned roce_odp_resident(const struct roce_odp *o);  /* frames holding a page (any state) */
unsigned roce_odp_dirty(const struct roce_odp *o);
unsigned roce_odp_pinned(const struct roce_odp *o);
unsigned roce_odp_inflight(const struct roce_odp *o);  /* store commands running */
/* The fault service time below which share/1000 of the faults completed (the bucket's
 * upper bound, us); 0 with no faults. */
uint64_t roce_odp_hist_quantile(const struct roce_odp *o, unsigned permille);
/* The region in slot i (0..ROCE_ODP_MAX_REGIONS-1), or NULL. */
struct roce_odp_region *roce_odp_region_at(struct roce_odp *o, unsigned i);

/* --- regions --- */

/* A region of length bytes (a multiple of the page size, at most the store's size and
 * ROCE_ODP_MAX_PAGES pages) over store, no page resident. 0, -EINVAL, -ENOMEM, -ENOSPC
 * (every region slot taken). */
int roce_odp_region_create(struct roce_odp *o, const char *name, const struct roce_odp_store *store,
			   uint64_t length, struct roce_odp_region **out);
/* Destroy a region: -EBUSY while an MR is registered on it. Dirty pages are written back
 * first; until every store command of the region has completed it stays, dying (no
 * access succeeds), and is freed by the last completion. 0. */
int roce_odp_region_destroy(struct roce_odp_region *r);

/* The memory behind [off, off + len) of the region, one piece per page touched (at most
 * max pieces). 0 when every page is resident (marked referenced, and dirty when write);
 * -EAGAIN when one is not: page-ins are started for up to ROCE_ODP_FAULT_BATCH absent
 * pages of the range (or the fault is put off when no frame can be had), and the access
 * is to be retried; when the page before the range is resident (a sequential pass) the
 * next ROCE_ODP_READAHEAD absent pages after it are paged in too, while frames are free; -EIO when a page's last page-in failed; -E2BIG when more than max
 * pages are touched; -ERANGE beyond the region; -ENODEV when the region is dying. */
int roce_odp_access(struct roce_odp_region *r, uint64_t off, uint64_t len, bool write, uint64_t now,
		    dma_addr_t *mem, uint32_t *piece_len, unsigned max, unsigned *n);

/* Fault check of a long range (an RDMA READ): 0 when the first `window` pages of it are
 * resident, else page-ins are started for the absent ones among them (-EAGAIN), -EIO, -ENODEV. */
int roce_odp_fault_window(struct roce_odp_region *r, uint64_t off, uint64_t len, unsigned window, uint64_t now);

/* Advise (as ibv_advise_mr PREFETCH): start page-ins for the absent pages of the range,
 * as many as free or clean frames allow. Returns how many were started, or -ERANGE. */
int roce_odp_prefetch(struct roce_odp_region *r, uint64_t off, uint64_t len, uint64_t now);

/* Invalidate the range: resident pages are dropped (dirty ones written back first), a
 * page-in in flight is discarded when it completes, pinned pages are dropped when
 * unpinned. The next access faults. Returns pages dropped or being dropped, -ERANGE. */
int roce_odp_invalidate(struct roce_odp_region *r, uint64_t off, uint64_t len);

/* Pin the resident pages of the range for DMA (they are never evicted or dropped until
 * unpinned). 0, -EAGAIN (a page is not resident: faults started), -EBUSY (pin count full). */
int roce_odp_pin(struct roce_odp_region *r, uint64_t off, uint64_t len, uint64_t now);
void roce_odp_unpin(struct roce_odp_region *r, uint64_t off, uint64_t len);

/* Make the region durable: write back every dirty page, then a store Flush; done(arg, rc)
 * runs from the poll loop when it is complete (rc 0, or the first error). 0, -EBUSY (a
 * flush of this region is running), -ENODEV (dying). */
int roce_odp_flush(struct roce_odp_region *r, void (*done)(void *arg, int rc), void *arg);
bool roce_odp_flush_busy(const struct roce_odp_region *r);

/* Responder's note of an RNR NAK sent for a fault of this region. */
void roce_odp_note_rnr(struct roce_odp_region *r);
/* Requester's note of a local work request held in the send queue by a fault. */
void roce_odp_note_local_wait(struct roce_odp_region *r);

const char *roce_odp_region_name(const struct roce_odp_region *r);
uint64_t roce_odp_region_length(const struct roce_odp_region *r);
unsigned roce_odp_region_resident(const struct roce_odp_region *r);
unsigned roce_odp_region_dirty(const struct roce_odp_region *r);
unsigned roce_odp_region_users(const struct roce_odp_region *r);
void roce_odp_region_describe(const struct roce_odp_region *r, char *buf, unsigned cap);

/* MR users of a region (roce_reg_mr_odp / roce_dereg_mr). */
void roce_odp_region_get(struct roce_odp_region *r);
void roce_odp_region_put(struct roce_odp_region *r);

#endif
