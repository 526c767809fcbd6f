/*
 * timer.c - sorted one-shot timers (see timer.h).
 */
#include "timer.h"

struct timer_queue timer_default_queue = {
	.armed = LIST_HEAD_INIT(timer_default_queue.armed),
};

/* Initialise an empty queue. */
void timer_queue_init(struct timer_queue *q)
{
	list_init(&q->armed);
	q->n_armed = 0;
	q->n_queued = 0;
	q->fired = 0;
}

/* Initialise an unarmed timer. */
void timer_init(struct timer *t, const char *name, timer_fn fn, void *arg)
{
	list_init(&t->node);
	t->deadline_ns = 0;
	t->at_ns = 0;
	t->fn = fn;
	t->arg = arg;
	t->name = name;
	t->armed = false;
	t->queued = false;
}

/* Queue t at at_ns, after every queued timer placed no later. */
static void place(struct timer_queue *q, struct timer *t, uint64_t at_ns)
{
	struct list_node *it;

	t->at_ns = at_ns;
	/* Walk from the tail: new timers are usually the latest. */
	for (it = q->armed.prev; it != &q->armed; it = it->prev) {
		if (container_of(it, struct timer, node)->at_ns <= at_ns)
			break;
	}
	list_insert_between(&t->node, it, it->next);
	t->queued = true;
	q->n_queued++;
}

static void unqueue(struct timer_queue *q, struct timer *t)
{
	list_del(&t->node);
	t->queued = false;
	q->n_queued--;
}

/* Arm t at deadline_ns. A timer queued no later than that (a retransmission or keepalive
 * timer pushed back, one stopped and armed again) keeps its place: only the deadline
 * changes, and its place, when it comes, puts it back at the deadline (run_due). One
 * queued later moves to the deadline, after any timer placed there already. */
void timer_arm(struct timer_queue *q, struct timer *t, uint64_t deadline_ns)
{
	if (!t->armed) {
		t->armed = true;
		q->n_armed++;
	}
	t->deadline_ns = deadline_ns;
	if (t->queued) {
		if (t->at_ns <= deadline_ns)
			return;
		unqueue(q, t);
	}
	place(q, t, deadline_ns);
}

/* Disarm t and take it out of the queue. */
bool timer_cancel(struct timer_queue *q, struct timer *t)
{
	bool was = t->armed;

	if (t->queued)
		unqueue(q, t);
	if (was) {
		t->armed = false;
		q->n_armed--;
	}
	return was;
}

/* Disarm t, left queued (see timer.h). */
bool timer_stop(struct timer_queue *q, struct timer *t)
{
	if (!t->armed)
		return false;
	t->armed = false;
	q->n_armed--;
	return true;
}

/* Every queued timer placed at or before now_ns comes off the queue: a stopped one to
 * nothing, one placed before its deadline back at the deadline (after now_ns: not seen
 * again in this pass; at or before: seen again in deadline order), one placed at its
 * deadline fired. Each timer is put back at most once: at most twice the queue's length
 * of steps. */
static __attribute__((noinline)) unsigned run_due(struct timer_queue *q, uint64_t now_ns)
{
	unsigned fired = 0;
	unsigned long limit = 2 * q->n_queued;

	while (limit-- > 0 && !list_empty(&q->armed)) {
		struct timer *t = container_of(q->armed.next, struct timer, node);
		if (t->at_ns > now_ns)
			break;
		unqueue(q, t);
		if (!t->armed)
			continue;
		if (t->deadline_ns != t->at_ns) {
			place(q, t, t->deadline_ns);
			continue;
		}
		t->armed = false;
		q->n_armed--;
		fired++;
		q->fired++;
		t->fn(t, t->arg);
	}
	return fired;
}

/* Fire due timers in deadline order. A pass takes at most twice the queue's length of
 * steps (run_due), so one pass is always bounded, whatever callbacks arm. A pass
 * with nothing placed at or before now looks at the first place only. */
unsigned timer_queue_run(struct timer_queue *q, uint64_t now_ns)
{
	if (list_empty(&q->armed) || container_of(q->armed.next, struct timer, node)->at_ns > now_ns)
		return 0;
	return run_due(q, now_ns);
}

/* Earliest place (timer.h). */
uint64_t timer_queue_next_deadline(const struct timer_queue *q)
{
	if (list_empty(&q->armed))
		return UINT64_MAX;
	return container_of(q->armed.next, struct timer, node)->at_ns;
}
