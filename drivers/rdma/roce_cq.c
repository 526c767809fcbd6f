/*
 * roce_cq.c - completion queues (a ring with overflow detection and a one-shot
 * completion callback for the poll loop) and shared receive queues.
 */
#include <errno.h>
#include <string.h>
#include "roce_internal.h"

int roce_create_cq(struct roce_dev *dev, unsigned cqe, roce_comp_fn fn, void *ctx, struct roce_cq **out)
{
	int slot;
	struct roce_cq *cq;

	if (cqe == 0 || cqe > ROCE_MAX_CQE)
		return -EINVAL;
	if ((slot = roce_table_slot((void *const *)dev->cqs, ROCE_MAX_CQ)) < 0 || !(cq = mm_pool_zalloc(&dev->cq_pool)))
		return -ENOMEM;
	cq->dev = dev;
	cq->index = (unsigned)slot;
	cq->cqe = cqe;
	cq->fn = fn;
	cq->ctx = ctx;
	dev->cqs[slot] = cq;
	*out = cq;
	return 0;
}

int roce_destroy_cq(struct roce_cq *cq)
{
	struct roce_dev *dev = cq->dev;
	if (cq->users)
		return -EBUSY;
	dev->cqs[cq->index] = NULL;
	mm_pool_free(&dev->cq_pool, cq);
	return 0;
}

int roce_cq_push(struct roce_cq *cq, const struct roce_wc *wc)
{
	if (cq->overflow || cq->count == cq->cqe) {
		/* 11.4.2.1: a CQ overrun is an error of the CQ; what it held stays pollable */
		cq->overflow = true;
		cq->overflows++;
		if (cq->fn)
			cq->fn(cq, cq->ctx);
		return -EOVERFLOW;
	}
	cq->ring[(cq->head + cq->count) % cq->cqe] = *wc;
	cq->count++;
	cq->pushed++;
	if (cq->armed && cq->fn) {
		cq->armed = false;
		cq->fn(cq, cq->ctx);
	}
	return 0;
}

int roce_poll_cq(struct roce_cq *cq, unsigned n, struct roce_wc *wc)
{
	unsigned got = 0;
	while (got < n && cq->count) {
		wc[got++] = cq->ring[cq->head];
		cq->head = (cq->head + 1) % cq->cqe;
		cq->count--;
	}
	if (got == 0 && cq->overflow)
		return -EIO;
	return (int)got;
}

void roce_req_notify_cq(struct roce_cq *cq)
{
	cq->armed = true;
}

/* --- SRQ ----------------------------------------------------------------------------- */

int roce_create_srq(struct roce_pd *pd, unsigned max_wr, unsigned max_sge, struct roce_srq **out)
{
	struct roce_dev *dev = pd->dev;
	struct roce_srq *srq;
	int slot;

	if (max_wr == 0 || max_wr > ROCE_MAX_WR || max_sge == 0 || max_sge > ROCE_MAX_SGE)
		return -EINVAL;
	if ((slot = roce_table_slot((void *const *)dev->srqs, ROCE_MAX_SRQ)) < 0 ||
	    !(srq = mm_pool_zalloc(&dev->srq_pool)))
		return -ENOMEM;
	srq->dev = dev;
	srq->pd = pd;
	srq->index = (unsigned)slot;
	srq->wq.size = max_wr;
	srq->wq.max_sge = max_sge;
	dev->srqs[slot] = srq;
	pd->users++;
	*out = srq;
	return 0;
}

int roce_destroy_srq(struct roce_srq *srq)
{
	struct roce_dev *dev = srq->dev;
	if (srq->users)
		return -EBUSY;
	dev->srqs[srq->index] = NULL;
	srq->pd->users--;
	mm_pool_free(&dev->srq_pool, srq);
	return 0;
}

int roce_post_srq_recv(struct roce_srq *srq, const struct roce_recv_wr *wr)
{
	if (wr->num_sge > srq->wq.max_sge)
		return -EINVAL;
	if (srq->wq.count == srq->wq.size)
		return -ENOMEM;
	srq->ring[(srq->wq.head + srq->wq.count) % srq->wq.size] = *wr;
	srq->wq.count++;
	return 0;
}
