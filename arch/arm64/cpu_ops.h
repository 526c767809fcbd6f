/*
 * cpu_ops.h - arm64's header-only primitives (see ../cpu_ops.h).
 */
#ifndef ARCH_ARM64_CPU_OPS_H
#define ARCH_ARM64_CPU_OPS_H

#include <stddef.h>
#include <stdint.h>

#define ARCH_COUNTER_NAME "CNTVCT"          /* the generic timer's virtual count */
#define ARCH_CRC32C_HW_NAME "armv8-crc32c"  /* the CRC32C instructions (FEAT_CRC32) */
#define ARCH_STRING_COPY_NAME "ldp-stp"     /* 16-byte pair loads/stores */
#define ARCH_CRC32C_TARGET __attribute__((target("+crc")))
#define ARCH_ID_AA64ISAR0_CRC32(v) (((v) >> 16) & 0xf) /* 1: CRC32/CRC32C present */

#define ARCH_READ_SYSREG(name)                                          \
	({                                                              \
		uint64_t v_;                                            \
		__asm__ volatile("mrs %0, " #name : "=r"(v_));          \
		v_;                                                     \
	})
#define ARCH_WRITE_SYSREG(name, v) __asm__ volatile("msr " #name ", %0" : : "r"((uint64_t)(v)) : "memory")

/* Spin-wait hint. */
static inline void arch_cpu_relax(void)
{
	__asm__ volatile("yield");
}

/* MMIO ordering (ARM ARM B2.3): normal-memory stores (descriptors, queue entries) must be
 * observable by a device before the register store that announces them, and a register
 * load that reports completion must precede the loads of what it announces. */
static inline void arch_mmio_write_barrier(void)
{
	__asm__ volatile("dmb oshst" ::: "memory");
}

static inline void arch_mmio_read_barrier(void)
{
	__asm__ volatile("dmb oshld" ::: "memory");
}

/* The virtual count (CNTVCT_EL0), read in order with the code around it. */
static inline uint64_t arch_counter_read(void)
{
	uint64_t v;
	__asm__ volatile("isb; mrs %0, cntvct_el0" : "=r"(v) : : "memory");
	return v;
}

/* Interrupts masked, wait for ever. */
static inline __attribute__((noreturn)) void arch_cpu_stop(void)
{
	__asm__ volatile("msr daifset, #0xf" ::: "memory");
	for (;;)
		__asm__ volatile("wfi");
}

/* Whether the CPU has the CRC32C instructions (ID_AA64ISAR0_EL1.CRC32). */
static inline int arch_cpu_has_crc32c(void)
{
	return ARCH_ID_AA64ISAR0_CRC32(ARCH_READ_SYSREG(id_aa64isar0_el1)) != 0;
}

/* CRC32C of one byte / one little-endian 8-byte word, folded into c (no inversion). */
static inline ARCH_CRC32C_TARGET uint32_t arch_crc32c_u8(uint32_t c, uint8_t b)
{
	__asm__("crc32cb %w0, %w0, %w1" : "+r"(c) : "r"((uint32_t)b));
	return c;
}

static inline ARCH_CRC32C_TARGET uint32_t arch_crc32c_u64(uint32_t c, uint64_t w)
{
	__asm__("crc32cx %w0, %w0, %x1" : "+r"(c) : "r"(w));
	return c;
}

/* Copy n bytes forward in 16-byte pairs (ldp/stp), the tail bytewise. */
static inline void arch_string_copy(unsigned char *d, const unsigned char *s, size_t n)
{
	while (n >= 16) {
		uint64_t a, b;
		__asm__ volatile("ldp %0, %1, [%2]" : "=&r"(a), "=&r"(b) : "r"(s) : "memory");
		__asm__ volatile("stp %0, %1, [%2]" : : "r"(a), "r"(b), "r"(d) : "memory");
		d += 16;
		s += 16;
		n -= 16;
	}
	while (n--)
		*d++ = *s++;
}

/* Fill n bytes in 16-byte pairs, the tail bytewise. */
static inline void arch_string_fill(unsigned char *d, int c, size_t n)
{
	uint64_t w = 0x0101010101010101ull * (unsigned char)c;
	while (n >= 16) {
		__asm__ volatile("stp %0, %0, [%1]" : : "r"(w), "r"(d) : "memory");
		d += 16;
		n -= 16;
	}
	while (n--)
		*d++ = (unsigned char)c;
}

#endif
