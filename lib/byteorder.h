/*
 * byteorder.h - the one way wire and register formats say their byte order.
 *
 * A multi-byte field of a wire format (Ethernet/IP/TCP/UDP, NVMe/TCP PDUs, RoCE) or of a
 * structure a device reads or writes (NVMe queue entries and Identify data, e1000e
 * descriptors) is declared with one of the types below, never with a plain integer:
 *
 *   le16_t le32_t le64_t   little-endian (PCI devices, NVMe, NVMe/TCP)
 *   be16_t be32_t be64_t   big-endian, network byte order (IETF protocols, InfiniBand/RoCE)
 *   be24_t                 InfiniBand's 24-bit fields (QPN, PSN, MSN, EECN) in BTH, DETH, AETH, CM MADs
 *
 * Each type is a struct of bytes, so the compiler refuses to mix it with an integer or
 * with the other byte order (`uint16_t x = hdr.len;`, `hdr.len = 5;`, `le = be;` do not
 * compile), and it has alignment 1, so it may sit at any offset of a packed header. A
 * value goes in and out only through the accessors:
 *
 *   uint16_t le16_get(le16_t)     le16_t le16_make(uint16_t)       (and 32, 64, be*)
 *   uint16_t le16_load(const void *p)   void le16_store(void *p, uint16_t v)
 *
 * The _load/_store forms read or write raw bytes (a register image, an Identify page, a
 * byte buffer being parsed) at any alignment: one load or store of the whole width, plus a
 * byte swap where the host's order differs from the field's.
 * LE16_INIT(x) .. BE64_INIT(x) give constant initialisers for static tables.
 */
#ifndef LIB_BYTEORDER_H
#define LIB_BYTEORDER_H

#include <stdint.h>

typedef struct { uint8_t b[2]; } __attribute__((packed)) le16_t;
typedef struct { uint8_t b[4]; } __attribute__((packed)) le32_t;
typedef struct { uint8_t b[8]; } __attribute__((packed)) le64_t;
typedef struct { uint8_t b[2]; } __attribute__((packed)) be16_t;
typedef struct { uint8_t b[4]; } __attribute__((packed)) be32_t;
typedef struct { uint8_t b[8]; } __attribute__((packed)) be64_t;
typedef struct { uint8_t b[3]; } __attribute__((packed)) be24_t;

/* --- raw bytes at any alignment ---
 * One memcpy of the whole width (one load or store, also where the compiler has split a
 * struct into bytes) and, where the host's order differs, one byte swap. */

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define BYTEORDER_LE_(n, x) __builtin_bswap##n(x)
#define BYTEORDER_BE_(n, x) (x)
#else
#define BYTEORDER_LE_(n, x) (x)
#define BYTEORDER_BE_(n, x) __builtin_bswap##n(x)
#endif

static inline uint16_t le16_load(const void *p)
{
	uint16_t v;
	__builtin_memcpy(&v, p, sizeof(v));
	return (uint16_t)BYTEORDER_LE_(16, v);
}
static inline uint32_t le32_load(const void *p)
{
	uint32_t v;
	__builtin_memcpy(&v, p, sizeof(v));
	return BYTEORDER_LE_(32, v);
}
static inline uint64_t le64_load(const void *p)
{
	uint64_t v;
	__builtin_memcpy(&v, p, sizeof(v));
	return BYTEORDER_LE_(64, v);
}
static inline uint16_t be16_load(const void *p)
{
	uint16_t v;
	__builtin_memcpy(&v, p, sizeof(v));
	return (uint16_t)BYTEORDER_BE_(16, v);
}
static inline uint32_t be24_load(const void *p)
{
	const uint8_t *b = p;
	return (uint32_t)b[0] << 16 | (uint32_t)b[1] << 8 | (uint32_t)b[2];
}
static inline uint32_t be32_load(const void *p)
{
	uint32_t v;
	__builtin_memcpy(&v, p, sizeof(v));
	return BYTEORDER_BE_(32, v);
}
static inline uint64_t be64_load(const void *p)
{
	uint64_t v;
	__builtin_memcpy(&v, p, sizeof(v));
	return BYTEORDER_BE_(64, v);
}

static inline void le16_store(void *p, uint16_t v)
{
	v = (uint16_t)BYTEORDER_LE_(16, v);
	__builtin_memcpy(p, &v, sizeof(v));
}
static inline void le32_store(void *p, uint32_t v)
{
	v = BYTEORDER_LE_(32, v);
	__builtin_memcpy(p, &v, sizeof(v));
}
static inline void le64_store(void *p, uint64_t v)
{
	v = BYTEORDER_LE_(64, v);
	__builtin_memcpy(p, &v, sizeof(v));
}
static inline void be16_store(void *p, uint16_t v)
{
	v = (uint16_t)BYTEORDER_BE_(16, v);
	__builtin_memcpy(p, &v, sizeof(v));
}
static inline void be24_store(void *p, uint32_t v)  /* the low 24 bits of v */
{
	uint8_t *b = p;
	b[0] = (uint8_t)(v >> 16);
	b[1] = (uint8_t)(v >> 8);
	b[2] = (uint8_t)v;
}
static inline void be32_store(void *p, uint32_t v)
{
	v = BYTEORDER_BE_(32, v);
	__builtin_memcpy(p, &v, sizeof(v));
}
static inline void be64_store(void *p, uint64_t v)
{
	v = BYTEORDER_BE_(64, v);
	__builtin_memcpy(p, &v, sizeof(v));
}

/* --- typed fields --- */

static inline uint16_t le16_get(le16_t v) { return le16_load(v.b); }
static inline uint32_t le32_get(le32_t v) { return le32_load(v.b); }
static inline uint64_t le64_get(le64_t v) { return le64_load(v.b); }
static inline uint16_t be16_get(be16_t v) { return be16_load(v.b); }
static inline uint32_t be24_get(be24_t v) { return be24_load(v.b); }
static inline uint32_t be32_get(be32_t v) { return be32_load(v.b); }
static inline uint64_t be64_get(be64_t v) { return be64_load(v.b); }

static inline le16_t le16_make(uint16_t x) { le16_t v; le16_store(v.b, x); return v; }
static inline le32_t le32_make(uint32_t x) { le32_t v; le32_store(v.b, x); return v; }
static inline le64_t le64_make(uint64_t x) { le64_t v; le64_store(v.b, x); return v; }
static inline be16_t be16_make(uint16_t x) { be16_t v; be16_store(v.b, x); return v; }
static inline be24_t be24_make(uint32_t x) { be24_t v; be24_store(v.b, x); return v; }
static inline be32_t be32_make(uint32_t x) { be32_t v; be32_store(v.b, x); return v; }
static inline be64_t be64_make(uint64_t x) { be64_t v; be64_store(v.b, x); return v; }

/* --- constant initialisers (static tables) --- */

#define BYTEORDER_B_(x, n) ((uint8_t)((uint64_t)(x) >> (8 * (n))))
#define LE16_INIT(x) { { BYTEORDER_B_(x, 0), BYTEORDER_B_(x, 1) } }
#define LE32_INIT(x) { { BYTEORDER_B_(x, 0), BYTEORDER_B_(x, 1), BYTEORDER_B_(x, 2), BYTEORDER_B_(x, 3) } }
#define LE64_INIT(x)                                                                        \
	{ { BYTEORDER_B_(x, 0), BYTEORDER_B_(x, 1), BYTEORDER_B_(x, 2), BYTEORDER_B_(x, 3), \
	    BYTEORDER_B_(x, 4), BYTEORDER_B_(x, 5), BYTEORDER_B_(x, 6), BYTEORDER_B_(x, 7) } }
#define BE16_INIT(x) { { BYTEORDER_B_(x, 1), BYTEORDER_B_(x, 0) } }
#define BE24_INIT(x) { { BYTEORDER_B_(x, 2), BYTEORDER_B_(x, 1), BYTEORDER_B_(x, 0) } }
#define BE32_INIT(x) { { BYTEORDER_B_(x, 3), BYTEORDER_B_(x, 2), BYTEORDER_B_(x, 1), BYTEORDER_B_(x, 0) } }
#define BE64_INIT(x)                                                                        \
	{ { BYTEORDER_B_(x, 7), BYTEORDER_B_(x, 6), BYTEORDER_B_(x, 5), BYTEORDER_B_(x, 4), \
	    BYTEORDER_B_(x, 3), BYTEORDER_B_(x, 2), BYTEORDER_B_(x, 1), BYTEORDER_B_(x, 0) } }

#endif
