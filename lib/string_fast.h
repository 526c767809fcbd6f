/*
 * string_fast.h - the appliance's memcpy/memmove/memset and how they copy.
 *
 * newlib's x86_64 memcpy switches to non-temporal stores above 256 bytes and libefi's
 * is a byte loop (docs/platform.md): both are slow for packet-sized copies, so the image
 * links these instead (tools/check-linkmap proves it). Two copy engines exist because
 * the fastest one differs by platform: the CPU's own string copy (x86 `rep movsb`) wins
 * on hardware with ERMS, an unrolled 8-byte loop wins ~8x under QEMU TCG. string_calibrate() times both at boot
 * and keeps the faster one.
 *
 * Host unit tests build this file with STRING_FAST_PREFIX=lib_ so that they exercise
 * the same code without replacing the host libc's functions.
 */
#ifndef LIB_STRING_FAST_H
#define LIB_STRING_FAST_H

#include <stddef.h>
#include <stdint.h>

enum string_copy_mode {
	STRING_COPY_WORDS = 0,     /* unrolled 8-byte loads/stores */
	STRING_COPY_CPU = 1,       /* the CPU's own string copy (arch/cpu_ops.h) */
};

/* Select the copy engine used by memcpy/memmove/memset. */
void string_set_copy_mode(enum string_copy_mode mode);

/* The engine in use. */
enum string_copy_mode string_copy_mode(void);

/* Name of an engine, for the console. */
const char *string_copy_mode_name(enum string_copy_mode mode);

/* Time both engines on `len`-byte copies with the injected clock and keep the faster;
 * returns the chosen mode and, if not NULL, each engine's ns per copy. */
enum string_copy_mode string_calibrate(void *scratch, size_t len, uint64_t ns_out[2]);

#ifdef STRING_FAST_PREFIX
void *lib_memcpy(void *dst, const void *src, size_t n);
void *lib_memmove(void *dst, const void *src, size_t n);
void *lib_memset(void *dst, int c, size_t n);
#endif

#endif
