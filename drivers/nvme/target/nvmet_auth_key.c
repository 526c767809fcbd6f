/*
 * nvmet_auth_key.c - DH-HMAC-CHAP secrets, transformation, augmented challenge and
 * responses (see nvmet_auth_key.h). Every hash, HMAC and exponentiation is lib/crypto.h's.
 */
#include <errno.h>
#include <string.h>
#include "../../../lib/byteorder.h"
#include "../../../lib/crc32.h"
#include "../../../lib/crypto.h"
#include "nvmet_auth_key.h"
#include "nvmet_auth_wire.h"

#define SECRET_PREFIX "DHHC-1:"

static int hash_of(uint8_t id, enum crypto_hash *h)
{
	if (id < AUTH_HASH_SHA256 || id > AUTH_HASH_SHA512)
		return -EINVAL;
	*h = (enum crypto_hash)(CRYPTO_SHA256 + (id - AUTH_HASH_SHA256));
	return 0;
}

size_t nvmet_auth_hash_len(uint8_t id)
{
	enum crypto_hash h;
	return hash_of(id, &h) ? 0 : crypto_hash_len(h);
}

int nvmet_auth_dh_len(uint8_t id)
{
	if (id == AUTH_DHGROUP_NULL)
		return 0;
	if (id > AUTH_DHGROUP_8192)
		return -EINVAL;
	return (int)crypto_ffdhe_len((enum crypto_ffdhe)(CRYPTO_FFDHE2048 + (id - AUTH_DHGROUP_2048)));
}

int nvmet_auth_secret_parse(const char *s, struct nvmet_auth_secret *out)
{
	uint8_t raw[NVMET_AUTH_SECRET_MAX + 4 + 3];
	size_t plen = strlen(SECRET_PREFIX), n = 0, b64len;
	const char *b64;
	int rc;

	memset(out, 0, sizeof(*out));
	if (strncmp(s, SECRET_PREFIX, plen) != 0 || s[plen] != '0' || s[plen + 1] < '0' || s[plen + 1] > '3' ||
	    s[plen + 2] != ':')
		return -EINVAL;
	b64 = s + plen + 3;
	b64len = strlen(b64);
	if (b64len && b64[b64len - 1] == ':')
		b64len--;
	/* 36, 52 or 68 bytes: 48, 72 or 92 base64 characters */
	if (b64len != 48 && b64len != 72 && b64len != 92)
		return -EINVAL;
	if ((rc = crypto_base64_decode(b64, b64len, raw, sizeof(raw), &n)) < 0)
		return -EINVAL;
	if (n != 36 && n != 52 && n != 68) {
		crypto_wipe(raw, sizeof(raw));
		return -EINVAL;
	}
	n -= 4;
	/* the CRC-32 (IEEE, as zlib) of the key follows it, little-endian */
	if (crc32_ieee(0, raw, n) != le32_load(raw + n)) {
		crypto_wipe(raw, sizeof(raw));
		return -EBADMSG;
	}
	out->hmac = (uint8_t)(s[plen + 1] - '0');
	out->len = (uint8_t)n;
	memcpy(out->key, raw, n);
	crypto_wipe(raw, sizeof(raw));
	return 0;
}

int nvmet_auth_secret_transform(const struct nvmet_auth_secret *k, const char *nqn, uint8_t *out, size_t *outlen)
{
	static const char tag[] = "NVMe-over-Fabrics";
	struct crypto_iov iov[2] = { { nqn, strlen(nqn) }, { tag, sizeof(tag) - 1 } };
	enum crypto_hash h;
	int rc;

	if (!k->len)
		return -ENOENT;
	if (k->hmac == 0) {
		memcpy(out, k->key, k->len);
		*outlen = k->len;
		return 0;
	}
	if ((rc = hash_of(k->hmac, &h)))
		return rc;
	if ((rc = crypto_hmac(h, k->key, k->len, iov, 2, out)))
		return rc;
	*outlen = crypto_hash_len(h);
	return 0;
}

int nvmet_auth_augment(uint8_t hashid, const uint8_t *skh, const uint8_t *c, uint8_t *out)
{
	enum crypto_hash h;
	int rc = hash_of(hashid, &h);
	if (rc)
		return rc;
	struct crypto_iov iov = { c, crypto_hash_len(h) };
	return crypto_hmac(h, skh, crypto_hash_len(h), &iov, 1, out);
}

int nvmet_auth_response(uint8_t hashid, const uint8_t *key, size_t keylen, const uint8_t *c, uint32_t seq,
			uint16_t tid, const char *role, const char *nqn1, const char *nqn2, uint8_t *out)
{
	uint8_t sbuf[4], tbuf[2];
	static const uint8_t zero = 0;
	enum crypto_hash h;
	int rc = hash_of(hashid, &h);

	if (rc)
		return rc;
	le32_store(sbuf, seq);
	le16_store(tbuf, tid);
	struct crypto_iov iov[8] = {
		{ c, crypto_hash_len(h) }, { sbuf, 4 }, { tbuf, 2 }, { &zero, 1 } /* SC_C */,
		{ role, strlen(role) }, { nqn1, strlen(nqn1) }, { &zero, 1 }, { nqn2, strlen(nqn2) },
	};
	return crypto_hmac(h, key, keylen, iov, 8, out);
}

static int group_of(uint8_t id, enum crypto_ffdhe *g)
{
	if (id < AUTH_DHGROUP_2048 || id > AUTH_DHGROUP_8192)
		return -EINVAL;
	*g = (enum crypto_ffdhe)(CRYPTO_FFDHE2048 + (id - AUTH_DHGROUP_2048));
	return 0;
}

int nvmet_auth_dh_public(uint8_t dhgid, const uint8_t *x, size_t xlen, uint8_t *pub)
{
	enum crypto_ffdhe g;
	int rc = group_of(dhgid, &g);
	return rc ? rc : crypto_ffdhe_public(g, x, xlen, pub);
}

int nvmet_auth_dh_session(uint8_t dhgid, uint8_t hashid, const uint8_t *x, size_t xlen, const uint8_t *peer,
			  size_t peerlen, uint8_t *skh)
{
	uint8_t ks[CRYPTO_FFDHE_MAX]; /* the session key, wiped before return */
	enum crypto_ffdhe g;
	enum crypto_hash h;
	int rc;

	if ((rc = group_of(dhgid, &g)) || (rc = hash_of(hashid, &h)))
		return rc;
	if ((rc = crypto_ffdhe_shared(g, x, xlen, peer, peerlen, ks)) == 0)
		rc = crypto_hash(h, ks, crypto_ffdhe_len(g), skh);
	crypto_wipe(ks, sizeof(ks));
	return rc;
}
