/*
 * nvmet_rdma_boot.h - start and stop the appliance's NVMe/RDMA transport instance
 * (nvmet_rdma_boot.c) without knowing the transport's layout: what core/nvmet_boot.c uses.
 */
#ifndef DRIVERS_NVME_TARGET_NVMET_RDMA_BOOT_H
#define DRIVERS_NVME_TARGET_NVMET_RDMA_BOOT_H

struct nvmet_tcp_mem_ops;

/* Start the instance on rxe0 when the running target has an RDMA port (0 when it has none);
 * when rxe0 is not up yet, the transport's poller starts it once it is (logged). mops: where
 * payloads may live (the P2P placement the NVMe/TCP transport is given), NULL for DRAM only.
 * 0 or errno. */
int nvmet_rdma_boot_start(const struct nvmet_tcp_mem_ops *mops);

/* nvmet_rdma_stop() on the instance. */
void nvmet_rdma_boot_stop(void);

#endif
