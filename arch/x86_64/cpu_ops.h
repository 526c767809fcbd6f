/*
 * cpu_ops.h - x86_64's header-only primitives (see ../cpu_ops.h).
 */
#ifndef ARCH_X86_64_CPU_OPS_H
#define ARCH_X86_64_CPU_OPS_H

#include <stddef.h>
#include <stdint.h>

#define ARCH_COUNTER_NAME "TSC"           /* the cycle counter the clock runs on */
#define ARCH_CRC32C_HW_NAME "sse4.2"      /* the CRC32C instruction's name */
#define ARCH_STRING_COPY_NAME "rep-movsb" /* the CPU's own string copy */
#define ARCH_CRC32C_TARGET __attribute__((target("sse4.2")))
#define ARCH_CPUID1_ECX_SSE42 (1u << 20)

/* Spin-wait hint. */
static inline void arch_cpu_relax(void)
{
	__asm__ volatile("pause");
}

/* MMIO ordering around device registers: x86 keeps stores and loads to uncached memory
 * in program order with ordinary memory, so only the compiler must be stopped. */
static inline void arch_mmio_write_barrier(void)
{
	__asm__ volatile("" ::: "memory");
}

static inline void arch_mmio_read_barrier(void)
{
	__asm__ volatile("" ::: "memory");
}

/* The time-stamp counter. */
static inline uint64_t arch_counter_read(void)
{
	uint32_t lo, hi;
	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
}

/* Interrupts off, halt, forever. */
static inline __attribute__((noreturn)) void arch_cpu_stop(void)
{
	for (;;)
		__asm__ volatile("cli; hlt");
}

/* Whether the CPU has the CRC32C instruction (SSE4.2). */
static inline int arch_cpu_has_crc32c(void)
{
	uint32_t a, b, c, d;
	__asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(1), "c"(0));
	return (c & ARCH_CPUID1_ECX_SSE42) != 0;
}

/* CRC32C of one byte / one little-endian 8-byte word, folded into c (no inversion). */
static inline ARCH_CRC32C_TARGET uint32_t arch_crc32c_u8(uint32_t c, uint8_t b)
{
	return __builtin_ia32_crc32qi(c, b);
}

static inline ARCH_CRC32C_TARGET uint32_t arch_crc32c_u64(uint32_t c, uint64_t w)
{
	return (uint32_t)__builtin_ia32_crc32di(c, w);
}

/* Copy n bytes forward with the CPU's string instruction. */
static inline void arch_string_copy(unsigned char *d, const unsigned char *s, size_t n)
{
	__asm__ volatile("rep movsb" : "+D"(d), "+S"(s), "+c"(n) : : "memory");
}

/* Fill n bytes with the CPU's string instruction. */
static inline void arch_string_fill(unsigned char *d, int c, size_t n)
{
	__asm__ volatile("rep stosb" : "+D"(d), "+c"(n) : "a"(c) : "memory");
}

#endif
