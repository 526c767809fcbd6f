/*
 * loop.c - the run-to-completion poll loop: every pass gives each registered poller a
 * budget, then fires due timers. A poller that returns an error is logged once and not
 * called again (the rest of the appliance keeps running).
 */
#include <stdio.h>
#include "../lib/clock.h"
#include "../lib/log.h"
#include "../lib/poller.h"
#include "../lib/stats.h"
#include "../lib/timer.h"
#include "loop.h"

LOG_MODULE_DEFINE(loop);

static uint64_t loop_passes;
static uint64_t loop_idle_passes;

/* One pass. */
unsigned loop_pass(void)
{
	const struct poller *p;
	unsigned progress = 0;

	LINKER_SET_FOREACH(pollers, p) {
		struct poller_stats *s = p->stats;
		if (s->failed)
			continue;
		uint64_t t0 = clock_now_ns();
		int rc = p->poll(LOOP_POLL_BUDGET);
		s->calls++;
		if (rc > 0) {
			s->busy++;
			s->work += (uint64_t)rc;
			s->ns += clock_now_ns() - t0;
			progress += (unsigned)rc;
		} else if (rc < 0) {
			s->failed = rc;
			log_err("poller %s failed (%d) and is stopped", p->name, rc);
		}
	}
	progress += timer_queue_run(&timer_default_queue, clock_now_ns());
	loop_passes++;
	if (!progress)
		loop_idle_passes++;
	return progress;
}

/* Run forever. */
void loop_run(void)
{
	for (;;) {
		if (!loop_pass())
			__asm__ volatile("pause");
	}
}

static void loop_stats_show(void)
{
	const struct poller *p;
	printf("  passes %llu, idle %llu, timers armed %lu, fired %lu\n",
	       (unsigned long long)loop_passes, (unsigned long long)loop_idle_passes,
	       timer_default_queue.n_armed, timer_default_queue.fired);
	LINKER_SET_FOREACH(pollers, p) {
		printf("  poller %-12s calls %llu busy %llu work %llu busy-time %llu us%s\n", p->name,
		       (unsigned long long)p->stats->calls, (unsigned long long)p->stats->busy,
		       (unsigned long long)p->stats->work, (unsigned long long)(p->stats->ns / 1000),
		       p->stats->failed ? " FAILED" : "");
	}
}
STATS_SECTION(loop, loop_stats_show);
