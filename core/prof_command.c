/*
 * prof_command.c - `prof`: the in-image sampling profiler on the console. The
 * architecture's timer interrupt records the interrupted program counter into a ring
 * (arch/prof.h); `prof show` counts the samples per address and prints the busiest as
 * "image+0x..." offsets, which tools/symbolize turns into functions and lines
 * (`tools/symbolize --prof` sums them per function).
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

/* What `prof show` works on: a copy of the ring, then one entry per address. */
static struct prof_view {
	uint64_t pcs[ARCH_PROF_RING];
	struct prof_hit hits[ARCH_PROF_RING];
} prof_view;

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

static int prof_show(struct prof_view *v, unsigned limit)
{
	const struct boot_info *bi = kernel_boot_info();
	uint64_t head = arch_prof.head;
	size_t n = head < ARCH_PROF_RING ? (size_t)head : ARCH_PROF_RING, nhits = 0;
	uint64_t end = arch_prof.stop_ns ? arch_prof.stop_ns : clock_now_ns();
	uint64_t ms = arch_prof.start_ns && end > arch_prof.start_ns ? (end - arch_prof.start_ns) / NSEC_PER_MSEC : 0;

	/* a copy: the interrupt may write the ring meanwhile (the oldest samples then mix) */
	memcpy(v->pcs, arch_prof.ring, n * sizeof(v->pcs[0]));
	qsort(v->pcs, n, sizeof(v->pcs[0]), cmp_pc);
	for (size_t i = 0; i < n; i++) {
		if (nhits && v->hits[nhits - 1].pc == v->pcs[i]) {
			v->hits[nhits - 1].count++;
			continue;
		}
		v->hits[nhits].pc = v->pcs[i];
		v->hits[nhits].count = 1;
		nhits++;
	}
	qsort(v->hits, nhits, sizeof(v->hits[0]), cmp_hits);
	printf("prof: %s, %" PRIu64 " samples at %u Hz over %" PRIu64 " ms; %zu kept (the last), %zu addresses\n",
	       arch_prof.on ? "sampling" : "stopped", head, arch_prof.hz, ms, n, nhits);
	for (size_t i = 0; i < nhits && i < limit; i++) {
		const struct prof_hit *h = &v->hits[i];
		unsigned tenths = (unsigned)((uint64_t)h->count * 1000 / n);
		if (bi && h->pc >= bi->image_base && h->pc - bi->image_base < bi->image_size)
			printf("  %7u %3u.%u%%  image+0x%" PRIx64 "\n", h->count, tenths / 10, tenths % 10,
			       h->pc - bi->image_base);
		else
			printf("  %7u %3u.%u%%  0x%" PRIx64 "\n", h->count, tenths / 10, tenths % 10, h->pc);
	}
	return 0;
}

static int prof_command(int argc, char **argv)
{
	int rc;

	if (argc >= 2 && strcmp(argv[1], "start") == 0 && argc <= 3) {
		unsigned long hz = argc == 3 ? strtoul(argv[2], NULL, 10) : PROF_HZ_DEFAULT;
		rc = hz >= ARCH_PROF_HZ_MIN && hz <= ARCH_PROF_HZ_MAX ? arch_prof_start((unsigned)hz) : -EINVAL;
		if (rc == -EINVAL)
			printf("prof: HZ must be %u..%u\n", ARCH_PROF_HZ_MIN, ARCH_PROF_HZ_MAX);
		else if (rc == -EBUSY)
			printf("prof: already sampling (prof stop first)\n");
		else if (rc)
			printf("prof: no sampling timer on this machine (%d)\n", rc);
		else
			printf("prof: sampling at %lu Hz\n", hz);
		return rc;
	}
	if (argc == 2 && strcmp(argv[1], "stop") == 0) {
		arch_prof_stop();
		printf("prof: stopped, %" PRIu64 " samples\n", arch_prof.head);
		return 0;
	}
	if (argc >= 2 && strcmp(argv[1], "show") == 0 && argc <= 3) {
		unsigned long limit = PROF_SHOW_DEFAULT;
		if (argc == 3)
			limit = strcmp(argv[2], "all") == 0 ? ARCH_PROF_RING : strtoul(argv[2], NULL, 10);
		return limit ? prof_show(&prof_view, (unsigned)limit) : -EINVAL;
	}
	return -EINVAL;
}
CONSOLE_COMMAND(prof, "[start [HZ] | stop | show [N|all]]",
		"sampling profiler: the timer records where the CPU is; show the busiest addresses (tools/symbolize --prof)",
		prof_command);
