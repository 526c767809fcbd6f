/*
 * netdev.c - the generic half of the netdev interface (see netdev.h): the device list,
 * receive/transmit accounting, netbufs and fragment references.
 */
#include <errno.h>
#include <string.h>
#include "../../lib/log.h"
#include "../../mm/pool.h"
#include "netdev.h"

LOG_MODULE_DEFINE(netdev);

static struct list_node netdev_list = LIST_HEAD_INIT(netdev_list);
static void (*stack_rx)(struct netdev *dev, struct netbuf *nb);
/* The netbufs (netdev.h: netbuf_alloc_tx takes from it inline). */
struct mm_pool netdev_netbuf_pool;
static struct mm_pool split_pool;
static bool netbuf_pool_ready;

#define NETDEV_SPLIT_REFS 4096

/* A buffer shared by the parts of a split fragment. */
struct frag_split_ref {
	struct netdev_frag_owner *owner;
	uint64_t token;
	unsigned refs;
};

static void split_release(struct netdev_frag_owner *o, uint64_t token)
{
	struct frag_split_ref *r = (struct frag_split_ref *)(uintptr_t)token;
	(void)o;
	if (--r->refs == 0) {
		if (r->owner)
			r->owner->release(r->owner, r->token);
		mm_pool_free(&split_pool, r);
	}
}

static struct netdev_frag_owner split_owner = { "split", split_release };

/* Split a fragment into two references. */
int netdev_frag_split(struct netdev_frag *f, size_t at, struct netdev_frag *tail)
{
	struct frag_split_ref *r;

	if (at == 0 || at >= f->len)
		return -EINVAL;
	if (f->owner == &split_owner) {
		r = (struct frag_split_ref *)(uintptr_t)f->token;
	} else {
		if (!netbuf_pool_ready || !(r = mm_pool_alloc(&split_pool)))
			return -ENOMEM;
		r->owner = f->owner;
		r->token = f->token;
		r->refs = 1;
		f->owner = &split_owner;
		f->token = (uint64_t)(uintptr_t)r;
	}
	r->refs++;
	*tail = *f;
	tail->addr = dma_addr_add(f->addr, at);
	tail->offset = f->offset + at;
	tail->len = f->len - (uint32_t)at;
	f->len = (uint32_t)at;
	return 0;
}

/* Register a device. */
int netdev_register(struct netdev *dev)
{
	struct list_node *it;

	if (!dev->ops || !dev->ops->xmit || dev->mtu < NETDEV_MTU_MIN || dev->mtu > NETDEV_MTU_MAX)
		return -EINVAL;
	list_for_each(&netdev_list, it)
		if (it == &dev->node)
			return -EEXIST;
	dev->rx_handler = stack_rx;
	list_add_tail(&netdev_list, &dev->node);
	log_info("%s: registered, mtu %u, features 0x%x, link %s", dev->name, dev->mtu, dev->features,
		 dev->link_up ? "up" : "down");
	return 0;
}

/* Unlist a device. */
void netdev_unregister(struct netdev *dev)
{
	list_del(&dev->node);
	dev->rx_handler = NULL;
}

/* First device. */
struct netdev *netdev_first(void)
{
	if (list_empty(&netdev_list))
		return NULL;
	return container_of(netdev_list.next, struct netdev, node);
}

/* Visit devices. */
void netdev_foreach(void (*fn)(struct netdev *dev, void *ctx), void *ctx)
{
	struct list_node *it, *tmp;
	list_for_each_safe(&netdev_list, it, tmp)
		fn(container_of(it, struct netdev, node), ctx);
}

/* Attach the stack. */
void netdev_set_stack_rx(void (*rx)(struct netdev *dev, struct netbuf *nb))
{
	struct list_node *it;
	stack_rx = rx;
	list_for_each(&netdev_list, it)
		container_of(it, struct netdev, node)->rx_handler = rx;
}

/* Count a frame's bytes by where they live. */
static void count_bytes(const struct netbuf *nb, uint64_t *host, uint64_t *device)
{
	*host += netbuf_host_len(nb);
	for (unsigned i = 0; i < nb->nfrags; i++) {
		if (nb->frags[i].addr.cls == MEM_CLASS_DEVICE)
			*device += nb->frags[i].len;
		else
			*host += nb->frags[i].len;
	}
}

/* Sum the frames counted by flags into the counters. */
void netdev_stats_sync(struct netdev *dev)
{
	for (unsigned i = 0; i < 32; i++) {
		uint64_t n = dev->rx_by_flags[i];
		if (!n)
			continue;
		dev->rx_by_flags[i] = 0;
		dev->stats.rx_frames += n;
		if (i & NETBUF_RX_SPLIT)
			dev->stats.rx_split += n;
		if (i & NETBUF_RX_L4_CSUM_OK)
			dev->stats.rx_csum_ok += n;
		if (i & (NETBUF_RX_L4_CSUM_BAD | NETBUF_RX_L3_CSUM_BAD))
			dev->stats.rx_csum_bad += n;
	}
}

/* netdev_rx's and netdev_rx_owned's count of a frame: a fragment's bytes to its memory
 * class's counter by index (rx_bytes_device follows rx_bytes_host), the frame by its flags
 * (rx_by_flags: netdev_stats_sync sums them). */
static inline __attribute__((always_inline)) void rx_count_frag(struct netdev *dev, const struct netdev_frag *f)
{
	_Static_assert(offsetof(struct netdev_stats, rx_bytes_device) ==
			       offsetof(struct netdev_stats, rx_bytes_host) + sizeof(uint64_t),
		       "netdev_rx counts a fragment's bytes by class as an index");
	(&dev->stats.rx_bytes_host)[f->addr.cls == MEM_CLASS_DEVICE] += f->len;
}

/* The hand-over's end: nb to the stack's receive function (a tail call), or dropped
 * while none is installed. */
static inline __attribute__((always_inline)) void rx_hand_over(struct netdev *dev, struct netbuf *nb)
{
	if (__builtin_expect(!dev->rx_handler, 0)) {
		dev->stats.rx_dropped++;
		netbuf_free(nb);
		return;
	}
	dev->rx_handler(dev, nb);
}

/* A frame from the driver, counted as plain additions (rx_count_frag, rx_by_flags). */
void netdev_rx(struct netdev *dev, struct netbuf *nb)
{
	uint32_t flags = nb->flags;
	unsigned nfrags = nb->nfrags;

	_Static_assert((NETBUF_RX_SPLIT | NETBUF_RX_L3_CSUM_OK | NETBUF_RX_L4_CSUM_OK | NETBUF_RX_L4_CSUM_BAD |
			NETBUF_RX_L3_CSUM_BAD) == 31,
		       "netdev_rx counts frames by their flags' five low bits");
	nb->dev = dev;
	dev->stats.rx_bytes_host += netbuf_host_len(nb);
	if (nfrags) {
		rx_count_frag(dev, &nb->frags[0]);
		for (unsigned i = 1; i < nfrags; i++)
			rx_count_frag(dev, &nb->frags[i]);
	}
	dev->rx_by_flags[flags & 31]++;
	rx_hand_over(dev, nb);
}

/* netdev_rx_owned's refusal (nb still lent, or len beyond its buffer): counted as
 * netbuf_rx_owned_get counts it and as a dropped frame, the driver's netdev_rx_count taken
 * back (a frame not handed over is not received), then the fragment and the header buffer
 * go back to their owners, which the driver marked lent, as a frame's free would. */
static __attribute__((noinline, cold)) void rx_owned_refused(struct netdev *dev, struct netbuf *nb, size_t len,
							     uint32_t flags, const struct netdev_frag *f)
{
	(void)netbuf_rx_owned_get(nb, len);
	dev->stats.rx_dropped++;
	dev->stats.rx_bytes_host -= len;
	if (f)
		(&dev->stats.rx_bytes_host)[f->addr.cls == MEM_CLASS_DEVICE] -= f->len;
	dev->rx_by_flags[flags & 31]--;
	if (f && f->owner)
		f->owner->release(f->owner, f->token);
	if (nb->hdr_owner)
		nb->hdr_owner->release(nb->hdr_owner, nb->hdr_token);
}

/* netdev_rx_owned's and netdev_rx_owned_slot's lending of nb for a frame: false (nothing
 * written) when nb is still lent or len beyond its buffer, else nb lent with the frame's
 * fields but its fragment, each written once. */
static inline __attribute__((always_inline)) bool rx_owned_lend(struct netdev *dev, struct netbuf *nb, size_t len,
								uint32_t flags, uint16_t hdr_len)
{
	if (nb->origin != NETBUF_ORIGIN_OWNED_IDLE || len > (size_t)(nb->end - nb->head))
		return false;
	nb->origin = NETBUF_ORIGIN_OWNED_LENT;
	nb->dev = dev;
	nb->flags = flags;
	nb->hdr_len = hdr_len;
	nb->data = nb->head;
	nb->tail = nb->head + len;
	return true;
}

/* netbuf_rx_owned_get, the fragment's netbuf_add_frag and netdev_rx in one crossing: an
 * idle netbuf has no fragment (netbuf_rx_owned_get's rule), so frags[0] is written
 * straight; each field is written once; the frame counted by the driver (netdev_rx_count),
 * which counted its bytes anyway; the stack's receive function a tail call. */
void netdev_rx_owned(struct netdev *dev, struct netbuf *nb, size_t len, uint32_t flags, uint16_t hdr_len,
		     const struct netdev_frag *f)
{
	if (__builtin_expect(!rx_owned_lend(dev, nb, len, flags, hdr_len), 0))
		return rx_owned_refused(dev, nb, len, flags, f);
	if (f) {
		nb->frags[0] = *f;
		nb->nfrags = 1;
	}
	rx_hand_over(dev, nb);
}

/* netdev_rx_owned_slot's refusal: a frame longer than nb's buffer with its fragment in the
 * slot (nb idle: netbuf_rx_owned_slot), refused as netdev_rx_owned refuses it, the slot's
 * fragment given back. nb lent (a driver that wrote into the stack's slot, against
 * netbuf_rx_owned_slot's answer): refused and counted the same, but the slot's fragment is
 * left to the stack, which holds nb. */
static __attribute__((noinline, cold)) void rx_owned_slot_refused(struct netdev *dev, struct netbuf *nb, size_t len,
								  uint32_t flags)
{
	struct netdev_frag f = nb->frags[0];

	if (nb->origin != NETBUF_ORIGIN_OWNED_IDLE)
		f.owner = NULL; /* counted back below, not released */
	rx_owned_refused(dev, nb, len, flags, &f);
}

/* netdev_rx_owned with the fragment already in nb's slot: the same stores but the copy. */
void netdev_rx_owned_slot(struct netdev *dev, struct netbuf *nb, size_t len, uint32_t flags, uint16_t hdr_len)
{
	if (__builtin_expect(!rx_owned_lend(dev, nb, len, flags, hdr_len), 0))
		return rx_owned_slot_refused(dev, nb, len, flags);
	nb->nfrags = 1;
	rx_hand_over(dev, nb);
}

void (*netdev_stack_rx_end)(struct netdev *dev);

void netdev_set_stack_rx_end(void (*rx_end)(struct netdev *dev))
{
	netdev_stack_rx_end = rx_end;
}

/* The driver refused nb (the caller keeps it): netdev_tx's counters taken back. The
 * offload counter stays, as before (it counted frames handed to the driver). */
void netdev_tx_uncount(struct netdev *dev, const struct netbuf *nb)
{
	uint64_t host = 0, device = 0;
	count_bytes(nb, &host, &device);
	if (nb->flags & NETBUF_TX_TSO) {
		dev->stats.tx_tso--;
		dev->stats.tx_tso_segs -= netbuf_tso_segs(nb);
	}
	dev->stats.tx_frames--;
	dev->stats.tx_bytes_host -= host;
	dev->stats.tx_bytes_device -= device;
	dev->stats.tx_errors++;
}

/* netdev_tx for what its common case leaves: the link down, a TSO frame, more than two
 * fragments. */
int netdev_tx_slow(struct netdev *dev, struct netbuf *nb)
{
	uint64_t host, device = 0;
	unsigned segs = 0;
	int rc;

	if (!dev->link_up) {
		dev->stats.tx_errors++;
		return -ENETDOWN;
	}
	nb->dev = dev;
	host = netbuf_host_len(nb);
	for (unsigned i = 0, n = nb->nfrags; i < n; i++) {
		if (nb->frags[i].addr.cls == MEM_CLASS_DEVICE)
			device += nb->frags[i].len;
		else
			host += nb->frags[i].len;
	}
	if (nb->flags & NETBUF_TX_TSO) {
		if (!(dev->features & NETDEV_F_TSO) || !netbuf_tso_hdr_len(nb) ||
		    host + device - netbuf_tso_hdr_len(nb) > dev->tso_max) {
			dev->stats.tx_errors++;
			return -EINVAL;
		}
		segs = netbuf_tso_segs(nb);
		dev->stats.tx_tso++;
		dev->stats.tx_tso_segs += segs;
	}
	if (nb->flags & NETBUF_TX_CSUM_PARTIAL)
		dev->stats.tx_csum_offload++;
	dev->stats.tx_frames++;
	dev->stats.tx_bytes_host += host;
	dev->stats.tx_bytes_device += device;
	rc = dev->ops->xmit(dev, nb);
	if (__builtin_expect(rc != 0, 0))
		netdev_tx_uncount(dev, nb);
	return rc;
}

/* The transmit ring is full: senders wait for netdev_tx_wake. */
void netdev_tx_stop(struct netdev *dev)
{
	if (!dev->tx_stopped) {
		dev->tx_stopped = true;
		dev->stats.tx_stops++;
	}
}

/* Room again after a stop. */
void netdev_tx_wake(struct netdev *dev)
{
	if (dev->tx_stopped) {
		dev->tx_stopped = false;
		dev->stats.tx_wakes++;
	}
}

/* Headers a TSO frame repeats in each segment. */
unsigned netbuf_tso_hdr_len(const struct netbuf *nb)
{
	size_t host = netbuf_host_len(nb);
	unsigned hl;

	if (!(nb->flags & NETBUF_TX_TSO) || !(nb->flags & NETBUF_TX_CSUM_PARTIAL) || nb->gso_size == 0 ||
	    nb->csum_offset != 16 || (size_t)nb->csum_start + 20 > host)
		return 0;
	hl = nb->csum_start + (unsigned)(nb->data[nb->csum_start + 12] >> 4) * 4u;
	if (hl < (unsigned)nb->csum_start + 20 || hl > host || hl >= host + netbuf_frag_len(nb))
		return 0;
	return hl;
}

/* Segments on the wire. */
unsigned netbuf_tso_segs(const struct netbuf *nb)
{
	unsigned hl = netbuf_tso_hdr_len(nb);
	size_t pay;

	if (!hl)
		return 1;
	pay = netbuf_host_len(nb) + netbuf_frag_len(nb) - hl;
	return (unsigned)((pay + nb->gso_size - 1) / nb->gso_size);
}

/* Link change. */
void netdev_set_link(struct netdev *dev, bool up)
{
	if (dev->link_up != up)
		log_info("%s: link %s", dev->name, up ? "up" : "down");
	dev->link_up = up;
}

/* MTU change. */
int netdev_set_mtu(struct netdev *dev, unsigned mtu)
{
	int rc;

	if (mtu < NETDEV_MTU_MIN || mtu > NETDEV_MTU_MAX)
		return -EINVAL;
	if (mtu == dev->mtu)
		return 0;
	if (!dev->ops->set_mtu)
		return -EOPNOTSUPP;
	if ((rc = dev->ops->set_mtu(dev, mtu)))
		return rc;
	dev->mtu = mtu;
	return 0;
}

/* --- netbufs ----------------------------------------------------------------------- */

/* Create the pool. */
int netbuf_pool_init(size_t capacity)
{
	int rc = mm_pool_init(&netdev_netbuf_pool, "netbuf", sizeof(struct netbuf) + NETBUF_HOST_SIZE, capacity);
	if (rc)
		return rc;
	if ((rc = mm_pool_init(&split_pool, "frag_split", sizeof(struct frag_split_ref), NETDEV_SPLIT_REFS))) {
		mm_pool_destroy(&netdev_netbuf_pool);
		return rc;
	}
	netbuf_pool_ready = true;
	return 0;
}

/* Destroy the pool. */
int netbuf_pool_destroy(void)
{
	int rc;
	if (!netbuf_pool_ready)
		return 0;
	if (netdev_netbuf_pool.in_use || split_pool.in_use)
		return -EBUSY;
	if ((rc = mm_pool_destroy(&netdev_netbuf_pool)) || (rc = mm_pool_destroy(&split_pool)))
		return rc;
	netbuf_pool_ready = false;
	return 0;
}

/* The fields a netbuf handed out starts with, whatever its origin: off every list, no
 * device, flags, offload fields or fragments, no completion; origin as given. The fields
 * are stored one by one: a memset (rep stos) cost ~20 instructions a netbuf. */
static inline __attribute__((always_inline)) void netbuf_reset(struct netbuf *nb, uint8_t origin)
{
	list_init(&nb->node);
	nb->dev = NULL;
	nb->flags = 0;
	nb->hdr_len = 0;
	nb->csum_start = 0;
	nb->csum_offset = 0;
	nb->gso_size = 0;
	nb->nfrags = 0;
	nb->origin = origin;
	nb->tx_done = NULL;
	nb->tx_ctx = NULL;
}

/* Every field of a netbuf from the pool before frags[] zero (slots past nfrags are never
 * read), its node unlinked, the host part unset: netbuf_reset's and the header buffer's. */
static inline __attribute__((always_inline)) void netbuf_init(struct netbuf *nb)
{
	_Static_assert(offsetof(struct netbuf, frags) == offsetof(struct netbuf, tx_ctx) + sizeof(void *),
		       "netbuf_init zeroes every field before frags[]: list them all");
	netbuf_reset(nb, NETBUF_ORIGIN_POOL);
	nb->hdr_owner = NULL;
	nb->hdr_token = 0;
}

/* The allocators' exhausted pool: counted by the pool (when there is one), NULL. Out of line
 * and called last, so that the allocators save no registers for it. */
struct netbuf *netbuf_alloc_none(void)
{
	if (netbuf_pool_ready)
		mm_pool_alloc_empty(&netdev_netbuf_pool);
	return NULL;
}

/* A stack netbuf with storage. (A pool not initialised or destroyed has no free object:
 * mm_pool_has_free answers for netbuf_pool_ready.) */
struct netbuf *netbuf_alloc(size_t headroom)
{
	struct netbuf *nb;
	if (headroom > NETBUF_HOST_SIZE)
		return NULL;
	if (__builtin_expect(!mm_pool_has_free(&netdev_netbuf_pool), 0))
		return netbuf_alloc_none();
	nb = mm_pool_take(&netdev_netbuf_pool);
	netbuf_init(nb);
	nb->head = nb->storage;
	nb->end = nb->storage + NETBUF_HOST_SIZE;
	nb->data = nb->tail = nb->head + headroom;
	return nb;
}

/* A driver's RX netbuf over its own header buffer. */
struct netbuf *netbuf_alloc_rx(void *buf, size_t size, size_t len, struct netdev_frag_owner *owner,
			       uint64_t token)
{
	struct netbuf *nb;
	if (len > size)
		return NULL;
	if (__builtin_expect(!mm_pool_has_free(&netdev_netbuf_pool), 0))
		return netbuf_alloc_none();
	nb = mm_pool_take(&netdev_netbuf_pool);
	netbuf_init(nb);
	nb->head = nb->data = buf;
	nb->tail = nb->head + len;
	nb->end = nb->head + size;
	nb->hdr_owner = owner;
	nb->hdr_token = token;
	return nb;
}

/* A driver's RX netbuf: set up once. */
void netbuf_rx_owned_init(struct netbuf *nb, void *buf, size_t size, struct netdev_frag_owner *owner,
			  uint64_t token)
{
	netbuf_init(nb);
	nb->origin = NETBUF_ORIGIN_OWNED_IDLE;
	nb->head = nb->data = nb->tail = buf;
	nb->end = (uint8_t *)buf + size;
	nb->hdr_owner = owner;
	nb->hdr_token = token;
}

/* A driver's RX netbuf lent for a frame: netbuf_alloc_rx's fields, but head, end and the
 * buffer's owner, which stay from netbuf_rx_owned_init. An idle one is kept as
 * netbuf_reset leaves it in what a frame's receive never writes (its node on no list,
 * no fragment, csum_start, csum_offset, gso_size, tx_done and tx_ctx zero): every way
 * back to idle keeps that (netbuf_rx_owned_init; netbuf_free_owned resets them, for a
 * netbuf the stack used otherwise, sent or listed; netbuf_rx_consumed takes only one on
 * no list with no fragment, whose receive wrote none of the others). So only what each
 * frame sets is set here: the device, flags and split point cleared, the host part. */
struct netbuf *netbuf_rx_owned_get(struct netbuf *nb, size_t len)
{
	if (__builtin_expect(nb->origin != NETBUF_ORIGIN_OWNED_IDLE || len > (size_t)(nb->end - nb->head), 0)) {
		if (nb->origin == NETBUF_ORIGIN_OWNED_LENT && netbuf_pool_ready)
			mm_pool_free_bad(&netdev_netbuf_pool);
		return NULL;
	}
	nb->dev = NULL;
	nb->flags = 0;
	nb->hdr_len = 0;
	nb->origin = NETBUF_ORIGIN_OWNED_LENT;
	nb->data = nb->head;
	nb->tail = nb->head + len;
	return nb;
}

/* netbuf_free_owned with fragments still attached (the padding of a short frame the stack
 * did not cut, a frame it refused): each goes back to its owner first. */
static __attribute__((noinline)) void netbuf_free_owned_frags(struct netbuf *nb)
{
	unsigned n = nb->nfrags;

	nb->nfrags = 0;
	for (unsigned i = 0; i < n; i++) {
		struct netdev_frag_owner *o = nb->frags[i].owner;
		if (o)
			o->release(o, nb->frags[i].token);
	}
	nb->origin = NETBUF_ORIGIN_OWNED_IDLE;
	if (nb->hdr_owner)
		nb->hdr_owner->release(nb->hdr_owner, nb->hdr_token);
}

/* netbuf_free of a driver's RX netbuf (netbuf_rx_owned_get): unlinked, its fragments back
 * to their owners, it is the driver's again, then its header buffer goes back to the
 * driver, last (a tail call: nothing saved around it). Inline in netbuf_free. Freed twice (not lent): counted as
 * the pool counts a refused free, nothing released. */
static inline __attribute__((always_inline)) void netbuf_free_owned(struct netbuf *nb)
{
	struct netdev_frag_owner *o = nb->hdr_owner;

	if (__builtin_expect(nb->origin != NETBUF_ORIGIN_OWNED_LENT, 0)) {
		if (netbuf_pool_ready)
			mm_pool_free_bad(&netdev_netbuf_pool);
		return;
	}
	nb->node.prev->next = nb->node.next;
	nb->node.next->prev = nb->node.prev;
	/* idle as netbuf_rx_owned_get wants it (nfrags: 0 below either way) */
	list_init(&nb->node);
	nb->csum_start = 0;
	nb->csum_offset = 0;
	nb->gso_size = 0;
	nb->tx_done = NULL;
	nb->tx_ctx = NULL;
	if (nb->nfrags)
		return netbuf_free_owned_frags(nb);
	nb->origin = NETBUF_ORIGIN_OWNED_IDLE;
	if (o)
		o->release(o, nb->hdr_token);
}

/* netbuf_put_release for a netbuf the pool refuses (double free, foreign pointer): counted by
 * the pool; the header buffer goes back all the same, as it always did. */
static __attribute__((noinline, cold)) void netbuf_free_bad(struct netdev_frag_owner *o, uint64_t token)
{
	mm_pool_free_bad(&netdev_netbuf_pool);
	if (o)
		o->release(o, token);
}

/* nb unlinked (not pointed at itself: netbuf_init does that; unlink false: netbuf_tx_done's,
 * on no list) and back to the pool, then the last buffer it held (o, token: its header
 * buffer or its one fragment) to its owner, last, so that the call is a tail call and
 * nothing is saved around it. */
static inline __attribute__((always_inline)) void netbuf_put_release(struct netbuf *nb, struct netdev_frag_owner *o,
								   uint64_t token, bool unlink)
{
	size_t idx;

	if (unlink) {
		nb->node.prev->next = nb->node.next;
		nb->node.next->prev = nb->node.prev;
	}
	if (__builtin_expect(!mm_pool_live(&netdev_netbuf_pool, nb, &idx), 0))
		return netbuf_free_bad(o, token);
	mm_pool_put(&netdev_netbuf_pool, nb, idx);
	if (o)
		o->release(o, token);
}

/* Is any of nb's fragments past the first (of n, 1 .. NETBUF_MAX_FRAGS) owned? Their owner
 * pointers or-ed together, unrolled: one instruction a slot where a test and a branch in a
 * loop took six. */
static inline __attribute__((always_inline)) bool netbuf_owned_past_first(const struct netbuf *nb, unsigned n)
{
	const struct netdev_frag *f = nb->frags;
	uintptr_t any = 0;

	_Static_assert(NETBUF_MAX_FRAGS == 8, "netbuf_owned_past_first unrolls 8 slots");
	switch (n) {
	case 8: any |= (uintptr_t)f[7].owner; /* fall through */
	case 7: any |= (uintptr_t)f[6].owner; /* fall through */
	case 6: any |= (uintptr_t)f[5].owner; /* fall through */
	case 5: any |= (uintptr_t)f[4].owner; /* fall through */
	case 4: any |= (uintptr_t)f[3].owner; /* fall through */
	case 3: any |= (uintptr_t)f[2].owner; /* fall through */
	case 2: any |= (uintptr_t)f[1].owner; /* fall through */
	default: break;
	}
	return any != 0;
}

/* netbuf_free with fragments attached (unlink: netbuf_free's, not netbuf_tx_done's). A frame train whose
 * fragments past the first have no owner (tcp_out.c: a train's pieces of one entry hold one
 * reference, the first's; most trains of a long read are one entry's) and no header
 * buffer to give back (headers in the pool's storage) goes as a one-fragment frame does:
 * the netbuf back to the pool, then the first fragment's release, a tail call, with no walk
 * of the slots. Anything else: each fragment back to its owner in order (the slots are not
 * cleared: past nfrags, 0 now, nothing is read), then the netbuf, its header buffer last. */
static inline __attribute__((always_inline)) void netbuf_free_frags_walk(struct netbuf *nb, bool unlink)
{
	unsigned n = nb->nfrags;

	nb->nfrags = 0;
	if (!nb->hdr_owner && !netbuf_owned_past_first(nb, n))
		return netbuf_put_release(nb, nb->frags[0].owner, nb->frags[0].token, unlink);
	for (unsigned i = 0; i < n; i++) {
		struct netdev_frag_owner *o = nb->frags[i].owner;
		if (o)
			o->release(o, nb->frags[i].token);
	}
	netbuf_put_release(nb, nb->hdr_owner, nb->hdr_token, unlink);
}

/* netbuf_free with three fragments or more, or a header buffer and fragments. */
static __attribute__((noinline)) void netbuf_free_frags(struct netbuf *nb)
{
	netbuf_free_frags_walk(nb, true);
}

/* netbuf_free_frags for netbuf_tx_done (nb on no list: no unlink): every frame train's
 * completion. */
static __attribute__((noinline)) void netbuf_tx_free_frags(struct netbuf *nb)
{
	netbuf_free_frags_walk(nb, false);
}

/* netbuf_free of a pool netbuf, in one walk: without fragments (most received frames:
 * TCP took the payload's), no call but the driver's release of the header buffer, last;
 * with one fragment and no header buffer to give back (a transmitted frame: a header from
 * the pool's storage and a piece of payload), the netbuf goes back to the pool first and
 * the fragment's release is the last call, a tail call; anything else takes
 * netbuf_free_frags. Inline in netbuf_free and netbuf_tx_done, so that a frame's free is
 * one function. */
static inline __attribute__((always_inline)) void netbuf_free_pool(struct netbuf *nb, bool unlink)
{
	unsigned n = nb->nfrags;

	if (n == 1 && !nb->hdr_owner) {
		nb->nfrags = 0;
		return netbuf_put_release(nb, nb->frags[0].owner, nb->frags[0].token, unlink);
	}
	if (n == 2 && !nb->hdr_owner) {
		/* (a PDU header and a piece of payload) the first fragment's owner first, the
		 * netbuf and the second's as n == 1 (its release last, a tail call); the slots
		 * are read before anything is released */
		struct netdev_frag_owner *o0 = nb->frags[0].owner;
		uint64_t t0 = nb->frags[0].token;
		struct netdev_frag_owner *o1 = nb->frags[1].owner;
		uint64_t t1 = nb->frags[1].token;

		nb->nfrags = 0;
		if (o0)
			o0->release(o0, t0);
		return netbuf_put_release(nb, o1, t1, unlink);
	}
	if (n) {
		/* a frame train's completion (netbuf_tx_done): netbuf_free_frags_walk's train case
		 * here, where no register is saved, instead of in a call that saves them for its
		 * walk */
		if (!unlink && !nb->hdr_owner && !netbuf_owned_past_first(nb, n)) {
			nb->nfrags = 0;
			return netbuf_put_release(nb, nb->frags[0].owner, nb->frags[0].token, false);
		}
		return unlink ? netbuf_free_frags(nb) : netbuf_tx_free_frags(nb);
	}
	/* no fragment: the netbuf back, its header buffer last (netbuf_tx_done's nb, on no list,
	 * not unlinked) */
	netbuf_put_release(nb, nb->hdr_owner, nb->hdr_token, unlink);
}

/* Release everything: a driver's RX netbuf back with its header buffer, a pool netbuf
 * (netbuf_free_pool). */
void netbuf_free(struct netbuf *nb)
{
	if (!nb)
		return;
	if (nb->origin != NETBUF_ORIGIN_POOL)
		return netbuf_free_owned(nb);
	netbuf_free_pool(nb, true);
}

/* netbuf_free for a received frame whose fragments the stack took (TCP's receive path
 * moved its payload to a socket's queue), its common case alone: a driver's RX netbuf,
 * lent, no fragment left and on no list (its node as netbuf_rx_owned_get left it, pointing
 * at itself) is the driver's again and its header buffer goes back, a tail call, without
 * netbuf_free's dispatch and unlink. Anything else (a pool netbuf, fragments still on it,
 * on a list, not lent) goes to netbuf_free, which handles and counts every case. */
void netbuf_rx_consumed(struct netbuf *nb)
{
	struct netdev_frag_owner *o = nb->hdr_owner;

	if (__builtin_expect(nb->origin != NETBUF_ORIGIN_OWNED_LENT || nb->nfrags || nb->node.next != &nb->node, 0))
		return netbuf_free(nb);
	nb->origin = NETBUF_ORIGIN_OWNED_IDLE;
	if (o)
		o->release(o, nb->hdr_token);
}

/* netbuf_tx_done with a completion callback (called first), or of a driver's RX netbuf
 * the stack sent: netbuf_free's. */
static __attribute__((noinline)) void netbuf_tx_done_cb(struct netbuf *nb)
{
	if (nb->tx_done)
		nb->tx_done(nb, nb->tx_ctx);
	netbuf_free(nb);
}

/* TX completion: a pool netbuf freed without the unlink (netdev.h: nb is on no list). */
void netbuf_tx_done(struct netbuf *nb)
{
#if defined(__SANITIZE_ADDRESS__)
	if (nb->node.next != &nb->node || nb->node.prev != &nb->node)
		__builtin_trap(); /* a driver completed a netbuf still on one of its lists */
#endif
	if (__builtin_expect(nb->tx_done != NULL || nb->origin != NETBUF_ORIGIN_POOL, 0))
		return netbuf_tx_done_cb(nb);
	netbuf_free_pool(nb, false);
}

/* Detach a fragment. */
void netbuf_take_frag(struct netbuf *nb, unsigned i, struct netdev_frag *out)
{
	if (i >= nb->nfrags)
		return;
	*out = nb->frags[i];
	memmove(&nb->frags[i], &nb->frags[i + 1], (nb->nfrags - i - 1) * sizeof(nb->frags[0]));
	nb->nfrags--;
}

/* Drop bytes from the front, past the host part (netbuf_pull has the host-only case). */
int netbuf_pull_frags(struct netbuf *nb, size_t len)
{
	size_t host = netbuf_host_len(nb);

	if (len > host + netbuf_frag_len(nb))
		return -EINVAL;
	if (len <= host) {
		nb->data += len;
		return 0;
	}
	nb->data = nb->tail;
	len -= host;
	while (len && nb->nfrags) {
		struct netdev_frag *f = &nb->frags[0];
		if (len < f->len) {
			f->addr = dma_addr_add(f->addr, len);
			f->offset += len;
			f->len -= (uint32_t)len;
			return 0;
		}
		len -= f->len;
		struct netdev_frag gone;
		netbuf_take_frag(nb, 0, &gone);
		netdev_frag_release(&gone);
	}
	return 0;
}

/* Cut to len bytes. */
void netbuf_trim(struct netbuf *nb, size_t len)
{
	size_t host = netbuf_host_len(nb);
	unsigned i;

	if (len <= host) {
		nb->tail = nb->data + len;
		len = 0;
	} else {
		len -= host;
	}
	for (i = 0; i < nb->nfrags && len; i++) {
		if (nb->frags[i].len >= len) {
			nb->frags[i].len = (uint32_t)len;
			len = 0;
			i++;
			break;
		}
		len -= nb->frags[i].len;
	}
	while (nb->nfrags > i) {
		struct netdev_frag gone = { 0 };
		netbuf_take_frag(nb, nb->nfrags - 1, &gone);
		netdev_frag_release(&gone);
	}
}

/* Gather bytes to host memory. */
int netbuf_copy_out(const struct netbuf *nb, size_t off, void *dst, size_t len)
{
	size_t host = netbuf_host_len(nb);
	uint8_t *out = dst;
	int rc;

	if (len > host + netbuf_frag_len(nb) || off > host + netbuf_frag_len(nb) - len)
		return -EINVAL;
	if (off < host) {
		size_t n = host - off < len ? host - off : len;
		memcpy(out, nb->data + off, n);
		out += n;
		len -= n;
		off = 0;
	} else {
		off -= host;
	}
	for (unsigned i = 0; i < nb->nfrags && len; i++) {
		const struct netdev_frag *f = &nb->frags[i];
		if (off >= f->len) {
			off -= f->len;
			continue;
		}
		size_t n = f->len - off < len ? f->len - off : len;
		if ((rc = netdev_frag_read(f, off, out, n)))
			return rc;
		out += n;
		len -= n;
		off = 0;
	}
	return 0;
}

/* Pool counters. */
void netbuf_pool_stats(size_t *in_use, size_t *capacity, uint64_t *failures)
{
	*in_use = netbuf_pool_ready ? netdev_netbuf_pool.in_use : 0;
	*capacity = netbuf_pool_ready ? netdev_netbuf_pool.capacity : 0;
	*failures = netbuf_pool_ready ? netdev_netbuf_pool.failures : 0;
}
