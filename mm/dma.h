/*
 * dma.h - addresses that devices use, tagged with the memory they point into.
 *
 * A dma_addr_t is not a pointer: it is what a device puts on the bus. Its class says
 * whether the bytes live in host DRAM or in device memory (a peer's BAR, e.g. an NVMe
 * CMB), so every layer can count host-DRAM bytes per payload byte, the figure this
 * appliance exists to minimise. The appliance runs identity-mapped, so for host memory
 * the bus address equals the physical address of the pointer.
 */
#ifndef MM_DMA_H
#define MM_DMA_H

#include <stdint.h>

enum mem_class {
	MEM_CLASS_HOST = 0,   /* host DRAM */
	MEM_CLASS_DEVICE = 1, /* device memory (a BAR published for peer-to-peer) */
	MEM_CLASS_COUNT
};

enum dma_dir {
	DMA_TO_DEVICE = 0,    /* the device reads the memory */
	DMA_FROM_DEVICE = 1,  /* the device writes the memory */
	DMA_DIR_COUNT
};

typedef struct {
	uint64_t bus;
	enum mem_class cls;
} dma_addr_t;

/* The bus address of host memory at p. */
static inline dma_addr_t dma_addr_host(const void *p)
{
	dma_addr_t a = { (uint64_t)(uintptr_t)p, MEM_CLASS_HOST };
	return a;
}

/* A bus address in device memory. */
static inline dma_addr_t dma_addr_device(uint64_t bus)
{
	dma_addr_t a = { bus, MEM_CLASS_DEVICE };
	return a;
}

/* The same memory `off` bytes further on. */
static inline dma_addr_t dma_addr_add(dma_addr_t a, uint64_t off)
{
	a.bus += off;
	return a;
}

struct dma_counters {
	uint64_t dma_bytes[MEM_CLASS_COUNT][DMA_DIR_COUNT]; /* moved by devices */
	uint64_t cpu_bytes[MEM_CLASS_COUNT];                /* touched by CPU copies */
};

/* The counters themselves (dma.c); read them through dma_counters(). */
extern struct dma_counters dma_counters_now;

/* Count `bytes` moved by a device to or from memory of class cls. Inline: the data path
 * counts every command and frame, mostly with constant classes that fold to one add. */
static inline void dma_account(enum mem_class cls, enum dma_dir dir, uint64_t bytes)
{
	if ((unsigned)cls < MEM_CLASS_COUNT && (unsigned)dir < DMA_DIR_COUNT)
		dma_counters_now.dma_bytes[cls][dir] += bytes;
}

/* Count `bytes` read or written by the CPU in memory of class cls (copies, parsing). */
static inline void dma_account_cpu(enum mem_class cls, uint64_t bytes)
{
	if ((unsigned)cls < MEM_CLASS_COUNT)
		dma_counters_now.cpu_bytes[cls] += bytes;
}

/* The counters since boot (or the last reset). */
const struct dma_counters *dma_counters(void);

/* Zero the counters (console `stats reset`, tests). */
void dma_counters_reset(void);

/* Name of a memory class. */
const char *mem_class_name(enum mem_class cls);

#endif
