/*
 * loop.h - the run-to-completion poll loop.
 */
#ifndef CORE_LOOP_H
#define CORE_LOOP_H

/* Budget handed to each poller per pass. */
#define LOOP_POLL_BUDGET 64

/* Halt policy: once the loop has made no progress for idle_after_ns, halt the CPU until
 * the next timer deadline: in IRQ mode (core/idle_policy.h) with the wake-up sources armed,
 * at most sleep_ns when every source that has an arm hook armed it, else quantum_ns (the
 * worst added latency for the work of a source without interrupt); in POLL mode (under
 * load) with the sources masked, at most quantum_ns. quantum_ns = 0 keeps the loop
 * spinning (pure polling, lowest latency, a core always busy). */
void loop_set_idle_policy(uint64_t idle_after_ns, uint64_t quantum_ns, uint64_t sleep_ns);

#define LOOP_IDLE_AFTER_NS_DEFAULT (200 * 1000ull)
#define LOOP_HALT_QUANTUM_NS_DEFAULT (1000 * 1000ull)
#define LOOP_SLEEP_NS_DEFAULT (100 * 1000 * 1000ull)

/* Run every registered poller and the default timer queue, forever. */
void loop_run(void) __attribute__((noreturn));

/* One pass over the pollers and timers; returns the total progress (tests, waits). */
unsigned loop_pass(void);

#endif
