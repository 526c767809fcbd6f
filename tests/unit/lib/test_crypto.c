// sources: lib/crypto.c
// libs: -lmbedcrypto
/*
 * lib/crypto.c against known answers computed by Python (gen_crypto_vectors.py: hashlib,
 * hmac, base64, pow, the RFC 7919 primes rebuilt from the RFC's formula): SHA-256/384/512,
 * HMAC with short and long keys over several pieces, each ffdhe group's public values and
 * shared secret both ways, the peer-value checks of RFC 7919 5.1, base64 both ways.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>
#include "lib/crypto.h"
#include "crypto_vectors.h"

static const enum crypto_hash hashes[3] = { CRYPTO_SHA256, CRYPTO_SHA384, CRYPTO_SHA512 };

Test(crypto, hashes_known_answers)
{
	const uint8_t *abc[3] = { kv_sha256_abc, kv_sha384_abc, kv_sha512_abc };
	const uint8_t *msg[3] = { kv_sha256_msg, kv_sha384_msg, kv_sha512_msg };
	uint8_t out[CRYPTO_HASH_MAX];

	for (int i = 0; i < 3; i++) {
		size_t n = crypto_hash_len(hashes[i]);
		cr_assert_eq(n, (size_t)(32 + 16 * i));
		cr_assert_eq(crypto_hash(hashes[i], "abc", 3, out), 0);
		cr_assert_arr_eq(out, abc[i], n);
		cr_assert_eq(crypto_hash(hashes[i], kv_msg, sizeof(kv_msg), out), 0);
		cr_assert_arr_eq(out, msg[i], n);
	}
	cr_assert_eq(crypto_hash_len(CRYPTO_HASH_COUNT), 0);
	cr_assert_eq(crypto_hash(CRYPTO_HASH_COUNT, "abc", 3, out), -EINVAL);
}

Test(crypto, hmac_known_answers_over_pieces)
{
	const uint8_t *sh[3] = { kv_hmac_sha256_short, kv_hmac_sha384_short, kv_hmac_sha512_short };
	const uint8_t *lg[3] = { kv_hmac_sha256_long, kv_hmac_sha384_long, kv_hmac_sha512_long };
	struct crypto_iov iov[4] = { { kv_msg, 10 }, { NULL, 0 }, { kv_msg + 10, 490 }, { kv_msg + 500, 500 } };
	struct crypto_iov one = { kv_msg, sizeof(kv_msg) };
	uint8_t out[CRYPTO_HASH_MAX];

	for (int i = 0; i < 3; i++) {
		size_t n = crypto_hash_len(hashes[i]);
		cr_assert_eq(crypto_hmac(hashes[i], kv_key_short, sizeof(kv_key_short), iov, 4, out), 0);
		cr_assert_arr_eq(out, sh[i], n);
		cr_assert_eq(crypto_hmac(hashes[i], kv_key_long, sizeof(kv_key_long), &one, 1, out), 0);
		cr_assert_arr_eq(out, lg[i], n);
		/* one key byte different: a different answer */
		uint8_t k[sizeof(kv_key_short)];
		memcpy(k, kv_key_short, sizeof(k));
		k[3] ^= 1;
		cr_assert_eq(crypto_hmac(hashes[i], k, sizeof(k), iov, 4, out), 0);
		cr_assert_neq(memcmp(out, sh[i], n), 0);
	}
	cr_assert_eq(crypto_hmac(CRYPTO_HASH_COUNT, kv_key_short, 4, &one, 1, out), -EINVAL);
}

struct group_kv {
	enum crypto_ffdhe g;
	const uint8_t *p, *xa, *xb, *ya, *yb, *shared;
	size_t len;
};

#define GKV(bits) { CRYPTO_FFDHE##bits, kv_ffdhe##bits##_p, kv_ffdhe##bits##_xa, kv_ffdhe##bits##_xb, \
		    kv_ffdhe##bits##_ya, kv_ffdhe##bits##_yb, kv_ffdhe##bits##_shared, bits / 8 }

static const struct group_kv gkv[] = { GKV(2048), GKV(3072), GKV(4096), GKV(6144), GKV(8192) };

Test(crypto, ffdhe_public_and_shared_known_answers)
{
	static uint8_t out[CRYPTO_FFDHE_MAX];

	for (size_t i = 0; i < sizeof(gkv) / sizeof(gkv[0]); i++) {
		const struct group_kv *k = &gkv[i];
		cr_assert_eq(crypto_ffdhe_len(k->g), k->len);
		cr_assert_eq(crypto_ffdhe_public(k->g, k->xa, 64, out), 0);
		cr_assert_arr_eq(out, k->ya, k->len, "ffdhe%zu public A", k->len * 8);
		cr_assert_eq(crypto_ffdhe_public(k->g, k->xb, 64, out), 0);
		cr_assert_arr_eq(out, k->yb, k->len);
		cr_assert_eq(crypto_ffdhe_shared(k->g, k->xa, 64, k->yb, k->len, out), 0);
		cr_assert_arr_eq(out, k->shared, k->len);
		cr_assert_eq(crypto_ffdhe_shared(k->g, k->xb, 64, k->ya, k->len, out), 0);
		cr_assert_arr_eq(out, k->shared, k->len);
	}
}

Test(crypto, ffdhe_refuses_bad_peer_values)
{
	static uint8_t peer[CRYPTO_FFDHE_MAX], out[CRYPTO_FFDHE_MAX];
	const struct group_kv *k = &gkv[0];

	memset(peer, 0, k->len); /* 0 */
	cr_assert_eq(crypto_ffdhe_shared(k->g, k->xa, 64, peer, k->len, out), -EINVAL);
	peer[k->len - 1] = 1; /* 1 */
	cr_assert_eq(crypto_ffdhe_shared(k->g, k->xa, 64, peer, k->len, out), -EINVAL);
	peer[k->len - 1] = 2; /* 2: the generator itself is a valid value */
	cr_assert_eq(crypto_ffdhe_shared(k->g, k->xa, 64, peer, k->len, out), 0);
	memcpy(peer, k->p, k->len); /* p - 1 */
	peer[k->len - 1]--;
	cr_assert_eq(crypto_ffdhe_shared(k->g, k->xa, 64, peer, k->len, out), -EINVAL);
	peer[k->len - 1]--; /* p - 2 */
	cr_assert_eq(crypto_ffdhe_shared(k->g, k->xa, 64, peer, k->len, out), 0);
	memcpy(peer, k->p, k->len); /* p */
	cr_assert_eq(crypto_ffdhe_shared(k->g, k->xa, 64, peer, k->len, out), -EINVAL);
	memset(peer, 0xff, k->len); /* beyond p */
	cr_assert_eq(crypto_ffdhe_shared(k->g, k->xa, 64, peer, k->len, out), -EINVAL);
	/* wrong lengths */
	cr_assert_eq(crypto_ffdhe_shared(k->g, k->xa, 64, k->yb, k->len - 1, out), -EINVAL);
	cr_assert_eq(crypto_ffdhe_shared(k->g, k->xa, 64, gkv[1].yb, gkv[1].len, out), -EINVAL);
	cr_assert_eq(crypto_ffdhe_public(k->g, k->xa, 0, out), -EINVAL);
	cr_assert_eq(crypto_ffdhe_public(k->g, k->p, k->len + 1, out), -EINVAL);
	cr_assert_eq(crypto_ffdhe_public(CRYPTO_FFDHE_COUNT, k->xa, 64, out), -EINVAL);
}

Test(crypto, base64_both_ways_and_errors)
{
	uint8_t raw[64];
	char text[80];
	size_t n = 0;

	cr_assert_eq(crypto_base64_decode(kv_b64_text, strlen(kv_b64_text), raw, sizeof(raw), &n), 0);
	cr_assert_eq(n, sizeof(kv_b64_raw));
	cr_assert_arr_eq(raw, kv_b64_raw, n);
	cr_assert_eq(crypto_base64_encode(kv_b64_raw, sizeof(kv_b64_raw), text, sizeof(text)), 0);
	cr_assert_str_eq(text, kv_b64_text);
	cr_assert_eq(crypto_base64_decode(kv_b64_text, strlen(kv_b64_text), raw, 10, &n), -ENOSPC);
	cr_assert_eq(crypto_base64_decode("AB*D", 4, raw, sizeof(raw), &n), -EINVAL);
	cr_assert_eq(crypto_base64_encode(kv_b64_raw, sizeof(kv_b64_raw), text, 10), -ENOSPC);
}

Test(crypto, equal_and_wipe)
{
	uint8_t a[16] = { 1, 2, 3 }, b[16] = { 1, 2, 3 };
	cr_assert(crypto_equal(a, b, sizeof(a)));
	b[15] = 9;
	cr_assert_not(crypto_equal(a, b, sizeof(a)));
	crypto_wipe(a, sizeof(a));
	for (size_t i = 0; i < sizeof(a); i++)
		cr_assert_eq(a[i], 0);
}
