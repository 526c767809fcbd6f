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

/* Free SQ slots: one slot always stays empty so that full and empty differ. */
unsigned nvme_ring_space(const struct nvme_ring *r)
{
	unsigned used = (unsigned)(r->sq_tail + r->depth - r->sq_head) % r->depth;
	return r->depth - 1 - used;
}

/* Place one SQE at the tail. */
int nvme_ring_push(struct nvme_ring *r, const struct nvme_sqe *sqe)
{
	if (nvme_ring_space(r) == 0)
		return -EBUSY;
	volatile uint32_t *dst = (volatile uint32_t *)&r->sq[r->sq_tail];
	const uint32_t *src = (const uint32_t *)sqe;
	_Static_assert(sizeof(*sqe) == 64, "an SQE is 16 dwords");
	/* 4-byte stores: also right for an SQ in device memory; written out (a volatile
	 * loop is not unrolled: twice the instructions for the same 16 stores) */
	dst[0] = src[0], dst[1] = src[1], dst[2] = src[2], dst[3] = src[3];
	dst[4] = src[4], dst[5] = src[5], dst[6] = src[6], dst[7] = src[7];
	dst[8] = src[8], dst[9] = src[9], dst[10] = src[10], dst[11] = src[11];
	dst[12] = src[12], dst[13] = src[13], dst[14] = src[14], dst[15] = src[15];
	r->sq_tail = (uint16_t)(r->sq_tail + 1 == r->depth ? 0 : r->sq_tail + 1);
	return 0;
}

/* A new completion at the head, or NULL. */
const volatile struct nvme_cqe *nvme_ring_peek(const struct nvme_ring *r)
{
	const volatile struct nvme_cqe *e = &r->cq[r->cq_head];
	if ((le16_get(e->status) & NVME_CQE_P) != r->phase)
		return NULL;
	__atomic_thread_fence(__ATOMIC_ACQUIRE); /* read the entry only after its phase */
	return e;
}

/* Consume the head completion. */
int nvme_ring_pop(struct nvme_ring *r)
{
	uint16_t sqhd = le16_get(r->cq[r->cq_head].sqhd);
	if (++r->cq_head == r->depth) {
		r->cq_head = 0;
		r->phase ^= 1;
	}
	if (sqhd >= r->depth)
		return -EPROTO; /* consumed, but the SQ head is not believed */
	r->sq_head = sqhd;
	return 0;
}

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
