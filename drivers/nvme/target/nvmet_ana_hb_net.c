/*
 * nvmet_ana_hb_net.c - runs the failover heartbeat (nvmet_ana_hb.c) in the appliance: the
 * ana.* configuration keys, a UDP socket on NVMET_ANA_HB_UDP_PORT, a timer every
 * ana.heartbeat_ms that sends this appliance's state for the watched group to the partner
 * and takes the group over when the logic says so; `ana` shows it (nvmet_ana_hb_show()).
 */
#include <errno.h>
#include <stdio.h>
#include "../../../lib/clock.h"
#include "../../../lib/config_key.h"
#include "../../../lib/log.h"
#include "../../../lib/poller.h"
#include "../../../lib/timer.h"
#include "../../../net/net.h"
#include "../../nic/netdev.h"
#include "nvmet.h"
#include "nvmet_ana.h"
#include "nvmet_ana_hb.h"

LOG_MODULE_USE(nvmet);

static struct {
	uint32_t peer;
	unsigned interval_ms, takeover_ms, portid, grpid;
} hb_cfg = { 0, 500, 3000, 1, 1 };

CONFIG_IPV4(ana_peer, "ana.peer", &hb_cfg.peer, "", NULL,
	    "the failover partner appliance: heartbeat on UDP 7420 (empty: no heartbeat)");
CONFIG_UINT(ana_heartbeat_ms, "ana.heartbeat_ms", &hb_cfg.interval_ms, 100, 10000, "500", NULL,
	    "heartbeat period");
CONFIG_UINT(ana_takeover_ms, "ana.takeover_ms", &hb_cfg.takeover_ms, 0, 600000, "3000", NULL,
	    "partner silence after which a standby takes the group over (0: never, operator only)");
CONFIG_UINT(ana_takeover_port, "ana.takeover_port", &hb_cfg.portid, 0, 65535, "1", NULL,
	    "the port whose ANA group the heartbeat watches");
CONFIG_UINT(ana_takeover_group, "ana.takeover_group", &hb_cfg.grpid, 1, NVMET_ANA_GRPMAX, "1", NULL,
	    "the ANA group the heartbeat watches");

/* The heartbeat of this poll loop. */
struct hb_ctx {
	struct nvmet_ana_hb hb;
	struct udp_sock *sock;
	struct timer timer;
	bool started;
	uint64_t send_errors;
};
static struct hb_ctx hb_ctx;

static enum nvmet_ana_state my_state(const struct hb_ctx *h)
{
	enum nvmet_ana_state st;
	return nvmet_ana_port_state(h->hb.portid, h->hb.grpid, &st) ? NVMET_ANA_INACCESSIBLE : st;
}

static void hb_rx(struct udp_sock *s, void *ctx, const struct udp_meta *m, struct netbuf *nb)
{
	struct hb_ctx *h = ctx;
	uint8_t buf[NVMET_ANA_HB_LEN];
	size_t len = netbuf_host_len(nb) + netbuf_frag_len(nb);

	(void)s;
	if (len > sizeof(buf))
		len = sizeof(buf);
	if (netbuf_copy_out(nb, 0, buf, len))
		len = 0;
	nvmet_ana_hb_rx(&h->hb, m->src_addr, buf, len, clock_now_ns(), my_state(h));
}

static void hb_tick(struct timer *t, void *arg)
{
	struct hb_ctx *h = arg;
	uint64_t next = (uint64_t)hb_cfg.interval_ms * NSEC_PER_MSEC;
	uint8_t msg[NVMET_ANA_HB_LEN];
	int rc;

	if (!hb_cfg.peer || !nvmet_running()) {
		timer_arm(&timer_default_queue, t, clock_now_ns() + next);
		return;
	}
	if (!h->started) {
		if ((rc = udp_bind(NVMET_ANA_HB_UDP_PORT, hb_rx, h, &h->sock))) {
			log_err("ana heartbeat: UDP port %u: %d; no heartbeat", NVMET_ANA_HB_UDP_PORT, rc);
			return;
		}
		nvmet_ana_hb_init(&h->hb, hb_cfg.peer, (uint16_t)hb_cfg.portid, hb_cfg.grpid, hb_cfg.takeover_ms);
		h->started = true;
		log_info("ana heartbeat: watching group %u on port %u with the partner at %u.%u.%u.%u every %u ms "
			 "(takeover after %u ms)", hb_cfg.grpid, hb_cfg.portid, (hb_cfg.peer >> 24) & 0xff,
			 (hb_cfg.peer >> 16) & 0xff, (hb_cfg.peer >> 8) & 0xff, hb_cfg.peer & 0xff, hb_cfg.interval_ms,
			 hb_cfg.takeover_ms);
	}
	enum nvmet_ana_state mine = my_state(h);
	nvmet_ana_hb_build(&h->hb, mine, msg);
	if (udp_sendto(h->sock, h->hb.peer, NVMET_ANA_HB_UDP_PORT, msg, sizeof(msg)))
		h->send_errors++;
	if (nvmet_ana_hb_tick(&h->hb, clock_now_ns(), mine) &&
	    (rc = nvmet_ana_set_state(h->hb.portid, h->hb.grpid, NVMET_ANA_OPTIMIZED)))
		log_err("ana heartbeat: takeover of group %u on port %u failed (%d)", h->hb.grpid, h->hb.portid, rc);
	timer_arm(&timer_default_queue, t, clock_now_ns() + next);
}

static int hb_init(void)
{
	timer_init(&hb_ctx.timer, "ana-heartbeat", hb_tick, &hb_ctx);
	timer_arm(&timer_default_queue, &hb_ctx.timer, clock_now_ns() + 500 * NSEC_PER_MSEC);
	return 0;
}
INITCALL(ana_heartbeat, INIT_LEVEL_SERVICE, hb_init);

void nvmet_ana_hb_show(void)
{
	const struct nvmet_ana_hb *hb = &hb_ctx.hb;
	uint32_t p = hb->peer;

	if (!hb_ctx.started) {
		printf("heartbeat: %s\n", hb_cfg.peer ? "starting" : "off (ana.peer not set)");
		return;
	}
	printf("heartbeat: %s, partner %u.%u.%u.%u (group %u there: %s), group %u on port %u, sent %llu (errors %llu) "
	       "received %llu bad %llu foreign %llu, takeovers %llu, both optimized %llu\n",
	       nvmet_ana_hb_state_name(hb->state), (p >> 24) & 0xff, (p >> 16) & 0xff, (p >> 8) & 0xff, p & 0xff,
	       hb->grpid, hb->peer_anas ? nvmet_ana_state_name((enum nvmet_ana_state)hb->peer_anas) : "-", hb->grpid,
	       hb->portid, (unsigned long long)hb->sent, (unsigned long long)hb_ctx.send_errors,
	       (unsigned long long)hb->received, (unsigned long long)hb->bad, (unsigned long long)hb->foreign,
	       (unsigned long long)hb->takeovers, (unsigned long long)hb->both_optimized);
}
