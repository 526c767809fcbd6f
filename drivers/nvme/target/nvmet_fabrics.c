/*
 * nvmet_fabrics.c - the fabrics command set of the NVMe-oF target (NVMe over Fabrics
 * 1.1, chapter 3): Connect (which creates a controller on the admin queue or binds an I/O
 * queue to one), Property Get/Set (CAP, VS, CC, CSTS: the controller's register view)
 * and Disconnect; AUTH_Send/AUTH_Receive go to nvmet_auth.c. The objects themselves live
 * in nvmet_core.c.
 */
#include <errno.h>
#include <string.h>
#include "../../../lib/log.h"
#include "nvmet_priv.h"

LOG_MODULE_USE(nvmet);

static bool subsys_on_port(const struct nvmet_subsys *s, unsigned port)
{
	const struct nvmet_cfg_port *p = &nvmet_tgt.cfg.ports[port];
	if (s->discovery)
		return true;
	for (unsigned i = 0; i < p->nsubsys; i++)
		if (&nvmet_tgt.subsys[p->subsys[i]] == s)
			return true;
	return false;
}

static struct nvmet_ctrl *ctrl_find(const struct nvmet_subsys *s, uint16_t cntlid)
{
	struct list_node *it;
	list_for_each(&nvmet_tgt.ctrls, it) {
		struct nvmet_ctrl *c = container_of(it, struct nvmet_ctrl, node);
		if (c->subsys == s && c->cntlid == cntlid)
			return c;
	}
	return NULL;
}

/* Controllers held by the host address addr (0: unknown, not counted). */
static unsigned peer_ctrls(uint32_t addr)
{
	struct list_node *it;
	unsigned n = 0;
	if (!addr)
		return 0;
	list_for_each(&nvmet_tgt.ctrls, it)
		n += container_of(it, struct nvmet_ctrl, node)->peer_addr == addr;
	return n;
}

/* Lowest free controller ID of s at or after its cursor (wrapping in the range), or 0. */
static uint16_t cntlid_alloc(struct nvmet_subsys *s)
{
	uint16_t lo = s->cfg->cntlid_min ? s->cfg->cntlid_min : 1;
	uint16_t hi = s->cfg->cntlid_max && s->cfg->cntlid_max <= 0xffef ? s->cfg->cntlid_max : 0xffef;
	uint32_t span = (uint32_t)hi - lo + 1;
	uint16_t id = s->next_cntlid < lo || s->next_cntlid > hi ? lo : s->next_cntlid;

	for (uint32_t n = 0; n < span && n <= NVMET_MAX_CTRLS; n++) {
		if (!ctrl_find(s, id)) {
			s->next_cntlid = id == hi ? lo : (uint16_t)(id + 1);
			return id;
		}
		id = id == hi ? lo : (uint16_t)(id + 1);
	}
	return 0;
}

/* Refuse a Connect with status sc (DW0: the invalid parameter's location) and say why,
 * naming the host and the subsystem it asked for. */
static void connect_fail(struct nvmet_req *req, uint16_t sc, uint32_t dw0, const char *why, const uint8_t *cd)
{
	log_warn("connect refused on port %u: %s (host %s, subsystem %s, qid %u)", nvmet_tgt.cfg.ports[req->q->port].portid,
		 why, (const char *)cd + NVMF_CD_OFF_HOSTNQN, (const char *)cd + NVMF_CD_OFF_SUBNQN,
		 le16_get(nvmf_cmd_of(&req->sqe).connect.qid));
	nvmet_tgt.st.connect_refused++;
	req->cqe.dw0 = le32_make(dw0);
	nvmet_req_complete(req, sc);
}

static void bind_queue(struct nvmet_ctrl *c, struct nvmet_queue *q, uint16_t qid, uint16_t sqsize, uint8_t cattr)
{
	q->ctrl = c;
	q->qid = qid;
	q->size = (uint16_t)(sqsize + 1);
	q->sqhd = (uint16_t)(1 % q->size); /* the Connect itself was consumed */
	q->sqflow_off = (cattr & NVMF_CATTR_DISABLE_SQFLOW) != 0;
	q->state = NVMET_Q_LIVE;
	c->queues[qid] = q;
	c->nqueues++;
	nvmet_rw_fast_invalidate();
}

static void fabrics_connect(struct nvmet_req *req)
{
	static uint8_t cd[NVMF_CONNECT_DATA_LEN];
	struct nvmet_queue *q = req->q;
	const struct nvmf_cmd f = nvmf_cmd_of(&req->sqe);
	uint16_t recfmt = le16_get(f.connect.recfmt), qid = le16_get(f.connect.qid);
	uint16_t sqsize = le16_get(f.connect.sqsize);
	uint8_t cattr = f.connect.cattr;
	uint32_t kato = le32_get(f.connect.kato);
	const char *subnqn = (const char *)cd + NVMF_CD_OFF_SUBNQN;
	const char *hostnqn = (const char *)cd + NVMF_CD_OFF_HOSTNQN;
	struct nvmet_subsys *s;
	struct nvmet_ctrl *c;
	uint16_t cntlid;

	if (q->state != NVMET_Q_NEW)
		return nvmet_req_complete(req, NVMET_SC_CMD_SEQ_ERROR);
	if (req->data.len != NVMF_CONNECT_DATA_LEN)
		return nvmet_req_complete(req, NVMET_SC_SGL_LENGTH_INVALID);
	if (nvmet_copy_from_req(req, 0, cd, sizeof(cd)) < 0)
		return nvmet_req_complete(req, NVMET_SC_DATA_XFER_ERROR);
	cd[NVMF_CD_OFF_SUBNQN + NVMF_NQN_FIELD_LEN - 1] = 0;
	cd[NVMF_CD_OFF_HOSTNQN + NVMF_NQN_FIELD_LEN - 1] = 0;
	cntlid = le16_load(cd + NVMF_CD_OFF_CNTLID);

	if (recfmt != 0)
		return connect_fail(req, NVMET_SC_CONNECT_FORMAT, 0, "record format", cd);
	if (sqsize == 0 || sqsize >= q->ops->max_queue_size || sqsize >= NVMET_MAX_QUEUE_SIZE)
		return connect_fail(req, NVMET_SC_CONNECT_INVALID_PARAM, NVMF_CONNECT_OFF_SQSIZE, "sqsize", cd);
	if (!(s = nvmet_subsys_by_nqn(subnqn)) || !subsys_on_port(s, q->port))
		return connect_fail(req, NVMET_SC_CONNECT_INVALID_PARAM, NVMF_IATTR_DATA | NVMF_CD_OFF_SUBNQN,
				    "unknown subsystem", cd);
	if (!hostnqn[0] || !nvmet_host_allowed(s, hostnqn))
		return connect_fail(req, NVMET_SC_CONNECT_INVALID_HOST, NVMF_IATTR_DATA | NVMF_CD_OFF_HOSTNQN,
				    "host not allowed", cd);

	if (qid == 0) {
		if (cntlid != NVMF_CNTLID_DYNAMIC)
			return connect_fail(req, NVMET_SC_CONNECT_INVALID_PARAM, NVMF_IATTR_DATA | NVMF_CD_OFF_CNTLID,
					    "static controller ID", cd);
		if (peer_ctrls(q->peer_addr) >= NVMET_CTRLS_PER_PEER) {
			nvmet_tgt.st.peer_ctrl_limit++;
			return connect_fail(req, NVMET_SC_CONNECT_CTRL_BUSY, 0,
					    "this host address holds its share of controllers", cd);
		}
		if (nvmet_auth_host_check(s, hostnqn))
			return connect_fail(req, NVMET_SC_CONNECT_INVALID_HOST, NVMF_IATTR_DATA | NVMF_CD_OFF_HOSTNQN,
					    "its dhchap_key or dhchap_ctrl_key is not valid (length or CRC)", cd);
		if (!(cntlid = cntlid_alloc(s)) || !(c = nvmet_ctrl_alloc()))
			return connect_fail(req, NVMET_SC_CONNECT_CTRL_BUSY, 0, "no controller available", cd);
		c->subsys = s;
		c->port = q->port;
		c->cntlid = cntlid;
		c->ops = q->ops;
		c->peer_addr = q->peer_addr;
		c->local_addr = q->local_addr;
		memcpy(c->hostnqn, hostnqn, sizeof(c->hostnqn));
		memcpy(c->hostid, cd + NVMF_CD_OFF_HOSTID, sizeof(c->hostid));
		nvmet_auth_ctrl_init(c);
		/* a discovery controller without keep-alive is still reaped when idle (Linux
		 * nvmet does the same): it cannot hold a controller forever */
		c->kato_ms = kato || !s->discovery ? kato : NVMET_DISC_KATO_MS;
		c->nr_io_queues = NVMET_MAX_IO_QUEUES;
		c->sqsize_max = (uint16_t)(q->ops->max_queue_size < NVMET_MAX_QUEUE_SIZE ? q->ops->max_queue_size
											 : NVMET_MAX_QUEUE_SIZE);
		list_add_tail(&nvmet_tgt.ctrls, &c->node);
		s->nctrls++;
		nvmet_tgt.nctrls++;
		nvmet_tgt.st.ctrls_created++;
		bind_queue(c, q, 0, sqsize, cattr);
		nvmet_ctrl_set_state(c, NVMET_CTRL_CONNECTED);
		nvmet_ctrl_keep_alive(c);
		log_info("ctrl %u created for %s on %s (port %u, kato %u ms)", cntlid, hostnqn, s->cfg->nqn,
			 nvmet_tgt.cfg.ports[q->port].portid, c->kato_ms);
	} else {
		if (s->discovery || qid > NVMET_MAX_IO_QUEUES)
			return connect_fail(req, NVMET_SC_CONNECT_INVALID_PARAM, NVMF_CONNECT_OFF_QID, "qid", cd);
		c = ctrl_find(s, cntlid);
		if (!c || strcmp(c->hostnqn, hostnqn) != 0 || c->state == NVMET_CTRL_FAILED)
			return connect_fail(req, NVMET_SC_CONNECT_INVALID_PARAM, NVMF_IATTR_DATA | NVMF_CD_OFF_CNTLID,
					    "no such controller for this host", cd);
		if (c->port != q->port)
			return connect_fail(req, NVMET_SC_CONNECT_INVALID_PARAM, NVMF_IATTR_DATA | NVMF_CD_OFF_CNTLID,
					    "the controller is on another port", cd);
		if (qid > c->nr_io_queues)
			return connect_fail(req, NVMET_SC_CONNECT_INVALID_PARAM, NVMF_CONNECT_OFF_QID,
					    "qid beyond the Number of Queues granted", cd);
		if (c->state != NVMET_CTRL_ENABLED || c->queues[qid])
			return connect_fail(req, NVMET_SC_CMD_SEQ_ERROR, 0, "controller not ready or qid in use",
					    cd);
		if (sqsize >= c->sqsize_max)
			return connect_fail(req, NVMET_SC_CONNECT_INVALID_PARAM, NVMF_CONNECT_OFF_SQSIZE, "sqsize",
					    cd);
		bind_queue(c, q, qid, sqsize, cattr);
		log_debug("ctrl %u: I/O queue %u connected (%u entries)", c->cntlid, qid, sqsize + 1u);
	}
	nvmet_tgt.st.connects++;
	req->cqe.dw0 = le32_make(c->cntlid | nvmet_auth_queue_start(q)); /* AUTHREQ */
	nvmet_req_complete(req, NVMET_SC_SUCCESS);
}

#define NVMET_VS NVME_VS(1, 3)

static uint64_t ctrl_cap(const struct nvmet_ctrl *c)
{
	return NVME_SET(NVME_CAP_MQES, c->sqsize_max - 1u) | NVME_SET(NVME_CAP_CQR, 1) |
	       NVME_SET(NVME_CAP_TO, 15) /* 7.5 s */ | NVME_SET(NVME_CAP_CSS, 1) /* NVM */;
}

/* A CC write: EN rising checks the entry sizes and sets CSTS.RDY, falling resets,
 * SHN flushes the namespaces this controller wrote to, then CSTS.SHST complete (nvmet_io.c). */
static void ctrl_update_cc(struct nvmet_ctrl *c, uint32_t cc)
{
	uint32_t old = c->cc;

	c->cc = cc;
	if ((cc & NVME_CC_EN) && !(old & NVME_CC_EN)) {
		if (NVME_GET(cc, NVME_CC_MPS) != 0 || NVME_GET(cc, NVME_CC_AMS) != 0 ||
		    NVME_GET(cc, NVME_CC_CSS) != 0 || NVME_GET(cc, NVME_CC_IOSQES) != 6 ||
		    NVME_GET(cc, NVME_CC_IOCQES) != 4) {
			log_warn("ctrl %u: CC 0x%x refused (entry sizes, page size or command set)", c->cntlid, cc);
			c->csts = NVME_CSTS_CFS;
			nvmet_ctrl_kill(c, -EINVAL);
			return;
		}
		c->csts = NVME_CSTS_RDY;
		nvmet_ctrl_set_state(c, NVMET_CTRL_ENABLED);
	}
	if (!(cc & NVME_CC_EN) && (old & NVME_CC_EN)) {
		c->csts &= ~NVME_CSTS_RDY;
		if (c->state == NVMET_CTRL_ENABLED)
			nvmet_ctrl_set_state(c, NVMET_CTRL_CONNECTED);
	}
	if (NVME_GET(cc, NVME_CC_SHN) && !NVME_GET(old, NVME_CC_SHN))
		nvmet_ctrl_shutdown_start(c);
	if (!NVME_GET(cc, NVME_CC_SHN) && NVME_GET(old, NVME_CC_SHN)) {
		c->csts &= ~(uint32_t)NVME_SET(NVME_CSTS_SHST, NVME_CSTS_SHST_MASK);
		if (c->state == NVMET_CTRL_SHUTDOWN)
			nvmet_ctrl_set_state(c, (cc & NVME_CC_EN) ? NVMET_CTRL_ENABLED : NVMET_CTRL_CONNECTED);
	}
}

static void fabrics_property(struct nvmet_req *req, bool set)
{
	struct nvmet_ctrl *c = req->q->ctrl;
	const struct nvmf_cmd f = nvmf_cmd_of(&req->sqe);
	bool size8 = (f.prop.attrib & 0x7) == NVMF_PROP_SIZE_8;
	uint32_t off = le32_get(f.prop.ofst);
	uint64_t v = 0;

	if (req->q->qid != 0)
		return nvmet_req_complete(req, NVMET_SC_INVALID_OPCODE);
	if (set) {
		if (off != NVMF_PROP_CC || size8)
			return nvmet_req_complete(req, NVMET_SC_INVALID_FIELD);
		ctrl_update_cc(c, (uint32_t)le64_get(f.prop.value));
		return nvmet_req_complete(req, NVMET_SC_SUCCESS);
	}
	if (size8 && off == NVMF_PROP_CAP)
		v = ctrl_cap(c);
	else if (!size8 && off == NVMF_PROP_VS)
		v = NVMET_VS;
	else if (!size8 && off == NVMF_PROP_CC)
		v = c->cc;
	else if (!size8 && off == NVMF_PROP_CSTS)
		v = c->csts;
	else
		return nvmet_req_complete(req, NVMET_SC_INVALID_FIELD);
	req->cqe.dw0 = le32_make((uint32_t)v);
	req->cqe.dw1 = le32_make((uint32_t)(v >> 32));
	nvmet_req_complete(req, NVMET_SC_SUCCESS);
}

/* Disconnect: an I/O queue goes away, or on the admin queue the whole association. The
 * transport is told first (it closes after sending this command's response). */
static void fabrics_disconnect(struct nvmet_req *req)
{
	struct nvmet_queue *q = req->q;

	if (le16_get(nvmf_cmd_of(&req->sqe).disconnect.recfmt) != 0)
		return nvmet_req_complete(req, NVMET_SC_CONNECT_FORMAT);
	log_info("ctrl %u: disconnect on queue %u", q->ctrl->cntlid, q->qid);
	if (q->qid == 0) {
		nvmet_ctrl_kill(q->ctrl, 0);
	} else {
		q->state = NVMET_Q_DEAD;
		nvmet_rw_fast_invalidate();
		if (q->ops->queue_kill)
			q->ops->queue_kill(q->tctx, 0);
	}
	nvmet_req_complete(req, NVMET_SC_SUCCESS);
}

void nvmet_exec_fabrics(struct nvmet_req *req)
{
	uint8_t fctype = nvmf_fctype(&req->sqe);

	if (fctype == NVMF_FCTYPE_CONNECT)
		return fabrics_connect(req);
	if (req->q->state != NVMET_Q_LIVE)
		return nvmet_req_complete(req, NVMET_SC_CMD_SEQ_ERROR);
	if (fctype == NVMF_FCTYPE_AUTH_SEND || fctype == NVMF_FCTYPE_AUTH_RECV)
		return nvmet_auth_exec(req);
	if (!nvmet_auth_queue_ok(req->q) && fctype != NVMF_FCTYPE_DISCONNECT)
		return nvmet_req_complete(req, NVMET_SC_AUTH_REQUIRED);
	if (req->data.len != 0)
		return nvmet_req_complete(req, NVMET_SC_SGL_LENGTH_INVALID);
	switch (fctype) {
	case NVMF_FCTYPE_PROPERTY_GET:
		return fabrics_property(req, false);
	case NVMF_FCTYPE_PROPERTY_SET:
		return fabrics_property(req, true);
	case NVMF_FCTYPE_DISCONNECT:
		return fabrics_disconnect(req);
	default:
		return nvmet_req_complete(req, NVMET_SC_INVALID_OPCODE);
	}
}
