/*
 * nvmet_dram_reason.c - the names of the reasons a payload went through host DRAM instead
 * of device memory (enum nvmet_tcp_dram_reason in nvmet_tcp.h), one list for both
 * transports: the NVMe/TCP transport's counters and logs and the NVMe/RDMA transport's
 * (nvmet_rdma_place.c) read the same names, so the console and the lab parse one format.
 */
#include "nvmet_tcp.h"

static const char *const dram_reason_names[NVMET_TCP_DRAM_REASON_COUNT] = {
	[NVMET_TCP_DRAM_P2P_REFUSED] = "p2p-refused",
	[NVMET_TCP_DRAM_DIGEST] = "data-digest",
	[NVMET_TCP_DRAM_NO_CMB] = "no-cmb",
	[NVMET_TCP_DRAM_ALLOC] = "cmb-full",
	[NVMET_TCP_DRAM_OFF] = "p2p-off",
	[NVMET_TCP_DRAM_NIC_DRAM] = "nic-dram",
	[NVMET_TCP_DRAM_FRAGMENTS] = "fragments",
};

/* Short name of a DRAM fallback reason (console, logs). */
const char *nvmet_tcp_dram_reason_name(enum nvmet_tcp_dram_reason r)
{
	return (unsigned)r < NVMET_TCP_DRAM_REASON_COUNT ? dram_reason_names[r] : "?";
}
