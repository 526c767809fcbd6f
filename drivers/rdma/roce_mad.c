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
		} else {
			struct roce_cm_ids ids;
			memcpy(&ids, buf + ROCE_MAD_HDR_LEN, sizeof(ids));
			m.local_comm_id = be32_get(ids.local_comm_id);
			m.remote_comm_id = be32_get(ids.remote_comm_id);
			if (m.attr_id == CM_ATTR_REJ) {
				struct roce_cm_rej rej;
				memcpy(&rej, buf + ROCE_MAD_HDR_LEN, sizeof(rej));
				m.rej_reason = be16_get(rej.reason);
			} else if (m.attr_id == CM_ATTR_DREQ) {
				struct roce_cm_dreq_msg d;
				memcpy(&d, buf + ROCE_MAD_HDR_LEN, sizeof(d));
				m.dreq_remote_qpn = be24_get(d.remote_qpn);
			}
		}
	}
	*out = m;
	return ROCE_MAD_OK;
}

void roce_cm_build_rej(uint8_t out[ROCE_MAD_LEN], const struct roce_mad *req, uint16_t reason)
{
	roce_cm_build_rej_ids(out, req->tid, 0, req->req_local_comm_id, CM_REJ_MSG_REQ, reason);
}

void roce_cm_parse_req(const uint8_t mad[ROCE_MAD_LEN], struct roce_cm_req *out)
{
	struct roce_cm_req_msg r;
	struct roce_cm_req q;

	memcpy(&r, mad + ROCE_MAD_HDR_LEN, sizeof(r));
	memset(&q, 0, sizeof(q));
	q.local_comm_id = be32_get(r.local_comm_id);
	q.service_id = be64_get(r.service_id);
	q.local_ca_guid = be64_get(r.local_ca_guid);
	q.local_qkey = be32_get(r.local_qkey);
	q.local_qpn = be24_get(r.local_qpn);
	q.responder_resources = r.responder_resources;
	q.initiator_depth = r.initiator_depth;
	q.remote_cm_timeout = r.rto_tst_e2e >> 3;
	q.transport = (r.rto_tst_e2e >> 1) & 3;
	q.starting_psn = be24_get(r.starting_psn);
	q.local_cm_timeout = r.lto_retry >> 3;
	q.retry_cnt = r.lto_retry & 7;
	q.pkey = be16_get(r.pkey);
	q.path_mtu = r.mtu_rdc_rnr >> 4;
	q.rnr_retry = r.mtu_rdc_rnr & 7;
	q.max_cm_retries = r.maxcm_srq_ext >> 4;
	q.srq = (r.maxcm_srq_ext & 0x08) != 0;
	memcpy(q.local_gid, r.primary_local_gid, 16);
	memcpy(q.remote_gid, r.primary_remote_gid, 16);
	q.traffic_class = r.primary_traffic_class;
	q.hop_limit = r.primary_hop_limit;
	q.ack_timeout = r.primary_ack_timeout >> 3;
	memcpy(q.private_data, r.private_data, sizeof(q.private_data));
	*out = q;
}

void roce_cm_build_hdr(uint8_t out[ROCE_MAD_LEN], uint16_t attr_id, uint64_t tid)
{
	struct roce_mad_hdr h = {
		.base_version = MAD_BASE_VERSION, .mgmt_class = MAD_CLASS_CM, .class_version = MAD_CM_CLASS_VERSION,
		.method = MAD_METHOD_SEND, .tid = be64_make(tid), .attr_id = be16_make(attr_id),
	};
	memset(out, 0, ROCE_MAD_LEN);
	memcpy(out, &h, sizeof(h));
}

void roce_cm_build_rep(uint8_t out[ROCE_MAD_LEN], uint64_t tid, const struct roce_cm_rep_msg *rep)
{
	roce_cm_build_hdr(out, CM_ATTR_REP, tid);
	memcpy(out + ROCE_MAD_HDR_LEN, rep, sizeof(*rep));
}

void roce_cm_build_req(uint8_t out[ROCE_MAD_LEN], uint64_t tid, const struct roce_cm_req_msg *req)
{
	roce_cm_build_hdr(out, CM_ATTR_REQ, tid);
	memcpy(out + ROCE_MAD_HDR_LEN, req, sizeof(*req));
}

void roce_cm_parse_rep(const uint8_t mad[ROCE_MAD_LEN], struct roce_cm_rep *out)
{
	struct roce_cm_rep_msg r;
	struct roce_cm_rep q;

	memcpy(&r, mad + ROCE_MAD_HDR_LEN, sizeof(r));
	memset(&q, 0, sizeof(q));
	q.local_comm_id = be32_get(r.local_comm_id);
	q.remote_comm_id = be32_get(r.remote_comm_id);
	q.local_qpn = be24_get(r.local_qpn);
	q.starting_psn = be24_get(r.starting_psn);
	q.responder_resources = r.responder_resources;
	q.initiator_depth = r.initiator_depth;
	q.target_ack_delay = r.tad_fo_e2e >> 3;
	q.rnr_retry = r.rnr_srq >> 5;
	q.srq = (r.rnr_srq & 0x10) != 0;
	*out = q;
}

void roce_cm_rdma_cm_hdr(uint8_t out[CM_RDMA_CM_HDR_LEN], uint16_t src_port, uint32_t src, uint32_t dst)
{
	memset(out, 0, CM_RDMA_CM_HDR_LEN);
	out[0] = 0x00;               /* cma_version */
	out[1] = 4 << 4;             /* ip_version */
	be16_store(out + 2, src_port);
	be32_store(out + 4 + 12, src);
	be32_store(out + 20 + 12, dst);
}

void roce_cm_build_ids(uint8_t out[ROCE_MAD_LEN], uint16_t attr_id, uint64_t tid, uint32_t local_comm_id,
		       uint32_t remote_comm_id)
{
	struct roce_cm_ids ids = { .local_comm_id = be32_make(local_comm_id), .remote_comm_id = be32_make(remote_comm_id) };
	roce_cm_build_hdr(out, attr_id, tid);
	memcpy(out + ROCE_MAD_HDR_LEN, &ids, sizeof(ids));
}

void roce_cm_build_rej_ids(uint8_t out[ROCE_MAD_LEN], uint64_t tid, uint32_t local_comm_id, uint32_t remote_comm_id,
			   uint8_t msg_rejected, uint16_t reason)
{
	struct roce_cm_rej rej;
	roce_cm_build_hdr(out, CM_ATTR_REJ, tid);
	memset(&rej, 0, sizeof(rej));
	rej.local_comm_id = be32_make(local_comm_id);
	rej.remote_comm_id = be32_make(remote_comm_id);
	rej.msg_rejected = (uint8_t)(msg_rejected << 6);
	rej.reason = be16_make(reason);
	memcpy(out + ROCE_MAD_HDR_LEN, &rej, sizeof(rej));
}

void roce_cm_build_dreq(uint8_t out[ROCE_MAD_LEN], uint64_t tid, uint32_t local_comm_id, uint32_t remote_comm_id,
			uint32_t remote_qpn)
{
	struct roce_cm_dreq_msg d;
	roce_cm_build_hdr(out, CM_ATTR_DREQ, tid);
	memset(&d, 0, sizeof(d));
	d.local_comm_id = be32_make(local_comm_id);
	d.remote_comm_id = be32_make(remote_comm_id);
	d.remote_qpn = be24_make(remote_qpn);
	memcpy(out + ROCE_MAD_HDR_LEN, &d, sizeof(d));
}
