/*
 * fake_cfg.c - the synthetic PCI segment of the unit tests (see fake_cfg.h).
 */
#include <stdlib.h>
#include <string.h>
#include "fake_cfg.h"

static int fake_read(void *ctx, uint16_t bdf, uint16_t off, unsigned width, uint32_t *val)
{
	struct fake *f = ctx;
	return pci_ecam_ops.read(&f->ecam, bdf, off, width, val);
}

static struct fake_bar *bar_at(struct fake *f, uint16_t bdf, uint16_t off, int *upper)
{
	for (unsigned i = 0; i < f->nbars; i++) {
		struct fake_bar *b = &f->bars[i];
		uint16_t boff = (uint16_t)(PCI_BAR0 + 4 * b->idx);
		if (b->bdf != bdf)
			continue;
		if (off == boff) {
			*upper = 0;
			return b;
		}
		if (off == boff + 4 && (b->flags & PCI_BAR_MEM_TYPE_MASK) == PCI_BAR_MEM_TYPE_64 && !(b->flags & PCI_BAR_IO)) {
			*upper = 1;
			return b;
		}
	}
	return NULL;
}

static int fake_write(void *ctx, uint16_t bdf, uint16_t off, unsigned width, uint32_t val)
{
	struct fake *f = ctx;
	int upper;
	struct fake_bar *b = NULL;

	f->writes++;
	if (width == 4 && PCI_BDF_BUS(bdf) >= f->ecam.bus_start && PCI_BDF_BUS(bdf) <= f->ecam.bus_end &&
	    (b = bar_at(f, bdf, off, &upper))) {
		uint64_t mask = ~(b->size - 1);
		if (upper)
			val = (uint32_t)(val & (mask >> 32));
		else if (b->garbage && val == 0xffffffffu)
			val = b->garbage;
		else
			val = ((uint32_t)val & (uint32_t)mask & ((b->flags & PCI_BAR_IO) ? ~3u : ~0xfu)) | b->flags;
	}
	if (width == 4 && !b && off >= PCI_BAR0 && off < PCI_BAR0 + 4 * PCI_NUM_BARS_TYPE0) {
		uint8_t hdr = fake_space(f, bdf)[PCI_HEADER_TYPE] & PCI_HEADER_TYPE_MASK;
		if (hdr == 0 || off < PCI_BAR0 + 4 * PCI_NUM_BARS_TYPE1)
			return 0; /* not implemented: hardwired to zero */
	}
	if (width == 2 && bdf == f->acs_stuck_bdf && f->acs_stuck_bits && off == FAKE_ACS_CAP + PCI_ACS_CTRL)
		val &= ~(uint32_t)f->acs_stuck_bits;
	if (f->slot_port && bdf == f->slot_port && width == 2 && off == FAKE_PCIE_CAP + PCI_EXP_SLTSTA) {
		val = fake_r16(f, bdf, off) & ~(val & PCI_EXP_SLTSTA_EVENTS); /* RW1C */
	} else if (f->slot_port && bdf == f->slot_port && width == 2 && off == FAKE_PCIE_CAP + PCI_EXP_SLTCTL) {
		uint16_t old = fake_r16(f, bdf, off);
		bool off_now = (val & PCI_EXP_SLTCTL_PCC) && (val & PCI_EXP_SLTCTL_PIC) == PCI_EXP_SLTCTL_PIC_OFF;
		bool off_before = (old & PCI_EXP_SLTCTL_PCC) && (old & PCI_EXP_SLTCTL_PIC) == PCI_EXP_SLTCTL_PIC_OFF;
		if (off_now && !off_before && (fake_r16(f, bdf, FAKE_PCIE_CAP + PCI_EXP_SLTSTA) & PCI_EXP_SLTSTA_PDS)) {
			memset(fake_space(f, f->slot_card), 0xff, PCI_CFG_SIZE);
			f->slot_unplugs++;
			fake_slot_event(f, PCI_EXP_SLTSTA_PDC | PCI_EXP_SLTSTA_DLLSC, 0);
		}
	}
	return pci_ecam_ops.write(&f->ecam, bdf, off, width, val);
}

static const struct pci_cfg_ops fake_ops = { fake_read, fake_write };

void fake_init(struct fake *f, unsigned bus_start, unsigned nbus)
{
	memset(f, 0, sizeof(*f));
	f->ecam.size = (uint64_t)nbus << 20;
	f->mem = malloc(f->ecam.size);
	memset(f->mem, 0xff, f->ecam.size); /* absent functions read all ones */
	f->ecam.base = f->mem;
	f->ecam.bus_start = (uint8_t)bus_start;
	f->ecam.bus_end = (uint8_t)(bus_start + nbus - 1);
	f->topo = calloc(1, sizeof(*f->topo));
	pci_ecam_cfg(&f->topo->cfg, &f->ecam);
	f->topo->cfg.ops = &fake_ops;
	f->topo->cfg.ctx = f;
	pci_policy_default(&f->topo->policy);
}

void fake_free(struct fake *f)
{
	free(f->mem);
	free(f->topo);
	memset(f, 0, sizeof(*f));
}

uint8_t *fake_space(struct fake *f, uint16_t bdf)
{
	return f->mem + ((uint64_t)(PCI_BDF_BUS(bdf) - f->ecam.bus_start) << 20) + ((uint64_t)(bdf & 0xff) << 12);
}

void fake_w8(struct fake *f, uint16_t bdf, unsigned off, uint8_t v)
{
	fake_space(f, bdf)[off] = v;
}

void fake_w16(struct fake *f, uint16_t bdf, unsigned off, uint16_t v)
{
	memcpy(fake_space(f, bdf) + off, &v, 2);
}

void fake_w32(struct fake *f, uint16_t bdf, unsigned off, uint32_t v)
{
	memcpy(fake_space(f, bdf) + off, &v, 4);
}

uint32_t fake_r32(struct fake *f, uint16_t bdf, unsigned off)
{
	uint32_t v;
	memcpy(&v, fake_space(f, bdf) + off, 4);
	return v;
}

uint16_t fake_r16(struct fake *f, uint16_t bdf, unsigned off)
{
	uint16_t v;
	memcpy(&v, fake_space(f, bdf) + off, 2);
	return v;
}

static void fake_common(struct fake *f, uint16_t bdf, uint16_t vendor, uint16_t device, uint32_t class, uint8_t hdr,
			uint8_t exp_type, uint16_t acs)
{
	memset(fake_space(f, bdf), 0, PCI_CFG_SIZE);
	fake_w16(f, bdf, PCI_VENDOR_ID, vendor);
	fake_w16(f, bdf, PCI_DEVICE_ID, device);
	fake_w32(f, bdf, PCI_REVISION_ID, class << 8 | 1);
	fake_w8(f, bdf, PCI_HEADER_TYPE, hdr);
	fake_w16(f, bdf, PCI_COMMAND, PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER);
	fake_w16(f, bdf, PCI_STATUS, PCI_STATUS_CAP_LIST);
	fake_w8(f, bdf, PCI_CAPABILITY_LIST, FAKE_PCIE_CAP);
	fake_w8(f, bdf, FAKE_PCIE_CAP, PCI_CAP_ID_EXP);
	fake_w8(f, bdf, FAKE_PCIE_CAP + 1, 0);
	fake_w16(f, bdf, FAKE_PCIE_CAP + PCI_EXP_FLAGS, (uint16_t)(2 | exp_type << PCI_EXP_FLAGS_TYPE_SHIFT));
	fake_w32(f, bdf, FAKE_PCIE_CAP + PCI_EXP_LNKCAP, 3 | 4 << PCI_EXP_LNKCAP_WIDTH_SHIFT);
	fake_w16(f, bdf, FAKE_PCIE_CAP + PCI_EXP_LNKSTA, 3 | 4 << PCI_EXP_LNKSTA_WIDTH_SHIFT);
	fake_w32(f, bdf, PCI_EXT_CAP_START, 0);
	if (acs) {
		fake_w32(f, bdf, FAKE_ACS_CAP, PCI_EXT_CAP_ID_ACS | 1u << 16);
		fake_w16(f, bdf, FAKE_ACS_CAP + PCI_ACS_CAP, acs);
		fake_w16(f, bdf, FAKE_ACS_CAP + PCI_ACS_CTRL, 0);
	}
}

void fake_endpoint(struct fake *f, uint16_t bdf, uint16_t vendor, uint16_t device, uint32_t class, int multifunction,
		   uint16_t acs)
{
	fake_common(f, bdf, vendor, device, class, multifunction ? PCI_HEADER_TYPE_MULTI : 0, PCI_EXP_TYPE_ENDPOINT,
		    acs);
}

void fake_bridge(struct fake *f, uint16_t bdf, uint8_t exp_type, uint8_t sec, uint8_t sub, uint16_t acs)
{
	fake_common(f, bdf, 0x1b36, exp_type == PCI_EXP_TYPE_ROOT_PORT ? 0x000c : 0x8233, 0x060400, 1, exp_type, acs);
	fake_w8(f, bdf, PCI_PRIMARY_BUS, (uint8_t)PCI_BDF_BUS(bdf));
	fake_w8(f, bdf, PCI_SECONDARY_BUS, sec);
	fake_w8(f, bdf, PCI_SUBORDINATE_BUS, sub);
	fake_windows(f, bdf, 1, 0, 1, 0); /* closed until the test opens them */
}

void fake_host_bridge(struct fake *f, uint16_t vendor, uint16_t device)
{
	uint16_t bdf = PCI_BDF(f->ecam.bus_start, 0, 0);
	memset(fake_space(f, bdf), 0, PCI_CFG_SIZE);
	fake_w16(f, bdf, PCI_VENDOR_ID, vendor);
	fake_w16(f, bdf, PCI_DEVICE_ID, device);
	fake_w32(f, bdf, PCI_REVISION_ID, 0x060000u << 8);
}

void fake_windows(struct fake *f, uint16_t bdf, uint64_t mem_base, uint64_t mem_limit, uint64_t pref_base,
		  uint64_t pref_limit)
{
	if (mem_base > mem_limit) {
		fake_w16(f, bdf, PCI_MEMORY_BASE, 0xfff0);
		fake_w16(f, bdf, PCI_MEMORY_LIMIT, 0);
	} else {
		fake_w16(f, bdf, PCI_MEMORY_BASE, (uint16_t)((mem_base >> 16) & 0xfff0));
		fake_w16(f, bdf, PCI_MEMORY_LIMIT, (uint16_t)((mem_limit >> 16) & 0xfff0));
	}
	if (pref_base > pref_limit) {
		fake_w16(f, bdf, PCI_PREF_MEMORY_BASE, 0xfff1);
		fake_w16(f, bdf, PCI_PREF_MEMORY_LIMIT, 1);
		fake_w32(f, bdf, PCI_PREF_BASE_UPPER32, 0xffffffffu);
		fake_w32(f, bdf, PCI_PREF_LIMIT_UPPER32, 0);
	} else {
		fake_w16(f, bdf, PCI_PREF_MEMORY_BASE, (uint16_t)(((pref_base >> 16) & 0xfff0) | PCI_PREF_RANGE_64));
		fake_w16(f, bdf, PCI_PREF_MEMORY_LIMIT, (uint16_t)(((pref_limit >> 16) & 0xfff0) | PCI_PREF_RANGE_64));
		fake_w32(f, bdf, PCI_PREF_BASE_UPPER32, (uint32_t)(pref_base >> 32));
		fake_w32(f, bdf, PCI_PREF_LIMIT_UPPER32, (uint32_t)(pref_limit >> 32));
	}
	fake_w8(f, bdf, PCI_IO_BASE, 0xf0);
	fake_w8(f, bdf, PCI_IO_LIMIT, 0);
}

struct fake_bar *fake_bar(struct fake *f, uint16_t bdf, unsigned idx, uint64_t size, int io, int mem64, int prefetch,
			  uint64_t addr)
{
	struct fake_bar *b = &f->bars[f->nbars++];
	b->bdf = bdf;
	b->idx = idx;
	b->size = size;
	b->flags = io ? PCI_BAR_IO : (mem64 ? PCI_BAR_MEM_TYPE_64 : 0) | (prefetch ? PCI_BAR_MEM_PREFETCH : 0);
	fake_w32(f, bdf, PCI_BAR0 + 4 * idx, (uint32_t)addr | b->flags);
	if (mem64 && !io)
		fake_w32(f, bdf, PCI_BAR0 + 4 * idx + 4, (uint32_t)(addr >> 32));
	return b;
}

void fake_reference(struct fake *f)
{
	const uint16_t acs = PCI_ACS_SV | PCI_ACS_TB | PCI_ACS_RR | PCI_ACS_CR | PCI_ACS_UF | PCI_ACS_DT;
	const uint16_t acs_sw = acs | PCI_ACS_EC;

	fake_host_bridge(f, 0x8086, 0x29c0);
	fake_bridge(f, BDF(0, 0x1c, 0), PCI_EXP_TYPE_ROOT_PORT, 1, 5, acs);
	fake_windows(f, BDF(0, 0x1c, 0), 0xc0000000, 0xc07fffff, 0xe000000000, 0xe0ffffffff);
	fake_bridge(f, BDF(1, 0, 0), PCI_EXP_TYPE_UPSTREAM, 2, 5, 0);
	fake_windows(f, BDF(1, 0, 0), 0xc0000000, 0xc07fffff, 0xe000000000, 0xe0ffffffff);
	fake_bridge(f, BDF(2, 0, 0), PCI_EXP_TYPE_DOWNSTREAM, 3, 3, acs_sw);
	fake_windows(f, BDF(2, 0, 0), 0xc0000000, 0xc01fffff, 0xe000000000, 0xe03fffffff);
	fake_bridge(f, BDF(2, 1, 0), PCI_EXP_TYPE_DOWNSTREAM, 4, 4, acs_sw);
	fake_windows(f, BDF(2, 1, 0), 0xc0200000, 0xc03fffff, 0xe040000000, 0xe07fffffff);
	fake_bridge(f, BDF(2, 2, 0), PCI_EXP_TYPE_DOWNSTREAM, 5, 5, acs_sw);
	fake_windows(f, BDF(2, 2, 0), 0xc0400000, 0xc05fffff, 1, 0);
	fake_endpoint(f, BDF(3, 0, 0), 0x1b36, 0x0010, 0x010802, 0, 0);
	fake_bar(f, BDF(3, 0, 0), 0, 0x4000, 0, 1, 0, 0xc0000000);
	fake_bar(f, BDF(3, 0, 0), 2, 64 << 20, 0, 1, 1, 0xe000000000);
	fake_endpoint(f, BDF(4, 0, 0), 0x1b36, 0x0010, 0x010802, 0, 0);
	fake_bar(f, BDF(4, 0, 0), 0, 0x4000, 0, 1, 0, 0xc0200000);
	fake_bar(f, BDF(4, 0, 0), 2, 64 << 20, 0, 1, 1, 0xe040000000);
	fake_endpoint(f, BDF(5, 0, 0), 0x8086, 0x10d3, 0x020000, 1, 0);
	fake_bar(f, BDF(5, 0, 0), 0, 0x20000, 0, 0, 0, 0xc0400000);
	fake_endpoint(f, BDF(5, 0, 1), 0x8086, 0x10d3, 0x020000, 1, 0);
	fake_bar(f, BDF(5, 0, 1), 0, 0x20000, 0, 0, 0, 0xc0420000);
	fake_bridge(f, BDF(0, 0x1d, 0), PCI_EXP_TYPE_ROOT_PORT, 6, 6, acs);
	fake_windows(f, BDF(0, 0x1d, 0), 0xc0800000, 0xc08fffff, 0xe100000000, 0xe100ffffff);
	fake_endpoint(f, BDF(6, 0, 0), 0x1b36, 0x0010, 0x010802, 0, 0);
	fake_bar(f, BDF(6, 0, 0), 0, 0x4000, 0, 1, 0, 0xc0800000);
	fake_bar(f, BDF(6, 0, 0), 2, 16 << 20, 0, 1, 1, 0xe100000000);
}

void fake_slot(struct fake *f, uint16_t port, uint16_t card)
{
	f->slot_port = port;
	f->slot_card = card;
	uint16_t flags = fake_r16(f, port, FAKE_PCIE_CAP + PCI_EXP_FLAGS);
	fake_w16(f, port, FAKE_PCIE_CAP + PCI_EXP_FLAGS, flags | PCI_EXP_FLAGS_SLOT);
	fake_w32(f, port, FAKE_PCIE_CAP + PCI_EXP_SLTCAP, 0x1 | PCI_EXP_SLTCAP_PCP | 0x8 | 0x10 | 0x20 | PCI_EXP_SLTCAP_HPC);
	fake_w16(f, port, FAKE_PCIE_CAP + PCI_EXP_SLTCTL, PCI_EXP_SLTCTL_PIC_ON | PCI_EXP_SLTCTL_AIC_OFF);
	fake_slot_event(f, 0, fake_r16(f, card, PCI_VENDOR_ID) != 0xffff);
}

void fake_slot_event(struct fake *f, uint16_t events, int present)
{
	uint16_t sta = fake_r16(f, f->slot_port, FAKE_PCIE_CAP + PCI_EXP_SLTSTA) | events;
	uint16_t lnk = fake_r16(f, f->slot_port, FAKE_PCIE_CAP + PCI_EXP_LNKSTA);
	sta = present ? (uint16_t)(sta | PCI_EXP_SLTSTA_PDS) : (uint16_t)(sta & ~PCI_EXP_SLTSTA_PDS);
	lnk = present ? (uint16_t)(lnk | PCI_EXP_LNKSTA_DLLLA) : (uint16_t)(lnk & ~PCI_EXP_LNKSTA_DLLLA);
	fake_w16(f, f->slot_port, FAKE_PCIE_CAP + PCI_EXP_SLTSTA, sta);
	fake_w16(f, f->slot_port, FAKE_PCIE_CAP + PCI_EXP_LNKSTA, lnk);
}
