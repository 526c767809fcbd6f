/*
 * e1000e_regs.h - Intel 82574L (e1000e) registers and descriptor formats, with the names
 * of the 82574 GbE Controller Family datasheet (section 10 registers, section 7
 * descriptors). Only what this driver uses. Descriptor fields are little-endian, typed
 * with lib/byteorder.h (le16_t, le32_t, le64_t: read and written through le*_get/make).
 * Registers are read and written through the bus accessors as plain integers.
 */
#ifndef DRIVERS_NIC_E1000E_REGS_H
#define DRIVERS_NIC_E1000E_REGS_H

#include <stdint.h>
#include "../../lib/byteorder.h"

/* --- register offsets (BAR0) --- */
#define E1000E_CTRL     0x00000u /* Device Control */
#define E1000E_STATUS   0x00008u /* Device Status */
#define E1000E_EERD     0x00014u /* EEPROM Read */
#define E1000E_ICR      0x000c0u /* Interrupt Cause Read (read clears) */
#define E1000E_IMS      0x000d0u /* Interrupt Mask Set */
#define E1000E_IMC      0x000d8u /* Interrupt Mask Clear */
#define E1000E_CTRL_EXT 0x00018u /* Extended Device Control */
#define E1000E_EIAC     0x000dcu /* Extended Interrupt Auto Clear (MSI-X) */
#define E1000E_IVAR     0x000e4u /* Interrupt Vector Allocation Registers (MSI-X) */
#define E1000E_RCTL     0x00100u /* Receive Control */
#define E1000E_TCTL     0x00400u /* Transmit Control */
#define E1000E_TIPG     0x00410u /* Transmit Inter Packet Gap */
#define E1000E_PSRCTL   0x02170u /* Packet Split Receive Control */
#define E1000E_RDBAL    0x02800u /* Receive Descriptor Base Address Low (queue 0) */
#define E1000E_RDBAH    0x02804u /* Receive Descriptor Base Address High */
#define E1000E_RDLEN    0x02808u /* Receive Descriptor ring Length (bytes) */
#define E1000E_RDH      0x02810u /* Receive Descriptor Head */
#define E1000E_RDT      0x02818u /* Receive Descriptor Tail */
#define E1000E_RDTR     0x02820u /* Receive Delay Timer */
#define E1000E_RADV     0x0282cu /* Receive Interrupt Absolute Delay Timer */
#define E1000E_TDBAL    0x03800u /* Transmit Descriptor Base Address Low (queue 0) */
#define E1000E_TDBAH    0x03804u /* Transmit Descriptor Base Address High */
#define E1000E_TDLEN    0x03808u /* Transmit Descriptor ring Length (bytes) */
#define E1000E_TDH      0x03810u /* Transmit Descriptor Head */
#define E1000E_TDT      0x03818u /* Transmit Descriptor Tail */
#define E1000E_RXCSUM   0x05000u /* Receive Checksum Control */
#define E1000E_RFCTL    0x05008u /* Receive Filter Control */
#define E1000E_MTA      0x05200u /* Multicast Table Array (128 dwords) */
#define E1000E_RAL0     0x05400u /* Receive Address Low 0 */
#define E1000E_RAH0     0x05404u /* Receive Address High 0 */
#define E1000E_MTA_WORDS 128u

/* --- CTRL --- */
#define E1000E_CTRL_FD      (1u << 0)  /* Full Duplex */
#define E1000E_CTRL_GIO_MD  (1u << 2)  /* GIO Master Disable */
#define E1000E_CTRL_ASDE    (1u << 5)  /* Auto-Speed Detection Enable */
#define E1000E_CTRL_SLU     (1u << 6)  /* Set Link Up */
#define E1000E_CTRL_RST     (1u << 26) /* Device Reset (self-clearing) */
#define E1000E_CTRL_PHY_RST (1u << 31) /* PHY Reset */

/* --- CTRL_EXT --- */
#define E1000E_CTRL_EXT_PBA_CLR (1u << 31) /* PBA Clear: an IMS write clears the MSI-X pending bits */

/* --- ICR / IMS / EIAC causes (MSI-X mode) --- */
#define E1000E_ICR_RXQ0     (1u << 20) /* Receive Queue 0 (descriptors written back) */

/* --- IVAR: INT_Alloc[0..4] = RxQ0, RxQ1, TxQ0, TxQ1, Other; 3 bits of MSI-X entry + a valid bit each --- */
#define E1000E_IVAR_RXQ0_SHIFT 0
#define E1000E_IVAR_VALID   0x8u       /* the allocation's valid bit */

/* --- STATUS --- */
#define E1000E_STATUS_FD    (1u << 0)  /* Full Duplex */
#define E1000E_STATUS_LU    (1u << 1)  /* Link Up */
#define E1000E_STATUS_SPEED_SHIFT 6    /* Link speed: 00 10, 01 100, 1x 1000 Mb/s */
#define E1000E_STATUS_SPEED_MASK (3u << 6)

/* --- EERD --- */
#define E1000E_EERD_START   (1u << 0)  /* Start Read */
#define E1000E_EERD_DONE    (1u << 1)  /* Read Done */
#define E1000E_EERD_ADDR_SHIFT 2       /* Read Address (word), bits 15:2 */
#define E1000E_EERD_DATA_SHIFT 16      /* Read Data, bits 31:16 */

/* --- RCTL --- */
#define E1000E_RCTL_EN      (1u << 1)  /* Receiver Enable */
#define E1000E_RCTL_SBP     (1u << 2)  /* Store Bad Packets */
#define E1000E_RCTL_UPE     (1u << 3)  /* Unicast Promiscuous Enable */
#define E1000E_RCTL_MPE     (1u << 4)  /* Multicast Promiscuous Enable */
#define E1000E_RCTL_LPE     (1u << 5)  /* Long Packet Reception Enable (frames > 1522) */
#define E1000E_RCTL_LBM_MAC (1u << 6)  /* Loopback Mode 01: MAC loopback (TX frames come back) */
#define E1000E_RCTL_LBM_MASK (3u << 6) /* Loopback Mode field */
#define E1000E_RCTL_DTYP_PS (1u << 10) /* Descriptor Type 01: packet split */
#define E1000E_RCTL_DTYP_MASK (3u << 10) /* Descriptor Type field */
#define E1000E_RCTL_BAM     (1u << 15) /* Broadcast Accept Mode */
#define E1000E_RCTL_BSIZE_SHIFT 16     /* Receive Buffer Size (legacy descriptors), with BSEX */
#define E1000E_RCTL_BSIZE_MASK (3u << 16)
#define E1000E_RCTL_BSEX    (1u << 25) /* Buffer Size Extension: BSIZE x 16 */
#define E1000E_RCTL_SECRC   (1u << 26) /* Strip Ethernet CRC */

/* --- TCTL --- */
#define E1000E_TCTL_EN      (1u << 1)  /* Transmit Enable */
#define E1000E_TCTL_PSP     (1u << 3)  /* Pad Short Packets */
#define E1000E_TCTL_CT_SHIFT 4         /* Collision Threshold */
#define E1000E_TCTL_COLD_SHIFT 12      /* Collision Distance */
#define E1000E_TCTL_RTLC    (1u << 24) /* Re-transmit on Late Collision */
#define E1000E_TIPG_DEFAULT 0x00602008u /* IPGT 8, IPGR1 8, IPGR2 6 (datasheet default for copper) */

/* --- PSRCTL --- */
#define E1000E_PSRCTL_BSIZE0_SHIFT 0   /* header buffer size, 128-byte units, bits 6:0 */
#define E1000E_PSRCTL_BSIZE0_UNIT 128u
#define E1000E_PSRCTL_BSIZE0_MAX 0x7fu
#define E1000E_PSRCTL_BSIZE1_SHIFT 8   /* buffer 1 size, 1 KiB units, bits 13:8 */
#define E1000E_PSRCTL_BSIZE2_SHIFT 16  /* buffer 2 size, 1 KiB units, bits 21:16 */
#define E1000E_PSRCTL_BSIZE3_SHIFT 24  /* buffer 3 size, 1 KiB units, bits 29:24 */
#define E1000E_PSRCTL_BSIZEN_UNIT 1024u
#define E1000E_PSRCTL_BSIZEN_MAX 0x3fu

/* --- RXCSUM --- */
#define E1000E_RXCSUM_IPOFLD (1u << 8)  /* IP Checksum Offload Enable */
#define E1000E_RXCSUM_TUOFLD (1u << 9)  /* TCP/UDP Checksum Offload Enable */
#define E1000E_RXCSUM_PCSD   (1u << 13) /* Packet Checksum Disable (first dword carries RSS) */

/* --- RFCTL --- */
#define E1000E_RFCTL_EXTEN   (1u << 15) /* Extended status enable (required for packet split) */

/* --- RAH --- */
#define E1000E_RAH_AV        (1u << 31) /* Address Valid */

/* --- RX descriptor status/error (extended and packet-split write-back "status_error";
 * the legacy descriptor's status byte is bits 7:0, its errors byte bits 31:24 here) --- */
#define E1000E_RXD_STAT_DD    (1u << 0)  /* Descriptor Done */
#define E1000E_RXD_STAT_EOP   (1u << 1)  /* End Of Packet */
#define E1000E_RXD_STAT_IXSM  (1u << 2)  /* Ignore Checksum Indication (legacy) */
#define E1000E_RXD_STAT_UDPCS (1u << 4)  /* UDP checksum calculated */
#define E1000E_RXD_STAT_TCPCS (1u << 5)  /* TCP checksum calculated */
#define E1000E_RXD_STAT_IPCS  (1u << 6)  /* IPv4 header checksum calculated */
#define E1000E_RXD_ERR_CE     (1u << 24) /* CRC or alignment error */
#define E1000E_RXD_ERR_SE     (1u << 25) /* Symbol error */
#define E1000E_RXD_ERR_SEQ    (1u << 26) /* Sequence error */
#define E1000E_RXD_ERR_CXE    (1u << 28) /* Carrier extension error */
#define E1000E_RXD_ERR_TCPE   (1u << 29) /* TCP/UDP checksum error */
#define E1000E_RXD_ERR_IPE    (1u << 30) /* IPv4 checksum error */
#define E1000E_RXD_ERR_RXE    (1u << 31) /* RX data error */
#define E1000E_RXD_ERR_FRAME  (E1000E_RXD_ERR_CE | E1000E_RXD_ERR_SE | E1000E_RXD_ERR_SEQ | \
			       E1000E_RXD_ERR_CXE | E1000E_RXD_ERR_RXE)
/* packet-split upper.header_status */
#define E1000E_RXDPS_HDRLEN_MASK 0x3ffu     /* HDRLEN: bytes of header in buffer 0 */
#define E1000E_RXDPS_HDRSP       (1u << 15) /* HDRSP: the frame was split at HDRLEN */

/* Legacy receive descriptor (16 bytes), read and write-back in one. */
struct e1000e_rx_desc_legacy {
	le64_t buffer_addr;
	le16_t length;   /* bytes written to the buffer */
	le16_t csum;     /* packet checksum */
	uint8_t status;       /* E1000E_RXD_STAT_* bits 7:0 */
	uint8_t errors;       /* E1000E_RXD_ERR_* >> 24 */
	le16_t special;
} __attribute__((packed));

/* Packet-split receive descriptor (32 bytes): read format. */
struct e1000e_rx_desc_ps_read {
	le64_t buffer_addr[4]; /* 0: header buffer (BSIZE0), 1-3: data buffers (BSIZE1-3) */
} __attribute__((packed));

/* Packet-split receive descriptor: write-back format. */
struct e1000e_rx_desc_ps_wb {
	le32_t mrq;          /* RSS type / queue (or packet checksum with PCSD=0) */
	le16_t ip_id;        /* IP identification */
	le16_t csum;         /* packet checksum */
	le32_t status_error; /* E1000E_RXD_STAT_* | E1000E_RXD_ERR_* */
	le16_t length0;      /* bytes in buffer 0 */
	le16_t vlan;
	le16_t header_status; /* HDRLEN | HDRSP */
	le16_t length[3];    /* bytes in buffers 1-3 */
	le64_t reserved;
} __attribute__((packed));

union e1000e_rx_desc_ps {
	struct e1000e_rx_desc_ps_read read;
	struct e1000e_rx_desc_ps_wb wb;
};

/* --- transmit descriptors (16 bytes) --- */

/* Legacy transmit descriptor. */
struct e1000e_tx_desc_legacy {
	le64_t buffer_addr;
	le16_t length;
	uint8_t cso;          /* Checksum Offset (legacy IC) */
	uint8_t cmd;          /* E1000E_TXD_CMD_* */
	uint8_t status;       /* E1000E_TXD_STAT_DD */
	uint8_t css;          /* Checksum Start */
	le16_t special;
} __attribute__((packed));

#define E1000E_TXD_CMD_EOP  (1u << 0) /* End Of Packet */
#define E1000E_TXD_CMD_IFCS (1u << 1) /* Insert FCS */
#define E1000E_TXD_CMD_IC   (1u << 2) /* Insert Checksum (legacy; not honoured by QEMU's e1000e) */
#define E1000E_TXD_CMD_RS   (1u << 3) /* Report Status: write DD back */
#define E1000E_TXD_CMD_DEXT (1u << 5) /* Descriptor Extension (context / extended data) */
#define E1000E_TXD_STAT_DD  (1u << 0) /* Descriptor Done */

/* TCP/IP context descriptor (DEXT=1, DTYP=0000). */
struct e1000e_tx_desc_ctx {
	uint8_t ipcss;            /* IP checksum start */
	uint8_t ipcso;            /* IP checksum offset (field location) */
	le16_t ipcse;        /* IP checksum end (inclusive, 0: end of packet) */
	uint8_t tucss;            /* TCP/UDP checksum start */
	uint8_t tucso;            /* TCP/UDP checksum offset (field location) */
	le16_t tucse;        /* TCP/UDP checksum end (inclusive, 0: end of packet) */
	le32_t cmd_and_length; /* PAYLEN 19:0, DTYP 23:20, TUCMD 31:24 */
	uint8_t status;           /* STA: DD bit 0 */
	uint8_t hdr_len;          /* TSO header length */
	le16_t mss;          /* TSO maximum segment size */
} __attribute__((packed));

#define E1000E_TXD_DTYP_SHIFT 20           /* DTYP field of cmd_and_length / lower.data */
#define E1000E_TXD_DTYP_CTX   (0u << 20)   /* DTYP 0000: context descriptor */
#define E1000E_TXD_DTYP_DATA  (1u << 20)   /* DTYP 0001: extended data descriptor */
#define E1000E_TXD_PAYLEN_MASK 0xfffffu    /* PAYLEN / DTALEN bits 19:0 */
#define E1000E_TUCMD_TCP  (1u << 24)       /* TUCMD.TCP: packet is TCP (UDP when clear) */
#define E1000E_TUCMD_IP   (1u << 25)       /* TUCMD.IP: IPv4 (TSO only) */
#define E1000E_TUCMD_TSE  (1u << 26)       /* TUCMD.TSE: TCP segmentation */
#define E1000E_TUCMD_RS   (1u << 27)       /* TUCMD.RS: report status */
#define E1000E_TUCMD_DEXT (1u << 29)       /* TUCMD.DEXT: extended descriptor (must be 1) */
#define E1000E_TUCMD_IDE  (1u << 31)       /* TUCMD.IDE: interrupt delay */

/* Extended data descriptor (DEXT=1, DTYP=0001). */
struct e1000e_tx_desc_data {
	le64_t buffer_addr;
	le32_t lower;        /* DTALEN 19:0, DTYP 23:20, DCMD 31:24 */
	le32_t upper;        /* STA 3:0, POPTS 15:8, special 31:16 */
} __attribute__((packed));

#define E1000E_DCMD_EOP  (1u << 24)  /* DCMD.EOP: end of packet */
#define E1000E_DCMD_IFCS (1u << 25)  /* DCMD.IFCS: insert FCS */
#define E1000E_DCMD_TSE  (1u << 26)  /* DCMD.TSE: TCP segmentation */
#define E1000E_DCMD_RS   (1u << 27)  /* DCMD.RS: report status */
#define E1000E_DCMD_DEXT (1u << 29)  /* DCMD.DEXT: extended descriptor (must be 1) */
#define E1000E_DCMD_VLE  (1u << 30)  /* DCMD.VLE: VLAN enable */
#define E1000E_DCMD_IDE  (1u << 31)  /* DCMD.IDE: interrupt delay */
#define E1000E_POPTS_IXSM (1u << 8)  /* POPTS.IXSM: insert IPv4 checksum */
#define E1000E_POPTS_TXSM (1u << 9)  /* POPTS.TXSM: insert TCP/UDP checksum */

/* Any 16-byte transmit descriptor, as the ring holds it. */
union e1000e_tx_desc {
	struct e1000e_tx_desc_legacy legacy;
	struct e1000e_tx_desc_ctx ctx;
	struct e1000e_tx_desc_data data;
	le64_t raw[2];
};

_Static_assert(sizeof(union e1000e_rx_desc_ps) == 32, "packet-split descriptor is 32 bytes");
_Static_assert(sizeof(struct e1000e_rx_desc_legacy) == 16, "legacy RX descriptor is 16 bytes");
_Static_assert(sizeof(union e1000e_tx_desc) == 16, "TX descriptors are 16 bytes");

#endif
