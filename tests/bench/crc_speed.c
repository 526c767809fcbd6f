/*
 * crc_speed.c - the digests' engines on this machine's real CPU (hosted, not under QEMU):
 * GB/s of CRC32C (NVMe/TCP digests) and CRC32 (the RoCE ICRC) for the appliance's
 * portable slicing-by-8 (lib/crc32.c), its SSE4.2 `crc32` path (the same file's
 * CRC32C_HW engine) and Intel ISA-L's folding code (Debian's libisal, linked here as the
 * shared library: Debian ships no static libisal.a). Each engine's result is checked
 * against the others' on the same bytes before it is timed. Prints a markdown table;
 * tools/bench/crc.py writes it to docs/bench-crc.md.
 *
 *   crc_speed [MiB]   bytes hashed per engine and size (default 256 MiB)
 */
// sources: lib/crc32.c lib/clock.c
// libs: -lisal
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "lib/crc32.h"

/* ISA-L's (isa-l/crc.h): declared here, because that header's crc32_ieee (a non-reflected
 * CRC32) has the name of lib/crc32.c's reflected one; linking ISA-L into the image would
 * need ours renamed. */
unsigned int crc32_iscsi(unsigned char *buffer, int len, unsigned int init_crc);
uint32_t crc32_gzip_refl(uint32_t init_crc, const unsigned char *buf, uint64_t len);

typedef uint32_t (*crc_fn)(uint32_t crc, const uint8_t *p, size_t n);

static uint32_t ours_crc32c(uint32_t c, const uint8_t *p, size_t n) { return crc32c(c, p, n); }
static uint32_t ours_crc32(uint32_t c, const uint8_t *p, size_t n) { return crc32_ieee(c, p, n); }
/* ISA-L's crc32_iscsi takes and returns the raw (inverted) register; crc32_gzip_refl
 * continues a finished CRC32 as zlib's crc32() does */
static uint32_t isal_crc32c(uint32_t c, const uint8_t *p, size_t n) { return ~crc32_iscsi((unsigned char *)p, (int)n, ~c); }
static uint32_t isal_crc32(uint32_t c, const uint8_t *p, size_t n) { return crc32_gzip_refl(c, p, n); }

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double gbps(crc_fn f, const uint8_t *buf, size_t size, size_t total, uint32_t *sink)
{
	size_t rounds = total / size ? total / size : 1;
	uint32_t c = 0;
	double t0 = now_s();
	for (size_t i = 0; i < rounds; i++)
		c = f(c, buf, size);
	double t = now_s() - t0;
	*sink ^= c;
	return (double)rounds * (double)size / t / 1e9;
}

int main(int argc, char **argv)
{
	static const size_t sizes[] = { 64, 1460, 4096, 131072 };
	size_t total = (argc > 1 ? strtoul(argv[1], NULL, 0) : 256) << 20;
	uint8_t *buf = malloc(131072);
	uint32_t sink = 0;
	int bad = 0;

	if (!buf)
		return 1;
	for (size_t i = 0; i < 131072; i++)
		buf[i] = (uint8_t)(i * 131 + (i >> 8));
	struct {
		const char *name;
		crc_fn f;
		enum crc32c_engine engine;
		crc_fn check;
	} e[] = {
		{ "CRC32C, lib/crc32.c slicing-by-8", ours_crc32c, CRC32C_TABLES, isal_crc32c },
		{ "CRC32C, lib/crc32.c SSE4.2 crc32 instruction", ours_crc32c, CRC32C_HW, isal_crc32c },
		{ "CRC32C, ISA-L crc32_iscsi", isal_crc32c, CRC32C_TABLES, ours_crc32c },
		{ "CRC32, lib/crc32.c slicing-by-8", ours_crc32, CRC32C_TABLES, isal_crc32 },
		{ "CRC32, ISA-L crc32_gzip_refl", isal_crc32, CRC32C_TABLES, ours_crc32 },
	};
	printf("| engine | 64 B | 1460 B | 4 KiB | 128 KiB |\n|---|---|---|---|---|\n");
	for (size_t k = 0; k < sizeof(e) / sizeof(e[0]); k++) {
		if (e[k].engine == CRC32C_HW && crc32c_set_engine(CRC32C_HW) != CRC32C_HW) {
			printf("| %s | (no SSE4.2 on this CPU) | | | |\n", e[k].name);
			continue;
		}
		crc32c_set_engine(e[k].engine);
		/* the check: both engines agree on every size, continued crc included */
		for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
			uint32_t a = e[k].f(e[k].f(0, buf, sizes[s]), buf + 7, sizes[s] - 7);
			crc32c_set_engine(CRC32C_TABLES);
			uint32_t b = e[k].check(e[k].check(0, buf, sizes[s]), buf + 7, sizes[s] - 7);
			crc32c_set_engine(e[k].engine);
			if (a != b) {
				fprintf(stderr, "crc_speed: %s disagrees at %zu B: 0x%08x vs 0x%08x\n", e[k].name, sizes[s], a, b);
				bad = 1;
			}
		}
		printf("| %s |", e[k].name);
		for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
			printf(" %.2f GB/s |", gbps(e[k].f, buf, sizes[s], total, &sink));
		printf("\n");
	}
	crc32c_set_engine(CRC32C_TABLES);
	fprintf(stderr, "(checksum of results %08x)\n", sink);
	free(buf);
	return bad;
}
