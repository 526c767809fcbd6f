/*
 * nvmet_tcp_settings.c - the NVMe/TCP transport's settings, handed to the transport
 * before the target starts (INIT_LEVEL_DRIVER) and again on `config KEY VALUE`:
 *   nvmet.p2p = auto | off   payloads in device memory where the P2P rules allow it (auto),
 *                            or every payload through host DRAM (off: benchmarks, diagnosis)
 *   nvmet.write_budget_kib   write bytes held between R2T and completion, all connections
 */
#include "../../../lib/config_key.h"
#include "../../../lib/poller.h"
#include "nvmet_tcp.h"

enum nvmet_tcp_p2p_mode {
	NVMET_TCP_P2P_AUTO = 0, /* device memory where the P2P rules allow it */
	NVMET_TCP_P2P_OFF = 1,  /* every payload through host DRAM */
};
static enum nvmet_tcp_p2p_mode p2p_mode;

static int nvmet_tcp_p2p_apply(void)
{
	nvmet_tcp_set_p2p(p2p_mode == NVMET_TCP_P2P_AUTO);
	return 0;
}
static const struct config_choice p2p_choices[] = {
	{ "auto", NVMET_TCP_P2P_AUTO }, { "off", NVMET_TCP_P2P_OFF }, { NULL, 0 } };
CONFIG_ENUM(nvmet_p2p, "nvmet.p2p", &p2p_mode, p2p_choices, "auto", nvmet_tcp_p2p_apply,
	    "NVMe/TCP payloads in device memory where the P2P rules allow it (auto), or all through host DRAM (off)");

static unsigned write_budget_kib;

static int nvmet_tcp_write_budget_apply(void)
{
	nvmet_tcp_set_write_budget(write_budget_kib * 1024u);
	return 0;
}
CONFIG_UINT(nvmet_write_budget, "nvmet.write_budget_kib", &write_budget_kib, 128, NVMET_TCP_WRITE_HELD_LIMIT / 1024,
	    "2048", nvmet_tcp_write_budget_apply,
	    "KiB of NVMe/TCP write data all connections may hold between R2T and completion (NIC receive buffers)");

static int nvmet_tcp_settings_apply(void)
{
	nvmet_tcp_p2p_apply();
	return nvmet_tcp_write_budget_apply();
}
INITCALL(nvmet_tcp_settings, INIT_LEVEL_DRIVER, nvmet_tcp_settings_apply);
