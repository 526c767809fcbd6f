/*
 * nvme_priv.h - functions shared by the host driver's own files (nvme.c, nvme_reset.c);
 * not for the driver's users.
 */
#ifndef DRIVERS_NVME_NVME_PRIV_H
#define DRIVERS_NVME_NVME_PRIV_H

#include <stddef.h>
#include "nvme.h"

/* One SGL descriptor as two little-endian quadwords (8-byte stores, also right for a list in
 * device memory): Address, then Length (bits 31:0), reserved (55:32) and the SGL
 * Identifier (63:56), without building it in a local first. */
static inline void nvme_sgl_desc_put(volatile struct nvme_sgl_desc *d, uint64_t addr, uint32_t len, unsigned type)
{
	_Static_assert(offsetof(struct nvme_sgl_desc, len) == 8 && offsetof(struct nvme_sgl_desc, id) == 15,
		       "SGL descriptor layout");
	uint64_t q[2];
	le64_store(&q[0], addr);
	le64_store(&q[1], (uint64_t)len | (uint64_t)NVME_SGL_ID(type) << 56);
	volatile uint64_t *dst = (volatile uint64_t *)d;
	dst[0] = q[0];
	dst[1] = q[1];
}

/* The bring-up of nvme_ctrl_init() without clearing the controller (a reset keeps the name,
 * counters and attach): c->bus, timeouts and nio_wanted must be set, queues freed. */
int nvme_ctrl_bring_up(struct nvme_ctrl *c);
/* Free a queue pair's rings and list areas and clear it. */
void nvme_qpair_free(struct nvme_ctrl *c, struct nvme_qpair *q);
/* Retire a slot and call its owner's completion with rc. */
void nvme_cmd_finish(struct nvme_qpair *q, struct nvme_cmd *slot, int rc, const struct nvme_cqe *cqe);
/* Fail every command in flight (only once the controller can no longer move data). */
unsigned nvme_fail_inflight(struct nvme_ctrl *c, int rc);
/* All-ones registers: REMOVED, everything failed with -ENODEV, namespaces inactive. */
void nvme_ctrl_mark_removed(struct nvme_ctrl *c);

#endif
