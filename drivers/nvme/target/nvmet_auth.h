/*
 * nvmet_auth.h - NVMe in-band authentication, DH-HMAC-CHAP (NVMe Base 2.0 section 8.13,
 * TP 8006), on the target: per-controller keys from the host's configuration and a
 * per-queue transaction state machine driven by AUTH_Send / AUTH_Receive. The core calls
 * the hooks below from Connect, the command dispatch and teardown (nvmet_fabrics.c,
 * nvmet_core.c); messages are parsed and built by nvmet_auth_msg.c, keys and responses
 * computed by nvmet_auth_key.c.
 *
 * A host whose entry in the configuration has a dhchap_key must authenticate every queue
 * (admin and I/O) before any other command runs on it: Connect answers with AUTHREQ.ATR,
 * other commands complete with Authentication Required. A transaction that fails, or that
 * does not complete within NVMET_AUTH_TIMEOUT_MS, takes the queue (the controller, for the
 * admin queue) down.
 */
#ifndef DRIVERS_NVME_TARGET_NVMET_AUTH_H
#define DRIVERS_NVME_TARGET_NVMET_AUTH_H

#include <stdbool.h>
#include <stdint.h>
#include "../../../lib/timer.h"
#include "nvmet_auth_key.h"
#include "nvmet_auth_wire.h"

#define NVMET_AUTH_TIMEOUT_MS 30000u /* Connect to the end of the transaction (re-authentication too) */
#define NVMET_AUTH_FAILED_GRACE_MS 2000u /* after a failure: time for the host to read Failure1 */
#define NVMET_AUTH_DH_X_LEN 64       /* private exponent: 512 bits, over twice the 200-bit strength of ffdhe8192 */

enum nvmet_auth_state {
	NVMET_AUTH_OFF = 0,          /* the host has no key: no authentication on this queue */
	NVMET_AUTH_NEGOTIATE,        /* waiting for AUTH_Negotiate (AUTH_Send) */
	NVMET_AUTH_CHALLENGE,        /* the host is to read the Challenge (AUTH_Receive) */
	NVMET_AUTH_REPLY,            /* waiting for the Reply (AUTH_Send) */
	NVMET_AUTH_SUCCESS1,         /* the host is to read Success1 (AUTH_Receive) */
	NVMET_AUTH_SUCCESS2,         /* bidirectional: waiting for Success2 (AUTH_Send) */
	NVMET_AUTH_FAILURE1,         /* the host is to read Failure1 (AUTH_Receive) */
	NVMET_AUTH_DONE,             /* authenticated; a new Negotiate re-authenticates */
	NVMET_AUTH_FAILED,           /* failed: the queue goes after NVMET_AUTH_FAILED_GRACE_MS */
};

/* Per queue: one transaction at a time. */
struct nvmet_auth_queue {
	enum nvmet_auth_state state;
	bool authenticated;          /* a transaction succeeded (stays during re-authentication) */
	uint16_t tid;                /* T_ID of the transaction */
	uint8_t hashid, dhgid, hl;   /* negotiated */
	uint8_t rce;                 /* Failure1's Reason Code Explanation */
	bool c2_valid;               /* bidirectional: the host sent C2 */
	uint32_t s1, s2;             /* SEQNUMs */
	uint8_t c1[AUTH_HL_MAX], c2[AUTH_HL_MAX];
	uint8_t skh[AUTH_HL_MAX];    /* H(session key) of the DH exchange */
	struct timer timer;          /* transaction deadline, or the grace after a failure */
};

/* Per controller: the host's keys and the controller's DH exponent. */
struct nvmet_auth_ctrl {
	bool required;               /* the host has a dhchap_key */
	uint8_t hashid, dhgid;       /* dhchap_hash, dhchap_dhgroup */
	struct nvmet_auth_secret host_key, ctrl_key; /* ctrl_key.len 0: unidirectional only */
	uint32_t seqnum;             /* the next S1 (never 0) */
	uint8_t dh_gid;              /* group of dh_x/dh_pub, 0 none yet */
	uint8_t dh_x[NVMET_AUTH_DH_X_LEN];
	uint8_t dh_pub[AUTH_DHV_MAX];
};

struct nvmet_req;
struct nvmet_queue;
struct nvmet_ctrl;
struct nvmet_subsys;

/* Admin Connect, before a controller is made: 0 when hostnqn may go on (with or without a
 * key), -EACCES when its configured key is not valid (the Connect is refused). */
int nvmet_auth_host_check(const struct nvmet_subsys *s, const char *hostnqn);
/* Admin Connect: the new controller c takes its host's keys (checked above). */
void nvmet_auth_ctrl_init(struct nvmet_ctrl *c);
/* The controller goes: its keys and exponent are wiped. */
void nvmet_auth_ctrl_release(struct nvmet_ctrl *c);

/* A queue was bound by Connect: start its authentication when its controller requires it.
 * Returns the bits for the Connect response DW0 (AUTHREQ.ATR or 0). */
uint32_t nvmet_auth_queue_start(struct nvmet_queue *q);
/* The queue is unbound: its timer stops and its secrets are wiped. */
void nvmet_auth_queue_stop(struct nvmet_queue *q);
/* May a command other than AUTH_Send/AUTH_Receive run on q? */
bool nvmet_auth_queue_ok(const struct nvmet_queue *q);

/* Run AUTH_Send (fctype 05h) or AUTH_Receive (06h); completes req. */
void nvmet_auth_exec(struct nvmet_req *req);

#endif
