/*
 * nvmet_auth.c - the DH-HMAC-CHAP transaction on each queue (see nvmet_auth.h).
 *
 * One transaction, controller side (NVMe Base 2.0 8.13.5):
 *   AUTH_Send    AUTH_Negotiate        hash and DH group chosen       -> CHALLENGE
 *   AUTH_Receive DH-HMAC-CHAP_Challenge C1, S1, the controller's DH value -> REPLY
 *   AUTH_Send    DH-HMAC-CHAP_Reply    the host's response checked    -> SUCCESS1
 *   AUTH_Receive DH-HMAC-CHAP_Success1 (the controller's response)    -> DONE or SUCCESS2
 *   AUTH_Send    DH-HMAC-CHAP_Success2 (bidirectional only)           -> DONE
 * A failure found on an AUTH_Send is told on the next AUTH_Receive (AUTH_Failure1); an
 * AUTH_Failure2 from the host ends the transaction. Either way the queue is failed and goes.
 */
#include <errno.h>
#include <string.h>
#include "../../../arch/entropy.h"
#include "../../../lib/byteorder.h"
#include "../../../lib/clock.h"
#include "../../../lib/crypto.h"
#include "../../../lib/log.h"
#include "nvmet_auth.h"
#include "nvmet_auth_msg.h"
#include "nvmet_priv.h"

LOG_MODULE_USE(nvmet);

static const char *const state_names[] = {
	[NVMET_AUTH_OFF] = "off",           [NVMET_AUTH_NEGOTIATE] = "negotiate", [NVMET_AUTH_CHALLENGE] = "challenge",
	[NVMET_AUTH_REPLY] = "reply",       [NVMET_AUTH_SUCCESS1] = "success1",   [NVMET_AUTH_SUCCESS2] = "success2",
	[NVMET_AUTH_FAILURE1] = "failure1", [NVMET_AUTH_DONE] = "done",           [NVMET_AUTH_FAILED] = "failed",
};

static void set_state(struct nvmet_queue *q, enum nvmet_auth_state s)
{
	log_debug("ctrl %u qid %u: auth %s -> %s", q->ctrl ? q->ctrl->cntlid : 0, q->qid, state_names[q->auth.state],
		  state_names[s]);
	q->auth.state = s;
}

static void arm(struct nvmet_queue *q, uint32_t ms)
{
	timer_arm(&timer_default_queue, &q->auth.timer, clock_now_ns() + (uint64_t)ms * 1000000u);
}

/* The configuration of hostnqn (its index in cfg.hosts), or -1. */
static int host_index(const char *hostnqn)
{
	for (unsigned i = 0; i < nvmet_tgt.cfg.nhosts; i++)
		if (strcmp(nvmet_tgt.cfg.hosts[i], hostnqn) == 0)
			return (int)i;
	return -1;
}

/* Keys of hostnqn for subsystem s into a: 0 (a->required says whether there are any), or
 * -EACCES with why set. */
static int keys_load(struct nvmet_auth_ctrl *a, const struct nvmet_subsys *s, const char *hostnqn, const char **why)
{
	int h = s->discovery ? -1 : host_index(hostnqn); /* discovery is never authenticated (as Linux) */
	const struct nvmet_cfg_host_auth *ha;

	memset(a, 0, offsetof(struct nvmet_auth_ctrl, dh_x));
	if (h < 0 || !nvmet_tgt.cfg.host_auth[h].dhchap_key[0])
		return 0;
	ha = &nvmet_tgt.cfg.host_auth[h];
	a->required = true;
	a->hashid = ha->dhchap_hash ? ha->dhchap_hash : AUTH_HASH_SHA256;
	a->dhgid = ha->dhchap_dhgroup;
	if (nvmet_auth_secret_parse(ha->dhchap_key, &a->host_key)) {
		*why = "its dhchap_key is not a valid DHHC-1 secret (format or CRC)";
		return -EACCES;
	}
	if (ha->dhchap_ctrl_key[0] && nvmet_auth_secret_parse(ha->dhchap_ctrl_key, &a->ctrl_key)) {
		crypto_wipe(&a->host_key, sizeof(a->host_key));
		*why = "its dhchap_ctrl_key is not a valid DHHC-1 secret (format or CRC)";
		return -EACCES;
	}
	return 0;
}

int nvmet_auth_host_check(const struct nvmet_subsys *s, const char *hostnqn)
{
	struct nvmet_auth_ctrl a;
	const char *why = NULL;
	int rc = keys_load(&a, s, hostnqn, &why);

	if (rc) /* the Connect's refusal is the one warning (nvmet_fabrics.c) */
		log_debug("host %s: %s", hostnqn, why);
	crypto_wipe(&a, offsetof(struct nvmet_auth_ctrl, dh_x));
	return rc;
}

void nvmet_auth_ctrl_init(struct nvmet_ctrl *c)
{
	const char *why = NULL;
	uint8_t seed[4];

	if (keys_load(&c->auth, c->subsys, c->hostnqn, &why))
		c->auth.required = true; /* cannot happen (checked before): no key can match */
	arch_entropy(seed, sizeof(seed));
	c->auth.seqnum = le32_load(seed) ? le32_load(seed) : 1;
}

void nvmet_auth_ctrl_release(struct nvmet_ctrl *c)
{
	crypto_wipe(&c->auth, sizeof(c->auth));
}

static void wipe_transaction(struct nvmet_auth_queue *a)
{
	crypto_wipe(a->c1, sizeof(a->c1));
	crypto_wipe(a->c2, sizeof(a->c2));
	crypto_wipe(a->skh, sizeof(a->skh));
	a->c2_valid = false;
}

/* The transaction did not finish in time, or the grace after a failure is over. */
static void auth_expired(struct timer *t, void *arg)
{
	struct nvmet_queue *q = arg;
	struct nvmet_ctrl *c = q->ctrl;
	(void)t;

	if (!c || q->state != NVMET_Q_LIVE)
		return;
	if (q->auth.state != NVMET_AUTH_FAILED)
		log_warn("ctrl %u qid %u (host %s): authentication not completed within %u ms (%s)", c->cntlid, q->qid,
			 c->hostnqn, NVMET_AUTH_TIMEOUT_MS, state_names[q->auth.state]);
	set_state(q, NVMET_AUTH_FAILED);
	q->auth.authenticated = false;
	wipe_transaction(&q->auth);
	if (q->qid == 0) {
		nvmet_ctrl_kill(c, -EACCES);
	} else {
		q->state = NVMET_Q_DEAD;
		nvmet_rw_fast_invalidate();
		if (q->ops->queue_kill)
			q->ops->queue_kill(q->tctx, -EACCES);
	}
}

uint32_t nvmet_auth_queue_start(struct nvmet_queue *q)
{
	struct nvmet_auth_queue *a = &q->auth;

	memset(a, 0, sizeof(*a));
	timer_init(&a->timer, "nvmet-auth", auth_expired, q);
	if (!q->ctrl->auth.required)
		return 0;
	set_state(q, NVMET_AUTH_NEGOTIATE);
	arm(q, NVMET_AUTH_TIMEOUT_MS);
	return NVMF_CONNECT_AUTHREQ_ATR;
}

void nvmet_auth_queue_stop(struct nvmet_queue *q)
{
	if (q->auth.state != NVMET_AUTH_OFF)
		timer_cancel(&timer_default_queue, &q->auth.timer);
	wipe_transaction(&q->auth);
	q->auth.state = NVMET_AUTH_OFF;
	q->auth.authenticated = false;
}

bool nvmet_auth_queue_ok(const struct nvmet_queue *q)
{
	return q->auth.state == NVMET_AUTH_OFF || q->auth.authenticated;
}

/* The transaction fails: the host reads Failure1 with explanation rce on its next
 * AUTH_Receive. Logged once, here. */
static void fail(struct nvmet_queue *q, uint8_t rce, const char *why)
{
	struct nvmet_ctrl *c = q->ctrl;
	log_warn("ctrl %u qid %u: host %s not authenticated: %s", c->cntlid, q->qid, c->hostnqn, why);
	nvmet_tgt.st.auth_failures++;
	q->auth.rce = rce;
	q->auth.authenticated = false;
	wipe_transaction(&q->auth);
	set_state(q, NVMET_AUTH_FAILURE1);
}

static bool listed(const uint8_t *ids, unsigned n, uint8_t id)
{
	for (unsigned i = 0; i < n; i++)
		if (ids[i] == id)
			return true;
	return false;
}

static void on_negotiate(struct nvmet_queue *q, const uint8_t *b, size_t len)
{
	struct nvmet_auth_ctrl *ca = &q->ctrl->auth;
	struct nvmet_auth_negotiate n;
	int rce = nvmet_auth_parse_negotiate(b, len, &n);

	if (rce)
		return fail(q, (uint8_t)rce, "malformed AUTH_Negotiate");
	q->auth.tid = n.tid;
	if (n.sc_c != 0)
		return fail(q, AUTH_RCE_CONCAT_MISMATCH, "secure channel concatenation requested (not offered)");
	/* the configured hash and group, or none: no silent downgrade to what the host prefers */
	if (!listed(n.hash, n.nhash, ca->hashid))
		return fail(q, AUTH_RCE_HASH_UNUSABLE, "the host does not offer the configured dhchap_hash");
	if (!listed(n.dh, n.ndh, ca->dhgid))
		return fail(q, AUTH_RCE_DHGROUP_UNUSABLE, "the host does not offer the configured dhchap_dhgroup");
	wipe_transaction(&q->auth);
	q->auth.hashid = ca->hashid;
	q->auth.dhgid = ca->dhgid;
	q->auth.hl = (uint8_t)nvmet_auth_hash_len(ca->hashid);
	set_state(q, NVMET_AUTH_CHALLENGE);
	arm(q, NVMET_AUTH_TIMEOUT_MS);
}

static void on_reply(struct nvmet_queue *q, const uint8_t *b, size_t len)
{
	struct nvmet_ctrl *c = q->ctrl;
	struct nvmet_auth_queue *a = &q->auth;
	struct nvmet_auth_reply r;
	uint8_t key[NVMET_AUTH_SECRET_MAX], aug[AUTH_HL_MAX], expect[AUTH_HL_MAX];
	const uint8_t *chal = a->c1;
	size_t keylen = 0;
	int dhlen = nvmet_auth_dh_len(a->dhgid);
	int rce = nvmet_auth_parse_reply(b, len, &r);

	if (rce)
		return fail(q, (uint8_t)rce, "malformed DH-HMAC-CHAP_Reply");
	if (r.tid != a->tid)
		return fail(q, AUTH_RCE_INCORRECT_PAYLOAD, "Reply of another transaction (T_ID)");
	if (r.hl != a->hl)
		return fail(q, AUTH_RCE_INCORRECT_PAYLOAD, "Reply's hash length is not the negotiated one");
	if (r.dhvlen != (unsigned)dhlen)
		return fail(q, AUTH_RCE_INCORRECT_PAYLOAD, "Reply's DH value length does not fit the group");
	if (dhlen > 0) {
		if (nvmet_auth_dh_session(a->dhgid, a->hashid, c->auth.dh_x, sizeof(c->auth.dh_x), r.dhv, r.dhvlen,
					  a->skh))
			return fail(q, AUTH_RCE_DHGROUP_UNUSABLE, "the host's DH value is not valid in the group");
		if (nvmet_auth_augment(a->hashid, a->skh, a->c1, aug))
			return fail(q, AUTH_RCE_FAILED, "augmented challenge");
		chal = aug;
	}
	if (nvmet_auth_secret_transform(&c->auth.host_key, c->hostnqn, key, &keylen) ||
	    nvmet_auth_response(a->hashid, key, keylen, chal, a->s1, a->tid, "HostHost", c->hostnqn, c->subsys->cfg->nqn,
				expect)) {
		crypto_wipe(key, sizeof(key));
		return fail(q, AUTH_RCE_FAILED, "host response not computable");
	}
	crypto_wipe(key, sizeof(key));
	crypto_wipe(aug, sizeof(aug));
	if (!crypto_equal(expect, r.rval, a->hl))
		return fail(q, AUTH_RCE_FAILED, "wrong response (not the configured dhchap_key)");
	/* bidirectional: C2 with a non-zero S2 asks the controller to prove its key */
	if (r.cvalid && r.seqnum != 0) {
		if (!c->auth.ctrl_key.len)
			return fail(q, AUTH_RCE_FAILED, "the host asks for controller authentication, no dhchap_ctrl_key");
		if (crypto_equal(r.c2, a->c1, a->hl))
			return fail(q, AUTH_RCE_FAILED, "C2 repeats C1 (reflected challenge)");
		memcpy(a->c2, r.c2, a->hl);
		a->s2 = r.seqnum;
		a->c2_valid = true;
	}
	set_state(q, NVMET_AUTH_SUCCESS1);
}

/* AUTH_Send: one message from the host. */
static void auth_send(struct nvmet_queue *q, const uint8_t *b, size_t len)
{
	struct nvmet_auth_queue *a = &q->auth;
	struct nvmet_auth_hdr h;
	struct nvmet_auth_failure f;
	uint16_t tid;

	if (nvmet_auth_parse_hdr(b, len, &h))
		return fail(q, AUTH_RCE_INCORRECT_PAYLOAD, "message shorter than its header");
	if (h.type == AUTH_TYPE_COMMON && h.id == AUTH_ID_FAILURE2) {
		if (!nvmet_auth_parse_failure(b, len, &f))
			log_warn("ctrl %u qid %u: host %s ended authentication (Failure2, reason %u/%u)", q->ctrl->cntlid,
				 q->qid, q->ctrl->hostnqn, f.rc, f.rce);
		nvmet_tgt.st.auth_failures++;
		a->authenticated = false;
		wipe_transaction(a);
		set_state(q, NVMET_AUTH_FAILED);
		arm(q, NVMET_AUTH_FAILED_GRACE_MS);
		return;
	}
	if (h.type == AUTH_TYPE_COMMON && h.id == AUTH_ID_NEGOTIATE &&
	    (a->state == NVMET_AUTH_NEGOTIATE || a->state == NVMET_AUTH_DONE))
		return on_negotiate(q, b, len);
	if (h.type == AUTH_TYPE_DHCHAP && h.id == AUTH_ID_REPLY && a->state == NVMET_AUTH_REPLY)
		return on_reply(q, b, len);
	if (h.type == AUTH_TYPE_DHCHAP && h.id == AUTH_ID_SUCCESS2 && a->state == NVMET_AUTH_SUCCESS2) {
		if (nvmet_auth_parse_success2(b, len, &tid) || tid != a->tid)
			return fail(q, AUTH_RCE_INCORRECT_PAYLOAD, "malformed Success2 or another transaction's");
		a->authenticated = true;
		nvmet_tgt.st.auth_ok++;
		wipe_transaction(a);
		set_state(q, NVMET_AUTH_DONE);
		timer_cancel(&timer_default_queue, &a->timer);
		log_info("ctrl %u qid %u: host %s authenticated, controller authenticated to it", q->ctrl->cntlid,
			 q->qid, q->ctrl->hostnqn);
		return;
	}
	fail(q, AUTH_RCE_INCORRECT_PROTOCOL, "message out of sequence");
}

/* The Challenge: C1 and S1 fresh, the controller's DH value for the group. */
static int build_challenge(struct nvmet_queue *q, uint8_t *b, size_t cap)
{
	struct nvmet_auth_ctrl *ca = &q->ctrl->auth;
	struct nvmet_auth_queue *a = &q->auth;
	int dhlen = nvmet_auth_dh_len(a->dhgid);

	if (dhlen > 0 && ca->dh_gid != a->dhgid) {
		arch_entropy(ca->dh_x, sizeof(ca->dh_x));
		if (nvmet_auth_dh_public(a->dhgid, ca->dh_x, sizeof(ca->dh_x), ca->dh_pub))
			return -EINVAL;
		ca->dh_gid = a->dhgid;
	}
	arch_entropy(a->c1, a->hl);
	a->s1 = ca->seqnum;
	ca->seqnum = ca->seqnum == UINT32_MAX ? 1 : ca->seqnum + 1;
	return nvmet_auth_build_challenge(b, cap, a->tid, a->hashid, a->hl, a->c1, a->s1, a->dhgid,
					  dhlen > 0 ? ca->dh_pub : NULL, (uint16_t)(dhlen > 0 ? dhlen : 0));
}

/* Success1, with the controller's response when the host sent C2. */
static int build_success1(struct nvmet_queue *q, uint8_t *b, size_t cap)
{
	struct nvmet_ctrl *c = q->ctrl;
	struct nvmet_auth_queue *a = &q->auth;
	uint8_t key[NVMET_AUTH_SECRET_MAX], aug[AUTH_HL_MAX], rval[AUTH_HL_MAX];
	const uint8_t *chal = a->c2;
	size_t keylen = 0;
	int rc;

	if (!a->c2_valid)
		return nvmet_auth_build_success1(b, cap, a->tid, a->hl, NULL);
	if (a->dhgid != AUTH_DHGROUP_NULL) {
		if ((rc = nvmet_auth_augment(a->hashid, a->skh, a->c2, aug)))
			return rc;
		chal = aug;
	}
	rc = nvmet_auth_secret_transform(&c->auth.ctrl_key, c->subsys->cfg->nqn, key, &keylen);
	if (!rc)
		rc = nvmet_auth_response(a->hashid, key, keylen, chal, a->s2, a->tid, "Controller", c->subsys->cfg->nqn,
					 c->hostnqn, rval);
	crypto_wipe(key, sizeof(key));
	crypto_wipe(aug, sizeof(aug));
	return rc ? rc : nvmet_auth_build_success1(b, cap, a->tid, a->hl, rval);
}

/* AUTH_Receive: the message the state calls for, into b. Returns its length or -errno
 * (-ENOSPC: AL too small, nothing consumed). */
static int auth_receive(struct nvmet_queue *q, uint8_t *b, size_t cap)
{
	struct nvmet_auth_queue *a = &q->auth;
	int n, dhlen;

	switch (a->state) {
	case NVMET_AUTH_CHALLENGE:
		dhlen = nvmet_auth_dh_len(a->dhgid);
		if ((size_t)AUTH_CHAL_HDR_LEN + a->hl + (size_t)(dhlen > 0 ? dhlen : 0) > cap)
			return -ENOSPC;
		if ((n = build_challenge(q, b, cap)) < 0) {
			fail(q, AUTH_RCE_FAILED, "challenge not computable");
			break;
		}
		set_state(q, NVMET_AUTH_REPLY);
		return n;
	case NVMET_AUTH_SUCCESS1:
		if ((size_t)AUTH_S1_HDR_LEN + (a->c2_valid ? a->hl : 0u) > cap)
			return -ENOSPC;
		if ((n = build_success1(q, b, cap)) < 0) {
			fail(q, AUTH_RCE_FAILED, "controller response not computable");
			break;
		}
		if (a->c2_valid) {
			set_state(q, NVMET_AUTH_SUCCESS2);
		} else {
			a->authenticated = true;
			nvmet_tgt.st.auth_ok++;
			wipe_transaction(a);
			set_state(q, NVMET_AUTH_DONE);
			timer_cancel(&timer_default_queue, &a->timer);
			log_info("ctrl %u qid %u: host %s authenticated", q->ctrl->cntlid, q->qid, q->ctrl->hostnqn);
		}
		return n;
	case NVMET_AUTH_FAILURE1:
		break;
	default:
		fail(q, AUTH_RCE_INCORRECT_PROTOCOL, "AUTH_Receive out of sequence");
		break;
	}
	/* Failure1: the transaction is over, the queue goes after a grace period */
	if (cap < AUTH_FAIL_LEN)
		return -ENOSPC;
	n = nvmet_auth_build_failure1(b, cap, a->tid, a->rce);
	set_state(q, NVMET_AUTH_FAILED);
	arm(q, NVMET_AUTH_FAILED_GRACE_MS);
	return n;
}

void nvmet_auth_exec(struct nvmet_req *req)
{
	struct nvmet_queue *q = req->q;
	const uint8_t *sqe = (const uint8_t *)&req->sqe;
	bool send = sqe[4] == NVMF_FCTYPE_AUTH_SEND;
	uint32_t len = le32_load(sqe + NVMF_AUTH_OFF_TL); /* TL or AL */
	uint8_t buf[AUTH_MSG_MAX];
	int n;

	if (sqe[NVMF_AUTH_OFF_SECP] != NVMF_AUTH_SECP_DHCHAP || sqe[NVMF_AUTH_OFF_SPSP0] != NVMF_AUTH_SPSP ||
	    sqe[NVMF_AUTH_OFF_SPSP1] != NVMF_AUTH_SPSP || len == 0 || (send && len > sizeof(buf)))
		return nvmet_req_complete(req, NVMET_SC_INVALID_FIELD);
	if (req->data.len != len)
		return nvmet_req_complete(req, NVMET_SC_SGL_LENGTH_INVALID);
	if (q->auth.state == NVMET_AUTH_OFF || q->auth.state == NVMET_AUTH_FAILED)
		return nvmet_req_complete(req, NVMET_SC_CMD_SEQ_ERROR);
	if (send) {
		if (nvmet_copy_from_req(req, 0, buf, len) < 0)
			return nvmet_req_complete(req, NVMET_SC_DATA_XFER_ERROR);
		auth_send(q, buf, len);
		crypto_wipe(buf, len);
		return nvmet_req_complete(req, NVMET_SC_SUCCESS);
	}
	n = auth_receive(q, buf, len < sizeof(buf) ? len : sizeof(buf));
	if (n == -ENOSPC)
		return nvmet_req_complete(req, NVMET_SC_INVALID_FIELD);
	/* the message, then zeroes up to AL: nothing uninitialised goes to the host */
	memset(buf + n, 0, sizeof(buf) - (size_t)n);
	for (uint32_t off = 0; off < len; off += sizeof(buf)) {
		uint32_t k = len - off < sizeof(buf) ? len - off : (uint32_t)sizeof(buf);
		if (nvmet_copy_to_req(req, off, buf, k) < 0)
			return nvmet_req_complete(req, NVMET_SC_DATA_XFER_ERROR);
		if (off == 0)
			memset(buf, 0, (size_t)n);
	}
	req->xfer_len = len;
	nvmet_req_complete(req, NVMET_SC_SUCCESS);
}
