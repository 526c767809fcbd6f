/*
 * nvmet_rdma_boot.c - the appliance's one NVMe/RDMA transport instance: started by
 * core/nvmet_boot.c on the boot RoCE device, polled from the poll loop, shown by
 * `stats nvmet_rdma` (and the `nvmet` command's RDMA part). All its state is in the
 * struct nvmet_rdma context; this file only holds the instance.
 */
#include "../../../lib/poller.h"
#include "../../../lib/stats.h"
#include "nvmet_rdma.h"
#include "nvmet_rdma_boot.h"

static struct nvmet_rdma nvmet_rdma_inst;

int nvmet_rdma_boot_start(struct roce_net *rn)
{
	return nvmet_rdma_start(&nvmet_rdma_inst, rn);
}

void nvmet_rdma_boot_stop(void)
{
	nvmet_rdma_stop(&nvmet_rdma_inst);
}

const struct nvmet_rdma *nvmet_rdma_boot(void)
{
	return nvmet_rdma_inst.started ? &nvmet_rdma_inst : NULL;
}

static int nvmet_rdma_boot_poll(unsigned budget)
{
	return nvmet_rdma_poll(&nvmet_rdma_inst, budget);
}
POLLER(nvmet_rdma, nvmet_rdma_boot_poll);

static void nvmet_rdma_stats_show(void)
{
	if (nvmet_rdma_inst.started)
		nvmet_rdma_show(&nvmet_rdma_inst);
}
STATS_SECTION(nvmet_rdma, nvmet_rdma_stats_show);
