/*
 * nvme_regs.h - NVMe (1.4) controller registers, submission/completion entries, SGL
 * descriptors and the Identify data the driver reads, in the specification's names.
 *
 * Register values are plain integers read through the bus interface (nvme.h); fields are
 * taken out with the NVME_GET() accessor and the _SHIFT/_MASK pairs below, one comment
 * per bit. Queue entries and descriptors are packed little-endian structs whose
 * multi-byte fields are lib/byteorder.h's checked le*_t types (SQE, CQE, SGL descriptors,
 * DSM ranges, PRP entries), read and written only through le*_get/le*_make; Identify
 * data is read with le*_load at the byte offsets below. No C bitfields.
 */
#ifndef DRIVERS_NVME_NVME_REGS_H
#define DRIVERS_NVME_NVME_REGS_H

#include <stdint.h>
#include "../../lib/byteorder.h"

#define NVME_GET(v, f) (((v) >> f##_SHIFT) & f##_MASK)
#define NVME_SET(f, x) (((uint64_t)(x) & f##_MASK) << f##_SHIFT)

/* --- controller registers (BAR0 offsets) --- */
#define NVME_REG_CAP 0x00     /* Controller Capabilities (64) */
#define NVME_REG_VS 0x08      /* Version */
#define NVME_REG_INTMS 0x0c   /* Interrupt Mask Set */
#define NVME_REG_INTMC 0x10   /* Interrupt Mask Clear */
#define NVME_REG_CC 0x14      /* Controller Configuration */
#define NVME_REG_CSTS 0x1c    /* Controller Status */
#define NVME_REG_AQA 0x24     /* Admin Queue Attributes */
#define NVME_REG_ASQ 0x28     /* Admin Submission Queue Base Address (64) */
#define NVME_REG_ACQ 0x30     /* Admin Completion Queue Base Address (64) */
#define NVME_REG_CMBLOC 0x38  /* Controller Memory Buffer Location */
#define NVME_REG_CMBSZ 0x3c   /* Controller Memory Buffer Size */
#define NVME_REG_CMBMSC 0x50  /* CMB Memory Space Control (64, NVMe 1.4) */
#define NVME_REG_CMBSTS 0x58  /* CMB Status (NVMe 1.4) */
#define NVME_REG_DBS 0x1000   /* first doorbell */

/* CAP */
#define NVME_CAP_MQES_SHIFT 0      /* Maximum Queue Entries Supported, 0's based */
#define NVME_CAP_MQES_MASK 0xffffull
#define NVME_CAP_CQR_SHIFT 16      /* Contiguous Queues Required */
#define NVME_CAP_CQR_MASK 0x1ull
#define NVME_CAP_AMS_SHIFT 17      /* Arbitration Mechanism Supported */
#define NVME_CAP_AMS_MASK 0x3ull
#define NVME_CAP_TO_SHIFT 24       /* Timeout: worst CSTS.RDY transition time, 500 ms units */
#define NVME_CAP_TO_MASK 0xffull
#define NVME_CAP_DSTRD_SHIFT 32    /* Doorbell Stride: 2^(2 + DSTRD) bytes */
#define NVME_CAP_DSTRD_MASK 0xfull
#define NVME_CAP_NSSRS_SHIFT 36    /* NVM Subsystem Reset Supported */
#define NVME_CAP_NSSRS_MASK 0x1ull
#define NVME_CAP_CSS_SHIFT 37      /* Command Sets Supported (bit 0: NVM) */
#define NVME_CAP_CSS_MASK 0xffull
#define NVME_CAP_BPS_SHIFT 45      /* Boot Partition Support */
#define NVME_CAP_BPS_MASK 0x1ull
#define NVME_CAP_MPSMIN_SHIFT 48   /* Memory Page Size Minimum: 2^(12 + MPSMIN) */
#define NVME_CAP_MPSMIN_MASK 0xfull
#define NVME_CAP_MPSMAX_SHIFT 52   /* Memory Page Size Maximum: 2^(12 + MPSMAX) */
#define NVME_CAP_MPSMAX_MASK 0xfull
#define NVME_CAP_PMRS_SHIFT 56     /* Persistent Memory Region Supported */
#define NVME_CAP_PMRS_MASK 0x1ull
#define NVME_CAP_CMBS_SHIFT 57     /* Controller Memory Buffer Supported (1.4: CMBMSC exists) */
#define NVME_CAP_CMBS_MASK 0x1ull

/* VS */
#define NVME_VS(major, minor) (((uint32_t)(major) << 16) | ((uint32_t)(minor) << 8))

/* CC */
#define NVME_CC_EN (1u << 0)            /* Enable */
#define NVME_CC_CSS_SHIFT 4             /* I/O Command Set Selected: 0 = NVM */
#define NVME_CC_CSS_MASK 0x7u
#define NVME_CC_MPS_SHIFT 7             /* Memory Page Size: 2^(12 + MPS) */
#define NVME_CC_MPS_MASK 0xfu
#define NVME_CC_AMS_SHIFT 11            /* Arbitration Mechanism Selected: 0 = round robin */
#define NVME_CC_AMS_MASK 0x7u
#define NVME_CC_SHN_SHIFT 14            /* Shutdown Notification: 1 normal, 2 abrupt */
#define NVME_CC_SHN_MASK 0x3u
#define NVME_CC_IOSQES_SHIFT 16         /* I/O SQ Entry Size: 2^n (6: 64 bytes) */
#define NVME_CC_IOSQES_MASK 0xfu
#define NVME_CC_IOCQES_SHIFT 20         /* I/O CQ Entry Size: 2^n (4: 16 bytes) */
#define NVME_CC_IOCQES_MASK 0xfu

/* CSTS */
#define NVME_CSTS_RDY (1u << 0)         /* Ready */
#define NVME_CSTS_CFS (1u << 1)         /* Controller Fatal Status */
#define NVME_CSTS_SHST_SHIFT 2          /* Shutdown Status: 2 = complete */
#define NVME_CSTS_SHST_MASK 0x3u
#define NVME_CC_SHN_NORMAL 0x1u         /* CC.SHN value: normal shutdown notification */
#define NVME_CSTS_SHST_OCCURRING 0x1u   /* CSTS.SHST: shutdown processing occurring */
#define NVME_CSTS_SHST_DONE 0x2u        /* CSTS.SHST: shutdown processing complete */
#define NVME_CSTS_NSSRO (1u << 4)       /* NVM Subsystem Reset Occurred */
#define NVME_CSTS_PP (1u << 5)          /* Processing Paused */

/* AQA */
#define NVME_AQA_ASQS_SHIFT 0           /* Admin SQ Size, 0's based */
#define NVME_AQA_ASQS_MASK 0xfffu
#define NVME_AQA_ACQS_SHIFT 16          /* Admin CQ Size, 0's based */
#define NVME_AQA_ACQS_MASK 0xfffu

/* CMBLOC */
#define NVME_CMBLOC_BIR_SHIFT 0         /* Base Indicator Register: which BAR holds the CMB */
#define NVME_CMBLOC_BIR_MASK 0x7u
#define NVME_CMBLOC_CQMMS (1u << 3)     /* CMB Queue Mixed Memory Support */
#define NVME_CMBLOC_CQPDS (1u << 4)     /* CMB Queue Physically Discontiguous Support */
#define NVME_CMBLOC_CDPMLS (1u << 5)    /* CMB Data Pointer Mixed Locations Support */
#define NVME_CMBLOC_CDPCILS (1u << 6)   /* CMB Data Pointer and Command Independent Locations */
#define NVME_CMBLOC_CDMMMS (1u << 7)    /* CMB Data Metadata Mixed Memory Support */
#define NVME_CMBLOC_CQDA (1u << 8)      /* CMB Queue Dword Alignment */
#define NVME_CMBLOC_OFST_SHIFT 12       /* Offset into the BAR, in CMBSZ.SZU units */
#define NVME_CMBLOC_OFST_MASK 0xfffffu

/* CMBSZ */
#define NVME_CMBSZ_SQS (1u << 0)        /* Submission Queue Support */
#define NVME_CMBSZ_CQS (1u << 1)        /* Completion Queue Support */
#define NVME_CMBSZ_LISTS (1u << 2)      /* PRP/SGL List Support */
#define NVME_CMBSZ_RDS (1u << 3)        /* Read Data Support */
#define NVME_CMBSZ_WDS (1u << 4)        /* Write Data Support */
#define NVME_CMBSZ_SZU_SHIFT 8          /* Size Units: 4 KiB * 16^SZU (0..6) */
#define NVME_CMBSZ_SZU_MASK 0xfu
#define NVME_CMBSZ_SZ_SHIFT 12          /* Size, in SZU units */
#define NVME_CMBSZ_SZ_MASK 0xfffffu

/* CMBMSC (64 bits) */
#define NVME_CMBMSC_CRE (1ull << 0)     /* Capabilities Registers Enabled: CMBLOC/CMBSZ valid */
#define NVME_CMBMSC_CMSE (1ull << 1)    /* Controller Memory Space Enable: CMB addresses usable */
#define NVME_CMBMSC_CBA_MASK (~0xfffull) /* Controller Base Address, 4 KiB aligned */

/* CMBSTS */
#define NVME_CMBSTS_CBAI (1u << 0)      /* Controller Base Address Invalid */

/* --- queue entries --- */

/* --- SGL descriptors --- */
struct nvme_sgl_desc {
	le64_t addr;
	le32_t len;
	uint8_t rsvd[3];
	uint8_t id;     /* SGL Descriptor Type 7:4, Sub Type 3:0 */
} __attribute__((packed, aligned(8)));
_Static_assert(sizeof(struct nvme_sgl_desc) == 16, "SGL descriptor is 16 bytes");

#define NVME_SGL_TYPE_DATA_BLOCK 0x0
#define NVME_SGL_TYPE_SEGMENT 0x2
#define NVME_SGL_TYPE_LAST_SEGMENT 0x3
#define NVME_SGL_ID(type) ((uint8_t)((type) << 4)) /* sub type 0: address */

/* Submission Queue Entry: CDW0 (OPC, FUSE/PSDT flags, CID), NSID, CDW2-3, MPTR, DPTR
 * (PRP1/PRP2 or SGL1), CDW10-15. A fabrics command (opcode 0x7f) has its own layout of the
 * same 64 bytes (../nvme/target/nvmet_wire.h). */
struct nvme_sqe {
	uint8_t opc;    /* CDW0 7:0 Opcode */
	uint8_t flags;  /* CDW0 15:8: FUSE 1:0, PSDT 7:6 */
	le16_t cid;     /* CDW0 31:16 Command Identifier */
	le32_t nsid;    /* Namespace Identifier */
	le32_t cdw2;
	le32_t cdw3;
	le64_t mptr;    /* Metadata Pointer */
	union {         /* Data Pointer */
		struct {
			le64_t prp1;  /* PRP Entry 1 */
			le64_t prp2;  /* PRP Entry 2 */
		};
		struct nvme_sgl_desc sgl1; /* SGL Entry 1 */
	} dptr;
	le32_t cdw10, cdw11, cdw12, cdw13, cdw14, cdw15;
} __attribute__((packed, aligned(8)));
_Static_assert(sizeof(struct nvme_sqe) == 64, "SQE is 64 bytes");
_Static_assert(__builtin_offsetof(struct nvme_sqe, dptr) == 24, "DPTR at byte 24");
_Static_assert(__builtin_offsetof(struct nvme_sqe, cdw10) == 40, "CDW10 at byte 40");

#define NVME_SQE_FUSE_MASK 0x03u            /* flags: Fused Operation */
#define NVME_SQE_PSDT_MASK 0xc0u            /* flags: PRP or SGL for Data Transfer */
#define NVME_SQE_PSDT_PRP 0x00u             /* PRPs */
#define NVME_SQE_PSDT_SGL 0x40u             /* SGLs, MPTR a contiguous buffer */

struct nvme_cqe {
	le32_t dw0;     /* command specific */
	le32_t dw1;
	le16_t sqhd;    /* SQ Head Pointer */
	le16_t sqid;    /* SQ Identifier */
	le16_t cid;     /* Command Identifier */
	le16_t status;  /* P bit 0, SC 8:1, SCT 11:9, CRD 13:12, M 14, DNR 15 */
} __attribute__((packed, aligned(8)));
_Static_assert(sizeof(struct nvme_cqe) == 16, "CQE is 16 bytes");

#define NVME_CQE_P (1u << 0)                 /* Phase Tag */
#define NVME_STATUS_SC(s) (((s) >> 1) & 0xffu)  /* Status Code */
#define NVME_STATUS_SCT(s) (((s) >> 9) & 0x7u)  /* Status Code Type */
#define NVME_STATUS_M (1u << 14)             /* More (log page has detail) */
#define NVME_STATUS_DNR (1u << 15)           /* Do Not Retry */
/* A status field value without the phase bit: SCT << 8 | SC, as in "0x4012". */
#define NVME_SC(sct, sc) ((uint16_t)(((sct) << 8) | (sc)))

/* Dataset Management range */
struct nvme_dsm_range {
	le32_t cattr;   /* Context Attributes */
	le32_t nlb;     /* Length in logical blocks (not 0's based) */
	le64_t slba;
} __attribute__((packed));

/* --- opcodes --- */
enum {
	NVME_ADM_DELETE_SQ = 0x00,
	NVME_ADM_CREATE_SQ = 0x01,
	NVME_ADM_GET_LOG_PAGE = 0x02,
	NVME_ADM_DELETE_CQ = 0x04,
	NVME_ADM_CREATE_CQ = 0x05,
	NVME_ADM_IDENTIFY = 0x06,
	NVME_ADM_ABORT = 0x08,
	NVME_ADM_SET_FEATURES = 0x09,
	NVME_ADM_GET_FEATURES = 0x0a,
};
enum {
	NVME_CMD_FLUSH = 0x00,
	NVME_CMD_WRITE = 0x01,
	NVME_CMD_READ = 0x02,
	NVME_CMD_WRITE_ZEROES = 0x08,
	NVME_CMD_DSM = 0x09,
};

#define NVME_FEAT_NUM_QUEUES 0x07
#define NVME_ID_CNS_NS 0x00
#define NVME_ID_CNS_CTRL 0x01
#define NVME_ID_CNS_NS_ACTIVE_LIST 0x02

/* Create I/O CQ CDW11 */
#define NVME_CREATE_CQ_PC (1u << 0)     /* Physically Contiguous */
#define NVME_CREATE_CQ_IEN (1u << 1)    /* Interrupts Enabled (a wake-up for the idle loop) */
#define NVME_CREATE_CQ_IV_SHIFT 16      /* Interrupt Vector, bits 31:16 (MSI-X entry) */
/* Create I/O SQ CDW11 */
#define NVME_CREATE_SQ_PC (1u << 0)     /* Physically Contiguous */
/* Read/Write CDW12 */
#define NVME_RW_FUA (1u << 30)          /* Force Unit Access */
#define NVME_WZ_DEAC (1u << 25)         /* Write Zeroes: Deallocate */
/* DSM CDW11 */
#define NVME_DSM_AD (1u << 2)           /* Attribute - Deallocate */

/* --- Identify Controller (4096 bytes): byte offsets of the fields the driver reads --- */
#define NVME_IDC_VID 0          /* PCI Vendor ID (2) */
#define NVME_IDC_SN 4           /* Serial Number (20, ASCII, space padded) */
#define NVME_IDC_MN 24          /* Model Number (40) */
#define NVME_IDC_FR 64          /* Firmware Revision (8) */
#define NVME_IDC_MDTS 77        /* Maximum Data Transfer Size: 2^n * CAP.MPSMIN, 0 = none */
#define NVME_IDC_CNTLID 78      /* Controller ID (2) */
#define NVME_IDC_VER 80         /* Version (4) */
#define NVME_IDC_RTD3E 88       /* RTD3 Entry Latency (4): microseconds a shutdown may take, 0 = not given */
#define NVME_IDC_OACS 256       /* Optional Admin Command Support (2) */
#define NVME_IDC_ACL 258        /* Abort Command Limit, 0's based */
#define NVME_IDC_SQES 512       /* SQ entry size: required 3:0, max 7:4 */
#define NVME_IDC_CQES 513       /* CQ entry size */
#define NVME_IDC_NN 516         /* Number of Namespaces (4) */
#define NVME_IDC_ONCS 520       /* Optional NVM Command Support (2) */
#define NVME_IDC_VWC 525        /* Volatile Write Cache: bit 0 present */
#define NVME_IDC_SGLS 536       /* SGL Support (4): 1:0 = 01 byte aligned, 10 dword aligned */
#define NVME_IDC_SUBNQN 768     /* NVM Subsystem NVMe Qualified Name (256) */

#define NVME_ONCS_DSM (1u << 2)          /* Dataset Management */
#define NVME_ONCS_WRITE_ZEROES (1u << 3) /* Write Zeroes */
#define NVME_SGLS_SUPPORTED_MASK 0x3u    /* 0: no SGLs */
#define NVME_SGLS_BYTE 0x1u              /* SGLs, any data block address and length */
#define NVME_SGLS_DWORD_ALIGN 0x2u       /* data block address/length dword aligned */

/* --- Identify Namespace (4096 bytes) --- */
#define NVME_IDNS_NSZE 0        /* Namespace Size in logical blocks (8) */
#define NVME_IDNS_NCAP 8        /* Namespace Capacity (8) */
#define NVME_IDNS_NUSE 16       /* Namespace Utilization (8) */
#define NVME_IDNS_NSFEAT 24
#define NVME_IDNS_NLBAF 25      /* Number of LBA Formats, 0's based */
#define NVME_IDNS_FLBAS 26      /* Formatted LBA Size: format index 3:0 */
#define NVME_IDNS_LBAF 128      /* LBA Format 0..15, 4 bytes each: MS 15:0, LBADS 23:16, RP 25:24 */

#endif
