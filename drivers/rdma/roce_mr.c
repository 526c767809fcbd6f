/*
 * roce_mr.c - memory regions: registration with access rights, lkey/rkey with a key
 * byte per slot, and the key/PD/rights/bounds check of every local and remote access.
 */
#include <errno.h>
#include <stdint.h>
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
