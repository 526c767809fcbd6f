// sources: drivers/rdma/roce_pp_msg.c
/*
 * libFuzzer harness: ibv_rc_pingpong's address message as the TCP peer sends it (52 bytes
 * read from an untrusted socket). Invariants: a message is accepted only in its exact
 * shape; what is accepted formats back to a message that parses to the same address.
 */
#include <assert.h>
#include <stdint.h>
#include <string.h>
#include "drivers/rdma/roce_pingpong.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct roce_pp_dest d, back;
	char out[ROCE_PP_MSG_LEN];

	if (roce_pp_parse((const char *)data, size, &d))
		return 0;
	assert(size >= ROCE_PP_MSG_LEN - 1 && data[4] == ':' && data[11] == ':' && data[18] == ':');
	assert(d.qpn <= 0xffffff && d.psn <= 0xffffff);
	roce_pp_format(&d, out);
	assert(out[ROCE_PP_MSG_LEN - 1] == 0 && strlen(out) == ROCE_PP_MSG_LEN - 1);
	assert(roce_pp_parse(out, sizeof(out), &back) == 0);
	assert(back.lid == d.lid && back.qpn == d.qpn && back.psn == d.psn && !memcmp(&back.gid, &d.gid, 16));
	return 0;
}
