/*
 * roce_mr.c - memory regions: registration with access rights, lkey/rkey with a key
 * byte per slot, and the key/PD/rights/bounds check of every local and remote access.
 */
#include <errno.h>
#include <stdint.h>
#include "../nic/netdev.h"
#include "roce_internal.h"
#include "roce_rc.h"
#include "roce_odp.h"

#define ROCE_KEY_INDEX(k) ((k) >> 8)

int roce_reg_mr(struct roce_pd *pd, uint64_t iova, uint64_t length, dma_addr_t mem, unsigned access,
		struct roce_mr **out)
{
	struct roce_dev *dev = pd->dev;
	struct roce_mr *mr;
	int slot;

	if (access & ~(unsigned)ROCE_ACCESS_ALL || length == 0 || iova + length - 1 < iova ||
	    mem.bus + length - 1 < mem.bus)
		return -EINVAL;
	/* 11.2.8.1: remote write or atomic access needs local write */
	if ((access & (ROCE_ACCESS_REMOTE_WRITE | ROCE_ACCESS_REMOTE_ATOMIC)) && !(access & ROCE_ACCESS_LOCAL_WRITE))
		return -EINVAL;
	if ((slot = roce_table_slot((void *const *)dev->mrs, ROCE_MAX_MR)) < 0 || !(mr = mm_pool_zalloc(&dev->mr_pool)))
		return -ENOMEM;
	mr->dev = dev;
	mr->pd = pd;
	mr->key = (uint32_t)slot << 8 | dev->mr_keygen[slot];
	dev->mr_keygen[slot]++;
	mr->iova = iova;
	mr->length = length;
	mr->mem = mem;
	mr->access = access;
	dev->mrs[slot] = mr;
	pd->users++;
	*out = mr;
	return 0;
}

int roce_reg_mr_strided(struct roce_pd *pd, uint64_t iova, uint64_t length, dma_addr_t mem, unsigned access,
			uint32_t chunk, uint32_t gap, struct roce_mr **out)
{
	uint64_t chunks, span;
	int rc;

	if (chunk == 0 || (access & ~(unsigned)ROCE_ACCESS_LOCAL_WRITE) || length == 0)
		return -EINVAL;
	chunks = (length - 1) / chunk + 1;
	if (chunks > UINT64_MAX / ((uint64_t)chunk + gap))
		return -EINVAL;
	span = chunks * ((uint64_t)chunk + gap);
	if (mem.bus + span - 1 < mem.bus)
		return -EINVAL;
	if ((rc = roce_reg_mr(pd, iova, length, mem, access, out)))
		return rc;
	(*out)->chunk = chunk;
	(*out)->gap = gap;
	return 0;
}

int roce_mr_map_strided(const struct roce_mr *mr, uint64_t va, uint64_t len, struct roce_tx_seg *seg, unsigned max,
			unsigned *n)
{
	uint64_t off = va - mr->iova, stride = (uint64_t)mr->chunk + mr->gap;

	*n = 0;
	while (len) {
		uint64_t k = off / mr->chunk, in = off % mr->chunk;
		uint64_t take = mr->chunk - in < len ? mr->chunk - in : len;
		if (*n >= max)
			return -E2BIG;
		seg[*n].mem = dma_addr_add(mr->mem, k * stride + in);
		seg[*n].len = (uint32_t)take;
		seg[*n].room = in + take == mr->chunk ? mr->gap : 0;
		seg[*n].txo = mr->txo;
		seg[*n].tx_token = mr->tx_token;
		(*n)++;
		off += take;
		len -= take;
	}
	return 0;
}

int roce_mr_set_sink(struct roce_mr *mr, roce_mr_sink_fn fn, void *ctx)
{
	if (mr->odp || mr->chunk)
		return -EINVAL;
	mr->sink = fn;
	mr->sink_ctx = fn ? ctx : NULL;
	return 0;
}

int roce_mr_set_tx_owner(struct roce_mr *mr, struct roce_mr_tx_owner *o, uint64_t token)
{
	if (mr->odp)
		return -EINVAL;
	mr->txo = o;
	mr->tx_token = o ? token : 0;
	return 0;
}

int roce_dereg_mr(struct roce_mr *mr)
{
	struct roce_dev *dev = mr->dev;
	if (mr->odp)
		roce_odp_region_put(mr->odp);
	dev->mrs[ROCE_KEY_INDEX(mr->key)] = NULL;
	mr->pd->users--;
	mm_pool_free(&dev->mr_pool, mr);
	return 0;
}

uint32_t roce_mr_lkey(const struct roce_mr *mr)
{
	return mr->key;
}

uint32_t roce_mr_rkey(const struct roce_mr *mr)
{
	return mr->key;
}

int roce_mr_find(struct roce_dev *dev, const struct roce_pd *pd, uint32_t key, bool remote, unsigned access,
		 uint64_t va, uint64_t len, struct roce_mr **out)
{
	uint32_t idx = ROCE_KEY_INDEX(key);
	struct roce_mr *mr;

	if (idx >= ROCE_MAX_MR || !(mr = dev->mrs[idx]) || mr->key != key)
		return -ENOENT;
	if (mr->pd != pd || (access & ~mr->access))
		return -EPERM;
	/* local access always includes local read; remote access needs a remote right */
	if (remote && !(access & (ROCE_ACCESS_REMOTE_WRITE | ROCE_ACCESS_REMOTE_READ | ROCE_ACCESS_REMOTE_ATOMIC)))
		return -EPERM;
	if (va < mr->iova || va - mr->iova > mr->length || len > mr->length - (va - mr->iova))
		return -ERANGE;
	*out = mr;
	return 0;
}

int roce_mr_check(struct roce_dev *dev, const struct roce_pd *pd, uint32_t key, bool remote, unsigned access,
		  uint64_t va, uint64_t len, dma_addr_t *mem)
{
	struct roce_mr *mr;
	int rc;

	if ((rc = roce_mr_find(dev, pd, key, remote, access, va, len, &mr)))
		return rc;
	if (mr->odp) {
		/* an ODP MR has no contiguous memory: remote accesses reach it through
		 * roce_mr_map (the check alone passes); local ones that want *mem cannot */
		if (!remote)
			return -EPERM;
		*mem = dma_addr_host(NULL);
		return 0;
	}
	if (mr->chunk) {
		/* contiguous only inside one chunk */
		uint64_t off = va - mr->iova;
		if (len && off / mr->chunk != (off + len - 1) / mr->chunk)
			return -ERANGE;
		*mem = dma_addr_add(mr->mem, off / mr->chunk * ((uint64_t)mr->chunk + mr->gap) + off % mr->chunk);
		return 0;
	}
	*mem = dma_addr_add(mr->mem, va - mr->iova);
	return 0;
}

/* Does a scatter element lie in an MR with a sink (roce_mr_set_sink)? */
static bool roce_sink_wanted(struct roce_dev *dev, const struct roce_pd *pd, const struct roce_sge *sg, unsigned nsge)
{
	for (unsigned i = 0; i < nsge; i++) {
		struct roce_mr *mr;
		if (!roce_mr_find(dev, pd, sg[i].lkey, false, ROCE_ACCESS_LOCAL_WRITE, sg[i].addr, sg[i].length, &mr) &&
		    mr->sink)
			return true;
	}
	return false;
}

/* Take the bytes [src_off, src_off + len) of nb out of it as references to the NIC's receive
 * buffers: at most max pieces into f, each narrowed to its payload bytes and holding its
 * buffer. nb is changed (the fragments leave it) and must not be read again. false, with
 * nothing taken, when a byte lies in nb's host part (a frame the NIC did not split) or in a
 * fragment without an owner, or when more than max pieces would be needed. */
static bool roce_take_frags(struct netbuf *nb, size_t src_off, uint32_t len, struct netdev_frag *f, unsigned max,
			    unsigned *n)
{
	size_t host = netbuf_host_len(nb), base = 0, pos = 0, off, end;
	unsigned first = 0, k = 0;

	*n = 0;
	if (src_off < host || !len)
		return false;
	off = src_off - host;
	end = off + len;
	for (unsigned i = 0; i < nb->nfrags && pos < end; pos += nb->frags[i++].len) {
		if (pos + nb->frags[i].len <= off) {
			first = i + 1;
			base = pos + nb->frags[i].len;
			continue;
		}
		if (!nb->frags[i].owner || k >= max)
			return false;
		k++;
	}
	if (pos < end)
		return false;
	for (unsigned j = 0; j < k; j++) {
		struct netdev_frag *p = &f[j];
		size_t flen, a, b;
		netbuf_take_frag(nb, first, p);
		flen = p->len;
		a = off > base ? off - base : 0;
		b = end - base < flen ? end - base : flen;
		p->addr = dma_addr_add(p->addr, a);
		p->offset += a;
		p->len = (uint32_t)(b - a);
		base += flen;
	}
	*n = k;
	return true;
}

int roce_scatter(struct roce_dev *dev, const struct roce_pd *pd, const struct roce_sge *sg, unsigned nsge, uint32_t off,
		 struct netbuf *nb, size_t src_off, uint32_t len, uint64_t *kept, uint64_t *kept_bytes)
{
	struct netdev_frag f[NETBUF_MAX_FRAGS];
	unsigned nf = 0, fi = 0;
	uint64_t base = 0;
	int rc = -EINVAL;

	if (roce_sink_wanted(dev, pd, sg, nsge) && roce_take_frags(nb, src_off, len, f, NETBUF_MAX_FRAGS, &nf))
		src_off = SIZE_MAX; /* nb is no longer read: the bytes are in f */
	for (unsigned i = 0; i < nsge && len; i++) {
		const struct roce_sge *s = &sg[i];
		uint64_t end = base + s->length;
		if (off < end) {
			uint32_t in = (uint32_t)(off - base);
			uint32_t n = s->length - in < len ? s->length - in : len;
			struct roce_mr *mr;
			dma_addr_t m;
			if (roce_mr_check(dev, pd, s->lkey, false, ROCE_ACCESS_LOCAL_WRITE, s->addr + in, n, &m) ||
			    roce_mr_find(dev, pd, s->lkey, false, ROCE_ACCESS_LOCAL_WRITE, s->addr + in, n, &mr)) {
				rc = -EACCES;
				goto out;
			}
			if (!nf) {
				if (netbuf_copy_out(nb, src_off, (void *)(uintptr_t)m.bus, n))
					goto out;
				dma_account_cpu(m.cls, n);
				src_off += n;
			}
			for (uint32_t done = 0; nf && done < n;) {
				struct netdev_frag *c = &f[fi];
				if (fi >= nf)
					goto out; /* cannot be: the pieces are exactly the payload */
				uint32_t k = c->len < n - done ? c->len : n - done;
				if (!c->len) {
					netdev_frag_release(c); /* an empty buffer: nothing to place */
					fi++;
					continue;
				}
				uint8_t *dst = (uint8_t *)(uintptr_t)m.bus + done;
				if (k == c->len && mr->sink) {
					/* the whole piece lies here: offered to the sink first */
					struct netdev_frag piece = *c;
					c->owner = NULL;
					c->len = 0;
					fi++;
					if (mr->sink(mr->sink_ctx, s->addr + in + done - mr->iova, &piece) == 0) {
						(*kept)++;
						*kept_bytes += k;
					} else {
						int e = netdev_frag_read(&piece, 0, dst, k);
						netdev_frag_release(&piece);
						if (e)
							goto out;
						dma_account_cpu(m.cls, k);
					}
				} else {
					if (netdev_frag_read(c, 0, dst, k))
						goto out;
					dma_account_cpu(m.cls, k);
					if (k == c->len) {
						netdev_frag_release(c);
						fi++;
					} else {
						c->addr = dma_addr_add(c->addr, k);
						c->offset += k;
						c->len -= k;
					}
				}
				done += k;
			}
			off += n;
			len -= n;
		}
		base = end;
	}
	rc = len ? -EMSGSIZE : 0;
out:
	while (fi < nf)
		netdev_frag_release(&f[fi++]);
	return rc;
}
