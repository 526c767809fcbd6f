/*
 * nvme_queue.c - submission/completion ring arithmetic: tail and head wrap, the Phase Tag
 * that tells a new completion from a stale one, SQ head tracking from CQE.SQHD, and
 * doorbell offsets with the stride CAP.DSTRD. No commands, no registers: nvme.c owns those.
 */
#include <errno.h>
#include <string.h>
#include "nvme.h"

/* Start an empty pair of rings of depth entries each. */
void nvme_ring_init(struct nvme_ring *r, void *sq, void *cq, uint16_t depth)
{
	memset(r, 0, sizeof(*r));
	r->sq = sq;
	r->cq = cq;
	r->depth = depth;
	r->phase = 1; /* the controller writes P = 1 on its first pass through a zeroed CQ */
}

/* nvme_ring_space, _push, _peek and _pop are inline in nvme.h (every command and
 * completion runs them). */

/* SQ y Tail Doorbell: 0x1000 + (2y) * (4 << CAP.DSTRD). */
uint32_t nvme_sq_doorbell(uint16_t qid, unsigned dstrd)
{
	return NVME_REG_DBS + (2u * qid) * (4u << dstrd);
}

/* CQ y Head Doorbell: 0x1000 + (2y + 1) * (4 << CAP.DSTRD). */
uint32_t nvme_cq_doorbell(uint16_t qid, unsigned dstrd)
{
	return NVME_REG_DBS + (2u * qid + 1) * (4u << dstrd);
}
