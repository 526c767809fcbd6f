/*
 * enum.c - enumeration of a PCI segment: functions, bridges, capabilities, links, BARs
 * and bridge windows; validation of BARs against the windows and placement of BARs the
 * firmware left unassigned.
 *
 * Config space is treated as untrusted input: capability chains are bounded and checked
 * for loops, BAR sizing results must be power-of-two masks, bus numbers must lie inside
 * the ECAM window and every bus is scanned at most once. Anything odd is logged, counted
 * in the function's `anomalies` and skipped; enumeration itself never fails on it.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "../lib/clock.h"
#include "../lib/log.h"
#include "pci.h"

LOG_MODULE_DEFINE(pci);

#define CAP_MAX_ITER 48          /* (256 - 64) / 4 standard capabilities at most */
#define EXT_CAP_MAX_ITER 960     /* (4096 - 256) / 4 extended capabilities at most */

/* Read a register of d; all ones when the access fails. */
uint32_t pci_read(const struct pci_dev *d, uint16_t off, unsigned width)
{
	const struct pci_cfg *c = &d->topo->cfg;
	uint32_t v = 0xffffffffu;
	if (c->ops->read(c->ctx, d->bdf, off, width, &v) < 0)
		return width == 4 ? 0xffffffffu : (1u << (width * 8)) - 1;
	return v;
}

/* Write a register of d. */
int pci_write(const struct pci_dev *d, uint16_t off, unsigned width, uint32_t val)
{
	const struct pci_cfg *c = &d->topo->cfg;
	return c->ops->write(c->ctx, d->bdf, off, width, val);
}

/* "BB:DD.F". */
char *pci_bdf_str(uint16_t bdf, char *buf)
{
	snprintf(buf, 8, "%02x:%02x.%x", PCI_BDF_BUS(bdf), PCI_BDF_DEV(bdf), PCI_BDF_FN(bdf));
	return buf;
}

/* Parse "BB:DD.F". */
int pci_parse_bdf(const char *s)
{
	unsigned v[3] = { 0, 0, 0 }, digits[3] = { 0, 0, 0 }, field = 0;
	if (!s)
		return -EINVAL;
	for (; *s; s++) {
		char c = *s;
		unsigned x;
		if ((field == 0 && c == ':') || (field == 1 && c == '.')) {
			field++;
			continue;
		}
		if (c >= '0' && c <= '9')
			x = (unsigned)(c - '0');
		else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f')
			x = (unsigned)((c | 0x20) - 'a' + 10);
		else
			return -EINVAL;
		if (++digits[field] > 2)
			return -EINVAL;
		v[field] = v[field] * 16 + x;
	}
	if (field != 2 || !digits[0] || !digits[1] || digits[2] != 1 || v[1] > 31 || v[2] > 7)
		return -EINVAL;
	return PCI_BDF(v[0], v[1], v[2]);
}

bool pci_is_bridge(const struct pci_dev *d)
{
	return d->hdr_type == 1;
}

struct pci_dev *pci_find(struct pci_topo *t, uint16_t bdf)
{
	for (unsigned i = 0; i < t->ndevs; i++)
		if (t->devs[i].bdf == bdf && !t->devs[i].removed)
			return &t->devs[i];
	return NULL;
}

uint16_t pci_find_cap(const struct pci_dev *d, uint16_t id, bool ext)
{
	for (unsigned i = 0; i < d->ncaps; i++)
		if (d->caps[i].id == id && d->caps[i].ext == ext)
			return d->caps[i].off;
	return 0;
}

void pci_policy_default(struct pci_policy *p)
{
	memset(p, 0, sizeof(*p));
	p->acs_mode = PCI_ACS_MODE_AUTO;
	p->assign_bars = true;
}

/* Log a problem with a function and count it. */
#define anomaly(d, fmt, ...)                                                                    \
	do {                                                                                    \
		char bdf_[8];                                                                   \
		(d)->anomalies++;                                                               \
		(d)->topo->anomalies++;                                                         \
		log_warn("%s: " fmt, pci_bdf_str((d)->bdf, bdf_), ##__VA_ARGS__);               \
	} while (0)

static void add_cap(struct pci_dev *d, uint16_t id, uint16_t off, bool ext)
{
	if (d->ncaps < PCI_MAX_CAPS) {
		d->caps[d->ncaps].id = id;
		d->caps[d->ncaps].off = off;
		d->caps[d->ncaps].ext = ext;
		d->ncaps++;
	}
}

/* Walk the standard capability list: bounded, loop-checked, pointers outside the header. */
static void walk_caps(struct pci_dev *d)
{
	uint64_t seen = 0; /* one bit per dword of the first 256 bytes */
	unsigned ptr, i;

	if (!(pci_read(d, PCI_STATUS, 2) & PCI_STATUS_CAP_LIST))
		return;
	ptr = pci_read(d, PCI_CAPABILITY_LIST, 1) & 0xfc;
	for (i = 0; ptr && i < CAP_MAX_ITER; i++) {
		if (ptr < 0x40) {
			anomaly(d, "capability pointer 0x%02x points into the header; list cut", ptr);
			return;
		}
		if (seen & (1ull << (ptr / 4))) {
			anomaly(d, "capability list loops back to 0x%02x; list cut", ptr);
			return;
		}
		seen |= 1ull << (ptr / 4);
		uint8_t id = (uint8_t)pci_read(d, (uint16_t)ptr, 1);
		add_cap(d, id, (uint16_t)ptr, false);
		if (id == PCI_CAP_ID_EXP && !d->exp_off)
			d->exp_off = (uint16_t)ptr;
		else if (id == PCI_CAP_ID_MSIX && !d->msix_off)
			d->msix_off = (uint16_t)ptr;
		else if (id == PCI_CAP_ID_MSI && !d->msi_off)
			d->msi_off = (uint16_t)ptr;
		ptr = pci_read(d, (uint16_t)(ptr + PCI_CAP_NEXT), 1) & 0xfc;
	}
	if (ptr)
		anomaly(d, "more than %d capabilities; list cut", CAP_MAX_ITER);
}

/* Walk the extended capability list (PCIe functions only). */
static void walk_ext_caps(struct pci_dev *d)
{
	uint64_t seen[PCI_CFG_SIZE / 4 / 64] = { 0 };
	unsigned off = PCI_EXT_CAP_START, i;

	for (i = 0; i < EXT_CAP_MAX_ITER; i++) {
		uint32_t hdr = pci_read(d, (uint16_t)off, 4);
		if (hdr == 0 || hdr == 0xffffffffu)
			return;
		seen[off / 4 / 64] |= 1ull << (off / 4 % 64);
		uint16_t id = (uint16_t)(hdr & 0xffff);
		add_cap(d, id, (uint16_t)off, true);
		if (id == PCI_EXT_CAP_ID_ACS && !d->acs_off)
			d->acs_off = (uint16_t)off;
		unsigned next = (hdr >> 20) & 0xffc;
		if (next == 0)
			return;
		if (next < PCI_EXT_CAP_START) {
			anomaly(d, "extended capability at 0x%03x points to 0x%03x (below 0x100); list cut", off, next);
			return;
		}
		if (seen[next / 4 / 64] & (1ull << (next / 4 % 64))) {
			anomaly(d, "extended capability list loops back to 0x%03x; list cut", next);
			return;
		}
		off = next;
	}
	anomaly(d, "more than %d extended capabilities; list cut", EXT_CAP_MAX_ITER);
}

static void read_pcie(struct pci_dev *d)
{
	if (!d->exp_off)
		return;
	uint16_t flags = (uint16_t)pci_read(d, (uint16_t)(d->exp_off + PCI_EXP_FLAGS), 2);
	d->exp_type = (flags >> PCI_EXP_FLAGS_TYPE_SHIFT) & 0xf;
	if (d->exp_type != PCI_EXP_TYPE_RC_END && d->exp_type != PCI_EXP_TYPE_RC_EC) {
		uint32_t cap = pci_read(d, (uint16_t)(d->exp_off + PCI_EXP_LNKCAP), 4);
		uint16_t sta = (uint16_t)pci_read(d, (uint16_t)(d->exp_off + PCI_EXP_LNKSTA), 2);
		d->link_max_speed = cap & PCI_EXP_LNKCAP_SPEED;
		d->link_max_width = (cap >> PCI_EXP_LNKCAP_WIDTH_SHIFT) & PCI_EXP_LNK_WIDTH_MASK;
		d->link_speed = sta & PCI_EXP_LNKSTA_SPEED;
		d->link_width = (sta >> PCI_EXP_LNKSTA_WIDTH_SHIFT) & PCI_EXP_LNK_WIDTH_MASK;
	}
	walk_ext_caps(d);
	if (d->acs_off) {
		d->acs_cap = (uint16_t)pci_read(d, (uint16_t)(d->acs_off + PCI_ACS_CAP), 2) & PCI_ACS_ALL;
		d->acs_ctrl_found = (uint16_t)pci_read(d, (uint16_t)(d->acs_off + PCI_ACS_CTRL), 2);
		d->acs_ctrl = d->acs_ctrl_found;
	}
}

/* Is mask of the form 1...10...0 and does it give a power-of-two size? */
static bool good_mask(uint64_t mask, uint64_t size)
{
	return size != 0 && (size & (size - 1)) == 0 && mask == ~(size - 1);
}

/* Size every BAR with decode turned off, then restore the BARs and the command register. */
static void size_bars(struct pci_dev *d)
{
	unsigned n = d->hdr_type == 0 ? PCI_NUM_BARS_TYPE0 : d->hdr_type == 1 ? PCI_NUM_BARS_TYPE1 : 0;
	uint16_t cmd = (uint16_t)pci_read(d, PCI_COMMAND, 2);

	d->command = cmd;
	d->nbars = n;
	if (!n)
		return;
	/* Decode off while a BAR holds all ones: it would claim the top of the address space. */
	pci_write(d, PCI_COMMAND, 2, cmd & ~(PCI_COMMAND_IO | PCI_COMMAND_MEMORY));
	for (unsigned i = 0; i < n; i++) {
		struct pci_bar *b = &d->bars[i];
		uint16_t off = (uint16_t)(PCI_BAR0 + 4 * i);
		uint32_t orig = pci_read(d, off, 4), rb, orig_hi = 0, rb_hi = 0;
		uint64_t mask, size;

		b->cache = -1;
		pci_write(d, off, 4, 0xffffffffu);
		rb = pci_read(d, off, 4);
		pci_write(d, off, 4, orig);
		if (rb == 0)
			continue; /* not implemented */
		if ((rb & PCI_BAR_IO) != (orig & PCI_BAR_IO)) {
			b->state = PCI_BAR_BAD;
			anomaly(d, "BAR%u changed type while sizing (0x%08x -> 0x%08x); ignored", i, orig, rb);
			continue;
		}
		if (orig & PCI_BAR_IO) {
			mask = rb & PCI_BAR_IO_MASK;
			if (!(mask & 0xffff0000u))
				mask |= 0xffff0000u; /* 16-bit I/O decode */
			mask |= 0xffffffff00000000ull;
			b->kind = PCI_BAR_KIND_IO;
			b->addr = orig & PCI_BAR_IO_MASK;
		} else {
			uint32_t type = orig & PCI_BAR_MEM_TYPE_MASK;
			b->prefetch = (orig & PCI_BAR_MEM_PREFETCH) != 0;
			if (type == PCI_BAR_MEM_TYPE_64) {
				if (i + 1 >= n) {
					b->state = PCI_BAR_BAD;
					anomaly(d, "BAR%u is 64-bit but has no upper half; ignored", i);
					continue;
				}
				orig_hi = pci_read(d, (uint16_t)(off + 4), 4);
				pci_write(d, (uint16_t)(off + 4), 4, 0xffffffffu);
				rb_hi = pci_read(d, (uint16_t)(off + 4), 4);
				pci_write(d, (uint16_t)(off + 4), 4, orig_hi);
				mask = ((uint64_t)rb_hi << 32) | (rb & PCI_BAR_MEM_MASK);
				b->kind = PCI_BAR_KIND_MEM64;
				b->addr = ((uint64_t)orig_hi << 32) | (orig & PCI_BAR_MEM_MASK);
			} else if (type == PCI_BAR_MEM_TYPE_32 || type == PCI_BAR_MEM_TYPE_1M) {
				mask = 0xffffffff00000000ull | (rb & PCI_BAR_MEM_MASK);
				b->kind = PCI_BAR_KIND_MEM32;
				b->addr = orig & PCI_BAR_MEM_MASK;
			} else {
				b->state = PCI_BAR_BAD;
				anomaly(d, "BAR%u has the reserved memory type 3 (0x%08x); ignored", i, orig);
				continue;
			}
		}
		size = ~mask + 1;
		if (!good_mask(mask, size)) {
			b->state = PCI_BAR_BAD;
			anomaly(d, "BAR%u sizing read back 0x%08x%s: not a size mask; ignored", i, rb,
				b->kind == PCI_BAR_KIND_MEM64 ? " (64-bit)" : "");
			b->kind = PCI_BAR_NONE;
		} else {
			b->size = size;
			if (b->addr & (size - 1))
				anomaly(d, "BAR%u address 0x%llx is not aligned to its size 0x%llx", i,
					(unsigned long long)b->addr, (unsigned long long)size);
		}
		if (pci_read(d, off, 4) != orig)
			anomaly(d, "BAR%u did not keep its value after sizing", i);
		if (b->kind == PCI_BAR_KIND_MEM64 || (orig & (PCI_BAR_IO | PCI_BAR_MEM_TYPE_MASK)) == PCI_BAR_MEM_TYPE_64)
			i++; /* the upper half is not a BAR of its own */
	}
	pci_write(d, PCI_COMMAND, 2, cmd);
	if ((pci_read(d, PCI_COMMAND, 2) & 0x7) != (cmd & 0x7u))
		anomaly(d, "command register did not restore to 0x%04x", cmd);
}

static void read_windows(struct pci_dev *d)
{
	uint32_t b = pci_read(d, PCI_IO_BASE, 1), l = pci_read(d, PCI_IO_LIMIT, 1);
	d->io_win.base = (b & 0xf0u) << 8;
	d->io_win.limit = ((l & 0xf0u) << 8) | 0xfff;
	if ((b & 0xf) == PCI_IO_RANGE_32) {
		d->io_win.base |= (uint64_t)pci_read(d, PCI_IO_BASE_UPPER16, 2) << 16;
		d->io_win.limit |= (uint64_t)pci_read(d, PCI_IO_LIMIT_UPPER16, 2) << 16;
	}
	b = pci_read(d, PCI_MEMORY_BASE, 2);
	l = pci_read(d, PCI_MEMORY_LIMIT, 2);
	d->mem_win.base = (uint64_t)(b & 0xfff0u) << 16;
	d->mem_win.limit = ((uint64_t)(l & 0xfff0u) << 16) | 0xfffff;
	b = pci_read(d, PCI_PREF_MEMORY_BASE, 2);
	l = pci_read(d, PCI_PREF_MEMORY_LIMIT, 2);
	d->pref_win.base = (uint64_t)(b & 0xfff0u) << 16;
	d->pref_win.limit = ((uint64_t)(l & 0xfff0u) << 16) | 0xfffff;
	if ((b & 0xf) == PCI_PREF_RANGE_64) {
		d->pref64 = true;
		d->pref_win.base |= (uint64_t)pci_read(d, PCI_PREF_BASE_UPPER32, 4) << 32;
		d->pref_win.limit |= (uint64_t)pci_read(d, PCI_PREF_LIMIT_UPPER32, 4) << 32;
	}
}

static bool win_open(const struct pci_window *w)
{
	return w->base <= w->limit;
}

static bool in_window(const struct pci_window *w, uint64_t addr, uint64_t size)
{
	return win_open(w) && size && addr >= w->base && addr <= w->limit && size - 1 <= w->limit - addr;
}

struct scan {
	struct pci_topo *t;
	uint64_t visited[256 / 64];
};

static void scan_bus(struct scan *s, unsigned bus, struct pci_dev *parent, unsigned depth);

static void read_function(struct pci_topo *t, struct pci_dev *d, uint16_t bdf, struct pci_dev *parent,
			  unsigned depth);

static struct pci_dev *add_function(struct scan *s, uint16_t bdf, struct pci_dev *parent, unsigned depth)
{
	struct pci_topo *t = s->t;
	if (t->ndevs >= PCI_MAX_DEVS) {
		t->truncated++;
		return NULL;
	}
	struct pci_dev *d = &t->devs[t->ndevs++];
	read_function(t, d, bdf, parent, depth);
	return d;
}

/* Fill d from the config space of the function at bdf. */
static void read_function(struct pci_topo *t, struct pci_dev *d, uint16_t bdf, struct pci_dev *parent,
			  unsigned depth)
{
	memset(d, 0, sizeof(*d));
	d->topo = t;
	d->parent = parent;
	d->bdf = bdf;
	d->depth = (uint8_t)depth;
	uint32_t id = pci_read(d, PCI_VENDOR_ID, 4);
	d->vendor = (uint16_t)id;
	d->device = (uint16_t)(id >> 16);
	uint32_t cls = pci_read(d, PCI_REVISION_ID, 4);
	d->revision = (uint8_t)cls;
	d->class = cls >> 8;
	uint8_t ht = (uint8_t)pci_read(d, PCI_HEADER_TYPE, 1);
	d->hdr_type = ht & PCI_HEADER_TYPE_MASK;
	d->multifunction = (ht & PCI_HEADER_TYPE_MULTI) != 0;
	for (unsigned i = 0; i < PCI_MAX_BARS; i++)
		d->bars[i].cache = -1;
	if (d->hdr_type > 1)
		anomaly(d, "header type %u (CardBus or unknown): BARs and bus not decoded", d->hdr_type);
	walk_caps(d);
	read_pcie(d);
	size_bars(d);
	if (pci_is_bridge(d)) {
		d->secondary = (uint8_t)pci_read(d, PCI_SECONDARY_BUS, 1);
		d->subordinate = (uint8_t)pci_read(d, PCI_SUBORDINATE_BUS, 1);
		read_windows(d);
	}
}

static void scan_bridge(struct scan *s, struct pci_dev *d, unsigned bus, unsigned depth)
{
	const struct pci_cfg *c = &s->t->cfg;
	unsigned sec = d->secondary, sub = d->subordinate;

	if (sec == 0) {
		anomaly(d, "bridge has no secondary bus number (firmware left it unconfigured); not scanned");
		return;
	}
	if (sec <= bus || sub < sec) {
		anomaly(d, "bridge bus numbers secondary %u subordinate %u are inconsistent below bus %u; not scanned",
			sec, sub, bus);
		return;
	}
	if (sec < c->bus_start || sec > c->bus_end) {
		anomaly(d, "secondary bus %u is outside the ECAM window (buses %u-%u); not scanned", sec,
			c->bus_start, c->bus_end);
		return;
	}
	if (sub > c->bus_end)
		anomaly(d, "subordinate bus %u is beyond the ECAM window (last bus %u)", sub, c->bus_end);
	if (d->parent && (sec <= d->parent->secondary || sub > d->parent->subordinate))
		anomaly(d, "buses %u-%u are not inside the parent bridge's %u-%u", sec, sub, d->parent->secondary,
			d->parent->subordinate);
	scan_bus(s, sec, d, depth + 1);
}

static void scan_bus(struct scan *s, unsigned bus, struct pci_dev *parent, unsigned depth)
{
	struct pci_topo *t = s->t;

	if (s->visited[bus / 64] & (1ull << (bus % 64))) {
		if (parent)
			anomaly(parent, "bus %u already scanned (two bridges claim it); not scanned again", bus);
		return;
	}
	s->visited[bus / 64] |= 1ull << (bus % 64);
	for (unsigned dev = 0; dev < 32; dev++) {
		for (unsigned fn = 0; fn < 8; fn++) {
			uint16_t bdf = PCI_BDF(bus, dev, fn);
			uint32_t vendor = 0xffff;
			t->cfg.ops->read(t->cfg.ctx, bdf, PCI_VENDOR_ID, 2, &vendor);
			if (vendor == 0xffff || vendor == 0) {
				if (fn == 0)
					break; /* no function 0: no device */
				continue;
			}
			uint32_t ht = 0;
			t->cfg.ops->read(t->cfg.ctx, bdf, PCI_HEADER_TYPE, 1, &ht);
			struct pci_dev *d = add_function(s, bdf, parent, depth);
			if (d && pci_is_bridge(d))
				scan_bridge(s, d, bus, depth);
			if (fn == 0 && !(ht & PCI_HEADER_TYPE_MULTI))
				break;
		}
	}
}

/* Check that a function's BARs lie inside its upstream bridge's windows. */
static void validate(struct pci_dev *d)
{
	struct pci_dev *p = d->parent;
	for (unsigned i = 0; i < d->nbars; i++) {
		struct pci_bar *b = &d->bars[i];
		if (!b->size || b->state == PCI_BAR_BAD || !b->addr || !p)
			continue;
		bool ok;
		if (b->kind == PCI_BAR_KIND_IO)
			ok = in_window(&p->io_win, b->addr, b->size);
		else if (b->prefetch)
			ok = in_window(&p->pref_win, b->addr, b->size) || in_window(&p->mem_win, b->addr, b->size);
		else
			ok = in_window(&p->mem_win, b->addr, b->size);
		if (!ok) {
			char pb[8];
			b->state = PCI_BAR_OUTSIDE_WINDOW;
			anomaly(d, "BAR%u [0x%llx size 0x%llx] is outside bridge %s's windows: not decoded, not mapped", i,
				(unsigned long long)b->addr, (unsigned long long)b->size, pci_bdf_str(p->bdf, pb));
		}
	}
	if (pci_is_bridge(d) && p) {
		if (win_open(&d->mem_win) && !in_window(&p->mem_win, d->mem_win.base, d->mem_win.limit - d->mem_win.base + 1))
			anomaly(d, "memory window is outside the parent bridge's");
		if (win_open(&d->pref_win) &&
		    !in_window(&p->pref_win, d->pref_win.base, d->pref_win.limit - d->pref_win.base + 1) &&
		    !in_window(&p->mem_win, d->pref_win.base, d->pref_win.limit - d->pref_win.base + 1))
			anomaly(d, "prefetchable window is outside the parent bridge's");
	}
}

/* Does [a, a+size) overlap anything already decoded below bridge p (other than skip)? */
static bool range_busy(struct pci_topo *t, struct pci_dev *p, uint64_t a, uint64_t size, bool io)
{
	for (unsigned i = 0; i < t->ndevs; i++) {
		struct pci_dev *d = &t->devs[i];
		if (d->parent != p)
			continue;
		for (unsigned j = 0; j < d->nbars; j++) {
			struct pci_bar *b = &d->bars[j];
			if (!b->size || b->state == PCI_BAR_BAD || !b->addr || (b->kind == PCI_BAR_KIND_IO) != io)
				continue;
			if (a < b->addr + b->size && b->addr < a + size)
				return true;
		}
		if (pci_is_bridge(d)) {
			const struct pci_window *ws[3] = { &d->io_win, &d->mem_win, &d->pref_win };
			for (unsigned k = io ? 0 : 1; k < (io ? 1u : 3u); k++)
				if (win_open(ws[k]) && a <= ws[k]->limit && ws[k]->base < a + size)
					return true;
		}
	}
	return false;
}

/* Lowest size-aligned free address for a BAR inside w, or 0. */
static uint64_t place(struct pci_topo *t, struct pci_dev *p, const struct pci_window *w, uint64_t size, bool io)
{
	if (!win_open(w))
		return 0;
	uint64_t a = (w->base + size - 1) & ~(size - 1);
	for (unsigned guard = 0; guard < 4096 && a >= w->base && a - 1 + size <= w->limit && a != 0; guard++) {
		if (!range_busy(t, p, a, size, io))
			return a;
		a += size;
	}
	return 0;
}

static void assign(struct pci_dev *d)
{
	struct pci_topo *t = d->topo;
	struct pci_dev *p = d->parent;

	for (unsigned i = 0; i < d->nbars; i++) {
		struct pci_bar *b = &d->bars[i];
		if (!b->size || b->state == PCI_BAR_BAD || b->addr)
			continue;
		bool io = b->kind == PCI_BAR_KIND_IO;
		uint64_t a = 0;
		const char *where = "no upstream bridge window (root bus)";
		if (p && t->policy.assign_bars) {
			if (io) {
				a = place(t, p, &p->io_win, b->size, true);
				where = "no room in the bridge's I/O window";
			} else {
				if (b->prefetch && (b->kind == PCI_BAR_KIND_MEM64 || !p->pref64))
					a = place(t, p, &p->pref_win, b->size, false);
				if (!a)
					a = place(t, p, &p->mem_win, b->size, false);
				where = "no room in the bridge's memory windows";
			}
			if (a && b->kind != PCI_BAR_KIND_MEM64 && (a >> 32)) {
				a = 0;
				where = "the only room is above 4 GiB and the BAR is 32-bit";
			}
		} else if (p) {
			where = "pci.assign is off";
		}
		if (!a) {
			b->state = PCI_BAR_UNASSIGNED;
			anomaly(d, "BAR%u (size 0x%llx) left unassigned by firmware: %s", i, (unsigned long long)b->size,
				where);
			continue;
		}
		uint16_t off = (uint16_t)(PCI_BAR0 + 4 * i);
		uint32_t lo = pci_read(d, off, 4);
		uint32_t flags = io ? (lo & 0x3) : (lo & 0xf);
		pci_write(d, off, 4, (uint32_t)a | flags);
		if (b->kind == PCI_BAR_KIND_MEM64)
			pci_write(d, (uint16_t)(off + 4), 4, (uint32_t)(a >> 32));
		uint64_t rb = pci_read(d, off, 4) & (io ? PCI_BAR_IO_MASK : PCI_BAR_MEM_MASK);
		if (b->kind == PCI_BAR_KIND_MEM64)
			rb |= (uint64_t)pci_read(d, (uint16_t)(off + 4), 4) << 32;
		if (rb != a) {
			b->state = PCI_BAR_UNASSIGNED;
			anomaly(d, "BAR%u: wrote 0x%llx, read back 0x%llx; left unassigned", i, (unsigned long long)a,
				(unsigned long long)rb);
			continue;
		}
		b->addr = a;
		b->state = PCI_BAR_PLACED;
		uint16_t decode = io ? PCI_COMMAND_IO : PCI_COMMAND_MEMORY;
		d->command |= decode;
		pci_write(d, PCI_COMMAND, 2, d->command);
		char bdf[8];
		log_info("%s: BAR%u placed at 0x%llx (size 0x%llx)", pci_bdf_str(d->bdf, bdf), i,
			 (unsigned long long)a, (unsigned long long)b->size);
	}
}

/* Hot-add one function below parent. */
struct pci_dev *pci_add_function(struct pci_topo *t, struct pci_dev *parent, uint16_t bdf)
{
	struct pci_dev *d = NULL;
	for (unsigned i = 0; i < t->ndevs && !d; i++)
		if (t->devs[i].removed && t->devs[i].bdf == bdf)
			d = &t->devs[i];
	if (!d) {
		if (t->ndevs >= PCI_MAX_DEVS) {
			t->truncated++;
			return NULL;
		}
		d = &t->devs[t->ndevs++];
	}
	read_function(t, d, bdf, parent, parent ? parent->depth + 1u : 0u);
	validate(d);
	assign(d);
	for (unsigned j = 0; j < d->nbars; j++)
		if (d->bars[j].size && d->bars[j].kind != PCI_BAR_KIND_IO && d->bars[j].addr &&
		    d->bars[j].state != PCI_BAR_OUTSIDE_WINDOW && d->bars[j].state != PCI_BAR_BAD)
			pci_bar_map(d, j, 2 /* ARCH_CACHE_UC */);
	return d;
}

/* Map a memory BAR. */
int pci_bar_map(struct pci_dev *d, unsigned bar, int cache)
{
	if (bar >= d->nbars)
		return -EINVAL;
	struct pci_bar *b = &d->bars[bar];
	if (!b->size || b->state == PCI_BAR_BAD || !b->addr || b->state == PCI_BAR_OUTSIDE_WINDOW ||
	    b->kind == PCI_BAR_KIND_IO)
		return -EINVAL;
	if (!d->topo->map) {
		b->cache = (int8_t)cache;
		return 0;
	}
	int rc = d->topo->map(b->addr, b->size, cache);
	if (rc == 0)
		b->cache = (int8_t)cache;
	return rc;
}

void pci_enable(struct pci_dev *d, bool master)
{
	d->command |= PCI_COMMAND_MEMORY | (master ? PCI_COMMAND_MASTER : 0);
	pci_write(d, PCI_COMMAND, 2, d->command);
}

/* Enumerate a segment. */
int pci_enumerate(struct pci_topo *t)
{
	struct scan s;
	uint64_t t0 = clock_now_ns();

	if (!t->cfg.ops || t->cfg.bus_end < t->cfg.bus_start)
		return -EINVAL;
	memset(t->devs, 0, sizeof(t->devs));
	t->ndevs = 0;
	t->anomalies = 0;
	t->truncated = 0;
	memset(&s, 0, sizeof(s));
	s.t = t;
	scan_bus(&s, t->cfg.bus_start, NULL, 0);
	if (t->truncated)
		log_warn("%u functions not recorded (table holds %d)", t->truncated, PCI_MAX_DEVS);
	for (unsigned i = 0; i < t->ndevs; i++)
		validate(&t->devs[i]);
	for (unsigned i = 0; i < t->ndevs; i++)
		assign(&t->devs[i]);
	/* Registers uncached until a driver publishes part of a BAR for P2P (then WC). */
	for (unsigned i = 0; i < t->ndevs; i++)
		for (unsigned j = 0; j < t->devs[i].nbars; j++)
			if (t->devs[i].bars[j].size && t->devs[i].bars[j].kind != PCI_BAR_KIND_IO &&
			    t->devs[i].bars[j].addr && t->devs[i].bars[j].state != PCI_BAR_OUTSIDE_WINDOW &&
			    t->devs[i].bars[j].state != PCI_BAR_BAD)
				pci_bar_map(&t->devs[i], j, 2 /* ARCH_CACHE_UC */);
	t->enum_ns = clock_now_ns() - t0;
	return (int)t->ndevs;
}

/* --- names --- */

const char *pci_class_name(uint32_t class)
{
	static const struct {
		uint32_t cls, mask;
		const char *name;
	} names[] = {
		{ 0x010802, 0xffffff, "NVMe controller" },
		{ 0x010601, 0xffffff, "SATA controller (AHCI)" },
		{ 0x010000, 0xff0000, "mass storage" },
		{ 0x020000, 0xffff00, "Ethernet controller" },
		{ 0x020000, 0xff0000, "network controller" },
		{ 0x030000, 0xff0000, "display controller" },
		{ 0x060000, 0xffff00, "host bridge" },
		{ 0x060100, 0xffff00, "ISA bridge" },
		{ 0x060400, 0xffff00, "PCI bridge" },
		{ 0x060000, 0xff0000, "bridge" },
		{ 0x0c0500, 0xffff00, "SMBus" },
		{ 0x0c0000, 0xff0000, "serial bus controller" },
		{ 0x120000, 0xff0000, "processing accelerator" },
		{ 0x050000, 0xff0000, "memory controller" },
	};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if ((class & names[i].mask) == names[i].cls)
			return names[i].name;
	return "device";
}

const char *pci_exp_type_name(uint8_t type)
{
	switch (type) {
	case PCI_EXP_TYPE_ENDPOINT: return "endpoint";
	case PCI_EXP_TYPE_LEG_END: return "legacy endpoint";
	case PCI_EXP_TYPE_ROOT_PORT: return "root port";
	case PCI_EXP_TYPE_UPSTREAM: return "switch upstream port";
	case PCI_EXP_TYPE_DOWNSTREAM: return "switch downstream port";
	case PCI_EXP_TYPE_PCI_BRIDGE: return "PCIe-to-PCI bridge";
	case PCI_EXP_TYPE_PCIE_BRIDGE: return "PCI-to-PCIe bridge";
	case PCI_EXP_TYPE_RC_END: return "root complex integrated endpoint";
	case PCI_EXP_TYPE_RC_EC: return "root complex event collector";
	default: return "unknown PCIe type";
	}
}

const char *pci_cap_name(uint16_t id, bool ext)
{
	if (ext) {
		switch (id) {
		case PCI_EXT_CAP_ID_AER: return "AER";
		case PCI_EXT_CAP_ID_DSN: return "serial-number";
		case PCI_EXT_CAP_ID_VNDR: return "vendor-specific-ext";
		case PCI_EXT_CAP_ID_ACS: return "ACS";
		case PCI_EXT_CAP_ID_ARI: return "ARI";
		case PCI_EXT_CAP_ID_SRIOV: return "SR-IOV";
		case PCI_EXT_CAP_ID_LTR: return "LTR";
		case PCI_EXT_CAP_ID_SECPCI: return "secondary-PCIe";
		case PCI_EXT_CAP_ID_DVSEC: return "DVSEC";
		default: return "ext";
		}
	}
	switch (id) {
	case PCI_CAP_ID_PM: return "power-management";
	case PCI_CAP_ID_MSI: return "MSI";
	case PCI_CAP_ID_VNDR: return "vendor-specific";
	case PCI_CAP_ID_SSVID: return "subsystem-id";
	case PCI_CAP_ID_EXP: return "PCIe";
	case PCI_CAP_ID_MSIX: return "MSI-X";
	default: return "cap";
	}
}

unsigned pci_link_speed_x10(uint8_t speed)
{
	static const unsigned gts[] = { 0, 25, 50, 80, 160, 320, 640 };
	return speed < sizeof(gts) / sizeof(gts[0]) ? gts[speed] : 0;
}
