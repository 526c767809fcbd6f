/*
 * roce_odp_mr.c - ODP memory regions on the verbs side: registration over a paged region
 * and the page-aware view of registered memory that the responder and requester use.
 */
#include <errno.h>
#include "../../lib/clock.h"
#include "roce_internal.h"
#include "roce_odp_mr.h"

int roce_reg_mr_odp(struct roce_pd *pd, uint64_t iova, struct roce_odp_region *r, unsigned access,
		    struct roce_mr **out)
{
	struct roce_mr *mr;
	int rc;

	if (!r)
		return -EINVAL;
	/* the memory address is never used for an ODP MR: its bytes are found page by page */
	if ((rc = roce_reg_mr(pd, iova, roce_odp_region_length(r), dma_addr_host(NULL), access, &mr)))
		return rc;
	mr->odp = r;
	roce_odp_region_get(r);
	*out = mr;
	return 0;
}

struct roce_odp_region *roce_mr_odp(const struct roce_mr *mr)
{
	return mr->odp;
}

int roce_mr_map(struct roce_dev *dev, const struct roce_pd *pd, uint32_t key, bool remote, unsigned access,
		uint64_t va, uint64_t len, struct roce_tx_seg *seg, unsigned max, unsigned *n)
{
	dma_addr_t mem[ROCE_MAX_SGE];
	uint32_t plen[ROCE_MAX_SGE];
	struct roce_mr *mr;
	int rc;

	if ((rc = roce_mr_find(dev, pd, key, remote, access, va, len, &mr)))
		return rc;
	*n = 0;
	if (!len)
		return 0;
	if (!max)
		return -E2BIG;
	if (!mr->odp && mr->chunk)
		return roce_mr_map_strided(mr, va, len, seg, max, n);
	if (!mr->odp) {
		seg[0].mem = dma_addr_add(mr->mem, va - mr->iova);
		seg[0].len = (uint32_t)len;
		seg[0].room = 0;
		seg[0].txo = mr->txo;
		seg[0].tx_token = mr->tx_token;
		*n = 1;
		return 0;
	}
	if (max > ROCE_MAX_SGE)
		max = ROCE_MAX_SGE;
	bool write = (access & (ROCE_ACCESS_LOCAL_WRITE | ROCE_ACCESS_REMOTE_WRITE | ROCE_ACCESS_REMOTE_ATOMIC)) != 0;
	if ((rc = roce_odp_access(mr->odp, va - mr->iova, len, write, clock_now_ns(), mem, plen, max, n)))
		return rc;
	for (unsigned i = 0; i < *n; i++) {
		seg[i].mem = mem[i];
		seg[i].len = plen[i];
		seg[i].room = 0;
		seg[i].txo = NULL;
		seg[i].tx_token = 0;
	}
	return 0;
}

/* The live ODP MR of key, or NULL. */
static struct roce_mr *roce_mr_odp_of(struct roce_dev *dev, uint32_t key)
{
	uint32_t idx = key >> 8;
	struct roce_mr *mr;
	if (idx >= ROCE_MAX_MR || !(mr = dev->mrs[idx]) || mr->key != key || !mr->odp)
		return NULL;
	return mr;
}

int roce_mr_fault_window(struct roce_dev *dev, uint32_t key, uint64_t va, uint64_t len)
{
	struct roce_mr *mr = roce_mr_odp_of(dev, key);
	if (!mr || va < mr->iova)
		return 0;
	return roce_odp_fault_window(mr->odp, va - mr->iova, len, ROCE_ODP_FAULT_BATCH, clock_now_ns());
}

void roce_mr_note_rnr(struct roce_dev *dev, uint32_t key)
{
	struct roce_mr *mr = roce_mr_odp_of(dev, key);
	if (mr)
		roce_odp_note_rnr(mr->odp);
}

void roce_mr_note_local_wait(struct roce_dev *dev, uint32_t key)
{
	struct roce_mr *mr = roce_mr_odp_of(dev, key);
	if (mr)
		roce_odp_note_local_wait(mr->odp);
}
