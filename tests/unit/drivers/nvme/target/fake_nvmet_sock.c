/*
 * fake_nvmet_sock.c - the fake socket layer of fake_nvmet_sock.h: one listener, four
 * connections, byte streams in both directions, fragments counted by token.
 */
#include "fake_nvmet_sock.h"
#include <errno.h>
#include <string.h>
#include "net/tcp/tcp.h"

struct tcp_sock fsk_listener;
struct tcp_sock fsk_conns[FSK_CONNS];
unsigned fsk_handed, fsk_released;
static unsigned pending;              /* connection to accept, +1; 0 none */
static uint8_t release_count[FSK_TOKENS];

static void fsk_release(struct netdev_frag_owner *o, uint64_t token)
{
	(void)o;
	if (token >= FSK_TOKENS || release_count[token]++)
		fsk_violation("fragment released twice (or unknown token)");
	fsk_released++;
}
static struct netdev_frag_owner fsk_owner = { "fake-socket", fsk_release };

static int fsk_listen(uint16_t port, unsigned backlog, const struct tcp_ops *ops, void *ctx, struct tcp_sock **out)
{
	(void)backlog;
	if (fsk_listener.listener)
		return -EADDRINUSE;
	fsk_listener.listener = true;
	fsk_listener.port = port;
	fsk_listener.ops = ops;
	fsk_listener.ctx = ctx;
	*out = &fsk_listener;
	return 0;
}

static struct tcp_sock *fsk_accept(struct tcp_sock *l)
{
	if (l != &fsk_listener)
		fsk_violation("accept on a socket that is not the listener");
	if (!pending)
		return NULL;
	struct tcp_sock *s = &fsk_conns[pending - 1];
	pending = 0;
	s->accepted = true;
	return s;
}

static void fsk_set_ops(struct tcp_sock *s, const struct tcp_ops *ops, void *ctx)
{
	s->ops = ops;
	s->ctx = ctx;
}

static int fsk_recv_frags(struct tcp_sock *s, struct netdev_frag *out, unsigned max, size_t max_bytes)
{
	unsigned n = 0;
	if (!fsk_open(s))
		fsk_violation("recv on a closed socket");
	while (n < max && s->rx_off < s->rx_len && max_bytes && fsk_handed < FSK_TOKENS) {
		size_t len = s->rx_len - s->rx_off;
		if (len > s->frag_size)
			len = s->frag_size;
		if (len > max_bytes)
			len = max_bytes;
		out[n] = (struct netdev_frag){ .addr = dma_addr_host(s->rx + s->rx_off), .offset = s->rx_off,
					       .len = (uint32_t)len, .token = fsk_handed++, .owner = &fsk_owner };
		s->rx_off += len;
		max_bytes -= len;
		n++;
	}
	return (int)n;
}

static bool fsk_recv_eof(const struct tcp_sock *s)
{
	return s->eof && s->rx_off == s->rx_len;
}

static size_t fsk_send_space(const struct tcp_sock *s)
{
	return s->space;
}

static long fsk_send_copy(struct tcp_sock *s, const void *buf, size_t len)
{
	if (!fsk_open(s))
		fsk_violation("send on a closed socket");
	if (len > s->space)
		len = s->space;
	if (len > sizeof(s->tx) - s->tx_len)
		fsk_violation("fake TX buffer full: drop it in long runs");
	memcpy(s->tx + s->tx_len, buf, len);
	s->tx_len += len;
	s->space -= len;
	return (long)len;
}

static int fsk_send_frags(struct tcp_sock *s, const struct netdev_frag *frags, unsigned n)
{
	size_t total = 0;
	if (!fsk_open(s))
		fsk_violation("send on a closed socket");
	for (unsigned i = 0; i < n; i++)
		total += frags[i].len;
	if (total > s->space || s->nheld + n > FSK_HELD || total > sizeof(s->tx) - s->tx_len) {
		for (unsigned i = 0; i < n; i++) {
			struct netdev_frag f = frags[i];
			netdev_frag_release(&f);
		}
		return -ENOBUFS;
	}
	for (unsigned i = 0; i < n; i++) {
		memcpy(s->tx + s->tx_len, (const void *)(uintptr_t)frags[i].addr.bus, frags[i].len);
		s->tx_len += frags[i].len;
		s->held[s->nheld++] = frags[i];
	}
	s->space -= total;
	return 0;
}

static void release_held(struct tcp_sock *s)
{
	for (unsigned i = 0; i < s->nheld; i++)
		netdev_frag_release(&s->held[i]);
	s->nheld = 0;
}

static void fsk_flush(struct tcp_sock *s)
{
	(void)s;
}

static void fsk_close(struct tcp_sock *s)
{
	if (s == &fsk_listener) {
		s->listener = false;
		return;
	}
	if (!fsk_open(s))
		fsk_violation("socket closed twice");
	s->closed = true;
	release_held(s);
}

static void fsk_abort(struct tcp_sock *s)
{
	if (!fsk_open(s))
		fsk_violation("socket closed twice");
	s->aborted = true;
	release_held(s);
}

static uint32_t fsk_local_addr(const struct tcp_sock *s)
{
	(void)s;
	return FSK_LOCAL_ADDR;
}

static bool fsk_addr_is_local(uint32_t a)
{
	return a == FSK_LOCAL_ADDR;
}

static void fsk_peer_addr(const struct tcp_sock *s, uint32_t *addr, uint16_t *port)
{
	*addr = FSK_PEER_ADDR;
	*port = (uint16_t)(40000 + (s - fsk_conns));
}

const struct nvmet_tcp_sock_ops fsk_ops = {
	.listen = fsk_listen, .accept = fsk_accept, .set_ops = fsk_set_ops, .recv_frags = fsk_recv_frags,
	.recv_eof = fsk_recv_eof, .send_space = fsk_send_space, .send_copy = fsk_send_copy,
	.send_frags = fsk_send_frags, .flush = fsk_flush, .close = fsk_close, .abort = fsk_abort,
	.local_addr = fsk_local_addr, .addr_is_local = fsk_addr_is_local, .peer_addr = fsk_peer_addr,
};

void fsk_reset(void)
{
	memset(&fsk_listener, 0, sizeof(fsk_listener));
	for (unsigned i = 0; i < FSK_CONNS; i++) {
		fsk_conns[i].rx_len = fsk_conns[i].rx_off = fsk_conns[i].tx_len = fsk_conns[i].tx_read = 0;
		fsk_conns[i].nheld = 0;
		fsk_conns[i].ops = NULL;
		fsk_conns[i].listener = fsk_conns[i].closed = fsk_conns[i].aborted = false;
		fsk_conns[i].eof = fsk_conns[i].accepted = false;
	}
	memset(release_count, 0, sizeof(release_count));
	fsk_handed = fsk_released = 0;
	pending = 0;
}

bool fsk_open(const struct tcp_sock *s)
{
	return !s->closed && !s->aborted;
}

struct tcp_sock *fsk_connect(unsigned i, size_t frag_size)
{
	struct tcp_sock *s = &fsk_conns[i];
	s->rx_len = s->rx_off = s->tx_len = s->tx_read = 0;
	s->nheld = 0;
	s->ops = NULL;
	s->closed = s->aborted = s->eof = s->accepted = false;
	s->frag_size = frag_size ? frag_size : 1;
	s->space = TCP_SND_BUF;
	pending = i + 1;
	fsk_listener.ops->event(&fsk_listener, fsk_listener.ctx, TCP_EV_ACCEPT);
	if (!s->accepted || !s->ops)
		fsk_violation("the transport did not take the connection");
	return s;
}

void fsk_send(struct tcp_sock *s, const void *buf, size_t len)
{
	if (!fsk_open(s))
		return; /* the transport closed it: the bytes go nowhere */
	if (len > sizeof(s->rx) - s->rx_len)
		len = sizeof(s->rx) - s->rx_len;
	memcpy(s->rx + s->rx_len, buf, len);
	s->rx_len += len;
	s->ops->event(s, s->ctx, TCP_EV_RECV);
}

void fsk_eof(struct tcp_sock *s)
{
	if (!fsk_open(s))
		return;
	s->eof = true;
	s->ops->event(s, s->ctx, TCP_EV_RECV);
}

void fsk_ack(struct tcp_sock *s)
{
	if (!fsk_open(s))
		return;
	release_held(s);
	s->space = TCP_SND_BUF;
	s->ops->event(s, s->ctx, TCP_EV_SENT);
}

void fsk_tx_drop(struct tcp_sock *s)
{
	s->tx_len = s->tx_read = 0;
}

bool fsk_next_pdu(struct tcp_sock *s, const uint8_t **pdu, uint32_t *plen)
{
	if (s->tx_len - s->tx_read < 8)
		return false;
	const uint8_t *h = s->tx + s->tx_read;
	uint32_t len = (uint32_t)h[4] | (uint32_t)h[5] << 8 | (uint32_t)h[6] << 16 | (uint32_t)h[7] << 24;
	if (len < 8)
		fsk_violation("the transport sent a PDU with PLEN < 8");
	if (len > s->tx_len - s->tx_read)
		return false; /* the rest waits for send space */
	*pdu = h;
	*plen = len;
	s->tx_read += len;
	return true;
}
