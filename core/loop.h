/*
 * loop.h - the run-to-completion poll loop.
 */
#ifndef CORE_LOOP_H
#define CORE_LOOP_H

/* Budget handed to each poller per pass. */
#define LOOP_POLL_BUDGET 64

/* Halt policy: once the loop has made no progress for a spin window (idle_after_ns; with
 * device wake-ups armed it adapts below that, core/idle_policy.h), arm the wake-up
 * sources and halt the CPU until the next timer deadline or a device interrupt, at most
 * quantum_ns while some source has no interrupt (the worst added latency for its work),
 * at most sleep_ns when every source that has an arm hook armed it. quantum_ns = 0 keeps
 * the loop spinning (pure polling, lowest latency, a core always busy). */
void loop_set_idle_policy(uint64_t idle_after_ns, uint64_t quantum_ns, uint64_t sleep_ns);

#define LOOP_IDLE_AFTER_NS_DEFAULT (200 * 1000ull)
#define LOOP_HALT_QUANTUM_NS_DEFAULT (1000 * 1000ull)
#define LOOP_SLEEP_NS_DEFAULT (100 * 1000 * 1000ull)

/* Run every registered poller and the default timer queue, forever. */
void loop_run(void) __attribute__((noreturn));

/* One pass over the pollers and timers; returns the total progress (tests, waits). */
unsigned loop_pass(void);

#endif
