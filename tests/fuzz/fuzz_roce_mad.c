// sources: drivers/rdma/roce_mad.c
/*
 * libFuzzer harness: MADs as QP 1 receives them (the UD payload), parsed, and for every
 * accepted CM REQ its fields parsed and a REJ built, for every REP its fields parsed. Invariants: only 256-byte MADs of base version 1 (and CM
 * class version 2) are accepted; the REJ carries the REQ's TransactionID and
 * Communication ID and nothing else beyond its fixed fields (no stale bytes).
 */
#include <assert.h>
#include <stdint.h>
#include <string.h>
#include "drivers/rdma/roce_mad.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct roce_mad m;
	uint8_t rej[ROCE_MAD_LEN];
	struct roce_mad r;

	if (roce_mad_parse(data, size, &m) != ROCE_MAD_OK)
		return 0;
	assert(size == ROCE_MAD_LEN && data[0] == MAD_BASE_VERSION);
	assert(m.mgmt_class != MAD_CLASS_CM || m.class_version == MAD_CM_CLASS_VERSION);
	if (m.mgmt_class == MAD_CLASS_CM && m.attr_id == CM_ATTR_REP) {
		/* the active side's REP: its fields within their widths, the IDs as the header parse saw them */
		struct roce_cm_rep p;
		roce_cm_parse_rep(data, &p);
		assert(p.local_comm_id == m.local_comm_id && p.remote_comm_id == m.remote_comm_id);
		assert(p.local_qpn <= 0xffffff && p.starting_psn <= 0xffffff && p.rnr_retry <= 7 && p.target_ack_delay <= 31);
		return 0;
	}
	if (m.mgmt_class != MAD_CLASS_CM || m.attr_id != CM_ATTR_REQ)
		return 0;
	struct roce_cm_req q;
	roce_cm_parse_req(data, &q);
	assert(q.local_comm_id == m.req_local_comm_id && q.service_id == m.req_service_id);
	assert(q.local_qpn <= 0xffffff && q.starting_psn <= 0xffffff && q.path_mtu <= 15 && q.retry_cnt <= 7 &&
	       q.rnr_retry <= 7 && q.transport <= 3);
	memset(rej, 0xa5, sizeof(rej));
	roce_cm_build_rej(rej, &m, CM_REJ_INVALID_SERVICE_ID);
	assert(roce_mad_parse(rej, sizeof(rej), &r) == ROCE_MAD_OK);
	assert(r.attr_id == CM_ATTR_REJ && r.tid == m.tid && r.method == MAD_METHOD_SEND);
	assert(((uint32_t)rej[28] << 24 | (uint32_t)rej[29] << 16 | (uint32_t)rej[30] << 8 | rej[31]) ==
	       m.req_local_comm_id);
	for (size_t i = 36; i < sizeof(rej); i++)
		assert(rej[i] == 0);
	return 0;
}
