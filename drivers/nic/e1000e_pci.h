/*
 * e1000e_pci.h - the PCI attach's face for the console commands and the configuration:
 * bound devices, where their receive payload goes, settings for the next probe.
 */
#ifndef DRIVERS_NIC_E1000E_PCI_H
#define DRIVERS_NIC_E1000E_PCI_H

#include "../../pci/pci.h"
#include "e1000e.h"

/* What the settings file chooses (core/ calls e1000e_configure before the bus binds). */
struct e1000e_settings {
	enum e1000e_rx_mode mode; /* nic.rx_mode = split | plain */
	unsigned mtu;             /* nic.mtu = 1500..9000 */
	unsigned ps_units;        /* nic.ps_units: RDH/RDT units per packet-split descriptor (QEMU 7.2: 2) */
	unsigned tx_dev_max;      /* nic.tx_dev_max: device-memory bytes one frame may gather (QEMU 7.2: 4096, 0 no limit) */
	bool rx_ring_with_data;   /* nic.rx_ring = with-data | dram: the packet-split receive ring in the data buffers' memory */
	enum e1000e_tso_mode tso; /* nic.tso = auto | on | off */
};

/* Settings for devices probed from now on. */
void e1000e_configure(const struct e1000e_settings *s);

/* The settings in force. */
void e1000e_settings_get(struct e1000e_settings *s);

/* Make sure a netbuf pool exists (the stack's, or the driver's own when there is no
 * stack). 0 or negative errno. */
int e1000e_netbufs_ready(void);

/* Bound devices: count and the i-th (NULL past the end). */
unsigned e1000e_count(void);
struct e1000e *e1000e_at(unsigned i);

/* The PCI function of a device. */
struct pci_dev *e1000e_pci_dev(struct e1000e *dev);

/* The provider holding the receive data buffers (NULL: host DRAM). */
struct p2p_provider *e1000e_rx_provider(struct e1000e *dev);

/* One line: the provider chosen and why, or why the payload stays in DRAM. */
const char *e1000e_rx_where(struct e1000e *dev);

#endif
