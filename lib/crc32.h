/*
 * crc32.h - CRC32C (Castagnoli, iSCSI/NVMe-TCP digests) and CRC32 (IEEE 802.3, the RoCE
 * ICRC), both reflected, zlib-style: crc = crc32c(0, buf, len) for one buffer, and
 * crc = crc32c(crc, more, n) to continue over more bytes.
 *
 * CRC32C has two engines: slicing-by-8 tables, and the processor's CRC32C instruction
 * (x86 SSE4.2 `crc32`, arm64 `crc32cx`).
 * Which is faster depends on the platform (under QEMU TCG the instruction is an emulated
 * helper call), so crc32c_calibrate() times both at boot and keeps the faster.
 */
#ifndef LIB_CRC32_H
#define LIB_CRC32_H

#include <stddef.h>
#include <stdint.h>

/* CRC32C over len bytes, continuing from crc (0 to start). */
uint32_t crc32c(uint32_t crc, const void *buf, size_t len);

/* CRC32 (IEEE 802.3 polynomial) over len bytes, continuing from crc (0 to start). */
uint32_t crc32_ieee(uint32_t crc, const void *buf, size_t len);

enum crc32c_engine {
	CRC32C_TABLES = 0,   /* slicing-by-8 */
	CRC32C_HW = 1,       /* the processor's CRC32C instruction (arch/cpu_ops.h) */
};

/* Select the CRC32C engine; selecting the instruction on a CPU without it keeps the tables.
 * Returns the engine in use. */
enum crc32c_engine crc32c_set_engine(enum crc32c_engine e);

/* Engine name for the console. */
const char *crc32c_engine_name(enum crc32c_engine e);

/* Time both engines over len bytes of buf with the injected clock, keep the faster;
 * ns_out (may be NULL) gets each engine's time. Returns the engine in use. */
enum crc32c_engine crc32c_calibrate(const void *buf, size_t len, uint64_t ns_out[2]);

#endif
