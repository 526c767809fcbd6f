/*
 * e1000e.c - the bus-independent core of the 82574L driver (see e1000e.h): reset, MAC,
 * link, the receive ring (packet split into device memory, or plain), the transmit ring
 * (TCP/IP context + extended data descriptors for checksum offload, gather from host and
 * device memory), token-based return of receive buffers, and the poller's work.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../../lib/log.h"
#include "e1000e.h"

LOG_MODULE_DEFINE(e1000e);

#define ETH_HLEN 14u
#define VLAN_HLEN 4u
#define ETH_FCS_LEN 4u
#define ETH_FRAME_STD 1522u /* 1518 + one VLAN tag: longer needs RCTL.LPE */

static inline uint32_t rd32(struct e1000e *dev, uint32_t off)
{
	return dev->bus.read32(dev->bus.ctx, off);
}

static inline void wr32(struct e1000e *dev, uint32_t off, uint32_t val)
{
	dev->bus.write32(dev->bus.ctx, off, val);
}

static void delay_ns(struct e1000e *dev, uint64_t ns)
{
	if (dev->bus.delay)
		dev->bus.delay(dev->bus.ctx, ns);
}

/* Descriptor stores must be visible to the device before the tail write that hands them over. */
static inline void dma_wmb(void)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}

/* --- pure helpers ------------------------------------------------------------------ */

/* Buffer sizes for an MTU: every frame up to frame_max must fit without overrunning a buffer. */
int e1000e_rx_sizes(unsigned mtu, enum e1000e_rx_mode mode, struct e1000e_rx_sizes *out)
{
	if (mtu < NETDEV_MTU_MIN || mtu > NETDEV_MTU_MAX || !out)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	out->frame_max = mtu + ETH_HLEN + VLAN_HLEN + ETH_FCS_LEN;
	if (out->frame_max > ETH_FRAME_STD)
		out->rctl |= E1000E_RCTL_LPE;
	if (mode == E1000E_RX_SPLIT) {
		/* Buffer 1 alone must hold everything after the shortest possible split (the
		 * Ethernet + IPv4 header) and, for a frame that does not split, what buffer 0
		 * cannot take: rounding the whole frame up to 1 KiB covers both. */
		unsigned kib = (out->frame_max + E1000E_PSRCTL_BSIZEN_UNIT - 1) / E1000E_PSRCTL_BSIZEN_UNIT;
		if (kib > E1000E_PSRCTL_BSIZEN_MAX)
			return -EINVAL;
		out->hdr_size = E1000E_HDR_BUF;
		out->data_size = kib * E1000E_PSRCTL_BSIZEN_UNIT;
		out->psrctl = (E1000E_HDR_BUF / E1000E_PSRCTL_BSIZE0_UNIT) << E1000E_PSRCTL_BSIZE0_SHIFT |
			      kib << E1000E_PSRCTL_BSIZE1_SHIFT;
		out->rctl |= E1000E_RCTL_DTYP_PS;
		out->desc_size = sizeof(union e1000e_rx_desc_ps);
		return 0;
	}
	/* Legacy descriptors: RCTL.BSIZE 00 = 2048; with BSEX 11 = 4096, 10 = 8192, 01 = 16384. */
	out->desc_size = sizeof(struct e1000e_rx_desc_legacy);
	if (out->frame_max <= 2048) {
		out->hdr_size = 2048;
	} else if (out->frame_max <= 4096) {
		out->hdr_size = 4096;
		out->rctl |= E1000E_RCTL_BSEX | 3u << E1000E_RCTL_BSIZE_SHIFT;
	} else if (out->frame_max <= 8192) {
		out->hdr_size = 8192;
		out->rctl |= E1000E_RCTL_BSEX | 2u << E1000E_RCTL_BSIZE_SHIFT;
	} else {
		out->hdr_size = 16384;
		out->rctl |= E1000E_RCTL_BSEX | 1u << E1000E_RCTL_BSIZE_SHIFT;
	}
	return 0;
}

/* Checksum status bits to netbuf flags. */
uint32_t e1000e_rx_csum_flags(uint32_t staterr)
{
	uint32_t f = 0;
	if (staterr & E1000E_RXD_STAT_IPCS)
		f |= (staterr & E1000E_RXD_ERR_IPE) ? NETBUF_RX_L3_CSUM_BAD : NETBUF_RX_L3_CSUM_OK;
	if (staterr & (E1000E_RXD_STAT_TCPCS | E1000E_RXD_STAT_UDPCS))
		f |= (staterr & E1000E_RXD_ERR_TCPE) ? NETBUF_RX_L4_CSUM_BAD : NETBUF_RX_L4_CSUM_OK;
	return f;
}

static void parse_common(uint32_t staterr, struct e1000e_rx_info *out)
{
	out->staterr = staterr;
	out->done = staterr & E1000E_RXD_STAT_DD;
	out->eop = staterr & E1000E_RXD_STAT_EOP;
	out->frame_error = staterr & E1000E_RXD_ERR_FRAME;
	out->nb_flags = e1000e_rx_csum_flags(staterr);
}

/* Packet-split write-back words 1 (status_error, length0, vlan) and 2 (header_status,
 * length[0..2]) into locals. */
void e1000e_rx_parse_ps_words(uint64_t w1, uint64_t w2, struct e1000e_rx_info *out)
{
	uint16_t hs = (uint16_t)w2;

	memset(out, 0, sizeof(*out));
	parse_common((uint32_t)w1, out);
	out->len0 = (uint16_t)(w1 >> 32);
	out->len1 = (uint16_t)(w2 >> 16);
	out->split = hs & E1000E_RXDPS_HDRSP;
	if (out->split) {
		out->hdr_len = hs & E1000E_RXDPS_HDRLEN_MASK;
		out->nb_flags |= NETBUF_RX_SPLIT;
	}
}

_Static_assert(offsetof(struct e1000e_rx_desc_ps_wb, status_error) == 8 &&
	       offsetof(struct e1000e_rx_desc_ps_wb, length0) == 12 &&
	       offsetof(struct e1000e_rx_desc_ps_wb, header_status) == 16 &&
	       offsetof(struct e1000e_rx_desc_ps_wb, length) == 18, "write-back words 1 and 2");

/* Packet-split write-back into locals. */
void e1000e_rx_parse_ps(const struct e1000e_rx_desc_ps_wb *wb, struct e1000e_rx_info *out)
{
	e1000e_rx_parse_ps_words(le64_load((const uint8_t *)wb + 8), le64_load((const uint8_t *)wb + 16), out);
}

/* Word k of a descriptor in one 8-byte load: one device read when the ring is in device
 * memory (nic.rx_ring = with-data), where every access is a PCIe read (and an exit to the
 * device model under emulation). */
static inline uint64_t desc_word(const void *desc, unsigned k)
{
	uint64_t v = ((const volatile uint64_t *)desc)[k];
	return le64_load(&v);
}

/* Legacy write-back into locals (status bits 7:0, errors bits 31:24 as in status_error). */
void e1000e_rx_parse_legacy(const struct e1000e_rx_desc_legacy *d, struct e1000e_rx_info *out)
{
	memset(out, 0, sizeof(*out));
	if (d->status & E1000E_RXD_STAT_IXSM)
		parse_common((d->status & (E1000E_RXD_STAT_DD | E1000E_RXD_STAT_EOP)) | ((uint32_t)d->errors << 24), out);
	else
		parse_common(d->status | (uint32_t)d->errors << 24, out);
	out->len0 = le16_get(d->length);
}

/* Transmit descriptors for one netbuf. */
int e1000e_tx_build(const struct netbuf *nb, union e1000e_tx_desc *out, unsigned max, bool *ctx_used)
{
	size_t host = netbuf_host_len(nb);
	size_t total = host + netbuf_frag_len(nb);
	bool csum = nb->flags & NETBUF_TX_CSUM_PARTIAL, tso = nb->flags & NETBUF_TX_TSO;
	unsigned k = 0, npieces = (host ? 1u : 0u), hdr_len = 0;
	dma_addr_t addr[NETBUF_MAX_FRAGS + 1];
	uint32_t len[NETBUF_MAX_FRAGS + 1];

	*ctx_used = false;
	if (total == 0 || nb->nfrags > NETBUF_MAX_FRAGS)
		return -EINVAL;
	if (host) {
		addr[0] = dma_addr_host(nb->data);
		len[0] = (uint32_t)host;
	}
	for (unsigned i = 0; i < nb->nfrags; i++) {
		if (nb->frags[i].len == 0)
			continue;
		addr[npieces] = nb->frags[i].addr;
		len[npieces++] = nb->frags[i].len;
	}
	for (unsigned i = 0; i < npieces; i++)
		if (len[i] > E1000E_TX_BUF_MAX)
			return -EINVAL;
	if (csum) {
		/* TUCSS/TUCSO are 8-bit byte offsets; the field must lie inside the frame. */
		unsigned cso = (unsigned)nb->csum_start + nb->csum_offset;
		if (nb->csum_start > 0xff || cso > 0xff || cso + 2 > total)
			return -EINVAL;
	}
	if (tso) {
		/* IPv4 right after a 14-byte Ethernet header, every header in the host part (the
		 * device copies HDRLEN bytes in front of each segment), HDRLEN 8 bits, PAYLEN 20. */
		hdr_len = netbuf_tso_hdr_len(nb);
		if (!hdr_len || hdr_len > 0xff || nb->csum_start < 14 + 20 || total - hdr_len > E1000E_TXD_PAYLEN_MASK ||
		    (nb->data[14] >> 4) != 4)
			return -EINVAL;
	}
	if (npieces + (csum ? 1u : 0u) > max)
		return -ENOSPC;
	if (csum) {
		struct e1000e_tx_desc_ctx *c = &out[k++].ctx;
		memset(c, 0, sizeof(*c));
		c->tucss = (uint8_t)nb->csum_start;
		c->tucso = (uint8_t)(nb->csum_start + nb->csum_offset);
		c->tucse = le16_make(0); /* to the end of the packet */
		uint32_t cmd_and_length = E1000E_TXD_DTYP_CTX | E1000E_TUCMD_DEXT |
					  (nb->csum_offset == 16 ? E1000E_TUCMD_TCP : 0); /* TCP's field is at 16, UDP's at 6 */
		if (tso) {
			/* The IPv4 header checksum of every segment too: IPCSS..IPCSE, the field at 10. */
			c->ipcss = 14;
			c->ipcso = 14 + 10;
			c->ipcse = le16_make((uint16_t)(nb->csum_start - 1));
			cmd_and_length |= E1000E_TUCMD_TSE | E1000E_TUCMD_IP | (uint32_t)(total - hdr_len);
			c->hdr_len = (uint8_t)hdr_len;
			c->mss = le16_make(nb->gso_size);
		}
		c->cmd_and_length = le32_make(cmd_and_length);
		*ctx_used = true;
	}
	for (unsigned i = 0; i < npieces; i++) {
		bool last = i + 1 == npieces;
		union e1000e_tx_desc *d = &out[k++];
		memset(d, 0, sizeof(*d));
		if (csum) {
			d->data.buffer_addr = le64_make(addr[i].bus);
			d->data.lower = le32_make(len[i] | E1000E_TXD_DTYP_DATA | E1000E_DCMD_DEXT | E1000E_DCMD_IFCS |
						  (last ? E1000E_DCMD_EOP | E1000E_DCMD_RS : 0) | (tso ? E1000E_DCMD_TSE : 0));
			d->data.upper = le32_make(E1000E_POPTS_TXSM | (tso ? E1000E_POPTS_IXSM : 0));
		} else {
			d->legacy.buffer_addr = le64_make(addr[i].bus);
			d->legacy.length = le16_make((uint16_t)len[i]);
			d->legacy.cmd = E1000E_TXD_CMD_IFCS | (last ? E1000E_TXD_CMD_EOP | E1000E_TXD_CMD_RS : 0);
		}
	}
	return (int)k;
}

/* One extended data descriptor of a checksum-offload frame (POPTS.TXSM): len bytes at addr,
 * cmd (EOP, RS) added. */
static void tx_data_desc(union e1000e_tx_desc *d, uint64_t addr, uint32_t len, uint32_t cmd)
{
	memset(d, 0, sizeof(*d));
	d->data.buffer_addr = le64_make(addr);
	d->data.lower = le32_make(len | E1000E_TXD_DTYP_DATA | E1000E_DCMD_DEXT | E1000E_DCMD_IFCS | cmd);
	d->data.upper = le32_make(E1000E_POPTS_TXSM);
}

/* The checksum context descriptor every frame of a train uses (its offsets from each
 * frame's start). */
static void tx_train_ctx(const struct netbuf *nb, struct e1000e_tx_desc_ctx *c)
{
	memset(c, 0, sizeof(*c));
	c->tucss = (uint8_t)nb->csum_start;
	c->tucso = (uint8_t)(nb->csum_start + nb->csum_offset);
	c->tucse = le16_make(0); /* to the end of the packet */
	c->cmd_and_length =
		le32_make(E1000E_TXD_DTYP_CTX | E1000E_TUCMD_DEXT | (nb->csum_offset == 16 ? E1000E_TUCMD_TCP : 0));
}

/* A mixed train's frames well formed (netdev.h NETBUF_TX_TRAIN_MIXED): 1 .. nfrags frames of
 * one or two fragments each, nfrags in all, at most one device piece a frame of at most
 * tx_dev_max bytes (when set), the host part the frames' host bytes, each holding the
 * checksum field. */
static bool tx_mixed_ok(const struct netbuf *nb, unsigned tx_dev_max)
{
	unsigned frames = nb->train_frames, cso = (unsigned)nb->csum_start + nb->csum_offset, i = 0;
	size_t host = 0;

	if (!frames || frames > nb->nfrags)
		return false;
	for (unsigned f = 0; f < frames; f++) {
		unsigned nf = nb->train_nfrags[f], ndev = 0;
		if (nf < 1 || nf > 2 || i + nf > nb->nfrags || nb->train_hlen[f] < cso + 2 ||
		    nb->train_hlen[f] > E1000E_TX_BUF_MAX)
			return false;
		host += nb->train_hlen[f];
		for (unsigned j = 0; j < nf; j++, i++) {
			const struct netdev_frag *fr = &nb->frags[i];
			bool dev = fr->addr.cls == MEM_CLASS_DEVICE;
			if (!fr->len || fr->len > E1000E_TX_BUF_MAX ||
			    (tx_dev_max && dev && (fr->len > tx_dev_max || ++ndev > 1)))
				return false;
		}
	}
	return i == nb->nfrags && host == netbuf_host_len(nb);
}

/* Transmit descriptors for a mixed train: a context descriptor, then each frame's host
 * bytes and fragments, EOP on each frame's last, RS on the train's last. */
static int tx_build_mixed(const struct netbuf *nb, union e1000e_tx_desc *out, unsigned max, unsigned tx_dev_max)
{
	const uint8_t *h = nb->data;
	unsigned k = 0, i = 0, frames = nb->train_frames;

	if (!tx_mixed_ok(nb, tx_dev_max))
		return -EINVAL;
	if (1 + frames + nb->nfrags > max)
		return -ENOSPC;
	tx_train_ctx(nb, &out[k++].ctx);
	for (unsigned f = 0; f < frames; f++) {
		tx_data_desc(&out[k++], dma_addr_host(h).bus, nb->train_hlen[f], 0);
		h += nb->train_hlen[f];
		for (unsigned j = 0; j < nb->train_nfrags[f]; j++, i++) {
			bool eop = j + 1 == nb->train_nfrags[f];
			tx_data_desc(&out[k++], nb->frags[i].addr.bus, nb->frags[i].len,
				     eop ? E1000E_DCMD_EOP | (f + 1 == frames ? E1000E_DCMD_RS : 0) : 0);
		}
	}
	return (int)k;
}

/* Transmit descriptors for a frame train. */
int e1000e_tx_build_train(const struct netbuf *nb, union e1000e_tx_desc *out, unsigned max, unsigned tx_dev_max,
			  bool *ctx_used)
{
	unsigned n = nb->nfrags, hl = nb->hdr_len, cso = (unsigned)nb->csum_start + nb->csum_offset, k = 0;

	*ctx_used = false;
	if (nb->flags & NETBUF_TX_TRAIN_MIXED) {
		if (!n || n > E1000E_TX_TRAIN_MAX || (nb->flags & NETBUF_TX_TSO) ||
		    !(nb->flags & NETBUF_TX_CSUM_PARTIAL) || nb->csum_start > 0xff || cso > 0xff)
			return -EINVAL;
		int r = tx_build_mixed(nb, out, max, tx_dev_max);
		*ctx_used = r > 0;
		return r;
	}
	if (!n || n > E1000E_TX_TRAIN_MAX || !hl || (nb->flags & NETBUF_TX_TSO) ||
	    !(nb->flags & NETBUF_TX_CSUM_PARTIAL) || nb->csum_start > 0xff || cso > 0xff || cso + 2 > hl ||
	    netbuf_host_len(nb) != (size_t)n * hl)
		return -EINVAL;
	for (unsigned i = 0; i < n; i++) {
		const struct netdev_frag *f = &nb->frags[i];
		if (!f->len || f->len > E1000E_TX_BUF_MAX ||
		    (tx_dev_max && f->addr.cls == MEM_CLASS_DEVICE && f->len > tx_dev_max))
			return -EINVAL;
	}
	if (1 + 2 * n > max)
		return -ENOSPC;
	tx_train_ctx(nb, &out[k++].ctx);
	*ctx_used = true;
	for (unsigned i = 0; i < n; i++) {
		tx_data_desc(&out[k++], dma_addr_host(nb->data + (size_t)i * hl).bus, hl, 0);
		tx_data_desc(&out[k++], nb->frags[i].addr.bus, nb->frags[i].len,
			     E1000E_DCMD_EOP | (i + 1 == n ? E1000E_DCMD_RS : 0));
	}
	return (int)k;
}

/* One device-memory piece of at most tx_dev_max bytes per frame, or a copy. */
bool e1000e_tx_needs_bounce(const struct netbuf *nb, unsigned tx_dev_max)
{
	unsigned ndev = 0;
	if (!tx_dev_max)
		return false;
	for (unsigned i = 0; i < nb->nfrags; i++) {
		if (nb->frags[i].addr.cls != MEM_CLASS_DEVICE || nb->frags[i].len == 0)
			continue;
		if (++ndev > 1 || nb->frags[i].len > tx_dev_max)
			return true;
	}
	return false;
}

/* --- receive buffers ----------------------------------------------------------------- */

static struct e1000e *dev_of_owner(struct netdev_frag_owner *o, bool data)
{
	return data ? container_of(o, struct e1000e, data_owner) : container_of(o, struct e1000e, hdr_owner);
}

static void bufs_push(struct e1000e_bufs *b, uint32_t i)
{
	b->state[i] = E1000E_BUF_FREE;
	b->free[b->nfree++] = i;
}

static int32_t bufs_pop(struct e1000e_bufs *b)
{
	if (!b->nfree)
		return -1;
	uint32_t i = b->free[--b->nfree];
	b->state[i] = E1000E_BUF_RING;
	return (int32_t)i;
}

static void buf_release(struct e1000e *dev, struct e1000e_bufs *b, uint64_t token)
{
	if (token >= b->n || b->state[token] != E1000E_BUF_OUT) {
		dev->c.rx_bad_release++;
		log_warn("%s: release of buffer %llu that the stack does not hold", dev->ndev.name,
			 (unsigned long long)token);
		return;
	}
	bufs_push(b, (uint32_t)token);
}

/* netdev_frag_owner hooks: a header buffer / data buffer comes back (DONTNEED). */
static void hdr_release(struct netdev_frag_owner *o, uint64_t token)
{
	struct e1000e *dev = dev_of_owner(o, false);
	buf_release(dev, &dev->hdr, token);
}

static void data_release(struct netdev_frag_owner *o, uint64_t token)
{
	struct e1000e *dev = dev_of_owner(o, true);
	if (token < dev->data.n && dev->data.state[token] == E1000E_BUF_OUT && dev->ndev.rx_bufs_out)
		dev->ndev.rx_bufs_out--;
	buf_release(dev, &dev->data, token);
}

static void bufs_free(struct e1000e *dev, struct e1000e_bufs *b)
{
	if (b->cpu) {
		if (b->from_data_alloc)
			dev->bus.data_free(dev->bus.ctx, b->dma, b->cpu, b->bytes);
		else
			dev->bus.dma_free(dev->bus.ctx, b->cpu, b->bytes);
	}
	free(b->free);
	free(b->state);
	memset(b, 0, sizeof(*b));
}

/* n buffers of size bytes, plus `extra` bytes after them (4 KiB aligned: the receive
 * ring when it lives with the data buffers); device memory through data_alloc when
 * `device`. */
static int bufs_alloc(struct e1000e *dev, struct e1000e_bufs *b, unsigned n, unsigned size, bool device, size_t extra)
{
	const char *why = NULL;

	memset(b, 0, sizeof(*b));
	b->n = n;
	b->size = size;
	b->bytes = (size_t)n * size;
	if (extra)
		b->bytes = E1000E_ALIGN_UP(b->bytes, 4096) + extra;
	b->free = calloc(n, sizeof(*b->free));
	b->state = calloc(n, sizeof(*b->state));
	if (!b->free || !b->state)
		goto fail;
	if (device && dev->bus.data_alloc) {
		if (dev->bus.data_alloc(dev->bus.ctx, b->bytes, &b->dma, &b->cpu, &b->provider, &b->offset, &why) == 0) {
			b->from_data_alloc = true;
		} else {
			if (!why)
				why = "device memory allocation failed";
			b->cpu = NULL;
		}
	} else if (device) {
		why = "no device-memory allocator";
	}
	if (!b->cpu) {
		if (!(b->cpu = dev->bus.dma_alloc(dev->bus.ctx, b->bytes, &b->dma)))
			goto fail;
		b->provider = NETDEV_PROVIDER_HOST;
		b->offset = b->dma.bus;
	}
	if (device)
		dev->mode_why = b->dma.cls == MEM_CLASS_DEVICE ? NULL : (why ? why : "data buffers in host memory");
	for (unsigned i = n; i-- > 0;)
		bufs_push(b, i);
	return 0;
fail:
	bufs_free(dev, b);
	return -ENOMEM;
}

/* --- receive ring -------------------------------------------------------------------- */

/* Post free buffers to every empty descriptor and move RDT. */
static void rx_refill(struct e1000e *dev)
{
	bool posted = false;

	while (e1000e_ring_space(dev->rx_ntu, dev->rx_ntc, dev->rx_n)) {
		unsigned i = dev->rx_ntu;
		int32_t h, d = -1;
		if (dev->hdr.nfree == 0 || (dev->mode == E1000E_RX_SPLIT && dev->data.nfree == 0)) {
			dev->c.rx_ring_empty++;
			break;
		}
		h = bufs_pop(&dev->hdr);
		if (dev->mode == E1000E_RX_SPLIT) {
			union e1000e_rx_desc_ps *ps = (union e1000e_rx_desc_ps *)dev->rx_ring + i;
			d = bufs_pop(&dev->data);
			/* buffer 1's address overlays status_error: DD reads 0 because data buffers
			 * are at least 2-byte aligned (1 KiB multiples here). */
			ps->read.buffer_addr[0] = le64_make(dev->hdr.dma.bus + (uint64_t)h * dev->hdr.size);
			ps->read.buffer_addr[1] = le64_make(dev->data.dma.bus + (uint64_t)d * dev->data.size);
			ps->read.buffer_addr[2] = le64_make(0);
			ps->read.buffer_addr[3] = le64_make(0);
		} else {
			struct e1000e_rx_desc_legacy *l = (struct e1000e_rx_desc_legacy *)dev->rx_ring + i;
			memset(l, 0, sizeof(*l));
			l->buffer_addr = le64_make(dev->hdr.dma.bus + (uint64_t)h * dev->hdr.size);
		}
		dev->rx_sw[i].hdr = h;
		dev->rx_sw[i].data = d;
		dev->rx_ntu = (i + 1) % dev->rx_n;
		posted = true;
	}
	if (posted && dev->rx_running) {
		dma_wmb();
		wr32(dev, E1000E_RDT, e1000e_ring_reg(dev->rx_ntu, dev->rx_units));
	}
}

/* The netbuf of header buffer h. */
static inline struct netbuf *hdr_nb(struct e1000e *dev, unsigned h)
{
	return (struct netbuf *)(dev->hdr_nbs + (size_t)h * sizeof(struct netbuf));
}

static void rx_free(struct e1000e *dev)
{
	free(dev->hdr_nbs);
	dev->hdr_nbs = NULL;
	if (dev->rx_ring && !dev->rx_ring_with_data)
		dev->bus.dma_free(dev->bus.ctx, dev->rx_ring, (size_t)dev->rx_n * dev->sz.desc_size);
	dev->rx_ring = NULL;
	dev->rx_ring_with_data = false;
	dev->ndev.rx_bufs = dev->ndev.rx_bufs_out = 0;
	bufs_free(dev, &dev->hdr);
	bufs_free(dev, &dev->data);
}

/* Build and start the receive side for mode/mtu. */
static int rx_start(struct e1000e *dev, enum e1000e_rx_mode mode, unsigned mtu)
{
	int rc;

	if ((rc = e1000e_rx_sizes(mtu, mode, &dev->sz)))
		return rc;
	dev->mode = mode;
	dev->rx_n = E1000E_RX_RING;
	dev->rx_units = mode == E1000E_RX_SPLIT ? dev->ps_units : 1;
	dev->rx_ntu = dev->rx_ntc = 0;
	dev->rx_discard = false;
	dev->units_logged = false;
	for (unsigned i = 0; i < E1000E_RX_RING; i++)
		dev->rx_sw[i].hdr = dev->rx_sw[i].data = -1;
	size_t ring_bytes = (size_t)dev->rx_n * dev->sz.desc_size;
	if ((rc = bufs_alloc(dev, &dev->hdr, E1000E_RX_SLOTS, dev->sz.hdr_size, false, 0)))
		goto fail;
	if (!(dev->hdr_nbs = calloc(dev->hdr.n, sizeof(struct netbuf)))) {
		rc = -ENOMEM;
		goto fail;
	}
	for (unsigned h = 0; h < dev->hdr.n; h++)
		netbuf_rx_owned_init(hdr_nb(dev, h), (uint8_t *)dev->hdr.cpu + (size_t)h * dev->hdr.size, dev->hdr.size,
				     &dev->hdr_owner, h);
	if (mode == E1000E_RX_SPLIT) {
		/* The ring lives behind the data buffers, in the same memory: with the payload in
		 * device memory the NIC's descriptor fetches and write-backs (64 B per frame, more
		 * than a frame's headers) stay out of host DRAM too, as NVMe SQs in a CMB do. */
		if ((rc = bufs_alloc(dev, &dev->data, E1000E_RX_SLOTS, dev->sz.data_size, true,
				     dev->ring_with_data ? ring_bytes : 0)))
			goto fail;
		if (dev->ring_with_data) {
			size_t off = dev->data.bytes - ring_bytes;
			dev->rx_ring = (uint8_t *)dev->data.cpu + off;
			dev->rx_ring_dma = dma_addr_add(dev->data.dma, off);
			dev->rx_ring_with_data = true;
		}
	} else {
		dev->mode_why = "plain receive mode (nic.rx_mode = plain)";
	}
	if (!dev->rx_ring && !(dev->rx_ring = dev->bus.dma_alloc(dev->bus.ctx, ring_bytes, &dev->rx_ring_dma))) {
		rc = -ENOMEM;
		goto fail;
	}
	memset(dev->rx_ring, 0, ring_bytes);
	if (dev->mode_why)
		log_warn("%s: receive payload in host DRAM: %s", dev->ndev.name, dev->mode_why);
	else
		log_info("%s: packet split, payload into device memory (provider %u, %u x %u B at 0x%llx)",
			 dev->ndev.name, dev->data.provider, dev->data.n, dev->data.size,
			 (unsigned long long)dev->data.dma.bus);

	wr32(dev, E1000E_RCTL, 0);
	wr32(dev, E1000E_RDBAL, (uint32_t)dev->rx_ring_dma.bus);
	wr32(dev, E1000E_RDBAH, (uint32_t)(dev->rx_ring_dma.bus >> 32));
	wr32(dev, E1000E_RDLEN, (uint32_t)(dev->rx_n * dev->sz.desc_size));
	wr32(dev, E1000E_RDH, 0);
	wr32(dev, E1000E_RDT, 0);
	if (mode == E1000E_RX_SPLIT) {
		wr32(dev, E1000E_PSRCTL, dev->sz.psrctl);
		wr32(dev, E1000E_RFCTL, rd32(dev, E1000E_RFCTL) | E1000E_RFCTL_EXTEN);
	} else {
		wr32(dev, E1000E_RFCTL, rd32(dev, E1000E_RFCTL) & ~E1000E_RFCTL_EXTEN);
	}
	wr32(dev, E1000E_RXCSUM, E1000E_RXCSUM_IPOFLD | E1000E_RXCSUM_TUOFLD);
	dev->rx_running = true;
	rx_refill(dev);
	dev->rctl = E1000E_RCTL_EN | E1000E_RCTL_BAM | E1000E_RCTL_SECRC | dev->sz.rctl |
		    (dev->loopback ? E1000E_RCTL_LBM_MAC : 0);
	wr32(dev, E1000E_RCTL, dev->rctl);
	dev->ndev.features = NETDEV_F_RX_CSUM | NETDEV_F_TX_CSUM | NETDEV_F_TX_GATHER_DEV | NETDEV_F_TX_TRAIN |
			     (mode == E1000E_RX_SPLIT ? NETDEV_F_RX_SPLIT : 0) | (dev->tso_on ? NETDEV_F_TSO : 0);
	dev->ndev.tso_max = dev->tso_on ? E1000E_TSO_MAX : 0;
	dev->ndev.tx_train_max = e1000e_tx_train_max(dev);
	/* The data buffers the stack may hold (plain mode lends none: payload is copied). */
	dev->ndev.rx_bufs = mode == E1000E_RX_SPLIT ? dev->data.n : 0;
	dev->ndev.rx_bufs_out = 0;
	/* What the device gathers from device memory without the DRAM bounce. */
	dev->ndev.tx_dev_frags = dev->tx_dev_max ? 1 : 0;
	dev->ndev.tx_dev_bytes = dev->tx_dev_max;
	return 0;
fail:
	rx_free(dev);
	return rc;
}

/* Buffers the stack holds. */
void e1000e_rx_outstanding(const struct e1000e *dev, unsigned *hdr, unsigned *data)
{
	*hdr = *data = 0;
	for (unsigned i = 0; i < dev->hdr.n; i++)
		*hdr += dev->hdr.state[i] == E1000E_BUF_OUT;
	for (unsigned i = 0; i < dev->data.n; i++)
		*data += dev->data.state[i] == E1000E_BUF_OUT;
}

static int rx_stop(struct e1000e *dev)
{
	unsigned h, d;
	e1000e_rx_outstanding(dev, &h, &d);
	if (h || d)
		return -EBUSY;
	wr32(dev, E1000E_RCTL, 0);
	dev->rx_running = false;
	rx_free(dev);
	return 0;
}

/* Rebuild the receive side. */
int e1000e_rx_reconfigure(struct e1000e *dev, enum e1000e_rx_mode mode, unsigned mtu)
{
	int rc;
	if ((rc = rx_stop(dev)))
		return rc;
	if ((rc = rx_start(dev, mode, mtu))) {
		log_err("%s: receive restart failed (%d), back to the old settings", dev->ndev.name, rc);
		int rc2 = rx_start(dev, dev->mode, dev->ndev.mtu);
		if (rc2)
			log_err("%s: receive is down (%d)", dev->ndev.name, rc2);
	}
	return rc;
}

/* MAC loopback on/off. */
void e1000e_set_loopback(struct e1000e *dev, bool on)
{
	dev->loopback = on;
	dev->rctl = (dev->rctl & ~E1000E_RCTL_LBM_MASK) | (on ? E1000E_RCTL_LBM_MAC : 0);
	if (dev->rx_running)
		wr32(dev, E1000E_RCTL, dev->rctl);
}

/* Give a descriptor's buffers back to the free lists (dropped frame). */
static void rx_recycle(struct e1000e *dev, struct e1000e_rx_slot *s)
{
	if (s->hdr >= 0)
		bufs_push(&dev->hdr, (uint32_t)s->hdr);
	if (s->data >= 0)
		bufs_push(&dev->data, (uint32_t)s->data);
	s->hdr = s->data = -1;
}

/* Check that RDH moves in the units we configured (QEMU 7.2: 2 per packet-split descriptor). */
static void rx_check_units(struct e1000e *dev)
{
	uint32_t rdh = rd32(dev, E1000E_RDH);
	unsigned alt = dev->rx_units == 1 ? 2 : 1;
	if (rdh == e1000e_ring_reg(dev->rx_ntc, dev->rx_units) || dev->rx_ntc == 0)
		return;
	if (rdh == e1000e_ring_reg(dev->rx_ntc, alt)) {
		dev->c.rx_units_mismatch++;
		if (!dev->units_logged)
			log_err("%s: RDH counts %u units per descriptor, configured %u (nic.ps_units)",
				dev->ndev.name, alt, dev->rx_units);
		dev->units_logged = true;
	}
}

/* One completed descriptor into a netbuf for the stack, or dropped and its buffers recycled. */
static void rx_one(struct e1000e *dev, const struct e1000e_rx_info *in, struct e1000e_rx_slot *s)
{
	unsigned h = (unsigned)s->hdr;

	if (dev->rx_discard || !in->eop || in->frame_error || in->len0 > dev->hdr.size ||
	    (dev->mode == E1000E_RX_SPLIT && in->len1 > dev->data.size)) {
		if (!in->eop) {
			dev->c.rx_chained++;
			dev->rx_discard = true;
		} else if (dev->rx_discard) {
			dev->rx_discard = false;
		} else {
			dev->c.rx_errors++;
		}
		dev->ndev.stats.rx_dropped++;
		rx_recycle(dev, s);
		return;
	}
	/* both buffers lent before the hand-over (the stack may give them back within it; a
	 * refusal by netdev_rx_owned gives them back through hdr_release and data_release) */
	dev->hdr.state[h] = E1000E_BUF_OUT;
	s->hdr = -1;
	dev->c.rx_hdr_bytes += in->len0;
	dma_account(MEM_CLASS_HOST, DMA_FROM_DEVICE, in->len0);
	/* the frame's counts (bytes by class, split and checksum by flags) are the netdev's
	 * alone, made here (netdev_rx_count): e1000e_command derives its own from them */
	if (s->data >= 0 && in->len1 &&
	    (in->len0 + in->len1 > 60 || !netdev_rx_tail_is_padding(hdr_nb(dev, h)->head, in->len0, in->len0 + in->len1))) {
		unsigned d = (unsigned)s->data;
		struct netbuf *nb = hdr_nb(dev, h);
		struct netdev_frag own, *f = netbuf_rx_owned_slot(nb);

		/* the fragment written once, into the netbuf's own slot (no copy by the netdev);
		 * a netbuf still lent (never, while hdr.state says the buffer was free) gets it
		 * through netdev_rx_owned, which refuses the frame */
		if (__builtin_expect(!f, 0))
			f = &own;
		f->addr = dma_addr_add(dev->data.dma, (uint64_t)d * dev->data.size);
		f->offset = dev->data.offset + (uint64_t)d * dev->data.size;
		f->len = in->len1;
		f->provider = dev->data.provider;
		f->pad = 0;
		f->token = d;
		f->owner = &dev->data_owner;
		dev->data.state[d] = E1000E_BUF_OUT;
		dev->ndev.rx_bufs_out++;
		s->data = -1;
		dma_account(f->addr.cls, DMA_FROM_DEVICE, in->len1);
		netdev_rx_count(&dev->ndev, in->len0, in->nb_flags, f);
		if (__builtin_expect(f == &own, 0))
			return netdev_rx_owned(&dev->ndev, nb, in->len0, in->nb_flags, (uint16_t)in->hdr_len, f);
		return netdev_rx_owned_slot(&dev->ndev, nb, in->len0, in->nb_flags, (uint16_t)in->hdr_len);
	}
	if (s->data >= 0) { /* unused, or only the padding of a short frame in it: kept */
		dma_account(dev->data.dma.cls, DMA_FROM_DEVICE, in->len1);
		bufs_push(&dev->data, (uint32_t)s->data);
		s->data = -1;
	}
	netdev_rx_count(&dev->ndev, in->len0, in->nb_flags, NULL);
	netdev_rx_owned(&dev->ndev, hdr_nb(dev, h), in->len0, in->nb_flags, (uint16_t)in->hdr_len, NULL);
}

static unsigned rx_poll(struct e1000e *dev, unsigned budget)
{
	unsigned n = 0;
	struct e1000e_rx_info in;

	if (!dev->rx_running)
		return 0;
	while (n < budget) {
		unsigned i = dev->rx_ntc;
		if (i == dev->rx_ntu)
			break;
		__asm__ volatile("" ::: "memory"); /* the device writes the descriptor behind our back */
		if (dev->mode == E1000E_RX_SPLIT) {
			/* DD first, in the word that also holds length0; the rest after it. An
			 * idle poll is one read, a frame two. */
			const union e1000e_rx_desc_ps *d = (const union e1000e_rx_desc_ps *)dev->rx_ring + i;
			uint64_t w1 = desc_word(d, 1);
			if (!(w1 & E1000E_RXD_STAT_DD))
				break;
			__atomic_thread_fence(__ATOMIC_ACQUIRE);
			e1000e_rx_parse_ps_words(w1, desc_word(d, 2), &in);
		} else {
			e1000e_rx_parse_legacy((struct e1000e_rx_desc_legacy *)dev->rx_ring + i, &in);
			if (!in.done)
				break;
			__atomic_thread_fence(__ATOMIC_ACQUIRE); /* read the rest after DD */
		}
		/* the NIC fetched the descriptor and wrote it back */
		dma_account(dev->rx_ring_dma.cls, DMA_TO_DEVICE, dev->sz.desc_size);
		dma_account(dev->rx_ring_dma.cls, DMA_FROM_DEVICE, dev->sz.desc_size);
		struct e1000e_rx_slot s = dev->rx_sw[i];
		dev->rx_sw[i].hdr = dev->rx_sw[i].data = -1;
		dev->rx_ntc = (i + 1) % dev->rx_n;
		rx_one(dev, &in, &s);
		n++;
	}
	if (n && dev->mode == E1000E_RX_SPLIT)
		rx_check_units(dev);
	rx_refill(dev);
	if (n)
		netdev_rx_end(&dev->ndev); /* the batch's gathered events (TCP) before the next poller */
	return n;
}

/* --- transmit ------------------------------------------------------------------------ */

static unsigned tx_reclaim(struct e1000e *dev, bool complete);

/* Frames a train may carry. */
unsigned e1000e_tx_train_max(const struct e1000e *dev)
{
	unsigned n = E1000E_TX_TRAIN_MAX;

	if (dev->tx_limit && (dev->tx_limit - 1) / 2 < n)
		n = (dev->tx_limit - 1) / 2;
	return n;
}

/* The room a stopped device wakes its senders for: the descriptors of the largest frame
 * (E1000E_TX_MAX_DESCS) or of the largest train the stack builds (a context and two a
 * frame), whichever is more, so that whatever was refused fits once woken. */
static inline unsigned e1000e_tx_wake_room(const struct e1000e *dev)
{
	unsigned train = 1 + 2 * dev->ndev.tx_train_max;

	return train > E1000E_TX_MAX_DESCS ? train : E1000E_TX_MAX_DESCS;
}

/* Descriptors free to post: the ring's room, within tx_limit when one is set. */
static inline unsigned tx_space(const struct e1000e *dev)
{
	unsigned space = e1000e_ring_space(dev->tx_ntu, dev->tx_ntc, dev->tx_n);
	if (dev->tx_limit) {
		unsigned inflight = dev->tx_n - 1 - space;
		space = inflight < dev->tx_limit ? dev->tx_limit - inflight : 0;
	}
	return space;
}

/* Copy nb's fragments into a DRAM bounce buffer and describe the frame as header + that
 * buffer in *shadow. Returns the bounce index, -ENOBUFS or -EINVAL. */
static int tx_bounce(struct e1000e *dev, const struct netbuf *nb, struct netbuf *shadow)
{
	size_t total = netbuf_frag_len(nb), off = 0;
	int32_t b;

	if (total > dev->bounce.size)
		return -EINVAL;
	if ((b = bufs_pop(&dev->bounce)) < 0 && !dev->tx_reclaim_poll_only && tx_reclaim(dev, false))
		b = bufs_pop(&dev->bounce);
	if (b < 0) {
		dev->c.tx_bounce_busy++;
		return -ENOBUFS;
	}
	uint8_t *dst = (uint8_t *)dev->bounce.cpu + (size_t)b * dev->bounce.size;
	for (unsigned i = 0; i < nb->nfrags; i++) {
		netdev_frag_read(&nb->frags[i], 0, dst + off, nb->frags[i].len); /* counted CPU read */
		off += nb->frags[i].len;
	}
	*shadow = *nb; /* the struct only: the host part stays where it is */
	memset(shadow->frags, 0, sizeof(shadow->frags));
	shadow->frags[0].addr = dma_addr_add(dev->bounce.dma, (uint64_t)b * dev->bounce.size);
	shadow->frags[0].len = (uint32_t)total;
	shadow->nfrags = 1;
	dev->c.tx_bounced++;
	dev->c.tx_bounce_bytes += total;
	return b;
}

static int e1000e_xmit(struct netdev *nd, struct netbuf *nb)
{
	struct e1000e *dev = nd->priv;
	union e1000e_tx_desc d[E1000E_TX_POST_MAX];
	struct netbuf shadow;
	const struct netbuf *as = nb;
	bool ctx;
	int k, b = -1;

	if (nb->flags & NETBUF_TX_TRAIN) {
		/* (never bounced, netdev.h: the frames are taken whole or refused whole below) */
		k = e1000e_tx_build_train(nb, d, E1000E_TX_POST_MAX, dev->tx_dev_max, &ctx);
	} else {
		if (e1000e_tx_needs_bounce(nb, dev->tx_dev_max)) {
			if ((b = tx_bounce(dev, nb, &shadow)) < 0) {
				if (b == -EINVAL)
					dev->c.tx_bad++;
				else
					netdev_tx_stop(nd); /* every bounce buffer in flight: wait for the reclaim */
				return b;
			}
			as = &shadow;
		}
		k = e1000e_tx_build(as, d, E1000E_TX_MAX_DESCS, &ctx);
	}
	/* Short of descriptors: take back those the device is done with before refusing (QEMU
	 * sends on the TDT write, so the ring is full only of finished frames between two
	 * polls; a TCP pass of 64 frames of 4-10 descriptors fills it). */
	unsigned space = tx_space(dev);
	if (k >= 0 && (unsigned)k > space && !dev->tx_reclaim_poll_only && tx_reclaim(dev, false))
		space = tx_space(dev);
	if (k < 0 || (unsigned)k > space) {
		if (b >= 0) {
			bufs_push(&dev->bounce, (uint32_t)b);
			dev->c.tx_bounced--;
			dev->c.tx_bounce_bytes -= netbuf_frag_len(nb);
		}
		if (k < 0) {
			dev->c.tx_bad++;
			return -EINVAL;
		}
		dev->c.tx_ring_full++;
		netdev_tx_stop(nd); /* the senders wait for tx_reclaim's wake */
		return -ENOBUFS;
	}
	/* The device keeps the last context descriptor's offsets for the frames after it:
	 * a frame whose context equals the one in force skips its own (16 B less DMA). */
	const union e1000e_tx_desc *src = d;
	if (ctx && dev->tx_ctx_valid && memcmp(&d[0].ctx, &dev->tx_ctx_last, sizeof(dev->tx_ctx_last)) == 0) {
		src++;
		k--;
		ctx = false;
		dev->c.tx_ctx_reused++;
	} else if (ctx) {
		dev->tx_ctx_last = d[0].ctx;
		dev->tx_ctx_valid = true;
	}
	unsigned first = dev->tx_ntu, last = (first + (unsigned)k - 1) % dev->tx_n;
	for (int j = 0; j < k; j++) {
		unsigned i = (first + (unsigned)j) % dev->tx_n;
		dev->tx_ring[i] = src[j];
		dev->tx_sw[i].nb = NULL;
		dev->tx_sw[i].first = j == 0;
	}
	dev->tx_sw[first].last = (uint16_t)last;
	dev->tx_sw[last].nb = nb;
	dev->tx_sw[last].bounce = (int16_t)b;
	dev->tx_ntu = (last + 1) % dev->tx_n;
	if (ctx)
		dev->c.tx_ctx++;
	if (nb->flags & NETBUF_TX_TRAIN) {
		bool mixed = nb->flags & NETBUF_TX_TRAIN_MIXED;
		dev->c.tx_trains++;
		dev->c.tx_trains_mixed += mixed;
		dev->c.tx_train_frames += mixed ? nb->train_frames : nb->nfrags;
	}
	/* the NIC fetches k descriptors and writes back the status dword of the RS one */
	dma_account(dev->tx_ring_dma.cls, DMA_TO_DEVICE, (uint64_t)k * sizeof(*dev->tx_ring));
	dma_account(dev->tx_ring_dma.cls, DMA_FROM_DEVICE, 4);
	if (netbuf_host_len(as)) {
		dev->c.tx_bytes[MEM_CLASS_HOST] += netbuf_host_len(as);
		dma_account(MEM_CLASS_HOST, DMA_TO_DEVICE, netbuf_host_len(as));
	}
	for (unsigned i = 0; i < as->nfrags; i++) {
		dev->c.tx_bytes[as->frags[i].addr.cls] += as->frags[i].len;
		dma_account(as->frags[i].addr.cls, DMA_TO_DEVICE, as->frags[i].len);
	}
	dma_wmb();
	wr32(dev, E1000E_TDT, dev->tx_ntu);
	return 0;
}

/* Reclaim transmitted frames (DD on their last descriptor). complete: hand each netbuf
 * back now (netbuf_tx_done); otherwise (xmit short of room) later, from e1000e_poll, on
 * tx_done_later, at most E1000E_TX_PARKED_MAX of them: past that the frames stay in the
 * ring and xmit refuses (the senders stopped until the poll), so that a sender going on
 * between two polls cannot take the whole netbuf pool (a 128 KiB read pass did: 1,024).
 * After a refusal (netdev_tx_stop), wake the senders once any frame fits
 * again: the descriptors of the largest frame or train (e1000e_tx_wake_room) and, when
 * frames are bounced, a bounce buffer (a wake for less would let small frames take what a
 * TSO frame or a train waits for). */
static unsigned tx_reclaim(struct e1000e *dev, bool complete)
{
	unsigned n = 0;
	if (complete) {
		while (!list_empty(&dev->tx_done_later)) {
			struct netbuf *nb = container_of(dev->tx_done_later.next, struct netbuf, node);
			list_del(&nb->node);
			netbuf_tx_done(nb);
			n++;
		}
		dev->tx_parked = 0;
	}
	while (dev->tx_ntc != dev->tx_ntu) {
		if (!complete && dev->tx_parked >= E1000E_TX_PARKED_MAX) {
			dev->c.tx_parked_full++;
			break;
		}
		unsigned first = dev->tx_ntc, last = dev->tx_sw[first].last;
		volatile uint8_t *sta = (volatile uint8_t *)&dev->tx_ring[last] + 12; /* STA: legacy and extended */
		if (!(*sta & E1000E_TXD_STAT_DD))
			break;
		struct netbuf *nb = dev->tx_sw[last].nb;
		dev->tx_sw[last].nb = NULL;
		if (dev->tx_sw[last].bounce >= 0)
			bufs_push(&dev->bounce, (uint32_t)dev->tx_sw[last].bounce);
		dev->tx_sw[last].bounce = -1;
		dev->tx_ntc = (last + 1) % dev->tx_n;
		dev->c.tx_done++;
		if (nb && complete)
			netbuf_tx_done(nb);
		else if (nb) {
			list_add_tail(&dev->tx_done_later, &nb->node);
			dev->tx_parked++;
		}
		n++;
	}
	if (!complete)
		dev->c.tx_reclaimed_early += n;
	if (dev->ndev.tx_stopped && tx_space(dev) >= e1000e_tx_wake_room(dev) &&
	    (!dev->tx_dev_max || dev->bounce.nfree))
		netdev_tx_wake(&dev->ndev);
	return n;
}

static int e1000e_set_mtu_op(struct netdev *nd, unsigned mtu)
{
	struct e1000e *dev = nd->priv;
	return e1000e_rx_reconfigure(dev, dev->mode, mtu);
}

const struct netdev_ops e1000e_netdev_ops = { e1000e_xmit, e1000e_set_mtu_op };

/* --- device bring-up ------------------------------------------------------------------ */

static int reset(struct e1000e *dev)
{
	uint64_t waited = 0, step = 1000000;

	wr32(dev, E1000E_IMC, 0xffffffffu);
	wr32(dev, E1000E_RCTL, 0);
	wr32(dev, E1000E_TCTL, 0);
	(void)rd32(dev, E1000E_STATUS);
	wr32(dev, E1000E_CTRL, rd32(dev, E1000E_CTRL) | E1000E_CTRL_RST);
	delay_ns(dev, step);
	while (rd32(dev, E1000E_CTRL) & E1000E_CTRL_RST) {
		if (waited >= E1000E_RESET_TIMEOUT_NS) {
			log_err("%s: CTRL.RST did not clear in %llu ms", dev->where,
				(unsigned long long)(E1000E_RESET_TIMEOUT_NS / 1000000));
			return -ETIMEDOUT;
		}
		delay_ns(dev, step);
		waited += step;
	}
	wr32(dev, E1000E_IMC, 0xffffffffu); /* polling only */
	(void)rd32(dev, E1000E_ICR);
	return 0;
}

/* One EEPROM word through EERD (bounded). */
static int eerd_read(struct e1000e *dev, unsigned word, uint16_t *out)
{
	uint64_t waited = 0, step = 10000;
	uint32_t v;
	wr32(dev, E1000E_EERD, (uint32_t)word << E1000E_EERD_ADDR_SHIFT | E1000E_EERD_START);
	while (!((v = rd32(dev, E1000E_EERD)) & E1000E_EERD_DONE)) {
		if (waited >= E1000E_EERD_TIMEOUT_NS)
			return -ETIMEDOUT;
		delay_ns(dev, step);
		waited += step;
	}
	*out = (uint16_t)(v >> E1000E_EERD_DATA_SHIFT);
	return 0;
}

static int read_mac(struct e1000e *dev)
{
	uint32_t ral = rd32(dev, E1000E_RAL0), rah = rd32(dev, E1000E_RAH0);
	uint8_t *m = dev->ndev.mac;

	if ((rah & E1000E_RAH_AV) && (ral || (rah & 0xffff))) {
		for (int i = 0; i < 4; i++)
			m[i] = (uint8_t)(ral >> (8 * i));
		m[4] = (uint8_t)rah;
		m[5] = (uint8_t)(rah >> 8);
	} else {
		for (unsigned w = 0; w < 3; w++) {
			uint16_t v;
			int rc = eerd_read(dev, w, &v);
			if (rc) {
				log_err("%s: no MAC in RAL0/RAH0 and EERD timed out", dev->where);
				return rc;
			}
			m[2 * w] = (uint8_t)v;
			m[2 * w + 1] = (uint8_t)(v >> 8);
		}
	}
	if (m[0] & 1)
		return -EINVAL; /* a multicast address is no station address */
	wr32(dev, E1000E_RAL0, le32_load(m));
	wr32(dev, E1000E_RAH0, le16_load(m + 4) | E1000E_RAH_AV);
	return 0;
}

static void link_check(struct e1000e *dev)
{
	bool up = rd32(dev, E1000E_STATUS) & E1000E_STATUS_LU;
	if (up != dev->ndev.link_up) {
		dev->c.link_changes++;
		netdev_set_link(&dev->ndev, up);
	}
}

/* Bring up. */
int e1000e_init(struct e1000e *dev, unsigned mtu)
{
	int rc;

	if (!dev->bus.read32 || !dev->bus.write32 || !dev->bus.dma_alloc || !dev->bus.dma_free)
		return -EINVAL;
	if (!dev->ps_units)
		dev->ps_units = 2;
	if (!dev->ndev.name[0])
		snprintf(dev->ndev.name, sizeof(dev->ndev.name), "eth0");
	dev->ndev.ops = &e1000e_netdev_ops;
	dev->ndev.priv = dev;
	dev->ndev.mtu = mtu;
	dev->hdr_owner.name = "e1000e-hdr";
	dev->hdr_owner.release = hdr_release;
	dev->data_owner.name = "e1000e-data";
	dev->data_owner.release = data_release;
	if ((rc = reset(dev)) || (rc = read_mac(dev)))
		return rc;
	for (unsigned i = 0; i < E1000E_MTA_WORDS; i++)
		wr32(dev, E1000E_MTA + 4 * i, 0);
	wr32(dev, E1000E_CTRL, (rd32(dev, E1000E_CTRL) & ~E1000E_CTRL_PHY_RST) | E1000E_CTRL_SLU | E1000E_CTRL_ASDE);

	dev->tx_n = E1000E_TX_RING;
	dev->tx_ntu = dev->tx_ntc = 0;
	dev->tx_ctx_valid = false;
	if (!(dev->tx_ring = dev->bus.dma_alloc(dev->bus.ctx, dev->tx_n * sizeof(*dev->tx_ring), &dev->tx_ring_dma)))
		return -ENOMEM;
	memset(dev->tx_sw, 0, sizeof(dev->tx_sw));
	list_init(&dev->tx_done_later);
	dev->ndev.tx_stopped = false;
	if ((rc = bufs_alloc(dev, &dev->bounce, E1000E_TX_BOUNCE, E1000E_TX_BOUNCE_SIZE, false, 0)))
		goto err_ring;
	wr32(dev, E1000E_TDBAL, (uint32_t)dev->tx_ring_dma.bus);
	wr32(dev, E1000E_TDBAH, (uint32_t)(dev->tx_ring_dma.bus >> 32));
	wr32(dev, E1000E_TDLEN, (uint32_t)(dev->tx_n * sizeof(*dev->tx_ring)));
	wr32(dev, E1000E_TDH, 0);
	wr32(dev, E1000E_TDT, 0);
	wr32(dev, E1000E_TIPG, E1000E_TIPG_DEFAULT);
	wr32(dev, E1000E_TCTL, E1000E_TCTL_EN | E1000E_TCTL_PSP | 0x0fu << E1000E_TCTL_CT_SHIFT |
				       0x3fu << E1000E_TCTL_COLD_SHIFT | E1000E_TCTL_RTLC);
	if ((rc = rx_start(dev, dev->mode_wanted, mtu)))
		goto err_tx;
	link_check(dev);
	if ((rc = netdev_register(&dev->ndev)))
		goto err_rx;
	return 0;
err_rx:
	wr32(dev, E1000E_RCTL, 0);
	dev->rx_running = false;
	rx_free(dev);
err_tx:
	wr32(dev, E1000E_TCTL, 0);
	bufs_free(dev, &dev->bounce);
err_ring:
	dev->bus.dma_free(dev->bus.ctx, dev->tx_ring, dev->tx_n * sizeof(*dev->tx_ring));
	dev->tx_ring = NULL;
	return rc;
}

/* Tear down. */
int e1000e_fini(struct e1000e *dev)
{
	int rc;
	if ((rc = rx_stop(dev)))
		return rc;
	wr32(dev, E1000E_TCTL, 0);
	/* the device no longer reads: hand back what was queued */
	while (!list_empty(&dev->tx_done_later)) {
		struct netbuf *nb = container_of(dev->tx_done_later.next, struct netbuf, node);
		list_del(&nb->node);
		netbuf_tx_done(nb);
	}
	dev->tx_parked = 0;
	while (dev->tx_ntc != dev->tx_ntu) {
		unsigned last = dev->tx_sw[dev->tx_ntc].last;
		if (dev->tx_sw[last].nb)
			netbuf_tx_done(dev->tx_sw[last].nb);
		dev->tx_sw[last].nb = NULL;
		dev->tx_ntc = (last + 1) % dev->tx_n;
	}
	bufs_free(dev, &dev->bounce);
	dev->bus.dma_free(dev->bus.ctx, dev->tx_ring, dev->tx_n * sizeof(*dev->tx_ring));
	dev->tx_ring = NULL;
	netdev_unregister(&dev->ndev);
	return 0;
}

/* The poller's work for one device. The frames finished since the last poll (those xmit
 * parked too) are handed back before the receive batch, whose ACKs are what make TCP send
 * again, so that its sends find the netbufs free; those the batch sent, after it. */
int e1000e_poll(struct e1000e *dev, unsigned budget, uint64_t now_ns)
{
	unsigned n = tx_reclaim(dev, true);
	n += rx_poll(dev, budget);
	n += tx_reclaim(dev, true);
	if (now_ns >= dev->link_next_ns) {
		dev->link_next_ns = now_ns + E1000E_LINK_POLL_NS;
		link_check(dev);
	}
	return (int)n;
}
