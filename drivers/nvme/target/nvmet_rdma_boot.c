/*
 * nvmet_rdma_boot.c - the appliance's one NVMe/RDMA transport instance: started by
 * core/nvmet_boot.c once the target runs, on the boot RoCE device rxe0 (which the services
 * may bring up after the target: the start then waits for it, polled, up to
 * NVMET_RDMA_BOOT_WAIT_MS), polled from the poll loop, shown by `stats nvmet_rdma`. All
 * its state is in the struct nvmet_rdma context; this file only holds the instance.
 */
#include <stdbool.h>
#include "../../../lib/clock.h"
#include "../../../lib/log.h"
#include "../../../lib/poller.h"
#include "../../../lib/stats.h"
#include "../../rdma/roce_net.h"
#include "nvmet_rdma.h"
#include "nvmet_rdma_boot.h"

LOG_MODULE_USE(nvmet);

#define NVMET_RDMA_BOOT_WAIT_MS 10000

static struct nvmet_rdma nvmet_rdma_inst;
static const struct nvmet_tcp_mem_ops *nvmet_rdma_mops;
static bool nvmet_rdma_pending;
static uint64_t nvmet_rdma_wait_until;

/* Does the running target have an RDMA port? */
static bool has_rdma_port(void)
{
	for (unsigned i = 0; i < nvmet_port_count(); i++) {
		const struct nvmet_cfg_port *p = nvmet_port_at(i);
		if (p && p->trtype == NVMET_TRTYPE_RDMA)
			return true;
	}
	return false;
}

/* Start the instance on rn with the payload placement of the boot. */
static int boot_start(struct roce_net *rn)
{
	int rc = nvmet_rdma_start(&nvmet_rdma_inst, rn);
	if (rc == 0)
		nvmet_rdma_set_placement(&nvmet_rdma_inst, nvmet_rdma_mops, nvmet_tcp_p2p());
	return rc;
}

int nvmet_rdma_boot_start(const struct nvmet_tcp_mem_ops *mops)
{
	nvmet_rdma_mops = mops;
	if (!has_rdma_port())
		return 0;
	if (!roce_boot_net_get()) {
		log_info("rdma: waiting for rxe0 to start the NVMe/RDMA transport");
		nvmet_rdma_pending = true;
		nvmet_rdma_wait_until = clock_now_ns() + (uint64_t)NVMET_RDMA_BOOT_WAIT_MS * 1000000ull;
		return 0;
	}
	return boot_start(roce_boot_net_get());
}

void nvmet_rdma_boot_stop(void)
{
	nvmet_rdma_pending = false;
	nvmet_rdma_stop(&nvmet_rdma_inst);
}

const struct nvmet_rdma *nvmet_rdma_boot(void)
{
	return nvmet_rdma_inst.started ? &nvmet_rdma_inst : NULL;
}

static int nvmet_rdma_boot_poll(unsigned budget)
{
	if (nvmet_rdma_pending) {
		struct roce_net *rn = roce_boot_net_get();
		int rc;
		if (rn || clock_now_ns() > nvmet_rdma_wait_until) {
			nvmet_rdma_pending = false;
			if (!nvmet_running())
				return 1;
			if ((rc = boot_start(rn)))
				log_err("rdma: NVMe/RDMA transport not started (%d); the target serves TCP only", rc);
			return 1;
		}
	}
	if (nvmet_rdma_inst.started) /* nvmet.p2p may change at run time */
		nvmet_rdma_set_placement(&nvmet_rdma_inst, nvmet_rdma_mops, nvmet_tcp_p2p());
	return nvmet_rdma_poll(&nvmet_rdma_inst, budget);
}
POLLER(nvmet_rdma, nvmet_rdma_boot_poll);

static void nvmet_rdma_stats_show(void)
{
	if (nvmet_rdma_inst.started)
		nvmet_rdma_show(&nvmet_rdma_inst);
}
STATS_SECTION(nvmet_rdma, nvmet_rdma_stats_show);
