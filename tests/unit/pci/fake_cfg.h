/*
 * fake_cfg.h - a synthetic PCI segment for unit tests: an array laid out exactly like an
 * ECAM window (1 MiB per bus, 4 KiB per function), read and written through pci/'s real
 * ECAM accessor, with a thin layer of device behaviour on writes: BARs answer sizing with
 * their size mask (or with garbage on request), ACS control bits can be made to not stick.
 * Builders add endpoints, bridges and capabilities; tests may then poke raw bytes to lie.
 */
#ifndef TESTS_UNIT_PCI_FAKE_CFG_H
#define TESTS_UNIT_PCI_FAKE_CFG_H

#include <stdint.h>
#include "pci/pci.h"

#define FAKE_MAX_BARS 64
#define FAKE_PCIE_CAP 0x40
#define FAKE_ACS_CAP 0x100

struct fake_bar {
	uint16_t bdf;
	unsigned idx;
	uint64_t size;
	uint32_t flags;   /* low bits as the BAR reports them (IO, type, prefetch) */
	uint32_t garbage; /* nonzero: what sizing reads back instead of the mask */
};

struct fake {
	struct pci_ecam ecam;
	uint8_t *mem;
	struct pci_topo *topo;
	struct fake_bar bars[FAKE_MAX_BARS];
	unsigned nbars;
	uint16_t acs_stuck_bdf;  /* this function's ACS control ignores writes of acs_stuck_bits */
	uint16_t acs_stuck_bits;
	unsigned writes;
	/* one hot-plug slot modelled like QEMU's pcie-root-port (fake_slot) */
	uint16_t slot_port;      /* 0: none */
	uint16_t slot_card;      /* the card's function 0 */
	unsigned slot_unplugs;   /* times the slot was powered off with its card in it (card dropped) */
};

/* A segment decoding buses [bus_start, bus_start + nbus); topo is calloc'ed. */
void fake_init(struct fake *f, unsigned bus_start, unsigned nbus);
void fake_free(struct fake *f);

/* Raw access to a function's config space (no behaviour). */
uint8_t *fake_space(struct fake *f, uint16_t bdf);
void fake_w8(struct fake *f, uint16_t bdf, unsigned off, uint8_t v);
void fake_w16(struct fake *f, uint16_t bdf, unsigned off, uint16_t v);
void fake_w32(struct fake *f, uint16_t bdf, unsigned off, uint32_t v);
uint32_t fake_r32(struct fake *f, uint16_t bdf, unsigned off);
uint16_t fake_r16(struct fake *f, uint16_t bdf, unsigned off);

/* Builders. An endpoint/bridge gets a PCIe capability at 0x40 of the given type with an
 * x4 8 GT/s link; acs != 0 adds an ACS capability at 0x100 advertising those bits. */
void fake_endpoint(struct fake *f, uint16_t bdf, uint16_t vendor, uint16_t device, uint32_t class,
		   int multifunction, uint16_t acs);
void fake_bridge(struct fake *f, uint16_t bdf, uint8_t exp_type, uint8_t sec, uint8_t sub, uint16_t acs);
void fake_host_bridge(struct fake *f, uint16_t vendor, uint16_t device);
/* Bridge windows (inclusive limits; pass base > limit to close one). */
void fake_windows(struct fake *f, uint16_t bdf, uint64_t mem_base, uint64_t mem_limit, uint64_t pref_base,
		  uint64_t pref_limit);
/* A memory BAR (64-bit when mem64, which also takes idx + 1) or an I/O BAR at addr. */
struct fake_bar *fake_bar(struct fake *f, uint16_t bdf, unsigned idx, uint64_t size, int io, int mem64,
			  int prefetch, uint64_t addr);

/* Make bridge port a hot-plug slot (Slot Implemented, HPC, power controller) whose card is at
 * card. Slot Status event bits are RW1C; powering the slot off (PCC with the power indicator
 * off) drops the card as QEMU does: its config space reads all-ones, PDS clears, PDC sets. */
void fake_slot(struct fake *f, uint16_t port, uint16_t card);
/* Raise slot events (attention button, presence changed) with the presence state given. */
void fake_slot_event(struct fake *f, uint16_t events, int present);

/* The reference topology used by most tests (QEMU's default plus ACS on the switch ports):
 *   00:00.0 host bridge 8086:29c0
 *   00:1c.0 root port (ACS) buses 01-05
 *     01:00.0 switch upstream port buses 02-05
 *       02:00.0 downstream (ACS) bus 03: 03:00.0 NVMe A (BAR0 16K regs, BAR2 64M pref CMB)
 *       02:01.0 downstream (ACS) bus 04: 04:00.0 NVMe B (same)
 *       02:02.0 downstream (ACS) bus 05: 05:00.0 NIC function 0, 05:00.1 NIC function 1
 *   00:1d.0 root port (ACS) bus 06: 06:00.0 NVMe far (BAR2 16M pref)
 */
void fake_reference(struct fake *f);

#define BDF PCI_BDF

#endif
