/*
 * entropy.c - CPU entropy for secrets (see ../entropy.h).
 *
 * FEAT_RNG (ID_AA64ISAR0_EL1.RNDR) gives RNDRRS, reseeded from the true source before each
 * read, and RNDR, the DRBG; both set PSTATE.NZCV to 0b0100 (Z) when they could not deliver,
 * which is retried a bounded number of times. Without FEAT_RNG (Cortex-A57 and most DPU
 * cores of its generation), the fallback is generic-timer jitter (../entropy_jitter.c).
 */
#include <stdint.h>
#include <string.h>
#include "../cpu_ops.h"
#include "../entropy.h"

#define RETRIES 10
#define ID_AA64ISAR0_RNDR(v) (((v) >> 60) & 0xf)

static int has_rng(void)
{
	return ID_AA64ISAR0_RNDR(ARCH_READ_SYSREG(id_aa64isar0_el1)) != 0;
}

/* RNDRRS (S3_3_C2_C4_1) or RNDR (S3_3_C2_C4_0); 0 when a value was delivered. */
static int rng64(uint64_t *v, int reseeded)
{
	for (int i = 0; i < RETRIES; i++) {
		uint64_t ok;
		if (reseeded)
			__asm__ volatile("mrs %0, s3_3_c2_c4_1; cset %1, ne" : "=r"(*v), "=r"(ok) : : "cc");
		else
			__asm__ volatile("mrs %0, s3_3_c2_c4_0; cset %1, ne" : "=r"(*v), "=r"(ok) : : "cc");
		if (ok)
			return 0;
		arch_cpu_relax();
	}
	return -1;
}

/* Fill buf from the best source. */
enum arch_entropy_source arch_entropy(void *buf, size_t len)
{
	enum arch_entropy_source src = has_rng() ? ARCH_ENTROPY_SEED : ARCH_ENTROPY_JITTER;
	uint8_t *o = buf;

	while (len) {
		uint64_t v;
		size_t n = len < sizeof(v) ? len : sizeof(v);
		if (src == ARCH_ENTROPY_SEED && rng64(&v, 1))
			src = ARCH_ENTROPY_DRBG;
		if (src == ARCH_ENTROPY_DRBG && rng64(&v, 0))
			src = ARCH_ENTROPY_JITTER;
		if (src == ARCH_ENTROPY_JITTER)
			v = arch_entropy_jitter64();
		memcpy(o, &v, n);
		o += n;
		len -= n;
	}
	return src;
}

/* Source name. */
const char *arch_entropy_source_name(enum arch_entropy_source s)
{
	switch (s) {
	case ARCH_ENTROPY_SEED:
		return "rndrrs";
	case ARCH_ENTROPY_DRBG:
		return "rndr";
	default:
		return "cntvct-jitter";
	}
}
