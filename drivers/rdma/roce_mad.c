/*
 * roce_mad.c - MAD parsing and the CM messages this endpoint builds (roce_mad.h).
 */
#include <string.h>
#include "roce_mad.h"

enum roce_mad_err roce_mad_parse(const uint8_t *buf, size_t len, struct roce_mad *out)
{
	struct roce_mad_hdr h;
	struct roce_mad m;

	memset(out, 0, sizeof(*out));
	if (len != ROCE_MAD_LEN)
		return ROCE_MAD_SHORT;
	memcpy(&h, buf, sizeof(h));
	if (h.base_version != MAD_BASE_VERSION)
		return ROCE_MAD_VERSION;
	memset(&m, 0, sizeof(m));
	m.mgmt_class = h.mgmt_class;
	m.class_version = h.class_version;
	m.method = h.method;
	m.status = be16_get(h.status);
	m.attr_id = be16_get(h.attr_id);
	m.tid = be64_get(h.tid);
	m.attr_mod = be32_get(h.attr_mod);
	if (m.mgmt_class == MAD_CLASS_CM) {
		if (m.class_version != MAD_CM_CLASS_VERSION)
			return ROCE_MAD_VERSION;
		if (m.attr_id == CM_ATTR_REQ) {
			struct roce_cm_req_head r;
			memcpy(&r, buf + ROCE_MAD_HDR_LEN, sizeof(r));
			m.req_local_comm_id = be32_get(r.local_comm_id);
			m.req_service_id = be64_get(r.service_id);
		}
	}
	*out = m;
	return ROCE_MAD_OK;
}

void roce_cm_build_rej(uint8_t out[ROCE_MAD_LEN], const struct roce_mad *req, uint16_t reason)
{
	struct roce_mad_hdr h = {
		.base_version = MAD_BASE_VERSION, .mgmt_class = MAD_CLASS_CM, .class_version = MAD_CM_CLASS_VERSION,
		.method = MAD_METHOD_SEND, .tid = be64_make(req->tid), .attr_id = be16_make(CM_ATTR_REJ),
	};
	struct roce_cm_rej rej;

	memset(&rej, 0, sizeof(rej));
	rej.remote_comm_id = be32_make(req->req_local_comm_id);
	rej.msg_rejected = CM_REJ_MSG_REQ << 6;
	rej.reason = be16_make(reason);
	memcpy(out, &h, sizeof(h));
	memcpy(out + sizeof(h), &rej, sizeof(rej));
}
