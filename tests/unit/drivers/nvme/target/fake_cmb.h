/*
 * fake_cmb.h - fake device memory for the NVMe/TCP transport's host tests and fuzzer: a
 * "CMB" of provider 1 in host memory (tests dereference it), handed out in 4 KiB
 * granules through the transport's struct nvmet_tcp_mem_ops, with forced answers.
 */
#ifndef TESTS_UNIT_DRIVERS_NVME_TARGET_FAKE_CMB_H
#define TESTS_UNIT_DRIVERS_NVME_TARGET_FAKE_CMB_H

#include <stdbool.h>
#include <stdint.h>
#include "drivers/nvme/target/nvmet_tcp.h"

#define FCMB_SIZE (40u * 1024 * 1024) /* more than a host's share (NVMET_TCP_HOST_DEVICE_MAX) */
#define FCMB_GRANULE 4096u

extern const struct nvmet_tcp_mem_ops fcmb_ops;
extern unsigned fcmb_in_use, fcmb_allocs;  /* granules in use, allocations made */
extern int fcmb_reach_rc, fcmb_alloc_rc;   /* forced results (0: the real answer) */
/* The drive's own CMB: the provider alloc hands out (1 by default, the fake NIC's too). With
 * fcmb_peer_refused, reach refuses provider 1 when it is not the own one (nvmet.peer_sgl off:
 * another device's CMB is not read in place). */
extern uint16_t fcmb_provider;
extern bool fcmb_peer_refused;

/* Everything free, counters and forced results zero. */
void fcmb_reset(void);

#endif
