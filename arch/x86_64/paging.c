/*
 * paging.c - the appliance's own 4-level identity page tables, with PAT so that device
 * memory can be mapped write-combining (an NVMe CMB) or uncached (registers).
 *
 * Everything stays identity-mapped (virtual == physical). Page 0 is left unmapped so a
 * NULL dereference faults, and so is the guard page below the kernel stack. Mappings use
 * 2 MiB pages where both ends allow it and 4 KiB pages elsewhere; a 2 MiB page is split
 * when part of it needs another cache type.
 */
#include <errno.h>
#include <stdint.h>
#include "arch.h"
#include "cpu.h"

/* Page-table entry bits (Intel SDM vol. 3, 4.5). */
#define PTE_P (1ull << 0)      /* present */
#define PTE_RW (1ull << 1)     /* writable */
#define PTE_PWT (1ull << 3)    /* page write-through: PAT index bit 0 */
#define PTE_PCD (1ull << 4)    /* page cache disable: PAT index bit 1 */
#define PTE_PS (1ull << 7)     /* page size: 2 MiB leaf in a PD entry */
#define PTE_ADDR 0x000ffffffffff000ull
#define PTE_ADDR_2M 0x000fffffffe00000ull
#define PTE_CACHE (PTE_PWT | PTE_PCD)

#define SIZE_2M (2ull << 20)
#define SIZE_4G (4ull << 30)
#define VIRT_LIMIT (1ull << 47) /* lower canonical half */

/* IA32_PAT entries: PA0 WB(6) PA1 WC(1) PA2 UC-(7) PA3 UC(0), PA4-7 the reset values. */
#define PAT_VALUE 0x0007040600070106ull
#define CPUID1_EDX_PAT (1u << 16)

static uint64_t *pml4;
static arch_page_alloc_fn page_alloc;
static uint64_t pat_value;

static uint64_t cache_bits(enum arch_cache cache)
{
	switch (cache) {
	case ARCH_CACHE_WB:
		return 0;           /* PAT index 0 */
	case ARCH_CACHE_WC:
		return PTE_PWT;     /* PAT index 1 */
	default:
		return PTE_PWT | PTE_PCD; /* PAT index 3 */
	}
}

static enum arch_cache cache_of(uint64_t pte)
{
	switch (pte & PTE_CACHE) {
	case 0:
		return ARCH_CACHE_WB;
	case PTE_PWT:
		return ARCH_CACHE_WC;
	default:
		return ARCH_CACHE_UC;
	}
}

/* Name of a cache type. */
const char *arch_cache_name(enum arch_cache cache)
{
	return cache == ARCH_CACHE_WB ? "write-back" : cache == ARCH_CACHE_WC ? "write-combining" : "uncached";
}

/* The next-level table under entry `idx` of `table`, created when absent. */
static uint64_t *next_table(uint64_t *table, unsigned idx)
{
	if (!(table[idx] & PTE_P)) {
		uint64_t *t = page_alloc();
		if (!t)
			return NULL;
		table[idx] = (uint64_t)(uintptr_t)t | PTE_P | PTE_RW;
	}
	return (uint64_t *)(uintptr_t)(table[idx] & PTE_ADDR);
}

/* The PD covering virt, or NULL. */
static uint64_t *pd_for(uint64_t virt)
{
	uint64_t *pdpt = next_table(pml4, (virt >> 39) & 511);
	return pdpt ? next_table(pdpt, (virt >> 30) & 511) : NULL;
}

/* The PT covering virt, splitting a 2 MiB page into 512 4 KiB pages if needed. */
static uint64_t *pt_for(uint64_t virt)
{
	uint64_t *pd = pd_for(virt);
	if (!pd)
		return NULL;
	unsigned idx = (virt >> 21) & 511;
	uint64_t e = pd[idx];
	if ((e & PTE_P) && (e & PTE_PS)) {
		uint64_t *pt = page_alloc();
		if (!pt)
			return NULL;
		for (unsigned i = 0; i < 512; i++)
			pt[i] = ((e & PTE_ADDR_2M) + i * 4096ull) | (e & (PTE_P | PTE_RW | PTE_CACHE));
		pd[idx] = (uint64_t)(uintptr_t)pt | PTE_P | PTE_RW;
	}
	return next_table(pd, idx);
}

static int map_2m(uint64_t addr, uint64_t bits)
{
	uint64_t *pd = pd_for(addr);
	if (!pd)
		return -ENOMEM;
	unsigned idx = (addr >> 21) & 511;
	if ((pd[idx] & PTE_P) && !(pd[idx] & PTE_PS)) {
		/* Already split: rewrite its 4 KiB entries rather than drop the table. */
		uint64_t *pt = (uint64_t *)(uintptr_t)(pd[idx] & PTE_ADDR);
		for (unsigned i = 0; i < 512; i++)
			pt[i] = (addr + i * 4096ull) | PTE_P | PTE_RW | bits;
		return 0;
	}
	pd[idx] = addr | PTE_P | PTE_RW | PTE_PS | bits;
	return 0;
}

static int map_4k(uint64_t addr, uint64_t bits, int present)
{
	uint64_t *pt = pt_for(addr);
	if (!pt)
		return -ENOMEM;
	pt[(addr >> 12) & 511] = present ? (addr | PTE_P | PTE_RW | bits) : 0;
	return 0;
}

static void flush_tlb(void)
{
	if (pml4 && (read_cr3() & PTE_ADDR) == (uint64_t)(uintptr_t)pml4)
		write_cr3(read_cr3());
}

static int map_range(uint64_t phys, uint64_t size, enum arch_cache cache)
{
	uint64_t addr = phys & ~4095ull;
	uint64_t end = (phys + size + 4095) & ~4095ull;
	uint64_t bits = cache_bits(cache);
	int rc = 0;

	if (size == 0 || end <= addr || end > VIRT_LIMIT)
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
	if (!pml4)
		return -EINVAL;
	int rc = map_range(phys, size, cache);
	flush_tlb();
	return rc;
}

/* Build and load the page tables. */
int arch_paging_init(const struct arch_map_range *ranges, unsigned n, uint64_t guard_page,
		     arch_page_alloc_fn alloc_page)
{
	uint32_t id[4];
	int rc;

	page_alloc = alloc_page;
	pml4 = page_alloc();
	if (!pml4)
		return -ENOMEM;
	rc = map_range(0, SIZE_4G, ARCH_CACHE_UC);
	for (unsigned i = 0; i < n && rc == 0; i++)
		rc = map_range(ranges[i].base, ranges[i].size, ranges[i].cache);
	if (rc == 0)
		rc = map_4k(0, 0, 0);
	if (rc == 0 && guard_page)
		rc = map_4k(guard_page, 0, 0);
	if (rc) {
		pml4 = NULL;
		return rc;
	}

	cpuid(1, 0, id);
	if (id[3] & CPUID1_EDX_PAT) {
		/* SDM 11.12.4: flush caches and TLBs around a PAT change. */
		wbinvd();
		wrmsr(MSR_IA32_PAT, PAT_VALUE);
		wbinvd();
	}
	pat_value = (id[3] & CPUID1_EDX_PAT) ? rdmsr(MSR_IA32_PAT) : 0;
	write_cr3((uint64_t)(uintptr_t)pml4);
	return 0;
}

/* Walk the tables for virt. */
int arch_walk(uint64_t virt, struct arch_walk *w)
{
	const uint64_t *t = pml4;
	static const unsigned shifts[4] = { 39, 30, 21, 12 };

	w->present = 0;
	if (!t || virt >= VIRT_LIMIT)
		return -ENOENT;
	for (unsigned lvl = 0; lvl < 4; lvl++) {
		uint64_t e = t[(virt >> shifts[lvl]) & 511];
		if (!(e & PTE_P))
			return -ENOENT;
		if (lvl == 3 || (lvl == 2 && (e & PTE_PS))) {
			uint64_t mask = (1ull << shifts[lvl]) - 1;
			w->present = 1;
			w->pte = e;
			w->level = lvl == 3 ? 1 : 2;
			w->cache = cache_of(e);
			w->phys = (e & (lvl == 3 ? PTE_ADDR : PTE_ADDR_2M)) | (virt & mask);
			return 0;
		}
		t = (const uint64_t *)(uintptr_t)(e & PTE_ADDR);
	}
	return -ENOENT;
}

/* The PAT MSR as read back after programming. */
uint64_t arch_memattr_value(void)
{
	return pat_value;
}
