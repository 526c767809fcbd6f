/*
 * timer.h - one-shot timers run from the poll loop.
 *
 * A timer_queue keeps armed timers sorted by deadline (ties in arming order).
 * timer_queue_run(now) fires every timer whose deadline is <= now; a callback may
 * re-arm its own timer or arm and cancel others. Timers are owned by their users
 * (embedded in connections, queues...), so arming never allocates.
 */
#ifndef LIB_TIMER_H
#define LIB_TIMER_H

#include <stdbool.h>
#include <stdint.h>
#include "list.h"

struct timer;
typedef void (*timer_fn)(struct timer *t, void *arg);

struct timer {
	struct list_node node;  /* in the queue while armed */
	uint64_t deadline_ns;
	timer_fn fn;
	void *arg;
	const char *name;
	bool armed;
};

struct timer_queue {
	struct list_node armed;  /* sorted by deadline_ns */
	unsigned long n_armed;
	unsigned long fired;     /* callbacks run since init */
};

/* Initialise an empty queue. */
void timer_queue_init(struct timer_queue *q);

/* Initialise a timer (not armed) with its callback. */
void timer_init(struct timer *t, const char *name, timer_fn fn, void *arg);

/* Arm (or re-arm) t to fire at deadline_ns. */
void timer_arm(struct timer_queue *q, struct timer *t, uint64_t deadline_ns);

/* Disarm t if armed; returns true if it was armed. */
bool timer_cancel(struct timer_queue *q, struct timer *t);

/* Fire every timer due at now_ns; returns how many fired. */
unsigned timer_queue_run(struct timer_queue *q, uint64_t now_ns);

/* Deadline of the earliest armed timer, or UINT64_MAX when none is armed. */
uint64_t timer_queue_next_deadline(const struct timer_queue *q);

/* The appliance's queue, run by the poll loop. */
extern struct timer_queue timer_default_queue;

#endif
