// sources: core/cmdline.c
/*
 * libFuzzer harness: console argument splitting (bytes typed on the serial console).
 * Invariants: argc bounded, argv NULL-terminated, every argument inside the buffer.
 */
#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "core/cmdline.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf = malloc(size + 1);
	char *argv[CMDLINE_MAX_ARGS];
	memcpy(buf, data, size);
	buf[size] = '\0';
	int argc = cmdline_split(buf, argv, CMDLINE_MAX_ARGS);
	assert(argc == -EINVAL || argc == -E2BIG || (argc >= 0 && argc < CMDLINE_MAX_ARGS));
	if (argc >= 0) {
		assert(argv[argc] == NULL);
		for (int i = 0; i < argc; i++) {
			assert(argv[i] >= buf && argv[i] <= buf + size);
			assert(argv[i] + strlen(argv[i]) <= buf + size);
		}
	}
	free(buf);
	return 0;
}
