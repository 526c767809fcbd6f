/*
 * hotplug.c - PCIe native hot-plug, kept minimal: the poll loop reads the Slot Status of every
 * hot-plug capable port (PCIe Express Capabilities: Slot Implemented, Slot Capabilities HPC)
 * instead of taking hot-plug interrupts.
 *
 * - Attention Button Pressed on a slot that holds a bound card (a real slot's button, QEMU's
 *   device_del): the functions below are detached from their drivers (an NVMe drive is flushed,
 *   sent CC.SHN and its namespaces go not ready), power is held until the card's P2P provider
 *   has no allocation left (bounded), then the slot is powered off with its indicators off,
 *   which lets the card go (QEMU unplugs it then).
 * - A card present in a slot that has none bound (Presence Detect Changed, or the button):
 *   power on, wait for Data Link Layer Link Active (bounded) and 100 ms more, record the
 *   functions of the secondary bus, place their BARs in the port's windows and bind drivers.
 * - Presence lost without a request (surprise removal: a Presence Detect or Data Link Layer
 *   State Changed event, presence clear and no function answering): the functions are
 *   detached; their drivers find all-ones registers. (QEMU 7.2 reports Presence Detect State
 *   clear for cards present at boot, so presence alone is not trusted.)
 * Not handled (said in README): windows or bus numbers that would have to grow (a card must fit
 * what firmware gave the port), bridges below a slot, MRL sensors, interlocks, power faults.
 */
#include <errno.h>
#include <string.h>
#include "../lib/clock.h"
#include "../lib/log.h"
#include "pci.h"
#include "pci_internal.h"
#include "pci_regs.h"

LOG_MODULE_USE(pci);

#define HP_MAX_SLOTS 16
#define HP_POLL_NS (50ull * 1000000ull)      /* slot status read period */
#define HP_LINK_NS (1000ull * 1000000ull)    /* power on -> link active bound */
#define HP_SETTLE_NS (100ull * 1000000ull)   /* link active -> first config read (PCIe 6.7.3.3) */
#define HP_DRAIN_NS (5000ull * 1000000ull)   /* P2P allocations to come back before power off */

enum hp_slot_state {
	HP_SLOT_EMPTY = 0, /* no card bound (none present, or powered off) */
	HP_SLOT_POWERING,  /* powered on, waiting for the link and the settle time */
	HP_SLOT_DRAINING,  /* drivers detached, waiting for the card's P2P memory to be free */
	HP_SLOT_ON,        /* card present, functions recorded and bound */
};

struct hp_slot {
	struct pci_dev *port;
	enum hp_slot_state state;
	bool pcp;              /* the slot has a power controller */
	uint64_t deadline_ns;  /* POWERING: link bound, then settle end; DRAINING: drain bound */
	bool link_up;
};

struct pci_hotplug {
	struct pci_topo *t;
	unsigned nslots;
	struct hp_slot slots[HP_MAX_SLOTS];
	uint64_t next_ns;
};

static struct pci_hotplug hotplug;

static const char *state_name(enum hp_slot_state s)
{
	static const char *const names[] = { "empty", "powering", "draining", "on" };
	return (unsigned)s < sizeof(names) / sizeof(names[0]) ? names[s] : "?";
}

static void set_state(struct hp_slot *s, enum hp_slot_state st)
{
	char b[8];
	log_debug("%s: slot %s -> %s", pci_bdf_str(s->port->bdf, b), state_name(s->state), state_name(st));
	s->state = st;
}

static uint16_t rd16(const struct hp_slot *s, uint16_t reg)
{
	return (uint16_t)pci_read(s->port, (uint16_t)(s->port->exp_off + reg), 2);
}

static void wr16(const struct hp_slot *s, uint16_t reg, uint16_t v)
{
	pci_write(s->port, (uint16_t)(s->port->exp_off + reg), 2, v);
}

static bool has_functions(struct pci_topo *t, const struct pci_dev *port)
{
	for (unsigned i = 0; i < t->ndevs; i++)
		if (t->devs[i].parent == port && !t->devs[i].removed)
			return true;
	return false;
}

static void power(struct hp_slot *s, bool on)
{
	uint16_t ctl = rd16(s, PCI_EXP_SLTCTL) & (uint16_t)~(PCI_EXP_SLTCTL_PIC | PCI_EXP_SLTCTL_AIC);
	if (on)
		ctl = (uint16_t)((ctl & ~PCI_EXP_SLTCTL_PCC) | PCI_EXP_SLTCTL_PIC_ON | PCI_EXP_SLTCTL_AIC_OFF);
	else
		ctl |= PCI_EXP_SLTCTL_PCC | PCI_EXP_SLTCTL_PIC_OFF | PCI_EXP_SLTCTL_AIC_OFF;
	if (!s->pcp)
		ctl &= (uint16_t)~PCI_EXP_SLTCTL_PCC;
	wr16(s, PCI_EXP_SLTCTL, ctl);
}

/* Unbind and forget every function below the slot. */
static void detach(struct pci_topo *t, struct hp_slot *s)
{
	char b[8];
	for (unsigned i = 0; i < t->ndevs; i++) {
		struct pci_dev *d = &t->devs[i];
		if (d->parent != s->port || d->removed)
			continue;
		log_warn("%s: hot-removed (%04x:%04x)", pci_bdf_str(d->bdf, b), d->vendor, d->device);
		pci_remove(d);
		d->removed = true;
	}
}

/* Do the functions below the slot read all-ones (no card answers)? */
static bool cards_gone(struct pci_topo *t, const struct hp_slot *s)
{
	for (unsigned i = 0; i < t->ndevs; i++) {
		const struct pci_dev *d = &t->devs[i];
		if (d->parent == s->port && !d->removed && pci_read(d, PCI_VENDOR_ID, 2) != 0xffff)
			return false;
	}
	return true;
}

/* P2P memory still allocated in a provider of a function below the slot? Removes the idle ones. */
static bool p2p_busy(struct pci_topo *t, struct hp_slot *s)
{
	bool busy = false;
	for (unsigned i = 0; i < t->ndevs; i++) {
		struct pci_dev *d = &t->devs[i];
		struct p2p_provider *p;
		if (d->parent != s->port)
			continue;
		while ((p = p2p_provider_of_dev(d)) && p2p_provider_remove(p) == 0)
			;
		busy |= p != NULL;
	}
	return busy;
}

/* Record and bind the functions of the slot's secondary bus. Returns how many. */
static int attach(struct pci_topo *t, struct hp_slot *s)
{
	char b[8];
	int n = 0;
	for (unsigned fn = 0; fn < 8; fn++) {
		uint16_t bdf = PCI_BDF(s->port->secondary, 0, fn);
		uint32_t vendor = 0xffff;
		t->cfg.ops->read(t->cfg.ctx, bdf, PCI_VENDOR_ID, 2, &vendor);
		if (vendor == 0xffff || vendor == 0) {
			if (fn == 0)
				break;
			continue;
		}
		struct pci_dev *d = pci_add_function(t, s->port, bdf);
		if (!d) {
			log_err("%s: hot-added function not recorded: the device table is full", pci_bdf_str(bdf, b));
			break;
		}
		log_info("%s: hot-added %04x:%04x class %06x", pci_bdf_str(bdf, b), d->vendor, d->device, d->class);
		if (pci_is_bridge(d))
			log_warn("%s: a bridge below a hot-plug slot is not scanned", pci_bdf_str(bdf, b));
		n++;
		if (fn == 0 && !d->multifunction)
			break;
	}
	if (n)
		pci_probe_all(t);
	return n;
}

static int slot_poll(struct pci_topo *t, struct hp_slot *s, uint64_t now)
{
	char b[8];
	uint16_t sta = rd16(s, PCI_EXP_SLTSTA);
	if (sta == 0xffff)
		return 0; /* the port itself is gone */
	uint16_t ev = sta & PCI_EXP_SLTSTA_EVENTS;
	if (ev)
		wr16(s, PCI_EXP_SLTSTA, ev); /* RW1C */
	bool present = (sta & PCI_EXP_SLTSTA_PDS) != 0;
	const char *port = pci_bdf_str(s->port->bdf, b);

	switch (s->state) {
	case HP_SLOT_ON:
		if ((ev & (PCI_EXP_SLTSTA_PDC | PCI_EXP_SLTSTA_DLLSC)) && !present && cards_gone(t, s)) {
			log_warn("%s: card gone without a removal request (surprise removal, slot status 0x%04x)", port,
				 sta);
			detach(t, s);
			power(s, false);
			set_state(s, HP_SLOT_EMPTY);
			return 1;
		}
		if (ev & PCI_EXP_SLTSTA_ABP) {
			log_warn("%s: attention button: detaching the card", port);
			detach(t, s);
			s->deadline_ns = now + HP_DRAIN_NS;
			set_state(s, HP_SLOT_DRAINING);
			return 1;
		}
		return ev ? 1 : 0;
	case HP_SLOT_DRAINING:
		if (p2p_busy(t, s) && present && now < s->deadline_ns)
			return 0;
		if (p2p_busy(t, s))
			log_err("%s: P2P memory still allocated in the card after %llu ms: powering off anyway", port,
				(unsigned long long)(HP_DRAIN_NS / 1000000));
		power(s, false);
		log_info("%s: slot powered off: the card may be removed", port);
		set_state(s, HP_SLOT_EMPTY);
		return 1;
	case HP_SLOT_EMPTY:
		if (present && (ev & (PCI_EXP_SLTSTA_PDC | PCI_EXP_SLTSTA_ABP | PCI_EXP_SLTSTA_DLLSC))) {
			log_info("%s: card present: powering the slot on", port);
			power(s, true);
			s->link_up = false;
			s->deadline_ns = now + HP_LINK_NS;
			set_state(s, HP_SLOT_POWERING);
			return 1;
		}
		return ev ? 1 : 0;
	case HP_SLOT_POWERING:
		if (!present) {
			power(s, false);
			set_state(s, HP_SLOT_EMPTY);
			return 1;
		}
		if (!s->link_up) {
			if (pci_read(s->port, (uint16_t)(s->port->exp_off + PCI_EXP_LNKSTA), 2) & PCI_EXP_LNKSTA_DLLLA) {
				s->link_up = true;
				s->deadline_ns = now + HP_SETTLE_NS;
			} else if (now >= s->deadline_ns) {
				log_err("%s: no link %llu ms after power on: slot powered off", port,
					(unsigned long long)(HP_LINK_NS / 1000000));
				power(s, false);
				set_state(s, HP_SLOT_EMPTY);
				return 1;
			}
			return 0;
		}
		if (now < s->deadline_ns)
			return 0;
		if (attach(t, s) == 0) {
			log_err("%s: link up but no function answers: slot powered off", port);
			power(s, false);
			set_state(s, HP_SLOT_EMPTY);
			return 1;
		}
		set_state(s, HP_SLOT_ON);
		return 1;
	}
	return 0;
}

/* Find the hot-plug slots. */
int pci_hotplug_init(struct pci_topo *t)
{
	struct pci_hotplug *hp = &hotplug;
	char b[8];

	memset(hp, 0, sizeof(*hp));
	hp->t = t;
	for (unsigned i = 0; i < t->ndevs; i++) {
		struct pci_dev *d = &t->devs[i];
		if (!d->exp_off || !pci_is_bridge(d) || d->removed ||
		    (d->exp_type != PCI_EXP_TYPE_ROOT_PORT && d->exp_type != PCI_EXP_TYPE_DOWNSTREAM))
			continue;
		if (!(pci_read(d, (uint16_t)(d->exp_off + PCI_EXP_FLAGS), 2) & PCI_EXP_FLAGS_SLOT))
			continue;
		uint32_t cap = pci_read(d, (uint16_t)(d->exp_off + PCI_EXP_SLTCAP), 4);
		if (!(cap & PCI_EXP_SLTCAP_HPC))
			continue;
		if (hp->nslots == HP_MAX_SLOTS) {
			log_warn("%s: hot-plug slot not watched (at most %d)", pci_bdf_str(d->bdf, b), HP_MAX_SLOTS);
			continue;
		}
		struct hp_slot *s = &hp->slots[hp->nslots++];
		s->port = d;
		s->pcp = (cap & PCI_EXP_SLTCAP_PCP) != 0;
		s->state = has_functions(t, d) ? HP_SLOT_ON : HP_SLOT_EMPTY;
		wr16(s, PCI_EXP_SLTSTA, PCI_EXP_SLTSTA_EVENTS); /* stale events from firmware */
		log_debug("%s: hot-plug slot, %s", pci_bdf_str(d->bdf, b), state_name(s->state));
	}
	return (int)hp->nslots;
}

/* One pass over the slots. */
int pci_hotplug_poll(uint64_t now_ns)
{
	struct pci_hotplug *hp = &hotplug;
	int work = 0;
	if (!hp->t || !hp->nslots || now_ns < hp->next_ns)
		return 0;
	hp->next_ns = now_ns + HP_POLL_NS;
	for (unsigned i = 0; i < hp->nslots; i++)
		work += slot_poll(hp->t, &hp->slots[i], now_ns);
	return work;
}
