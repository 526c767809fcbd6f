// sources: core/idle_policy.c
/*
 * The poll loop's adaptive spin window: it grows while devices wake the CPU soon after
 * each halt (load), shrinks on long or timer-ended halts (idle), stays within its bounds.
 */
#include <criterion/criterion.h>
#include "core/idle_policy.h"

#define US 1000ull

Test(idle_policy, starts_at_max_with_floor)
{
	struct idle_policy p;
	idle_policy_init(&p, 200 * US);
	cr_assert_eq(idle_policy_spin_ns(&p), 200 * US);
	cr_assert_eq(p.min_ns, 200 * US / IDLE_POLICY_MIN_DIV);
}

Test(idle_policy, idle_shrinks_to_the_floor_and_stays)
{
	struct idle_policy p;
	idle_policy_init(&p, 200 * US);
	uint64_t prev = idle_policy_spin_ns(&p);
	for (int i = 0; i < 100; i++) {
		idle_policy_halted(&p, 1000 * US, false); /* the timer ended a 1 ms halt */
		cr_assert_leq(idle_policy_spin_ns(&p), prev);
		prev = idle_policy_spin_ns(&p);
	}
	cr_assert_eq(idle_policy_spin_ns(&p), p.min_ns);
	cr_assert_eq(p.slow, 100);
	cr_assert_eq(p.quick, 0);
}

Test(idle_policy, long_device_wakes_shrink_too)
{
	struct idle_policy p;
	idle_policy_init(&p, 200 * US);
	idle_policy_halted(&p, IDLE_POLICY_LONG_FACTOR * 200 * US, true);
	cr_assert_eq(idle_policy_spin_ns(&p), 150 * US);
}

Test(idle_policy, load_grows_back_to_max_and_not_beyond)
{
	struct idle_policy p;
	idle_policy_init(&p, 200 * US);
	for (int i = 0; i < 100; i++)
		idle_policy_halted(&p, 5000 * US, false);
	cr_assert_eq(idle_policy_spin_ns(&p), p.min_ns);
	/* a device ends each halt sooner than the window: spinning would have caught it */
	unsigned steps = 0;
	while (idle_policy_spin_ns(&p) < p.max_ns && steps < 100) {
		uint64_t before = idle_policy_spin_ns(&p);
		idle_policy_halted(&p, before / 2, true);
		cr_assert_gt(idle_policy_spin_ns(&p), before);
		steps++;
	}
	cr_assert_eq(idle_policy_spin_ns(&p), p.max_ns);
	cr_assert_leq(steps, 6, "doubling from max/32 takes 5-6 steps, took %u", steps);
	idle_policy_halted(&p, 1 * US, true);
	cr_assert_eq(idle_policy_spin_ns(&p), p.max_ns);
}

Test(idle_policy, middling_wakes_keep_the_window)
{
	struct idle_policy p;
	idle_policy_init(&p, 200 * US);
	idle_policy_halted(&p, 400 * US, true); /* longer than the window, not long */
	cr_assert_eq(idle_policy_spin_ns(&p), 200 * US);
	cr_assert_eq(p.kept, 1);
}

Test(idle_policy, zero_max_means_halt_at_once)
{
	struct idle_policy p;
	idle_policy_init(&p, 0);
	idle_policy_halted(&p, 0, true);
	idle_policy_halted(&p, 10 * US, false);
	cr_assert_eq(idle_policy_spin_ns(&p), 0);
}
