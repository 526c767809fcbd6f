/*
 * roce_odp_mr.h - memory regions over an on-demand paged region (roce_odp.h), and the
 * hooks through which the transport touches registered memory: a plain MR is one piece of
 * memory; an ODP MR is a piece per resident page, or "not yet" (-EAGAIN) with the page-ins
 * started, which the responder answers with an RNR NAK and the requester with a work
 * request that waits in the send queue.
 */
#ifndef DRIVERS_RDMA_ROCE_ODP_MR_H
#define DRIVERS_RDMA_ROCE_ODP_MR_H

#include "roce_odp.h"
#include "roce_rc.h"
#include "roce_verbs.h"

/* Register an MR (IBV_ACCESS_ON_DEMAND) of the whole region r at iova: lkey/rkey as
 * roce_reg_mr. The region cannot be destroyed while the MR lives. 0, -EINVAL, -ENOMEM. */
int roce_reg_mr_odp(struct roce_pd *pd, uint64_t iova, struct roce_odp_region *r, unsigned access,
		    struct roce_mr **out);

/* The ODP region behind an MR, or NULL for a plain MR. */
struct roce_odp_region *roce_mr_odp(const struct roce_mr *mr);

/* The memory behind [va, va + len) of key (checked as roce_mr_check does) as up to max
 * pieces (*n set; 0 pieces for len 0). ODP: -EAGAIN when a page is not resident (page-ins
 * started), -EIO when its page-in failed, -E2BIG when more than max pages are touched.
 * access with a write right (local write, remote write or atomic) marks the pages dirty. */
int roce_mr_map(struct roce_dev *dev, const struct roce_pd *pd, uint32_t key, bool remote, unsigned access,
		uint64_t va, uint64_t len, struct roce_tx_seg *seg, unsigned max, unsigned *n);

/* For the message [va, va + len) of an RDMA READ under key: 0 unless key names an ODP MR
 * whose first ROCE_ODP_FAULT_BATCH pages of the range are not all resident: then -EAGAIN
 * with page-ins started (or -EIO). Keys and rights are checked by roce_mr_check. */
int roce_mr_fault_window(struct roce_dev *dev, uint32_t key, uint64_t va, uint64_t len);

/* Count an RNR NAK sent for a fault of the ODP MR named by key / a local WR held back. */
void roce_mr_note_rnr(struct roce_dev *dev, uint32_t key);
void roce_mr_note_local_wait(struct roce_dev *dev, uint32_t key);

#endif
