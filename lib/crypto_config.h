/*
 * crypto_config.h - the mbedTLS configuration the image is built with (MBEDTLS_CONFIG_FILE):
 * only what lib/crypto.c uses. SHA-256, SHA-384/512 (one module), the message-digest layer
 * for HMAC, multi-precision integers for the finite-field Diffie-Hellman groups of RFC 7919,
 * base64 for the DHHC-1 secret representation. No platform entropy, files or time: the
 * appliance has none of them in libc's sense; random bytes come from arch/entropy.h.
 */
#ifndef LIB_CRYPTO_CONFIG_H
#define LIB_CRYPTO_CONFIG_H

#define MBEDTLS_HAVE_ASM          /* bn_mul.h's x86_64/aarch64 multiply-accumulate */
#define MBEDTLS_NO_PLATFORM_ENTROPY
#define MBEDTLS_BIGNUM_C
#define MBEDTLS_MD_C
#define MBEDTLS_SHA256_C
#define MBEDTLS_SHA512_C          /* SHA-384 and SHA-512 */
#define MBEDTLS_BASE64_C
/* 8192-bit ffdhe8192 is the largest number: 1024 bytes, the library's default limit */
#define MBEDTLS_MPI_MAX_SIZE 1024
/* sliding window of 6 bits for modular exponentiation (the library's default, spelled out) */
#define MBEDTLS_MPI_WINDOW_SIZE 6

#include "mbedtls/check_config.h"

#endif
