/*
 * idle_policy.h - how the poll loop sleeps when it runs out of work: on device interrupts
 * while idle, on the timer while under load (SPDK's interrupt mode in spirit: poll while
 * busy, sleep on interrupts while idle).
 *
 * IRQ mode: the loop arms its wake-up sources (arch/irq.h, lib/poller.h) and halts until
 * an interrupt or the next timer: an idle appliance costs almost nothing and the first
 * frame or completion is served at once. But a wake-up per frame or completion loses the
 * batching of a polled loop, and under emulation a halt, an arming and a wake-up cost
 * tens of microseconds of the vCPU thread each (measured: 128 KiB CMB writes at 2.6 MB/s
 * against 6.7 polled). So when IDLE_POLICY_LOAD_WAKES halts in a row were ended by a
 * device within quick_ns (loop.halt_us), the loop goes over to POLL mode: the sources are
 * masked, halts last loop.halt_us and work waits for their end in batches, as without
 * interrupts. After IDLE_POLICY_IDLE_HALTS halts in a row that found no work, it goes back
 * to IRQ mode. Pure logic, no clock and no hardware: unit-tested on the host.
 */
#ifndef CORE_IDLE_POLICY_H
#define CORE_IDLE_POLICY_H

#include <stdbool.h>
#include <stdint.h>

#define IDLE_POLICY_LOAD_WAKES 4u     /* quick device wake-ups in a row: go polling (default) */
#define IDLE_POLICY_IDLE_HALTS 8u     /* halts in a row with no work after them: back to interrupts */

enum idle_mode {
	IDLE_MODE_IRQ = 0,            /* halts end on a device interrupt or the next timer */
	IDLE_MODE_POLL,               /* interrupts masked, halts of the quantum */
};

struct idle_policy {
	enum idle_mode mode;
	uint64_t quick_ns;            /* a device wake-up this soon after the halt began is load */
	unsigned load_wakes;          /* quick wake-ups in a row that mean load (0: never poll) */
	unsigned quick_run;           /* quick device wake-ups in a row (IRQ mode) */
	unsigned idle_run;            /* halts in a row that found no work (POLL mode) */
	uint64_t to_poll, to_irq;     /* mode switches */
};

/* IRQ mode; a device wake-up within quick_ns of a halt's start counts as load, load_wakes of
 * them in a row switch to POLL mode (0: never). */
void idle_policy_init(struct idle_policy *p, uint64_t quick_ns, unsigned load_wakes);

/* The mode in force. */
enum idle_mode idle_policy_mode(const struct idle_policy *p);

/* After a halt of halted_ns that a device interrupt ended (by_device) or the timer did,
 * and whether the pass after it found work: maybe switch modes. */
void idle_policy_halted(struct idle_policy *p, uint64_t halted_ns, bool by_device, bool found_work);

const char *idle_mode_name(enum idle_mode m);

#endif
