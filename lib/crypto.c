/*
 * crypto.c - hashes, HMAC, RFC 7919 Diffie-Hellman and base64 through mbedTLS (see crypto.h).
 */
#include <errno.h>
#include <string.h>
#include <mbedtls/base64.h>
#include <mbedtls/bignum.h>
#include <mbedtls/dhm.h>
#include <mbedtls/md.h>
#include <mbedtls/platform_util.h>
#include "crypto.h"

static const mbedtls_md_type_t md_types[CRYPTO_HASH_COUNT] = {
	[CRYPTO_SHA256] = MBEDTLS_MD_SHA256,
	[CRYPTO_SHA384] = MBEDTLS_MD_SHA384,
	[CRYPTO_SHA512] = MBEDTLS_MD_SHA512,
};

/* The primes as the library ships them (its RFC 7919 tables); the generator is 2 for all. */
static const uint8_t p2048[] = MBEDTLS_DHM_RFC7919_FFDHE2048_P_BIN;
static const uint8_t p3072[] = MBEDTLS_DHM_RFC7919_FFDHE3072_P_BIN;
static const uint8_t p4096[] = MBEDTLS_DHM_RFC7919_FFDHE4096_P_BIN;
static const uint8_t p6144[] = MBEDTLS_DHM_RFC7919_FFDHE6144_P_BIN;
static const uint8_t p8192[] = MBEDTLS_DHM_RFC7919_FFDHE8192_P_BIN;

static const struct {
	const uint8_t *p;
	size_t len;
} groups[CRYPTO_FFDHE_COUNT] = {
	[CRYPTO_FFDHE2048] = { p2048, sizeof(p2048) },
	[CRYPTO_FFDHE3072] = { p3072, sizeof(p3072) },
	[CRYPTO_FFDHE4096] = { p4096, sizeof(p4096) },
	[CRYPTO_FFDHE6144] = { p6144, sizeof(p6144) },
	[CRYPTO_FFDHE8192] = { p8192, sizeof(p8192) },
};

static const mbedtls_md_info_t *md_info(enum crypto_hash h)
{
	return (unsigned)h < CRYPTO_HASH_COUNT ? mbedtls_md_info_from_type(md_types[h]) : NULL;
}

static int mbed_rc(int rc)
{
	if (rc == 0)
		return 0;
	return rc == MBEDTLS_ERR_MPI_ALLOC_FAILED || rc == MBEDTLS_ERR_MD_ALLOC_FAILED ? -ENOMEM : -EINVAL;
}

size_t crypto_hash_len(enum crypto_hash h)
{
	const mbedtls_md_info_t *mi = md_info(h);
	return mi ? mbedtls_md_get_size(mi) : 0;
}

int crypto_hash(enum crypto_hash h, const void *data, size_t len, uint8_t *out)
{
	const mbedtls_md_info_t *mi = md_info(h);
	if (!mi)
		return -EINVAL;
	return mbed_rc(mbedtls_md(mi, data, len, out));
}

int crypto_hmac(enum crypto_hash h, const uint8_t *key, size_t keylen, const struct crypto_iov *iov, size_t n,
		uint8_t *out)
{
	const mbedtls_md_info_t *mi = md_info(h);
	mbedtls_md_context_t ctx;
	int rc;

	if (!mi)
		return -EINVAL;
	mbedtls_md_init(&ctx);
	if ((rc = mbedtls_md_setup(&ctx, mi, 1)) || (rc = mbedtls_md_hmac_starts(&ctx, key, keylen)))
		goto out;
	for (size_t i = 0; i < n; i++)
		if (iov[i].len && (rc = mbedtls_md_hmac_update(&ctx, iov[i].p, iov[i].len)))
			goto out;
	rc = mbedtls_md_hmac_finish(&ctx, out);
out:
	mbedtls_md_free(&ctx); /* wipes the keyed state */
	return mbed_rc(rc);
}

size_t crypto_ffdhe_len(enum crypto_ffdhe g)
{
	return (unsigned)g < CRYPTO_FFDHE_COUNT ? groups[g].len : 0;
}

/* out = base^x mod p of group g, written big-endian over the group's length. */
static int ffdhe_exp(enum crypto_ffdhe g, const mbedtls_mpi *base, const uint8_t *priv, size_t privlen, uint8_t *out)
{
	mbedtls_mpi p, x, r;
	int rc;

	mbedtls_mpi_init(&p);
	mbedtls_mpi_init(&x);
	mbedtls_mpi_init(&r);
	if ((rc = mbedtls_mpi_read_binary(&p, groups[g].p, groups[g].len)) ||
	    (rc = mbedtls_mpi_read_binary(&x, priv, privlen)) || (rc = mbedtls_mpi_exp_mod(&r, base, &x, &p, NULL)) ||
	    (rc = mbedtls_mpi_write_binary(&r, out, groups[g].len)))
		goto out;
out:
	mbedtls_mpi_free(&r); /* the library zeroes limbs it frees */
	mbedtls_mpi_free(&x);
	mbedtls_mpi_free(&p);
	return mbed_rc(rc);
}

int crypto_ffdhe_public(enum crypto_ffdhe g, const uint8_t *priv, size_t privlen, uint8_t *pub)
{
	mbedtls_mpi two;
	int rc;

	if ((unsigned)g >= CRYPTO_FFDHE_COUNT || privlen == 0 || privlen > groups[g].len)
		return -EINVAL;
	mbedtls_mpi_init(&two);
	rc = mbed_rc(mbedtls_mpi_lset(&two, 2));
	if (!rc)
		rc = ffdhe_exp(g, &two, priv, privlen, pub);
	mbedtls_mpi_free(&two);
	return rc;
}

int crypto_ffdhe_shared(enum crypto_ffdhe g, const uint8_t *priv, size_t privlen, const uint8_t *peer, size_t peerlen,
			uint8_t *out)
{
	mbedtls_mpi y, pm1, p;
	int rc;

	if ((unsigned)g >= CRYPTO_FFDHE_COUNT || privlen == 0 || privlen > groups[g].len || peerlen != groups[g].len)
		return -EINVAL;
	mbedtls_mpi_init(&y);
	mbedtls_mpi_init(&p);
	mbedtls_mpi_init(&pm1);
	if ((rc = mbed_rc(mbedtls_mpi_read_binary(&y, peer, peerlen))) ||
	    (rc = mbed_rc(mbedtls_mpi_read_binary(&p, groups[g].p, groups[g].len))) ||
	    (rc = mbed_rc(mbedtls_mpi_sub_int(&pm1, &p, 1))))
		goto out;
	/* 1 < y < p - 1: not 0, 1 or p - 1 (the small subgroup), not beyond the prime */
	if (mbedtls_mpi_cmp_int(&y, 1) <= 0 || mbedtls_mpi_cmp_mpi(&y, &pm1) >= 0) {
		rc = -EINVAL;
		goto out;
	}
	rc = ffdhe_exp(g, &y, priv, privlen, out);
out:
	mbedtls_mpi_free(&pm1);
	mbedtls_mpi_free(&p);
	mbedtls_mpi_free(&y);
	return rc;
}

int crypto_base64_decode(const char *in, size_t inlen, uint8_t *out, size_t cap, size_t *outlen)
{
	size_t n = 0;
	int rc = mbedtls_base64_decode(out, cap, &n, (const unsigned char *)in, inlen);
	if (rc == MBEDTLS_ERR_BASE64_BUFFER_TOO_SMALL)
		return -ENOSPC;
	if (rc)
		return -EINVAL;
	*outlen = n;
	return 0;
}

int crypto_base64_encode(const uint8_t *in, size_t len, char *out, size_t cap)
{
	size_t n = 0;
	if (mbedtls_base64_encode((unsigned char *)out, cap, &n, in, len))
		return -ENOSPC;
	return 0;
}

bool crypto_equal(const void *a, const void *b, size_t len)
{
	const volatile uint8_t *x = a, *y = b;
	uint8_t d = 0;
	for (size_t i = 0; i < len; i++)
		d |= x[i] ^ y[i];
	return d == 0;
}

void crypto_wipe(void *p, size_t len)
{
	mbedtls_platform_zeroize(p, len);
}
