/*
 * irq.c - device interrupts (../irq.h) on arm64: not yet. MSIs need the GICv3 ITS (or a
 * GICv2m frame), which QEMU's virt machine may not provide; until then the drivers keep
 * polling and the loop's halts stay bounded by the generic timer (loop.halt_us).
 */
#include <errno.h>
#include "../irq.h"

/* Not on arm64 yet. */
int arch_irq_alloc(const char *owner, struct arch_irq_msg *msg)
{
	(void)owner;
	(void)msg;
	return -ENOTSUP;
}

/* Nothing is counted. */
uint64_t arch_irq_count(unsigned vector)
{
	(void)vector;
	return 0;
}

/* Nothing is counted. */
uint64_t arch_irq_total(void)
{
	return 0;
}
