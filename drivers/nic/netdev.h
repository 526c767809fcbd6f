/*
 * netdev.h - the network device interface: what a NIC driver implements and what the
 * protocol stack (net/) uses. No copies on either side of it.
 *
 * Receive. A driver hands every received frame to the stack as one struct netbuf:
 *   - a header part in host memory (head..end, the received bytes are data..tail): for a
 *     packet-split NIC this is the header buffer of the descriptor; for a non-split
 *     frame it is the first buffer;
 *   - zero or more payload fragments (nb->frags[]) that follow the header part on the
 *     wire, in order. A fragment names device memory (or host memory) by bus address;
 *     the stack never dereferences it. Each fragment carries a token and an owner: the
 *     buffer goes back to the NIC's ring when whoever holds the fragment last calls
 *     netdev_frag_release() (the SO_DEVMEM_DONTNEED analogue);
 *   - flags: NETBUF_RX_SPLIT (the NIC split the frame at hdr_len; docs/platform.md: it may
 *     split after L4 for TCP/UDP, after L3 for other IP and fragments, not at all for
 *     non-IP frames) and the RX checksum status (NETBUF_RX_L4_CSUM_OK/BAD).
 *   The driver calls netdev_rx(dev, nb): the stack takes ownership of nb. It returns
 *   the header buffer through nb->release (the driver's function, token hdr_token)
 *   when it is done with the headers, normally before netdev_rx() returns; payload
 *   fragments are released individually and possibly much later.
 *
 * Transmit. The stack builds a netbuf whose header part is host memory it allocated and
 * whose frags[] gather the rest (host or device memory). ops->xmit(dev, nb) takes
 * ownership on success (0) and the driver calls netbuf_tx_done(nb) once the device no
 * longer reads the header or any fragment (descriptor done); on failure (-ENOBUFS ring
 * full, -ENETDOWN) the caller keeps nb. A driver that refuses a frame for want of room in
 * its transmit ring calls netdev_tx_stop(dev) and, once its reclaim has room for any frame
 * again, netdev_tx_wake(dev): in between (dev->tx_stopped) the stack keeps the refused
 * senders waiting for their turn instead of trying again at every call, so that a large
 * TSO frame is not beaten to the freed descriptors by small frames (net/tcp/tcp_out.c).
 * TX checksum offload uses Linux's
 * CHECKSUM_PARTIAL convention: with NETBUF_TX_CSUM_PARTIAL the stack has put the
 * pseudo-header sum (not inverted) in the L4 checksum field; the device sums from
 * csum_start to the end of the frame and stores the complement at csum_start +
 * csum_offset (e1000e: a TCP/IP context descriptor with TUCSS = csum_start and
 * TUCSO = csum_start + csum_offset, then extended data descriptors with POPTS.TXSM; QEMU's
 * e1000e ignores the legacy descriptor's CMD.IC). The IPv4 header checksum is always
 * filled by the stack.
 *
 * TCP segmentation offload (NETDEV_F_TSO, IPv4 only): a netbuf with NETBUF_TX_TSO (and
 * NETBUF_TX_CSUM_PARTIAL) is one Ethernet/IPv4/TCP frame whose TCP payload is longer than a
 * segment; the device cuts it into segments of gso_size payload bytes (the last shorter),
 * each with a copy of the headers: IPv4 total length, identification (+1 per segment) and
 * header checksum, TCP sequence number and checksum are the device's, PSH and FIN go on
 * the last segment only. The stack puts every header in the host part and, as the 8257x
 * datasheets want it, the TCP pseudo-header sum without the length in the checksum field
 * (each segment's length is added by the device). At most tso_max payload bytes per frame.
 *
 * Frame trains (NETDEV_F_TX_TRAIN, with NETDEV_F_TX_CSUM): a netbuf with NETBUF_TX_TRAIN
 * (and NETBUF_TX_CSUM_PARTIAL, never NETBUF_TX_TSO) carries nfrags frames (1 ..
 * dev->tx_train_max), each hdr_len bytes of headers and one fragment: frame k is the host
 * part's bytes [k * hdr_len, (k + 1) * hdr_len) from data, then frags[k] (len > 0); the host
 * part is exactly nfrags * hdr_len bytes. The device sends them as nfrags separate frames,
 * in order, each as if it had come alone: csum_start and csum_offset count from each
 * frame's start (the stack fills every header, IPv4 checksum and TCP pseudo-header sum
 * included, as for a lone frame). A device-memory fragment is within tx_dev_bytes (one
 * device piece a frame): a train is never copied through DRAM. The driver takes the train
 * whole or refuses it whole (-ENOBUFS: no room for every frame, then netdev_tx_stop as for
 * a frame; -EINVAL: malformed): never a part of it, so a refusal means no frame of it went
 * out and the sender goes on as after a refused frame. Taken, it is completed once
 * (netbuf_tx_done once the device is done with its last frame), which releases every
 * fragment. e1000e: one context descriptor (or none, the one in force reused) and two data
 * descriptors a frame (tx_train_max 8, fewer under a transmit limit); it wakes its senders
 * (netdev_tx_wake) only with room for a whole train, so a refused train fits once woken.
 * Sent through netdev_tx_train only.
 *
 * Mixed trains (NETBUF_TX_TRAIN_MIXED, with NETBUF_TX_TRAIN; the same device feature): the
 * frames of a short run whose pieces differ from frame to frame (a 4 KiB read's PDU header
 * and data, data, data and response). train_frames frames (1 .. nfrags): frame k is
 * train_hlen[k] bytes of the host part (its headers, then any bytes copied behind them),
 * following frame k - 1's, then its train_nfrags[k] fragments (1 or 2, len > 0), following
 * frame k - 1's; the host part is exactly the sum of train_hlen[], nfrags the sum of
 * train_nfrags[] and at most tx_train_max, as a train's (so a mixed train takes no more ring
 * room than a train of tx_train_max frames: e1000e one context and at most 2 * nfrags data
 * descriptors). The checksum field lies in every frame's host part. A device-memory fragment
 * is within tx_dev_bytes and a frame has at most tx_dev_frags of them (0: no limit): never
 * copied through DRAM either. Everything else as a train's: sent as separate frames, each as
 * if alone, taken whole or refused whole, completed once releasing every fragment. The
 * train_* fields are read only with the flag (an allocation does not clear them).
 *
 * Everything here is bounded: netbufs come from a pool (netdev_netbuf_pool), each
 * carries at most NETBUF_MAX_FRAGS fragments.
 */
#ifndef DRIVERS_NIC_NETDEV_H
#define DRIVERS_NIC_NETDEV_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "../../lib/list.h"
#include "../../mm/dma.h"
#include "../../mm/pool.h"

#define NETDEV_NAME_MAX 16
#define NETDEV_MTU_MIN 1500
#define NETDEV_MTU_MAX 9000
#define NETDEV_PROVIDER_HOST 0  /* provider id of host DRAM */

/* Host-memory part of a stack-built netbuf: headroom for Ethernet+IPv4+TCP headers plus
 * a small copied payload (ICMP echo, ARP, control-plane UDP). */
#define NETBUF_HOST_SIZE 2048
#define NETBUF_HEADROOM 128
#define NETBUF_MAX_FRAGS 8

struct netdev;
struct netbuf;
struct pci_dev;

/* Who takes a fragment's token back (a NIC's RX ring, a DRAM chunk pool, an app). */
struct netdev_frag_owner {
	const char *name;
	void (*release)(struct netdev_frag_owner *owner, uint64_t token);
};

/* A run of bytes the stack refers to but never dereferences as a host pointer. */
struct netdev_frag {
	dma_addr_t addr;        /* bus address of the first byte; addr.cls: DRAM or device memory */
	uint64_t offset;        /* offset of the first byte inside the provider's memory */
	uint32_t len;
	uint16_t provider;      /* P2P provider id (NETDEV_PROVIDER_HOST for DRAM) */
	uint16_t pad;
	uint64_t token;         /* opaque, handed back to owner->release */
	struct netdev_frag_owner *owner;  /* NULL: nothing to release */
};

/* netbuf flags */
#define NETBUF_RX_SPLIT         (1u << 0)  /* the NIC split the frame after hdr_len bytes */
#define NETBUF_RX_L3_CSUM_OK    (1u << 1)  /* the NIC verified the IPv4 header checksum */
#define NETBUF_RX_L4_CSUM_OK    (1u << 2)  /* the NIC verified the TCP/UDP checksum */
#define NETBUF_RX_L4_CSUM_BAD   (1u << 3)  /* the NIC found a bad TCP/UDP checksum */
#define NETBUF_RX_L3_CSUM_BAD   (1u << 4)  /* the NIC found a bad IPv4 header checksum */
#define NETBUF_TX_CSUM_PARTIAL  (1u << 8)  /* the device completes the L4 checksum */
#define NETBUF_TX_TSO           (1u << 9)  /* the device segments this TCP frame (gso_size) */
#define NETBUF_TX_TRAIN         (1u << 10) /* nfrags frames of hdr_len header bytes + one fragment each */
#define NETBUF_TX_TRAIN_MIXED   (1u << 11) /* with TX_TRAIN: frames of their own host bytes + 1-2 fragments (train_*) */

/* Where a netbuf comes from and goes back to (netbuf->origin). */
#define NETBUF_ORIGIN_POOL       0  /* netbuf_alloc / netbuf_alloc_rx: the pool */
#define NETBUF_ORIGIN_OWNED_IDLE 1  /* a driver's, with its header buffer (not lent now) */
#define NETBUF_ORIGIN_OWNED_LENT 2  /* a driver's, lent to the stack with its header buffer */

struct netbuf {
	struct list_node node;     /* free for the current owner's queues */
	struct netdev *dev;        /* receiving device, or the device it is sent on */
	uint8_t *head, *data, *tail, *end;  /* host-memory part */
	uint32_t flags;
	uint16_t hdr_len;          /* RX: split point reported by the NIC (0: no split); TX_TRAIN:
				    * each frame's header bytes */
	uint16_t csum_start;       /* TX_CSUM_PARTIAL: from the start of the frame */
	uint16_t csum_offset;      /* TX_CSUM_PARTIAL: checksum field offset from csum_start */
	uint16_t gso_size;         /* TX_TSO: TCP payload bytes per segment */
	uint8_t nfrags;
	uint8_t origin;            /* NETBUF_ORIGIN_*: the pool's, or a driver's (netbuf_rx_owned_init) */
	/* The host part's owner: the driver's header buffer (RX) or NULL (pool storage). */
	struct netdev_frag_owner *hdr_owner;
	uint64_t hdr_token;
	/* TX completion: called by netbuf_tx_done() before the netbuf is freed. */
	void (*tx_done)(struct netbuf *nb, void *ctx);
	void *tx_ctx;
	/* Last: a new netbuf zeroes everything above, not the fragment slots, of which only
	 * the first nfrags are ever read. */
	struct netdev_frag frags[NETBUF_MAX_FRAGS];
	/* NETBUF_TX_TRAIN_MIXED (above): its frames, each's host bytes and fragments. Written by
	 * the sender that sets the flag, read only with it: not cleared by an allocation. */
	uint8_t train_frames;
	uint8_t train_nfrags[NETBUF_MAX_FRAGS];
	uint16_t train_hlen[NETBUF_MAX_FRAGS];
	uint8_t storage[] __attribute__((aligned(8))); /* NETBUF_HOST_SIZE bytes when allocated by netbuf_alloc */
};

/* Device features. */
#define NETDEV_F_RX_SPLIT       (1u << 0)  /* header split: payload fragments in device memory */
#define NETDEV_F_RX_CSUM        (1u << 1)  /* RX checksum status in flags */
#define NETDEV_F_TX_CSUM        (1u << 2)  /* NETBUF_TX_CSUM_PARTIAL honoured */
#define NETDEV_F_TX_GATHER_DEV  (1u << 3)  /* TX fragments may point into device memory */
#define NETDEV_F_TSO            (1u << 4)  /* NETBUF_TX_TSO honoured (IPv4/TCP), up to tso_max */
#define NETDEV_F_TX_TRAIN       (1u << 5)  /* NETBUF_TX_TRAIN honoured (frame trains, above) */

struct netdev_ops {
	/* Send nb (takes ownership on 0; the caller keeps it on error). */
	int (*xmit)(struct netdev *dev, struct netbuf *nb);
	/* Change the MTU (NETDEV_MTU_MIN..MAX): 0 or negative errno. May be NULL (fixed). */
	int (*set_mtu)(struct netdev *dev, unsigned mtu);
};

/* Per-direction counters. bytes_host/bytes_device split each frame's bytes by where
 * they live, the figure the appliance minimises (host DRAM bytes per payload byte). */
struct netdev_stats {
	uint64_t rx_frames, rx_bytes_host, rx_bytes_device, rx_split, rx_dropped;
	uint64_t rx_csum_ok, rx_csum_bad;
	uint64_t tx_frames, tx_bytes_host, tx_bytes_device, tx_errors, tx_csum_offload;
	uint64_t tx_tso, tx_tso_segs;  /* segmentation-offload frames and the segments they became */
	uint64_t tx_stops, tx_wakes;   /* transmit ring full (netdev_tx_stop) and room again (netdev_tx_wake) */
};

struct netdev {
	char name[NETDEV_NAME_MAX];
	uint8_t mac[6];
	unsigned mtu;              /* IP MTU: the frame is mtu + 14 bytes (+4 FCS) */
	uint32_t features;
	bool link_up;
	/* Receive payload buffers (packet-split data buffers) the driver can lend to the stack,
	 * and how many are lent now (taken by the driver, given back through their fragments'
	 * owner). The stack budgets its receive windows and held data against them so that
	 * the ring always keeps buffers for header-only frames (ACKs). rx_bufs 0: the
	 * driver lends none (plain mode) or does not say; the stack then does not budget. */
	unsigned rx_bufs, rx_bufs_out;
	/* Transmit gather limits for device-memory fragments: at most tx_dev_frags device
	 * pieces per frame, each at most tx_dev_bytes long (0: no limit). A frame beyond them
	 * still goes out, but the driver copies it through host DRAM; the stack cuts its
	 * segments to stay within them. */
	unsigned tx_dev_frags, tx_dev_bytes;
	/* NETDEV_F_TSO: TCP payload bytes one segmentation-offload frame may carry. */
	unsigned tso_max;
	/* NETDEV_F_TX_TRAIN: frames one train may carry (1 .. NETBUF_MAX_FRAGS): a train of
	 * that many fits the room the driver wakes its stopped senders for (e1000e: 8, fewer
	 * under a transmit limit). */
	unsigned tx_train_max;
	/* The driver refused a frame for want of transmit ring room and has not had room for
	 * any frame since (netdev_tx_stop / netdev_tx_wake). */
	bool tx_stopped;
	const struct netdev_ops *ops;
	struct pci_dev *pdev;      /* the PCI function behind it (P2P placement), NULL if none */
	void *priv;                /* driver's */
	struct netdev_stats stats;  /* rx_frames, rx_split, rx_csum_ok/bad: after netdev_stats_sync */
	/* Received frames by their flags' low bits (NETBUF_RX_SPLIT .. NETBUF_RX_L3_CSUM_BAD)
	 * since the last netdev_stats_sync, which sums them into stats: one addition a frame
	 * for four counters. */
	uint64_t rx_by_flags[32];
	void (*rx_handler)(struct netdev *dev, struct netbuf *nb);  /* the stack */
	struct list_node node;     /* in the list of devices */
};

/* Bring dev->stats' receive frame counters (rx_frames, rx_split, rx_csum_ok, rx_csum_bad)
 * up to date from dev->rx_by_flags: call before reading them. */
void netdev_stats_sync(struct netdev *dev);

/* Register dev (name, mac, mtu, ops and features filled in) and attach the stack's
 * receive handler. Returns 0, -EINVAL (bad MTU or ops) or -EEXIST. */
int netdev_register(struct netdev *dev);

/* Remove dev from the list. */
void netdev_unregister(struct netdev *dev);

/* The first registered device, or NULL. */
struct netdev *netdev_first(void);

/* Call fn for every registered device. */
void netdev_foreach(void (*fn)(struct netdev *dev, void *ctx), void *ctx);

/* Install the stack's receive function for every current and future device. */
void netdev_set_stack_rx(void (*rx)(struct netdev *dev, struct netbuf *nb));

/* Driver: a frame arrived; the stack takes ownership of nb (counted here). */
void netdev_rx(struct netdev *dev, struct netbuf *nb);

/* Install the stack's end-of-batch function (NULL: none). */
void netdev_set_stack_rx_end(void (*rx_end)(struct netdev *dev));
extern void (*netdev_stack_rx_end)(struct netdev *dev);

/* Driver: the frames of one receive poll (one batch of netdev_rx calls) are all handed
 * over. The stack delivers what it gathered across the batch (TCP: one data event per
 * socket, net/tcp/tcp.h tcp_rx_flush) before the pollers after the driver's run. */
static inline void netdev_rx_end(struct netdev *dev)
{
	if (netdev_stack_rx_end)
		netdev_stack_rx_end(dev);
}

/* netdev_tx for what its common case leaves (the link down, a TSO frame, more than two
 * fragments): the same contract. */
int netdev_tx_slow(struct netdev *dev, struct netbuf *nb);

/* The driver refused nb (the caller keeps it): netdev_tx's counters taken back, the
 * refusal counted (tx_errors). */
void netdev_tx_uncount(struct netdev *dev, const struct netbuf *nb);

/* Stack: send nb on dev (counted here). Takes ownership on 0; on an error the caller keeps
 * nb. The counters are added before the driver takes nb (it may complete and free it at
 * once) and taken back on a refusal, which is rare (a full ring). Inline: the common case
 * (link up, not TSO, at most two fragments: a header, and a PDU header and/or a piece of
 * payload) is a few additions (a fragment's bytes to its memory class's counter by index:
 * tx_bytes_device follows tx_bytes_host) before the driver's call, which the call into
 * netdev.c and its register saves cost as much as; the rest in netdev_tx_slow. */
static inline int netdev_tx(struct netdev *dev, struct netbuf *nb)
{
	uint32_t flags = nb->flags;
	unsigned nfrags = nb->nfrags;
	int rc;

	_Static_assert(offsetof(struct netdev_stats, tx_bytes_device) ==
			       offsetof(struct netdev_stats, tx_bytes_host) + sizeof(uint64_t),
		       "netdev_tx counts a fragment's bytes by class as an index");
	if (__builtin_expect(!dev->link_up || (flags & NETBUF_TX_TSO) || nfrags > 2, 0))
		return netdev_tx_slow(dev, nb);
	nb->dev = dev;
	dev->stats.tx_frames++;
	dev->stats.tx_bytes_host += (size_t)(nb->tail - nb->data);
	if (nfrags) {
		(&dev->stats.tx_bytes_host)[nb->frags[0].addr.cls == MEM_CLASS_DEVICE] += nb->frags[0].len;
		if (nfrags == 2)
			(&dev->stats.tx_bytes_host)[nb->frags[1].addr.cls == MEM_CLASS_DEVICE] += nb->frags[1].len;
	}
	dev->stats.tx_csum_offload += (flags / NETBUF_TX_CSUM_PARTIAL) & 1;
	rc = dev->ops->xmit(dev, nb);
	if (__builtin_expect(rc != 0, 0))
		netdev_tx_uncount(dev, nb);
	return rc;
}

/* netdev_tx for one frame of a burst whose counters the sender adds once for the burst
 * (netdev_tx_count_burst): only for netdev_tx's common case (the caller has checked: the
 * link up, not TSO, at most two fragments). The driver's call alone; a refusal is counted
 * here as netdev_tx leaves it counted (tx_errors, and tx_csum_offload, which netdev_tx does
 * not take back), so the burst's sums count the frames the driver took. Same contract as
 * netdev_tx. */
static inline int netdev_tx_burst_one(struct netdev *dev, struct netbuf *nb)
{
	int rc;

	nb->dev = dev;
	rc = dev->ops->xmit(dev, nb);
	if (__builtin_expect(rc != 0, 0)) {
		dev->stats.tx_errors++;
		dev->stats.tx_csum_offload += (nb->flags / NETBUF_TX_CSUM_PARTIAL) & 1;
	}
	return rc;
}

/* Send the frame train nb (NETBUF_TX_TRAIN, the device has NETDEV_F_TX_TRAIN): the driver's
 * call alone, as netdev_tx_burst_one: the sender adds the counters of a train the driver took
 * (netdev_tx_count_burst, every frame of it); a refusal, of the whole train, is counted here
 * once (tx_errors). Takes ownership on 0; the caller keeps nb on an error. */
static inline int netdev_tx_train(struct netdev *dev, struct netbuf *nb)
{
	int rc;

	nb->dev = dev;
	rc = dev->ops->xmit(dev, nb);
	if (__builtin_expect(rc != 0, 0))
		dev->stats.tx_errors++;
	return rc;
}

/* What netdev_tx would have counted for frames the driver took from netdev_tx_burst_one:
 * host (host part and host-memory fragments) and device bytes, csum of them with
 * NETBUF_TX_CSUM_PARTIAL. */
static inline void netdev_tx_count_burst(struct netdev *dev, uint64_t frames, uint64_t host, uint64_t device,
					 uint64_t csum)
{
	dev->stats.tx_frames += frames;
	dev->stats.tx_bytes_host += host;
	dev->stats.tx_bytes_device += device;
	dev->stats.tx_csum_offload += csum;
}

/* Driver: a frame was refused (-ENOBUFS) for want of room in the transmit ring: senders
 * wait (dev->tx_stopped) until netdev_tx_wake. Counted once per stop. */
void netdev_tx_stop(struct netdev *dev);

/* Driver: after netdev_tx_stop, the reclaim freed room for any frame again: the stack's
 * waiting senders get their turns (net/tcp: tcp_tx's poller, at the end of the pass). */
void netdev_tx_wake(struct netdev *dev);

/* Driver: the link went up or down. */
void netdev_set_link(struct netdev *dev, bool up);

/* Set the MTU (NETDEV_MTU_MIN..NETDEV_MTU_MAX): 0, -EINVAL or the driver's error. */
int netdev_set_mtu(struct netdev *dev, unsigned mtu);

/* --- netbufs ----------------------------------------------------------------------- */

/* Create / destroy the netbuf pool (capacity buffers). 0 or negative errno. */
int netbuf_pool_init(size_t capacity);  /* also the fragment split-reference pool */
int netbuf_pool_destroy(void);

/* A netbuf with NETBUF_HOST_SIZE bytes of host storage, data = tail = head + headroom;
 * NULL when the pool is exhausted. */
struct netbuf *netbuf_alloc(size_t headroom);

/* The netbufs' pool (netdev.c; netbuf_alloc_tx takes from it inline), and the allocators'
 * answer when it is exhausted: the failure counted (when the pool exists), NULL. Out of
 * line and cold, so that an allocator saves no registers for it. */
extern struct mm_pool netdev_netbuf_pool;
__attribute__((noinline, cold)) struct netbuf *netbuf_alloc_none(void);

/* netbuf_alloc_tx with the host part's bounds where its caller puts them at once: data
 * `front` bytes before NETBUF_HEADROOM (headers it builds in front), tail `back` bytes after
 * it (the header it appends), instead of both at NETBUF_HEADROOM and stored again (a run's
 * frame, net/tcp/tcp_out.c: two stores a frame less). */
static inline __attribute__((always_inline)) struct netbuf *netbuf_alloc_tx_span(uint16_t csum_start,
										 uint16_t csum_offset, size_t front,
										 size_t back)
{
	struct netbuf *nb;

	if (__builtin_expect(!mm_pool_has_free(&netdev_netbuf_pool), 0))
		return netbuf_alloc_none();
	nb = (struct netbuf *)mm_pool_take(&netdev_netbuf_pool);
	/* every field before frags[] (netdev.c netbuf_init's) */
	list_init(&nb->node);
	nb->dev = NULL;
	nb->flags = NETBUF_TX_CSUM_PARTIAL;
	nb->hdr_len = 0;
	nb->csum_start = csum_start;
	nb->csum_offset = csum_offset;
	nb->gso_size = 0;
	nb->nfrags = 0;
	nb->origin = NETBUF_ORIGIN_POOL;
	nb->hdr_owner = NULL;
	nb->hdr_token = 0;
	nb->tx_done = NULL;
	nb->tx_ctx = NULL;
	nb->head = nb->storage;
	nb->end = nb->storage + NETBUF_HOST_SIZE;
	nb->data = nb->storage + NETBUF_HEADROOM - front;
	nb->tail = nb->storage + NETBUF_HEADROOM + back;
	return nb;
}

/* netbuf_alloc(NETBUF_HEADROOM) for a frame the stack sends with checksum offload: the same
 * netbuf, with flags NETBUF_TX_CSUM_PARTIAL, csum_start and csum_offset as given. Inline:
 * every data frame takes one, and the call with its register saves cost as much as the
 * work. NULL when the pool is exhausted (counted). */
static inline __attribute__((always_inline)) struct netbuf *netbuf_alloc_tx(uint16_t csum_start,
									    uint16_t csum_offset)
{
	return netbuf_alloc_tx_span(csum_start, csum_offset, 0, 0);
}

/* A netbuf without storage, for a driver's RX frame whose header part is the driver's
 * buffer [buf, buf + size), len bytes received; released through owner/token. */
struct netbuf *netbuf_alloc_rx(void *buf, size_t size, size_t len, struct netdev_frag_owner *owner,
			       uint64_t token);

/* Driver: make nb, memory of the driver's own (sizeof(struct netbuf): no storage), the
 * netbuf of every frame received into the header buffer [buf, buf + size), which goes
 * back through owner/token. The netbuf lives with the buffer: lent to the stack with it
 * (netbuf_rx_owned_get) and back with it (netbuf_free releases the buffer last), so that
 * a received frame takes nothing from the pool. */
void netbuf_rx_owned_init(struct netbuf *nb, void *buf, size_t size, struct netdev_frag_owner *owner,
			  uint64_t token);

/* Driver: nb (netbuf_rx_owned_init) for a frame of len bytes in its header buffer, as
 * netbuf_alloc_rx's netbuf; NULL when len is beyond the buffer or nb is still lent (the
 * stack has not freed it: a driver that hands a buffer out twice; counted as a refused
 * free of the pool). The driver then adds flags and the payload fragment and calls
 * netdev_rx. */
struct netbuf *netbuf_rx_owned_get(struct netbuf *nb, size_t len);

/* Driver: netbuf_rx_owned_get(nb, len), its flags and hdr_len set, f (NULL: none) its one
 * payload fragment, then netdev_rx, in one call: one crossing a frame. The driver marks
 * the header buffer and f's lent first and counts the frame itself, with netdev_rx_count
 * (the same arguments), before the call: netdev_rx_owned counts nothing on its way. Where
 * netbuf_rx_owned_get would return NULL the frame is dropped (counted in rx_dropped and as
 * the pool's refused free, netdev_rx_count's count taken back) and both buffers go back
 * through their owners' release, as a frame's free gives them back. */
void netdev_rx_owned(struct netdev *dev, struct netbuf *nb, size_t len, uint32_t flags, uint16_t hdr_len,
		     const struct netdev_frag *f);

/* Driver: is all that a received frame of frame_len bytes has past the first len0 (its header
 * buffer's, hdr) Ethernet padding? A frame under Ethernet's minimum (60 bytes without the FCS)
 * carrying an IPv4 datagram whose total length lies whole in those len0 bytes: a pure ACK that
 * the NIC split after its TCP header, its padding in a data buffer. The stack reads no byte
 * past an IPv4 datagram, so the driver keeps that buffer (lent, it would only come back) and
 * hands the frame up without a fragment, the padding uncounted. */
static inline bool netdev_rx_tail_is_padding(const uint8_t *hdr, size_t len0, size_t frame_len)
{
	return frame_len <= 60 && len0 >= 14 + 20 && hdr[12] == 0x08 && hdr[13] == 0x00 &&
	       14u + ((size_t)hdr[16] << 8 | hdr[17]) <= len0;
}

/* Driver: the payload fragment slot of its netbuf nb (netbuf_rx_owned_init) while nb is idle
 * (not lent: the slot is the driver's then, and an idle netbuf has no fragment), for it to
 * write a frame's fragment into before netdev_rx_owned_slot; NULL while nb is lent (the slot
 * is the stack's: a driver that hands a buffer out twice then calls netdev_rx_owned with a
 * fragment of its own, which refuses the frame). */
static inline struct netdev_frag *netbuf_rx_owned_slot(struct netbuf *nb)
{
	return nb->origin == NETBUF_ORIGIN_OWNED_IDLE ? &nb->frags[0] : NULL;
}

/* Driver: netdev_rx_owned(dev, nb, len, flags, hdr_len, f) for a frame whose one payload
 * fragment the driver wrote into netbuf_rx_owned_slot(nb) (nb idle when it did), so that the
 * fragment is written once, where the stack reads it, not built by the driver and copied
 * here. The same contract otherwise (counted by the driver's netdev_rx_count first; longer
 * than the buffer: refused, the slot's fragment and the header buffer given back). */
void netdev_rx_owned_slot(struct netdev *dev, struct netbuf *nb, size_t len, uint32_t flags, uint16_t hdr_len);

/* Driver: the count of a frame it hands over with netdev_rx_owned, the same one netdev_rx
 * makes: len bytes of host part to rx_bytes_host, f's bytes (NULL: none) to its memory
 * class's counter by index (rx_bytes_device follows rx_bytes_host), the frame by its flags'
 * low bits (rx_by_flags, summed by netdev_stats_sync). The driver's own receive counters are
 * these (e1000e: no second count of the same bytes), and where it knows the class at once a
 * frame costs it three additions. */
static inline void netdev_rx_count(struct netdev *dev, size_t len, uint32_t flags, const struct netdev_frag *f)
{
	_Static_assert(offsetof(struct netdev_stats, rx_bytes_device) ==
			       offsetof(struct netdev_stats, rx_bytes_host) + sizeof(uint64_t),
		       "netdev_rx_count counts a fragment's bytes by class as an index");
	dev->stats.rx_bytes_host += len;
	if (f)
		(&dev->stats.rx_bytes_host)[f->addr.cls == MEM_CLASS_DEVICE] += f->len;
	dev->rx_by_flags[flags & 31]++;
}

/* Release everything nb holds (host part, every fragment still attached) and free it. */
void netbuf_free(struct netbuf *nb);

/* Stack: netbuf_free of a received frame whose fragments it took, faster for a driver's
 * RX netbuf (netbuf_rx_owned_get) on no list; any other nb as netbuf_free. */
void netbuf_rx_consumed(struct netbuf *nb);

/* Driver: the device is done with a transmitted nb: run tx_done, then netbuf_free. nb is on
 * no list (node unlinked: the stack hands the driver its netbufs so, and a driver that
 * queued one takes it off first, as e1000e's tx_done_later does): a pool netbuf is not
 * unlinked again here (checked under AddressSanitizer). */
void netbuf_tx_done(struct netbuf *nb);

/* Bytes in the host part. */
static inline size_t netbuf_host_len(const struct netbuf *nb)
{
	return (size_t)(nb->tail - nb->data);
}

/* Bytes in the fragments. Inline, as the helpers below: every frame takes a few of them,
 * and the calls cost as much as the work. */
static inline size_t netbuf_frag_len(const struct netbuf *nb)
{
	size_t n = 0;
	for (unsigned i = 0; i < nb->nfrags; i++)
		n += nb->frags[i].len;
	return n;
}

/* NETBUF_TX_TSO: the bytes of headers every segment repeats (csum_start + the TCP header's
 * data offset, read from the host part), or 0 when nb is not a well-formed TSO frame (no
 * checksum offload, the TCP header not whole in the host part, gso_size 0, nothing beyond
 * the headers). */
unsigned netbuf_tso_hdr_len(const struct netbuf *nb);

/* NETBUF_TX_TSO: the segments nb becomes on the wire (1 when it is not a TSO frame). */
unsigned netbuf_tso_segs(const struct netbuf *nb);

/* Prepend len bytes to the host part (headers); NULL when the headroom is too small. */
static inline void *netbuf_push(struct netbuf *nb, size_t len)
{
	if (len > (size_t)(nb->data - nb->head))
		return NULL;
	nb->data -= len;
	if (nb->flags & NETBUF_TX_CSUM_PARTIAL)
		nb->csum_start = (uint16_t)(nb->csum_start + len);
	return nb->data;
}

/* Append len bytes to the host part; NULL when there is no room (or fragments follow it). */
static inline void *netbuf_put(struct netbuf *nb, size_t len)
{
	uint8_t *p = nb->tail;
	if (nb->nfrags || len > (size_t)(nb->end - nb->tail))
		return NULL;
	nb->tail += len;
	return p;
}

/* Append a fragment (the netbuf takes the reference). -ENOSPC when full. */
static inline int netbuf_add_frag(struct netbuf *nb, const struct netdev_frag *f)
{
	if (nb->nfrags >= NETBUF_MAX_FRAGS)
		return -ENOSPC;
	nb->frags[nb->nfrags++] = *f;
	return 0;
}

/* Detach fragment i from nb (the caller takes the reference); later fragments move down. */
void netbuf_take_frag(struct netbuf *nb, unsigned i, struct netdev_frag *out);

/* netbuf_pull when len runs past the host part: the fragments' share of it. */
int netbuf_pull_frags(struct netbuf *nb, size_t len);

/* Drop len bytes from the front of the whole buffer (host part first, then fragments,
 * releasing fragments that become empty). -EINVAL when shorter. */
static inline int netbuf_pull(struct netbuf *nb, size_t len)
{
	if (len <= netbuf_host_len(nb)) {
		nb->data += len;
		return 0;
	}
	return netbuf_pull_frags(nb, len);
}

/* Cut the whole buffer to len bytes (from its front), releasing what falls off. */
void netbuf_trim(struct netbuf *nb, size_t len);

/* Copy len bytes starting `off` bytes into the buffer (host part, then fragments) to
 * dst; fragment bytes are read through netdev_frag_read (counted). -EINVAL if short. */
int netbuf_copy_out(const struct netbuf *nb, size_t off, void *dst, size_t len);

/* --- fragments --------------------------------------------------------------------- */

/* Give a fragment's buffer back to its owner (no-op without owner): the fragment is left
 * empty and ownerless, then the owner's release is the last call. Inline: every received
 * payload fragment and every acknowledged piece of sent data comes here, and the call
 * into netdev.c cost as much as the work. */
static inline void netdev_frag_release(struct netdev_frag *f)
{
	struct netdev_frag_owner *o = f->owner;

	f->owner = NULL;
	f->len = 0;
	if (o)
		o->release(o, f->token);
}

/* The one way the CPU reads fragment bytes: copies len bytes at off within f to dst and
 * counts them with dma_account_cpu() by the fragment's memory class. The appliance is
 * identity-mapped, so a fragment's bus address is also the CPU's address of its bytes.
 * -EINVAL when off/len run past the fragment. Inline: the target reads every PDU header
 * this way, and the call cost as much as the checks. */
static inline int netdev_frag_read(const struct netdev_frag *f, size_t off, void *dst, size_t len)
{
	if (off > f->len || len > f->len - off)
		return -EINVAL;
	if (len == 0)
		return 0;
	__builtin_memcpy(dst, (const void *)(uintptr_t)(f->addr.bus + off), len);
	dma_account_cpu(f->addr.cls, len);
	return 0;
}

/* Split f at byte `at` (0 < at < f->len): f keeps the first part, *tail gets the rest;
 * both hold a reference on the underlying buffer, which goes back to its owner when
 * both are released. 0, -EINVAL, -ENOMEM (split-reference pool exhausted). */
int netdev_frag_split(struct netdev_frag *f, size_t at, struct netdev_frag *tail);

/* Counters of the netbuf pool for the console: in use, capacity, failures. */
void netbuf_pool_stats(size_t *in_use, size_t *capacity, uint64_t *failures);

#endif
