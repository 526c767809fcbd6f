/*
 * loop.h - the run-to-completion poll loop.
 */
#ifndef CORE_LOOP_H
#define CORE_LOOP_H

/* Budget handed to each poller per pass. */
#define LOOP_POLL_BUDGET 64

/* Halt policy (core/kmain.c's loop.* settings; idle_policy.h for the two modes). */
struct loop_idle_config {
	uint64_t spin_ns;       /* IRQ mode: poll this long without work before arming and halting */
	uint64_t poll_spin_ns;  /* POLL mode: the same before a timer halt (0: halt at the first empty pass) */
	uint64_t quantum_ns;    /* the longest halt while a source cannot wake the CPU, and POLL mode's
				 * halt. 0: never halt (pure polling, lowest latency, a core always busy) */
	uint64_t quick_ns;      /* a device wake-up sooner than this after a halt began is load */
	uint64_t sleep_ns;      /* the longest halt when every wake-up source armed */
	unsigned poll_wakes;    /* quick device wake-ups in a row that switch to POLL mode; 0: never */
};

/* Once the loop has made no progress for the mode's spin, halt the CPU until the next timer
 * deadline: in IRQ mode with the wake-up sources armed, at most sleep_ns when every source
 * that has an arm hook armed it, else quantum_ns; in POLL mode with the sources masked, at
 * most quantum_ns. Resets the mode to IRQ. */
void loop_set_idle_policy(const struct loop_idle_config *c);

#define LOOP_SPIN_NS_DEFAULT (20 * 1000ull)
#define LOOP_POLL_SPIN_NS_DEFAULT 0ull
#define LOOP_HALT_QUANTUM_NS_DEFAULT (250 * 1000ull)
#define LOOP_QUICK_NS_DEFAULT (250 * 1000ull)
#define LOOP_SLEEP_NS_DEFAULT (100 * 1000 * 1000ull)

/* Run every registered poller and the default timer queue, forever. */
void loop_run(void) __attribute__((noreturn));

/* One pass over the pollers and timers; returns the total progress (tests, waits). */
unsigned loop_pass(void);

#endif
