/*
 * dma.c - counters of bytes by memory class (see dma.h).
 */
#include <stdio.h>
#include <string.h>
#include "../lib/stats.h"
#include "dma.h"

static struct dma_counters counters;

/* Count device DMA. */
void dma_account(enum mem_class cls, enum dma_dir dir, uint64_t bytes)
{
	if (cls < MEM_CLASS_COUNT && dir < DMA_DIR_COUNT)
		counters.dma_bytes[cls][dir] += bytes;
}

/* Count CPU access. */
void dma_account_cpu(enum mem_class cls, uint64_t bytes)
{
	if (cls < MEM_CLASS_COUNT)
		counters.cpu_bytes[cls] += bytes;
}

/* Read the counters. */
const struct dma_counters *dma_counters(void)
{
	return &counters;
}

/* Zero the counters. */
void dma_counters_reset(void)
{
	memset(&counters, 0, sizeof(counters));
}

/* Class name. */
const char *mem_class_name(enum mem_class cls)
{
	return cls == MEM_CLASS_HOST ? "host-dram" : cls == MEM_CLASS_DEVICE ? "device" : "?";
}

static void dma_stats_show(void)
{
	for (int c = 0; c < MEM_CLASS_COUNT; c++)
		printf("  %-10s dma-to-device %llu B  dma-from-device %llu B  cpu %llu B\n",
		       mem_class_name(c), (unsigned long long)counters.dma_bytes[c][DMA_TO_DEVICE],
		       (unsigned long long)counters.dma_bytes[c][DMA_FROM_DEVICE],
		       (unsigned long long)counters.cpu_bytes[c]);
}
STATS_SECTION(dma, dma_stats_show);
