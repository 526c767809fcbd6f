/*
 * irq.h - device interrupts as wake-ups for the poll loop (message-signalled: MSI/MSI-X).
 *
 * The appliance polls; a device interrupt only ends an idle halt. The architecture hands
 * out vectors and says which message (address, data) a device must write to raise one;
 * the device's driver programs it (pci/msix.c) and owns the vector from then on. The
 * handler counts the interrupt, acknowledges it and returns: no driver code runs in it,
 * so the loop's work never races an interrupt. Interrupts are enabled only while the CPU
 * halts (and while the sampling profiler runs): an interrupt raised while the loop works
 * stays pending and ends the next halt at once, so no wake-up is lost.
 *
 * x86_64: vectors ARCH_IRQ_VECTOR_FIRST.. of the local APIC, fixed delivery to this CPU.
 * arm64: not yet (the GICv3 ITS translates MSIs; QEMU's virt machine may not have one):
 * arch_irq_alloc returns -ENOTSUP and the loop keeps its timer-bounded halts.
 */
#ifndef ARCH_IRQ_H
#define ARCH_IRQ_H

#include <stdint.h>

#define ARCH_IRQ_MAX 16u              /* device vectors handed out at most */

/* What a device writes to raise the interrupt (PCI MSI/MSI-X message). */
struct arch_irq_msg {
	unsigned vector;              /* the CPU's vector (x86_64: IDT entry) */
	uint64_t addr;                /* Message Address */
	uint32_t data;                /* Message Data */
};

/* A vector for the device `owner` (a name kept for `stats irq`, static storage): the
 * message to program into it. 0, -ENOSPC (ARCH_IRQ_MAX given out) or -ENOTSUP (no
 * message-signalled interrupts on this architecture yet). */
int arch_irq_alloc(const char *owner, struct arch_irq_msg *msg);

/* Interrupts taken on one vector so far (0 for a vector not handed out). */
uint64_t arch_irq_count(unsigned vector);

/* Device interrupts taken so far, all vectors: the loop compares it around a halt to
 * tell a device wake-up from the timer's. */
uint64_t arch_irq_total(void);

#endif
