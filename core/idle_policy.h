/*
 * idle_policy.h - how long the poll loop spins after its last work before it halts the
 * CPU, adapted to how soon work comes back (SPDK's interrupt mode in spirit: poll while
 * busy, sleep on interrupts while idle).
 *
 * With device interrupts as wake-up sources (arch/irq.h, pci_msix_wake), a halt costs
 * no latency beyond the wake-up itself, but it costs the halt and the wake-up: when
 * work keeps arriving shortly after each halt (under load), spinning a little longer
 * would have caught it without either, so the spin window doubles; when halts are long
 * (idle) or end by the timer, the window shrinks by a quarter, so an idle appliance
 * halts almost at once. The window stays within [max / IDLE_POLICY_MIN_DIV, max].
 * Pure logic, no clock and no hardware: unit-tested on the host.
 */
#ifndef CORE_IDLE_POLICY_H
#define CORE_IDLE_POLICY_H

#include <stdbool.h>
#include <stdint.h>

#define IDLE_POLICY_MIN_DIV 32u       /* the window's floor: max / 32 */
#define IDLE_POLICY_LONG_FACTOR 8u    /* a halt this many windows long counts as idle */

struct idle_policy {
	uint64_t spin_ns;             /* the window in force */
	uint64_t min_ns, max_ns;
	uint64_t quick;               /* halts ended by a device within the window (window grown) */
	uint64_t slow;                /* halts ended by the timer, or long ones (window shrunk) */
	uint64_t kept;                /* halts in between (window kept) */
};

/* Start with the window at max_ns (the old fixed spin), bounded to [max_ns / 32, max_ns]. */
void idle_policy_init(struct idle_policy *p, uint64_t max_ns);

/* The spin window now: halt once the loop has been idle this long. */
uint64_t idle_policy_spin_ns(const struct idle_policy *p);

/* After a halt of halted_ns that a device interrupt ended (by_device) or the timer did:
 * adapt the window. */
void idle_policy_halted(struct idle_policy *p, uint64_t halted_ns, bool by_device);

#endif
