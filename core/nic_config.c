/*
 * nic_config.c - the e1000e driver's settings from p2pstore.cfg, applied before PCI
 * drivers bind (core/ reads the configuration so that drivers/ never calls up into it).
 * The MTU is the interface's: net.mtu (core/net_config.c) sets it through netdev.
 *
 *   nic.rx_mode = split | plain   packet split into device memory (split), or DRAM only
 *   nic.ps_units = 1 | 2          RDH/RDT units per packet-split descriptor (QEMU 7.2: 2,
 *                                 the 82574L datasheet: 1)
 *   nic.rx_ring = with-data | dram  the packet-split receive descriptor ring behind the data
 *                                 buffers, in device memory with them (with-data), or in DRAM
 *   nic.tx_dev_max = BYTES        device-memory bytes one frame may gather before the driver
 *                                 bounces it through DRAM (QEMU 7.2: 4096; 0 = no limit)
 *   nic.tso = auto | on | off     TCP segmentation offload: auto uses it when a MAC loopback
 *                                 probe shows the device cutting real TCP segments (QEMU 7.2
 *                                 sends IPv4 fragments instead); on forces it
 */
#include <string.h>
#include "../drivers/nic/e1000e_pci.h"
#include "../lib/log.h"
#include "../lib/poller.h"
#include "config.h"

LOG_MODULE_USE(kernel);

static int nic_config_apply(void)
{
	struct config *cfg = config_global();
	struct e1000e_settings s;
	uint64_t v;
	const char *mode;

	e1000e_settings_get(&s);
	if ((mode = config_get(cfg, "nic.rx_mode"))) {
		if (strcmp(mode, "split") == 0)
			s.mode = E1000E_RX_SPLIT;
		else if (strcmp(mode, "plain") == 0)
			s.mode = E1000E_RX_PLAIN;
		else
			log_err("config: nic.rx_mode '%s' is not split or plain", mode);
	}
	if (config_get_u64(cfg, "nic.ps_units", s.ps_units, &v) || (v != 1 && v != 2))
		log_err("config: nic.ps_units must be 1 or 2; keeping %u", s.ps_units);
	else
		s.ps_units = (unsigned)v;
	if ((mode = config_get(cfg, "nic.rx_ring"))) {
		if (strcmp(mode, "with-data") == 0)
			s.rx_ring_with_data = true;
		else if (strcmp(mode, "dram") == 0)
			s.rx_ring_with_data = false;
		else
			log_err("config: nic.rx_ring '%s' is not with-data or dram", mode);
	}
	if (config_get_u64(cfg, "nic.tx_dev_max", s.tx_dev_max, &v) || v > (1u << 20))
		log_err("config: nic.tx_dev_max must be 0..1048576 bytes; keeping %u", s.tx_dev_max);
	else
		s.tx_dev_max = (unsigned)v;
	if ((mode = config_get(cfg, "nic.tso"))) {
		if (strcmp(mode, "auto") == 0)
			s.tso = E1000E_TSO_AUTO;
		else if (strcmp(mode, "on") == 0)
			s.tso = E1000E_TSO_ON;
		else if (strcmp(mode, "off") == 0)
			s.tso = E1000E_TSO_OFF;
		else
			log_err("config: nic.tso '%s' is not auto, on or off", mode);
	}
	e1000e_configure(&s);
	return 0;
}
INITCALL(nic_config, INIT_LEVEL_EARLY, nic_config_apply);
