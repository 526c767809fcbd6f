// sources: drivers/nvme/nvme_queue.c
/*
 * Ring logic: one slot kept empty, tail wrap, Phase Tag flip on CQ wrap, SQ head from SQHD,
 * doorbell offsets with CAP.DSTRD.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>
#include "drivers/nvme/nvme.h"

static struct nvme_sqe sq[4];
static struct nvme_cqe cq[4];

static void post(unsigned slot, uint16_t cid, uint16_t sqhd, unsigned phase)
{
	memset(&cq[slot], 0, sizeof(cq[slot]));
	cq[slot].cid = le16_make(cid);
	cq[slot].sqhd = le16_make(sqhd);
	cq[slot].status = le16_make((uint16_t)phase);
}

Test(queue, full_when_depth_minus_one_entries_are_queued)
{
	struct nvme_ring r;
	struct nvme_sqe e;
	memset(sq, 0, sizeof(sq));
	memset(&e, 0, sizeof(e));
	nvme_ring_init(&r, sq, cq, 4);
	cr_assert_eq(nvme_ring_space(&r), 3);
	for (int i = 0; i < 3; i++) {
		e.cid = le16_make((uint16_t)i);
		cr_assert_eq(nvme_ring_push(&r, &e), 0);
	}
	cr_assert_eq(nvme_ring_space(&r), 0);
	cr_assert_eq(nvme_ring_push(&r, &e), -EBUSY);
	cr_assert_eq(r.sq_tail, 3);
	cr_assert_eq(le16_get(sq[2].cid), 2);
}

Test(queue, phase_tag_tells_new_from_stale_and_flips_on_wrap)
{
	struct nvme_ring r;
	struct nvme_sqe e;
	memset(cq, 0, sizeof(cq));
	memset(&e, 0, sizeof(e));
	nvme_ring_init(&r, sq, cq, 4);
	cr_assert_null(nvme_ring_peek(&r), "zeroed CQ: phase 0 is stale");
	for (int i = 0; i < 3; i++)
		nvme_ring_push(&r, &e);
	for (unsigned i = 0; i < 4; i++) {
		post(i, (uint16_t)i, (uint16_t)((i + 1) % 4), 1);
		cr_assert_not_null(nvme_ring_peek(&r));
		cr_assert_eq(le16_get(nvme_ring_peek(&r)->cid), i);
		cr_assert_eq(nvme_ring_pop(&r), 0);
	}
	cr_assert_eq(r.cq_head, 0);
	cr_assert_eq(r.phase, 0, "phase flips after a full pass");
	cr_assert_null(nvme_ring_peek(&r), "old entries (phase 1) are now stale");
	post(0, 9, 1, 0);
	cr_assert_not_null(nvme_ring_peek(&r));
	cr_assert_eq(le16_get(nvme_ring_peek(&r)->cid), 9);
}

Test(queue, sq_head_follows_sqhd_and_frees_space)
{
	struct nvme_ring r;
	struct nvme_sqe e;
	memset(cq, 0, sizeof(cq));
	memset(&e, 0, sizeof(e));
	nvme_ring_init(&r, sq, cq, 4);
	for (int i = 0; i < 3; i++)
		nvme_ring_push(&r, &e);
	cr_assert_eq(nvme_ring_space(&r), 0);
	post(0, 0, 2, 1); /* controller consumed two SQEs */
	nvme_ring_pop(&r);
	cr_assert_eq(nvme_ring_space(&r), 2);
	cr_assert_eq(nvme_ring_push(&r, &e), 0);
	cr_assert_eq(r.sq_tail, 0, "tail wrapped");
}

Test(queue, bad_sqhd_is_consumed_but_not_believed)
{
	struct nvme_ring r;
	memset(cq, 0, sizeof(cq));
	nvme_ring_init(&r, sq, cq, 4);
	post(0, 0, 7, 1);
	cr_assert_eq(nvme_ring_pop(&r), -EPROTO);
	cr_assert_eq(r.sq_head, 0);
	cr_assert_eq(r.cq_head, 1);
}

Test(queue, doorbells_with_stride)
{
	cr_assert_eq(nvme_sq_doorbell(0, 0), 0x1000);
	cr_assert_eq(nvme_cq_doorbell(0, 0), 0x1004);
	cr_assert_eq(nvme_sq_doorbell(1, 0), 0x1008);
	cr_assert_eq(nvme_cq_doorbell(1, 0), 0x100c);
	/* DSTRD 2: 16-byte stride */
	cr_assert_eq(nvme_sq_doorbell(1, 2), 0x1020);
	cr_assert_eq(nvme_cq_doorbell(1, 2), 0x1030);
	cr_assert_eq(nvme_cq_doorbell(3, 1), 0x1000 + 7 * 8);
}
