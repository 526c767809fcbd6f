/*
 * nvmet_ana.c - Asymmetric Namespace Access (see nvmet_ana.h): per-port group states,
 * the ANA log page, the path statuses of I/O, ANA change notices, the Identify fields.
 */
#include <errno.h>
#include <string.h>
#include "../../../lib/byteorder.h"
#include "../../../lib/log.h"
#include "nvmet_priv.h"

LOG_MODULE_USE(nvmet);

void nvmet_ana_init(struct nvmet_target *t)
{
	memset(&t->ana, 0, sizeof(t->ana));
	for (unsigned p = 0; p < t->cfg.nports && p < NVMET_CFG_MAX_PORTS; p++) {
		struct nvmet_ana_port *ap = &t->ana.port[p];
		const struct nvmet_cfg_port *cp = &t->cfg.ports[p];
		/* as Linux nvmet: group 1 optimized, a group the port does not list inaccessible */
		for (unsigned g = 1; g <= NVMET_ANA_GRPMAX; g++)
			ap->state[g] = g == 1 ? NVMET_ANA_OPTIMIZED : NVMET_ANA_INACCESSIBLE;
		for (unsigned k = 0; k < cp->nana; k++)
			if (cp->ana[k].grpid >= 1 && cp->ana[k].grpid <= NVMET_ANA_GRPMAX)
				ap->state[cp->ana[k].grpid] = (uint8_t)cp->ana[k].state;
	}
	nvmet_rw_fast_invalidate();
}

enum nvmet_ana_state nvmet_ana_state(unsigned port, uint32_t grpid)
{
	if (port >= NVMET_CFG_MAX_PORTS || grpid == 0 || grpid > NVMET_ANA_GRPMAX)
		return NVMET_ANA_INACCESSIBLE;
	return (enum nvmet_ana_state)nvmet_tgt.ana.port[port].state[grpid];
}

int nvmet_ana_port_state(uint16_t portid, uint32_t grpid, enum nvmet_ana_state *out)
{
	if (!nvmet_tgt.running || grpid == 0 || grpid > NVMET_ANA_GRPMAX)
		return -ENOENT;
	for (unsigned p = 0; p < nvmet_tgt.cfg.nports; p++)
		if (nvmet_tgt.cfg.ports[p].portid == portid) {
			*out = nvmet_ana_state(p, grpid);
			return 0;
		}
	return -ENOENT;
}

static bool state_valid(enum nvmet_ana_state st)
{
	return st == NVMET_ANA_OPTIMIZED || st == NVMET_ANA_NON_OPTIMIZED || st == NVMET_ANA_INACCESSIBLE ||
	       st == NVMET_ANA_PERSISTENT_LOSS || st == NVMET_ANA_CHANGE;
}

int nvmet_ana_set_state(uint16_t portid, uint32_t grpid, enum nvmet_ana_state st)
{
	struct nvmet_target *t = &nvmet_tgt;
	struct list_node *it;
	unsigned port;

	if (!t->running)
		return -ENOENT;
	if (grpid == 0 || grpid > NVMET_ANA_GRPMAX || !state_valid(st))
		return -EINVAL;
	for (port = 0; port < t->cfg.nports && t->cfg.ports[port].portid != portid; port++)
		;
	if (port == t->cfg.nports)
		return -ENOENT;
	struct nvmet_ana_port *ap = &t->ana.port[port];
	if (ap->state[grpid] == st)
		return 0;
	log_info("port %u ANA group %u: %s -> %s", portid, grpid,
		 nvmet_ana_state_name((enum nvmet_ana_state)ap->state[grpid]), nvmet_ana_state_name(st));
	ap->state[grpid] = (uint8_t)st;
	nvmet_rw_fast_invalidate();
	ap->chgcnt++;
	ap->grp_chgcnt[grpid] = ap->chgcnt;
	t->ana.changes++;
	/* every I/O controller on the port: its ANA log page changed */
	list_for_each(&t->ctrls, it) {
		struct nvmet_ctrl *c = container_of(it, struct nvmet_ctrl, node);
		if (c->port == port && !c->subsys->discovery && c->state != NVMET_CTRL_FAILED)
			nvmet_ctrl_aen_raise(c, &c->aen_ana);
	}
	return 0;
}

uint32_t nvmet_ana_ns_grpid(const struct nvmet_ns *ns)
{
	return ns->cfg && ns->cfg->anagrpid ? ns->cfg->anagrpid : 1;
}

uint16_t nvmet_ana_io_status(const struct nvmet_ctrl *c, const struct nvmet_ns *ns)
{
	switch (nvmet_ana_state(c->port, nvmet_ana_ns_grpid(ns))) {
	case NVMET_ANA_OPTIMIZED:
	case NVMET_ANA_NON_OPTIMIZED:
		return NVMET_SC_SUCCESS;
	case NVMET_ANA_PERSISTENT_LOSS:
		return NVMET_SC_ANA_PERSISTENT_LOSS;
	case NVMET_ANA_CHANGE:
		return NVMET_SC_ANA_TRANSITION;
	case NVMET_ANA_INACCESSIBLE:
	default:
		return NVMET_SC_ANA_INACCESSIBLE;
	}
}

uint32_t nvmet_ana_log(struct nvmet_ctrl *c, uint8_t lsp, bool rae, uint8_t *page, uint32_t cap)
{
	const struct nvmet_subsys *s = c->subsys;
	const struct nvmet_ana_port *ap = &nvmet_tgt.ana.port[c->port < NVMET_CFG_MAX_PORTS ? c->port : 0];
	bool rgo = (lsp & NVME_ANA_LSP_RGO) != 0;
	uint32_t off = NVME_ANA_HDR_LEN;
	uint16_t ngrps = 0;

	if (cap > NVMET_ANA_LOG_MAX)
		cap = NVMET_ANA_LOG_MAX;
	memset(page, 0, cap);
	/* a descriptor for each group holding an active namespace, in ANAGRPID order;
	 * its NSIDs ascending (RGO: the descriptors alone, NNSIDS 0) */
	for (uint32_t g = 1; g <= NVMET_ANA_GRPMAX; g++) {
		uint32_t nnsids = 0, last = 0;
		bool any = false;
		for (unsigned i = 0; i < s->nns; i++)
			any |= s->ns[i].enabled && nvmet_ana_ns_grpid(&s->ns[i]) == g;
		if (!any)
			continue;
		if (NVME_ANA_DESC_LEN > cap - off)
			break;
		uint8_t *d = page + off;
		off += NVME_ANA_DESC_LEN;
		for (;;) { /* next larger NSID of the group: the list stays sorted without a buffer */
			uint32_t next = 0;
			for (unsigned i = 0; i < s->nns; i++) {
				const struct nvmet_ns *ns = &s->ns[i];
				if (ns->enabled && nvmet_ana_ns_grpid(ns) == g && ns->nsid > last && (!next || ns->nsid < next))
					next = ns->nsid;
			}
			if (!next || rgo || 4 > cap - off)
				break;
			le32_store(page + off, next);
			off += 4;
			nnsids++;
			last = next;
		}
		le32_store(d + NVME_ANA_DESC_GRPID, g);
		le32_store(d + NVME_ANA_DESC_NNSIDS, nnsids);
		le64_store(d + NVME_ANA_DESC_CHGCNT, ap->grp_chgcnt[g]);
		d[NVME_ANA_DESC_ANAS] = ap->state[g] & 0xf;
		ngrps++;
	}
	le64_store(page + NVME_ANA_OFF_CHGCNT, ap->chgcnt);
	le16_store(page + NVME_ANA_OFF_NGRPS, ngrps);
	if (!rae)
		c->aen_ana.masked = false;
	return off;
}

void nvmet_ana_identify_ctrl(uint8_t *id)
{
	id[NVME_IDC_CMIC] |= NVME_CMIC_ANA;
	id[NVME_IDC_ANATT] = NVMET_ANATT_S;
	id[NVME_IDC_ANACAP] = NVME_ANACAP_OPTIMIZED | NVME_ANACAP_NON_OPTIMIZED | NVME_ANACAP_INACCESSIBLE |
			      NVME_ANACAP_PERSISTENT_LOSS | NVME_ANACAP_CHANGE | NVME_ANACAP_GRPID_STATIC;
	le32_store(id + NVME_IDC_ANAGRPMAX, NVMET_ANA_GRPMAX);
	le32_store(id + NVME_IDC_NANAGRPID, NVMET_ANA_GRPMAX);
	/* Linux sizes its ANA log buffer with MNAN (and refuses ANA when MNAN is 0 or > NN) */
	le32_store(id + NVME_IDC_MNAN, NVMET_MAX_NSID);
	le32_store(id + NVME_IDC_OAES, le32_load(id + NVME_IDC_OAES) | NVME_OAES_ANA_CHANGE);
}
