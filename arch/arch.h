/*
 * arch.h - the face of arch/: what the rest of the appliance may ask of the processor
 * (exceptions, page tables, the clock, idle halts, the serial console, power), declared
 * by each architecture's own arch.h with the same names, and the ACPI tables both use.
 * The only place outside an architecture's folder that chooses between them.
 */
#ifndef ARCH_ARCH_H
#define ARCH_ARCH_H

#if defined(__x86_64__)
#include "x86_64/arch.h"
#elif defined(__aarch64__)
#include "arm64/arch.h"
#else
#error "p2pstore: unsupported architecture (arch/ has x86_64 and arm64)"
#endif
#include "acpi.h"
#include "cpu_ops.h"

#endif
