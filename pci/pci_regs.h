/*
 * pci_regs.h - PCI/PCIe configuration-space registers used by pci/ (PCI Local Bus 3.0,
 * PCI-to-PCI Bridge 1.2, PCI Express Base 5.0 chapter 7). Offsets are from the start of
 * a function's 4 KiB configuration space; one comment per bit that pci/ looks at.
 */
#ifndef PCI_PCI_REGS_H
#define PCI_PCI_REGS_H

/* --- common header (both types) --- */
#define PCI_VENDOR_ID 0x00          /* 16 bits; 0xffff: no function here */
#define PCI_DEVICE_ID 0x02          /* 16 bits */
#define PCI_COMMAND 0x04            /* 16 bits */
#define PCI_COMMAND_IO (1u << 0)      /* I/O space decode enable */
#define PCI_COMMAND_MEMORY (1u << 1)  /* memory space decode enable */
#define PCI_COMMAND_MASTER (1u << 2)  /* bus master enable: the function may issue DMA */
#define PCI_COMMAND_INTX_DISABLE (1u << 10) /* Interrupt Disable: no INTx messages */
#define PCI_STATUS 0x06             /* 16 bits */
#define PCI_STATUS_CAP_LIST (1u << 4) /* a capability list starts at PCI_CAPABILITY_LIST */
#define PCI_REVISION_ID 0x08        /* 8 bits */
#define PCI_CLASS_PROG 0x09         /* 8 bits: programming interface */
#define PCI_CLASS_DEVICE 0x0a       /* 16 bits: class (high byte) and subclass (low byte) */
#define PCI_HEADER_TYPE 0x0e        /* 8 bits */
#define PCI_HEADER_TYPE_MASK 0x7f     /* 0 endpoint, 1 PCI-to-PCI bridge, 2 CardBus */
#define PCI_HEADER_TYPE_MULTI 0x80    /* the device has functions 1-7 */
#define PCI_BAR0 0x10               /* base address registers, 4 bytes apart */
#define PCI_CAPABILITY_LIST 0x34    /* 8 bits: offset of the first capability */

/* --- base address register bits --- */
#define PCI_BAR_IO (1u << 0)          /* 1: I/O space BAR */
#define PCI_BAR_IO_MASK 0xfffffffcu   /* I/O address bits */
#define PCI_BAR_MEM_TYPE_MASK 0x6u    /* memory BAR type, bits 2:1 */
#define PCI_BAR_MEM_TYPE_32 0x0u      /*   32-bit, anywhere below 4 GiB */
#define PCI_BAR_MEM_TYPE_1M 0x2u      /*   legacy: below 1 MiB (reserved in PCI 3.0) */
#define PCI_BAR_MEM_TYPE_64 0x4u      /*   64-bit: the next BAR holds the upper half */
#define PCI_BAR_MEM_PREFETCH (1u << 3) /* prefetchable: no read side effects */
#define PCI_BAR_MEM_MASK 0xfffffff0u  /* memory address bits */

/* --- type 0 (endpoint) header --- */
#define PCI_NUM_BARS_TYPE0 6
/* --- type 1 (PCI-to-PCI bridge) header --- */
#define PCI_NUM_BARS_TYPE1 2
#define PCI_PRIMARY_BUS 0x18        /* 8 bits */
#define PCI_SECONDARY_BUS 0x19      /* 8 bits: the bus directly below the bridge */
#define PCI_SUBORDINATE_BUS 0x1a    /* 8 bits: the highest bus below the bridge */
#define PCI_IO_BASE 0x1c            /* 8 bits: I/O window base, address bits 15:12 in 7:4 */
#define PCI_IO_LIMIT 0x1d           /* 8 bits: I/O window limit, same encoding */
#define PCI_IO_RANGE_32 0x01          /* bits 3:0 = 1: 32-bit I/O addressing (upper halves valid) */
#define PCI_MEMORY_BASE 0x20        /* 16 bits: non-prefetchable window, bits 31:20 in 15:4 */
#define PCI_MEMORY_LIMIT 0x22       /* 16 bits: same encoding, limit is inclusive (| 0xfffff) */
#define PCI_PREF_MEMORY_BASE 0x24   /* 16 bits: prefetchable window base */
#define PCI_PREF_MEMORY_LIMIT 0x26  /* 16 bits: prefetchable window limit */
#define PCI_PREF_RANGE_64 0x01        /* bits 3:0 = 1: 64-bit prefetchable window */
#define PCI_PREF_BASE_UPPER32 0x28  /* 32 bits: address bits 63:32 of the prefetchable base */
#define PCI_PREF_LIMIT_UPPER32 0x2c /* 32 bits: address bits 63:32 of the prefetchable limit */
#define PCI_IO_BASE_UPPER16 0x30    /* 16 bits */
#define PCI_IO_LIMIT_UPPER16 0x32   /* 16 bits */

/* --- capability IDs (PCI_CAPABILITY_LIST chain) --- */
#define PCI_CAP_ID_PM 0x01          /* power management */
#define PCI_CAP_ID_MSI 0x05         /* message signalled interrupts */
#define PCI_CAP_ID_VNDR 0x09        /* vendor specific */
#define PCI_CAP_ID_SSVID 0x0d       /* bridge subsystem vendor id */
#define PCI_CAP_ID_EXP 0x10         /* PCI Express */
#define PCI_CAP_ID_MSIX 0x11        /* MSI-X */
#define PCI_CAP_NEXT 1              /* offset of the next pointer within a capability */

/* --- MSI-X capability (PCIe base spec 7.7.2; offsets from the capability) --- */
#define PCI_MSIX_FLAGS 0x02         /* 16 bits: Message Control */
#define PCI_MSIX_FLAGS_QSIZE 0x07ffu  /*   Table Size, N-1 */
#define PCI_MSIX_FLAGS_MASKALL (1u << 14) /* Function Mask */
#define PCI_MSIX_FLAGS_ENABLE (1u << 15)  /* MSI-X Enable */
#define PCI_MSIX_TABLE 0x04         /* 32 bits: Table BIR (2:0) and Table Offset (31:3) */
#define PCI_MSIX_BIR 0x7u
#define PCI_MSIX_ENTRY_SIZE 16      /* table entry: Message Address (64), Message Data, Vector Control */
#define PCI_MSIX_ENTRY_ADDR_LO 0x0
#define PCI_MSIX_ENTRY_ADDR_HI 0x4
#define PCI_MSIX_ENTRY_DATA 0x8
#define PCI_MSIX_ENTRY_CTRL 0xc
#define PCI_MSIX_ENTRY_CTRL_MASK 1u   /*   Mask Bit */

/* --- PCI Express capability (offsets from the capability) --- */
#define PCI_EXP_FLAGS 0x02          /* 16 bits */
#define PCI_EXP_FLAGS_TYPE_SHIFT 4    /* device/port type, bits 7:4: */
#define PCI_EXP_TYPE_ENDPOINT 0x0     /*   PCIe endpoint */
#define PCI_EXP_TYPE_LEG_END 0x1      /*   legacy endpoint */
#define PCI_EXP_TYPE_ROOT_PORT 0x4    /*   root port of a root complex */
#define PCI_EXP_TYPE_UPSTREAM 0x5     /*   upstream port of a switch */
#define PCI_EXP_TYPE_DOWNSTREAM 0x6   /*   downstream port of a switch */
#define PCI_EXP_TYPE_PCI_BRIDGE 0x7   /*   PCIe-to-PCI bridge */
#define PCI_EXP_TYPE_PCIE_BRIDGE 0x8  /*   PCI-to-PCIe bridge */
#define PCI_EXP_TYPE_RC_END 0x9       /*   root complex integrated endpoint */
#define PCI_EXP_TYPE_RC_EC 0xa        /*   root complex event collector */
#define PCI_EXP_FLAGS_SLOT 0x0100     /*   slot implemented (ports connected to a slot) */
#define PCI_EXP_LNKCAP 0x0c         /* 32 bits: link capabilities */
#define PCI_EXP_LNKCAP_SPEED 0xfu     /*   max link speed, bits 3:0 (1 = 2.5 GT/s ... 6 = 64 GT/s) */
#define PCI_EXP_LNKCAP_WIDTH_SHIFT 4  /*   max link width, bits 9:4 */
#define PCI_EXP_LNKSTA 0x12         /* 16 bits: link status */
#define PCI_EXP_LNKSTA_SPEED 0xfu     /*   current link speed, bits 3:0 */
#define PCI_EXP_LNKSTA_WIDTH_SHIFT 4  /*   negotiated width, bits 9:4 */
#define PCI_EXP_LNKSTA_DLLLA 0x2000   /*   data link layer link active */
#define PCI_EXP_LNK_WIDTH_MASK 0x3fu
/* slot registers (PCIe 5.0 7.5.3.9-11), valid when PCI_EXP_FLAGS_SLOT */
#define PCI_EXP_SLTCAP 0x14         /* 32 bits: slot capabilities */
#define PCI_EXP_SLTCAP_PCP 0x00000002u  /*   power controller present */
#define PCI_EXP_SLTCAP_HPC 0x00000040u  /*   hot-plug capable */
#define PCI_EXP_SLTCTL 0x18         /* 16 bits: slot control */
#define PCI_EXP_SLTCTL_AIC 0x00c0       /*   attention indicator control: */
#define PCI_EXP_SLTCTL_AIC_OFF 0x00c0   /*     11b off */
#define PCI_EXP_SLTCTL_PIC 0x0300       /*   power indicator control: */
#define PCI_EXP_SLTCTL_PIC_ON 0x0100    /*     01b on */
#define PCI_EXP_SLTCTL_PIC_OFF 0x0300   /*     11b off */
#define PCI_EXP_SLTCTL_PCC 0x0400       /*   power controller control: 1 = power off */
#define PCI_EXP_SLTSTA 0x1a         /* 16 bits: slot status (event bits are RW1C) */
#define PCI_EXP_SLTSTA_ABP 0x0001       /*   attention button pressed */
#define PCI_EXP_SLTSTA_PFD 0x0002       /*   power fault detected */
#define PCI_EXP_SLTSTA_MRLSC 0x0004     /*   MRL sensor changed */
#define PCI_EXP_SLTSTA_PDC 0x0008       /*   presence detect changed */
#define PCI_EXP_SLTSTA_CC 0x0010        /*   command completed */
#define PCI_EXP_SLTSTA_PDS 0x0040       /*   presence detect state: a card is present */
#define PCI_EXP_SLTSTA_DLLSC 0x0100     /*   data link layer state changed */
#define PCI_EXP_SLTSTA_EVENTS 0x011f    /*   every RW1C event bit above */

/* --- extended capabilities (from offset 0x100; header: ID 15:0, version 19:16, next 31:20) --- */
#define PCI_EXT_CAP_START 0x100
#define PCI_EXT_CAP_ID_AER 0x0001   /* advanced error reporting */
#define PCI_EXT_CAP_ID_DSN 0x0003   /* device serial number */
#define PCI_EXT_CAP_ID_VNDR 0x000b  /* vendor-specific extended capability */
#define PCI_EXT_CAP_ID_ACS 0x000d   /* access control services */
#define PCI_EXT_CAP_ID_ARI 0x000e   /* alternative routing-ID interpretation */
#define PCI_EXT_CAP_ID_SRIOV 0x0010 /* single root I/O virtualisation */
#define PCI_EXT_CAP_ID_LTR 0x0018   /* latency tolerance reporting */
#define PCI_EXT_CAP_ID_SECPCI 0x0019 /* secondary PCI Express */
#define PCI_EXT_CAP_ID_DVSEC 0x0023 /* designated vendor-specific */

/* --- ACS extended capability (PCIe 5.0 7.7.8; offsets from the capability) --- */
#define PCI_ACS_CAP 0x04            /* 16 bits: which controls are implemented */
#define PCI_ACS_CTRL 0x06           /* 16 bits: which controls are enabled; same bit layout */
#define PCI_ACS_SV (1u << 0)          /* source validation: check the requester ID's bus */
#define PCI_ACS_TB (1u << 1)          /* translation blocking: block pre-translated addresses */
#define PCI_ACS_RR (1u << 2)          /* P2P request redirect: send peer requests upstream */
#define PCI_ACS_CR (1u << 3)          /* P2P completion redirect: send peer completions upstream */
#define PCI_ACS_UF (1u << 4)          /* upstream forwarding: no turnaround at this port */
#define PCI_ACS_EC (1u << 5)          /* P2P egress control: egress vector blocks peers */
#define PCI_ACS_DT (1u << 6)          /* direct translated P2P */
#define PCI_ACS_ALL 0x7fu
/* Bits that, when enabled, push peer-to-peer traffic up to the root complex (Linux's rule). */
#define PCI_ACS_REDIR (PCI_ACS_RR | PCI_ACS_CR | PCI_ACS_EC)

#endif
