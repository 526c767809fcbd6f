/*
 * nvmet_tcp.c - the NVMe/TCP transport: see nvmet_tcp.h for the connection state machine.
 *
 * The data path (docs/architecture.md): a write's data stays in the fragments the NIC received it
 * into (an NVMe CMB with header split) and one NVMe command gathers all of them (up to
 * NVMET_TCP_REQ_SEGS, in a segment table); a read's data is read by the drive into device
 * memory the NIC may gather from and sent from there with zero-copy C2HData. Where the
 * P2P rules (nvmet_tcp_mem_ops) refuse the path, a data digest needs the CPU, nvmet.p2p
 * is off or device memory is short, the payload goes through DRAM, counted per reason.
 *
 * Ownership: received PDU data fragments belong to the command that carries them until
 * the core completed it (then they go back to the NIC). A data buffer (read data, or
 * write data gathered into DRAM) belongs to its command and to TCP for every fragment of
 * it queued as C2HData: it is freed when both let go (the peer acknowledged the data).
 * A command that finds no buffer (table, DRAM, device memory, write budget), or whose
 * host address already holds its share of them (1/NVMET_TCP_HOST_SHARE of each pool;
 * of the write budget only while another host's write waits for its R2T: see host_may),
 * waits in its connection's FIFO and is resumed from the poll loop or a socket event
 * when buffers come back, connection by connection in turn, so that it holds back only
 * its own connection and one peer cannot starve another; a command larger than
 * NVMET_TCP_MAX_XFER never fits and is refused at once. A connection is freed only when
 * no command of it is left at the core and TCP gave back every data buffer it was
 * sending, so a late done callback or buffer release always finds its connection.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "../../../lib/clock.h"
#include "../../../lib/crc32.h"
#include "../../../lib/list.h"
#include "../../../lib/log.h"
#include "../../../lib/poller.h"
#include "../../../lib/timer.h"
#include "../../../mm/pool.h"
#include "../../../net/net.h"
#include "../../../net/tcp/tcp.h"
#include "nvmet_tcp_priv.h"
#include "nvmet_wire.h"

LOG_MODULE_USE(nvmet);

struct nvmet_tcp_state nvmet_tcp;

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

/* nvmet_tcp.pass_due again from what it sums up: after every write of nvmet_tcp.live,
 * .running, .reap_due or .timeouts_due (nvmet_tcp_poll's idle pass reads it alone). */
static inline void pass_due_note(void)
{
	nvmet_tcp.pass_due = nvmet_tcp.live && (nvmet_tcp.reap_due || nvmet_tcp.timeouts_due || !nvmet_tcp.running);
}

/* c has work for the poll loop (received data, a kill, responses waiting for room): queue
 * it once, behind the others. */
static void conn_ready(struct nvmet_tcp_conn *c)
{
	if (c->on_ready)
		return;
	c->on_ready = true;
	list_add_tail(&nvmet_tcp.ready, &c->ready_node);
	nvmet_tcp.nready++;
}

static void conn_unready(struct nvmet_tcp_conn *c)
{
	if (!c->on_ready)
		return;
	c->on_ready = false;
	list_del(&c->ready_node);
	nvmet_tcp.nready--;
}

/* Has c work the poll loop must come back for? */
static bool conn_has_work(const struct nvmet_tcp_conn *c)
{
	if (!c->sock)
		return false;
	return c->rx_ready || (!list_empty(&c->tx_backlog) && !c->tx_sent_owed) ||
	       (c->kill_pending && (c->state == NVMET_TCP_WAIT_ICREQ || c->state == NVMET_TCP_ESTABLISHED));
}

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

/* --- sending --- */

/* Queue len bytes on the socket: all or -ENOBUFS/-EPIPE (callers checked the space). */
static int conn_send(struct nvmet_tcp_conn *c, const void *buf, size_t len)
{
	long n = tcp_send_copy(c->sock, buf, len);
	if (n < 0)
		return (int)n;
	return (size_t)n == len ? 0 : -ENOBUFS;
}

static int conn_send_r2ts(struct nvmet_tcp_conn *c);

/* Has c anything for conn_tx to send (an R2T, a response or read data)? */
static inline bool conn_tx_due(const struct nvmet_tcp_conn *c)
{
	return c->r2t_due || !list_empty(&c->tx_backlog);
}

/*
 * A PDU of the backlog found no room: TCP refused it (tcp_send_place, or
 * tcp_send_place_frags for a C2HData header and its data fragments, or
 * tcp_send_place_frags_tail for those and the response behind them), and a socket that can
 * still send recorded that refusal (tcp_send_refused), so TCP_EV_SENT is sure to follow
 * (tcp.h, back-pressure) and its conn_event_more sends the backlog: the connection waits
 * for it (c->tx_sent_owed) instead of being retried by every poll pass. A socket past
 * sending promises no event: the poll loop keeps retrying it as before (the close comes).
 * c->tx_sent_owed is set only here and cleared by that event (conn_event_more) or with
 * the backlog (conn_drop_backlog); while it is set the backlog is not empty (only conn_tx,
 * which leaves it alone meanwhile, and conn_drop_backlog empty it) and conn_tx and
 * conn_has_work leave the backlog to the event.
 */
static void conn_tx_refused(struct nvmet_tcp_conn *c)
{
	enum tcp_state st = tcp_state(c->sock);
	c->tx_sent_owed = st == TCP_ESTABLISHED || st == TCP_CLOSE_WAIT;
	nvmet_tcp.st.tx_waits++;
}

/* CRC32C of fragments (the CPU reads them: counted by netdev_frag_read). */
static uint32_t frags_crc(const struct netdev_frag *f, unsigned n)
{
	uint8_t buf[256];
	uint32_t crc = 0;
	for (unsigned i = 0; i < n; i++)
		for (uint32_t off = 0; off < f[i].len;) {
			uint32_t k = f[i].len - off < sizeof(buf) ? f[i].len - off : (uint32_t)sizeof(buf);
			netdev_frag_read(&f[i], off, buf, k);
			crc = crc32c(crc, buf, k);
			off += k;
		}
	return crc;
}

/* Has c neither digest nor header alignment, so that its PDUs take the fixed shapes of
 * nvme_tcp_build_c2h_data_plain and nvme_tcp_build_capsule_resp_plain? (c->params is set
 * once, by the ICReq, before any command.) */
static inline bool conn_plain(const struct nvmet_tcp_conn *c)
{
	return !(c->params.hdgst | c->params.ddgst | c->params.hpda);
}

/* The one fragment, or the fragments, of [off, off + n) of r's buffer into f (nvmet_tcp_dbuf_one
 * said one): each holds a reference on it, the last PDU's one fragment r's own (nothing of r
 * left to send reads the buffer then: the response is r's CQE; r->dbuf cleared, and r goes
 * back with nothing to drop, nvmet_tcp_req_put_sent). Returns the fragments. */
static inline unsigned c2h_frags(struct nvmet_tcp_req *r, uint32_t off, uint32_t n, bool one, bool last,
				 struct netdev_frag *f)
{
	if (one && last) {
		nvmet_tcp_dbuf_frag1_own(r->dbuf, off, n, f);
		r->dbuf = NULL;
		return 1;
	}
	if (one) {
		nvmet_tcp_dbuf_frag1(r->dbuf, off, n, f);
		return 1;
	}
	return nvmet_tcp_dbuf_frags(r->dbuf, off, n, f);
}

/* One C2HData PDU of r that no response rides behind (conn_send_c2h_resp has those): header
 * built in place, data as fragments of r's buffer (zero copy, held by TCP until
 * acknowledged), digest copied. 1 sent, 0 no room (nothing queued), negative errno. */
static int conn_send_c2h(struct nvmet_tcp_conn *c, struct nvmet_tcp_req *r, bool success)
{
	struct netdev_frag f[NVMET_TCP_C2H_MAX / NVMET_TCP_BUF_SIZE + 1];
	uint32_t n = r->req.xfer_len - r->tx_off;
	int rc;

	if (n > NVMET_TCP_C2H_MAX)
		n = NVMET_TCP_C2H_MAX;
	bool last = r->tx_off + n == r->req.xfer_len;
	/* the header is built where TCP keeps it (no copy), once the socket has room for the
	 * whole PDU: its bytes (header, data, digest) and its send entries (a chunk for the
	 * header, the data fragments, one for the digest), checked once by
	 * tcp_send_place_frags. A header queued without room for its data would leave the
	 * stream half a PDU long. */
	const bool plain = conn_plain(c); /* (the header then in fixed stores) */
	size_t hl = plain ? NVME_TCP_DATA_HLEN : nvme_tcp_c2h_data_hdr_len(&c->params);
	/* the common PDU: its data in one piece of the buffer (one fragment, no loop) */
	bool one = nvmet_tcp_dbuf_one(r->dbuf, r->tx_off, n);
	unsigned entries = 1 + (one ? 1 : nvmet_tcp_dbuf_nfrags(r->dbuf, r->tx_off, n)) + (c->params.ddgst ? 1 : 0);
	uint8_t *hdr = tcp_send_place_frags(c->sock, hl, n + (c->params.ddgst ? NVME_TCP_DIGEST_LEN : 0), entries - 1);
	if (!hdr) {
		conn_tx_refused(c);
		return 0;
	}
	if (plain)
		nvme_tcp_build_c2h_data_plain(hdr, false, r->cccid, r->tx_off, n, last, success);
	else
		nvme_tcp_build_c2h_data(hdr, &c->params, r->cccid, r->tx_off, n, last, last && success);
	unsigned nf = c2h_frags(r, r->tx_off, n, one, last, f);
	r->tx_off += n;
	nvmet_tcp.st.c2h_pdus++;
	nvmet_tcp.st.c2h_bytes += n;
	uint32_t crc = c->params.ddgst ? frags_crc(f, nf) : 0;
	tcp_send_placed_frags(c->sock, hl, f, nf); /* (the socket takes the fragments) */
	if (c->params.ddgst) {
		uint8_t d[4] = { (uint8_t)crc, (uint8_t)(crc >> 8), (uint8_t)(crc >> 16), (uint8_t)(crc >> 24) };
		if ((rc = conn_send(c, d, sizeof(d))))
			return rc;
	}
	return 1;
}

_Static_assert(NVME_TCP_RESP_HLEN + NVME_TCP_DIGEST_LEN <= TCP_SEND_TAIL_MAX, "a CapsuleResp rides behind C2HData");

/*
 * A read's last C2HData PDU, the rest of its data (at most NVMET_TCP_C2H_MAX bytes), with its
 * CapsuleResp behind it (no data digest, no SUCCESS flag), in one room check
 * (tcp_send_place_frags_tail), both built where TCP keeps them: on a plain connection
 * (conn_plain) in fixed stores; the common read (all of its data in one piece of its
 * buffer, plain) takes conn_send_read_whole instead. (Out of line: once per larger read.)
 * 2 PDUs sent, 0 no room (nothing queued, r unchanged, the refusal recorded).
 */
static __attribute__((noinline)) int conn_send_c2h_resp(struct nvmet_tcp_conn *c, struct nvmet_tcp_req *r)
{
	struct netdev_frag f[NVMET_TCP_C2H_MAX / NVMET_TCP_BUF_SIZE + 1];
	const uint32_t off = r->tx_off, n = r->req.xfer_len - off;
	const bool plain = conn_plain(c);
	size_t hl = plain ? NVME_TCP_DATA_HLEN : nvme_tcp_c2h_data_hdr_len(&c->params);
	size_t rl = plain ? NVME_TCP_RESP_HLEN : nvme_tcp_capsule_resp_len(&c->params);
	const bool one = nvmet_tcp_dbuf_one(r->dbuf, off, n);
	void *tail = NULL;
	uint8_t *hdr = tcp_send_place_frags_tail(c->sock, hl, n, one ? 1 : nvmet_tcp_dbuf_nfrags(r->dbuf, off, n), rl,
						 &tail);
	if (!hdr) {
		conn_tx_refused(c);
		return 0;
	}
	if (plain) {
		nvme_tcp_build_c2h_data_plain(hdr, false, r->cccid, off, n, true, false);
		nvme_tcp_build_capsule_resp_plain(tail, (const uint8_t *)&r->req.cqe);
	} else {
		nvme_tcp_build_c2h_data(hdr, &c->params, r->cccid, off, n, true, false);
		nvme_tcp_build_capsule_resp(tail, &c->params, (const uint8_t *)&r->req.cqe);
	}
	unsigned nf = c2h_frags(r, off, n, one, true, f);
	r->tx_off = off + n;
	tcp_send_placed_frags_tail(c->sock, hl, f, nf, tail, rl); /* (the socket takes the fragments) */
	nvmet_tcp.st.c2h_pdus++;
	nvmet_tcp.st.c2h_bytes += n;
	nvmet_tcp.st.responses++;
	return 2;
}

/*
 * The common read's whole answer in one step (conn_tx_req's first case): all of r's data in
 * one C2HData PDU (at most NVMET_TCP_C2H_MAX bytes in one piece of its buffer, none sent yet)
 * on a plain connection (conn_plain) and its CapsuleResp behind it: the two headers in fixed
 * stores, r's own reference on its buffer handed to the data fragment (r->dbuf cleared: r is
 * given back next), none of conn_send_c2h's general computations. The same bytes, send
 * entries, room check and counters as conn_send_c2h gives it (a unit test compares them).
 * 1: queued, 2 PDUs counted in *sent (with flushed, conn_tx_req's: flushed in the same step,
 * tcp_send_placed_frags_tail_flush, and *flushed set); 0: no room (nothing queued, r
 * unchanged, the refusal recorded as conn_send_c2h records it).
 */
static inline __attribute__((always_inline)) int conn_send_read_whole(struct nvmet_tcp_conn *c,
								      struct nvmet_tcp_req *r, int *sent, bool *flushed)
{
	const uint32_t n = r->req.xfer_len;
	struct netdev_frag f;
	void *tail = NULL;
	uint8_t *hdr = tcp_send_place_frags_tail(c->sock, NVME_TCP_DATA_HLEN, n, 1, NVME_TCP_RESP_HLEN, &tail);
	if (!hdr) {
		conn_tx_refused(c);
		return 0;
	}
	nvme_tcp_build_c2h_data_plain(hdr, false, r->cccid, 0, n, true, false);
	nvme_tcp_build_capsule_resp_plain(tail, (const uint8_t *)&r->req.cqe);
	nvmet_tcp_dbuf_frag1_own(r->dbuf, 0, n, &f);
	r->dbuf = NULL;
	r->tx_off = n;
	if (flushed) { /* (conn_tx_req's) */
		tcp_send_placed_frags_tail_flush(c->sock, NVME_TCP_DATA_HLEN, &f, 1, tail, NVME_TCP_RESP_HLEN);
		*flushed = true;
	} else {
		tcp_send_placed_frags_tail(c->sock, NVME_TCP_DATA_HLEN, &f, 1, tail, NVME_TCP_RESP_HLEN);
	}
	nvmet_tcp.st.c2h_pdus++;
	nvmet_tcp.st.c2h_bytes += n;
	nvmet_tcp.st.responses++;
	*sent += 2;
	return 1;
}

/*
 * One request's PDUs, from where it is: its C2HData PDUs (NVMET_TCP_C2H_MAX data bytes each)
 * then its CapsuleResp, each only when the socket has room for the whole PDU (the response
 * with the last C2HData PDU in one room check, without a data digest). A successful
 * read on a queue without SQ flow control ends with C2HData SUCCESS instead of a
 * CapsuleResp. 1: all of r is queued (the caller gives r back); 0: no room (r keeps its
 * progress in r->tx_off, and TCP_EV_SENT or the poll loop comes back to it); negative errno
 * (the connection must be closed). *sent counts the PDUs queued. Not flushed; but with flushed
 * (nothing is queued behind r: req_done) a response alone is queued and flushed in one step
 * (tcp_send_placed_flush), as is the common read's whole answer (conn_send_read_whole), which
 * sets *flushed.
 */
static inline __attribute__((always_inline)) int conn_tx_req(struct nvmet_tcp_conn *c, struct nvmet_tcp_req *r,
							     int *sent, bool *flushed)
{
	int rc;
	if (r->tx_off < r->req.xfer_len) {
		/* NVMe/TCP 3.3.6 (C2HData SUCCESS): only when the host disabled SQ flow control,
		 * for a command that completed with status 0 (phase bit apart) */
		bool success = (le16_get(r->req.cqe.status) & 0xfffe) == 0 && c->sqflow_off;
		bool resp = !success && !c->params.ddgst; /* the response rides with the last PDU */
		if (resp && r->tx_off == 0 && r->req.xfer_len <= NVMET_TCP_C2H_MAX && conn_plain(c) &&
		    nvmet_tcp_dbuf_one(r->dbuf, 0, r->req.xfer_len))
			return conn_send_read_whole(c, r, sent, flushed);
		do {
			if (resp && r->req.xfer_len - r->tx_off <= NVMET_TCP_C2H_MAX) {
				if ((rc = conn_send_c2h_resp(c, r)) <= 0)
					return rc;
				*sent += rc;
				return 1; /* (the response went with the last C2HData) */
			}
			if ((rc = conn_send_c2h(c, r, success)) <= 0)
				return rc;
			*sent += rc;
		} while (r->tx_off < r->req.xfer_len);
		if (success) {
			/* C2HData SUCCESS: the response capsule is implied */
			nvmet_tcp.st.success_flags++;
			return 1;
		}
	}
	/* the CapsuleResp is built where TCP keeps it (no copy, one room check) */
	size_t hl = nvme_tcp_capsule_resp_len(&c->params);
	uint8_t *p = tcp_send_place(c->sock, hl, 0);
	if (!p) {
		conn_tx_refused(c);
		return 0;
	}
	if (hl == NVME_TCP_RESP_HLEN)
		nvme_tcp_build_capsule_resp_plain(p, (const uint8_t *)&r->req.cqe);
	else
		nvme_tcp_build_capsule_resp(p, &c->params, (const uint8_t *)&r->req.cqe);
	if (flushed) {
		tcp_send_placed_flush(c->sock, hl);
		*flushed = true;
	} else {
		tcp_send_placed(c->sock, hl);
	}
	nvmet_tcp.st.responses++;
	(*sent)++;
	return 1;
}

/*
 * Send the R2Ts due, then the backlog, head first (conn_tx_req), as far as the socket has
 * room. Returns PDUs sent, or a negative errno (the connection must be closed).
 */
static int conn_tx(struct nvmet_tcp_conn *c)
{
	int sent = 0, rc;

	if (!c->sock)
		return 0;
	if ((rc = conn_send_r2ts(c)) < 0)
		return rc;
	sent += rc;
	/* (after a refusal TCP owes TCP_EV_SENT for, only that event goes on: conn_event_more) */
	while (!c->tx_sent_owed && !list_empty(&c->tx_backlog)) {
		struct nvmet_tcp_req *r = container_of(c->tx_backlog.next, struct nvmet_tcp_req, tx_node);
		if ((rc = conn_tx_req(c, r, &sent, NULL)) < 0)
			return rc;
		if (rc == 0)
			break;
		list_del(&r->tx_node);
		nvmet_tcp_req_put_sent(r);
	}
	if (sent)
		tcp_flush(c->sock);
	return sent;
}

/* --- closing --- */

/* Drop the backlog (the peer is gone). */
static void conn_drop_backlog(struct nvmet_tcp_conn *c)
{
	while (!list_empty(&c->tx_backlog)) {
		struct nvmet_tcp_req *r = container_of(c->tx_backlog.next, struct nvmet_tcp_req, tx_node);
		list_del(&r->tx_node);
		nvmet_tcp_req_put(r);
	}
	c->tx_sent_owed = false;
}

/* Give back every fragment still queued on the socket, so that a close after a
 * termination request ends in a FIN (the TermReq delivered), not a RST. */
static void conn_drain(struct nvmet_tcp_conn *c)
{
	struct netdev_frag f[NVMET_TCP_RX_BATCH];
	int n;
	while ((n = tcp_recv_frags(c->sock, f, NVMET_TCP_RX_BATCH, SIZE_MAX)) > 0)
		for (int i = 0; i < n; i++)
			netdev_frag_release(&f[i]);
}

static void addr_text(uint32_t a, char *buf, size_t cap);

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
	if (c->sock && c->q && nvmet_queue_qid(c->q) >= 0) {
		/* a connected queue ends: who ended it and what it held, for whoever diagnoses a
		 * host's reconnect (the host's own log says its side) */
		struct tcp_info ti;
		char a[16];
		tcp_get_info(c->sock, &ti);
		addr_text(ti.raddr, a, sizeof(a));
		log_info("tcp: port %u: queue %d from %s:%u closed (%s), %u commands in flight", c->port,
			 nvmet_queue_qid(c->q), a, ti.rport, why, c->inflight);
	} else {
		log_debug("tcp conn %p: close (%s)", (void *)c, why);
	}
	set_state(c, to);
	c->rx_wait_max = 0;
	c->rx_peek_len = 0;
	nvmet_tcp.reap_due = true;
	pass_due_note();
	nvmet_tcp.st.closed++;
	if (c->sock) {
		struct tcp_sock *s = c->sock;
		if (graceful) {
			conn_drain(c);
			tcp_flush(s);
		}
		c->sock = NULL;
		if (graceful)
			tcp_close(s);
		else
			tcp_abort(s);
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
		if (c->reqs[i].state == NVMET_TCP_REQ_R2T || c->reqs[i].state == NVMET_TCP_REQ_WAIT)
			nvmet_tcp_req_put(&c->reqs[i]); /* writes that never got their data, waiting commands */
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
		if (tcp_send_space(c->sock) >= len && conn_send(c, buf, len) == 0)
			nvmet_tcp.st.term_sent++;
	}
	conn_close(c, NVMET_TCP_FAILED, true, what);
}

static void conn_free(struct nvmet_tcp_conn *c)
{
	c->host->nconns--; /* its holdings are back (no command, no buffer left) */
	conn_unready(c);
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
	conn_ready(c);
}

/* --- commands --- */

static void req_done(struct nvmet_req *req, void *arg)
{
	struct nvmet_tcp_req *r = arg;
	struct nvmet_tcp_conn *c = r->conn;
	(void)req;

	c->inflight--;
	if (!c->authorised && c->sock && c->q && nvmet_queue_qid(c->q) >= 0) {
		/* Connect succeeded: TCP no longer evicts this connection for a newcomer */
		c->authorised = true;
		c->sqflow_off = nvmet_queue_sqflow_disabled(c->q); /* set by that Connect, for good */
		tcp_set_authorised(c->sock);
	}
	/* received data is no longer needed: the NIC buffers go back now */
	nvmet_tcp_req_release_frags(r);
	nvmet_tcp_req_unhold(r);
	if (r->dir == DMA_TO_DEVICE && r->dbuf) {
		nvmet_tcp_dbuf_unref(r->dbuf); /* gathered write data */
		r->dbuf = NULL;
	}
	if (c->state != NVMET_TCP_ESTABLISHED || !c->sock) {
		nvmet_tcp_req_put(r);
		return;
	}
	uint32_t have = r->dbuf ? r->dbuf->len : 0;
	if (r->req.xfer_len > have)
		r->req.xfer_len = have; /* never past our buffer */
	r->state = NVMET_TCP_REQ_TX;
	if (!c->in_rx && list_empty(&c->tx_backlog)) {
		/* nothing queued before it: what conn_tx would do with r alone in the backlog,
		 * without putting it there unless it has to wait */
		int sent = 0, rc = conn_send_r2ts(c); /* (flushed when it sent any) */
		bool flushed = false;
		if (rc >= 0)
			rc = conn_tx_req(c, r, &sent, &flushed);
		if (rc == 1)
			nvmet_tcp_req_put_sent(r);
		else
			list_add_tail(&c->tx_backlog, &r->tx_node); /* waits (or goes with the connection) */
		if (rc < 0) {
			conn_close(c, NVMET_TCP_CLOSING, false, "send failed");
			return;
		}
		if (sent && !flushed)
			tcp_flush(c->sock);
		if (rc == 0 && !c->tx_sent_owed)
			conn_ready(c); /* the poll loop retries while the socket has no room (or TCP_EV_SENT) */
		return;
	}
	list_add_tail(&c->tx_backlog, &r->tx_node);
	if (!c->in_rx && conn_tx(c) < 0)
		conn_close(c, NVMET_TCP_CLOSING, false, "send failed");
	else if (!list_empty(&c->tx_backlog) && !c->tx_sent_owed)
		conn_ready(c); /* the poll loop retries while the socket has no room (or TCP_EV_SENT) */
}

/*
 * Run r at the core with nsg segments of r->sg (0: none); summed: their lengths add up to
 * r->len (counted as they were taken: nvmet_data.summed). Segments the transport sums are
 * also checked (nvmet_data.checked) when their length is not 0: none is empty and all are
 * of one memory class. A buffer's (dbuf_segments: DRAM chunks of ceil(len / chunk size),
 * each with bytes, or one device segment); a write's fragments held where they came
 * (nvmet_tcp_write_go): none empty, as TCP hands out none (tcp.h, tcp_recv_frags's
 * contract) and the framer passes none on (nvme_tcp_rx_feed moves only bytes, its data
 * run and direct receive take TCP's fragments as they are, the one-step path keeps a first
 * fragment only with bytes past the header and cuts the last inside it), and of one class, as only
 * fragments all in device memory or all in DRAM stay where they are (write_placement).
 */
void nvmet_tcp_req_exec(struct nvmet_tcp_req *r, unsigned nsg, bool summed)
{
	struct nvmet_tcp_conn *c = r->conn;
	struct nvmet_data d = {
		.sg = r->sg, .nsg = nsg, .len = r->len, .bdev = r->bdev, .summed = summed, .checked = summed
	};
	r->state = NVMET_TCP_REQ_EXEC;
	c->inflight++;
	tcp_ack_hold(c->sock); /* its response will carry the ACK of the bytes that brought it */
	nvmet_exec(c->q, &r->req, &r->req.sqe, &d, req_done, r); /* the SQE where the capsule put it */
}

/* Run r so that the core completes it with SGL Length Invalid without touching data:
 * one segment that cannot match the SGL length (one place for NVMe status). */
void nvmet_tcp_req_refuse(struct nvmet_tcp_req *r)
{
	nvmet_tcp_req_release_frags(r);
	r->sg[0].addr = (dma_addr_t){ 0 };
	r->sg[0].len = r->len ? 0 : 1;
	nvmet_tcp_req_exec(r, 1, false); /* never summed: the mismatch is the point */
}


/* Retry the waiting requests of c in arrival order until one still cannot go on (it
 * stays first). Returns the requests resumed. */
static int conn_resume(struct nvmet_tcp_conn *c)
{
	int work = 0;
	while (!list_empty(&c->waitq)) {
		struct nvmet_tcp_req *r = container_of(c->waitq.next, struct nvmet_tcp_req, wait_node);
		enum nvmet_tcp_wait w = nvmet_tcp_req_unwait(r);
		r->state = NVMET_TCP_REQ_EXEC; /* in between: each path below sets the real state */
		bool ok;
		if (w == NVMET_TCP_WAIT_R2T) {
			ok = nvmet_tcp_r2t_go(r) == 0;
			if (!ok)
				nvmet_tcp_req_wait(r, NVMET_TCP_WAIT_R2T);
		} else if (w == NVMET_TCP_WAIT_READ) {
			ok = nvmet_tcp_read_go(r) == 0;
			if (!ok)
				nvmet_tcp_req_wait(r, NVMET_TCP_WAIT_READ);
		} else {
			nvmet_tcp_write_go(r); /* waits again by itself */
			ok = r->state != NVMET_TCP_REQ_WAIT;
		}
		if (!ok) {
			/* back to the front of its connection: arrival order is kept */
			nvmet_tcp.st.waits--;
			list_del(&r->wait_node);
			list_add_head(&c->waitq, &r->wait_node);
			break;
		}
		nvmet_tcp.st.resumed++;
		work++;
		if (w == NVMET_TCP_WAIT_R2T && c->sock && !c->in_rx && conn_tx(c) < 0)
			conn_close(c, NVMET_TCP_CLOSING, false, "send failed");
	}
	return work;
}

/* Retry waiting requests, connection by connection, starting one connection further on
 * each call: a request that cannot go on holds back only the later ones of its own
 * connection. Runs from the poll loop and after socket events, never from a buffer
 * release. */
static int resume_waiters(void)
{
	struct list_node *it;
	unsigned start = nvmet_tcp.nconns ? nvmet_tcp.resume_turn++ % nvmet_tcp.nconns : 0, i = 0;
	int work = 0;

	nvmet_tcp.freed = false;
	for (int round = 0; round < 2; round++) {
		i = 0;
		list_for_each(&nvmet_tcp.conns, it) {
			struct nvmet_tcp_conn *c = container_of(it, struct nvmet_tcp_conn, node);
			bool mine = round == 0 ? i >= start : i < start;
			i++;
			if (mine && c->nwaiting)
				work += conn_resume(c);
		}
	}
	return work;
}

/* Is sqe a fabrics Connect? */
static bool is_connect(const struct nvme_sqe *sqe)
{
	return sqe->opc == NVMF_OPC_FABRICS && nvmf_fctype(sqe) == NVMF_FCTYPE_CONNECT;
}

/* A capsule's data fragments go back unused: in pdu (the framer's), or, without pdu, in r
 * (a whole capsule's, nvmet_tcp_req_take_batch). */
static inline void capsule_drop_data(struct nvmet_tcp_req *r, struct nvme_tcp_rx_pdu *pdu)
{
	if (pdu)
		nvmet_tcp_pdu_release(pdu);
	else
		nvmet_tcp_req_release_frags(r);
}

/*
 * Run the command of a CapsuleCmd, r (its SQE in r->req.sqe) with data_len bytes of in-capsule
 * data in pdu's fragments, or, without pdu, in r's already (conn_whole_capsule): resolve the data
 * (in-capsule fragments for host-to-controller data, a buffer for controller-to-host data, an
 * R2T for larger writes) and run it, waiting for buffers when there are none. A command whose
 * data the transport cannot place runs with a segment that cannot match: the core completes
 * it with SGL Length Invalid (one place for NVMe status). Consumes the data fragments.
 * (always inline: once for each caller, the one without pdu has no PDU object to look at)
 */
static inline __attribute__((always_inline)) int capsule_run(struct nvmet_tcp_conn *c, struct nvmet_tcp_req *r,
							     uint32_t data_len, struct nvme_tcp_rx_pdu *pdu)
{
	const struct nvme_sqe *sqe = &r->req.sqe;
	const unsigned nfrags = pdu ? pdu->nfrags : r->nfrags;
	struct nvmet_req_shape sh;
	r->conn = c;
	nvmet_req_shape(c->q, sqe, &sh);
	r->cccid = le16_get(sqe->cid);
	r->len = sh.len;
	r->dir = (uint8_t)sh.dir;
	r->bdev = sh.bdev;
	r->state = NVMET_TCP_REQ_EXEC;
	if (sh.qid < 0 && (!is_connect(sqe) || !nfrags)) {
		/* not Connected yet: nothing is committed (no R2T, no buffer); the core answers
		 * Command Sequence Error (a Connect without in-capsule data: SGL Length Invalid) */
		capsule_drop_data(r, pdu);
		r->len = 0;
		nvmet_tcp_req_exec(r, 0, false);
	} else if (sh.qid >= 0 && NVMET_TCP_QUEUE_DEPTH - c->nfree > sh.qsize) {
		/* more commands outstanding than the queue's SQSIZE + 1 entries: answered with
		 * Command Sequence Error, nothing placed, nothing run */
		capsule_drop_data(r, pdu);
		nvmet_tcp.st.sq_overflows++;
		c->inflight++;
		nvmet_exec_sq_overflow(c->q, &r->req, sqe, req_done, r);
	} else if (nfrags && (r->dir != DMA_TO_DEVICE || data_len != r->len)) {
		/* data for a command that has none to receive, or not the length its SGL
		 * describes: refused before any placement, so no buffer is ever sent to the
		 * drive with bytes the host did not write */
		capsule_drop_data(r, pdu);
		nvmet_tcp_req_refuse(r);
	} else if (nfrags) {
		/* in-capsule data: the fragments as they are, or a DRAM copy when they are
		 * more than a command gathers and no table is free */
		if (pdu)
			nvmet_tcp_req_add_data(r, pdu, 0);
		nvmet_tcp_write_go(r);
	} else if (r->len > NVMET_TCP_MAX_XFER) {
		nvmet_tcp_req_refuse(r); /* larger than a command may move: never fits, refused now */
	} else if (r->len && r->dir == DMA_FROM_DEVICE) {
		if (!list_empty(&c->waitq) || nvmet_tcp_read_go(r))
			nvmet_tcp_req_wait(r, NVMET_TCP_WAIT_READ);
	} else if (r->len) {
		/* write data comes after an R2T for all of it (one R2T per command) */
		if (!list_empty(&c->waitq) || nvmet_tcp_r2t_go(r))
			nvmet_tcp_req_wait(r, NVMET_TCP_WAIT_R2T);
		else
			return conn_send_r2ts(c) < 0 ? -EPIPE : 0;
	} else {
		nvmet_tcp_req_exec(r, 0, false);
	}
	return 0;
}

/*
 * A CapsuleCmd from the framer: take a request (the host keeps within the queue depth, so
 * running out is its protocol error), the command where the core keeps it, and run it
 * (capsule_run). Consumes pdu's fragments.
 */
static int conn_capsule(struct nvmet_tcp_conn *c, struct nvme_tcp_rx_pdu *pdu)
{
	struct nvmet_tcp_req *r;

	nvmet_tcp.st.capsules++;
	if (!(r = nvmet_tcp_req_get(c))) {
		nvmet_tcp_pdu_release(pdu);
		log_warn("tcp: port %u: host exceeded the queue depth %u", c->port, NVMET_TCP_QUEUE_DEPTH);
		return -ENOSPC;
	}
	/* the command goes straight where the core keeps it (nvmet_exec copies nothing then) */
	memcpy(&r->req.sqe, pdu->raw + offsetof(struct nvme_tcp_cmd_pdu, sqe), sizeof(r->req.sqe)); /* framed: once */
	return capsule_run(c, r, pdu->hdr.data_len, pdu);
}

_Static_assert(NVMET_TCP_RX_BATCH <= NVMET_TCP_INLINE_SEGS, "a whole capsule's data fits a request's own segments");

/*
 * The one-step path of the common PDU: a CapsuleCmd whose bytes are all in the batch f[0..n)
 * taken at once (nvme_tcp_rx_whole_head, on an established connection with the framer
 * between PDUs): its SQE read straight into a request, its data fragments moved straight
 * into the request's segments (nvme_tcp_rx_whole_ends, _cut, _head_take), and the
 * command run (capsule_run), with the checks, errors and
 * counters the framer and conn_pdu give it, without stepping the framer per fragment or going
 * through its PDU object. false: the framer takes it (anything else, or no request or split
 * reference left: the framer then gives the same answer, the error included). true: *used
 * batch entries are the PDU's (the caller goes on at f[*used], the rest of the entry it ended
 * inside); the connection may have closed (then the caller releases the rest of the batch).
 */
static bool conn_whole_capsule(struct nvmet_tcp_conn *c, struct netdev_frag *f, unsigned n, unsigned *used)
{
	struct nvme_tcp_rx_whole w;
	struct netdev_frag rest;
	struct nvmet_tcp_req *r;
	int cut, rc;

	if (!nvme_tcp_rx_whole_head(&c->rx, f, n, &w))
		return false;
	if (!w.data_len) {
		/* no data (a read, an R2T write, most admin commands): all of it in f[0], nothing
		 * to walk or cut, and capsule_run's data checks fold */
		if (!(r = nvmet_tcp_req_get(c))) {
			nvme_tcp_rx_whole_refused(&c->rx);
			return false;
		}
		nvme_tcp_rx_whole_head_take(&c->rx, &f[0], &w, (uint8_t *)&r->req.sqe, false);
		*used = f[0].len ? 0 : 1; /* (f[0] may hold the next PDU's bytes) */
		rc = capsule_run(c, r, 0, NULL);
	} else {
		if (!nvme_tcp_rx_whole_ends(&c->rx, f, n, &w))
			return false;
		if (!(r = nvmet_tcp_req_get(c))) {
			nvme_tcp_rx_whole_refused(&c->rx);
			return false;
		}
		if ((cut = nvme_tcp_rx_whole_cut(f, &w, &rest)) < 0) {
			nvmet_tcp_req_put(r); /* (nothing held yet) */
			nvme_tcp_rx_whole_refused(&c->rx);
			return false;
		}
		nvme_tcp_rx_whole_head_take(&c->rx, &f[0], &w, (uint8_t *)&r->req.sqe, cut);
		*used = nvme_tcp_rx_whole_used(f, &w, cut);
		unsigned first = f[0].len ? 0 : 1; /* (f[0] empty: released, the data starts in f[1]) */
		nvmet_tcp_req_take_batch(r, f + first, w.nents - first); /* (copied, made segments, one pass) */
		if (cut)
			f[*used] = rest; /* the rest of the entry the PDU ended inside: the caller goes on there */
		rc = capsule_run(c, r, w.data_len, NULL);
	}
	nvmet_tcp.st.capsules++;
	nvmet_tcp.st.whole_capsules++;
	if (rc)
		conn_close(c, NVMET_TCP_CLOSING, false, "queue depth exceeded"); /* (as conn_pdu) */
	return true;
}

/* Send the R2Ts not sent yet, each when the socket has room. PDUs sent or -errno. The
 * slots are looked at only while c->r2t_due says one may wait (set when a request enters
 * R2T, cleared once a look found every R2T out): not on every transmit of every pass. */
static int conn_send_r2ts(struct nvmet_tcp_conn *c)
{
	int sent = 0;

	if (!c->r2t_due)
		return 0;
	c->r2t_due = false;
	/* the requests in R2T without their R2T PDU, lowest slot first (r2t_mask) */
	for (uint64_t m = c->r2t_mask; c->sock && m; m &= m - 1) {
		unsigned i = (unsigned)__builtin_ctzll(m);
		struct nvmet_tcp_req *r = &c->reqs[i];
		if (!(c->r2t_mask & (1ull << i)))
			continue; /* put meanwhile */
		size_t hl = nvme_tcp_r2t_len(&c->params);
		uint8_t *hdr = tcp_send_place(c->sock, hl, 0);
		if (!hdr) {
			nvmet_tcp.st.tx_waits++;
			c->r2t_due = true; /* the rest go when the socket has room */
			break;
		}
		nvme_tcp_build_r2t(hdr, &c->params, r->cccid, (uint16_t)i, 0, r->r2t_len); /* in place */
		tcp_send_placed(c->sock, hl);
		r->r2t_sent = true;
		c->r2t_mask &= ~(1ull << i);
		r->r2t_deadline_ns = clock_now_ns() + NVMET_TCP_R2T_TIMEOUT_MS * NSEC_PER_MSEC;
		sent++;
	}
	if (sent)
		tcp_flush(c->sock);
	return sent;
}

/*
 * H2CData for an R2T: the transfer tag names the request (its slot), the data must come in
 * order and inside the R2T. The fragments are kept as they are (the NVMe command will point
 * at all of them) unless there are more than a command gathers: then the write continues
 * into DRAM (counted). When all the data is in, the write runs. Consumes pdu's fragments.
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
		nvmet_tcp_pdu_release(pdu);
		conn_fail(c, fes, fei, pdu->raw, h->hdr_bytes, what);
		return -EPROTO;
	}
	nvmet_tcp.st.h2c_pdus++;
	nvmet_tcp.st.h2c_bytes += h->u.data.length;
	nvmet_tcp_req_add_data(r, pdu, r->h2c_rcvd);
	r->h2c_rcvd += h->u.data.length;
	if (r->h2c_rcvd < r->r2t_len)
		return 0;
	r->state = NVMET_TCP_REQ_EXEC;
	nvmet_tcp_write_go(r);
	return 0;
}

/* ICReq: check, answer, create the queue (the caller released pdu's fragments: an ICReq
 * carries none). */
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
	struct tcp_info ti;
	tcp_get_info(c->sock, &ti);
	nvmet_queue_set_peer(c->q, ti.raddr, ti.rport);
	nvmet_queue_set_local(c->q, ti.laddr);
	size_t len = nvme_tcp_build_icresp(buf, 0, dgst, NVMET_TCP_MAXH2CDATA);
	if (tcp_send_space(c->sock) < len || (rc = conn_send(c, buf, len)))
		return rc ? rc : -ENOBUFS;
	tcp_flush(c->sock);
	/* from the next PDU on */
	c->params.hdgst = dgst & NVME_TCP_DGST_HDGST_ENABLE;
	c->params.ddgst = dgst & NVME_TCP_DGST_DDGST_ENABLE;
	c->params.cpda = 0;
	c->params.hpda = h->u.ic.pda;
	c->params.maxh2cdata = NVMET_TCP_MAXH2CDATA;
	c->params.max_icd = NVMET_TCP_IN_CAPSULE;
	c->rx.kept_end = 0; /* checked against the old params (the general path takes it) */
	set_state(c, NVMET_TCP_ESTABLISHED);
	return 0;
}

/*
 * The framer's place hook for H2CData: its data goes straight behind the segments its R2T's
 * request holds, so that nobody copies the fragments on the way (nvmet_tcp_req_add_data finds
 * them in place). Only a hint: conn_h2c checks the PDU as ever (one it refuses is released
 * from there), and a request put meanwhile takes its memory back first (nvmet_tcp_req_put:
 * nvme_tcp_rx_unplace).
 */
static struct netdev_frag *conn_place(void *ctx, const struct nvme_tcp_pdu *h, unsigned *cap)
{
	struct nvmet_tcp_conn *c = ctx;
	if (h->u.data.ttag >= NVMET_TCP_QUEUE_DEPTH)
		return NULL;
	struct nvmet_tcp_req *r = &c->reqs[h->u.data.ttag];
	if (r->state != NVMET_TCP_REQ_R2T || !r->r2t_sent || r->dbuf || r->dropped || r->nfrags >= r->cap)
		return NULL;
	*cap = r->cap - r->nfrags;
	return r->frags + r->nfrags;
}

/* One whole PDU from the framing. Consumes pdu's fragments, on success and on failure
 * (the framing's nvme_tcp_rx_fn rule). A negative return stops the feed; the connection
 * is then closed by conn_recv according to c->state. */
static int conn_pdu(void *ctx, struct nvme_tcp_rx_pdu *pdu)
{
	struct nvmet_tcp_conn *c = ctx;
	const struct nvme_tcp_pdu *h = &pdu->hdr;

	if (c->state != NVMET_TCP_WAIT_ICREQ && c->state != NVMET_TCP_ESTABLISHED) {
		nvmet_tcp_pdu_release(pdu);
		return -ECONNRESET;
	}
	if (h->type == NVME_TCP_H2C_TERM_REQ) {
		nvmet_tcp_pdu_release(pdu);
		nvmet_tcp.st.term_recv++;
		log_info("tcp: port %u: host terminated the connection (FES %u)", c->port, h->u.term.fes);
		conn_close(c, NVMET_TCP_CLOSING, true, "H2CTermReq");
		return -ECONNRESET;
	}
	if (c->state == NVMET_TCP_WAIT_ICREQ) {
		nvmet_tcp_pdu_release(pdu);
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
		nvmet_tcp_pdu_release(pdu);
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
		nvmet_tcp_pdu_release(pdu);
		conn_fail(c, NVME_TCP_FES_PDU_SEQUENCE_ERROR, 0, pdu->raw, h->hdr_bytes, "second ICReq");
		return -EPROTO;
	default:
		nvmet_tcp_pdu_release(pdu);
		conn_fail(c, NVME_TCP_FES_INVALID_HEADER_FIELD, 0, pdu->raw, h->hdr_bytes,
			  "PDU type a host may not send here");
		return -EPROTO;
	}
}

/* Fragments left in a batch from which conn_recv tries nvme_tcp_rx_feed_data_run inside a PDU's data. */
#define NVMET_TCP_RX_RUN_MIN 3

/* Take what the socket has and frame it. */
/*
 * Receive from the poll loop: feed at most NVMET_TCP_RX_BATCHES batches of fragments from
 * the socket to the framing (PDUs run as they complete), then notice the peer's FIN and
 * push out what the commands produced. The socket stays marked ready while the budget ran
 * out before it was drained. Returns the batches taken (+1 when the connection closed).
 */
static int conn_recv(struct nvmet_tcp_conn *c)
{
	struct netdev_frag f[NVMET_TCP_RX_BATCH];
	unsigned batches = 0;
	bool full = false;
	int n = 0;

	c->in_rx = true;
	c->rx_ready = false; /* data that comes meanwhile marks it again (TCP_EV_RECV) */
	c->rx_wait_max = 0;  /* the socket shrinks: conn_rx_may_wait looks again */
	c->rx_peek_len = 0;  /* ... and at the next PDU's common header */
	while (batches < NVMET_TCP_RX_BATCHES && c->sock &&
	       (c->state == NVMET_TCP_WAIT_ICREQ || c->state == NVMET_TCP_ESTABLISHED)) {
		unsigned room;
		uint32_t left;
		struct netdev_frag *dst = nvme_tcp_rx_direct(&c->rx, &room, &left);
		if (dst) {
			/* inside a PDU's data (the rest of a large H2CData PDU, placed where its
			 * request keeps its segments: conn_place): the fragments go from the socket
			 * straight there, up to the PDU's end, a batch's worth at most */
			unsigned want = room < NVMET_TCP_RX_BATCH ? room : NVMET_TCP_RX_BATCH;
			size_t took;
			if ((n = tcp_recv_frags_len(c->sock, dst, want, left, &took)) <= 0)
				break;
			uint32_t got = (uint32_t)took; /* at most left */
			batches++;
			/* short only when the socket ran dry (not when the PDU's data ended) */
			full = (unsigned)n == want || got == left;
			if (nvme_tcp_rx_direct_took(&c->rx, (unsigned)n, got, conn_pdu, c)) {
				if (c->rx.state == NVME_TCP_RX_FAILED)
					conn_fail(c, c->rx.err.fes, c->rx.err.fei, c->rx.hdr, c->rx.have, c->rx.err.what);
				else
					conn_close(c, NVMET_TCP_CLOSING, false, "receive error");
			}
			if (!full)
				break; /* the socket is drained */
			continue;
		}
		if ((n = tcp_recv_frags(c->sock, f, NVMET_TCP_RX_BATCH, SIZE_MAX)) <= 0)
			break;
		int i = 0;
		batches++;
		full = n == NVMET_TCP_RX_BATCH;
		while (i < n) {
			unsigned used;
			if (c->rx.state == NVME_TCP_RX_DATA) {
				/* inside a PDU's data (the middle of a large H2CData PDU): its run of
				 * data fragments in one loop, the one that ends the PDU through the framer
				 * (with a data digest, which the framer sums, fragment by fragment) */
				if (n - i > NVMET_TCP_RX_RUN_MIN && !c->rx.cur.hdr.has_ddgst &&
				    (i += (int)nvme_tcp_rx_feed_data_run(&c->rx, &f[i], (unsigned)(n - i))) == n)
					break;
			} else if (nvme_tcp_rx_at_whole_start(&c->rx) && c->state == NVMET_TCP_ESTABLISHED &&
				   conn_whole_capsule(c, &f[i], (unsigned)(n - i), &used)) {
				/* a PDU starts here: a whole CapsuleCmd in one step, else the framer */
				i += (int)used;
				if (c->state == NVMET_TCP_ESTABLISHED)
					continue;
				break; /* closed: the rest is released below */
			}
			int rc = nvme_tcp_rx_feed(&c->rx, &f[i++], conn_pdu, c);
			if (!rc)
				continue;
			if (c->rx.state == NVME_TCP_RX_FAILED)
				conn_fail(c, c->rx.err.fes, c->rx.err.fei, c->rx.hdr, c->rx.have, c->rx.err.what);
			else
				conn_close(c, NVMET_TCP_CLOSING, false, "receive error");
			break;
		}
		for (; i < n; i++)
			netdev_frag_release(&f[i]);
		if (!full)
			break; /* a short batch: the socket is drained */
	}
	c->in_rx = false;
	if (batches == NVMET_TCP_RX_BATCHES && full)
		c->rx_ready = true; /* the budget ran out before the socket was drained */
	if (c->state == NVMET_TCP_FAILED || c->state == NVMET_TCP_CLOSING) {
		nvme_tcp_rx_reset(&c->rx);
		c->rx_ready = false;
		return (int)batches + 1;
	}
	if (c->sock && tcp_recv_eof(c->sock)) {
		conn_close(c, NVMET_TCP_CLOSING, true, "peer closed");
		return (int)batches + 1;
	}
	if (conn_tx_due(c) && conn_tx(c) < 0) {
		conn_close(c, NVMET_TCP_CLOSING, false, "send failed");
		return (int)batches + 1;
	}
	return (int)batches;
}

/*
 * May the rest of the PDU being received wait in the socket (no poll-loop pass for this
 * segment)? Only when the PDU's length is known: its header is in and parsed (the framer
 * knows the bytes left) or, between PDUs, its common header lies at the front of the socket
 * (looked at in place, nvme_tcp_rx_peek_len: a data-carrying PDU whose PLEN the framer
 * would take; a 4 KiB H2CData PDU is then taken once, whole, not its first segment apart),
 * the socket holds fewer than those, the peer has not closed, and the window TCP has already
 * advertised lets the peer go on without a window update from us (TCP never moves the
 * right edge back): either it takes all the rest, or the peer may still send at least as
 * much as the socket holds (the socket is at most half of what the peer could have in
 * flight to us: we take its bytes, and so open the window, when it is half used, as a
 * receiver updating its window at half the buffer does). Every segment that comes looks
 * again, so a window that closes is always noticed by the segment that closed it, and the
 * segment that completes the PDU wakes the connection. Taking the bytes now would only cost
 * a pass per segment (a 128 KiB H2CData PDU arrives in ~90); the NIC buffers are held either
 * way (by the socket's queue or by the framer) and count the same in TCP's budget. Anything
 * else (a FIN, a kill) drains as before.
 *
 * The answer holds for the next segments too while the socket only grows (nothing taken):
 * the peer's room shrinks by at most what came in since, so c->rx_wait_max keeps the
 * socket size up to which it still holds, and a segment below it costs no tcp_get_info().
 * conn_recv forgets it (taking bytes changes the sums).
 */
static bool conn_rx_may_wait_left(struct nvmet_tcp_conn *c, size_t q, uint32_t left);

/* conn_rx_may_wait between PDUs (the framer at a PDU's start, nothing looked at since
 * conn_recv last took bytes; out of line: once per PDU): the common header where it lies
 * tells the PDU's length, so the PDU is taken in one pass once all of it is in (not its
 * first segment alone); looked at once per PDU (c->rx_peek_len until conn_recv takes
 * bytes), and the framer keeps it (not read again when the bytes are taken). Apart from the
 * answer inside a PDU (conn_rx_may_wait_slow): the common case goes straight here, without
 * asking the framer for the bytes left of a PDU it is not in. */
static __attribute__((noinline)) bool conn_rx_may_wait_start(struct nvmet_tcp_conn *c, size_t q)
{
	uint8_t ch[NVME_TCP_CH_LEN];
	_Static_assert(NVME_TCP_CH_LEN == 8, "tcp_peek8 reads one common header");
	if (tcp_peek8(c->sock, ch) != 0)
		return false;
	uint32_t plen = le32_load(ch + offsetof(struct nvme_tcp_ch, plen));
	if (plen <= q && c->state == NVMET_TCP_ESTABLISHED && !c->params.hdgst && !c->params.ddgst) {
		/* whatever the header says, the socket holds all of its PDU (the common case: a
		 * capsule's frames came in one batch), so the answer is no: the pass takes it, and
		 * the step that takes it checks the header it keeps (not checked twice) */
		nvme_tcp_rx_keep_unchecked(&c->rx, ch);
		c->rx_peek_len = plen;
		return false;
	}
	return conn_rx_may_wait_left(c, q, c->rx_peek_len = nvme_tcp_rx_peek_len(&c->rx, ch));
}

/* conn_rx_may_wait inside a PDU (its header parsed or looked at: the framer knows the bytes
 * left) past the socket size it already knows to hold (out of line: once per PDU or so). */
static __attribute__((noinline)) bool conn_rx_may_wait_slow(struct nvmet_tcp_conn *c, size_t q)
{
	uint32_t left = nvme_tcp_rx_pdu_left(&c->rx);
	return conn_rx_may_wait_left(c, q, left ? left : c->rx_peek_len);
}

static inline bool conn_rx_may_wait(struct nvmet_tcp_conn *c)
{
	size_t q = tcp_recv_avail(c->sock);

	if (c->rx_wait_max && c->state == NVMET_TCP_ESTABLISHED && !c->kill_pending && !c->on_ready) {
		if (q < c->rx_wait_max)
			return tcp_state(c->sock) == TCP_ESTABLISHED; /* rx_wait_max <= the bytes left */
		if (c->rx_wait_whole)
			return false; /* the socket holds the rest of the PDU: the pass takes it */
	}
	if (c->rx.state == NVME_TCP_RX_HEADER && !c->rx_peek_len) {
		/* no header parsed, none looked at: only a common header at the front of the
		 * socket can tell (none when it holds no more than a read's capsule) */
		if (q <= NVMET_TCP_PEEK_MIN || !nvme_tcp_rx_at_pdu_start(&c->rx))
			return false;
		return conn_rx_may_wait_start(c, q);
	}
	return conn_rx_may_wait_slow(c, q);
}

/* The rest of conn_rx_may_wait, with the PDU's bytes left (0: unknown, nothing to wait for). */
static bool conn_rx_may_wait_left(struct nvmet_tcp_conn *c, size_t q, uint32_t left)
{
	if (!left || c->state != NVMET_TCP_ESTABLISHED || c->kill_pending || c->on_ready || q >= left)
		return false; /* nothing to wait for, or the PDU is complete: the pass takes it */
	uint32_t rcv_wnd;
	c->rx_wait_max = 0;
	if (tcp_rcv_room(c->sock, &rcv_wnd) != TCP_ESTABLISHED)
		return false;
	/* the peer may send rcv_wnd more; with q' >= q queued later, at least
	 * rcv_wnd - (q' - q): all the rest while rcv_wnd + q >= left, else as much as the
	 * socket holds while q' <= (rcv_wnd + q) / 2 */
	uint64_t reach = (uint64_t)rcv_wnd + q;
	c->rx_wait_whole = reach >= left;
	if (reach >= left)
		c->rx_wait_max = left;
	else if (rcv_wnd >= q)
		c->rx_wait_max = (uint32_t)(reach / 2) + 1;
	else
		return false;
	return true;
}

/* What a connection with work does in its turn (conn_turn) or at once (conn_rx_at_once): its
 * received data, a kill, its backlog; queued on nvmet_tcp.ready, behind the others, while it
 * still has work. The work done. */
static inline __attribute__((always_inline)) int conn_serve(struct nvmet_tcp_conn *c)
{
	int work = 0;
	if (c->rx_ready && c->sock)
		work += conn_recv(c);
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
	if (conn_has_work(c))
		conn_ready(c);
	return work;
}

/*
 * May c's received data be taken at once, inside its TCP_EV_RECV, rather than in a turn of
 * the next pass? Only for a connection whose turn would do nothing else first: connected
 * (Connect done: authorised), no kill, no backlog, not queued (the caller's test), not
 * inside a pass (in_poll) nor inside its own receive (in_rx), and no buffers back that
 * waiting commands have not been offered yet (nwaiting and freed: a pass resumes those
 * before new commands take what came back, poll_work). Its turn's work is then the same, one pass earlier, and bounded as a
 * turn is (conn_recv's NVMET_TCP_RX_BATCHES); what is left queues it (conn_serve), and
 * while it is queued its events only mark it. TCP lets a callback receive, send, flush and
 * close its socket (tcp.h; net/tcp/tcp_service.c does all four); teardown stays with the
 * pass (a kill only marks, conns_reap frees).
 */
static inline bool conn_rx_at_once_ok(const struct nvmet_tcp_conn *c)
{
	return c->authorised && c->state == NVMET_TCP_ESTABLISHED && !c->kill_pending && !c->in_rx &&
	       !nvmet_tcp.in_poll && !(nvmet_tcp.nwaiting && nvmet_tcp.freed) && list_empty(&c->tx_backlog);
}

/* conn_serve inside the event (conn_rx_at_once_ok said so); out of line: conn_event's other
 * cases keep their small frame. */
static __attribute__((noinline)) void conn_rx_at_once(struct nvmet_tcp_conn *c)
{
	nvmet_tcp.st.rx_at_once++;
	(void)conn_serve(c);
}

/* Socket events: received data marks the connection (the poll loop drains it under its
 * budget, nvmet_tcp_poll; while the rest of a PDU may wait in the socket, not even that:
 * conn_rx_may_wait), or, on a connected queue with nothing else to do, is taken at once
 * (conn_rx_at_once); send space and resets are handled here. */
/* conn_event's less common part: send space, a reset, buffers to hand to waiters. */
static __attribute__((noinline)) void conn_event_more(struct nvmet_tcp_conn *c, unsigned events)
{
	if (c->sock && (events & TCP_EV_SENT)) {
		c->tx_sent_owed = false; /* the event owed (conn_tx_refused) came */
		if (conn_tx_due(c) && conn_tx(c) < 0)
			conn_close(c, NVMET_TCP_CLOSING, false, "send failed");
	}
	if (c->sock && (events & TCP_EV_CLOSED))
		conn_close(c, NVMET_TCP_CLOSING, false, "connection reset or timed out");
	if (nvmet_tcp.nwaiting && nvmet_tcp.freed)
		resume_waiters();
}

static void conn_event(struct tcp_sock *s, void *ctx, unsigned events)
{
	struct nvmet_tcp_conn *c = ctx;
	(void)s;

	if (!c->sock)
		return;
	if (events & TCP_EV_RECV) {
		c->rx_ready = true;
		if (c->on_ready)
			; /* queued already: the pass takes it (conn_rx_may_wait would say no) */
		else if (conn_rx_may_wait(c))
			nvmet_tcp.st.rx_waits++;
		else if (conn_rx_at_once_ok(c))
			conn_rx_at_once(c); /* (c may be closed after it: c->sock NULL) */
		else
			conn_ready(c);
	}
	/* a segment that only carried data (most of them) ends here, and so does a TCP_EV_SENT
	 * that nothing waits for (the first, or one after a refusal whose send went since):
	 * no event owed (c->tx_sent_owed, which conn_event_more would clear: false already)
	 * and nothing to send (conn_tx_due). ACKs with no refusal before raise none
	 * (tcp_set_sent_when_owed, listener_event). */
	if ((events & TCP_EV_CLOSED) || ((events & TCP_EV_SENT) && (c->tx_sent_owed || conn_tx_due(c))) ||
	    (nvmet_tcp.nwaiting && nvmet_tcp.freed))
		conn_event_more(c, events);
}

static const struct tcp_ops conn_tcp_ops = { .event = conn_event };

/* --- listeners --- */

static void addr_text(uint32_t a, char *buf, size_t cap)
{
	snprintf(buf, cap, "%u.%u.%u.%u", (unsigned)(a >> 24), (unsigned)(a >> 16) & 0xff, (unsigned)(a >> 8) & 0xff,
		 (unsigned)a & 0xff);
}

/* The nvmet port a connection to laddr on this TCP port belongs to: the first with that
 * traddr, else the first listening on any address (0.0.0.0); -1 when none. */
static int port_for(uint16_t tcp_port, uint32_t laddr)
{
	int any = -1;
	for (unsigned i = 0; i < nvmet_port_count(); i++) {
		const struct nvmet_cfg_port *p = nvmet_port_at(i);
		if (!p || p->trtype != NVMET_TRTYPE_TCP || p->trsvcid != tcp_port)
			continue;
		if (p->traddr == laddr)
			return (int)i;
		if (p->traddr == 0 && any < 0)
			any = (int)i;
	}
	return any;
}

/* The holdings entry of host address raddr: the one in use, else (get) a free one; NULL
 * when none (there are as many entries as connections). */
static struct nvmet_tcp_host *host_entry(uint32_t raddr, bool get)
{
	struct nvmet_tcp_host *free = NULL;
	for (unsigned i = 0; i < NVMET_TCP_MAX_CONNS; i++) {
		struct nvmet_tcp_host *h = &nvmet_tcp.hosts[i];
		if (h->nconns && h->raddr == raddr)
			return h;
		if (!h->nconns && !free)
			free = h;
	}
	if (!get || !free)
		return NULL;
	memset(free, 0, sizeof(*free));
	free->raddr = raddr;
	return free;
}

/* Connections (any state, until freed) of host address raddr. */
static unsigned conns_of(uint32_t raddr)
{
	const struct nvmet_tcp_host *h = host_entry(raddr, false);
	return h ? h->nconns : 0;
}

/* Has c not completed Connect (holding nothing at the core)? Such a connection may be
 * evicted for a newcomer. */
static bool conn_evictable(const struct nvmet_tcp_conn *c)
{
	return c->sock && !c->authorised && c->inflight == 0 && c->ndbufs == 0 && !c->in_rx &&
	       (c->state == NVMET_TCP_WAIT_ICREQ || c->state == NVMET_TCP_ESTABLISHED) &&
	       (!c->q || nvmet_queue_qid(c->q) < 0);
}

/* Close and free the oldest evictable connection (of host raddr, or of any host when
 * raddr is 0). 0, or -EBUSY when there is none. */
static int conn_evict_oldest(uint32_t raddr)
{
	struct nvmet_tcp_conn *old = NULL;
	struct list_node *it;

	if (nvmet_tcp.in_poll)
		return -EBUSY; /* the poll walks the list: never from there */
	list_for_each(&nvmet_tcp.conns, it) {
		struct nvmet_tcp_conn *c = container_of(it, struct nvmet_tcp_conn, node);
		if ((!raddr || c->raddr == raddr) && conn_evictable(c) && (!old || c->seq < old->seq))
			old = c;
	}
	if (!old)
		return -EBUSY;
	log_warn("tcp: port %u: evicting a connection that did not complete Connect (%s)", old->port,
		 raddr ? "its host holds its share" : "the pool is full");
	nvmet_tcp.st.evicted++;
	conn_close(old, NVMET_TCP_CLOSING, false, "evicted");
	conn_free(old); /* nothing of it at the core */
	return 0;
}

/* Room for a connection from raddr: within its host's share and the pool, evicting the
 * oldest connection that never completed Connect when needed. 0 or -EBUSY (refuse). */
static int conn_admit(uint32_t raddr)
{
	if (conns_of(raddr) >= NVMET_TCP_CONNS_PER_PEER && conn_evict_oldest(raddr)) {
		nvmet_tcp.st.peer_refused++;
		return -EBUSY;
	}
	if (nvmet_tcp.nconns >= NVMET_TCP_MAX_CONNS && conn_evict_oldest(0)) {
		nvmet_tcp.st.refused++;
		return -EBUSY;
	}
	return 0;
}

static void listener_event(struct tcp_sock *ls, void *ctx, unsigned events)
{
	struct nvmet_tcp_listener *l = ctx;
	struct tcp_sock *s;

	if (!(events & TCP_EV_ACCEPT))
		return;
	while ((s = tcp_accept(ls))) {
		struct tcp_info ti;
		tcp_get_info(s, &ti);
		uint32_t laddr = ti.laddr;
		int port = port_for(l->tcp_port, laddr);
		if (port < 0) {
			char a[16];
			addr_text(laddr, a, sizeof(a));
			nvmet_tcp.st.wrong_addr++;
			log_warn("tcp: connection to %s:%u refused: no port has that traddr", a, l->tcp_port);
			tcp_abort(s);
			continue;
		}
		struct nvmet_tcp_conn *c = NULL;
		int rc = conn_admit(ti.raddr);
		if (!rc && !(c = mm_pool_alloc(&nvmet_tcp.conn_pool))) {
			nvmet_tcp.st.refused++;
			rc = -ENOMEM;
		}
		if (rc) {
			char a[16];
			addr_text(ti.raddr, a, sizeof(a));
			log_warn("tcp: port %u: connection from %s refused: %u connections in use (%u of that host), "
				 "none to evict", l->tcp_port, a, nvmet_tcp.nconns, conns_of(ti.raddr));
			tcp_abort(s);
			continue;
		}
		memset(c, 0, sizeof(*c));
		c->host = host_entry(ti.raddr, true); /* never NULL: an entry per connection */
		c->host->nconns++;
		c->state = NVMET_TCP_WAIT_ICREQ;
		c->port = (unsigned)port;
		c->raddr = ti.raddr;
		c->seq = ++nvmet_tcp.accept_seq;
		c->sock = s;
		c->nfree = NVMET_TCP_QUEUE_DEPTH;
		c->free_mask = NVMET_TCP_QUEUE_DEPTH == 64 ? ~0ull : (1ull << NVMET_TCP_QUEUE_DEPTH) - 1;
		c->connect_deadline_ns = clock_now_ns() + NVMET_TCP_CONNECT_TIMEOUT_MS * NSEC_PER_MSEC;
		for (unsigned i = 0; i < NVMET_TCP_QUEUE_DEPTH; i++) {
			c->reqs[i].conn = c;
			c->reqs[i].slot = (uint8_t)i;
			c->reqs[i].frags = c->reqs[i].ifrags; /* (what nvmet_tcp_req_get finds in a free one) */
			c->reqs[i].sg = c->reqs[i].isg;
		}
		list_init(&c->tx_backlog);
		list_init(&c->waitq);
		nvme_tcp_rx_init(&c->rx, &c->params);
		nvme_tcp_rx_set_place(&c->rx, conn_place, c);
		list_add_tail(&nvmet_tcp.conns, &c->node);
		nvmet_tcp.nconns++;
		nvmet_tcp.timeouts_due = true; /* its timeouts from the next pass on */
		pass_due_note();
		nvmet_tcp.st.accepted++;
		tcp_set_keepalive(s, NVMET_TCP_KEEPALIVE_IDLE_MS * NSEC_PER_MSEC,
				  NVMET_TCP_KEEPALIVE_INTVL_MS * NSEC_PER_MSEC, NVMET_TCP_KEEPALIVE_PROBES);
		/* TCP_EV_SENT only when owed (after a refusal): nothing here waits for send space
		 * otherwise (conn_event: tx_sent_owed and r2t_due follow a refusal; a backlog
		 * not owed one, waiting commands, the write budget are the poll loop's) */
		tcp_set_sent_when_owed(s);
		tcp_set_ops(s, &conn_tcp_ops, c); /* may deliver events: c last */
	}
}

static const struct tcp_ops listener_tcp_ops = { .event = listener_event };

static void listeners_close(void)
{
	for (unsigned i = 0; i < nvmet_tcp.nlisteners; i++)
		tcp_close(nvmet_tcp.listeners[i].sock);
	nvmet_tcp.nlisteners = 0;
}

static void pools_destroy(void)
{
	mm_pool_destroy(&nvmet_tcp.dbuf_pool);
	mm_pool_destroy(&nvmet_tcp.table_pool);
	mm_pool_destroy(&nvmet_tcp.buf_pool);
	mm_pool_destroy(&nvmet_tcp.conn_pool);
}

/* Every TCP port's traddr is 0.0.0.0 or one of the appliance's addresses. */
static int check_addresses(void)
{
	struct net_config nc;

	net_config_get(&nc);
	for (unsigned i = 0; i < nvmet_port_count(); i++) {
		const struct nvmet_cfg_port *p = nvmet_port_at(i);
		char a[16];
		if (!p || p->trtype != NVMET_TRTYPE_TCP || p->traddr == 0 || p->traddr == nc.addr)
			continue;
		addr_text(p->traddr, a, sizeof(a));
		log_err("tcp: portid %u: traddr %s is not an address of this appliance (net.address; 0.0.0.0 = any)",
			p->portid, a);
		return -EADDRNOTAVAIL;
	}
	return 0;
}

static void timeouts_fire(struct timer *t, void *arg);

/* Start the transport on every TCP port of the target. */
int nvmet_tcp_start(const struct nvmet_tcp_mem_ops *mops)
{
	int rc;

	if (nvmet_tcp.running)
		return -EBUSY;
	if (nvmet_tcp.live)
		return -EBUSY; /* the previous run still has buffers out */
	if ((rc = check_addresses()))
		return rc;
	memset(&nvmet_tcp.st, 0, sizeof(nvmet_tcp.st));
	memset(nvmet_tcp.reason_logged, 0, sizeof(nvmet_tcp.reason_logged));
	nvmet_tcp.live = true;
	nvmet_tcp.mops = mops;
	list_init(&nvmet_tcp.conns);
	list_init(&nvmet_tcp.ready);
	nvmet_tcp.nready = 0;
	memset(nvmet_tcp.hosts, 0, sizeof(nvmet_tcp.hosts));
	nvmet_tcp.write_waiting = 0;
	nvmet_tcp.reap_due = false;
	timer_init(&nvmet_tcp.timeouts_timer, "nvmet_tcp_timeouts", timeouts_fire, NULL);
	nvmet_tcp.timeouts_due = true;
	nvmet_tcp.nwaiting = 0;
	nvmet_tcp.write_held = 0;
	nvmet_tcp.freed = false;
	nvmet_tcp.nconns = 0;
	nvmet_tcp.nlisteners = 0;
	nvmet_tcp.accept_seq = 0;
	nvmet_tcp.in_poll = false;
	if ((rc = mm_pool_init(&nvmet_tcp.conn_pool, "nvmet_tcp_conn", sizeof(struct nvmet_tcp_conn),
			       NVMET_TCP_MAX_CONNS)))
		goto fail;
	if ((rc = mm_pool_init(&nvmet_tcp.buf_pool, "nvmet_tcp_buf", NVMET_TCP_BUF_SIZE, NVMET_TCP_BUFS)))
		goto fail_conn_pool;
	if ((rc = mm_pool_init(&nvmet_tcp.table_pool, "nvmet_tcp_table", sizeof(struct nvmet_tcp_table),
			       NVMET_TCP_SEG_TABLES)))
		goto fail_buf_pool;
	if ((rc = mm_pool_init(&nvmet_tcp.dbuf_pool, "nvmet_tcp_dbuf", sizeof(struct nvmet_tcp_dbuf), NVMET_TCP_DBUFS)))
		goto fail_table_pool;
	for (unsigned i = 0; i < nvmet_port_count(); i++) {
		const struct nvmet_cfg_port *p = nvmet_port_at(i);
		bool dup = false;
		if (!p || p->trtype != NVMET_TRTYPE_TCP)
			continue;
		for (unsigned j = 0; j < nvmet_tcp.nlisteners; j++)
			dup |= nvmet_tcp.listeners[j].tcp_port == p->trsvcid;
		if (dup)
			continue; /* one socket per TCP port: connections pick their port by address */
		if (nvmet_tcp.nlisteners == NVMET_TCP_MAX_LISTENERS) {
			log_warn("tcp: portid %u: more than %u TCP ports, not listening", p->portid,
				 NVMET_TCP_MAX_LISTENERS);
			continue;
		}
		struct nvmet_tcp_listener *l = &nvmet_tcp.listeners[nvmet_tcp.nlisteners];
		l->port = i;
		l->tcp_port = p->trsvcid;
		if ((rc = tcp_listen(p->trsvcid, NVMET_TCP_LISTEN_BACKLOG, &listener_tcp_ops, l, &l->sock))) {
			log_err("tcp: cannot listen on TCP port %u (%d)", p->trsvcid, rc);
			goto fail_listeners;
		}
		nvmet_tcp.nlisteners++;
		char a[16];
		addr_text(p->traddr, a, sizeof(a));
		log_info("tcp: portid %u listening on %s:%u", p->portid, p->traddr ? a : "any", p->trsvcid);
	}
	nvmet_tcp.running = true;
	pass_due_note();
	return 0;

fail_listeners:
	listeners_close();
	mm_pool_destroy(&nvmet_tcp.dbuf_pool);
fail_table_pool:
	mm_pool_destroy(&nvmet_tcp.table_pool);
fail_buf_pool:
	mm_pool_destroy(&nvmet_tcp.buf_pool);
fail_conn_pool:
	mm_pool_destroy(&nvmet_tcp.conn_pool);
fail:
	timer_cancel(&timer_default_queue, &nvmet_tcp.timeouts_timer);
	nvmet_tcp.live = false;
	pass_due_note();
	nvmet_tcp.mops = NULL;
	return rc;
}

/* A connection that did not get Connected in time, or an R2T whose data did not come in
 * time: closed (the peer holds nothing more). 1 when it closed c. */
static int conn_timeouts(struct nvmet_tcp_conn *c, uint64_t now)
{
	const char *why = NULL;

	if (!c->sock || (c->state != NVMET_TCP_WAIT_ICREQ && c->state != NVMET_TCP_ESTABLISHED))
		return 0;
	if ((!c->q || nvmet_queue_qid(c->q) < 0) && now >= c->connect_deadline_ns) {
		why = c->state == NVMET_TCP_WAIT_ICREQ ? "no ICReq in time" : "no Connect in time";
	} else if (now >= c->next_r2t_check_ns) {
		c->next_r2t_check_ns = now + 100 * NSEC_PER_MSEC;
		for (unsigned i = 0; i < NVMET_TCP_QUEUE_DEPTH && !why; i++)
			if (c->reqs[i].state == NVMET_TCP_REQ_R2T && c->reqs[i].r2t_sent &&
			    now >= c->reqs[i].r2t_deadline_ns)
				why = "R2T data did not come in time";
	}
	if (!why)
		return 0;
	nvmet_tcp.st.timeouts++;
	log_warn("tcp: port %u: %s: closing the connection", c->port, why);
	conn_close(c, NVMET_TCP_CLOSING, false, why);
	return 1;
}

/* The timeouts timer: the next pass looks at the timeouts (no work inside the timer queue). */
static void timeouts_fire(struct timer *t, void *arg)
{
	(void)t;
	(void)arg;
	nvmet_tcp.timeouts_due = true;
	pass_due_note();
}

/* The timeouts of every connection (conn_timeouts), and when the next may be due: a
 * connection's Connect deadline until it is connected, and its next look for late R2T
 * data (every 100 ms): the timer is armed for it. The poll loop calls this only once that
 * time came (the timer fired) or a connection came. */
static int conns_timeouts(uint64_t now)
{
	struct list_node *it;
	uint64_t next = UINT64_MAX;
	int work = 0;

	list_for_each(&nvmet_tcp.conns, it) {
		struct nvmet_tcp_conn *c = container_of(it, struct nvmet_tcp_conn, node);
		work += conn_timeouts(c, now);
		if (!c->sock || (c->state != NVMET_TCP_WAIT_ICREQ && c->state != NVMET_TCP_ESTABLISHED))
			continue;
		if (c->next_r2t_check_ns < next)
			next = c->next_r2t_check_ns;
		if ((!c->q || nvmet_queue_qid(c->q) < 0) && c->connect_deadline_ns < next)
			next = c->connect_deadline_ns;
	}
	if (next != UINT64_MAX)
		timer_arm(&timer_default_queue, &nvmet_tcp.timeouts_timer, next);
	return work;
}

/* Free closed connections with nothing left at the core; once stopped, the pools. Looks
 * only after a close, until no closed connection is left. */
static int conns_reap(void)
{
	struct list_node *it, *tmp;
	int work = 0;
	bool left = false;

	if (!nvmet_tcp.reap_due)
		return 0;
	list_for_each_safe(&nvmet_tcp.conns, it, tmp) {
		struct nvmet_tcp_conn *c = container_of(it, struct nvmet_tcp_conn, node);
		if (c->state != NVMET_TCP_FAILED && c->state != NVMET_TCP_CLOSING)
			continue;
		if (c->inflight == 0 && c->ndbufs == 0) {
			conn_free(c);
			work++;
		} else {
			left = true;
		}
	}
	nvmet_tcp.reap_due = left;
	pass_due_note();
	return work;
}

/* Once stopped: the pools go when no connection is left and TCP gave back every data
 * fragment it was sending. */
static void pools_destroy_if_idle(void)
{
	if (nvmet_tcp.live && !nvmet_tcp.running && nvmet_tcp.nconns == 0 && nvmet_tcp.dbuf_pool.in_use == 0) {
		pools_destroy();
		timer_cancel(&timer_default_queue, &nvmet_tcp.timeouts_timer);
		nvmet_tcp.live = false;
		pass_due_note();
		nvmet_tcp.mops = NULL;
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
	pass_due_note();
	nvmet_tcp_dbuf_spares_drain(); /* none kept from here on (nvmet_tcp_dbuf_unref) */
	conns_reap();
	pools_destroy_if_idle();
}

/* One turn of a connection queued on nvmet_tcp.ready (the first): conn_serve. Inline:
 * poll_work's and poll_ready's loop. The work done. */
static inline __attribute__((always_inline)) int conn_turn(struct nvmet_tcp_conn *c)
{
	conn_unready(c);
	return conn_serve(c);
}

/* Each connection queued when the pass began, once, in turn (conn_turn), while work is under
 * budget: out of budget, the rest stay first for the next pass, and one that still has work
 * goes behind them. Inline: poll_work's and poll_ready's. work: done so far; returns it. */
static inline __attribute__((always_inline)) int conns_turns(unsigned budget, int work)
{
	for (unsigned n = nvmet_tcp.nready; n && (unsigned)work < budget; n--)
		work += conn_turn(container_of(nvmet_tcp.ready.next, struct nvmet_tcp_conn, ready_node));
	return work;
}

/* The end of a pass: the timeouts once one may be due, the waiting commands when buffers
 * came back, and once stopped the pools when all came back. work: done so far; returns it. */
static __attribute__((noinline)) int poll_end(int work)
{
	if (nvmet_tcp.timeouts_due) {
		nvmet_tcp.timeouts_due = false;
		pass_due_note();
		work += conns_timeouts(clock_now_ns());
	}
	if (nvmet_tcp.nwaiting && nvmet_tcp.freed)
		work += resume_waiters(); /* buffers this pass gave back */
	nvmet_tcp.in_poll = false;
	if (!nvmet_tcp.running)
		pools_destroy_if_idle();
	return work;
}

/*
 * The poll loop's work. A pass looks only at what has work: the connections in nvmet_tcp.ready
 * (received data, a kill, responses waiting for room), the timeouts once one may be due
 * (nvmet_tcp.timeouts_due, set by its timer), closed connections after a close, waiting commands while
 * there are any. An idle connection costs a pass nothing, however many there are.
 */
static __attribute__((noinline)) int poll_work(unsigned budget)
{
	int work = 0;

	nvmet_tcp.in_poll = true;
	/* first the connections closed by the last pass whose commands are all done, then
	 * the waiting commands (before new ones take what came back) */
	work += conns_reap();
	if (nvmet_tcp.nwaiting)
		work += resume_waiters();
	return poll_end(conns_turns(budget, work));
}

/* poll_work's pass when only connections are queued (nothing to reap, no waiting command, no
 * timeout due, running: nvmet_tcp.pass_due and nwaiting clear): their turns, then poll_end
 * only if the turns made any of that due (a close, a waiting command, a stop). */
static __attribute__((noinline)) int poll_ready(unsigned budget)
{
	nvmet_tcp.in_poll = true;
	int work = conns_turns(budget, 0);
	if (nvmet_tcp.nwaiting | (unsigned)nvmet_tcp.pass_due)
		return poll_end(work);
	nvmet_tcp.in_poll = false;
	return work;
}

/* Poll-loop work (poll_work, or poll_ready when only connections are queued); a pass with
 * nothing to do returns at once. */
int nvmet_tcp_poll(unsigned budget)
{
	/* no clock read: the timeouts come by their timer (the loop's timer queue); the rest
	 * of what a pass looks at besides connections and waiters in one flag (pass_due) */
	unsigned more = nvmet_tcp.nwaiting | (unsigned)nvmet_tcp.pass_due;
	if (!(nvmet_tcp.nready | more) || !nvmet_tcp.live)
		return 0;
	return more ? poll_work(budget) : poll_ready(budget);
}
POLLER(nvmet_tcp, nvmet_tcp_poll);

unsigned nvmet_tcp_conn_count(void)
{
	return nvmet_tcp.live ? nvmet_tcp.nconns : 0;
}

unsigned nvmet_tcp_conn_count_state(enum nvmet_tcp_conn_state s)
{
	struct list_node *it;
	unsigned n = 0;
	if (!nvmet_tcp.live)
		return 0;
	list_for_each(&nvmet_tcp.conns, it)
		n += container_of(it, struct nvmet_tcp_conn, node)->state == s;
	return n;
}

const struct nvmet_tcp_stats *nvmet_tcp_stats(void)
{
	return &nvmet_tcp.st;
}

/* nvmet.p2p = auto (true) | off (false). */
void nvmet_tcp_set_p2p(bool on)
{
	nvmet_tcp.p2p_off = !on;
}

/* nvmet.write_budget_kib. */
void nvmet_tcp_set_write_budget(uint32_t bytes)
{
	if (bytes < 128u * 1024)
		bytes = 128u * 1024;
	nvmet_tcp.write_budget = bytes > NVMET_TCP_WRITE_HELD_LIMIT ? NVMET_TCP_WRITE_HELD_LIMIT : bytes;
}

bool nvmet_tcp_p2p(void)
{
	return !nvmet_tcp.p2p_off;
}

/* Commands waiting for buffers. */
unsigned nvmet_tcp_waiting(void)
{
	return nvmet_tcp.live ? nvmet_tcp.nwaiting : 0;
}
