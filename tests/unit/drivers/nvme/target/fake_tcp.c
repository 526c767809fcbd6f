/*
 * fake_tcp.c - the fake net/tcp of fake_tcp.h: the tcp.h calls the NVMe/TCP transport
 * makes, over byte streams in both directions, fragments counted by token.
 */
#include "fake_tcp.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "drivers/nvme/target/nvmet_tcp_pdu.h"
#include "lib/clock.h"
#include "lib/timer.h"
#include "net/net.h"
#include "fake_nvmet_transport.h"

struct tcp_sock ftcp_listener;
struct tcp_sock ftcp_conns[FTCP_CONNS];
unsigned ftcp_handed, ftcp_released;
static unsigned pending;               /* connection to accept, +1; 0 none */
static uint8_t release_count[FTCP_TOKENS];

void ftcp_violation(const char *what)
{
	fprintf(stderr, "fake_tcp: contract violation: %s\n", what);
	abort();
}

static void frag_release(struct netdev_frag_owner *o, uint64_t token)
{
	(void)o;
	if (token >= FTCP_TOKENS || release_count[token]++)
		ftcp_violation("fragment released twice (or unknown token)");
	ftcp_released++;
}
static struct netdev_frag_owner ftcp_owner = { "fake-tcp", frag_release };

bool ftcp_open(const struct tcp_sock *s)
{
	return !s->closed && !s->aborted;
}

/* --- net/tcp/tcp.h and net/net.h, as the transport uses them --- */

void net_config_get(struct net_config *c)
{
	memset(c, 0, sizeof(*c));
	c->addr = FTCP_LOCAL_ADDR;
	c->netmask = 0xffffff00u;
}

int tcp_listen(uint16_t port, unsigned backlog, const struct tcp_ops *ops, void *ctx, struct tcp_sock **out)
{
	(void)backlog;
	if (ftcp_listener.listener)
		ftcp_violation("a second listener");
	ftcp_listener.listener = true;
	ftcp_listener.port = port;
	ftcp_listener.ops = ops;
	ftcp_listener.ctx = ctx;
	*out = &ftcp_listener;
	return 0;
}

struct tcp_sock *tcp_accept(struct tcp_sock *l)
{
	if (l != &ftcp_listener)
		ftcp_violation("accept on a socket that is not the listener");
	if (!pending)
		return NULL;
	struct tcp_sock *s = &ftcp_conns[pending - 1];
	pending = 0;
	s->accepted = true;
	return s;
}

void tcp_set_ops(struct tcp_sock *s, const struct tcp_ops *ops, void *ctx)
{
	s->ops = ops;
	s->ctx = ctx;
}

void tcp_set_sent_when_owed(struct tcp_sock *s)
{
	s->sent_when_owed = true; /* (the fake's TCP_EV_SENT comes when a test says so: ftcp_ack) */
}

void tcp_set_authorised(struct tcp_sock *s)
{
	if (!ftcp_open(s))
		ftcp_violation("tcp_set_authorised on a closed socket");
	s->authorised = true;
}

void tcp_set_keepalive(struct tcp_sock *s, uint64_t idle_ns, uint64_t intvl_ns, unsigned count)
{
	(void)intvl_ns;
	(void)count;
	s->keepalive_idle_ns = idle_ns;
}

void tcp_get_info(const struct tcp_sock *s, struct tcp_info *out)
{
	memset(out, 0, sizeof(*out));
	out->state = ftcp_open(s) ? TCP_ESTABLISHED : TCP_CLOSED;
	out->laddr = s->laddr;
	out->lport = ftcp_listener.port;
	out->raddr = s->raddr;
	out->rport = (uint16_t)(FTCP_PEER_PORT + (s - ftcp_conns));
}

enum tcp_state tcp_rcv_room(const struct tcp_sock *s, uint32_t *rcv_wnd)
{
	*rcv_wnd = 65535; /* the fake's peer may always send a full unscaled window more */
	return tcp_state(s);
}

enum tcp_state tcp_state(const struct tcp_sock *s)
{
	/* the peer's FIN in: CLOSE_WAIT, as the real socket (nothing more will come) */
	return !ftcp_open(s) ? TCP_CLOSED : s->eof ? TCP_CLOSE_WAIT : TCP_ESTABLISHED;
}

int tcp_recv_frags(struct tcp_sock *s, struct netdev_frag *out, unsigned max, size_t max_bytes)
{
	unsigned n = 0;
	if (!ftcp_open(s))
		ftcp_violation("recv on a closed socket");
	while (n < max && s->rx_off < s->rx_len && max_bytes && ftcp_handed < FTCP_TOKENS) {
		size_t len = s->rx_len - s->rx_off;
		if (len > s->frag_size)
			len = s->frag_size;
		if (len > max_bytes)
			len = max_bytes;
		out[n] = (struct netdev_frag){ .addr = dma_addr_host(s->rx + s->rx_off), .offset = s->rx_off,
					       .len = (uint32_t)len, .token = ftcp_handed++, .owner = &ftcp_owner };
		if (s->dev_frags && !(s->dev_mix >= 2 && (out[n].token & 1))) {
			out[n].addr.cls = MEM_CLASS_DEVICE;
			out[n].provider = s->dev_mix == 1 && (out[n].token & 1) ? 2 : 1;
		} else if (s->dev_frags && s->dev_mix == 3) {
			out[n].provider = 1; /* DRAM, yet the device fragments' provider id */
		}
		s->rx_off += len;
		max_bytes -= len;
		n++;
	}
	return (int)n;
}

int tcp_recv_frags_len(struct tcp_sock *s, struct netdev_frag *out, unsigned max, size_t max_bytes, size_t *took)
{
	int n = tcp_recv_frags(s, out, max, max_bytes);
	*took = 0;
	for (int i = 0; i < n; i++)
		*took += out[i].len;
	return n;
}

size_t tcp_recv_avail(const struct tcp_sock *s)
{
	return s->rx_len - s->rx_off;
}

int tcp_peek(const struct tcp_sock *s, size_t off, void *buf, size_t len)
{
	if (len > s->rx_len - s->rx_off || off > s->rx_len - s->rx_off - len)
		return -EAGAIN;
	memcpy(buf, s->rx + s->rx_off + off, len);
	return 0;
}

int tcp_peek8(const struct tcp_sock *s, uint8_t buf[8])
{
	return tcp_peek(s, 0, buf, 8);
}

bool tcp_recv_eof(const struct tcp_sock *s)
{
	return s->eof && s->rx_off == s->rx_len;
}

size_t tcp_send_space(const struct tcp_sock *s)
{
	return s->space;
}

long tcp_send_copy(struct tcp_sock *s, const void *buf, size_t len)
{
	if (!ftcp_open(s))
		ftcp_violation("send on a closed socket");
	if (len > s->space)
		len = s->space;
	if (len > FTCP_TX_MAX - s->tx_len)
		ftcp_violation("fake TX buffer full: drop it in long runs");
	memcpy(s->tx + s->tx_len, buf, len);
	s->tx_len += len;
	s->space -= len;
	return (long)len;
}

void *tcp_send_place(struct tcp_sock *s, size_t len, size_t more)
{
	if (!ftcp_open(s))
		ftcp_violation("send on a closed socket");
	if (!len || len > s->space || more > s->space - len)
		return NULL;
	if (len > FTCP_TX_MAX - s->tx_len)
		ftcp_violation("fake TX buffer full: drop it in long runs");
	return s->tx + s->tx_len;
}

void tcp_send_placed(struct tcp_sock *s, size_t len)
{
	s->tx_len += len;
	s->space -= len;
}

void tcp_send_placed_flush(struct tcp_sock *s, size_t len)
{
	tcp_send_placed(s, len);
}

unsigned tcp_send_frags_room(const struct tcp_sock *s)
{
	unsigned room = ftcp_open(s) ? FTCP_HELD - s->nheld : 0;
	return s->frag_room && s->frag_room < room ? s->frag_room : room;
}

/* tcp_send_place that also asks for the header's entry and `entries` more (tcp.h). */
void *tcp_send_place_frags(struct tcp_sock *s, size_t len, size_t more, unsigned entries)
{
	if (ftcp_open(s) && tcp_send_frags_room(s) <= entries)
		return NULL;
	return tcp_send_place(s, len, more);
}

/* Zero copy: the bytes go on the wire (copied here for the test to read), the fragments
 * stay held until ftcp_ack(); on error the references are released (tcp.h's rule). */
int tcp_send_frags(struct tcp_sock *s, const struct netdev_frag *frags, unsigned n)
{
	size_t total = 0;
	if (!ftcp_open(s))
		ftcp_violation("send on a closed socket");
	for (unsigned i = 0; i < n; i++)
		total += frags[i].len;
	if (total > s->space || n > tcp_send_frags_room(s) || total > FTCP_TX_MAX - s->tx_len) {
		for (unsigned i = 0; i < n; i++) {
			struct netdev_frag f = frags[i];
			netdev_frag_release(&f);
		}
		return -ENOBUFS;
	}
	for (unsigned i = 0; i < n; i++) {
		memcpy(s->tx + s->tx_len, (const void *)(uintptr_t)frags[i].addr.bus, frags[i].len);
		s->tx_len += frags[i].len;
		s->frag_bytes[frags[i].addr.cls] += frags[i].len;
		s->held[s->nheld++] = frags[i];
	}
	s->space -= total;
	return 0;
}

/* The header placed, then its fragments: room for them was promised by
 * tcp_send_place_frags, so a refusal here is the caller's violation. */
void tcp_send_placed_frags(struct tcp_sock *s, size_t len, const struct netdev_frag *frags, unsigned n)
{
	tcp_send_placed(s, len);
	if (tcp_send_frags(s, frags, n))
		ftcp_violation("fragments beyond what tcp_send_place_frags promised (or the fake TX buffer full: drop it in long runs)");
}

/* tcp_send_place_frags with room for a tail of tail_len bytes more in one more entry, built
 * where it goes on the wire: behind the header and the `more` bytes of data (tcp.h). */
void *tcp_send_place_frags_tail(struct tcp_sock *s, size_t len, size_t more, unsigned entries, size_t tail_len,
				void **tail)
{
	if (!tail_len || tail_len > TCP_SEND_TAIL_MAX)
		return NULL;
	if (ftcp_open(s) && tcp_send_frags_room(s) <= entries + 1)
		return NULL;
	if (more > SIZE_MAX / 2 || !tcp_send_place(s, len, more + tail_len))
		return NULL;
	if (len + more + tail_len > FTCP_TX_MAX - s->tx_len)
		ftcp_violation("fake TX buffer full: drop it in long runs");
	*tail = s->tx + s->tx_len + len + more;
	return s->tx + s->tx_len;
}

/* The header, its fragments (holding the `more` bytes promised), then the tail. */
void tcp_send_placed_frags_tail(struct tcp_sock *s, size_t len, const struct netdev_frag *frags, unsigned n,
				void *tail, size_t tail_len)
{
	tcp_send_placed_frags(s, len, frags, n);
	if (tail != s->tx + s->tx_len)
		ftcp_violation("the fragments do not hold the bytes tcp_send_place_frags_tail was told");
	s->tx_len += tail_len;
	s->space -= tail_len;
}

void tcp_send_placed_frags_tail_flush(struct tcp_sock *s, size_t len, const struct netdev_frag *frags, unsigned n,
				      void *tail, size_t tail_len)
{
	tcp_send_placed_frags_tail(s, len, frags, n, tail, tail_len);
	tcp_flush(s);
}

static void release_held(struct tcp_sock *s)
{
	for (unsigned i = 0; i < s->nheld; i++)
		netdev_frag_release(&s->held[i]);
	s->nheld = 0;
}

void tcp_flush(struct tcp_sock *s)
{
	s->flushes++;
}

void tcp_ack_hold(struct tcp_sock *s)
{
	if (s)
		s->ack_holds++;
}

void tcp_close(struct tcp_sock *s)
{
	if (s == &ftcp_listener) {
		s->listener = false;
		return;
	}
	if (!ftcp_open(s))
		ftcp_violation("socket closed twice");
	s->closed = true;
	release_held(s); /* as the stack does once the data is delivered or the socket dies */
}

void tcp_abort(struct tcp_sock *s)
{
	if (!ftcp_open(s))
		ftcp_violation("socket closed twice");
	s->aborted = true;
	release_held(s);
}

/* --- the host's side --- */

void ftcp_reset(void)
{
	memset(&ftcp_listener, 0, sizeof(ftcp_listener));
	for (unsigned i = 0; i < FTCP_CONNS; i++) {
		struct tcp_sock *s = &ftcp_conns[i];
		s->rx_len = s->rx_off = s->tx_len = s->tx_read = 0;
		s->nheld = 0;
		s->ops = NULL;
		s->listener = s->closed = s->aborted = s->eof = s->accepted = s->dev_frags = false;
		s->dev_mix = 0;
	}
	memset(release_count, 0, sizeof(release_count));
	ftcp_handed = ftcp_released = 0;
	pending = 0;
}

static struct tcp_sock *arrive(unsigned i, size_t frag_size, uint32_t laddr, uint32_t raddr)
{
	struct tcp_sock *s = &ftcp_conns[i];
	if (!s->rx && (!(s->rx = malloc(FTCP_RX_MAX)) || !(s->tx = malloc(FTCP_TX_MAX))))
		ftcp_violation("out of memory for a socket's buffers");
	s->raddr = raddr;
	s->authorised = false;
	s->keepalive_idle_ns = 0;
	s->sent_when_owed = false;
	s->rx_len = s->rx_off = s->tx_len = s->tx_read = 0;
	s->nheld = s->flushes = s->frag_room = 0;
	memset(s->frag_bytes, 0, sizeof(s->frag_bytes));
	s->ops = NULL;
	s->closed = s->aborted = s->eof = s->accepted = s->dev_frags = false;
	s->dev_mix = 0;
	s->frag_size = frag_size ? frag_size : 1;
	s->laddr = laddr;
	s->space = TCP_SND_BUF;
	pending = i + 1;
	if (!ftcp_listener.listener)
		ftcp_violation("connect without a listener");
	ftcp_listener.ops->event(&ftcp_listener, ftcp_listener.ctx, TCP_EV_ACCEPT);
	return s;
}

struct tcp_sock *ftcp_arrive(unsigned i, size_t frag_size, uint32_t laddr)
{
	return arrive(i, frag_size, laddr, FTCP_PEER_ADDR);
}

struct tcp_sock *ftcp_arrive_from(unsigned i, size_t frag_size, uint32_t raddr)
{
	return arrive(i, frag_size, FTCP_LOCAL_ADDR, raddr);
}

struct tcp_sock *ftcp_connect(unsigned i, size_t frag_size)
{
	struct tcp_sock *s = ftcp_arrive(i, frag_size, FTCP_LOCAL_ADDR);
	if (!s->accepted || !s->ops || !ftcp_open(s))
		ftcp_violation("the transport did not take the connection");
	return s;
}

static uint8_t pdu_buf[NVME_TCP_CMD_HLEN + 4 + 256 * 1024 + 4];

void ftcp_icreq(struct tcp_sock *s, uint16_t pfv, uint8_t hpda, uint8_t dgst)
{
	ftcp_send(s, pdu_buf, nth_icreq(pdu_buf, sizeof(pdu_buf), pfv, hpda, dgst, 0));
}

void ftcp_capsule(struct tcp_sock *s, bool hdgst, bool ddgst, const struct nvme_sqe *sqe, const void *data,
		  uint32_t len)
{
	size_t n = nth_capsule(pdu_buf, sizeof(pdu_buf), hdgst, ddgst, sqe, data, len);
	if (!n)
		ftcp_violation("capsule larger than the host's buffer");
	ftcp_send(s, pdu_buf, n);
}

void ftcp_h2c(struct tcp_sock *s, bool hdgst, bool ddgst, uint16_t cccid, uint16_t ttag, uint32_t datao,
	      const void *data, uint32_t len, bool last)
{
	size_t n = nth_h2c(pdu_buf, sizeof(pdu_buf), hdgst, ddgst, cccid, ttag, datao, data, len, last);
	if (!n)
		ftcp_violation("H2CData larger than the host's buffer");
	ftcp_send(s, pdu_buf, n);
}

/* TCP_EV_RECV, then poll passes (the transport receives from the poll loop) until the
 * transport took every byte, closed s or stopped taking bytes. */
static void deliver(struct tcp_sock *s)
{
	s->ops->event(s, s->ctx, TCP_EV_RECV);
	for (;;) {
		size_t before = s->rx_off;
		nvmet_tcp_poll(64);
		timer_queue_run(&timer_default_queue, clock_now_ns()); /* as the poll loop does */
		if (!ftcp_open(s) || s->rx_off == s->rx_len || s->rx_off == before)
			break;
	}
}

void ftcp_pass(void)
{
	timer_queue_run(&timer_default_queue, clock_now_ns());
	nvmet_tcp_poll(64);
}

void ftcp_send(struct tcp_sock *s, const void *buf, size_t len)
{
	if (!ftcp_open(s))
		return; /* the transport closed it: the bytes go nowhere */
	if (len > FTCP_RX_MAX - s->rx_len)
		len = FTCP_RX_MAX - s->rx_len;
	memcpy(s->rx + s->rx_len, buf, len);
	s->rx_len += len;
	deliver(s);
}

void ftcp_eof(struct tcp_sock *s)
{
	if (!ftcp_open(s))
		return;
	s->eof = true;
	deliver(s);
}

void ftcp_ack(struct tcp_sock *s)
{
	if (!ftcp_open(s))
		return;
	release_held(s);
	s->space = TCP_SND_BUF;
	s->ops->event(s, s->ctx, TCP_EV_SENT);
}

void ftcp_tx_drop(struct tcp_sock *s)
{
	memmove(s->tx, s->tx + s->tx_read, s->tx_len - s->tx_read);
	s->tx_len -= s->tx_read;
	s->tx_read = 0;
}

int ftcp_next_pdu(struct tcp_sock *s, struct nth_pdu *p)
{
	int rc = nth_parse(s->tx + s->tx_read, s->tx_len - s->tx_read, p);
	if (rc == 1)
		s->tx_read += p->plen;
	return rc;
}

int ftcp_resp(struct tcp_sock *s, struct nth_resp *r)
{
	struct nth_pdu p;
	int rc;
	while ((rc = ftcp_next_pdu(s, &p)) == 1)
		if ((rc = nth_resp_feed(r, &p)) != 0)
			return rc;
	return rc;
}

/* --- liveness: another host is still served --- */

/* One command on s, answered: its status (SCT << 8 | SC), or -1 when no answer came. */
static int live_cmd(struct tcp_sock *s, const struct nvme_sqe *sqe, const void *data, uint32_t len, void *rbuf,
		    uint32_t rcap, uint32_t *dw0)
{
	struct nth_resp r = { .rbuf = rbuf, .rcap = rcap };
	ftcp_capsule(s, false, false, sqe, data, len);
	if (ftcp_resp(s, &r) != 1)
		return -1;
	ftcp_ack(s); /* the host read it all: zero-copy data goes back */
	if (dw0)
		*dw0 = le32_get(r.cqe.dw0);
	return r.status;
}

/* Socket s (one of ftcp_conns) arrives from FTCP_LIVE_ADDR and exchanges ICReq/ICResp:
 * NULL, or what went wrong. */
static const char *live_open(struct tcp_sock *s)
{
	struct nth_pdu p;
	ftcp_arrive_from((unsigned)(s - ftcp_conns), 4096, FTCP_LIVE_ADDR);
	if (!s->accepted || !ftcp_open(s))
		return "a fresh connection was refused";
	ftcp_icreq(s, 0, 0, 0);
	if (ftcp_next_pdu(s, &p) != 1 || p.type != NVME_TCP_ICRESP)
		return "no ICResp";
	return NULL;
}

int ftcp_liveness(const char *hostnqn, const char *subnqn, char *why, size_t cap)
{
	static uint8_t cd[1024], w[512], rd[512];
	struct tcp_sock *adm, *io;
	struct nvme_sqe sqe;
	const char *bad = NULL;
	uint32_t cntlid = 0;
	int st = 0;

	for (unsigned i = 0; i < sizeof(w); i++)
		w[i] = (uint8_t)(i * 7 + 3);
	io = &ftcp_conns[FTCP_CONNS - 1];
	if ((bad = live_open(adm = &ftcp_conns[FTCP_CONNS - 2])))
		goto out;
	sqe = ft_connect_sqe(0, 31, 0);
	ft_connect_data(cd, hostnqn, subnqn, 0xffff);
	if ((st = live_cmd(adm, &sqe, cd, sizeof(cd), NULL, 0, &cntlid))) {
		bad = "admin Connect";
		goto out;
	}
	sqe = ft_prop_sqe(true, false, NVMF_PROP_CC, NVME_CC_EN | (6u << NVME_CC_IOSQES_SHIFT) | (4u << NVME_CC_IOCQES_SHIFT));
	if ((st = live_cmd(adm, &sqe, NULL, 0, NULL, 0, NULL))) {
		bad = "CC.EN";
		goto out;
	}
	if ((bad = live_open(io)))
		goto out;
	sqe = ft_connect_sqe(1, 31, 0);
	ft_connect_data(cd, hostnqn, subnqn, (uint16_t)cntlid);
	if ((st = live_cmd(io, &sqe, cd, sizeof(cd), NULL, 0, NULL))) {
		bad = "I/O queue Connect";
		goto out;
	}
	sqe = nth_rw_sqe(true, 7, 1, 0, 1, sizeof(w));
	if ((st = live_cmd(io, &sqe, w, sizeof(w), NULL, 0, NULL))) {
		bad = "a 512-byte in-capsule Write";
		goto out;
	}
	sqe = nth_rw_sqe(false, 8, 1, 0, 1, sizeof(rd));
	memset(rd, 0, sizeof(rd));
	if ((st = live_cmd(io, &sqe, NULL, 0, rd, sizeof(rd), NULL))) {
		bad = "a 512-byte Read";
		goto out;
	}
	if (memcmp(rd, w, sizeof(w)))
		bad = "the Read did not return what was written";
out:
	if (bad)
		snprintf(why, cap, "liveness: %s (%s)", bad, st < 0 ? "no answer" : "refused with a status");
	if (io->accepted)
		ftcp_eof(io);
	if (adm->accepted)
		ftcp_eof(adm);
	for (int i = 0; i < 4; i++)
		nvmet_tcp_poll(64);
	timer_queue_run(&timer_default_queue, clock_now_ns());
	return bad ? -1 : 0;
}

/* --- the target over this fake --- */

int ftcp_start(const char *json, struct nvmet_config *cfg, nvmet_bdev_open_fn open_fn,
	       const struct nvmet_tcp_mem_ops *mops, char *err, size_t cap)
{
	int rc;

	ftcp_reset();
	snprintf(err, cap, "setup");
	if ((rc = netbuf_pool_init(16)))
		return rc;
	if ((rc = ft_target_start(json, cfg, open_fn, err, cap)))
		goto fail_netbufs;
	if ((rc = nvmet_tcp_start(mops)))
		goto fail_target;
	return 0;

fail_target:
	nvmet_fini();
fail_netbufs:
	netbuf_pool_destroy();
	return rc;
}

int ftcp_stop(char *why, size_t cap)
{
	const char *bad = NULL;

	nvmet_tcp_stop();
	for (int i = 0; i < 16 && nvmet_tcp_conn_count(); i++)
		nvmet_tcp_poll(64);
	timer_queue_run(&timer_default_queue, clock_now_ns()); /* controllers without queues are freed */
	if (nvmet_tcp_conn_count())
		bad = "a connection was not freed";
	else if (ftcp_listener.listener)
		bad = "the listener was not closed";
	else if (nvmet_queue_count())
		bad = "a queue was not freed";
	else if (nvmet_ctrl_count())
		bad = "a controller was not freed";
	nvmet_fini();
	if (!bad && ftcp_released != ftcp_handed)
		bad = "a fragment was not released";
	if (netbuf_pool_destroy() && !bad)
		bad = "NIC buffers still out";
	snprintf(why, cap, "%s (fragments released %u of %u)", bad ? bad : "ok", ftcp_released, ftcp_handed);
	return bad ? -1 : 0;
}
