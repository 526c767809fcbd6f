/*
 * loop.c - the run-to-completion poll loop: every pass gives each registered poller a
 * budget, then fires due timers. A poller that returns an error is logged once and not
 * called again (the rest of the appliance keeps running).
 *
 * Idle: in IRQ mode (idle_policy.h), after loop.spin_us (20) without work the loop arms
 * the pollers' wake-up sources (device interrupts, lib/poller.h's arm), polls once more and
 * halts the CPU until the next software timer: up to loop.sleep_ms when every source armed
 * (a device interrupt ends it), loop.halt_us when one cannot. Under load (device wake-ups
 * coming back within loop.quick_us, 250) it goes over to POLL mode: sources masked, and at the
 * first pass without work (loop.poll_spin_us, 0) a halt of loop.halt_us (250) that batches
 * the work, as without interrupts; idle again, it returns to IRQ mode.
 *
 * Why these figures (docs/performance.md, "The idle policy, one ACK per receive batch, and
 * the judge again"): a spin is pure cost in POLL mode, whose halts are there to batch; and a
 * POLL halt adds up to its length to the latency of each step of a lone command (a QD 1 read
 * waits for a halt's end at its arrival and at its drive completion), while under emulation
 * each halt costs the vCPU thread tens of microseconds whatever its length.
 */
#include <stdio.h>
#include "../arch/arch.h"
#include "../lib/clock.h"
#include "../lib/log.h"
#include "../lib/poller.h"
#include "../lib/stats.h"
#include "../lib/timer.h"
#include "../arch/irq.h"
#include "idle_policy.h"
#include "loop.h"

LOG_MODULE_DEFINE(loop);

static uint64_t loop_passes;
static uint64_t loop_idle_passes;
static struct loop_idle_config idle = {
	.spin_ns = LOOP_SPIN_NS_DEFAULT, .poll_spin_ns = LOOP_POLL_SPIN_NS_DEFAULT,
	.quantum_ns = LOOP_HALT_QUANTUM_NS_DEFAULT, .quick_ns = LOOP_QUICK_NS_DEFAULT,
	.sleep_ns = LOOP_SLEEP_NS_DEFAULT, .poll_wakes = IDLE_POLICY_LOAD_WAKES,
};
static struct idle_policy policy = {
	.mode = IDLE_MODE_IRQ, .quick_ns = LOOP_QUICK_NS_DEFAULT, .load_wakes = IDLE_POLICY_LOAD_WAKES,
};
static bool sources_on = true; /* the wake-up sources' interrupts are not masked */
static struct {
	uint64_t armed_halts;     /* halts with at least one wake-up source armed */
	uint64_t device_wakes;    /* halts a device interrupt ended */
	uint64_t raced;           /* arming found work: no halt */
	uint64_t armed_sources;   /* sources armed at the last halt */
	uint64_t sources;         /* pollers with an arm hook (at the last halt) */
	uint64_t long_halts;      /* halts bounded by sleep_ns (every source armed) */
} wake;

/* Set the halt policy. */
void loop_set_idle_policy(const struct loop_idle_config *c)
{
	idle = *c;
	if (idle.sleep_ns < idle.quantum_ns)
		idle.sleep_ns = idle.quantum_ns;
	idle_policy_init(&policy, idle.quick_ns, idle.poll_wakes);
}

/* Arm (or mask) every wake-up source; how many are armed (*sources: how many have a hook). */
static unsigned arm_wake_sources(bool on, uint64_t *sources)
{
	const struct poller *p;
	unsigned n = 0;

	*sources = 0;
	LINKER_SET_FOREACH(pollers, p) {
		if (!p->arm || p->stats->failed)
			continue;
		++*sources;
		if (p->arm(on) == 0)
			n++;
	}
	return n;
}

/* One pass. The clock is read once at the start (poller_pass_now_ns) and again after each
 * poller that did work, whose busy time is counted from the reading before it (so it includes
 * the idle pollers run since then). */
unsigned loop_pass(void)
{
	const struct poller *p;
	unsigned progress = 0;

	poller_pass_now_ns = clock_now_ns();
	LINKER_SET_FOREACH(pollers, p) {
		struct poller_stats *s = p->stats;
		if (s->failed)
			continue;
		int rc = p->poll(LOOP_POLL_BUDGET);
		s->calls++;
		if (rc > 0) {
			uint64_t t1 = clock_now_ns();
			s->busy++;
			s->work += (uint64_t)rc;
			s->ns += t1 - poller_pass_now_ns;
			poller_pass_now_ns = t1;
			progress += (unsigned)rc;
		} else if (rc < 0) {
			s->failed = rc;
			log_err("poller %s failed (%d) and is stopped", p->name, rc);
		}
	}
	progress += timer_queue_run(&timer_default_queue, poller_pass_now_ns);
	loop_passes++;
	if (!progress)
		loop_idle_passes++;
	return progress;
}

/* Run forever; halt when idle long enough (see loop_set_idle_policy and idle_policy.h). */
void loop_run(void)
{
	uint64_t idle_since = clock_now_ns(), slept = 0;
	bool halted = false, by_device = false, armed_halt = false;

	for (;;) {
		unsigned work = loop_pass();
		if (halted) {
			halted = false;
			if (armed_halt || idle_policy_mode(&policy) == IDLE_MODE_POLL)
				idle_policy_halted(&policy, slept, by_device, work != 0);
		}
		if (work) {
			idle_since = poller_pass_now_ns;
			continue;
		}
		uint64_t now = poller_pass_now_ns;
		bool irq_mode = idle_policy_mode(&policy) == IDLE_MODE_IRQ;
		if (!idle.quantum_ns || now - idle_since < (irq_mode ? idle.spin_ns : idle.poll_spin_ns)) {
			arch_cpu_relax();
			continue;
		}
		unsigned armed = 0;
		if (irq_mode) {
			armed = arm_wake_sources(true, &wake.sources);
			wake.armed_sources = armed;
			if (armed && loop_pass()) {
				/* work came between the last pass and the arming */
				wake.raced++;
				idle_since = clock_now_ns();
				continue;
			}
		} else if (sources_on) {
			arm_wake_sources(false, &wake.sources); /* polling under load: masked */
			wake.armed_sources = 0;
		}
		sources_on = irq_mode;
		bool all_armed = armed && armed == wake.sources;
		uint64_t until = now + (all_armed ? idle.sleep_ns : idle.quantum_ns);
		wake.long_halts += all_armed;
		uint64_t next_timer = timer_queue_next_deadline(&timer_default_queue);
		if (next_timer < until)
			until = next_timer;
		/* a device other than the console (typing is no load) */
		uint64_t irqs = arch_irq_total() - arch_console_wakes();
		slept = arch_idle(until);
		by_device = arch_irq_total() - arch_console_wakes() != irqs;
		halted = true;
		armed_halt = armed != 0;
		if (armed) {
			wake.armed_halts++;
			wake.device_wakes += by_device;
		}
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
	printf("  idle halts %llu (%s), halted %llu ms = %llu%% of uptime; policy: halt after %llu us idle "
	       "(polling: %llu us), %llu us at most\n", (unsigned long long)halts, mode,
	       (unsigned long long)(halted_ns / NSEC_PER_MSEC), (unsigned long long)(up ? halted_ns * 100 / up : 0),
	       (unsigned long long)(idle.spin_ns / 1000), (unsigned long long)(idle.poll_spin_ns / 1000),
	       (unsigned long long)(idle.quantum_ns / 1000));
	printf("  wake-ups: mode %s; %llu of %llu sources armed, %llu armed halts (%llu up to %llu ms: all armed), "
	       "%llu ended by a device, %llu arming races; switches to polling %llu, back to interrupts %llu\n",
	       idle_mode_name(idle_policy_mode(&policy)), (unsigned long long)wake.armed_sources,
	       (unsigned long long)wake.sources, (unsigned long long)wake.armed_halts, (unsigned long long)wake.long_halts,
	       (unsigned long long)(idle.sleep_ns / NSEC_PER_MSEC),
	       (unsigned long long)wake.device_wakes, (unsigned long long)wake.raced,
	       (unsigned long long)policy.to_poll, (unsigned long long)policy.to_irq);
	LINKER_SET_FOREACH(pollers, p) {
		printf("  poller %-12s calls %llu busy %llu work %llu busy-time %llu us%s%s\n", p->name,
		       (unsigned long long)p->stats->calls, (unsigned long long)p->stats->busy,
		       (unsigned long long)p->stats->work, (unsigned long long)(p->stats->ns / 1000),
		       p->stats->failed ? " FAILED" : "", p->arm ? " (wake-up source)" : "");
	}
}
STATS_SECTION(loop, loop_stats_show);
