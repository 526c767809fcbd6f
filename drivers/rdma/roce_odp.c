/*
 * roce_odp.c - on-demand paging core (see roce_odp.h): the resident frame pool with its
 * clock hand, the per-region page map, page-in, write-back, invalidation, pinning,
 * prefetch and flush, over a store that completes commands from the poll loop.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../../lib/clock.h"
#include "roce_odp.h"

#define ODP_MAP_BAD UINT32_MAX       /* page map: the page's last page-in failed */
#define ODP_FRAME_NONE UINT32_MAX
#define ODP_PIN_MAX 0xffffu
#define ODP_CLEAN_AHEAD 4u           /* write-backs the poller keeps running to stay ahead */

enum roce_odp_fstate {
	ODP_F_FREE = 0,
	ODP_F_READING,               /* page-in in flight: the drive writes the frame */
	ODP_F_RESIDENT,              /* holds the page (clean or dirty) */
	ODP_F_WRITING,               /* write-back in flight: readable, not writable */
};

struct roce_odp_frame {
	struct roce_odp_region *region;
	uint32_t page;
	enum roce_odp_fstate state;
	bool dirty;
	bool referenced;             /* touched since the clock hand last passed */
	bool drop;                   /* invalidated: freed when its I/O and pins end */
	bool queued;                 /* its command waits for room in the store */
	uint16_t pins;
	uint64_t started;            /* page-in start (ns) */
	uint8_t *cpu;
	uint32_t next_free;
	struct roce_odp_io io;
};

enum roce_odp_flush_state { ODP_FLUSH_IDLE = 0, ODP_FLUSH_WRITEBACK, ODP_FLUSH_STORE, ODP_FLUSH_REPORT };

struct roce_odp_region {
	struct roce_odp *odp;
	unsigned slot;
	char name[24];
	struct roce_odp_store store;
	uint64_t length;
	uint32_t npages;
	uint32_t *map;               /* page -> frame index + 1; 0: absent; ODP_MAP_BAD */
	bool dying;
	unsigned users;              /* MRs registered on it */
	unsigned inflight;           /* store commands running (page-ins, write-backs, flush) */
	unsigned writing;            /* write-backs running */
	unsigned resident, dirty;    /* frames holding its pages; of them dirty */
	enum roce_odp_flush_state flush;
	int flush_rc;
	bool flush_queued;
	void (*flush_done)(void *arg, int rc);
	void *flush_arg;
	struct roce_odp_io flush_io;
};

struct roce_odp {
	unsigned nframes;
	struct roce_odp_frame *frames;
	uint8_t *mem_raw;            /* frames' memory as allocated (aligned inside) */
	uint32_t free_head;
	unsigned nfree;
	unsigned hand;               /* clock hand */
	unsigned resident, dirty, pinned, inflight, queued;
	struct roce_odp_region *regions[ROCE_ODP_MAX_REGIONS];
	struct roce_odp_stats st;
};

static void odp_io_done(struct roce_odp_io *io, int rc);

/* --- frames ------------------------------------------------------------------------------ */

static uint32_t odp_frame_index(const struct roce_odp *o, const struct roce_odp_frame *f)
{
	return (uint32_t)(f - o->frames);
}

static void odp_frame_free(struct roce_odp *o, struct roce_odp_frame *f)
{
	struct roce_odp_region *r = f->region;

	if (r) {
		if (r->map[f->page] == odp_frame_index(o, f) + 1)
			r->map[f->page] = 0;
		r->resident--;
		if (f->dirty)
			r->dirty--;
	}
	if (f->dirty)
		o->dirty--;
	o->resident--;
	f->region = NULL;
	f->state = ODP_F_FREE;
	f->dirty = f->referenced = f->drop = f->queued = false;
	f->pins = 0;
	f->next_free = o->free_head;
	o->free_head = odp_frame_index(o, f);
	o->nfree++;
}

static struct roce_odp_frame *odp_frame_pop(struct roce_odp *o)
{
	struct roce_odp_frame *f;
	if (o->free_head == ODP_FRAME_NONE)
		return NULL;
	f = &o->frames[o->free_head];
	o->free_head = f->next_free;
	o->nfree--;
	o->resident++;
	return f;
}

/* Hand io to the store. A full store (-EBUSY, -EAGAIN) keeps it queued for the poller. */
static int odp_submit(struct roce_odp *o, struct roce_odp_io *io, bool *queued)
{
	int rc = io->owner ? 0 : -EINVAL;
	struct roce_odp_region *r;

	if (rc)
		return rc;
	r = io->op == ROCE_ODP_IO_FLUSH ? io->owner : ((struct roce_odp_frame *)io->owner)->region;
	rc = r->store.ops->submit(r->store.ctx, io);
	if (rc == -EBUSY || rc == -EAGAIN) {
		if (!*queued) {
			*queued = true;
			o->queued++;
		}
		return 0;
	}
	if (!rc && *queued) {
		*queued = false;
		o->queued--;
	}
	return rc;
}

static void odp_region_maybe_free(struct roce_odp_region *r);

/* Start the write-back of resident dirty frame f. 0 or -errno (f unchanged). */
static int odp_writeback(struct roce_odp *o, struct roce_odp_frame *f)
{
	struct roce_odp_region *r = f->region;
	int rc;

	f->state = ODP_F_WRITING;
	f->io = (struct roce_odp_io){ .op = ROCE_ODP_IO_WRITE, .offset = (uint64_t)f->page << ROCE_ODP_PAGE_SHIFT,
				      .len = ROCE_ODP_PAGE_SIZE, .mem = dma_addr_host(f->cpu), .done = odp_io_done,
				      .owner = f };
	r->writing++;
	r->inflight++;
	o->inflight++;
	o->st.writebacks++;
	if ((rc = odp_submit(o, &f->io, &f->queued))) {
		f->state = ODP_F_RESIDENT;
		r->writing--;
		r->inflight--;
		o->inflight--;
		o->st.io_errors++;
		if (r->flush == ODP_FLUSH_WRITEBACK && !r->flush_rc)
			r->flush_rc = rc;
	}
	return rc;
}

/* A frame for a page-in: a free one, else the clock hand's first resident, unpinned,
 * unreferenced, clean frame (referenced ones get a second chance, dirty ones are written
 * back on the way and taken by a later fault). NULL when none can be had now. */
static struct roce_odp_frame *odp_frame_get(struct roce_odp *o)
{
	struct roce_odp_frame *f = odp_frame_pop(o);
	unsigned wb = 0;

	if (f)
		return f;
	for (unsigned step = 0; step < 2 * o->nframes; step++) {
		f = &o->frames[o->hand];
		o->hand = (o->hand + 1) % o->nframes;
		if (f->state != ODP_F_RESIDENT || f->pins)
			continue;
		if (f->referenced) {
			f->referenced = false;
			continue;
		}
		if (f->dirty) {
			if (wb < ROCE_ODP_FAULT_BATCH && !odp_writeback(o, f))
				wb++;
			continue;
		}
		o->st.evict_clean++;
		odp_frame_free(o, f);
		return odp_frame_pop(o);
	}
	return NULL;
}

/* Start the page-in of absent page p of r. 0, -EAGAIN (no frame now), -errno. */
static int odp_fault(struct roce_odp_region *r, uint32_t p, uint64_t now)
{
	struct roce_odp *o = r->odp;
	struct roce_odp_frame *f = odp_frame_get(o);
	int rc;

	if (!f) {
		o->st.no_frame++;
		return -EAGAIN;
	}
	f->region = r;
	f->page = p;
	f->state = ODP_F_READING;
	f->started = now;
	f->io = (struct roce_odp_io){ .op = ROCE_ODP_IO_READ, .offset = (uint64_t)p << ROCE_ODP_PAGE_SHIFT,
				      .len = ROCE_ODP_PAGE_SIZE, .mem = dma_addr_host(f->cpu), .done = odp_io_done,
				      .owner = f };
	r->map[p] = odp_frame_index(o, f) + 1;
	r->resident++;
	r->inflight++;
	o->inflight++;
	if ((rc = odp_submit(o, &f->io, &f->queued))) {
		r->inflight--;
		o->inflight--;
		o->st.io_errors++;
		odp_frame_free(o, f);
		return rc;
	}
	return 0;
}

static unsigned odp_hist_bucket(uint64_t ns)
{
	uint64_t us = ns / 1000;
	unsigned b = 0;
	while (us > 1 && b < ROCE_ODP_HIST - 1) {
		us >>= 1;
		b++;
	}
	return b;
}

/* Submit the region's store Flush (its write-backs are done). */
static void odp_flush_store(struct roce_odp_region *r)
{
	struct roce_odp *o = r->odp;
	int rc;

	r->flush = ODP_FLUSH_STORE;
	r->flush_io = (struct roce_odp_io){ .op = ROCE_ODP_IO_FLUSH, .done = odp_io_done, .owner = r };
	r->inflight++;
	o->inflight++;
	if ((rc = odp_submit(o, &r->flush_io, &r->flush_queued))) {
		r->inflight--;
		o->inflight--;
		o->st.io_errors++;
		if (!r->flush_rc)
			r->flush_rc = rc;
		r->flush = ODP_FLUSH_REPORT;  /* told from the poller, never from the caller's stack */
	}
}

/* Tell the flush's caller; r may be freed here (dying, nothing left) and is not touched
 * after the callback, which may itself destroy the region. */
static void odp_flush_report(struct roce_odp_region *r)
{
	void (*done)(void *, int) = r->flush_done;
	void *arg = r->flush_arg;
	int rc = r->flush_rc;

	r->flush = ODP_FLUSH_IDLE;
	r->flush_done = NULL;
	odp_region_maybe_free(r);
	if (done)
		done(arg, rc);
}

/* The store finished io (from the poll loop). */
static void odp_io_done(struct roce_odp_io *io, int rc)
{
	if (io->op == ROCE_ODP_IO_FLUSH) {
		struct roce_odp_region *r = io->owner;
		r->inflight--;
		r->odp->inflight--;
		if (rc) {
			r->odp->st.io_errors++;
			if (!r->flush_rc)
				r->flush_rc = rc;
		} else {
			r->odp->st.flushes++;
		}
		odp_flush_report(r);
		return;
	}
	struct roce_odp_frame *f = io->owner;
	struct roce_odp_region *r = f->region;
	struct roce_odp *o = r->odp;

	r->inflight--;
	o->inflight--;
	if (io->op == ROCE_ODP_IO_READ) {
		if (rc) {
			o->st.io_errors++;
			bool drop = f->drop;
			odp_frame_free(o, f);
			if (!drop && !r->dying)
				r->map[f->page] = ODP_MAP_BAD;
		} else if (f->drop || r->dying) {
			o->st.discarded++;
			odp_frame_free(o, f);
		} else {
			f->state = ODP_F_RESIDENT;
			f->referenced = true;
			o->st.pageins++;
			o->st.bytes_in += ROCE_ODP_PAGE_SIZE;
			o->st.hist[odp_hist_bucket(clock_now_ns() - f->started)]++;
		}
	} else {
		f->state = ODP_F_RESIDENT;
		r->writing--;
		if (rc) {
			/* the page stays resident and dirty (an invalidation does not drop data it
			 * could not write); only a dying region lets it go */
			o->st.io_errors++;
			f->drop = false;
			if (r->flush == ODP_FLUSH_WRITEBACK && !r->flush_rc)
				r->flush_rc = rc;
		} else {
			o->st.pageouts++;
			o->st.bytes_out += ROCE_ODP_PAGE_SIZE;
			f->dirty = false;
			r->dirty--;
			o->dirty--;
		}
		if ((f->drop || r->dying) && !f->pins)
			odp_frame_free(o, f);
		if (r->flush == ODP_FLUSH_WRITEBACK && !r->writing)
			odp_flush_store(r);
	}
	odp_region_maybe_free(r);
}

/* --- the pool ---------------------------------------------------------------------------- */

int roce_odp_init(struct roce_odp **out, unsigned nframes)
{
	struct roce_odp *o;
	uintptr_t base;

	if (nframes == 0 || nframes > ROCE_ODP_MAX_FRAMES)
		return -EINVAL;
	if (!(o = calloc(1, sizeof(*o))))
		return -ENOMEM;
	o->frames = calloc(nframes, sizeof(*o->frames));
	/* one extra page so the frames start on a page: one PRP entry per page-in */
	o->mem_raw = calloc((size_t)nframes + 1, ROCE_ODP_PAGE_SIZE);
	if (!o->frames || !o->mem_raw) {
		free(o->frames);
		free(o->mem_raw);
		free(o);
		return -ENOMEM;
	}
	base = ((uintptr_t)o->mem_raw + ROCE_ODP_PAGE_SIZE - 1) & ~(uintptr_t)(ROCE_ODP_PAGE_SIZE - 1);
	o->nframes = nframes;
	o->free_head = ODP_FRAME_NONE;
	for (unsigned i = nframes; i-- > 0;) {
		struct roce_odp_frame *f = &o->frames[i];
		f->cpu = (uint8_t *)(base + (uintptr_t)i * ROCE_ODP_PAGE_SIZE);
		f->next_free = o->free_head;
		o->free_head = i;
	}
	o->nfree = nframes;
	*out = o;
	return 0;
}

int roce_odp_fini(struct roce_odp *o)
{
	for (unsigned i = 0; i < ROCE_ODP_MAX_REGIONS; i++)
		if (o->regions[i])
			return -EBUSY;
	free(o->frames);
	free(o->mem_raw);
	free(o);
	return 0;
}

int roce_odp_poll(struct roce_odp *o, uint64_t now)
{
	int done = 0;
	(void)now;

	if (o->queued) {
		for (unsigned i = 0; i < o->nframes && o->queued; i++) {
			struct roce_odp_frame *f = &o->frames[i];
			if (!f->queued)
				continue;
			if (odp_submit(o, &f->io, &f->queued)) {
				/* the store refused it for good: complete it with the error */
				f->queued = false;
				o->queued--;
				odp_io_done(&f->io, -EIO);
			}
			done++;
		}
	}
	for (unsigned i = 0; i < ROCE_ODP_MAX_REGIONS; i++) {
		struct roce_odp_region *r = o->regions[i];
		if (!r)
			continue;
		if (r->flush_queued && odp_submit(o, &r->flush_io, &r->flush_queued)) {
			r->flush_queued = false;
			o->queued--;
			odp_io_done(&r->flush_io, -EIO);
			done++;
			continue;
		}
		if (r->flush == ODP_FLUSH_REPORT) {
			odp_flush_report(r);
			done++;
		}
	}
	/* clean ahead: when few frames are free, write back dirty unreferenced frames so that
	 * the next faults find clean ones to take without waiting for a write */
	if (o->nfree < o->nframes / 8 + 1 && o->dirty) {
		unsigned running = 0;
		for (unsigned i = 0; i < o->nframes; i++)
			if (o->frames[i].state == ODP_F_WRITING)
				running++;
		for (unsigned step = 0, k = o->hand; step < o->nframes && running < ODP_CLEAN_AHEAD; step++) {
			struct roce_odp_frame *f = &o->frames[k];
			k = (k + 1) % o->nframes;
			if (f->state == ODP_F_RESIDENT && f->dirty && !f->referenced && !f->pins &&
			    !odp_writeback(o, f)) {
				running++;
				done++;
			}
		}
	}
	return done;
}

const struct roce_odp_stats *roce_odp_stats(const struct roce_odp *o)
{
	return &o->st;
}

unsigned roce_odp_nframes(const struct roce_odp *o)
{
	return o->nframes;
}

unsigned roce_odp_resident(const struct roce_odp *o)
{
	return o->resident;
}

unsigned roce_odp_dirty(const struct roce_odp *o)
{
	return o->dirty;
}

unsigned roce_odp_pinned(const struct roce_odp *o)
{
	return o->pinned;
}

unsigned roce_odp_inflight(const struct roce_odp *o)
{
	return o->inflight;
}

uint64_t roce_odp_hist_quantile(const struct roce_odp *o, unsigned permille)
{
	uint64_t total = 0, acc = 0;
	for (unsigned i = 0; i < ROCE_ODP_HIST; i++)
		total += o->st.hist[i];
	if (!total)
		return 0;
	for (unsigned i = 0; i < ROCE_ODP_HIST; i++) {
		acc += o->st.hist[i];
		if (acc * 1000 >= total * permille)
			return 2ull << i;
	}
	return 2ull << (ROCE_ODP_HIST - 1);
}

struct roce_odp_region *roce_odp_region_at(struct roce_odp *o, unsigned i)
{
	return i < ROCE_ODP_MAX_REGIONS ? o->regions[i] : NULL;
}

/* --- regions ----------------------------------------------------------------------------- */

int roce_odp_region_create(struct roce_odp *o, const char *name, const struct roce_odp_store *store,
			   uint64_t length, struct roce_odp_region **out)
{
	struct roce_odp_region *r;
	unsigned slot;

	if (!store || !store->ops || !store->ops->submit || length == 0 || length % ROCE_ODP_PAGE_SIZE ||
	    length > store->size || length / ROCE_ODP_PAGE_SIZE > ROCE_ODP_MAX_PAGES)
		return -EINVAL;
	for (slot = 0; slot < ROCE_ODP_MAX_REGIONS && o->regions[slot]; slot++)
		;
	if (slot == ROCE_ODP_MAX_REGIONS)
		return -ENOSPC;
	if (!(r = calloc(1, sizeof(*r))))
		return -ENOMEM;
	r->npages = (uint32_t)(length / ROCE_ODP_PAGE_SIZE);
	if (!(r->map = calloc(r->npages, sizeof(*r->map)))) {
		free(r);
		return -ENOMEM;
	}
	r->odp = o;
	r->slot = slot;
	snprintf(r->name, sizeof(r->name), "%s", name ? name : "odp");
	r->store = *store;
	r->length = length;
	o->regions[slot] = r;
	*out = r;
	return 0;
}

static void odp_region_maybe_free(struct roce_odp_region *r)
{
	if (!r->dying || r->inflight || r->resident || r->flush != ODP_FLUSH_IDLE)
		return;
	r->odp->regions[r->slot] = NULL;
	free(r->map);
	free(r);
}

int roce_odp_region_destroy(struct roce_odp_region *r)
{
	struct roce_odp *o = r->odp;

	if (r->users)
		return -EBUSY;
	if (r->dying)
		return 0;
	r->dying = true;
	for (unsigned i = 0; i < o->nframes; i++) {
		struct roce_odp_frame *f = &o->frames[i];
		if (f->region != r)
			continue;
		f->drop = true;
		if (f->state != ODP_F_RESIDENT || f->pins)
			continue;  /* freed when its command completes or its pins end */
		if (!f->dirty || odp_writeback(o, f))
			odp_frame_free(o, f);  /* clean, or a write-back the store refused outright */
	}
	odp_region_maybe_free(r);
	return 0;
}

static int odp_range(const struct roce_odp_region *r, uint64_t off, uint64_t len, uint32_t *first, uint32_t *last)
{
	if (off > r->length || len > r->length - off)
		return -ERANGE;
	if (!len)
		return 1;
	*first = (uint32_t)(off >> ROCE_ODP_PAGE_SHIFT);
	*last = (uint32_t)((off + len - 1) >> ROCE_ODP_PAGE_SHIFT);
	return 0;
}

/* Start page-ins for the absent pages in [first, last], at most ROCE_ODP_FAULT_BATCH.
 * Returns how many were started; -EIO when a page is bad. */
static int odp_fault_range(struct roce_odp_region *r, uint32_t first, uint32_t last, uint64_t now, bool prefetch)
{
	int started = 0;
	for (uint32_t p = first; p <= last && started < (int)ROCE_ODP_FAULT_BATCH; p++) {
		uint32_t m = r->map[p];
		if (m == ODP_MAP_BAD)
			return -EIO;
		if (m)
			continue;
		if (odp_fault(r, p, now))
			break;
		started++;
		if (prefetch)
			r->odp->st.prefetches++;
		else
			r->odp->st.faults++;
	}
	return started;
}

/* A sequential pass faulted: page in up to ROCE_ODP_READAHEAD absent pages from p on, only
 * into free frames (read-ahead never evicts what is resident). */
static void odp_readahead(struct roce_odp_region *r, uint32_t p, uint64_t now)
{
	for (uint32_t k = 0; k < ROCE_ODP_READAHEAD && p + k < r->npages && r->odp->nfree; k++) {
		if (r->map[p + k])
			continue;
		if (odp_fault(r, p + k, now))
			break;
		r->odp->st.prefetches++;
	}
}

int roce_odp_access(struct roce_odp_region *r, uint64_t off, uint64_t len, bool write, uint64_t now,
		    dma_addr_t *mem, uint32_t *piece_len, unsigned max, unsigned *n)
{
	struct roce_odp *o = r->odp;
	uint32_t first, last;
	bool absent = false, busy = false;
	int rc;

	if (r->dying)
		return -ENODEV;
	if ((rc = odp_range(r, off, len, &first, &last)) < 0)
		return rc;
	*n = 0;
	if (rc)
		return 0;
	if (last - first + 1 > max)
		return -E2BIG;
	for (uint32_t p = first; p <= last; p++) {
		uint32_t m = r->map[p];
		if (m == ODP_MAP_BAD)
			return -EIO;
		if (!m) {
			absent = true;
			continue;
		}
		const struct roce_odp_frame *f = &o->frames[m - 1];
		if (f->state == ODP_F_READING || (write && f->state == ODP_F_WRITING))
			busy = true;
	}
	if (absent || busy) {
		if (busy)
			o->st.fault_waits++;
		if (absent && (rc = odp_fault_range(r, first, last, now, false)) < 0)
			return rc;
		if (absent && first > 0 && r->map[first - 1] && r->map[first - 1] != ODP_MAP_BAD)
			odp_readahead(r, last + 1, now);
		return -EAGAIN;
	}
	for (uint32_t p = first; p <= last; p++) {
		struct roce_odp_frame *f = &o->frames[r->map[p] - 1];
		uint64_t in = p == first ? off & (ROCE_ODP_PAGE_SIZE - 1) : 0;
		uint64_t end = p == last ? ((off + len - 1) & (ROCE_ODP_PAGE_SIZE - 1)) + 1 : ROCE_ODP_PAGE_SIZE;
		f->referenced = true;
		if (write && !f->dirty) {
			f->dirty = true;
			r->dirty++;
			o->dirty++;
		}
		mem[*n] = dma_addr_host(f->cpu + in);
		piece_len[*n] = (uint32_t)(end - in);
		(*n)++;
	}
	return 0;
}

int roce_odp_fault_window(struct roce_odp_region *r, uint64_t off, uint64_t len, unsigned window, uint64_t now)
{
	uint32_t first, last;
	bool absent = false, busy = false;
	int rc;

	if (r->dying)
		return -ENODEV;
	if ((rc = odp_range(r, off, len, &first, &last)))
		return rc < 0 ? rc : 0;
	if (window && last - first >= window)
		last = first + window - 1;
	for (uint32_t p = first; p <= last; p++) {
		uint32_t m = r->map[p];
		if (m == ODP_MAP_BAD)
			return -EIO;
		if (!m)
			absent = true;
		else if (r->odp->frames[m - 1].state == ODP_F_READING)
			busy = true;
	}
	if (!absent && !busy)
		return 0;
	if (busy)
		r->odp->st.fault_waits++;
	if (absent && (rc = odp_fault_range(r, first, last, now, false)) < 0)
		return rc;
	return -EAGAIN;
}

int roce_odp_prefetch(struct roce_odp_region *r, uint64_t off, uint64_t len, uint64_t now)
{
	uint32_t first, last;
	int rc, total = 0;

	if (r->dying)
		return -ENODEV;
	if ((rc = odp_range(r, off, len, &first, &last)))
		return rc < 0 ? rc : 0;
	/* never more than the pool holds: prefetching past it would evict what it brought */
	if (last - first >= r->odp->nframes)
		last = first + r->odp->nframes - 1;
	for (uint32_t p = first; p <= last; p++) {
		if (r->map[p] == ODP_MAP_BAD)
			r->map[p] = 0;  /* advice asks for a fresh try */
		if (r->map[p])
			continue;
		if (odp_fault(r, p, now))
			break;
		r->odp->st.prefetches++;
		total++;
	}
	return total;
}

int roce_odp_invalidate(struct roce_odp_region *r, uint64_t off, uint64_t len)
{
	struct roce_odp *o = r->odp;
	uint32_t first, last;
	int rc, n = 0;

	if ((rc = odp_range(r, off, len, &first, &last)))
		return rc < 0 ? rc : 0;
	for (uint32_t p = first; p <= last; p++) {
		uint32_t m = r->map[p];
		if (m == ODP_MAP_BAD)
			r->map[p] = 0;
		if (!m || m == ODP_MAP_BAD)
			continue;
		struct roce_odp_frame *f = &o->frames[m - 1];
		/* a frame in flight or pinned stays mapped (readers still find the old contents,
		 * writers wait) and is freed when its command or its last pin ends */
		n++;
		o->st.invalidations++;
		if (f->state == ODP_F_RESIDENT && !f->pins && !f->dirty) {
			odp_frame_free(o, f);
			continue;
		}
		f->drop = true;
		if (f->state == ODP_F_RESIDENT && !f->pins && f->dirty && odp_writeback(o, f))
			odp_frame_free(o, f);
	}
	return n;
}

int roce_odp_pin(struct roce_odp_region *r, uint64_t off, uint64_t len, uint64_t now)
{
	struct roce_odp *o = r->odp;
	uint32_t first, last;
	int rc;

	if (r->dying)
		return -ENODEV;
	if ((rc = odp_range(r, off, len, &first, &last)))
		return rc < 0 ? rc : 0;
	for (uint32_t p = first; p <= last; p++) {
		uint32_t m = r->map[p];
		if (m == ODP_MAP_BAD)
			return -EIO;
		if (!m || o->frames[m - 1].state == ODP_F_READING || o->frames[m - 1].drop) {
			if ((rc = odp_fault_range(r, first, last, now, false)) < 0)
				return rc;
			return -EAGAIN;
		}
		if (o->frames[m - 1].pins == ODP_PIN_MAX)
			return -EBUSY;
	}
	for (uint32_t p = first; p <= last; p++) {
		struct roce_odp_frame *f = &o->frames[r->map[p] - 1];
		if (!f->pins++)
			o->pinned++;
	}
	return 0;
}

void roce_odp_unpin(struct roce_odp_region *r, uint64_t off, uint64_t len)
{
	struct roce_odp *o = r->odp;
	uint32_t first, last;

	if (odp_range(r, off, len, &first, &last))
		return;
	for (unsigned i = 0; i < o->nframes; i++) {
		struct roce_odp_frame *f = &o->frames[i];
		if (f->region != r || f->page < first || f->page > last || !f->pins)
			continue;
		if (--f->pins)
			continue;
		o->pinned--;
		if ((f->drop || r->dying) && f->state == ODP_F_RESIDENT && (!f->dirty || odp_writeback(o, f)))
			odp_frame_free(o, f);
	}
	odp_region_maybe_free(r);
}

int roce_odp_flush(struct roce_odp_region *r, void (*done)(void *arg, int rc), void *arg)
{
	struct roce_odp *o = r->odp;

	if (r->dying)
		return -ENODEV;
	if (r->flush != ODP_FLUSH_IDLE)
		return -EBUSY;
	r->flush = ODP_FLUSH_WRITEBACK;
	r->flush_rc = 0;
	r->flush_done = done;
	r->flush_arg = arg;
	for (unsigned i = 0; i < o->nframes; i++) {
		struct roce_odp_frame *f = &o->frames[i];
		if (f->region == r && f->state == ODP_F_RESIDENT && f->dirty)
			(void)odp_writeback(o, f);  /* a refusal is in flush_rc */
	}
	if (!r->writing)
		odp_flush_store(r);
	return 0;
}

bool roce_odp_flush_busy(const struct roce_odp_region *r)
{
	return r->flush != ODP_FLUSH_IDLE;
}

void roce_odp_note_rnr(struct roce_odp_region *r)
{
	r->odp->st.rnr_naks++;
}

void roce_odp_note_local_wait(struct roce_odp_region *r)
{
	r->odp->st.local_waits++;
}

const char *roce_odp_region_name(const struct roce_odp_region *r)
{
	return r->name;
}

uint64_t roce_odp_region_length(const struct roce_odp_region *r)
{
	return r->length;
}

unsigned roce_odp_region_resident(const struct roce_odp_region *r)
{
	return r->resident;
}

unsigned roce_odp_region_dirty(const struct roce_odp_region *r)
{
	return r->dirty;
}

unsigned roce_odp_region_users(const struct roce_odp_region *r)
{
	return r->users;
}

void roce_odp_region_describe(const struct roce_odp_region *r, char *buf, unsigned cap)
{
	if (r->store.ops->describe)
		r->store.ops->describe(r->store.ctx, buf, cap);
	else
		snprintf(buf, cap, "store");
}

void roce_odp_region_get(struct roce_odp_region *r)
{
	r->users++;
}

void roce_odp_region_put(struct roce_odp_region *r)
{
	if (r->users)
		r->users--;
}
