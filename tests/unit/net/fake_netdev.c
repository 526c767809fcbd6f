/*
 * fake_netdev.c - a test netdev (see fake_netdev.h).
 */
#include <errno.h>
#include <string.h>
#include "lib/byteorder.h"
#include "net/wire.h"
#include "fake_netdev.h"

/* Each injected frame is a receive batch of its own, as if the poll loop ran a pass after
 * it (net/tcp/tcp.h tcp_rx_batch_end): the ACKs it owes go before inject returns. Weak:
 * the tests without TCP link no tcp_rx_batch_end. */
int tcp_rx_batch_end(void) __attribute__((weak));

static void end_of_batch(struct fake_netdev *fd)
{
	fd->rx_open = true;
	if (fd->rx_batch)
		return;
	fd->rx_open = false;
	netdev_rx_end(&fd->dev); /* as the e1000e's poll after its frames */
	if (tcp_rx_batch_end)
		tcp_rx_batch_end();
}

void fake_netdev_rx_end(struct fake_netdev *fd)
{
	if (!fd->rx_open)
		return; /* (the e1000e's poll ends a batch only when it had frames) */
	fd->rx_open = false;
	netdev_rx_end(&fd->dev);
}

const uint8_t fake_our_mac[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x10 };
const uint8_t fake_peer_mac[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x01 };

uint16_t fake_csum(const void *p, size_t len, uint32_t init)
{
	const uint8_t *b = p;
	uint64_t s = init;
	for (size_t i = 0; i + 1 < len; i += 2)
		s += (uint32_t)b[i] << 8 | b[i + 1];
	if (len & 1)
		s += (uint32_t)b[len - 1] << 8;
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)s;
}

/* Segment a NETBUF_TX_TSO frame as the 82574L does (netdev.h): hdr_len bytes of headers in
 * front of each gso_size piece; per segment the IPv4 total length, identification (+1) and
 * header checksum, the TCP sequence number, PSH/FIN on the last only, and the TCP checksum
 * from the partial sum the stack left in the field (pseudo-header without the length) plus
 * the segment's length. Each segment is one captured frame. */
static void fake_tso_segment(struct fake_netdev *fd, const struct netbuf *nb)
{
	static uint8_t whole[65536 + 256];
	size_t len = netbuf_host_len(nb), hl = netbuf_tso_hdr_len(nb), ip = 14, th = nb->csum_start;
	memcpy(whole, nb->data, len);
	for (unsigned i = 0; i < nb->nfrags; i++) {
		memcpy(whole + len, (const void *)(uintptr_t)nb->frags[i].addr.bus, nb->frags[i].len);
		len += nb->frags[i].len;
	}
	fd->tso_frames++;
	uint16_t partial = (uint16_t)(whole[th + 16] << 8 | whole[th + 17]);
	uint16_t id = (uint16_t)(whole[ip + 4] << 8 | whole[ip + 5]);
	uint32_t seq = (uint32_t)whole[th + 4] << 24 | (uint32_t)whole[th + 5] << 16 | (uint32_t)whole[th + 6] << 8 |
		       whole[th + 7];
	for (size_t off = hl, k = 0; off < len; off += nb->gso_size, k++) {
		size_t pay = len - off < nb->gso_size ? len - off : nb->gso_size;
		bool last = off + pay == len;
		if (fd->ntx >= FAKE_TX_MAX) {
			fd->tx_dropped++;
			return;
		}
		struct fake_frame *f = &fd->tx[fd->ntx++];
		memcpy(f->b, whole, hl);
		memcpy(f->b + hl, whole + off, pay);
		f->len = hl + pay;
		uint8_t *iph = f->b + ip, *t = f->b + th;
		size_t l4 = hl - th + pay;
		be16_store(iph + 2, (uint16_t)(th - ip + l4));
		be16_store(iph + 4, (uint16_t)(id + k));
		be16_store(iph + 10, 0);
		be16_store(iph + 10, (uint16_t)~fake_csum(iph, th - ip, 0));
		uint32_t sq = seq + (uint32_t)(off - hl);
		t[4] = (uint8_t)(sq >> 24);
		t[5] = (uint8_t)(sq >> 16);
		t[6] = (uint8_t)(sq >> 8);
		t[7] = (uint8_t)sq;
		if (!last)
			t[13] &= (uint8_t)~(TCP_PSH | TCP_FIN);
		be16_store(t + 16, partial);
		be16_store(t + 16, (uint16_t)~fake_csum(t, l4, (uint32_t)l4));
	}
}

/* Capture one frame of host bytes [hdr, hdr + hlen) and fragments frags[0 .. nfrags), the
 * checksum offload applied as the NIC does (csum_start/csum_offset from the frame's start). */
static void fake_capture(struct fake_netdev *fd, const struct netbuf *nb, const uint8_t *hdr, size_t hlen,
			 const struct netdev_frag *frags, unsigned nfrags)
{
	struct fake_frame *f;
	size_t len = hlen;

	if (fd->ntx >= FAKE_TX_MAX) {
		fd->tx_dropped++;
		return;
	}
	f = &fd->tx[fd->ntx++];
	memcpy(f->b, hdr, hlen);
	for (unsigned i = 0; i < nfrags; i++) {
		/* The device reads the fragment by bus address (host pointer in tests). */
		memcpy(f->b + len, (const void *)(uintptr_t)frags[i].addr.bus, frags[i].len);
		len += frags[i].len;
	}
	f->len = len;
	if (nb->flags & NETBUF_TX_CSUM_PARTIAL) {
		uint16_t c = (uint16_t)~fake_csum(f->b + nb->csum_start, len - nb->csum_start, 0);
		f->b[nb->csum_start + nb->csum_offset] = (uint8_t)(c >> 8);
		f->b[nb->csum_start + nb->csum_offset + 1] = (uint8_t)c;
	}
}

/* The descriptors nb takes in the ring model, as e1000e's: a context descriptor (checksum
 * offload or TSO), then one per piece; a train two per frame, a mixed train one per frame
 * and one per fragment (netdev.h). */
static unsigned fake_tx_descs(const struct netbuf *nb)
{
	unsigned ctx = (nb->flags & (NETBUF_TX_CSUM_PARTIAL | NETBUF_TX_TSO)) ? 1u : 0u;

	if (nb->flags & NETBUF_TX_TRAIN_MIXED)
		return ctx + nb->train_frames + nb->nfrags;
	if (nb->flags & NETBUF_TX_TRAIN)
		return ctx + 2u * nb->nfrags;
	return ctx + 1u + nb->nfrags;
}

/* A well-formed mixed train (netdev.h NETBUF_TX_TRAIN_MIXED): 1 .. nfrags frames of one or
 * two non-empty fragments each, nfrags in all and at most tx_train_max, the checksum field
 * in each frame's host bytes, which make the host part; each device piece within
 * tx_dev_bytes, at most tx_dev_frags of them a frame (limits of 0: none). */
static bool fake_mixed_ok(const struct netbuf *nb)
{
	const struct netdev *dev = nb->dev;
	unsigned frames = nb->train_frames, i = 0;
	size_t host = 0;

	if (!frames || frames > nb->nfrags || nb->nfrags > dev->tx_train_max || (nb->flags & NETBUF_TX_TSO) ||
	    !(nb->flags & NETBUF_TX_CSUM_PARTIAL))
		return false;
	for (unsigned f = 0; f < frames; f++) {
		unsigned nf = nb->train_nfrags[f], ndev = 0;
		if (nf < 1 || nf > 2 || i + nf > nb->nfrags || nb->csum_start + nb->csum_offset + 2u > nb->train_hlen[f])
			return false;
		host += nb->train_hlen[f];
		for (unsigned j = 0; j < nf; j++, i++) {
			const struct netdev_frag *fr = &nb->frags[i];
			if (!fr->len)
				return false;
			if (fr->addr.cls == MEM_CLASS_DEVICE &&
			    ((dev->tx_dev_bytes && fr->len > dev->tx_dev_bytes) || (dev->tx_dev_frags && ++ndev > dev->tx_dev_frags)))
				return false;
		}
	}
	return i == nb->nfrags && host == netbuf_host_len(nb);
}

/* A well-formed train (netdev.h): 1 .. tx_train_max frames, checksum offload inside
 * each header, the host part nfrags headers, no TSO, no empty fragment; a mixed train as
 * fake_mixed_ok says. */
static bool fake_train_ok(const struct netbuf *nb)
{
	if (nb->flags & NETBUF_TX_TRAIN_MIXED)
		return fake_mixed_ok(nb);
	if (!nb->nfrags || nb->nfrags > nb->dev->tx_train_max || !nb->hdr_len || (nb->flags & NETBUF_TX_TSO) ||
	    !(nb->flags & NETBUF_TX_CSUM_PARTIAL) || nb->csum_start + nb->csum_offset + 2u > nb->hdr_len ||
	    netbuf_host_len(nb) != (size_t)nb->nfrags * nb->hdr_len)
		return false;
	for (unsigned k = 0; k < nb->nfrags; k++)
		if (!nb->frags[k].len)
			return false;
	return true;
}

/* The ring model's room a stopped device wakes for, as e1000e's under a transmit limit: a
 * train of at most (tx_ring - 1) / 2 frames (dev.tx_train_max cut to fit the ring the test
 * set), and the room of the largest frame or train. */
static unsigned fake_tx_wake_room(struct fake_netdev *fd)
{
	unsigned train;

	if (fd->tx_ring && fd->dev.tx_train_max && 1 + 2 * fd->dev.tx_train_max > fd->tx_ring)
		fd->dev.tx_train_max = (fd->tx_ring - 1) / 2;
	train = fd->dev.tx_train_max ? 1 + 2 * fd->dev.tx_train_max : 0;
	return train > FAKE_TX_FRAME_DESCS_MAX ? train : FAKE_TX_FRAME_DESCS_MAX;
}

static int fake_xmit(struct netdev *dev, struct netbuf *nb)
{
	struct fake_netdev *fd = dev->priv;
	size_t len = netbuf_host_len(nb);

	unsigned descs = 0;

	if (fd->tx_refuse) {
		fd->tx_refuse--;
		fd->tx_refused++;
		netdev_tx_stop(dev); /* until the test calls netdev_tx_wake */
		return -ENOBUFS; /* the caller keeps nb, as e1000e_xmit's callers do */
	}
	if (fd->tx_ring) { /* the ring model (not on the benchmarks' path) */
		fake_tx_wake_room(fd); /* (the trains within the ring) */
		descs = fake_tx_descs(nb);
		if (descs > fd->tx_ring - fd->ring_used || fd->nlate == FAKE_TX_MAX) {
			fd->tx_refused++;
			netdev_tx_stop(dev);
			return -ENOBUFS;
		}
	}
	if (nb->flags & NETBUF_TX_TRAIN) {
		if (!(dev->features & NETDEV_F_TX_TRAIN) || !fake_train_ok(nb))
			return -EINVAL; /* (the caller keeps nb) */
		fd->tx_trains++;
		if (nb->flags & NETBUF_TX_TRAIN_MIXED) {
			fd->tx_trains_mixed++;
			for (unsigned f = 0, i = 0; f < nb->train_frames; i += nb->train_nfrags[f++])
				fd->tx_train_dev_frames += nb->frags[i].addr.cls == MEM_CLASS_DEVICE ||
							   (nb->train_nfrags[f] == 2 && nb->frags[i + 1].addr.cls == MEM_CLASS_DEVICE);
		} else {
			for (unsigned k = 0; k < nb->nfrags; k++)
				fd->tx_train_dev_frames += nb->frags[k].addr.cls == MEM_CLASS_DEVICE;
		}
	}
	if (fd->ntx >= FAKE_TX_MAX) {
		fd->tx_dropped++;
		netbuf_tx_done(nb);
		return 0;
	}
	/* A real NIC with gather limits would have to copy this frame through DRAM. */
	unsigned ndev = 0;
	for (unsigned i = 0; i < nb->nfrags; i++) {
		if (nb->frags[i].addr.cls != MEM_CLASS_DEVICE || !nb->frags[i].len)
			continue;
		ndev++;
		if (dev->tx_dev_bytes && nb->frags[i].len > dev->tx_dev_bytes)
			fd->tx_over_limit++;
	}
	/* (a train's frames carry one fragment each: its device pieces are one a frame; a mixed
	 * train's were checked a frame at a time, fake_mixed_ok) */
	if (dev->tx_dev_frags && ndev > dev->tx_dev_frags && !(nb->flags & NETBUF_TX_TRAIN))
		fd->tx_over_limit++;
	if (nb->flags & NETBUF_TX_TSO) {
		fake_tso_segment(fd, nb);
		if (fd->tx_ring) {
			fd->late_descs[fd->nlate] = (uint8_t)descs;
			fd->ring_used += descs;
			fd->late[fd->nlate++] = nb;
			return 0;
		}
		netbuf_tx_done(nb);
		return 0;
	}
	if (nb->flags & NETBUF_TX_TRAIN_MIXED) {
		const uint8_t *h = nb->data;
		for (unsigned f = 0, i = 0; f < nb->train_frames; i += nb->train_nfrags[f], h += nb->train_hlen[f], f++)
			fake_capture(fd, nb, h, nb->train_hlen[f], &nb->frags[i], nb->train_nfrags[f]);
	} else if (nb->flags & NETBUF_TX_TRAIN) {
		for (unsigned k = 0; k < nb->nfrags; k++)
			fake_capture(fd, nb, nb->data + (size_t)k * nb->hdr_len, nb->hdr_len, &nb->frags[k], 1);
	} else {
		fake_capture(fd, nb, nb->data, len, nb->frags, nb->nfrags);
	}
	if ((fd->tx_late || fd->tx_ring) && fd->nlate < FAKE_TX_MAX) {
		if (fd->tx_ring) {
			fd->late_descs[fd->nlate] = (uint8_t)descs;
			fd->ring_used += descs;
		}
		fd->late[fd->nlate++] = nb; /* descriptor done later */
		return 0;
	}
	netbuf_tx_done(nb);
	return 0;
}

unsigned fake_netdev_tx_complete(struct fake_netdev *fd)
{
	unsigned n = fd->nlate;
	for (unsigned i = 0; i < n; i++)
		netbuf_tx_done(fd->late[i]);
	fd->nlate = 0;
	fd->ring_used = 0;
	if (fd->tx_ring)
		netdev_tx_wake(&fd->dev);
	return n;
}

unsigned fake_netdev_tx_reclaim(struct fake_netdev *fd, unsigned n)
{
	if (n > fd->nlate)
		n = fd->nlate;
	for (unsigned i = 0; i < n; i++) {
		fd->ring_used -= fd->late_descs[i];
		netbuf_tx_done(fd->late[i]);
	}
	memmove(fd->late, fd->late + n, (fd->nlate - n) * sizeof(fd->late[0]));
	memmove(fd->late_descs, fd->late_descs + n, fd->nlate - n);
	fd->nlate -= n;
	if (fd->tx_ring - fd->ring_used >= fake_tx_wake_room(fd))
		netdev_tx_wake(&fd->dev);
	return n;
}

static int fake_set_mtu(struct netdev *dev, unsigned mtu)
{
	(void)dev;
	(void)mtu;
	return 0;
}

/* Plain mode: the frame's host buffer came back (the stack copied what it keeps). */
static void plain_release(struct netdev_frag_owner *o, uint64_t token)
{
	struct fake_netdev *fd = container_of(o, struct fake_netdev, plain_owner);
	if (token < FAKE_DATA_BUFS && fd->data_used[token]) {
		fd->data_used[token] = false;
		fd->data_out--;
	}
}

static const struct netdev_ops fake_ops = { fake_xmit, fake_set_mtu };

static void hdr_release(struct netdev_frag_owner *o, uint64_t token)
{
	struct fake_netdev *fd = container_of(o, struct fake_netdev, hdr_owner);
	if (token < FAKE_HDR_BUFS && fd->hdr_used[token]) {
		fd->hdr_used[token] = false;
		fd->hdr_out--;
	}
}

static void data_release(struct netdev_frag_owner *o, uint64_t token)
{
	struct fake_netdev *fd = container_of(o, struct fake_netdev, data_owner);
	if (token < FAKE_DATA_BUFS && fd->data_used[token]) {
		fd->data_used[token] = false;
		fd->data_out--;
		fd->dev.rx_bufs_out = fd->data_out;
	}
}

void fake_netdev_setup(struct fake_netdev *fd, uint32_t features)
{
	memset(fd, 0, sizeof(*fd));
	strcpy(fd->dev.name, "fake0");
	memcpy(fd->dev.mac, fake_our_mac, 6);
	fd->dev.mtu = 1500;
	fd->plain = (features & FAKE_NETDEV_PLAIN) != 0;
	if (fd->plain)
		features &= ~(FAKE_NETDEV_PLAIN | NETDEV_F_RX_SPLIT); /* as e1000e's plain mode */
	if (features & NETDEV_F_TX_CSUM)
		features |= NETDEV_F_TX_TRAIN; /* as e1000e: trains with checksum offload */
	fd->dev.features = features;
	fd->dev.tso_max = (features & NETDEV_F_TSO) ? 65280 : 0;
	fd->dev.tx_train_max = (features & NETDEV_F_TX_TRAIN) ? FAKE_TX_TRAIN_MAX : 0;
	fd->dev.link_up = true;
	fd->dev.ops = &fake_ops;
	fd->dev.priv = fd;
	fd->hdr_owner.name = "fake-hdr";
	fd->hdr_owner.release = hdr_release;
	fd->data_owner.name = "fake-data";
	fd->data_owner.release = data_release;
	fd->plain_owner.name = "fake-plain";
	fd->plain_owner.release = plain_release;
	fd->split = (features & NETDEV_F_RX_SPLIT) != 0;
	fd->dev.rx_bufs = fd->plain ? 0 : FAKE_DATA_BUFS; /* lent for split payloads and frame tails alike */
	if (fd->plain)
		fd->split = false;
	fd->rx_csum = (features & NETDEV_F_RX_CSUM) != 0;
	for (unsigned h = 0; h < FAKE_HDR_BUFS; h++)
		netbuf_rx_owned_init((struct netbuf *)fd->hdr_nb[h], fd->hdr_buf[h], FAKE_HDR_SIZE, &fd->hdr_owner,
				     (uint64_t)h);
	netdev_register(&fd->dev);
}

unsigned fake_netdev_teardown(struct fake_netdev *fd)
{
	netdev_unregister(&fd->dev);
	return fd->hdr_out + fd->data_out;
}

void fake_netdev_clear(struct fake_netdev *fd)
{
	fd->ntx = 0;
}

/* Where e1000e splits (docs/platform.md): after L4 for unfragmented TCP/UDP, after IP for
 * other IP and fragments, nowhere for non-IP. 0: no split. */
static size_t split_point(const uint8_t *f, size_t len)
{
	if (len < 34 || f[12] != 0x08 || f[13] != 0x00 || (f[14] >> 4) != 4)
		return 0;
	size_t ihl = (size_t)(f[14] & 15) * 4;
	if (ihl < 20 || 14 + ihl > len)
		return 0;
	uint16_t ff = (uint16_t)(f[20] << 8 | f[21]);
	uint8_t proto = f[23];
	if ((ff & 0x3fff) == 0 && proto == IP_PROTO_TCP && len >= 14 + ihl + 20) {
		size_t th = (size_t)(f[14 + ihl + 12] >> 4) * 4;
		if (th >= 20 && 14 + ihl + th <= len)
			return 14 + ihl + th;
	}
	if ((ff & 0x3fff) == 0 && proto == IP_PROTO_UDP && len >= 14 + ihl + 8)
		return 14 + ihl + 8;
	return 14 + ihl;
}

static int take(bool *used, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		if (!used[i]) {
			used[i] = true;
			return (int)i;
		}
	return -1;
}

/* Plain mode (e1000e's nic.rx_mode = plain): the whole frame in one host buffer. */
static int inject_plain(struct fake_netdev *fd, const void *frame, size_t len)
{
	struct netbuf *nb;
	int d;

	if (len > FAKE_DATA_SIZE || (d = take(fd->data_used, FAKE_DATA_BUFS)) < 0)
		return -ENOBUFS;
	memcpy(fd->data_buf[d], frame, len);
	if (!(nb = netbuf_alloc_rx(fd->data_buf[d], FAKE_DATA_SIZE, len, &fd->plain_owner, (uint64_t)d))) {
		fd->data_used[d] = false;
		return -ENOBUFS;
	}
	fd->data_out++;
	netdev_rx(&fd->dev, nb);
	end_of_batch(fd);
	return 0;
}

/* The receive checksum verdicts the e1000e's offload would give frame b of len bytes
 * (none without the offload), as netbuf flags. */
static uint32_t rx_csum_flags(const struct fake_netdev *fd, const uint8_t *b, size_t len)
{
	uint32_t flags = 0;

	if (fd->rx_csum && len >= 34 && b[12] == 8 && b[13] == 0 && (b[14] >> 4) == 4) {
		size_t ihl = (size_t)(b[14] & 15) * 4;
		if (ihl >= 20 && 14 + ihl <= len) {
			flags |= fake_csum(b + 14, ihl, 0) == 0xffff ? NETBUF_RX_L3_CSUM_OK : NETBUF_RX_L3_CSUM_BAD;
			uint16_t tot = (uint16_t)(b[16] << 8 | b[17]);
			uint8_t proto = b[23];
			if ((proto == IP_PROTO_TCP || proto == IP_PROTO_UDP) && tot >= ihl && 14 + (size_t)tot <= len &&
			    (((b[20] << 8) | b[21]) & 0x3fff) == 0) {
				uint32_t l4 = tot - (uint32_t)ihl;
				uint32_t ps = (uint32_t)(b[26] << 8 | b[27]) + (uint32_t)(b[28] << 8 | b[29]) +
					      (uint32_t)(b[30] << 8 | b[31]) + (uint32_t)(b[32] << 8 | b[33]) + proto + l4;
				bool ok = fake_csum(b + 14 + ihl, l4, ps) == 0xffff;
				flags |= ok ? NETBUF_RX_L4_CSUM_OK : NETBUF_RX_L4_CSUM_BAD;
			}
		}
	}
	if (fd->rx_csum_trust)
		flags = (flags & ~(uint32_t)(NETBUF_RX_L3_CSUM_BAD | NETBUF_RX_L4_CSUM_BAD)) | NETBUF_RX_L3_CSUM_OK |
			NETBUF_RX_L4_CSUM_OK;
	return flags;
}

/* A data buffer for the frame's bytes [off, off + n) as a fragment in f; false: none free. */
static bool data_frag(struct fake_netdev *fd, const uint8_t *b, size_t off, size_t n, struct netdev_frag *f)
{
	int d = take(fd->data_used, FAKE_DATA_BUFS);

	if (d < 0)
		return false;
	fd->data_out++;
	fd->dev.rx_bufs_out = fd->data_out;
	memcpy(fd->data_buf[d], b + off, n);
	memset(f, 0, sizeof(*f));
	f->addr = dma_addr_device((uint64_t)(uintptr_t)fd->data_buf[d]);
	f->offset = (uint64_t)d * FAKE_DATA_SIZE;
	f->len = (uint32_t)n;
	f->provider = 1;
	f->token = (uint64_t)d;
	f->owner = &fd->data_owner;
	return true;
}

/* The e1000e's one descriptor a frame (header buffer h holding its first bytes, at most one
 * data buffer for the rest): to the stack in one netdev_rx_owned call, as rx_one does. */
static int inject_owned(struct fake_netdev *fd, const uint8_t *b, size_t len, int h, size_t first, size_t hdr_len)
{
	uint32_t flags = rx_csum_flags(fd, b, len) | (hdr_len ? NETBUF_RX_SPLIT : 0);
	struct netbuf *nb = (struct netbuf *)fd->hdr_nb[h];
	struct netdev_frag own, *f = netbuf_rx_owned_slot(nb); /* written in place, as rx_one */
	bool frag = first < len && !netdev_rx_tail_is_padding(b, first, len); /* padding kept, as rx_one */

	if (!f)
		f = &own;
	if (frag && !data_frag(fd, b, first, len - first, f)) {
		fd->hdr_used[h] = false;
		return -ENOBUFS;
	}
	fd->hdr_out++;
	netdev_rx_count(&fd->dev, first, flags, frag ? f : NULL); /* the driver counts, as rx_one */
	if (frag && f != &own)
		netdev_rx_owned_slot(&fd->dev, nb, first, flags, (uint16_t)hdr_len);
	else
		netdev_rx_owned(&fd->dev, nb, first, flags, (uint16_t)hdr_len, frag ? f : NULL);
	end_of_batch(fd);
	return 0;
}

int fake_netdev_inject(struct fake_netdev *fd, const void *frame, size_t len)
{
	const uint8_t *b = frame;
	size_t hdr_len = fd->split ? split_point(b, len) : 0;
	struct netbuf *nb;
	int h;

	if (fd->plain)
		return inject_plain(fd, frame, len);
	if (hdr_len > FAKE_HDR_SIZE)
		hdr_len = 0; /* header too long: no split */
	size_t first = hdr_len ? hdr_len : (len < FAKE_HDR_SIZE ? len : FAKE_HDR_SIZE);
	if (!fd->split)
		first = len < FAKE_HDR_SIZE ? len : FAKE_HDR_SIZE;
	if ((h = take(fd->hdr_used, FAKE_HDR_BUFS)) < 0)
		return -ENOBUFS;
	memcpy(fd->hdr_buf[h], b, first);
	if (!fd->rx_pool && len - first <= FAKE_DATA_SIZE)
		return inject_owned(fd, b, len, h, first, hdr_len);
	if (fd->rx_pool)
		nb = netbuf_alloc_rx(fd->hdr_buf[h], FAKE_HDR_SIZE, first, &fd->hdr_owner, (uint64_t)h);
	else
		nb = netbuf_rx_owned_get((struct netbuf *)fd->hdr_nb[h], first);
	if (!nb) {
		fd->hdr_used[h] = false;
		return -ENOBUFS;
	}
	fd->hdr_out++;
	if (hdr_len) {
		nb->flags |= NETBUF_RX_SPLIT;
		nb->hdr_len = (uint16_t)hdr_len;
	}
	for (size_t off = first; off < len;) {
		size_t n = len - off < FAKE_DATA_SIZE ? len - off : FAKE_DATA_SIZE;
		struct netdev_frag f;
		if (nb->nfrags >= NETBUF_MAX_FRAGS || !data_frag(fd, b, off, n, &f)) {
			netbuf_free(nb);
			return -ENOBUFS;
		}
		netbuf_add_frag(nb, &f);
		off += n;
	}
	nb->flags |= rx_csum_flags(fd, b, len);
	netdev_rx(&fd->dev, nb);
	end_of_batch(fd);
	return 0;
}

/* --- peer ------------------------------------------------------------------------------ */

static uint32_t pseudo(uint32_t src, uint32_t dst, uint8_t proto, size_t len)
{
	return (src >> 16) + (src & 0xffff) + (dst >> 16) + (dst & 0xffff) + proto + (uint32_t)len;
}

size_t fake_build_ipv4(uint8_t *out, uint32_t src, uint32_t dst, uint8_t proto, const void *l4, size_t len,
		       uint16_t flags_fragoff)
{
	memcpy(out, fake_our_mac, 6);
	memcpy(out + 6, fake_peer_mac, 6);
	be16_store(out + 12, 0x0800);
	uint8_t *ip = out + 14;
	memset(ip, 0, 20);
	ip[0] = 0x45;
	be16_store(ip + 2, (uint16_t)(20 + len));
	be16_store(ip + 4, 0x1234);
	be16_store(ip + 6, flags_fragoff);
	ip[8] = 64;
	ip[9] = proto;
	be32_store(ip + 12, src);
	be32_store(ip + 16, dst);
	be16_store(ip + 10, (uint16_t)~fake_csum(ip, 20, 0));
	memcpy(ip + 20, l4, len);
	size_t total = 14 + 20 + len;
	if (total < 60) {
		memset(out + total, 0, 60 - total);
		total = 60;
	}
	return total;
}

size_t fake_build_tcp(uint8_t *out, const struct fake_tcp *t)
{
	uint8_t seg[FAKE_FRAME_MAX];
	size_t hlen = 20 + ((t->optlen + 3) & ~(size_t)3);
	memset(seg, 0, hlen);
	be16_store(seg, t->sport);
	be16_store(seg + 2, t->dport);
	be32_store(seg + 4, t->seq);
	be32_store(seg + 8, t->ack);
	seg[12] = (uint8_t)((hlen / 4) << 4);
	seg[13] = t->flags;
	be16_store(seg + 14, t->wnd);
	if (t->optlen)
		memcpy(seg + 20, t->opts, t->optlen);
	if (t->len)
		memcpy(seg + hlen, t->payload, t->len);
	uint16_t c = (uint16_t)~fake_csum(seg, hlen + t->len, pseudo(t->src, t->dst, IP_PROTO_TCP, hlen + t->len));
	if (t->bad_csum)
		c ^= 0x5555;
	be16_store(seg + 16, c);
	return fake_build_ipv4(out, t->src, t->dst, IP_PROTO_TCP, seg, hlen + t->len, 0x4000);
}

size_t fake_build_udp(uint8_t *out, uint32_t src, uint32_t dst, uint16_t sport, uint16_t dport, const void *data,
		      size_t len)
{
	uint8_t seg[FAKE_FRAME_MAX];
	be16_store(seg, sport);
	be16_store(seg + 2, dport);
	be16_store(seg + 4, (uint16_t)(8 + len));
	be16_store(seg + 6, 0);
	memcpy(seg + 8, data, len);
	uint16_t c = (uint16_t)~fake_csum(seg, 8 + len, pseudo(src, dst, IP_PROTO_UDP, 8 + len));
	be16_store(seg + 6, c ? c : 0xffff);
	return fake_build_ipv4(out, src, dst, IP_PROTO_UDP, seg, 8 + len, 0x4000);
}

size_t fake_build_arp(uint8_t *out, uint16_t oper, const uint8_t sha[6], uint32_t spa, const uint8_t tha[6],
		      uint32_t tpa, const uint8_t dst_mac[6])
{
	memset(out, 0, 60);
	memcpy(out, dst_mac, 6);
	memcpy(out + 6, sha, 6);
	be16_store(out + 12, 0x0806);
	uint8_t *a = out + 14;
	be16_store(a, 1);
	be16_store(a + 2, 0x0800);
	a[4] = 6;
	a[5] = 4;
	be16_store(a + 6, oper);
	memcpy(a + 8, sha, 6);
	be32_store(a + 14, spa);
	memcpy(a + 18, tha, 6);
	be32_store(a + 24, tpa);
	return 60;
}

bool fake_parse_tcp(const struct fake_frame *f, struct fake_parsed_tcp *o)
{
	const uint8_t *b = f->b;
	if (f->len < 54 || b[12] != 8 || b[13] != 0 || b[14] != 0x45 || b[23] != IP_PROTO_TCP)
		return false;
	if (fake_csum(b + 14, 20, 0) != 0xffff)
		return false;
	size_t tot = (size_t)(b[16] << 8 | b[17]);
	if (tot < 40 || 14 + tot > f->len)
		return false;
	const uint8_t *t = b + 34;
	size_t l4 = tot - 20;
	o->src = be32_load(b + 26);
	o->dst = be32_load(b + 30);
	if (fake_csum(t, l4, pseudo(o->src, o->dst, IP_PROTO_TCP, l4)) != 0xffff)
		return false;
	size_t hlen = (size_t)(t[12] >> 4) * 4;
	if (hlen < 20 || hlen > l4)
		return false;
	o->sport = (uint16_t)(t[0] << 8 | t[1]);
	o->dport = (uint16_t)(t[2] << 8 | t[3]);
	o->seq = be32_load(t + 4);
	o->ack = be32_load(t + 8);
	o->flags = t[13];
	o->wnd = (uint16_t)(t[14] << 8 | t[15]);
	o->mss = o->ws = -1;
	o->sack_perm = false;
	o->nsack = 0;
	o->hlen = hlen;
	for (size_t i = 20; i < hlen;) {
		if (t[i] == 0)
			break;
		if (t[i] == 1) {
			i++;
			continue;
		}
		if (i + 1 >= hlen || t[i + 1] < 2)
			break;
		if (t[i] == 2 && t[i + 1] == 4)
			o->mss = t[i + 2] << 8 | t[i + 3];
		if (t[i] == 3 && t[i + 1] == 3)
			o->ws = t[i + 2];
		if (t[i] == 4 && t[i + 1] == 2)
			o->sack_perm = true;
		if (t[i] == 5 && t[i + 1] >= 10 && (t[i + 1] - 2) % 8 == 0 && i + t[i + 1] <= hlen) {
			for (unsigned k = 0; k < (unsigned)(t[i + 1] - 2) / 8 && k < 4; k++) {
				o->sack[k][0] = be32_load(t + i + 2 + 8 * k);
				o->sack[k][1] = be32_load(t + i + 6 + 8 * k);
				o->nsack = k + 1;
			}
		}
		i += t[i + 1];
	}
	o->payload = t + hlen;
	o->len = l4 - hlen;
	return true;
}
