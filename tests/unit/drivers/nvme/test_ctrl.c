// sources: drivers/nvme/nvme.c drivers/nvme/nvme_reset.c drivers/nvme/nvme_shutdown.c drivers/nvme/nvme_prp.c drivers/nvme/nvme_queue.c drivers/nvme/nvme_cmb.c drivers/nvme/nvme_status.c mm/dma.c lib/log.c lib/shutdown.c tests/unit/drivers/nvme/fake_nvme.c
/*
 * The controller core against a fake controller: reset of a controller left enabled,
 * bounded waits (never ready, fatal status), Identify, queues, read/write through PRPs and
 * SGLs, write zeroes, DSM, flush, absent namespace, I/O beyond the end, timeouts with
 * Abort (answered and ignored), CMB in the 1.4 and legacy schemes, the CMSE=0 trap refused,
 * memory mixes refused, DMA accounting by memory class.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "drivers/nvme/nvme.h"
#include "lib/clock.h"
#include "tests/unit/drivers/nvme/fake_nvme.h"
#include "tests/unit/unit_support.h"

static struct fake_nvme f;
static struct nvme_ctrl c;

static void setup(void)
{
	fake_clock_install();
	fake_nvme_init(&f);
	dma_counters_reset();
	memset(&c, 0, sizeof(c));
	unit_pools_begin();
}

static void teardown(void)
{
	nvme_ctrl_fini(&c);
	cr_expect_eq(f.dma_live, 0, "every DMA allocation freed (%u left)", f.dma_live);
	fake_nvme_fini(&f);
	unit_pools_end();
}

TestSuite(ctrl, .init = setup, .fini = teardown);

static void fill(uint8_t *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(i * 7 + seed + (i >> 9));
}

static struct nvme_sg sg_host(void *p, uint32_t len)
{
	struct nvme_sg s = { dma_addr_host(p), len };
	return s;
}

static struct nvme_sg sg_cmb(uint64_t off, uint32_t len)
{
	struct nvme_sg s = { dma_addr_device((uint64_t)(uintptr_t)f.cmb + off), len };
	return s;
}

/* Queue-entry DMA counted since the last reset of the counters and c.st: every completion
 * is a 64-byte SQE fetched (where its SQ lives) and a 16-byte CQE posted to DRAM. */
static uint64_t cqe_bytes(void)
{
	return (c.st.queue_bytes[MEM_CLASS_HOST] + c.st.queue_bytes[MEM_CLASS_DEVICE]) / 80 * 16;
}

static uint64_t sqe_bytes(enum mem_class cls)
{
	return cls == MEM_CLASS_DEVICE ? c.st.queue_bytes[MEM_CLASS_DEVICE]
				       : c.st.queue_bytes[MEM_CLASS_HOST] - cqe_bytes();
}

Test(ctrl, bring_up_resets_a_controller_the_firmware_left_enabled)
{
	/* OVMF leaves CC.EN = 1 and CSTS.RDY = 1 with its own queues */
	f.cc = NVME_CC_EN;
	f.csts = NVME_CSTS_RDY;
	cr_assert_eq(nvme_ctrl_init(&c, "nvme0", &f.bus, 1), 0);
	cr_assert_eq(f.disables, 1, "CC.EN cleared once");
	cr_assert_eq(f.enables, 1);
	cr_assert_eq(c.state, NVME_CTRL_LIVE);
	cr_assert_str_eq(c.sn, "FAKE0001");
	cr_assert_str_eq(c.mn, "Fake NVMe Ctrl");
	cr_assert_str_eq(c.fr, "1.0");
	cr_assert_eq(c.max_xfer, 128 * 1024, "MDTS 5 with 4 KiB pages");
	cr_assert_eq(c.nns, 1);
	cr_assert_eq(c.ns[0].nsid, 1);
	cr_assert_eq(c.ns[0].nsze, FAKE_NSZE);
	cr_assert_eq(c.ns[0].lba_shift, 9);
	cr_assert_eq(c.nio, 1);
	cr_assert(f.sq[1].live && f.cq[1].live, "I/O queue pair 1 created");
	cr_assert_eq(f.sq[1].depth, NVME_IO_DEPTH);
	cr_assert_eq(c.rdy_timeout_ns, 2 * NSEC_PER_SEC, "CAP.TO 4 x 500 ms");
}

Test(ctrl, controller_that_never_becomes_ready_fails_cleanly_in_bounded_time)
{
	f.never_ready = true;
	uint64_t t0 = clock_now_ns();
	cr_assert_eq(nvme_ctrl_init(&c, "nvme0", &f.bus, 1), -ETIMEDOUT);
	uint64_t took = clock_now_ns() - t0;
	cr_assert_eq(c.state, NVME_CTRL_FAILED);
	cr_assert_eq(c.error, -ETIMEDOUT);
	/* CAP.TO for the enable, at most CAP.TO again for the disable afterwards */
	cr_assert_geq(took, 2 * NSEC_PER_SEC);
	cr_assert_leq(took, 4 * NSEC_PER_SEC + 10 * NSEC_PER_MSEC, "took %llu ns", (unsigned long long)took);
	cr_assert_eq(f.cc & NVME_CC_EN, 0, "left disabled");
	struct nvme_sg sg = sg_host(f.media, 512);
	cr_assert_eq(nvme_read(&c, 1, 0, 1, &sg, 1), -EIO);
}

Test(ctrl, fatal_status_while_enabling_is_eio)
{
	f.cfs_on_enable = true;
	uint64_t t0 = clock_now_ns();
	cr_assert_eq(nvme_ctrl_init(&c, "nvme0", &f.bus, 1), -EIO);
	cr_assert_lt(clock_now_ns() - t0, NSEC_PER_SEC, "CSTS.CFS ends the wait at once");
	cr_assert_eq(c.state, NVME_CTRL_FAILED);
}

Test(ctrl, doorbell_stride_is_honoured)
{
	f.cap |= 2ull << 32; /* DSTRD 2: 16-byte doorbells */
	cr_assert_eq(nvme_ctrl_init(&c, "nvme0", &f.bus, 1), 0);
	cr_assert_eq(c.io[0].sq_db, 0x1020);
	uint8_t *buf = aligned_alloc(4096, 4096);
	fill(buf, 4096, 3);
	struct nvme_sg sg = sg_host(buf, 4096);
	cr_assert_eq(nvme_write(&c, 1, 8, 8, &sg, 1), 0);
	cr_assert_eq(memcmp(f.media + 8 * 512, buf, 4096), 0);
	free(buf);
}

Test(ctrl, write_and_read_back_through_one_sgl_data_block)
{
	cr_assert_eq(nvme_ctrl_init(&c, "nvme0", &f.bus, 1), 0);
	uint8_t *w = aligned_alloc(4096, 65536), *r = aligned_alloc(4096, 65536);
	fill(w, 65536, 1);
	memset(r, 0, 65536);
	struct nvme_sg ws = sg_host(w, 65536), rs = sg_host(r, 65536);
	cr_assert_eq(nvme_write(&c, 1, 100, 128, &ws, 1), 0);
	cr_assert_eq(f.last_psdt, NVME_SQE_PSDT_SGL);
	cr_assert_eq(memcmp(f.media + 100 * 512, w, 65536), 0, "the bytes reached the media");
	cr_assert_eq(nvme_read(&c, 1, 100, 128, &rs, 1), 0);
	cr_assert_eq(memcmp(r, w, 65536), 0);
	const struct dma_counters *d = dma_counters();
	cr_assert_eq(d->dma_bytes[MEM_CLASS_HOST][DMA_TO_DEVICE], 65536 + sqe_bytes(MEM_CLASS_HOST));
	cr_assert_eq(d->dma_bytes[MEM_CLASS_HOST][DMA_FROM_DEVICE], 65536 + cqe_bytes());
	cr_assert_eq(d->dma_bytes[MEM_CLASS_DEVICE][DMA_TO_DEVICE], sqe_bytes(MEM_CLASS_DEVICE));
	cr_assert_eq(c.st.payload_bytes[MEM_CLASS_HOST], 2 * 65536);
	free(w);
	free(r);
}

/* map_data's one-entry path (an SGL queue, one buffer) refuses what the general path
 * refuses, before anything reaches the drive: a length the command does not move, an empty
 * entry; and builds the same Data Block descriptor (read back by the fake drive). */
Test(ctrl, one_entry_sgl_is_checked_as_the_general_path)
{
	cr_assert_eq(nvme_ctrl_init(&c, "nvme0", &f.bus, 1), 0);
	uint8_t *b = aligned_alloc(4096, 8192);
	fill(b, 8192, 3);
	unsigned before = f.commands;
	struct nvme_sg short_sg = sg_host(b, 4096 - 512), empty = sg_host(b, 0), one = sg_host(b + 4, 4096);
	cr_assert_eq(nvme_write(&c, 1, 0, 8, &short_sg, 1), -EINVAL, "one sector short of NLB");
	cr_assert_eq(nvme_write(&c, 1, 0, 8, &empty, 1), -EINVAL, "an empty entry");
	cr_assert_eq(f.commands, before, "nothing sent");
	/* byte-granular SGLs (SGLS 01b): an entry at any address is one Data Block */
	cr_assert_eq(nvme_write(&c, 1, 16, 8, &one, 1), 0);
	cr_assert_eq(f.last_psdt, NVME_SQE_PSDT_SGL);
	cr_assert_eq(memcmp(f.media + 16 * 512, b + 4, 4096), 0);
	cr_assert_eq(c.st.payload_bytes[MEM_CLASS_HOST], 4096);
	cr_assert_eq(c.st.list_bytes[MEM_CLASS_HOST], 0, "no list for one entry");
	free(b);
}

/* A drive whose SGLs need dword alignment (SGLS 10b): a misaligned single entry is not a
 * Data Block (nor PRPs: refused); an aligned one is. */
Test(ctrl, one_entry_sgl_on_a_dword_sgl_drive)
{
	f.sgls = 2;
	cr_assert_eq(nvme_ctrl_init(&c, "nvme0", &f.bus, 1), 0);
	uint8_t *b = aligned_alloc(4096, 8192);
	fill(b, 8192, 5);
	unsigned before = f.commands;
	struct nvme_sg odd = sg_host(b + 1, 4096), even = sg_host(b + 8, 4096);
	cr_assert_eq(nvme_write(&c, 1, 0, 8, &odd, 1), -EINVAL);
	cr_assert_eq(f.commands, before, "nothing sent");
	cr_assert_eq(nvme_write(&c, 1, 0, 8, &even, 1), 0);
	cr_assert_eq(f.last_psdt, NVME_SQE_PSDT_SGL);
	cr_assert_eq(memcmp(f.media, b + 8, 4096), 0);
	free(b);
}

Test(ctrl, prps_with_a_list_when_the_controller_has_no_sgls)
{
	f.sgls = 0;
	cr_assert_eq(nvme_ctrl_init(&c, "nvme0", &f.bus, 1), 0);
	uint8_t *w = aligned_alloc(4096, 8 * 4096);
	fill(w, 8 * 4096, 9);
	/* 20 KiB starting 512 bytes into a page: touches 6 pages, PRP list of 5 */
	struct nvme_sg ws = sg_host(w + 512, 20480);
	cr_assert_eq(nvme_write(&c, 1, 0, 40, &ws, 1), 0);
	cr_assert_eq(f.last_psdt, NVME_SQE_PSDT_PRP);
	cr_assert_eq(memcmp(f.media, w + 512, 20480), 0);
	cr_assert_eq(c.st.list_bytes[MEM_CLASS_HOST], 5 * 8);
	/* a scatter list PRPs cannot describe is refused, not sent */
	uint8_t *odd = malloc(2048);
	struct nvme_sg bad[2] = { sg_host(w, 1024), sg_host(odd, 1024) };
	unsigned before = f.commands;
	cr_assert_eq(nvme_write(&c, 1, 0, 4, bad, 2), -EINVAL);
	cr_assert_eq(f.commands, before);
	free(odd);
	free(w);
}

Test(ctrl, byte_granular_sgl_gathers_odd_fragments)
{
	cr_assert_eq(nvme_ctrl_init(&c, "nvme0", &f.bus, 1), 0);
	/* 64 payloads of 1400 bytes at stride 1401 from an odd base = 175 sectors */
	uint8_t *pool = malloc(64 * 1401 + 16);
	uint8_t expect[64 * 1400];
	struct nvme_sg sg[64];
	for (int i = 0; i < 64; i++) {
		fill(pool + 1 + 1401 * i, 1400, (unsigned)i);
		memcpy(expect + 1400 * i, pool + 1 + 1401 * i, 1400);
		sg[i] = sg_host(pool + 1 + 1401 * i, 1400);
	}
	cr_assert_eq(nvme_write(&c, 1, 200, 175, sg, 64), 0);
	cr_assert_eq(memcmp(f.media + 200 * 512, expect, sizeof(expect)), 0);
	/* the SGL total must equal NLB x 512: one sector short is refused before submission */
	unsigned before = f.commands;
	cr_assert_eq(nvme_write(&c, 1, 200, 176, sg, 64), -EINVAL);
	cr_assert_eq(f.commands, before);
	free(pool);
}

/* n host entries of e bytes each (the last of last bytes) at stride e in a page-aligned
 * pool, filled from seed (entry i with seed + i); the caller frees the pool. */
static uint8_t *gather_pool(struct nvme_sg *sg, unsigned n, uint32_t e, uint32_t last, unsigned seed)
{
	size_t bytes = (size_t)n * e;
	uint8_t *pool = aligned_alloc(4096, (bytes + 4095) / 4096 * 4096);
	cr_assert_not_null(pool);
	for (unsigned i = 0; i < n; i++) {
		fill(pool + (size_t)e * i, e, seed + i);
		sg[i] = sg_host(pool + (size_t)e * i, i + 1 < n ? e : last);
	}
	return pool;
}

/* A gather of up to a list page of host entries on a byte-granular SGL drive has its Data
 * Blocks written by the checking walk (one Last Segment in the slot's host list); more
 * entries (a chained list), a dword-SGL drive and a refused list take the general build:
 * the same bytes on the drive and the same list accounting either way. */
Test(ctrl, gathers_in_the_direct_list_and_through_the_general_build)
{
	cr_assert_eq(nvme_ctrl_init(&c, "nvme0", &f.bus, 1), 0);
	enum { N = 260, E = 256 };
	struct nvme_sg sg[N];
	uint8_t *pool = gather_pool(sg, N, E, E, 40);
	/* 4 entries (a 1 KiB write in four segments) and 256 (a full list page): the direct list */
	uint64_t lb = c.st.list_bytes[MEM_CLASS_HOST];
	cr_assert_eq(nvme_write(&c, 1, 0, 2, sg, 4), 0);
	cr_assert_eq(f.last_psdt, NVME_SQE_PSDT_SGL);
	cr_assert_eq(memcmp(f.media, pool, 4 * E), 0);
	cr_assert_eq(c.st.list_bytes[MEM_CLASS_HOST] - lb, 4 * 16);
	cr_assert_eq(nvme_write(&c, 1, 100, 128, sg, 256), 0);
	cr_assert_eq(memcmp(f.media + 100 * 512, pool, 256 * E), 0);
	cr_assert_eq(c.st.list_bytes[MEM_CLASS_HOST] - lb, 4 * 16 + 256 * 16);
	/* 260 entries: two chained segments, from the general build */
	lb = c.st.list_bytes[MEM_CLASS_HOST];
	memset(f.media, 0, N * E);
	cr_assert_eq(nvme_write(&c, 1, 0, N * E / 512, sg, N), 0);
	cr_assert_eq(memcmp(f.media, pool, N * E), 0);
	cr_assert_eq(c.st.list_bytes[MEM_CLASS_HOST] - lb, 256 * 16 + 5 * 16);
	/* a bad gather is refused as before, nothing sent: an empty entry, a sector short */
	unsigned before = f.commands;
	struct nvme_sg bad[4] = { sg[0], sg_host(pool + E, 0), sg[2], sg[3] };
	cr_assert_eq(nvme_write(&c, 1, 0, 2, bad, 4), -EINVAL);
	cr_assert_eq(nvme_write(&c, 1, 0, 3, sg, 4), -EINVAL);
	cr_assert_eq(f.commands, before);
	nvme_ctrl_fini(&c);
	memset(&c, 0, sizeof(c));

	/* a dword-SGL drive: aligned entries through the general build, misaligned ones refused
	 * (no SGL, no PRPs) */
	f.sgls = 2;
	cr_assert_eq(nvme_ctrl_init(&c, "nvme0", &f.bus, 1), 0);
	memset(f.media, 0, 4 * E);
	cr_assert_eq(nvme_write(&c, 1, 0, 2, sg, 4), 0);
	cr_assert_eq(f.last_psdt, NVME_SQE_PSDT_SGL);
	cr_assert_eq(memcmp(f.media, pool, 4 * E), 0);
	struct nvme_sg odd[2] = { sg_host(pool + 1, 512), sg_host(pool + 1024, 512) };
	before = f.commands;
	cr_assert_eq(nvme_write(&c, 1, 0, 2, odd, 2), -EINVAL);
	cr_assert_eq(f.commands, before);
	free(pool);
}

static unsigned rw_done_count;
static int rw_done_rc;
static void rw_done(void *arg, int rc, const struct nvme_cqe *cqe)
{
	(void)arg;
	(void)cqe;
	rw_done_count++;
	rw_done_rc = rc;
}

/* A refusal of nvme_submit_rw (the route's refused callback): how many, the last errno. */
static unsigned rw_refused_count;
static int rw_refused_rc;
static void rw_refused(void *arg, int rc, const struct nvme_cqe *cqe)
{
	(void)arg;
	cr_assert_null(cqe);
	rw_refused_count++;
	rw_refused_rc = rc;
}

/* The route of namespace 1 (512-byte blocks) of c, as the target's backend keeps it. */
static struct nvme_rw_route rw_route = { .c = &c, .nsid = 1, .lba_shift = 9, .done = rw_done, .refused = rw_refused };

/* nvme_submit_rw of one write, completed: the submission's answer, then the completion's. */
static int submit_rw_write(uint64_t slba, const struct nvme_sg *sg, unsigned nsg, uint32_t blocks, bool checked)
{
	unsigned before = rw_done_count;
	int rc = nvme_submit_rw(&rw_route, slba, blocks - 1,
				(struct nvme_rw_data){ .sg = sg, .nsg = nsg, .write = true, .checked = checked }, NULL);
	if (rc)
		return rc;
	for (int i = 0; i < 100 && rw_done_count == before; i++)
		nvme_qpair_poll(&c.io[0], 16);
	cr_assert_eq(rw_done_count, before + 1, "completed");
	return rw_done_rc;
}

/* nvme_submit_rw's lean ways open on an I/O queue as far as MDTS on a byte-granular SGL drive
 * (q->lean_max, set when the queue is created): a bring-up after the drive changed (a reset
 * reads Identify again before it creates the queues) closes them on a dword-SGL drive, whose
 * misaligned entry the general way then refuses, nothing sent. */
Test(ctrl, the_lean_ways_follow_sgls_and_mdts_read_at_each_bring_up)
{
	cr_assert_eq(nvme_ctrl_init(&c, "nvme0", &f.bus, 1), 0);
	cr_assert_eq(c.io[0].lean_max, c.max_xfer);
	cr_assert_eq(c.admin.lean_max, 0, "never the admin queue");
	uint8_t *b = aligned_alloc(4096, 8192);
	cr_assert_not_null(b);
	fill(b, 8192, 6);
	const struct nvme_sg odd = sg_host(b + 1, 4096);
	cr_assert_eq(submit_rw_write(0, &odd, 1, 8, true), 0, "byte-granular: any address");
	f.sgls = 2;
	cr_assert_eq(nvme_ctrl_reset(&c, "test"), 0);
	cr_assert_eq(c.io[0].lean_max, 0);
	unsigned before = f.commands;
	cr_assert_eq(nvme_submit_rw(&rw_route, 0, 7, (struct nvme_rw_data){ &odd, 1, true, true }, NULL), -EINVAL);
	cr_assert_eq(f.commands, before, "nothing sent");
	free(b);
}

/* A gather its caller vouches for (nvme_request.checked: summed to the command's bytes, no
 * empty entry, one memory class) has its list written without the checking walk: the same
 * command, list and bytes on the drive as the list that is checked; the drive's other
 * checks still hold for it (a gather larger than MDTS), and one that is not vouched for is
 * checked as ever (an empty entry refused, nothing sent). */
Test(ctrl, a_gather_the_caller_checked_is_mapped_as_a_checked_one)
{
	cr_assert_eq(nvme_ctrl_init(&c, "nvme0", &f.bus, 1), 0);
	enum { N = 90, E = 1448 };
	struct nvme_sg sg[N];
	uint8_t *pool = gather_pool(sg, N, E, 128 * 1024 - (N - 1) * E, 3);
	uint64_t lb = c.st.list_bytes[MEM_CLASS_HOST];
	cr_assert_eq(submit_rw_write(0, sg, N, 256, false), 0);
	uint64_t list_checked = c.st.list_bytes[MEM_CLASS_HOST] - lb;
	cr_assert_eq(list_checked, N * 16, "one Last Segment of N Data Blocks");
	lb = c.st.list_bytes[MEM_CLASS_HOST];
	cr_assert_eq(submit_rw_write(512, sg, N, 256, true), 0);
	cr_assert_eq(f.last_psdt, NVME_SQE_PSDT_SGL);
	cr_assert_eq(c.st.list_bytes[MEM_CLASS_HOST] - lb, list_checked, "the same list");
	cr_assert_eq(memcmp(f.media + 512 * 512, pool, 128 * 1024), 0, "the same bytes on the drive");
	cr_assert_eq(memcmp(f.media, pool, 128 * 1024), 0);
	/* MDTS (128 KiB) still holds for a vouched-for gather: 130 KiB refused, nothing sent */
	unsigned before = f.commands, refused = rw_refused_count;
	sg[N - 1].len += 2048;
	cr_assert_eq(nvme_submit_rw(&rw_route, 0, 260 - 1, (struct nvme_rw_data){ sg, N, true, true }, NULL), -E2BIG);
	sg[N - 1].len -= 2048;
	/* not vouched for: an empty entry is refused as ever */
	struct nvme_sg bad[3] = { sg_host(pool, 512), sg_host(pool + 512, 0), sg_host(pool + 1024, 512) };
	cr_assert_eq(nvme_submit_rw(&rw_route, 0, 1, (struct nvme_rw_data){ bad, 3, true, false }, NULL), -EINVAL);
	cr_assert_eq(f.commands, before);
	cr_assert_eq(rw_refused_count, refused + 2, "each refusal also told to the route's refused");
	cr_assert_eq(rw_refused_rc, -EINVAL);
	free(pool);
}

/* What one Read/Write leaves behind: its SQE as the drive fetched it, its slot's list, and
 * what it counted (the controller's and the memory classes'). */
struct rw_trace {
	struct nvme_sqe sqe;
	uint8_t list[16 * 8];     /* the slot's host list */
	uint8_t cmb_list[16 * 8]; /* the slot's CMB list (zeros when the queue has none) */
	uint64_t fua, payload, list_bytes, submitted, completed;
	uint64_t cmb_payload, cmb_list_bytes; /* payload_bytes, list_bytes of the device class */
	struct nvme_cmd slot;     /* the slot as submitted, its deadline left out */
	struct dma_counters dma;
};

/* Slot cid's CMB list on q (NULL when its list areas are not set up yet). */
static uint8_t *slot_cmb_list(const struct nvme_qpair *q, uint16_t cid)
{
	if (!q->cmb_lists)
		return NULL;
	return (uint8_t *)q->cmb_list_area.cpu + (size_t)cid * q->cmb_list_area.bytes;
}

/* Submit one Read/Write on I/O queue 1, by nvme_submit_rw (rw true) or nvme_submit with the
 * same request (the general path), complete it, and trace it. */
static struct rw_trace rw_traced(bool rw, bool write, uint64_t slba, uint32_t cdw12, const struct nvme_sg *sg,
				 unsigned nsg, uint32_t bytes)
{
	struct rw_trace t;
	struct nvme_qpair *q = &c.io[0];
	uint16_t at = q->ring.sq_tail;
	uint16_t cid = q->free_cids[q->nfree - 1];
	dma_counters_reset();
	memset(&c.st, 0, sizeof(c.st));
	memset(&q->st, 0, sizeof(q->st));
	unsigned before = rw_done_count;
	if (rw) {
		cr_assert_eq(nvme_submit_rw(&rw_route, slba, cdw12, (struct nvme_rw_data){ sg, nsg, write, true }, NULL), 0);
		cr_assert_eq(bytes, (uint64_t)((cdw12 & 0xffff) + 1) << 9);
	} else {
		struct nvme_request rq = { .opc = write ? NVME_CMD_WRITE : NVME_CMD_READ, .nsid = 1,
					   .cdw10 = (uint32_t)slba, .cdw11 = (uint32_t)(slba >> 32), .cdw12 = cdw12,
					   .sg = sg, .nsg = nsg, .sgl_total = bytes,
					   .dir = write ? DMA_TO_DEVICE : DMA_FROM_DEVICE, .count_payload = true,
					   .checked = true };
		cr_assert_eq(nvme_submit(q, &rq, rw_done, NULL), 0);
	}
	memcpy(&t.sqe, (const void *)(uintptr_t)&q->ring.sq[at], sizeof(t.sqe));
	memcpy(t.list, q->cmds[cid].host_list_cpu, sizeof(t.list));
	memset(t.cmb_list, 0, sizeof(t.cmb_list));
	if (slot_cmb_list(q, cid))
		memcpy(t.cmb_list, slot_cmb_list(q, cid), sizeof(t.cmb_list));
	memcpy(&t.slot, &q->cmds[cid], sizeof(t.slot)); /* (padding and all: the same slot both ways) */
	t.slot.deadline_ns = 0;
	for (int i = 0; i < 100 && rw_done_count == before; i++)
		nvme_qpair_poll(q, 16);
	cr_assert_eq(rw_done_count, before + 1, "completed");
	cr_assert_eq(rw_done_rc, 0);
	t.fua = c.st.fua;
	t.payload = c.st.payload_bytes[MEM_CLASS_HOST];
	t.list_bytes = c.st.list_bytes[MEM_CLASS_HOST];
	t.cmb_payload = c.st.payload_bytes[MEM_CLASS_DEVICE];
	t.cmb_list_bytes = c.st.list_bytes[MEM_CLASS_DEVICE];
	t.submitted = q->st.submitted;
	t.completed = q->st.completed;
	t.dma = *dma_counters();
	return t;
}

/* nvme_submit_rw's lean way (a checked Read/Write on a byte-granular SGL drive) writes the
 * command nvme_submit writes for the same request: the same SQE byte for byte, the same
 * list, the same slot, the same counts, for one entry (SGL1 a Data Block) and a gather (a
 * Last Segment over the slot's list: its host list, or its CMB list for data in the CMB),
 * reads and writes, with and without FUA. The first call on a queue with CMB data sets up
 * its CMB list areas (the general way's), so that lean and general meet the same queue. */
static void lean_and_general_agree(const struct nvme_sg *s, unsigned n, uint32_t bytes)
{
	const bool in_cmb = s[0].addr.cls == MEM_CLASS_DEVICE;
	const uint64_t list = n > 1 ? n * 16 : 0;
	if (in_cmb && !c.io[0].cmb_lists)
		(void)rw_traced(false, false, 64, bytes / 512 - 1, s, n, bytes);
	for (unsigned fua = 0; fua < 2; fua++) {
		uint32_t cdw12 = (bytes / 512 - 1) | (fua ? NVME_RW_FUA : 0);
		for (int write = 0; write < 2; write++) {
			struct rw_trace lean = rw_traced(true, write, 64, cdw12, s, n, bytes);
			struct rw_trace general = rw_traced(false, write, 64, cdw12, s, n, bytes);
			cr_assert_eq(memcmp(&lean.sqe, &general.sqe, sizeof(lean.sqe)), 0,
				     "the same SQE (n %u, write %d, fua %u)", n, write, fua);
			cr_assert_eq(memcmp(lean.list, general.list, in_cmb ? 0 : list), 0, "the same list");
			cr_assert_eq(memcmp(lean.cmb_list, general.cmb_list, in_cmb ? list : 0), 0,
				     "the same list in the CMB");
			cr_assert_eq(memcmp(&lean.slot, &general.slot, sizeof(lean.slot)), 0, "the same slot");
			cr_assert_eq(lean.fua, general.fua);
			cr_assert_eq(lean.fua, fua);
			cr_assert_eq(in_cmb ? lean.cmb_payload : lean.payload, bytes);
			cr_assert_eq(lean.payload, general.payload);
			cr_assert_eq(lean.cmb_payload, general.cmb_payload);
			cr_assert_eq(lean.list_bytes, general.list_bytes);
			cr_assert_eq(lean.cmb_list_bytes, general.cmb_list_bytes);
			cr_assert_eq(in_cmb ? lean.cmb_list_bytes : lean.list_bytes, list);
			cr_assert_eq(in_cmb ? lean.list_bytes : lean.cmb_list_bytes, 0, "no list in the other memory");
			cr_assert_eq(lean.submitted, 1);
			cr_assert_eq(general.submitted, 1);
			cr_assert_eq(lean.completed, general.completed);
			cr_assert_eq(memcmp(&lean.dma, &general.dma, sizeof(lean.dma)), 0, "the same DMA counts");
		}
	}
}

Test(ctrl, the_lean_read_write_is_the_command_of_the_general_path)
{
	struct nvme_sg sg[5];
	uint8_t *pool = gather_pool(sg, 5, 1024, 1024, 9);
	cr_assert_eq(nvme_ctrl_init(&c, "nvme0", &f.bus, 1), 0);
	const struct nvme_sg one = sg_host(pool, 4096); /* SGL1 a Data Block */
	lean_and_general_agree(&one, 1, 4096);
	lean_and_general_agree(sg, 5, 5 * 1024); /* a Last Segment over the slot's list */
	free(pool);
}

Test(ctrl, io_beyond_the_namespace_end_is_erange)
{
	cr_assert_eq(nvme_ctrl_init(&c, "nvme0", &f.bus, 1), 0);
	uint8_t *b = aligned_alloc(4096, 4096);
	struct nvme_sg sg = sg_host(b, 4096);
	unsigned before = f.commands;
	cr_assert_eq(nvme_read(&c, 1, FAKE_NSZE - 4, 8, &sg, 1), -ERANGE);
	cr_assert_eq(nvme_write(&c, 1, FAKE_NSZE, 8, &sg, 1), -ERANGE);
	cr_assert_eq(nvme_read(&c, 1, UINT64_MAX - 2, 8, &sg, 1), -ERANGE, "no wrap-around");
	cr_assert_eq(nvme_write_zeroes(&c, 1, FAKE_NSZE - 1, 2), -ERANGE);
	cr_assert_eq(f.commands, before, "refused before reaching the controller");
	/* and when the controller is the one saying so (status 0x80), the same -ERANGE */
	struct nvme_request rq;
	cr_assert_eq(nvme_rw_request(&c, false, 1, 0, 8, &sg, 1, &rq), 0);
	rq.cdw10 = FAKE_NSZE;
	cr_assert_eq(nvme_exec_sync(&c.io[0], &rq, NULL), -ERANGE);
	cr_assert_eq(f.last_status, (0x80 << 1) | 0x8000);
	free(b);
}

Test(ctrl, absent_namespace_is_enodev)
{
	f.ns_absent = true;
	cr_assert_eq(nvme_ctrl_init(&c, "nvme0", &f.bus, 1), 0, "no namespace is not a failure");
	cr_assert_eq(c.nns, 0);
	uint8_t *b = aligned_alloc(4096, 4096);
	struct nvme_sg sg = sg_host(b, 4096);
	cr_assert_eq(nvme_read(&c, 1, 0, 8, &sg, 1), -ENODEV);
	cr_assert_eq(nvme_flush(&c, 1), -ENODEV);
	cr_assert_null(nvme_ns_get(&c, 1));
	/* raw command to a namespace the controller does not have: 0x0b -> -ENODEV */
	struct nvme_request rq;
	memset(&rq, 0, sizeof(rq));
	rq.opc = NVME_CMD_FLUSH;
	rq.nsid = 7;
	cr_assert_eq(nvme_exec_sync(&c.io[0], &rq, NULL), -ENODEV);
	free(b);
}

Test(ctrl, write_zeroes_deallocate_and_flush)
{
	cr_assert_eq(nvme_ctrl_init(&c, "nvme0", &f.bus, 1), 0);
	memset(f.media, 0xab, FAKE_NSZE * 512);
	cr_assert_eq(nvme_write_zeroes(&c, 1, 10, 4), 0);
	cr_assert_eq(f.media[10 * 512], 0);
	cr_assert_eq(f.media[14 * 512 - 1], 0);
	cr_assert_eq(f.media[14 * 512], 0xab);
	cr_assert_eq(nvme_deallocate(&c, 1, 20, 2), 0);
	cr_assert_eq(f.media[20 * 512], 0);
	cr_assert_eq(f.media[22 * 512], 0xab);
	cr_assert_eq(nvme_flush(&c, 1), 0);
	cr_assert_eq(dma_counters()->dma_bytes[MEM_CLASS_HOST][DMA_TO_DEVICE], sqe_bytes(MEM_CLASS_HOST),
		     "DSM ranges are not payload: only the commands themselves");
}

Test(ctrl, timed_out_command_is_aborted_and_fails_cleanly)
{
	cr_assert_eq(nvme_ctrl_init(&c, "nvme0", &f.bus, 1), 0);
	f.drop_opc = NVME_CMD_READ;
	uint8_t *b = aligned_alloc(4096, 4096);
	struct nvme_sg sg = sg_host(b, 4096);
	uint64_t t0 = clock_now_ns();
	cr_assert_eq(nvme_read(&c, 1, 0, 8, &sg, 1), -ETIMEDOUT);
	uint64_t took = clock_now_ns() - t0;
	cr_assert_geq(took, c.cmd_timeout_ns);
	cr_assert_lt(took, c.cmd_timeout_ns + NSEC_PER_SEC);
	cr_assert_eq(f.aborts, 1);
	cr_assert_eq(c.io[0].st.timeouts, 1);
	cr_assert_eq(c.io[0].st.lost, 0);
	cr_assert_eq(c.io[0].outstanding, 0);
	cr_assert_eq(c.io[0].nfree, NVME_IO_DEPTH - 1, "the command ID is reusable");
	f.drop_opc = -1;
	cr_assert_eq(nvme_read(&c, 1, 0, 8, &sg, 1), 0, "the queue still works");
	free(b);
}

Test(ctrl, ignored_abort_resets_the_controller_and_fails_the_command_after_it_is_disabled)
{
	cr_assert_eq(nvme_ctrl_init(&c, "nvme0", &f.bus, 1), 0);
	f.drop_opc = NVME_CMD_WRITE;
	f.drop_aborts = true;
	uint8_t *b = aligned_alloc(4096, 4096);
	struct nvme_sg sg = sg_host(b, 4096);
	uint64_t t0 = clock_now_ns();
	cr_assert_eq(nvme_write(&c, 1, 0, 8, &sg, 1), -ETIMEDOUT);
	uint64_t took = clock_now_ns() - t0;
	cr_assert_geq(took, c.cmd_timeout_ns + c.abort_timeout_ns);
	cr_assert_lt(took, c.cmd_timeout_ns + c.abort_timeout_ns + NSEC_PER_SEC);
	cr_assert_eq(c.io[0].st.lost, 1, "quarantined (counter kept across the reset)");
	cr_assert_eq(c.rec.resets, 1);
	cr_assert_eq(f.disables, 1, "CC.EN cleared by the reset (the fake starts disabled)");
	cr_assert_eq(c.state, NVME_CTRL_LIVE);
	cr_assert_eq(c.io[0].nfree, NVME_IO_DEPTH - 1, "every ID back after the reset");
	cr_assert_eq(c.io[0].outstanding, 0);
	f.drop_opc = -1;
	cr_assert_eq(nvme_read(&c, 1, 0, 8, &sg, 1), 0);
	free(b);
}

Test(ctrl, fatal_status_during_io_resets_and_fails_the_command_back_for_retry)
{
	cr_assert_eq(nvme_ctrl_init(&c, "nvme0", &f.bus, 1), 0);
	f.drop_opc = NVME_CMD_READ;
	f.cfs_on_drop = true;
	uint8_t *b = aligned_alloc(4096, 4096);
	struct nvme_sg sg = sg_host(b, 4096);
	uint64_t t0 = clock_now_ns();
	cr_assert_eq(nvme_read(&c, 1, 0, 8, &sg, 1), -EAGAIN);
	cr_assert_leq(clock_now_ns() - t0, NVME_HEALTH_INTERVAL_NS + 10 * NSEC_PER_MSEC,
		      "found by the CSTS check, not by the 5 s timeout");
	cr_assert_eq(c.rec.cfs, 1);
	cr_assert_eq(c.rec.resets, 1);
	cr_assert_eq(c.state, NVME_CTRL_LIVE);
	f.drop_opc = -1;
	cr_assert_eq(nvme_write(&c, 1, 0, 8, &sg, 1), 0);
	free(b);
}

static void enable_v14_cmb(void)
{
	f.cap |= 1ull << 57; /* CAP.CMBS */
	f.cmb_v14 = true;
}

Test(ctrl, cmb_v14_is_enabled_with_cba_cmse_cre_and_carries_data_and_lists)
{
	enable_v14_cmb();
	cr_assert_eq(nvme_ctrl_init(&c, "nvme0", &f.bus, 1), 0);
	cr_assert_eq(c.cmb.scheme, NVME_CMB_V14);
	cr_assert(c.cmb.usable, "refused: %s", c.cmb.refused ? c.cmb.refused : "");
	cr_assert(f.cmse);
	cr_assert_eq(f.cmbmsc, (uint64_t)(uintptr_t)f.cmb | 3);
	cr_assert_eq(c.cmb.size, FAKE_CMB_SIZE);
	/* the I/O SQ sits at the start of the CMB (CMBSZ.SQS); list areas come on first use */
	cr_assert_eq(c.cmb.sqs_in_cmb, 1);
	cr_assert(c.io[0].sq_in_cmb);
	cr_assert_eq(c.io[0].sq_addr.bus, (uint64_t)(uintptr_t)f.cmb);
	cr_assert_eq(c.io[0].sq_addr.cls, MEM_CLASS_DEVICE);
	cr_assert_eq(c.cmb.reserved, 4096, "only the SQ before the first CMB command");

	/* write from two CMB fragments: the SGL segment must be in the CMB too */
	uint64_t off = 2u << 20;
	fill(f.cmb + off, 8192, 5);
	struct nvme_sg sg[2] = { sg_cmb(off, 1000), sg_cmb(off + 1000, 8192 - 1000) };
	cr_assert_eq(nvme_write(&c, 1, 300, 16, sg, 2), 0);
	cr_assert_eq(f.last_status, 0);
	cr_assert_eq(memcmp(f.media + 300 * 512, f.cmb + off, 8192), 0);
	cr_assert_gt(c.cmb.reserved, 4096, "per-command list areas carved from the CMB");
	/* read back into another CMB area with PRPs (list in the CMB) */
	c.sgls = 0;
	struct nvme_sg rs = sg_cmb(off + 65536, 4 * 4096);
	cr_assert_eq(nvme_read(&c, 1, 300, 32, &rs, 1), 0);
	cr_assert_eq(memcmp(f.cmb + off + 65536, f.media + 300 * 512, 16384), 0);
	const struct dma_counters *d = dma_counters();
	cr_assert_eq(d->dma_bytes[MEM_CLASS_HOST][DMA_TO_DEVICE] + d->dma_bytes[MEM_CLASS_HOST][DMA_FROM_DEVICE],
		     sqe_bytes(MEM_CLASS_HOST) + cqe_bytes(), "no host DRAM byte for CMB payloads or their lists");
	cr_assert_eq(d->dma_bytes[MEM_CLASS_DEVICE][DMA_TO_DEVICE], 8192 + 32 + 24 + sqe_bytes(MEM_CLASS_DEVICE));
	cr_assert_eq(d->dma_bytes[MEM_CLASS_DEVICE][DMA_FROM_DEVICE], 16384);
	cr_assert_eq(c.st.payload_bytes[MEM_CLASS_DEVICE], 8192 + 16384);
	cr_assert_eq(f.cmb_silent_drops, 0);
}

/* c brought up on a drive with a usable CMB, its I/O SQ in host memory (nvme.sq_in_cmb off). */
static void init_with_a_cmb_and_the_sq_in_dram(void)
{
	enable_v14_cmb();
	nvme_set_sq_in_cmb(false);
	int rc = nvme_ctrl_init(&c, "nvme0", &f.bus, 1);
	nvme_set_sq_in_cmb(true);
	cr_assert_eq(rc, 0);
	cr_assert(c.cmb.usable);
	cr_assert_not(c.io[0].sq_in_cmb);
}

/* nvme_submit_rw of n entries in the CMB at slba: a write of what is there, then a read of it
 * back over the same entries cleared; the drive's media and the CMB hold the written bytes. */
static void cmb_round_trip(uint64_t slba, const struct nvme_sg *s, unsigned n, uint32_t bytes, unsigned seed)
{
	for (unsigned i = 0; i < n; i++)
		fill((uint8_t *)(uintptr_t)s[i].addr.bus, s[i].len, seed + i);
	uint8_t *want = malloc(bytes);
	cr_assert_not_null(want);
	for (uint32_t i = 0, at = 0; i < n; at += s[i].len, i++)
		memcpy(want + at, (const void *)(uintptr_t)s[i].addr.bus, s[i].len);
	cr_assert_eq(submit_rw_write(slba, s, n, bytes / 512, true), 0);
	cr_assert_eq(memcmp(f.media + slba * 512, want, bytes), 0, "the drive wrote the CMB's bytes");
	for (unsigned i = 0; i < n; i++)
		memset((void *)(uintptr_t)s[i].addr.bus, 0, s[i].len);
	unsigned before = rw_done_count;
	cr_assert_eq(nvme_submit_rw(&rw_route, slba, bytes / 512 - 1, (struct nvme_rw_data){ s, n, false, true }, NULL), 0);
	for (int i = 0; i < 100 && rw_done_count == before; i++)
		nvme_qpair_poll(&c.io[0], 16);
	cr_assert_eq(rw_done_count, before + 1, "completed");
	cr_assert_eq(rw_done_rc, 0);
	for (uint32_t i = 0, at = 0; i < n; at += s[i].len, i++)
		cr_assert_eq(memcmp((const void *)(uintptr_t)s[i].addr.bus, want + at, s[i].len), 0,
			     "the drive read into the CMB (entry %u)", i);
	cr_assert_eq(f.cmb_silent_drops, 0);
	free(want);
}

/* Data in the CMB for lean_and_general_agree and cmb_round_trip: 4 KiB and 128 KiB in one
 * entry (the CMB mode's read buffer: SGL1 a Data Block), 8 KiB in five odd-sized entries
 * and 128 KiB in eight (a Last Segment in the slot's CMB list). */
static void cmb_data_agrees(void)
{
	const uint64_t off = 1u << 20;
	const struct nvme_sg one4k = sg_cmb(off, 4096), one128k = sg_cmb(off, 128 * 1024);
	const struct nvme_sg five[5] = { sg_cmb(off, 1000), sg_cmb(off + 4096, 3000), sg_cmb(off + 12288, 96),
					 sg_cmb(off + 16384, 2048), sg_cmb(off + 20480, 8192 - 6144) };
	struct nvme_sg eight[8];
	for (unsigned i = 0; i < 8; i++)
		eight[i] = sg_cmb(off + 65536 + (uint64_t)i * 20480, 16384);
	lean_and_general_agree(&one4k, 1, 4096);
	lean_and_general_agree(&one128k, 1, 128 * 1024);
	lean_and_general_agree(five, 5, 8192);
	lean_and_general_agree(eight, 8, 128 * 1024);
	cmb_round_trip(100, &one4k, 1, 4096, 21);
	cmb_round_trip(200, &one128k, 1, 128 * 1024, 22);
	cmb_round_trip(600, five, 5, 8192, 23);
	cmb_round_trip(700, eight, 8, 128 * 1024, 24);
}

/* With a CMB (and the I/O SQ in it, CMBSZ.SQS), a Read/Write of host memory still goes the
 * lean way, its SQE copied into the CMB in dwords: the command of the general path again;
 * so does one whose data is all in the CMB (the CMB mode's read data), its list in the
 * slot's CMB list as the drive needs it: 4 KiB and 128 KiB in one entry and in several, the
 * same SQE, list, slot and counts as the general path, the right bytes on the drive and
 * back in the CMB. */
Test(ctrl, the_lean_read_write_beside_a_cmb_is_the_command_of_the_general_path)
{
	struct nvme_sg sg[5];
	uint8_t *pool = gather_pool(sg, 5, 1024, 1024, 11);
	enable_v14_cmb();
	cr_assert_eq(nvme_ctrl_init(&c, "nvme0", &f.bus, 1), 0);
	cr_assert(c.cmb.usable);
	cr_assert(c.io[0].sq_in_cmb);
	const struct nvme_sg one = sg_host(pool, 4096);
	lean_and_general_agree(&one, 1, 4096);
	lean_and_general_agree(sg, 5, 5 * 1024);
	uint64_t off = 1u << 20;
	fill(f.cmb + off, 4096, 4);
	struct nvme_sg in_cmb[2] = { sg_cmb(off, 1536), sg_cmb(off + 1536, 4096 - 1536) };
	uint64_t device_lists = c.st.list_bytes[MEM_CLASS_DEVICE];
	cr_assert_eq(submit_rw_write(40, in_cmb, 2, 8, true), 0);
	cr_assert_eq(memcmp(f.media + 40 * 512, f.cmb + off, 4096), 0);
	cr_assert_eq(c.st.list_bytes[MEM_CLASS_DEVICE] - device_lists, 2 * 16, "its list in the CMB");
	cmb_data_agrees();
	free(pool);
}

/* The same with the I/O SQ in host memory (nvme.sq_in_cmb off) and data in the CMB: the SQE
 * written in place, the list still in the CMB. */
Test(ctrl, the_lean_read_write_of_cmb_data_with_the_sq_in_dram_is_the_command_of_the_general_path)
{
	init_with_a_cmb_and_the_sq_in_dram();
	cmb_data_agrees();
}

/* nvme_submit_rw of checked data in the CMB keeps the CMB's rules whatever way it goes: a mix
 * of the CMB and host memory, an entry across either end of the CMB, data in a CMB whose transfers
 * are not enabled (CMSE: usable cleared after the queue's CMB lists were set up) are refused,
 * nothing sent; a drive without SGLs gets PRPs with the PRP list in the CMB (the general
 * way), the right bytes moved. */
Test(ctrl, cmb_data_by_submit_rw_keeps_the_cmb_rules)
{
	enable_v14_cmb();
	cr_assert_eq(nvme_ctrl_init(&c, "nvme0", &f.bus, 1), 0);
	const uint64_t off = 1u << 20;
	const struct nvme_sg one = sg_cmb(off, 4096);
	cmb_round_trip(0, &one, 1, 4096, 31); /* the queue's CMB lists set up (general way) */
	cr_assert(c.io[0].cmb_lists);
	uint8_t *h = aligned_alloc(4096, 4096);
	cr_assert_not_null(h);
	const struct nvme_sg mix[2] = { sg_cmb(off, 2048), sg_host(h, 2048) };
	const struct nvme_sg mix2[2] = { sg_host(h, 2048), sg_cmb(off, 2048) };
	const struct nvme_sg straddle = sg_cmb(FAKE_CMB_SIZE - 2048, 4096);
	/* (one entry from below the CMB into it: its address taken as a bus address, never sent) */
	const struct nvme_sg into = { dma_addr_device(c.cmb.bus - 2048), 4096 };
	const struct nvme_sg two[2] = { sg_cmb(off, 2048), sg_cmb(off + 8192, 2048) };
	unsigned before = f.commands, refused = rw_refused_count;
	cr_assert_eq(nvme_submit_rw(&rw_route, 0, 7, (struct nvme_rw_data){ mix, 2, true, true }, NULL), -EINVAL);
	cr_assert_eq(nvme_submit_rw(&rw_route, 0, 7, (struct nvme_rw_data){ mix2, 2, false, true }, NULL), -EINVAL);
	cr_assert_eq(nvme_submit_rw(&rw_route, 0, 7, (struct nvme_rw_data){ &straddle, 1, false, true }, NULL), -EINVAL);
	cr_assert_eq(nvme_submit_rw(&rw_route, 0, 7, (struct nvme_rw_data){ &into, 1, false, true }, NULL), -EINVAL);
	c.cmb.usable = false;
	cr_assert_eq(nvme_submit_rw(&rw_route, 0, 7, (struct nvme_rw_data){ &one, 1, false, true }, NULL), -EINVAL);
	cr_assert_eq(nvme_submit_rw(&rw_route, 0, 7, (struct nvme_rw_data){ two, 2, true, true }, NULL), -EINVAL);
	c.cmb.usable = true;
	cr_assert_eq(f.commands, before, "none sent");
	cr_assert_eq(rw_refused_count, refused + 6);
	/* PRPs (no SGLs): the general way, its PRP list in the CMB */
	c.sgls = 0;
	c.io[0].lean_max = 0; /* (what a bring-up of a drive without SGLs sets: qpair_alloc) */
	const struct nvme_sg prp = sg_cmb(off + 65536, 16384);
	uint64_t device_lists = c.st.list_bytes[MEM_CLASS_DEVICE], host_lists = c.st.list_bytes[MEM_CLASS_HOST];
	cmb_round_trip(300, &prp, 1, 16384, 32);
	cr_assert_eq(f.last_psdt, 0, "PRPs");
	cr_assert_eq(c.st.list_bytes[MEM_CLASS_DEVICE] - device_lists, 2 * 3 * 8, "two PRP lists of 3 in the CMB");
	cr_assert_eq(c.st.list_bytes[MEM_CLASS_HOST], host_lists);
	free(h);
}

Test(ctrl, sq_in_cmb_can_be_turned_off)
{
	init_with_a_cmb_and_the_sq_in_dram();
	cr_assert_eq(c.cmb.sqs_in_cmb, 0);
	cr_assert_eq(c.io[0].sq_addr.cls, MEM_CLASS_HOST);
	cr_assert_eq(c.cmb.reserved, 0);
	fill(f.cmb, 4096, 9);
	struct nvme_sg sg = sg_cmb(0, 4096);
	cr_assert_eq(nvme_write(&c, 1, 8, 8, &sg, 1), 0);
	cr_assert_eq(memcmp(f.media + 8 * 512, f.cmb, 4096), 0);
}

Test(ctrl, cmse_zero_is_detected_and_cmb_io_refused)
{
	enable_v14_cmb();
	f.ignore_cmse = true; /* CMSE never sticks: the drive would move no data */
	cr_assert_eq(nvme_ctrl_init(&c, "nvme0", &f.bus, 1), 0);
	cr_assert_eq(c.cmb.scheme, NVME_CMB_V14);
	cr_assert_not(c.cmb.usable);
	cr_assert_not_null(strstr(c.cmb.refused, "CMSE"));
	struct nvme_sg sg = sg_cmb(0, 4096);
	unsigned before = f.commands;
	cr_assert_eq(nvme_write(&c, 1, 0, 8, &sg, 1), -EINVAL);
	cr_assert_eq(nvme_read(&c, 1, 0, 8, &sg, 1), -EINVAL);
	cr_assert_eq(f.commands, before, "never sent");
	cr_assert_eq(f.cmb_silent_drops, 0);
}

Test(ctrl, legacy_cmb_registers_valid_from_reset)
{
	f.vs = NVME_VS(1, 3);
	f.cmbloc = 2;
	f.cmbsz = 0x0000421d;
	f.cmse = true; /* legacy: CMB addresses always decoded */
	cr_assert_eq(nvme_ctrl_init(&c, "nvme0", &f.bus, 1), 0);
	cr_assert_eq(c.cmb.scheme, NVME_CMB_LEGACY);
	cr_assert(c.cmb.usable);
	cr_assert_eq(c.cmb.bus, (uint64_t)(uintptr_t)f.cmb);
	fill(f.cmb + (2u << 20), 4096, 8);
	struct nvme_sg sg = sg_cmb(2u << 20, 4096);
	cr_assert_eq(nvme_write(&c, 1, 0, 8, &sg, 1), 0);
	cr_assert_eq(memcmp(f.media, f.cmb + (2u << 20), 4096), 0);
}

Test(ctrl, one_command_never_mixes_cmb_and_host_memory)
{
	enable_v14_cmb();
	cr_assert_eq(nvme_ctrl_init(&c, "nvme0", &f.bus, 1), 0);
	uint8_t *h = aligned_alloc(4096, 4096);
	struct nvme_sg mix[2] = { sg_cmb(2u << 20, 2048), sg_host(h, 2048) };
	unsigned before = f.commands;
	cr_assert_eq(nvme_write(&c, 1, 0, 8, mix, 2), -EINVAL);
	/* same class (device) but straddling the CMB's end */
	struct nvme_sg straddle = sg_cmb(FAKE_CMB_SIZE - 2048, 4096);
	cr_assert_eq(nvme_write(&c, 1, 0, 8, &straddle, 1), -EINVAL);
	cr_assert_eq(f.commands, before);
	free(h);
}

/* A route's owner check (nvme_rw_route.check, the target's backend's): how often, what it answers. */
static unsigned route_checks;
static int route_check_rc;
static int route_check(struct nvme_rw_route *rt)
{
	route_checks++;
	if (route_check_rc == 0)
		rt->gen = rt->c->gen;
	return route_check_rc;
}

/* One Read of 4 KiB at slba through rt, polled to its completion: nvme_submit_rw's answer. */
static int route_read(struct nvme_rw_route *rt, uint64_t slba, const struct nvme_sg *sg)
{
	unsigned before = rw_done_count;
	int rc = nvme_submit_rw(rt, slba, 7, (struct nvme_rw_data){ sg, 1, false, true }, NULL);
	for (int i = 0; rc == 0 && i < 100 && rw_done_count == before; i++)
		nvme_qpair_poll(&c.io[0], 16);
	if (rc == 0)
		cr_assert_eq(rw_done_count, before + 1, "completed");
	return rc;
}

/* nvme_submit_rw runs the route's check before a command only while the controller's gen is
 * not the one of its last pass (the target's backend checks its namespace there once per
 * change of the controller, not per command); its refusal is the command's, through the
 * route's refused, nothing sent. */
Test(ctrl, the_route_s_check_runs_once_per_change_of_the_controller)
{
	cr_assert_eq(nvme_ctrl_init(&c, "nvme0", &f.bus, 1), 0);
	uint8_t *b = aligned_alloc(4096, 4096);
	const struct nvme_sg sg = sg_host(b, 4096);
	struct nvme_rw_route rt = rw_route;
	rt.check = route_check;
	rt.gen = c.gen - 1;
	route_checks = 0;
	route_check_rc = 0;
	cr_assert_eq(route_read(&rt, 0, &sg), 0);
	cr_assert_eq(route_checks, 1, "checked at the first command");
	cr_assert_eq(route_read(&rt, 8, &sg), 0);
	cr_assert_eq(route_checks, 1, "not again while nothing changed");
	c.gen++; /* (what a reset or a namespace rescan does) */
	route_check_rc = -ENODEV;
	const unsigned sent = f.commands, refused = rw_refused_count;
	cr_assert_eq(nvme_submit_rw(&rt, 0, 7, (struct nvme_rw_data){ &sg, 1, false, true }, NULL), -ENODEV);
	cr_assert_eq(route_checks, 2);
	cr_assert_eq(rw_refused_count, refused + 1);
	cr_assert_eq(rw_refused_rc, -ENODEV);
	cr_assert_eq(f.commands, sent, "nothing sent");
	route_check_rc = 0;
	cr_assert_eq(route_read(&rt, 16, &sg), 0);
	cr_assert_eq(route_read(&rt, 24, &sg), 0);
	cr_assert_eq(route_checks, 3, "checked once after the change");
	free(b);
}

/* A drive's stray second CQE for a command already completed, posted with the first, is
 * read in the same poll and counted as spurious, and so never taken for the next command
 * that gets the same command ID (the free list hands the ID out again at once). A poll
 * that stopped reading the CQ at its last command in flight would leave it there to
 * complete that next command before the drive did (measured and dropped in issue 18). */
Test(ctrl, a_stray_duplicate_completion_never_completes_the_next_command)
{
	cr_assert_eq(nvme_ctrl_init(&c, "nvme0", &f.bus, 1), 0);
	struct nvme_qpair *q = &c.io[0];
	uint8_t *b = aligned_alloc(4096, 4096);
	const struct nvme_sg sg = sg_host(b, 4096);
	f.dup_io_cqe = true;
	const uint16_t head = q->ring.cq_head;
	const unsigned done = rw_done_count;
	const uint16_t cid = q->free_cids[q->nfree - 1];
	cr_assert_eq(nvme_submit_rw(&rw_route, 0, 7, (struct nvme_rw_data){ &sg, 1, true, true }, NULL), 0);
	cr_assert_eq(nvme_qpair_poll(q, 16), 2, "the command's completion and the stray one");
	cr_assert_eq(rw_done_count, done + 1);
	cr_assert_eq(q->st.spurious, 1);
	cr_assert_eq(q->ring.cq_head, (uint16_t)(head + 2));
	f.dup_io_cqe = false;
	f.drop_opc = NVME_CMD_READ; /* the next command is not answered */
	cr_assert_eq(q->free_cids[q->nfree - 1], cid, "the next command gets the same ID");
	cr_assert_eq(nvme_submit_rw(&rw_route, 8, 7, (struct nvme_rw_data){ &sg, 1, false, true }, NULL), 0);
	cr_assert_eq(nvme_qpair_poll(q, 16), 0, "nothing completes it");
	cr_assert_eq(rw_done_count, done + 1);
	cr_assert_eq(q->outstanding, 1);
	cr_assert_eq(q->st.completed, 1);
	f.drop_opc = -1; /* (the held command goes with the controller at teardown) */
	free(b);
}

Test(ctrl, many_commands_wrap_the_rings_and_flip_the_phase)
{
	cr_assert_eq(nvme_ctrl_init(&c, "nvme0", &f.bus, 1), 0);
	uint8_t *b = aligned_alloc(4096, 4096);
	struct nvme_sg sg = sg_host(b, 512);
	for (unsigned i = 0; i < 3 * NVME_IO_DEPTH + 5; i++) {
		memset(b, (int)i, 512);
		cr_assert_eq(nvme_write(&c, 1, i % FAKE_NSZE, 1, &sg, 1), 0, "command %u", i);
		cr_assert_eq(f.media[(i % FAKE_NSZE) * 512 + 7], (uint8_t)i);
	}
	cr_assert_eq(c.io[0].st.completed, 3 * NVME_IO_DEPTH + 5);
	cr_assert_eq(c.io[0].st.spurious, 0);
	free(b);
}

/* The NVMe/TCP target's write: 128 KiB received by the NIC into the CMB in 300 odd-sized
 * fragments, one command gathering them all: the SGL is chained across two list pages, in
 * the CMB (the first address decides), and the controller takes exactly NLB x 512 bytes. */
Test(ctrl, one_command_gathers_300_cmb_fragments_with_a_chained_sgl_in_the_cmb)
{
	enum { N = 300, FRAG = 437, TOTAL = 131072 };
	static struct nvme_sg sg[N];
	enable_v14_cmb();
	cr_assert_eq(nvme_ctrl_init(&c, "nvme0", &f.bus, 1), 0);
	uint64_t off = 3u << 20;
	fill(f.cmb + off, TOTAL + N, 9);
	uint32_t done = 0;
	for (unsigned i = 0; i < N; i++) {
		uint32_t len = i + 1 < N ? FRAG : TOTAL - done;
		sg[i] = sg_cmb(off + done + i, len); /* a gap of one byte between fragments */
		done += len;
	}
	uint64_t list0 = c.st.list_bytes[MEM_CLASS_DEVICE];
	cr_assert_eq(nvme_write(&c, 1, 512, TOTAL / 512, sg, N), 0);
	cr_assert_eq(f.last_status, 0);
	cr_assert_eq(f.last_psdt, NVME_SQE_PSDT_SGL);
	for (unsigned i = 0; i < N; i++)
		cr_assert_eq(memcmp(f.media + 512 * 512 + (size_t)i * FRAG, f.cmb + sg[i].addr.bus - (uint64_t)(uintptr_t)f.cmb,
				    sg[i].len), 0, "fragment %u on the media", i);
	/* 255 data descriptors + a Last Segment pointer in page 1, 45 in page 2 */
	cr_assert_eq(c.st.list_bytes[MEM_CLASS_DEVICE] - list0, (256 + 45) * 16);
	cr_assert_eq(c.st.list_bytes[MEM_CLASS_HOST], 0, "no list in DRAM");
	cr_assert_eq(c.st.payload_bytes[MEM_CLASS_DEVICE], TOTAL);
}
