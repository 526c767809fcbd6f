/*
 * nvmet_rdma_boot.h - start and stop the appliance's NVMe/RDMA transport instance
 * (nvmet_rdma_boot.c) without knowing the transport's layout: what core/nvmet_boot.c uses.
 */
#ifndef DRIVERS_NVME_TARGET_NVMET_RDMA_BOOT_H
#define DRIVERS_NVME_TARGET_NVMET_RDMA_BOOT_H

struct roce_net;

/* nvmet_rdma_start() on the instance with rn (NULL: no RoCE device). 0 or errno. */
int nvmet_rdma_boot_start(struct roce_net *rn);

/* nvmet_rdma_stop() on the instance. */
void nvmet_rdma_boot_stop(void);

#endif
