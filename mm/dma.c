/*
 * dma.c - counters of bytes by memory class (see dma.h).
 */
#include <stdio.h>
#include <string.h>
#include "../lib/stats.h"
#include "dma.h"

struct dma_counters dma_counters_now;

/* Read the counters. */
const struct dma_counters *dma_counters(void)
{
	return &dma_counters_now;
}

/* Zero the counters. */
void dma_counters_reset(void)
{
	memset(&dma_counters_now, 0, sizeof(dma_counters_now));
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
		       mem_class_name(c), (unsigned long long)dma_counters_now.dma_bytes[c][DMA_TO_DEVICE],
		       (unsigned long long)dma_counters_now.dma_bytes[c][DMA_FROM_DEVICE],
		       (unsigned long long)dma_counters_now.cpu_bytes[c]);
}
STATS_SECTION(dma, dma_stats_show);
