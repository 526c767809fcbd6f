/*
 * prof_command.c - `prof`: the in-image sampling profiler on the console. The
 * architecture's timer interrupt records the interrupted program counter into a ring
 * (arch/prof.h); `prof show` counts the samples per address and prints the busiest as
 * "image+0x..." offsets, which tools/symbolize turns into functions and lines
 * (`tools/symbolize --prof` sums them per function). The ring is allocated at `prof start`
 * and turned into the summary at `prof stop` (the image holds no sample storage).
 *
 *   prof start [HZ]   sample HZ times a second (default 1000) from now, ring emptied
 *   prof stop         stop sampling (the samples stay)
 *   prof show [N|all] the N busiest addresses (default 100), with counts and shares
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../arch/arch.h"
#include "../arch/prof.h"
#include "../lib/clock.h"
#include "../lib/command.h"
#include "kernel.h"

#define PROF_HZ_DEFAULT 1000u
#define PROF_SHOW_DEFAULT 100u

struct prof_hit {
	uint64_t pc;
	uint32_t count;
};

/* The profiler's memory, none of it in the image: the ring while sampling (ARCH_PROF_RING
 * program counters, allocated at `prof start`, freed at `prof stop`), then the last run's
 * summary (one entry per distinct address, at most ARCH_PROF_RING) until the next start. */
static struct prof_state {
	uint64_t *ring;
	struct prof_hit *hits;
	size_t nhits;
	size_t nsamples;              /* samples the summary counts */
} prof_state;

static int cmp_pc(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static int cmp_hits(const void *a, const void *b)
{
	const struct prof_hit *x = a, *y = b;
	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return x->pc < y->pc ? -1 : x->pc > y->pc;
}

/* Count the n program counters of pcs (sorted here, in place) per address into a new
 * array, busiest first: *out (free it) and the number of entries, or -ENOMEM. */
static int prof_summarise(uint64_t *pcs, size_t n, struct prof_hit **out, size_t *nout)
{
	size_t distinct = 0, k = 0;
	struct prof_hit *hits;

	qsort(pcs, n, sizeof(pcs[0]), cmp_pc);
	for (size_t i = 0; i < n; i++)
		distinct += i == 0 || pcs[i] != pcs[i - 1];
	hits = malloc((distinct ? distinct : 1) * sizeof(*hits));
	if (!hits)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		if (k && hits[k - 1].pc == pcs[i]) {
			hits[k - 1].count++;
			continue;
		}
		hits[k].pc = pcs[i];
		hits[k].count = 1;
		k++;
	}
	qsort(hits, k, sizeof(hits[0]), cmp_hits);
	*out = hits;
	*nout = k;
	return 0;
}

static void prof_print(const struct prof_hit *hits, size_t nhits, size_t n, unsigned limit)
{
	const struct boot_info *bi = kernel_boot_info();
	uint64_t end = arch_prof.stop_ns ? arch_prof.stop_ns : clock_now_ns();
	uint64_t ms = arch_prof.start_ns && end > arch_prof.start_ns ? (end - arch_prof.start_ns) / NSEC_PER_MSEC : 0;

	printf("prof: %s, %" PRIu64 " samples at %u Hz over %" PRIu64 " ms; %zu kept (the last), %zu addresses\n",
	       arch_prof.on ? "sampling" : "stopped", arch_prof.head, arch_prof.hz, ms, n, nhits);
	for (size_t i = 0; i < nhits && i < limit; i++) {
		const struct prof_hit *h = &hits[i];
		unsigned tenths = (unsigned)((uint64_t)h->count * 1000 / n);
		if (bi && h->pc >= bi->image_base && h->pc - bi->image_base < bi->image_size)
			printf("  %7u %3u.%u%%  image+0x%" PRIx64 "\n", h->count, tenths / 10, tenths % 10,
			       h->pc - bi->image_base);
		else
			printf("  %7u %3u.%u%%  0x%" PRIx64 "\n", h->count, tenths / 10, tenths % 10, h->pc);
	}
}

static size_t prof_kept(void)
{
	return arch_prof.head < ARCH_PROF_RING ? (size_t)arch_prof.head : ARCH_PROF_RING;
}

static int prof_show(struct prof_state *p, unsigned limit)
{
	struct prof_hit *hits = NULL;
	uint64_t *pcs = NULL;
	size_t n, nhits;
	int rc;

	if (!arch_prof.on) {
		prof_print(p->hits, p->nhits, p->nsamples, limit);
		return 0;
	}
	/* while sampling: summarise a copy (the interrupt keeps writing the ring; the oldest
	 * samples may then mix), both freed before returning */
	n = prof_kept();
	pcs = malloc((n ? n : 1) * sizeof(*pcs));
	if (!pcs)
		return -ENOMEM;
	memcpy(pcs, p->ring, n * sizeof(*pcs));
	rc = prof_summarise(pcs, n, &hits, &nhits);
	if (rc)
		goto cleanup;
	prof_print(hits, nhits, n, limit);
	free(hits);
cleanup:
	free(pcs);
	return rc;
}

/* Stop sampling: the ring becomes the summary and is freed. */
static int prof_stop(struct prof_state *p)
{
	int rc;

	if (!arch_prof.on)
		return 0;
	arch_prof_stop();
	p->nsamples = prof_kept();
	rc = prof_summarise(p->ring, p->nsamples, &p->hits, &p->nhits);
	if (rc)
		p->nhits = p->nsamples = 0;
	free(p->ring);
	p->ring = NULL;
	return rc;
}

static int prof_start(struct prof_state *p, unsigned hz)
{
	int rc;

	if (arch_prof.on)
		return -EBUSY;
	free(p->hits);
	p->hits = NULL;
	p->nhits = p->nsamples = 0;
	p->ring = malloc(ARCH_PROF_RING * sizeof(*p->ring));
	if (!p->ring)
		return -ENOMEM;
	rc = arch_prof_start(hz, p->ring);
	if (rc) {
		free(p->ring);
		p->ring = NULL;
	}
	return rc;
}

static int prof_command(int argc, char **argv)
{
	int rc;

	if (argc >= 2 && strcmp(argv[1], "start") == 0 && argc <= 3) {
		unsigned long hz = argc == 3 ? strtoul(argv[2], NULL, 10) : PROF_HZ_DEFAULT;
		rc = hz >= ARCH_PROF_HZ_MIN && hz <= ARCH_PROF_HZ_MAX ? prof_start(&prof_state, (unsigned)hz) : -EINVAL;
		if (rc == -EINVAL)
			printf("prof: HZ must be %u..%u\n", ARCH_PROF_HZ_MIN, ARCH_PROF_HZ_MAX);
		else if (rc == -EBUSY)
			printf("prof: already sampling (prof stop first)\n");
		else if (rc == -ENOMEM)
			printf("prof: no memory for the sample ring\n");
		else if (rc)
			printf("prof: no sampling timer on this machine (%d)\n", rc);
		else
			printf("prof: sampling at %lu Hz\n", hz);
		return rc;
	}
	if (argc == 2 && strcmp(argv[1], "stop") == 0) {
		rc = prof_stop(&prof_state);
		printf("prof: stopped, %" PRIu64 " samples%s\n", arch_prof.head,
		       rc ? " (no memory for the summary: samples lost)" : "");
		return rc;
	}
	if (argc >= 2 && strcmp(argv[1], "show") == 0 && argc <= 3) {
		unsigned long limit = PROF_SHOW_DEFAULT;
		if (argc == 3)
			limit = strcmp(argv[2], "all") == 0 ? ARCH_PROF_RING : strtoul(argv[2], NULL, 10);
		return limit ? prof_show(&prof_state, (unsigned)limit) : -EINVAL;
	}
	return -EINVAL;
}
CONSOLE_COMMAND(prof, "[start [HZ] | stop | show [N|all]]",
		"sampling profiler: the timer records where the CPU is; show the busiest addresses (tools/symbolize --prof)",
		prof_command);
