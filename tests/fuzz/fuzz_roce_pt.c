// sources: drivers/rdma/roce_pt_msg.c
/*
 * libFuzzer harness: perftest's out-of-band exchange as the server takes it from an
 * untrusted client. The first byte picks the channel (TCP text keys or rdma_cm binary keys);
 * the rest is cut into messages: over TCP the sizes the exchange asks for given each message's
 * first byte, over rdma_cm a length byte before each message (a SEND's length).
 * Invariants: the exchange only moves forward, fails for good, answers within
 * ROCE_PT_MSG_MAX, and every keys message it accepts formats back to one that parses to the
 * same values.
 */
#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include "drivers/rdma/roce_perftest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct roce_pt_local ours = { .mtu = ROCE_MTU_1024, .dest = { .out_reads = 16, .qpn = 0x1a2, .rkey = 0x305 } };
	struct roce_pt_xchg x;
	size_t off = 1;

	if (size < 1)
		return 0;
	roce_pt_xchg_init(&x, data[0] & 1 ? ROCE_PT_WIRE_CM : ROCE_PT_WIRE_TCP);
	while (off < size) {
		enum roce_pt_xstate before = x.state;
		struct roce_pt_dest rem, back;
		uint8_t out[ROCE_PT_MSG_MAX];
		size_t len, n;
		int rc;

		if (x.wire == ROCE_PT_WIRE_CM) {
			len = data[off++];
		} else {
			len = roce_pt_xchg_need(&x, data[off]);
		}
		if (!len || len > size - off)
			break;
		rc = roce_pt_xchg_take(&x, data + off, len, &rem);
		off += len;
		assert(rc >= -EPROTO && rc <= 2);
		if (rc < 0) {
			assert(x.state == ROCE_PT_X_FAILED && roce_pt_xchg_need(&x, -1) == 0);
			assert(roce_pt_xchg_answer(&x, &ours, out, sizeof(out)) == 0);
			break;
		}
		assert(x.state >= before);
		n = roce_pt_xchg_answer(&x, &ours, out, sizeof(out));
		assert(n <= ROCE_PT_MSG_MAX);
		if (rc == 1) {
			assert(rem.qpn <= 0xffffff && rem.psn <= 0xffffff);
			if (x.wire == ROCE_PT_WIRE_TCP) {
				char t[ROCE_PT_KEYS_TEXT_LEN];
				roce_pt_keys_format_text(&rem, t);
				assert(roce_pt_keys_parse_text(t, sizeof(t), &back) == 0);
			} else {
				uint8_t b[ROCE_PT_KEYS_BIN_LEN];
				roce_pt_keys_format_bin(&rem, b);
				assert(roce_pt_keys_parse_bin(b, sizeof(b), &back) == 0);
			}
			assert(back.qpn == rem.qpn && back.psn == rem.psn && back.rkey == rem.rkey &&
			       back.vaddr == rem.vaddr && !memcmp(&back.gid, &rem.gid, 16));
			if (x.wire == ROCE_PT_WIRE_TCP)
				assert(back.lid == rem.lid && back.out_reads == (rem.out_reads & 0xffff) && back.srqn == rem.srqn);
		}
		if (rc == 2) {
			assert(x.state == ROCE_PT_X_DONE && n == 0);
			break;
		}
	}
	return 0;
}
