/*
 * udp.c - UDP (RFC 768): bound ports with a receive callback, copy and zero-copy send.
 */
#include <errno.h>
#include <string.h>
#include "../lib/log.h"
#include "../mm/pool.h"
#include "net_internal.h"

LOG_MODULE_USE(net);

#define UDP_SOCKS 16
#define UDP_EPHEMERAL_FIRST 49152

struct udp_sock {
	struct list_node node;
	uint16_t port;
	udp_recv_fn fn;
	void *ctx;
};

static struct mm_pool udp_pool;
static bool udp_ready;
static struct list_node udp_socks = LIST_HEAD_INIT(udp_socks);
static uint16_t udp_next_ephemeral = UDP_EPHEMERAL_FIRST;

int udp_init(void)
{
	int rc = mm_pool_init(&udp_pool, "udp_sock", sizeof(struct udp_sock), UDP_SOCKS);
	udp_ready = rc == 0;
	list_init(&udp_socks);
	return rc;
}

int udp_shutdown(void)
{
	int rc;
	if (!udp_ready)
		return 0;
	if ((rc = mm_pool_destroy(&udp_pool)))
		return rc;
	udp_ready = false;
	return 0;
}

static struct udp_sock *udp_find(uint16_t port)
{
	struct list_node *it;
	list_for_each(&udp_socks, it) {
		struct udp_sock *s = container_of(it, struct udp_sock, node);
		if (s->port == port)
			return s;
	}
	return NULL;
}

int udp_bind(uint16_t port, udp_recv_fn fn, void *ctx, struct udp_sock **out)
{
	struct udp_sock *s;

	if (port == 0) {
		for (unsigned tries = 0; tries < 16384 && port == 0; tries++) {
			uint16_t p = udp_next_ephemeral++;
			if (udp_next_ephemeral == 0)
				udp_next_ephemeral = UDP_EPHEMERAL_FIRST;
			if (!udp_find(p))
				port = p;
		}
		if (port == 0)
			return -EADDRINUSE;
	} else if (udp_find(port)) {
		return -EADDRINUSE;
	}
	if (!udp_ready || !(s = mm_pool_zalloc(&udp_pool)))
		return -ENOMEM;
	s->port = port;
	s->fn = fn;
	s->ctx = ctx;
	list_add_tail(&udp_socks, &s->node);
	*out = s;
	return 0;
}

uint16_t udp_local_port(const struct udp_sock *s)
{
	return s->port;
}

void udp_close(struct udp_sock *s)
{
	list_del(&s->node);
	mm_pool_free(&udp_pool, s);
}

void udp_rx(struct netbuf *nb, uint32_t src, uint32_t dst)
{
	size_t avail = netbuf_host_len(nb) + netbuf_frag_len(nb);
	struct udp_hdr uh;
	struct udp_meta m;
	struct udp_sock *s;
	size_t len;

	net_counters.udp_rx++;
	if (netbuf_copy_out(nb, 0, &uh, sizeof(uh))) {
		net_counters.udp_bad++;
		goto drop;
	}
	len = be16_get(uh.length);
	if (len < sizeof(uh) || len > avail) {
		net_counters.udp_bad++;
		goto drop;
	}
	netbuf_trim(nb, len);
	if (be16_get(uh.checksum) != 0 && !net_l4_csum_rx_ok(nb, src, dst, IP_PROTO_UDP, len)) {
		net_counters.udp_bad_checksum++;
		goto drop;
	}
	m.src_addr = src;
	m.dst_addr = dst;
	m.src_port = be16_get(uh.src_port);
	m.dst_port = be16_get(uh.dst_port);
	if (!(s = udp_find(m.dst_port))) {
		net_counters.udp_no_port++;
		goto drop;
	}
	netbuf_pull(nb, sizeof(uh));
	s->fn(s, s->ctx, &m, nb);
drop:
	netbuf_free(nb);
}

static int udp_send_nb(struct udp_sock *s, struct netbuf *nb, uint32_t dst, uint16_t dport)
{
	size_t len = netbuf_host_len(nb) + netbuf_frag_len(nb);
	struct udp_hdr *uh;
	int rc;

	if (!net_if0.dev) {
		rc = -ENETDOWN;
		goto drop;
	}
	if (len + sizeof(*uh) > 0xffff) {
		rc = -EMSGSIZE;
		goto drop;
	}
	uh = netbuf_push(nb, sizeof(*uh));
	uh->src_port = be16_make(s->port);
	uh->dst_port = be16_make(dport);
	uh->length = be16_make((uint16_t)(len + sizeof(*uh)));
	if ((rc = net_l4_csum_tx(nb, net_if0.dev, net_if0.addr, dst, IP_PROTO_UDP, len + sizeof(*uh),
				 offsetof(struct udp_hdr, checksum))))
		goto drop;
	net_counters.udp_tx++;
	return ipv4_output(nb, net_if0.addr, dst, IP_PROTO_UDP);
drop:
	netbuf_free(nb);
	return rc;
}

int udp_sendto(struct udp_sock *s, uint32_t dst, uint16_t dport, const void *data, size_t len)
{
	struct netbuf *nb;
	void *p;

	if (len > NETBUF_HOST_SIZE - NETBUF_HEADROOM)
		return -EMSGSIZE;
	if (!(nb = netbuf_alloc(NETBUF_HEADROOM)))
		return -ENOBUFS;
	p = netbuf_put(nb, len);
	memcpy(p, data, len);
	return udp_send_nb(s, nb, dst, dport);
}

int udp_sendto_frags(struct udp_sock *s, uint32_t dst, uint16_t dport, const void *hdr, size_t hdr_len,
		     const struct netdev_frag *frags, unsigned n)
{
	struct netbuf *nb;
	struct netdev_frag tmp;
	unsigned i;
	int rc;

	if (hdr_len > NETBUF_HOST_SIZE - NETBUF_HEADROOM || n > NETBUF_MAX_FRAGS) {
		rc = -EMSGSIZE;
		goto fail;
	}
	if (!(nb = netbuf_alloc(NETBUF_HEADROOM))) {
		rc = -ENOBUFS;
		goto fail;
	}
	if (hdr_len)
		memcpy(netbuf_put(nb, hdr_len), hdr, hdr_len);
	for (i = 0; i < n; i++)
		netbuf_add_frag(nb, &frags[i]);
	return udp_send_nb(s, nb, dst, dport);
fail:
	for (i = 0; i < n; i++) {
		tmp = frags[i];
		netdev_frag_release(&tmp);
	}
	return rc;
}
