/*
 * idle_policy.c - the adaptive spin window of the poll loop (idle_policy.h).
 */
#include "idle_policy.h"

/* Window at max, bounds set. */
void idle_policy_init(struct idle_policy *p, uint64_t max_ns)
{
	p->max_ns = max_ns;
	p->min_ns = max_ns / IDLE_POLICY_MIN_DIV;
	p->spin_ns = max_ns;
	p->quick = p->slow = p->kept = 0;
}

/* The window. */
uint64_t idle_policy_spin_ns(const struct idle_policy *p)
{
	return p->spin_ns;
}

/* Grow on quick device wake-ups, shrink on long or timer-ended halts. */
void idle_policy_halted(struct idle_policy *p, uint64_t halted_ns, bool by_device)
{
	if (by_device && halted_ns < p->spin_ns) {
		p->spin_ns = p->spin_ns > p->max_ns / 2 ? p->max_ns : p->spin_ns * 2;
		if (p->spin_ns < p->min_ns)
			p->spin_ns = p->min_ns;
		if (!p->spin_ns)
			p->spin_ns = p->max_ns;
		p->quick++;
	} else if (!by_device || halted_ns / IDLE_POLICY_LONG_FACTOR >= p->spin_ns) {
		uint64_t next = p->spin_ns - p->spin_ns / 4;
		p->spin_ns = next < p->min_ns ? p->min_ns : next;
		p->slow++;
	} else {
		p->kept++;
	}
}
