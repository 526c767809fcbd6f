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
	q->fired = 0;
}

/* Initialise an unarmed timer. */
void timer_init(struct timer *t, const char *name, timer_fn fn, void *arg)
{
	list_init(&t->node);
	t->deadline_ns = 0;
	t->fn = fn;
	t->arg = arg;
	t->name = name;
	t->armed = false;
}

/* Arm t at deadline_ns, after any armed timer with the same or an earlier deadline. */
void timer_arm(struct timer_queue *q, struct timer *t, uint64_t deadline_ns)
{
	struct list_node *it;

	if (t->armed) {
		/* re-armed where the new deadline belongs already (after every timer due no
		 * later, before every later one: a keepalive or retransmission timer pushed
		 * back while it is the last): only the deadline changes */
		struct list_node *prev = t->node.prev, *next = t->node.next;
		if ((prev == &q->armed || container_of(prev, struct timer, node)->deadline_ns <= deadline_ns) &&
		    (next == &q->armed || container_of(next, struct timer, node)->deadline_ns > deadline_ns)) {
			t->deadline_ns = deadline_ns;
			return;
		}
	}
	timer_cancel(q, t);
	t->deadline_ns = deadline_ns;
	/* Walk from the tail: new timers are usually the latest. */
	for (it = q->armed.prev; it != &q->armed; it = it->prev) {
		if (container_of(it, struct timer, node)->deadline_ns <= deadline_ns)
			break;
	}
	list_insert_between(&t->node, it, it->next);
	t->armed = true;
	q->n_armed++;
}

/* Disarm t. */
bool timer_cancel(struct timer_queue *q, struct timer *t)
{
	if (!t->armed)
		return false;
	list_del(&t->node);
	t->armed = false;
	q->n_armed--;
	return true;
}

static __attribute__((noinline)) unsigned run_due(struct timer_queue *q, uint64_t now_ns)
{
	unsigned fired = 0;
	unsigned long limit = q->n_armed;

	while (limit-- > 0 && !list_empty(&q->armed)) {
		struct timer *t = container_of(q->armed.next, struct timer, node);
		if (t->deadline_ns > now_ns)
			break;
		timer_cancel(q, t);
		fired++;
		q->fired++;
		t->fn(t, t->arg);
	}
	return fired;
}

/* Fire due timers in deadline order. A timer re-armed for a time <= now by its own
 * callback fires again only on the next call, so one pass is always bounded. A pass
 * with nothing due looks at the first deadline only. */
unsigned timer_queue_run(struct timer_queue *q, uint64_t now_ns)
{
	if (list_empty(&q->armed) || container_of(q->armed.next, struct timer, node)->deadline_ns > now_ns)
		return 0;
	return run_due(q, now_ns);
}

/* Earliest deadline. */
uint64_t timer_queue_next_deadline(const struct timer_queue *q)
{
	if (list_empty(&q->armed))
		return UINT64_MAX;
	return container_of(q->armed.next, struct timer, node)->deadline_ns;
}
