/*
 * fake_cmb.h - fake device memory for the NVMe/TCP transport's host tests and fuzzer: a
 * "CMB" of provider 1 in host memory (tests dereference it), handed out in 4 KiB
 * granules through the transport's struct nvmet_tcp_mem_ops, with forced answers.
 */
#ifndef TESTS_UNIT_DRIVERS_NVME_TARGET_FAKE_CMB_H
#define TESTS_UNIT_DRIVERS_NVME_TARGET_FAKE_CMB_H

#include <stdint.h>
#include "drivers/nvme/target/nvmet_tcp.h"

#define FCMB_SIZE (40u * 1024 * 1024) /* more than a host's share (NVMET_TCP_HOST_DEVICE_MAX) */
#define FCMB_GRANULE 4096u

extern const struct nvmet_tcp_mem_ops fcmb_ops;
extern unsigned fcmb_in_use, fcmb_allocs;  /* granules in use, allocations made */
extern int fcmb_reach_rc, fcmb_alloc_rc;   /* forced results (0: the real answer) */

/* Everything free, counters and forced results zero. */
void fcmb_reset(void);

#endif
