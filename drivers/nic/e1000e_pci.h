/*
 * e1000e_pci.h - the PCI attach's face for the console commands and the configuration:
 * bound devices, where their receive payload goes.
 */
#ifndef DRIVERS_NIC_E1000E_PCI_H
#define DRIVERS_NIC_E1000E_PCI_H

#include "../../pci/pci.h"
#include "e1000e.h"

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
