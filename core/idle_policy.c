/*
 * idle_policy.c - interrupts while idle, polling under load (idle_policy.h).
 */
#include "idle_policy.h"

/* IRQ mode. */
void idle_policy_init(struct idle_policy *p, uint64_t quick_ns, unsigned load_wakes)
{
	p->mode = IDLE_MODE_IRQ;
	p->quick_ns = quick_ns;
	p->load_wakes = load_wakes;
	p->quick_run = p->idle_run = 0;
	p->to_poll = p->to_irq = 0;
}

/* The mode. */
enum idle_mode idle_policy_mode(const struct idle_policy *p)
{
	return p->mode;
}

/* Count quick device wake-ups (IRQ) or empty halts (POLL) in a row; switch at the limit. */
void idle_policy_halted(struct idle_policy *p, uint64_t halted_ns, bool by_device, bool found_work)
{
	if (p->mode == IDLE_MODE_IRQ) {
		if (!p->load_wakes || !(by_device && halted_ns < p->quick_ns)) {
			p->quick_run = 0;
			return;
		}
		if (++p->quick_run < p->load_wakes)
			return;
		p->mode = IDLE_MODE_POLL;
		p->quick_run = p->idle_run = 0;
		p->to_poll++;
		return;
	}
	if (found_work) {
		p->idle_run = 0;
		return;
	}
	if (++p->idle_run < IDLE_POLICY_IDLE_HALTS)
		return;
	p->mode = IDLE_MODE_IRQ;
	p->quick_run = p->idle_run = 0;
	p->to_irq++;
}

/* "irq" / "poll". */
const char *idle_mode_name(enum idle_mode m)
{
	return m == IDLE_MODE_POLL ? "poll (interrupts masked, timer halts)" : "irq (halts end on interrupts)";
}
