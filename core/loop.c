/*
 * loop.c - the run-to-completion poll loop: every pass gives each registered poller a
 * budget, then fires due timers. A poller that returns an error is logged once and not
 * called again (the rest of the appliance keeps running).
 */
#include <stdio.h>
#include "../arch/arch.h"
#include "../lib/clock.h"
#include "../lib/log.h"
#include "../lib/poller.h"
#include "../lib/stats.h"
#include "../lib/timer.h"
#include "loop.h"

LOG_MODULE_DEFINE(loop);

static uint64_t loop_passes;
static uint64_t loop_idle_passes;
static uint64_t idle_after_ns = LOOP_IDLE_AFTER_NS_DEFAULT;
static uint64_t halt_quantum_ns = LOOP_HALT_QUANTUM_NS_DEFAULT;

/* Set the halt policy. */
void loop_set_idle_policy(uint64_t after_ns, uint64_t quantum_ns)
{
	idle_after_ns = after_ns;
	halt_quantum_ns = quantum_ns;
}

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

/* Run forever; halt when idle long enough (see loop_set_idle_policy). */
void loop_run(void)
{
	uint64_t idle_since = clock_now_ns();

	for (;;) {
		if (loop_pass()) {
			idle_since = clock_now_ns();
			continue;
		}
		uint64_t now = clock_now_ns();
		if (!halt_quantum_ns || now - idle_since < idle_after_ns) {
			arch_cpu_relax();
			continue;
		}
		uint64_t until = now + halt_quantum_ns;
		uint64_t next_timer = timer_queue_next_deadline(&timer_default_queue);
		if (next_timer < until)
			until = next_timer;
		arch_idle(until);
	}
}

static void loop_stats_show(void)
{
	const struct poller *p;
	uint64_t halts, halted_ns;
	const char *mode;
	arch_idle_stats(&halts, &halted_ns, &mode);
	uint64_t up = clock_now_ns();
	printf("  passes %llu, idle %llu, timers armed %lu, fired %lu\n",
	       (unsigned long long)loop_passes, (unsigned long long)loop_idle_passes,
	       timer_default_queue.n_armed, timer_default_queue.fired);
	printf("  idle halts %llu (%s), halted %llu ms = %llu%% of uptime; policy: halt after %llu us idle, "
	       "%llu us at most\n", (unsigned long long)halts, mode, (unsigned long long)(halted_ns / NSEC_PER_MSEC),
	       (unsigned long long)(up ? halted_ns * 100 / up : 0), (unsigned long long)(idle_after_ns / 1000),
	       (unsigned long long)(halt_quantum_ns / 1000));
	LINKER_SET_FOREACH(pollers, p) {
		printf("  poller %-12s calls %llu busy %llu work %llu busy-time %llu us%s\n", p->name,
		       (unsigned long long)p->stats->calls, (unsigned long long)p->stats->busy,
		       (unsigned long long)p->stats->work, (unsigned long long)(p->stats->ns / 1000),
		       p->stats->failed ? " FAILED" : "");
	}
}
STATS_SECTION(loop, loop_stats_show);
