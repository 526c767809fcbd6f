/*
 * timer.h - one-shot timers run from the poll loop.
 *
 * A timer_queue keeps its timers sorted by their place (at_ns, ties in arming order).
 * timer_queue_run(now) fires every armed timer whose deadline is <= now; a callback may
 * re-arm its own timer or arm and cancel others. Timers are owned by their users
 * (embedded in connections, queues...), so arming never allocates.
 *
 * Re-arming is lazy (as Linux avoids re-arming its retransmission timer): a timer queued
 * at a place no later than its new deadline stays where it is, only deadline_ns moves;
 * when its place comes and the deadline is not reached, the queue puts it back at the
 * deadline without a callback. timer_stop disarms and leaves the timer queued, so that
 * the next arm costs a compare; the place is never later than an armed timer's deadline,
 * so no timer fires late. timer_cancel takes it out (before its memory goes).
 */
#ifndef LIB_TIMER_H
#define LIB_TIMER_H

#include <stdbool.h>
#include <stdint.h>
#include "list.h"

struct timer;
typedef void (*timer_fn)(struct timer *t, void *arg);

struct timer {
	struct list_node node;  /* in the queue while queued */
	uint64_t deadline_ns;   /* when it fires (armed) */
	uint64_t at_ns;         /* its place in the queue (queued): <= deadline_ns while armed */
	timer_fn fn;
	void *arg;
	const char *name;
	bool armed;
	bool queued;            /* in the queue: armed, or stopped and not yet taken out */
};

struct timer_queue {
	struct list_node armed;  /* the queued timers, sorted by at_ns */
	unsigned long n_armed;
	unsigned long n_queued;  /* armed and stopped ones in the list */
	unsigned long fired;     /* callbacks run since init */
};

/* Initialise an empty queue. */
void timer_queue_init(struct timer_queue *q);

/* Initialise a timer (not armed) with its callback. */
void timer_init(struct timer *t, const char *name, timer_fn fn, void *arg);

/* Arm (or re-arm) t to fire at deadline_ns. */
void timer_arm(struct timer_queue *q, struct timer *t, uint64_t deadline_ns);

/* Disarm t if armed and take it out of the queue; returns true if it was armed. */
bool timer_cancel(struct timer_queue *q, struct timer *t);

/* Disarm t if armed, leaving it queued (its place comes to nothing; a later timer_arm
 * costs a compare); returns true if it was armed. timer_cancel before t's memory goes. */
bool timer_stop(struct timer_queue *q, struct timer *t);

/* Fire every timer due at now_ns; returns how many fired. */
unsigned timer_queue_run(struct timer_queue *q, uint64_t now_ns);

/* The earliest place in the queue (no later than the earliest armed deadline; a waiter
 * may wake early for a stopped or lazily re-armed timer), or UINT64_MAX when none. */
uint64_t timer_queue_next_deadline(const struct timer_queue *q);

/* The appliance's queue, run by the poll loop. */
extern struct timer_queue timer_default_queue;

#endif
