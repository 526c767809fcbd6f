/*
 * cpu_ops.h - header-only processor primitives for code that must not link against
 * arch/ (lib/, host unit tests): spin hints, the cycle counter, stopping the CPU, the
 * CRC32C instructions and the CPU's own string copy. Each architecture's cpu_ops.h
 * defines the same names.
 */
#ifndef ARCH_CPU_OPS_H
#define ARCH_CPU_OPS_H

#if defined(__x86_64__)
#include "x86_64/cpu_ops.h"
#elif defined(__aarch64__)
#include "arm64/cpu_ops.h"
#else
#error "p2pstore: unsupported architecture (arch/ has x86_64 and arm64)"
#endif

#endif
