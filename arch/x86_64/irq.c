/*
 * irq.c - device interrupts (../irq.h) on x86_64: local APIC vectors for MSI/MSI-X.
 *
 * A message to address 0xFEE00000 | APIC ID << 12 with data = vector (fixed delivery,
 * edge) raises `vector` on this CPU (Intel SDM vol. 3, 11.11 "Message Signalled
 * Interrupts"). Each handed-out vector has its own stub in isr.S that bumps its counter
 * and the total, writes EOI and returns; descriptors.c points the IDT at them.
 */
#include <errno.h>
#include <stdio.h>
#include "../../lib/stats.h"
#include "../irq.h"
#include "arch.h"
#include "cpu.h"

#define MSI_ADDR_BASE 0xfee00000ull
#define MSI_ADDR_DEST_SHIFT 12         /* Destination ID: the APIC ID (physical mode) */

/* Written by isr.S's device stubs. */
__attribute__((visibility("hidden"))) volatile uint64_t arch_irq_counts[ARCH_IRQ_MAX];
__attribute__((visibility("hidden"))) volatile uint64_t arch_irq_all;

static const char *owners[ARCH_IRQ_MAX];
static unsigned n_given;

/* A vector and its message. */
int arch_irq_alloc(const char *owner, struct arch_irq_msg *msg)
{
	uint32_t id[4];

	if (n_given >= ARCH_IRQ_MAX)
		return -ENOSPC;
	cpuid(1, 0, id);
	msg->vector = ARCH_VECTOR_DEVICE_FIRST + n_given;
	msg->addr = MSI_ADDR_BASE | (uint64_t)(id[1] >> 24) << MSI_ADDR_DEST_SHIFT; /* CPUID.1:EBX[31:24] */
	msg->data = msg->vector;       /* fixed delivery, edge trigger */
	owners[n_given++] = owner;
	return 0;
}

/* Count of one vector. */
uint64_t arch_irq_count(unsigned vector)
{
	if (vector < ARCH_VECTOR_DEVICE_FIRST || vector >= ARCH_VECTOR_DEVICE_FIRST + n_given)
		return 0;
	return arch_irq_counts[vector - ARCH_VECTOR_DEVICE_FIRST];
}

/* Count of all. */
uint64_t arch_irq_total(void)
{
	return arch_irq_all;
}

static void irq_stats_show(void)
{
	printf("  device interrupts %llu\n", (unsigned long long)arch_irq_all);
	for (unsigned i = 0; i < n_given; i++)
		printf("  vector 0x%02x %-16s %llu\n", ARCH_VECTOR_DEVICE_FIRST + i, owners[i],
		       (unsigned long long)arch_irq_counts[i]);
}
STATS_SECTION(irq, irq_stats_show);
