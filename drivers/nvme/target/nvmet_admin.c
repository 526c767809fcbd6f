/*
 * nvmet_admin.c - admin commands of the target's controllers: Identify (controller with
 * the fabrics fields, namespace, active namespace list, namespace identification
 * descriptors), Get Log Page (error, SMART / health, changed namespaces, discovery),
 * Get/Set Features (number of queues, keep-alive timer, asynchronous event configuration
 * and the few mandatory ones), Asynchronous Event Request (held until an event) and Keep
 * Alive. A discovery controller accepts only what discovery needs.
 *
 * Data the host reads is built in a 4 KiB scratch page (the loop runs one command at a
 * time) and copied into the request's segments; the transfer length must be what the
 * command asks for, as the host's SGL described it.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "../../../lib/log.h"
#include "nvmet_priv.h"
#include "nvmet_rdma_wire.h"
#include "nvmet_referral.h"

LOG_MODULE_USE(nvmet);

static uint8_t scratch[NVME_ID_LEN];

/* Copy an ASCII string into a space-padded field. */
static void put_ascii(uint8_t *dst, size_t n, const char *src)
{
	size_t l = strlen(src);
	memset(dst, ' ', n);
	memcpy(dst, src, l < n ? l : n);
}

/* Send the first len bytes of scratch (the request must move exactly len bytes). */
static void complete_with_scratch(struct nvmet_req *req, uint32_t len)
{
	if (req->data.len != len)
		return nvmet_req_complete(req, NVMET_SC_SGL_LENGTH_INVALID);
	if (nvmet_copy_to_req(req, 0, scratch, len) < 0)
		return nvmet_req_complete(req, NVMET_SC_DATA_XFER_ERROR);
	req->xfer_len = len;
	nvmet_req_complete(req, NVMET_SC_SUCCESS);
}

static unsigned ilog2(uint32_t v)
{
	unsigned n = 0;
	while (v >>= 1)
		n++;
	return n;
}

static void identify_ctrl(struct nvmet_req *req, struct nvmet_ctrl *c)
{
	const struct nvmet_subsys *s = c->subsys;
	uint8_t *d = scratch;
	uint32_t mdts = nvmet_ctrl_mdts_bytes(c);

	memset(d, 0, NVME_ID_LEN);
	put_ascii(d + NVME_IDC_SN, 20, s->cfg->serial[0] ? s->cfg->serial : "p2pstore");
	put_ascii(d + NVME_IDC_MN, 40, s->cfg->model[0] ? s->cfg->model : "p2pstore");
	put_ascii(d + NVME_IDC_FR, 8, "p2ps0.1");
	d[NVME_IDC_RAB] = 6;
	d[NVME_IDC_MDTS] = (uint8_t)(mdts >= NVME_PAGE_SIZE ? ilog2(mdts / NVME_PAGE_SIZE) : 0);
	le16_store(d + NVME_IDC_CNTLID, c->cntlid);
	le32_store(d + NVME_IDC_VER, NVME_VS(1, 3));
	d[NVME_IDC_ACL] = 3;
	d[NVME_IDC_AERL] = NVMET_AERL - 1;
	d[NVME_IDC_LPA] = 1u << 2;  /* extended data for Get Log Page (offsets, NUMDU) */
	d[NVME_IDC_ELPE] = NVMET_ERR_LOG_ENTRIES - 1;
	le32_store(d + NVME_IDC_CTRATT, NVME_CTRATT_HID128 | NVME_CTRATT_TBKAS);
	le16_store(d + NVME_IDC_KAS, NVMET_KAS_100MS);
	d[NVME_IDC_SQES] = (6 << 4) | 6;
	d[NVME_IDC_CQES] = (4 << 4) | 4;
	le16_store(d + NVME_IDC_MAXCMD, c->sqsize_max);
	le32_store(d + NVME_IDC_SGLS, 1u | c->ops->sgls_extra);
	memcpy(d + NVME_IDC_SUBNQN, s->cfg->nqn, strnlen(s->cfg->nqn, NVMET_NQN_MAX));
	le32_store(d + NVME_IDC_IOCCSZ, (uint32_t)(sizeof(struct nvme_sqe) + c->ops->in_capsule_data) / 16);
	le32_store(d + NVME_IDC_IORCSZ, (uint32_t)sizeof(struct nvme_cqe) / 16);
	le16_store(d + NVME_IDC_ICDOFF, 0);
	d[NVME_IDC_FCATT] = 0;     /* dynamic controller model */
	d[NVME_IDC_MSDBD] = c->ops->msdbd ? c->ops->msdbd : 1;
	le16_store(d + NVME_IDC_OFCS, 1); /* Disconnect supported */
	if (s->discovery) {
		d[NVME_IDC_CNTRLTYPE] = NVME_CNTRLTYPE_DISCOVERY;
		le32_store(d + NVME_IDC_OAES, NVME_OAES_DISC_CHANGE);
	} else {
		d[NVME_IDC_CNTRLTYPE] = NVME_CNTRLTYPE_IO;
		d[NVME_IDC_CMIC] = 1u << 1; /* may have several controllers */
		le32_store(d + NVME_IDC_OAES, NVME_OAES_NS_ATTR);
		nvmet_ana_identify_ctrl(d);
		le32_store(d + NVME_IDC_NN, NVMET_MAX_NSID);
		le16_store(d + NVME_IDC_ONCS, NVME_ONCS_DSM | NVME_ONCS_WRITE_ZEROES);
		/* bit 0: a volatile write cache when a backend has one (Flush and FUA then matter);
		 * bits 2:1 = 10b: Flush with NSID FFFFFFFFh not supported (Invalid Namespace) */
		d[NVME_IDC_VWC] = nvmet_subsys_vwc(s) ? (1u | (2u << 1)) : 0;
	}
	complete_with_scratch(req, NVME_ID_LEN);
}

/* An NGUID for a namespace without one in the configuration: stable across boots,
 * derived from the subsystem NQN and the NSID (FNV-1a, spread over 16 bytes). */
static void make_nguid(const struct nvmet_subsys *s, uint32_t nsid, uint8_t out[16])
{
	uint64_t h1 = 0xcbf29ce484222325ull, h2;
	for (const char *p = s->cfg->nqn; *p; p++)
		h1 = (h1 ^ (uint8_t)*p) * 0x100000001b3ull;
	h2 = h1;
	for (int i = 0; i < 4; i++)
		h2 = (h2 ^ ((nsid >> (8 * i)) & 0xff)) * 0x100000001b3ull;
	le64_store(out, h1);
	le64_store(out + 8, h2);
}

static void ns_nguid(const struct nvmet_subsys *s, const struct nvmet_ns *ns, uint8_t out[16])
{
	if (ns->bdev.has_nguid)
		memcpy(out, ns->bdev.nguid, 16);
	else
		make_nguid(s, ns->nsid, out);
}

static void identify_ns(struct nvmet_req *req, struct nvmet_ctrl *c, uint32_t nsid)
{
	struct nvmet_ns *ns;
	uint8_t *d = scratch;

	if (nsid == 0 || nsid > NVMET_MAX_NSID)
		return nvmet_req_complete(req, NVMET_SC_INVALID_NS);
	memset(d, 0, NVME_ID_LEN);
	if ((ns = nvmet_ns_find(c->subsys, nsid))) { /* an inactive NSID reads as zeroes */
		le64_store(d + NVME_IDNS_NSZE, ns->bdev.nblocks);
		le64_store(d + NVME_IDNS_NCAP, ns->bdev.nblocks);
		le64_store(d + NVME_IDNS_NUSE, ns->bdev.nblocks);
		d[NVME_IDNS_NLBAF] = 0;
		d[NVME_IDNS_FLBAS] = 0;
		d[NVME_IDNS_NMIC] = 1;  /* may be attached to several controllers */
		ns_nguid(c->subsys, ns, d + NVME_IDNS_NGUID);
		le32_store(d + NVME_IDNS_ANAGRPID, nvmet_ana_ns_grpid(ns));
		le32_store(d + NVME_IDNS_LBAF, (uint32_t)ns->bdev.lba_shift << 16);
	}
	complete_with_scratch(req, NVME_ID_LEN);
}

static void identify_active_list(struct nvmet_req *req, struct nvmet_ctrl *c, uint32_t after)
{
	uint32_t ids[NVMET_MAX_NS];
	unsigned n = 0;

	if (after >= 0xfffffffeu)
		return nvmet_req_complete(req, NVMET_SC_INVALID_NS);
	memset(scratch, 0, NVME_ID_LEN);
	for (unsigned i = 0; i < c->subsys->nns; i++)
		if (nvmet_ns_active(&c->subsys->ns[i]) && c->subsys->ns[i].nsid > after)
			ids[n++] = c->subsys->ns[i].nsid;
	for (unsigned i = 1; i < n; i++) /* ascending order */
		for (unsigned k = i; k > 0 && ids[k - 1] > ids[k]; k--) {
			uint32_t t = ids[k];
			ids[k] = ids[k - 1];
			ids[k - 1] = t;
		}
	for (unsigned i = 0; i < n; i++)
		le32_store(scratch + 4 * i, ids[i]);
	complete_with_scratch(req, NVME_ID_LEN);
}

static void identify_desclist(struct nvmet_req *req, struct nvmet_ctrl *c, uint32_t nsid)
{
	struct nvmet_ns *ns = nvmet_ns_find(c->subsys, nsid);
	uint8_t *d = scratch;

	if (!ns)
		return nvmet_req_complete(req, NVMET_SC_INVALID_NS);
	memset(d, 0, NVME_ID_LEN);
	d[0] = NVME_NIDT_NGUID;
	d[1] = 16;
	ns_nguid(c->subsys, ns, d + 4);
	d += 20;
	if (ns->bdev.has_uuid) {
		d[0] = NVME_NIDT_UUID;
		d[1] = 16;
		memcpy(d + 4, ns->bdev.uuid, 16);
	}
	complete_with_scratch(req, NVME_ID_LEN);
}

static void exec_identify(struct nvmet_req *req, struct nvmet_ctrl *c)
{
	uint8_t cns = (uint8_t)le32_get(req->sqe.cdw10);

	if (c->subsys->discovery && cns != NVME_ID_CNS_CTRL)
		return nvmet_req_complete(req, NVMET_SC_INVALID_FIELD);
	switch (cns) {
	case NVME_ID_CNS_CTRL:
		return identify_ctrl(req, c);
	case NVME_ID_CNS_NS:
		return identify_ns(req, c, le32_get(req->sqe.nsid));
	case NVME_ID_CNS_NS_ACTIVE_LIST:
		return identify_active_list(req, c, le32_get(req->sqe.nsid));
	case NVME_ID_CNS_NS_DESC_LIST:
		return identify_desclist(req, c, le32_get(req->sqe.nsid));
	default:
		return nvmet_req_complete(req, NVMET_SC_INVALID_FIELD);
	}
}

/* --- Get Log Page --- */

static void ip4_text(uint32_t a, char *buf, size_t n)
{
	snprintf(buf, n, "%u.%u.%u.%u", (a >> 24) & 0xff, (a >> 16) & 0xff, (a >> 8) & 0xff, a & 0xff);
}

/* Discovery log record i visible to this host, built into e; returns false past the
 * last record. Only the port the discovery controller was connected on is listed (as
 * Linux nvmet does): a host learns the subsystems reachable where it asked, not the
 * addresses of every other port; then the port's referrals (nvmet_referral.c). */
static bool disc_entry(const struct nvmet_ctrl *c, uint64_t want, uint8_t *e, uint64_t *count)
{
	const struct nvmet_cfg_port *port = &nvmet_tgt.cfg.ports[c->port];
	uint64_t n = 0;

	for (unsigned k = 0; k < port->nsubsys; k++) {
		const struct nvmet_subsys *s = &nvmet_tgt.subsys[port->subsys[k]];
		if (!nvmet_host_allowed(s, c->hostnqn))
			continue;
		if (e && n == want) {
			memset(e, 0, NVMF_DISC_ENTRY_LEN);
			e[NVMF_DE_TRTYPE] = (uint8_t)port->trtype;
			e[NVMF_DE_ADRFAM] = NVMF_ADRFAM_IPV4;
			e[NVMF_DE_SUBTYPE] = NVMF_SUBTYPE_NVME;
			/* secure channel "not specified", as Linux nvmet: libnvme reads "not required"
			 * as TLS on offer and asks Linux 6.1 for a tls option it does not have */
			e[NVMF_DE_TREQ] = NVMF_TREQ_NOT_SPECIFIED;
			le16_store(e + NVMF_DE_PORTID, port->portid);
			le16_store(e + NVMF_DE_CNTLID, NVMF_CNTLID_DYNAMIC);
			le16_store(e + NVMF_DE_ASQSZ, 32);
			snprintf((char *)e + NVMF_DE_TRSVCID, 32, "%u", port->trsvcid);
			memcpy(e + NVMF_DE_SUBNQN, s->cfg->nqn, strnlen(s->cfg->nqn, NVMET_NQN_MAX));
			/* a port on any address: the address this host reached (as Linux nvmet) */
			ip4_text(port->traddr ? port->traddr : c->local_addr, (char *)e + NVMF_DE_TRADDR, 256);
			if (port->trtype == NVMET_TRTYPE_RDMA)
				nvmet_rdma_tsas(e + NVMF_DE_TSAS); /* QP type, provider, CM */
			return true; /* TCP's TSAS: SECTYPE 0 (none) */
		}
		n++;
	}
	uint64_t nref = nvmet_referral_count(port);
	if (e && want >= n && want - n < nref) {
		nvmet_referral_entry(port, (unsigned)(want - n), e);
		return true;
	}
	if (count)
		*count = n + nref;
	return false;
}

/* Copy [off, off + len) of the discovery log page, built one 1024-byte record at a time. */
static void log_discovery(struct nvmet_req *req, struct nvmet_ctrl *c, uint64_t off, uint32_t len, bool rae)
{
	uint64_t numrec = 0;
	uint32_t done = 0;

	disc_entry(c, 0, NULL, &numrec);
	while (done < len) {
		uint64_t pos = off + done, rec = pos / NVMF_DISC_ENTRY_LEN; /* header is record 0 */
		uint32_t in = (uint32_t)(pos % NVMF_DISC_ENTRY_LEN);
		uint32_t n = NVMF_DISC_ENTRY_LEN - in < len - done ? NVMF_DISC_ENTRY_LEN - in : len - done;
		memset(scratch, 0, NVMF_DISC_ENTRY_LEN);
		if (rec == 0) {
			le64_store(scratch + NVMF_DISC_OFF_GENCTR, nvmet_tgt.genctr);
			le64_store(scratch + NVMF_DISC_OFF_NUMREC, numrec);
			le16_store(scratch + NVMF_DISC_OFF_RECFMT, 0);
		} else if (rec - 1 < numrec) {
			disc_entry(c, rec - 1, scratch, NULL);
		}
		if (nvmet_copy_to_req(req, done, scratch + in, n) < 0)
			return nvmet_req_complete(req, NVMET_SC_DATA_XFER_ERROR);
		done += n;
	}
	req->xfer_len = len;
	if (!rae) { /* read: a later change is reported again */
		c->aen_disc.masked = false;
		nvmet_ctrl_aen_check(c);
	}
	nvmet_req_complete(req, NVMET_SC_SUCCESS);
}

/* The Error Information log page: NVMET_ERR_LOG_ENTRIES entries of 64 bytes, newest
 * first; entries for errors that did not happen (yet) are zero (Error Count 0). */
static void log_errors(const struct nvmet_ctrl *c, uint8_t *page)
{
	for (unsigned i = 0; i < NVMET_ERR_LOG_ENTRIES && i < c->err_count; i++) {
		uint64_t n = c->err_count - i;
		const struct nvmet_err_entry *e = &c->errlog[(n - 1) % NVMET_ERR_LOG_ENTRIES];
		uint8_t *d = page + i * NVME_LOG_ERROR_ENTRY_LEN;
		le64_store(d + 0, e->count);      /* Error Count */
		le16_store(d + 8, e->sqid);       /* Submission Queue ID */
		le16_store(d + 10, e->cid);       /* Command ID */
		le16_store(d + 12, e->status);    /* Status Field (bit 0: phase tag, 0) */
		le16_store(d + 14, 0xffff);       /* Parameter Error Location: not reported */
		le64_store(d + 16, e->lba);       /* LBA */
		le32_store(d + 24, e->nsid);      /* Namespace */
		d[29] = (uint8_t)c->ops->trtype;  /* Transport Type */
	}
}

/* 16-byte little-endian counter (SMART data units, commands). */
static void put128(uint8_t *p, uint64_t v)
{
	memset(p, 0, 16);
	le64_store(p, v);
}

static void exec_get_log_page(struct nvmet_req *req, struct nvmet_ctrl *c)
{
	uint8_t lid = (uint8_t)le32_get(req->sqe.cdw10);
	bool rae = (le32_get(req->sqe.cdw10) & NVME_LOG_RAE) != 0;
	uint64_t numd = ((uint64_t)(le32_get(req->sqe.cdw11) & 0xffff) << 16 | (le32_get(req->sqe.cdw10) >> 16)) + 1;
	uint64_t off = (uint64_t)le32_get(req->sqe.cdw13) << 32 | le32_get(req->sqe.cdw12);
	uint64_t len64 = numd * 4;
	uint32_t len;
	const struct nvmet_subsys *s = c->subsys;

	if (len64 > NVMET_MAX_XFER || (off & 3))
		return nvmet_req_complete(req, NVMET_SC_INVALID_FIELD);
	len = (uint32_t)len64;
	if (req->data.len != len)
		return nvmet_req_complete(req, NVMET_SC_SGL_LENGTH_INVALID);
	if (s->discovery && lid != NVME_LOG_DISCOVERY && lid != NVME_LOG_ERROR)
		return nvmet_req_complete(req, NVMET_SC_INVALID_FIELD);

	switch (lid) {
	case NVME_LOG_DISCOVERY:
		if (!s->discovery)
			return nvmet_req_complete(req, NVMET_SC_INVALID_FIELD);
		return log_discovery(req, c, off, len, rae);
	case NVME_LOG_ERROR:
	case NVME_LOG_SMART:
	case NVME_LOG_FW_SLOT:
	case NVME_LOG_CHANGED_NS:
	case NVME_LOG_ANA:
		break;
	default:
		return nvmet_req_complete(req, NVMET_SC_INVALID_LOG_PAGE);
	}
	/* the fixed-size pages: built whole in scratch, then the asked-for window */
	memset(scratch, 0, NVME_ID_LEN);
	uint32_t page = NVME_LOG_SMART_LEN;
	if (lid == NVME_LOG_ERROR) {
		page = NVMET_ERR_LOG_ENTRIES * NVME_LOG_ERROR_ENTRY_LEN;
		log_errors(c, scratch);
	} else if (lid == NVME_LOG_SMART) {
		le16_store(scratch + 1, 273 + 35);   /* Composite Temperature, kelvin */
		scratch[3] = 100;                     /* Available Spare */
		scratch[4] = 10;                      /* Available Spare Threshold */
		put128(scratch + 32, (s->read_bytes + 511999) / 512000);  /* Data Units Read */
		put128(scratch + 48, (s->write_bytes + 511999) / 512000); /* Data Units Written */
		put128(scratch + 64, s->read_cmds);   /* Host Read Commands */
		put128(scratch + 80, s->write_cmds);  /* Host Write Commands */
		put128(scratch + 112, 1);             /* Power Cycles */
		put128(scratch + 176, c->err_count);  /* Number of Error Information Log Entries */
	} else if (lid == NVME_LOG_FW_SLOT) {
		scratch[0] = 1;                       /* Active Firmware Info: slot 1 */
		memcpy(scratch + 8, "p2ps0.1 ", 8);
	} else if (lid == NVME_LOG_ANA) {
		page = nvmet_ana_log(c, (uint8_t)((le32_get(req->sqe.cdw10) >> NVME_LOG_LSP_SHIFT) & 0xf), rae, scratch,
				     sizeof(scratch));
	} else {
		page = NVME_LOG_CHANGED_NS_LEN;
		if (c->changed_overflow) {
			le32_store(scratch, 0xffffffffu);
		} else {
			for (unsigned i = 0; i < c->nchanged; i++)
				le32_store(scratch + 4 * i, c->changed_ns[i]);
		}
		if (!rae) {
			c->nchanged = 0;
			c->changed_overflow = false;
			c->aen_ns_masked = false;
		}
	}
	for (uint32_t done = 0; done < len;) {
		static const uint8_t zeroes[256];
		uint32_t n;
		if (off + done < page) {
			n = (uint32_t)(page - (off + done));
			n = n < len - done ? n : len - done;
			if (nvmet_copy_to_req(req, done, scratch + off + done, n) < 0)
				return nvmet_req_complete(req, NVMET_SC_DATA_XFER_ERROR);
		} else {
			n = len - done < sizeof(zeroes) ? len - done : (uint32_t)sizeof(zeroes);
			if (nvmet_copy_to_req(req, done, zeroes, n) < 0)
				return nvmet_req_complete(req, NVMET_SC_DATA_XFER_ERROR);
		}
		done += n;
	}
	req->xfer_len = len;
	if ((lid == NVME_LOG_CHANGED_NS || lid == NVME_LOG_ANA) && !rae)
		nvmet_ctrl_aen_check(c);
	nvmet_req_complete(req, NVMET_SC_SUCCESS);
}

/* --- features --- */

/* Number of Queues: NSQA and NCQA (0's based) of the I/O queues granted. */
static uint32_t num_queues_result(const struct nvmet_ctrl *c)
{
	uint32_t n = c->nr_io_queues - 1u;
	return n | (n << 16);
}

static void exec_set_features(struct nvmet_req *req, struct nvmet_ctrl *c)
{
	uint8_t fid = (uint8_t)le32_get(req->sqe.cdw10);
	uint32_t v = le32_get(req->sqe.cdw11);

	if (le32_get(req->sqe.cdw10) & (1u << 31))
		return nvmet_req_complete(req, NVMET_SC_FEAT_NOT_SAVEABLE);
	if (req->data.len)
		return nvmet_req_complete(req, NVMET_SC_SGL_LENGTH_INVALID);
	switch (fid) {
	case NVME_FEAT_NUM_QUEUES: {
		uint32_t nsqr = v & 0xffff, ncqr = v >> 16, n;
		if (c->subsys->discovery || nsqr == 0xffff || ncqr == 0xffff)
			return nvmet_req_complete(req, NVMET_SC_INVALID_FIELD);
		/* NVMe Base 2.0 5.27.1.5: only before any I/O queue exists */
		if (c->nqueues > 1)
			return nvmet_req_complete(req, NVMET_SC_CMD_SEQ_ERROR);
		/* granted: what was asked for (the fewer of SQs and CQs: fabrics pairs them),
		 * at most NVMET_MAX_IO_QUEUES; I/O queue Connects are checked against it */
		n = (nsqr < ncqr ? nsqr : ncqr) + 1;
		c->nr_io_queues = (uint16_t)(n < NVMET_MAX_IO_QUEUES ? n : NVMET_MAX_IO_QUEUES);
		req->cqe.dw0 = le32_make(num_queues_result(c));
		break;
	}
	case NVME_FEAT_KATO:
		/* a discovery controller keeps a keep-alive (as at Connect): never unbounded */
		c->kato_ms = v || !c->subsys->discovery ? v : NVMET_DISC_KATO_MS;
		nvmet_ctrl_keep_alive(c);
		break;
	case NVME_FEAT_VOLATILE_WC:
		/* The drives' caches serve every host: one host may not turn them off for the
		 * others, and FUA and Flush keep its data durable anyway (README "Durability"). */
		return nvmet_req_complete(req, c->subsys->discovery || !nvmet_subsys_vwc(c->subsys)
						       ? NVMET_SC_INVALID_FIELD
						       : NVMET_SC_FEAT_NOT_CHANGEABLE);
	case NVME_FEAT_ASYNC_EVENT:
		/* only the notices in OAES are generated; other bits are kept off */
		c->aec = v & (c->subsys->discovery ? NVME_AEC_DISC_CHANGE : NVME_AEC_NS_ATTR | NVME_AEC_ANA_CHANGE);
		req->cqe.dw0 = le32_make(c->aec);
		nvmet_ctrl_aen_check(c);
		break;
	default:
		return nvmet_req_complete(req, NVMET_SC_INVALID_FIELD);
	}
	nvmet_req_complete(req, NVMET_SC_SUCCESS);
}

static void exec_get_features(struct nvmet_req *req, struct nvmet_ctrl *c)
{
	uint8_t fid = (uint8_t)le32_get(req->sqe.cdw10);

	if (fid == NVME_FEAT_HOST_ID) {
		if (!(le32_get(req->sqe.cdw11) & 1)) /* EXHID: only the 128-bit identifier exists */
			return nvmet_req_complete(req, NVMET_SC_INVALID_FIELD);
		memcpy(scratch, c->hostid, 16);
		return complete_with_scratch(req, 16);
	}
	if (req->data.len)
		return nvmet_req_complete(req, NVMET_SC_SGL_LENGTH_INVALID);
	switch (fid) {
	case NVME_FEAT_NUM_QUEUES:
		if (c->subsys->discovery)
			return nvmet_req_complete(req, NVMET_SC_INVALID_FIELD);
		req->cqe.dw0 = le32_make(num_queues_result(c));
		break;
	case NVME_FEAT_KATO:
		req->cqe.dw0 = le32_make(c->kato_ms);
		break;
	case NVME_FEAT_ASYNC_EVENT:
		req->cqe.dw0 = le32_make(c->aec);
		break;
	case NVME_FEAT_ARBITRATION:
	case NVME_FEAT_POWER_MGMT:
	case NVME_FEAT_IRQ_COALESCE:
		req->cqe.dw0 = le32_make(0);
		break;
	case NVME_FEAT_VOLATILE_WC:
		/* WCE: the backends' caches are on whenever one exists (they are not switched) */
		if (c->subsys->discovery || !nvmet_subsys_vwc(c->subsys))
			return nvmet_req_complete(req, NVMET_SC_INVALID_FIELD);
		req->cqe.dw0 = le32_make(1);
		break;
	default:
		return nvmet_req_complete(req, NVMET_SC_INVALID_FIELD);
	}
	nvmet_req_complete(req, NVMET_SC_SUCCESS);
}

/* --- asynchronous events --- */

/* Report one notice through a held AER when it is pending, enabled and not masked. */
static bool aen_fire(struct nvmet_ctrl *c, bool *pending, bool *masked, uint32_t aec, uint8_t info, uint8_t lid)
{
	struct nvmet_req *r;

	if (!*pending || *masked || !(c->aec & aec) || !c->aers)
		return false;
	r = c->aers;
	c->aers = r->next_aer;
	r->next_aer = NULL;
	c->naers--;
	*pending = false;
	*masked = true;
	nvmet_tgt.st.aens++;
	r->cqe.dw0 = le32_make(NVME_AER_RESULT(NVME_AER_TYPE_NOTICE, info, lid));
	log_debug("ctrl %u: notice %#x (log page %#x)", c->cntlid, info, lid);
	nvmet_req_complete(r, NVMET_SC_SUCCESS);
	return true;
}

void nvmet_ctrl_aen_check(struct nvmet_ctrl *c)
{
	aen_fire(c, &c->aen_ns_pending, &c->aen_ns_masked, NVME_AEC_NS_ATTR, NVME_AER_NOTICE_NS_CHANGED,
		 NVME_LOG_CHANGED_NS);
	aen_fire(c, &c->aen_ana.pending, &c->aen_ana.masked, NVME_AEC_ANA_CHANGE, NVME_AER_NOTICE_ANA, NVME_LOG_ANA);
	aen_fire(c, &c->aen_disc.pending, &c->aen_disc.masked, NVME_AEC_DISC_CHANGE, NVME_AER_NOTICE_DISC_CHANGED,
		 NVME_LOG_DISCOVERY);
}

void nvmet_ctrl_aen_raise(struct nvmet_ctrl *c, struct nvmet_aen *e)
{
	e->pending = true;
	nvmet_ctrl_aen_check(c);
}

static void exec_aer(struct nvmet_req *req, struct nvmet_ctrl *c)
{
	if (req->data.len)
		return nvmet_req_complete(req, NVMET_SC_SGL_LENGTH_INVALID);
	if (c->naers >= NVMET_AERL)
		return nvmet_req_complete(req, NVMET_SC_AER_LIMIT);
	req->state = NVMET_REQ_HELD;
	req->next_aer = c->aers;
	c->aers = req;
	c->naers++;
	nvmet_ctrl_aen_check(c);
}

void nvmet_exec_admin(struct nvmet_req *req)
{
	struct nvmet_ctrl *c = req->q->ctrl;
	uint8_t opc = req->sqe.opc;

	if (c->state != NVMET_CTRL_ENABLED)
		return nvmet_req_complete(req, NVMET_SC_CMD_SEQ_ERROR);
	switch (opc) {
	case NVME_ADM_IDENTIFY:
		return exec_identify(req, c);
	case NVME_ADM_GET_LOG_PAGE:
		return exec_get_log_page(req, c);
	case NVME_ADM_SET_FEATURES:
		return exec_set_features(req, c);
	case NVME_ADM_GET_FEATURES:
		return exec_get_features(req, c);
	case NVME_ADM_AER:
		return exec_aer(req, c);
	case NVME_ADM_KEEP_ALIVE:
		if (req->data.len)
			return nvmet_req_complete(req, NVMET_SC_SGL_LENGTH_INVALID);
		nvmet_ctrl_keep_alive(c);
		return nvmet_req_complete(req, NVMET_SC_SUCCESS);
	default:
		return nvmet_req_complete(req, NVMET_SC_INVALID_OPCODE);
	}
}
