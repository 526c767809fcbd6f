/*
 * roce_odp_srv.h - the appliance's ODP service: the resident pool of rxe0, one region over
 * an NVMe namespace range (from the configuration, `rdma.odp.region`, or the console),
 * registered as an on-demand paged MR, and (while the region is up) an rdma_cm listener on
 * port 7180 whose REP
 * tells a connecting client the region's address, rkey and length (struct
 * roce_odp_rep_priv), so that it can RDMA READ, WRITE and run atomics on it. Sessions are
 * bounded in total and per peer address. The console's `rdma odp` shows and drives it.
 */
#ifndef DRIVERS_RDMA_ROCE_ODP_SRV_H
#define DRIVERS_RDMA_ROCE_ODP_SRV_H

#include <stdint.h>
#include "../../lib/byteorder.h"
#include "roce_app.h"
#include "roce_odp.h"
#include "roce_odp_nvme.h"

#define ROCE_ODP_PORT 7180
#define ROCE_ODP_SESSIONS 4
#define ROCE_ODP_PER_PEER 2
#define ROCE_ODP_IOVA 0x0000200000000000ull  /* where the region's MR starts */
#define ROCE_ODP_MAGIC "ODP1"
#define ROCE_ODP_IDLE_NS (30ull * 1000000000ull)  /* a session whose ePSN stays this long is closed */

/* The REP's private data (big-endian). */
struct roce_odp_rep_priv {
	uint8_t magic[4];            /* ROCE_ODP_MAGIC */
	be32_t rkey;
	be64_t addr;                 /* the region's first byte */
	be64_t length;
	be32_t page_size;
} __attribute__((packed));

struct roce_net;
struct roce_cm_conn;

struct roce_odp_session {
	bool used;
	uint32_t peer;
	struct roce_cm_conn *conn;
	struct roce_conn_res r;      /* CQ and QP (no memory of its own) */
	uint32_t last_epsn;          /* the responder's ePSN when progress was last seen */
	uint64_t last;               /* when: the accept, or the ePSN last advancing */
};

struct roce_odp_srv {
	struct roce_net *rn;
	struct roce_odp *odp;        /* the pool (NULL until a region is set up) */
	struct roce_odp_region *reg;
	struct roce_odp_nvme nvme;
	struct roce_pd *pd;
	struct roce_mr *mr;
	bool listening;
	struct roce_odp_session s[ROCE_ODP_SESSIONS];
	uint64_t sessions, refused, idle_closed;
	int last_flush_rc;           /* 1: none finished yet */
	uint64_t flush_started_ns, last_flush_ns;
	int shutdown_rc;             /* the shutdown flush: 1 while it runs */
};

/* Start: the pool and region of the configuration when it names one. 0 or -errno (the
 * service is then off; the console may still set a region up). */
int roce_odp_srv_start(struct roce_odp_srv *sv, struct roce_net *rn);
/* The pool's background work, and the idle limit: a session whose responder ePSN has not
 * advanced for ROCE_ODP_IDLE_NS (no request completed, RNR NAKs for faults included) is
 * disconnected and freed. Returns >0 when it did something. */
int roce_odp_srv_poll(struct roce_odp_srv *sv, uint64_t now);
/* Write the region's dirty pages back and flush the store, synchronously (driving the NVMe
 * completions and the pool itself, bounded by 20 s): the shutdown hook runs it on power-off,
 * reboot and a panic with `panic = reboot`, before the drives' own flush and shutdown
 * notification (SHUTDOWN_ORDER_SERVICE). 0 (also with no region), -ETIMEDOUT, or the first
 * store error; logged. */
int roce_odp_srv_shutdown(struct roce_odp_srv *sv);
/* `rdma odp [reg DEV SIZE [OFFSET] | dereg | flush | prefetch OFF LEN | invalidate OFF LEN]`. */
int roce_odp_srv_command(struct roce_odp_srv *sv, int argc, char **argv);
/* The `stats` lines. */
void roce_odp_srv_stats(const struct roce_odp_srv *sv);

/* "nvme2n1" -> controller 2, namespace 1. 0 or -EINVAL. */
int roce_odp_parse_dev(const char *text, unsigned *ctrl, uint32_t *nsid);
/* "16M", "4096", "1G" (K/M/G: 2^10, 2^20, 2^30) -> bytes. 0 or -EINVAL. */
int roce_odp_parse_size(const char *text, uint64_t *out);

#endif
