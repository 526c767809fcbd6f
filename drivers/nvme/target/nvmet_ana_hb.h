/*
 * nvmet_ana_hb.h - a heartbeat between the two appliances of a failover pair (README "ANA,
 * failover and referrals"): each sends a small UDP datagram to its partner every
 * ana.heartbeat_ms with its ANA state for the watched group; the standby that stops
 * hearing a partner it has heard takes the group over (sets it optimized on its port)
 * after ana.takeover_ms of silence, as the operator's `ana` command would. A standby that
 * never heard its partner does not take over (it cannot tell a dead partner from a link
 * that never came up); two appliances both optimized for the group are logged and
 * counted (the operator decides: no automatic fencing).
 *
 * This file is the logic (no sockets, no clock: both passed in), unit-tested and fuzzed;
 * nvmet_ana_hb_net.c runs it on a timer with a UDP socket and the configuration keys.
 */
#ifndef DRIVERS_NVME_TARGET_NVMET_ANA_HB_H
#define DRIVERS_NVME_TARGET_NVMET_ANA_HB_H

#include <stddef.h>
#include <stdint.h>
#include "nvmet_config.h"

#define NVMET_ANA_HB_UDP_PORT 7420
/* Wire (network byte order): MAGIC "P2HB" (4), VERSION 1 (1), ANAS of the sender for the
 * group (1), reserved 0 (2), ANAGRPID (4), SEQ (4): 16 bytes. */
#define NVMET_ANA_HB_LEN 16
#define NVMET_ANA_HB_MAGIC 0x50324842u /* "P2HB" */
#define NVMET_ANA_HB_VERSION 1
#define NVMET_ANA_HB_SILENT_MS 3000 /* with takeover off: silence after which the partner is shown silent */

struct nvmet_ana_hb_msg {
	uint8_t anas;            /* enum nvmet_ana_state */
	uint32_t grpid;
	uint32_t seq;
};

enum nvmet_ana_hb_state {
	NVMET_ANA_HB_OFF = 0,    /* no partner configured */
	NVMET_ANA_HB_WAITING,    /* the partner has not been heard yet */
	NVMET_ANA_HB_WATCHING,   /* heard within takeover_ms */
	NVMET_ANA_HB_SILENT,     /* silent past takeover_ms (NVMET_ANA_HB_SILENT_MS when takeover is
				  * off): took over, or did not (serving already, takeover off) */
};

struct nvmet_ana_hb {
	enum nvmet_ana_hb_state state;
	uint32_t peer;           /* partner's IPv4 address (host order), 0 = off */
	uint16_t portid;         /* the watched group on this port */
	uint32_t grpid;
	uint32_t takeover_ms;    /* 0: never take over (operator only) */
	uint64_t last_heard_ns;
	uint8_t peer_anas;       /* the partner's state for the group, as last heard */
	uint32_t seq;            /* next sequence number sent */
	uint32_t peer_seq;
	uint64_t sent, received, bad, foreign, takeovers, both_optimized;
};

/* Parse a received datagram into *out: 0, or -EINVAL (short, wrong magic/version, a state
 * that is not an ANA state, group 0 or above NVMET_ANA_GRPMAX). */
int nvmet_ana_hb_parse(const uint8_t *buf, size_t len, struct nvmet_ana_hb_msg *out);

/* Start watching (state WAITING, or OFF when peer is 0). */
void nvmet_ana_hb_init(struct nvmet_ana_hb *hb, uint32_t peer, uint16_t portid, uint32_t grpid,
		       uint32_t takeover_ms);

/* The next datagram to send (NVMET_ANA_HB_LEN bytes into buf) with this appliance's state. */
void nvmet_ana_hb_build(struct nvmet_ana_hb *hb, enum nvmet_ana_state mine, uint8_t *buf);

/* A datagram from src (IPv4, host order) at now_ns: ignored unless from the partner about
 * the watched group (counted as foreign), counted as bad when it does not parse. */
void nvmet_ana_hb_rx(struct nvmet_ana_hb *hb, uint32_t src, const uint8_t *buf, size_t len, uint64_t now_ns,
		     enum nvmet_ana_state mine);

/* Check the partner's silence at now_ns. Returns 1 when this appliance must take the group
 * over now (it is not optimized or non-optimized, the partner was heard and has been silent
 * for takeover_ms; the caller sets the state), else 0. */
int nvmet_ana_hb_tick(struct nvmet_ana_hb *hb, uint64_t now_ns, enum nvmet_ana_state mine);

const char *nvmet_ana_hb_state_name(enum nvmet_ana_hb_state s);

/* nvmet_ana_hb_net.c: one line on the heartbeat for the `ana` command. */
void nvmet_ana_hb_show(void);

#endif
