/*
 * tcp.c - the NVMe/TCP transport: see tcp.h for the connection state machine.
 *
 * Ownership: received PDU data fragments belong to the command that carries them until
 * the core completed it (then they go back to the NIC); DRAM data buffers (data the core
 * produces for the host) belong to the command until its C2HData is queued (tcp_send_copy
 * copies). A connection is freed only when no command of it is left at the core, so a
 * late done callback always finds its connection.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include "../../../lib/crc32.h"
#include "../../../lib/list.h"
#include "../../../lib/log.h"
#include "../../../lib/poller.h"
#include "../../../mm/pool.h"
#include "../../../net/tcp/tcp.h"
#include "nvmet.h"
#include "tcp.h"
#include "tcp_rx.h"

LOG_MODULE_USE(nvmet);

enum nvmet_tcp_req_state {
	NVMET_TCP_REQ_FREE = 0,
	NVMET_TCP_REQ_R2T,       /* a write waiting for its data: R2T (to be) sent, H2CData coming */
	NVMET_TCP_REQ_EXEC,      /* at the core (nvmet_exec .. done) */
	NVMET_TCP_REQ_TX,        /* completed, waiting in the TX backlog */
};

struct nvmet_tcp_conn;

/* One command of a connection. */
struct nvmet_tcp_req {
	struct nvmet_req req;            /* first: the core's view */
	struct nvmet_tcp_conn *conn;
	uint8_t state;                   /* enum nvmet_tcp_req_state */
	uint16_t cccid;
	unsigned nfrags;                 /* received data fragments held (in-capsule) */
	struct netdev_frag frags[NVMET_TCP_REQ_SEGS];
	unsigned nbufs;                  /* DRAM data chunks held */
	void *bufs[NVMET_TCP_REQ_SEGS];
	struct nvme_sg sg[NVMET_TCP_REQ_SEGS];
	uint32_t tx_off;                 /* data bytes already queued as C2HData */
	struct nvme_sqe wsqe;            /* R2T: the write's SQE until its data is in */
	uint32_t r2t_len, h2c_rcvd;      /* R2T: bytes asked for, bytes received (in order) */
	bool r2t_sent;                   /* R2T: the R2T PDU is out */
	bool gathered;                   /* R2T: the data is being copied into DRAM chunks */
	struct list_node tx_node;        /* in conn->tx_backlog while TX */
};

struct nvmet_tcp_conn {
	struct list_node node;           /* in nvmet_tcp.conns */
	enum nvmet_tcp_conn_state state;
	unsigned port;                   /* nvmet port index */
	struct tcp_sock *sock;           /* NULL once closed */
	struct nvmet_queue *q;           /* NULL before ICReq and once destroyed */
	struct nvme_tcp_params params;
	struct nvme_tcp_rx rx;
	bool kill_pending;               /* the core asked for a close */
	int kill_reason;
	bool in_rx;                      /* inside conn_recv (no re-entry) */
	unsigned inflight;               /* requests in EXEC */
	unsigned nfree;
	struct list_node tx_backlog;     /* requests in TX, completion order */
	struct nvmet_tcp_req reqs[NVMET_TCP_QUEUE_DEPTH];
};

struct nvmet_tcp_listener {
	struct tcp_sock *sock;
	unsigned port;                   /* nvmet port index */
	uint16_t tcp_port;
};

static struct {
	bool running;
	const struct nvmet_tcp_sock_ops *sops;
	struct mm_pool conn_pool;
	struct mm_pool buf_pool;
	struct list_node conns;
	unsigned nconns;
	unsigned nlisteners;
	struct nvmet_tcp_listener listeners[NVMET_TCP_MAX_LISTENERS];
	struct nvmet_tcp_stats st;
} nvmet_tcp;

static const char *const conn_state_names[NVMET_TCP_CONN_STATE_COUNT] = {
	[NVMET_TCP_WAIT_ICREQ] = "wait-icreq",
	[NVMET_TCP_ESTABLISHED] = "established",
	[NVMET_TCP_FAILED] = "failed",
	[NVMET_TCP_CLOSING] = "closing",
};

/* Name of a connection state. */
const char *nvmet_tcp_conn_state_name(enum nvmet_tcp_conn_state s)
{
	return (unsigned)s < NVMET_TCP_CONN_STATE_COUNT ? conn_state_names[s] : "?";
}

static void set_state(struct nvmet_tcp_conn *c, enum nvmet_tcp_conn_state s)
{
	if (c->state == s)
		return;
	log_debug("tcp conn %p: %s -> %s", (void *)c, nvmet_tcp_conn_state_name(c->state),
		  nvmet_tcp_conn_state_name(s));
	c->state = s;
}

static void queue_kill(void *tctx, int reason);

static const struct nvmet_transport_ops nvmet_tcp_ops = {
	.name = "tcp",
	.trtype = NVMET_TRTYPE_TCP,
	.max_queue_size = NVMET_TCP_QUEUE_DEPTH,
	.in_capsule_data = NVMET_TCP_IN_CAPSULE,
	.msdbd = 1,
	.sgls_extra = 0,
	.max_xfer = NVMET_TCP_MAX_XFER,
	.queue_kill = queue_kill,
};

/* --- requests --- */

static struct nvmet_tcp_req *req_get(struct nvmet_tcp_conn *c)
{
	for (unsigned i = 0; i < NVMET_TCP_QUEUE_DEPTH; i++) {
		struct nvmet_tcp_req *r = &c->reqs[i];
		if (r->state == NVMET_TCP_REQ_FREE) {
			r->nfrags = 0;
			r->nbufs = 0;
			r->tx_off = 0;
			r->r2t_len = r->h2c_rcvd = 0;
			r->r2t_sent = r->gathered = false;
			c->nfree--;
			return r;
		}
	}
	return NULL;
}

/* Give back everything r holds and make it free. */
static void req_put(struct nvmet_tcp_req *r)
{
	for (unsigned i = 0; i < r->nfrags; i++)
		netdev_frag_release(&r->frags[i]);
	for (unsigned i = 0; i < r->nbufs; i++)
		mm_pool_free(&nvmet_tcp.buf_pool, r->bufs[i]);
	r->nfrags = 0;
	r->nbufs = 0;
	r->state = NVMET_TCP_REQ_FREE;
	r->conn->nfree++;
}

/* --- sending --- */

/* Queue len bytes on the socket: all or -ENOBUFS/-EPIPE (callers checked the space). */
static int conn_send(struct nvmet_tcp_conn *c, const void *buf, size_t len)
{
	long n = nvmet_tcp.sops->send_copy(c->sock, buf, len);
	if (n < 0)
		return (int)n;
	return (size_t)n == len ? 0 : -ENOBUFS;
}

/*
 * Send the backlog head first: C2HData PDUs (one per DRAM chunk) then the CapsuleResp,
 * each only when the socket has room for the whole PDU. Returns PDUs sent, or a
 * negative errno (the connection must be closed).
 */
static int conn_send_r2ts(struct nvmet_tcp_conn *c);

static int conn_tx(struct nvmet_tcp_conn *c)
{
	uint8_t hdr[NVME_TCP_MAX_HEADER];
	int sent = 0, rc;

	if (!c->sock)
		return 0;
	if ((rc = conn_send_r2ts(c)) < 0)
		return rc;
	sent += rc;
	while (!list_empty(&c->tx_backlog)) {
		struct nvmet_tcp_req *r = container_of(c->tx_backlog.next, struct nvmet_tcp_req, tx_node);
		size_t space = nvmet_tcp.sops->send_space(c->sock);
		if (r->tx_off < r->req.xfer_len) {
			unsigned chunk = r->tx_off / NVMET_TCP_BUF_SIZE;
			uint32_t in = r->tx_off % NVMET_TCP_BUF_SIZE;
			uint32_t n = NVMET_TCP_BUF_SIZE - in;
			if (n > r->req.xfer_len - r->tx_off)
				n = r->req.xfer_len - r->tx_off;
			bool last = r->tx_off + n == r->req.xfer_len;
			size_t hl = nvme_tcp_build_c2h_data(hdr, &c->params, r->cccid, r->tx_off, n, last, false);
			size_t need = hl + n + (c->params.ddgst ? NVME_TCP_DIGEST_LEN : 0);
			if (space < need) {
				nvmet_tcp.st.tx_waits++;
				break;
			}
			const uint8_t *data = (const uint8_t *)r->bufs[chunk] + in;
			if ((rc = conn_send(c, hdr, hl)) || (rc = conn_send(c, data, n)))
				return rc;
			if (c->params.ddgst) {
				uint32_t crc = crc32c(0, data, n);
				uint8_t d[4] = { (uint8_t)crc, (uint8_t)(crc >> 8), (uint8_t)(crc >> 16),
						 (uint8_t)(crc >> 24) };
				if ((rc = conn_send(c, d, sizeof(d))))
					return rc;
			}
			r->tx_off += n;
			nvmet_tcp.st.c2h_pdus++;
			nvmet_tcp.st.c2h_bytes += n;
			sent++;
			continue;
		}
		size_t hl = nvme_tcp_build_capsule_resp(hdr, &c->params, (const uint8_t *)&r->req.cqe);
		if (space < hl) {
			nvmet_tcp.st.tx_waits++;
			break;
		}
		if ((rc = conn_send(c, hdr, hl)))
			return rc;
		nvmet_tcp.st.responses++;
		list_del(&r->tx_node);
		req_put(r);
		sent++;
	}
	if (sent)
		nvmet_tcp.sops->flush(c->sock);
	return sent;
}

/* --- closing --- */

/* Drop the backlog (the peer is gone). */
static void conn_drop_backlog(struct nvmet_tcp_conn *c)
{
	while (!list_empty(&c->tx_backlog)) {
		struct nvmet_tcp_req *r = container_of(c->tx_backlog.next, struct nvmet_tcp_req, tx_node);
		list_del(&r->tx_node);
		req_put(r);
	}
}

/* Give back every fragment still queued on the socket, so that a close after a
 * termination request ends in a FIN (the TermReq delivered), not a RST. */
static void conn_drain(struct nvmet_tcp_conn *c)
{
	struct netdev_frag f[NVMET_TCP_RX_BATCH];
	int n;
	while ((n = nvmet_tcp.sops->recv_frags(c->sock, f, NVMET_TCP_RX_BATCH, SIZE_MAX)) > 0)
		for (int i = 0; i < n; i++)
			netdev_frag_release(&f[i]);
}

/*
 * End the connection: the state becomes to (FAILED or CLOSING), the socket is closed
 * (gracefully when graceful), the framing state released, the queue destroyed (held AERs
 * complete inside) and the backlog dropped. Idempotent; the memory stays until the poll
 * loop sees no command left.
 */
static void conn_close(struct nvmet_tcp_conn *c, enum nvmet_tcp_conn_state to, bool graceful, const char *why)
{
	if (c->state == NVMET_TCP_FAILED || c->state == NVMET_TCP_CLOSING)
		return;
	log_debug("tcp conn %p: close (%s)", (void *)c, why);
	set_state(c, to);
	nvmet_tcp.st.closed++;
	if (c->sock) {
		struct tcp_sock *s = c->sock;
		if (graceful) {
			conn_drain(c);
			nvmet_tcp.sops->flush(s);
		}
		c->sock = NULL;
		if (graceful)
			nvmet_tcp.sops->close(s);
		else
			nvmet_tcp.sops->abort(s);
	}
	if (!c->in_rx)
		nvme_tcp_rx_reset(&c->rx);
	if (c->q) {
		struct nvmet_queue *q = c->q;
		c->q = NULL;
		nvmet_queue_destroy(q);
	}
	conn_drop_backlog(c);
	for (unsigned i = 0; i < NVMET_TCP_QUEUE_DEPTH; i++)
		if (c->reqs[i].state == NVMET_TCP_REQ_R2T)
			req_put(&c->reqs[i]); /* writes that never got their data */
}

/* A protocol error: C2HTermReq quoting the offending header, then close. */
static void conn_fail(struct nvmet_tcp_conn *c, uint16_t fes, uint32_t fei, const uint8_t *hdr, size_t hdr_len,
		      const char *what)
{
	uint8_t buf[NVME_TCP_TERM_HLEN + NVME_TCP_TERM_MAX_DATA];
	if (c->state == NVMET_TCP_FAILED || c->state == NVMET_TCP_CLOSING)
		return;
	log_warn("tcp: port %u: protocol error (%s): C2HTermReq FES %u FEI %u", c->port, what ? what : "?", fes, fei);
	if (c->sock) {
		size_t len = nvme_tcp_build_c2h_term_req(buf, fes, fei, hdr, hdr_len);
		if (nvmet_tcp.sops->send_space(c->sock) >= len && conn_send(c, buf, len) == 0)
			nvmet_tcp.st.term_sent++;
	}
	conn_close(c, NVMET_TCP_FAILED, true, what);
}

static void conn_free(struct nvmet_tcp_conn *c)
{
	list_del(&c->node);
	nvmet_tcp.nconns--;
	nvmet_tcp.st.freed++;
	mm_pool_free(&nvmet_tcp.conn_pool, c);
}

/* The core killed the controller: close from the poll loop, not inside this call. */
static void queue_kill(void *tctx, int reason)
{
	struct nvmet_tcp_conn *c = tctx;
	c->kill_pending = true;
	c->kill_reason = reason;
	nvmet_tcp.st.kills++;
}

/* --- commands --- */

/* Release a PDU's data fragments (PDUs whose data we do not keep). */
static void pdu_release(struct nvme_tcp_rx_pdu *pdu)
{
	for (unsigned i = 0; i < pdu->nfrags; i++)
		netdev_frag_release(&pdu->frags[i]);
	pdu->nfrags = 0;
}

static void req_done(struct nvmet_req *req, void *arg)
{
	struct nvmet_tcp_req *r = arg;
	struct nvmet_tcp_conn *c = r->conn;
	(void)req;

	c->inflight--;
	/* received data is no longer needed: the NIC buffers go back now */
	for (unsigned i = 0; i < r->nfrags; i++)
		netdev_frag_release(&r->frags[i]);
	r->nfrags = 0;
	if (c->state != NVMET_TCP_ESTABLISHED || !c->sock) {
		req_put(r);
		return;
	}
	if (r->req.xfer_len > (uint32_t)r->nbufs * NVMET_TCP_BUF_SIZE)
		r->req.xfer_len = (uint32_t)r->nbufs * NVMET_TCP_BUF_SIZE; /* never past our buffers */
	r->state = NVMET_TCP_REQ_TX;
	list_add_tail(&c->tx_backlog, &r->tx_node);
	if (!c->in_rx && conn_tx(c) < 0)
		conn_close(c, NVMET_TCP_CLOSING, false, "send failed");
}

/* DRAM chunks for len bytes the core will produce; -ENOMEM when the pool is short. */
static int req_alloc_bufs(struct nvmet_tcp_req *r, uint32_t len)
{
	unsigned n = (len + NVMET_TCP_BUF_SIZE - 1) / NVMET_TCP_BUF_SIZE;
	if (n > NVMET_TCP_REQ_SEGS)
		return -E2BIG;
	for (unsigned i = 0; i < n; i++) {
		void *b = mm_pool_alloc(&nvmet_tcp.buf_pool);
		if (!b) {
			nvmet_tcp.st.no_bufs++;
			return -ENOMEM;
		}
		r->bufs[r->nbufs++] = b;
		uint32_t seg = len - i * NVMET_TCP_BUF_SIZE;
		r->sg[i].addr = dma_addr_host(b);
		r->sg[i].len = seg < NVMET_TCP_BUF_SIZE ? seg : NVMET_TCP_BUF_SIZE;
	}
	return 0;
}

/* Copy the PDU's data into DRAM chunks and give the fragments back. */
static int req_gather(struct nvmet_tcp_req *r, struct nvme_tcp_rx_pdu *pdu)
{
	int rc = req_alloc_bufs(r, pdu->hdr.data_len);
	uint32_t off = 0;
	for (unsigned i = 0; i < pdu->nfrags; i++) {
		for (uint32_t done = 0; !rc && done < pdu->frags[i].len;) {
			uint32_t in = off % NVMET_TCP_BUF_SIZE;
			uint32_t n = NVMET_TCP_BUF_SIZE - in;
			if (n > pdu->frags[i].len - done)
				n = pdu->frags[i].len - done;
			rc = netdev_frag_read(&pdu->frags[i], done, (uint8_t *)r->bufs[off / NVMET_TCP_BUF_SIZE] + in, n);
			done += n;
			off += n;
		}
	}
	pdu_release(pdu);
	nvmet_tcp.st.gathers++;
	return rc;
}

/*
 * A CapsuleCmd: take a request (the host keeps within the queue depth, so running out
 * is its protocol error), resolve the data (in-capsule fragments for host-to-controller
 * data, DRAM chunks for controller-to-host data) and run it. A command whose data the
 * transport cannot place runs with no segments: the core completes it with SGL Length
 * Invalid (one place for NVMe status).
 */
static int conn_capsule(struct nvmet_tcp_conn *c, struct nvme_tcp_rx_pdu *pdu)
{
	struct nvme_sqe sqe;
	struct nvmet_data d = { 0 };
	struct nvmet_tcp_req *r;

	memcpy(&sqe, pdu->hdr.u.cmd.sqe, sizeof(sqe));
	nvmet_tcp.st.capsules++;
	if (!(r = req_get(c))) {
		pdu_release(pdu);
		log_warn("tcp: port %u: host exceeded the queue depth %u", c->port, NVMET_TCP_QUEUE_DEPTH);
		return -ENOSPC;
	}
	r->cccid = (uint16_t)(sqe.cdw0 >> NVME_SQE_CID_SHIFT);
	uint32_t len = nvmet_req_data_len(&sqe);
	enum dma_dir dir = nvmet_req_dir(c->q, &sqe);
	bool refuse = false;
	d.sg = r->sg;
	d.len = len;
	if (pdu->nfrags && dir != DMA_TO_DEVICE) {
		/* data for a command that has none to receive */
		pdu_release(pdu);
		refuse = true;
	} else if (pdu->nfrags > NVMET_TCP_REQ_SEGS) {
		/* more pieces than a command takes: gather them into DRAM (counted copies) */
		if (req_gather(r, pdu) == 0)
			d.nsg = r->nbufs;
		else
			refuse = true;
	} else if (pdu->nfrags) {
		for (unsigned i = 0; i < pdu->nfrags; i++) {
			r->frags[i] = pdu->frags[i];
			r->sg[i].addr = pdu->frags[i].addr;
			r->sg[i].len = pdu->frags[i].len;
		}
		r->nfrags = pdu->nfrags;
		d.nsg = pdu->nfrags;
		pdu->nfrags = 0;
	} else if (len && dir == DMA_FROM_DEVICE) {
		if (req_alloc_bufs(r, len) == 0)
			d.nsg = r->nbufs;
		else
			refuse = true; /* TODO: wait for buffers instead of failing the command */
	} else if (len && len <= NVMET_TCP_MAX_XFER) {
		/* write data comes after an R2T for all of it (one R2T per command) */
		r->wsqe = sqe;
		r->r2t_len = len;
		r->state = NVMET_TCP_REQ_R2T;
		r->conn = c;
		nvmet_tcp.st.r2ts++;
		return conn_send_r2ts(c) < 0 ? -EPIPE : 0;
	} else if (len) {
		refuse = true; /* larger than a command may move: the core says so */
	}
	if (refuse) {
		/* one segment that cannot match the SGL length: the core completes the command
		 * with SGL Length Invalid without touching the data */
		d.nsg = 1;
		r->sg[0].addr = (dma_addr_t){ 0 };
		r->sg[0].len = len ? 0 : 1;
	}
	r->state = NVMET_TCP_REQ_EXEC;
	r->conn = c;
	c->inflight++;
	nvmet_exec(c->q, &r->req, &sqe, &d, req_done, r);
	return 0;
}

/* Send the R2Ts not sent yet, each when the socket has room. PDUs sent or -errno. */
static int conn_send_r2ts(struct nvmet_tcp_conn *c)
{
	uint8_t hdr[NVME_TCP_MAX_HEADER];
	int sent = 0, rc;

	for (unsigned i = 0; c->sock && i < NVMET_TCP_QUEUE_DEPTH; i++) {
		struct nvmet_tcp_req *r = &c->reqs[i];
		if (r->state != NVMET_TCP_REQ_R2T || r->r2t_sent)
			continue;
		size_t hl = nvme_tcp_build_r2t(hdr, &c->params, r->cccid, (uint16_t)i, 0, r->r2t_len);
		if (nvmet_tcp.sops->send_space(c->sock) < hl) {
			nvmet_tcp.st.tx_waits++;
			break;
		}
		if ((rc = conn_send(c, hdr, hl)))
			return rc;
		r->r2t_sent = true;
		sent++;
	}
	if (sent)
		nvmet_tcp.sops->flush(c->sock);
	return sent;
}

/* Copy a PDU's data to the DRAM chunks of r at byte off (counted CPU reads). */
static int copy_into_bufs(struct nvmet_tcp_req *r, uint32_t off, const struct netdev_frag *f, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		for (uint32_t done = 0; done < f[i].len;) {
			uint32_t in = off % NVMET_TCP_BUF_SIZE;
			uint32_t k = NVMET_TCP_BUF_SIZE - in;
			if (k > f[i].len - done)
				k = f[i].len - done;
			int rc = netdev_frag_read(&f[i], done, (uint8_t *)r->bufs[off / NVMET_TCP_BUF_SIZE] + in, k);
			if (rc)
				return rc;
			done += k;
			off += k;
		}
	}
	return 0;
}

/*
 * H2CData for an R2T: the transfer tag names the request (its slot), the data must come in
 * order and inside the R2T. The fragments are kept as they are (the NVMe command will point
 * at them) unless there are more than a command takes: then the whole write is gathered
 * into DRAM chunks (counted). When all the data is in, the write runs.
 */
static int conn_h2c(struct nvmet_tcp_conn *c, struct nvme_tcp_rx_pdu *pdu)
{
	const struct nvme_tcp_pdu *h = &pdu->hdr;
	uint16_t ttag = h->u.data.ttag;
	struct nvmet_tcp_req *r = ttag < NVMET_TCP_QUEUE_DEPTH ? &c->reqs[ttag] : NULL;
	uint16_t fes = 0;
	uint32_t fei = 0;
	const char *what = NULL;

	if (!r || r->state != NVMET_TCP_REQ_R2T || !r->r2t_sent)
		fes = NVME_TCP_FES_INVALID_HEADER_FIELD, fei = 10, what = "H2CData for no outstanding R2T";
	else if (h->u.data.cccid != r->cccid)
		fes = NVME_TCP_FES_INVALID_HEADER_FIELD, fei = 8, what = "H2CData CCCID does not match its R2T";
	else if (h->u.data.offset != r->h2c_rcvd)
		fes = NVME_TCP_FES_DATA_OUT_OF_RANGE, fei = 12, what = "H2CData DATAO out of order";
	else if (h->u.data.length > r->r2t_len - r->h2c_rcvd)
		fes = NVME_TCP_FES_DATA_OUT_OF_RANGE, fei = 16, what = "H2CData beyond its R2T";
	if (fes) {
		pdu_release(pdu);
		conn_fail(c, fes, fei, pdu->raw, h->hdr_bytes, what);
		return -EPROTO;
	}
	nvmet_tcp.st.h2c_pdus++;
	nvmet_tcp.st.h2c_bytes += h->u.data.length;
	int rc = 0;
	if (!r->gathered && r->nfrags + pdu->nfrags <= NVMET_TCP_REQ_SEGS) {
		for (unsigned i = 0; i < pdu->nfrags; i++) {
			r->frags[r->nfrags] = pdu->frags[i];
			r->sg[r->nfrags].addr = pdu->frags[i].addr;
			r->sg[r->nfrags].len = pdu->frags[i].len;
			r->nfrags++;
		}
		pdu->nfrags = 0;
	} else {
		if (!r->gathered) {
			/* switch to DRAM: the fragments so far move into chunks first */
			r->gathered = true;
			nvmet_tcp.st.gathers++;
			rc = req_alloc_bufs(r, r->r2t_len);
			if (!rc)
				rc = copy_into_bufs(r, 0, r->frags, r->nfrags);
			for (unsigned i = 0; i < r->nfrags; i++)
				netdev_frag_release(&r->frags[i]);
			r->nfrags = 0;
		}
		if (!rc)
			rc = copy_into_bufs(r, r->h2c_rcvd, pdu->frags, pdu->nfrags);
		pdu_release(pdu);
	}
	r->h2c_rcvd += h->u.data.length;
	if (r->h2c_rcvd < r->r2t_len)
		return 0;
	struct nvmet_data d = { .sg = r->sg, .nsg = r->gathered ? r->nbufs : r->nfrags, .len = r->r2t_len };
	if (rc) {
		/* no DRAM for the gather: one segment that cannot match, the core says SGL Length Invalid */
		d.nsg = 1;
		r->sg[0].addr = (dma_addr_t){ 0 };
		r->sg[0].len = 0;
	}
	r->state = NVMET_TCP_REQ_EXEC;
	c->inflight++;
	nvmet_exec(c->q, &r->req, &r->wsqe, &d, req_done, r);
	return 0;
}

/* ICReq: check, answer, create the queue. */
static int conn_icreq(struct nvmet_tcp_conn *c, struct nvme_tcp_rx_pdu *pdu)
{
	uint8_t buf[NVME_TCP_IC_LEN];
	const struct nvme_tcp_pdu *h = &pdu->hdr;
	uint8_t dgst = h->u.ic.dgst;
	int rc;

	/* PFV, HPDA <= 31 and reserved DGST bits were checked by the parser; MAXR2T
	 * (0's based) > 0 asks for several R2Ts in flight per command: we issue one at a
	 * time, which every MAXR2T allows. */
	nvmet_tcp.st.icreqs++;
	if ((rc = nvmet_queue_create(c->port, &nvmet_tcp_ops, c, &c->q))) {
		log_warn("tcp: port %u: no queue for a new connection (%d)", c->port, rc);
		return rc;
	}
	size_t len = nvme_tcp_build_icresp(buf, 0, dgst, NVMET_TCP_MAXH2CDATA);
	if (nvmet_tcp.sops->send_space(c->sock) < len || (rc = conn_send(c, buf, len)))
		return rc ? rc : -ENOBUFS;
	nvmet_tcp.sops->flush(c->sock);
	/* from the next PDU on */
	c->params.hdgst = dgst & NVME_TCP_DGST_HDGST_ENABLE;
	c->params.ddgst = dgst & NVME_TCP_DGST_DDGST_ENABLE;
	c->params.cpda = 0;
	c->params.hpda = h->u.ic.pda;
	c->params.maxh2cdata = NVMET_TCP_MAXH2CDATA;
	c->params.max_icd = NVMET_TCP_IN_CAPSULE;
	set_state(c, NVMET_TCP_ESTABLISHED);
	return 0;
}

/* One whole PDU from the framing (we own its fragments). A negative return stops the
 * feed; the connection is then closed by conn_recv according to c->state. */
static int conn_pdu(void *ctx, struct nvme_tcp_rx_pdu *pdu)
{
	struct nvmet_tcp_conn *c = ctx;
	const struct nvme_tcp_pdu *h = &pdu->hdr;

	if (c->state != NVMET_TCP_WAIT_ICREQ && c->state != NVMET_TCP_ESTABLISHED) {
		pdu_release(pdu);
		return -ECONNRESET;
	}
	if (h->type == NVME_TCP_H2C_TERM_REQ) {
		pdu_release(pdu);
		nvmet_tcp.st.term_recv++;
		log_info("tcp: port %u: host terminated the connection (FES %u)", c->port, h->u.term.fes);
		conn_close(c, NVMET_TCP_CLOSING, true, "H2CTermReq");
		return -ECONNRESET;
	}
	if (c->state == NVMET_TCP_WAIT_ICREQ) {
		pdu_release(pdu);
		if (h->type != NVME_TCP_ICREQ) {
			conn_fail(c, NVME_TCP_FES_PDU_SEQUENCE_ERROR, 0, pdu->raw, h->hdr_bytes, "PDU before ICReq");
			return -EPROTO;
		}
		int rc = conn_icreq(c, pdu);
		if (rc)
			conn_close(c, NVMET_TCP_CLOSING, false, "ICReq not served");
		return rc;
	}
	if (!pdu->ddgst_ok) {
		/* as Linux's nvmet-tcp does: a data digest error ends the connection */
		pdu_release(pdu);
		nvmet_tcp.st.ddgst_errors++;
		log_warn("tcp: port %u: data digest error on a %s PDU: closing", c->port, nvme_tcp_pdu_type_name(h->type));
		conn_close(c, NVMET_TCP_CLOSING, false, "data digest error");
		return -ECONNRESET;
	}
	switch (h->type) {
	case NVME_TCP_H2C_DATA:
		return conn_h2c(c, pdu);
	case NVME_TCP_CAPSULE_CMD:
		if (conn_capsule(c, pdu)) {
			conn_close(c, NVMET_TCP_CLOSING, false, "queue depth exceeded");
			return -ECONNRESET;
		}
		return 0;
	case NVME_TCP_ICREQ:
		pdu_release(pdu);
		conn_fail(c, NVME_TCP_FES_PDU_SEQUENCE_ERROR, 0, pdu->raw, h->hdr_bytes, "second ICReq");
		return -EPROTO;
	default:
		pdu_release(pdu);
		conn_fail(c, NVME_TCP_FES_INVALID_HEADER_FIELD, 0, pdu->raw, h->hdr_bytes,
			  "PDU type a host may not send here");
		return -EPROTO;
	}
}

/* Take what the socket has and frame it. */
static void conn_recv(struct nvmet_tcp_conn *c)
{
	struct netdev_frag f[NVMET_TCP_RX_BATCH];
	int n;

	c->in_rx = true;
	while (c->sock && (c->state == NVMET_TCP_WAIT_ICREQ || c->state == NVMET_TCP_ESTABLISHED) &&
	       (n = nvmet_tcp.sops->recv_frags(c->sock, f, NVMET_TCP_RX_BATCH, SIZE_MAX)) > 0) {
		int i = 0;
		for (; i < n; i++) {
			int rc = nvme_tcp_rx_feed(&c->rx, &f[i], conn_pdu, c);
			if (!rc)
				continue;
			if (c->rx.state == NVME_TCP_RX_FAILED)
				conn_fail(c, c->rx.err.fes, c->rx.err.fei, c->rx.hdr, c->rx.have, c->rx.err.what);
			else
				conn_close(c, NVMET_TCP_CLOSING, false, "receive error");
			i++;
			break;
		}
		for (; i < n; i++)
			netdev_frag_release(&f[i]);
	}
	c->in_rx = false;
	if (c->state == NVMET_TCP_FAILED || c->state == NVMET_TCP_CLOSING) {
		nvme_tcp_rx_reset(&c->rx);
		return;
	}
	if (c->sock && nvmet_tcp.sops->recv_eof(c->sock)) {
		conn_close(c, NVMET_TCP_CLOSING, true, "peer closed");
		return;
	}
	if (conn_tx(c) < 0)
		conn_close(c, NVMET_TCP_CLOSING, false, "send failed");
}

static void conn_event(struct tcp_sock *s, void *ctx, unsigned events)
{
	struct nvmet_tcp_conn *c = ctx;
	(void)s;

	if (!c->sock)
		return;
	if (events & TCP_EV_RECV)
		conn_recv(c);
	if (c->sock && (events & TCP_EV_SENT) && conn_tx(c) < 0)
		conn_close(c, NVMET_TCP_CLOSING, false, "send failed");
	if (c->sock && (events & TCP_EV_CLOSED))
		conn_close(c, NVMET_TCP_CLOSING, false, "connection reset or timed out");
}

static const struct tcp_ops conn_tcp_ops = { .event = conn_event };

/* --- listeners --- */

static void listener_event(struct tcp_sock *ls, void *ctx, unsigned events)
{
	struct nvmet_tcp_listener *l = ctx;
	struct tcp_sock *s;

	if (!(events & TCP_EV_ACCEPT))
		return;
	while ((s = nvmet_tcp.sops->accept(ls))) {
		struct nvmet_tcp_conn *c = mm_pool_alloc(&nvmet_tcp.conn_pool);
		if (!c) {
			nvmet_tcp.st.refused++;
			log_warn("tcp: port %u: connection refused, %u connections in use", l->tcp_port,
				 NVMET_TCP_MAX_CONNS);
			nvmet_tcp.sops->abort(s);
			continue;
		}
		memset(c, 0, sizeof(*c));
		c->state = NVMET_TCP_WAIT_ICREQ;
		c->port = l->port;
		c->sock = s;
		c->nfree = NVMET_TCP_QUEUE_DEPTH;
		for (unsigned i = 0; i < NVMET_TCP_QUEUE_DEPTH; i++)
			c->reqs[i].conn = c;
		list_init(&c->tx_backlog);
		nvme_tcp_rx_init(&c->rx, &c->params);
		list_add_tail(&nvmet_tcp.conns, &c->node);
		nvmet_tcp.nconns++;
		nvmet_tcp.st.accepted++;
		nvmet_tcp.sops->set_ops(s, &conn_tcp_ops, c); /* may deliver events: c last */
	}
}

static const struct tcp_ops listener_tcp_ops = { .event = listener_event };

static void listeners_close(void)
{
	for (unsigned i = 0; i < nvmet_tcp.nlisteners; i++)
		nvmet_tcp.sops->close(nvmet_tcp.listeners[i].sock);
	nvmet_tcp.nlisteners = 0;
}

/* Start the transport on every TCP port of the target. */
int nvmet_tcp_start(const struct nvmet_tcp_sock_ops *sops)
{
	int rc;

	if (nvmet_tcp.running)
		return -EBUSY;
	memset(&nvmet_tcp.st, 0, sizeof(nvmet_tcp.st));
	nvmet_tcp.sops = sops;
	list_init(&nvmet_tcp.conns);
	nvmet_tcp.nconns = 0;
	nvmet_tcp.nlisteners = 0;
	if ((rc = mm_pool_init(&nvmet_tcp.conn_pool, "nvmet_tcp_conn", sizeof(struct nvmet_tcp_conn),
			       NVMET_TCP_MAX_CONNS)))
		goto fail;
	if ((rc = mm_pool_init(&nvmet_tcp.buf_pool, "nvmet_tcp_buf", NVMET_TCP_BUF_SIZE, NVMET_TCP_BUFS)))
		goto fail_conn_pool;
	for (unsigned i = 0; i < nvmet_port_count(); i++) {
		const struct nvmet_cfg_port *p = nvmet_port_at(i);
		bool dup = false;
		if (!p || p->trtype != NVMET_TRTYPE_TCP)
			continue;
		for (unsigned j = 0; j < nvmet_tcp.nlisteners; j++)
			dup |= nvmet_tcp.listeners[j].tcp_port == p->trsvcid;
		if (dup) {
			/* one socket per TCP port: connections go to the first port using it */
			log_warn("tcp: portid %u shares TCP port %u with an earlier port", p->portid, p->trsvcid);
			continue;
		}
		if (nvmet_tcp.nlisteners == NVMET_TCP_MAX_LISTENERS) {
			log_warn("tcp: portid %u: more than %u TCP ports, not listening", p->portid,
				 NVMET_TCP_MAX_LISTENERS);
			continue;
		}
		struct nvmet_tcp_listener *l = &nvmet_tcp.listeners[nvmet_tcp.nlisteners];
		l->port = i;
		l->tcp_port = p->trsvcid;
		if ((rc = sops->listen(p->trsvcid, NVMET_TCP_LISTEN_BACKLOG, &listener_tcp_ops, l, &l->sock))) {
			log_err("tcp: cannot listen on TCP port %u (%d)", p->trsvcid, rc);
			goto fail_listeners;
		}
		nvmet_tcp.nlisteners++;
		log_info("tcp: portid %u listening on TCP port %u", p->portid, p->trsvcid);
	}
	nvmet_tcp.running = true;
	return 0;

fail_listeners:
	listeners_close();
	mm_pool_destroy(&nvmet_tcp.buf_pool);
fail_conn_pool:
	mm_pool_destroy(&nvmet_tcp.conn_pool);
fail:
	nvmet_tcp.sops = NULL;
	return rc;
}

/* Free closed connections with nothing left at the core; once stopped, the pools. */
static int conns_reap(void)
{
	struct list_node *it, *tmp;
	int work = 0;
	list_for_each_safe(&nvmet_tcp.conns, it, tmp) {
		struct nvmet_tcp_conn *c = container_of(it, struct nvmet_tcp_conn, node);
		if ((c->state == NVMET_TCP_FAILED || c->state == NVMET_TCP_CLOSING) && c->inflight == 0) {
			conn_free(c);
			work++;
		}
	}
	return work;
}

static void pools_destroy_if_idle(void)
{
	if (nvmet_tcp.sops && !nvmet_tcp.running && nvmet_tcp.nconns == 0) {
		mm_pool_destroy(&nvmet_tcp.buf_pool);
		mm_pool_destroy(&nvmet_tcp.conn_pool);
		nvmet_tcp.sops = NULL;
	}
}

/* Stop: listeners and connections closed. */
void nvmet_tcp_stop(void)
{
	struct list_node *it;
	if (!nvmet_tcp.running)
		return;
	listeners_close();
	list_for_each(&nvmet_tcp.conns, it)
		conn_close(container_of(it, struct nvmet_tcp_conn, node), NVMET_TCP_CLOSING, false, "stop");
	nvmet_tcp.running = false;
	conns_reap();
	pools_destroy_if_idle();
}

/* Poll-loop work. */
int nvmet_tcp_poll(unsigned budget)
{
	struct list_node *it;
	int work = 0;

	if (!nvmet_tcp.sops)
		return 0;
	list_for_each(&nvmet_tcp.conns, it) {
		struct nvmet_tcp_conn *c = container_of(it, struct nvmet_tcp_conn, node);
		if ((unsigned)work >= budget)
			break;
		if (c->kill_pending && (c->state == NVMET_TCP_WAIT_ICREQ || c->state == NVMET_TCP_ESTABLISHED)) {
			log_info("tcp: port %u: controller gone (%d): closing its connection", c->port, c->kill_reason);
			conn_close(c, NVMET_TCP_CLOSING, true, "queue killed");
			work++;
		} else if (c->sock && !list_empty(&c->tx_backlog)) {
			int rc = conn_tx(c);
			if (rc < 0)
				conn_close(c, NVMET_TCP_CLOSING, false, "send failed");
			work += rc > 0;
		}
	}
	work += conns_reap();
	pools_destroy_if_idle();
	return work;
}
POLLER(nvmet_tcp, nvmet_tcp_poll);

unsigned nvmet_tcp_conn_count(void)
{
	return nvmet_tcp.sops ? nvmet_tcp.nconns : 0;
}

unsigned nvmet_tcp_conn_count_state(enum nvmet_tcp_conn_state s)
{
	struct list_node *it;
	unsigned n = 0;
	if (!nvmet_tcp.sops)
		return 0;
	list_for_each(&nvmet_tcp.conns, it)
		n += container_of(it, struct nvmet_tcp_conn, node)->state == s;
	return n;
}

const struct nvmet_tcp_stats *nvmet_tcp_stats(void)
{
	return &nvmet_tcp.st;
}
