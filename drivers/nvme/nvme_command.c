/*
 * nvme_command.c - console commands of the NVMe host driver (`nvme ...`) and its `stats`
 * section: list, id-ctrl, id-ns, cmb, read/write/verify with patterns from host-DRAM or CMB
 * buffers, and copy from drive A to drive B through A's CMB (no payload byte in host DRAM).
 *
 * Pattern byte at absolute namespace byte offset o: (seed ^ (o * 7) ^ (o >> 9)) & 0xff, so a
 * test on the host can check the drive's backing file byte for byte.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../../lib/clock.h"
#include "../../lib/command.h"
#include "../../lib/stats.h"
#include "../../mm/mm.h"
#include "../../pci/pci.h"
#include "nvme.h"

#define CMD_CHUNK (128u * 1024u)

static inline uint8_t pattern_byte(unsigned seed, uint64_t o)
{
	return (uint8_t)(seed ^ (o * 7) ^ (o >> 9));
}

static uint64_t pattern_word(unsigned seed, uint64_t o)
{
	uint64_t w = 0;
	for (unsigned k = 0; k < 8; k++)
		w |= (uint64_t)pattern_byte(seed, o + k) << (8 * k);
	return w;
}

static struct nvme_ctrl *ctrl_arg(const char *s)
{
	char *end;
	unsigned long i = strtoul(s, &end, 0);
	if (*end || i >= nvme_count()) {
		printf("no controller %s (nvme list)\n", s);
		return NULL;
	}
	return nvme_at((unsigned)i);
}

static void list_ctrls(void)
{
	char bdf[8];
	for (unsigned i = 0; i < nvme_count(); i++) {
		struct nvme_ctrl *c = nvme_at(i);
		struct pci_dev *d = nvme_pci_dev(c);
		printf("%u %s %s %s mn \"%s\" sn \"%s\" fw \"%s\" ios %u cmb %s\n", i, c->name,
		       d ? pci_bdf_str(d->bdf, bdf) : "-", nvme_ctrl_state_name(c->state), c->mn, c->sn,
		       c->fr, c->nio,
		       c->cmb.scheme == NVME_CMB_NONE ? "none" : c->cmb.usable ? "usable" : "refused");
		for (unsigned n = 0; n < c->nns; n++) {
			struct nvme_ns *ns = &c->ns[n];
			printf("  ns %u: %llu blocks of %u B (%llu MiB)\n", ns->nsid,
			       (unsigned long long)ns->nsze, 1u << ns->lba_shift,
			       (unsigned long long)((ns->nsze << ns->lba_shift) >> 20));
		}
	}
	printf("%u controller(s)\n", nvme_count());
}

static void id_ctrl(struct nvme_ctrl *c)
{
	printf("%s: vid 0x%04x cntlid %u ver %u.%u mn \"%s\" sn \"%s\" fr \"%s\"\n", c->name,
	       le16_load(c->idctrl + NVME_IDC_VID), c->cntlid, c->ver >> 16, (c->ver >> 8) & 0xff, c->mn,
	       c->sn, c->fr);
	printf("  CAP 0x%016llx (MQES %u TO %u ms DSTRD %u) VS 0x%08x\n", (unsigned long long)c->cap,
	       (unsigned)NVME_GET(c->cap, NVME_CAP_MQES) + 1,
	       (unsigned)(c->rdy_timeout_ns / 1000000), c->dstrd, c->vs);
	printf("  mdts %u (max %u KiB/cmd) nn %u oncs 0x%x%s%s sgls 0x%x vwc %u acl %u\n", c->mdts,
	       c->max_xfer >> 10, c->nn, c->oncs, (c->oncs & NVME_ONCS_DSM) ? " DSM" : "",
	       (c->oncs & NVME_ONCS_WRITE_ZEROES) ? " WRITE-ZEROES" : "", c->sgls, c->vwc & 1, c->acl + 1);
	printf("  volatile write cache %s, RTD3E %u us\n", (c->vwc & 1) ? "present" : "absent", c->rtd3e);
	printf("  bring-up %llu us, I/O queues %u x %u entries, timeouts %llu ms + abort %llu ms\n",
	       (unsigned long long)(c->reset_ns / 1000), c->nio, c->io_depth,
	       (unsigned long long)(c->cmd_timeout_ns / 1000000),
	       (unsigned long long)(c->abort_timeout_ns / 1000000));
	if (c->nio)
		printf("  I/O SQ 1 at bus address 0x%llx (%s), %u x 64 B entries\n",
		       (unsigned long long)c->io[0].sq_addr.bus, c->io[0].sq_in_cmb ? "CMB" : "host DRAM",
		       c->io_depth);
}

static void id_ns(struct nvme_ctrl *c)
{
	for (unsigned n = 0; n < c->nns; n++) {
		struct nvme_ns *ns = &c->ns[n];
		printf("%s ns %u: nsze %llu ncap %llu nuse %llu lba %u B ms %u\n", c->name, ns->nsid,
		       (unsigned long long)ns->nsze, (unsigned long long)ns->ncap,
		       (unsigned long long)ns->nuse, 1u << ns->lba_shift, ns->ms);
	}
	if (!c->nns)
		printf("%s: no active namespace\n", c->name);
}

static void show_cmb(struct nvme_ctrl *c)
{
	struct nvme_cmb *m = &c->cmb;
	char uses[40];
	if (m->scheme == NVME_CMB_NONE) {
		printf("%s: no CMB\n", c->name);
		return;
	}
	printf("%s: CMB %s scheme, CMBLOC 0x%08x CMBSZ 0x%08x CMBMSC 0x%016llx\n", c->name,
	       m->scheme == NVME_CMB_V14 ? "1.4" : "legacy", m->info.cmbloc, m->info.cmbsz,
	       (unsigned long long)m->cmbmsc);
	printf("  BAR%u offset 0x%llx bus 0x%llx size %llu MiB (unit %llu KiB) uses %s\n", m->info.bir,
	       (unsigned long long)m->info.offset, (unsigned long long)m->bus,
	       (unsigned long long)(m->size >> 20), (unsigned long long)(m->info.unit >> 10),
	       nvme_cmb_uses_str(&m->info, uses, sizeof(uses)));
	printf("  %s%s\n", m->usable ? "usable (CMSE verified)" : "refused: ", m->usable ? "" : m->refused);
	if (m->usable)
		printf("  I/O SQs in CMB: %u (%llu KiB at its start, not published)\n", m->sqs_in_cmb,
		       (unsigned long long)(m->reserved >> 10));
	struct p2p_provider *p = nvme_pci_cmb_provider(c);
	if (p)
		printf("  published as P2P memory: free %llu KiB of %llu KiB\n",
		       (unsigned long long)(p2p_provider_free_bytes(p) >> 10), (unsigned long long)(p->size >> 10));
}

/* A chunk buffer in host DRAM or in c's CMB. */
struct buf {
	bool cmb;
	struct p2p_provider *p;
	uint8_t *cpu;
	dma_addr_t addr;
	uint32_t bytes;
};

static int buf_get(struct buf *b, struct nvme_ctrl *c, bool cmb, uint32_t bytes)
{
	memset(b, 0, sizeof(*b));
	b->cmb = cmb;
	b->bytes = bytes;
	if (cmb) {
		void *cpu;
		b->p = nvme_pci_cmb_provider(c);
		if (!b->p) {
			printf("%s: no usable CMB (%s)\n", c->name, c->cmb.refused ? c->cmb.refused : "none");
			return -ENODEV;
		}
		int rc = p2p_alloc(b->p, bytes, &b->addr, &cpu);
		b->cpu = cpu;
		return rc;
	}
	b->cpu = mm_alloc_pages(bytes / 4096, 1);
	if (!b->cpu)
		return -ENOMEM;
	b->addr = dma_addr_host(b->cpu);
	return 0;
}

static void buf_put(struct buf *b)
{
	if (b->cmb && b->p)
		p2p_free(b->p, b->addr, b->bytes);
	else if (b->cpu)
		mm_free_pages(b->cpu, b->bytes / 4096);
}

/* Queue-entry DMA of every controller (SQEs, CQEs): not payload. */
static uint64_t queue_dma(enum mem_class cls)
{
	uint64_t n = 0;
	for (unsigned i = 0; i < nvme_count(); i++)
		n += nvme_at(i)->st.queue_bytes[cls];
	return n;
}

/* DMA of payloads and their PRP/SGL lists in host DRAM (the queue entries apart). */
static uint64_t host_dma(void)
{
	const struct dma_counters *d = dma_counters();
	return d->dma_bytes[MEM_CLASS_HOST][DMA_TO_DEVICE] + d->dma_bytes[MEM_CLASS_HOST][DMA_FROM_DEVICE] -
	       queue_dma(MEM_CLASS_HOST);
}

static uint64_t dev_dma(void)
{
	const struct dma_counters *d = dma_counters();
	return d->dma_bytes[MEM_CLASS_DEVICE][DMA_TO_DEVICE] + d->dma_bytes[MEM_CLASS_DEVICE][DMA_FROM_DEVICE] -
	       queue_dma(MEM_CLASS_DEVICE);
}

/* write / read / verify N slba nlb [seed] [cmb] [fua]: fua sends the writes with CDW12.FUA */
static int rwv(int argc, char **argv, int op)
{
	if (argc < 5)
		return -EINVAL;
	struct nvme_ctrl *c = ctrl_arg(argv[2]);
	if (!c)
		return -ENODEV;
	uint64_t slba = strtoull(argv[3], NULL, 0);
	uint64_t nlb = strtoull(argv[4], NULL, 0);
	unsigned seed = 0;
	bool cmb = false, fua = false;
	for (int i = 5; i < argc; i++) {
		if (!strcmp(argv[i], "cmb"))
			cmb = true;
		else if (!strcmp(argv[i], "fua") && op == 'w')
			fua = true;
		else
			seed = (unsigned)strtoul(argv[i], NULL, 0) & 0xff;
	}
	struct nvme_ns *ns = nvme_ns_get(c, 1);
	if (!ns)
		return -ENODEV;
	unsigned shift = ns->lba_shift;
	uint32_t chunk = c->max_xfer < CMD_CHUNK ? c->max_xfer : CMD_CHUNK;
	struct buf b;
	int rc = buf_get(&b, c, cmb, chunk);
	if (rc)
		return rc;
	uint64_t h0 = host_dma(), d0 = dev_dma(), t0 = clock_now_ns(), bad = 0, first_bad = 0;
	uint64_t done = 0;
	while (done < nlb) {
		uint32_t n = (uint32_t)((nlb - done) < (chunk >> shift) ? (nlb - done) : (chunk >> shift));
		uint64_t base = (slba + done) << shift;
		uint32_t bytes = n << shift;
		struct nvme_sg sg = { b.addr, bytes };
		if (op == 'w') {
			volatile uint64_t *w = (volatile uint64_t *)b.cpu;
			for (uint32_t k = 0; k < bytes / 8; k++)
				w[k] = pattern_word(seed, base + 8ull * k);
			dma_account_cpu(b.addr.cls, bytes);
			rc = fua ? nvme_write_fua(c, 1, slba + done, n, &sg, 1) : nvme_write(c, 1, slba + done, n, &sg, 1);
		} else {
			rc = nvme_read(c, 1, slba + done, n, &sg, 1);
			if (rc == 0 && op == 'v') {
				volatile uint64_t *w = (volatile uint64_t *)b.cpu;
				for (uint32_t k = 0; k < bytes / 8; k++)
					if (w[k] != pattern_word(seed, base + 8ull * k)) {
						if (!bad)
							first_bad = base + 8ull * k;
						bad++;
					}
				dma_account_cpu(b.addr.cls, bytes);
			}
		}
		if (rc) {
			printf("%s: lba %llu: %s failed: %d\n", c->name, (unsigned long long)(slba + done),
			       op == 'w' ? "write" : "read", rc);
			break;
		}
		done += n;
	}
	uint64_t us = (clock_now_ns() - t0) / 1000;
	buf_put(&b);
	if (rc)
		return rc;
	uint64_t bytes = nlb << shift;
	printf("%s: %s %llu B%s from %s buffer in %llu us (%llu KB/s): host-dram-dma %llu B device-dma %llu B\n",
	       c->name, op == 'w' ? "wrote" : op == 'r' ? "read" : "verified", (unsigned long long)bytes,
	       fua ? " with FUA" : "",
	       cmb ? "cmb" : "host", (unsigned long long)us,
	       (unsigned long long)(us ? bytes * 1000 / us : 0), (unsigned long long)(host_dma() - h0),
	       (unsigned long long)(dev_dma() - d0));
	if (op == 'v') {
		if (bad) {
			printf("verify: MISMATCH in %llu words, first at byte %llu\n", (unsigned long long)bad,
			       (unsigned long long)first_bad);
			return -EILSEQ;
		}
		printf("verify: ok\n");
	}
	return 0;
}

/* copy A B slba nlb [dslba]: read A into A's CMB, write B from there. */
static int copy(int argc, char **argv)
{
	char why[120];
	if (argc < 6)
		return -EINVAL;
	struct nvme_ctrl *a = ctrl_arg(argv[2]), *bc = ctrl_arg(argv[3]);
	if (!a || !bc)
		return -ENODEV;
	uint64_t slba = strtoull(argv[4], NULL, 0), nlb = strtoull(argv[5], NULL, 0);
	uint64_t dslba = argc > 6 ? strtoull(argv[6], NULL, 0) : slba;
	struct nvme_ns *na = nvme_ns_get(a, 1), *nb = nvme_ns_get(bc, 1);
	if (!na || !nb)
		return -ENODEV;
	if (na->lba_shift != nb->lba_shift)
		return -EINVAL;
	struct p2p_provider *p = nvme_pci_cmb_provider(a);
	if (!p) {
		printf("%s: no published CMB to copy through\n", a->name);
		return -ENODEV;
	}
	struct p2p_verdict v;
	if (p2p_dev_distance(p->dev, nvme_pci_dev(bc), &v) < 0) {
		printf("copy refused: %s\n", p2p_verdict_str(&v, why, sizeof(why)));
		return -EPERM;
	}
	unsigned shift = na->lba_shift;
	uint32_t xfer = a->max_xfer < bc->max_xfer ? a->max_xfer : bc->max_xfer;
	uint32_t chunk = xfer < CMD_CHUNK ? xfer : CMD_CHUNK;
	struct buf b;
	int rc = buf_get(&b, a, true, chunk);
	if (rc)
		return rc;
	uint64_t h0 = host_dma(), d0 = dev_dma(), t0 = clock_now_ns(), done = 0;
	while (done < nlb) {
		uint32_t n = (uint32_t)((nlb - done) < (chunk >> shift) ? (nlb - done) : (chunk >> shift));
		struct nvme_sg sg = { b.addr, n << shift };
		if ((rc = nvme_read(a, 1, slba + done, n, &sg, 1)) ||
		    (rc = nvme_write(bc, 1, dslba + done, n, &sg, 1))) {
			printf("copy: lba %llu failed: %d\n", (unsigned long long)(slba + done), rc);
			break;
		}
		done += n;
	}
	uint64_t us = (clock_now_ns() - t0) / 1000;
	buf_put(&b);
	if (rc)
		return rc;
	uint64_t bytes = nlb << shift;
	printf("copied %llu B %s -> %s through %s's CMB (%s) in %llu us (%llu KB/s): host-dram-dma %llu B device-dma %llu B\n",
	       (unsigned long long)bytes, a->name, bc->name, a->name, p2p_verdict_str(&v, why, sizeof(why)),
	       (unsigned long long)us, (unsigned long long)(us ? bytes * 1000 / us : 0),
	       (unsigned long long)(host_dma() - h0), (unsigned long long)(dev_dma() - d0));
	return 0;
}

/* bench N read|write BYTES COUNT [cmb]: COUNT commands of BYTES each at queue depth 1,
 * random LBAs below 1 GiB (or the namespace end) for blocks under 64 KiB, sequential
 * otherwise; the buffer is reused (its contents are not checked: use verify for that). */
static int bench(int argc, char **argv)
{
	if (argc < 6)
		return -EINVAL;
	struct nvme_ctrl *c = ctrl_arg(argv[2]);
	if (!c)
		return -ENODEV;
	bool write = !strcmp(argv[3], "write");
	if (!write && strcmp(argv[3], "read"))
		return -EINVAL;
	uint32_t bytes = (uint32_t)strtoul(argv[4], NULL, 0);
	uint64_t count = strtoull(argv[5], NULL, 0);
	bool cmb = argc > 6 && !strcmp(argv[6], "cmb");
	struct nvme_ns *ns = nvme_ns_get(c, 1);
	if (!ns)
		return -ENODEV;
	unsigned shift = ns->lba_shift;
	if (bytes == 0 || bytes % 4096 || bytes > c->max_xfer || count == 0) {
		printf("bench: size must be a multiple of 4096 up to %u, count > 0\n", c->max_xfer);
		return -EINVAL;
	}
	uint32_t nlb = bytes >> shift;
	uint64_t span = ns->nsze / nlb; /* whole blocks that fit */
	if (span == 0)
		return -ERANGE;
	struct buf b;
	int rc = buf_get(&b, c, cmb, bytes);
	if (rc)
		return rc;
	struct nvme_sg sg = { b.addr, bytes };
	uint64_t x = 0x9e3779b97f4a7c15ull, h0 = host_dma(), d0 = dev_dma(), t0 = clock_now_ns();
	for (uint64_t i = 0; i < count && rc == 0; i++) {
		uint64_t blk;
		if (bytes < 65536) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			blk = x % span;
		} else {
			blk = i % span;
		}
		rc = write ? nvme_write(c, 1, blk * nlb, nlb, &sg, 1) : nvme_read(c, 1, blk * nlb, nlb, &sg, 1);
	}
	uint64_t ns_elapsed = clock_now_ns() - t0;
	buf_put(&b);
	if (rc) {
		printf("bench: I/O failed: %d\n", rc);
		return rc;
	}
	uint64_t total = count * bytes;
	printf("bench %s: %s %u B x %llu from %s buffer: %llu IOPS, %llu KB/s, %llu us/IO, "
	       "host-dram-dma %llu B device-dma %llu B\n", c->name, write ? "write" : "read", bytes,
	       (unsigned long long)count, cmb ? "cmb" : "host",
	       (unsigned long long)(count * 1000000000ull / (ns_elapsed ? ns_elapsed : 1)),
	       (unsigned long long)(total * 1000000ull / (ns_elapsed ? ns_elapsed : 1)),
	       (unsigned long long)(ns_elapsed / 1000 / count), (unsigned long long)(host_dma() - h0),
	       (unsigned long long)(dev_dma() - d0));
	return 0;
}

static int nvme_command(int argc, char **argv)
{
	if (argc < 2 || !strcmp(argv[1], "list")) {
		list_ctrls();
		return 0;
	}
	const char *sub = argv[1];
	if (!strcmp(sub, "id-ctrl") || !strcmp(sub, "id-ns") || !strcmp(sub, "cmb")) {
		if (argc < 3)
			return -EINVAL;
		struct nvme_ctrl *c = ctrl_arg(argv[2]);
		if (!c)
			return -ENODEV;
		if (sub[0] == 'c')
			show_cmb(c);
		else if (!strcmp(sub, "id-ns"))
			id_ns(c);
		else
			id_ctrl(c);
		return 0;
	}
	if (!strcmp(sub, "write"))
		return rwv(argc, argv, 'w');
	if (!strcmp(sub, "read"))
		return rwv(argc, argv, 'r');
	if (!strcmp(sub, "verify"))
		return rwv(argc, argv, 'v');
	if (!strcmp(sub, "copy"))
		return copy(argc, argv);
	if (!strcmp(sub, "reset")) {
		struct nvme_ctrl *c = argc > 2 ? ctrl_arg(argv[2]) : NULL;
		if (!c)
			return argc > 2 ? -ENODEV : -EINVAL;
		int rc = nvme_ctrl_reset(c, "console");
		printf("%s: reset %s (%llu ms), state %s\n", c->name, rc ? "failed" : "done",
		       (unsigned long long)(c->rec.last_reset_ns / 1000000), nvme_ctrl_state_name(c->state));
		return rc;
	}
	if (!strcmp(sub, "flush") || !strcmp(sub, "shutdown")) {
		struct nvme_ctrl *c = argc > 2 ? ctrl_arg(argv[2]) : NULL;
		if (!c)
			return argc > 2 ? -ENODEV : -EINVAL;
		if (sub[0] == 's')
			return nvme_ctrl_shutdown(c); /* logs its outcome */
		uint32_t nsid = argc > 3 ? (uint32_t)strtoul(argv[3], NULL, 0) : 1;
		int rc = nvme_flush(c, nsid);
		printf("%s: flush nsid %u: %s\n", c->name, nsid, rc ? "failed" : "done");
		return rc;
	}
	if (!strcmp(sub, "bench"))
		return bench(argc, argv);
	return -EINVAL;
}
CONSOLE_COMMAND(nvme, "[list | id-ctrl N | id-ns N | cmb N | write|read|verify N SLBA NLB [SEED] [cmb] [fua] | copy A B SLBA NLB [DSLBA] | bench N read|write BYTES COUNT [cmb] | flush N [NSID] | shutdown N | reset N]",
		"NVMe drives: identify, CMB, pattern I/O from host or CMB buffers, P2P copy, flush, shutdown notification, controller reset", nvme_command);

static void nvme_stats_show(void)
{
	uint64_t payload = 0, host = 0;
	for (unsigned i = 0; i < nvme_count(); i++) {
		struct nvme_ctrl *c = nvme_at(i);
		struct nvme_ctrl_stats *s = &c->st;
		struct nvme_qpair_stats *q = &c->io[0].st;
		printf("  %s: reads %llu writes %llu failed %llu payload host-dram %llu B device %llu B lists host-dram %llu B device %llu B queue-entries host-dram %llu B device %llu B timeouts %llu aborts %llu\n",
		       c->name, (unsigned long long)s->reads, (unsigned long long)s->writes,
		       (unsigned long long)s->failed, (unsigned long long)s->payload_bytes[MEM_CLASS_HOST],
		       (unsigned long long)s->payload_bytes[MEM_CLASS_DEVICE],
		       (unsigned long long)s->list_bytes[MEM_CLASS_HOST],
		       (unsigned long long)s->list_bytes[MEM_CLASS_DEVICE],
		       (unsigned long long)s->queue_bytes[MEM_CLASS_HOST],
		       (unsigned long long)s->queue_bytes[MEM_CLASS_DEVICE], (unsigned long long)q->timeouts,
		       (unsigned long long)q->aborts_sent);
		printf("  %s: last error status 0x%03x %s\n", c->name, c->last_error_status,
		       c->last_error_status ? nvme_status_str((uint16_t)(c->last_error_status << 1)) : "-");
		printf("  %s: state %s errors %llu timeouts %llu aborts %llu lost %llu resets %llu (failed %llu, last %llu ms: %s) cfs %llu removals %llu failed-back %llu\n",
		       c->name, nvme_ctrl_state_name(c->state), (unsigned long long)q->errors,
		       (unsigned long long)q->timeouts, (unsigned long long)q->aborts_sent,
		       (unsigned long long)q->lost, (unsigned long long)c->rec.resets,
		       (unsigned long long)c->rec.reset_failures,
		       (unsigned long long)(c->rec.last_reset_ns / 1000000),
		       c->rec.last_reason ? c->rec.last_reason : "-", (unsigned long long)c->rec.cfs,
		       (unsigned long long)c->rec.removals, (unsigned long long)c->rec.failed_back);
		printf("  %s: durability vwc %u fua %llu flushes %llu shutdown %s\n", c->name, c->vwc & 1,
		       (unsigned long long)s->fua, (unsigned long long)s->flushes_sent,
		       c->state != NVME_CTRL_SHUTDOWN ? "no" : c->shutdown_rc ? "failed" : "complete");
		payload += s->payload_bytes[MEM_CLASS_HOST] + s->payload_bytes[MEM_CLASS_DEVICE];
		host += s->payload_bytes[MEM_CLASS_HOST];
	}
	printf("  nvme host-dram bytes per payload byte: %llu.%03llu\n",
	       (unsigned long long)(payload ? host / payload : 0),
	       (unsigned long long)(payload ? (host % payload) * 1000 / payload : 0));
}
STATS_SECTION(nvme, nvme_stats_show);
