/*
 * nvmet_referral.c - discovery referrals (see nvmet_referral.h): their discovery log
 * entries and run-time changes with the Discovery Log Page Change notice.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "../../../lib/byteorder.h"
#include "../../../lib/log.h"
#include "nvmet_priv.h"
#include "nvmet_rdma_wire.h"
#include "nvmet_referral.h"

LOG_MODULE_USE(nvmet);

unsigned nvmet_referral_count(const struct nvmet_cfg_port *port)
{
	unsigned n = 0;
	for (unsigned i = 0; i < port->nreferrals && i < NVMET_CFG_MAX_REFERRALS; i++)
		n += port->referrals[i].enable;
	return n;
}

void nvmet_referral_entry(const struct nvmet_cfg_port *port, unsigned idx, uint8_t *e)
{
	const struct nvmet_cfg_referral *r = NULL;
	uint32_t a;

	memset(e, 0, NVMF_DISC_ENTRY_LEN);
	for (unsigned i = 0, n = 0; i < port->nreferrals && i < NVMET_CFG_MAX_REFERRALS && !r; i++)
		if (port->referrals[i].enable && n++ == idx)
			r = &port->referrals[i];
	if (!r)
		return;
	a = r->traddr;
	e[NVMF_DE_TRTYPE] = (uint8_t)r->trtype;
	e[NVMF_DE_ADRFAM] = NVMF_ADRFAM_IPV4;
	e[NVMF_DE_SUBTYPE] = NVMF_SUBTYPE_REFERRAL;
	e[NVMF_DE_TREQ] = r->treq;
	le16_store(e + NVMF_DE_PORTID, r->portid);
	le16_store(e + NVMF_DE_CNTLID, NVMF_CNTLID_DYNAMIC);
	le16_store(e + NVMF_DE_ASQSZ, 32);
	snprintf((char *)e + NVMF_DE_TRSVCID, 32, "%u", r->trsvcid);
	memcpy(e + NVMF_DE_SUBNQN, NVMET_DISCOVERY_NQN, sizeof(NVMET_DISCOVERY_NQN) - 1);
	snprintf((char *)e + NVMF_DE_TRADDR, 256, "%u.%u.%u.%u", (a >> 24) & 0xff, (a >> 16) & 0xff, (a >> 8) & 0xff,
		 a & 0xff);
	if (r->trtype == NVMET_TRTYPE_RDMA)
		nvmet_rdma_tsas(e + NVMF_DE_TSAS); /* as the RDMA ports' own entries */
	/* TCP: TSAS SECTYPE 0, no security */
}

static int port_index(uint16_t portid)
{
	if (!nvmet_tgt.running)
		return -ENOENT;
	for (unsigned i = 0; i < nvmet_tgt.cfg.nports; i++)
		if (nvmet_tgt.cfg.ports[i].portid == portid)
			return (int)i;
	return -ENOENT;
}

/* The port's discovery log changed: a new generation, and a notice to its discovery
 * controllers. */
static void disc_changed(unsigned port)
{
	struct list_node *it;

	nvmet_tgt.genctr++;
	list_for_each(&nvmet_tgt.ctrls, it) {
		struct nvmet_ctrl *c = container_of(it, struct nvmet_ctrl, node);
		if (c->port == port && c->subsys->discovery && c->state != NVMET_CTRL_FAILED)
			nvmet_ctrl_aen_raise(c, &c->aen_disc);
	}
}

int nvmet_referral_add(uint16_t portid, const struct nvmet_cfg_referral *r)
{
	int p = port_index(portid);
	struct nvmet_cfg_port *port;

	if (p < 0)
		return p;
	port = &nvmet_tgt.cfg.ports[p];
	for (unsigned i = 0; i < port->nreferrals; i++)
		if (strcmp(port->referrals[i].name, r->name) == 0)
			return -EEXIST;
	if (port->nreferrals >= NVMET_CFG_MAX_REFERRALS)
		return -ENOSPC;
	port->referrals[port->nreferrals] = *r;
	port->referrals[port->nreferrals].name[sizeof(r->name) - 1] = '\0';
	port->nreferrals++;
	log_info("port %u: referral %s added", portid, r->name);
	if (r->enable)
		disc_changed((unsigned)p);
	return 0;
}

int nvmet_referral_del(uint16_t portid, const char *name)
{
	int p = port_index(portid);
	struct nvmet_cfg_port *port;

	if (p < 0)
		return p;
	port = &nvmet_tgt.cfg.ports[p];
	for (unsigned i = 0; i < port->nreferrals; i++) {
		if (strcmp(port->referrals[i].name, name))
			continue;
		bool was_listed = port->referrals[i].enable;
		memmove(&port->referrals[i], &port->referrals[i + 1],
			(port->nreferrals - i - 1) * sizeof(port->referrals[0]));
		port->nreferrals--;
		log_info("port %u: referral %s removed", portid, name);
		if (was_listed)
			disc_changed((unsigned)p);
		return 0;
	}
	return -ENOENT;
}
