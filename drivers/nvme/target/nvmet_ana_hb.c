/*
 * nvmet_ana_hb.c - the failover heartbeat's logic (see nvmet_ana_hb.h).
 */
#include <errno.h>
#include <string.h>
#include "../../../lib/byteorder.h"
#include "../../../lib/clock.h"
#include "../../../lib/log.h"
#include "nvmet_ana_hb.h"

LOG_MODULE_USE(nvmet);

static bool serving(enum nvmet_ana_state s)
{
	return s == NVMET_ANA_OPTIMIZED || s == NVMET_ANA_NON_OPTIMIZED;
}

int nvmet_ana_hb_parse(const uint8_t *buf, size_t len, struct nvmet_ana_hb_msg *out)
{
	struct nvmet_ana_hb_msg m;

	if (len < NVMET_ANA_HB_LEN)
		return -EINVAL;
	if (be32_load(buf) != NVMET_ANA_HB_MAGIC || buf[4] != NVMET_ANA_HB_VERSION)
		return -EINVAL;
	m.anas = buf[5];
	m.grpid = be32_load(buf + 8);
	m.seq = be32_load(buf + 12);
	if (!(m.anas == NVMET_ANA_OPTIMIZED || m.anas == NVMET_ANA_NON_OPTIMIZED || m.anas == NVMET_ANA_INACCESSIBLE ||
	      m.anas == NVMET_ANA_PERSISTENT_LOSS || m.anas == NVMET_ANA_CHANGE))
		return -EINVAL;
	if (m.grpid == 0 || m.grpid > NVMET_ANA_GRPMAX)
		return -EINVAL;
	*out = m;
	return 0;
}

static void set_state(struct nvmet_ana_hb *hb, enum nvmet_ana_hb_state s)
{
	if (hb->state != s)
		log_debug("ana heartbeat: %s -> %s", nvmet_ana_hb_state_name(hb->state), nvmet_ana_hb_state_name(s));
	hb->state = s;
}

void nvmet_ana_hb_init(struct nvmet_ana_hb *hb, uint32_t peer, uint16_t portid, uint32_t grpid,
		       uint32_t takeover_ms)
{
	memset(hb, 0, sizeof(*hb));
	hb->peer = peer;
	hb->portid = portid;
	hb->grpid = grpid;
	hb->takeover_ms = takeover_ms;
	hb->state = peer ? NVMET_ANA_HB_WAITING : NVMET_ANA_HB_OFF;
}

void nvmet_ana_hb_build(struct nvmet_ana_hb *hb, enum nvmet_ana_state mine, uint8_t *buf)
{
	memset(buf, 0, NVMET_ANA_HB_LEN);
	be32_store(buf, NVMET_ANA_HB_MAGIC);
	buf[4] = NVMET_ANA_HB_VERSION;
	buf[5] = (uint8_t)mine;
	be32_store(buf + 8, hb->grpid);
	be32_store(buf + 12, hb->seq++);
	hb->sent++;
}

void nvmet_ana_hb_rx(struct nvmet_ana_hb *hb, uint32_t src, const uint8_t *buf, size_t len, uint64_t now_ns,
		     enum nvmet_ana_state mine)
{
	struct nvmet_ana_hb_msg m;

	if (hb->state == NVMET_ANA_HB_OFF || src != hb->peer) {
		hb->foreign++;
		return;
	}
	if (nvmet_ana_hb_parse(buf, len, &m)) {
		hb->bad++;
		return;
	}
	if (m.grpid != hb->grpid) {
		hb->foreign++;
		return;
	}
	hb->received++;
	hb->last_heard_ns = now_ns;
	hb->peer_seq = m.seq;
	if (hb->state != NVMET_ANA_HB_WATCHING)
		log_info("ana heartbeat: partner heard (group %u: %s there)", hb->grpid,
			 nvmet_ana_state_name((enum nvmet_ana_state)m.anas));
	if (m.anas == NVMET_ANA_OPTIMIZED && mine == NVMET_ANA_OPTIMIZED && hb->peer_anas != NVMET_ANA_OPTIMIZED) {
		hb->both_optimized++;
		log_warn("ana heartbeat: the partner is optimized for group %u too: both serve the drive "
			 "(set one inaccessible with `ana`)", hb->grpid);
	}
	hb->peer_anas = m.anas;
	set_state(hb, NVMET_ANA_HB_WATCHING);
}

int nvmet_ana_hb_tick(struct nvmet_ana_hb *hb, uint64_t now_ns, enum nvmet_ana_state mine)
{
	uint32_t limit = hb->takeover_ms ? hb->takeover_ms : NVMET_ANA_HB_SILENT_MS;

	if (hb->state != NVMET_ANA_HB_WATCHING)
		return 0;
	if (now_ns - hb->last_heard_ns < (uint64_t)limit * NSEC_PER_MSEC)
		return 0;
	set_state(hb, NVMET_ANA_HB_SILENT);
	hb->peer_anas = 0;
	if (!hb->takeover_ms) {
		log_warn("ana heartbeat: partner silent for %u ms (takeover off: the operator decides)", limit);
		return 0;
	}
	if (serving(mine)) {
		log_warn("ana heartbeat: partner silent for %u ms; this appliance already serves group %u",
			 hb->takeover_ms, hb->grpid);
		return 0;
	}
	hb->takeovers++;
	log_warn("ana heartbeat: partner silent for %u ms: taking over group %u on port %u", hb->takeover_ms,
		 hb->grpid, hb->portid);
	return 1;
}

const char *nvmet_ana_hb_state_name(enum nvmet_ana_hb_state s)
{
	static const char *const names[] = { "off", "waiting", "watching", "silent" };
	return (unsigned)s < sizeof(names) / sizeof(names[0]) ? names[s] : "?";
}
