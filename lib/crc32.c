/*
 * crc32.c - CRC32C and CRC32 (see crc32.h).
 *
 * Slicing-by-8: table[k][b] is the CRC of byte b followed by k zero bytes, so eight
 * input bytes are folded with eight lookups. Tables are built on first use (8 KiB each).
 */
#include <stdbool.h>
#include <string.h>
#include "../arch/cpu_ops.h"
#include "clock.h"
#include "crc32.h"

#define POLY_CRC32C 0x82f63b78u /* Castagnoli, reflected */
#define POLY_CRC32 0xedb88320u  /* IEEE 802.3, reflected */

struct crc_tables {
	uint32_t t[8][256];
	bool ready;
};

static struct crc_tables tab_crc32c, tab_crc32;
static enum crc32c_engine engine = CRC32C_TABLES;

static void tables_build(struct crc_tables *ct, uint32_t poly)
{
	for (unsigned b = 0; b < 256; b++) {
		uint32_t c = b;
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (poly & (0u - (c & 1)));
		ct->t[0][b] = c;
	}
	for (unsigned b = 0; b < 256; b++)
		for (unsigned k = 1; k < 8; k++)
			ct->t[k][b] = (ct->t[k - 1][b] >> 8) ^ ct->t[0][ct->t[k - 1][b] & 0xff];
	ct->ready = true;
}

/* Raw (no pre/post inversion) slicing-by-8 update. */
static uint32_t crc_tables_update(const struct crc_tables *ct, uint32_t c, const uint8_t *p, size_t n)
{
	while (n && ((uintptr_t)p & 7)) {
		c = (c >> 8) ^ ct->t[0][(c ^ *p++) & 0xff];
		n--;
	}
	while (n >= 8) {
		uint64_t w;
		memcpy(&w, p, 8);
		uint32_t lo = c ^ (uint32_t)w, hi = (uint32_t)(w >> 32);
		c = ct->t[7][lo & 0xff] ^ ct->t[6][(lo >> 8) & 0xff] ^ ct->t[5][(lo >> 16) & 0xff] ^
		    ct->t[4][lo >> 24] ^ ct->t[3][hi & 0xff] ^ ct->t[2][(hi >> 8) & 0xff] ^
		    ct->t[1][(hi >> 16) & 0xff] ^ ct->t[0][hi >> 24];
		p += 8;
		n -= 8;
	}
	while (n--)
		c = (c >> 8) ^ ct->t[0][(c ^ *p++) & 0xff];
	return c;
}

/* Raw update with the processor's CRC32C instruction (arch/cpu_ops.h). */
ARCH_CRC32C_TARGET static uint32_t crc32c_hw_update(uint32_t c, const uint8_t *p, size_t n)
{
	while (n && ((uintptr_t)p & 7)) {
		c = arch_crc32c_u8(c, *p++);
		n--;
	}
	while (n >= 8) {
		uint64_t w;
		memcpy(&w, p, 8);
		c = arch_crc32c_u64(c, w);
		p += 8;
		n -= 8;
	}
	while (n--)
		c = arch_crc32c_u8(c, *p++);
	return c;
}

/* CRC32C. */
uint32_t crc32c(uint32_t crc, const void *buf, size_t len)
{
	if (engine == CRC32C_HW)
		return ~crc32c_hw_update(~crc, buf, len);
	if (!tab_crc32c.ready)
		tables_build(&tab_crc32c, POLY_CRC32C);
	return ~crc_tables_update(&tab_crc32c, ~crc, buf, len);
}

/* CRC32 (IEEE). */
uint32_t crc32_ieee(uint32_t crc, const void *buf, size_t len)
{
	if (!tab_crc32.ready)
		tables_build(&tab_crc32, POLY_CRC32);
	return ~crc_tables_update(&tab_crc32, ~crc, buf, len);
}

/* Select the engine. */
enum crc32c_engine crc32c_set_engine(enum crc32c_engine e)
{
	engine = (e == CRC32C_HW && arch_cpu_has_crc32c()) ? CRC32C_HW : CRC32C_TABLES;
	return engine;
}

/* Engine name. */
const char *crc32c_engine_name(enum crc32c_engine e)
{
	return e == CRC32C_HW ? ARCH_CRC32C_HW_NAME : "slicing-by-8";
}

static uint64_t time_engine(enum crc32c_engine e, const void *buf, size_t len)
{
	uint64_t best = UINT64_MAX;
	volatile uint32_t sink = 0;

	engine = e;
	for (int r = 0; r < 8; r++) {
		uint64_t t0 = clock_now_ns();
		sink += crc32c(0, buf, len);
		uint64_t dt = clock_now_ns() - t0;
		if (dt < best)
			best = dt;
	}
	(void)sink;
	return best;
}

/* Keep the faster engine. */
enum crc32c_engine crc32c_calibrate(const void *buf, size_t len, uint64_t ns_out[2])
{
	uint64_t t_tab = time_engine(CRC32C_TABLES, buf, len);
	uint64_t t_hw = arch_cpu_has_crc32c() ? time_engine(CRC32C_HW, buf, len) : UINT64_MAX;

	if (ns_out) {
		ns_out[0] = t_tab;
		ns_out[1] = t_hw;
	}
	return crc32c_set_engine(t_hw < t_tab ? CRC32C_HW : CRC32C_TABLES);
}
