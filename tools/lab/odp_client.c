/*
 * tools/lab/odp_client.c - the ODP test client of tests/lab/odp_tests.py, run inside the Linux
 * rxe guest (built on the host against Debian's libibverbs and librdmacm, copied in).
 *
 *   odp_client ADDR PORT MODE SEED
 *   odp_client ADDR PORT serve SIZE
 *
 * Connects with rdma_cm (RC, port space TCP) to the appliance's ODP service; the REP's private
 * data names the region: "ODP1", rkey (be32), address (be64), length (be64), page size (be32).
 * Byte o of the region is expected to hold (SEED ^ (o * 7) ^ (o >> 9)) & 0xff (the appliance
 * console's `rdma odp fill` pattern). MODE:
 *   write   RDMA WRITE the pattern over the whole region, 4 KiB per WR (ODP_DEPTH in flight,
 *           1..8, default 1)
 *   read    RDMA READ the whole region back, 4 KiB per WR, and compare every byte
 *   atomic  on one 8-byte word of every 32nd page: Fetch&Add 1 (the original must be the
 *           pattern's word), Compare&Swap to a marker (original: word + 1), READ it (the marker),
 *           Compare&Swap back to the pattern's word: the region ends as it began
 *   random  ODP_OPS (default 1000) random 4 KiB RDMA READs or WRITEs (half each, 4 KiB
 *           aligned) over the first ODP_SET bytes of the region (default all of it); a WRITE
 *           writes the pattern's bytes, so the region keeps the pattern (a benchmark)
 * ODP_STRIDE (a multiple of 4 KiB dividing the region's length; default 4 KiB) makes write, read
 * and atomic touch one 4 KiB page every ODP_STRIDE bytes: a region larger than this guest's
 * memory is covered end to end while the local buffer holds only the pages touched.
 * serve (the benchmark's peer, in a second Linux rxe guest): listens with rdma_cm on ADDR PORT
 * and answers every connection as the appliance does (the same REP private data) over an
 * ordinary, pinned MR of SIZE bytes (remote READ, WRITE and atomics; zeroed at start), one
 * session at a time, until killed.
 * Every client wait has a deadline; any error completion, mismatch or timeout exits 1. The last line is
 * "ODP-CLIENT-OK MODE ..." with the bytes moved and the time taken.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <netdb.h>
#include <poll.h>
#include <rdma/rdma_cma.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHUNK 4096u
#define DEPTH_MAX 8u
#define TIMEOUT_MS 30000

struct odp_priv {
	char magic[4];
	uint32_t rkey, addr_hi, addr_lo, len_hi, len_lo, page_size;
} __attribute__((packed));

static struct rdma_event_channel *ch;
static struct rdma_cm_id *id;
static struct ibv_comp_channel *cc;
static struct ibv_cq *cq;
static struct ibv_mr *mr;
static uint8_t *buf;
static uint64_t raddr, rlen;
static uint64_t stride = CHUNK, lpages;  /* one 4 KiB page every stride bytes; lpages of them */
static uint32_t rkey;
static unsigned seed, depth = 1;

static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static void die(const char *what)
{
	fprintf(stderr, "odp_client: %s (%s)\n", what, strerror(errno));
	exit(1);
}

static uint8_t pat(uint64_t o)
{
	return (uint8_t)(seed ^ (o * 7) ^ (o >> 9));
}

static uint64_t pat_word(uint64_t o)
{
	uint8_t b[8];
	uint64_t v;
	for (unsigned i = 0; i < 8; i++)
		b[i] = pat(o + i);
	memcpy(&v, b, 8);  /* the appliance (x86_64) and this guest are little-endian */
	return v;
}

/* The region offset of byte l of the local buffer (page l / 4 KiB of the pages touched). */
static uint64_t roff(uint64_t l)
{
	return l / CHUNK * stride + l % CHUNK;
}

/* The pattern's byte for byte l of the local buffer. */
static uint8_t lpat(uint64_t l)
{
	return pat(roff(l));
}

static struct rdma_cm_event *cm_wait(enum rdma_cm_event_type want)
{
	struct pollfd p = { .fd = ch->fd, .events = POLLIN };
	struct rdma_cm_event *ev;
	if (poll(&p, 1, TIMEOUT_MS) != 1)
		die("timed out waiting for a CM event");
	if (rdma_get_cm_event(ch, &ev))
		die("rdma_get_cm_event");
	if (ev->event != want) {
		fprintf(stderr, "odp_client: CM event %s (status %d), wanted %s\n", rdma_event_str(ev->event),
			ev->status, rdma_event_str(want));
		exit(1);
	}
	return ev;
}

/* Wait for n completions; every one must be a success. */
static void wait_wc(unsigned n, struct ibv_wc *out)
{
	double deadline = now_ms() + TIMEOUT_MS;
	while (n) {
		struct ibv_wc wc[DEPTH_MAX];
		int k = ibv_poll_cq(cq, DEPTH_MAX, wc);
		if (k < 0)
			die("ibv_poll_cq");
		if (k == 0) {
			struct pollfd p = { .fd = cc->fd, .events = POLLIN };
			struct ibv_cq *ecq;
			void *ctx;
			if (ibv_req_notify_cq(cq, 0))
				die("ibv_req_notify_cq");
			if ((k = ibv_poll_cq(cq, DEPTH_MAX, wc)) == 0) {
				if (now_ms() > deadline || poll(&p, 1, 1000) < 0)
					die("timed out waiting for completions");
				if (p.revents & POLLIN) {
					if (ibv_get_cq_event(cc, &ecq, &ctx))
						die("ibv_get_cq_event");
					ibv_ack_cq_events(ecq, 1);
				}
				continue;
			}
			if (k < 0)
				die("ibv_poll_cq");
		}
		for (int i = 0; i < k; i++) {
			if (wc[i].status != IBV_WC_SUCCESS) {
				fprintf(stderr, "odp_client: wr %llu: %s\n", (unsigned long long)wc[i].wr_id,
					ibv_wc_status_str(wc[i].status));
				exit(1);
			}
			if (out)
				*out = wc[i];
		}
		n -= (unsigned)k;
	}
}

static void post(enum ibv_wr_opcode op, uint64_t laddr, uint32_t len, uint64_t remote, uint64_t cmp_add,
		 uint64_t swap)
{
	struct ibv_sge sge = { .addr = laddr, .length = len, .lkey = mr->lkey };
	struct ibv_send_wr wr = { .wr_id = remote, .sg_list = &sge, .num_sge = 1, .opcode = op,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	if (op == IBV_WR_ATOMIC_FETCH_AND_ADD || op == IBV_WR_ATOMIC_CMP_AND_SWP) {
		wr.wr.atomic.remote_addr = remote;
		wr.wr.atomic.rkey = rkey;
		wr.wr.atomic.compare_add = cmp_add;
		wr.wr.atomic.swap = swap;
	} else {
		wr.wr.rdma.remote_addr = remote;
		wr.wr.rdma.rkey = rkey;
	}
	if (ibv_post_send(id->qp, &wr, &bad))
		die("ibv_post_send");
}

/* WRITE (from buf) or READ (into buf) the whole region, DEPTH chunks in flight. */
static void stream(enum ibv_wr_opcode op)
{
	uint64_t posted = 0, done = 0, nchunks = lpages;
	while (done < nchunks) {
		while (posted < nchunks && posted - done < depth) {
			post(op, (uintptr_t)buf + posted * CHUNK, CHUNK, raddr + posted * stride, 0, 0);
			posted++;
		}
		wait_wc(1, NULL);
		done++;
	}
}

static void connect_to(const char *addr, const char *port)
{
	struct addrinfo *ai;
	struct rdma_cm_event *ev;
	struct ibv_qp_init_attr qa = { .cap = { .max_send_wr = DEPTH_MAX * 2, .max_recv_wr = 1, .max_send_sge = 1,
					       .max_recv_sge = 1 },
				       .qp_type = IBV_QPT_RC };
	struct rdma_conn_param cp = { .initiator_depth = 4, .responder_resources = 4, .retry_count = 7,
				      .rnr_retry_count = 7 };
	struct odp_priv pv;

	if (!(ch = rdma_create_event_channel()) || rdma_create_id(ch, &id, NULL, RDMA_PS_TCP))
		die("rdma_create_id");
	if (getaddrinfo(addr, port, NULL, &ai))
		die("getaddrinfo");
	if (rdma_resolve_addr(id, NULL, ai->ai_addr, 5000))
		die("rdma_resolve_addr");
	freeaddrinfo(ai);
	rdma_ack_cm_event(cm_wait(RDMA_CM_EVENT_ADDR_RESOLVED));
	if (rdma_resolve_route(id, 5000))
		die("rdma_resolve_route");
	rdma_ack_cm_event(cm_wait(RDMA_CM_EVENT_ROUTE_RESOLVED));
	if (!(cc = ibv_create_comp_channel(id->verbs)) || !(cq = ibv_create_cq(id->verbs, DEPTH_MAX * 4, NULL, cc, 0)))
		die("ibv_create_cq");
	qa.send_cq = qa.recv_cq = cq;
	if (rdma_create_qp(id, NULL, &qa))
		die("rdma_create_qp");
	if (rdma_connect(id, &cp))
		die("rdma_connect");
	ev = cm_wait(RDMA_CM_EVENT_ESTABLISHED);
	if (ev->param.conn.private_data_len < sizeof(pv) || !ev->param.conn.private_data)
		die("no region description in the REP");
	memcpy(&pv, ev->param.conn.private_data, sizeof(pv));
	rdma_ack_cm_event(ev);
	if (memcmp(pv.magic, "ODP1", 4))
		die("the REP's private data is not ODP1");
	rkey = ntohl(pv.rkey);
	raddr = (uint64_t)ntohl(pv.addr_hi) << 32 | ntohl(pv.addr_lo);
	rlen = (uint64_t)ntohl(pv.len_hi) << 32 | ntohl(pv.len_lo);
	if (!rlen || rlen % CHUNK || stride % CHUNK || rlen % stride || rlen / stride * CHUNK > (1ull << 30))
		die("region length (or an ODP_STRIDE that does not divide it)");
	lpages = rlen / stride;
	printf("region: %llu B at %#llx rkey %#x page %u\n", (unsigned long long)rlen, (unsigned long long)raddr, rkey,
	       ntohl(pv.page_size));
	if (!(buf = aligned_alloc(4096, lpages * CHUNK + 4096)))
		die("malloc");
	if (!(mr = ibv_reg_mr(id->pd, buf, lpages * CHUNK + 4096, IBV_ACCESS_LOCAL_WRITE)))
		die("ibv_reg_mr");
}

/* The serve mode: a pinned MR of size bytes behind the appliance's REP format. */
_Noreturn static void serve(const char *addr, const char *port, uint64_t size)
{
	struct addrinfo *ai;
	struct rdma_cm_id *lid;
	struct ibv_pd *pd;
	struct ibv_qp_init_attr qa = { .cap = { .max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1,
					       .max_recv_sge = 1 },
				       .qp_type = IBV_QPT_RC };
	struct odp_priv pv = { .magic = "ODP1" };
	struct rdma_conn_param cp = { .initiator_depth = 4, .responder_resources = 4, .rnr_retry_count = 7,
				      .private_data = &pv, .private_data_len = sizeof(pv) };

	if (!size || size % CHUNK || size > (1ull << 30))
		die("serve: SIZE in whole 4 KiB pages, at most 1 GiB");
	if (!(ch = rdma_create_event_channel()) || rdma_create_id(ch, &lid, NULL, RDMA_PS_TCP))
		die("rdma_create_id");
	if (getaddrinfo(addr, port, NULL, &ai) || rdma_bind_addr(lid, ai->ai_addr) || rdma_listen(lid, 2))
		die("serve: bind/listen");
	freeaddrinfo(ai);
	if (!lid->verbs || !(pd = ibv_alloc_pd(lid->verbs)))
		die("serve: no RDMA device on that address");
	if (!(buf = aligned_alloc(4096, size)))
		die("malloc");
	memset(buf, 0, size);
	if (!(mr = ibv_reg_mr(pd, buf, size, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
			      IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)))
		die("ibv_reg_mr");
	pv.rkey = htonl(mr->rkey);
	pv.addr_hi = htonl((uint32_t)((uintptr_t)buf >> 32));
	pv.addr_lo = htonl((uint32_t)(uintptr_t)buf);
	pv.len_hi = htonl((uint32_t)(size >> 32));
	pv.len_lo = htonl((uint32_t)size);
	pv.page_size = htonl(CHUNK);
	printf("serving %llu B at %p rkey %#x\n", (unsigned long long)size, (void *)buf, mr->rkey);
	fflush(stdout);
	for (;;) {
		struct rdma_cm_event *ev;
		struct rdma_cm_id *cid;
		if (rdma_get_cm_event(ch, &ev))
			die("rdma_get_cm_event");
		cid = ev->id;
		if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
			struct ibv_cq *scq = ibv_create_cq(cid->verbs, 4, NULL, NULL, 0);
			qa.send_cq = qa.recv_cq = scq;
			cid->context = scq;
			if (!scq || rdma_create_qp(cid, pd, &qa) || rdma_accept(cid, &cp)) {
				fprintf(stderr, "odp_client: serve: refusing a connection (%s)\n", strerror(errno));
				rdma_reject(cid, NULL, 0);
				rdma_ack_cm_event(ev);
				if (cid->qp)
					rdma_destroy_qp(cid);
				if (scq)
					ibv_destroy_cq(scq);
				rdma_destroy_id(cid);
				continue;
			}
		} else if (ev->event == RDMA_CM_EVENT_DISCONNECTED) {
			rdma_ack_cm_event(ev);
			rdma_destroy_qp(cid);
			if (cid->context)
				ibv_destroy_cq(cid->context);
			rdma_destroy_id(cid);
			continue;
		}
		rdma_ack_cm_event(ev);
	}
}

int main(int argc, char **argv)
{
	double t0;
	const char *mode;

	if (argc != 5) {
		fprintf(stderr, "usage: odp_client ADDR PORT write|read|atomic|random SEED | ADDR PORT serve SIZE\n");
		return 2;
	}
	mode = argv[3];
	if (!strcmp(mode, "serve"))
		serve(argv[1], argv[2], strtoull(argv[4], NULL, 0));
	seed = (unsigned)strtoul(argv[4], NULL, 0);
	if (getenv("ODP_DEPTH"))
		depth = (unsigned)strtoul(getenv("ODP_DEPTH"), NULL, 0);
	if (depth < 1 || depth > DEPTH_MAX)
		depth = 1;
	if (getenv("ODP_STRIDE"))
		stride = strtoull(getenv("ODP_STRIDE"), NULL, 0);
	if (!stride || (stride != CHUNK && !strcmp(mode, "random"))) {
		fprintf(stderr, "odp_client: ODP_STRIDE must be a multiple of 4096 (random: 4096)\n");
		return 2;
	}
	connect_to(argv[1], argv[2]);
	t0 = now_ms();
	if (!strcmp(mode, "write")) {
		for (uint64_t l = 0; l < lpages * CHUNK; l++)
			buf[l] = lpat(l);
		stream(IBV_WR_RDMA_WRITE);
	} else if (!strcmp(mode, "read")) {
		memset(buf, 0, lpages * CHUNK);
		stream(IBV_WR_RDMA_READ);
		for (uint64_t l = 0; l < lpages * CHUNK; l++)
			if (buf[l] != lpat(l)) {
				fprintf(stderr, "odp_client: mismatch at %llu: %#x, want %#x\n", (unsigned long long)roff(l),
					buf[l], lpat(l));
				return 1;
			}
	} else if (!strcmp(mode, "atomic")) {
		uint64_t *res = (uint64_t *)(buf + lpages * CHUNK);
		unsigned n = 0;
		for (uint64_t pg = 0; pg < lpages; pg += 32, n++) {
			uint64_t o = pg * stride + 8 * (pg % 64), want = pat_word(o), mark = 0x0DD0C0FFEE000000ull | pg;
			post(IBV_WR_ATOMIC_FETCH_AND_ADD, (uintptr_t)res, 8, raddr + o, 1, 0);
			wait_wc(1, NULL);
			if (*res != want) {
				fprintf(stderr, "odp_client: F&A at %llu: original %#llx, want %#llx\n", (unsigned long long)o,
					(unsigned long long)*res, (unsigned long long)want);
				return 1;
			}
			post(IBV_WR_ATOMIC_CMP_AND_SWP, (uintptr_t)res, 8, raddr + o, want + 1, mark);
			wait_wc(1, NULL);
			if (*res != want + 1)
				die("C&S did not see the F&A's result");
			post(IBV_WR_RDMA_READ, (uintptr_t)res, 8, raddr + o, 0, 0);
			wait_wc(1, NULL);
			if (*res != mark)
				die("READ after C&S");
			post(IBV_WR_ATOMIC_CMP_AND_SWP, (uintptr_t)res, 8, raddr + o, mark, want);
			wait_wc(1, NULL);
			if (*res != mark)
				die("C&S back");
		}
		printf("atomics: %u words, 4 operations each\n", n);
	} else if (!strcmp(mode, "random")) {
		uint64_t ops = getenv("ODP_OPS") ? strtoull(getenv("ODP_OPS"), NULL, 0) : 1000;
		uint64_t set = getenv("ODP_SET") ? strtoull(getenv("ODP_SET"), NULL, 0) : rlen;
		uint64_t x = 0x9E3779B97F4A7C15ull ^ seed, pages;
		if (set < CHUNK || set > rlen)
			set = rlen;
		pages = set / CHUNK;
		for (uint64_t o = 0; o < rlen; o++)
			buf[o] = pat(o);
		for (uint64_t k = 0; k < ops; k++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			uint64_t pg = (x >> 11) % pages;
			post((x & 1) ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_READ, (uintptr_t)buf + pg * CHUNK, CHUNK,
			     raddr + pg * CHUNK, 0, 0);
			wait_wc(1, NULL);
		}
		for (uint64_t o = 0; o < set; o++)
			if (buf[o] != pat(o))
				die("random: a READ returned bytes that differ from the pattern");
		rlen = ops * CHUNK;  /* payload moved, for the summary line */
	} else {
		fprintf(stderr, "odp_client: unknown mode %s\n", mode);
		return 2;
	}
	double ms = now_ms() - t0;
	if (strcmp(mode, "random"))
		rlen = lpages * CHUNK;  /* payload moved */
	printf("ODP-CLIENT-OK %s %llu B in %.0f ms (%.2f MB/s)\n", mode, (unsigned long long)rlen, ms,
	       rlen / 1e3 / (ms > 0 ? ms : 1));
	rdma_disconnect(id);
	return 0;
}
