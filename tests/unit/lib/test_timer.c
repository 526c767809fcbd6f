// sources: lib/timer.c
/*
 * Timers: order, ties, cancel, re-arm from a callback, bounded passes, fake clock.
 */
#include <criterion/criterion.h>
#include <string.h>
#include "lib/clock.h"
#include "lib/timer.h"
#include "tests/unit/unit_support.h"

static char order[32];
static size_t norder;

static void record(struct timer *t, void *arg)
{
	(void)t;
	order[norder++] = *(const char *)arg;
}

static void setup(void)
{
	norder = 0;
	memset(order, 0, sizeof(order));
	fake_clock_install();
}

TestSuite(timer, .init = setup);

Test(timer, fire_in_deadline_order_ties_in_arming_order)
{
	struct timer_queue q;
	struct timer a, b, c, d;
	timer_queue_init(&q);
	timer_init(&a, "a", record, "a");
	timer_init(&b, "b", record, "b");
	timer_init(&c, "c", record, "c");
	timer_init(&d, "d", record, "d");
	timer_arm(&q, &a, 300);
	timer_arm(&q, &b, 100);
	timer_arm(&q, &c, 200);
	timer_arm(&q, &d, 100);
	cr_assert_eq(timer_queue_next_deadline(&q), 100);
	cr_assert_eq(timer_queue_run(&q, 99), 0);
	cr_assert_eq(timer_queue_run(&q, 200), 3);
	cr_assert_str_eq(order, "bdc");
	cr_assert_eq(timer_queue_run(&q, 1000), 1);
	cr_assert_str_eq(order, "bdca");
	cr_assert_eq(q.n_armed, 0);
	cr_assert_eq(q.fired, 4);
	cr_assert_eq(timer_queue_next_deadline(&q), UINT64_MAX);
}

Test(timer, cancel_and_rearm)
{
	struct timer_queue q;
	struct timer a, b;
	timer_queue_init(&q);
	timer_init(&a, "a", record, "a");
	timer_init(&b, "b", record, "b");
	timer_arm(&q, &a, 10);
	timer_arm(&q, &b, 20);
	cr_assert(timer_cancel(&q, &a));
	cr_assert_not(timer_cancel(&q, &a), "second cancel is a no-op");
	timer_arm(&q, &b, 5); /* re-arm moves it, never duplicates it */
	cr_assert_eq(q.n_armed, 1);
	cr_assert_eq(timer_queue_run(&q, 100), 1);
	cr_assert_str_eq(order, "b");
}

/* Lazy re-arming (timer.h): a timer pushed back keeps its place and fires at its new
 * deadline, never at the place nor late; a stopped one is queued but never fires, and
 * armed again fires at the new deadline; due ones fire in deadline order. */
Test(timer, lazy_rearm_fires_at_the_deadline_never_early_or_late)
{
	struct timer_queue q;
	struct timer a, b, c;
	timer_queue_init(&q);
	timer_init(&a, "a", record, "a");
	timer_init(&b, "b", record, "b");
	timer_init(&c, "c", record, "c");
	timer_arm(&q, &a, 10);
	timer_arm(&q, &a, 50); /* pushed back: keeps its place at 10 */
	cr_assert_eq(a.deadline_ns, 50);
	cr_assert_leq(timer_queue_next_deadline(&q), 50);
	cr_assert_eq(timer_queue_run(&q, 10), 0, "its place came, not its deadline");
	cr_assert_eq(timer_queue_next_deadline(&q), 50, "back at the deadline");
	cr_assert_eq(timer_queue_run(&q, 49), 0);
	cr_assert_eq(timer_queue_run(&q, 50), 1);
	cr_assert_str_eq(order, "a");
	cr_assert_eq(q.n_armed, 0);
	cr_assert_eq(q.n_queued, 0);

	/* stopped: queued, fires nothing; armed again: fires at the new deadline */
	timer_arm(&q, &b, 20);
	cr_assert(timer_stop(&q, &b));
	cr_assert_not(timer_stop(&q, &b));
	cr_assert_eq(q.n_armed, 0);
	cr_assert_eq(timer_queue_run(&q, 30), 0);
	cr_assert_eq(q.n_queued, 0, "a stopped timer's place came to nothing");
	timer_arm(&q, &b, 40);
	timer_stop(&q, &b);
	timer_arm(&q, &b, 90); /* stopped then armed later: keeps its place at 40 */
	timer_arm(&q, &c, 60);
	cr_assert_eq(timer_queue_run(&q, 59), 0);
	cr_assert_eq(timer_queue_run(&q, 100), 2);
	cr_assert_str_eq(order, "acb", "c (60) before b (90), though b's place was 40");

	/* armed earlier than its place: moves; cancel takes a stopped timer out */
	timer_arm(&q, &c, 200);
	timer_arm(&q, &c, 150);
	cr_assert_eq(timer_queue_next_deadline(&q), 150);
	timer_stop(&q, &c);
	cr_assert_not(timer_cancel(&q, &c));
	cr_assert_eq(q.n_queued, 0);
	cr_assert_eq(timer_queue_next_deadline(&q), UINT64_MAX);
}

static struct timer_queue periodic_q;
static int periodic_count;

static void periodic(struct timer *t, void *arg)
{
	(void)arg;
	periodic_count++;
	timer_arm(&periodic_q, t, clock_now_ns() + 10);
}

Test(timer, callback_rearms_itself_and_each_pass_is_bounded)
{
	struct timer t;
	timer_queue_init(&periodic_q);
	timer_init(&t, "p", periodic, NULL);
	periodic_count = 0;
	timer_arm(&periodic_q, &t, 10);
	fake_clock_set(10);
	cr_assert_eq(timer_queue_run(&periodic_q, clock_now_ns()), 1);
	cr_assert_eq(periodic_count, 1);
	cr_assert_eq(timer_queue_next_deadline(&periodic_q), 20);
	/* Even when the clock jumps far ahead, one pass fires the timer once. */
	fake_clock_set(1000);
	cr_assert_eq(timer_queue_run(&periodic_q, clock_now_ns()), 1);
	cr_assert_eq(periodic_count, 2);
	timer_cancel(&periodic_q, &t);
}

static struct timer_queue cq;
static struct timer victim;

static void cancel_other(struct timer *t, void *arg)
{
	(void)t;
	(void)arg;
	timer_cancel(&cq, &victim);
}

Test(timer, callback_cancels_a_later_due_timer)
{
	struct timer killer;
	timer_queue_init(&cq);
	timer_init(&killer, "k", cancel_other, NULL);
	timer_init(&victim, "v", record, "v");
	timer_arm(&cq, &killer, 1);
	timer_arm(&cq, &victim, 2);
	cr_assert_eq(timer_queue_run(&cq, 10), 1);
	cr_assert_eq(norder, 0, "the cancelled timer must not fire");
	cr_assert_eq(cq.n_armed, 0);
}

Test(timer, clock_without_source_is_zero)
{
	clock_set_source(NULL);
	cr_assert_eq(clock_now_ns(), 0);
	fake_clock_install();
	fake_clock_advance(5 * NSEC_PER_MSEC);
	cr_assert_eq(clock_now_ns(), 5000000);
}
