/*
 * nvmet_auth_key.h - DH-HMAC-CHAP secrets and the values computed from them (NVMe Base 2.0
 * 8.13.5): the "DHHC-1:<hmac>:<base64 of key || CRC-32>:" representation nvme-cli's
 * gen-dhchap-key writes and Linux's dhchap_key attributes hold, the key transformation by
 * hash, the augmented challenge of a DH exchange and the two responses. Pure functions over
 * lib/crypto.h: the state machine (nvmet_auth.c) and the tests call the same code.
 */
#ifndef DRIVERS_NVME_TARGET_NVMET_AUTH_KEY_H
#define DRIVERS_NVME_TARGET_NVMET_AUTH_KEY_H

#include <stddef.h>
#include <stdint.h>

#define NVMET_AUTH_SECRET_MAX 64     /* key bytes: 32, 48 or 64 */

struct nvmet_auth_secret {
	uint8_t hmac;                /* transformation: 0 none, else a HashID (1 SHA-256, 2 SHA-384, 3 SHA-512) */
	uint8_t len;                 /* 32, 48 or 64; 0: no secret */
	uint8_t key[NVMET_AUTH_SECRET_MAX];
};

/* Parse s ("DHHC-1:0h:<base64>:", the trailing ':' optional). 0; -EINVAL for a malformed
 * string, a transformation hash that is not 0..3 or a key length not 32/48/64;
 * -EBADMSG when the CRC-32 after the key does not match. */
int nvmet_auth_secret_parse(const char *s, struct nvmet_auth_secret *out);

/* Hash length of HashID id (32/48/64), 0 for an unknown id. */
size_t nvmet_auth_hash_len(uint8_t id);

/* Bytes of the DH values of group id (0 for null, 256..1024), or -EINVAL for an unknown id. */
int nvmet_auth_dh_len(uint8_t id);

/* The key the responses are keyed with (*outlen bytes into out, NVMET_AUTH_SECRET_MAX):
 * the secret itself when its hmac is 0, else HMAC-H(secret, nqn || "NVMe-over-Fabrics")
 * with H its hmac. 0 or -errno. */
int nvmet_auth_secret_transform(const struct nvmet_auth_secret *k, const char *nqn, uint8_t *out, size_t *outlen);

/* The augmented challenge of a DH exchange: out = HMAC-H(H(ks), c), hl bytes, with
 * skh = H(ks) (the session key hashed, hl bytes) and H the negotiated hashid. */
int nvmet_auth_augment(uint8_t hashid, const uint8_t *skh, const uint8_t *c, uint8_t *out);

/* A response: out = HMAC-H(key, c || S || T_ID || 00h || role || nqn1 || 00h || nqn2),
 * hl bytes. The host's: role "HostHost", nqn1 the host NQN, nqn2 the subsystem's, S = S1;
 * the controller's: role "Controller", the subsystem NQN first, S = S2. */
int nvmet_auth_response(uint8_t hashid, const uint8_t *key, size_t keylen, const uint8_t *c, uint32_t seq,
			uint16_t tid, const char *role, const char *nqn1, const char *nqn2, uint8_t *out);

/* The DH part of one transaction in group dhgid: pub (the controller's value) from the
 * private exponent x (xlen bytes), and H(peer^x mod p) into skh for the negotiated hash. */
int nvmet_auth_dh_public(uint8_t dhgid, const uint8_t *x, size_t xlen, uint8_t *pub);
int nvmet_auth_dh_session(uint8_t dhgid, uint8_t hashid, const uint8_t *x, size_t xlen, const uint8_t *peer,
			  size_t peerlen, uint8_t *skh);

#endif
