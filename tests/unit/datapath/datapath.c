/*
 * datapath.c - the executable data path of datapath.h: the harness (clock, poll loop,
 * the drive's poller) and the host (a minimal TCP peer speaking NVMe/TCP through
 * tests/unit/drivers/nvme/target/nvme_tcp_host.h).
 */
#include "datapath.h"
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "drivers/nvme/target/nvmet.h"
#include "drivers/nvme/target/nvmet_tcp.h"
#include "drivers/nvme/target/nvmet_tcp_pdu.h"
#include "drivers/nvme/target/nvmet_wire.h"
#include "lib/clock.h"
#include "lib/poller.h"
#include "lib/timer.h"
#include "mm/dma.h"
#include "mm/pool.h"
#include "net/net.h"
#include "net/net_internal.h"
#include "net/tcp/tcp.h"
#include "net/wire.h"
#include "tests/unit/drivers/nvme/target/fake_nvmet_transport.h"
#include "tests/unit/drivers/nvme/target/nvme_tcp_host.h"
#include "tests/unit/unit_support.h"

#define DP_SPORT_ADMIN 40000
#define DP_SPORT_IO 40001
#define DP_SPORT_LIVE_ADMIN 40002
#define DP_SPORT_LIVE_IO 40003
#define DP_HOST_WINDOW 65535
#define DP_RUN_MAX_PASSES 100000

/* --- the harness --- */

static uint64_t dp_drive_period_ns, dp_drive_next_ns;

/* The drive's poller (what drivers/nvme/nvme_pci.c's is on the appliance): completions
 * of the registered controllers' queues; with a drive period, at most once per period of
 * the clock (a slow drive: the target holds write data meanwhile). */
static int dp_nvme_poll(unsigned budget)
{
	int work = 0;
	if (dp_drive_period_ns) {
		if (clock_now_ns() < dp_drive_next_ns)
			return 0;
		dp_drive_next_ns = clock_now_ns() + dp_drive_period_ns;
	}
	for (unsigned i = 0; i < nvme_count(); i++) {
		struct nvme_ctrl *c = nvme_at(i);
		if (c->state != NVME_CTRL_LIVE)
			continue;
		for (unsigned q = 0; q < c->nio; q++) {
			int n = c->io[q].outstanding ? nvme_qpair_poll(&c->io[q], budget) : 0;
			work += n > 0 ? n : 0;
		}
	}
	return work;
}
POLLER(dp_nvme, dp_nvme_poll);

static int fail(struct dp *d, int rc, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(d->why, sizeof(d->why), fmt, ap);
	va_end(ap);
	return rc;
}

unsigned dp_pass(struct dp *d)
{
	const struct poller *p, *end = NULL;
	unsigned progress = 0;

	/* A drive that answers later: what the last pass rang has run by now. */
	if (d->drive.io_later)
		fake_nvme_run(&d->drive);
	/* The host's frames injected since the last pass are the batch the e1000e's poller
	 * (first in the image's order) hands over and ends before the other pollers run. */
	fake_netdev_rx_end(&d->nic);
	/* In the image's order: the pollers come in link order, sorted by source path, so the
	 * drivers' (the drive, the NVMe/TCP target) run before net/tcp's tcp_tx, which ends
	 * the receive batch (tcp_rx_batch_end) after the target took what it brought. This
	 * binary links net/ first: tcp_tx is run last by name. */
	LINKER_SET_FOREACH(pollers, p) {
		if (!strcmp(p->name, "tcp_tx")) {
			end = p;
			continue;
		}
		int rc = p->poll(64);
		if (rc > 0)
			progress += (unsigned)rc;
	}
	if (end) {
		int rc = end->poll(64);
		if (rc > 0)
			progress += (unsigned)rc;
	}
	progress += timer_queue_run(&timer_default_queue, clock_now_ns());
	d->passes++;
	return progress;
}

/* Where the write data the NIC received may be read by the drive: in the harness the
 * fake NIC's buffers (provider 1) are plain memory the fake drive reads, so the P2P rules
 * allow it. Read data goes through DRAM, unless dp_opts.cmb_reads: then it lives in the
 * drive's CMB (provider DP_CMB_PROVIDER), which the drive writes and the NIC gathers. */
static int dp_mem_reach(const struct nvmet_bdev *b, uint16_t provider, const char **why)
{
	(void)b;
	*why = provider == 1 ? NULL : "unknown provider";
	return provider == 1 ? 0 : -ENODEV;
}

/* dp_opts.cmb_reads' device memory: the upper half of the drive's CMB (the driver carves
 * its queues and lists from the lower half), in DP_CMB_GRANULE pieces handed out first
 * fit, as the image's P2P allocator hands out the CMB it publishes (that allocator is the
 * appliance's own code; this one is the harness's and is not counted). */
#define DP_CMB_PROVIDER 2
#define DP_CMB_GRANULE 4096u
#define DP_CMB_PIECES 512u
static struct dp *dp_cmb;                 /* the harness whose drive lends its CMB, or NULL */
static uint8_t dp_cmb_used[DP_CMB_PIECES]; /* 1: piece taken; 2: taken, first of its run */
static uint8_t *dp_cmb_base;
static unsigned dp_cmb_pieces;
unsigned dp_cmb_allocs;                   /* pieces' runs handed out since dp_start */

static int dp_mem_alloc(const struct nvmet_bdev *b, uint32_t len, struct netdev_frag *out, const char **why)
{
	unsigned need = (len + DP_CMB_GRANULE - 1) / DP_CMB_GRANULE, run = 0;
	(void)b;
	memset(out, 0, sizeof(*out));
	if (!dp_cmb) {
		*why = "no device memory for read data in the harness";
		return -ENODEV;
	}
	for (unsigned i = 0; i < dp_cmb_pieces && need; i++) {
		run = dp_cmb_used[i] ? 0 : run + 1;
		if (run < need)
			continue;
		unsigned first = i + 1 - need;
		for (unsigned k = first; k <= i; k++)
			dp_cmb_used[k] = k == first ? 2 : 1;
		uint8_t *p = dp_cmb_base + (size_t)first * DP_CMB_GRANULE;
		out->addr = dma_addr_device((uint64_t)(uintptr_t)p);
		out->offset = (uint64_t)(p - dp_cmb->ctrl.cmb.cpu);
		out->len = len;
		out->provider = DP_CMB_PROVIDER;
		dp_cmb_allocs++;
		*why = NULL;
		return 0;
	}
	*why = "the harness's CMB is full";
	return -ENOMEM;
}

static void dp_mem_free(const struct netdev_frag *f)
{
	if (!dp_cmb || f->provider != DP_CMB_PROVIDER)
		return;
	unsigned i = (unsigned)(((uint8_t *)(uintptr_t)f->addr.bus - dp_cmb_base) / DP_CMB_GRANULE);
	if (i >= dp_cmb_pieces || dp_cmb_used[i] != 2) {
		fprintf(stderr, "datapath: device memory 0x%llx freed but not handed out\n",
			(unsigned long long)f->addr.bus);
		abort();
	}
	do
		dp_cmb_used[i++] = 0;
	while (i < dp_cmb_pieces && dp_cmb_used[i] == 1);
}

/* Device-memory pieces handed out and not freed (dp_opts.cmb_reads). */
unsigned dp_cmb_in_use(void)
{
	unsigned n = 0;
	for (unsigned i = 0; i < dp_cmb_pieces; i++)
		n += dp_cmb_used[i] != 0;
	return n;
}

static const struct nvmet_tcp_mem_ops dp_mem_ops = { .reach = dp_mem_reach, .alloc = dp_mem_alloc,
						     .free = dp_mem_free };

/* --- the host's TCP --- */

/* The appliance's address, read from the stack's interface where it lies: the host knows
 * it (net_config_get, a call into the appliance's code, would be counted by
 * tools/bench/insn.py as the appliance's work for every frame the host sends). */
static uint32_t appliance_addr(void)
{
	return net_if0.addr;
}

/* One segment from the host on c at sequence number seq (SYN carries the MSS option, and
 * the window scale option when the host offers it); its payload is kept for
 * retransmission. */
static int inject_at(struct dp *d, struct dp_conn *c, uint32_t seq, uint8_t flags, const void *payload, size_t len)
{
	static uint8_t frame[FAKE_FRAME_MAX];
	static const uint8_t opts[8] = { 2, 4, DP_MSS >> 8, DP_MSS & 0xff, 1, 3, 3, DP_HOST_WSCALE };
	bool syn = (flags & TCP_SYN) != 0;
	uint32_t wnd = DP_HOST_WINDOW;
	if (d->host_ack_bytes && !syn) {
		/* a receiver with a buffer: the window is what c->stream has free */
		uint32_t room = (uint32_t)(DP_STREAM_MAX - c->len) >> (d->wscale ? DP_HOST_WSCALE : 0);
		wnd = room < wnd ? room : wnd;
		c->adv_small = c->len > DP_STREAM_MAX / 2;
	}
	struct fake_tcp t = { .src = DP_HOST_ADDR, .dst = appliance_addr(), .sport = c->sport, .dport = DP_PORT,
			      .seq = seq, .ack = (flags & TCP_ACK) ? c->rcv_nxt : 0, .flags = flags,
			      .wnd = (uint16_t)wnd, .opts = syn ? opts : NULL,
			      .optlen = syn ? (d->wscale ? 8 : 4) : 0, .payload = payload, .len = len };
	size_t n = fake_build_tcp(frame, &t);
	int rc = fake_netdev_inject(&d->nic, frame, n);
	if (rc == 0) {
		d->frames_in++;
		if (flags & TCP_ACK) {
			c->acked = c->rcv_nxt;
			c->delack_armed = false;
		}
	}
	if (payload && seq == c->snd_nxt)
		for (size_t i = 0; i < len; i++)
			c->sent[(seq + i) % DP_SENT_MAX] = ((const uint8_t *)payload)[i];
	return rc;
}

/* One segment from the host on c at snd_nxt. */
static int inject(struct dp *d, struct dp_conn *c, uint8_t flags, const void *payload, size_t len)
{
	return inject_at(d, c, c->snd_nxt, flags, payload, len);
}

static bool seq_after(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b) > 0;
}

/* What the appliance sent: acknowledgements, windows and in-order data per connection.
 * Returns the frames taken. */
static unsigned collect(struct dp *d)
{
	unsigned n = 0;
	for (unsigned i = 0; i < d->nic.ntx; i++) {
		struct fake_parsed_tcp t;
		if (!fake_parse_tcp(&d->nic.tx[i], &t) || t.dst != DP_HOST_ADDR)
			continue; /* ARP */
		struct dp_conn *cs[4] = { &d->adm, &d->io, &d->live_adm, &d->live_io }, *c = NULL;
		for (unsigned k = 0; k < 4 && !c; k++)
			if (cs[k]->sport && t.dport == cs[k]->sport)
				c = cs[k];
		if (!c)
			continue;
		n++;
		d->frames_out++;
		if (t.flags & TCP_RST) {
			c->reset = true;
			continue;
		}
		if ((t.flags & (TCP_SYN | TCP_ACK)) == (TCP_SYN | TCP_ACK)) {
			if (!c->established) {
				c->rcv_nxt = t.seq + 1;
				c->snd_una = t.ack;
				c->snd_wnd = t.wnd;
				c->snd_ws = d->wscale && t.ws > 0 ? (uint8_t)t.ws : 0;
				c->established = true;
			}
			continue;
		}
		if ((t.flags & TCP_ACK) && !seq_after(c->snd_una, t.ack)) {
			if (t.ack != c->snd_una)
				c->idle_steps = 0;
			c->snd_una = t.ack;
			c->snd_wnd = (uint32_t)t.wnd << c->snd_ws;
		}
		if (t.len && t.seq == c->rcv_nxt && t.len <= sizeof(c->stream) - c->len) {
			memcpy(c->stream + c->len, t.payload, t.len);
			c->len += t.len;
			c->rcv_nxt += (uint32_t)t.len;
		}
		if ((t.flags & TCP_FIN) && t.seq + t.len == c->rcv_nxt)
			c->rcv_nxt++;
	}
	d->nic.ntx = 0;
	fake_netdev_clear(&d->nic);
	return n;
}

/* Whether the host acknowledges what c received now: at once, or as a delayed-ACK
 * receiver does (host_ack_bytes unacknowledged, or host_delack_ms after the first of them:
 * delack_since, in clock steps, is when that started). */
static bool ack_due(struct dp *d, struct dp_conn *c)
{
	if (!d->host_ack_bytes || c->rcv_nxt - c->acked >= d->host_ack_bytes)
		return true;
	if (c->adv_small && c->len <= DP_STREAM_MAX / 4)
		return true; /* a window update: the buffer the last ACK said was half full drained */
	if (!c->delack_armed) {
		c->delack_armed = true;
		c->delack_since = d->steps;
	}
	return d->steps - c->delack_since >= d->host_delack_ms;
}

/* Run the poll loop until nothing moves, the host acknowledging what it received. */
static void run(struct dp *d)
{
	for (unsigned i = 0; i < DP_RUN_MAX_PASSES; i++) {
		unsigned p = dp_pass(d);
		unsigned got = collect(d);
		struct dp_conn *cs[4] = { &d->adm, &d->io, &d->live_adm, &d->live_io };
		for (unsigned k = 0; k < 4; k++)
			if (cs[k]->established && !cs[k]->reset &&
			    (cs[k]->acked != cs[k]->rcv_nxt || (cs[k]->adv_small && cs[k]->len <= DP_STREAM_MAX / 4)) &&
			    ack_due(d, cs[k]) && inject(d, cs[k], TCP_ACK, NULL, 0) == 0)
				got++;
		if (!p && !got)
			return;
	}
}

/* A host's retransmission timeout: after DP_RTO_STEPS ms without an acknowledgement while
 * data is out, its first unacknowledged segment again. */
static void retransmit(struct dp *d, struct dp_conn *c)
{
	static uint8_t seg[DP_MSS];
	uint32_t out = c->snd_nxt - c->snd_una;
	if (!c->established || c->reset || !out || ++c->idle_steps < DP_RTO_STEPS)
		return;
	c->idle_steps = 0;
	uint32_t n = out < DP_MSS ? out : DP_MSS;
	for (uint32_t i = 0; i < n; i++)
		seg[i] = c->sent[(c->snd_una + i) % DP_SENT_MAX];
	inject_at(d, c, c->snd_una, TCP_ACK | TCP_PSH, seg, n);
}

/* The host waits 1 ms (the clock moves only here), then the loop runs. */
static void step(struct dp *d)
{
	struct dp_conn *cs[4] = { &d->adm, &d->io, &d->live_adm, &d->live_io };
	fake_clock_advance(NSEC_PER_MSEC);
	d->steps++;
	for (unsigned k = 0; k < 4; k++)
		retransmit(d, cs[k]);
	run(d);
}

static int tcp_open(struct dp *d, struct dp_conn *c, uint16_t sport)
{
	memset(c, 0, sizeof(*c));
	c->sport = sport;
	c->snd_nxt = 1000u * sport;
	if (inject(d, c, TCP_SYN, NULL, 0))
		return fail(d, -ENOBUFS, "SYN not received by the NIC");
	c->snd_nxt++;
	run(d);
	if (!c->established)
		return fail(d, -ECONNREFUSED, "no SYN-ACK on port %u", DP_PORT);
	if (inject(d, c, TCP_ACK, NULL, 0))
		return fail(d, -ENOBUFS, "ACK not received by the NIC");
	run(d);
	return 0;
}

/* Send len bytes in segments of at most the MSS inside the appliance's window (and the
 * host's cwnd). What goes back to back, up to DP_BURST_MAX segments, is one receive batch
 * (the loop runs after it: the NIC's poll took the burst, then the pass's other pollers
 * and the batch's end, tcp_tx); with seg_batches each segment is a batch of its own. */
static int send_bytes(struct dp *d, struct dp_conn *c, const void *buf, size_t len)
{
	size_t off = 0;
	unsigned waits = 0, burst = 0;

	while (off < len) {
		uint32_t inflight = c->snd_nxt - c->snd_una;
		uint32_t wnd = d->host_cwnd && d->host_cwnd < c->snd_wnd ? d->host_cwnd : c->snd_wnd;
		uint32_t win = wnd > inflight ? wnd - inflight : 0;
		size_t n = len - off;
		int rc = 0;

		if (c->reset)
			return fail(d, -ECONNRESET, "connection %u reset by the appliance", c->sport);
		if (n > DP_MSS)
			n = DP_MSS;
		if (n > win)
			n = win;
		if (!n || (rc = inject(d, c, TCP_ACK | TCP_PSH, (const uint8_t *)buf + off, n)) == -ENOBUFS) {
			if (burst) { /* the burst so far is delivered first */
				burst = 0;
				run(d);
				continue;
			}
			if (++waits > DP_WAIT_STEPS)
				return fail(d, -ETIMEDOUT, "window closed for %u ms", DP_WAIT_STEPS);
			step(d);
			continue;
		}
		if (rc)
			return fail(d, rc, "segment not received by the NIC (%d)", rc);
		c->snd_nxt += (uint32_t)n;
		off += n;
		if (d->seg_batches || ++burst == DP_BURST_MAX) {
			burst = 0;
			run(d);
		}
	}
	if (burst)
		run(d);
	return 0;
}

/* The next whole PDU from the appliance on c (pointing into c->stream until consume()). */
static int next_pdu(struct dp *d, struct dp_conn *c, struct nth_pdu *p)
{
	for (unsigned waits = 0; waits <= DP_WAIT_STEPS; waits++) {
		int rc = nth_parse(c->stream, c->len, p);
		if (rc < 0)
			return fail(d, rc, "malformed PDU or bad digest from the appliance");
		if (rc == 1)
			return 0;
		if (c->reset)
			return fail(d, -ECONNRESET, "connection %u reset by the appliance", c->sport);
		step(d);
	}
	return fail(d, -ETIMEDOUT, "no PDU in %u ms", DP_WAIT_STEPS);
}

static void consume(struct dp_conn *c, uint32_t n)
{
	memmove(c->stream, c->stream + n, c->len - n);
	c->len -= n;
}

/* --- NVMe/TCP --- */

static int send_capsule(struct dp *d, struct dp_conn *c, bool ddgst, const struct nvme_sqe *sqe, const void *data,
			uint32_t len)
{
	static uint8_t b[NTH_CAPSULE_MAX];
	size_t n = nth_capsule(b, sizeof(b), false, ddgst, sqe, data, len);
	return n ? send_bytes(d, c, b, n) : fail(d, -E2BIG, "capsule too large");
}

/* Collect one command's completion (its C2HData into rbuf). */
static int response(struct dp *d, struct dp_conn *c, void *rbuf, uint32_t rcap, uint16_t *status,
		    struct nvme_cqe *cqe)
{
	struct nth_resp r = { .rbuf = rbuf, .rcap = rcap };
	while (!r.done) {
		struct nth_pdu p;
		int rc = next_pdu(d, c, &p);
		if (rc)
			return rc;
		rc = nth_resp_feed(&r, &p);
		consume(c, p.plen);
		if (rc < 0)
			return fail(d, rc, "unexpected PDU type %u", p.type);
	}
	if (rbuf && r.got != rcap && r.status == 0)
		return fail(d, -EIO, "read %u bytes of %u", r.got, rcap);
	*status = r.status;
	if (cqe)
		*cqe = r.cqe;
	return 0;
}

static int icreq(struct dp *d, struct dp_conn *c, bool ddgst)
{
	uint8_t b[NVME_TCP_IC_LEN];
	struct nth_pdu p;
	int rc;

	nth_icreq(b, sizeof(b), 0, 0, ddgst ? NVME_TCP_DGST_DDGST_ENABLE : 0, 0);
	if ((rc = send_bytes(d, c, b, sizeof(b))) || (rc = next_pdu(d, c, &p)))
		return rc;
	if (p.type != NVME_TCP_ICRESP)
		return fail(d, -EPROTO, "ICReq answered by PDU type %u", p.type);
	consume(c, p.plen);
	return 0;
}

static int connect_queue(struct dp *d, struct dp_conn *c, uint16_t qid, bool ddgst)
{
	uint8_t cd[1024];
	struct nvme_sqe sqe = ft_connect_sqe(qid, qid ? 63 : 31, 0);
	struct nvme_cqe cqe;
	uint16_t status;
	int rc;

	ft_connect_data(cd, NTH_HOSTNQN, DP_SUBNQN, qid ? d->cntlid : 0xffff);
	if ((rc = send_capsule(d, c, ddgst, &sqe, cd, sizeof(cd))) || (rc = response(d, c, NULL, 0, &status, &cqe)))
		return rc;
	if (status)
		return fail(d, -ECONNREFUSED, "Connect qid %u: status 0x%x", qid, status);
	if (qid == 0) {
		d->cntlid = (uint16_t)le32_get(cqe.dw0);
		sqe = ft_prop_sqe(true, false, NVMF_PROP_CC,
				  NVME_CC_EN | (6u << NVME_CC_IOSQES_SHIFT) | (4u << NVME_CC_IOCQES_SHIFT));
		if ((rc = send_capsule(d, c, false, &sqe, NULL, 0)) || (rc = response(d, c, NULL, 0, &status, NULL)))
			return rc;
		if (status)
			return fail(d, -EIO, "CC.EN: status 0x%x", status);
	}
	return 0;
}

int dp_start(struct dp *d, bool ddgst)
{
	return dp_start_nic(d, ddgst, NETDEV_F_RX_SPLIT);
}

int dp_start_nic(struct dp *d, bool ddgst, uint32_t nic_features)
{
	struct dp_opts o = { .ddgst = ddgst, .nic_features = nic_features };
	return dp_start_opts(d, &o);
}

int dp_start_opts(struct dp *d, const struct dp_opts *o)
{
	static const uint8_t bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff }, zero[6] = { 0 };
	static uint8_t frame[FAKE_FRAME_MAX];
	char json[1024], addr[16];
	struct net_config nc;
	int rc;

	memset(d, 0, sizeof(*d));
	dp_drive_period_ns = 0;
	d->ddgst = o->ddgst;
	d->wscale = o->wscale;
	fake_clock_install();
	fake_clock_set(1000 * NSEC_PER_SEC);
	timer_queue_init(&timer_default_queue);
	dma_counters_reset();
	fake_nvme_init(&d->drive);
	if (o->cmb_reads) { /* a CMB as QEMU's nvme offers it (CAP.CMBS, NVMe 1.4 CMBMSC) */
		d->drive.cap |= 1ull << 57;
		d->drive.cmb_v14 = true;
	}
	if (o->mdts)
		d->drive.mdts = o->mdts;
	d->drive.io_later = o->drive_later;
	if ((rc = nvme_ctrl_init(&d->ctrl, "nvme0", &d->drive.bus, 1)) || (rc = nvme_register(&d->ctrl)))
		return fail(d, rc, "the drive did not come up (%d)", rc);
	dp_cmb = NULL;
	if (o->cmb_reads) {
		const struct nvme_cmb *m = &d->ctrl.cmb;
		uint64_t half = m->size / 2;
		if (!m->usable || !m->info.rds || !m->info.wds || m->reserved > half)
			return fail(d, -ENODEV, "the drive's CMB is not usable for data (%s)",
				    m->refused ? m->refused : "no reason given");
		memset(dp_cmb_used, 0, sizeof(dp_cmb_used));
		dp_cmb_allocs = 0;
		dp_cmb_base = m->cpu + half;
		dp_cmb_pieces = (unsigned)(half / DP_CMB_GRANULE < DP_CMB_PIECES ? half / DP_CMB_GRANULE : DP_CMB_PIECES);
		dp_cmb = d;
	}
	fake_netdev_setup(&d->nic, o->nic_features);
	d->seg_batches = o->seg_batches;
	d->host_cwnd = o->host_cwnd;
	d->host_ack_bytes = o->host_ack_bytes;
	d->host_delack_ms = o->host_delack_ms ? o->host_delack_ms : 40;
	d->nic.rx_batch = !o->seg_batches; /* the batch ends in the pass (the tcp_tx poller) */
	if ((rc = net_init()))
		return fail(d, rc, "net_init (%d)", rc);
	net_config_default(&nc);
	if ((rc = net_configure(&nc)))
		return fail(d, rc, "net_configure (%d)", rc);
	/* the host asks for the appliance's MAC: the stack learns the host's */
	size_t n = fake_build_arp(frame, 1, fake_peer_mac, DP_HOST_ADDR, zero, nc.addr, bcast);
	if ((rc = fake_netdev_inject(&d->nic, frame, n)))
		return fail(d, rc, "ARP (%d)", rc);
	fake_netdev_clear(&d->nic);

	snprintf(json, sizeof(json),
		 "{ \"hosts\": [], \"ports\": [ { \"portid\": 1, \"addr\": { \"trtype\": \"tcp\", \"adrfam\": \"ipv4\","
		 " \"traddr\": \"%s\", \"trsvcid\": \"%u\" }, \"subsystems\": [ \"" DP_SUBNQN "\" ] } ],"
		 " \"subsystems\": [ { \"nqn\": \"" DP_SUBNQN "\", \"attr\": { \"allow_any_host\": \"1\" },"
		 " \"namespaces\": [ { \"nsid\": 1, \"enable\": 1, \"device\": { \"path\": \"/dev/nvme0n1\" } } ] } ] }",
		 net_format_ipv4(nc.addr, addr), DP_PORT);
	if ((rc = nvmet_config_parse(json, strlen(json), &d->cfg, d->why, sizeof(d->why), NULL, NULL)))
		return rc;
	if ((rc = nvmet_init(&d->cfg, nvmet_bdev_nvme_open, NULL)))
		return fail(d, rc, "nvmet_init (%d)", rc);
	if ((rc = nvmet_tcp_start(&dp_mem_ops)))
		return fail(d, rc, "nvmet_tcp_start (%d)", rc);

	if ((rc = tcp_open(d, &d->adm, DP_SPORT_ADMIN)) || (rc = icreq(d, &d->adm, false)) ||
	    (rc = connect_queue(d, &d->adm, 0, false)))
		return rc;
	if ((rc = tcp_open(d, &d->io, DP_SPORT_IO)) || (rc = icreq(d, &d->io, o->ddgst)) ||
	    (rc = connect_queue(d, &d->io, 1, o->ddgst)))
		return rc;
	return 0;
}

void dp_drive_period(struct dp *d, unsigned ms)
{
	(void)d;
	dp_drive_period_ns = (uint64_t)ms * NSEC_PER_MSEC;
	dp_drive_next_ns = clock_now_ns() + dp_drive_period_ns;
}

int dp_write(struct dp *d, uint16_t cid, uint64_t slba, const void *buf, uint32_t len, uint16_t *status)
{
	static uint8_t h2c[NTH_H2C_HDR + NVMET_TCP_MAXH2CDATA + 4];
	struct nvme_sqe sqe = nth_rw_sqe(true, cid, 1, slba, len / 512, len);
	struct nth_pdu p;
	uint16_t cccid, ttag;
	uint32_t r2to, r2tl;
	int rc;

	if (len <= NVMET_TCP_IN_CAPSULE)
		return send_capsule(d, &d->io, d->ddgst, &sqe, buf, len) ?: response(d, &d->io, NULL, 0, status, NULL);
	sqe.dptr.sgl1.len = le32_make((uint32_t)len);
	sqe.dptr.sgl1.id = NVMF_SGL_ID_TRANSPORT; /* SGL1: transport data block */
	if ((rc = send_capsule(d, &d->io, d->ddgst, &sqe, NULL, 0)) || (rc = next_pdu(d, &d->io, &p)))
		return rc;
	if (nth_r2t(&p, &cccid, &ttag, &r2to, &r2tl)) /* refused at once: its CapsuleResp */
		return response(d, &d->io, NULL, 0, status, NULL);
	consume(&d->io, p.plen);
	if (cccid != cid || r2to != 0 || r2tl != len)
		return fail(d, -EPROTO, "R2T for cid %u: %u bytes at %u", cccid, r2tl, r2to);
	for (uint32_t off = 0; off < len;) {
		uint32_t n = len - off < NVMET_TCP_MAXH2CDATA ? len - off : NVMET_TCP_MAXH2CDATA;
		size_t plen = nth_h2c(h2c, sizeof(h2c), false, d->ddgst, cid, ttag, off, (const uint8_t *)buf + off, n,
				      off + n == len);
		if ((rc = send_bytes(d, &d->io, h2c, plen)))
			return rc;
		off += n;
	}
	return response(d, &d->io, NULL, 0, status, NULL);
}

int dp_write_capsules(struct dp *d, uint16_t cid0, unsigned n, uint64_t slba, const void *buf, uint32_t len,
		      uint16_t *status)
{
	const uint8_t *b = buf;
	int rc;

	if (n == 0 || n > 64 || len > NVMET_TCP_IN_CAPSULE || len % 512)
		return fail(d, -EINVAL, "%u in-capsule writes of %u bytes", n, len);
	for (unsigned i = 0; i < n; i++) {
		struct nvme_sqe sqe = nth_rw_sqe(true, (uint16_t)(cid0 + i), 1, slba + (uint64_t)i * (len / 512),
						 len / 512, len);
		status[i] = 0xffff;
		if ((rc = send_capsule(d, &d->io, d->ddgst, &sqe, b + (size_t)i * len, len)))
			return rc;
	}
	for (unsigned left = n; left; left--) {
		struct nth_pdu p;
		struct nth_resp r = { 0 };
		if ((rc = next_pdu(d, &d->io, &p)))
			return rc;
		rc = nth_resp_feed(&r, &p);
		consume(&d->io, p.plen);
		unsigned i = (unsigned)(uint16_t)(le16_get(r.cqe.cid) - cid0);
		if (rc != 1 || i >= n || status[i] != 0xffff)
			return fail(d, -EPROTO, "unexpected PDU type %u among in-capsule writes", p.type);
		status[i] = r.status;
	}
	return 0;
}

/* The data an R2T asks for: H2CData PDUs of at most MAXH2CDATA. */
static int send_r2t_data(struct dp *d, uint16_t cid, uint16_t ttag, const uint8_t *data, uint32_t off,
			 uint32_t len)
{
	static uint8_t h2c[NTH_H2C_HDR + NVMET_TCP_MAXH2CDATA + 4];
	for (uint32_t done = 0; done < len;) {
		uint32_t k = len - done < NVMET_TCP_MAXH2CDATA ? len - done : NVMET_TCP_MAXH2CDATA;
		size_t plen = nth_h2c(h2c, sizeof(h2c), false, d->ddgst, cid, ttag, off + done, data + off + done, k,
				      done + k == len);
		int rc = send_bytes(d, &d->io, h2c, plen);
		if (rc)
			return rc;
		done += k;
	}
	return 0;
}

int dp_write_burst(struct dp *d, uint16_t cid0, unsigned n, unsigned slots, uint64_t slba, const void *buf,
		   uint32_t len, uint16_t *status)
{
	const uint8_t *b = buf;
	unsigned left = n;
	int rc;

	if (n == 0 || n > 64 || slots == 0 || len <= NVMET_TCP_IN_CAPSULE)
		return fail(d, -EINVAL, "burst of %u writes of %u bytes", n, len);
	for (unsigned i = 0; i < n; i++) {
		struct nvme_sqe sqe = nth_rw_sqe(true, (uint16_t)(cid0 + i), 1, slba + (uint64_t)(i % slots) * (len / 512),
						 len / 512, len);
		sqe.dptr.sgl1.len = le32_make(len);
		sqe.dptr.sgl1.id = NVMF_SGL_ID_TRANSPORT; /* SGL1: transport data block */
		status[i] = 0xffff;
		if ((rc = send_capsule(d, &d->io, d->ddgst, &sqe, NULL, 0)))
			return rc;
	}
	while (left) {
		struct nth_pdu p;
		uint16_t cccid, ttag;
		uint32_t r2to, r2tl;

		if ((rc = next_pdu(d, &d->io, &p)))
			return rc;
		if (nth_r2t(&p, &cccid, &ttag, &r2to, &r2tl) == 0) {
			unsigned i = (unsigned)(uint16_t)(cccid - cid0);
			consume(&d->io, p.plen);
			if (i >= n || status[i] != 0xffff || r2tl > len || r2to > len - r2tl)
				return fail(d, -EPROTO, "R2T for cid %u: %u bytes at %u", cccid, r2tl, r2to);
			if ((rc = send_r2t_data(d, cccid, ttag, b + (size_t)(i % slots) * len, r2to, r2tl)))
				return rc;
			continue;
		}
		struct nth_resp r = { 0 };
		rc = nth_resp_feed(&r, &p);
		consume(&d->io, p.plen);
		unsigned i = (unsigned)(uint16_t)(le16_get(r.cqe.cid) - cid0);
		if (rc != 1 || i >= n || status[i] != 0xffff)
			return fail(d, -EPROTO, "unexpected PDU type %u in a burst", p.type);
		status[i] = r.status;
		left--;
	}
	return 0;
}

/* The command a PDU from the target answers: a C2HData's CCCID, a CapsuleResp's CID. */
static int pdu_cid(const struct nth_pdu *p, uint16_t *cid)
{
	if (p->type == NVME_TCP_C2H_DATA && p->hlen >= 10)
		*cid = le16_load(p->hdr + 8);
	else if (p->type == NVME_TCP_CAPSULE_RESP && p->hlen >= 8 + 16)
		*cid = le16_load(p->hdr + 8 + 12);
	else
		return -EPROTO;
	return 0;
}

/* Read i of dp_read_stream goes out: its CapsuleCmd a segment of its own, injected (the
 * loop runs later: what the host sends meanwhile is one receive batch). */
static int read_issue(struct dp *d, uint16_t cid, uint64_t slba, uint32_t len)
{
	static uint8_t b[NTH_CAPSULE_MAX];
	struct nvme_sqe sqe = nth_rw_sqe(false, cid, 1, slba, len / 512, len);
	sqe.dptr.sgl1.len = le32_make(len);
	sqe.dptr.sgl1.id = NVMF_SGL_ID_TRANSPORT; /* SGL1: transport data block */
	size_t k = nth_capsule(b, sizeof(b), false, d->ddgst, &sqe, NULL, 0);
	int rc = inject(d, &d->io, TCP_ACK | TCP_PSH, b, k);
	if (rc)
		return fail(d, rc, "a read's capsule (cid %u) not received by the NIC", cid);
	d->io.snd_nxt += (uint32_t)k;
	return 0;
}

/* The Keep Alive (CID 0x7000) on the admin queue, injected as read_issue does. */
static int keep_alive_issue(struct dp *d)
{
	static uint8_t b[NTH_CAPSULE_MAX];
	struct nvme_sqe ka = ft_sqe(NVME_ADM_KEEP_ALIVE, 0x7000, 0, 0); /* (a null SGL, as Linux's) */
	size_t k = nth_capsule(b, sizeof(b), false, false, &ka, NULL, 0);
	int rc = inject(d, &d->adm, TCP_ACK | TCP_PSH, b, k);
	if (rc)
		return fail(d, rc, "the Keep Alive not received by the NIC");
	d->adm.snd_nxt += (uint32_t)k;
	return 0;
}

int dp_read_stream(struct dp *d, unsigned qd, unsigned total, unsigned slots, uint32_t len, unsigned ka_every,
		   unsigned *max_ms)
{
	static struct nth_resp r[64];
	static uint8_t got[64][128 * 1024];
	uint64_t start[64];
	unsigned idx[64], issued = 0, done = 0, waits = 0, ka_out = 0;
	bool busy[64] = { false };
	int rc;

	*max_ms = 0;
	if (qd == 0 || qd > 64 || slots == 0 || len % 512 || len > sizeof(got[0]) ||
	    (uint64_t)slots * len > (uint64_t)FAKE_NSZE * 512)
		return fail(d, -EINVAL, "stream of reads: QD %u, %u slots of %u bytes", qd, slots, len);
	/* a read in flight has CID 0x100 + k, k its place in r[] and got[] (a free one) */
	while (done < total) {
		struct nth_pdu p;
		bool took = false;

		while (issued < total && issued - done < qd) {
			unsigned k = 0;
			while (busy[k])
				k++;
			busy[k] = true;
			idx[k] = issued;
			r[k] = (struct nth_resp){ .rbuf = got[k], .rcap = len };
			start[k] = d->steps;
			if ((rc = read_issue(d, (uint16_t)(0x100 + k), (uint64_t)(issued % slots) * (len / 512), len)))
				return rc;
			issued++;
			if (ka_every && issued % ka_every == 0 && !ka_out) {
				if ((rc = keep_alive_issue(d)))
					return rc;
				ka_out = 1;
			}
		}
		if (ka_out && (rc = nth_parse(d->adm.stream, d->adm.len, &p)) != 0) {
			struct nth_resp kr = { 0 };
			if (rc < 0 || nth_resp_feed(&kr, &p) != 1 || le16_get(kr.cqe.cid) != 0x7000 || kr.status)
				return fail(d, -EPROTO, "Keep Alive: PDU type %u, status 0x%x", p.type, kr.status);
			consume(&d->adm, p.plen);
			ka_out = 0;
			took = true;
		}
		while ((rc = nth_parse(d->io.stream, d->io.len, &p)) != 0) {
			uint16_t cid;
			unsigned k;
			if (rc < 0)
				return fail(d, rc, "malformed PDU or bad digest from the appliance");
			if (pdu_cid(&p, &cid) || (k = (unsigned)(uint16_t)(cid - 0x100)) >= qd || !busy[k])
				return fail(d, -EPROTO, "PDU type %u for no read in flight", p.type);
			rc = nth_resp_feed(&r[k], &p);
			consume(&d->io, p.plen);
			if (rc < 0)
				return fail(d, rc, "cid 0x%x: unexpected PDU type %u", cid, p.type);
			took = true;
			if (rc == 0)
				continue;
			unsigned i = idx[k];
			if (r[k].status || r[k].got != len)
				return fail(d, -EIO, "read %u: status 0x%x, %u bytes of %u", i, r[k].status, r[k].got, len);
			if (memcmp(got[k], d->drive.media + (size_t)(i % slots) * len, len))
				return fail(d, -EIO, "read %u: other bytes than the drive's", i);
			if (d->steps - start[k] > *max_ms)
				*max_ms = (unsigned)(d->steps - start[k]);
			busy[k] = false;
			done++;
		}
		if (took) {
			waits = 0;
			continue;
		}
		if (d->io.reset || d->adm.reset)
			return fail(d, -ECONNRESET, "a connection was reset by the appliance");
		if (++waits > DP_WAIT_STEPS)
			return fail(d, -ETIMEDOUT, "%u of %u reads done, %u in flight%s, nothing for %u ms", done, total,
				    issued - done, ka_out ? ", a Keep Alive unanswered" : "", DP_WAIT_STEPS);
		step(d);
	}
	return 0;
}

int dp_read(struct dp *d, uint16_t cid, uint64_t slba, void *buf, uint32_t len, uint16_t *status)
{
	struct nvme_sqe sqe = nth_rw_sqe(false, cid, 1, slba, len / 512, len);
	int rc;

	sqe.dptr.sgl1.len = le32_make((uint32_t)len);
	sqe.dptr.sgl1.id = NVMF_SGL_ID_TRANSPORT; /* SGL1: transport data block */
	if ((rc = send_capsule(d, &d->io, d->ddgst, &sqe, NULL, 0)))
		return rc;
	return response(d, &d->io, buf, len, status, NULL);
}

int dp_send_raw(struct dp *d, const void *buf, size_t len)
{
	int rc = send_bytes(d, &d->io, buf, len);
	run(d);
	return rc;
}

int dp_liveness(struct dp *d)
{
	static uint8_t w[512], r[512];
	struct nvme_sqe sqe;
	uint16_t cntlid = d->cntlid, status = 0;
	int rc;

	for (unsigned i = 0; i < sizeof(w); i++)
		w[i] = (uint8_t)(i * 13 + 5);
	if ((rc = tcp_open(d, &d->live_adm, DP_SPORT_LIVE_ADMIN)) || (rc = icreq(d, &d->live_adm, false)) ||
	    (rc = connect_queue(d, &d->live_adm, 0, false)) || (rc = tcp_open(d, &d->live_io, DP_SPORT_LIVE_IO)) ||
	    (rc = icreq(d, &d->live_io, false)) || (rc = connect_queue(d, &d->live_io, 1, false)))
		goto out;
	sqe = nth_rw_sqe(true, 1, 1, 0, 1, sizeof(w));
	if ((rc = send_capsule(d, &d->live_io, false, &sqe, w, sizeof(w))) ||
	    (rc = response(d, &d->live_io, NULL, 0, &status, NULL)))
		goto out;
	if (status) {
		rc = fail(d, -EIO, "liveness: the Write got status 0x%x", status);
		goto out;
	}
	sqe = nth_rw_sqe(false, 2, 1, 0, 1, sizeof(r));
	sqe.dptr.sgl1.len = le32_make((uint32_t)sizeof(r));
	sqe.dptr.sgl1.id = NVMF_SGL_ID_TRANSPORT; /* SGL1: transport data block */
	if ((rc = send_capsule(d, &d->live_io, false, &sqe, NULL, 0)) ||
	    (rc = response(d, &d->live_io, r, sizeof(r), &status, NULL)))
		goto out;
	if (status || memcmp(r, w, sizeof(r)))
		rc = fail(d, -EIO, "liveness: the Read got status 0x%x or other bytes", status);
out:
	d->cntlid = cntlid;
	if (d->live_io.established && !d->live_io.reset)
		inject(d, &d->live_io, TCP_RST | TCP_ACK, NULL, 0);
	if (d->live_adm.established && !d->live_adm.reset)
		inject(d, &d->live_adm, TCP_RST | TCP_ACK, NULL, 0);
	run(d);
	return rc;
}

int dp_stop(struct dp *d)
{
	const char *bad = NULL;
	unsigned lent;

	/* the host goes away: a reset on each connection */
	if (d->adm.established && !d->adm.reset)
		inject(d, &d->adm, TCP_RST | TCP_ACK, NULL, 0);
	if (d->io.established && !d->io.reset)
		inject(d, &d->io, TCP_RST | TCP_ACK, NULL, 0);
	run(d);
	nvmet_tcp_stop();
	for (unsigned i = 0; i < DP_WAIT_STEPS && nvmet_tcp_conn_count(); i++)
		step(d);
	if (nvmet_tcp_conn_count())
		bad = "a target connection was not freed";
	else if (nvmet_queue_count() || nvmet_ctrl_count())
		bad = "a target queue or controller was not freed";
	nvmet_fini();
	if (dp_cmb && dp_cmb_in_use() && !bad)
		bad = "device memory (the CMB) for read data not freed";
	dp_cmb = NULL;
	nvme_unregister(&d->ctrl);
	nvme_ctrl_fini(&d->ctrl);
	if (!bad && mm_pool_total_in_use())
		bad = "pool objects still in use";
	if (net_shutdown() && !bad)
		bad = "the stack did not shut down";
	lent = fake_netdev_teardown(&d->nic);
	if (lent && !bad)
		bad = "NIC receive buffers never returned";
	if (d->drive.dma_live && !bad)
		bad = "the drive's DMA memory not freed";
	fake_nvme_fini(&d->drive);
	if (bad)
		return fail(d, -1, "%s (pool objects %zu, NIC buffers %u)", bad, mm_pool_total_in_use(), lent);
	return 0;
}
