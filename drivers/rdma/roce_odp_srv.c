/*
 * roce_odp_srv.c - the ODP service of rxe0 (see roce_odp_srv.h): configuration, the
 * region over an NVMe namespace range and its MR, the rdma_cm listener that hands out the
 * region's address and rkey, and the `rdma odp` console subcommand and `stats` lines.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../../lib/clock.h"
#include "../../lib/config_key.h"
#include "../../lib/log.h"
#include "../../lib/shutdown.h"
#include "roce_cm.h"
#include "roce_internal.h"
#include "roce_net.h"
#include "roce_odp_mr.h"
#include "roce_odp_srv.h"

LOG_MODULE_USE(rdma);

#define U(x) ((unsigned long long)(x))

/* --- configuration ------------------------------------------------------------------------ */

struct roce_odp_region_cfg {
	bool set;
	unsigned ctrl;
	uint32_t nsid;
	uint64_t size, offset;
};

static struct roce_odp_region_cfg odp_cfg;
static unsigned odp_frames = 1024;

int roce_odp_parse_dev(const char *text, unsigned *ctrl, uint32_t *nsid)
{
	unsigned c, n;
	char tail;
	if (sscanf(text, "nvme%un%u%c", &c, &n, &tail) != 2 || n == 0)
		return -EINVAL;
	*ctrl = c;
	*nsid = n;
	return 0;
}

int roce_odp_parse_size(const char *text, uint64_t *out)
{
	unsigned long long v;
	char unit = 0, tail;
	int k = sscanf(text, "%llu%c%c", &v, &unit, &tail);
	unsigned shift = 0;

	if (k < 1 || k > 2 || text[0] < '0' || text[0] > '9')
		return -EINVAL;
	if (k == 2) {
		switch (unit) {
		case 'K': case 'k': shift = 10; break;
		case 'M': case 'm': shift = 20; break;
		case 'G': case 'g': shift = 30; break;
		default: return -EINVAL;
		}
	}
	if (v > (UINT64_MAX >> shift))
		return -EINVAL;
	*out = (uint64_t)v << shift;
	return 0;
}

/* "nvmeXnY SIZE [OFFSET]" into c. 0 or -EINVAL with why. */
static int odp_parse_region(const char *text, struct roce_odp_region_cfg *c, char *why, size_t whylen)
{
	char dev[32], size[32], off[32];
	int n = sscanf(text, "%31s %31s %31s", dev, size, off);

	memset(c, 0, sizeof(*c));
	if (n <= 0)
		return 0;  /* empty: no region */
	if (n < 2 || roce_odp_parse_dev(dev, &c->ctrl, &c->nsid) || roce_odp_parse_size(size, &c->size) ||
	    (n == 3 && roce_odp_parse_size(off, &c->offset))) {
		snprintf(why, whylen, "want \"nvmeXnY SIZE [OFFSET]\" (sizes with K/M/G)");
		return -EINVAL;
	}
	if (!c->size || c->size % ROCE_ODP_PAGE_SIZE || c->offset % ROCE_ODP_PAGE_SIZE ||
	    c->size / ROCE_ODP_PAGE_SIZE > ROCE_ODP_MAX_PAGES) {
		snprintf(why, whylen, "SIZE and OFFSET in whole 4 KiB pages, SIZE at most 4G");
		return -EINVAL;
	}
	c->set = true;
	return 0;
}

static int odp_cfg_region(const struct config_key *k, const char *name, const char *text, char *why, size_t whylen)
{
	struct roce_odp_region_cfg c;
	int rc;
	(void)k;
	(void)name;
	if ((rc = odp_parse_region(text, &c, why, whylen)))
		return rc;
	odp_cfg = c;
	return 0;
}
CONFIG_CUSTOM(rdma_odp_region, "rdma.odp.region", odp_cfg_region, "nvmeXnY SIZE [OFFSET] (K/M/G), or empty", "",
	      NULL, "an on-demand paged RDMA region over that namespace range, served on rdma_cm port 7180");
CONFIG_UINT(rdma_odp_frames, "rdma.odp.frames", &odp_frames, 1, ROCE_ODP_MAX_FRAMES, "1024", NULL,
	    "4 KiB DRAM frames of rxe0's ODP resident pool (the region may be many times larger)");

/* --- sessions ---------------------------------------------------------------------------- */

static void odp_session_free(struct roce_odp_session *s)
{
	if (s->conn)
		roce_cm_detach(s->conn);
	roce_conn_res_free(&s->r);
	memset(s, 0, sizeof(*s));
}

static int odp_req(struct roce_cm_conn *c, const struct roce_cm_req *req, uint32_t peer, void *ctx)
{
	struct roce_odp_srv *sv = ctx;
	struct roce_odp_session *s = NULL;
	struct roce_qp_init_attr init = { .qp_type = ROCE_QPT_RC,
					  .cap = { .max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1 } };
	struct roce_qp_attr a = { .qp_state = ROCE_QPS_INIT, .port_num = 1, .qp_access_flags = ROCE_ACCESS_ALL };
	struct roce_odp_rep_priv priv;
	unsigned mine = 0;
	(void)req;

	if (!sv->mr)
		return CM_REJ_NO_RESOURCES;
	for (unsigned i = 0; i < ROCE_ODP_SESSIONS; i++) {
		if (sv->s[i].used && sv->s[i].peer == peer)
			mine++;
		else if (!sv->s[i].used && !s)
			s = &sv->s[i];
	}
	if (!s || mine >= ROCE_ODP_PER_PEER) {
		sv->refused++;
		return CM_REJ_NO_RESOURCES;
	}
	memset(s, 0, sizeof(*s));
	s->used = true;
	s->peer = peer;
	if (roce_create_cq(sv->pd->dev, 4, NULL, NULL, &s->r.cq))
		goto fail;
	init.send_cq = init.recv_cq = s->r.cq;
	if (roce_create_qp(sv->pd, &init, &s->r.qp) ||
	    roce_modify_qp(s->r.qp, &a, ROCE_QP_STATE | ROCE_QP_PKEY_INDEX | ROCE_QP_PORT | ROCE_QP_ACCESS_FLAGS))
		goto fail;
	memcpy(priv.magic, ROCE_ODP_MAGIC, sizeof(priv.magic));
	priv.rkey = be32_make(roce_mr_rkey(sv->mr));
	priv.addr = be64_make(ROCE_ODP_IOVA);
	priv.length = be64_make(roce_odp_region_length(sv->reg));
	priv.page_size = be32_make(ROCE_ODP_PAGE_SIZE);
	if (roce_cm_accept(c, s->r.qp, &priv, sizeof(priv)))
		goto fail;
	s->conn = c;
	s->last = clock_now_ns();
	s->last_epsn = s->r.qp->resp.epsn;
	sv->sessions++;
	return 0;
fail:
	odp_session_free(s);
	return CM_REJ_NO_RESOURCES;
}

static void odp_event(struct roce_cm_conn *c, enum roce_cm_event ev, void *ctx)
{
	struct roce_odp_srv *sv = ctx;
	if (ev != ROCE_CM_EV_DISCONNECTED)
		return;
	for (unsigned i = 0; i < ROCE_ODP_SESSIONS; i++)
		if (sv->s[i].used && sv->s[i].conn == c)
			odp_session_free(&sv->s[i]);
}

/* --- the region ---------------------------------------------------------------------------- */

/* Take the region down: sessions closed, MR deregistered, region destroyed (its dirty
 * pages written back first; it goes when its commands have completed). */
static void odp_region_down(struct roce_odp_srv *sv)
{
	for (unsigned i = 0; i < ROCE_ODP_SESSIONS; i++)
		if (sv->s[i].used) {
			if (sv->s[i].conn)
				roce_cm_disconnect(sv->s[i].conn);
			odp_session_free(&sv->s[i]);
		}
	if (sv->mr)
		roce_dereg_mr(sv->mr);
	sv->mr = NULL;
	if (sv->reg)
		roce_odp_region_destroy(sv->reg);
	sv->reg = NULL;
	if (sv->listening)
		roce_cm_unlisten(sv->rn, ROCE_CM_PS_TCP_SID(ROCE_ODP_PORT));
	sv->listening = false;
}

static int odp_region_up(struct roce_odp_srv *sv, const struct roce_odp_region_cfg *c)
{
	struct roce_odp_store store;
	int rc;

	if (sv->reg)
		return -EEXIST;
	if (!sv->odp && (rc = roce_odp_init(&sv->odp, odp_frames)))
		return rc;
	if ((rc = roce_odp_nvme_open(&sv->nvme, c->ctrl, c->nsid, c->offset, c->size, &store)))
		return rc;
	if ((rc = roce_odp_region_create(sv->odp, "odp0", &store, c->size, &sv->reg)))
		return rc;
	if ((rc = roce_reg_mr_odp(sv->pd, ROCE_ODP_IOVA, sv->reg, ROCE_ACCESS_ALL, &sv->mr)) ||
	    (rc = roce_cm_listen(sv->rn, ROCE_CM_PS_TCP_SID(ROCE_ODP_PORT), odp_req, odp_event, sv))) {
		if (sv->mr)
			roce_dereg_mr(sv->mr);
		sv->mr = NULL;
		roce_odp_region_destroy(sv->reg);
		sv->reg = NULL;
		return rc;
	}
	sv->listening = true;
	log_info("rxe0: ODP region %llu MiB over nvme%un%u at %llu, %u frames (%u KiB) resident at most, rkey %#x on "
		 "rdma_cm port %u", U(c->size >> 20), c->ctrl, (unsigned)c->nsid, U(c->offset), roce_odp_nframes(sv->odp),
		 roce_odp_nframes(sv->odp) * (ROCE_ODP_PAGE_SIZE / 1024), roce_mr_rkey(sv->mr), ROCE_ODP_PORT);
	return 0;
}

/* The started service, for the shutdown hook (which has no context argument). */
static struct roce_odp_srv *odp_srv_running;

int roce_odp_srv_start(struct roce_odp_srv *sv, struct roce_net *rn)
{
	int rc;

	memset(sv, 0, sizeof(*sv));
	odp_srv_running = sv;
	sv->rn = rn;
	sv->last_flush_rc = 1;
	if ((rc = roce_alloc_pd(rn->dev, &sv->pd)))
		return rc;
	if (odp_cfg.set && (rc = odp_region_up(sv, &odp_cfg)))
		log_err("rxe0: ODP region from rdma.odp.region not set up (%d)", rc);
	return rc;
}

/* Close the sessions that made no progress for ROCE_ODP_IDLE_NS. Returns how many. */
static int odp_idle_sessions(struct roce_odp_srv *sv, uint64_t now)
{
	int n = 0;
	for (unsigned i = 0; i < ROCE_ODP_SESSIONS; i++) {
		struct roce_odp_session *s = &sv->s[i];
		if (!s->used)
			continue;
		if (s->r.qp && s->r.qp->resp.epsn != s->last_epsn) {
			s->last_epsn = s->r.qp->resp.epsn;
			s->last = now;
		}
		if (now <= s->last || now - s->last <= ROCE_ODP_IDLE_NS)  /* an accept may have set last after now */
			continue;
		log_info("rxe0: ODP session from %u.%u.%u.%u idle for %llu s, disconnecting", s->peer >> 24,
			 s->peer >> 16 & 0xff, s->peer >> 8 & 0xff, s->peer & 0xff, U(ROCE_ODP_IDLE_NS / 1000000000ull));
		if (s->conn)
			roce_cm_disconnect(s->conn);
		odp_session_free(s);
		sv->idle_closed++;
		n++;
	}
	return n;
}

int roce_odp_srv_poll(struct roce_odp_srv *sv, uint64_t now)
{
	int n = odp_idle_sessions(sv, now);
	return n + (sv->odp ? roce_odp_poll(sv->odp, now) : 0);
}

/* --- shutdown ------------------------------------------------------------------------------ */

#define ODP_SHUTDOWN_TIMEOUT_NS (20ull * 1000000000ull)

static void odp_shutdown_flush_done(void *arg, int rc)
{
	struct roce_odp_srv *sv = arg;
	sv->shutdown_rc = rc;
}

/* Drive the store and the pool until *state is no longer `busy` (1) or the deadline passes. */
static int odp_drive_until(struct roce_odp_srv *sv, const int *state, bool (*busy)(struct roce_odp_srv *sv),
			   uint64_t deadline)
{
	while (busy(sv)) {
		if (clock_now_ns() > deadline)
			return -ETIMEDOUT;
		roce_odp_nvme_poll(&sv->nvme);
		roce_odp_poll(sv->odp, clock_now_ns());
	}
	return state ? *state : 0;
}

static bool odp_flush_running(struct roce_odp_srv *sv)
{
	return roce_odp_flush_busy(sv->reg);
}

static bool odp_shutdown_flush_running(struct roce_odp_srv *sv)
{
	return sv->shutdown_rc == 1;
}

int roce_odp_srv_shutdown(struct roce_odp_srv *sv)
{
	uint64_t t0 = clock_now_ns(), deadline = t0 + ODP_SHUTDOWN_TIMEOUT_NS;
	unsigned dirty;
	int rc;

	if (!sv->reg)
		return 0;
	if ((rc = odp_drive_until(sv, NULL, odp_flush_running, deadline)))  /* a console flush first */
		goto out;
	dirty = roce_odp_region_dirty(sv->reg);
	sv->shutdown_rc = 1;
	if ((rc = roce_odp_flush(sv->reg, odp_shutdown_flush_done, sv)))
		goto out;
	rc = odp_drive_until(sv, &sv->shutdown_rc, odp_shutdown_flush_running, deadline);
	if (!rc)
		log_info("rdma odp: %u dirty page(s) written back and flushed in %llu us before the drives shut down",
			 dirty, U((clock_now_ns() - t0) / 1000));
out:
	if (rc)
		log_err("rdma odp: write-back at shutdown failed (%d): the region's last writes may be lost", rc);
	return rc;
}

static void odp_shutdown_hook(enum shutdown_reason why)
{
	(void)why;
	if (odp_srv_running)
		(void)roce_odp_srv_shutdown(odp_srv_running);
}
SHUTDOWN_HOOK(rdma_odp, SHUTDOWN_ORDER_SERVICE, odp_shutdown_hook);

/* --- console and stats ------------------------------------------------------------------ */

static void odp_flush_done(void *arg, int rc)
{
	struct roce_odp_srv *sv = arg;
	sv->last_flush_rc = rc;
	sv->last_flush_ns = clock_now_ns() - sv->flush_started_ns;
	log_info("rdma odp: flush %s in %llu us", rc ? "failed" : "done, contents durable",
		 U(sv->last_flush_ns / 1000));
}

static void odp_show_pool(const struct roce_odp_srv *sv)
{
	const struct roce_odp_stats *st = roce_odp_stats(sv->odp);
	printf("odp pool: %u frames of %u B (host DRAM): resident %u dirty %u pinned %u, store commands in flight %u\n",
	       roce_odp_nframes(sv->odp), ROCE_ODP_PAGE_SIZE, roce_odp_resident(sv->odp), roce_odp_dirty(sv->odp),
	       roce_odp_pinned(sv->odp), roce_odp_inflight(sv->odp));
	printf("  faults %llu (waits %llu, put off %llu) rnr-naks %llu local-waits %llu prefetches %llu\n", U(st->faults),
	       U(st->fault_waits), U(st->no_frame), U(st->rnr_naks), U(st->local_waits), U(st->prefetches));
	printf("  page-ins %llu (%llu B) page-outs %llu (%llu B) write-backs %llu clean-evictions %llu invalidated %llu "
	       "discarded %llu flushes %llu io-errors %llu\n",
	       U(st->pageins), U(st->bytes_in), U(st->pageouts), U(st->bytes_out), U(st->writebacks), U(st->evict_clean),
	       U(st->invalidations), U(st->discarded), U(st->flushes), U(st->io_errors));
	printf("  fault service p50 <= %llu us p99 <= %llu us; histogram (us):", U(roce_odp_hist_quantile(sv->odp, 500)),
	       U(roce_odp_hist_quantile(sv->odp, 990)));
	for (unsigned i = 0; i < ROCE_ODP_HIST; i++)
		if (st->hist[i])
			printf(" <%llu:%llu", U(2ull << i), U(st->hist[i]));
	printf("\n");
}

static void odp_show(const struct roce_odp_srv *sv)
{
	char d[64];
	if (!sv->odp) {
		printf("odp: no region (rdma.odp.region, or `rdma odp reg nvmeXnY SIZE [OFFSET]`)\n");
		return;
	}
	odp_show_pool(sv);
	if (sv->reg) {
		roce_odp_region_describe(sv->reg, d, sizeof(d));
		printf("  region %s: %llu B over %s, resident %u dirty %u, rkey %#x addr %#llx, rdma_cm port %u\n",
		       roce_odp_region_name(sv->reg), U(roce_odp_region_length(sv->reg)), d,
		       roce_odp_region_resident(sv->reg), roce_odp_region_dirty(sv->reg), roce_mr_rkey(sv->mr),
		       U(ROCE_ODP_IOVA), ROCE_ODP_PORT);
	}
	printf("  sessions %llu (refused %llu, closed idle %llu):", U(sv->sessions), U(sv->refused), U(sv->idle_closed));
	for (unsigned i = 0; i < ROCE_ODP_SESSIONS; i++)
		if (sv->s[i].used)
			printf(" qpn %#x", roce_qp_num(sv->s[i].r.qp));
	printf("\n  last flush: %s", sv->last_flush_rc == 1 ? "none" : sv->last_flush_rc ? "failed" : "ok");
	if (sv->last_flush_rc != 1)
		printf(" (%llu us)", U(sv->last_flush_ns / 1000));
	printf("%s\n", sv->reg && roce_odp_flush_busy(sv->reg) ? ", one running" : "");
}

/* The console's pattern, as `nvme write`: byte at region offset o. */
static uint8_t odp_pattern(unsigned seed, uint64_t o)
{
	return (uint8_t)(seed ^ (o * 7) ^ (o >> 9));
}

#define ODP_SYNC_TIMEOUT_NS (60ull * 1000000000ull)

/* Write (fill) or check (verify) the pattern over [off, off + len) through the paging
 * paths, a page at a time, waiting (bounded) for each fault as a requester's retries
 * would: the console's way to drive the pager without a peer. 0, -EIO (mismatch),
 * -ETIMEDOUT, or the access's error. */
static int odp_sync(struct roce_odp_srv *sv, bool fill, uint64_t off, uint64_t len, unsigned seed, uint64_t *bad)
{
	uint64_t deadline = clock_now_ns() + ODP_SYNC_TIMEOUT_NS;

	while (len) {
		uint32_t n = ROCE_ODP_PAGE_SIZE - (uint32_t)(off & (ROCE_ODP_PAGE_SIZE - 1));
		dma_addr_t mem[1];
		uint32_t pl[1];
		unsigned k;
		int rc;
		if (n > len)
			n = (uint32_t)len;
		while ((rc = roce_odp_access(sv->reg, off, n, fill, clock_now_ns(), mem, pl, 1, &k)) == -EAGAIN) {
			if (clock_now_ns() > deadline)
				return -ETIMEDOUT;
			roce_odp_nvme_poll(&sv->nvme);
			roce_odp_poll(sv->odp, clock_now_ns());
		}
		if (rc)
			return rc;
		uint8_t *p = (uint8_t *)(uintptr_t)mem[0].bus;
		for (uint32_t i = 0; i < n; i++) {
			if (fill) {
				p[i] = odp_pattern(seed, off + i);
			} else if (p[i] != odp_pattern(seed, off + i)) {
				*bad = off + i;
				return -EIO;
			}
		}
		dma_account_cpu(MEM_CLASS_HOST, n);
		off += n;
		len -= n;
	}
	return 0;
}

static int odp_range_args(const struct roce_odp_srv *sv, int argc, char **argv, uint64_t *off, uint64_t *len)
{
	if (!sv->reg || argc < 3 || roce_odp_parse_size(argv[1], off) || roce_odp_parse_size(argv[2], len)) {
		printf("usage: rdma odp %s OFF LEN (a region must be set up)\n", argv[0]);
		return -EINVAL;
	}
	return 0;
}

int roce_odp_srv_command(struct roce_odp_srv *sv, int argc, char **argv)
{
	uint64_t off, len;
	int rc;

	if (argc < 2) {
		odp_show(sv);
		return 0;
	}
	if (!strcmp(argv[1], "reg")) {
		char text[128], why[96];
		struct roce_odp_region_cfg c;
		snprintf(text, sizeof(text), "%s %s %s", argc > 2 ? argv[2] : "", argc > 3 ? argv[3] : "",
			 argc > 4 ? argv[4] : "");
		if (argc < 4 || odp_parse_region(text, &c, why, sizeof(why)) || !c.set) {
			printf("usage: rdma odp reg nvmeXnY SIZE [OFFSET]\n");
			return -EINVAL;
		}
		if ((rc = odp_region_up(sv, &c)))
			printf("rdma odp reg: %d\n", rc);
		return rc;
	}
	if (!strcmp(argv[1], "dereg")) {
		if (!sv->reg)
			return -ENOENT;
		odp_region_down(sv);
		printf("region deregistered (dirty pages are being written back)\n");
		return 0;
	}
	if (!strcmp(argv[1], "flush")) {
		if (!sv->reg)
			return -ENOENT;
		sv->flush_started_ns = clock_now_ns();
		if ((rc = roce_odp_flush(sv->reg, odp_flush_done, sv)))
			printf("rdma odp flush: %d\n", rc);
		else
			printf("flush started (dirty %u pages): `rdma odp` shows the outcome\n",
			       roce_odp_region_dirty(sv->reg));
		return rc;
	}
	if (!strcmp(argv[1], "prefetch")) {
		if ((rc = odp_range_args(sv, argc - 1, argv + 1, &off, &len)))
			return rc;
		rc = roce_odp_prefetch(sv->reg, off, len, clock_now_ns());
		printf("prefetch: %d page-ins started\n", rc);
		return rc < 0 ? rc : 0;
	}
	if (!strcmp(argv[1], "fill") || !strcmp(argv[1], "verify")) {
		bool fill = argv[1][0] == 'f';
		uint64_t bad = 0, t0 = clock_now_ns();
		unsigned long seed;
		if (argc < 5 || (rc = odp_range_args(sv, argc - 1, argv + 1, &off, &len)))
			return argc < 5 ? (printf("usage: rdma odp fill|verify OFF LEN SEED\n"), -EINVAL) : rc;
		seed = strtoul(argv[4], NULL, 0);
		if (off > roce_odp_region_length(sv->reg) || len > roce_odp_region_length(sv->reg) - off)
			return -ERANGE;
		rc = odp_sync(sv, fill, off, len, (unsigned)seed, &bad);
		if (rc == -EIO)
			printf("%s: mismatch at %llu\n", argv[1], U(bad));
		else if (rc)
			printf("%s: %d\n", argv[1], rc);
		else
			printf("%s: ok, %llu B in %llu ms\n", argv[1], U(len), U((clock_now_ns() - t0) / 1000000));
		return rc;
	}
	if (!strcmp(argv[1], "invalidate")) {
		if ((rc = odp_range_args(sv, argc - 1, argv + 1, &off, &len)))
			return rc;
		rc = roce_odp_invalidate(sv->reg, off, len);
		printf("invalidate: %d pages dropped\n", rc);
		return rc < 0 ? rc : 0;
	}
	printf("usage: rdma odp [reg nvmeXnY SIZE [OFFSET] | dereg | flush | prefetch OFF LEN | invalidate OFF LEN |\n"
	       "                 fill OFF LEN SEED | verify OFF LEN SEED]\n");
	return -EINVAL;
}

void roce_odp_srv_stats(const struct roce_odp_srv *sv)
{
	if (sv->odp)
		odp_show_pool(sv);
}
