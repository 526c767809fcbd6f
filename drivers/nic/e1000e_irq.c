/*
 * e1000e_irq.c - receive interrupts as wake-ups for the idle poll loop (part of the
 * bus-independent core; the PCI attach programs MSI-X entry `entry` first).
 *
 * The driver polls its rings; an interrupt only ends the loop's idle halt. In MSI-X mode
 * (82574 datasheet 7.4: IVAR, EIAC) the Receive Queue 0 cause goes to one MSI-X entry and
 * auto-clears when it fires; with CTRL_EXT.IAME clear the firing also clears its IMS bit,
 * so one interrupt comes per halt however many frames arrive while the loop works (as
 * NAPI masks while polling). Before the loop halts it re-arms: clear the cause, set the
 * IMS bit, and let the loop poll once more for a frame that came in between.
 */
#include <errno.h>
#include "e1000e.h"
#include "e1000e_regs.h"

/* RxQ0 on MSI-X entry `entry`, auto-cleared, masked until the first arm. */
void e1000e_irq_setup(struct e1000e *dev, unsigned entry)
{
	dev->bus.write32(dev->bus.ctx, E1000E_IMC, E1000E_ICR_RXQ0);
	dev->bus.write32(dev->bus.ctx, E1000E_IVAR, (entry | E1000E_IVAR_VALID) << E1000E_IVAR_RXQ0_SHIFT);
	dev->bus.write32(dev->bus.ctx, E1000E_EIAC, E1000E_ICR_RXQ0);
	dev->bus.write32(dev->bus.ctx, E1000E_CTRL_EXT,
			 dev->bus.read32(dev->bus.ctx, E1000E_CTRL_EXT) | E1000E_CTRL_EXT_PBA_CLR);
	dev->irq_on = true;
}

/* Clear a stale receive cause and unmask it (the next frame interrupts), or mask it. */
int e1000e_irq_arm(struct e1000e *dev, bool on)
{
	if (!dev->irq_on)
		return -ENOTSUP;
	if (!on) {
		dev->bus.write32(dev->bus.ctx, E1000E_IMC, E1000E_ICR_RXQ0);
		return 0;
	}
	dev->bus.write32(dev->bus.ctx, E1000E_ICR, E1000E_ICR_RXQ0); /* write 1 to clear */
	dev->bus.write32(dev->bus.ctx, E1000E_IMS, E1000E_ICR_RXQ0);
	dev->c.irq_arms++;
	return 0;
}
