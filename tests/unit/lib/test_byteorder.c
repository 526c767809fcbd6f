// sources:
/*
 * lib/byteorder.h: each type puts its bytes in the order its name says, at any alignment;
 * get(make(x)) == x; the _INIT constants equal make(); and the seven types are distinct from
 * each other and from the integers, which is what makes mixing them a compile error.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>
#include "lib/byteorder.h"

#define DISTINCT(a, b) _Static_assert(!__builtin_types_compatible_p(a, b), #a " and " #b " must differ")
DISTINCT(le16_t, be16_t);
DISTINCT(le32_t, be32_t);
DISTINCT(le64_t, be64_t);
DISTINCT(le16_t, uint16_t);
DISTINCT(be16_t, uint16_t);
DISTINCT(le32_t, uint32_t);
DISTINCT(be32_t, uint32_t);
DISTINCT(le64_t, uint64_t);
DISTINCT(be64_t, uint64_t);
DISTINCT(le16_t, le32_t);
DISTINCT(be24_t, be32_t);
DISTINCT(be24_t, uint32_t);
_Static_assert(sizeof(be24_t) == 3 && _Alignof(be24_t) == 1, "a 24-bit field is 3 bytes at any offset");
_Static_assert(_Alignof(le64_t) == 1 && _Alignof(be32_t) == 1, "fields fit any offset");
_Static_assert(sizeof(le16_t) == 2 && sizeof(le32_t) == 4 && sizeof(le64_t) == 8, "sizes");
_Static_assert(sizeof(be16_t) == 2 && sizeof(be32_t) == 4 && sizeof(be64_t) == 8, "sizes");

Test(byteorder, bytes_in_the_named_order)
{
	le16_t a = le16_make(0x1234);
	be16_t b = be16_make(0x1234);
	le32_t c = le32_make(0x11223344u);
	be32_t d = be32_make(0x11223344u);
	le64_t e = le64_make(0x0102030405060708ull);
	be64_t f = be64_make(0x0102030405060708ull);

	cr_assert(memcmp(a.b, "\x34\x12", 2) == 0);
	cr_assert(memcmp(b.b, "\x12\x34", 2) == 0);
	cr_assert(memcmp(c.b, "\x44\x33\x22\x11", 4) == 0);
	cr_assert(memcmp(d.b, "\x11\x22\x33\x44", 4) == 0);
	cr_assert(memcmp(e.b, "\x08\x07\x06\x05\x04\x03\x02\x01", 8) == 0);
	cr_assert(memcmp(f.b, "\x01\x02\x03\x04\x05\x06\x07\x08", 8) == 0);
	cr_assert_eq(le16_get(a), 0x1234);
	cr_assert_eq(be16_get(b), 0x1234);
	cr_assert_eq(le32_get(c), 0x11223344u);
	cr_assert_eq(be32_get(d), 0x11223344u);
	cr_assert_eq(le64_get(e), 0x0102030405060708ull);
	cr_assert_eq(be64_get(f), 0x0102030405060708ull);
}

Test(byteorder, load_store_unaligned)
{
	uint8_t buf[24];
	for (unsigned off = 0; off < 8; off++) {
		memset(buf, 0xee, sizeof(buf));
		le64_store(buf + off, 0xa1b2c3d4e5f60718ull);
		cr_assert_eq(le64_load(buf + off), 0xa1b2c3d4e5f60718ull);
		cr_assert_eq(buf[off], 0x18);
		cr_assert_eq(le32_load(buf + off + 4), 0xa1b2c3d4u);
		cr_assert_eq(le16_load(buf + off + 6), 0xa1b2);
		be64_store(buf + off, 0xa1b2c3d4e5f60718ull);
		cr_assert_eq(be64_load(buf + off), 0xa1b2c3d4e5f60718ull);
		cr_assert_eq(buf[off], 0xa1);
		cr_assert_eq(be32_load(buf + off + 4), 0xe5f60718u);
		cr_assert_eq(be16_load(buf + off + 6), 0x0718);
		le16_store(buf + off, 0xbeef);
		be16_store(buf + off + 2, 0xbeef);
		le32_store(buf + off + 4, 0xcafef00du);
		be32_store(buf + off + 8, 0xcafef00du);
		cr_assert(memcmp(buf + off, "\xef\xbe\xbe\xef\x0d\xf0\xfe\xca\xca\xfe\xf0\x0d", 12) == 0);
		cr_assert_eq(buf[off + 12], 0xee, "no byte past the field");
	}
}

Test(byteorder, constant_initialisers)
{
	static const struct {
		le16_t a;
		le32_t b;
		le64_t c;
		be16_t d;
		be32_t e;
		be64_t f;
	} t = { LE16_INIT(0xabcd), LE32_INIT(0x89abcdefu), LE64_INIT(0x0123456789abcdefull),
		BE16_INIT(0xabcd), BE32_INIT(0x89abcdefu), BE64_INIT(0x0123456789abcdefull) };
	cr_assert(memcmp(&t.a, le16_make(0xabcd).b, 2) == 0);
	cr_assert(memcmp(&t.b, le32_make(0x89abcdefu).b, 4) == 0);
	cr_assert(memcmp(&t.c, le64_make(0x0123456789abcdefull).b, 8) == 0);
	cr_assert(memcmp(&t.d, be16_make(0xabcd).b, 2) == 0);
	cr_assert(memcmp(&t.e, be32_make(0x89abcdefu).b, 4) == 0);
	cr_assert(memcmp(&t.f, be64_make(0x0123456789abcdefull).b, 8) == 0);
}

Test(byteorder, be24_is_infinibands_24_bit_field)
{
	uint8_t buf[8];
	be24_t q = be24_make(0x123456);
	static const be24_t init = BE24_INIT(0xabcdef);

	cr_assert(memcmp(q.b, "\x12\x34\x56", 3) == 0);
	cr_assert_eq(be24_get(q), 0x123456);
	cr_assert_eq(be24_get(be24_make(0xff123456u)), 0x123456, "the low 24 bits");
	cr_assert(memcmp(init.b, "\xab\xcd\xef", 3) == 0);
	for (unsigned off = 0; off < 4; off++) {
		memset(buf, 0xee, sizeof(buf));
		be24_store(buf + off, 0xfffffe);
		cr_assert_eq(be24_load(buf + off), 0xfffffe);
		cr_assert_eq(buf[off + 3], 0xee, "no byte past the field");
	}
}
