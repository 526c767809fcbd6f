/*
 * dhcp.c - DHCP client (RFC 2131/2132): the state machine of dhcp.h, its messages and
 * the option parser.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "../lib/byteorder.h"
#include "../lib/clock.h"
#include "../lib/log.h"
#include "dhcp.h"
#include "net_internal.h"

LOG_MODULE_USE(net);

#define DHCP_RTO_FIRST_NS (4 * NSEC_PER_SEC)    /* RFC 2131 4.1: 4 s, doubling ... */
#define DHCP_RTO_MAX_NS (64 * NSEC_PER_SEC)     /* ... up to 64 s */
#define DHCP_JITTER_NS (1 * NSEC_PER_SEC)       /* +-1 s */
#define DHCP_RENEW_MIN_NS (60 * NSEC_PER_SEC)   /* RFC 2131 4.4.5: at least 60 s between renewals */
#define DHCP_REQUEST_TRIES 4                    /* REQUESTING: then back to INIT */
#define DHCP_RESTART_NS (2 * NSEC_PER_SEC)      /* INIT after a NAK: bounds a NAK loop */
#define DHCP_FLAG_BROADCAST 0x8000u

/* options (RFC 2132) */
enum {
	OPT_PAD = 0, OPT_SUBNET_MASK = 1, OPT_ROUTER = 3, OPT_DNS = 6, OPT_HOSTNAME = 12, OPT_MTU = 26,
	OPT_REQUESTED_IP = 50, OPT_LEASE = 51, OPT_OVERLOAD = 52, OPT_MSG_TYPE = 53, OPT_SERVER_ID = 54,
	OPT_PARAM_LIST = 55, OPT_MAX_SIZE = 57, OPT_T1 = 58, OPT_T2 = 59, OPT_CLIENT_ID = 61, OPT_END = 255,
};

/* Field offsets of the fixed part (RFC 2131 2, figure 1). */
enum {
	OFF_OP = 0, OFF_HTYPE = 1, OFF_HLEN = 2, OFF_HOPS = 3, OFF_XID = 4, OFF_SECS = 8, OFF_FLAGS = 10,
	OFF_CIADDR = 12, OFF_YIADDR = 16, OFF_SIADDR = 20, OFF_GIADDR = 24, OFF_CHADDR = 28, OFF_SNAME = 44,
	OFF_FILE = 108, OFF_OPTIONS = 240,
};
#define SNAME_LEN 64
#define FILE_LEN 128

static struct dhcp_client *dhcp_active;  /* the client the console shows */

/* --- parser ------------------------------------------------------------------------- */

/* Keep the first value of a 4-byte option (a repeated option does not override it). */
static void first32(bool *has, uint32_t *dst, const uint8_t *v)
{
	if (!*has) {
		*dst = be32_load(v);
		*has = true;
	}
}

/* One option: code, its value (n bytes, already inside the field). -EINVAL when a known
 * option has a length the RFC does not allow. */
static int opt_one(struct dhcp_msg *m, uint8_t code, const uint8_t *v, size_t n, uint8_t *overload)
{
	switch (code) {
	case OPT_MSG_TYPE:
		if (n != 1)
			return -EINVAL;
		if (!m->msg_type)
			m->msg_type = v[0];
		break;
	case OPT_OVERLOAD:
		if (n != 1 || v[0] < 1 || v[0] > 3)
			return -EINVAL;
		*overload = v[0];
		break;
	case OPT_ROUTER:  /* a list: the first router */
	case OPT_DNS:
		if (n < 4 || n % 4)
			return -EINVAL;
		if (code == OPT_ROUTER)
			first32(&m->has_router, &m->router, v);
		for (size_t i = 0; code == OPT_DNS && i + 4 <= n && m->ndns < DHCP_MAX_DNS; i += 4)
			m->dns[m->ndns++] = be32_load(v + i);
		break;
	case OPT_MTU:
		if (n != 2)
			return -EINVAL;
		if (!m->has_mtu) {
			m->mtu = be16_load(v);
			m->has_mtu = true;
		}
		break;
	case OPT_SUBNET_MASK:
	case OPT_LEASE:
	case OPT_T1:
	case OPT_T2:
	case OPT_SERVER_ID:
		if (n != 4)
			return -EINVAL;
		if (code == OPT_SUBNET_MASK)
			first32(&m->has_subnet_mask, &m->subnet_mask, v);
		else if (code == OPT_LEASE)
			first32(&m->has_lease, &m->lease_s, v);
		else if (code == OPT_T1)
			first32(&m->has_t1, &m->t1_s, v);
		else if (code == OPT_T2)
			first32(&m->has_t2, &m->t2_s, v);
		else
			first32(&m->has_server_id, &m->server_id, v);
		break;
	default:
		break;  /* options we do not use */
	}
	return 0;
}

/* Walk the options in [p, p + len): pad, end, code-length-value with the value inside. */
static int opt_walk(struct dhcp_msg *m, const uint8_t *p, size_t len, uint8_t *overload)
{
	size_t off = 0;
	int rc;

	while (off < len) {
		uint8_t code = p[off++];
		if (code == OPT_PAD)
			continue;
		if (code == OPT_END)
			return 0;
		if (off >= len)
			return -EINVAL;           /* no length byte */
		size_t n = p[off++];
		if (n > len - off)
			return -EINVAL;           /* value runs past the field */
		if ((rc = opt_one(m, code, p + off, n, overload)))
			return rc;
		off += n;
	}
	return 0;  /* RFC 2131 requires END, but a field filled to its last byte is tolerated */
}

/* Parse a message. */
int dhcp_parse(const void *buf, size_t len, struct dhcp_msg *out)
{
	const uint8_t *p = buf;
	struct dhcp_msg m;
	uint8_t overload = 0, ignored = 0;
	int rc;

	memset(out, 0, sizeof(*out));
	if (len < OFF_OPTIONS || be32_load(p + DHCP_FIXED_LEN) != DHCP_MAGIC)
		return -EINVAL;
	memset(&m, 0, sizeof(m));
	m.op = p[OFF_OP];
	m.htype = p[OFF_HTYPE];
	m.hlen = p[OFF_HLEN];
	m.xid = be32_load(p + OFF_XID);
	m.secs = be16_load(p + OFF_SECS);
	m.flags = be16_load(p + OFF_FLAGS);
	m.ciaddr = be32_load(p + OFF_CIADDR);
	m.yiaddr = be32_load(p + OFF_YIADDR);
	m.siaddr = be32_load(p + OFF_SIADDR);
	m.giaddr = be32_load(p + OFF_GIADDR);
	memcpy(m.chaddr, p + OFF_CHADDR, sizeof(m.chaddr));
	if ((rc = opt_walk(&m, p + OFF_OPTIONS, len - OFF_OPTIONS, &overload)))
		return rc;
	/* RFC 2132 9.3: option 52 says the file (1), sname (2) or both (3) carry options,
	 * read after the options field, file first. An overload inside them is ignored. */
	if ((overload & 1) && (rc = opt_walk(&m, p + OFF_FILE, FILE_LEN, &ignored)))
		return rc;
	if ((overload & 2) && (rc = opt_walk(&m, p + OFF_SNAME, SNAME_LEN, &ignored)))
		return rc;
	*out = m;
	return 0;
}

/* --- helpers ------------------------------------------------------------------------ */

static const char *const state_names[DHCP_STATE_COUNT] = {
	"OFF", "INIT", "SELECTING", "REQUESTING", "BOUND", "RENEWING", "REBINDING", "FALLBACK",
};

const char *dhcp_state_name(enum dhcp_state s)
{
	return (unsigned)s < DHCP_STATE_COUNT ? state_names[s] : "?";
}

static void set_state(struct dhcp_client *c, enum dhcp_state s)
{
	if (c->state != s)
		log_debug("dhcp: %s -> %s", dhcp_state_name(c->state), dhcp_state_name(s));
	c->state = s;
}

static uint64_t rng_next(struct dhcp_client *c)
{
	uint64_t x = c->rng;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	c->rng = x;
	return x;
}

/* Retransmission delay of try n (1-based): 4 s << (n - 1), at most 64 s, +-1 s. */
static uint64_t backoff_ns(struct dhcp_client *c, unsigned n)
{
	uint64_t d = DHCP_RTO_FIRST_NS;
	for (unsigned i = 1; i < n && d < DHCP_RTO_MAX_NS; i++)
		d *= 2;
	if (d > DHCP_RTO_MAX_NS)
		d = DHCP_RTO_MAX_NS;
	return d - DHCP_JITTER_NS + rng_next(c) % (2 * DHCP_JITTER_NS + 1);
}

static uint8_t *opt_put(uint8_t *o, uint8_t code, const void *v, uint8_t n)
{
	o[0] = code;
	o[1] = n;
	memcpy(o + 2, v, n);
	return o + 2 + n;
}

static uint8_t *opt_put32(uint8_t *o, uint8_t code, uint32_t v)
{
	uint8_t b[4];
	be32_store(b, v);
	return opt_put(o, code, b, 4);
}

/* Build and send one client message: DISCOVER, or REQUEST in the current state. */
static int dhcp_send(struct dhcp_client *c, uint8_t type)
{
	static const uint8_t params[] = { OPT_SUBNET_MASK, OPT_ROUTER, OPT_DNS, OPT_MTU, OPT_LEASE, OPT_T1, OPT_T2 };
	uint8_t msg[OFF_OPTIONS + 64], *o;
	uint64_t secs = (clock_now_ns() - c->start_ns) / NSEC_PER_SEC;
	bool bound = c->state == DHCP_RENEWING || c->state == DHCP_REBINDING;
	uint32_t dst = c->state == DHCP_RENEWING ? c->lease.server_id : 0xffffffffu;
	uint8_t client_id[7];
	int rc;

	memset(msg, 0, sizeof(msg));
	msg[OFF_OP] = DHCP_BOOTREQUEST;
	msg[OFF_HTYPE] = 1;  /* Ethernet */
	msg[OFF_HLEN] = 6;
	be32_store(msg + OFF_XID, c->xid);
	msg[OFF_SECS] = (uint8_t)((secs > 0xffff ? 0xffff : secs) >> 8);
	msg[OFF_SECS + 1] = (uint8_t)(secs > 0xffff ? 0xffff : secs);
	if (!bound)
		msg[OFF_FLAGS] = DHCP_FLAG_BROADCAST >> 8;  /* no address yet: answer by broadcast */
	else
		be32_store(msg + OFF_CIADDR, c->lease.addr); /* RFC 2131 4.3.2: ciaddr in RENEWING/REBINDING */
	memcpy(msg + OFF_CHADDR, c->mac, 6);
	be32_store(msg + DHCP_FIXED_LEN, DHCP_MAGIC);
	o = msg + OFF_OPTIONS;
	o = opt_put(o, OPT_MSG_TYPE, &type, 1);
	client_id[0] = 1;
	memcpy(client_id + 1, c->mac, 6);
	o = opt_put(o, OPT_CLIENT_ID, client_id, sizeof(client_id));
	if (type == DHCPREQUEST && c->state == DHCP_REQUESTING) {
		o = opt_put32(o, OPT_REQUESTED_IP, c->offer.yiaddr);
		o = opt_put32(o, OPT_SERVER_ID, c->offer.server_id);
	}
	o = opt_put(o, OPT_MAX_SIZE, (const uint8_t[2]){ (DHCP_MSG_MAX + 28) >> 8, (DHCP_MSG_MAX + 28) & 0xff }, 2);
	o = opt_put(o, OPT_PARAM_LIST, params, sizeof(params));
	*o++ = OPT_END;
	/* BOOTP relays want at least 300 bytes of message: pad with zeros */
	size_t len = (size_t)(o - msg) < 300 ? 300 : (size_t)(o - msg);
	uint8_t out[300 > sizeof(msg) ? 300 : sizeof(msg)];
	memset(out, 0, sizeof(out));
	memcpy(out, msg, (size_t)(o - msg));
	if ((rc = udp_sendto(c->sock, dst, DHCP_SERVER_PORT, out, len))) {
		c->st.tx_errors++;
		log_debug("dhcp: send failed (%d)", rc);
		return rc;
	}
	if (type == DHCPDISCOVER)
		c->st.discovers++;
	else
		c->st.requests++;
	if (c->tries > 0)
		c->st.retransmits++;
	c->tries++;
	return 0;
}

/* Forget the interface's address (no lease). */
static void if_unconfigure(void)
{
	net_if0.addr = 0;
	net_if0.netmask = 0;
	net_if0.gateway = 0;
	net_route_changed();
}

static void new_xid(struct dhcp_client *c)
{
	c->xid = (uint32_t)rng_next(c);
}

/* INIT: a new transaction, DISCOVER now. */
static void enter_init(struct dhcp_client *c, uint64_t delay_ns)
{
	timer_cancel(&timer_default_queue, &c->lease_timer);
	set_state(c, DHCP_INIT);
	c->tries = 0;
	timer_arm(&timer_default_queue, &c->tx_timer, clock_now_ns() + delay_ns);
}

static void discover(struct dhcp_client *c)
{
	if (c->state == DHCP_INIT) {
		new_xid(c);
		c->start_ns = clock_now_ns();
		c->tries = 0;
		set_state(c, DHCP_SELECTING);
	}
	dhcp_send(c, DHCPDISCOVER);
	timer_arm(&timer_default_queue, &c->tx_timer, clock_now_ns() + backoff_ns(c, c->tries));
}

/* The next renewal retransmission: half the time to the deadline, at least 60 s
 * (RFC 2131 4.4.5); the lease timer takes over at the deadline itself. */
static void arm_renew_retransmit(struct dhcp_client *c, uint64_t deadline_ns)
{
	uint64_t now = clock_now_ns(), d = deadline_ns > now ? (deadline_ns - now) / 2 : 0;
	if (d < DHCP_RENEW_MIN_NS)
		d = DHCP_RENEW_MIN_NS;
	if (now + d < deadline_ns)
		timer_arm(&timer_default_queue, &c->tx_timer, now + d);
	else
		timer_cancel(&timer_default_queue, &c->tx_timer);
}

static uint64_t lease_at(const struct dhcp_client *c, uint32_t secs)
{
	return c->lease.start_ns + (uint64_t)secs * NSEC_PER_SEC;
}

static void tx_timer_fired(struct timer *t, void *arg)
{
	struct dhcp_client *c = arg;
	(void)t;

	switch (c->state) {
	case DHCP_INIT:
	case DHCP_SELECTING:
		discover(c);
		break;
	case DHCP_REQUESTING:
		if (c->tries >= DHCP_REQUEST_TRIES) {
			log_info("dhcp: no answer to the REQUEST for the offer: discovering again");
			enter_init(c, 0);
			break;
		}
		dhcp_send(c, DHCPREQUEST);
		timer_arm(&timer_default_queue, &c->tx_timer, clock_now_ns() + backoff_ns(c, c->tries));
		break;
	case DHCP_RENEWING:
		dhcp_send(c, DHCPREQUEST);
		arm_renew_retransmit(c, lease_at(c, c->lease.t2_s));
		break;
	case DHCP_REBINDING:
		dhcp_send(c, DHCPREQUEST);
		arm_renew_retransmit(c, lease_at(c, c->lease.lease_s));
		break;
	default:
		break;
	}
}

/* Arm the lease timer for the next of T1, T2, expiry after the current state. */
static void arm_lease_timer(struct dhcp_client *c)
{
	uint32_t s = c->state == DHCP_BOUND ? c->lease.t1_s : c->state == DHCP_RENEWING ? c->lease.t2_s
											 : c->lease.lease_s;
	if (c->lease.lease_s == DHCP_LEASE_INFINITE) {
		timer_cancel(&timer_default_queue, &c->lease_timer);
		return;
	}
	timer_arm(&timer_default_queue, &c->lease_timer, lease_at(c, s));
}

static void lease_timer_fired(struct timer *t, void *arg)
{
	struct dhcp_client *c = arg;
	char a[16];
	(void)t;

	switch (c->state) {
	case DHCP_BOUND:  /* T1 */
		set_state(c, DHCP_RENEWING);
		c->st.renewals++;
		new_xid(c);
		c->tries = 0;
		c->req_ns = clock_now_ns();
		dhcp_send(c, DHCPREQUEST);
		arm_renew_retransmit(c, lease_at(c, c->lease.t2_s));
		arm_lease_timer(c);
		break;
	case DHCP_RENEWING:  /* T2 */
		log_warn("dhcp: server %s did not renew the lease by T2: rebinding (broadcast)",
			 net_format_ipv4(c->lease.server_id, a));
		set_state(c, DHCP_REBINDING);
		c->st.rebinds++;
		new_xid(c);
		c->tries = 0;
		c->req_ns = clock_now_ns();
		dhcp_send(c, DHCPREQUEST);
		arm_renew_retransmit(c, lease_at(c, c->lease.lease_s));
		arm_lease_timer(c);
		break;
	case DHCP_REBINDING:  /* expiry */
		log_err("dhcp: lease of %s expired: address dropped, discovering again", net_format_ipv4(c->lease.addr, a));
		c->st.expiries++;
		if_unconfigure();
		memset(&c->lease, 0, sizeof(c->lease));
		timer_cancel(&timer_default_queue, &c->tx_timer);
		enter_init(c, 0);  /* the fallback is for boot only: a lost lease keeps discovering */
		break;
	default:
		break;
	}
}

static void fallback_timer_fired(struct timer *t, void *arg)
{
	struct dhcp_client *c = arg;
	char a[16];
	int rc;
	(void)t;

	if (c->state != DHCP_INIT && c->state != DHCP_SELECTING && c->state != DHCP_REQUESTING)
		return;
	timer_cancel(&timer_default_queue, &c->tx_timer);
	c->st.fallbacks++;
	set_state(c, DHCP_FALLBACK);
	if ((rc = net_configure(&c->params.fallback))) {
		log_err("dhcp: no lease and the static settings are refused (%d): no address", rc);
		return;
	}
	log_warn("dhcp: no lease after %llu s: using the static address %s (net.address = dhcp falls back to "
		 "net.fallback_address)", (unsigned long long)(c->params.timeout_ns / NSEC_PER_SEC),
		 net_format_ipv4(c->params.fallback.addr, a));
}

/* The default mask of the address's class (RFC 1122 3.3.1.1 when option 1 is absent). */
static uint32_t classful_mask(uint32_t a)
{
	return (a >> 31) == 0 ? 0xff000000u : (a >> 30) == 2 ? 0xffff0000u : 0xffffff00u;
}

/* ACK: take the lease (validated) and apply it. -EINVAL when unusable. */
static int bind_lease(struct dhcp_client *c, const struct dhcp_msg *m)
{
	struct dhcp_lease l;
	struct net_config nc;
	char a[16], b[16], g[16], sv[16];
	int rc;

	memset(&l, 0, sizeof(l));
	l.addr = m->yiaddr;
	l.netmask = m->has_subnet_mask ? m->subnet_mask : classful_mask(m->yiaddr);
	l.server_id = m->has_server_id ? m->server_id : c->lease.server_id;
	l.lease_s = m->lease_s;
	l.start_ns = c->req_ns;
	if (!m->has_lease || !l.server_id || l.lease_s == 0)
		return -EINVAL;  /* RFC 2131 table 3: an ACK to a REQUEST carries both */
	if (l.lease_s != DHCP_LEASE_INFINITE) {
		/* RFC 2131 4.4.5: T1 0.5, T2 0.875 of the lease by default; T1 < T2 < lease */
		l.t1_s = m->has_t1 ? m->t1_s : l.lease_s / 2;
		l.t2_s = m->has_t2 ? m->t2_s : (uint32_t)((uint64_t)l.lease_s * 7 / 8);
		if (l.t2_s >= l.lease_s || l.t2_s == 0)
			l.t2_s = (uint32_t)((uint64_t)l.lease_s * 7 / 8);
		if (l.t1_s >= l.t2_s)
			l.t1_s = l.t2_s / 2 < l.lease_s / 2 ? l.t2_s / 2 : l.lease_s / 2;
	}
	if (m->has_router && (m->router & l.netmask) == (l.addr & l.netmask) && m->router != l.addr)
		l.router = m->router;
	else if (m->has_router)
		log_warn("dhcp: router %s is not on the leased subnet: ignored", net_format_ipv4(m->router, a));
	l.ndns = m->ndns;
	memcpy(l.dns, m->dns, sizeof(l.dns));
	memset(&nc, 0, sizeof(nc));
	nc.addr = l.addr;
	nc.netmask = l.netmask;
	nc.gateway = l.router;
	if (m->has_mtu && !c->params.mtu_fixed) {
		unsigned mtu = m->mtu;
		if (mtu < NETDEV_MTU_MIN) {
			log_warn("dhcp: interface MTU %u below the NIC's minimum %u: not applied", mtu, NETDEV_MTU_MIN);
		} else {
			if (mtu > NETDEV_MTU_MAX) {
				log_warn("dhcp: interface MTU %u above the NIC's maximum: %u used", mtu, NETDEV_MTU_MAX);
				mtu = NETDEV_MTU_MAX;
			}
			if (!net_if0.dev || mtu != net_if0.dev->mtu)
				nc.mtu = mtu;
			l.mtu = (uint16_t)mtu;
		}
	}
	if ((rc = net_configure(&nc))) {
		log_err("dhcp: leased address %s/%s refused (%d)", net_format_ipv4(l.addr, a),
			net_format_ipv4(l.netmask, b), rc);
		return rc;
	}
	if (c->state == DHCP_REQUESTING || l.addr != c->lease.addr)
		log_info("dhcp: bound to %s/%s router %s from server %s, lease %u s", net_format_ipv4(l.addr, a),
			 net_format_ipv4(l.netmask, b), l.router ? net_format_ipv4(l.router, g) : "none",
			 net_format_ipv4(l.server_id, sv), l.lease_s);
	c->lease = l;
	c->ever_bound = true;
	c->st.leases++;
	timer_cancel(&timer_default_queue, &c->fallback_timer);
	timer_cancel(&timer_default_queue, &c->tx_timer);
	set_state(c, DHCP_BOUND);
	arm_lease_timer(c);
	return 0;
}

static void nak(struct dhcp_client *c, const char *why)
{
	char a[16];
	c->st.naks++;
	log_warn("dhcp: %s: NAK from %s: discovering again", why, net_format_ipv4(c->offer.server_id, a));
	if (c->state == DHCP_RENEWING || c->state == DHCP_REBINDING) {
		if_unconfigure();
		memset(&c->lease, 0, sizeof(c->lease));
	}
	timer_cancel(&timer_default_queue, &c->tx_timer);
	enter_init(c, DHCP_RESTART_NS);
}

static void dhcp_rx(struct udp_sock *s, void *ctx, const struct udp_meta *meta, struct netbuf *nb)
{
	struct dhcp_client *c = ctx;
	uint8_t buf[DHCP_MSG_MAX];
	size_t len = netbuf_host_len(nb) + netbuf_frag_len(nb);
	struct dhcp_msg m;
	(void)s;

	if (meta->src_port != DHCP_SERVER_PORT || len > sizeof(buf) || netbuf_copy_out(nb, 0, buf, len) ||
	    dhcp_parse(buf, len, &m)) {
		c->st.rx_bad++;
		return;
	}
	if (m.op != DHCP_BOOTREPLY || m.htype != 1 || m.hlen != 6 || m.xid != c->xid ||
	    memcmp(m.chaddr, c->mac, 6) != 0) {
		c->st.rx_ignored++;  /* another client's transaction */
		return;
	}
	switch (c->state) {
	case DHCP_SELECTING:
		/* The first usable offer (RFC 2131 4.4.1 lets the client choose). */
		if (m.msg_type != DHCPOFFER || !m.has_server_id || m.yiaddr == 0 || m.yiaddr == 0xffffffffu) {
			c->st.rx_ignored++;
			return;
		}
		c->st.offers++;
		c->offer = m;
		set_state(c, DHCP_REQUESTING);
		c->tries = 0;
		c->req_ns = clock_now_ns();
		dhcp_send(c, DHCPREQUEST);
		timer_arm(&timer_default_queue, &c->tx_timer, clock_now_ns() + backoff_ns(c, c->tries));
		return;
	case DHCP_REQUESTING:
		/* Only the server we chose answers this transaction. */
		if (!m.has_server_id || m.server_id != c->offer.server_id) {
			c->st.rx_ignored++;
			return;
		}
		if (m.msg_type == DHCPNAK) {
			nak(c, "offer withdrawn");
			return;
		}
		if (m.msg_type != DHCPACK || m.yiaddr != c->offer.yiaddr) {
			c->st.rx_ignored++;
			return;
		}
		c->st.acks++;
		if (bind_lease(c, &m))
			enter_init(c, DHCP_RESTART_NS);
		return;
	case DHCP_RENEWING:
	case DHCP_REBINDING:
		if (m.msg_type == DHCPNAK) {
			c->offer.server_id = m.server_id;
			nak(c, "lease refused");
			return;
		}
		if (m.msg_type != DHCPACK || m.yiaddr == 0) {
			c->st.rx_ignored++;
			return;
		}
		c->st.acks++;
		if (bind_lease(c, &m)) {
			if_unconfigure();
			memset(&c->lease, 0, sizeof(c->lease));
			enter_init(c, DHCP_RESTART_NS);
		}
		return;
	default:
		c->st.rx_ignored++;  /* BOUND, INIT, FALLBACK: nothing is outstanding */
		return;
	}
}

/* --- start / stop / show ------------------------------------------------------------ */

int dhcp_start(struct dhcp_client *c, const struct dhcp_params *p)
{
	int rc;

	memset(c, 0, sizeof(*c));
	if (!net_if0.dev)
		return -ENETDOWN;
	c->params = *p;
	memcpy(c->mac, net_if0.dev->mac, 6);
	c->rng = clock_now_ns() ^ 0x9e3779b97f4a7c15ull;
	for (unsigned i = 0; i < 6; i++)
		c->rng = (c->rng ^ c->mac[i]) * 0x100000001b3ull;
	if (!c->rng)
		c->rng = 1;
	if ((rc = udp_bind(DHCP_CLIENT_PORT, dhcp_rx, c, &c->sock)))
		return rc;
	timer_init(&c->tx_timer, "dhcp-tx", tx_timer_fired, c);
	timer_init(&c->lease_timer, "dhcp-lease", lease_timer_fired, c);
	timer_init(&c->fallback_timer, "dhcp-fallback", fallback_timer_fired, c);
	if_unconfigure();
	if (p->timeout_ns)
		timer_arm(&timer_default_queue, &c->fallback_timer, clock_now_ns() + p->timeout_ns);
	dhcp_active = c;
	enter_init(c, 0);
	discover(c);
	return 0;
}

void dhcp_stop(struct dhcp_client *c)
{
	timer_cancel(&timer_default_queue, &c->tx_timer);
	timer_cancel(&timer_default_queue, &c->lease_timer);
	timer_cancel(&timer_default_queue, &c->fallback_timer);
	if (c->sock)
		udp_close(c->sock);
	c->sock = NULL;
	set_state(c, DHCP_OFF);
	if (dhcp_active == c)
		dhcp_active = NULL;
}

static void show_in(const char *what, uint64_t at_ns, uint64_t now)
{
	if (at_ns > now)
		printf(" %s in %llu s", what, (unsigned long long)((at_ns - now) / NSEC_PER_SEC));
	else
		printf(" %s passed", what);
}

void dhcp_show(void)
{
	const struct dhcp_client *c = dhcp_active;
	const struct dhcp_lease *l;
	uint64_t now = clock_now_ns();
	char a[16];

	if (!c)
		return;
	l = &c->lease;
	printf("dhcp: %s", dhcp_state_name(c->state));
	if (c->state == DHCP_BOUND || c->state == DHCP_RENEWING || c->state == DHCP_REBINDING) {
		printf(" server %s lease %u s", net_format_ipv4(l->server_id, a), l->lease_s);
		if (l->lease_s == DHCP_LEASE_INFINITE) {
			printf(" (infinite)");
		} else {
			show_in("expires", lease_at(c, l->lease_s), now);
			show_in("T1", lease_at(c, l->t1_s), now);
			show_in("T2", lease_at(c, l->t2_s), now);
		}
		printf(" router %s", l->router ? net_format_ipv4(l->router, a) : "none");
		printf(" dns");
		for (unsigned i = 0; i < l->ndns; i++)
			printf(" %s", net_format_ipv4(l->dns[i], a));
		if (!l->ndns)
			printf(" none");
		if (l->mtu)
			printf(" mtu %u", l->mtu);
	}
	printf("\n  discovers %llu requests %llu retransmits %llu offers %llu acks %llu naks %llu bad %llu ignored %llu "
	       "leases %llu renewals %llu rebinds %llu expiries %llu fallbacks %llu tx-errors %llu\n",
	       (unsigned long long)c->st.discovers, (unsigned long long)c->st.requests,
	       (unsigned long long)c->st.retransmits, (unsigned long long)c->st.offers, (unsigned long long)c->st.acks,
	       (unsigned long long)c->st.naks, (unsigned long long)c->st.rx_bad, (unsigned long long)c->st.rx_ignored,
	       (unsigned long long)c->st.leases, (unsigned long long)c->st.renewals, (unsigned long long)c->st.rebinds,
	       (unsigned long long)c->st.expiries, (unsigned long long)c->st.fallbacks,
	       (unsigned long long)c->st.tx_errors);
}
