/*
 * fake_nvmet_transport.c - see fake_nvmet_transport.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fake_nvmet_transport.h"
#include "lib/clock.h"
#include "lib/timer.h"

static void ft_kill(void *tctx, int reason)
{
	struct ft_conn *c = tctx;
	c->killed = true;
	c->kill_reason = reason;
	c->kills++;
}

const struct nvmet_transport_ops ft_ops = {
	.name = "fake",
	.trtype = NVMET_TRTYPE_TCP,
	.max_queue_size = 128,
	.in_capsule_data = 8192,
	.msdbd = 1,
	.sgls_extra = NVME_SGLS_OFFSET,
	.max_xfer = 0,
	.queue_kill = ft_kill,
};

void ft_open(struct ft_conn *c, unsigned port)
{
	memset(c, 0, sizeof(*c));
	if (nvmet_queue_create(port, &ft_ops, c, &c->q)) {
		fprintf(stderr, "ft_open: no queue\n");
		abort();
	}
}

void ft_close(struct ft_conn *c)
{
	nvmet_queue_destroy(c->q);
	c->q = NULL;
	/* the poll loop after the close: due timers run (a controller without queues is
	 * freed from there, not inside nvmet_queue_destroy) */
	timer_queue_run(&timer_default_queue, clock_now_ns());
}

static void ft_done(struct nvmet_req *req, void *arg)
{
	struct ft_cmd *cmd = arg;
	(void)req;
	cmd->completions++;
	cmd->busy = false;
	if (cmd->conn && cmd->conn->close_in_done && cmd->conn->q) {
		struct nvmet_queue *q = cmd->conn->q;
		cmd->conn->q = NULL;
		nvmet_queue_destroy(q);
	}
}

enum ft_hint ft_hint;
const struct nvmet_bdev *ft_hint_bdev;
bool ft_summed;

struct ft_cmd *ft_submit(struct ft_conn *c, unsigned slot, const struct nvme_sqe *sqe, const void *data, uint32_t len)
{
	struct ft_cmd *cmd = &c->cmds[slot % FT_MAX_CMDS];
	struct nvmet_data d = { .sg = cmd->sg, .len = len, .summed = ft_summed };

	if (ft_hint == FT_HINT_SHAPE) {
		struct nvmet_req_shape sh;
		nvmet_req_shape(c->q, sqe, &sh);
		d.bdev = sh.bdev;
	} else if (ft_hint == FT_HINT_FORCED) {
		d.bdev = ft_hint_bdev;
	}

	if (len > FT_BUF)
		abort();
	memset(cmd->buf, 0, sizeof(cmd->buf));
	if (data)
		memcpy(cmd->buf, data, len);
	/* split: 1/3 + 1/3 + rest, skipping empty pieces */
	uint32_t off = 0;
	for (unsigned i = 0; i < FT_SEGS && off < len; i++) {
		uint32_t n = i == FT_SEGS - 1 ? len - off : (len / FT_SEGS ? len / FT_SEGS : len - off);
		cmd->sg[d.nsg].addr = dma_addr_host(cmd->buf + off);
		cmd->sg[d.nsg].len = n;
		d.nsg++;
		off += n;
	}
	cmd->completions = 0;
	cmd->busy = true;
	cmd->conn = c;
	nvmet_exec(c->q, &cmd->req, sqe, &d, ft_done, cmd);
	return cmd;
}

uint16_t ft_exec(struct ft_conn *c, const struct nvme_sqe *sqe, const void *wdata, uint32_t len, void *rbuf,
		 struct nvme_cqe *cqe_out)
{
	unsigned slot = FT_MAX_CMDS - 1;
	while (slot > 0 && c->cmds[slot].busy) /* a held AER keeps its slot */
		slot--;
	if (c->cmds[slot].busy)
		abort();
	struct ft_cmd *cmd = ft_submit(c, slot, sqe, wdata, len);
	if (cmd->completions != 1) {
		fprintf(stderr, "ft_exec: %u completions\n", cmd->completions);
		abort();
	}
	if (rbuf)
		memcpy(rbuf, cmd->buf, cmd->req.xfer_len);
	if (cqe_out)
		*cqe_out = cmd->req.cqe;
	return (uint16_t)((le16_get(cmd->req.cqe.status) >> 1) & 0x7ff);
}

struct nvme_sqe ft_sqe(uint8_t opc, uint16_t cid, uint32_t nsid, uint32_t len)
{
	struct nvme_sqe s;
	memset(&s, 0, sizeof(s));
	s.opc = opc;
	s.flags = NVME_SQE_PSDT_SGL;
	s.cid = le16_make(cid);
	s.nsid = le32_make(nsid);
	s.dptr.sgl1.len = le32_make(len);
	s.dptr.sgl1.id = NVMF_SGL_ID_OFFSET; /* in-capsule data */
	return s;
}

struct nvme_sqe ft_connect_sqe(uint16_t qid, uint16_t sqsize, uint32_t kato)
{
	struct nvme_sqe s = ft_sqe(NVMF_OPC_FABRICS, 1, 0, 1024);
	struct nvmf_cmd f = nvmf_cmd_of(&s);
	f.fctype = NVMF_FCTYPE_CONNECT;
	f.connect.qid = le16_make(qid);
	f.connect.sqsize = le16_make(sqsize);
	f.connect.kato = le32_make(kato);
	return nvmf_cmd_sqe(&f);
}

void ft_connect_data(uint8_t cd[1024], const char *hostnqn, const char *subnqn, uint16_t cntlid)
{
	memset(cd, 0, 1024);
	for (int i = 0; i < 16; i++)
		cd[i] = (uint8_t)(0xa0 + i);
	le16_store(cd + NVMF_CD_OFF_CNTLID, cntlid);
	snprintf((char *)cd + NVMF_CD_OFF_SUBNQN, 256, "%s", subnqn);
	snprintf((char *)cd + NVMF_CD_OFF_HOSTNQN, 256, "%s", hostnqn);
}

struct nvme_sqe ft_prop_sqe(bool set, bool size8, uint32_t off, uint64_t value)
{
	struct nvme_sqe s = ft_sqe(NVMF_OPC_FABRICS, 2, 0, 0);
	struct nvmf_cmd f = nvmf_cmd_of(&s);
	f.fctype = set ? NVMF_FCTYPE_PROPERTY_SET : NVMF_FCTYPE_PROPERTY_GET;
	f.prop.attrib = size8 ? NVMF_PROP_SIZE_8 : 0;
	f.prop.ofst = le32_make(off);
	f.prop.value = le64_make(value);
	return nvmf_cmd_sqe(&f);
}

int ft_connect_admin(struct ft_conn *c, const char *hostnqn, const char *subnqn, uint32_t kato)
{
	uint8_t cd[1024];
	struct nvme_sqe s = ft_connect_sqe(0, 31, kato);
	struct nvme_cqe cqe;
	ft_connect_data(cd, hostnqn, subnqn, 0xffff);
	uint16_t st = ft_exec(c, &s, cd, sizeof(cd), NULL, &cqe);
	return st ? -(int)st : (int)(le32_get(cqe.dw0) & 0xffff);
}

int ft_enable(struct ft_conn *c)
{
	uint32_t cc = NVME_CC_EN | (6u << NVME_CC_IOSQES_SHIFT) | (4u << NVME_CC_IOCQES_SHIFT);
	struct nvme_sqe s = ft_prop_sqe(true, false, NVMF_PROP_CC, cc);
	return -(int)ft_exec(c, &s, NULL, 0, NULL, NULL);
}

uint16_t ft_connect_io(struct ft_conn *c, uint16_t qid, uint16_t cntlid, const char *hostnqn, const char *subnqn)
{
	uint8_t cd[1024];
	struct nvme_sqe s = ft_connect_sqe(qid, 63, 0);
	ft_connect_data(cd, hostnqn, subnqn, cntlid);
	return ft_exec(c, &s, cd, sizeof(cd), NULL, NULL);
}

int ft_ram_open(void *ctx, unsigned si, const struct nvmet_cfg_ns *ns, struct nvmet_bdev *out)
{
	(void)ctx;
	(void)si;
	(void)ns;
	return nvmet_bdev_ram_open(out, 4096, 9);
}

int ft_target_start(const char *json, struct nvmet_config *cfg, nvmet_bdev_open_fn open_fn, char *err, size_t cap)
{
	int rc;

	timer_queue_init(&timer_default_queue);
	if ((rc = nvmet_config_parse(json, strlen(json), cfg, err, cap, NULL, NULL)))
		return rc;
	return nvmet_init(cfg, open_fn, NULL);
}
