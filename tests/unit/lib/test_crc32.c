// sources: lib/crc32.c
/*
 * CRC32C against RFC 3720 (iSCSI) B.4 vectors and the standard check value, both
 * engines; CRC32 (IEEE) check value; incremental updates equal one-shot; calibration.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>
#include "lib/clock.h"
#include "lib/crc32.h"

static void vectors_for(enum crc32c_engine e)
{
	uint8_t buf[32];
	crc32c_set_engine(e);
	cr_assert_eq(crc32c(0, "123456789", 9), 0xe3069283u);
	memset(buf, 0, 32);
	cr_assert_eq(crc32c(0, buf, 32), 0x8a9136aau);
	memset(buf, 0xff, 32);
	cr_assert_eq(crc32c(0, buf, 32), 0x62a8ab43u);
	for (int i = 0; i < 32; i++)
		buf[i] = (uint8_t)i;
	cr_assert_eq(crc32c(0, buf, 32), 0x46dd794eu);
	for (int i = 0; i < 32; i++)
		buf[i] = (uint8_t)(31 - i);
	cr_assert_eq(crc32c(0, buf, 32), 0x113fdb5cu);
	cr_assert_eq(crc32c(0, buf, 0), 0);
}

Test(crc32, crc32c_tables_rfc3720_vectors)
{
	vectors_for(CRC32C_TABLES);
}

Test(crc32, crc32c_hw_rfc3720_vectors)
{
	if (crc32c_set_engine(CRC32C_HW) != CRC32C_HW)
		cr_skip_test("no SSE4.2 on this CPU");
	vectors_for(CRC32C_HW);
	crc32c_set_engine(CRC32C_TABLES);
}

Test(crc32, crc32_ieee_check_value)
{
	cr_assert_eq(crc32_ieee(0, "123456789", 9), 0xcbf43926u);
	cr_assert_eq(crc32_ieee(0, "", 0), 0);
}

Test(crc32, incremental_equals_one_shot_at_every_split_and_alignment)
{
	static uint8_t buf[300];
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 37 + 11);
	for (int e = 0; e < 2; e++) {
		crc32c_set_engine((enum crc32c_engine)e);
		for (size_t off = 0; off < 8; off++) {
			uint32_t whole = crc32c(0, buf + off, 280);
			uint32_t whole_ieee = crc32_ieee(0, buf + off, 280);
			for (size_t cut = 0; cut <= 280; cut += 7) {
				cr_assert_eq(crc32c(crc32c(0, buf + off, cut), buf + off + cut, 280 - cut), whole);
				cr_assert_eq(crc32_ieee(crc32_ieee(0, buf + off, cut), buf + off + cut, 280 - cut), whole_ieee);
			}
		}
	}
	crc32c_set_engine(CRC32C_TABLES);
}

static uint64_t now_ns;
static uint64_t ticking(void)
{
	return now_ns += 3;
}

Test(crc32, calibration_keeps_a_working_engine)
{
	static uint8_t buf[4096];
	uint64_t ns[2];
	clock_set_source(ticking);
	enum crc32c_engine e = crc32c_calibrate(buf, sizeof(buf), ns);
	cr_assert_gt(ns[0], 0);
	cr_assert(e == CRC32C_TABLES || e == CRC32C_HW);
	cr_assert_eq(crc32c(0, "123456789", 9), 0xe3069283u, "whichever engine won, it is right");
	crc32c_set_engine(CRC32C_TABLES);
}
