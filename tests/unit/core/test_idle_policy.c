// sources: core/idle_policy.c
/*
 * The poll loop's sleep policy: interrupts while idle, polling with timer halts under load.
 * Quick device wake-ups in a row switch to polling; empty halts in a row switch back; an
 * isolated quick wake-up, or work found now and then, does not switch.
 */
#include <criterion/criterion.h>
#include "core/idle_policy.h"

#define US 1000ull

Test(idle_policy, starts_on_interrupts)
{
	struct idle_policy p;
	idle_policy_init(&p, 1000 * US, IDLE_POLICY_LOAD_WAKES);
	cr_assert_eq(idle_policy_mode(&p), IDLE_MODE_IRQ);
}

Test(idle_policy, load_switches_to_polling)
{
	struct idle_policy p;
	idle_policy_init(&p, 1000 * US, IDLE_POLICY_LOAD_WAKES);
	for (unsigned i = 0; i + 1 < IDLE_POLICY_LOAD_WAKES; i++) {
		idle_policy_halted(&p, 50 * US, true, true);
		cr_assert_eq(idle_policy_mode(&p), IDLE_MODE_IRQ, "switched after %u wake-ups", i + 1);
	}
	idle_policy_halted(&p, 50 * US, true, true);
	cr_assert_eq(idle_policy_mode(&p), IDLE_MODE_POLL);
	cr_assert_eq(p.to_poll, 1);
}

Test(idle_policy, slow_or_timer_wakes_break_the_run)
{
	struct idle_policy p;
	idle_policy_init(&p, 1000 * US, IDLE_POLICY_LOAD_WAKES);
	for (int round = 0; round < 10; round++) {
		for (unsigned i = 0; i + 1 < IDLE_POLICY_LOAD_WAKES; i++)
			idle_policy_halted(&p, 50 * US, true, true);
		/* a ping a second: long halts ended by a device; or the timer ended one */
		idle_policy_halted(&p, round % 2 ? 1000000 * US : 200 * US, round % 2 == 1, false);
	}
	cr_assert_eq(idle_policy_mode(&p), IDLE_MODE_IRQ);
	cr_assert_eq(p.to_poll, 0);
}

Test(idle_policy, idle_while_polling_goes_back_to_interrupts)
{
	struct idle_policy p;
	idle_policy_init(&p, 1000 * US, IDLE_POLICY_LOAD_WAKES);
	for (unsigned i = 0; i < IDLE_POLICY_LOAD_WAKES; i++)
		idle_policy_halted(&p, 10 * US, true, true);
	cr_assert_eq(idle_policy_mode(&p), IDLE_MODE_POLL);
	/* under load most timer halts find work; an empty one now and then does not switch */
	for (int i = 0; i < 50; i++)
		idle_policy_halted(&p, 1000 * US, false, i % 3 != 0);
	cr_assert_eq(idle_policy_mode(&p), IDLE_MODE_POLL);
	for (unsigned i = 0; i + 1 < IDLE_POLICY_IDLE_HALTS; i++)
		idle_policy_halted(&p, 1000 * US, false, false);
	cr_assert_eq(idle_policy_mode(&p), IDLE_MODE_POLL);
	idle_policy_halted(&p, 1000 * US, false, false);
	cr_assert_eq(idle_policy_mode(&p), IDLE_MODE_IRQ);
	cr_assert_eq(p.to_irq, 1);
	cr_assert_eq(p.quick_run, 0);
}

Test(idle_policy, no_load_wakes_never_polls)
{
	struct idle_policy p;
	idle_policy_init(&p, 1000 * US, 0);
	for (int i = 0; i < 100; i++)
		idle_policy_halted(&p, 10 * US, true, true);
	cr_assert_eq(idle_policy_mode(&p), IDLE_MODE_IRQ);
	cr_assert_eq(p.to_poll, 0);
}

/* A lone command at a time (fio QD 1): the drive's completion wakes the loop soon after the
 * command's halt, the next command only after the host's round trip, longer than quick_ns.
 * Polling would add up to a halt to each step; the policy stays on interrupts. */
Test(idle_policy, one_command_at_a_time_stays_on_interrupts)
{
	struct idle_policy p;
	idle_policy_init(&p, 250 * US, IDLE_POLICY_LOAD_WAKES);
	for (int io = 0; io < 1000; io++) {
		idle_policy_halted(&p, 150 * US, true, true);  /* drive completion */
		idle_policy_halted(&p, 900 * US, true, true);  /* the next command */
	}
	cr_assert_eq(idle_policy_mode(&p), IDLE_MODE_IRQ);
	cr_assert_eq(p.to_poll, 0);
	/* the same with the old 1 ms quantum counted both wake-ups as load */
	idle_policy_init(&p, 1000 * US, IDLE_POLICY_LOAD_WAKES);
	for (int io = 0; io < 2; io++) {
		idle_policy_halted(&p, 150 * US, true, true);
		idle_policy_halted(&p, 900 * US, true, true);
	}
	cr_assert_eq(idle_policy_mode(&p), IDLE_MODE_POLL);
}

Test(idle_policy, names)
{
	cr_assert_not_null(idle_mode_name(IDLE_MODE_IRQ));
	cr_assert_str_neq(idle_mode_name(IDLE_MODE_IRQ), idle_mode_name(IDLE_MODE_POLL));
}
