/*
 * e1000e_command.c - console: `nic` (device, MAC, link, MTU, receive mode and where the
 * payload goes, rings, counters by memory class), `nic selftest [N]` (MAC loopback of N
 * IPv4/UDP frames, payload gathered first from host memory then from device memory,
 * each checked to come back split with its header in DRAM and its payload, read through
 * netdev_frag_read, equal to what was sent), `nic mode split|plain`, `nic mtu N`.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../../lib/byteorder.h"
#include "../../lib/clock.h"
#include "../../lib/command.h"
#include "../../lib/log.h"
#include "../../mm/mm.h"
#include "e1000e_pci.h"

LOG_MODULE_USE(e1000e);

#define ST_HDR 42u               /* Ethernet 14 + IPv4 20 + UDP 8: where the NIC splits */
#define ST_TIMEOUT_NS (2ull * 1000000000ull)
#define ST_MAX_FRAMES 100000u

static unsigned long long ull(uint64_t v)
{
	return (unsigned long long)v;
}

static void print_dev(struct e1000e *dev)
{
	struct netdev *nd = &dev->ndev;
	struct netdev_stats *s = &nd->stats;
	struct e1000e_counters *c = &dev->c;
	struct p2p_provider *pv = e1000e_rx_provider(dev);
	unsigned oh, od, tx_inflight = (dev->tx_ntu + dev->tx_n - dev->tx_ntc) % dev->tx_n;
	char b[8];

	netdev_stats_sync(nd); /* the receive frame counters, summed by flags */
	e1000e_rx_outstanding(dev, &oh, &od);
	printf("%s: e1000e 82574L at %s mac %02x:%02x:%02x:%02x:%02x:%02x link %s mtu %u features 0x%x\n", nd->name,
	       pci_bdf_str(e1000e_pci_dev(dev)->bdf, b), nd->mac[0], nd->mac[1], nd->mac[2], nd->mac[3], nd->mac[4],
	       nd->mac[5], nd->link_up ? "up" : "down", nd->mtu, nd->features);
	if (dev->mode == E1000E_RX_SPLIT && pv)
		printf("  rx mode: split, headers -> DRAM (%u B), payload -> device memory: %s, %u x %u B at 0x%llx\n",
		       dev->hdr.size, e1000e_rx_where(dev), dev->data.n, dev->data.size, ull(dev->data.dma.bus));
	else if (dev->mode == E1000E_RX_SPLIT)
		printf("  rx mode: split, headers -> DRAM (%u B), payload -> DRAM (%u B): %s\n", dev->hdr.size,
		       dev->data.size, dev->mode_why ? dev->mode_why : "?");
	else
		printf("  rx mode: plain, frames -> DRAM (%u B): %s\n", dev->hdr.size, dev->mode_why ? dev->mode_why : "?");
	printf("  rx ring: %u x %u B in %s at 0x%llx, ntu %u ntc %u, RDH/RDT units %u, buffers free %u/%u (held by stack %u), data free %u/%u (held %u)%s\n",
	       dev->rx_n, dev->sz.desc_size, dev->rx_ring_dma.cls == MEM_CLASS_DEVICE ? "device memory" : "DRAM",
	       (unsigned long long)dev->rx_ring_dma.bus, dev->rx_ntu, dev->rx_ntc, dev->rx_units, dev->hdr.nfree, dev->hdr.n, oh,
	       dev->data.nfree, dev->data.n, od, dev->loopback ? " LOOPBACK" : "");
	printf("  tx ring: %u x 16 B, in flight %u\n", dev->tx_n, tx_inflight);
	printf("  rx: frames %llu bytes host %llu device %llu split %llu non-split %llu csum ok %llu bad %llu dropped %llu\n",
	       ull(s->rx_frames), ull(s->rx_bytes_host), ull(s->rx_bytes_device), ull(s->rx_split),
	       ull(s->rx_frames - s->rx_split),
	       ull(s->rx_csum_ok), ull(s->rx_csum_bad), ull(s->rx_dropped));
	printf("  rx dma: header buffers %llu B (DRAM), data buffers DRAM %llu B device %llu B; errors %llu chained %llu ring-empty %llu bad-release %llu units-mismatch %llu\n",
	       ull(c->rx_hdr_bytes), ull(s->rx_bytes_host > c->rx_hdr_bytes ? s->rx_bytes_host - c->rx_hdr_bytes : 0), ull(s->rx_bytes_device),
	       ull(c->rx_errors), ull(c->rx_chained), ull(c->rx_ring_empty), ull(c->rx_bad_release),
	       ull(c->rx_units_mismatch));
	printf("  tx: frames %llu bytes host %llu device %llu csum-offload %llu context-descs %llu (reused %llu) done %llu ring-full %llu bad %llu errors %llu\n",
	       ull(s->tx_frames), ull(s->tx_bytes_host), ull(s->tx_bytes_device), ull(s->tx_csum_offload), ull(c->tx_ctx),
	       ull(c->tx_ctx_reused), ull(c->tx_done), ull(c->tx_ring_full), ull(c->tx_bad), ull(s->tx_errors));
	printf("  tx dma: NIC read DRAM %llu B device %llu B; bounced to DRAM %llu frames %llu B (tx_dev_max %u), bounce busy %llu; "
	       "trains %llu of %llu frames (mixed %llu)\n",
	       ull(c->tx_bytes[MEM_CLASS_HOST]), ull(c->tx_bytes[MEM_CLASS_DEVICE]), ull(c->tx_bounced),
	       ull(c->tx_bounce_bytes), dev->tx_dev_max, ull(c->tx_bounce_busy), ull(c->tx_trains),
	       ull(c->tx_train_frames), ull(c->tx_trains_mixed));
	printf("  tx flow: ring full -> senders stopped %llu, woken on ring space %llu (%s); frames reclaimed by xmit %llu%s, "
	       "parked netbufs %u (at the limit %llu)\n",
	       ull(s->tx_stops), ull(s->tx_wakes), nd->tx_stopped ? "stopped now" : "running", ull(c->tx_reclaimed_early),
	       dev->tx_reclaim_poll_only ? " (txreclaim poll: off)" : "", dev->tx_parked, ull(c->tx_parked_full));
	printf("  tso: %s; frames %llu -> segments %llu, up to %u B each\n", dev->tso_why ? dev->tso_why : "off",
	       ull(s->tx_tso), ull(s->tx_tso_segs), nd->tso_max);
	printf("  wake-up: %s; re-armed %llu times\n", dev->irq_on ? "receive interrupt (MSI-X, RxQ0)" : "none (polled)",
	       ull(c->irq_arms));
}

/* --- self-test ------------------------------------------------------------------------ */

static struct netbuf *st_got;
static unsigned st_stray;

static void st_capture(struct netdev *dev, struct netbuf *nb)
{
	(void)dev;
	if (st_got) { /* one at a time: anything else is stray (e.g. an earlier frame) */
		st_stray++;
		netbuf_free(nb);
		return;
	}
	st_got = nb;
}

/* The byte at position p of a pattern source (not periodic in 256). */
static uint8_t st_pattern(size_t p)
{
	return (uint8_t)(p * 131u + (p >> 8) * 17u + 7u);
}

static uint16_t csum_fold(uint32_t s)
{
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)s;
}

/* Ethernet + IPv4 + UDP header for payload len; UDP checksum field = pseudo-header sum. */
static void st_header(uint8_t *h, const uint8_t mac[6], unsigned i, unsigned len)
{
	static const uint8_t ip[4] = { 10, 99, 0, 1 };
	uint32_t s = 0;

	memcpy(h, mac, 6);
	memcpy(h + 6, mac, 6);
	be16_store(h + 12, 0x0800);
	uint8_t *iph = h + 14;
	memset(iph, 0, 20);
	iph[0] = 0x45;
	be16_store(iph + 2, (uint16_t)(20 + 8 + len));
	be16_store(iph + 4, (uint16_t)i);
	be16_store(iph + 6, 0x4000); /* DF */
	iph[8] = 64;
	iph[9] = 17;
	memcpy(iph + 12, ip, 4);
	memcpy(iph + 16, ip, 4);
	for (unsigned k = 0; k < 20; k += 2)
		s += be16_load(iph + k);
	be16_store(iph + 10, (uint16_t)~csum_fold(s));
	uint8_t *udp = iph + 20;
	be16_store(udp, 40000);
	be16_store(udp + 2, 9);
	be16_store(udp + 4, (uint16_t)(8 + len));
	s = (uint32_t)be16_load(ip) * 2 + (uint32_t)be16_load(ip + 2) * 2 + 17 + 8 + len;
	be16_store(udp + 6, csum_fold(s)); /* CHECKSUM_PARTIAL: the pseudo-header sum, not inverted */
}

/* Does the received UDP checksum (inserted by TX offload) verify over pseudo-header,
 * UDP header and payload? */
static bool st_udp_csum_ok(const uint8_t *h, const uint8_t *payload, unsigned len)
{
	uint32_t s = 0;
	const uint8_t *iph = h + 14, *udp = h + 34;
	for (unsigned k = 12; k < 20; k += 2)
		s += be16_load(iph + k);
	s += 17 + 8 + len;
	for (unsigned k = 0; k < 8; k += 2)
		s += be16_load(udp + k);
	for (unsigned k = 0; k + 1 < len; k += 2)
		s += be16_load(payload + k);
	if (len & 1)
		s += (uint32_t)payload[len - 1] << 8;
	return csum_fold(s) == 0xffff && (udp[6] | udp[7]) != 0;
}

struct st_result {
	unsigned sent, ok, split, payload_device, csum_ok, csum_sw_ok;
	uint64_t hdr_bytes, payload_bytes, payload_bytes_device, read_bytes;
	char fail[160];
};

static unsigned st_len(unsigned i, unsigned maxpay)
{
	if (i == 0)
		return maxpay; /* the longest frame the MTU allows: buffer sizing */
	return 64 + (i * 997u) % (maxpay - 64 + 1);
}

/* One phase: N frames whose payload is gathered from src (host or device memory). */
static void st_phase(struct e1000e *dev, unsigned n, dma_addr_t src, uint16_t src_provider, bool want_device,
		     unsigned nfr, uint8_t *scratch, struct st_result *r)
{
	unsigned maxpay = dev->ndev.mtu - 28;
	uint8_t hdr[ST_HDR];

	memset(r, 0, sizeof(*r));
	for (unsigned i = 0; i < n; i++) {
		unsigned len = st_len(i, maxpay);
		struct netbuf *nb = netbuf_alloc(NETBUF_HEADROOM);
		int rc;
		if (!nb) {
			snprintf(r->fail, sizeof(r->fail), "frame %u: netbuf pool empty", i);
			return;
		}
		st_header(hdr, dev->ndev.mac, i, len);
		memcpy(netbuf_put(nb, ST_HDR), hdr, ST_HDR);
		/* the payload as nfr fragments, back to back in the source */
		for (unsigned k = 0, off = 0; k < nfr; k++) {
			unsigned part = k + 1 == nfr ? len - off : len / nfr;
			struct netdev_frag f = { .addr = dma_addr_add(src, i + off), .offset = i + off, .len = part,
						 .provider = src_provider };
			netbuf_add_frag(nb, &f);
			off += part;
		}
		nb->flags |= NETBUF_TX_CSUM_PARTIAL;
		nb->csum_start = 34;
		nb->csum_offset = 6;
		st_got = NULL;
		if ((rc = netdev_tx(&dev->ndev, nb))) {
			netbuf_free(nb);
			snprintf(r->fail, sizeof(r->fail), "frame %u: xmit %d", i, rc);
			return;
		}
		r->sent++;
		uint64_t end = clock_now_ns() + ST_TIMEOUT_NS;
		while (!st_got && clock_now_ns() < end)
			e1000e_poll(dev, 16, clock_now_ns());
		struct netbuf *g = st_got;
		st_got = NULL;
		if (!g) {
			snprintf(r->fail, sizeof(r->fail), "frame %u (%u B payload): not received within 2 s", i, len);
			return;
		}
		const char *bad = NULL;
		uint64_t hb = (uint64_t)(uintptr_t)g->data, hs = (uint64_t)(uintptr_t)dev->hdr.cpu;
		if (!(g->flags & NETBUF_RX_SPLIT) || g->hdr_len != ST_HDR)
			bad = "not split at 42";
		else if (netbuf_host_len(g) != ST_HDR || memcmp(g->data, hdr, 40) != 0) /* 40-41: UDP checksum */
			bad = "header differs";
		else if (hb < hs || hb >= hs + dev->hdr.bytes)
			bad = "header not in the driver's DRAM header buffers";
		else if (g->nfrags != 1 || g->frags[0].len != len)
			bad = "payload length differs";
		else if (want_device && g->frags[0].addr.cls != MEM_CLASS_DEVICE)
			bad = "payload not in device memory";
		else if (netdev_frag_read(&g->frags[0], 0, scratch, len))
			bad = "fragment read refused";
		if (!bad) {
			r->read_bytes += len;
			for (unsigned k = 0; k < len; k++)
				if (scratch[k] != st_pattern(i + k)) {
					bad = "payload bytes differ";
					break;
				}
		}
		if (!bad && !st_udp_csum_ok(g->data, scratch, len))
			bad = "UDP checksum inserted by the NIC is wrong";
		else if (!bad)
			r->csum_sw_ok++;
		if (bad) {
			snprintf(r->fail, sizeof(r->fail), "frame %u (%u B payload): %s", i, len, bad);
			netbuf_free(g);
			return;
		}
		r->ok++;
		r->split++;
		r->hdr_bytes += netbuf_host_len(g);
		r->payload_bytes += len;
		if (g->frags[0].addr.cls == MEM_CLASS_DEVICE) {
			r->payload_device++;
			r->payload_bytes_device += len;
		}
		if (g->flags & NETBUF_RX_L4_CSUM_OK)
			r->csum_ok++;
		netbuf_free(g); /* header and payload buffers go back to the ring */
	}
}

static void st_report(const char *name, unsigned n, const struct st_result *r)
{
	printf("selftest %s: %u/%u frames ok, split %u, header bytes DRAM %llu, payload bytes %llu (device %llu in %u frames), read back %llu, rx csum ok %u, udp csum verified %u%s%s\n",
	       name, r->ok, n, r->split, ull(r->hdr_bytes), ull(r->payload_bytes), ull(r->payload_bytes_device),
	       r->payload_device, ull(r->read_bytes), r->csum_ok, r->csum_sw_ok, r->fail[0] ? ", FAILED: " : "", r->fail);
}

static int selftest(struct e1000e *dev, unsigned n)
{
	struct netdev *nd = &dev->ndev;
	enum e1000e_rx_mode old_mode = dev->mode;
	void (*old_rx)(struct netdev *, struct netbuf *) = nd->rx_handler;
	struct p2p_provider *pv;
	struct p2p_verdict v;
	struct st_result rh, rd;
	unsigned maxpay = nd->mtu - 28, oh, od;
	size_t srcbytes = maxpay + n + 64;
	uint8_t *host_src = NULL, *scratch = NULL;
	dma_addr_t host_dma, dev_dma = { 0, MEM_CLASS_DEVICE };
	void *dev_cpu = NULL;
	bool pass = false;
	int rc;

	if ((rc = e1000e_netbufs_ready()))
		return rc;
	for (uint64_t end = clock_now_ns() + ST_TIMEOUT_NS; !nd->link_up && clock_now_ns() < end;)
		e1000e_poll(dev, 16, clock_now_ns());
	if (!nd->link_up) {
		printf("selftest: link down\n");
		return -ENETDOWN;
	}
	/* Packet split into the nearest provider: rebuild receive if mode or memory differ. */
	pv = p2p_find((struct pci_dev *const[]){ e1000e_pci_dev(dev) }, 1, &v);
	if (dev->mode != E1000E_RX_SPLIT || (pv && dev->data.dma.cls != MEM_CLASS_DEVICE)) {
		if ((rc = e1000e_rx_reconfigure(dev, E1000E_RX_SPLIT, nd->mtu))) {
			printf("selftest: cannot switch receive to split mode (%d)\n", rc);
			return rc;
		}
	}
	pv = e1000e_rx_provider(dev);
	printf("selftest: %u frames, payload up to %u B, rx payload -> %s\n", n, maxpay,
	       pv ? e1000e_rx_where(dev) : (dev->mode_why ? dev->mode_why : "DRAM"));
	host_src = mm_alloc_pages((srcbytes + PAGE_SIZE - 1) / PAGE_SIZE, 1);
	scratch = mm_alloc_pages((maxpay + PAGE_SIZE - 1) / PAGE_SIZE, 1);
	if (!host_src || !scratch) {
		rc = -ENOMEM;
		goto out;
	}
	host_dma = dma_addr_host(host_src);
	for (size_t k = 0; k < srcbytes; k++)
		host_src[k] = st_pattern(k);
	if (pv && p2p_alloc(pv, srcbytes, &dev_dma, &dev_cpu) == 0) {
		volatile uint8_t *d = dev_cpu;
		for (size_t k = 0; k < srcbytes; k++)
			d[k] = st_pattern(k);
	} else {
		dev_cpu = NULL;
	}

	st_stray = 0;
	nd->rx_handler = st_capture;
	e1000e_set_loopback(dev, true);
	st_phase(dev, n, host_dma, NETDEV_PROVIDER_HOST, pv != NULL, 1, scratch, &rh);
	st_report("tx-from-dram", n, &rh);
	pass = rh.ok == n;
	if (dev_cpu) {
		uint16_t id = dev->data.provider; /* same numbering as the receive provider */
		st_phase(dev, n, dev_dma, id, true, 1, scratch, &rd);
		st_report("tx-from-device", n, &rd);
		pass = pass && rd.ok == n;
		st_phase(dev, n, dev_dma, id, true, 2, scratch, &rd);
		st_report("tx-from-device-2frags", n, &rd);
		pass = pass && rd.ok == n;
	} else {
		printf("selftest tx-from-device: skipped (no P2P provider for the NIC)\n");
		pass = false;
	}
	/* let the last transmits complete before the sources go */
	for (uint64_t end = clock_now_ns() + ST_TIMEOUT_NS; dev->tx_ntc != dev->tx_ntu && clock_now_ns() < end;)
		e1000e_poll(dev, 16, clock_now_ns());
	e1000e_set_loopback(dev, false);
	nd->rx_handler = old_rx;
	e1000e_rx_outstanding(dev, &oh, &od);
	printf("selftest: stray frames %u, buffers still held %u/%u, tx in flight %u\n", st_stray, oh, od,
	       (dev->tx_ntu + dev->tx_n - dev->tx_ntc) % dev->tx_n);
	rc = 0;
out:
	if (dev_cpu)
		p2p_free(pv, dev_dma, srcbytes);
	if (host_src)
		mm_free_pages(host_src, (srcbytes + PAGE_SIZE - 1) / PAGE_SIZE);
	if (scratch)
		mm_free_pages(scratch, (maxpay + PAGE_SIZE - 1) / PAGE_SIZE);
	if (old_mode != dev->mode && e1000e_rx_reconfigure(dev, old_mode, nd->mtu))
		printf("selftest: could not restore the receive mode\n");
	printf("selftest: %s\n", !rc && pass ? "PASS" : "FAIL");
	return rc ? rc : (pass ? 0 : -EIO);
}

static int nic_command(int argc, char **argv)
{
	struct e1000e *dev = e1000e_at(0);

	if (!dev) {
		printf("nic: no e1000e bound\n");
		return -ENODEV;
	}
	if (argc == 1) {
		for (unsigned i = 0; i < e1000e_count(); i++)
			print_dev(e1000e_at(i));
		return 0;
	}
	if (strcmp(argv[1], "selftest") == 0 && argc <= 3) {
		unsigned long n = argc == 3 ? strtoul(argv[2], NULL, 0) : 64;
		if (n < 1 || n > ST_MAX_FRAMES)
			return -EINVAL;
		return selftest(dev, (unsigned)n);
	}
	if (strcmp(argv[1], "tso") == 0 && argc == 3) {
		dev->tso_probe_pending = false; /* the console's choice stands */
		if (strcmp(argv[2], "on") == 0)
			e1000e_tso_set(dev, true, "on (console)");
		else if (strcmp(argv[2], "off") == 0)
			e1000e_tso_set(dev, false, "off (console)");
		else if (strcmp(argv[2], "probe") == 0)
			e1000e_tso_setup(dev, E1000E_TSO_AUTO, clock_now_ns());
		else
			return -EINVAL;
		printf("%s: tso %s\n", dev->ndev.name, dev->tso_why);
		return 0;
	}
	if (strcmp(argv[1], "txreclaim") == 0 && (argc == 3 || argc == 4)) {
		unsigned long lim = argc == 4 ? strtoul(argv[3], NULL, 0) : 0;
		if (strcmp(argv[2], "xmit") == 0 && argc == 3) {
			dev->tx_reclaim_poll_only = false;
			dev->tx_limit = 0;
			dev->ndev.tx_train_max = e1000e_tx_train_max(dev);
		} else if (strcmp(argv[2], "poll") == 0 && (argc == 3 || (lim >= E1000E_TX_MAX_DESCS && lim < dev->tx_n))) {
			dev->tx_reclaim_poll_only = true;
			dev->tx_limit = (unsigned)lim;
			dev->ndev.tx_train_max = e1000e_tx_train_max(dev);
		} else {
			return -EINVAL;
		}
		printf("%s: finished transmit descriptors taken back %s, up to %u in flight\n", dev->ndev.name,
		       dev->tx_reclaim_poll_only ? "at the poll only (a full ring refuses)" : "by xmit too when short",
		       dev->tx_limit ? dev->tx_limit : dev->tx_n - 1);
		return 0;
	}
	if (strcmp(argv[1], "mode") == 0 && argc == 3) {
		enum e1000e_rx_mode m;
		if (strcmp(argv[2], "split") == 0)
			m = E1000E_RX_SPLIT;
		else if (strcmp(argv[2], "plain") == 0)
			m = E1000E_RX_PLAIN;
		else
			return -EINVAL;
		dev->mode_wanted = m;
		return e1000e_rx_reconfigure(dev, m, dev->ndev.mtu);
	}
	if (strcmp(argv[1], "mtu") == 0 && argc == 3) {
		int rc = netdev_set_mtu(&dev->ndev, (unsigned)strtoul(argv[2], NULL, 0));
		if (!rc)
			printf("%s: mtu %u, frame up to %u B, buffers %u + %u B\n", dev->ndev.name, dev->ndev.mtu,
			       dev->sz.frame_max, dev->sz.hdr_size, dev->sz.data_size);
		return rc;
	}
	return -EINVAL;
}
CONSOLE_COMMAND(nic, "[selftest [N] | mode split|plain | mtu N | tso on|off|probe | txreclaim xmit|poll [N]]",
		"e1000e: state, receive mode, counters by memory class; loopback self-test", nic_command);
