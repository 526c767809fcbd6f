/*
 * roce_odp_nvme.h - an ODP store over a range of an NVMe namespace of the local host
 * driver: page-ins and write-backs are NVMe Read/Write commands of one page submitted
 * asynchronously on the controller's I/O queues (round robin), completed from the
 * driver's poller; a flush is an NVMe Flush of the namespace.
 */
#ifndef DRIVERS_RDMA_ROCE_ODP_NVME_H
#define DRIVERS_RDMA_ROCE_ODP_NVME_H

#include <stdint.h>
#include "roce_odp.h"

struct nvme_ctrl;

struct roce_odp_nvme {
	struct nvme_ctrl *ctrl;
	unsigned ctrl_index;         /* nvme_at() index: /dev/nvme<index>n<nsid> */
	uint32_t nsid;
	unsigned lba_shift;
	uint64_t base_lba;           /* the region's first byte */
	unsigned rr;                 /* next I/O queue */
	uint64_t submitted, refused;
};

/* Bind s to bytes [offset, offset + length) of namespace nsid of the ctrl_index-th
 * registered controller and fill *store. offset and length must be whole pages and whole
 * logical blocks. 0, -ENODEV (no such controller or namespace), -EINVAL (alignment),
 * -ERANGE (beyond the namespace). */
int roce_odp_nvme_open(struct roce_odp_nvme *s, unsigned ctrl_index, uint32_t nsid, uint64_t offset,
		       uint64_t length, struct roce_odp_store *store);

/* Reap the controller's completions now (the synchronous console helpers' wait; the
 * driver's poller does this in the loop). Returns completions handled. */
int roce_odp_nvme_poll(struct roce_odp_nvme *s);

#endif
