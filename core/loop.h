/*
 * loop.h - the run-to-completion poll loop.
 */
#ifndef CORE_LOOP_H
#define CORE_LOOP_H

/* Budget handed to each poller per pass. */
#define LOOP_POLL_BUDGET 64

/* Run every registered poller and the default timer queue, forever. */
void loop_run(void) __attribute__((noreturn));

/* One pass over the pollers and timers; returns the total progress (tests, waits). */
unsigned loop_pass(void);

#endif
