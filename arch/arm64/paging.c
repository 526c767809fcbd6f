/*
 * paging.c - the appliance's own identity translation tables (stage 1, EL1, 4 KiB
 * granule), with the memory types the drivers need: Normal write-back for DRAM, Normal
 * non-cacheable for prefetchable device memory (an NVMe CMB: the arm64 counterpart of
 * x86 write-combining) and Device-nGnRE for registers.
 *
 * The firmware's TCR_EL1 is kept (its T0SZ decides how many levels the tables have), and so
 * are MAIR_EL1 attributes 0-3, which the firmware's own tables use until TTBR0_EL1 is
 * switched: the appliance's types go into attributes 4-6, so no live mapping ever changes
 * meaning. Page 0 and the guard page below the kernel stack stay unmapped. 2 MiB blocks
 * where both ends allow it, 4 KiB pages elsewhere; a block is split (break-before-make)
 * when part of it needs another type.
 */
#include <errno.h>
#include <stdint.h>
#include "../cpu_ops.h"
#include "arch.h"

/* VMSAv8-64 descriptor bits (ARM ARM D8.3). */
#define DESC_VALID (1ull << 0)
#define DESC_TABLE (1ull << 1)       /* table (levels 0-2) or page (level 3); 0 = block */
#define DESC_ATTRINDX(i) ((uint64_t)(i) << 2)
#define DESC_ATTRINDX_MASK (7ull << 2)
#define DESC_SH_OUTER (2ull << 8)
#define DESC_SH_INNER (3ull << 8)
#define DESC_AF (1ull << 10)         /* access flag: set, or the first access faults */
#define DESC_PXN (1ull << 53)        /* privileged execute-never */
#define DESC_UXN (1ull << 54)        /* unprivileged execute-never */
#define DESC_ADDR 0x0000fffffffff000ull
#define DESC_ADDR_2M 0x0000ffffffe00000ull

/* MAIR_EL1 attribute encodings (ARM ARM D17.2.97) in the appliance's slots 4-6. */
#define ATTR_WB 4                    /* 0xff: Normal, inner/outer write-back non-transient RW-allocate */
#define ATTR_NC 5                    /* 0x44: Normal, inner/outer non-cacheable */
#define ATTR_DEVICE 6                /* 0x04: Device-nGnRE */
#define MAIR_APPLIANCE ((0xffull << (8 * ATTR_WB)) | (0x44ull << (8 * ATTR_NC)) | (0x04ull << (8 * ATTR_DEVICE)))
#define MAIR_FIRMWARE_MASK 0xffffffffull

#define TCR_T0SZ(tcr) ((tcr) & 0x3f)
#define TCR_TG0(tcr) (((tcr) >> 14) & 3) /* 0 = 4 KiB granule */
#define SCTLR_WXN (1ull << 19)           /* writable implies execute-never */
#define SIZE_2M (2ull << 20)

static uint64_t *root;
static unsigned root_level;          /* 0 when the VA has more than 39 bits, else 1 */
static uint64_t virt_limit;
static int live;                     /* TTBR0_EL1 points at root */
static arch_page_alloc_fn page_alloc;
static uint64_t mair_value;

static uint64_t attr_bits(enum arch_cache cache)
{
	switch (cache) {
	case ARCH_CACHE_WB:
		return DESC_ATTRINDX(ATTR_WB) | DESC_SH_INNER | DESC_AF | DESC_UXN;
	case ARCH_CACHE_WC:
		return DESC_ATTRINDX(ATTR_NC) | DESC_SH_OUTER | DESC_AF | DESC_UXN | DESC_PXN;
	default:
		return DESC_ATTRINDX(ATTR_DEVICE) | DESC_AF | DESC_UXN | DESC_PXN;
	}
}

static enum arch_cache cache_of(uint64_t desc)
{
	switch ((desc & DESC_ATTRINDX_MASK) >> 2) {
	case ATTR_WB:
		return ARCH_CACHE_WB;
	case ATTR_NC:
		return ARCH_CACHE_WC;
	default:
		return ARCH_CACHE_UC;
	}
}

/* Name of a memory type. */
const char *arch_cache_name(enum arch_cache cache)
{
	return cache == ARCH_CACHE_WB ? "normal write-back"
	       : cache == ARCH_CACHE_WC ? "normal non-cacheable (write-combining)"
				       : "device-nGnRE (uncached)";
}

static void tlb_flush_all(void)
{
	__asm__ volatile("dsb ishst; tlbi vmalle1; dsb ish; isb" ::: "memory");
}

/* Replace a descriptor; a valid one in live tables is broken first (ARM ARM D8.14.1). */
static void set_desc(uint64_t *slot, uint64_t desc)
{
	if (live && (*slot & DESC_VALID) && *slot != desc) {
		*slot = 0;
		tlb_flush_all();
	}
	*slot = desc;
}

static unsigned shift_of(unsigned level)
{
	return 39 - 9 * level;
}

/* The table of `level` covering virt, created (or split from a block) when needed. */
static uint64_t *table_for(uint64_t virt, unsigned level)
{
	uint64_t *t = root;
	for (unsigned l = root_level; l < level; l++) {
		uint64_t *slot = &t[(virt >> shift_of(l)) & 511];
		uint64_t e = *slot;
		if (!(e & DESC_VALID)) {
			uint64_t *n = page_alloc();
			if (!n)
				return NULL;
			set_desc(slot, (uint64_t)(uintptr_t)n | DESC_TABLE | DESC_VALID);
		} else if (!(e & DESC_TABLE)) {
			/* a 2 MiB block at level 2: split into 512 pages of the same type */
			uint64_t *n = page_alloc();
			if (!n)
				return NULL;
			for (unsigned i = 0; i < 512; i++)
				n[i] = ((e & DESC_ADDR_2M) + i * 4096ull) | (e & ~DESC_ADDR) | DESC_TABLE;
			__asm__ volatile("dsb ishst" ::: "memory");
			set_desc(slot, (uint64_t)(uintptr_t)n | DESC_TABLE | DESC_VALID);
		}
		t = (uint64_t *)(uintptr_t)(*slot & DESC_ADDR);
	}
	return t;
}

static int map_2m(uint64_t addr, uint64_t bits)
{
	uint64_t *l2 = table_for(addr, 2);
	if (!l2)
		return -ENOMEM;
	uint64_t *slot = &l2[(addr >> 21) & 511];
	if ((*slot & DESC_VALID) && (*slot & DESC_TABLE)) {
		/* already split: rewrite its pages rather than drop the table */
		uint64_t *l3 = (uint64_t *)(uintptr_t)(*slot & DESC_ADDR);
		for (unsigned i = 0; i < 512; i++)
			set_desc(&l3[i], (addr + i * 4096ull) | bits | DESC_TABLE | DESC_VALID);
		return 0;
	}
	set_desc(slot, addr | bits | DESC_VALID);
	return 0;
}

static int map_4k(uint64_t addr, uint64_t bits, int present)
{
	uint64_t *l3 = table_for(addr, 3);
	if (!l3)
		return -ENOMEM;
	set_desc(&l3[(addr >> 12) & 511], present ? (addr | bits | DESC_TABLE | DESC_VALID) : 0);
	return 0;
}

static int map_range(uint64_t phys, uint64_t size, enum arch_cache cache)
{
	uint64_t addr = phys & ~4095ull;
	uint64_t end = (phys + size + 4095) & ~4095ull;
	uint64_t bits = attr_bits(cache);
	int rc = 0;

	if (size == 0 || end <= addr || end > virt_limit)
		return -EINVAL;
	while (addr < end && rc == 0) {
		if (addr % SIZE_2M == 0 && end - addr >= SIZE_2M) {
			rc = map_2m(addr, bits);
			addr += SIZE_2M;
		} else {
			rc = map_4k(addr, bits, 1);
			addr += 4096;
		}
	}
	return rc;
}

/* Identity-map a device range. */
int arch_map(uint64_t phys, uint64_t size, enum arch_cache cache)
{
	if (!root)
		return -EINVAL;
	int rc = map_range(phys, size, cache);
	if (live)
		tlb_flush_all();
	return rc;
}

/* Build the tables and switch to them. */
int arch_paging_init(const struct arch_map_range *ranges, unsigned n, uint64_t guard_page,
		     arch_page_alloc_fn alloc_page)
{
	uint64_t tcr = ARCH_READ_SYSREG(tcr_el1);
	uint64_t el = (ARCH_READ_SYSREG(currentel) >> 2) & 3;
	uint64_t gicd, gicr, gicr_size;
	unsigned va_bits = 64 - (unsigned)TCR_T0SZ(tcr);
	int rc;

	if (el != 1 || TCR_TG0(tcr) != 0 || va_bits < 31 || va_bits > 48)
		return -ENOTSUP;
	root_level = va_bits > 39 ? 0 : 1;
	virt_limit = 1ull << va_bits;
	page_alloc = alloc_page;
	root = page_alloc();
	if (!root)
		return -ENOMEM;
	rc = 0;
	for (unsigned i = 0; i < n && rc == 0; i++)
		rc = map_range(ranges[i].base, ranges[i].size, ranges[i].cache);
	if (rc == 0 && arm64_console_base())
		rc = map_range(arm64_console_base(), 4096, ARCH_CACHE_UC);
	arm64_gic_regions(&gicd, &gicr, &gicr_size);
	if (rc == 0 && gicd)
		rc = map_range(gicd, 0x10000, ARCH_CACHE_UC);
	if (rc == 0 && gicr)
		rc = map_range(gicr, gicr_size, ARCH_CACHE_UC);
	if (rc == 0)
		rc = map_4k(0, 0, 0);
	if (rc == 0 && guard_page)
		rc = map_4k(guard_page, 0, 0);
	if (rc) {
		root = NULL;
		return rc;
	}
	mair_value = (ARCH_READ_SYSREG(mair_el1) & MAIR_FIRMWARE_MASK) | MAIR_APPLIANCE;
	__asm__ volatile("dsb ishst" ::: "memory");
	ARCH_WRITE_SYSREG(mair_el1, mair_value);
	__asm__ volatile("isb" ::: "memory");
	ARCH_WRITE_SYSREG(ttbr0_el1, (uint64_t)(uintptr_t)root);
	/* our RAM is writable and executable (one image, one privilege level) */
	ARCH_WRITE_SYSREG(sctlr_el1, ARCH_READ_SYSREG(sctlr_el1) & ~SCTLR_WXN);
	__asm__ volatile("isb" ::: "memory");
	tlb_flush_all();
	live = 1;
	return 0;
}

/* Walk the tables for virt. */
int arch_walk(uint64_t virt, struct arch_walk *w)
{
	const uint64_t *t = root;

	w->present = 0;
	if (!t || virt >= virt_limit)
		return -ENOENT;
	for (unsigned l = root_level; l <= 3; l++) {
		uint64_t e = t[(virt >> shift_of(l)) & 511];
		if (!(e & DESC_VALID))
			return -ENOENT;
		if (l == 3 || !(e & DESC_TABLE)) {
			uint64_t mask = (1ull << shift_of(l)) - 1;
			w->present = 1;
			w->pte = e;
			w->level = l == 3 ? 1 : 2;
			w->cache = cache_of(e);
			w->phys = (e & DESC_ADDR & ~mask) | (virt & mask);
			return 0;
		}
		t = (const uint64_t *)(uintptr_t)(e & DESC_ADDR);
	}
	return -ENOENT;
}

/* MAIR_EL1 as programmed. */
uint64_t arch_memattr_value(void)
{
	return mair_value;
}
