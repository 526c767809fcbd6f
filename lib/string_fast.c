/*
 * string_fast.c - memcpy, memmove and memset for the image (see string_fast.h).
 *
 * Built with -fno-builtin -fno-tree-loop-distribute-patterns so the compiler cannot
 * turn these loops back into calls to themselves.
 */
#include "string_fast.h"
#include "clock.h"
#include "../arch/cpu_ops.h"

#ifdef STRING_FAST_PREFIX
#define STRING_FN(name) lib_##name
#else
#define STRING_FN(name) name
#endif

/* An 8-byte word that may sit at any address and alias anything. */
typedef uint64_t __attribute__((may_alias, aligned(1))) unaligned_u64;

static enum string_copy_mode copy_mode = STRING_COPY_WORDS;

static inline void copy_forward_words(unsigned char *d, const unsigned char *s, size_t n)
{
	while (n >= 32) {
		uint64_t a = ((const unaligned_u64 *)s)[0];
		uint64_t b = ((const unaligned_u64 *)s)[1];
		uint64_t c = ((const unaligned_u64 *)s)[2];
		uint64_t e = ((const unaligned_u64 *)s)[3];
		((unaligned_u64 *)d)[0] = a;
		((unaligned_u64 *)d)[1] = b;
		((unaligned_u64 *)d)[2] = c;
		((unaligned_u64 *)d)[3] = e;
		d += 32;
		s += 32;
		n -= 32;
	}
	while (n >= 8) {
		*(unaligned_u64 *)d = *(const unaligned_u64 *)s;
		d += 8;
		s += 8;
		n -= 8;
	}
	while (n--)
		*d++ = *s++;
}

static inline void copy_backward_words(unsigned char *d, const unsigned char *s, size_t n)
{
	d += n;
	s += n;
	while (n >= 8) {
		d -= 8;
		s -= 8;
		n -= 8;
		*(unaligned_u64 *)d = *(const unaligned_u64 *)s;
	}
	while (n--)
		*--d = *--s;
}

/* Copy n bytes; the regions must not overlap. */
void *STRING_FN(memcpy)(void *dst, const void *src, size_t n)
{
	if (copy_mode == STRING_COPY_CPU)
		arch_string_copy(dst, src, n);
	else
		copy_forward_words(dst, src, n);
	return dst;
}

/* Copy n bytes between possibly overlapping regions. */
void *STRING_FN(memmove)(void *dst, const void *src, size_t n)
{
	unsigned char *d = dst;
	const unsigned char *s = src;

	if (d == s || n == 0)
		return dst;
	/* Each engine step loads a block before storing it, so a forward copy is safe
	 * whenever the destination starts below the source, a backward one otherwise. */
	if (d < s || d >= s + n)
		copy_forward_words(d, s, n);
	else
		copy_backward_words(d, s, n);
	return dst;
}

/* Fill n bytes with (unsigned char)c. */
void *STRING_FN(memset)(void *dst, int c, size_t n)
{
	unsigned char *d = dst;
	uint64_t word = 0x0101010101010101ull * (unsigned char)c;

	if (copy_mode == STRING_COPY_CPU) {
		arch_string_fill(d, c, n);
		return dst;
	}
	while (n >= 32) {
		((unaligned_u64 *)d)[0] = word;
		((unaligned_u64 *)d)[1] = word;
		((unaligned_u64 *)d)[2] = word;
		((unaligned_u64 *)d)[3] = word;
		d += 32;
		n -= 32;
	}
	while (n >= 8) {
		*(unaligned_u64 *)d = word;
		d += 8;
		n -= 8;
	}
	while (n--)
		*d++ = (unsigned char)c;
	return dst;
}

/* Select the engine. */
void string_set_copy_mode(enum string_copy_mode mode)
{
	copy_mode = mode;
}

/* The engine in use. */
enum string_copy_mode string_copy_mode(void)
{
	return copy_mode;
}

/* Engine name. */
const char *string_copy_mode_name(enum string_copy_mode mode)
{
	return mode == STRING_COPY_CPU ? ARCH_STRING_COPY_NAME : "8-byte-loop";
}

/* Time `rounds` copies of len bytes (half the scratch to the other half) in one engine. */
static uint64_t string_time_engine(enum string_copy_mode mode, unsigned char *scratch, size_t len)
{
	const unsigned rounds = 8;
	uint64_t best = UINT64_MAX;

	copy_mode = mode;
	for (unsigned r = 0; r < rounds; r++) {
		uint64_t t0 = clock_now_ns();
		STRING_FN(memcpy)(scratch + len, scratch + 1, len - 1);
		uint64_t dt = clock_now_ns() - t0;
		if (dt < best)
			best = dt;
	}
	return best;
}

/* Calibrate: scratch must hold 2 * len bytes. */
enum string_copy_mode string_calibrate(void *scratch, size_t len, uint64_t ns_out[2])
{
	uint64_t t_words = string_time_engine(STRING_COPY_WORDS, scratch, len);
	uint64_t t_rep = string_time_engine(STRING_COPY_CPU, scratch, len);

	if (ns_out) {
		ns_out[0] = t_words;
		ns_out[1] = t_rep;
	}
	copy_mode = (t_rep < t_words) ? STRING_COPY_CPU : STRING_COPY_WORDS;
	return copy_mode;
}
