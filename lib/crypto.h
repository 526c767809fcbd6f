/*
 * crypto.h - the appliance's cryptography: a thin face over mbedTLS (Debian's source package,
 * built with the image's flags; host tests link Debian's libmbedcrypto of the same version).
 * Nothing here is hand-written cryptography: hashes, HMAC, modular exponentiation and base64
 * are the library's; this file only chooses, sizes and checks.
 *
 * Random bytes are not made here: callers pass them in (arch/entropy.h's RDSEED/RDRAND, RNDR,
 * or its counter-jitter fallback), so lib/ stays below arch/.
 */
#ifndef LIB_CRYPTO_H
#define LIB_CRYPTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum crypto_hash {
	CRYPTO_SHA256 = 0,
	CRYPTO_SHA384,
	CRYPTO_SHA512,
	CRYPTO_HASH_COUNT,
};

#define CRYPTO_HASH_MAX 64u /* the longest digest (SHA-512) */

/* The finite-field Diffie-Hellman groups of RFC 7919 (generator 2). */
enum crypto_ffdhe {
	CRYPTO_FFDHE2048 = 0,
	CRYPTO_FFDHE3072,
	CRYPTO_FFDHE4096,
	CRYPTO_FFDHE6144,
	CRYPTO_FFDHE8192,
	CRYPTO_FFDHE_COUNT,
};

#define CRYPTO_FFDHE_MAX 1024u /* bytes of the largest group's numbers (8192 bits) */

/* One piece of a message that is hashed as the concatenation of its pieces. */
struct crypto_iov {
	const void *p;
	size_t len;
};

/* Digest length of h in bytes, 0 for an unknown h. */
size_t crypto_hash_len(enum crypto_hash h);

/* out (crypto_hash_len(h) bytes) = H(data). 0, or -EINVAL for an unknown h, -ENOMEM. */
int crypto_hash(enum crypto_hash h, const void *data, size_t len, uint8_t *out);

/* out (crypto_hash_len(h) bytes) = HMAC-H(key, iov[0] || ... || iov[n-1]) (RFC 2104).
 * 0, or -EINVAL for an unknown h, -ENOMEM. */
int crypto_hmac(enum crypto_hash h, const uint8_t *key, size_t keylen, const struct crypto_iov *iov, size_t n,
		uint8_t *out);

/* Bytes of the numbers of group g (the prime's length), 0 for an unknown g. */
size_t crypto_ffdhe_len(enum crypto_ffdhe g);

/* pub (crypto_ffdhe_len(g) bytes, big-endian, zero-padded) = 2^x mod p, x the private
 * exponent given big-endian in priv (privlen bytes, at most the group's length).
 * 0, -EINVAL (unknown g, empty or oversized x), -ENOMEM. */
int crypto_ffdhe_public(enum crypto_ffdhe g, const uint8_t *priv, size_t privlen, uint8_t *pub);

/* out (crypto_ffdhe_len(g) bytes, big-endian, zero-padded) = peer^x mod p, after checking
 * the peer's public value as RFC 7919 section 5.1 asks: exactly the group's length and
 * 1 < peer < p - 1. 0, -EINVAL (a bad peer value or arguments), -ENOMEM. */
int crypto_ffdhe_shared(enum crypto_ffdhe g, const uint8_t *priv, size_t privlen, const uint8_t *peer, size_t peerlen,
			uint8_t *out);

/* Decode base64 (RFC 4648, with padding) of inlen characters into out (cap bytes).
 * 0 with *outlen set, -EINVAL for bad characters or padding, -ENOSPC when out is small. */
int crypto_base64_decode(const char *in, size_t inlen, uint8_t *out, size_t cap, size_t *outlen);

/* Encode len bytes as base64 into out (cap bytes, NUL-terminated). 0, or -ENOSPC. */
int crypto_base64_encode(const uint8_t *in, size_t len, char *out, size_t cap);

/* Are a and b (len bytes each) equal? Time independent of where they differ. */
bool crypto_equal(const void *a, const void *b, size_t len);

/* Erase len bytes at p in a way the compiler cannot drop (keys, exponents, session keys). */
void crypto_wipe(void *p, size_t len);

#endif
