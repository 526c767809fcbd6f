/*
 * e1000e_tso.c - TCP segmentation offload: whether the device's segmentation can be
 * trusted, decided by a MAC loopback probe (part of the bus-independent core).
 *
 * The 82574L segments a TSO frame into TCP segments (datasheet: TCP segmentation). QEMU's
 * e1000e before 8.0 does not when its backend has no virtio-net header (dgram, socket,
 * user): it cuts the frame into IPv4 fragments of one oversized TCP segment (docs/platform.md).
 * A peer then reassembles, but the wire carries fragments, one lost fragment loses the
 * whole frame, and a middlebox may drop them. So `nic.tso = auto` sends one TSO frame of
 * E1000E_TSO_PROBE_PAYLOAD bytes to itself (RCTL.LBM = MAC loopback), looks at what comes
 * back (e1000e_tso_judge) and turns TSO on only for real, correct segments.
 */
#include <errno.h>
#include <string.h>
#include "../../lib/byteorder.h"
#include "../../lib/log.h"
#include "e1000e.h"

LOG_MODULE_USE(e1000e);

#define PROBE_HDR (14u + 20u + 20u)
#define PROBE_SEQ 0x7ffffc00u          /* the sequence number crosses 2^31 in the probe */
#define PROBE_PORT 9u                  /* discard: nothing answers if a frame escapes */
#define PROBE_STEP_NS 100000ull      /* between two polls */
#define PROBE_STEPS 2000u              /* 200 ms for the frame to come back */
#define PROBE_QUIET_STEPS 100u         /* 10 ms without a new frame: all are back */
#define PROBE_PAY_MAX 2048u
#define IPV4_MF_BIT 0x2000u
#define IPV4_OFFSET_BITS 0x1fffu
static const uint8_t probe_ip[4] = { 10, 99, 0, 2 };

static uint8_t pattern(uint32_t i)
{
	return (uint8_t)(i * 13u + (i >> 8) + 1u);
}

static uint32_t sum16(const uint8_t *p, size_t n, uint32_t s)
{
	for (size_t i = 0; i + 1 < n; i += 2)
		s += be16_load(p + i);
	if (n & 1)
		s += (uint32_t)p[n - 1] << 8;
	return s;
}

static uint16_t fold(uint32_t s)
{
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)s;
}

/* Judge what came back from one TSO frame of `payload` bytes at seq0, mss per segment. */
enum e1000e_tso_verdict e1000e_tso_judge(const struct e1000e_tso_seen *seen, unsigned n, uint32_t seq0,
					 unsigned payload, unsigned mss, const char **why)
{
	unsigned want = (payload + mss - 1) / mss;

	*why = NULL;
	if (n == 0) {
		*why = "nothing came back";
		return E1000E_TSO_NOTHING;
	}
	for (unsigned i = 0; i < n; i++)
		if (seen[i].frag & (IPV4_MF_BIT | IPV4_OFFSET_BITS)) {
			*why = "the device sends IPv4 fragments instead of TCP segments";
			return E1000E_TSO_IP_FRAGMENTS;
		}
	if (n != want) {
		*why = n < want ? "fewer segments than the MSS makes" : "more segments than the MSS makes";
		return E1000E_TSO_WRONG;
	}
	for (unsigned i = 0; i < n; i++) {
		const struct e1000e_tso_seen *s = &seen[i];
		unsigned len = i + 1 < n ? mss : payload - mss * (n - 1);
		if (!s->has_tcp || s->tcp_hlen != 20) {
			*why = "a segment without its TCP header";
			return E1000E_TSO_WRONG;
		}
		if (s->ip_len != 20 + 20 + len || s->pay_len != len) {
			*why = "a segment of the wrong length";
			return E1000E_TSO_WRONG;
		}
		if (s->seq != seq0 + i * mss) {
			*why = "a segment with the wrong sequence number";
			return E1000E_TSO_WRONG;
		}
		if (!s->ip_csum_ok || !s->tcp_csum_ok) {
			*why = "a segment with a bad checksum";
			return E1000E_TSO_WRONG;
		}
		if (!s->payload_ok) {
			*why = "a segment whose payload differs";
			return E1000E_TSO_WRONG;
		}
		if ((s->tcp_flags & 0x08) && i + 1 < n) {
			*why = "PSH on a segment other than the last";
			return E1000E_TSO_WRONG;
		}
	}
	return E1000E_TSO_SEGMENTS;
}

/* --- the loopback probe --------------------------------------------------------------- */

static struct {
	struct e1000e *dev;
	void (*next)(struct netdev *, struct netbuf *);
	struct e1000e_tso_seen seen[E1000E_TSO_PROBE_MAX];
	unsigned n;
	unsigned last_step, step;
} probe;

/* One frame during the probe: ours (IPv4 from probe_ip to probe_ip) is recorded, anything
 * else goes on to the stack. */
static void probe_rx(struct netdev *nd, struct netbuf *nb)
{
	uint8_t h[PROBE_HDR];
	size_t total = netbuf_host_len(nb) + netbuf_frag_len(nb);

	if (total < 14 + 20 || netbuf_copy_out(nb, 0, h, total < PROBE_HDR ? total : PROBE_HDR) ||
	    be16_load(h + 12) != 0x0800 || memcmp(h + 14 + 12, probe_ip, 4) || memcmp(h + 14 + 16, probe_ip, 4) ||
	    h[14 + 9] != 6) {
		if (probe.next)
			probe.next(nd, nb);
		else
			netbuf_free(nb);
		return;
	}
	if (probe.n < E1000E_TSO_PROBE_MAX) {
		struct e1000e_tso_seen *s = &probe.seen[probe.n++];
		memset(s, 0, sizeof(*s));
		s->ip_len = be16_load(h + 14 + 2);
		s->frag = be16_load(h + 14 + 6);
		s->ip_csum_ok = fold(sum16(h + 14, 20, 0)) == 0xffff;
		s->has_tcp = !(s->frag & IPV4_OFFSET_BITS) && total >= PROBE_HDR;
		if (s->has_tcp) {
			const uint8_t *t = h + 34;
			uint8_t buf[PROBE_PAY_MAX];
			size_t l4 = total - 34;
			s->seq = be32_load(t + 4);
			s->tcp_flags = t[13];
			s->tcp_hlen = (uint16_t)((t[12] >> 4) * 4);
			if (s->tcp_hlen == 20 && l4 >= 20 && l4 - 20 <= sizeof(buf) && s->ip_len == 20 + l4 &&
			    !netbuf_copy_out(nb, PROBE_HDR, buf, l4 - 20)) {
				uint32_t sum = sum16(h + 14 + 12, 8, 6u + (uint32_t)l4);
				s->pay_len = (uint16_t)(l4 - 20);
				s->tcp_csum_ok = fold(sum16(buf, s->pay_len, sum16(t, 20, sum))) == 0xffff;
				s->payload_ok = true;
				for (unsigned k = 0; k < s->pay_len; k++)
					if (buf[k] != pattern(s->seq - PROBE_SEQ + k)) {
						s->payload_ok = false;
						break;
					}
			}
		}
	}
	probe.last_step = probe.step;
	netbuf_free(nb);
}

/* The TSO frame: Ethernet to ourselves, IPv4 probe_ip -> probe_ip, TCP 9 -> 9 with ACK|PSH,
 * the pseudo-header sum without the length in the checksum field (NETBUF_TX_TSO). */
static struct netbuf *probe_frame(struct e1000e *dev, dma_addr_t pay)
{
	struct netbuf *nb = netbuf_alloc(NETBUF_HEADROOM);
	uint8_t *h;

	if (!nb || !(h = netbuf_put(nb, PROBE_HDR))) {
		if (nb)
			netbuf_free(nb);
		return NULL;
	}
	memset(h, 0, PROBE_HDR);
	memcpy(h, dev->ndev.mac, 6);
	memcpy(h + 6, dev->ndev.mac, 6);
	be16_store(h + 12, 0x0800);
	h[14] = 0x45;
	be16_store(h + 14 + 2, (uint16_t)(20 + 20 + E1000E_TSO_PROBE_PAYLOAD));
	be16_store(h + 14 + 4, 0x5150);
	be16_store(h + 14 + 6, 0x4000); /* DF */
	h[14 + 8] = 64;
	h[14 + 9] = 6;
	memcpy(h + 14 + 12, probe_ip, 4);
	memcpy(h + 14 + 16, probe_ip, 4);
	be16_store(h + 14 + 10, (uint16_t)~fold(sum16(h + 14, 20, 0)));
	uint8_t *t = h + 34;
	be16_store(t, PROBE_PORT);
	be16_store(t + 2, PROBE_PORT);
	be16_store(t + 4, (uint16_t)(PROBE_SEQ >> 16));
	be16_store(t + 6, (uint16_t)PROBE_SEQ);
	t[12] = 5 << 4;
	t[13] = 0x18; /* ACK | PSH */
	be16_store(t + 14, 0xffff);
	be16_store(t + 16, fold(sum16(h + 14 + 12, 8, 6)));
	struct netdev_frag f = { .addr = pay, .len = E1000E_TSO_PROBE_PAYLOAD, .provider = NETDEV_PROVIDER_HOST };
	netbuf_add_frag(nb, &f);
	nb->flags |= NETBUF_TX_CSUM_PARTIAL | NETBUF_TX_TSO;
	nb->csum_start = 34;
	nb->csum_offset = 16;
	nb->gso_size = E1000E_TSO_PROBE_MSS;
	return nb;
}

/* Send one TSO frame in MAC loopback and judge the segments that come back. */
enum e1000e_tso_verdict e1000e_tso_probe(struct e1000e *dev, uint64_t now_ns, const char **why)
{
	size_t bytes = 4096;
	dma_addr_t pay;
	uint8_t *p;
	struct netbuf *nb;
	bool was_on = dev->tso_on, lb = dev->loopback;
	int rc;

	*why = "no memory for the probe";
	if (!dev->ndev.link_up) {
		*why = "link down";
		return E1000E_TSO_NOTHING;
	}
	if (!(p = dev->bus.dma_alloc(dev->bus.ctx, bytes, &pay)))
		return E1000E_TSO_NOTHING;
	for (unsigned k = 0; k < E1000E_TSO_PROBE_PAYLOAD; k++)
		p[k] = pattern(k);
	if (!(nb = probe_frame(dev, pay))) {
		dev->bus.dma_free(dev->bus.ctx, p, bytes);
		return E1000E_TSO_NOTHING;
	}
	memset(&probe, 0, sizeof(probe));
	probe.dev = dev;
	probe.next = dev->ndev.rx_handler;
	dev->ndev.rx_handler = probe_rx;
	dev->tso_on = true;
	e1000e_set_loopback(dev, true);
	if ((rc = e1000e_netdev_ops.xmit(&dev->ndev, nb))) {
		netbuf_free(nb);
		*why = "the device refused the frame";
	}
	for (probe.step = 0; !rc && probe.step < PROBE_STEPS; probe.step++) {
		e1000e_poll(dev, 16, now_ns);
		if (dev->tx_ntc == dev->tx_ntu && probe.n && probe.step - probe.last_step >= PROBE_QUIET_STEPS)
			break;
		if (dev->bus.delay)
			dev->bus.delay(dev->bus.ctx, PROBE_STEP_NS);
	}
	e1000e_set_loopback(dev, lb);
	dev->tso_on = was_on;
	dev->ndev.rx_handler = probe.next;
	/* The payload stays until the device is done with it (or the device is stuck). */
	if (dev->tx_ntc == dev->tx_ntu)
		dev->bus.dma_free(dev->bus.ctx, p, bytes);
	if (rc)
		return E1000E_TSO_NOTHING;
	return e1000e_tso_judge(probe.seen, probe.n, PROBE_SEQ, E1000E_TSO_PROBE_PAYLOAD, E1000E_TSO_PROBE_MSS, why);
}

/* TSO on or off for the stack (features and tso_max), with the reason shown by `nic`. */
void e1000e_tso_set(struct e1000e *dev, bool on, const char *why)
{
	dev->tso_on = on;
	dev->tso_why = why;
	if (on) {
		dev->ndev.features |= NETDEV_F_TSO;
		dev->ndev.tso_max = E1000E_TSO_MAX;
	} else {
		dev->ndev.features &= ~NETDEV_F_TSO;
		dev->ndev.tso_max = 0;
	}
}

/* nic.tso: off, on (forced), or auto (the loopback probe decides). */
void e1000e_tso_setup(struct e1000e *dev, enum e1000e_tso_mode mode, uint64_t now_ns)
{
	const char *why = NULL;
	enum e1000e_tso_verdict v;

	dev->tso_probe_pending = false;
	if (mode == E1000E_TSO_OFF) {
		e1000e_tso_set(dev, false, "off (nic.tso = off)");
		return;
	}
	if (mode == E1000E_TSO_ON) {
		e1000e_tso_set(dev, true, "on (nic.tso = on, not probed)");
		log_info("%s: TSO on (nic.tso = on)", dev->ndev.name);
		return;
	}
	dev->tso_probe_pending = false;
	if (!dev->ndev.link_up) {
		/* A real link may come up seconds after attach: the PCI poller probes then. */
		dev->tso_probe_pending = true;
		e1000e_tso_set(dev, false, "off (the loopback probe waits for the link)");
		return;
	}
	v = e1000e_tso_probe(dev, now_ns, &why);
	if (v == E1000E_TSO_SEGMENTS) {
		e1000e_tso_set(dev, true, "on (the loopback probe saw correct TCP segments)");
		log_info("%s: TSO on: the loopback probe's frame came back as %u correct TCP segments", dev->ndev.name,
			 probe.n);
		return;
	}
	e1000e_tso_set(dev, false, v == E1000E_TSO_IP_FRAGMENTS
					   ? "off (the loopback probe got IPv4 fragments, not TCP segments)"
					   : "off (the loopback probe failed)");
	log_info("%s: TSO off: %s (loopback probe, %u frames back; QEMU before 8.0 does this, docs/platform.md); "
		 "nic.tso = on forces it", dev->ndev.name, why ? why : "?", probe.n);
}
